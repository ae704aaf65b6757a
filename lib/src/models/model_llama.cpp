// llama: Llama 3's decoder (RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention, no biases),
// on gpt's copy task (next-token loss).
//
// Notation in the shape comments: B batch, S sequence (context_length), h d_model, a n_head, g n_kv_head,
// d = h / a (head size), f d_ff, V vocab_size.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/checkpoint.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {

int64_t parameter_count(const LlamaConfig& c) {
  const int64_t h = c.d_model, d = c.d_model / c.n_head, kv = c.n_kv_head * d, f = c.d_ff;
  // Per layer: q h*h, k and v h*kv each, o h*h; gate, up h*f and down f*h; two RMSNorm weights 2h.
  const int64_t per_layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h;
  // Token embedding V*h, the final RMSNorm h, and the output head V*h unless tied to the embedding.
  return c.vocab_size * h + c.n_layer * per_layer + h + (c.tied_head ? 0 : c.vocab_size * h);
}

double forward_flops_per_sample(const LlamaConfig& c) {
  const double s = static_cast<double>(c.context_length), h = static_cast<double>(c.d_model);
  const int64_t head_size = c.d_model / c.n_head;  // d: an integer by construction
  const double kv = static_cast<double>(c.n_kv_head * head_size), f = static_cast<double>(c.d_ff);
  // Per layer: projections 2s(2h^2 + 2h*kv), SwiGLU 6shf, attention scores and weighted sum 4s^2h (every
  // query head over all S keys: counted dense, not causal-halved, as for gpt).
  const double per_layer = 2.0 * s * (2.0 * h * h + 2.0 * h * kv) + 6.0 * s * h * f + 4.0 * s * s * h;
  return static_cast<double>(c.n_layer) * per_layer + 2.0 * s * h * static_cast<double>(c.vocab_size);  // + logits
}

