// The front door (tvie/run.hpp): each runner resolves and validates its settings once, into a resolved
// struct, then calls the scenario's building blocks and fills a report with the run's context.
#include <tvie/run.hpp>

#include <cstdlib>
#include <sstream>
#include <tuple>
#include <limits>
#include <type_traits>
#include <utility>

#include <torch/serialize.h>

#include "core/compat.hpp"
#include "core/text.hpp"
#include <tvie/aoti.hpp>
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/output_files.hpp>

namespace tvie {

namespace {

// Settings after validation: what the building blocks may rely on.
template <typename Settings>
struct Resolved {
  c10::Device device;
  Settings settings;
};

void log_training(const Workload& workload, const TrainSettings& t, const std::string& device) {
  log::info(cat("training ", workload.name(), " on ", device, ": batch ", t.batch_size, ", ", to_string(t.precision),
                ", checkpoint ", checkpoint_to_string(t.checkpoint_every), ", ", Trainer::kLedgerSteps, " ledger + ",
                t.warmup_steps, " warm-up + ", t.steps, " timed steps"));
}

Resolved<TrainSettings> resolve_training(const Workload& workload, const TrainSettings& settings,
                                         const c10::Device& device) {
  validate(settings, device);
  validate_checkpointing(workload, settings);
  validate_fused_loss(workload, settings);
  return {device, settings};
}

Resolved<CompareSettings> resolve_compare(const Workload& workload, const CompareSettings& settings,
                                          const RunOptions& options, std::string* dtype_choice) {
  const c10::Device device = resolve_device(options.device, "device");
  validate(settings, device);
  validate_checkpointing(workload, settings.train);
  validate_fused_loss(workload, settings.train);
  validate_compare_new_tokens(workload, settings.new_tokens);
  Resolved<CompareSettings> r{device, settings};
  if (settings.infer_dtype_auto) {
    const auto choice = native_inference_dtype(device);
    r.settings.infer.dtype = choice.dtype;
    *dtype_choice = "auto: " + choice.reason;
    validate(r.settings.infer, device);
  }
  return r;
}

// The context block of a report: the machine, and the command line with the options its --config set.
RunContext run_context(const c10::Device& device, const RunOptions& options) {
  RunContext c = make_run_context(device, options.argv);
  c.config_file = options.config_file;
  c.config = options.config;
  return c;
}

// The head every report shares: the run's context, the workload's name and facts.
template <typename Report>
void fill_head(Report& report, const Workload& workload, const c10::Device& device, const RunOptions& options) {
  report.context = run_context(device, options);
  report.workload = workload.name();
  report.facts = workload.facts();
}

double ratio(double a, double b) { return b != 0 ? a / b : 0.0; }

// What must agree across the ranks of a data-parallel job: checked at rendezvous.
std::vector<std::pair<std::string, std::string>> rank_configuration(const Workload& workload, const TrainSettings& t,
                                                                    const DistSettings& d, const c10::Device& device) {
  return {{"model", workload.name()},
          {"device", device.is_cuda() ? "cuda" : "cpu"},
          {"batch", cat(t.batch_size)},
          {"accumulate", cat(t.accumulate)},
          {"steps", cat(t.steps)},
          {"warmup", cat(t.warmup_steps)},
          {"optimizer", to_string(t.optimizer)},
          {"lr", cat(t.learning_rate)},
          {"precision", to_string(t.precision)},
          {"checkpoint", checkpoint_to_string(t.checkpoint_every)},
          {"clip", cat(t.clip_grad_norm)},
          {"seed", cat(t.seed)},
          {"bucket-mb", cat(d.bucket_mb)},
          {"overlap", d.overlap ? "on" : "off"},
          {"backend", to_string(d.backend)}};
}

}  // namespace

DistEnv rank_environment() {
  DistEnv env = dist_env_from_environment();
  if (env.world_size == 1 && std::getenv("MASTER_PORT") == nullptr) env.master_port = 0;  // alone: any free port
  return env;
}

c10::Device rank_device(const std::string& device, const DistEnv& env) {
  const c10::Device d = resolve_device(device, "device");
  return d.is_cuda() ? resolve_device(cat("cuda:", env.local_rank), "device") : d;  // one device per local rank
}

// compare's compiled row, checked before anything runs: the package runs on the run's device, in the inference
// dtype, holds the model's parameter count and accepts the inference batch.
std::unique_ptr<Workload> compiled_twin(const Workload& workload, const CompareSettings& s, const c10::Device& device) {
  if (s.infer.cuda_graph)
    throw InvalidArgument("infer.cuda_graph", "true",
                          "false with an AOTInductor package (it launches its own kernels; both rows run alike)");
  auto twin = make_aoti_twin(workload, s.aoti_path, device, s.infer.dtype, "infer.dtype");
  check_aoti_batches(*twin, {s.infer.batch_size}, "infer.batch_size");
  return twin;
}

CompareReport run_compare(const Workload& workload, const CompareSettings& settings, const RunOptions& options) {
  CompareReport report;
  const auto run = resolve_compare(workload, settings, options, &report.inference_dtype_choice);
  fill_head(report, workload, run.device, options);
  report.settings = run.settings;
  const auto& s = run.settings;
  const auto compiled = s.aoti_path.empty() ? nullptr : compiled_twin(workload, s, run.device);
  log_training(workload, s.train, report.context.device);
  if (s.infer_dtype_auto) log::info(cat("inference dtype ", report.inference_dtype_choice));
  std::shared_ptr<torch::nn::Module> trained;
  report.training = measure_training(workload, s.train, run.device, &trained);
  log::info(cat("inference ", workload.name(), " (", to_string(s.infer.dtype), " copy of the trained weights): batch ",
                s.infer.batch_size, ", 1 ledger + ", s.infer.warmup_steps, " warm-up + ", s.infer.steps,
                " timed batches"));
  report.inference = measure_inference(workload, s.infer, run.device, trained.get());

  const auto& t = report.training;
  const auto& i = report.inference;
  report.peak_memory_ratio = ratio(static_cast<double>(t.memory.peak), static_cast<double>(i.memory.peak));
  report.parameter_memory_ratio = ratio(static_cast<double>(t.memory.parameters),
                                        static_cast<double>(i.memory.parameters + i.memory.packed_weights));
  report.throughput_ratio = ratio(i.samples_per_s, t.samples_per_s);
  if (compiled) {
    InferSettings c = s.infer;
    c.profile_classes = false;  // Inductor's kernels are not the operator classes the profile sorts
    log::info(cat("compiled inference ", compiled->name(), " (", to_string(c.dtype),
                  ", its own constants as weights): batch ", c.batch_size, ", 1 ledger + ", c.warmup_steps,
                  " warm-up + ", c.steps, " timed batches"));
    CompiledInference ci;
    ci.package = s.aoti_path;
    ci.result = measure_inference(*compiled, c, run.device);
    ci.throughput_ratio = ratio(ci.result.samples_per_s, i.samples_per_s);
    ci.peak_memory_ratio = ratio(static_cast<double>(ci.result.memory.peak), static_cast<double>(i.memory.peak));
    report.compiled = std::move(ci);
  }
  if (s.new_tokens > 0) {
    DecodeSettings d;
    d.batch_size = s.infer.batch_size;
    d.prompt_tokens = workload.facts().tokens_per_sample - s.new_tokens;
    d.new_tokens = s.new_tokens;
    d.repetitions = s.generation_repetitions;
    d.dtype = s.infer.dtype;
    d.seed = s.infer.seed;
    d.profile_classes = s.infer.profile_classes;  // one more generation, profiled (plan --from calibrates with it)
    d.cuda_graph = s.infer.cuda_graph;            // --infer-cuda-graph: the decoding steps from a graph too
    log::info(cat("generation ", workload.name(), " (", to_string(d.dtype), " copy of the trained weights): batch ",
                  d.batch_size, ", prompt ", d.prompt_tokens, ", ", d.new_tokens, " new tokens, 2 ledger + ",
                  d.repetitions, " timed generations"));
    report.generation = measure_decoding(workload, d, run.device, trained.get());
    report.generation_settings = d;
    report.generation_peak_memory_ratio =
        ratio(static_cast<double>(t.memory.peak), static_cast<double>(report.generation->memory.peak));
  }
  std::string why;
  const auto card = card_of_run(report.context, &why);
  report.training_of_card = training_fraction(card, why, s.train, t);
  report.inference_of_card = inference_fraction(card, why, i);
  if (report.compiled) report.compiled->of_card = inference_fraction(card, why, report.compiled->result);
  if (report.generation) {
    report.prefill_of_card = prefill_fraction(card, why, workload, *report.generation_settings, *report.generation);
    report.decoding_of_card = decoding_fraction(card, why, workload, *report.generation_settings, *report.generation);
  }
  return report;
}

void write_parameters(const torch::nn::Module& module, const std::string& path) {
  std::vector<torch::Tensor> tensors;
  for (const auto& p : module.parameters()) tensors.push_back(p.detach().to(torch::kCPU));
  for (const auto& b : module.buffers()) tensors.push_back(b.detach().to(torch::kCPU));
  std::ostringstream out;
  torch::save(tensors, out);
  write_file_atomically(path, out.str());
}

std::shared_ptr<torch::nn::Module> read_parameters(const Workload& workload, const std::string& path,
                                                   const std::string& field) {
  const std::string expected = cat("a file `tvie train --save-parameters` wrote for ", workload.name());
  std::vector<torch::Tensor> saved;
  try {
    torch::load(saved, path);
  } catch (const c10::Error&) {
    throw InvalidArgument(field, path, cat(expected, " (this one cannot be read as a tensor list)"));
  }
  auto module = workload.make_module();
  // The parameters, then the buffers (BatchNorm's running statistics: the trained model's eval() forward uses them);
  // a file of the parameters alone leaves the buffers as a fresh module has them.
  auto tensors = module->parameters();
  const size_t parameters = tensors.size();
  for (const auto& b : module->buffers()) tensors.push_back(b);
  if (saved.size() != parameters && saved.size() != tensors.size())
    throw InvalidArgument(field, path,
                          cat(expected, " (", tensors.size(), " tensors; the file holds ", saved.size(), ")"));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < saved.size(); ++i) {
    if (saved[i].sizes() != tensors[i].sizes() || saved[i].scalar_type() != tensors[i].scalar_type())
      throw InvalidArgument(field, path,
                            cat(expected, " (its tensor ", i, " is ", saved[i].scalar_type(), " ", saved[i].sizes(),
                                "; the model's is ", tensors[i].scalar_type(), " ", tensors[i].sizes(), ")"));
    tensors[i].copy_(saved[i]);
  }
  return module;
}

