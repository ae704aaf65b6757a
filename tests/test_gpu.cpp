// [gpu] tests: run where a CUDA device exists; skipped with the reason elsewhere (see main.cpp), and failed
// instead under TVIE_REQUIRE_GPU=1 (scripts/gpu-check.sh).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "tvie_test_paths.hpp"

using namespace tvie;

namespace {

const c10::Device kCuda(c10::kCUDA, 0);

InferSettings gpu_infer(int64_t batch, InferenceDtype dtype) {
  InferSettings s = test::small_infer();
  s.batch_size = batch;
  s.dtype = dtype;
  return s;
}

// Accuracy tolerances against fp32 on the same inputs, per dtype: mean absolute error as a share of the
// outputs' mean magnitude, and top-1 agreement. fp8 (e4m3, 3 mantissa bits, per-tensor scales): an
// emulation on gpt tiny gave a mean relative error of 0.048-0.051 over 6 seeds, so its bound is twice that;
// the others are far from theirs (docs/metrics.md, "Inference precisions and accuracy").
struct Tolerance {
  double mean_relative_error, top1;
};
Tolerance tolerance(InferenceDtype d) {
  switch (d) {
    case InferenceDtype::fp16:
      return {0.01, 0.95};
    case InferenceDtype::bf16:
      return {0.03, 0.90};
    case InferenceDtype::int8:
    case InferenceDtype::int8_weight_only:
      return {0.05, 0.90};
    case InferenceDtype::fp8:
      return {0.10, 0.80};
    case InferenceDtype::fp32:
      break;
  }
  return {0, 1};
}

std::vector<InferenceDtype> cuda_dtypes() {
  std::vector<InferenceDtype> d = {InferenceDtype::fp32, InferenceDtype::fp16, InferenceDtype::bf16,
                                   InferenceDtype::int8};
  if (nn::linear_weights_supported(nn::LinearWeights::fp8_e4m3, kCuda)) d.push_back(InferenceDtype::fp8);
  if (nn::linear_weights_supported(nn::LinearWeights::int8_weight_only, kCuda))
    d.push_back(InferenceDtype::int8_weight_only);
  return d;
}

using test::Run;
using test::run_cli;

std::vector<torch::Tensor> params_of(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("CUDA ledger from the caching allocator's statistics", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("mlp", "tiny");
  const int64_t weight_bytes = w->facts().parameter_count * 4;
  // Requested bytes: exact, as on the CPU. The warm-up forward and backward before the baseline keeps
  // backward's cuBLAS workspace out of the gradients and optimizer state.
  const auto sgd = measure_training(*w, test::small_train(OptimizerKind::sgd), kCuda);
  CHECK(sgd.memory.parameters == weight_bytes);
  CHECK(sgd.memory.gradients == weight_bytes);
  CHECK(sgd.memory.optimizer_state == 0);
  const auto r = measure_training(*w, test::small_train(OptimizerKind::adam), kCuda);
  CHECK(r.memory.parameters == weight_bytes);
  CHECK(r.memory.gradients == weight_bytes);
  CHECK(r.memory.optimizer_state == 2 * weight_bytes);
  // Reserved less the tensors alive at the run's start: never below the allocated peak, also for a run
  // that reuses free space in segments which the first run's leftovers keep.
  CHECK(r.memory.peak_reserved >= r.memory.peak);
  CHECK(sgd.memory.peak_reserved >= sgd.memory.peak);
  CHECK(r.memory_counter.find("caching allocator") != std::string::npos);
  const auto i = measure_inference(*w, test::small_infer(), kCuda);
  CHECK(i.memory.parameters == weight_bytes);
  CHECK(i.memory.peak < r.memory.peak);
}

TEST_CASE("CUDA memory timeline from the caching allocator's trace: phases, peak = the ledger's peak", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  const auto r = measure_training(*w, test::small_train(OptimizerKind::adamw), kCuda);
  const auto& t = r.memory_timeline;
  REQUIRE_FALSE(t.empty());
  std::vector<std::string> names;
  for (const auto& p : t.phases) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"data", "forward", "backward", "optimizer"});
  // Requested bytes, as the ledger's: the step starts and ends with weights and moments, and its highest point
  // is the ledger's peak.
  CHECK(t.start_bytes == r.memory.parameters + r.memory.optimizer_state);
  CHECK(t.end_bytes == t.start_bytes);
  CHECK(t.peak_bytes == r.memory.peak);
  CHECK(t.counter.find("trace callbacks") != std::string::npos);
  const auto i = measure_inference(*w, test::small_infer(), kCuda);
  CHECK(i.memory_timeline.peak_bytes == i.memory.peak);
}

