#!/usr/bin/env bash
# Runs here (a machine with Debian's package lists): gathers into .gpu-prep/ (ignored by git, a few MiB) what
# the GPU machine lacks to build tvie: the Debian packages as .deb files (spdlog, fmt, Catch2, CLI11,
# nlohmann-json; unpacked there outside /) and the gloo headers (scripts/setup.sh fetches them).
# Then, on the GPU machine, from the repository root: scripts/gpu-check.sh (carry .gpu-prep).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
prep="$TVIE_ROOT/.gpu-prep"
rm -rf "$prep"
mkdir -p "$prep/debs"
"$TVIE_ROOT/scripts/setup.sh" >/dev/null  # the gloo headers (and apt lists) are there after it
packages=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 catch2 libcli11-dev nlohmann-json3-dev)
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! (cd "$prep/debs" && apt-get download "${packages[@]}" >/dev/null 2>&1); then
  $sudo apt-get update -qq >&2
  (cd "$prep/debs" && apt-get download "${packages[@]}" >/dev/null)
fi
if [ -d "$TVIE_HOME/gloo-headers/gloo" ]; then
  cp -r "$TVIE_HOME/gloo-headers" "$prep/gloo-headers"
else
  say "no gloo headers in $TVIE_HOME: the GPU build will have no Gloo backend (its [dist] CPU tests skip)"
fi
for f in "$prep"/debs/*%3a*; do [ -e "$f" ] && mv "$f" "${f//%3a/_}"; done  # plain file names travel anywhere
{  # the commit the device's copy of the tree is at (it travels without .git), and whether the tree differs from it
  c="$(git -C "$TVIE_ROOT" rev-parse --short=12 HEAD)"
  [ -z "$(git -C "$TVIE_ROOT" status --porcelain --untracked-files=no)" ] || c="$c with uncommitted changes"
  echo "$c"
} >"$prep/commit"
say "prepared $prep ($(du -sh "$prep" | cut -f1)): $(ls "$prep/debs" | tr '\n' ' ')"
