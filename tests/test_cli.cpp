// build/bin/tvie end to end: bad input gets one line naming the option, exit code 2 and no file.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>
#include <torch/script.h>

#include "helpers.hpp"
#include "report_keys.hpp"
#include "tvie_test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using tvie::test::Run;
using tvie::test::run_cli;

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
  expect_usage_error("--model vgg", {"--model", "'vgg'", "accepted: mlp, cnn, gpt, resnet, bert, llama"});
  expect_usage_error("--model mlp --seq 16", {"--seq", "'16'", "accepted: 0 for mlp"});
  expect_usage_error("--model gpt --preset huge", {"--preset", "'huge'", "tiny, small, gpt2-small"});
  expect_usage_error("--model cnn --pad-vocab 64", {"--pad-vocab", "'64'", "accepted: 0 for cnn"});
  expect_usage_error("--model gpt --pad-vocab many", {"--pad-vocab"});
  expect_usage_error("--slice-layers 1,2 --pad-vocab 64", {"--pad-vocab", "0 with --slice-layers"});
  expect_usage_error("--model gpt --pad-vocab 9000", {"--pad-vocab", "'9000'", "an integer 1 .. 4096"});
}

TEST_CASE("cli: batch and steps must be positive", "[cli]") {
  expect_usage_error("--batch 0", {"--batch", "'0'", "an integer >= 1"});
  expect_usage_error("--batch -4", {"--batch", "'-4'", "an integer >= 1"});
  expect_usage_error("--steps 0", {"--steps", "'0'", "an integer >= 1"});
  expect_usage_error("--batch many", {"--batch"});
  expect_usage_error("--batch 8 --accumulate 3", {"--accumulate", "'3'", "divisor"});
  expect_usage_error("--optimizer sgd --fused-optimizer", {"--fused-optimizer", "off with sgd"});
  expect_usage_error("--device cpu --tf32", {"--tf32", "off on cpu"});
  expect_usage_error("--device cpu --precision amp-bf16 --tf32", {"--tf32", "off with amp-bf16"});
}

