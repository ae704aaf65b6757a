// Activation checkpointing (LibTorch's C++ frontend has none): run a segment without keeping its
// intermediate tensors, and recompute it during backward.
#pragma once

#include <functional>

#include <torch/types.h>

namespace tvie {

// Returns fn(input), keeping only `input` for backward. In backward, fn is run again with grad enabled
// on a detached copy of `input`, with the RNG state (CPU, and CUDA for CUDA inputs) and the autocast
// state of the forward restored, and its gradients are propagated: into the parameters fn uses
// (accumulated in their .grad) and into `input`. `input` must require grad (else backward never reaches
// the segment). A copy of `fn` is kept until backward has run.
torch::Tensor checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& fn, const torch::Tensor& input);

}  // namespace tvie
