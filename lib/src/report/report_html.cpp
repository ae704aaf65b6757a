// The HTML report: one self-contained file (inline CSS and SVG, a few lines of inline script that check the page
// in the browser; nothing fetched), written atomically like the JSON. Every chart says what its numbers are; the
// table under the charts is the report's table (report/table.hpp), the one the CSV writes, so that the two cannot
// disagree.
#include <tvie/report.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

#include "core/compat.hpp"
#include "core/text.hpp"
#include "report/console_text.hpp"
#include "report/ledger_rows.hpp"
#include "report/svg_chart.hpp"
#include "report/table.hpp"

namespace tvie {
namespace {

using svg::escape;

std::string fig(double v) { return svg::format_value(v, svg::Format::number); }  // 4 significant digits

// --- page -------------------------------------------------------------------------------------------------

struct Section {
  std::string title;
  std::string explanation;  // what the numbers are and how they were obtained (plain text)
  std::string body;         // HTML: charts, tables
};

// A report's table as HTML, its cells as the CSV writes them (report/table.hpp).
std::string html_table(const detail::Table& table, const std::string& id) {
  std::ostringstream o;
  o << "<div class=\"table-wrap\"><table data-table=\"" << escape(id) << "\">\n<thead><tr>";
  for (const auto& c : table.columns) o << "<th>" << escape(c.name) << "</th>";
  o << "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    o << "<tr>";
    for (const auto& cell : row) o << "<td>" << escape(cell) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n";
  return o.str();
}

std::string context_footer(const RunContext& c) {
  std::ostringstream o;
  std::string command;
  for (const auto& a : c.argv) command += (command.empty() ? "" : " ") + a;
  o << "<footer><dl>\n";
  auto item = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) o << "<dt>" << escape(k) << "</dt><dd>" << escape(v) << "</dd>\n";
  };
  item("device", c.device);
  if (c.gpu)
    item("GPU", cat(c.gpu->name, ", compute capability ", c.gpu->compute_capability, ", ",
                    detail::bytes_text(c.gpu->memory_bytes), ", driver ", c.gpu->driver, ", CUDA ", c.gpu->cuda_runtime,
                    ", cuDNN ", c.gpu->cudnn, ", NCCL ", c.gpu->nccl));
  item("CPU",
       cat(c.host.cpu_model, " (", cpu_features_text(c.host), "), ", c.host.intra_op_threads, " intra-op threads"));
  item("versions", cat("tvie ", c.tvie_version, ", LibTorch ", c.torch_version));
  item("command", command.empty() ? "(from code)" : command);
  if (!c.config_file.empty()) item("config", c.config_file + ": " + detail::config_text(c.config));
  o << "</dl></footer>\n";
  return o.str();
}

// Runs in the browser once the page is parsed: every chart must hold the series it declares, and any script
// error is recorded on <body>, where a test reading the DOM (chromium --dump-dom) finds both.
constexpr const char* kCheckScript = R"(<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    document.body.setAttribute('data-errors', errors.join(' | '));
  });
  var charts = document.querySelectorAll('svg.chart'), bad = [];
  for (var i = 0; i < charts.length; ++i) {
    var want = Number(charts[i].getAttribute('data-series-count'));
    var got = charts[i].querySelectorAll('.series').length;
    if (!(want >= 1) || got !== want) bad.push(charts[i].getAttribute('data-chart'));
  }
  document.body.setAttribute('data-charts', String(charts.length));
  document.body.setAttribute('data-charts-checked', bad.length ? 'missing series: ' + bad.join(',') : 'ok');
})();
</script>
)";

