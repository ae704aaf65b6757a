// Scenario: KV-cached decoding of the zoo gpt or llama. Prefill the prompt, then generate token by token
// (greedy), attending to cached keys and values: time to first token, time per output token, tokens/s,
// and the KV cache as its own memory category, predicted and measured.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include <tvie/class_times.hpp>
#include <tvie/models.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>

namespace tvie {

struct DecodeSettings {
  int64_t batch_size = 1;      // sequences decoded together
  int64_t prompt_tokens = 16;  // prefill length
  int64_t new_tokens = 16;     // generated tokens per sequence (the first comes from the prefill)
  int64_t repetitions = 5;     // timed prefill+generate runs, after one untimed warm-up run
  InferenceDtype dtype = InferenceDtype::fp32;
  uint64_t seed = 0;
  // One more generation after the timed ones, under LibTorch's profiler: the prefill's and the decoding steps' time
  // by operator class (DecodeResult::time_by_class), which `tvie plan --from` calibrates class by class.
  bool profile_classes = false;
};
// The prompt and the new tokens must fit in `context_length` positions plus the last prediction.
void validate(const DecodeSettings& settings, int64_t context_length);
void validate(const DecodeSettings& settings, const GptConfig& config);

struct DecodeResult {
  InferenceDtype dtype = InferenceDtype::fp32;
  std::string memory_counter;
  std::string timer;
  int64_t parameter_bytes = 0;           // the weights, measured (packed_weight_bytes included)
  int64_t packed_weight_bytes = 0;       // CPU int8: fbgemm's packs, outside torch's allocator (glibc heap growth)
  bool packed_weights_measured = true;   // false: CPU int8 without readable heap statistics (packed_weight_bytes 0)
  int64_t kv_cache_bytes = 0;            // measured: allocated bytes the cache added
  int64_t kv_cache_bytes_predicted = 0;  // 2 * L * B * (prompt + new tokens - 1) * kv width * bytes per element
                                         // (kv width: h for gpt, g * d for llama's grouped-query attention)
  Summary ttft_ms;                       // time to first token: the prefill, per repetition
  Summary tpot_ms;                       // time per output token after the first, over all steps
  double tokens_per_s = 0;               // generated tokens (all sequences) / mean time of a whole run
  int64_t timed_runs = 0;
  // settings.profile_classes: one more generation, profiled (tvie/class_times.hpp): the prefill's classes in
  // `forward`, all the decoding steps' in `backward` (a generation has no backward: the second phase).
  ProfiledClassTimes time_by_class;
};

// Settings validated first (run_decode in tvie/run.hpp validates them and the dtype's device once). `workload`: a
// zoo gpt or llama (make_kv_decoder).
DecodeResult measure_decoding(const Workload& workload, const DecodeSettings& settings, const c10::Device& device);
DecodeResult measure_decoding(const GptConfig& config, const DecodeSettings& settings, const c10::Device& device);

}  // namespace tvie
