// The CSV of every report that is one table: one header row, units in the column names, an empty cell where a
// figure does not apply (docs/reports.md, "CSV").
#include <tvie/report.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

namespace {
[[noreturn]] void no_csv(const char* kind) {
  throw InvalidArgument("csv", kind, "a report that is one table (not slices); use --json for this one");
}
}  // namespace

std::string to_csv_string(const SliceReport&) { no_csv("--slice-layers"); }

std::string to_csv_string(const AllreduceReport& report) {
  const auto& r = report.result;
  std::string csv =
      "bytes,count,dtype,oop_time_us,oop_algbw_gbs,oop_busbw_gbs,oop_wrong,ip_time_us,ip_algbw_gbs,ip_busbw_gbs,"
      "ip_wrong";
  for (const auto& x : r.rows)
    csv += cat("\n", x.bytes, ",", x.count, ",", r.dtype, ",", x.out_of_place_us, ",", x.out_of_place_algbw_gbs, ",",
               x.out_of_place_busbw_gbs, ",", x.out_of_place_wrong, ",", x.in_place_us, ",", x.in_place_algbw_gbs, ",",
               x.in_place_busbw_gbs, ",", x.in_place_wrong);
  return csv;
}

std::string to_csv_string(const ZooReport& r) {
  std::string out = "model,preset,parameters,buffer_bytes,forward_flops_per_sample,tokens_per_sample,blocks,source";
  for (const auto& p : r.presets)
    out += cat("\n", p.model, ",", p.preset, ",", p.facts.parameter_count, ",", p.facts.buffer_bytes, ",",
               std::llround(p.facts.forward_flops_per_sample), ",", p.facts.tokens_per_sample, ",", p.blocks, ",",
               detail::csv_quoted(p.source));
  return out;
}

std::string to_csv_string(const CardsReport& r) {
  std::string out = "id,name,memory_gb,memory_bandwidth_gbs";
  for (const auto& field : accelerator_peak_fields()) out += "," + field;
  out += ",tdp_w,interconnect_gbs,price_usd,price_kind,cloud_usd_per_hour_low,cloud_usd_per_hour_high,cloud_listings";
  const auto cell = [](double x) { return x < 0 ? std::string() : cat(x); };
  const auto quoted = detail::csv_quoted;
  for (const auto& a : r.cards) {
    out += cat("\n", a.id, ",", quoted(a.name), ",", cell(a.memory_gb), ",", cell(a.memory_bandwidth_gbs));
    for (const auto& field : accelerator_peak_fields()) out += "," + cell(a.peak(field));
    const CloudCost hour = cloud_cost(a, 1);
    out += cat(",", cell(a.tdp_w), ",", cell(a.interconnect_gbs), ",", a.price ? cell(a.price->usd) : "", ",",
               a.price ? a.price->kind : "", ",", cell(hour.low_usd), ",", cell(hour.high_usd), ",", hour.listings);
  }
  return out;
}

std::string to_csv_string(const MaxBatchReport& r) {
  std::string out = "mode,batch,fits,peak_bytes,seconds";
  for (const auto* result : {r.training ? &*r.training : nullptr, r.inference ? &*r.inference : nullptr}) {
    if (!result) continue;
    for (const auto& p : result->probes)
      out += cat("\n", to_string(result->mode), ",", p.batch, ",", p.fits ? 1 : 0, ",", p.peak_bytes, ",", p.seconds);
  }
  return out;
}

std::string to_csv_string(const PlanReport& r) {
  std::string out =
      "card,memory_gb,train_fits,train_peak_bytes,train_largest_batch,train_step_ms_projected_bound,"
      "train_step_ms_projected_estimate,train_samples_per_s_projected_estimate,train_mfu_estimate,train_cards,"
      "train_sharding,train_budget_hours_projected_estimate,infer_fits,infer_largest_batch,"
      "infer_latency_ms_projected_bound,infer_latency_ms_projected_estimate,infer_best_batch,"
      "infer_samples_per_s_projected_estimate,infer_qps_per_card_projected_estimate,infer_cards_for_qps,"
      "infer_power_kw_tdp,infer_hardware_usd,train_budget_usd_cloud_low,train_budget_usd_cloud_high,"
      "infer_usd_per_million_cloud_low,infer_usd_per_million_cloud_high,infer_first_token_ms_projected_estimate,"
      "infer_time_per_output_token_ms_projected_estimate,infer_tokens_per_s_projected_estimate";
  const auto cell = [](double x) { return x < 0 ? std::string() : cat(x); };
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    const auto& i = c.inference;
    out += cat(
        "\n", c.card.id, ",", c.card.memory_gb, ",", t.fits ? 1 : 0, ",", t.peak_bytes, ",", t.largest_batch, ",",
        t.supported ? cat(t.step.bound_s * 1e3) : "", ",", t.supported ? cat(t.step.estimate_s * 1e3) : "", ",",
        t.supported ? cat(t.samples_per_s.estimate) : "", ",", t.mfu_estimate, ",", t.cards, ",", to_string(t.stage),
        ",", t.budget_hours.estimate > 0 ? cat(t.budget_hours.estimate) : "", ",", i.fits ? 1 : 0, ",", i.largest_batch,
        ",", i.supported ? cat(i.latency.bound_s * 1e3) : "", ",", i.supported ? cat(i.latency.estimate_s * 1e3) : "",
        ",", i.best_batch, ",", i.supported ? cat(i.samples_per_s.estimate) : "", ",", cat(i.qps_per_card.estimate),
        ",", i.cards_for_qps, ",", cell(i.power_kw), ",", cell(i.hardware_usd), ",", cell(t.budget_usd.low_usd), ",",
        cell(t.budget_usd.high_usd), ",", cell(i.usd_per_million.low_usd), ",", cell(i.usd_per_million.high_usd));
    const GenerationPlan& g = i.generation;
    const bool generated = g.new_tokens > 0 && i.supported;
    out += cat(",", generated ? cat(g.prefill.estimate_s * 1e3) : "", ",",
               generated && g.new_tokens > 1 ? cat(g.time_per_output_token_s.estimate * 1e3) : "", ",",
               generated ? cat(g.tokens_per_s.estimate) : "");
  }
  return out;
}

