// `tvie compare`: train the model, then run inference on a copy of its weights, side by side.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct CompareOptions {
  CommonOptions common;
  std::string infer_dtype = "auto";
  int64_t infer_batch = 0;
  int64_t infer_steps = 0;
  bool infer_cuda_graph = false;
};

}  // namespace

Runner add_compare_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare",
                                 "Train the model, then run inference on a copy of its weights, and print memory, "
                                 "time and throughput side by side");
  add_common_options(cmd, o->common);
  cmd->add_option("--infer-dtype", o->infer_dtype,
                  "Weights of the inference copy: auto (what the device runs natively: bf16 with bf16 units, "
                  "else fp32), fp32, fp16 (CUDA), bf16, int8 (Linear layers; CPU dynamic quantisation, CUDA "
                  "_int_mm), fp8 (CUDA sm_89+)")
      ->capture_default_str();
  cmd->add_option("--infer-batch", o->infer_batch, "Inference samples per batch (default: same as --batch)");
  cmd->add_option("--infer-steps", o->infer_steps, "Timed inference batches (default: same as --steps)");
  cmd->add_flag("--infer-cuda-graph", o->infer_cuda_graph, "Replay the inference forward from a CUDA graph (CUDA)");

  return [o, cmd, argv]() {
    apply_common_options(o->common);
    auto& s = o->common.settings;
    s.infer_dtype_auto = o->infer_dtype == "auto";
    if (!s.infer_dtype_auto) {
      try {
        s.infer.dtype = parse_inference_dtype(o->infer_dtype);
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(e.field(), e.value(), "auto, " + e.accepted());
      }
    }
    s.infer.batch_size = cmd->count("--infer-batch") > 0 ? o->infer_batch : s.train.batch_size;
    s.infer.steps = cmd->count("--infer-steps") > 0 ? o->infer_steps : s.train.steps;
    s.infer.warmup_steps = s.train.warmup_steps;
    s.infer.seed = s.train.seed;
    s.infer.cuda_graph = o->infer_cuda_graph;
    validate(s);  // everything is checked before anything runs or any file is touched
    const auto& json = o->common.json_path;
    if (!json.empty()) check_output_path(json, "json");

    const CompareReport report = run_compare(s, argv);
    ConsoleReporter(std::cout).report(report);
    if (!json.empty()) {
      JsonReporter(json).report(report);
      log::info(cat("wrote ", json));
    }
    return 0;
  };
}

}  // namespace tvie::cli
