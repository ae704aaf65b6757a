// Settings: plain structs with units in the field names and defaults, validated once at the boundary
// (validate() throws InvalidArgument naming the field, the value and the accepted values).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/ledger.hpp>

namespace tvie {

// "none" -> 0, "blocks" -> 1, "every-K" -> K (checkpoint every K-th block).
int64_t parse_checkpoint(const std::string& text, const std::string& field = "train.checkpoint_every");
std::string checkpoint_to_string(int64_t every);
// The learning rate over a run's optimizer steps: constant, or a linear warm-up to the rate and a cosine decay to a
// tenth of it at the run's last step (nanoGPT's and llm.c's schedule): without a warm-up, Adam's first steps at the
// full rate can send a fresh transformer's loss up before it comes down.
enum class LrSchedule { constant, warmup_cosine };
std::string to_string(LrSchedule schedule);
LrSchedule parse_lr_schedule(const std::string& text, const std::string& field = "train.lr_schedule");

// amp-fp16's dynamic loss scaling (tvie::LossScaler in tvie/precision.hpp), with torch.amp.GradScaler's defaults.
struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16, as torch.amp.GradScaler
  double growth_factor = 2.0;      // scale *= 2 after growth_interval clean steps in a row
  double backoff_factor = 0.5;     // scale *= 0.5 after a step with an inf/NaN gradient
  int64_t growth_interval = 2000;  // clean steps before growing
};

// The optimizer steps a training run spends filling the memory ledger before its warm-up (Trainer::ledger_step).
inline constexpr int64_t kTrainingLedgerSteps = 2;

struct TrainSettings {
  int64_t batch_size = 8;    // samples per optimizer step, split into `accumulate` micro-batches
  int64_t steps = 20;        // timed optimizer steps
  int64_t warmup_steps = 3;  // untimed optimizer steps before the timed ones (after the ledger step)
  int64_t accumulate = 1;    // micro-batches per optimizer step; must divide batch_size
  OptimizerKind optimizer = OptimizerKind::adamw;
  double learning_rate = 1e-3;  // all optimizers (the peak of a schedule)
  // warmup_cosine: the rate rises linearly over lr_warmup_steps optimizer steps (0: a tenth of the run's, at least
  // 1), then falls along a cosine to learning_rate / 10 at the run's last step. A CUDA graph holds the rate it
  // captured: cuda_graph needs constant.
  LrSchedule lr_schedule = LrSchedule::warmup_cosine;
  int64_t lr_warmup_steps = 0;
  double momentum = 0.9;       // sgd_momentum only
  double weight_decay = 0.01;  // adamw only (decoupled)
  uint64_t seed = 0;           // initial weights and synthetic data
  TrainPrecision precision = TrainPrecision::fp32;
  double clip_grad_norm = 0;     // clip the gradients' global L2 norm to this (after unscaling); 0: off
  int64_t checkpoint_every = 0;  // activation checkpointing of every k-th transformer block; 0: off, 1: all
  int64_t data_batches = 64;     // distinct synthetic batches held on the host and cycled through
  int64_t loss_every = 0;        // a loss-curve point every N steps; 0: about ten points over the run
  bool cuda_graph = false;       // capture the whole training step in a CUDA graph and replay it (CUDA)
  // adam, adamw: LibTorch's fused kernel (at::_fused_adam_ / _fused_adamw_, torch.optim.AdamW(fused=True)) in place
  // of the C++ frontend's step, which runs eight or nine kernels per parameter tensor. Its state holds one more fp32
  // scalar per parameter tensor (the step count, on the device), and its step no temporaries.
  bool fused_optimizer = false;
  // fp32 only: the matrix products on the tensor cores' TF32 mode (CUDA; LibTorch's float32 matmul precision "high",
  // torch.backends.cuda.matmul.allow_tf32): a 10-bit mantissa for the products' inputs, fp32 accumulation. LibTorch's
  // matmuls stay full fp32 by default; cuDNN's convolutions use TF32 either way (its own default).
  bool tf32 = false;
  // The loss through tvie::fused_cross_entropy (tvie/precision.hpp) in place of the workload's loss(), for a workload
  // whose loss() is that cross-entropy (Workload::loss_is_cross_entropy: the zoo's models): no fp32 copy of all the
  // logits, their gradient computed in the forward and kept in the logits' dtype. The same loss to rounding.
  bool fused_loss = false;
  LossScalerOptions scaler;       // amp-fp16's dynamic loss scaling
  uint64_t data_seed_offset = 0;  // added to the data seeds (data parallelism: each rank draws other samples)
  // One more step after the timed ones, under LibTorch's profiler: the forward's and backward's time by operator
  // class (tvie/class_times.hpp; TrainingResult::time_by_class), which `tvie plan --from` calibrates class by class.
  bool profile_classes = false;
  // Refuse the run before anything is built (PredictedOutOfMemory) when its predicted peak exceeds the device's
  // free memory (CUDA: cudaMemGetInfo; CPU: the host's MemAvailable, or less under a cgroup's memory.max).
  bool check_free_memory = true;
};

