// Sizing a workload on each card (tvie/plan.hpp): the predicted ledger against the card's memory, the traced
// work projected onto its peaks, the all-reduce over its link, the serving queue.
#include <tvie/plan.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include <unistd.h>

#include "core/enum_names.hpp"
#include "core/text.hpp"
#include "projection/projected_time.hpp"
#include <tvie/decode.hpp>
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/workload.hpp>

namespace tvie {

void validate(const PlanSettings& s) {
  validate(s.train);
  validate(s.infer);
  if (!(s.serve_qps >= 0 && std::isfinite(s.serve_qps)))
    throw InvalidArgument("plan.serve_qps", cat(s.serve_qps), "a finite rate >= 0 (0: none)");
  if (!(s.p99_ms >= 0 && std::isfinite(s.p99_ms)))
    throw InvalidArgument("plan.p99_ms", cat(s.p99_ms), "a finite bound >= 0 ms (0: none)");
  if (s.serve_qps > 0 && s.p99_ms <= 0)
    throw InvalidArgument("plan.p99_ms", s.p99_ms == 0 ? "0 (none)" : cat(s.p99_ms),
                          "a p99 bound > 0 in ms with --serve-qps (e.g. --p99-ms 100)");
  if (s.train_tokens < 0) throw InvalidArgument("plan.train_tokens", cat(s.train_tokens), ">= 0 (0: none)");
  if (s.train_samples < 0) throw InvalidArgument("plan.train_samples", cat(s.train_samples), ">= 0 (0: none)");
  if (s.train_tokens > 0 && s.train_samples > 0)
    throw InvalidArgument("plan.train_samples", cat(s.train_samples),
                          "0 when a budget in tokens is given (one of the two)");
  if (!(s.usable_memory_fraction > 0 && s.usable_memory_fraction <= 1))
    throw InvalidArgument("plan.usable_memory_fraction", cat(s.usable_memory_fraction), "a fraction in (0, 1]");
  if (s.max_batch < 1) throw InvalidArgument("plan.max_batch", cat(s.max_batch), ">= 1");
  if (s.new_tokens < 0) throw InvalidArgument("plan.new_tokens", cat(s.new_tokens), ">= 0 (0: no generation)");
  if (s.prompt_tokens < 0)
    throw InvalidArgument("plan.prompt_tokens", cat(s.prompt_tokens),
                          ">= 0 (0: the context length minus the new tokens)");
  if (s.prompt_tokens > 0 && s.new_tokens == 0)
    throw InvalidArgument("plan.prompt_tokens", cat(s.prompt_tokens),
                          "0 without --new-tokens (a prompt is generated from)");
  if (s.measure.enabled && s.calibration)
    throw InvalidArgument("plan.measure", "with a report", "--measure or --from, not both (each calibrates)");
  if (s.measure.steps < 1) throw InvalidArgument("plan.measure.steps", cat(s.measure.steps), ">= 1");
  if (s.measure.warmup_steps < 0)
    throw InvalidArgument("plan.measure.warmup_steps", cat(s.measure.warmup_steps), ">= 0");
  if (s.measure.layers < 0) throw InvalidArgument("plan.measure.layers", cat(s.measure.layers), ">= 0 (0: whole)");
  if (s.measure.vocab < 0) throw InvalidArgument("plan.measure.vocab", cat(s.measure.vocab), ">= 0 (0: whole)");
  if (s.stack == ServingStack::tuned && (s.calibration || s.measure.enabled))
    throw InvalidArgument("plan.stack", "tuned",
                          "tvie with --from or --measure (a calibration measures tvie's own kernels, not a tuned "
                          "stack's)");
  if (s.batching == ServingBatching::continuous && s.new_tokens == 0)
    throw InvalidArgument("plan.batching", "continuous",
                          "auto or static without --new-tokens (continuous batching joins requests between decoding "
                          "steps; a request of one forward has none)");
}

namespace {
constexpr detail::EnumTable<ServingBatching, 3> kBatchings{{{ServingBatching::automatic, "auto"},
                                                            {ServingBatching::static_batches, "static"},
                                                            {ServingBatching::continuous, "continuous"}}};
}  // namespace

std::string to_string(ServingBatching b) { return detail::name_of(kBatchings, b); }

namespace {
constexpr detail::EnumTable<ServingStack, 3> kStacks{
    {{ServingStack::automatic, "auto"}, {ServingStack::tvie, "tvie"}, {ServingStack::tuned, "tuned"}}};
}  // namespace

std::string to_string(ServingStack s) { return detail::name_of(kStacks, s); }

ServingStack parse_serving_stack(const std::string& text, const std::string& field) {
  return detail::parse(kStacks, text, field);
}

ServingBatching parse_serving_batching(const std::string& text, const std::string& field) {
  return detail::parse(kBatchings, text, field);
}

bool continuous_batching(const PlanSettings& s) {
  return s.new_tokens > 0 && s.batching != ServingBatching::static_batches;
}

ServingStack resolved_stack(const PlanSettings& s) {
  if (s.stack != ServingStack::automatic) return s.stack;
  return s.calibration || s.measure.enabled ? ServingStack::tvie : ServingStack::tuned;
}

namespace {

// The M/D/1 waiting time's quantile in units of the service time, as a function of the utilisation only
// (W / s depends on rho = rate x s alone), on a grid of rho = k / 1000, computed when first asked.
double md1_waiting_units(double rho, double quantile) {
  constexpr int kGrid = 1000;
  constexpr int64_t kWarmup = 20000, kSamples = 200000;
  static std::mutex mutex;
  static std::map<std::pair<int, double>, double> table;
  const auto at = [&](int k) {
    if (k <= 0) return 0.0;
    if (k >= kGrid) return std::numeric_limits<double>::infinity();
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = table.find({k, quantile});
    if (it != table.end()) return it->second;
    const double r = static_cast<double>(k) / kGrid;
    std::mt19937_64 gen(0x7e57 + static_cast<uint64_t>(k));
    std::exponential_distribution<double> gap(r);  // service 1, arrivals at rate rho
    std::vector<double> waits;
    waits.reserve(kSamples);
    double w = 0;
    for (int64_t i = 0; i < kWarmup + kSamples; ++i) {
      if (i >= kWarmup) waits.push_back(w);
      w = std::max(0.0, w + 1.0 - gap(gen));
    }
    const auto n = static_cast<size_t>(std::ceil(quantile * static_cast<double>(kSamples))) - 1;
    std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(n), waits.end());
    return table[{k, quantile}] = waits[n];
  };
  const double x = rho * kGrid;
  const int k = static_cast<int>(std::floor(x));
  const double lo = at(k), hi = at(k + 1);
  if (std::isinf(hi)) return hi;
  return lo + (hi - lo) * (x - k);
}

}  // namespace

