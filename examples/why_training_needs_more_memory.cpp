// Why training needs more memory than inference, measured: the cases of docs/why-training-needs-more-memory.md.
//
// One model (tvie's gpt "small": 4.2 M parameters, 4 blocks, 128 tokens per sample) on the CPU, batch 8. Each case
// changes one lever and measures the memory ledger of training and inference with tvie's counting allocator, beside
// tvie's analytic prediction: the optimizer (SGD, SGD with momentum, AdamW), the training precision (fp32, AMP bf16,
// pure bf16), gradient accumulation, activation checkpointing, data-parallel sharding (as accounting: the ZeRO
// stages' arithmetic on the predicted ledger, labelled so), and on the inference side the weights' dtype and the KV
// cache of decoding. It writes the tutorial's tables (Markdown) and its two charts (SVG); nothing in the tutorial is
// typed in by hand.
//
//   build/bin/why_training_needs_more_memory [--out DIR] [--update-doc docs/why-training-needs-more-memory.md]
//
// --out DIR (default: why-training-output): tables.md, ledger.svg, memory-over-time.svg.
// --update-doc PATH: also rewrites the tables between the document's <!-- table:NAME --> and <!-- /table --> lines
//   (and, next to it, results/tutorial/why-training-*.svg). The doc-test (tests/test_examples.cpp) runs this program
//   and checks that the document's tables match its output: exactly for weights, gradients, optimizer state and weight
//   copies, within 10% for the rest (activations depend a little on the CPU's kernels).
// About a minute on 2 cores. Times are not in the tables: they depend on the machine; bytes do not.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <tvie/tvie.hpp>

namespace fs = std::filesystem;

namespace {

const c10::Device kCpu(c10::kCPU);

std::string bytes(int64_t b) {  // "16,963,584": exact, the doc-test compares them
  if (b < 0) return "-";
  std::string digits = std::to_string(b), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string ratio(int64_t a, int64_t b) {  // "7.40x"
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0);
  return text;
}

// A Markdown table with a name, between the markers the doc-test and --update-doc look for.
struct Table {
  std::string name;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string text() const {
    std::ostringstream o;
    o << "<!-- table:" << name << " -->\n|";
    for (const auto& h : header) o << ' ' << h << " |";
    o << "\n|";
    for (size_t i = 0; i < header.size(); ++i) o << (i == 0 ? "---|" : "---:|");
    o << '\n';
    for (const auto& r : rows) {
      o << '|';
      for (const auto& c : r) o << ' ' << c << " |";
      o << '\n';
    }
    o << "<!-- /table -->\n";
    return o.str();
  }
};

tvie::TrainSettings base_training() {
  tvie::TrainSettings s;
  s.batch_size = 8;
  s.steps = 1;  // the ledger comes from the two instrumented steps before; one timed step is enough here
  s.warmup_steps = 0;
  s.data_batches = 2;
  s.optimizer = tvie::OptimizerKind::adamw;
  return s;
}

tvie::InferSettings base_inference() {
  tvie::InferSettings s;
  s.batch_size = 8;
  s.steps = 1;
  s.warmup_steps = 0;
  return s;
}

tvie::TrainingResult train(const tvie::Workload& w, const tvie::TrainSettings& s) {
  tvie::validate(s, kCpu);
  tvie::validate_checkpointing(w, s);
  return tvie::measure_training(w, s, kCpu);
}

tvie::InferenceResult infer(const tvie::Workload& w, const tvie::InferSettings& s) {
  tvie::validate(s, kCpu);
  return tvie::measure_inference(w, s, kCpu);
}

// Rewrites every <!-- table:NAME --> ... <!-- /table --> block of `doc` whose NAME is in `tables`.
std::string replace_tables(std::string doc, const std::vector<Table>& tables) {
  for (const auto& t : tables) {
    const std::string open = "<!-- table:" + t.name + " -->", close = "<!-- /table -->\n";
    const auto start = doc.find(open);
    if (start == std::string::npos) throw std::runtime_error("the document has no table " + t.name);
    const auto end = doc.find(close, start);
    if (end == std::string::npos) throw std::runtime_error("table " + t.name + " is not closed");
    doc.replace(start, end + close.size() - start, t.text());
  }
  return doc;
}

// LibTorch runs bf16 convolutions and matmuls on oneDNN where the CPU has AVX-512 (and oneDNN may use it), on
// ATen's own kernels elsewhere.
bool bf16_on_onednn() {
  const auto features = tvie::describe_host().cpu_features_usable;
  return std::find(features.begin(), features.end(), "avx512f") != features.end();
}

void write(const fs::path& path, const std::string& text) { tvie::write_file_atomically(path.string(), text); }

}  // namespace

