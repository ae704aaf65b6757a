// The whole ledger predicted from the architecture and the settings (tvie/predict.hpp).
#include <tvie/predict.hpp>

#include <algorithm>

#include <ATen/Parallel.h>

#include <tvie/workload.hpp>

#include "core/text.hpp"
#include "predict/kernel_scratch.hpp"
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>

namespace tvie {

ActivationQuery activation_query(const TrainSettings& settings, const c10::Device& device) {
  ActivationQuery q;
  q.cuda = device.is_cuda();
  q.cpu_threads = device.is_cuda() ? 0 : at::get_num_threads();  // the threads the run on this thread uses
  q.batch_size = settings.batch_size / std::max<int64_t>(1, settings.accumulate);  // one micro-batch
  q.training = true;
  q.weight_bytes = settings.precision == TrainPrecision::bf16 ? 2 : 4;  // amp keeps fp32 master weights
  q.autocast = settings.precision == TrainPrecision::amp_bf16 || settings.precision == TrainPrecision::amp_fp16;
  q.fp16 = settings.precision == TrainPrecision::amp_fp16;
  q.checkpoint_every = settings.checkpoint_every;
  q.fused_loss = settings.fused_loss;
  return q;
}

ActivationQuery activation_query(const InferSettings& settings, const c10::Device& device) {
  ActivationQuery q;
  q.cuda = device.is_cuda();
  q.cpu_threads = device.is_cuda() ? 0 : at::get_num_threads();  // the threads the run on this thread uses
  q.batch_size = settings.batch_size;
  q.training = false;
  // The bytes of the copy's floating layers (the quantised Linear layers' bytes are traced op by op).
  q.weight_bytes = static_cast<int64_t>(c10::elementSize(nn::inference_floating_dtype(settings.dtype, device)));
  q.fp16 = settings.dtype == InferenceDtype::fp16;
  q.inference_dtype = settings.dtype;
  return q;
}

namespace {

// Bytes of a batch of `batch_size` samples as the run holds it (floating inputs in the weights' dtype): one
// sample's bytes times the samples (a batch's tensors are [B, ...]), so that no big batch is ever made.
struct BatchBytes {
  int64_t input = 0, target = 0;
  bool floating_input = false;
  int64_t total() const { return input + target; }
};

BatchBytes batch_bytes_of(const Workload& workload, int64_t batch_size, uint64_t seed, int64_t input_float_bytes) {
  const Batch b = workload.make_batch(1, c10::Device(c10::kCPU), seed);
  BatchBytes out;
  out.floating_input = b.input.is_floating_point();
  out.input = batch_size * (out.floating_input ? b.input.numel() * input_float_bytes : int64_t(b.input.nbytes()));
  out.target = b.target.defined() ? batch_size * static_cast<int64_t>(b.target.nbytes()) : 0;
  return out;
}

}  // namespace

std::string kernel_scratch_source(const c10::Device& device) {
  if (!device.is_cpu()) return "none: CUDA's kernels hold no scratch the caching allocator's statistics see";
  return trace::cpu_kernel_scratch_source();
}

PredictedTrainingMemory predict_training_memory(const Workload& workload, const TrainSettings& settings,
                                                bool data_parallel, const c10::Device& device) {
  const ModelFacts facts = workload.facts();
  const ActivationQuery query = activation_query(settings, device);
  const ActivationEstimate a = workload.estimate_activations(query);
  const int64_t weights = facts.parameter_count * query.weight_bytes;  // fp32, or bf16 for pure bf16
  PredictedTrainingMemory p;
  p.kernel_scratch_source = kernel_scratch_source(device);
  // Why training holds each (the ledger's categories, tvie/memory.hpp):
  p.parameters = weights + (a.known ? a.buffer_bytes : facts.buffer_bytes);  // both modes need the weights
  p.gradients = weights;  // backward writes one per weight; the optimizer reads them
  p.optimizer_state = weights * optimizer_state_multiplier(settings.optimizer);  // moments kept across steps
  p.loss_scaler = settings.precision == TrainPrecision::amp_fp16 ? 3 * 4 : 0;    // scale, growth tracker, found_inf
  p.comm_buffers = data_parallel ? p.gradients : 0;  // the flat buckets: one copy of the gradients
  const BatchBytes batch = batch_bytes_of(workload, settings.batch_size, settings.seed, query.weight_bytes);
  p.batch = batch.total();
  p.model_states = {facts.parameter_count, 0, query.weight_bytes * optimizer_state_multiplier(settings.optimizer),
                    query.weight_bytes, is_amp(settings.precision)};
  if (!a.known) return p;
  p.model_states.largest_layer_parameters = a.largest_parameter_bytes / query.weight_bytes;
  if (settings.fused_optimizer) p.optimizer_state += 4 * a.parameter_tensors;  // the fused step's fp32 step counts
  p.activations = a.saved_bytes;  // what backward needs of each layer's forward
  p.weight_copies = a.cast_cache_bytes;
  p.activations_by_layer = a.by_layer;
  // The peak: what is always there, plus the highest of (a) the forward, (b) the backward and (c) the
  // optimizer's step. With accumulation, the micro-batches after the first run with every gradient alive.
  // The step's batch is a copy of the host's data pool on CUDA; on the CPU a view of it (the pool is allocated
  // before the run, in the baseline), but for a floating input that pure bf16 converts.
  const int64_t step_batch = query.cuda ? p.batch : (batch.floating_input && query.weight_bytes == 2 ? batch.input : 0);
  // The batch goes with the forward and backward (Trainer::forward_backward's), before the optimizer's step.
  const int64_t always = p.always();
  // amp: the cast cache's copies are all there at the end of the forward; the region ends before backward, which
  // then holds only the copies ops saved, until their backward runs (in the trace's backward peak).
  const int64_t amp_copies = p.weight_copies;
  // amp-fp16: backward starts from the loss times the scale, a copy of the loss (4 bytes) beside it.
  const int64_t scaled_loss = settings.precision == TrainPrecision::amp_fp16 ? 4 : 0;
  // The backward writes every gradient as its saved tensors go (ZeRO-2 reduce-scatters them as it runs).
  p.phases = {{"forward", step_batch + amp_copies + a.forward_peak_bytes, 0, amp_copies},
              {"backward", step_batch + scaled_loss + a.backward_peak_bytes, p.gradients, 0,
               step_batch + scaled_loss + a.backward_peak_without_gradient_bytes}};
  // Under accumulation the micro-batches after the first run beside every gradient and the running total of the
  // micro-batches' losses (4 bytes, Trainer::forward_backward).
  if (settings.accumulate > 1) {
    p.phases.push_back({"forward, accumulating", step_batch + 4 + amp_copies + p.gradients + a.forward_peak_bytes,
                        p.gradients, amp_copies});
    p.phases.push_back(
        {"backward, accumulating", step_batch + 4 + scaled_loss + a.backward_peak_accumulating_bytes, p.gradients, 0});
  }
  // The optimizer (LibTorch's, one parameter at a time), beside the step's loss (4 bytes: Trainer::step returns
  // it): the gradients, plus for Adam/AdamW two temporaries of the largest parameter's size (the denominator: sqrt
  // of the second moment, then its scaled copy) and, on the CPU, the divisor between them (a double wrapped as a
  // tensor, and its copy in the parameters' dtype); SGD, and the fused Adam/AdamW, update in place.
  const bool adam = settings.optimizer == OptimizerKind::adam || settings.optimizer == OptimizerKind::adamw;
  const int64_t divisor = query.cuda ? 0 : 8 + query.weight_bytes;
  const int64_t step =
      p.gradients + 4 + (adam && !settings.fused_optimizer ? 2 * a.largest_parameter_bytes + divisor : 0);
  p.phases.push_back({"optimizer step", step, p.gradients, 0});
  int64_t largest = 0;
  for (const auto& phase : p.phases) largest = std::max(largest, phase.bytes);
  p.peak = always + largest;
  log::debug(cat("predicted peak = ", always, " always there + max(", step_batch, " batch + max(", amp_copies,
                 " amp copies + forward ", a.forward_peak_bytes, ", backward ", a.backward_peak_bytes,
                 "), optimizer step ", step, ")"));
  return p;
}

std::string describe(const PredictedTrainingMemory& p) {
  std::string out;
  auto add = [&](const char* name, int64_t bytes) {
    if (bytes > 0) out += (out.empty() ? "" : ", ") + std::string(name) + " " + detail::bytes_text(bytes);
  };
  add("parameters", p.parameters);
  add("gradients", p.gradients);
  add("optimizer state", p.optimizer_state);
  add("activations", p.activations);
  add("amp weight copies", p.weight_copies);
  add("loss scaler", p.loss_scaler);
  add("gradient buckets", p.comm_buffers);
  add("batch", p.batch);
  add("peak", p.peak);
  if (p.activations < 0) out += " (activations and peak not predicted: the workload has no trace)";
  return out;
}

PredictedInferenceMemory predict_inference_memory(const Workload& workload, const InferSettings& settings,
                                                  const c10::Device& device) {
  const ModelFacts facts = workload.facts();
  const ActivationQuery query = activation_query(settings, device);
  const ActivationEstimate a = workload.estimate_activations(query);
  PredictedInferenceMemory p;
  p.kernel_scratch_source = kernel_scratch_source(device);
  p.batch = batch_bytes_of(workload, settings.batch_size, settings.seed, query.weight_bytes).total();
  const bool quantised = nn::linear_weights_for(settings.dtype, device) != nn::LinearWeights::dense;
  const int64_t dense = facts.parameter_count * query.weight_bytes + (a.known ? a.buffer_bytes : facts.buffer_bytes);
  if (!quantised) {
    p.parameters = dense;
  } else {
    // int8/fp8/int8-weight-only: only the trace knows which Linear layers the copy replaces (and what each holds
    // instead).
    if (!a.known) {
      p.packed_weights = -1;
      return p;
    }
    p.parameters = dense - a.released_weight_bytes + a.quantised_weight_bytes;
    p.packed_weights = a.packed_weight_bytes;
    p.quantised_weights_source = quantised_weights_source(settings.dtype, device);
  }
  if (!a.known || p.packed_weights < 0) return p;
  p.activations = a.forward_peak_bytes;  // one forward's working set, its output included
  p.peak = p.parameters + p.packed_weights + p.activations + p.batch;
  return p;
}

std::string quantised_weights_source(InferenceDtype dtype, const c10::Device& device) {
  if (dtype == InferenceDtype::fp8) return "e4m3 weights [out, in] and one fp32 scale per Linear (tvie::nn::Linear)";
  if (dtype == InferenceDtype::int8_weight_only)
    return "int8 weights [out, in] and a bf16 scale per output per Linear (tvie::nn::Linear)";
  if (dtype != InferenceDtype::int8) return "";
  if (device.is_cuda()) return "int8 weights [out, in] and an fp32 scale per output per Linear (tvie::nn::Linear)";
  return trace::cpu_int8_packs_source();
}

}  // namespace tvie
