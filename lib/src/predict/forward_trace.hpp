// A symbolic forward: the zoo models' operators on shapes, recording what autograd saves for backward and
// what is alive when. Each zoo model writes a trace function beside its module (same operators, same
// order, same variable lifetimes), and estimate_activations() runs it.
//
// The rules below are those of LibTorch's CPU kernels as the C++ frontend calls them (checked against the
// measured ledger for every zoo model, see tests/test_predict.cpp):
//  - linear (tvie::nn::Linear -> torch::nn::functional::linear): 2-D input with bias -> addmm(b, x, W^T),
//    else matmul(x, W^T) then `out += b` in place. Saves x (for dW) and, when x requires grad, W^T (for dx).
//    Under autocast x is cast to the 2-byte dtype first (a new copy unless x already is), and so is W^T: a
//    view, which autocast's cast cache does not keep, so the copy lives in the graph (an activation). The
//    bias of addmm is a leaf: its copy is cached (the ledger's weight_copies). In bf16 on oneDNN's AVX-512
//    brgemm kernels (avx512_bf16 without AMX) each matmul holds a scratchpad within the op (packed blocks and an
//    fp32 accumulator; kernel_scratch.cpp; backward computes the weight gradient first, its
//    scratch freed before the input gradient is written). Under autocast (linear and conv2d alike) backward
//    writes the gradients in the 2-byte dtype and autograd casts them to fp32 after the op: each 2-byte gradient
//    is alive beside its fp32 copy then (ForwardTrace::cast_gradients).
//  - conv2d: saves input and weight; autocast casts the input (new copy) and the weight (a leaf: cached). Its
//    scratch depends on the kernel LibTorch picks on this CPU (asked of at::native::select_conv_backend): the
//    im2col kernel (bf16/fp16 on CPUs without AVX-512) unfolds the input into columns in forward and again in
//    backward; oneDNN on AVX-512 works in fp32 in blocked layouts padded to 16 channels (forward and backward
//    reorders), in bf16 on avx512_bf16 without AMX as its scratchpad bookings say (predict/onednn_scratch.cpp),
//    elsewhere in bf16 counted as a copy of the saved input in backward; on AVX2 it reorders the input and the
//    output's gradient. Rules in kernel_scratch.cpp.
//  - layer_norm: saves input, mean and rstd per row (fp32; bf16 when input and weights are bf16).
//  - batch_norm (training): saves input, and the batch mean and inverse std per channel (fp32). Its backward
//    allocates an input-sized temporary beside the input's gradient (freed within).
//  - gelu, silu: save their input; relu: saves its output; mul: each factor saves the other.
//  - scaled_dot_product_attention (CPU flash kernel): saves q, k, v, the output ([B, S, a, d] memory
//    layout, so transpose(1, 2).contiguous() after it copies nothing) and the log-sum-exp [B, a, S] fp32.
//  - embedding: saves the indices; max_pool2d: input and int64 indices; add, mean, cat, neg, views: nothing.
//  - cross-entropy of logits.to(fp32): log_softmax saves its fp32 output, nll_loss the 4-byte total weight. Its
//    backward holds the two fp32 gradients (log-probabilities' and logits'); the cast back to a 2-byte dtype comes
//    after log_softmax's node released what it held. The loss itself is alive through backward.
//  - tvie::fused_cross_entropy (models/precision.cpp): the valid rows' mask [N] bool and their count (a 4-byte fp32
//    scalar, through a 4-byte-per-row fp32 copy of the mask), the logits' gradient [N, C] in their dtype (saved),
//    and the loss; each chunk of n rows holds an fp32 copy of its logits and five [n] vectors (the int64 class
//    index, the per-row loss, max and sum, the fp32 mask). Its backward scales the saved gradient in place, which
//    autograd then passes on as the head's incoming gradient: no bytes beside what is saved.
//  - linear under autocast, 3-D input with bias: the C++ frontend's `out += b` adds the fp32 bias to the 2-byte
//    output in two fp32 temporaries of the output's shape on the CPU (TensorIterator's common dtype).
//  - residual sums (Hold): autograd passes the sum's gradient to both paths as one tensor, so the branch's last op
//    receives the held gradient itself when the branch has the sum's dtype; ops after the sum (post-LayerNorm) run
//    their backward before that gradient exists.
//  - checkpoint (tvie::checkpoint): saves the segment's input and the CPU generator's state (5056 bytes, in the
//    node's saved data: alive until the graph is freed after the whole backward); the segment runs without grad,
//    and is recomputed with grad in backward: its forward beside the incoming gradient, its backward beside the
//    recomputed output and the generator state tvie::checkpoint restores afterwards (and the incoming gradient,
//    where no Hold counts it already), its own sweep writing its parameter gradients (the outer sweep counts them
//    there, not again).
//  - int8/fp8 inference (ActivationQuery::inference_dtype): each tvie::nn::Linear whose shape the kernel takes runs
//    its quantised forward (ForwardTrace::quantised_linear, op by op as LinearImpl::forward in models/layers.cpp):
//    on the CPU fbgemm's linear_dynamic, its fp32 output and int32 accumulators of the output's shape; on CUDA the
//    input quantised in fp32 temporaries, padded to the rows _int_mm (17) or _scaled_mm (a multiple of 16) takes,
//    and the product rescaled; the trace also counts the dense weight bytes each conversion releases and what it
//    holds instead (fbgemm's packs: predict/fbgemm_packs.hpp).
// On CUDA (ActivationQuery::cuda; measured on an H200 with LibTorch 2.11, every zoo model but resnet at its
// tiny preset, tests/test_gpu.cpp), where the CPU rules differ:
//  - attention with 2-byte inputs (the flash kernel) also saves its RNG seed and offset, two int64 tensors
//    on the device (16 B per attention, dropout or not); fp32 attention (the memory-efficient kernel) keeps
//    them on the host, and pads its log-sum-exp to a multiple of 32 positions (kAlignLSE in its source).
//  - layer_norm keeps mean and rstd in fp32 whatever the input's dtype; under autocast it is on the fp32
//    list: a 2-byte input is cast to fp32, that copy is saved (not the input) and the output is fp32.
//  - checkpoint: the generators' states are host tensors (outside the device's ledger).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tvie/kernels.hpp>
#include "predict/cpu_kernels.hpp"
#include <tvie/ledger.hpp>

