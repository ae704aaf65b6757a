// Linear extrapolation of slices to the full depth (tvie/slices.hpp).
#include <tvie/slices.hpp>

#include <cmath>

#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

void validate(const SliceSettings& s, int64_t full_layers) {
  if (s.layers_1 < 1 || s.layers_2 <= s.layers_1 || s.layers_2 > full_layers)
    throw InvalidArgument("slices.layers", cat(s.layers_1, ",", s.layers_2),
                          cat("two block counts K1,K2 with 1 <= K1 < K2 <= ", full_layers, " (the preset's blocks)"));
}

double extrapolate(double at_k1, double at_k2, const SliceSettings& s, int64_t layers) {
  const double per_block = (at_k2 - at_k1) / static_cast<double>(s.layers_2 - s.layers_1);
  return at_k1 + static_cast<double>(layers - s.layers_1) * per_block;
}

int64_t extrapolate(int64_t at_k1, int64_t at_k2, const SliceSettings& s, int64_t layers) {
  return std::llround(extrapolate(static_cast<double>(at_k1), static_cast<double>(at_k2), s, layers));
}

TrainingMemory extrapolate(const TrainingMemory& a, const TrainingMemory& b, const SliceSettings& s, int64_t layers) {
  auto x = [&](int64_t TrainingMemory::*field) { return extrapolate(a.*field, b.*field, s, layers); };
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
  m.peak_reserved = a.peak_reserved < 0 || b.peak_reserved < 0 ? -1 : x(&TrainingMemory::peak_reserved);
  m.batch = x(&TrainingMemory::batch);
  return m;
}

InferenceMemory extrapolate(const InferenceMemory& a, const InferenceMemory& b, const SliceSettings& s,
                            int64_t layers) {
  auto x = [&](int64_t InferenceMemory::*field) { return extrapolate(a.*field, b.*field, s, layers); };
  InferenceMemory m;
  m.parameters = x(&InferenceMemory::parameters);
  m.packed_weights = x(&InferenceMemory::packed_weights);
  m.activations = x(&InferenceMemory::activations);
  m.other = x(&InferenceMemory::other);
  m.peak = x(&InferenceMemory::peak);
  m.peak_reserved = a.peak_reserved < 0 || b.peak_reserved < 0 ? -1 : x(&InferenceMemory::peak_reserved);
  m.batch = x(&InferenceMemory::batch);
  return m;
}

double extrapolate_time(double at_k1, double at_k2, const SliceSettings& s, int64_t layers) {
  return at_k2 > at_k1 ? extrapolate(at_k1, at_k2, s, layers) : -1;
}

}  // namespace tvie
