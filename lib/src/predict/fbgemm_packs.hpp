// fbgemm's packed int8 weights, as LibTorch's CPU dynamic quantisation holds them (tvie::nn::Linear's int8_dynamic:
// quantized::linear_prepack on the x86/fbgemm engine). They live outside LibTorch's allocator (fbgemmAlignedAlloc:
// posix_memalign), so the ledger measures them as glibc heap growth across each layer's packing; this predicts them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tvie::trace::fbgemm {

// The blocking fbgemm packs a weight matrix B [K, N] (K = in features, N = out features) with: K padded to a multiple
// of `k_block` (KCB), N to one of `n_block` (NCB), per instruction set (fbgemm's PackingTraits<int8_t, int32_t, isa>,
// include/fbgemm/PackingTraits-inl.h):
//   avx2:                        KCB 512, NCB  8
//   avx512, avx512_ymm:          KCB 256, NCB 32
//   avx512_vnni, avx512_vnni_ymm: KCB 512, NCB 48
struct Blocking {
  std::string isa;  // fbgemm's name for the instruction set its kernels use here
  int64_t k_block = 0, n_block = 0;
};

// The blocking for the instruction set fbgemm runs on in this process, asked of the fbgemm inside LibTorch
// (fbgemm::fbgemmInstructionSet(), exported by libtorch_cpu.so; FBGEMM_ENABLE_INSTRUCTIONS in the environment can
// lower it). std::nullopt where it cannot be asked (a LibTorch without fbgemm) or the instruction set has no int8
// packing here (ARM's SVE); `why` (when given) says how it was found, or why not.
std::optional<Blocking> blocking(std::string* why = nullptr);

// The bytes one converted Linear (in -> out) holds outside LibTorch's allocator: the packed int8 matrix,
// ceil(in / KCB) * KCB * ceil(out / NCB) * NCB bytes (fbgemm::PackBMatrix's buffer), and LibTorch's
// PackedLinearWeight's three vectors of `out` 4-byte entries (column offsets, scales, zero points). Not counted: the
// two objects themselves and glibc's chunk headers (a few hundred bytes per layer, and a page for a pack glibc maps
// on its own). Against glibc's heap growth across each layer's packing (tvie::nn::Linear::packed_bytes()) on an
// AMD EPYC with avx512_vnni, under each of fbgemm's x86 blockings: -0.9 .. +0.7 KiB per layer, the measurement
// itself moving by as much between two copies of one model (small chunks freed by the earlier copy stay counted in
// glibc's thread cache and are reused); tests/test_predict.cpp ("[int8]").
int64_t packed_linear_bytes(int64_t in, int64_t out, const Blocking& b);

}  // namespace tvie::trace::fbgemm
