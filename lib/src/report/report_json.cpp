// The JSON report of every kind (schema: docs/reports.md), built with nlohmann-json; those of the projection (the
// zoo, the cards, the plan) in report_json_plan.cpp. CSV: report_csv.cpp; the Chrome trace: report_trace.cpp;
// writing files: tvie/output_files.hpp.
#include <tvie/report.hpp>

#include <tvie/dist.hpp>

#include <cmath>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/compat.hpp"
#include "core/text.hpp"
#include "report/json_parts.hpp"
#include "report/ledger_rows.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
using nlohmann::json;
using namespace json_parts;

namespace {

// The measured ledger: every row of the mode (report/ledger_rows.hpp).
nlohmann::json measured_json(const std::vector<detail::LedgerRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : rows) j[r.name] = r.measured;
  return j;
}
nlohmann::json memory_json(const TrainingMemory& m) { return measured_json(detail::ledger_rows(m, nullptr)); }
nlohmann::json memory_json(const InferenceMemory& m) {
  auto j = measured_json(detail::ledger_rows(m, nullptr));
  j["packed_weights_measured"] = m.packed_weights_measured;
  return j;
}
nlohmann::json memory_json(const GenerationMemory& m) { return measured_json(detail::generation_rows(m, nullptr)); }

// The memory timeline (tvie/timeline.hpp): what was recorded, how, and the thinned points and phases.
nlohmann::json timeline_json(const MemoryTimeline& t) {
  nlohmann::json points = nlohmann::json::array(), phases = nlohmann::json::array();
  for (const auto& p : t.points) points.push_back({{"time_ms", p.time_ms}, {"bytes", p.bytes}});
  for (const auto& p : t.phases) phases.push_back({{"name", p.name}, {"start_ms", p.start_ms}, {"end_ms", p.end_ms}});
  return {{"what", t.what},
          {"counter", t.counter},
          {"clock", t.clock},
          {"events", t.events},
          {"start_bytes", t.start_bytes},
          {"end_bytes", t.end_bytes},
          {"peak_bytes", t.peak_bytes},
          {"duration_ms", t.duration_ms},
          {"points", points},
          {"phases", phases}};
}

nlohmann::json max_batch_json(const MaxBatchResult& r) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : r.probes)
    probes.push_back({{"batch", p.batch}, {"fits", p.fits}, {"peak_bytes", p.peak_bytes}, {"seconds", p.seconds}});
  nlohmann::json j = {{"largest_fitting", r.largest_fitting},     {"first_failing", r.first_failing},
                      {"predicted_largest", r.predicted_largest}, {"limit_bytes", r.limit_bytes},
                      {"limit_source", r.limit_source},           {"probes", probes}};
  if (r.training) j["memory"] = memory_json(*r.training);
  if (r.inference) j["memory"] = memory_json(*r.inference);
  if (r.generation) j["memory"] = memory_json(*r.generation);
  return j;
}

}  // namespace

namespace json_parts {

// Every predicted row of the ledger (-1: not predicted; the allocator's reserve never is), and the saved activations
// by layer type.
nlohmann::json predicted_json(const std::vector<detail::LedgerRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : rows)
    if (std::string_view(r.name) != "peak_reserved") j[r.name] = r.predicted;
  return j;
}

nlohmann::json predicted_json(const PredictedTrainingMemory& p) {
  nlohmann::json by_layer = nlohmann::json::array();
  for (const auto& [layer, bytes] : p.activations_by_layer) by_layer.push_back({{"layer", layer}, {"bytes", bytes}});
  auto j = predicted_json(detail::ledger_rows(TrainingMemory{}, &p));
  j["activations_by_layer"] = by_layer;
  j["kernel_scratch_source"] = p.kernel_scratch_source;
  return j;
}

nlohmann::json predicted_json(const PredictedInferenceMemory& p) {
  auto j = predicted_json(detail::ledger_rows(InferenceMemory{}, &p));
  j["kernel_scratch_source"] = p.kernel_scratch_source;
  j["quantised_weights_source"] = p.quantised_weights_source;
  return j;
}

