// Scenario: training steps. Data (host-to-device copy), forward and loss (under autocast for the amp
// precisions), backward (of the scaled loss for amp-fp16), optimizer (unscale, clip, step unless a
// gradient was inf/NaN, zero_grad(set_to_none)), with gradient accumulation over k micro-batches (one
// optimizer step per k) and optional activation checkpointing of transformer blocks.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <optional>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <tvie/class_times.hpp>
#include <tvie/energy.hpp>
#include <tvie/memory.hpp>
#include <tvie/precision.hpp>
#include <tvie/predict.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/timeline.hpp>
#include <tvie/timing.hpp>
#include <tvie/workload.hpp>

namespace tvie {
namespace detail {
class CudaGraphStep;
}

// The phases of a training step, as StepTimer phase indices.
enum TrainPhase : int {
  kPhaseData = 0,
  kPhaseForward = 1,
  kPhaseBackward = 2,
  kPhaseOptimizer = 3,
  kPhaseCommunication = 4,  // data parallelism: what gradient averaging adds after backward (exposed)
  kPhaseCount = 5
};
const char* phase_name(int phase);

// The seam between training and whatever wraps it (data parallelism: tvie/dist.hpp's DataParallel).
// Training knows only this interface; it never sees a communicator.
class GradientHook {
 public:
  virtual ~GradientHook() = default;
  // Before each micro-batch's backward; `last` for the last micro-batch of the step (communication
  // happens only on that one).
  virtual void before_backward(bool last) = 0;
  // After the last backward of the step: the gradients must be final (e.g. averaged over ranks) when it
  // returns. Its time is the step's communication phase.
  virtual void after_backward() = 0;
  // The instrumented ledger steps are over and the timed ones begin: drop what was recorded so far.
  virtual void timing_starts() {}
};

// What measure_training lets a wrapper plug in (all optional).
struct TrainingHooks {
  // Called once the Trainer has built the module, before the ledger steps; returns the hook to call
  // around every backward (owned by the caller). What it leaves allocated on the device is the ledger's
  // comm_buffers (measured around the call).
  std::function<GradientHook*(std::shared_ptr<torch::nn::Module> module)> make_gradient_hook;
  // Every recorded step's loss (index = step - 1; NaN where a step's loss is not kept), replaced in place
  // by the loss to report (data parallelism: the mean over ranks).
  std::function<void(std::vector<double>& losses)> reduce_losses;
};

class Trainer {
 public:
  // Makes settings.data_batches synthetic batches on the host (pinned on CUDA), then seeds torch with
  // settings.seed and builds the module (on the CPU, then moved to `device`; converted to bf16 for the
  // bf16 precision), turns on checkpointing, and makes the optimizer and, for amp-fp16, the loss scaler.
  // With a probe, the bytes the module and the scaler add are recorded for the ledger.
  Trainer(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
          MemoryProbe* probe = nullptr);
  ~Trainer();

  // One optimizer step: forward_backward() then optimizer_step(). With a timer (started by the
  // caller), marks the phases. Returns the step's mean loss (unscaled; not synchronised).
  torch::Tensor step(StepTimer* timer = nullptr);
  // Data, then forward and backward over every micro-batch, each loss divided by k: the gradients (in
  // the parameters' .grad; scaled for amp-fp16) are those of the mean loss over the whole batch.
  torch::Tensor forward_backward(StepTimer* timer = nullptr);
  // Unscale (amp-fp16), clip (if set), optimizer.step() unless a gradient was inf/NaN, scale update,
  // zero_grad(set_to_none).
  void optimizer_step(StepTimer* timer = nullptr);

  // The first two optimizer steps, instrumented to fill the ledger: the first measures the categories
  // (it creates the optimizer state), the peak is the maximum over both (the second is a steady-state
  // step with the optimizer state live throughout). Synchronises the device: never time it. With `timeline`, the
  // second step's memory over time is recorded into it (tvie/timeline.hpp), thinned to at most
  // `timeline_points` points (0: every allocation and free).
  TrainingMemory ledger_step(MemoryProbe& probe, MemoryTimeline* timeline = nullptr, size_t timeline_points = 2000);
  static constexpr int64_t kLedgerSteps = kTrainingLedgerSteps;

