#!/usr/bin/env bash
# Checks the exported interface of an installed libmemplan.so: every
# function it exports is declared with MP_API in the installed headers
# (nothing internal leaks), every function the headers declare is
# exported (nothing declared is missing), and the SONAME carries the ABI
# version (libmemplan.so.MP_VERSION_MAJOR). Needs nm and readelf (binutils).
#
#   scripts/check-symbols.sh PREFIX          (an install prefix)
#   scripts/check-symbols.sh LIB.so INCDIR   (a build: the library and the
#                                             directory holding memplan/)
set -euo pipefail
if [ $# -ge 2 ]; then
  lib=$1 incdir=$2
else
  prefix=${1:?usage: check-symbols.sh PREFIX | LIB.so INCDIR}
  lib=$(ls "$prefix"/lib*/libmemplan.so 2>/dev/null | head -n1 || true)
  incdir=$prefix/include
fi
[ -f "$lib" ] || { echo "check-symbols: no library $lib" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBRV]$/ {print $3}' |
  grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u > "$tmp/exported"
# MP_API declarations of every header (memplan.h and the module headers it
# includes): the function name is the identifier before the first '(' of
# the declaration (declarations may span lines; comments, which may name
# MP_API, and preprocessor lines are left out)
grep -h -v "^[[:space:]]*#" "$incdir"/memplan/*.h | tr '\n' ' ' |
  sed -E 's@/\*([^*]|\*+[^*/])*\*+/@ @g' | grep -o 'MP_API[^;]*;' |
  sed -E 's/\(.*//; s/.*[ *]//' | sort -u > "$tmp/declared"
leaks=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
st=0
if [ -n "$leaks" ]; then
  echo "check-symbols: exported but not declared in the headers:" >&2
  echo "$leaks" | sed 's/^/  /' >&2
  st=1
fi
if [ -n "$missing" ]; then
  echo "check-symbols: declared in the headers but not exported:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  st=1
fi
# the ABI version: SONAME libmemplan.so.MAJOR, MAJOR from the header
major=$(grep -h '#define MP_VERSION_MAJOR' "$incdir"/memplan/*.h | awk '{print $3}')
if command -v readelf >/dev/null 2>&1; then
  soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
  if [ "$soname" != "libmemplan.so.$major" ]; then
    echo "check-symbols: SONAME is '$soname', expected libmemplan.so.$major" >&2
    st=1
  fi
fi
[ $st = 0 ] && echo "check-symbols: $(wc -l < "$tmp/exported") exported functions, all declared, none missing; SONAME ${soname:-unchecked}"
exit $st
