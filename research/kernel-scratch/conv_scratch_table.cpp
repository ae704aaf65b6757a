// oneDNN's convolution scratch as the prediction writes it out (lib/src/predict/onednn_scratch.cpp) against what the
// kernels allocate, per convolution, as a Markdown table on stdout (research/kernel-scratch/conv-scratch-table.sh
// writes it to research/kernel-scratch/results/{bf16,fp32}-conv-scratch-avx512.md and fp32-conv-scratch-avx2.md).
// `conv_scratch_table [bf16|fp32|avx2]`; the shapes: every
// convolution of cnn tiny/small and resnet tiny at batches 8 and 16, and ResNet-50's and other widths at batches
// 1-5, at 1, 2 and 4 threads (fp32 adds more: 4-15 input channels, odd sizes, ResNet-50's strided ones).
// bf16 is only meaningful where tvie::cpu_bf16_conv_scratch_modelled() (avx512_bf16 without AMX), fp32 where oneDNN
// may use AVX-512, avx2 (fp32 on oneDNN's AVX2 kernels) where it may use AVX2 and not AVX-512 (an AVX2 CPU, or one
// under ONEDNN_MAX_CPU_ISA=AVX2): elsewhere it says so and exits 2. fp32 rows LibTorch keeps to its own kernels are
// left out.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/version.h>
#include <tvie/tvie.hpp>

#include "predict/cpu_kernels.hpp"
#include "predict/onednn_scratch.hpp"

using namespace tvie;
using trace::onednn::ConvShape;

