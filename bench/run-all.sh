#!/usr/bin/env bash
# run-all.sh: run every benchmark driver with the arguments of the published
# figures (docs/results.md, docs/conformance.md, docs/offload.md), and compare
# two such runs on their result figures only.
#
#   bench/run-all.sh BUILD_DIR OUT_DIR [--shared PATH] [--quick]
#   bench/run-all.sh --compare OLD_DIR NEW_DIR
#
# Run mode
#   BUILD_DIR  a CMake build (binaries in BUILD_DIR/bench/bench_*).
#   OUT_DIR    created if needed; per run NAME it writes
#                NAME.txt   stdout + stderr of the driver, then a last line
#                           "[run-all] exit status N"
#                NAME.time  /usr/bin/time -f '%e s wall %U user %M KB'
#                NAME.cmd   the command line, as run from the scratch folder
#              and run-all.info (paths, machine, load) plus run-all.log
#              (one line per run). A run whose data, binary or tool is
#              missing writes one "skipped: ..." line to NAME.txt.
#   --shared PATH  the shared data root holding bench/ (MiniMalloc, idealloc,
#              Checkmate) and corpus/ (ONNX models and node tests); default
#              <repo>/../shared.
#   --quick    only the runs that take seconds (skips bench_offsets' 1-2 min,
#              bench_maxbatch, bench_remat, bench_offload, bench_viz_corpus,
#              validate_host (bench/validate-host.sh: docs/validation.md's
#              host-side figures, about 5 min) and the 300k-node graph): a
#              smoke check.
#   env SRC    the source tree that gives examples/ and bench/gen_graph.py
#              (default: the repository this script lives in). Only read.
#   env NICE   niceness of every driver (default 19: `nice -n 19`).
#
# Nothing is written into the repository or the source tree: each driver
# runs in a scratch folder (mktemp -d under ${TMPDIR:-/tmp}, removed at the
# end) laid out as
#   SCRATCH/shared   -> the --shared root       (symlink)
#   SCRATCH/run/examples -> SRC/examples        (symlink)
#   SCRATCH/run      the working directory; generated graphs go here
# so the command lines are the documented ones ("../shared/bench/...",
# "examples/llm", "g100k.json") and the paths the drivers print are the same
# whatever BUILD_DIR, SRC or --shared are.
#
# Compare mode
#   For every NAME.txt in OLD_DIR or NEW_DIR, both files are masked and
#   diffed; it prints "NAME: same" or "NAME: DIFFERENT" with the differing
#   (masked) lines, and the wall times of both runs for information. Exit 0
#   when every pair is the same, 1 otherwise. The .time files are never
#   compared (timings only). Masking rules (a masked figure becomes "#"):
#   1. Markdown tables: in a table whose header row (the row above the
#      "|---|" row) names a column with the word cpu, wall, seconds or
#      time (any case), that column is masked in every row of the table
#      (e.g. "CPU s", "wall s", "seconds", "plan s (wall / CPU)"). Columns
#      in ms or tokens/s of a cost model (bench_offload, bench_flexgen) and
#      "est." seconds (bench_pools) are results and are kept.
#   2. Space-separated tables (bench_remat, bench_maxbatch): a header line
#      with a field wall_s, cpu_s or time_s; in the following lines (up to
#      an empty line) that do not start with "#" and have at least the
#      header's number of fields, a numeric field at such a position is
#      masked.
#   3. Anywhere: a number followed by a time unit (s, ms, us, ns, sec, secs,
#      second(s), min) is masked, so are numbers before or after the words
#      user, sys, wall (time's output), and a number next to "RSS"
#      (e.g. "20 MB max RSS").
#   4. A line with "wall seconds:" (bench_viz_corpus) is masked from there
#      to the first ";" (the seconds and the name of the slowest model).
#   So bytes, MiB, peaks, counts, ratios, overheads, bounds, statuses,
#   "verified"/"optimal", cost-model figures and exit statuses are compared.
#   Rule 3 also hides a few cost-model figures printed in seconds (e.g.
#   bench_flexgen's "3.26 s per layer"): they are derived from figures that
#   are compared.
#   Known variation between two runs of the same build (wall-clock solver
#   limits, so they depend on the machine's load): bench_offload's "offload
#   only ms" column (its ILP stops at --time-limit 10 on MobileNet and
#   ResNet50 at 0.7x/0.5x) and bench_remat's "lp" rows on MobileNet and
#   ResNet50 (Checkmate's LP stops at --time-limit 60). Every other figure
#   was identical over two full runs at load averages 2 to 22.
set -u

