// The largest batch that fits, measured (tvie/max_batch.hpp).
#include <tvie/max_batch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/compat.hpp"
#include "core/enum_names.hpp"
#include "core/text.hpp"
#include "scenarios/harness.hpp"
#include <tvie/errors.hpp>
#include <tvie/infer.hpp>
#include <tvie/log.hpp>
#include <tvie/predict.hpp>
#include <tvie/train.hpp>

namespace tvie {

namespace {
constexpr detail::EnumTable<SearchMode, 3> kModes{
    {{SearchMode::training, "training"}, {SearchMode::inference, "inference"}, {SearchMode::generation, "generation"}}};
}  // namespace

std::string to_string(SearchMode mode) { return detail::name_of(kModes, mode); }

void validate(const MaxBatchSettings& s, const c10::Device& device) {
  if (s.start_batch < 1) throw InvalidArgument("max_batch.start_batch", cat(s.start_batch), "an integer >= 1");
  if (s.max_batch < s.start_batch)
    throw InvalidArgument("max_batch.max_batch", cat(s.max_batch),
                          cat("an integer >= start_batch (", s.start_batch, ")"));
  if (device.is_cpu() && s.cpu_memory_limit_mb <= 0)
    throw InvalidArgument("max_batch.cpu_memory_limit_mb", cat(s.cpu_memory_limit_mb),
                          "the emulated device's memory in MiB (> 0) on the CPU: doubling the batch until the host "
                          "runs out of memory would take the machine with it");
  if (!device.is_cpu() && s.cpu_memory_limit_mb != 0)
    throw InvalidArgument("max_batch.cpu_memory_limit_mb", cat(s.cpu_memory_limit_mb),
                          cat("0 on ", device.str(), " (the limit emulates a smaller device on the CPU only)"));
}

MaxBatchResult search_max_batch(const MaxBatchSettings& s, const std::function<MaxBatchProbe(int64_t)>& probe) {
  MaxBatchResult r;
  auto run = [&](int64_t batch) {
    r.probes.push_back(probe(batch));
    return r.probes.back().fits;
  };
  // Doubling: start, 2 start, 4 start ... until one does not fit or max_batch fits.
  int64_t batch = s.start_batch;
  while (true) {
    if (!run(batch)) {
      r.first_failing = batch;
      break;
    }
    r.largest_fitting = batch;
    if (batch == s.max_batch) return r;
    batch = std::min(s.max_batch, batch * 2);
  }
  // Bisection between the largest that fit and the first that did not.
  int64_t good = r.largest_fitting, bad = r.first_failing;
  while (bad - good > 1 && good > 0) {
    const int64_t mid = good + (bad - good) / 2;
    if (run(mid))
      good = mid;
    else
      bad = mid;
  }
  r.largest_fitting = good;
  r.first_failing = bad;
  return r;
}

namespace {

// The search's limit: the emulated CPU device, or CUDA's free memory when the search starts.
void set_limit(MaxBatchResult& r, const MaxBatchSettings& s, const c10::Device& device) {
  if (device.is_cpu()) {
    r.limit_bytes = s.cpu_memory_limit_mb * 1024 * 1024;
    r.limit_source = cat("emulated CPU device of ", s.cpu_memory_limit_mb, " MiB for tensors (--cpu-memory-limit-mb)");
  } else {
    detail::release_cached_memory(device);
    r.limit_bytes = detail::device_free_bytes(device);
    r.limit_source = cat(device.str(), " free memory when the search started (cudaMemGetInfo)");
  }
}

// The largest batch whose predicted peak fits `limit` (doubling then bisection over the prediction), or -1.
template <typename Peak>
int64_t predicted_largest(const MaxBatchSettings& s, int64_t limit, Peak predicted_peak) {
  if (limit <= 0 || predicted_peak(s.start_batch) < 0) return -1;
  const auto r = search_max_batch(s, [&](int64_t b) {
    MaxBatchProbe p;
    p.batch = b;
    p.peak_bytes = predicted_peak(b);
    p.fits = p.peak_bytes <= limit;
    return p;
  });
  return r.largest_fitting;
}

// One probe: `work` under the emulated limit (CPU); out-of-memory -> does not fit, the cache handed back.
template <typename Work>
MaxBatchProbe probe_once(SearchMode mode, int64_t batch, const MaxBatchSettings& s, const c10::Device& device,
                         Work work, log::Progress& progress) {
  progress.next(cat("batch ", batch));
  const auto start = std::chrono::steady_clock::now();
  MaxBatchProbe p;
  p.batch = batch;
  {
    std::optional<ScopedCpuMemoryLimit> limit;
    if (device.is_cpu()) limit.emplace(s.cpu_memory_limit_mb * 1024 * 1024);
    try {
      p.peak_bytes = work(batch);
      p.fits = true;
    } catch (const c10::OutOfMemoryError&) {
      p.fits = false;
    } catch (const OutOfMemory&) {
      p.fits = false;
    }
  }
  detail::release_cached_memory(device);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Each probe on its own line with its time, so that a search cut short by a time limit shows where it was.
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", p.seconds);
  log::info(cat("max-batch probe (", to_string(mode), "): batch ", batch,
                p.fits ? cat(" fits (peak ", detail::bytes_text(p.peak_bytes), ")") : std::string(" does not fit"),
                ", ", seconds));
  return p;
}

// A mode's search: `measure(batch)` runs one probe and returns its ledger, `predicted_peak(batch)` the prediction's
// peak; the ledger at the largest fitting batch, measured again on its own under the limit, goes into `slot`.
template <typename Memory, typename Measure, typename Predict>
MaxBatchResult search_mode(SearchMode mode, const MaxBatchSettings& s, const c10::Device& device,
                           std::optional<Memory> MaxBatchResult::*slot, Measure measure, Predict predicted_peak) {
  MaxBatchResult limits;
  set_limit(limits, s, device);
  log::Progress progress(cat("max-batch search (", to_string(mode), "), probe"), 0);
  auto result = search_max_batch(s, [&](int64_t batch) {
    return probe_once(
        mode, batch, s, device, [&](int64_t b) { return measure(b).peak; }, progress);
  });
  result.mode = mode;
  result.limit_bytes = limits.limit_bytes;
  result.limit_source = limits.limit_source;
  result.predicted_largest = predicted_largest(s, result.limit_bytes, predicted_peak);
  if (result.largest_fitting > 0) {
    std::optional<ScopedCpuMemoryLimit> limit;
    if (device.is_cpu()) limit.emplace(result.limit_bytes);
    result.*slot = measure(result.largest_fitting);
  }
  detail::release_cached_memory(device);
  return result;
}

}  // namespace

MaxBatchResult find_max_batch_training(const Workload& workload, const TrainSettings& train, const MaxBatchSettings& s,
                                       const c10::Device& device) {
  detail::require(train.accumulate == 1, "find_max_batch_training: accumulate == 1 (validate first)");
  auto at = [&](int64_t batch) {
    TrainSettings t = train;
    t.batch_size = batch;
    t.data_batches = 1;  // the probe runs the ledger steps only: one batch, cycled
    return t;
  };
  return search_mode(
      SearchMode::training, s, device, &MaxBatchResult::training,
      [&](int64_t b) {
        auto probe = make_memory_probe(device);
        Trainer trainer(workload, at(b), device, probe.get());
        return trainer.ledger_step(*probe);
      },
      [&](int64_t b) { return predict_training_memory(workload, at(b), false, device).peak; });
}

MaxBatchResult find_max_batch_inference(const Workload& workload, const InferSettings& infer, const MaxBatchSettings& s,
                                        const c10::Device& device) {
  auto at = [&](int64_t batch) {
    InferSettings i = infer;
    i.batch_size = batch;
    i.steps = 1;  // the ledger batch and one timed batch
    i.warmup_steps = 0;
    i.check_free_memory = false;  // the probes measure where the limit is; the prediction is reported beside them
    return i;
  };
  return search_mode(
      SearchMode::inference, s, device, &MaxBatchResult::inference,
      [&](int64_t b) { return measure_inference(workload, at(b), device).memory; },
      [&](int64_t b) { return predict_inference_memory(workload, at(b), device).peak; });
}

MaxBatchResult find_max_batch_generation(const Workload& workload, const DecodeSettings& decode,
                                         const MaxBatchSettings& s, const c10::Device& device) {
  auto at = [&](int64_t batch) {
    DecodeSettings d = decode;
    d.batch_size = batch;
    d.repetitions = 1;  // the ledger's two generations and one timed
    d.profile_classes = false;
    return d;
  };
  return search_mode(
      SearchMode::generation, s, device, &MaxBatchResult::generation,
      [&](int64_t b) { return measure_decoding(workload, at(b), device).memory; },
      [&](int64_t b) { return predict_generation_memory(workload, at(b), device).peak; });
}

}  // namespace tvie
