// Data-parallel gradient averaging over a Communicator. See dist.hpp (DataParallel) and docs/metrics.md.
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "core/compat.hpp"
#include "scenarios/harness.hpp"
#include <tvie/device.hpp>
#include <tvie/dist.hpp>
#include <tvie/errors.hpp>
#include <tvie/log.hpp>
#include <tvie/timing.hpp>

namespace tvie {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

struct DataParallel::Bucket {
  std::vector<torch::Tensor> params;  // in bucket order
  std::vector<int64_t> offsets;       // element offset of each parameter in `flat`
  torch::Tensor flat;                 // [elements] in the parameters' dtype, on the device: what is all-reduced
  std::atomic<size_t> ready{0};       // gradients accumulated in the current (last) backward
  bool launched = false;
  std::unique_ptr<PendingCollective> pending;
  Clock::time_point launched_at;
  std::mutex done_mutex;
  Clock::time_point done_at;
};

namespace {

// Runs after AccumulateGrad has written a parameter's .grad (overlap mode).
class ReadyHook final : public torch::autograd::PostAccumulateGradHook {
 public:
  explicit ReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  void operator()(const torch::autograd::Variable&) override { ready_(); }

 private:
  std::function<void()> ready_;
};

}  // namespace

DataParallel::DataParallel(Communicator& comm, std::shared_ptr<torch::nn::Module> module, const DistSettings& settings,
                           const c10::Device& device)
    : comm_(comm), module_(std::move(module)), settings_(settings), device_(device) {
  detail::require(settings_.bucket_mb > 0, "DataParallel: bucket_mb > 0 (validate(DistSettings) first)");
  const int64_t cap = static_cast<int64_t>(settings_.bucket_mb * 1024 * 1024);
  std::vector<torch::Tensor> params;
  for (const auto& p : module_->parameters())
    if (p.requires_grad()) params.push_back(p);
  // Reverse registration order: backward produces the last layers' gradients first.
  std::unique_ptr<Bucket> current;
  int64_t current_bytes = 0;
  auto close = [&] {
    if (!current) return;
    int64_t elements = 0;
    for (const auto& p : current->params) elements += p.numel();
    current->flat = torch::zeros({elements}, current->params.front().options().requires_grad(false));
    buffer_bytes_ += static_cast<int64_t>(current->flat.nbytes());
    buckets_.push_back(std::move(current));
    current_bytes = 0;
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& p = *it;
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    if (current && (current_bytes + bytes > cap || current->params.front().scalar_type() != p.scalar_type())) close();
    if (!current) current = std::make_unique<Bucket>();
    current->offsets.push_back(current_bytes / static_cast<int64_t>(p.element_size()));
    current->params.push_back(p);
    current_bytes += bytes;
  }
  close();
  if (settings_.overlap) {
    for (size_t b = 0; b < buckets_.size(); ++b)
      for (const auto& p : buckets_[b]->params) {
        torch::autograd::impl::set_post_acc_grad_hooks(
            p, std::make_unique<ReadyHook>([this, b] { on_gradient_ready(b); }));
        hooked_.push_back(p);
      }
  }
  log::debug(cat("data parallel: ", buckets_.size(), " buckets, ", buffer_bytes_, " bytes of gradients per step, ",
                 settings_.overlap ? "overlapped with backward" : "after backward"));
}

DataParallel::~DataParallel() {
  for (const auto& p : hooked_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void DataParallel::broadcast_initial_weights() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (const auto& p : module_->parameters()) tensors.push_back(p.detach());
  for (const auto& b : module_->buffers()) tensors.push_back(b.detach());
  for (auto& t : tensors) {
    std::vector<torch::Tensor> one{t};
    comm_.broadcast(one, 0);
  }
}

void DataParallel::before_backward(bool last) {
  armed_ = settings_.overlap && last;
  if (!armed_) return;
  for (auto& b : buckets_) {
    b->ready = 0;
    b->launched = false;
  }
}

void DataParallel::on_gradient_ready(size_t index) {
  if (!armed_) return;  // an earlier micro-batch: gradients are still accumulating locally
  Bucket& b = *buckets_[index];
  if (++b.ready == b.params.size()) launch(b);
}

void DataParallel::launch(Bucket& b) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const auto& p = b.params[i];
    auto slot = b.flat.narrow(0, b.offsets[i], p.numel());
    if (p.grad().defined())
      slot.copy_(p.grad().reshape({-1}));
    else
      slot.zero_();  // an unused parameter: this rank contributes zeros
  }
  b.launched = true;
  b.launched_at = Clock::now();
  std::vector<torch::Tensor> one{b.flat};
  b.pending = comm_.start_allreduce_sum(one);
  b.pending->on_done([&b] {
    std::lock_guard<std::mutex> lock(b.done_mutex);
    b.done_at = Clock::now();
  });
}

