// The model zoo: mlp, cnn (small ResNet with BatchNorm), gpt (decoder-only transformer).
// Each has size presets, an analytic parameter count and forward FLOPs per sample, and is a Workload
// on synthetic data of a fixed seed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

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

// Bytes a checkpointed gpt block stops keeping for backward, at least: the inputs of its four Linear
// layers (h, h, h and 4h per token) and of its GELU (4h): 11 * B * S * h elements. (It keeps only its
// input, which it held anyway as the first LayerNorm's input; attention's and LayerNorm's own saved
// tensors come on top, so the real saving is larger.)
int64_t gpt_checkpoint_saving_lower_bound(const GptConfig& config, int64_t batch, int64_t bytes_per_element);

// KV-cache bytes for decoding: keys and values of every layer, 2 * L * B * S_max * h elements.
int64_t gpt_kv_cache_bytes(const GptConfig& config, int64_t batch, int64_t max_length, int64_t bytes_per_element);

// One layer's KV cache: keys and values of every position so far, [B, a, S_max, d] each.
struct GptLayerCache {
  torch::Tensor k, v;
};

// KV-cached decoding with a module made by make_gpt_workload(config)->make_module() (any dtype/device):
// prefill() runs the prompt and fills the caches; step() runs one new token per sequence, attending to
// the cached keys and values instead of recomputing the whole sequence. Call under InferenceMode.
class GptDecoder {
 public:
  GptDecoder(const GptConfig& config, std::shared_ptr<torch::nn::Module> module, int64_t batch, int64_t max_length);
  torch::Tensor prefill(const torch::Tensor& prompt);  // [B, P] token ids -> next-token logits [B, V]
  torch::Tensor step(const torch::Tensor& tokens);     // [B] token ids -> next-token logits [B, V]
  int64_t length() const { return length_; }           // positions in the cache
  int64_t cache_bytes() const;                         // bytes of the cache tensors

 private:
  torch::Tensor advance(const torch::Tensor& tokens);  // [B, n]
  GptConfig config_;
  std::shared_ptr<torch::nn::Module> module_;
  int64_t max_length_;
  int64_t length_ = 0;
  std::vector<GptLayerCache> caches_;
};

// Zoo access. Names: model_names(); presets per model: preset_names(model).
std::vector<std::string> model_names();
std::vector<std::string> preset_names(const std::string& model);
MlpConfig mlp_preset(const std::string& preset);
CnnConfig cnn_preset(const std::string& preset);
GptConfig gpt_preset(const std::string& preset);

std::unique_ptr<Workload> make_mlp_workload(const MlpConfig& config, std::string label = "mlp");
std::unique_ptr<Workload> make_cnn_workload(const CnnConfig& config, std::string label = "cnn");
std::unique_ptr<Workload> make_gpt_workload(const GptConfig& config, std::string label = "gpt");
// The configuration of a workload made by make_gpt_workload (decoding needs it); nullopt for any other.
std::optional<GptConfig> gpt_config_of(const Workload& workload);
// Throws InvalidArgument("model"/"preset", ...) for unknown names.
std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset);

}  // namespace tvie
