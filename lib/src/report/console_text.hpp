// The console reports' shared pieces of text: number formats, padded table rows, the --config line.
#pragma once

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "core/text.hpp"
#include <tvie/report.hpp>

namespace tvie::console {

inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "0.75..2.18" over the listed cloud prices (one figure when they agree), "-" with none listed.
inline std::string cloud_span(const CloudCost& c, const char* format) {
  if (c.listings == 0) return "-";
  const std::string low = fmt(format, c.low_usd), high = fmt(format, c.high_usd);
  return low == high ? low : low + ".." + high;
}

inline std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

inline void row(std::ostream& out, const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += pad(cells[i], i < widths.size() ? widths[i] : 0);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out << line << '\n';
}

// A fraction of the card (tvie/headroom.hpp) as a percentage; "-" where it is not defined.
inline std::string percent(double fraction) {
  if (fraction < 0) return "-";
  return fmt(fraction < 0.001 ? "%.4f%%" : fraction < 0.1 ? "%.2f%%" : "%.1f%%", 100.0 * fraction);
}
// The dtype of a catalog peak field: "bf16_tflops" -> "bf16", "int8_tops" -> "int8".
inline std::string peak_dtype(const std::string& field) { return field.substr(0, field.find('_')); }
// "3.1% of bf16" / "no fp16 peak" / "-" (no card): the run's model FLOP/s against the card's dense peak.
inline std::string of_peak(const CardFraction& f) {
  const std::string dtype = peak_dtype(f.peak_field);
  if (f.card.empty()) return "-";
  if (f.peak_tflops < 0) return "no " + dtype + " peak";
  return percent(f.peak_fraction) + " of " + dtype;
}

inline std::string flops(double f) {
  if (f <= 0) return "unknown";
  if (f >= 1e12) return fmt("%.2f TFLOP", f / 1e12);
  if (f >= 1e9) return fmt("%.2f GFLOP", f / 1e9);
  if (f >= 1e6) return fmt("%.2f MFLOP", f / 1e6);
  return fmt("%.0f FLOP", f);
}

// "options from FILE: batch=8, model=gpt" where --config set options (nothing otherwise); `prefix` for reports
// whose header lines are comments ("# ").
inline void config_line(std::ostream& out, const RunContext& c, const std::string& prefix = "") {
  if (!c.config_file.empty())
    out << prefix << "options from " << c.config_file << ": " << detail::config_text(c.config) << '\n';
}

}  // namespace tvie::console
