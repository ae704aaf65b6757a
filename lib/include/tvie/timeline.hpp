// Memory over time: the live bytes at every allocation and free through one training step and one inference
// batch, with the step's phases marked. The picture that explains the training/inference gap at a glance:
// through a training step's forward the bytes rise as each layer saves its inputs for backward, through
// backward they fall as those are freed (and the gradients appear), the optimizer's step sits on top; an
// inference batch holds the weights and a few layers' working set, no more.
//
// Where the bytes come from: on the CPU, tvie's counting allocator (the ledger's own counter, tvie/memory.hpp);
// on CUDA, the caching allocator's trace callbacks (every allocation and completed free, the bytes the tensor
// asked for, as the ledger's CUDA figures). Times are the host's steady clock at the allocator call: on the CPU
// that is when the work ran; on CUDA, when it was queued (the device runs later, in the same order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

namespace tvie {

class MemoryProbe;

struct MemoryPoint {
  double time_ms = 0;  // since the recording started
  int64_t bytes = 0;   // live bytes above the ledger's baseline (what was allocated before the model was built)
};

struct TimelinePhase {
  std::string name;  // data, forward, backward, optimizer, communication; "batch" for inference
  double start_ms = 0, end_ms = 0;
};

struct MemoryTimeline {
  std::string what;     // which step or batch was recorded
  std::string counter;  // which bytes ("live tensor bytes, tvie counting CPU allocator", ...)
  std::string clock;    // which times
  int64_t events = 0;   // allocations and frees recorded (0: no timeline)
  int64_t start_bytes = 0, end_bytes = 0, peak_bytes = 0;  // above the baseline; the peak over every event
  double duration_ms = 0;
  std::vector<MemoryPoint> points;  // thinned to at most a few thousand (thin_points), the peak kept
  std::vector<TimelinePhase> phases;
  bool empty() const { return events == 0; }
};

// Records while alive. One recorder at a time per process (a second throws tvie::Error).
class MemoryTimelineRecorder {
 public:
  static constexpr size_t kDefaultPoints = 2000;
  // Starts recording `device`'s live bytes (read first from `probe`), reported above `baseline_bytes`.
  MemoryTimelineRecorder(const c10::Device& device, MemoryProbe& probe, int64_t baseline_bytes);
  ~MemoryTimelineRecorder();
  MemoryTimelineRecorder(const MemoryTimelineRecorder&) = delete;
  MemoryTimelineRecorder& operator=(const MemoryTimelineRecorder&) = delete;

  double now_ms() const;  // on the recording's clock
  void add_phase(const std::string& name, double start_ms, double end_ms);
  // Stops recording and returns the timeline, its points thinned to at most `max_points`.
  MemoryTimeline finish(const std::string& what, size_t max_points = kDefaultPoints);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// At most `max_points` (>= 4) points of `points` (in time order): the time range cut into max_points / 2
// buckets, each bucket's lowest and highest point kept in time order, so that every peak and trough survives.
// Fewer points than that come back unchanged.
std::vector<MemoryPoint> thin_points(const std::vector<MemoryPoint>& points, size_t max_points);

}  // namespace tvie
