// The console tables. Every figure says what it is: which counter, which steps.
#include <tvie/report.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "core/text.hpp"
#include "report/console_text.hpp"
#include "report/ledger_rows.hpp"
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>

namespace tvie {
using namespace console;
namespace {

// The dtype a generation's KV cache is held in on the report's device: the inference copy's floating dtype (int8
// keeps fp32 around its int8 Linear layers on the CPU, bf16 on CUDA; fp8 and int8-weight-only keep bf16).
std::string kv_cache_dtype(InferenceDtype dtype, c10::DeviceType device) {
  const auto t = nn::inference_floating_dtype(dtype, device == c10::DeviceType::CUDA ? c10::kCUDA : c10::kCPU);
  return t == torch::kBFloat16 ? "bf16" : t == torch::kFloat16 ? "fp16" : "fp32";
}

using detail::with_commas;

// CPU int8 where glibc's heap statistics cannot be read (tvie::heap_statistics_available()).
const std::string kPacksNotMeasured =
    "  int8 weights packed by fbgemm outside torch's allocator: not measured here (glibc's heap statistics\n"
    "  cannot be read: glibc before 2.33, or an AddressSanitizer build); weights and peak lack them\n";

std::string ratio(double a, double b) { return (b != 0 && a != 0) ? fmt("%.2fx", a / b) : "-"; }

std::string ms(double v) { return fmt("%.3f ms", v); }

// The card the fractions are of, in one line under the figures.
std::string card_line(const CardFraction& f) {
  if (f.card.empty()) return cat("  of the card: none (", f.why_none, ")\n");
  return cat("  of the card: ", f.card_name,
             "\n  (the catalog's dense peaks and bandwidth: tvie cards; docs/metrics.md, \"Fractions of the card\")\n");
}
// A generation's prefill and decoding step against the card, in two lines.
std::string generation_fractions(const CardFraction& prefill, const CardFraction& step) {
  if (step.card.empty()) return card_line(step);
  const auto peak = [](const CardFraction& f) { return of_peak(f) + (f.peak_tflops < 0 ? "" : " peak"); };
  return cat("  of the card: prefill ", peak(prefill), "; decoding step ", peak(step), ", ",
             percent(step.bandwidth_fraction), " of bandwidth\n  (", step.bytes_counted, ", over the mean time)\n");
}

std::string precision_text(TrainPrecision p) {
  switch (p) {
    case TrainPrecision::amp_bf16:
      return "amp-bf16 (fp32 weights; autocast bf16 around forward and loss)";
    case TrainPrecision::amp_fp16:
      return "amp-fp16 (fp32 weights; autocast fp16 around forward and loss; dynamic loss scaling)";
    case TrainPrecision::bf16:
      return "bf16 (weights, gradients and optimizer state in bf16; no fp32 copy)";
    case TrainPrecision::fp32:
      break;
  }
  return "fp32";
}

// "machine: <CPU>, N threads, bf16 units: ...; GPU ..., driver ..., CUDA ..., cuDNN ..., NCCL ..."; then the
// options a --config file set.
void machine_line(std::ostream& out, const RunContext& c) {
  out << "machine: " << (c.host.cpu_model.empty() ? "CPU model unknown" : c.host.cpu_model) << " ("
      << cpu_features_text(c.host) << "), " << c.host.intra_op_threads << " intra-op threads";
  if (c.gpu) {
    const auto& g = *c.gpu;
    out << "; " << g.name << " (compute capability " << g.compute_capability << ", " << format_bytes(g.memory_bytes)
        << "), driver " << (g.driver.empty() ? "unknown" : g.driver) << ", CUDA runtime " << g.cuda_runtime
        << ", cuDNN " << (g.cudnn.empty() ? "none" : g.cudnn) << ", NCCL " << (g.nccl.empty() ? "none" : g.nccl);
  }
  out << '\n';
  config_line(out, c);
}

void header(std::ostream& out, const std::string& command, const std::string& workload, const RunContext& c,
            const ModelFacts& f) {
  out << "tvie " << command << ": " << workload << " on " << c.device << "  (tvie " << c.tvie_version << ", LibTorch "
      << c.torch_version << ")\n";
  machine_line(out, c);
  out << "model: " << with_commas(f.parameter_count) << " parameters (" << format_bytes(f.parameter_count * 4)
      << " in fp32), " << flops(f.forward_flops_per_sample) << " forward per sample (" << f.flops_source << ")";
  if (f.tokens_per_sample > 0) out << ", " << f.tokens_per_sample << " tokens per sample";
  out << '\n';
}

void training_line(std::ostream& out, const TrainSettings& ts, const TrainingResult& t) {
  out << "training: batch " << ts.batch_size << " (" << ts.accumulate << " micro-batch"
      << (ts.accumulate > 1 ? "es" : "") << " of " << ts.batch_size / ts.accumulate << "), " << to_string(ts.optimizer)
      << (ts.fused_optimizer ? " (fused)" : "") << ", " << precision_text(t.precision)
      << (ts.tf32 ? " (TF32 matmuls)" : "") << (ts.fused_loss ? ", fused loss" : "") << "\n          checkpoint "
      << checkpoint_to_string(t.checkpoint_every);
  if (t.checkpointed_blocks > 0) out << " (" << t.checkpointed_blocks << " blocks recomputed in backward)";
  out << ", clip " << (ts.clip_grad_norm > 0 ? fmt("%g", ts.clip_grad_norm) : "off");
  if (t.cuda_graph) out << ", CUDA graph (" << t.cuda_graph_scope << ")";
  out << "\n          lr " << fmt("%g", ts.learning_rate);
  if (ts.lr_schedule == LrSchedule::warmup_cosine)
    out << ": linear warm-up over " << lr_warmup_steps(ts) << " step" << (lr_warmup_steps(ts) > 1 ? "s" : "")
        << ", cosine to " << fmt("%g", ts.learning_rate / 10) << " at step " << run_optimizer_steps(ts);
  else
    out << " constant";
  out << '\n';
}

std::string predicted_cell(int64_t predicted) { return predicted < 0 ? "-" : format_bytes(predicted); }

// Measured minus predicted, and that as a share of the measured figure.
std::string remainder_cell(int64_t measured, int64_t predicted) {
  if (predicted < 0) return "-";
  const int64_t d = measured - predicted;
  if (d == 0) return "0";
  if (measured == 0) return format_bytes(d);
  return cat(format_bytes(d), fmt(" (%+.1f%%)", 100.0 * static_cast<double>(d) / static_cast<double>(measured)));
}

void ledger_notes(std::ostream& out, const TrainingResult& t, bool with_inference, bool cuda) {
  out << "  counter: " << t.memory_counter << ".\n"
      << "  Bytes above the baseline taken before each mode built its model. Training activations: tensors saved\n"
      << "  for backward (forward with grad minus without)";
  if (with_inference) out << "; inference activations: working set of one forward\n  (output included)";
  out << "; other: peak minus the categories above (transients, logits";
  if (cuda) out << ", the step's batch of " << format_bytes(t.memory.batch) << " copied to the device";
  out << ").\n";
  if (!cuda)
    out << "  The step's batch of " << format_bytes(t.memory.batch)
        << " is a view of the data pool, made before the baseline (pure bf16 converts a floating input in the step).\n";
  out << "  predicted: before the run, from the parameter count and the model's traced forward (docs/metrics.md,\n"
      << "  \"Predicted memory\"); - where the workload has no trace.\n";
  if (!cuda && !t.predicted.kernel_scratch_source.empty())
    out << "  The CPU kernels' scratch within an op, predicted from " << t.predicted.kernel_scratch_source << ".\n";
  if (is_amp(t.precision))
    out << "  weight_copies: low-precision copies of the weights in autocast's cast cache; parameters stay fp32.\n";
  if (t.checkpointed_blocks > 0)
    out << "  Activations with checkpointing: only each checkpointed block's input is kept; the block runs again in\n"
        << "  backward.\n";
  if (t.memory.other < 0)
    out << "  Training 'other' is negative: gradients and saved activations are never all live at once (backward\n"
        << "  frees activations while it writes gradients), so the categories add up to more than the peak.\n";
}

void training_details(std::ostream& out, const TrainingResult& t, const DistributedResult* distributed) {
  out << "phases of the timed training steps (p50; share of all timed steps' time):";
  const bool optimizer_in_graph = t.cuda_graph && t.cuda_graph_scope.find("optimizer eager") == std::string::npos;
  for (const auto& p : t.phases) {
    // A graph replays forward and backward (and the optimizer, unless eager) as one: no separate time.
    if (t.cuda_graph && (p.phase == kPhaseBackward || (p.phase == kPhaseOptimizer && optimizer_in_graph))) continue;
    const std::string name = t.cuda_graph && p.phase == kPhaseForward ? "graph replay" : p.name;
    out << "  " << name << " " << ms(p.p50_ms) << " (" << fmt("%.1f%%", 100.0 * p.share) << ")";
  }
  out << "\nloss:";
  for (const auto& [step, loss] : t.loss_curve)
    out << "  " << step << ": " << (std::isnan(loss) ? "NaN" : fmt("%.4f", loss));  // inf prints as "inf"
  out << "  (step: loss; step 1 is the first ledger step)\n";
  if (t.non_finite_losses > 0)
    out << "loss: NOT FINITE from step " << t.first_non_finite_step << " (" << t.non_finite_losses
        << " recorded steps): the run diverged (a lower --lr, --clip or amp's loss scaling may hold it)\n";
  if (t.loss_scaling)
    out << "loss scaling: scale " << fmt("%g", t.initial_scale) << " -> " << fmt("%g", t.final_scale) << ", "
        << t.skipped_steps << " of " << t.optimizer_steps << " steps skipped (inf/NaN gradients)\n";
  if (distributed) {
    const auto& d = *distributed;
    out << "distributed: " << d.backend << ", " << d.world_size << " ranks, data parallel; " << d.buckets
        << " gradient bucket" << (d.buckets == 1 ? "" : "s") << " of <= " << fmt("%g", d.bucket_mb) << " MiB, "
        << (d.overlap ? "all-reduced as backward fills them (overlap)" : "all-reduced after backward") << "\n"
        << "  per timed step: " << format_bytes(d.bytes_per_step) << " all-reduced; communication p50 "
        << ms(d.comm_ms.p50) << " (first bucket's start to last one's end), exposed p50 " << ms(d.exposed_ms.p50)
        << " (what the step waits after backward)\n"
        << "  in-loop algbw " << fmt("%.3f", d.algbw_gbs) << " GB/s, busbw " << fmt("%.3f", d.busbw_gbs)
        << " GB/s; standalone all-reduce of the same size (as tvie allreduce): busbw " << fmt("%.3f", d.sweep_busbw_gbs)
        << " GB/s\n"
        << "  parameters identical on every rank after the run: " << (d.parameters_identical ? "yes" : "NO")
        << "; losses above are means over ranks (rank r draws its own samples)\n";
    if (d.backend_device_bytes >= 0)
      out << "  " << d.backend << "'s own device memory (outside the caching allocator, from cudaMemGetInfo): "
          << format_bytes(d.backend_device_bytes) << "\n";
  }
  if (t.clip_max_norm > 0)
    out << "clipping: max global norm " << fmt("%g", t.clip_max_norm) << "; norm before clipping p50 "
        << fmt("%.4g", t.grad_norm.p50) << " (min " << fmt("%.4g", t.grad_norm.min) << ", max "
        << fmt("%.4g", t.grad_norm.max) << "); clipped in " << t.clipped_steps << " of " << t.grad_norm.count
        << " steps\n";
}

}  // namespace

std::string format_bytes(int64_t bytes) { return detail::bytes_text(bytes); }

// "12.3 J in 2.10 s, 5.9 W mean, 0.38 J per sample (RAPL package-0 ...)" or "not available: why".
std::string energy_text(const EnergyReading& e, double joules_per_sample) {
  if (!e.available()) return e.source;
  return cat(fmt("%.3g J", e.joules), " in ", fmt("%.2f s", e.seconds), ", ", fmt("%.3g W", e.mean_watts()), " mean, ",
             fmt("%.3g J", joules_per_sample), " per sample (", e.source, ")");
}

void ConsoleReporter::report(const TrainReport& r) {
  const auto& t = r.training;
  auto& out = out_;
  header(out, "train", r.workload, r.context, r.facts);
  training_line(out, r.settings, t);
  out << '\n';
  const DistributedResult* distributed = r.distributed ? &*r.distributed : nullptr;
  const std::vector<size_t> w = {18, 14, 14, 22};
  row(out, {"memory", "training", "predicted", "measured - predicted"}, w);
  for (const auto& lr : detail::ledger_rows(t, distributed != nullptr)) {
    if (!lr.held || std::string_view(lr.name) == "batch") continue;
    if (std::string_view(lr.name) == "peak_reserved") {
      row(out, {"  peak reserved", format_bytes(lr.measured), "-", ""}, w);
      continue;
    }
    row(out,
        {cat("  ", lr.name), format_bytes(lr.measured), predicted_cell(lr.predicted),
         remainder_cell(lr.measured, lr.predicted)},
        w);
  }
  ledger_notes(out, t, false, r.context.device_type == c10::DeviceType::CUDA);
  out << '\n';
  const std::vector<size_t> w2 = {18, 24};
  row(out, {"time", "training step"}, w2);
  row(out, {"  timed", cat(t.timed_steps)}, w2);
  row(out, {"  excluded", cat(t.ledger_steps, " ledger + ", t.warmup_steps, " warm-up")}, w2);
  row(out, {"  mean", ms(t.step.mean)}, w2);
  row(out, {"  p50", ms(t.step.p50)}, w2);
  row(out, {"  p90", ms(t.step.p90)}, w2);
  row(out, {"  p99", ms(t.step.p99)}, w2);
  row(out, {"  samples/s", fmt("%.1f", t.samples_per_s)}, w2);
  if (r.facts.tokens_per_sample > 0) row(out, {"  tokens/s", fmt("%.0f", t.tokens_per_s)}, w2);
  row(out, {"  model TFLOP/s", fmt("%.4f", t.achieved_tflops)}, w2);
  row(out, {"  of the peak", of_peak(r.of_card)}, w2);
  out << "  timer: " << t.timer << "; model FLOPs analytic (3 x forward).\n" << card_line(r.of_card);
  out << "  energy over the timed steps: " << energy_text(t.energy, t.joules_per_sample) << "\n\n";
  training_details(out, t, distributed);
}

void ConsoleReporter::report(const ServeReport& r) {
  const auto& s = r.settings;
  const auto& x = r.result;
  auto& out = out_;
  out << "tvie serve: " << r.workload << " on " << r.context.device << "  (tvie " << r.context.tvie_version
      << ", LibTorch " << r.context.torch_version << ")\n";
  machine_line(out, r.context);
  out << "scenario " << to_string(s.scenario) << ": ";
  if (s.scenario == Scenario::server)
    out << "Poisson arrivals at " << fmt("%g", s.target_qps) << " QPS (seed " << s.seed
        << "), dynamic batcher max_batch " << s.max_batch << ", max_queue_delay " << s.max_queue_delay_us << " us";
  else if (s.scenario == Scenario::offline)
    out << "all " << s.query_count << " requests at once, batches of " << s.max_batch;
  else
    out << "one request at a time, the next when the previous is answered";
  out << "; " << to_string(s.dtype) << " weights\n";
  if (r.search) {
    const auto& q = *r.search;
    out << "\nsearch: highest QPS with a valid run and p99 <= " << fmt("%g", q.p99_bound_ms) << " ms ("
        << q.probes.size() << " runs, in order)\n";
    const std::vector<size_t> ws = {14, 14, 12, 8, 8};
    row(out, {"  target QPS", "achieved QPS", "p99 ms", "valid", "meets"}, ws);
    for (const auto& p : q.probes)
      row(out,
          {cat("  ", fmt("%.2f", p.target_qps)), fmt("%.2f", p.achieved_qps), fmt("%.3f", p.p99_ms),
           p.valid ? "yes" : "no", p.meets ? "yes" : "no"},
          ws);
    if (q.max_qps <= 0) {
      // The lowest rate tried says how far the bound is out of reach.
      const QpsProbe* lowest = nullptr;
      for (const auto& p : q.probes)
        if (!lowest || p.target_qps < lowest->target_qps) lowest = &p;
      out << "result: no rate meets p99 <= " << fmt("%g", q.p99_bound_ms) << " ms";
      if (lowest)
        out << "; the lowest probe's (" << fmt("%.2f", lowest->target_qps) << " QPS) p99 was "
            << fmt("%.3f", lowest->p99_ms) << " ms";
      if (q.latency_floor)
        out << " (halving the rate left the p99 within 10%: the service time alone misses the bound)\n";
      else
        out << " (the search halves no lower than " << fmt("%.3g", q.lowest_qps)
            << " QPS: a probe's requests would arrive over more than --max-run-s)\n";
      return;
    }
    out << "result: max QPS " << fmt("%.2f", q.max_qps);
    if (q.first_miss_qps > 0)
      out << " (" << fmt("%.2f", q.first_miss_qps) << " missed)";
    else
      out << " (the search never found a failing rate within 16 doublings)";
    out << "; the run at that rate:\n\n";
  }
  out << "requests: " << x.answered << " answered in " << fmt("%.3f", x.duration_s)
      << " s: " << fmt("%.1f", x.achieved_qps) << " QPS achieved";
  if (s.scenario == Scenario::server) out << " (target " << fmt("%g", s.target_qps) << ")";
  out << "\nvalidity: " << x.validity << "\n";
  if (r.context.device_type == c10::DeviceType::CPU)
    out << "cpu threads: " << x.intra_op_threads << " intra-op; OMP_WAIT_POLICY="
        << (x.omp_wait_policy.empty() ? "unset (idle threads spin briefly, then sleep)" : x.omp_wait_policy) << '\n';
  out << '\n';
  const std::vector<size_t> w = {28, 10, 10, 10, 10, 10, 10, 10};
  row(out, {"latency (ms)", "p50", "p90", "p95", "p99", "p99.9", "mean", "max"}, w);
  auto line = [&](const std::string& name, const Summary& m) {
    row(out,
        {name, fmt("%.3f", m.p50), fmt("%.3f", m.p90), fmt("%.3f", m.p95), fmt("%.3f", m.p99), fmt("%.3f", m.p999),
         fmt("%.3f", m.mean), fmt("%.3f", m.max)},
        w);
  };
  line("  total (from scheduled)", x.latency_ms);
  line("  queue", x.queue_ms);
  line("  compute", x.compute_ms);
  out << "batch size per request: mean " << fmt("%.2f", x.batch_size.mean) << ", p50 " << fmt("%.0f", x.batch_size.p50)
      << ", max " << fmt("%.0f", x.batch_size.max) << "\n"
      << "  Latency counts from each request's scheduled arrival (queueing cannot hide); queue = scheduled arrival\n"
      << "  to batch start, compute = batch start to end; percentiles are sorted[floor(p*n)] (LoadGen's rule).\n";
  if (r.of_card.card.empty()) {
    out << card_line(r.of_card);
    return;
  }
  out << "of the card over the run: " << of_peak(r.of_card) << (r.of_card.peak_tflops < 0 ? "" : " peak") << ", "
      << percent(r.of_card.bandwidth_fraction) << " of bandwidth (" << x.batches << " batches)\n"
      << "  bandwidth: " << r.of_card.bytes_counted << "; both are averages over the run, idle time between\n"
      << "  batches included: the share of the card this load used\n"
      << card_line(r.of_card);
}

namespace {

// A generation's ledger, measured beside predicted (a decode report; a compare report's generation).
void generation_ledger(std::ostream& out, const GenerationMemory& m, const GenerationMemory& p, bool packs_measured) {
  const std::vector<size_t> w = {18, 14, 14, 22};
  row(out, {"memory", "generation", "predicted", "measured - predicted"}, w);
  for (const auto& lr : detail::generation_rows(m, &p))
    if (lr.held)
      row(out,
          {cat("  ", lr.name), format_bytes(lr.measured), predicted_cell(lr.predicted),
           remainder_cell(lr.measured, lr.predicted)},
          w);
  out << "  kv_cache: 2 x layers x batch x (prompt + new - 1) positions x key/value width x bytes (the width: gpt's\n"
         "  d_model, llama's n_kv_head x head size), allocated before the prefill. working_set: the most the prefill\n"
         "  (its head reads the last position only) or a decoding step holds at once above the rest.\n";
  if (m.packed_weights > 0)
    out << "  packed_weights: int8 weights packed by fbgemm outside torch's allocator (glibc heap growth)\n";
  if (!packs_measured) out << kPacksNotMeasured;
}

// compare --aoti: the inference batch eager and compiled, side by side.
void compiled_block(std::ostream& out, const CompareReport& r) {
  const auto& e = r.inference;
  const auto& c = r.compiled->result;
  out << "compiled: AOTInductor package " << r.compiled->package << ", " << to_string(c.dtype) << ", batch "
      << r.settings.infer.batch_size << ", the inference rows' inputs, its own constants as weights\n";
  const std::vector<size_t> w = {18, 24, 24, 14};
  row(out, {"inference", "eager", "compiled", "compiled/eager"}, w);
  row(out, {"  mean", ms(e.latency.mean), ms(c.latency.mean), ""}, w);
  row(out, {"  p50", ms(e.latency.p50), ms(c.latency.p50), ""}, w);
  row(out, {"  p99", ms(e.latency.p99), ms(c.latency.p99), ""}, w);
  row(out,
      {"  samples/s", fmt("%.1f", e.samples_per_s), fmt("%.1f", c.samples_per_s),
       ratio(c.samples_per_s, e.samples_per_s)},
      w);
  const int64_t ew = e.memory.parameters + e.memory.packed_weights, cw = c.memory.parameters + c.memory.packed_weights;
  row(out, {"  weights", format_bytes(ew), format_bytes(cw), ratio(static_cast<double>(cw), static_cast<double>(ew))},
      w);
  row(out,
      {"  peak", format_bytes(e.memory.peak), format_bytes(c.memory.peak),
       ratio(static_cast<double>(c.memory.peak), static_cast<double>(e.memory.peak))},
      w);
  row(out, {"  of the peak", of_peak(r.inference_of_card), of_peak(r.compiled->of_card), ""}, w);
  out << "  compiled weights: the package's constants (on the CPU mapped from its library, outside the allocator);\n"
         "  no prediction (Inductor's kernels are not operators tvie traces)\n\n";
}

}  // namespace

void ConsoleReporter::report(const CompareReport& r) {
  const auto& t = r.training;
  const auto& i = r.inference;
  const auto& is = r.settings.infer;
  auto& out = out_;
  header(out, "compare", r.workload, r.context, r.facts);
  training_line(out, r.settings.train, t);
  out << "inference: batch " << is.batch_size << ", " << to_string(i.dtype) << " copy of the trained weights";
  if (r.inference_dtype_choice != "given") out << "\n           (" << r.inference_dtype_choice << ")";
  if (i.dtype != InferenceDtype::fp32) out << "\n           scheme: " << i.scheme;
  out << "\n\n";

  const std::vector<size_t> w = {18, 14, 14, 18, 14, 10};
  row(out, {"memory", "training", "predicted", "inference " + to_string(i.dtype), "predicted", "train/infer"}, w);
  // The rows of both modes, in the ledger's one order; the ratio column compares the categories both modes hold for
  // the same reason (the weights, counting int8 packs outside LibTorch's allocator, the activations, the peak).
  const auto training = detail::ledger_rows(t, false);
  const auto inference = detail::ledger_rows(i);
  const int64_t inference_weights = i.memory.parameters + std::max<int64_t>(0, i.memory.packed_weights);
  for (const char* name : detail::ledger_row_names()) {
    const auto* a = detail::find_row(training, name);
    const auto* b = detail::find_row(inference, name);
    const bool has_a = a && a->held, has_b = b && b->held;
    const std::string_view n = name;
    if ((!has_a && !has_b) || n == "batch") continue;
    std::string gap;
    if (n == "parameters") gap = ratio(static_cast<double>(a->measured), static_cast<double>(inference_weights));
    if (n == "activations" || n == "peak")
      gap = ratio(static_cast<double>(a->measured), static_cast<double>(b->measured));
    row(out,
        {n == "peak_reserved" ? "  peak reserved" : cat("  ", name), has_a ? format_bytes(a->measured) : "-",
         has_a ? predicted_cell(a->predicted) : "-", has_b ? format_bytes(b->measured) : "-",
         has_b ? predicted_cell(b->predicted) : "-", gap},
        w);
  }
  ledger_notes(out, t, true, r.context.device_type == c10::DeviceType::CUDA);
  if (i.memory.packed_weights > 0)
    out << "  packed_weights: " << format_bytes(i.memory.packed_weights)
        << " of int8 weights packed by fbgemm outside torch's allocator\n  (glibc heap growth across each layer's "
           "packing); train/infer of parameters counts them\n";
  if (!i.predicted.quantised_weights_source.empty())
    out << "  inference weights predicted: " << i.predicted.quantised_weights_source << "\n";
  if (!i.memory.packed_weights_measured) out << kPacksNotMeasured;

  out << '\n';
  const std::vector<size_t> w2 = {18, 24, 24, 12};
  row(out, {"time", "training step", "inference batch", "infer/train"}, w2);
  row(out, {"  timed", cat(t.timed_steps), cat(i.timed_batches), ""}, w2);
  row(out,
      {"  excluded", cat(t.ledger_steps, " ledger + ", t.warmup_steps, " warm-up"),
       cat(i.ledger_batches, " ledger + ", i.warmup_batches, " warm-up"), ""},
      w2);
  row(out, {"  mean", ms(t.step.mean), ms(i.latency.mean), ""}, w2);
  row(out, {"  stddev", ms(t.step.stddev), ms(i.latency.stddev), ""}, w2);
  row(out, {"  p50", ms(t.step.p50), ms(i.latency.p50), ""}, w2);
  row(out, {"  p90", ms(t.step.p90), ms(i.latency.p90), ""}, w2);
  row(out, {"  p99", ms(t.step.p99), ms(i.latency.p99), ""}, w2);
  row(out,
      {"  samples/s", fmt("%.1f", t.samples_per_s), fmt("%.1f", i.samples_per_s),
       ratio(i.samples_per_s, t.samples_per_s)},
      w2);
  if (r.facts.tokens_per_sample > 0)
    row(out,
        {"  tokens/s", fmt("%.0f", t.tokens_per_s), fmt("%.0f", i.tokens_per_s), ratio(i.tokens_per_s, t.tokens_per_s)},
        w2);
  row(out, {"  model TFLOP/s", fmt("%.4f", t.achieved_tflops), fmt("%.4f", i.achieved_tflops), ""}, w2);
  row(out, {"  of the peak", of_peak(r.training_of_card), of_peak(r.inference_of_card), ""}, w2);
  row(out, {"  of bandwidth", "-", percent(r.inference_of_card.bandwidth_fraction), ""}, w2);
  out << "  timer: " << t.timer << "; samples/s = batch / mean time; model FLOPs analytic (training = 3 x forward).\n"
      << "  of bandwidth: " << r.inference_of_card.bytes_counted << " / mean time / the card's bandwidth.\n"
      << card_line(r.training_of_card);
  out << "  energy, training (timed steps): " << energy_text(t.energy, t.joules_per_sample) << "\n";
  out << "  energy, inference (timed batches): " << energy_text(i.energy, i.joules_per_sample) << "\n\n";
  if (r.compiled) compiled_block(out, r);
  training_details(out, t, nullptr);
  if (r.generation && r.generation_settings) {
    const auto& g = *r.generation;
    const auto& gs = *r.generation_settings;
    out << "\ngeneration (serving): batch " << gs.batch_size << ", prompt " << gs.prompt_tokens << " tokens, "
        << gs.new_tokens << " new tokens (greedy), " << to_string(g.dtype) << " copy of the trained weights, "
        << kv_cache_dtype(g.dtype, r.context.device_type) << " KV cache, " << g.timed_runs
        << " timed runs after the ledger's 2" << (g.cuda_graph ? ", decoding steps from a CUDA graph" : "") << "\n"
        << "  time to first token (prefill): p50 " << fmt("%.3f", g.ttft_ms.p50) << " ms, p99 "
        << fmt("%.3f", g.ttft_ms.p99) << " ms\n"
        << "  time per output token:         p50 " << fmt("%.3f", g.tpot_ms.p50) << " ms, p99 "
        << fmt("%.3f", g.tpot_ms.p99) << " ms (" << g.tpot_ms.count << " steps)\n"
        << "  tokens/s (generated, all sequences): " << fmt("%.1f", g.tokens_per_s) << "\n";
    if (r.prefill_of_card && r.decoding_of_card) out << generation_fractions(*r.prefill_of_card, *r.decoding_of_card);
    out << '\n';
    generation_ledger(out, g.memory, g.predicted, g.packed_weights_measured);
  }
  // A token model's serving is its generation: the gap leads with it, the full-sequence forward ("score") after.
  if (r.generation)
    out << "\ngap: training peak / generation peak = " << fmt("%.2f", r.generation_peak_memory_ratio)
        << "x (serving: a prefill, then KV-cached decoding)\n"
        << "     training peak / score peak = " << fmt("%.2f", r.peak_memory_ratio)
        << "x; score throughput / training throughput = " << fmt("%.2f", r.throughput_ratio)
        << "x (score: one forward of whole sequences, logits at every position)\n";
  else
    out << "\ngap: training peak / inference peak = " << fmt("%.2f", r.peak_memory_ratio)
        << "x; inference throughput / training throughput = " << fmt("%.2f", r.throughput_ratio) << "x\n";
}

namespace {

std::string accuracy_cell(const InferSweepRow& row, int which) {
  if (row.dtype == InferenceDtype::fp32) return "ref";
  if (!row.has_accuracy) return "-";
  const auto& a = row.accuracy;
  if (which == 0) return fmt("%.2e", a.max_abs_error);
  if (which == 1) return fmt("%.2e", a.mean_abs_error);
  return a.rows > 0 ? fmt("%.2f%%", 100.0 * a.top1_agreement) : "n/a";
}

}  // namespace

void ConsoleReporter::report(const InferReport& r) {
  auto& out = out_;
  const auto& s = r.settings;
  header(out, "infer", r.workload, r.context, r.facts);
  out << "rows: " << s.batch_sizes.size() << " batch sizes x " << s.dtypes.size() << " precisions; each row 1 ledger + "
      << s.warmup_steps << " warm-up + " << s.steps << " timed batches (only the timed ones count)"
      << (s.cuda_graph ? ", replayed from a CUDA graph" : "") << "\n      the same weights in every row (" << r.weights
      << "); accuracy against the fp32 output on the same inputs (seed " << s.seed << ")\n";
  if (r.sweep.cpu_memory_limit_bytes > 0)
    out << "memory: emulated device with " << format_bytes(r.sweep.cpu_memory_limit_bytes)
        << " free for tensors (--cpu-memory-limit-mb)\n";
  out << '\n';
  const bool tokens = r.facts.tokens_per_sample > 0;
  size_t dtype_width = 6;
  for (const auto d : s.dtypes) dtype_width = std::max(dtype_width, to_string(d).size() + 1);
  const std::vector<size_t> w = {7, dtype_width, 11, 11, 12, 12, 11, 13, 11, 12, 10, 10, 9, 10, 8};
  row(out,
      {"batch", "dtype", "p50 ms", "p99 ms", "samples/s", tokens ? "tokens/s" : "", "weights", "activations", "peak",
       "peak pred.", "max|err|", "mean|err|", "top-1", "of peak", "of bw"},
      w);
  for (size_t k = 0; k < r.sweep.rows.size(); ++k) {
    const auto& x = r.sweep.rows[k];
    const CardFraction card = k < r.of_card.size() ? r.of_card[k] : CardFraction{};
    if (!x.fits) {
      out << pad(cat(x.batch_size), w[0]) << pad(to_string(x.dtype), w[1]) << "does not fit: " << x.does_not_fit
          << '\n';
      continue;
    }
    const auto& i = x.result;
    row(out,
        {cat(x.batch_size), to_string(x.dtype), fmt("%.3f", i.latency.p50), fmt("%.3f", i.latency.p99),
         fmt("%.1f", i.samples_per_s), tokens ? fmt("%.0f", i.tokens_per_s) : "",
         format_bytes(i.memory.parameters + i.memory.packed_weights) + (i.memory.packed_weights_measured ? "" : "*"),
         format_bytes(i.memory.activations),
         format_bytes(i.memory.peak) + (i.memory.packed_weights_measured ? "" : "*"), predicted_cell(i.predicted.peak),
         accuracy_cell(x, 0), accuracy_cell(x, 1), accuracy_cell(x, 2), percent(card.peak_fraction),
         percent(card.bandwidth_fraction)},
        w);
  }
  out << "\n  p50/p99: latency of one batch (percentile = sorted[floor(p*n)]); samples/s = batch / mean latency.\n"
      << "  weights: the inference copy, measured (int8 on CPU: fbgemm's packed weights, measured as glibc heap\n"
      << "  growth, plus the fp32 rest; --aoti: the package's constants); activations: working set of one forward; "
         "peak: "
      << r.sweep.memory_counter << ".\n"
      << "  peak pred.: predicted before the run (weights + the traced forward's working set + batch; docs/metrics.md\n"
      << "  \"Predicted memory\"; int8/fp8: the Linear layers' quantised weights from their shapes).\n"
      << "  max|err|, mean|err|: absolute error of the outputs against fp32; top-1: share of output rows whose\n"
      << "  argmax matches fp32's.\n"
      << "  of peak: model TFLOP/s / the card's dense peak in the row's dtype (int8: TOPS; int8-weight-only: bf16);\n"
      << "  of bw: the weights, read once per batch / mean latency / the card's memory bandwidth.\n"
      << (r.of_card.empty() ? std::string() : card_line(r.of_card.front())) << "  timer: " << r.sweep.timer << '\n';
  std::set<InferenceDtype> schemes;
  for (const auto& x : r.sweep.rows)
    if (x.fits && x.dtype != InferenceDtype::fp32 && schemes.insert(x.dtype).second)
      out << "  " << to_string(x.dtype) << ": " << x.result.scheme << '\n';
  std::set<InferenceDtype> explained;
  for (const auto& x : r.sweep.rows)
    if (x.fits && !x.result.predicted.quantised_weights_source.empty() && explained.insert(x.dtype).second)
      out << "  " << to_string(x.dtype) << " weights predicted: " << x.result.predicted.quantised_weights_source
          << '\n';
  if (std::any_of(r.sweep.rows.begin(), r.sweep.rows.end(),
                  [](const auto& x) { return x.fits && !x.result.memory.packed_weights_measured; }))
    out << "  *" << kPacksNotMeasured.substr(1);
}

void ConsoleReporter::report(const MaxBatchReport& r) {
  auto& out = out_;
  const auto& s = r.settings;
  header(out, "max batch", r.workload, r.context, r.facts);
  if (s.training)
    out << "training: " << to_string(s.train.optimizer) << ", " << to_string(s.train.precision) << ", checkpoint "
        << checkpoint_to_string(s.train.checkpoint_every) << "; two instrumented steps per probe\n";
  if (s.inference) out << "inference: " << to_string(s.infer.dtype) << " copy; one ledger batch per probe\n";
  if (s.generation)
    out << "generation: prompts of " << s.decode.prompt_tokens << " tokens, " << s.decode.new_tokens << " new, "
        << to_string(s.infer.dtype) << " copy and KV cache; one generation's ledger per probe\n";
  std::vector<const MaxBatchResult*> results;
  for (const auto* x : {&r.training, &r.inference, &r.generation})
    if (*x) results.push_back(&**x);
  const MaxBatchResult* any = results.front();
  out << "memory: " << any->limit_source << ", " << format_bytes(any->limit_bytes) << "\n\n";
  // The ledger at the largest fitting batch (the mode's own): its peak allocated and, where there is a
  // caching allocator (CUDA), its peak reserved; -1 where there is none.
  struct PeakThere {
    int64_t allocated = -1, reserved = -1;
  };
  auto peak_there = [](const MaxBatchResult& x) {
    if (x.training) return PeakThere{x.training->peak, x.training->peak_reserved};
    if (x.inference) return PeakThere{x.inference->peak, x.inference->peak_reserved};
    if (x.generation) return PeakThere{x.generation->peak, -1};
    return PeakThere{};
  };
  bool reserved = false;
  for (const auto* x : results) reserved = reserved || peak_there(*x).reserved >= 0;
  std::vector<size_t> w = {14, 18, 16, 20, 22};
  std::vector<std::string> head = {"mode", "largest fitting", "first failing", "predicted largest",
                                   "peak allocated there"};
  if (reserved) {
    w.push_back(20);
    head.emplace_back("peak reserved there");
  }
  row(out, head, w);
  auto line = [&](const MaxBatchResult& x) {
    const PeakThere peak = peak_there(x);
    std::vector<std::string> cells = {
        "  " + to_string(x.mode), x.largest_fitting > 0 ? cat(x.largest_fitting) : "none",
        x.first_failing > 0 ? cat(x.first_failing) : cat("none up to ", s.search.max_batch),
        x.predicted_largest >= 0 ? cat(x.predicted_largest) : "-",
        peak.allocated >= 0 ? format_bytes(peak.allocated) : "-"};
    if (reserved) cells.push_back(peak.reserved >= 0 ? format_bytes(peak.reserved) : "-");
    row(out, cells, w);
  };
  for (const auto* x : results) line(*x);
  for (const auto* x : results) {
    out << "  " << to_string(x->mode) << " probes:";
    for (const auto& p : x->probes) out << ' ' << p.batch << (p.fits ? " fits," : " no,");
    out << '\n';
  }
  if (r.training && r.inference && r.training->largest_fitting > 0)
    out << "\n  training fits batch " << r.training->largest_fitting << ", inference fits batch "
        << r.inference->largest_fitting << " on this device ("
        << ratio(static_cast<double>(r.inference->largest_fitting), static_cast<double>(r.training->largest_fitting))
        << ")\n";
  if (r.generation && r.generation->largest_fitting > 0)
    out << "\n  a generation of " << s.decode.prompt_tokens + s.decode.new_tokens - 1 << " cached positions fits "
        << r.generation->largest_fitting
        << " sequences at once (the KV cache: " << format_bytes(r.generation->generation->kv_cache) << " of the "
        << format_bytes(r.generation->generation->peak) << " peak)\n";
  out << "\n  Each probe runs in a clean allocator state: on the CPU under the emulated limit (every live tensor\n"
      << "  counts, the batch included), on CUDA against the caching allocator's own out-of-memory with its cache\n"
      << "  emptied between probes. Doubling from " << s.search.start_batch << ", then bisection. predicted largest:\n"
      << "  the largest batch whose predicted peak (docs/metrics.md, \"Predicted memory\") is within the limit.\n"
      << "  peak allocated: the tensors' bytes at the largest fitting batch (the ledger's peak).\n";
  if (reserved)
    out << "  peak reserved: the caching allocator's segments at that peak, free space in them included. A probe\n"
        << "  fails when a request finds no free block and cudaMalloc finds no room, after the allocator has\n"
        << "  released every wholly free segment: space left free inside segments that hold live tensors\n"
        << "  (fragmentation) is lost. The prediction counts tensors only, so on CUDA its largest batch is an upper\n"
        << "  bound; the gap between reserved and allocated above shows how much room the allocator kept.\n";
}

void ConsoleReporter::report(const SliceReport& r) {
  auto& out = out_;
  const auto& plan = r.plan;
  const char* command = r.training && (r.inference || r.generation) ? "compare (slices)"
                        : r.training                                ? "train (slices)"
                        : r.inference                               ? "infer (slices)"
                                                                    : "decode (slices)";
  header(out, command, r.workload, r.context, r.facts);
  if (r.training) training_line(out, r.training->settings, r.training->slices.front());
  if (r.inference)
    out << "inference: batch " << r.inference->settings.batch_size << ", " << to_string(r.inference->settings.dtype)
        << " copy of freshly initialised weights (seed " << r.inference->settings.seed << ")\n";
  if (r.generation) {
    const auto& g = r.generation->settings;
    out << "generation: batch " << g.batch_size << ", prompts of " << g.prompt_tokens << " tokens, " << g.new_tokens
        << " new tokens (greedy), " << to_string(g.dtype) << " copy of freshly initialised weights (seed " << g.seed
        << "), " << kv_cache_dtype(g.dtype, r.context.device_type) << " KV cache\n";
    if (g.dtype != InferenceDtype::fp32) out << "  scheme: " << r.generation->slices.front().scheme << '\n';
  }
  std::string axes;
  for (const auto& a : plan.axes) axes += (axes.empty() ? "" : ", ") + a.name();
  out << "slices: the model at its real width (" << plan.full_label() << ") emulated by slices, each measured.\n"
      << "The full model was NOT run: its column is extrapolated linearly in " << axes << " (one increment per\n"
      << "axis from the slice that steps it; what repeats along no axis counted once), beside the analytic\n"
      << "prediction of the full model.\n";
  for (const auto& a : plan.axes)
    if (!a.in_inference() && (r.inference || r.generation))
      out << "Inference slices keep the full " << a.name() << " (" << a.full << "): the working set is a maximum over\n"
          << "the forward, not a sum, and bends where the head's logits overtake a block's temporaries.\n";
  std::vector<size_t> w;
  std::vector<std::string> heads;
  // The table head of a plan: the slices' own labels where they are short, else "slice i" after a legend.
  const auto table_head = [&](const std::string& what, const SlicePlan& p) {
    const size_t n = p.slice_count();
    heads.clear();
    bool legend = false;
    for (size_t i = 0; i < n; ++i) {
      heads.push_back(p.label(i));
      legend = legend || heads.back().size() > 14;
    }
    out << '\n';
    if (legend) {
      for (size_t i = 0; i < n; ++i) {
        out << "  " << what.substr(0, what.find(' ')) << " slice " << i + 1 << ": " << heads[i] << '\n';
        heads[i] = cat("slice ", i + 1);
      }
    }
    const std::string full = p.full_label().size() <= 12 ? p.full_label() : "full model";
    w.assign(n + 3, 14);
    w[0] = 18;
    w[n + 1] = 26;
    w[n + 2] = 22;
    std::vector<std::string> cells = {what};
    cells.insert(cells.end(), heads.begin(), heads.end());
    cells.push_back(full + " extrapolated");
    cells.push_back(full + " predicted");
    row(out, cells, w);
  };
  // One ledger line: the category in every slice, extrapolated, predicted.
  const auto line = [&](const std::string& name, const auto& slices, const auto& value, int64_t extrapolated,
                        int64_t predicted) {
    std::vector<std::string> cells = {"  " + name};
    for (const auto& s : slices) cells.push_back(format_bytes(value(s.memory)));
    cells.push_back(format_bytes(extrapolated));
    cells.push_back(predicted_cell(predicted));
    row(out, cells, w);
  };
  // `more`: the options that time more (--steps and --warmup; a generation's --repetitions).
  const auto time_line = [&](const std::string& name, const std::vector<double>& times, double x,
                             const char* more = "--steps and --warmup") {
    std::vector<std::string> cells = {"  " + name};
    for (double t : times) cells.push_back(ms(t));
    cells.push_back(x >= 0 ? ms(x) : "- (see below)");
    row(out, cells, w);
    if (x < 0)
      out << "  not extrapolated: a slice that steps an axis was not slower than the base slice (" << heads[0]
          << "; timing noise: more " << more << ").\n";
  };
  if (r.training) {
    const auto& t = *r.training;
    const auto& x = t.extrapolated;
    const auto& p = t.predicted;
    table_head("training memory", t.plan);
    line("parameters", t.slices, std::mem_fn(&TrainingMemory::parameters), x.parameters, p.parameters);
    line("gradients", t.slices, std::mem_fn(&TrainingMemory::gradients), x.gradients, p.gradients);
    line("optimizer_state", t.slices, std::mem_fn(&TrainingMemory::optimizer_state), x.optimizer_state,
         p.optimizer_state);
    if (is_amp(t.slices.front().precision))
      line("weight_copies", t.slices, std::mem_fn(&TrainingMemory::weight_copies), x.weight_copies, p.weight_copies);
    line("activations", t.slices, std::mem_fn(&TrainingMemory::activations), x.activations, p.activations);
    line("peak", t.slices, std::mem_fn(&TrainingMemory::peak), x.peak, p.peak);
    std::vector<double> times;
    for (const auto& s : t.slices) times.push_back(s.step.mean);
    time_line("step mean", times, t.extrapolated_step_ms);
  }
  if (r.inference) {
    const auto& i = *r.inference;
    const auto& x = i.extrapolated;
    const auto& p = i.predicted;
    table_head("inference memory", i.plan);
    line(
        "parameters", i.slices, [](const auto& m) { return m.parameters + m.packed_weights; },
        x.parameters + x.packed_weights, p.weights());
    line("activations", i.slices, std::mem_fn(&InferenceMemory::activations), x.activations, p.activations);
    line("peak", i.slices, std::mem_fn(&InferenceMemory::peak), x.peak, p.peak);
    std::vector<double> times;
    for (const auto& s : i.slices) times.push_back(s.latency.mean);
    time_line("batch mean", times, i.extrapolated_latency_ms);
  }
  if (r.generation) {
    const auto& g = *r.generation;
    const auto& x = g.extrapolated;
    const auto& p = g.predicted;
    table_head("generation memory", g.plan);
    line("weights", g.slices, std::mem_fn(&GenerationMemory::weights), x.weights, p.weights);
    line("kv_cache", g.slices, std::mem_fn(&GenerationMemory::kv_cache), x.kv_cache, p.kv_cache);
    line("working_set", g.slices, std::mem_fn(&GenerationMemory::working_set), x.working_set, p.working_set);
    line("peak", g.slices, std::mem_fn(&GenerationMemory::peak), x.peak, p.peak);
    std::vector<double> ttft, tpot;
    for (const auto& s : g.slices) {
      ttft.push_back(s.ttft_ms.mean);
      tpot.push_back(s.tpot_ms.mean);
    }
    time_line("TTFT mean", ttft, g.extrapolated_ttft_ms, "--repetitions");
    if (g.settings.new_tokens > 1) time_line("TPOT mean", tpot, g.extrapolated_tpot_ms, "--repetitions");
    if (g.extrapolated_tokens_per_s > 0)
      out << "  tokens/s (all sequences), extrapolated: " << fmt("%.3f", g.extrapolated_tokens_per_s)
          << " = batch x new tokens / (TTFT + (new tokens - 1) x TPOT)\n";
  }
  const std::string& counter = r.training    ? r.training->slices.front().memory_counter
                               : r.inference ? r.inference->slices.front().memory_counter
                                             : r.generation->slices.front().memory_counter;
  out << "  counter: " << counter << ".\n";
  if (r.training) {
    const auto& t = r.training->slices.front();
    out << "  training timer: " << t.timer << "; " << t.timed_steps << " timed steps per slice after " << t.ledger_steps
        << " ledger + " << t.warmup_steps << " warm-up.\n";
  }
  if (r.inference) {
    const auto& i = r.inference->slices.front();
    out << "  inference timer: " << i.timer << "; " << i.timed_batches << " timed batches per slice after 1 ledger + "
        << i.warmup_batches << " warm-up.\n";
  }
  if (r.generation) {
    const auto& g = r.generation->slices.front();
    out << "  generation timer: " << g.timer << "; " << g.timed_runs << " timed runs per slice after the ledger's 2.\n";
  }
  // The full model's FLOPs (and, for inference, its extrapolated weights) over the extrapolated time.
  const CardFraction& any = r.training    ? r.training->of_card
                            : r.inference ? r.inference->of_card
                                          : r.generation->decoding_of_card;
  if (!any.card.empty()) {
    const auto fraction = [&](const char* what, const CardFraction& f) {
      out << "  of the card, " << what << ": " << of_peak(f) << (f.peak_tflops < 0 ? "" : " peak");
      if (f.bandwidth_fraction >= 0) out << ", " << percent(f.bandwidth_fraction) << " of bandwidth";
      out << '\n';
    };
    // A time not extrapolated has no fraction.
    if (r.training && r.training->extrapolated_step_ms > 0) fraction("the extrapolated step", r.training->of_card);
    if (r.inference && r.inference->extrapolated_latency_ms > 0)
      fraction("the extrapolated batch (its weights once)", r.inference->of_card);
    if (r.generation) {
      const auto& g = *r.generation;
      if (g.extrapolated_ttft_ms > 0) fraction("the extrapolated prefill (its weights once)", g.prefill_of_card);
      if (g.settings.new_tokens > 1 && g.extrapolated_tpot_ms > 0)
        fraction("the extrapolated decoding step (its weights and the cache attended to)", g.decoding_of_card);
    }
  }
  out << card_line(any);
  if (r.training && r.generation)
    out << "\ngap (extrapolated): training peak / generation peak = "
        << ratio(static_cast<double>(r.training->extrapolated.peak),
                 static_cast<double>(r.generation->extrapolated.peak))
        << " (serving: a prefill, then KV-cached decoding)\n";
  if (r.training && r.inference)
    out << (r.generation ? "                    training peak / score peak = "
                         : "\ngap (extrapolated): training peak / inference peak = ")
        << ratio(static_cast<double>(r.training->extrapolated.peak),
                 static_cast<double>(r.inference->extrapolated.peak))
        << (r.generation ? " (score: one forward of whole sequences)" : "") << "\n";
}

void ConsoleReporter::report(const DecodeReport& r) {
  const auto& s = r.settings;
  const auto& x = r.result;
  auto& out = out_;
  out << "tvie decode: " << r.workload << " on " << r.context.device << ", " << to_string(x.dtype) << " weights, "
      << kv_cache_dtype(x.dtype, r.context.device_type) << " KV cache, batch " << s.batch_size << ", prompt "
      << s.prompt_tokens << " tokens, " << s.new_tokens << " new tokens (greedy), " << x.timed_runs
      << " timed runs after the ledger's 2\n";
  if (x.dtype != InferenceDtype::fp32) out << "  scheme: " << x.scheme << '\n';
  if (x.cuda_graph)
    out << "  decoding steps: one CUDA graph replayed per step (fixed shapes: the whole cache attended, later "
           "positions masked)\n";
  out << "  weights: " << r.weights << '\n';
  machine_line(out, r.context);
  out << "  time to first token (prefill): p50 " << fmt("%.3f", x.ttft_ms.p50) << " ms, p99 "
      << fmt("%.3f", x.ttft_ms.p99) << " ms\n"
      << "  time per output token:         p50 " << fmt("%.3f", x.tpot_ms.p50) << " ms, p99 "
      << fmt("%.3f", x.tpot_ms.p99) << " ms (" << x.tpot_ms.count << " steps)\n"
      << "  tokens/s (all sequences):      " << fmt("%.3f", x.tokens_per_s) << "\n"
      << generation_fractions(r.prefill_of_card, r.decoding_of_card) << '\n';
  generation_ledger(out, x.memory, x.predicted, x.packed_weights_measured);
  out << "  counter: " << x.memory_counter << "; timer: " << x.timer << "\n";
  if (!r.decoding_of_card.card.empty()) out << card_line(r.decoding_of_card);
}

namespace {

std::string line_fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line_fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string wrong_cell(int64_t w) { return w < 0 ? "N/A" : std::to_string(w); }

}  // namespace

void ConsoleReporter::report(const AllreduceReport& report) {
  const auto& r = report.result;
  const auto& s = report.settings;
  auto& out = out_;
  out << "# tvie allreduce: c10d " << r.backend << ", " << r.world_size << " ranks, " << r.device << ", dtype "
      << r.dtype << ", sum; " << s.warmup << " warm-up + " << s.iters << " timed all-reduces per size\n"
      << "# time = mean of the timed all-reduces on rank 0 (after a barrier); algbw = size / time;\n"
      << "# busbw = algbw * 2(n-1)/n (nccl-tests); out-of-place = copy into a separate buffer + in-place all-reduce\n";
  config_line(out, report.context, "# ");
  out << "#\n"
      << "#                                     out-of-place                       in-place\n"
      << "#       size         count    type     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  for (const auto& x : r.rows)
    out << line_fmt("%12lld  %12lld  %6s  %8.1f  %6.3f  %6.3f  %5s  %8.1f  %6.3f  %6.3f  %5s\n",
                    static_cast<long long>(x.bytes), static_cast<long long>(x.count), r.dtype.c_str(),
                    x.out_of_place_us, x.out_of_place_algbw_gbs, x.out_of_place_busbw_gbs,
                    wrong_cell(x.out_of_place_wrong).c_str(), x.in_place_us, x.in_place_algbw_gbs, x.in_place_busbw_gbs,
                    wrong_cell(x.in_place_wrong).c_str());
  out << "# Out of bounds values : "
      << (s.check ? cat(r.total_wrong, r.total_wrong == 0 ? " OK" : " FAILED") : "not checked")
      << "\n# Avg bus bandwidth    : " << line_fmt("%.4f", r.average_busbw_gbs) << " GB/s\n";
  if (r.world_size == 1)  // seen on an H200: in-place 13-20 us from 8 B to 256 MiB (algbw up to 21 TB/s)
    out << "# One rank: nothing crosses a link. An in-place all-reduce has no data to move (its time is the\n"
           "# call's fixed cost, its algbw meaningless); out-of-place is a device copy; busbw is 0 by definition.\n";
}

}  // namespace tvie