struct InferSettings {
  int64_t batch_size = 8;                       // samples per forward pass
  int64_t steps = 20;                           // timed batches
  int64_t warmup_steps = 3;                     // untimed batches before them
  InferenceDtype dtype = InferenceDtype::fp32;  // weights (and floating inputs) of the inference copy
  uint64_t seed = 0;
  bool cuda_graph = false;  // CUDA: capture the forward once at this batch size and replay it
  // One more batch after the timed ones, under LibTorch's profiler: its time by operator class
  // (InferenceResult::time_by_class), which `tvie plan --from` calibrates class by class.
  bool profile_classes = false;
  bool check_free_memory = true;  // as TrainSettings::check_free_memory
};

// run_compare (tvie/run.hpp): the model is the Workload, the device is in RunOptions.
struct CompareSettings {
  TrainSettings train;
  InferSettings infer;
  // Replace infer.dtype by the dtype the device runs natively (native_inference_dtype in device.hpp: bf16
  // with bf16 units, else fp32); the report says which and why.
  bool infer_dtype_auto = false;
  // gpt, llama: also serve the trained weights as generation does (tvie/decode.hpp): infer.batch_size prompts of
  // the context less new_tokens tokens, a prefill whose head reads the last position only, then new_tokens - 1
  // KV-cached decoding steps, in infer.dtype; CompareReport::generation. 0: the full-sequence forward alone
  // ("score": logits at every position).
  int64_t new_tokens = 0;
  int64_t generation_repetitions = 3;  // timed generations, after the two of the generation's memory ledger
  // An AOTInductor package of the same model (tvie/aoti.hpp, make_aoti_twin): also measured at the inference batch,
  // on the inference row's inputs, in the device and dtype it was compiled for (which must be the run's and
  // infer.dtype): CompareReport::compiled. "": none.
  std::string aoti_path;
};

// The optimizer steps of one run: the two ledger steps, the warm-up and the timed steps, and the profiled one.
int64_t run_optimizer_steps(const TrainSettings& settings);
// The warm-up steps of the schedule (lr_warmup_steps, or its default), and the rate at optimizer step `step`
// (0-based) of a run of run_optimizer_steps(settings); past the run's last step the rate stays at its last.
int64_t lr_warmup_steps(const TrainSettings& settings);
double scheduled_learning_rate(const TrainSettings& settings, int64_t step);

void validate(const TrainSettings& settings);
// Also checks what the device must have (amp-fp16 and CUDA graphs need CUDA).
void validate(const TrainSettings& settings, const c10::Device& device);
void validate(const InferSettings& settings);
// Also checks that the inference dtype runs on `device` (fp16 needs CUDA; int8 and fp8 see layers.hpp).
void validate(const InferSettings& settings, const c10::Device& device);
// Throws InvalidArgument(field, ...) unless `dtype` runs on `device`.
void validate_inference_dtype(InferenceDtype dtype, const c10::Device& device,
                              const std::string& field = "infer.dtype");
// Both parts, and that the inference dtype runs on `device` (unless infer_dtype_auto replaces it).
void validate(const CompareSettings& settings, const c10::Device& device);

}  // namespace tvie
