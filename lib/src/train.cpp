// Scenario: training. See train.hpp for the contract and docs/metrics.md for every figure.
#include <tvie/train.hpp>

#include "compat.hpp"
#include "harness.hpp"
#include "optimizers.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/timing.hpp>

namespace tvie {

Trainer::Trainer(const Workload& workload, const TrainSettings& settings, const c10::Device& device, MemoryProbe* probe)
    : workload_(workload), settings_(settings), device_(device) {
  validate(settings_);
  const auto built = detail::measure_added_bytes(probe, device_, [&] {
    torch::manual_seed(settings_.seed);
    module_ = workload_.make_module();  // fp32, on the CPU
    module_->to(device_);
    module_->train();
  });
  baseline_bytes_ = built.baseline;
  parameter_bytes_ = built.added;
  optimizer_ = detail::make_optimizer(settings_, module_->parameters());
  batch_ = workload_.make_batch(settings_.batch_size, device_, settings_.seed);
  const int64_t micro = settings_.batch_size / settings_.accumulate;
  for (int64_t i = 0; i < settings_.accumulate; ++i) micro_.push_back(slice_batch(batch_, i * micro, micro));
}

torch::Tensor Trainer::forward_backward() {
  // Each micro-batch's mean loss is divided by k, so the accumulated gradient is that of the mean loss
  // over the whole batch (the same gradient as one batch of b, for models without BatchNorm).
  torch::Tensor total;
  const double k = static_cast<double>(micro_.size());
  for (const auto& mb : micro_) {
    auto loss = workload_.loss(workload_.forward(*module_, mb.input), mb);
    if (micro_.size() > 1) loss = loss / k;  // no extra kernel on the common k = 1 path
    loss.backward();
    total = total.defined() ? total + loss.detach() : loss.detach();
    ++micro_batches_;
  }
  return total;
}

void Trainer::optimizer_step() {
  optimizer_->step();
  compat::zero_grad_set_to_none(*optimizer_);  // gradients freed until the next backward writes them
  ++optimizer_steps_;
}

torch::Tensor Trainer::step() {
  auto loss = forward_backward();
  optimizer_step();
  return loss;
}

TrainingMemory Trainer::ledger_step(MemoryProbe& probe) {
  if (optimizer_steps_ != 0) throw Error("Trainer::ledger_step must be the first step (it measures optimizer state)");
  TrainingMemory m;
  m.parameters = parameter_bytes_;
  m.batch = batch_bytes(batch_);
  const auto& first = micro_.front();

  // One forward without grad first: lazily created library state (thread pools' scratch, cuBLAS
  // workspaces) is then allocated before anything is measured, and stays out of the categories.
  {
    torch::NoGradGuard no_grad;
    workload_.forward(*module_, first.input);
  }
  synchronize(device_);
  const int64_t start = probe.allocated_bytes();  // parameters + batch (+ baseline)
  probe.reset_peak();

  // Activations: what a forward with grad keeps alive (outputs + tensors saved for backward) minus what
  // the same forward keeps alive without grad (outputs only) = the tensors saved for backward. Training
  // needs them because backward computes each layer's gradient from that layer's forward inputs.
  int64_t held_without_grad = 0;
  {
    torch::NoGradGuard no_grad;
    auto out = workload_.forward(*module_, first.input);
    auto loss = workload_.loss(out, first);
    synchronize(device_);
    held_without_grad = probe.allocated_bytes() - start;
  }
  torch::Tensor total;
  {
    auto out = workload_.forward(*module_, first.input);
    auto loss = workload_.loss(out, first) / static_cast<double>(micro_.size());
    synchronize(device_);
    m.activations = probe.allocated_bytes() - start - held_without_grad;
    loss.backward();
    total = loss.detach();
    ++micro_batches_;
  }
  for (size_t i = 1; i < micro_.size(); ++i) {
    auto loss =
        workload_.loss(workload_.forward(*module_, micro_[i].input), micro_[i]) / static_cast<double>(micro_.size());
    loss.backward();
    total = total + loss.detach();
    ++micro_batches_;
  }
  ledger_loss_ = total.item<double>();
  total.reset();
  synchronize(device_);
  const int64_t after_backward = probe.allocated_bytes();
  // Gradients: one per trainable weight, written by backward and read by the optimizer.
  m.gradients = after_backward - start;
  optimizer_->step();
  synchronize(device_);
  // Optimizer state: created by the first step (momentum buffer; Adam's two moments) and kept for the
  // whole run; inference has no optimizer at all.
  m.optimizer_state = probe.allocated_bytes() - after_backward;
  compat::zero_grad_set_to_none(*optimizer_);
  ++optimizer_steps_;
  // The peak is that of a steady-state step too: from the second step on, the optimizer state is live
  // during forward and backward, which the first step (that creates it) does not show.
  step();
  synchronize(device_);
  m.peak = probe.peak_allocated_bytes() - baseline_bytes_;
  m.peak_reserved = probe.peak_reserved_bytes();
  m.other = m.peak - (m.parameters + m.gradients + m.optimizer_state + m.activations);
  return m;
}

TrainingResult run_training(const Workload& workload, const TrainSettings& settings, const c10::Device& device,
                            std::shared_ptr<torch::nn::Module>* trained) {
  validate(settings);
  auto probe = make_memory_probe(device);
  TrainingResult r;
  try {
    Trainer trainer(workload, settings, device, probe.get());
    r.memory = trainer.ledger_step(*probe);
    r.first_loss = trainer.ledger_loss();
    for (int64_t i = 0; i < settings.warmup_steps; ++i) trainer.step();
    auto timer = make_step_timer(device);
    torch::Tensor loss;
    for (int64_t i = 0; i < settings.steps; ++i) {
      timer->start();
      loss = trainer.step();
      timer->stop();
    }
    r.step_ms = timer->collect_ms();
    r.timer = timer->description();
    r.final_loss = loss.item<double>();
    r.optimizer_steps = trainer.optimizer_steps();
    r.micro_batches = trainer.micro_batches();
    if (trained) *trained = trainer.module_ptr();
  } catch (const c10::OutOfMemoryError& e) {
    throw OutOfMemory(
        cat("training ", workload.name(), " at batch ", settings.batch_size, " does not fit on ", device.str()));
  }
  r.memory_counter = probe->counter_description();
  r.ledger_steps = Trainer::kLedgerSteps;
  r.warmup_steps = settings.warmup_steps;
  r.timed_steps = settings.steps;
  r.step = summarize(r.step_ms);

  const ModelFacts facts = workload.facts();
  const int64_t weight_bytes = facts.parameter_count * 4;
  r.predicted.parameters = weight_bytes + facts.buffer_bytes;
  r.predicted.gradients = weight_bytes;
  r.predicted.optimizer_state = weight_bytes * optimizer_state_multiplier(settings.optimizer);

  const double seconds = r.step.mean / 1e3;
  if (seconds > 0) {
    r.samples_per_s = static_cast<double>(settings.batch_size) / seconds;
    r.tokens_per_s = r.samples_per_s * static_cast<double>(facts.tokens_per_sample);
    r.model_flops_per_step = 3.0 * facts.forward_flops_per_sample * static_cast<double>(settings.batch_size);
    r.achieved_tflops = r.model_flops_per_step / seconds / 1e12;
  }
  return r;
}

}  // namespace tvie
