// The vocabulary of the ledger, low in the layers so that every layer can speak it: the precisions and optimizers
// a ledger depends on, the operator classes work is counted in, what a model's trace is asked and answers, and the
// predicted ledgers. Nothing here runs anything; the functions that fill these types live in the layers above
// (tvie/predict.hpp, the zoo's traces, tvie/projection.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvie {

enum class OptimizerKind { sgd, sgd_momentum, adam, adamw };
// Inference weights. fp32/fp16/bf16: a converted copy of the whole model. int8: every tvie::nn::Linear holds
// int8 weights (CPU: dynamic quantisation through quantized::linear_dynamic, the rest fp32; CUDA: at::_int_mm,
// the rest bf16). fp8: tvie::nn::Linear weights in e4m3 through at::_scaled_mm (CUDA, compute capability 8.9+),
// the rest in bf16. int8-weight-only: tvie::nn::Linear weights in int8 read by at::_weight_int8pack_mm, the
// activations and the rest in bf16 (what decoding, which reads every weight once per token, gains from).
enum class InferenceDtype { fp32, fp16, bf16, int8, fp8, int8_weight_only };
// Training precision: fp32; amp-bf16 / amp-fp16: fp32 master weights, autocast around forward and loss
// (amp-fp16 with dynamic loss scaling, CUDA only); bf16: pure bf16 weights, gradients and optimizer state.
enum class TrainPrecision { fp32, amp_bf16, amp_fp16, bf16 };

// amp-bf16 and amp-fp16: fp32 master weights under autocast.
inline bool is_amp(TrainPrecision p) { return p == TrainPrecision::amp_bf16 || p == TrainPrecision::amp_fp16; }

std::string to_string(OptimizerKind kind);
std::string to_string(InferenceDtype dtype);
std::string to_string(TrainPrecision precision);
// Parse the command-line spelling ("adamw", "sgd-momentum", "bf16" ...); throws InvalidArgument(field, ...).
OptimizerKind parse_optimizer(const std::string& text, const std::string& field = "train.optimizer");
InferenceDtype parse_inference_dtype(const std::string& text, const std::string& field = "infer.dtype");
TrainPrecision parse_train_precision(const std::string& text, const std::string& field = "train.precision");
std::vector<std::string> train_precision_names();
std::vector<std::string> optimizer_names();
std::vector<std::string> inference_dtype_names();
// Bytes of optimizer state per parameter byte: sgd 0, sgd_momentum 1 (momentum buffer), adam/adamw 2
// (first and second moments).
int64_t optimizer_state_multiplier(OptimizerKind kind);

// What an activation estimate is asked for.
// tvie::fused_cross_entropy's rows per chunk when the caller names none (tvie/precision.hpp): as many as 64 MiB of
// fp32 holds (at least one), so that its fp32 working copy stays that size whatever the vocabulary.
inline int64_t fused_loss_chunk_rows(int64_t classes) {
  return std::max<int64_t>(1, (int64_t{64} << 20) / (4 * std::max<int64_t>(1, classes)));
}

