// Roofline, sharding accounting, ring all-reduce and the M/D/1 queue (tvie/projection.hpp).
#include <tvie/projection.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs, double efficiency) {
  if (!(flops >= 0)) throw InvalidArgument("roofline.flops", cat(flops), ">= 0");
  if (!(bytes >= 0)) throw InvalidArgument("roofline.bytes", cat(bytes), ">= 0");
  if (!(peak_tflops > 0)) throw InvalidArgument("roofline.peak_tflops", cat(peak_tflops), "> 0 (a published peak)");
  if (!(bandwidth_gbs > 0)) throw InvalidArgument("roofline.bandwidth_gbs", cat(bandwidth_gbs), "> 0");
  if (!(efficiency > 0 && efficiency <= 1)) throw InvalidArgument("roofline.efficiency", cat(efficiency), "0 < e <= 1");
  const double compute_s = flops / (peak_tflops * 1e12), memory_s = bytes / (bandwidth_gbs * 1e9);
  RooflineTime t;
  t.memory_bound = memory_s >= compute_s;
  t.bound_s = std::max(compute_s, memory_s);
  t.estimate_s = t.bound_s / efficiency;
  return t;
}

const char* to_string(ShardingStage stage) {
  switch (stage) {
    case ShardingStage::none:
      return "none (replicated)";
    case ShardingStage::optimizer:
      return "zero-1 (optimizer state sharded)";
    case ShardingStage::gradients:
      return "zero-2 (optimizer state and gradients sharded)";
    case ShardingStage::parameters:
      return "zero-3 (optimizer state, gradients and parameters sharded)";
  }
  return "?";
}

PerCardTrainingMemory shard_training_memory(const PredictedTrainingMemory& w, int64_t cards, ShardingStage stage) {
  if (w.peak < 0) throw InvalidArgument("sharding.ledger", "no predicted peak", "a workload with a trace");
  if (cards < 1) throw InvalidArgument("sharding.cards", cat(cards), ">= 1");
  const auto split = [&](int64_t bytes, ShardingStage from) {
    return stage >= from ? (bytes + cards - 1) / cards : bytes;  // rounded up: a shard is whole bytes
  };
  PerCardTrainingMemory m;
  const int64_t copies = std::max<int64_t>(w.weight_copies, 0), activations = std::max<int64_t>(w.activations, 0);
  m.parameters = split(w.parameters, ShardingStage::parameters);
  m.gradients = split(w.gradients, ShardingStage::gradients);
  m.optimizer_state = split(w.optimizer_state, ShardingStage::optimizer);
  m.weight_copies = split(copies, ShardingStage::parameters);
  m.activations = activations;
  m.batch = w.batch;
  m.transients =
      std::max<int64_t>(0, w.peak - (w.parameters + w.gradients + w.optimizer_state + copies + activations + w.batch));
  m.total = m.parameters + m.gradients + m.optimizer_state + m.weight_copies + m.activations + m.batch + m.transients;
  return m;
}

int64_t cards_needed(const PredictedTrainingMemory& whole, int64_t card_bytes, ShardingStage stage, int64_t max_cards) {
  if (shard_training_memory(whole, 1, stage).total <= card_bytes) return 1;
  if (stage == ShardingStage::none || shard_training_memory(whole, max_cards, stage).total > card_bytes) return 0;
  int64_t lo = 1, hi = max_cards;  // total(lo) > card_bytes >= total(hi); the total falls with the cards
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (shard_training_memory(whole, mid, stage).total <= card_bytes ? hi : lo) = mid;
  }
  return hi;
}

double ring_allreduce_seconds(double bytes, int64_t cards, double link_gbs) {
  if (cards < 1) throw InvalidArgument("allreduce.cards", cat(cards), ">= 1");
  if (cards == 1) return 0;
  if (!(link_gbs > 0)) throw InvalidArgument("allreduce.link_gbs", cat(link_gbs), "> 0 (a published link)");
  const double n = static_cast<double>(cards);
  return 2.0 * (n - 1) / n * bytes / (link_gbs * 1e9);
}

double md1_waiting_quantile_s(double rate_per_s, double service_s, double quantile) {
  if (!(rate_per_s > 0)) throw InvalidArgument("queue.rate_per_s", cat(rate_per_s), "> 0");
  if (!(service_s > 0)) throw InvalidArgument("queue.service_s", cat(service_s), "> 0");
  if (!(quantile > 0 && quantile < 1)) throw InvalidArgument("queue.quantile", cat(quantile), "0 < q < 1");
  if (rate_per_s * service_s >= 1) return std::numeric_limits<double>::infinity();
  constexpr int64_t kWarmup = 100000, kSamples = 2000000;
  std::mt19937_64 gen(0x7e57);  // fixed: the same figure every run
  std::exponential_distribution<double> gap(rate_per_s);
  std::vector<double> waits;
  waits.reserve(kSamples);
  double w = 0;  // Lindley: the next arrival waits for what is left of this one's wait and service
  for (int64_t i = 0; i < kWarmup + kSamples; ++i) {
    if (i >= kWarmup) waits.push_back(w);
    w = std::max(0.0, w + service_s - gap(gen));
  }
  const auto k = static_cast<size_t>(std::ceil(quantile * static_cast<double>(kSamples))) - 1;
  std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(k), waits.end());
  return waits[k];
}

double md1_max_rate_per_s(double service_s, double bound_s, double quantile) {
  if (!(service_s > 0)) throw InvalidArgument("queue.service_s", cat(service_s), "> 0");
  if (service_s > bound_s) return 0;
  double lo = 0, hi = 1.0 / service_s;  // utilisation below 1
  while (hi - lo > 1e-3 * hi) {
    const double mid = 0.5 * (lo + hi);
    (service_s + md1_waiting_quantile_s(mid, service_s, quantile) <= bound_s ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tvie
