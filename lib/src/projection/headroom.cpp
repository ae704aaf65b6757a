#include <tvie/headroom.hpp>

#include <algorithm>

#include <tvie/log.hpp>
#include <tvie/plan.hpp>
#include <tvie/projection.hpp>

namespace tvie {
namespace {

// The card's fields and the compute side: `model_tflops` against the peak of `field`.
CardFraction against(const std::optional<Accelerator>& card, const std::string& why_none, const std::string& field,
                     double model_tflops) {
  CardFraction f;
  f.peak_field = field;
  f.model_tflops = model_tflops;
  if (!card) {
    f.why_none = why_none;
    return f;
  }
  f.card = card->id;
  f.card_name = card->name;
  f.peak_tflops = card->peak(field);
  f.bandwidth_gbs = card->memory_bandwidth_gbs > 0 ? card->memory_bandwidth_gbs : -1;
  if (f.peak_tflops > 0 && model_tflops > 0) f.peak_fraction = model_tflops / f.peak_tflops;
  return f;
}

// The memory side: `bytes` read in `seconds` against the card's bandwidth.
void count_bytes(CardFraction& f, double bytes, double seconds, std::string what) {
  f.bytes = bytes;
  f.bytes_counted = std::move(what);
  if (f.bandwidth_gbs > 0 && seconds > 0 && bytes > 0) f.bandwidth_fraction = bytes / seconds / (f.bandwidth_gbs * 1e9);
}

}  // namespace

std::optional<Accelerator> card_of_run(const RunContext& context, std::string* why) {
  if (context.device_type == c10::DeviceType::CUDA) {
    const std::string name = context.gpu ? context.gpu->name : std::string("an unnamed CUDA device");
    const double memory = context.gpu ? static_cast<double>(context.gpu->memory_bytes) : 0.0;
    if (const Accelerator* card = catalog_card_of_device(name, memory)) return *card;
    if (why) *why = cat("the catalog has no card that is ", name, " (tvie cards)");
    return std::nullopt;
  }
  if (auto host = local_host_accelerator()) return host;
  if (why) *why = "this CPU has no class in the catalog, or its clock is not known";
  return std::nullopt;
}

std::string matmul_peak_field(const TrainSettings& settings) {
  switch (settings.precision) {
    case TrainPrecision::fp32:
      return settings.tf32 ? "tf32_tflops" : "fp32_tflops";
    case TrainPrecision::amp_bf16:
    case TrainPrecision::bf16:
      return "bf16_tflops";
    case TrainPrecision::amp_fp16:
      return "fp16_tflops";
  }
  return "fp32_tflops";
}

std::string matmul_peak_field(InferenceDtype dtype) {
  switch (dtype) {
    case InferenceDtype::fp32:
      return "fp32_tflops";
    case InferenceDtype::fp16:
      return "fp16_tflops";
    case InferenceDtype::bf16:
    case InferenceDtype::int8_weight_only:  // the int8 weights are widened to bf16 as they are read
      return "bf16_tflops";
    case InferenceDtype::int8:
      return "int8_tops";
    case InferenceDtype::fp8:
      return "fp8_tflops";
  }
  return "fp32_tflops";
}

CardFraction training_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                               const TrainSettings& settings, const TrainingResult& result) {
  return against(card, why_none, matmul_peak_field(settings), result.achieved_tflops);
}

CardFraction inference_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                                const InferenceResult& result) {
  CardFraction f = against(card, why_none, matmul_peak_field(result.dtype), result.achieved_tflops);
  count_bytes(f, static_cast<double>(result.memory.parameters + result.memory.packed_weights),
              result.latency.mean / 1e3, "the weights, once per batch");
  return f;
}

CardFraction serving_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                              const ModelFacts& facts, InferenceDtype dtype, const ServeResult& result) {
  const double seconds = result.duration_s;
  const double flops = facts.forward_flops_per_sample * static_cast<double>(result.answered);
  CardFraction f = against(card, why_none, matmul_peak_field(dtype), seconds > 0 ? flops / seconds / 1e12 : 0);
  count_bytes(f, static_cast<double>(result.weight_bytes) * static_cast<double>(result.batches), seconds,
              "the weights, once per batch, over the run");
  return f;
}

CardFraction prefill_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                              const Workload& workload, const DecodeSettings& settings, const DecodeResult& result) {
  const MeasuredGeneration g = measured_generation(settings, result.ttft_ms.mean, result.tpot_ms.mean);
  const double seconds = g.ttft_s;
  const double flops = decoding_work(workload, g.infer, g.prompt_tokens, 0).model_flops;
  CardFraction f = against(card, why_none, matmul_peak_field(settings.dtype), seconds > 0 ? flops / seconds / 1e12 : 0);
  count_bytes(f, static_cast<double>(result.memory.weights), seconds, "the weights, once per prefill");
  return f;
}

CardFraction decoding_fraction(const std::optional<Accelerator>& card, const std::string& why_none,
                               const Workload& workload, const DecodeSettings& settings, const DecodeResult& result) {
  const MeasuredGeneration g = measured_generation(settings, result.ttft_ms.mean, result.tpot_ms.mean);
  const double seconds = g.tpot_s;  // 0 with a single new token: no decoding step, no fraction
  // The steps after the first token attend to prompt + 1 .. prompt + new - 1 positions: on average prompt + new / 2
  // (the new token's own included), of the prompt + new - 1 the cache holds at the end.
  const int64_t held = settings.prompt_tokens + settings.new_tokens - 1;
  const double attended = static_cast<double>(settings.prompt_tokens) + static_cast<double>(settings.new_tokens) / 2;
  const int64_t cached = std::max<int64_t>(0, static_cast<int64_t>(attended) - 1);
  const double flops = decoding_work(workload, g.infer, 1, cached).model_flops;
  CardFraction f = against(card, why_none, matmul_peak_field(settings.dtype), seconds > 0 ? flops / seconds / 1e12 : 0);
  const double kv_read =
      held > 0 ? static_cast<double>(result.memory.kv_cache) * attended / static_cast<double>(held) : 0;
  count_bytes(f, static_cast<double>(result.memory.weights) + kv_read, seconds,
              "the weights and the keys and values attended to, once per step");
  return f;
}

}  // namespace tvie
