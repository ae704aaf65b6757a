// Distributed: rendezvous, c10d backends, configuration check, the all-reduce sweep. See dist.hpp.
#include <tvie/config.hpp>
// ProcessGroupGloo.hpp / ProcessGroupNCCL.hpp are empty without these (LibTorch's CMake flags usually set them).
#if TVIE_WITH_GLOO && !defined(USE_C10D_GLOO)
#define USE_C10D_GLOO
#endif
#if TVIE_WITH_NCCL && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif

#include <tvie/dist.hpp>

#include "core/enum_names.hpp"
#include <tvie/timing.hpp>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TVIE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if TVIE_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#if TVIE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/compat.hpp"
#include "scenarios/harness.hpp"
#include "core/text.hpp"
#include <tvie/device.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

namespace tvie {
namespace {

using detail::first_line;

int64_t env_int(const char* name, int64_t fallback, int64_t min, int64_t max, const std::string& accepted) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const std::string s(v);
  if (s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    throw InvalidArgument(cat("env.", name), s, accepted);
  const int64_t x = std::stoll(s);
  if (x < min || x > max) throw InvalidArgument(cat("env.", name), s, accepted);
  return x;
}

// Device memory in use (total - free) and the caching allocator's reserved bytes, for one CUDA device.
struct DeviceUse {
  int64_t used = 0, reserved = 0;
};
DeviceUse device_use(const c10::Device& device) {
  DeviceUse u;
#if TVIE_WITH_CUDA
  if (!device.is_cuda()) return u;
  compat::init_cuda();  // the allocator's statistics exist only once CUDA is initialised
  c10::cuda::CUDAGuard guard(device.index());
  synchronize(device);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    u.used = static_cast<int64_t>(total_bytes) - static_cast<int64_t>(free_bytes);
  u.reserved =
      c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).reserved_bytes[compat::kAggregateStat].current;
#else
  (void)device;
#endif
  return u;
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0; }

// A process that no longer runs (or is a zombie waiting to be reaped).
bool process_gone(int64_t pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat(cat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

std::string encode(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string out;
  for (const auto& [k, v] : settings) out += k + "=" + v + "\n";
  return out;
}

std::vector<std::pair<std::string, std::string>> decode(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace

DistEnv dist_env_from_environment() {
  DistEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 20, "an integer >= 1");
  const bool has_rank = std::getenv("RANK") != nullptr;
  if (e.world_size > 1 && !has_rank)
    throw InvalidArgument("env.RANK", "",
                          cat("an integer in 0..", e.world_size - 1, " (WORLD_SIZE is ", e.world_size,
                              "; tvie launch and torchrun set both)"));
  e.rank = env_int("RANK", 0, 0, e.world_size - 1, cat("an integer in 0..", e.world_size - 1, " (WORLD_SIZE - 1)"));
  e.local_rank = env_int("LOCAL_RANK", 0, 0, 1 << 16, "an integer >= 0");
  if (const char* a = std::getenv("MASTER_ADDR"); a != nullptr && *a != '\0') e.master_addr = a;
  e.master_port = env_int("MASTER_PORT", 29500, 1, 65535, "a TCP port in 1..65535");
  return e;
}

namespace {
constexpr detail::EnumTable<DistBackend, 3> kBackends{
    {{DistBackend::automatic, "auto"}, {DistBackend::nccl, "nccl"}, {DistBackend::gloo, "gloo"}}};
}  // namespace

std::string to_string(DistBackend backend) { return detail::name_of(kBackends, backend); }

DistBackend parse_dist_backend(const std::string& text, const std::string& field) {
  return detail::parse(kBackends, text, field, "auto (nccl for CUDA, gloo for CPU), nccl, gloo");
}

void validate(const DistSettings& s) {
  if (!(s.bucket_mb > 0) || s.bucket_mb > 4096)
    throw InvalidArgument("dist.bucket_mb", cat(s.bucket_mb), "a size in MiB, > 0 and <= 4096");
  if (s.timeout_s < 1) throw InvalidArgument("dist.timeout_s", cat(s.timeout_s), "an integer >= 1 (seconds)");
}

void validate(const DistSettings& s, const c10::Device& device) {
  validate(s);
  const bool cuda = device.is_cuda();
  if (s.backend == DistBackend::nccl && !cuda)
    throw InvalidArgument("dist.backend", "nccl",
                          cat("gloo or auto on ", device.str(), " (NCCL reduces CUDA tensors)"));
  if (s.backend == DistBackend::gloo && cuda)
    throw InvalidArgument("dist.backend", "gloo", "nccl or auto on CUDA (tvie runs Gloo on CPU tensors only)");
  if (!cuda && !TVIE_WITH_GLOO)
    throw InvalidArgument("dist.backend", to_string(s.backend),
                          "none in this build: it was configured without gloo headers (run scripts/setup.sh, or "
                          "pass -DTVIE_GLOO_INCLUDE_DIR)");
  if (cuda && !TVIE_WITH_NCCL)
    throw InvalidArgument("dist.backend", to_string(s.backend), "none in this build: nccl.h was not found");
}

double allreduce_bus_factor(int64_t n) { return n > 0 ? 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) : 0; }

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  c10::Device device{c10::kCPU};
  std::vector<std::pair<int64_t, int64_t>> local_peers;  // (rank, pid) of the other ranks on this host
};

namespace {

class Pending final : public PendingCollective {
 public:
  Pending(c10::intrusive_ptr<c10d::Work> work, const Communicator& comm, std::string what, c10::Device device)
      : work_(std::move(work)), comm_(comm), what_(std::move(what)), device_(device) {}
  void wait() override {
    wait_ordered();
    if (device_.is_cuda()) synchronize(device_);  // NCCL's wait() only orders the stream
  }
  void wait_ordered() override {
    try {
      // NCCL: wait() without a timeout makes the current stream wait for the collective and returns; with a
      // timeout it would poll the work on the host with 1 ms sleeps (a 1 ms floor on every all-reduce). The
      // process group's own timeout and watchdog still abort a collective that hangs.
      if (device_.is_cuda())
        work_->wait();
      else
        work_->wait(comm_.timeout());
    } catch (const std::exception& e) {
      throw CommunicationError(
          cat(what_, " failed on rank ", comm_.rank(), ": ", first_line(e.what()), "; ", comm_.describe_lost_ranks()));
    }
  }
  double device_ms() const override {
    if (!device_.is_cuda()) return -1;
    try {
      return static_cast<double>(work_->getDuration());  // the collective's start and end events on NCCL's stream
    } catch (const std::exception&) {
      return -1;  // timing not enabled, or not finished
    }
  }
  void on_done(std::function<void()> callback) override {
    work_->getFuture()->addCallback([callback = std::move(callback)](c10::ivalue::Future&) { callback(); });
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  const Communicator& comm_;
  std::string what_;
  c10::Device device_;
};

}  // namespace

ReservedPort::ReservedPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw CommunicationError(cat("no free TCP port: socket(): ", std::strerror(errno)));
  const int on = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);  // the store listens on every address
  addr.sin_port = 0;                         // the kernel's choice
  socklen_t len = sizeof addr;
  if (::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    ::close(fd_);
    throw CommunicationError(cat("no free TCP port: ", std::strerror(error)));
  }
  port_ = ntohs(addr.sin_port);
}

