// Scenario: batched inference. eval() + c10::InferenceMode, weights in fp32, fp16 or bf16 (a converted
// copy of the same weights).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include <tvie/memory.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/workload.hpp>

namespace tvie {

class InferenceSession {
 public:
  // Builds a copy of the model (workload.make_module() after seeding), copies `weights` into it when
  // given (else keeps its seeded initial weights), converts it to settings.dtype on `device`, switches
  // it to eval(), and makes one batch (floating inputs converted to the same dtype).
  InferenceSession(const Workload& workload, const InferSettings& settings, const c10::Device& device,
                   const torch::nn::Module* weights = nullptr, MemoryProbe* probe = nullptr);

  // One forward pass of the batch under InferenceMode; returns the output.
  torch::Tensor run_batch();
  // One forward pass of the given rows of the batch (a serving batch), under InferenceMode.
  torch::Tensor run_rows(const std::vector<int64_t>& rows);
  // One forward pass instrumented for the ledger (synchronises: never time it).
  InferenceMemory ledger_batch(MemoryProbe& probe);

  torch::nn::Module& module() { return *module_; }
  const Batch& batch() const { return batch_; }

 private:
  const Workload& workload_;
  InferSettings settings_;
  c10::Device device_;
  std::shared_ptr<torch::nn::Module> module_;
  Batch batch_;
  int64_t parameter_bytes_ = 0;
  int64_t baseline_bytes_ = 0;
};

struct InferenceResult {
  InferenceMemory memory;
  std::string memory_counter;
  std::string dtype;
  std::vector<double> latency_ms;  // every timed batch
  Summary latency;
  std::string timer;
  int64_t ledger_batches = 1;
  int64_t warmup_batches = 0;
  int64_t timed_batches = 0;
  double samples_per_s = 0;  // batch_size / mean latency
  double tokens_per_s = 0;
  double model_flops_per_batch = 0;  // forward FLOPs x batch
  double achieved_tflops = 0;
};

InferenceResult run_inference(const Workload& workload, const InferSettings& settings, const c10::Device& device,
                              const torch::nn::Module* weights = nullptr);

}  // namespace tvie
