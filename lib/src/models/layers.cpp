// tvie::nn::Linear and its low-precision inference weights. See layers.hpp and docs/metrics.md
// ("Inference precisions").
#include <tvie/layers.hpp>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cmath>

#include "core/compat.hpp"
#include "core/enum_names.hpp"
#include "measure/glibc_heap.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace tvie::nn {
namespace {

constexpr double kInt8Max = 127.0;  // symmetric int8: [-127, 127], zero point 0
constexpr double kE4m3Max = 448.0;  // largest finite float8_e4m3fn

// The quantized operators, looked up in the dispatcher once (linear_dynamic runs in every forward).
const c10::OperatorHandle& linear_prepack_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  return op;
}
const c10::OperatorHandle& linear_dynamic_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  return op;
}

c10::IValue call_op(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  op.callBoxed(&stack);
  return stack.at(0);
}

// Per-row (output channel) symmetric scales: amax / qmax, never zero.
torch::Tensor row_scales(const torch::Tensor& w, double qmax) { return (w.abs().amax(1) / qmax).clamp_min(1e-12); }

// Activations of _int_mm / _scaled_mm need a few rows at least (_int_mm: M > 16) and, for _scaled_mm, a
// row count cuBLASLt accepts (a multiple of 16 here); pad with zero rows and drop their results after.
torch::Tensor pad_rows(const torch::Tensor& x, int64_t min_rows, int64_t multiple = 1) {
  int64_t rows = std::max(x.size(0), min_rows);
  rows = (rows + multiple - 1) / multiple * multiple;
  if (rows == x.size(0)) return x;
  return torch::cat({x, torch::zeros({rows - x.size(0), x.size(1)}, x.options())});
}

// LibTorch 2.14 marks quantize_per_channel (the quantized tensor creation functions) as deprecated and
// warns once per process on stderr; tvie logs that warning at debug level instead of interleaving it with
// its tables. (The dynamic-quantisation path may have to move when LibTorch removes them.)
class DebugLogWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override { log::debug(cat("LibTorch: ", warning.msg())); }
};

}  // namespace

LinearImpl::LinearImpl(int64_t in_features_, int64_t out_features_, bool with_bias_)
    : in_features(in_features_), out_features(out_features_), with_bias(with_bias_) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", torch::empty({out_features, in_features}));
  bias = with_bias ? register_parameter("bias", torch::empty({out_features}))
                   : register_parameter("bias", {}, /*requires_grad=*/false);
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

