// `tvie compare`: train the model, then run inference on a copy of its weights, side by side.
#include <tvie/tvie.hpp>

#include <algorithm>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct CompareOptions {
  ModelOptions model;
  TrainOptions train;
  OutputOptions output;
  MaxBatchOptions max_batch;
  SliceOptions slices;
  std::string infer_dtype = "auto";
  int64_t infer_batch = 0;
  int64_t infer_steps = 0;
  bool infer_cuda_graph = false;
  std::string aoti_path;
  int64_t new_tokens = -1;  // -1: auto (kAutoNewTokens for gpt and llama, capped at half the context; else 0)
};

// compare's generation by default: as many new tokens as a chat reply's first sentences.
constexpr int64_t kAutoNewTokens = 64;

}  // namespace

Runner add_compare_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare",
                                 "Train the model, then run inference on a copy of its weights, and print memory, "
                                 "time and throughput side by side");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: last wins
  add_model_options(cmd, o->model, "Size preset: tiny, small, and per model large / resnet18-cifar / gpt2-small");
  add_train_options(cmd, o->train);
  record_field(cmd, "infer.warmup_steps", "--warmup");  // --warmup sets both modes' warm-up
  add_field_option(
      cmd, "--infer-dtype", o->infer_dtype,
      "Weights of the inference copy: auto (what the device runs natively: bf16 with bf16 units, "
      "else fp32), fp32, fp16 (CUDA), bf16, int8 (Linear layers; CPU dynamic quantisation, CUDA "
      "_int_mm), fp8 (CUDA sm_89+), int8-weight-only (Linear weights int8 read by _weight_int8pack_mm, the "
      "rest bf16)",
      "infer.dtype")
      ->capture_default_str();
  add_field_option(cmd, "--infer-batch", o->infer_batch, "Inference samples per batch (default: same as --batch)",
                   "infer.batch_size");
  add_field_option(cmd, "--infer-steps", o->infer_steps, "Timed inference batches (default: same as --steps)",
                   "infer.steps");
  add_field_flag(cmd, "--infer-cuda-graph", o->infer_cuda_graph,
                 "Replay the inference forward, and the generation's decoding steps, from CUDA graphs (CUDA)",
                 "infer.cuda_graph");
  add_field_option(cmd, "--new-tokens", o->new_tokens,
                   "gpt, llama: also serve the trained weights as generation: prompts of the context less N tokens "
                   "(a prefill whose head reads the last position), then N-1 KV-cached decoding steps, at the "
                   "inference batch and dtype: TTFT, time per output token, tokens/s and the generation's memory "
                   "ledger with its KV cache (with --find-max-batch: the most sequences such a generation holds). "
                   "Default: 64 for gpt and llama (at most half the context), 0 for the other models; with "
                   "--slice-layers each slice generates and the generation is extrapolated; 0: the full-sequence "
                   "forward alone (\"score\", which compare measures in every case)",
                   "compare.new_tokens");
  add_field_option(cmd, "--aoti", o->aoti_path,
                   "Also run this AOTInductor package of the same model (a .pt2 compiled from its Python twin, e.g. "
                   "examples/aoti_zoo_gpt.py) at the inference batch on the same inputs, beside eager: compiled "
                   "kernels vs LibTorch's operators. It runs in the device and dtype it was compiled for (which must "
                   "be --device's and --infer-dtype's), on its own constants as weights",
                   "aoti.path")
      ->check(non_empty_path());
  add_max_batch_options(cmd, o->max_batch, /*with_cpu_limit=*/true);
  add_slice_options(cmd, o->slices);
  add_output_options(cmd, o->output);
  add_trace_option(cmd, o->output);

  return [o, cmd, argv]() {
    apply_log_level(o->output);
    refuse_search_options_without_search(o->max_batch, /*with_cpu_limit=*/true);
    CompareSettings s;
    s.train = train_settings(o->train);
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
    s.infer.check_free_memory = s.train.check_free_memory;  // --force: both modes
    s.infer.cuda_graph = o->infer_cuda_graph;
    s.infer.profile_classes = s.train.profile_classes;  // one more training step and one more inference batch
    const auto workload = zoo_workload(o->model);
    check_outputs(o->output);
    s.new_tokens = o->new_tokens;
    if (s.new_tokens < 0 && has_kv_decoder(*workload))
      s.new_tokens = std::min(kAutoNewTokens, workload->facts().tokens_per_sample / 2);
    s.new_tokens = std::max<int64_t>(s.new_tokens, 0);
    s.aoti_path = o->aoti_path;
    if (!s.aoti_path.empty() && (o->max_batch.find || slice_settings(o->slices)))
      throw InvalidArgument(
          "aoti.path", s.aoti_path,
          "nothing with --slice-layers or --find-max-batch (the package is the whole model, one batch)");
    if (const auto slices = slice_settings(o->slices)) {
      refuse_csv_with_slices(o->output);
      refuse_slices_with_max_batch(o->slices, o->max_batch);
      refuse_profile_with_slices(s.train.profile_classes, "train.profile_classes");
      SliceRunSettings run{s.train, s.infer, s.infer_dtype_auto, std::nullopt};
      if (s.new_tokens > 0) {
        validate_compare_new_tokens(*workload, s.new_tokens);
        DecodeSettings g;
        g.batch_size = s.infer.batch_size;
        g.prompt_tokens = workload->facts().tokens_per_sample - s.new_tokens;
        g.new_tokens = s.new_tokens;
        g.repetitions = s.generation_repetitions;
        g.dtype = s.infer.dtype;  // infer_dtype_auto: resolved with infer's
        g.seed = s.infer.seed;
        run.generate = g;
      }
      emit(run_slices(*workload, slice_source(o->model, *slices), run, run_options(o->model.device, argv)), o->output);
      return 0;
    }
    if (o->max_batch.find) {
      refuse_trace_with_max_batch(o->output);
      MaxBatchSearchSettings search;
      search.train = s.train;
      search.infer = s.infer;
      search.infer_dtype_auto = s.infer_dtype_auto;
      search.generation = s.new_tokens > 0;
      search.decode.prompt_tokens = workload->facts().tokens_per_sample - s.new_tokens;
      search.decode.new_tokens = s.new_tokens;
      search.search = o->max_batch.settings;
      emit(run_max_batch(*workload, search, run_options(o->model.device, argv)), o->output);
      return 0;
    }
    const CompareReport report = run_compare(*workload, s, run_options(o->model.device, argv));
    emit(report, o->output);
    return training_exit_code(report.training, o->train);
  };
}

}  // namespace tvie::cli
