// The model zoo: mlp, cnn (small ResNet with BatchNorm), gpt (decoder-only transformer), and real
// architectures at their published sizes: resnet (ResNet-18/50), bert (BERT base/large with the MLM head),
// llama (Llama 3.2 1B, Llama 3 8B/70B). Each has size presets (a "tiny" one that trains in CPU seconds), an
// analytic parameter count and forward FLOPs per sample, and is a Workload on synthetic data of a fixed seed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tvie/slices.hpp>
#include <tvie/workload.hpp>

namespace tvie {

// --- mlp: Linear(in, hidden) -> ReLU -> ... -> Linear(hidden, classes); classification of random features.
struct MlpConfig {
  int64_t input_features = 64;
  int64_t hidden_features = 128;
  int64_t hidden_layers = 2;  // Linear+ReLU layers before the output Linear
  int64_t classes = 10;
};
int64_t parameter_count(const MlpConfig& config);
double forward_flops_per_sample(const MlpConfig& config);

// --- cnn: ResNet-style. stem conv3x3 -> BN -> ReLU, then `stages` stages of `blocks_per_stage` basic
// blocks (channels double and resolution halves per stage), global average pool, Linear(classes).
struct CnnConfig {
  int64_t image_size = 16;  // H = W
  int64_t in_channels = 3;
  int64_t width = 8;  // channels of the stem and the first stage
  int64_t stages = 2;
  int64_t blocks_per_stage = 1;
  int64_t classes = 10;
};
int64_t parameter_count(const CnnConfig& config);
int64_t buffer_bytes(const CnnConfig& config);  // BatchNorm running mean/var (fp32) + num_batches_tracked (int64)
double forward_flops_per_sample(const CnnConfig& config);

// --- gpt: GPT-2 architecture. token + position embedding, n_layer pre-LayerNorm blocks of causal
// self-attention (scaled_dot_product_attention) and a 4x GELU MLP, final LayerNorm, LM head tied to the
// token embedding (or untied).
struct GptConfig {
  int64_t vocab_size = 256;
  int64_t context_length = 32;  // sequence length of every sample
  int64_t n_layer = 2;
  int64_t d_model = 64;
  int64_t n_head = 4;
  bool tied_head = true;
};
// V*h + S*h + L*(12h^2 + 13h) + 2h, plus V*h when the head is untied.
int64_t parameter_count(const GptConfig& config);
// Per sequence of S tokens: L*(24*S*h^2 + 4*S^2*h) + 2*S*h*V (attention counted as dense, not causal-halved).
double forward_flops_per_sample(const GptConfig& config);

// --- resnet: torchvision's ResNet (v1.5). conv 7x7/2 -> BN -> ReLU -> max pool 3x3/2, four stages of
// basic (3x3, 3x3) or bottleneck (1x1, 3x3 strided, 1x1 x4) blocks with BatchNorm, the first block of
// stages 2-4 strided with a 1x1 projection shortcut; global average pool; Linear(classes).
struct ResnetConfig {
  int64_t image_size = 224;  // H = W
  int64_t in_channels = 3;
  int64_t width = 64;                          // stem channels; stage i has width * 2^i planes
  std::vector<int64_t> blocks = {3, 4, 6, 3};  // blocks per stage
  bool bottleneck = true;                      // bottleneck blocks (expansion 4) or basic ones (expansion 1)
  int64_t classes = 1000;
};
// Sum over convolutions of cin * cout * k^2 (no biases) + 2 per BatchNorm channel + the classifier.
int64_t parameter_count(const ResnetConfig& config);
int64_t buffer_bytes(const ResnetConfig& config);  // BatchNorm running mean/var (fp32) + num_batches_tracked
// Sum over convolutions of 2 * cin * k^2 * cout * H_out * W_out + 2 * C * classes.
double forward_flops_per_sample(const ResnetConfig& config);

// --- bert: BERT (Hugging Face's BertForMaskedLM): word + position + token-type embeddings and LayerNorm,
// n_layer post-LayerNorm encoder layers (bidirectional attention, erf GELU FFN), MLM head (dense, GELU,
// LayerNorm, decoder tied to the word embedding with its own bias). No pooler: the MLM loss does not use it.
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t max_positions = 512;
  int64_t type_vocab_size = 2;
  int64_t seq_len = 128;  // tokens of every sample (<= max_positions)
  int64_t n_layer = 12;
  int64_t d_model = 768;
  int64_t n_head = 12;
  int64_t d_ff = 3072;
};
// (V + P + T)h + 2h + L(4h^2 + 2hf + f + 9h) + h^2 + 3h + V.
int64_t parameter_count(const BertConfig& config);
// Per sequence of S tokens: L(8Sh^2 + 4Shf + 4S^2h) + 2Sh^2 + 2ShV (the head over every position).
double forward_flops_per_sample(const BertConfig& config);

