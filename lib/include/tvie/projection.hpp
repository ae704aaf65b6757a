// The pieces of projecting a measured workload onto cards it never ran on (issue 13): the roofline, the
// data-parallel sharding accounting, the ring all-reduce, and the M/D/1 queue behind a serving rate. Pure
// functions of their arguments: `tvie plan` composes them with the catalog (tvie/catalog.hpp) and the predicted
// ledger (tvie/predict.hpp). Units in the names; seconds unless a name says otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <tvie/catalog.hpp>
#include <tvie/predict.hpp>
#include <tvie/settings.hpp>

namespace tvie {

// --- roofline ---
// bound_s = max(flops / peak, bytes / bandwidth): the time at the datasheet's dense peak and bandwidth, a lower
// bound no run beats while its bytes come from the memory that bandwidth is for (a CPU's cache beats the DRAM
// bandwidth the catalog gives per core; CalibrationFactor::below_bound says when a measurement did).
// estimate_s = bound_s / efficiency: what a run achieving that fraction of the bound takes.
struct RooflineTime {
  double bound_s = 0;
  double estimate_s = 0;
  bool memory_bound = false;  // bytes / bandwidth >= flops / peak
};
// Throws InvalidArgument unless flops, bytes >= 0, peak_tflops, bandwidth_gbs > 0 and 0 < efficiency <= 1.
RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs, double efficiency);
// With one fraction for the compute side and one for the memory side: estimate_s = max(flops / (peak x
// compute_efficiency), bytes / (bandwidth x memory_efficiency)); a matmul at batch 1 is bound by reading its
// weights, where the matrix units' fraction says nothing. peak_tflops <= 0: no compute side (bytes only).
RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs,
                           double compute_efficiency, double memory_efficiency);

// --- a workload's work, projected onto a card ---
// What one training step or one inference batch computes and moves, per operator class: the traced operators
// (the zoo models' traces, tvie/predict.hpp) plus, for training, the optimizer's step and the gradients an
// all-reduce would carry.
struct StepWork {
  PhaseWork forward, backward;  // all micro-batches of the step
  OpWork optimizer;             // training: LibTorch's optimizer step, kernel by kernel (memory-bound)
  double allreduce_bytes = 0;   // training: the gradients' bytes (what data parallelism all-reduces per step)
  int64_t samples = 0, tokens = 0;
  double model_flops = 0;  // analytic: forward FLOPs per sample x samples (x 3 for training), as in the reports
  // The peaks the kernels run at (catalog fields) and the bytes of a weight element as the matmuls read it.
  std::string matmul_peak = "fp32_tflops";
  std::string convolution_peak = "fp32_tflops";  // fp32 on CUDA: cuDNN's TF32 by default, see convolution_tf32
  std::string attention_peak = "fp32_tflops";
  bool convolution_tf32 = false;  // fp32 convolutions run at the card's TF32 peak where it has one
  double weight_element_bytes = 4;
  // The convolutions and attention at bf16 where the card has bf16 units, at fp16 where it has not: CUDA's int8 copy
  // picks the dtype around its int8 Linear layers by the card (nn::inference_floating_dtype; same bytes either way).
  bool fp16_without_bf16 = false;
  std::string precision;  // "fp32", "amp-bf16", "int8" ...: as the settings say it
  bool profiled = false;  // counted by the profiler (a workload without a trace), not from the zoo's trace
};

// The device whose kernels tvie's copy runs on `card`: the CPU's on the host (kind "cpu"), CUDA's on the catalog's
// GPUs. The work projected onto a card is traced for it (the kernels differ: fbgemm's int8 and fp32 around it on the
// CPU, _int_mm and bf16 around it on CUDA; the CPU's backward temporaries; CUDA's flash attention).
c10::Device trace_device(const Accelerator& card);

