// The memory timeline (tvie/timeline.hpp): thinning, and the CPU recording of one training step and one
// inference batch against the ledger they sit in.
#include <catch2/catch.hpp>

#include <algorithm>

#include "helpers.hpp"

using namespace tvie;

namespace {
int64_t max_bytes(const std::vector<MemoryPoint>& points, double from_ms, double to_ms) {
  int64_t m = INT64_MIN;
  for (const auto& p : points)
    if (p.time_ms >= from_ms && p.time_ms <= to_ms) m = std::max(m, p.bytes);
  return m;
}
const TimelinePhase* find_phase(const MemoryTimeline& t, const std::string& name) {
  for (const auto& p : t.phases)
    if (p.name == name) return &p;
  return nullptr;
}
}  // namespace

TEST_CASE("thin_points keeps every bucket's highest and lowest point, in time order", "[timeline]") {
  std::vector<MemoryPoint> points;
  for (int i = 0; i < 10000; ++i) points.push_back({i * 0.01, (i * 7919) % 1000});
  points[4321].bytes = 5000;  // the peak
  points[777].bytes = -5;     // the trough
  const auto thin = thin_points(points, 100);
  CHECK(thin.size() <= 100);
  CHECK(thin.size() >= 90);
  CHECK(std::is_sorted(thin.begin(), thin.end(),
                       [](const MemoryPoint& a, const MemoryPoint& b) { return a.time_ms < b.time_ms; }));
  const auto [lo, hi] =
      std::minmax_element(thin.begin(), thin.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; });
  CHECK(hi->bytes == 5000);
  CHECK(hi->time_ms == Approx(43.21));
  CHECK(lo->bytes == -5);
  // Few points come back unchanged; fewer than 4 allowed is refused.
  const std::vector<MemoryPoint> few(points.begin(), points.begin() + 50);
  CHECK(thin_points(few, 100).size() == 50);
  CHECK_THROWS_AS(thin_points(points, 3), InvalidArgument);
}

TEST_CASE("CPU timeline of a training step: phases in order, activations rise through forward, peak = ledger peak",
          "[timeline]") {
  const c10::Device cpu(c10::kCPU);
  auto w = make_zoo_workload("gpt", "tiny");
  const auto r = measure_training(*w, test::small_train(OptimizerKind::adamw), cpu);
  const auto& t = r.memory_timeline;
  REQUIRE_FALSE(t.empty());
  CHECK(t.events > 100);
  CHECK(t.points.size() <= MemoryTimelineRecorder::kDefaultPoints);
  // The phases of Trainer::step, back to back: data, forward, backward, optimizer.
  std::vector<std::string> names;
  for (const auto& p : t.phases) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"data", "forward", "backward", "optimizer"});
  for (size_t i = 1; i < t.phases.size(); ++i) CHECK(t.phases[i].start_ms == t.phases[i - 1].end_ms);
  // The step starts and ends with the weights and the optimizer's moments live (the gradients set to none).
  CHECK(t.start_bytes == r.memory.parameters + r.memory.optimizer_state);
  CHECK(t.end_bytes == t.start_bytes);
  // The ledger's peak is the maximum over its two steps, and the second (recorded) one holds it: the optimizer
  // state is live throughout.
  CHECK(t.peak_bytes == r.memory.peak);
  // Through forward the saved activations pile up on top of weights and moments; backward turns them into
  // gradients; after the optimizer step and zero_grad the step is back where it started.
  const auto* forward = find_phase(t, "forward");
  REQUIRE(forward != nullptr);
  CHECK(max_bytes(t.points, forward->start_ms, forward->end_ms) >= t.start_bytes + r.memory.activations);
}

TEST_CASE("CPU timeline of an inference batch: weights plus a working set, peak = ledger peak", "[timeline]") {
  const c10::Device cpu(c10::kCPU);
  auto w = make_zoo_workload("gpt", "tiny");
  const auto r = measure_inference(*w, test::small_infer(), cpu);
  const auto& t = r.memory_timeline;
  REQUIRE_FALSE(t.empty());
  REQUIRE(t.phases.size() == 1);
  CHECK(t.phases[0].name == "forward");
  CHECK(t.peak_bytes == r.memory.peak);  // fp32: nothing outside torch's allocator
  CHECK(t.peak_bytes == t.start_bytes + r.memory.activations);
  CHECK(t.end_bytes == t.start_bytes);
}

TEST_CASE("One memory timeline at a time", "[timeline]") {
  const c10::Device cpu(c10::kCPU);
  auto probe = make_memory_probe(cpu);
  MemoryTimelineRecorder first(cpu, *probe, 0);
  CHECK_THROWS_WITH(MemoryTimelineRecorder(cpu, *probe, 0), Catch::Contains("already being recorded"));
  const auto t = first.finish("nothing");
  CHECK(t.events == 0);
  MemoryTimelineRecorder again(cpu, *probe, 0);  // the first one has stopped
  const auto x = torch::ones({1000});
  CHECK(again.finish("one tensor").peak_bytes >= 4000);
}
