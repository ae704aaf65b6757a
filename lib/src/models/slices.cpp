// Linear extrapolation of slices to the full model (tvie/slices.hpp).
#include <tvie/slices.hpp>

#include <algorithm>
#include <cmath>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// "1 block", "2 blocks, vocabulary 16032", "blocks per stage 2,1,1,1" for the given axis values.
std::string describe(const SlicePlan& plan, const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  std::vector<std::string> stages;
  for (size_t d = 0; d < plan.axes.size(); ++d) {
    const auto& a = plan.axes[d];
    const int64_t v = values[d];
    if (a.kind == SliceAxisKind::stage_blocks)
      stages.push_back(cat(v));
    else if (a.kind == SliceAxisKind::blocks)
      parts.push_back(cat(v, v == 1 ? " block" : " blocks"));
    else
      parts.push_back(cat(a.name(), " ", v));
  }
  if (!stages.empty()) parts.insert(parts.begin(), "blocks per stage " + join(stages, ","));
  return join(parts, ", ");
}

}  // namespace

std::vector<int64_t> SlicePlan::point(size_t i) const {
  std::vector<int64_t> p;
  for (const auto& a : axes) p.push_back(a.base);
  if (i > 0) p.at(i - 1) = axes.at(i - 1).step;
  return p;
}

std::string SlicePlan::label(size_t i) const { return describe(*this, point(i)); }

std::string SlicePlan::full_label() const {
  std::vector<int64_t> full;
  for (const auto& a : axes) full.push_back(a.full);
  return describe(*this, full);
}

std::string SliceAxis::name() const {
  switch (kind) {
    case SliceAxisKind::blocks:
      return "blocks";
    case SliceAxisKind::stage_blocks:
      return cat("stage ", stage, " blocks");
    case SliceAxisKind::vocabulary:
      return "vocabulary";
  }
  return "?";
}

int64_t SlicePlan::value(size_t i, SliceAxisKind kind, int64_t otherwise, int64_t stage) const {
  for (size_t d = 0; d < axes.size(); ++d)
    if (axes[d].kind == kind && (kind != SliceAxisKind::stage_blocks || axes[d].stage == stage)) return point(i)[d];
  return otherwise;
}

SlicePlan SlicePlan::for_inference() const {
  SlicePlan out;
  for (const auto& a : axes)
    if (a.in_inference()) out.axes.push_back(a);
  return out;
}

void validate(const SlicePlan& plan) {
  if (plan.axes.empty())
    throw InvalidArgument("slices.layers", "no axis", "a model with blocks: gpt, bert, llama, resnet");
  for (const auto& a : plan.axes) {
    if (a.base >= 1 && a.base < a.step && a.step <= a.full) continue;
    if (a.kind == SliceAxisKind::vocabulary)
      throw InvalidArgument("slices.vocab", cat(a.base, ",", a.step),
                            cat("two vocabulary sizes V1,V2 with 1 <= V1 < V2 <= ", a.full, " (the preset's)"));
    throw InvalidArgument(
        "slices.layers", cat(a.base, ",", a.step),
        cat("two block counts K1,K2 with 1 <= K1 < K2 <= ", a.full, " (the preset's ", a.name(), ")"));
  }
}

double extrapolate(const std::vector<double>& x, const SlicePlan& plan) {
  if (x.size() != plan.slice_count())
    throw InvalidArgument("slices", cat(x.size(), " figures"), cat(plan.slice_count(), " (one per slice)"));
  double out = x[0];
  for (size_t d = 0; d < plan.axes.size(); ++d) {
    const auto& a = plan.axes[d];
    const double per_unit = (x[d + 1] - x[0]) / static_cast<double>(a.step - a.base);
    out += static_cast<double>(a.full - a.base) * per_unit;
  }
  return out;
}

int64_t extrapolate(const std::vector<int64_t>& x, const SlicePlan& plan) {
  return std::llround(extrapolate(std::vector<double>(x.begin(), x.end()), plan));
}

namespace {

template <class Memory>
int64_t extrapolate_field(const std::vector<Memory>& at, const SlicePlan& plan, int64_t Memory::*field) {
  std::vector<int64_t> values;
  for (const auto& m : at) values.push_back(m.*field);
  return extrapolate(values, plan);
}

// A field that is -1 (not known) in any slice stays -1.
template <class Memory>
int64_t extrapolate_known(const std::vector<Memory>& at, const SlicePlan& plan, int64_t Memory::*field) {
  const bool known = std::all_of(at.begin(), at.end(), [&](const Memory& s) { return s.*field >= 0; });
  return known ? extrapolate_field(at, plan, field) : -1;
}

}  // namespace

TrainingMemory extrapolate(const std::vector<TrainingMemory>& at, const SlicePlan& plan) {
  auto x = [&](int64_t TrainingMemory::*field) { return extrapolate_field(at, plan, field); };
  TrainingMemory m;
  m.parameters = x(&TrainingMemory::parameters);
  m.gradients = x(&TrainingMemory::gradients);
  m.optimizer_state = x(&TrainingMemory::optimizer_state);
  m.activations = x(&TrainingMemory::activations);
  m.weight_copies = x(&TrainingMemory::weight_copies);
  m.loss_scaler = x(&TrainingMemory::loss_scaler);
  m.comm_buffers = x(&TrainingMemory::comm_buffers);
  m.other = x(&TrainingMemory::other);
  m.peak = x(&TrainingMemory::peak);
  m.peak_reserved = extrapolate_known(at, plan, &TrainingMemory::peak_reserved);
  m.batch = x(&TrainingMemory::batch);
  return m;
}

InferenceMemory extrapolate(const std::vector<InferenceMemory>& at, const SlicePlan& plan) {
  auto x = [&](int64_t InferenceMemory::*field) { return extrapolate_field(at, plan, field); };
  InferenceMemory m;
  m.parameters = x(&InferenceMemory::parameters);
  m.packed_weights = x(&InferenceMemory::packed_weights);
  m.packed_weights_measured =
      std::all_of(at.begin(), at.end(), [](const InferenceMemory& s) { return s.packed_weights_measured; });
  m.activations = x(&InferenceMemory::activations);
  m.other = x(&InferenceMemory::other);
  m.peak = x(&InferenceMemory::peak);
  m.peak_reserved = extrapolate_known(at, plan, &InferenceMemory::peak_reserved);
  m.batch = x(&InferenceMemory::batch);
  return m;
}

GenerationMemory extrapolate(const std::vector<GenerationMemory>& at, const SlicePlan& plan) {
  auto x = [&](int64_t GenerationMemory::*field) { return extrapolate_known(at, plan, field); };
  GenerationMemory m;
  m.weights = x(&GenerationMemory::weights);
  m.packed_weights = x(&GenerationMemory::packed_weights);
  m.kv_cache = x(&GenerationMemory::kv_cache);
  m.prompt = x(&GenerationMemory::prompt);
  m.working_set = x(&GenerationMemory::working_set);
  m.peak = x(&GenerationMemory::peak);
  return m;
}

double extrapolate_time(const std::vector<double>& x, const SlicePlan& plan) {
  for (size_t i = 1; i < x.size(); ++i)
    if (!(x[i] > x[0])) return -1;
  return extrapolate(x, plan);
}

}  // namespace tvie
