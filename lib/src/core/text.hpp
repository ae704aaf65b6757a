// Small text helpers for messages.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tvie::detail {

// A CSV field in double quotes, its own quotes doubled (RFC 4180): for text that may hold commas or quotes.
inline std::string csv_quoted(const std::string& text) {
  std::string q = "\"";
  for (const char ch : text) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// "a, b, c"
inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "batch=8, model=gpt": the options a --config file set (RunContext::config); "none (...)" when it set none.
inline std::string config_text(const std::vector<std::pair<std::string, std::string>>& options) {
  std::string out;
  for (const auto& [option, value] : options) out += (out.empty() ? "" : ", ") + option + "=" + value;
  return out.empty() ? "none (the command line gave each)" : out;
}

// "3,224,224": a tensor shape as the command line's --input-shape takes it.
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (const int64_t d : shape) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

// Up to the first newline: LibTorch's and Gloo's messages carry backtraces and hints after it.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// "25,557,032"
inline std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// "463.0 KiB", "2.38 MiB", "14.96 GiB", "512 B" (binary units).
inline std::string bytes_text(int64_t bytes) {
  const double b = static_cast<double>(bytes), a = std::fabs(b);
  char buffer[48];
  if (a >= 1024.0 * 1024 * 1024)
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (a >= 1024.0 * 1024)
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", b / (1024.0 * 1024));
  else if (a >= 1024.0)
    std::snprintf(buffer, sizeof buffer, "%.1f KiB", b / 1024.0);
  else
    return std::to_string(bytes) + " B";
  return buffer;
}

// "12.0 s", "4.3 min", "2.1 h", "16,000 years": a duration for a message, in the largest unit that reads well.
inline std::string duration_text(double seconds) {
  char buffer[64];
  if (seconds < 120)
    std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  else if (seconds < 7200)
    std::snprintf(buffer, sizeof buffer, "%.1f min", seconds / 60);
  else if (seconds < 3 * 86400)
    std::snprintf(buffer, sizeof buffer, "%.1f h", seconds / 3600);
  else if (seconds < 3 * 365.25 * 86400)
    std::snprintf(buffer, sizeof buffer, "%.0f days", seconds / 86400);
  else if (seconds < 1e15)
    return with_commas(static_cast<int64_t>(seconds / (365.25 * 86400))) + " years";
  else
    std::snprintf(buffer, sizeof buffer, "%.2g years", seconds / (365.25 * 86400));
  return buffer;
}

}  // namespace tvie::detail
