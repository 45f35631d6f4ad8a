#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages memplan builds and tests with.
# Idempotent: when every package is already installed it does nothing
# (checked with dpkg-query), so re-runs are fast. Uses sudo only when not
# running as root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  # the tests that check the docs against the binary (scripts/*.py)
  python3
  libcunit1-dev
  libglpk-dev libgraphviz-dev
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev
  # ONNX conformance with the tests' input values (onnx 1.12 test data, 40 MB)
  libonnx-testdata
  # tests of the pictures (issue 7): `dot -Tsvg` renders the DOT output,
  # headless Chromium opens the HTML report (~30 s to install, 122 MB)
  graphviz chromium
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  if [ "$status" != "installed" ]; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: not root and sudo not found; install as root: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