ReservedPort::~ReservedPort() {
  if (fd_ >= 0) ::close(fd_);
}

Communicator::Communicator(const DistEnv& env, const DistSettings& settings, const c10::Device& device)
    : impl_(std::make_unique<Impl>()), env_(env), timeout_(std::chrono::seconds(settings.timeout_s)) {
  // Preconditions (validate(DistSettings, device) once at the boundary: the runners of tvie/run.hpp do).
  detail::require(settings.timeout_s >= 1, "Communicator: timeout_s >= 1 (validate(DistSettings) first)");
  detail::require(!(settings.backend == DistBackend::nccl && !device.is_cuda()) &&
                      !(settings.backend == DistBackend::gloo && device.is_cuda()),
                  "Communicator: a backend that serves the device (validate(DistSettings, device) first)");
  impl_->device = device;
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(env.master_port);
  o.isServer = env.rank == 0;
  o.numWorkers = static_cast<std::size_t>(env.world_size);
  o.waitWorkers = true;
  o.timeout = timeout_;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    // Who runs where: lets a rank name a local peer that died.
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    impl_->store->set(cat("tvie/proc/", env.rank), bytes_of(cat(host, " ", ::getpid())));
    for (int64_t r = 0; r < env.world_size; ++r) {
      if (r == env.rank) continue;
      std::stringstream in(string_of(impl_->store->get(cat("tvie/proc/", r))));
      std::string peer_host;
      int64_t pid = 0;
      in >> peer_host >> pid;
      if (peer_host == host) impl_->local_peers.emplace_back(r, pid);
    }
  } catch (const std::exception& e) {
    throw CommunicationError(cat("rendezvous of rank ", env.rank, " of ", env.world_size, " at ", env.master_addr, ":",
                                 env.master_port, " failed within ", settings.timeout_s, " s: ", first_line(e.what())));
  }
  const DeviceUse before = device_use(device);
  try {
    if (device.is_cuda()) {
#if TVIE_WITH_NCCL
      c10::cuda::set_device(device.index());  // NCCL's communicator and barrier use the current device
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout_;
      impl_->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, static_cast<int>(env.rank),
                                                                   static_cast<int>(env.world_size), opts);
      // CUDA events around every collective on NCCL's stream: its completion future fires at enqueue, so
      // only device events time it (PendingCollective::device_ms).
      impl_->backend->enableCollectivesTiming();
      backend_name_ = "nccl";
#endif
    } else {
#if TVIE_WITH_GLOO
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout_);
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0')
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (is_loopback(env.master_addr))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, static_cast<int>(env.rank),
                                                                   static_cast<int>(env.world_size), opts);
      backend_name_ = "gloo";