json summary_json(const Summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"stddev", s.stddev}, {"min", s.min}, {"max", s.max},
          {"p50", s.p50},     {"p90", s.p90},   {"p95", s.p95},       {"p99", s.p99}, {"p99_9", s.p999}};
}

json context_json(const RunContext& c) {
  json j = {{"tvie_version", c.tvie_version},
            {"torch_version", c.torch_version},
            {"cuda_available", c.cuda_available},
            {"device", c.device},
            {"argv", c.argv},
            {"cpu_model", c.host.cpu_model},
            {"cpu_features", c.host.cpu_features},
            {"onednn_isa_limit", c.host.onednn_isa_limit},
            {"cpu_features_usable", c.host.cpu_features_usable},
            {"aten_cpu_capability", c.host.aten_cpu_capability},
            {"intra_op_threads", c.host.intra_op_threads}};
  if (!c.config_file.empty()) {
    j["config_file"] = c.config_file;
    j["config"] = json::array();
    for (const auto& [option, value] : c.config) j["config"].push_back({{"option", option}, {"value", value}});
  }
  if (c.gpu)
    j["gpu"] = {{"name", c.gpu->name},
                {"compute_capability", c.gpu->compute_capability},
                {"memory_bytes", c.gpu->memory_bytes},
                {"driver", c.gpu->driver},
                {"cuda_runtime", c.gpu->cuda_runtime},
                {"cudnn", c.gpu->cudnn},
                {"nccl", c.gpu->nccl}};
  return j;
}

json model_json(const std::string& name, const ModelFacts& f) {
  return {{"name", name},
          {"parameters", f.parameter_count},
          {"buffer_bytes", f.buffer_bytes},
          {"forward_flops_per_sample", f.forward_flops_per_sample},
          {"flops_source", f.flops_source},
          {"tokens_per_sample", f.tokens_per_sample}};
}

// The head every report shares: its schema version, the run's context and the model's facts.
json report_head(const RunContext& context, const std::string& workload, const ModelFacts& facts) {
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["context"] = context_json(context);
  j["model"] = model_json(workload, facts);
  return j;
}

}  // namespace json_parts

