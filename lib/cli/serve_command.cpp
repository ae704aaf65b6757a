// `tvie serve`: a serving load (single-stream, server, offline) on one model.
#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  OutputOptions output;
  std::string scenario = "server", dtype = "fp32";
  ServeSettings settings;
  bool force = false;
  bool find_max_qps = false;
  MaxQpsSearch search;
  AotiOptions aoti;
};

}  // namespace

Runner add_serve_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve",
                                 "Serve the model under a load (LoadGen scenarios, dynamic batching) and "
                                 "print latency percentiles with the queue/compute split");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->settings;
  add_model_options(cmd, o->model);
  add_field_option(cmd, "--scenario", o->scenario, "single-stream, server, offline", "serve.scenario")
      ->capture_default_str();
  add_field_option(cmd, "--qps", s.target_qps, "server: mean arrival rate (Poisson)", "serve.target_qps")
      ->capture_default_str();
  add_field_option(cmd, "--max-batch", s.max_batch, "Dynamic batcher: the largest batch", "serve.max_batch")
      ->capture_default_str();
  add_field_option(cmd, "--max-queue-delay-us", s.max_queue_delay_us,
                   "Dynamic batcher: close a batch when its oldest request has waited this long",
                   "serve.max_queue_delay_us")
      ->capture_default_str();
  add_field_option(cmd, "--queries", s.query_count, "Requests issued", "serve.query_count")->capture_default_str();
  add_field_option(cmd, "--min-queries", s.min_query_count, "A run is valid with at least this many answers...",
                   "serve.min_query_count")
      ->capture_default_str();
  add_field_option(cmd, "--min-duration-ms", s.min_duration_ms, "...over at least this long", "serve.min_duration_ms")
      ->capture_default_str();
  add_field_option(cmd, "--max-run-s", s.max_run_s,
                   "server: refuse a run whose requests would arrive over longer than this (--queries / --qps); "
                   "--find-max-qps halves no lower",
                   "serve.max_run_s")
      ->capture_default_str();
  add_field_option(cmd, "--dtype", o->dtype,
                   "Weights: fp32, fp16 (CUDA), bf16, int8, fp8 (CUDA sm_89+), int8-weight-only", "serve.dtype")
      ->capture_default_str();
  add_field_option(cmd, "--seed", s.seed, "Seed of the weights, the request data and the arrival schedule",
                   "serve.seed")
      ->capture_default_str();
  add_force_flag(cmd, o->force);
  add_field_flag(cmd, "--find-max-qps", o->find_max_qps,
                 "server: search the highest QPS whose run is valid with p99 latency <= --p99-ms, starting at --qps",
                 "serve.max_qps_search");
  add_field_option(cmd, "--p99-ms", o->search.p99_bound_ms, "--find-max-qps: the p99 latency bound in milliseconds",
                   "serve.p99_bound_ms")
      ->capture_default_str();
  add_field_option(cmd, "--refine-steps", o->search.refine_steps,
                   "--find-max-qps: bisections after the bound is bracketed", "serve.refine_steps")
      ->capture_default_str();
  add_aoti_options(cmd, o->aoti, /*with_input_options=*/true);
  add_output_options(cmd, o->output);

  return [o, argv]() {
    apply_log_level(o->output);
    auto s = o->settings;
    s.check_free_memory = !o->force;
    s.scenario = parse_scenario(o->scenario);
    s.dtype = parse_inference_dtype(o->dtype, "serve.dtype");
    if (o->find_max_qps) s.max_qps_search = o->search;
    std::unique_ptr<Workload> workload;
    if (!o->aoti.path.empty()) {
      // The batcher forms every batch from 1 to --max-batch: both ends within the package's range.
      workload =
          aoti_workload(o->aoti, o->model, {s.dtype}, "serve.dtype", o->dtype, {1, s.max_batch}, "serve.max_batch");
      o->output.inputs = {{"--aoti", o->aoti.path}};
    } else {
      if (!o->aoti.input_shape.empty())
        throw InvalidArgument("aoti.input_shape", o->aoti.input_shape, "nothing without --aoti");
      if (o->aoti.vocab != 0) throw InvalidArgument("aoti.vocab_size", cat(o->aoti.vocab), "0 without --aoti");
      workload = zoo_workload(o->model);
    }
    check_outputs(o->output);
    emit(run_serve(*workload, s, run_options(o->model.device, argv)), o->output);
    return 0;
  };
}

}  // namespace tvie::cli
