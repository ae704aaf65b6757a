#!/usr/bin/env bash
# The main job: set-up if needed, build, then the side-by-side training-vs-inference comparison of the
# default model (gpt), on the GPU if there is one (GPT-2-small dimensions), else on the CPU (tiny preset).
# The inference copy is in the dtype the device runs natively (--infer-dtype auto: bf16 on a GPU or a CPU with
# bf16 units, fp32 on a CPU without them, where a bf16 copy would be emulated and slower than training).
# The JSON report lands in build/demo.json. Extra arguments are passed to `tvie compare`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$TVIE_ROOT/scripts/build.sh"
tvie="$TVIE_BUILD_DIR/bin/tvie"
if "$tvie" info 2>/dev/null | grep -q '^cuda_available: yes'; then
  set -- --model gpt --preset gpt2-small --batch 8 --device cuda "$@"
else
  set -- --model gpt --preset tiny --batch 8 --device cpu "$@"
fi
exec "$tvie" compare --steps 20 --warmup 3 --optimizer adamw --json "$TVIE_BUILD_DIR/demo.json" "$@"