TEST_CASE("a fresh process whose first CUDA work is inference, decoding or NCCL runs", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  for (const std::string args :
       {"infer --model gpt --preset tiny --batch 2 --dtype fp32 --steps 1 --warmup 0 --device cuda --quiet",
        "decode --preset tiny --batch 1 --prompt 4 --new-tokens 4 --repetitions 1 --device cuda --quiet",
        "allreduce --device cuda --min-bytes 8 --max-bytes 1024 --factor 8 --iters 2 --warmup 1"}) {
    const Run r = run_cli(args);
    INFO("tvie " << args << "\n" << r.out);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("CUDA events time device work", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto timer = make_step_timer(kCuda);
  CHECK(timer->description().find("cuda events") != std::string::npos);
  auto a = torch::randn({4096, 4096}, torch::TensorOptions().device(kCuda));
  torch::mm(a, a);
  synchronize(kCuda);
  // A synchronised chain of large matmuls: the event time is the device time, the host clock around the
  // same chain (synchronised at both ends) includes it.
  const auto t0 = std::chrono::steady_clock::now();
  timer->start();
  for (int i = 0; i < 20; ++i) a = torch::mm(a, a) / 4096.0;
  timer->stop();
  synchronize(kCuda);
  const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto ms = timer->collect_ms();
  REQUIRE(ms.size() == 1);
  INFO("events " << ms[0] << " ms, host " << host_ms << " ms");
  CHECK(ms[0] > 0.0);
  CHECK(ms[0] <= host_ms);
  CHECK(ms[0] >= 0.5 * host_ms);  // 20 matmuls of 4096^3 dominate the launches
}

TEST_CASE("compare on CUDA with a bf16 inference copy, and phases that add up", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  s.infer.dtype = InferenceDtype::bf16;
  const auto r = run_compare(*make_zoo_workload("gpt", "tiny"), s, {"cuda"});
  CHECK(r.context.device.rfind("cuda:0", 0) == 0);
  REQUIRE(r.context.gpu.has_value());
  CHECK_FALSE(r.context.gpu->name.empty());
  CHECK(r.training.timer.find("cuda events") != std::string::npos);
  CHECK(r.peak_memory_ratio > 1.0);
  REQUIRE(r.training.phases.size() == 4);
  double share = 0;
  for (const auto& p : r.training.phases) share += p.share;
  CHECK(share == Approx(1.0));
}

TEST_CASE("amp-fp16 training step with the loss scaler on CUDA", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings s = test::small_train();
  s.precision = TrainPrecision::amp_fp16;
  s.clip_grad_norm = 1.0;
  const auto r = measure_training(*w, s, kCuda);
  CHECK(r.loss_scaling);
  CHECK(r.initial_scale == 65536);
  // No growth within 2000 clean steps; every skipped step halved the scale.
  CHECK(r.final_scale == 65536.0 * std::pow(0.5, static_cast<double>(r.skipped_steps)));
  CHECK(r.skipped_steps < r.optimizer_steps);
  CHECK(std::isfinite(r.final_loss));
  CHECK(r.memory.loss_scaler == 12);  // scale, growth tracker, found_inf
  // The C++ frontend's linear casts W^T, a view autocast's cache does not keep: each fp16 weight copy is
  // saved for backward (an activation), and the cast cache holds none; the trace predicts just that.
  CHECK(r.memory.weight_copies == r.predicted.weight_copies);
  CHECK(r.memory.activations == r.predicted.activations);
}

TEST_CASE("loss scaler on CUDA: an injected inf skips the step and halves the scale, and growth after the interval",
          "[gpu]") {
  TVIE_REQUIRE_CUDA();
  torch::manual_seed(0);
  torch::nn::Linear lin(16, 8);
  lin->to(kCuda);
  torch::optim::SGD sgd(lin->parameters(), torch::optim::SGDOptions(0.1));
  LossScalerOptions o;
  o.initial_scale = 1024;
  o.growth_interval = 2;
  LossScaler scaler(o, kCuda);
  const auto x = torch::randn({4, 16}, torch::TensorOptions().device(kCuda));
  auto backward_once = [&] {
    sgd.zero_grad(true);
    scaler.scale(lin->forward(x).pow(2).mean()).backward();
  };
  sgd.zero_grad(true);
  lin->forward(x).pow(2).mean().backward();
  const auto fp32_grad = lin->weight.grad().clone();
  backward_once();
  scaler.unscale_(sgd);
  CHECK(torch::allclose(lin->weight.grad(), fp32_grad, 1e-5, 1e-6));  // unscaled grads ~ the fp32 ones
  CHECK(scaler.step(sgd));
  scaler.update();
  backward_once();
  lin->bias.mutable_grad()[0] = std::numeric_limits<float>::infinity();  // before unscaling
  const auto before = params_of(*lin);
  CHECK_FALSE(scaler.step(sgd));
  scaler.update();
  const auto after = params_of(*lin);
  for (size_t i = 0; i < before.size(); ++i) CHECK(torch::equal(before[i], after[i]));
  CHECK(scaler.current_scale() == 512);
  for (int i = 0; i < 2; ++i) {
    backward_once();
    CHECK(scaler.step(sgd));
    scaler.update();
  }
  CHECK(scaler.current_scale() == 1024);
}

TEST_CASE("CUDA graph replay gives the loss of the eager step for the same inputs", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  for (auto optimizer : {OptimizerKind::sgd_momentum, OptimizerKind::adamw}) {
    INFO(to_string(optimizer));
    TrainSettings s = test::small_train(optimizer);
    s.steps = 6;
    s.data_batches = 4;
    const auto eager = measure_training(*w, s, kCuda);
    s.cuda_graph = true;
    const auto graphed = measure_training(*w, s, kCuda);
    CHECK(graphed.cuda_graph);
    REQUIRE(eager.loss_curve.size() == graphed.loss_curve.size());
    for (size_t i = 0; i < eager.loss_curve.size(); ++i)
      CHECK(graphed.loss_curve[i].second == Approx(eager.loss_curve[i].second).epsilon(1e-4));
  }
  // amp-bf16 with 2 micro-batches: the same losses, and the weights move after a replay.
  TrainSettings s = test::small_train(OptimizerKind::sgd_momentum);
  s.precision = TrainPrecision::amp_bf16;
  s.accumulate = 2;
  s.steps = 4;
  s.data_batches = 4;
  std::shared_ptr<torch::nn::Module> eager_model, graph_model;
  const auto eager = measure_training(*w, s, kCuda, &eager_model);
  s.cuda_graph = true;
  const auto graphed = measure_training(*w, s, kCuda, &graph_model);
  REQUIRE(eager.loss_curve.size() == graphed.loss_curve.size());
  for (size_t i = 0; i < eager.loss_curve.size(); ++i)
    CHECK(graphed.loss_curve[i].second == Approx(eager.loss_curve[i].second).epsilon(1e-3));
  torch::manual_seed(0);
  const auto initial = params_of(*w->make_module());
  const auto trained = params_of(*graph_model);
  CHECK_FALSE(torch::equal(initial[0], trained[0].to(torch::kCPU)));
}

TEST_CASE("checkpointing under amp-bf16 on CUDA: same loss, fewer saved activations", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings s = test::small_train(OptimizerKind::sgd);
  s.precision = TrainPrecision::amp_bf16;
  s.batch_size = 8;
  const auto plain = measure_training(*w, s, kCuda);
  s.checkpoint_every = 1;
  const auto ckpt = measure_training(*w, s, kCuda);
  CHECK(ckpt.first_loss == Approx(plain.first_loss).epsilon(1e-3));
  CHECK(ckpt.memory.activations < plain.memory.activations);
  CHECK(ckpt.memory.activations == ckpt.predicted.activations);
}

TEST_CASE("predicted training ledger on CUDA: weights exact, activations to the byte, peak", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  // The CPU matrix (test_predict.cpp) on CUDA: the trace with its CUDA rules (ActivationQuery::cuda: the
  // attention kernels' RNG seed and offset, fp32 attention's padded log-sum-exp, host-side RNG states).
  for (const std::string model : {"mlp", "cnn", "gpt", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    const bool conv = model == "cnn";
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16, TrainPrecision::bf16}) {
      for (int64_t checkpoint : {0, 1}) {
        if (checkpoint > 0 && w->block_count() == 0) continue;
        TrainSettings s = test::small_train(OptimizerKind::adamw);
        s.batch_size = 8;
        s.precision = precision;
        s.checkpoint_every = checkpoint;
        INFO(model << " " << to_string(precision) << " checkpoint " << checkpoint);
        const auto p = predict_training_memory(*w, s, false, kCuda);
        const auto m = test::measure_ledger(*w, s, kCuda);
        CHECK(p.parameters == m.parameters);
        CHECK(p.gradients == m.gradients);
        CHECK(p.optimizer_state == m.optimizer_state);
        CHECK(p.weight_copies == m.weight_copies);
        if (conv) {  // cuDNN's convolution and batch-norm kernels save what oneDNN's do not, within 10%
          CHECK(std::abs(p.activations - m.activations) <= m.activations / 10);
        } else {
          CHECK(p.activations == m.activations);
        }
        CHECK(std::abs(p.peak - m.peak) <= m.peak * (conv ? 35 : 15) / 100);
      }
    }
  }
}

TEST_CASE("the fused loss on CUDA: what it saves to the byte, the standard loss's values", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  // test_predict.cpp's fused-loss case on CUDA: the saved gradient in the logits' dtype is autograd's, so the trace
  // counts it as the caching allocator does.
  for (const std::string model : {"mlp", "gpt", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto precision : {TrainPrecision::fp32, TrainPrecision::amp_bf16}) {
      INFO(model << " " << to_string(precision));
      TrainSettings s = test::small_train(OptimizerKind::adamw);
      s.batch_size = 8;
      s.precision = precision;
      const auto standard = predict_training_memory(*w, s, false, kCuda);
      const auto standard_measured = test::measure_ledger(*w, s, kCuda);
      s.fused_loss = true;
      const auto fused = predict_training_memory(*w, s, false, kCuda);
      const auto fused_measured = test::measure_ledger(*w, s, kCuda);
      CHECK(fused.activations == fused_measured.activations);
      CHECK(standard.activations - fused.activations == standard_measured.activations - fused_measured.activations);
      CHECK(std::abs(fused.peak - fused_measured.peak) <= fused_measured.peak * 15 / 100);
    }
  }
}

TEST_CASE("CUDA inference in every dtype stays within its tolerance of fp32", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  InferenceSession ref_session(*w, gpu_infer(8, InferenceDtype::fp32), kCuda);
  const auto ref = ref_session.run_batch().to(torch::kCPU, torch::kFloat32);
  for (auto dtype : cuda_dtypes()) {
    if (dtype == InferenceDtype::fp32) continue;
    InferenceSession session(*w, gpu_infer(8, dtype), kCuda);
    const auto a = compare_outputs(ref, session.run_batch());
    const auto tol = tolerance(dtype);
    INFO(to_string(dtype) << ": max " << a.max_abs_error << " mean " << a.mean_abs_error << " ref "
                          << a.reference_mean_abs << " top1 " << a.top1_agreement);
    CHECK(a.mean_abs_error < tol.mean_relative_error * a.reference_mean_abs);
    CHECK(a.top1_agreement >= tol.top1);
  }
}

TEST_CASE("CUDA inference sweep: batches 1, 3, 17 in every dtype, eager and graphed", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  for (bool graph : {false, true}) {
    InferSweepSettings s;
    s.batch_sizes = {1, 3, 17};
    s.dtypes = cuda_dtypes();
    s.steps = 2;
    s.warmup_steps = 1;
    s.cuda_graph = graph;
    const auto r = measure_inference_sweep(*w, s, kCuda);
    REQUIRE(r.rows.size() == s.batch_sizes.size() * s.dtypes.size());
    for (const auto& row : r.rows) {
      INFO("graph " << graph << " batch " << row.batch_size << " " << to_string(row.dtype) << ": " << row.does_not_fit);
      REQUIRE(row.fits);
      CHECK(row.result.cuda_graph == graph);
      if (row.has_accuracy) {
        CHECK(row.accuracy.mean_abs_error < tolerance(row.dtype).mean_relative_error * row.accuracy.reference_mean_abs);
      }
    }
  }
}

TEST_CASE("CUDA int8 keeps Linear layers dense whose shape _int_mm cannot take", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("mlp", "tiny");  // a 10-class head: not a multiple of 8
  const auto r = measure_inference(*w, gpu_infer(4, InferenceDtype::int8), kCuda);
  CHECK(r.linears_kept_dense >= 1);
  CHECK(r.linears_converted >= 1);
}

TEST_CASE("CUDA int8, fp8 and int8-weight-only inference predicted: weights, working set and peak to the byte",
          "[gpu]") {
  TVIE_REQUIRE_CUDA();
  // Where the Linear layers decide the working set (the mlp; the transformers at few positions): the quantisation's
  // temporaries (tvie::nn::Linear's forward, traced op by op in ForwardTrace::quantised_linear), the rows padded
  // for _int_mm (at least 17) and _scaled_mm (a multiple of 16), and the layers kept dense. The H200's gpt2-small
  // rows are reproduced on the CPU too (test_predict.cpp).
  for (const std::string model : {"mlp", "gpt", "bert", "llama"}) {
    const auto w = make_zoo_workload(model, "tiny");
    for (auto dtype : cuda_dtypes()) {
      if (nn::linear_weights_for(dtype, kCuda) == nn::LinearWeights::dense) continue;
      for (int64_t batch : {1, 4, 20}) {
        INFO(model << " tiny, " << to_string(dtype) << ", batch " << batch);
        const auto s = gpu_infer(batch, dtype);
        const auto a = w->estimate_activations(activation_query(s, kCuda));
        const auto r = measure_inference(*w, s, kCuda);
        CHECK(a.quantised_linears == r.linears_converted);
        CHECK(a.dense_linears == r.linears_kept_dense);
        CHECK(r.predicted.parameters == r.memory.parameters);
        CHECK(r.predicted.packed_weights == 0);
        CHECK(r.predicted.activations == r.memory.activations);
        CHECK(r.predicted.peak == r.memory.peak);
      }
    }
  }
}

TEST_CASE("CUDA graph replay of the inference forward equals eager", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  InferenceSession session(*w, gpu_infer(4, InferenceDtype::fp32), kCuda);
  const auto eager = session.run_batch().clone();
  session.capture_cuda_graph();
  const auto replayed = session.run_batch().clone();
  CHECK(torch::allclose(eager, replayed, 1e-5, 1e-5));
  auto s = gpu_infer(4, InferenceDtype::bf16);
  s.cuda_graph = true;
  const auto r = measure_inference(*w, s, kCuda);
  CHECK(r.cuda_graph);
  CHECK(r.timed_batches == s.steps);
}

TEST_CASE("KV-cached decoding on CUDA in fp32, int8, int8-weight-only and fp8: the cache is the predicted bytes",
          "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const auto config = gpt_preset("tiny");
  DecodeSettings s = test::small_decode(1, 8, 8, 2);
  for (auto dtype : cuda_dtypes()) {
    if (dtype == InferenceDtype::fp16 || dtype == InferenceDtype::bf16) continue;
    INFO(to_string(dtype));
    s.dtype = dtype;
    const auto r = measure_decoding(config, s, kCuda);
    CHECK(r.memory.kv_cache == r.predicted.kv_cache);
    CHECK(r.tpot_ms.count == 2 * 7);
  }
}

TEST_CASE("decoding steps from a CUDA graph: the fixed-shape step's logits, the cache as predicted", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  for (const char* model : {"gpt", "llama"}) {
    INFO(model);
    const auto w = make_zoo_workload(model, "tiny");
    // The step the graph captures, run eagerly on CUDA beside the steps that follow the position.
    torch::manual_seed(0);
    auto module = w->make_module();
    module->to(kCuda);
    module->eval();
    const auto tokens = w->make_batch(2, kCuda, 3).input;  // [2, S]
    {
      c10::InferenceMode inference;
      const auto plain = make_kv_decoder(*w, module, 2, 12), fixed = make_kv_decoder(*w, module, 2, 12);
      dynamic_cast<CachedDecoder&>(*fixed).fix_step_shapes();
      auto a = plain->prefill(tokens.narrow(1, 0, 4)), b = fixed->prefill(tokens.narrow(1, 0, 4));
      for (int64_t t = 4; t < 12; ++t) {
        a = plain->step(tokens.select(1, t));
        b = fixed->step(tokens.select(1, t));
        CHECK((a - b).abs().max().item<double>() <= 1e-4);
      }
    }
    // The run: every decoding step replayed from the graph.
    DecodeSettings s = test::small_decode(4, 8, 8, 2);
    s.cuda_graph = true;
    const auto r = measure_decoding(*w, s, kCuda);
    CHECK(r.cuda_graph);
    CHECK(r.memory.kv_cache == r.predicted.kv_cache);
    CHECK(r.tpot_ms.count == 2 * 7);
    CHECK(r.tokens_per_s > 0);
  }
}

TEST_CASE("serving on CUDA answers every request", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  ServeSettings s;
  s.target_qps = 500;
  s.query_count = 100;
  s.min_query_count = 100;
  s.min_duration_ms = 0;
  s.max_batch = 8;
  const auto r = measure_serving(*w, s, kCuda);
  CHECK(r.answered == 100);
  CHECK(r.valid);
}

TEST_CASE("NCCL backend with one rank: a data-parallel training step and the all-reduce sweep", "[gpu][dist]") {
  TVIE_REQUIRE_CUDA();
  DistEnv env;
  env.master_port = 0;  // one rank: the store takes any free port
  DistSettings d;
  d.backend = DistBackend::nccl;
  d.timeout_s = 60;
  Communicator comm(env, d, kCuda);
  CHECK(comm.backend_name() == "nccl");
  INFO("NCCL's own device memory: " << comm.backend_device_bytes() << " bytes");
  CHECK(comm.backend_device_bytes() >= 0);  // measured on CUDA (-1 means not measured)
  AllreduceSweepSettings s;
  s.max_bytes = 1 << 20;
  s.factor = 16;
  s.iters = 3;
  const auto sweep = measure_allreduce_sweep(comm, s, kCuda);
  CHECK(sweep.total_wrong == 0);
  int64_t sizes = 0;
  for (int64_t b = s.min_bytes; b <= s.max_bytes; b *= 16) ++sizes;  // 8, 128, 2048, 32768, 524288
  CHECK(static_cast<int64_t>(sweep.rows.size()) == sizes);

  auto w = make_zoo_workload("gpt", "tiny");
  auto t = test::small_train();
  t.steps = 4;
  // The data-parallel runner, as one rank of a one-rank job (its own store on a free port).
  const TrainReport report = run_train_data_parallel(*w, t, d, {"cuda"});
  REQUIRE(report.distributed.has_value());
  const auto& r = report.training;
  const auto& dist = *report.distributed;
  // Measured around building the buckets (requested bytes): one fp32 slot per parameter.
  const int64_t fp32_bytes = 4 * w->facts().parameter_count;
  CHECK(dist.bytes_per_step == fp32_bytes);
  CHECK(r.memory.comm_buffers == fp32_bytes);
  // In-loop communication time comes from CUDA events on NCCL's stream, within the step. (Whether it is
  // device time rather than host queueing time cannot be told with one rank: its all-reduce of these 463 KiB
  // takes 10-30 us either way. On the H200, in-loop p50 12.3 us against 27.1 us for the same all-reduce
  // timed alone in one run, and above half of it in another: docs/results/gpu-h200/tests.txt.)
  CHECK(dist.comm_ms.min > 0);
  CHECK(dist.comm_ms.p50 < r.step.p50);
  // The trace's buckets from CUDA events: one rank, every timed step, each bucket after backward (no overlap),
  // lasting its device time, one after another on NCCL's stream; their sum is the step's comm time.
  REQUIRE(dist.ranks.size() == 1);
  REQUIRE(dist.ranks[0].buckets.size() == static_cast<size_t>(t.steps));
  for (size_t s = 0; s < dist.ranks[0].buckets.size(); ++s) {
    const auto& spans = dist.ranks[0].buckets[s];
    REQUIRE(static_cast<int64_t>(spans.size()) == dist.buckets);
    double sum = 0, end = 0;
    for (const auto& span : spans) {
      CHECK(span.start_ms >= 0);
      CHECK(span.start_ms >= end);
      CHECK(span.ms > 0);
      sum += span.ms;
      end = span.start_ms + span.ms;
    }
    CHECK(sum > 0);
  }
}

TEST_CASE("NVML energy over the timed steps on CUDA: joules, watts within the board's range", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "small");
  TrainSettings s = test::small_train(OptimizerKind::adamw);
  s.steps = 40;  // NVML's counter updates every 20-100 ms: enough steps to span several updates
  const auto r = measure_training(*w, s, kCuda);
  INFO(r.energy.source);
  REQUIRE(r.energy.available());
  CHECK(r.energy.source.rfind("NVML", 0) == 0);
  CHECK(r.energy.joules > 0);
  CHECK(r.energy.mean_watts() > 20);    // an H100-class board idles above 20 W
  CHECK(r.energy.mean_watts() < 1500);  // and no catalog card draws more
  CHECK(r.joules_per_sample == Approx(r.energy.joules / (s.steps * s.batch_size)));
}

