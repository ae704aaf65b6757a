#!/usr/bin/env bash
# The suite built without the CPU kernel-scratch plug-in (-DTVIE_CPU_KERNEL_SCRATCH=OFF, docs/prediction.md, "Kernel
# scratch on the CPU"), in its own build folder (build-no-cpu-plugin/): every test through ctest as scripts/test.sh
# runs them. The tests that compare a CPU prediction with a measurement hold it to the tolerance they state for that
# build; those of the plug-in's own rules are not compiled. Extra arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export TVIE_BUILD_DIR="$TVIE_ROOT/build-no-cpu-plugin"
"$TVIE_ROOT/scripts/build.sh" -DTVIE_CPU_KERNEL_SCRATCH=OFF
cd "$TVIE_BUILD_DIR"
rc=0
junit="$TVIE_BUILD_DIR/Testing/tvie-junit.xml"
rm -f "$junit"
ctest --output-on-failure -j "$TVIE_JOBS" --output-junit "$junit" "$@" || rc=$?
if [ -f "$junit" ]; then python3 "$TVIE_ROOT/scripts/test-summary.py" "$junit" || true; fi
exit "$rc"
