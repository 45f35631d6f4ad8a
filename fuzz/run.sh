#!/usr/bin/env bash
# Runs the four fuzzers side by side, each for SECONDS with FORKS worker
# processes (libFuzzer -fork), from the seeds of fuzz/seed.sh; working
# corpora, crash/leak/timeout artifacts and logs go to OUT. An input that
# runs longer than 10 s is a hang (-timeout=10); leaks are checked after
# every input (LeakSanitizer, -detect_leaks=1); 2 GiB RSS is the limit;
# the stack is limited to 1 MiB (ulimit -s 1024; STACK_KIB overrides), so
# deep recursion shows up as a crash here rather than on a user's thread.
# The last "#N" line of OUT/NAME.log is the total executions.
# FORKS_<name> (e.g. FORKS_fuzz_json_graph=5) gives one harness its own
# worker count, so the slower harnesses can have more of the cores.
# usage: fuzz/run.sh BUILD_DIR SEEDS OUT SECONDS FORKS
set -uo pipefail
build=$1 seeds=$2 out=$3 secs=$4 forks=$5
mkdir -p "$out"
ulimit -s "${STACK_KIB:-1024}"
run() { # name seeds-subdir max_len
  mkdir -p "$out/$1.corpus" "$out/$1.artifacts"
  local var="FORKS_$1" n
  n=${!var:-$forks}
  "$build/fuzz/$1" -fork="$n" -ignore_crashes=1 -ignore_timeouts=1 \
    -ignore_ooms=1 -max_total_time="$secs" -max_len="$3" -timeout=10 \
    -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
    -artifact_prefix="$out/$1.artifacts/" "$out/$1.corpus" "$seeds/$2" \
    > "$out/$1.log" 2>&1
  echo "$1: exit $?; $(grep -E '^#[0-9]+' "$out/$1.log" | tail -1)"
}
run fuzz_onnx onnx 4096 &
run fuzz_json_graph json 8192 &
run fuzz_plan_json plan 8192 &
run fuzz_trace_csv csv 8192 &
wait
ls "$out"/*.artifacts