#include "predict/linear_products.hpp"

namespace tvie::trace {

struct Counters;

// A tensor's storage: bytes, and whether something already saved it.
struct Storage {
  Storage(int64_t bytes_, std::shared_ptr<Counters> counters_);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  int64_t bytes;
  std::shared_ptr<Counters> counters;
};

// A symbolic tensor: elements, element size, whether it requires grad; copies of a Sym are views (the
// same storage).
struct Sym {
  std::shared_ptr<Storage> storage;
  int64_t elements = 0;
  int64_t element_bytes = 4;
  bool requires_grad = false;
  int64_t dims = 3;  // 2: a matrix [rows, features] (linear takes addmm's path)
  int64_t bytes() const { return elements * element_bytes; }
};

// A view of `t` with `elements` elements (split, view, transpose, chunk): the same storage.
inline Sym view(const Sym& t, int64_t elements) {
  Sym v = t;
  v.elements = elements;
  return v;
}

class ForwardTrace {
 public:
  explicit ForwardTrace(const ActivationQuery& query);
  ~ForwardTrace();
  ForwardTrace(const ForwardTrace&) = delete;
  ForwardTrace& operator=(const ForwardTrace&) = delete;

  const ActivationQuery& query() const { return query_; }
  int64_t batch() const { return query_.batch_size; }
  int64_t threads() const { return query_.cpu_threads; }  // CPU intra-op threads (ActivationQuery::cpu_threads)
  bool training() const { return query_.training && grad_enabled_; }
  // Element size of the weights, and of a matmul/convolution's output.
  int64_t weight_bytes() const { return query_.weight_bytes; }
  int64_t compute_bytes() const { return query_.autocast ? 2 : query_.weight_bytes; }

  // The batch's input (already alive: not counted) and a new tensor (counted while a Sym refers to it).
  Sym input(int64_t elements, int64_t element_bytes);
  Sym make(int64_t elements, int64_t element_bytes, bool requires_grad);