namespace {

// null where not available (the source says why).
json energy_json(const EnergyReading& e, double joules_per_sample) {
  const auto or_null = [&](double x) { return e.available() && x >= 0 ? json(x) : json(); };
  return {{"joules", or_null(e.joules)},
          {"seconds", e.seconds},
          {"mean_watts", or_null(e.mean_watts())},
          {"joules_per_sample", or_null(joules_per_sample)},
          {"source", e.source}};
}

json class_times_json(const ClassTimes& t) {
  json j = json::object();
  for (size_t c = 0; c < t.by_class_ms.size(); ++c)
    j[std::string(to_string(static_cast<OpClass>(c))) + "_ms"] = t.by_class_ms[c];
  j["other_ms"] = t.other_ms;
  return j;
}

// The classes of a profiled step, batch or generation: `forward` and `backward` under the names of its phases (a
// training step's "forward" and "backward", an inference batch's "batch", a generation's "prefill" and "decoding").
json time_by_class_json(const ProfiledClassTimes& t, const char* first = "forward", const char* second = "backward") {
  if (!t.measured()) return {{"measured", false}, {"unavailable", t.unavailable}};
  json j = {{"measured", true}, {"method", t.method}, {"unlinked_kernel_ms", t.unlinked_kernel_ms}};
  j[first] = class_times_json(t.forward);
  if (second) j[second] = class_times_json(t.backward);
  return j;
}

json training_json(const TrainSettings& s, const TrainingResult& t, const DistributedResult* distributed = nullptr) {
  json phases = json::object();
  for (const auto& p : t.phases) phases[p.name] = {{"p50_ms", p.p50_ms}, {"share", p.share}};
  json curve = json::array();
  for (const auto& [step, loss] : t.loss_curve) curve.push_back({{"step", step}, {"loss", loss}});
  json j = {{"settings",
             {{"batch_size", s.batch_size},
              {"accumulate", s.accumulate},
              {"optimizer", to_string(s.optimizer)},
              {"fused_optimizer", s.fused_optimizer},
              {"tf32", s.tf32},
              {"fused_loss", s.fused_loss},
              {"learning_rate", s.learning_rate},
              {"lr_schedule", to_string(s.lr_schedule)},
              {"lr_warmup_steps", lr_warmup_steps(s)},
              {"precision", to_string(t.precision)},
              {"checkpoint", checkpoint_to_string(t.checkpoint_every)},
              {"clip_grad_norm", s.clip_grad_norm},
              {"cuda_graph", s.cuda_graph},
              {"profile_classes", s.profile_classes},
              {"data_batches", s.data_batches},
              {"seed", s.seed}}},
            {"memory_counter", t.memory_counter},
            {"memory", memory_json(t.memory)},
            {"memory_predicted", predicted_json(t.predicted)},
            {"memory_timeline", timeline_json(t.memory_timeline)},
            {"data_pool_bytes", t.data_pool_bytes},
            {"checkpointed_blocks", t.checkpointed_blocks},
            {"timer", t.timer},
            {"cuda_graph", {{"enabled", t.cuda_graph}, {"scope", t.cuda_graph_scope}}},
            {"ledger_steps", t.ledger_steps},
            {"warmup_steps", t.warmup_steps},
            {"timed_steps", t.timed_steps},
            {"optimizer_steps", t.optimizer_steps},
            {"micro_batches", t.micro_batches},
            {"step_ms", summary_json(t.step)},
            {"step_ms_all", t.step_ms},
            {"phases", phases},
            {"throughput",
             {{"samples_per_s", t.samples_per_s},
              {"tokens_per_s", t.tokens_per_s},
              {"model_flops_per_step", t.model_flops_per_step},
              {"achieved_tflops", t.achieved_tflops}}},
            {"energy", energy_json(t.energy, t.joules_per_sample)},
            {"loss",
             {{"first", t.first_loss},
              {"final", t.final_loss},
              {"curve", curve},
              {"non_finite_steps", t.non_finite_losses},
              {"first_non_finite_step", t.first_non_finite_step}}}};
  if (s.profile_classes) j["time_by_class"] = time_by_class_json(t.time_by_class);
  if (t.loss_scaling)
    j["loss_scaling"] = {
        {"initial_scale", t.initial_scale}, {"final_scale", t.final_scale}, {"skipped_steps", t.skipped_steps}};
  if (t.clip_max_norm > 0)
    j["clipping"] = {{"max_norm", t.clip_max_norm},
                     {"grad_norm_before_clip", summary_json(t.grad_norm)},
                     {"clipped_steps", t.clipped_steps}};
  if (distributed) {
    const auto& d = *distributed;
    j["distributed"] = {{"backend", d.backend},
                        {"world_size", d.world_size},
                        {"bucket_mb", d.bucket_mb},
                        {"overlap", d.overlap},
                        {"buckets", d.buckets},
                        {"bytes_per_step", d.bytes_per_step},
                        {"comm_ms", summary_json(d.comm_ms)},
                        {"exposed_ms", summary_json(d.exposed_ms)},
                        {"algbw_gbs", d.algbw_gbs},
                        {"busbw_gbs", d.busbw_gbs},
                        {"bus_factor", allreduce_bus_factor(d.world_size)},
                        {"sweep_busbw_gbs", d.sweep_busbw_gbs},
                        {"parameters_identical", d.parameters_identical},
                        {"loss_mean_over_ranks", t.final_loss},  // the loss curve is already the mean
                        {"backend_device_bytes", d.backend_device_bytes},
                        {"bucket_bytes", d.bucket_bytes}};
    json ranks = json::array();
    for (const auto& r : d.ranks) {
      json step_ms = json::array(), communication_ms = json::array();
      for (const auto& phases : r.step_phases_ms) {
        double sum = 0;
        for (double ms : phases) sum += ms;
        step_ms.push_back(sum);
        communication_ms.push_back(phases.size() > kPhaseCommunication ? phases[kPhaseCommunication] : 0.0);
      }
      ranks.push_back({{"rank", r.rank}, {"step_ms", step_ms}, {"communication_ms", communication_ms}});
    }
    j["distributed"]["ranks"] = std::move(ranks);
  }
  return j;
}

json inference_json(const InferenceResult& i) {
  json j = {{"scheme", i.scheme},
            {"memory_counter", i.memory_counter},
            {"memory", memory_json(i.memory)},
            {"memory_predicted", predicted_json(i.predicted)},
            {"timer", i.timer},
            {"cuda_graph", i.cuda_graph},
            {"linear_layers", {{"converted", i.linears_converted}, {"kept_dense", i.linears_kept_dense}}},
            {"ledger_batches", i.ledger_batches},
            {"warmup_batches", i.warmup_batches},
            {"timed_batches", i.timed_batches},
            {"latency_ms", summary_json(i.latency)},
            {"latency_ms_all", i.latency_ms},
            {"throughput",
             {{"samples_per_s", i.samples_per_s},
              {"tokens_per_s", i.tokens_per_s},
              {"model_flops_per_batch", i.model_flops_per_batch},
              {"achieved_tflops", i.achieved_tflops}}},
            {"energy", energy_json(i.energy, i.joules_per_sample)}};
  // Asked for (compare --profile-classes): the batch's time by class, in `batch`.
  if (i.time_by_class.measured() || !i.time_by_class.unavailable.empty())
    j["time_by_class"] = time_by_class_json(i.time_by_class, "batch", nullptr);
  return j;
}

}  // namespace

