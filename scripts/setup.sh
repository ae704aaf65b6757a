#!/usr/bin/env bash
# Installs what tvie needs and is missing; idempotent (a second run with everything present takes seconds).
#  - Debian packages: compiler, CMake, spdlog, fmt, Catch2 v2, CLI11, nlohmann-json (apt-get, as root or via sudo);
#    with TVIE_WITH_BROWSER=1 (scripts/test.sh) also chromium, for the HTML report's browser test; with
#    TVIE_WITH_FUZZ=1 (scripts/test.sh) clang, for the --config fuzz test
#  - LibTorch: the PyPI torch==2.14.1 wheel in a virtual environment outside the clone
#    ($TVIE_VENV, default ~/.cache/tvie/venv-torch-2.14.1). Skipped when the user brings their own:
#    TVIE_PYTHON=<python with torch> or CMAKE_PREFIX_PATH containing a LibTorch.
#  - Gloo headers for c10d's ProcessGroupGloo (distributed training on CPU), from PyPI: see fetch_gloo_headers.
# Prints nothing on stdout but, at the end, the python to configure with (empty for a user's LibTorch).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# --- Debian packages -------------------------------------------------------------------------------
packages=(g++ cmake make python3 python3-venv libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3/venv may come from elsewhere (pyenv): accept a working `python3 -m venv` instead of the packages.
if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing=("${missing[@]/python3-venv}"); missing=("${missing[@]/python3}")
fi
command -v cmake >/dev/null 2>&1 && missing=("${missing[@]/cmake}")
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi

# Headless Chromium for the [browser] tests (scripts/test.sh asks for it with TVIE_WITH_BROWSER=1; the demo does
# not need it). A failed install is not fatal here: those tests then say that chromium is missing.
if [ "${TVIE_WITH_BROWSER:-0}" = "1" ] && ! command -v chromium >/dev/null 2>&1 \
    && ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  say "installing chromium (headless, for the HTML report's browser test)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium; } >&2 \
    || say "could not install chromium: the [browser] tests will report it missing"
fi

# clang (libFuzzer and the sanitizers) for the --config fuzz test (scripts/fuzz.sh; scripts/test.sh asks for it with
# TVIE_WITH_FUZZ=1). A failed install is not fatal: that test then reports itself skipped, saying why.
if [ "${TVIE_WITH_FUZZ:-0}" = "1" ] && ! command -v clang++ >/dev/null 2>&1; then
  say "installing clang (libFuzzer, for the --config fuzz test)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang; } >&2 \
    || say "could not install clang: the fuzz test will report itself skipped"
fi

# --- Gloo headers ---------------------------------------------------------------------------------
# The torch wheel contains Gloo (compiled into libtorch_cpu) and c10d's ProcessGroupGloo.hpp, but not the gloo
# headers that header includes; Debian's libgloo-dev (2022) predates the store interface it overrides. The
# horovod sdist on PyPI vendors a recent enough gloo: tvie takes its headers (nothing is built from it) into
# $TVIE_HOME/gloo-headers, with gloo/config.h generated for the TCP transport only.
fetch_gloo_headers() {  # fetch_gloo_headers PYTHON
  local dir="$TVIE_HOME/gloo-headers" stamp="$TVIE_HOME/gloo-headers/.tvie-gloo-from-horovod-$TVIE_GLOO_SOURCE_VERSION"
  [ -f "$stamp" ] && return 0
  say "fetching gloo headers (horovod==$TVIE_GLOO_SOURCE_VERSION sdist from PyPI, 3.5 MB)"
  local tmp; tmp="$(mktemp -d)"
  if ! "$1" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
      "horovod==$TVIE_GLOO_SOURCE_VERSION" -d "$tmp" >&2; then
    say "could not download the gloo headers: distributed training on CPU (Gloo) will be unavailable"
    rm -rf "$tmp"; return 0
  fi
  local src="horovod-$TVIE_GLOO_SOURCE_VERSION/third_party/gloo"
  tar xzf "$tmp/horovod-$TVIE_GLOO_SOURCE_VERSION.tar.gz" -C "$tmp" "$src/gloo"
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$tmp/$src" && find gloo -name '*.h' | tar cf - -T -) | tar xf - -C "$dir"
  sed -e 's/@GLOO_VERSION_MAJOR@/0/; s/@GLOO_VERSION_MINOR@/5/; s/@GLOO_VERSION_PATCH@/0/' \
      -e 's/#cmakedefine01 GLOO_HAVE_TRANSPORT_TCP$/#define GLOO_HAVE_TRANSPORT_TCP 1/' \
      -e 's/#cmakedefine01 \([A-Z_]*\)/#define \1 0/' "$tmp/$src/gloo/config.h.in" >"$dir/gloo/config.h"
  rm -rf "$tmp"
  touch "$stamp"
}

# --- LibTorch ------------------------------------------------------------------------------------------
if [ -n "${TVIE_PYTHON:-}" ]; then
  "$TVIE_PYTHON" -c 'import torch' >/dev/null 2>&1 || { say "TVIE_PYTHON=$TVIE_PYTHON has no torch"; exit 2; }
  fetch_gloo_headers "$TVIE_PYTHON"
  echo "$TVIE_PYTHON"; exit 0
fi
cmake_prefix="${CMAKE_PREFIX_PATH:-}"
for prefix in ${cmake_prefix//:/ }; do
  if ls "$prefix"/TorchConfig.cmake "$prefix"/share/cmake/Torch/TorchConfig.cmake "$prefix"/Torch/TorchConfig.cmake >/dev/null 2>&1; then
    say "using the LibTorch in CMAKE_PREFIX_PATH ($prefix)"
    python3 -m pip --version >/dev/null 2>&1 && fetch_gloo_headers python3
    echo ""; exit 0
  fi
done
py="$TVIE_VENV/bin/python"
stamp="$TVIE_VENV/.tvie-torch-$TVIE_TORCH_VERSION"
if [ ! -f "$stamp" ]; then
  say "installing torch==$TVIE_TORCH_VERSION into $TVIE_VENV (first run: about 3 GB of wheels, a few minutes)"
  mkdir -p "$TVIE_HOME"
  [ -x "$py" ] || python3 -m venv "$TVIE_VENV" >&2
  "$py" -m pip install -q --disable-pip-version-check "torch==$TVIE_TORCH_VERSION" >&2
  "$py" -W ignore -c "import torch; assert torch.__version__.startswith('$TVIE_TORCH_VERSION'), torch.__version__" >&2
  touch "$stamp"
fi
fetch_gloo_headers "$py"
echo "$py"
