// Energy counters: RAPL (powercap) on the CPU, NVML on CUDA (tvie/energy.hpp).
#include <tvie/energy.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <dlfcn.h>

#include <tvie/config.hpp>
#include <tvie/log.hpp>

#if TVIE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tvie {
namespace {

using Clock = std::chrono::steady_clock;

// The first line of a sysfs file; "" when it cannot be read.
std::string read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

bool read_int(const std::filesystem::path& path, int64_t& out) {
  const std::string s = read_line(path);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(s);
  return true;
}

// Says why there is no reading.
class NoMeter final : public EnergyMeter {
 public:
  explicit NoMeter(std::string why) : why_("not available: " + std::move(why)) {}
  void start() override { begin_ = Clock::now(); }
  EnergyReading stop() override { return {-1, std::chrono::duration<double>(Clock::now() - begin_).count(), why_}; }

 private:
  std::string why_;
  Clock::time_point begin_ = Clock::now();
};

class RaplMeter final : public EnergyMeter {
 public:
  explicit RaplMeter(std::vector<RaplDomain> domains) : domains_(std::move(domains)), before_(domains_.size(), 0) {
    for (const auto& d : domains_) source_ += (source_.empty() ? "RAPL " : " + ") + d.name;
    source_ += " (Linux powercap; the whole socket, other processes included)";
  }
  void start() override {
    for (size_t i = 0; i < domains_.size(); ++i) ok_ = read_int(domains_[i].path + "/energy_uj", before_[i]) && ok_;
    begin_ = Clock::now();
  }
  EnergyReading stop() override {
    const double seconds = std::chrono::duration<double>(Clock::now() - begin_).count();
    int64_t total = 0;
    for (size_t i = 0; i < domains_.size(); ++i) {
      int64_t after = 0;
      if (!ok_ || !read_int(domains_[i].path + "/energy_uj", after))
        return {-1, seconds, "not available: " + domains_[i].path + "/energy_uj could not be read"};
      total += rapl_delta_uj(before_[i], after, domains_[i].max_energy_range_uj);
    }
    return {static_cast<double>(total) * 1e-6, seconds, source_};
  }

 private:
  std::vector<RaplDomain> domains_;
  std::vector<int64_t> before_;
  std::string source_;
  bool ok_ = true;
  Clock::time_point begin_ = Clock::now();
};

// NVML loaded at run time (no link-time dependency on the driver, and nothing CUDA about it: the board is named by
// its PCI bus id), as for the driver version. NVML's calls return 0 (NVML_SUCCESS) or an error code.
class NvmlMeter final : public EnergyMeter {
 public:
  using Init = int (*)();
  using ByBusId = int (*)(const char*, void**);
  using Energy = int (*)(void*, unsigned long long*);

