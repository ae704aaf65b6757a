// What a run was measured on: the host CPU (model, ISA features that decide bf16 speed, threads) and, on
// CUDA, the GPU with its driver, CUDA runtime, cuDNN and NCCL versions. See device.hpp.
#include <tvie/config.hpp>
#if TVIE_WITH_NCCL && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif

#include <tvie/context.hpp>
#include <tvie/device.hpp>

#include <dlfcn.h>

#include <ATen/Version.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/compat.hpp"
#include <tvie/errors.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#endif
#if TVIE_WITH_NCCL
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

namespace tvie {
namespace {

// The ISA features that decide how fast LibTorch's CPU kernels run in bf16 (oneDNN uses avx512_bf16 or
// AMX when present, and emulates bf16 with fp32 arithmetic otherwise).
const std::vector<std::string>& reported_features() {
  static const std::vector<std::string> features = {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8"};
  return features;
}

bool has(const std::vector<std::string>& features, const std::string& f) {
  return std::find(features.begin(), features.end(), f) != features.end();
}

#if TVIE_WITH_CUDA
// The NVIDIA driver's version through NVML, loaded at run time (no link-time dependency on the driver).
std::string nvidia_driver_version() {
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!nvml) return "";
  std::string version;
  using Init = int (*)();
  using GetVersion = int (*)(char*, unsigned int);
  auto init = reinterpret_cast<Init>(::dlsym(nvml, "nvmlInit_v2"));
  auto get = reinterpret_cast<GetVersion>(::dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<Init>(::dlsym(nvml, "nvmlShutdown"));
  if (init && get && init() == 0) {
    char buf[96] = {};
    if (get(buf, sizeof buf) == 0) version = buf;
    if (shutdown) shutdown();
    return version;  // NVML stays loaded once initialised (see NvmlMeter in measure/energy.cpp)
  }
  ::dlclose(nvml);
  return version;
}

std::string dotted_cuda_version(int v) { return cat(v / 1000, ".", (v % 1000) / 10); }  // 13000 -> "13.0"
#endif

// oneDNN reads ONEDNN_MAX_CPU_ISA, and DNNL_MAX_CPU_ISA where that is not set, once at its first use.
std::string onednn_isa_limit_from_env() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "";
}

}  // namespace

std::vector<std::string> cpu_features_under_onednn_limit(const std::vector<std::string>& features,
                                                         const std::string& limit) {
  std::string isa = limit;
  std::transform(isa.begin(), isa.end(), isa.begin(), [](unsigned char ch) { return std::toupper(ch); });
  // The highest of avx2 < avx512f < avx512_bf16 < amx each limit allows (oneDNN's dispatcher-control
  // documentation orders them: AVX2 < AVX512_CORE < AVX512_CORE_VNNI < AVX512_CORE_BF16 < AVX10_1_512 <
  // AVX10_1_512_AMX; AVX2 < AVX2_VNNI < AVX2_VNNI_2).
  int allowed = 4;  // everything: no limit, DEFAULT, ALL, the AMX values, and what oneDNN does not know
  if (isa == "SSE41" || isa == "AVX") allowed = 0;
  if (isa == "AVX2" || isa == "AVX2_VNNI" || isa == "AVX2_VNNI_2") allowed = 1;
  if (isa == "AVX512_CORE" || isa == "AVX512_CORE_VNNI") allowed = 2;
  if (isa == "AVX512_CORE_BF16" || isa == "AVX10_1_512" || isa == "AVX512_CORE_FP16") allowed = 3;
  const auto level = [](const std::string& f) {
    if (f == "avx2") return 1;
    if (f == "avx512f") return 2;
    if (f == "avx512_bf16") return 3;
    return 4;  // amx_bf16, amx_int8
  };
  std::vector<std::string> out;
  for (const auto& f : features)
    if (level(f) <= allowed) out.push_back(f);
  return out;
}

std::string cpu_features_text(const HostInfo& host) {
  const auto words = [](const std::vector<std::string>& features, const char* none) {
    std::string out;
    for (const auto& f : features) out += (out.empty() ? "" : " ") + f;
    return out.empty() ? std::string(none) : out;
  };
  std::string text = words(host.cpu_features, "none of avx2/avx512/amx");
  if (!host.onednn_isa_limit.empty())
    text += cat("; ONEDNN_MAX_CPU_ISA=", host.onednn_isa_limit, ": oneDNN uses ",
                words(host.cpu_features_usable, "none of them"));
  return text;
}

HostInfo describe_host() {
  HostInfo h;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string flags;
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && h.cpu_model.empty()) h.cpu_model = value;
    if (key == "flags" && flags.empty()) flags = value;
  }
  std::vector<std::string> present;
  std::istringstream words(flags);
  for (std::string w; words >> w;) present.push_back(w);
  for (const auto& f : reported_features())
    if (has(present, f)) h.cpu_features.push_back(f);
  h.onednn_isa_limit = onednn_isa_limit_from_env();
  h.cpu_features_usable = cpu_features_under_onednn_limit(h.cpu_features, h.onednn_isa_limit);
  h.aten_cpu_capability = at::get_cpu_capability();
  h.intra_op_threads = at::get_num_threads();
  return h;
}