TEST_CASE("cli: --find-max-batch needs an emulated device on the CPU, and accumulation off", "[cli][max_batch]") {
  expect_usage_error("--device cpu --find-max-batch", {"--cpu-memory-limit-mb", "'0'", "emulated device"});
  expect_usage_error("--device cpu --find-max-batch --cpu-memory-limit-mb 8 --max-batch-up-to 0",
                     {"--max-batch-up-to", "'0'", ">= start_batch"});
  expect_usage_error("--device cpu --find-max-batch --cpu-memory-limit-mb 8 --batch 8 --accumulate 2",
                     {"--accumulate", "'2'", "1 with --find-max-batch"});
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

TEST_CASE("cli: under ONEDNN_MAX_CPU_ISA the reports, the bf16 default and the host's class follow the limit",
          "[cli]") {
  // An AVX2 machine emulated (oneDNN runs no ISA above AVX2): what oneDNN may use decides; the CPU's own features
  // are still reported. On an AVX2 machine the limit takes nothing away and the same figures hold.
  tvie::test::TempDir dir("tvie-cli");
  const fs::path json = dir.path / "report.json";
  const Run r = tvie::test::run_command("ONEDNN_MAX_CPU_ISA=AVX2 " + std::string(TVIE_CLI_PATH) +
                                        " compare --model mlp --batch 4 --steps 1 --warmup 0 --device cpu --json " +
                                        json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto host = tvie::describe_host();
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["context"]["onednn_isa_limit"] == "AVX2");
  CHECK(j["context"]["cpu_features"] == host.cpu_features);
  const auto usable = tvie::cpu_features_under_onednn_limit(host.cpu_features, "AVX2");
  CHECK(j["context"]["cpu_features_usable"] == usable);
  CHECK(j["inference"]["settings"]["dtype"] == "fp32");  // auto: no bf16 units oneDNN may use
  CHECK(r.out.find("ONEDNN_MAX_CPU_ISA=AVX2: oneDNN uses") != std::string::npos);
  // The reason names what took bf16 away: the limit where the CPU has bf16 units, the CPU itself where it has none
  // (an AVX-512 CPU without avx512_bf16 loses avx512f under the limit, but had no bf16 units to lose).
  const auto has = [&](const char* f) {
    return std::find(host.cpu_features.begin(), host.cpu_features.end(), f) != host.cpu_features.end();
  };
  if (has("avx512_bf16") || has("amx_bf16"))
    CHECK(r.out.find("this CPU has bf16 units, but oneDNN may not use them") != std::string::npos);
  else
    CHECK(r.out.find("this CPU has no bf16 units") != std::string::npos);
  if (std::find(usable.begin(), usable.end(), "avx2") != usable.end()) {
    const Run cards = tvie::test::run_command("ONEDNN_MAX_CPU_ISA=AVX2 " + std::string(TVIE_CLI_PATH) + " cards");
    INFO(cards.out);
    CHECK(cards.out.find("class cpu-avx2.") != std::string::npos);
  }
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
  const auto j = nlohmann::json::parse(std::ifstream(json));
  CHECK(j["inference"]["memory"]["packed_weights_measured"].get<bool>() == tvie::heap_statistics_available());
  if (tvie::test::packs_measurable()) {  // the packs are measured through glibc's heap statistics
    CHECK(r.out.find("packed by fbgemm") != std::string::npos);
    CHECK(j["inference"]["memory"]["packed_weights"].get<int64_t>() > 0);
  } else {
    CHECK(r.out.find("packed by fbgemm outside torch's allocator: not measured here") != std::string::npos);
  }
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
  // Against the card, from the run's own figures: 60 requests' forward FLOPs over the run; the fp32 copy's
  // weights (4 bytes a parameter, and the buffers) read once per batch of 1 to 16 requests.
  const auto& x = j["serving"];
  const auto& f = x["of_card"];
  const double seconds = x["duration_s"].get<double>();
  const double weights = 4.0 * j["model"]["parameters"].get<double>() + j["model"]["buffer_bytes"].get<double>();
  const auto batches = x["batches"].get<int64_t>();
  CHECK(batches >= 4);
  CHECK(batches <= 60);
  CHECK(x["weight_bytes"].get<double>() == weights);
  CHECK(f["peak_field"] == "fp32_tflops");
  CHECK(f["model_tflops"].get<double>() ==
        Approx(60 * j["model"]["forward_flops_per_sample"].get<double>() / seconds / 1e12));
  CHECK(f["bytes"].get<double>() == weights * static_cast<double>(batches));
  if (tvie::local_host_accelerator()) {
    CHECK(f["bandwidth_fraction"].get<double>() ==
          Approx(f["bytes"].get<double>() / seconds / (f["bandwidth_gbs"].get<double>() * 1e9)));
    CHECK(r.out.find("of the card over the run: ") != std::string::npos);
  } else {
    CHECK(r.out.find("of the card: none (") != std::string::npos);
  }
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
  std::optional<tvie::test::ScopedEnv> env(std::in_place);
  env->set("OMP_NUM_THREADS", "3");  // a user's choice is kept
  const Run mine = run_cli("launch --nproc 2 -- sh -c 'echo threads=$OMP_NUM_THREADS'");
  env.reset();
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
           {"serve --model vgg", "--model: got 'vgg'"},
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
           {"infer --model gpt --preset huge", "--preset: got 'huge'"},
           {"infer --model gpt --slice-layers 1,2 --batch 1,2", "--batch: got '1,2'"},
           {"infer --model gpt --slice-layers 1,2 --batch 1 --dtype fp32,bf16", "--dtype: got 'fp32,bf16'"},
           {"cards --cards t4,k80", "--cards: got 'k80'; accepted: all, or ids separated by commas"},
           {"plan --model gpt --cards t4,k80", "--cards: got 'k80'; accepted: all, or ids separated by commas"},
           {"plan --model gpt --serve-qps 100", "--p99-ms: got '0 (none)'; accepted: a p99 bound > 0 in ms"},
           {"plan --model gpt --train-tokens 100 --train-samples 5", "--train-samples: got '5'"},
           {"plan --model gpt --usable-memory 1.5", "--usable-memory: got '1.5'; accepted: a fraction in (0, 1]"},
           {"plan --model gpt --infer-dtype int4", "--infer-dtype: got 'int4'"},
           {"plan --model gpt --batch 0", "--batch: got '0'"},
           {"plan --model mlp --new-tokens 8", "model: got 'mlp"},
           {"plan --model gpt --preset tiny --new-tokens 8 --prompt-tokens 30",
            "--prompt-tokens: got '30'; accepted: 1 .. 25"},
           {"plan --model gpt --prompt-tokens 8", "--prompt-tokens: got '8'; accepted: 0 without --new-tokens"},
           {"infer --model mlp --slice-layers 1,2 --batch 1", "--slice-layers: got '1,2'; accepted: none for mlp"},
           {"infer --model gpt --slice-vocab 64,128 --batch 1", "--slice-vocab: got '64,128'; accepted: only with"},
           {"infer --model gpt --slice-layers 1,2 --slice-vocab 128,64 --batch 1", "--slice-vocab: got '128,64'"},
           {"train --model gpt --slice-layers 1,2 --slice-vocab 64", "--slice-vocab: got '64'"},
           {"train --model resnet --slice-layers 1,2 --slice-vocab 64,128", "--slice-vocab: got '64,128'"},
           {"train --model resnet --preset tiny --slice-layers 1,2", "--slice-layers: got '1,2'"},
           {"infer --model gpt --slice-layers 2,1 --batch 1", "--slice-layers: got '2,1'"},
           {"infer --model gpt --slice-layers 1,2 --batch 1 --find-max-batch", "--slice-layers"}}) {
    const Run r = run_cli(args + json);
    INFO(args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("cli: decode prints TTFT, TPOT and the KV-cache bytes, and bad lengths get one line", "[cli]") {
  const Run r =
      run_cli("decode --preset tiny --batch 2 --prompt 8 --new-tokens 4 --repetitions 2 --device cpu --quiet");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle : {"time to first token", "time per output token", "tokens/s",
                             "kv_cache        22.0 KiB      22.0 KiB      0", "peak            "}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  const Run bad = run_cli("decode --prompt 30 --new-tokens 10 --device cpu");
  CHECK(bad.exit_code == 2);
  CHECK(line_count(bad.out) == 1);
  CHECK(bad.out.find("--new-tokens: got '10'") != std::string::npos);
  // llama: the same scenario; a model without a KV-cached forward gets one line naming the accepted ones.
  const Run llama = run_cli(
      "decode --model llama --preset tiny --batch 1 --prompt 4 --new-tokens 3 --repetitions 1 --device cpu --quiet");
  INFO(llama.out);
  CHECK(llama.exit_code == 0);
  CHECK(llama.out.find("llama/tiny") != std::string::npos);
  const Run mlp = run_cli("decode --model mlp --device cpu");
  CHECK(mlp.exit_code == 2);
  CHECK(line_count(mlp.out) == 1);
  CHECK(mlp.out.find("gpt or llama") != std::string::npos);
}

namespace {

nlohmann::json read_json(const fs::path& p) {
  REQUIRE(fs::exists(p));
  return nlohmann::json::parse(std::ifstream(p));
}

// A TorchScript model with a foldable conv + batchnorm, compiled from source.
std::string save_conv_bn_script(const fs::path& dir) {
  torch::jit::Module m("ConvBn");
  torch::manual_seed(5);
  m.register_parameter("conv_w", torch::randn({4, 3, 3, 3}) * 0.2, false);
  m.register_buffer("bn_mean", torch::randn({4}) * 0.1);
  m.register_buffer("bn_var", torch::rand({4}) + 0.5);
  m.register_parameter("bn_w", torch::rand({4}) + 0.5, false);
  m.register_parameter("bn_b", torch::randn({4}) * 0.1, false);
  m.define(R"JIT(
    def forward(self, x):
        # x: [B, 3, 8, 8] -> conv [B, 4, 8, 8] -> batchnorm (inference) -> relu -> mean [B, 4]
        y = torch.conv2d(x, self.conv_w, None, [1, 1], [1, 1])
        y = torch.batch_norm(y, self.bn_w, self.bn_b, self.bn_mean, self.bn_var, False, 0.1, 1e-5, False)
        return torch.relu(y).mean([2, 3])
  )JIT");
  const auto path = (dir / "conv_bn.pt").string();
  m.save(path);
  return path;
}

}  // namespace

TEST_CASE("cli: compare --new-tokens serves the trained weights as a generation beside the score forward", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const std::string path = (dir.path / "compare.json").string();
  const Run r = run_cli(
      "compare --model gpt --preset tiny --batch 2 --steps 2 --warmup 0 --new-tokens 8 --infer-dtype fp32 "
      "--device cpu --quiet --json " +
      path);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle :
       {"generation (serving): batch 2, prompt 24 tokens, 8 new tokens", "time to first token", "kv_cache",
        "working_set", "\ngap: training peak / generation peak = ", "     training peak / score peak = "}) {
    INFO(needle);
    CHECK(r.out.find(needle) != std::string::npos);
  }
  const auto j = read_json(path);
  const auto& g = j.at("generation");
  // The prompt is the context (32) less the new tokens; the cache holds prompt + new - 1 positions: 2 x 2 layers x
  // 2 sequences x 31 x d_model 64 x 4 bytes.
  CHECK(g["settings"]["prompt_tokens"] == 24);
  CHECK(g["memory"]["kv_cache"] == 2 * 2 * 2 * 31 * 64 * 4);
  CHECK(g["memory"]["peak"] == g["predicted"]["peak"]);
  CHECK(g["memory"]["parameters"] == j["inference"]["memory"]["parameters"]);
  CHECK(j["gap"]["generation_peak_memory_ratio"].get<double>() ==
        Approx(j["training"]["memory"]["peak"].get<double>() / g["memory"]["peak"].get<double>()));
  CHECK(g["tpot_ms"]["count"] == 3 * 7);
  // By default gpt and llama generate 64 new tokens, at most half the context (tiny's 32: 16); --new-tokens 0 and the
  // models without a KV-cached forward measure the full-sequence forward alone.
  for (const auto& [args, tokens] :
       std::vector<std::pair<std::string, int>>{{"--model gpt --preset tiny", 16},
                                                {"--model llama --preset tiny", 16},
                                                {"--model gpt --preset tiny --new-tokens 0", 0},
                                                {"--model mlp", 0}}) {
    const Run d = run_cli("compare " + args + " --batch 2 --steps 1 --warmup 0 --device cpu --quiet --json " + path);
    INFO(args << "\n" << d.out);
    REQUIRE(d.exit_code == 0);
    const auto dj = read_json(path);
    CHECK(dj.contains("generation") == (tokens > 0));
    if (tokens > 0) CHECK(dj["generation"]["settings"]["new_tokens"] == tokens);
  }
  // A model without a KV-cached forward, or more new tokens than the context leaves: one line naming the option.
  for (const auto* args : {"compare --model mlp --new-tokens 4 --steps 1 --device cpu",
                           "compare --model gpt --preset tiny --new-tokens 32 --steps 1 --device cpu",
                           "compare --model gpt --preset tiny --new-tokens 32 --slice-layers 1,2 --device cpu"}) {
    const Run bad = run_cli(args);
    INFO(args << "\n" << bad.out);
    CHECK(bad.exit_code == 2);
    CHECK(line_count(bad.out) == 1);
    CHECK(bad.out.find("--new-tokens") != std::string::npos);
  }
}

TEST_CASE("cli: decode and compare --slice-layers extrapolate a generation from its slices", "[cli][slices]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path path = dir.path / "decode_slices.json";
  // gpt small (4 blocks) by slices of 1 and 2 blocks: the full model is never built.
  const Run d = run_cli(
      "decode --model gpt --preset small --slice-layers 1,2 --batch 2 --prompt 16 --new-tokens 4 --repetitions 2 "
      "--device cpu --json " +
      path.string());
  INFO(d.out);
  REQUIRE(d.exit_code == 0);
  for (const auto* needle :
       {"decode (slices)", "generation memory", "kv_cache", "TTFT mean", "TPOT mean", "generation timer"}) {
    INFO(needle);
    CHECK(d.out.find(needle) != std::string::npos);
  }
  const auto g = read_json(path)["generation_slices"];
  REQUIRE(g["slices"].size() == 2);
  CHECK(g["axes"][0]["full"] == 4);
  CHECK(g["full_model_run"] == false);
  // The weights, the KV cache and the prompt grow by exactly one block's bytes per block (or not at all), so on the
  // CPU the extrapolation lands on the full model's prediction to the byte; so does the peak, whose working set
  // does not grow with the blocks.
  const auto& x = g["extrapolated"]["memory"];
  const auto& p = g["predicted"];
  for (const char* category : {"parameters", "kv_cache", "prompt", "working_set", "peak"}) {
    INFO(category);
    CHECK(x[category].get<int64_t>() == p[category].get<int64_t>());
  }
  // The predicted cache: 2 (keys, values) x 4 blocks x 2 sequences x (16 + 4 - 1) positions x 256 wide x 4 bytes.
  const auto small = tvie::make_zoo_workload("gpt", "small");
  CHECK(p["kv_cache"].get<int64_t>() == tvie::kv_cache_bytes(*small, 2, 19, 4));
  // Each slice's cache is its own blocks' share of it.
  CHECK(g["slices"][0]["memory"]["kv_cache"].get<int64_t>() * 4 == p["kv_cache"].get<int64_t>());
  // The times: x1 + (4 - 1) x (x2 - x1) where both slices' times rise, tokens/s from them; -1 otherwise.
  const auto time_of = [&](const char* key) {
    const double a = g["slices"][0][key].get<double>(), b = g["slices"][1][key].get<double>();
    return b > a ? a + 3 * (b - a) : -1.0;
  };
  const double ttft = g["extrapolated"]["ttft_ms_mean"].get<double>();
  const double tpot = g["extrapolated"]["tpot_ms_mean"].get<double>();
  CHECK(ttft == Approx(time_of("ttft_ms_mean")));
  CHECK(tpot == Approx(time_of("tpot_ms_mean")));
  if (ttft > 0 && tpot >= 0)
    CHECK(g["extrapolated"]["tokens_per_s"].get<double>() == Approx(2 * 4 / ((ttft + 3 * tpot) / 1e3)));
  else
    CHECK(g["extrapolated"]["tokens_per_s"].get<double>() == 0);
  // The decoding step against the card reads the extrapolated weights and the cache attended to (on average
  // 16 + 4 / 2 of the 19 positions held).
  CHECK(g["extrapolated"]["of_card"]["decoding"]["bytes"].get<double>() ==
        Approx(x["parameters"].get<double>() + x["kv_cache"].get<double>() * 18.0 / 19.0));

  // compare --slice-layers of a token model: training, score and the generation (its default new tokens), the gap
  // led by the generation.
  const fs::path compared = dir.path / "compare_slices.json";
  const Run c =
      run_cli("compare --model gpt --preset tiny --slice-layers 1,2 --steps 1 --warmup 0 --device cpu --json " +
              compared.string());
  INFO(c.out);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("training peak / generation peak") != std::string::npos);
  const auto cj = read_json(compared);
  REQUIRE(cj.contains("generation_slices"));
  CHECK(cj["generation_slices"]["settings"]["new_tokens"] == 16);
  CHECK(cj["generation_slices"]["settings"]["prompt_tokens"] == 16);
  CHECK(cj["generation_slices"]["settings"]["dtype"] == cj["inference_slices"]["settings"]["dtype"]);
  const Run score = run_cli(
      "compare --model gpt --preset tiny --slice-layers 1,2 --new-tokens 0 --steps 1 --warmup 0 "
      "--device cpu --quiet --json " +
      compared.string());
  REQUIRE(score.exit_code == 0);
  CHECK_FALSE(read_json(compared).contains("generation_slices"));
}

