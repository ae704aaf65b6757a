// The ledger's vocabulary: the spellings of its enums (tvie/ledger.hpp).
#include <tvie/ledger.hpp>

#include "core/enum_names.hpp"

namespace tvie {

namespace {

constexpr detail::EnumTable<OptimizerKind, 4> kOptimizers{{{OptimizerKind::sgd, "sgd"},
                                                           {OptimizerKind::sgd_momentum, "sgd-momentum"},
                                                           {OptimizerKind::adam, "adam"},
                                                           {OptimizerKind::adamw, "adamw"}}};
constexpr detail::EnumTable<InferenceDtype, 6> kInferenceDtypes{
    {{InferenceDtype::fp32, "fp32"},
     {InferenceDtype::fp16, "fp16"},
     {InferenceDtype::bf16, "bf16"},
     {InferenceDtype::int8, "int8"},
     {InferenceDtype::fp8, "fp8"},
     {InferenceDtype::int8_weight_only, "int8-weight-only"}}};
constexpr detail::EnumTable<TrainPrecision, 4> kTrainPrecisions{{{TrainPrecision::fp32, "fp32"},
                                                                 {TrainPrecision::amp_bf16, "amp-bf16"},
                                                                 {TrainPrecision::amp_fp16, "amp-fp16"},
                                                                 {TrainPrecision::bf16, "bf16"}}};

}  // namespace

std::string to_string(OptimizerKind kind) { return detail::name_of(kOptimizers, kind); }
std::string to_string(InferenceDtype dtype) { return detail::name_of(kInferenceDtypes, dtype); }
std::string to_string(TrainPrecision precision) { return detail::name_of(kTrainPrecisions, precision); }
std::vector<std::string> train_precision_names() { return detail::names(kTrainPrecisions); }
std::vector<std::string> optimizer_names() { return detail::names(kOptimizers); }
std::vector<std::string> inference_dtype_names() { return detail::names(kInferenceDtypes); }

TrainPrecision parse_train_precision(const std::string& text, const std::string& field) {
  return detail::parse(kTrainPrecisions, text, field);
}
OptimizerKind parse_optimizer(const std::string& text, const std::string& field) {
  return detail::parse(kOptimizers, text, field);
}
InferenceDtype parse_inference_dtype(const std::string& text, const std::string& field) {
  return detail::parse(kInferenceDtypes, text, field);
}

int64_t optimizer_state_multiplier(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return 0;  // stateless
    case OptimizerKind::sgd_momentum:
      return 1;  // momentum buffer
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return 2;  // exp_avg and exp_avg_sq
  }
  return 0;
}

const char* to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::matmul:
      return "matmul";
    case OpClass::convolution:
      return "convolution";
    case OpClass::attention:
      return "attention";
    case OpClass::normalization:
      return "normalization";
    case OpClass::elementwise:
      return "elementwise";
  }
  return "?";
}

}  // namespace tvie
