#!/usr/bin/env bash
# The --config parser under libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer: tests/fuzz/config_fuzz.cpp
# and lib/src/core/options_file.cpp (nlohmann-json, nothing of LibTorch) built with clang++ into BUILD/fuzz, then run
# for a bounded time from the seeds in tests/fuzz/corpus (the corpus it grows stays in BUILD/fuzz/corpus). A crash,
# a sanitizer report, a leak or an exception other than InvalidArgument fails it; libFuzzer writes the input to
# BUILD/fuzz/crash-*.
# Usage: scripts/fuzz.sh [SECONDS]   (default 30; TVIE_BUILD_DIR: where BUILD is)
# Exit 77 (ctest: skipped) with the reason where clang++ with libFuzzer is not installed (scripts/setup.sh installs
# clang under TVIE_WITH_FUZZ=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
seconds="${1:-30}"
name="fuzz: the --config parser under ASan and UBSan (libFuzzer)"
cxx="${TVIE_FUZZ_CXX:-clang++}"
out="$TVIE_BUILD_DIR/fuzz"
mkdir -p "$out/corpus"
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "SKIPPED [$name]: $cxx is not installed (Debian: clang; scripts/setup.sh installs it under TVIE_WITH_FUZZ=1)"
  exit 77
fi
flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I "$TVIE_ROOT/lib/include")
sources=("$TVIE_ROOT/tests/fuzz/config_fuzz.cpp" "$TVIE_ROOT/lib/src/core/options_file.cpp")
if [ ! -x "$out/config_fuzz" ] || [ -n "$(find "${sources[@]}" "$TVIE_ROOT/lib/include/tvie/options_file.hpp" \
    "$TVIE_ROOT/lib/include/tvie/errors.hpp" -newer "$out/config_fuzz" -print -quit)" ]; then
  if ! "$cxx" "${flags[@]}" "${sources[@]}" -o "$out/config_fuzz" 2>"$out/build.log"; then
    if grep -q -e "fuzzer" -e "cannot find" "$out/build.log" && ! grep -q "error:.*\.cpp" "$out/build.log"; then
      echo "SKIPPED [$name]: $cxx cannot link libFuzzer here ($(head -1 "$out/build.log"))"
      exit 77
    fi
    cat "$out/build.log" >&2
    exit 1
  fi
fi
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cd "$out"
# -timeout: one input taking over 10 s is a finding too; -rss_limit_mb: the parser must not balloon.
# -error_exitcode=1: libFuzzer's own default, 77, is the code ctest reads as "skipped".
./config_fuzz -max_total_time="$seconds" -error_exitcode=1 -timeout_exitcode=1 -timeout=10 -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 \
  corpus "$TVIE_ROOT/tests/fuzz/corpus" 2>&1 | tail -25
echo "fuzzed for $seconds s: no crash, no sanitizer report, no unexpected exception"
