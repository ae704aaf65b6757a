// The whole training ledger predicted (tvie/predict.hpp) against the measured one, on the CPU, for every zoo
// model at its tiny preset x {fp32, amp-bf16, bf16} x {no checkpointing, blocks} x {sgd, adamw}.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <tvie/config.hpp>

#include "helpers.hpp"
#include "predict/cpu_kernels.hpp"
#if TVIE_WITH_CPU_KERNEL_SCRATCH
#include "predict/fbgemm_packs.hpp"
#include "predict/onednn_bookings.hpp"
#include "predict/onednn_scratch.hpp"
#endif
#include "tvie_test_paths.hpp"

using namespace tvie;

namespace {

double relative(int64_t predicted, int64_t measured) {
  return std::abs(static_cast<double>(predicted - measured)) / static_cast<double>(measured);
}

// Built without the CPU kernel-scratch plug-in (TVIE_CPU_KERNEL_SCRATCH=OFF) a CPU prediction leaves out what the
// kernels allocate and free inside an op. The tiny presets, measured on an Intel Xeon with AMX natively and under
// each emulated kind, were then off by up to 18% in training peaks and 78% in an inference working set (a small
// convolution's, where oneDNN's reorders outweigh the activations): the bound such a build is held to.
constexpr double kWithoutCpuPlugin = 0.80;

// A CPU prediction beside its measurement: within `tolerance` (relative; 0: to the byte) where the CPU plug-in
// predicts the kernels' scratch (the default build), within kWithoutCpuPlugin where it is not built.
bool cpu_within(int64_t predicted, int64_t measured, double tolerance) {
  UNSCOPED_INFO("predicted " << predicted << ", measured " << measured << " (" << relative(predicted, measured)
                             << " off), tolerance " << tolerance
                             << (TVIE_WITH_CPU_KERNEL_SCRATCH ? "" : ", without the CPU plug-in 0.80"));
  if (!TVIE_WITH_CPU_KERNEL_SCRATCH) return relative(predicted, measured) <= std::max(tolerance, kWithoutCpuPlugin);
  return tolerance == 0 ? predicted == measured : relative(predicted, measured) <= tolerance;
}

}  // namespace

namespace {
// LibTorch's intra-op threads for a scope, restored after: at::set_num_threads is not capped at the cores, as
// OMP_NUM_THREADS is.
struct Threads {
  int saved = at::get_num_threads();
  explicit Threads(int n) { at::set_num_threads(n); }
  ~Threads() { at::set_num_threads(saved); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
};

// The kinds of CPU whose every kernel's scratch the trace has and was checked on that kind itself, every zoo model's
// tiny preset equal to the byte: ATen's bf16 kernels beside oneDNN's AVX2 fp32 ones and oneDNN's AVX-512 kernels
// emulating bf16 (written out; an Intel Xeon of each, 1, 2 and 4 threads, 2026-12-03), and oneDNN's avx512_bf16
// brgemm kernels where oneDNN's own bookings can be asked (an AMD EPYC, 1 to 4 threads, 2026-12-04; its written-out
// fit, the fallback, is not exact: see lib/src/predict/onednn_scratch.cpp). Not AMX: never measured since the
// bookings.
bool every_kernel_checked_here() {
#if TVIE_WITH_CPU_KERNEL_SCRATCH
  const auto kernels = cpu_bf16_matmul_kernels();
  return kernels == CpuBf16Matmul::aten || kernels == CpuBf16Matmul::onednn_avx512_emulated ||
         (kernels == CpuBf16Matmul::onednn_avx512_bf16 && trace::onednn::bookings_available());
#else
  return false;  // the CPU plug-in is not built: no kernel's scratch is predicted
#endif
}

// Whether oneDNN's own bookings can be asked here (predict/onednn_bookings.hpp; never without the CPU plug-in).
bool bookings_asked() {
#if TVIE_WITH_CPU_KERNEL_SCRATCH
  return trace::onednn::bookings_available();
#else
  return false;
#endif
}
}  // namespace

TEST_CASE("predicted training ledger: weights, gradients, optimizer state exact, activations within 10%, peak",
          "[predict][cpu-kinds]") {
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    const bool blocks = w->block_count() > 0;
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::bf16}) {
      for (int64_t checkpoint : {0, 1}) {
        if (checkpoint > 0 && !blocks) continue;
        for (auto optimizer : {OptimizerKind::sgd, OptimizerKind::adamw}) {
          TrainSettings s = test::small_train(optimizer);
          s.batch_size = 8;
          s.precision = precision;
          s.checkpoint_every = checkpoint;
          INFO(model << " " << to_string(precision) << " checkpoint " << checkpoint << " " << to_string(optimizer));
          const auto p = predict_training_memory(*w, s);
          const auto m = test::measure_ledger(*w, s, c10::Device(c10::kCPU));
          CHECK(p.parameters == m.parameters);
          CHECK(p.gradients == m.gradients);
          CHECK(p.optimizer_state == m.optimizer_state);
          CHECK(p.batch == m.batch);
          CHECK(p.weight_copies == m.weight_copies);  // amp: the cast cache's copies; else 0
          REQUIRE(p.activations > 0);
          CHECK(relative(p.activations, m.activations) <= 0.10);
          // The by-layer figures add up to the activations.
          int64_t by_layer = 0;
          for (const auto& [layer, bytes] : p.activations_by_layer) by_layer += bytes;
          CHECK(by_layer == p.activations);
          const bool onednn_bf16 = cpu_bf16_on_onednn() && precision != TrainPrecision::fp32;
          if (onednn_bf16 && (model == "cnn" || model == "resnet")) {
            // oneDNN's bf16 convolutions: where their scratchpad is written out (avx512_bf16 without AMX) the peak
            // was within -4.8% .. +5.9% on an AMD EPYC (-18.7% before, with only an input copy counted), equal to
            // the byte there since 2026-12-04 (oneDNN's own bookings, or the rules written out since). Where
            // oneDNN takes AMX's kernels the trace asks LibTorch's oneDNN for its bookings: on the AMX Xeon's
            // measurements (2026-11) the same bookings gave -3.3% .. +8.2% (resnet tiny amp-bf16 AdamW the +8.2%;
            // research/kernel-scratch/results/bf16-amx-prediction-with-onednn-bookings.md); where they cannot be asked,
            // only the input copy is counted, and the peak was 31% under there (resnet tiny in bf16). Without AVX-512
            // (ATen's im2col kernels) the rules are exact and the 15% below holds.
            CHECK(cpu_within(p.peak, m.peak, (cpu_bf16_conv_scratch_modelled() ? 0.10 : 0.35)));
          } else if (onednn_bf16 && !cpu_bf16_matmul_scratch_modelled() && model == "mlp" &&
                     precision == TrainPrecision::bf16) {
            // Known gap where oneDNN's bf16 matmul scratchpad is not modelled (AMX's kernels, oneDNN's bookings not
            // to be asked): ~25 KiB in the pure-bf16 matmul's backward, 19% of this tiny model's 131 KiB peak on an
            // Intel Xeon with AMX (+2.0% with the bookings). Where it is modelled the 15% below holds.
            CHECK(cpu_within(p.peak, m.peak, 0.25));
          } else {
            CHECK(cpu_within(p.peak, m.peak, 0.15));
          }
          // Where oneDNN's bf16 kernels are written out (avx512_bf16 without AMX), every case was within -4.8% ..
          // +6.3% on an AMD EPYC (2026-12-03; every one equal to the byte since 2026-12-04). Under autocast a matmul
          // writes its gradients in bf16 and they are cast to fp32 after it (ForwardTrace::cast_gradients): counting
          // them in fp32 from the start put the mlp's amp-bf16 peak at +9.2% there (+1.1% since).
          if (cpu_bf16_matmul_scratch_modelled()) {
            CHECK(cpu_within(p.peak, m.peak, 0.10));
            if (model == "mlp" && precision == TrainPrecision::amp_bf16) CHECK(cpu_within(p.peak, m.peak, 0.05));
          }
          // A checkpointed segment's gradients are counted once, as its recomputation writes them (they were
          // counted twice until 2026-12-02: +9-14% on these fp32 peaks, on both CPUs measured); fp32 is the same trace
          // and the same kernels' bytes on every CPU measured (within 5.5%).
          if (checkpoint > 0 && precision == TrainPrecision::fp32) CHECK(cpu_within(p.peak, m.peak, 0.08));
          // The transformers' peak, step by step as autograd runs it (checked against the allocation events of
          // tvie train --json's memory_timeline and LibTorch's profiler, 2026-12-03): the loss's backward holds the
          // two fp32 gradients, not also the logits' 2-byte one; a residual branch's last op receives the held
          // gradient itself; a checkpointed block's recomputation runs its forward beside the incoming gradient, and
          // its backward beside its output and the generator state tvie::checkpoint keeps; under autocast the C++
          // linear's in-place bias add runs in fp32 temporaries on the CPU; the batch is a view of the data pool.
          // On the avx512_bf16 brgemm kernels a Linear's backward computes the weight gradient (and frees its
          // scratch) before the input gradient exists. Since then every gpt, bert and llama case here is equal to
          // the byte (but the loss's 4 bytes) on an AMD EPYC on its own kernels (1, 2 and 4 threads), under AVX2 and
          // under AVX512_CORE; they were -3.7% .. +11.6% off before. The 4 bytes were the loss's gradient (ones),
          // which backward() holds throughout, in place of nll_loss's total weight, released after its backward
          // (2026-12-03): since then equal to the byte on an Intel Xeon with AVX-512 (no avx512_bf16) and under AVX2.
          const bool transformer = model == "gpt" || model == "bert" || model == "llama";
          if (transformer &&
              (precision == TrainPrecision::fp32 || cpu_bf16_matmul_kernels() != CpuBf16Matmul::onednn_amx))
            CHECK(cpu_within(p.peak, m.peak, 0.01));
          // fp32 everywhere but on AMX (oneDNN's AVX-512 and AVX2 fp32 convolutions written out from its bookings,
          // 2026-12-03): every model's peak equal to the byte.
          if (precision == TrainPrecision::fp32 &&
              (transformer || cpu_bf16_matmul_kernels() != CpuBf16Matmul::onednn_amx))
            CHECK(cpu_within(p.peak, m.peak, 0));
          // Where every kernel's scratch is written out and checked on this kind of CPU: every case to the byte.
          if (every_kernel_checked_here()) CHECK(cpu_within(p.peak, m.peak, 0));
          // oneDNN's fp32 convolutions on AVX-512 reorder into blocked layouts padded to 16 channels (modelled
          // since 2026-12-02: cnn tiny -3.2%, resnet tiny +5.3% on an AMD EPYC; -11.1% without the rule).
          if (cpu_bf16_on_onednn() && precision == TrainPrecision::fp32 && (model == "cnn" || model == "resnet"))
            CHECK(cpu_within(p.peak, m.peak, 0.08));
        }
      }
    }
  }
}

TEST_CASE("what autograd saves, to the byte on any kind of CPU: every zoo model's tiny preset in fp32", "[predict]") {
  // The saved tensors are autograd's (each operator's inputs or outputs as its backward needs them), whatever kernel
  // runs the operator: in fp32 no cast adds copies, so the trace's count equals the ledger's `activations` (a
  // forward with grad minus the same without) exactly, on every CPU.
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (int64_t checkpoint : {0, 1}) {
      if (checkpoint > 0 && w->block_count() == 0) continue;
      INFO(model << " tiny, fp32, checkpoint " << checkpoint);
      TrainSettings s = test::small_train(OptimizerKind::sgd);
      s.batch_size = 8;
      s.checkpoint_every = checkpoint;
      CHECK(predict_training_memory(*w, s).activations ==
            test::measure_ledger(*w, s, c10::Device(c10::kCPU)).activations);
    }
  }
}

