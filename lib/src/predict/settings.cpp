#include <tvie/settings.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

#include <c10/core/Device.h>

#include <tvie/device.hpp>
#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/kernels.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {

void require_at_least(const std::string& field, int64_t value, int64_t minimum) {
  if (value < minimum) throw InvalidArgument(field, std::to_string(value), cat("an integer >= ", minimum));
}

void require_positive(const std::string& field, double value) {
  if (!(value > 0.0 && std::isfinite(value))) throw InvalidArgument(field, cat(value), "a finite number > 0");
}

}  // namespace

int64_t parse_checkpoint(const std::string& text, const std::string& field) {
  if (text == "none") return 0;
  if (text == "blocks") return 1;
  const std::string prefix = "every-";
  if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() && text.size() < prefix.size() + 5 &&
      text.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    const int64_t k = std::stoll(text.substr(prefix.size()));
    if (k >= 1) return k;
  }
  throw InvalidArgument(field, text, "none, blocks, every-K (K >= 1)");
}

std::string checkpoint_to_string(int64_t every) {
  if (every <= 0) return "none";
  if (every == 1) return "blocks";
  return "every-" + std::to_string(every);
}

std::string to_string(LrSchedule schedule) { return schedule == LrSchedule::constant ? "constant" : "warmup-cosine"; }

LrSchedule parse_lr_schedule(const std::string& text, const std::string& field) {
  if (text == "constant") return LrSchedule::constant;
  if (text == "warmup-cosine") return LrSchedule::warmup_cosine;
  throw InvalidArgument(field, text, "warmup-cosine, constant");
}

int64_t run_optimizer_steps(const TrainSettings& s) {
  return kTrainingLedgerSteps + s.warmup_steps + s.steps + (s.profile_classes ? 1 : 0);
}

int64_t lr_warmup_steps(const TrainSettings& s) {
  if (s.lr_schedule == LrSchedule::constant) return 0;
  return s.lr_warmup_steps > 0 ? s.lr_warmup_steps : std::max<int64_t>(1, run_optimizer_steps(s) / 10);
}

double scheduled_learning_rate(const TrainSettings& s, int64_t step) {
  if (s.lr_schedule == LrSchedule::constant) return s.learning_rate;
  const int64_t total = run_optimizer_steps(s), warmup = lr_warmup_steps(s);
  if (step < warmup) return s.learning_rate * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double min_rate = s.learning_rate / 10;
  if (total - 1 <= warmup) return s.learning_rate;  // no steps left to decay over
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(total - 1 - warmup));  // 0 .. 1
  return min_rate + 0.5 * (1 + std::cos(std::numbers::pi * progress)) * (s.learning_rate - min_rate);
}

