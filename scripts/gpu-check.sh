#!/usr/bin/env bash
# The GPU check, one command (runs on the GPU machine, from the repository root, with .gpu-prep/ carried
# there; see scripts/gpu-prepare.sh). Unpacks the Debian packages outside /, configures against the
# machine's torch, builds with all cores, runs every [gpu] test with TVIE_REQUIRE_GPU=1 (each test case in its
# own process, so that a crash or a hang in one cannot hide the others), then makes the GPU figures. Every
# step has a time limit and the whole check a budget (TVIE_GPU_CHECK_BUDGET_S, default 500 s: a short GPU lease
# is under 9 minutes); a step that would start past it is skipped and says so. The figures are written into
# build-gpu/gpu-results/gpu-<card>/ (the folder docs/results/gpu-<card>/ takes in place of the last run's), each
# headed by the GPU, driver and torch version; where $OUT is
# set (the device tool), they are also packed after every step into $OUT/gpu-results.tar, so that what was
# measured comes back even if the lease ends mid-way (two files in $OUT: the tar and gpu-check.log).
#   scripts/gpu-check.sh            the whole check (needs a CUDA device)
#   scripts/gpu-check.sh --dry-run  the same up to the first GPU step, on a CPU machine: unpack, configure,
#                                   build, and the CPU test suite (every test but [gpu]) through ctest
# TVIE_PYTHON: the python whose torch to build against (default: /opt/torch/.venv/bin/python3, the GPU
# machine's, else python3). TVIE_GPU_CHECK_STEPS: the GPU steps to run, by key (default: tests compare train-b16
# train-b16-tuned infer decode decode-wo decode-graph train-graph allreduce slices decode-slices llama plan train-fp32 train-tf32
# aoti;
# steps past the budget are skipped and say so);
# for a rerun of what failed, or for max-batch, which is not in the default (its two searches took 141 s on an H200,
# docs/results/gpu-h200/max-batch-gpt2-small.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1
prep="$root/.gpu-prep"
build="${TVIE_GPU_BUILD_DIR:-$root/build-gpu}"
res="$build/gpu-results"
budget_s="${TVIE_GPU_CHECK_BUDGET_S:-500}"
jobs="$(nproc)"
t_all=$SECONDS
rm -rf "$res"
mkdir -p "$res"
log="$res/gpu-check.log"
# The commit of the tree that is built: on the device machine the one gpu-prepare.sh recorded (its copy of the tree
# may carry a .git of an older commit: the H200 run of 2026-12-04 named the session's first commit), git's in a dry
# run here.
source_commit() {
  local c
  if [ "$dry_run" -eq 0 ] && [ -f "$prep/commit" ]; then
    cat "$prep/commit"
  elif c="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null)"; then
    [ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || c="$c with uncommitted changes"
    echo "$c"
  else
    cat "$prep/commit" 2>/dev/null || echo unknown
  fi
}
echo "# scripts/gpu-check.sh ${*:-}, commit $(source_commit), $(date -u +%F)" >"$log"

pack() {  # the figures so far into $OUT (the device tool's return folder), when there is one
  [ -n "${OUT:-}" ] || return 0
  tar -cf "$OUT/gpu-results.tar.tmp" -C "$res" . && mv "$OUT/gpu-results.tar.tmp" "$OUT/gpu-results.tar"
  cp "$log" "$OUT/gpu-check.log"
}
left_s() { echo $((budget_s - (SECONDS - t_all))); }
limit() {  # limit N: N seconds, or what is left of the budget if that is less
  local l; l="$(left_s)"
  [ "$1" -lt "$l" ] && echo "$1" || echo "$l"
}
failed=0
step() {  # step NAME MAX_S COMMAND...: runs it within min(MAX_S, budget left) (exported as STEP_LIMIT_S)
  local name="$1" max="$2" t=$SECONDS rc=0
  shift 2
  STEP_LIMIT_S="$(limit "$max")"
  if [ "$STEP_LIMIT_S" -lt 10 ]; then
    printf '[gpu-check] %-34s SKIPPED: the %d s budget is spent\n' "$name:" "$budget_s" | tee -a "$log"
    failed=1
    return 0
  fi
  "$@" || rc=$?
  if [ "$rc" -eq 0 ]; then
    printf '[gpu-check] %-34s ok (%d s)\n' "$name:" $((SECONDS - t)) | tee -a "$log"
  else
    local why="exit code $rc"
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="its $STEP_LIMIT_S s limit ran out"
    printf '[gpu-check] %-34s FAILED: %s (%d s)\n' "$name:" "$why" $((SECONDS - t)) | tee -a "$log"
    failed=1
  fi
  pack
  return 0
}
gpu_step() {  # gpu_step KEY NAME MAX_S COMMAND...: a step of the GPU part, unless TVIE_GPU_CHECK_STEPS leaves it out
  local key="$1"
  shift
  if [[ " ${TVIE_GPU_CHECK_STEPS:-tests compare train-b16 train-b16-tuned infer decode decode-wo decode-graph train-graph allreduce slices decode-slices llama plan train-fp32 train-tf32 aoti} " != *" $key "* ]]; then
    printf '[gpu-check] %-34s not asked (TVIE_GPU_CHECK_STEPS)\n' "$1:" | tee -a "$log"
    return 0
  fi
  step "$@"
}
bounded() { timeout -k 5 "$STEP_LIMIT_S" "$@"; }  # the current step's command within its limit

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
  bounded cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTVIE_PYTHON="$py" \
    -DCMAKE_PREFIX_PATH="$prep/root/usr" "${gloo[@]}" -DTVIE_BUILD_EXAMPLES=ON -DTVIE_BUILD_BENCH=OFF \
    >"$build/gpu-check-configure.log" 2>&1 || { tail -30 "$build/gpu-check-configure.log"; return 1; }
}
compile() {
  bounded cmake --build "$build" -j "$jobs" >"$build/gpu-check-build.log" 2>&1 ||
    { grep -E "error|Error" "$build/gpu-check-build.log" | head -30; return 1; }
}
export LD_LIBRARY_PATH="$prep/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

