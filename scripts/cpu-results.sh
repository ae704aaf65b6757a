#!/usr/bin/env bash
# Regenerates the CPU results quoted in README.md into docs/results/ (every figure there comes from here).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$TVIE_ROOT/scripts/build.sh"
out="$TVIE_ROOT/docs/results"
mkdir -p "$out"
machine="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%F)"
bin="$TVIE_BUILD_DIR/bin"
run() {  # run NAME COMMAND...: stdout to docs/results/NAME.txt with a header naming the machine and command
  local name="$1"; shift
  { echo "# machine: $machine"; echo "# command: ${*/#$TVIE_ROOT\//}"; "$@"; } >"$out/$name.txt"
}
for model in mlp cnn gpt; do
  run "cpu-compare-$model-tiny" "$bin/tvie" compare --model "$model" --preset tiny --batch 8 --steps 20 --warmup 3 \
      --optimizer adamw --device cpu --infer-dtype bf16 --quiet --json "$out/cpu-compare-$model-tiny.json"
done
run "cpu-compare-gpt-small" "$bin/tvie" compare --model gpt --preset small --batch 8 --steps 10 --warmup 2 \
    --optimizer adamw --device cpu --infer-dtype bf16 --quiet --json "$out/cpu-compare-gpt-small.json"
run "cpu-compare-gpt-small-fp32" "$bin/tvie" compare --model gpt --preset small --batch 8 --steps 10 --warmup 2 \
    --optimizer adamw --device cpu --infer-dtype fp32 --quiet --json "$out/cpu-compare-gpt-small-fp32.json"
run "cpu-bench-overhead" "$bin/bench_overhead"

# The training path on gpt tiny: fp32, amp-bf16, pure bf16, and activation checkpointing (README's table).
for variant in "fp32 none" "amp-bf16 none" "bf16 none" "fp32 blocks" "amp-bf16 blocks"; do
  set -- $variant
  run "cpu-train-gpt-tiny-$1-ckpt-$2" "$bin/tvie" train --model gpt --preset tiny --batch 16 --steps 30 --warmup 3 \
      --lr 3e-3 --precision "$1" --checkpoint "$2" --device cpu --quiet \
      --json "$out/cpu-train-gpt-tiny-$1-ckpt-$2.json"
done
# The learning run: the copy task solved (loss curve in the file).
run "cpu-train-gpt-tiny-learning" "$bin/tvie" train --model gpt --preset tiny --batch 16 --steps 300 --warmup 0 \
    --lr 3e-3 --clip 1.0 --device cpu --quiet --json "$out/cpu-train-gpt-tiny-learning.json"
# A serving load: Poisson arrivals at 50 QPS through the dynamic batcher.
run "cpu-serve-gpt-tiny-server" "$bin/tvie" serve --model gpt --preset tiny --scenario server --qps 50 --max-batch 16 \
    --max-queue-delay-us 2000 --device cpu --quiet --json "$out/cpu-serve-gpt-tiny-server.json"
# KV-cached decoding.
run "cpu-decode-gpt-small" "$bin/tvie" decode --preset small --batch 4 --prompt 64 --new-tokens 64 --repetitions 3 \
    --device cpu --quiet
# The table README shows, made from the JSON reports above.
python3 - "$out" >"$out/cpu-train-gpt-tiny-table.md" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
def mib(b): return f"{b / 2**20:.2f}"
rows = []
for precision, ckpt in [("fp32", "none"), ("amp-bf16", "none"), ("bf16", "none"), ("fp32", "blocks"), ("amp-bf16", "blocks")]:
    j = json.load(open(os.path.join(out, f"cpu-train-gpt-tiny-{precision}-ckpt-{ckpt}.json")))
    t = j["training"]; m = t["memory"]
    rows.append(f"| {precision} | {ckpt} | {mib(m['parameters'])} | {mib(m['gradients'])} | {mib(m['optimizer_state'])} | "
                f"{mib(m['weight_copies'])} | {mib(m['activations'])} | {mib(m['other'])} | {mib(m['peak'])} | "
                f"{t['step_ms']['p50']:.2f} | {t['phases']['forward']['p50_ms']:.2f} | {t['phases']['backward']['p50_ms']:.2f} | "
                f"{t['loss']['final']:.3f} |")
print("| precision | checkpoint | parameters MiB | gradients MiB | optimizer state MiB | weight copies MiB | activations MiB | other MiB | peak MiB | step p50 ms | forward p50 ms | backward p50 ms | loss after 35 steps |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
PY
python3 "$TVIE_ROOT/scripts/readme-results.py"
