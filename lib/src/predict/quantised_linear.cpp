// The trace of tvie::nn::Linear with int8 or fp8 weights (ForwardTrace::quantised_linear): what each quantised
// forward allocates, op by op, and what the conversion released and holds instead of the dense weights.
#include "predict/forward_trace.hpp"

#include "predict/kernel_scratch.hpp"

#include <algorithm>

namespace tvie::trace {

nn::LinearWeights ForwardTrace::quantised_kind() const {
  if (query_.training) return nn::LinearWeights::dense;
  return nn::linear_weights_for(query_.inference_dtype, query_.cuda ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU));
}

// tvie::nn::Linear's forward with int8 or fp8 weights (LinearImpl::forward in models/layers.cpp), op by op. C++
// frees a full expression's temporaries at its end: each block below is one statement there, its tensors alive
// together until it ends but for the one it keeps.
Sym ForwardTrace::quantised_linear(const Sym& x, int64_t in, int64_t out, bool bias, nn::LinearWeights kind) {
  const int64_t rows = x.elements / in;
  ++quantised_.quantised_linears;
  quantised_.released_weight_bytes += in * out * weight_bytes();  // the dense weight; the bias is kept as it is
  Sym y;
  switch (kind) {
    case nn::LinearWeights::int8_dynamic: {
      // quantized::linear_dynamic (fbgemm, PackedLinearWeight::apply_dynamic_impl in LibTorch): the fp32 output and
      // an int32 buffer of its shape for the accumulators, freed when the op returns. The input is quantised per
      // thread into fbgemm's own buffers (glibc's heap: outside the ledger), the fp32 input read as it is.
      y = make(rows * out, 4, false);
      transient(rows * out * 4);                                 // the int32 accumulators
      const auto bytes = cpu_int8_packed_linear_bytes(in, out);  // none: the packs are not predicted (-1)
      auto& packs = quantised_.packed_weight_bytes;
      packs = !bytes || packs < 0 ? -1 : packs + *bytes;
      break;
    }
    case nn::LinearWeights::int8_cuda: {
      // Weights: int8 [out, in] and an fp32 scale per output row; the bias is kept (bf16, as the rest).
      quantised_.quantised_weight_bytes += in * out + 4 * out;
      const int64_t padded = std::max<int64_t>(rows, 17);  // _int_mm wants more than 16 rows: zero rows appended
      const Sym x16 = x.element_bytes == 2 ? x : make(rows * in, 2, false);  // input.to(bf16): the copy is bf16
      // x_scale = linalg_vector_norm(x, inf, 1, keepdim, fp32) / 127, floored in place: [M, 1] fp32
      const Sym x_scale = make(rows, 4, false);
      Sym xq;
      {  // xq = pad_rows(div_out(quotient, x, x_scale).round_().clamp_(-127, 127).to(int8), 17): a bf16 quotient
        const Sym quotient = make(rows * in, 2, false), q = make(rows * in, 1, false);
        if (padded != rows) {
          const Sym zeros = make((padded - rows) * in, 1, false);
          xq = make(padded * in, 1, false);  // cat
        } else {
          xq = q;
        }
      }
      const Sym accumulators = make(padded * out, 4, false);  // _int_mm: int32 [padded, out], narrowed to the rows
      y = make(rows * out, 2, false);  // mul_out(y, acc, x_scale): bf16, then the weight scales and the bias in place
      break;
    }
    case nn::LinearWeights::fp8_e4m3: {
      // Weights: e4m3 [out, in] and one fp32 scale; the bias is kept (bf16, as the rest).
      quantised_.quantised_weight_bytes += in * out + 4;
      const int64_t padded = (std::max<int64_t>(rows, 16) + 15) / 16 * 16;   // rows cuBLASLt takes: zero rows appended
      const Sym x16 = x.element_bytes == 2 ? x : make(rows * in, 2, false);  // input.to(bf16): the copy is bf16
      // x_scale = linalg_vector_norm(x, inf, fp32) / 448, floored in place: one fp32 element
      const Sym x_scale = make(1, 4, false);
      Sym xq;
      {  // xq = pad_rows(x.div(x_scale).clamp_(-448, 448).to(e4m3), 16, 16): one bf16 quotient, then e4m3
        const Sym divided = make(rows * in, 2, false), q = make(rows * in, 1, false);
        if (padded != rows) {
          const Sym zeros = make((padded - rows) * in, 1, false);
          xq = make(padded * in, 1, false);
        } else {
          xq = q;
        }
      }
      // _scaled_mm's bf16 output [padded, out]; the layer returns a view of its first rows, which keeps it whole.
      y = view(make(padded * out, 2, false), rows * out);
      break;
    }
    case nn::LinearWeights::int8_weight_only: {
      // Weights: int8 [out, in] and a bf16 scale per output row; the bias is kept (bf16, as the rest).
      quantised_.quantised_weight_bytes += in * out + 2 * out;
      const Sym x16 = x.element_bytes == 2 ? x : make(rows * in, 2, false);  // input.to(bf16): the copy is bf16
      if (query_.cuda) {
        // LibTorch's CUDA _weight_int8pack_mm: the input and the scales copied to fp32, an fp32 output, then the
        // output cast back to bf16; the fp32 tensors freed when the op returns.
        const Sym x32 = make(rows * in, 4, false), s32 = make(out, 4, false), y32 = make(rows * out, 4, false);
        y = make(rows * out, 2, false);
      } else {
        y = make(rows * out, 2, false);  // the CPU kernel writes its bf16 output and allocates nothing else
      }
      if (bias) y = make(rows * out, 2, false);  // y = y + q_bias: the sum, then the old y freed
      break;
    }
    case nn::LinearWeights::dense:
      break;
  }
  y.dims = x.dims;
  const double f = 2.0 * rows * in * out;
  work(OpClass::matmul, {f, double(x.bytes() + y.bytes()), static_cast<double>(in) * out, 1}, {});
  end_op(0, 0);
  return y;
}

}  // namespace tvie::trace