#endif
    }
  } catch (const std::exception& e) {
    throw CommunicationError(
        cat("backend set-up on rank ", env.rank, " failed: ", first_line(e.what()), "; ", describe_lost_ranks()));
  }
  if (!impl_->backend) throw CommunicationError("no c10d backend for " + device.str() + " in this build");
  if (device.is_cuda()) {
    // NCCL creates its communicator (and its buffers) at the first collective.
    std::vector<torch::Tensor> one{torch::zeros({1}, torch::TensorOptions(device))};
    allreduce_sum(one);
    one.clear();
    const DeviceUse after = device_use(device);
    backend_device_bytes_ = (after.used - before.used) - (after.reserved - before.reserved);
  }
  log::debug(cat("rank ", env.rank, " of ", env.world_size, ": ", backend_name_, " via ", env.master_addr, ":",
                 env.master_port));
}

Communicator::~Communicator() {
  if (impl_ && impl_->backend) {
    try {
      impl_->backend->shutdown();
    } catch (...) {
      // Shutting down after a failed peer may throw again; nothing more can be done here.
    }
  }
}

void Communicator::check_same_configuration(const std::vector<std::pair<std::string, std::string>>& settings) {
  auto& store = *impl_->store;
  store.set(cat("tvie/config/", env_.rank), bytes_of(encode(settings)));
  if (env_.rank == 0) {
    std::string verdict;
    for (int64_t r = 1; r < env_.world_size && verdict.empty(); ++r) {
      const auto theirs = decode(string_of(store.get(cat("tvie/config/", r))));
      std::map<std::string, std::string> other(theirs.begin(), theirs.end());
      for (const auto& [k, v] : settings) {
        const auto it = other.find(k);
        const std::string w = it == other.end() ? "(unset)" : it->second;
        if (w != v) {
          verdict =
              cat("ranks were started with different settings: ", k, " is ", v, " on rank 0 but ", w, " on rank ", r);
          break;
        }
      }
    }
    store.set("tvie/config/verdict", bytes_of(verdict.empty() ? "ok" : verdict));
    if (!verdict.empty()) throw ConfigurationMismatch(verdict);
  } else {
    const std::string verdict = string_of(store.get("tvie/config/verdict"));
    if (verdict != "ok") throw ConfigurationMismatch(verdict);
  }
}

template <typename Start>
std::unique_ptr<PendingCollective> Communicator::start(const char* what, Start&& start_work) {
  try {
    return std::make_unique<Pending>(start_work(*impl_->backend), *this, what, impl_->device);
  } catch (const std::exception& e) {
    throw CommunicationError(
        cat(what, " failed on rank ", env_.rank, ": ", first_line(e.what()), "; ", describe_lost_ranks()));
  }
}

std::unique_ptr<PendingCollective> Communicator::start_allreduce_sum(std::vector<torch::Tensor>& tensors) {
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = timeout_;
  return start("all-reduce", [&](c10d::Backend& b) { return b.allreduce(tensors, opts); });
}

void Communicator::allreduce_sum(std::vector<torch::Tensor>& tensors) { start_allreduce_sum(tensors)->wait(); }