TEST_CASE("the fused loss: what it saves to the byte, and the fp32 peak where the standard loss's is", "[predict]") {
  // tvie::fused_cross_entropy in place of the cross-entropy of fp32 logits (TrainSettings::fused_loss): its saved
  // gradient is autograd's whatever the kernels, so the saved bytes the two losses differ by are exact in every
  // precision; in fp32 the activations and, where the standard loss's peak is exact, the peak too.
  const auto kernels = cpu_bf16_matmul_kernels();
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    const bool transformer = model == "gpt" || model == "bert" || model == "llama";
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16}) {
      INFO(model << " tiny, " << to_string(precision));
      TrainSettings s = test::small_train(OptimizerKind::adamw);
      s.batch_size = 8;
      s.precision = precision;
      const auto standard = predict_training_memory(*w, s);
      const auto standard_measured = test::measure_ledger(*w, s, c10::Device(c10::kCPU));
      s.fused_loss = true;
      const auto fused = predict_training_memory(*w, s);
      const auto fused_measured = test::measure_ledger(*w, s, c10::Device(c10::kCPU));
      CHECK(standard.activations - fused.activations == standard_measured.activations - fused_measured.activations);
      CHECK(fused.activations < standard.activations);
      if (precision != TrainPrecision::fp32) continue;
      CHECK(fused.activations == fused_measured.activations);
      if (transformer || kernels != CpuBf16Matmul::onednn_amx) CHECK(cpu_within(fused.peak, fused_measured.peak, 0));
    }
  }
}

TEST_CASE("predicted activations follow the micro-batch under accumulation and shrink under checkpointing",
          "[predict]") {
  // gpt's head is tied to its token embedding, bert's decoder (with a bias, on a 3-D input) to its word embedding.
  for (const std::string model : {"gpt", "bert"}) {
    INFO(model);
    const auto w = make_zoo_workload(model, "tiny");
    TrainSettings s = test::small_train();
    s.batch_size = 8;
    const auto whole = predict_training_memory(*w, s);
    s.accumulate = 2;
    const auto halves = predict_training_memory(*w, s);
    const auto measured = test::measure_ledger(*w, s, c10::Device(c10::kCPU));
    CHECK(halves.activations == measured.activations);  // the micro-batch of 4 is what is live at once
    CHECK(halves.activations < whole.activations);
    CHECK(halves.gradients == whole.gradients);
    // Under accumulation the second micro-batch's backward runs beside every gradient, each op's new ones beside
    // them until autograd adds them in, the tied weight's first gradient (the head's) until the embedding's
    // backward adds to it, and the running total of the losses: equal to the byte.
    CHECK(measured.peak == halves.peak);
    s.checkpoint_every = 1;
    const auto checkpointed_halves = predict_training_memory(*w, s);
    const auto measured_checkpointed = test::measure_ledger(*w, s, c10::Device(c10::kCPU));
    // Checkpointed too (until 2026-12-03 64 KiB under for gpt: the tied weight's first gradient, a [V, h] fp32
    // tensor, was not counted beside the accumulated one; and 8 bytes under: the loss's gradient and the total).
    CHECK(measured_checkpointed.peak == checkpointed_halves.peak);
    s.accumulate = 1;
    const auto checkpointed = predict_training_memory(*w, s);
    CHECK(checkpointed.activations < whole.activations / 3);
    if (model != "gpt") continue;
    // The layer types a reader looks for.
    std::vector<std::string> layers;
    for (const auto& [layer, bytes] : whole.activations_by_layer) layers.push_back(layer);
    for (const std::string expected : {"layer_norm", "linear", "attention", "gelu", "loss", "embedding"})
      CHECK(std::find(layers.begin(), layers.end(), expected) != layers.end());
  }
}

TEST_CASE("the training peak to the byte beyond the tiny presets", "[predict][cpu-kinds]") {
  const auto kernels = cpu_bf16_matmul_kernels();
  if (kernels == CpuBf16Matmul::onednn_amx) {
    TVIE_SKIP("on AMX the convolutions' scratch comes from oneDNN's bookings, never measured there to the byte");
  }
  // Wider and deeper than the tiny presets: cnn small, a ResNet-18 of basic blocks with projections at 32x32 (its
  // peak in a projection block: 512 KiB under until 2026-12-03, when the trace held the wrong gradient there) and
  // gpt small; in fp32 everywhere but AMX, and in bf16 and amp-bf16 where those kernels are written out and were
  // checked on their own kind of CPU (ATen's bf16 kernels; oneDNN's emulating ones: cnn small's pure bf16 was 98.8 KiB
  // over until it followed their strided input gradient).
  const bool bf16_checked = every_kernel_checked_here();
  for (const auto& [model, preset] :
       {std::pair{"cnn", "small"}, std::pair{"cnn", "resnet18-cifar"}, std::pair{"gpt", "small"}}) {
    const auto w = make_zoo_workload(model, preset);
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::bf16, TrainPrecision::amp_bf16}) {
      if (precision != TrainPrecision::fp32 && !bf16_checked) continue;
      INFO(model << " " << preset << " " << to_string(precision));
      TrainSettings s = test::small_train();
      s.batch_size = 8;
      s.precision = precision;
      CHECK(
          cpu_within(predict_training_memory(*w, s).peak, test::measure_ledger(*w, s, c10::Device(c10::kCPU)).peak, 0));
    }
  }
}

TEST_CASE("a Linear's two backward products in autograd's order, and SwiGLU's waiting gradients: 4 threads",
          "[predict][cpu-kinds]") {
  if (!every_kernel_checked_here()) {
    TVIE_SKIP("not every kernel's scratch on this kind of CPU is known to the byte (see every_kernel_checked_here)");
  }
  // At 4 threads the kernels' scratch grows unevenly, and two orders the 2 threads of this project's machines hid
  // decide the peak (an AMD EPYC with avx512_bf16, 2026-12-04): addmm's backward (the mlp's 2-D Linears with a bias)
  // writes the input gradient and its product's scratch before the weight gradient exists (the pure-bf16 mlp was
  // 2.2% over, its input gradient's larger scratch counted beside the weight gradient); and Llama's SwiGLU runs up's
  // backward first while the product's gradient for the gate waits (the checkpointed bf16 step 10 KiB under).
  const Threads four(4);
  for (const std::string model : {"mlp", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto precision : {TrainPrecision::amp_bf16, TrainPrecision::bf16}) {
      for (int64_t checkpoint : {0, 1}) {
        if (checkpoint > 0 && w->block_count() == 0) continue;
        INFO(model << " tiny, " << to_string(precision) << ", checkpoint " << checkpoint << ", 4 threads");
        TrainSettings s = test::small_train(OptimizerKind::sgd);
        s.batch_size = 8;
        s.precision = precision;
        s.checkpoint_every = checkpoint;
        CHECK(test::measure_ledger(*w, s, c10::Device(c10::kCPU)).peak == predict_training_memory(*w, s).peak);
      }
    }
  }
}

TEST_CASE("a tied embedding's gradient: three [V, h] tensors at its backward, to the byte", "[predict][cpu-kinds]") {
  const auto kernels = cpu_bf16_matmul_kernels();
  if (kernels == CpuBf16Matmul::onednn_amx) {
    TVIE_SKIP("on AMX the bf16 matmuls' scratch comes from oneDNN's bookings, never measured there to the byte");
  }
  // A vocabulary large next to the rest (4096 entries on the tiny presets' widths), SGD (no optimizer state to
  // hide it): the peak is the tied embedding's backward, where autograd adds the head's part of the gradient and
  // the embedding's out of place (gpt2-small's SGD step was 11.9% under until 2026-12-04, which counted two). And
  // the embeddings in the order the modules run them (tokens, then positions): the trace had them the other way
  // round wherever the compiler evaluates function arguments right to left (gpt2-small with AdamW 192 KiB over).
  const bool bf16_checked = every_kernel_checked_here();
  for (const std::string model : {"gpt", "bert", "llama"}) {
    ModelShape shape;
    shape.seq_tokens = 8;
    shape.vocab = 4096;
    const auto w = make_zoo_workload(model, "tiny", shape);
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::bf16}) {
      if (precision != TrainPrecision::fp32 && !bf16_checked) continue;
      for (const int64_t checkpoint : {0, 1}) {
        INFO(model << " " << to_string(precision) << ", checkpoint every " << checkpoint);
        TrainSettings s = test::small_train(OptimizerKind::sgd);
        s.batch_size = 2;
        s.precision = precision;
        s.checkpoint_every = checkpoint;
        CHECK(test::measure_ledger(*w, s, c10::Device(c10::kCPU)).peak == predict_training_memory(*w, s).peak);
      }
    }
  }
}

TEST_CASE("the attention's per-thread buffers: long sequences, more threads than cores",
          "[predict][cpu-kinds][serial]") {
  if (!TVIE_WITH_CPU_KERNEL_SCRATCH) {
    TVIE_SKIP("the CPU kernel-scratch plug-in, whose buffers these are, is not built (TVIE_CPU_KERNEL_SCRATCH=OFF)");
  }
  const auto kernels = cpu_bf16_matmul_kernels();
  if (kernels == CpuBf16Matmul::onednn_amx) {
    TVIE_SKIP("the flash kernel's bf16 products on AMX (oneDNN's brgemm) were not measured");
  }
  if (kernels == CpuBf16Matmul::onednn_avx512_bf16 && !bookings_asked()) {
    TVIE_SKIP(
        "the flash kernel's bf16 products on avx512_bf16 are counted from oneDNN's own bookings, which "
        "cannot be asked here (TVIE_ONEDNN_BOOKINGS=0, or a LibTorch without its symbol table)");
  }
  // LibTorch's CPU flash attention keeps per-thread blocks of scores (and their gradients in backward): they decide
  // gpt tiny's training peak at 800 positions, and at 4 threads a one-sequence batch's inference working set (the
  // trace missed them until 2026-12-04; at the 2 threads of this project's machines the inference ones hid).
  const bool bf16_checked = every_kernel_checked_here();
  {
    // Training: the buffers each thread allocates in its part of the loop are all alive at once only where every
    // thread runs at once, so at as many threads as cores (at most 2 here: the prediction is their upper bound).
    const unsigned cores = std::thread::hardware_concurrency();
    const Threads threads(static_cast<int>(std::clamp(cores, 1u, 2u)));
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::bf16}) {
      if (precision != TrainPrecision::fp32 && !bf16_checked) continue;
      INFO("gpt tiny, 800 positions, " << to_string(precision) << ", " << at::get_num_threads() << " threads");
      const auto w = make_zoo_workload("gpt", "tiny", 800);
      TrainSettings s = test::small_train(OptimizerKind::sgd);
      s.batch_size = 1;
      s.precision = precision;
      // In bf16 each thread's backward runs the products dV, dQ, dK in turn, dQ and dK each beside a 4-byte
      // scalar: where the threads meet in the largest (dV or dK, as they happen to) the peak is 0, 4 or 8 bytes
      // under the prediction, which counts every thread's scalar (an AMD EPYC with avx512_bf16: all three seen,
      // under load most often 4; fp32 has no such products).
      const int64_t measured = test::measure_ledger(*w, s, c10::Device(c10::kCPU)).peak;
      const int64_t predicted = predict_training_memory(*w, s).peak;
      CHECK(measured <= predicted);
      CHECK(measured >= predicted - (precision == TrainPrecision::fp32 ? 0 : 4 * at::get_num_threads()));
    }
  }
  // Inference: the forward's buffers are allocated before the threads start, so exact at any count.
  const Threads four(4);
  for (const std::string model : {"gpt", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto dtype : {InferenceDtype::fp32, InferenceDtype::bf16}) {
      if (dtype != InferenceDtype::fp32 && !bf16_checked) continue;
      INFO(model << " tiny inference, batch 1, " << to_string(dtype) << ", 4 threads");
      InferSettings s = test::small_infer();
      s.dtype = dtype;
      s.batch_size = 1;
      const auto r = measure_inference(*w, s, c10::Device(c10::kCPU));
      CHECK(r.memory.peak == predict_inference_memory(*w, s).peak);
    }
  }
}

