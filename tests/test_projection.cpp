// The projection's pieces (tvie/projection.hpp): roofline, sharding accounting, ring all-reduce, M/D/1 queue.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <tvie/tvie.hpp>

#include "helpers.hpp"
#include "tvie_test_paths.hpp"

using namespace tvie;

TEST_CASE("roofline: the slower of compute and memory, divided by the efficiency", "[projection][pure]") {
  // 989.5 TFLOP at 989.5 TFLOPS = 1 s; 3.35 GB at 3350 GB/s = 1 ms: compute-bound.
  auto t = roofline_time(989.5e12, 3.35e9, 989.5, 3350, 0.5);
  CHECK(t.bound_s == Approx(1.0));
  CHECK(t.estimate_s == Approx(2.0));
  CHECK_FALSE(t.memory_bound);
  // Decoding-like: 2 FLOP per byte of weights read: bandwidth decides.
  t = roofline_time(2 * 16e9, 16e9, 121, 300, 1.0);
  CHECK(t.memory_bound);
  CHECK(t.bound_s == Approx(16e9 / 300e9));
  CHECK_THROWS_AS(roofline_time(1, 1, -1, 300, 1), InvalidArgument);  // a card without the unit: no projection
  CHECK_THROWS_AS(roofline_time(1, 1, 100, 300, 0), InvalidArgument);
  CHECK_THROWS_AS(roofline_time(1, 1, 100, 300, 1.5), InvalidArgument);
}

