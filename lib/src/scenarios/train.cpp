// Scenario: training. See train.hpp for the contract and docs/metrics.md for every figure.
#include <tvie/train.hpp>

#include <ATen/Context.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/compat.hpp"
#include "core/text.hpp"
#include "measure/op_profile.hpp"
#include "scenarios/cuda_graph.hpp"
#include "scenarios/harness.hpp"
#include "scenarios/optimizers.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {

const char* phase_name(int phase) {
  switch (phase) {
    case kPhaseData:
      return "data";
    case kPhaseForward:
      return "forward";
    case kPhaseBackward:
      return "backward";
    case kPhaseOptimizer:
      return "optimizer";
    case kPhaseCommunication:
      return "communication";
  }
  return "?";
}

namespace {

c10::ScalarType autocast_dtype(TrainPrecision p) {
  return p == TrainPrecision::amp_fp16 ? torch::kFloat16 : torch::kBFloat16;
}

// The workload's loss of its output, or the same cross-entropy through fused_cross_entropy (TrainSettings::fused_loss):
// output [..., C] as rows [N, C] against the target [...] as [N].
torch::Tensor training_loss(const Workload& workload, const TrainSettings& settings, const torch::Tensor& output,
                            const Batch& mb) {
  if (!settings.fused_loss) return workload.loss(output, mb);
  return fused_cross_entropy(output.reshape({-1, output.size(-1)}), mb.target.reshape({-1}));
}

void mark(StepTimer* timer, int phase) {
  if (timer) timer->mark(phase);
}

}  // namespace

void validate_checkpointing(const Workload& workload, const TrainSettings& settings) {
  if (settings.checkpoint_every > 0 && workload.block_count() == 0)
    throw InvalidArgument("train.checkpoint_every", checkpoint_to_string(settings.checkpoint_every),
                          cat("none (", workload.name(), " has no blocks to checkpoint)"));
}

void validate_fused_loss(const Workload& workload, const TrainSettings& settings) {
  if (settings.fused_loss && !workload.loss_is_cross_entropy())
    throw InvalidArgument("train.fused_loss", "on",
                          cat("off (", workload.name(),
                              "'s loss is not declared a cross-entropy over its output's last "
                              "dimension; the zoo's models are)"));
}

Trainer::Trainer(const Workload& workload, const TrainSettings& settings, const c10::Device& device, MemoryProbe* probe)
    : workload_(workload), settings_(settings), device_(device) {
  // Preconditions (the runners validate the settings once, at the boundary; tvie/run.hpp).
  detail::require(
      settings_.batch_size >= 1 && settings_.accumulate >= 1 && settings_.batch_size % settings_.accumulate == 0,
      "Trainer: batch_size a positive multiple of accumulate (validate(TrainSettings) first)");
  detail::require(settings_.data_batches >= 1, "Trainer: data_batches >= 1 (validate(TrainSettings) first)");
  detail::require(settings_.checkpoint_every == 0 || workload_.block_count() > 0,
                  "Trainer: checkpointing needs a workload with blocks (validate_checkpointing first)");
  detail::require(!settings_.fused_loss || workload_.loss_is_cross_entropy(),
                  "Trainer: the fused loss needs a cross-entropy workload (validate_fused_loss first)");
  // The data: distinct synthetic batches on the host, made before the baseline so that they stay out
  // of the ledger (on the CPU they are the very tensors the steps read).
  for (int64_t i = 0; i < settings_.data_batches; ++i) {
    Batch b = workload_.make_batch(settings_.batch_size, c10::Device(c10::kCPU),
                                   settings_.seed + settings_.data_seed_offset + static_cast<uint64_t>(i));
    if (device_.is_cuda()) {  // pinned, so that the copy to the device can overlap
      b.input = b.input.pin_memory();
      b.target = b.target.pin_memory();
    }
    data_pool_bytes_ += batch_bytes(b);
    pool_.push_back(std::move(b));
  }
  const auto built = detail::measure_added_bytes(probe, device_, [&] {
    torch::manual_seed(settings_.seed);
    module_ = workload_.make_module();  // fp32, on the CPU
    // bf16: the weights themselves are bf16 (no fp32 master copy); amp keeps fp32 weights.
    detail::convert_floating(*module_, device_,
                             settings_.precision == TrainPrecision::bf16 ? torch::kBFloat16 : torch::kFloat32);
    module_->train();
  });
  baseline_bytes_ = built.baseline;
  parameter_bytes_ = built.added;
  if (settings_.checkpoint_every > 0) {
    workload_.set_checkpointing(*module_, settings_.checkpoint_every);
    const int64_t blocks = workload_.block_count();
    checkpointed_blocks_ = (blocks + settings_.checkpoint_every - 1) / settings_.checkpoint_every;
  }
  optimizer_ = detail::make_optimizer(settings_, module_->parameters());
  if (settings_.precision == TrainPrecision::amp_fp16) {
    scaler_bytes_ = detail::measure_added_bytes(probe, device_, [&] {
                      scaler_ = std::make_unique<LossScaler>(settings_.scaler, device_);
                    }).added;
  }
}