// Where a figure stands against its card (tvie/headroom.hpp); null where a fraction is not defined.
json card_fraction_json(const CardFraction& f) {
  const auto or_null = [](double x) { return x >= 0 ? json(x) : json(); };
  return {{"card", f.card},
          {"card_name", f.card_name},
          {"why_none", f.why_none},
          {"peak_field", f.peak_field},
          {"peak_tflops", or_null(f.peak_tflops)},
          {"bandwidth_gbs", or_null(f.bandwidth_gbs)},
          {"model_tflops", f.model_tflops},
          {"peak_fraction", or_null(f.peak_fraction)},
          {"bytes", f.bytes},
          {"bytes_counted", f.bytes_counted},
          {"bandwidth_fraction", or_null(f.bandwidth_fraction)}};
}

std::string to_json_string(const InferReport& r, int indent) {
  const auto& s = r.settings;
  json j = report_head(r.context, r.workload, r.facts);
  std::vector<std::string> dtypes;
  for (auto d : s.dtypes) dtypes.push_back(to_string(d));
  json rows = json::array();
  for (size_t k = 0; k < r.sweep.rows.size(); ++k) {
    const auto& row = r.sweep.rows[k];
    json x = {{"batch_size", row.batch_size}, {"dtype", to_string(row.dtype)}, {"fits", row.fits}};
    if (!row.fits) x["does_not_fit"] = row.does_not_fit;
    if (row.fits) x["result"] = inference_json(row.result);
    if (row.fits && k < r.of_card.size()) x["of_card"] = card_fraction_json(r.of_card[k]);
    if (row.has_accuracy)
      x["accuracy_vs_fp32"] = {{"max_abs_error", row.accuracy.max_abs_error},
                               {"mean_abs_error", row.accuracy.mean_abs_error},
                               {"reference_mean_abs", row.accuracy.reference_mean_abs},
                               {"top1_agreement", row.accuracy.rows > 0 ? json(row.accuracy.top1_agreement) : json()},
                               {"top1_rows", row.accuracy.rows}};
    rows.push_back(x);
  }
  j["inference_sweep"] = {{"settings",
                           {{"batch_sizes", s.batch_sizes},
                            {"dtypes", dtypes},
                            {"steps", s.steps},
                            {"warmup_steps", s.warmup_steps},
                            {"seed", s.seed},
                            {"cuda_graph", s.cuda_graph},
                            {"cpu_memory_limit_mb", s.cpu_memory_limit_mb},
                            {"accuracy_vs_fp32", s.accuracy_vs_fp32}}},
                          {"weights", r.weights},
                          {"memory_counter", r.sweep.memory_counter},
                          {"timer", r.sweep.timer},
                          {"rows", rows}};
  return j.dump(indent);
}