double batched_max_rate_per_s(double service_s, int64_t batch, double bound_s, double quantile) {
  if (!(service_s > 0)) throw InvalidArgument("queue.service_s", cat(service_s), "> 0");
  if (batch < 1) throw InvalidArgument("queue.batch", cat(batch), ">= 1");
  if (!(quantile > 0 && quantile < 1)) throw InvalidArgument("queue.quantile", cat(quantile), "0 < q < 1");
  if (service_s > bound_s) return 0;
  // Latency (in service times) at utilisation rho of the batch server: the batch fills in (b - 1) / rate =
  // (b - 1) / (b rho) service times, then waits its turn, then runs.
  const double b = static_cast<double>(batch), budget = bound_s / service_s;
  const auto latency = [&](double rho) { return (b - 1) / (b * rho) + md1_waiting_units(rho, quantile) + 1.0; };
  // The feasible utilisations form an interval (the fill time falls with the rate, the queue grows): scan down
  // from the top for the first that meets the bound, then refine between it and the step above.
  double feasible = 0;
  for (double rho = 0.99; rho > 0.005; rho -= 0.01) {
    if (latency(rho) <= budget) {
      feasible = rho;
      break;
    }
  }
  if (feasible == 0) return 0;
  double lo = feasible, hi = std::min(0.999, feasible + 0.01);
  for (int i = 0; i < 12; ++i) {
    const double mid = 0.5 * (lo + hi);
    (latency(mid) <= budget ? lo : hi) = mid;
  }
  return lo * b / service_s;
}

