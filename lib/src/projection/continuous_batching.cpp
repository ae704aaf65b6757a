// Continuous batching of generation (tvie/plan.hpp, ContinuousServer): the serving engines' scheduling (Orca's
// iteration-level scheduling, vLLM), simulated on projected times.
//
// The server decodes up to `slots` requests together, one token each per iteration, an iteration with n requests
// taking step_s(n). At each iteration's end, the requests that have arrived (first come, first served, as many as
// slots are free) have their prompts' forward together (the prefill, prefill_s(k) for k of them, which makes their
// first tokens while the decoding requests wait: vLLM's default, without chunked prefill) and join the next
// iteration; a request leaves with its last token, freeing its slot at that iteration's end. Unlike static batches,
// nobody waits for a batch to fill or for the longest request of a batch to finish.
//
// The simulation jumps from event to event (an arrival's iteration boundary, a completion), not iteration by
// iteration, so a 256-token request costs as much to simulate as a 2-token one.
#include <tvie/plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {

constexpr int64_t kWarmupRequests = 400, kMeasuredRequests = 4000;
constexpr uint64_t kSeed = 20261202;

void check(const ContinuousServer& s) {
  if (!s.prefill_s) throw InvalidArgument("continuous.prefill_s", "none", "the prompts' forward's time per batch");
  if (s.new_tokens < 1) throw InvalidArgument("continuous.new_tokens", cat(s.new_tokens), ">= 1");
  if (s.slots < 1) throw InvalidArgument("continuous.slots", cat(s.slots), ">= 1");
  if (!s.step_s) throw InvalidArgument("continuous.step_s", "none", "a decoding iteration's time per occupancy");
}

// Unit-rate Poisson arrival times (exponential gaps from a fixed seed): the same stream scaled by 1 / rate for every
// rate, so that the quantile grows with the rate as it should and a bisection over rates converges.
const std::vector<double>& unit_arrivals() {
  static const std::vector<double> times = [] {
    std::mt19937_64 gen(kSeed);
    std::vector<double> t(kWarmupRequests + kMeasuredRequests);
    double now = 0;
    for (auto& x : t) {
      const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;  // [0, 1): 53 random bits
      now += -std::log1p(-u);
      x = now;
    }
    return t;
  }();
  return times;
}

}  // namespace

double continuous_capacity_per_s(const ContinuousServer& s) {
  check(s);
  const double full = s.prefill_s(s.slots) + static_cast<double>(s.new_tokens - 1) * s.step_s(s.slots);
  return full > 0 ? static_cast<double>(s.slots) / full : std::numeric_limits<double>::infinity();
}

double continuous_latency_quantile_s(const ContinuousServer& s, double rate_per_s, double quantile) {
  check(s);
  if (!(rate_per_s > 0)) throw InvalidArgument("continuous.rate_per_s", cat(rate_per_s), "> 0");
  if (!(quantile > 0 && quantile < 1)) throw InvalidArgument("continuous.quantile", cat(quantile), "0 < q < 1");
  // At or beyond what full slots sustain the queue grows without end.
  if (rate_per_s >= continuous_capacity_per_s(s)) return std::numeric_limits<double>::infinity();
  const auto& unit = unit_arrivals();
  const auto n_requests = static_cast<int64_t>(unit.size());
  const auto arrival = [&](int64_t i) { return unit[static_cast<size_t>(i)] / rate_per_s; };
  const int64_t decode_steps = s.new_tokens - 1;
  // The decoding requests by the iteration at whose end they finish (iterations counted from the start).
  using Entry = std::pair<int64_t, int64_t>;  // finishing iteration, request
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> active;
  std::vector<double> latencies;
  latencies.reserve(kMeasuredRequests);
  const auto done = [&](int64_t request, double now) {
    if (request >= kWarmupRequests) latencies.push_back(now - arrival(request));
  };
  double now = 0;
  int64_t iteration = 0, next = 0;  // next: the first request not yet admitted
  while (next < n_requests || !active.empty()) {
    // Admit the requests that have arrived, as many as slots are free: their prefill together.
    int64_t k = 0;
    while (next + k < n_requests && arrival(next + k) <= now && static_cast<int64_t>(active.size()) + k < s.slots) ++k;
    if (k > 0) {
      now += s.prefill_s(k);
      for (int64_t j = next; j < next + k; ++j) {
        if (decode_steps == 0)
          done(j, now);
        else
          active.emplace(iteration + decode_steps, j);
      }
      next += k;
      continue;  // more may have arrived meanwhile
    }
    if (active.empty()) {  // idle until the next arrival
      if (next < n_requests) now = std::max(now, arrival(next));
      continue;
    }
    const auto n = static_cast<int64_t>(active.size());
    const double step = s.step_s(n);
    k = active.top().first - iteration;  // iterations until the next completion
    if (next < n_requests && n < s.slots && step > 0) {
      // A free slot and a request on its way: it joins at the end of the iteration during which it arrives.
      const double until = arrival(next) - now;
      k = std::min<int64_t>(k, std::max<int64_t>(1, static_cast<int64_t>(std::ceil(until / step))));
    }
    now += static_cast<double>(k) * step;
    iteration += k;
    while (!active.empty() && active.top().first == iteration) {
      done(active.top().second, now);
      active.pop();
    }
  }
  std::sort(latencies.begin(), latencies.end());
  const auto at = std::min(latencies.size() - 1, static_cast<size_t>(quantile * static_cast<double>(latencies.size())));
  return latencies[at];
}

double continuous_max_rate_per_s(const ContinuousServer& s, double bound_s, double quantile) {
  check(s);
  if (!(bound_s > 0)) throw InvalidArgument("continuous.bound_s", cat(bound_s), "> 0");
  // A request alone: its prefill and its decoding iterations at occupancy 1.
  const double alone = s.prefill_s(1) + static_cast<double>(s.new_tokens - 1) * s.step_s(1);
  if (alone > bound_s) return 0;
  double lo = 0, hi = continuous_capacity_per_s(s);
  if (std::isinf(hi)) return hi;
  for (int i = 0; i < 24; ++i) {
    const double mid = 0.5 * (lo + hi);
    (continuous_latency_quantile_s(s, mid, quantile) <= bound_s ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tvie
