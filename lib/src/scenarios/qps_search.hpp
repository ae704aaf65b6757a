// The max-QPS search with a bound on what is left of it: before each probe, the search says how long the probes
// it may still run after this one take at most, so that a user watching a slow search knows what to expect.
#pragma once

#include <cstdint>
#include <functional>

#include <tvie/serve.hpp>

namespace tvie::detail {

// The longest the rest of the search can take after a probe, on each of the two branches its outcome opens; before
// the probe only the worse is known, after it the branch taken.
struct RestBound {
  double if_meets_s = 0, if_misses_s = 0;
  double worst_s() const { return if_meets_s > if_misses_s ? if_meets_s : if_misses_s; }
  double after_s(bool met) const { return met ? if_meets_s : if_misses_s; }
};

// search_max_qps's rule, with two more arguments: probe_seconds(qps) is how long a probe at that rate runs (it
// must not grow with the rate: higher rates finish their queries sooner), and announce(qps, rest) is called
// before each probe with the longest the search can still take after it, by the probe's outcome:
//   probe at q                meets                                misses
//   first                     doubling from q                      halving from q
//   doubling (a pass before)  probes at 2q, 4q, ... (as many as     refine_steps probes at the last passing rate
//                             remain) + refine_steps probes at q
//   halving (a miss before)   refine_steps probes at q             probes at q/2, q/4, ... (not below lowest_qps)
//                                                                  + refine_steps at the lowest of them
//   bisecting                 the refinements left, each at most as long as one at the last passing rate
QpsBracket search_max_qps_announcing(double start_qps, int64_t refine_steps, const std::function<bool(double)>& meets,
                                     double lowest_qps, const std::function<bool()>& hopeless,
                                     const std::function<double(double)>& probe_seconds,
                                     const std::function<void(double qps, const RestBound& rest)>& announce);

}  // namespace tvie::detail
