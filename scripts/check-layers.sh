#!/usr/bin/env bash
# Checks the layers (docs/architecture.md) on a build's object files: no
# file calls a function, or reads a variable, that a higher layer defines,
# and no two files call each other in a circle. The include folders
# already keep a layer from including a higher layer's header (CMake gives
# each layer only its own folders and those below); this catches a call
# made through a public header or a declaration written by hand.
#
#   scripts/check-layers.sh [BUILD_DIR]        (default: build)
#
# Needs nm (binutils) and tsort (coreutils). Exit 0 when clean; 1 with
# each offending call (file -> file: symbol) or circle listed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
[ -d "$build/CMakeFiles" ] || { echo "check-layers: no build in $build" >&2; exit 1; }
build=$(cd "$build" && pwd)   # compile_commands.json names objects by absolute path

# The layers from the bottom up: a file belongs to the longest folder of
# this list that holds it. A file may use what its own layer or a lower
# one defines.
layers="core core/sched core/ops frontends analysis solvers planner report
cli validate"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The object files of the current configuration: those that
# compile_commands.json names (CMake writes it), else every object file
# of the layers' targets.
list_objects() {
  if [ -f "$build/compile_commands.json" ]; then
    # each entry: "directory" (where the command ran), then the command
    # with "-o OBJECT"
    awk '/"directory":/ { d = $0; sub(/.*"directory": *"/, "", d); sub(/".*/, "", d) }
         /"command":/ && match($0, / -o [^ "]*\.o[ "]/) {
           o = substr($0, RSTART + 4, RLENGTH - 5)
           print (o ~ /^\// ? o : d "/" o) }' "$build/compile_commands.json" |
      grep -E '/CMakeFiles/(mp_[a-z]+|memplan|memplan-validate|memplan_validate_[a-z]+)\.dir/'
  else
    find "$build" -path '*/CMakeFiles/mp_*.dir/*' -name '*.o' -o \
         -path '*/CMakeFiles/memplan.dir/*' -name '*.o' -o \
         -path '*/CMakeFiles/memplan_validate*.dir/*' -name '*.o' -o \
         -path '*/CMakeFiles/memplan-validate.dir/*' -name '*.o'
  fi
}

# object file -> its source path relative to the repository
: > "$tmp/syms"
n_obj=0
while IFS= read -r obj; do
  [ -f "$obj" ] || continue
  # BUILD/[SUBDIR/]CMakeFiles/TARGET.dir/PATH.o holds SUBDIR/PATH
  rel=${obj#"$build"/}
  sub=${rel%%CMakeFiles/*}
  rel=${rel#*CMakeFiles/*.dir/}
  rel=$sub${rel%.o}
  case $rel in
    onnx_gen/*) rel=frontends/onnx/${rel#onnx_gen/} ;; # protoc-c output
  esac
  [ -f "$root/$rel" ] || [[ $rel == frontends/onnx/onnx.pb-c.c ]] || continue
  n_obj=$((n_obj + 1))
  nm "$obj" | awk -v f="$rel" '
    NF == 3 && $2 ~ /^[TDBRC]$/ { print f, "D", $3 }
    NF == 2 && $1 == "U"        { print f, "U", $2 }' >> "$tmp/syms"
done < <(list_objects)
[ "$n_obj" -gt 0 ] || { echo "check-layers: no object files under $build" >&2; exit 1; }

# file -> file edges with the symbols, and upward ones
awk -v layers="$layers" -v up="$tmp/up" -v edges="$tmp/edges" '
  function rank(f,   i, best, bl) {
    best = 0; bl = 0
    for (i = 1; i <= nl; i++)
      if ((index(f, L[i] "/") == 1) && length(L[i]) > bl) { best = i; bl = length(L[i]) }
    return best
  }
  function unit(f,   i, best, bl) {
    best = "?"; bl = 0
    for (i = 1; i <= nl; i++)
      if ((index(f, L[i] "/") == 1) && length(L[i]) > bl) { best = L[i]; bl = length(L[i]) }
    return best
  }
  BEGIN { nl = split(layers, L, /[ \n]+/) }
  $2 == "D" { def[$3] = $1; next }
  $2 == "U" { use[++nu] = $1 SUBSEP $3 }
  END {
    for (k = 1; k <= nu; k++) {
      split(use[k], p, SUBSEP); f = p[1]; s = p[2]
      if (!(s in def) || def[s] == f) continue
      g = def[s]
      print f, g > edges
      if (rank(g) > rank(f))
        print f " (" unit(f) ") -> " g " (" unit(g) "): " s > up
    }
  }' "$tmp/syms"
touch "$tmp/up" "$tmp/edges"

st=0
# an include by a path that leaves the file's folder would get round the
# include folders CMake gives each layer
( cd "$root" && grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.\./' \
    $(git ls-files 'core/*.[ch]' 'frontends/*.[ch]' 'analysis/*.[ch]' 'solvers/*.[ch]' \
                   'planner/*.[ch]' 'report/*.[ch]' 'cli/*.[ch]' 'validate/*.[ch]' \
                   'validate/*.cu' 2>/dev/null) /dev/null ) > "$tmp/relinc" || true
if [ -s "$tmp/relinc" ]; then
  echo "check-layers: includes by a relative path out of the file's folder (name the header; CMake gives each layer its include folders):"
  sed 's/^/  /' "$tmp/relinc"
  st=1
fi
if [ -s "$tmp/up" ]; then
  echo "check-layers: calls into a higher layer (layers from the bottom: $(echo $layers)):"
  sort -u "$tmp/up" | sed 's/^/  /'
  st=1
fi
# circles between files: tsort names the files of each loop it finds
sort -u "$tmp/edges" > "$tmp/e2"
if ! tsort "$tmp/e2" > /dev/null 2> "$tmp/loops"; then
  echo "check-layers: files that call each other in a circle:"
  sed -e 's/^tsort: [^:]*: input contains a loop:$/  circle:/' \
      -e 's/^tsort: /    /' "$tmp/loops"
  st=1
fi
if [ $st = 0 ]; then
  echo "check-layers: $n_obj object files, $(sort -u "$tmp/e2" | wc -l) file-to-file dependencies, all downward or within a layer, no circle"
fi
exit $st