Trainer::~Trainer() = default;

Batch Trainer::next_batch() {
  const Batch& host = pool_[static_cast<size_t>(micro_batches_ / settings_.accumulate) % pool_.size()];
  Batch b = host;
  b.input = host.input.to(device_, /*non_blocking=*/true);  // a no-op view on the CPU
  b.target = host.target.to(device_, /*non_blocking=*/true);
  if (settings_.precision == TrainPrecision::bf16 && b.input.is_floating_point())
    b.input = b.input.to(torch::kBFloat16);
  return b;
}

torch::Tensor Trainer::forward_loss(const Batch& mb) {
  if (!is_amp(settings_.precision))
    return training_loss(workload_, settings_, workload_.forward(*module_, mb.input), mb);
  // Autocast wraps the forward and the loss only; the guard's end clears the cast cache.
  AutocastGuard autocast(device_.type(), autocast_dtype(settings_.precision));
  return training_loss(workload_, settings_, workload_.forward(*module_, mb.input), mb);
}

// What the ledger step does around the first micro-batch: its forward and loss (in place of forward_loss), and a
// call once that loss is divided by k, before its backward.
struct Trainer::FirstMicroBatch {
  std::function<torch::Tensor(const Batch&)> loss;
  std::function<void()> before_backward;
};

torch::Tensor Trainer::run_micro_batches(const Batch& batch, StepTimer* timer, const FirstMicroBatch* first) {
  // Each micro-batch's mean loss is divided by k, so the accumulated gradient is that of the mean loss
  // over the whole batch (the same gradient as one batch of b, for models without BatchNorm).
  const int64_t k = settings_.accumulate, micro = settings_.batch_size / k;
  torch::Tensor total;
  for (int64_t i = 0; i < k; ++i) {
    const Batch mb = k == 1 ? batch : slice_batch(batch, i * micro, micro);
    auto loss = i == 0 && first != nullptr ? first->loss(mb) : forward_loss(mb);
    if (k > 1) loss = loss / static_cast<double>(k);  // no extra kernel on the common k = 1 path
    mark(timer, kPhaseForward);
    if (i == 0 && first != nullptr) first->before_backward();
    if (hook_) hook_->before_backward(i == k - 1);
    (scaler_ ? scaler_->scale(loss) : loss).backward();
    mark(timer, kPhaseBackward);
    total = total.defined() ? total + loss.detach() : loss.detach();
    ++micro_batches_;
  }
  if (hook_) {
    hook_->after_backward();  // gradients averaged over ranks
    mark(timer, kPhaseCommunication);
  }
  return total;
}

torch::Tensor Trainer::forward_backward(StepTimer* timer) {
  const Batch batch = next_batch();
  mark(timer, kPhaseData);
  return run_micro_batches(batch, timer, nullptr);
}

void Trainer::optimizer_step(StepTimer* timer) {
  if (settings_.lr_schedule != LrSchedule::constant) {
    const double rate = scheduled_learning_rate(settings_, optimizer_steps_);
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(rate);
  }
  if (scaler_) scaler_->unscale_(*optimizer_);  // clipping works on true gradients
  if (settings_.clip_grad_norm > 0)
    grad_norms_.push_back(torch::nn::utils::clip_grad_norm_(module_->parameters(), settings_.clip_grad_norm));
  if (scaler_) {
    scaler_->step(*optimizer_);  // skipped when a gradient is inf/NaN
    scaler_->update();
  } else {
    optimizer_->step();
  }
  compat::zero_grad_set_to_none(*optimizer_);  // gradients freed until the next backward writes them
  ++optimizer_steps_;
  mark(timer, kPhaseOptimizer);
}

