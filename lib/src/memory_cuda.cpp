// CUDA memory probe over the caching allocator's statistics. Compiled wherever LibTorch has CUDA;
// runs only where a GPU exists.
#include <tvie/memory.hpp>

#include "compat.hpp"

#if TVIE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>

namespace tvie {
namespace {

namespace cca = c10::cuda::CUDACachingAllocator;

class CudaProbe final : public MemoryProbe {
 public:
  explicit CudaProbe(c10::DeviceIndex index) : index_(index) {}
  compat::CudaDeviceStats stats() const { return cca::getDeviceStats(index_); }
  int64_t allocated_bytes() override { return stats().allocated_bytes[compat::kAggregateStat].current; }
  int64_t peak_allocated_bytes() override { return stats().allocated_bytes[compat::kAggregateStat].peak; }
  int64_t reserved_bytes() override { return stats().reserved_bytes[compat::kAggregateStat].current; }
  int64_t peak_reserved_bytes() override { return stats().reserved_bytes[compat::kAggregateStat].peak; }
  void reset_peak() override { cca::resetPeakStats(index_); }
  std::string counter_description() const override {
    return "allocated: bytes of live CUDA tensors from the caching allocator's statistics (rounded up to "
           "512-byte blocks); reserved: bytes the caching allocator holds from cudaMalloc. Neither includes the "
           "CUDA context or NCCL buffers";
  }

 private:
  c10::DeviceIndex index_;
};

}  // namespace

std::unique_ptr<MemoryProbe> make_cuda_memory_probe(const c10::Device& device) {
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
  return std::make_unique<CudaProbe>(index);
}

}  // namespace tvie
#endif