namespace {
std::string weights_description(const RunOptions& options, uint64_t seed) {
  return options.load_parameters.empty() ? cat("fresh, seed ", seed) : cat("read from ", options.load_parameters);
}
}  // namespace

TrainReport run_train(const Workload& workload, const TrainSettings& settings, const RunOptions& options) {
  const auto run = resolve_training(workload, settings, resolve_device(options.device, "device"));
  if (!options.save_parameters.empty()) check_output_path(options.save_parameters, "save_parameters");
  TrainReport report;
  fill_head(report, workload, run.device, options);
  report.settings = run.settings;
  log_training(workload, run.settings, report.context.device);
  std::shared_ptr<torch::nn::Module> trained;
  report.training = measure_training(workload, run.settings, run.device, &trained);
  if (!options.save_parameters.empty()) write_parameters(*trained, options.save_parameters);
  std::string why;
  report.of_card = training_fraction(card_of_run(report.context, &why), why, run.settings, report.training);
  return report;
}

TrainReport run_train_data_parallel(const Workload& workload, const TrainSettings& settings, const DistSettings& dist,
                                    const RunOptions& options) {
  const DistEnv env = rank_environment();
  auto run = resolve_training(workload, settings, rank_device(options.device, env));
  validate(dist, run.device);  // the settings alone, then what the device needs
  if (run.settings.cuda_graph)
    throw InvalidArgument("train.cuda_graph", "true", "false with data parallelism (not captured yet)");
  run.settings.data_seed_offset += static_cast<uint64_t>(env.rank) * 1000003ULL;  // other samples per rank

  const std::string save_parameters =
      options.save_parameters.empty() ? "" : cat(options.save_parameters, ".rank", env.rank);
  if (!save_parameters.empty()) check_output_path(save_parameters, "save_parameters");
  Communicator comm(env, dist, run.device);
  comm.check_same_configuration(rank_configuration(workload, settings, dist, run.device));
  TrainReport report;
  fill_head(report, workload, run.device, options);
  report.settings = settings;
  report.dist = dist;
  report.rank = comm.rank();
  log_training(workload, run.settings, report.context.device);

  // Training sees only its seam: a gradient hook around backward and a loss-reduce callback.
  std::unique_ptr<DataParallel> dp;
  TrainingHooks hooks;
  hooks.make_gradient_hook = [&](std::shared_ptr<torch::nn::Module> module) -> GradientHook* {
    dp = std::make_unique<DataParallel>(comm, std::move(module), dist, run.device);
    dp->broadcast_initial_weights();  // every rank starts from rank 0's weights
    return dp.get();
  };
  hooks.reduce_losses = [&](std::vector<double>& losses) {
    // The loss of each step is the mean over ranks: one all-reduce of all of them (the NaNs of steps whose
    // loss is not kept stay NaN on every rank).
    auto all = torch::tensor(losses, torch::kFloat64).to(run.device, torch::kFloat32);
    std::vector<torch::Tensor> tensors{all};
    comm.allreduce_sum(tensors);
    const auto mean = tensors[0].to(torch::kCPU, torch::kFloat64) / static_cast<double>(comm.world_size());
    for (size_t i = 0; i < losses.size(); ++i) losses[i] = mean[static_cast<int64_t>(i)].item<double>();
  };
  std::shared_ptr<torch::nn::Module> trained;
  report.training = measure_training(workload, run.settings, run.device, &trained, hooks);
  // Collectives: every rank takes part, in the same order.
  auto distributed = dp->summarize(run.settings.steps);
  distributed.parameters_identical = dp->parameters_identical();
  distributed.ranks =
      dp->gather_rank_steps(report.training.step_start_ms, report.training.step_phases_ms, run.settings.steps);
  report.distributed = distributed;
  if (!save_parameters.empty()) write_parameters(*trained, save_parameters);
  std::string why;
  report.of_card = training_fraction(card_of_run(report.context, &why), why, run.settings, report.training);
  return report;
}