namespace {

// RMSNorm: x / sqrt(mean(x^2) + eps) * weight, the statistic in fp32 whatever x's dtype.
struct RmsNormImpl : torch::nn::Module {
  RmsNormImpl(int64_t h, double eps) : eps(eps), weight(register_parameter("weight", torch::ones({h}))) {}
  torch::Tensor forward(const torch::Tensor& x) {  // [..., h] -> [..., h]
    const auto x32 = x.to(torch::kFloat32);
    const auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return normed.to(x.scalar_type()) * weight;
  }
  double eps;
  torch::Tensor weight;
};
TORCH_MODULE(RmsNorm);

// Rotary position embedding (rotate-half form): pairs (i, i + d/2) of each head rotated by position x
// theta^(-2i/d). x: [B, heads, S, d], positions start at `start` (decoding: the tokens already cached), or are
// `position` [1] (a fixed-shape decoding step: GptLayerCache::position).
torch::Tensor rotate(const torch::Tensor& x, double theta, int64_t start = 0, const torch::Tensor& position = {}) {
  const int64_t S = x.size(2), d = x.size(3);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
  const auto inv_freq = torch::pow(theta, -torch::arange(0, d, 2, f32) / static_cast<double>(d));  // [d/2]
  const auto positions = position.defined() ? position.to(torch::kFloat32) : torch::arange(start, start + S, f32);
  const auto angles = torch::outer(positions, inv_freq);                              // [S, d/2]
  const auto cos = torch::cat({angles.cos(), angles.cos()}, -1).to(x.scalar_type());  // [S, d]
  const auto sin = torch::cat({angles.sin(), angles.sin()}, -1).to(x.scalar_type());  // [S, d]
  const auto halves = x.chunk(2, -1);
  const auto rotated = torch::cat({-halves[1], halves[0]}, -1);  // [B, heads, S, d]
  return x * cos + rotated * sin;
}

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const LlamaConfig& c) : n_head(c.n_head), n_kv_head(c.n_kv_head), theta(c.rope_theta) {
    const int64_t d = c.d_model / c.n_head;
    q = register_module("q_proj", tvie::nn::Linear(c.d_model, c.n_head * d, /*with_bias=*/false));
    k = register_module("k_proj", tvie::nn::Linear(c.d_model, c.n_kv_head * d, /*with_bias=*/false));
    v = register_module("v_proj", tvie::nn::Linear(c.d_model, c.n_kv_head * d, /*with_bias=*/false));
    o = register_module("o_proj", tvie::nn::Linear(c.n_head * d, c.d_model, /*with_bias=*/false));
  }
  // x: [B, S, h] -> [B, S, h], causal. With a cache (decoding), x holds positions pos .. pos + S - 1: their keys
  // and values (of the g key/value heads, before the repeat) go into the cache, and they attend to every cached
  // position up to their own.
  torch::Tensor forward(const torch::Tensor& x, GptLayerCache* cache = nullptr, int64_t pos = 0) {
    const int64_t B = x.size(0), S = x.size(1), d = x.size(2) / n_head;
    const bool fixed = cache && cache->position.defined();  // a fixed-shape step: S = 1, at cache->position
    const torch::Tensor where = fixed ? cache->position : torch::Tensor();
    auto qh = rotate(q->forward(x).view({B, S, n_head, d}).transpose(1, 2), theta, pos, where);     // [B, a, S, d]
    auto kh = rotate(k->forward(x).view({B, S, n_kv_head, d}).transpose(1, 2), theta, pos, where);  // [B, g, S, d]
    auto vh = v->forward(x).view({B, S, n_kv_head, d}).transpose(1, 2);                             // [B, g, S, d]
    if (fixed) {
      cache->k.index_copy_(2, cache->position, kh);  // cache: [B, g, S_max, d]
      cache->v.index_copy_(2, cache->position, vh);
      const auto keys = cache->k.repeat_interleave(n_head / n_kv_head, 1);                // [B, a, S_max, d]
      const auto values = cache->v.repeat_interleave(n_head / n_kv_head, 1);              // [B, a, S_max, d]
      const auto y = at::scaled_dot_product_attention(qh, keys, values, cache->visible);  // [B, a, 1, d]
      return o->forward(y.transpose(1, 2).contiguous().view({B, S, n_head * d}));
    }
    if (cache) {
      cache->k.narrow(2, pos, S).copy_(kh);  // cache: [B, g, S_max, d]
      cache->v.narrow(2, pos, S).copy_(vh);
      kh = cache->k.narrow(2, 0, pos + S);  // [B, g, pos + S, d]
      vh = cache->v.narrow(2, 0, pos + S);
    }
    // Grouped-query attention: each of the g key/value heads serves a/g query heads.
    kh = kh.repeat_interleave(n_head / n_kv_head, 1);  // [B, a, pos + S, d]
    vh = vh.repeat_interleave(n_head / n_kv_head, 1);  // [B, a, pos + S, d]
    torch::Tensor y;
    if (pos == 0) {  // no earlier positions: plain causal attention
      y = at::scaled_dot_product_attention(qh, kh, vh, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    } else if (S == 1) {  // one new position sees every cached one: no mask, which would keep SDPA off its fused
      // (flash, memory-efficient) kernels on CUDA
      y = at::scaled_dot_product_attention(qh, kh, vh);
    } else {  // new position i (absolute pos + i) sees positions 0 .. pos + i
      const auto mask =
          torch::ones({S, pos + S}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).tril(pos);
      y = at::scaled_dot_product_attention(qh, kh, vh, mask);
    }                                                                            // [B, a, S, d]
    return o->forward(y.transpose(1, 2).contiguous().view({B, S, n_head * d}));  // [B, S, h]
  }
  int64_t n_head, n_kv_head;
  double theta;
  tvie::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
};
TORCH_MODULE(Attention);

