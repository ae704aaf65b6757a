// `tvie plan`: the workload's training and inference projected onto the catalog's cards (tvie/plan.hpp).
#include <fstream>
#include <sstream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct PlanOptions {
  ModelOptions model;
  TrainOptions train;
  OutputOptions output;
  std::string infer_dtype = "bf16";
  std::string cards = "all";
  bool no_host = false;
  double serve_qps = 0;
  double p99_ms = 0;
  int64_t new_tokens = 0, prompt_tokens = 0;
  std::string batching = "auto";
  std::string stack = "auto";
  int64_t train_tokens = 0;
  int64_t train_samples = 0;
  double usable_memory_fraction = 0.9;
  int64_t max_batch = 4096;
  std::string from;
  bool measure = false;
  int64_t measure_layers = 0, measure_vocab = 0;
};

}  // namespace

Runner add_plan_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Project the model's training and inference onto the accelerator catalog's cards: fits or not, largest "
      "batch, step time, cards needed (ZeRO sharding as accounting), serving rate under a p99 bound, power and "
      "cost. Analytic: nothing runs (seconds); every figure is labelled projected");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_model_options(cmd, o->model, "Size preset: tiny, small, and per model large / resnet50 / llama-3-8b ...");
  // --batch is per card; --steps and --warmup size --measure's run, a short one by default (its help shows it).
  o->train.settings.steps = PlanMeasure{}.steps;
  o->train.settings.warmup_steps = PlanMeasure{}.warmup_steps;
  add_train_options(cmd, o->train);
  add_field_option(cmd, "--infer-dtype", o->infer_dtype,
                   "Weights of the inference copy: fp32, fp16, bf16, int8 (Linear layers), fp8 (Linear layers)",
                   "infer.dtype")
      ->capture_default_str();
  add_field_option(cmd, "--cards", o->cards, "all, or catalog ids separated by commas (t4,l4,a100-80gb-sxm,h100-sxm)",
                   "cards")
      ->capture_default_str();
  add_field_flag(cmd, "--no-host", o->no_host, "Leave this machine's CPU out of the cards", "plan.include_host");
  add_field_option(cmd, "--serve-qps", o->serve_qps,
                   "Requests per second to serve: the cards each needs (with --p99-ms)", "plan.serve_qps");
  add_field_option(cmd, "--p99-ms", o->p99_ms, "The bound on a request's p99 latency, ms", "plan.p99_ms");
  add_field_option(cmd, "--new-tokens", o->new_tokens,
                   "gpt, llama: a request generates this many tokens after its prompt (KV-cached decoding, a batch "
                   "of requests decoded together); 0: a request is one forward of the whole sequence",
                   "plan.new_tokens");
  add_field_option(cmd, "--prompt-tokens,--prompt", o->prompt_tokens,
                   "With --new-tokens: the prompt's tokens (--prompt, as tvie decode names it; 0: the sequence length "
                   "--seq minus the new tokens)",
                   "plan.prompt_tokens");
  add_field_option(cmd, "--batching", o->batching,
                   "The serving rate's batching: auto (continuous with --new-tokens, else static), static (a batch "
                   "waits for its last request and runs to its end), continuous (with --new-tokens: requests join "
                   "and leave between decoding steps, as serving engines schedule them)",
                   "plan.batching")
      ->capture_default_str();
  add_field_option(cmd, "--stack", o->stack,
                   "Whose kernels serving is projected for: auto (tuned; tvie with --from or --measure), tvie (tvie's "
                   "own LibTorch inference copy; what --from and --measure calibrate), tuned (a TensorRT-class stack: "
                   "products in the --infer-dtype on the matrix "
                   "units, normalisation and elementwise fused, each card calibrated on its MLPerf ResNet-50 result). "
                   "Each projects every sequence at --seq: for a stack that batches requests at their own lengths, "
                   "without padding, give --seq their mean length",
                   "plan.stack")
      ->capture_default_str();
  add_field_option(cmd, "--train-tokens", o->train_tokens, "Training budget in tokens (token models)",
                   "plan.train_tokens");
  add_field_option(cmd, "--train-samples", o->train_samples, "Training budget in samples", "plan.train_samples");
  add_field_option(cmd, "--usable-memory", o->usable_memory_fraction,
                   "Fraction of a card's memory the run may use (the CUDA context and the allocator's slack take "
                   "the rest)",
                   "plan.usable_memory_fraction")
      ->capture_default_str();
  add_field_option(cmd, "--max-batch", o->max_batch, "The largest batch the searches try", "plan.max_batch")
      ->capture_default_str();
  add_field_option(cmd, "--from", o->from,
                   "A tvie JSON report (compare or train; decode for a generation's prefill and decoding step) "
                   "measured on a catalog card or this host: calibrates the estimates of the cards of its "
                   "architecture",
                   "from")
      ->check(non_empty_path());
  add_field_flag(cmd, "--measure", o->measure,
                 "Run the workload here first (--device; --steps timed steps after --warmup; with --new-tokens also "
                 "--steps generations of one request) and calibrate the estimates of this device's architecture "
                 "with it",
                 "plan.measure");
  add_field_option(cmd, "--measure-layers", o->measure_layers,
                   "With --measure: measure the model cut to this many blocks (a big model's slice; 0: whole)",
                   "plan.measure.layers");
  add_field_option(cmd, "--measure-vocab", o->measure_vocab, "With --measure: and to this vocabulary (0: the preset's)",
                   "plan.measure.vocab");
  add_output_options(cmd, o->output, /*with_csv=*/true, "Also write the plan (every card, every class) as JSON here");
  return [o, argv]() {
    apply_log_level(o->output);
    PlanSettings s;
    s.train = train_settings(o->train);
    s.infer.dtype = parse_inference_dtype(o->infer_dtype);
    s.infer.seed = s.train.seed;
    s.cards = o->cards;
    s.include_host = !o->no_host;
    s.serve_qps = o->serve_qps;
    s.p99_ms = o->p99_ms;
    s.new_tokens = o->new_tokens;
    s.prompt_tokens = o->prompt_tokens;
    s.batching = parse_serving_batching(o->batching);
    s.stack = parse_serving_stack(o->stack);
    s.train_tokens = o->train_tokens;
    s.train_samples = o->train_samples;
    s.usable_memory_fraction = o->usable_memory_fraction;
    s.max_batch = o->max_batch;
    s.measure.enabled = o->measure;
    s.measure.steps = s.train.steps;
    s.measure.warmup_steps = s.train.warmup_steps;
    s.measure.layers = o->measure_layers;
    s.measure.vocab = o->measure_vocab;
    if (o->measure && !o->from.empty())
      throw InvalidArgument("plan.measure", "with --from", "--measure or --from, not both (each calibrates)");
    if (!o->from.empty()) {
      std::ifstream in(o->from);
      if (!in) throw InvalidArgument("from", o->from, "a readable tvie JSON report");
      std::stringstream text;
      text << in.rdbuf();
      s.calibration = calibration_from_report(text.str(), o->from, local_host_accelerator());
    }
    validate(s);
    select_accelerators(accelerator_catalog(), s.cards);  // an unknown id fails before anything else
    const auto workload = zoo_workload(o->model);
    o->output.inputs = {{"--from", o->from}};
    check_outputs(o->output);
    emit(run_plan(*workload, s, run_options(o->model.device, argv)), o->output);
    return 0;
  };
}

}  // namespace tvie::cli
