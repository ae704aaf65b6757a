// The zoo's presets and lookup by name.
#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>

namespace tvie {
namespace {

using detail::join;

[[noreturn]] void unknown_preset(const std::string& model, const std::string& preset) {
  throw InvalidArgument("preset", preset, cat(join(preset_names(model)), " (for ", model, ")"));
}

}  // namespace

std::vector<std::string> model_names() { return {"mlp", "cnn", "gpt"}; }

std::vector<std::string> preset_names(const std::string& model) {
  if (model == "mlp") return {"tiny", "small", "large"};
  if (model == "cnn") return {"tiny", "small", "resnet18-cifar"};
  if (model == "gpt") return {"tiny", "small", "gpt2-small"};
  throw InvalidArgument("model", model, join(model_names()));
}

MlpConfig mlp_preset(const std::string& preset) {
  if (preset == "tiny") return {64, 128, 2, 10};        // 25k parameters: trains in milliseconds on a CPU
  if (preset == "small") return {512, 1024, 4, 100};    // 3.8M parameters
  if (preset == "large") return {1024, 4096, 8, 1000};  // 126M parameters: a GPU workload
  unknown_preset("mlp", preset);
}

CnnConfig cnn_preset(const std::string& preset) {
  if (preset == "tiny") return {16, 3, 8, 2, 1, 10};             // 16x16 images, 8/16 channels
  if (preset == "small") return {32, 3, 16, 3, 1, 10};           // CIFAR-sized, 16/32/64 channels
  if (preset == "resnet18-cifar") return {32, 3, 64, 4, 2, 10};  // ResNet-18 layout on 32x32 (11M)
  unknown_preset("cnn", preset);
}

GptConfig gpt_preset(const std::string& preset) {
  if (preset == "tiny") return {256, 32, 2, 64, 4, true};               // 119k parameters
  if (preset == "small") return {4096, 128, 4, 256, 8, true};           // 4.2M parameters
  if (preset == "gpt2-small") return {50257, 1024, 12, 768, 12, true};  // GPT-2 small: 124,439,808 parameters
  unknown_preset("gpt", preset);
}

std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset) {
  const std::string label = model + "/" + preset;
  if (model == "mlp") return make_mlp_workload(mlp_preset(preset), label);
  if (model == "cnn") return make_cnn_workload(cnn_preset(preset), label);
  if (model == "gpt") return make_gpt_workload(gpt_preset(preset), label);
  throw InvalidArgument("model", model, join(model_names()));
}

}  // namespace tvie
