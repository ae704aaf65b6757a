// The predicted training ledger (tvie/predict.hpp) against the measured one, for every zoo model's tiny
// preset x {fp32, amp-bf16, bf16} x {checkpoint none, blocks} x {sgd, adamw}, and the predicted inference ledger
// against the measured one for every tiny preset x {fp32, bf16} x batches {1, 2, 4, 8}, as Markdown tables on
// stdout (scripts/predict-table.sh writes them to docs/results/cpu-predicted-vs-measured-KIND.md, KIND avx2,
// avx512-no-bf16, avx512 or avx512-amx).
// Measured: the two instrumented ledger steps of tvie's Trainer on the CPU (counting allocator); for inference the
// ledger of tvie's inference run (measure_inference: the weights, the batch, the forward's working set).
#include <cstdio>
#include <string>

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

}  // namespace

int main() {
  log::set_level(log::Level::warn);
  const c10::Device cpu(c10::kCPU);
  std::printf("LibTorch %s.\n\n", TORCH_VERSION);
  std::printf(
      "| model | precision | checkpoint | optimizer | parameters | gradients | optimizer state | "
      "activations (predicted / measured) | peak (predicted / measured) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
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
          const auto p = predict_training_memory(*w, s);
          auto probe = make_memory_probe(cpu);
          Trainer trainer(*w, s, cpu, probe.get());
          const auto m = trainer.ledger_step(*probe);
          std::printf("| %s tiny | %s | %s | %s | %s | %s | %s | %s | %s |\n", model.c_str(),
                      to_string(precision).c_str(), checkpoint_to_string(checkpoint).c_str(),
                      to_string(optimizer).c_str(), cell(p.parameters, m.parameters).c_str(),
                      cell(p.gradients, m.gradients).c_str(), cell(p.optimizer_state, m.optimizer_state).c_str(),
                      cell(p.activations, m.activations).c_str(), cell(p.peak, m.peak).c_str());
        }
      }
    }
  }
  std::printf(
      "\nInference (`tvie infer`'s ledger): the working set is what one forward holds above the weights and the "
      "batch, its output included.\n\n");
  std::printf(
      "| model | dtype | batch | weights | working set (predicted / measured) | peak (predicted / measured) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto dtype : {InferenceDtype::fp32, InferenceDtype::bf16}) {
      for (int64_t batch : {1, 2, 4, 8}) {
        InferSettings s;
        s.dtype = dtype;
        s.batch_size = batch;
        s.steps = 2;
        s.warmup_steps = 1;
        const auto p = predict_inference_memory(*w, s);
        const auto r = measure_inference(*w, s, cpu);
        const auto& m = r.memory;
        std::printf("| %s tiny | %s | %lld | %s | %s | %s |\n", model.c_str(), to_string(dtype).c_str(),
                    static_cast<long long>(batch), cell(p.parameters, m.parameters).c_str(),
                    cell(p.activations, m.activations).c_str(), cell(p.peak, m.peak).c_str());
      }
    }
  }
  return 0;
}
