#!/usr/bin/env bash
# Set-up if needed, build, then every test through ctest. [gpu] tests report "Skipped" on a machine
# without a CUDA device ([browser] tests without chromium, outside CI), and the reason is printed after ctest's
# summary. Extra arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# The [browser] test needs chromium: the set-up installs it; in CI its absence fails the test instead of skipping it.
export TVIE_WITH_BROWSER=1
if [ "${CI:-}" = "true" ]; then export TVIE_REQUIRE_BROWSER="${TVIE_REQUIRE_BROWSER:-1}"; fi
"$TVIE_ROOT/scripts/build.sh"
cd "$TVIE_BUILD_DIR"
rc=0
ctest --output-on-failure -j "$TVIE_JOBS" "$@" || rc=$?
# ctest shows no output of skipped tests: print their reasons (the test binary writes "SKIPPED ... : why").
if [ -f Testing/Temporary/LastTest.log ]; then
  grep -h '^SKIPPED' Testing/Temporary/LastTest.log | sort -u || true
fi
exit "$rc"
