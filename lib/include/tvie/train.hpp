// Scenario: training steps. Forward, loss, backward, optimizer step, zero_grad(set_to_none), with
// gradient accumulation over k micro-batches (one optimizer step per k).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <tvie/memory.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/workload.hpp>

namespace tvie {

class Trainer {
 public:
  // Seeds torch with settings.seed, builds the module (on the CPU, then moved to `device`), the
  // optimizer and one synthetic batch of settings.batch_size samples. With a probe, the parameter bytes
  // the module adds are recorded for the ledger.
  Trainer(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
          MemoryProbe* probe = nullptr);

  // One optimizer step over `accumulate` micro-batches: forward_backward() then optimizer_step().
  // Returns the step's loss tensor (not synchronised: read it with .item() outside timed regions).
  torch::Tensor step();
  // Forward and backward over every micro-batch, each loss divided by k: the gradients (left in the
  // parameters' .grad) are those of the mean loss over the whole batch. Returns that mean loss.
  torch::Tensor forward_backward();
  // optimizer.step(), then zero_grad(set_to_none): the gradients are freed until the next backward.
  void optimizer_step();

  // The first two optimizer steps, instrumented to fill the ledger: the first measures the categories
  // (it creates the optimizer state), the peak is the maximum over both (the second is a steady-state
  // step with the optimizer state live throughout). Synchronises the device: never time it.
  TrainingMemory ledger_step(MemoryProbe& probe);
  static constexpr int64_t kLedgerSteps = 2;

  torch::nn::Module& module() { return *module_; }
  std::shared_ptr<torch::nn::Module> module_ptr() const { return module_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const Batch& batch() const { return batch_; }
  int64_t optimizer_steps() const { return optimizer_steps_; }
  int64_t micro_batches() const { return micro_batches_; }
  double ledger_loss() const { return ledger_loss_; }  // loss of the ledger step

 private:
  const Workload& workload_;
  TrainSettings settings_;
  c10::Device device_;
  std::shared_ptr<torch::nn::Module> module_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  Batch batch_;
  std::vector<Batch> micro_;  // views into batch_
  int64_t parameter_bytes_ = 0;
  int64_t baseline_bytes_ = 0;
  int64_t optimizer_steps_ = 0;
  int64_t micro_batches_ = 0;
  double ledger_loss_ = 0;
};

struct TrainingResult {
  TrainingMemory memory;
  PredictedTrainingMemory predicted;
  std::string memory_counter;   // which counter the figures are
  std::vector<double> step_ms;  // every timed step
  Summary step;                 // statistics of step_ms
  std::string timer;            // "cuda events" / "steady_clock"
  int64_t ledger_steps = 0;     // instrumented, untimed (Trainer::kLedgerSteps)
  int64_t warmup_steps = 0;     // untimed
  int64_t timed_steps = 0;
  int64_t optimizer_steps = 0;  // all of them, untimed included
  int64_t micro_batches = 0;
  double samples_per_s = 0;         // batch_size / mean step time
  double tokens_per_s = 0;          // 0 for models without tokens
  double model_flops_per_step = 0;  // 3 x forward FLOPs x batch (forward + backward at 2x forward)
  double achieved_tflops = 0;       // model_flops_per_step / mean step time
  double first_loss = 0;            // loss of the first (ledger) step
  double final_loss = 0;            // loss of the last timed step
};

// Runs the ledger step, the warm-up steps and the timed steps. `trained` (optional) receives the module
// with its trained weights, for the inference copy.
TrainingResult run_training(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
                            std::shared_ptr<torch::nn::Module>* trained = nullptr);

}  // namespace tvie
