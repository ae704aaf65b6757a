// Bring your own model as TorchScript: a module saved with torch.jit.save (Python) or
// torch::jit::Module::save (C++), run as a Workload with a declared input shape.
//
// Inference can run it as loaded, frozen (torch::jit::freeze: weights and attributes folded into the
// graph as constants), or frozen and optimised (torch::jit::optimize_for_inference: conv-batchnorm
// folding, conv-add/relu fusion, dropout removal: the "layer fusion" step of inference stacks).
// Training runs the loaded module's forward with a synthetic loss (the mean square of the output), which
// measures the cost of a training step but teaches the model nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tvie/workload.hpp>

namespace tvie {

enum class ScriptFusion { none, freeze, optimize };  // optimize = freeze + optimize_for_inference
std::string to_string(ScriptFusion fusion);
ScriptFusion parse_script_fusion(const std::string& text, const std::string& field = "torchscript.fusion");

struct TorchScriptSettings {
  std::string path;                          // file written by torch.jit.save
  std::vector<int64_t> input_shape;          // one sample, without the batch dimension: {3, 32, 32}, {128}
  bool token_input = false;                  // inputs are int64 token ids in [0, vocab_size), else fp32 N(0, 1)
  int64_t vocab_size = 0;                    // token_input only
  ScriptFusion fusion = ScriptFusion::none;  // applied to inference copies only
};

// Throws InvalidArgument("torchscript.*") for a missing/unloadable file or a bad shape.
void validate(const TorchScriptSettings& settings);

// Loads the file once (to validate it and count its parameters); every make_module() loads it again.
std::unique_ptr<Workload> make_torchscript_workload(const TorchScriptSettings& settings);

}  // namespace tvie
