// What this CPU's bf16 kernels are, as the memory prediction needs to know: which kernels LibTorch runs bf16
// convolutions and matmuls on, and whether the prediction models their scratch (docs/prediction.md, "Kernel
// scratch on the CPU"). Asked of the CPU's features under oneDNN's ISA limit (HostInfo::cpu_features_usable).
#pragma once

#include <cstdint>

#include <ATen/native/ConvUtils.h>

namespace tvie::trace::onednn {

// Which kernel LibTorch's CPU convolution runs for these shapes and dtype at the calling thread's intra-op threads
// (at::native::select_conv_backend), asked with tensors of the real shapes that own no memory (their data pointer
// is a placeholder the choice never reads): nothing is allocated.
at::native::ConvBackend conv_backend(int64_t batch, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw,
                                     at::ScalarType dtype);

}  // namespace tvie::trace::onednn

namespace tvie {

// Whether LibTorch runs bf16 convolutions and matmuls on oneDNN on this CPU: it does where the CPU has AVX-512
// (oneDNN's kernels, and their scratch, are then AVX-512 ones for fp32 too); elsewhere bf16 runs on ATen's own
// kernels (im2col convolutions), which hold other scratch. The predicted and measured bytes of bf16 runs differ
// between the two kinds of CPU.
bool cpu_bf16_on_onednn();

// The kernels that run this CPU's bf16 matmuls, as the ISA oneDNN may use decides (HostInfo::cpu_features_usable:
// the CPU's features under ONEDNN_MAX_CPU_ISA): ATen's own (no AVX-512), oneDNN's AMX kernels (amx_bf16), its
// AVX-512 brgemm kernels (avx512_bf16), or with AVX-512 alone a gemm that emulates bf16 with an fp32 accumulator.
enum class CpuBf16Matmul { aten, onednn_amx, onednn_avx512_bf16, onednn_avx512_emulated };
CpuBf16Matmul cpu_bf16_matmul_kernels();

// Whether the prediction models the scratchpad of this CPU's bf16 matmul kernels: oneDNN's AVX-512 brgemm kernels
// (avx512_bf16 and no AMX, a fit) and its emulating gemm (AVX-512 without avx512_bf16: the fp32 accumulator),
// measured; not AMX's, whose scratch is left out; ATen's own kernels (no AVX-512) hold none.
bool cpu_bf16_matmul_scratch_modelled();

// Whether the prediction models the scratch of this CPU's bf16 convolutions: oneDNN's avx512_core_bf16 kernels on
// the same CPUs (AVX-512 without AMX; they emulate bf16 without avx512_bf16), from oneDNN's scratchpad bookings
// checked against the profiler; with AMX only a copy of the input is counted, and ATen's im2col kernels are
// modelled.
bool cpu_bf16_conv_scratch_modelled();

}  // namespace tvie
