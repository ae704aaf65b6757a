// The front door: one runner per scenario, every one of the shape
//
//   XReport run_X(const Workload& workload, const XSettings& settings, const RunOptions& options);
//
// A runner resolves options.device, validates its settings once (InvalidArgument names the field, the value
// and what is accepted; nothing has run yet), logs what will run, measures, and returns a report: plain
// numbers with the run's RunContext, ready for any Reporter (tvie/report.hpp). In the manner of MLPerf
// LoadGen's StartTest(sut, qsl, settings): the workload is the system under test, the settings say how.
//
// Underneath, the scenario functions (measure_training, measure_inference, measure_inference_sweep, measure_serving,
// find_max_qps, measure_decoding, measure_allreduce_sweep) are building blocks: they take validated settings and a
// resolved device and return results without a context. The names say which is which: run_X returns a
// report (the front door), measure_X a result (a building block). docs/library.md shows both levels.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tvie/catalog.hpp>
#include <tvie/context.hpp>
#include <tvie/decode.hpp>
#include <tvie/dist.hpp>
#include <tvie/headroom.hpp>
#include <tvie/infer.hpp>
#include <tvie/max_batch.hpp>
#include <tvie/plan.hpp>
#include <tvie/serve.hpp>
#include <tvie/settings.hpp>
#include <tvie/slices.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>

