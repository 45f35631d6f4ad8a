#!/usr/bin/env bash
# Installs a memplan build into a temporary prefix and builds the example
# runtime (examples/runtime) against that installed package twice, through
# CMake's find_package(memplan) and through pkg-config, then runs both on
# the MLP (examples/tiny.json) and a small BERT encoder layer
# (examples/runtime/encoder_small.json): each must run inside one planned
# arena with outputs identical to a run with one allocation per tensor.
# Also checks that the shared library exports exactly the functions the
# installed headers declare (scripts/check-symbols.sh).
#
#   scripts/check-install.sh BUILD_DIR [--sanitize] [--full]
#
# --sanitize: the build has -DMEMPLAN_SANITIZE=ON; the runtime is built with
# ASan+UBSan too and run with leak detection. --full: also the BERT-base
# layer at batch 8 (examples/transformer_block.json; tens of CPU seconds).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: check-install.sh BUILD_DIR [--sanitize] [--full]}
shift
san=0 full=0
for a in "$@"; do
  case $a in
    --sanitize) san=1 ;;
    --full) full=1 ;;
    *) echo "check-install.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
echo "== install $build into a temporary prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
"$root/scripts/check-symbols.sh" "$prefix"

cmake_san=OFF make_san=0
if [ $san = 1 ]; then
  cmake_san=ON make_san=1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
echo "== examples/runtime through find_package(memplan)"
cmake -S "$root/examples/runtime" -B "$tmp/rt-cmake" \
  -DCMAKE_PREFIX_PATH="$prefix" -DMEMPLAN_RUNTIME_SANITIZE=$cmake_san >/dev/null
cmake --build "$tmp/rt-cmake" >/dev/null
echo "== examples/runtime through pkg-config"
mkdir -p "$tmp/rt-pc"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig" \
  make -s -C "$root/examples/runtime" OUT="$tmp/rt-pc" SANITIZE=$make_san >/dev/null

graphs=("$root/examples/tiny.json" "$root/examples/runtime/encoder_small.json")
if [ $full = 1 ]; then
  graphs+=("$root/examples/transformer_block.json")
fi
for bin in "$tmp/rt-cmake/memplan_runtime" "$tmp/rt-pc/memplan_runtime"; do
  for gr in "${graphs[@]}"; do
    echo "-- ${bin#$tmp/} $(basename "$gr")"
    "$bin" "$gr" --quiet
  done
done
# the comparison has teeth: one tensor moved onto a live one must differ
set +e
"$tmp/rt-cmake/memplan_runtime" "$root/examples/runtime/encoder_small.json" \
  --quiet --tamper >/dev/null
rc=$?
set -e
if [ $rc != 1 ]; then
  echo "check-install: --tamper should make the outputs differ (exit 1), got $rc" >&2
  exit 1
fi
echo "-- --tamper: a tensor moved onto a live one is caught (outputs differ)"
echo "== installed package OK"
