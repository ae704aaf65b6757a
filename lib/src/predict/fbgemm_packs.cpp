// fbgemm's packed int8 weights: see fbgemm_packs.hpp.
#include "predict/fbgemm_packs.hpp"

#include <dlfcn.h>

#include <tvie/log.hpp>

namespace tvie::trace::fbgemm {

namespace {

// fbgemm::inst_set_t (include/fbgemm/Utils.h), in its order: the function returns it as an int.
enum class InstSet : int { anyarch, avx2, avx512, avx512_ymm, avx512_vnni, avx512_vnni_ymm, sve };

struct Found {
  std::optional<Blocking> blocking;
  std::string how;
};

Found ask() {
  // fbgemm::fbgemmInstructionSet(): exported by LibTorch's libtorch_cpu.so (which links fbgemm in) on x86.
  using Fn = int (*)();
  const auto fn = reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, "_ZN6fbgemm20fbgemmInstructionSetEv"));
  if (fn == nullptr) return {std::nullopt, "fbgemm::fbgemmInstructionSet() is not in this process (no fbgemm)"};
  const auto isa = static_cast<InstSet>(fn());
  // fbgemm's PackingTraits<int8_t, int32_t, isa>::getMatrixPackBParams(): KCB, NCB (blocking()'s table).
  switch (isa) {
    case InstSet::avx2:
      return {Blocking{"avx2", 512, 8}, "fbgemm::fbgemmInstructionSet(): avx2"};
    case InstSet::avx512:
    case InstSet::avx512_ymm: {
      const char* name = isa == InstSet::avx512 ? "avx512" : "avx512_ymm";
      return {Blocking{name, 256, 32}, cat("fbgemm::fbgemmInstructionSet(): ", name)};
    }
    case InstSet::avx512_vnni:
    case InstSet::avx512_vnni_ymm: {
      const char* name = isa == InstSet::avx512_vnni ? "avx512_vnni" : "avx512_vnni_ymm";
      return {Blocking{name, 512, 48}, cat("fbgemm::fbgemmInstructionSet(): ", name)};
    }
    case InstSet::anyarch:
    case InstSet::sve:
      break;
  }
  return {std::nullopt,
          cat("fbgemm reports instruction set ", static_cast<int>(isa), ", which has no int8 packing here")};
}

}  // namespace

std::optional<Blocking> blocking(std::string* why) {
  static const Found found = ask();  // fbgemm decides once per process too
  if (why) *why = found.how;
  return found.blocking;
}

int64_t packed_linear_bytes(int64_t in, int64_t out, const Blocking& b) {
  const auto up = [](int64_t n, int64_t m) { return (n + m - 1) / m * m; };
  return up(in, b.k_block) * up(out, b.n_block) + 3 * 4 * out;
}

}  // namespace tvie::trace::fbgemm