// --- CSV of the console's tables: one header row, units in the column names, an empty cell where a figure does
// not apply ---
namespace {

std::string csv_bytes(int64_t bytes) { return bytes < 0 ? std::string() : cat(bytes); }

// The ledger: one row per category, training's and inference's measured and predicted bytes.
std::string ledger_csv(const TrainingResult* t, const InferenceResult* i) {
  std::string out = "category";
  if (t) out += ",training_bytes,training_predicted_bytes";
  if (i) out += ",inference_bytes,inference_predicted_bytes";
  struct Row {
    const char* name;
    int64_t train, train_predicted, infer, infer_predicted;
  };
  const TrainingMemory tm = t ? t->memory : TrainingMemory{};
  const PredictedTrainingMemory tp = t ? t->predicted : PredictedTrainingMemory{};
  const InferenceMemory im = i ? i->memory : InferenceMemory{};
  const PredictedInferenceMemory ip = i ? i->predicted : PredictedInferenceMemory{};
  const std::vector<Row> rows = {{"parameters", tm.parameters, tp.parameters, im.parameters, ip.parameters},
                                 {"packed_weights", -1, -1, im.packed_weights, ip.packed_weights},
                                 {"gradients", tm.gradients, tp.gradients, -1, -1},
                                 {"optimizer_state", tm.optimizer_state, tp.optimizer_state, -1, -1},
                                 {"activations", tm.activations, tp.activations, im.activations, ip.activations},
                                 {"weight_copies", tm.weight_copies, tp.weight_copies, -1, -1},
                                 {"loss_scaler", tm.loss_scaler, tp.loss_scaler, -1, -1},
                                 {"comm_buffers", tm.comm_buffers, tp.comm_buffers, -1, -1},
                                 {"other", tm.other, -1, im.other, -1},
                                 {"batch", tm.batch, tp.batch, im.batch, ip.batch},
                                 {"peak", tm.peak, tp.peak, im.peak, ip.peak},
                                 {"peak_reserved", tm.peak_reserved, -1, im.peak_reserved, -1}};
  for (const auto& r : rows) {
    out += cat("\n", r.name);
    if (t) out += cat(",", csv_bytes(r.train), ",", csv_bytes(r.train_predicted));
    if (i) out += cat(",", csv_bytes(r.infer), ",", csv_bytes(r.infer_predicted));
  }
  return out;
}

std::string summary_cells(const Summary& s) {
  return cat(s.count, ",", s.mean, ",", s.p50, ",", s.p90, ",", s.p95, ",", s.p99, ",", s.p999, ",", s.max);
}
constexpr const char* kSummaryColumns = "count,mean_ms,p50_ms,p90_ms,p95_ms,p99_ms,p99_9_ms,max_ms";

}  // namespace

std::string to_csv_string(const CompareReport& r) { return ledger_csv(&r.training, &r.inference); }
std::string to_csv_string(const TrainReport& r) { return ledger_csv(&r.training, nullptr); }

std::string to_csv_string(const InferReport& r) {
  std::string out =
      "batch,dtype,fits,latency_ms_mean,latency_ms_p50,latency_ms_p99,samples_per_s,parameter_bytes,"
      "packed_weight_bytes,activation_bytes,peak_bytes,max_abs_error,mean_abs_error,mean_abs_error_relative,"
      "top1_agreement";
  for (const auto& row : r.sweep.rows) {
    out += cat("\n", row.batch_size, ",", to_string(row.dtype), ",", row.fits ? 1 : 0);
    if (!row.fits) {
      out += ",,,,,,,,,,,,";
      continue;
    }
    const auto& x = row.result;
    // parameter_bytes as the console's "weights": the inference copy's parameters with int8's packs (also alone).
    out += cat(",", x.latency.mean, ",", x.latency.p50, ",", x.latency.p99, ",", x.samples_per_s, ",",
               x.memory.parameters + x.memory.packed_weights, ",", x.memory.packed_weights, ",", x.memory.activations,
               ",", x.memory.peak, ",");
    // The errors against fp32 as the console prints them (absolute), and the mean relative to fp32's mean |output|.
    if (row.has_accuracy)
      out +=
          cat(row.accuracy.max_abs_error, ",", row.accuracy.mean_abs_error, ",",
              row.accuracy.reference_mean_abs > 0 ? cat(row.accuracy.mean_abs_error / row.accuracy.reference_mean_abs)
                                                  : std::string(),
              ",", row.accuracy.top1_agreement);
    else
      out += ",,,";
  }
  return out;
}

std::string to_csv_string(const ServeReport& r) {
  const auto& x = r.result;
  std::string out = cat("quantity,", kSummaryColumns);
  out += cat("\nlatency,", summary_cells(x.latency_ms), "\nqueue,", summary_cells(x.queue_ms), "\ncompute,",
             summary_cells(x.compute_ms));
  return out;
}

std::string to_csv_string(const DecodeReport& r) {
  const auto& x = r.result;
  return cat("quantity,", kSummaryColumns, "\ntime_to_first_token,", summary_cells(x.ttft_ms),
             "\ntime_per_output_token,", summary_cells(x.tpot_ms));
}

}  // namespace tvie
