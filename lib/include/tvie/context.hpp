// The context block every report carries: tvie and LibTorch versions, the device, the command line, and
// the machine (CPU model and ISA features, threads; on CUDA the GPU with driver, CUDA, cuDNN, NCCL).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Device.h>

#include <tvie/device.hpp>

namespace tvie {

// What, where and how a report was made; the same block in every report.
struct RunContext {
  std::string tvie_version;
  std::string torch_version;
  bool cuda_available = false;
  std::string device;                                  // resolved, with its name: "cpu", "cuda:0 (NVIDIA H200)"
  c10::DeviceType device_type = c10::DeviceType::CPU;  // what `device` is, for reporters that branch on it
  std::vector<std::string> argv;
  // The options a `--config FILE` set (tvie's command line; empty from code): the file, and each option it set
  // that the command line did not, as the option's long name and the value passed to it.
  std::string config_file;
  std::vector<std::pair<std::string, std::string>> config;
  HostInfo host;               // CPU model, ISA features, intra-op threads
  std::optional<GpuInfo> gpu;  // on CUDA: GPU, driver, CUDA runtime, cuDNN, NCCL
};
RunContext make_run_context(const c10::Device& device, std::vector<std::string> argv);

}  // namespace tvie
