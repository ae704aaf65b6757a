#include <catch2/catch.hpp>

#include <tvie/stats.hpp>

TEST_CASE("percentile follows LoadGen's rule sorted[min(n-1, floor(p*n))]", "[stats]") {
  const std::vector<double> v = {4, 1, 3, 2};  // sorted: 1 2 3 4
  CHECK(tvie::percentile(v, 0.0) == 1);
  CHECK(tvie::percentile(v, 0.25) == 2);
  CHECK(tvie::percentile(v, 0.5) == 3);
  CHECK(tvie::percentile(v, 0.9) == 4);
  CHECK(tvie::percentile(v, 1.0) == 4);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);  // 1..100, reversed
  CHECK(tvie::percentile(hundred, 0.50) == 51);
  CHECK(tvie::percentile(hundred, 0.90) == 91);
  CHECK(tvie::percentile(hundred, 0.99) == 100);
  // p x n landing just below an integer in floating point (0.29 x 100 = 28.999999999999996): the index is
  // still 29, as in exact arithmetic.
  CHECK(tvie::percentile(hundred, 0.29) == 30);
  CHECK(tvie::percentile(hundred, 0.57) == 58);
  CHECK(tvie::percentile(hundred, 0.999) == 100);  // floor(99.9) = 99: the largest
  // p99.9 needs n >= 1000 to be other than the maximum.
  std::vector<double> thousand, two_thousand;
  for (int i = 1; i <= 1000; ++i) thousand.push_back(i);
  for (int i = 1; i <= 2000; ++i) two_thousand.push_back(i);
  CHECK(tvie::percentile(thousand, 0.999) == 1000);      // sorted[999]
  CHECK(tvie::percentile(two_thousand, 0.999) == 1999);  // sorted[1998]
  CHECK(tvie::summarize(two_thousand).p999 == 1999);
  CHECK(tvie::summarize(two_thousand).p99 == 1981);  // sorted[1980]
  CHECK_THROWS_AS(tvie::percentile({}, 0.5), std::invalid_argument);
  CHECK_THROWS_AS(tvie::percentile({1.0}, 1.5), std::invalid_argument);
}

TEST_CASE("summary of a single value", "[stats]") {
  const auto s = tvie::summarize({7.5});
  CHECK(s.count == 1);
  CHECK(s.mean == 7.5);
  CHECK(s.stddev == 0);
  CHECK(s.min == 7.5);
  CHECK(s.max == 7.5);
  CHECK(s.p50 == 7.5);
  CHECK(s.p99 == 7.5);
}

TEST_CASE("summary with ties and a known sample standard deviation", "[stats]") {
  // 2 4 4 4 5 5 7 9: mean 5, sum of squared deviations 32, sample variance 32/7.
  const auto s = tvie::summarize({9, 4, 2, 4, 5, 4, 7, 5});
  CHECK(s.count == 8);
  CHECK(s.mean == Approx(5.0));
  CHECK(s.stddev == Approx(std::sqrt(32.0 / 7.0)));
  CHECK(s.min == 2);
  CHECK(s.max == 9);
  CHECK(s.p50 == 5);  // sorted[4]
  CHECK(s.p90 == 9);  // sorted[7]
  CHECK(s.p95 == 9);
  const auto ties = tvie::summarize({3, 3, 3});
  CHECK(ties.stddev == 0);
  CHECK(ties.p50 == 3);
  CHECK(ties.p99 == 3);
}

TEST_CASE("summary of nothing is all zeros", "[stats]") {
  const auto s = tvie::summarize({});
  CHECK(s.count == 0);
  CHECK(s.mean == 0);
  CHECK(tvie::mean({}) == 0);
  CHECK(tvie::sample_stddev({1.0}) == 0);
}
