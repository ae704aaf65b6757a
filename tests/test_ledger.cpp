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
      // The run's own peak, read by the test around the whole run (batches, ledger, warm-up, timed steps).
      auto probe = make_memory_probe(cpu);
      const int64_t live_before = probe->allocated_bytes();
      probe->reset_peak();
      const auto r = measure_training(*w, test::small_train(optimizer), cpu);
      const int64_t run_peak = probe->peak_allocated_bytes() - live_before;
      CHECK(r.memory.parameters == weight_bytes);
      CHECK(r.memory.gradients == weight_bytes);
      CHECK(r.memory.optimizer_state == weight_bytes * optimizer_state_multiplier(optimizer));
      CHECK(r.predicted.parameters == r.memory.parameters);
      CHECK(r.predicted.optimizer_state == r.memory.optimizer_state);
      CHECK(r.memory.peak > r.memory.parameters + r.memory.optimizer_state);
      // The ledger's peak is the run's peak: the synthetic batches (made before the ledger's baseline) and
      // the per-step loss scalars the timed steps keep (4 bytes each, read after the loop) aside, no later
      // step goes higher than the ledger's steady-state step.
      const int64_t kept_losses = 4 * (1 + test::small_train().steps);
      const int64_t ledger_peak = run_peak - r.data_pool_bytes;
      CHECK(ledger_peak >= r.memory.peak);
      CHECK(ledger_peak <= r.memory.peak + kept_losses);
      if (model != "mlp" || (optimizer != OptimizerKind::sgd && optimizer != OptimizerKind::sgd_momentum)) continue;
      // mlp tiny (64 -> 128 -> ReLU -> 128 -> ReLU -> 10, fp32, batch 4) by hand. Saved for backward: the two ReLU
      // outputs [4, 128] (each Linear after them saves its input, the same tensor) and log_softmax's output
      // [4, 10] with nll_loss's 4-byte total weight. The peak: the steady-state step's first Linear backward, once
      // its bias gradient is written: the parameters, every gradient, the momentum buffers (sgd-momentum; SGD
      // updates in place, no temporaries), the gradient of that Linear's output [4, 128], and two 4-byte scalars
      // (the step's loss and its gradient, the ones backward() holds). `other` is that peak less the categories:
      // negative here, since the activations count whole while by the peak backward has freed every one of them
      // (the first Linear saved only the batch, a view of the data made before the ledger).
      const int64_t batch = 4, hidden = 128, classes = 10;
      const int64_t activations = 2 * batch * hidden * 4 + batch * classes * 4 + 4;
      const int64_t peak = weight_bytes * (2 + optimizer_state_multiplier(optimizer)) + batch * hidden * 4 + 2 * 4;
      CHECK(r.memory.activations == activations);
      CHECK(r.memory.peak == peak);
      CHECK(r.memory.other == peak - weight_bytes * (2 + optimizer_state_multiplier(optimizer)) - activations);
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
    s.train = test::small_train();
    s.infer = test::small_infer();
    const auto r = run_compare(*make_zoo_workload(model, "tiny"), s, {"cpu"});
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
  const auto r = measure_inference(*w, s, c10::Device(c10::kCPU));
  CHECK(r.memory.parameters == w->facts().parameter_count * 2);
  CHECK(r.dtype == InferenceDtype::bf16);
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

TEST_CASE("ledger under gradient accumulation: activations per micro-batch, the rest unchanged", "[ledger]") {
  const c10::Device cpu(c10::kCPU);
  auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings one = test::small_train(OptimizerKind::adamw);
  one.batch_size = 16;
  TrainSettings four = one;
  four.accumulate = 4;
  const auto a = measure_training(*w, one, cpu);
  const auto b = measure_training(*w, four, cpu);
  // Gradients and optimizer state are per weight: the micro-batch size does not change them.
  CHECK(b.memory.parameters == a.memory.parameters);
  CHECK(b.memory.gradients == a.memory.gradients);
  CHECK(b.memory.optimizer_state == a.memory.optimizer_state);
  // Saved activations are per sample: a micro-batch of 4 keeps about a quarter of what a batch of 16 does
  // (exactly a quarter for the per-sample tensors; a few per-batch ones, e.g. the loss, do not shrink).
  const double ratio = static_cast<double>(b.memory.activations) / static_cast<double>(a.memory.activations);
  INFO("activations: k=1 " << a.memory.activations << " bytes, k=4 " << b.memory.activations << " bytes");
  CHECK(ratio == Approx(0.25).margin(0.02));
  CHECK(b.memory.peak < a.memory.peak);
}
