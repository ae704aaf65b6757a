// The tuned serving stack (tvie plan --stack tuned): the traced work as a TensorRT-class stack runs it, and each
// card's fraction of its peak calibrated on MLPerf Inference's ResNet-50 Offline result.
#include "core/text.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/models.hpp>
#include <tvie/predict.hpp>
#include <tvie/projection.hpp>

namespace tvie {
namespace {

// The matrix units' peak a tuned kernel in `dtype` runs at, and the bytes of one activation element and of one weight
// element.
struct TunedDtype {
  const char* peak;
  double activation_bytes, weight_bytes;
};
TunedDtype tuned_dtype(InferenceDtype dtype) {
  switch (dtype) {
    case InferenceDtype::int8:
      return {"int8_tops", 1, 1};
    case InferenceDtype::fp8:
      return {"fp8_tflops", 1, 1};
    case InferenceDtype::fp16:
      return {"fp16_tflops", 2, 2};
    case InferenceDtype::bf16:
      return {"bf16_tflops", 2, 2};
    case InferenceDtype::int8_weight_only:  // int8 weights, bf16 activations and products
      return {"bf16_tflops", 2, 1};
    case InferenceDtype::fp32:
      break;
  }
  return {"fp32_tflops", 4, 4};
}

bool matrix_class(OpClass c) { return c == OpClass::matmul || c == OpClass::convolution || c == OpClass::attention; }

// ResNet-50 at the anchor's batch in int8 on the tuned stack (traced once).
const StepWork& anchor_work() {
  static const StepWork work = [] {
    const auto resnet = make_zoo_workload("resnet", "resnet50");
    InferSettings i;
    i.batch_size = kTunedAnchorBatch;
    i.dtype = InferenceDtype::int8;
    return tuned_inference_work(inference_batch_work(*resnet, i, c10::kCUDA), i, c10::kCUDA);  // the GPUs' anchor
  }();
  return work;
}

}  // namespace

StepWork tuned_inference_work(const StepWork& work, const InferSettings& traced, const c10::Device& device) {
  const TunedDtype d = tuned_dtype(traced.dtype);
  // The dtype tvie's copy computes its activations in as traced (around int8 Linears: fp32 on the CPU, bf16 on CUDA;
  // bf16 around fp8 ones).
  const double traced_bytes = static_cast<double>(activation_query(traced, device).weight_bytes);
  const double scale = d.activation_bytes / traced_bytes;
  StepWork w = work;
  for (PhaseWork* phase : {&w.forward, &w.backward}) {
    for (size_t i = 0; i < phase->by_class.size(); ++i) {
      OpWork& o = phase->by_class[i];
      if (!matrix_class(static_cast<OpClass>(i))) {
        o = OpWork{};  // fused into the epilogue of the product before it
        continue;
      }
      o.bytes *= scale;
    }
  }
  w.matmul_peak = w.convolution_peak = w.attention_peak = d.peak;
  w.fp16_without_bf16 = false;
  w.convolution_tf32 = traced.dtype == InferenceDtype::fp32;
  w.weight_element_bytes = d.weight_bytes;
  w.precision = cat(to_string(traced.dtype), " (tuned stack)");
  return w;
}

int64_t tuned_activation_bytes(InferenceDtype dtype) {
  return static_cast<int64_t>(tuned_dtype(dtype).activation_bytes);
}

TunedCalibration tuned_calibration(const Accelerator& card) {
  TunedCalibration c;
  const PublishedResult* anchor = card.published_result(kTunedAnchor);
  if (anchor == nullptr) {
    c.unsupported = cat(card.id, " has no ", kTunedAnchor,
                        " result in the catalog to calibrate the tuned stack (--stack tvie: tvie's own kernels)");
    return c;
  }
  if (!(card.int8_tops > 0)) {
    c.unsupported = cat(card.id, " has no int8_tops peak in the catalog (the anchor runs in int8)");
    return c;
  }
  const StepWork& work = anchor_work();
  double at_peak_s = 0;
  for (size_t i = 0; i < work.forward.by_class.size(); ++i)
    if (matrix_class(static_cast<OpClass>(i))) at_peak_s += work.forward.by_class[i].flops / (card.int8_tops * 1e12);
  const double launches_s = work.forward.total().kernels * card.efficiency.kernel_overhead_us * 1e-6;
  const double published_s = static_cast<double>(kTunedAnchorBatch) / anchor->samples_per_s;
  c.anchor_samples_per_s = anchor->samples_per_s;
  c.source = cat(anchor->source, " (", anchor->stack, ", ", anchor->precision, ")");
  if (!(published_s > launches_s) || at_peak_s / (published_s - launches_s) > 1) {
    c.unsupported = cat(card.id, "'s ", kTunedAnchor, " result (", anchor->samples_per_s,
                        " samples/s) beats its int8 peak by the traced FLOPs: not a calibration");
    return c;
  }
  c.compute_efficiency = at_peak_s / (published_s - launches_s);
  c.supported = true;
  const ProjectedTime back = project_time(work, tuned_card(card, c));
  c.projected_samples_per_s =
      back.supported && back.estimate_s > 0 ? static_cast<double>(kTunedAnchorBatch) / back.estimate_s : 0;
  return c;
}

Accelerator tuned_card(const Accelerator& card, const TunedCalibration& calibration) {
  if (!calibration.supported) throw InvalidArgument("card", card.id, calibration.unsupported);
  Accelerator tuned = card;
  const std::string basis = cat("tuned stack: calibrated on ", kTunedAnchor, " ", calibration.anchor_samples_per_s,
                                " samples/s, ", calibration.source);
  for (auto [field, member] :
       {std::pair{"matmul", &Efficiency::matmul}, std::pair{"convolution", &Efficiency::convolution},
        std::pair{"attention", &Efficiency::attention}}) {
    tuned.efficiency.*member = calibration.compute_efficiency;
    tuned.efficiency.basis[field] = basis;
  }
  return tuned;
}

}  // namespace tvie
