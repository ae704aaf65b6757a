// oneDNN's own bookings, asked of the oneDNN inside LibTorch: which kernel a convolution or a matmul would run on
// this CPU, the layouts it wants its tensors in and the bytes of its scratchpad, from its primitive descriptors
// (nothing runs). LibTorch links oneDNN statically and does not export its C API, but the wheel keeps its symbol
// table: the functions are found there (or exported, in a LibTorch built that way), and called as the public
// header (oneapi/dnnl/dnnl.h, shipped with LibTorch) declares them. Where they cannot be found (a stripped
// LibTorch), every function here says so (std::nullopt) and the trace falls back to the kernels' configurations
// written out in predict/onednn_scratch.cpp, which hold for AVX2 and AVX-512 without AMX only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "predict/onednn_scratch.hpp"

namespace tvie::trace::onednn {

// Whether LibTorch's oneDNN can be asked; `why` (when given) says how it was found, or why not. TVIE_ONEDNN_BOOKINGS=0
// in the environment turns the bookings off (the trace then uses the written-out rules, as where oneDNN cannot be
// asked; the tests check those rules that way).
bool bookings_available(std::string* why = nullptr);

// One tensor as a primitive wants it: its bytes in that layout, and whether the layout is the plain one LibTorch
// holds (NCHW / OIHW: no reorder) or channels-last (a public layout that LibTorch's mkldnn_to_dense keeps and then
// copies to the plain one).
struct Booked {
  int64_t bytes = 0;
  bool plain = false;
  bool channels_last = false;
};

// A convolution's three training primitives, asked as LibTorch 2.14's ideep asks them (ideep/operators/conv.hpp,
// an NCHW input that is not channels-last): the layouts "any" (oneDNN picks), forward for training, a user
// scratchpad; backward data and backward weights with the forward as their hint.
struct ConvBookings {
  std::string forward_kernel, data_kernel, weights_kernel;  // oneDNN's implementation names
  Booked fx, fw, fy;                                        // forward: input, weights, output
  int64_t forward_scratchpad = 0;
  Booked ddy, dw, ddx;  // backward data: the output's gradient, the weights, the input's gradient
  int64_t data_scratchpad = 0;
  Booked wx, wdy, wdw;  // backward weights: the input, the output's gradient, the weights' gradient
  int64_t weights_scratchpad = 0;
};

// The bookings for `c` in fp32 (element_bytes 4) or bf16 (2) at `c.threads` threads (oneDNN sizes its per-thread
// buffers for the threads it will run with); std::nullopt where oneDNN cannot be asked or has no kernel.
std::optional<ConvBookings> conv_bookings(const ConvShape& c, int64_t element_bytes);

// What LibTorch holds for a convolution with those bookings, above what each phase leaves (ConvScratch), by the
// structure that reproduces every row of the four measured tables
// (research/kernel-scratch/results/conv-structure-from-onednn-bookings.md):
//  - forward: the input and the weights reordered into oneDNN's layouts (unless plain), the output in its layout
//    and the scratchpad; then mkldnn_to_dense copies the output to the plain layout, and a channels-last output
//    once more (ideep's to_public keeps that layout; .contiguous() copies again);
//  - backward data: the output's gradient and the weights reordered (unless plain), the input's gradient in
//    oneDNN's layout and the scratchpad; then the same copies to the plain layout;
//  - backward weights (the input's gradient alive): the input and the output's gradient reordered (unless plain),
//    the weight gradient in oneDNN's layout and the scratchpad; then its copy to OIHW.
ConvScratch conv_scratch(const ConvShape& c, int64_t element_bytes, const ConvBookings& b);

// conv_bookings then conv_scratch, remembered per shape, dtype and threads.
std::optional<ConvScratch> conv_scratch_from_bookings(const ConvShape& c, int64_t element_bytes);

// A bf16 matmul c[m, n] = a[m, k] b[k, n] as LibTorch 2.14 hands a Linear's products to oneDNN (plain layouts:
// `a_transposed` / `b_transposed` where that operand is the transpose of a row-major tensor, "ba" in
// ONEDNN_VERBOSE; `sum` where the product adds into c, a Linear's bias): the kernel and the bytes of its scratchpad,
// all the product holds (nothing is reordered), at `threads` threads. std::nullopt where oneDNN cannot be asked.
struct MatmulBooking {
  std::string kernel;
  int64_t scratchpad = 0;
};
std::optional<MatmulBooking> bf16_matmul_booking(int64_t m, int64_t k, int64_t n, bool a_transposed, bool b_transposed,
                                                 bool sum, int64_t threads);

// The scratchpads of a bf16 Linear's three products (rows x in -> out) as LibTorch hands them over: the forward
// x W^T (W's transpose; the bias added as a sum where `sum`: addmm, a 2-D input), the input gradient dy W and the
// weight gradient dy^T x (dy's transpose). std::nullopt where oneDNN cannot be asked or has no kernel for one.
std::optional<LinearProducts> bf16_linear_bookings(int64_t rows, int64_t in, int64_t out, bool sum, int64_t threads);

}  // namespace tvie::trace::onednn
