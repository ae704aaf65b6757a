// The tables of the reports (report/table.hpp) and their CSV: one header row, units in the column names, an empty
// cell where a figure does not apply (docs/reports.md, "CSV").
#include "report/table.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "report/ledger_rows.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace detail {

std::vector<Column> columns_of(const std::vector<std::string>& names, const std::vector<std::string>& text) {
  std::vector<Column> columns;
  for (const auto& name : names) {
    Column c{name};
    for (const auto& t : text) c.text = c.text || t == name;
    columns.push_back(std::move(c));
  }
  return columns;
}

std::string csv_of(const Table& table) {
  std::string out;
  for (size_t c = 0; c < table.columns.size(); ++c) out += (c ? "," : "") + table.columns[c].name;
  for (const auto& row : table.rows) {
    out += '\n';
    for (size_t c = 0; c < row.size(); ++c)
      out += (c ? "," : "") + (c < table.columns.size() && table.columns[c].text ? csv_quoted(row[c]) : row[c]);
  }
  return out;
}

namespace {

// Each argument as text (tvie::cat), one cell each.
template <typename... Cells>
std::vector<std::string> cells(const Cells&... x) {
  return {cat(x)...};
}

std::string bytes_cell(int64_t bytes) { return bytes < 0 ? std::string() : cat(bytes); }
std::string positive_cell(double x) { return x < 0 ? std::string() : cat(x); }  // negative: not published

// The ledger: one row per category (ledger_row_names), training's and inference's measured and predicted bytes; an
// empty cell where a mode has no such row or no such figure.
Table ledger_table(const TrainingResult* t, const InferenceResult* i) {
  std::vector<std::string> names{"category"};
  if (t) names.insert(names.end(), {"training_bytes", "training_predicted_bytes"});
  if (i) names.insert(names.end(), {"inference_bytes", "inference_predicted_bytes"});
  Table table{columns_of(names), {}};
  const auto training = t ? ledger_rows(*t, false) : std::vector<LedgerRow>{};
  const auto inference = i ? ledger_rows(*i) : std::vector<LedgerRow>{};
  const auto mode_cells = [](const std::vector<LedgerRow>& rows, const char* name) -> std::vector<std::string> {
    const auto* r = find_row(rows, name);
    if (!r) return {"", ""};
    return {bytes_cell(r->measured), bytes_cell(r->predicted)};
  };
  for (const char* name : ledger_row_names()) {
    std::vector<std::string> row{name};
    for (const auto* rows : {t ? &training : nullptr, i ? &inference : nullptr}) {
      if (!rows) continue;
      const auto c = mode_cells(*rows, name);
      row.insert(row.end(), c.begin(), c.end());
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

// Latency statistics, one row per quantity.
Table summary_table(const std::vector<std::pair<const char*, const Summary*>>& quantities) {
  Table table{
      columns_of({"quantity", "count", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms", "max_ms"}), {}};
  for (const auto& [name, s] : quantities)
    table.rows.push_back(cells(name, s->count, s->mean, s->p50, s->p90, s->p95, s->p99, s->p999, s->max));
  return table;
}

}  // namespace

Table table_of(const CompareReport& r) { return ledger_table(&r.training, &r.inference); }
Table table_of(const TrainReport& r) { return ledger_table(&r.training, nullptr); }

Table compiled_table(const CompareReport& r) {
  Table table{
      columns_of({"row", "dtype", "batch", "latency_ms_mean", "latency_ms_p50", "latency_ms_p99", "samples_per_s",
                  "weight_bytes", "activation_bytes", "peak_bytes", "peak_fraction", "bandwidth_fraction"}),
      {}};
  if (!r.compiled) return table;
  const auto row = [&](const char* name, const InferenceResult& x, const CardFraction& f) {
    table.rows.push_back(cells(name, to_string(x.dtype), r.settings.infer.batch_size, x.latency.mean, x.latency.p50,
                               x.latency.p99, x.samples_per_s, x.memory.parameters + x.memory.packed_weights,
                               x.memory.activations, x.memory.peak, positive_cell(f.peak_fraction),
                               positive_cell(f.bandwidth_fraction)));
  };
  row("eager", r.inference, r.inference_of_card);
  row("compiled", r.compiled->result, r.compiled->of_card);
  return table;
}

Table table_of(const InferReport& r) {
  Table table{columns_of({"batch", "dtype", "fits", "latency_ms_mean", "latency_ms_p50", "latency_ms_p99",
                          "samples_per_s", "parameter_bytes", "packed_weight_bytes", "activation_bytes", "peak_bytes",
                          "max_abs_error", "mean_abs_error", "mean_abs_error_relative", "top1_agreement",
                          "peak_fraction", "bandwidth_fraction"}),
              {}};
  for (size_t k = 0; k < r.sweep.rows.size(); ++k) {
    const auto& row = r.sweep.rows[k];
    auto out = cells(row.batch_size, to_string(row.dtype), row.fits ? 1 : 0);
    out.resize(table.columns.size());
    if (row.fits) {
      const auto& x = row.result;
      // parameter_bytes as the console's "weights": the inference copy's parameters with int8's packs (also alone).
      const auto figures = cells(x.latency.mean, x.latency.p50, x.latency.p99, x.samples_per_s,
                                 x.memory.parameters + x.memory.packed_weights, x.memory.packed_weights,
                                 x.memory.activations, x.memory.peak);
      std::copy(figures.begin(), figures.end(), out.begin() + 3);
      // The errors against fp32 as the console prints them (absolute), and the mean relative to fp32's mean |output|.
      if (row.has_accuracy) {
        const auto& a = row.accuracy;
        const auto errors =
            cells(a.max_abs_error, a.mean_abs_error,
                  a.reference_mean_abs > 0 ? cat(a.mean_abs_error / a.reference_mean_abs) : "", a.top1_agreement);
        std::copy(errors.begin(), errors.end(), out.begin() + 11);
      }
      // Fractions of the card (tvie/headroom.hpp); empty where not defined.
      if (k < r.of_card.size()) {
        out[15] = positive_cell(r.of_card[k].peak_fraction);
        out[16] = positive_cell(r.of_card[k].bandwidth_fraction);
      }
    }
    table.rows.push_back(std::move(out));
  }
  return table;
}

Table table_of(const ServeReport& r) {
  const auto& x = r.result;
  return summary_table({{"latency", &x.latency_ms}, {"queue", &x.queue_ms}, {"compute", &x.compute_ms}});
}

Table table_of(const DecodeReport& r) {
  const auto& x = r.result;
  return summary_table({{"time_to_first_token", &x.ttft_ms}, {"time_per_output_token", &x.tpot_ms}});
}

Table table_of(const MaxBatchReport& r) {
  Table table{columns_of({"mode", "batch", "fits", "peak_bytes", "seconds"}), {}};
  for (const auto* result : {r.training ? &*r.training : nullptr, r.inference ? &*r.inference : nullptr,
                             r.generation ? &*r.generation : nullptr}) {
    if (!result) continue;
    for (const auto& p : result->probes)
      table.rows.push_back(cells(to_string(result->mode), p.batch, p.fits ? 1 : 0, p.peak_bytes, p.seconds));
  }
  return table;
}

Table table_of(const AllreduceReport& report) {
  const auto& r = report.result;
  Table table{columns_of({"bytes", "count", "dtype", "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong",
                          "ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_wrong"}),
              {}};
  for (const auto& x : r.rows)
    table.rows.push_back(cells(x.bytes, x.count, r.dtype, x.out_of_place_us, x.out_of_place_algbw_gbs,
                               x.out_of_place_busbw_gbs, x.out_of_place_wrong, x.in_place_us, x.in_place_algbw_gbs,
                               x.in_place_busbw_gbs, x.in_place_wrong));
  return table;
}

Table table_of(const ZooReport& r) {
  Table table{columns_of({"model", "preset", "parameters", "buffer_bytes", "forward_flops_per_sample",
                          "tokens_per_sample", "blocks", "source"},
                         {"source"}),
              {}};
  for (const auto& p : r.presets)
    table.rows.push_back(cells(p.model, p.preset, p.facts.parameter_count, p.facts.buffer_bytes,
                               std::llround(p.facts.forward_flops_per_sample), p.facts.tokens_per_sample, p.blocks,
                               p.source));
  return table;
}

Table table_of(const CardsReport& r) {
  std::vector<std::string> names{"id", "name", "memory_gb", "memory_bandwidth_gbs"};
  for (const auto& field : accelerator_peak_fields()) names.push_back(field);
  names.insert(names.end(), {"tdp_w", "interconnect_gbs", "price_usd", "price_kind", "cloud_usd_per_hour_low",
                             "cloud_usd_per_hour_high", "cloud_listings"});
  Table table{columns_of(names, {"name"}), {}};
  for (const auto& a : r.cards) {
    auto row = cells(a.id, a.name, positive_cell(a.memory_gb), positive_cell(a.memory_bandwidth_gbs));
    for (const auto& field : accelerator_peak_fields()) row.push_back(positive_cell(a.peak(field)));
    const CloudCost hour = cloud_cost(a, 1);
    const auto rest =
        cells(positive_cell(a.tdp_w), positive_cell(a.interconnect_gbs), a.price ? positive_cell(a.price->usd) : "",
              a.price ? a.price->kind : "", positive_cell(hour.low_usd), positive_cell(hour.high_usd), hour.listings);
    row.insert(row.end(), rest.begin(), rest.end());
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table table_of(const PlanReport& r) {
  Table table{columns_of({"card",
                          "memory_gb",
                          "train_fits",
                          "train_peak_bytes",
                          "train_largest_batch",
                          "train_step_ms_projected_bound",
                          "train_step_ms_projected_estimate",
                          "train_samples_per_s_projected_estimate",
                          "train_mfu_estimate",
                          "train_cards",
                          "train_sharding",
                          "train_budget_hours_projected_estimate",
                          "infer_fits",
                          "infer_largest_batch",
                          "infer_latency_ms_projected_bound",
                          "infer_latency_ms_projected_estimate",
                          "infer_best_batch",
                          "infer_samples_per_s_projected_estimate",
                          "infer_qps_per_card_projected_estimate",
                          "infer_cards_for_qps",
                          "infer_power_kw_tdp",
                          "infer_hardware_usd",
                          "train_budget_usd_cloud_low",
                          "train_budget_usd_cloud_high",
                          "infer_usd_per_million_cloud_low",
                          "infer_usd_per_million_cloud_high",
                          "infer_first_token_ms_projected_estimate",
                          "infer_time_per_output_token_ms_projected_estimate",
                          "infer_tokens_per_s_projected_estimate"}),
              {}};
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    const auto& i = c.inference;
    const GenerationPlan& g = i.generation;
    const bool generated = g.new_tokens > 0 && i.supported;
    table.rows.push_back(cells(
        c.card.id, c.card.memory_gb, t.fits ? 1 : 0, t.peak_bytes, t.largest_batch,
        t.supported ? cat(t.step.bound_s * 1e3) : "", t.supported ? cat(t.step.estimate_s * 1e3) : "",
        t.supported ? cat(t.samples_per_s.estimate) : "", t.mfu_estimate, t.cards, to_string(t.stage),
        t.budget_hours.estimate > 0 ? cat(t.budget_hours.estimate) : "", i.fits ? 1 : 0, i.largest_batch,
        i.supported ? cat(i.latency.bound_s * 1e3) : "", i.supported ? cat(i.latency.estimate_s * 1e3) : "",
        i.best_batch, i.supported ? cat(i.samples_per_s.estimate) : "", cat(i.qps_per_card.estimate), i.cards_for_qps,
        positive_cell(i.power_kw), positive_cell(i.hardware_usd), positive_cell(t.budget_usd.low_usd),
        positive_cell(t.budget_usd.high_usd), positive_cell(i.usd_per_million.low_usd),
        positive_cell(i.usd_per_million.high_usd), generated ? cat(g.prefill.estimate_s * 1e3) : "",
        generated && g.new_tokens > 1 ? cat(g.time_per_output_token_s.estimate * 1e3) : "",
        generated ? cat(g.tokens_per_s.estimate) : ""));
  }
  return table;
}

}  // namespace detail

std::string to_csv_string(const CompareReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const TrainReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const InferReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const ServeReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const DecodeReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const MaxBatchReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const AllreduceReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const CardsReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const PlanReport& r) { return detail::csv_of(detail::table_of(r)); }
std::string to_csv_string(const ZooReport& r) { return detail::csv_of(detail::table_of(r)); }

}  // namespace tvie
