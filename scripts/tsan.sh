#!/usr/bin/env bash
# ThreadSanitizer check: builds the library and the tests with
# -DMEMPLAN_TSAN=ON in build-tsan/ (benchmarks and CUDA off) and runs the
# thread suite (tests/test_threads.c: two contexts on two threads) under
# TSan. TSan cannot be combined with ASan, hence a build of its own. JOBS
# sets the build parallelism; TSAN_BUILD_DIR the build directory.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
build=${TSAN_BUILD_DIR:-build-tsan}
cmake -S . -B "$build" -DMEMPLAN_TSAN=ON -DMEMPLAN_WERROR=ON \
  -DMEMPLAN_BUILD_BENCH=OFF -DMEMPLAN_WITH_CUDA=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target memplan_tests
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
  "$build/tests/memplan_tests" --group threads
echo "== TSan: no data race in the thread suite"
