// Step timing: CUDA events on a CUDA device (time on the GPU's stream), std::chrono::steady_clock on CPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

namespace tvie {

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual void start() = 0;  // marks the beginning of a step
  virtual void stop() = 0;   // marks its end
  // Milliseconds of every start/stop pair since the last call (waits for the device once).
  virtual std::vector<double> collect_ms() = 0;
  virtual std::string description() const = 0;  // "cuda events" or "steady_clock"
};

std::unique_ptr<StepTimer> make_step_timer(const c10::Device& device);

}  // namespace tvie
