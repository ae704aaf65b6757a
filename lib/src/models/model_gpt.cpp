// gpt: a decoder-only transformer with GPT-2's architecture, on random token sequences (next-token loss).
//
// Notation in the shape comments: B batch, S sequence (context_length), h d_model, a n_head,
// d = h / a (head size), V vocab_size.
#include "core/compat.hpp"
#include "models/zoo_common.hpp"
#include <tvie/checkpoint.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {

int64_t parameter_count(const GptConfig& c) {
  const int64_t h = c.d_model;
  // Per block: c_attn 3h^2 + 3h, attn c_proj h^2 + h, mlp c_fc 4h^2 + 4h, mlp c_proj 4h^2 + h,
  // two LayerNorms 4h: 12h^2 + 13h.
  const int64_t per_block = 12 * h * h + 13 * h;
  int64_t n = c.vocab_size * h + c.context_length * h + c.n_layer * per_block + 2 * h;  // + final LayerNorm
  if (!c.tied_head) n += c.vocab_size * h;
  return n;
}

double forward_flops_per_sample(const GptConfig& c) {
  const double s = static_cast<double>(c.context_length), h = static_cast<double>(c.d_model);
  // Per block: QKV 6sh^2, projection 2sh^2, MLP 16sh^2 (= 24sh^2), attention scores and weighted sum 4s^2h.
  const double per_block = 24.0 * s * h * h + 4.0 * s * s * h;
  return static_cast<double>(c.n_layer) * per_block + 2.0 * s * h * static_cast<double>(c.vocab_size);  // + logits
}

int64_t gpt_checkpoint_saving_lower_bound(const GptConfig& c, int64_t batch, int64_t bytes_per_element) {
  return 11 * batch * c.context_length * c.d_model * bytes_per_element;
}

int64_t gpt_kv_cache_bytes(const GptConfig& c, int64_t batch, int64_t max_length, int64_t bytes_per_element) {
  return 2 * c.n_layer * batch * max_length * c.d_model * bytes_per_element;  // keys and values, every layer
}