torch::Tensor Trainer::step(StepTimer* timer) {
  auto loss = forward_backward(timer);
  optimizer_step(timer);
  return loss;
}

namespace {
// A StepTimer that marks the step's phases on a memory timeline instead of timing them.
class TimelinePhaseMarks final : public StepTimer {
 public:
  explicit TimelinePhaseMarks(MemoryTimelineRecorder& recorder) : recorder_(recorder) {}
  void start() override { last_ = recorder_.now_ms(); }
  void mark(int phase) override {
    const double now = recorder_.now_ms();
    recorder_.add_phase(phase_name(phase), last_, now);
    last_ = now;
  }
  std::vector<std::vector<double>> collect_phases_ms(int) override { return {}; }
  std::string description() const override { return "phase marks on the memory timeline"; }

 private:
  MemoryTimelineRecorder& recorder_;
  double last_ = 0;
};
}  // namespace

TrainingMemory Trainer::ledger_step(MemoryProbe& probe, MemoryTimeline* timeline, size_t timeline_points) {
  if (optimizer_steps_ != 0) throw Error("Trainer::ledger_step must be the first step (it measures optimizer state)");
  TrainingMemory m;
  m.parameters = parameter_bytes_;
  m.loss_scaler = scaler_bytes_;
  Batch batch = next_batch();
  m.batch = batch_bytes(batch);
  const int64_t k = settings_.accumulate, micro = settings_.batch_size / k;
  Batch first = k == 1 ? batch : slice_batch(batch, 0, micro);

  // One forward and backward first, then the gradients set to none: lazily created library state (thread
  // pools' scratch; on CUDA the cuBLAS workspace of autograd's device thread, which the first backward
  // allocates with its own handle) is then allocated before anything is measured, and stays out of the
  // gradients and optimizer state. No optimizer step: the weights do not change. (The gradient hook is not
  // told: nothing is communicated.)
  forward_loss(first).backward();
  compat::zero_grad_set_to_none(*optimizer_);
  synchronize(device_);
  const int64_t start = probe.allocated_bytes();  // parameters, scaler, batch (+ baseline)
  probe.reset_peak();
  int64_t held_without_grad = 0;

  // The step's micro-batches as every step runs them (run_micro_batches), the first one measured: its forward
  // three times, in one autocast region (amp only) whose end, before its backward, clears the cast cache.
  std::unique_ptr<AutocastGuard> autocast;
  FirstMicroBatch measured;
  measured.loss = [&](const Batch& mb) {
    if (is_amp(settings_.precision))
      autocast = std::make_unique<AutocastGuard>(device_.type(), autocast_dtype(settings_.precision));
    // Weight copies: what autocast's cast cache holds after a forward with grad once its outputs and
    // graph are gone: the low-precision copies of the weights, kept until the autocast region ends
    // (and saved for backward, as the matmuls' inputs).
    { auto loss = training_loss(workload_, settings_, workload_.forward(*module_, mb.input), mb); }
    synchronize(device_);
    m.weight_copies = probe.allocated_bytes() - start;
    // Activations: what a forward with grad keeps alive (outputs + tensors saved for backward) minus
    // what the same forward keeps alive without grad = the tensors saved for backward. Training needs
    // them because backward computes each layer's gradient from that layer's forward inputs. (Both
    // include the cached weight copies, which cancel.)
    {
      torch::NoGradGuard no_grad;
      auto loss = training_loss(workload_, settings_, workload_.forward(*module_, mb.input), mb);
      synchronize(device_);
      held_without_grad = probe.allocated_bytes() - start;
    }
    return training_loss(workload_, settings_, workload_.forward(*module_, mb.input), mb);
  };
  measured.before_backward = [&] {
    synchronize(device_);
    m.activations = probe.allocated_bytes() - start - held_without_grad;
    autocast.reset();
  };
  auto total = run_micro_batches(batch, nullptr, &measured);
  ledger_loss_ = total.item<double>();
  total.reset();
  synchronize(device_);
  const int64_t after_backward = probe.allocated_bytes();
  // Gradients: one per trainable weight, written by backward and read by the optimizer.
  m.gradients = after_backward - start;
  // Optimizer state: created by the first step (momentum buffer; Adam's two moments) and kept for the
  // whole run; inference has no optimizer at all. (Measured across optimizer_step(), which also frees
  // the gradients: add them back.)
  optimizer_step();
  synchronize(device_);
  m.optimizer_state = probe.allocated_bytes() - after_backward + m.gradients;
  // This step's batch goes (after the ledger's differences, which count it) before the second step takes its
  // own: a step holds one batch (on CUDA its copy on the device, in pure bf16 a floating input's bf16 copy); kept,
  // it would be counted twice in the peak.
  first = Batch{};
  batch = Batch{};
  // The peak is that of a steady-state step too: from the second step on, the optimizer state is live
  // during forward and backward, which the first step (that creates it) does not show. The memory timeline is
  // this step's.
  if (timeline != nullptr) {
    MemoryTimelineRecorder recorder(device_, probe, baseline_bytes_);
    TimelinePhaseMarks marks(recorder);
    marks.start();
    step(&marks);
    synchronize(device_);
    *timeline = recorder.finish(
        "one steady-state training step (the second ledger step: the optimizer state is "
        "live throughout, as in every step after the first)",
        timeline_points == 0 ? std::numeric_limits<size_t>::max() : timeline_points);
  } else {
    step();
    synchronize(device_);
  }
  m.peak = probe.peak_allocated_bytes() - baseline_bytes_;
  m.peak_reserved = probe.peak_reserved_bytes();
  m.comm_buffers = hook_held_bytes_;  // measured around building the hook (measure_training)
  m.other = m.peak - (m.parameters + m.gradients + m.optimizer_state + m.weight_copies + m.loss_scaler + m.activations +
                      m.comm_buffers);
  return m;
}

