// Device selection: "auto" (CUDA if available, else CPU), "cpu", "cuda", "cuda:N".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/settings.hpp>

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
  int64_t intra_op_threads = 0;           // LibTorch's intra-op thread pool (at::get_num_threads)
};
HostInfo describe_host();

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