void Communicator::broadcast(std::vector<torch::Tensor>& tensors, int64_t root) {
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  opts.timeout = timeout_;
  start("broadcast", [&](c10d::Backend& b) { return b.broadcast(tensors, opts); })->wait();
}

std::vector<std::vector<double>> Communicator::allgather(const std::vector<double>& mine) {
  // Two sums: the lengths (each rank fills its own slot), then the values in one buffer where each rank
  // fills its own range and the others contribute zeros (x + 0 is exact in fp64).
  const auto options = torch::TensorOptions(impl_->device).dtype(torch::kFloat64);
  std::vector<torch::Tensor> lengths{torch::zeros({env_.world_size}, options)};
  lengths[0][env_.rank] = static_cast<double>(mine.size());
  allreduce_sum(lengths);
  const auto sizes = lengths[0].to(torch::kCPU);
  std::vector<int64_t> offset(static_cast<size_t>(env_.world_size) + 1, 0);
  for (int64_t r = 0; r < env_.world_size; ++r)
    offset[static_cast<size_t>(r) + 1] = offset[static_cast<size_t>(r)] + static_cast<int64_t>(sizes[r].item<double>());
  std::vector<torch::Tensor> values{torch::zeros({std::max<int64_t>(1, offset.back())}, options)};
  if (!mine.empty())
    values[0]
        .narrow(0, offset[static_cast<size_t>(env_.rank)], static_cast<int64_t>(mine.size()))
        .copy_(torch::tensor(mine, torch::kFloat64));
  allreduce_sum(values);
  const auto all = values[0].to(torch::kCPU).contiguous();
  const double* data = all.data_ptr<double>();
  std::vector<std::vector<double>> out;
  for (int64_t r = 0; r < env_.world_size; ++r)
    out.emplace_back(data + offset[static_cast<size_t>(r)], data + offset[static_cast<size_t>(r) + 1]);
  return out;
}

void Communicator::barrier() {
  c10d::BarrierOptions opts;
  opts.timeout = timeout_;
  start("barrier", [&](c10d::Backend& b) { return b.barrier(opts); })->wait();
}

std::string Communicator::describe_lost_ranks() const {
  // A dying peer's sockets close before its process has finished exiting: look again for up to a second.
  std::string gone;
  for (int attempt = 0; attempt < 20 && gone.empty(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& [r, pid] : impl_->local_peers)
      if (process_gone(pid)) gone += cat(gone.empty() ? "" : ", ", "rank ", r, " (pid ", pid, ")");
  }
  if (!gone.empty()) return cat("lost ", gone, ": its process is gone");
  return impl_->local_peers.size() + 1 == static_cast<size_t>(env_.world_size)
             ? "every rank's process still runs (a peer may hang or be unreachable)"
             : "no local peer is gone; a rank on another host may have failed";
}

void validate(const AllreduceSweepSettings& s) {
  if (s.min_bytes < 1) throw InvalidArgument("allreduce.min_bytes", cat(s.min_bytes), "an integer >= 1");
  if (s.max_bytes < s.min_bytes)
    throw InvalidArgument("allreduce.max_bytes", cat(s.max_bytes), cat("an integer >= min_bytes (", s.min_bytes, ")"));
  if (!(s.factor > 1 && std::isfinite(s.factor)))
    throw InvalidArgument("allreduce.factor", cat(s.factor), "a finite number > 1");
  if (s.iters < 1) throw InvalidArgument("allreduce.iters", cat(s.iters), "an integer >= 1");
  if (s.warmup < 0) throw InvalidArgument("allreduce.warmup", cat(s.warmup), "an integer >= 0");
  if (s.dtype != "fp32" && s.dtype != "fp64" && s.dtype != "int32")
    throw InvalidArgument("allreduce.dtype", s.dtype, "fp32, fp64, int32");
}

