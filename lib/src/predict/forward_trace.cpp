// The symbolic forward: see forward_trace.hpp for the rules and their source.
#include "predict/forward_trace.hpp"

#include "predict/kernel_scratch.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ATen/Parallel.h>

namespace tvie::trace {

struct Counters {
  int64_t live = 0;
  int64_t peak = 0;
};

Storage::Storage(int64_t bytes_, std::shared_ptr<Counters> counters_) : bytes(bytes_), counters(std::move(counters_)) {
  if (counters) {
    counters->live += bytes;
    counters->peak = std::max(counters->peak, counters->live);
  }
}

Storage::~Storage() {
  if (counters) counters->live -= bytes;
}

namespace {
// tvie::checkpoint keeps the CPU generator's state (at::CPUGeneratorImpl::get_state: a byte tensor of
// sizeof(CPUGeneratorImplState), the mt19937 state and the cached normal samples).
constexpr int64_t kCpuRngStateBytes = 5056;

}  // namespace

ForwardTrace::ForwardTrace(const ActivationQuery& query) : query_(query), counters_(std::make_shared<Counters>()) {
  if (query_.cpu_threads <= 0) query_.cpu_threads = at::get_num_threads();
}

ForwardTrace::~ForwardTrace() = default;

Sym ForwardTrace::input(int64_t elements, int64_t element_bytes) {
  // Alive before the forward (the batch): neither counted as alive nor as saved.
  return {std::make_shared<Storage>(0, nullptr), elements, element_bytes, false};
}

Sym ForwardTrace::make(int64_t elements, int64_t element_bytes, bool requires_grad) {
  // While a checkpointed segment is traced again (its recomputation, in backward), its tensors count apart.
  auto counters = recording_recompute_ >= 0 ? recompute_counters_ : counters_;
  return {std::make_shared<Storage>(elements * element_bytes, counters), elements, element_bytes,
          requires_grad && training()};
}

void ForwardTrace::transient(int64_t bytes) { const Sym t = make(bytes, 1, false); }

void ForwardTrace::save(const Sym& t, const char* layer) {
  if (!training()) return;
  if (recording_recompute_ >= 0) {
    // The segment's input is the checkpoint's saved tensor: recomputation reads it, it adds no bytes.
    if (std::find(saved_.begin(), saved_.end(), t.storage) == saved_.end() &&
        std::find(recompute_saved_.begin(), recompute_saved_.end(), t.storage) == recompute_saved_.end()) {
      recompute_saved_.push_back(t.storage);
      recording_recompute_ += t.storage->bytes;
      current_.released += t.storage->bytes;
    }
    return;
  }
  if (std::find(saved_.begin(), saved_.end(), t.storage) != saved_.end()) return;  // saved by an earlier op
  saved_.push_back(t.storage);
  current_.released += t.storage->bytes;
  auto it = std::find_if(by_layer_.begin(), by_layer_.end(), [&](const auto& p) { return p.first == layer; });
  if (it == by_layer_.end())
    by_layer_.emplace_back(layer, t.storage->bytes);
  else
    it->second += t.storage->bytes;
}

void ForwardTrace::parameter_gradients(int64_t elements, int64_t tensors) {
  if (recording_recompute_ < 0) parameter_tensors_ += tensors;  // once per tensor (not again when recomputed)
  largest_parameter_bytes_ = std::max(largest_parameter_bytes_, elements * weight_bytes());
  if (training()) current_.parameter_grads += elements * weight_bytes();
}

void ForwardTrace::work(OpClass c, const OpWork& forward, const OpWork& backward) {
  (recording_recompute_ >= 0 ? backward_work_ : forward_work_)[c] += forward;
  if (training()) backward_work_[c] += backward;
}

size_t ForwardTrace::open_hold(int64_t bytes, const Storage* residual) {
  HoldState h;
  h.bytes = bytes;
  h.residual = residual;
  h.recording = recording_recompute_ >= 0;
  h.first_op = (h.recording ? recompute_ops_ : ops_).size();
  held_ += bytes;
  holds_.push_back(std::move(h));
  return holds_.size() - 1;
}

size_t ForwardTrace::ops_traced() const { return (recording_recompute_ >= 0 ? recompute_ops_ : ops_).size(); }

void ForwardTrace::hold_input_gradient(size_t first_op, size_t end_op, int64_t bytes) {
  if (!training()) return;
  auto& ops = recording_recompute_ >= 0 ? recompute_ops_ : ops_;
  for (size_t i = first_op; i < end_op && i < ops.size(); ++i) ops[i].transient += bytes;
}

void ForwardTrace::close_hold(size_t index) {
  if (holds_[index].active) held_ -= holds_[index].bytes;
  holds_[index].active = false;
}

// The work rules (bytes read and written, FLOPs at 2 per multiply-add; backward from the forward's shapes):
//  - linear/conv: forward reads x and W, writes y; backward computes dW (reads dy and x, writes dW) and, when x
//    requires grad, dx (reads dy and W, writes dx): twice the forward's FLOPs (once for the first layer).
//  - attention: forward 4 B a S K d FLOPs (Q K^T and P V over K key positions, K = S but in decoding; half when
//    causal), reads q, k, v (decoding: k and v are the cache's K positions), writes the output
//    and its log-sum-exp; backward 2.5x the FLOPs (the flash kernels recompute P: five matmuls for two) and
//    reads q, k, v, the output, its gradient and the log-sum-exp, writes dq, dk, dv.
//  - normalisation, elementwise: bytes only (a few FLOPs per element); backward reads the incoming gradient and
//    what was saved, writes the outgoing gradient.
// Element sizes are those of the tensors the trace already carries; autocast's casts count as elementwise.
void ForwardTrace::end_op(int64_t grad_in_bytes, int64_t grad_out_bytes, int64_t scratch_bytes) {
  if (training()) {
    current_.transient = grad_in_bytes + grad_out_bytes + scratch_bytes + held_;
    current_.incoming = grad_out_bytes;
    if (recording_recompute_ >= 0)  // only a recomputation asks which Holds were active (checkpoint())
      for (size_t i = 0; i < holds_.size(); ++i)
        if (holds_[i].active) current_.holds.push_back(i);
    (recording_recompute_ >= 0 ? recompute_ops_ : ops_).push_back(current_);
  }
  current_ = {};
}

// Under autocast a matmul or convolution runs on 2-byte copies of its input and weight, so its backward writes
// both gradients in that dtype and autograd casts them to fp32 after it returns (the casts' own backward), while
// the sweep counts the fp32 gradients (the weight's, and the input's when the input was fp32) and the op's
// incoming gradient and saved tensors throughout. What the op holds above that, returned as its scratch:
//  - while it runs: its scratch beside the 2-byte gradients (less than the fp32 ones the sweep counts);
//  - at the casts, after it returned (its saved tensors and incoming gradient freed): each 2-byte gradient beside
//    its fp32 copy. Small next to the scratch for a batch of activations; what decides the peak where the
//    weights are large and the batch small (a Llama block at batch 1).
// Seen in the allocation events of an amp-bf16 step (tvie train --json, memory_timeline): mlp tiny's 128 x 128
// layer allocates its bf16 weight gradient (32 KiB) before its scratch, then the fp32 one (64 KiB) while the
// bf16 one is alive, after the layer's saved weight cast (32 KiB) was freed.
int64_t ForwardTrace::cast_gradients(int64_t scratch, int64_t weight_elements, const Sym& x, const Sym& xin,
                                     int64_t grad_in_bytes) const {
  if (!query_.autocast || !training()) return scratch;
  const int64_t w_kernel = weight_elements * xin.element_bytes, w_counted = weight_elements * weight_bytes();
  const int64_t dx_kernel = x.requires_grad ? xin.bytes() : 0, dx_counted = x.requires_grad ? x.bytes() : 0;
  if (w_kernel == w_counted && dx_kernel == dx_counted) return scratch;
  const int64_t running = scratch + w_kernel - w_counted + dx_kernel - dx_counted;
  const int64_t casting = w_kernel + (dx_kernel != dx_counted ? dx_kernel : 0) - current_.released - grad_in_bytes;
  return std::max<int64_t>({0, running, casting});
}

Sym ForwardTrace::linear(const Sym& x, int64_t in, int64_t out, bool bias, const char* layer, bool tied) {
  const int64_t rows = x.elements / in;
  // An int8/fp8 inference copy replaces the tvie::nn::Linear layers whose shape its kernel takes (a tied head is the
  // embedding's weight under torch's own linear: not one of them).
  if (const nn::LinearWeights kind = quantised_kind(); kind != nn::LinearWeights::dense && !tied) {
    if (nn::linear_shape_supported(kind, in, out)) return quantised_linear(x, in, out, bias, kind);
    ++quantised_.dense_linears;  // kept dense: the dense rules below
  }
  // autocast: the input in the 2-byte dtype (a copy unless it already is).
  const Sym xin = query_.autocast && x.element_bytes != 2 ? make(x.elements, 2, x.requires_grad) : x;
  save(xin, layer);  // for the weight's gradient: dW = dy^T x
  if (x.requires_grad && query_.autocast)
    save(make(in * out, 2, false), "linear weight casts (amp)");  // W^T cast for dx = dy W: not cached (a view)
  if (query_.autocast && bias && x.dims == 2 && training())
    cast_cache_bytes_ += out * 2;  // addmm's bias cast: a leaf, cached
  Sym y = make(rows * out, compute_bytes(), true);
  y.dims = x.dims;
  // The kernels' scratch, freed within the op (kernel_scratch.cpp): a product's forward beside y, then its two
  // backward products each beside the gradient it writes.
  int64_t scratch = 0;
  const bool sum = bias && x.dims == 2;  // addmm: the bias added as a sum into the product
  {
    const LinearProducts products = linear_scratch(rows, in, out, sum);
    const auto& [forward, input_grad, weight_grad] = products;
    transient(forward);  // alive beside y, then freed
    // Backward runs the two products one after the other, each gradient allocated before its product's scratch;
    // the sweep counts both gradients throughout the op, so what the op holds above them is the larger product's
    // scratch less the gradient not yet written then. Which comes first is autograd's order, the same on every
    // kind of CPU (LibTorch's profiler on an AMD EPYC): addmm's backward (a 2-D input with a bias)
    // writes the input gradient first; mm's and matmul's (no bias, or a 3-D input) the weight gradient first.
    const int64_t dx = x.requires_grad ? rows * in * compute_bytes() : 0, dw = in * out * compute_bytes();
    if (!x.requires_grad)
      scratch = weight_grad;  // the batch needs no gradient: one product
    else if (sum)
      scratch = std::max(input_grad - dw, weight_grad);
    else
      scratch = std::max(input_grad, weight_grad - dx);
    scratch = std::max<int64_t>(scratch, 0);
  }
  // The C++ frontend's linear on a 3-D input adds the bias in place after the product: under autocast the
  // 2-byte output plus the fp32 bias runs in fp32, and on the CPU TensorIterator computes that in an fp32
  // temporary of the output's shape from an fp32 copy of the output, then writes it back (measured with LibTorch's
  // profiler: add_ > empty_like and add_ > to, [B, S, out] x 4 bytes each; CUDA's kernels cast as they go).
  if (!query_.cuda && query_.autocast && bias && x.dims != 2) {
    const Sym promoted = make(rows * out, 4, false), output_copy = make(rows * out, 4, false);
  }  // beside y, then freed
  {
    const double f = 2.0 * rows * in * out, w = static_cast<double>(in) * out;
    const double dx = x.requires_grad ? 1 : 0;
    work(OpClass::matmul, {f, double(xin.bytes() + y.bytes()), w, 1},
         {f * (1 + dx), double(y.bytes() * (1 + dx) + xin.bytes() + dx * x.bytes()), w * (1 + dx), 1 + dx});
    if (query_.autocast) {  // the casts: x (unless 2-byte already) and W each forward; dW back to fp32
      const double xcast = xin.storage != x.storage ? double(x.bytes() + xin.bytes()) : 0;
      work(OpClass::elementwise, {0, xcast + w * 6, 0, 1 + (xcast > 0 ? 1.0 : 0.0)}, {0, w * 6, 0, 1});
    }
  }
  parameter_gradients(in * out);  // a tied weight's too: backward reaches the head first
  if (bias) parameter_gradients(out);
  // addmm's backward (a 2-D input with a bias) writes the bias's gradient last, once the products' scratch is gone:
  // the sweep counts it beside the scratch.
  if (bias && x.dims == 2 && scratch > 0) scratch = std::max<int64_t>(0, scratch - out * weight_bytes());
  if (training()) {
    // Under accumulation the op's new gradients lie beside the accumulated ones until autograd adds them in. On a
    // 3-D input the bias is added in place after the product, so its backward runs first: its gradient is added
    // in and freed before the weight's exists.
    if (bias && x.dims != 2) current_.grads_added_first = out * weight_bytes();
    if (tied) current_.tied_grad_opened = in * out * weight_bytes();
  }
  scratch = cast_gradients(scratch, in * out, x, xin, y.bytes());
  end_op(x.requires_grad ? x.bytes() : 0, y.bytes(), scratch);  // no input gradient for the batch
  return y;
}

Sym ForwardTrace::conv2d(const Sym& x, int64_t cin, int64_t cout, int64_t k, int64_t out_hw, const char* layer) {
  const Sym xin = query_.autocast && x.element_bytes != 2 ? make(x.elements, 2, x.requires_grad) : x;
  save(xin, layer);                     // the weight (or its cached cast) is saved too: not new bytes
  if (query_.autocast && training()) {  // the weight's cast: cached, and saved for backward
    cast_cache_bytes_ += cin * cout * k * k * 2;
    current_.casts += cin * cout * k * k * 2;
  }
  Sym y = make(batch() * cout * out_hw * out_hw, compute_bytes(), true);
  const int64_t in_area = xin.elements / (batch() * cin);  // the input's H x W
  const auto in_hw = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(in_area))));
  const int64_t stride = (in_hw + out_hw - 1) / out_hw;  // out = ceil(in / stride) with padding k / 2
  {
    const double f = 2.0 * batch() * cout * out_hw * out_hw * cin * k * k, w = double(cin) * cout * k * k;
    const double dx = x.requires_grad ? 1 : 0;
    work(OpClass::convolution, {f, double(xin.bytes() + y.bytes()), w, 1},
         {f * (1 + dx), double(y.bytes() * (1 + dx) + xin.bytes() + dx * x.bytes()), w * (1 + dx), 1 + dx});
    if (query_.autocast && xin.storage != x.storage)
      work(OpClass::elementwise, {0, double(x.bytes() + xin.bytes()), 0, 1}, {});
  }
  parameter_gradients(cin * cout * k * k);
  // The kernels' scratch, freed within the op (kernel_scratch.cpp): the forward's beside y, the backward's beside
  // its gradients.
  const KernelScratch kernel = conv_scratch(cin, cout, k, stride, in_hw, out_hw, x.requires_grad, xin);
  transient(kernel.forward_bytes);  // alive beside y, then freed
  int64_t scratch = kernel.backward_bytes;
  scratch = cast_gradients(scratch, cin * cout * k * k, x, xin, y.bytes());
  end_op(x.requires_grad ? x.bytes() : 0, y.bytes(), scratch);  // no input gradient for the batch
  return y;
}

