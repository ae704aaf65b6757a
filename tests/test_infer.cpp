// The inference path: int8 / fp8 Linear layers, accuracy against fp32, the batch x precision sweep with
// "does not fit" rows, the emulated CPU memory limit, TorchScript workloads and the max-QPS search.
#include <catch2/catch.hpp>

#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>

#include <cmath>
#include <filesystem>

#include "helpers.hpp"
#include "scenarios/qps_search.hpp"

namespace fs = std::filesystem;
using namespace tvie;

namespace {

InferSettings infer_at(int64_t batch, InferenceDtype dtype) {
  InferSettings s = test::small_infer();
  s.batch_size = batch;
  s.dtype = dtype;
  return s;
}

torch::Tensor output_of(const Workload& w, const InferSettings& s) {
  InferenceSession session(w, s, c10::Device(c10::kCPU));
  return session.run_batch().to(torch::kFloat32);
}

// A workload built from torch::nn::Linear (not tvie::nn::Linear): nothing for int8 to convert.
class PlainLinearWorkload final : public Workload {
 public:
  std::string name() const override { return "plain-linear"; }
  std::shared_ptr<torch::nn::Module> make_module() const override {
    auto m = std::make_shared<torch::nn::Module>();
    m->register_module("fc", torch::nn::Linear(8, 4));
    return m;
  }
  torch::Tensor forward(torch::nn::Module& m, const torch::Tensor& x) const override {
    return m.named_children()["fc"]->as<torch::nn::LinearImpl>()->forward(x);
  }
  Batch make_batch(int64_t b, const c10::Device& d, uint64_t) const override {
    return {torch::randn({b, 8}, d), torch::zeros({b}, d), b, 0};
  }
  torch::Tensor loss(const torch::Tensor& out, const Batch&) const override { return out.pow(2).mean(); }
};

// A small conv + batchnorm + relu + linear network written as TorchScript source, compiled in the test.
std::string save_script_model(const fs::path& dir) {
  torch::jit::Module m("TinyConvNet");
  torch::manual_seed(3);
  m.register_parameter("conv_w", torch::randn({8, 3, 3, 3}) * 0.2, false);
  m.register_parameter("conv_b", torch::randn({8}) * 0.1, false);
  m.register_buffer("bn_mean", torch::randn({8}) * 0.1);
  m.register_buffer("bn_var", torch::rand({8}) + 0.5);
  m.register_parameter("bn_w", torch::rand({8}) + 0.5, false);
  m.register_parameter("bn_b", torch::randn({8}) * 0.1, false);
  m.register_parameter("fc_w", torch::randn({10, 8}) * 0.3, false);
  m.register_parameter("fc_b", torch::randn({10}) * 0.1, false);
  m.define(R"JIT(
    def forward(self, x):
        # x: [B, 3, 16, 16] -> conv [B, 8, 16, 16] -> batchnorm (inference) -> relu -> mean [B, 8] -> [B, 10]
        y = torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1])
        y = torch.batch_norm(y, self.bn_w, self.bn_b, self.bn_mean, self.bn_var, False, 0.1, 1e-5, False)
        y = torch.relu(y)
        return torch.linear(y.mean([2, 3]), self.fc_w, self.fc_b)
  )JIT");
  const std::string path = (dir / "tiny_conv.pt").string();
  m.save(path);
  return path;
}

}  // namespace

TEST_CASE("tvie::nn::Linear initialises and computes exactly as torch::nn::Linear", "[infer]") {
  torch::manual_seed(7);
  torch::nn::Linear reference(24, 40);
  torch::manual_seed(7);
  nn::Linear ours(24, 40);
  CHECK(torch::equal(reference->weight, ours->weight));
  CHECK(torch::equal(reference->bias, ours->bias));
  const auto x = torch::randn({5, 3, 24});
  CHECK(torch::equal(reference->forward(x), ours->forward(x)));
}