struct DecoderLayerImpl : torch::nn::Module {
  explicit DecoderLayerImpl(const LlamaConfig& c)
      : attn_norm(register_module("input_layernorm", RmsNorm(c.d_model, c.norm_eps))),
        attn(register_module("self_attn", Attention(c))),
        mlp_norm(register_module("post_attention_layernorm", RmsNorm(c.d_model, c.norm_eps))),
        gate(register_module("gate_proj", tvie::nn::Linear(c.d_model, c.d_ff, /*with_bias=*/false))),
        up(register_module("up_proj", tvie::nn::Linear(c.d_model, c.d_ff, /*with_bias=*/false))),
        down(register_module("down_proj", tvie::nn::Linear(c.d_ff, c.d_model, /*with_bias=*/false))) {}
  // x: [B, S, h] -> [B, S, h] (pre-norm residual block).
  torch::Tensor forward(torch::Tensor x, GptLayerCache* cache = nullptr, int64_t pos = 0) {
    x = x + attn->forward(attn_norm->forward(x), cache, pos);  // [B, S, h]
    const auto n = mlp_norm->forward(x);                       // [B, S, h]
    auto m = torch::silu(gate->forward(n));                    // [B, S, f]: the gate before up (the trace's order)
    m = m * up->forward(n);                                    // SwiGLU: [B, S, f]
    return x + down->forward(m);                               // [B, S, h]
  }
  RmsNorm attn_norm;
  Attention attn;
  RmsNorm mlp_norm;
  tvie::nn::Linear gate, up, down;
};
TORCH_MODULE(DecoderLayer);

struct LlamaImpl : torch::nn::Module {
  explicit LlamaImpl(const LlamaConfig& c) {
    embed = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.d_model));  // [V, h]
    for (int64_t i = 0; i < c.n_layer; ++i) layers.push_back(register_module(cat("layers", i), DecoderLayer(c)));
    norm = register_module("norm", RmsNorm(c.d_model, c.norm_eps));
    if (!c.tied_head)
      lm_head = register_module("lm_head", tvie::nn::Linear(c.d_model, c.vocab_size, /*with_bias=*/false));
    // Llama's initialisation: N(0, 0.02) for the embedding and every projection; RMSNorm weights 1.
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters())
      if (p.key().find("norm") == std::string::npos) p.value().normal_(0.0, 0.02);
  }
  // idx: [B, S] token ids -> logits [B, S, V]. With caches (decoding), idx holds positions pos .. pos + S - 1 and
  // the logits are the last position's: [B, 1, V].
  torch::Tensor forward(const torch::Tensor& idx, std::vector<GptLayerCache>* caches = nullptr, int64_t pos = 0) {
    auto x = embed->forward(idx);  // [B, S, h]
    for (size_t i = 0; i < layers.size(); ++i) {
      auto layer = layers[i];
      if (caches)
        x = layer->forward(x, &(*caches)[i], pos);
      else if (checkpoint_every > 0 && i % static_cast<size_t>(checkpoint_every) == 0 && is_training())
        x = tvie::checkpoint([layer](const torch::Tensor& in) mutable { return layer->forward(in); }, x);
      else
        x = layer->forward(x);  // [B, S, h]
    }
    if (caches) x = x.narrow(1, x.size(1) - 1, 1);  // decoding: the next token's position only, [B, 1, h]
    x = norm->forward(x);                           // [B, S, h]
    return lm_head ? lm_head->forward(x) : torch::nn::functional::linear(x, embed->weight);  // [B, S, V]
  }
  int64_t checkpoint_every = 0;
  torch::nn::Embedding embed{nullptr};
  std::vector<DecoderLayer> layers;
  RmsNorm norm{nullptr};
  tvie::nn::Linear lm_head{nullptr};
};

