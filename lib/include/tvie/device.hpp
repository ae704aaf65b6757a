// Device selection: "auto" (CUDA if available, else CPU), "cpu", "cuda", "cuda:N".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/ledger.hpp>

namespace tvie {

// True when LibTorch sees at least one CUDA device.
bool cuda_available();
int cuda_device_count();

// Resolves a device string. Throws InvalidArgument (unknown spelling) or DeviceUnavailable
// (CUDA asked for on a machine without one, or an index past the last device). `field` names the
// setting in the error ("device").
c10::Device resolve_device(const std::string& spec, const std::string& field = "device");

// Human-readable name: "cpu" or "cuda:0 (NVIDIA H200)".
std::string describe_device(const c10::Device& device);

// Waits for all queued work on `device` (no-op on CPU).
void synchronize(const c10::Device& device);

// What a figure was measured on, for every report's context block.
struct HostInfo {
  std::string cpu_model;                  // /proc/cpuinfo "model name" ("" where unknown)
  std::vector<std::string> cpu_features;  // of avx2, avx512f, avx512_bf16, amx_bf16, amx_int8: those present
  // ONEDNN_MAX_CPU_ISA (or its older name DNNL_MAX_CPU_ISA) as set in the environment, "" when not set: oneDNN,
  // which runs LibTorch's CPU convolutions and bf16 matmuls, then dispatches to no ISA above it ("AVX2" makes an
  // AVX-512 machine run an AVX2 machine's kernels, with their memory and their speed).
  std::string onednn_isa_limit;
  // cpu_features less those above that limit (equal to cpu_features without one): what the bf16 default, the
  // memory prediction's CPU-kernel rules and the host's catalog class follow.
  std::vector<std::string> cpu_features_usable;
  // ATen's own vectorised kernels: "AVX512", "AVX2" or "DEFAULT" (at::get_cpu_capability; ATEN_CPU_CAPABILITY
  // lowers it). Reported, not used: they decide no memory and none of the catalog's peaks.
  std::string aten_cpu_capability;
  int64_t intra_op_threads = 0;  // LibTorch's intra-op thread pool (at::get_num_threads)
};
HostInfo describe_host();

// "avx2 avx512f avx512_bf16" (those present; "none of avx2/avx512/amx"), and under an ISA limit
// "avx2 avx512f avx512_bf16; ONEDNN_MAX_CPU_ISA=AVX2: oneDNN uses avx2": for the reports' machine line.
std::string cpu_features_text(const HostInfo& host);

// The features of `features` (as in HostInfo) oneDNN may use under the ISA limit `limit` (a value of
// ONEDNN_MAX_CPU_ISA, any case): AVX2 and AVX2_VNNI(_2) keep avx2; AVX512_CORE(_VNNI) add avx512f;
// AVX512_CORE_BF16 and AVX10_1_512 (AVX512_CORE_FP16) add avx512_bf16; the AMX values, DEFAULT, ALL, "" and
// values oneDNN does not know (it ignores them) keep all; SSE41 and AVX keep none.
std::vector<std::string> cpu_features_under_onednn_limit(const std::vector<std::string>& features,
                                                         const std::string& limit);

struct GpuInfo {
  std::string name;                // "NVIDIA H200"
  std::string compute_capability;  // "9.0"
  int64_t memory_bytes = 0;        // total device memory
  std::string driver;              // NVIDIA driver (NVML), "" when NVML is not there
  std::string cuda_runtime;        // "13.0"
  std::string cudnn;               // "9.10.2", "" without cuDNN
  std::string nccl;                // "2.27.7", "" in a build without NCCL
};
// The GPU behind a CUDA device (initialises CUDA); std::nullopt for the CPU.
std::optional<GpuInfo> describe_gpu(const c10::Device& device);

// The inference dtype `device` runs natively, and why: bf16 on a CPU with bf16 units (avx512_bf16 or AMX)
// and on CUDA devices of compute capability 8.0+; fp32 elsewhere (a bf16 copy would be emulated, slower
// than fp32). `cpu_features` as in HostInfo (taken from this host when not given).
struct DtypeChoice {
  InferenceDtype dtype = InferenceDtype::fp32;
  std::string reason;
};
DtypeChoice native_inference_dtype(const c10::Device& device);
DtypeChoice native_inference_dtype(const c10::Device& device, const std::vector<std::string>& cpu_features);

}  // namespace tvie