constexpr const char* kStyle = R"(<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 820px; color: #222; padding: 0 12px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
p.what { color: #555; margin-top: 0; }
svg.chart { display: block; margin: 8px 0; font-size: 11px; background: #fff; }
svg .chart-title { font-size: 13px; font-weight: 600; }
svg .axis-label { font-size: 12px; }
.table-wrap { overflow-x: auto; } table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; } th:first-child, td:first-child { text-align: left; }
footer { margin-top: 36px; border-top: 1px solid #ccc; font-size: 12px; color: #555; }
footer dt { font-weight: 600; float: left; clear: left; width: 90px; } footer dd { margin-left: 100px; }
.projected { color: #8a4b00; font-weight: 600; }
</style>
)";

std::string page(const std::string& title, const std::string& summary, const std::vector<Section>& sections,
                 const RunContext& context) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << escape(title) << "</title>\n"
    << kStyle << "</head>\n<body>\n<h1>" << escape(title) << "</h1>\n<p>" << escape(summary) << "</p>\n";
  for (const auto& s : sections) {
    o << "<section>\n<h2>" << escape(s.title) << "</h2>\n";
    if (!s.explanation.empty()) o << "<p class=\"what\">" << escape(s.explanation) << "</p>\n";
    o << s.body << "</section>\n";
  }
  o << context_footer(context) << kCheckScript << "</body>\n</html>\n";
  return o.str();
}

// --- charts from the results ---------------------------------------------------------------------------------

svg::Axis bytes_axis(const std::string& label) { return {label, false, svg::Format::bytes}; }
svg::Axis ms_axis(const std::string& label, bool log = false) { return {label, log, svg::Format::milliseconds}; }

svg::Bar training_bar(const std::string& label, int64_t parameters, int64_t gradients, int64_t optimizer,
                      int64_t copies, int64_t scaler, int64_t comm, int64_t activations, int64_t peak) {
  svg::Bar b{label, {}, ""};
  auto add = [&](const char* category, int64_t v) {
    if (v > 0) b.segments.push_back({category, static_cast<double>(v)});
  };
  add("parameters", parameters);
  add("gradients", gradients);
  add("optimizer state", optimizer);
  add("weight copies", copies);
  add("loss scaler", scaler);
  add("communication buffers", comm);
  add("saved activations / working set", activations);
  const int64_t known = std::max<int64_t>(parameters, 0) + std::max<int64_t>(gradients, 0) +
                        std::max<int64_t>(optimizer, 0) + std::max<int64_t>(copies, 0) + std::max<int64_t>(scaler, 0) +
                        std::max<int64_t>(comm, 0) + std::max<int64_t>(activations, 0);
  if (peak >= 0) {
    add("other (transients, batch)", peak - known);
    if (peak < known) b.note = "(categories not all live at once: peak " + detail::bytes_text(peak) + ")";
  } else {
    b.note = "(no peak predicted)";
  }
  return b;
}

// One bar per ledger, measured or predicted, training or inference (an inference ledger has no gradients, no
// optimizer state: its weights and working set only).
svg::Bar ledger_bar(const std::string& label, const TrainingMemory& m) {
  return training_bar(label, m.parameters, m.gradients, m.optimizer_state, m.weight_copies, m.loss_scaler,
                      m.comm_buffers, m.activations, m.peak);
}
svg::Bar ledger_bar(const std::string& label, const PredictedTrainingMemory& p) {
  return training_bar(label, p.parameters, p.gradients, p.optimizer_state, p.weight_copies, p.loss_scaler,
                      p.comm_buffers, p.activations, p.peak);
}
svg::Bar ledger_bar(const std::string& label, const InferenceMemory& m) {
  // CPU int8 without readable heap statistics: the bar lacks fbgemm's packs, and its label says so.
  return training_bar(label + (m.packed_weights_measured ? "" : " (int8 packs not measured)"),
                      m.parameters + m.packed_weights, 0, 0, 0, 0, 0, m.activations, m.peak);
}
svg::Bar ledger_bar(const std::string& label, const PredictedInferenceMemory& p) {
  return training_bar(label, p.weights(), 0, 0, 0, 0, 0, p.activations, p.peak);
}
// A generation's ledger, measured or predicted: its categories stacked (the packs are in the weights).
svg::Bar ledger_bar(const std::string& label, const GenerationMemory& m) {
  svg::Bar bar{label, {}, m.peak < 0 ? "(no peak predicted)" : ""};
  for (const auto& lr : detail::generation_rows(m, nullptr))
    if (std::string_view(lr.name) != "packed_weights" && std::string_view(lr.name) != "peak")
      bar.segments.push_back({lr.name, static_cast<double>(std::max<int64_t>(0, lr.measured))});
  return bar;
}

svg::BarChart ledger_chart(const TrainingResult* t, const InferenceResult* i) {
  svg::BarChart chart("ledger", "Memory ledger at the peak: measured and predicted", bytes_axis("bytes (allocated)"));
  if (t) {
    chart.bars.push_back(ledger_bar("training, measured", t->memory));
    chart.bars.push_back(ledger_bar("training, predicted", t->predicted));
  }
  if (i) {
    chart.bars.push_back(ledger_bar("inference, measured", i->memory));
    chart.bars.push_back(ledger_bar("inference, predicted", i->predicted));
  }
  return chart;
}

Section ledger_section(const TrainingResult* t, const InferenceResult* i) {
  std::string what = "Each bar is a peak, split by category: bytes above the baseline taken before the model was built";
  what += ". Measured: " + (t ? t->memory_counter : i->memory_counter) +
          ". Predicted: tvie's analytic ledger, computed before the run. Training holds gradients (one per weight, "
          "written by backward), the optimizer's state (kept across steps) and every activation backward needs; "
          "inference holds the weights and one layer's working set.";
  if (t && t->memory.peak_reserved >= 0)
    what += cat(" Reserved by the CUDA caching allocator at the training peak: ",
                detail::bytes_text(t->memory.peak_reserved), " (not charted).");
  return {"Memory ledger", what, svg::render(ledger_chart(t, i))};
}

svg::Series timeline_series(const std::string& name, const MemoryTimeline& t) {
  svg::Series s{name, {}, svg::Style::step};
  for (const auto& p : t.points) s.points.emplace_back(p.time_ms, static_cast<double>(p.bytes));
  return s;
}

svg::LineChart timeline_chart(const TrainingResult* t, const InferenceResult* i) {
  const bool train = t && !t->memory_timeline.empty(), inference = i && !i->memory_timeline.empty();
  svg::LineChart chart("memory-over-time",
                       train && inference ? "Memory over time: one training step beside one inference batch"
                       : train            ? "Memory over time: one training step"
                                          : "Memory over time: one inference batch",
                       {"host time since the start of the step or batch (ms)", false, svg::Format::milliseconds},
                       bytes_axis("live bytes above the baseline"));
  if (train) {
    chart.series.push_back(timeline_series("training step", t->memory_timeline));
    for (const auto& p : t->memory_timeline.phases) chart.bands.push_back({p.start_ms, p.end_ms, p.name});
  }
  if (inference) chart.series.push_back(timeline_series("inference batch", i->memory_timeline));
  return chart;
}

Section timeline_section(const TrainingResult* t, const InferenceResult* i) {
  const auto chart = timeline_chart(t, i);
  if (chart.series.empty()) return {};
  std::string what;
  const MemoryTimeline* any = nullptr;
  for (const auto& [label, timeline] :
       {std::pair<const char*, const MemoryTimeline*>{"Training", t ? &t->memory_timeline : nullptr},
        {"Inference", i ? &i->memory_timeline : nullptr}}) {
    if (!timeline || timeline->empty()) continue;
    what += cat(label, ": ", timeline->what, ", ", timeline->events, " allocations and frees (peak ",
                detail::bytes_text(timeline->peak_bytes), "). ");
    any = any ? any : timeline;
  }
  what += "Bytes: " + any->counter + ". Time: " + any->clock + ". Shaded: the step's phases.";
  return {"Memory over time", what, svg::render(chart)};
}

Section phases_section(const TrainingResult& t) {
  svg::BarChart chart("phases", "Phases of a training step (median over the timed steps)", ms_axis("time (ms)"));
  svg::Bar bar{"training step", {}, ""};
  for (const auto& p : t.phases) bar.segments.push_back({p.name, p.p50_ms});
  chart.bars.push_back(bar);
  return {"Phases of a training step",
          cat("Median time of each phase over ", t.timed_steps, " timed steps (", t.ledger_steps, " ledger and ",
              t.warmup_steps, " warm-up steps excluded); timer: ", t.timer, "."),
          svg::render(chart)};
}

svg::Series cdf_series(const std::string& name, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  svg::Series s{name, {}, svg::Style::step};
  const double n = static_cast<double>(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    if (k == 0) s.points.emplace_back(values[k], 0.0);
    s.points.emplace_back(values[k], static_cast<double>(k + 1) / n);
  }
  return s;
}

std::vector<svg::VerticalMarker> percentile_markers(const Summary& s, const std::string& prefix) {
  return {{s.p50, prefix + "p50"}, {s.p90, prefix + "p90"}, {s.p99, prefix + "p99"}};
}

svg::Axis fraction_axis() {
  svg::Axis a{"fraction of samples at or below", false, svg::Format::number};
  a.min = 0;
  a.max = 1;
  return a;
}

Section latency_section(const TrainingResult* t, const InferenceResult* i) {
  svg::LineChart chart("latency-cdf", "Distribution of the timed steps and batches (CDF)", ms_axis("time (ms)", t && i),
                       fraction_axis());
  std::string what;
  if (t && !t->step_ms.empty()) {
    chart.series.push_back(cdf_series("training step", t->step_ms));
    for (auto& m : percentile_markers(t->step, i ? "train " : "")) chart.markers.push_back(m);
    what += cat("Training: ", t->timed_steps, " timed steps (", t->warmup_steps, " warm-up excluded). ");
  }
  if (i && !i->latency_ms.empty()) {
    chart.series.push_back(cdf_series("inference batch", i->latency_ms));
    for (auto& m : percentile_markers(i->latency, t ? "infer " : "")) chart.markers.push_back(m);
    what += cat("Inference: ", i->timed_batches, " timed batches (", i->warmup_batches, " warm-up excluded). ");
  }
  if (chart.series.empty()) return {};
  what += "Timer: " + (t ? t->timer : i->timer) + ". Dashed lines: percentiles.";
  if (t && i) what += " Log time axis.";
  return {"Step and batch times", what, svg::render(chart)};
}

Section loss_section(const TrainingResult& t) {
  if (t.loss_curve.size() < 2) return {};
  svg::LineChart chart("loss", "Training loss", {"optimizer step", false, svg::Format::number},
                       {"loss (mean over the batch)", false, svg::Format::number});
  svg::Series s{"loss", {}, svg::Style::dots};
  for (const auto& [step, loss] : t.loss_curve)
    if (std::isfinite(loss)) s.points.emplace_back(static_cast<double>(step), loss);
  if (s.points.empty()) return {};
  chart.series.push_back(s);
  std::string what = "The loss of the synthetic task at the recorded steps (it should fall).";
  if (t.non_finite_losses > 0)
    what += cat(" The loss is not finite from step ", t.first_non_finite_step, " (", t.non_finite_losses,
                " recorded steps, not drawn): the run diverged.");
  return {"Loss", what, svg::render(chart)};
}

void add(std::vector<Section>& sections, Section s) {
  if (!s.body.empty()) sections.push_back(std::move(s));
}

Section table_section(const std::string& title, const detail::Table& table, const std::string& id) {
  return {title, "The same figures as --csv writes them (units in the column names).", html_table(table, id)};
}

// What a measured report corrected in the plan's estimates, per mode (and per phase of a training step).
Section calibration_section(const Calibration& c) {
  detail::Table table{detail::columns_of({"mode", "measured_ms", "projected_estimate_ms", "projected_bound_ms",
                                          "kernel_launches_percent_of_estimate", "factor", "corrects", "below_bound"},
                                         {"mode", "corrects"}),
                      {}};
  const auto row = [&](const std::string& what, const CalibrationFactor& f) {
    if (!(f.measured_s > 0)) return;
    const bool has = f.factor > 0;
    table.rows.push_back(
        {what, cat(f.measured_s * 1e3), has ? cat(f.projected_s * 1e3) : "", has ? cat(f.bound_s * 1e3) : "",
         has && f.projected_s > 0 ? cat(100 * f.launch_s / f.projected_s) : "", has ? cat(f.factor) : "",
         has ? describe_correction(f) : "not projected there: " + f.unsupported, f.below_bound ? "yes" : "no"});
  };
  const bool phases = c.training_phases.complete();
  row(phases ? "training step (its phases below calibrate training)" : "training step", c.training);
  if (phases) {
    row("training: forward", c.training_phases.forward);
    for (int i = 0; i < kOpClassCount; ++i)
      row(cat("training: forward: ", to_string(static_cast<OpClass>(i))),
          c.training_phases.forward_classes.by_class[static_cast<size_t>(i)]);
    row("training: backward", c.training_phases.backward);
    for (int i = 0; i < kOpClassCount; ++i)
      row(cat("training: backward: ", to_string(static_cast<OpClass>(i))),
          c.training_phases.backward_classes.by_class[static_cast<size_t>(i)]);
    row("training: optimizer", c.training_phases.optimizer);
  }
  row("inference batch", c.inference);
  for (int i = 0; i < kOpClassCount; ++i)
    row(cat("inference batch: ", to_string(static_cast<OpClass>(i))),
        c.inference_classes.by_class[static_cast<size_t>(i)]);
  row("prefill", c.prefill);
  for (int i = 0; i < kOpClassCount; ++i)
    row(cat("prefill: ", to_string(static_cast<OpClass>(i))), c.prefill_classes.by_class[static_cast<size_t>(i)]);
  row("decoding step", c.decoding);
  for (int i = 0; i < kOpClassCount; ++i)
    row(cat("decoding step: ", to_string(static_cast<OpClass>(i))),
        c.decoding_classes.by_class[static_cast<size_t>(i)]);
  const std::string cards = c.architecture == "host" ? "the host card" : "the " + c.architecture + " cards";
  return {"Calibration",
          cat(c.workload, " measured on ", c.device, " (", c.source,
              "), against its projection on the catalog card it ran on (", c.card_id,
              "); each factor corrects the term that dominated that projection, applied to ", cards,
              " and never below the roofline bound (docs/plan.md, Calibration). The measured times are that run's, "
              "not this plan's."),
          html_table(table, "calibration")};
}

std::string workload_summary(const std::string& workload, const ModelFacts& f) {
  return cat(workload, ": ", detail::with_commas(f.parameter_count), " parameters.");
}

}  // namespace

