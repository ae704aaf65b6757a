// `tvie infer`: inference only, a sweep over batch sizes and precisions with accuracy against fp32.
#include <iostream>
#include <sstream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct InferOptions {
  std::string model = "gpt", preset = "tiny", device = "auto";
  std::string batches = "1,2,4,...,256";
  std::string dtypes = "fp32";
  InferSweepSettings settings;
  std::string script_path, input_shape, fusion = "none";
  int64_t vocab = 0;
  std::string json_path;
  bool verbose = false, quiet = false;
};

std::vector<InferenceDtype> parse_dtype_list(const std::string& text) {
  std::vector<InferenceDtype> dtypes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) dtypes.push_back(parse_inference_dtype(item, "infer_sweep.dtypes"));
  if (dtypes.empty()) throw InvalidArgument("infer_sweep.dtypes", text, "a list of fp32, fp16, bf16, int8, fp8");
  return dtypes;
}

}  // namespace

Runner add_infer_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<InferOptions>();
  auto* cmd = app.add_subcommand("infer",
                                 "Inference only: sweep batch sizes and precisions; latency, throughput and the "
                                 "memory ledger per row, accuracy against fp32, 'does not fit' rows");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->settings;
  cmd->add_option("--model", o->model, "Zoo model: mlp, cnn, gpt")->capture_default_str();
  cmd->add_option("--preset", o->preset, "Size preset")->capture_default_str();
  cmd->add_option("--device", o->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--batch", o->batches, "Batch sizes: a list; '...' continues a doubling series (1,2,4,...,256)")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtypes,
                  "Precisions, a list: fp32, fp16 (CUDA), bf16, int8 (CPU: dynamic quantisation; CUDA: _int_mm), "
                  "fp8 (CUDA sm_89+)")
      ->capture_default_str();
  cmd->add_option("--steps", s.steps, "Timed batches per row")->capture_default_str();
  cmd->add_option("--warmup", s.warmup_steps, "Untimed batches per row before the timed ones")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Seed of the weights and the inputs")->capture_default_str();
  cmd->add_flag("--cuda-graph", s.cuda_graph, "Replay each row's forward from a CUDA graph (CUDA)");
  cmd->add_option("--cpu-memory-limit-mb", s.cpu_memory_limit_mb,
                  "CPU: emulate a device with this much free memory for tensors; rows beyond it do not fit "
                  "(0: no limit)")
      ->capture_default_str();
  cmd->add_option("--torchscript", o->script_path,
                  "Run this TorchScript file (torch.jit.save) instead of a zoo model; needs --input-shape");
  cmd->add_option("--input-shape", o->input_shape, "TorchScript: one sample's input shape, e.g. 3,32,32");
  cmd->add_option("--vocab", o->vocab, "TorchScript: inputs are int64 token ids in [0, vocab) (0: fp32 N(0,1) inputs)")
      ->capture_default_str();
  cmd->add_option("--fusion", o->fusion,
                  "TorchScript: none, freeze (torch::jit::freeze), optimize (freeze + optimize_for_inference)")
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Also write the report as JSON to this file (atomically)");
  cmd->add_flag("-v,--verbose", o->verbose, "Log debug messages");
  cmd->add_flag("-q,--quiet", o->quiet, "Log only errors");

  return [o, argv]() {
    if (o->verbose) log::set_level(log::Level::debug);
    if (o->quiet) log::set_level(log::Level::error);
    auto& s = o->settings;
    s.batch_sizes = parse_int_series(o->batches, "infer_sweep.batch_sizes");
    s.dtypes = parse_dtype_list(o->dtypes);
    std::unique_ptr<Workload> workload;
    if (o->script_path.empty()) {
      validate_model(o->model, o->preset, o->device, InferenceDtype::fp32, "infer_sweep.dtypes");
    } else {
      TorchScriptSettings ts;
      ts.path = o->script_path;
      ts.input_shape =
          o->input_shape.empty() ? std::vector<int64_t>{} : parse_int_series(o->input_shape, "torchscript.input_shape");
      ts.token_input = o->vocab > 0;
      ts.vocab_size = o->vocab;
      ts.fusion = parse_script_fusion(o->fusion);
      workload = make_torchscript_workload(ts);
    }
    validate(s, resolve_device(o->device));
    if (!o->json_path.empty()) check_output_path(o->json_path, "json");

    if (!workload) workload = make_zoo_workload(o->model, o->preset);
    const InferReport report = run_infer(*workload, s, o->device, argv);
    ConsoleReporter(std::cout).report(report);
    if (!o->json_path.empty()) {
      JsonReporter(o->json_path).report(report);
      log::info(cat("wrote ", o->json_path));
    }
    return 0;
  };
}

}  // namespace tvie::cli
