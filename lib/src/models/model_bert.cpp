// bert: BERT's encoder (post-LayerNorm, GELU, learned positions, token types) with its masked-LM head, as
// Hugging Face's BertForMaskedLM builds it, on a learnable masked-token task.
//
// Notation in the shape comments: B batch, S sequence (seq_len), h d_model, a n_head, d = h / a,
// f d_ff, V vocab_size.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/checkpoint.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {

int64_t parameter_count(const BertConfig& c) {
  const int64_t h = c.d_model, f = c.d_ff;
  // Embeddings: word V*h, position P*h, token type T*h, LayerNorm 2h.
  const int64_t embeddings = (c.vocab_size + c.max_positions + c.type_vocab_size) * h + 2 * h;
  // Per layer: Q, K, V and output projections 4(h^2 + h), LayerNorm 2h, FFN h*f + f + f*h + h, LayerNorm 2h.
  const int64_t per_layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h;
  // MLM head: transform dense h^2 + h, LayerNorm 2h, decoder bias V (its weight is the word embedding).
  const int64_t head = h * h + h + 2 * h + c.vocab_size;
  return embeddings + c.n_layer * per_layer + head;
}

double forward_flops_per_sample(const BertConfig& c) {
  const double s = static_cast<double>(c.seq_len), h = static_cast<double>(c.d_model);
  const double f = static_cast<double>(c.d_ff), v = static_cast<double>(c.vocab_size);
  // Per layer: QKV and output projections 8sh^2, FFN 4shf, attention scores and weighted sum 4s^2h.
  const double per_layer = 8.0 * s * h * h + 4.0 * s * h * f + 4.0 * s * s * h;
  // Head, over every position (as BertForMaskedLM): transform 2sh^2 and decoder 2shV.
  return static_cast<double>(c.n_layer) * per_layer + 2.0 * s * h * h + 2.0 * s * h * v;
}

namespace {

torch::nn::LayerNorm layer_norm(int64_t h) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}).eps(1e-12));  // BERT's epsilon
}

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertConfig& c)
      : n_head(c.n_head),
        qkv(register_module("qkv", tvie::nn::Linear(c.d_model, 3 * c.d_model))),  // Q, K, V fused: same weights
        attn_out(register_module("attention_output", tvie::nn::Linear(c.d_model, c.d_model))),
        ln_attn(register_module("attention_layernorm", layer_norm(c.d_model))),
        ffn_in(register_module("intermediate", tvie::nn::Linear(c.d_model, c.d_ff))),
        ffn_out(register_module("output", tvie::nn::Linear(c.d_ff, c.d_model))),
        ln_ffn(register_module("output_layernorm", layer_norm(c.d_model))) {}
  // x: [B, S, h] -> [B, S, h]. Post-LayerNorm: the norm follows each residual addition.
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), S = x.size(1), h = x.size(2), d = h / n_head;
    torch::Tensor a;
    {  // The attention's tensors end with this scope, as Hugging Face's attention submodule's end when it returns:
       // without it q, k, v (views of the fused projection) and the attention output would stay alive through
       // the feed-forward below, an inference working set of 4 [B, S, h] tensors more.
      auto parts = qkv->forward(x).split(h, /*dim=*/2);           // 3 x [B, S, h]
      auto q = parts[0].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
      auto k = parts[1].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
      auto v = parts[2].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
      auto y = at::scaled_dot_product_attention(q, k, v);         // bidirectional: [B, a, S, d]
      y = y.transpose(1, 2).contiguous().view({B, S, h});         // [B, S, h]
      a = ln_attn->forward(x + attn_out->forward(y));             // [B, S, h]
    }
    auto m = torch::gelu(ffn_in->forward(a));         // erf GELU: [B, S, f]
    return ln_ffn->forward(a + ffn_out->forward(m));  // [B, S, h]
  }
  int64_t n_head;
  tvie::nn::Linear qkv, attn_out;
  torch::nn::LayerNorm ln_attn;
  tvie::nn::Linear ffn_in, ffn_out;
  torch::nn::LayerNorm ln_ffn;
};
TORCH_MODULE(BertLayer);

