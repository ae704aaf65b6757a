// Device selection: "auto" (CUDA if available, else CPU), "cpu", "cuda", "cuda:N".
#pragma once

#include <string>

#include <c10/core/Device.h>

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

}  // namespace tvie