namespace {
// The figures of an estimate that depend on the CPU kernels' threads (their scratch and the attention's per-thread
// buffers), as one comparable tuple.
std::vector<int64_t> peaks(const ActivationEstimate& e) {
  return {e.saved_bytes, e.forward_peak_bytes, e.backward_peak_bytes, e.backward_peak_accumulating_bytes};
}
}  // namespace

TEST_CASE("predicting is pure: the threads are data, and work in another thread neither changes nor sees it",
          "[predict]") {
  // gpt tiny (bf16 products, attention's per-thread buffers) and cnn tiny (LibTorch's convolution kernel choice,
  // oneDNN's bookings where they can be asked), amp-bf16 training and bf16 inference.
  const int base = at::get_num_threads();
  const int other = base == 4 ? 1 : 4;  // a count the process does not run at
  std::vector<std::pair<std::shared_ptr<Workload>, ActivationQuery>> cases;
  for (const std::string model : {"gpt", "cnn"}) {
    TrainSettings t = test::small_train(OptimizerKind::sgd);
    t.batch_size = 4;
    t.precision = TrainPrecision::amp_bf16;
    InferSettings i = test::small_infer();
    i.batch_size = 4;
    i.dtype = InferenceDtype::bf16;
    cases.emplace_back(make_zoo_workload(model, "tiny"), activation_query(t));
    cases.emplace_back(make_zoo_workload(model, "tiny"), activation_query(i));
  }
  // The reference: each case predicted with the whole process at `other` threads (what a run there predicts).
  std::vector<std::vector<int64_t>> reference;
  {
    const Threads threads(other);
    for (auto [w, q] : cases) {
      q.cpu_threads = 0;  // the calling thread's count
      reference.push_back(peaks(w->estimate_activations(q)));
    }
  }
  REQUIRE(at::get_num_threads() == base);
  // The count matters: some case's figures differ between `base` and `other` threads (the attention's per-thread
  // buffers, the kernels' scratch), so a prediction that ignored the count given would fail below. Without the CPU
  // kernel-scratch plug-in no figure depends on the threads, and what follows checks the rest.
  if (TVIE_WITH_CPU_KERNEL_SCRATCH) {
    std::vector<std::vector<int64_t>> at_base;
    for (auto [w, q] : cases) {
      q.cpu_threads = base;
      at_base.push_back(peaks(w->estimate_activations(q)));
    }
    CHECK(at_base != reference);
  }
  // Another thread runs LibTorch's bf16 products and convolutions throughout, and watches the thread counts it and
  // freshly started threads get, while this one predicts every case at `other` threads (given as data) eight times.
  const int fresh_base = std::async(std::launch::async, [] { return at::get_num_threads(); }).get();
  std::atomic<bool> stop{false};
  std::set<int> seen_own, seen_fresh;
  std::atomic<int64_t> products{0};
  std::thread worker([&] {
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
    const auto a = torch::randn({64, 256}, bf16), b = torch::randn({256, 128}, bf16);
    const auto x = torch::randn({4, 8, 16, 16}, bf16), k = torch::randn({16, 8, 3, 3}, bf16);
    while (!stop.load()) {
      seen_own.insert(at::get_num_threads());
      (void)torch::mm(a, b);
      (void)torch::conv2d(x, k, {}, 1, 1);
      seen_fresh.insert(std::async(std::launch::async, [] { return at::get_num_threads(); }).get());
      ++products;
    }
  });
  // The predictions start once the worker's work has, and go on (eight rounds at least) until it has run some.
  while (products.load() == 0) std::this_thread::yield();
  std::vector<std::vector<int64_t>> beside;
  for (int round = 0; round < 8 || (products.load() < 4 && round < 10000); ++round)
    for (auto [w, q] : cases) {
      q.cpu_threads = other;
      beside.push_back(peaks(w->estimate_activations(q)));
    }
  stop = true;
  worker.join();
  for (size_t n = 0; n < beside.size(); ++n) {
    INFO("case " << n % cases.size() << ", round " << n / cases.size());
    CHECK(beside[n] == reference[n % cases.size()]);
  }
  CHECK(products.load() >= 4);
  CHECK(seen_own == std::set<int>{fresh_base});
  CHECK(seen_fresh == std::set<int>{fresh_base});
  CHECK(at::get_num_threads() == base);
}

TEST_CASE("oneDNN's emulated bf16 matmul: its fp32 accumulator as oneDNN books it, odd shapes, 1 and 4 threads",
          "[predict][cpu-kinds]") {
  if (cpu_bf16_matmul_kernels() != CpuBf16Matmul::onednn_avx512_emulated) {
    TVIE_SKIP("this CPU does not run bf16 matmuls on oneDNN's emulating gemm (AVX-512 without avx512_bf16)");
  }
  // An mlp whose products are not multiples of 128 floats (36 x 24, 24 x 24, 24 x 100, 36 x 13 ...): oneDNN books
  // the accumulator in steps of 64 floats and, at more threads, a block of whole rows per thread. The rule before
  // 2026-12-04 (512-byte steps, no threads) failed here at 4 threads, 512 bytes under in training and inference.
  MlpConfig config;
  config.input_features = 100;
  config.hidden_features = 24;
  config.hidden_layers = 2;
  config.classes = 13;
  const auto w = make_mlp_workload(config);
  for (const int threads : {1, 4}) {
    const Threads t(threads);
    INFO(threads << " thread(s)");
    TrainSettings s = test::small_train(OptimizerKind::sgd);
    s.batch_size = 36;
    s.precision = TrainPrecision::bf16;
    CHECK(cpu_within(predict_training_memory(*w, s).peak, test::measure_ledger(*w, s, c10::Device(c10::kCPU)).peak, 0));
    InferSettings i = test::small_infer();
    i.dtype = InferenceDtype::bf16;
    i.batch_size = 36;
    CHECK(cpu_within(predict_inference_memory(*w, i).peak, measure_inference(*w, i, c10::Device(c10::kCPU)).memory.peak,
                     0));
  }
}

TEST_CASE("predicted inference ledger: the converted weights exactly, the working set from the trace",
          "[predict][cpu-kinds]") {
  const c10::Device cpu(c10::kCPU);
  InferSettings s = test::small_infer();
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto dtype : {InferenceDtype::fp32, InferenceDtype::bf16}) {
      s.dtype = dtype;
      s.batch_size = 4;
      INFO(model << " " << to_string(dtype));
      const auto p = predict_inference_memory(*w, s);
      const auto r = measure_inference(*w, s, cpu);
      CHECK(p.parameters == r.memory.parameters);
      CHECK(p.batch == r.memory.batch);
      CHECK(p.peak == p.parameters + p.activations + p.batch);
      CHECK(r.predicted.peak == p.peak);  // what the report carries
      // Where every kernel's scratch is written out and checked on its own kind of CPU (see the training test).
      if (every_kernel_checked_here()) CHECK(r.memory.peak == p.peak);
      // The working set where the trace knows what the CPU kernels hold: in fp32 (they allocate only their
      // outputs), and in bf16 where oneDNN's matmul scratchpad is modelled (AVX-512 without AMX) or ATen's own
      // kernels run (no AVX-512); the convolution nets where oneDNN's AVX-512 convolutions are (fp32 and bf16
      // blocked layouts) and without AVX-512 (oneDNN's AVX2 fp32 kernels, ATen's bf16 im2col). Known gap
      // (docs/metrics.md), not checked: AMX's kernels. bert's was 29% under until its layer ended the attention's
      // tensors before the feed-forward (2026-12-02; the trace had them end there already).
      // Under oneDNN's ISA limits (the test below) ATen's own bf16 kernels (AVX2) and oneDNN's emulating ones
      // (AVX-512 without avx512_bf16) are checked the same way: every zoo model's working set was equal to the
      // trace on the AMD EPYC under both (cnn's fp32 at batch 8 on AVX2's oneDNN kernels 0.8% over).
      const bool aten = !cpu_bf16_on_onednn();
      const bool kernels_known = dtype == InferenceDtype::fp32 || cpu_bf16_matmul_scratch_modelled() || aten;
      // fp32 convolutions: oneDNN's AVX-512 and AVX2 kernels are written out (not AMX's, not checked there).
      const bool amx = cpu_bf16_matmul_kernels() == CpuBf16Matmul::onednn_amx;
      const bool conv_known = ((dtype == InferenceDtype::fp32 && !amx) || cpu_bf16_conv_scratch_modelled() || aten) &&
                              (model == "cnn" || model == "resnet");
      if ((kernels_known && (model == "mlp" || model == "gpt" || model == "llama" || model == "bert")) || conv_known)
        CHECK(cpu_within(p.activations, r.memory.activations, 0.10));
      else
        CHECK(p.activations > 0);
      // The whole peak, where the CPU kernels hold nothing the trace does not know (fp32), at one sample: the copy
      // task's one-sequence input is a tensor of its own, not a view of a longer buffer.
      if (dtype == InferenceDtype::fp32 && (!amx || (model != "cnn" && model != "resnet"))) {
        s.batch_size = 1;
        CHECK(cpu_within(predict_inference_memory(*w, s).peak, measure_inference(*w, s, cpu).memory.peak, 0));
      }
    }
  }
}

namespace {
// One int8 row predicted and measured on the CPU: the tensors LibTorch's allocator counts to the byte (the weights
// the conversion leaves, the biases fbgemm keeps, fbgemm's fp32 output and int32 accumulators in the working set),
// and fbgemm's packs within what glibc and the two C++ objects per layer add (predict/fbgemm_packs.hpp): at most
// 3 KiB per layer under (small chunks an earlier copy freed, which glibc's thread cache keeps and mallinfo2 counts as
// in use, reused: the vectors and objects of a narrow layer), 5 KiB over (the objects, chunk headers, and a page for
// a pack glibc maps on its own). Seen on an AMD EPYC: -0.9 .. +0.7 KiB per layer.
// Why this LibTorch or CPU cannot run CPU int8, or fbgemm cannot be asked its blocking; nothing where both work.
std::optional<std::string> int8_packs_unpredictable() {
  std::string why;
#if TVIE_WITH_CPU_KERNEL_SCRATCH
  if (!nn::linear_weights_supported(nn::LinearWeights::int8_dynamic, c10::Device(c10::kCPU), &why) ||
      !trace::fbgemm::blocking(&why))
    return why;
  return std::nullopt;
#else
  return std::string("fbgemm's packs are the CPU kernel-scratch plug-in's, not built (TVIE_CPU_KERNEL_SCRATCH=OFF)");
#endif
}

void check_int8_row(int64_t layers, const InferenceMemory& m, const PredictedInferenceMemory& p) {
  INFO("measured parameters " << m.parameters << ", packs " << m.packed_weights << ", activations " << m.activations
                              << ", batch " << m.batch << ", peak " << m.peak << "; predicted " << p.parameters << ", "
                              << p.packed_weights << ", " << p.activations << ", " << p.batch << ", " << p.peak);
  CHECK(p.parameters == m.parameters);
  CHECK(p.activations == m.activations);
  CHECK(p.batch == m.batch);
  if (!m.packed_weights_measured) {
    TVIE_SKIP_PART("glibc's heap statistics cannot be read here (AddressSanitizer?): the int8 packs not checked");
    return;
  }
  CHECK(m.packed_weights >= p.packed_weights - 3 * 1024 * layers);
  CHECK(m.packed_weights <= p.packed_weights + 5 * 1024 * layers);
  CHECK(m.peak - p.peak == m.packed_weights - p.packed_weights);
}
}  // namespace

