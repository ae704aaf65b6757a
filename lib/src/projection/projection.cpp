// Roofline, sharding accounting, ring all-reduce and the M/D/1 queue (tvie/projection.hpp).
#include <tvie/projection.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <tvie/errors.hpp>
#include <tvie/headroom.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/workload.hpp>

namespace tvie {

RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs, double efficiency) {
  if (!(peak_tflops > 0)) throw InvalidArgument("roofline.peak_tflops", cat(peak_tflops), "> 0 (a published peak)");
  return roofline_time(flops, bytes, peak_tflops, bandwidth_gbs, efficiency, efficiency);
}

RooflineTime roofline_time(double flops, double bytes, double peak_tflops, double bandwidth_gbs,
                           double compute_efficiency, double memory_efficiency) {
  if (!(flops >= 0)) throw InvalidArgument("roofline.flops", cat(flops), ">= 0");
  if (!(bytes >= 0)) throw InvalidArgument("roofline.bytes", cat(bytes), ">= 0");
  if (!(bandwidth_gbs > 0)) throw InvalidArgument("roofline.bandwidth_gbs", cat(bandwidth_gbs), "> 0");
  for (double e : {compute_efficiency, memory_efficiency})
    if (!(e > 0 && e <= 1)) throw InvalidArgument("roofline.efficiency", cat(e), "0 < e <= 1");
  const double compute_s = peak_tflops > 0 ? flops / (peak_tflops * 1e12) : 0.0;
  const double memory_s = bytes / (bandwidth_gbs * 1e9);
  RooflineTime t;
  t.memory_bound = memory_s >= compute_s;
  t.bound_s = std::max(compute_s, memory_s);
  t.estimate_s = std::max(compute_s / compute_efficiency, memory_s / memory_efficiency);
  return t;
}

namespace {

// The traced work, or the profiler's for a workload without a trace. The profiler counts fp32 tensors: in a
// 2-byte precision the activation bytes halve (amp: those of the matrix classes only, the others keep their fp32
// inputs); int8/fp8 inference keeps fp32 activations. Weight elements are counted apart (StepWork prices them).
struct Work {
  PhaseWork forward, backward;
  int64_t parameter_tensors = 0;
  bool profiled = false;
  double forward_flops_per_sample = 0;
};
Work work_of(const Workload& workload, const ActivationQuery& query) {
  const ActivationEstimate a = workload.estimate_activations(query);
  if (a.known) return {a.forward_work, a.backward_work, a.parameter_tensors, false, 0};
  const ProfiledWork p = profiled_work(workload, query.batch_size, query.training);
  Work w{p.forward, p.backward, p.parameter_tensors, true, p.forward_flops_per_sample};
  for (PhaseWork* phase : {&w.forward, &w.backward})
    for (size_t c = 0; c < phase->by_class.size(); ++c) {
      const bool matrix = c == static_cast<size_t>(OpClass::matmul) || c == static_cast<size_t>(OpClass::convolution) ||
                          c == static_cast<size_t>(OpClass::attention);
      if (query.weight_bytes == 2 || (query.autocast && matrix)) phase->by_class[c].bytes /= 2;
    }
  return w;
}

// The model's analytic forward FLOPs per sample, or the profiler's count where the workload states none.
double flops_per_sample(const ModelFacts& facts, const Work& work) {
  return facts.forward_flops_per_sample > 0 ? facts.forward_flops_per_sample : work.forward_flops_per_sample;
}

// Elements each optimizer's LibTorch step reads and writes per parameter element, and its kernels per parameter
// tensor (torch/csrc/api/src/optim: not fused):
//  - sgd: p.add_(g, -lr): reads 2, writes 1; 1 kernel.
//  - sgd with momentum: buf.mul_(m).add_(g); p.add_(buf, -lr): 2 + 3 + 3; 3 kernels.
//  - adam: m.mul_(b1).add_(g, 1 - b1); v.mul_(b2).addcmul_(g, g, 1 - b2); denom = (v.sqrt() / c2).add_(eps);
//    p.addcdiv_(m, denom, -step): 2 + 3 + 2 + 3 + 2 + 2 + 2 + 4 = 20; 8 kernels. adamw: p.mul_(1 - lr wd) first:
//    +2, 9 kernels.
struct OptimizerTraffic {
  double elements, kernels, flops;
};
OptimizerTraffic optimizer_traffic(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return {3, 1, 2};
    case OptimizerKind::sgd_momentum:
      return {8, 3, 4};
    case OptimizerKind::adam:
      return {20, 8, 10};
    case OptimizerKind::adamw:
      return {22, 9, 11};
  }
  return {0, 0, 0};
}