step "unpack Debian packages" 60 unpack
step "configure ($("$py" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))" 180 configure
step "build ($jobs jobs)" 900 compile
[ "$failed" -eq 0 ] || { echo "[gpu-check] stopped: the build failed (logs: $build/gpu-check-*.log)"; exit 1; }
bin="$build/bin"

if [ "$dry_run" -eq 1 ]; then
  cpu_tests() {  # every test; the [gpu] ones report Skipped with their reason on a machine without CUDA
    (cd "$build" && bounded ctest -j "$jobs" --output-on-failure >"$res/dry-run-ctest.txt" 2>&1) ||
      { tail -40 "$res/dry-run-ctest.txt"; return 1; }
    grep -E "tests passed|tests failed" "$res/dry-run-ctest.txt"
  }
  step "CPU tests (ctest)" 1200 cpu_tests
  echo "[gpu-check] dry run: stopping before the first GPU step ($((SECONDS - t_all)) s in all)" | tee -a "$log"
  exit "$failed"
fi

# Every file names what it was measured on, in a folder named after the card (gpu-h200/).
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)"
card="$(echo "${gpu_name:-unknown}" | tr 'A-Z' 'a-z' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/-$//')"
mkdir -p "$res/gpu-$card"
board() {  # board WHEN: the board as the driver reports it (form factor, power limits, clocks, ECC, throttle reasons),
  # before the first GPU step and after the last, so that a figure can be read against the board it ran on
  {
    echo "# board $1 the GPU steps; $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,pci.bus_id,memory.total,power.limit,power.default_limit,power.max_limit,clocks.sm,\
clocks.max.sm,clocks.mem,clocks.max.mem,ecc.mode.current,temperature.gpu,pstate --format=csv 2>&1 || true
    nvidia-smi -q -d POWER,CLOCK,ECC,PERFORMANCE,TEMPERATURE 2>&1 || true
    nvidia-smi -q 2>/dev/null | grep -iE "product name|product brand|form factor|board part|gpu part|module id" || true
  } >"$res/gpu-$card/board-$1.txt"
}
board before
header() {
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
  echo "# torch: $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null)"
  echo "# commit: $(source_commit)"
  echo "# date: $(date -u +%F)"
}
figure() {  # figure NAME COMMAND...: into gpu-<card>/NAME.txt the header, the command line, then its output;
  local file="$res/gpu-$card/$1.txt" json="$res/gpu-$card/$1.json"  # "{json}" in the command: that file
  shift
  local args=("${@//\{json\}/$json}")
  { header; echo "# command: tvie ${args[*]//$res\//}"; bounded "$bin/tvie" "${args[@]}"; } >"$file" 2>&1
}
backtrace() {  # backtrace NAME SPEC: a test case that died of a signal, once more under cuda-gdb (the GPU machine has
  # no gdb; cuda-gdb debugs host code too), for the stack where it died: Catch's own report names only the test
  local lim
  lim="$(limit 90)"
  if ! command -v cuda-gdb >/dev/null || [ "$lim" -lt 20 ]; then
    echo "no backtrace of '$1': $(command -v cuda-gdb >/dev/null && echo "the budget is spent" || echo "no cuda-gdb")"
    return 0
  fi
  echo "# '$1' again under cuda-gdb (within $lim s), for the stack where the signal came:"
  TVIE_REQUIRE_GPU=1 timeout -k 5 "$lim" cuda-gdb -batch -ex "set pagination off" -ex run -ex "bt 40" \
    -ex "info threads" --args "$bin/tvie_tests" "$2" </dev/null || echo "cuda-gdb: exit code $?"
}
gpu_tests() {  # each [gpu] test case in its own process, within its own limit; failures in full; a test that dies of a
  # signal once more under cuda-gdb for its backtrace
  local file="$res/gpu-$card/tests.txt" name rc n=0 bad=0
  header >"$file"
  local names=()
  mapfile -t names < <("$bin/tvie_tests" "[gpu]" --list-test-names-only | sed '/^$/d')
  [ "${#names[@]}" -gt 0 ] || { echo "no [gpu] test case listed" | tee -a "$file"; return 1; }
  for name in "${names[@]}"; do
    local spec="${name//,/\\,}" t=$SECONDS lim
    lim="$(limit 180)"
    rc=0
    [ "$lim" -ge 5 ] || { echo "NOT RUN (budget spent): $name" >>"$file"; bad=$((bad + 1)); continue; }
    TVIE_REQUIRE_GPU=1 timeout -k 5 "$lim" "$bin/tvie_tests" "$spec" --durations yes >>"$file" 2>&1 || rc=$?
    n=$((n + 1))
    if [ "$rc" -ne 0 ]; then
      bad=$((bad + 1))
      echo "FAILED (exit code $rc, $((SECONDS - t)) s): $name" | tee -a "$file" | sed 's/^/[gpu-check]   /'
      [ "$rc" -gt 128 ] && [ "$rc" -ne 137 ] && backtrace "$name" "$spec" >>"$file" 2>&1
    fi
  done
  echo "[gpu] test cases: ${#names[@]} listed, $n run, $((n - bad)) passed, $bad failed or not run" |
    tee -a "$file" | sed 's/^/[gpu-check]   /'
  [ "$bad" -eq 0 ]
}
gpu_step tests "[gpu] tests (TVIE_REQUIRE_GPU=1)" 400 gpu_tests
# With one more step and batch profiled by operator class (CUPTI's kernel times): the report `plan --from` calibrates
# the cards of its architecture with, class by class. The trained weights are also served as a generation (prompts
# of 960 tokens, 64 new): the serving peak with its KV cache beside the full-sequence forward's.
gpu_step compare "compare gpt2-small" 120 figure compare-gpt2-small compare --model gpt --preset gpt2-small --batch 8 \
  --steps 20 --warmup 3 --precision amp-bf16 --infer-dtype bf16 --new-tokens 64 --profile-classes --device cuda \
  --quiet --json {json}
