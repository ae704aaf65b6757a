// Settings: plain structs with units in the field names and defaults, validated once at the boundary
// (validate() throws InvalidArgument naming the field, the value and the accepted values).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tvie {

enum class OptimizerKind { sgd, sgd_momentum, adam, adamw };
enum class InferenceDtype { fp32, fp16, bf16 };

std::string to_string(OptimizerKind kind);
std::string to_string(InferenceDtype dtype);
// Parse the command-line spelling ("adamw", "sgd-momentum", "bf16" ...); throws InvalidArgument(field, ...).
OptimizerKind parse_optimizer(const std::string& text, const std::string& field = "train.optimizer");
InferenceDtype parse_inference_dtype(const std::string& text, const std::string& field = "infer.dtype");
std::vector<std::string> optimizer_names();
std::vector<std::string> inference_dtype_names();
// Bytes of optimizer state per parameter byte: sgd 0, sgd_momentum 1 (momentum buffer), adam/adamw 2
// (first and second moments).
int64_t optimizer_state_multiplier(OptimizerKind kind);

struct TrainSettings {
  int64_t batch_size = 8;    // samples per optimizer step, split into `accumulate` micro-batches
  int64_t steps = 20;        // timed optimizer steps
  int64_t warmup_steps = 3;  // untimed optimizer steps before the timed ones (after the ledger step)
  int64_t accumulate = 1;    // micro-batches per optimizer step; must divide batch_size
  OptimizerKind optimizer = OptimizerKind::adamw;
  double learning_rate = 1e-3;  // all optimizers
  double momentum = 0.9;        // sgd_momentum only
  double weight_decay = 0.01;   // adamw only (decoupled)
  uint64_t seed = 0;            // initial weights and synthetic data
};

struct InferSettings {
  int64_t batch_size = 8;                       // samples per forward pass
  int64_t steps = 20;                           // timed batches
  int64_t warmup_steps = 3;                     // untimed batches before them
  InferenceDtype dtype = InferenceDtype::fp32;  // weights (and floating inputs) of the inference copy
  uint64_t seed = 0;
};

struct CompareSettings {
  std::string model = "gpt";    // zoo model: mlp, cnn, gpt
  std::string preset = "tiny";  // size preset of that model
  std::string device = "auto";  // auto, cpu, cuda, cuda:N
  TrainSettings train;
  InferSettings infer;
};

void validate(const TrainSettings& settings);
void validate(const InferSettings& settings);
// Also checks model, preset and device (and that the inference dtype runs on that device).
void validate(const CompareSettings& settings);

}  // namespace tvie
