// Data parallelism over c10d Gloo on the CPU: 2 ranks on 127.0.0.1, as threads of this process (numerical
// tests) or as processes of build/bin/tvie (launch, faults, configuration mismatch).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "report_keys.hpp"
#include "tvie_test_paths.hpp"

namespace fs = std::filesystem;
using namespace tvie;

namespace {

DistEnv env_of(int64_t rank, int64_t world, int port) {
  DistEnv e;
  e.rank = rank;
  e.world_size = world;
  e.master_port = port;
  return e;
}

DistSettings gloo(bool overlap = false, double bucket_mb = 25) {
  DistSettings d;
  d.backend = DistBackend::gloo;
  d.overlap = overlap;
  d.bucket_mb = bucket_mb;
  d.timeout_s = 60;
  return d;
}

TrainSettings sgd_steps(int64_t batch) {
  TrainSettings t;
  t.batch_size = batch;
  t.optimizer = OptimizerKind::sgd;
  t.learning_rate = 0.1;
  t.lr_schedule = LrSchedule::constant;  // the references below step at the rate itself
  t.data_batches = 4;
  t.seed = 5;
  return t;
}

// How the ranks of train_ranks are set up beyond their batch: micro-batches per step, and whether each rank seeds
// its own initial weights (seed 5 + rank) instead of all seeding the same (5).
struct RankSetup {
  int64_t accumulate = 1;
  bool seed_per_rank = false;
};

// Runs `steps` data-parallel steps on `world` ranks (threads), after rank 0's weights are broadcast; returns each
// rank's parameters after (steps = 0: after the broadcast).
std::vector<std::vector<torch::Tensor>> train_ranks(const Workload& w, int64_t world, int64_t steps,
                                                    const DistSettings& d, int64_t batch_per_rank,
                                                    const RankSetup& setup = {}) {
  const c10::Device cpu(c10::kCPU);
  // Build the trainers one after another: construction seeds torch's global generator.
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int64_t r = 0; r < world; ++r) {
    auto t = sgd_steps(batch_per_rank);
    t.data_seed_offset = static_cast<uint64_t>(r) * 1000003ULL;
    t.accumulate = setup.accumulate;
    if (setup.seed_per_rank) t.seed += static_cast<uint64_t>(r);
    trainers.push_back(std::make_unique<Trainer>(w, t, cpu));
  }
  // Held bound until the ranks are done (tvie::ReservedPort): no other socket takes it before rank 0's store does.
  const ReservedPort reserved;
  const int port = reserved.port();
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        Communicator comm(env_of(r, world, port), d, cpu);
        DataParallel dp(comm, trainers[static_cast<size_t>(r)]->module_ptr(), d, cpu);
        dp.broadcast_initial_weights();
        trainers[static_cast<size_t>(r)]->set_gradient_hook(&dp);
        for (int64_t i = 0; i < steps; ++i) trainers[static_cast<size_t>(r)]->step();
        trainers[static_cast<size_t>(r)]->set_gradient_hook(nullptr);
        comm.barrier();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) REQUIRE(e.empty());
  std::vector<std::vector<torch::Tensor>> params;
  for (auto& t : trainers) {
    std::vector<torch::Tensor> p;
    for (const auto& x : t->module().parameters()) p.push_back(x.detach().clone());
    params.push_back(p);
  }
  return params;
}

struct Proc {
  pid_t pid = -1;
  fs::path log;
};

// build/bin/tvie with the torchrun environment of one rank; stdout and stderr into `log`.
Proc spawn_rank(int64_t rank, int64_t world, int port, const std::string& args, const fs::path& log) {
  std::vector<std::string> words{TVIE_CLI_PATH};
  std::stringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return {pid, log};
}