TEST_CASE("int8 Linear on CPU computes dequantise(quantise(x)) x dequantise(quantise(W))^T + b", "[infer]") {
  torch::manual_seed(11);
  nn::Linear lin(48, 24);
  const auto w = lin->weight.detach().clone(), b = lin->bias.detach().clone();
  const auto x = torch::randn({5, 48}) * 2 + 0.5;
  torch::NoGradGuard no_grad;
  const auto dense = lin->forward(x);
  REQUIRE(nn::convert_linear_weights(*lin, nn::LinearWeights::int8_dynamic) == 1);
  const auto y = lin->forward(x);
  // The reference, written out: weights symmetric int8 per output channel (scale = row amax / 127, zero
  // point 0); activations asymmetric uint8 per tensor with fbgemm's reduced range (0..127), parameters
  // chosen as torch's dynamic quantisation chooses them; products in exact arithmetic (int32 sums).
  const auto w_scale = (w.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kFloat64);
  const auto wq = at::quantize_per_channel(w, w_scale, torch::zeros({24}, torch::kLong), 0, torch::kQInt8);
  const auto [x_scale, x_zero] = at::_choose_qparams_per_tensor(x, /*reduce_range=*/true);
  const auto xq = at::quantize_per_tensor(x, x_scale, x_zero, torch::kQUInt8);
  const auto reference = torch::matmul(xq.dequantize().to(torch::kFloat64), wq.dequantize().to(torch::kFloat64).t()) +
                         b.to(torch::kFloat64);
  const double scale = dense.abs().mean().item<double>();
  const double vs_reference = (y.to(torch::kFloat64) - reference).abs().max().item<double>();
  const double vs_dense = (y - dense).abs().max().item<double>();
  INFO("max |int8 - reference| " << vs_reference << ", max |int8 - fp32| " << vs_dense << ", mean |fp32| " << scale);
  CHECK(vs_reference <= 1e-5 * scale);   // the same numbers, up to fp32 rounding of the rescaling
  CHECK(vs_dense > 100 * vs_reference);  // while the quantisation error itself is much larger
}

TEST_CASE("int8 on CPU: mlp outputs near fp32 and weights about a quarter of fp32's", "[infer]") {
  auto w = make_zoo_workload("mlp", "small");
  const auto ref = output_of(*w, infer_at(64, InferenceDtype::fp32));
  const auto q = output_of(*w, infer_at(64, InferenceDtype::int8));
  const auto a = compare_outputs(ref, q);
  INFO("max " << a.max_abs_error << " mean " << a.mean_abs_error << " ref " << a.reference_mean_abs << " top1 "
              << a.top1_agreement);
  // Stated tolerance: mean error under 2% of the outputs' mean magnitude, top-1 agreement >= 95%.
  CHECK(a.mean_abs_error < 0.02 * a.reference_mean_abs);
  CHECK(a.top1_agreement >= 0.95);
  CHECK(a.max_abs_error > 0);  // it really ran in int8

  const auto fp32 = measure_inference(*w, infer_at(8, InferenceDtype::fp32), c10::Device(c10::kCPU));
  const auto int8 = measure_inference(*w, infer_at(8, InferenceDtype::int8), c10::Device(c10::kCPU));
  const double fp32_bytes = static_cast<double>(fp32.memory.parameters + fp32.memory.packed_weights);
  const double int8_bytes = static_cast<double>(int8.memory.parameters + int8.memory.packed_weights);
  INFO("fp32 " << fp32_bytes << " int8 " << int8_bytes << " (packed " << int8.memory.packed_weights << ")");
  CHECK(fp32.memory.packed_weights == 0);
  CHECK(fp32.memory.packed_weights_measured);  // nothing outside torch's allocator to measure
  // The packs are measured where glibc's heap can be read, and said not to be elsewhere (not a silent 0).
  CHECK(int8.memory.packed_weights_measured == tvie::heap_statistics_available());
  if (test::packs_measurable()) {
    CHECK(int8.memory.packed_weights > 0);  // fbgemm's packs, seen through glibc's heap
    // int8 weights + fp32 biases + per-channel scales: 0.25 of fp32 plus a little.
    CHECK(int8_bytes / fp32_bytes > 0.22);
    CHECK(int8_bytes / fp32_bytes < 0.32);
  }
}

TEST_CASE("int8 on CPU: gpt tiny logits near fp32", "[infer]") {
  auto w = make_zoo_workload("gpt", "tiny");
  const auto ref = output_of(*w, infer_at(4, InferenceDtype::fp32));
  const auto q = output_of(*w, infer_at(4, InferenceDtype::int8));
  const auto a = compare_outputs(ref, q);
  INFO("max " << a.max_abs_error << " mean " << a.mean_abs_error << " ref " << a.reference_mean_abs << " top1 "
              << a.top1_agreement);
  CHECK(a.mean_abs_error < 0.05 * a.reference_mean_abs);
  CHECK(a.top1_agreement >= 0.9);
  // No memory claim here: fbgemm pads its packed matrices to its cache blocks, and gpt tiny's 64-wide layers
  // come out larger packed in int8 than in fp32 (measured, README). The packs are there and counted.
  const auto int8 = measure_inference(*w, infer_at(2, InferenceDtype::int8), c10::Device(c10::kCPU));
  if (test::packs_measurable()) CHECK(int8.memory.packed_weights > 0);
  CHECK(int8.memory.peak >= int8.memory.parameters + int8.memory.packed_weights);
}