TEST_CASE("cli: decode and compare --find-max-batch search the most sequences a generation holds", "[cli][max_batch]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path decoded = dir.path / "decode.json", compared = dir.path / "compare.json";
  const Run d = run_cli(
      "decode --model gpt --preset tiny --prompt 16 --new-tokens 16 --find-max-batch --cpu-memory-limit-mb 16 "
      "--device cpu --json " +
      decoded.string());
  INFO(d.out);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out.find("generation: prompts of 16 tokens, 16 new, fp32 copy and KV cache") != std::string::npos);
  const auto j = read_json(decoded)["max_batch"];
  CHECK(j["settings"]["prompt_tokens"] == 16);
  CHECK(j["settings"]["new_tokens"] == 16);
  CHECK_FALSE(j.contains("training"));
  CHECK_FALSE(j.contains("inference"));
  const auto& g = j["generation"];
  const auto largest = g["largest_fitting"].get<int64_t>();
  REQUIRE(largest > 0);
  CHECK(g["first_failing"] == largest + 1);
  CHECK(g["memory"]["peak"].get<int64_t>() <= 16 * 1024 * 1024);
  CHECK(d.out.find("a generation of 31 cached positions fits " + std::to_string(largest) + " sequences at once") !=
        std::string::npos);

  // compare searches training, the full-sequence forward and, for gpt, the generation of the context less 8 tokens.
  const Run c = run_cli(
      "compare --model gpt --preset tiny --new-tokens 8 --find-max-batch --cpu-memory-limit-mb 16 --device cpu "
      "--quiet --json " +
      compared.string());
  INFO(c.out);
  REQUIRE(c.exit_code == 0);
  const auto cj = read_json(compared)["max_batch"];
  CHECK(cj["training"]["largest_fitting"].get<int64_t>() > 0);
  CHECK(cj["inference"]["largest_fitting"].get<int64_t>() > 0);
  CHECK(cj["generation"]["largest_fitting"].get<int64_t>() > 0);
  CHECK(cj["settings"]["new_tokens"] == 8);
}

TEST_CASE("cli: every report kind writes the keys docs/reports.md lists, and no other", "[cli][report]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = [&](const std::string& name) { return (dir.path / (name + ".json")).string(); };
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"compare", "compare --model mlp --batch 4 --steps 1 --warmup 0 --clip 1 --device cpu --quiet --json "},
      {"compare",
       "compare --model gpt --preset tiny --batch 2 --steps 1 --warmup 0 --new-tokens 4 --device cpu --quiet --json "},
      {"train", "train --model mlp --batch 4 --steps 1 --warmup 0 --device cpu --quiet --json "},
      {"infer",
       "infer --model mlp --batch 1,1000000 --dtype fp32,int8 --steps 1 --warmup 0 --cpu-memory-limit-mb 4 "
       "--device cpu --quiet --json "},
      {"serve",
       "serve --model mlp --qps 1000 --queries 20 --min-queries 10 --min-duration-ms 0 --device cpu --quiet --json "},
      {"decode",
       "decode --preset tiny --batch 1 --prompt 4 --new-tokens 2 --repetitions 1 --device cpu --quiet --json "},
      {"allreduce", "allreduce --min-bytes 8 --max-bytes 64 --factor 8 --iters 1 --warmup 0 --json "},
      {"train_slices",
       "train --model gpt --slice-layers 1,2 --slice-vocab 64,128 --steps 1 --warmup 0 --device cpu --quiet --json "},
      {"infer_slices",
       "infer --model gpt --slice-layers 1,2 --batch 2 --steps 1 --warmup 0 --device cpu --quiet --json "},
      {"compare_slices", "compare --model llama --slice-layers 1,2 --steps 1 --warmup 0 --device cpu --quiet --json "},
      {"decode_slices",
       "decode --model llama --preset tiny --slice-layers 1,2 --batch 1 --prompt 4 --new-tokens 2 --repetitions 1 "
       "--device cpu --quiet --json "},
      {"cards", "cards --cards all --json "},
      {"list", "list --json "},
      {"plan",
       "plan --model gpt --preset tiny --cards t4,h100-sxm --serve-qps 100 --p99-ms 50 --train-tokens 100000 "
       "--new-tokens 8 --quiet --json "},
      {"max_batch",
       "compare --model mlp --find-max-batch --cpu-memory-limit-mb 8 --max-batch-up-to 64 --device cpu --quiet "
       "--json "},
      {"max_batch",
       "decode --model gpt --preset tiny --find-max-batch --cpu-memory-limit-mb 4 --max-batch-up-to 8 --device cpu "
       "--quiet --json "}};
  for (const auto& [kind, args] : runs) {
    const Run r = run_cli(args + json(kind));
    INFO("tvie " << args << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    const auto j = read_json(json(kind));
    CHECK(j.at("schema_version").get<int>() == tvie::test::documented_schema_version());
    tvie::test::check_documented(j, kind);
  }
  // The infer run has rows that do not fit (batch 1000000) and rows with accuracy columns (int8).
  const auto infer = read_json(json("infer"));
  const auto& rows = infer["inference_sweep"]["rows"];
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].contains("accuracy_vs_fp32"));
  CHECK(rows[2]["fits"] == false);
  CHECK(rows[3]["fits"] == false);
  CHECK(rows[2].contains("does_not_fit"));
  // The slices' fractions of the card are the full model's FLOPs (and weights) over the extrapolated times.
  const auto sliced = read_json(json("compare_slices"));
  const double forward = sliced["model"]["forward_flops_per_sample"].get<double>();
  const auto& ts = sliced["training_slices"];
  const double step_ms = ts["extrapolated"]["step_ms_mean"].get<double>();
  if (step_ms > 0)
    CHECK(ts["extrapolated"]["of_card"]["model_tflops"].get<double>() ==
          Approx(3 * forward * ts["settings"]["batch_size"].get<double>() / (step_ms / 1e3) / 1e12));
  else  // not extrapolated (the slices' times did not rise): no fraction
    CHECK(ts["extrapolated"]["of_card"]["peak_fraction"].is_null());
  const auto& is = sliced["inference_slices"];
  const auto& weights = is["extrapolated"]["memory"];
  CHECK(is["extrapolated"]["of_card"]["bytes"].get<double>() ==
        weights["parameters"].get<double>() + weights["packed_weights"].get<double>());
  const double latency_ms = is["extrapolated"]["latency_ms_mean"].get<double>();
  if (latency_ms > 0)
    CHECK(is["extrapolated"]["of_card"]["model_tflops"].get<double>() ==
          Approx(forward * is["settings"]["batch_size"].get<double>() / (latency_ms / 1e3) / 1e12));
  else
    CHECK(is["extrapolated"]["of_card"]["peak_fraction"].is_null());
  // Every kind's context has the keys of compare's, and names this machine's CPU.
  const auto keys_of = [&](const std::string& kind) {
    std::set<std::string> keys;
    const auto report = read_json(json(kind));  // kept alive while its items are iterated (found by ASan)
    for (const auto& [key, value] : report["context"].items()) keys.insert(key);
    return keys;
  };
  for (const auto& [kind, args] : runs) {
    INFO(kind);
    CHECK(keys_of(kind) == keys_of("compare"));
    CHECK(read_json(json(kind))["context"]["cpu_model"] == tvie::describe_host().cpu_model);
  }
}

TEST_CASE("cli: serve --find-max-qps reports its probes and the run at the highest passing rate", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "maxqps.json";
  // A bound every probe meets: the search doubles from 1e5 QPS 16 times and keeps the last rate.
  const Run r = run_cli(
      "serve --model mlp --find-max-qps --p99-ms 100000 --qps 100000 --min-queries 5 --min-duration-ms 0 "
      "--device cpu --quiet --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(json);
  const auto& search = j["serving"]["max_qps_search"];
  REQUIRE(search["probes"].size() == 17);
  CHECK(search["max_qps"].get<double>() == 100000.0 * 65536);
  for (const auto& p : search["probes"]) {
    CHECK(p["meets"] == true);
    CHECK(p["queries"] == 5);
  }
  CHECK(j["serving"]["answered"] == 5);
  CHECK(j["serving"]["settings"]["target_qps"].get<double>() == 100000.0 * 65536);
  tvie::test::check_documented(j, "serve");
}

TEST_CASE("cli: allreduce writes the same rows as CSV and JSON", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "ar.json", csv = dir.path / "ar.csv";
  const Run r = run_cli("allreduce --min-bytes 8 --max-bytes 512 --factor 4 --iters 2 --warmup 1 --json " +
                        json.string() + " --csv " + csv.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(json);
  const auto& rows = j["allreduce"]["rows"];
  REQUIRE(rows.size() == 4);  // 8, 32, 128, 512 bytes
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header.rfind("bytes,", 0) == 0);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == rows.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i].rfind(std::to_string(rows[i]["bytes"].get<int64_t>()) + ",", 0) == 0);
    CHECK(rows[i]["in_place"]["wrong"] == 0);
  }
}