namespace {

// A generation's block: tvie decode's "decoding", compare's "generation".
json decoding_json(const DecodeSettings& s, const DecodeResult& x) {
  json j = {{"settings",
             {{"batch_size", s.batch_size},
              {"prompt_tokens", s.prompt_tokens},
              {"new_tokens", s.new_tokens},
              {"repetitions", s.repetitions},
              {"dtype", to_string(s.dtype)},
              {"seed", s.seed},
              {"profile_classes", s.profile_classes},
              {"cuda_graph", s.cuda_graph}}},
            {"scheme", x.scheme},
            {"memory_counter", x.memory_counter},
            {"memory", measured_json(detail::generation_rows(x.memory, nullptr))},
            {"predicted", predicted_json(detail::generation_rows({}, &x.predicted))},
            {"timer", x.timer},
            {"timed_runs", x.timed_runs},
            {"ttft_ms", summary_json(x.ttft_ms)},
            {"tpot_ms", summary_json(x.tpot_ms)},
            {"tokens_per_s", x.tokens_per_s}};
  j["memory"]["packed_weights_measured"] = x.packed_weights_measured;
  if (s.profile_classes)
    j["time_by_class"] = time_by_class_json(x.time_by_class, "prefill", s.new_tokens > 1 ? "decoding" : nullptr);
  return j;
}

}  // namespace

std::string to_json_string(const DecodeReport& r, int indent) {
  json j = report_head(r.context, r.workload, r.facts);
  j["decoding"] = decoding_json(r.settings, r.result);
  j["decoding"]["weights"] = r.weights;
  j["decoding"]["of_card"] = {{"prefill", card_fraction_json(r.prefill_of_card)},
                              {"decoding", card_fraction_json(r.decoding_of_card)}};
  return j.dump(indent);
}

std::string to_json_string(const AllreduceReport& report, int indent) {
  const auto& r = report.result;
  const auto& s = report.settings;
  json rows = json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"bytes", x.bytes},
                    {"count", x.count},
                    {"out_of_place",
                     {{"time_us", x.out_of_place_us},
                      {"algbw_gbs", x.out_of_place_algbw_gbs},
                      {"busbw_gbs", x.out_of_place_busbw_gbs},
                      {"wrong", x.out_of_place_wrong}}},
                    {"in_place",
                     {{"time_us", x.in_place_us},
                      {"algbw_gbs", x.in_place_algbw_gbs},
                      {"busbw_gbs", x.in_place_busbw_gbs},
                      {"wrong", x.in_place_wrong}}}});
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["context"] = context_json(report.context);
  j["allreduce"] = {{"backend", r.backend},
                    {"device", r.device},
                    {"dtype", r.dtype},
                    {"world_size", r.world_size},
                    {"bus_factor", allreduce_bus_factor(r.world_size)},
                    {"iters", s.iters},
                    {"warmup", s.warmup},
                    {"checked", s.check},
                    {"rows", rows},
                    {"average_busbw_gbs", r.average_busbw_gbs},
                    {"total_wrong", r.total_wrong}};
  return j.dump(indent);
}

std::string to_json_string(const TrainReport& r, int indent) {
  json j = report_head(r.context, r.workload, r.facts);
  j["training"] = training_json(r.settings, r.training, r.distributed ? &*r.distributed : nullptr);
  j["training"]["of_card"] = card_fraction_json(r.of_card);
  return j.dump(indent);
}

std::string to_json_string(const CompareReport& r, int indent) {
  const auto& i = r.inference;
  json j = report_head(r.context, r.workload, r.facts);
  j["training"] = training_json(r.settings.train, r.training);
  j["training"]["of_card"] = card_fraction_json(r.training_of_card);
  j["inference"] = inference_json(i);
  j["inference"]["of_card"] = card_fraction_json(r.inference_of_card);
  j["inference"]["memory_timeline"] = timeline_json(i.memory_timeline);  // the sweep's rows leave it out
  j["inference"]["settings"] = {{"batch_size", r.settings.infer.batch_size},
                                {"dtype", to_string(i.dtype)},
                                {"dtype_choice", r.inference_dtype_choice},
                                {"seed", r.settings.infer.seed}};
  j["gap"] = {{"peak_memory_ratio", r.peak_memory_ratio},
              {"parameter_memory_ratio", r.parameter_memory_ratio},
              {"throughput_ratio", r.throughput_ratio}};
  if (r.generation && r.generation_settings) {
    j["generation"] = decoding_json(*r.generation_settings, *r.generation);
    j["gap"]["generation_peak_memory_ratio"] = r.generation_peak_memory_ratio;
    if (r.prefill_of_card && r.decoding_of_card)
      j["generation"]["of_card"] = {{"prefill", card_fraction_json(*r.prefill_of_card)},
                                    {"decoding", card_fraction_json(*r.decoding_of_card)}};
  }
  if (r.compiled) {
    j["compiled_inference"] = inference_json(r.compiled->result);
    j["compiled_inference"]["package"] = r.compiled->package;
    j["compiled_inference"]["dtype"] = to_string(r.compiled->result.dtype);
    j["compiled_inference"]["batch_size"] = r.settings.infer.batch_size;
    j["compiled_inference"]["of_card"] = card_fraction_json(r.compiled->of_card);
    j["gap"]["compiled_throughput_ratio"] = r.compiled->throughput_ratio;
    j["gap"]["compiled_peak_memory_ratio"] = r.compiled->peak_memory_ratio;
  }
  return j.dump(indent);
}