# Issue 49's efficiency: GPT-2 small trained at batch 16 x 1024 as tvie's defaults run it, then as practitioners do:
# the vocabulary padded to a multiple of 64 (50,304, as nanoGPT and llm.c train it), LibTorch's fused AdamW and the
# cross-entropy without fp32 copies of the logits (--fused-loss); the MFU is the report's `of_card.peak_fraction`:
# its analytic FLOPs per second over the catalog card's dense peak.
gpu_step train-b16 "train gpt2-small b16" 90 figure train-gpt2-small-b16 train --model gpt --preset gpt2-small \
  --batch 16 --steps 20 --warmup 3 --precision amp-bf16 --device cuda --quiet --json {json}
gpu_step train-b16-tuned "train gpt2-small b16, padded, fused" 90 figure train-gpt2-small-b16-pad64-fused train \
  --model gpt --preset gpt2-small --pad-vocab 64 --fused-optimizer --fused-loss --batch 16 --steps 20 --warmup 3 --precision amp-bf16 --device cuda --quiet \
  --json {json}
gpu_step infer "infer sweep gpt2-small" 150 figure infer-gpt2-small infer --model gpt --preset gpt2-small \
  --batch 1,8,64 --dtype fp32,fp16,bf16,int8,fp8,int8-weight-only --cuda-graph --steps 20 --warmup 3 --device cuda --quiet \
  --json {json}