// --- the reports --------------------------------------------------------------------------------------------

namespace {

// A generation's ledger, measured beside predicted: one bar each, its categories stacked.
Section generation_memory_section(const DecodeResult& x) {
  svg::BarChart chart("generation-memory", "A generation's memory: measured and predicted", bytes_axis("bytes"));
  chart.bars.push_back(ledger_bar("measured", x.memory));
  chart.bars.push_back(ledger_bar("predicted", x.predicted));
  return {"Generation memory",
          "Measured (" + x.memory_counter +
              "): the weights and the KV cache as the bytes building them added, the working set as the most a "
              "generation held above them. Predicted from the trace; the KV cache: 2 x layers x batch x positions x "
              "key/value width x bytes per element.",
          svg::render(chart)};
}

// " Its model FLOP/s are 3.1% of the bf16 peak of NAME." ("" without a card or a peak: tvie/headroom.hpp).
std::string peak_sentence(const CardFraction& f, const std::string& what) {
  if (f.card.empty() || f.peak_fraction < 0) return "";
  return cat(" ", what, " ", console::percent(f.peak_fraction), " of the ", console::peak_dtype(f.peak_field),
             " peak of ", f.card_name, ".");
}

}  // namespace

std::string to_html_string(const CompareReport& r) {
  std::vector<Section> s;
  add(s, ledger_section(&r.training, &r.inference));
  add(s, timeline_section(&r.training, &r.inference));
  add(s, phases_section(r.training));
  add(s, latency_section(&r.training, &r.inference));
  add(s, loss_section(r.training));
  if (r.generation) add(s, generation_memory_section(*r.generation));
  add(s, table_section("The ledger, in bytes", detail::table_of(r), "ledger"));
  if (r.compiled)
    add(s, table_section("Inference eager and compiled (AOTInductor)", detail::compiled_table(r), "compiled"));
  // A token model's serving is its generation: the summary leads with it, the full-sequence forward ("score") after.
  std::string summary =
      cat(workload_summary(r.workload, r.facts), " Training (", to_string(r.training.precision), ", batch ",
          r.settings.train.batch_size, ") peaks at ", detail::bytes_text(r.training.memory.peak), "; ");
  if (r.generation && r.generation_settings)
    summary +=
        cat("serving as a generation (", to_string(r.generation->dtype), ", batch ", r.generation_settings->batch_size,
            ", ", r.generation_settings->prompt_tokens, "-token prompts, ", r.generation_settings->new_tokens,
            " new tokens) at ", detail::bytes_text(r.generation->memory.peak), ": ",
            svg::format_value(r.generation_peak_memory_ratio, svg::Format::number),
            "x the memory; one forward of whole sequences (score) at ", detail::bytes_text(r.inference.memory.peak),
            ": ", svg::format_value(r.peak_memory_ratio, svg::Format::number), "x.");
  else
    summary += cat("inference (", to_string(r.inference.dtype), ", batch ", r.settings.infer.batch_size, ") at ",
                   detail::bytes_text(r.inference.memory.peak), ": ",
                   svg::format_value(r.peak_memory_ratio, svg::Format::number), "x the memory.");
  summary += peak_sentence(r.training_of_card, "Training's model FLOP/s are");
  if (r.compiled)
    summary += cat(" Compiled by AOTInductor, the inference batch runs at ",
                   svg::format_value(r.compiled->throughput_ratio, svg::Format::number), "x eager's samples/s.");
  return page("tvie compare: " + r.workload, summary, s, r.context);
}

