#!/usr/bin/env bash
# Builds the seed corpora of the fuzzers from the shared corpus into SEEDS
# (a temporary folder: never the repository):
#   SEEDS/onnx  ONNX models under 4 KiB (onnx-node, onnx-backend, models)
#   SEEDS/json  examples/*.json and up to 400 of those models converted
#               with `memplan convert`
#   SEEDS/plan  plans of fuzz_plan_json's fixed graph, one per method
#   SEEDS/csv   the first 60 lines of each MiniMalloc and idealloc trace
#               (BENCH_DIR, default CORPUS_DIR/../bench), with and without
#               the offset column
# usage: fuzz/seed.sh MEMPLAN_CLI CORPUS_DIR SEEDS [BENCH_DIR]
set -euo pipefail
cli=$1 corpus=$2 seeds=$3 bench=${4:-$2/../bench}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$seeds/onnx" "$seeds/json" "$seeds/plan" "$seeds/csv"
find "$corpus/onnx-node" "$corpus/onnx-backend" "$corpus/models" \
     -name '*.onnx' -size -4k | sort | while read -r f; do
  rel=${f#"$corpus"/}
  cp "$f" "$seeds/onnx/${rel//\//_}"
done
cp "$root"/examples/*.json "$seeds/json/"
n=0
for f in $(ls "$seeds/onnx" | head -400); do
  "$cli" convert "$seeds/onnx/$f" -o "$seeds/json/conv_$n.json" \
    >/dev/null 2>&1 && n=$((n + 1)) || true
done
# fuzz_plan_json's graph, taken from its source, planned by each method
python3 - "$root/fuzz/fuzz_plan_json.c" "$seeds/graph.json" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
body = re.search(r'graph_json\[\] =\n(.*?);\n', src, re.S).group(1)
text = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
open(sys.argv[2], 'w').write(text.replace('\\"', '"'))
PY
for m in auto size-bestfit breadth naive start-firstfit; do
  "$cli" plan "$seeds/graph.json" -o "$seeds/plan/plan_$m.json" --method "$m" \
    >/dev/null
done
"$cli" plan "$seeds/graph.json" -o "$seeds/plan/plan_a64.json" --align 64 \
  >/dev/null
for f in "$bench"/minimalloc/*.csv "$bench"/idealloc/*.csv; do
  [ -f "$f" ] || continue
  b=$(basename "$(dirname "$f")")_$(basename "$f" .csv)
  head -60 "$f" > "$seeds/csv/$b.csv"
  # with offsets: the packing of the short trace
  "$cli" offsets "$seeds/csv/$b.csv" -o "$seeds/csv/${b}_packed.csv" \
    >/dev/null 2>&1 || true
done
echo "seeds: $(ls "$seeds/onnx" | wc -l) onnx, $(ls "$seeds/json" | wc -l) json, $(ls "$seeds/plan" | wc -l) plan, $(ls "$seeds/csv" | wc -l) csv"