std::optional<Accelerator> local_host_accelerator() {
  const HostInfo host = describe_host();
  const std::string id = host_cpu_class(host.cpu_features_usable);
  const double ghz = host_clock_ghz();
  if (id.empty() || ghz <= 0) return std::nullopt;
  for (const auto& c : accelerator_catalog().cpu_classes) {
    if (c.id != id) continue;
    const double memory_gb =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / 1e9;
    return host_accelerator(c, std::max<int64_t>(1, host.intra_op_threads), ghz, memory_gb);
  }
  return std::nullopt;
}

const Accelerator* catalog_card_of_device(const std::string& gpu_name, double memory_bytes) {
  const auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::string w;
    for (char c : text + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
        w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!w.empty()) {
        out.push_back(w);
        w.clear();
      }
    }
    return out;
  };
  const auto device_words = words(gpu_name);
  const auto has = [&](const std::string& w) {
    return std::find(device_words.begin(), device_words.end(), w) != device_words.end();
  };
  const bool pcie = has("pcie");
  const Accelerator* found = nullptr;
  for (const auto& card : accelerator_catalog().cards) {
    const auto name = words(card.name);
    if (name.size() < 2 || !has(name[1])) continue;
    const bool card_pcie = std::find(name.begin(), name.end(), "pcie") != name.end();
    if (card_pcie != pcie) continue;
    if (memory_bytes > 0 && std::abs(memory_bytes / (card.memory_gb * 1e9) - 1) > 0.15) continue;
    if (found != nullptr) return nullptr;  // ambiguous
    found = &card;
  }
  return found;
}

using namespace projected_time;

namespace {

// The largest batch in [1, max_batch] whose predicted peak is at most `usable` (peaks grow with the batch);
// 0 when batch 1 does not fit.
int64_t largest_batch(const std::function<int64_t(int64_t)>& peak, int64_t usable, int64_t max_batch) {
  if (peak(1) > usable) return 0;
  int64_t lo = 1, hi = 2;
  while (hi <= max_batch && peak(hi) <= usable) lo = hi, hi *= 2;
  if (hi > max_batch) {
    if (peak(max_batch) <= usable) return max_batch;
    hi = max_batch;
  }
  while (hi - lo > 1) {  // peak(lo) fits, peak(hi) does not
    const int64_t mid = lo + (hi - lo) / 2;
    (peak(mid) <= usable ? lo : hi) = mid;
  }
  return lo;
}

Projected per_second(double units, const ProjectedTime& t) {
  return {t.bound_s > 0 ? units / t.bound_s : 0, t.estimate_s > 0 ? units / t.estimate_s : 0};
}

// Memoised predictions, memory and work: they depend on the card only through the device whose kernels tvie's copy
// runs there (trace_device: the CPU's for the host, CUDA's for the GPUs).
struct Predictions {
  Predictions(const Workload& w, const PlanSettings& s, c10::Device d) : workload(w), settings(s), device(d) {}
  const Workload& workload;
  const PlanSettings& settings;
  c10::Device device;
  std::map<int64_t, PredictedTrainingMemory> train_memory;
  std::map<int64_t, int64_t> infer_peak;
  // A workload without a trace: its memory measured on the CPU at batches 2 and 3 and extrapolated
  // (extrapolated_training_memory / extrapolated_inference_memory), or why that failed.
  bool train_measured = false, infer_measured = false;
  std::string train_unmeasured, infer_unmeasured;
  std::map<int64_t, StepWork> infer_work;
  std::optional<StepWork> train_work;  // one step at settings.train's batch: the same for every card of the kind

  const StepWork& training_work() {
    if (!train_work) train_work = training_step_work(workload, settings.train, device);
    return *train_work;
  }

  const PredictedTrainingMemory& training_memory(int64_t batch) {
    auto it = train_memory.find(batch);
    if (it != train_memory.end()) return it->second;
    TrainSettings t = settings.train;
    t.batch_size = batch;
    t.accumulate = batch % settings.train.accumulate == 0 ? settings.train.accumulate : 1;
    PredictedTrainingMemory m = predict_training_memory(workload, t, false, device);
    if (m.peak < 0 && train_unmeasured.empty()) {
      try {
        m = extrapolated_training_memory(workload, t);
        train_measured = true;
      } catch (const std::exception& e) {
        train_unmeasured = e.what();
      }
    }
    return train_memory[batch] = m;
  }
  int64_t training_peak(int64_t batch) { return training_memory(batch).peak; }
  // Generation (settings.new_tokens > 0): the prompt's tokens, resolved by plan_cards.
  int64_t prompt_tokens = 0;
  bool generating() const { return settings.new_tokens > 0; }
  std::map<std::pair<int64_t, int64_t>, StepWork> decode_work;  // (batch, cached positions) -> a cached forward

