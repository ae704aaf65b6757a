// The counting CPU allocator: wraps LibTorch's default CPU allocator and counts live and peak bytes.
#include <tvie/memory.hpp>

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>

#include "core/compat.hpp"
#include "measure/allocation_events.hpp"
#include <tvie/errors.hpp>

namespace tvie {
namespace {

// The memory timeline's sink (allocation_events.hpp): checked without a lock on every allocation, called under
// one only while a recording runs.
std::atomic<bool> g_sink_active{false};
std::mutex g_sink_mutex;
detail::AllocationSink* g_sink = nullptr;

void notify_sink(int64_t live) {
  if (!g_sink_active.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  if (g_sink != nullptr) g_sink->live_bytes(live);
}

// Each allocation carries a 64-byte header (keeping LibTorch's 64-byte alignment) that stores its size,
// so that the DataPtr stays "simple" (data == context, plain function deleter): oneDNN and other
// kernels use Allocator::raw_allocate / raw_deallocate, which require that.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  static constexpr size_t kHeader = 64;

  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {
    TORCH_CHECK(inner_->raw_deleter() != nullptr, "tvie: the default CPU allocator has no raw deleter");
    inner_deleter_ = inner_->raw_deleter();
  }

  c10::DataPtr allocate(size_t n) override {
    const int64_t limit = limit_.load(std::memory_order_relaxed);
    if (limit > 0 && current() + static_cast<int64_t>(n) > limit)
      TORCH_CHECK_WITH(OutOfMemoryError, false, "tvie: CPU memory limit: ", n, " more bytes would exceed the ",
                       limit - limit_base_, "-byte limit (", current() - limit_base_, " bytes in use above the base)");
    auto* base = static_cast<char*>(inner_->raw_allocate(n + kHeader));
    *reinterpret_cast<size_t*>(base) = n;
    void* data = base + kHeader;
    add(static_cast<int64_t>(n));
    return {data, data, &CountingCpuAllocator::release, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &CountingCpuAllocator::release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  int64_t current() const { return current_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(current_.load()); }
  void set_limit(int64_t base, int64_t limit) {
    limit_base_ = base;
    limit_.store(limit);
  }
  int64_t limit() const { return limit_.load(); }
  int64_t limit_base() const { return limit_base_; }

  static CountingCpuAllocator* instance;

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    char* base = static_cast<char*>(data) - kHeader;
    const size_t n = *reinterpret_cast<size_t*>(base);
    const int64_t now =
        instance->current_.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed) - static_cast<int64_t>(n);
    instance->inner_deleter_(base);
    notify_sink(now);
  }

  void add(int64_t n) {
    const int64_t now = current_.fetch_add(n, std::memory_order_relaxed) + n;
    int64_t seen = peak_.load(std::memory_order_relaxed);
    while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    notify_sink(now);
  }

  c10::Allocator* inner_;
  c10::DeleterFnPtr inner_deleter_ = nullptr;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{0};  // absolute counted bytes allowed; 0: none
  int64_t limit_base_ = 0;
};

CountingCpuAllocator* CountingCpuAllocator::instance = nullptr;

// Static lifetime: tensors may outlive any scope, and their deleters point here.
CountingCpuAllocator* g_counter = nullptr;
std::once_flag g_install_once;

class CpuProbe final : public MemoryProbe {
 public:
  int64_t allocated_bytes() override { return g_counter->current(); }
  int64_t peak_allocated_bytes() override { return g_counter->peak(); }
  int64_t reserved_bytes() override { return -1; }
  int64_t peak_reserved_bytes() override { return -1; }
  void reset_peak() override { g_counter->reset_peak(); }
  std::string counter_description() const override {
    return "allocated: bytes of live CPU tensors, counted by tvie's wrapping CPU allocator (no caching, so no "
           "separate reserved figure; oneDNN/MKL scratch not included)";
  }
};

}  // namespace

#if TVIE_WITH_CUDA
std::unique_ptr<MemoryProbe> make_cuda_memory_probe(const c10::Device& device);  // memory_cuda.cpp
#endif

void install_cpu_memory_counter() {
  std::call_once(g_install_once, [] {
    static CountingCpuAllocator counter(c10::GetDefaultCPUAllocator());
    CountingCpuAllocator::instance = &counter;
    // Priority above the default registration (0) so that it takes over.
    c10::SetCPUAllocator(&counter, /*priority=*/100);
    g_counter = &counter;
  });
}

void detail::set_cpu_allocation_sink(detail::AllocationSink* sink) {
  install_cpu_memory_counter();
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = sink;
  g_sink_active.store(sink != nullptr, std::memory_order_release);
}

bool cpu_memory_counter_installed() { return g_counter != nullptr && c10::GetCPUAllocator() == g_counter; }

ScopedCpuMemoryLimit::ScopedCpuMemoryLimit(int64_t limit_bytes) {
  install_cpu_memory_counter();
  previous_base_ = g_counter->limit_base();
  previous_limit_ = g_counter->limit();
  const int64_t base = g_counter->current();
  int64_t limit = limit_bytes > 0 ? base + limit_bytes : 0;
  if (previous_limit_ > 0 && (limit == 0 || previous_limit_ < limit)) {
    g_counter->set_limit(previous_base_, previous_limit_);  // the enclosing limit is the tighter one
    return;
  }
  g_counter->set_limit(base, limit);
}

ScopedCpuMemoryLimit::~ScopedCpuMemoryLimit() { g_counter->set_limit(previous_base_, previous_limit_); }

std::unique_ptr<MemoryProbe> make_memory_probe(const c10::Device& device) {
  if (device.is_cpu()) {
    install_cpu_memory_counter();
    if (!cpu_memory_counter_installed())
      throw Error(
          "tvie: the counting CPU allocator could not be installed (another allocator holds a higher priority)");
    return std::make_unique<CpuProbe>();
  }
#if TVIE_WITH_CUDA
  if (device.is_cuda()) return make_cuda_memory_probe(device);
#endif
  throw DeviceUnavailable("device", device.str(), "cpu, cuda (this build has no memory probe for it)");
}

}  // namespace tvie