TEST_CASE("int8-weight-only Linear computes (x Wq^T) scale + b in bf16, and keeps widths its kernel cannot take dense",
          "[infer]") {
  torch::manual_seed(13);
  nn::Linear lin(48, 24);
  const auto w = lin->weight.detach().clone(), b = lin->bias.detach().clone();
  const auto x = (torch::randn({5, 48}) * 2 + 0.5).to(torch::kBFloat16);
  torch::NoGradGuard no_grad;
  REQUIRE(nn::convert_linear_weights(*lin, nn::LinearWeights::int8_weight_only) == 1);
  CHECK(lin->weight.numel() == 0);  // the dense copy released
  const auto y = lin->forward(x);
  CHECK(y.scalar_type() == torch::kBFloat16);
  // The reference, written out: weights symmetric int8 per output channel (scale = row amax / 127, held in bf16),
  // activations as they are (bf16), the products summed in fp64 here.
  const auto scale = (w.abs().amax(1) / 127.0).clamp_min(1e-12);
  const auto wq = (w / scale.unsqueeze(1)).round().clamp(-127, 127).to(torch::kFloat64);
  const auto reference =
      torch::matmul(x.to(torch::kFloat64), wq.t()) * scale.to(torch::kBFloat16).to(torch::kFloat64).unsqueeze(0) +
      b.to(torch::kBFloat16).to(torch::kFloat64);
  const double magnitude = reference.abs().max().item<double>();
  const double error = (y.to(torch::kFloat64) - reference).abs().max().item<double>();
  INFO("max |y - reference| " << error << ", max |reference| " << magnitude);
  CHECK(error <= 1e-2 * magnitude);  // bf16 rounding of the sums and of the bias addition: under 1%

  // The CPU kernel reads 16 inputs at a time: 24 input features stay dense (LibTorch would read past the rows).
  CHECK_FALSE(nn::linear_shape_supported(nn::LinearWeights::int8_weight_only, 24, 40));
  CHECK(nn::linear_shape_supported(nn::LinearWeights::int8_weight_only, 32, 7));
  nn::Linear narrow(24, 40);
  CHECK_FALSE(narrow->convert_weights(nn::LinearWeights::int8_weight_only));
  CHECK(narrow->weights_kind() == nn::LinearWeights::dense);
}

