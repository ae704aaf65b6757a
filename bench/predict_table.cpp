// The predicted training ledger (tvie/predict.hpp) against the measured one, for every zoo model's tiny
// preset x {fp32, amp-bf16, bf16} x {checkpoint none, blocks} x {sgd, adamw}, and the predicted inference ledger
// against the measured one for every tiny preset x {fp32, bf16} x batches {1, 2, 4, 8}, as Markdown tables on
// stdout (scripts/predict-table.sh writes them to docs/results/cpu-KIND/predicted-vs-measured.md, KIND avx2,
// avx512-no-bf16, avx512 or avx512-amx).
// Measured: the two instrumented ledger steps of tvie's Trainer on the CPU (counting allocator); for inference the
// ledger of tvie's inference run (measure_inference: the weights, the batch, the forward's working set).
// With --published: the published architectures instead (ResNet-18/50, GPT-2 small, BERT base, Llama 3.2 1B, and
// cnn's resnet18-cifar) at small batches and short sequences, where their weights, a tied embedding's [V, h]
// gradients and the optimizer step decide the peak (six and a half minutes on two cores, 7.3 GB resident on an Intel
// Xeon; scripts/predict-table.sh --published writes docs/results/cpu-KIND/predicted-vs-measured-published.md).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/version.h>
#include <tvie/tvie.hpp>

using namespace tvie;

namespace {

// "102.0 KiB =" where the prediction is the measured bytes, else "predicted / measured (difference)".
std::string cell(int64_t predicted, int64_t measured) {
  if (predicted < 0) return "not predicted";
  if (predicted == measured) return format_bytes(predicted) + " =";
  if (measured == 0) return std::to_string(predicted) + " vs 0";
  const double d = 100.0 * static_cast<double>(predicted - measured) / static_cast<double>(measured);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%s / %s (%+.1f%%)", format_bytes(predicted).c_str(),
                format_bytes(measured).c_str(), d);
  return buffer;
}

// One training row: the ledger predicted before the run beside the two measured ledger steps.
void training_row(const std::string& name, const Workload& w, const TrainSettings& s) {
  const c10::Device cpu(c10::kCPU);
  const auto p = predict_training_memory(w, s);
  auto probe = make_memory_probe(cpu);
  Trainer trainer(w, s, cpu, probe.get());
  const auto m = trainer.ledger_step(*probe);
  std::printf("| %s | %s | %s | %s | %lld | %s | %s | %s | %s | %s |\n", name.c_str(), to_string(s.precision).c_str(),
              checkpoint_to_string(s.checkpoint_every).c_str(), to_string(s.optimizer).c_str(),
              static_cast<long long>(s.batch_size), cell(p.parameters, m.parameters).c_str(),
              cell(p.gradients, m.gradients).c_str(), cell(p.optimizer_state, m.optimizer_state).c_str(),
              cell(p.activations, m.activations).c_str(), cell(p.peak, m.peak).c_str());
  std::fflush(stdout);
}

void inference_header() {
  std::printf(
      "\nInference (`tvie infer`'s ledger): the working set is what one forward holds above the weights and the "
      "batch, its output included.\n\n");
  std::printf(
      "| model | dtype | batch | weights | working set (predicted / measured) | peak (predicted / measured) |\n");
  std::printf("|---|---|---|---|---|---|\n");
}

// One inference row: the ledger predicted before the run beside tvie's inference run's.
void inference_row(const std::string& name, const Workload& w, InferenceDtype dtype, int64_t batch) {
  InferSettings s;
  s.dtype = dtype;
  s.batch_size = batch;
  s.steps = 2;
  s.warmup_steps = 1;
  const auto p = predict_inference_memory(w, s);
  const auto r = measure_inference(w, s, c10::Device(c10::kCPU));
  const auto& m = r.memory;
  std::printf("| %s | %s | %lld | %s | %s | %s |\n", name.c_str(), to_string(dtype).c_str(),
              static_cast<long long>(batch), cell(p.parameters, m.parameters).c_str(),
              cell(p.activations, m.activations).c_str(), cell(p.peak, m.peak).c_str());
  std::fflush(stdout);
}

