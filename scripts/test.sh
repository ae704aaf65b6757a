#!/usr/bin/env bash
# Set-up if needed, build, then every test through ctest. A test that cannot run here reports "Skipped" ([gpu] tests
# without a CUDA device, [browser] tests without chromium outside CI, a kind of CPU a test is not for), and the
# summary after ctest's counts the entries that ran, were skipped (each with its reason) and failed. Extra arguments
# go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# The [browser] test needs chromium: the set-up installs it; in CI its absence fails the test instead of skipping it.
export TVIE_WITH_BROWSER=1
export TVIE_WITH_FUZZ=1
if [ "${CI:-}" = "true" ]; then export TVIE_REQUIRE_BROWSER="${TVIE_REQUIRE_BROWSER:-1}"; fi
"$TVIE_ROOT/scripts/build.sh"
cd "$TVIE_BUILD_DIR"
rc=0
junit="$TVIE_BUILD_DIR/Testing/tvie-junit.xml"
rm -f "$junit"
ctest --output-on-failure -j "$TVIE_JOBS" --output-junit "$junit" "$@" || rc=$?
# ctest counts a skipped entry among the passed: the summary says how many ran, were skipped (each with the reason
# the test binary printed, "SKIPPED [test]: why") and failed.
if [ -f "$junit" ]; then python3 "$TVIE_ROOT/scripts/test-summary.py" "$junit" || true; fi
exit "$rc"
