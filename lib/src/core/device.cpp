#include <tvie/device.hpp>

#include <torch/cuda.h>

#include <cctype>

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tvie {

bool cuda_available() { return torch::cuda::is_available(); }

int cuda_device_count() { return cuda_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

c10::Device resolve_device(const std::string& spec, const std::string& field) {
  const std::string accepted = "auto, cpu, cuda, cuda:N";
  if (spec == "auto") return cuda_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec.rfind("cuda", 0) == 0) {
    int index = 0;
    if (spec.size() > 4) {
      const std::string digits = spec.substr(5);
      bool ok = spec[4] == ':' && !digits.empty() && digits.size() < 4;
      for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
      if (!ok) throw InvalidArgument(field, spec, accepted);
      index = std::stoi(digits);
    }
    if (!cuda_available())
      throw DeviceUnavailable(field, spec, "auto, cpu (no CUDA device is available on this machine)");
    if (index >= cuda_device_count())
      throw DeviceUnavailable(field, spec, cat("cuda:0 .. cuda:", cuda_device_count() - 1));
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw InvalidArgument(field, spec, accepted);
}

std::string describe_device(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (device.is_cuda()) {
    const auto* props = at::cuda::getDeviceProperties(device.index());
    return cat(device.str(), " (", props->name, ")");
  }
#endif
  return device.str();
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace tvie