namespace {

std::string cell(int64_t rule, int64_t measured) {
  if (rule == measured) return std::to_string(measured) + " =";
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%lld / %lld (%+.1f%%)", static_cast<long long>(rule),
                static_cast<long long>(measured),
                100.0 * static_cast<double>(rule - measured) / static_cast<double>(measured > 0 ? measured : 1));
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  log::set_level(log::Level::warn);
  const std::string dtype = argc > 1 ? argv[1] : "bf16";
  if (dtype != "bf16" && dtype != "fp32" && dtype != "avx2") {
    std::fprintf(stderr, "conv_scratch_table: dtype '%s' is not one of bf16, fp32, avx2\n", dtype.c_str());
    return 2;
  }
  const bool avx2 = dtype == "avx2";
  const bool fp32 = dtype == "fp32" || avx2;
  const auto usable = describe_host().cpu_features_usable;
  const bool has_avx512 = std::find(usable.begin(), usable.end(), "avx512f") != usable.end();
  if (avx2 && (has_avx512 || std::find(usable.begin(), usable.end(), "avx2") == usable.end())) {
    std::fprintf(stderr,
                 "conv_scratch_table: avx2: oneDNN may use %s here; the rule is its AVX2 kernels' (run it on an AVX2 "
                 "CPU or under ONEDNN_MAX_CPU_ISA=AVX2)\n",
                 has_avx512 ? "AVX-512" : "no AVX2");
    return 2;
  }
  if (dtype == "fp32" && !has_avx512) {
    std::fprintf(stderr,
                 "conv_scratch_table: oneDNN may not use AVX-512 here; the fp32 rule is its AVX-512 kernels'\n");
    return 2;
  }
  if (!fp32 && !cpu_bf16_conv_scratch_modelled()) {
    std::fprintf(stderr,
                 "conv_scratch_table: this CPU does not run bf16 convolutions on oneDNN's avx512_core_bf16 kernels "
                 "(needs avx512_bf16 without AMX); nothing to compare\n");
    return 2;
  }
  struct Shape {
    int64_t cin, cout, kernel, stride, hw;
    bool input_grad;
    std::vector<int64_t> batches;
  };
  const std::vector<int64_t> small{8, 16};
  const std::vector<Shape> shapes{// cnn tiny
                                  {3, 8, 3, 1, 16, false, small},
                                  {8, 8, 3, 1, 16, true, small},
                                  {8, 16, 3, 2, 16, true, small},
                                  {16, 16, 3, 1, 8, true, small},
                                  {8, 16, 1, 2, 16, true, small},
                                  // resnet tiny
                                  {3, 8, 7, 2, 32, false, small},
                                  {8, 8, 1, 1, 8, true, small},
                                  {8, 8, 3, 1, 8, true, small},
                                  {8, 32, 1, 1, 8, true, small},
                                  {32, 16, 1, 1, 8, true, small},
                                  {16, 16, 3, 2, 8, true, small},
                                  {16, 64, 1, 1, 4, true, small},
                                  {32, 64, 1, 2, 8, true, small},
                                  {64, 32, 1, 1, 4, true, small},
                                  {32, 32, 3, 2, 4, true, small},
                                  {32, 128, 1, 1, 2, true, small},
                                  {64, 128, 1, 2, 4, true, small},
                                  {128, 64, 1, 1, 2, true, small},
                                  {64, 64, 3, 2, 2, true, small},
                                  {64, 256, 1, 1, 1, true, small},
                                  {128, 256, 1, 2, 2, true, small},
                                  // cnn small
                                  {3, 16, 3, 1, 32, false, small},
                                  {16, 16, 3, 1, 32, true, small},
                                  {16, 32, 3, 2, 32, true, small},
                                  {32, 32, 3, 1, 16, true, small},
                                  {16, 32, 1, 2, 32, true, small},
                                  {32, 64, 3, 2, 16, true, small},
                                  {64, 64, 3, 1, 8, true, small},
                                  {32, 64, 1, 2, 16, true, small},
                                  // ResNet-50's widths and others (padded channels, kernel 5)
                                  {64, 64, 3, 1, 56, true, {2}},
                                  {256, 64, 1, 1, 56, true, {2}},
                                  {64, 256, 1, 1, 56, true, {2}},
                                  {128, 128, 3, 2, 56, true, {2}},
                                  {256, 512, 1, 2, 56, true, {2}},
                                  {512, 512, 3, 1, 7, true, {2}},
                                  {3, 64, 7, 2, 224, false, {1}},
                                  {128, 128, 3, 1, 28, true, {2}},
                                  {64, 128, 3, 2, 32, true, {4}},
                                  {256, 256, 3, 1, 14, true, {4}},
                                  {1024, 256, 1, 1, 14, true, {2}},
                                  {24, 40, 3, 1, 10, true, {3}},
                                  {40, 24, 1, 1, 12, true, {5}},
                                  {16, 48, 5, 1, 12, true, {4}}};
  // fp32 only (the bf16 table's shapes are those it was checked with): 4-15 input channels (jit:avx2's weight
  // gradient), odd sizes (a strided 1x1 kernel without rtus), wide images at small batches.
  const std::vector<Shape> fp32_extra{
      {5, 16, 3, 1, 12, true, {2, 8}},    {12, 24, 3, 2, 12, true, {2, 8}},   {4, 8, 3, 1, 20, true, {4}},
      {48, 40, 3, 1, 7, true, {2, 6}},    {32, 64, 1, 2, 7, true, {2, 8}},    {24, 24, 1, 1, 9, true, {3}},
      {64, 64, 3, 1, 32, true, {1, 2}},   {16, 16, 3, 1, 64, true, {2}},      {3, 32, 3, 2, 64, false, {2, 16}},
      {8, 24, 1, 2, 16, true, {4}},       {256, 128, 1, 1, 28, true, {2}},    {128, 256, 3, 2, 28, true, {2}},
      {256, 256, 3, 2, 28, true, {1, 2}}, {512, 512, 3, 2, 14, true, {1, 2}}, {512, 1024, 1, 2, 28, true, {1}},
      {1024, 2048, 1, 2, 14, true, {1}}};
  // bf16 only: the 1x1 kernel's thread groups over channels (fewer images than threads), ResNet-50's last stage
  // (few positions, wide channels: 2048 -> 1024 at 7x7 is split in groups because its weights outgrow half the L2)
  // and a one-image batch.
  const std::vector<Shape> bf16_extra{{512, 2048, 1, 1, 7, true, {1, 2}}, {2048, 512, 1, 1, 7, true, {1, 2}},
                                      {1024, 2048, 1, 2, 14, true, {1}},  {256, 1024, 1, 1, 14, true, {1, 3}},
                                      {128, 512, 1, 1, 28, true, {1}},    {64, 64, 1, 1, 56, true, {1}},
                                      {2048, 1024, 1, 1, 7, true, {2}}};
  std::vector<Shape> all = shapes;
  const auto& extra = fp32 ? fp32_extra : bf16_extra;
  all.insert(all.end(), extra.begin(), extra.end());
  std::printf(
      "LibTorch %s. Bytes above what each phase leaves (forward: its output; backward: the gradients); "
      "'=' marks the rule equal to the byte, else rule / measured.\n\n",
      TORCH_VERSION);
  std::printf(
      "| convolution | batch | threads | weight-gradient kernel | forward (rule / measured) | "
      "backward (rule / measured) |\n|---|---|---|---|---|---|\n");
  int rows = 0, forward_exact = 0, backward_exact = 0;
  double worst = 0;
  for (const auto& s : all) {
    for (const int64_t batch : s.batches) {
      for (const int64_t threads : {1, 2, 4}) {
        const int64_t out_hw = (s.hw - 1) / s.stride + 1;
        const ConvShape c{batch, s.cin, s.cout, s.kernel, s.stride, s.hw, out_hw, s.input_grad, threads};
        const int64_t bytes = fp32 ? 4 : 2;
        if (fp32 && !trace::onednn::conv_on_onednn(c, bytes)) continue;  // LibTorch's own kernel: not this rule's
        const auto rule = avx2   ? trace::onednn::avx2_fp32_conv(c)
                          : fp32 ? trace::onednn::avx512_fp32_conv(c)
                                 : trace::onednn::avx512_bf16_conv(c);
        const auto measured = trace::onednn::measure_conv(c, bytes);
        std::printf("| %lld -> %lld, %lldx%lld stride %lld, %lldx%lld%s | %lld | %lld | %s | %s | %s |\n",
                    static_cast<long long>(s.cin), static_cast<long long>(s.cout), static_cast<long long>(s.kernel),
                    static_cast<long long>(s.kernel), static_cast<long long>(s.stride), static_cast<long long>(s.hw),
                    static_cast<long long>(s.hw), s.input_grad ? "" : " (no input gradient)",
                    static_cast<long long>(batch), static_cast<long long>(threads),
                    avx2   ? (s.kernel == 1     ? "jit_1x1:avx2"
                              : s.kernel > s.hw ? "gemm:jit"
                                                : "jit:avx2")
                    : fp32 ? trace::onednn::to_string(trace::onednn::fp32_conv_weight_kernel(c))
                           : trace::onednn::to_string(trace::onednn::bf16_conv_weight_kernel(c)),
                    cell(rule.forward_bytes, measured.forward_bytes).c_str(),
                    cell(rule.backward_bytes, measured.backward_bytes).c_str());
        ++rows;
        forward_exact += rule.forward_bytes == measured.forward_bytes;
        backward_exact += rule.backward_bytes == measured.backward_bytes;
        for (const auto [r, m] : {std::pair{rule.forward_bytes, measured.forward_bytes},
                                  std::pair{rule.backward_bytes, measured.backward_bytes}})
          if (m > 0) worst = std::max(worst, std::abs(static_cast<double>(r - m)) / static_cast<double>(m));
      }
    }
  }
  std::printf(
      "\n%d convolutions: the forward equal to the byte for %d, the backward for %d; the largest difference "
      "%.1f%%.\n",
      rows, forward_exact, backward_exact, 100.0 * worst);
  return 0;
}
