// `tvie decode`: KV-cached decoding of the zoo gpt or llama.
#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct DecodeOptions {
  ModelOptions model;
  OutputOptions output;
  std::string dtype = "fp32";
  DecodeSettings settings;
  std::string load_parameters;
  MaxBatchOptions max_batch;
  SliceOptions slices;
};

}  // namespace

Runner add_decode_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<DecodeOptions>();
  auto* cmd = app.add_subcommand("decode",
                                 "Generate with a KV cache (gpt, llama): time to first token, time per output "
                                 "token, tokens/s and the KV-cache bytes");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->settings;
  add_model_options(cmd, o->model, "Preset: gpt tiny, small, gpt2-small; llama tiny, llama-3.2-1b, llama-3-8b ...",
                    /*fixed_model=*/"", "Zoo model with a KV-cached forward: gpt, llama");
  add_field_option(cmd, "--batch", s.batch_size, "Sequences decoded together", "decode.batch_size")
      ->capture_default_str();
  add_field_option(cmd, "--prompt", s.prompt_tokens, "Prompt tokens (prefill)", "decode.prompt_tokens")
      ->capture_default_str();
  add_field_option(cmd, "--new-tokens", s.new_tokens, "Tokens generated per sequence", "decode.new_tokens")
      ->capture_default_str();
  add_field_option(cmd, "--repetitions", s.repetitions, "Timed runs (after the two untimed ones of the memory ledger)",
                   "decode.repetitions")
      ->capture_default_str();
  add_field_option(
      cmd, "--dtype", o->dtype,
      "Weights and cache: fp32, fp16 (CUDA), bf16, int8, fp8 (CUDA sm_89+), int8-weight-only (Linear weights int8, "
      "activations and cache bf16)",
      "decode.dtype")
      ->capture_default_str();
  add_field_option(cmd, "--seed", s.seed, "Seed of the weights and the prompt", "decode.seed")->capture_default_str();
  add_field_flag(cmd, "--profile-classes", s.profile_classes,
                 "One more generation under LibTorch's profiler: the prefill's and decoding steps' time by operator "
                 "class, which plan --from calibrates class by class",
                 "decode.profile_classes");
  add_field_flag(cmd, "--cuda-graph", s.cuda_graph,
                 "CUDA: run every decoding step at fixed shapes (the whole KV cache attended, later positions masked) "
                 "and replay it from one CUDA graph captured for the batch",
                 "decode.cuda_graph");
  add_field_option(cmd, "--load-parameters", o->load_parameters,
                   "Generate with these weights (a file `tvie train --save-parameters` wrote for the same model) "
                   "instead of fresh ones of --seed",
                   "load_parameters")
      ->check(non_empty_path());
  add_max_batch_options(cmd, o->max_batch, /*with_cpu_limit=*/true);
  add_slice_options(cmd, o->slices);
  add_output_options(cmd, o->output, true, "Write the JSON report (docs/metrics.md) to this file (atomically)");
  return [o, argv]() {
    apply_log_level(o->output);
    refuse_search_options_without_search(o->max_batch, /*with_cpu_limit=*/true);
    if (o->max_batch.find && !o->load_parameters.empty())
      throw InvalidArgument("load_parameters", o->load_parameters,
                            "nothing with --find-max-batch (the search measures memory, not the weights' values)");
    const auto slices = slice_settings(o->slices);
    if (slices) {
      refuse_csv_with_slices(o->output);
      refuse_slices_with_max_batch(o->slices, o->max_batch);
      refuse_profile_with_slices(o->settings.profile_classes, "decode.profile_classes");
      if (!o->load_parameters.empty())
        throw InvalidArgument("load_parameters", o->load_parameters,
                              "nothing with --slice-layers (each slice is a model of its own, freshly initialised)");
    }
    auto s = o->settings;
    s.dtype = parse_inference_dtype(o->dtype, "decode.dtype");
    const auto workload = zoo_workload(o->model);
    o->output.inputs = {{"--load-parameters", o->load_parameters}};
    check_outputs(o->output);
    if (slices) {
      require_kv_decoder(*workload);
      SliceRunSettings run;
      run.generate = s;
      emit(run_slices(*workload, slice_source(o->model, *slices), run, run_options(o->model.device, argv)), o->output);
      return 0;
    }
    if (o->max_batch.find) {
      MaxBatchSearchSettings search;
      search.training = false;
      search.inference = false;
      search.generation = true;
      search.infer.dtype = s.dtype;
      search.infer.seed = s.seed;
      search.decode = s;
      search.search = o->max_batch.settings;
      emit(run_max_batch(*workload, search, run_options(o->model.device, argv)), o->output);
      return 0;
    }
    auto run = run_options(o->model.device, argv);
    run.load_parameters = o->load_parameters;
    emit(run_decode(*workload, s, run), o->output);
    return 0;
  };
}

}  // namespace tvie::cli
