// Scenario: batched inference. eval() + c10::InferenceMode on a converted copy of the same weights: fp32,
// fp16, bf16, or int8 / fp8 Linear layers (see settings.hpp, layers.hpp); batch and precision sweeps
// with each reduced precision's accuracy against fp32 on the same inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include <tvie/class_times.hpp>
#include <tvie/energy.hpp>
#include <tvie/memory.hpp>
#include <tvie/timeline.hpp>
#include <tvie/predict.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/workload.hpp>

namespace tvie {
namespace detail {
class GraphedForward;  // cuda_graph.hpp
}

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
  InferenceMemory ledger_batch(MemoryProbe& probe, MemoryTimeline* timeline = nullptr);
  // CUDA: captures the batch's forward in a CUDA graph; run_batch() replays it from then on (its output
  // is a static tensor, overwritten by the next replay).
  void capture_cuda_graph();

  torch::nn::Module& module() { return *module_; }
  const Batch& batch() const { return batch_; }
  // int8/fp8: tvie::nn::Linear layers converted, and kept dense because the kernel cannot take their shape.
  int64_t linears_converted() const { return linears_converted_; }
  int64_t linears_kept_dense() const { return linears_kept_dense_; }
  // The bytes of the copy's weights a forward reads: its parameters and buffers, and int8's packs.
  int64_t weight_bytes() const { return parameter_bytes_ + packed_bytes_; }

 private:
  torch::Tensor forward_eager();  // the batch's forward under InferenceMode

  const Workload& workload_;
  InferSettings settings_;
  c10::Device device_;
  std::shared_ptr<torch::nn::Module> module_;
  Batch batch_;
  int64_t parameter_bytes_ = 0;
  int64_t packed_bytes_ = 0;
  bool packed_measured_ = true;
  int64_t baseline_bytes_ = 0;
  int64_t linears_converted_ = 0, linears_kept_dense_ = 0;
  std::shared_ptr<detail::GraphedForward> graph_;  // set by capture_cuda_graph()
};

struct InferenceResult {
  InferenceMemory memory;
  PredictedInferenceMemory predicted;  // predict_inference_memory, before the run
  std::string memory_counter;
  MemoryTimeline memory_timeline;  // the ledger batch's live bytes at every allocation and free
  InferenceDtype dtype = InferenceDtype::fp32;
  std::string scheme;                  // how the copy holds and runs its weights (nn::inference_scheme)
  std::vector<double> latency_ms;      // every timed batch
  std::vector<double> batch_start_ms;  // each timed batch's start, ms after the first's (timer's clock; --trace)
  Summary latency;
  std::string timer;
  bool cuda_graph = false;  // timed batches replayed a CUDA graph (the ledger batch ran eagerly)
  // int8/fp8: tvie::nn::Linear layers in that dtype, and those kept dense (the kernel cannot take their shape).
  int64_t linears_converted = 0, linears_kept_dense = 0;
  int64_t ledger_batches = 1;
  int64_t warmup_batches = 0;
  int64_t timed_batches = 0;
  double samples_per_s = 0;  // batch_size / mean latency
  double tokens_per_s = 0;
  double model_flops_per_batch = 0;  // forward FLOPs x batch
  double achieved_tflops = 0;
  // Energy over the timed batches (tvie/energy.hpp; "not available: why" where no counter can be read).
  EnergyReading energy;
  double joules_per_sample = -1;  // energy / (timed batches x batch); -1 when not available
  // settings.profile_classes: one more batch, profiled (tvie/class_times.hpp); its time by class in `forward`.
  ProfiledClassTimes time_by_class;
};

// A batch's throughput from its mean latency: samples_per_s (batch / latency), tokens_per_s, model_flops_per_batch
// (forward FLOPs x batch) and achieved_tflops of `result`; left at 0 where the latency is not > 0.
void set_throughput(InferenceResult& result, const ModelFacts& facts, int64_t batch_size, double mean_latency_ms);

// Settings validated first (validate(settings, device); tvie/run.hpp's runners do it once).
// `output`, when given, receives the last timed batch's output (on the CPU, fp32) for accuracy checks.
InferenceResult measure_inference(const Workload& workload, const InferSettings& settings, const c10::Device& device,
                                  const torch::nn::Module* weights = nullptr, torch::Tensor* output = nullptr);

// How far a reduced-precision output is from the fp32 output on the same inputs (both read as fp32).
struct OutputAgreement {
  double max_abs_error = 0;       // max |out - ref| over every element
  double mean_abs_error = 0;      // mean |out - ref|
  double reference_mean_abs = 0;  // mean |ref|: the scale the errors compare with
  double top1_agreement = 1;      // fraction of rows (last dimension: classes, vocabulary) with the same argmax
  int64_t rows = 0;               // rows compared for top-1
};
OutputAgreement compare_outputs(const torch::Tensor& reference, const torch::Tensor& output);

// `tvie infer`: every batch size x every dtype, each measured as measure_inference does.
struct InferSweepSettings {
  std::vector<int64_t> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<InferenceDtype> dtypes = {InferenceDtype::fp32};
  int64_t steps = 20;        // timed batches per row
  int64_t warmup_steps = 3;  // untimed batches before them
  uint64_t seed = 0;         // weights and inputs: every row sees the same weights and, per batch size, inputs
  bool cuda_graph = false;   // CUDA: replay each row's forward from a CUDA graph
  // CPU only: emulate a device with this much free memory for tensors (0: none). An allocation beyond it
  // fails as a CUDA out-of-memory would, and the row reads "does not fit".
  int64_t cpu_memory_limit_mb = 0;
  bool check_free_memory = true;  // a row whose predicted peak exceeds the free memory does not fit, unrun
  // Reduced-precision rows compared with an fp32 run of the same inputs. False for a model that computes in one
  // dtype only (an AOTInductor package compiled in bf16 has no fp32 copy to compare with).
  bool accuracy_vs_fp32 = true;
};
void validate(const InferSweepSettings& settings, const c10::Device& device);

// One row of a sweep (its batch size and dtype) as measure_inference's settings.
InferSettings row_settings(const InferSweepSettings& sweep, int64_t batch, InferenceDtype dtype);

struct InferSweepRow {
  int64_t batch_size = 0;
  InferenceDtype dtype = InferenceDtype::fp32;
  bool fits = true;
  std::string does_not_fit;   // why, when !fits ("out of memory at batch 256: ...")
  InferenceResult result;     // when fits
  bool has_accuracy = false;  // reduced precisions whose fp32 reference at the same batch fitted
  OutputAgreement accuracy;
};

struct InferSweepResult {
  std::vector<InferSweepRow> rows;  // batch-major, dtypes in the order given
  std::string memory_counter, timer;
  int64_t cpu_memory_limit_bytes = 0;
};

// `weights`: a module of the workload whose parameters every row's copy takes (trained ones); nullptr: fresh
// weights of settings.seed.
InferSweepResult measure_inference_sweep(const Workload& workload, const InferSweepSettings& settings,
                                         const c10::Device& device, const torch::nn::Module* weights = nullptr);

}  // namespace tvie