struct ActivationQuery {
  int64_t batch_size = 1;        // samples of one forward (training: a micro-batch)
  bool training = true;          // grad mode on (tensors saved for backward) or inference (no grad)
  int64_t weight_bytes = 4;      // bytes per weight element: 4 (fp32; amp keeps fp32 weights) or 2 (bf16/fp16)
  bool autocast = false;         // amp: matmuls and convolutions run in 2-byte floats, other ops in their inputs'
  bool fp16 = false;             // the 2-byte floats are fp16 (else bf16): the CPU picks its kernels by dtype
  int64_t checkpoint_every = 0;  // activation checkpointing of every k-th block (0: none)
  bool fused_loss = false;       // training: the loss through tvie::fused_cross_entropy (TrainSettings::fused_loss)
  // KV-cached decoding (the token models with a cached forward, gpt and llama; the others ignore both): the
  // positions per sequence this forward runs (0: the model's context length) and the positions already in the
  // cache that they also attend to. A prefill: the prompt's tokens, 0 cached; a decoding step: 1 token, and the
  // tokens so far cached. Inference only.
  int64_t sequence_tokens = 0;
  int64_t cached_tokens = 0;
  // CUDA: the attention kernels also save their RNG seed and offset (two int64 on the device, dropout or
  // not), fp32 attention (the memory-efficient kernel) pads its log-sum-exp to 32 positions, and the RNG
  // states a checkpoint keeps are host tensors (outside the device's ledger).
  bool cuda = false;
  // CPU: the intra-op threads the run uses (0: the calling thread's at::get_num_threads() when the trace starts).
  // oneDNN sizes its per-thread buffers, and LibTorch picks a convolution's kernel, by this count; the prediction
  // takes it as data and leaves every thread count of the process as it is.
  int64_t cpu_threads = 0;
  // Inference: the copy's dtype. int8 and fp8 replace the weights of the tvie::nn::Linear layers (tvie/layers.hpp;
  // on the CPU fbgemm's dynamic quantisation, on CUDA at::_int_mm or at::_scaled_mm), whose kernels hold other
  // temporaries than a dense Linear's; the other layers run in weight_bytes as for fp32 (int8) or bf16 (fp8).
  InferenceDtype inference_dtype = InferenceDtype::fp32;
};

// The work of the traced operators, by class, for projecting a workload onto cards it never ran on
// (tvie/projection.hpp). The trace counts what each operator computes and moves on the shapes it is given
// (rules beside each operator in lib/src/predict/forward_trace.cpp); the optimizer and communication are
// counted from the parameters (tvie/projection.hpp).
enum class OpClass { matmul = 0, convolution, attention, normalization, elementwise };
constexpr int kOpClassCount = 5;
const char* to_string(OpClass op_class);

struct OpWork {
  double flops = 0;            // floating-point operations, 2 per multiply-add
  double bytes = 0;            // activation and gradient bytes read and written, in their dtypes
  double weight_elements = 0;  // weight elements read (and, in backward, gradient elements written): their bytes
                               // depend on the dtype the kernel reads them in (int8 inference: 1), so counted apart
  double kernels = 0;          // kernels launched (each pays a launch overhead, tvie/projection.hpp)
  OpWork& operator+=(const OpWork& o) {
    flops += o.flops;
    bytes += o.bytes;
    weight_elements += o.weight_elements;
    kernels += o.kernels;
    return *this;
  }
};

struct PhaseWork {
  std::array<OpWork, kOpClassCount> by_class{};
  OpWork& operator[](OpClass c) { return by_class[static_cast<size_t>(c)]; }
  const OpWork& operator[](OpClass c) const { return by_class[static_cast<size_t>(c)]; }
  OpWork total() const {
    OpWork t;
    for (const auto& w : by_class) t += w;
    return t;
  }
};