TEST_CASE("cli: list names every model and preset with its analytic sizes, as a table, JSON and CSV", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "zoo.json", csv = dir.path / "zoo.csv";
  const Run r = run_cli("list --json " + json.string() + " --csv " + csv.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(json);
  const auto& presets = j["zoo"]["presets"];
  std::ifstream in(csv);
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  REQUIRE(rows.size() >= 1);
  CHECK(rows[0] == "model,preset,parameters,buffer_bytes,forward_flops_per_sample,tokens_per_sample,blocks,source");
  size_t i = 0;
  for (const auto& model : tvie::model_names())
    for (const auto& preset : tvie::preset_names(model)) {
      INFO(model << " " << preset);
      const auto w = tvie::make_zoo_workload(model, preset);
      const auto facts = w->facts();
      REQUIRE(i < presets.size());
      const auto& p = presets[i];
      CHECK(p["model"] == model);
      CHECK(p["preset"] == preset);
      CHECK(p["parameters"] == facts.parameter_count);
      CHECK(p["buffer_bytes"] == facts.buffer_bytes);
      CHECK(p["forward_flops_per_sample"].get<double>() == facts.forward_flops_per_sample);
      CHECK(p["tokens_per_sample"] == facts.tokens_per_sample);
      CHECK(p["blocks"] == w->block_count());
      CHECK(p["source"] == tvie::preset_source(model, preset));
      REQUIRE(i + 1 < rows.size());
      CHECK(rows[i + 1].rfind(model + "," + preset + "," + std::to_string(facts.parameter_count) + "," +
                                  std::to_string(facts.buffer_bytes) + "," +
                                  std::to_string(std::llround(facts.forward_flops_per_sample)) + ",",
                              0) == 0);
      // The console's row: model, preset, then the parameters with thousands separators.
      std::string grouped = std::to_string(facts.parameter_count);
      for (int at = static_cast<int>(grouped.size()) - 3; at > 0; at -= 3) grouped.insert(at, ",");
      CHECK(std::regex_search(r.out, std::regex("\\n" + model + " +" + preset + " +" + grouped + " ")));
      ++i;
    }
  CHECK(presets.size() == i);
  CHECK(rows.size() == i + 1);
  // A published size, as the catalog of presets states it.
  bool llama8b = false;
  for (const auto& p : presets)
    if (p["preset"] == "llama-3-8b") llama8b = p["parameters"] == int64_t{8030261248} && p["blocks"] == 32;
  CHECK(llama8b);
}

TEST_CASE("cli: infer --torchscript runs a script model as loaded, frozen and optimised", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const std::string model = save_conv_bn_script(dir.path);
  for (const std::string fusion : {"none", "freeze", "optimize"}) {
    const auto json = dir.path / ("script-" + fusion + ".json");
    const Run r = run_cli("infer --torchscript " + model + " --input-shape 3,8,8 --fusion " + fusion +
                          " --batch 2 --steps 1 --warmup 0 --device cpu --quiet --json " + json.string());
    INFO(fusion << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    const auto j = read_json(json);
    CHECK(j["model"]["name"] == (fusion == "none" ? "script:conv_bn.pt" : "script:conv_bn.pt (" + fusion + ")"));
    CHECK(j["model"]["parameters"] == 4 * 3 * 3 * 3 + 4 + 4);
    CHECK(j["inference_sweep"]["rows"][0]["fits"] == true);
  }
  // A shape the model rejects: one line, exit code 2.
  const Run bad = run_cli("infer --torchscript " + model + " --input-shape 5,8,8 --device cpu");
  INFO(bad.out);
  CHECK(bad.exit_code == 2);
  CHECK(line_count(bad.out) == 1);
  CHECK(bad.out.find("--input-shape: got '5,8,8'") != std::string::npos);
}

TEST_CASE("TVIE_REQUIRE_GPU=1 turns a skipped [gpu] test into a failure on a machine without CUDA", "[cli]") {
  if (tvie::cuda_available()) {
    TVIE_SKIP("this machine has CUDA: the [gpu] tests run here, there is nothing to skip");
  }
  const auto run_test = [](const std::string& env) {
    return tvie::test::run_command(env + " " + TVIE_TEST_BINARY + " \"CUDA events time device work\"");
  };
  const Run skipped = run_test("TVIE_REQUIRE_GPU=0");
  CHECK(skipped.exit_code == 77);
  CHECK(skipped.out.find("SKIPPED [gpu] CUDA events time device work") != std::string::npos);
  const Run required = run_test("TVIE_REQUIRE_GPU=1");
  INFO(required.out);
  CHECK(required.exit_code == 1);
  CHECK(required.out.find("FAILED [gpu] CUDA events time device work") != std::string::npos);
}

TEST_CASE("cli: whole-number options take the notation budgets are typed in (1e9), and refuse what is not whole",
          "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "plan.json";
  for (const auto& [flag, value, expected] : {std::tuple{"--train-tokens", "1e9", int64_t{1000000000}},
                                              std::tuple{"--train-samples", "2.5e3", int64_t{2500}}}) {
    const Run r = run_cli(std::string("plan --model gpt --preset tiny --cards t4 --no-host -q ") + flag + " " + value +
                          " --json " + json.string());
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    const std::string key = std::string(flag) == "--train-tokens" ? "train_tokens" : "train_samples";
    CHECK(read_json(json)["settings"][key].get<int64_t>() == expected);
  }
  for (const auto& [value, shown] : {std::pair{"1.5e0", "got '1.5e0'"}, std::pair{"1e400", "got '1e400'"},
                                     std::pair{"1e19", "got '1e19'"}, std::pair{"1e", "got '1e'"}}) {
    const Run bad =
        run_cli(std::string("plan --model gpt --preset tiny --cards t4 --no-host -q --train-tokens ") + value);
    INFO(bad.out);
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.find(std::string("--train-tokens: ") + shown + "; accepted: a whole number") != std::string::npos);
  }
}

TEST_CASE("cli: plan prints training and inference per card, labelled projected, and the same figures as CSV",
          "[cli][projection]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "plan.json", csv = dir.path / "plan.csv";
  const Run r = run_cli(
      "plan --model llama --preset llama-3-8b --batch 1 --precision amp-bf16 --infer-dtype bf16 "
      "--cards t4,l4,a100-80gb-sxm,h100-sxm --no-host --serve-qps 50 --p99-ms 1000 "
      "--train-tokens 1000000000 --json " +
      json.string() + " --csv " + csv.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  for (const auto* needle :
       {"PROJECTED: nothing ran", "Training (projected)", "Inference (projected, bf16, tuned stack)",
        "n/a: t4 has no bf16_tflops peak", "bound..estimate"})
    CHECK(r.out.find(needle) != std::string::npos);
  const auto j = read_json(json);
  CHECK(j["projected"] == true);
  CHECK(j["settings"]["stack"] == "tuned");  // sizing without a calibration: the tuned stack by default
  REQUIRE(j["cards"].size() == 4);           // --no-host: the four asked for, in the catalog's order
  CHECK(j["cards"][0]["id"] == "a100-80gb-sxm");
  for (const auto& c : j["cards"]) {
    INFO(c["id"]);
    CHECK(c["training"]["fits"] == false);  // 8B with AdamW: no single card
    if (c["training"]["supported"] == true) {
      CHECK(c["training"]["cards"].get<int64_t>() >= 2);
      CHECK(c["training"]["step"]["bound_s"].get<double>() <= c["training"]["step"]["estimate_s"].get<double>());
      CHECK(c["training"]["budget_hours"]["estimate"].get<double>() > 0);
    }
  }
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header.find("train_step_ms_projected_estimate") != std::string::npos);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("a100-80gb-sxm,", 0) == 0);
}

TEST_CASE("cli: plan --batching: continuous for generation by default, static on request, refused without it",
          "[cli][projection]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "plan.json";
  const std::string generation =
      "plan --model llama --preset llama-3-8b --infer-dtype bf16 --new-tokens 64 --cards l4 --no-host "
      "--serve-qps 20 --p99-ms 20000 --json " +
      json.string();
  const Run cont = run_cli(generation);
  INFO(cont.out);
  REQUIRE(cont.exit_code == 0);
  CHECK(cont.out.find("continuous batching (--batching auto)") != std::string::npos);
  const auto c = read_json(json);
  CHECK(c["settings"]["batching"] == "auto");
  CHECK(c["cards"][0]["inference"]["serving_batching"] == "continuous");
  const Run batches = run_cli(generation + " --batching static");
  REQUIRE(batches.exit_code == 0);
  CHECK(batches.out.find("batches of @b requests (a batch waits for its last)") != std::string::npos);
  const auto b = read_json(json);
  CHECK(b["cards"][0]["inference"]["serving_batching"] == "static");
  CHECK(c["cards"][0]["inference"]["qps_per_card"]["estimate"].get<double>() >
        b["cards"][0]["inference"]["qps_per_card"]["estimate"].get<double>());
  // Bad values: one line naming the field and what it accepts, exit code 2.
  const Run unknown = run_cli("plan --model gpt --batching dynamic --no-host");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.out.find("--batching") != std::string::npos);
  CHECK(unknown.out.find("auto, static, continuous") != std::string::npos);
  const Run forward = run_cli("plan --model gpt --batching continuous --no-host");
  CHECK(forward.exit_code == 2);
  CHECK(forward.out.find("--new-tokens") != std::string::npos);
  // --stack: auto, tvie or tuned; tuned not with a calibration (it measures tvie's own kernels).
  const Run stack = run_cli("plan --model gpt --stack tensorrt --no-host");
  CHECK(stack.exit_code == 2);
  CHECK(line_count(stack.out) == 1);
  CHECK(stack.out.find("--stack") != std::string::npos);
  CHECK(stack.out.find("auto, tvie, tuned") != std::string::npos);
  const Run calibrated = run_cli("plan --model gpt --stack tuned --measure --no-host --device cpu");
  CHECK(calibrated.exit_code == 2);
  CHECK(line_count(calibrated.out) == 1);
  CHECK(calibrated.out.find("--stack") != std::string::npos);
  CHECK(calibrated.out.find("tvie with --from or --measure") != std::string::npos);
  // On the tuned stack: the cards with an anchor projected, the others said to have none.
  const Run tuned = run_cli(
      "plan --model resnet --preset tiny --infer-dtype int8 --stack tuned --cards t4,v100-sxm2-32gb "
      "--no-host --json " +
      json.string());
  INFO(tuned.out);
  REQUIRE(tuned.exit_code == 0);
  CHECK(tuned.out.find("int8, tuned stack") != std::string::npos);
  const auto t = read_json(json);
  CHECK(t["settings"]["stack"] == "tuned");
  CHECK(t["cards"][0]["id"] == "v100-sxm2-32gb");
  CHECK(t["cards"][0]["inference"]["supported"] == false);
  CHECK(t["cards"][0]["inference"]["tuned"]["unsupported"].get<std::string>().find("no mlperf-inference resnet50") !=
        std::string::npos);
  CHECK(t["cards"][1]["inference"]["supported"] == true);
  CHECK(t["cards"][1]["inference"]["tuned"]["compute_efficiency"].get<double>() > 0);
  CHECK(t["cards"][1]["inference"]["tuned"]["anchor_samples_per_s"] == 5808.47);
}

