// CUDA memory probe over the caching allocator's statistics. Compiled wherever LibTorch has CUDA;
// runs only where a GPU exists.
#include <tvie/memory.hpp>

#include <tvie/log.hpp>

#include "core/compat.hpp"
#include "measure/allocation_events.hpp"

#if TVIE_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <atomic>
#include <mutex>

namespace tvie {
namespace {

namespace cca = c10::cuda::CUDACachingAllocator;

// cuBLAS allocates a workspace per handle and stream through the caching allocator at a thread's first
// matmul, and backward runs on autograd's own device thread with its own handle: on an H200 the first run
// of a process showed 65 MiB more peak than the same run later (two 32 MiB workspaces and cuBLASLt's 1 MiB).
// Small matmuls with bias (cuBLASLt's path) in fp32 and bf16, and their backward, create them before a run's
// baseline, so that they stay out of every run's figures, first run or not.
void create_library_workspaces(c10::DeviceIndex index) {
  c10::InferenceMode not_inference(false);  // also when the caller runs under InferenceMode
  torch::AutoGradMode grad(true);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto options = torch::TensorOptions().device(c10::Device(c10::kCUDA, index)).dtype(dtype);
    const auto a = torch::ones({32, 32}, options.requires_grad(true));
    const auto bias = torch::ones({32}, options.requires_grad(true));
    torch::addmm(bias, a, a).sum().backward();
  }
}

class CudaProbe final : public MemoryProbe {
 public:
  // A probe starts a run: CUDA initialised (the statistics exist only then), cuBLAS's workspaces created
  // (create_library_workspaces), the cached but unused segments of earlier runs returned to the driver, the
  // peaks reset, and the bytes of the tensors still alive from earlier runs (as the allocator holds them,
  // rounded to blocks) taken as the reserved baseline. Not the
  // reserved bytes themselves: a segment that holds one live tensor cannot be returned, and its free rest
  // is reused by the next run, which then reserves nothing new (seen on an H200: an inference after a
  // training run in the same process, 1 GiB of tensors, 0 B of new segments). So a run's reserved figure
  // counts what it finds free in such segments, and is never below its allocated figure.
  explicit CudaProbe(c10::DeviceIndex index) : index_(index) {
    compat::init_cuda();
    c10::cuda::CUDAGuard guard(index_);
    create_library_workspaces(index_);
    c10::cuda::device_synchronize();
    cca::emptyCache();
    cca::resetPeakStats(index_);
    const auto s = stats();
    reserved_baseline_ = s.allocated_bytes[compat::kAggregateStat].current;
    log::debug(cat("CUDA memory at the run's start (cache emptied): reserved ",
                   s.reserved_bytes[compat::kAggregateStat].current, " B, allocated ", reserved_baseline_,
                   " B, free in segments that live tensors keep ",
                   s.reserved_bytes[compat::kAggregateStat].current - reserved_baseline_, " B"));
  }
  compat::CudaDeviceStats stats() const { return cca::getDeviceStats(index_); }
  // Requested bytes: what the tensors asked for, before the allocator rounds blocks up (to 512 bytes, and
  // large blocks not split for remainders up to 1 MiB), so that categories compare with tensor sizes.
  int64_t allocated_bytes() override { return stats().requested_bytes[compat::kAggregateStat].current; }
  int64_t peak_allocated_bytes() override { return stats().requested_bytes[compat::kAggregateStat].peak; }
  int64_t reserved_bytes() override {
    return stats().reserved_bytes[compat::kAggregateStat].current - reserved_baseline_;
  }
  int64_t peak_reserved_bytes() override {
    return stats().reserved_bytes[compat::kAggregateStat].peak - reserved_baseline_;
  }
  void reset_peak() override { cca::resetPeakStats(index_); }
  std::string counter_description() const override {
    return "allocated: bytes the live CUDA tensors requested, from the caching allocator's statistics (before "
           "its rounding to blocks); reserved: bytes the caching allocator holds from cudaMalloc, less the bytes "
           "of the tensors alive at the start of this run (its cache emptied first; free space left in their "
           "segments counts as this run's). Neither includes the CUDA context, cuBLAS's workspaces or NCCL buffers";
  }

 private:
  c10::DeviceIndex index_;
  int64_t reserved_baseline_ = 0;
};

// The memory timeline's sink (allocation_events.hpp). The caching allocator calls its trace trackers under its
// own per-device lock for every allocation and free (whether or not history is recorded); a tracker cannot be
// detached, so one is attached for the process and does nothing unless a recording runs. Lock order: the
// allocator's, then ours; ours is never held while calling into the allocator.
struct CudaSink {
  std::atomic<bool> active{false};
  std::mutex mutex;
  detail::AllocationSink* sink = nullptr;
  c10::DeviceIndex device = 0;
  int64_t live = 0;  // requested bytes of live blocks on `device`
};
CudaSink g_cuda_sink;
std::once_flag g_tracker_once;

void on_trace(const cca::TraceEntry& entry) {
  if (!g_cuda_sink.active.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_cuda_sink.mutex);
  if (g_cuda_sink.sink == nullptr || entry.device_ != g_cuda_sink.device) return;
  if (entry.action_ == cca::TraceEntry::ALLOC)
    g_cuda_sink.live += static_cast<int64_t>(entry.size_);
  else if (entry.action_ == cca::TraceEntry::FREE_COMPLETED)
    g_cuda_sink.live -= static_cast<int64_t>(entry.size_);
  else
    return;
  g_cuda_sink.sink->live_bytes(g_cuda_sink.live);
}

}  // namespace

void detail::set_cuda_allocation_sink(detail::AllocationSink* sink, c10::DeviceIndex device, int64_t start_bytes) {
  std::call_once(g_tracker_once, [] { cca::attachAllocatorTraceTracker(&on_trace); });
  std::lock_guard<std::mutex> lock(g_cuda_sink.mutex);
  g_cuda_sink.sink = sink;
  g_cuda_sink.device = device;
  g_cuda_sink.live = start_bytes;
  g_cuda_sink.active.store(sink != nullptr, std::memory_order_release);
}

std::unique_ptr<MemoryProbe> make_cuda_memory_probe(const c10::Device& device) {
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
  return std::make_unique<CudaProbe>(index);
}

}  // namespace tvie
#endif
