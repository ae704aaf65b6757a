// The largest batch that fits, measured: double the batch until it does not fit, then bisect between the
// last that fit and the first that did not. Each probe is one instrumented step (training: Trainer's two
// ledger steps; inference: one ledger batch; generation: a generation's ledger, its KV cache for the prompt and
// every new token allocated before the prefill) in a clean allocator state: on CUDA the caching allocator's own
// out-of-memory, its cache emptied between probes; on the CPU an emulated device of cpu_memory_limit_mb
// (ScopedCpuMemoryLimit). An out-of-memory is a probe's result; the process stays usable after it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/decode.hpp>
#include <tvie/memory.hpp>
#include <tvie/settings.hpp>
#include <tvie/workload.hpp>

namespace tvie {

struct MaxBatchSettings {
  int64_t start_batch = 1;          // the first probe
  int64_t max_batch = 65536;        // the search stops doubling here (reported as "fits up to")
  int64_t cpu_memory_limit_mb = 0;  // CPU: the emulated device's memory for tensors (required there, > 0)
};

struct MaxBatchProbe {
  int64_t batch = 0;
  bool fits = false;
  int64_t peak_bytes = 0;  // the probe's measured peak (allocated, above the baseline) when it fits
  double seconds = 0;      // its wall time: the model built, its steps (or its out-of-memory), the cache handed back
};

enum class SearchMode { training, inference, generation };
std::string to_string(SearchMode mode);

struct MaxBatchResult {
  SearchMode mode = SearchMode::training;
  int64_t largest_fitting = 0;     // 0: not even start_batch fits
  int64_t first_failing = 0;       // 0: nothing failed up to max_batch
  int64_t predicted_largest = -1;  // the largest batch whose predicted peak is within limit_bytes (-1: not predicted)
  int64_t limit_bytes = 0;         // what the search ran against: the emulated limit, or CUDA's free memory at start
  std::string limit_source;        // "emulated CPU device (--cpu-memory-limit-mb)", "CUDA free memory at start"
  std::vector<MaxBatchProbe> probes;  // in the order they ran
  // The ledger at the largest fitting batch (the mode's own).
  std::optional<TrainingMemory> training;
  std::optional<InferenceMemory> inference;
  std::optional<GenerationMemory> generation;
};

// Throws InvalidArgument naming the field (max_batch.start_batch, max_batch.max_batch,
// max_batch.cpu_memory_limit_mb: required on the CPU, refused elsewhere; train.accumulate must be 1).
void validate(const MaxBatchSettings& settings, const c10::Device& device);

// Settings validated first. `train` / `infer`: everything but the batch size, which the search sets.
MaxBatchResult find_max_batch_training(const Workload& workload, const TrainSettings& train,
                                       const MaxBatchSettings& settings, const c10::Device& device);
MaxBatchResult find_max_batch_inference(const Workload& workload, const InferSettings& infer,
                                        const MaxBatchSettings& settings, const c10::Device& device);
// The most sequences a KV-cached generation (a zoo gpt or llama) of decode.prompt_tokens + decode.new_tokens
// positions holds at once: the serving batch the cache allows. `decode`: everything but the batch size.
MaxBatchResult find_max_batch_generation(const Workload& workload, const DecodeSettings& decode,
                                         const MaxBatchSettings& settings, const c10::Device& device);

// The search itself, over any `fits(batch)` probe: doubling from start to max_batch, then bisection. Pure.
MaxBatchResult search_max_batch(const MaxBatchSettings& settings, const std::function<MaxBatchProbe(int64_t)>& probe);

}  // namespace tvie
