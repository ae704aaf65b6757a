// The scratch of oneDNN's CPU kernels (see onednn_scratch.hpp). Two kinds of rule live here:
//  - fits: measured per op with LibTorch's profiler (scripts/op-scratch.py) and fitted (the fp32 convolution and
//    the brgemm matmuls), each with how close it came and where it misses;
//  - derivations: oneDNN's own scratchpad bookings (init_conf / init_scratchpad / balance of the kernel LibTorch
//    runs) written out for tvie's shapes, then checked against the profiler (the bf16 convolutions).
#include "models/onednn_scratch.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>

#include <unistd.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <tvie/memory.hpp>
#include <tvie/cpu_kernels.hpp>
#include <tvie/ledger.hpp>

namespace tvie::trace::onednn {

namespace {

int64_t round_up(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kEntry = 128;            // each scratchpad entry's alignment slack
constexpr int64_t kBarrier = 4096 + 4096;  // one barrier context (simple_barrier::ctx_t) and its alignment

// oneDNN's best_divider (jit_uni_1x1_conv_utils.hpp): the block in [lo, hi] that wastes least of `value`.
int64_t best_divider(int64_t value, int64_t lo, int64_t hi, bool find_max, int64_t step = 1) {
  hi = std::max<int64_t>(1, std::min(hi, value));
  lo = std::max<int64_t>(1, std::min(lo, hi));
  float min_loss = std::numeric_limits<float>::max();
  int64_t best = hi;
  for (int64_t d = hi; d >= lo; d -= step) {
    const float loss = static_cast<float>(round_up(value, d) - value) / static_cast<float>(round_up(value, d));
    if ((find_max && loss < min_loss) || (!find_max && loss <= min_loss)) {
      min_loss = loss;
      best = d;
    }
  }
  return best;
}

// How a backward-weights primitive splits its threads: over the batch (each such thread reduces into its own fp32
// weight gradient), output-channel blocks and input-channel blocks.
struct Split {
  int64_t mb = 1, oc = 1, ic = 1;
  int64_t threads() const { return mb * oc * ic; }
};

// Both kernels' balance(): every split of the threads over the batch (at most `mb_work` ways), output-channel
// blocks and then input-channel blocks, the last of the cheapest by `cost` (in the kernel's own arithmetic: float
// for the k x k kernel, integers for the 1x1); a batch split of more than half the threads but not all of them is
// widened to all (at most `mb_widen`).
template <typename Cost>
Split cheapest_split(int64_t threads, int64_t mb_work, int64_t nb_oc, int64_t nb_ic, int64_t mb_widen,
                     const Cost& cost) {
  Split best;
  auto best_cost = cost(1, 1, 1);
  for (int64_t n_mb = 1; n_mb <= std::min(threads, mb_work); ++n_mb) {
    const int64_t par = threads / n_mb;
    for (int64_t n_oc = 1; n_oc <= std::min(par, nb_oc); ++n_oc) {
      const int64_t n_ic = std::min(par / n_oc, nb_ic);
      const auto v = cost(n_mb, n_oc, n_ic);
      if (v <= best_cost) {
        best_cost = v;
        best = {n_mb, n_oc, n_ic};
      }
    }
  }
  if (best.mb > threads / 2 && best.mb < threads) best.mb = std::min(mb_widen, threads);
  return best;
}
constexpr int64_t kPage = 4096;  // the cpu_reducer's alignment

// oneDNN's per-core L2 size (platform::get_per_core_cache_size(2): the data cache's size over the cores that share
// it, from cpuid; 512 KiB where it cannot tell). glibc reads the same cpuid leaves; an L2 is private to a core on
// the x86 CPUs oneDNN tunes for. It decides the 1x1 kernel's thread groups for few positions and wide channels
// (2048 -> 1024 at 7x7, batch 2, 2 threads, on an Intel Xeon with 2 MiB of L2 per core: checked to the byte).
int64_t l2_cache_bytes_per_core() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? l2 : 512 * 1024;
}

}  // namespace

// A block of b packed for the kernel (k rounded up to 32, at most 512, x 64 columns, bf16) and an fp32 accumulator
// (the thread's rows x up to 64 columns) per thread, plus 384 + 640 per thread bytes. The threads take the 64-column
// blocks; where the blocks do not divide among them, they split the rows too, threads / gcd(blocks, threads) ways,
// in chunks of at least 16 rows (32 where there are at least as many blocks as threads), never more than the rows;
// at most 256 rows at a time (more are cut in equal chunks).
// A fit to LibTorch 2.14.1's profiler on an AMD EPYC with avx512_bf16: the forward of 360 bf16 Linears (1 to 4
// threads, 8 to 300 rows, 32 to 600 input and 32 to 320 output features, each thread count in a process of its own:
// oneDNN keeps the primitives it made for the thread count it first saw) equal to the byte.
int64_t brgemm_bf16_scratch(int64_t m, int64_t k, int64_t n, int64_t threads) {
  const int64_t kp = std::min<int64_t>(round_up(k, 32), 512), blocks = ceil_div(n, 64);
  const int64_t split = threads / std::gcd(blocks, threads);
  int64_t rows = split == 1 ? m : std::min(m, std::max<int64_t>(blocks >= threads ? 32 : 16, ceil_div(m, split)));
  rows = ceil_div(rows, ceil_div(rows, 256));
  return threads * (kp * 64 * 2 + rows * std::min<int64_t>(n, 64) * 4) + 384 + threads * 640;
}

// The weight gradient (the rows are the reduction): dy^T packed (out x rows rounded up to 32, bf16), an fp32
// accumulator (out x up to 64 input features) and per thread a block of x packed (rows x 64, bf16), plus 512 + 640
// per thread bytes. Same fit; held at 512 rows. The fallback only, where oneDNN's own bookings cannot be asked (the
// trace takes those first): against the bookings, which equal LibTorch's allocations on that EPYC, 60 random
// shapes (8-300 rows, 32-600 x 32-320 features) were equal for 48, 26, 18 and 13 of 60 at 1, 2, 3 and 4 threads,
// -67.8% .. +253.1% off for the rest (docs/results/cpu-bf16-matmul-scratch-avx512.md); with it the
// tiny presets' peaks were still equal to the byte at 1, 2 and 4 threads (their shapes' weight gradients equal, or
// not what decides the peak).
// oneDNN sizes these buffers from a search over its blockings (brgemm_matmul_utils.cpp), which this does not follow.
int64_t brgemm_bf16_weight_grad_scratch(int64_t rows, int64_t in, int64_t out, int64_t threads) {
  const int64_t rp = std::min<int64_t>(round_up(rows, 32), 512);
  return out * (rp * 2 + std::min<int64_t>(in, 64) * 4) + threads * rp * 64 * 2 + 512 + threads * 640;
}

LinearProducts brgemm_bf16_linear_scratch(int64_t rows, int64_t in, int64_t out, int64_t threads) {
  return {brgemm_bf16_scratch(rows, in, out, threads), brgemm_bf16_scratch(rows, out, in, threads),
          brgemm_bf16_weight_grad_scratch(rows, in, out, threads)};
}

// oneDNN's fp32 convolutions on AVX-512, as LibTorch 2.14.1 (oneDNN 3.12) calls them: ideep hands oneDNN plain
// tensors and lets it pick its layouts, so each of the step's three primitives reorders into and out of blocks of
// 16 channels (`_p`: padded to 16). Which kernels run (ONEDNN_VERBOSE=1 on an Intel Xeon with AVX-512 and an AMD
// EPYC limited to AVX512_CORE, the same on both):
//  - forward: jit:avx512_core (jit_1x1 for 1x1 kernels); the input in blocks (padded) when it has at least 16
//    channels or the kernel is 1x1, else read as it is; the weights in blocks (padded both ways then too); a
//    strided 1x1 kernel reduces its input to unit stride in a per-thread buffer ("rtus"); the output in blocks,
//    then its plain copy: max(rtus + x_blocks + w_blocks + y_p, y_p + y) beside the output;
//  - backward data: jit:avx512_core with the output's gradient (padded), the weights (padded both ways from 4 input
//    channels) and the input's gradient in blocks (padded); or, strided, brgconv_strided in channels-last layouts
//    (the gradients unpadded, the weights' input channels padded to 16) with its scratchpad (per thread a brgemm
//    batch, the output's gradient with the kernel's overflow, a mask, and a row of the input's gradient where the
//    input's width is not a multiple of the stride: brgconv_strided_fp32_scratch); then the input gradient beside
//    its plain copy (and beside another input-sized copy when strided);
//  - backward weights, the input's gradient alive: the input and the output's gradient in blocks and the weight
//    gradient in blocks, with the kernel's scratchpad (per extra thread that splits the batch, its own weight
//    gradient to reduce), written out below from oneDNN's init_conf / balance / init_scratchpad:
//    jit:avx512_core for k x k kernels over 16 channels a block (a "first convolution" of 1-3 input channels
//    reads its input as it is; 16 input channels or more padded to 16), jit:avx2 (8 channels a block, cpu_reducer's
//    buffers) for 4 to 15 input channels,
//    jit_1x1:avx512_core for 1x1 kernels; then the blocked weight gradient beside its plain copy.
// Each scratchpad entry is rounded to its size + 128 bytes, a barrier context to 4096 bytes + 4096 alignment, the
// cpu_reducer's space to its size + 4096 (memory_tracking.hpp, cpu_reducer.cpp).
namespace {

// jit_avx512_common_conv_bwd_weights_kernel_f32::balance: how many ways the threads split the batch (each extra
// way keeps its own fp32 weight gradient), the cheapest split by modelled memory traffic, then by compute within
// 110% of that traffic.
int64_t avx512_weight_grad_batch_split(const ConvShape& c, int64_t ic, int64_t ic_block) {
  const int64_t T = c.threads, mb = c.batch, k = c.kernel, s = c.stride;
  const int64_t nb_ic = ceil_div(ic, ic_block), nb_oc = round_up(c.cout, 16) / 16;
  const bool reduce_2d = c.out_hw > 9;  // harness_2d_reduction: the rows split too (oh > min_oh_reduce)
  const int64_t ih_reduce = reduce_2d ? c.in_hw : 1, oh_reduce = reduce_2d ? c.out_hw : 1;
  const int64_t ih_no_reduce = reduce_2d ? 1 : c.in_hw, oh_no_reduce = reduce_2d ? 1 : c.out_hw;
  const int64_t nthr_oh_reduce = std::max<int64_t>(1, oh_reduce / 9);
  const auto mem_cost = [&](int64_t n_mb, int64_t n_oc, int64_t n_ic) {
    return ceil_div(mb * ih_reduce, n_mb) * ceil_div(nb_ic, n_ic) * ic_block * ih_no_reduce * c.in_hw / s / s +
           ceil_div(mb * oh_reduce, n_mb) * ceil_div(nb_oc, n_oc) * 16 * oh_no_reduce * c.out_hw +
           8 * ceil_div(nb_oc, n_oc) * ceil_div(nb_ic, n_ic) * k * k * ic_block * 16;
  };
  const auto comp_cost = [&](int64_t n_mb, int64_t n_oc, int64_t n_ic) {
    return ceil_div(mb * oh_reduce, n_mb) * ceil_div(nb_oc, n_oc) * ceil_div(nb_ic, n_ic);
  };
  const int64_t mb_max = std::min(T, mb * nthr_oh_reduce);
  int64_t best_mb = 1, best_oc = 1, best_ic = 1;
  int64_t best_mem = mem_cost(1, 1, 1);
  for (int64_t n_mb = 1; n_mb <= mb_max; ++n_mb) {
    const int64_t par = T / n_mb;
    for (int64_t n_oc = 1; n_oc <= std::min(par, nb_oc); ++n_oc) {
      const int64_t n_ic = std::min(par / n_oc, nb_ic);
      const int64_t m = mem_cost(n_mb, n_oc, n_ic);
      if (m <= best_mem) {
        best_mem = m;
        best_mb = n_mb, best_oc = n_oc, best_ic = n_ic;
      }
    }
  }
  int64_t best_comp = comp_cost(best_mb, best_oc, best_ic);
  for (int64_t n_mb = 1; n_mb <= mb_max; ++n_mb) {
    const int64_t par = T / n_mb;
    for (int64_t n_oc = 1; n_oc <= std::min(par, nb_oc); ++n_oc) {
      const int64_t n_ic = std::min(par / n_oc, nb_ic);
      const int64_t m = mem_cost(n_mb, n_oc, n_ic), comp = comp_cost(n_mb, n_oc, n_ic);
      const bool cheaper = comp <= best_comp && static_cast<double>(m) < 1.1 * static_cast<double>(best_mem);
      if (cheaper || 4 * comp <= 3 * best_comp) {
        best_comp = comp;
        best_mb = n_mb;
      }
    }
  }
  if (best_mb > T / 2 && best_mb < T) best_mb = std::min(mb * nthr_oh_reduce, T);
  return best_mb;
}

// cpu_reducer's reduce_balancer_t::balance: `njobs` blocks of `job` elements reduced over `reduction`, by T threads
// in groups; the threads of a group beyond the first (cpu_reducer_t) or all of them (cpu_reducer_2d_t) keep their own
// copy of the group's blocks, at most `max_buffer` elements in all.
struct ReduceBalance {
  int64_t groups = 1, per_group = 1, jobs_ub = 1;
};
ReduceBalance reduce_balance(int64_t T, int64_t job, int64_t njobs, int64_t reduction, int64_t max_buffer) {
  const int64_t min_per_group = std::max<int64_t>(1, njobs / T);
  const int64_t max_per_group = std::max<int64_t>(1, max_buffer / (T * job));
  ReduceBalance b;
  b.groups = std::min(njobs / min_per_group, T);
  b.per_group = std::min(T / b.groups, reduction);
  b.jobs_ub = ceil_div(njobs, b.groups);
  int64_t complexity = njobs * job * reduction;
  for (int64_t c_jobs = min_per_group; c_jobs < njobs; ++c_jobs) {
    const int64_t c_groups = std::min(njobs / c_jobs, T);
    const int64_t c_per_group = std::min(T / c_groups, reduction);
    const int64_t c_jobs_ub = ceil_div(njobs, c_groups);
    if (c_per_group > 1 && c_jobs_ub > max_per_group) continue;
    const int64_t c_complexity = job * c_jobs_ub * (ceil_div(reduction, c_per_group) + (c_per_group != 1 ? 1 : 0));
    if (c_complexity < complexity) {
      b = {c_groups, c_per_group, c_jobs_ub};
      complexity = c_complexity;
    }
  }
  return b;
}

// jit:avx2's weight gradient (cpu_reducer_t): per extra thread of a group its copy of the group's blocks (a page of
// alignment), and a barrier context per group.
int64_t avx2_reducer_bytes(int64_t T, int64_t job, int64_t njobs, int64_t reduction) {
  const auto b = reduce_balance(T, job, njobs, reduction, int64_t{1} << 21);
  if (b.per_group == 1) return 0;
  return b.groups * (b.per_group - 1) * b.jobs_ub * job * 4 + kPage + b.groups * kPage + kPage;
}

// jit_avx2_1x1_conv_kernel_f32's backward weights (jit_avx2_1x1_convolution_bwd_weights_t): blocks of 8 input and
// 8 output channels, as many output blocks per job as divide down to at most 32 and input blocks to at most 9 (halving
// or thirding), reduced over the batch x the output positions by cpu_reducer_2d_t (every thread of a group keeps its
// copy; at most 8 jobs per thread of buffer), and for a strided kernel the input reduced to unit stride per thread.
int64_t avx2_one_by_one_weight_grad(const ConvShape& c, bool rtus) {
  const int64_t T = c.threads, os = c.out_hw * c.out_hw;
  const int64_t nb_ic = ceil_div(c.cin, 8), nb_oc = ceil_div(c.cout, 8);
  const auto divide_down = [](int64_t blocks, int64_t limit) {
    while (blocks > limit && (blocks % 2 == 0 || blocks % 3 == 0)) blocks /= blocks % 2 == 0 ? 2 : 3;
    return blocks;
  };
  const int64_t load = divide_down(nb_oc, 32), bcast = divide_down(nb_ic, 9);
  const int64_t job = load * bcast * 64;
  const auto b = reduce_balance(T, job, ceil_div(nb_oc, load) * ceil_div(nb_ic, bcast), c.batch * os, T * job * 8);
  int64_t bytes =
      b.per_group > 1 ? b.groups * b.per_group * b.jobs_ub * job * 4 + kEntry + b.groups * kPage + kPage : 0;
  if (rtus) bytes += T * bcast * os * 8 * 4 + kEntry;
  return bytes;
}

// jit_avx512_common_1x1_conv_kernel's backward weights: the batch split by balance(), its reduction buffer, and
// for a strided kernel the input reduced to unit stride per thread.
int64_t one_by_one_fp32_weight_grad(const ConvShape& c, bool rtus) {
  const int64_t T = c.threads, o = c.out_hw, s = rtus ? 1 : c.stride;
  const int64_t reduce = rtus ? o * o : c.in_hw * c.in_hw, iw = rtus ? o : c.in_hw;
  const int64_t ic = round_up(c.cin, 16), oc = round_up(c.cout, 16), nb_bcast = ic / 16, nb_load = oc / 16;
  int64_t rb = best_divider(reduce, 7, 16, true);
  if (reduce % rb != 0) rb = best_divider(iw, 4, iw, false);
  if (rb > 256) rb = 1;
  const int64_t nb_reduce = ceil_div(reduce, rb);
  const auto cost = [&](int64_t n_mb, int64_t n_oc, int64_t n_ic) {
    const int64_t batch_blocks = ceil_div(c.batch * nb_reduce, n_mb);
    return batch_blocks * ceil_div(nb_bcast, n_ic) * 16 * rb / s / s +
           batch_blocks * ceil_div(nb_load, n_oc) * 16 * rb +
           12 * ceil_div(nb_load, n_oc) * ceil_div(nb_bcast, n_ic) * 256;
  };
  const Split best = cheapest_split(T, c.batch * nb_reduce, nb_load, nb_bcast, c.batch, cost);
  int64_t bytes = best.mb > 1 ? oc * ic * 4 * (best.mb - 1) + kEntry + kBarrier : 0;
  if (rtus) bytes += T * best_divider(nb_bcast, 5, nb_bcast, false) * reduce * 16 * 4 + kEntry;
  return bytes;
}

}  // namespace

Fp32WeightKernel fp32_conv_weight_kernel(const ConvShape& c) {
  if (c.kernel == 1) return Fp32WeightKernel::one_by_one;
  if (c.cin <= 3) return Fp32WeightKernel::first;
  return c.cin >= 16 ? Fp32WeightKernel::avx512 : Fp32WeightKernel::avx2;
}

const char* to_string(Fp32WeightKernel k) {
  switch (k) {
    case Fp32WeightKernel::first:
      return "jit:avx512_core, first";
    case Fp32WeightKernel::avx512:
      return "jit:avx512_core";
    case Fp32WeightKernel::avx2:
      return "jit:avx2";
    case Fp32WeightKernel::one_by_one:
      return "jit_1x1:avx512_core";
  }
  return "?";
}

namespace {

// oneDNN's brgemm backward-data convolution for strides above 1 (brgconv_strided: jit_brgemm_conv_bwd_strided.cpp,
// its configuration and bookings in brgemm_convolution_bwd_utils::init_conf / init_scratchpad). Its scratchpad,
// each booking with a page of alignment room (the registry books size + alignment):
//  - per thread a brgemm batch of 40-byte elements (brgemm_batch_element_t) rounded up to a page's worth
//    (div_up(rnd_up(kh x kw x 40, 4096), 40) elements: 4120 bytes for every kernel up to 10x10);
//  - per thread the output's gradient with the kernel's overflow on each side (odp x ohp x owp x cout 4-byte
//    elements, rounded up to 4096 of them), booked though the unstrided layout does not use it;
//  - per thread a mask of one byte per block of the input and output channels (nb_ih x nb_iw x nb_oc, rounded up to
//    4096: a page wherever the input has at most 4096 positions; above that its blocks are counted as single
//    positions, an upper bound);
//  - where the input's width is not a multiple of the stride (the transposing kernel): per thread a row of the input's
//    gradient (iw_block x stride x cin 4-byte elements, rounded up to 4096 of them; iw_block at most the input's
//    width rounded up to the stride, which bounds it above 4096).
// The zoo's convolutions pad by kernel / 2.
int64_t brgconv_strided_fp32_scratch(const ConvShape& c) {
  const int64_t k = c.kernel, s = c.stride, in = c.in_hw, out = c.out_hw, T = c.threads, pad = k / 2;
  const int64_t end_pad = (out - 1) * s + k - (in + pad);
  const int64_t overflow = std::max<int64_t>(0, k - 1 - pad) / s + std::max<int64_t>(0, k - 1 - end_pad) / s;
  const int64_t padded_out = out + overflow;
  const int64_t batch = ceil_div(round_up(k * k * 40, 4096), 40) * 40;
  const int64_t image = round_up(padded_out * padded_out * c.cout, 4096) * 4;
  const int64_t mask = round_up(in * in, 4096);
  const bool uneven = in % s != 0;
  const int64_t row = uneven ? round_up(round_up(in, s) * s * c.cin, 4096) * 4 : 0;
  return (uneven ? 4 : 3) * 4096 + T * (batch + image + mask + row);
}

// The plain fp32 tensors of a convolution (bytes): input x, output y, weights w, and the images' areas.
struct PlainSizes {
  int64_t in_area, out_area, x, y, w;
};
PlainSizes plain_sizes(const ConvShape& c) {
  const int64_t in_area = c.in_hw * c.in_hw, out_area = c.out_hw * c.out_hw;
  return {in_area, out_area, c.batch * c.cin * in_area * 4, c.batch * c.cout * out_area * 4,
          c.cin * c.cout * c.kernel * c.kernel * 4};
}

// The backward's bytes above the gradients it leaves (the input's, the weights'): the data phase (`data`: the
// input's gradient with the layouts and scratch it is computed in), its conversion to the plain layout (`convert`),
// then the weight phase (`weights`) beside the input's gradient; without an input gradient the weight phase alone.
int64_t fp32_backward_bytes(const ConvShape& c, const PlainSizes& p, int64_t data, int64_t convert, int64_t weights) {
  const int64_t peak = c.input_grad ? std::max({data, convert, p.x + weights}) - p.x : weights;
  return std::max<int64_t>(0, peak - p.w);
}

}  // namespace

ConvScratch avx512_fp32_conv(const ConvShape& c) {
  const int64_t cin = c.cin, cout = c.cout, k = c.kernel, s = c.stride, T = c.threads;
  const PlainSizes p = plain_sizes(c);
  const int64_t in_area = p.in_area, out_area = p.out_area, x = p.x, y = p.y, w = p.w;
  const int64_t cin_p = round_up(cin, 16), cout_p = round_up(cout, 16);
  const int64_t x_p = c.batch * cin_p * in_area * 4, y_p = c.batch * cout_p * out_area * 4;
  // A strided 1x1 kernel reduces its input to unit stride where the output tiles it exactly (rtus_prepare).
  const bool rtus = k == 1 && s > 1 && c.out_hw * s == c.in_hw;
  const bool blocked_input = cin >= 16 || k == 1;                          // else the forward reads its input as it is
  const int64_t w_p = cout_p * (blocked_input ? cin_p : cin) * k * k * 4;  // the forward's weights in blocks
  const int64_t x_blocks = blocked_input ? x_p : 0;
  const int64_t forward_rtus = rtus ? T * (cin_p / 16) * out_area * 16 * 4 + kEntry : 0;
  ConvScratch r;
  r.forward_bytes = std::max(forward_rtus + x_blocks + w_p + y_p, y_p + y) - y;

  // The weight phase: the input and the output's gradient in the kernel's blocks, the weight gradient in blocks
  // (`wb`) and the kernel's scratchpad; then the blocked gradient beside its plain copy.
  int64_t blocks = 0, wb = 0, pad = 0;
  switch (const auto kernel = fp32_conv_weight_kernel(c)) {
    case Fp32WeightKernel::first:  // the input read as it is: one block of all its channels
    case Fp32WeightKernel::avx512: {
      const bool first = kernel == Fp32WeightKernel::first;
      const int64_t ic = first ? cin : cin_p;
      wb = cout_p * ic * k * k * 4;
      blocks = (first ? 0 : x_p) + y_p + wb;
      const int64_t split = avx512_weight_grad_batch_split(c, ic, first ? cin : 16);
      pad = split > 1 ? (wb + cout_p * 4) * (split - 1) + kEntry + kBarrier : 0;  // weights and bias per extra way
      break;
    }
    case Fp32WeightKernel::avx2: {
      const int64_t cin_8 = round_up(cin, 8), cout_8 = round_up(cout, 8);
      wb = cout_8 * cin_8 * k * k * 4;
      blocks = c.batch * cin_8 * in_area * 4 + c.batch * cout_8 * out_area * 4 + wb;
      pad = avx2_reducer_bytes(T, k * k * 64, (cin_8 / 8) * (cout_8 / 8), c.batch);
      break;
    }
    case Fp32WeightKernel::one_by_one:
      wb = cout_p * cin_p * 4;
      blocks = x_p + y_p + wb;
      pad = one_by_one_fp32_weight_grad(c, rtus);
      break;
  }
  // The input's gradient. Unstrided: jit:avx512_core's blocks, padded (the weights both ways from 4 input channels).
  // Strided: brgconv_strided in channels-last layouts, the output's gradient and the input's unpadded, the weights'
  // input channels padded to 16, and its scratchpad. Then beside its plain copy(ies).
  const int64_t data = s == 1 ? y_p + cout_p * (cin >= 4 ? cin_p : cin) * k * k * 4 + x_p
                              : y + cout * cin_p * k * k * 4 + x + brgconv_strided_fp32_scratch(c);
  const int64_t convert = s == 1 ? x_p + x : 3 * x;
  r.backward_bytes = fp32_backward_bytes(c, p, data, convert, std::max(blocks + pad, wb + w));
  return r;
}

// oneDNN's fp32 convolution forward on AVX2 (as LibTorch 2.14.1 calls it, with the layouts oneDNN prefers, blocks of
// 8 channels). In order it allocates: for a strided 1x1 kernel a buffer of the input at the output's resolution per
// thread (+128 bytes); the input in blocks (as it is when its channels are a multiple of 8, padded to 8 when it
// has at least 8 or the kernel is 1x1, not copied otherwise: the first layer's plain input is read directly); the
// weights in blocks (the output channels padded to 8, the input channels too under the same rule); the output in
// blocks (padded to 8). It frees the first three, allocates the plain output and reorders into it:
// max(buffer + x_blocks + w_blocks + y_blocks, y_blocks + y) - y beside the output. Equal to the byte for all 91
// convolutions LibTorch sent to oneDNN of the 105 measured with scripts/op-scratch.py under ONEDNN_MAX_CPU_ISA=AVX2
// on an AMD EPYC (batches 1 to 8, 1 to 4 threads, kernels 1, 3 and 7, strides 1 and 2, 3 to 512 channels, the shapes of
// cnn, resnet tiny and resnet-50's stages at reduced resolution). LibTorch sends only some convolutions to oneDNN (not
// those of one image with a small kernel, nor unstrided 1x1 ones at one thread): the trace asks it which first.
int64_t avx2_fp32_conv_forward(const ConvShape& c) {
  const int64_t k = c.kernel, cin = c.cin, cout = c.cout, out_area = c.out_hw * c.out_hw;
  const bool pad_in = k == 1 || cin >= 8;  // else the first layer's plain input, read as it is
  const int64_t cin_b = pad_in ? round_up(cin, 8) : cin, cout_b = round_up(cout, 8);
  const int64_t x_blocks = pad_in ? c.batch * cin_b * c.in_hw * c.in_hw * 4 : 0;
  const int64_t w_blocks = cout_b * cin_b * k * k * 4;
  const int64_t y = c.batch * cout * out_area * 4, y_blocks = c.batch * cout_b * out_area * 4;
  const bool rtus = k == 1 && c.stride > 1 && c.out_hw * c.stride == c.in_hw;  // the output tiles the input
  const int64_t reduce = rtus ? c.threads * cin * out_area * 4 + 128 : 0;
  return std::max(reduce + x_blocks + w_blocks + y_blocks, y_blocks + y) - y;
}

// oneDNN's fp32 convolution backward on AVX2 (as LibTorch 2.14.1 calls it; ONEDNN_VERBOSE=1 under
// ONEDNN_MAX_CPU_ISA=AVX2 on an Intel Xeon): the forward as avx2_fp32_conv_forward; the weight gradient by jit:avx2
// (blocks of 8 channels, padded; a first convolution of 3 input channels reads its input as it is and keeps its
// weight gradient's input channels unpadded, "flat") with cpu_reducer's per-thread copies where the threads split the
// batch, or by jit_1x1:avx2 (cpu_reducer_2d over the batch x the output positions; rtus for a strided kernel whose
// output tiles the input), the blocked weight gradient then beside its plain copy; the input's gradient by jit:avx2
// in blocks (padded) or, strided, by brgconv_strided:avx2 channels-last with its scratchpad
// (brgconv_strided_fp32_scratch, the same bookings as on AVX-512), then beside its plain copy. Equal to the byte for
// all 274 convolutions of cnn, resnet and ResNet-50's widths at 1, 2 and 4 threads
// (docs/results/cpu-fp32-conv-scratch-avx2.md; a filter larger than its input takes oneDNN's gemm kernel, below).
ConvScratch avx2_fp32_conv(const ConvShape& c) {
  const int64_t cin = c.cin, cout = c.cout, k = c.kernel, s = c.stride, T = c.threads;
  const PlainSizes p = plain_sizes(c);
  const int64_t in_area = p.in_area, out_area = p.out_area, x = p.x, y = p.y, w = p.w;
  const int64_t cin_8 = round_up(cin, 8), cout_8 = round_up(cout, 8);
  const int64_t x_8 = c.batch * cin_8 * in_area * 4, y_8 = c.batch * cout_8 * out_area * 4;
  ConvScratch r;
  r.forward_bytes = avx2_fp32_conv_forward(c);
  // The weight phase: the kernel's blocks and scratchpad, then the blocked weight gradient beside its plain copy.
  const bool flat = cin == 3;  // the weight gradient of a first convolution reads its input as it is
  const int64_t ic_block = flat ? cin : 8, wb = cout_8 * (flat ? cin : cin_8) * k * k * 4;
  int64_t weights = 0;
  if (k > c.in_hw) {
    // A filter larger than the input (jit:avx2 requires kh <= ih): oneDNN's gemm kernel (x64:gemm:jit) writes the
    // plain weight gradient itself and books per thread (all of them where the batch has more than one image and
    // fewer than 256 output positions per thread, else one) a weight-reduction buffer of "weights' bytes" floats
    // (four copies) and the unfolded input (gemm_convolution_utils.cpp), each entry with its alignment room.
    const int64_t nthr = c.batch > 1 && out_area / T < 256 ? T : 1;
    weights = w + nthr * (4 * w + cin * k * k * out_area * 4) + 2 * kEntry;
  } else if (k == 1) {
    const int64_t pad = avx2_one_by_one_weight_grad(c, s > 1 && c.out_hw * s == c.in_hw);
    weights = std::max(x_8 + y_8 + wb + pad, wb + w);
  } else {
    const int64_t pad = avx2_reducer_bytes(T, k * k * ic_block * 8, ceil_div(cin, ic_block) * (cout_8 / 8), c.batch);
    weights = std::max((flat ? 0 : x_8) + y_8 + wb + pad, wb + w);
  }
  // The input's gradient: jit:avx2's blocks (padded), or strided brgconv_strided channels-last (the weights' input
  // channels padded to 8) with its scratchpad; then beside its plain copy(ies).
  const int64_t data = s == 1 ? y_8 + cout_8 * cin_8 * k * k * 4 + x_8
                              : y + cout * cin_8 * k * k * 4 + x + brgconv_strided_fp32_scratch(c);
  const int64_t convert = s == 1 ? x_8 + x : 3 * x;
  r.backward_bytes = fp32_backward_bytes(c, p, data, convert, weights);
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// bf16 convolutions on avx512_bf16 (no AMX). LibTorch hands oneDNN plain tensors; oneDNN picks for the training
// step's three primitives (forward, backward data, backward weights):
//  - k x k kernels: jit_avx512_core_bf16_convolution (blocked layouts, 16 channels a block; an input with fewer
//    than 16 channels is read as it is, a "first convolution"), except the weight gradient of a convolution with
//    fewer than 16 input channels whose outputs are not a multiple of 16, which runs gemm_bf16_convolution (im2col);
//  - 1x1 kernels: jit_avx512_core_bf16_1x1_convolution (blocked, padded), strided ones through "rtus" (the input
//    reduced to unit stride in a per-thread buffer).
// Each primitive books one scratchpad (an allocation of LibTorch's CPU allocator, freed when it returns): every
// entry rounded to its size + 128 bytes (memory_tracking.hpp), a barrier context 4096 bytes + 4096 alignment. What
// follows writes out those bookings (oneDNN's jit_avx512_core_bf16_conv_kernel.cpp, jit_avx512_core_bf16_1x1_conv_
// kernel.cpp: init_conf, init_scratchpad and balance, which splits the threads over the batch (each such thread
// then keeps its own fp32 copy of the weight gradient) or over channel blocks), with the reorders LibTorch's
// ideep makes around them. Checked with scripts/op-scratch.py on an AMD EPYC with avx512_bf16 (LibTorch 2.14.1),
// 1 to 4 threads: 219 convolutions (cnn and resnet tiny/small at batches 8 and 16; ResNet-50 and other widths at
// batches 1-5, channels 3-1024, kernels 1/3/5/7, strides 1/2): the backward peak equal to the byte for 208, the
// rest within -9.2% .. +4.2%; the forward's equal for 217 (a 1x1 forward at 3 threads over: see `store`). That
// was without the 1x1 configuration (thread groups over channels, the rtus stride in balance()); with it,
// on an Intel Xeon emulating bf16 (AVX-512 without avx512_bf16): 246 of 246 equal to the byte, both phases
// (docs/results/cpu-bf16-conv-scratch-avx512-emulated.md); and on the AMD EPYC again: the forward
// equal for 246 of 246, the backward for 237, the rest the strided input gradient's fit (within 3.6%;
// docs/results/cpu-bf16-conv-scratch-avx512.md).

namespace {

constexpr int64_t kFullSpatialSet = 48 * 1024;  // full_spat_opt_working_set_size

// The k x k kernel's weight-gradient scratchpad (jit_avx512_core_bf16_conv_bwd_weights_kernel_f32): per split of
// the batch and per channel block, the input transposed into rows of tr_iw (tr_src) and the output's gradient
// (tr_diff_dst), the fp32 weight gradients to reduce, and barrier contexts.
int64_t jit_weight_grad(const ConvShape& c) {
  const int64_t k = c.kernel, s = c.stride, ih = c.in_hw, oh = c.out_hw, T = c.threads;
  const bool first = c.cin < 16;  // is_1stconv: the input read as it is, not transposed
  const int64_t ic = first ? c.cin : round_up(c.cin, 16), oc = round_up(c.cout, 16);
  const int64_t ic_block = first ? c.cin : 16, nb_ic = ic / ic_block, nb_oc = oc / 16;
  const int64_t l_pad = k / 2, r_pad = std::max<int64_t>(0, (oh - 1) * s + k - (ih + l_pad));
  const int64_t tr_pad = round_up(std::max(l_pad, r_pad + 1), 2);
  const int64_t tr_iw = first ? ih : round_up(ceil_div(ih, s) + tr_pad, 2) * s, tr_ow = round_up(oh, 2);
  const bool full_spatial = s == 1 && k > 1 && !first && ic >= 128 &&
                            (16 * tr_iw * 2 + 16 * tr_ow * 2) * std::max<int64_t>(1, l_pad) <= kFullSpatialSet;
  const int64_t mb_work = full_spatial ? c.batch : c.batch * oh;  // the batch (x rows) the threads may split

  // balance()'s modelled memory traffic per thread (float, as oneDNN computes it).
  const float src_size = static_cast<float>(c.batch * ic * ih * tr_iw * 2);
  const float dst_size = static_cast<float>(c.batch * oc * oh * tr_ow * 2);
  const float wei_size = static_cast<float>(oc * ic * k * k * 4);
  const float compensation = 0.5f * (dst_size + src_size) / wei_size;
  const float ratio = static_cast<float>(nb_oc) / static_cast<float>(nb_ic);
  const float src_coef = std::max(1.0f / ratio, 1.0f) * (compensation < 1.0f ? 4.0f : 1.0f);
  const float dst_coef = std::max(ratio, 1.0f), wei_coef = std::max(compensation, 1.0f);
  const auto cost = [&](int64_t n_mb, int64_t n_oc, int64_t n_ic) {
    const float src =
        src_coef * ceil_div(mb_work, n_mb) * ceil_div(nb_ic, n_ic) * c.batch * ic_block * ih * tr_iw / mb_work / s / s;
    const float wei = wei_coef * ceil_div(nb_oc, n_oc) * ceil_div(nb_ic, n_ic) * k * k * ic_block * 16;
    const float dst = dst_coef * ceil_div(mb_work, n_mb) * ceil_div(nb_oc, n_oc) * c.batch * 16 * oh * tr_ow / mb_work;
    return src + wei + dst;
  };
  const Split best = cheapest_split(T, mb_work, nb_oc, nb_ic, mb_work, cost);
  const int64_t nthr = best.threads();

  int64_t bytes = (first ? 0 : best.mb * nb_ic * tr_iw * ic_block * ih * 2) + tr_pad * 2 + kEntry;  // tr_src
  if (best.oc > 1) bytes += nthr / best.oc * 4096 + 4096;
  bytes += best.mb * nb_oc * tr_ow * 16 * oh * 2 + kEntry;  // tr_diff_dst
  if (best.ic > 1) bytes += nthr / best.ic * 4096 + 4096;
  bytes += best.mb * oc * ic * k * k * 4 + kEntry + kBarrier;  // the fp32 weight gradients and their barrier
  return bytes;
}

// The 1x1 kernel's weight-gradient scratchpad (jit_avx512_core_bf16_1x1_conv_kernel, backward_weights): the fp32
// weight gradients per split of the batch (a barrier when split), per thread the output's gradient and the input
// transposed in blocks of the spatial reduction (none where oneDNN permutes in registers instead: outputs wider
// than 14), and for a strided convolution the input reduced to unit stride per thread.
int64_t one_by_one_weight_grad(const ConvShape& c) {
  // A strided kernel whose output tiles its input runs on the input reduced to unit stride (rtus_prepare): the
  // kernel's own configuration, balance() included, sees stride 1.
  const bool rtus = c.stride > 1 && c.out_hw * c.stride == c.in_hw;
  const int64_t T = c.threads, s = rtus ? 1 : c.stride, o = c.out_hw;
  const int64_t ic = round_up(c.cin, 16), oc = round_up(c.cout, 16);
  const int64_t reduce = o * o;  // the (reduced) input's spatial size
  const bool permw = o > 14;
  int64_t rb =
      permw ? best_divider(reduce, 7, std::min<int64_t>(256, reduce), true, 2) : best_divider(reduce, 8, 16, true, 2);
  if (reduce % rb != 0) rb = best_divider(o, 4, o, permw, 2);
  if (rb > 256) rb = 1;
  if (!permw) rb = round_up(rb, 2);
  const int64_t nb_reduce = ceil_div(reduce, rb), nb_bcast = ic / 16, nb_load = oc / 16;

  const int64_t out_coef = 4 * (s == 1 ? std::max<int64_t>(1, oc / ic) : 1);
  const auto cost = [&](int64_t n_mb, int64_t n_oc, int64_t n_ic) {
    const int64_t batch_blocks = ceil_div(c.batch * nb_reduce, n_mb);
    return batch_blocks * ceil_div(nb_bcast, n_ic) * 16 * rb / s / s +
           batch_blocks * ceil_div(nb_load, n_oc) * 16 * rb +
           out_coef * ceil_div(nb_load, n_oc) * ceil_div(nb_bcast, n_ic) * 256;
  };
  const Split best = cheapest_split(T, c.batch * nb_reduce, nb_load, nb_bcast, c.batch, cost);
  const int64_t nthr = best.threads();
  const int64_t load_blocks = best_divider(nb_load, 16, nb_load, false);
  const int64_t bcast_blocks = best_divider(nb_bcast, 5, nb_bcast, false);

  int64_t bytes = best.mb * oc * ic * 4 + kEntry + (best.mb > 1 ? kBarrier : 0);
  if (!permw) bytes += nthr * round_up(reduce, 2) * 16 * (load_blocks + bcast_blocks) * 2 + 2 * kEntry;
  if (rtus) bytes += nthr * bcast_blocks * reduce * 16 * 2 + kEntry;  // the reduced input, per thread of the split
  return bytes;
}

// gemm_bf16_convolution's weight gradient (im2col): per thread one image's columns (cin k^2 x out^2, bf16) and two
// fp32 copies of the weight gradient, plus two more and 384 bytes. A fit to its measured bookings (the stems of cnn
// and resnet, 3 and 8 input channels, kernels 3 and 7), at batches of at least the threads.
int64_t gemm_weight_grad(const ConvShape& c) {
  const int64_t w32 = c.cin * c.cout * c.kernel * c.kernel * 4;
  const int64_t columns = c.cin * c.kernel * c.kernel * c.out_hw * c.out_hw * 2;
  return 384 + 2 * w32 + c.threads * (columns + 2 * w32);
}

}  // namespace

// The op's phases, with what each holds (2-byte elements; `_p`: channels padded to 16):
//  - forward: the input in blocks (padded; a first convolution's k x k input read as it is), the weights in blocks,
//    the output in blocks, then its plain copy; a 1x1 kernel adds its per-thread fp32 output rows (`store`, threads
//    x out^2 rounded up to the register blocking x its group's output channels x 4) and, strided, the reduced input
//    (threads x out^2 x cin_p x 2);
//  - backward data: the output's gradient in blocks, the weights (padded both ways) and the input's gradient in
//    blocks (padded unless strided); a 1x1 kernel its fp32 rows as the forward's (input channels for output
//    channels; strided, at the output's resolution beside the reduced-stride gradient); a strided k x k one with
//    avx512_bf16 (brgconv_strided) a buffer of 16384 + 17432 bytes per thread (measured: 16536 .. 33816 per thread over
//    the shapes above, the larger for the larger images: the one part not derived); then the blocked gradient beside
//    its plain copy (and beside another input-sized copy when strided);
//  - backward weights, the input's gradient alive: the input and the output's gradient in blocks (a first
//    convolution's k x k input as it is), the weight gradient in bf16 blocks and the kernel's scratchpad above; the
//    gemm kernel holds no blocks.
// The JIT kernel's blocked layout needs output channels in blocks of 16 unless it may pad them, which it may not
// for a first convolution (fewer than 16 input channels): oneDNN then falls back to gemm for the weight gradient.
WeightKernel bf16_conv_weight_kernel(const ConvShape& c) {
  if (c.kernel == 1) return WeightKernel::one_by_one;
  return c.cout % 16 != 0 && c.cin < 16 ? WeightKernel::gemm : WeightKernel::jit;
}

const char* to_string(WeightKernel k) {
  switch (k) {
    case WeightKernel::gemm:
      return "gemm";
    case WeightKernel::jit:
      return "jit";
    case WeightKernel::one_by_one:
      return "1x1";
  }
  return "?";
}

namespace {

// jit_avx512_core_bf16_1x1_conv_kernel's forward and backward-data configuration (init_conf) as far as its buffers
// depend on it. The kernel multiplies a "bcast" matrix (the positions: the output's in forward, the input's in
// backward data; a strided kernel's reduced to unit stride) by a "load" one (the output channels in forward, the
// input channels in backward data), reducing over the other channels:
//  - ur: the register blocking of the positions; the store buffer holds them rounded up to it. Where bf16 is
//    emulated (no avx512_bf16) the emulation takes registers: a third of the blocking, at least the minimum;
//  - the load groups: where there are fewer images than threads, the threads split the load channels into groups
//    (a cost model in float, as oneDNN computes it); each thread's store rows then hold only its group's channels;
//  - the threads: tiny problems use fewer.
struct OneByOneConf {
  int64_t ur = 1, threads = 1;
  int64_t bcast_dim = 1;           // the positions (per image)
  int64_t load_per_thread = 16;    // the store buffer's channels per thread
  int64_t load_blocking_max = 16;  // the channels of one job (the backward data's rtus buffer holds them)
};

OneByOneConf bf16_one_by_one_conf(const ConvShape& c, bool backward_data) {
  const bool rtus = c.stride > 1 && c.out_hw * c.stride == c.in_hw;
  const int64_t spatial = rtus || !backward_data ? c.out_hw : c.in_hw, bcast_dim = spatial * spatial;
  const int64_t cin_p = round_up(c.cin, 16), cout_p = round_up(c.cout, 16);
  const int64_t load_dim = backward_data ? cin_p : cout_p, reduce_dim = backward_data ? cout_p : cin_p;
  const int64_t mb = c.batch, T = c.threads;
  const bool emulated = cpu_bf16_matmul_kernels() == CpuBf16Matmul::onednn_avx512_emulated;

  int64_t max_regs = 30, min_regs = 9;
  const bool expl_bcast = 8 * mb / T >= 1;  // the channels, padded to 16, have no odd tail
  if (expl_bcast) {
    max_regs = 9, min_regs = 6;
    if (load_dim > 128 && load_dim < 256 && spatial > 10 && spatial < 28) max_regs = 6, min_regs = emulated ? 4 : 5;
  }
  if (emulated) max_regs = std::max(min_regs, max_regs / 3);
  int64_t ur = 1;
  for (int64_t u = max_regs; u >= min_regs && ur == 1; --u)
    if ((spatial >= 14 && spatial % u == 0) || (spatial < 14 && bcast_dim % u == 0)) ur = u;
  if (ur == 1) {
    ur = std::min(max_regs, bcast_dim);
    int64_t tail = bcast_dim % max_regs;
    for (int64_t i = max_regs; i >= min_regs; --i) {
      const int64_t i_tail = bcast_dim % i;
      if (i_tail > tail || i_tail == 0) {
        ur = i, tail = i_tail;
        if (i_tail == 0) break;
      }
    }
  }

  const int64_t nb_bcast = ceil_div(bcast_dim, ur), nb_load = load_dim / 16;
  int64_t load_blocking = load_dim, groups = 1;
  if (T <= 28 && mb < T && nb_load * nb_bcast > T) {
    const float ratio = static_cast<float>(load_dim * reduce_dim) / static_cast<float>(mb * bcast_dim * reduce_dim);
    const auto job_cost = [&](int64_t lb, int64_t tg, float mem_k) {
      const int64_t bb = mb * ceil_div(nb_bcast, tg);
      const float calc = static_cast<float>(bb * ur) * static_cast<float>(lb * 16) * static_cast<float>(reduce_dim);
      const float mem = static_cast<float>(bb * ur + lb * 16) * static_cast<float>(reduce_dim);
      return 0.01f * calc + mem_k * mem;
    };
    float best_cost = std::numeric_limits<float>::max();
    groups = ratio > 1 ? T : 1;
    for (int64_t i = 0; i < T; ++i) {
      const int64_t lgc = ratio > 1 ? T - i : i + 1;
      const int64_t min_lb = nb_load / lgc, max_lb = ceil_div(nb_load, lgc), min_tg = T / lgc,
                    max_tg = ceil_div(T, lgc);
      const float mem_k = max_tg == 1 ? 1.0f : 1.3f;
      const float cost = T % lgc < nb_load % lgc
                             ? job_cost(max_lb, min_tg, mem_k)
                             : std::max(job_cost(max_lb, max_tg, mem_k), job_cost(min_lb, min_tg, mem_k));
      if (cost < best_cost) best_cost = cost, groups = lgc;
    }
    load_blocking = ceil_div(nb_load, groups) * 16;
  } else {
    groups = ceil_div(T, mb * nb_bcast);
    groups = best_divider(T, groups, 2 * groups, false);
  }
  if (expl_bcast && bcast_dim <= 64 && load_dim * reduce_dim >= l2_cache_bytes_per_core() / 2) {
    groups = std::max<int64_t>(groups, 4);
  } else if (bcast_dim <= 49 && mb <= T && load_dim > 512 && load_dim / reduce_dim >= 4) {
    groups = std::max<int64_t>(groups, 2);
    load_blocking = 16;
  }

  OneByOneConf conf;
  conf.ur = ur;
  conf.bcast_dim = bcast_dim;
  conf.threads = T;
  if (2 * mb * bcast_dim * reduce_dim < 8192 && 1 < T && nb_bcast * nb_load < T)
    conf.threads = std::min(T, std::max(nb_bcast, nb_load));
  const int64_t group_count = ceil_div(conf.threads, ceil_div(conf.threads, groups));
  conf.load_per_thread = round_up(ceil_div(load_dim, group_count), 16);
  conf.load_blocking_max = load_blocking;
  return conf;
}

// The kernel's fp32 store buffer: per thread its positions (rounded up to the register blocking) x its channels.
int64_t bf16_one_by_one_store(const OneByOneConf& conf) {
  return conf.threads * round_up(conf.bcast_dim, conf.ur) * conf.load_per_thread * 4 + kEntry;
}

}  // namespace

ConvScratch avx512_bf16_conv(const ConvShape& c) {
  const int64_t cin = c.cin, cout = c.cout, k = c.kernel, s = c.stride, T = c.threads;
  const int64_t in_area = c.in_hw * c.in_hw, out_area = c.out_hw * c.out_hw;
  const int64_t x = c.batch * cin * in_area * 2, y = c.batch * cout * out_area * 2, w = cin * cout * k * k * 2;
  const int64_t x_p = x / cin * round_up(cin, 16), y_p = y / cout * round_up(cout, 16);
  const bool blocked_input = cin >= 16 || k == 1;  // else a first convolution, its input read as it is
  const int64_t w_blocks = round_up(cout, 16) * (blocked_input ? round_up(cin, 16) : cin) * k * k * 2;
  const int64_t w_pp = round_up(cout, 16) * (cin >= 8 ? round_up(cin, 16) : cin) * k * k * 2;

  ConvScratch r;
  // A strided 1x1 kernel whose output tiles its input reduces its input (forward) or runs its input's gradient
  // (backward data) at unit stride in a per-thread buffer (rtus).
  const bool rtus = k == 1 && s > 1 && c.out_hw * s == c.in_hw;
  int64_t store = 0;
  if (k == 1) {
    const OneByOneConf f = bf16_one_by_one_conf(c, false);
    store = bf16_one_by_one_store(f);
    if (rtus) store += f.threads * ceil_div(cin, 16) * out_area * 16 * 2 + kEntry;
  }
  r.forward_bytes = std::max(store + (blocked_input ? x_p : 0) + w_blocks + y_p, y_p + y) - y;

  int64_t weights = 0;  // the weight phase's bytes above the input's gradient
  switch (bf16_conv_weight_kernel(c)) {
    case WeightKernel::gemm:
      weights = w + gemm_weight_grad(c);
      break;
    case WeightKernel::jit:
      weights = (cin >= 16 ? x_p : 0) + y_p + w_blocks + jit_weight_grad(c);
      break;
    case WeightKernel::one_by_one:
      weights = x_p + y_p + w_blocks + one_by_one_weight_grad(c);
      break;
  }
  int64_t peak = weights;
  if (c.input_grad) {
    // A strided input gradient: brgconv_strided channels-last where the CPU has avx512_bf16 (its brgemm kernels);
    // where bf16 is emulated, the blocked jit kernels as for stride 1, the 1x1 one with rtus.
    const bool emulated = cpu_bf16_matmul_kernels() == CpuBf16Matmul::onednn_avx512_emulated;
    const bool brgemm_strided = s > 1 && !emulated;
    const int64_t dx_blocks = brgemm_strided ? x : x_p;
    const int64_t strided = brgemm_strided ? 16384 + T * 17432 : 0;
    // The 1x1 kernel's fp32 rows per thread (its store buffer), strided at the output's resolution beside the
    // reduced-stride copy of them it scatters back (rtus: each thread's job's channels).
    int64_t rows = 0;
    if (k == 1 && !brgemm_strided) {
      const OneByOneConf d = bf16_one_by_one_conf(c, true);
      rows = bf16_one_by_one_store(d) + (rtus ? d.threads * d.load_blocking_max * out_area * 2 + kEntry : 0);
    }
    const int64_t data = y_p + w_pp + dx_blocks + strided + rows;
    const int64_t convert = dx_blocks + x + (brgemm_strided ? x : 0);
    peak = std::max({data, convert, x + weights}) - x;
  }
  r.backward_bytes = std::max<int64_t>(0, peak - w);
  return r;
}

at::native::ConvBackend conv_backend(int64_t batch, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw,
                                     at::ScalarType dtype) {
  const auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  const at::Tensor x = at::empty({batch, cin, in_hw, in_hw}, options), w = at::empty({cout, cin, k, k}, options);
  const std::array<int64_t, 2> s{stride, stride}, pad{k / 2, k / 2}, dilation{1, 1}, output_padding{0, 0};
  return at::native::select_conv_backend(x, w, std::nullopt, c10::fromIntArrayRefSlow(s), c10::fromIntArrayRefSlow(pad),
                                         c10::fromIntArrayRefSlow(dilation), false,
                                         c10::fromIntArrayRefSlow(output_padding), c10::SymInt(1), std::nullopt);
}

ScopedThreads::ScopedThreads(int64_t threads) : saved_(at::get_num_threads()) {
  if (threads != saved_) at::set_num_threads(static_cast<int>(threads));
}

ScopedThreads::~ScopedThreads() {
  if (at::get_num_threads() != saved_) at::set_num_threads(saved_);
}

bool conv_on_onednn(const ConvShape& c, int64_t element_bytes) {
  const ScopedThreads threads(c.threads);
  return conv_backend(c.batch, c.cin, c.cout, c.kernel, c.stride, c.in_hw,
                      element_bytes == 2 ? at::kBFloat16 : at::kFloat) == at::native::ConvBackend::Mkldnn;
}

ConvScratch measure_conv(const ConvShape& c, int64_t element_bytes) {
  install_cpu_memory_counter();
  const auto probe = make_memory_probe(c10::Device(c10::kCPU));
  const ScopedThreads threads(c.threads);
  const auto dtype = element_bytes == 2 ? torch::kBFloat16 : torch::kFloat;
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(c.cin, c.cout, c.kernel).stride(c.stride).padding(c.kernel / 2).bias(false));
  conv->to(dtype);
  const auto x = torch::randn({c.batch, c.cin, c.in_hw, c.in_hw}).to(dtype).requires_grad_(c.input_grad);
  for (int i = 0; i < 2; ++i) conv->forward(x).to(torch::kFloat).sum().backward();  // the kernels' caches
  conv->zero_grad();
  if (c.input_grad) x.mutable_grad() = torch::Tensor();
  ConvScratch measured;  // the peak above what each phase leaves: forward its output, backward the gradients
  probe->reset_peak();
  const auto y = conv->forward(x);
  measured.forward_bytes = probe->peak_allocated_bytes() - probe->allocated_bytes();
  const auto dy = torch::ones_like(y);
  probe->reset_peak();
  y.backward(dy);
  measured.backward_bytes = probe->peak_allocated_bytes() - probe->allocated_bytes();
  return measured;
}

LinearProducts measure_bf16_linear(int64_t rows, int64_t in, int64_t out, int64_t threads) {
  install_cpu_memory_counter();
  const auto probe = make_memory_probe(c10::Device(c10::kCPU));
  const ScopedThreads scoped(threads);
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  const auto x = torch::randn({rows, in}, bf16), w = torch::randn({out, in}, bf16), b = torch::randn({out}, bf16);
  const auto dy = torch::randn({rows, out}, bf16);
  const auto measure = [&](const auto& run) {
    for (int i = 0; i < 2; ++i) run();  // oneDNN's primitive cache
    probe->reset_peak();
    const auto result = run();
    return probe->peak_allocated_bytes() - probe->allocated_bytes();
  };
  return {measure([&] { return torch::linear(x, w, b); }), measure([&] { return torch::mm(dy, w); }),
          measure([&] { return torch::mm(dy.t(), x); })};
}

}  // namespace tvie::trace::onednn
