// The scratch oneDNN's CPU kernels allocate inside one op, as LibTorch 2.14 calls them: the bytes a training step's
// peak holds beside the tensors the trace counts (predict/forward_trace.cpp adds them to its ops). Every figure here
// was checked against LibTorch's profiler ([memory] events, scripts/op-scratch.py); which CPUs each applies to is
// said beside it, and the trace asks LibTorch which kernel a convolution runs before it uses one of these.
#pragma once

#include <cstdint>

#include "predict/linear_products.hpp"

#include <ATen/native/ConvUtils.h>

namespace tvie::trace::onednn {

// A 2-D convolution as tvie's models have them: square images and kernels, padding k / 2, no bias, no groups.
struct ConvShape {
  int64_t batch = 1;
  int64_t cin = 1, cout = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t in_hw = 1, out_hw = 1;  // the input's and the output's height (= width)
  bool input_grad = true;         // backward computes the input's gradient (not for a model's first layer)
  int64_t threads = 1;            // intra-op threads (at::get_num_threads)
};

// What a convolution holds above the tensors the trace counts: in forward beside its output (freed before the op
// returns), and in backward above the input's and the weights' gradients it leaves.
struct ConvScratch {
  int64_t forward_bytes = 0;
  int64_t backward_bytes = 0;
};

// oneDNN's fp32 convolutions on AVX-512 (blocked layouts padded to 16 channels, the weight gradient's scratchpad
// written out from oneDNN's bookings), see the .cpp.
ConvScratch avx512_fp32_conv(const ConvShape& c);

// Which kernel computes an fp32 convolution's weight gradient on AVX-512: jit:avx512_core (a "first convolution"
// of 1-3 input channels reading its input as it is, or 16-channel blocks from 16 input channels), jit:avx2
// (8-channel blocks: 4 to 15 input channels), jit_1x1:avx512_core.
enum class Fp32WeightKernel { first, avx512, avx2, one_by_one };
Fp32WeightKernel fp32_conv_weight_kernel(const ConvShape& c);
const char* to_string(Fp32WeightKernel k);

// LibTorch's intra-op threads set to `threads` for the whole process for the scope, restored after (also on an
// exception): for measuring kernels at a thread count (LibTorch's default, its pools and MKL follow).
class ScopedThreads {
 public:
  explicit ScopedThreads(int64_t threads);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_;
};

// The calling thread's OpenMP thread count set to `threads` for the scope, restored after (also on an exception);
// nothing else changes. oneDNN sizes a primitive's per-thread buffers, and LibTorch picks a convolution's kernel, by
// the threads the calling thread would run with (omp_get_max_threads, a setting of each thread), so asking them at
// a count needs no more: LibTorch's process-wide default, its pools and other threads' counts stay as they are, and
// a prediction may run beside work in other threads.
class ThisThreadsCount {
 public:
  explicit ThisThreadsCount(int64_t threads);
  ~ThisThreadsCount();
  ThisThreadsCount(const ThisThreadsCount&) = delete;
  ThisThreadsCount& operator=(const ThisThreadsCount&) = delete;

 private:
  static void set(int threads);
  int saved_ = 0;
};

// Whether LibTorch sends this convolution to oneDNN (conv_backend at `c.threads` threads of the calling thread), in
// fp32 (element_bytes 4) or bf16 (2).
bool conv_on_onednn(const ConvShape& c, int64_t element_bytes);

// What oneDNN's fp32 convolution on AVX2 (its jit:avx2 and jit_1x1:avx2 kernels) holds in forward beside its
// output: the input, the weights and the output in blocked layouts; derived from the allocations, see the .cpp.
int64_t avx2_fp32_conv_forward(const ConvShape& c);
// The same kernels' forward (as above) and backward (blocks of 8 channels, the weight gradient's reducers, the
// strided backward data's scratchpad), written out from oneDNN's bookings, see the .cpp.
ConvScratch avx2_fp32_conv(const ConvShape& c);

// oneDNN's bf16 convolutions on a CPU with avx512_bf16 and no AMX (the avx512_core_bf16 JIT kernels, and the gemm
// kernel where their layout does not apply); derived from oneDNN's scratchpad bookings, see the .cpp.
ConvScratch avx512_bf16_conv(const ConvShape& c);

// Which of those kernels computes the weight gradient, and its name ("gemm" for im2col, "jit" for k x k, "1x1").
enum class WeightKernel { gemm, jit, one_by_one };
WeightKernel bf16_conv_weight_kernel(const ConvShape& c);
const char* to_string(WeightKernel k);

// What one convolution of this shape allocates above what it leaves, measured: run through LibTorch on the CPU in
// fp32 (element_bytes 4) or bf16 (2) at `c.threads` intra-op threads (restored after) with tvie's counting
// allocator, after two warm-up steps, as scripts/op-scratch.py measures it with the profiler. The check behind
// avx512_fp32_conv and avx512_bf16_conv (tests, research/kernel-scratch/conv_scratch_table.cpp).
ConvScratch measure_conv(const ConvShape& c, int64_t element_bytes);

// oneDNN's scratchpad for a bf16 matmul c[m, n] = a[m, k] b[k, n] on its AVX-512 brgemm kernels (avx512_bf16, no
// AMX), and for a Linear's weight gradient dW[out, in] = dy^T x; fits, see the .cpp.
int64_t brgemm_bf16_scratch(int64_t m, int64_t k, int64_t n, int64_t threads);
int64_t brgemm_bf16_weight_grad_scratch(int64_t rows, int64_t in, int64_t out, int64_t threads);

// A bf16 Linear's three products (rows x in -> out, predict/linear_products.hpp) from the brgemm fits above.
LinearProducts brgemm_bf16_linear_scratch(int64_t rows, int64_t in, int64_t out, int64_t threads);
// The three measured as measure_conv measures: random bf16 tensors, run through LibTorch on the CPU (the forward
// with a bias, as torch::linear calls it) at `threads` intra-op threads (restored after), each after two warm-up
// calls. The check behind the matmul bookings (tests, research/kernel-scratch/matmul_scratch_table.cpp).
LinearProducts measure_bf16_linear(int64_t rows, int64_t in, int64_t out, int64_t threads);

}  // namespace tvie::trace::onednn
