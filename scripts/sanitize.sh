#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: the whole project built with -fsanitize=address,undefined in
# its own folder (build-sanitize), then every CPU test through ctest ([gpu] tests skip as usual). A finding
# stops the test that made it (halt_on_error, -fno-sanitize-recover) and the script fails.
# LibTorch itself is not instrumented: ASan sees our code's accesses and every heap block (malloc is
# intercepted); UBSan checks our code only. Suppressions, each with its reason: scripts/sanitize.supp.
# Extra arguments go to ctest (e.g. -R training); --record (first) also writes the outcome, with the commit and
# the machine, to docs/results/cpu-KIND/sanitize.txt (README cites it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
record=0
if [ "${1:-}" = "--record" ]; then record=1; shift; fi
py="$("$TVIE_ROOT/scripts/setup.sh")"
dir="${TVIE_SANITIZE_DIR:-$TVIE_ROOT/build-sanitize}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1"
args=(-S "$TVIE_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=$flags"
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined")
[ -n "$py" ] && args+=(-DTVIE_PYTHON="$py")
[ -d "$TVIE_HOME/gloo-headers/gloo" ] && args+=(-DTVIE_GLOO_INCLUDE_DIR="$TVIE_HOME/gloo-headers")
if [ ! -f "$dir/CMakeCache.txt" ]; then
  say "configuring $dir (ASan + UBSan)"
  mkdir -p "$dir"
  cmake "${args[@]}" >"$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log" >&2; exit 1; }
fi
say "building $dir with $TVIE_JOBS jobs"
cmake --build "$dir" -j "$TVIE_JOBS" >&2

supp="$TVIE_ROOT/scripts/sanitize.supp"
# detect_leaks: on, with LibTorch's never-freed singletons suppressed (sanitize.supp).
# new_delete_type_mismatch / alloc_dealloc_mismatch: off, LibTorch's own allocators pair them across
# libraries that ASan cannot see into (reported inside libtorch_cpu.so, not in tvie).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:new_delete_type_mismatch=0:alloc_dealloc_mismatch=0:detect_odr_violation=0"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cd "$dir"
rc=0
junit="$dir/Testing/tvie-junit.xml"
rm -f "$junit"
ctest --output-on-failure -j "$TVIE_JOBS" --output-junit "$junit" "$@" 2>&1 | tee "$dir/ctest-summary.log" || rc=$?
[ -f "$junit" ] && python3 "$TVIE_ROOT/scripts/test-summary.py" "$junit" | tee -a "$dir/ctest-summary.log"
if grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" Testing/Temporary/LastTest.log >/dev/null 2>&1; then
  grep -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" Testing/Temporary/LastTest.log | sort -u | head -20 >&2
  rc=1
fi
[ "$rc" -eq 0 ] && say "sanitize: clean (ASan + UBSan)" || say "sanitize: FAILED"
if [ "$record" -eq 1 ]; then
  out="$(cpu_results_dir)/sanitize.txt"
  commit="$(git -C "$TVIE_ROOT" rev-parse --short=12 HEAD)"
  [ -n "$(git -C "$TVIE_ROOT" status --porcelain -- lib tests examples bench cmake CMakeLists.txt)" ] && commit="$commit+uncommitted"
  {
    echo "# scripts/sanitize.sh (ASan + UBSan, every CPU test through ctest)"
    echo "# commit: $commit; $(date -u +%Y-%m-%d)"
    echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
    echo "# ASAN_OPTIONS=$ASAN_OPTIONS"
    tail -n 200 "$dir/ctest-summary.log" 2>/dev/null | grep -E '^[0-9]+% tests passed|Total Test time' || true
    grep -E '^tvie tests: ' "$dir/ctest-summary.log" || true
    echo "sanitizer findings: $(grep -cE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' Testing/Temporary/LastTest.log || true)"
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$dir/ctest-summary.log" |
      sed 's/^\s*/failed: /' || true
    echo "result: $([ "$rc" -eq 0 ] && echo clean || echo FAILED)"
  } >"$out"
  say "wrote $out"
fi
exit "$rc"
