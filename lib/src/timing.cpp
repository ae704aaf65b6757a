#include <tvie/timing.hpp>

#include <chrono>

#include "compat.hpp"

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace tvie {
namespace {

class SteadyClockTimer final : public StepTimer {
 public:
  void start() override { begin_ = std::chrono::steady_clock::now(); }
  void stop() override {
    const auto end = std::chrono::steady_clock::now();
    ms_.push_back(std::chrono::duration<double, std::milli>(end - begin_).count());
  }
  std::vector<double> collect_ms() override { return std::exchange(ms_, {}); }
  std::string description() const override { return "steady_clock (host wall time)"; }

 private:
  std::chrono::steady_clock::time_point begin_;
  std::vector<double> ms_;
};

#if TVIE_WITH_CUDA
// Events recorded on the current stream around each step; read once at the end so that timing adds
// no synchronisation inside the measured loop.
class CudaEventTimer final : public StepTimer {
 public:
  explicit CudaEventTimer(c10::DeviceIndex index) : index_(index) {}
  void start() override {
    pairs_.emplace_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault),
                        std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    pairs_.back().first->record(at::cuda::getCurrentCUDAStream(index_));
  }
  void stop() override { pairs_.back().second->record(at::cuda::getCurrentCUDAStream(index_)); }
  std::vector<double> collect_ms() override {
    std::vector<double> out;
    for (auto& [begin, end] : pairs_) {
      end->synchronize();
      out.push_back(static_cast<double>(begin->elapsed_time(*end)));
    }
    pairs_.clear();
    return out;
  }
  std::string description() const override { return "cuda events (device time on the current stream)"; }

 private:
  c10::DeviceIndex index_;
  std::vector<std::pair<std::unique_ptr<at::cuda::CUDAEvent>, std::unique_ptr<at::cuda::CUDAEvent>>> pairs_;
};
#endif

}  // namespace

std::unique_ptr<StepTimer> make_step_timer(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (device.is_cuda()) return std::make_unique<CudaEventTimer>(device.has_index() ? device.index() : 0);
#endif
  (void)device;
  return std::make_unique<SteadyClockTimer>();
}

}  // namespace tvie