TEST_CASE("CUDA's W8A8 and fp8 Linear arithmetic, run on the CPU's _int_mm and _scaled_mm, against its reference",
          "[infer]") {
  const c10::Device cpu(c10::kCPU);
  std::vector<nn::LinearWeights> kinds;
  std::string why;
  for (auto kind : {nn::LinearWeights::int8_cuda, nn::LinearWeights::fp8_e4m3})
    if (nn::linear_kernel_available(kind, cpu, &why))
      kinds.push_back(kind);
    else
      TVIE_SKIP_PART(why);
  if (kinds.empty()) TVIE_SKIP("this LibTorch runs neither _int_mm nor _scaled_mm on the CPU");
  for (auto kind : kinds) {
    INFO(nn::to_string(kind));
    // CUDA's copy: bf16 around the quantised Linear (int8: fp16 before sm_80; bf16 here).
    torch::manual_seed(17);
    nn::Linear lin(48, 32);
    lin->to(torch::kBFloat16);
    const auto w = lin->weight.detach().to(torch::kFloat64), b = lin->bias.detach().to(torch::kFloat64);
    const auto x = (torch::randn({5, 48}) * 2 + 0.5).to(torch::kBFloat16);
    torch::NoGradGuard no_grad;
    const auto dense = lin->forward(x).to(torch::kFloat64);
    REQUIRE(lin->convert_weights(kind));
    CHECK(lin->weight.numel() == 0);  // the dense copy released
    const auto y = lin->forward(x);
    CHECK(y.scalar_type() == torch::kBFloat16);
    CHECK(y.sizes() == dense.sizes());
    // The reference, written out in fp64 from the bf16 input: int8 with one scale per input row (amax / 127) and one
    // per weight row, rounded to the nearest step; fp8 e4m3 with one scale per tensor (amax / 448), each value the
    // nearest e4m3 number. The input's quotient is held in bf16 before it is rounded, as the copy holds it (no fp32
    // copy of the activations).
    const auto xd = x.to(torch::kFloat64);
    const auto in_bf16 = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat64); };
    torch::Tensor xdq, wdq;
    if (kind == nn::LinearWeights::int8_cuda) {
      const auto xs = (xd.abs().amax(1, true) / 127).clamp_min(1e-12), ws = (w.abs().amax(1, true) / 127);
      xdq = in_bf16(xd / xs).round().clamp(-127, 127) * xs;
      wdq = (w / ws).round().clamp(-127, 127) * ws;
    } else {
      const auto xs = xd.abs().max() / 448, ws = w.abs().max() / 448;
      xdq = in_bf16(xd / xs).to(torch::kFloat8_e4m3fn).to(torch::kFloat64) * xs;
      wdq = (w / ws).to(torch::kFloat8_e4m3fn).to(torch::kFloat64) * ws;
    }
    const auto reference = torch::matmul(xdq, wdq.t()) + b;
    const double magnitude = reference.abs().max().item<double>();
    const double vs_reference = (y.to(torch::kFloat64) - reference).abs().max().item<double>();
    const double vs_dense = (y.to(torch::kFloat64) - dense).abs().max().item<double>();
    INFO("max |y - reference| " << vs_reference << ", max |y - bf16 dense| " << vs_dense << ", max |reference| "
                                << magnitude);
    // bf16 rounding of the rescaled sums and of the bias addition: under 1% of the largest output.
    CHECK(vs_reference <= 1e-2 * magnitude);
    CHECK(vs_dense > vs_reference);  // it ran quantised: the quantisation's error is above the rounding's
  }
  // A whole copy as CUDA holds it, gpt tiny in bf16 with its Linear layers converted: logits near fp32's.
  for (auto kind : kinds) {
    INFO(nn::to_string(kind));
    const auto w = make_zoo_workload("gpt", "tiny");
    torch::manual_seed(5);
    const auto reference = w->make_module();
    torch::manual_seed(5);
    const auto copy = w->make_module();
    copy->to(torch::kBFloat16);
    int64_t kept_dense = 0;
    const int64_t converted = nn::convert_linear_weights(*copy, kind, &kept_dense);
    CHECK(converted >= 4);
    torch::NoGradGuard no_grad;
    reference->eval(), copy->eval();
    const Batch batch = w->make_batch(4, cpu, 0);
    const auto a =
        compare_outputs(w->forward(*reference, batch.input), w->forward(*copy, batch.input).to(torch::kFloat32));
    INFO("converted " << converted << ", kept dense " << kept_dense << ", mean " << a.mean_abs_error << " ref "
                      << a.reference_mean_abs << " top1 " << a.top1_agreement);
    CHECK(a.max_abs_error > 0);
    CHECK(a.mean_abs_error < 0.05 * a.reference_mean_abs);
    CHECK(a.top1_agreement >= 0.9);
  }
}

TEST_CASE("int8-weight-only inference on CPU: every ledger category as predicted, logits near fp32, scheme named",
          "[infer][ledger]") {
  const c10::Device cpu(c10::kCPU);
  for (const char* model : {"mlp", "gpt", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (int64_t batch : {1, 3}) {
      INFO(model << " tiny, batch " << batch);
      const auto s = infer_at(batch, InferenceDtype::int8_weight_only);
      const auto a = w->estimate_activations(activation_query(s, cpu));
      const auto r = measure_inference(*w, s, cpu);
      CHECK(r.linears_converted >= 1);
      CHECK(a.quantised_linears == r.linears_converted);
      CHECK(a.dense_linears == r.linears_kept_dense);
      CHECK(r.memory.packed_weights == 0);  // everything in LibTorch's allocator
      CHECK(r.predicted.parameters == r.memory.parameters);
      CHECK(r.predicted.activations == r.memory.activations);
      CHECK(r.predicted.peak == r.memory.peak);
      // int8 Linear weights: less than the bf16 copy's
      CHECK(r.memory.parameters < w->facts().parameter_count * 2);
      CHECK(r.scheme == nn::inference_scheme(InferenceDtype::int8_weight_only, cpu));
    }
  }
  CHECK_THAT(nn::inference_scheme(InferenceDtype::int8_weight_only, cpu), Catch::Contains("_weight_int8pack_mm"));
  CHECK_THAT(nn::inference_scheme(InferenceDtype::int8, cpu), Catch::Contains("quantized::linear_dynamic"));
  auto gpt = make_zoo_workload("gpt", "tiny");
  const auto a = compare_outputs(output_of(*gpt, infer_at(4, InferenceDtype::fp32)),
                                 output_of(*gpt, infer_at(4, InferenceDtype::int8_weight_only)));
  INFO("max " << a.max_abs_error << " mean " << a.mean_abs_error << " ref " << a.reference_mean_abs << " top1 "
              << a.top1_agreement);
  CHECK(a.max_abs_error > 0);  // it really ran quantised
  CHECK(a.mean_abs_error < 0.05 * a.reference_mean_abs);
  CHECK(a.top1_agreement >= 0.9);
}

TEST_CASE("int8 without tvie::nn::Linear layers and fp8 on CPU are refused", "[infer]") {
  PlainLinearWorkload plain;
  try {
    InferenceSession session(plain, infer_at(2, InferenceDtype::int8), c10::Device(c10::kCPU));
    FAIL("int8 accepted a model without tvie::nn::Linear");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "infer.dtype");
    CHECK_THAT(e.accepted(), Catch::Contains("tvie::nn::Linear"));
  }
  try {
    validate(infer_at(2, InferenceDtype::fp8), c10::Device(c10::kCPU));
    FAIL("fp8 accepted on the CPU");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "infer.dtype");
    CHECK(e.value() == "fp8");
    CHECK_THAT(e.accepted(), Catch::Contains("compute capability 8.9"));
  }
}