  // KV-cached decoding's work: a prefill (the prompt, `cached` 0) or a decoding step (1 token, `cached` so far).
  const StepWork& cached_forward(int64_t batch, int64_t cached) {
    const auto key = std::make_pair(batch, cached);
    auto it = decode_work.find(key);
    if (it != decode_work.end()) return it->second;
    InferSettings i = settings.infer;
    i.batch_size = batch;
    const StepWork w = decoding_work(workload, i, cached == 0 ? prompt_tokens : 1, cached, device);
    return decode_work[key] = tuned() ? tuned_inference_work(w, i, device) : w;
  }

  // One request batch with generation on `card`: the prefill and the decoding steps.
  GenerationTime generation(int64_t batch, const Accelerator& card, const StepProjector& prefill_time = {},
                            const StepProjector& step_time = {}) {
    return project_generation([&](int64_t cached) -> const StepWork& { return cached_forward(batch, cached); },
                              prompt_tokens, settings.new_tokens, card, prefill_time, step_time);
  }

  // The KV cache of `batch` requests: prompt + new - 1 positions each, in the dtype tvie's layers compute in, or on
  // the tuned stack in its activations' dtype (one byte for int8 and fp8).
  int64_t request_kv_bytes(int64_t batch) const {
    return kv_cache_bytes(
        workload, batch, prompt_tokens + settings.new_tokens - 1,
        tuned() ? tuned_activation_bytes(settings.infer.dtype) : activation_query(settings.infer, device).weight_bytes);
  }