// The work of one training step / one inference batch at the settings' batch and precision, as `device`'s kernels do
// it: from the zoo's trace, or, for a workload without one (a user's module, a TorchScript model), from LibTorch's
// profiler on the CPU (profiled_work; `profiled` says so). InvalidArgument("model", ...) when the profiler cannot run
// the workload.
StepWork training_step_work(const Workload& workload, const TrainSettings& settings,
                            const c10::Device& device = c10::kCPU);
StepWork inference_batch_work(const Workload& workload, const InferSettings& settings,
                              const c10::Device& device = c10::kCPU);

// KV-cached decoding (the zoo's gpt and llama): the work of one cached forward of `new_positions` tokens per
// sequence that also attend to `cached_positions` positions already in the cache, for settings.batch_size sequences
// in settings.dtype: a prefill (the prompt, 0 cached) or one decoding step (1 new token, the tokens so far cached).
// From the model's trace of its cached forward (ActivationQuery::sequence_tokens): every weight read once per
// step, the new keys and values written into the cache, the attention reading the cache's positions. tokens: the
// new positions of all sequences; model_flops: the traced matmul and attention FLOPs. InvalidArgument("model")
// for a workload without a KV-cached forward.
StepWork decoding_work(const Workload& workload, const InferSettings& settings, int64_t new_positions,
                       int64_t cached_positions, const c10::Device& device = c10::kCPU);

// The work of a workload without a trace, counted by LibTorch's profiler (Kineto, with input shapes and FLOP
// figures) over one forward (inference: in inference mode) or one forward and one backward (training) on the CPU
// in fp32, at batch 1 and at batch 2, extrapolated linearly to `batch_size` (w(b) = w(1) + (b - 1)(w(2) - w(1)):
// what does not grow with the batch, the weights read, stays once). FLOPs as the profiler computes them (matrix
// products, convolutions, mul and add; attention from its shapes, the whole score matrix even when causal: the
// profiler records no flag values; the backward of convolution and attention at twice their forward); bytes from the
// innermost operators' recorded inputs plus an output the size of the largest (an input of a parameter's shape counts
// as weight elements); one kernel per innermost operator that is not a view. Profiled once per workload name, parameter
// count and mode in a process.
struct ProfiledWork {
  PhaseWork forward, backward;
  int64_t parameter_tensors = 0;
  double forward_flops_per_sample = 0;  // matmul, convolution and attention FLOPs of one more sample
};
ProfiledWork profiled_work(const Workload& workload, int64_t batch_size, bool training);

// The memory of a workload without a trace (a user's module, TorchScript), whose activations
// predict_training_memory / predict_inference_memory cannot predict: measured instead, on the CPU (the counting
// allocator) at micro-batches (inference: batches) of 2 and 3 samples, and extrapolated linearly to the asked
// size: what grows with the batch (activations, the batch, the peak's transients) grows by the same bytes per
// sample; the training peak is the highest of every moment of the step on its own line (which moment peaks changes
// with the batch), when both sizes make the same allocations in the same order. Parameters, gradients, optimizer state
// and amp copies are as measured (the batch does not change them). Training: the ledger steps of a Trainer under
// `settings` (optimizer, precision, accumulation, checkpointing). Inference: the ledger batch of measure_inference in
// `settings.dtype`. The CPU's kernels hold a little other scratch than a GPU's; the figures carry that. Measured once
// per workload name, parameter count and settings in a process. Throws InvalidArgument("precision" / "dtype", ...) for
// what the CPU cannot run (amp-fp16, fp8).
PredictedTrainingMemory extrapolated_training_memory(const Workload& workload, const TrainSettings& settings);
PredictedInferenceMemory extrapolated_inference_memory(const Workload& workload, const InferSettings& settings);

// Per class: the roofline time of the forward and backward work together.
struct ProjectedTime {
  bool supported = true;
  std::string unsupported;  // why not, when not: "t4 has no bf16_tflops peak in the catalog"
  double bound_s = 0;       // the sum of the classes' bounds: datasheet peaks and bandwidth, no overhead
  double estimate_s = 0;    // the sum of the classes' estimates (the card's efficiencies) + launch overhead
  std::array<RooflineTime, kOpClassCount> by_class{};
  RooflineTime optimizer;
  double launch_s = 0;  // kernels x the card's kernel_overhead_us (in the estimate only)
  double kernels = 0;
};
// Projects the work onto `card` with its efficiency (Accelerator::efficiency). Classes run one after the other
// (no overlap): the estimate is their sum.
ProjectedTime project_time(const StepWork& work, const Accelerator& card);