TEST_CASE("the inference copy's floating dtype: int8 keeps fp32 on the CPU and bf16 on CUDA", "[infer]") {
  const c10::Device cpu(c10::kCPU), cuda(c10::kCUDA, 0);
  using nn::inference_floating_dtype;
  CHECK(inference_floating_dtype(InferenceDtype::int8, cpu) == c10::kFloat);  // fbgemm takes and returns fp32
  for (auto d : {InferenceDtype::fp8, InferenceDtype::int8_weight_only, InferenceDtype::bf16}) {
    CHECK(inference_floating_dtype(d, cpu) == c10::kBFloat16);
    CHECK(inference_floating_dtype(d, cuda) == c10::kBFloat16);
  }
  CHECK(inference_floating_dtype(InferenceDtype::fp16, cuda) == c10::kHalf);
  CHECK(inference_floating_dtype(InferenceDtype::fp32, cuda) == c10::kFloat);
  // CUDA's W8A8 copy: bf16 where the GPU has bf16 units (compute capability >= 8.0), fp16 before; a build without
  // a GPU to ask takes the bf16 of the cards tvie projects onto.
  bool bf16_units = true;
  if (torch::cuda::is_available()) bf16_units = std::stoi(describe_gpu(cuda)->compute_capability) >= 8;  // "9.0" -> 9
  CHECK(inference_floating_dtype(InferenceDtype::int8, cuda) == (bf16_units ? c10::kBFloat16 : c10::kHalf));
}

TEST_CASE("compare_outputs: errors and top-1 agreement", "[infer]") {
  const auto ref = torch::tensor({{1.0f, 3.0f, 2.0f}, {0.0f, -1.0f, 5.0f}});
  const auto out = torch::tensor({{1.0f, 2.6f, 2.5f}, {0.5f, -1.0f, 5.0f}});
  const auto a = compare_outputs(ref, out);
  CHECK(a.max_abs_error == Approx(0.5));
  CHECK(a.mean_abs_error == Approx((0 + 0.4 + 0.5 + 0.5 + 0 + 0) / 6.0));
  CHECK(a.reference_mean_abs == Approx(12.0 / 6.0));
  CHECK(a.rows == 2);
  CHECK(a.top1_agreement == Approx(1.0));  // row 0: argmax 1 in both; row 1: argmax 2 in both
  const auto b = compare_outputs(ref, torch::tensor({{3.0f, 1.0f, 2.0f}, {0.0f, -1.0f, 5.0f}}));
  CHECK(b.top1_agreement == Approx(0.5));
  CHECK_THROWS_AS(compare_outputs(ref, torch::zeros({3, 2})), Error);
}

TEST_CASE("ScopedCpuMemoryLimit: a cumulative limit on live tensor bytes, nested, and OOM in training", "[infer]") {
  constexpr int64_t KiB = 1024;
  const auto bytes = [](int64_t n) { return torch::empty({n}, torch::kUInt8); };
  {
    ScopedCpuMemoryLimit limit(1024 * KiB);  // 1 MiB above what is live now
    auto first = bytes(600 * KiB);           // fits
    // A second 600 KiB would be 1200 KiB live: refused, though it is under the limit on its own.
    CHECK_THROWS_AS(bytes(600 * KiB), c10::OutOfMemoryError);
    first.reset();
    CHECK_NOTHROW(bytes(600 * KiB));  // the first is freed: it fits again
    {
      ScopedCpuMemoryLimit inner(256 * KiB);  // tighter than the outer limit
      CHECK_THROWS_AS(bytes(300 * KiB), c10::OutOfMemoryError);
      CHECK_NOTHROW(bytes(200 * KiB));
      {
        ScopedCpuMemoryLimit looser(4096 * KiB);  // cannot lift the limits around it
        CHECK_THROWS_AS(bytes(300 * KiB), c10::OutOfMemoryError);
      }
      CHECK_THROWS_AS(bytes(300 * KiB), c10::OutOfMemoryError);  // the inner limit is back
    }
    CHECK_NOTHROW(bytes(600 * KiB));                            // the outer limit is back...
    CHECK_THROWS_AS(bytes(2048 * KiB), c10::OutOfMemoryError);  // ...and still holds
  }
  CHECK_NOTHROW(bytes(2048 * KiB));  // lifted with the scope

  // Training that does not fit is a result with a typed error, not a crash.
  auto w = make_zoo_workload("gpt", "tiny");
  ScopedCpuMemoryLimit tiny(64 * KiB);  // less than gpt tiny's 463 KiB of weights
  try {
    measure_training(*w, test::small_train(), c10::Device(c10::kCPU));
    FAIL("training fitted in 64 KiB");
  } catch (const OutOfMemory& e) {
    CHECK_THAT(e.what(), Catch::Contains("training gpt") && Catch::Contains("does not fit on cpu"));
  }
}

