// `tvie train`: training only, with every training option; data-parallel when launched with several
// ranks (tvie launch, torchrun, SLURM: the RANK/WORLD_SIZE/MASTER_* environment) or given --backend.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct TrainOptions {
  CommonOptions common;
  std::string backend = "auto";
  DistSettings dist;
};

// What must agree across ranks: checked at rendezvous (a mismatch fails with the setting's name).
std::vector<std::pair<std::string, std::string>> rank_settings(const CompareSettings& s, const DistSettings& d,
                                                               const c10::Device& device) {
  const auto& t = s.train;
  return {{"model", s.model},
          {"preset", s.preset},
          {"device", device.is_cuda() ? "cuda" : "cpu"},
          {"batch", cat(t.batch_size)},
          {"accumulate", cat(t.accumulate)},
          {"steps", cat(t.steps)},
          {"warmup", cat(t.warmup_steps)},
          {"optimizer", to_string(t.optimizer)},
          {"lr", cat(t.learning_rate)},
          {"precision", to_string(t.precision)},
          {"checkpoint", checkpoint_to_string(t.checkpoint_every)},
          {"clip", cat(t.clip_grad_norm)},
          {"seed", cat(t.seed)},
          {"bucket-mb", cat(d.bucket_mb)},
          {"overlap", d.overlap ? "on" : "off"},
          {"backend", to_string(d.backend)}};
}

}  // namespace

Runner add_train_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train the model and print the memory ledger, phase times, loss curve and loss-scaling statistics");
  add_common_options(cmd, o->common);
  cmd->add_option("--backend", o->backend,
                  "Data parallelism: auto (nccl for CUDA, gloo for CPU), nccl, gloo; on by itself when WORLD_SIZE > 1")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o->dist.bucket_mb, "Data parallelism: gradient bucket size in MiB")
      ->capture_default_str();
  cmd->add_flag("--overlap", o->dist.overlap, "Data parallelism: all-reduce each bucket while backward goes on");
  cmd->add_option("--timeout-s", o->dist.timeout_s, "Data parallelism: rendezvous and collective timeout")
      ->capture_default_str();
  return [o, cmd, argv]() {
    apply_common_options(o->common);
    auto& s = o->common.settings;
    const DistEnv env = dist_env_from_environment();
    const bool distributed = env.world_size > 1 || cmd->count("--backend") > 0;
    if (!distributed) {
      validate(s);
      if (!o->common.json_path.empty()) check_output_path(o->common.json_path, "json");
      const TrainReport report = run_train(s, argv);
      ConsoleReporter(std::cout).report(report);
      if (!o->common.json_path.empty()) {
        JsonReporter(o->common.json_path).report(report);
        log::info(cat("wrote ", o->common.json_path));
      }
      return 0;
    }
    // One rank of a data-parallel job. Rank 0 prints and writes; the others only report errors.
    if (env.rank != 0) log::set_level(log::Level::error);
    o->dist.backend = parse_dist_backend(o->backend);
    validate(o->dist);
    validate(s);
    c10::Device device = resolve_device(s.device, "device");
    if (device.is_cuda()) s.device = cat("cuda:", env.local_rank);  // one device per local rank
    device = resolve_device(s.device, "device");
    validate(o->dist, device);
    if (env.rank == 0 && !o->common.json_path.empty()) check_output_path(o->common.json_path, "json");
    DistEnv rendezvous = env;
    if (env.world_size == 1 && std::getenv("MASTER_PORT") == nullptr) rendezvous.master_port = 0;  // any free port
    Communicator comm(rendezvous, o->dist, device);
    comm.check_same_configuration(rank_settings(s, o->dist, device));
    const TrainReport report = run_train(s, argv, &comm, &o->dist);
    if (comm.rank() != 0) return 0;
    ConsoleReporter(std::cout).report(report);
    if (!o->common.json_path.empty()) {
      JsonReporter(o->common.json_path).report(report);
      log::info(cat("wrote ", o->common.json_path));
    }
    return 0;
  };
}

}  // namespace tvie::cli