  int64_t inference_peak(int64_t batch) {
    auto it = infer_peak.find(batch);
    if (it != infer_peak.end()) return it->second;
    InferSettings i = settings.infer;
    i.batch_size = batch;
    if (generating()) {
      // The weights, the KV cache of prompt + new - 1 positions (in the dtype the layers compute in), the prompt's
      // token ids, and the larger working set of the prefill and the last decoding step (packs not predicted: 0).
      DecodeSettings d;
      d.batch_size = batch;
      d.prompt_tokens = prompt_tokens;
      d.new_tokens = settings.new_tokens;
      d.dtype = i.dtype;
      d.seed = i.seed;
      const GenerationMemory g = predict_generation_memory(workload, d, device);
      return infer_peak[batch] = g.weights + request_kv_bytes(batch) + g.prompt + g.working_set;
    }
    const PredictedInferenceMemory p = predict_inference_memory(workload, i, device);
    if (p.peak >= 0) return infer_peak[batch] = p.peak;
    const ActivationQuery q = activation_query(i, device);
    const ActivationEstimate a = workload.estimate_activations(q);
    if (!a.known) {
      // A workload without a trace: measured on the CPU at batches 2 and 3, extrapolated.
      if (!infer_unmeasured.empty()) return infer_peak[batch] = -1;
      try {
        const int64_t peak = extrapolated_inference_memory(workload, i).peak;
        infer_measured = true;
        return infer_peak[batch] = peak;
      } catch (const std::exception& e) {
        infer_unmeasured = e.what();
        return infer_peak[batch] = -1;
      }
    }
    return infer_peak[batch] = p.peak;  // -1: CPU int8 where fbgemm cannot be asked its blocking
  }
  const StepWork& inference_work(int64_t batch) {
    auto it = infer_work.find(batch);
    if (it != infer_work.end()) return it->second;
    InferSettings i = settings.infer;
    i.batch_size = batch;
    const StepWork w = inference_batch_work(workload, i, device);
    return infer_work[batch] = tuned() ? tuned_inference_work(w, i, device) : w;
  }
  bool tuned() const { return settings.stack == ServingStack::tuned; }
};

constexpr const char* kMeasuredNote =
    "measured on this CPU at batches of 2 and 3 samples and extrapolated (a workload without a trace)";

TrainingPlan plan_training(Predictions& p, const PlanSettings& s, const Accelerator& card,
                           const CalibrationFactor& factor, const PhaseCalibration& phases) {
  TrainingPlan t;
  const StepWork& work = p.training_work();
  t.step = calibrated_training_step(work, card, factor, phases);
  t.supported = t.step.supported;
  t.unsupported = t.step.unsupported;
  t.usable_bytes = static_cast<int64_t>(card.memory_gb * 1e9 * s.usable_memory_fraction);
  const PredictedTrainingMemory whole = p.training_memory(s.train.batch_size);
  t.peak_bytes = whole.peak;
  t.fits = whole.peak >= 0 && whole.peak <= t.usable_bytes;
  if (whole.peak < 0) {
    // A workload without a trace that could not be measured either: neither its peak nor what fits is known.
    t.peak_note =
        cat("not predicted (a workload without a trace, and measuring it on the CPU failed: ", p.train_unmeasured,
            "); time on one card");
  } else {
    if (p.train_measured) t.peak_note = kMeasuredNote;
    t.largest_batch = largest_batch([&](int64_t b) { return p.training_peak(b); }, t.usable_bytes, s.max_batch);
    for (int stage = 0; stage < 4; ++stage) {
      t.cards_needed[stage] = cards_needed(whole, t.usable_bytes, static_cast<ShardingStage>(stage));
      if (t.cards_needed[stage] > 0)
        t.per_card[stage] = shard_training_memory(whole, t.cards_needed[stage], static_cast<ShardingStage>(stage));
    }
  }
  // The cards the budget uses: one when it fits, else the stage that needs the fewest.
  if (t.fits || whole.peak < 0) {
    t.cards = 1;
  } else {
    for (int stage = 1; stage < 4; ++stage)
      if (t.cards_needed[stage] > 0 && (t.cards == 0 || t.cards_needed[stage] < t.cards))
        t.cards = t.cards_needed[stage], t.stage = static_cast<ShardingStage>(stage);
  }
  if (!t.supported) return t;
  if (t.cards > 1) {
    // Sharded optimizer state: each card steps its 1/N of the parameters.
    StepWork sharded = work;
    const double n = static_cast<double>(t.cards);
    sharded.optimizer.flops /= n;
    sharded.optimizer.bytes /= n;
    t.step = calibrated_training_step(sharded, card, factor, phases);
  }
  t.samples_per_s = per_second(static_cast<double>(work.samples), t.step);
  t.tokens_per_s = per_second(static_cast<double>(work.tokens), t.step);
  const double peak = card.peak(work.matmul_peak);
  if (peak > 0 && t.step.estimate_s > 0) t.mfu_estimate = work.model_flops / (t.step.estimate_s * peak * 1e12);
  if (t.cards > 1) {
    // ZeRO-1/2 move what an all-reduce moves (a reduce-scatter of the gradients, an all-gather of the updated
    // parameters); ZeRO-3 gathers the parameters again for backward: 1.5x (Rajbhandari et al. 2020, 3 vs 2 x
    // the parameters' bytes per card).
    const double volume = t.stage == ShardingStage::parameters ? 1.5 : 1.0;
    if (card.interconnect_gbs > 0)
      t.allreduce_s = volume * ring_allreduce_seconds(work.allreduce_bytes, t.cards,
                                                      card.interconnect_gbs / 2 * card.efficiency.interconnect);
    else
      t.allreduce_note = "no link figure in the catalog: the all-reduce is not counted";
  }
  const double budget_samples =
      s.train_samples > 0 ? static_cast<double>(s.train_samples)
      : s.train_tokens > 0 && work.tokens > 0
          ? static_cast<double>(s.train_tokens) * static_cast<double>(work.samples) / static_cast<double>(work.tokens)
          : 0;
  if (budget_samples > 0 && t.cards > 0) {
    t.budget_steps = std::ceil(budget_samples / (static_cast<double>(t.cards) * static_cast<double>(work.samples)));
    t.budget_hours = {t.budget_steps * (t.step.bound_s + t.allreduce_s) / 3600,
                      t.budget_steps * (t.step.estimate_s + t.allreduce_s) / 3600};
    const double kw = card.tdp_w > 0 ? card.tdp_w * static_cast<double>(t.cards) / 1000 : -1;
    t.budget_energy_kwh =
        kw > 0 ? Projected{kw * t.budget_hours.bound, kw * t.budget_hours.estimate} : Projected{-1, -1};
    t.budget_usd = cloud_cost(card, static_cast<double>(t.cards) * t.budget_hours.estimate);
  }
  return t;
}

InferencePlan plan_inference(Predictions& p, const PlanSettings& s, const CardPlan& factors) {
  InferencePlan i;
  const Accelerator& card = factors.card;
  // A batch of b requests, projected: one forward, or (generation) the prefill and the decoding steps, each
  // phase with its factor.
  const auto batch_time = [&](int64_t b, ProjectedTime* prefill, ProjectedTime* decoding = nullptr) {
    if (!p.generating())
      return calibrated_phase(p.inference_work(b), card, factors.inference_calibration,
                              factors.inference_class_calibration);
    GenerationTime g;
    if (factors.prefill_class_calibration.any() || factors.decoding_class_calibration.any()) {
      // By class: each prefill and each decoding step calibrated class by class (never below its own bound).
      g = p.generation(
          b, card,
          [&](const StepWork& w) {
            return calibrated_phase(w, card, factors.prefill_calibration, factors.prefill_class_calibration);
          },
          [&](const StepWork& w) {
            return calibrated_phase(w, card, factors.decoding_calibration, factors.decoding_class_calibration);
          });
    } else {
      g = p.generation(b, card);
      g.prefill = calibrated(g.prefill, factors.prefill_calibration);
      g.decoding = calibrated(g.decoding, factors.decoding_calibration);
    }
    if (prefill) *prefill = g.prefill;
    if (decoding) *decoding = g.decoding;
    return whole(g);
  };
  GenerationPlan& g = i.generation;
  i.latency = batch_time(1, &g.prefill);
  if (p.generating()) {
    g.prompt_tokens = p.prompt_tokens;
    g.new_tokens = s.new_tokens;
    g.kv_cache_bytes = p.request_kv_bytes(1);
    if (g.new_tokens > 1) {
      const double steps = static_cast<double>(g.new_tokens - 1);
      g.time_per_output_token_s = {(i.latency.bound_s - g.prefill.bound_s) / steps,
                                   (i.latency.estimate_s - g.prefill.estimate_s) / steps};
    }
  }
  i.supported = i.latency.supported;
  i.unsupported = i.latency.unsupported;
  i.usable_bytes = static_cast<int64_t>(card.memory_gb * 1e9 * s.usable_memory_fraction);
  i.peak_bytes = p.inference_peak(1);
  if (p.infer_measured)
    i.peak_note = kMeasuredNote;
  else if (!p.infer_unmeasured.empty())
    i.peak_note =
        cat("not predicted (a workload without a trace, and measuring it on the CPU failed: ", p.infer_unmeasured, ")");
  else if ((s.infer.dtype == InferenceDtype::int8 || s.infer.dtype == InferenceDtype::fp8) && i.peak_bytes >= 0)
    i.peak_note =
        "int8/fp8 on CUDA predicted from tvie::nn::Linear's code: the quantised weights and scales, and the bf16 "
        "temporaries that quantise each Linear's input (fp8 equal to the byte to an H200's gpt2-small rows, whose "
        "working set the Linear layers do not set; int8's bf16 copy and the Linears' temporaries not yet checked "
        "against a GPU)";
  else if (s.infer.dtype == InferenceDtype::int8_weight_only && i.peak_bytes >= 0)
    i.peak_note =
        "int8-weight-only on CUDA predicted from tvie::nn::Linear's code and LibTorch's _weight_int8pack_mm: the int8 "
        "weights and bf16 scales, and the kernel's fp32 copies of each Linear's input and output (not yet checked "
        "against a GPU; equal to the byte on the CPU, whose kernel makes no copies)";
  const bool predicted = i.peak_bytes >= 0;
  i.fits = !predicted || i.peak_bytes <= i.usable_bytes;
  i.largest_batch = predicted
                        ? largest_batch([&](int64_t b) { return p.inference_peak(b); }, i.usable_bytes, s.max_batch)
                        : s.max_batch;
  if (!i.supported || i.largest_batch == 0) return i;
  // Candidate batches: powers of two up to the largest that fits, and that one.
  std::vector<int64_t> batches;
  for (int64_t b = 1; b <= i.largest_batch; b *= 2) batches.push_back(b);
  if (batches.back() != i.largest_batch) batches.push_back(i.largest_batch);
  i.continuous = continuous_batching(s);
  const double decode_steps = static_cast<double>(std::max<int64_t>(0, s.new_tokens - 1));
  // Continuous batching: at each batch, the prompts' forward and one decoding iteration.
  std::vector<int64_t> at_batch;
  std::vector<Projected> prefill_at, step_at;
  for (int64_t b : batches) {
    ProjectedTime prefill, decoding;
    const ProjectedTime t = batch_time(b, &prefill, &decoding);
    const Projected rate = per_second(static_cast<double>(b), t);
    if (rate.estimate > i.samples_per_s.estimate) i.best_batch = b, i.samples_per_s = rate;
    if (i.continuous) {
      at_batch.push_back(b);
      prefill_at.push_back({prefill.bound_s, prefill.estimate_s});
      const ProjectedTime step = decode_steps > 0 ? per_step(decoding, decode_steps) : ProjectedTime{};
      step_at.push_back({step.bound_s, step.estimate_s});
    } else if (s.p99_ms > 0) {
      const double bound = s.p99_ms / 1000;
      const Projected q{batched_max_rate_per_s(t.bound_s, b, bound), batched_max_rate_per_s(t.estimate_s, b, bound)};
      if (q.estimate > i.qps_per_card.estimate) i.serving_batch = b, i.qps_per_card = q;
      i.qps_per_card.bound = std::max(i.qps_per_card.bound, q.bound);
    }
  }
  if (i.continuous) {
    // A prefill's or an iteration's time at any batch n: linear between the batches projected (powers of two and
    // the largest), as both are: every weight read once, plus each request's tokens, cache and compute.
    const auto between = [&at_batch](const std::vector<Projected>& at, int64_t n, bool bound) {
      const auto value = [bound](const Projected& x) { return bound ? x.bound : x.estimate; };
      if (at.size() == 1 || n <= at_batch.front()) return value(at.front());
      size_t k = 1;
      while (k + 1 < at.size() && at_batch[k] < n) ++k;
      const double f = static_cast<double>(n - at_batch[k - 1]) / static_cast<double>(at_batch[k] - at_batch[k - 1]);
      return value(at[k - 1]) + f * (value(at[k]) - value(at[k - 1]));
    };
    // Each limit on the requests decoding at once (slots) that the memory allows: the one with the highest rate.
    for (const int64_t slots : at_batch) {
      const auto server = [&, slots](bool bound) {
        ContinuousServer c;
        c.prefill_s = [&between, &prefill_at, bound](int64_t k) { return between(prefill_at, k, bound); };
        c.step_s = [&between, &step_at, bound](int64_t n) { return between(step_at, n, bound); };
        c.new_tokens = s.new_tokens;
        c.slots = slots;
        return c;
      };
      const Projected q =
          s.p99_ms > 0 ? Projected{continuous_max_rate_per_s(server(true), s.p99_ms / 1000),
                                   continuous_max_rate_per_s(server(false), s.p99_ms / 1000)}
                       : Projected{continuous_capacity_per_s(server(true)), continuous_capacity_per_s(server(false))};
      if (q.estimate > i.qps_per_card.estimate) i.serving_batch = slots, i.qps_per_card = q;
      i.qps_per_card.bound = std::max(i.qps_per_card.bound, q.bound);
    }
  } else if (s.p99_ms <= 0) {
    i.qps_per_card = i.samples_per_s, i.serving_batch = i.best_batch;
  }
  const double tokens = static_cast<double>(g.new_tokens);
  g.tokens_per_s = {i.samples_per_s.bound * tokens, i.samples_per_s.estimate * tokens};
  if (s.serve_qps > 0 && i.qps_per_card.estimate > 0) {
    i.cards_for_qps = static_cast<int64_t>(std::ceil(s.serve_qps / i.qps_per_card.estimate));
    const double n = static_cast<double>(i.cards_for_qps);
    if (card.tdp_w > 0) i.power_kw = n * card.tdp_w / 1000;
    if (card.price && card.price->kind == "purchase") i.hardware_usd = n * card.price->usd;
    // n cards for the hours a million requests take at serve_qps.
    i.usd_per_million = cloud_cost(card, n * 1e6 / s.serve_qps / 3600);
  }
  return i;
}

}  // namespace

