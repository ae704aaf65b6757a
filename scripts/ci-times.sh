#!/usr/bin/env bash
# Times CI as CI runs it: `.ci/run` on a fresh clone of HEAD (the virtual environment and gloo headers already
# in place, as on a machine that ran it before), and writes docs/results/cpu-KIND/ci-times.md for README.md.
# Refuses a tree with uncommitted changes (docs/results/ and README.md aside): the figures name the commit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if [ -n "$(git -C "$TVIE_ROOT" status --porcelain -- . ':!docs/results' ':!README.md')" ]; then
  echo "scripts/ci-times.sh: the tree has uncommitted changes; commit them first" >&2
  exit 2
fi
commit="$(git -C "$TVIE_ROOT" rev-parse --short=12 HEAD)"
setup_start=$EPOCHREALTIME
"$TVIE_ROOT/scripts/setup.sh" >/dev/null
setup_s=$(python3 -c "print(f'{$EPOCHREALTIME - $setup_start:.1f}')")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$TVIE_ROOT" "$work/tvie"
start=$(date +%s)
rc=0
(cd "$work/tvie" && CI=true bash .ci/run) >"$work/ci.log" 2>&1 || rc=$?
total_s=$(( $(date +%s) - start ))
if [ "$rc" -ne 0 ]; then
  tail -40 "$work/ci.log" >&2
  echo "scripts/ci-times.sh: .ci/run failed ($rc); nothing written" >&2
  exit 1
fi
summary="$(grep -E '^[0-9]+% tests passed' "$work/ci.log" | tail -1)"
test_s="$(sed -n 's/^Total Test time (real) = *\([0-9.]*\) sec.*/\1/p' "$work/ci.log" | tail -1)"
skipped="$(sed -n 's/^tvie tests: .*, \([0-9]*\) skipped, .*/\1/p' "$work/ci.log" | tail -1)"
venv_size="$(du -sh "$TVIE_VENV" | cut -f1)"
machine="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
{
  echo "Measured by \`scripts/ci-times.sh\` at commit $commit on $machine, $(date -u +%F):"
  echo
  echo "| what | figure |"
  echo "|---|---|"
  echo "| \`.ci/run\` on a fresh clone (virtual environment and gloo headers present): configure, full build with precompiled headers, every test | $((total_s / 60)) min $((total_s % 60)) s |"
  echo "| of which ctest | ${test_s} s: ${summary} |"
  echo "| test cases skipped with their reason (printed after ctest's summary) | ${skipped} |"
  echo "| \`scripts/setup.sh\` when everything is present | ${setup_s} s |"
  echo "| the virtual environment with torch==$TVIE_TORCH_VERSION | ${venv_size}B installed |"
} >"$(cpu_results_dir)/ci-times.md"
cat "$(cpu_results_dir)/ci-times.md"
python3 "$TVIE_ROOT/scripts/readme-results.py"
