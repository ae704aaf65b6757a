// The memory timeline recorder (tvie/timeline.hpp) over the allocators' sinks (allocation_events.hpp).
#include <tvie/timeline.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include <tvie/config.hpp>  // TVIE_WITH_CUDA (the timeline on CUDA said "this build has no CUDA" without it: the H200)
#include <tvie/errors.hpp>
#include <tvie/memory.hpp>

#include "measure/allocation_events.hpp"

namespace tvie {
namespace {
std::atomic<bool> g_recording{false};
}

struct MemoryTimelineRecorder::State final : detail::AllocationSink {
  using Clock = std::chrono::steady_clock;
  c10::Device device{c10::kCPU};
  int64_t baseline = 0;
  int64_t start_bytes = 0;
  Clock::time_point start;
  bool recording = false;
  std::vector<MemoryPoint> points;  // every event, bytes above the baseline
  std::vector<TimelinePhase> phases;

  double elapsed_ms() const { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }
  // Called under the allocator sink's lock: never concurrently. The vector grows through malloc, not through
  // the counted allocator, so recording adds no event of its own.
  void live_bytes(int64_t bytes) override { points.push_back({elapsed_ms(), bytes - baseline}); }

  void stop() {
    if (!recording) return;
    if (device.is_cpu()) detail::set_cpu_allocation_sink(nullptr);
#if TVIE_WITH_CUDA
    else
      detail::set_cuda_allocation_sink(nullptr, device.index(), 0);
#endif
    recording = false;
    g_recording.store(false);
  }
};

MemoryTimelineRecorder::MemoryTimelineRecorder(const c10::Device& device, MemoryProbe& probe, int64_t baseline_bytes)
    : state_(std::make_unique<State>()) {
  if (!device.is_cpu() && !device.is_cuda())
    throw DeviceUnavailable("device", device.str(), "cpu, cuda (no memory timeline for this device)");
#if !TVIE_WITH_CUDA
  if (device.is_cuda()) throw DeviceUnavailable("device", device.str(), "cpu (this build has no CUDA)");
#endif
  if (g_recording.exchange(true)) throw Error("tvie: a memory timeline is already being recorded in this process");
  auto& s = *state_;
  s.device = device;
  s.baseline = baseline_bytes;
  s.points.reserve(1 << 14);
  s.start_bytes = probe.allocated_bytes();
  s.start = State::Clock::now();
  s.points.push_back({0.0, s.start_bytes - baseline_bytes});
  s.recording = true;
  if (device.is_cpu()) detail::set_cpu_allocation_sink(&s);
#if TVIE_WITH_CUDA
  else
    detail::set_cuda_allocation_sink(&s, device.has_index() ? device.index() : c10::DeviceIndex{0}, s.start_bytes);
#endif
}

MemoryTimelineRecorder::~MemoryTimelineRecorder() { state_->stop(); }

double MemoryTimelineRecorder::now_ms() const { return state_->elapsed_ms(); }

void MemoryTimelineRecorder::add_phase(const std::string& name, double start_ms, double end_ms) {
  state_->phases.push_back({name, start_ms, end_ms});
}

MemoryTimeline MemoryTimelineRecorder::finish(const std::string& what, size_t max_points) {
  auto& s = *state_;
  const double end = s.elapsed_ms();
  s.stop();
  MemoryTimeline t;
  t.what = what;
  t.counter = s.device.is_cpu()
                  ? "live tensor bytes above the ledger's baseline, at every allocation and free of tvie's counting "
                    "CPU allocator"
                  : "bytes the live CUDA tensors requested above the ledger's baseline, at every allocation and "
                    "completed free (the caching allocator's trace callbacks)";
  t.clock = s.device.is_cpu() ? "host steady_clock, ms since the recording started (when the work ran)"
                              : "host steady_clock, ms since the recording started (when the work was queued; "
                                "the GPU runs it later, in the same order)";
  t.events = static_cast<int64_t>(s.points.size()) - 1;
  t.duration_ms = end;
  t.start_bytes = s.points.front().bytes;
  t.end_bytes = s.points.back().bytes;
  for (const auto& p : s.points) t.peak_bytes = std::max(t.peak_bytes, p.bytes);
  s.points.push_back({end, t.end_bytes});
  t.points = thin_points(s.points, max_points);
  t.phases = s.phases;
  return t;
}

std::vector<MemoryPoint> thin_points(const std::vector<MemoryPoint>& points, size_t max_points) {
  if (max_points < 4) throw InvalidArgument("max_points", std::to_string(max_points), "4 or more");
  if (points.size() <= max_points) return points;
  const size_t buckets = max_points / 2;
  const double t0 = points.front().time_ms, t1 = points.back().time_ms;
  const double width = (t1 - t0) / static_cast<double>(buckets);
  std::vector<MemoryPoint> out;
  out.reserve(max_points);
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const double bucket_end = b + 1 == buckets ? t1 : t0 + width * static_cast<double>(b + 1);
    size_t lo = i, hi = i;
    for (; i < points.size() && (points[i].time_ms <= bucket_end || b + 1 == buckets); ++i) {
      if (points[i].bytes < points[lo].bytes) lo = i;
      if (points[i].bytes > points[hi].bytes) hi = i;
    }
    if (i == lo && i == hi) continue;  // an empty bucket
    if (lo == hi) {
      out.push_back(points[lo]);
    } else {
      out.push_back(points[std::min(lo, hi)]);
      out.push_back(points[std::max(lo, hi)]);
    }
  }
  return out;
}

}  // namespace tvie
