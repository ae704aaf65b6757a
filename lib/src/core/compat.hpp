// The one place for LibTorch version differences. Everything else calls these.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include <cstdlib>
#include <string>

#include <tvie/config.hpp>

#if TVIE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace tvie::compat {

inline std::string torch_version() { return TORCH_VERSION; }

// Optimizer::zero_grad(set_to_none) (the argument exists since LibTorch 2.0).
inline void zero_grad_set_to_none(torch::optim::Optimizer& optimizer) { optimizer.zero_grad(/*set_to_none=*/true); }

// Initialises CUDA (driver, caching allocator) if nothing has yet: the allocator's statistics and device
// properties may be read before any tensor has touched the device.
inline void init_cuda() { at::globalContext().lazyInitDevice(c10::DeviceType::CUDA); }

#if TVIE_WITH_CUDA
// StatType moved from c10::cuda::CUDACachingAllocator to c10::CachingAllocator (2.1+); DeviceStats
// moved to c10::CachingDeviceAllocator (2.6+). getDeviceStats returns it either way.
using CudaDeviceStats = decltype(c10::cuda::CUDACachingAllocator::getDeviceStats(0));
inline constexpr std::size_t kAggregateStat = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
#endif

// Kineto (the profiler's back end) logs at and above KINETO_LOG_LEVEL: 4 is ERROR ("no GPU found" on a CPU
// machine); LibTorch 2.14's Kineto added USDT = 5, which prints a line per profiler start and stop, where 5 was
// the end of the scale in 2.11. 6 silences both. The user's own setting wins.
inline void quiet_kineto() { ::setenv("KINETO_LOG_LEVEL", "6", /*overwrite=*/0); }

}  // namespace tvie::compat