// A model's own activation accounting, from its trace (known == false: the workload has none).
struct ActivationEstimate {
  bool known = false;
  // Training: bytes of the tensors autograd saves for backward (counted once when several ops save one);
  // what the ledger's `activations` measures (forward with grad minus the same forward without).
  int64_t saved_bytes = 0;
  // Peak bytes alive during the forward above its start, the output included (inference: the working set;
  // training: saved tensors plus the transients of the moment).
  int64_t forward_peak_bytes = 0;
  // Peak bytes alive during backward above the parameters, optimizer state and batch: saved tensors not yet
  // released + gradients accumulated so far + the op's incoming and outgoing gradients and scratch (+ a
  // checkpointed block's recomputed tensors; + amp weight copies an op saved and has not yet released: autocast's
  // cache is cleared before backward, the graph keeps what it saved). 0 for inference.
  int64_t backward_peak_bytes = 0;
  // The largest bytes during backward but the parameters' gradients: the saved tensors shrink as the gradients
  // grow, so the two peak at different ops (what ZeRO-2, which shards the gradients, is left with at most).
  int64_t backward_peak_without_gradient_bytes = 0;
  // The same with every parameter's gradient alive from the start (the later micro-batches of gradient
  // accumulation, whose gradients add into those of the first).
  int64_t backward_peak_accumulating_bytes = 0;
  // The largest parameter's bytes: the optimizer's step makes temporaries of its size.
  int64_t largest_parameter_bytes = 0;
  // amp: low-precision weight copies autocast's cast cache keeps (convolution weights, biases of 2-D linears).
  int64_t cast_cache_bytes = 0;
  // Buffers the trace met: BatchNorm's running mean and variance (in the weights' dtype) and its int64 counter.
  int64_t buffer_bytes = 0;
  // Saved bytes by layer type ("linear", "layer_norm", "attention", ...), in first-seen order.
  std::vector<std::pair<std::string, int64_t>> by_layer;
  // The work of one forward (and, when training, its backward; a checkpointed segment's recomputation is
  // counted in backward, where it runs). Zero when the workload has no trace.
  PhaseWork forward_work, backward_work;
  int64_t parameter_tensors = 0;  // the optimizer's step runs its kernels once per parameter tensor
  // Inference in int8/fp8 (ActivationQuery::inference_dtype): the tvie::nn::Linear layers the conversion replaces
  // (quantised_linears) and those it keeps dense, their shape being one the kernel cannot take (dense_linears; a tied
  // head is no tvie::nn::Linear and counts in neither); the dense weight bytes the replaced layers release (their
  // biases stay as they are); what LibTorch's allocator holds for them instead (CUDA: the int8 or e4m3 weights and
  // their fp32 scales; the CPU: nothing); and what is held outside it (the CPU: fbgemm's packs,
  // trace::fbgemm::packed_linear_bytes; -1 where fbgemm cannot be asked its blocking).
  int64_t quantised_linears = 0, dense_linears = 0;
  int64_t released_weight_bytes = 0, quantised_weight_bytes = 0, packed_weight_bytes = 0;
};

// The training ledger, predicted (fields as in TrainingMemory; -1: not predicted, e.g. a workload without
// a trace has no activation figure).
struct PredictedTrainingMemory {
  int64_t parameters = 0;       // parameter_count * b + buffer bytes (b = 4, or 2 for pure bf16)
  int64_t gradients = 0;        // parameter_count * b
  int64_t optimizer_state = 0;  // parameter_count * b * optimizer_state_multiplier
  int64_t activations = -1;     // the trace's saved bytes at the micro-batch size
  int64_t weight_copies = -1;   // amp: the cast cache's copies (trace)
  int64_t loss_scaler = 0;      // amp-fp16: scale, growth tracker, found_inf (3 x 4 bytes)
  int64_t comm_buffers = 0;     // data parallelism: one flat copy of the gradients (the buckets)
  int64_t batch = 0;            // bytes of one step's input batch
  int64_t peak = -1;            // static (parameters, optimizer state, copies, scaler, buckets, and the batch
                                // where the step allocates it: CUDA's copy, pure bf16's converted input on the CPU)
                                // + max(forward peak, backward peak, optimizer step) of the trace
  std::vector<std::pair<std::string, int64_t>> activations_by_layer;
  std::string kernel_scratch_source;  // how the CPU kernels' scratch was obtained (kernel_scratch_source())
  // The peak by phase of the step: what each phase adds to the bytes always there (parameters, optimizer state,
  // loss scaler, buckets), and how much of that is gradients and amp weight copies (what ZeRO-2 and ZeRO-3 shard
  // in that phase). peak = the always-there bytes + the largest phase's. Empty without a trace (and for a ledger
  // measured rather than traced: then the peak is one phase holding every gradient and copy).
  struct Phase {
    std::string name;
    int64_t bytes = 0;
    int64_t gradients = 0;
    int64_t weight_copies = 0;
    // The phase's largest bytes but its gradients and copies where those grow while the rest shrinks (the
    // backward); -1: bytes - gradients - weight_copies. Sharded, a phase holds at most this + its shards.
    int64_t apart = -1;
    // What the phase holds beside its gradients and copies: what no ZeRO stage shards.
    int64_t unsharded() const { return apart >= 0 ? apart : bytes - gradients - weight_copies; }
  };
  std::vector<Phase> phases;
  // What ZeRO's model-state layouts are counted from (tvie/projection.hpp, shard_training_memory): the parameter
  // count, the largest parameter tensor's elements (DeepSpeed's "largest layer" for a layer of one weight), the
  // optimizer's state in bytes per parameter (fp32 moments under mixed precision), and whether the run is mixed
  // precision (amp: DeepSpeed then keeps 2-byte weights beside fp32 master weights). 0 parameters: not known.
  struct ModelStates {
    int64_t parameter_count = 0;
    int64_t largest_layer_parameters = 0;
    int64_t optimizer_bytes_per_parameter = 0;
    int64_t weight_bytes = 4;
    bool mixed_precision = false;
  };
  ModelStates model_states;
  // The bytes every phase holds beside its own: parameters, optimizer state, loss scaler, buckets.
  int64_t always() const { return parameters + optimizer_state + loss_scaler + comm_buffers; }
  // The peak less the categories above (as the measured ledger's `other`: the batch and the transients of the
  // moment); -1 without a predicted peak.
  int64_t other() const {
    if (peak < 0 || activations < 0) return -1;
    return peak - (parameters + gradients + optimizer_state + (weight_copies > 0 ? weight_copies : 0) + loss_scaler +
                   comm_buffers + activations);
  }
};