TEST_CASE("CPU int8 inference predicted: fbgemm's packs from its blocking, the rest to the byte", "[predict][int8]") {
  if (const auto why = int8_packs_unpredictable()) {
    TVIE_SKIP("" << *why);
  }
  INFO(quantised_weights_source(InferenceDtype::int8, c10::Device(c10::kCPU)));
  // Every zoo model's tiny preset at one and four samples; then one larger model, whose packs must be within 1%.
  for (const std::string model : {"mlp", "cnn", "gpt", "resnet", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (int64_t batch : {1, 4}) {
      INFO(model << " tiny, int8, batch " << batch);
      InferSettings s = test::small_infer();
      s.dtype = InferenceDtype::int8;
      s.batch_size = batch;
      const auto a = w->estimate_activations(activation_query(s));
      const auto r = measure_inference(*w, s, c10::Device(c10::kCPU));
      CHECK(a.quantised_linears == r.linears_converted);
      CHECK(a.dense_linears == r.linears_kept_dense);
      check_int8_row(a.quantised_linears, r.memory, r.predicted);
    }
  }
  InferSettings s = test::small_infer();
  s.dtype = InferenceDtype::int8;
  s.batch_size = 1;
  const auto w = make_zoo_workload("gpt", "small");
  const auto r = measure_inference(*w, s, c10::Device(c10::kCPU));
  const auto p = predict_inference_memory(*w, s);
  INFO("gpt small: packs measured " << r.memory.packed_weights << ", predicted " << p.packed_weights);
  CHECK(p.parameters == r.memory.parameters);
  if (r.memory.packed_weights_measured)
    CHECK(relative(p.packed_weights, r.memory.packed_weights) <= 0.01);
  else
    TVIE_SKIP_PART("glibc's heap statistics cannot be read here (AddressSanitizer?): gpt small's packs not checked");
}

TEST_CASE("CUDA int8 and fp8 weights: the layers a kernel cannot take stay dense", "[predict][pure]") {
  // mlp tiny: 64 -> 128, 128 -> 128, 128 -> 10 (26,122 parameters). _int_mm and _scaled_mm take in and out features
  // in multiples of 8 and 16: the 10-class head stays dense (bf16, as the rest of either copy on CUDA).
  const auto w = make_zoo_workload("mlp", "tiny");
  const c10::Device cuda(c10::kCUDA, 0);
  InferSettings s = test::small_infer();
  s.dtype = InferenceDtype::int8;
  auto a = w->estimate_activations(activation_query(s, cuda));
  CHECK(a.quantised_linears == 2);
  CHECK(a.dense_linears == 1);
  const int64_t replaced = 64 * 128 + 128 * 128;
  // int8: the replaced weights at 1 byte and an fp32 scale per output row; every other parameter bf16.
  CHECK(predict_inference_memory(*w, s, cuda).parameters == (26122 - replaced) * 2 + replaced + 4 * (128 + 128));
  s.dtype = InferenceDtype::fp8;
  a = w->estimate_activations(activation_query(s, cuda));
  CHECK(a.quantised_linears == 2);
  CHECK(a.dense_linears == 1);
  // fp8: the replaced weights at 1 byte and one fp32 scale per layer; every other parameter bf16.
  CHECK(predict_inference_memory(*w, s, cuda).parameters == (26122 - replaced) * 2 + replaced + 4 * 2);
  // On the CPU (fbgemm) every Linear is replaced: its biases stay fp32 tensors, its weights go to the packs.
  s.dtype = InferenceDtype::int8;
  a = w->estimate_activations(activation_query(s));
  CHECK(a.quantised_linears == 3);
  CHECK(a.dense_linears == 0);
  CHECK(predict_inference_memory(*w, s).parameters == (128 + 128 + 10) * 4);
}

TEST_CASE("CPU int8: fbgemm's packs under each blocking this CPU can run (FBGEMM_ENABLE_INSTRUCTIONS)", "[predict]") {
  if (const auto why = int8_packs_unpredictable()) {
    TVIE_SKIP("" << *why);
  }
  // fbgemm runs a lower instruction set's kernels, with that set's blocking, when the environment asks
  // (FBGEMM_ENABLE_INSTRUCTIONS, read once per process), where the CPU has the instructions; elsewhere it keeps
  // its own. The [int8] test runs again under each, in a process of its own, and the instruction set each
  // prediction used is collected from the report of one int8 row.
  std::set<std::string> checked;
  for (const std::string isa : {"AVX2", "AVX512", "AVX512_256", "AVX512_E1", "AVX512_E1_256"}) {
    INFO("FBGEMM_ENABLE_INSTRUCTIONS=" << isa);
    const std::string env = "FBGEMM_ENABLE_INSTRUCTIONS=" + isa + " ";
    const auto run = test::run_command(env + TVIE_TEST_BINARY + " \"[int8]\"");
    INFO(run.out);
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.out, Catch::Contains("All tests passed") && Catch::Contains("1 test case"));
    const test::TempDir dir;
    const auto json = dir.path / "int8.json";
    const auto cli = test::run_command(env + TVIE_CLI_PATH + " infer --model mlp --batch 2 --dtype int8 --steps 1 " +
                                       "--warmup 0 --quiet --json " + json.string());
    REQUIRE(cli.exit_code == 0);
    std::ifstream in(json);
    const auto source = nlohmann::json::parse(in)
                            .at("inference_sweep")
                            .at("rows")
                            .at(0)
                            .at("result")
                            .at("memory_predicted")
                            .at("quantised_weights_source")
                            .get<std::string>();
    const auto at = source.find("fbgemmInstructionSet(): ");
    REQUIRE(at != std::string::npos);
    checked.insert(source.substr(at + 24, source.find(')', at) - at - 24));
  }
  std::string names;
  for (const auto& n : checked) names += (names.empty() ? "" : ", ") + n;
  if (checked.size() < 5)
    TVIE_SKIP_PART("fbgemm's blockings this CPU cannot run: checked " << names << " (of five on x86)");
  CHECK(!checked.empty());
}

namespace {
// The [cpu-kinds] tests matching `filter` again, in a process of their own (oneDNN and fbgemm read their limits once)
// with `env` set: every one passes or skips itself with a reason, and each skip is said here. Returns how many ran
// there. The [serial] ones (a peak reached only where every thread runs at once) run apart, alone on the cores.
int run_cpu_kinds(const std::string& env, const std::string& filter = "[cpu-kinds]~[serial]") {
  // Catch's listing exits with the number of test cases it lists.
  const auto listed = test::run_command(std::string(TVIE_TEST_BINARY) + " --list-test-names-only \"" + filter + "\"");
  const auto tests = static_cast<int>(std::count(listed.out.begin(), listed.out.end(), '\n'));
  REQUIRE(tests >= 1);
  REQUIRE(listed.exit_code == tests);
  const auto run = test::run_command(env + " " + TVIE_TEST_BINARY + " \"" + filter + "\"");
  INFO(env << ":\n" << run.out);
  CHECK_THAT(run.out, Catch::Contains("All tests passed") &&
                          Catch::Contains(std::to_string(tests) + (tests == 1 ? " test case" : " test cases")));
  // Each skipped test printed "SKIPPED [name]: why" there; here one line names them.
  int skipped = 0;
  std::string names;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("SKIPPED [", 0) != 0) continue;
    ++skipped;
    names += (names.empty() ? "" : "; ") + line.substr(9, line.find("]: ") - 9);
  }
  if (skipped > 0) TVIE_SKIP_PART("under " << env << ", " << skipped << " of " << tests << " skipped: " << names);
  CHECK(run.exit_code == (skipped == tests ? 77 : 0));  // 77: every one skipped itself
  return tests - skipped;
}

// The kinds of CPU oneDNN's ISA limit can make of this one: under ONEDNN_MAX_CPU_ISA=`limit` oneDNN runs an older
// kind of CPU's kernels, with their scratch, and LibTorch follows it (it asks oneDNN whether bf16 runs there).
const std::vector<std::string> kEmulatedKinds = {"AVX2", "AVX512_CORE", "AVX512_CORE_BF16"};
bool below_this_cpu(const std::string& limit) {
  const auto host = describe_host();
  return cpu_features_under_onednn_limit(host.cpu_features_usable, limit) != host.cpu_features_usable;
}

void check_emulated_kind(const std::string& limit) {
  if (!below_this_cpu(limit)) {
    const auto host = describe_host();
    TVIE_SKIP("ONEDNN_MAX_CPU_ISA=" << limit << " is not below this CPU (" << cpu_features_text(host)
                                    << "): this CPU is that kind or an older one, and the [cpu-kinds] tests ran here");
  }
  const int ran = run_cpu_kinds("ONEDNN_MAX_CPU_ISA=" + limit);
  // Without the CPU kernel-scratch plug-in the tests of its rules are not built and those to the byte skip: 4 run.
  CHECK(ran >= (TVIE_WITH_CPU_KERNEL_SCRATCH ? 8 : 4));
}
}  // namespace

// Each kind of CPU the prediction is checked on, emulated on a newer one: every CPU-kind-dependent test ([cpu-kinds])
// runs on its own kind natively and on the older kinds below it, or says why it skips.
TEST_CASE("the [cpu-kinds] tests on an AVX2 CPU, emulated (ONEDNN_MAX_CPU_ISA=AVX2)", "[predict][isa-limit]") {
  // oneDNN's AVX2 fp32 kernels, ATen's own bf16 ones (the measured ledgers equal to the byte to those of an AVX2 EPYC).
  check_emulated_kind("AVX2");
}

TEST_CASE("the [cpu-kinds] tests on AVX-512 without avx512_bf16, emulated (ONEDNN_MAX_CPU_ISA=AVX512_CORE)",
          "[predict][isa-limit]") {
  check_emulated_kind("AVX512_CORE");  // bf16 emulated by oneDNN's AVX-512 kernels
}

TEST_CASE(
    "the [cpu-kinds] tests on AVX-512 with avx512_bf16 and no AMX, emulated (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)",
    "[predict][isa-limit]") {
  check_emulated_kind("AVX512_CORE_BF16");  // oneDNN's brgemm bf16 kernels, as an AMD EPYC runs them
}

TEST_CASE("the [cpu-kinds] tests at 1 and 4 intra-op threads (the suite runs at 2)", "[predict][isa-limit]") {
  // The byte-exact peaks hold at 1, 2 and 4 threads: the kernels' scratch grows with the threads that share a
  // product. main() sets TVIE_TEST_THREADS's count (2 by default) before any test, whatever the cores.
  for (const char* threads : {"1", "4"}) CHECK(run_cpu_kinds(std::string("TVIE_TEST_THREADS=") + threads) >= 1);
}

TEST_CASE("the [cpu-kinds] tests with oneDNN's bookings off: the configurations written out", "[predict][isa-limit]") {
  // On this CPU with oneDNN's own bookings turned off: the configurations written out in predict/onednn_scratch.cpp,
  // which the trace uses where LibTorch's oneDNN cannot be asked (a stripped LibTorch). The bookings tests say why
  // they skip.
  CHECK(run_cpu_kinds("TVIE_ONEDNN_BOOKINGS=0") >= 1);
}

TEST_CASE("the [serial] [cpu-kinds] tests on every kind emulated, at 1 and 4 threads, with the bookings off",
          "[predict][isa-limit][serial]") {
  // Alone on the cores (tests/serial_tests.cmake): where their peak needs every thread running at once, a neighbour
  // on the cores would let the threads run one after another.
  std::vector<std::string> envs = {"TVIE_TEST_THREADS=1", "TVIE_TEST_THREADS=4", "TVIE_ONEDNN_BOOKINGS=0"};
  for (const auto& limit : kEmulatedKinds)
    if (below_this_cpu(limit)) envs.push_back("ONEDNN_MAX_CPU_ISA=" + limit);
  for (const auto& env : envs) run_cpu_kinds(env, "[cpu-kinds][serial]");
}

