// mlp: a stack of Linear + ReLU layers classifying random feature vectors.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {

int64_t parameter_count(const MlpConfig& c) {
  int64_t n = 0, in = c.input_features;
  for (int64_t i = 0; i < c.hidden_layers; ++i) {
    n += in * c.hidden_features + c.hidden_features;  // weight [hidden, in] + bias [hidden]
    in = c.hidden_features;
  }
  return n + in * c.classes + c.classes;  // output layer
}

double forward_flops_per_sample(const MlpConfig& c) {
  double flops = 0;
  int64_t in = c.input_features;
  for (int64_t i = 0; i < c.hidden_layers; ++i) {
    flops += 2.0 * static_cast<double>(in * c.hidden_features);
    in = c.hidden_features;
  }
  return flops + 2.0 * static_cast<double>(in * c.classes);
}

namespace {

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const MlpConfig& c) {
    int64_t in = c.input_features;
    for (int64_t i = 0; i < c.hidden_layers; ++i) {
      hidden.push_back(register_module("fc" + std::to_string(i), tvie::nn::Linear(in, c.hidden_features)));
      in = c.hidden_features;
    }
    out = register_module("out", tvie::nn::Linear(in, c.classes));
  }
  // x: [B, input_features] -> logits [B, classes]
  torch::Tensor forward(torch::Tensor x) {
    for (auto& layer : hidden) x = torch::relu(layer->forward(x));  // [B, hidden_features]
    return out->forward(x);                                         // [B, classes]
  }
  std::vector<tvie::nn::Linear> hidden;
  tvie::nn::Linear out{nullptr};
};

// MlpImpl::forward on shapes (predict/forward_trace.hpp): each Linear saves its input, each ReLU its output.
trace::Sym trace_mlp(trace::ForwardTrace& t, const MlpConfig& c) {
  trace::Sym x = t.input(t.batch() * c.input_features, t.weight_bytes());  // floats in the weights' dtype
  x.dims = 2;
  int64_t in = c.input_features;
  for (int64_t i = 0; i < c.hidden_layers; ++i) {
    x = t.relu(t.linear(x, in, c.hidden_features, true));  // [B, hidden_features]
    in = c.hidden_features;
  }
  return t.linear(x, in, c.classes, true);  // [B, classes]
}

class MlpWorkload final : public zoo::ZooWorkload<MlpImpl, MlpConfig> {
 public:
  using ZooWorkload::ZooWorkload;
  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    // Labels from a fixed random linear teacher on the features: learnable, with a known solution.
    return zoo::teacher_batch({batch_size, config_.input_features}, config_.classes, device, seed,
                              [](const torch::Tensor& x) { return x; });
  }
  torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const override {
    return zoo::classification_loss(output, batch);
  }
  ModelFacts facts() const override { return {parameter_count(config_), 0, forward_flops_per_sample(config_), 0}; }
  ActivationEstimate estimate_activations(const ActivationQuery& query) const override {
    return zoo::estimate_with_loss(
        query, [&](trace::ForwardTrace& t) { return trace_mlp(t, config_); }, query.batch_size, config_.classes);
  }
};

}  // namespace

std::unique_ptr<Workload> make_mlp_workload(const MlpConfig& config, std::string label) {
  return std::make_unique<MlpWorkload>(config, std::move(label));
}

}  // namespace tvie
