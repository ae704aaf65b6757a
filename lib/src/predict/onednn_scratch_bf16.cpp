// bf16 convolutions' scratch on oneDNN's AVX-512 kernels without AMX, written out from oneDNN's own bookings (see
// onednn_scratch.hpp).
#include "predict/onednn_scratch.hpp"
#include "predict/onednn_rules.hpp"

#include <algorithm>
#include <cstdint>

#include "predict/cpu_kernels.hpp"

namespace tvie::trace::onednn {
using namespace rules;

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
// (research/kernel-scratch/results/bf16-conv-scratch-avx512-emulated.md); and on the AMD EPYC again: the forward
// equal for 246 of 246, the backward for 237, the rest the strided input gradient's fit (within 3.6%;
// research/kernel-scratch/results/bf16-conv-scratch-avx512.md).

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

}  // namespace tvie::trace::onednn