// DecoderLayerImpl::forward and LlamaImpl::forward on shapes (predict/forward_trace.hpp), for the activation
// prediction. Per layer, in tensors of [B, S, h] elements (kv = g*d, f = d_ff, fp32): attn_norm's fp32 input
// and normed tensor 2, q/k/v projections' input 1 (shared), rotated q 1, rotated and repeated k and v 2
// (the repeats are new tensors of a/g times the heads), the attention output 1, mlp_norm's 2, gate/up's input
// 1 (shared), SiLU's input, its output and up's output 3f/h, down's input f/h: 10 + 4f/h.
// The KV-cached forward (ActivationQuery::sequence_tokens > 0: a prefill or a decoding step) also writes the new
// keys and values into the layer's cache and attends to all its positions (repeated per query head, as the
// cached forward does: the repeat reads the whole cache each step).
trace::Sym trace_attention(trace::ForwardTrace& t, const LlamaConfig& c, const trace::Sym& x) {
  const int64_t B = t.batch(), S = zoo::sequence_positions(t.query(), c.context_length), h = c.d_model;
  const int64_t d = h / c.n_head, kv = c.n_kv_head * d, group = c.n_head / c.n_kv_head;
  const int64_t cached = t.query().sequence_tokens > 0 ? t.query().cached_tokens : 0;
  trace::Sym q, k, v;
  q = t.rotary(t.linear(x, h, c.n_head * d, false), S, d);  // [B, a, S, d]
  k = t.rotary(t.linear(x, h, kv, false), S, d);            // [B, g, S, d]
  v = t.linear(x, h, kv, false);                            // [B, g, S, d] (a view)
  if (t.query().sequence_tokens > 0) {                      // [B, g, cached + S, d], from the cache
    k = t.cache_append(k, B * cached * kv);
    v = t.cache_append(v, B * cached * kv);
  }
  if (group > 1) {  // repeat_interleave: [B, a, cached + S, d] copies
    k = t.repeat(k, group);
    v = t.repeat(v, group);
  }
  return t.linear(t.attention(q, k, v, B, c.n_head, S, /*causal=*/cached == 0, cached + S), c.n_head * d, h, false);
}

trace::Sym trace_layer(trace::ForwardTrace& t, const LlamaConfig& c, const trace::Sym& x_in) {
  const int64_t h = c.d_model;
  trace::Sym x;
  {
    const trace::ForwardTrace::Hold residual(t, x_in);
    x = t.add(x_in, trace_attention(t, c, t.rms_norm(x_in, h)));
  }
  const trace::ForwardTrace::Hold residual(t, x);
  // The normed input lives until the layer returns, through down's product and the residual sum, as it does in
  // the layer (and in Hugging Face's, whose MLP holds its argument): in inference that is one [B, S, h] tensor
  // more at down's scratch.
  const trace::Sym n = t.rms_norm(x, h);
  const size_t gate_first = t.ops_traced();
  size_t up_first = 0;
  int64_t gated_bytes = 0;
  trace::Sym m;
  {
    const trace::Sym gated = t.silu(t.linear(n, h, c.d_ff, false));  // [B, S, f]: the gate first, as the module runs it
    gated_bytes = gated.bytes();
    up_first = t.ops_traced();
    m = t.mul(gated, t.linear(n, h, c.d_ff, false));  // [B, S, f]
  }
  // Backward runs the up branch first (its nodes were created later): the product's gradient for the gate's branch
  // waits through up's backward, and up's gradient of the normed input through the gate branch's (LibTorch's
  // allocation events: without it llama tiny's checkpointed bf16 step at 4 threads is 10 KiB under; at 2 threads
  // down's larger scratch hides the wait).
  t.hold_input_gradient(up_first, up_first + 1, gated_bytes);
  t.hold_input_gradient(gate_first, up_first, n.bytes());
  return t.add(x, t.linear(m, c.d_ff, h, false));
}