// Exit code, or -1 if it did not exit within `seconds` (it is then killed).
int wait_exit(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Two ranks of `tvie <args>`, returned once rank 0 has logged the end of its ledger steps: both ranks have
// then met at the rendezvous and taken part in all-reduces, and are in their training loops.
std::pair<Proc, Proc> start_two_ranks(const std::string& args, const fs::path& dir) {
  const ReservedPort reserved;  // held until rank 0's store is up (its ledger steps are past the rendezvous)
  const int port = reserved.port();
  auto a = spawn_rank(0, 2, port, args, dir / "r0.log");
  auto b = spawn_rank(1, 2, port, args, dir / "r1.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (tvie::test::read_text(a.log).find("timed steps follow") == std::string::npos) {
    INFO("rank 0 log so far:\n" << tvie::test::read_text(a.log));
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    int status = 0;
    REQUIRE(::waitpid(a.pid, &status, WNOHANG) == 0);  // rank 0 still runs
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {a, b};
}

}  // namespace

TEST_CASE("busbw = algbw x 2(n-1)/n, as nccl-tests define it", "[dist]") {
  CHECK(allreduce_bus_factor(1) == 0.0);
  CHECK(allreduce_bus_factor(2) == 1.0);
  CHECK(allreduce_bus_factor(4) == 1.5);
  CHECK(allreduce_bus_factor(8) == 1.75);
}

TEST_CASE("the environment a launcher sets is read and checked", "[dist]") {
  test::ScopedEnv env;
  env.set("WORLD_SIZE", "4");
  env.set("RANK", "3");
  env.set("MASTER_PORT", "29611");
  auto e = dist_env_from_environment();
  CHECK(e.world_size == 4);
  CHECK(e.rank == 3);
  CHECK(e.master_port == 29611);
  env.set("RANK", "4");
  try {
    dist_env_from_environment();
    FAIL("RANK 4 of 4 accepted");
  } catch (const InvalidArgument& x) {
    CHECK(x.field() == "env.RANK");
    CHECK_THAT(x.accepted(), Catch::Contains("0..3"));
  }
  env.set("RANK", "1");
  env.set("MASTER_PORT", "http");
  CHECK_THROWS_AS(dist_env_from_environment(), InvalidArgument);
  for (const char* v : {"WORLD_SIZE", "RANK", "MASTER_PORT"}) env.set(v, nullptr);
  CHECK(dist_env_from_environment().world_size == 1);
}

TEST_CASE("one data-parallel step equals a single-process step on both ranks' batches", "[dist]") {
  auto w = make_zoo_workload("mlp", "tiny");
  const auto ranks = train_ranks(*w, 2, 1, gloo(), 4);
  // Bit-identical on both ranks.
  REQUIRE(ranks[0].size() == ranks[1].size());
  for (size_t i = 0; i < ranks[0].size(); ++i) CHECK(torch::equal(ranks[0][i], ranks[1][i]));
  // The reference: the same initial weights, one SGD step on the concatenation of both ranks' batches
  // (the loss is a mean over samples, so the gradient is the mean of the ranks' gradients).
  const c10::Device cpu(c10::kCPU);
  auto t = sgd_steps(4);
  torch::manual_seed(static_cast<int64_t>(t.seed));
  auto module = w->make_module();
  const Batch b0 = w->make_batch(4, cpu, t.seed + 0);
  const Batch b1 = w->make_batch(4, cpu, t.seed + 1000003ULL);
  Batch both = b0;
  both.input = torch::cat({b0.input, b1.input});
  both.target = torch::cat({b0.target, b1.target});
  both.samples = 8;
  w->loss(w->forward(*module, both.input), both).backward();
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (auto& p : module->parameters()) {
    const auto expected = p.detach() - t.learning_rate * p.grad();
    const double rel = ((ranks[0][i] - expected).norm() / expected.norm()).item<double>();
    INFO("parameter " << i << " relative error " << rel);
    CHECK(rel <= 1e-5);
    ++i;
  }
}

TEST_CASE("ranks seeded differently start from rank 0's weights: the broadcast", "[dist]") {
  auto w = make_zoo_workload("mlp", "tiny");
  const auto own = [&](uint64_t seed) {
    torch::manual_seed(static_cast<int64_t>(seed));
    std::vector<torch::Tensor> p;
    for (const auto& x : w->make_module()->parameters()) p.push_back(x.detach().clone());
    return p;
  };
  const auto rank0 = own(5), rank1 = own(6);  // what each rank builds (seed 5 + rank)
  REQUIRE_FALSE(torch::equal(rank0[0], rank1[0]));
  const auto started = train_ranks(*w, 2, 0, gloo(), 4, {1, /*seed_per_rank=*/true});
  REQUIRE(started[1].size() == rank0.size());
  for (size_t i = 0; i < rank0.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::equal(started[0][i], rank0[i]));
    CHECK(torch::equal(started[1][i], rank0[i]));  // rank 1's own weights replaced by rank 0's
  }
}