namespace {

struct CausalSelfAttentionImpl : torch::nn::Module {
  explicit CausalSelfAttentionImpl(const GptConfig& c)
      : n_head(c.n_head),
        c_attn(register_module("c_attn", tvie::nn::Linear(c.d_model, 3 * c.d_model))),
        c_proj(register_module("c_proj", tvie::nn::Linear(c.d_model, c.d_model))) {}
  // x: [B, S, h] -> [B, S, h]. With a cache (decoding), x holds the S new positions pos .. pos+S-1: their
  // keys and values are written into the cache, and they attend to every cached position up to their own.
  torch::Tensor forward(const torch::Tensor& x, GptLayerCache* cache = nullptr, int64_t pos = 0) {
    const int64_t B = x.size(0), S = x.size(1), h = x.size(2), d = h / n_head;
    auto qkv = c_attn->forward(x).split(h, /*dim=*/2);        // 3 x [B, S, h]
    auto q = qkv[0].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
    auto k = qkv[1].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
    auto v = qkv[2].view({B, S, n_head, d}).transpose(1, 2);  // [B, a, S, d]
    torch::Tensor y;
    if (cache && cache->position.defined()) {       // a fixed-shape step: S = 1, at cache->position
      cache->k.index_copy_(2, cache->position, k);  // cache: [B, a, S_max, d]
      cache->v.index_copy_(2, cache->position, v);
      y = at::scaled_dot_product_attention(q, cache->k, cache->v, cache->visible);  // [B, a, 1, d]
      y = y.transpose(1, 2).contiguous().view({B, S, h});
      return c_proj->forward(y);
    }
    if (cache) {
      cache->k.narrow(2, pos, S).copy_(k);  // cache: [B, a, S_max, d]
      cache->v.narrow(2, pos, S).copy_(v);
      k = cache->k.narrow(2, 0, pos + S);  // [B, a, pos + S, d]
      v = cache->v.narrow(2, 0, pos + S);
    }
    if (pos == 0) {  // no earlier positions: plain causal attention
      y = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    } else if (S == 1) {  // one new position sees every cached one: no mask, which would keep SDPA off its fused
      // (flash, memory-efficient) kernels on CUDA
      y = at::scaled_dot_product_attention(q, k, v);
    } else {  // new position i (absolute pos + i) sees positions 0 .. pos + i
      const auto mask =
          torch::ones({S, pos + S}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).tril(pos);
      y = at::scaled_dot_product_attention(q, k, v, mask);
    }                                                    // [B, a, S, d]
    y = y.transpose(1, 2).contiguous().view({B, S, h});  // [B, S, h]
    return c_proj->forward(y);                           // [B, S, h]
  }
  int64_t n_head;
  tvie::nn::Linear c_attn, c_proj;
};
TORCH_MODULE(CausalSelfAttention);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const GptConfig& c)
      : ln_1(register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))),
        attn(register_module("attn", CausalSelfAttention(c))),
        ln_2(register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))),
        c_fc(register_module("c_fc", tvie::nn::Linear(c.d_model, 4 * c.d_model))),
        c_proj(register_module("c_proj", tvie::nn::Linear(4 * c.d_model, c.d_model))) {}
  // x: [B, S, h] -> [B, S, h] (pre-LayerNorm residual block); cache and pos as in attention.
  torch::Tensor forward(torch::Tensor x, GptLayerCache* cache = nullptr, int64_t pos = 0) {
    x = x + attn->forward(ln_1->forward(x), cache, pos);                            // [B, S, h]
    auto m = torch::gelu(c_fc->forward(ln_2->forward(x)), /*approximate=*/"tanh");  // [B, S, 4h]
    return x + c_proj->forward(m);                                                  // [B, S, h]
  }
  torch::nn::LayerNorm ln_1;
  CausalSelfAttention attn;
  torch::nn::LayerNorm ln_2;
  tvie::nn::Linear c_fc, c_proj;
};
TORCH_MODULE(Block);

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const GptConfig& c) : config(c) {
    wte = register_module("wte", torch::nn::Embedding(c.vocab_size, c.d_model));      // [V, h]
    wpe = register_module("wpe", torch::nn::Embedding(c.context_length, c.d_model));  // [S, h]
    for (int64_t i = 0; i < c.n_layer; ++i) blocks.push_back(register_module(cat("h", i), Block(c)));
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
    if (!c.tied_head)
      lm_head = register_module("lm_head", tvie::nn::Linear(c.d_model, c.vocab_size, /*with_bias=*/false));
    // GPT-2's initialisation: N(0, 0.02) for embeddings and linear weights, zeros for biases.
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      if (p.key().find("ln_") != std::string::npos) continue;  // LayerNorm keeps weight 1, bias 0
      if (p.key().size() > 5 && p.key().substr(p.key().size() - 5) == ".bias")
        p.value().zero_();
      else
        p.value().normal_(0.0, 0.02);
    }
  }
  // idx: [B, S] token ids -> logits [B, S, V]. With caches (decoding), idx holds positions pos ..
  // pos+S-1, each block reads and extends its layer's cache, and the logits are the last position's: [B, 1, V].
  torch::Tensor forward(const torch::Tensor& idx, std::vector<GptLayerCache>* caches = nullptr, int64_t pos = 0) {
    const int64_t S = idx.size(1);
    // [B, S, h] + [S, h]; the positions [S] a temporary, gone once the embeddings are summed. In this order (the
    // trace's): backward runs the later one first, so the positions' gradient is written before the tokens'.
    torch::Tensor x;
    {
      const auto tokens = wte->forward(idx);  // [B, S, h]
      const bool fixed = caches && !caches->empty() && caches->front().position.defined();
      x = tokens + wpe->forward(fixed ? caches->front().position
                                      : torch::arange(pos, pos + S, idx.options().dtype(torch::kInt64)));
    }
    for (size_t i = 0; i < blocks.size(); ++i) {  // [B, S, h]
      auto block = blocks[i];                     // a module holder: shares the block
      if (caches)
        x = block->forward(x, &(*caches)[i], pos);
      else if (checkpoint_every > 0 && i % static_cast<size_t>(checkpoint_every) == 0 && is_training())
        // Keep only the block's input; recompute the block during backward.
        x = tvie::checkpoint([block](const torch::Tensor& in) mutable { return block->forward(in); }, x);
      else
        x = block->forward(x);
    }
    if (caches) x = x.narrow(1, S - 1, 1);  // decoding: the next token's position only, [B, 1, h]
    x = ln_f->forward(x);                   // [B, S, h]
    // Tied head: logits = x @ wte^T, so the token embedding is also the output projection.
    return lm_head ? lm_head->forward(x) : torch::nn::functional::linear(x, wte->weight);  // [B, S, V]
  }
  GptConfig config;
  int64_t checkpoint_every = 0;  // activation checkpointing of blocks 0, k, 2k, ...; 0: off
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm ln_f{nullptr};
  tvie::nn::Linear lm_head{nullptr};
};