namespace training {

PhaseSummary summarize_phases(const std::vector<std::vector<double>>& per_step, bool with_communication) {
  PhaseSummary out;
  double total = 0;
  std::vector<double> per_phase_total(kPhaseCount, 0.0);
  std::vector<std::vector<double>> per_phase(kPhaseCount);
  for (const auto& step : per_step) {
    double sum = 0;
    for (size_t p = 0; p < kPhaseCount && p < step.size(); ++p) {
      sum += step[p];
      per_phase[p].push_back(step[p]);
      per_phase_total[p] += step[p];
    }
    out.step_ms.push_back(sum);
    total += sum;
  }
  for (int p = 0; p < kPhaseCount; ++p) {
    const auto i = static_cast<size_t>(p);
    if (p == kPhaseCommunication && !with_communication) continue;
    out.phases.push_back({static_cast<TrainPhase>(p), phase_name(p),
                          per_phase[i].empty() ? 0.0 : summarize(per_phase[i]).p50,
                          total > 0 ? per_phase_total[i] / total : 0.0});
  }
  return out;
}

std::vector<std::pair<int64_t, double>> loss_curve(const std::vector<std::optional<double>>& losses, int64_t every) {
  const int64_t n = static_cast<int64_t>(losses.size());
  if (every <= 0) every = std::max<int64_t>(1, n / 10);
  std::vector<std::pair<int64_t, double>> curve;
  for (int64_t i = 0; i < n; ++i) {
    const auto& loss = losses[static_cast<size_t>(i)];
    if (loss && (i == 0 || (i + 1) % every == 0 || i == n - 1 || !std::isfinite(*loss)))
      curve.emplace_back(i + 1, *loss);
  }
  return curve;
}

Throughput throughput(const ModelFacts& facts, int64_t batch_size, double mean_step_ms) {
  Throughput t;
  const double seconds = mean_step_ms / 1e3;
  if (!(seconds > 0)) return t;
  t.samples_per_s = static_cast<double>(batch_size) / seconds;
  t.tokens_per_s = t.samples_per_s * static_cast<double>(facts.tokens_per_sample);
  // Forward + backward, backward at about 2x forward: 3x the forward FLOPs.
  t.model_flops_per_step = 3.0 * facts.forward_flops_per_sample * static_cast<double>(batch_size);
  t.achieved_tflops = t.model_flops_per_step / seconds / 1e12;
  return t;
}

}  // namespace training

