#include <catch2/catch.hpp>

#include <fstream>

#include "helpers.hpp"

using namespace tvie;

namespace {
std::string field_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.field();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("validate names the field of every bad setting", "[settings]") {
  const c10::Device cpu(c10::kCPU);
  CompareSettings s;
  REQUIRE_NOTHROW(validate(s, cpu));
  auto with = [&](auto change) {
    CompareSettings c = s;
    change(c);
    return field_of([&] { validate(c, cpu); });
  };
  // The model and the device are not settings: the zoo and resolve_device name them.
  CHECK(field_of([] { make_zoo_workload("vgg", "tiny"); }) == "model");
  CHECK(field_of([] { make_zoo_workload("gpt", "huge"); }) == "preset");
  CHECK(field_of([] { resolve_device("tpu", "device"); }) == "device");
  CHECK(field_of([&] { run_compare(*make_zoo_workload("mlp", "tiny"), s, {"tpu"}); }) == "device");
  CHECK(with([](auto& c) { c.train.batch_size = 0; }) == "train.batch_size");
  CHECK(with([](auto& c) { c.train.batch_size = -3; }) == "train.batch_size");
  CHECK(with([](auto& c) { c.train.steps = 0; }) == "train.steps");
  CHECK(with([](auto& c) { c.train.warmup_steps = -1; }) == "train.warmup_steps");
  CHECK(with([](auto& c) { c.train.accumulate = 3; }) == "train.accumulate");  // 8 % 3 != 0
  CHECK(with([](auto& c) { c.train.learning_rate = 0; }) == "train.learning_rate");
  CHECK(with([](auto& c) { c.infer.batch_size = 0; }) == "infer.batch_size");
  CHECK(with([](auto& c) { c.infer.dtype = InferenceDtype::fp16; }) == "infer.dtype");  // fp16 needs CUDA
}

TEST_CASE("error messages list the accepted values", "[settings]") {
  try {
    parse_optimizer("lion");
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()) == "train.optimizer: got 'lion'; accepted: sgd, sgd-momentum, adam, adamw");
  }
  try {
    make_zoo_workload("gpt", "xl");
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "preset");
    CHECK(e.accepted() == "tiny, small, gpt2-small (for gpt)");
  }
  CHECK(parse_inference_dtype("bf16") == InferenceDtype::bf16);
  CHECK(parse_optimizer("sgd-momentum") == OptimizerKind::sgd_momentum);
}

TEST_CASE("device strings resolve or fail with the accepted values", "[settings]") {
  CHECK(resolve_device("cpu").is_cpu());
  CHECK(resolve_device("auto").is_cuda() == cuda_available());
  CHECK_THROWS_AS(resolve_device("gpu"), InvalidArgument);
  CHECK_THROWS_AS(resolve_device("cuda:x"), InvalidArgument);
  CHECK_THROWS_AS(resolve_device("cuda:"), InvalidArgument);
  if (!cuda_available()) {
    CHECK_THROWS_AS(resolve_device("cuda"), DeviceUnavailable);
    CHECK_THROWS_AS(resolve_device("cuda:0"), DeviceUnavailable);
  } else {
    CHECK(resolve_device("cuda:0").is_cuda());
    CHECK_THROWS_AS(resolve_device("cuda:99"), DeviceUnavailable);
  }
}

