// Memory prediction: the whole ledger from the architecture and the settings, before anything runs.
//
// The activations come from a symbolic forward (a "trace") that each zoo model writes beside its module
// code: the same operators in the same order, on shapes instead of tensors, each operator recording the
// tensors LibTorch's autograd saves for its backward (under the dtype the precision gives it) and the
// bytes alive at each moment. The rules per operator are in lib/src/predict/forward_trace.hpp; the
// formulas they add up to are in docs/prediction.md. The types are in tvie/ledger.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <tvie/ledger.hpp>
#include <tvie/settings.hpp>

namespace tvie {

class Workload;

// How the prediction obtains what the kernels hold inside an op on `device`: on the CPU, oneDNN's own bookings asked
// of the oneDNN inside LibTorch (naming its version and where its functions were found), or, where it cannot be
// asked, the configurations written out for AVX2 and AVX-512 without AMX (and why); on CUDA, that its kernels hold
// none the ledger sees.
std::string kernel_scratch_source(const c10::Device& device);

// How the weights of an int8/fp8 inference copy on `device` are predicted (on the CPU: fbgemm's blocking, as asked
// of the fbgemm inside LibTorch, or why it could not be asked); empty for the dense dtypes.
std::string quantised_weights_source(InferenceDtype dtype, const c10::Device& device);

// Pure functions of the workload's analytic facts and trace (nothing runs on a device; the batch's bytes
// come from one CPU batch of the asked size). `data_parallel`: the ranks keep flat gradient buckets; `device`:
// the kernels' saved tensors differ a little between CPU and CUDA (ActivationQuery::cuda).
PredictedTrainingMemory predict_training_memory(const Workload& workload, const TrainSettings& settings,
                                                bool data_parallel = false, const c10::Device& device = c10::kCPU);
PredictedInferenceMemory predict_inference_memory(const Workload& workload, const InferSettings& settings,
                                                  const c10::Device& device = c10::kCPU);

// One line for the log before a run: "parameters 463.0 KiB, gradients ..., peak 4.25 MiB" (llm.c prints its
// memory plan the same way); categories not predicted are left out.
std::string describe(const PredictedTrainingMemory& predicted);

// The query a training or inference setting asks of a workload's trace.
ActivationQuery activation_query(const TrainSettings& settings, const c10::Device& device = c10::kCPU);
ActivationQuery activation_query(const InferSettings& settings, const c10::Device& device = c10::kCPU);

}  // namespace tvie
