// The memory of workloads without a trace, measured at two small batches and extrapolated (tvie/projection.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/infer.hpp>
#include <tvie/log.hpp>
#include <tvie/memory.hpp>
#include <tvie/projection.hpp>
#include <tvie/timeline.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>

namespace tvie {
namespace {

// The measurements are taken at (micro-)batches of 2 and 3 samples (1 takes other paths in some kernels, and a
// BatchNorm over [B, C] refuses it in training).
constexpr int64_t kSmall = 2, kLarge = 3;

// The value at `size` samples of the line through (kSmall, small) and (kLarge, large); a figure that shrinks
// with the batch (a few bytes of noise) is held at its value, and nothing is below 0.
int64_t line_at(int64_t small, int64_t large, int64_t size) {
  const double slope = static_cast<double>(std::max<int64_t>(0, large - small)) / double(kLarge - kSmall);
  const double v = static_cast<double>(small) + slope * static_cast<double>(size - kSmall);
  return std::max<int64_t>(0, static_cast<int64_t>(std::llround(v)));
}

template <typename Ledger>
struct Pair {
  Ledger one, two;
};

// A training ledger and the live bytes after every allocation and free of its steady-state step. The step's peak
// is the highest of those moments, and which moment holds it changes with the batch (the end of backward, all
// gradients alive, at 2 samples; its start, all activations alive, at 64): with the same allocations in the same
// order at both sizes, each moment is extrapolated on its own line and the highest taken.
struct TrainingMeasurement {
  TrainingMemory ledger;
  std::vector<MemoryPoint> points;
};

// The two measurements for `key`, made by measure(kSmall) and measure(kLarge) the first time it is asked.
template <typename Ledger, typename Measure>
Pair<Ledger> measured_once(std::map<std::string, Pair<Ledger>>& cache, const std::string& key, Measure measure) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, Pair<Ledger>{measure(kSmall), measure(kLarge)}).first;
  return it->second;
}

}  // namespace

PredictedTrainingMemory extrapolated_training_memory(const Workload& workload, const TrainSettings& settings) {
  if (settings.precision == TrainPrecision::amp_fp16)
    throw InvalidArgument("precision", "amp-fp16", "fp32, amp-bf16 or bf16 (measured on the CPU)");
  const int64_t k = std::max<int64_t>(1, settings.accumulate);
  const std::string key =
      cat(workload.name(), "/", workload.facts().parameter_count, "/", to_string(settings.optimizer), "/",
          to_string(settings.precision), "/", k, "/", settings.checkpoint_every);
  static std::map<std::string, Pair<TrainingMeasurement>> measured;
  const Pair<TrainingMeasurement> pair = measured_once(measured, key, [&](int64_t micro) {
    TrainSettings s = settings;
    s.batch_size = micro * k;  // micro-batches of `micro` samples, as the asked run accumulates them
    s.accumulate = k;
    s.warmup_steps = 0;
    const c10::Device cpu(c10::kCPU);
    auto probe = make_memory_probe(cpu);
    Trainer trainer(workload, s, cpu, probe.get());
    TrainingMeasurement m;
    MemoryTimeline timeline;
    m.ledger = trainer.ledger_step(*probe, &timeline, /*timeline_points=*/0);
    m.points = std::move(timeline.points);
    return m;
  });
  const int64_t micro = std::max<int64_t>(1, settings.batch_size / k);
  const TrainingMemory &one = pair.one.ledger, &two = pair.two.ledger;
  PredictedTrainingMemory p;
  p.parameters = one.parameters;
  p.gradients = one.gradients;
  p.optimizer_state = one.optimizer_state;
  p.weight_copies = one.weight_copies;
  p.loss_scaler = one.loss_scaler;
  p.activations = line_at(one.activations, two.activations, micro);
  p.batch = line_at(one.batch, two.batch, micro);
  // The ledger's peak is over both ledger steps, the timeline's over the second; both lines are kept.
  p.peak = line_at(one.peak, two.peak, micro);
  if (pair.one.points.size() == pair.two.points.size())
    for (size_t i = 0; i < pair.one.points.size(); ++i)
      p.peak = std::max(p.peak, line_at(pair.one.points[i].bytes, pair.two.points[i].bytes, micro));
  return p;
}

PredictedInferenceMemory extrapolated_inference_memory(const Workload& workload, const InferSettings& settings) {
  if (settings.dtype == InferenceDtype::fp8)
    throw InvalidArgument("dtype", "fp8", "fp32, fp16, bf16 or int8 (measured on the CPU)");
  const std::string key = cat(workload.name(), "/", workload.facts().parameter_count, "/", to_string(settings.dtype));
  static std::map<std::string, Pair<InferenceMemory>> measured;
  const Pair<InferenceMemory> pair = measured_once(measured, key, [&](int64_t batch) {
    InferSettings s = settings;
    s.batch_size = batch;
    s.steps = 1;
    s.warmup_steps = 0;
    return measure_inference(workload, s, c10::Device(c10::kCPU)).memory;
  });
  PredictedInferenceMemory p;
  p.parameters = pair.one.parameters + pair.one.packed_weights;
  p.activations = line_at(pair.one.activations, pair.two.activations, settings.batch_size);
  p.batch = line_at(pair.one.batch, pair.two.batch, settings.batch_size);
  p.peak = line_at(pair.one.peak, pair.two.peak, settings.batch_size);
  return p;
}

}  // namespace tvie
