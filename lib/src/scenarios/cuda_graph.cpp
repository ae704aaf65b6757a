#include "scenarios/cuda_graph.hpp"

#include "core/compat.hpp"
#include <tvie/errors.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace tvie::detail {

#if TVIE_WITH_CUDA
namespace {
// `waiter` runs nothing queued after this before what `producer` has queued so far.
void wait_for(const at::cuda::CUDAStream& waiter, const at::cuda::CUDAStream& producer) {
  at::cuda::CUDAEvent event;
  event.record(producer);
  event.block(waiter);
}
}  // namespace

// Every CUDA call below runs on the model's device (`--device cuda:1` captures on cuda:1), whatever the
// current device was: a device guard for the whole capture and each replay, streams of that device.
class CudaGraphStep final : public GraphedStep {
 public:
  CudaGraphStep(Trainer& t, const TrainSettings& s, c10::DeviceIndex index) : t_(t), settings_(s), index_(index) {
    c10::cuda::CUDAGuard device_guard(index_);
    optimizer_in_graph_ = s.optimizer == OptimizerKind::sgd || s.optimizer == OptimizerKind::sgd_momentum;
    // Static input: the graph reads these addresses on every replay.
    const Batch first = t_.next_batch();
    static_batch_ = first;
    static_batch_.input = first.input.clone();
    static_batch_.target = first.target.clone();
    // Gradients must keep their addresses too: allocate them once and zero them inside the graph.
    for (auto& p : t_.module_->parameters())
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);

    // The optimizer state must exist before capture (the host decides "first step" branches once, at
    // capture time): the ledger steps that ran before have created it. Warm up forward and backward on
    // a side stream, so that lazily created library state (cuBLAS workspaces for that stream) is made
    // outside the capture, without touching the weights; then capture on that stream.
    auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, index_);
    wait_for(side, at::cuda::getCurrentCUDAStream(index_));
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 2; ++i) forward_backward();
      graph_.capture_begin();
      loss_ = forward_backward();
      if (optimizer_in_graph_) t_.optimizer_->step();
      graph_.capture_end();
    }
    wait_for(at::cuda::getCurrentCUDAStream(index_), side);
  }

  torch::Tensor replay(StepTimer* timer) override {
    c10::cuda::CUDAGuard device_guard(index_);
    const Batch next = t_.next_batch();
    static_batch_.input.copy_(next.input, /*non_blocking=*/true);
    static_batch_.target.copy_(next.target, /*non_blocking=*/true);
    if (timer) timer->mark(kPhaseData);
    graph_.replay();
    if (timer) timer->mark(kPhaseForward);
    if (!optimizer_in_graph_) t_.optimizer_->step();  // gradients stay allocated: the graph zeroes them
    ++t_.optimizer_steps_;
    t_.micro_batches_ += settings_.accumulate;
    if (timer) timer->mark(kPhaseOptimizer);
    return loss_.clone();
  }

  std::string scope() const override {
    return optimizer_in_graph_ ? "forward+backward+optimizer" : "forward+backward (optimizer eager)";
  }

 private:
  // Zeroed gradients, then forward and backward of every micro-batch of the static batch, as every step runs
  // them (no loss scaler or gradient hook with a graph: validate(TrainSettings) and the runner refuse them). The
  // warm-up and the capture are not steps: replay() counts the micro-batches.
  torch::Tensor forward_backward() {
    for (auto& p : t_.module_->parameters()) p.mutable_grad().zero_();
    const int64_t counted = t_.micro_batches_;
    auto total = t_.run_micro_batches(static_batch_, nullptr, nullptr);
    t_.micro_batches_ = counted;
    return total;
  }

  Trainer& t_;
  TrainSettings settings_;
  c10::DeviceIndex index_;
  bool optimizer_in_graph_ = false;
  Batch static_batch_;
  at::cuda::CUDAGraph graph_;
  torch::Tensor loss_;
};

class CudaGraphForward final : public GraphedForward {
 public:
  CudaGraphForward(const std::function<torch::Tensor()>& forward, c10::DeviceIndex index) : index_(index) {
    c10::cuda::CUDAGuard device_guard(index_);
    auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, index_);
    wait_for(side, at::cuda::getCurrentCUDAStream(index_));
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 2; ++i) forward();
      graph_.capture_begin();
      output_ = forward();
      graph_.capture_end();
    }
    wait_for(at::cuda::getCurrentCUDAStream(index_), side);
  }

  torch::Tensor replay() override {
    c10::cuda::CUDAGuard device_guard(index_);
    graph_.replay();
    return output_;
  }

 private:
  c10::DeviceIndex index_;
  at::cuda::CUDAGraph graph_;
  torch::Tensor output_;
};
#else
class CudaGraphStep {};
#endif

std::unique_ptr<GraphedForward> make_graphed_forward(std::function<torch::Tensor()> forward,
                                                     const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (device.is_cuda()) return std::make_unique<CudaGraphForward>(forward, device.has_index() ? device.index() : 0);
#endif
  (void)forward;
  throw DeviceUnavailable("infer.cuda_graph", device.str(), "a CUDA device (CUDA graphs run on GPUs only)");
}

std::unique_ptr<GraphedStep> make_graphed_step(Trainer& trainer, const TrainSettings& settings,
                                               const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (device.is_cuda())
    return std::make_unique<CudaGraphStep>(trainer, settings, device.has_index() ? device.index() : 0);
#endif
  (void)trainer;
  (void)settings;
  throw DeviceUnavailable("train.cuda_graph", device.str(), "a CUDA device (CUDA graphs run on GPUs only)");
}

}  // namespace tvie::detail