gpu_step decode "decode gpt2-small" 90 figure decode-gpt2-small decode --preset gpt2-small --batch 8 --prompt 128 \
  --new-tokens 128 --repetitions 3 --dtype bf16 --profile-classes --device cuda --quiet --json {json}
# The same generation with int8 Linear weights read by LibTorch's CUDA _weight_int8pack_mm (weight-only, W8A16).
gpu_step decode-wo "decode gpt2-small int8-weight-only" 60 figure decode-gpt2-small-int8-weight-only decode \
  --preset gpt2-small --batch 8 --prompt 128 --new-tokens 128 --repetitions 3 --dtype int8-weight-only --device cuda \
  --quiet --json {json}
# Decoding steps replayed from one CUDA graph beside eager ones, at batch 1 and 64 (the goal: >= 3x eager
# tokens/s at batch 1); the eager batch-1 run is the baseline of the ratio.
for b in 1 64; do
  gpu_step decode-graph "decode gpt2-small b$b eager" 40 figure "decode-gpt2-small-b$b-eager" decode --preset gpt2-small \
    --batch "$b" --prompt 128 --new-tokens 128 --repetitions 3 --dtype bf16 --device cuda --quiet --json {json}
  gpu_step decode-graph "decode gpt2-small b$b graph" 40 figure "decode-gpt2-small-b$b-graph" decode --preset gpt2-small \
    --batch "$b" --prompt 128 --new-tokens 128 --repetitions 3 --dtype bf16 --cuda-graph --device cuda --quiet \
    --json {json}
done
gpu_step train-graph "train --cuda-graph" 90 figure train-graph-gpt2-small train --model gpt --preset gpt2-small --batch 8 \
  --steps 20 --warmup 3 --optimizer sgd-momentum --cuda-graph --device cuda --quiet --json {json}
gpu_step allreduce "allreduce nccl (1 rank)" 90 figure allreduce allreduce --device cuda --min-bytes 8 \
  --max-bytes 268435456 --iters 20 --warmup 5 --json {json}
# The prediction issue's figures on a GPU: Llama 3 8B training (AdamW, pure bf16, batch 1 x 128) from slices of
# 1 and 2 blocks, then the whole model measured, which fits an H200; and the largest batch that fits.
gpu_step slices "slices llama-3-8b" 120 figure slices-llama-3-8b-bf16 train --model llama --preset llama-3-8b \
  --slice-layers 1,2 --batch 1 --steps 3 --warmup 1 --precision bf16 --optimizer adamw --device cuda --quiet \
  --json {json}