void scale(PhaseWork& w, double k) {
  for (auto& c : w.by_class) {
    c.flops *= k;
    c.bytes *= k;
    c.weight_elements *= k;
    c.kernels *= k;
  }
}

}  // namespace

c10::Device trace_device(const Accelerator& card) { return card.kind == "cpu" ? c10::kCPU : c10::kCUDA; }

StepWork training_step_work(const Workload& workload, const TrainSettings& settings, const c10::Device& device) {
  const ActivationQuery query = activation_query(settings, device);
  const Work a = work_of(workload, query);
  const ModelFacts facts = workload.facts();
  StepWork w;
  w.profiled = a.profiled;
  const double micro = static_cast<double>(std::max<int64_t>(1, settings.accumulate));
  w.forward = a.forward;
  w.backward = a.backward;
  scale(w.forward, micro);
  scale(w.backward, micro);
  const double b = static_cast<double>(query.weight_bytes);  // the optimizer's tensors: fp32, or bf16 for pure bf16
  const OptimizerTraffic o = optimizer_traffic(settings.optimizer);
  const double n = static_cast<double>(facts.parameter_count);
  const double tensors = static_cast<double>(a.parameter_tensors);
  w.optimizer = {o.flops * n, o.elements * n * b, 0, o.kernels * tensors};
  if (settings.fused_optimizer) {
    // The fused Adam/AdamW reads the weight, its gradient and both moments and writes the three back: 7 elements
    // a parameter, the same FLOPs. Its kernels, as CUDA's multi-tensor apply launches them: each launch takes at
    // most 36 tensors of its four lists and 320 chunks of 65,536 elements; the step counts' add (one list) 110
    // tensors a launch.
    const double launches =
        std::max(std::ceil(tensors / 36), std::ceil(n / (320.0 * 65536))) + std::ceil(tensors / 110);
    w.optimizer = {o.flops * n, 7 * n * b, 0, launches};
  }
  if (settings.clip_grad_norm > 0)  // the norm reads every gradient, the scaling reads and writes them
    w.optimizer += {3 * n, 3 * n * b, 0, 3 * static_cast<double>(a.parameter_tensors)};
  w.allreduce_bytes = n * b;
  w.samples = settings.batch_size;
  w.tokens = settings.batch_size * facts.tokens_per_sample;
  w.model_flops = 3.0 * flops_per_sample(facts, a) * static_cast<double>(settings.batch_size);
  w.precision = to_string(settings.precision);
  switch (settings.precision) {
    case TrainPrecision::fp32:
      w.convolution_tf32 = true;  // cuDNN's default (allow_tf32); LibTorch's matmuls stay fp32 by default
      if (settings.tf32) {        // ... unless asked (--tf32)
        w.attention_peak = "tf32_tflops";
        w.precision += " (tf32)";
      }
      break;
    case TrainPrecision::amp_bf16:
    case TrainPrecision::bf16:
      w.convolution_peak = w.attention_peak = "bf16_tflops";
      w.weight_element_bytes = 2;
      break;
    case TrainPrecision::amp_fp16:
      w.convolution_peak = w.attention_peak = "fp16_tflops";
      w.weight_element_bytes = 2;
      break;
  }
  w.matmul_peak = matmul_peak_field(settings);
  return w;
}