// --- the tuned serving stack (tvie plan --stack tuned) ---
// What a TensorRT-class serving stack makes of a forward, modelled on the traced work rather than on tvie's own
// LibTorch kernels: every matrix product, convolution and attention runs in `dtype` on the card's matrix units
// (int8 and fp8 convolutions included; fp32 at the TF32 peak where the card has one), reading weights of the dtype's
// size and activations of that size (int8-weight-only: bf16 activations; the trace's bytes scaled from the dtype
// tvie's copy computes in), a generation's KV cache included; the
// normalisation and elementwise kernels fuse into the epilogues of the products around them (their bytes, FLOPs and
// launches gone). The fraction of the peak these kernels reach is calibrated per card on one public result, MLPerf
// Inference's ResNet-50 Offline (kTunedAnchor, the card's "published" entries in the catalog), and nothing else.
// Not modelled: structured sparsity, variable-length batching that skips padding (MLPerf's BERT harness does),
// in-flight batching's overlap of prefill and decoding, and the host's pre-processing.
inline constexpr const char* kTunedAnchor = "mlperf-inference resnet50 offline";
inline constexpr int64_t kTunedAnchorBatch = 256;  // the anchor's batch as projected (Offline runs large batches)

// The work of `work` (an inference batch or a cached forward traced for `traced` settings on `device`) on the tuned
// stack.
StepWork tuned_inference_work(const StepWork& work, const InferSettings& traced, const c10::Device& device);
// The bytes of one activation element on the tuned stack in `dtype`, and of one element of a generation's KV cache
// (the keys and values are activations: TensorRT-LLM's and vLLM's fp8 and int8 KV caches): 1 for int8 and fp8; 2 for
// fp16, bf16 and int8-weight-only (bf16 activations); 4 for fp32.
int64_t tuned_activation_bytes(InferenceDtype dtype);

struct TunedCalibration {
  bool supported = false;
  std::string unsupported;             // why not: "t4 has no mlperf-inference resnet50 offline result in the catalog"
  double compute_efficiency = 0;       // of the int8 peak: the anchor's matrix work at the peak / its published time
  double anchor_samples_per_s = 0;     // the published rate
  double projected_samples_per_s = 0;  // the anchor projected back at that efficiency (memory-bound classes and
                                       // launches can keep it below the published rate)
  std::string source;
};
// The card's tuned efficiency: ResNet-50 (the zoo's resnet50) at kTunedAnchorBatch in int8 on the tuned stack, its
// matrix work at the card's int8 peak against the published time of that batch (less the batch's launches). Pure;
// computed once per card id in a process.
TunedCalibration tuned_calibration(const Accelerator& card);
// The card as the tuned stack runs on it: matmul, convolution and attention at the calibrated fraction (basis: the
// anchor and its source). InvalidArgument("card", ...) when `calibration` is not supported.
Accelerator tuned_card(const Accelerator& card, const TunedCalibration& calibration);

// --- data-parallel sharding, as accounting ---
// ZeRO's stages (Rajbhandari et al. 2020): 1 splits the optimizer state over the N cards, 2 also the gradients,
// 3 also the parameters. Activations, the batch and the transients stay per card.
enum class ShardingStage { none = 0, optimizer = 1, gradients = 2, parameters = 3 };
const char* to_string(ShardingStage stage);

// DeepSpeed's default reduce_bucket_size (elements): the gradients it reduces at once, one 16-bit bucket per card.
inline constexpr int64_t kDeepSpeedReduceBucketElements = 500'000'000;

