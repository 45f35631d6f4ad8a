#!/bin/sh
# bench/calibrate_h200.sh - measure the builtin h200 profile on the H200
# and turn it into analysis/profiles/h200.json and analysis/builtin_h200.inc
# (docs/cost-model.md, "Calibrated profiles").
#
#   bench/calibrate_h200.sh bundle [DIR]   on the build machine (nvcc):
#       DIR (default build-bundle) gets memplan and memplan-validate built
#       with CUDA (build-gpu/) and the shared libraries a bare GPU box
#       lacks (validate/run-on-gpu bundle, without its models)
#   bench/calibrate_h200.sh run [DIR] [OUTDIR]   on the GPU box:
#       memplan calibrate --device h200 -o OUTDIR/h200.json (OUTDIR: $OUT
#       when set, else calibrate-out), its progress in OUTDIR/calibrate.log,
#       nvidia-smi's view of the GPU in OUTDIR/gpu.txt; exits with
#       calibrate's status. It takes about a minute or two (every benchmark
#       is a median of 7 batches of about 2 ms; the log's last lines give
#       the time); the timeout (CAL_TIMEOUT, default 480 s) keeps it within
#       one 10-minute device call
#   bench/calibrate_h200.sh install PROFILE   on the build machine:
#       analysis/profiles/h200.json from PROFILE, with the peaks calibrate
#       does not measure (flops of float64, tf32, float8, int8) kept from
#       the file it replaces and "x-source" naming the run; then
#       analysis/builtin_h200.inc (scripts/gen-builtin-profile.py). Rebuild
#       and run build/tests/memplan_tests cost (the builtin equals the file)
set -eu
cmd=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$cmd" in
bundle)
  dir=${2:-build-bundle}
  src=$root
  b="$src/build-gpu"
  PATH=/usr/local/cuda/bin:$PATH
  cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_BENCH=OFF \
        -DMEMPLAN_BUILD_TESTS=OFF -DMEMPLAN_WITH_CUDA=ON \
        -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >/dev/null
  cmake --build "$b" --target memplan memplan-validate -j2
  mkdir -p "$dir/lib"
  cp "$b/memplan" "$b/memplan-validate" "$dir/"
  tmp=$(mktemp -d)
  pkgs=$(for l in $(ldd "$dir/memplan" "$dir/memplan-validate" |
                    awk '/=> \//{print $3}' | sort -u |
           grep -v -e /usr/local/cuda -e 'lib\(c\|m\|stdc++\|gcc_s\|pthread\|dl\|rt\)\.so'); do
           dpkg -S "*/$(basename "$l")" 2>/dev/null | cut -d: -f1
         done | sort -u)
  # shellcheck disable=SC2086
  [ -z "$pkgs" ] || (cd "$tmp" && apt-get download $pkgs >/dev/null)
  for d in "$tmp"/*.deb; do [ -e "$d" ] && dpkg -x "$d" "$tmp/x"; done
  cp -a "$tmp"/x/usr/lib/x86_64-linux-gnu/*.so* "$dir/lib/" 2>/dev/null || true
  cp -a "$tmp"/x/lib/x86_64-linux-gnu/*.so* "$dir/lib/" 2>/dev/null || true
  rm -rf "$tmp"
  echo "bundle in $dir: $(du -sh "$dir" | cut -f1)"
  ;;
run)
  dir=${2:-build-bundle}
  out=${3:-${OUT:-calibrate-out}}
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CUDA_MODULE_LOADING=EAGER
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv > "$out/gpu.txt" 2>&1 || true
  s=$(date +%s)
  rc=0
  timeout "${CAL_TIMEOUT:-480}" "$dir/memplan" calibrate --device h200 \
    -o "$out/h200.json" 2> "$out/calibrate.log" || rc=$?
  e=$(date +%s)
  echo "calibrate: exit $rc after $((e - s)) s" | tee -a "$out/calibrate.log"
  tail -n 5 "$out/calibrate.log"
  exit "$rc"
  ;;
install)
  new=${2:?usage: bench/calibrate_h200.sh install PROFILE}
  cur="$root/analysis/profiles/h200.json"
  python3 - "$new" "$cur" <<'PY'
import json, sys
new, cur = sys.argv[1], sys.argv[2]
with open(new) as f:
    p = json.load(f)
with open(cur) as f:
    old = json.load(f)
if p.get("version") != 1 or "calibration" not in p:
    sys.exit("calibrate_h200.sh: %s is not a calibrated profile" % new)
# the peaks calibrate does not measure, from the data sheet as before
for k in ("float64", "tf32", "float8", "int8"):
    if k in old.get("flops", {}) and k not in p["flops"]:
        p["flops"][k] = old["flops"][k]
p["x-source"] = ("memplan calibrate --device h200 on the %s "
                 "(bench/calibrate_h200.sh); flops of dtypes it does not "
                 "measure (float64, tf32, float8, int8) from the data sheet"
                 % p.get("gpu", "GPU"))
with open(cur, "w") as f:
    json.dump(p, f, indent=1)
    f.write("\n")
PY
  python3 "$root/scripts/gen-builtin-profile.py" "$cur" \
    "$root/analysis/builtin_h200.inc"
  echo "wrote analysis/profiles/h200.json and analysis/builtin_h200.inc;" \
       "rebuild and run build/tests/memplan_tests cost"
  ;;
*)
  sed -n '2,30p' "$0"
  exit 2
  ;;
esac
