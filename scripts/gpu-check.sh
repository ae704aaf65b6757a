#!/usr/bin/env bash
# The GPU check, one command (runs on the GPU machine, from the repository root, with .gpu-prep/ carried
# there; see scripts/gpu-prepare.sh). Unpacks the Debian packages outside /, configures against the
# machine's torch, builds with all cores, runs every [gpu] test with TVIE_REQUIRE_GPU=1, then makes the GPU
# figures. Writes at most 8 files into $OUT (default build/gpu-results/), each headed by the GPU, driver and
# torch version, and prints one summary line per step with its time.
#   scripts/gpu-check.sh            the whole check (needs a CUDA device)
#   scripts/gpu-check.sh --dry-run  the same up to the first GPU step, on a CPU machine: unpack, configure,
#                                   build, and the CPU test suite (every test but [gpu]) through ctest
# TVIE_PYTHON: the python whose torch to build against (default: /opt/torch/.venv/bin/python3, the GPU
# machine's, else python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1
prep="$root/.gpu-prep"
build="${TVIE_GPU_BUILD_DIR:-$root/build-gpu}"
out="${OUT:-$root/build/gpu-results}"
mkdir -p "$out"
jobs="$(nproc)"
t_all=$SECONDS

step() {  # step NAME COMMAND...: runs it, prints "[gpu-check] NAME: ok|FAILED (N s)"
  local name="$1" t=$SECONDS rc=0
  shift
  "$@" || rc=$?
  if [ "$rc" -eq 0 ]; then
    printf '[gpu-check] %-28s ok (%d s)\n' "$name:" $((SECONDS - t))
  else
    printf '[gpu-check] %-28s FAILED with exit code %d (%d s)\n' "$name:" "$rc" $((SECONDS - t))
    failed=1
  fi
  return 0
}
failed=0

py="${TVIE_PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then py=/opt/torch/.venv/bin/python3; else py="$(command -v python3)"; fi
fi
[ -d "$prep/debs" ] || { echo "gpu-check: $prep/debs is missing: run scripts/gpu-prepare.sh first and carry .gpu-prep" >&2; exit 2; }

unpack() {
  rm -rf "$prep/root"
  mkdir -p "$prep/root"
  for deb in "$prep"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$prep/root"
    else  # ar + tar where dpkg is missing
      local d; d="$(mktemp -d)"
      (cd "$d" && ar x "$deb" && tar xf data.tar.* -C "$prep/root")
      rm -rf "$d"
    fi
  done
}
configure() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  local gloo=()
  [ -d "$prep/gloo-headers/gloo" ] && gloo=(-DTVIE_GLOO_INCLUDE_DIR="$prep/gloo-headers")
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTVIE_PYTHON="$py" \
    -DCMAKE_PREFIX_PATH="$prep/root/usr" "${gloo[@]}" -DTVIE_BUILD_EXAMPLES=OFF -DTVIE_BUILD_BENCH=OFF \
    >"$build/gpu-check-configure.log" 2>&1 || { tail -30 "$build/gpu-check-configure.log"; return 1; }
}
compile() {
  cmake --build "$build" -j "$jobs" >"$build/gpu-check-build.log" 2>&1 ||
    { grep -E "error|Error" "$build/gpu-check-build.log" | head -30; return 1; }
}
export LD_LIBRARY_PATH="$prep/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

mkdir -p "$build"
step "unpack Debian packages" unpack
step "configure ($("$py" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))" configure
step "build ($jobs jobs)" compile
[ "$failed" -eq 0 ] || { echo "[gpu-check] stopped: the build failed (logs: $build/gpu-check-*.log)"; exit 1; }
bin="$build/bin"

if [ "$dry_run" -eq 1 ]; then
  cpu_tests() {  # every test; the [gpu] ones report Skipped with their reason on a machine without CUDA
    (cd "$build" && ctest -j "$jobs" --output-on-failure >"$out/dry-run-ctest.txt" 2>&1) ||
      { tail -40 "$out/dry-run-ctest.txt"; return 1; }
    grep -E "tests passed|tests failed" "$out/dry-run-ctest.txt"
  }
  step "CPU tests (ctest)" cpu_tests
  echo "[gpu-check] dry run: stopping before the first GPU step ($((SECONDS - t_all)) s in all)"
  exit "$failed"
fi

# Every file names what it was measured on.
header() {
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
  echo "# torch: $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null)"
  echo "# commit: $(cat "$prep/commit" 2>/dev/null || git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "# date: $(date -u +%F)"
}
figure() {  # figure FILE COMMAND...: the header, the command line, then its output
  local file="$1"
  shift
  { header; echo "# command: tvie ${*}"; "$bin/tvie" "$@"; } >"$out/$file" 2>&1
}
gpu_tests() {  # one process, every [gpu] test case with its duration; failures in full
  local rc=0
  {
    header
    TVIE_REQUIRE_GPU=1 "$bin/tvie_tests" "[gpu]" --durations yes 2>&1 || rc=$?
  } >"$out/gpu-h200-tests.txt"
  return "$rc"
}
step "[gpu] tests (TVIE_REQUIRE_GPU=1)" gpu_tests
tail -3 "$out/gpu-h200-tests.txt" | sed 's/^/[gpu-check]   /'
step "compare gpt2-small" figure gpu-h200-compare-gpt2-small.txt compare --model gpt --preset gpt2-small --batch 8 \
  --steps 20 --warmup 3 --precision amp-bf16 --infer-dtype bf16 --device cuda --quiet \
  --json "$out/gpu-h200-compare-gpt2-small.json"
step "infer sweep gpt2-small" figure gpu-h200-infer-gpt2-small.txt infer --model gpt --preset gpt2-small \
  --batch 1,8,64 --dtype fp32,fp16,bf16,int8,fp8 --cuda-graph --steps 20 --warmup 3 --device cuda --quiet \
  --json "$out/gpu-h200-infer-gpt2-small.json"
step "decode gpt2-small" figure gpu-h200-decode-gpt2-small.txt decode --preset gpt2-small --batch 8 --prompt 128 \
  --new-tokens 128 --repetitions 3 --dtype bf16 --device cuda --quiet
step "train --cuda-graph" figure gpu-h200-train-graph-gpt2-small.txt train --model gpt --preset gpt2-small --batch 8 \
  --steps 20 --warmup 3 --optimizer sgd-momentum --cuda-graph --device cuda --quiet
step "allreduce nccl (1 rank)" figure gpu-h200-allreduce.txt allreduce --device cuda --min-bytes 8 \
  --max-bytes 268435456 --iters 20 --warmup 5
echo "[gpu-check] done in $((SECONDS - t_all)) s; files in $out: $(ls "$out" | tr '\n' ' ')"
exit "$failed"