struct BertImpl : torch::nn::Module {
  explicit BertImpl(const BertConfig& c) : config(c) {
    word = register_module("word_embeddings", torch::nn::Embedding(c.vocab_size, c.d_model));             // [V, h]
    position = register_module("position_embeddings", torch::nn::Embedding(c.max_positions, c.d_model));  // [P, h]
    token_type = register_module("token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, c.d_model));
    ln_emb = register_module("embeddings_layernorm", layer_norm(c.d_model));
    for (int64_t i = 0; i < c.n_layer; ++i) layers.push_back(register_module(cat("layer", i), BertLayer(c)));
    head_dense = register_module("head_transform", tvie::nn::Linear(c.d_model, c.d_model));
    head_ln = register_module("head_layernorm", layer_norm(c.d_model));
    decoder_bias = register_parameter("decoder_bias", torch::zeros({c.vocab_size}));  // [V]
    // BERT's initialisation: N(0, 0.02) for embeddings and linear weights, zeros for biases.
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      if (p.key().find("layernorm") != std::string::npos) continue;  // LayerNorm keeps weight 1, bias 0
      const auto& key = p.key();
      if (key.size() >= 4 && key.substr(key.size() - 4) == "bias")
        p.value().zero_();
      else
        p.value().normal_(0.0, 0.02);
    }
  }
  // ids: [B, S] token ids -> MLM logits [B, S, V]. Token types are all 0 (one segment).
  torch::Tensor forward(const torch::Tensor& ids) {
    const int64_t S = ids.size(1);
    // positions [S] and token types [B, S]: temporaries, gone once the embeddings are summed.
    // In this order (the trace's): backward runs the later ones first.
    torch::Tensor x = word->forward(ids);
    x = x + position->forward(torch::arange(S, ids.options().dtype(torch::kInt64)));
    x = x + token_type->forward(torch::zeros_like(ids));
    x = ln_emb->forward(x);  // [B, S, h]
    for (size_t i = 0; i < layers.size(); ++i) {
      auto layer = layers[i];
      if (checkpoint_every > 0 && i % static_cast<size_t>(checkpoint_every) == 0 && is_training())
        x = tvie::checkpoint([layer](const torch::Tensor& in) mutable { return layer->forward(in); }, x);
      else
        x = layer->forward(x);  // [B, S, h]
    }
    auto t = head_ln->forward(torch::gelu(head_dense->forward(x)));  // [B, S, h]
    // Decoder tied to the word embedding: logits = t @ word^T + bias.
    return torch::nn::functional::linear(t, word->weight, decoder_bias);  // [B, S, V]
  }
  BertConfig config;
  int64_t checkpoint_every = 0;
  torch::nn::Embedding word{nullptr}, position{nullptr}, token_type{nullptr};
  torch::nn::LayerNorm ln_emb{nullptr};
  std::vector<BertLayer> layers;
  tvie::nn::Linear head_dense{nullptr};
  torch::nn::LayerNorm head_ln{nullptr};
  torch::Tensor decoder_bias;
};

// BertLayerImpl::forward and BertImpl::forward on shapes (predict/forward_trace.hpp), for the activation
// prediction. Per layer, in tensors of [B, S, h] elements (f = d_ff): qkv's input 1, q/k/v 3, the attention
// output 1, ln_attn's input 1, ffn_in's input 1, GELU's input f/h, ffn_out's input f/h, ln_ffn's input 1:
// 8 + 2f/h (16 for BERT's f = 4h, as gpt: the norms moved after the residual additions).
trace::Sym trace_layer(trace::ForwardTrace& t, const BertConfig& c, const trace::Sym& x) {
  const int64_t B = t.batch(), S = c.seq_len, h = c.d_model;
  trace::Sym a;
  {
    const trace::ForwardTrace::Hold residual(t, x);
    const trace::Sym qkv = t.linear(x, h, 3 * h, true);  // [B, S, 3h]; q, k, v are views of it
    const trace::Sym part = trace::view(qkv, B * S * h);
    a = t.layer_norm(t.add(x, t.linear(t.attention(part, part, part, B, c.n_head, S), h, h, true)), h);
  }
  const trace::ForwardTrace::Hold residual(t, a);
  const trace::Sym m = t.gelu(t.linear(a, h, c.d_ff, true));  // [B, S, f]
  return t.layer_norm(t.add(a, t.linear(m, c.d_ff, h, true)), h);
}