std::string to_html_string(const TrainReport& r) {
  std::vector<Section> s;
  add(s, ledger_section(&r.training, nullptr));
  add(s, timeline_section(&r.training, nullptr));
  add(s, phases_section(r.training));
  add(s, latency_section(&r.training, nullptr));
  add(s, loss_section(r.training));
  add(s, table_section("The ledger, in bytes", detail::table_of(r), "ledger"));
  return page("tvie train: " + r.workload,
              cat(workload_summary(r.workload, r.facts), " Training (", to_string(r.training.precision), ", batch ",
                  r.settings.batch_size, ") peaks at ", detail::bytes_text(r.training.memory.peak), "; ",
                  fig(r.training.samples_per_s), " samples/s.", peak_sentence(r.of_card, "Its model FLOP/s are")),
              s, r.context);
}

std::string to_html_string(const InferReport& r) {
  std::vector<std::string> dtypes;
  for (const auto& row : r.sweep.rows)
    if (std::find(dtypes.begin(), dtypes.end(), to_string(row.dtype)) == dtypes.end())
      dtypes.push_back(to_string(row.dtype));
  svg::LineChart throughput("sweep-throughput", "Throughput vs batch size", {"batch size", true}, {"samples/s"});
  svg::LineChart p99("sweep-p99", "p99 batch latency vs batch size", {"batch size", true},
                     ms_axis("p99 batch latency (ms)"));
  svg::LineChart peak("sweep-peak", "Peak memory vs batch size", {"batch size", true},
                      bytes_axis("peak bytes (allocated)"));
  for (const auto& d : dtypes) {
    svg::Series a{d, {}, svg::Style::dots}, b{d, {}, svg::Style::dots}, c{d, {}, svg::Style::dots};
    for (const auto& row : r.sweep.rows) {
      if (to_string(row.dtype) != d) continue;
      const double x = static_cast<double>(row.batch_size);
      if (!row.fits) {
        throughput.crosses.push_back({x, 0, d + ": does not fit"});
        continue;
      }
      a.points.emplace_back(x, row.result.samples_per_s);
      b.points.emplace_back(x, row.result.latency.p99);
      c.points.emplace_back(x, static_cast<double>(row.result.memory.peak));
    }
    throughput.series.push_back(a);
    p99.series.push_back(b);
    peak.series.push_back(c);
  }
  std::vector<Section> s;
  const std::string what = cat("Each point: ", r.settings.steps, " timed batches after ", r.settings.warmup_steps,
                               " warm-up batches; timer: ", r.sweep.timer, ". Crosses: the batch does not fit.");
  add(s, {"Throughput", what, svg::render(throughput)});
  add(s, {"Latency", what, svg::render(p99)});
  add(s, {"Memory", "Peak per batch size, above the baseline: " + r.sweep.memory_counter + ".", svg::render(peak)});
  add(s, table_section("The sweep", detail::table_of(r), "sweep"));
  return page("tvie infer: " + r.workload,
              workload_summary(r.workload, r.facts) + " Batched inference, every batch size x every dtype.", s,
              r.context);
}