TEST_CASE("cli: plan --measure runs the model here first and calibrates the host card with it", "[cli][projection]") {
  if (!tvie::local_host_accelerator()) {
    TVIE_SKIP("this machine's CPU has no class in the catalog: no host card to calibrate");
  }
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "plan.json";
  // gpt small cut to 2 of its 4 blocks: the slice's factor stands for the whole model.
  const Run r = run_cli(
      "plan --model gpt --preset small --batch 4 --measure --measure-layers 2 --steps 2 --warmup 1 "
      "--infer-dtype fp32 --new-tokens 8 --prompt-tokens 16 --cards t4 --device cpu --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("calibrated (*) from measured here (--measure, 2 steps and generations)") != std::string::npos);
  CHECK(r.out.find("\n  decoding step ") != std::string::npos);
  CHECK(r.out.find("the workload ran here first, to calibrate (--measure)") != std::string::npos);
  const auto j = read_json(json);
  CHECK(j["settings"]["stack"] == "tvie");  // auto: a calibrated plan is tvie's own kernels
  const auto& c = j["settings"]["calibration"];
  CHECK(c["card"] == "host");
  CHECK(c["training_measured_s"].get<double>() > 0);
  // What the run measured, projected here by the test from the model, the settings and the host's card: gpt small
  // cut to 2 blocks at its own sequence, the plan's training settings at batch 4, one request's prefill of the
  // 16-token prompt.
  const auto host = tvie::local_host_accelerator();
  REQUIRE(host);
  tvie::ModelShape shape;
  shape.seq_tokens = tvie::make_zoo_workload("gpt", "small")->facts().tokens_per_sample;
  shape.layers = 2;
  const auto slice = tvie::make_zoo_workload("gpt", "small", shape);
  tvie::TrainSettings train;
  train.batch_size = 4;
  train.precision = tvie::parse_train_precision(j["settings"]["train"]["precision"].get<std::string>());
  train.optimizer = tvie::parse_optimizer(j["settings"]["train"]["optimizer"].get<std::string>());
  const auto step = tvie::project_time(tvie::training_step_work(*slice, train), *host);
  CHECK(c["training_projected_s"].get<double>() == Approx(step.estimate_s).epsilon(1e-9));
  CHECK(c["training_bound_s"].get<double>() == Approx(step.bound_s).epsilon(1e-9));
  CHECK(c["training_factor"].get<double>() == Approx(c["training_measured_s"].get<double>() / step.estimate_s));
  tvie::InferSettings one;
  one.batch_size = 1;
  one.dtype = tvie::InferenceDtype::fp32;
  const auto prefill = tvie::project_time(tvie::decoding_work(*slice, one, 16, 0), *host);
  CHECK(c["prefill_projected_s"].get<double>() == Approx(prefill.estimate_s).epsilon(1e-9));
  CHECK(c["inference_factor"].get<double>() > 0);
  // The training step's phases, each against its own projection: the step's mean split among them.
  CHECK(c["training_forward_factor"].get<double>() > 0);
  CHECK(c["training_backward_factor"].get<double>() > 0);
  CHECK(c["training_optimizer_factor"].get<double>() > 0);
  CHECK(c["training_forward_measured_s"].get<double>() + c["training_backward_measured_s"].get<double>() +
            c["training_optimizer_measured_s"].get<double>() ==
        Approx(c["training_measured_s"].get<double>()));
  CHECK(r.out.find("by phase (the step's mean split as its phases' medians") != std::string::npos);
  // --measure profiles one more step: the forward and backward calibrated class by class too.
  CHECK(c["training_forward_matmul_factor"].get<double>() > 0);
  CHECK(c["training_backward_matmul_factor"].get<double>() > 0);
  CHECK(c["training_forward_convolution_factor"].get<double>() == 0);  // gpt has none
  double forward = 0;
  for (const char* k : {"matmul", "convolution", "attention", "normalization", "elementwise"})
    forward += c[std::string("training_forward_") + k + "_measured_s"].get<double>();
  CHECK(forward == Approx(c["training_forward_measured_s"].get<double>()));
  CHECK(r.out.find("the forward by operator class") != std::string::npos);
  // ... and the inference batch, from one more batch profiled.
  CHECK(c["inference_matmul_factor"].get<double>() > 0);
  double batch = 0;
  for (const char* k : {"matmul", "convolution", "attention", "normalization", "elementwise"})
    batch += c[std::string("inference_") + k + "_measured_s"].get<double>();
  CHECK(batch == Approx(c["inference_measured_s"].get<double>()));
  // ... and the generation's prefill and decoding step, from one more generation profiled.
  CHECK(c["prefill_matmul_factor"].get<double>() > 0);
  CHECK(c["decoding_matmul_factor"].get<double>() > 0);
  // The generation asked (16 prompt tokens, 8 new) measured too: its prefill and decoding step have factors. The
  // decoding step's projection is the mean of the 7 steps after the prefill, between the first's (16 positions
  // cached) and the last's (22).
  CHECK(c["prefill_factor"].get<double>() == Approx(c["prefill_measured_s"].get<double>() / prefill.estimate_s));
  CHECK(c["decoding_factor"].get<double>() > 0);
  const double first_step = tvie::project_time(tvie::decoding_work(*slice, one, 1, 16), *host).estimate_s;
  const double last_step = tvie::project_time(tvie::decoding_work(*slice, one, 1, 22), *host).estimate_s;
  CHECK(c["decoding_projected_s"].get<double>() >= first_step * (1 - 1e-9));
  CHECK(c["decoding_projected_s"].get<double>() <= last_step * (1 + 1e-9));
  // Whether a measured mode beat its roofline bound depends on the machine, not on tvie (on an AMD EPYC the 2-block
  // slice's 10 MiB of weights stay in the cache and a decoding step runs 2.4x faster than the catalog's DRAM
  // bandwidth per core allows): the report says which, and the estimates stop at the bound either way.
  bool any_below = false;
  std::vector<std::string> modes = {"training",  "training_forward", "training_backward", "training_optimizer",
                                    "inference", "prefill",          "decoding"};
  for (const char* k : {"matmul", "attention", "normalization", "elementwise"}) {  // gpt's classes
    modes.push_back(std::string("training_forward_") + k), modes.push_back(std::string("training_backward_") + k);
    modes.push_back(std::string("inference_") + k);
    modes.push_back(std::string("prefill_") + k), modes.push_back(std::string("decoding_") + k);
  }
  for (const std::string& mode : modes) {
    INFO(mode);
    // The bound of the whole step and the prefill from the test's own projections above; the rest as reported.
    double bound = c[mode + "_bound_s"].get<double>();
    if (mode == "training") bound = step.bound_s;
    if (mode == "prefill") bound = prefill.bound_s;
    const bool below = c[mode + "_measured_s"].get<double>() < bound;
    CHECK(c[mode + "_below_bound"].get<bool>() == below);
    any_below = any_below || below;
  }
  CHECK((r.out.find("measured below its roofline bound") != std::string::npos) == any_below);
  const auto& tpot = j["cards"][1]["inference"]["generation"]["time_per_output_token_s"];
  CHECK(tpot["estimate"].get<double>() >= tpot["bound"].get<double>());
  REQUIRE(j["cards"].size() == 2);  // t4, then the host
  CHECK(j["cards"][0]["training_calibration"] == 0.0);
  CHECK(j["cards"][0]["decoding_calibration"] == 0.0);
  CHECK(j["cards"][1]["id"] == "host");
  CHECK(j["cards"][1]["training_calibration"].get<double>() == Approx(c["training_factor"].get<double>()));
  CHECK(j["cards"][1]["training_calibration_by_phase"] == true);
  CHECK(j["cards"][0]["training_calibration_by_phase"] == false);
  CHECK(j["cards"][1]["training_calibration_by_class"] == true);
  CHECK(j["cards"][0]["training_calibration_by_class"] == false);
  CHECK(j["cards"][1]["inference_calibration_by_class"] == true);
  CHECK(j["cards"][0]["inference_calibration_by_class"] == false);
  CHECK(j["cards"][1]["decoding_calibration_by_class"] == true);
  CHECK(j["cards"][1]["prefill_calibration_by_class"] == true);
  CHECK(j["cards"][1]["decoding_calibration"].get<double>() == Approx(c["decoding_factor"].get<double>()));
  CHECK(j["cards"][1]["prefill_calibration"].get<double>() == Approx(c["prefill_factor"].get<double>()));
  // --measure and --from together: one line, exit code 2.
  const Run both = run_cli("plan --model gpt --measure --from " + json.string() + " --device cpu");
  CHECK(both.exit_code == 2);
  CHECK(line_count(both.out) == 1);
  CHECK(both.out.find("--measure") != std::string::npos);
}

TEST_CASE("cli: plan --measure-layers slices the model as the user shaped it (--seq, --pad-vocab)",
          "[cli][projection]") {
  if (!tvie::local_host_accelerator()) {
    TVIE_SKIP("this machine's CPU has no class in the catalog: no host card to calibrate");
  }
  tvie::test::TempDir dir("tvie-cli");
  const auto json = dir.path / "plan.json";
  const Run r = run_cli(
      "plan --model gpt --preset tiny --seq 16 --pad-vocab 100 --batch 2 --measure --measure-layers 1 --steps 1 "
      "--warmup 0 --infer-dtype fp32 --cards t4 --device cpu --json " +
      json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("measuring gpt/tiny (seq 16) (1 block) (vocabulary 300: 256 padded to a multiple of 100)") !=
        std::string::npos);
  // The slice measured is tiny at 16 tokens, one block, its vocabulary padded to 300: the calibration's projection
  // is that model's.
  const auto j = read_json(json);
  const auto& c = j["settings"]["calibration"];
  tvie::ModelShape shape;
  shape.seq_tokens = 16;
  shape.layers = 1;
  shape.vocab_multiple = 100;
  const auto slice = tvie::make_zoo_workload("gpt", "tiny", shape);
  tvie::TrainSettings train;
  train.batch_size = 2;
  train.precision = tvie::parse_train_precision(j["settings"]["train"]["precision"].get<std::string>());
  train.optimizer = tvie::parse_optimizer(j["settings"]["train"]["optimizer"].get<std::string>());
  const auto step = tvie::project_time(tvie::training_step_work(*slice, train), *tvie::local_host_accelerator());
  CHECK(c["training_projected_s"].get<double>() == Approx(step.estimate_s).epsilon(1e-9));
}

TEST_CASE("cli: --csv writes each command's table, equal to its JSON figures", "[cli][report]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto lines_of = [](const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) out.push_back(cell);
    if (!line.empty() && line.back() == ',') out.emplace_back();
    return out;
  };
  const struct {
    const char* kind;
    const char* args;
    const char* header;
    size_t rows;
  } runs[] = {
      {"compare", "compare --model mlp --batch 4 --steps 1 --warmup 0 --device cpu --quiet",
       "category,training_bytes,training_predicted_bytes,inference_bytes,inference_predicted_bytes", 12},
      {"train", "train --model mlp --batch 4 --steps 1 --warmup 0 --device cpu --quiet",
       "category,training_bytes,training_predicted_bytes", 12},
      {"infer", "infer --model mlp --batch 1,2 --dtype fp32,int8 --steps 1 --warmup 0 --device cpu --quiet",
       "batch,dtype,fits,latency_ms_mean", 4},
      {"serve", "serve --model mlp --qps 1000 --queries 20 --min-queries 10 --min-duration-ms 0 --device cpu --quiet",
       "quantity,count,mean_ms,p50_ms", 3},
      {"decode", "decode --preset tiny --batch 1 --prompt 4 --new-tokens 2 --repetitions 1 --device cpu --quiet",
       "quantity,count,mean_ms,p50_ms", 2}};
  for (const auto& run : runs) {
    const auto csv = dir.path / (std::string(run.kind) + ".csv"), json = dir.path / (std::string(run.kind) + ".json");
    const Run r = run_cli(std::string(run.args) + " --csv " + csv.string() + " --json " + json.string());
    INFO(run.args << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    const auto lines = lines_of(csv);
    REQUIRE(lines.size() == run.rows + 1);
    CHECK(lines[0].rfind(run.header, 0) == 0);
    for (const auto& line : lines) CHECK(cells(line).size() == cells(lines[0]).size());
    const auto j = read_json(json);
    if (std::string(run.kind) == "compare") {
      const auto peak = cells(lines[11]);  // parameters .. peak: the 11th category
      CHECK(peak[0] == "peak");
      CHECK(std::stoll(peak[1]) == j["training"]["memory"]["peak"].get<int64_t>());
      CHECK(std::stoll(peak[3]) == j["inference"]["memory"]["peak"].get<int64_t>());
      CHECK(std::stoll(cells(lines[3])[1]) == j["training"]["memory"]["gradients"].get<int64_t>());
      CHECK(cells(lines[3])[3].empty());  // inference has no gradients
    }
    if (std::string(run.kind) == "infer") {
      CHECK(cells(lines[1])[1] == "fp32");
      CHECK(std::stod(cells(lines[1])[4]) ==
            Approx(j["inference_sweep"]["rows"][0]["result"]["latency_ms"]["p50"].get<double>()));
      CHECK(cells(lines[1])[11].empty());  // fp32: no accuracy against itself
      CHECK_FALSE(cells(lines[2])[11].empty());
    }
    if (std::string(run.kind) == "serve")
      CHECK(std::stod(cells(lines[1])[5]) == Approx(j["serving"]["latency_ms"]["p99"].get<double>()));
  }
  const Run slices = run_cli("train --model gpt --slice-layers 1,2 --steps 1 --warmup 0 --device cpu --csv " +
                             (dir.path / "s.csv").string());
  CHECK(slices.exit_code == 2);
  CHECK(line_count(slices.out) == 1);
  CHECK(slices.out.find("--csv") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "s.csv"));
}

