// Shared pieces of the zoo models' Workload implementations.
#pragma once

#include <torch/torch.h>

#include "predict/forward_trace.hpp"

#include <tvie/layers.hpp>
#include <tvie/models.hpp>
#include "predict/cpu_kernels.hpp"
#include <tvie/ledger.hpp>
#include <tvie/workload.hpp>

namespace tvie::zoo {

// KV-cached decoders (tvie::make_kv_decoder): the caches' shape, [B, heads, max_length, d] per layer, and the
// longest context the model takes (said on an error with where it comes from).
struct CacheShape {
  int64_t layers, batch, heads, head_dim, max_length, context_length;
  const char* context_source;
};
std::unique_ptr<KvDecoder> cached_decoder(CachedDecoder::Forward forward, const CacheShape& shape,
                                          const torch::TensorOptions& options);
// The decoder of a zoo module whose forward(tokens, caches, position) reads and extends the caches (gpt, llama),
// with caches of `shape` in the dtype and on the device of `weight` (one of the module's: the dtype the layers
// compute in).
template <typename Impl>
std::unique_ptr<KvDecoder> module_decoder(std::shared_ptr<torch::nn::Module> module, const CacheShape& shape,
                                          const torch::Tensor& weight) {
  return cached_decoder(
      [module](const torch::Tensor& tokens, std::vector<GptLayerCache>* caches, int64_t position) {
        return dynamic_cast<Impl&>(*module).forward(tokens, caches, position);
      },
      shape, weight.options().requires_grad(false));
}
std::unique_ptr<KvDecoder> gpt_decoder(const GptConfig& config, std::shared_ptr<torch::nn::Module> module,
                                       int64_t batch, int64_t max_length);
std::unique_ptr<KvDecoder> llama_decoder(const LlamaConfig& config, std::shared_ptr<torch::nn::Module> module,
                                         int64_t batch, int64_t max_length);

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

// The copy task of the decoder models (gpt, llama): S + 1 tokens [r_1 .. r_n, SEP, r_1 .. r_{S-n}] with
// n = ceil(S / 2) (an odd S copies one token fewer than it shows), r_i uniform in [1, V) and SEP = 0; input = tokens[:,
// :S], target = tokens[:, 1:] (next token). Targets that are random tokens of the first half cannot be predicted and
// are masked (-100, ignored by the loss); the rest can be learned exactly (a solved model reaches loss 0; one that has
// learned nothing has about ln(V)).
inline Batch copy_task_batch(int64_t batch_size, int64_t S, int64_t V, const c10::Device& device, uint64_t seed) {
  const int64_t n = (S + 1) / 2;
  auto gen = data_generator(seed);
  auto random = torch::randint(1, V, {batch_size, n}, gen, torch::kInt64);         // [B, n]
  auto tokens = torch::cat({random, torch::zeros({batch_size, 1}, torch::kInt64),  // SEP
                            random.narrow(1, 0, S - n)},
                           1);  // [B, S + 1]
  Batch b;
  // [B, S], a tensor of its own: contiguous() would keep a view of all of `tokens` for one sequence (a [1, S] view is
  // contiguous), 8 bytes more than the input's.
  b.input = tokens.narrow(1, 0, S).clone().to(device);
  auto target = tokens.narrow(1, 1, S).clone();  // [B, S]; a copy: masking must not touch the input
  target.narrow(1, 0, n - 1).fill_(-100);        // the targets r_2 .. r_n are random: not learnable
  b.target = target.to(device);
  b.samples = batch_size;
  b.tokens = batch_size * S;
  return b;
}

// Mean cross-entropy of logits [B, C] against classes [B].
inline torch::Tensor classification_loss(const torch::Tensor& logits, const Batch& batch) {
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), batch.target);
}

// The positions per sequence a token model's forward runs for `query` (ActivationQuery::sequence_tokens, else the
// model's context length).
inline int64_t sequence_positions(const ActivationQuery& query, int64_t context_length) {
  return query.sequence_tokens > 0 ? query.sequence_tokens : context_length;
}

// A zoo model's activation estimate: its traced forward (returning the logits) and, when training, the
// cross-entropy of the logits [rows, classes] cast to fp32 (classification_loss and the language models' loss), or
// tvie::fused_cross_entropy of them (ActivationQuery::fused_loss).
template <typename Forward>
ActivationEstimate estimate_with_loss(const ActivationQuery& query, Forward forward, int64_t rows, int64_t classes) {
  trace::ForwardTrace t(query);
  {
    const trace::Sym logits = forward(t);
    if (query.training && query.fused_loss)
      t.fused_cross_entropy(logits, rows, classes);
    else if (query.training)
      t.cross_entropy(logits, rows, classes);
  }
  return t.finish();
}