InferReport run_infer_sweep(const Workload& workload, const InferSweepSettings& settings, const RunOptions& options) {
  const Resolved<InferSweepSettings> run{resolve_device(options.device, "device"), settings};
  validate(run.settings, run.device);
  const auto weights = options.load_parameters.empty() ? nullptr : read_parameters(workload, options.load_parameters);
  InferReport report;
  fill_head(report, workload, run.device, options);
  report.settings = settings;
  report.weights = weights_description(options, settings.seed);
  log::info(cat("inference sweep of ", workload.name(), " on ", report.context.device, ": ",
                settings.batch_sizes.size(), " batch sizes x ", settings.dtypes.size(), " precisions, 1 ledger + ",
                settings.warmup_steps, " warm-up + ", settings.steps, " timed batches each"));
  report.sweep = measure_inference_sweep(workload, run.settings, run.device, weights.get());
  std::string why;
  const auto card = card_of_run(report.context, &why);
  for (const auto& row : report.sweep.rows) report.of_card.push_back(inference_fraction(card, why, row.result));
  return report;
}

MaxBatchReport run_max_batch(const Workload& workload, const MaxBatchSearchSettings& settings,
                             const RunOptions& options) {
  const c10::Device device = resolve_device(options.device, "device");
  if (!settings.training && !settings.inference && !settings.generation)
    throw InvalidArgument("max_batch.modes", "none", "training, inference, generation, or several of them");
  validate(settings.search, device);
  if (settings.training) {
    resolve_training(workload, settings.train, device);
    if (settings.train.accumulate != 1)
      throw InvalidArgument("train.accumulate", cat(settings.train.accumulate),
                            "1 with --find-max-batch (the search sets the batch itself)");
  }
  MaxBatchReport report;
  report.settings = settings;
  if ((settings.inference || settings.generation) && settings.infer_dtype_auto)
    report.settings.infer.dtype = native_inference_dtype(device).dtype;
  if (settings.inference) validate(report.settings.infer, device);
  if (settings.generation) {
    // Searched beside the full-sequence forward (compare): its new tokens as compare's own generation's.
    if (settings.inference) validate_compare_new_tokens(workload, settings.decode.new_tokens);
    require_kv_decoder(workload);
    report.settings.decode.dtype = report.settings.infer.dtype;
    report.settings.decode.seed = report.settings.infer.seed;
    validate(report.settings.decode, workload.facts().tokens_per_sample);
    validate_inference_dtype(report.settings.decode.dtype, device, settings.inference ? "infer.dtype" : "decode.dtype");
  }
  fill_head(report, workload, device, options);
  std::vector<std::string> modes;
  if (settings.training) modes.emplace_back("training");
  if (settings.inference) modes.emplace_back("inference");
  if (settings.generation) modes.emplace_back("generation");
  log::info(cat("searching the largest batch that fits for ", detail::join(modes), " of ", workload.name(), " on ",
                report.context.device));
  if (settings.training) report.training = find_max_batch_training(workload, settings.train, settings.search, device);
  if (settings.inference)
    report.inference = find_max_batch_inference(workload, report.settings.infer, settings.search, device);
  if (settings.generation)
    report.generation = find_max_batch_generation(workload, report.settings.decode, settings.search, device);
  return report;
}

