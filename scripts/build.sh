#!/usr/bin/env bash
# Set-up if needed, configure (once), build. Extra arguments go to the CMake configure step.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
py="$("$TVIE_ROOT/scripts/setup.sh")"
args=(-S "$TVIE_ROOT" -B "$TVIE_BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}")
[ -n "$py" ] && args+=(-DTVIE_PYTHON="$py")
[ -d "$TVIE_HOME/gloo-headers/gloo" ] && args+=(-DTVIE_GLOO_INCLUDE_DIR="$TVIE_HOME/gloo-headers")
if [ ! -f "$TVIE_BUILD_DIR/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  say "configuring in $TVIE_BUILD_DIR"
  cmake "${args[@]}" "$@" >&2
fi
say "building with $TVIE_JOBS jobs"
cmake --build "$TVIE_BUILD_DIR" -j "$TVIE_JOBS" >&2