TEST_CASE("max-batch search: doubling then bisection over any probe", "[predict][max_batch][pure]") {
  auto fits_up_to = [](int64_t limit) {
    return [limit](int64_t b) { return MaxBatchProbe{b, b <= limit, b <= limit ? b * 100 : 0}; };
  };
  MaxBatchSettings s;
  s.max_batch = 1024;
  auto r = search_max_batch(s, fits_up_to(37));
  CHECK(r.largest_fitting == 37);
  CHECK(r.first_failing == 38);
  std::vector<int64_t> order;
  for (const auto& p : r.probes) order.push_back(p.batch);
  CHECK(order == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37});
  r = search_max_batch(s, fits_up_to(1 << 20));  // everything fits: stops at max_batch
  CHECK(r.largest_fitting == 1024);
  CHECK(r.first_failing == 0);
  CHECK(r.probes.size() == 11);
  r = search_max_batch(s, fits_up_to(0));  // not even the first
  CHECK(r.largest_fitting == 0);
  CHECK(r.first_failing == 1);
  CHECK(r.probes.size() == 1);
  s.start_batch = 3;
  s.max_batch = 20;
  r = search_max_batch(s, fits_up_to(13));
  CHECK(r.largest_fitting == 13);
  CHECK(r.first_failing == 14);
}

TEST_CASE("max-batch on the CPU: out of memory is a result, the process stays usable, the prediction agrees",
          "[predict][max_batch]") {
  const c10::Device cpu(c10::kCPU);
  const auto w = make_zoo_workload("gpt", "tiny");
  MaxBatchSettings s;
  REQUIRE_THROWS_AS(validate(s, cpu), InvalidArgument);  // the CPU needs an emulated limit
  try {
    validate(s, cpu);
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "max_batch.cpu_memory_limit_mb");
  }
  s.cpu_memory_limit_mb = 16;
  validate(s, cpu);
  const auto train = find_max_batch_training(*w, test::small_train(), s, cpu);
  REQUIRE(train.largest_fitting > 0);
  REQUIRE(train.first_failing == train.largest_fitting + 1);
  CHECK(train.limit_bytes == 16 * 1024 * 1024);
  REQUIRE(train.training.has_value());
  CHECK(train.training->peak <= train.limit_bytes);
  bool failed = false;
  for (const auto& p : train.probes) {
    failed = failed || !p.fits;
    CHECK(p.seconds > 0);  // each probe's wall time, reported
  }
  CHECK(failed);
  // The predicted largest batch is within 15% of the measured one (the peak prediction's tolerance).
  CHECK(std::abs(static_cast<double>(train.predicted_largest - train.largest_fitting)) <=
        0.15 * static_cast<double>(train.largest_fitting));
  const auto infer = find_max_batch_inference(*w, test::small_infer(), s, cpu);
  CHECK(infer.largest_fitting > train.largest_fitting);  // inference fits a larger batch: the gap
  REQUIRE(infer.inference.has_value());
  CHECK(infer.inference->peak <= infer.limit_bytes);
  // After the out-of-memory probes a normal run works and measures what a fresh one does.
  const auto normal = measure_training(*w, test::small_train(), cpu);
  CHECK(normal.memory.parameters == w->facts().parameter_count * 4);
  CHECK(normal.memory.activations == predict_training_memory(*w, test::small_train()).activations);
}

TEST_CASE("max-batch of a generation on the CPU: the KV cache sets the batch, the prediction agrees",
          "[predict][max_batch]") {
  const c10::Device cpu(c10::kCPU);
  const auto w = make_zoo_workload("gpt", "tiny");
  DecodeSettings d;
  d.new_tokens = 16;
  d.prompt_tokens = w->facts().tokens_per_sample - d.new_tokens;
  MaxBatchSettings s;
  s.cpu_memory_limit_mb = 16;
  const auto r = find_max_batch_generation(*w, d, s, cpu);
  CHECK(r.mode == SearchMode::generation);
  REQUIRE(r.largest_fitting > 0);
  REQUIRE(r.first_failing == r.largest_fitting + 1);
  REQUIRE(r.generation.has_value());
  CHECK(r.generation->peak <= r.limit_bytes);
  // The cache at the largest batch: that many sequences' keys and values, each as one sequence's predicted cache.
  DecodeSettings one = d;
  one.batch_size = 1;
  CHECK(r.generation->kv_cache == r.largest_fitting * predict_generation_memory(*w, one).kv_cache);
  // The prediction's largest batch within one sequence of the measured one (the generation's peak is predicted to
  // the byte; the emulated device also counts what the search itself holds).
  CHECK(std::abs(r.predicted_largest - r.largest_fitting) <= 1);
}

TEST_CASE("slices: linear extrapolation along one or more axes", "[slices][pure]") {
  const SlicePlan blocks{{{SliceAxisKind::blocks, 0, 9, 1, 3}}};
  CHECK(extrapolate(std::vector<double>{10.0, 14.0}, blocks) == Approx(26.0));  // 10 + 8 blocks x 2 per block
  CHECK(extrapolate(std::vector<double>{10.0, 14.0}, SlicePlan{{{SliceAxisKind::blocks, 0, 3, 1, 3}}}) == Approx(14.0));
  CHECK(extrapolate(std::vector<int64_t>{100, 300}, SlicePlan{{{SliceAxisKind::blocks, 0, 32, 1, 2}}}) == 6300);
  CHECK_THROWS_AS(extrapolate(std::vector<double>{1.0}, blocks), InvalidArgument);  // one figure per slice
  // Two axes: blocks 1 -> 2 adds 500, vocabulary 100 -> 200 adds 50; full: 4 blocks, 1000 entries.
  const SlicePlan two{{{SliceAxisKind::blocks, 0, 4, 1, 2}, {SliceAxisKind::vocabulary, 0, 1000, 100, 200}}};
  CHECK(two.slice_count() == 3);
  CHECK(two.point(0) == std::vector<int64_t>{1, 100});
  CHECK(two.point(1) == std::vector<int64_t>{2, 100});
  CHECK(two.point(2) == std::vector<int64_t>{1, 200});
  CHECK(two.label(0) == "1 block, vocabulary 100");
  CHECK(two.label(1) == "2 blocks, vocabulary 100");
  CHECK(two.full_label() == "4 blocks, vocabulary 1000");
  TrainingMemory a, b, c;
  a.parameters = 1000;
  b.parameters = 1500;
  c.parameters = 1050;
  a.peak_reserved = b.peak_reserved = -1;
  c.peak_reserved = 7;
  const auto x = extrapolate(std::vector<TrainingMemory>{a, b, c}, two);
  CHECK(x.parameters == 1000 + 3 * 500 + 9 * 50);
  CHECK(x.peak_reserved == -1);  // not measured in every slice
  InferenceMemory ia, ib;
  ia.activations = 10;
  ib.activations = 12;
  ia.peak_reserved = 100;
  ib.peak_reserved = 150;
  const auto ix = extrapolate(std::vector<InferenceMemory>{ia, ib}, SlicePlan{{{SliceAxisKind::blocks, 0, 32, 1, 2}}});
  CHECK(ix.activations == 72);
  CHECK(ix.peak_reserved == 1650);
  // A generation: the KV cache grows one block's keys and values per block, the prompt's ids do not grow; -1 (not
  // known in a slice) stays -1.
  GenerationMemory ga, gb;
  ga.weights = 1000;
  gb.weights = 1400;
  ga.kv_cache = 64;
  gb.kv_cache = 128;
  ga.prompt = gb.prompt = 16;
  ga.working_set = gb.working_set = 500;
  ga.packed_weights = -1;
  ga.peak = 1580;
  gb.peak = 2044;
  const auto gx = extrapolate(std::vector<GenerationMemory>{ga, gb}, SlicePlan{{{SliceAxisKind::blocks, 0, 32, 1, 2}}});
  CHECK(gx.weights == 1000 + 31 * 400);
  CHECK(gx.kv_cache == 32 * 64);
  CHECK(gx.prompt == 16);
  CHECK(gx.working_set == 500);
  CHECK(gx.peak == 1580 + 31 * 464);
  CHECK(gx.packed_weights == -1);
  CHECK(gx.other() == gx.peak - gx.weights - gx.kv_cache - gx.prompt - gx.working_set);
  CHECK(extrapolate_time({5.0, 7.0, 6.0}, two) == Approx(5.0 + 3 * 2.0 + 9 * 1.0));
  CHECK(extrapolate_time({5.0, 7.0, 5.0}, two) == -1);  // an axis not slower: noise, not a figure
  // ResNet stages: one axis per stage that has more blocks than K1.
  const SlicePlan stages{{{SliceAxisKind::stage_blocks, 2, 4, 1, 2}, {SliceAxisKind::stage_blocks, 3, 6, 1, 2}}};
  CHECK(stages.label(2) == "blocks per stage 1,2");
  CHECK(stages.full_label() == "blocks per stage 4,6");
  CHECK(stages.value(2, SliceAxisKind::stage_blocks, -1, 3) == 2);  // stage 3 stepped in slice 2
  CHECK(stages.value(1, SliceAxisKind::stage_blocks, -1, 3) == 1);
  CHECK(stages.value(1, SliceAxisKind::stage_blocks, 7, 1) == 7);  // no axis for stage 1: the given value
  CHECK(stages.axes[0].name() == "stage 2 blocks");
  CHECK_FALSE(two.axes[1].in_inference());
  CHECK(two.for_inference().axes.size() == 1);
  CHECK_THROWS_AS(validate(SlicePlan{{{SliceAxisKind::blocks, 0, 4, 2, 2}}}), InvalidArgument);
  CHECK_THROWS_AS(validate(SlicePlan{{{SliceAxisKind::blocks, 0, 4, 1, 5}}}), InvalidArgument);
  CHECK_THROWS_AS(validate(SlicePlan{{{SliceAxisKind::blocks, 0, 4, 0, 2}}}), InvalidArgument);
  CHECK_THROWS_AS(validate(SlicePlan{}), InvalidArgument);
  validate(SlicePlan{{{SliceAxisKind::blocks, 0, 4, 1, 4}}});
}

