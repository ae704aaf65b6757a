// The JSON reports of the projection: the zoo's presets, the catalog of cards and the plan (schema:
// docs/reports.md). Every projected figure is an interval or an estimate, named so.
#include <tvie/report.hpp>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/compat.hpp"
#include "core/text.hpp"
#include "report/json_parts.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
using nlohmann::json;
using namespace json_parts;

namespace {
json figure(double x) { return x < 0 ? json() : json(x); }  // -1 (not published) as null
json efficiency_json(const Efficiency& e) {
  return {{"matmul", e.matmul}, {"convolution", e.convolution},   {"attention", e.attention},
          {"memory", e.memory}, {"interconnect", e.interconnect}, {"kernel_overhead_us", e.kernel_overhead_us},
          {"basis", e.basis}};
}
// At the cheapest and the dearest listed on-demand price; null when the card has no cloud price.
json cloud_cost_json(const CloudCost& c) {
  if (c.listings == 0) return json();
  return {{"low", c.low_usd}, {"high", c.high_usd}, {"listings", c.listings}};
}

}  // namespace

std::string to_json_string(const ZooReport& r, int indent) {
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["context"] = context_json(r.context);
  json presets = json::array();
  for (const auto& p : r.presets)
    presets.push_back({{"model", p.model},
                       {"preset", p.preset},
                       {"parameters", p.facts.parameter_count},
                       {"buffer_bytes", p.facts.buffer_bytes},
                       {"forward_flops_per_sample", p.facts.forward_flops_per_sample},
                       {"flops_source", p.facts.flops_source},
                       {"tokens_per_sample", p.facts.tokens_per_sample},
                       {"blocks", p.blocks},
                       {"source", p.source}});
  j["zoo"] = {{"presets", presets}};
  return j.dump(indent);
}

std::string to_json_string(const CardsReport& r, int indent) {
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["context"] = context_json(r.context);
  json cards = json::array();
  for (const auto& a : r.cards) {
    json c = {{"id", a.id},
              {"name", a.name},
              {"vendor", a.vendor},
              {"kind", a.kind},
              {"architecture", a.architecture},
              {"year", a.year > 0 ? json(a.year) : json()},
              {"memory_gb", a.memory_gb},
              {"memory_type", a.memory_type},
              {"memory_bandwidth_gbs", a.memory_bandwidth_gbs},
              {"sparse", a.sparse},
              {"tdp_w", figure(a.tdp_w)},
              {"interconnect", a.interconnect},
              {"interconnect_gbs", figure(a.interconnect_gbs)},
              {"form_factor", a.form_factor},
              {"estimates", a.estimates},
              {"notes", a.notes},
              {"sources", a.sources}};
    for (const auto& field : accelerator_peak_fields()) c[field] = figure(a.peak(field));
    c["price"] = a.price ? json{{"usd", a.price->usd}, {"kind", a.price->kind}, {"source", a.price->source}} : json();
    json cloud = json::array();
    for (const auto& p : a.cloud_prices)
      cloud.push_back({{"usd_per_hour", p.usd_per_hour},
                       {"vendor", p.vendor},
                       {"date", p.date},
                       {"region", p.region},
                       {"offer", p.offer},
                       {"source", p.source}});
    c["cloud_prices"] = std::move(cloud);
    c["efficiency"] = efficiency_json(a.efficiency);
    json published = json::array();
    for (const auto& p : a.published)
      published.push_back({{"benchmark", p.benchmark},
                           {"samples_per_s", p.samples_per_s},
                           {"precision", p.precision},
                           {"stack", p.stack},
                           {"source", p.source}});
    c["published"] = std::move(published);
    cards.push_back(c);
  }
  json classes = json::array();
  for (const auto& c : r.cpu_classes)
    classes.push_back({{"id", c.id},
                       {"name", c.name},
                       {"isa", c.isa},
                       {"fp32_flop_per_cycle_per_core", figure(c.fp32_flop_per_cycle_per_core)},
                       {"bf16_flop_per_cycle_per_core", figure(c.bf16_flop_per_cycle_per_core)},
                       {"int8_op_per_cycle_per_core", figure(c.int8_op_per_cycle_per_core)},
                       {"memory_bandwidth_gbs_per_core", figure(c.memory_bandwidth_gbs_per_core)},
                       {"efficiency", efficiency_json(c.efficiency)},
                       {"estimates", c.estimates},
                       {"notes", c.notes},
                       {"sources", c.sources}});
  j["catalog"] = {{"schema_version", r.catalog_schema_version},
                  {"description", r.catalog_description},
                  {"units", r.units},
                  {"efficiency_description", r.efficiency_description},
                  {"cloud_prices_source", r.cloud_prices_source},
                  {"cards", cards},
                  {"cpu_classes", classes},
                  {"host_class", r.host_class}};
  return j.dump(indent);
}

