// Which quantised Linear kernels this build and device run, and which shapes they take (tvie/kernels.hpp).
#include <tvie/kernels.hpp>

#include <ATen/Context.h>

#include "core/enum_names.hpp"
#include <tvie/config.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tvie::nn {

namespace {
constexpr detail::EnumTable<LinearWeights, 4> kLinearWeights{
    {{LinearWeights::dense, "dense"},
     {LinearWeights::int8_dynamic, "int8 dynamic (quantized::linear_dynamic)"},
     {LinearWeights::int8_cuda, "int8 (at::_int_mm)"},
     {LinearWeights::fp8_e4m3, "fp8 e4m3 (at::_scaled_mm)"}}};
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

bool linear_shape_supported(LinearWeights kind, int64_t in_features, int64_t out_features) {
  if (kind == LinearWeights::int8_cuda) return in_features % 8 == 0 && out_features % 8 == 0;
  if (kind == LinearWeights::fp8_e4m3) return in_features % 16 == 0 && out_features % 16 == 0;
  return true;
}

}  // namespace tvie::nn