TEST_CASE("progress: n of N and elapsed on a terminal's stderr, nothing through a pipe", "[cli]") {
  CHECK(tvie::log::progress_line("infer sweep", 3, 18, "batch 16, bf16", 12.34) ==
        "[tvie] infer sweep 3/18: batch 16, bf16 (12.3 s)");
  CHECK(tvie::log::progress_line("max-batch search (training), probe", 2, 0, "batch 64", 0.04) ==
        "[tvie] max-batch search (training), probe 2: batch 64 (0.0 s)");
  const std::string args =
      "infer --model mlp --preset tiny --batch 1,2 --dtype fp32,bf16 --steps 1 --warmup 0 --device cpu";
  // A pipe (CI logs): no progress line.
  const Run piped = run_cli(args);
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.out.find("infer sweep") == std::string::npos);
  // A terminal: util-linux's script(1) runs the command on a pseudo-terminal.
  if (tvie::test::run_command("command -v script").exit_code != 0) {
    TVIE_SKIP_PART("the terminal half: no script(1) (util-linux) here");
    return;
  }
  const Run tty = tvie::test::run_command("script -qec '" + std::string(TVIE_CLI_PATH) + " " + args + "' /dev/null");
  INFO(tty.out);
  REQUIRE(tty.exit_code == 0);
  for (const char* line :
       {"infer sweep 1/4: batch 1, fp32", "infer sweep 2/4: batch 1, bf16", "infer sweep 4/4: batch 2, bf16"})
    CHECK(tty.out.find(line) != std::string::npos);
  CHECK(tty.out.find("\r\033[K") != std::string::npos);  // rewritten in place, and cleared
}

TEST_CASE("docs/cli.md is what tvie reference prints (every command and option, from the tool itself)", "[cli]") {
  const Run r = run_cli("reference");
  REQUIRE(r.exit_code == 0);
  std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/docs/cli.md");
  REQUIRE(in.good());
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO("regenerate: build/bin/tvie reference > docs/cli.md");
  CHECK(doc == r.out);
  for (const char* command : {"## tvie compare", "## tvie plan", "## tvie launch"})
    CHECK(doc.find(command) != std::string::npos);
  CHECK(doc.find("`--html`") != std::string::npos);
}

TEST_CASE("cli: --config FILE.json sets a command's options, the command line wins, bad files get one line", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  auto write = [&](const std::string& name, const std::string& text) {
    const fs::path path = dir.path / name;
    std::ofstream(path) << text;
    return path.string();
  };
  const std::string config =
      write("run.json",
            R"({"model": "mlp", "batch": 4, "steps": 2, "warmup": 1, "device": "cpu", "infer-dtype": "fp32",
                "quiet": true})");
  const fs::path json = dir.path / "report.json";
  const fs::path html = dir.path / "report.html";

  SECTION("the file's options apply; --batch on the command line wins over the file's; the report says so") {
    const Run r =
        run_cli("compare --config " + config + " --batch 2 --json " + json.string() + " --html " + html.string());
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("options from " + config +
                     ": device=cpu, infer-dtype=fp32, model=mlp, quiet=true, steps=2, warmup=1\n") !=
          std::string::npos);
    const auto j = read_json(json);
    CHECK(j["model"]["name"] == "mlp/tiny");
    CHECK(j["training"]["settings"]["batch_size"] == 2);  // the command line's
    CHECK(j["training"]["timed_steps"] == 2);             // the file's
    CHECK(j["training"]["warmup_steps"] == 1);
    CHECK(j["inference"]["settings"]["dtype"] == "fp32");
    CHECK(j["context"]["config_file"] == config);
    std::vector<std::string> set;
    for (const auto& item : j["context"]["config"]) set.push_back(item["option"].get<std::string>());
    CHECK(set == std::vector<std::string>{"device", "infer-dtype", "model", "quiet", "steps", "warmup"});
    CHECK(j["context"]["config"][4]["value"] == "2");
    // The documented keys, with the two optional ones present here.
    std::set<std::string> paths;
    tvie::test::collect_key_paths(j["context"], "context", paths);
    const auto documented = tvie::test::documented_keys("context");
    for (const char* key : {"context.config_file", "context.config[].option", "context.config[].value"}) {
      INFO(key);
      CHECK(paths.count(key) == 1);
      CHECK(documented.optional.count(key) == 1);
    }
    std::ifstream in(html);
    const std::string page{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(page.find("<dt>config</dt><dd>" + config + ": device=cpu, infer-dtype=fp32") != std::string::npos);
  }

  SECTION("an array is joined by commas, as on the command line") {
    const std::string sweep =
        write("sweep.json",
              R"({"model": "mlp", "batch": [1, 2], "dtype": ["fp32"], "steps": 1, "warmup": 0, "device": "cpu"})");
    const Run r = run_cli("infer --config " + sweep + " --quiet --json " + json.string());
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    const auto j = read_json(json);
    CHECK(j["inference_sweep"]["settings"]["batch_sizes"] == nlohmann::json::array({1, 2}));
    CHECK(j["inference_sweep"]["rows"].size() == 2);
  }

  SECTION("bad files: exit code 2, one line naming --config (or the option, and the file), no output file") {
    const auto refused = [&](const std::string& text, const std::vector<std::string>& needles) {
      const std::string path = write("bad.json", text);
      const Run r = run_cli("compare --config " + path + " --json " + json.string());
      INFO(text << "\n" << r.out);
      CHECK(r.exit_code == 2);
      CHECK(line_count(r.out) == 1);
      for (const auto& needle : needles) CHECK(r.out.find(needle) != std::string::npos);
      CHECK_FALSE(fs::exists(json));
    };
    refused(R"({"model": "mlp",)", {"--config", "not JSON", "parse error at line"});
    refused("[1, 2]", {"--config", "a JSON object of options", "batch"});
    refused(R"({"batchsize": 8})", {"--config", "\"batchsize\"", "long options of tvie compare",
                                    "accumulate, allow-non-finite-loss, aoti, batch,"});
    refused(R"({"config": "other.json"})", {"--config", "\"config\"", "long options of tvie compare"});
    refused(R"({"lr": 1e400})", {"--config", "number overflow parsing '1e400'"});
    refused(R"({"quiet": "yes"})", {"--config", "\"quiet\": \"yes\"", "true or false"});
    refused(R"({"batch": {"n": 8}})", {"--config", "\"batch\"", "a string, a number, true or false, or an array"});
    refused(R"({"batch": [8, null]})", {"--config", "\"batch\": [8,null]", "an array of strings and numbers"});
    refused(R"({"batch": true})", {"--config", "\"batch\": true", "a value for --batch (not a flag)"});
    refused(R"({"batch": "many"})", {"--config", "\"batch\": \"many\"", "a value --batch takes"});
    refused(R"({"model": "mlp", "batch": -3})", {"--batch (from ", "bad.json)", "'-3'", "an integer >= 1"});
    refused(R"({"model": "vgg"})", {"--model (from ", "'vgg'", "accepted: mlp, cnn"});
    const Run missing = run_cli("compare --config " + (dir.path / "none.json").string());
    CHECK(missing.exit_code == 2);
    CHECK(line_count(missing.out) == 1);
    CHECK(missing.out.find("a readable JSON file") != std::string::npos);
  }
}