void validate_compare_new_tokens(const Workload& workload, int64_t new_tokens) {
  if (new_tokens <= 0) return;
  const int64_t context = workload.facts().tokens_per_sample;
  if (!has_kv_decoder(workload))
    throw InvalidArgument("compare.new_tokens", cat(new_tokens),
                          cat("0 for ", workload.name(), " (generation needs a KV-cached forward: gpt, llama)"));
  if (new_tokens >= context)
    throw InvalidArgument(
        "compare.new_tokens", cat(new_tokens),
        cat("0 .. ", context - 1, " (the prompt is the context of ", context, " less the new tokens)"));
}

SliceReport run_slices(const Workload& full, const SliceSource& source, const SliceRunSettings& settings,
                       const RunOptions& options) {
  const SlicePlan& plan = source.plan;
  validate(plan);
  if (!settings.train && !settings.infer && !settings.generate)
    throw InvalidArgument("slices.modes", "none", "training, inference, generation or several");
  if (!settings.train)
    for (const auto& a : plan.axes)
      if (!a.in_inference())
        throw InvalidArgument(a.kind == SliceAxisKind::vocabulary ? "slices.vocab" : "slices.layers",
                              cat(a.base, ",", a.step),
                              cat("none without training (inference's and generation's slices keep the full ", a.name(),
                                  "; training's can slice it)"));
  const c10::Device device = resolve_device(options.device, "device");
  if (settings.train) resolve_training(full, *settings.train, device);
  std::optional<InferSettings> infer = settings.infer;
  if (infer && settings.infer_dtype_auto) infer->dtype = native_inference_dtype(device).dtype;
  if (infer) validate(*infer, device);
  std::optional<DecodeSettings> generate = settings.generate;
  if (generate) {
    require_kv_decoder(full);
    if (settings.infer_dtype_auto) generate->dtype = infer ? infer->dtype : native_inference_dtype(device).dtype;
    validate(*generate, full.facts().tokens_per_sample);
    validate_inference_dtype(generate->dtype, device, "decode.dtype");
  }
  SliceReport report;
  fill_head(report, full, device, options);
  report.plan = plan;
  std::string why;
  const auto card = card_of_run(report.context, &why);
  const auto what = [](const SlicePlan& p) {
    std::string labels;
    for (size_t i = 0; i < p.slice_count(); ++i) labels += (i ? "; " : "") + p.label(i);
    return cat(" as ", p.slice_count(), " slices (", labels, ") of its ", p.full_label(),
               " (the full model is not run)");
  };
  // Each mode measures its plan's slices in turn; each is built, measured and freed before the next.
  const size_t inference_slices = plan.for_inference().slice_count();
  log::Progress progress(
      "slice", static_cast<long long>((settings.train ? plan.slice_count() : 0) + (infer ? inference_slices : 0) +
                                      (generate ? inference_slices : 0)));
  const auto measure_all = [&](const SlicePlan& p, const auto& measure) {
    std::vector<decltype(measure(full))> out;
    for (size_t i = 0; i < p.slice_count(); ++i) {
      progress.next(p.label(i));
      out.push_back(measure(*source.make(p, i)));
    }
    return out;
  };
  // The slices' ledgers and mean times (`time` of a result, ms) extrapolated to the full model.
  const auto extrapolated = [](const auto& slices, const SlicePlan& p, const auto& time) {
    std::vector<std::decay_t<decltype(slices.front().memory)>> memory;
    std::vector<double> ms;
    for (const auto& s : slices) {
      memory.push_back(s.memory);
      ms.push_back(time(s));
    }
    return std::make_pair(extrapolate(memory, p), extrapolate_time(ms, p));
  };
  if (settings.train) {
    TrainingSlices t;
    t.settings = *settings.train;
    t.plan = plan;
    t.predicted = predict_training_memory(full, t.settings, false, device);
    log::info(cat("training ", full.name(), what(t.plan), "; its predicted ledger: ", describe(t.predicted)));
    t.slices = measure_all(t.plan, [&](const Workload& slice) { return measure_training(slice, t.settings, device); });
    std::tie(t.extrapolated, t.extrapolated_step_ms) =
        extrapolated(t.slices, t.plan, [](const TrainingResult& r) { return r.step.mean; });
    TrainingResult whole;  // the full model at the extrapolated step
    if (t.extrapolated_step_ms > 0)
      whole.achieved_tflops =
          training::throughput(report.facts, t.settings.batch_size, t.extrapolated_step_ms).achieved_tflops;
    t.of_card = training_fraction(card, why, t.settings, whole);
    report.training = std::move(t);
  }
  if (infer) {
    InferenceSlices i;
    i.settings = *infer;
    i.plan = plan.for_inference();
    validate(i.plan);
    i.predicted = predict_inference_memory(full, i.settings, device);
    log::info(cat("inference of ", full.name(), " (", to_string(i.settings.dtype), ", batch ", i.settings.batch_size,
                  ")", what(i.plan)));
    i.slices = measure_all(i.plan, [&](const Workload& slice) { return measure_inference(slice, i.settings, device); });
    std::tie(i.extrapolated, i.extrapolated_latency_ms) =
        extrapolated(i.slices, i.plan, [](const InferenceResult& r) { return r.latency.mean; });
    InferenceResult whole;  // the full model at the extrapolated latency, with its extrapolated weights
    whole.dtype = i.settings.dtype;
    whole.memory = i.extrapolated;
    if (i.extrapolated_latency_ms > 0) whole.latency.mean = i.extrapolated_latency_ms;
    set_throughput(whole, report.facts, i.settings.batch_size, i.extrapolated_latency_ms);
    i.of_card = inference_fraction(card, why, whole);
    report.inference = std::move(i);
  }
  if (generate) {
    GenerationSlices g;
    g.settings = *generate;
    g.plan = plan.for_inference();
    validate(g.plan);
    g.predicted = predict_generation_memory(full, g.settings, device);
    log::info(cat("generation of ", full.name(), " (", to_string(g.settings.dtype), ", batch ", g.settings.batch_size,
                  ", prompt ", g.settings.prompt_tokens, ", ", g.settings.new_tokens, " new tokens)", what(g.plan)));
    g.slices = measure_all(g.plan, [&](const Workload& slice) { return measure_decoding(slice, g.settings, device); });
    std::tie(g.extrapolated, g.extrapolated_ttft_ms) =
        extrapolated(g.slices, g.plan, [](const DecodeResult& r) { return r.ttft_ms.mean; });
    std::vector<double> tpot;
    for (const auto& r : g.slices) tpot.push_back(r.tpot_ms.mean);
    g.extrapolated_tpot_ms = g.settings.new_tokens > 1 ? extrapolate_time(tpot, g.plan) : 0;
    if (g.extrapolated_ttft_ms > 0 && g.extrapolated_tpot_ms >= 0)
      g.extrapolated_tokens_per_s =
          static_cast<double>(g.settings.batch_size * g.settings.new_tokens) /
          ((g.extrapolated_ttft_ms + static_cast<double>(g.settings.new_tokens - 1) * g.extrapolated_tpot_ms) / 1e3);
    DecodeResult whole;  // the full model at the extrapolated times, with its extrapolated weights and cache
    whole.dtype = g.settings.dtype;
    whole.memory = g.extrapolated;
    whole.ttft_ms.mean = std::max(0.0, g.extrapolated_ttft_ms);
    whole.tpot_ms.mean = std::max(0.0, g.extrapolated_tpot_ms);
    g.prefill_of_card = prefill_fraction(card, why, full, g.settings, whole);
    g.decoding_of_card = decoding_fraction(card, why, full, g.settings, whole);
    report.generation = std::move(g);
  }
  return report;
}