// A residual block relu(branch(x) + skip) on shapes, the skip the identity or (`stride` != 1 or cin != cout) a 1x1
// convolution of that stride and its BatchNorm, computed after the branch as torchvision's blocks do; `branch` traces
// the branch (x -> [B, cout, out, out]). In backward the gradient of the sum reaches both paths. With the identity it
// is x's gradient, held in x's buffer while the branch runs its backward. The projection, created after the branch,
// runs its backward first (autograd takes the later nodes first): the sum's gradient is held only through its
// convolution (the branch's last op still needs it), and then the projection's input gradient, x-sized, waits in x's
// buffer through the whole branch.
template <typename Branch>
trace::Sym trace_residual_block(trace::ForwardTrace& t, const trace::Sym& x, int64_t cin, int64_t cout, int64_t stride,
                                int64_t out, Branch branch) {
  const int64_t sum_bytes = t.batch() * cout * out * out * t.compute_bytes();
  if (stride == 1 && cin == cout) {
    const trace::ForwardTrace::Hold identity_gradient(t, sum_bytes);
    const trace::Sym y = branch(x);
    return t.relu(t.add(y, x));
  }
  const size_t branch_first = t.ops_traced();
  const trace::Sym y = branch(x);
  const size_t skip_first = t.ops_traced();
  trace::Sym skip;
  {
    const trace::ForwardTrace::Hold sum_gradient(t, sum_bytes);
    skip = t.conv2d(x, cin, cout, 1, out);  // [B, cout, out, out]
  }
  skip = t.batch_norm(skip, cout);  // the convolution's output goes once the normalised one exists
  t.hold_input_gradient(branch_first, skip_first, x.bytes());
  return t.relu(t.add(y, skip));
}

// The part of a zoo model's Workload that only depends on its module type: name, construction from the
// config, and forward. Each model adds its batch maker, loss and analytic facts.
template <typename Impl, typename Config>
class ZooWorkload : public Workload {
 public:
  ZooWorkload(Config config, std::string label) : config_(config), label_(std::move(label)) {}
  std::string name() const override { return label_; }
  std::shared_ptr<torch::nn::Module> make_module() const override { return std::make_shared<Impl>(config_); }
  bool loss_is_cross_entropy() const override { return true; }  // every zoo model's loss
  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    return static_cast<Impl&>(module).forward(input);  // modules come from make_module()
  }

 protected:
  Config config_;
  std::string label_;
};

// The image classifiers (cnn, resnet): random images [B, C, H, H] labelled by a fixed random linear teacher on each
// channel's mean brightness (what the global average pool exposes, so that the network can learn it), the
// cross-entropy over the classes, and the activation estimate from `Trace`, the model's traced forward.
template <typename Impl, typename Config, trace::Sym (*Trace)(trace::ForwardTrace&, const Config&)>
class ImageClassifierWorkload final : public ZooWorkload<Impl, Config> {
 public:
  using ZooWorkload<Impl, Config>::ZooWorkload;
  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    const Config& c = this->config_;
    return teacher_batch({batch_size, c.in_channels, c.image_size, c.image_size}, c.classes, device, seed,
                         [](const torch::Tensor& x) {
                           return x.mean({2, 3});  // [B, C]
                         });
  }
  torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const override {
    return classification_loss(output, batch);
  }
  ModelFacts facts() const override {
    const Config& c = this->config_;
    return {parameter_count(c), buffer_bytes(c), forward_flops_per_sample(c), 0};
  }
  ActivationEstimate estimate_activations(const ActivationQuery& query) const override {
    return estimate_with_loss(
        query, [&](trace::ForwardTrace& t) { return Trace(t, this->config_); }, query.batch_size,
        this->config_.classes);
  }
};

// The decoder-only language models (gpt, llama): the copy task (copy_task_batch), the mean next-token cross-entropy
// over the positions that are not masked, checkpointing every N blocks, and the activation estimate from `Trace`,
// the model's traced forward.
template <typename Impl, typename Config, trace::Sym (*Trace)(trace::ForwardTrace&, const Config&)>
class LanguageModelWorkload final : public ZooWorkload<Impl, Config> {
 public:
  using ZooWorkload<Impl, Config>::ZooWorkload;
  const Config& config() const { return this->config_; }
  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    return copy_task_batch(batch_size, this->config_.context_length, this->config_.vocab_size, device, seed);
  }
  int64_t block_count() const override { return this->config_.n_layer; }
  void set_checkpointing(torch::nn::Module& module, int64_t every) const override {
    static_cast<Impl&>(module).checkpoint_every = every;
  }
  torch::Tensor loss(const torch::Tensor& logits, const Batch& batch) const override {
    return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32).view({-1, this->config_.vocab_size}),
                                                batch.target.reshape({-1}));  // [B*S, V] against [B*S]
  }
  ModelFacts facts() const override {
    const Config& c = this->config_;
    return {parameter_count(c), 0, forward_flops_per_sample(c), c.context_length};
  }
  ActivationEstimate estimate_activations(const ActivationQuery& query) const override {
    const Config& c = this->config_;
    return estimate_with_loss(
        query, [&](trace::ForwardTrace& t) { return Trace(t, c); },
        query.batch_size * sequence_positions(query, c.context_length), c.vocab_size);
  }
};

}  // namespace tvie::zoo