TEST_CASE("inference sweep: rows per batch and dtype, accuracy for reduced precisions, 'does not fit' goes on",
          "[infer]") {
  auto w = make_zoo_workload("gpt", "tiny");
  const auto cpu = c10::Device(c10::kCPU);
  // The emulated device: four times what batch 2 needs at its peak (rounded up to MiB).
  const auto at2 = measure_inference(*w, infer_at(2, InferenceDtype::fp32), cpu);
  InferSweepSettings s;
  s.batch_sizes = {1, 2048, 2};  // 2048 needs ~1000x batch 2's activations: it cannot fit
  s.dtypes = {InferenceDtype::int8, InferenceDtype::fp32, InferenceDtype::bf16};
  s.steps = 2;
  s.warmup_steps = 0;
  s.cpu_memory_limit_mb = (4 * at2.memory.peak) / (1024 * 1024) + 1;
  const auto r = measure_inference_sweep(*w, s, cpu);
  REQUIRE(r.rows.size() == 9);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    CHECK(row.batch_size == s.batch_sizes[i / 3]);
    CHECK(row.dtype == s.dtypes[i % 3]);  // in the order given, fp32 measured first internally
    if (row.batch_size == 2048) {
      CHECK_FALSE(row.fits);
      CHECK_THAT(row.does_not_fit, Catch::Contains("does not fit") && Catch::Contains("emulated limit"));
      CHECK_FALSE(row.has_accuracy);
      continue;
    }
    REQUIRE(row.fits);
    CHECK(row.result.timed_batches == 2);
    CHECK(row.result.memory.peak > 0);
    CHECK(row.has_accuracy == (row.dtype != InferenceDtype::fp32));
    if (row.has_accuracy) {
      CHECK(row.accuracy.rows == row.batch_size * w->facts().tokens_per_sample);
      CHECK(row.accuracy.max_abs_error > 0);
      CHECK(row.accuracy.mean_abs_error < 0.05 * row.accuracy.reference_mean_abs);
    }
  }
  // bf16 halves the weights of the converted copy (embeddings included).
  CHECK(r.rows[2].result.memory.parameters * 2 == Approx(r.rows[1].result.memory.parameters).epsilon(0.01));
}

TEST_CASE("inference sweep settings are validated under their own field names", "[infer]") {
  InferSweepSettings s;
  s.batch_sizes = {4, 0};
  try {
    validate(s, c10::Device(c10::kCPU));
    FAIL("batch 0 accepted");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "infer_sweep.batch_sizes");
  }
  s.batch_sizes = {4};
  s.dtypes = {InferenceDtype::fp32, InferenceDtype::fp16};
  try {
    validate(s, c10::Device(c10::kCPU));
    FAIL("fp16 accepted on the CPU");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "infer_sweep.dtypes");
  }
}

