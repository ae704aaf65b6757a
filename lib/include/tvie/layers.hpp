// Layers that inference can convert to low-precision weights. tvie::nn::Linear computes exactly what
// torch::nn::Linear computes (same parameters "weight" [out, in] and "bias" [out], same initialisation)
// and trains the same way; in addition, an inference copy can replace its weights by int8 or fp8 ones.
// A Workload that wants `--dtype int8` or `fp8` builds its Linear layers from this class; tvie's own zoo
// models do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tvie/kernels.hpp>

namespace tvie::nn {

class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool with_bias = true);

  // Creates weight [out, in] and bias [out] and initialises them as torch::nn::Linear does
  // (kaiming-uniform with a = sqrt(5); bias uniform in +-1/sqrt(in)).
  void reset() override;
  torch::Tensor forward(const torch::Tensor& input);  // [..., in] -> [..., out]

  // Replaces the dense weights by `kind` for inference (one way: the dense weight and bias become
  // empty tensors so that their memory is released). The module must already be on its device.
  // Throws InvalidArgument when LibTorch has no kernel of `kind` on the device (tvie/kernels.hpp,
  // linear_kernel_available). Returns false, keeping the layer dense,
  // when the kernel cannot take its shape (CUDA int8: in and out features multiples of 8; fp8: of 16; weight-only
  // int8: in features a multiple of 16).
  bool convert_weights(LinearWeights kind);
  // Whether `kind`'s kernel takes this layer's shape (see convert_weights).
  bool shape_supported(LinearWeights kind) const;
  LinearWeights weights_kind() const { return kind_; }
  // int8_dynamic: the bytes fbgemm's pack of this layer holds outside LibTorch's allocator, measured as glibc's heap
  // growth across quantized::linear_prepack (the packed matrix, LibTorch's column offsets, scales and zero points,
  // and the two objects); -1 where glibc's heap statistics cannot be read; 0 for the other kinds.
  int64_t packed_bytes() const { return packed_bytes_; }

  int64_t in_features, out_features;
  bool with_bias;
  torch::Tensor weight, bias;

 private:
  LinearWeights kind_ = LinearWeights::dense;
  torch::Tensor q_weight_;  // int8 [out, in] (int8_cuda, int8_weight_only) or e4m3 [out, in] (fp8)
  torch::Tensor q_scale_;   // [out] per channel (int8_cuda: fp32; int8_weight_only: bf16) or [] per tensor (fp8)
  torch::Tensor q_bias_;    // bias in the output dtype (int8_cuda, fp8, int8_weight_only)
  c10::IValue packed_;      // int8_dynamic: LinearPackedParamsBase (weights held by fbgemm)
  int64_t packed_bytes_ = 0;
};
TORCH_MODULE(Linear);

// Converts every tvie::nn::Linear in `module` (recursively) to `kind`; returns how many it converted. Layers
// whose shape the kernel cannot take stay dense and are counted in `kept_dense` (when given); `packed_bytes` (when
// given) receives the sum of the converted layers' packed_bytes() (-1 if one of them could not be measured).
int64_t convert_linear_weights(torch::nn::Module& module, LinearWeights kind, int64_t* kept_dense = nullptr,
                               int64_t* packed_bytes = nullptr);

}  // namespace tvie::nn