trace::Sym trace_bert(trace::ForwardTrace& t, const BertConfig& c) {
  const int64_t B = t.batch(), S = c.seq_len, h = c.d_model;
  trace::Sym ids = t.input(B * S, 8);
  ids.dims = 2;
  trace::Sym x;
  {
    // Words, positions, token types, as the module runs them (backward reverses the order). The word embedding is
    // tied to the decoder, whose backward writes its gradient first.
    x = t.embedding(ids, h, c.vocab_size, true);
    {
      trace::Sym positions = t.index_tensor(S);  // arange(S): a temporary of its statement
      positions.dims = 1;
      x = t.add(x, t.embedding(positions, h, c.max_positions));
    }
    trace::Sym types = t.index_tensor(B * S);  // zeros_like(ids)
    types.dims = 2;
    x = t.add(x, t.embedding(types, h, c.type_vocab_size));
  }
  x = t.layer_norm(x, h);
  for (int64_t i = 0; i < c.n_layer; ++i) {
    if (t.query().checkpoint_every > 0 && i % t.query().checkpoint_every == 0)
      x = t.checkpoint(x, [&](const trace::Sym& in) { return trace_layer(t, c, in); });
    else
      x = trace_layer(t, c, x);
  }
  const trace::Sym head = t.layer_norm(t.gelu(t.linear(x, h, h, true)), h);  // [B, S, h]
  return t.linear(head, h, c.vocab_size, true, "linear (head)", true);       // [B, S, V]
}

constexpr int64_t kMaskToken = 0;  // [MASK]: the data draw real tokens from 1 .. V-1

class BertWorkload final : public zoo::ZooWorkload<BertImpl, BertConfig> {
 public:
  using ZooWorkload::ZooWorkload;
  // A learnable masked-token task: S tokens in runs of 4 equal tokens [a a a a b b b b ...] (each run's
  // token drawn by Zipf's law from [1, V)), so that a masked token can be read from its neighbours. 15% of the
  // positions (rounded, at least one) are replaced by [MASK] in the input; the target is the original token there and
  // -100 (ignored) elsewhere. A model that has learned nothing has a loss of about ln(V).
  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    const auto& c = config_;
    const int64_t S = c.seq_len, runs = (S + 3) / 4;
    auto gen = zoo::data_generator(seed);
    // Token frequencies as in text (Zipf's law: p(k) proportional to 1/k over the ids 1 .. V-1), so that a
    // model learns the frequencies first, then to read its neighbours.
    const auto zipf = 1.0 / torch::arange(1, c.vocab_size, torch::kFloat64);  // [V-1]
    auto run_tokens =
        torch::multinomial(zipf, batch_size * runs, /*replacement=*/true, gen).view({batch_size, runs}) + 1;
    auto tokens = run_tokens.repeat_interleave(4, 1).narrow(1, 0, S).contiguous();  // [B, S]
    const int64_t masked = std::max<int64_t>(1, (15 * S + 50) / 100);               // 15%, rounded
    auto order = torch::rand({batch_size, S}, gen).argsort(/*dim=*/int64_t{1});     // a random order per row
    auto mask = torch::zeros({batch_size, S}, torch::kBool);
    mask.scatter_(1, order.narrow(1, 0, masked), true);  // [B, S]: the masked positions
    Batch b;
    b.input = tokens.masked_fill(mask, kMaskToken).to(device);           // [B, S]
    b.target = tokens.masked_fill(mask.logical_not(), -100).to(device);  // [B, S]
    b.samples = batch_size;
    b.tokens = batch_size * S;
    return b;
  }
  int64_t block_count() const override { return config_.n_layer; }
  void set_checkpointing(torch::nn::Module& module, int64_t every) const override {
    static_cast<BertImpl&>(module).checkpoint_every = every;
  }
  // Mean cross-entropy over the masked positions.
  torch::Tensor loss(const torch::Tensor& logits, const Batch& batch) const override {
    return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32).view({-1, config_.vocab_size}),
                                                batch.target.reshape({-1}));
  }
  ModelFacts facts() const override {
    return {parameter_count(config_), 0, forward_flops_per_sample(config_), config_.seq_len};
  }
  ActivationEstimate estimate_activations(const ActivationQuery& query) const override {
    return zoo::estimate_with_loss(
        query, [&](trace::ForwardTrace& t) { return trace_bert(t, config_); }, query.batch_size * config_.seq_len,
        config_.vocab_size);
  }
};

}  // namespace

std::unique_ptr<Workload> make_bert_workload(const BertConfig& config, std::string label) {
  return std::make_unique<BertWorkload>(config, std::move(label));
}

}  // namespace tvie