namespace tvie {

// How a runner runs, apart from what it measures.
struct RunOptions {
  std::string device = "auto";    // auto (CUDA if available, else CPU), cpu, cuda, cuda:N
  std::vector<std::string> argv;  // the command line, recorded in the report's context (empty from code)
  std::string config_file;        // ... and the options its --config FILE set (RunContext::config)
  std::vector<std::pair<std::string, std::string>> config;
  // run_train and run_train_data_parallel: after the run, the trained parameters are written here
  // (write_parameters); with data parallelism every rank writes its own, "<path>.rank<N>". "": none.
  std::string save_parameters;
  // run_infer_sweep and run_decode: the weights are read from this file (write_parameters' format, as `tvie train
  // --save-parameters` writes it for the same model and shape) instead of fresh ones of the settings' seed, so that
  // the reduced precisions' accuracy is measured on trained weights. "": fresh weights.
  std::string load_parameters;
};

// A module's parameters, in its parameters() order, then its buffers in buffers() order (BatchNorm's running
// statistics), as one torch::save archive of a tensor list (torch::load of a std::vector<torch::Tensor> reads it
// back), written atomically.
void write_parameters(const torch::nn::Module& module, const std::string& path);
// A module of `workload` holding the parameters and buffers write_parameters wrote to `path` (on the CPU, fp32; a
// file of the parameters alone leaves the buffers fresh). InvalidArgument(`field`, path, ...) when the file cannot
// be read or holds another model's tensors (their count, a shape or a dtype differs).
std::shared_ptr<torch::nn::Module> read_parameters(const Workload& workload, const std::string& path,
                                                   const std::string& field = "load_parameters");

// --- reports: what each runner returns ---

// The inference batch once more, run by an AOTInductor package of the same model (CompareSettings::aoti_path):
// Inductor's fused kernels beside LibTorch's eager operators, on the same inputs, weights the package's constants.
struct CompiledInference {
  std::string package;     // the .pt2 file, as given
  InferenceResult result;  // no prediction: the package's kernels are not operators tvie traces
  CardFraction of_card;
  double throughput_ratio = 0;   // compiled samples/s / eager inference samples/s
  double peak_memory_ratio = 0;  // compiled inference peak / eager inference peak
};

// Training and inference of the same model, side by side.
struct CompareReport {
  static constexpr const char* kind = "compare";  // the report's name in errors
  RunContext context;
  CompareSettings settings;  // infer.dtype as run (also when chosen by infer_dtype_auto)
  std::string workload;      // "gpt/tiny"
  ModelFacts facts;
  TrainingResult training;
  InferenceResult inference;
  // How the inference dtype was chosen: "given" (settings.infer.dtype), or "auto: <dtype>: <why>".
  std::string inference_dtype_choice = "given";
  // Ratios between the modes (0 when a denominator is 0).
  double peak_memory_ratio = 0;       // training peak / inference peak
  double parameter_memory_ratio = 0;  // training parameters / inference parameters
  double throughput_ratio = 0;        // inference samples/s / training samples/s
  // settings.new_tokens > 0: the trained weights served as a generation (its settings as run: the prompt is the
  // context less the new tokens), and training's peak over the generation's.
  std::optional<DecodeSettings> generation_settings;
  std::optional<DecodeResult> generation;
  double generation_peak_memory_ratio = 0;
  // Where each figure stands against the card the run used (tvie/headroom.hpp): the training step, the inference
  // batch and, with a generation, its prefill and decoding step.
  CardFraction training_of_card, inference_of_card;
  std::optional<CardFraction> prefill_of_card, decoding_of_card;
  std::optional<CompiledInference> compiled;  // settings.aoti_path set
};

// Training only; with data parallelism, `distributed` holds rank 0's communication figures.
struct TrainReport {
  static constexpr const char* kind = "train";  // the report's name in errors
  RunContext context;
  TrainSettings settings;
  std::string workload;
  ModelFacts facts;
  TrainingResult training;
  std::optional<DistSettings> dist;              // data parallelism: its settings
  std::optional<DistributedResult> distributed;  // data parallelism: what communication cost
  int64_t rank = 0;                              // which rank made this report (only rank 0's is complete)
  CardFraction of_card;                          // the step against the card (tvie/headroom.hpp)
};

// Inference only: the batch x precision sweep.
struct InferReport {
  static constexpr const char* kind = "infer";  // the report's name in errors
  RunContext context;
  std::string workload;
  ModelFacts facts;
  InferSweepSettings settings;
  // How the weights were made: "fresh, seed N" or "read from FILE" (RunOptions::load_parameters).
  std::string weights;
  InferSweepResult sweep;
  std::vector<CardFraction> of_card;  // each row of the sweep against the card, in the rows' order
};

// A serving load (with settings.max_qps_search: the search, and the run at the highest passing QPS).
struct ServeReport {
  static constexpr const char* kind = "serve";  // the report's name in errors
  RunContext context;
  std::string workload;
  ModelFacts facts;
  ServeSettings settings;  // target_qps: the QPS of `result` (with a search: the highest passing)
  ServeResult result;
  std::optional<MaxQpsResult> search;  // settings.max_qps_search
  CardFraction of_card;                // `result` against the card (tvie/headroom.hpp)
};

// KV-cached decoding of a zoo gpt.
struct DecodeReport {
  static constexpr const char* kind = "decode";  // the report's name in errors
  RunContext context;
  std::string workload;  // "gpt/tiny"
  ModelFacts facts;
  DecodeSettings settings;
  std::string weights;  // as InferReport's
  DecodeResult result;
  CardFraction prefill_of_card, decoding_of_card;  // against the card (tvie/headroom.hpp)
};

// An all-reduce sweep in the manner of nccl-tests' all_reduce_perf (rank 0's figures).
struct AllreduceReport {
  static constexpr const char* kind = "allreduce";  // the report's name in errors
  RunContext context;
  AllreduceSweepSettings settings;
  AllreduceSweepResult result;
  int64_t rank = 0;
};

// The largest batch that fits, for training, inference, a generation, or several (compare --find-max-batch).
struct MaxBatchSearchSettings {
  bool training = true;
  bool inference = true;
  bool generation = false;        // gpt, llama: the most sequences a KV-cached generation of `decode` holds
  TrainSettings train;            // everything but the batch size (accumulate must be 1)
  InferSettings infer;            // everything but the batch size
  DecodeSettings decode;          // everything but the batch size; its dtype is infer's
  bool infer_dtype_auto = false;  // infer.dtype := what the device runs natively (as CompareSettings)
  MaxBatchSettings search;
};

struct MaxBatchReport {
  static constexpr const char* kind = "max-batch";  // the report's name in errors
  RunContext context;
  std::string workload;
  ModelFacts facts;
  MaxBatchSearchSettings settings;
  std::optional<MaxBatchResult> training;
  std::optional<MaxBatchResult> inference;
  std::optional<MaxBatchResult> generation;
};

// A big model emulated by slices (tvie/slices.hpp), in training and/or inference: each slice measured, the
// full model extrapolated and predicted. The full model was not run.
struct TrainingSlices {
  TrainSettings settings;
  SlicePlan plan;                      // the source's
  std::vector<TrainingResult> slices;  // measured, in the plan's slice order (the base slice first)
  TrainingMemory extrapolated;         // the full model, extrapolated from the slices
  double extrapolated_step_ms = 0;     // mean step time, extrapolated the same way (-1: the slices' times do not rise)
  PredictedTrainingMemory predicted;   // the full model's prediction (its trace; nothing run)
  CardFraction of_card;  // the extrapolated step against the card: the full model's FLOPs (tvie/headroom.hpp)
};
struct InferenceSlices {
  InferSettings settings;
  SlicePlan plan;  // the source's for_inference(): the vocabulary at its full size
  std::vector<InferenceResult> slices;
  InferenceMemory extrapolated;
  double extrapolated_latency_ms = 0;  // mean batch latency, extrapolated (-1 as above)
  PredictedInferenceMemory predicted;
  CardFraction of_card;  // the extrapolated batch: the full model's FLOPs and its extrapolated weights
};
// A KV-cached generation by slices (gpt, llama): each slice prefills and decodes as `tvie decode` does; the ledger,
// the time to first token and the time per output token are extrapolated along the blocks.
struct GenerationSlices {
  DecodeSettings settings;
  SlicePlan plan;  // the source's for_inference(): the vocabulary at its full size
  std::vector<DecodeResult> slices;
  GenerationMemory extrapolated;
  double extrapolated_ttft_ms = 0;  // mean time to first token, extrapolated (-1 as above)
  double extrapolated_tpot_ms = 0;  // mean time per output token, extrapolated (-1 as above; 0: one new token)
  // batch x new tokens / (TTFT + (new - 1) x TPOT), of the extrapolated times; 0 where either is not extrapolated.
  double extrapolated_tokens_per_s = 0;
  GenerationMemory predicted;  // predict_generation_memory of the full model
  // The extrapolated prefill and decoding step against the card: the full model's traced FLOPs and its
  // extrapolated weights and cache (tvie/headroom.hpp).
  CardFraction prefill_of_card, decoding_of_card;
};
struct SliceReport {
  static constexpr const char* kind = "slices";  // the report's name in errors
  RunContext context;
  std::string workload;                        // the full model's label ("llama/llama-3-8b")
  ModelFacts facts;                            // the full model's
  SlicePlan plan;                              // the source's
  std::optional<TrainingSlices> training;      // train, compare
  std::optional<InferenceSlices> inference;    // infer, compare (fresh weights of the same seed, not trained ones)
  std::optional<GenerationSlices> generation;  // decode, compare of gpt and llama (fresh weights, as inference's)
};
// The zoo (`tvie list`): every model's presets with their analytic facts; nothing is built or run.
struct ZooPreset {
  std::string model, preset;
  ModelFacts facts;    // parameters, buffer bytes, forward FLOPs per sample, tokens per sample (analytic)
  int64_t blocks = 0;  // transformer blocks (checkpointing, --slice-layers); 0: none (mlp, cnn, resnet)
  std::string source;  // where the preset's shape comes from (a published model, or tvie's own size)
};
struct ZooReport {
  static constexpr const char* kind = "list";  // the report's name in errors
  RunContext context;
  std::vector<ZooPreset> presets;
};
// The accelerator catalog (tvie/catalog.hpp), or the cards asked for, with the host's CPU class.
struct CardsReport {
  static constexpr const char* kind = "cards";  // the report's name in errors
  RunContext context;
  int catalog_schema_version = 0;
  std::string catalog_description;
  std::map<std::string, std::string> units;
  std::string efficiency_description;  // what the cards' efficiency fractions are (catalog)
  std::string cloud_prices_source;     // where the cards' cloud prices come from (catalog)
  std::vector<Accelerator> cards;
  std::vector<CpuClass> cpu_classes;
  std::string host_class;  // the CpuClass id of this machine ("" when none)
};
// The workload projected onto cards (tvie/plan.hpp): nothing runs but the predictions.
struct PlanReport {
  static constexpr const char* kind = "plan";  // the report's name in errors
  RunContext context;
  std::string workload;
  ModelFacts facts;
  PlanSettings settings;
  PredictedTrainingMemory training_predicted;    // at settings.train's batch, CUDA's rules
  PredictedInferenceMemory inference_predicted;  // at batch 1, CUDA's rules
  StepWork training_work;                        // one step at settings.train's batch, CUDA's kernels
  StepWork inference_work;                       // one batch of 1, CUDA's kernels
  std::string host_class;                        // this machine's CPU class ("" when none: no host card)
  double host_clock_ghz = 0;                     // /proc/cpuinfo, for the host card
  std::vector<CardPlan> cards;                   // the catalog's cards asked for, then the host
};
struct SliceRunSettings {
  std::optional<TrainSettings> train;  // at least one of the three
  std::optional<InferSettings> infer;
  bool infer_dtype_auto = false;  // infer.dtype: the one the device runs natively (as CompareSettings)
  // A KV-cached generation (gpt, llama). With infer and infer_dtype_auto, its dtype is infer's as resolved.
  std::optional<DecodeSettings> generate;
};

// --- runners ---

// Compare's generation (CompareSettings::new_tokens, compare --slice-layers): `new_tokens` after prompts of the
// context less them, of a model with a KV-cached forward; 0 asks for none. InvalidArgument("compare.new_tokens").
void validate_compare_new_tokens(const Workload& workload, int64_t new_tokens);

// Trains the workload, then runs batched inference on a converted copy of the trained weights, on the
// same device. With settings.infer_dtype_auto, the inference dtype is the one the device runs natively.
CompareReport run_compare(const Workload& workload, const CompareSettings& settings, const RunOptions& options = {});

// Training only, on one process.
TrainReport run_train(const Workload& workload, const TrainSettings& settings, const RunOptions& options = {});

// One rank of data-parallel training. Every rank of the job calls it; the job comes from the environment
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as `tvie launch` and torchrun set them; one
// process without MASTER_PORT takes any free port). On CUDA each rank uses cuda:LOCAL_RANK. The ranks check
// at rendezvous that their settings agree (ConfigurationMismatch names the first that differs). Rank r draws
// its data with seeds offset by r; the weights start from rank 0's; the loss curve is the mean over ranks.
TrainReport run_train_data_parallel(const Workload& workload, const TrainSettings& settings, const DistSettings& dist,
                                    const RunOptions& options = {});

// Every batch size x every dtype, each row measured as measure_inference does; rows that do not fit say so.
InferReport run_infer_sweep(const Workload& workload, const InferSweepSettings& settings,
                            const RunOptions& options = {});

// A serving load on a freshly initialised copy of the workload (or, with settings.max_qps_search, the search
// for the highest QPS that meets the p99 bound).
ServeReport run_serve(const Workload& workload, const ServeSettings& settings, const RunOptions& options = {});

// Searches the largest batch that fits on the device for training and/or inference (tvie/max_batch.hpp): one
// instrumented step per probe, the prediction's largest batch beside the measured one.
MaxBatchReport run_max_batch(const Workload& workload, const MaxBatchSearchSettings& settings,
                             const RunOptions& options = {});

// Measures every slice of `source.plan` (source.make builds each: the model at its real width with fewer
// blocks or vocabulary entries) in training, inference and/or generation and extrapolates to `full`; `full` itself is
// never built, only asked for its facts and predictions. A zoo model's source: zoo_slices (tvie/models.hpp).
SliceReport run_slices(const Workload& full, const SliceSource& source, const SliceRunSettings& settings,
                       const RunOptions& options = {});

// Projects the workload's training and inference onto the cards (tvie/plan.hpp): fits, largest batch, step time,
// cards needed, serving rate, power and cost, all projected. Runs nothing on a device; seconds.
PlanReport run_plan(const Workload& workload, const PlanSettings& settings, const RunOptions& options = {});

// The built-in catalog's cards ("all" or ids: "t4,l4"; InvalidArgument("cards", ...) for an unknown id).
CardsReport run_cards(const std::string& cards = "all", const RunOptions& options = {});
// The zoo's models and presets (analytic; builds no module).
ZooReport run_list(const RunOptions& options = {});

// KV-cached decoding. The workload must be a zoo gpt (make_gpt_workload, make_zoo_workload("gpt", ...)):
// decoding needs its cached forward; any other workload is refused with InvalidArgument("model", ...).
DecodeReport run_decode(const Workload& workload, const DecodeSettings& settings, const RunOptions& options = {});

// An all-reduce sweep over the ranks of the job in the environment (as run_train_data_parallel). Every rank
// calls it; rank 0's report holds the figures. No workload: the message sizes are the settings.
AllreduceReport run_allreduce(const AllreduceSweepSettings& settings, const DistSettings& dist,
                              const RunOptions& options = {});

// Launch-side helpers: the job a rank belongs to (the environment; one process without MASTER_PORT
// rendezvouses on any free port) and the device it uses (cuda:LOCAL_RANK for CUDA).
DistEnv rank_environment();
c10::Device rank_device(const std::string& device, const DistEnv& env);

}  // namespace tvie