ZooReport run_list(const RunOptions& options) {
  ZooReport report;
  report.context = run_context(c10::Device(c10::kCPU), options);
  for (const auto& model : model_names()) {
    for (const auto& preset : preset_names(model)) {
      const auto w = make_zoo_workload(model, preset);  // analytic facts: builds no module
      report.presets.push_back({model, preset, w->facts(), w->block_count(), preset_source(model, preset)});
    }
  }
  return report;
}

CardsReport run_cards(const std::string& cards, const RunOptions& options) {
  const auto& catalog = accelerator_catalog();
  CardsReport report;
  report.cards = select_accelerators(catalog, cards);
  report.context = run_context(c10::Device(c10::kCPU), options);
  report.catalog_schema_version = catalog.schema_version;
  report.catalog_description = catalog.description;
  report.units = catalog.units;
  report.efficiency_description = catalog.efficiency_description;
  report.cloud_prices_source = catalog.cloud_prices_source;
  report.cpu_classes = catalog.cpu_classes;
  report.host_class = host_cpu_class(report.context.host.cpu_features_usable);
  return report;
}

namespace {

// The measured step split by its phases, with their time by class where a step was profiled (nothing for a
// CUDA-graph step, timed whole).
std::optional<MeasuredPhases> measured_phases(const TrainingResult& t) {
  if (t.cuda_graph) return std::nullopt;
  double ms[kPhaseCount] = {};
  for (const auto& p : t.phases) ms[p.phase] = p.p50_ms / 1000;
  MeasuredPhases m = split_training_step(t.step.mean / 1000, ms[kPhaseData], ms[kPhaseForward], ms[kPhaseBackward],
                                         ms[kPhaseOptimizer], ms[kPhaseCommunication]);
  if (t.time_by_class.measured()) {
    m.forward_classes = t.time_by_class.forward;
    m.backward_classes = t.time_by_class.backward;
  }
  if (!(m.forward_s > 0)) return std::nullopt;
  return m;
}

// `tvie plan --measure`: the workload (or its slice) measured here, as a calibration.
Calibration measure_for_plan(const Workload& workload, const PlanSettings& settings, const RunOptions& options) {
  const PlanMeasure& m = settings.measure;
  const c10::Device device = resolve_device(options.device, "device");
  const std::string name = workload.name();
  std::unique_ptr<Workload> slice;
  if (m.layers > 0 || m.vocab > 0) {
    const std::optional<ZooSpec> spec = zoo_spec_of_name(name);
    if (!spec)
      throw InvalidArgument(m.layers > 0 ? "plan.measure.layers" : "plan.measure.vocab",
                            cat(m.layers > 0 ? m.layers : m.vocab), "0 for a workload that is not a zoo model");
    // The model as the user shaped it (sequence, padded vocabulary), with fewer blocks or a vocabulary slice.
    ModelShape shape = spec->shape;
    if (m.layers > 0) shape.layers = m.layers;
    if (m.vocab > 0) {
      shape.vocab = m.vocab;
      shape.vocab_multiple = 0;  // the slice's vocabulary is the one asked for
    }
    slice = make_zoo_workload(spec->model, spec->preset, shape);
  }
  const Workload& measured = slice ? *slice : workload;
  std::optional<Accelerator> card;
  if (device.is_cuda()) {
    const GpuInfo gpu = describe_gpu(device).value_or(GpuInfo{});
    if (const Accelerator* c = catalog_card_of_device(gpu.name, static_cast<double>(gpu.memory_bytes))) card = *c;
    if (!card) throw InvalidArgument("device", gpu.name, "a device in the catalog to calibrate (tvie cards)");
  } else {
    card = local_host_accelerator();
    if (!card) throw InvalidArgument("device", "cpu", "a CPU with a class in the catalog to calibrate");
  }
  TrainSettings train = settings.train;
  train.steps = m.steps;
  train.warmup_steps = m.warmup_steps;
  train.profile_classes = true;  // the forward's and backward's time by class: the projection calibrated by class
  validate(train, device);
  log::info(cat("measuring ", measured.name(), " on ", device.str(), " to calibrate the projection"));
  const TrainingResult t = measure_training(measured, train, device);
  std::optional<InferSettings> infer;
  double latency_s = 0;
  InferSettings i = settings.infer;
  i.batch_size = settings.train.batch_size;
  i.steps = m.steps;
  i.warmup_steps = m.warmup_steps;
  i.profile_classes = true;  // the batch's time by class: the projection calibrated by class
  ClassTimes inference_classes;
  try {
    validate(i, device);
    const InferenceResult r = measure_inference(measured, i, device);
    latency_s = r.latency.mean / 1000;
    if (r.time_by_class.measured()) inference_classes = r.time_by_class.forward;
    infer = i;
  } catch (const InvalidArgument& e) {
    log::warn(cat("--measure: inference in ", to_string(i.dtype), " not measured on ", device.str(), ": ", e.what(),
                  "; the inference estimates stay uncalibrated"));
  }
  Calibration c = calibration_from_measurement(measured, *card, train, t.step.mean / 1000, infer, latency_s,
                                               measured_phases(t), inference_classes);
  if (settings.new_tokens > 0) {
    // The generation as asked, one request alone (the plan's latency and time per output token are at batch 1).
    DecodeSettings d;
    d.prompt_tokens = generation_prompt_tokens(measured, settings);
    d.new_tokens = settings.new_tokens;
    d.repetitions = m.steps;
    d.dtype = settings.infer.dtype;
    d.profile_classes = true;  // the prefill's and decoding steps' time by class
    try {
      validate(d, measured.facts().tokens_per_sample);
      validate_inference_dtype(d.dtype, device, "decode.dtype");
      log::info(cat("generating ", d.new_tokens, " tokens after a prompt of ", d.prompt_tokens, " on ", device.str(),
                    " (", d.repetitions, " timed runs after 1 warm-up) to calibrate the generation"));
      const DecodeResult r = measure_decoding(measured, d, device);
      MeasuredGeneration g = measured_generation(d, r.ttft_ms.mean, r.tpot_ms.mean);
      if (r.time_by_class.measured()) {
        g.prefill_classes = r.time_by_class.forward;
        g.decoding_classes = r.time_by_class.backward;
      }
      calibrate_generation(c, measured, *card, g);
    } catch (const InvalidArgument& e) {
      log::warn(cat("--measure: decoding in ", to_string(d.dtype), " not measured on ", device.str(), ": ", e.what(),
                    "; the generation's estimates take the inference factor"));
    }
  }
  c.source =
      cat("measured here (--measure, ", m.steps, " steps", settings.new_tokens > 0 ? " and generations" : "", ")");
  c.device = device.is_cuda() ? cat(device.str(), " (", describe_gpu(device).value_or(GpuInfo{}).name, ")") : "cpu";
  return c;
}

}  // namespace

