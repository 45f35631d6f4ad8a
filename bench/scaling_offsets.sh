#!/usr/bin/env bash
# scaling_offsets.sh: time and peak memory of the default `memplan offsets`
# on random traces of growing size, and the exponents of both against the
# number of buffers (least squares on log-log).
#
#   bench/scaling_offsets.sh MEMPLAN [options] [-- EXTRA OFFSETS ARGS]
#
#   MEMPLAN            the memplan binary (e.g. build/memplan)
#   --sizes "N ..."    buffers per trace (default "1000 10000 100000 1000000")
#   --seeds "S ..."    seeds of bench/gen_trace.py (default "1 2 3")
#   --max-duration D   passed to gen_trace.py (default 1000: about 145
#                      buffers live at once; 0: the whole horizon, dense)
#   --time-limit SEC   the limit to check; passed to memplan offsets when
#                      given (default: memplan's own, 10 s)
#   --keep DIR         keep the generated traces in DIR (default: a
#                      temporary folder, removed at the end)
#
# For every trace it runs, once, under /usr/bin/time:
#   MEMPLAN offsets TRACE --json [--time-limit SEC] [EXTRA...]
# and prints one table row: wall and CPU seconds of the whole process, the
# solver's own seconds (solve_seconds: the part the time limit governs),
# whether the wall time passed the limit by more than 10 %, peak RSS,
# bytes of peak RSS per buffer, arena / lower bound and the winning solver.
# Then the fitted exponents of median wall time, median CPU time and
# median peak RSS against n (over the sizes given), and "exit 1" when any
# run passed its limit by more than 10 %. The program's own footprint (its
# code and libraries: the peak RSS of the same command on a one-buffer
# trace) is measured first; "above base" is what a run holds beyond it,
# per buffer, and its exponent is fitted too.
#
# Requires python3 (the generator and the fit) and GNU time.
set -u

die() { echo "scaling_offsets.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] || { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
MEMPLAN=$1; shift
[ -x "$MEMPLAN" ] || die "$MEMPLAN is not an executable"
SIZES="1000 10000 100000 1000000"
SEEDS="1 2 3"
MAXDUR=1000
LIMIT=""
KEEP=""
EXTRA=()
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --max-duration) MAXDUR=$2; shift 2 ;;
    --time-limit) LIMIT=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown option $1" ;;
    esac
done
command -v python3 >/dev/null || die "python3 is not installed"
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is not installed"
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP" || die "cannot create $KEEP"
    DIR=$KEEP
else
    DIR=$(mktemp -d) || die "mktemp failed"
    trap 'rm -rf "$DIR"' EXIT
fi
LIM_ARGS=()
[ -n "$LIMIT" ] && LIM_ARGS=(--time-limit "$LIMIT")
EFF_LIMIT=${LIMIT:-10}

echo "# memplan offsets scaling: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# traces: python3 bench/gen_trace.py N SEED --max-duration $MAXDUR"
echo "# run: $MEMPLAN offsets TRACE --json ${LIM_ARGS[*]} ${EXTRA[*]}"
printf 'id,lower,upper,size\n0,0,1,64\n' > "$DIR/one.csv"
/usr/bin/time -f '%M' -o "$DIR/time.txt" "$MEMPLAN" offsets "$DIR/one.csv" \
    --json > /dev/null 2>&1 || die "$MEMPLAN offsets on a one-buffer trace failed"
BASE=$(tail -1 "$DIR/time.txt")
echo "# the program's own footprint (one-buffer trace): $BASE KiB peak RSS"
echo
echo "| buffers | seed | wall s | CPU s | solve s | limit s | over limit | peak RSS MiB | bytes/buffer | above base, bytes/buffer | arena/LB | solver |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
RES=$DIR/results.tsv
: > "$RES"
bad=0
for n in $SIZES; do
    for s in $SEEDS; do
        tr=$DIR/trace_${n}_$s.csv
        [ -s "$tr" ] || python3 "$HERE/gen_trace.py" "$n" "$s" \
            --max-duration "$MAXDUR" -o "$tr" || die "gen_trace.py failed"
        /usr/bin/time -f '%e %U %S %M' -o "$DIR/time.txt" \
            "$MEMPLAN" offsets "$tr" --json "${LIM_ARGS[@]}" "${EXTRA[@]}" \
            > "$DIR/out.json" 2> "$DIR/err.txt"
        rc=$?
        read -r wall user sys kb < <(tail -1 "$DIR/time.txt")
        python3 - "$DIR/out.json" "$n" "$s" "$wall" "$user" "$sys" "$kb" \
            "$EFF_LIMIT" "$rc" "$RES" "$BASE" <<'EOF' || bad=1
import json, sys
out, n, s, wall, user, sys_, kb, limit, rc, res, base = sys.argv[1:]
base = int(base)
n, wall, cpu, kb, limit = int(n), float(wall), float(user) + float(sys_), int(kb), float(limit)
try:
    j = json.load(open(out))
except Exception:
    j = {}
solve = j.get("solve_seconds", float("nan"))
ratio = j.get("ratio", float("nan"))
solver = j.get("solver", "exit %s" % rc)
over = wall > 1.1 * limit
print("| %d | %s | %.2f | %.2f | %.2f | %g | %s | %.1f | %.0f | %.0f | %.4f | %s |" % (
    n, s, wall, cpu, solve, limit, "YES" if over else "no", kb / 1024.0,
    kb * 1024.0 / n, max(kb - base, 0) * 1024.0 / n, ratio, solver))
with open(res, "a") as f:
    f.write("%d\t%f\t%f\t%d\t%d\n" % (n, wall, cpu, kb, over))
sys.exit(1 if over or rc not in ("0",) else 0)
EOF
    done
done
echo
python3 - "$RES" "$BASE" <<'EOF'
import math, statistics, sys
base = int(sys.argv[2])
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for n, wall, cpu, kb, over in rows:
    by.setdefault(int(n), []).append((float(wall), float(cpu), int(kb)))
ns = sorted(by)
def fit(vals):
    xs = [math.log(n) for n in ns]
    ys = [math.log(max(v, 1e-9)) for v in vals]
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
med = {n: [statistics.median(v[i] for v in by[n]) for i in range(3)] for n in ns}
print("| buffers | median wall s | median CPU s | median peak RSS MiB | bytes/buffer | above base, bytes/buffer |")
print("|---|---|---|---|---|---|")
for n in ns:
    w, c, kb = med[n]
    print("| %d | %.2f | %.2f | %.1f | %.0f | %.0f |" % (
        n, w, c, kb / 1024, kb * 1024 / n, max(kb - base, 0) * 1024 / n))
print()
print("fitted exponents (log-log least squares over %s buffers):" % ", ".join(map(str, ns)))
print("  wall time  n^%.2f" % fit([med[n][0] for n in ns]))
print("  CPU time   n^%.2f" % fit([med[n][1] for n in ns]))
print("  peak RSS   n^%.2f" % fit([med[n][2] for n in ns]))
print("  peak RSS above the base (%d KiB)  n^%.2f" % (
    base, fit([max(med[n][2] - base, 1) for n in ns])))
EOF
if [ $bad = 1 ]; then
    echo "some run passed its time limit by more than 10 % or failed"
    exit 1
fi
exit 0