namespace {

json interval_json(const Projected& p) { return {{"bound", p.bound}, {"estimate", p.estimate}}; }

// Per ZeRO stage: the per-card ledger at the cards that stage needs (null where no count is enough).
json per_card_json(const TrainingPlan& t) {
  json j = json::object();
  const char* names[] = {"none", "zero1", "zero2", "zero3"};
  for (size_t stage = 0; stage < 4; ++stage) {
    const auto& m = t.per_card[stage];
    j[names[stage]] = t.cards_needed[stage] == 0 ? json() : json{{"cards", t.cards_needed[stage]},
                                                                 {"total_bytes", m.total},
                                                                 {"layout", to_string(m.layout)},
                                                                 {"model_states_bytes", m.model_states},
                                                                 {"parameters", m.parameters},
                                                                 {"gradients", m.gradients},
                                                                 {"optimizer_state", m.optimizer_state},
                                                                 {"weight_copies", m.weight_copies},
                                                                 {"buckets", m.buckets},
                                                                 {"peak_phase", m.peak_phase},
                                                                 {"phase_bytes", m.phase_bytes}};
  }
  return j;
}

json work_json(const StepWork& w) {
  json classes = json::array();
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto c = static_cast<OpClass>(i);
    const OpWork f = w.forward[c], b = w.backward[c];
    classes.push_back({{"class", to_string(c)},
                       {"flops", f.flops + b.flops},
                       {"bytes", f.bytes + b.bytes},
                       {"weight_elements", f.weight_elements + b.weight_elements},
                       {"kernels", f.kernels + b.kernels}});
  }
  return {{"source", w.profiled ? "profiler" : "trace"},
          {"precision", w.precision},
          {"samples", w.samples},
          {"tokens", w.tokens},
          {"model_flops", w.model_flops},
          {"weight_element_bytes", w.weight_element_bytes},
          {"matmul_peak", w.matmul_peak},
          {"by_class", classes},
          {"optimizer", {{"flops", w.optimizer.flops}, {"bytes", w.optimizer.bytes}, {"kernels", w.optimizer.kernels}}},
          {"allreduce_bytes", w.allreduce_bytes}};
}

json time_json(const ProjectedTime& t) {
  json classes = json::array();
  const auto add = [&](const char* name, const RooflineTime& r) {
    classes.push_back(
        {{"class", name}, {"bound_s", r.bound_s}, {"estimate_s", r.estimate_s}, {"memory_bound", r.memory_bound}});
  };
  for (int i = 0; i < kOpClassCount; ++i) add(to_string(static_cast<OpClass>(i)), t.by_class[static_cast<size_t>(i)]);
  add("optimizer", t.optimizer);
  return {{"supported", t.supported},   {"unsupported", t.unsupported}, {"bound_s", t.bound_s},
          {"estimate_s", t.estimate_s}, {"launch_s", t.launch_s},       {"kernels", t.kernels},
          {"by_class", classes}};
}

}  // namespace