die() { echo "run-all.sh: $*" >&2; exit 2; }

usage() {
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------- compare
mask() {
    perl -e '
        my @l = <STDIN>;
        chomp @l;
        # rule 1: markdown tables
        my %tcol;             # masked column indices of the current table
        my $in = 0;
        for (my $i = 0; $i < @l; $i++) {
            if ($l[$i] =~ /^\s*\|/) {
                if ($i + 1 < @l && $l[$i + 1] =~ /^\s*\|[\s:|-]*-[\s:|-]*\|?\s*$/) {
                    %tcol = ();
                    my @c = split /\|/, $l[$i], -1;
                    for my $k (0 .. $#c) {
                        $tcol{$k} = 1 if $c[$k] =~ /(^|[^a-z])(cpu|wall|seconds|time)([^a-z]|$)/i;
                    }
                    $in = 1;
                    next;
                }
                next unless $in && %tcol;
                next if $l[$i] =~ /^\s*\|[\s:|-]*\|?\s*$/;
                my @c = split /\|/, $l[$i], -1;
                for my $k (keys %tcol) { $c[$k] = " # " if $k < $#c }
                $l[$i] = join "|", @c;
            } else {
                $in = 0; %tcol = ();
            }
        }
        # rule 2: space-separated tables
        my (@wcol, $hnf);
        for my $s (@l) {
            if ($s =~ /^\s*$/) { @wcol = (); next }
            next if $s =~ /^\s*\|/;
            my @f = split " ", $s;
            my @h = grep { $f[$_] =~ /^(wall|cpu|time)_s$/i } 0 .. $#f;
            if (@h) { @wcol = @h; $hnf = @f; next }
            next if !@wcol || $s =~ /^\s*#/ || @f < $hnf;
            my $ch = 0;
            for my $k (@wcol) {
                if ($k < @f && $f[$k] =~ /^-?[0-9]+(\.[0-9]+)?$/) { $f[$k] = "#"; $ch = 1 }
            }
            $s = join " ", @f if $ch;
        }
        for my $s (@l) {
            # rule 4
            $s =~ s/wall seconds:[^;]*/wall seconds: #/;
            # rule 3
            my $n = qr/[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?/;
            $s =~ s/(?<![\w.])$n\s?(s|ms|us|µs|ns|sec|secs|seconds?|min)\b(?!\/)/# $1/g;
            $s =~ s/(?<![\w.])$n(\s+(?:user|sys|wall)\b)/#$1/gi;
            $s =~ s/\b((?:user|sys|wall)\s+)$n(?![\w.])/$1#/gi;
            $s =~ s/(?<![\w.])$n\s*(?:[KMG]i?B|kB)?(\s+(?:max(?:imum)?\s+)?RSS\b)/#$1/gi;
            $s =~ s/\b(RSS:?\s*)$n(\s*(?:[KMG]i?B|kB))?/$1#/gi;
            print "$s\n";
        }
    '
}

wall_of() { # NAME.time -> "12.34 s" or "-"
    if [ -f "$1" ]; then
        grep -Eo '^[0-9.]+ s wall' "$1" | head -1 | sed 's/ wall//' || true
    else
        echo "-"
    fi
}

compare() {
    local old=$1 new=$2 bad=0 name t_old t_new
    [ -d "$old" ] || die "no folder $old"
    [ -d "$new" ] || die "no folder $new"
    local names
    names=$( (cd "$old" && ls -1 -- *.txt 2>/dev/null; cd "$new" && ls -1 -- *.txt 2>/dev/null) |
            sed 's/\.txt$//' | LC_ALL=C sort -u)
    [ -n "$names" ] || die "no NAME.txt in $old or $new"
    for name in $names; do
        t_old=$(wall_of "$old/$name.time"); t_new=$(wall_of "$new/$name.time")
        if [ ! -f "$old/$name.txt" ]; then
            echo "$name: DIFFERENT (only in $new)"; bad=1; continue
        fi
        if [ ! -f "$new/$name.txt" ]; then
            echo "$name: DIFFERENT (only in $old)"; bad=1; continue
        fi
        local d
        d=$(diff -U0 --label "$old/$name.txt" --label "$new/$name.txt" \
                <(mask < "$old/$name.txt") <(mask < "$new/$name.txt"))
        if [ -z "$d" ]; then
            echo "$name: same (wall ${t_old:--} -> ${t_new:--})"
        else
            echo "$name: DIFFERENT (wall ${t_old:--} -> ${t_new:--})"
            printf '%s\n' "$d" | sed 's/^/    /'
            bad=1
        fi
    done
    return $bad
}

main() {
if [ "${1:-}" = "--compare" ]; then
    [ $# -eq 3 ] || usage
    compare "$2" "$3"
    exit $?
fi

# -------------------------------------------------------------------- run
[ $# -ge 2 ] || usage
BUILD=$1 OUT=$2
shift 2
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPT_DIR")
SHARED=$REPO/../shared
QUICK=0
while [ $# -gt 0 ]; do
    case $1 in
    --shared) [ $# -ge 2 ] || usage; SHARED=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) usage ;;
    esac
done
SRC=${SRC:-$REPO}
NICE=${NICE:-19}
[ -d "$BUILD/bench" ] || die "$BUILD/bench is not a folder (BUILD_DIR is a CMake build)"
BUILD=$(cd "$BUILD" && pwd)
[ -d "$SRC" ] || die "SRC=$SRC is not a folder"
SRC=$(cd "$SRC" && pwd)
if [ -d "$SHARED" ]; then SHARED=$(cd "$SHARED" && pwd); fi
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (GNU time)"
OUT=$(realpath -m -- "$OUT")
case "$OUT/" in
"$(realpath -m -- "$REPO")"/* | "$SRC"/*) die "OUT_DIR $OUT is inside the source tree; use a folder outside it" ;;
esac
mkdir -p "$OUT" || die "cannot create $OUT"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/memplan-run-all.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$SCRATCH"' EXIT
ln -s "$SHARED" "$SCRATCH/shared"
mkdir "$SCRATCH/run"
ln -s "$SRC/examples" "$SCRATCH/run/examples"
RUN=$SCRATCH/run

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "build: $BUILD"
    echo "src: $SRC"
    echo "shared: $SHARED"
    echo "quick: $QUICK  nice: $NICE"
    echo "host: $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/run-all.info"
: > "$OUT/run-all.log"

log() { echo "$*" | tee -a "$OUT/run-all.log"; }

skip() { # NAME REASON
    rm -f "$OUT/$1.time" "$OUT/$1.cmd"
    echo "skipped: $2" > "$OUT/$1.txt"
    log "$(printf '%-32s skipped: %s' "$1" "$2")"
}

# run NAME NEEDS CMD...: NEEDS is a ':'-separated list of paths (relative to
# the scratch run folder) that must exist; CMD's first word is a binary name
# in BUILD/bench or a command. The command runs in SCRATCH/run.
run() {
    local name=$1 needs=$2
    shift 2
    local bin=$1
    case $bin in
    bench_*)
        [ -x "$BUILD/bench/$bin" ] || { skip "$name" "$BUILD/bench/$bin is not built"; return; }
        shift
        set -- "$BUILD/bench/$bin" "$@" ;;
    esac
    local p
    local IFS_save=$IFS
    IFS=:
    for p in $needs; do
        IFS=$IFS_save
        [ -e "$RUN/$p" ] || { skip "$name" "$p is missing ($(cd "$RUN" && readlink -m "$p"))"; return; }
    done
    IFS=$IFS_save
    printf '%q ' "$@" | sed "s|$BUILD/bench/|BUILD/bench/|; s/ \$//" > "$OUT/$name.cmd"
    echo >> "$OUT/$name.cmd"
    log "$(printf '%-32s start %s: %s' "$name" "$(date '+%H:%M:%S')" "$(cat "$OUT/$name.cmd")")"
    local rc
    (cd "$RUN" && nice -n "$NICE" /usr/bin/time -f '%e s wall %U user %M KB' \
         -o "$OUT/$name.time" "$@") > "$OUT/$name.txt" 2>&1
    rc=$?
    echo "[run-all] exit status $rc" >> "$OUT/$name.txt"
    log "$(printf '%-32s exit %d, %s' "$name" "$rc" "$(grep " s wall" "$OUT/$name.time" 2>/dev/null | head -1)")"
}

# gen_graphs NAME SPEC...: SPEC is NODES:SEED:FILE; generates each graph into
# SCRATCH/run and writes the generator's output and the graphs' sha256 (the
# generator is deterministic) to NAME.txt.
gen_graphs() {
    local name=$1
    shift
    if [ ! -f "$SRC/bench/gen_graph.py" ]; then skip "$name" "$SRC/bench/gen_graph.py is missing"; return 1; fi
    command -v python3 >/dev/null || { skip "$name" "python3 is not installed"; return 1; }
    local spec n s f cmds="" files=""
    for spec in "$@"; do
        IFS=: read -r n s f <<< "$spec"
        cmds="$cmds python3 SRC/bench/gen_graph.py $n $s -o $f;"
        files="$files $f"
    done
    echo "${cmds# }" > "$OUT/$name.cmd"
    log "$(printf '%-32s start %s: %s' "$name" "$(date '+%H:%M:%S')" "$(cat "$OUT/$name.cmd")")"
    local rc
    (cd "$RUN" && nice -n "$NICE" /usr/bin/time -f '%e s wall %U user %M KB' -o "$OUT/$name.time" \
        bash -c 'set -e; src=$1; shift; while [ $# -ge 3 ]; do python3 "$src/bench/gen_graph.py" "$1" "$2" -o "$3"; shift 3; done' \
        gen "$SRC" $(for spec in "$@"; do IFS=: read -r n s f <<< "$spec"; echo "$n $s $f"; done)
     ) > "$OUT/$name.txt" 2>&1
    rc=$?
    (cd "$RUN" && sha256sum $files && ls -l $files | awk '{print $5, $NF}') >> "$OUT/$name.txt" 2>&1
    echo "[run-all] exit status $rc" >> "$OUT/$name.txt"
    log "$(printf '%-32s exit %d, %s' "$name" "$rc" "$(grep " s wall" "$OUT/$name.time" 2>/dev/null | head -1)")"
    return $rc
}

SB=../shared/bench
SC=../shared/corpus
VGG19="$SB/checkmate/VGG19_(MLSys)_256_(224,_224,_3)_train_nx.json"
TRAIN=$(cd "$RUN" && LC_ALL=C; for f in $SB/checkmate/*_train_*.json; do [ -e "$f" ] && echo "$f"; done)
mapfile -t TRAIN_FILES <<< "$TRAIN"
[ -n "$TRAIN" ] || TRAIN_FILES=()

log "run-all: build $BUILD, src $SRC, shared $SHARED, out $OUT$([ $QUICK = 1 ] && echo ', --quick')"

# ---- seconds each
run offsets_exact             $SB/minimalloc:$SB/idealloc bench_offsets_exact --shared $SB
run corpus                    $SC/models bench_corpus $SC
run onnx_conformance_models   $SC/models bench_onnx_conformance $SC --models-only
run onnx_conformance_nodes    $SC/onnx-node bench_onnx_conformance $SC --nodes-only
run onnx_conformance_nodes_noinputs $SC/onnx-node bench_onnx_conformance $SC --nodes-only --no-inputs
run onnx_conformance_backend  $SC/onnx-backend bench_onnx_conformance $SC --backend-only
run onnx_roundtrip            $SC/models bench_onnx_roundtrip $SC
run onnx_roundtrip_nodes      $SC/onnx-node bench_onnx_roundtrip $SC --node-tests
if [ -d "$RUN/$SC/models/onnx_light" ]; then
    LIGHT=$(cd "$RUN" && LC_ALL=C; ls -1 $SC/models/onnx_light/*.onnx 2>/dev/null)
    mapfile -t LIGHT_FILES <<< "$LIGHT"
    run pools $SC/models/onnx_light bench_pools "${LIGHT_FILES[@]}"
else
    skip pools "$SC/models/onnx_light is missing"
fi
run flexgen                   examples/llm bench_flexgen examples/llm
if gen_graphs gen_graph_100k 100000:1:g100k.json 100000:2:g100k_s2.json; then
    run graphs_100k g100k.json:g100k_s2.json bench_graphs --repeat 5 g100k.json g100k_s2.json
else
    skip graphs_100k "the 100k-node graphs were not generated (gen_graph_100k.txt)"
fi

if [ $QUICK = 1 ]; then
    log "run-all: --quick: skipped offsets, graphs_300k, maxbatch, remat_*, offload_*, viz_corpus*, validate_host"
else
    # ---- a minute or more each
    run offsets               $SB/minimalloc:$SB/idealloc bench_offsets --shared $SB
    if gen_graphs gen_graph_300k 300000:1:g300k.json; then
        run graphs_300k g300k.json bench_graphs --repeat 3 g300k.json
        rm -f "$RUN/g300k.json"
    else
        skip graphs_300k "the 300k-node graph was not generated (gen_graph_300k.txt)"
    fi
    run maxbatch              "$VGG19" bench_maxbatch "$VGG19"
    if [ ${#TRAIN_FILES[@]} -gt 0 ]; then
        run remat_memplan     $SB/checkmate bench_remat --reference memplan --time-limit 60 "${TRAIN_FILES[@]}"
        run remat_checkmate   $SB/checkmate bench_remat --reference checkmate --time-limit 60 "${TRAIN_FILES[@]}"
    else
        skip remat_memplan "no $SB/checkmate/*_train_*.json"
        skip remat_checkmate "no $SB/checkmate/*_train_*.json"
    fi
    # bench_offload finds ../shared/bench/checkmate/*_train_*.json itself
    run offload_h200          $SB/checkmate bench_offload --time-limit 10 h200
    run offload_t4            $SB/checkmate bench_offload --time-limit 10 t4
    run viz_corpus            $SC/models bench_viz_corpus $SC
    # docs/validation.md's host-side figures (lowering and plans; no GPU)
    if [ -x "$BUILD/memplan" ]; then
        run validate_host     $SC/models:examples/gen bash "$SRC/bench/validate-host.sh" "$BUILD/memplan"
    else
        skip validate_host "$BUILD/memplan is not built"
    fi
    run viz_corpus_fuse       $SC/models bench_viz_corpus $SC --fuse
fi
log "run-all: done $(date '+%H:%M:%S'); outputs in $OUT"
}

# Everything above is parsed before anything runs, so editing this file
# during a run does not disturb that run.
main "$@"; exit $?
