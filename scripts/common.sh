# Shared by the scripts: where things live. Sourced, not run.
TVIE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TVIE_TORCH_VERSION="2.14.1"
# Where the gloo headers come from (scripts/setup.sh, fetch_gloo_headers).
TVIE_GLOO_SOURCE_VERSION="0.28.1"
# The virtual environment with LibTorch lives outside the clone, so that every clone (and CI) reuses it.
TVIE_HOME="${TVIE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/tvie}"
TVIE_VENV="${TVIE_VENV:-$TVIE_HOME/venv-torch-$TVIE_TORCH_VERSION}"
TVIE_BUILD_DIR="${TVIE_BUILD_DIR:-$TVIE_ROOT/build}"
TVIE_JOBS="${TVIE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
say() { printf '[tvie setup] %s\n' "$*" >&2; }
# Refuses (exit 2, naming the changes) a tree with uncommitted changes outside the paths given (the ones the caller
# rewrites itself), so that the results it makes name the code they came from. Usage: require_committed_tree NAME
# [PATHSPEC...], e.g. require_committed_tree scripts/predict-table.sh docs/results.
require_committed_tree() {
  local name="$1"
  shift
  local excluded=()
  for p in "$@"; do excluded+=(":!$p"); done
  if [ -n "$(git -C "$TVIE_ROOT" status --porcelain -- . "${excluded[@]}")" ]; then
    echo "$name: the tree has uncommitted changes; commit them first, so that the results name the code they came from:" >&2
    git -C "$TVIE_ROOT" status --short -- . "${excluded[@]}" >&2
    exit 2
  fi
}
# The kind of CPU this is, as the kernels that run on it differ (the kinds tvie's prediction tells apart): avx2,
# avx512-no-bf16, avx512 (avx512_bf16, no AMX) or avx512-amx. Results made on a CPU go to docs/results/cpu-KIND/.
cpu_kind() {
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  case "$flags" in
    *" amx_bf16 "*) echo avx512-amx ;;
    *" avx512_bf16 "*) echo avx512 ;;
    *" avx512f "*) echo avx512-no-bf16 ;;
    *) echo avx2 ;;
  esac
}
cpu_results_dir() {  # docs/results/cpu-KIND, made if missing
  local dir
  dir="$TVIE_ROOT/docs/results/cpu-$(cpu_kind)"
  mkdir -p "$dir"
  echo "$dir"
}
