#!/usr/bin/env bash
# Builds the oneDNN bookings probe: what oneDNN books (memory formats and scratchpad) for the three primitives of a
# bf16 convolution, asked as LibTorch's ideep asks, on any x86-64 CPU, including kernels the CPU lacks (AMX).
#
#   research/kernel-scratch/onednn-bookings/build.sh ONEDNN_SOURCE [BUILD_DIR]
#
# ONEDNN_SOURCE is a checkout of oneDNN at the commit LibTorch bundles (LibTorch 2.14.1: v3.12.0, 80afa71049cd;
# `python -c 'import torch; print(torch.__config__.show())'` names it): the kernels' configuration, and so their
# bookings, change between oneDNN versions. It is copied into BUILD_DIR (default /tmp/tvie-onednn-bookings) and
# patched (force-amx.patch): with TVIE_FORCE_AMX set, oneDNN believes the CPU has AVX512_VNNI, AVX512_BF16,
# AVX512_FP16 and AMX (tiles, int8, bf16; palette 1: 8 tiles of 16 rows x 64 bytes, as on Intel's Xeons from the
# 4th generation on) and picks the kernels it would pick there. Nothing runs on those kernels: the probe creates
# primitive descriptors and reads what they book, nothing more. oneDNN's blocking reads the cache sizes per core:
# the host's, unless TVIE_CACHE_KIB="L1,L2,L3" (KiB per core) stands for another CPU's (the patch's third part).
#
# Only the convolution, reorder, matmul and inner-product primitives are built (about 40 minutes on 2 cores). Then
# `research/kernel-scratch/onednn-bookings/conv.py` compares the structure LibTorch gives those bookings with the measured tables and
# writes the AMX table (see its header).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() {
  echo "research/kernel-scratch/onednn-bookings/build.sh: $*" >&2
  exit 2
}
[ $# -ge 1 ] || die "usage: build.sh ONEDNN_SOURCE [BUILD_DIR] (a oneDNN checkout at LibTorch's commit)"
src="$(cd "$1" && pwd)" || die "ONEDNN_SOURCE '$1' is not a directory"
[ -f "$src/src/cpu/x64/cpu_isa_traits.cpp" ] || die "ONEDNN_SOURCE '$src' is not a oneDNN source tree"
out="${2:-/tmp/tvie-onednn-bookings}"
mkdir -p "$out"
jobs="$(nproc 2>/dev/null || echo 2)"

# The commit the copy is of (oneDNN's own version string says "N/A" when its tree is not a git checkout).
git -C "$src" rev-parse HEAD >"$out/onednn-commit" 2>/dev/null || echo "unknown (not a git checkout)" >"$out/onednn-commit"
if [ ! -f "$out/onednn/.tvie-patched" ]; then
  rm -rf "$out/onednn"
  mkdir -p "$out/onednn"
  cp -a "$src/." "$out/onednn/"
  (cd "$out/onednn" && patch -p1 -s <"$here/force-amx.patch") || die "force-amx.patch does not apply to '$src'"
  touch "$out/onednn/.tvie-patched"
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$out/onednn" -B "$out/onednn/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DONEDNN_BUILD_TESTS=OFF -DONEDNN_BUILD_EXAMPLES=OFF -DONEDNN_BUILD_DOC=OFF -DONEDNN_BUILD_GRAPH=OFF \
  -DONEDNN_ENABLE_PRIMITIVE="CONVOLUTION;REORDER;MATMUL;INNER_PRODUCT" -DONEDNN_ENABLE_WORKLOAD=TRAINING \
  -DONEDNN_CPU_RUNTIME=OMP >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log" >&2; exit 1; }
cmake --build "$out/onednn/build" -j "$jobs" >"$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2; exit 1; }
c++ -O1 -std=c++17 "$here/probe.cpp" -I"$out/onednn/include" -I"$out/onednn/build/include" \
  -L"$out/onednn/build/src" -ldnnl -Wl,-rpath,"$out/onednn/build/src" -o "$out/probe"
echo "$out/probe"
