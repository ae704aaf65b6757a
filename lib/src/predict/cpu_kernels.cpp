// Which kernels run this CPU's bf16 convolutions and matmuls (predict/cpu_kernels.hpp): LibTorch's own choice and the
// ISA oneDNN may use, known whether or not the CPU kernel-scratch plug-in predicts their scratch.
#include "predict/cpu_kernels.hpp"

#include <algorithm>
#include <array>

#include <ATen/ATen.h>
#include <ATen/native/ConvUtils.h>

#include <tvie/device.hpp>

#include "predict/onednn_scratch.hpp"

namespace tvie::trace::onednn {

at::native::ConvBackend conv_backend(int64_t batch, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw,
                                     at::ScalarType dtype) {
  // Tensors over a placeholder: select_conv_backend reads shapes, strides, dtype and device, never the data.
  static char placeholder = 0;
  const auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  const at::Tensor x = at::from_blob(
                       &placeholder, {batch, cin, in_hw, in_hw}, [](void*) {}, options),
                   w = at::from_blob(
                       &placeholder, {cout, cin, k, k}, [](void*) {}, options);
  const std::array<int64_t, 2> s{stride, stride}, pad{k / 2, k / 2}, dilation{1, 1}, output_padding{0, 0};
  return at::native::select_conv_backend(x, w, std::nullopt, c10::fromIntArrayRefSlow(s), c10::fromIntArrayRefSlow(pad),
                                         c10::fromIntArrayRefSlow(dilation), false,
                                         c10::fromIntArrayRefSlow(output_padding), c10::SymInt(1), std::nullopt);
}

}  // namespace tvie::trace::onednn

namespace tvie {

// LibTorch's own test (mkldnn_bf16_device_check, not in its headers) answers through the convolution's choice.
bool cpu_bf16_on_onednn() {
  static const bool yes =
      trace::onednn::conv_backend(2, 8, 8, 3, 1, 8, at::kBFloat16) == at::native::ConvBackend::Mkldnn;
  return yes;
}

// Which of oneDNN's kernels run a bf16 matmul follows the ISA it may use (the CPU's, under ONEDNN_MAX_CPU_ISA):
// AMX's with amx_bf16, the AVX-512 brgemm kernels with avx512_bf16, and with AVX-512 alone a gemm that converts
// to fp32 and accumulates in an fp32 buffer of the output's shape.
CpuBf16Matmul cpu_bf16_matmul_kernels() {
  static const CpuBf16Matmul kernels = [] {
    if (!cpu_bf16_on_onednn()) return CpuBf16Matmul::aten;
    const auto features = describe_host().cpu_features_usable;
    const auto has = [&](const char* f) { return std::find(features.begin(), features.end(), f) != features.end(); };
    if (has("amx_bf16")) return CpuBf16Matmul::onednn_amx;
    return has("avx512_bf16") ? CpuBf16Matmul::onednn_avx512_bf16 : CpuBf16Matmul::onednn_avx512_emulated;
  }();
  return kernels;
}

}  // namespace tvie