  // Data parallelism: called around every backward from now on (not owned; nullptr: none).
  // `held_bytes`: what building the hook left allocated on the device, measured by the caller (the
  // ledger's comm_buffers: DataParallel's flat gradient buckets).
  void set_gradient_hook(GradientHook* hook, int64_t held_bytes = 0) {
    hook_ = hook;
    hook_held_bytes_ = hook ? held_bytes : 0;
  }

  GradientHook* gradient_hook() const { return hook_; }
  torch::nn::Module& module() { return *module_; }
  std::shared_ptr<torch::nn::Module> module_ptr() const { return module_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  LossScaler* scaler() { return scaler_.get(); }                // nullptr unless amp-fp16
  int64_t optimizer_steps() const { return optimizer_steps_; }  // steps taken (a skipped one counts)
  int64_t micro_batches() const { return micro_batches_; }
  int64_t checkpointed_blocks() const { return checkpointed_blocks_; }
  int64_t data_pool_bytes() const { return data_pool_bytes_; }
  double ledger_loss() const { return ledger_loss_; }  // loss of the first (ledger) step
  // Global gradient norms measured by clipping (before clipping), one per step; empty without clipping.
  const std::vector<double>& grad_norms() const { return grad_norms_; }

 private:
  friend class detail::CudaGraphStep;
  Batch next_batch();                           // the data phase
  torch::Tensor forward_loss(const Batch& mb);  // autocast-wrapped forward and loss
  // The one loop over a step's k micro-batches that every step runs (timed, ledger, captured): forward, loss / k,
  // backward, the gradient hook around each backward; returns the step's mean loss. `first` (the ledger step's
  // measurements) replaces the first micro-batch's forward and is called before its backward.
  struct FirstMicroBatch;
  torch::Tensor run_micro_batches(const Batch& batch, StepTimer* timer, const FirstMicroBatch* first);

  const Workload& workload_;
  TrainSettings settings_;
  c10::Device device_;
  std::vector<Batch> pool_;  // on the host
  std::shared_ptr<torch::nn::Module> module_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;
  int64_t parameter_bytes_ = 0;
  int64_t scaler_bytes_ = 0;
  int64_t baseline_bytes_ = 0;
  int64_t data_pool_bytes_ = 0;
  int64_t optimizer_steps_ = 0;
  int64_t micro_batches_ = 0;
  int64_t checkpointed_blocks_ = 0;
  double ledger_loss_ = 0;
  std::vector<double> grad_norms_;
  GradientHook* hook_ = nullptr;
  int64_t hook_held_bytes_ = 0;
};

struct PhaseTime {
  TrainPhase phase = kPhaseData;
  std::string name;  // phase_name(phase): data, forward, backward, optimizer, communication
  double p50_ms = 0;
  double share = 0;  // of the total time of the timed steps
};

struct TrainingResult {
  TrainingMemory memory;
  PredictedTrainingMemory predicted;  // predict_training_memory, before the run
  std::string memory_counter;         // which counter the figures are
  MemoryTimeline memory_timeline;     // the second ledger step's live bytes at every allocation and free
  TrainPrecision precision = TrainPrecision::fp32;
  int64_t checkpoint_every = 0;  // 0: none, 1: every block, K: every K-th block (checkpoint_to_string)
  int64_t checkpointed_blocks = 0;
  std::vector<double> step_ms;        // every timed step
  std::vector<double> step_start_ms;  // each timed step's start, ms after the first's (timer's clock; --trace)
  Summary step;                       // statistics of step_ms
  std::vector<PhaseTime> phases;      // data, forward, backward, optimizer over the timed steps
  std::vector<std::vector<double>> step_phases_ms;  // every timed step's phases, in phase order (ms; --trace)
  ProfiledClassTimes time_by_class;  // settings.profile_classes: one more step, profiled (tvie/class_times.hpp)
  std::string timer;                 // "cuda events" / "steady_clock"
  bool cuda_graph = false;           // timed steps replayed a captured CUDA graph
  std::string cuda_graph_scope;      // what the graph holds, e.g. "forward+backward+optimizer"
  int64_t ledger_steps = 0;          // instrumented, untimed (Trainer::kLedgerSteps)
  int64_t warmup_steps = 0;          // untimed
  int64_t timed_steps = 0;
  int64_t optimizer_steps = 0;  // all of them, untimed included
  int64_t micro_batches = 0;
  int64_t data_pool_bytes = 0;      // host memory of the synthetic batches (outside the ledger)
  double samples_per_s = 0;         // batch_size / mean step time
  double tokens_per_s = 0;          // 0 for models without tokens
  double model_flops_per_step = 0;  // 3 x forward FLOPs x batch (forward + backward at 2x forward)
  double achieved_tflops = 0;       // model_flops_per_step / mean step time
  // Energy over the timed steps (tvie/energy.hpp: RAPL on the CPU, NVML on CUDA; "not available: why" else).
  EnergyReading energy;
  double joules_per_sample = -1;                       // energy / (timed steps x batch); -1 when not available
  double first_loss = 0;                               // loss of the first (ledger) step
  double final_loss = 0;                               // loss of the last step
  std::vector<std::pair<int64_t, double>> loss_curve;  // (step number from 1, loss), every loss_every steps
  // Recorded steps whose loss is inf or NaN (the run diverged; the curve keeps them), and the first such step.
  int64_t non_finite_losses = 0;
  int64_t first_non_finite_step = 0;
  // Loss scaling (amp-fp16 only).
  bool loss_scaling = false;
  double initial_scale = 0;
  double final_scale = 0;
  int64_t skipped_steps = 0;
  // Clipping (clip_grad_norm > 0 only): global gradient norm before clipping, over all steps.
  double clip_max_norm = 0;
  Summary grad_norm;
  int64_t clipped_steps = 0;
};

// Throws InvalidArgument("train.checkpoint_every", ...) when checkpointing is asked of a workload
// without blocks. The one place this rule lives.
void validate_checkpointing(const Workload& workload, const TrainSettings& settings);

// Throws InvalidArgument("train.fused_loss", ...) when the fused loss is asked of a workload whose loss is not
// declared a cross-entropy (Workload::loss_is_cross_entropy).
void validate_fused_loss(const Workload& workload, const TrainSettings& settings);

// Runs the ledger steps, the warm-up steps and the timed steps (settings already validated: see
// run_train in tvie/run.hpp for the checked entry). `trained` (optional) receives the module with its
// trained weights, for the inference copy. `hooks`: what a wrapper plugs in (data parallelism).
TrainingResult measure_training(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
                                std::shared_ptr<torch::nn::Module>* trained = nullptr, const TrainingHooks& hooks = {});

// The pure pieces of measure_training, each tested on its own (tests/test_training.cpp).
namespace training {

// Phase times of the timed steps (`per_step[i][p]`: step i, phase p, ms) -> each step's total and, per
// phase, the median and its share of the total time. The communication phase is listed only when
// `with_communication`.
struct PhaseSummary {
  std::vector<double> step_ms;
  std::vector<PhaseTime> phases;
};
PhaseSummary summarize_phases(const std::vector<std::vector<double>>& per_step, bool with_communication);

// The loss curve from every step's loss (nullopt: not recorded): step 1, every `every` steps (0: about ten points)
// and the last recorded step, each recorded inf or NaN loss too (a diverging run's curve shows where).
std::vector<std::pair<int64_t, double>> loss_curve(const std::vector<std::optional<double>>& losses, int64_t every);

// Samples/s, tokens/s, model FLOPs per step and achieved TFLOPS from the mean step time.
struct Throughput {
  double samples_per_s = 0, tokens_per_s = 0, model_flops_per_step = 0, achieved_tflops = 0;
};
Throughput throughput(const ModelFacts& facts, int64_t batch_size, double mean_step_ms);

}  // namespace training

}  // namespace tvie