std::string to_json_string(const MaxBatchReport& r, int indent) {
  const auto& s = r.settings;
  json j = report_head(r.context, r.workload, r.facts);
  json settings = {{"start_batch", s.search.start_batch},
                   {"max_batch", s.search.max_batch},
                   {"cpu_memory_limit_mb", s.search.cpu_memory_limit_mb}};
  if (s.training) {
    settings["train_precision"] = to_string(s.train.precision);
    settings["optimizer"] = to_string(s.train.optimizer);
    settings["fused_optimizer"] = s.train.fused_optimizer;
    settings["tf32"] = s.train.tf32;
    settings["fused_loss"] = s.train.fused_loss;
    settings["checkpoint"] = checkpoint_to_string(s.train.checkpoint_every);
  }
  if (s.inference || s.generation) settings["infer_dtype"] = to_string(s.infer.dtype);
  if (s.generation) {
    settings["prompt_tokens"] = s.decode.prompt_tokens;
    settings["new_tokens"] = s.decode.new_tokens;
  }
  j["max_batch"] = {{"settings", settings}};
  if (r.training) j["max_batch"]["training"] = max_batch_json(*r.training);
  if (r.inference) j["max_batch"]["inference"] = max_batch_json(*r.inference);
  if (r.generation) j["max_batch"]["generation"] = max_batch_json(*r.generation);
  return j.dump(indent);
}