void DataParallel::after_backward() {
  const auto backward_end = Clock::now();
  // CUDA: exposed time on the device, from where backward's kernels end in stream order (this event) to
  // where the averaged gradients are back in place; the host reaches this point long before the device.
  std::unique_ptr<StepTimer> exposed;
  if (device_.is_cuda()) {
    exposed = make_step_timer(device_);
    exposed->start();
  }
  for (auto& b : buckets_)
    if (!b->launched) launch(*b);  // without overlap, all of them; with it, those backward did not fill
  for (auto& b : buckets_) b->pending->wait_ordered();
  torch::NoGradGuard no_grad;
  const double world = static_cast<double>(comm_.world_size());
  Clock::time_point first = buckets_.empty() ? backward_end : buckets_.front()->launched_at, last = first;
  for (auto& b : buckets_) {
    b->flat.div_(world);  // the sum over ranks becomes the mean gradient
    for (size_t i = 0; i < b->params.size(); ++i) {
      auto p = b->params[i];
      auto slot = b->flat.narrow(0, b->offsets[i], p.numel()).view(p.sizes());
      if (p.grad().defined())
        p.mutable_grad().copy_(slot);
      else
        p.mutable_grad() = slot.clone();
    }
    std::lock_guard<std::mutex> lock(b->done_mutex);
    first = std::min(first, b->launched_at);
    last = std::max(last, b->done_at);
    b->launched = false;
    b->ready = 0;
  }
  armed_ = false;
  if (exposed) {
    // NCCL's completion callbacks fire at enqueue: the communication time is the buckets' time on NCCL's
    // stream (CUDA events), which runs them one after another.
    exposed->stop();
    exposed_ms_.push_back(exposed->collect_ms().front());  // waits for the device
    double device_ms = 0;
    for (auto& b : buckets_) device_ms += std::max(0.0, b->pending->device_ms());
    comm_ms_.push_back(device_ms);
    return;
  }
  comm_ms_.push_back(ms_between(first, last));
  exposed_ms_.push_back(ms_between(backward_end, Clock::now()));
}

void DataParallel::reset_stats() {
  comm_ms_.clear();
  exposed_ms_.clear();
}

DistributedResult DataParallel::summarize(int64_t timed_steps) {
  DistributedResult r;
  r.backend = comm_.backend_name();
  r.world_size = comm_.world_size();
  r.bucket_mb = settings_.bucket_mb;
  r.overlap = settings_.overlap;
  r.buckets = bucket_count();
  r.bytes_per_step = buffer_bytes_;
  r.backend_device_bytes = comm_.backend_device_bytes();
  // The last `timed_steps` are the timed ones (warm-up steps came first).
  const size_t n = std::min(comm_ms_.size(), static_cast<size_t>(std::max<int64_t>(0, timed_steps)));
  r.comm_ms = tvie::summarize(std::vector<double>(comm_ms_.end() - static_cast<std::ptrdiff_t>(n), comm_ms_.end()));
  r.exposed_ms =
      tvie::summarize(std::vector<double>(exposed_ms_.end() - static_cast<std::ptrdiff_t>(n), exposed_ms_.end()));
  if (r.comm_ms.mean > 0) {
    r.algbw_gbs = static_cast<double>(buffer_bytes_) / (r.comm_ms.mean * 1e-3) / 1e9;
    r.busbw_gbs = r.algbw_gbs * allreduce_bus_factor(r.world_size);
  }
  // The same bytes in one standalone all-reduce, as `tvie allreduce` would measure them.
  if (buffer_bytes_ > 0 && !buckets_.empty()) {
    AllreduceSweepSettings s;
    s.min_bytes = s.max_bytes = buffer_bytes_;
    s.iters = 5;
    s.warmup = 1;
    s.check = false;
    s.dtype = buckets_.front()->flat.scalar_type() == torch::kFloat64 ? "fp64" : "fp32";
    const auto sweep = measure_allreduce_sweep(comm_, s, device_);
    if (!sweep.rows.empty()) r.sweep_busbw_gbs = sweep.rows.front().in_place_busbw_gbs;
  }
  return r;
}

bool DataParallel::parameters_identical() {
  // Rank 0's parameters are broadcast and compared bit for bit on every rank; the verdicts are summed.
  torch::NoGradGuard no_grad;
  int64_t differing = 0;
  for (const auto& p : module_->parameters()) {
    std::vector<torch::Tensor> mine{p.detach().clone()};
    comm_.broadcast(mine, 0);
    differing += torch::equal(mine[0], p.detach()) ? 0 : 1;
  }
  std::vector<torch::Tensor> total{torch::full({1}, static_cast<double>(differing), torch::TensorOptions(device_))};
  comm_.allreduce_sum(total);
  return total[0].item<double>() == 0;
}

}  // namespace tvie