namespace {
// The bytes of a file ("" when it cannot be read), to check that a refused run left an input as it was.
std::string bytes_of(const fs::path& p) { return tvie::test::read_text(p); }
}  // namespace

TEST_CASE("cli: an output is never an input or another output: special files are refused, links written through",
          "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const auto write = [&](const std::string& name, const std::string& text) {
    const fs::path path = dir.path / name;
    std::ofstream(path) << text;
    return path;
  };
  const fs::path config = write("cfg.json", R"({"model": "mlp", "steps": 1, "warmup": 0, "device": "cpu"})");
  // A real report, as plan --from reads it.
  const fs::path report = dir.path / "report.json";
  REQUIRE(
      run_cli("compare --model mlp --steps 1 --warmup 0 --device cpu --quiet --json " + report.string()).exit_code ==
      0);
  const std::string config_bytes = bytes_of(config), report_bytes = bytes_of(report);
  struct Case {
    std::string args;
    std::vector<std::string> needles;
  };
  const fs::path out = dir.path / "out.json";
  const std::vector<Case> cases = {
      {"compare --config " + config.string() + " --json " + config.string(), {"--json", "it is the --config file"}},
      // The same file by another name: a relative path with a dot segment.
      {"compare --config " + config.string() + " --json " + (dir.path / "." / "cfg.json").string(),
       {"--json", "--config"}},
      {"plan --model mlp --no-host --cards t4 --from " + report.string() + " --json " + report.string(),
       {"--json", "it is the --from file"}},
      {"compare --model mlp --steps 1 --json " + out.string() + " --csv " + out.string(),
       {"--csv", "the json output is written there"}},
      {"compare --model mlp --steps 1 --json " + out.string() + " --html " + out.string(), {"--html", "json"}},
      {"train --model mlp --steps 1 --json " + out.string() + " --save-parameters " + out.string(),
       {"--save-parameters", "json"}},
      {"compare --model mlp --steps 1 --json /dev/null", {"--json", "not a regular file"}},
  };
  for (const auto& c : cases) {
    const Run r = run_cli(c.args);
    INFO("tvie " << c.args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    for (const auto& needle : c.needles) CHECK(r.out.find(needle) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    CHECK(bytes_of(config) == config_bytes);  // the inputs as they were
    CHECK(bytes_of(report) == report_bytes);
  }
  // A FIFO is refused before anything runs (a reader would wait on it; a rename would replace it).
  const fs::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const Run to_fifo = run_cli("compare --model mlp --steps 1 --json " + fifo.string());
  INFO(to_fifo.out);
  CHECK(to_fifo.exit_code == 2);
  CHECK(to_fifo.out.find("not a regular file") != std::string::npos);
  CHECK(fs::is_fifo(fifo));
  // A symbolic link is written through: the link stays, its file gets the report.
  const fs::path target = dir.path / "target.json", link = dir.path / "link.json";
  fs::create_symlink(target.filename(), link);
  const Run through = run_cli("compare --model mlp --steps 1 --warmup 0 --device cpu --quiet --json " + link.string());
  INFO(through.out);
  REQUIRE(through.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_regular_file(target));
  CHECK(read_json(link)["model"]["name"] == "mlp/tiny");
}

namespace {
// Whether a process is gone: no such process, or a zombie nobody has reaped yet.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = tvie::test::read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
}
}  // namespace