// Whose layout a card's model states follow: tvie's (what tvie runs: autocast over fp32 weights, the stage splitting
// its categories) or DeepSpeed's mixed-precision one (ZeRO 1-3 under amp).
enum class ShardingLayout { tvie, deepspeed_mixed_precision };
const char* to_string(ShardingLayout layout);  // "tvie", "deepspeed-mixed-precision"

struct PerCardTrainingMemory {
  ShardingLayout layout = ShardingLayout::tvie;
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, weight_copies = 0;  // model states per card
  int64_t model_states = 0;  // their sum, all alive at once (as DeepSpeed's estimators count them)
  int64_t buckets = 0;       // deepspeed layout: one 16-bit reduce bucket (kDeepSpeedReduceBucketElements, at most P)
  std::string peak_phase;    // the phase of the step where the per-card peak falls (PredictedTrainingMemory::phases)
  int64_t phase_bytes = 0;   // what that phase adds beside the model states: activations, batch, transients
  int64_t total = 0;         // the predicted peak per card
};
// `whole`: one card's predicted ledger at the per-card batch (predict_training_memory). Sharded within each phase of
// the step, so that one card's total under ZeRO-0 is the predicted peak, and a ledger whose peak is the optimizer's
// step is not charged its activations there:
// - tvie's layout (stage none; every stage for fp32 and pure bf16, and for a ledger without a parameter count):
//   per card, the parameters and optimizer state with the stage's shards all through the step, plus the largest
//   phase with its gradients and amp copies sharded as the stage says; stage 3 adds one gathered layer (the largest
//   parameter's weights and gradients in full).
// - DeepSpeed's mixed-precision layout (stages 1-3 under amp; P parameters, L the largest layer's, S the optimizer's
//   fp32 state per parameter, 8 for Adam): 16-bit weights and gradients, fp32 master weights and gradients, the
//   optimizer's state, all alive: ZeRO-1 4P + (8 + S)P/N, ZeRO-2 2P + (10 + S)P/N, ZeRO-3 4L + (10 + S)P/N (DeepSpeed
//   0.19.8's estimate_zero2/3_model_states_mem_needs: 2P + 18P/N and 4L + 18P/N with Adam), plus one reduce bucket
//   and the largest phase's activations and transients (its gradients and copies being model states here).
// The backward's gradients grow as its saved tensors go: sharded, it holds at most the smaller of its peak and its
// largest bytes but the gradients plus their shard (an upper bound). A ledger without
// phases (measured, not traced) is one phase holding every gradient and copy. Requires whole.peak >= 0 and cards
// >= 1 (InvalidArgument otherwise).
PerCardTrainingMemory shard_training_memory(const PredictedTrainingMemory& whole, int64_t cards, ShardingStage stage);
// The fewest cards, 1 .. max_cards, whose per-card total is at most card_bytes; 0 when none is enough (the
// replicated part alone does not fit).
int64_t cards_needed(const PredictedTrainingMemory& whole, int64_t card_bytes, ShardingStage stage,
                     int64_t max_cards = 65536);
// A ring all-reduce of `bytes` over `cards`, each with `link_gbs` of bus bandwidth: 2 (n - 1) / n x bytes / link
// (the bus bandwidth of nccl-tests: docs/metrics.md); 0 for one card.
double ring_allreduce_seconds(double bytes, int64_t cards, double link_gbs);

// --- serving: the M/D/1 queue ---
// Poisson arrivals at `rate_per_s`, one server with a deterministic service time. The q-quantile of the time a
// request waits before its service starts, from Lindley's recursion W' = max(0, W + service - A) over 2,000,000
// simulated arrivals after 100,000 discarded (fixed seed: the same figure every run; within about 1% of the
// exact distribution, tests/test_projection.cpp). +infinity at utilisation >= 1.
double md1_waiting_quantile_s(double rate_per_s, double service_s, double quantile);
// The highest Poisson rate whose `quantile` of the response time (wait + service) is at most bound_s (bisection,
// to 0.1%); 0 when the service alone exceeds the bound.
double md1_max_rate_per_s(double service_s, double bound_s, double quantile = 0.99);

}  // namespace tvie