PlanReport run_plan(const Workload& workload, const PlanSettings& plan_settings, const RunOptions& options) {
  validate(plan_settings);
  validate_fused_loss(workload, plan_settings.train);
  generation_prompt_tokens(workload, plan_settings);  // the model and the context checked before anything runs
  PlanSettings settings = plan_settings;
  if (settings.measure.enabled) settings.calibration = measure_for_plan(workload, settings, options);
  settings.stack = resolved_stack(settings);  // the report says which stack its serving figures are for
  const auto& catalog = accelerator_catalog();
  std::vector<Accelerator> cards = select_accelerators(catalog, settings.cards);
  PlanReport report;
  report.context = run_context(c10::Device(c10::kCPU), options);
  report.workload = workload.name();
  report.facts = workload.facts();
  report.settings = settings;
  report.training_predicted = predict_training_memory(workload, settings.train, false, c10::Device(c10::kCUDA));
  InferSettings one = settings.infer;
  one.batch_size = 1;
  report.inference_predicted = predict_inference_memory(workload, one, c10::Device(c10::kCUDA));
  report.training_work = training_step_work(workload, settings.train, c10::kCUDA);  // as the memory above: a GPU's
  report.inference_work = inference_batch_work(workload, one, c10::kCUDA);
  report.host_class = host_cpu_class(report.context.host.cpu_features_usable);
  report.host_clock_ghz = host_clock_ghz();
  const size_t catalog_cards = cards.size();
  if (settings.include_host)
    if (auto host = local_host_accelerator()) cards.push_back(*host);
  log::info(cat("projecting ", workload.name(), " onto ", catalog_cards, " catalog cards",
                cards.size() > catalog_cards ? " and this host" : "", " (nothing runs: analytic + catalog)"));
  report.cards = plan_cards(workload, settings, cards);
  return report;
}

