// Data-parallel training with the library: every rank runs this program, tvie's DataParallel averages the
// gradients over c10d (Gloo on the CPU, NCCL on CUDA) in buckets, and rank 0 reports what communication cost
// (bytes per step, all-reduce time, how much of it backward did not hide).
//
//   build/bin/tvie launch --nproc 2 -- build/bin/data_parallel [--device cpu|cuda|auto]
//   (or torchrun / SLURM: the job comes from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)
#include <cstring>
#include <iostream>
#include <string>

#include <tvie/tvie.hpp>

int main(int argc, char** argv) {
  std::string device = "auto";
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  try {
    tvie::install_cpu_memory_counter();
    const auto workload = tvie::make_zoo_workload("gpt", "tiny");
    tvie::TrainSettings train;
    train.batch_size = 8;  // per rank
    train.steps = 10;
    train.warmup_steps = 2;
    tvie::DistSettings dist;
    dist.bucket_mb = 1;
    dist.overlap = true;  // all-reduce each bucket as soon as backward has filled it
    const auto report = tvie::run_train_data_parallel(*workload, train, dist, {device});
    if (report.rank == 0) tvie::ConsoleReporter(std::cout).report(report);
  } catch (const std::exception& e) {
    std::cerr << "data_parallel: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