// BlockImpl::forward and GptImpl::forward on shapes (predict/forward_trace.hpp): what each op saves for
// backward, for the activation prediction. Per block, in tensors of [B, S, h] elements: ln_1's input 1
// (+ 2 row statistics), c_attn's input 1, q/k/v 3 (views of c_attn's output), the attention output 1
// (+ its log-sum-exp [B, a, S]), ln_2's input 1, c_fc's input 1, GELU's input 4, c_proj's input 4: 16 per
// block. The cross-check: Korthikanti et al. (2022) count 34sbh + 5as^2b bytes per layer for 2-byte
// activations; without their two dropout masks (2sbh) and with the flash kernel's log-sum-exp in place of
// the attention matrix (5as^2b), that is 32sbh bytes = 16 tensors of s*b*h 2-byte elements. amp adds the
// 2-byte copies of the fp32 LayerNorm outputs the linears take and of the weights (forward_trace.hpp).
// The KV-cached forward (ActivationQuery::sequence_tokens > 0: a prefill or a decoding step) also writes each
// block's new keys and values into its cache, and attends to the cache's positions.
trace::Sym trace_block(trace::ForwardTrace& t, const GptConfig& c, const trace::Sym& x_in) {
  const int64_t B = t.batch(), S = zoo::sequence_positions(t.query(), c.context_length), h = c.d_model;
  const int64_t cached = t.query().cached_tokens, d = h / c.n_head;
  trace::Sym x;
  {
    const trace::ForwardTrace::Hold residual(t, x_in);
    const trace::Sym normed = t.layer_norm(x_in, h);
    trace::Sym projected;
    {
      const trace::Sym qkv = t.linear(normed, h, 3 * h, true);  // [B, S, 3h]; q, k, v are views of it
      const trace::Sym part = trace::view(qkv, B * S * h);
      trace::Sym attended;
      if (t.query().sequence_tokens > 0) {  // [B, a, cached + S, d] each, from the cache
        const trace::Sym k = t.cache_append(part, B * c.n_head * cached * d);
        const trace::Sym v = t.cache_append(part, B * c.n_head * cached * d);
        attended = t.attention(part, k, v, B, c.n_head, S, /*causal=*/cached == 0, cached + S);
      } else {
        attended = t.attention(part, part, part, B, c.n_head, S, /*causal=*/true);
      }
      projected = t.linear(attended, h, h, true);
    }
    x = t.add(x_in, projected);
  }
  const trace::ForwardTrace::Hold residual(t, x);
  const trace::Sym m = t.gelu(t.linear(t.layer_norm(x, h), h, 4 * h, true));  // [B, S, 4h]
  return t.add(x, t.linear(m, 4 * h, h, true));
}

trace::Sym trace_gpt(trace::ForwardTrace& t, const GptConfig& c) {
  const int64_t B = t.batch(), S = zoo::sequence_positions(t.query(), c.context_length), h = c.d_model;
  trace::Sym idx = t.input(B * S, 8);
  idx.dims = 2;
  trace::Sym x;
  {
    // The tokens' embedding first, then the positions' (as the module runs them: backward reverses the order). A
    // tied embedding's gradient is first written by the head (backward runs it first).
    const trace::Sym tokens = t.embedding(idx, h, c.vocab_size, c.tied_head);
    trace::Sym positions = t.index_tensor(S);
    positions.dims = 1;
    x = t.add(tokens, t.embedding(positions, h, c.context_length));
  }
  for (int64_t i = 0; i < c.n_layer; ++i) {
    if (t.query().checkpoint_every > 0 && i % t.query().checkpoint_every == 0)
      x = t.checkpoint(x, [&](const trace::Sym& in) { return trace_block(t, c, in); });
    else
      x = trace_block(t, c, x);
  }
  if (t.query().sequence_tokens > 0) x = trace::view(x, B * h);  // the cached forward: the last position only
  x = t.layer_norm(x, h);
  return t.linear(x, h, c.vocab_size, false, "linear (head)", c.tied_head);  // [B, S, V]
}

using GptWorkload = zoo::LanguageModelWorkload<GptImpl, GptConfig, trace_gpt>;

}  // namespace

CachedDecoder::CachedDecoder(Forward forward, std::vector<GptLayerCache> caches, int64_t max_length)
    : forward_(std::move(forward)), caches_(std::move(caches)), max_length_(max_length) {}

