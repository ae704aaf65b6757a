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
