// The profiler-counted work of workloads without a trace (tvie/projection.hpp, profiled_work) and `tvie plan`
// of such a workload.
#include <catch2/catch.hpp>

#include <tvie/tvie.hpp>

#include "helpers.hpp"

using namespace tvie;

namespace {

// A user's own module, as a researcher brings it: no trace (estimate_activations is not overridden).
// x [B, 64] -> Linear(64, 128) -> ReLU -> Linear(128, 10) -> logits [B, 10].
class UntracedMlp final : public Workload {
 public:
  std::string name() const override { return "untraced-mlp"; }
  std::shared_ptr<torch::nn::Module> make_module() const override {
    auto net = std::make_shared<torch::nn::SequentialImpl>(torch::nn::Linear(64, 128), torch::nn::ReLU(),
                                                           torch::nn::Linear(128, 10));
    return net;
  }
  torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const override {
    return static_cast<torch::nn::SequentialImpl&>(module).forward(input);
  }
  Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const override {
    torch::manual_seed(seed);
    Batch b;
    b.input = torch::randn({batch_size, 64}, torch::TensorOptions(device));
    b.target = torch::randint(0, 10, {batch_size}, torch::TensorOptions(device).dtype(torch::kLong));
    b.samples = batch_size;
    return b;
  }
  torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const override {
    return torch::nn::functional::cross_entropy(output, batch.target);
  }
  ModelFacts facts() const override {
    ModelFacts f;
    f.parameter_count = 64 * 128 + 128 + 128 * 10 + 10;
    return f;  // forward_flops_per_sample left 0: the profiler's count stands in
  }
};

constexpr double kLayer1 = 64 * 128, kLayer2 = 128 * 10;

}  // namespace

TEST_CASE("profiled work of a module without a trace: matmul FLOPs exact at any batch, weights read once",
          "[projection][pure]") {
  const UntracedMlp w;
  REQUIRE_FALSE(w.estimate_activations(activation_query(TrainSettings{})).known);
  for (int64_t b : {1, 2, 8, 100}) {
    INFO("batch " << b);
    const ProfiledWork p = profiled_work(w, b, /*training=*/true);
    // Forward: two addmm, 2 FLOPs per multiply-add.
    CHECK(p.forward[OpClass::matmul].flops == Approx(2.0 * double(b) * (kLayer1 + kLayer2)).epsilon(1e-12));
    // Backward: the weights' gradients of both layers, the input's gradient of the second only (the first
    // layer's input needs none).
    CHECK(p.backward[OpClass::matmul].flops == Approx(2.0 * double(b) * (kLayer1 + 2 * kLayer2)).epsilon(1e-12));
    // The weights (and biases) are read once per forward whatever the batch: every parameter element.
    CHECK(p.forward[OpClass::matmul].weight_elements == double(w.facts().parameter_count));
    CHECK(p.forward[OpClass::matmul].kernels == 2);
    CHECK(p.forward[OpClass::elementwise].bytes > 0);  // the ReLU
    CHECK(p.forward[OpClass::convolution].flops == 0);
    CHECK(p.forward_flops_per_sample == Approx(2.0 * (kLayer1 + kLayer2)));
    CHECK(p.parameter_tensors == 4);
  }
  // Inference: the forward alone, the same matmul FLOPs, no backward.
  const ProfiledWork i = profiled_work(w, 8, /*training=*/false);
  CHECK(i.forward[OpClass::matmul].flops == Approx(2.0 * 8 * (kLayer1 + kLayer2)));
  CHECK(i.backward.total().flops == 0);
  CHECK_THROWS_WITH(profiled_work(w, 0, true), Catch::Contains("batch_size"));
}

