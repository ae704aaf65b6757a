// Scenario: KV-cached decoding. See decode.hpp.
#include <tvie/decode.hpp>

#include <algorithm>

#include "core/compat.hpp"
#include "measure/op_profile.hpp"
#include "scenarios/cuda_graph.hpp"
#include "scenarios/harness.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>
#include <tvie/memory.hpp>
#include <tvie/predict.hpp>
#include <tvie/timing.hpp>

namespace tvie {

void validate(const DecodeSettings& s, const GptConfig& c) { validate(s, c.context_length); }

std::string context_needed(int64_t prompt_tokens, int64_t new_tokens) {
  return cat("; --seq ", prompt_tokens + new_tokens - 1, " holds ", prompt_tokens, " prompt and ", new_tokens,
             " new tokens");
}

void validate(const DecodeSettings& s, int64_t context_length) {
  if (s.batch_size < 1) throw InvalidArgument("decode.batch_size", cat(s.batch_size), "an integer >= 1");
  if (s.prompt_tokens < 1) throw InvalidArgument("decode.prompt_tokens", cat(s.prompt_tokens), "an integer >= 1");
  if (s.new_tokens < 1) throw InvalidArgument("decode.new_tokens", cat(s.new_tokens), "an integer >= 1");
  if (s.repetitions < 1) throw InvalidArgument("decode.repetitions", cat(s.repetitions), "an integer >= 1");
  const std::string needs = context_needed(s.prompt_tokens, s.new_tokens);
  if (s.prompt_tokens > context_length)
    throw InvalidArgument("decode.prompt_tokens", cat(s.prompt_tokens),
                          cat("at most ", context_length, " (the model's context, --seq) less the new tokens", needs));
  if (s.prompt_tokens + s.new_tokens > context_length + 1)
    throw InvalidArgument("decode.new_tokens", cat(s.new_tokens),
                          cat("at most ", context_length + 1 - s.prompt_tokens, " (prompt + new tokens fit in ",
                              context_length, " positions plus the last prediction, --seq)", needs));
}

GenerationMemory predict_generation_memory(const Workload& workload, const DecodeSettings& settings,
                                           const c10::Device& device) {
  InferSettings infer;
  infer.batch_size = settings.batch_size;
  infer.dtype = settings.dtype;
  infer.seed = settings.seed;
  ActivationQuery q = activation_query(infer, device);
  const int64_t positions = settings.prompt_tokens + settings.new_tokens - 1;
  GenerationMemory g;
  g.kv_cache = kv_cache_bytes(workload, settings.batch_size, positions, q.weight_bytes);
  g.prompt = settings.batch_size * settings.prompt_tokens * static_cast<int64_t>(sizeof(int64_t));
  q.sequence_tokens = settings.prompt_tokens;
  const ActivationEstimate prefill = workload.estimate_activations(q);
  g.working_set = prefill.forward_peak_bytes;
  if (settings.new_tokens > 1) {  // the last decoding step attends to the most cached positions
    q.sequence_tokens = 1;
    q.cached_tokens = positions - 1;
    g.working_set = std::max(g.working_set, workload.estimate_activations(q).forward_peak_bytes);
  }
  g.packed_weights = prefill.packed_weight_bytes;
  g.weights = workload.facts().parameter_count * q.weight_bytes + prefill.buffer_bytes - prefill.released_weight_bytes +
              prefill.quantised_weight_bytes + std::max<int64_t>(0, g.packed_weights);
  g.peak = g.packed_weights < 0 ? -1 : g.weights + g.kv_cache + g.prompt + g.working_set;
  return g;
}

DecodeResult measure_decoding(const GptConfig& config, const DecodeSettings& settings, const c10::Device& device) {
  return measure_decoding(*make_gpt_workload(config), settings, device);
}

DecodeResult measure_decoding(const Workload& model, const DecodeSettings& settings, const c10::Device& device,
                              const torch::nn::Module* weights) {
  // Preconditions (validate(DecodeSettings, context) and the dtype's device check run once, in run_decode).
  const int64_t context_length = model.facts().tokens_per_sample;
  detail::require(settings.batch_size >= 1 && settings.prompt_tokens >= 1 && settings.new_tokens >= 1 &&
                      settings.repetitions >= 1 && settings.prompt_tokens + settings.new_tokens <= context_length + 1,
                  "measure_decoding: validated DecodeSettings (validate(settings, context_length) first)");
  auto probe = make_memory_probe(device);
  const Workload* workload = &model;
  DecodeResult r;
  r.dtype = settings.dtype;
  r.scheme = nn::inference_scheme(settings.dtype, device);
  r.memory_counter = probe->counter_description();
  std::shared_ptr<torch::nn::Module> module;
  int64_t packed_bytes = 0;  // CPU int8: fbgemm's packed weights, outside torch's allocator
  const auto built = detail::measure_added_bytes(probe.get(), device, [&] {
    torch::manual_seed(settings.seed);
    module = workload->make_module();
    if (weights) copy_weights(*weights, *module);
    const auto copy = detail::make_inference_copy(*module, device, settings.dtype);
    packed_bytes = copy.outside_allocator_bytes;
    r.packed_weights_measured = copy.outside_allocator_measured;
  });
  r.memory.weights = built.added + packed_bytes;
  r.memory.packed_weights = packed_bytes;
  // The cache holds every position the run writes: the prompt and all generated tokens but the last.
  const int64_t positions = settings.prompt_tokens + settings.new_tokens - 1;
  std::unique_ptr<KvDecoder> decoder;
  r.memory.kv_cache = detail::measure_added_bytes(probe.get(), device, [&] {
                        decoder = make_kv_decoder(*workload, module, settings.batch_size, positions);
                      }).added;
  std::unique_ptr<detail::GraphedForward> graph;
  if (settings.cuda_graph) {
    // One graph of the fixed-shape step, captured before the ledger's generations: its private pool is held from
    // then on, as a server holds its graphs. Its captures write the cache at position 0, which the prefill rewrites.
    auto* cached = dynamic_cast<CachedDecoder*>(decoder.get());
    detail::require(cached != nullptr, "measure_decoding: a CachedDecoder for cuda_graph");
    c10::InferenceMode inference_mode;
    cached->fix_step_shapes();
    graph = detail::make_graphed_forward([cached] { return cached->fixed_forward(); }, device);
    cached->set_step_runner([g = graph.get()] { return g->replay(); });
  }
  r.cuda_graph = settings.cuda_graph;
  r.predicted = predict_generation_memory(*workload, settings, device);
  // The prompts alone (a batch's first prompt_tokens positions, copied: a view would keep the whole batch alive).
  torch::Tensor prompt;
  r.memory.prompt = detail::measure_added_bytes(probe.get(), device, [&] {
                      prompt = workload->make_batch(settings.batch_size, device, settings.seed)
                                   .input.narrow(1, 0, settings.prompt_tokens)
                                   .clone();
                    }).added;
  const auto generate = [&] {
    auto next = decoder->prefill(prompt).argmax(-1);  // greedy: [B]
    for (int64_t t = 1; t < settings.new_tokens; ++t) next = decoder->step(next).argmax(-1);
  };
  {
    // The ledger generation: after one that allocates what LibTorch creates lazily, the most one holds at once.
    c10::InferenceMode inference_mode;
    generate();
    synchronize(device);
    const int64_t start = probe->allocated_bytes();
    probe->reset_peak();
    generate();
    synchronize(device);
    const int64_t peak = probe->peak_allocated_bytes();
    r.memory.working_set = peak - start;
    r.memory.peak = peak - built.baseline + packed_bytes;
  }

  auto prefill_timer = make_step_timer(device), token_timer = make_step_timer(device);
  c10::InferenceMode inference_mode;
  for (int64_t rep = 1; rep <= settings.repetitions; ++rep) {  // the ledger's two generations warmed up
    prefill_timer->start();
    auto next = decoder->prefill(prompt).argmax(-1);  // greedy: [B]
    prefill_timer->stop();
    for (int64_t t = 1; t < settings.new_tokens; ++t) {
      token_timer->start();
      next = decoder->step(next).argmax(-1);
      token_timer->stop();
    }
  }
  synchronize(device);
  if (settings.profile_classes) {
    const std::vector<std::string> phases =
        settings.new_tokens > 1 ? std::vector<std::string>{"prefill", "decoding"} : std::vector<std::string>{"prefill"};
    r.time_by_class = detail::profile_phases_by_class(
        [&] {
          detail::mark_profile("tvie::start");
          auto next = decoder->prefill(prompt).argmax(-1);
          detail::mark_profile("tvie::end::prefill");
          for (int64_t t = 1; t < settings.new_tokens; ++t) next = decoder->step(next).argmax(-1);
          detail::mark_profile("tvie::end::decoding");
          synchronize(device);
        },
        device.is_cuda(), phases, "one generation after the timed ones");
  }
  const auto ttft = prefill_timer->collect_ms();
  const auto tpot = token_timer->collect_ms();
  r.ttft_ms = summarize(ttft);
  r.tpot_ms = summarize(tpot);
  r.timer = prefill_timer->description();
  r.timed_runs = settings.repetitions;
  double total_ms = 0;
  for (double v : ttft) total_ms += v;
  for (double v : tpot) total_ms += v;
  const double per_run_s = total_ms / 1e3 / static_cast<double>(settings.repetitions);
  if (per_run_s > 0) r.tokens_per_s = static_cast<double>(settings.batch_size * settings.new_tokens) / per_run_s;
  return r;
}

}  // namespace tvie