ServeReport run_serve(const Workload& workload, const ServeSettings& settings, const RunOptions& options) {
  const Resolved<ServeSettings> run{resolve_device(options.device, "device"), settings};
  validate(run.settings);
  validate_inference_dtype(run.settings.dtype, run.device, "serve.dtype");
  ServeReport report;
  fill_head(report, workload, run.device, options);
  report.settings = settings;
  log::info(cat("serving ", workload.name(), " on ", report.context.device, ": ", to_string(settings.scenario), ", ",
                settings.query_count, " requests"));
  if (const auto& search = run.settings.max_qps_search) {
    log::info(cat("searching the highest QPS with p99 <= ", search->p99_bound_ms, " ms, from ", settings.target_qps));
    report.search = find_max_qps(workload, run.settings, *search, run.device);
    report.result = report.search->at_max;
    if (report.search->max_qps > 0) report.settings.target_qps = report.search->max_qps;
  } else {
    report.result = measure_serving(workload, run.settings, run.device);
  }
  std::string why;
  report.of_card =
      serving_fraction(card_of_run(report.context, &why), why, report.facts, settings.dtype, report.result);
  return report;
}

DecodeReport run_decode(const Workload& workload, const DecodeSettings& settings, const RunOptions& options) {
  require_kv_decoder(workload);
  const Resolved<DecodeSettings> run{resolve_device(options.device, "device"), settings};
  validate(run.settings, workload.facts().tokens_per_sample);
  validate_inference_dtype(run.settings.dtype, run.device, "decode.dtype");
  if (run.settings.cuda_graph && !run.device.is_cuda())
    throw InvalidArgument("decode.cuda_graph", "true",
                          cat("a CUDA device (a graph replays GPU kernels; this run is on ", run.device.str(), ")"));
  const auto weights = options.load_parameters.empty() ? nullptr : read_parameters(workload, options.load_parameters);
  DecodeReport report;
  fill_head(report, workload, run.device, options);
  report.settings = settings;
  report.weights = weights_description(options, settings.seed);
  log::info(cat("decoding ", workload.name(), " on ", report.context.device, ": batch ", settings.batch_size,
                ", prompt ", settings.prompt_tokens, ", ", settings.new_tokens, " new tokens"));
  report.result = measure_decoding(workload, run.settings, run.device, weights.get());
  std::string why;
  const auto card = card_of_run(report.context, &why);
  report.prefill_of_card = prefill_fraction(card, why, workload, run.settings, report.result);
  report.decoding_of_card = decoding_fraction(card, why, workload, run.settings, report.result);
  return report;
}

AllreduceReport run_allreduce(const AllreduceSweepSettings& settings, const DistSettings& dist,
                              const RunOptions& options) {
  validate(settings);
  const DistEnv env = rank_environment();
  const c10::Device device = rank_device(options.device, env);
  validate(dist, device);  // the settings alone, then what the device needs
  Communicator comm(env, dist, device);
  comm.check_same_configuration({{"allreduce.min_bytes", cat(settings.min_bytes)},
                                 {"allreduce.max_bytes", cat(settings.max_bytes)},
                                 {"allreduce.factor", cat(settings.factor)},
                                 {"allreduce.iters", cat(settings.iters)},
                                 {"allreduce.dtype", settings.dtype},
                                 {"device", device.is_cuda() ? "cuda" : "cpu"}});
  AllreduceReport report;
  report.context = run_context(device, options);
  report.settings = settings;
  report.rank = comm.rank();
  report.result = measure_allreduce_sweep(comm, settings, device);
  return report;
}

}  // namespace tvie