namespace {

// One inference forward's work at `query`, with the peaks and weight bytes of settings.dtype; samples, tokens and
// model FLOPs are the caller's.
StepWork inference_work(const Workload& workload, const InferSettings& settings, const ActivationQuery& query,
                        Work* traced) {
  const Work a = work_of(workload, query);
  if (traced) *traced = a;
  StepWork w;
  w.profiled = a.profiled;
  w.forward = a.forward;
  w.samples = settings.batch_size;
  w.precision = to_string(settings.dtype);
  switch (settings.dtype) {
    case InferenceDtype::fp32:
      w.convolution_tf32 = true;
      break;
    case InferenceDtype::fp16:
      w.convolution_peak = w.attention_peak = "fp16_tflops";
      w.weight_element_bytes = 2;
      break;
    case InferenceDtype::bf16:
      w.convolution_peak = w.attention_peak = "bf16_tflops";
      w.weight_element_bytes = 2;
      break;
    case InferenceDtype::int8:  // Linear layers only; the rest fp32 on the CPU, bf16 (fp16 before sm_80) on CUDA
      w.weight_element_bytes = 1;
      if (query.cuda) {
        w.convolution_peak = w.attention_peak = "bf16_tflops";
        w.fp16_without_bf16 = true;
      } else {
        w.convolution_tf32 = true;  // fp32 convolutions, at TF32 on a card that has it
      }
      break;
    case InferenceDtype::fp8:  // Linear layers only; the rest runs in bf16
      w.convolution_peak = w.attention_peak = "bf16_tflops";
      w.weight_element_bytes = 1;
      break;
    case InferenceDtype::int8_weight_only:  // Linear weights read as int8, the products computed in bf16
      w.convolution_peak = w.attention_peak = "bf16_tflops";
      w.weight_element_bytes = 1;
      break;
  }
  w.matmul_peak = matmul_peak_field(settings.dtype);  // the Linear layers' kernels
  return w;
}

}  // namespace

StepWork inference_batch_work(const Workload& workload, const InferSettings& settings, const c10::Device& device) {
  Work a;
  StepWork w = inference_work(workload, settings, activation_query(settings, device), &a);
  const ModelFacts facts = workload.facts();
  w.tokens = settings.batch_size * facts.tokens_per_sample;
  w.model_flops = flops_per_sample(facts, a) * static_cast<double>(settings.batch_size);
  return w;
}

StepWork decoding_work(const Workload& workload, const InferSettings& settings, int64_t new_positions,
                       int64_t cached_positions, const c10::Device& device) {
  require_kv_decoder(workload);
  if (new_positions < 1) throw InvalidArgument("new_positions", cat(new_positions), ">= 1");
  if (cached_positions < 0) throw InvalidArgument("cached_positions", cat(cached_positions), ">= 0");
  ActivationQuery query = activation_query(settings, device);
  query.sequence_tokens = new_positions;
  query.cached_tokens = cached_positions;
  StepWork w = inference_work(workload, settings, query, nullptr);
  w.tokens = settings.batch_size * new_positions;
  w.model_flops = w.forward[OpClass::matmul].flops + w.forward[OpClass::attention].flops;
  return w;
}

ProjectedTime project_time(const StepWork& work, const Accelerator& card) {
  const Efficiency& e = card.efficiency;
  if (e.matmul <= 0 || e.convolution <= 0 || e.attention <= 0 || e.memory <= 0 || e.kernel_overhead_us < 0)
    throw InvalidArgument(cat("card[", card.id, "].efficiency"), "incomplete", "every fraction set (the catalog's)");
  if (!(card.memory_bandwidth_gbs > 0))
    throw InvalidArgument(cat("card[", card.id, "].memory_bandwidth_gbs"), cat(card.memory_bandwidth_gbs), "> 0");
  ProjectedTime t;
  PhaseWork all = work.forward;
  for (size_t c = 0; c < all.by_class.size(); ++c) all.by_class[c] += work.backward.by_class[c];
  // The peak each class runs at on this card; a precision the card has no figure for is not projected.
  const auto peak_of = [&](const std::string& field, bool tf32) {
    const double tf = tf32 ? card.tf32_tflops : -1;
    return tf > 0 ? tf : card.peak(field);
  };
  // The fields the convolutions and attention run at: a GPU without bf16 units (the T4) runs CUDA's int8 copy's
  // bf16 layers in fp16, as tvie's copy does there.
  const auto field = [&](const std::string& f) {
    return work.fp16_without_bf16 && f == "bf16_tflops" && !(card.peak(f) > 0) ? std::string("fp16_tflops") : f;
  };
  const std::string conv_field = field(work.convolution_peak), attention_field = field(work.attention_peak);
  const double matmul = peak_of(work.matmul_peak, false);
  const double conv = peak_of(conv_field, work.convolution_tf32 && conv_field == "fp32_tflops");
  const double attention = peak_of(attention_field, false);
  const auto need = [&](double peak, const std::string& field, OpClass c) {
    if (peak > 0 || all[c].flops == 0 || !t.supported) return;
    t.supported = false;
    t.unsupported =
        cat(card.id, " has no ", field, " peak in the catalog (", to_string(c), " in ", work.precision, ")");
  };
  need(matmul, work.matmul_peak, OpClass::matmul);
  need(conv, conv_field, OpClass::convolution);
  need(attention, attention_field, OpClass::attention);
  if (!t.supported) return t;
  const double vector = card.fp32_tflops;  // elementwise and normalisation FLOPs: the vector units (bytes dominate)
  for (size_t i = 0; i < all.by_class.size(); ++i) {
    const auto c = static_cast<OpClass>(i);
    const OpWork& w = all[c];
    const double bytes = w.bytes + w.weight_elements * work.weight_element_bytes;
    double peak = vector, eff = e.memory;
    if (c == OpClass::matmul) peak = matmul, eff = e.matmul;
    if (c == OpClass::convolution) peak = conv, eff = e.convolution;
    if (c == OpClass::attention) peak = attention, eff = e.attention;
    t.by_class[i] = roofline_time(w.flops, bytes, peak, card.memory_bandwidth_gbs, eff, e.memory);
    t.bound_s += t.by_class[i].bound_s;
    t.estimate_s += t.by_class[i].estimate_s;
    t.kernels += w.kernels;
  }
  t.optimizer =
      roofline_time(work.optimizer.flops, work.optimizer.bytes, vector, card.memory_bandwidth_gbs, e.memory, e.memory);
  t.bound_s += t.optimizer.bound_s;
  t.estimate_s += t.optimizer.estimate_s;
  t.kernels += work.optimizer.kernels;
  t.launch_s = t.kernels * e.kernel_overhead_us * 1e-6;
  t.estimate_s += t.launch_s;
  return t;
}

