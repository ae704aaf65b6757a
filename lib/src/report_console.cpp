// The side-by-side console table. Every figure says what it is: which counter, which steps.
#include <tvie/report.hpp>

#include <cmath>
#include <cstdio>

#include <tvie/log.hpp>

namespace tvie {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string ratio(double a, double b) { return (b != 0 && a != 0) ? fmt("%.2fx", a / b) : "-"; }

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

void row(std::ostream& out, const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += pad(cells[i], widths[i]);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out << line << '\n';
}

std::string flops(double f) {
  if (f <= 0) return "unknown";
  if (f >= 1e12) return fmt("%.2f TFLOP", f / 1e12);
  if (f >= 1e9) return fmt("%.2f GFLOP", f / 1e9);
  if (f >= 1e6) return fmt("%.2f MFLOP", f / 1e6);
  return fmt("%.0f FLOP", f);
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes), a = std::fabs(b);
  if (a >= 1024.0 * 1024 * 1024) return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt("%.2f MiB", b / (1024.0 * 1024));
  if (a >= 1024.0) return fmt("%.1f KiB", b / 1024.0);
  return cat(bytes, " B");
}

void ConsoleReporter::report(const CompareReport& r) {
  const auto& t = r.training;
  const auto& i = r.inference;
  const auto& ts = r.settings.train;
  const auto& is = r.settings.infer;
  auto& out = out_;
  out << "tvie compare: " << r.workload << " on " << r.context.device << "  (tvie " << r.context.tvie_version
      << ", LibTorch " << r.context.torch_version << ")\n";
  out << "model: " << with_commas(r.facts.parameter_count) << " parameters ("
      << format_bytes(r.facts.parameter_count * 4) << " in fp32), " << flops(r.facts.forward_flops_per_sample)
      << " forward per sample (analytic)";
  if (r.facts.tokens_per_sample > 0) out << ", " << r.facts.tokens_per_sample << " tokens per sample";
  out << "\ntraining: batch " << ts.batch_size << " (" << ts.accumulate << " micro-batch"
      << (ts.accumulate > 1 ? "es" : "") << " of " << ts.batch_size / ts.accumulate << "), " << to_string(ts.optimizer)
      << ", fp32"
      << "    inference: batch " << is.batch_size << ", " << i.dtype << " copy of the trained weights\n\n";

  const std::vector<size_t> w = {18, 14, 14, 18, 10};
  const std::string infer_col = "inference " + i.dtype;
  row(out, {"memory", "training", "predicted", infer_col, "train/infer"}, w);
  auto mem = [](int64_t v) { return format_bytes(v); };
  row(out,
      {"  parameters", mem(t.memory.parameters), mem(t.predicted.parameters), mem(i.memory.parameters),
       ratio(static_cast<double>(t.memory.parameters), static_cast<double>(i.memory.parameters))},
      w);
  row(out, {"  gradients", mem(t.memory.gradients), mem(t.predicted.gradients), "-", ""}, w);
  row(out, {"  optimizer_state", mem(t.memory.optimizer_state), mem(t.predicted.optimizer_state), "-", ""}, w);
  row(out,
      {"  activations", mem(t.memory.activations), "-", mem(i.memory.activations),
       ratio(static_cast<double>(t.memory.activations), static_cast<double>(i.memory.activations))},
      w);
  row(out, {"  other", mem(t.memory.other), "-", mem(i.memory.other), ""}, w);
  row(out,
      {"  peak", mem(t.memory.peak), "-", mem(i.memory.peak),
       ratio(static_cast<double>(t.memory.peak), static_cast<double>(i.memory.peak))},
      w);
  if (t.memory.peak_reserved >= 0)
    row(out, {"  peak reserved", mem(t.memory.peak_reserved), "-", mem(i.memory.peak_reserved), ""}, w);
  out << "  counter: " << t.memory_counter << ".\n"
      << "  Bytes above the baseline taken before each mode built its model. Training activations: tensors saved\n"
      << "  for backward (forward with grad minus without); inference activations: working set of one forward\n"
      << "  (output included); other: peak minus the categories above (transients, the input batch of "
      << format_bytes(t.memory.batch) << ").\n";
  if (t.memory.other < 0)
    out << "  Training 'other' is negative: gradients and saved activations are never all live at once (backward\n"
        << "  frees activations while it writes gradients), so the categories add up to more than the peak.\n";

  out << '\n';
  const std::vector<size_t> w2 = {18, 24, 24, 12};
  row(out, {"time", "training step", "inference batch", "infer/train"}, w2);
  row(out, {"  timed", cat(t.timed_steps), cat(i.timed_batches), ""}, w2);
  row(out,
      {"  excluded", cat(t.ledger_steps, " ledger + ", t.warmup_steps, " warm-up"),
       cat(i.ledger_batches, " ledger + ", i.warmup_batches, " warm-up"), ""},
      w2);
  auto ms = [](double v) { return fmt("%.3f ms", v); };
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
  out << "  timer: " << t.timer << "; samples/s = batch / mean time; model FLOPs analytic (training = 3 x forward).\n"
      << "  loss: " << fmt("%.4f", t.first_loss) << " (ledger step) -> " << fmt("%.4f", t.final_loss)
      << " (last timed step)\n\n";
  out << "gap: training peak / inference peak = " << fmt("%.2f", r.peak_memory_ratio)
      << "x; inference throughput / training throughput = " << fmt("%.2f", r.throughput_ratio) << "x\n";
}

}  // namespace tvie
