#!/usr/bin/env bash
# Installs a memplan build into a temporary prefix and builds the example
# runtime (examples/runtime) against that installed package three times,
# through CMake's find_package(memplan), through pkg-config, and linked
# statically against libmemplan.a with `pkg-config --static` (which checks
# that memplan.pc's Libs.private is complete), then runs each on
# the MLP (examples/tiny.json) and a small BERT encoder layer
# (examples/runtime/encoder_small.json): each must run inside one planned
# arena with outputs identical to a run with one allocation per tensor.
# Also checks that the shared library exports exactly the functions the
# installed headers declare (scripts/check-symbols.sh), and that the
# installed memplan loads no CUDA library and finds the executor
# `memplan validate` runs (LIBEXECDIR/memplan/memplan-validate).
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

echo "== the installed memplan: no CUDA; memplan validate finds its executor"
if ldd "$prefix/bin/memplan" | grep -q 'libcu'; then
  echo "check-install: bin/memplan links a CUDA library" >&2
  exit 1
fi
"$prefix/bin/memplan" validate "$root/examples/tiny.json" --lower-only >/dev/null

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

echo "== examples/runtime linked statically against libmemplan.a (pkg-config --static)"
# libmemplan.a by path (the linker would take the .so for -lmemplan), whole
# (every object, so every dependency must resolve, not only those the
# runtime happens to reach), then everything memplan.pc lists for a static
# link: Requires.private packages and Libs.private (-lglpk, -pthread, -lm)
pc_env=(env PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig")
static_lib=$(ls "$prefix"/lib*/libmemplan.a | head -1)
static_libs=$("${pc_env[@]}" pkg-config --static --libs memplan | sed 's/-lmemplan\b//')
san_flags=()
if [ $san = 1 ]; then san_flags=(-fsanitize=address,undefined -fno-omit-frame-pointer); fi
mkdir -p "$tmp/rt-static"
# shellcheck disable=SC2046,SC2086
${CC:-cc} -std=c11 -O1 "${san_flags[@]}" $("${pc_env[@]}" pkg-config --cflags memplan) \
  -o "$tmp/rt-static/memplan_runtime" "$root/examples/runtime/runtime.c" \
  -Wl,--whole-archive "$static_lib" -Wl,--no-whole-archive $static_libs -lm
if ldd "$tmp/rt-static/memplan_runtime" | grep -q libmemplan; then
  echo "check-install: the static runtime links libmemplan.so" >&2
  exit 1
fi

graphs=("$root/examples/tiny.json" "$root/examples/runtime/encoder_small.json")
if [ $full = 1 ]; then
  graphs+=("$root/examples/transformer_block.json")
fi
for bin in "$tmp/rt-cmake/memplan_runtime" "$tmp/rt-pc/memplan_runtime" \
           "$tmp/rt-static/memplan_runtime"; do
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