TEST_CASE("oneDNN's ISA limit takes away the features above it", "[settings]") {
  const std::vector<std::string> all{"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8"};
  using V = std::vector<std::string>;
  CHECK(cpu_features_under_onednn_limit(all, "") == all);
  CHECK(cpu_features_under_onednn_limit(all, "DEFAULT") == all);
  CHECK(cpu_features_under_onednn_limit(all, "AVX512_CORE_AMX") == all);
  CHECK(cpu_features_under_onednn_limit(all, "avx10_1_512_amx") == all);
  CHECK(cpu_features_under_onednn_limit(all, "not-an-isa") == all);  // oneDNN ignores what it does not know
  CHECK(cpu_features_under_onednn_limit(all, "AVX512_CORE_BF16") == V{"avx2", "avx512f", "avx512_bf16"});
  CHECK(cpu_features_under_onednn_limit(all, "AVX512_CORE_FP16") == V{"avx2", "avx512f", "avx512_bf16"});
  CHECK(cpu_features_under_onednn_limit(all, "AVX512_CORE_VNNI") == V{"avx2", "avx512f"});
  CHECK(cpu_features_under_onednn_limit(all, "avx512_core") == V{"avx2", "avx512f"});
  CHECK(cpu_features_under_onednn_limit(all, "AVX2") == V{"avx2"});
  CHECK(cpu_features_under_onednn_limit(all, "AVX2_VNNI_2") == V{"avx2"});
  CHECK(cpu_features_under_onednn_limit(all, "SSE41").empty());
  CHECK(cpu_features_under_onednn_limit({"avx2"}, "AVX512_CORE_BF16") == V{"avx2"});  // a limit adds nothing
  HostInfo h;
  h.cpu_features = all;
  CHECK(cpu_features_text(h) == "avx2 avx512f avx512_bf16 amx_bf16 amx_int8");
  h.onednn_isa_limit = "AVX2";
  h.cpu_features_usable = {"avx2"};
  CHECK(cpu_features_text(h) ==
        "avx2 avx512f avx512_bf16 amx_bf16 amx_int8; ONEDNN_MAX_CPU_ISA=AVX2: oneDNN uses avx2");
}

TEST_CASE("the native inference dtype follows the CPU's bf16 units, and compare says why", "[settings]") {
  const c10::Device cpu(c10::kCPU);
  // An AVX2-only CPU (no bf16 units): a bf16 copy would be emulated, so fp32.
  const auto avx2 = native_inference_dtype(cpu, {"avx2"});
  CHECK(avx2.dtype == InferenceDtype::fp32);
  CHECK_THAT(avx2.reason, Catch::Contains("no bf16 units"));
  CHECK(native_inference_dtype(cpu, {}).dtype == InferenceDtype::fp32);
  CHECK(native_inference_dtype(cpu, {"avx2", "avx512f"}).dtype == InferenceDtype::fp32);
  // avx512_bf16 or AMX: bf16.
  CHECK(native_inference_dtype(cpu, {"avx2", "avx512f", "avx512_bf16"}).dtype == InferenceDtype::bf16);
  const auto amx = native_inference_dtype(cpu, {"avx2", "amx_bf16"});
  CHECK(amx.dtype == InferenceDtype::bf16);
  CHECK_THAT(amx.reason, Catch::Contains("amx_bf16"));
  // This machine: the choice follows its own features, and compare reports it.
  const auto here = native_inference_dtype(cpu);
  CompareSettings s;
  s.train = test::small_train();
  s.infer = test::small_infer();
  s.infer_dtype_auto = true;
  const auto mlp = make_zoo_workload("mlp", "tiny");
  const auto r = run_compare(*mlp, s, {"cpu"});
  CHECK(r.inference.dtype == here.dtype);
  CHECK(r.inference_dtype_choice == "auto: " + here.reason);
  s.infer_dtype_auto = false;
  CHECK(run_compare(*mlp, s, {"cpu"}).inference_dtype_choice == "given");
}

TEST_CASE("every enum's names parse back to their values, and unknown names list the accepted ones", "[settings]") {
  for (const auto& name : optimizer_names()) CHECK(to_string(parse_optimizer(name)) == name);
  for (const auto& name : inference_dtype_names()) CHECK(to_string(parse_inference_dtype(name)) == name);
  for (const auto& name : train_precision_names()) CHECK(to_string(parse_train_precision(name)) == name);
  CHECK(optimizer_names() == std::vector<std::string>{"sgd", "sgd-momentum", "adam", "adamw"});
  CHECK(inference_dtype_names() == std::vector<std::string>{"fp32", "fp16", "bf16", "int8", "fp8", "int8-weight-only"});
  CHECK(train_precision_names() == std::vector<std::string>{"fp32", "amp-bf16", "amp-fp16", "bf16"});
  for (const char* name : {"single-stream", "server", "offline"}) CHECK(to_string(parse_scenario(name)) == name);
  for (const char* name : {"none", "freeze", "optimize"}) CHECK(to_string(parse_script_fusion(name)) == name);
  for (const char* name : {"auto", "nccl", "gloo"}) CHECK(to_string(parse_dist_backend(name)) == name);
  CHECK(nn::to_string(nn::LinearWeights::int8_cuda) == "int8 (at::_int_mm)");
  try {
    parse_dist_backend("mpi");
    FAIL("mpi accepted");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "dist.backend");
    CHECK(e.accepted() == "auto (nccl for CUDA, gloo for CPU), nccl, gloo");
  }
  try {
    parse_train_precision("fp8");
    FAIL("fp8 training accepted");
  } catch (const InvalidArgument& e) {
    CHECK(e.accepted() == "fp32, amp-bf16, amp-fp16, bf16");
  }
}

