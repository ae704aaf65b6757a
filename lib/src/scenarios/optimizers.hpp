// Builds the LibTorch optimizer a TrainSettings names.
#pragma once

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include <tvie/settings.hpp>

namespace tvie::detail {

// Adam or AdamW through LibTorch's fused kernel, as torch.optim.AdamW(fused=True) runs it: the step counts, fp32
// scalars on the parameters' device, incremented in place (_foreach_add_), then one fused update of every parameter
// and its two moments (CUDA: a few multi-tensor launches; CPU: one vectorised loop per parameter). The state is
// created at the first step, as LibTorch's own optimizers create theirs: each moment of its parameter's shape and
// dtype, zero. The group's options are AdamWOptions (lr, betas, eps, weight_decay); `decoupled` picks AdamW's
// decoupled weight decay over Adam's L2 term.
class FusedAdam : public torch::optim::Optimizer {
 public:
  FusedAdam(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options, bool decoupled)
      : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                                std::make_unique<torch::optim::AdamWOptions>(options)),
        decoupled_(decoupled) {}

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss;
    if (closure) {
      torch::AutoGradMode grad(true);
      loss = closure();
    }
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups()) {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto [it, fresh] = state_.try_emplace(p.unsafeGetTensorImpl());
        if (fresh)
          it->second = {torch::zeros_like(p, torch::MemoryFormat::Preserve),
                        torch::zeros_like(p, torch::MemoryFormat::Preserve),
                        torch::zeros({}, p.options().dtype(torch::kFloat32))};
        params.push_back(p);
        grads.push_back(p.grad());
        exp_avgs.push_back(it->second.exp_avg);
        exp_avg_sqs.push_back(it->second.exp_avg_sq);
        steps.push_back(it->second.step);
      }
      if (params.empty()) continue;
      at::_foreach_add_(steps, 1);
      const auto [beta1, beta2] = o.betas();
      if (decoupled_)
        at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, o.lr(), beta1, beta2, o.weight_decay(),
                          o.eps(), /*amsgrad=*/false, /*maximize=*/false);
      else
        at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, o.lr(), beta1, beta2, o.weight_decay(),
                         o.eps(), /*amsgrad=*/false, /*maximize=*/false);
    }
    return loss;
  }

 private:
  struct State {
    torch::Tensor exp_avg, exp_avg_sq, step;
  };
  bool decoupled_;
  std::unordered_map<const void*, State> state_;
};

inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainSettings& s,
                                                               std::vector<torch::Tensor> params) {
  if (s.fused_optimizer && (s.optimizer == OptimizerKind::adam || s.optimizer == OptimizerKind::adamw))
    return std::make_unique<FusedAdam>(std::move(params),
                                       torch::optim::AdamWOptions(s.learning_rate)
                                           .weight_decay(s.optimizer == OptimizerKind::adamw ? s.weight_decay : 0),
                                       s.optimizer == OptimizerKind::adamw);
  switch (s.optimizer) {
    case OptimizerKind::sgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(s.learning_rate));
    case OptimizerKind::sgd_momentum:
      return std::make_unique<torch::optim::SGD>(params,
                                                 torch::optim::SGDOptions(s.learning_rate).momentum(s.momentum));
    case OptimizerKind::adam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(s.learning_rate));
    case OptimizerKind::adamw:
      return std::make_unique<torch::optim::AdamW>(
          params, torch::optim::AdamWOptions(s.learning_rate).weight_decay(s.weight_decay));
  }
  return nullptr;
}

}  // namespace tvie::detail
