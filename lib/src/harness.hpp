// Pieces shared by the scenarios (train.cpp, infer.cpp).
#pragma once

#include <cstdint>
#include <utility>

#include <torch/nn/module.h>

#include <tvie/device.hpp>
#include <tvie/memory.hpp>

namespace tvie::detail {

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
void convert_floating(torch::nn::Module& module, const c10::Device& device, c10::ScalarType dtype);

}  // namespace tvie::detail