TEST_CASE("sharding accounting: ZeRO stages split what they say, and the cards needed", "[projection][pure]") {
  PredictedTrainingMemory w;  // an 8B model in fp32 with AdamW, one card's view
  w.parameters = 32'000'000'000;
  w.gradients = 32'000'000'000;
  w.optimizer_state = 64'000'000'000;
  w.weight_copies = 0;
  w.activations = 2'000'000'000;
  w.batch = 1000;
  w.peak = w.parameters + w.gradients + w.optimizer_state + w.activations + w.batch + 500'000'000;
  const auto none = shard_training_memory(w, 8, ShardingStage::none);
  CHECK(none.total == w.peak);       // nothing split: one card holds all
  CHECK(none.peak_phase == "step");  // a ledger without phases: one phase at the peak
  const auto z1 = shard_training_memory(w, 8, ShardingStage::optimizer);
  CHECK(z1.optimizer_state == 8'000'000'000);
  CHECK(z1.gradients == w.gradients);
  const auto z2 = shard_training_memory(w, 8, ShardingStage::gradients);
  CHECK(z2.gradients == 4'000'000'000);
  CHECK(z2.parameters == w.parameters);
  const auto z3 = shard_training_memory(w, 8, ShardingStage::parameters);
  CHECK(z3.parameters == 4'000'000'000);
  CHECK(z3.phase_bytes == 4'000'000'000 + w.activations + w.batch + 500'000'000);  // activations: per card
  CHECK(z3.total == 4'000'000'000 * 4 + 2'000'000'000 + 1000 + 500'000'000);
  // On 80 GB cards (GB = 10^9 B): replicated never fits (130.5 GB); each stage from the fewest cards that do.
  const int64_t gb80 = 80'000'000'000;
  CHECK(cards_needed(w, gb80, ShardingStage::none) == 0);
  CHECK(cards_needed(w, gb80, ShardingStage::optimizer) == 5);            // 64 + 64/n + 2.5 <= 80: n >= 4.74
  CHECK(cards_needed(w, gb80, ShardingStage::gradients) == 3);            // 32 + 96/n + 2.5 <= 80: n >= 2.11
  CHECK(cards_needed(w, gb80, ShardingStage::parameters) == 2);           // 128/n + 2.5 <= 80: n >= 1.65
  CHECK(cards_needed(w, 2'000'000'000, ShardingStage::parameters) == 0);  // activations alone do not fit
  // A shard is whole bytes, rounded up: 10 bytes of optimizer state over 3 cards are 4 on each (3 would leave one
  // byte on no card).
  PredictedTrainingMemory odd = w;
  odd.optimizer_state = 10;
  odd.peak = odd.parameters + odd.gradients + 10 + odd.activations + odd.batch + 500'000'000;
  CHECK(shard_training_memory(odd, 3, ShardingStage::optimizer).optimizer_state == 4);
  CHECK(shard_training_memory(odd, 10, ShardingStage::optimizer).optimizer_state == 1);
  PredictedTrainingMemory unknown;
  CHECK_THROWS_AS(shard_training_memory(unknown, 2, ShardingStage::none), InvalidArgument);
  CHECK_THROWS_AS(shard_training_memory(w, 0, ShardingStage::none), InvalidArgument);
}

TEST_CASE("sharding within each phase: one unsharded card is enough exactly when the peak fits", "[projection][pure]") {
  // A ledger whose peak is the optimizer's step (the activations are gone by then): 10 GB of parameters in fp32,
  // as many gradients, 20 GB of Adam's moments; the backward holds 8 GB of saved activations and gradients so far,
  // the step the 10 GB of gradients and two temporaries of the largest parameter (1 GB each).
  PredictedTrainingMemory w;
  w.parameters = 10'000'000'000, w.gradients = 10'000'000'000, w.optimizer_state = 20'000'000'000;
  w.activations = 6'000'000'000, w.batch = 1'000'000, w.weight_copies = 0;
  w.phases = {{"forward", 7'000'000'000, 0, 0},
              {"backward", 8'000'000'000, 0, 0},
              {"optimizer step", 12'000'000'000, 10'000'000'000, 0}};
  w.peak = w.always() + 12'000'000'000;  // 42 GB: the step
  // The categories together are 46 GB: charged all at once, a 44 GB card would need sharding though the peak fits.
  const int64_t card = 44'000'000'000;
  for (int stage = 0; stage < 4; ++stage) {
    INFO("stage " << stage);
    const auto one = shard_training_memory(w, 1, static_cast<ShardingStage>(stage));
    CHECK(one.total == w.peak);
    CHECK(one.peak_phase == "optimizer step");
    CHECK(cards_needed(w, card, static_cast<ShardingStage>(stage)) == 1);
    CHECK(cards_needed(w, w.peak - 1, ShardingStage::none) == 0);  // a byte short: replicated never fits
  }
  // ZeRO-2 on 4 cards: 10 + 20/4 always there; the step's gradients 10/4, so 2.5 + 2 = 4.5 GB against the
  // backward's 8: the per-card peak moves to the backward (its gradients so far counted whole).
  const auto z2 = shard_training_memory(w, 4, ShardingStage::gradients);
  CHECK(z2.peak_phase == "backward");
  CHECK(z2.total == 15'000'000'000 + 8'000'000'000);
  // ZeRO-1 on 4 cards: the step keeps every gradient: 10 + 5 + 12.
  const auto z1 = shard_training_memory(w, 4, ShardingStage::optimizer);
  CHECK(z1.peak_phase == "optimizer step");
  CHECK(z1.total == 27'000'000'000);
  CHECK(cards_needed(w, 40'000'000'000, ShardingStage::optimizer) == 2);  // 10 + 20/n + 12 <= 40: n >= 1.11
}

TEST_CASE("the predicted peak is the always-there bytes plus its largest phase, for every zoo model", "[projection]") {
  for (const char* model : {"mlp", "cnn", "gpt"}) {
    INFO(model);
    auto workload = make_zoo_workload(model, "tiny");
    TrainSettings t;
    t.batch_size = 4;
    t.accumulate = 2;
    const auto p = predict_training_memory(*workload, t, false, c10::Device("cpu"));
    REQUIRE(p.peak >= 0);
    REQUIRE(p.phases.size() == 5);  // forward, backward, both again under accumulation, the optimizer's step
    int64_t largest = 0;
    for (const auto& phase : p.phases) largest = std::max(largest, phase.bytes);
    CHECK(p.peak == p.always() + largest);
    CHECK(p.phases.back().gradients == p.gradients);
    CHECK(shard_training_memory(p, 1, ShardingStage::parameters).total == p.peak);
  }
}

TEST_CASE("ZeRO under amp as DeepSpeed counts it: per-card model states within 5% of its estimators", "[projection]") {
  // Llama 3 8B, amp-bf16, AdamW. DeepSpeed 0.19.8 (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
  // estimate_zero2/3_model_states_mem_needs without offload): ZeRO-2 2P + int(18P / N), ZeRO-3 4L + int(18P / N),
  // with P the parameters and L the largest layer's (the embedding and the head: 128,256 x 4,096).
  TrainSettings t;
  t.batch_size = 1;
  t.precision = TrainPrecision::amp_bf16;
  t.optimizer = OptimizerKind::adamw;
  const auto whole = predict_training_memory(*make_zoo_workload("llama", "llama-3-8b"), t, false,
                                             c10::Device(c10::DeviceType::CUDA, 0));
  const int64_t p = 8'030'261'248, l = 128'256LL * 4'096;
  REQUIRE(whole.model_states.parameter_count == p);
  REQUIRE(whole.model_states.largest_layer_parameters == l);
  for (const int64_t n : {1, 8, 64}) {
    INFO(n << " cards");
    const double zero2 = 2.0 * p + static_cast<double>(18 * p / n);
    const double zero3 = 4.0 * l + static_cast<double>(18 * p / n);
    const auto z2 = shard_training_memory(whole, n, ShardingStage::gradients);
    const auto z3 = shard_training_memory(whole, n, ShardingStage::parameters);
    CHECK(z2.layout == ShardingLayout::deepspeed_mixed_precision);
    CHECK(std::abs(static_cast<double>(z2.model_states) / zero2 - 1) < 0.05);
    CHECK(std::abs(static_cast<double>(z3.model_states) / zero3 - 1) < 0.05);
    // ZeRO-1 in the same layout: the 16-bit weights and gradients whole, the fp32 ones and the moments sharded.
    const auto z1 = shard_training_memory(whole, n, ShardingStage::optimizer);
    CHECK(std::abs(static_cast<double>(z1.model_states) / (4.0 * p + static_cast<double>(16 * p / n)) - 1) < 0.05);
    // Beside them: one 16-bit reduce bucket of DeepSpeed's default 5e8 elements, and the activations of the phase
    // at the peak.
    CHECK(z2.buckets == 1'000'000'000);
    CHECK(z2.total == z2.model_states + z2.buckets + z2.phase_bytes);
  }
  // Replicated, the layout is tvie's own (autocast over fp32 weights): its total is the predicted peak.
  CHECK(shard_training_memory(whole, 1, ShardingStage::none).total == whole.peak);
  CHECK(shard_training_memory(whole, 1, ShardingStage::none).layout == ShardingLayout::tvie);
}

TEST_CASE("ring all-reduce: 2 (n - 1) / n of the bytes over the link", "[projection][pure]") {
  CHECK(ring_allreduce_seconds(1e9, 1, 900) == 0);
  CHECK(ring_allreduce_seconds(1e9, 2, 100) == Approx(0.01));  // 2 x 1/2 x 1 GB / 100 GB/s
  CHECK(ring_allreduce_seconds(1e9, 8, 900) == Approx(2.0 * 7 / 8 / 900));
  CHECK_THROWS_AS(ring_allreduce_seconds(1e9, 2, -1), InvalidArgument);
}

namespace {

// Erlang's exact M/D/1 waiting-time distribution (Crommelin 1932): P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)}
// [lambda (k D - t)]^k / k! exp(-lambda (k D - t)); alternating terms, stable at moderate t / D.
double md1_cdf(double lambda, double D, double t) {
  long double sum = 0;
  for (int k = 0; k <= static_cast<int>(std::floor(t / D)); ++k) {
    const long double x = lambda * (k * D - t);
    sum += std::pow(x, k) / std::tgamma(k + 1.0L) * std::exp(-x);
  }
  return static_cast<double>((1 - lambda * D) * sum);
}

}  // namespace

TEST_CASE("M/D/1: the simulated waiting-time quantile against Erlang's exact distribution", "[projection][pure]") {
  const double D = 0.010;  // 10 ms service
  for (double rho : {0.3, 0.6, 0.8}) {
    INFO("utilisation " << rho);
    const double lambda = rho / D;
    // Below the atom at zero (P(W = 0) = 1 - rho) the quantile is 0.
    CHECK(md1_waiting_quantile_s(lambda, D, (1 - rho) * 0.9) == 0);
    for (double q : {0.9, 0.99}) {
      const double w = md1_waiting_quantile_s(lambda, D, q);
      CHECK(md1_cdf(lambda, D, w) == Approx(q).margin(0.002));  // the exact CDF at the simulated quantile
    }
  }
  CHECK(std::isinf(md1_waiting_quantile_s(100, 0.010, 0.99)));  // utilisation 1
  // The highest rate under a p99 bound: service + p99 wait within it, and a little more breaks it.
  const double rate = md1_max_rate_per_s(D, 0.050);
  CHECK(rate > 0);
  CHECK(rate < 1 / D);
  CHECK(D + md1_waiting_quantile_s(rate, D, 0.99) <= 0.050);
  CHECK(D + md1_waiting_quantile_s(rate * 1.01, D, 0.99) > 0.050 * 0.98);
  CHECK(md1_max_rate_per_s(0.060, 0.050) == 0);  // the service alone is over the bound
}

// --- the traced work and its projection onto cards ---

TEST_CASE("TF32 (--tf32): fp32 training's products at the card's TF32 peak, said in the precision",
          "[projection][pure]") {
  const auto w = make_zoo_workload("gpt", "small");
  TrainSettings t;
  t.batch_size = 4;
  const StepWork fp32 = training_step_work(*w, t);
  t.tf32 = true;
  const StepWork tf32 = training_step_work(*w, t);
  CHECK(fp32.matmul_peak == "fp32_tflops");
  CHECK(tf32.matmul_peak == "tf32_tflops");
  CHECK(tf32.attention_peak == "tf32_tflops");
  CHECK(tf32.precision == "fp32 (tf32)");
  CHECK(tf32.forward[OpClass::matmul].flops == fp32.forward[OpClass::matmul].flops);
  CHECK(tf32.weight_element_bytes == 4);
  const auto& catalog = accelerator_catalog();
  const auto h100 = select_accelerators(catalog, "h100-sxm").front();
  const auto t4 = select_accelerators(catalog, "t4").front();
  // The matmuls' compute side at 494.5 TFLOPS instead of 67: the bound of the matmul class can only fall.
  CHECK(project_time(tf32, h100).by_class[0].bound_s <= project_time(fp32, h100).by_class[0].bound_s);
  CHECK(project_time(tf32, h100).supported);
  const ProjectedTime none = project_time(tf32, t4);  // Turing has no TF32
  CHECK_FALSE(none.supported);
  CHECK(none.unsupported == "t4 has no tf32_tflops peak in the catalog (matmul in fp32 (tf32))");
  // Refused where it means nothing: with 16-bit products, and off CUDA.
  t.precision = TrainPrecision::amp_bf16;
  CHECK_THROWS_WITH(validate(t), Catch::Contains("train.tf32") && Catch::Contains("off with amp-bf16"));
  t.precision = TrainPrecision::fp32;
  CHECK_NOTHROW(validate(t));
  CHECK_THROWS_WITH(validate(t, c10::Device(c10::kCPU)), Catch::Contains("off on cpu"));
}

TEST_CASE("the fused AdamW's step: 7 elements a parameter, CUDA's multi-tensor launches", "[projection][pure]") {
  const auto w = make_zoo_workload("gpt", "gpt2-small");
  TrainSettings t;
  t.batch_size = 1;
  const StepWork plain = training_step_work(*w, t);
  t.fused_optimizer = true;
  const StepWork fused = training_step_work(*w, t);
  const double n = double(w->facts().parameter_count);
  CHECK(fused.optimizer.bytes == Approx(7.0 * 4 * n));
  CHECK(fused.optimizer.flops == plain.optimizer.flops);
  // 148 parameter tensors (two embeddings, 12 per block, the final LayerNorm's two; the head tied): 9 kernels each
  // unfused. Fused: 124.4M parameters at 320 chunks of 65,536 a launch are 6 launches (more than 148 / 36 tensors
  // a launch, 5), and 2 for the step counts' add (110 tensors a launch).
  CHECK(plain.optimizer.kernels == 9 * 148);
  CHECK(fused.optimizer.kernels == 6 + 2);
}

TEST_CASE("traced work: the matmul and attention FLOPs are the models' analytic forward FLOPs", "[projection][pure]") {
  for (const char* preset : {"tiny", "small"}) {
    INFO("gpt " << preset);
    const GptConfig c = gpt_preset(preset);
    const auto w = make_zoo_workload("gpt", preset);
    TrainSettings t;
    t.batch_size = 4;
    const StepWork work = training_step_work(*w, t);
    const double s = double(c.context_length), h = double(c.d_model), L = double(c.n_layer);
    // Linears 24 s h^2 per block + the logits 2 s h V; attention 4 s^2 h per block, half of it when causal.
    CHECK(work.forward[OpClass::matmul].flops == Approx(4 * (L * 24 * s * h * h + 2 * s * h * double(c.vocab_size))));
    CHECK(work.forward[OpClass::attention].flops == Approx(4 * L * 4 * s * s * h * 0.5));
    // Backward: dW and dx for every linear but none takes the embedding's input (dx needed everywhere here).
    CHECK(work.backward[OpClass::matmul].flops == Approx(2 * work.forward[OpClass::matmul].flops));
    CHECK(work.backward[OpClass::attention].flops == Approx(2.5 * work.forward[OpClass::attention].flops));
    CHECK(work.forward[OpClass::convolution].flops == 0);
    // AdamW: 22 elements read or written per parameter, fp32.
    CHECK(work.optimizer.bytes == Approx(22.0 * 4 * double(w->facts().parameter_count)));
    CHECK(work.allreduce_bytes == Approx(4.0 * double(w->facts().parameter_count)));
    CHECK(work.model_flops == Approx(3 * 4 * w->facts().forward_flops_per_sample));
  }
  {
    // ResNet-50: convolutions + the classifier = the analytic forward FLOPs (the published 4.1 GFLOP MACs x 2).
    const auto w = make_zoo_workload("resnet", "resnet50");
    InferSettings i;
    i.batch_size = 2;
    const StepWork work = inference_batch_work(*w, i);
    CHECK(work.forward[OpClass::convolution].flops + work.forward[OpClass::matmul].flops ==
          Approx(2 * w->facts().forward_flops_per_sample).epsilon(1e-9));
    CHECK(work.backward.total().flops == 0);  // inference: no backward
    CHECK(work.optimizer.bytes == 0);
  }
  // Checkpointing recomputes the blocks' forward in backward: more backward work, the same forward.
  const auto w = make_zoo_workload("gpt", "small");
  TrainSettings plain, ckpt;
  ckpt.checkpoint_every = 1;
  const StepWork a = training_step_work(*w, plain), b = training_step_work(*w, ckpt);
  CHECK(b.forward[OpClass::matmul].flops == Approx(a.forward[OpClass::matmul].flops));
  CHECK(b.backward[OpClass::matmul].flops > a.backward[OpClass::matmul].flops * 1.3);
  // A workload without a trace is counted by the profiler (tests/test_profiled_work.cpp); one the profiler cannot
  // run is refused, naming the model.
  struct Untraced : Workload {
    std::string name() const override { return "untraced"; }
    std::shared_ptr<torch::nn::Module> make_module() const override { return nullptr; }
    torch::Tensor forward(torch::nn::Module&, const torch::Tensor& x) const override { return x; }
    Batch make_batch(int64_t, const c10::Device&, uint64_t) const override { return {}; }
    torch::Tensor loss(const torch::Tensor& y, const Batch&) const override { return y.sum(); }
  } untraced;
  CHECK_THROWS_WITH(training_step_work(untraced, plain),
                    Catch::Contains("model") && Catch::Contains("untraced") && Catch::Contains("profiler"));
}

TEST_CASE("projection onto a card: precision picks the peak, a missing unit is said, bound <= estimate",
          "[projection][pure]") {
  const auto w = make_zoo_workload("gpt", "small");
  const auto& catalog = accelerator_catalog();
  const Accelerator h100 = select_accelerators(catalog, "h100-sxm").at(0),
                    t4 = select_accelerators(catalog, "t4").at(0);
  TrainSettings fp32, amp;
  amp.precision = TrainPrecision::amp_bf16;
  const StepWork a = training_step_work(*w, fp32), b = training_step_work(*w, amp);
  const ProjectedTime p32 = project_time(a, h100), p16 = project_time(b, h100);
  REQUIRE(p32.supported);
  REQUIRE(p16.supported);
  CHECK(p32.bound_s > 0);
  CHECK(p32.bound_s <= p32.estimate_s);
  // The matmul class alone: fp32 on the CUDA cores (67 TFLOPS) vs bf16 on the tensor cores (989.5): the compute
  // side scales by the peaks' ratio.
  const auto m32 = p32.by_class[size_t(OpClass::matmul)], m16 = p16.by_class[size_t(OpClass::matmul)];
  CHECK(m32.bound_s ==
        Approx(
            std::max((a.forward[OpClass::matmul].flops + a.backward[OpClass::matmul].flops) / (h100.fp32_tflops * 1e12),
                     (a.forward[OpClass::matmul].bytes + a.backward[OpClass::matmul].bytes +
                      4 * (a.forward[OpClass::matmul].weight_elements + a.backward[OpClass::matmul].weight_elements)) /
                         (h100.memory_bandwidth_gbs * 1e9))));
  CHECK(m16.bound_s < m32.bound_s);
  // Launch overhead: kernels x the card's figure, in the estimate only.
  CHECK(p32.launch_s == Approx(p32.kernels * h100.efficiency.kernel_overhead_us * 1e-6));
  CHECK(p32.kernels > 100);
  // T4 has no bf16 unit: amp-bf16 is not projected there, and the reason says so.
  const ProjectedTime t4_16 = project_time(b, t4);
  CHECK_FALSE(t4_16.supported);
  CHECK_THAT(t4_16.unsupported, Catch::Contains("t4 has no bf16_tflops"));
  CHECK(project_time(a, t4).supported);
}

TEST_CASE("batched serving rate: batch 1 is the M/D/1 bound, batching raises the rate under a loose bound",
          "[projection][pure]") {
  const double s = 0.010;
  const double one = batched_max_rate_per_s(s, 1, 0.050);
  CHECK(one == Approx(md1_max_rate_per_s(s, 0.050)).epsilon(0.04));  // the table (200k samples) vs 2M samples
  // Batches of 8 served in 20 ms each (a sublinear batch cost): more requests/s within a 200 ms p99.
  const double eight = batched_max_rate_per_s(0.020, 8, 0.200);
  CHECK(eight > batched_max_rate_per_s(s, 1, 0.200));
  CHECK(eight < 8 / 0.020);                             // below the batch server's capacity
  CHECK(batched_max_rate_per_s(0.060, 4, 0.050) == 0);  // the service alone misses the bound
  CHECK_THROWS_AS(batched_max_rate_per_s(s, 0, 0.05), InvalidArgument);
}

TEST_CASE("continuous batching: a request alone, the capacity, one slot is M/D/1, beats static batches",
          "[projection][pure]") {
  // A decoding iteration reads the weights once (8 ms) and each request's cache (0.25 ms per request).
  // A prompt's forward of k requests: the weights once (8 ms) and 20 ms of compute per prompt.
  ContinuousServer c;
  c.prefill_s = [](int64_t k) { return 0.008 + 0.020 * static_cast<double>(k); };
  c.step_s = [](int64_t n) { return 0.008 + 0.00025 * static_cast<double>(n); };
  c.new_tokens = 65;
  c.slots = 32;
  const double alone = c.prefill_s(1) + 64 * c.step_s(1);
  // Capacity: every slot busy, 32 requests' prefill and 64 iterations at 32 per 32 requests.
  const double capacity = continuous_capacity_per_s(c);
  CHECK(capacity == Approx(32 / (c.prefill_s(32) + 64 * c.step_s(32))));
  // At a rate far below it a request finds the server idle: its latency is the request alone, exactly.
  CHECK(continuous_latency_quantile_s(c, 1e-4, 0.99) == Approx(alone));
  CHECK(std::isinf(continuous_latency_quantile_s(c, capacity, 0.99)));
  // The rate within a bound: below the capacity, above what one request at a time sustains; none when a request
  // alone misses the bound.
  const double rate = continuous_max_rate_per_s(c, 1.0);
  CHECK(rate < capacity);
  CHECK(rate > 1 / alone);
  CHECK(continuous_latency_quantile_s(c, rate, 0.99) <= 1.0);
  CHECK(continuous_max_rate_per_s(c, 0.9 * alone) == 0);
  // One slot and no prefill: an M/D/1 queue of whole requests (service 64 steps), whose waiting quantile the
  // projection already has (checked against Erlang's exact distribution above).
  ContinuousServer one = c;
  one.prefill_s = [](int64_t) { return 0.0; };
  one.slots = 1;
  const double service = 64 * one.step_s(1);
  for (const double rho : {0.3, 0.6, 0.8}) {
    INFO("utilisation " << rho);
    const double r = rho / service;
    CHECK(continuous_latency_quantile_s(one, r, 0.99) ==
          Approx(service + md1_waiting_quantile_s(r, service, 0.99)).epsilon(0.08));
  }
  // Static batches of 32 with the same times (their prefill, then 64 iterations at 32) sustain less within the
  // same bound: a batch waits for its last request, and a request for its whole batch.
  const double batch_service = c.prefill_s(32) + 64 * c.step_s(32);
  CHECK(rate > batched_max_rate_per_s(batch_service, 32, 1.0));
  // Validation names the field.
  ContinuousServer bad = c;
  bad.slots = 0;
  CHECK_THROWS_WITH(continuous_capacity_per_s(bad), Catch::Contains("continuous.slots"));
  bad = c;
  bad.step_s = nullptr;
  CHECK_THROWS_WITH(continuous_max_rate_per_s(bad, 1.0), Catch::Contains("continuous.step_s"));
  bad = c;
  bad.prefill_s = nullptr;
  CHECK_THROWS_WITH(continuous_capacity_per_s(bad), Catch::Contains("continuous.prefill_s"));
}

TEST_CASE("plan: fits, largest batch, cards needed and serving per card follow the prediction", "[projection]") {
  const auto w = make_zoo_workload("llama", "llama-3-8b");
  PlanSettings s;
  s.stack = ServingStack::tvie;  // tvie's own kernels: what this test derives by hand
  s.train.batch_size = 1;
  s.train.precision = TrainPrecision::amp_bf16;
  s.infer.dtype = InferenceDtype::bf16;
  s.cards = "h100-sxm,l4,t4";
  s.serve_qps = 10;
  s.p99_ms = 2000;
  s.train_tokens = 1'000'000;
  const auto plans = plan_cards(*w, s, select_accelerators(accelerator_catalog(), s.cards));
  REQUIRE(plans.size() == 3);  // in the catalog's order
  const auto& h100 = plans[0];
  const auto& t4 = plans[1];
  const auto& l4 = plans[2];
  CHECK(h100.card.id == "h100-sxm");
  CHECK(t4.card.id == "t4");
  // 8B parameters with AdamW in amp: ~16 B per parameter before activations: no single 80 GB card holds it.
  CHECK_FALSE(h100.training.fits);
  CHECK(h100.training.largest_batch == 0);
  CHECK(h100.training.cards_needed[0] == 0);  // replicated: never fits
  CHECK(h100.training.cards_needed[3] > 0);
  // ZeRO-1 in DeepSpeed's mixed-precision layout keeps 16-bit weights and gradients whole (4 B a parameter, 32 GB)
  // on every card: it fits, on more cards than ZeRO-2, which shards the 16-bit gradients too.
  CHECK(h100.training.per_card[1].layout == ShardingLayout::deepspeed_mixed_precision);
  CHECK(h100.training.per_card[1].model_states >= 4 * 8'030'261'248LL);
  CHECK(h100.training.cards_needed[2] > 0);
  CHECK(h100.training.cards_needed[1] > h100.training.cards_needed[2]);
  CHECK(h100.training.cards_needed[3] <= h100.training.cards_needed[2]);
  CHECK(h100.training.cards == h100.training.cards_needed[3]);
  CHECK(h100.training.allreduce_s > 0);
  CHECK(h100.training.budget_hours.bound <= h100.training.budget_hours.estimate);
  CHECK(h100.training.budget_hours.bound > 0);
  // Inference in bf16: ~16 GB of weights fit on the H100 and the L4 (24 GB), not on the T4 (16 GB).
  CHECK(h100.inference.fits);
  CHECK(l4.inference.fits);
  CHECK_FALSE(t4.inference.fits);
  CHECK_FALSE(t4.inference.supported);  // nor has it a bf16 unit
  // Largest batch: its predicted peak fits, the next one's does not.
  const int64_t b = l4.inference.largest_batch;
  REQUIRE(b >= 1);
  InferSettings i = s.infer;
  i.batch_size = b;
  CHECK(predict_inference_memory(*w, i, c10::Device(c10::kCUDA)).peak <= l4.inference.usable_bytes);
  i.batch_size = b + 1;
  if (b < s.max_batch) CHECK(predict_inference_memory(*w, i, c10::Device(c10::kCUDA)).peak > l4.inference.usable_bytes);
  // Batch-1 decoding-like latency is bound by reading the weights: at least bytes / bandwidth.
  CHECK(h100.inference.latency.bound_s >= 16e9 / (h100.card.memory_bandwidth_gbs * 1e9));
  CHECK(h100.inference.latency.bound_s < l4.inference.latency.bound_s);
  CHECK(h100.inference.qps_per_card.estimate > 0);
  CHECK(h100.inference.cards_for_qps == int64_t(std::ceil(10 / h100.inference.qps_per_card.estimate)));
  CHECK(h100.inference.power_kw == Approx(double(h100.inference.cards_for_qps) * 0.7));
  // Cloud cost at the cheapest and the dearest listing: a million requests at 10/s take 1e5 s on each card, the
  // budget its cards x hours.
  REQUIRE(h100.card.cloud_prices.size() >= 2);
  double cheapest = 1e9, dearest = 0;
  for (const auto& p : h100.card.cloud_prices) {
    cheapest = std::min(cheapest, p.usd_per_hour);
    dearest = std::max(dearest, p.usd_per_hour);
  }
  const double card_hours = double(h100.inference.cards_for_qps) * 1e6 / 10 / 3600;
  CHECK(h100.inference.usd_per_million.listings == int64_t(h100.card.cloud_prices.size()));
  CHECK(h100.inference.usd_per_million.low_usd == Approx(card_hours * cheapest));
  CHECK(h100.inference.usd_per_million.high_usd == Approx(card_hours * dearest));
  CHECK(h100.inference.usd_per_million.low_usd < h100.inference.usd_per_million.high_usd);
  CHECK(h100.training.budget_usd.low_usd ==
        Approx(double(h100.training.cards) * h100.training.budget_hours.estimate * cheapest));
  CHECK(h100.training.budget_usd.high_usd ==
        Approx(double(h100.training.cards) * h100.training.budget_hours.estimate * dearest));
  // A card without a listed cloud price has no cost (not zero).
  const auto unpriced = cloud_cost(select_accelerators(accelerator_catalog(), "mi300x").front(), 10);
  CHECK(unpriced.listings == 0);
  CHECK(unpriced.low_usd == -1);
  CHECK(unpriced.high_usd == -1);
  // Validation names the field.
  PlanSettings bad = s;
  bad.p99_ms = 0;
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("plan.p99_ms"));
  bad = s;
  bad.train_samples = 5;
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("plan.train_samples"));
}

TEST_CASE("decoding work: a step reads every weight once and attends to the cached positions", "[projection][pure]") {
  InferSettings i;
  i.batch_size = 4;
  const double B = 4;
  {
    const GptConfig c = gpt_preset("small");
    const auto w = make_zoo_workload("gpt", "small");
    const double h = double(c.d_model), L = double(c.n_layer), V = double(c.vocab_size);
    const StepWork step = decoding_work(*w, i, 1, 20);
    // One new token per sequence: every Linear's weight read once (12 h^2 per block, the head h V), 2 FLOPs per
    // weight element per sequence; the attention over 20 cached positions and the new one, 4 (K) h per block.
    CHECK(step.forward[OpClass::matmul].weight_elements == Approx(L * 12 * h * h + h * V));
    CHECK(step.forward[OpClass::matmul].flops == Approx(B * 2 * (L * 12 * h * h + h * V)));
    CHECK(step.forward[OpClass::attention].flops == Approx(B * L * 4 * 21 * h));
    CHECK(step.model_flops == Approx(step.forward[OpClass::matmul].flops + step.forward[OpClass::attention].flops));
    CHECK(step.tokens == 4);
    CHECK(step.samples == 4);
    CHECK(step.backward.total().flops == 0);
    // The attention reads the cache: its bytes grow by one position of keys and values per block per step.
    const StepWork next = decoding_work(*w, i, 1, 21), after = decoding_work(*w, i, 1, 22);
    const double grows = next.forward[OpClass::attention].bytes - step.forward[OpClass::attention].bytes;
    CHECK(grows == Approx(B * L * 2 * h * 4));  // fp32 keys and values of one more position
    CHECK(after.forward[OpClass::attention].bytes - next.forward[OpClass::attention].bytes == Approx(grows));
    CHECK(next.forward[OpClass::matmul].bytes == Approx(step.forward[OpClass::matmul].bytes));
    // The prefill of the whole context computes what one forward of it does (causal attention) but for the head,
    // which gives the next token's logits only (the last position's), and writes the keys and values into the
    // cache besides.
    const double S = double(c.context_length);
    const StepWork prefill = decoding_work(*w, i, c.context_length, 0), forward = inference_batch_work(*w, i);
    CHECK(prefill.forward[OpClass::matmul].flops ==
          Approx(forward.forward[OpClass::matmul].flops - B * (S - 1) * 2 * h * V));
    CHECK(prefill.forward[OpClass::attention].flops == Approx(forward.forward[OpClass::attention].flops));
    CHECK(prefill.forward[OpClass::elementwise].bytes ==
          Approx(forward.forward[OpClass::elementwise].bytes + B * L * 2 * 2 * S * h * 4));
  }
  {
    // llama: grouped-query attention; the cached forward repeats the g cached heads for the a query heads.
    const LlamaConfig c = llama_preset("tiny");
    const auto w = make_zoo_workload("llama", "tiny");
    const double h = double(c.d_model), L = double(c.n_layer), d = h / double(c.n_head);
    const double kv = double(c.n_kv_head) * d;
    const StepWork step = decoding_work(*w, i, 1, 9);
    const double linears = L * (2 * h * h + 2 * h * kv + 3 * h * double(c.d_ff)) + h * double(c.vocab_size);
    CHECK(step.forward[OpClass::matmul].weight_elements == Approx(linears));
    CHECK(step.forward[OpClass::attention].flops == Approx(B * L * 4 * 10 * h));
  }
  // Decoding needs a KV-cached forward: the mlp has none.
  CHECK_THROWS_WITH(decoding_work(*make_zoo_workload("mlp", "tiny"), i, 1, 1),
                    Catch::Contains("model") && Catch::Contains("KV-cached"));
  CHECK_THROWS_WITH(decoding_work(*make_zoo_workload("gpt", "tiny"), i, 0, 1), Catch::Contains("new_positions"));
}

TEST_CASE("plan with generation: the prefill and every decoding step, the KV cache in the peak", "[projection]") {
  const auto w = make_zoo_workload("llama", "llama-3-8b");  // context 128
  const LlamaConfig c = llama_preset("llama-3-8b");
  PlanSettings s;
  s.stack = ServingStack::tvie;  // tvie's own kernels: what this test derives by hand
  s.infer.dtype = InferenceDtype::bf16;
  s.cards = "h100-sxm,l4";
  s.new_tokens = 48;  // the prompt: 128 - 48 = 80 tokens
  const auto cards = select_accelerators(accelerator_catalog(), s.cards);
  const auto plans = plan_cards(*w, s, cards);
  PlanSettings one_forward = s;
  one_forward.new_tokens = 0;
  const auto forward_plans = plan_cards(*w, one_forward, cards);
  REQUIRE(plans.size() == 2);
  for (size_t k = 0; k < plans.size(); ++k) {
    const auto& card = plans[k].card;
    const InferencePlan& p = plans[k].inference;
    const GenerationPlan& g = p.generation;
    INFO(card.id);
    REQUIRE(p.supported);
    CHECK(g.prompt_tokens == 80);
    CHECK(g.new_tokens == 48);
    // The request alone: the prompt's forward, then 47 steps, step k attending to 80 + k cached positions.
    InferSettings i = s.infer;
    i.batch_size = 1;
    const ProjectedTime prefill = project_time(decoding_work(*w, i, 80, 0, trace_device(card)), card);
    double bound = prefill.bound_s, estimate = prefill.estimate_s;
    for (int64_t step = 0; step < 47; ++step) {
      const ProjectedTime t = project_time(decoding_work(*w, i, 1, 80 + step, trace_device(card)), card);
      bound += t.bound_s;
      estimate += t.estimate_s;
    }
    CHECK(g.prefill.estimate_s == Approx(prefill.estimate_s));
    CHECK(p.latency.bound_s == Approx(bound).epsilon(1e-9));
    CHECK(p.latency.estimate_s == Approx(estimate).epsilon(1e-9));
    CHECK(g.time_per_output_token_s.estimate == Approx((estimate - prefill.estimate_s) / 47));
    // A step at batch 1 reads every bf16 weight (8B parameters, ~16 GB): bound by the card's bandwidth.
    CHECK(g.time_per_output_token_s.bound >= 2.0 * 7.5e9 / (card.memory_bandwidth_gbs * 1e9));
    // A request is a sample: its tokens per second at the best batch, and the batch pays off (weights read once
    // per step for every request of the batch).
    CHECK(g.tokens_per_s.estimate == Approx(p.samples_per_s.estimate * 48));
    CHECK(p.best_batch > 1);
    CHECK(g.tokens_per_s.estimate > 48 / p.latency.estimate_s);
    // Memory: the KV cache of 80 + 48 - 1 positions, in bf16, per request, on top of the weights.
    CHECK(g.kv_cache_bytes == llama_kv_cache_bytes(c, 1, 127, 2));
    CHECK(p.peak_bytes >= w->facts().parameter_count * 2 + g.kv_cache_bytes);
    CHECK(p.largest_batch * g.kv_cache_bytes + w->facts().parameter_count * 2 <= p.usable_bytes);
    // At batch 1: weights, the KV cache, the prompt's ids and the larger working set of the prefill and the last
    // step, whose head gives one position's logits (the 128-token forward's logits are 128 positions').
    ActivationQuery q = activation_query(i, c10::Device(c10::kCUDA));
    q.sequence_tokens = 80;
    const ActivationEstimate prefill_set = w->estimate_activations(q);
    q.sequence_tokens = 1;
    q.cached_tokens = 80 + 48 - 2;
    const ActivationEstimate step_set = w->estimate_activations(q);
    CHECK(p.peak_bytes == w->facts().parameter_count * 2 + prefill_set.buffer_bytes + g.kv_cache_bytes + 80 * 8 +
                              std::max(prefill_set.forward_peak_bytes, step_set.forward_peak_bytes));
    CHECK(prefill_set.forward_peak_bytes <
          w->estimate_activations(activation_query(i, c10::Device(c10::kCUDA))).forward_peak_bytes);
    CHECK(p.latency.estimate_s > 10 * forward_plans[k].inference.latency.estimate_s);
    CHECK(forward_plans[k].inference.generation.new_tokens == 0);
    CHECK_FALSE(forward_plans[k].inference.continuous);  // a request of one forward: static batches
  }
  // Serving generation: continuous batching by default, at most as many requests at once as the memory holds, and
  // without a latency bound the capacity of full slots; static batches on request. Under a bound continuous
  // batching sustains more (nobody waits for a batch to fill or to finish).
  PlanSettings serve = s;
  serve.serve_qps = 10;
  serve.p99_ms = 20000;
  const auto continuous = plan_cards(*w, serve, cards);
  serve.batching = ServingBatching::static_batches;
  const auto batches = plan_cards(*w, serve, cards);
  for (size_t k = 0; k < cards.size(); ++k) {
    INFO(cards[k].id);
    const InferencePlan& p = continuous[k].inference;
    CHECK(p.continuous);
    CHECK_FALSE(batches[k].inference.continuous);
    REQUIRE(p.serving_batch >= 1);
    CHECK(p.serving_batch <= p.largest_batch);
    CHECK(p.qps_per_card.estimate > batches[k].inference.qps_per_card.estimate);
    CHECK(p.qps_per_card.bound >= p.qps_per_card.estimate);
    CHECK(p.cards_for_qps <= batches[k].inference.cards_for_qps);
    CHECK(p.latency.estimate_s == batches[k].inference.latency.estimate_s);  // a request alone: the same
  }
  serve.batching = ServingBatching::continuous;
  serve.new_tokens = 0;
  CHECK_THROWS_WITH(validate(serve), Catch::Contains("plan.batching") && Catch::Contains("--new-tokens"));
  CHECK(parse_serving_batching("static") == ServingBatching::static_batches);
  CHECK_THROWS_WITH(parse_serving_batching("dynamic"), Catch::Contains("auto, static, continuous"));
  // Validation names the field: a model without a KV-cached forward, a request longer than the context.
  PlanSettings bad = s;
  CHECK_THROWS_WITH(plan_cards(*make_zoo_workload("mlp", "tiny"), bad, cards), Catch::Contains("KV-cached"));
  bad.prompt_tokens = 100;
  CHECK_THROWS_WITH(generation_prompt_tokens(*w, bad),
                    Catch::Contains("plan.prompt_tokens") && Catch::Contains("1 .. 81"));
  bad.prompt_tokens = 81;
  CHECK(generation_prompt_tokens(*w, bad) == 81);
  bad.new_tokens = 128;
  CHECK_THROWS_WITH(generation_prompt_tokens(*w, bad), Catch::Contains("plan.new_tokens"));
  bad = s;
  bad.new_tokens = 0;
  bad.prompt_tokens = 16;
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("plan.prompt_tokens"));
}

TEST_CASE(
    "the host CPU's card from its catalog class projects gpt small's step: supported, the bound below the estimate",
    "[projection]") {
  // The projection only: how close it lands to the measured step is a timing, which bench/host_projection prints
  // (docs/results/cpu-avx512-amx/host-projection.txt), not a test's to assert.
  const auto& catalog = accelerator_catalog();
  const HostInfo host = describe_host();
  const std::string cls = host_cpu_class(host.cpu_features_usable);
  const double ghz = host_clock_ghz();
  if (cls.empty() || ghz <= 0)
    TVIE_SKIP("no CPU class or clock for this machine (" << host.cpu_model << "): nothing to project");
  const CpuClass* cpu = nullptr;
  for (const auto& c : catalog.cpu_classes)
    if (c.id == cls) cpu = &c;
  REQUIRE(cpu != nullptr);
  const Accelerator card = host_accelerator(*cpu, 2, ghz, 1);
  const auto w = make_zoo_workload("gpt", "small");
  TrainSettings t;
  const ProjectedTime p = project_time(training_step_work(*w, t), card);
  REQUIRE(p.supported);
  CHECK(p.bound_s > 0);
  CHECK(p.estimate_s >= p.bound_s);
  // Twice the cores, half the time bound: every part of the bound is a peak (compute or bandwidth) per core.
  const ProjectedTime four = project_time(training_step_work(*w, t), host_accelerator(*cpu, 4, ghz, 1));
  CHECK(four.bound_s == Approx(p.bound_s / 2).epsilon(1e-12));
}

namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// gpt tiny's training step at the default settings, and the T4.
struct StepOnCard {
  StepWork work;
  Accelerator card;
};
StepOnCard gpt_tiny_step_on_t4() {
  const auto w = make_zoo_workload("gpt", "tiny");
  return {training_step_work(*w, TrainSettings{}), select_accelerators(accelerator_catalog(), "t4").at(0)};
}

// One phase of a training step projected alone: 0 the forward, 1 the backward, 2 the optimizer's step.
ProjectedTime project_phase(const StepWork& work, const Accelerator& card, int keep) {
  StepWork p = work;
  if (keep != 0) p.forward = PhaseWork{};
  if (keep != 1) p.backward = PhaseWork{};
  if (keep != 2) p.optimizer = OpWork{};
  return project_time(p, card);
}

}  // namespace

TEST_CASE("a training step split by its phases: the mean step in the proportion of the medians, communication out",
          "[projection][pure]") {
  // Medians 1 (data), 3, 5, 1 ms of a 12 ms mean step: the data phase spread over the three.
  const MeasuredPhases m = split_training_step(12e-3, 1e-3, 3e-3, 5e-3, 1e-3);
  CHECK(m.forward_s == Approx(12e-3 * 3 / 9));
  CHECK(m.backward_s == Approx(12e-3 * 5 / 9));
  CHECK(m.optimizer_s == Approx(12e-3 * 1 / 9));
  // Data parallelism: the communication phase's share of the step is taken out (the plan adds its own all-reduce).
  const MeasuredPhases d = split_training_step(12e-3, 0, 3e-3, 5e-3, 1e-3, 3e-3);
  CHECK(d.forward_s + d.backward_s + d.optimizer_s == Approx(12e-3 * 9 / 12));
  CHECK(d.backward_s == Approx(12e-3 * 5 / 12));
  // A phase not timed (a CUDA-graph step), or no step: nothing.
  CHECK(split_training_step(12e-3, 0, 3e-3, 5e-3, 0).forward_s == 0);
  CHECK(split_training_step(0, 0, 3e-3, 5e-3, 1e-3).forward_s == 0);
}

TEST_CASE("calibrated phase by phase: each phase's projection by its own factor, the bounds summed",
          "[projection][pure]") {
  // gpt tiny's training step on the T4, its phases measured as if 3x (forward), 2x (backward) and 0.5x
  // (optimizer, launch-bound: fewer microseconds per kernel) their projections.
  const auto [work, t4] = gpt_tiny_step_on_t4();
  const auto part = [&](int keep) { return project_phase(work, t4, keep); };
  const ProjectedTime f = part(0), b = part(1), o = part(2), whole = project_time(work, t4);
  CHECK(f.estimate_s + b.estimate_s + o.estimate_s == Approx(whole.estimate_s));
  CHECK(f.bound_s + b.bound_s + o.bound_s >= whole.bound_s * (1 - 1e-12));
  MeasuredPhases m;
  m.forward_s = 3 * f.estimate_s, m.backward_s = 2 * b.estimate_s, m.optimizer_s = 0.5 * o.estimate_s;
  const PhaseCalibration k = calibrate_training_phases(work, t4, m);
  REQUIRE(k.complete());
  CHECK(k.forward.factor == Approx(3));
  CHECK(k.backward.factor == Approx(2));
  CHECK(k.optimizer.factor == Approx(0.5));
  // The measured run itself: its measurement (each phase above its bound here), not the step's single factor.
  const ProjectedTime c = calibrated_training_step(work, t4, CalibrationFactor{}, k);
  REQUIRE(f.bound_s < m.forward_s);
  REQUIRE(o.bound_s < m.optimizer_s);
  CHECK(c.estimate_s == Approx(m.forward_s + m.backward_s + m.optimizer_s));
  CHECK(c.bound_s == Approx(f.bound_s + b.bound_s + o.bound_s));
  CHECK(c.kernels == Approx(whole.kernels));
  // Incomplete phases: the step's factor, as calibrated() gives it.
  PhaseCalibration partial = k;
  partial.optimizer = {};
  const CalibrationFactor step = calibration_factor(whole, 2 * whole.estimate_s);
  CHECK(calibrated_training_step(work, t4, step, partial).estimate_s == Approx(calibrated(whole, step).estimate_s));
}

TEST_CASE("calibrated class by class: a phase's time split as the profiled step's, each class by its own factor",
          "[projection][pure]") {
  // gpt tiny's training step on the T4; its forward measured as if its matmuls took 2x their projection, attention
  // 4x, normalisation 3x and elementwise 1.5x, and the profiled step said so in its shares (ms, any scale).
  const auto [work, t4] = gpt_tiny_step_on_t4();
  const ProjectedTime f = project_phase(work, t4, 0), b = project_phase(work, t4, 1), o = project_phase(work, t4, 2);
  const auto class_alone = [&](int phase, OpClass c) {
    StepWork p = work;
    p.forward = PhaseWork{}, p.backward = PhaseWork{}, p.optimizer = OpWork{};
    if (phase == 0) p.forward[c] = work.forward[c];
    if (phase == 1) p.backward[c] = work.backward[c];
    return project_time(p, t4);
  };
  const std::array<double, kOpClassCount> factor = {2, 0, 4, 3, 1.5};  // in OpClass order; no convolution in gpt
  MeasuredPhases m;
  double sum = 0;
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto c = static_cast<OpClass>(i);
    const double s = factor[static_cast<size_t>(i)] * class_alone(0, c).estimate_s;
    m.forward_classes[c] = s * 1e3 * 7;  // shares only: the scale of the profiled step does not matter
    sum += s;
  }
  m.forward_classes[OpClass::convolution] = 0.5;  // time the projection has no work for: left to the other classes
  // The forward's measured time (the unprofiled steps') is 1.25x what the classes' shares add up to: spread over them.
  const double spread = 1.25;
  m.forward_s = spread * sum;
  m.backward_s = 2 * b.estimate_s, m.optimizer_s = o.estimate_s;
  const PhaseCalibration k = calibrate_training_phases(work, t4, m);
  REQUIRE(k.complete());
  REQUIRE(k.forward_classes.any());
  CHECK_FALSE(k.backward_classes.any());  // no backward times by class: the backward's factor alone
  CHECK(k.forward_classes.by_class[static_cast<size_t>(OpClass::convolution)].factor == 0);
  for (OpClass c : {OpClass::matmul, OpClass::attention, OpClass::normalization, OpClass::elementwise}) {
    INFO(to_string(c));
    const auto& kc = k.forward_classes.by_class[static_cast<size_t>(c)];
    CHECK(kc.factor == Approx(factor[static_cast<size_t>(c)] * spread));
    CHECK(kc.projected_s == Approx(class_alone(0, c).estimate_s));
  }
  // The measured run itself (every class measured above its bound: 1.5x its estimate or more) gives back its
  // measurement, summed class by class.
  for (int i = 0; i < kOpClassCount; ++i) REQUIRE_FALSE(k.forward_classes.by_class[static_cast<size_t>(i)].below_bound);
  const ProjectedTime c = calibrated_training_step(work, t4, CalibrationFactor{}, k);
  CHECK(c.estimate_s == Approx(m.forward_s + m.backward_s + m.optimizer_s));
  CHECK(c.bound_s == Approx(f.bound_s + b.bound_s + o.bound_s));
  CHECK(c.kernels == Approx(project_time(work, t4).kernels));
  // A workload with a class the measured one had no factor for (cnn: convolutions) takes the forward's factor there.
  const auto cnn = make_zoo_workload("cnn", "tiny");
  const StepWork cw = training_step_work(*cnn, TrainSettings{});
  StepWork conv_only = cw;
  conv_only.backward = PhaseWork{}, conv_only.optimizer = OpWork{};
  for (int i = 0; i < kOpClassCount; ++i)
    if (static_cast<OpClass>(i) != OpClass::convolution) conv_only.forward.by_class[static_cast<size_t>(i)] = OpWork{};
  REQUIRE(cw.forward[OpClass::convolution].flops > 0);
  PhaseCalibration forward_only = k;  // the other phases and the forward's other classes out of the picture
  const ProjectedTime conv = calibrated_training_step(conv_only, t4, CalibrationFactor{}, forward_only);
  CHECK(conv.estimate_s == Approx(calibrated(project_time(conv_only, t4), k.forward).estimate_s));
  // Without class factors: the phase by phase calibration, unchanged.
  PhaseCalibration phases_only = k;
  phases_only.forward_classes = {};
  CHECK(calibrated_training_step(work, t4, CalibrationFactor{}, phases_only).estimate_s ==
        Approx(calibrated(f, k.forward).estimate_s + calibrated(b, k.backward).estimate_s +
               calibrated(o, k.optimizer).estimate_s));
}

TEST_CASE("calibration factor: the term that dominated the measured run's projection takes the difference",
          "[projection][pure]") {
  const auto time = [](double estimate, double launch, double bound) {
    ProjectedTime t;
    t.estimate_s = estimate, t.launch_s = launch, t.bound_s = bound;
    t.by_class[0].estimate_s = estimate - launch;
    return t;
  };
  // Launch-bound (a small model decoding): 0.8 of 1.0 ms launches, measured 3 ms: the launches were 2.8 ms.
  const ProjectedTime small = time(1e-3, 0.8e-3, 0.1e-3);
  const CalibrationFactor l = calibration_factor(small, 3e-3);
  CHECK(l.factor == Approx(3));
  CHECK(l.work_factor == 1);
  CHECK(l.launch_factor == Approx(2.8 / 0.8));
  CHECK(calibrated(small, l).estimate_s == Approx(3e-3));  // the measured run itself: its measurement
  CHECK(calibrated(small, l).launch_s == Approx(2.8e-3));
  // A big model's step (10 ms, of which 0.5 ms launches) keeps its operators' time: 9.5 + 0.5 x 3.5 ms, not 3 x 10.
  const ProjectedTime big = time(10e-3, 0.5e-3, 5e-3);
  CHECK(calibrated(big, l).estimate_s == Approx(9.5e-3 + 0.5e-3 * 3.5));
  CHECK(calibrated(big, l).by_class[0].estimate_s == Approx(9.5e-3));
  // Operator-bound: the operators' time takes the difference, the launches stay.
  const CalibrationFactor w = calibration_factor(big, 15e-3);
  CHECK(w.launch_factor == 1);
  CHECK(w.work_factor == Approx(14.5 / 9.5));
  CHECK(calibrated(big, w).estimate_s == Approx(15e-3));
  CHECK(calibrated(big, w).by_class[0].estimate_s == Approx(14.5e-3));
  // Measured below the dominant term's share (faster than projected): both scale; never below the bound.
  const CalibrationFactor fast = calibration_factor(small, 0.15e-3);
  CHECK(fast.work_factor == Approx(0.15));
  CHECK(fast.launch_factor == Approx(0.15));
  CHECK(calibrated(big, fast).estimate_s == Approx(5e-3));
  // In words, as the console and the HTML page say it.
  CHECK(describe_correction(l) == "the kernel overhead x3.5 (launch-bound)");
  CHECK(describe_correction(w) == "the operators' time x1.53");
  CHECK(describe_correction(fast) == "both x0.15");
  CHECK(describe_correction(CalibrationFactor{}).empty());
  CHECK_FALSE(fast.below_bound);
  // Measured faster than its own roofline bound (a CPU's cache beating the catalog's DRAM bandwidth): said, and
  // the estimate still stops at the bound, for the measured run too.
  const CalibrationFactor beaten = calibration_factor(small, 0.05e-3);
  CHECK(beaten.below_bound);
  CHECK(calibrated(small, beaten).estimate_s == Approx(0.1e-3));
  // Nothing measured, or nothing projected: no factor, nothing changed; a card that cannot project it says why.
  CHECK(calibration_factor(small, 0).factor == 0);
  ProjectedTime unsupported = small;
  unsupported.supported = false;
  unsupported.unsupported = "host has no bf16_tflops peak in the catalog";
  const CalibrationFactor none = calibration_factor(unsupported, 3e-3);
  CHECK(none.factor == 0);
  CHECK(none.measured_s == 3e-3);
  CHECK(none.unsupported == unsupported.unsupported);
  CHECK(calibrated(big, CalibrationFactor{}).estimate_s == big.estimate_s);
}

TEST_CASE("calibration from a measured report: the H200 run scales the Hopper cards' estimates", "[projection]") {
  const std::string path = std::string(TVIE_SOURCE_DIR) + "/docs/results/gpu-h200/compare-gpt2-small.json";
  auto report = nlohmann::json::parse(read_text(path));
  // The whole step's and the phases' calibration: the run's profile by operator class (--profile-classes), which
  // calibrates class by class instead (a test of its own), is left out.
  for (const char* mode : {"training", "inference"}) report[mode].erase("time_by_class");
  const Calibration c = calibration_from_report(report.dump(), path, std::nullopt);
  CHECK(c.card_id == "h200");
  CHECK(c.architecture == "Hopper");
  CHECK(c.workload == "gpt/gpt2-small");
  // The factor: what the report measured over what the projection gives for the same workload on the H200.
  const auto w = make_zoo_workload("gpt", "gpt2-small", 1024);
  TrainSettings t;
  t.batch_size = report["training"]["settings"]["batch_size"].get<int64_t>();
  t.precision = TrainPrecision::amp_bf16;
  const Accelerator h200 = select_accelerators(accelerator_catalog(), "h200").at(0);
  const ProjectedTime p = project_time(training_step_work(*w, t), h200);
  CHECK(c.training.measured_s == Approx(report["training"]["step_ms"]["mean"].get<double>() / 1000));
  CHECK(c.training.projected_s == Approx(p.estimate_s));
  CHECK(c.training.factor == Approx(c.training.measured_s / p.estimate_s));
  CHECK(c.training.bound_s <= c.training.measured_s);  // the measured step is not faster than the roofline
  CHECK(c.inference.factor > 0);
  // Applied to the Hopper cards only, the estimate never below the bound.
  PlanSettings s;
  s.stack = ServingStack::tvie;  // tvie's own kernels: what this test derives by hand
  s.train = t;
  s.infer.dtype = InferenceDtype::bf16;
  s.include_host = false;
  const auto cards = select_accelerators(accelerator_catalog(), "a100-80gb-sxm,h100-sxm");
  const auto plain = plan_cards(*w, s, cards);
  s.calibration = c;
  const auto tuned = plan_cards(*w, s, cards);
  CHECK(tuned[0].training_calibration.factor == 0);
  CHECK(tuned[0].training.step.estimate_s == plain[0].training.step.estimate_s);
  CHECK(tuned[1].training_calibration.factor == Approx(c.training.factor));
  // The operators' time and the launches each by their own factor (one of them 1), never below the bound.
  const auto corrected = [](const ProjectedTime& t, const CalibrationFactor& f) {
    return std::max(t.bound_s, (t.estimate_s - t.launch_s) * f.work_factor + t.launch_s * f.launch_factor);
  };
  CHECK((c.training.work_factor == 1 || c.training.launch_factor == 1));
  CHECK(tuned[1].inference.latency.estimate_s == Approx(corrected(plain[1].inference.latency, c.inference)));
  // Training phase by phase: the report's step split as its phases' medians (no communication: they sum to the
  // mean step), each phase's projection on the H100 corrected by its own factor.
  REQUIRE(c.training_phases.complete());
  CHECK(tuned[1].training_phase_calibration.complete());
  CHECK_FALSE(tuned[0].training_phase_calibration.complete());
  const auto& ph = report["training"]["phases"];
  const auto& k = c.training_phases;
  CHECK(k.forward.measured_s + k.backward.measured_s + k.optimizer.measured_s == Approx(c.training.measured_s));
  CHECK(k.forward.measured_s / k.backward.measured_s ==
        Approx(ph["forward"]["p50_ms"].get<double>() / ph["backward"]["p50_ms"].get<double>()));
  const StepWork work = training_step_work(*w, t);
  const Accelerator h100 = cards.at(1);
  const auto part = [&](int keep) { return project_phase(work, h100, keep); };
  const double by_phase =
      corrected(part(0), k.forward) + corrected(part(1), k.backward) + corrected(part(2), k.optimizer);
  CHECK(tuned[1].training.step.estimate_s == Approx(by_phase));
  // The bound: the phases' bounds summed, as they run one after the other (no lower than the step's as a whole,
  // where a class memory-bound in one phase and compute-bound in another shares one roofline).
  CHECK(tuned[1].training.step.bound_s == Approx(part(0).bound_s + part(1).bound_s + part(2).bound_s).epsilon(1e-9));
  CHECK(tuned[1].training.step.bound_s >= plain[1].training.step.bound_s * (1 - 1e-12));
  // A report whose step was one CUDA graph (its phases not timed apart) calibrates the whole step.
  auto graph = report;
  graph["training"]["cuda_graph"]["enabled"] = true;
  const Calibration g = calibration_from_report(graph.dump(), "graph.json", std::nullopt);
  CHECK_FALSE(g.training_phases.complete());
  s.calibration = g;
  const auto whole = plan_cards(*w, s, cards);
  CHECK(whole[1].training.step.estimate_s == Approx(corrected(plain[1].training.step, g.training)));
  // Reports that cannot calibrate name --from's field.
  auto bad = report;
  bad["context"]["gpu"]["name"] = "NVIDIA GeForce GTX 480";
  CHECK_THROWS_WITH(calibration_from_report(bad.dump(), "x.json", std::nullopt),
                    Catch::Contains("from") && Catch::Contains("GTX 480"));
  bad = report;
  bad["model"]["name"] = "my-own-model";
  CHECK_THROWS_WITH(calibration_from_report(bad.dump(), "x.json", std::nullopt), Catch::Contains("not a zoo model"));
  bad = report;
  bad["context"].erase("gpu");
  bad["context"]["cpu_model"] = "Some Other CPU";
  const auto host = local_host_accelerator();
  CHECK_THROWS_WITH(calibration_from_report(bad.dump(), "x.json", host), Catch::Contains("from"));
  CHECK_THROWS_WITH(calibration_from_report("{", "x.json", host), Catch::Contains("from"));
}

TEST_CASE("calibration from a CPU report of this machine: the host's estimate becomes the measured step",
          "[projection]") {
  const auto host = local_host_accelerator();
  if (!host) {
    TVIE_SKIP("this machine's CPU has no class in the catalog: no host card to calibrate");
  }
  const auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings t;
  t.steps = 3;
  t.warmup_steps = 1;
  const TrainReport r = run_train(*w, t, {"cpu", {}});
  const std::string text = to_json_string(r);
  const Calibration c = calibration_from_report(text, "train.json", host);
  CHECK(c.card_id == "host");
  // The same CPU under another oneDNN ISA limit ran other kernels: not this host's measurement.
  auto limited = nlohmann::json::parse(text);
  limited["context"]["onednn_isa_limit"] = describe_host().onednn_isa_limit == "AVX2" ? "AVX512_CORE" : "AVX2";
  CHECK_THROWS_WITH(calibration_from_report(limited.dump(), "train.json", host),
                    Catch::Contains("ONEDNN_MAX_CPU_ISA") && Catch::Contains("from"));
  CHECK(c.architecture == "host");
  CHECK(c.training.measured_s == Approx(r.training.step.mean / 1000));
  PlanSettings s;
  s.train = t;
  s.cards = "t4";
  s.calibration = c;
  const auto plans = plan_cards(*w, s, {*host, select_accelerators(accelerator_catalog(), "t4").at(0)});
  CHECK(plans[0].training_calibration.factor == Approx(c.training.factor));
  // Calibrated phase by phase: each phase gives back its share of the measured step, or its bound where the
  // measurement beat it (a working set held in the cache).
  const PhaseCalibration& k = c.training_phases;
  REQUIRE(k.complete());
  CHECK(plans[0].training_phase_calibration.complete());
  CHECK(k.forward.measured_s + k.backward.measured_s + k.optimizer.measured_s == Approx(c.training.measured_s));
  const auto given_back = [](const CalibrationFactor& f) { return std::max(f.bound_s, f.measured_s); };
  CHECK(plans[0].training.step.estimate_s ==
        Approx(given_back(k.forward) + given_back(k.backward) + given_back(k.optimizer)));
  CHECK(plans[1].training_calibration.factor == 0);  // not the host: untouched
  CHECK_FALSE(k.forward_classes.any());              // the report has no time by class

  // With one more step profiled (--profile-classes): within the forward and the backward, class by class, each
  // class's share of its phase given back (or its bound).
  t.profile_classes = true;
  const TrainReport rc = run_train(*w, t, {"cpu", {}});
  s.calibration = calibration_from_report(to_json_string(rc), "train.json", host);
  const PhaseCalibration& kc = s.calibration->training_phases;
  REQUIRE(kc.complete());
  REQUIRE(kc.forward_classes.any());
  REQUIRE(kc.backward_classes.any());
  double forward = 0, backward = 0, expected = given_back(kc.optimizer);
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto& f = kc.forward_classes.by_class[static_cast<size_t>(i)];
    const auto& b = kc.backward_classes.by_class[static_cast<size_t>(i)];
    INFO(to_string(static_cast<OpClass>(i)) << ": forward x" << f.factor << ", backward x" << b.factor);
    CHECK((f.factor > 0) == (rc.training.time_by_class.forward.by_class_ms[static_cast<size_t>(i)] > 0));
    forward += f.measured_s, backward += b.measured_s;
    expected += given_back(f) + given_back(b);
  }
  CHECK(forward == Approx(kc.forward.measured_s));
  CHECK(backward == Approx(kc.backward.measured_s));
  const auto by_class = plan_cards(*w, s, {*host});
  CHECK(by_class[0].training.step.estimate_s == Approx(expected));
  CHECK_FALSE(s.calibration->inference_classes.any());  // a train report has no inference batch

  // A compare report with one more inference batch profiled: the batch at the training batch calibrated by class
  // (the plan's inference at batch 1 is another batch: only checked to be calibrated).
  CompareSettings cs;
  cs.train = t;
  cs.infer.batch_size = t.batch_size, cs.infer.steps = 3, cs.infer.warmup_steps = 1, cs.infer.profile_classes = true;
  const CompareReport cr = run_compare(*w, cs, {"cpu", {}});
  const Calibration ci = calibration_from_report(to_json_string(cr), "compare.json", host);
  REQUIRE(ci.inference_classes.any());
  double batch = 0;
  for (const auto& f : ci.inference_classes.by_class) batch += f.measured_s;
  CHECK(batch == Approx(ci.inference.measured_s));
  s.calibration = ci;
  const auto infer_plans = plan_cards(*w, s, {*host});
  CHECK(infer_plans[0].inference_class_calibration.any());
}

TEST_CASE("a measured generation takes the decoding's batch, dtype and lengths, and its times in seconds",
          "[projection][pure]") {
  DecodeSettings d;
  d.batch_size = 3;
  d.prompt_tokens = 24;
  d.new_tokens = 8;
  d.dtype = InferenceDtype::bf16;
  d.seed = 7;
  const MeasuredGeneration g = measured_generation(d, 12.5, 2.0);
  CHECK(g.infer.batch_size == 3);
  CHECK(g.infer.dtype == InferenceDtype::bf16);
  CHECK(g.infer.seed == 7);
  CHECK(g.prompt_tokens == 24);
  CHECK(g.new_tokens == 8);
  CHECK(g.ttft_s == Approx(0.0125));
  CHECK(g.tpot_s == Approx(0.002));
  // One new token: it comes from the prefill, there is no time per output token after it to read.
  d.new_tokens = 1;
  CHECK(measured_generation(d, 12.5, 99.0).tpot_s == 0);
}

TEST_CASE(
    "calibration from a decode report of this machine: the host's first token and time per output token "
    "become the measured ones",
    "[projection]") {
  const auto host = local_host_accelerator();
  if (!host) {
    TVIE_SKIP("this machine's CPU has no class in the catalog: no host card to calibrate");
  }
  const auto w = make_zoo_workload("gpt", "small");
  DecodeSettings d;
  d.prompt_tokens = 32;
  d.new_tokens = 16;
  d.repetitions = 2;
  const DecodeReport r = run_decode(*w, d, {"cpu", {}});
  const std::string text = to_json_string(r);
  const Calibration c = calibration_from_report(text, "decode.json", host);
  CHECK(c.card_id == "host");
  CHECK(c.training.factor == 0);  // a decode report has no training step and no forward of whole sequences
  CHECK(c.inference.factor == 0);
  CHECK(c.prefill.measured_s == Approx(r.result.ttft_ms.mean / 1000));
  CHECK(c.decoding.measured_s == Approx(r.result.tpot_ms.mean / 1000));
  CHECK(c.decoding.factor == Approx(c.decoding.measured_s / c.decoding.projected_s));
  CHECK(c.prefill.factor == Approx(c.prefill.measured_s / c.prefill.projected_s));
  INFO("uncalibrated host projection against the measurement: prefill x" << c.prefill.factor << ", decoding step x"
                                                                         << c.decoding.factor);
  // Whether the run beat its roofline bound depends on the machine (on an AMD EPYC with AVX-512, gpt small's
  // 16 MiB of weights stay in the cache: its decoding step ran 1.5-1.8x faster than the catalog's DRAM bandwidth
  // per core allows), and the calibration says which.
  CHECK(c.decoding.below_bound == (c.decoding.measured_s < c.decoding.bound_s));
  CHECK(c.prefill.below_bound == (c.prefill.measured_s < c.prefill.bound_s));

  // The plan of the same generation: its uncalibrated figures are the calibration's projections, and with the
  // calibration the host's become the measured ones; other cards are untouched.
  PlanSettings s;
  s.stack = ServingStack::tvie;  // tvie's own kernels: what this test derives by hand
  s.infer.dtype = InferenceDtype::fp32;
  s.new_tokens = d.new_tokens;
  s.prompt_tokens = d.prompt_tokens;
  const std::vector<Accelerator> cards = {*host, select_accelerators(accelerator_catalog(), "t4").at(0)};
  const auto plain = plan_cards(*w, s, cards);
  const GenerationPlan& p = plain[0].inference.generation;
  CHECK(p.prefill.estimate_s == Approx(c.prefill.projected_s));
  CHECK(p.time_per_output_token_s.estimate == Approx(c.decoding.projected_s));
  CHECK(p.time_per_output_token_s.bound == Approx(c.decoding.bound_s));
  s.calibration = c;
  const auto plans = plan_cards(*w, s, cards);
  CHECK(plans[0].prefill_calibration.factor == Approx(c.prefill.factor));
  CHECK(plans[0].decoding_calibration.factor == Approx(c.decoding.factor));
  const GenerationPlan& g = plans[0].inference.generation;
  CHECK(g.prefill.estimate_s == Approx(std::max(g.prefill.bound_s, c.prefill.measured_s)));
  CHECK(g.time_per_output_token_s.estimate == Approx(std::max(g.time_per_output_token_s.bound, c.decoding.measured_s)));
  CHECK(plans[0].inference.latency.estimate_s ==
        Approx(g.prefill.estimate_s + double(d.new_tokens - 1) * g.time_per_output_token_s.estimate));
  CHECK(plans[1].prefill_calibration.factor == 0);
  CHECK(plans[1].decoding_calibration.factor == 0);
  CHECK(plans[1].inference.latency.estimate_s == plain[1].inference.latency.estimate_s);
  // Without generation the prefill's factor stands in for a forward's.
  s.new_tokens = s.prompt_tokens = 0;
  const auto forward = plan_cards(*w, s, cards);
  CHECK(forward[0].inference_calibration.factor == Approx(c.prefill.factor));
  CHECK(forward[0].decoding_calibration.factor == 0);
  // A decode report the model cannot replay names --from's field.
  auto bad = nlohmann::json::parse(text);
  bad["decoding"]["settings"]["prompt_tokens"] = 4096;
  CHECK_THROWS_WITH(calibration_from_report(bad.dump(), "x.json", host), Catch::Contains("from"));

  // With one more generation profiled (decode --profile-classes): the prefill and the decoding step class by class,
  // each class's share of its phase's measured time; the host's first token becomes its classes given back (each
  // measured or its bound), and the plan says it calibrated both phases by class.
  d.profile_classes = true;
  const DecodeReport rc = run_decode(*w, d, {"cpu", {}});
  REQUIRE(rc.result.time_by_class.measured());
  CHECK(rc.result.time_by_class.forward[OpClass::matmul] > 0);   // the prefill
  CHECK(rc.result.time_by_class.backward[OpClass::matmul] > 0);  // the decoding steps
  const Calibration k = calibration_from_report(to_json_string(rc), "decode.json", host);
  REQUIRE(k.prefill_classes.any());
  REQUIRE(k.decoding_classes.any());
  double prefill = 0, step = 0, given_back = 0;
  for (size_t i = 0; i < k.prefill_classes.by_class.size(); ++i) {
    const auto& f = k.prefill_classes.by_class[i];
    prefill += f.measured_s, step += k.decoding_classes.by_class[i].measured_s;
    given_back += std::max(f.bound_s, f.measured_s);
  }
  CHECK(prefill == Approx(k.prefill.measured_s));
  CHECK(step == Approx(k.decoding.measured_s));
  s.new_tokens = d.new_tokens;
  s.prompt_tokens = d.prompt_tokens;
  s.calibration = k;
  const auto by_class = plan_cards(*w, s, cards);
  CHECK(by_class[0].prefill_class_calibration.any());
  CHECK(by_class[0].decoding_class_calibration.any());
  CHECK_FALSE(by_class[1].decoding_class_calibration.any());
  CHECK(by_class[0].inference.generation.prefill.estimate_s == Approx(given_back));
}

namespace {

// Every leaf of `expected` equal in `actual`: integers, strings and booleans exactly, other numbers within a relative
// 1e-9 (the same code may round its last bits differently on another CPU's libm); the same keys and lengths.
void check_same_json(const nlohmann::json& expected, const nlohmann::json& actual, const std::string& path,
                     int& differences) {
  if (differences > 20) return;  // enough to say what went stale
  const auto differ = [&](const std::string& why) {
    ++differences;
    INFO(path << ": " << why << "; committed " << expected.dump().substr(0, 200) << ", now "
              << actual.dump().substr(0, 200));
    CHECK(false);
  };
  if (expected.is_object() && actual.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      if (!actual.contains(key)) {
        differ("no longer written");
        continue;
      }
      check_same_json(value, actual[key], path + "." + key, differences);
    }
    for (const auto& [key, value] : actual.items())
      if (!expected.contains(key)) differ("new key " + key + " (regenerate: scripts/plan-example.py)");
  } else if (expected.is_array() && actual.is_array()) {
    if (expected.size() != actual.size()) return differ("a different length");
    for (size_t i = 0; i < expected.size(); ++i)
      check_same_json(expected[i], actual[i], path + "[" + std::to_string(i) + "]", differences);
  } else if (expected.is_number_float() || actual.is_number_float()) {
    if (!expected.is_number() || !actual.is_number()) return differ("not a number");
    const double a = expected.get<double>(), b = actual.get<double>();
    if (std::fabs(a - b) > 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-300) differ("another value");
  } else if (expected != actual) {
    differ("another value");
  }
}

}  // namespace

TEST_CASE("the worked example's committed plans are what tvie plan computes now (no stale figure)", "[projection]") {
  // A regression check: docs/results/plan-example/*.json, written by scripts/plan-example.py, feed its
  // worked-example.md. Each is made again from the command line its context records (every case
  // --no-host: nothing of this machine in it) and compared but for the context and the host's description. A change
  // to the predictions, the catalog or the projection that moves a figure fails here until the example is
  // regenerated. That the figures are right is not this test's to say: the next test derives the model's bytes
  // independently, and the prediction and projection have tests of their own.
  namespace fs = std::filesystem;
  tvie::test::TempDir dir;
  int plans = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TVIE_SOURCE_DIR) / "docs" / "results" / "plan-example")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json") continue;
    ++plans;
    INFO(name);
    std::ifstream in(entry.path());
    const auto committed = nlohmann::json::parse(in);
    const auto argv = committed["context"]["argv"].get<std::vector<std::string>>();
    REQUIRE(argv.size() > 2);
    REQUIRE(argv[1] == "plan");
    CHECK(std::find(argv.begin(), argv.end(), "--no-host") != argv.end());
    std::string args;
    for (size_t i = 1; i < argv.size(); ++i) {
      std::string a = argv[i];
      if (i > 1 && argv[i - 1] == "--json") a = (dir.path / name).string();
      args += " " + a;
    }
    // From the source tree, as the script runs it (--from names a report by its path there).
    const auto run = tvie::test::run_command("cd " + std::string(TVIE_SOURCE_DIR) + " && " + TVIE_CLI_PATH + args);
    INFO(run.out);
    REQUIRE(run.exit_code == 0);
    std::ifstream again_in(dir.path / name);
    auto now = nlohmann::json::parse(again_in);
    auto then = committed;
    for (const char* machine : {"context", "host"}) {  // this machine's: not part of a --no-host plan's figures
      then.erase(machine);
      now.erase(machine);
    }
    int differences = 0;
    check_same_json(then, now, "", differences);
    CHECK(differences == 0);
  }
  CHECK(plans == 15);
}

TEST_CASE("the worked example's Llama 3 8B: its parameter count from the architecture, its bytes from the count",
          "[projection]") {
  // Llama 3 8B (Meta's model card: 8.03B parameters): vocabulary 128,256, width 4,096, 32 blocks, 32 query heads and
  // 8 key-value heads of 128, SwiGLU of 14,336, RMSNorm weights only, an untied head. By hand: the embedding and the
  // head, and per block the attention (q and o 4096 x 4096, k and v 4096 x 1024), the MLP (three 4096 x 14336) and
  // two norms; one final norm.
  const int64_t vocab = 128256, h = 4096, kv = 8 * 128, ffn = 14336, blocks = 32;
  const int64_t per_block = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h;
  const int64_t parameters = 2 * vocab * h + blocks * per_block + h;
  REQUIRE(parameters == 8030261248);
  const auto read = [](const char* name) {
    std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/docs/results/plan-example/" + name);
    REQUIRE(in);
    return nlohmann::json::parse(in);
  };
  const auto serve = read("llama-3-8b-serve-fp16.json");
  CHECK(serve["model"]["parameters"] == parameters);
  CHECK(serve["inference_predicted"]["parameters"] == 2 * parameters);  // fp16: 2 bytes each
  // Training with amp-bf16 AdamW: fp32 weights and gradients (4 bytes each), two fp32 moments (8).
  const auto train = read("llama-3-8b-train.json");
  REQUIRE(train["settings"]["train"]["precision"] == "amp-bf16");
  REQUIRE(train["settings"]["train"]["optimizer"] == "adamw");
  CHECK(train["training_predicted"]["parameters"] == 4 * parameters);
  CHECK(train["training_predicted"]["gradients"] == 4 * parameters);
  CHECK(train["training_predicted"]["optimizer_state"] == 8 * parameters);
}

TEST_CASE("plan's stack: auto is the tuned stack for sizing, tvie's kernels when a calibration measured them",
          "[projection][pure]") {
  PlanSettings s;
  CHECK(s.stack == ServingStack::automatic);
  CHECK(resolved_stack(s) == ServingStack::tuned);
  s.measure.enabled = true;
  CHECK(resolved_stack(s) == ServingStack::tvie);
  s.measure.enabled = false;
  s.calibration = Calibration{};
  CHECK(resolved_stack(s) == ServingStack::tvie);
  s.stack = ServingStack::tuned;  // asked for: kept (validate refuses it with a calibration)
  CHECK(resolved_stack(s) == ServingStack::tuned);
  CHECK_THROWS_WITH(validate(s), Catch::Contains("tvie with --from or --measure"));
  CHECK(parse_serving_stack("auto") == ServingStack::automatic);
  CHECK(to_string(ServingStack::automatic) == "auto");
  // The plan's cards are planned on the resolved stack: the same figures as asked for by name.
  const auto w = make_zoo_workload("mlp", "tiny");
  const auto cards = select_accelerators(accelerator_catalog(), "t4");
  PlanSettings automatic, tuned;
  automatic.infer.dtype = tuned.infer.dtype = InferenceDtype::int8;
  tuned.stack = ServingStack::tuned;
  const auto a = plan_cards(*w, automatic, cards), t = plan_cards(*w, tuned, cards);
  REQUIRE(a[0].inference.supported);
  CHECK(a[0].inference.tuned.supported);
  CHECK(a[0].inference.samples_per_s.estimate == t[0].inference.samples_per_s.estimate);
}

TEST_CASE("the tuned stack: products in the dtype on the matrix units, normalisation and elementwise fused",
          "[projection][pure]") {
  const auto w = make_zoo_workload("gpt", "tiny");
  InferSettings i;
  i.batch_size = 4;
  i.dtype = InferenceDtype::int8;
  const StepWork traced = inference_batch_work(*w, i);
  const StepWork tuned = tuned_inference_work(traced, i, c10::kCPU);
  // tvie's int8 copy computes in fp32 around its int8 Linears on the CPU, in bf16 on CUDA: the tuned stack's
  // activations are a quarter, a half the bytes.
  const StepWork traced_cuda = inference_batch_work(*w, i, c10::kCUDA);
  const StepWork tuned_cuda = tuned_inference_work(traced_cuda, i, c10::kCUDA);
  for (const OpClass c : {OpClass::matmul, OpClass::attention}) {
    INFO(to_string(c));
    CHECK(tuned.forward[c].flops == traced.forward[c].flops);
    CHECK(tuned.forward[c].bytes == Approx(traced.forward[c].bytes / 4));
    CHECK(tuned_cuda.forward[c].bytes == Approx(traced_cuda.forward[c].bytes / 2));
    CHECK(tuned.forward[c].weight_elements == traced.forward[c].weight_elements);
    CHECK(tuned.forward[c].kernels == traced.forward[c].kernels);
  }
  for (const OpClass c : {OpClass::normalization, OpClass::elementwise}) {
    INFO(to_string(c));
    CHECK(traced.forward[c].bytes > 0);
    CHECK(tuned.forward[c].bytes == 0);
    CHECK(tuned.forward[c].flops == 0);
    CHECK(tuned.forward[c].kernels == 0);
  }
  CHECK(tuned.matmul_peak == "int8_tops");
  CHECK(tuned.convolution_peak == "int8_tops");
  CHECK(tuned.attention_peak == "int8_tops");
  CHECK(tuned.weight_element_bytes == 1);
  CHECK(tuned.precision == "int8 (tuned stack)");
  i.dtype = InferenceDtype::fp16;  // already 16-bit: the bytes as traced
  const StepWork half = tuned_inference_work(inference_batch_work(*w, i), i, c10::kCPU);
  CHECK(half.forward[OpClass::matmul].bytes == inference_batch_work(*w, i).forward[OpClass::matmul].bytes);
  CHECK(half.matmul_peak == "fp16_tflops");
  CHECK(half.weight_element_bytes == 2);
}

TEST_CASE("the tuned stack: int8-weight-only keeps bf16 activations, a generation's KV cache in the activations' dtype",
          "[projection]") {
  const auto w = make_zoo_workload("gpt", "tiny");
  InferSettings i;
  i.batch_size = 4;
  i.dtype = InferenceDtype::int8_weight_only;
  const StepWork traced = inference_batch_work(*w, i, c10::kCUDA);
  const StepWork tuned = tuned_inference_work(traced, i, c10::kCUDA);
  CHECK(tuned.forward[OpClass::matmul].bytes == traced.forward[OpClass::matmul].bytes);  // bf16 as traced
  CHECK(tuned.weight_element_bytes == 1);
  CHECK(tuned.matmul_peak == "bf16_tflops");
  CHECK(tuned_activation_bytes(InferenceDtype::int8) == 1);
  CHECK(tuned_activation_bytes(InferenceDtype::fp8) == 1);
  CHECK(tuned_activation_bytes(InferenceDtype::int8_weight_only) == 2);
  CHECK(tuned_activation_bytes(InferenceDtype::fp16) == 2);
  CHECK(tuned_activation_bytes(InferenceDtype::fp32) == 4);

  // Llama 3 8B generating: 80 prompt and 48 new tokens. The tuned stack holds the KV cache in one byte for fp8 and
  // int8, tvie's copy in bf16; the peak and the largest batch follow.
  const auto llama = make_zoo_workload("llama", "llama-3-8b");
  const LlamaConfig c = llama_preset("llama-3-8b");
  const auto cards = select_accelerators(accelerator_catalog(), "h100-sxm");
  for (const auto dtype : {InferenceDtype::fp8, InferenceDtype::int8, InferenceDtype::int8_weight_only}) {
    INFO(to_string(dtype));
    PlanSettings s;
    s.infer.dtype = dtype;
    s.new_tokens = 48;
    s.stack = ServingStack::tuned;
    const InferencePlan tuned_plan = plan_cards(*llama, s, cards).front().inference;
    s.stack = ServingStack::tvie;
    const InferencePlan tvie_plan = plan_cards(*llama, s, cards).front().inference;
    const int64_t kv_bytes = dtype == InferenceDtype::int8_weight_only ? 2 : 1;
    CHECK(tuned_plan.generation.kv_cache_bytes == llama_kv_cache_bytes(c, 1, 127, kv_bytes));
    CHECK(tvie_plan.generation.kv_cache_bytes == llama_kv_cache_bytes(c, 1, 127, 2));
    CHECK(tvie_plan.peak_bytes - tuned_plan.peak_bytes ==
          tvie_plan.generation.kv_cache_bytes - tuned_plan.generation.kv_cache_bytes);
    if (kv_bytes == 1) CHECK(tuned_plan.largest_batch > tvie_plan.largest_batch);
  }
}

TEST_CASE("the tuned stack's calibration: each anchored card's fraction of its int8 peak from MLPerf ResNet-50",
          "[projection]") {
  int anchored = 0;
  for (const auto& card : accelerator_catalog().cards) {
    INFO(card.id);
    const PublishedResult* anchor = card.published_result(kTunedAnchor);
    const PublishedResult* bert = card.published_result("mlperf-inference bert-99 offline");
    CHECK((bert == nullptr || anchor != nullptr));  // a validation row only where the calibration has an anchor
    const TunedCalibration t = tuned_calibration(card);
    if (anchor == nullptr) {
      CHECK_FALSE(t.supported);
      CHECK(t.unsupported == card.id +
                                 " has no mlperf-inference resnet50 offline result in the catalog to calibrate "
                                 "the tuned stack (--stack tvie: tvie's own kernels)");
      continue;
    }
    ++anchored;
    REQUIRE(t.supported);
    CHECK(t.anchor_samples_per_s == anchor->samples_per_s);
    CHECK(t.compute_efficiency > 0);
    CHECK(t.compute_efficiency <= 1);
    // Projected back at that fraction, the anchor is its published rate unless a class is bound by memory there.
    CHECK(t.projected_samples_per_s <= anchor->samples_per_s * (1 + 1e-9));
    CHECK(t.projected_samples_per_s >= anchor->samples_per_s / 1.5);
    CHECK(t.source.find(anchor->source) == 0);
    const Accelerator tuned = tuned_card(card, t);
    CHECK(tuned.efficiency.matmul == t.compute_efficiency);
    CHECK(tuned.efficiency.convolution == t.compute_efficiency);
    CHECK(tuned.efficiency.attention == t.compute_efficiency);
    CHECK(tuned.efficiency.memory == card.efficiency.memory);
    CHECK(tuned.efficiency.basis.at("convolution").find("calibrated on mlperf-inference resnet50 offline") !=
          std::string::npos);
  }
  CHECK(anchored == 10);
  CHECK_THROWS_AS(tuned_card(accelerator_catalog().cards.front(), TunedCalibration{}), InvalidArgument);
}

TEST_CASE("docs/plan.md's tuned-stack tables are what the committed plans give (no figure typed by hand)",
          "[projection]") {
  // The plans themselves are checked against tvie plan above (no stale figure); this checks the doc's table against
  // them and the catalog's published rows.
  const auto run = tvie::test::run_command("cd " + std::string(TVIE_SOURCE_DIR) +
                                           " && python3 scripts/plan-example.py --check-tables");
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("docs/plan.md: the tuned-stack table is current") != std::string::npos);
}

TEST_CASE("docs/training-cards-vs-inference-cards.md is what its committed plans give (no figure typed by hand)",
          "[projection]") {
  // Its plans (docs/results/plan-example/cards-*.json) are remade from their command lines by the worked example's
  // test above; this checks the page against them.
  const auto run =
      tvie::test::run_command("cd " + std::string(TVIE_SOURCE_DIR) + " && python3 scripts/cards-page.py --check");
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("docs/training-cards-vs-inference-cards.md is current") != std::string::npos);
}

TEST_CASE("plan --from a compare report with a generation calibrates the forward, the prefill and the decoding step",
          "[projection]") {
  const auto host = local_host_accelerator();
  if (!host) {
    TVIE_SKIP("this machine's CPU has no class in the catalog: no host card to calibrate");
  }
  const auto w = make_zoo_workload("gpt", "tiny");
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  s.new_tokens = 8;
  s.generation_repetitions = 2;
  const CompareReport r = run_compare(*w, s, {"cpu", {}});
  REQUIRE(r.generation);
  const Calibration c = calibration_from_report(to_json_string(r), "compare.json", *host);
  CHECK(c.training.measured_s == Approx(r.training.step.mean / 1000));
  CHECK(c.inference.measured_s == Approx(r.inference.latency.mean / 1000));
  CHECK(c.prefill.measured_s == Approx(r.generation->ttft_ms.mean / 1000));
  CHECK(c.decoding.measured_s == Approx(r.generation->tpot_ms.mean / 1000));
  CHECK(c.prefill.factor == Approx(c.prefill.measured_s / c.prefill.projected_s));
}

namespace {

// A card with round figures: 100 TFLOPS bf16, 50 fp32, 200 int8 TOPS, no fp16 peak, 1,000 GB/s.
Accelerator round_card() {
  Accelerator card;
  card.id = "round";
  card.name = "a round card";
  card.fp32_tflops = 50;
  card.bf16_tflops = 100;
  card.int8_tops = 200;
  card.memory_bandwidth_gbs = 1000;
  return card;
}

}  // namespace

TEST_CASE("fractions of the card: the peak of the run's dtype, and the weights read against the bandwidth",
          "[projection][pure]") {
  const std::optional<Accelerator> card = round_card();
  TrainSettings t;
  t.precision = TrainPrecision::amp_bf16;
  TrainingResult tr;
  tr.achieved_tflops = 25;
  auto f = training_fraction(card, "", t, tr);
  CHECK(f.card == "round");
  CHECK(f.peak_field == "bf16_tflops");
  CHECK(f.peak_tflops == 100);
  CHECK(f.peak_fraction == Approx(0.25));
  CHECK(f.bandwidth_fraction == -1);  // a training step's bytes are not counted
  CHECK(f.bytes_counted.empty());

  t.precision = TrainPrecision::amp_fp16;  // the card publishes no fp16 peak: no fraction
  f = training_fraction(card, "", t, tr);
  CHECK(f.peak_field == "fp16_tflops");
  CHECK(f.peak_tflops == -1);
  CHECK(f.peak_fraction == -1);

  InferenceResult ir;
  ir.dtype = InferenceDtype::int8;
  ir.achieved_tflops = 10;
  ir.memory.parameters = 3'000'000'000;
  ir.memory.packed_weights = 1'000'000'000;
  ir.latency.mean = 8;  // ms: 4 GB in 8 ms is 500 GB/s, half the card's
  f = inference_fraction(card, "", ir);
  CHECK(f.peak_field == "int8_tops");
  CHECK(f.peak_fraction == Approx(0.05));
  CHECK(f.bytes == 4e9);
  CHECK(f.bandwidth_fraction == Approx(0.5));

  f = inference_fraction(std::nullopt, "the catalog has no card that is X", ir);  // no card: no fractions, and why
  CHECK(f.card.empty());
  CHECK(f.why_none == "the catalog has no card that is X");
  CHECK(f.peak_fraction == -1);
  CHECK(f.bandwidth_fraction == -1);
  CHECK(f.model_tflops == 10);

  // A serving run: 200 requests of 1 GFLOP each in 0.5 s is 0.4 TFLOP/s of fp32's 50; 25 batches each read the
  // 100 MB of weights once: 2.5 GB in 0.5 s is 5 GB/s of the card's 1,000.
  ModelFacts facts;
  facts.forward_flops_per_sample = 1e9;
  ServeResult sr;
  sr.answered = 200;
  sr.duration_s = 0.5;
  sr.batches = 25;
  sr.weight_bytes = 100'000'000;
  f = serving_fraction(card, "", facts, InferenceDtype::fp32, sr);
  CHECK(f.peak_field == "fp32_tflops");
  CHECK(f.model_tflops == Approx(0.4));
  CHECK(f.peak_fraction == Approx(0.4 / 50));
  CHECK(f.bytes == 2.5e9);
  CHECK(f.bandwidth_fraction == Approx(0.005));
  CHECK(f.bytes_counted == "the weights, once per batch, over the run");
  sr.answered = 0;  // nothing answered: no duration, no fraction
  sr.duration_s = 0;
  CHECK(serving_fraction(card, "", facts, InferenceDtype::fp32, sr).peak_fraction == -1);
}

TEST_CASE("fractions of the card for a generation: the prefill's and a step's traced FLOPs, the cache attended to",
          "[projection]") {
  const std::optional<Accelerator> card = round_card();
  const auto w = make_zoo_workload("gpt", "tiny");
  DecodeSettings s = test::small_decode(2, 8, 6, 1);
  s.dtype = InferenceDtype::bf16;
  DecodeResult r;
  r.dtype = s.dtype;
  r.memory.weights = 1'000'000;
  r.memory.kv_cache = 130'000;  // 13 positions held (8 + 6 - 1): 10,000 bytes a position
  r.ttft_ms.mean = 2;
  r.tpot_ms.mean = 0.5;
  InferSettings i;
  i.batch_size = 2;
  i.dtype = s.dtype;
  const double prefill_flops = decoding_work(*w, i, 8, 0).model_flops;
  const auto p = prefill_fraction(card, "", *w, s, r);
  CHECK(p.peak_field == "bf16_tflops");
  CHECK(p.model_tflops == Approx(prefill_flops / 2e-3 / 1e12));
  CHECK(p.peak_fraction == Approx(prefill_flops / 2e-3 / 100e12));
  CHECK(p.bandwidth_fraction == Approx(1e6 / 2e-3 / 1e12));
  // The steps attend to 9 .. 13 positions: 11 on average (prompt + new / 2), its FLOPs those of a step with 10 cached.
  const double step_flops = decoding_work(*w, i, 1, 10).model_flops;
  const auto d = decoding_fraction(card, "", *w, s, r);
  CHECK(d.model_tflops == Approx(step_flops / 0.5e-3 / 1e12));
  CHECK(d.bytes == Approx(1'000'000 + 11 * 10'000));
  CHECK(d.bandwidth_fraction == Approx(1.11e6 / 0.5e-3 / 1e12));

  DecodeSettings wo = s;  // int8-weight-only computes in bf16: its fraction is of the bf16 peak
  wo.dtype = InferenceDtype::int8_weight_only;
  CHECK(decoding_fraction(card, "", *w, wo, r).peak_field == "bf16_tflops");
}

TEST_CASE("the peak a run's fraction is of is the peak its projection uses", "[projection]") {
  const auto w = make_zoo_workload("mlp", "tiny");
  for (auto precision :
       {TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::amp_fp16, TrainPrecision::bf16}) {
    for (bool tf32 : {false, true}) {
      TrainSettings t;
      t.precision = precision;
      t.tf32 = tf32 && precision == TrainPrecision::fp32;
      INFO(to_string(precision) << " tf32 " << t.tf32);
      CHECK(matmul_peak_field(t) == training_step_work(*w, t).matmul_peak);
    }
  }
  for (auto dtype : {InferenceDtype::fp32, InferenceDtype::fp16, InferenceDtype::bf16, InferenceDtype::int8,
                     InferenceDtype::fp8, InferenceDtype::int8_weight_only}) {
    InferSettings i;
    i.dtype = dtype;
    INFO(to_string(dtype));
    CHECK(matmul_peak_field(dtype) == inference_batch_work(*w, i).matmul_peak);
  }
}

TEST_CASE(
    "int8 traced for each card's device: a GPU's other layers in bf16 (a T4's fp16) at half the host's bytes, "
    "the host's in fp32",
    "[projection][pure]") {
  // The CPU's int8 copy keeps fp32 around its int8 Linear layers; CUDA's keeps bf16 (fp16 before sm_80).
  const auto w = make_zoo_workload("resnet", "tiny");
  InferSettings i;
  i.batch_size = 2;
  i.dtype = InferenceDtype::int8;
  const StepWork on_host = inference_batch_work(*w, i, c10::kCPU), on_gpu = inference_batch_work(*w, i, c10::kCUDA);
  CHECK(on_host.matmul_peak == "int8_tops");
  CHECK(on_host.convolution_peak == "fp32_tflops");
  CHECK(on_host.convolution_tf32);
  CHECK_FALSE(on_host.fp16_without_bf16);
  CHECK(on_gpu.matmul_peak == "int8_tops");
  CHECK(on_gpu.convolution_peak == "bf16_tflops");
  CHECK(on_gpu.attention_peak == "bf16_tflops");
  CHECK(on_gpu.fp16_without_bf16);
  // The convolutions' activations: bf16 on CUDA, half the CPU's fp32 bytes.
  CHECK(on_gpu.forward[OpClass::convolution].flops == on_host.forward[OpClass::convolution].flops);
  CHECK(on_gpu.forward[OpClass::convolution].bytes == Approx(on_host.forward[OpClass::convolution].bytes / 2));
  const Accelerator catalog_gpu = select_accelerators(accelerator_catalog(), "h100-sxm").front();
  CHECK(trace_device(catalog_gpu).is_cuda());
  Accelerator local = catalog_gpu;
  local.kind = "cpu";
  CHECK(trace_device(local).is_cpu());

  // Round figures: 1e12 convolution FLOPs and 1e9 bytes, 1e12 attention FLOPs, 1e9 elementwise bytes.
  StepWork work;  // as traced for CUDA
  work.precision = "int8";
  work.matmul_peak = "int8_tops";
  work.convolution_peak = work.attention_peak = "bf16_tflops";
  work.fp16_without_bf16 = true;
  work.forward[OpClass::convolution].flops = 1e12;
  work.forward[OpClass::convolution].bytes = 1e9;
  work.forward[OpClass::attention].flops = 1e12;
  work.forward[OpClass::elementwise].bytes = 1e9;
  Accelerator gpu;
  gpu.id = "gpu";
  gpu.kind = "gpu";
  gpu.fp32_tflops = 10, gpu.tf32_tflops = 20, gpu.fp16_tflops = 40, gpu.bf16_tflops = 50, gpu.int8_tops = 100;
  gpu.memory_bandwidth_gbs = 1000;
  gpu.efficiency.matmul = gpu.efficiency.convolution = gpu.efficiency.attention = gpu.efficiency.memory = 1;
  gpu.efficiency.kernel_overhead_us = 0;
  Accelerator turing = gpu;  // no bf16 units
  turing.bf16_tflops = -1;
  const auto conv_s = [&](const Accelerator& card) {
    const ProjectedTime t = project_time(work, card);
    REQUIRE(t.supported);
    return t.by_class[size_t(OpClass::convolution)].bound_s;
  };
  const auto class_s = [&](const Accelerator& card, OpClass c) {
    return project_time(work, card).by_class[size_t(c)].bound_s;
  };
  CHECK(conv_s(gpu) == Approx(1e12 / 50e12));
  CHECK(class_s(gpu, OpClass::attention) == Approx(1e12 / 50e12));
  CHECK(class_s(gpu, OpClass::elementwise) == Approx(1e9 / 1000e9));  // the bytes as traced
  CHECK(conv_s(turing) == Approx(1e12 / 40e12));
  CHECK(class_s(turing, OpClass::attention) == Approx(1e12 / 40e12));
  // Only CUDA's int8 copy picks fp16 there: a bf16 copy on a card without bf16 is not projected.
  StepWork bf16 = work;
  bf16.fp16_without_bf16 = false;
  bf16.precision = "bf16";
  CHECK(project_time(bf16, turing).unsupported == "gpu has no bf16_tflops peak in the catalog (convolution in bf16)");
  // A GPU without either 16-bit peak: the reason names the field the copy would need.
  Accelerator bare = turing;
  bare.fp16_tflops = -1;
  const ProjectedTime none = project_time(work, bare);
  CHECK_FALSE(none.supported);
  CHECK(none.unsupported == "gpu has no fp16_tflops peak in the catalog (convolution in int8)");
}