TEST_CASE("data parallel with accumulation: 2 ranks x 2 micro-batches equal one step on all four", "[dist]") {
  auto w = make_zoo_workload("gpt", "tiny");
  const auto ranks = train_ranks(*w, 2, 1, gloo(), 4, {/*accumulate=*/2});
  const c10::Device cpu(c10::kCPU);
  auto t = sgd_steps(4);
  torch::manual_seed(static_cast<int64_t>(t.seed));
  auto module = w->make_module();
  const Batch b0 = w->make_batch(4, cpu, t.seed + 0);
  const Batch b1 = w->make_batch(4, cpu, t.seed + 1000003ULL);
  Batch both = b0;
  both.input = torch::cat({b0.input, b1.input});
  both.target = torch::cat({b0.target, b1.target});
  both.samples = 8;
  w->loss(w->forward(*module, both.input), both).backward();
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (auto& p : module->parameters()) {
    INFO("parameter " << i);
    CHECK(torch::equal(ranks[0][i], ranks[1][i]));
    const auto expected = p.detach() - t.learning_rate * p.grad();
    CHECK(((ranks[0][i] - expected).norm() / expected.norm()).item<double>() <= 1e-5);
    ++i;
  }
}

TEST_CASE("overlap on and off give the same parameters after several steps", "[dist]") {
  auto w = make_zoo_workload("gpt", "tiny");
  const auto plain = train_ranks(*w, 2, 3, gloo(false, 0.05), 2);  // small buckets: several of them
  const auto overlap = train_ranks(*w, 2, 3, gloo(true, 0.05), 2);
  REQUIRE(plain[0].size() == overlap[0].size());
  for (size_t i = 0; i < plain[0].size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::allclose(plain[0][i], overlap[0][i], 1e-6, 1e-7));
    CHECK(torch::equal(overlap[0][i], overlap[1][i]));
  }
}

TEST_CASE("the all-reduce sweep checks its sums and reports busbw as documented", "[dist]") {
  const ReservedPort reserved;
  const int port = reserved.port();
  const c10::Device cpu(c10::kCPU);
  std::vector<AllreduceSweepResult> results(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        Communicator comm(env_of(r, 2, port), gloo(), cpu);
        AllreduceSweepSettings s;
        s.min_bytes = 8;
        s.max_bytes = 1 << 16;
        s.factor = 4;
        s.iters = 3;
        s.warmup = 1;
        results[static_cast<size_t>(r)] = measure_allreduce_sweep(comm, s, cpu);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) REQUIRE(e.empty());
  const auto& r = results[0];
  REQUIRE(r.rows.size() == 7);  // 8, 32, ..., 65536 bytes
  CHECK(r.total_wrong == 0);
  for (const auto& x : r.rows) {
    CHECK(x.in_place_wrong == 0);
    CHECK(x.out_of_place_wrong == 0);
    CHECK(x.in_place_busbw_gbs == Approx(x.in_place_algbw_gbs * 2.0 * (2 - 1) / 2));
    CHECK(x.in_place_algbw_gbs == Approx(static_cast<double>(x.bytes) / (x.in_place_us * 1e-6) / 1e9));
  }
}

namespace {

// The trace's complete events on one track (pid) and row (tid), in file order.
std::vector<nlohmann::json> trace_events(const nlohmann::json& trace, int pid, int tid) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("pid") == pid && e.at("tid") == tid) out.push_back(e);
  return out;
}

