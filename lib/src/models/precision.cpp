#include <tvie/precision.hpp>

#include <map>

#include "core/compat.hpp"

namespace tvie {

AutocastGuard::AutocastGuard(c10::DeviceType device_type, c10::ScalarType dtype, bool enabled)
    : device_type_(device_type),
      previous_enabled_(at::autocast::is_autocast_enabled(device_type)),
      previous_dtype_(at::autocast::get_autocast_dtype(device_type)) {
  at::autocast::set_autocast_enabled(device_type_, enabled);
  at::autocast::set_autocast_dtype(device_type_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  // Outermost guard: drop the cached low-precision weight copies (they would be stale after the
  // optimizer updates the fp32 weights).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, previous_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
}

LossScaler::LossScaler(const LossScalerOptions& options, const c10::Device& device) : options_(options) {
  const auto f32 = torch::TensorOptions().device(device).dtype(torch::kFloat32);
  scale_ = torch::full({1}, options_.initial_scale, f32);
  growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, f32);
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const { return loss * scale_.to(loss.scalar_type()); }

void LossScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (unscaled_) return;
  torch::NoGradGuard no_grad;
  const auto inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  // The kernel takes gradients of one device and dtype at a time.
  std::map<std::pair<std::string, c10::ScalarType>, std::vector<torch::Tensor>> groups;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params())
      if (p.grad().defined()) groups[{p.grad().device().str(), p.grad().scalar_type()}].push_back(p.grad());
  for (auto& [key, grads] : groups) {
    auto found = torch::zeros_like(found_inf_, torch::TensorOptions().device(grads.front().device()));
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale.to(grads.front().device()));
    found_inf_.add_(found.to(found_inf_.device()));
  }
  unscaled_ = true;
}

bool LossScaler::step(torch::optim::Optimizer& optimizer) {
  unscale_(optimizer);
  if (found_inf_.item<float>() != 0.0f) {  // an inf/NaN gradient: skip the update, as GradScaler does
    ++skipped_steps_;
    return false;
  }
  optimizer.step();
  return true;
}

void LossScaler::update() {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_.clamp_max(1.0), options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
  found_inf_.zero_();
  unscaled_ = false;
}

double LossScaler::current_scale() const { return scale_.item<double>(); }

int64_t LossScaler::state_bytes() const {
  return static_cast<int64_t>(scale_.nbytes() + growth_tracker_.nbytes() + found_inf_.nbytes());
}

}  // namespace tvie
