#include <tvie/precision.hpp>

#include <algorithm>
#include <map>

#include <torch/autograd.h>

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/ledger.hpp>
#include <tvie/log.hpp>

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

namespace {

// The loss and the logits' gradient in one forward pass, chunk by chunk; backward scales the saved gradient.
class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& target, int64_t ignore_index, int64_t chunk_rows) {
    const int64_t rows = logits.size(0), classes = logits.size(1);
    const auto valid = target.ne(ignore_index);                   // [N] bool
    const auto count = valid.sum(torch::kFloat32).clamp_min_(1);  // [] fp32: the mean's divisor
    auto grad = torch::empty({rows, classes}, logits.options());  // [N, C] d loss / d logits, the logits' dtype
    auto total = torch::zeros({}, logits.options().dtype(torch::kFloat32));
    const int64_t step = chunk_rows > 0 ? chunk_rows : fused_loss_chunk_rows(classes);
    for (int64_t r = 0; r < rows; r += step) {
      const int64_t n = std::min(step, rows - r);
      auto x = logits.narrow(0, r, n).to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);  // [n, C] fp32
      const auto keep = valid.narrow(0, r, n).unsqueeze(1);                                        // [n, 1] bool
      const auto index = target.narrow(0, r, n).clamp_min(0).unsqueeze(1);  // [n, 1]; an ignored row: class 0
      auto loss = x.gather(1, index).neg_();                                // [n, 1] -x[target]
      const auto max = x.amax(1, /*keepdim=*/true);                         // [n, 1]
      x.sub_(max).exp_();                                                   // exp(x - max)
      auto sum = x.sum(1, /*keepdim=*/true);                                // [n, 1]
      x.div_(sum);                                                          // softmax
      loss.add_(sum.log_()).add_(max).mul_(keep);                           // log-sum-exp - x[target]
      total.add_(loss.sum());
      x.scatter_add_(1, index, keep.to(torch::kFloat32).neg_());  // softmax - one-hot
      x.mul_(keep).div_(count);                                   // d mean / d logits
      grad.narrow(0, r, n).copy_(x);
    }
    ctx->save_for_backward({grad});
    return total.div_(count);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto grad = ctx->get_saved_variables()[0];
    grad.mul_(grad_outputs[0]);  // in place: the saved gradient is this node's alone
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, int64_t ignore_index,
                                  int64_t chunk_rows) {
  if (logits.dim() != 2 || !logits.is_floating_point())
    throw InvalidArgument("fused_cross_entropy.logits", cat(logits.sizes(), " ", logits.scalar_type()),
                          "floating logits [rows, classes]");
  if (target.dim() != 1 || target.size(0) != logits.size(0) || target.scalar_type() != torch::kInt64)
    throw InvalidArgument("fused_cross_entropy.target", cat(target.sizes(), " ", target.scalar_type()),
                          cat("int64 targets [", logits.size(0), "]"));
  if (chunk_rows < 0) throw InvalidArgument("fused_cross_entropy.chunk_rows", cat(chunk_rows), ">= 0 (0: automatic)");
  return FusedCrossEntropy::apply(logits.contiguous(), target.contiguous(), ignore_index, chunk_rows);
}

}  // namespace tvie