TEST_CASE("TorchScript: a module compiled from source loads and runs as a Workload, frozen or not", "[infer]") {
  test::TempDir dir("tvie-infer");
  const std::string path = save_script_model(dir.path);
  const auto direct = [&] {
    auto m = torch::jit::load(path);
    m.eval();
    auto batch = make_torchscript_workload({path, {3, 16, 16}})->make_batch(4, c10::Device(c10::kCPU), 0);
    c10::InferenceMode guard;
    return m.forward({batch.input}).toTensor();
  }();
  REQUIRE(direct.sizes() == torch::IntArrayRef({4, 10}));
  for (auto fusion : {ScriptFusion::none, ScriptFusion::freeze, ScriptFusion::optimize}) {
    TorchScriptSettings ts{path, {3, 16, 16}};
    ts.fusion = fusion;
    auto w = make_torchscript_workload(ts);
    CHECK(w->facts().parameter_count == 8 * 3 * 3 * 3 + 8 + 8 + 8 + 10 * 8 + 10);
    // FLOPs per sample from the profiler, against the shapes: the 3x3 conv 3 -> 8 over 16x16 outputs, and
    // the 8 -> 10 Linear (an addmm), 2 FLOPs per multiply-add.
    CHECK(w->facts().forward_flops_per_sample == Approx(2.0 * 8 * 3 * 3 * 3 * 16 * 16 + 2.0 * 8 * 10));
    CHECK_THAT(w->facts().flops_source, Catch::Contains("aten::conv2d") && Catch::Contains("aten::addmm"));
    const auto out = output_of(*w, infer_at(4, InferenceDtype::fp32));
    INFO("fusion " << to_string(fusion));
    CHECK(torch::allclose(out, direct, 1e-5, 1e-5));
    const auto r = measure_inference(*w, infer_at(4, InferenceDtype::fp32), c10::Device(c10::kCPU));
    // The weights row is the weights exactly, from the shapes: as loaded, every parameter and buffer in
    // fp32; frozen, the batchnorm is folded into the convolution (its scale and shift become the conv's
    // weight and a new bias) and its parameters and running statistics are gone. optimize_for_inference
    // may also keep a transposed copy of the Linear weight for its matmul (LibTorch 2.14 does).
    const int64_t conv = 8 * 3 * 3 * 3 + 8, bn = 4 * 8, fc = 10 * 8 + 10;
    if (fusion == ScriptFusion::none) CHECK(r.memory.parameters == 4 * (conv + bn + fc));
    if (fusion == ScriptFusion::freeze) CHECK(r.memory.parameters == 4 * (conv + fc));
    if (fusion == ScriptFusion::optimize) {
      CHECK(r.memory.parameters >= 4 * (conv + fc));
      CHECK(r.memory.parameters <= 4 * (conv + fc + 10 * 8));
    }
  }
  // The same workload trains (synthetic loss): parameters change after one step.
  auto w = make_torchscript_workload({path, {3, 16, 16}});
  auto t = test::small_train(OptimizerKind::sgd);
  t.steps = 1;
  const auto trained = measure_training(*w, t, c10::Device(c10::kCPU));
  CHECK(trained.memory.gradients == 4 * w->facts().parameter_count);  // fp32, one per parameter; none for buffers
}

TEST_CASE("TorchScript settings are validated", "[infer]") {
  CHECK_THROWS_AS(make_torchscript_workload({"/nonexistent/model.pt", {4}}), InvalidArgument);
  test::TempDir dir("tvie-infer");
  const auto bogus = (dir.path / "bogus.pt").string();
  std::ofstream(bogus) << "not a zip archive";
  try {
    make_torchscript_workload({bogus, {4}});
    FAIL("a bogus file loaded");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "torchscript.path");
  }
  const std::string path = save_script_model(dir.path);
  try {
    make_torchscript_workload({path, {}});
    FAIL("no input shape accepted");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "torchscript.input_shape");
  }
  // A shape the model rejects (4 channels into a 3-channel convolution): one line naming the shape and the
  // interpreter's reason, before anything runs.
  try {
    make_torchscript_workload({path, {4, 16, 16}});
    FAIL("a 4-channel input accepted by a 3-channel convolution");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "torchscript.input_shape");
    CHECK(e.value() == "4,16,16");
    CHECK_THAT(e.accepted(), Catch::Contains("a batch of 2 of this shape failed") && Catch::Contains("channels"));
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
  // A forward that returns a tuple, not a tensor.
  {
    torch::jit::Module pair("Pair");
    pair.define(R"JIT(
    def forward(self, x):
        return (x, x)
    )JIT");
    const auto pair_path = (dir.path / "pair.pt").string();
    pair.save(pair_path);
    try {
      make_torchscript_workload({pair_path, {4}});
      FAIL("a tuple output accepted");
    } catch (const InvalidArgument& e) {
      CHECK(e.field() == "torchscript.path");
      CHECK_THAT(e.accepted(), Catch::Contains("returns one tensor") && Catch::Contains("Tuple"));
    }
  }
  // A zip archive in PyTorch's own container format that holds no script module.
  {
    const auto zip_path = (dir.path / "not-a-module.pt").string();
    {
      caffe2::serialize::PyTorchStreamWriter writer(zip_path);
      const std::string text = "not a module";
      writer.writeRecord("notes.txt", text.data(), text.size());
      writer.writeEndOfFile();
    }
    try {
      make_torchscript_workload({zip_path, {4}});
      FAIL("a zip without a module loaded");
    } catch (const InvalidArgument& e) {
      CHECK(e.field() == "torchscript.path");
      CHECK_THAT(e.accepted(), Catch::Contains("torch.jit.save"));
    }
  }
}

