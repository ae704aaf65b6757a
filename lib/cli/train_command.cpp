// `tvie train`: training only, with every training option; data-parallel when launched with several
// ranks (tvie launch, torchrun, SLURM: the RANK/WORLD_SIZE/MASTER_* environment) or given --backend.
#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct TrainCommandOptions {
  ModelOptions model;
  TrainOptions train;
  DistOptions dist;
  MaxBatchOptions max_batch;
  OutputOptions output;
  SliceOptions slices;
  std::string save_parameters;
};

}  // namespace

Runner add_train_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<TrainCommandOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train the model and print the memory ledger, phase times, loss curve and loss-scaling statistics");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_model_options(cmd, o->model, "Size preset: tiny, small, and per model large / resnet18-cifar / gpt2-small");
  add_train_options(cmd, o->train);
  add_dist_options(cmd, o->dist, /*with_overlap=*/true);
  add_max_batch_options(cmd, o->max_batch, /*with_cpu_limit=*/true);
  add_slice_options(cmd, o->slices);
  add_output_options(cmd, o->output);
  add_trace_option(cmd, o->output);
  add_field_option(cmd, "--save-parameters", o->save_parameters,
                   "Write the trained parameters here after the run (torch::save of a tensor list: the module's "
                   "parameters() in order, then its buffers(), such as BatchNorm's running statistics; with data "
                   "parallelism every rank writes FILE.rankN)",
                   "save_parameters")
      ->check(non_empty_path());
  return [o, cmd, argv]() {
    apply_log_level(o->output);
    refuse_search_options_without_search(o->max_batch, /*with_cpu_limit=*/true);
    const TrainSettings settings = train_settings(o->train);
    const auto workload = zoo_workload(o->model);
    RunOptions run = run_options(o->model.device, argv);
    run.save_parameters = o->save_parameters;
    o->output.more_outputs = {{"save_parameters", o->save_parameters}};
    // Only a run that trains has parameters to write: not the slices' or the largest batch's probes.
    if (!o->save_parameters.empty() && (!o->slices.layers.empty() || o->max_batch.find))
      throw InvalidArgument("save_parameters", o->save_parameters,
                            "no --save-parameters with --slice-layers or --find-max-batch (they train no model)");
    const bool distributed = dist_env_from_environment().world_size > 1 || cmd->count("--backend") > 0;
    if (const auto slices = slice_settings(o->slices)) {
      refuse_csv_with_slices(o->output);
      refuse_slices_with_max_batch(o->slices, o->max_batch);
      refuse_profile_with_slices(settings.profile_classes, "train.profile_classes");
      if (distributed) throw InvalidArgument("slices.layers", o->slices.layers, "a single process");
      check_outputs(o->output);
      SliceRunSettings sliced;
      sliced.train = settings;
      emit(run_slices(*workload, slice_source(o->model, *slices), sliced, run), o->output);
      return 0;
    }
    if (o->max_batch.find) {
      refuse_trace_with_max_batch(o->output);
      if (distributed) throw InvalidArgument("max_batch.find", "true", "a single process (not with data parallelism)");
      MaxBatchSearchSettings search;
      search.inference = false;
      search.train = settings;
      search.search = o->max_batch.settings;
      check_outputs(o->output);
      emit(run_max_batch(*workload, search, run), o->output);
      return 0;
    }
    if (!distributed) {
      check_outputs(o->output);
      const TrainReport report = run_train(*workload, settings, run);
      emit(report, o->output);
      return training_exit_code(report.training, o->train);
    }
    const DistEnv env = start_rank();
    const DistSettings dist = dist_settings(o->dist);
    if (env.rank == 0) check_outputs(o->output);
    const TrainReport report = run_train_data_parallel(*workload, settings, dist, run);
    if (report.rank == 0) emit(report, o->output);
    return training_exit_code(report.training, o->train);  // every rank: the losses are the ranks' mean
  };
}

}  // namespace tvie::cli