  // Operators (x: [rows, in] or [..., in], elements / in = rows).
  // tied: the weight is also the earlier embedding's (a tied head), whose backward adds to the gradient this
  // one writes first.
  Sym linear(const Sym& x, int64_t in, int64_t out, bool bias, const char* layer = "linear", bool tied = false);
  Sym conv2d(const Sym& x, int64_t cin, int64_t cout, int64_t k, int64_t out_hw, const char* layer = "conv");
  Sym batch_norm(const Sym& x, int64_t channels);
  Sym layer_norm(const Sym& x, int64_t h);
  Sym rms_norm(const Sym& x, int64_t h);  // the llama RmsNorm module's ops (fp32 statistic)
  Sym gelu(const Sym& x);
  Sym silu(const Sym& x);
  Sym relu(const Sym& x);
  Sym mul(const Sym& a, const Sym& b);
  Sym add(const Sym& a, const Sym& b);  // a and b of a's shape (or broadcast into it)
  // tied = true: the weight is also the later head's, whose backward writes its gradient first.
  Sym embedding(const Sym& indices, int64_t h, int64_t vocab, bool tied = false);
  // [B, S, a, d] attention from q of [B, a, S, d] and k, v of [B, a, K, d] (K = key_positions; 0: S), views or
  // tensors. causal: the flash kernels skip the masked half of the score matrix (half the FLOPs). Decoding: the
  // new positions attend to the K cached ones (keys and values read from the cache).
  Sym attention(const Sym& q, const Sym& k, const Sym& v, int64_t B, int64_t a, int64_t S, bool causal = false,
                int64_t key_positions = 0);
  // KV-cached decoding: x (the new positions' keys or values) copied into its layer's cache, which holds
  // `cached_elements` before; returns the cache's filled part (cached + x's elements), alive before the forward:
  // the KV cache is its own category, not the forward's working set.
  Sym cache_append(const Sym& x, int64_t cached_elements);
  Sym rotary(const Sym& x, int64_t S, int64_t d);      // x * cos + rotate_half(x) * sin
  Sym repeat(const Sym& x, int64_t times);             // repeat_interleave: a new tensor
  Sym max_pool2d(const Sym& x, int64_t out_elements);  // saves input and int64 indices
  Sym mean_pool(const Sym& x, int64_t out_elements);   // global average pool
  Sym index_tensor(int64_t elements);                  // arange / zeros_like index tensors (int64)
  // The loss of the zoo models: cross-entropy of logits [rows, classes] cast to fp32.
  Sym cross_entropy(const Sym& logits, int64_t rows, int64_t classes);
  // The same loss through tvie::fused_cross_entropy (ActivationQuery::fused_loss).
  Sym fused_cross_entropy(const Sym& logits, int64_t rows, int64_t classes);
  // tvie::checkpoint around a segment: saves its input and the RNG state, runs it without grad; the bytes
  // the segment saves when recomputed in backward are recorded.
  Sym checkpoint(const Sym& x, const std::function<Sym(const Sym&)>& segment);

  // A residual connection y = x + branch(x): in backward, the gradient of the sum flows to x unchanged and is
  // held until the skip path uses it, while the branch's ops run their backward. Trace the branch inside a
  // Hold of the sum's bytes (in its dtype).
  // Given the residual x itself, the Hold also follows the sum: add(x, branch) ends it (ops traced after the sum,
  // a post-LayerNorm, run their backward before the gradient of the sum exists), the branch's last op does not
  // count the gradient twice when its incoming gradient is the held one (branch and sum of one dtype: autograd
  // passes the same tensor to both), and a checkpointed segment whose output is the sum knows that its incoming
  // gradient is the one held.
  // Two branches from one input, the later one's backward run first (its nodes were created later): its input
  // gradient waits in the input's buffer through the earlier branch's backward, until that branch's first op adds
  // its own. With `ops_traced()` taken before each branch: hold_input_gradient(earlier's first op, later's first op,
  // the input's gradient bytes) once both are traced.
  size_t ops_traced() const;
  void hold_input_gradient(size_t first_op, size_t end_op, int64_t bytes);