std::string to_html_string(const ServeReport& r) {
  const auto& x = r.result;
  std::vector<double> latency, queue, compute;
  for (const auto& rec : x.records) {
    latency.push_back((rec.end_us - rec.scheduled_us) / 1e3);
    queue.push_back((rec.start_us - rec.scheduled_us) / 1e3);
    compute.push_back((rec.end_us - rec.start_us) / 1e3);
  }
  std::vector<Section> s;
  if (!latency.empty()) {
    svg::LineChart cdf("serve-latency-cdf", "Request latency (CDF)", ms_axis("time (ms)"), fraction_axis());
    cdf.series = {cdf_series("latency (arrival to answer)", latency),
                  cdf_series("queue (arrival to batch start)", queue),
                  cdf_series("compute (batch start to end)", compute)};
    cdf.markers = percentile_markers(x.latency_ms, "");
    add(s, {"Latency distribution",
            cat(x.answered, " requests at ", fig(x.target_qps), " QPS offered (", fig(x.achieved_qps),
                " achieved); times from each request's scheduled arrival, as MLPerf LoadGen's server scenario. ",
                x.validity, ". Dashed lines: the latency's percentiles."),
            svg::render(cdf)});
  }
  if (r.search) {
    svg::LineChart load("serve-load", "p99 latency vs offered load", {"offered load (QPS)", true},
                        ms_axis("p99 latency (ms)"));
    std::vector<std::pair<double, double>> probes;
    for (const auto& p : r.search->probes) probes.emplace_back(p.target_qps, p.p99_ms);
    std::sort(probes.begin(), probes.end());
    load.series.push_back({"p99 of a run at that load", probes, svg::Style::dots});
    if (!probes.empty())
      load.series.push_back(
          {"the bound",
           {{probes.front().first, r.search->p99_bound_ms}, {probes.back().first, r.search->p99_bound_ms}},
           svg::Style::dashed});
    add(s, {"Serving latency vs offered load",
            cat("The maximum-QPS search: each point a run at one offered load; the highest load whose p99 stayed "
                "within ",
                fig(r.search->p99_bound_ms), " ms: ", fig(r.search->max_qps), " QPS."),
            svg::render(load)});
  }
  add(s, table_section("Latency statistics (ms)", detail::table_of(r), "latency"));
  return page("tvie serve: " + r.workload,
              cat(workload_summary(r.workload, r.facts), " p99 latency ", fig(x.latency_ms.p99), " ms at ",
                  fig(x.achieved_qps), " QPS.", peak_sentence(r.of_card, "Over the run, its model FLOP/s are")),
              s, r.context);
}