TEST_CASE("slices: the zoo's plans and slices", "[slices][pure]") {
  CHECK_THROWS_AS(make_zoo_workload("mlp", "tiny", 0, 2), InvalidArgument);  // no blocks to slice
  CHECK_THROWS_AS(zoo_slices("mlp", "tiny", 0, {1, 2}), InvalidArgument);
  CHECK(make_zoo_workload("llama", "llama-3-8b", 0, 2)->facts().parameter_count ==
        2 * 128256 * 4096 + 2 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 4096);
  // Llama 3 8B by blocks and vocabulary: three slices; the vocabulary slice has V2 rows in embedding and head.
  const auto llama = zoo_slices("llama", "llama-3-8b", 0, {1, 2, 16032, 32064});
  REQUIRE(llama.plan.slice_count() == 3);
  CHECK(llama.plan.axes[1].full == 128256);
  const int64_t block = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096;
  CHECK(llama.make(llama.plan, 0)->facts().parameter_count == 2 * 16032 * 4096 + block + 4096);
  CHECK(llama.make(llama.plan, 2)->facts().parameter_count == 2 * 32064 * 4096 + block + 4096);
  // Inference keeps the real vocabulary: its plan has the blocks only, and its slices have all 128256 rows.
  const auto inference = llama.plan.for_inference();
  REQUIRE(inference.axes.size() == 1);
  CHECK(llama.make(inference, 1)->facts().parameter_count == 2 * 128256 * 4096 + 2 * block + 4096);
  CHECK_THROWS_AS(zoo_slices("llama", "llama-3-8b", 0, {1, 2, 32064, 16032}), InvalidArgument);
  CHECK_THROWS_AS(zoo_slices("llama", "llama-3-8b", 0, {1, 2, 1, 200000}), InvalidArgument);
  CHECK_THROWS_AS(zoo_slices("llama", "llama-3-8b", 0, {1, 33}), InvalidArgument);
  CHECK_THROWS_AS(zoo_slices("resnet", "resnet50", 0, {1, 2, 10, 20}), InvalidArgument);  // no vocabulary
  // ResNet-50 by stage: every stage from 1 block to 2; its parameters are linear in each stage's blocks.
  const auto resnet = zoo_slices("resnet", "resnet50", 0, {1, 2});
  REQUIRE(resnet.plan.axes.size() == 4);
  CHECK(resnet.plan.full_label() == "blocks per stage 3,4,6,3");
  std::vector<int64_t> counts;
  for (size_t i = 0; i < resnet.plan.slice_count(); ++i)
    counts.push_back(resnet.make(resnet.plan, i)->facts().parameter_count);
  CHECK(extrapolate(counts, resnet.plan) == 25557032);
  CHECK_THROWS_AS(zoo_slices("resnet", "tiny", 0, {1, 2}), InvalidArgument);  // one block per stage: nothing to slice
  // ResNet-18 with K1 = 2: no stage has more than 2 blocks.
  CHECK_THROWS_AS(zoo_slices("resnet", "resnet18", 0, {2, 3}), InvalidArgument);
}

TEST_CASE("slices: gpt small from slices of 1 and 2 blocks matches the measured 4-block ledgers within 3%",
          "[slices]") {
  const c10::Device cpu(c10::kCPU);
  const auto full = make_zoo_workload("gpt", "small");
  REQUIRE(full->block_count() == 4);
  TrainSettings s = test::small_train();
  s.batch_size = 4;
  InferSettings i;
  i.batch_size = 2;
  i.steps = 2;
  i.warmup_steps = 0;
  const auto report = run_slices(*full, zoo_slices("gpt", "small", 0, {1, 2}), {s, i}, {"cpu", {}});
  REQUIRE(report.training);
  REQUIRE(report.inference);
  REQUIRE(report.training->slices.size() == 2);
  const auto measured = measure_training(*full, s, cpu);
  const auto& x = report.training->extrapolated;
  CHECK(relative(x.parameters, measured.memory.parameters) <= 0.03);
  CHECK(relative(x.gradients, measured.memory.gradients) <= 0.03);
  CHECK(relative(x.optimizer_state, measured.memory.optimizer_state) <= 0.03);
  CHECK(relative(x.activations, measured.memory.activations) <= 0.03);
  CHECK(relative(x.peak, measured.memory.peak) <= 0.05);
  CHECK(report.plan.axes.at(0).full == 4);
  CHECK(report.training->predicted.activations == measured.memory.activations);  // the full model's trace
  CHECK(report.training->extrapolated_step_ms != 0);  // extrapolated (or -1: noise); times are not compared
  // Inference: the weights and the working set are linear in the blocks too.
  const auto inferred = measure_inference(*full, i, cpu);
  const auto& y = report.inference->extrapolated;
  CHECK(relative(y.parameters, inferred.memory.parameters) <= 0.03);
  CHECK(relative(y.activations, inferred.memory.activations) <= 0.03);
  CHECK(relative(y.peak, inferred.memory.peak) <= 0.05);
  CHECK(report.inference->predicted.parameters == inferred.memory.parameters);
}

TEST_CASE("slices: gpt small's generation from slices of 1 and 2 blocks matches the measured 4-block generation",
          "[slices]") {
  const c10::Device cpu(c10::kCPU);
  const auto full = make_zoo_workload("gpt", "small");
  DecodeSettings d;
  d.batch_size = 2;
  d.prompt_tokens = 24;
  d.new_tokens = 8;
  d.repetitions = 1;
  SliceRunSettings run;
  run.generate = d;
  const auto report = run_slices(*full, zoo_slices("gpt", "small", 0, {1, 2}), run, {"cpu", {}});
  CHECK_FALSE(report.training);
  CHECK_FALSE(report.inference);
  REQUIRE(report.generation);
  REQUIRE(report.generation->slices.size() == 2);
  const auto measured = measure_decoding(*full, d, cpu);
  const auto& x = report.generation->extrapolated;
  // The weights and the cache are one block's bytes per block; the prompt's ids are in every slice once.
  CHECK(x.weights == measured.memory.weights);
  CHECK(x.kv_cache == measured.memory.kv_cache);
  CHECK(x.prompt == measured.memory.prompt);
  // The working set is a maximum over the prefill and the steps, not a sum: the same in every slice.
  CHECK(relative(x.working_set, measured.memory.working_set) <= 0.03);
  CHECK(relative(x.peak, measured.memory.peak) <= 0.05);
  CHECK(report.generation->predicted.kv_cache == measured.memory.kv_cache);  // the full model's trace
  CHECK(report.generation->extrapolated_ttft_ms != 0);  // extrapolated (or -1: noise); times are not compared
  // A model without a KV-cached forward has no generation to slice.
  CHECK_THROWS_AS(
      run_slices(*make_zoo_workload("bert", "tiny"), zoo_slices("bert", "tiny", 0, {1, 2}), run, {"cpu", {}}),
      InvalidArgument);
}

TEST_CASE("slices: gpt small from slices of its blocks and of its vocabulary matches the measured ledgers within 3%",
          "[slices]") {
  // Slices of 1 and 2 blocks with 1024 vocabulary entries and one of 1 block with 2048; the model has 4 and 4096.
  const c10::Device cpu(c10::kCPU);
  const auto full = make_zoo_workload("gpt", "small");
  TrainSettings s = test::small_train();
  InferSettings i;
  i.batch_size = 2;
  i.steps = 2;
  i.warmup_steps = 0;
  const auto report = run_slices(*full, zoo_slices("gpt", "small", 0, {1, 2, 1024, 2048}), {s, i}, {"cpu", {}});
  REQUIRE(report.training);
  REQUIRE(report.training->slices.size() == 3);
  CHECK(report.training->slices[2].memory.parameters - report.training->slices[0].memory.parameters ==
        1024 * 256 * 4);  // the tied embedding/head's 1024 more rows, fp32
  const auto measured = measure_training(*full, s, cpu);
  const auto& x = report.training->extrapolated;
  CHECK(x.parameters == measured.memory.parameters);  // linear in both axes, exactly
  CHECK(x.gradients == measured.memory.gradients);
  CHECK(x.optimizer_state == measured.memory.optimizer_state);
  CHECK(relative(x.activations, measured.memory.activations) <= 0.03);
  CHECK(relative(x.peak, measured.memory.peak) <= 0.05);
  // Inference slices keep the real vocabulary (its working set is a maximum, not linear in the vocabulary).
  REQUIRE(report.inference);
  REQUIRE(report.inference->slices.size() == 2);
  const auto inferred = measure_inference(*full, i, cpu);
  const auto& y = report.inference->extrapolated;
  CHECK(y.parameters == inferred.memory.parameters);
  CHECK(relative(y.activations, inferred.memory.activations) <= 0.03);
  CHECK(relative(y.peak, inferred.memory.peak) <= 0.05);
  // Inference alone cannot slice the vocabulary.
  CHECK_THROWS_AS(run_slices(*full, zoo_slices("gpt", "small", 0, {1, 2, 1024, 2048}), {std::nullopt, i}, {"cpu", {}}),
                  InvalidArgument);
}

TEST_CASE("slices: a ResNet from slices of its stages matches the measured ledgers within 3%", "[slices]") {
  // A bottleneck ResNet on 32x32 images with stages of 2, 3, 1 and 2 blocks (stage 3 has no axis): slices with
  // every stage at 1 block, and one per stage of 2 or 3 blocks with it at 2.
  const c10::Device cpu(c10::kCPU);
  ResnetConfig c{32, 3, 8, {2, 3, 1, 2}, true, 10};
  const auto full = make_resnet_workload(c, "resnet (2,3,1,2)");
  SliceSource source;
  source.plan.axes = {{SliceAxisKind::stage_blocks, 1, 2, 1, 2},
                      {SliceAxisKind::stage_blocks, 2, 3, 1, 2},
                      {SliceAxisKind::stage_blocks, 4, 2, 1, 2}};
  source.make = [c](const SlicePlan& plan, size_t i) {
    const auto point = plan.point(i);
    auto slice = c;
    slice.blocks = {point[0], point[1], 1, point[2]};
    return make_resnet_workload(slice, "resnet slice");
  };
  TrainSettings s = test::small_train();
  const auto report = run_slices(*full, source, {s, std::nullopt}, {"cpu", {}});
  REQUIRE(report.training);
  REQUIRE(report.training->slices.size() == 4);
  const auto measured = measure_training(*full, s, cpu);
  const auto& x = report.training->extrapolated;
  CHECK(x.parameters == measured.memory.parameters);
  CHECK(x.gradients == measured.memory.gradients);
  CHECK(x.optimizer_state == measured.memory.optimizer_state);
  CHECK(relative(x.activations, measured.memory.activations) <= 0.03);
  CHECK(relative(x.peak, measured.memory.peak) <= 0.05);
}

TEST_CASE("the trace's CUDA rules reproduce the activations measured on the H200", "[predict]") {
  // tests/data/gpu-h200-tests-before-cuda-rules.txt holds the [gpu] matrix's failures from before the CUDA rules were
  // complete, each as "CHECK( p.activations == m.activations )", "predicted == measured" and the case
  // ("gpt bf16 checkpoint 1"). The rules made since must give each measured figure, here on the CPU.
  std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/tests/data/gpu-h200-tests-before-cuda-rules.txt");
  REQUIRE(in);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  int cases = 0;
  for (size_t i = 0; i + 5 < lines.size(); ++i) {
    if (lines[i].find("CHECK( p.activations == m.activations )") == std::string::npos) continue;
    std::istringstream values(lines[i + 2]), which(lines[i + 4]);
    int64_t predicted_then = 0, measured = 0;
    std::string hex, eq, model, precision, word;
    int64_t checkpoint = -1;
    values >> predicted_then >> hex >> eq >> measured;
    which >> model >> precision >> word >> checkpoint;
    REQUIRE(eq == "==");
    REQUIRE(word == "checkpoint");
    INFO(lines[i + 4] << ": measured " << measured << ", predicted then " << predicted_then);
    const auto w = make_zoo_workload(model, "tiny");
    TrainSettings s = test::small_train(OptimizerKind::adamw);  // as the [gpu] matrix (test_gpu.cpp)
    s.batch_size = 8;
    s.precision = parse_train_precision(precision);
    s.checkpoint_every = checkpoint;
    CHECK(predict_training_memory(*w, s, false, c10::Device(c10::kCUDA, 0)).activations == measured);
    ++cases;
  }
  // A regression count: the file lists 9 such failures (gpt fp32/bf16 x2, bert fp32/amp-bf16 x2/bf16 x2, llama
  // fp32), and a parser that read fewer would check less. The measured figures are the H200's, not the trace's.
  CHECK(cases == 9);
}

