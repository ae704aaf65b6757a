// Slices of big models: the model built at its real width with K1 and then K2 blocks, both measured, and every
// ledger category and the step time extrapolated linearly in the block count to the preset's depth L:
//
//   x(L) = x(K1) + (L - K1) * (x(K2) - x(K1)) / (K2 - K1)
//
// The per-block increment comes from the two slices; what does not repeat (embeddings, head, final norm, the
// loss) is in both slices once and so is counted once. The full model is not run.
#pragma once

#include <cstdint>

#include <tvie/memory.hpp>

namespace tvie {

struct SliceSettings {
  int64_t layers_1 = 1;  // K1 blocks
  int64_t layers_2 = 2;  // K2 blocks (> K1)
};

// Throws InvalidArgument("slices.layers", ...) unless 1 <= K1 < K2 <= full_layers.
void validate(const SliceSettings& settings, int64_t full_layers);

double extrapolate(double at_k1, double at_k2, const SliceSettings& slices, int64_t layers);
int64_t extrapolate(int64_t at_k1, int64_t at_k2, const SliceSettings& slices, int64_t layers);
// Every category (peak_reserved: -1 stays -1).
TrainingMemory extrapolate(const TrainingMemory& at_k1, const TrainingMemory& at_k2, const SliceSettings& slices,
                           int64_t layers);
InferenceMemory extrapolate(const InferenceMemory& at_k1, const InferenceMemory& at_k2, const SliceSettings& slices,
                            int64_t layers);
// A mean time extrapolated the same way; -1 when the K2 slice is not slower than the K1 one (timing noise).
double extrapolate_time(double at_k1, double at_k2, const SliceSettings& slices, int64_t layers);

}  // namespace tvie
