// Shared pieces of the zoo models' Workload implementations.
#pragma once

#include <torch/torch.h>

#include <tvie/layers.hpp>
#include <tvie/workload.hpp>

namespace tvie::zoo {

// A generator seeded for synthetic data: the same seed gives the same batch on every device
// (data are drawn on the CPU, then copied).
inline torch::Generator data_generator(uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return gen;
}

// Classification batch with a learnable rule: `input` [B, ...] standard normal, `target` [B] =
// argmax over classes of features(input) @ W, with W [F, classes] drawn from a fixed seed (the
// "teacher"). `features` maps the input batch to [B, F].
template <typename Features>
Batch teacher_batch(torch::IntArrayRef input_shape, int64_t classes, const c10::Device& device, uint64_t seed,
                    Features features) {
  auto gen = data_generator(seed);
  Batch b;
  auto input = torch::randn(input_shape, gen, torch::kFloat32);
  const auto f = features(input);                                                   // [B, F]
  auto teacher_gen = data_generator(0x7e57ULL);                                     // same teacher for every batch
  const auto w = torch::randn({f.size(1), classes}, teacher_gen, torch::kFloat32);  // [F, classes]
  b.target = f.matmul(w).argmax(1).to(device);                                      // [B]
  b.input = input.to(device);
  b.samples = input_shape[0];
  return b;
}

// Mean cross-entropy of logits [B, C] against classes [B].
inline torch::Tensor classification_loss(const torch::Tensor& logits, const Batch& batch) {
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), batch.target);
}

// The part of a zoo model's Workload that only depends on its module type: name, construction from the
// config, and forward. Each model adds its batch maker, loss and analytic facts.
template <typename Impl, typename Config>
class ZooWorkload : public Workload {
 public:
  ZooWorkload(Config config, std::string label) : config_(config), label_(std::move(label)) {}
  std::string name() const override { return label_; }
  std::shared_ptr<torch::nn::Module> make_module() const override { return std::make_shared<Impl>(config_); }
  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    return static_cast<Impl&>(module).forward(input);  // modules come from make_module()
  }

 protected:
  Config config_;
  std::string label_;
};

}  // namespace tvie::zoo
