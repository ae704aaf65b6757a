// The max-QPS search with a bound on what is left of it: before each probe, the search says how long the probes
// it may still run after this one take at most, so that a user watching a slow search knows what to expect.
#pragma once

#include <cstdint>
#include <functional>

#include <tvie/serve.hpp>

namespace tvie::detail {

// search_max_qps's rule, with two more arguments: probe_seconds(qps) is how long a probe at that rate runs (it
// must not grow with the rate: higher rates finish their queries sooner), and announce(qps, rest_s) is called
// before each probe with the longest the search can still take after it:
//   first probe at q:      max(doubling from q, halving from q)
//   doubling (pass at q):  probes at 2q, 4q, ... (as many as remain) + refine_steps probes at q
//   halving (miss at q):   probes at q/2, q/4, ... (not below lowest_qps) + refine_steps at the lowest of them
//   bisecting:             the refinements left, each at most as long as one at the last passing rate
QpsBracket search_max_qps_announcing(double start_qps, int64_t refine_steps, const std::function<bool(double)>& meets,
                                     double lowest_qps, const std::function<bool()>& hopeless,
                                     const std::function<double(double)>& probe_seconds,
                                     const std::function<void(double qps, double rest_s)>& announce);

}  // namespace tvie::detail
