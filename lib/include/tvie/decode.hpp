// Scenario: KV-cached decoding of the zoo gpt or llama. Prefill the prompt, then generate token by token
// (greedy), attending to cached keys and values: time to first token, time per output token, tokens/s,
// and the KV cache as its own memory category, predicted and measured.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include <tvie/class_times.hpp>
#include <tvie/ledger.hpp>
#include <tvie/models.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>

namespace tvie {

struct DecodeSettings {
  int64_t batch_size = 1;      // sequences decoded together
  int64_t prompt_tokens = 16;  // prefill length
  int64_t new_tokens = 16;     // generated tokens per sequence (the first comes from the prefill)
  int64_t repetitions = 5;     // timed prefill+generate runs, after the two untimed ones of the memory ledger
  InferenceDtype dtype = InferenceDtype::fp32;
  uint64_t seed = 0;
  // One more generation after the timed ones, under LibTorch's profiler: the prefill's and the decoding steps' time
  // by operator class (DecodeResult::time_by_class), which `tvie plan --from` calibrates class by class.
  bool profile_classes = false;
  // CUDA: every decoding step at fixed shapes (the static KV cache attended in full, later positions masked; the
  // step's position a device tensor) and replayed from one CUDA graph captured for the batch, so that the host
  // launches one graph per step instead of each layer's kernels. The prefill runs eagerly.
  bool cuda_graph = false;
};
// The prompt and the new tokens must fit in `context_length` positions plus the last prediction.
// "; --seq N holds P prompt and M new tokens": the context a generation needs (the last new token is not attended
// to), said in the errors of decode and plan.
std::string context_needed(int64_t prompt_tokens, int64_t new_tokens);
void validate(const DecodeSettings& settings, int64_t context_length);
void validate(const DecodeSettings& settings, const GptConfig& config);

// A generation of settings.new_tokens tokens after settings.prompt_tokens-token prompts by settings.batch_size
// sequences in settings.dtype, predicted from the workload's trace (a zoo gpt or llama; InvalidArgument("model")
// otherwise): the weights, the KV cache (2 x layers x batch x (prompt + new - 1) x kv width x bytes per element; the
// width: gpt's d_model, llama's n_kv_head x head size), the prompts' ids, and the larger working set of the prefill
// and the last decoding step. peak -1 where the weights are not predicted (CPU int8 without fbgemm's blocking).
GenerationMemory predict_generation_memory(const Workload& workload, const DecodeSettings& settings,
                                           const c10::Device& device = c10::kCPU);

struct DecodeResult {
  InferenceDtype dtype = InferenceDtype::fp32;
  std::string scheme;       // how the copy holds and runs its weights (nn::inference_scheme)
  bool cuda_graph = false;  // the decoding steps replayed one CUDA graph (DecodeSettings::cuda_graph)
  std::string memory_counter;
  std::string timer;
  // Measured: the weights and the cache as the allocated bytes building them added; the working set as the most a
  // generation (after the warm-up one) held above what was live before it; the peak above what was live before
  // the weights were built (fbgemm's packs added: they are outside LibTorch's allocator).
  GenerationMemory memory;
  GenerationMemory predicted;           // predict_generation_memory
  bool packed_weights_measured = true;  // false: CPU int8 without readable heap statistics (packed_weights 0)
  Summary ttft_ms;                      // time to first token: the prefill, per repetition
  Summary tpot_ms;                      // time per output token after the first, over all steps
  double tokens_per_s = 0;              // generated tokens (all sequences) / mean time of a whole run
  int64_t timed_runs = 0;
  // settings.profile_classes: one more generation, profiled (tvie/class_times.hpp): the prefill's classes in
  // `forward`, all the decoding steps' in `backward` (a generation has no backward: the second phase).
  ProfiledClassTimes time_by_class;
};

// Settings validated first (run_decode in tvie/run.hpp validates them and the dtype's device once). `workload`: a
// zoo gpt or llama (make_kv_decoder).
// `weights`: a module of the workload whose parameters the inference copy takes (compare's trained weights);
// nullptr: fresh weights of settings.seed.
DecodeResult measure_decoding(const Workload& workload, const DecodeSettings& settings, const c10::Device& device,
                              const torch::nn::Module* weights = nullptr);
DecodeResult measure_decoding(const GptConfig& config, const DecodeSettings& settings, const c10::Device& device);

}  // namespace tvie
