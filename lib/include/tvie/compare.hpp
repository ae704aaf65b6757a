// Scenario: the side-by-side comparison. Trains the model, then runs batched inference on a converted
// copy of the trained weights, on the same device, and puts the two ledgers and timings side by side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <tvie/context.hpp>
#include <tvie/infer.hpp>
#include <tvie/settings.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>

namespace tvie {

struct CompareReport {
  RunContext context;
  CompareSettings settings;
  std::string workload;  // "gpt/tiny"
  ModelFacts facts;
  TrainingResult training;
  InferenceResult inference;
  // How the inference dtype was chosen: "given" (settings.infer.dtype), or "auto: <dtype>: <why>".
  std::string inference_dtype_choice = "given";
  // Ratios between the modes (0 when a denominator is 0).
  double peak_memory_ratio = 0;       // training peak / inference peak
  double parameter_memory_ratio = 0;  // training parameters / inference parameters
  double throughput_ratio = 0;        // inference samples/s / training samples/s
};

// Training only (`tvie train`): settings.infer is not used.
struct TrainReport {
  RunContext context;
  CompareSettings settings;
  std::string workload;
  ModelFacts facts;
  TrainingResult training;
};

// Validates the settings, then trains a zoo model (or a user's workload).
// With `comm` and `dist`: one rank of data-parallel training (tvie/dist.hpp).
TrainReport run_train(const CompareSettings& settings, std::vector<std::string> argv = {}, Communicator* comm = nullptr,
                      const DistSettings* dist = nullptr);
TrainReport run_train(const Workload& workload, const CompareSettings& settings, std::vector<std::string> argv = {},
                      Communicator* comm = nullptr, const DistSettings* dist = nullptr);

// Inference only (`tvie infer`): the batch x precision sweep.
struct InferReport {
  RunContext context;
  std::string workload;
  ModelFacts facts;
  InferSweepSettings settings;
  InferSweepResult sweep;
};

// Resolves `device` ("auto", "cpu", "cuda:N"), validates, and sweeps `workload`.
InferReport run_infer(const Workload& workload, const InferSweepSettings& settings, const std::string& device,
                      std::vector<std::string> argv = {});

// Validates the settings, then runs both modes on a zoo model.
CompareReport run_compare(const CompareSettings& settings, std::vector<std::string> argv = {});
// Same with a user's workload (settings.model/preset are then only labels).
CompareReport run_compare(const Workload& workload, const CompareSettings& settings,
                          std::vector<std::string> argv = {});

}  // namespace tvie
