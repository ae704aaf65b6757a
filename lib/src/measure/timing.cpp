#include <tvie/timing.hpp>

#include <chrono>

#include "core/compat.hpp"

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace tvie {

std::vector<double> StepTimer::collect_ms() {
  std::vector<double> totals;
  for (const auto& phases : collect_phases_ms(1)) {
    double sum = 0;
    for (double v : phases) sum += v;
    totals.push_back(sum);
  }
  return totals;
}

namespace {

// Marks of one step: (phase, time point) after the start point. `Point` is a clock reading or an event.
template <typename Point>
struct Step {
  Point begin;
  std::vector<std::pair<int, Point>> marks;
};

// Sums the intervals of each step by phase; `elapsed(a, b)` gives milliseconds between two points.
template <typename Point, typename Elapsed>
std::vector<std::vector<double>> by_phase(const std::vector<Step<Point>>& steps, int phase_count, Elapsed elapsed) {
  std::vector<std::vector<double>> out;
  for (const auto& step : steps) {
    int count = phase_count;
    for (const auto& m : step.marks) count = std::max(count, m.first + 1);
    std::vector<double> phases(static_cast<size_t>(count), 0.0);
    const Point* previous = &step.begin;
    for (const auto& [phase, point] : step.marks) {
      phases[static_cast<size_t>(phase)] += elapsed(*previous, point);
      previous = &point;
    }
    out.push_back(std::move(phases));
  }
  return out;
}

// Each step's start after the first step's start.
template <typename Point, typename Elapsed>
std::vector<double> starts(const std::vector<Step<Point>>& steps, Elapsed elapsed) {
  std::vector<double> out;
  for (const auto& step : steps) out.push_back(elapsed(steps.front().begin, step.begin));
  return out;
}

class SteadyClockTimer final : public StepTimer {
  using Point = std::chrono::steady_clock::time_point;

 public:
  void start() override { steps_.push_back({std::chrono::steady_clock::now(), {}}); }
  void mark(int phase) override { steps_.back().marks.emplace_back(phase, std::chrono::steady_clock::now()); }
  std::vector<std::vector<double>> collect_phases_ms(int phase_count) override {
    return collect_steps(phase_count).phases_ms;
  }
  TimedSteps collect_steps(int phase_count) override {
    const auto elapsed = [](const Point& a, const Point& b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    TimedSteps out{by_phase(steps_, phase_count, elapsed), starts(steps_, elapsed)};
    steps_.clear();
    return out;
  }
  std::string description() const override { return "steady_clock (host wall time)"; }

 private:
  std::vector<Step<Point>> steps_;
};

#if TVIE_WITH_CUDA
// Events recorded on the current stream; read once when collected.
class CudaEventTimer final : public StepTimer {
  using Point = std::shared_ptr<at::cuda::CUDAEvent>;

 public:
  explicit CudaEventTimer(c10::DeviceIndex index) : index_(index) {}
  void start() override { steps_.push_back({record(), {}}); }
  void mark(int phase) override { steps_.back().marks.emplace_back(phase, record()); }
  std::vector<std::vector<double>> collect_phases_ms(int phase_count) override {
    return collect_steps(phase_count).phases_ms;
  }
  TimedSteps collect_steps(int phase_count) override {
    if (!steps_.empty() && !steps_.back().marks.empty()) steps_.back().marks.back().second->synchronize();
    const auto elapsed = [](const Point& a, const Point& b) {
      b->synchronize();
      return static_cast<double>(a->elapsed_time(*b));
    };
    TimedSteps out{by_phase(steps_, phase_count, elapsed), starts(steps_, elapsed)};
    steps_.clear();
    return out;
  }
  std::string description() const override { return "cuda events (device time on the current stream)"; }

 private:
  Point record() {
    auto event = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);  // the default constructor disables timing
    event->record(at::cuda::getCurrentCUDAStream(index_));
    return event;
  }
  c10::DeviceIndex index_;
  std::vector<Step<Point>> steps_;
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