  static std::unique_ptr<EnergyMeter> make(const std::string& pci_bus_id, const std::string& label,
                                           const std::string& library) {
    void* lib = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return std::make_unique<NoMeter>(library + " (NVML) not found");
    auto meter = std::unique_ptr<NvmlMeter>(new NvmlMeter(lib));
    auto init = reinterpret_cast<Init>(::dlsym(lib, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<ByBusId>(::dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    meter->energy_ = reinterpret_cast<Energy>(::dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    meter->shutdown_ = reinterpret_cast<Init>(::dlsym(lib, "nvmlShutdown"));
    if (!init || !by_bus || !meter->energy_ || !meter->shutdown_)
      return std::make_unique<NoMeter>(library + " lacks NVML's energy functions");
    if (const int rc = init(); rc != 0) return std::make_unique<NoMeter>(cat("nvmlInit failed (NVML error ", rc, ")"));
    meter->initialised_ = true;
    if (by_bus(pci_bus_id.c_str(), &meter->handle_) != 0)
      return std::make_unique<NoMeter>(cat("NVML has no device at PCI bus id ", pci_bus_id));
    unsigned long long mj = 0;
    if (meter->energy_(meter->handle_, &mj) != 0)
      return std::make_unique<NoMeter>("nvmlDeviceGetTotalEnergyConsumption unsupported (before Volta?)");
    meter->source_ = cat("NVML total energy, ", label, " (the whole board; updates every 20-100 ms)");
    return meter;
  }
  // NVML stays loaded once initialised: a library that may have started threads of its own is not safe to unload
  // (a process that unloaded NVML has died of a segmentation fault seconds later, cause not established; PyTorch
  // never unloads it either).
  ~NvmlMeter() override {
    if (initialised_)
      shutdown_();
    else
      ::dlclose(lib_);
  }
  void start() override {
    ok_ = energy_(handle_, &before_) == 0;
    begin_ = Clock::now();
  }
  EnergyReading stop() override {
    const double seconds = std::chrono::duration<double>(Clock::now() - begin_).count();
    unsigned long long after = 0;
    if (!ok_ || energy_(handle_, &after) != 0) return {-1, seconds, "not available: NVML energy read failed"};
    // Millijoules since the driver was loaded: a counter that only grows (64 bits: it does not wrap); one that went
    // back (the driver reloaded in between) is no reading.
    if (after < before_) return {-1, seconds, "not available: NVML's energy counter went back (driver reloaded?)"};
    return {static_cast<double>(after - before_) * 1e-3, seconds, source_};
  }

 private:
  explicit NvmlMeter(void* lib) : lib_(lib) {}
  void* lib_;
  void* handle_ = nullptr;
  Energy energy_ = nullptr;
  Init shutdown_ = nullptr;
  bool initialised_ = false, ok_ = false;
  unsigned long long before_ = 0;
  std::string source_;
  Clock::time_point begin_ = Clock::now();
};

}  // namespace

std::vector<RaplDomain> find_rapl_packages(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<RaplDomain> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string dir = entry.path().filename().string();
    // Top-level zones only: "intel-rapl:0", not the subzone "intel-rapl:0:0" (nor the mmio "intel-rapl-mmio:0").
    if (dir.rfind("intel-rapl:", 0) != 0 || std::count(dir.begin(), dir.end(), ':') != 1) continue;
    RaplDomain d;
    d.path = entry.path().string();
    d.name = read_line(entry.path() / "name");
    if (d.name.rfind("package", 0) != 0) continue;
    if (!read_int(entry.path() / "max_energy_range_uj", d.max_energy_range_uj)) continue;
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const RaplDomain& a, const RaplDomain& b) { return a.path < b.path; });
  return out;
}

int64_t rapl_delta_uj(int64_t before, int64_t after, int64_t max_range_uj) {
  return after >= before ? after - before : max_range_uj - before + after;  // wrapped once
}

std::unique_ptr<EnergyMeter> make_nvml_energy_meter(const std::string& pci_bus_id, const std::string& label,
                                                    const std::string& library) {
  return NvmlMeter::make(pci_bus_id, label, library);
}

std::unique_ptr<EnergyMeter> make_energy_meter(const c10::Device& device, const std::string& powercap_root) {
  if (device.is_cuda()) {
#if TVIE_WITH_CUDA
    char bus[32] = {};
    const int index = device.has_index() ? device.index() : 0;
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) != cudaSuccess)
      return std::make_unique<NoMeter>(cat("no PCI bus id for cuda:", index));
    return make_nvml_energy_meter(bus, cat("cuda:", index));
#else
    return std::make_unique<NoMeter>("tvie was built without CUDA");
#endif
  }
  auto domains = find_rapl_packages(powercap_root);
  if (domains.empty()) {
    std::error_code ec;
    return std::make_unique<NoMeter>(std::filesystem::exists(powercap_root, ec)
                                         ? "no RAPL package domain under " + powercap_root
                                         : powercap_root + " does not exist (no RAPL here, e.g. a virtual machine)");
  }
  int64_t probe = 0;
  if (!read_int(domains.front().path + "/energy_uj", probe))
    return std::make_unique<NoMeter>(domains.front().path + "/energy_uj is not readable (root only since Linux 5.10)");
  return std::make_unique<RaplMeter>(std::move(domains));
}

}  // namespace tvie