torch::Tensor CachedDecoder::prefill(const torch::Tensor& prompt) {
  length_ = 0;
  return advance(prompt);
}

torch::Tensor CachedDecoder::step(const torch::Tensor& tokens) {
  if (fixed_caches_.empty()) return advance(tokens.view({-1, 1}));
  if (length_ + 1 > max_length_)
    throw InvalidArgument("decode.tokens", std::to_string(length_ + 1), cat("at most ", max_length_, " positions"));
  tokens_.copy_(tokens.view({-1, 1}), /*non_blocking=*/true);
  fixed_caches_.front().position.fill_(length_);
  auto logits = runner_ ? runner_() : fixed_forward();  // [B, V]
  ++length_;
  return logits;
}

torch::Tensor CachedDecoder::advance(const torch::Tensor& tokens) {
  const int64_t n = tokens.size(1);
  if (length_ + n > max_length_)
    throw InvalidArgument("decode.tokens", std::to_string(length_ + n), cat("at most ", max_length_, " positions"));
  auto logits = forward_(tokens, &caches_, length_);  // [B, 1, V]: the last position's
  length_ += n;
  return logits.select(1, 0);  // the next-token logits: [B, V]
}

void CachedDecoder::fix_step_shapes() {
  if (caches_.empty() || !fixed_caches_.empty()) return;
  const auto& k = caches_.front().k;  // [B, heads, S_max, d]
  const auto ids = k.options().dtype(torch::kInt64);
  tokens_ = torch::zeros({k.size(0), 1}, ids);
  positions_ = torch::arange(max_length_, ids);
  const auto position = torch::zeros({1}, ids);
  const auto visible = torch::zeros({1, 1, 1, max_length_}, ids.dtype(torch::kBool));
  for (const auto& c : caches_) fixed_caches_.push_back({c.k, c.v, position, visible});
}

torch::Tensor CachedDecoder::fixed_forward() {
  const auto& f = fixed_caches_.front();
  auto visible = f.visible.view({-1});  // [S_max]: positions 0 .. position
  at::le_out(visible, positions_, f.position);
  return forward_(tokens_, &fixed_caches_, 0).select(1, 0);  // [B, 1, V] -> [B, V]
}

int64_t CachedDecoder::cache_bytes() const {
  int64_t bytes = 0;
  for (const auto& c : caches_) bytes += static_cast<int64_t>(c.k.nbytes() + c.v.nbytes());
  return bytes;
}

namespace zoo {

std::unique_ptr<KvDecoder> cached_decoder(CachedDecoder::Forward forward, const CacheShape& shape,
                                          const torch::TensorOptions& options) {
  if (shape.max_length < 1 || shape.max_length > shape.context_length)
    throw InvalidArgument("decode.max_length", std::to_string(shape.max_length),
                          cat("1 .. ", shape.context_length, " (", shape.context_source, ")"));
  std::vector<GptLayerCache> caches;
  for (int64_t l = 0; l < shape.layers; ++l)  // [B, heads, S_max, d] each, in the dtype the layers compute in
    caches.push_back({torch::zeros({shape.batch, shape.heads, shape.max_length, shape.head_dim}, options),
                      torch::zeros({shape.batch, shape.heads, shape.max_length, shape.head_dim}, options)});
  return std::make_unique<CachedDecoder>(std::move(forward), std::move(caches), shape.max_length);
}

std::unique_ptr<KvDecoder> gpt_decoder(const GptConfig& c, std::shared_ptr<torch::nn::Module> module, int64_t batch,
                                       int64_t max_length) {
  const torch::Tensor weight = dynamic_cast<GptImpl&>(*module).wte->weight;
  // gpt caches every one of its a heads.
  const CacheShape shape{c.n_layer,
                         batch,
                         c.n_head,
                         c.d_model / c.n_head,
                         max_length,
                         c.context_length,
                         "the model's position embeddings"};
  return module_decoder<GptImpl>(std::move(module), shape, weight);
}

}  // namespace zoo

std::optional<GptConfig> gpt_config_of(const Workload& workload) {
  if (const auto* gpt = dynamic_cast<const GptWorkload*>(&workload)) return gpt->config();
  return std::nullopt;
}

std::unique_ptr<Workload> make_gpt_workload(const GptConfig& config, std::string label) {
  return std::make_unique<GptWorkload>(config, std::move(label));
}

}  // namespace tvie
