// Which quantised Linear kernels this build and device run, and which shapes they take (tvie/kernels.hpp).
#include <tvie/kernels.hpp>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "core/enum_names.hpp"
#include <tvie/config.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tvie::nn {

namespace {
constexpr detail::EnumTable<LinearWeights, 5> kLinearWeights{
    {{LinearWeights::dense, "dense"},
     {LinearWeights::int8_dynamic, "int8 dynamic (quantized::linear_dynamic)"},
     {LinearWeights::int8_cuda, "int8 (at::_int_mm)"},
     {LinearWeights::fp8_e4m3, "fp8 e4m3 (at::_scaled_mm)"},
     {LinearWeights::int8_weight_only, "int8 weight-only (at::_weight_int8pack_mm)"}}};

// Whether this LibTorch registers a kernel of `op` for `key` (an operator a LibTorch version may lack).
bool has_kernel(const char* op, c10::DispatchKey key) {
  const auto handle = c10::Dispatcher::singleton().findOp({op, ""});
  return handle.has_value() && handle->hasKernelForDispatchKey(key);
}
}  // namespace

std::string to_string(LinearWeights kind) { return detail::name_of(kLinearWeights, kind); }

bool linear_weights_supported(LinearWeights kind, const c10::Device& device, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  switch (kind) {
    case LinearWeights::dense:
      return true;
    case LinearWeights::int8_dynamic: {
      if (!device.is_cpu()) return refuse("int8 dynamic quantisation runs on the CPU");
      for (auto engine : at::globalContext().supportedQEngines())
        if (engine == at::QEngine::X86 || engine == at::QEngine::FBGEMM) return true;
      return refuse("this LibTorch has neither the x86 nor the fbgemm quantized engine");
    }
    case LinearWeights::int8_cuda:
      if (!device.is_cuda()) return refuse("int8 through at::_int_mm needs a CUDA device");
      return true;
    case LinearWeights::int8_weight_only:
      if (!device.is_cpu() && !device.is_cuda()) return refuse("int8 weight-only runs on the CPU and CUDA");
      if (!has_kernel("aten::_weight_int8pack_mm", device.is_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA))
        return refuse(cat("this LibTorch has no ", device.is_cpu() ? "CPU" : "CUDA", " kernel of _weight_int8pack_mm"));
      return true;
    case LinearWeights::fp8_e4m3: {
      if (!device.is_cuda()) return refuse("fp8 needs a CUDA device of compute capability 8.9 or newer");
#if TVIE_WITH_CUDA
      const auto* p = at::cuda::getDeviceProperties(device.index());
      if (p->major * 10 + p->minor < 89)
        return refuse(cat("fp8 needs compute capability 8.9 or newer; ", p->name, " has ", p->major, ".", p->minor));
      return true;
#else
      return refuse("this build of tvie has no CUDA");
#endif
    }
  }
  return refuse("unknown kind");
}

bool linear_kernel_available(LinearWeights kind, const c10::Device& device, std::string* why) {
  const char* op = kind == LinearWeights::int8_cuda  ? "aten::_int_mm"
                   : kind == LinearWeights::fp8_e4m3 ? "aten::_scaled_mm"
                                                     : nullptr;
  if (op && device.is_cpu()) {
    if (has_kernel(op, c10::DispatchKey::CPU)) return true;
    if (why) *why = cat("this LibTorch has no CPU kernel of ", op + 6);  // "_int_mm"
    return false;
  }
  return linear_weights_supported(kind, device, why);
}

bool linear_shape_supported(LinearWeights kind, int64_t in_features, int64_t out_features) {
  if (kind == LinearWeights::int8_cuda) return in_features % 8 == 0 && out_features % 8 == 0;
  if (kind == LinearWeights::fp8_e4m3) return in_features % 16 == 0 && out_features % 16 == 0;
  // The CPU kernel loads 16 bf16 activations and 16 int8 weights at a time, aligned: in_features must be a
  // multiple of 16 (LibTorch does not check it; other widths read past the row or crash).
  if (kind == LinearWeights::int8_weight_only) return in_features % 16 == 0 && out_features >= 1;
  return true;
}

LinearWeights linear_weights_for(InferenceDtype dtype, const c10::Device& device) {
  switch (dtype) {
    case InferenceDtype::int8:
      return device.is_cuda() ? LinearWeights::int8_cuda : LinearWeights::int8_dynamic;
    case InferenceDtype::fp8:
      return LinearWeights::fp8_e4m3;
    case InferenceDtype::int8_weight_only:
      return LinearWeights::int8_weight_only;
    case InferenceDtype::fp32:
    case InferenceDtype::fp16:
    case InferenceDtype::bf16:
      return LinearWeights::dense;
  }
  return LinearWeights::dense;
}

namespace {
// Whether a CUDA device has bf16 units (compute capability 8.0+). Without a CUDA device to ask (a prediction for
// one, made on the CPU), it is taken to have them: the bytes are the same as fp16's.
bool cuda_has_bf16(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (at::globalContext().hasCUDA() && at::cuda::getNumGPUs() > 0) {
    const auto* p = at::cuda::getDeviceProperties(device.has_index() ? device.index() : at::cuda::current_device());
    return p->major >= 8;
  }
#endif
  (void)device;
  return true;
}
}  // namespace

c10::ScalarType inference_floating_dtype(InferenceDtype dtype, const c10::Device& device) {
  switch (dtype) {
    case InferenceDtype::fp32:
      return c10::kFloat;
    case InferenceDtype::int8:
      if (!device.is_cuda()) return c10::kFloat;
      return cuda_has_bf16(device) ? c10::kBFloat16 : c10::kHalf;
    case InferenceDtype::fp16:
      return c10::kHalf;
    case InferenceDtype::bf16:
    case InferenceDtype::fp8:
    case InferenceDtype::int8_weight_only:
      return c10::kBFloat16;
  }
  return c10::kFloat;
}

std::string inference_scheme(InferenceDtype dtype, const c10::Device& device) {
  switch (dtype) {
    case InferenceDtype::fp32:
      return "fp32 weights and activations";
    case InferenceDtype::fp16:
      return "fp16 weights and activations (the whole copy converted)";
    case InferenceDtype::bf16:
      return "bf16 weights and activations (the whole copy converted)";
    case InferenceDtype::int8:
      return device.is_cuda()
                 ? "W8A8: int8 Linear weights, one scale per output channel; activations quantised per row at each "
                   "call; at::_int_mm (int32 sums) rescaled to bf16 (fp16 before compute capability 8.0); the other "
                   "layers and a tied head bf16 (fp16)"
                 : "W8A8 dynamic: int8 Linear weights, one scale per output channel, packed by fbgemm; activations "
                   "quantised per tensor at each call; quantized::linear_dynamic, fp32 out; the other layers and a "
                   "tied head fp32";
    case InferenceDtype::fp8:
      return "W8A8 fp8: e4m3 Linear weights, one scale per tensor; activations cast to e4m3 per tensor at each "
             "call; at::_scaled_mm, bf16 out; the other layers and a tied head bf16";
    case InferenceDtype::int8_weight_only:
      return cat(
          "W8A16: int8 Linear weights, one bf16 scale per output channel; activations bf16; "
          "at::_weight_int8pack_mm",
          device.is_cuda() ? " (LibTorch's CUDA kernel: one thread per output, fp32 sums)" : "",
          "; the other layers and a tied head bf16");
  }
  return "";
}

}  // namespace tvie::nn
