#!/bin/sh
# validate/gpu-test.sh MEMPLAN EXAMPLES - the GPU test (ctest label "gpu").
# Runs `memplan validate` (which executes memplan-validate, built beside
# memplan) on examples/tiny.json and examples/offload/skip_chain.json
# (with --offload) and requires every check to pass; then `memplan
# calibrate` (every benchmark measured) and validate on its profile.
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
# memplan calibrate: a profile that --device reads, every class measured,
# and validate's prediction on it
prof=$(mktemp)
trap 'rm -f "$prof"' EXIT
"$memplan" calibrate --device gpu-test -o "$prof" || { echo "calibrate: exit $?"; exit 1; }
cat "$prof"
if grep -q '"seconds": null' "$prof"; then
  echo "calibrate: a benchmark was not measured"; exit 1
fi
out=$("$memplan" validate "$ex/tiny.json" --device "$prof" --step-times --json 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "tiny.json on the profile: exit $rc"; exit 1; }
echo "$out" | grep -q '"time_device": "gpu-test"' || { echo "tiny.json: the profile was not used"; exit 1; }
echo "$out" | grep -q '"steps_events_only": true' || { echo "tiny.json: --step-times"; exit 1; }
echo "passed"