TEST_CASE("tvie plan --measure on this GPU calibrates the cards of its architecture", "[gpu][projection]") {
  TVIE_REQUIRE_CUDA();
  const auto gpu = describe_gpu(kCuda).value_or(GpuInfo{});
  const Accelerator* card = catalog_card_of_device(gpu.name, static_cast<double>(gpu.memory_bytes));
  if (card == nullptr) {
    TVIE_SKIP("this GPU (" << gpu.name << ") is not a catalog card: nothing to calibrate");
  }
  test::TempDir dir("tvie-gpu-plan");
  const auto json = (dir.path / "plan.json").string();
  const Run r = run_cli(
      "plan --model gpt --preset small --batch 8 --precision amp-bf16 --infer-dtype bf16 --measure "
      "--new-tokens 8 --prompt-tokens 16 --steps 5 --warmup 2 --device cuda --cards " +
      card->id + " --no-host --quiet --json " + json);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const auto& c = j["settings"]["calibration"];
  CHECK(c["card"] == card->id);
  CHECK(c["architecture"] == card->architecture);
  // The measured step is not faster than the roofline bound of the same work on this card.
  CHECK(c["training_bound_s"].get<double>() <= c["training_measured_s"].get<double>());
  CHECK(j["cards"][0]["training_calibration"].get<double>() == Approx(c["training_factor"].get<double>()));
  // The phases (CUDA events per phase on the current stream) calibrate training one by one; each phase's device
  // time is not faster than its own roofline bound either.
  CHECK(j["cards"][0]["training_calibration_by_phase"] == true);
  for (const std::string phase : {"forward", "backward", "optimizer"}) {
    INFO(phase);
    CHECK(c["training_" + phase + "_factor"].get<double>() > 0);
    CHECK(c["training_" + phase + "_bound_s"].get<double>() <= c["training_" + phase + "_measured_s"].get<double>());
  }
  // One more step profiled (CUPTI): the forward and backward calibrated class by class, from kernel times.
  CHECK(j["cards"][0]["training_calibration_by_class"] == true);
  CHECK(c["training_forward_matmul_factor"].get<double>() > 0);
  CHECK(c["training_backward_matmul_factor"].get<double>() > 0);
  CHECK(j["cards"][0]["decoding_calibration_by_class"] == true);  // one more generation profiled too
  // The generation asked, measured on this GPU (as tvie decode): its decoding step calibrates the card too.
  CHECK(c["decoding_bound_s"].get<double>() <= c["decoding_measured_s"].get<double>());
  CHECK(c["prefill_bound_s"].get<double>() <= c["prefill_measured_s"].get<double>());
  CHECK(j["cards"][0]["decoding_calibration"].get<double>() == Approx(c["decoding_factor"].get<double>()));
}

TEST_CASE("time by class on CUDA: each kernel's device time to the class of the operator that launched it",
          "[gpu][training]") {
  TVIE_REQUIRE_CUDA();
  auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings s = test::small_train();
  s.precision = TrainPrecision::amp_bf16;
  s.profile_classes = true;
  const TrainingResult r = measure_training(*w, s, kCuda);
  const auto& t = r.time_by_class;
  INFO(t.unavailable);
  REQUIRE(t.measured());
  CHECK(t.method.find("CUPTI") != std::string::npos);
  for (OpClass c : {OpClass::matmul, OpClass::attention, OpClass::normalization, OpClass::elementwise}) {
    INFO(to_string(c));
    CHECK(t.forward[c] > 0);
    CHECK(t.backward[c] > 0);
  }
  CHECK(t.forward[OpClass::convolution] == 0);
  // Kernels linked to no operator (NCCL's, none here; the profiler's own) stay few next to the step's.
  CHECK(t.unlinked_kernel_ms < 0.1 * (t.forward.classes_ms() + t.backward.classes_ms()));
}
