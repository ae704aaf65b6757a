// The zoo's presets and lookup by name.
#include <algorithm>
#include <map>
#include <optional>

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

// "1,234" -> 1234; nullopt unless digits with commas.
std::optional<int64_t> number_with_commas(const std::string& text) {
  std::string digits;
  for (char ch : text)
    if (ch != ',') digits += ch;
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(digits);
}

}  // namespace

std::optional<ZooSpec> zoo_spec_of_name(const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos) return std::nullopt;
  ZooSpec spec;
  spec.model = name.substr(0, slash);
  const auto models = model_names();
  if (std::find(models.begin(), models.end(), spec.model) == models.end()) return std::nullopt;
  std::string rest = name.substr(slash + 1);
  const auto first = rest.find(" (");
  spec.preset = rest.substr(0, first);
  const auto presets = preset_names(spec.model);
  if (std::find(presets.begin(), presets.end(), spec.preset) == presets.end()) return std::nullopt;
  rest = first == std::string::npos ? "" : rest.substr(first);
  // One " (...)" per field, in the order make_zoo_workload writes them.
  while (!rest.empty()) {
    if (rest.rfind(" (", 0) != 0) return std::nullopt;
    const auto close = rest.find(')');
    if (close == std::string::npos) return std::nullopt;
    const std::string part = rest.substr(2, close - 2);
    rest = rest.substr(close + 1);
    const auto words_after = [&](const std::string& prefix) -> std::optional<std::string> {
      if (part.rfind(prefix, 0) != 0) return std::nullopt;
      return part.substr(prefix.size());
    };
    if (const auto seq = words_after("seq ")) {
      const auto n = number_with_commas(*seq);
      if (!n) return std::nullopt;
      spec.shape.seq_tokens = *n;
    } else if (const auto stages = words_after("blocks per stage ")) {
      std::string item;
      for (size_t i = 0; i <= stages->size(); ++i) {
        if (i == stages->size() || (*stages)[i] == ',') {
          const auto n = number_with_commas(item);
          if (!n) return std::nullopt;
          spec.shape.stage_blocks.push_back(*n);
          item.clear();
        } else {
          item += (*stages)[i];
        }
      }
    } else if (const auto vocabulary = words_after("vocabulary ")) {
      // "V" (a vocabulary slice) or "P: V padded to a multiple of M"
      const auto colon = vocabulary->find(": ");
      if (colon == std::string::npos) {
        const auto n = number_with_commas(*vocabulary);
        if (!n) return std::nullopt;
        spec.shape.vocab = *n;
      } else {
        const std::string tail = vocabulary->substr(colon + 2);
        const std::string marker = " padded to a multiple of ";
        const auto at = tail.find(marker);
        if (at == std::string::npos) return std::nullopt;
        const auto multiple = number_with_commas(tail.substr(at + marker.size()));
        if (!multiple) return std::nullopt;
        spec.shape.vocab_multiple = *multiple;
      }
    } else {
      // "N block" / "N blocks"
      const auto space = part.find(' ');
      const std::string unit = space == std::string::npos ? "" : part.substr(space + 1);
      const auto n = number_with_commas(part.substr(0, space));
      if (!n || (unit != "block" && unit != "blocks")) return std::nullopt;
      spec.shape.layers = *n;
    }
  }
  return spec;
}

std::vector<std::string> model_names() { return {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}; }

