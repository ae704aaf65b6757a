#include <tvie/stats.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tvie {

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double sample_stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  const double m = mean(values);
  double squares = 0.0;
  for (double v : values) squares += (v - m) * (v - m);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("percentile of an empty set");
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("percentile p must be in [0, 1]");
  // MLPerf LoadGen's rule: sorted[min(n - 1, floor(p * n))] (1e-9 absorbs p*n landing just below an integer).
  const auto n = sorted.size();
  const auto index = std::min(n - 1, static_cast<std::size_t>(std::floor(p * static_cast<double>(n) + 1e-9)));
  return sorted[index];
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, p);
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.mean = mean(values);
  s.stddev = sample_stddev(values);
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile_sorted(values, 0.50);
  s.p90 = percentile_sorted(values, 0.90);
  s.p95 = percentile_sorted(values, 0.95);
  s.p99 = percentile_sorted(values, 0.99);
  s.p999 = percentile_sorted(values, 0.999);
  return s;
}

}  // namespace tvie