TEST_CASE("the CUDA rules reproduce the H200's inference ledgers in fp32, fp16, bf16 and fp8", "[predict]") {
  // docs/results/gpu-h200/infer-gpt2-small.json: gpt2-small at batches 1, 8 and 64 in fp32, fp16, bf16, int8
  // (at::_int_mm) and fp8 (at::_scaled_mm), measured on an H200 with LibTorch 2.11. The prediction (CUDA's rules,
  // here on the CPU) must give each row's weights, working set and peak. fp8's Linear layers have quantised their
  // inputs in fewer temporaries since; the working set peaks outside the Linear layers, so its rows still hold.
  // int8's rows measured a copy kept fp32 around its Linear layers, which is bf16 now: they wait for the GPU check.
  std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/docs/results/gpu-h200/infer-gpt2-small.json");
  REQUIRE(in);
  const auto report = nlohmann::json::parse(in);
  const auto w = make_zoo_workload("gpt", "gpt2-small");
  int rows = 0, int8_rows = 0;
  for (const auto& row : report.at("inference_sweep").at("rows")) {
    if (!row.at("fits").get<bool>()) continue;
    InferSettings s = test::small_infer();
    s.batch_size = row.at("batch_size").get<int64_t>();
    s.dtype = parse_inference_dtype(row.at("dtype").get<std::string>());
    if (s.dtype == InferenceDtype::int8) {
      ++int8_rows;
      continue;
    }
    const auto& m = row.at("result").at("memory");
    INFO("batch " << s.batch_size << " " << to_string(s.dtype) << ": measured " << m.dump());
    const auto p = predict_inference_memory(*w, s, c10::Device(c10::kCUDA, 0));
    CHECK(p.parameters == m.at("parameters").get<int64_t>());
    CHECK(p.packed_weights == 0);
    CHECK(p.activations == m.at("activations").get<int64_t>());
    CHECK(p.peak == m.at("peak").get<int64_t>());
    // The weights by hand, beside the H200's figure: GPT-2 small's 124,439,808 parameters (its head tied to the
    // token embedding) at 4 and 2 bytes in fp32 and fp16/bf16.
    if (s.dtype == InferenceDtype::fp32) CHECK(m.at("parameters").get<int64_t>() == 124439808LL * 4);
    if (s.dtype == InferenceDtype::fp16 || s.dtype == InferenceDtype::bf16)
      CHECK(m.at("parameters").get<int64_t>() == 124439808LL * 2);
    ++rows;
  }
  // Every dtype (fp32, fp16, bf16, int8, fp8) at every batch (1, 8, 64) fit on the H200; int8's 3 not compared.
  CHECK(rows == 4 * 3);
  CHECK(int8_rows == 3);
}

TEST_CASE("scripts/op-scratch.py: what one kernel leaves behind, and bad arguments get one line", "[predict]") {
  const std::string python = TVIE_PYTHON_WITH_TORCH;
  if (python.empty() || test::run_command(python + " -c 'import torch'").exit_code != 0) {
    TVIE_SKIP("no python with torch configured (TVIE_PYTHON; scripts/setup.sh sets it)");
  }
  const std::string script = python + " " + std::string(TVIE_SOURCE_DIR) + "/scripts/op-scratch.py ";
  // stdout only: LibTorch's profiler writes its own lines to stderr.
  const auto stdout_of = [&](const std::string& args) {
    return test::run_command("(" + script + args + " 2>/dev/null)");
  };
  const auto json_of = [](const std::string& out) {
    const auto start = out.find("{\"op\"");
    REQUIRE(start != std::string::npos);
    return nlohmann::json::parse(out.substr(start, out.find('\n', start) - start));
  };
  // fp32 Linear, 8 x 64 -> 128 with a bias: forward leaves its output, backward the three gradients.
  const auto linear = stdout_of("linear --rows 8 --in 64 --out 128 --json");
  INFO(linear.out);
  REQUIRE(linear.exit_code == 0);
  const auto l = json_of(linear.out);
  CHECK(l["input_bytes"] == 8 * 64 * 4);
  CHECK(l["output_bytes"] == 8 * 128 * 4);
  CHECK(l["weight_bytes"] == 64 * 128 * 4);
  CHECK(l["forward"]["left_bytes"] == 8 * 128 * 4);
  CHECK(l["backward"]["left_bytes"] == 8 * 64 * 4 + 64 * 128 * 4 + 128 * 4);
  CHECK(l["threads"] == 1);
  // bf16 Conv2d 8 -> 16, 3x3, stride 2 on 16x16 at two thread counts: the output, then dx + dW, whatever the
  // kernel holds in between.
  const auto conv =
      stdout_of("conv2d --batch 4 --cin 8 --cout 16 --kernel 3 --stride 2 --hw 16 --dtype bf16 --threads 1,2 --json");
  INFO(conv.out);
  REQUIRE(conv.exit_code == 0);
  const auto second = conv.out.find("{\"op\"", conv.out.find("{\"op\"") + 1);
  REQUIRE(second != std::string::npos);
  int threads = 1;
  for (const auto& c : {json_of(conv.out), json_of(conv.out.substr(second))}) {
    CHECK(c["threads"] == threads++);
    CHECK(c["dtype"] == "bf16");
    CHECK(c["forward"]["left_bytes"] == 4 * 16 * 8 * 8 * 2);
    CHECK(c["backward"]["left_bytes"] == 4 * 8 * 16 * 16 * 2 + 16 * 8 * 3 * 3 * 2);
  }
  // Bad arguments: argparse's exit code 2 and one line naming the option.
  const auto bad = test::run_command(script + "conv2d --threads 0");
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.find("--threads: got '0'; accepted: integers >= 1") != std::string::npos);
}