torch::Tensor LinearImpl::forward(const torch::Tensor& input) {
  switch (kind_) {
    case LinearWeights::dense:
      return torch::nn::functional::linear(input, weight, bias);
    case LinearWeights::int8_dynamic:
      // Quantises `input` per call (per-tensor, uint8, reduce_range as torch.ao's dynamic Linear on
      // x86/fbgemm), multiplies in int8 with int32 accumulation, dequantises and adds the fp32 bias.
      return call_op(linear_dynamic_op(), {input.to(torch::kFloat32).contiguous(), packed_, true}).toTensor();
    case LinearWeights::int8_cuda: {
      auto shape = input.sizes().vec();
      shape.back() = out_features;
      // [M, K] in the copy's dtype, which the emptied weight keeps: bf16 (fp16 on a GPU without bf16 units).
      const auto x = input.reshape({-1, in_features}).to(weight.scalar_type());
      const int64_t rows = x.size(0);
      // max|x_row| / 127 per row: one reduction reads x and reduces in fp32; the scaling and the floor act in place
      // on the [M, 1] fp32 scales.
      const auto x_scale = torch::linalg_vector_norm(x, INFINITY, {1}, /*keepdim=*/true, torch::kFloat32)
                               .div_(kInt8Max)
                               .clamp_min_(1e-12);
      torch::Tensor xq;
      {  // x / x_scale computed in fp32 inside the kernel and written in x's dtype (no fp32 [M, K]), rounded and
         // clamped in place, then narrowed to int8. Rounding the quotient to bf16 first moves a value by at most a
         // quarter step more, and only where |x / x_scale| >= 64 (bf16's spacing there is 0.5; fp16's is finer).
        auto quotient = at::empty_like(x);
        xq = pad_rows(at::div_out(quotient, x, x_scale).round_().clamp_(-kInt8Max, kInt8Max).to(torch::kInt8), 17);
      }
      const auto acc = at::_int_mm(xq, q_weight_.t()).narrow(0, 0, rows);  // [M, N] int32
      // The int32 sums times the row scales, computed in fp32 inside the kernel and written in x's dtype; the weight
      // scales and the bias act in place on it.
      auto y = at::empty({rows, out_features}, x.options());
      at::mul_out(y, acc, x_scale).mul_(q_scale_.unsqueeze(0));
      if (q_bias_.defined()) y.add_(q_bias_);
      return y.to(input.scalar_type()).reshape(shape);
    }
    case LinearWeights::fp8_e4m3: {
      auto shape = input.sizes().vec();
      shape.back() = out_features;
      const auto x = input.reshape({-1, in_features}).to(torch::kBFloat16);  // [M, K] (the copy is bf16: no copy)
      // max|x| / 448 per tensor: one reduction reads the bf16 x and reduces in fp32 (no fp32 copy of x); the scaling
      // and the floor act in place on the one element.
      const auto x_scale = torch::linalg_vector_norm(x, INFINITY, std::nullopt, /*keepdim=*/false, torch::kFloat32)
                               .div_(kE4m3Max)
                               .clamp_min_(1e-12);  // [] fp32, as _scaled_mm takes it
      const int64_t rows = x.size(0);
      // The bf16 quotient (computed in fp32 inside the kernel), clamped in place, cast to e4m3. Held in bf16 first, a
      // value that bf16 rounds onto the midpoint between two e4m3 numbers goes to the even one: at most one e4m3 step
      // from the quotient instead of half a step, for the few values within bf16's spacing of a midpoint.
      const auto xq = pad_rows(x.div(x_scale).clamp_(-kE4m3Max, kE4m3Max).to(torch::kFloat8_e4m3fn), 16, 16);
      // a row-major [M, K], b = q_weight_.t() column-major [K, N], as cuBLASLt wants them.
      const auto y = at::_scaled_mm(xq, q_weight_.t(), x_scale, q_scale_,
                                    q_bias_.defined() ? std::optional<torch::Tensor>(q_bias_) : std::nullopt,
                                    std::nullopt, torch::kBFloat16, /*use_fast_accum=*/false);
      return y.narrow(0, 0, rows).to(input.scalar_type()).reshape(shape);
    }
    case LinearWeights::int8_weight_only: {
      // y = (x @ q_weight.t()) * q_scale in one kernel that widens each int8 weight as it reads it: the weights
      // cross memory in one byte each, the activations stay bf16 (the copy's dtype).
      auto shape = input.sizes().vec();
      shape.back() = out_features;
      const auto x = input.reshape({-1, in_features}).to(torch::kBFloat16).contiguous();  // [M, K]
      auto y = at::_weight_int8pack_mm(x, q_weight_, q_scale_);                           // [M, N] bf16
      if (q_bias_.defined()) y = y + q_bias_;
      return y.to(input.scalar_type()).reshape(shape);
    }
  }
  return {};
}

bool LinearImpl::shape_supported(LinearWeights kind) const {
  return linear_shape_supported(kind, in_features, out_features);
}