// --- llama: Llama 3. Token embedding, n_layer pre-norm decoder layers (RMSNorm; attention with rotary
// positions and n_kv_head key/value heads shared by n_head query heads; SwiGLU MLP), final RMSNorm, output
// head (untied in 8B/70B, tied in 3.2 1B). No biases.
struct LlamaConfig {
  int64_t vocab_size = 128256;
  int64_t context_length = 128;  // tokens of every sample
  int64_t n_layer = 32;
  int64_t d_model = 4096;
  int64_t n_head = 32;
  int64_t n_kv_head = 8;
  int64_t d_ff = 14336;
  bool tied_head = false;
  double rope_theta = 500000;
  double norm_eps = 1e-5;
};
// Vh + L(2h^2 + 2h*kv + 3hf + 2h) + h (+ Vh untied), kv = n_kv_head * h / n_head.
int64_t parameter_count(const LlamaConfig& config);
// Per sequence of S tokens: L(2S(2h^2 + 2h*kv) + 6Shf + 4S^2h) + 2ShV.
double forward_flops_per_sample(const LlamaConfig& config);

// Bytes a checkpointed gpt block stops keeping for backward, at least: the inputs of its four Linear
// layers (h, h, h and 4h per token) and of its GELU (4h): 11 * B * S * h elements. (It keeps only its
// input, which it held anyway as the first LayerNorm's input; attention's and LayerNorm's own saved
// tensors come on top, so the real saving is larger.)
int64_t gpt_checkpoint_saving_lower_bound(const GptConfig& config, int64_t batch, int64_t bytes_per_element);

// KV-cache bytes for decoding: keys and values of every layer, 2 * L * B * S_max * h elements.
int64_t gpt_kv_cache_bytes(const GptConfig& config, int64_t batch, int64_t max_length, int64_t bytes_per_element);

// KV-cache bytes of llama: keys and values of its g = n_kv_head heads only (grouped-query attention shares
// each among a/g query heads): 2 * L * B * S_max * g * d elements, a/g times fewer than gpt's layout would keep.
int64_t llama_kv_cache_bytes(const LlamaConfig& config, int64_t batch, int64_t max_length, int64_t bytes_per_element);

// One layer's KV cache: keys and values of every position so far, [B, heads, S_max, d] each (gpt: a heads;
// llama: its g key/value heads).
struct GptLayerCache {
  torch::Tensor k, v;
  // A fixed-shape decoding step (CachedDecoder::fix_step_shapes), the same two tensors in every layer's cache:
  // `position` [1] int64, the step's position, and `visible` [1, 1, 1, S_max] bool, the positions up to it. The new
  // key and value go to `position`, and the query attends to all S_max positions, those after it masked: the
  // kernels and their shapes are the same at every step, as a CUDA graph needs. Undefined: the shapes follow the
  // position (pos + S positions attended, no mask for a single query).
  torch::Tensor position, visible;
};