trace::Sym trace_llama(trace::ForwardTrace& t, const LlamaConfig& c) {
  const int64_t B = t.batch(), S = zoo::sequence_positions(t.query(), c.context_length), h = c.d_model;
  trace::Sym idx = t.input(B * S, 8);
  idx.dims = 2;
  trace::Sym x = t.embedding(idx, h, c.vocab_size, c.tied_head);
  for (int64_t i = 0; i < c.n_layer; ++i) {
    if (t.query().checkpoint_every > 0 && i % t.query().checkpoint_every == 0)
      x = t.checkpoint(x, [&](const trace::Sym& in) { return trace_layer(t, c, in); });
    else
      x = trace_layer(t, c, x);
  }
  if (t.query().sequence_tokens > 0) x = trace::view(x, B * h);  // the cached forward: the last position only
  x = t.rms_norm(x, h);
  return t.linear(x, h, c.vocab_size, false, "linear (head)", c.tied_head);  // [B, S, V]
}

using LlamaWorkload = zoo::LanguageModelWorkload<LlamaImpl, LlamaConfig, trace_llama>;

}  // namespace

std::unique_ptr<Workload> make_llama_workload(const LlamaConfig& config, std::string label) {
  return std::make_unique<LlamaWorkload>(config, std::move(label));
}

std::optional<LlamaConfig> llama_config_of(const Workload& workload) {
  if (const auto* llama = dynamic_cast<const LlamaWorkload*>(&workload)) return llama->config();
  return std::nullopt;
}

int64_t llama_kv_cache_bytes(const LlamaConfig& c, int64_t batch, int64_t max_length, int64_t bytes_per_element) {
  return 2 * c.n_layer * batch * max_length * c.n_kv_head * (c.d_model / c.n_head) * bytes_per_element;
}

namespace zoo {

std::unique_ptr<KvDecoder> llama_decoder(const LlamaConfig& c, std::shared_ptr<torch::nn::Module> module, int64_t batch,
                                         int64_t max_length) {
  // The cache in the dtype the layers compute in (an int8 copy keeps fp32 embeddings and activations), of its g
  // key/value heads only (grouped-query attention repeats them at use); rotary positions continue from `position`.
  const torch::Tensor weight = dynamic_cast<LlamaImpl&>(*module).embed->weight;
  const CacheShape shape{c.n_layer,
                         batch,
                         c.n_kv_head,
                         c.d_model / c.n_head,
                         max_length,
                         c.context_length,
                         "the context the preset is built for"};
  return module_decoder<LlamaImpl>(std::move(module), shape, weight);
}

}  // namespace zoo

bool has_kv_decoder(const Workload& workload) {
  return gpt_config_of(workload).has_value() || llama_config_of(workload).has_value();
}

void require_kv_decoder(const Workload& workload) {
  if (!has_kv_decoder(workload))
    throw InvalidArgument("model", workload.name(), "a zoo gpt or llama (decoding needs a KV-cached forward)");
}

std::unique_ptr<KvDecoder> make_kv_decoder(const Workload& workload, std::shared_ptr<torch::nn::Module> module,
                                           int64_t batch, int64_t max_length) {
  if (const auto gpt = gpt_config_of(workload)) return zoo::gpt_decoder(*gpt, std::move(module), batch, max_length);
  if (const auto llama = llama_config_of(workload))
    return zoo::llama_decoder(*llama, std::move(module), batch, max_length);
  throw InvalidArgument("model", workload.name(), "a zoo gpt or llama (decoding needs a KV-cached forward)");
}

int64_t kv_cache_bytes(const Workload& workload, int64_t batch, int64_t max_length, int64_t bytes_per_element) {
  if (const auto gpt = gpt_config_of(workload)) return gpt_kv_cache_bytes(*gpt, batch, max_length, bytes_per_element);
  if (const auto llama = llama_config_of(workload))
    return llama_kv_cache_bytes(*llama, batch, max_length, bytes_per_element);
  throw InvalidArgument("model", workload.name(), "a zoo gpt or llama (decoding needs a KV-cached forward)");
}

}  // namespace tvie