const char* to_string(ShardingStage stage) {
  switch (stage) {
    case ShardingStage::none:
      return "none (replicated)";
    case ShardingStage::optimizer:
      return "zero-1 (optimizer state sharded)";
    case ShardingStage::gradients:
      return "zero-2 (optimizer state and gradients sharded)";
    case ShardingStage::parameters:
      return "zero-3 (optimizer state, gradients and parameters sharded)";
  }
  return "?";
}

const char* to_string(ShardingLayout layout) {
  return layout == ShardingLayout::deepspeed_mixed_precision ? "deepspeed-mixed-precision" : "tvie";
}

PerCardTrainingMemory shard_training_memory(const PredictedTrainingMemory& w, int64_t cards, ShardingStage stage) {
  if (w.peak < 0) throw InvalidArgument("sharding.ledger", "no predicted peak", "a workload with a trace");
  if (cards < 1) throw InvalidArgument("sharding.cards", cat(cards), ">= 1");
  const auto shard = [&](int64_t bytes) { return (bytes + cards - 1) / cards; };  // rounded up: whole bytes
  const auto split = [&](int64_t bytes, ShardingStage from) { return stage >= from ? shard(bytes) : bytes; };
  const auto& z = w.model_states;
  std::vector<PredictedTrainingMemory::Phase> phases = w.phases;
  const int64_t copies = std::max<int64_t>(w.weight_copies, 0);
  if (phases.empty()) {  // a measured ledger: one phase at the peak, every gradient and copy in it
    const int64_t bytes = std::max<int64_t>(0, w.peak - w.always());
    const int64_t gradients = std::min(w.gradients, bytes);
    phases.push_back({"step", bytes, gradients, std::min(copies, bytes - gradients)});
  }
  PerCardTrainingMemory m;
  const bool deepspeed = stage != ShardingStage::none && z.mixed_precision && z.parameter_count > 0;
  int64_t gathered = 0;  // tvie's stage 3 on several cards: one layer's full weights and gradients
  if (deepspeed) {
    m.layout = ShardingLayout::deepspeed_mixed_precision;
    const int64_t p = z.parameter_count, l = z.largest_layer_parameters;
    const int64_t master = shard(4 * p), state = shard(z.optimizer_bytes_per_parameter * p);
    m.optimizer_state = state;
    m.parameters = (stage == ShardingStage::parameters ? shard(2 * p) + 2 * l : 2 * p) + master;
    m.gradients = stage == ShardingStage::optimizer   ? 2 * p + shard(4 * p)
                  : stage == ShardingStage::gradients ? shard(2 * p) + shard(4 * p)
                                                      : 2 * l + shard(4 * p);
    m.model_states = m.parameters + m.gradients + m.optimizer_state;
    m.buckets = 2 * std::min(p, kDeepSpeedReduceBucketElements);
  } else {
    // Stage 3 on several cards gathers one layer's full weights for its forward and backward, and its gradients
    // before they are sharded.
    gathered = stage == ShardingStage::parameters && cards > 1 ? 2 * z.largest_layer_parameters * z.weight_bytes : 0;
    m.parameters = split(w.parameters, ShardingStage::parameters) + gathered / 2;
    m.gradients = split(w.gradients, ShardingStage::gradients) + gathered / 2;
    m.optimizer_state = split(w.optimizer_state, ShardingStage::optimizer);
    m.weight_copies = split(copies, ShardingStage::parameters);
    m.model_states = m.parameters + m.gradients + m.optimizer_state + m.weight_copies;
  }
  // What each phase adds beside the model states held all through the step. DeepSpeed's layout: the phase's
  // gradients and amp copies are model states (16-bit weights need no cast cache). tvie's: they are sharded as the
  // stage says, the phase bounded by its own bytes too (both bound it from above).
  int64_t largest = -1;
  for (const auto& ph : phases) {
    int64_t bytes = ph.unsharded();
    if (!deepspeed) {
      const int64_t sharded =
          bytes + split(ph.gradients, ShardingStage::gradients) + split(ph.weight_copies, ShardingStage::parameters);
      bytes = std::min(ph.bytes, sharded) + (ph.gradients > 0 ? gathered / 2 : 0);
    }
    if (bytes > largest) largest = bytes, m.peak_phase = ph.name, m.phase_bytes = bytes;
  }
  // tvie's layout: the gradients and copies are in the phases; the weights and optimizer state all through.
  const int64_t held = deepspeed ? m.model_states + m.buckets : m.parameters + m.optimizer_state;
  m.total = held + w.loss_scaler + w.comm_buffers + largest;
  return m;
}

