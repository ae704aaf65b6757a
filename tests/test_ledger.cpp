// The measured memory ledger on the CPU (tvie's counting allocator) against analytic bytes.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace tvie;

TEST_CASE("CPU ledger: parameters exact, gradients == parameters, optimizer state per optimizer", "[ledger]") {
  const c10::Device cpu(c10::kCPU);
  for (const std::string model : {"mlp", "gpt"}) {
    auto w = make_zoo_workload(model, "tiny");
    const int64_t weight_bytes = w->facts().parameter_count * 4;  // fp32
    for (auto optimizer :
         {OptimizerKind::sgd, OptimizerKind::sgd_momentum, OptimizerKind::adam, OptimizerKind::adamw}) {
      INFO(model << " with " << to_string(optimizer));
      const auto r = run_training(*w, test::small_train(optimizer), cpu);
      CHECK(r.memory.parameters == weight_bytes);
      CHECK(r.memory.gradients == weight_bytes);
      CHECK(r.memory.optimizer_state == weight_bytes * optimizer_state_multiplier(optimizer));
      CHECK(r.predicted.parameters == r.memory.parameters);
      CHECK(r.predicted.optimizer_state == r.memory.optimizer_state);
      CHECK(r.memory.peak > r.memory.parameters + r.memory.optimizer_state);
      CHECK(r.memory.other == r.memory.peak - (r.memory.parameters + r.memory.gradients + r.memory.optimizer_state +
                                               r.memory.activations));
    }
  }
  CHECK(optimizer_state_multiplier(OptimizerKind::sgd) == 0);
  CHECK(optimizer_state_multiplier(OptimizerKind::sgd_momentum) == 1);
  CHECK(optimizer_state_multiplier(OptimizerKind::adam) == 2);
  CHECK(optimizer_state_multiplier(OptimizerKind::adamw) == 2);
}

TEST_CASE("every zoo model (tiny): training peak > inference peak, activations > 0", "[ledger]") {
  for (const auto& model : model_names()) {
    INFO(model);
    CompareSettings s;
    s.model = model;
    s.device = "cpu";
    s.train = test::small_train();
    s.infer = test::small_infer();
    const auto r = run_compare(s);
    CHECK(r.training.memory.activations > 0);
    CHECK(r.inference.memory.activations > 0);
    CHECK(r.training.memory.peak > r.inference.memory.peak);
    CHECK(r.peak_memory_ratio > 1.0);
    // The inference copy in fp32 holds the same weight bytes as training; its "other" is the input batch.
    CHECK(r.inference.memory.parameters == r.training.memory.parameters);
    CHECK(r.inference.memory.other == r.inference.memory.batch);
  }
}

TEST_CASE("a bf16 inference copy holds half the parameter bytes", "[ledger]") {
  auto w = make_zoo_workload("gpt", "tiny");
  auto s = test::small_infer();
  s.dtype = InferenceDtype::bf16;
  const auto r = run_inference(*w, s, c10::Device(c10::kCPU));
  CHECK(r.memory.parameters == w->facts().parameter_count * 2);
  CHECK(r.dtype == "bf16");
}

TEST_CASE("the counting CPU allocator counts live and peak bytes", "[ledger]") {
  auto probe = make_memory_probe(c10::Device(c10::kCPU));
  REQUIRE(cpu_memory_counter_installed());
  const int64_t before = probe->allocated_bytes();
  probe->reset_peak();
  {
    auto a = torch::empty({1000}, torch::kFloat32);  // 4000 bytes
    CHECK(probe->allocated_bytes() - before == 4000);
    {
      auto b = torch::empty({250}, torch::kFloat64);  // 2000 bytes
      CHECK(probe->allocated_bytes() - before == 6000);
    }
    CHECK(probe->allocated_bytes() - before == 4000);
  }
  CHECK(probe->allocated_bytes() == before);
  CHECK(probe->peak_allocated_bytes() - before == 6000);
  CHECK(probe->reserved_bytes() == -1);
}
