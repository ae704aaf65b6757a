// `tvie serve`: a serving load (single-stream, server, offline) on one model.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct ServeOptions {
  std::string model = "gpt", preset = "tiny", device = "auto";
  std::string scenario = "server", dtype = "fp32";
  ServeSettings settings;
  bool find_max_qps = false;
  MaxQpsSearch search;
  std::string json_path;
  bool verbose = false, quiet = false;
};

}  // namespace

Runner add_serve_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve",
                                 "Serve the model under a load (LoadGen scenarios, dynamic batching) and "
                                 "print latency percentiles with the queue/compute split");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->settings;
  cmd->add_option("--model", o->model, "Zoo model: mlp, cnn, gpt")->capture_default_str();
  cmd->add_option("--preset", o->preset, "Size preset")->capture_default_str();
  cmd->add_option("--device", o->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--scenario", o->scenario, "single-stream, server, offline")->capture_default_str();
  cmd->add_option("--qps", s.target_qps, "server: mean arrival rate (Poisson)")->capture_default_str();
  cmd->add_option("--max-batch", s.max_batch, "Dynamic batcher: the largest batch")->capture_default_str();
  cmd->add_option("--max-queue-delay-us", s.max_queue_delay_us,
                  "Dynamic batcher: close a batch when its oldest request has waited this long")
      ->capture_default_str();
  cmd->add_option("--queries", s.query_count, "Requests issued")->capture_default_str();
  cmd->add_option("--min-queries", s.min_query_count, "A run is valid with at least this many answers...")
      ->capture_default_str();
  cmd->add_option("--min-duration-ms", s.min_duration_ms, "...over at least this long")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Weights: fp32, fp16 (CUDA), bf16")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Seed of the weights, the request data and the arrival schedule")
      ->capture_default_str();
  cmd->add_flag("--find-max-qps", o->find_max_qps,
                "server: search the highest QPS whose run is valid with p99 latency <= --p99-ms, starting at --qps");
  cmd->add_option("--p99-ms", o->search.p99_bound_ms, "--find-max-qps: the p99 latency bound in milliseconds")
      ->capture_default_str();
  cmd->add_option("--refine-steps", o->search.refine_steps, "--find-max-qps: bisections after the bound is bracketed")
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Also write the report as JSON to this file (atomically)");
  cmd->add_flag("-v,--verbose", o->verbose, "Log debug messages");
  cmd->add_flag("-q,--quiet", o->quiet, "Log only errors");

  return [o, argv]() {
    if (o->verbose) log::set_level(log::Level::debug);
    if (o->quiet) log::set_level(log::Level::error);
    auto& s = o->settings;
    s.scenario = parse_scenario(o->scenario);
    s.dtype = parse_inference_dtype(o->dtype, "serve.dtype");
    validate_model(o->model, o->preset, o->device, s.dtype, "serve.dtype");
    validate(s);
    if (o->find_max_qps) {
      validate(o->search);
      if (s.scenario != Scenario::server)
        throw InvalidArgument("serve.scenario", to_string(s.scenario), "server (--find-max-qps searches its QPS)");
    }
    if (!o->json_path.empty()) check_output_path(o->json_path, "json");

    const auto device = resolve_device(o->device);
    auto workload = make_zoo_workload(o->model, o->preset);
    log::info(cat("serving ", workload->name(), " on ", describe_device(device), ": ", to_string(s.scenario), ", ",
                  s.query_count, " requests"));
    ServeReport report;
    report.context = make_run_context(device, argv);
    report.workload = workload->name();
    report.facts = workload->facts();
    report.settings = s;
    if (o->find_max_qps) {
      log::info(cat("searching the highest QPS with p99 <= ", o->search.p99_bound_ms, " ms, from ", s.target_qps));
      report.search = find_max_qps(*workload, s, o->search, device);
      report.result = report.search->at_max;
      if (report.search->max_qps > 0) report.settings.target_qps = report.search->max_qps;
    } else {
      report.result = run_serving(*workload, s, device);
    }
    ConsoleReporter(std::cout).report(report);
    if (!o->json_path.empty()) JsonReporter(o->json_path).report(report);
    return 0;
  };
}

}  // namespace tvie::cli