std::string to_json_string(const SliceReport& r, int indent) {
  json j = report_head(r.context, r.workload, r.facts);
  const auto head = [](const SlicePlan& plan) {
    json axes = json::array();
    for (const auto& a : plan.axes)
      axes.push_back({{"name", a.name()}, {"full", a.full}, {"base", a.base}, {"step", a.step}});
    return json{{"axes", axes}, {"full_model_run", false}};
  };
  // slices[i]: the axes' values at slice i (the plan's order), its ledger and its time.
  const auto slices = [&](const SlicePlan& plan, const auto& results, const auto& time) {
    json out = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      json item = {{"point", plan.point(i)}, {"memory", memory_json(results[i].memory)}};
      item.update(time(results[i]));
      out.push_back(item);
    }
    return out;
  };
  if (r.training) {
    const auto& t = *r.training;
    const auto& s = t.settings;
    json& out = j["training_slices"] = head(t.plan);
    out["settings"] = {{"batch_size", s.batch_size},
                       {"steps", s.steps},
                       {"warmup_steps", s.warmup_steps},
                       {"optimizer", to_string(s.optimizer)},
                       {"fused_optimizer", s.fused_optimizer},
                       {"tf32", s.tf32},
                       {"fused_loss", s.fused_loss},
                       {"precision", to_string(s.precision)},
                       {"checkpoint", checkpoint_to_string(s.checkpoint_every)}};
    out["slices"] = slices(t.plan, t.slices, [](const TrainingResult& x) {
      return json{{"step_ms_mean", x.step.mean}};
    });
    out["extrapolated"] = {{"memory", memory_json(t.extrapolated)},
                           {"step_ms_mean", t.extrapolated_step_ms},
                           {"of_card", card_fraction_json(t.of_card)}};
    out["predicted"] = predicted_json(t.predicted);
  }
  if (r.inference) {
    const auto& i = *r.inference;
    const auto& s = i.settings;
    json& out = j["inference_slices"] = head(i.plan);
    out["settings"] = {{"batch_size", s.batch_size},
                       {"steps", s.steps},
                       {"warmup_steps", s.warmup_steps},
                       {"dtype", to_string(s.dtype)}};
    out["slices"] = slices(i.plan, i.slices, [](const InferenceResult& x) {
      return json{{"latency_ms_mean", x.latency.mean}};
    });
    out["extrapolated"] = {{"memory", memory_json(i.extrapolated)},
                           {"latency_ms_mean", i.extrapolated_latency_ms},
                           {"of_card", card_fraction_json(i.of_card)}};
    out["predicted"] = predicted_json(i.predicted);
  }
  if (r.generation) {
    const auto& g = *r.generation;
    const auto& s = g.settings;
    json& out = j["generation_slices"] = head(g.plan);
    out["settings"] = {{"batch_size", s.batch_size},
                       {"prompt_tokens", s.prompt_tokens},
                       {"new_tokens", s.new_tokens},
                       {"repetitions", s.repetitions},
                       {"dtype", to_string(s.dtype)}};
    out["scheme"] = g.slices.front().scheme;
    out["slices"] = slices(g.plan, g.slices, [](const DecodeResult& x) {
      return json{{"ttft_ms_mean", x.ttft_ms.mean}, {"tpot_ms_mean", x.tpot_ms.mean}};
    });
    out["extrapolated"] = {
        {"memory", memory_json(g.extrapolated)},
        {"ttft_ms_mean", g.extrapolated_ttft_ms},
        {"tpot_ms_mean", g.extrapolated_tpot_ms},
        {"tokens_per_s", g.extrapolated_tokens_per_s},
        {"of_card",
         {{"prefill", card_fraction_json(g.prefill_of_card)}, {"decoding", card_fraction_json(g.decoding_of_card)}}}};
    out["predicted"] = predicted_json(detail::generation_rows({}, &g.predicted));
  }
  return j.dump(indent);
}

std::string to_json_string(const ServeReport& r, int indent) {
  const auto& s = r.settings;
  const auto& x = r.result;
  json j = report_head(r.context, r.workload, r.facts);
  j["serving"] = {{"settings",
                   {{"scenario", to_string(s.scenario)},
                    {"target_qps", s.target_qps},
                    {"max_batch", s.max_batch},
                    {"max_queue_delay_us", s.max_queue_delay_us},
                    {"query_count", s.query_count},
                    {"min_query_count", s.min_query_count},
                    {"min_duration_ms", s.min_duration_ms},
                    {"dtype", to_string(s.dtype)},
                    {"seed", s.seed}}},
                  {"answered", x.answered},
                  {"duration_s", x.duration_s},
                  {"achieved_qps", x.achieved_qps},
                  {"latency_ms", summary_json(x.latency_ms)},
                  {"queue_ms", summary_json(x.queue_ms)},
                  {"compute_ms", summary_json(x.compute_ms)},
                  {"batch_size", summary_json(x.batch_size)},
                  {"valid", x.valid},
                  {"validity", x.validity},
                  {"intra_op_threads", x.intra_op_threads},
                  {"omp_wait_policy", x.omp_wait_policy},
                  {"batches", x.batches},
                  {"weight_bytes", x.weight_bytes},
                  {"of_card", card_fraction_json(r.of_card)}};
  if (r.search) {
    json probes = json::array();
    for (const auto& p : r.search->probes)
      probes.push_back({{"target_qps", p.target_qps},
                        {"achieved_qps", p.achieved_qps},
                        {"p99_ms", p.p99_ms},
                        {"queries", p.queries},
                        {"valid", p.valid},
                        {"meets", p.meets}});
    j["serving"]["max_qps_search"] = {
        {"p99_bound_ms", r.search->p99_bound_ms},     {"max_qps", r.search->max_qps},
        {"first_miss_qps", r.search->first_miss_qps}, {"lowest_qps", r.search->lowest_qps},
        {"latency_floor", r.search->latency_floor},   {"probes", probes}};
  }
  return j.dump(indent);
}

}  // namespace tvie