std::optional<GpuInfo> describe_gpu(const c10::Device& device) {
#if TVIE_WITH_CUDA
  if (!device.is_cuda()) return std::nullopt;
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
  compat::init_cuda();
  const auto* props = at::cuda::getDeviceProperties(index);
  GpuInfo g;
  g.name = props->name;
  g.compute_capability = cat(props->major, ".", props->minor);
  g.memory_bytes = static_cast<int64_t>(props->totalGlobalMem);
  g.driver = nvidia_driver_version();
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) g.cuda_runtime = dotted_cuda_version(runtime);
  if (at::detail::getCUDAHooks().hasCuDNN()) {
    const long v = at::detail::getCUDAHooks().versionCuDNN();  // 91002 -> 9.10.2 (cuDNN 9 numbering)
    g.cudnn = cat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
  }
#if TVIE_WITH_NCCL
  g.nccl = c10d::getNcclVersion();
#endif
  return g;
#else
  (void)device;
  return std::nullopt;
#endif
}

DtypeChoice native_inference_dtype(const c10::Device& device, const std::vector<std::string>& cpu_features) {
  if (device.is_cuda()) {
#if TVIE_WITH_CUDA
    compat::init_cuda();
    const auto* props = at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0);
    const std::string capability = cat(props->major, ".", props->minor);
    if (props->major >= 8)
      return {InferenceDtype::bf16,
              cat("bf16: the GPU (compute capability ", capability, ") runs bf16 on its tensor cores")};
    return {InferenceDtype::fp16,
            cat("fp16: the GPU (compute capability ", capability, ") has fp16 tensor cores but no bf16 ones")};
#endif
  }
  for (const char* f : {"amx_bf16", "avx512_bf16"})
    if (has(cpu_features, f)) return {InferenceDtype::bf16, cat("bf16: this CPU has bf16 units (", f, ")")};
  return {InferenceDtype::fp32,
          "fp32: this CPU has no bf16 units (no avx512_bf16 or amx_bf16), so a bf16 copy would be emulated and "
          "slower than fp32"};
}

DtypeChoice native_inference_dtype(const c10::Device& device) {
  const HostInfo host = describe_host();
  DtypeChoice choice = native_inference_dtype(device, host.cpu_features_usable);
  if (!device.is_cuda() && host.cpu_features_usable != host.cpu_features && choice.dtype == InferenceDtype::fp32 &&
      native_inference_dtype(device, host.cpu_features).dtype != InferenceDtype::fp32)
    choice.reason =
        cat("fp32: this CPU has bf16 units, but oneDNN may not use them (ONEDNN_MAX_CPU_ISA=", host.onednn_isa_limit,
            "), so a bf16 copy would be emulated and slower than fp32");
  return choice;
}

RunContext make_run_context(const c10::Device& device, std::vector<std::string> argv) {
  RunContext c;
  c.tvie_version = TVIE_VERSION_STRING;
  c.torch_version = compat::torch_version();
  c.cuda_available = cuda_available();
  c.device = describe_device(device);
  c.device_type = device.type();
  c.argv = std::move(argv);
  c.host = describe_host();
  c.gpu = describe_gpu(device);
  return c;
}

}  // namespace tvie
