// [gpu] tests: run where a CUDA device exists; skipped with the reason elsewhere (see main.cpp).
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace tvie;

TEST_CASE("CUDA ledger from the caching allocator's statistics", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto w = make_zoo_workload("mlp", "tiny");
  const int64_t weight_bytes = w->facts().parameter_count * 4;
  const int64_t tensors = static_cast<int64_t>(w->make_module()->parameters().size());
  const auto r = run_training(*w, test::small_train(OptimizerKind::adam), cuda);
  // The caching allocator rounds every block up to 512 bytes: at most 511 extra bytes per tensor.
  CHECK(r.memory.parameters >= weight_bytes);
  CHECK(r.memory.parameters < weight_bytes + 512 * tensors);
  CHECK(r.memory.gradients >= weight_bytes);
  CHECK(r.memory.gradients < weight_bytes + 512 * tensors);
  CHECK(r.memory.optimizer_state >= 2 * weight_bytes);
  CHECK(r.memory.optimizer_state < 2 * (weight_bytes + 512 * tensors));
  CHECK(r.memory.peak_reserved >= r.memory.peak);
  CHECK(r.memory_counter.find("caching allocator") != std::string::npos);
  const auto i = run_inference(*w, test::small_infer(), cuda);
  CHECK(i.memory.peak < r.memory.peak);
}

TEST_CASE("CUDA events time device work", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto timer = make_step_timer(cuda);
  CHECK(timer->description().find("cuda events") != std::string::npos);
  auto a = torch::randn({2048, 2048}, torch::TensorOptions().device(cuda));
  for (int i = 0; i < 3; ++i) {
    timer->start();
    auto b = torch::mm(a, a);
    timer->stop();
  }
  const auto ms = timer->collect_ms();
  REQUIRE(ms.size() == 3);
  for (double v : ms) CHECK(v > 0.0);
}

TEST_CASE("compare on CUDA with a bf16 inference copy", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  CompareSettings s;
  s.device = "cuda";
  s.train = test::small_train();
  s.infer = test::small_infer();
  s.infer.dtype = InferenceDtype::bf16;
  const auto r = run_compare(s);
  CHECK(r.context.device.rfind("cuda:0", 0) == 0);
  CHECK(r.training.timer.find("cuda events") != std::string::npos);
  CHECK(r.peak_memory_ratio > 1.0);
}

TEST_CASE("amp-fp16 training step with the loss scaler on CUDA", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto w = make_zoo_workload("gpt", "tiny");
  TrainSettings s = test::small_train();
  s.precision = TrainPrecision::amp_fp16;
  s.clip_grad_norm = 1.0;
  const auto r = run_training(*w, s, cuda);
  CHECK(r.loss_scaling);
  CHECK(r.initial_scale == 65536);
  // No growth within 2000 clean steps; every skipped step halved the scale.
  CHECK(r.final_scale == 65536.0 * std::pow(0.5, static_cast<double>(r.skipped_steps)));
  CHECK(r.skipped_steps < r.optimizer_steps);
  CHECK(std::isfinite(r.final_loss));
  CHECK(r.memory.loss_scaler > 0);
  CHECK(r.memory.weight_copies > 0);  // fp16 copies of the fp32 weights in autocast's cache
}

TEST_CASE("CUDA graph replay gives the loss of the eager step for the same inputs", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto w = make_zoo_workload("gpt", "tiny");
  for (auto optimizer : {OptimizerKind::sgd_momentum, OptimizerKind::adamw}) {
    INFO(to_string(optimizer));
    TrainSettings s = test::small_train(optimizer);
    s.steps = 6;
    s.data_batches = 4;
    const auto eager = run_training(*w, s, cuda);
    s.cuda_graph = true;
    const auto graphed = run_training(*w, s, cuda);
    CHECK(graphed.cuda_graph);
    REQUIRE(eager.loss_curve.size() == graphed.loss_curve.size());
    for (size_t i = 0; i < eager.loss_curve.size(); ++i)
      CHECK(graphed.loss_curve[i].second == Approx(eager.loss_curve[i].second).epsilon(1e-4));
  }
}

