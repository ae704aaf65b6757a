// Scenario: batched inference. See infer.hpp and docs/metrics.md.
#include <tvie/infer.hpp>

#include <algorithm>

#include "core/compat.hpp"
#include "measure/op_profile.hpp"
#include "scenarios/cuda_graph.hpp"
#include "scenarios/harness.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>
#include <tvie/timing.hpp>

namespace tvie {

InferenceSession::InferenceSession(const Workload& workload, const InferSettings& settings, const c10::Device& device,
                                   const torch::nn::Module* weights, MemoryProbe* probe)
    : workload_(workload), settings_(settings), device_(device) {
  // Preconditions (validate(InferSettings, device) once at the boundary: tvie/run.hpp's runners do).
  detail::require(settings_.batch_size >= 1, "InferenceSession: batch_size >= 1 (validate(InferSettings) first)");
  detail::require(!settings_.cuda_graph || device_.is_cuda(), "InferenceSession: CUDA graphs need a CUDA device");
  const auto built = detail::measure_added_bytes(probe, device_, [&] {
    torch::manual_seed(settings_.seed);
    module_ = workload_.make_module();  // fp32 on the CPU
    if (weights) copy_weights(*weights, *module_);
    const auto copy = detail::make_inference_copy(*module_, device_, settings_.dtype);
    packed_bytes_ = copy.outside_allocator_bytes;
    packed_measured_ = copy.outside_allocator_measured;
    linears_converted_ = copy.converted_linears;
    linears_kept_dense_ = copy.dense_linears;
    workload_.prepare_inference(*module_);
  });
  baseline_bytes_ = built.baseline;
  parameter_bytes_ = built.added;
  if (const int64_t named = workload_.inference_weight_bytes(*module_); named >= 0 && probe) {
    // What building left beyond the named weights counts in the peak, as `other`; named weights that building did
    // not allocate (an AOTInductor package's constants, mapped from its library) are held outside the allocator.
    parameter_bytes_ = std::min(named, built.added);
    packed_bytes_ += named - parameter_bytes_;
  }
  batch_ = workload_.make_batch(settings_.batch_size, device_, settings_.seed);
  if (batch_.input.is_floating_point())
    batch_.input = batch_.input.to(nn::inference_floating_dtype(settings_.dtype, device_));
}

torch::Tensor InferenceSession::forward_eager() {
  c10::InferenceMode inference_mode;  // no autograd graph, no saved tensors, no version counters
  return workload_.forward(*module_, batch_.input);
}

torch::Tensor InferenceSession::run_batch() { return graph_ ? graph_->replay() : forward_eager(); }

void InferenceSession::capture_cuda_graph() {
  // The graph reads batch_.input at a fixed address and writes a static output.
  graph_ = detail::make_graphed_forward([this] { return forward_eager(); }, device_);
}

torch::Tensor InferenceSession::run_rows(const std::vector<int64_t>& rows) {
  c10::InferenceMode inference_mode;
  const auto index = torch::tensor(rows, torch::kInt64).to(batch_.input.device());
  return workload_.forward(*module_, batch_.input.index_select(0, index));
}

InferenceMemory InferenceSession::ledger_batch(MemoryProbe& probe, MemoryTimeline* timeline) {
  InferenceMemory m;
  m.parameters = parameter_bytes_;
  m.packed_weights = packed_bytes_;
  m.packed_weights_measured = packed_measured_;
  m.batch = batch_bytes(batch_);
  run_batch();  // lazily created library state is allocated here, before measuring
  synchronize(device_);
  const int64_t start = probe.allocated_bytes();
  probe.reset_peak();
  if (timeline != nullptr) {
    MemoryTimelineRecorder recorder(device_, probe, baseline_bytes_);
    {
      auto out = run_batch();
      synchronize(device_);
    }
    recorder.add_phase("forward", 0, recorder.now_ms());
    *timeline = recorder.finish("one inference batch (the ledger batch, after one untimed batch)");
  } else {
    auto out = run_batch();
    synchronize(device_);
  }
  // Activations (working set): the most a forward pass holds at once above what was live before it,
  // its output included. Without autograd, each layer's input can be freed as soon as the next layer
  // has consumed it, so this is a few layers' worth, not all of them as in training.
  m.activations = probe.peak_allocated_bytes() - start;
  m.peak = probe.peak_allocated_bytes() - baseline_bytes_ + m.packed_weights;
  m.peak_reserved = probe.peak_reserved_bytes();
  m.other = m.peak - (m.parameters + m.packed_weights + m.activations);
  return m;
}

void set_throughput(InferenceResult& result, const ModelFacts& facts, int64_t batch_size, double mean_latency_ms) {
  const double seconds = mean_latency_ms / 1e3;
  if (!(seconds > 0)) return;
  result.samples_per_s = static_cast<double>(batch_size) / seconds;
  result.tokens_per_s = result.samples_per_s * static_cast<double>(facts.tokens_per_sample);
  result.model_flops_per_batch = facts.forward_flops_per_sample * static_cast<double>(batch_size);
  result.achieved_tflops = result.model_flops_per_batch / seconds / 1e12;
}

InferenceResult measure_inference(const Workload& workload, const InferSettings& settings, const c10::Device& device,
                                  const torch::nn::Module* weights, torch::Tensor* output) {
  auto probe = make_memory_probe(device);
  InferenceResult r;
  r.predicted = predict_inference_memory(workload, settings, device);
  if (settings.check_free_memory)
    detail::refuse_beyond_free_memory(r.predicted.peak, device,
                                      cat("inference ", workload.name(), " at batch ", settings.batch_size));
  try {
    InferenceSession session(workload, settings, device, weights, probe.get());
    r.memory = session.ledger_batch(*probe, &r.memory_timeline);  // eager, also with cuda_graph
    r.linears_converted = session.linears_converted();
    r.linears_kept_dense = session.linears_kept_dense();
    if (settings.cuda_graph) session.capture_cuda_graph();
    for (int64_t i = 0; i < settings.warmup_steps; ++i) session.run_batch();
    auto timer = make_step_timer(device);
    auto meter = make_energy_meter(device);
    synchronize(device);  // the window holds the timed batches' device work only
    meter->start();
    for (int64_t i = 0; i < settings.steps; ++i) {
      timer->start();
      session.run_batch();
      timer->stop();
    }
    synchronize(device);
    r.energy = meter->stop();
    auto timed = timer->collect_steps(1);
    for (const auto& phases : timed.phases_ms) r.latency_ms.push_back(phases.front());
    r.batch_start_ms = std::move(timed.start_ms);
    r.timer = timer->description();
    if (settings.profile_classes && settings.cuda_graph) {
      r.time_by_class.unavailable = "not with a CUDA graph (its replay is timed whole)";
    } else if (settings.profile_classes) {
      r.time_by_class = detail::profile_phases_by_class(
          [&] {
            detail::mark_profile("tvie::start");
            session.run_batch();
            detail::mark_profile("tvie::end::batch");
            synchronize(device);
          },
          device.is_cuda(), {"batch"}, "one batch after the timed ones");
    }
    if (output) *output = session.run_batch().to(torch::kCPU, torch::kFloat32);
  } catch (const c10::OutOfMemoryError&) {
    throw OutOfMemory(
        cat("inference ", workload.name(), " at batch ", settings.batch_size, " does not fit on ", device.str()));
  } catch (const c10::Error& e) {
    if (!detail::is_cpu_allocation_failure(e)) throw;
    throw OutOfMemory(cat("inference ", workload.name(), " at batch ", settings.batch_size, " does not fit on ",
                          device.str(), " (the host refused an allocation)"));
  }
  r.memory_counter = probe->counter_description();
  r.dtype = settings.dtype;
  r.scheme = nn::inference_scheme(settings.dtype, device);
  r.cuda_graph = settings.cuda_graph;
  r.warmup_batches = settings.warmup_steps;
  r.timed_batches = settings.steps;
  r.latency = summarize(r.latency_ms);
  set_throughput(r, workload.facts(), settings.batch_size, r.latency.mean);
  if (r.energy.available() && settings.steps > 0)
    r.joules_per_sample = r.energy.joules / static_cast<double>(settings.steps * settings.batch_size);
  return r;
}

}  // namespace tvie
