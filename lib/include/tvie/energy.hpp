// Energy over a window of timed work, read from the hardware's own counters:
//  - CPU: RAPL through Linux's powercap (/sys/class/powercap/intel-rapl:N/energy_uj, the package domains; the
//    counter wraps at max_energy_range_uj). Package energy: cores, caches and uncore of the whole socket, the
//    other processes on it included. Reading it usually needs root since Linux 5.10 (CVE-2020-8694).
//  - CUDA: NVML's nvmlDeviceGetTotalEnergyConsumption (millijoules since the driver loaded; Volta and later),
//    the whole board; it updates every 20-100 ms, so short windows read coarse.
// Where neither can be read the reading says why ("not available: ..."), never 0 J.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

namespace tvie {

struct EnergyReading {
  double joules = -1;  // over the window; -1: not available
  double seconds = 0;  // the window's wall time
  std::string source;  // "RAPL package-0 (powercap)", "NVML total energy, cuda:0", or "not available: <why>"
  bool available() const { return joules >= 0; }
  double mean_watts() const { return available() && seconds > 0 ? joules / seconds : -1; }
};

class EnergyMeter {
 public:
  virtual ~EnergyMeter() = default;
  virtual void start() = 0;
  virtual EnergyReading stop() = 0;  // since start()
};

// The meter for work on `device`: NVML for CUDA, RAPL for the CPU, else one that says why there is none.
// `powercap_root`: where the powercap tree is (tests point it at a fake one).
std::unique_ptr<EnergyMeter> make_energy_meter(const c10::Device& device,
                                               const std::string& powercap_root = "/sys/class/powercap");

// --- NVML (tested with a fake NVML library) ---
// The meter of the board at `pci_bus_id` ("00000000:1B:00.0", as cudaDeviceGetPCIBusId writes it) through the NVML
// library `library`, loaded at run time; `label` names the device in the reading's source ("cuda:0"). Where NVML
// cannot be loaded, initialised, find the board or read its energy, a meter that says which.
std::unique_ptr<EnergyMeter> make_nvml_energy_meter(const std::string& pci_bus_id, const std::string& label,
                                                    const std::string& library = "libnvidia-ml.so.1");

// --- RAPL pieces (tested on a fake powercap tree) ---
struct RaplDomain {
  std::string path;                 // ".../intel-rapl:0"
  std::string name;                 // "package-0"
  int64_t max_energy_range_uj = 0;  // where energy_uj wraps to 0
};
// The top-level package domains (intel-rapl:N whose name begins with "package"; their subzones, core and dram, are
// inside the package or apart from it and not summed). Empty when there are none.
std::vector<RaplDomain> find_rapl_packages(const std::string& powercap_root);
// Microjoules between two readings of a counter that wraps at `max_range_uj` (one wrap at most).
int64_t rapl_delta_uj(int64_t before, int64_t after, int64_t max_range_uj);

}  // namespace tvie
