// Distributed data parallelism on PyTorch's own engine, c10d: ProcessGroupGloo for CPU tensors,
// ProcessGroupNCCL for CUDA tensors, rendezvous through a c10d TCPStore hosted by rank 0. No home-made
// transport: tvie only decides what to reduce, when, and measures it.
//
// Launch: every process reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT from its
// environment, as set by `tvie launch`, `torchrun --no-python`, or a SLURM / mpirun wrapper (README).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <tvie/stats.hpp>
#include <tvie/train.hpp>  // GradientHook: the seam DataParallel plugs into

namespace tvie {

// One bucket's all-reduce in one timed step. start_ms: after the end of the step's last backward (negative: it
// started while backward ran, with overlap). CPU: host times (launch to the collective's completion on Gloo's
// thread). CUDA: device times: the bucket is ready where its copy-in ends on the compute stream, and runs on
// NCCL's stream for its measured device time, after the bucket before it (NCCL's stream runs them in order).
struct BucketSpan {
  double start_ms = 0;
  double ms = 0;
};

// One rank's timed steps, as that rank measured them (its own clock; its first timed step starts at 0).
struct RankSteps {
  int64_t rank = 0;
  std::vector<double> step_start_ms;
  std::vector<std::vector<double>> step_phases_ms;  // per step, ms per TrainPhase (as TrainingResult's)
  std::vector<std::vector<BucketSpan>> buckets;     // per step, per bucket in bucket order
};

// Data-parallel training's communication, measured on rank 0 (TrainReport::distributed).
struct DistributedResult {
  std::string backend;  // gloo, nccl
  int64_t world_size = 1;
  double bucket_mb = 0;
  bool overlap = false;
  int64_t buckets = 0;
  int64_t bytes_per_step = 0;  // gradient bytes all-reduced per optimizer step (all buckets)
  Summary comm_ms;             // per timed step: Gloo: first bucket's start to last one's end; NCCL: device time
  Summary exposed_ms;          // per timed step: what gradient averaging adds after backward (wait, copies, scaling)
  double algbw_gbs = 0, busbw_gbs = 0;  // bytes_per_step / mean comm time; busbw = algbw x 2(n-1)/n
  double sweep_busbw_gbs = 0;         // a standalone all-reduce of bytes_per_step (as `tvie allreduce`), for comparison
  bool parameters_identical = false;  // after the run, every rank's parameters equal rank 0's, bit for bit
  int64_t backend_device_bytes = -1;  // CUDA: NCCL's own device memory (cudaMemGetInfo); -1 on the CPU
  std::vector<int64_t> bucket_bytes;  // each bucket's flat buffer, in bucket order (the last layers' first)
  std::vector<RankSteps> ranks;       // every rank's timed steps and bucket spans, gathered after the run
};

struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;  // which device of this node (cuda:LOCAL_RANK)
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
};

// A free TCP port for rank 0's store, held bound (not listening, SO_REUSEADDR) while the object lives: a port
// only looked up and closed can become another connection's ephemeral port before the store binds it; held, the
// kernel gives it to no other socket, and the store, which binds with SO_REUSEADDR too, still can. Child
// processes do not inherit it. Throws CommunicationError when no port can be had.
class ReservedPort {
 public:
  ReservedPort();
  ~ReservedPort();
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Reads the variables above; WORLD_SIZE unset means one process. Throws InvalidArgument("env.RANK", ...)
// naming the variable when one is malformed or inconsistent (RANK >= WORLD_SIZE, a port out of range ...).
DistEnv dist_env_from_environment();

enum class DistBackend { automatic, nccl, gloo };
std::string to_string(DistBackend backend);
DistBackend parse_dist_backend(const std::string& text, const std::string& field = "dist.backend");

struct DistSettings {
  DistBackend backend = DistBackend::automatic;  // automatic: nccl for CUDA devices, gloo for the CPU
  double bucket_mb = 25;                         // gradient bucket size, MiB (as DDP's bucket_cap_mb)
  bool overlap = false;                          // all-reduce each bucket as soon as backward has filled it
  int64_t timeout_s = 120;                       // rendezvous and every collective
};
void validate(const DistSettings& settings);
// Also checks that the backend can serve `device` in this build (gloo: CPU; nccl: CUDA).
void validate(const DistSettings& settings, const c10::Device& device);

// A started collective; wait() returns when its result is in place (CPU: on the host; CUDA: the current
// stream waits, then tvie synchronises the device so that timings are real).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
  // CUDA: the current stream waits for the collective (the host does not); CPU: as wait().
  virtual void wait_ordered() = 0;
  // `callback` runs (on a backend thread) when the collective completes; at once if it already has. On
  // NCCL this is when the collective was enqueued, not when it finished on the device: time it with
  // device_ms().
  virtual void on_done(std::function<void()> callback) = 0;
  // NCCL, once the collective has finished: its time on NCCL's stream (CUDA events); -1 elsewhere.
  virtual double device_ms() const = 0;
};

