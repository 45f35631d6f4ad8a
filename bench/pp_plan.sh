#!/bin/sh
# bench/pp_plan.sh BUILD [RUNS] - the time of planning a 1F1B, 8-stage,
# 32-micro-batch split of a 48-layer GPT-class graph (bench/gen_gpt.py:
# GPT-2 XL's shape, batch 1, sequence 1024, fp32, Adam): every stage's
# training graph, its plan and verification, from the command line
# (docs/distributed.md records the figure; the target is under 2 s).
set -eu
build=${1:?usage: bench/pp_plan.sh BUILD [RUNS]}
runs=${2:-5}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$dir/gen_gpt.py" --layers 48 -o "$tmp/gpt48.json"
i=0
while [ "$i" -lt "$runs" ]; do
  s=$(date +%s.%N)
  "$build/memplan" plan "$tmp/gpt48.json" --train --pp 8 --microbatches 32 \
    --schedule 1f1b > "$tmp/out.txt"
  e=$(date +%s.%N)
  echo "$s $e" | awk '{printf "%.3f\n", $2 - $1}'
  i=$((i + 1))
done | sort -n | awk '{a[NR] = $1} END {printf "runs %d, seconds: min %s, median %s, max %s\n", NR, a[1], a[int((NR + 1) / 2)], a[NR]}'
grep -c '^[0-9]' "$tmp/out.txt" | awk '{print "stages planned:", $1}'