int published() {
  struct Case {
    std::string model, preset;
    int64_t seq = 0;
    std::vector<TrainPrecision> precisions;
    std::vector<int64_t> checkpoints, batches;
    std::vector<OptimizerKind> optimizers;
  };
  const std::vector<TrainPrecision> all{TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::bf16};
  const std::vector<Case> cases{
      {"resnet", "resnet18", 0, all, {0}, {2, 8}, {OptimizerKind::sgd, OptimizerKind::adamw}},
      {"resnet", "resnet50", 0, all, {0}, {1, 4}, {OptimizerKind::sgd}},
      {"cnn", "resnet18-cifar", 0, all, {0}, {8}, {OptimizerKind::adamw}},
      {"gpt", "gpt2-small", 64, all, {0, 1}, {1, 2}, {OptimizerKind::sgd}},
      {"gpt", "gpt2-small", 64, all, {0, 1}, {2}, {OptimizerKind::adamw}},
      {"bert", "bert-base", 32, all, {0, 1}, {2}, {OptimizerKind::sgd}},
      {"llama", "llama-3.2-1b", 16, {TrainPrecision::bf16}, {0, 1}, {1}, {OptimizerKind::sgd}}};
  std::printf(
      "| model | precision | checkpoint | optimizer | batch | parameters | gradients | optimizer state | "
      "activations (predicted / measured) | peak (predicted / measured) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : cases) {
    ModelShape shape;
    shape.seq_tokens = c.seq;
    const auto w = make_zoo_workload(c.model, c.preset, shape);
    const std::string name = c.model + " " + c.preset + (c.seq > 0 ? ", " + std::to_string(c.seq) + " tokens" : "");
    for (const auto precision : c.precisions)
      for (const int64_t checkpoint : c.checkpoints)
        for (const auto optimizer : c.optimizers)
          for (const int64_t batch : c.batches) {
            TrainSettings s;
            s.batch_size = batch;
            s.precision = precision;
            s.checkpoint_every = checkpoint;
            s.optimizer = optimizer;
            training_row(name, *w, s);
          }
  }
  inference_header();
  for (const auto& [model, preset, seq] :
       {std::tuple{"resnet", "resnet50", 0}, std::tuple{"gpt", "gpt2-small", 64}, std::tuple{"bert", "bert-base", 32},
        std::tuple{"llama", "llama-3.2-1b", 16}}) {
    ModelShape shape;
    shape.seq_tokens = seq;
    const auto w = make_zoo_workload(model, preset, shape);
    const std::string name =
        std::string(model) + " " + preset + (seq > 0 ? ", " + std::to_string(seq) + " tokens" : "");
    for (auto dtype : {InferenceDtype::fp32, InferenceDtype::bf16})
      for (int64_t batch : {1, 3}) inference_row(name, *w, dtype, batch);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log::set_level(log::Level::warn);
  bool published_architectures = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--published") {
      published_architectures = true;
    } else if (arg == "--threads" && i + 1 < argc) {
      const int threads = std::atoi(argv[++i]);
      if (threads < 1) {
        std::fprintf(stderr, "predict_table: --threads: got '%s'; accepted: integers >= 1\n", argv[i]);
        return 2;
      }
      // LibTorch caps OMP_NUM_THREADS at the cores it finds; set_num_threads is not capped (more threads than
      // cores change the kernels' splits and scratch, not the arithmetic).
      at::set_num_threads(threads);
    } else {
      std::fprintf(stderr, "predict_table: unknown argument '%s'; accepted: --published, --threads N\n", arg.c_str());
      return 2;
    }
  }
  std::printf("LibTorch %s, %d intra-op threads.\n\n", TORCH_VERSION, at::get_num_threads());
  if (published_architectures) return published();
  std::printf(
      "| model | precision | checkpoint | optimizer | batch | parameters | gradients | optimizer state | "
      "activations (predicted / measured) | peak (predicted / measured) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::bf16}) {
      for (int64_t checkpoint : {0, 1}) {
        if (checkpoint > 0 && w->block_count() == 0) continue;
        for (auto optimizer : {OptimizerKind::sgd, OptimizerKind::adamw}) {
          TrainSettings s;
          s.batch_size = 8;
          s.precision = precision;
          s.checkpoint_every = checkpoint;
          s.optimizer = optimizer;
          training_row(model + " tiny", *w, s);
        }
      }
    }
  }
  inference_header();
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto dtype : {InferenceDtype::fp32, InferenceDtype::bf16})
      for (int64_t batch : {1, 2, 4, 8}) inference_row(model + " tiny", *w, dtype, batch);
  }
  return 0;
}
