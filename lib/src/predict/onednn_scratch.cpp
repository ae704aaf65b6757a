// The scratch of oneDNN's CPU kernels (see onednn_scratch.hpp): the fits, measured per op with LibTorch's profiler
// (scripts/op-scratch.py) and fitted (the fp32 convolutions and the brgemm matmuls), each with how close it came
// and where it misses; and what LibTorch is asked (its convolution's kernel, a thread count for the scope, a
// kernel's allocations measured). The bf16 convolutions' bookings written out: onednn_scratch_bf16.cpp.
#include "predict/onednn_scratch.hpp"
#include "predict/onednn_rules.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>

#include <dlfcn.h>
#include <unistd.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <tvie/memory.hpp>
#include "predict/cpu_kernels.hpp"
#include <tvie/ledger.hpp>

namespace tvie::trace::onednn {

using namespace rules;

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
// -67.8% .. +253.1% off for the rest (research/kernel-scratch/results/bf16-matmul-scratch-avx512.md); with it the
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
// (research/kernel-scratch/results/fp32-conv-scratch-avx2.md; a filter larger than its input takes oneDNN's gemm
// kernel, below).
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

ScopedThreads::ScopedThreads(int64_t threads) : saved_(at::get_num_threads()) {
  if (threads != saved_) at::set_num_threads(static_cast<int>(threads));
}

ScopedThreads::~ScopedThreads() {
  if (at::get_num_threads() != saved_) at::set_num_threads(saved_);
}

namespace {
// The OpenMP runtime LibTorch loaded (the one whose per-thread counts its kernels and oneDNN read), looked up in the
// process rather than linked: a second runtime would keep counts of its own.
using OmpSetNumThreads = void (*)(int);
OmpSetNumThreads omp_set_num_threads_of_libtorch() {
  static const auto set = reinterpret_cast<OmpSetNumThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return set;
}
}  // namespace

// at::get_num_threads first: on a thread's first call it sets the thread's count to LibTorch's default, which must
// not overwrite the count set here later. Where the runtime cannot be found (LibTorch loaded privately), the count
// is set for the process as ScopedThreads does: right, though not private to the thread.
ThisThreadsCount::ThisThreadsCount(int64_t threads) : saved_(at::get_num_threads()) { set(static_cast<int>(threads)); }

ThisThreadsCount::~ThisThreadsCount() { set(saved_); }

void ThisThreadsCount::set(int threads) {
  if (at::get_num_threads() == threads) return;
  if (const auto omp_set_num_threads = omp_set_num_threads_of_libtorch())
    omp_set_num_threads(threads);
  else
    at::set_num_threads(threads);
}

bool conv_on_onednn(const ConvShape& c, int64_t element_bytes) {
  const ThisThreadsCount threads(c.threads);
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
