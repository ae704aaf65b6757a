// `tvie allreduce`: an all-reduce bandwidth sweep in the manner of nccl-tests' all_reduce_perf, over c10d
// (Gloo on CPU, NCCL on CUDA). Run it under `tvie launch` (or torchrun); rank 0 prints and writes.
#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct AllreduceOptions {
  std::string device = "cpu";
  DistOptions dist;
  OutputOptions output;
  AllreduceSweepSettings sweep;
  bool no_check = false;
};

}  // namespace

Runner add_allreduce_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<AllreduceOptions>();
  auto* cmd = app.add_subcommand("allreduce",
                                 "All-reduce bandwidth sweep over c10d (as nccl-tests' all_reduce_perf); run it "
                                 "under tvie launch or torchrun");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->sweep;
  add_field_option(cmd, "--device", o->device, "cpu (Gloo) or cuda (NCCL, cuda:LOCAL_RANK)", "device")
      ->capture_default_str();
  add_field_option(cmd, "-b,--min-bytes", s.min_bytes, "Smallest message", "allreduce.min_bytes")
      ->capture_default_str();
  add_field_option(cmd, "-e,--max-bytes", s.max_bytes, "Largest message", "allreduce.max_bytes")->capture_default_str();
  add_field_option(cmd, "-f,--factor", s.factor, "Next size = size x factor", "allreduce.factor")
      ->capture_default_str();
  add_field_option(cmd, "-n,--iters", s.iters, "Timed all-reduces per size", "allreduce.iters")->capture_default_str();
  add_field_option(cmd, "-w,--warmup", s.warmup, "Untimed all-reduces per size first", "allreduce.warmup")
      ->capture_default_str();
  add_field_flag(cmd, "--no-check", o->no_check, "Do not verify the sums", "allreduce.check");
  add_field_option(cmd, "-d,--dtype", s.dtype, "fp32, fp64, int32", "allreduce.dtype")->capture_default_str();
  add_dist_options(cmd, o->dist, /*with_overlap=*/false);
  add_output_options(cmd, o->output, /*with_csv=*/true, "Rank 0 writes the sweep as JSON here (atomically)");

  return [o, argv]() {
    apply_log_level(o->output);
    auto s = o->sweep;
    s.check = !o->no_check;
    const DistEnv env = start_rank();
    const DistSettings dist = dist_settings(o->dist);
    if (env.rank == 0) check_outputs(o->output);
    const AllreduceReport report = run_allreduce(s, dist, run_options(o->device, argv));
    if (report.rank == 0) emit(report, o->output);
    return report.result.total_wrong == 0 ? 0 : 1;
  };
}

}  // namespace tvie::cli
