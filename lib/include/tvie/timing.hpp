// Step timing: CUDA events on a CUDA device (time on the GPU's stream), std::chrono::steady_clock on CPU.
//
// A step starts with start(); each mark(phase) closes the interval since the previous start/mark and
// adds it to `phase` (so forward/backward of several micro-batches add up); stop() is mark(0) for
// single-phase use. Nothing is read until collect, so timing adds no synchronisation to the loop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

namespace tvie {

// What a timer recorded: per step, milliseconds per phase, and when each step started (ms after the first step's
// start, on the timer's clock; empty where the timer keeps no start times).
struct TimedSteps {
  std::vector<std::vector<double>> phases_ms;
  std::vector<double> start_ms;
};

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual void start() = 0;
  virtual void mark(int phase) = 0;
  void stop() { mark(0); }
  // Per step, milliseconds per phase 0 .. phase_count - 1; clears what was recorded (waits for the device once).
  virtual std::vector<std::vector<double>> collect_phases_ms(int phase_count) = 0;
  // Per step, the sum over phases.
  std::vector<double> collect_ms();
  // The phases and each step's start (clears what was recorded, as collect_phases_ms). Default: the phases only.
  virtual TimedSteps collect_steps(int phase_count) { return {collect_phases_ms(phase_count), {}}; }
  virtual std::string description() const = 0;  // "cuda events ..." or "steady_clock ..."
};

std::unique_ptr<StepTimer> make_step_timer(const c10::Device& device);

}  // namespace tvie
