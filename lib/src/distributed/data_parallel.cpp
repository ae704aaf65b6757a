// Data-parallel gradient averaging over a Communicator. See dist.hpp (DataParallel) and docs/metrics.md.
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include <tvie/config.hpp>
#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

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
#if TVIE_WITH_CUDA
  std::shared_ptr<at::cuda::CUDAEvent> ready_event;  // CUDA: where the copy-in ends on the compute stream
#endif
};

namespace {

#if TVIE_WITH_CUDA
std::shared_ptr<at::cuda::CUDAEvent> record_event(const c10::Device& device) {
  auto event = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);  // timing enabled
  event->record(at::cuda::getCurrentCUDAStream(device.index()));
  return event;
}
#endif

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
#if TVIE_WITH_CUDA
  if (device_.is_cuda()) b.ready_event = record_event(device_);
#endif
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
#if TVIE_WITH_CUDA
  std::shared_ptr<at::cuda::CUDAEvent> backward_end_event;
#endif
  if (device_.is_cuda()) {
    exposed = make_step_timer(device_);
    exposed->start();
#if TVIE_WITH_CUDA
    backward_end_event = record_event(device_);
#endif
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
#if TVIE_WITH_CUDA
    // Each bucket where it was ready on the compute stream, then on NCCL's stream after the one before it.
    std::vector<std::pair<double, size_t>> ready;  // (ms after backward's end, bucket)
    for (size_t i = 0; i < buckets_.size(); ++i)
      ready.emplace_back(-static_cast<double>(buckets_[i]->ready_event->elapsed_time(*backward_end_event)), i);
    std::sort(ready.begin(), ready.end());
    std::vector<BucketSpan> spans(buckets_.size());
    double previous_end = -1e300;
    for (const auto& [at, i] : ready) {
      spans[i].start_ms = std::max(at, previous_end);
      spans[i].ms = std::max(0.0, buckets_[i]->pending->device_ms());
      previous_end = spans[i].start_ms + spans[i].ms;
    }
    spans_.push_back(std::move(spans));
#endif
    return;
  }
  std::vector<BucketSpan> spans;
  for (auto& b : buckets_)
    spans.push_back({ms_between(backward_end, b->launched_at), ms_between(b->launched_at, b->done_at)});
  spans_.push_back(std::move(spans));
  comm_ms_.push_back(ms_between(first, last));
  exposed_ms_.push_back(ms_between(backward_end, Clock::now()));
}

void DataParallel::reset_stats() {
  comm_ms_.clear();
  exposed_ms_.clear();
  spans_.clear();
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
  for (const auto& b : buckets_) r.bucket_bytes.push_back(static_cast<int64_t>(b->flat.nbytes()));
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

std::vector<RankSteps> DataParallel::gather_rank_steps(const std::vector<double>& step_start_ms,
                                                       const std::vector<std::vector<double>>& step_phases_ms,
                                                       int64_t timed_steps) {
  // Flattened as [steps, phases, buckets, then per step: start, phases..., (bucket start, ms)...]: every rank
  // runs the same steps with the same buckets (checked at start), but the layout says its own sizes anyway.
  const size_t steps = std::min({step_start_ms.size(), step_phases_ms.size(),
                                 static_cast<size_t>(std::max<int64_t>(0, timed_steps)), spans_.size()});
  const size_t phases = steps == 0 ? 0 : step_phases_ms.front().size();
  const size_t first_span = spans_.size() - steps;  // warm-up steps came first
  std::vector<double> mine{static_cast<double>(steps), static_cast<double>(phases),
                           static_cast<double>(buckets_.size())};
  for (size_t i = 0; i < steps; ++i) {
    mine.push_back(step_start_ms[i]);
    for (size_t p = 0; p < phases; ++p) mine.push_back(p < step_phases_ms[i].size() ? step_phases_ms[i][p] : 0.0);
    const auto& spans = spans_[first_span + i];
    for (size_t b = 0; b < buckets_.size(); ++b) {
      mine.push_back(b < spans.size() ? spans[b].start_ms : 0.0);
      mine.push_back(b < spans.size() ? spans[b].ms : 0.0);
    }
  }
  std::vector<RankSteps> out;
  const auto all = comm_.allgather(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    const auto& v = all[r];
    RankSteps s;
    s.rank = static_cast<int64_t>(r);
    if (v.size() < 3) continue;
    const auto n = static_cast<size_t>(v[0]), np = static_cast<size_t>(v[1]), nb = static_cast<size_t>(v[2]);
    if (v.size() != 3 + n * (1 + np + 2 * nb)) continue;  // cannot happen with the layout above
    size_t at = 3;
    for (size_t i = 0; i < n; ++i) {
      s.step_start_ms.push_back(v[at++]);
      s.step_phases_ms.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(at),
                                    v.begin() + static_cast<std::ptrdiff_t>(at + np));
      at += np;
      std::vector<BucketSpan> spans;
      for (size_t b = 0; b < nb; ++b, at += 2) spans.push_back({v[at], v[at + 1]});
      s.buckets.push_back(std::move(spans));
    }
    out.push_back(std::move(s));
  }
  return out;
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
