// CUDA graph capture of a whole static-shape training step. Compiled wherever LibTorch has CUDA; runs
// only on a GPU (elsewhere make_graphed_step throws DeviceUnavailable).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <tvie/train.hpp>

namespace tvie::detail {

class GraphedStep {
 public:
  virtual ~GraphedStep() = default;
  // Copies the next batch into the graph's static input (phase data), replays the graph (phase
  // forward: the graph is one launch), runs what the graph does not hold (phase optimizer). Returns
  // the step's loss (a static tensor: read it before the next replay).
  virtual torch::Tensor replay(StepTimer* timer) = 0;
  // "forward+backward+optimizer" (SGD family) or "forward+backward" (Adam family: LibTorch's C++ Adam
  // computes its bias correction from a host-side step count, which a graph would freeze).
  virtual std::string scope() const = 0;
};

// A captured inference forward at a fixed batch size. `forward` must read a static input (same address
// every call) and is run twice on a side stream (lazily created library state, such as cuBLAS workspaces,
// is made outside the capture), then captured once. replay() relaunches it and returns the static output:
// read it (or clone it) before the next replay.
class GraphedForward {
 public:
  virtual ~GraphedForward() = default;
  virtual torch::Tensor replay() = 0;
};

std::unique_ptr<GraphedForward> make_graphed_forward(std::function<torch::Tensor()> forward, const c10::Device& device);

std::unique_ptr<GraphedStep> make_graphed_step(Trainer& trainer, const TrainSettings& settings,
                                               const c10::Device& device);

}  // namespace tvie::detail
