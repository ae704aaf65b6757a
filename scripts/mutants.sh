#!/usr/bin/env bash
# Proves that the suite can fail: every mutant of scripts/mutants.txt (a named one-line change of lib/: a sign, a
# dropped division, a category added twice, a skipped all-reduce, a percentile off by one, an error path that exits
# 0 ...) is applied to a scratch copy of this commit, built incrementally and tested: first the tests its record
# names, then, where they all pass, the whole suite. Prints the table (mutant, killed by which test, or SURVIVED)
# and writes it to docs/results/cpu-KIND/mutants.txt (scripts/common.sh, cpu_kind). Exit code 1 when a mutant survives or does not build.
# Run it whenever a change touches what tvie measures. The scratch copy and its build folder live in
# $TVIE_HOME/mutants (the first run builds everything there, about as long as scripts/build.sh; later runs are
# incremental). Usage: scripts/mutants.sh [NAME-REGEX]  (only the mutants whose name matches; no table written)
#        scripts/mutants.sh --update NAME-REGEX  (those mutants run again and their rows of the committed table
#        replaced, where lib/ and tests/ are those of the commit the table names: a row whose run was disturbed)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_committed_tree scripts/mutants.sh docs/results
only=()
table="$(cpu_results_dir)/mutants.txt"
if [ "${1:-}" = "--update" ]; then
  [ $# -eq 2 ] || { echo "usage: scripts/mutants.sh --update NAME-REGEX" >&2; exit 2; }
  [ -f "$table" ] || { echo "mutants: --update needs the committed table $table" >&2; exit 2; }
  base="$(sed -n 's/^# scripts\/mutants.sh at commit \([0-9a-f]*\),.*/\1/p' "$table")"
  git -C "$TVIE_ROOT" diff --quiet "$base" HEAD -- lib tests scripts/mutants.txt ||
    { echo "mutants: lib/, tests/ or the mutants differ from those of $base, the table's commit: run every mutant" >&2; exit 2; }
  only=(--only "$2" --update)
elif [ $# -gt 0 ]; then
  only=(--only "$1")
fi
scratch="$TVIE_HOME/mutants"
commit="$(git -C "$TVIE_ROOT" rev-parse HEAD)"
mkdir -p "$scratch"
[ -d "$scratch/src/.git" ] || git clone -q "$TVIE_ROOT" "$scratch/src"
# Only the files that differ are rewritten: the scratch build stays incremental from one run to the next.
git -C "$scratch/src" fetch -q "$TVIE_ROOT" HEAD
git -C "$scratch/src" checkout -q --detach -f "$commit"
say "mutants: building the scratch copy of $commit in $scratch/build"
TVIE_BUILD_DIR="$scratch/build" "$scratch/src/scripts/build.sh"
header="# scripts/mutants.sh at commit $(git -C "$TVIE_ROOT" rev-parse --short=12 HEAD), $(date -u +%F)
# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores
# each mutant: the tests its record in scripts/mutants.txt names, then (where they miss it) every test"
rc=0
python3 "$TVIE_ROOT/scripts/mutants.py" --src "$scratch/src" --build "$scratch/build" \
  --list "$scratch/src/scripts/mutants.txt" --jobs "$TVIE_JOBS" --header "$header" \
  --out "$table" "${only[@]}" || rc=$?
# The table is a file of docs/results/: its index lists it.
[ ${#only[@]} -eq 0 ] && python3 "$TVIE_ROOT/scripts/results-index.py"
exit "$rc"
