// Slices of big models: the model built at its real width with fewer of what it repeats (transformer blocks,
// the blocks of each ResNet stage, vocabulary entries), each slice measured, and every ledger category and the
// step time extrapolated linearly to the preset's sizes. A plan has one or more axes; along axis d the model
// has `base` units in every slice but its own, where it has `step`. With x0 the base slice's figure and xd
// the figure of axis d's slice:
//
//   x(full) = x0 + sum over axes d of (full_d - base_d) * (xd - x0) / (step_d - base_d)
//
// One axis (blocks K1, K2) is the two-slice case: x(L) = x(K1) + (L - K1) * (x(K2) - x(K1)) / (K2 - K1). What
// repeats along no axis (position embeddings, final norm, the loss) is in every slice once and so is counted
// once. The axes are taken as independent (no term in blocks x vocabulary: a block's tensors do not depend on
// the vocabulary, the embedding and head do not depend on the blocks). The full model is not run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tvie/ledger.hpp>
#include <tvie/memory.hpp>
#include <tvie/workload.hpp>

namespace tvie {

// What the user asks for (--slice-layers K1,K2 [--slice-vocab V1,V2]).
struct SliceSettings {
  int64_t layers_1 = 1;  // K1 blocks (ResNet: per stage, at most the stage's)
  int64_t layers_2 = 2;  // K2 blocks (> K1)
  int64_t vocab_1 = 0;   // V1 vocabulary entries in every slice (0: the real vocabulary, not sliced)
  int64_t vocab_2 = 0;   // V2 (> V1) in the vocabulary's own slice
};

// What an axis counts: a transformer's blocks, the blocks of one ResNet stage, vocabulary entries.
enum class SliceAxisKind { blocks, stage_blocks, vocabulary };

// One axis the model repeats along.
struct SliceAxis {
  SliceAxisKind kind = SliceAxisKind::blocks;
  int64_t stage = 0;         // stage_blocks: which stage, from 1
  int64_t full = 0;          // the preset's value
  int64_t base = 0;          // the value in every slice but the axis's own
  int64_t step = 0;          // the value in the axis's own slice (> base)
  std::string name() const;  // "blocks", "stage 2 blocks", "vocabulary"
  // Sliced in inference too. The vocabulary is not: the inference working set is a maximum over the forward
  // (the largest layer's temporaries), not a sum, and where the head's logits overtake a block's temporaries
  // it bends; inference holds no gradients or optimizer state, so its slices keep the real vocabulary.
  bool in_inference() const { return kind != SliceAxisKind::vocabulary; }
};
struct SlicePlan {
  std::vector<SliceAxis> axes;
  size_t slice_count() const { return axes.size() + 1; }  // the base slice, then one per axis
  // The value of every axis in slice i (0: the base slice; i > 0: axis i-1 at its step).
  std::vector<int64_t> point(size_t i) const;
  // "1 block", "2 blocks, vocabulary 16032", "blocks per stage 2,1,1,1".
  std::string label(size_t i) const;
  std::string full_label() const;  // the full model: "32 blocks", "blocks per stage 3,4,6,3"
  // The value of the axis of that kind (and stage) in slice i; `otherwise` where the plan has no such axis.
  int64_t value(size_t i, SliceAxisKind kind, int64_t otherwise, int64_t stage = 0) const;
  // The plan without the axes that inference does not slice.
  SlicePlan for_inference() const;
};
// Throws InvalidArgument("slices.layers" / "slices.vocab", ...) unless every axis has 1 <= base < step <= full.
void validate(const SlicePlan& plan);

// What run_slices measures: the plan, and the model at slice i of a plan (this one or its for_inference();
// an axis the plan lacks at its full value).
struct SliceSource {
  SlicePlan plan;
  std::function<std::unique_ptr<Workload>(const SlicePlan& plan, size_t slice)> make;
};

// The formula above over the slices' figures, in the plan's slice order (slice_count() of them).
double extrapolate(const std::vector<double>& at_slices, const SlicePlan& plan);
int64_t extrapolate(const std::vector<int64_t>& at_slices, const SlicePlan& plan);
// Every category (peak_reserved: -1 in any slice stays -1).
TrainingMemory extrapolate(const std::vector<TrainingMemory>& at_slices, const SlicePlan& plan);
InferenceMemory extrapolate(const std::vector<InferenceMemory>& at_slices, const SlicePlan& plan);
// A generation's ledger (the KV cache grows by one block's keys and values per block; the prompt's ids are in every
// slice once). peak -1 in any slice stays -1, as packed_weights -1 (not predicted) does.
GenerationMemory extrapolate(const std::vector<GenerationMemory>& at_slices, const SlicePlan& plan);
// A mean time extrapolated the same way; -1 when an axis's slice is not slower than the base one (timing noise).
double extrapolate_time(const std::vector<double>& at_slices, const SlicePlan& plan);

}  // namespace tvie
