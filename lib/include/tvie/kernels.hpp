// The kernels LibTorch runs a quantised Linear on, as facts both the models and the memory prediction need: the
// kinds of weights tvie::nn::Linear can hold (tvie/layers.hpp), which shapes each kind's kernel takes, and whether
// this build and device run it (docs/metrics.md, "Inference precisions").
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <tvie/ledger.hpp>

namespace tvie::nn {

enum class LinearWeights {
  dense,             // weight and bias in the module's floating dtype
  int8_dynamic,      // CPU: int8 per-channel weights packed by quantized::linear_prepack (fbgemm/x86); the
                     // activations are quantised per call (quantized::linear_dynamic); output fp32
  int8_cuda,         // CUDA: int8 per-channel weights; activations quantised per row; at::_int_mm (int32
                     // accumulation) then rescaled; output in the copy's dtype (bf16, or fp16 before sm_80)
  fp8_e4m3,          // CUDA sm_89+: e4m3 weights with one per-tensor scale; activations cast to e4m3 per call
                     // (per-tensor scale); at::_scaled_mm; output bf16
  int8_weight_only,  // CPU and CUDA: int8 per-channel weights, their scales in bf16; the activations stay bf16 and
                     // the kernel (at::_weight_int8pack_mm) widens the weights as it reads them; output bf16
};

std::string to_string(LinearWeights kind);

// Whether `kind`'s kernel takes a Linear of these features (CUDA int8: multiples of 8; fp8: of 16; weight-only int8:
// in_features a multiple of 16, as the CPU kernel's vector loads need; the CPU's dynamic int8 and dense: any).
bool linear_shape_supported(LinearWeights kind, int64_t in_features, int64_t out_features);

// Whether this build and device can run `kind` (int8_dynamic: a CPU with the fbgemm/x86 quantized
// engine; int8_cuda: CUDA; fp8_e4m3: CUDA compute capability >= 8.9). When not, `why` says why.
bool linear_weights_supported(LinearWeights kind, const c10::Device& device, std::string* why = nullptr);

// Whether LibTorch has a kernel of `kind`'s operator on `device`: what tvie::nn::Linear::convert_weights takes. Wider
// than linear_weights_supported, which says what an inference copy on `device` uses: recent LibTorch runs
// at::_int_mm and at::_scaled_mm on the CPU too, so CUDA's W8A8 and fp8 arithmetic runs there as written (the tests
// check it against its reference), while a CPU copy's int8 stays fbgemm's dynamic quantisation and fp8 stays CUDA's.
bool linear_kernel_available(LinearWeights kind, const c10::Device& device, std::string* why = nullptr);

// The Linear weights an inference copy in `dtype` on `device` holds (fp32, fp16, bf16: dense; int8: the CPU's dynamic
// quantisation or CUDA's _int_mm; int8-weight-only; fp8).
LinearWeights linear_weights_for(InferenceDtype dtype, const c10::Device& device);

// The floating dtype of an inference copy in `dtype` on `device`: its layers other than quantised Linear ones, its KV
// cache and its activations between layers. fp32/fp16/bf16 as named; int8 keeps fp32 around its int8 Linear layers
// on the CPU (fbgemm's dynamic quantisation takes and returns fp32) and bf16 on CUDA (fp16 on a GPU without bf16
// units, compute capability below 8.0), as serving stacks run W8A8; fp8 and int8-weight-only keep bf16 around theirs.
c10::ScalarType inference_floating_dtype(InferenceDtype dtype, const c10::Device& device);

// The quantisation scheme of an inference copy in `dtype` on `device`, in one line as a report prints it beside
// the figure: what is quantised, with which scales, which kernel runs, what stays in which dtype.
std::string inference_scheme(InferenceDtype dtype, const c10::Device& device);

}  // namespace tvie::nn
