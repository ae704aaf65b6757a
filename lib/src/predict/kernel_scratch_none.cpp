// The kernels' scratch without the CPU plug-in (TVIE_CPU_KERNEL_SCRATCH=OFF, kernel_scratch.hpp): no kernel holds
// scratch on any device, and CPU int8's packed weights are not predicted. A CPU prediction then leaves out what
// oneDNN's and ATen's kernels allocate and free inside an op (KiB to MiB at the zoo's sizes, docs/prediction.md,
// "Kernel scratch on the CPU"): its peak is below the measured one by that much. CUDA's predictions are unchanged.
#include "predict/forward_trace.hpp"
#include "predict/kernel_scratch.hpp"

#include "predict/cpu_kernels.hpp"

namespace tvie::trace {

LinearProducts ForwardTrace::linear_scratch(int64_t /*rows*/, int64_t /*in*/, int64_t /*out*/, bool /*sum*/) const {
  return {};
}

ForwardTrace::KernelScratch ForwardTrace::conv_scratch(int64_t /*cin*/, int64_t /*cout*/, int64_t /*k*/,
                                                       int64_t /*stride*/, int64_t /*in_hw*/, int64_t /*out_hw*/,
                                                       bool /*input_grad*/, const Sym& /*xin*/) {
  return {};
}

ForwardTrace::KernelScratch ForwardTrace::attention_scratch(int64_t /*S*/, int64_t /*K*/, int64_t /*d*/,
                                                            bool /*flash*/) const {
  return {};
}

std::optional<int64_t> cpu_int8_packed_linear_bytes(int64_t /*in*/, int64_t /*out*/) { return std::nullopt; }

std::string cpu_kernel_scratch_source() {
  return "not predicted: this tvie was built without its CPU kernel-scratch plug-in (TVIE_CPU_KERNEL_SCRATCH=OFF)";
}

std::string cpu_int8_packs_source() {
  return "fbgemm's packs not predicted: this tvie was built without its CPU kernel-scratch plug-in "
         "(TVIE_CPU_KERNEL_SCRATCH=OFF)";
}

}  // namespace tvie::trace

namespace tvie {

bool cpu_bf16_matmul_scratch_modelled() { return false; }
bool cpu_bf16_conv_scratch_modelled() { return false; }

}  // namespace tvie