AllreduceSweepResult measure_allreduce_sweep(Communicator& comm, const AllreduceSweepSettings& s,
                                             const c10::Device& device) {
  detail::require(s.min_bytes >= 1 && s.max_bytes >= s.min_bytes && s.factor > 1 && s.iters >= 1,
                  "measure_allreduce_sweep: validated settings (validate(AllreduceSweepSettings) first)");
  const auto dtype = s.dtype == "fp64" ? torch::kFloat64 : s.dtype == "int32" ? torch::kInt32 : torch::kFloat32;
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  // The largest size holds at least three buffers of its bytes (the input, the output and the expected sum).
  const int64_t largest = std::max<int64_t>(1, s.max_bytes / elem) * elem;
  if (largest <= std::numeric_limits<int64_t>::max() / 3)
    detail::refuse_beyond_free_memory(3 * largest, device, cat("the all-reduce sweep up to ", largest, " bytes"),
                                      "lower -e/--max-bytes");
  const int64_t n = comm.world_size();
  AllreduceSweepResult r;
  r.backend = comm.backend_name();
  r.device = describe_device(device);
  r.dtype = s.dtype;
  r.world_size = n;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  using clock = std::chrono::steady_clock;
  double busbw_sum = 0;
  int64_t busbw_count = 0;
  // Sizes grow by the factor (at least a byte); each row is a whole number of elements, and a size that rounds to
  // the element count of the row before it (-b 3 with 4-byte elements) makes no second row.
  const auto grown = [&](int64_t bytes) {
    return std::max(static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * s.factor)), bytes + 1);
  };
  for (int64_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes = grown(bytes)) {
    const int64_t count = std::max<int64_t>(1, bytes / elem);
    if (!r.rows.empty() && r.rows.back().count == count) continue;
    AllreduceRow row;
    row.count = count;
    row.bytes = count * elem;
    // Rank r contributes (r + 1) + (i mod 7) at element i: the sum is n(n+1)/2 + n (i mod 7), exact in
    // every dtype offered.
    const auto pattern = torch::arange(count, torch::TensorOptions().dtype(torch::kInt64)).remainder(7);
    const auto input = (pattern + (comm.rank() + 1)).to(opts);
    const auto expected = (pattern * n + n * (n + 1) / 2).to(opts);
    auto output = torch::empty_like(input);
    auto wrong = [&](const torch::Tensor& t) { return s.check ? t.ne(expected).sum().item<int64_t>() : -1; };
    auto time_us = [&](bool in_place) {
      std::vector<torch::Tensor> buf{output};  // in place: the buffer is reduced again and again
      // CPU (Gloo): each all-reduce waited for on the host. CUDA (NCCL): the current stream waits for each
      // one (no host round trip between them), timed by CUDA events on that stream, as nccl-tests does.
      auto once = [&] {
        if (!in_place) output.copy_(input);
        auto pending = comm.start_allreduce_sum(buf);
        pending->wait_ordered();
      };
      if (in_place) output.copy_(input);
      for (int64_t i = 0; i < s.warmup; ++i) once();
      synchronize(device);
      comm.barrier();
      if (device.is_cuda()) {
        auto timer = make_step_timer(device);
        timer->start();
        for (int64_t i = 0; i < s.iters; ++i) once();
        timer->stop();
        return timer->collect_ms().front() * 1e3 / static_cast<double>(s.iters);
      }
      const auto t0 = clock::now();
      for (int64_t i = 0; i < s.iters; ++i) once();
      const auto t1 = clock::now();
      return std::chrono::duration<double, std::micro>(t1 - t0).count() / static_cast<double>(s.iters);
    };
    auto check = [&] {  // one more all-reduce from fresh data, compared element by element
      output.copy_(input);
      std::vector<torch::Tensor> buf{output};
      comm.allreduce_sum(buf);
      return wrong(output);
    };
    const double bytes_d = static_cast<double>(row.bytes);
    row.out_of_place_us = time_us(false);
    row.out_of_place_wrong = check();
    row.in_place_us = time_us(true);
    row.in_place_wrong = check();
    row.out_of_place_algbw_gbs = bytes_d / (row.out_of_place_us * 1e-6) / 1e9;
    row.in_place_algbw_gbs = bytes_d / (row.in_place_us * 1e-6) / 1e9;
    row.out_of_place_busbw_gbs = row.out_of_place_algbw_gbs * allreduce_bus_factor(n);
    row.in_place_busbw_gbs = row.in_place_algbw_gbs * allreduce_bus_factor(n);
    busbw_sum += row.out_of_place_busbw_gbs + row.in_place_busbw_gbs;
    busbw_count += 2;
    r.total_wrong += std::max<int64_t>(0, row.out_of_place_wrong) + std::max<int64_t>(0, row.in_place_wrong);
    r.rows.push_back(row);
  }
  r.average_busbw_gbs = busbw_count > 0 ? busbw_sum / static_cast<double>(busbw_count) : 0;
  return r;
}

}  // namespace tvie
