// Measured memory: probes over the allocator's own counters, and the ledger categories.
//
// CPU: tvie installs a counting allocator (c10::SetCPUAllocator) that wraps LibTorch's default one and
//      counts the bytes of every live tensor allocation ("allocated"); the CPU allocator does not cache,
//      so there is no separate "reserved" figure. Not counted: oneDNN/MKL scratch, from_blob memory.
// CUDA: the caching allocator's statistics: "allocated" (live tensors, rounded up to 512-byte blocks)
//      and "reserved" (segments the allocator holds from cudaMalloc, used or not). Neither includes the
//      CUDA context or NCCL buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <c10/core/Device.h>

namespace tvie {

class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  virtual int64_t allocated_bytes() = 0;       // live tensor bytes now
  virtual int64_t peak_allocated_bytes() = 0;  // maximum of allocated_bytes since reset_peak()
  virtual int64_t reserved_bytes() = 0;        // held by the allocator; -1 where not applicable (CPU)
  virtual int64_t peak_reserved_bytes() = 0;   // -1 where not applicable (CPU)
  virtual void reset_peak() = 0;               // peak := current
  // Which counter the figures are, for reports: "allocated bytes of live tensors (tvie counting CPU allocator)".
  virtual std::string counter_description() const = 0;
};

// Installs the counting CPU allocator (idempotent, thread-safe). Tensors allocated before it was
// installed are invisible to it; tvie's figures are differences taken after installation.
void install_cpu_memory_counter();
bool cpu_memory_counter_installed();

// CPU: while alive, a tensor allocation that would take the counted bytes more than `limit_bytes` above
// what was live at construction throws c10::OutOfMemoryError, as a device with that much free memory
// would. The limit is cumulative (all live tensors count, not one allocation), and limits nest: an inner
// one can only lower the outer one, which is back in force when the inner ends. Memory allocated outside
// torch's allocator (oneDNN scratch, fbgemm packs) is not limited.
class ScopedCpuMemoryLimit {
 public:
  explicit ScopedCpuMemoryLimit(int64_t limit_bytes);
  ~ScopedCpuMemoryLimit();
  ScopedCpuMemoryLimit(const ScopedCpuMemoryLimit&) = delete;
  ScopedCpuMemoryLimit& operator=(const ScopedCpuMemoryLimit&) = delete;

 private:
  int64_t previous_base_ = 0, previous_limit_ = 0;  // the enclosing limit, restored at the end
};

// A probe for `device`; installs the CPU counter if needed. Throws DeviceUnavailable for CUDA without CUDA.
std::unique_ptr<MemoryProbe> make_memory_probe(const c10::Device& device);

// Whether glibc's heap statistics (mallinfo2) can be read: how bytes allocated outside LibTorch's allocator
// (CPU int8: fbgemm's packed weights) are measured. False without glibc 2.33+ and under AddressSanitizer;
// those bytes then read 0 ("not measured").
bool heap_statistics_available();

// Training ledger, bytes above the baseline taken before the model was built.
struct TrainingMemory {
  int64_t parameters = 0;       // weights and buffers: needed by both modes
  int64_t gradients = 0;        // one gradient per trainable weight: backward writes them, the optimizer reads them
  int64_t optimizer_state = 0;  // momentum / Adam moments: kept across steps, inference never has them
  int64_t activations = 0;      // tensors saved by the forward for the backward (forward with grad minus without)
  int64_t weight_copies = 0;    // amp: low-precision copies of the weights in autocast's cast cache
  int64_t loss_scaler = 0;      // amp-fp16: the loss scaler's scale, growth tracker and found_inf
  int64_t comm_buffers = 0;     // data parallelism: the flat gradient buckets the all-reduce works on
  int64_t other = 0;            // peak minus the categories above: transients, the batch, logits; can be
                                // negative when gradients and saved activations are never all live at once
  int64_t peak = 0;             // peak allocated bytes over the first two optimizer steps
  int64_t peak_reserved = -1;   // CUDA only: peak reserved bytes (-1: not applicable)
  int64_t batch = 0;            // bytes of one step's input batch
};

// Inference ledger, bytes above the baseline taken before the inference copy was built.
struct InferenceMemory {
  int64_t parameters = 0;      // the converted copy of the weights (fp32/fp16/bf16; int8/fp8 Linear weights + scales)
  int64_t packed_weights = 0;  // weights outside torch's allocator: CPU int8's fbgemm packs (glibc heap growth
                               // across the conversion minus the tensors counted); an AOTInductor package's
                               // constants that building did not allocate (mapped from its library)
  int64_t activations = 0;     // working set of one forward: peak during it minus what was live before (incl. output)
  int64_t other = 0;           // peak minus the categories above: the input batch
  int64_t peak = 0;            // tensor peak above the baseline, plus packed_weights
  int64_t peak_reserved = -1;
  int64_t batch = 0;
  // False: CPU int8 where glibc's heap statistics cannot be read (glibc before 2.33, AddressSanitizer), so the
  // packs were not measured: packed_weights is 0 and the peak lacks them.
  bool packed_weights_measured = true;
};

// The predicted ledgers (PredictedTrainingMemory, PredictedInferenceMemory) are in tvie/ledger.hpp.

}  // namespace tvie