class Communicator {
 public:
  // Rendezvous (rank 0 hosts the store), then the backend for `device`. Throws CommunicationError when
  // the peers do not all arrive within settings.timeout_s.
  Communicator(const DistEnv& env, const DistSettings& settings, const c10::Device& device);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  const std::string& backend_name() const { return backend_name_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Every rank passes its own (name, value) settings; rank 0's are the reference. Throws
  // ConfigurationMismatch on every rank, naming the first setting that differs and both values.
  void check_same_configuration(const std::vector<std::pair<std::string, std::string>>& settings);

  // Sum over ranks, in place.
  void allreduce_sum(std::vector<torch::Tensor>& tensors);
  std::unique_ptr<PendingCollective> start_allreduce_sum(std::vector<torch::Tensor>& tensors);
  void broadcast(std::vector<torch::Tensor>& tensors, int64_t root);
  void barrier();
  // Every rank's `mine` (any length), in rank order, on every rank.
  std::vector<std::vector<double>> allgather(const std::vector<double>& mine);

  // CUDA: device memory the backend took outside the caching allocator (NCCL's communicator buffers),
  // measured with cudaMemGetInfo around the backend's creation and a first collective, minus what the
  // caching allocator reserved meanwhile; -1 on the CPU.
  int64_t backend_device_bytes() const { return backend_device_bytes_; }

  // Why a collective may have failed: the ranks on this host whose process is gone ("rank 1 (pid 4242)
  // is gone"), or that no local peer is gone.
  std::string describe_lost_ranks() const;

 private:
  // Starts a collective through `start_work(backend)`; its failure becomes a CommunicationError naming
  // `what`, this rank and the lost ranks.
  template <typename Start>
  std::unique_ptr<PendingCollective> start(const char* what, Start&& start_work);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  DistEnv env_;
  std::string backend_name_;
  std::chrono::milliseconds timeout_;
  int64_t backend_device_bytes_ = -1;
};

// Data-parallel gradient averaging, as PyTorch's DDP does it: gradients in buckets of about bucket_mb
// (parameters in reverse registration order, roughly the order backward produces them), each bucket one
// flat buffer all-reduced (sum) and then divided by the world size. Without overlap, every bucket is
// all-reduced after backward; with overlap, a bucket is all-reduced as soon as backward has accumulated
// every gradient in it (post-accumulate-grad hooks), while backward goes on. With gradient accumulation,
// only the last micro-batch's backward communicates.
class DataParallel final : public GradientHook {
 public:
  DataParallel(Communicator& comm, std::shared_ptr<torch::nn::Module> module, const DistSettings& settings,
               const c10::Device& device);
  ~DataParallel() override;

  void broadcast_initial_weights();  // parameters and buffers from rank 0
  void before_backward(bool last) override;
  void after_backward() override;
  void timing_starts() override { reset_stats(); }
  // Bytes of the flat buckets from their shapes: the gradient bytes all-reduced per step.
  int64_t buffer_bytes() const { return buffer_bytes_; }

  void reset_stats();
  // Rank 0's figures over the steps since reset_stats(), with a standalone all-reduce of the same size
  // for comparison (a collective: every rank must call it).
  DistributedResult summarize(int64_t timed_steps);
  // Every rank's parameters equal rank 0's, bit for bit (a collective).
  bool parameters_identical();
  // Every rank's timed steps (this rank passes its own, as measure_training recorded them) with its buckets'
  // spans in the last `timed_steps` steps, in rank order (a collective).
  std::vector<RankSteps> gather_rank_steps(const std::vector<double>& step_start_ms,
                                           const std::vector<std::vector<double>>& step_phases_ms, int64_t timed_steps);
  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket;
  void launch(Bucket& bucket);
  void on_gradient_ready(size_t bucket);

  Communicator& comm_;
  std::shared_ptr<torch::nn::Module> module_;
  DistSettings settings_;
  c10::Device device_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<torch::Tensor> hooked_;  // parameters carrying our post-accumulate hook
  int64_t buffer_bytes_ = 0;           // the flat buckets: also the gradient bytes all-reduced per step
  bool armed_ = false;                 // the last micro-batch's backward is running (overlap)
  std::vector<double> comm_ms_, exposed_ms_;
  std::vector<std::vector<BucketSpan>> spans_;  // per step since reset_stats()
};

// nccl-tests' definitions (all_reduce_perf): algbw = bytes / time; busbw = algbw * 2(n-1)/n, the
// bandwidth each link must carry in a ring all-reduce, comparable across rank counts.
double allreduce_bus_factor(int64_t world_size);

// `tvie allreduce`: a sweep in the manner of all_reduce_perf.
struct AllreduceSweepSettings {
  int64_t min_bytes = 8;
  int64_t max_bytes = 32 * 1024 * 1024;
  double factor = 2;           // next size = size * factor
  int64_t iters = 20;          // timed all-reduces per size (time = their mean)
  int64_t warmup = 5;          // untimed all-reduces per size first
  bool check = true;           // verify every result element against the closed-form sum
  std::string dtype = "fp32";  // fp32, fp64, int32
};
void validate(const AllreduceSweepSettings& settings);

struct AllreduceRow {
  int64_t bytes = 0, count = 0;
  // out-of-place: c10d's all-reduce is in place, so out-of-place is a copy of the input into a separate
  // output buffer followed by the in-place all-reduce of that buffer (the copy is timed with it).
  double out_of_place_us = 0, out_of_place_algbw_gbs = 0, out_of_place_busbw_gbs = 0;
  int64_t out_of_place_wrong = 0;  // -1: not checked
  double in_place_us = 0, in_place_algbw_gbs = 0, in_place_busbw_gbs = 0;
  int64_t in_place_wrong = 0;
};

struct AllreduceSweepResult {
  std::string backend, device, dtype;
  int64_t world_size = 1;
  std::vector<AllreduceRow> rows;
  double average_busbw_gbs = 0;  // mean busbw over every row, both placements (nccl-tests' closing line)
  int64_t total_wrong = 0;
};

AllreduceSweepResult measure_allreduce_sweep(Communicator& comm, const AllreduceSweepSettings& settings,
                                             const c10::Device& device);

}  // namespace tvie
