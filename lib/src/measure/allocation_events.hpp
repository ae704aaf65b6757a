// The seam between the allocators' counters and the memory timeline (tvie/timeline.hpp): while a sink is set,
// every allocation and free on its device reports the live bytes after it.
#pragma once

#include <cstdint>

#include <c10/core/Device.h>
#include <tvie/config.hpp>  // TVIE_WITH_CUDA: without it the #if below reads 0 even in a CUDA build

namespace tvie::detail {

class AllocationSink {
 public:
  virtual ~AllocationSink() = default;
  virtual void live_bytes(int64_t bytes) = 0;  // may be called from any thread, never concurrently
};

// The counting CPU allocator's sink (nullptr: none). Installs the counter if needed. Once it returns with
// nullptr, no call to the previous sink is in progress or will come.
void set_cpu_allocation_sink(AllocationSink* sink);

#if TVIE_WITH_CUDA
// The CUDA caching allocator's sink for one device: `start_bytes` are the requested bytes live now; each ALLOC
// adds its bytes, each completed free subtracts them (memory_cuda.cpp; the trace callback is attached once).
void set_cuda_allocation_sink(AllocationSink* sink, c10::DeviceIndex device, int64_t start_bytes);
#endif

}  // namespace tvie::detail
