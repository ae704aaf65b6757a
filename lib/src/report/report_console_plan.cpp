// The console tables of the projection's reports: the zoo, the catalog of cards and the plan. Every figure says
// what it is; a projected one says so.
#include <tvie/report.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/text.hpp"
#include "report/console_text.hpp"
#include <tvie/log.hpp>

namespace tvie {
using namespace console;
using detail::with_commas;

void ConsoleReporter::report(const ZooReport& r) {
  auto& out = out_;
  std::set<std::string> models;
  for (const auto& p : r.presets) models.insert(p.model);
  out << "tvie list: " << r.presets.size() << " presets of " << models.size()
      << " models (random weights, synthetic data; tvie " << r.context.tvie_version << ")\n"
      << "Analytic figures, nothing built: parameters (trainable), their bytes in fp32, forward FLOPs per sample\n"
      << "(2 per multiply-add of the matmuls and convolutions), tokens per sample (--seq changes it), and the\n"
      << "transformer blocks that --checkpoint blocks checkpoints and --slice-layers slices (ResNet's slices take\n"
      << "each stage's blocks). Use: --model MODEL --preset PRESET.\n\n";
  const std::vector<size_t> w = {8, 16, 16, 13, 16, 8, 8, 0};  // a width per cell: the source is last, unpadded
  row(out, {"model", "preset", "parameters", "fp32 weights", "forward/sample", "tokens", "blocks", "source"}, w);
  for (const auto& p : r.presets)
    row(out,
        {p.model, p.preset, with_commas(p.facts.parameter_count), format_bytes(p.facts.parameter_count * 4),
         flops(p.facts.forward_flops_per_sample),
         p.facts.tokens_per_sample > 0 ? std::to_string(p.facts.tokens_per_sample) : "-",
         p.blocks > 0 ? std::to_string(p.blocks) : "-", p.source},
        w);
}

void ConsoleReporter::report(const CardsReport& r) {
  auto& out = out_;
  out << "tvie cards: " << r.cards.size() << " accelerators from the catalog (lib/data/accelerators.json, schema "
      << r.catalog_schema_version << "; tvie " << r.context.tvie_version << ")\n"
      << "Dense peaks (no structured sparsity) in TFLOPS, int8 in TOPS; '-': not published or no such unit;\n"
      << "memory in GB (10^9 B), bandwidth and link in GB/s; TDP in W; price in USD for one device (* an "
         "estimate);\ncloud $/h: the cheapest..dearest listed on-demand price per device-hour (dated, per vendor: "
         "--json).\n";
  config_line(out, r.context);
  out << '\n';
  const auto figure = [](double x) {
    if (x < 0) return std::string("-");
    return x == std::floor(x) ? fmt("%.0f", x) : fmt(x >= 10 ? "%.1f" : "%.3g", x);
  };
  const std::vector<size_t> w = {22, 13, 7, 6, 6, 7, 8, 8, 7, 7, 6, 6, 9, 12};
  row(out,
      {"card", "memory", "GB/s", "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "TDP", "link", "price",
       "cloud $/h"},
      w);
  for (const auto& a : r.cards) {
    bool price_estimated = false;
    for (const auto& e : a.estimates) price_estimated = price_estimated || e.rfind("price", 0) == 0;
    row(out,
        {a.id, cat(figure(a.memory_gb), " ", a.memory_type), figure(a.memory_bandwidth_gbs), figure(a.fp64_tflops),
         figure(a.fp32_tflops), figure(a.tf32_tflops), figure(a.fp16_tflops), figure(a.bf16_tflops),
         figure(a.fp8_tflops), figure(a.int8_tops), figure(a.tdp_w), figure(a.interconnect_gbs),
         a.price ? cat(figure(a.price->usd), price_estimated ? "*" : "") : "-", cloud_span(cloud_cost(a, 1), "%.2f")},
        w);
  }
  bool any = false;
  for (const auto& a : r.cards) {
    for (const auto& e : a.estimates) {
      if (!any) out << "\nEstimates (figures that are not the vendor's own):\n";
      any = true;
      out << "  " << a.id << ": " << e << '\n';
    }
  }
  out << "\nEfficiencies (the fractions of the peaks `tvie plan` projects with; estimates unless a card's own):\n";
  const auto fractions = [&](const Efficiency& e) {
    return cat("matmul ", e.matmul, ", convolution ", e.convolution, ", attention ", e.attention, ", memory ", e.memory,
               ", interconnect ", e.interconnect, ", ", e.kernel_overhead_us, " us per kernel");
  };
  if (!r.cpu_classes.empty()) out << "  host CPU classes: " << fractions(r.cpu_classes.front().efficiency) << '\n';
  std::map<std::string, std::vector<std::string>> by_fractions;
  for (const auto& a : r.cards) by_fractions[fractions(a.efficiency)].push_back(a.id);
  for (const auto& [text, ids] : by_fractions) out << "  " << detail::join(ids) << ": " << text << '\n';
  out << "\nHost CPU classes (a machine's peak = cores x GHz x the figure per core and cycle):\n";
  for (const auto& c : r.cpu_classes)
    out << "  " << pad(c.id, 12) << pad(c.isa, 24) << "fp32 " << pad(figure(c.fp32_flop_per_cycle_per_core), 6)
        << "bf16 " << pad(figure(c.bf16_flop_per_cycle_per_core), 6) << "int8 " << figure(c.int8_op_per_cycle_per_core)
        << (c.id == r.host_class ? "   <- this machine" : "") << '\n';
  const auto& h = r.context.host;
  out << "this machine: " << (h.cpu_model.empty() ? "unknown CPU" : h.cpu_model) << " (" << cpu_features_text(h)
      << "), class " << (r.host_class.empty() ? "none of the above" : r.host_class) << ".\n"
      << "Sources, notes and every figure's origin: tvie cards --json PATH, or the catalog file itself.\n";
}

namespace {

// "1.23 .. 4.56" with a unit: a projected interval, bound first.
std::string span(double a, double b, const char* unit) {
  const auto one = [](double x) {
    if (x <= 0) return std::string("0");
    if (x >= 100) return fmt("%.0f", x);
    if (x >= 1) return fmt("%.3g", x);
    return fmt("%.2g", x);
  };
  return cat(one(a), "..", one(b), unit);
}

std::string gb(int64_t bytes) {
  return bytes < 0 ? std::string("-") : fmt("%.3g GB", static_cast<double>(bytes) / 1e9);
}

// The card's inference figures scaled by a measured factor (a forward's, or a generation's phases').
bool inference_calibrated(const CardPlan& c) {
  return c.inference_calibration.factor > 0 || c.prefill_calibration.factor > 0 || c.decoding_calibration.factor > 0;
}

}  // namespace

void ConsoleReporter::report(const PlanReport& r) {
  auto& out = out_;
  const auto& s = r.settings;
  std::string ran = r.training_work.profiled ? "nothing ran on them (a workload without a trace: its work was counted "
                                               "and its memory measured on this CPU at batches 2 and 3)"
                                             : "nothing ran on them";
  if (s.measure.enabled) ran += "; the workload ran here first, to calibrate (--measure)";
  out << "tvie plan: " << r.workload << " on " << r.cards.size() << " cards, PROJECTED: " << ran << " (tvie "
      << r.context.tvie_version << ")\n";
  config_line(out, r.context);
  out << "The predicted ledger against each card's memory; the traced work on its datasheet peaks and bandwidth\n"
      << "(tvie cards). Times are bound..estimate: the roofline bound (every peak reached) .. the estimate (the\n"
      << "catalog's efficiency per operator class and card, plus kernel launches).\n";
  out << "model: " << with_commas(r.facts.parameter_count) << " parameters, " << flops(r.facts.forward_flops_per_sample)
      << " forward per sample\n";
  out << "training: batch " << s.train.batch_size << " per card, " << to_string(s.train.optimizer)
      << (s.train.fused_optimizer ? " (fused)" : "") << ", " << to_string(s.train.precision)
      << (s.train.tf32 ? " (TF32 matmuls)" : "") << (s.train.fused_loss ? ", fused loss" : "") << ", checkpoint "
      << checkpoint_to_string(s.train.checkpoint_every) << "; predicted peak on one card ";
  if (r.training_predicted.peak >= 0)
    out << gb(r.training_predicted.peak) << " (CUDA's rules";
  else if (!r.cards.empty() && r.cards.front().training.peak_bytes >= 0)
    out << gb(r.cards.front().training.peak_bytes) << " (" << r.cards.front().training.peak_note;
  else
    out << "not predicted (a workload without a trace";
  out << "; usable memory = " << fmt("%.0f", s.usable_memory_fraction * 100) << "% of the card's)\n";
  out << "inference: " << to_string(s.infer.dtype) << "; predicted peak at batch 1 ";
  if (r.inference_predicted.peak < 0 && !r.cards.empty() && !r.cards.front().inference.peak_note.empty())
    out << gb(r.cards.front().inference.peak_bytes) << " (" << r.cards.front().inference.peak_note << ")\n";
  else
    out << gb(r.inference_predicted.peak) << "\n";
  const auto work_line = [&](const char* what, const StepWork& w) {
    const OpWork f = w.forward.total(), b = w.backward.total();
    out << "work of " << what << ": " << flops(f.flops + b.flops + w.optimizer.flops) << ", "
        << gb(static_cast<int64_t>(f.bytes + b.bytes + w.optimizer.bytes +
                                   (f.weight_elements + b.weight_elements) * w.weight_element_bytes))
        << " moved, " << fmt("%.0f", f.kernels + b.kernels + w.optimizer.kernels) << " kernels ("
        << (w.profiled ? "counted by LibTorch's profiler at batch 1 and 2 on the CPU, extrapolated"
                       : "traced, CUDA's kernels")
        << ", per class in --json)\n";
  };
  work_line("one training step", r.training_work);
  work_line("one inference batch of 1", r.inference_work);
  if (const auto& c = s.calibration) {
    out << "calibrated (*) from " << c->source << ": " << c->workload << " measured on " << c->device << " (catalog "
        << c->card_id << "), applied to the estimates of the "
        << (c->architecture == "host" ? "host card" : c->architecture + " cards") << " (never below the bound):\n";
    const auto factor = [&](const char* what, const CalibrationFactor& f) {
      if (f.factor <= 0) {
        if (f.measured_s > 0)
          out << "  " << pad(what, 16) << fmt("%.3f", f.measured_s * 1e3) << " ms measured, not projected there ("
              << f.unsupported << "): no correction\n";
        return;
      }
      out << "  " << pad(what, 16) << fmt("%.3f", f.measured_s * 1e3) << " ms measured / "
          << fmt("%.3f", f.projected_s * 1e3) << " ms projected ("
          << fmt("%.0f", f.projected_s > 0 ? 100 * f.launch_s / f.projected_s : 0) << "% kernel launches) = x"
          << fmt("%.3g", f.factor) << ": " << describe_correction(f) << "\n";
      if (f.below_bound)
        out << "  " << pad("", 16) << "measured below its roofline bound of " << fmt("%.3f", f.bound_s * 1e3)
            << " ms: faster than the catalog's bandwidth and peaks for this card allow"
            << (c->architecture == "host" ? " (its DRAM bandwidth per core; a working set held in the CPU's cache "
                                            "beats it)"
                                          : "")
            << "; the estimates stop at the bound, this one too\n";
    };
    // A phase's (or the batch's) factors by operator class, under it.
    const auto classes = [&](const std::string& heading, const ClassCalibration& k) {
      if (!k.any()) return;
      out << "  " << pad("", 16) << heading << "; these calibrate it, a class not listed takes its phase's):\n";
      for (int i = 0; i < kOpClassCount; ++i)
        factor(cat("  ", to_string(static_cast<OpClass>(i))).c_str(), k.by_class[static_cast<size_t>(i)]);
    };
    factor("training step", c->training);
    if (c->training_phases.complete()) {
      out << "  " << pad("", 16)
          << "by phase (the step's mean split as its phases' medians; these calibrate training):\n";
      factor("  forward", c->training_phases.forward);
      factor("  backward", c->training_phases.backward);
      factor("  optimizer", c->training_phases.optimizer);
      classes("the forward by operator class (its time split as a profiled step's", c->training_phases.forward_classes);
      classes("the backward by operator class (its time split as a profiled step's",
              c->training_phases.backward_classes);
    }
    factor("inference batch", c->inference);
    classes("by operator class (its time split as a profiled batch's", c->inference_classes);
    factor("prefill", c->prefill);
    classes("by operator class (its time split as a profiled generation's", c->prefill_classes);
    factor("decoding step", c->decoding);
    classes("by operator class (its time split as a profiled generation's", c->decoding_classes);
    if (s.new_tokens > 0 && c->inference.factor > 0 && (c->prefill.factor == 0 || c->decoding.factor == 0))
      out << "  the generation's phases without a measurement of their own take the inference batch's correction\n";
  }
  if (s.train_tokens > 0 || s.train_samples > 0)
    out << "training budget: "
        << (s.train_tokens > 0 ? cat(s.train_tokens, " tokens") : cat(s.train_samples, " samples")) << "\n";
  out << "\nTraining (projected), per card:\n";
  const std::vector<size_t> wt = {22, 9, 6, 7, 19, 20, 6, 14, 16, 12, 16};
  row(out,
      {"card", "memory", "fits", "max b", "step ms", "samples/s", "MFU", "cards z0/1/2/3", "budget hours", "budget kWh",
       "budget cloud $"},
      wt);
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    const std::string need =
        cat(t.cards_needed[0], "/", t.cards_needed[1], "/", t.cards_needed[2], "/", t.cards_needed[3]);
    if (!t.supported) {
      row(out,
          {c.card.id, gb(static_cast<int64_t>(c.card.memory_gb * 1e9)), t.fits ? "yes" : "no", cat(t.largest_batch),
           "n/a: " + t.unsupported},
          {22, 9, 6, 7, 0});
      continue;
    }
    row(out,
        {c.card.id + (c.training_calibration.factor > 0 ? "*" : ""), gb(static_cast<int64_t>(c.card.memory_gb * 1e9)),
         t.peak_bytes < 0 ? "?"
         : t.fits         ? "yes"
                          : "no",
         t.peak_bytes < 0 ? "?" : cat(t.largest_batch), span(t.step.bound_s * 1e3, t.step.estimate_s * 1e3, ""),
         span(t.samples_per_s.estimate, t.samples_per_s.bound, ""), fmt("%.0f%%", t.mfu_estimate * 100), need,
         t.budget_steps > 0 ? span(t.budget_hours.bound, t.budget_hours.estimate, "") : "-",
         t.budget_energy_kwh.bound > 0 ? span(t.budget_energy_kwh.bound, t.budget_energy_kwh.estimate, "") : "-",
         t.budget_steps > 0 ? cloud_span(t.budget_usd, "%.0f") : "-"},
        wt);
  }
  out << "  step: on one of the cards the budget uses (its share of the optimizer). MFU: model FLOPs / (estimated "
         "step\n"
         "  x the matmul peak), what the estimate assumes.\n";
  out << "  max b: the largest batch per card whose predicted peak fits (nothing sharded). cards z0/1/2/3: the fewest\n"
         "  cards with nothing, the optimizer state, + gradients, + parameters sharded (ZeRO 1-3 as accounting; 0:\n"
         "  none enough). The budget runs on 1 card when it fits, else on the fewest sharded, with a ring all-reduce\n"
         "  of the gradients over the card's link per step; kWh = TDP x cards x hours (an upper bound); cloud $ =\n"
         "  cards x estimated hours x the cheapest..dearest listed on-demand price (tvie cards --json: vendors, "
         "dates).\n";
  out << "\nTraining memory per card at those cards (predicted; the phase of the step where each peak falls):\n";
  const std::vector<size_t> wz = {22, 28, 28, 28, 28};
  row(out, {"card", "z0 (replicated)", "z1 (+ optimizer state)", "z2 (+ gradients)", "z3 (+ parameters)"}, wz);
  for (const auto& c : r.cards) {
    const auto& t = c.training;
    if (t.peak_bytes < 0) continue;
    std::vector<std::string> cells = {c.card.id};
    for (size_t stage = 0; stage < 4; ++stage)
      cells.push_back(t.cards_needed[stage] == 0 ? "none enough"
                                                 : cat(gb(t.per_card[stage].total), " x", t.cards_needed[stage], " (",
                                                       t.per_card[stage].peak_phase, ")"));
    row(out, cells, wz);
  }
  out << "  Sharded within each phase: parameters and optimizer state all through the step, the gradients and amp\n"
         "  copies of the phase at the peak (the backward's: an upper bound, its gradients grow as its activations "
         "go).\n";
  if (!r.cards.empty() && r.cards.front().training.per_card[1].layout == ShardingLayout::deepspeed_mixed_precision)
    out << "  z1-z3 under amp in DeepSpeed's mixed-precision layout: 16-bit weights and gradients beside fp32 master\n"
           "  weights, gradients and the optimizer's state (with Adam, ZeRO-2 2P + 18P/N, ZeRO-3 4L + 18P/N, as\n"
           "  DeepSpeed's estimators), one 16-bit reduce bucket and the phase's activations (--json: per_card).\n";
  out << "\nInference (projected, " << to_string(s.infer.dtype)
      << (s.stack == ServingStack::tuned ? ", tuned stack" : ", tvie's kernels") << "), per card:\n";
  const std::vector<size_t> wi = {22, 6, 7, 18, 7, 19, 20, 7, 9, 12, 14};
  row(out,
      {"card", "fits", "max b", "latency b1 ms", "best b",
       s.new_tokens > 0 ? "requests/s at best" : "samples/s at best",
       s.p99_ms > 0 ? cat("QPS/card p99<=", s.p99_ms, "ms") : std::string("QPS/card (no bound)"), "cards", "kW (TDP)",
       "hardware $", "cloud $/1M req"},
      wi);
  for (const auto& c : r.cards) {
    const auto& i = c.inference;
    if (!i.supported) {
      const bool untuned = s.stack == ServingStack::tuned && !i.tuned.supported;
      row(out,
          {c.card.id,
           untuned  ? "-"
           : i.fits ? "yes"
                    : "no",
           untuned ? "-" : cat(i.largest_batch), "n/a: " + i.unsupported},
          {22, 6, 7, 0});
      continue;
    }
    const bool rate = s.serve_qps > 0 && i.cards_for_qps > 0;
    row(out,
        {c.card.id + (inference_calibrated(c) ? "*" : ""), i.fits ? "yes" : "no", cat(i.largest_batch),
         span(i.latency.bound_s * 1e3, i.latency.estimate_s * 1e3, ""), cat(i.best_batch),
         span(i.samples_per_s.estimate, i.samples_per_s.bound, ""),
         i.qps_per_card.estimate > 0
             ? span(i.qps_per_card.estimate, i.qps_per_card.bound, cat(" @b", i.serving_batch).c_str())
             : "0",
         rate ? cat(i.cards_for_qps) : "-", rate && i.power_kw >= 0 ? fmt("%.3g", i.power_kw) : "-",
         rate && i.hardware_usd >= 0 ? fmt("%.0f", i.hardware_usd) : "-",
         rate ? cloud_span(i.usd_per_million, "%.3g") : "-"},
        wi);
  }
  if (s.stack == ServingStack::tuned) {
    out << "  tuned stack: every product in " << to_string(s.infer.dtype)
        << " on the matrix units, normalisation and elementwise fused into them; each card's\n  fraction of its "
           "peak from its MLPerf Inference ResNet-50 Offline result (int8, TensorRT):\n";
    for (const auto& c : r.cards) {
      const TunedCalibration& t = c.inference.tuned;
      if (t.supported)
        out << "    " << c.card.id << ": " << fmt("%.3g", t.compute_efficiency * 100) << "% of the int8 peak ("
            << fmt("%.0f", t.anchor_samples_per_s) << " samples/s published, " << fmt("%.0f", t.projected_samples_per_s)
            << " projected back)\n";
    }
    out << "  Memory: tvie's prediction of its own inference copy, a generation's KV cache in the activations' dtype "
           "(int8, fp8:\n  one byte). Not modelled: sparsity, variable-length batches that skip padding, the host's "
           "pre-processing\n  (docs/plan.md, \"The tuned stack\").\n";
  }
  if (s.new_tokens > 0) {
    const GenerationPlan* any = nullptr;
    for (const auto& c : r.cards) any = &c.inference.generation;
    out << "  latency b1: one request alone: its prompt's forward (prefill) and " << s.new_tokens - 1
        << " decoding steps (a request: "
        << (any ? cat(any->prompt_tokens, " prompt tokens, ", any->new_tokens, " new") : std::string("")) << ").\n";
  } else {
    out << "  latency b1: one forward of one sample (a token model's whole sequence: a prefill, not decoding).\n";
  }
  const bool continuous = continuous_batching(s);
  out << "  QPS/card: requests/s one card sustains";
  if (continuous)
    out << (s.p99_ms > 0 ? " with p99 within the bound, continuous batching (" : " with continuous batching (")
        << "--batching " << to_string(s.batching)
        << "): at most @b requests\n  decoding at once, each joining between decoding steps after its prefill, "
           "leaving with its last token\n  (iteration-level scheduling as serving engines do; simulated on the "
           "projected times, Poisson arrivals)"
        << (s.p99_ms > 0 ? "" : "; no latency bound given: every slot busy");
  else
    out << (s.p99_ms > 0 ? " with p99 within the bound: batches of @b requests (a batch waits for its last), an "
                           "M/D/1 queue\n  of batches at the projected service time"
                         : " (the throughput at the best batch; no latency bound given)");
  out << ".\n  cards, kW, hardware $: for " << (s.serve_qps > 0 ? cat(s.serve_qps, " requests/s") : "no rate asked")
      << " at the estimate; hardware $ from the catalog's purchase prices where it\n  has one; cloud $/1M req: "
         "those cards rented for the hours a million requests take, at the cheapest..dearest\n  listed on-demand "
         "price. Rates are estimate..bound.\n";
  if (s.new_tokens > 0) {
    out << "\nGeneration (projected), per card:\n";
    const std::vector<size_t> wg = {22, 24, 24, 28, 14};
    row(out, {"card", "first token ms (b1)", "per output token ms (b1)", "tokens/s at best b", "KV cache/req"}, wg);
    for (const auto& c : r.cards) {
      const auto& i = c.inference;
      if (!i.supported) continue;
      const GenerationPlan& g = i.generation;
      row(out,
          {c.card.id + (inference_calibrated(c) ? "*" : ""),
           span(g.prefill.bound_s * 1e3, g.prefill.estimate_s * 1e3, ""),
           g.new_tokens > 1 ? span(g.time_per_output_token_s.bound * 1e3, g.time_per_output_token_s.estimate * 1e3, "")
                            : "-",
           i.best_batch > 0 ? span(g.tokens_per_s.estimate, g.tokens_per_s.bound, cat(" @b", i.best_batch).c_str())
                            : "0",
           gb(g.kv_cache_bytes)},
          wg);
    }
    out << "  per output token: the mean decoding step of a request alone (each reads every weight and the KV "
           "cache so far).\n"
           "  tokens/s: new tokens per second per card with batches of @b requests decoded together (a static "
           "batch's\n  throughput). Times are bound..estimate, rates estimate..bound; the peaks above hold each "
           "request's whole KV\n  cache (no paged cache).\n";
  }
  out << "Efficiencies and their basis per card: --json PATH (cards[].efficiency); the catalog: "
         "lib/data/accelerators.json.\n";
}

}  // namespace tvie