// Each rank's track in a data-parallel trace: its steps' phases sum to the step times the JSON gives for that
// rank, the communication phase is there, every bucket of every step is on the second row with its bytes, and
// each bucket starts relative to the end of its step's backward as `starts_before_backward_end` says.
void check_rank_tracks(const nlohmann::json& trace, const nlohmann::json& distributed, int64_t steps, bool overlap) {
  const auto& ranks = distributed.at("ranks");
  REQUIRE(ranks.size() == 2);
  const auto bucket_bytes = distributed.at("bucket_bytes").get<std::vector<int64_t>>();
  CHECK(static_cast<int64_t>(bucket_bytes.size()) == distributed.at("buckets").get<int64_t>());
  int64_t sum = 0;
  for (auto b : bucket_bytes) sum += b;
  CHECK(sum == distributed.at("bytes_per_step").get<int64_t>());
  int buckets_before_backward_end = 0, buckets_after = 0;
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    CHECK(ranks[rank].at("rank") == rank);
    const auto step_ms = ranks[rank].at("step_ms").get<std::vector<double>>();
    REQUIRE(static_cast<int64_t>(step_ms.size()) == steps);
    const auto phases = trace_events(trace, rank, 0);
    REQUIRE(static_cast<int64_t>(phases.size()) == steps * 5);  // data, forward, backward, communication, optimizer
    const auto buckets = trace_events(trace, rank, 1);
    REQUIRE(buckets.size() == static_cast<size_t>(steps) * bucket_bytes.size());
    for (int64_t s = 0; s < steps; ++s) {
      double total = 0, backward_end = 0;
      for (int p = 0; p < 5; ++p) {
        const auto& e = phases[static_cast<size_t>(s * 5 + p)];
        total += e.at("dur").get<double>();
        if (e.at("name") == "backward") backward_end = e.at("ts").get<double>() + e.at("dur").get<double>();
      }
      CHECK(phases[static_cast<size_t>(s * 5 + 3)].at("name") == "communication");  // before the optimizer
      CHECK(total / 1e3 == Approx(step_ms[static_cast<size_t>(s)]).epsilon(1e-9));
      for (size_t b = 0; b < bucket_bytes.size(); ++b) {
        const auto& e = buckets[static_cast<size_t>(s) * bucket_bytes.size() + b];
        CHECK(e.at("args").at("bytes") == bucket_bytes[b]);
        CHECK(e.at("dur").get<double>() >= 0);
        (e.at("ts").get<double>() < backward_end ? buckets_before_backward_end : buckets_after) += 1;
      }
    }
  }
  if (overlap) {
    CHECK(buckets_before_backward_end > 0);  // launched from backward's hooks while it ran
  } else {
    CHECK(buckets_before_backward_end == 0);  // all launched after backward
  }
}

}  // namespace

TEST_CASE("tvie launch runs 2 ranks of tvie train: identical parameters, communication figures", "[dist]") {
  test::TempDir dir("tvie-dist");
  const auto json = dir.path / "train.json";
  const auto trace = dir.path / "train.trace.json";
  const auto params = dir.path / "params.pt";
  const auto run = test::run_cli(
      "launch --nproc 2 -- tvie train --model gpt --preset tiny --batch 4 --steps 3 "
      "--warmup 1 --quiet --json " +
      json.string() + " --trace " + trace.string() + " --save-parameters " + params.string());
  const std::string& out = run.out;
  INFO(out);
  REQUIRE(run.exit_code == 0);
  CHECK(out.find("distributed: gloo, 2 ranks") != std::string::npos);
  CHECK(out.find("parameters identical on every rank after the run: yes") != std::string::npos);
  // The claim above checked here from each rank's own parameters, as each rank wrote them: bit for bit equal, and
  // moved by training from the initial weights (the same seed on both ranks builds them).
  std::vector<torch::Tensor> rank0, rank1;
  torch::load(rank0, params.string() + ".rank0");
  torch::load(rank1, params.string() + ".rank1");
  CHECK_FALSE(fs::exists(params));  // with data parallelism, only the per-rank files
  torch::manual_seed(0);
  const auto initial = make_zoo_workload("gpt", "tiny")->make_module()->parameters();
  REQUIRE(rank0.size() == initial.size());
  REQUIRE(rank1.size() == rank0.size());
  int64_t moved = 0;
  for (size_t i = 0; i < rank0.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::equal(rank0[i], rank1[i]));
    moved += torch::equal(rank0[i], initial[i]) ? 0 : 1;
  }
  CHECK(moved == static_cast<int64_t>(rank0.size()));
  const auto j = nlohmann::json::parse(std::ifstream(json));
  test::check_documented(j, "train");  // the distributed keys included
  const auto& d = j.at("training").at("distributed");
  CHECK(d.at("world_size") == 2);
  CHECK(d.at("parameters_identical") == true);
  CHECK(d.at("comm_ms").at("count") == 3);
  CHECK(d.at("bytes_per_step").get<int64_t>() == 4 * j.at("model").at("parameters").get<int64_t>());
  CHECK(d.at("busbw_gbs").get<double>() == Approx(d.at("algbw_gbs").get<double>()));  // n = 2: factor 1
  // Measured by the counting allocator around building the buckets: one fp32 slot per parameter.
  CHECK(j.at("training").at("memory").at("comm_buffers").get<int64_t>() ==
        4 * j.at("model").at("parameters").get<int64_t>());
  // The trace: one track per rank, the buckets after backward (no overlap).
  check_rank_tracks(nlohmann::json::parse(std::ifstream(trace)), d, 3, /*overlap=*/false);
}