std::vector<std::string> preset_names(const std::string& model) {
  if (model == "mlp") return {"tiny", "small", "large"};
  if (model == "cnn") return {"tiny", "small", "resnet18-cifar"};
  if (model == "gpt") return {"tiny", "small", "gpt2-small"};
  if (model == "resnet") return {"tiny", "resnet18", "resnet50"};
  if (model == "bert") return {"tiny", "bert-base", "bert-large"};
  if (model == "llama") return {"tiny", "llama-3.2-1b", "llama-3-8b", "llama-3-70b"};
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

ResnetConfig resnet_preset(const std::string& preset) {
  if (preset == "tiny") return {32, 3, 8, {1, 1, 1, 1}, true, 10};           // bottleneck layout on 32x32, 8..64 planes
  if (preset == "resnet18") return {224, 3, 64, {2, 2, 2, 2}, false, 1000};  // 11,689,512 parameters
  if (preset == "resnet50") return {224, 3, 64, {3, 4, 6, 3}, true, 1000};   // 25,557,032 parameters
  unknown_preset("resnet", preset);
}

BertConfig bert_preset(const std::string& preset) {
  // {vocab, max positions, token types, sequence, layers, d_model, heads, d_ff}
  if (preset == "tiny") return {256, 64, 2, 32, 2, 64, 4, 256};
  if (preset == "bert-base") return {30522, 512, 2, 128, 12, 768, 12, 3072};    // 109,514,298 parameters
  if (preset == "bert-large") return {30522, 512, 2, 128, 24, 1024, 16, 4096};  // 335,174,458 parameters
  unknown_preset("bert", preset);
}

LlamaConfig llama_preset(const std::string& preset) {
  // {vocab, context, layers, d_model, heads, kv heads, d_ff, tied head, rope theta, norm eps}
  if (preset == "tiny") return {256, 32, 2, 64, 4, 2, 176, false, 500000, 1e-5};
  if (preset == "llama-3.2-1b") return {128256, 128, 16, 2048, 32, 8, 8192, true, 500000, 1e-5};
  if (preset == "llama-3-8b") return {128256, 128, 32, 4096, 32, 8, 14336, false, 500000, 1e-5};
  if (preset == "llama-3-70b") return {128256, 128, 80, 8192, 64, 8, 28672, false, 500000, 1e-5};
  unknown_preset("llama", preset);
}

std::string preset_source(const std::string& model, const std::string& preset) {
  preset_names(model);  // throws for an unknown model
  if (preset == "tiny") return "tvie's own size: the same architecture, trains in CPU seconds";
  static const std::map<std::string, std::string> sources = {
      {"mlp/small", "tvie's own size"},
      {"mlp/large", "tvie's own size: a GPU workload"},
      {"cnn/small", "tvie's own size, CIFAR-shaped"},
      {"cnn/resnet18-cifar", "ResNet-18 basic-block layout on 32x32 CIFAR images (3x3 stem, no max pool)"},
      {"gpt/small", "tvie's own size"},
      {"gpt/gpt2-small", "OpenAI GPT-2 small (tied head): 124,439,808 parameters"},
      {"resnet/resnet18", "torchvision resnet18 (He et al. 2015, ImageNet 224x224): 11,689,512 parameters"},
      {"resnet/resnet50", "torchvision resnet50 (v1.5, ImageNet 224x224): 25,557,032 parameters"},
      {"bert/bert-base",
       "Hugging Face BertForMaskedLM bert-base-uncased: 109,514,298 parameters "
       "(109,482,240 with the pooler and without the MLM head)"},
      {"bert/bert-large",
       "Hugging Face BertForMaskedLM bert-large-uncased: 335,174,458 parameters "
       "(335,141,888 with the pooler and without the MLM head)"},
      {"llama/llama-3.2-1b", "meta-llama/Llama-3.2-1B config (tied head): 1,235,814,400 parameters"},
      {"llama/llama-3-8b", "meta-llama/Meta-Llama-3-8B config: 8,030,261,248 parameters"},
      {"llama/llama-3-70b", "meta-llama/Meta-Llama-3-70B config: 70,553,706,496 parameters"}};
  const auto it = sources.find(model + "/" + preset);
  if (it == sources.end()) unknown_preset(model, preset);
  return it->second;
}

std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset,
                                            const ModelShape& shape) {
  std::string label = model + "/" + preset;
  const bool sequence_model = model == "gpt" || model == "bert" || model == "llama";
  const auto refuse_unless = [&](bool has, const char* field, const std::string& value, const char* models) {
    if (has) return;
    preset_names(model);  // an unknown model is named as such
    throw InvalidArgument(field, value, cat("0 for ", model, " (", models, ")"));
  };
  const int64_t seq_tokens = shape.seq_tokens, layers = shape.layers, vocab = shape.vocab;
  if (seq_tokens != 0) {
    // The copy task needs a first half and its repeat; BERT's runs of 4 need one run.
    refuse_unless(sequence_model, "model.seq", cat(seq_tokens), "no token sequence; gpt, bert, llama have one");
    const int64_t limit = model == "bert" ? bert_preset(preset).max_positions : 1 << 20;
    if (seq_tokens < 4 || seq_tokens > limit)
      throw InvalidArgument("model.seq", cat(seq_tokens), cat("0 (the preset's) or 4 .. ", limit, " for ", model));
    label += cat(" (seq ", seq_tokens, ")");
  }
  if (layers != 0) {
    refuse_unless(sequence_model, "model.layers", cat(layers), "slices: gpt, bert, llama; resnet by stage");
    if (layers < 1) throw InvalidArgument("model.layers", cat(layers), "an integer >= 1 (0: the preset's)");
    label += cat(" (", layers, layers == 1 ? " block)" : " blocks)");
  }
  if (vocab != 0) {
    refuse_unless(sequence_model, "model.vocab", cat(vocab), "a vocabulary: gpt, bert, llama");
    // The data need token 0 (SEP / [MASK]) and at least one other.
    if (vocab < 2) throw InvalidArgument("model.vocab", cat(vocab), "an integer >= 2 (0: the preset's)");
    label += cat(" (vocabulary ", vocab, ")");
  }
  const int64_t multiple = shape.vocab_multiple;
  if (multiple != 0) {
    refuse_unless(sequence_model, "model.pad_vocab", cat(multiple), "a vocabulary: gpt, bert, llama");
    if (multiple < 1 || multiple > 4096)
      throw InvalidArgument("model.pad_vocab", cat(multiple), "an integer 1 .. 4096 (0: the vocabulary as published)");
  }
  // The vocabulary padded up to a multiple of `multiple`, and the label saying so.
  const auto padded = [&](int64_t v) {
    if (multiple == 0) return v;
    const int64_t p = (v + multiple - 1) / multiple * multiple;
    label += cat(" (vocabulary ", detail::with_commas(p), ": ", detail::with_commas(v), " padded to a multiple of ",
                 multiple, ")");
    return p;
  };
  if (!shape.stage_blocks.empty()) {
    const auto text = [&] {
      std::string t;
      for (auto n : shape.stage_blocks) t += (t.empty() ? "" : ",") + cat(n);
      return t;
    }();
    refuse_unless(model == "resnet", "model.stage_blocks", text, "stages: resnet");
    const auto preset_blocks = resnet_preset(preset).blocks;
    bool ok = shape.stage_blocks.size() == preset_blocks.size();
    for (auto n : shape.stage_blocks) ok = ok && n >= 1;
    if (!ok)
      throw InvalidArgument("model.stage_blocks", text,
                            cat(preset_blocks.size(), " block counts >= 1 (one per stage of ", preset, ")"));
    label += cat(" (blocks per stage ", text, ")");
  }
  if (model == "gpt") {
    auto c = gpt_preset(preset);
    if (seq_tokens != 0) c.context_length = seq_tokens;  // also the position embedding's size
    if (layers != 0) c.n_layer = layers;
    if (vocab != 0) c.vocab_size = vocab;
    c.vocab_size = padded(c.vocab_size);
    return make_gpt_workload(c, label);
  }
  if (model == "bert") {
    auto c = bert_preset(preset);
    if (seq_tokens != 0) c.seq_len = seq_tokens;
    if (layers != 0) c.n_layer = layers;
    if (vocab != 0) c.vocab_size = vocab;
    c.vocab_size = padded(c.vocab_size);
    return make_bert_workload(c, label);
  }
  if (model == "llama") {
    auto c = llama_preset(preset);
    if (seq_tokens != 0) c.context_length = seq_tokens;
    if (layers != 0) c.n_layer = layers;
    if (vocab != 0) c.vocab_size = vocab;
    c.vocab_size = padded(c.vocab_size);
    return make_llama_workload(c, label);
  }
  if (model == "mlp") return make_mlp_workload(mlp_preset(preset), label);
  if (model == "cnn") return make_cnn_workload(cnn_preset(preset), label);
  if (model == "resnet") {
    auto c = resnet_preset(preset);
    if (!shape.stage_blocks.empty()) c.blocks = shape.stage_blocks;
    return make_resnet_workload(c, label);
  }
  throw InvalidArgument("model", model, join(model_names()));
}