// KV-cached decoding: prefill() runs the prompt and fills the caches; step() runs one new token per sequence,
// attending to the cached keys and values instead of recomputing the whole sequence. Call under InferenceMode.
class KvDecoder {
 public:
  virtual ~KvDecoder() = default;
  virtual torch::Tensor prefill(const torch::Tensor& prompt) = 0;  // [B, P] token ids -> next-token logits [B, V]
  virtual torch::Tensor step(const torch::Tensor& tokens) = 0;     // [B] token ids -> next-token logits [B, V]
  virtual int64_t length() const = 0;                              // positions in the cache
  virtual int64_t cache_bytes() const = 0;                         // bytes of the cache tensors
};

// KV-cached decoding over a model's cached forward: forward(tokens [B, n], caches, position) -> logits [B, 1, V],
// the forward of the new tokens at positions position .. position + n - 1, attending to the caches and writing
// their keys and values into them; the head runs on the last position only (the next token's logits are all
// decoding needs: a prompt's [B, n, V] logits would be the prefill's largest tensor). make_kv_decoder makes one
// for the zoo's gpt and llama.
class CachedDecoder final : public KvDecoder {
 public:
  using Forward =
      std::function<torch::Tensor(const torch::Tensor& tokens, std::vector<GptLayerCache>* caches, int64_t position)>;
  // `caches`: one pair per layer of [B, heads, max_length, d] each.
  CachedDecoder(Forward forward, std::vector<GptLayerCache> caches, int64_t max_length);
  torch::Tensor prefill(const torch::Tensor& prompt) override;
  torch::Tensor step(const torch::Tensor& tokens) override;
  int64_t length() const override { return length_; }
  int64_t cache_bytes() const override;

  // From now on every step() runs at fixed shapes (GptLayerCache::position): it copies the tokens into a static
  // [B, 1] buffer and its position into a static [1] tensor, then runs the step's runner, by default
  // fixed_forward(). The prefill keeps its own shapes.
  void fix_step_shapes();
  // The fixed-shape step on the static buffers: the next-token logits [B, V]. A CUDA graph captures it once
  // (decode --cuda-graph) and set_step_runner() replaces it by the graph's replay.
  torch::Tensor fixed_forward();
  void set_step_runner(std::function<torch::Tensor()> runner) { runner_ = std::move(runner); }

 private:
  torch::Tensor advance(const torch::Tensor& tokens);  // [B, n] -> [B, V]
  Forward forward_;
  std::vector<GptLayerCache> caches_;
  std::vector<GptLayerCache> fixed_caches_;  // caches_' tensors with position and visible (fix_step_shapes)
  torch::Tensor tokens_, positions_;         // static step inputs [B, 1] and [S_max] (0 .. S_max - 1)
  std::function<torch::Tensor()> runner_;
  int64_t max_length_;
  int64_t length_ = 0;
};

// Zoo access. Names: model_names(); presets per model: preset_names(model).
std::vector<std::string> model_names();
std::vector<std::string> preset_names(const std::string& model);
MlpConfig mlp_preset(const std::string& preset);
CnnConfig cnn_preset(const std::string& preset);
GptConfig gpt_preset(const std::string& preset);
ResnetConfig resnet_preset(const std::string& preset);
BertConfig bert_preset(const std::string& preset);
LlamaConfig llama_preset(const std::string& preset);
// One line: where a preset's figures come from ("torchvision resnet50: 25,557,032 parameters").
std::string preset_source(const std::string& model, const std::string& preset);

std::unique_ptr<Workload> make_mlp_workload(const MlpConfig& config, std::string label = "mlp");
std::unique_ptr<Workload> make_cnn_workload(const CnnConfig& config, std::string label = "cnn");
std::unique_ptr<Workload> make_gpt_workload(const GptConfig& config, std::string label = "gpt");
std::unique_ptr<Workload> make_resnet_workload(const ResnetConfig& config, std::string label = "resnet");
std::unique_ptr<Workload> make_bert_workload(const BertConfig& config, std::string label = "bert");
std::unique_ptr<Workload> make_llama_workload(const LlamaConfig& config, std::string label = "llama");
// The configuration of a workload made by make_gpt_workload (decoding needs it); nullopt for any other.
std::optional<GptConfig> gpt_config_of(const Workload& workload);
std::optional<LlamaConfig> llama_config_of(const Workload& workload);

