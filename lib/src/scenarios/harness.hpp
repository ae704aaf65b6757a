// Pieces shared by the scenarios (train.cpp, infer.cpp).
#pragma once

#include <cstdint>
#include <utility>

#include <torch/nn/module.h>

#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/memory.hpp>
#include <tvie/settings.hpp>

namespace tvie::detail {

// A building block's precondition. Settings are validated once, at the boundary (the runners of
// tvie/run.hpp, or validate() by a caller who builds blocks itself); a block only asserts what it relies on.
inline void require(bool holds, const char* what) {
  if (!holds) throw Error(std::string("precondition failed: ") + what);
}

struct AddedBytes {
  int64_t baseline = 0;  // allocated bytes before
  int64_t added = 0;     // allocated bytes after minus before
};

// Runs `work` and returns how many allocated bytes it left behind on `device` (zeros without a probe).
template <typename Work>
AddedBytes measure_added_bytes(MemoryProbe* probe, const c10::Device& device, Work&& work) {
  if (!probe) {
    std::forward<Work>(work)();
    return {};
  }
  synchronize(device);
  AddedBytes r;
  r.baseline = probe->allocated_bytes();
  std::forward<Work>(work)();
  synchronize(device);
  r.added = probe->allocated_bytes() - r.baseline;
  return r;
}

// Moves every tensor of the module to `device` and converts the floating-point ones to `dtype`.
// (Module::to(device, dtype) would also turn integer buffers such as BatchNorm's num_batches_tracked
// into floats, which tvie must not do.)
// After an out-of-memory the CUDA caching allocator keeps the segments it got: hand them back so that the next
// run (sweep row, max-batch probe) starts from the same free memory as the first. Nothing on the CPU.
void release_cached_memory(const c10::Device& device);

// CUDA: the device's free memory now (cudaMemGetInfo), after CUDA is initialised; -1 on other devices.
int64_t device_free_bytes(const c10::Device& device);

// What a run can still take on `device`, and where that figure comes from: CUDA's free memory, or the host's
// MemAvailable (/proc/meminfo) lowered to what a cgroup's memory.max leaves. bytes < 0: not known.
struct FreeMemory {
  int64_t bytes = -1;
  std::string source;
};
FreeMemory free_memory(const c10::Device& device);
// PredictedOutOfMemory when `predicted_peak` (> 0: predicted) exceeds the free memory: "`what` does not fit on
// DEVICE: predicted peak ... > ... free (source); `remedy`". Nothing when either is unknown.
void refuse_beyond_free_memory(int64_t predicted_peak, const c10::Device& device, const std::string& what,
                               const std::string& remedy =
                                   "lower --batch (or --seq, --preset), or --force runs it "
                                   "anyway");
// LibTorch's CPU allocator reports a failed allocation as a plain c10::Error ("can't allocate memory"): whether
// `e` is one.
bool is_cpu_allocation_failure(const std::exception& e);

void convert_floating(torch::nn::Module& module, const c10::Device& device, c10::ScalarType dtype);

struct InferenceCopy {
  int64_t converted_linears = 0;  // tvie::nn::Linear layers given int8/fp8 weights
  int64_t dense_linears = 0;      // tvie::nn::Linear layers kept dense: the kernel cannot take their shape
  // Bytes the conversion left allocated outside LibTorch's allocator (CPU int8: fbgemm's packed weights),
  // measured as glibc's heap growth across each layer's packing (tvie::nn::Linear::packed_bytes()); 0 when not
  // measured.
  int64_t outside_allocator_bytes = 0;
  // False when there were such bytes to measure (CPU int8) but glibc's heap statistics cannot be read
  // (heap_statistics_available()): outside_allocator_bytes is then 0 for want of a measurement.
  bool outside_allocator_measured = true;
};

// Turns a freshly built fp32 module into the inference copy for `dtype` on `device`: floating tensors to
// the base dtype, tvie::nn::Linear weights to int8/fp8, eval(). Throws InvalidArgument("infer.dtype") when
// int8/fp8 is asked of a model without tvie::nn::Linear layers.
InferenceCopy make_inference_copy(torch::nn::Module& module, const c10::Device& device, InferenceDtype dtype);

}  // namespace tvie::detail