int64_t cards_needed(const PredictedTrainingMemory& whole, int64_t card_bytes, ShardingStage stage, int64_t max_cards) {
  if (shard_training_memory(whole, 1, stage).total <= card_bytes) return 1;
  if (stage == ShardingStage::none || shard_training_memory(whole, max_cards, stage).total > card_bytes) return 0;
  int64_t lo = 1, hi = max_cards;  // total(lo) > card_bytes >= total(hi); the total falls with the cards
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (shard_training_memory(whole, mid, stage).total <= card_bytes ? hi : lo) = mid;
  }
  return hi;
}

double ring_allreduce_seconds(double bytes, int64_t cards, double link_gbs) {
  if (cards < 1) throw InvalidArgument("allreduce.cards", cat(cards), ">= 1");
  if (cards == 1) return 0;
  if (!(link_gbs > 0)) throw InvalidArgument("allreduce.link_gbs", cat(link_gbs), "> 0 (a published link)");
  const double n = static_cast<double>(cards);
  return 2.0 * (n - 1) / n * bytes / (link_gbs * 1e9);
}

double md1_waiting_quantile_s(double rate_per_s, double service_s, double quantile) {
  if (!(rate_per_s > 0)) throw InvalidArgument("queue.rate_per_s", cat(rate_per_s), "> 0");
  if (!(service_s > 0)) throw InvalidArgument("queue.service_s", cat(service_s), "> 0");
  if (!(quantile > 0 && quantile < 1)) throw InvalidArgument("queue.quantile", cat(quantile), "0 < q < 1");
  if (rate_per_s * service_s >= 1) return std::numeric_limits<double>::infinity();
  constexpr int64_t kWarmup = 100000, kSamples = 2000000;
  std::mt19937_64 gen(0x7e57);  // fixed: the same figure every run
  std::exponential_distribution<double> gap(rate_per_s);
  std::vector<double> waits;
  waits.reserve(kSamples);
  double w = 0;  // Lindley: the next arrival waits for what is left of this one's wait and service
  for (int64_t i = 0; i < kWarmup + kSamples; ++i) {
    if (i >= kWarmup) waits.push_back(w);
    w = std::max(0.0, w + service_s - gap(gen));
  }
  const auto k = static_cast<size_t>(std::ceil(quantile * static_cast<double>(kSamples))) - 1;
  std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(k), waits.end());
  return waits[k];
}

double md1_max_rate_per_s(double service_s, double bound_s, double quantile) {
  if (!(service_s > 0)) throw InvalidArgument("queue.service_s", cat(service_s), "> 0");
  if (service_s > bound_s) return 0;
  double lo = 0, hi = 1.0 / service_s;  // utilisation below 1
  while (hi - lo > 1e-3 * hi) {
    const double mid = 0.5 * (lo + hi);
    (service_s + md1_waiting_quantile_s(mid, service_s, quantile) <= bound_s ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tvie