// Whether `workload` has a KV-cached forward to generate with (a zoo gpt or llama); require_kv_decoder throws
// InvalidArgument("model", ...) when it has none.
bool has_kv_decoder(const Workload& workload);
void require_kv_decoder(const Workload& workload);
// The KV-cached decoder of a zoo gpt or llama workload's module (made by its make_module(), any dtype/device), for
// `batch` sequences of up to `max_length` positions; InvalidArgument("model", ...) for any other workload.
std::unique_ptr<KvDecoder> make_kv_decoder(const Workload& workload, std::shared_ptr<torch::nn::Module> module,
                                           int64_t batch, int64_t max_length);
// Its cache's bytes, predicted (gpt_kv_cache_bytes, llama_kv_cache_bytes); InvalidArgument as make_kv_decoder.
int64_t kv_cache_bytes(const Workload& workload, int64_t batch, int64_t max_length, int64_t bytes_per_element);
// A preset's shape replaced (0 or empty: the preset's). Throws InvalidArgument("model.<field>", ...) for a model
// without the dimension or a value out of range.
struct ModelShape {
  int64_t seq_tokens = 0;  // tokens per sample of the sequence models (gpt, llama: context_length; bert: seq_len,
                           // at most its max_positions)
  int64_t layers = 0;      // gpt, bert, llama: blocks (a slice of the model at its real width; embeddings, head and
                           // final norm as in the preset)
  int64_t vocab = 0;       // gpt, bert, llama: vocabulary entries (a vocabulary slice: embedding and head rows)
  // gpt, bert, llama: the vocabulary padded up to a multiple of this (0: as published). 64 makes GPT-2's 50,257
  // entries 50,304, as nanoGPT and llm.c train it: the head's GEMM then tiles evenly on a GPU's tensor cores. The
  // padded entries are ordinary rows of the embedding and the head (the data may draw them).
  int64_t vocab_multiple = 0;
  std::vector<int64_t> stage_blocks;  // resnet: blocks per stage (a stage slice; as many stages as the preset)
};
// Throws InvalidArgument("model"/"preset", ...) for unknown names.
std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset,
                                            const ModelShape& shape);
// The same with sequence length and block count only.
std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset, int64_t seq_tokens = 0,
                                            int64_t layers = 0);

// A zoo workload's name read back: make_zoo_workload(model, preset, shape)->name() is "model/preset" followed by
// one "(...)" per shape field set ("gpt/tiny (seq 16)", "gpt/gpt2-small (vocabulary 50,304: 50,257 padded to a
// multiple of 64)"). zoo_spec_of_name inverts it; nullopt for a name no zoo workload carries (a TorchScript model's,
// a user's). What rebuilds a model from a report or from a workload alone (`plan --from`, `plan --measure-layers`).
struct ZooSpec {
  std::string model;
  std::string preset;
  ModelShape shape;
};
std::optional<ZooSpec> zoo_spec_of_name(const std::string& name);

// The slices of a zoo preset (tvie/slices.hpp): gpt, bert, llama along their blocks (K1, K2) and, with
// settings.vocab_1 > 0, their vocabulary (V1, V2); resnet along the blocks of each stage that has more than K1
// (min(K1, n) and min(K2, n) blocks of a stage of n). `seq_tokens` as in ModelShape. InvalidArgument
// ("slices.layers" / "slices.vocab", ...) for a model without such axes or values out of range.
SliceSource zoo_slices(const std::string& model, const std::string& preset, int64_t seq_tokens,
                       const SliceSettings& settings);

}  // namespace tvie
