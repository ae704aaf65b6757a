// Workload: what a user implements to bring their own model to tvie (the zoo models implement it too).
//
// Contract, in the manner of MLPerf LoadGen's SUT/QSL interfaces:
//  - make_module() builds a fresh module with newly initialised fp32 weights on the CPU. tvie seeds
//    torch's global generator before calling it, so two calls after the same seed must give identical
//    weights (tvie builds the inference copy this way and then copies the trained weights in).
//  - forward() runs the module on a batch's input and returns its output (logits).
//  - make_batch() returns `batch_size` samples on `device`; the same seed gives the same batch. Rows
//    along dimension 0 are independent samples: tvie slices a batch into micro-batches along dim 0.
//  - loss() returns a scalar: the MEAN loss over the batch's samples (gradient accumulation relies on it).
//  - facts() gives analytic figures (parameter count, FLOPs); zeros mean "not known" and are shown as such.
//  - prepare_inference() (optional): inference-only rewrites of an inference copy (see TorchScriptWorkload).
//  - estimate_activations() (optional): the predicted activation bytes (the zoo models trace their forward).
//  - block_count() and set_checkpointing() (optional): activation checkpointing of the model's repeated
//    blocks, every k-th block (k = 1: all), 0 = off. Models without blocks keep the defaults.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace tvie {

struct ActivationQuery;     // tvie/ledger.hpp
struct ActivationEstimate;  // tvie/ledger.hpp

struct Batch {
  torch::Tensor input;   // what forward() takes: token ids [B, S], features [B, F], images [B, C, H, W] ...
  torch::Tensor target;  // what loss() compares the output against
  int64_t samples = 0;   // B
  int64_t tokens = 0;    // tokens in the batch (B * S for a language model), 0 when not a token model
};

// Rows [begin, begin + count) of a batch (a view: no copy). Tokens scale with the rows taken.
Batch slice_batch(const Batch& batch, int64_t begin, int64_t count);

// Bytes held by a batch's tensors.
int64_t batch_bytes(const Batch& batch);

struct ModelFacts {
  int64_t parameter_count = 0;          // trainable parameters (analytic)
  int64_t buffer_bytes = 0;             // non-trainable state, e.g. BatchNorm running statistics (analytic)
  double forward_flops_per_sample = 0;  // 2 FLOPs per multiply-add of matmuls/convolutions (analytic)
  int64_t tokens_per_sample = 0;        // sequence length of a language model, else 0
  // How forward_flops_per_sample was obtained: "analytic" (formulas beside the model code), or for a
  // TorchScript model "profiler: <operators counted>" (LibTorch's profiler FLOP estimates of one forward).
  std::string flops_source = "analytic";
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::shared_ptr<torch::nn::Module> make_module() const = 0;
  virtual torch::Tensor forward(torch::nn::Module& module, const torch::Tensor& input) const = 0;
  virtual Batch make_batch(int64_t batch_size, const c10::Device& device, uint64_t seed) const = 0;
  virtual torch::Tensor loss(const torch::Tensor& output, const Batch& batch) const = 0;
  // Whether loss() is the mean cross-entropy of the output as rows [-1, output.size(-1)] against the target as
  // [-1], targets of -100 ignored (torch's cross_entropy defaults): then TrainSettings::fused_loss may compute it
  // through tvie::fused_cross_entropy. Default: false.
  virtual bool loss_is_cross_entropy() const { return false; }
  virtual ModelFacts facts() const { return {}; }
  // Repeated blocks that activation checkpointing can apply to (0: none, the default).
  virtual int64_t block_count() const { return 0; }
  // Checkpoint blocks 0, k, 2k, ... of a module made by make_module() (k = 0: none). Called only when
  // block_count() > 0.
  virtual void set_checkpointing(torch::nn::Module& module, int64_t every_k_blocks) const {
    (void)module;
    (void)every_k_blocks;
  }
  // Called on an inference copy once its weights are converted (dtype, device, eval()): the place for
  // inference-only rewrites such as TorchScript freezing. Default: nothing.
  virtual void prepare_inference(torch::nn::Module& module) const { (void)module; }
  // Bytes of the weights an inference copy holds, when the workload can name them exactly (-1, the default:
  // the ledger measures them as what building the copy left allocated). A workload whose loading leaves
  // other tensors alive (TorchScript's loader) names its weights here; the rest is reported as `other`.
  virtual int64_t inference_weight_bytes(const torch::nn::Module& module) const {
    (void)module;
    return -1;
  }
  // The activation bytes of one forward (and loss, when training), from a symbolic trace of the model's
  // operators (tvie/ledger.hpp). Default: not known (the prediction then has no activation figure).
  virtual ActivationEstimate estimate_activations(const ActivationQuery& query) const;
};

// Copies parameters and buffers, matched by name, from `source` into `destination` (dtype and device
// of the destination are kept). Throws InvalidArgument when the two do not have the same names/shapes.
void copy_weights(const torch::nn::Module& source, torch::nn::Module& destination);

}  // namespace tvie
