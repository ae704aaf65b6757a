// Activation checkpointing as a custom autograd Function (the approach of PyTorch's reentrant checkpoint).
#include <tvie/checkpoint.hpp>

#include <torch/csrc/autograd/custom_function.h>

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/precision.hpp>

namespace tvie {
namespace {

using Fn = std::function<torch::Tensor(const torch::Tensor&)>;

// Owns a copy of the segment's function for as long as the autograd graph needs it.
struct FnHolder : torch::CustomClassHolder {
  explicit FnHolder(Fn f) : fn(std::move(f)) {}
  Fn fn;
};

// The generator `device`'s kernels draw from (a handle sharing the global one's state).
at::Generator generator(const c10::Device& device) { return at::globalContext().defaultGenerator(device); }

torch::Tensor rng_state(const c10::Device& device) {
  auto gen = generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(const c10::Device& device, const torch::Tensor& state) {
  auto gen = generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               c10::intrusive_ptr<FnHolder> holder) {
    // Autograd runs this with grad mode off: fn(input) records no graph and keeps nothing for backward.
    const Fn* fn = &holder->fn;
    ctx->saved_data["fn"] = c10::IValue::make_capsule(holder);
    const auto device_type = input.device().type();
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(device_type);
    ctx->saved_data["autocast_dtype"] = static_cast<int64_t>(at::autocast::get_autocast_dtype(device_type));
    ctx->saved_data["cpu_rng"] = rng_state(c10::Device(c10::kCPU));
    if (input.is_cuda()) ctx->saved_data["device_rng"] = rng_state(input.device());
    ctx->save_for_backward({input});
    return (*fn)(input);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto holder = c10::static_intrusive_pointer_cast<FnHolder>(ctx->saved_data["fn"].toCapsule());
    const Fn* fn = &holder->fn;
    const auto saved = ctx->get_saved_variables();
    auto input = saved[0].detach().requires_grad_(saved[0].requires_grad());
    const auto device = input.device();

    // Replay the forward's random numbers (dropout) and restore the generators afterwards.
    const c10::Device cpu(c10::kCPU);
    const auto cpu_now = rng_state(cpu);
    set_rng_state(cpu, ctx->saved_data["cpu_rng"].toTensor());
    torch::Tensor device_now;
    if (input.is_cuda()) {
      device_now = rng_state(device);
      set_rng_state(device, ctx->saved_data["device_rng"].toTensor());
    }
    torch::Tensor output;
    {
      torch::AutoGradMode grad_on(true);
      AutocastGuard autocast(device.type(), static_cast<c10::ScalarType>(ctx->saved_data["autocast_dtype"].toInt()),
                             ctx->saved_data["autocast"].toBool());
      output = (*fn)(input);
    }
    set_rng_state(cpu, cpu_now);
    if (input.is_cuda()) set_rng_state(device, device_now);

    torch::autograd::backward({output}, {grad_outputs[0]});
    return {input.requires_grad() ? input.grad() : torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpoint(const Fn& fn, const torch::Tensor& input) {
  if (!torch::GradMode::is_enabled()) return fn(input);  // nothing to save: run it plainly
  if (!input.requires_grad())
    throw InvalidArgument("checkpoint.input", "a tensor that does not require grad",
                          "an input that requires grad (else backward never reaches the segment)");
  return CheckpointFunction::apply(input, c10::make_intrusive<FnHolder>(fn));
}

}  // namespace tvie