TEST_CASE("with --overlap the trace shows buckets all-reduced while backward runs, one track per rank", "[dist]") {
  test::TempDir dir("tvie-dist");
  const auto json = dir.path / "train.json", trace = dir.path / "train.trace.json";
  const auto run = test::run_cli(
      "launch --nproc 2 -- tvie train --model gpt --preset tiny --batch 4 --steps 2 --warmup 1 --overlap "
      "--bucket-mb 0.05 --quiet --json " +
      json.string() + " --trace " + trace.string());
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  const auto j = nlohmann::json::parse(std::ifstream(json));
  const auto& d = j.at("training").at("distributed");
  CHECK(d.at("overlap") == true);
  CHECK(d.at("buckets").get<int64_t>() > 1);
  check_rank_tracks(nlohmann::json::parse(std::ifstream(trace)), d, 2, /*overlap=*/true);
}

TEST_CASE("ranks started with different settings fail at start, naming the setting", "[dist]") {
  test::TempDir dir("tvie-dist");
  const ReservedPort reserved;
  const int port = reserved.port();
  const auto a = spawn_rank(0, 2, port, "train --model mlp --batch 8 --steps 1 --timeout-s 30", dir.path / "r0.log");
  const auto b = spawn_rank(1, 2, port, "train --model mlp --batch 4 --steps 1 --timeout-s 30", dir.path / "r1.log");
  const int ca = wait_exit(a.pid, 60), cb = wait_exit(b.pid, 60);
  const std::string la = tvie::test::read_text(a.log), lb = tvie::test::read_text(b.log);
  INFO("rank 0:\n" << la << "\nrank 1:\n" << lb);
  CHECK(ca == 2);
  CHECK(cb == 2);
  for (const auto& log : {la, lb}) CHECK(log.find("batch is 8 on rank 0 but 4 on rank 1") != std::string::npos);
}

TEST_CASE("killing one rank makes the other stop within the timeout, naming the lost rank", "[dist]") {
  test::TempDir dir("tvie-dist");
  const auto [a, b] =
      start_two_ranks("train --model mlp --preset tiny --batch 4 --steps 1000000 --warmup 0 --timeout-s 20", dir.path);
  ::kill(b.pid, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  const int ca = wait_exit(a.pid, 40);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  wait_exit(b.pid, 5);
  const std::string la = tvie::test::read_text(a.log);
  INFO("rank 0 (exit " << ca << ", " << took << " s after the kill):\n" << la);
  CHECK(ca != 0);
  CHECK(ca != -1);     // it did stop by itself...
  CHECK(took < 25.0);  // ...within the 20 s timeout (plus start-up slack)
  CHECK(la.find("rank 1 (pid " + std::to_string(b.pid) + ")") != std::string::npos);
}

TEST_CASE("a hung rank makes the other stop after the collective timeout", "[dist]") {
  test::TempDir dir("tvie-dist");
  const auto [a, b] =
      start_two_ranks("train --model mlp --preset tiny --batch 4 --steps 1000000 --warmup 0 --timeout-s 8", dir.path);
  ::kill(b.pid, SIGSTOP);  // alive, but no longer taking part
  const auto stopped_at = std::chrono::steady_clock::now();
  const int ca = wait_exit(a.pid, 40);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  ::kill(b.pid, SIGKILL);
  wait_exit(b.pid, 5);
  const std::string la = tvie::test::read_text(a.log);
  INFO("rank 0 (exit " << ca << ", " << took << " s after the stop):\n" << la);
  CHECK(ca != 0);
  CHECK(ca != -1);
  CHECK(took >= 7.0);  // it waited for the timeout...
  CHECK(took < 20.0);  // ...and not much longer
  CHECK(la.find("all-reduce failed on rank 0") != std::string::npos);
  CHECK(la.find("may hang") != std::string::npos);
}