void validate(const TrainSettings& s) {
  require_at_least("train.batch_size", s.batch_size, 1);
  require_at_least("train.steps", s.steps, 1);
  require_at_least("train.warmup_steps", s.warmup_steps, 0);
  require_at_least("train.accumulate", s.accumulate, 1);
  if (s.batch_size % s.accumulate != 0)
    throw InvalidArgument("train.accumulate", std::to_string(s.accumulate),
                          cat("a divisor of the batch size ", s.batch_size));
  require_positive("train.learning_rate", s.learning_rate);
  require_at_least("train.lr_warmup_steps", s.lr_warmup_steps, 0);
  if (!(s.momentum >= 0.0 && s.momentum < 1.0)) throw InvalidArgument("train.momentum", cat(s.momentum), "[0, 1)");
  if (!(s.weight_decay >= 0.0 && std::isfinite(s.weight_decay)))
    throw InvalidArgument("train.weight_decay", cat(s.weight_decay), "a finite number >= 0");
  if (!(s.clip_grad_norm >= 0.0 && std::isfinite(s.clip_grad_norm)))
    throw InvalidArgument("train.clip_grad_norm", cat(s.clip_grad_norm), "a finite number >= 0 (0: off)");
  require_at_least("train.checkpoint_every", s.checkpoint_every, 0);
  if (s.fused_optimizer && s.optimizer != OptimizerKind::adam && s.optimizer != OptimizerKind::adamw)
    throw InvalidArgument("train.fused_optimizer", "on",
                          cat("off with ", to_string(s.optimizer), " (LibTorch fuses adam and adamw)"));
  if (s.fused_optimizer && s.cuda_graph)
    throw InvalidArgument("train.fused_optimizer", "on",
                          "off with --cuda-graph (the graph captures LibTorch's own step)");
  if (s.tf32 && s.precision != TrainPrecision::fp32)
    throw InvalidArgument(
        "train.tf32", "on",
        cat("off with ", to_string(s.precision), " (TF32 is fp32's mode; 16-bit products need none)"));
  require_at_least("train.data_batches", s.data_batches, 1);
  require_at_least("train.loss_every", s.loss_every, 0);
  require_positive("train.scaler.initial_scale", s.scaler.initial_scale);
  require_at_least("train.scaler.growth_interval", s.scaler.growth_interval, 1);
  if (s.cuda_graph) {
    // A captured step may not synchronise with the host: the loss scaler reads found_inf on the host
    // to skip a step, clipping reads the norm, and the checkpoint's recompute runs a nested backward.
    if (s.precision == TrainPrecision::amp_fp16)
      throw InvalidArgument("train.precision", "amp-fp16", "fp32, amp-bf16, bf16 with --cuda-graph");
    if (s.clip_grad_norm > 0)
      throw InvalidArgument("train.clip_grad_norm", cat(s.clip_grad_norm), "0 with --cuda-graph");
    if (s.checkpoint_every > 0)
      throw InvalidArgument("train.checkpoint_every", checkpoint_to_string(s.checkpoint_every),
                            "none with --cuda-graph");
    // The captured optimizer step holds the rate it was captured with.
    if (s.lr_schedule != LrSchedule::constant)
      throw InvalidArgument("train.lr_schedule", to_string(s.lr_schedule), "constant with --cuda-graph");
  }
}

void validate(const TrainSettings& s, const c10::Device& device) {
  validate(s);
  if (!device.is_cuda() && s.precision == TrainPrecision::amp_fp16)
    throw InvalidArgument("train.precision", "amp-fp16", "fp32, amp-bf16, bf16 on cpu (amp-fp16 needs a CUDA device)");
  if (!device.is_cuda() && s.cuda_graph)
    throw InvalidArgument("train.cuda_graph", "true", "false on cpu (CUDA graphs need a CUDA device)");
  if (!device.is_cuda() && s.tf32)
    throw InvalidArgument("train.tf32", "on", "off on cpu (TF32 is a mode of NVIDIA's tensor cores: a CUDA device)");
}

void validate(const InferSettings& s) {
  require_at_least("infer.batch_size", s.batch_size, 1);
  require_at_least("infer.steps", s.steps, 1);
  require_at_least("infer.warmup_steps", s.warmup_steps, 0);
}

void validate(const CompareSettings& s, const c10::Device& device) {
  validate(s.train, device);
  require_at_least("compare.new_tokens", s.new_tokens, 0);
  require_at_least("compare.generation_repetitions", s.generation_repetitions, 1);
  if (s.infer_dtype_auto)
    validate(s.infer);  // the dtype is chosen for the device
  else
    validate(s.infer, device);
}

void validate_inference_dtype(InferenceDtype dtype, const c10::Device& device, const std::string& field) {
  // LibTorch runs fp16 matmuls on the CPU only through slow reference kernels; tvie refuses it there
  // rather than report a figure nobody would deploy.
  if (device.is_cpu() && dtype == InferenceDtype::fp16)
    throw InvalidArgument(field, "fp16", "fp32, bf16, int8 on cpu (fp16 needs a CUDA device)");
  std::string why;
  const nn::LinearWeights kind = nn::linear_weights_for(dtype, device);
  if (kind != nn::LinearWeights::dense && !nn::linear_weights_supported(kind, device, &why))
    throw InvalidArgument(field, to_string(dtype),
                          cat(device.is_cpu() ? "fp32, bf16, int8, int8-weight-only" : "fp32, fp16, bf16, int8", " on ",
                              device.str(), " (", why, ")"));
}

void validate(const InferSettings& s, const c10::Device& device) {
  validate(s);
  validate_inference_dtype(s.dtype, device);
  if (!device.is_cuda() && s.cuda_graph)
    throw InvalidArgument("infer.cuda_graph", "true", "false on cpu (CUDA graphs need a CUDA device)");
}

}  // namespace tvie
