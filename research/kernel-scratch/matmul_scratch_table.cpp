// oneDNN's bf16 matmul scratch on its avx512_bf16 brgemm kernels: the prediction's two sources, oneDNN's own bookings
// (predict/onednn_bookings.hpp, asked of the oneDNN inside LibTorch) and the fit written out for a LibTorch that
// cannot be asked (predict/onednn_scratch.cpp), against what LibTorch allocates, for a Linear's three products on
// random shapes, as a Markdown table on stdout (research/kernel-scratch/conv-scratch-table.sh matmul writes it to
// research/kernel-scratch/results/bf16-matmul-scratch-avx512.md). Only meaningful where bf16 matmuls run on those
// kernels (tvie::cpu_bf16_matmul_kernels() == onednn_avx512_bf16) and the bookings can be asked: elsewhere it says so
// and exits 2.
#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <torch/version.h>
#include <tvie/tvie.hpp>

#include "predict/cpu_kernels.hpp"
#include "predict/onednn_bookings.hpp"
#include "predict/onednn_scratch.hpp"

using namespace tvie;

namespace {

// How far `a` is from `b`, in percent of `b`.
double off(int64_t a, int64_t b) { return 100.0 * static_cast<double>(a - b) / static_cast<double>(b > 0 ? b : 1); }

struct Tally {
  int equal = 0, total = 0;
  double low = 0, high = 0;
  void add(int64_t a, int64_t b) {
    const double d = off(a, b);
    low = total == 0 ? d : std::min(low, d);
    high = total == 0 ? d : std::max(high, d);
    ++total;
    if (a == b) ++equal;
  }
  std::string text() const {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%d of %d | %+.1f%% .. %+.1f%%", equal, total, low, high);
    return buffer;
  }
};

}  // namespace

int main() {
  log::set_level(log::Level::warn);
  std::string how;
  if (cpu_bf16_matmul_kernels() != CpuBf16Matmul::onednn_avx512_bf16) {
    std::fprintf(stderr,
                 "matmul_scratch_table: this CPU does not run bf16 matmuls on oneDNN's avx512_bf16 brgemm kernels "
                 "(needs avx512_bf16 without AMX); nothing to compare\n");
    return 2;
  }
  if (!trace::onednn::bookings_available(&how)) {
    std::fprintf(stderr, "matmul_scratch_table: LibTorch's oneDNN cannot be asked here (%s)\n", how.c_str());
    return 2;
  }
  // The shapes of research/kernel-scratch/onednn-bookings/matmul.py: 8-300 rows, 32-600 input and 32-320 output
  // features.
  std::mt19937 random(20261204);
  std::uniform_int_distribution<int64_t> rows_of(8, 300), in_of(32, 600), out_of(32, 320);
  std::vector<std::array<int64_t, 3>> shapes(60);
  for (auto& s : shapes) s = {rows_of(random), in_of(random), out_of(random)};
  const char* names[3] = {"forward", "input gradient", "weight gradient"};
  std::printf("LibTorch %s; oneDNN: %s.\n\n", TORCH_VERSION, how.c_str());
  std::printf(
      "| product | threads | bookings equal to the allocation | bookings vs allocation | fit equal to the bookings | "
      "fit vs bookings |\n|---|---|---|---|---|---|\n");
  const auto each = [](const trace::LinearProducts& l) {
    return std::array<int64_t, 3>{l.forward, l.input_grad, l.weight_grad};
  };
  for (const int threads : {1, 2, 3, 4}) {
    std::array<Tally, 3> booked_vs_measured, fit_vs_booked;
    for (const auto& [rows, in, out] : shapes) {
      // The forward with its bias, as torch::linear hands a 2-D input to oneDNN (addmm: the bias a sum).
      const auto booked = trace::onednn::bf16_linear_bookings(rows, in, out, true, threads);
      if (!booked) {
        std::fprintf(stderr, "matmul_scratch_table: oneDNN has no kernel for a product of %lld x %lld -> %lld\n",
                     static_cast<long long>(rows), static_cast<long long>(in), static_cast<long long>(out));
        return 1;
      }
      const auto b = each(*booked), m = each(trace::onednn::measure_bf16_linear(rows, in, out, threads)),
                 f = each(trace::onednn::brgemm_bf16_linear_scratch(rows, in, out, threads));
      for (int p = 0; p < 3; ++p) {
        booked_vs_measured[p].add(b[p], m[p]);
        fit_vs_booked[p].add(f[p], b[p]);
      }
    }
    for (int p = 0; p < 3; ++p)
      std::printf("| %s | %d | %s | %s |\n", names[p], threads, booked_vs_measured[p].text().c_str(),
                  fit_vs_booked[p].text().c_str());
  }
  return 0;
}