TEST_CASE("the profiler's count of a zoo model agrees with its trace on matmul FLOPs", "[projection][pure]") {
  // The zoo's trace is the reference where both exist: gpt tiny's forward (attention as its own class in both).
  const auto gpt = make_zoo_workload("gpt", "tiny");
  InferSettings s;
  s.batch_size = 4;
  const ActivationEstimate traced = gpt->estimate_activations(activation_query(s));
  REQUIRE(traced.known);
  const ProfiledWork p = profiled_work(*gpt, 4, /*training=*/false);
  CHECK(p.forward[OpClass::matmul].flops == Approx(traced.forward_work[OpClass::matmul].flops).epsilon(0.02));
  // The profiler records no flag values, so causal attention counts its whole S x S score matrix: twice the
  // trace's (which halves it for causal masking). Documented as an upper bound.
  CHECK(p.forward[OpClass::attention].flops == Approx(2 * traced.forward_work[OpClass::attention].flops).epsilon(0.02));
}

TEST_CASE("memory of a workload without a trace: measured at batches 2 and 3, extrapolated to the batch asked",
          "[projection]") {
  const UntracedMlp w;
  REQUIRE(predict_training_memory(w, test::small_train()).peak == -1);  // what the trace cannot give
  for (auto optimizer : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    TrainSettings s = test::small_train(optimizer);
    s.batch_size = 64;
    INFO(to_string(optimizer));
    const PredictedTrainingMemory x = extrapolated_training_memory(w, s);
    const TrainingMemory m = test::measure_ledger(w, s, c10::Device(c10::kCPU));
    // What the batch does not change: as measured, to the byte.
    CHECK(x.parameters == m.parameters);
    CHECK(x.gradients == m.gradients);
    CHECK(x.optimizer_state == m.optimizer_state);
    CHECK(x.batch == m.batch);
    // An MLP's saved activations and transients grow linearly with the batch: the extrapolation from 2 and 3
    // samples lands on the measurement at 64. The peak moves (SGD: at the end of backward, every gradient alive,
    // at 2 samples; at its start, every activation alive, at 64): each moment on its own line finds it.
    CHECK(x.activations == m.activations);
    CHECK(x.peak == Approx(m.peak).epsilon(0.02));
  }
  InferSettings i = test::small_infer();
  i.batch_size = 64;
  const PredictedInferenceMemory xi = extrapolated_inference_memory(w, i);
  const InferenceMemory mi = measure_inference(w, i, c10::Device(c10::kCPU)).memory;
  CHECK(xi.parameters == mi.parameters);
  CHECK(xi.batch == mi.batch);
  CHECK(xi.peak == Approx(mi.peak).epsilon(0.02));
  TrainSettings fp16 = test::small_train();
  fp16.precision = TrainPrecision::amp_fp16;
  CHECK_THROWS_AS(extrapolated_training_memory(w, fp16), InvalidArgument);  // needs CUDA: refused, not guessed
}

TEST_CASE("tvie plan of a workload without a trace: profiled work, memory measured on the CPU and said so",
          "[projection]") {
  const UntracedMlp w;
  PlanSettings s;
  s.cards = "h100-sxm,l4";
  s.include_host = false;
  s.train.batch_size = 32;
  s.infer.batch_size = 1;
  s.infer.dtype = InferenceDtype::fp32;
  const PlanReport r = run_plan(w, s, {"cpu"});
  CHECK(r.training_work.profiled);
  CHECK(r.inference_work.profiled);
  CHECK(r.training_work.model_flops == Approx(3.0 * 32 * 2 * (kLayer1 + kLayer2)));
  TrainSettings at32 = s.train;
  const int64_t extrapolated = extrapolated_training_memory(w, at32).peak;
  REQUIRE(r.cards.size() == 2);
  for (const auto& c : r.cards) {
    INFO(c.card.id);
    CHECK(c.training.peak_bytes == extrapolated);
    CHECK(c.training.peak_note.find("measured on this CPU") != std::string::npos);
    CHECK(c.training.fits);  // a 10k-parameter model
    CHECK(c.training.largest_batch == s.max_batch);
    CHECK(c.training.cards == 1);
    CHECK(c.inference.peak_bytes > 0);
    CHECK(c.inference.peak_note.find("measured on this CPU") != std::string::npos);
    CHECK(c.training.step.bound_s > 0);
    CHECK(c.training.step.bound_s <= c.training.step.estimate_s);
    CHECK(c.inference.latency.bound_s > 0);
  }
}