CloudCost cloud_cost(const Accelerator& card, double device_hours) {
  CloudCost c;
  if (card.cloud_prices.empty() || !(device_hours >= 0)) return c;
  c.low_usd = c.high_usd = card.cloud_prices.front().usd_per_hour;
  for (const auto& p : card.cloud_prices) {
    c.low_usd = std::min(c.low_usd, p.usd_per_hour);
    c.high_usd = std::max(c.high_usd, p.usd_per_hour);
  }
  c.low_usd *= device_hours;
  c.high_usd *= device_hours;
  c.listings = static_cast<int64_t>(card.cloud_prices.size());
  return c;
}

int64_t generation_prompt_tokens(const Workload& workload, const PlanSettings& settings) {
  if (settings.new_tokens == 0) return 0;
  require_kv_decoder(workload);
  const int64_t context = workload.facts().tokens_per_sample, n = settings.new_tokens;
  const std::string needs = settings.prompt_tokens > 0 ? context_needed(settings.prompt_tokens, n) : std::string();
  if (n >= context)
    throw InvalidArgument("plan.new_tokens", cat(n),
                          cat("1 .. ", context - 1, " (below the context length ", context, ", --seq", needs, ")"));
  const int64_t prompt = settings.prompt_tokens > 0 ? settings.prompt_tokens : context - n;
  if (prompt + n - 1 > context)
    throw InvalidArgument("plan.prompt_tokens", cat(prompt),
                          cat("1 .. ", context - n + 1, " (prompt + new tokens - 1 <= the context length ", context,
                              ", --seq", needs, ")"));
  return prompt;
}