TEST_CASE("an options file: each key's value as the command line spells it, sorted by key, and bad files name the key",
          "[settings][pure]") {
  tvie::test::TempDir dir("tvie-options");
  const auto file = [&](const std::string& text) {
    const auto path = (dir.path / "options.json").string();
    std::ofstream(path) << text;
    return path;
  };
  const auto entries =
      read_options_file(file(R"({"steps": 3, "model": "gpt", "lr": 0.0005, "batch": [1, "2", 4], "quiet": false})"));
  REQUIRE(entries.size() == 5);
  const std::vector<std::string> keys{entries[0].key, entries[1].key, entries[2].key, entries[3].key, entries[4].key};
  CHECK(keys == std::vector<std::string>{"batch", "lr", "model", "quiet", "steps"});
  CHECK(entries[0].text == "1,2,4");
  CHECK(entries[0].json == R"([1,"2",4])");
  CHECK(entries[1].text == "0.0005");
  CHECK(entries[2].text == "gpt");
  CHECK(entries[3].boolean);
  CHECK(entries[3].text == "false");
  CHECK_FALSE(entries[4].boolean);
  CHECK(entries[4].text == "3");
  CHECK(read_options_file(file("{}")).empty());

  const auto message = [&](const std::string& text) {
    try {
      read_options_file(file(text));
    } catch (const InvalidArgument& e) {
      CHECK(e.field() == "config");
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(message(R"({"batch": 8,})"), Catch::Contains("not JSON: parse error at line 1, column 13"));
  CHECK_THAT(message("8"), Catch::Contains("a JSON object of options"));
  CHECK_THAT(message(R"({"batch": null})"), Catch::Contains("options.json: \"batch\": null'"));
  CHECK_THAT(message(R"({"batch": []})"), Catch::Contains("an array of strings and numbers"));
  CHECK_THAT(message(R"({"batch": [[1]]})"), Catch::Contains("\"batch\": [[1]]"));
  CHECK_THAT(message(R"({"batch": {"a": 1}})"), Catch::Contains("a string, a number, true or false"));
  CHECK_THROWS_WITH(read_options_file((dir.path / "none.json").string()), Catch::Contains("a readable JSON file"));
}

TEST_CASE("write_parameters then read_parameters gives the module's parameters back, in a fresh module", "[settings]") {
  test::TempDir dir;
  const auto w = make_zoo_workload("llama", "tiny");
  torch::manual_seed(5);
  const auto module = w->make_module();
  const std::string path = (dir.path / "llama.pt").string();
  write_parameters(*module, path);
  torch::manual_seed(6);  // a fresh module of other weights: read_parameters must overwrite them all
  const auto read = read_parameters(*w, path);
  const auto a = module->parameters(), b = read->parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(torch::equal(a[i], b[i]));
  // A model with buffers: BatchNorm's running statistics come back with the parameters.
  const auto resnet = make_zoo_workload("resnet", "tiny");
  const auto trained = resnet->make_module();
  {
    torch::NoGradGuard no_grad;
    for (auto& b : trained->buffers()) b.add_(1);  // as a training step's statistics update would
  }
  const std::string resnet_path = (dir.path / "resnet.pt").string();
  write_parameters(*trained, resnet_path);
  const auto resnet_read = read_parameters(*resnet, resnet_path);
  const auto ba = trained->buffers(), bb = resnet_read->buffers();
  REQUIRE(ba.size() == bb.size());
  REQUIRE_FALSE(ba.empty());
  for (size_t i = 0; i < ba.size(); ++i) CHECK(torch::equal(ba[i], bb[i]));
  try {
    read_parameters(*make_zoo_workload("gpt", "tiny"), path, "load_parameters");
    FAIL("gpt tiny read llama tiny's parameters");
  } catch (const InvalidArgument& e) {
    CHECK(e.field() == "load_parameters");
    CHECK_THAT(e.accepted(), Catch::Contains("tvie train --save-parameters"));
  }
}
