#!/bin/sh
# cli/gen-docs.sh [--check] MEMPLAN [DOC] - docs/cli.md's option lists,
# written by the binary from its option table (cli/options.c).
#
# Every block of DOC (default: docs/cli.md beside this script) between a
# line "<!-- memplan help --markdown CMD -->" and the next "<!-- end -->"
# becomes the output of `MEMPLAN help --markdown CMD`: the usage line and
# the table of CMD's options. With --check nothing is written: exit 1,
# naming the commands whose block is out of date (tests/test_cli.c runs
# this), 0 when every block is current.
set -eu
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
memplan=${1:?usage: cli/gen-docs.sh [--check] MEMPLAN [DOC]}
doc=${2:-$(dirname "$0")/../docs/cli.md}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk -v memplan="$memplan" '
  /^<!-- memplan help --markdown [a-z-]+ -->$/ {
    print
    cmd = "\"" memplan "\" help --markdown " $5
    while ((cmd | getline line) > 0)
      print line
    if (close(cmd) != 0) {
      print "gen-docs: " cmd " failed" > "/dev/stderr"
      failed = 1
    }
    skip = 1
    next
  }
  /^<!-- end -->$/ { skip = 0 }
  !skip { print }
  END { exit failed }' "$doc" > "$tmp"
if cmp -s "$doc" "$tmp"; then
  exit 0
fi
if [ $check = 1 ]; then
  echo "gen-docs: $doc is out of date with $memplan's option table;" \
       "run cli/gen-docs.sh $memplan" >&2
  diff "$doc" "$tmp" >&2 || true
  exit 1
fi
cp "$tmp" "$doc"
echo "gen-docs: $doc updated"