#if TVIE_WITH_CPU_KERNEL_SCRATCH
// The CPU plug-in's own rules against the kernels (predict/onednn_scratch.hpp, predict/onednn_bookings.hpp).
namespace {

// A convolution of the oneDNN scratch tests (padding kernel / 2, square images).
struct ConvCase {
  int64_t batch, cin, cout, kernel, stride, hw;
  bool input_grad;
  trace::onednn::ConvShape shape(int64_t threads) const {
    return {batch, cin, cout, kernel, stride, hw, (hw - 1) / stride + 1, input_grad, threads};
  }
};

// Each case at 1, 2 and 4 threads where LibTorch sends it to oneDNN: the fp32 rule against the kernels' allocations,
// to the byte (what the failure prints names the case and, where given, the weight-gradient kernel). Returns how
// many were compared.
int check_fp32_conv_rule(const std::vector<ConvCase>& cases,
                         trace::onednn::ConvScratch (*rule_of)(const trace::onednn::ConvShape&),
                         std::string (*kernel_of)(const trace::onednn::ConvShape&) = nullptr) {
  int compared = 0;
  for (const int64_t threads : {1, 2, 4}) {
    for (const auto& c : cases) {
      INFO("batch " << c.batch << " " << c.cin << " -> " << c.cout << " kernel " << c.kernel << " stride " << c.stride
                    << " " << c.hw << "x" << c.hw << ", " << threads << " thread(s)");
      const auto shape = c.shape(threads);
      if (!trace::onednn::conv_on_onednn(shape, 4)) continue;  // LibTorch's own kernel (the trace asks it too)
      const auto measured = trace::onednn::measure_conv(shape, 4);
      const auto rule = rule_of(shape);
      INFO((kernel_of ? "weight-gradient kernel " + kernel_of(shape) + "; " : std::string())
           << "forward: rule " << rule.forward_bytes << " B, measured " << measured.forward_bytes
           << " B; backward: rule " << rule.backward_bytes << " B, measured " << measured.backward_bytes << " B");
      CHECK(rule.forward_bytes == measured.forward_bytes);
      CHECK(rule.backward_bytes == measured.backward_bytes);
      ++compared;
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("oneDNN's fp32 convolution scratch on AVX-512: the layouts and bookings the trace writes out, per kernel",
          "[predict][cpu-kinds]") {
  const auto host = describe_host();
  const auto usable = [&](const char* f) {
    return std::find(host.cpu_features_usable.begin(), host.cpu_features_usable.end(), f) !=
           host.cpu_features_usable.end();
  };
  if (!usable("avx512f")) {
    TVIE_SKIP("oneDNN may not use AVX-512 here; its fp32 convolutions are the AVX2 kernels' (another rule)");
  }
  if (usable("amx_bf16")) {
    TVIE_SKIP(
        "written out and checked on AVX-512 CPUs without AMX (an Intel Xeon, an AMD EPYC); oneDNN may take "
        "other fp32 kernels where AMX is usable");
  }
  // Each path of onednn::avx512_fp32_conv: the weight gradient on a first convolution (3 input channels), on
  // jit:avx2 (8 and 5 input channels; with cpu_reducer's buffers where the threads split the batch), on
  // jit:avx512_core (16 channels, padded 24, the batch split or not), on jit_1x1 (plain, strided with rtus);
  // backward data blocked and strided (brgconv_strided, channels-last: its scratchpad grows with the output's
  // gradient, and with a row buffer where the input's width is odd, 7x7 here).
  const std::vector<ConvCase> cases{
      {8, 3, 8, 3, 1, 16, false},    {8, 8, 8, 3, 1, 16, true},     {8, 8, 16, 3, 2, 16, true},
      {8, 5, 16, 3, 1, 12, true},    {8, 16, 16, 3, 1, 8, true},    {3, 24, 40, 3, 1, 10, true},
      {8, 8, 16, 1, 2, 16, true},    {8, 32, 16, 1, 1, 8, true},    {2, 64, 256, 1, 1, 56, true},
      {2, 128, 128, 3, 1, 28, true}, {1, 256, 256, 3, 2, 28, true}, {8, 3, 16, 3, 1, 32, false},
      {2, 32, 64, 1, 2, 7, true},    {2, 128, 256, 3, 2, 28, true}};
  const int compared =
      check_fp32_conv_rule(cases, trace::onednn::avx512_fp32_conv, [](const trace::onednn::ConvShape& shape) {
        return std::string(trace::onednn::to_string(trace::onednn::fp32_conv_weight_kernel(shape)));
      });
  // A floor on how much ran, not a value: each shape compared above checks the trace against LibTorch's own
  // allocations; LibTorch keeps a few of the 42 (1x1 of stride 1 at one thread) to itself, which compare nothing.
  CHECK(compared >= 36);
}

TEST_CASE("oneDNN's fp32 convolution scratch on AVX2: the layouts and bookings the trace writes out, per kernel",
          "[predict][cpu-kinds]") {
  const auto host = describe_host();
  const auto usable = [&](const char* f) {
    return std::find(host.cpu_features_usable.begin(), host.cpu_features_usable.end(), f) !=
           host.cpu_features_usable.end();
  };
  if (usable("avx512f") || !usable("avx2")) {
    TVIE_SKIP("oneDNN may use " << (usable("avx512f") ? "AVX-512" : "no AVX2")
                                << " here; the rule is its AVX2 kernels' (checked under ONEDNN_MAX_CPU_ISA=AVX2 "
                                   "by the test of the kinds of CPU this one can emulate)");
  }
  // Each path of onednn::avx2_fp32_conv: the weight gradient of a first convolution (3 input channels, flat), of
  // jit:avx2 (blocks of 8, cpu_reducer where the threads split the batch), of jit_1x1:avx2 (cpu_reducer_2d; rtus when
  // strided), of the gemm kernel (a 3x3 filter over a 2x2 input); backward data blocked and strided
  // (brgconv_strided, with the row buffer for an odd width).
  const std::vector<ConvCase> cases{
      {8, 3, 8, 3, 1, 16, false}, {8, 8, 16, 3, 2, 16, true},   {8, 16, 16, 3, 1, 8, true},
      {8, 8, 8, 1, 1, 8, true},   {8, 16, 64, 1, 1, 4, true},   {8, 64, 128, 1, 2, 4, true},
      {2, 32, 64, 1, 2, 7, true}, {2, 64, 256, 1, 1, 56, true}, {8, 64, 64, 3, 2, 2, true}};
  const int compared = check_fp32_conv_rule(cases, trace::onednn::avx2_fp32_conv);
  // A floor on how much ran (as the AVX-512 test's): LibTorch keeps some of the 27 (1x1 of stride 1 at one thread).
  CHECK(compared >= 21);
}

TEST_CASE("oneDNN's bf16 convolution scratch: the bookings the trace writes out against the kernels' allocations",
          "[predict][cpu-kinds]") {
  if (!cpu_bf16_conv_scratch_modelled() || cpu_bf16_matmul_kernels() == CpuBf16Matmul::onednn_amx) {
    TVIE_SKIP(
        "this CPU does not run bf16 convolutions on oneDNN's avx512_core_bf16 kernels (needs AVX-512 without AMX; "
        "an AMX CPU runs this test under ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16); the rules written out are theirs "
        "(docs/metrics.md, \"Predicted memory\")");
  }
  // Equal to the byte on both kinds (with avx512_bf16, and emulating bf16 without it), but for the strided input
  // gradient with avx512_bf16 (brgconv_strided): its per-thread buffer is a fit (within 2%).
  const bool brgconv_strided_fit = cpu_bf16_matmul_kernels() != CpuBf16Matmul::onednn_avx512_emulated;
  const auto within = [](int64_t rule, int64_t measured, double bound) {
    return rule == measured || (measured > 0 && relative(rule, measured) <= bound);
  };
  // Each kernel path of predict/onednn_scratch.cpp: the gemm weight gradient (a first layer, and with the input's
  // gradient), the JIT kernel on a first convolution, on blocked and on padded channels, strided, and with the
  // full-spatial harness (128 channels); the 1x1 kernel plain, strided (rtus) and wider than 14 (no transposes).
  const std::vector<ConvCase> cases{
      {8, 3, 8, 3, 1, 16, false},    {8, 8, 8, 3, 1, 16, true},     {8, 3, 16, 3, 1, 32, false},
      {8, 16, 16, 3, 1, 8, true},    {3, 24, 40, 3, 1, 10, true},   {8, 16, 16, 3, 2, 8, true},
      {2, 128, 128, 3, 1, 28, true}, {8, 32, 16, 1, 1, 8, true},    {8, 8, 16, 1, 2, 16, true},
      {2, 64, 256, 1, 1, 56, true},  {2, 2048, 1024, 1, 1, 7, true}};
  // At 4 threads, more threads than images: the 1x1 kernel's threads in groups over channels (its store buffer a
  // group's channels wide; ResNet-50's 1024 -> 256 and 2048 -> 512), a strided 1x1 weight gradient whose batch
  // split balance() decides at unit stride (rtus), the backward data's positions rounded to the register blocking.
  const std::vector<ConvCase> four_threads{{2, 1024, 256, 1, 1, 14, true},
                                           {1, 2048, 512, 1, 1, 7, true},
                                           {16, 32, 64, 1, 2, 8, true},
                                           {2, 256, 64, 1, 1, 56, true}};
  for (const int64_t threads : {1, 2, 4}) {
    for (const auto& c : threads == 4 ? four_threads : cases) {
      INFO("batch " << c.batch << " " << c.cin << " -> " << c.cout << " kernel " << c.kernel << " stride " << c.stride
                    << " " << c.hw << "x" << c.hw << ", " << threads << " thread(s)");
      const auto shape = c.shape(threads);
      const auto measured = trace::onednn::measure_conv(shape, 2);
      const auto rule = trace::onednn::avx512_bf16_conv(shape);
      INFO("forward: rule " << rule.forward_bytes << " B, measured " << measured.forward_bytes << " B; backward: rule "
                            << rule.backward_bytes << " B, measured " << measured.backward_bytes << " B");
      CHECK(rule.forward_bytes == measured.forward_bytes);
      if (c.stride > 1 && c.input_grad && brgconv_strided_fit)
        CHECK(within(rule.backward_bytes, measured.backward_bytes, 0.02));
      else
        CHECK(rule.backward_bytes == measured.backward_bytes);
    }
  }
}

TEST_CASE("every prediction names how the CPU kernels' scratch was obtained: bookings, or the rules and why",
          "[predict][cpu-kinds]") {
  std::string how;
  const bool asked = trace::onednn::bookings_available(&how);
  INFO("oneDNN: " << how);
  const auto w = make_zoo_workload("cnn", "tiny");
  const auto train = predict_training_memory(*w, test::small_train());
  const auto infer = predict_inference_memory(*w, test::small_infer());
  const std::string source = kernel_scratch_source(c10::kCPU);
  CHECK(train.kernel_scratch_source == source);
  CHECK(infer.kernel_scratch_source == source);
  if (asked) {
    CHECK_THAT(source,
               Catch::StartsWith("oneDNN's kernels: their own bookings, asked of the oneDNN inside LibTorch (") &&
                   Catch::Contains(how) && Catch::Contains("oneDNN v"));
  } else {
    CHECK_THAT(source, Catch::StartsWith("oneDNN's kernels: the configurations written out") &&
                           Catch::Contains("cannot be asked: " + how));
  }
  const char* off = std::getenv("TVIE_ONEDNN_BOOKINGS");
  if (off != nullptr && std::string(off) == "0") {  // the run of the [cpu-kinds] tests with the bookings off
    CHECK_FALSE(asked);
    CHECK_THAT(source, Catch::Contains("turned off (TVIE_ONEDNN_BOOKINGS=0)"));
  }
  // On CUDA the ledger sees no kernel scratch (the caching allocator's statistics count tensors).
  CHECK_THAT(kernel_scratch_source(c10::Device("cuda")), Catch::StartsWith("none: "));
}

TEST_CASE("oneDNN's own bookings, asked of LibTorch's oneDNN: the convolutions' allocations to the byte",
          "[predict][cpu-kinds]") {
  std::string how;
  if (!trace::onednn::bookings_available(&how)) {
    TVIE_SKIP("LibTorch's oneDNN cannot be asked here (" << how
                                                         << "); the trace uses the kernels' configurations "
                                                            "written out in predict/onednn_scratch.cpp");
  }
  INFO("oneDNN: " << how);
  // Every kind of kernel the zoo's convolutions meet on this CPU, in fp32 and (where LibTorch sends bf16 to oneDNN)
  // bf16: first convolutions (3 input channels, no input gradient), blocked and padded channels, 1x1 plain and
  // strided, strided k x k, wide 1x1 (ResNet-50's), at 1, 2 and 4 threads (more threads than images).
  const std::vector<ConvCase> cases{
      {8, 3, 8, 3, 1, 16, false},    {8, 3, 16, 7, 2, 32, false},   {8, 8, 8, 3, 1, 16, true},
      {8, 8, 16, 3, 2, 16, true},    {8, 5, 16, 3, 1, 12, true},    {3, 24, 40, 3, 1, 10, true},
      {8, 32, 16, 1, 1, 8, true},    {8, 8, 16, 1, 2, 16, true},    {2, 64, 256, 1, 1, 56, true},
      {2, 128, 128, 3, 1, 28, true}, {1, 256, 256, 3, 2, 28, true}, {2, 1024, 256, 1, 1, 14, true},
      {16, 32, 64, 1, 2, 8, true}};
  int compared = 0;
  for (const int64_t element_bytes : {4, 2}) {
    for (const int64_t threads : {1, 2, 4}) {
      for (const auto& c : cases) {
        INFO((element_bytes == 4 ? "fp32" : "bf16")
             << ", batch " << c.batch << " " << c.cin << " -> " << c.cout << " kernel " << c.kernel << " stride "
             << c.stride << " " << c.hw << "x" << c.hw << ", " << threads << " thread(s)");
        const auto shape = c.shape(threads);
        if (!trace::onednn::conv_on_onednn(shape, element_bytes)) continue;  // LibTorch's own kernel
        const auto b = trace::onednn::conv_bookings(shape, element_bytes);
        REQUIRE(b.has_value());
        INFO("kernels: " << b->forward_kernel << ", " << b->data_kernel << ", " << b->weights_kernel);
        const auto booked = trace::onednn::conv_scratch(shape, element_bytes, *b);
        const auto measured = trace::onednn::measure_conv(shape, element_bytes);
        INFO("forward: bookings " << booked.forward_bytes << " B, measured " << measured.forward_bytes
                                  << " B; backward: bookings " << booked.backward_bytes << " B, measured "
                                  << measured.backward_bytes << " B");
        CHECK(booked.forward_bytes == measured.forward_bytes);
        CHECK(booked.backward_bytes == measured.backward_bytes);
        ++compared;
      }
    }
  }
  // A floor on how much ran, not a value: LibTorch keeps some of the 78 shapes to itself, and bf16 where the CPU
  // lacks AVX-512; each one compared checks oneDNN's bookings against LibTorch's allocations.
  CHECK(compared >= 30);
}

TEST_CASE("oneDNN's own bookings for a bf16 Linear's three products: what LibTorch allocates for them",
          "[predict][cpu-kinds]") {
  std::string how;
  if (!trace::onednn::bookings_available(&how)) {
    TVIE_SKIP("LibTorch's oneDNN cannot be asked here (" << how << ")");
  }
  if (!cpu_bf16_on_onednn()) {
    TVIE_SKIP("LibTorch runs bf16 matmuls on its own kernels here (no AVX-512), not on oneDNN");
  }
  // As LibTorch hands them to oneDNN: forward x W^T + b (W's transpose, the bias a sum), backward dy W and dy^T x;
  // the bytes each allocates above its result, measured, against the scratchpad oneDNN books. Odd shapes, 1 and 3
  // threads (the per-thread blocks).
  int compared = 0;
  for (const int threads : {1, 3}) {
    for (const auto& [rows, in, out] : {std::array<int64_t, 3>{37, 200, 96}, std::array<int64_t, 3>{130, 64, 320},
                                        std::array<int64_t, 3>{9, 600, 33}}) {
      const auto booked = trace::onednn::bf16_linear_bookings(rows, in, out, true, threads);
      REQUIRE(booked.has_value());
      const auto measured = trace::onednn::measure_bf16_linear(rows, in, out, threads);
      const std::array<std::tuple<const char*, int64_t, int64_t>, 3> products{
          {{"forward", booked->forward, measured.forward},
           {"input gradient", booked->input_grad, measured.input_grad},
           {"weight gradient", booked->weight_grad, measured.weight_grad}}};
      for (const auto& [name, booked_bytes, measured_bytes] : products) {
        INFO(name << " of a Linear " << in << " -> " << out << " over " << rows << " rows, " << threads
                  << " thread(s): booked " << booked_bytes << " B, measured " << measured_bytes << " B");
        CHECK(booked_bytes == measured_bytes);
        ++compared;
      }
    }
  }
  CHECK(compared == 18);
}
#endif

TEST_CASE("a CPU prediction names the plug-in that counted its kernels' scratch", "[predict]") {
  const auto w = make_zoo_workload("gpt", "tiny");
  const auto p = predict_training_memory(*w, test::small_train(OptimizerKind::adamw), false, c10::Device(c10::kCPU));
  INFO(p.kernel_scratch_source);
  if (TVIE_WITH_CPU_KERNEL_SCRATCH) {
    CHECK(p.kernel_scratch_source.rfind("oneDNN's kernels: ", 0) == 0);  // the CPU plug-in
  } else {
    CHECK(p.kernel_scratch_source ==
          "not predicted: this tvie was built without its CPU kernel-scratch plug-in (TVIE_CPU_KERNEL_SCRATCH=OFF)");
    CHECK_FALSE(cpu_bf16_matmul_scratch_modelled());
    CHECK_FALSE(cpu_bf16_conv_scratch_modelled());
  }
  const auto cuda =
      predict_training_memory(*w, test::small_train(OptimizerKind::adamw), false, c10::Device(c10::kCUDA, 0));
  CHECK(cuda.kernel_scratch_source.rfind("none: CUDA's kernels", 0) == 0);  // either way
}
