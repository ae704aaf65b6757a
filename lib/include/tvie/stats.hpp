// Statistics as small pure functions.
//
// Percentile rule (the one MLPerf LoadGen uses): sort ascending, take the element at index
// min(n - 1, floor(p * n)). p50 of {1, 2, 3, 4} is 3; p99 of 100 values is the 100th smallest's
// neighbour sorted[99]. No interpolation: every reported percentile is a value that was measured.
#pragma once

#include <cstddef>
#include <vector>

namespace tvie {

struct Summary {
  std::size_t count = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1 denominator); 0 when count < 2
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double p999 = 0;  // p99.9
};

double mean(const std::vector<double>& values);           // 0 for an empty vector
double sample_stddev(const std::vector<double>& values);  // 0 for fewer than 2 values
// p in [0, 1]; `sorted` ascending and non-empty (throws std::invalid_argument otherwise).
double percentile_sorted(const std::vector<double>& sorted, double p);
double percentile(std::vector<double> values, double p);
Summary summarize(std::vector<double> values);

}  // namespace tvie