# Its generation by the same slices (bf16, batch 1, 64-token prompts, 64 new tokens): the ledger with its KV cache,
# TTFT and TPOT extrapolated to 32 blocks, beside the whole model's training above and below.
gpu_step decode-slices "decode llama-3-8b by slices" 60 figure decode-slices-llama-3-8b-bf16 decode --model llama \
  --preset llama-3-8b --slice-layers 1,2 --batch 1 --prompt 64 --new-tokens 64 --repetitions 3 --dtype bf16 \
  --device cuda --quiet --json {json}
gpu_step llama "train llama-3-8b (whole)" 180 figure train-llama-3-8b-bf16 train --model llama --preset llama-3-8b \
  --batch 1 --steps 3 --warmup 1 --precision bf16 --optimizer adamw --device cuda --quiet --json {json}
# tvie plan --measure: gpt2-small measured here, the Hopper (or this card's architecture) estimates calibrated.
gpu_step plan "plan --measure gpt2-small" 60 figure plan-gpt2-small plan --model gpt --preset gpt2-small --batch 8 \
  --precision amp-bf16 --infer-dtype bf16 --measure --steps 10 --warmup 3 --device cuda --no-host --quiet --json {json}
# Not --quiet: every probe's log line (its batch, whether it fit, its seconds) goes into the file as it ends, so that a
# search its limit cuts short says where its time went (141 s in all on an H200, fourth check).
# fp32 training with LibTorch's full-precision matmuls (its default), then on the tensor cores' TF32 mode (--tf32).
gpu_step train-fp32 "train gpt2-small fp32" 60 figure train-gpt2-small-fp32 train --model gpt --preset gpt2-small \
  --batch 8 --steps 10 --warmup 2 --precision fp32 --device cuda --quiet --json {json}
gpu_step train-tf32 "train gpt2-small fp32, TF32" 60 figure train-gpt2-small-fp32-tf32 train --model gpt \
  --preset gpt2-small --tf32 --batch 8 --steps 10 --warmup 2 --precision fp32 --device cuda --quiet --json {json}
# GPT-2 small compiled here by AOTInductor for CUDA in bf16 (examples/aoti_zoo_gpt.py, with this machine's torch) on
# weights tvie wrote, run by tvie infer --aoti at the infer step's batches: Inductor's fused kernels beside LibTorch's
# eager ones. Last: it compiles for a minute or two.
aoti_figure() {
  local params="$build/gpt2-small.params" pkg="$build/aoti-gpt2-small-cuda-bf16.pt2" log="$res/gpu-$card/aoti-export.txt"
  bounded "$bin/tvie" train --model gpt --preset gpt2-small --batch 1 --steps 1 --warmup 0 --device cuda --quiet \
    --save-parameters "$params" >"$log" 2>&1 || return $?
  bounded "$py" "$root/examples/aoti_zoo_gpt.py" "$params" "$pkg" --heads 12 --device cuda --dtype bf16 \
    --max-batch 64 >>"$log" 2>&1 || return $?
  figure aoti-gpt2-small-cuda-bf16 infer --aoti "$pkg" --input-shape 1024 --vocab 50257 --batch 1,8,64 --dtype bf16 \
    --steps 20 --warmup 3 --device cuda --quiet --json {json}
}
gpu_step aoti "infer --aoti gpt2-small (CUDA, bf16)" 240 aoti_figure
gpu_step max-batch "max batch gpt2-small" 300 figure max-batch-gpt2-small compare --model gpt --preset gpt2-small \
  --find-max-batch --max-batch-up-to 2048 --precision amp-bf16 --infer-dtype bf16 --new-tokens 0 --device cuda --json {json}
board after
echo "[gpu-check] done in $((SECONDS - t_all)) s; files in $res: $(ls "$res" | tr '\n' ' ')" | tee -a "$log"
pack
exit "$failed"
