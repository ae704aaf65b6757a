// The pieces of oneDNN's own arithmetic that the written-out scratch rules share (onednn_scratch.cpp,
// onednn_scratch_bf16.cpp): rounding, scratchpad entry alignment, best_divider, the thread splits of a
// backward-weights primitive, the per-core L2 size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include <unistd.h>

namespace tvie::trace::onednn::rules {

inline int64_t round_up(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kEntry = 128;            // each scratchpad entry's alignment slack
constexpr int64_t kBarrier = 4096 + 4096;  // one barrier context (simple_barrier::ctx_t) and its alignment

// oneDNN's best_divider (jit_uni_1x1_conv_utils.hpp): the block in [lo, hi] that wastes least of `value`.
inline int64_t best_divider(int64_t value, int64_t lo, int64_t hi, bool find_max, int64_t step = 1) {
  hi = std::max<int64_t>(1, std::min(hi, value));
  lo = std::max<int64_t>(1, std::min(lo, hi));
  float min_loss = std::numeric_limits<float>::max();
  int64_t best = hi;
  for (int64_t d = hi; d >= lo; d -= step) {
    const float loss = static_cast<float>(round_up(value, d) - value) / static_cast<float>(round_up(value, d));
    if ((find_max && loss < min_loss) || (!find_max && loss <= min_loss)) {
      min_loss = loss;
      best = d;
    }
  }
  return best;
}

// How a backward-weights primitive splits its threads: over the batch (each such thread reduces into its own fp32
// weight gradient), output-channel blocks and input-channel blocks.
struct Split {
  int64_t mb = 1, oc = 1, ic = 1;
  int64_t threads() const { return mb * oc * ic; }
};

// Both kernels' balance(): every split of the threads over the batch (at most `mb_work` ways), output-channel
// blocks and then input-channel blocks, the last of the cheapest by `cost` (in the kernel's own arithmetic: float
// for the k x k kernel, integers for the 1x1); a batch split of more than half the threads but not all of them is
// widened to all (at most `mb_widen`).
template <typename Cost>
Split cheapest_split(int64_t threads, int64_t mb_work, int64_t nb_oc, int64_t nb_ic, int64_t mb_widen,
                     const Cost& cost) {
  Split best;
  auto best_cost = cost(1, 1, 1);
  for (int64_t n_mb = 1; n_mb <= std::min(threads, mb_work); ++n_mb) {
    const int64_t par = threads / n_mb;
    for (int64_t n_oc = 1; n_oc <= std::min(par, nb_oc); ++n_oc) {
      const int64_t n_ic = std::min(par / n_oc, nb_ic);
      const auto v = cost(n_mb, n_oc, n_ic);
      if (v <= best_cost) {
        best_cost = v;
        best = {n_mb, n_oc, n_ic};
      }
    }
  }
  if (best.mb > threads / 2 && best.mb < threads) best.mb = std::min(mb_widen, threads);
  return best;
}
constexpr int64_t kPage = 4096;  // the cpu_reducer's alignment

// oneDNN's per-core L2 size (platform::get_per_core_cache_size(2): the data cache's size over the cores that share
// it, from cpuid; 512 KiB where it cannot tell). glibc reads the same cpuid leaves; an L2 is private to a core on
// the x86 CPUs oneDNN tunes for. It decides the 1x1 kernel's thread groups for few positions and wide channels
// (2048 -> 1024 at 7x7, batch 2, 2 threads, on an Intel Xeon with 2 MiB of L2 per core: checked to the byte).
inline int64_t l2_cache_bytes_per_core() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? l2 : 512 * 1024;
}

}  // namespace tvie::trace::onednn::rules
