// Bring your own model compiled ahead of time: a torch.export program that AOTInductor compiled and packaged
// (torch._inductor.aoti_compile_and_package: a .pt2 file), run by LibTorch's AOTIModelPackageLoader as an
// inference-only Workload. The package holds Inductor's generated kernels (fused element-wise work, its own GEMM
// choices) compiled for one device and one dtype: the C++ deployment path of PyTorch models that follows
// TorchScript, and the closest LibTorch's own parts come to an inference compiler's fused graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tvie/ledger.hpp>
#include <tvie/workload.hpp>

namespace tvie {

struct AotiSettings {
  std::string path;                  // the .pt2 package
  std::vector<int64_t> input_shape;  // one sample, without the batch dimension (the package's batch is dynamic)
  bool token_input = false;          // inputs are int64 token ids in [0, vocab_size), else fp32 N(0, 1)
  int64_t vocab_size = 0;            // token_input only
};

// The metadata key a package's exporter writes its forward FLOPs per sample under (2 per multiply-add; e.g.
// torch.utils.flop_counter over one sample, examples/aoti_from_python.py): the run's FLOP/s and fraction of the card.
inline constexpr const char* kAotiFlopsKey = "tvie.forward_flops_per_sample";
// The metadata key for the model's trainable parameters (sum of numel() over parameters()): a package's constants
// do not say which are parameters and which are buffers such as BatchNorm's running statistics. Without it, every
// floating constant counts as a parameter.
inline constexpr const char* kAotiParametersKey = "tvie.parameters";

// Throws InvalidArgument("aoti.*") for a missing file, a bad shape, or a package LibTorch cannot load.
void validate(const AotiSettings& settings);

// Loads the package once (its device, constants and a forward of a batch of 2); every make_module() loads it
// again. Training refuses it (the package has no backward).
std::unique_ptr<Workload> make_aoti_workload(const AotiSettings& settings);

// A package compiled from `model` (a Python twin of it on its weights, e.g. examples/aoti_zoo_gpt.py), as a workload
// that runs the package on `model`'s own inputs (its make_batch: the same batches, seed for seed, as the eager
// model's): compare --aoti's compiled row. `model` must outlive it. Throws InvalidArgument("aoti.path") when the
// package refuses `model`'s inputs or holds another parameter count, InvalidArgument("device") when it was compiled
// for another device type than `device`, InvalidArgument(dtype_field) when it computes in another dtype than `dtype`,
// and as make_aoti_workload does.
std::unique_ptr<Workload> make_aoti_twin(const Workload& model, const std::string& path, const c10::Device& device,
                                         InferenceDtype dtype, const std::string& dtype_field);

// Tries one forward of each batch size on the package's device, its generated input checks on: the first size
// outside the package's batch range (the bounds Inductor compiled it for) throws InvalidArgument(field, size), before
// any measured run. Other failures (memory) are left to the run, which reports them as a result.
// `aoti`: a workload of make_aoti_workload or make_aoti_twin.
void check_aoti_batches(const Workload& aoti, const std::vector<int64_t>& batch_sizes, const std::string& field);

// What a package was compiled for: its device type ("cpu", "cuda", from its metadata) and the dtype of most of its
// floating constants' bytes (the weights; fp32 when it has none). Throws as validate() does.
struct AotiPackage {
  std::string device;
  InferenceDtype dtype = InferenceDtype::fp32;
};
AotiPackage aoti_package(const std::string& path);

}  // namespace tvie
