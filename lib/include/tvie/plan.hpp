// Sizing (`tvie plan`): a workload's training and inference projected onto each card of the catalog, from its
// predicted ledger (tvie/predict.hpp) and its traced work (tvie/projection.hpp). Nothing here is measured: every
// time is an interval, the roofline bound (datasheet peaks and bandwidth) .. the estimate (the card's
// efficiencies and launch overhead), and every energy figure is TDP x time, an upper bound.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <tvie/catalog.hpp>
#include <tvie/class_times.hpp>
#include <tvie/decode.hpp>
#include <tvie/predict.hpp>
#include <tvie/projection.hpp>
#include <tvie/settings.hpp>

namespace tvie {

class Workload;

// A measured report turned into a correction of the projection: the workload the report measured, projected
// onto the catalog card it ran on, against what it measured. factor = measured / projected estimate; applied
// to the estimates of every card of the same architecture (a report from an H200 calibrates the Hopper
// cards; a CPU report calibrates the host card, on the machine that made it), the estimate never below the
// bound. One measurement per mode (and per phase of a training step: PhaseCalibration), so one correction per
// mode: the report gives one time per mode, not one per class. The correction goes to the term that dominated the
// projection of the measured run: a run projected to spend at least half its time launching kernels (a small model,
// batch 1 decoding) corrects the cards' kernel overhead, leaving the operators' time as projected; any other corrects
// the operators' time, leaving the launches. A small model's factor then does not multiply a big model's weight reads
// (calibration_factor). Generation has two modes of its own, measured by `tvie decode` (or --measure with
// --new-tokens): the prefill (the prompt's forward) and the decoding step (one token per request, every weight read:
// memory-bound where a forward of a whole sequence is compute-bound, so a forward's factor says little about it). Where
// a generation has no factor of its own, the inference factor stands in for both.
//
// One mode's comparison: what a run measured against the projection of the same work on the card it ran on.
struct CalibrationFactor {
  double factor = 0;  // measured / projected estimate; 0: the report has no such mode
  double measured_s = 0, projected_s = 0, bound_s = 0;
  double launch_s = 0;  // the kernel launches in projected_s (kernels x the card's kernel_overhead_us)
  // What calibrated() multiplies: the operators' time (projected_s - launch_s) and the launches. One of the two is
  // 1 (the term that did not dominate); both are `factor` when the measurement is below what that term alone takes.
  double work_factor = 0, launch_factor = 0;
  std::string unsupported;  // why a measured mode has no factor: the card cannot project its precision
  // The measurement was faster than the roofline bound of its own projection: the card beat the catalog's
  // bandwidth or peaks for this workload (a CPU whose working set is held in its cache beats the DRAM bandwidth
  // the catalog gives per core). calibrated() still stops every estimate at its bound.
  bool below_bound = false;
};

// A training step's phases, each against its own part of the projection: the forward (all micro-batches), the
// backward (with any recomputation of checkpointed blocks) and the optimizer's step. A forward of big matrix
// products, a backward of twice the work and an optimizer of many small memory-bound kernels miss the catalog's
// efficiencies by different amounts; one factor for the step would carry the mix of the measured run to a workload
// of another mix. Factors 0 where the report has no phase times (a CUDA-graph step is timed whole).
// Within a phase, by operator class (tvie/class_times.hpp): the phase's measured time split among the classes in the
// proportions a profiled step gave them (a class the projection has no work for, or the profile no time for, leaves
// its time to the others), each class against its own projection. A big matrix product and the elementwise kernels
// around it miss the catalog by different amounts; a phase's one factor carries the measured run's mix of them. A
// class with no factor here (a convolution where the measured model had none) takes its phase's factor.
struct ClassCalibration {
  std::array<CalibrationFactor, kOpClassCount> by_class{};
  bool any() const {
    for (const auto& f : by_class)
      if (f.factor > 0) return true;
    return false;
  }
};

struct PhaseCalibration {
  CalibrationFactor forward, backward, optimizer;
  ClassCalibration forward_classes, backward_classes;  // when the report has time by class (--profile-classes)
  bool complete() const { return forward.factor > 0 && backward.factor > 0 && optimizer.factor > 0; }
};

// A training step's time split by phase, as the step timer measured them (the medians of the timed steps), and
// the forward's and backward's time by operator class where one more step was profiled (all zero where not).
struct MeasuredPhases {
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
  ClassTimes forward_classes, backward_classes;
};
// The mean step `step_s` split in the proportion of the phases' medians (s): the data phase, which the projection
// has no part for, spread over the three; communication (data parallelism) taken out, as the plan adds its own
// all-reduce. Zeros when a phase median is not > 0.
MeasuredPhases split_training_step(double step_s, double data_s, double forward_s, double backward_s,
                                   double optimizer_s, double communication_s = 0);

struct Calibration {
  std::string source;                  // the report's path
  std::string device;                  // as the report names it: "cuda:0 (NVIDIA H200)"
  std::string card_id;                 // the catalog card it ran on: "h200", or "host"
  std::string architecture;            // the cards it calibrates: "Hopper"; "host" for the host card only
  std::string workload;                // "gpt/gpt2-small"
  CalibrationFactor training;          // one training step
  PhaseCalibration training_phases;    // its phases; when complete, they calibrate training instead of `training`
  CalibrationFactor inference;         // one inference batch
  ClassCalibration inference_classes;  // its classes, when the report has its time by class (--profile-classes)
  CalibrationFactor prefill;           // a generation's prefill (its time to the first token)
  CalibrationFactor decoding;          // a generation's decoding step (its mean time per output token)
  ClassCalibration prefill_classes, decoding_classes;  // theirs by class (tvie decode --profile-classes)
};

// The correction that makes `projected` (the projection of a measured run on the card it ran on) equal to
// `measured_s`: launch-bound (launch_s >= half the estimate) and measured above the operators' time: launch_factor
// = (measured - operators) / launches, work_factor 1; else, measured above the launches: work_factor = (measured -
// launches) / operators, launch_factor 1; else both = measured / estimate. factor 0 when not supported or not > 0.
CalibrationFactor calibration_factor(const ProjectedTime& projected, double measured_s);
// `time` corrected: its operators' time (each class's estimate, the optimizer's) x work_factor, its launches x
// launch_factor, the estimate never below the bound. Unchanged when factor is 0.
ProjectedTime calibrated(ProjectedTime time, const CalibrationFactor& factor);
// What `factor` corrects, in words: "the operators' time x2.41", "the kernel overhead x0.341 (launch-bound)",
// "both x0.27"; "" when it has none.
std::string describe_correction(const CalibrationFactor& factor);
// A training step of `work` projected onto `card` and calibrated: phase by phase (forward, backward and optimizer
// each projected alone and corrected by its own factor, then summed) when `phases` is complete, else the whole
// step by `step`; within the forward and the backward, class by class where `phases` has factors by class (each
// class projected alone, corrected by its class's factor or else its phase's).
ProjectedTime calibrated_training_step(const StepWork& work, const Accelerator& card, const CalibrationFactor& step,
                                       const PhaseCalibration& phases);
// The phases' factors of a training step of `work` measured on `card` (each phase's projection against its time),
// and the forward's and backward's by class where `m` has their time by class.
PhaseCalibration calibrate_training_phases(const StepWork& work, const Accelerator& card, const MeasuredPhases& m);

// A generation measured (`tvie decode`): requests of `infer.batch_size` decoded together in `infer.dtype`, a
// prompt of prompt_tokens then new_tokens generated; the mean time to the first token and per output token.
struct MeasuredGeneration {
  InferSettings infer;
  int64_t prompt_tokens = 0, new_tokens = 0;
  double ttft_s = 0, tpot_s = 0;
  ClassTimes prefill_classes, decoding_classes;  // one more generation profiled; all zero where not
};
// The generation `decoded` describes (its batch, dtype, prompt and new tokens), with the mean time to the first
// token and per output token in ms (`tvie decode`'s ttft_ms.mean, tpot_ms.mean; the latter read only when more
// than one token was generated).
MeasuredGeneration measured_generation(const DecodeSettings& decoded, double ttft_ms_mean, double tpot_ms_mean);

// `tvie plan --measure`: run the workload here first (run_plan's device) and calibrate with what it measured.
struct PlanMeasure {
  bool enabled = false;
  int64_t steps = 3, warmup_steps = 1;  // timed training steps / inference batches, and warm-up
  int64_t layers = 0;                   // measure the zoo model cut to this many blocks (0: whole): a big model's slice
  int64_t vocab = 0;  // ... and to this vocabulary (0: the preset's); training's embedding and head at full size
};

// How a card's serving rate batches requests (PlanSettings::batching).
enum class ServingBatching {
  automatic,       // continuous for generation (--new-tokens), static batches for requests of one forward
  static_batches,  // a batch of b requests waits for its last request, then runs to its end (batched_max_rate_per_s)
  continuous,      // generation only: requests join and leave between decoding steps (ContinuousServer)
};
std::string to_string(ServingBatching b);  // "auto", "static", "continuous"
ServingBatching parse_serving_batching(const std::string& text, const std::string& field = "plan.batching");

// Whose kernels the serving projection models (PlanSettings::stack).
enum class ServingStack {
  automatic,  // tuned for sizing; tvie when a calibration (--from, --measure) measured tvie's own kernels
  tvie,       // tvie's own LibTorch inference copy, as `tvie infer` runs it (what --from / --measure calibrate)
  tuned,      // a TensorRT-class stack (tuned_inference_work, tvie/projection.hpp), calibrated per card on MLPerf
};
std::string to_string(ServingStack s);  // "auto", "tvie", "tuned"
ServingStack parse_serving_stack(const std::string& text, const std::string& field = "plan.stack");

struct PlanSettings {
  TrainSettings train;        // per card: batch, precision, optimizer, accumulation, checkpointing
  InferSettings infer;        // dtype; the throughput batch is searched, latency is at batch 1
  std::string cards = "all";  // "all" or catalog ids: "t4,l4,h100-sxm"
  bool include_host = true;   // also this machine's CPU (its class from the catalog), as card "host"
  double serve_qps = 0;       // the request rate to serve (0: none: no card count for serving)
  double p99_ms = 0;          // the bound on a request's p99 latency (0: none: the rate is the throughput)
  // Generation (the zoo's gpt and llama): a request is a prompt of prompt_tokens, then new_tokens generated one
  // by one (KV-cached decoding; the first comes from the prompt's forward), the requests of a batch decoded
  // together. 0 new tokens: a request is one forward of a sequence of the context length (as in ranking or
  // embedding). prompt_tokens 0: the context length (`--seq`) minus the new tokens; prompt + new tokens - 1 at
  // most the context length (the positions the model is built for, as `tvie decode` asks).
  int64_t new_tokens = 0;                                 // per request (0: no generation)
  int64_t prompt_tokens = 0;                              // per request (0: the context length minus the new tokens)
  ServingBatching batching = ServingBatching::automatic;  // the serving rate's batching (continuous: generation)
  ServingStack stack = ServingStack::automatic;           // whose kernels serving is projected for (training: tvie's)
  int64_t train_tokens = 0;                               // the training budget in tokens (token models) ...
  int64_t train_samples = 0;                              // ... or in samples (0 and 0: no budget)
  double usable_memory_fraction = 0.9;                    // of a card's memory the allocator can give the run
  int64_t max_batch = 4096;                               // the largest batch the searches try
  std::optional<Calibration> calibration;                 // from a measured report (calibration_from_report)
  PlanMeasure measure;  // or from a measurement made first (run_plan; not with calibration)
};

// Validates once (InvalidArgument names the field): the settings' own rules, plus p99_ms > 0 when serve_qps
// > 0, at most one budget, fraction in (0, 1], max_batch >= 1.
void validate(const PlanSettings& settings);
// Whether the serving rate batches continuously: generation (new_tokens > 0) unless static batches are asked.
bool continuous_batching(const PlanSettings& settings);
// The stack serving is projected for: `stack`, with automatic resolved to tvie when the plan is calibrated
// (calibration or measure: both measure tvie's kernels) and to tuned otherwise. Never automatic.
ServingStack resolved_stack(const PlanSettings& settings);

// A projected figure: at the roofline bound (best case) and at the estimate.
struct Projected {
  double bound = 0, estimate = 0;
};

// A cost at the card's listed on-demand cloud prices (Accelerator::cloud_prices): at the cheapest and at the
// dearest listing. listings = 0 and both -1 when the catalog lists no cloud price for the card.
struct CloudCost {
  double low_usd = -1, high_usd = -1;
  int64_t listings = 0;
};
CloudCost cloud_cost(const Accelerator& card, double device_hours);

struct TrainingPlan {
  bool supported = true;
  std::string unsupported;    // why not: the card has no peak for the precision
  int64_t usable_bytes = 0;   // memory x usable_memory_fraction
  int64_t peak_bytes = 0;     // predicted peak at the batch asked, one card, nothing sharded (-1: not predicted)
  std::string peak_note;      // how the peak was obtained when not by the trace (measured and extrapolated), or
                              // why it is not known
  bool fits = false;          // peak_bytes <= usable_bytes (false when not predicted)
  int64_t largest_batch = 0;  // per card, nothing sharded (0: not even batch 1 fits)
  ProjectedTime step;         // one step at the batch asked on one of `cards` cards (its 1/cards of the optimizer)
  Projected samples_per_s;    // per card (bound: the higher)
  Projected tokens_per_s;     // 0 for a model without tokens
  double mfu_estimate = 0;    // model FLOPs / (estimated step x the matmul peak): the utilisation assumed
  // The fewest cards per ZeRO stage (index 0: none .. 3: parameters) for the batch asked per card; 0: none
  // up to 65,536 cards is enough.
  std::array<int64_t, 4> cards_needed{};
  // Per stage, the predicted per-card ledger at those cards (total 0 where no count is enough).
  std::array<PerCardTrainingMemory, 4> per_card{};
  int64_t cards = 0;                          // what the budget uses: 1 when it fits, else the fewest sharded
  ShardingStage stage = ShardingStage::none;  // with that stage
  double allreduce_s = 0;      // one step's gradient all-reduce over `cards` (ring, its link; 1.5x for ZeRO-3)
  std::string allreduce_note;  // "no link figure" when the card has none
  // The budget (when one is asked): steps of `cards` x batch samples.
  double budget_steps = 0;
  Projected budget_hours;       // bound: the shorter
  Projected budget_energy_kwh;  // TDP x cards x time (upper bounds of the energy); -1: no TDP
  CloudCost budget_usd;         // renting `cards` for the estimated budget hours, on demand
};

// Generation (PlanSettings::new_tokens > 0): a request's two phases at batch 1, and the tokens generated per second.
struct GenerationPlan {
  int64_t prompt_tokens = 0, new_tokens = 0;  // 0 new tokens: no generation (a request is one forward)
  ProjectedTime prefill;                      // batch 1: the prompt's forward, which gives the first token
  Projected time_per_output_token_s;          // batch 1: the mean decoding step (0 when one token is asked)
  Projected tokens_per_s;                     // generated tokens per second per card at best_batch
  // batch 1: keys and values of prompt + new - 1 positions, in the dtype tvie's layers compute in (the tuned stack:
  // its activations', tuned_activation_bytes)
  int64_t kv_cache_bytes = 0;
};

struct InferencePlan {
  bool supported = true;
  std::string unsupported;
  int64_t usable_bytes = 0;
  // Predicted peak at batch 1 (-1: not predicted: a workload without a trace). With generation: the weights, the
  // request's whole KV cache, its prompt and the larger working set of the prefill and the last decoding step.
  // A "sample" below is then a request (prompt and generation), and the latency its prefill and decoding steps.
  int64_t peak_bytes = 0;
  std::string peak_note;  // how the peak was obtained when not by the trace: int8/fp8's estimate, a workload
                          // without a trace measured and extrapolated; or why it is not known
  bool fits = false;
  int64_t largest_batch = 0;  // 0: not even batch 1 fits (or not predicted: then max_batch)
  ProjectedTime latency;      // batch 1
  int64_t best_batch = 0;     // the batch with the highest estimated throughput
  Projected samples_per_s;    // at best_batch
  // Serving: requests/s one card sustains with its p99 within the bound (settings.p99_ms). Static batches
  // (continuous false): batches of serving_batch requests (a batch waits for its last request; M/D/1 queue of
  // batches); without a bound, the throughput at best_batch. Continuous batching (generation): up to
  // serving_batch requests decoding at once (ContinuousServer); without a bound, the capacity of the best such
  // limit.
  Projected qps_per_card;
  int64_t serving_batch = 0;
  bool continuous = false;
  int64_t cards_for_qps = 0;  // for settings.serve_qps at the estimate (0: no rate asked or none sustained)
  double power_kw = -1;       // cards_for_qps x TDP (an upper bound); -1: no TDP
  double hardware_usd = -1;   // cards_for_qps x purchase price; -1: no purchase price in the catalog
  CloudCost usd_per_million;  // a million requests at serve_qps on cards_for_qps rented cards, on demand
  GenerationPlan generation;
  // stack tuned: the card's calibration on the published anchor (supported false: why the card is not projected).
  // The memory figures stay tvie's prediction of its own inference copy, but for a generation's KV cache, held in the
  // stack's activation dtype (tuned_activation_bytes).
  TunedCalibration tuned;
};

struct CardPlan {
  Accelerator card;
  // The calibrations applied to this card's estimates (factor 0: none: not the calibrated architecture). With
  // generation, prefill and decoding are its two phases' (their own, or the inference batch's).
  CalibrationFactor training_calibration, inference_calibration, prefill_calibration, decoding_calibration;
  PhaseCalibration training_phase_calibration;   // complete: these calibrated training, not training_calibration
  ClassCalibration inference_class_calibration;  // any(): these calibrated the inference batch by class
  ClassCalibration prefill_class_calibration, decoding_class_calibration;  // any(): these, a generation's phases
  TrainingPlan training;
  InferencePlan inference;
};

// This machine's CPU as a card: its catalog class (host_cpu_class), LibTorch's intra-op threads as cores, the
// clock /proc/cpuinfo reports and the RAM. nullopt when the CPU has no class in the catalog or no clock is known.
std::optional<Accelerator> local_host_accelerator();

// Reads a tvie JSON report (compare, train: a training step and an inference batch; decode: a generation's
// prefill and decoding step; infer and serve have no single batch time and are refused) and projects what it
// measured onto the catalog card it ran on. `host` is the host card (host_accelerator) when
// this machine has a CPU class: a CPU report calibrates it only when the report's CPU model is this machine's.
// InvalidArgument("from", ...) for a report that is not JSON, not of a zoo model, or from a device the catalog
// does not have.
Calibration calibration_from_report(const std::string& json_text, const std::string& source,
                                    const std::optional<Accelerator>& host);

// The calibration from times measured here or elsewhere: `workload` at `train` (its mean step, s) and `infer` (its
// mean batch latency, s) projected onto `card` (either may be absent: no factor for that mode); the step's phases
// (and their time by class) and the batch's time by class where measured. source, device are left empty for the
// caller.
Calibration calibration_from_measurement(const Workload& workload, const Accelerator& card,
                                         const std::optional<TrainSettings>& train, double step_s,
                                         const std::optional<InferSettings>& infer, double latency_s,
                                         const std::optional<MeasuredPhases>& phases = std::nullopt,
                                         const ClassTimes& inference_classes = {});
// ... and the prefill and decoding factors of a measured generation (`workload` a zoo gpt or llama), added to `into`.
void calibrate_generation(Calibration& into, const Workload& workload, const Accelerator& card,
                          const MeasuredGeneration& measured);
// The catalog card a CUDA device is (its name as CUDA reports it, "NVIDIA H200", and its memory in bytes):
// the card whose model is a word of the name, PCIe or not as the name says, memory within 15%; nullptr when
// none or more than one.
const Accelerator* catalog_card_of_device(const std::string& gpu_name, double memory_bytes);

// The prompt's tokens of PlanSettings' generation for `workload` (0 when new_tokens is 0): prompt_tokens, or the
// context length minus the new tokens. InvalidArgument("model") unless a zoo gpt or llama (a KV-cached forward);
// InvalidArgument("plan.new_tokens" / "plan.prompt_tokens") when prompt + new tokens - 1 exceeds its context.
int64_t generation_prompt_tokens(const Workload& workload, const PlanSettings& settings);

// Each card's plan (the building block of run_plan, tvie/run.hpp), in the order given. Validates the settings.
// Cards of kind "cpu" are planned with the CPU kernels' ledger rules, the others with CUDA's (tvie/predict.hpp).
// Nothing runs, except for a workload without a trace: its work is counted by LibTorch's profiler
// (profiled_work) and its memory measured on this CPU at batches 2 and 3 (extrapolated_training_memory,
// extrapolated_inference_memory), said in each plan's peak_note.
std::vector<CardPlan> plan_cards(const Workload& workload, const PlanSettings& settings,
                                 const std::vector<Accelerator>& cards);

// Requests/s a server sustains when it runs batches of `batch` requests in `service_s` each (a deterministic
// service), the requests arriving as a Poisson stream, with the `quantile` of a request's latency at most
// `bound_s`. A request waits for its batch to fill ((batch - 1) / rate, the first request's wait) and for the
// batches ahead (an M/D/1 queue of batches at rate / batch); the waiting quantile comes from a table of the
// M/D/1 queue in units of the service time (Lindley's recursion, 200,000 arrivals per utilisation, fixed
// seed). 0 when even one request alone misses the bound.
double batched_max_rate_per_s(double service_s, int64_t batch, double bound_s, double quantile = 0.99);

// Continuous batching of generation, as serving engines schedule it (Orca's iteration-level scheduling, vLLM): up
// to `slots` requests decode together, one token each per iteration. At each iteration's end the requests that have
// arrived (first come, first served, as many as slots are free) have their prompts' forward together (the prefill:
// their first tokens; the decoding requests wait meanwhile: no chunked prefill) and join the next iteration; a
// request leaves with its last token. Nobody waits for a batch to fill or for a batch's other requests to finish,
// as with static batches.
struct ContinuousServer {
  std::function<double(int64_t)> prefill_s;  // the prompts' forward of k requests together, k = 1 .. slots
  std::function<double(int64_t)> step_s;     // one decoding iteration with n requests, n = 1 .. slots
  int64_t new_tokens = 1;                    // per request: the first from the prefill, then new_tokens - 1 steps
  int64_t slots = 1;                         // requests decoding at once (their whole KV caches held)
};
// Requests/s the server sustains with every slot busy, the prefills in batches of slots:
// slots / (prefill_s(slots) + (new_tokens - 1) step_s(slots)) (a request's share of both).
double continuous_capacity_per_s(const ContinuousServer& server);
// The `quantile` of a request's latency (arrival to last token) for requests arriving as a Poisson stream at
// rate_per_s: simulated, 4,000 requests after 400 of warm-up, fixed seed; +inf at or beyond the capacity.
double continuous_latency_quantile_s(const ContinuousServer& server, double rate_per_s, double quantile = 0.99);
// The highest rate whose latency quantile is within bound_s (bisection over the simulation); 0 when a request
// alone misses the bound.
double continuous_max_rate_per_s(const ContinuousServer& server, double bound_s, double quantile = 0.99);

}  // namespace tvie