std::string to_json_string(const PlanReport& r, int indent) {
  json j = report_head(r.context, r.workload, r.facts);
  const auto& s = r.settings;
  j["projected"] = true;
  j["settings"] = {{"train",
                    {{"batch_size", s.train.batch_size},
                     {"accumulate", s.train.accumulate},
                     {"optimizer", to_string(s.train.optimizer)},
                     {"fused_optimizer", s.train.fused_optimizer},
                     {"tf32", s.train.tf32},
                     {"fused_loss", s.train.fused_loss},
                     {"precision", to_string(s.train.precision)},
                     {"checkpoint", checkpoint_to_string(s.train.checkpoint_every)}}},
                   {"infer", {{"dtype", to_string(s.infer.dtype)}}},
                   {"cards", s.cards},
                   {"include_host", s.include_host},
                   {"serve_qps", s.serve_qps},
                   {"p99_ms", s.p99_ms},
                   {"new_tokens", s.new_tokens},
                   {"prompt_tokens", s.prompt_tokens},
                   {"batching", to_string(s.batching)},
                   {"stack", to_string(s.stack)},
                   {"train_tokens", s.train_tokens},
                   {"train_samples", s.train_samples},
                   {"usable_memory_fraction", s.usable_memory_fraction},
                   {"max_batch", s.max_batch}};
  if (const auto& c = s.calibration) {
    json k = {{"source", c->source},
              {"device", c->device},
              {"card", c->card_id},
              {"architecture", c->architecture},
              {"workload", c->workload}};
    const auto mode = [&](const std::string& name, const CalibrationFactor& f) {
      k[name + "_factor"] = f.factor;
      k[name + "_measured_s"] = f.measured_s;
      k[name + "_projected_s"] = f.projected_s;
      k[name + "_bound_s"] = f.bound_s;
      k[name + "_launch_s"] = f.launch_s;
      k[name + "_work_factor"] = f.work_factor;
      k[name + "_launch_factor"] = f.launch_factor;
      k[name + "_unsupported"] = f.unsupported;
      k[name + "_below_bound"] = f.below_bound;
    };
    mode("training", c->training);
    mode("training_forward", c->training_phases.forward);  // the phases: factor 0 where the report had none
    mode("training_backward", c->training_phases.backward);
    mode("training_optimizer", c->training_phases.optimizer);
    // Within the forward and backward, by class (--profile-classes reports): factor 0 where a class has none.
    for (int i = 0; i < kOpClassCount; ++i) {
      const std::string name = to_string(static_cast<OpClass>(i));
      mode("training_forward_" + name, c->training_phases.forward_classes.by_class[static_cast<size_t>(i)]);
      mode("training_backward_" + name, c->training_phases.backward_classes.by_class[static_cast<size_t>(i)]);
    }
    mode("inference", c->inference);
    for (int i = 0; i < kOpClassCount; ++i) {
      const std::string name = to_string(static_cast<OpClass>(i));
      mode("inference_" + name, c->inference_classes.by_class[static_cast<size_t>(i)]);
      mode("prefill_" + name, c->prefill_classes.by_class[static_cast<size_t>(i)]);
      mode("decoding_" + name, c->decoding_classes.by_class[static_cast<size_t>(i)]);
    }
    mode("prefill", c->prefill);
    mode("decoding", c->decoding);
    j["settings"]["calibration"] = k;
  }
  j["training_predicted"] = predicted_json(r.training_predicted);
  j["inference_predicted"] = predicted_json(r.inference_predicted);
  j["training_work"] = work_json(r.training_work);
  j["inference_work"] = work_json(r.inference_work);
  j["host"] = {{"class", r.host_class}, {"clock_ghz", r.host_clock_ghz}};
  json cards = json::array();
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    const auto& i = c.inference;
    cards.push_back(
        {{"id", c.card.id},
         {"name", c.card.name},
         {"memory_gb", c.card.memory_gb},
         {"tdp_w", figure(c.card.tdp_w)},
         {"efficiency", efficiency_json(c.card.efficiency)},
         {"training_calibration", c.training_calibration.factor},
         {"training_calibration_by_phase", c.training_phase_calibration.complete()},
         {"training_calibration_by_class",
          c.training_phase_calibration.complete() && (c.training_phase_calibration.forward_classes.any() ||
                                                      c.training_phase_calibration.backward_classes.any())},
         {"inference_calibration", c.inference_calibration.factor},
         {"inference_calibration_by_class", c.inference_class_calibration.any()},
         {"prefill_calibration_by_class", c.prefill_class_calibration.any()},
         {"decoding_calibration_by_class", c.decoding_class_calibration.any()},
         {"prefill_calibration", c.prefill_calibration.factor},
         {"decoding_calibration", c.decoding_calibration.factor},
         {"training",
          {{"supported", t.supported},
           {"unsupported", t.unsupported},
           {"usable_bytes", t.usable_bytes},
           {"peak_bytes", t.peak_bytes < 0 ? json() : json(t.peak_bytes)},
           {"peak_note", t.peak_note},
           {"fits", t.fits},
           {"largest_batch", t.largest_batch},
           {"step", time_json(t.step)},
           {"samples_per_s", interval_json(t.samples_per_s)},
           {"tokens_per_s", interval_json(t.tokens_per_s)},
           {"mfu_estimate", t.mfu_estimate},
           {"cards_needed",
            {{"none", t.cards_needed[0]},
             {"zero1", t.cards_needed[1]},
             {"zero2", t.cards_needed[2]},
             {"zero3", t.cards_needed[3]}}},
           {"per_card", per_card_json(t)},
           {"cards", t.cards},
           {"sharding", to_string(t.stage)},
           {"allreduce_s", t.allreduce_s},
           {"allreduce_note", t.allreduce_note},
           {"budget_steps", t.budget_steps},
           {"budget_hours", interval_json(t.budget_hours)},
           {"budget_energy_kwh", t.budget_energy_kwh.bound < 0 ? json() : interval_json(t.budget_energy_kwh)},
           {"budget_usd", cloud_cost_json(t.budget_usd)}}},
         {"inference",
          {{"supported", i.supported},
           {"unsupported", i.unsupported},
           {"usable_bytes", i.usable_bytes},
           {"peak_bytes", i.peak_bytes < 0 ? json() : json(i.peak_bytes)},
           {"peak_note", i.peak_note},
           {"fits", i.fits},
           {"largest_batch", i.largest_batch},
           {"latency", time_json(i.latency)},
           {"best_batch", i.best_batch},
           {"samples_per_s", interval_json(i.samples_per_s)},
           {"qps_per_card", interval_json(i.qps_per_card)},
           {"serving_batch", i.serving_batch},
           {"serving_batching", i.continuous ? "continuous" : "static"},
           {"cards_for_qps", i.cards_for_qps},
           {"power_kw", figure(i.power_kw)},
           {"hardware_usd", figure(i.hardware_usd)},
           {"usd_per_million", cloud_cost_json(i.usd_per_million)}}}});
    cards.back()["inference"]["tuned"] = !i.tuned.supported && i.tuned.unsupported.empty()
                                             ? json()
                                             : json{{"supported", i.tuned.supported},
                                                    {"unsupported", i.tuned.unsupported},
                                                    {"compute_efficiency", i.tuned.compute_efficiency},
                                                    {"anchor_samples_per_s", i.tuned.anchor_samples_per_s},
                                                    {"anchor_projected_samples_per_s", i.tuned.projected_samples_per_s},
                                                    {"source", i.tuned.source}};
    const GenerationPlan& g = i.generation;
    cards.back()["inference"]["generation"] =
        g.new_tokens == 0 ? json()
                          : json{{"prompt_tokens", g.prompt_tokens},
                                 {"new_tokens", g.new_tokens},
                                 {"prefill", time_json(g.prefill)},
                                 {"time_per_output_token_s", interval_json(g.time_per_output_token_s)},
                                 {"tokens_per_s", interval_json(g.tokens_per_s)},
                                 {"kv_cache_bytes", g.kv_cache_bytes}};
  }
  j["cards"] = cards;
  return j.dump(indent);
}

}  // namespace tvie
