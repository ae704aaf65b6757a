// `tvie infer`: inference only, a sweep over batch sizes and precisions with accuracy against fp32.
#include <algorithm>
#include <sstream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct InferOptions {
  ModelOptions model;
  OutputOptions output;
  std::string batches = "1,2,4,...,256";
  std::string dtypes = "fp32";
  InferSweepSettings settings;
  bool force = false;
  MaxBatchOptions max_batch;
  SliceOptions slices;
  std::string script_path, input_shape, fusion = "none";
  int64_t vocab = 0;
  AotiOptions aoti;
  std::string load_parameters;
};

std::vector<InferenceDtype> parse_dtype_list(const std::string& text) {
  std::vector<InferenceDtype> dtypes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto dtype = parse_inference_dtype(item, "infer_sweep.dtypes");
    if (std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end())
      throw InvalidArgument("infer_sweep.dtypes", text, "a list of fp32, fp16, bf16, int8, fp8, each once");
    dtypes.push_back(dtype);
  }
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
  add_model_options(cmd, o->model);
  add_field_option(cmd, "--batch", o->batches, "Batch sizes: a list; '...' continues a doubling series (1,2,4,...,256)",
                   "infer_sweep.batch_sizes")
      ->capture_default_str();
  add_field_option(cmd, "--dtype", o->dtypes,
                   "Precisions, a list: fp32, fp16 (CUDA), bf16, int8 (CPU: dynamic quantisation; CUDA: _int_mm), "
                   "fp8 (CUDA sm_89+), int8-weight-only (Linear weights int8 read by _weight_int8pack_mm, the rest "
                   "bf16)",
                   "infer_sweep.dtypes")
      ->capture_default_str();
  add_field_option(cmd, "--steps", s.steps, "Timed batches per row", "infer_sweep.steps")->capture_default_str();
  add_field_option(cmd, "--warmup", s.warmup_steps, "Untimed batches per row before the timed ones",
                   "infer_sweep.warmup_steps")
      ->capture_default_str();
  add_field_option(cmd, "--seed", s.seed, "Seed of the weights and the inputs", "infer_sweep.seed")
      ->capture_default_str();
  add_field_flag(cmd, "--cuda-graph", s.cuda_graph, "Replay each row's forward from a CUDA graph (CUDA)",
                 "infer_sweep.cuda_graph");
  add_field_option(cmd, "--cpu-memory-limit-mb", s.cpu_memory_limit_mb,
                   "CPU: emulate a device with this much free memory for tensors; rows beyond it do not fit "
                   "(0: no limit)",
                   "infer_sweep.cpu_memory_limit_mb")
      ->capture_default_str();
  add_field_option(cmd, "--torchscript", o->script_path,
                   "Run this TorchScript file (torch.jit.save) instead of a zoo model; needs --input-shape",
                   "torchscript.path")
      ->check(non_empty_path());
  add_aoti_options(cmd, o->aoti, /*with_input_options=*/false);
  add_field_option(cmd, "--input-shape", o->input_shape,
                   "TorchScript, AOTInductor: one sample's input shape, e.g. 3,32,32", "torchscript.input_shape");
  record_field(cmd, "aoti.input_shape", "--input-shape");
  add_field_option(cmd, "--vocab", o->vocab,
                   "TorchScript, AOTInductor: inputs are int64 token ids in [0, vocab) (0: fp32 N(0,1) inputs)",
                   "torchscript.vocab_size")
      ->capture_default_str();
  record_field(cmd, "aoti.vocab_size", "--vocab");
  add_field_option(cmd, "--fusion", o->fusion,
                   "TorchScript: none, freeze (torch::jit::freeze), optimize (freeze + optimize_for_inference)",
                   "torchscript.fusion")
      ->capture_default_str();
  add_field_option(cmd, "--load-parameters", o->load_parameters,
                   "Run every row on these weights (a file `tvie train --save-parameters` wrote for the same model): "
                   "accuracy against fp32 on trained weights instead of fresh ones of --seed",
                   "load_parameters")
      ->check(non_empty_path());
  add_force_flag(cmd, o->force);
  add_max_batch_options(cmd, o->max_batch, /*with_cpu_limit=*/false);
  add_slice_options(cmd, o->slices);
  add_output_options(cmd, o->output);
  add_trace_option(cmd, o->output);

  return [o, argv]() {
    apply_log_level(o->output);
    refuse_search_options_without_search(o->max_batch, /*with_cpu_limit=*/false);
    auto s = o->settings;
    s.check_free_memory = !o->force;
    s.batch_sizes = parse_int_series(o->batches, "infer_sweep.batch_sizes");
    s.dtypes = parse_dtype_list(o->dtypes);
    std::unique_ptr<Workload> workload;
    if (!o->script_path.empty() && !o->aoti.path.empty())
      throw InvalidArgument("aoti.path", o->aoti.path, "nothing with --torchscript (one model a run)");
    if (o->script_path.empty() && o->aoti.path.empty()) {
      // The TorchScript options describe a script's inputs: with a zoo model they would be ignored.
      if (o->vocab != 0)
        throw InvalidArgument("torchscript.vocab_size", cat(o->vocab), "0 without --torchscript or --aoti");
      if (!o->input_shape.empty())
        throw InvalidArgument("torchscript.input_shape", o->input_shape, "nothing without --torchscript or --aoti");
      if (o->fusion != "none") throw InvalidArgument("torchscript.fusion", o->fusion, "none without --torchscript");
      workload = zoo_workload(o->model);
    } else if (!o->aoti.path.empty()) {
      if (o->fusion != "none")
        throw InvalidArgument("torchscript.fusion", o->fusion,
                              "none with --aoti (Inductor fused the package's kernels when it compiled it)");
      AotiOptions aoti = o->aoti;
      aoti.input_shape = o->input_shape;
      aoti.vocab = o->vocab;
      workload = aoti_workload(aoti, o->model, s.dtypes, "infer_sweep.dtypes", o->dtypes, s.batch_sizes,
                               "infer_sweep.batch_sizes");
      s.accuracy_vs_fp32 = false;  // the package computes in its own dtype only
    } else {
      if (o->model.pad_vocab != 0)
        throw InvalidArgument("model.pad_vocab", cat(o->model.pad_vocab),
                              "0 with --torchscript (a zoo model's option)");
      TorchScriptSettings ts;
      ts.path = o->script_path;
      ts.input_shape =
          o->input_shape.empty() ? std::vector<int64_t>{} : parse_int_series(o->input_shape, "torchscript.input_shape");
      if (o->vocab < 0)
        throw InvalidArgument("torchscript.vocab_size", cat(o->vocab),
                              "an integer >= 0 (0: fp32 inputs; V: token ids in [0, V))");
      ts.token_input = o->vocab > 0;
      ts.vocab_size = o->vocab;
      ts.fusion = parse_script_fusion(o->fusion);
      workload = make_torchscript_workload(ts);
    }
    if (!o->load_parameters.empty() && (!o->script_path.empty() || !o->aoti.path.empty() ||
                                        slice_settings(o->slices).has_value() || o->max_batch.find))
      throw InvalidArgument(
          "load_parameters", o->load_parameters,
          "nothing with --torchscript, --aoti, --slice-layers or --find-max-batch (a sweep of a zoo model)");
    o->output.inputs = {
        {"--torchscript", o->script_path}, {"--aoti", o->aoti.path}, {"--load-parameters", o->load_parameters}};
    check_outputs(o->output);
    if (const auto slices = slice_settings(o->slices)) {
      refuse_csv_with_slices(o->output);
      refuse_slices_with_max_batch(o->slices, o->max_batch);
      if (!o->script_path.empty() || !o->aoti.path.empty())
        throw InvalidArgument("slices.layers", o->slices.layers,
                              "a zoo model with blocks (not --torchscript or --aoti)");
      if (s.batch_sizes.size() != 1)
        throw InvalidArgument("infer_sweep.batch_sizes", o->batches, "one batch size with --slice-layers, e.g. 1");
      if (s.dtypes.size() != 1)
        throw InvalidArgument("infer_sweep.dtypes", o->dtypes, "one precision with --slice-layers");
      if (s.cpu_memory_limit_mb != 0)
        throw InvalidArgument("infer_sweep.cpu_memory_limit_mb", cat(s.cpu_memory_limit_mb), "0 with --slice-layers");
      SliceRunSettings sliced;
      sliced.infer = row_settings(s, s.batch_sizes.front(), s.dtypes.front());
      emit(run_slices(*workload, slice_source(o->model, *slices), sliced, run_options(o->model.device, argv)),
           o->output);
      return 0;
    }
    if (o->max_batch.find) {
      refuse_trace_with_max_batch(o->output);
      if (s.dtypes.size() != 1)
        throw InvalidArgument("infer_sweep.dtypes", o->dtypes, "one precision with --find-max-batch");
      MaxBatchSearchSettings search;
      search.training = false;
      search.infer.dtype = s.dtypes.front();
      search.infer.seed = s.seed;
      search.search = o->max_batch.settings;
      search.search.cpu_memory_limit_mb = s.cpu_memory_limit_mb;  // --cpu-memory-limit-mb, shared with the sweep
      emit(run_max_batch(*workload, search, run_options(o->model.device, argv)), o->output);
      return 0;
    }
    auto run = run_options(o->model.device, argv);
    run.load_parameters = o->load_parameters;
    emit(run_infer_sweep(*workload, s, run), o->output);
    return 0;
  };
}

}  // namespace tvie::cli
