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

// The mean cross-entropy of logits [N, C] (any floating dtype) against targets [N] (int64; a row whose target is
// `ignore_index` counts nothing), the value torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), target)
// gives, without an fp32 copy of all the logits: the rows are taken `chunk_rows` at a time (0: as many as 64 MiB
// of fp32 holds, tvie::fused_loss_chunk_rows), each chunk's log-sum-exp and its gradient computed in fp32 in the
// forward, and the gradient of the logits kept in their own dtype for the backward, which scales it in place (llm.c's
// fused classifier, Liger's fused cross-entropy). What it holds for backward: N x C elements of the logits' dtype,
// where log_softmax saves N x C fp32 ones and its backward writes two more. The loss is fp32 []; with no row counting
// it is 0.
torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, int64_t ignore_index = -100,
                                  int64_t chunk_rows = 0);

}  // namespace tvie