std::string to_html_string(const DecodeReport& r) {
  const auto& x = r.result;
  svg::BarChart times("decode-times", "Decoding: time to first token and per output token", ms_axis("time (ms)"));
  for (const auto& [name, sum] : {std::pair<std::string, Summary>{"time to first token", x.ttft_ms},
                                  std::pair<std::string, Summary>{"time per output token", x.tpot_ms}})
    for (const auto& [label, v] : {std::pair<const char*, double>{"p50", sum.p50}, {"p90", sum.p90}, {"p99", sum.p99}})
      times.bars.push_back({name + " " + label, {{name, v}}, ""});
  std::vector<Section> s;
  add(s, {"Latency", cat(x.timed_runs, " timed runs; timer: ", x.timer, "."), svg::render(times)});
  add(s, generation_memory_section(x));
  add(s, table_section("Latency statistics (ms)", detail::table_of(r), "latency"));
  return page("tvie decode: " + r.workload,
              cat(workload_summary(r.workload, r.facts), " ", fig(x.tokens_per_s), " tokens/s.",
                  r.decoding_of_card.bandwidth_fraction < 0
                      ? std::string()
                      : cat(" A decoding step reads ", console::percent(r.decoding_of_card.bandwidth_fraction),
                            " of the memory bandwidth of ", r.decoding_of_card.card_name, ".")),
              s, r.context);
}

std::string to_html_string(const AllreduceReport& r) {
  svg::LineChart chart("allreduce-busbw", "All-reduce bus bandwidth vs message size",
                       {"message size", true, svg::Format::bytes}, {"bus bandwidth (GB/s)"});
  svg::Series out{"out-of-place", {}, svg::Style::dots}, in{"in-place", {}, svg::Style::dots};
  for (const auto& row : r.result.rows) {
    out.points.emplace_back(static_cast<double>(row.bytes), row.out_of_place_busbw_gbs);
    in.points.emplace_back(static_cast<double>(row.bytes), row.in_place_busbw_gbs);
  }
  chart.series = {out, in};
  std::vector<Section> s;
  add(s, {"Bus bandwidth",
          cat(r.result.backend, " on ", r.result.device, ", ", r.result.world_size, " ranks, ", r.result.dtype,
              "; busbw = algbw x 2(n-1)/n as nccl-tests defines it; rank 0's times.",
              r.result.world_size == 1 ? " One rank: nothing crosses a link, so busbw is 0 by definition (an "
                                         "in-place all-reduce moves no data; out-of-place is a device copy): run "
                                         "it under tvie launch --nproc N for a bandwidth."
                                       : ""),
          svg::render(chart)});
  add(s, table_section("The sweep", detail::table_of(r), "allreduce"));
  return page("tvie allreduce", cat("Average bus bandwidth ", fig(r.result.average_busbw_gbs), " GB/s."), s, r.context);
}