std::vector<CardPlan> plan_cards(const Workload& workload, const PlanSettings& given,
                                 const std::vector<Accelerator>& cards) {
  {
    PlanSettings checked = given;
    checked.measure = {};  // plan_cards measures nothing: run_plan has turned --measure into the calibration
    validate(checked);
  }
  PlanSettings settings = given;
  settings.stack = resolved_stack(given);
  Predictions cpu(workload, settings, c10::kCPU);
  Predictions accelerator(workload, settings, c10::kCUDA);
  cpu.prompt_tokens = accelerator.prompt_tokens = generation_prompt_tokens(workload, settings);
  std::vector<CardPlan> plans;
  for (const auto& card : cards) {
    Predictions& p = trace_device(card).is_cuda() ? accelerator : cpu;
    CardPlan plan;
    plan.card = card;
    if (const auto& c = settings.calibration) {
      const bool same = c->architecture == "host" ? card.id == "host" : card.architecture == c->architecture;
      const auto either = [](const CalibrationFactor& own, const CalibrationFactor& other) {
        return own.factor > 0 ? own : other;
      };
      if (same) {
        plan.training_calibration = c->training;
        plan.training_phase_calibration = c->training_phases;
        // A forward of whole sequences; a decode report's prefill stands in for it when it has none.
        plan.inference_calibration = either(c->inference, c->prefill);
        if (c->inference.factor > 0) plan.inference_class_calibration = c->inference_classes;
        if (p.generating()) {  // each phase its own factor, else the forward's
          plan.prefill_calibration = either(c->prefill, c->inference);
          plan.decoding_calibration = either(c->decoding, c->inference);
          if (c->prefill.factor > 0) plan.prefill_class_calibration = c->prefill_classes;
          if (c->decoding.factor > 0) plan.decoding_class_calibration = c->decoding_classes;
        }
      }
    }
    plan.training = plan_training(p, settings, card, plan.training_calibration, plan.training_phase_calibration);
    if (settings.stack == ServingStack::tuned) {
      // Serving on the tuned stack: the card's matrix units at the fraction its published anchor reached.
      const TunedCalibration tuned = tuned_calibration(card);
      if (tuned.supported) {
        CardPlan on_tuned = plan;
        on_tuned.card = tuned_card(card, tuned);
        plan.inference = plan_inference(p, settings, on_tuned);
      } else {
        plan.inference.supported = false;
        plan.inference.unsupported = tuned.unsupported;
      }
      plan.inference.tuned = tuned;
    } else {
      plan.inference = plan_inference(p, settings, plan);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace tvie
