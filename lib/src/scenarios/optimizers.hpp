// Builds the LibTorch optimizer a TrainSettings names.
#pragma once

#include <memory>

#include <torch/torch.h>

#include <tvie/settings.hpp>

namespace tvie::detail {

inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainSettings& s,
                                                               std::vector<torch::Tensor> params) {
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
