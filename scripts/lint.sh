#!/usr/bin/env bash
# Lint: clang-tidy with the root .clang-tidy on every C++ file of lib/, examples/, bench/ and research/ (warnings are
# errors), clang-format's check, the layering rules of docs/architecture.md, no dates in lib/ and no docs paragraph
# over 1,200 characters. Its own build folder
# (build-lint: configured without precompiled headers, which clang cannot read from GCC; nothing is built).
# Usage: scripts/lint.sh [files...]   (default: all)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$TVIE_ROOT"
for tool in clang-tidy clang-format; do
  if ! command -v "$tool" >/dev/null; then
    say "installing $tool (Debian)"
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get install -y -q "$tool" >&2
  fi
done
py="$("$TVIE_ROOT/scripts/setup.sh")"
lint_dir="$TVIE_ROOT/build-lint"
# Configured again when a CMake file changed since (a new program's compile command, its include folders).
stale() {
  [ ! -f "$lint_dir/compile_commands.json" ] ||
    [ -n "$(find "$TVIE_ROOT/CMakeLists.txt" "$TVIE_ROOT/lib" "$TVIE_ROOT/bench" "$TVIE_ROOT/research" "$TVIE_ROOT/examples" \
      "$TVIE_ROOT/tests" "$TVIE_ROOT/cmake" \( -name CMakeLists.txt -o -name '*.cmake' \) \
      -newer "$lint_dir/compile_commands.json" -print -quit)" ]
}
if stale; then
  args=(-S "$TVIE_ROOT" -B "$lint_dir" -DCMAKE_BUILD_TYPE=Release -DTVIE_USE_PCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
  [ -n "$py" ] && args+=(-DTVIE_PYTHON="$py")
  [ -d "$TVIE_HOME/gloo-headers/gloo" ] && args+=(-DTVIE_GLOO_INCLUDE_DIR="$TVIE_HOME/gloo-headers")
  say "configuring $lint_dir"
  mkdir -p "$lint_dir"
  cmake "${args[@]}" >"$lint_dir/configure.log" 2>&1 || { tail -20 "$lint_dir/configure.log" >&2; exit 1; }
  touch "$lint_dir/compile_commands.json"  # CMake leaves an unchanged file as it was
fi

rc=0
# 1. Layering (docs/architecture.md): what may not include what.
layer_rule() {  # layer_rule "what" pattern files...
  local what="$1" pattern="$2"; shift 2
  if grep -nE "$pattern" "$@"; then echo "lint: layering: $what" >&2; rc=1; fi
}
layer_rule "training knows nothing of distribution" '#include <tvie/dist\.hpp>|#include "distributed/' \
  lib/include/tvie/train.hpp lib/src/scenarios/train.cpp
layer_rule "the command line builds no report and no JSON by hand (parse -> run -> emit)" \
  'nlohmann|to_json_string|to_csv_string|Report report;|report\.(context|result|settings) =' lib/cli/*.cpp lib/cli/*.hpp
# Every include against the order of the layers (docs/architecture.md's table).
if ! python3 scripts/layers.py >&2; then
  echo "lint: layering: an include goes up a layer, or a file is in no layer (docs/architecture.md)" >&2
  rc=1
fi

# No std::filesystem::remove_all: the LibTorch 2.11 build of the GPU machine exports one from libtorch.so that jumps to
# address 0 (tests/helpers.hpp, remove_tree, says more).
if git grep -nE 'remove_all\(' -- 'lib/*' 'tests/*' 'examples/*' 'bench/*' 'research/*' | grep -v '^tests/helpers.hpp:'; then
  echo "lint: std::filesystem::remove_all: use tvie::test::remove_tree (tests/helpers.hpp) or POSIX nftw" >&2
  rc=1
fi

# Comments say what the code does now: no dates in lib/'s code (history is in git and CHANGELOG.md).
if git grep -nE '20[0-9]{2}-[01][0-9]-[0-3][0-9]' -- 'lib/*.cpp' 'lib/*.hpp' 'lib/*.in'; then
  echo "lint: a date in lib/: say what the code does now (history goes to git and CHANGELOG.md)" >&2
  rc=1
fi
# docs/results/ has an index by question that lists every file (scripts/results-index.py writes it).
if ! python3 scripts/results-index.py --check >&2; then
  echo "lint: docs/results/README.md's index: run scripts/results-index.py" >&2
  rc=1
fi
# The docs read as a manual: no paragraph over 1,200 characters.
if ! python3 scripts/doc-paragraphs.py >&2; then
  echo "lint: docs: split the paragraphs above (scripts/doc-paragraphs.py)" >&2
  rc=1
fi

# 2. Formatting.
mapfile -t all < <(git ls-files 'lib/*.cpp' 'lib/*.hpp' 'examples/*.cpp' 'bench/*.cpp' 'research/*.cpp' ':!research/*/onednn-bookings/*' 'tests/*.cpp' 'tests/*.hpp')
if ! clang-format --dry-run -Werror "${all[@]}" 2>/tmp/tvie-format.log; then
  head -20 /tmp/tvie-format.log >&2
  echo "lint: clang-format: run clang-format -i on the files above" >&2
  rc=1
fi

# 3. clang-tidy on the translation units.
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files 'lib/*.cpp' 'examples/*.cpp' 'bench/*.cpp' 'research/*.cpp' ':!research/*/onednn-bookings/*'); fi
say "clang-tidy on ${#files[@]} files with $TVIE_JOBS jobs"
printf '%s\n' "${files[@]}" | xargs -P "$TVIE_JOBS" -n 1 clang-tidy -p "$lint_dir" --quiet 2>/tmp/tvie-tidy.err \
  >/tmp/tvie-tidy.log || rc=1
grep -E "warning:|error:" /tmp/tvie-tidy.log >&2 || true
[ "$rc" -eq 0 ] && say "lint: clean" || say "lint: FAILED"
exit "$rc"
