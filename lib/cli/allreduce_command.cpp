// `tvie allreduce`: an all-reduce bandwidth sweep in the manner of nccl-tests' all_reduce_perf, over c10d
// (Gloo on CPU, NCCL on CUDA). Run it under `tvie launch` (or torchrun); rank 0 prints and writes.
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct AllreduceOptions {
  std::string device = "cpu", backend = "auto";
  AllreduceSweepSettings sweep;
  int64_t timeout_s = 120;
  bool no_check = false;
  std::string json_path, csv_path;
};

std::string line_fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line_fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string wrong_cell(int64_t w) { return w < 0 ? "N/A" : std::to_string(w); }

void print_table(std::ostream& out, const AllreduceSweepResult& r, const AllreduceSweepSettings& s) {
  out << "# tvie allreduce: c10d " << r.backend << ", " << r.world_size << " ranks, " << r.device << ", dtype "
      << r.dtype << ", sum; " << s.warmup << " warm-up + " << s.iters << " timed all-reduces per size\n"
      << "# time = mean of the timed all-reduces on rank 0 (after a barrier); algbw = size / time;\n"
      << "# busbw = algbw * 2(n-1)/n (nccl-tests); out-of-place = copy into a separate buffer + in-place all-reduce\n"
      << "#\n"
      << "#                                     out-of-place                       in-place\n"
      << "#       size         count    type     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  for (const auto& x : r.rows)
    out << line_fmt("%12lld  %12lld  %6s  %8.1f  %6.3f  %6.3f  %5s  %8.1f  %6.3f  %6.3f  %5s\n",
                    static_cast<long long>(x.bytes), static_cast<long long>(x.count), r.dtype.c_str(),
                    x.out_of_place_us, x.out_of_place_algbw_gbs, x.out_of_place_busbw_gbs,
                    wrong_cell(x.out_of_place_wrong).c_str(), x.in_place_us, x.in_place_algbw_gbs, x.in_place_busbw_gbs,
                    wrong_cell(x.in_place_wrong).c_str());
  out << "# Out of bounds values : "
      << (s.check ? cat(r.total_wrong, r.total_wrong == 0 ? " OK" : " FAILED") : "not checked")
      << "\n# Avg bus bandwidth    : " << line_fmt("%.4f", r.average_busbw_gbs) << " GB/s\n";
}

}  // namespace

Runner add_allreduce_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<AllreduceOptions>();
  auto* cmd = app.add_subcommand("allreduce",
                                 "All-reduce bandwidth sweep over c10d (as nccl-tests' all_reduce_perf); run it "
                                 "under tvie launch or torchrun");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& s = o->sweep;
  cmd->add_option("--device", o->device, "cpu (Gloo) or cuda (NCCL, cuda:LOCAL_RANK)")->capture_default_str();
  cmd->add_option("--backend", o->backend, "auto, gloo, nccl")->capture_default_str();
  cmd->add_option("-b,--min-bytes", s.min_bytes, "Smallest message")->capture_default_str();
  cmd->add_option("-e,--max-bytes", s.max_bytes, "Largest message")->capture_default_str();
  cmd->add_option("-f,--factor", s.factor, "Next size = size x factor")->capture_default_str();
  cmd->add_option("-n,--iters", s.iters, "Timed all-reduces per size")->capture_default_str();
  cmd->add_option("-w,--warmup", s.warmup, "Untimed all-reduces per size first")->capture_default_str();
  cmd->add_flag("--no-check", o->no_check, "Do not verify the sums");
  cmd->add_option("-d,--dtype", s.dtype, "fp32, fp64, int32")->capture_default_str();
  cmd->add_option("--timeout-s", o->timeout_s, "Rendezvous and collective timeout")->capture_default_str();
  cmd->add_option("--json", o->json_path, "Rank 0 writes the sweep as JSON here (atomically)");
  cmd->add_option("--csv", o->csv_path, "Rank 0 writes the sweep as CSV here (atomically)");

  return [o, argv]() {
    auto& s = o->sweep;
    s.check = !o->no_check;
    validate(s);
    DistSettings ds;
    ds.backend = parse_dist_backend(o->backend, "dist.backend");
    ds.timeout_s = o->timeout_s;
    DistEnv env = dist_env_from_environment();
    if (env.world_size == 1 && std::getenv("MASTER_PORT") == nullptr) env.master_port = 0;  // alone: any free port
    c10::Device device = resolve_device(o->device);
    if (device.is_cuda()) device = resolve_device(cat("cuda:", env.local_rank));
    validate(ds, device);
    if (env.rank == 0) {
      if (!o->json_path.empty()) check_output_path(o->json_path, "json");
      if (!o->csv_path.empty()) check_output_path(o->csv_path, "csv");
    }
    Communicator comm(env, ds, device);
    comm.check_same_configuration({{"allreduce.min_bytes", cat(s.min_bytes)},
                                   {"allreduce.max_bytes", cat(s.max_bytes)},
                                   {"allreduce.factor", cat(s.factor)},
                                   {"allreduce.iters", cat(s.iters)},
                                   {"allreduce.dtype", s.dtype},
                                   {"device", device.is_cuda() ? "cuda" : "cpu"}});
    const auto r = run_allreduce_sweep(comm, s, device);
    if (comm.rank() != 0) return r.total_wrong == 0 ? 0 : 1;
    print_table(std::cout, r, s);
    AllreduceReport report{make_run_context(device, argv), s, r};
    if (!o->json_path.empty()) write_file_atomically(o->json_path, to_json_string(report));
    if (!o->csv_path.empty()) write_file_atomically(o->csv_path, to_csv_string(report));
    return r.total_wrong == 0 ? 0 : 1;
  };
}

}  // namespace tvie::cli