int main(int argc, char** argv) {
  fs::path out = "why-training-output", doc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--update-doc") == 0 && i + 1 < argc) {
      doc = argv[++i];
    } else {
      std::cerr << "usage: why_training_needs_more_memory [--out DIR] [--update-doc PATH]\n";
      return 2;
    }
  }
  try {
    tvie::install_cpu_memory_counter();
    tvie::log::set_level(tvie::log::Level::warn);
    fs::create_directories(out);
    const auto w = tvie::make_zoo_workload("gpt", "small");
    const int64_t params = w->facts().parameter_count;
    std::vector<Table> tables;
    // Which kernels ran bf16 here: the bf16 rows' activations and working sets depend on it (oneDNN's kernels
    // reorder weights into buffers of their own; ATen's unfold convolutions into columns), so the doc-test
    // compares those only against a run on the same kind of CPU.
    tables.push_back(
        {"machine",
         {"this run", "value"},
         {{"bf16 kernels", bf16_on_onednn() ? "oneDNN (a CPU with AVX-512)" : "ATen's own (a CPU without AVX-512)"}}});

    // 1. The gap: the same model and batch, trained with AdamW in fp32 and run for inference in fp32.
    std::cout << "the baseline: training and inference ..." << std::endl;
    const auto t = train(*w, base_training());
    const auto i = infer(*w, base_inference());
    const auto& m = t.memory;
    const auto& p = t.predicted;
    tables.push_back({"baseline",
                      {"category (bytes)", "training, measured", "training, predicted", "inference, measured",
                       "inference, predicted"},
                      {{"parameters", bytes(m.parameters), bytes(p.parameters), bytes(i.memory.parameters),
                        bytes(i.predicted.parameters)},
                       {"gradients", bytes(m.gradients), bytes(p.gradients), "-", "-"},
                       {"optimizer state", bytes(m.optimizer_state), bytes(p.optimizer_state), "-", "-"},
                       {"saved activations / working set", bytes(m.activations), bytes(p.activations),
                        bytes(i.memory.activations), bytes(i.predicted.activations)},
                       {"peak", bytes(m.peak), bytes(p.peak), bytes(i.memory.peak), bytes(i.predicted.peak)}}});
    write(out / "ledger.svg", tvie::ledger_svg(&t, &i));
    write(out / "memory-over-time.svg", tvie::memory_timeline_svg(&t, &i));
    tables.push_back({"gap",
                      {"quantity", "value"},
                      {{"parameters of the model", bytes(params)},
                       {"training peak / inference peak", ratio(m.peak, i.memory.peak)},
                       {"training parameters + gradients + optimizer state / training peak",
                        ratio(m.parameters + m.gradients + m.optimizer_state, m.peak)}}});

    // 2. The optimizer: its state lives across steps, so it is held all the time.
    std::cout << "optimizers ..." << std::endl;
    Table optimizers{"optimizer",
                     {"optimizer", "parameters (bytes)", "gradients (bytes)", "optimizer state (bytes)",
                      "optimizer state / parameters", "peak (bytes)"},
                     {}};
    for (auto kind : {tvie::OptimizerKind::sgd, tvie::OptimizerKind::sgd_momentum, tvie::OptimizerKind::adamw}) {
      auto s = base_training();
      s.optimizer = kind;
      const auto r = kind == tvie::OptimizerKind::adamw ? t : train(*w, s);
      optimizers.rows.push_back({tvie::to_string(kind), bytes(r.memory.parameters), bytes(r.memory.gradients),
                                 bytes(r.memory.optimizer_state), ratio(r.memory.optimizer_state, r.memory.parameters),
                                 bytes(r.memory.peak)});
    }
    tables.push_back(optimizers);

    // 3. Precision: AMP keeps fp32 weights and adds bf16 copies; pure bf16 halves everything, with its risks.
    std::cout << "precisions ..." << std::endl;
    Table precisions{"precision",
                     {"training precision", "parameters (bytes)", "gradients (bytes)", "optimizer state (bytes)",
                      "weight copies (bytes)", "saved activations (bytes)", "peak (bytes)"},
                     {}};
    for (auto precision : {tvie::TrainPrecision::fp32, tvie::TrainPrecision::amp_bf16, tvie::TrainPrecision::bf16}) {
      auto s = base_training();
      s.precision = precision;
      const auto r = precision == tvie::TrainPrecision::fp32 ? t : train(*w, s);
      precisions.rows.push_back({tvie::to_string(precision), bytes(r.memory.parameters), bytes(r.memory.gradients),
                                 bytes(r.memory.optimizer_state), bytes(r.memory.weight_copies),
                                 bytes(r.memory.activations), bytes(r.memory.peak)});
    }
    tables.push_back(precisions);

    // 4. Gradient accumulation: the same batch of 8 in micro-batches; activations scale with the micro-batch.
    std::cout << "gradient accumulation ..." << std::endl;
    Table accumulation{"accumulation",
                       {"micro-batches x samples", "saved activations (bytes)", "predicted (bytes)", "peak (bytes)"},
                       {}};
    for (int64_t k : {1, 2, 8}) {
      auto s = base_training();
      s.accumulate = k;
      const auto r = k == 1 ? t : train(*w, s);
      accumulation.rows.push_back({tvie::cat(k, " x ", 8 / k), bytes(r.memory.activations),
                                   bytes(r.predicted.activations), bytes(r.memory.peak)});
    }
    tables.push_back(accumulation);

    // 5. Activation checkpointing: keep only each block's input, recompute the rest in backward.
    std::cout << "activation checkpointing ..." << std::endl;
    Table checkpointing{
        "checkpointing", {"checkpointing", "saved activations (bytes)", "predicted (bytes)", "peak (bytes)"}, {}};
    for (int64_t every : {0, 1}) {
      auto s = base_training();
      s.checkpoint_every = every;
      const auto r = every == 0 ? t : train(*w, s);
      checkpointing.rows.push_back({every == 0 ? "none" : "every block", bytes(r.memory.activations),
                                    bytes(r.predicted.activations), bytes(r.memory.peak)});
    }
    tables.push_back(checkpointing);

    // 6. Data parallelism and sharding, as accounting on the predicted ledger (nothing of this is measured here):
    // plain data parallelism replicates everything on every card (and adds one flat copy of the gradients for
    // the all-reduce buckets); ZeRO's stages split the optimizer state, then the gradients, then the weights.
    Table sharding{"sharding",
                   {"4 cards, per card (predicted)", "parameters (bytes)", "gradients (bytes)",
                    "optimizer state (bytes)", "total (bytes)", "peak in"},
                   {}};
    const auto dp = tvie::predict_training_memory(*w, base_training(), /*data_parallel=*/true, kCpu);
    for (auto stage : {tvie::ShardingStage::none, tvie::ShardingStage::optimizer, tvie::ShardingStage::gradients,
                       tvie::ShardingStage::parameters}) {
      const auto c = tvie::shard_training_memory(dp, 4, stage);
      sharding.rows.push_back({tvie::to_string(stage), bytes(c.parameters), bytes(c.gradients),
                               bytes(c.optimizer_state), bytes(c.total), c.peak_phase});
    }
    tables.push_back(sharding);

    // 7. Inference precision: the weights in fp32, bf16 or int8 (dynamic quantisation: int8 weights packed by
    // fbgemm outside LibTorch's allocator, measured through glibc's heap statistics).
    std::cout << "inference precisions ..." << std::endl;
    Table inference{"inference",
                    {"inference dtype", "weight tensors (bytes)", "int8 packs, heap growth (bytes)",
                     "working set (bytes)", "peak (bytes)"},
                    {}};
    for (auto dtype : {tvie::InferenceDtype::fp32, tvie::InferenceDtype::bf16, tvie::InferenceDtype::int8}) {
      auto s = base_inference();
      s.dtype = dtype;
      const auto r = dtype == tvie::InferenceDtype::fp32 ? i : infer(*w, s);
      inference.rows.push_back({tvie::to_string(dtype), bytes(r.memory.parameters), bytes(r.memory.packed_weights),
                                bytes(r.memory.activations), bytes(r.memory.peak)});
    }
    tables.push_back(inference);

    // 8. Decoding: the KV cache grows with every generated token; training never has one.
    std::cout << "decoding ..." << std::endl;
    Table decoding{"kv-cache",
                   {"sequences x tokens", "KV cache, measured (bytes)", "KV cache, predicted (bytes)",
                    "working set, measured (bytes)", "generation peak, measured (bytes)", "predicted (bytes)"},
                   {}};
    const auto config = tvie::gpt_preset("small");
    for (int64_t batch : {1, 8}) {
      tvie::DecodeSettings s;
      s.batch_size = batch;
      s.prompt_tokens = 64;
      s.new_tokens = 64;
      s.repetitions = 1;
      tvie::validate(s, config);
      const auto r = tvie::measure_decoding(config, s, kCpu);
      decoding.rows.push_back({tvie::cat(batch, " x ", s.prompt_tokens + s.new_tokens), bytes(r.memory.kv_cache),
                               bytes(r.predicted.kv_cache), bytes(r.memory.working_set), bytes(r.memory.peak),
                               bytes(r.predicted.peak)});
    }
    tables.push_back(decoding);

    std::string all;
    for (const auto& table : tables) all += table.text() + "\n";
    write(out / "tables.md", all);
    std::cout << all;
    if (!doc.empty()) {
      std::ifstream in(doc);
      if (!in) throw std::runtime_error("cannot read " + doc.string());
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      write(doc, replace_tables(text, tables));
      const fs::path images = doc.parent_path() / "results" / "tutorial";
      write(images / "why-training-ledger.svg", tvie::ledger_svg(&t, &i));
      write(images / "why-training-memory-over-time.svg", tvie::memory_timeline_svg(&t, &i));
      std::cout << "updated " << doc.string() << " and " << images.string() << "/why-training-*.svg\n";
    }
    std::cout << "wrote " << (out / "tables.md").string() << ", ledger.svg, memory-over-time.svg\n";
  } catch (const std::exception& e) {
    std::cerr << "why_training_needs_more_memory: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
