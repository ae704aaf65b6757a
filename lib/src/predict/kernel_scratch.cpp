// The kernels' scratch of the traced operators (forward_trace.hpp, "kernel scratch"): what a matmul's, a
// convolution's and the attention's kernels allocate and free inside the op, which depends on the device, the
// kind of CPU and its threads. CUDA's kernels hold none the ledger sees; on the CPU the kernel LibTorch picks, and
// its buffers from oneDNN's own bookings (onednn_bookings.hpp) or from the rules written out for each kind of CPU
// (onednn_scratch.hpp). The trace's operators (forward_trace.cpp) know none of this: they ask here and count what
// they are told.
#include "predict/forward_trace.hpp"

#include "predict/fbgemm_packs.hpp"
#include "predict/kernel_scratch.hpp"
#include "predict/onednn_bookings.hpp"
#include "predict/onednn_scratch.hpp"

#include <tvie/log.hpp>

#include <algorithm>
#include <array>
#include <optional>

#include <ATen/Parallel.h>
#include <ATen/native/ConvUtils.h>

#include <tvie/device.hpp>

namespace tvie::trace {

namespace {
// Whether predict/onednn_scratch.cpp has this CPU's bf16 convolution kernels written out (the trace's fallback where
// oneDNN's own bookings cannot be asked): the CPUs whose bf16 matmuls run on oneDNN's AVX-512 kernels without AMX
// run bf16 convolutions on its avx512_core_bf16 JIT kernels (which emulate the bf16 dot products where avx512_bf16
// is missing, with the same bookings but a smaller 1x1 register blocking and blocked strided input gradients); AMX's
// kernels book other buffers, which only oneDNN's own bookings give.
bool cpu_bf16_conv_scratch_written_out() {
  const auto k = cpu_bf16_matmul_kernels();
  return k == CpuBf16Matmul::onednn_avx512_bf16 || k == CpuBf16Matmul::onednn_avx512_emulated;
}
}  // namespace

namespace {
// ATen's bf16 gemm (aten/src/ATen/native/CPUBlas.cpp) skips oneDNN for a product of one output column with the
// first operand transposed (a Linear's forward of one row; not its backward products) where the CPU itself has no
// avx512_bf16: cpuinfo's flag, not the ISA oneDNN may use, so a CPU with avx512_bf16 under ONEDNN_MAX_CPU_ISA
// still sends it to oneDNN. Its gemv holds no buffer (scripts/op-scratch.py, bf16 Linear of one row on an Intel
// Xeon with AVX-512 and no avx512_bf16: the forward allocates its output only).
bool bf16_one_row_forward_on_aten() {
  static const bool yes = [] {
    const auto features = describe_host().cpu_features;
    return std::find(features.begin(), features.end(), "avx512_bf16") == features.end();
  }();
  return yes;
}
}  // namespace

namespace {
// oneDNN's bf16 matmul where the CPU has AVX-512 but no avx512_bf16 (gemm:jit:bf16, bf16 emulated): an fp32
// accumulator for the product's m x n output, as oneDNN books it (cpu/matmul/gemm_based_common.hpp,
// get_scratchpad_num_elements): a block per thread of the threads that will run it, each the whole rows of its
// share of the output (its share itself where that is less than a row), at least one thread's whole product, in
// steps of 64 floats; and 128 bytes of the scratchpad's alignment. Equal to oneDNN's bookings for 720 products (a
// Linear's three on 60 random shapes, 8-300 rows, 32-600 x 32-320 features, 1-4 threads:
// research/kernel-scratch/onednn-bookings/matmul.py) and to LibTorch's allocations where measured
// (scripts/op-scratch.py, 1, 2 and 4 threads, odd shapes). Inside a parallel region (the flash attention's products)
// oneDNN sees one thread.
int64_t emulated_accumulator(int64_t m, int64_t n, int64_t threads) {
  const auto block = [&](int64_t t) {
    const int64_t share = (m * n + t - 1) / t;
    const int64_t elements = share >= n ? std::min(m * n, share / n * n) : share;
    return (elements + 63) / 64 * 64;
  };
  return std::max(block(1), threads * block(threads)) * 4 + 128;
}
}  // namespace

// The CPU kernels' scratch, freed within the op: fp32 and CUDA matmuls hold none the ledger sees; bf16 ones on
// oneDNN (LibTorch sends it those with rows x in x out above 16^3; the three products of a Linear have the same
// size) hold, forward beside y and backward the larger of the input gradient's and the weight gradient's:
//  - on the brgemm kernels (avx512_bf16, AMX): oneDNN's own bookings (predict/onednn_bookings.hpp), where
//    LibTorch's oneDNN can be asked; else, for avx512_bf16 only, their packed blocks and accumulators written out
//    (predict/onednn_scratch.cpp: a fit, exact for the forward and the input gradient of most shapes, not for the
//    weight gradient's);
//  - with AVX-512 alone (bf16 emulated): an fp32 accumulator of the product's output as oneDNN books it
//    (emulated_accumulator; measured with scripts/op-scratch.py under ONEDNN_MAX_CPU_ISA=AVX512_CORE on an AMD
//    EPYC and on an Intel Xeon of that kind).
LinearProducts ForwardTrace::linear_scratch(int64_t rows, int64_t in, int64_t out, bool sum) const {
  if (query_.cuda || compute_bytes() != 2 || query_.fp16 || rows * in * out <= 16 * 16 * 16) return {};
  // Each product's scratch on this CPU's kernels: the forward's (x W^T, the bias added as a sum on a 2-D input),
  // the input gradient's (dy W) and the weight gradient's (dy^T x).
  const auto kernels = cpu_bf16_matmul_kernels();
  const int64_t threads = this->threads();
  LinearProducts products;
  if ((kernels == CpuBf16Matmul::onednn_avx512_bf16 || kernels == CpuBf16Matmul::onednn_amx) &&
      onednn::bookings_available()) {
    // oneDNN's own bookings for the three products as LibTorch hands them over (predict/onednn_bookings.hpp):
    // equal to LibTorch's allocations on an AMD EPYC with avx512_bf16 for 720 of 720 products (the [cpu-kinds]
    // test of the bookings; research/kernel-scratch/results/bf16-matmul-scratch-avx512.md, where the written-out fit
    // below is -67.8% .. +253.1% off them for most weight gradients). On AMX checked against the only AMX measurements
    // this project has (an Intel Xeon: the pure-bf16 mlp's peak +2.0%,
    // research/kernel-scratch/results/bf16-amx-prediction-with-onednn-bookings.md), not on an AMX CPU since.
    products = onednn::bf16_linear_bookings(rows, in, out, sum, threads).value_or(LinearProducts{});
  } else if (kernels == CpuBf16Matmul::onednn_avx512_bf16) {
    // The avx512_bf16 brgemm kernels' packed blocks and accumulators, written out (predict/onednn_scratch.cpp).
    products = onednn::brgemm_bf16_linear_scratch(rows, in, out, threads);
  } else if (kernels == CpuBf16Matmul::onednn_avx512_emulated) {
    // AVX-512 alone (bf16 emulated): an fp32 accumulator of each product's output (emulated_accumulator); the
    // forward of one row on such a CPU runs in ATen's gemv instead, without it (an Intel Xeon with AVX-512 alone).
    products = {rows > 1 || !bf16_one_row_forward_on_aten() ? emulated_accumulator(rows, out, threads) : 0,
                emulated_accumulator(rows, in, threads), emulated_accumulator(out, in, threads)};
  }
  return products;
}

// Which kernel LibTorch's CPU convolution runs for these shapes and dtype: LibTorch's own choice
// (at::native::select_conv_backend), which depends on the CPU (oneDNN for bf16/fp16 only where the CPU has
// AVX-512; im2col's "slow" kernel otherwise), the threads and the shapes. Asked at the trace's threads with
// tensors of the real shapes up to a batch of 16 (the choice looks at the batch only up to 16) that own no memory.
ForwardTrace::CpuConv ForwardTrace::cpu_conv(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw,
                                             int64_t element_bytes) {
  const std::array<int64_t, 6> key{cin, cout, k, stride, in_hw, element_bytes};
  for (const auto& [known, kernel] : conv_kernels_)
    if (known == key) return kernel;
  const auto dtype = element_bytes == 4 ? at::kFloat : (query_.fp16 ? at::kHalf : at::kBFloat16);
  const onednn::ThisThreadsCount scoped(threads());
  const auto backend = onednn::conv_backend(std::min<int64_t>(batch(), 16), cin, cout, k, stride, in_hw, dtype);
  const CpuConv kernel = backend == at::native::ConvBackend::Slow2d   ? CpuConv::im2col
                         : backend != at::native::ConvBackend::Mkldnn ? CpuConv::other
                         : tvie::cpu_bf16_on_onednn()                 ? CpuConv::onednn_avx512
                                                                      : CpuConv::onednn_avx2;
  conv_kernels_.emplace_back(key, kernel);
  return kernel;
}

// The CPU kernels' scratch, freed within the op (CUDA's kernels hold none the ledger sees). For oneDNN's kernels,
// first oneDNN's own bookings, asked of the oneDNN inside LibTorch (predict/onednn_bookings.hpp: the same bytes as
// the rules below wherever those were checked, and AMX's kernels too); where it cannot be asked, the rules
// (measured with LibTorch 2.14's profiler over channels, kernels, strides and batches, on an Intel Xeon with AMX
// and AMD EPYCs with AVX2 and with AVX-512):
//  - im2col ("slow", bf16/fp16 without AVX-512): forward and backward each unfold the input into columns
//    [B, cin k k, out_hw^2] in its dtype (none for a 1x1 kernel of stride 1: the input is its own columns);
//  - oneDNN with AVX-512 in bf16 without AMX (emulated without avx512_bf16): blocked layouts, transposes and
//    per-thread weight gradients, from oneDNN's own scratchpad bookings (predict/onednn_scratch.cpp; checked on
//    the AMD EPYC);
//    with AMX and no bookings: backward copies the saved input (a contiguous clone; measured on the Xeon);
//  - oneDNN with AVX-512 in fp32: blocked layouts padded to 16 channels in forward and backward, the weight
//    gradient's per-thread copies and buffers from oneDNN's bookings (predict/onednn_scratch.cpp;
//    checked on an Intel Xeon and an AMD EPYC);
//  - oneDNN with AVX2 (fp32): forward reorders the input and the weights into oneDNN's blocked layouts, writes
//    its output in blocks and reorders it (the input's and the weights' copies count too: without them resnet
//    tiny's inference working set at batches 2 to 4 is 12-16% under); backward in
//    blocks of 8 channels with the weight-gradient kernels' reducers, strided backward data channels-last with its
//    scratchpad (predict/onednn_scratch.cpp, from oneDNN's bookings).
ForwardTrace::KernelScratch ForwardTrace::conv_scratch(int64_t cin, int64_t cout, int64_t k, int64_t stride,
                                                       int64_t in_hw, int64_t out_hw, bool input_grad, const Sym& xin) {
  if (query_.cuda) return {};
  const int64_t columns = k != 1 || stride != 1 ? batch() * cin * k * k * out_hw * out_hw : 0;
  const onednn::ConvShape shape{batch(), cin, cout, k, stride, in_hw, out_hw, input_grad, threads()};
  const CpuConv kernel = cpu_conv(cin, cout, k, stride, in_hw, xin.element_bytes);
  switch (kernel) {
    case CpuConv::im2col: {
      return {columns * xin.element_bytes, columns * xin.element_bytes};
    }
    case CpuConv::onednn_avx512:
    case CpuConv::onednn_avx2: {
      // oneDNN's own bookings where LibTorch's oneDNN can be asked (any CPU, AMX's kernels included; fp16 not
      // checked), else the configurations written out for AVX-512 without AMX and for AVX2.
      std::optional<onednn::ConvScratch> s;
      if (!query_.fp16) s = onednn::conv_scratch_from_bookings(shape, xin.element_bytes);
      const bool avx2 = kernel == CpuConv::onednn_avx2;
      if (!s && avx2) s = onednn::avx2_fp32_conv(shape);
      if (!s && !avx2 && xin.element_bytes == 4) s = onednn::avx512_fp32_conv(shape);
      if (!s && !avx2 && !query_.fp16 && cpu_bf16_conv_scratch_written_out()) s = onednn::avx512_bf16_conv(shape);
      if (s) return {s->forward_bytes, s->backward_bytes};
      return {0, xin.bytes()};  // AMX or fp16 without bookings: backward copies the saved input (measured)
    }
    case CpuConv::other:
      break;
  }
  return {};
}

// LibTorch's CPU flash kernel (FlashAttentionKernel.cpp) works in blocks of qs query rows and kvs key positions
// (qs 32, 64 from 192 positions, 256 from 768; kvs 512; neither more than the positions), each thread in its
// own buffers (without them gpt, bert and llama tiny's bf16 inference at batch 1 and 4 threads is 1.4 KiB under
// on an Intel Xeon's own kernels, 13.5 KiB on ATen's AVX2 ones; hidden at 2 threads):
//  - forward, beside its output and log-sum-exp: per thread the fp32 scores, row maxima and sums and output
//    rows, and for 2-byte inputs the scores in that dtype;
//  - backward, beside the three input gradients: per thread the fp32 scores and their gradient (both again in
//    the 2-byte dtype for such inputs) and qs floats, and on oneDNN the scratch of each product into a 2-byte
//    gradient (kvs x d or qs x d) with a 4-byte scalar: an upper bound, every thread in its largest product at
//    once (the threads' products overlap as they happen to; at 2 threads and 800 positions the two largest
//    were alive together).
// Measured with tvie's counting allocator and LibTorch's profiler (which sees the calling thread's allocations
// only) on an Intel Xeon (AVX-512 without avx512_bf16), 1, 2 and 4 threads, 32 to 800 positions, head sizes 16
// and 64, fp32 and bf16; the brgemm products on an AMD EPYC with avx512_bf16.
ForwardTrace::KernelScratch ForwardTrace::attention_scratch(int64_t S, int64_t K, int64_t d, bool flash) const {
  if (query_.cuda) return {};
  const int64_t T = threads();
  const int64_t qs = std::min<int64_t>(S >= 768 ? 256 : S >= 192 ? 64 : 32, S), kvs = std::min<int64_t>(512, K);
  // Forward: each thread's fp32 rows and, for 2-byte inputs, its scores in that dtype, alive together.
  const int64_t forward = T * (qs * kvs + 2 * qs + qs * d) * 4 + (flash ? T * qs * kvs * 2 : 0);
  int64_t scratch = T * 2 * qs * kvs * 4 + (flash ? T * 2 * qs * kvs * 2 : 0) + T * qs * 4;
  if (flash && qs * kvs * d > 16 * 16 * 16) {
    // The three products into 2-byte gradients (LibTorch's mkldnn_bf16_gemm), each thread's own: dV and dK,
    // kvs x d over qs rows (the scores transposed, "ba"), and dQ, qs x d over kvs, each adding into the gradient
    // (a sum). oneDNN's emulating gemm books for the one thread it sees inside the loop; its brgemm kernels
    // (avx512_bf16, AMX) for all the process's threads, in every thread (tvie's counting allocator on an AMD EPYC
    // with avx512_bf16: gpt tiny at 800 positions, 2 threads, each thread's dV product 362,240 bytes, the booking
    // at 2 threads, 181,376 at 1).
    const auto kernels = cpu_bf16_matmul_kernels();
    int64_t product = 0;
    if (kernels == CpuBf16Matmul::onednn_avx512_emulated) {
      product = std::max(emulated_accumulator(kvs, d, 1), emulated_accumulator(qs, d, 1));
    } else if ((kernels == CpuBf16Matmul::onednn_avx512_bf16 || kernels == CpuBf16Matmul::onednn_amx) &&
               onednn::bookings_available()) {
      const auto booked = [&](int64_t m, int64_t kk, bool a_transposed) {
        const auto b = onednn::bf16_matmul_booking(m, kk, d, a_transposed, false, true, T);
        return b ? b->scratchpad : int64_t{0};
      };
      product = std::max(booked(kvs, qs, true), booked(qs, kvs, false));
    }
    if (product > 0) scratch += T * (product + 4);
  }
  return {forward, scratch};
}

std::optional<int64_t> cpu_int8_packed_linear_bytes(int64_t in, int64_t out) {
  const auto b = fbgemm::blocking();  // none: the packs are not predicted
  if (!b) return std::nullopt;
  return fbgemm::packed_linear_bytes(in, out, *b);
}

std::string cpu_kernel_scratch_source() {
  std::string how;
  if (onednn::bookings_available(&how))
    return cat("oneDNN's kernels: their own bookings, asked of the oneDNN inside LibTorch (", how,
               "); ATen's: the trace's rules");
  return cat(
      "oneDNN's kernels: the configurations written out for AVX2 and AVX-512 without AMX (oneDNN's own bookings "
      "cannot be asked: ",
      how, "); ATen's: the trace's rules");
}

std::string cpu_int8_packs_source() {
  std::string how;
  const auto b = fbgemm::blocking(&how);
  if (!b) return cat("fbgemm's packs not predicted: ", how);
  return cat("fbgemm's packs (in features padded to ", b->k_block, ", out features to ", b->n_block, ": ", how,
             ") and 12 bytes per output (column offsets, scales, zero points); fbgemm's objects and glibc's chunk "
             "headers not counted");
}

}  // namespace tvie::trace

namespace tvie {

bool cpu_bf16_matmul_scratch_modelled() {
  const auto k = cpu_bf16_matmul_kernels();
  return k == CpuBf16Matmul::onednn_avx512_bf16 || k == CpuBf16Matmul::onednn_avx512_emulated ||
         (k == CpuBf16Matmul::onednn_amx && trace::onednn::bookings_available());
}

bool cpu_bf16_conv_scratch_modelled() {
  return trace::cpu_bf16_conv_scratch_written_out() || (cpu_bf16_on_onednn() && trace::onednn::bookings_available());
}

}  // namespace tvie