std::unique_ptr<Workload> make_zoo_workload(const std::string& model, const std::string& preset, int64_t seq_tokens,
                                            int64_t layers) {
  ModelShape shape;
  shape.seq_tokens = seq_tokens;
  shape.layers = layers;
  return make_zoo_workload(model, preset, shape);
}

SliceSource zoo_slices(const std::string& model, const std::string& preset, int64_t seq_tokens,
                       const SliceSettings& settings) {
  preset_names(model);  // an unknown model is named as such
  const auto& k = settings;
  SliceSource source;
  auto& axes = source.plan.axes;
  const bool vocab = k.vocab_1 != 0 || k.vocab_2 != 0;
  if (model == "resnet") {
    if (vocab) throw InvalidArgument("slices.vocab", cat(k.vocab_1, ",", k.vocab_2), "none for resnet (no vocabulary)");
    const auto blocks = resnet_preset(preset).blocks;
    if (k.layers_1 < 1 || k.layers_2 <= k.layers_1)
      throw InvalidArgument("slices.layers", cat(k.layers_1, ",", k.layers_2),
                            "two block counts per stage K1,K2 with 1 <= K1 < K2");
    // Stage s at min(K1, n) blocks in every slice, at min(K2, n) in its own; stages of <= K1 blocks are
    // whole in every slice and have no axis.
    std::vector<int64_t> base(blocks.size());
    for (size_t s = 0; s < blocks.size(); ++s) {
      base[s] = std::min(k.layers_1, blocks[s]);
      if (blocks[s] <= k.layers_1) continue;
      axes.push_back({SliceAxisKind::stage_blocks, static_cast<int64_t>(s) + 1, blocks[s], base[s],
                      std::min(k.layers_2, blocks[s])});
    }
    if (axes.empty()) {
      std::vector<std::string> depths;
      for (auto n : blocks) depths.push_back(cat(n));
      throw InvalidArgument("slices.layers", cat(k.layers_1, ",", k.layers_2),
                            cat("K1 below the largest stage's blocks (", preset, ": ", join(depths), ")"));
    }
    source.make = [model, preset, seq_tokens, base](const SlicePlan& plan, size_t i) {
      ModelShape shape;
      shape.seq_tokens = seq_tokens;
      for (size_t s = 0; s < base.size(); ++s)
        shape.stage_blocks.push_back(plan.value(i, SliceAxisKind::stage_blocks, base[s], static_cast<int64_t>(s) + 1));
      return make_zoo_workload(model, preset, shape);
    };
    validate(source.plan);
    return source;
  }
  // Transformers: the preset's blocks, then its vocabulary.
  const auto full = make_zoo_workload(model, preset, seq_tokens);  // the facts only: not run
  const int64_t layers = full->block_count();
  if (layers < 2)
    throw InvalidArgument("slices.layers", cat(k.layers_1, ",", k.layers_2),
                          "none for " + model + " (slices: gpt, bert, llama by blocks, resnet by stage)");
  axes.push_back({SliceAxisKind::blocks, 0, layers, k.layers_1, k.layers_2});
  if (vocab) {
    const int64_t v = model == "gpt"    ? gpt_preset(preset).vocab_size
                      : model == "bert" ? bert_preset(preset).vocab_size
                                        : llama_preset(preset).vocab_size;
    axes.push_back({SliceAxisKind::vocabulary, 0, v, k.vocab_1, k.vocab_2});
  }
  validate(source.plan);
  source.make = [model, preset, seq_tokens, layers](const SlicePlan& plan, size_t i) {
    ModelShape shape;
    shape.seq_tokens = seq_tokens;
    shape.layers = plan.value(i, SliceAxisKind::blocks, layers);
    shape.vocab = plan.value(i, SliceAxisKind::vocabulary, 0);
    return make_zoo_workload(model, preset, shape);
  };
  return source;
}

}  // namespace tvie
