#!/usr/bin/env bash
# Installs the dependencies, builds memplan twice and runs the tests in each:
#   build/       warnings as errors (-DMEMPLAN_WERROR=ON)
#   build-asan/  AddressSanitizer + UBSan (-DMEMPLAN_SANITIZE=ON)
# checks the layers on build/'s object files (scripts/check-layers.sh),
# and after each, installs it into a temporary prefix and builds and runs
# examples/runtime against the installed package (scripts/check-install.sh);
# then the thread suite under ThreadSanitizer in build-tsan/ (scripts/tsan.sh),
# and a Release build (-O3) with warnings as errors, compiled only, since
# GCC warns at -O3 about what it cannot see at -O2 (build-release/).
# Exits non-zero on any failure. Run from anywhere; paths are relative to
# the repository root. JOBS sets the build parallelism (default: all cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

./scripts/install-deps.sh

# the CUDA executor builds wherever nvcc is (the toolkit's usual place may
# be missing from PATH on a fresh login); without it the host half builds
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
if command -v nvcc >/dev/null 2>&1; then
  echo "== CUDA: $(command -v nvcc): the executor is built (GPU tests skip without a GPU)"
else
  echo "== CUDA: no nvcc: only the executor's host half is built"
fi

echo "== build (warnings as errors): build/"
cmake -S . -B build -DMEMPLAN_WERROR=ON
cmake --build build -j "$jobs"
echo "== layers: no file calls into a higher layer, no circle (docs/architecture.md)"
./scripts/check-layers.sh build
echo "== tests: build/"
ctest --test-dir build --output-on-failure
echo "== installed package: examples/runtime through find_package and pkg-config"
./scripts/check-install.sh build

echo "== build (ASan + UBSan): build-asan/"
cmake -S . -B build-asan -DMEMPLAN_WERROR=ON -DMEMPLAN_SANITIZE=ON
cmake --build build-asan -j "$jobs"
echo "== tests: build-asan/"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ctest --test-dir build-asan --output-on-failure
echo "== installed package (ASan): examples/runtime, outputs and leaks"
./scripts/check-install.sh build-asan --sanitize

echo "== ThreadSanitizer: build-tsan/, two contexts on two threads"
./scripts/tsan.sh

echo "== build (Release, warnings as errors, compile only): build-release/"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_WERROR=ON
cmake --build build-release -j "$jobs"

echo "== all tests passed (build/, build-asan/, build-tsan/)"
# Last line: the CUnit tests of both ctest runs, summed from the runner's
# own closing lines ("N passed, M failed") that ctest logged.
awk '/^[0-9]+ passed, [0-9]+ failed$/ {p += $1; f += $3}
     END {print "total: " p " passed, " f " failed"}' \
  build/Testing/Temporary/LastTest.log build-asan/Testing/Temporary/LastTest.log
