#!/usr/bin/env bash
# scaling_plan.sh: time and peak memory of `memplan plan` on random
# layered graphs (bench/gen_random_graph.py) of growing size, several
# seeds each, and the fitted growth exponents (docs/results.md, "Scaling
# of plan").
#
#   bench/scaling_plan.sh MEMPLAN OUT_DIR [--sizes "1000 10000 ..."]
#                         [--seeds "1 2 3"] [--time-limit SEC]
#                         [--args "EXTRA PLAN ARGS"]
#
# For each size n and seed: generates OUT_DIR/g_n_seed.json (kept for a
# rerun; removed with --clean), runs
#   /usr/bin/time -f '%e %U %M' MEMPLAN plan GRAPH --no-lints --json \
#       [--time-limit SEC] EXTRA
# and writes one line per run to OUT_DIR/runs.tsv:
#   n seed wall_s user_s peak_rss_kib rss_per_node_bytes solve_s arena lb
#   status exit
# Then, by least squares on log-log over every run, the exponent b of
# wall time ~ n^b, of user time, and of peak RSS ~ n^b (also of RSS less
# the smallest run's, the part that grows), printed with a table of the
# medians per size. A run over SEC * 1.1 (when --time-limit is given) is
# flagged "OVER". The program's own footprint (its code and libraries:
# the peak RSS of the same command on examples/tiny.json) is measured
# first; "above base" is what a run holds beyond it, per node, and its
# exponent is fitted too.
#
# Generated graphs are Checkmate-style random layered graphs with the same
# statistics at every size (bench/gen_random_graph.py). Nothing is written
# into the repository.
set -u
die() { echo "scaling_plan.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: $0 MEMPLAN OUT_DIR [--sizes ...] [--seeds ...] [--time-limit SEC] [--args ...]"
MEMPLAN=$1
OUT=$2
shift 2
SIZES="1000 10000 100000 1000000"
SEEDS="1 2 3"
TL=""
EXTRA=""
CLEAN=0
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --time-limit) TL=$2; shift 2 ;;
    --args) EXTRA=$2; shift 2 ;;
    --clean) CLEAN=1; shift ;;
    *) die "unknown argument $1" ;;
    esac
done
[ -x "$MEMPLAN" ] || die "$MEMPLAN is not an executable"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" || die "cannot create $OUT"
/usr/bin/time -f '%M' -o "$OUT/time.txt" "$MEMPLAN" plan \
    "$HERE/../examples/tiny.json" --no-lints --json > /dev/null 2>&1 ||
    die "$MEMPLAN plan examples/tiny.json failed"
BASE=$(tail -1 "$OUT/time.txt")
echo "the program's own footprint (examples/tiny.json): $BASE KiB peak RSS" >&2
TSV=$OUT/runs.tsv
printf 'n\tseed\twall_s\tuser_s\tpeak_rss_kib\trss_per_node_b\tsolve_s\tarena\tlb\tstatus\texit\n' > "$TSV"
for n in $SIZES; do
    for s in $SEEDS; do
        g=$OUT/g_${n}_$s.json
        [ -s "$g" ] || python3 "$HERE/gen_random_graph.py" "$n" "$s" -o "$g" ||
            die "generating $g failed"
        tl_arg=()
        [ -n "$TL" ] && tl_arg=(--time-limit "$TL")
        # shellcheck disable=SC2086
        /usr/bin/time -f '%e %U %M' -o "$OUT/time.txt" \
            "$MEMPLAN" plan "$g" --no-lints --json "${tl_arg[@]}" $EXTRA \
            > "$OUT/out.json" 2> "$OUT/err.txt"
        rc=$?
        read -r wall user rss < <(tail -1 "$OUT/time.txt")
        solve=$(grep -o '"solve_seconds": *[0-9.e+-]*' "$OUT/out.json" | head -1 | sed 's/.*: *//')
        arena=$(grep -o '"arena_bytes": *[0-9]*' "$OUT/out.json" | head -1 | sed 's/.*: *//')
        lb=$(grep -o '"lower_bound_bytes": *[0-9]*' "$OUT/out.json" | head -1 | sed 's/.*: *//')
        status=$(grep -o '"status": *"[a-z_]*"' "$OUT/out.json" | head -1 | sed 's/.*: *"//; s/"//')
        per=$(( rss * 1024 / n ))
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$s" "$wall" \
            "$user" "$rss" "$per" "${solve:-?}" "${arena:-?}" "${lb:-?}" \
            "${status:-?}" "$rc" >> "$TSV"
        echo "n=$n seed=$s: ${wall} s wall, ${user} s user, ${rss} KiB peak RSS" \
             "(${per} B/node), arena/LB $(awk -v a="${arena:-0}" -v l="${lb:-0}" \
             'BEGIN { if (l > 0) printf "%.4f", a / l; else print "?" }'), exit $rc" >&2
        [ "$CLEAN" = 1 ] && rm -f "$g"
    done
done
rm -f "$OUT/time.txt" "$OUT/out.json" "$OUT/err.txt"
python3 - "$TSV" "${TL:-0}" "$BASE" <<'EOF'
import math, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
tl = float(sys.argv[2])
fixed = int(sys.argv[3])
def fit(xs, ys):
    lx = [math.log(x) for x in xs]; ly = [math.log(max(y, 1e-9)) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else float("nan")
n = [int(r[0]) for r in rows]
wall = [float(r[2]) for r in rows]
user = [float(r[3]) for r in rows]
rss = [int(r[4]) for r in rows]
base = min(rss)
print("| n | runs | wall s (median) | user s (median) | peak RSS MiB (median) | bytes/node (median) | above base, bytes/node (median) | arena/LB (median) | worst wall / limit |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for size in sorted(set(n)):
    sel = [r for r in rows if int(r[0]) == size]
    ratio = [int(r[7]) / int(r[8]) for r in sel if r[7].isdigit() and r[8].isdigit() and int(r[8]) > 0]
    worst = max(float(r[2]) for r in sel)
    over = "%.2f%s" % (worst / tl, " OVER" if worst > 1.1 * tl else "") if tl > 0 else "-"
    print("| %d | %d | %.2f | %.2f | %.1f | %d | %d | %s | %s |" % (
        size, len(sel), statistics.median(float(r[2]) for r in sel),
        statistics.median(float(r[3]) for r in sel),
        statistics.median(int(r[4]) for r in sel) / 1024,
        statistics.median(int(r[5]) for r in sel),
        statistics.median(max(int(r[4]) - fixed, 0) * 1024 // size for r in sel),
        "%.4f" % statistics.median(ratio) if ratio else "?", over))
print()
print("fitted exponents (least squares on log-log, every run):")
print("  wall time ~ n^%.3f" % fit(n, wall))
print("  user time ~ n^%.3f" % fit(n, user))
print("  peak RSS  ~ n^%.3f" % fit(n, rss))
print("  peak RSS above the program's own %d KiB ~ n^%.3f" % (
    fixed, fit(n, [max(b - fixed, 1) for b in rss])))
grow = [(a, b - base) for a, b in zip(n, rss) if b - base > 0]
if len(set(a for a, _ in grow)) > 1:
    print("  peak RSS less the smallest run's (%d KiB) ~ n^%.3f" % (
        base, fit([a for a, _ in grow], [b for _, b in grow])))
bad = [r for r in rows if r[10] != "0"]
if bad:
    print("runs with a non-zero exit: %d" % len(bad))
EOF