TEST_CASE("max-QPS search: the time left, announced before each probe, bounds what follows", "[infer]") {
  // A probe at q runs 64 / q seconds. Each announced pair (the rest if the probe meets the bound, if it misses) is
  // the worked bound of qps_search.hpp, and the branch the probe takes is never less than the probes that follow.
  const auto seconds = [](double q) { return 64 / q; };
  struct Said {
    double qps, if_meets_s, if_misses_s;
  };
  const auto check = [&](double start, double lowest, const std::function<bool(double)>& meets,
                         const std::vector<Said>& expected) {
    std::vector<Said> said;
    tvie::detail::search_max_qps_announcing(start, 2, meets, lowest, {}, seconds,
                                            [&](double q, const tvie::detail::RestBound& rest) {
                                              said.push_back({q, rest.if_meets_s, rest.if_misses_s});
                                            });
    REQUIRE(said.size() == expected.size());
    for (size_t i = 0; i < said.size(); ++i) {
      INFO("probe " << i << " at " << said[i].qps << " QPS");
      CHECK(said[i].qps == expected[i].qps);
      CHECK(said[i].if_meets_s == Approx(expected[i].if_meets_s).epsilon(1e-6));
      CHECK(said[i].if_misses_s == Approx(expected[i].if_misses_s).epsilon(1e-6));
      double after = 0;
      for (size_t j = i + 1; j < said.size(); ++j) after += seconds(said[j].qps);
      CHECK(after <= (meets(said[i].qps) ? said[i].if_meets_s : said[i].if_misses_s) + 1e-9);
    }
  };
  // Bracketed from below: 50 passes (had it missed: 1.28 s x 510 halved down to 50/256 QPS, then two refinements
  // at that rate, 1,308.16 s; it meets: two refinements at 50 and doublings 100 ... 50 x 2^16, 2.56 + 1.28 x
  // (1 - 2^-16) s); then 100 passes, 200 misses (two refinements at 100: 1.28 s), bisection.
  const double tail = 1 - std::ldexp(1.0, -16);
  check(50, 0, [](double q) { return q <= 137; },
        {{50, 2.56 + 1.28 * tail, 1308.16},
         {100, 1.28 + 0.64 * (1 - std::ldexp(1.0, -15)), 2.56},
         {200, 0.64 + 0.32 * (1 - std::ldexp(1.0, -14)), 1.28},
         {150, 0.64, 0.64},
         {125, 0, 0}});
  // Nothing passes: halving down to the lowest rate (9 QPS) and two refinements at the lowest rate probed; had a
  // halved rate met the bound, two refinements at it.
  check(40, 9, [](double) { return false; }, {{40, 3.2 + 1.6 * tail, 22.4}, {20, 6.4, 19.2}, {10, 12.8, 0}});
}

TEST_CASE("max-QPS search: doubles to a bracket, then bisects", "[infer]") {
  std::vector<double> tried;
  const auto b = search_max_qps(50, 4, [&](double q) {
    tried.push_back(q);
    return q <= 137;
  });
  CHECK(tried == std::vector<double>{50, 100, 200, 150, 125, 137.5, 131.25});
  CHECK(b.max_qps == 131.25);
  CHECK(b.first_miss_qps == 137.5);
  // Starting above the bound halves until a rate passes.
  tried.clear();
  const auto h = search_max_qps(400, 1, [&](double q) {
    tried.push_back(q);
    return q <= 60;
  });
  CHECK(tried == std::vector<double>{400, 200, 100, 50, 75});
  CHECK(h.max_qps == 50);
  CHECK(h.first_miss_qps == 75);
  // Nothing passes: max 0.
  const auto none = search_max_qps(10, 2, [](double) { return false; });
  CHECK(none.max_qps == 0);
  // Halving stops at the lowest rate allowed (a probe below it would run too long) ...
  tried.clear();
  const auto floor = search_max_qps(
      40, 2,
      [&](double q) {
        tried.push_back(q);
        return false;
      },
      9);
  CHECK(tried == std::vector<double>{40, 20, 10});
  CHECK(floor.max_qps == 0);
  // ... and once lower rates are hopeless (the caller's judgement, after each miss).
  tried.clear();
  search_max_qps(
      40, 2,
      [&](double q) {
        tried.push_back(q);
        return false;
      },
      0, [&] { return tried.size() >= 2; });
  CHECK(tried == std::vector<double>{40, 20});
}