  class Hold {
   public:
    Hold(ForwardTrace& trace, int64_t bytes) : trace_(trace), index_(trace_.open_hold(bytes, nullptr)) {}
    Hold(ForwardTrace& trace, const Sym& residual)
        : trace_(trace), index_(trace_.open_hold(residual.bytes(), residual.storage.get())) {}
    ~Hold() { trace_.close_hold(index_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    ForwardTrace& trace_;
    size_t index_;
  };

  // Backward bookkeeping (training): parameters' gradient bytes written by the op just traced.
  void parameter_gradients(int64_t elements, int64_t tensors = 1);

  ActivationEstimate finish();

 private:
  void save(const Sym& t, const char* layer);
  // The Linear weights of an int8/fp8 inference copy (ActivationQuery::inference_dtype, on the query's device);
  // dense when training or in the other dtypes.
  nn::LinearWeights quantised_kind() const;
  Sym quantised_linear(const Sym& x, int64_t in, int64_t out, bool bias, nn::LinearWeights kind);
  struct Quantised {
    int64_t quantised_linears = 0, dense_linears = 0;
    int64_t released_weight_bytes = 0, quantised_weight_bytes = 0, packed_weight_bytes = 0;
  } quantised_;
  // gelu and silu: a pointwise op that saves its input (its backward needs it); the same work for both.
  Sym input_saving_activation(const Sym& x, const char* layer);
  // Bytes an op allocates and frees before it ends (a kernel's scratch, a temporary): alive beside what the op
  // holds at that moment, then freed.
  void transient(int64_t bytes);
  // The kernels' scratch (kernel_scratch.cpp): what an op's kernels allocate and free inside it on the query's
  // device and threads. A Linear's three products (its forward; its input and weight gradients' in backward), and
  // a convolution's or the attention's forward (beside the output) and backward (beside the gradients).
  struct KernelScratch {
    int64_t forward_bytes = 0, backward_bytes = 0;
  };
  LinearProducts linear_scratch(int64_t rows, int64_t in, int64_t out, bool sum) const;
  KernelScratch conv_scratch(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw, int64_t out_hw,
                             bool input_grad, const Sym& xin);
  KernelScratch attention_scratch(int64_t S, int64_t K, int64_t d, bool flash) const;
  // The kernel LibTorch's CPU convolution picks (cached per shape): its scratch differs.
  enum class CpuConv { im2col, onednn_avx512, onednn_avx2, other };
  CpuConv cpu_conv(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t in_hw, int64_t element_bytes);
  // The op's backward holds its incoming and outgoing gradients, and `scratch_bytes` that it allocates and frees
  // inside (a copy of an input, a temporary).
  void end_op(int64_t grad_in_bytes, int64_t grad_out_bytes, int64_t scratch_bytes = 0);
  // A matmul's or convolution's scratch under autocast, its gradients written in 2 bytes and then cast to fp32.
  int64_t cast_gradients(int64_t scratch, int64_t weight_elements, const Sym& x, const Sym& xin,
                         int64_t grad_in_bytes) const;
  // The work of the op just traced (forward) and of its backward (when training). A checkpointed segment's
  // forward, traced again for its recomputation, is counted as backward work: that is when it runs.
  void work(OpClass c, const OpWork& forward, const OpWork& backward);

  // One op of the forward, for the reverse sweep that estimates the backward peak.
  struct Op {
    int64_t released = 0;                // saved bytes first saved by this op: released once its backward ran
    int64_t parameter_grads = 0;         // gradient bytes its backward writes
    int64_t transient = 0;               // its incoming and outgoing gradients
    int64_t recompute = 0;               // checkpoint: what recomputing the segment holds, its gradients as written
    int64_t recompute_accumulating = 0;  // the same without its gradients (under accumulation all are alive)
    int64_t casts = 0;     // amp: weight copies it saved (the cast cache is cleared before backward; the graph keeps
                           // them until this op's backward)
    int64_t incoming = 0;  // its incoming gradient (its output's bytes)
    // Under accumulation (every gradient alive), what differs from a step's first backward:
    int64_t grads_added_first = 0;  // of parameter_grads, added in before the others exist (a 3-D Linear's bias)
    int64_t tied_grad_opened = 0;   // a tied weight's gradient written here first: autograd keeps it in the
                                    // weight's input buffer until the weight's earlier use adds to it
    int64_t tied_grad_closed = 0;   // that earlier use: its backward adds its own to it, then autograd adds the
                                    // sum into the accumulated gradient and frees it
    std::vector<size_t> holds;      // recomputed ops: the Holds active while its backward runs
  };
  // A Hold's state: the gradient it holds, the residual and the sum it follows (Hold(trace, residual)), whether
  // it is active (until the sum), and where its ops start in the op list it was opened in.
  struct HoldState {
    int64_t bytes = 0;
    const Storage* residual = nullptr;
    std::weak_ptr<Storage> sum;
    bool active = true;
    bool recording = false;
    size_t first_op = 0;
  };
  size_t open_hold(int64_t bytes, const Storage* residual);
  void close_hold(size_t index);
  std::vector<HoldState> holds_;

  ActivationQuery query_;
  std::shared_ptr<Counters> counters_;
  std::vector<std::shared_ptr<Storage>> saved_;  // kept alive until the trace ends, as the graph keeps them
  std::vector<std::pair<std::string, int64_t>> by_layer_;
  std::vector<Op> ops_;
  Op current_;
  bool grad_enabled_ = true;
  int64_t cast_cache_bytes_ = 0;
  int64_t buffer_bytes_ = 0;
  int64_t held_ = 0;        // residual gradients held while the current ops' backward runs (Hold)
  int64_t loss_bytes_ = 0;  // the loss, which its caller holds through backward, and its gradient (ones)
  int64_t largest_parameter_bytes_ = 0;
  PhaseWork forward_work_, backward_work_;
  int64_t parameter_tensors_ = 0;
  // While a checkpointed segment is traced again with grad (its recomputation in backward): the bytes it
  // saves (>= 0; -1 otherwise), what it saved, and its ops.
  int64_t recording_recompute_ = -1;
  std::vector<std::shared_ptr<Storage>> recompute_saved_;
  std::shared_ptr<Counters> recompute_counters_;  // the recomputation's live bytes (nullptr otherwise)
  std::vector<Op> recompute_ops_;
  std::vector<std::pair<std::array<int64_t, 6>, CpuConv>> conv_kernels_;

  struct Sweep {
    int64_t peak = 0, peak_accumulating = 0, grads = 0;
    int64_t peak_without_grads = 0;  // the largest bytes but the parameters' gradients (at another op than `peak`)
  };
  static Sweep sweep(const std::vector<Op>& ops, int64_t saved_bytes);
};

}  // namespace tvie::trace
