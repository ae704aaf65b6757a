// The pieces of projecting a measured workload onto cards it never ran on (issue 13): the roofline, the
// data-parallel sharding accounting, the ring all-reduce, and the M/D/1 queue behind a serving rate. Pure
// functions of their arguments: `tvie plan` composes them with the catalog (tvie/catalog.hpp) and the predicted
// ledger (tvie/predict.hpp). Units in the names; seconds unless a name says otherwise.
#pragma once

#include <cstdint>

#include <tvie/predict.hpp>

namespace tvie {

// --- roofline ---
// bound_s = max(flops / peak, bytes / bandwidth): the time at the datasheet's dense peak and bandwidth, a lower
// bound no run beats. estimate_s = bound_s / efficiency: what a run achieving that fraction of the bound takes.
struct RooflineTime {
  double bound_s = 0;
  double estimate_s = 0;
  bool memory_bound = false;  // bytes / bandwidth >= flops / peak
};
// Throws InvalidArgument unless flops, bytes >= 0, peak_tflops, bandwidth_gbs > 0 and 0 < efficiency <= 1.
RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs, double efficiency);

// --- data-parallel sharding, as accounting ---
// ZeRO's stages (Rajbhandari et al. 2020): 1 splits the optimizer state over the N cards, 2 also the gradients,
// 3 also the parameters (and the amp weight copies). Activations, the batch and the transients stay per card.
enum class ShardingStage { none = 0, optimizer = 1, gradients = 2, parameters = 3 };
const char* to_string(ShardingStage stage);

struct PerCardTrainingMemory {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, weight_copies = 0;  // after sharding
  int64_t activations = 0, batch = 0, transients = 0;  // per card; transients = predicted peak - the categories
  int64_t total = 0;                                   // the predicted peak per card
};
// `whole`: one card's predicted ledger at the per-card batch (predict_training_memory). Requires whole.peak >= 0
// and cards >= 1 (InvalidArgument otherwise). Stage 3's gather buffer (one layer's full parameters at a time) is
// not counted.
PerCardTrainingMemory shard_training_memory(const PredictedTrainingMemory& whole, int64_t cards, ShardingStage stage);
// The fewest cards, 1 .. max_cards, whose per-card total is at most card_bytes; 0 when none is enough (the
// replicated part alone does not fit).
int64_t cards_needed(const PredictedTrainingMemory& whole, int64_t card_bytes, ShardingStage stage,
                     int64_t max_cards = 65536);
// A ring all-reduce of `bytes` over `cards`, each with `link_gbs` of bus bandwidth: 2 (n - 1) / n x bytes / link
// (the bus bandwidth of nccl-tests: docs/metrics.md); 0 for one card.
double ring_allreduce_seconds(double bytes, int64_t cards, double link_gbs);

// --- serving: the M/D/1 queue ---
// Poisson arrivals at `rate_per_s`, one server with a deterministic service time. The q-quantile of the time a
// request waits before its service starts, from Lindley's recursion W' = max(0, W + service - A) over 2,000,000
// simulated arrivals after 100,000 discarded (fixed seed: the same figure every run; within about 1% of the
// exact distribution, tests/test_projection.cpp). +infinity at utilisation >= 1.
double md1_waiting_quantile_s(double rate_per_s, double service_s, double quantile);
// The highest Poisson rate whose `quantile` of the response time (wait + service) is at most bound_s (bisection,
// to 0.1%); 0 when the service alone exceeds the bound.
double md1_max_rate_per_s(double service_s, double bound_s, double quantile = 0.99);

}  // namespace tvie