namespace {

// A StepTimer that leaves the step's phase boundaries in the profile, as zero-length user scopes.
class ProfilerPhaseMarks final : public StepTimer {
 public:
  void start() override { detail::mark_profile("tvie::start"); }
  void mark(int phase) override { detail::mark_profile(std::string("tvie::end::") + phase_name(phase)); }
  std::vector<std::vector<double>> collect_phases_ms(int) override { return {}; }
  std::string description() const override { return "phase marks in a profile"; }
};

// One more step under LibTorch's profiler, its forward and backward time by operator class (tvie/class_times.hpp).
ProfiledClassTimes profile_step_by_class(Trainer& trainer, const TrainSettings& settings, const c10::Device& device,
                                         bool with_hook) {
  ProfiledClassTimes t;
  if (settings.cuda_graph) {
    t.unavailable = "not with a CUDA graph (its replay is timed whole)";
    return t;
  }
  if (with_hook) {
    t.unavailable = "not in data-parallel runs (the profiled step's communication would join the timed steps')";
    return t;
  }
  ProfilerPhaseMarks marks;
  synchronize(device);  // no earlier kernel in the profile
  return detail::profile_phases_by_class(
      [&] {
        marks.start();
        trainer.step(&marks);
        synchronize(device);
      },
      device.is_cuda(), {phase_name(kPhaseForward), phase_name(kPhaseBackward)}, "one step after the timed ones");
}

// --tf32: LibTorch's float32 matmul precision "high" (TF32 on CUDA's tensor cores) for the run, then back.
class Tf32Scope {
 public:
  explicit Tf32Scope(bool on) : on_(on), before_(at::globalContext().float32MatmulPrecision()) {
    if (on_) at::globalContext().setFloat32MatmulPrecision("high");
  }
  ~Tf32Scope() {
    if (!on_) return;
    switch (before_) {
      case at::Float32MatmulPrecision::HIGHEST:
        at::globalContext().setFloat32MatmulPrecision("highest");
        break;
      case at::Float32MatmulPrecision::HIGH:
        break;
      case at::Float32MatmulPrecision::MEDIUM:
        at::globalContext().setFloat32MatmulPrecision("medium");
        break;
    }
  }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool on_;
  at::Float32MatmulPrecision before_;
};

}  // namespace