bool LinearImpl::convert_weights(LinearWeights kind) {
  if (kind == kind_) return true;
  if (kind_ != LinearWeights::dense)
    throw InvalidArgument("infer.dtype", to_string(kind), "one conversion per inference copy (already converted)");
  const c10::Device device = weight.device();
  std::string why;
  if (!linear_kernel_available(kind, device, &why)) throw InvalidArgument("infer.dtype", to_string(kind), why);
  if (!shape_supported(kind)) return false;  // e.g. a 10-class head under _int_mm: stays dense
  torch::NoGradGuard no_grad;
  const auto w = weight.detach().to(torch::kFloat32).contiguous();  // [out, in]
  switch (kind) {
    case LinearWeights::dense:
      return true;
    case LinearWeights::int8_dynamic: {
      bool x86 = false;
      for (auto engine : at::globalContext().supportedQEngines()) x86 = x86 || engine == at::QEngine::X86;
      at::globalContext().setQEngine(x86 ? at::QEngine::X86 : at::QEngine::FBGEMM);
      const auto scales = row_scales(w, kInt8Max).to(torch::kFloat64);
      const auto zero_points = torch::zeros({out_features}, torch::kInt64);
      DebugLogWarnings to_debug_log;
      c10::WarningUtils::WarningHandlerGuard guard(&to_debug_log);
      const auto q = at::quantize_per_channel(w, scales, zero_points, 0, torch::kQInt8);
      const c10::IValue b = bias.defined() ? c10::IValue(bias.detach().to(torch::kFloat32)) : c10::IValue();
      const auto& prepack = linear_prepack_op();
      const int64_t heap_before = tvie::detail::heap_in_use_bytes();
      packed_ = call_op(prepack, {q, b});  // fbgemm copies q into its packed layout
      packed_bytes_ = heap_before < 0 ? -1 : tvie::detail::heap_in_use_bytes() - heap_before;
      break;
    }
    case LinearWeights::int8_cuda: {
      q_scale_ = row_scales(w, kInt8Max);                                                           // [out]
      q_weight_ = (w / q_scale_.unsqueeze(1)).round().clamp(-kInt8Max, kInt8Max).to(torch::kInt8);  // [out, in]
      if (bias.defined()) q_bias_ = bias.detach();  // in the copy's dtype, as the rest
      break;
    }
    case LinearWeights::int8_weight_only: {
      const auto scale = row_scales(w, kInt8Max);                                                // [out] fp32
      q_weight_ = (w / scale.unsqueeze(1)).round().clamp(-kInt8Max, kInt8Max).to(torch::kInt8);  // [out, in]
      q_scale_ = scale.to(torch::kBFloat16);  // the kernel takes the scales in the activations' dtype
      if (bias.defined()) q_bias_ = bias.detach().to(torch::kBFloat16);
      break;
    }
    case LinearWeights::fp8_e4m3: {
      q_scale_ = (w.abs().amax() / kE4m3Max).clamp_min(1e-12);  // [] per tensor
      q_weight_ = (w / q_scale_).clamp(-kE4m3Max, kE4m3Max).to(torch::kFloat8_e4m3fn);
      if (bias.defined()) q_bias_ = bias.detach().to(torch::kBFloat16);
      break;
    }
  }
  // Release the dense copy: the parameters stay registered (names unchanged) but hold nothing.
  weight.set_data(torch::empty({0}, weight.options()));
  if (bias.defined()) bias.set_data(torch::empty({0}, bias.options()));
  kind_ = kind;
  return true;
}

int64_t convert_linear_weights(torch::nn::Module& module, LinearWeights kind, int64_t* kept_dense,
                               int64_t* packed_bytes) {
  int64_t converted = 0, dense = 0, packed = 0;
  for (const auto& child : module.modules(/*include_self=*/true)) {
    if (auto* linear = child->as<LinearImpl>()) {
      if (linear->convert_weights(kind)) {
        ++converted;
        packed = packed < 0 || linear->packed_bytes() < 0 ? -1 : packed + linear->packed_bytes();
      } else {
        ++dense;
      }
    }
  }
  if (kept_dense) *kept_dense = dense;
  if (packed_bytes) *packed_bytes = packed;
  return converted;
}

}  // namespace tvie::nn
