// The kernels' scratch as a plug-in: what the trace's operators ask (ForwardTrace::linear_scratch, conv_scratch,
// attention_scratch, forward_trace.hpp) and what the prediction says of its sources, answered by the plug-in the
// build chose. With TVIE_CPU_KERNEL_SCRATCH (on by default; tvie/config.hpp: TVIE_WITH_CPU_KERNEL_SCRATCH), the CPU
// plug-in (kernel_scratch.cpp): oneDNN's own bookings or the rules written out for each kind of CPU
// (onednn_bookings.hpp, onednn_scratch.hpp), fbgemm's int8 packs (fbgemm_packs.hpp). Without it, none
// (kernel_scratch_none.cpp): no CPU kernel holds scratch, int8's packs are not predicted. CUDA's kernels hold none
// the ledger sees either way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tvie::trace {

// The bytes fbgemm packs an int8 Linear's weights into (in -> out features), beside the ones it replaces; nullopt
// where they are not predicted.
std::optional<int64_t> cpu_int8_packed_linear_bytes(int64_t in, int64_t out);
// How the CPU kernels' scratch is obtained (PredictedTrainingMemory::kernel_scratch_source on the CPU).
std::string cpu_kernel_scratch_source();
// How CPU int8's packed weights are obtained (the quantised weights' source on the CPU).
std::string cpu_int8_packs_source();

}  // namespace tvie::trace