Sym ForwardTrace::batch_norm(const Sym& x, int64_t channels) {
  if (recording_recompute_ < 0) buffer_bytes_ += 2 * channels * weight_bytes() + 8;
  save(x, "batch_norm");
  if (training()) {  // the batch's mean and inverse standard deviation per channel (bf16 when all is bf16)
    const int64_t stat_bytes = x.element_bytes == 2 && weight_bytes() == 2 ? 2 : 4;
    save(make(channels, stat_bytes, false), "batch_norm");
    save(make(channels, stat_bytes, false), "batch_norm");
  }
  Sym y = make(x.elements, x.element_bytes, true);
  // Forward reads x twice (statistics, then normalisation) and writes y; backward reads dy and x twice.
  work(OpClass::normalization, {10.0 * x.elements, double(2 * x.bytes() + y.bytes()), 0, 2},
       {12.0 * x.elements, double(2 * (x.bytes() + y.bytes()) + x.bytes()), 4.0 * channels, 2});
  parameter_gradients(2 * channels, 2);
  end_op(x.bytes(), y.bytes(), query_.cuda ? 0 : x.bytes());  // CPU backward: an input-sized temporary
  return y;
}

Sym ForwardTrace::layer_norm(const Sym& x, int64_t h) {
  const int64_t rows = x.elements / h;
  // CUDA autocast runs layer_norm in fp32: a 2-byte input is cast (the copy is what is saved).
  const Sym xin = query_.cuda && query_.autocast && x.element_bytes == 2 ? make(x.elements, 4, x.requires_grad) : x;
  const int64_t stat_bytes = !query_.cuda && xin.element_bytes == 2 && weight_bytes() == 2 ? 2 : 4;
  const Sym mean = make(rows, stat_bytes, false), rstd = make(rows, stat_bytes, false);
  Sym y = make(x.elements, xin.element_bytes, true);
  work(OpClass::normalization, {8.0 * x.elements, double(xin.bytes() + y.bytes()), 2.0 * h, 1},
       {12.0 * x.elements, double(y.bytes() + xin.bytes() + x.bytes()), 4.0 * h, 2});
  if (xin.storage != x.storage) work(OpClass::elementwise, {0, double(x.bytes() + xin.bytes()), 0, 1}, {});
  save(xin, "layer_norm");
  save(mean, "layer_norm");
  save(rstd, "layer_norm");
  parameter_gradients(2 * h, 2);
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::rms_norm(const Sym& x, int64_t h) {
  // x32 = x.to(fp32); r = rsqrt(mean(x32^2) + eps); normed = x32 * r; out = normed.to(x's dtype) * weight
  const int64_t rows = x.elements / h;
  const Sym x32 = x.element_bytes == 4 ? x : make(x.elements, 4, x.requires_grad);
  Sym r;
  {
    const Sym squared = make(x.elements, 4, true);  // pow(2): saves x32
    save(x32, "rms_norm");
    const Sym mean = make(rows, 4, true);
    const Sym shifted = make(rows, 4, true);
    r = make(rows, 4, true);  // rsqrt: saves its result
  }
  save(r, "rms_norm");
  const Sym normed = make(x.elements, 4, true);  // x32 * r: saves both
  const Sym cast = x.element_bytes == 4 ? normed : make(x.elements, x.element_bytes, true);
  save(cast, "rms_norm");  // * weight: saves the factor the weight's gradient needs
  Sym y = make(x.elements, std::max(x.element_bytes, weight_bytes()), true);
  {
    // Seven kernels over [rows, h]: the fp32 cast (when not fp32), pow, mean, add, rsqrt (rows), x32 * r, the
    // cast back, * weight. Backward about as many, each reading two tensors and writing one.
    const double e = double(x.elements), cast = x.element_bytes == 4 ? 0 : double(x.bytes()) + 4 * e;
    const double bytes = cast + 4 * e * 5 + double(y.bytes()) + (x.element_bytes == 4 ? 0 : 6 * e);
    work(OpClass::normalization, {6 * e, bytes, double(h), 7}, {9 * e, 1.5 * bytes, 2.0 * h, 9});
  }
  parameter_gradients(h);
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::input_saving_activation(const Sym& x, const char* layer) {
  save(x, layer);
  Sym y = make(x.elements, x.element_bytes, x.requires_grad);
  y.dims = x.dims;
  work(OpClass::elementwise, {8.0 * x.elements, double(x.bytes() + y.bytes()), 0, 1},
       {12.0 * x.elements, double(2 * x.bytes() + y.bytes()), 0, 1});
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::gelu(const Sym& x) { return input_saving_activation(x, "gelu"); }

Sym ForwardTrace::silu(const Sym& x) { return input_saving_activation(x, "silu"); }

Sym ForwardTrace::relu(const Sym& x) {
  Sym y = make(x.elements, x.element_bytes, x.requires_grad);
  y.dims = x.dims;
  save(y, "relu");  // relu saves its output
  work(OpClass::elementwise, {double(x.elements), double(x.bytes() + y.bytes()), 0, 1},
       {double(x.elements), double(2 * y.bytes() + x.bytes()), 0, 1});
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::mul(const Sym& a, const Sym& b) {
  if (b.requires_grad) save(a, "mul");
  if (a.requires_grad) save(b, "mul");
  Sym y = make(std::max(a.elements, b.elements), std::max(a.element_bytes, b.element_bytes),
               a.requires_grad || b.requires_grad);
  y.dims = a.dims;
  {
    const double grads = (a.requires_grad ? 1 : 0) + (b.requires_grad ? 1 : 0);
    work(OpClass::elementwise, {double(y.elements), double(a.bytes() + b.bytes() + y.bytes()), 0, 1},
         {grads * y.elements, grads * double(2 * y.bytes() + std::max(a.bytes(), b.bytes())), 0, grads});
  }
  end_op(a.bytes() + b.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::add(const Sym& a, const Sym& b) {
  Sym y = make(a.elements, std::max(a.element_bytes, b.element_bytes), a.requires_grad || b.requires_grad);
  y.dims = a.dims;
  // The sum a Hold follows (its residual is a or b): in backward its gradient exists from here on.
  for (auto h = holds_.rbegin(); h != holds_.rend(); ++h) {
    if (!h->active || h->residual == nullptr || (h->residual != a.storage.get() && h->residual != b.storage.get()))
      continue;
    const Sym& branch = h->residual == a.storage.get() ? b : a;
    auto& ops = h->recording ? recompute_ops_ : ops_;
    // The branch's last op receives the held gradient itself when the branch has the sum's dtype.
    if (training() && branch.bytes() == y.bytes() && ops.size() > h->first_op && ops.back().incoming == y.bytes())
      ops.back().transient -= h->bytes;
    h->sum = y.storage;
    h->active = false;
    held_ -= h->bytes;
    break;
  }
  // Backward passes the gradient to both; where the two paths meet again, autograd adds them (one kernel).
  work(OpClass::elementwise, {double(y.elements), double(a.bytes() + b.bytes() + y.bytes()), 0, 1},
       {double(y.elements), 3.0 * y.bytes(), 0, 1});
  return y;  // saves nothing: no backward op worth recording
}

Sym ForwardTrace::embedding(const Sym& indices, int64_t h, int64_t vocab, bool tied) {
  save(indices, "embedding");
  Sym y = make(indices.elements * h, weight_bytes(), true);
  y.dims = indices.dims + 1;
  // Forward gathers rows (reads them, writes y); backward writes a dense [V, h] gradient (zeroed, then the
  // incoming gradient's rows added).
  work(OpClass::elementwise, {0, double(indices.bytes() + 2 * y.bytes()), 0, 1},
       {double(y.elements), double(indices.bytes() + 2 * y.bytes()), tied ? 0 : double(vocab) * h, 2});
  // A dense [V, h] gradient. Tied to the head, whose backward wrote the weight's gradient first (counted there):
  // this one is a tensor beside it until autograd adds the two. Autograd's input buffer adds them out of place
  // once the op has returned (its incoming gradient freed), so for a moment the head's part, this one and their
  // sum are three [V, h] tensors; then the parts go and AccumulateGrad keeps the sum (or adds it into the
  // accumulated gradient). Without the sum gpt2-small's SGD step is 11.9% under (its [V, h] is 147 MiB in fp32);
  // the tiny presets' peaks lie elsewhere.
  if (!tied) parameter_gradients(vocab * h);
  const int64_t tied_gradient = tied && training() ? vocab * h * weight_bytes() : 0;
  current_.tied_grad_closed = tied_gradient;
  end_op(0, y.bytes(), std::max(tied_gradient, 2 * tied_gradient - y.bytes()));
  return y;
}

Sym ForwardTrace::attention(const Sym& q, const Sym& k, const Sym& v, int64_t B, int64_t a, int64_t S, bool causal,
                            int64_t key_positions) {
  const int64_t K = key_positions > 0 ? key_positions : S;
  auto cast = [&](const Sym& t) { return query_.autocast && t.element_bytes != 2 ? make(t.elements, 2, true) : t; };
  const Sym q2 = cast(q), k2 = cast(k), v2 = cast(v);
  Sym y = make(q.elements, q2.element_bytes, true);  // [B, a, S, d] in [B, S, a, d] memory order
  // [B, a, S] fp32; on CUDA, fp32 attention runs the memory-efficient kernel, which pads S to 32.
  const bool flash = q2.element_bytes == 2;
  const int64_t lse_positions = query_.cuda && !flash ? (S + 31) / 32 * 32 : S;
  const Sym logsumexp = make(B * a * lse_positions, 4, false);
  {
    const double d = double(q.elements) / double(B * a * S);
    // Scores q k^T and their product with v: 2 x 2 B a S K d (half of it when causal: S = K).
    const double f = 4.0 * B * a * double(S) * double(K) * d * (causal ? 0.5 : 1.0);
    const double qkv = double(q2.bytes() + k2.bytes() + v2.bytes());
    work(OpClass::attention, {f, qkv + double(y.bytes() + logsumexp.bytes()), 0, 1},
         {2.5 * f, 2 * qkv + double(2 * y.bytes() + logsumexp.bytes()), 0, 1});
    const double casts = double((q2.storage != q.storage ? q.bytes() + q2.bytes() : 0) +
                                (k2.storage != k.storage ? k.bytes() + k2.bytes() : 0) +
                                (v2.storage != v.storage ? v.bytes() + v2.bytes() : 0));
    if (casts > 0) work(OpClass::elementwise, {0, casts, 0, 3}, {0, casts, 0, 3});
  }
  // The kernels' scratch, freed within the op (kernel_scratch.cpp): the forward's beside y and the log-sum-exp,
  // the backward's beside the three input gradients.
  const KernelScratch kernel = attention_scratch(S, K, q.elements / (B * a * S), flash);
  transient(kernel.forward_bytes);
  int64_t scratch = kernel.backward_bytes;
  save(q2, "attention");
  save(k2, "attention");
  save(v2, "attention");
  save(y, "attention");
  save(logsumexp, "attention");
  if (query_.cuda && flash) {  // CUDA flash kernel: its RNG seed and offset, int64 on the device
    save(make(1, 8, false), "attention");
    save(make(1, 8, false), "attention");
  }
  end_op(q.bytes() + k.bytes() + v.bytes(), y.bytes(), scratch);
  return y;
}

Sym ForwardTrace::cache_append(const Sym& x, int64_t cached_elements) {
  work(OpClass::elementwise, {0, 2.0 * double(x.bytes()), 0, 1}, {});  // copy_: reads x, writes the cache's rows
  return input(x.elements + cached_elements, x.element_bytes);
}

Sym ForwardTrace::rotary(const Sym& x, int64_t S, int64_t d) {
  const Sym cos = make(S * d, x.element_bytes, false), sin = make(S * d, x.element_bytes, false);  // [S, d]
  Sym rotated;
  {
    const Sym negated = make(x.elements / 2, x.element_bytes, x.requires_grad);  // -x[..., d/2:]
    rotated = make(x.elements, x.element_bytes, x.requires_grad);                // cat(-x2, x1)
  }
  const Sym with_cos = make(x.elements, x.element_bytes, x.requires_grad);  // x * cos: saves cos
  save(cos, "rotary");
  const Sym with_sin = make(x.elements, x.element_bytes, x.requires_grad);  // rotated * sin: saves sin
  save(sin, "rotary");
  Sym y = make(x.elements, x.element_bytes, x.requires_grad);
  // Five kernels (neg, cat, two muls, add), each reading and writing about x's bytes; backward about as many.
  work(OpClass::elementwise, {3.0 * x.elements, 9.0 * x.bytes(), 0, 5}, {3.0 * x.elements, 9.0 * x.bytes(), 0, 5});
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::repeat(const Sym& x, int64_t times) {
  Sym y = make(x.elements * times, x.element_bytes, x.requires_grad);  // expand + copy: saves nothing
  work(OpClass::elementwise, {0, double(x.bytes() + y.bytes()), 0, 1},
       {double(y.elements), double(x.bytes() + y.bytes()), 0, 1});
  return y;
}

Sym ForwardTrace::max_pool2d(const Sym& x, int64_t out_elements) {
  Sym y = make(out_elements, x.element_bytes, x.requires_grad);
  save(x, "max_pool");
  if (training()) save(make(out_elements, 8, false), "max_pool");  // int64 argmax indices
  work(OpClass::elementwise,
       {double(x.elements), double(x.bytes() + y.bytes() + (training() ? out_elements * 8 : 0)), 0, 1},
       {0, double(x.bytes() + y.bytes() + out_elements * 8), 0, 2});
  end_op(x.bytes(), y.bytes());
  return y;
}

Sym ForwardTrace::mean_pool(const Sym& x, int64_t out_elements) {
  Sym y = make(out_elements, x.element_bytes, x.requires_grad);
  y.dims = 2;
  work(OpClass::elementwise, {double(x.elements), double(x.bytes() + y.bytes()), 0, 1},
       {double(x.elements), double(x.bytes() + y.bytes()), 0, 1});
  return y;
}

Sym ForwardTrace::index_tensor(int64_t elements) {
  work(OpClass::elementwise, {0, 8.0 * elements, 0, 1}, {});
  return make(elements, 8, false);
}

Sym ForwardTrace::cross_entropy(const Sym& logits, int64_t rows, int64_t classes) {
  const Sym l32 = logits.element_bytes == 4 ? logits : make(logits.elements, 4, logits.requires_grad);
  const Sym log_probs = make(rows * classes, 4, true);
  save(log_probs, "loss");  // log_softmax saves its output
  {
    // The cast to fp32 (when the logits are not), log_softmax (reads them twice: max and sum, writes), nll_loss.
    const double e = double(rows) * classes, cast = logits.element_bytes == 4 ? 0 : double(logits.bytes()) + 4 * e;
    work(OpClass::elementwise, {5 * e, cast + 4 * e * 3 + 4 * e, 0, 3 + (cast > 0 ? 1.0 : 0.0)},
         {5 * e, 4 * e * 4 + cast, 0, 3 + (cast > 0 ? 1.0 : 0.0)});
  }
  // log_softmax's backward: the gradient of the log-probabilities and of the logits, fp32, both alive. Its cast
  // back to the logits' 2-byte dtype comes after that node has released the log-probabilities it saved and its
  // incoming gradient: fp32 gradient + 2-byte copy < the two fp32 ones.
  end_op(2 * rows * classes * 4, 0);
  save(make(1, 4, false), "loss");  // nll_loss: the total weight, released once its backward (the first) has run
  Sym loss = make(1, 4, true);
  // The caller holds the loss through backward, and backward() the loss's gradient (ones) it starts from.
  if (training()) loss_bytes_ += 2 * loss.bytes();
  end_op(rows * classes * 4, 0);  // nll_loss's backward writes the log-probabilities' gradient
  return loss;
}

Sym ForwardTrace::fused_cross_entropy(const Sym& logits, int64_t rows, int64_t classes) {
  const int64_t chunk = std::min(rows, fused_loss_chunk_rows(classes));
  const Sym valid = make(rows, 1, false);  // [N] bool
  Sym count;
  {
    const Sym mask32 = make(rows, 4, false);  // sum(kFloat32) reduces an fp32 copy of the mask
    count = make(1, 4, false);                // [] fp32
  }
  const Sym grad = make(rows * classes, logits.element_bytes, false);  // [N, C] in the logits' dtype
  save(grad, "loss");
  Sym loss = make(1, 4, true);
  transient(chunk * (4 * classes + 24));  // [n, C] fp32 + index (8n) + loss, max, sum, fp32 mask (4n each)
  {
    // Per element: the cast to fp32, amax, sub-exp, sum, div, mul, div (each read, the in-place ones written too),
    // the gradient's copy back; a backward that scales it in place. About ten kernels a chunk.
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const double e = double(rows) * classes;
    work(OpClass::elementwise, {6 * e, 2.0 * double(logits.bytes()) + 4 * e * 11, 0, 10.0 * double(chunks)},
         {e, 2.0 * double(grad.bytes()), 0, 1});
  }
  if (training()) loss_bytes_ += 2 * loss.bytes();  // the loss, and backward()'s ones, alive through backward
  end_op(0, 0);  // in place: the saved gradient becomes the head's incoming gradient (which the head counts)
  return loss;
}

Sym ForwardTrace::checkpoint(const Sym& x, const std::function<Sym(const Sym&)>& segment) {
  if (!training()) return segment(x);
  save(x, "checkpoint");
  // The CPU generator's state: kept in the node's saved data, which lives until the graph is freed after the
  // whole backward (not released with the saved input). On CUDA: host tensors.
  const int64_t rng_bytes = query_.cuda ? 0 : kCpuRngStateBytes;
  if (rng_bytes > 0) {
    save(make(rng_bytes, 1, false), "checkpoint");
    current_.released -= rng_bytes;
  }
  // What recomputing the segment in backward holds: the segment traced again with grad, and its own
  // backward swept (its saved tensors released op by op, its gradients written).
  const Op checkpoint_op = current_;
  current_ = {};
  recording_recompute_ = 0;
  recompute_counters_ = std::make_shared<Counters>();
  int64_t recompute_forward = 0;
  {
    const Sym out = segment(x);
    recompute_forward = recompute_counters_->peak;  // what it saved so far and its temporaries, its output last
    // tvie::checkpoint keeps the recomputed output, the generator's state it restores afterwards, and its caller
    // the segment's incoming gradient, until the segment's backward returns: beside every op of it, but where a
    // Hold already counts that gradient (the segment ends with the sum the Hold follows).
    for (auto& op : recompute_ops_) {
      const bool held =
          std::any_of(op.holds.begin(), op.holds.end(), [&](size_t h) { return holds_[h].sum.lock() == out.storage; });
      op.transient += out.bytes() + (held ? 0 : out.bytes()) + rng_bytes;
    }
  }
  const Sweep inner = sweep(recompute_ops_, recording_recompute_);
  recompute_ops_.clear();
  recompute_saved_.clear();
  recording_recompute_ = -1;
  recompute_counters_.reset();
  // The forward itself: without grad, so nothing inside is saved.
  grad_enabled_ = false;
  Sym y = segment(x);
  grad_enabled_ = true;
  current_ = checkpoint_op;
  y.requires_grad = true;
  // The recomputation's forward runs beside the segment's incoming gradient (its caller holds it); its backward
  // beside its output too (tvie::checkpoint keeps it until the segment's backward returns). The gradients of the
  // segment's parameters are in the inner sweep, as its backward writes them.
  const int64_t recompute_forward_held = recompute_forward + y.bytes() + rng_bytes;
  current_.recompute = std::max(recompute_forward_held, inner.peak);
  current_.recompute_accumulating = std::max(recompute_forward_held, inner.peak_accumulating - inner.grads);
  current_.parameter_grads += inner.grads;
  end_op(x.bytes(), y.bytes());
  return y;
}

ForwardTrace::Sweep ForwardTrace::sweep(const std::vector<Op>& ops, int64_t saved_bytes) {
  // Backward, op by op in reverse: during an op, what it and the earlier ops saved, the gradients written
  // so far and its own, its incoming and outgoing gradients (and a checkpointed segment's recomputation).
  Sweep out;
  for (const auto& op : ops) out.grads += op.parameter_grads;
  int64_t remaining = saved_bytes, grads = 0, casts = 0;
  int64_t tied_pending = 0;  // under accumulation: tied weights' first gradients, waiting for their earlier use's
  for (const auto& op : ops) casts += op.casts;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    // A checkpointed segment's recomputation holds its own gradients as it writes them, and its incoming and
    // outgoing gradients as its ops pass them on (all in `recompute`, the segment's own sweep).
    const bool recomputed = it->recompute > 0;
    const int64_t op_bytes = (recomputed ? std::max(it->transient, it->recompute) : it->transient) + casts;
    const int64_t own_grads = recomputed ? 0 : it->parameter_grads;
    out.peak = std::max(out.peak, remaining + grads + own_grads + op_bytes);
    out.peak_without_grads = std::max(out.peak_without_grads, remaining + op_bytes);
    // Under accumulation every gradient is alive, and the op's new ones beside them until autograd adds them in
    // (a bias added before the weight's gradient exists: one at a time), and a tied weight's first gradient from
    // the head's backward until the embedding's.
    const int64_t own_new =
        recomputed ? 0 : std::max(it->parameter_grads - it->grads_added_first, it->grads_added_first);
    out.peak_accumulating = std::max(
        out.peak_accumulating, remaining + out.grads + tied_pending + own_new + casts +
                                   (recomputed ? std::max(it->transient, it->recompute_accumulating) : it->transient));
    tied_pending += it->tied_grad_opened - it->tied_grad_closed;
    remaining -= it->released;
    grads += it->parameter_grads;
    casts -= it->casts;
  }
  return out;
}

ActivationEstimate ForwardTrace::finish() {
  ActivationEstimate e;
  e.known = true;
  for (const auto& s : saved_) e.saved_bytes += s->bytes;
  e.forward_peak_bytes = counters_->peak;
  e.cast_cache_bytes = cast_cache_bytes_;
  e.buffer_bytes = buffer_bytes_;
  e.by_layer = by_layer_;
  const Sweep outer = sweep(ops_, e.saved_bytes);
  e.backward_peak_bytes = outer.peak + loss_bytes_;
  e.backward_peak_without_gradient_bytes = outer.peak_without_grads + loss_bytes_;
  e.backward_peak_accumulating_bytes = outer.peak_accumulating + loss_bytes_;
  e.largest_parameter_bytes = largest_parameter_bytes_;
  e.forward_work = forward_work_;
  e.parameter_tensors = parameter_tensors_;
  e.backward_work = backward_work_;
  e.quantised_linears = quantised_.quantised_linears;
  e.dense_linears = quantised_.dense_linears;
  e.released_weight_bytes = quantised_.released_weight_bytes;
  e.quantised_weight_bytes = quantised_.quantised_weight_bytes;
  e.packed_weight_bytes = quantised_.packed_weight_bytes;
  return e;
}

}  // namespace tvie::trace