std::string to_html_string(const MaxBatchReport& r) {
  std::vector<Section> s;
  for (const auto* result : {r.training ? &*r.training : nullptr, r.inference ? &*r.inference : nullptr,
                             r.generation ? &*r.generation : nullptr}) {
    if (!result) continue;
    const std::string mode = to_string(result->mode);
    svg::LineChart chart("max-batch-" + mode, "Largest batch that fits: " + mode, {"batch size", true},
                         bytes_axis("peak bytes (allocated)"));
    svg::Series fits{"probes that fit", {}, svg::Style::dots};
    for (const auto& p : result->probes) {
      if (p.fits)
        fits.points.emplace_back(static_cast<double>(p.batch), static_cast<double>(p.peak_bytes));
      else
        chart.crosses.push_back(
            {static_cast<double>(p.batch), static_cast<double>(result->limit_bytes), "does not fit"});
    }
    std::sort(fits.points.begin(), fits.points.end());
    chart.series.push_back(fits);
    if (!fits.points.empty() || !chart.crosses.empty()) {
      double lo = fits.points.empty() ? chart.crosses.front().x : fits.points.front().first, hi = lo;
      for (const auto& p : fits.points) lo = std::min(lo, p.first), hi = std::max(hi, p.first);
      for (const auto& c : chart.crosses) lo = std::min(lo, c.x), hi = std::max(hi, c.x);
      chart.series.push_back(
          {"limit",
           {{lo, static_cast<double>(result->limit_bytes)}, {hi, static_cast<double>(result->limit_bytes)}},
           svg::Style::dashed});
    }
    add(s, {mode == "training"    ? "Training"
            : mode == "inference" ? "Inference"
                                  : "Generation (KV cache)",
            cat("Largest fitting batch ", result->largest_fitting, "; limit ", detail::bytes_text(result->limit_bytes),
                " (", result->limit_source, "). Crosses: probes that ran out of memory."),
            svg::render(chart)});
  }
  add(s, table_section("The probes", detail::table_of(r), "probes"));
  return page("tvie compare --find-max-batch: " + r.workload, workload_summary(r.workload, r.facts), s, r.context);
}

// A mode's slices (TrainingSlices, InferenceSlices, GenerationSlices): each measured slice, the full model extrapolated
// and predicted.
template <typename Slices>
std::string slices_chart(const std::string& id, const std::string& mode, const Slices& x) {
  svg::BarChart chart(id, mode + " ledger: measured slices, the full model extrapolated and predicted",
                      bytes_axis("bytes (allocated)"));
  for (size_t k = 0; k < x.slices.size(); ++k)
    chart.bars.push_back(ledger_bar("measured: " + x.plan.label(k), x.slices[k].memory));
  chart.bars.push_back(ledger_bar("extrapolated: " + x.plan.full_label(), x.extrapolated));
  chart.bars.push_back(ledger_bar("predicted: " + x.plan.full_label(), x.predicted));
  return svg::render(chart);
}

std::string to_html_string(const SliceReport& r) {
  std::vector<Section> s;
  if (r.training)
    add(s, {"Training",
            "The full model was not run: its ledger is extrapolated linearly from the measured slices "
            "(per-block increment; embeddings, head and final norm once) and predicted analytically.",
            slices_chart("slices-training", "Training", *r.training)});
  if (r.inference)
    add(s, {"Inference", "The full model was not run (see above).",
            slices_chart("slices-inference", "Inference", *r.inference)});
  if (r.generation) {
    const auto& g = *r.generation;
    std::string what =
        cat("A KV-cached generation: batch ", g.settings.batch_size, ", prompts of ", g.settings.prompt_tokens,
            " tokens, ", g.settings.new_tokens, " new, ", to_string(g.settings.dtype),
            ". The full model was not run: its ledger (the KV cache grows by "
            "one block's keys and values per block) and its times are extrapolated from the slices.");
    if (g.extrapolated_ttft_ms > 0)
      what += cat(
          " Extrapolated time to first token ", svg::format_value(g.extrapolated_ttft_ms, svg::Format::milliseconds),
          g.settings.new_tokens > 1 && g.extrapolated_tpot_ms > 0
              ? cat(", time per output token ", svg::format_value(g.extrapolated_tpot_ms, svg::Format::milliseconds))
              : std::string(),
          ".");
    add(s, {"Generation", what, slices_chart("slices-generation", "Generation", g)});
  }
  return page("tvie slices: " + r.workload, workload_summary(r.workload, r.facts) + " Emulated by slices.", s,
              r.context);
}

std::string to_html_string(const ZooReport& r) {
  std::vector<Section> s;
  add(s, {"The zoo's presets",
          "Analytic figures; nothing is built. Forward FLOPs: 2 per multiply-add of the matmuls and convolutions, "
          "per sample. The same figures as --csv writes them.",
          html_table(detail::table_of(r), "zoo")});
  return page("tvie list", cat(r.presets.size(), " presets of the zoo's models."), s, r.context);
}

