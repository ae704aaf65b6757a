#include "scenarios/harness.hpp"

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/layers.hpp>
#include <tvie/log.hpp>

#include "core/text.hpp"
#include "measure/glibc_heap.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#if TVIE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace tvie::detail {

void release_cached_memory(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

int64_t device_free_bytes(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (!device.is_cuda()) return -1;
  compat::init_cuda();
  c10::cuda::CUDAGuard guard(device.index());
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return -1;
  return static_cast<int64_t>(free_bytes);
#else
  (void)device;
  return -1;
#endif
}

namespace {
// One number from a file of the kernel's ("max" and a missing file: -1).
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  return static_cast<int64_t>(std::stoull(text));
}
}  // namespace

FreeMemory free_memory(const c10::Device& device) {
  FreeMemory f;
  if (device.is_cuda()) {
    f.bytes = device_free_bytes(device);
    f.source = "cudaMemGetInfo";
    return f;
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") {
      f.bytes = kib * 1024;
      f.source = "the host's MemAvailable";
    }
  }
  // cgroup v2: a container's limit less what it already uses, where that is lower.
  const int64_t max = read_number("/sys/fs/cgroup/memory.max");
  const int64_t current = read_number("/sys/fs/cgroup/memory.current");
  if (max > 0 && current >= 0 && (f.bytes < 0 || max - current < f.bytes)) {
    f.bytes = std::max<int64_t>(0, max - current);
    f.source = "the cgroup's memory.max less memory.current";
  }
  return f;
}

void refuse_beyond_free_memory(int64_t predicted_peak, const c10::Device& device, const std::string& what,
                               const std::string& remedy) {
  if (predicted_peak <= 0) return;
  const FreeMemory free = free_memory(device);
  if (free.bytes < 0 || predicted_peak <= free.bytes) return;
  throw PredictedOutOfMemory(cat(what, " does not fit on ", device.str(), ": predicted peak ",
                                 bytes_text(predicted_peak), " > ", bytes_text(free.bytes), " free (", free.source,
                                 "); ", remedy));
}

bool is_cpu_allocation_failure(const std::exception& e) {
  return dynamic_cast<const c10::Error*>(&e) != nullptr &&
         std::string(e.what()).find("can't allocate memory") != std::string::npos;
}

void convert_floating(torch::nn::Module& module, const c10::Device& device, c10::ScalarType dtype) {
  module.to(device);
  torch::NoGradGuard no_grad;
  for (const auto& tensors : {module.parameters(), module.buffers()})
    for (const auto& t : tensors)
      if (t.is_floating_point() && t.scalar_type() != dtype) t.set_data(t.to(dtype));
}

InferenceCopy make_inference_copy(torch::nn::Module& module, const c10::Device& device, InferenceDtype dtype) {
  InferenceCopy copy;
  // Not differentiable: without this guard, the quantisation's scale computations would record autograd
  // graphs that keep the dense fp32 weights alive after the conversion released them.
  torch::NoGradGuard no_grad;
  convert_floating(module, device, nn::inference_floating_dtype(dtype, device));
  module.eval();  // BatchNorm uses its running statistics and stops updating them
  const auto kind = nn::linear_weights_for(dtype, device);
  if (kind == nn::LinearWeights::dense) return copy;
  // The process's first conversion also allocates what LibTorch and fbgemm make once (the operators' lookups,
  // fbgemm's CPU detection: 5 KiB of glibc's heap on an AMD EPYC): a 1 x 1 layer converted first, so that each
  // layer's pack measured is its own (tvie::nn::Linear::packed_bytes()).
  if (kind == nn::LinearWeights::int8_dynamic) {
    static const bool warmed = [&] {
      nn::Linear once(1, 1);
      once->convert_weights(kind);
      return true;
    }();
    (void)warmed;
  }
  int64_t packed = 0;
  copy.converted_linears = nn::convert_linear_weights(module, kind, &copy.dense_linears, &packed);
  if (copy.converted_linears + copy.dense_linears == 0)
    throw InvalidArgument("infer.dtype", to_string(dtype),
                          "fp32, bf16 (this model has no tvie::nn::Linear layers to convert; build its Linear layers "
                          "from tvie::nn::Linear to run it in int8 or fp8)");
  copy.outside_allocator_measured = packed >= 0;
  copy.outside_allocator_bytes = std::max<int64_t>(0, packed);
  if (copy.dense_linears > 0)
    log::info(cat("inference copy: ", copy.dense_linears, " of ", copy.converted_linears + copy.dense_linears,
                  " Linear layers kept dense (", nn::to_string(kind), " cannot take their shapes)"));
  log::debug(cat("inference copy: ", copy.converted_linears, " Linear layers converted to ", nn::to_string(kind), "; ",
                 copy.outside_allocator_bytes, " bytes outside torch's allocator"));
  return copy;
}

}  // namespace tvie::detail

namespace tvie {

bool heap_statistics_available() { return detail::heap_in_use_bytes() >= 0; }

}  // namespace tvie
