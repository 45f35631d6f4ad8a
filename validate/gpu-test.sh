#!/bin/sh
# validate/gpu-test.sh MEMPLAN EXAMPLES - the GPU test (ctest label "gpu").
# Runs `memplan validate` (which executes memplan-validate, built beside
# memplan) on examples/tiny.json and examples/offload/skip_chain.json
# (with --offload) and requires every check to pass.
# Exits 77 (ctest: skipped) with the reason where memplan was built without
# CUDA or no CUDA device is present.
set -u
memplan=$1
ex=$2
out=$("$memplan" validate "$ex/tiny.json" --json 2>&1)
rc=$?
case "$out" in
*"built without CUDA"*|*"no CUDA device"*|*"no usable CUDA device"*)
  echo "skipped: $out"
  exit 77;;
esac
echo "$out"
[ $rc -eq 0 ] || { echo "tiny.json: exit $rc"; exit 1; }
echo "$out" | grep -q '"all": true' || { echo "tiny.json: a check failed"; exit 1; }
out=$("$memplan" validate "$ex/offload/skip_chain.json" --budget 850MiB --offload --json 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "skip_chain.json: exit $rc"; exit 1; }
echo "$out" | grep -q '"offload_steps": [1-9]' || { echo "skip_chain.json: no offload step"; exit 1; }
echo "$out" | grep -q '"all": true' || { echo "skip_chain.json: a check failed"; exit 1; }
echo "passed"