namespace {

InferSettings gpu_infer(int64_t batch, InferenceDtype dtype) {
  InferSettings s = test::small_infer();
  s.batch_size = batch;
  s.dtype = dtype;
  return s;
}

}  // namespace

TEST_CASE("CUDA inference in fp16, bf16, int8 (_int_mm) and fp8 (_scaled_mm) stays near fp32", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto w = make_zoo_workload("gpt", "tiny");
  InferenceSession ref_session(*w, gpu_infer(8, InferenceDtype::fp32), cuda);
  const auto ref = ref_session.run_batch().to(torch::kCPU, torch::kFloat32);
  std::vector<InferenceDtype> dtypes = {InferenceDtype::fp16, InferenceDtype::bf16, InferenceDtype::int8};
  if (nn::linear_weights_supported(nn::LinearWeights::fp8_e4m3, cuda)) dtypes.push_back(InferenceDtype::fp8);
  for (auto dtype : dtypes) {
    InferenceSession session(*w, gpu_infer(8, dtype), cuda);
    const auto a = compare_outputs(ref, session.run_batch());
    INFO(to_string(dtype) << ": max " << a.max_abs_error << " mean " << a.mean_abs_error << " ref "
                          << a.reference_mean_abs << " top1 " << a.top1_agreement);
    CHECK(a.mean_abs_error < 0.05 * a.reference_mean_abs);
    CHECK(a.top1_agreement >= 0.9);
  }
}

TEST_CASE("CUDA graph replay of the inference forward equals eager", "[gpu]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  auto w = make_zoo_workload("gpt", "tiny");
  InferenceSession session(*w, gpu_infer(4, InferenceDtype::fp32), cuda);
  const auto eager = session.run_batch().clone();
  session.capture_cuda_graph();
  const auto replayed = session.run_batch().clone();
  CHECK(torch::allclose(eager, replayed, 1e-5, 1e-5));
  auto s = gpu_infer(4, InferenceDtype::bf16);
  s.cuda_graph = true;
  const auto r = run_inference(*w, s, cuda);
  CHECK(r.cuda_graph);
  CHECK(r.timed_batches == s.steps);
}

TEST_CASE("NCCL backend with one rank: a data-parallel training step and the all-reduce sweep", "[gpu][dist]") {
  TVIE_REQUIRE_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  DistEnv env;
  env.master_port = 0;  // one rank: the store takes any free port
  DistSettings d;
  d.backend = DistBackend::nccl;
  d.timeout_s = 60;
  Communicator comm(env, d, cuda);
  CHECK(comm.backend_name() == "nccl");
  INFO("NCCL's own device memory: " << comm.backend_device_bytes() << " bytes");
  CHECK(comm.backend_device_bytes() >= 0);  // measured on CUDA (-1 means not measured)
  AllreduceSweepSettings s;
  s.max_bytes = 1 << 20;
  s.factor = 16;
  s.iters = 3;
  const auto sweep = run_allreduce_sweep(comm, s, cuda);
  CHECK(sweep.total_wrong == 0);
  CHECK(sweep.rows.size() == 6);
  auto w = make_zoo_workload("gpt", "tiny");
  auto t = test::small_train();
  const auto r = run_training(*w, t, cuda, nullptr, &comm, &d);
  CHECK(r.distributed.enabled);
  // Measured by the caching allocator around building the buckets: one fp32 slot per parameter, each
  // bucket rounded up to the allocator's 512-byte blocks.
  const int64_t fp32_bytes = 4 * w->facts().parameter_count;
  CHECK(r.distributed.bytes_per_step == fp32_bytes);
  CHECK(r.memory.comm_buffers >= fp32_bytes);
  CHECK(r.memory.comm_buffers < fp32_bytes + 512 * r.distributed.buckets);
}
