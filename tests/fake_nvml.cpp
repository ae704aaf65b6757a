// A stand-in for libnvidia-ml.so.1 with the four functions tvie's NVML energy meter calls (lib/src/measure/energy.cpp),
// so that the meter's handling of NVML (its return codes, the board's lookup by PCI bus id, millijoules to joules,
// initialisation balanced by shutdown) is tested on a machine without a GPU. The test loads this library itself and
// drives it through the fake_nvml_* functions; the meter loads the same copy (dlopen returns the loaded library).
// Return codes as NVML's: 0 NVML_SUCCESS, 1 NVML_ERROR_UNINITIALIZED, 2 NVML_ERROR_INVALID_ARGUMENT,
// 3 NVML_ERROR_NOT_SUPPORTED, 6 NVML_ERROR_NOT_FOUND, 9 NVML_ERROR_DRIVER_NOT_LOADED.
#include <cstring>

namespace {
int g_init_rc = 0;
int g_energy_rc = 0;
unsigned long long g_energy_mj = 0;
char g_bus_id[64] = "00000000:1B:00.0";
int g_initialised = 0;  // nvmlInit_v2 calls less nvmlShutdown calls
int g_energy_reads = 0;
int g_board = 0;  // the handle's target
}  // namespace

extern "C" {

// --- NVML's functions, as tvie calls them ---
int nvmlInit_v2() {
  if (g_init_rc == 0) ++g_initialised;
  return g_init_rc;
}
int nvmlShutdown() {
  if (g_initialised == 0) return 1;  // NVML_ERROR_UNINITIALIZED
  --g_initialised;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (g_initialised == 0) return 1;
  if (std::strcmp(bus_id, g_bus_id) != 0) return 6;
  *device = &g_board;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void* device, unsigned long long* energy_mj) {
  if (g_initialised == 0 || device != &g_board) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  if (g_energy_rc != 0) return g_energy_rc;
  ++g_energy_reads;
  *energy_mj = g_energy_mj;
  return 0;
}

// --- the test's controls ---
void fake_nvml_reset(int init_rc, int energy_rc, const char* bus_id, unsigned long long energy_mj) {
  g_init_rc = init_rc;
  g_energy_rc = energy_rc;
  std::strncpy(g_bus_id, bus_id, sizeof g_bus_id - 1);
  g_energy_mj = energy_mj;
  g_initialised = 0;
  g_energy_reads = 0;
}
void fake_nvml_set_energy(unsigned long long energy_mj, int energy_rc) {
  g_energy_mj = energy_mj;
  g_energy_rc = energy_rc;
}
int fake_nvml_initialised() { return g_initialised; }
int fake_nvml_energy_reads() { return g_energy_reads; }
}