std::string to_html_string(const CardsReport& r) {
  svg::BarChart bandwidth("cards-bandwidth", "Memory bandwidth per card (datasheet)", {"GB/s"});
  svg::BarChart bf16("cards-bf16", "Dense bf16 matrix peak per card (datasheet, no sparsity)", {"TFLOPS"});
  for (const auto& c : r.cards) {
    bandwidth.bars.push_back({c.id, {{"memory bandwidth", c.memory_bandwidth_gbs}}, ""});
    bf16.bars.push_back({c.id, {{"bf16", std::max(0.0, c.bf16_tflops)}}, c.bf16_tflops < 0 ? "no bf16 peak" : ""});
  }
  std::vector<Section> s;
  add(s, {"Matrix peak", r.efficiency_description, svg::render(bf16)});
  add(s, {"Memory bandwidth", "", svg::render(bandwidth)});
  add(s, table_section("The catalog", detail::table_of(r), "cards"));
  return page("tvie cards", r.catalog_description, s, r.context);
}

std::string to_html_string(const PlanReport& r) {
  const std::string projected = "projected (roofline bound .. estimate), not measured";
  svg::IntervalChart step("plan-training-step", "Training step per card, " + projected, {"seconds per step", true},
                          "step time");
  const bool continuous = continuous_batching(r.settings);
  svg::IntervalChart qps("plan-inference-qps",
                         std::string("Requests per second per card") +
                             (continuous ? " (continuous batching)" : " (batches of requests)") + ", " + projected,
                         {"requests/s per card", true}, "requests/s");
  svg::IntervalChart latency("plan-inference-latency", "Latency at batch 1 per card, " + projected, {"seconds", true},
                             "latency");
  // Generation (--new-tokens): the decoding step of a request alone, and the new tokens a card makes per second.
  svg::IntervalChart tpot("plan-generation-tpot", "Time per output token at batch 1 per card, " + projected,
                          {"seconds per token", true}, "per output token");
  svg::IntervalChart tokens("plan-generation-tokens", "New tokens per second per card at its best batch, " + projected,
                            {"tokens/s per card", true}, "tokens/s");
  for (const auto& c : r.cards) {
    const auto& g = c.inference.generation;
    if (g.new_tokens == 0) continue;
    const bool ok = c.inference.supported && g.new_tokens > 1;
    const std::string why = !c.inference.supported ? c.inference.unsupported : ok ? "" : "one token: no decoding step";
    tpot.rows.push_back(
        {c.card.id, ok ? g.time_per_output_token_s.bound : 0, ok ? g.time_per_output_token_s.estimate : 0, why});
    const bool fits = c.inference.supported && c.inference.best_batch > 0;
    tokens.rows.push_back({c.card.id, fits ? g.tokens_per_s.estimate : 0, fits ? g.tokens_per_s.bound : 0,
                           fits ? "" : (c.inference.supported ? "does not fit" : c.inference.unsupported)});
  }
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    if (t.supported && t.step.supported)
      step.rows.push_back({c.card.id, t.step.bound_s, t.step.estimate_s, ""});
    else
      step.rows.push_back({c.card.id, 0, 0, t.unsupported.empty() ? t.step.unsupported : t.unsupported});
    const auto& i = c.inference;
    if (i.supported && i.latency.supported && i.qps_per_card.estimate > 0) {
      // The estimate is the lower rate (the bound assumes datasheet peaks).
      qps.rows.push_back({c.card.id, i.qps_per_card.estimate, i.qps_per_card.bound, ""});
      latency.rows.push_back({c.card.id, i.latency.bound_s, i.latency.estimate_s, ""});
    } else {
      const std::string why = !i.unsupported.empty()          ? i.unsupported
                              : i.latency.unsupported.empty() ? "none sustained"
                                                              : i.latency.unsupported;
      qps.rows.push_back({c.card.id, 0, 0, why});
      latency.rows.push_back({c.card.id, 0, 0, why});
    }
  }
  std::vector<Section> s;
  const std::string how =
      "Each bar runs from the roofline bound (datasheet peaks and bandwidth) to the estimate (the "
      "card's efficiencies and launch overhead, calibrated where a measured report was given). "
      "Nothing here ran on these cards.";
  add(s, {"Training", how, svg::render(step)});
  add(s, {"Inference: latency", how, svg::render(latency)});
  add(s, {"Inference: requests per card", how, svg::render(qps)});
  if (!tpot.rows.empty()) {
    add(s, {"Generation: time per output token", how, svg::render(tpot)});
    add(s, {"Generation: new tokens per second", how, svg::render(tokens)});
  }
  if (const auto& c = r.settings.calibration) add(s, calibration_section(*c));
  add(s, table_section("The plan (projected)", detail::table_of(r), "plan"));
  return page("tvie plan: " + r.workload,
              workload_summary(r.workload, r.facts) + " Every figure on this page is projected, not measured.", s,
              r.context);
}

std::string ledger_svg(const TrainingResult* training, const InferenceResult* inference) {
  if (!training && !inference) throw InvalidArgument("ledger_svg", "nothing", "a training or an inference result");
  return svg::render(ledger_chart(training, inference));
}

std::string memory_timeline_svg(const TrainingResult* training, const InferenceResult* inference) {
  const auto chart = timeline_chart(training, inference);
  if (chart.series.empty())
    throw InvalidArgument("memory_timeline_svg", "no timeline", "a result with a recorded memory timeline");
  return svg::render(chart);
}

}  // namespace tvie
