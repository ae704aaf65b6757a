#include <catch2/catch.hpp>

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
  CompareSettings s;
  s.device = "cpu";
  REQUIRE_NOTHROW(validate(s));
  auto with = [&](auto change) {
    CompareSettings c = s;
    change(c);
    return field_of([&] { validate(c); });
  };
  CHECK(with([](auto& c) { c.model = "resnet"; }) == "model");
  CHECK(with([](auto& c) { c.preset = "huge"; }) == "preset");
  CHECK(with([](auto& c) { c.device = "tpu"; }) == "device");
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