// The inference ledger, predicted (fields as in InferenceMemory).
struct PredictedInferenceMemory {
  // parameter_count * bytes + buffers; int8/fp8: less the replaced Linear weights' dense bytes, plus their
  // quantised weights and scales where LibTorch's allocator holds them (CUDA; ActivationEstimate)
  int64_t parameters = -1;
  int64_t packed_weights = 0;  // CPU int8: fbgemm's packs outside LibTorch's allocator (-1: not predicted)
  int64_t activations = -1;    // the trace's forward working set (output included)
  int64_t batch = 0;
  int64_t peak = -1;  // parameters + packed_weights + activations + batch
  // Every byte the weights hold, in LibTorch's allocator and outside it (-1 where either is not predicted).
  int64_t weights() const { return parameters < 0 || packed_weights < 0 ? -1 : parameters + packed_weights; }
  // The peak less the categories (as the measured ledger's `other`: the input batch); -1 where any is not predicted.
  int64_t other() const { return peak < 0 || activations < 0 || weights() < 0 ? -1 : peak - weights() - activations; }
  std::string kernel_scratch_source;  // as in PredictedTrainingMemory
  // int8/fp8: how the quantised weights were predicted (the CPU: fbgemm's blocking and how it was asked); else empty.
  std::string quantised_weights_source;
};

// A KV-cached generation's memory (tvie decode, compare --new-tokens), measured or predicted: what serving a batch of
// requests holds. The cache is allocated once, for every position the generation writes, before the prefill.
struct GenerationMemory {
  int64_t weights = 0;  // the inference copy's weights (fbgemm's int8 packs outside LibTorch's allocator included)
  int64_t packed_weights = 0;  // of them, the packs outside the allocator (CPU int8; predicted: -1 where not known)
  int64_t kv_cache = 0;        // keys and values of prompt + new - 1 positions per sequence, in the layers' dtype
  int64_t prompt = 0;          // the prompts' token ids, [batch, prompt] int64
  // The most the prefill (one position's logits: the head reads the last position only) or a decoding step holds at
  // once above the weights, the cache and the prompt: activations, the logits, the chosen tokens.
  int64_t working_set = 0;
  int64_t peak = 0;  // the most allocated during a generation (predicted: the four above); -1 where not predicted
  int64_t other() const { return peak < 0 ? -1 : peak - weights - kv_cache - prompt - working_set; }
};

}  // namespace tvie
