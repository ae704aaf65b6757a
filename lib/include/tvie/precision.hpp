// Mixed precision for training: an RAII autocast guard and a dynamic loss scaler with GradScaler's
// semantics (LibTorch's C++ frontend has neither).
#pragma once

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <tvie/settings.hpp>

namespace tvie {

// Enables autocast for `device_type` with `dtype` for its lifetime and restores the previous state after.
// It bumps autocast's nesting count and clears the cast cache when the outermost guard ends: cached
// low-precision weight copies would otherwise go stale after optimizer.step(). Autocast state is
// thread-local: wrap the forward and the loss only (backward runs on autograd's threads).
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device_type, c10::ScalarType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_type_;
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
};

// Dynamic loss scaling, as torch.amp.GradScaler: scale(loss).backward(); unscale_(optimizer) (before
// clipping); step(optimizer) skips the update when a gradient is inf/NaN; update() grows or backs off
// the scale. State lives on the gradients' device: scale (fp32), growth tracker (int32), found_inf (fp32).
class LossScaler {
 public:
  LossScaler(const LossScalerOptions& options, const c10::Device& device);

  torch::Tensor scale(const torch::Tensor& loss) const;  // loss * scale
  // Divides every gradient by the scale (once per step) and records whether any was inf/NaN.
  void unscale_(torch::optim::Optimizer& optimizer);
  // Unscales if not done yet; runs optimizer.step() unless a gradient was inf/NaN. Reads found_inf on
  // the host (one synchronisation). Returns whether the optimizer stepped.
  bool step(torch::optim::Optimizer& optimizer);
  // Backoff after an inf/NaN step, growth after growth_interval clean steps; resets the step's state.
  void update();

  double current_scale() const;  // host copy of the scale (synchronises)
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t state_bytes() const;  // bytes of the scaler's tensors
  const LossScalerOptions& options() const { return options_; }

 private:
  LossScalerOptions options_;
  torch::Tensor scale_;           // [1] fp32
  torch::Tensor growth_tracker_;  // [1] int32: clean steps in a row
  torch::Tensor found_inf_;       // [1] fp32: 1 if the step's gradients had an inf/NaN
  bool unscaled_ = false;
  int64_t skipped_steps_ = 0;
};

}  // namespace tvie