TEST_CASE("cli: a launcher stopped by a signal stops its ranks, and killed, it takes them with it", "[cli]") {
  for (const int sig : {SIGTERM, SIGINT, SIGKILL}) {
    INFO("signal " << sig);
    tvie::test::TempDir dir("tvie-cli");
    // Each rank writes its pid and sleeps a minute.
    const std::string rank_cmd = "echo $$ > " + dir.path.string() + "/rank$RANK.pid; exec sleep 60";
    const pid_t launcher = ::fork();
    REQUIRE(launcher >= 0);
    if (launcher == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(TVIE_CLI_PATH, TVIE_CLI_PATH, "launch", "--nproc", "2", "--grace-s", "2", "--", "sh", "-c",
              rank_cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::vector<pid_t> ranks;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (ranks.size() < 2 && std::chrono::steady_clock::now() < deadline) {
      ranks.clear();
      for (const char* name : {"rank0.pid", "rank1.pid"}) {
        const std::string text = tvie::test::read_text(dir.path / name);
        if (!text.empty() && text.back() == '\n') ranks.push_back(static_cast<pid_t>(std::stol(text)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(ranks.size() == 2);
    ::kill(launcher, sig);
    int status = 0;
    const auto stop_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(launcher, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < stop_by)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(process_gone(launcher));
    if (sig == SIGKILL) {
      CHECK(WIFSIGNALED(status));
    } else {
      REQUIRE(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 128 + sig);  // as a shell reports a process stopped by that signal
    }
    // No rank outlives its launcher (with SIGKILL: PR_SET_PDEATHSIG sends each SIGTERM).
    const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (const pid_t rank : ranks) {
      while (!process_gone(rank) && std::chrono::steady_clock::now() < gone_by)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CHECK(process_gone(rank));
      if (!process_gone(rank)) ::kill(rank, SIGKILL);
    }
  }
}

TEST_CASE("cli: non-finite numbers are refused with one line, by the option's own check", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path out = dir.path / "out.json";
  for (const std::string args :
       {"train --model mlp --lr inf", "train --model mlp --lr nan", "train --model mlp --lr 1e400",
        "train --model mlp --clip -inf", "compare --model mlp --weight-decay inf", "serve --model mlp --qps inf",
        "serve --model mlp --qps 1e400", "plan --model mlp --serve-qps inf", "plan --model mlp --p99-ms nan",
        "allreduce -f inf"}) {
    const Run r = run_cli(args + " --json " + out.string());
    INFO("tvie " << args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    CHECK(r.out.find("accepted: a finite number") != std::string::npos);
    const std::string option = args.substr(args.rfind(" -") + 1, args.rfind(' ') - args.rfind(" -") - 1);
    CHECK(r.out.find(option) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
  // The library refuses them too, for a program that sets the fields itself.
  tvie::TrainSettings t;
  t.learning_rate = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(tvie::validate(t), Catch::Contains("a finite number > 0"));
  tvie::ServeSettings s;
  s.target_qps = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(tvie::validate(s), Catch::Contains("a finite number > 0"));
}

TEST_CASE("cli: --config refuses a directory, a file over 1 MiB and values nested deeper than 16, with one line",
          "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path deep = dir.path / "deep.json", big = dir.path / "big.json";
  // {"batch": [[[[...]]]]} nested 100,000 deep: parsed whole, it crashed the tool (SIGSEGV).
  std::ofstream(deep) << "{\"batch\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  std::ofstream(big) << "{\"model\": \"" << std::string(2 << 20, 'x') << "\"}";
  const fs::path out = dir.path / "out.json";
  for (const auto& [file, needle] :
       {std::pair{deep.string(), "nested at most 16 deep"}, std::pair{big.string(), "at most 1 MiB"},
        std::pair{dir.path.string(), "this is a directory"}}) {
    const Run r = run_cli("compare --model mlp --steps 1 --config " + file + " --json " + out.string());
    INFO(file << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    CHECK(r.out.find("--config") != std::string::npos);
    CHECK(r.out.find(needle) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("cli: the bad inputs of tests/bad_inputs.txt, one row each: exit 2, one line naming the option, no file",
          "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path out = dir.path / "out.json";
  std::ifstream in(std::string(TVIE_SOURCE_DIR) + "/tests/bad_inputs.txt");
  REQUIRE(in);
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    REQUIRE(fields.size() >= 2);  // the arguments and at least one needle
    ++rows;
    const Run r = run_cli(fields[0] + " --json " + out.string());
    INFO("tvie " << fields[0] << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    for (size_t k = 1; k < fields.size(); ++k) CHECK(r.out.find(fields[k]) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    CHECK(fs::is_empty(dir.path));
  }
  CHECK(rows >= 26);  // the file read whole
}

TEST_CASE("cli: a diverging run says from which step, keeps the points, writes its report and exits 3", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path out = dir.path / "out.json";
  // AdamW's steps are about the learning rate: at 1e30 the weights overflow fp32 within a few steps.
  const std::string args = "train --model mlp --lr 1e30 --steps 4 --warmup 0 --loss-every 1 --json " + out.string();
  const Run r = run_cli(args);
  INFO(r.out);
  CHECK(r.exit_code == 3);
  CHECK(r.out.find("loss: NOT FINITE from step ") != std::string::npos);
  REQUIRE(fs::exists(out));
  const auto j = nlohmann::json::parse(tvie::test::read_text(out));
  const auto& loss = j.at("training").at("loss");
  const int64_t non_finite = loss.at("non_finite_steps").get<int64_t>();
  const int64_t first = loss.at("first_non_finite_step").get<int64_t>();
  CHECK(non_finite >= 1);
  CHECK(first >= 2);  // step 1's loss is the untrained model's
  // Every recorded step is a point (--loss-every 1: the ledger step 1, steps 3 to 6; step 2's loss is not kept),
  // the diverged ones as null (JSON has no inf or NaN).
  const auto& curve = loss.at("curve");
  CHECK(curve.size() == 5);
  int64_t nulls = 0;
  for (const auto& p : curve) nulls += p.at("loss").is_null();
  CHECK(nulls == non_finite);
  // Asked to go on: the same run exits 0.
  fs::remove(out);
  const Run allowed = run_cli(args + " --allow-non-finite-loss");
  CHECK(allowed.exit_code == 0);
  CHECK(fs::exists(out));
}

TEST_CASE("cli: allreduce sizes that round to one element count make one row", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path out = dir.path / "out.json";
  // fp32: 3 and 6 bytes are both one element; 12 and 24 bytes three and six.
  const Run r = run_cli("allreduce -b 3 -e 24 --iters 1 --warmup 0 --json " + out.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(tvie::test::read_text(out));
  std::vector<int64_t> counts;
  for (const auto& row : j.at("allreduce").at("rows")) counts.push_back(row.at("count").get<int64_t>());
  CHECK(counts == std::vector<int64_t>{1, 3, 6});
}

TEST_CASE("cli: an infer row whose predicted peak exceeds the free memory does not fit, unrun, and the sweep goes on",
          "[cli]") {
  const Run r = run_cli("infer --model mlp --batch 4,100000000000 --steps 1 --warmup 0 -q");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\n4      fp32") != std::string::npos);
  CHECK(r.out.find("100000000000 fp32  does not fit: inference mlp/tiny at batch 100000000000 does not fit on cpu: "
                   "predicted peak ") != std::string::npos);
}

TEST_CASE(
    "cli: infer's CSV counts int8's packs in parameter_bytes as the console does, errors as absolute and relative",
    "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path csv = dir.path / "sweep.csv", json = dir.path / "sweep.json";
  const Run r = run_cli("infer --model mlp --batch 2 --dtype fp32,int8 --steps 1 --warmup 0 -q --csv " + csv.string() +
                        " --json " + json.string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(csv);
  std::string header, fp32, int8;
  std::getline(in, header);
  std::getline(in, fp32);
  std::getline(in, int8);
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream split(line);
    for (std::string cell; std::getline(split, cell, ',');) out.push_back(cell);
    if (!line.empty() && line.back() == ',') out.emplace_back();
    return out;
  };
  const auto names = cells(header);
  const auto column = [&](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    REQUIRE(it != names.end());
    return static_cast<size_t>(it - names.begin());
  };
  const auto row = cells(int8);
  REQUIRE(row.size() == names.size());
  REQUIRE(cells(fp32).size() == names.size());
  CHECK(row[column("dtype")] == "int8");
  const auto j = nlohmann::json::parse(tvie::test::read_text(json));
  const auto& memory = j.at("inference_sweep").at("rows").at(1).at("result").at("memory");
  const int64_t parameters = memory.at("parameters").get<int64_t>();
  const int64_t packs = memory.at("packed_weights").get<int64_t>();
  CHECK(std::stoll(row[column("parameter_bytes")]) == parameters + packs);
  CHECK(std::stoll(row[column("packed_weight_bytes")]) == packs);
  const auto& accuracy = j.at("inference_sweep").at("rows").at(1).at("accuracy_vs_fp32");
  CHECK(std::stod(row[column("max_abs_error")]) == Approx(accuracy.at("max_abs_error").get<double>()));
  CHECK(std::stod(row[column("mean_abs_error")]) == Approx(accuracy.at("mean_abs_error").get<double>()));
  CHECK(std::stod(row[column("mean_abs_error_relative")]) ==
        Approx(accuracy.at("mean_abs_error").get<double>() / accuracy.at("reference_mean_abs").get<double>()));
  CHECK(cells(fp32)[column("max_abs_error")].empty());  // fp32 is the reference
}

TEST_CASE("cli: under tvie launch a bad input is printed once, by rank 0, and every rank exits 2", "[cli][dist]") {
  const Run r = run_cli("launch --nproc 2 -- tvie train --model mlp --batch 0");
  INFO(r.out);
  CHECK(r.exit_code == 2);
  size_t lines = 0;
  for (size_t at = r.out.find("--batch: got '0'"); at != std::string::npos; at = r.out.find("--batch: got '0'", at + 1))
    ++lines;
  CHECK(lines == 1);
}

TEST_CASE("cli: infer and decode --load-parameters run on the weights train --save-parameters wrote", "[cli]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path params = dir.path / "gpt-tiny.pt", trained = dir.path / "infer-trained.json",
                 fresh = dir.path / "infer-fresh.json", decoded = dir.path / "decode.json";
  const Run train = run_cli(
      "train --model gpt --preset tiny --batch 16 --steps 30 --warmup 0 --lr 3e-3 --device cpu "
      "--quiet --save-parameters " +
      params.string());
  INFO(train.out);
  REQUIRE(train.exit_code == 0);
  REQUIRE(fs::exists(params));
  const std::string sweep =
      "infer --model gpt --preset tiny --batch 4 --dtype fp32,int8-weight-only --steps 1 "
      "--warmup 0 --device cpu --quiet --json ";
  const Run on_trained = run_cli(sweep + trained.string() + " --load-parameters " + params.string());
  INFO(on_trained.out);
  REQUIRE(on_trained.exit_code == 0);
  CHECK(on_trained.out.find("(read from " + params.string() + ")") != std::string::npos);
  REQUIRE(run_cli(sweep + fresh.string()).exit_code == 0);
  const auto t = read_json(trained)["inference_sweep"], f = read_json(fresh)["inference_sweep"];
  CHECK(t["weights"] == "read from " + params.string());
  CHECK(f["weights"] == "fresh, seed 0");
  // The same inputs through other weights: the quantised row's error against fp32 is not the fresh weights' one.
  CHECK(t["rows"][1]["accuracy_vs_fp32"]["mean_abs_error"] != f["rows"][1]["accuracy_vs_fp32"]["mean_abs_error"]);
  CHECK(t["rows"][1]["result"]["scheme"].get<std::string>().find("_weight_int8pack_mm") != std::string::npos);

  const Run decode = run_cli(
      "decode --model gpt --preset tiny --prompt 8 --new-tokens 4 --repetitions 1 --device cpu "
      "--quiet --json " +
      decoded.string() + " --load-parameters " + params.string());
  INFO(decode.out);
  REQUIRE(decode.exit_code == 0);
  CHECK(decode.out.find("fp32 weights, fp32 KV cache") != std::string::npos);
  CHECK(read_json(decoded)["decoding"]["weights"] == "read from " + params.string());

  // Another model's parameters, and a file that is not a tensor list: one line, exit 2, the option named.
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"infer --model mlp --steps 1 --load-parameters " + params.string(), "wrote for mlp/tiny ("},
           {"decode --model llama --preset tiny --load-parameters " + params.string(), "wrote for llama/tiny ("},
           {"infer --model gpt --preset tiny --steps 1 --load-parameters " + trained.string(), "cannot be read"},
           {"infer --model gpt --preset tiny --steps 1 --find-max-batch --load-parameters " + params.string(),
            "--find-max-batch"}}) {
    const Run r = run_cli(args);
    INFO("tvie " << args << "\n" << r.out);
    CHECK(r.exit_code == 2);
    CHECK(line_count(r.out) == 1);
    CHECK(r.out.find("--load-parameters") != std::string::npos);
    CHECK(r.out.find(needle) != std::string::npos);
  }
}

TEST_CASE("cli: train and decode say their fractions of this machine's card, from their own figures", "[cli][report]") {
  tvie::test::TempDir dir("tvie-cli");
  const fs::path trained = dir.path / "train.json", decoded = dir.path / "decode.json";
  const Run train = run_cli("train --model mlp --batch 8 --steps 2 --warmup 0 --device cpu --json " + trained.string());
  INFO(train.out);
  REQUIRE(train.exit_code == 0);
  const auto t = read_json(trained)["training"];
  const auto& f = t["of_card"];
  CHECK(f["peak_field"] == "fp32_tflops");
  CHECK(f["model_tflops"].get<double>() == Approx(t["throughput"]["achieved_tflops"].get<double>()));
  const bool host =
      tvie::local_host_accelerator().has_value();  // this CPU has a class in the catalog and a known clock
  if (host) {
    CHECK(f["card"] == "host");
    CHECK(f["why_none"] == "");
    CHECK(f["peak_fraction"].get<double>() == Approx(f["model_tflops"].get<double>() / f["peak_tflops"].get<double>()));
    CHECK(train.out.find("  of the peak") != std::string::npos);
    CHECK(train.out.find("of the card: this machine's CPU (") != std::string::npos);
  } else {
    CHECK(f["card"] == "");
    CHECK(f["why_none"] != "");
    CHECK(f["peak_fraction"].is_null());
    CHECK(train.out.find("of the card: none (") != std::string::npos);
  }

  const Run decode = run_cli(
      "decode --model gpt --preset tiny --batch 2 --prompt 8 --new-tokens 6 --repetitions 1 --device cpu --json " +
      decoded.string());
  INFO(decode.out);
  REQUIRE(decode.exit_code == 0);
  const auto d = read_json(decoded)["decoding"];
  const auto& step = d["of_card"]["decoding"];
  // The weights and the 11 positions a step attends to on average (8 + 6 / 2) of the 13 the cache holds.
  CHECK(step["bytes"].get<double>() ==
        Approx(d["memory"]["parameters"].get<double>() + d["memory"]["kv_cache"].get<double>() * 11.0 / 13.0));
  CHECK(d["of_card"]["prefill"]["bytes"].get<double>() == d["memory"]["parameters"].get<double>());
  if (host) {
    CHECK(step["bandwidth_fraction"].get<double>() ==
          Approx(step["bytes"].get<double>() / (d["tpot_ms"]["mean"].get<double>() / 1e3) /
                 (step["bandwidth_gbs"].get<double>() * 1e9)));
    CHECK(decode.out.find("of the card: prefill ") != std::string::npos);
  }
}
