// The projection's pieces (tvie/projection.hpp): roofline, sharding accounting, ring all-reduce, M/D/1 queue.
#include <catch2/catch.hpp>

#include <cmath>

#include <tvie/tvie.hpp>

using namespace tvie;

TEST_CASE("roofline: the slower of compute and memory, divided by the efficiency", "[projection][pure]") {
  // 989.5 TFLOP at 989.5 TFLOPS = 1 s; 3.35 GB at 3350 GB/s = 1 ms: compute-bound.
  auto t = roofline_time(989.5e12, 3.35e9, 989.5, 3350, 0.5);
  CHECK(t.bound_s == Approx(1.0));
  CHECK(t.estimate_s == Approx(2.0));
  CHECK_FALSE(t.memory_bound);
  // Decoding-like: 2 FLOP per byte of weights read: bandwidth decides.
  t = roofline_time(2 * 16e9, 16e9, 121, 300, 1.0);
  CHECK(t.memory_bound);
  CHECK(t.bound_s == Approx(16e9 / 300e9));
  CHECK_THROWS_AS(roofline_time(1, 1, -1, 300, 1), InvalidArgument);  // a card without the unit: no projection
  CHECK_THROWS_AS(roofline_time(1, 1, 100, 300, 0), InvalidArgument);
  CHECK_THROWS_AS(roofline_time(1, 1, 100, 300, 1.5), InvalidArgument);
}

TEST_CASE("sharding accounting: ZeRO stages split what they say, and the cards needed", "[projection][pure]") {
  PredictedTrainingMemory w;  // an 8B model in fp32 with AdamW, one card's view
  w.parameters = 32'000'000'000;
  w.gradients = 32'000'000'000;
  w.optimizer_state = 64'000'000'000;
  w.weight_copies = 0;
  w.activations = 2'000'000'000;
  w.batch = 1000;
  w.peak = w.parameters + w.gradients + w.optimizer_state + w.activations + w.batch + 500'000'000;
  const auto none = shard_training_memory(w, 8, ShardingStage::none);
  CHECK(none.total == w.peak);  // nothing split: one card holds all
  CHECK(none.transients == 500'000'000);
  const auto z1 = shard_training_memory(w, 8, ShardingStage::optimizer);
  CHECK(z1.optimizer_state == 8'000'000'000);
  CHECK(z1.gradients == w.gradients);
  const auto z2 = shard_training_memory(w, 8, ShardingStage::gradients);
  CHECK(z2.gradients == 4'000'000'000);
  CHECK(z2.parameters == w.parameters);
  const auto z3 = shard_training_memory(w, 8, ShardingStage::parameters);
  CHECK(z3.parameters == 4'000'000'000);
  CHECK(z3.activations == w.activations);  // per card, not split
  CHECK(z3.total == 4'000'000'000 * 4 + 2'000'000'000 + 1000 + 500'000'000);
  // On 80 GB cards (GB = 10^9 B): replicated never fits (130.5 GB); each stage from the fewest cards that do.
  const int64_t gb80 = 80'000'000'000;
  CHECK(cards_needed(w, gb80, ShardingStage::none) == 0);
  CHECK(cards_needed(w, gb80, ShardingStage::optimizer) == 5);            // 64 + 64/n + 2.5 <= 80: n >= 4.74
  CHECK(cards_needed(w, gb80, ShardingStage::gradients) == 3);            // 32 + 96/n + 2.5 <= 80: n >= 2.11
  CHECK(cards_needed(w, gb80, ShardingStage::parameters) == 2);           // 128/n + 2.5 <= 80: n >= 1.65
  CHECK(cards_needed(w, 2'000'000'000, ShardingStage::parameters) == 0);  // activations alone do not fit
  PredictedTrainingMemory unknown;
  CHECK_THROWS_AS(shard_training_memory(unknown, 2, ShardingStage::none), InvalidArgument);
  CHECK_THROWS_AS(shard_training_memory(w, 0, ShardingStage::none), InvalidArgument);
}

TEST_CASE("ring all-reduce: 2 (n - 1) / n of the bytes over the link", "[projection][pure]") {
  CHECK(ring_allreduce_seconds(1e9, 1, 900) == 0);
  CHECK(ring_allreduce_seconds(1e9, 2, 100) == Approx(0.01));  // 2 x 1/2 x 1 GB / 100 GB/s
  CHECK(ring_allreduce_seconds(1e9, 8, 900) == Approx(2.0 * 7 / 8 / 900));
  CHECK_THROWS_AS(ring_allreduce_seconds(1e9, 2, -1), InvalidArgument);
}

namespace {

// Erlang's exact M/D/1 waiting-time distribution (Crommelin 1932): P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)}
// [lambda (k D - t)]^k / k! exp(-lambda (k D - t)); alternating terms, stable at moderate t / D.
double md1_cdf(double lambda, double D, double t) {
  long double sum = 0;
  for (int k = 0; k <= static_cast<int>(std::floor(t / D)); ++k) {
    const long double x = lambda * (k * D - t);
    sum += std::pow(x, k) / std::tgamma(k + 1.0L) * std::exp(-x);
  }
  return static_cast<double>((1 - lambda * D) * sum);
}

}  // namespace

TEST_CASE("M/D/1: the simulated waiting-time quantile against Erlang's exact distribution", "[projection][pure]") {
  const double D = 0.010;  // 10 ms service
  for (double rho : {0.3, 0.6, 0.8}) {
    INFO("utilisation " << rho);
    const double lambda = rho / D;
    // Below the atom at zero (P(W = 0) = 1 - rho) the quantile is 0.
    CHECK(md1_waiting_quantile_s(lambda, D, (1 - rho) * 0.9) == 0);
    for (double q : {0.9, 0.99}) {
      const double w = md1_waiting_quantile_s(lambda, D, q);
      CHECK(md1_cdf(lambda, D, w) == Approx(q).margin(0.002));  // the exact CDF at the simulated quantile
    }
  }
  CHECK(std::isinf(md1_waiting_quantile_s(100, 0.010, 0.99)));  // utilisation 1
  // The highest rate under a p99 bound: service + p99 wait within it, and a little more breaks it.
  const double rate = md1_max_rate_per_s(D, 0.050);
  CHECK(rate > 0);
  CHECK(rate < 1 / D);
  CHECK(D + md1_waiting_quantile_s(rate, D, 0.99) <= 0.050);
  CHECK(D + md1_waiting_quantile_s(rate * 1.01, D, 0.99) > 0.050 * 0.98);
  CHECK(md1_max_rate_per_s(0.060, 0.050) == 0);  // the service alone is over the bound
}
