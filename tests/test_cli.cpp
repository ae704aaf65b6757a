// build/bin/tvie end to end: bad input gets one line naming the option, exit code 2 and no file.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "tvie_test_paths.hpp"

namespace fs = std::filesystem;

namespace {

struct Run {
  int exit_code;
  std::string out;  // stdout and stderr together
};

Run run_cli(const std::string& args) {
  const std::string command = std::string(TVIE_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// One bad-input case: exit code 2, a single line that contains every `needles`, and no JSON file.
void expect_usage_error(const std::string& args, const std::vector<std::string>& needles) {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "out.json";
  const Run r = run_cli("compare --steps 1 --warmup 0 --json " + json.string() + " " + args);
  INFO("tvie compare " << args << "\n" << r.out);
  CHECK(r.exit_code == 2);
  CHECK(line_count(r.out) == 1);
  for (const auto& needle : needles) CHECK(r.out.find(needle) != std::string::npos);
  CHECK_FALSE(fs::exists(json));
  CHECK(fs::is_empty(dir.path));
}

}  // namespace

TEST_CASE("cli: unknown model or preset", "[cli]") {
  expect_usage_error("--model resnet", {"--model", "'resnet'", "accepted: mlp, cnn, gpt"});
  expect_usage_error("--model gpt --preset huge", {"--preset", "'huge'", "tiny, small, gpt2-small"});
}

TEST_CASE("cli: batch and steps must be positive", "[cli]") {
  expect_usage_error("--batch 0", {"--batch", "'0'", "an integer >= 1"});
  expect_usage_error("--batch -4", {"--batch", "'-4'", "an integer >= 1"});
  expect_usage_error("--steps 0", {"--steps", "'0'", "an integer >= 1"});
  expect_usage_error("--batch many", {"--batch"});
  expect_usage_error("--batch 8 --accumulate 3", {"--accumulate", "'3'", "divisor"});
}

TEST_CASE("cli: unknown dtype, optimizer or device", "[cli]") {
  expect_usage_error("--infer-dtype int4", {"--infer-dtype", "'int4'", "fp32, fp16, bf16"});
  expect_usage_error("--optimizer lion", {"--optimizer", "'lion'", "adamw"});
  expect_usage_error("--device tpu", {"--device", "'tpu'", "auto, cpu, cuda, cuda:N"});
  if (!tvie::cuda_available()) {
    expect_usage_error("--device cuda", {"--device", "'cuda'", "no CUDA device"});
    expect_usage_error("--device cuda:1", {"--device", "'cuda:1'", "no CUDA device"});
  }
}

TEST_CASE("cli: an unwritable --json path is refused before anything runs", "[cli]") {
  const Run r = run_cli("compare --model mlp --steps 1 --json /nonexistent-dir/out.json");
  INFO(r.out);
  CHECK(r.exit_code == 2);
  CHECK(line_count(r.out) == 1);
  CHECK(r.out.find("--json") != std::string::npos);
  CHECK(r.out.find("training") == std::string::npos);  // nothing ran
  CHECK_FALSE(fs::exists("/nonexistent-dir/out.json"));
}

TEST_CASE("cli: help lists every option with its default", "[cli]") {
  const Run top = run_cli("--help");
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("compare") != std::string::npos);
  const Run r = run_cli("compare --help");
  CHECK(r.exit_code == 0);
  for (const auto* needle :
       {"--model", "gpt", "--preset", "tiny", "--batch", "--steps", "--warmup", "--optimizer", "adamw", "--device",
        "auto", "--infer-dtype", "fp32", "--json", "--accumulate", "--verbose", "--quiet"}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
}

TEST_CASE("cli: compare prints the table and writes the JSON report", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "report.json";
  const Run r =
      run_cli("compare --model mlp --batch 4 --steps 2 --warmup 1 --device cpu --quiet --json " + json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("tvie compare: mlp/tiny on cpu") != std::string::npos);
  CHECK(r.out.find("gap: training peak / inference peak") != std::string::npos);
  REQUIRE(fs::exists(json));
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["training"]["timed_steps"].get<int>() == 2);
  CHECK(j["training"]["warmup_steps"].get<int>() == 1);
  CHECK(j["context"]["argv"].size() == 15);  // argv[0] and the 14 words after it
}

TEST_CASE("cli: compare runs an int8 inference copy of the trained weights", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "report.json";
  const Run r = run_cli(
      "compare --model mlp --preset small --batch 4 --steps 1 --warmup 0 --device cpu --quiet "
      "--infer-dtype int8 --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("int8 copy of the trained weights") != std::string::npos);
  CHECK(r.out.find("packed by fbgemm") != std::string::npos);
  const auto j = nlohmann::json::parse(std::ifstream(json));
  CHECK(j["inference"]["memory"]["packed_weights"].get<int64_t>() > 0);
  // int8 Linear weights: the training copy (fp32) holds about four times the inference weights.
  CHECK(j["gap"]["parameter_memory_ratio"].get<double>() > 3.0);
}

TEST_CASE("cli: train prints the loss curve, phases, clipping and the ledger, and writes JSON", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "train.json";
  const Run r = run_cli(
      "train --model gpt --preset tiny --precision amp-bf16 --checkpoint blocks --accumulate 4 "
      "--clip 1.0 --steps 3 --warmup 1 --device cpu --quiet --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle : {"tvie train: gpt/tiny on cpu", "amp-bf16", "checkpoint blocks (2 blocks", "weight_copies",
                             "phases of the timed training steps", "backward",
                             "loss:  1:", "clipping: max global norm 1", "4 micro-batches of 2"}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  REQUIRE(fs::exists(json));
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["training"]["settings"]["precision"] == "amp-bf16");
  CHECK(j["training"]["checkpointed_blocks"] == 2);
  CHECK(j["training"]["phases"]["backward"]["p50_ms"].is_number());
  CHECK(j["training"]["loss"]["curve"].size() >= 2);
  CHECK(j["training"]["clipping"]["clipped_steps"].is_number());
  CHECK(j["training"]["micro_batches"] == 4 * j["training"]["optimizer_steps"].get<int>());
  CHECK_FALSE(j.contains("inference"));
}

TEST_CASE("cli: training options are checked before anything runs", "[cli]") {
  expect_usage_error("--precision fp8", {"--precision", "'fp8'", "fp32, amp-bf16, amp-fp16, bf16"});
  expect_usage_error("--device cpu --precision amp-fp16", {"--precision", "'amp-fp16'", "needs a CUDA device"});
  expect_usage_error("--checkpoint sometimes", {"--checkpoint", "'sometimes'", "none, blocks, every-K"});
  expect_usage_error("--model mlp --checkpoint blocks", {"--checkpoint", "'blocks'", "no blocks to checkpoint"});
  expect_usage_error("--device cpu --cuda-graph", {"--cuda-graph", "CUDA graphs need a CUDA device"});
  expect_usage_error("--clip -1", {"--clip", "'-1'", ">= 0"});
  // The same options on `tvie train`.
  tvie::test::TempDir dir("tvie-cli");
  const Run r = run_cli("train --steps 1 --checkpoint every-0 --json " + (dir.path / "x.json").string());
  CHECK(r.exit_code == 2);
  CHECK(line_count(r.out) == 1);
  CHECK(r.out.find("tvie train: error: --checkpoint") != std::string::npos);
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("cli: serve prints the percentile table with the queue/compute split and writes JSON", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "serve.json";
  const Run r = run_cli(
      "serve --model gpt --preset tiny --scenario server --qps 400 --max-batch 16 "
      "--max-queue-delay-us 2000 --queries 60 --min-queries 50 --min-duration-ms 0 --device cpu "
      "--quiet --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle : {"tvie serve: gpt/tiny on cpu", "Poisson arrivals at 400 QPS", "p99.9", "queue", "compute",
                             "60 answered", "valid"}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["serving"]["answered"] == 60);
  CHECK(j["serving"]["latency_ms"]["p99_9"].is_number());
  CHECK(j["serving"]["valid"] == true);
}

TEST_CASE("cli: infer sweeps batch and precision with accuracy columns and writes JSON", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "infer.json";
  const Run r = run_cli(
      "infer --model mlp --preset tiny --device cpu --batch 1,2,...,8 --dtype fp32,int8,bf16 "
      "--steps 2 --warmup 0 --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const char* needle : {"tvie infer: mlp/tiny", "max|err|", "top-1", "int8", "bf16", "ref"})
    CHECK(r.out.find(needle) != std::string::npos);
  REQUIRE(fs::exists(json));
  const auto j = nlohmann::json::parse(std::ifstream(json));
  const auto& sweep = j.at("inference_sweep");
  CHECK(sweep.at("settings").at("batch_sizes") == nlohmann::json({1, 2, 4, 8}));
  REQUIRE(sweep.at("rows").size() == 12);
  for (const auto& row : sweep.at("rows")) {
    CHECK(row.at("fits") == true);
    CHECK(row.contains("accuracy_vs_fp32") == (row.at("dtype") != "fp32"));
    CHECK(row.at("result").at("memory").at("peak").get<int64_t>() > 0);
  }
}

TEST_CASE("cli: infer reports 'does not fit' under an emulated memory limit and goes on", "[cli]") {
  const Run r = run_cli(
      "infer --model gpt --preset tiny --device cpu --batch 1,4096,2 --steps 1 --warmup 0 "
      "--cpu-memory-limit-mb 8");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("4096   fp32  does not fit") != std::string::npos);
  CHECK(r.out.find("\n2      fp32") != std::string::npos);  // the row after it ran
}

TEST_CASE("cli: launch gives every rank the torchrun environment and stops the rest when one fails", "[cli]") {
  const Run ok = run_cli(
      "launch --nproc 2 -- sh -c 'echo rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK threads=$OMP_NUM_THREADS "
      "addr=$MASTER_ADDR port=${MASTER_PORT:+set}'");
  INFO(ok.out);
  CHECK(ok.exit_code == 0);
  for (const char* line :
       {"rank=0/2 local=0 threads=1 addr=127.0.0.1 port=set", "rank=1/2 local=1 threads=1 addr=127.0.0.1 port=set"})
    CHECK(ok.out.find(line) != std::string::npos);
  ::setenv("OMP_NUM_THREADS", "3", 1);  // a user's choice is kept
  const Run mine = run_cli("launch --nproc 2 -- sh -c 'echo threads=$OMP_NUM_THREADS'");
  ::unsetenv("OMP_NUM_THREADS");
  CHECK(mine.out.find("threads=1") == std::string::npos);
  CHECK(mine.out.find("threads=3") != std::string::npos);
  // Rank 1 fails at once; rank 0 would sleep a minute: it is terminated after the grace period.
  const Run failed =
      run_cli("launch --nproc 2 --grace-s 1 -- sh -c 'if [ $RANK = 1 ]; then exit 3; fi; exec sleep 60'");
  INFO(failed.out);
  CHECK(failed.exit_code == 3);
  CHECK(failed.out.find("rank 1 (pid ") != std::string::npos);
  CHECK(failed.out.find("exited with code 3; the other ranks get 1 s to stop") != std::string::npos);
  CHECK(failed.out.find("rank 0 (pid ") != std::string::npos);
  CHECK(failed.out.find("still runs; sending SIGTERM") != std::string::npos);
}

TEST_CASE("cli: info names the distributed backends this build has", "[cli]") {
  const Run r = run_cli("info");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(std::string("distributed_backends: gloo ") + (TVIE_WITH_GLOO ? "yes" : "no")) != std::string::npos);
  CHECK(r.out.find(std::string(", nccl ") + (TVIE_WITH_NCCL ? "yes" : "no")) != std::string::npos);
}

TEST_CASE("cli: serve refuses bad settings with one line", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const std::string json = " --json " + (dir.path / "x.json").string();
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"serve --scenario burst", "--scenario: got 'burst'; accepted: single-stream, server, offline"},
           {"serve --qps 0", "--qps: got '0'"},
           {"serve --max-batch 0", "--max-batch: got '0'"},
           {"serve --model resnet", "--model: got 'resnet'"},
           {"serve --device cpu --dtype fp16", "--dtype"},
           {"serve --device cpu --dtype fp8", "--dtype: got 'fp8'"},
           {"serve --scenario offline --find-max-qps", "--scenario: got 'offline'; accepted: server"},
           {"serve --find-max-qps --p99-ms 0", "--p99-ms: got '0'"},
           {"infer --batch 0", "--batch: got '0'"},
           {"infer --batch 1,2,...", "--batch: got '1,2,...'"},
           {"infer --dtype fp32,int4", "--dtype: got 'int4'"},
           {"infer --device cpu --dtype fp8", "--dtype: got 'fp8'"},
           {"infer --device cpu --cuda-graph", "--cuda-graph"},
           {"infer --cpu-memory-limit-mb -1", "--cpu-memory-limit-mb: got '-1'"},
           {"infer --torchscript /nonexistent.pt --input-shape 4", "--torchscript: got '/nonexistent.pt'"},
           {"infer --model gpt --preset huge", "--preset: got 'huge'"}}) {
    const Run r = run_cli(args + json);
    INFO(args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("cli: decode prints TTFT, TPOT and the KV-cache bytes; bad lengths get one line", "[cli]") {
  const Run r =
      run_cli("decode --preset tiny --batch 2 --prompt 8 --new-tokens 4 --repetitions 2 --device cpu --quiet");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle :
       {"time to first token", "time per output token", "tokens/s", "kv_cache 22.0 KiB measured, 22.0 KiB predicted"}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  const Run bad = run_cli("decode --prompt 30 --new-tokens 10 --device cpu");
  CHECK(bad.exit_code == 2);
  CHECK(line_count(bad.out) == 1);
  CHECK(bad.out.find("--new-tokens: got '10'") != std::string::npos);
}
