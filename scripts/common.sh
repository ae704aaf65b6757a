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
