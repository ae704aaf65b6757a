// Pieces shared by the scenarios (train.cpp, infer.cpp).
#pragma once

#include <cstdint>
#include <utility>

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

}  // namespace tvie::detail
