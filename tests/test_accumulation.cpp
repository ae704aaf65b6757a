// Gradient accumulation: k micro-batches of b/k give the gradients of one batch of b, and one optimizer step.
#include <catch2/catch.hpp>

#include <cmath>

#include "helpers.hpp"

using namespace tvie;

namespace {

std::vector<torch::Tensor> gradients(Trainer& t) {
  std::vector<torch::Tensor> out;
  for (const auto& p : t.module().parameters()) out.push_back(p.grad().clone());
  return out;
}

std::vector<torch::Tensor> parameters(Trainer& t) {
  std::vector<torch::Tensor> out;
  for (const auto& p : t.module().parameters()) out.push_back(p.detach().clone());
  return out;
}

// ||a - b|| / ||b|| over all the tensors as one vector, in fp32.
double relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i].to(torch::kFloat32) - b[i].to(torch::kFloat32)).pow(2).sum().item<double>();
    norm += b[i].to(torch::kFloat32).pow(2).sum().item<double>();
  }
  return std::sqrt(diff / std::max(norm, 1e-24));
}

double max_relative_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double denom = std::max(b[i].norm().item<double>(), 1e-12);
    worst = std::max(worst, (a[i] - b[i]).norm().item<double>() / denom);
  }
  return worst;
}

}  // namespace

TEST_CASE("k micro-batches of b/k give the gradients of one batch of b (fp32, no BatchNorm)", "[accumulation]") {
  const c10::Device cpu(c10::kCPU);
  for (const std::string model : {"mlp", "gpt"}) {
    INFO(model);
    auto w = make_zoo_workload(model, "tiny");
    TrainSettings one = test::small_train(OptimizerKind::sgd);
    one.batch_size = 8;
    TrainSettings four = one;
    four.accumulate = 4;
    Trainer whole(*w, one, cpu), split(*w, four, cpu);
    const double loss_whole = whole.forward_backward().item<double>();
    const double loss_split = split.forward_backward().item<double>();
    CHECK(loss_split == Approx(loss_whole).epsilon(1e-6));
    CHECK(split.micro_batches() == 4);
    CHECK(max_relative_error(gradients(split), gradients(whole)) <= 1e-5);
  }
}

TEST_CASE("one optimizer step per k micro-batches", "[accumulation]") {
  const c10::Device cpu(c10::kCPU);
  auto w = make_zoo_workload("mlp", "tiny");
  TrainSettings s = test::small_train(OptimizerKind::sgd);
  s.batch_size = 8;
  s.learning_rate = 0.1;
  TrainSettings k4 = s;
  k4.accumulate = 4;
  // Reference: the full-batch gradient g, from an identical start (same seed).
  Trainer reference(*w, s, cpu);
  const auto p0 = parameters(reference);
  reference.forward_backward();
  const auto g = gradients(reference);

  Trainer t(*w, k4, cpu);
  REQUIRE(max_relative_error(parameters(t), p0) == 0.0);
  t.step();
  CHECK(t.optimizer_steps() == 1);
  CHECK(t.micro_batches() == 4);
  // Plain SGD: exactly one update p1 = p0 - lr * g (four updates would move the weights differently).
  std::vector<torch::Tensor> expected;
  for (size_t i = 0; i < p0.size(); ++i) expected.push_back(p0[i] - 0.1 * g[i]);
  CHECK(max_relative_error(parameters(t), expected) <= 1e-5);
  // Gradients are set to none after the step.
  for (const auto& p : t.module().parameters()) CHECK_FALSE(p.grad().defined());
  t.step();
  CHECK(t.optimizer_steps() == 2);
  CHECK(t.micro_batches() == 8);

  // measure_training reports the same counts: 2 ledger + warm-up + timed steps, k micro-batches each.
  k4.steps = 3;
  k4.warmup_steps = 1;
  const auto r = measure_training(*w, k4, cpu);
  CHECK(r.optimizer_steps == Trainer::kLedgerSteps + 1 + 3);
  CHECK(r.micro_batches == 4 * r.optimizer_steps);
  CHECK(r.step_ms.size() == 3);
}

TEST_CASE("the first step under accumulation: loss and update those of one batch of the same samples, every precision",
          "[accumulation]") {
  // The ledger step (the run's first, whose loss is the first one reported) and the steady-state step after it run
  // the same micro-batch loop as every timed step; each micro-batch's loss divided by k. Without the division the
  // first loss and the update would be k times too large (gpt tiny, k = 4: a first loss of 18.1 for 5.6).
  const c10::Device cpu(c10::kCPU);
  for (const std::string model : {"mlp", "gpt"}) {
    auto w = make_zoo_workload(model, "tiny");
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::bf16}) {
      // fp32 sums the same products in another order; bf16 rounds each micro-batch's gradient to 8 bits of mantissa
      // before adding them (pure bf16), or its matmuls' inputs (amp).
      const double tolerance = precision == TrainPrecision::fp32 ? 1e-5 : 0.03;
      for (const int64_t k : {2, 4}) {
        INFO(model << " tiny, " << to_string(precision) << ", accumulate " << k);
        TrainSettings one = test::small_train(OptimizerKind::sgd);
        one.batch_size = 8;
        one.precision = precision;
        one.learning_rate = 0.5;  // an update well above bf16's rounding of the weights
        TrainSettings split = one;
        split.accumulate = k;
        auto probe = make_memory_probe(cpu);
        Trainer whole_trainer(*w, one, cpu, probe.get()), split_trainer(*w, split, cpu, probe.get());
        const auto p0 = parameters(whole_trainer);
        REQUIRE(max_relative_error(parameters(split_trainer), p0) == 0.0);  // the same seed, the same start
        whole_trainer.ledger_step(*probe);
        split_trainer.ledger_step(*probe);
        CHECK(split_trainer.micro_batches() == 2 * k);
        CHECK(split_trainer.optimizer_steps() == 2);
        CHECK(split_trainer.ledger_loss() == Approx(whole_trainer.ledger_loss()).epsilon(tolerance));
        // The update of the two ledger steps (SGD: -lr times the sum of the two steps' gradients).
        std::vector<torch::Tensor> whole_update, split_update;
        const auto whole_after = parameters(whole_trainer), split_after = parameters(split_trainer);
        for (size_t i = 0; i < p0.size(); ++i) {
          whole_update.push_back(whole_after[i].to(torch::kFloat32) - p0[i].to(torch::kFloat32));
          split_update.push_back(split_after[i].to(torch::kFloat32) - p0[i].to(torch::kFloat32));
        }
        INFO("the update's relative error " << relative_error(split_update, whole_update));
        CHECK(relative_error(split_update, whole_update) <= tolerance);
      }
    }
  }
}