TrainingResult measure_training(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
                                std::shared_ptr<torch::nn::Module>* trained, const TrainingHooks& hooks) {
  const Tf32Scope tf32(settings.tf32 && device.is_cuda());
  auto probe = make_memory_probe(device);
  TrainingResult r;
  r.predicted = predict_training_memory(workload, settings, static_cast<bool>(hooks.make_gradient_hook), device);
  log::info("memory plan (predicted before the run): " + describe(r.predicted));
  if (settings.check_free_memory)
    detail::refuse_beyond_free_memory(r.predicted.peak, device,
                                      cat("training ", workload.name(), " at batch ", settings.batch_size));
  std::vector<torch::Tensor> losses;  // one per step, read after the loop
  bool with_hook = false;
  try {
    Trainer trainer(workload, settings, device, probe.get());
    if (hooks.make_gradient_hook) {
      GradientHook* hook = nullptr;
      // What building the hook leaves allocated (data parallelism: the flat gradient buckets).
      const auto held = detail::measure_added_bytes(probe.get(), device,
                                                    [&] { hook = hooks.make_gradient_hook(trainer.module_ptr()); });
      trainer.set_gradient_hook(hook, held.added);
      with_hook = hook != nullptr;
    }
    r.memory = trainer.ledger_step(*probe, &r.memory_timeline);
    if (with_hook) trainer.gradient_hook()->timing_starts();  // the ledger steps are not timed
    log::info(cat("ledger steps done; ", settings.warmup_steps, " warm-up + ", settings.steps, " timed steps follow"));
    r.first_loss = trainer.ledger_loss();
    losses.push_back(torch::full({}, r.first_loss));
    losses.push_back(torch::Tensor());  // the second ledger step's loss is not kept
    for (int64_t i = 0; i < settings.warmup_steps; ++i) losses.push_back(trainer.step());
    auto timer = make_step_timer(device);
    auto meter = make_energy_meter(device);
    synchronize(device);  // the window holds the timed steps' device work only
    meter->start();
    if (settings.cuda_graph) {
      auto graph = detail::make_graphed_step(trainer, settings, device);
      r.cuda_graph = true;
      r.cuda_graph_scope = graph->scope();
      for (int64_t i = 0; i < settings.steps; ++i) {
        timer->start();
        losses.push_back(graph->replay(timer.get()));
      }
    } else {
      for (int64_t i = 0; i < settings.steps; ++i) {
        timer->start();
        losses.push_back(trainer.step(timer.get()));
      }
    }
    synchronize(device);
    r.energy = meter->stop();
    auto timed = timer->collect_steps(kPhaseCount);
    r.step_start_ms = std::move(timed.start_ms);
    r.step_phases_ms = timed.phases_ms;
    auto phases = training::summarize_phases(timed.phases_ms, with_hook);
    r.step_ms = std::move(phases.step_ms);
    r.phases = std::move(phases.phases);
    r.timer = timer->description();
    if (settings.profile_classes) r.time_by_class = profile_step_by_class(trainer, settings, device, with_hook);
    r.optimizer_steps = trainer.optimizer_steps();
    r.micro_batches = trainer.micro_batches();
    r.checkpointed_blocks = trainer.checkpointed_blocks();
    r.data_pool_bytes = trainer.data_pool_bytes();
    if (auto* scaler = trainer.scaler()) {
      r.loss_scaling = true;
      r.initial_scale = scaler->options().initial_scale;
      r.final_scale = scaler->current_scale();
      r.skipped_steps = scaler->skipped_steps();
    }
    if (settings.clip_grad_norm > 0) {
      r.clip_max_norm = settings.clip_grad_norm;
      r.grad_norm = summarize(trainer.grad_norms());
      for (double n : trainer.grad_norms()) r.clipped_steps += n > settings.clip_grad_norm;
    }
    if (trained) *trained = trainer.module_ptr();
  } catch (const c10::OutOfMemoryError&) {
    throw OutOfMemory(
        cat("training ", workload.name(), " at batch ", settings.batch_size, " does not fit on ", device.str()));
  } catch (const c10::Error& e) {
    if (!detail::is_cpu_allocation_failure(e)) throw;
    throw OutOfMemory(cat("training ", workload.name(), " at batch ", settings.batch_size, " does not fit on ",
                          device.str(), " (the host refused an allocation)"));
  }
  std::vector<double> loss_values;  // read once, after the timed steps (no sync inside the loop)
  loss_values.reserve(losses.size());
  for (const auto& l : losses)
    loss_values.push_back(l.defined() ? l.detach().to(torch::kCPU, torch::kFloat64).item<double>()
                                      : std::numeric_limits<double>::quiet_NaN());
  if (hooks.reduce_losses) hooks.reduce_losses(loss_values);
  std::vector<std::optional<double>> recorded(loss_values.size());
  for (size_t i = 0; i < losses.size(); ++i) {
    if (!losses[i].defined()) continue;
    recorded[i] = loss_values[i];
    if (std::isfinite(loss_values[i])) continue;
    if (r.non_finite_losses++ == 0) r.first_non_finite_step = static_cast<int64_t>(i) + 1;
  }
  if (r.non_finite_losses > 0)
    log::warn(cat("the loss is not finite from step ", r.first_non_finite_step, " (", r.non_finite_losses,
                  " recorded steps): the run diverged"));
  r.loss_curve = training::loss_curve(recorded, settings.loss_every);
  r.final_loss = r.loss_curve.back().second;

  r.memory_counter = probe->counter_description();
  r.precision = settings.precision;
  r.checkpoint_every = settings.checkpoint_every;
  r.ledger_steps = Trainer::kLedgerSteps;
  r.warmup_steps = settings.warmup_steps;
  r.timed_steps = settings.steps;
  r.step = summarize(r.step_ms);

  const ModelFacts facts = workload.facts();
  const auto t = training::throughput(facts, settings.batch_size, r.step.mean);
  r.samples_per_s = t.samples_per_s;
  r.tokens_per_s = t.tokens_per_s;
  r.model_flops_per_step = t.model_flops_per_step;
  r.achieved_tflops = t.achieved_tflops;
  if (r.energy.available() && settings.steps > 0)
    r.joules_per_sample = r.energy.joules / static_cast<double>(settings.steps * settings.batch_size);
  return r;
}

}  // namespace tvie
