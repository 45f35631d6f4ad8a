#!/usr/bin/env python3
"""Time `dot -Tsvg` on memplan's DOT of every corpus and reference model.

    python3 bench/dot_render.py [--memplan build/memplan] [--corpus DIR]
                                [--ref DIR] [--limit SEC] [--keep DIR]
                                [-- EXTRA memplan OPTIONS]

For every .onnx under CORPUS/models (default $MEMPLAN_CORPUS or
/work/shared/corpus) and REF (default /work/main/build-ref; its
*.train.onnx are also planned with --train): `memplan plan MODEL --dot F
--no-lints` with the default DOT options, binding symbolic dims the
command reports as unbound (dim 0 to 1, any other to 512, one retry per
message), then `dot -Tsvg F` with a time limit (--limit, 60 s). Prints one
line per model (DOT nodes and edges, seconds, SVG size in points) and a
Markdown summary: rendered, over 10 s, failed, max and median seconds,
the slowest model; models memplan cannot load or plan are listed with
its message. Exits 1 when any model that planned takes 10 s or more or
fails to render, else 0.
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

UNBOUND = re.compile(r"'([^']+)' \(needed by input '[^']*', dim (\d+)\)")
UNNAMED = re.compile(r"--dim (\S+?):(\d+)=VALUE")


def bind_args(message):
    """--dim options for the dims a memplan message names as unbound."""
    out = []
    for name, axis in UNBOUND.findall(message):
        out += ["--dim", "%s=%d" % (name, 1 if axis == "0" else 512)]
    for inp, axis in UNNAMED.findall(message):
        out += ["--dim", "%s:%s=%d" % (inp, axis, 1 if axis == "0" else 512)]
    return out


def plan_dot(memplan, model, extra, dot_path):
    """Runs memplan until it writes the DOT; (ok, message)."""
    args = []
    for _ in range(4):
        cmd = [memplan, "plan", model, "--dot", dot_path, "--no-lints"]
        cmd += args + extra
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode == 0:
            return True, ""
        more = bind_args(r.stderr)
        if not more or all(a in args for a in more[1::2]):
            return False, r.stderr.strip().splitlines()[-1] if r.stderr else (
                "exit %d" % r.returncode)
        args += more
    return False, "dims still unbound after 4 tries"


def dot_counts(path):
    nodes = edges = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if "->" in s:
                edges += 1
            elif re.match(r'^("[^"]*"|[A-Za-z_0-9]+)\s*\[', s) and not \
                    s.startswith(("graph", "node", "edge")):
                nodes += 1
    return nodes, edges


def render(path, limit):
    """(seconds or None on timeout, rc, width x height in points)."""
    t0 = time.monotonic()
    try:
        r = subprocess.run(["dot", "-Tsvg", path], capture_output=True,
                           timeout=limit)
    except subprocess.TimeoutExpired:
        return None, -1, ""
    dt = time.monotonic() - t0
    m = re.search(rb'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', r.stdout)
    size = "%sx%s" % (m.group(1).decode(), m.group(2).decode()) if m else ""
    return dt, r.returncode, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memplan", default="build/memplan")
    ap.add_argument("--corpus", default=os.environ.get(
        "MEMPLAN_CORPUS", "/work/shared/corpus"))
    ap.add_argument("--ref", default="/work/main/build-ref")
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--keep", help="keep the DOT files in this folder")
    ap.add_argument("extra", nargs="*", help="more memplan plan options")
    a = ap.parse_args()
    runs = [(m, []) for m in sorted(glob.glob(
        os.path.join(a.corpus, "models", "**", "*.onnx"), recursive=True))]
    for m in sorted(glob.glob(os.path.join(a.ref, "*.onnx"))):
        runs.append((m, []))
        if m.endswith(".train.onnx"):
            runs.append((m, ["--train"]))
    if not runs:
        print("dot_render: skipped: no models under %s or %s" %
              (a.corpus, a.ref))
        return 0
    tmp = a.keep or tempfile.mkdtemp(prefix="memplan-dot-")
    os.makedirs(tmp, exist_ok=True)
    times, skipped, failed = [], [], []
    print("%-58s %6s %6s %8s %s" % ("model", "nodes", "edges", "seconds",
                                    "size (pt)"))
    for model, opts in runs:
        label = os.path.relpath(model, a.corpus) if model.startswith(
            a.corpus) else os.path.basename(model)
        label += (" " + " ".join(opts)) if opts else ""
        dot_path = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.-]", "_", label)
                                + ".dot")
        ok, msg = plan_dot(a.memplan, model, opts + a.extra, dot_path)
        if not ok:
            skipped.append((label, msg))
            print("%-58s skipped: %s" % (label, msg))
            continue
        n, e = dot_counts(dot_path)
        dt, rc, size = render(dot_path, a.limit)
        if dt is None or rc != 0:
            failed.append((label, "timeout %.0f s" % a.limit if dt is None
                           else "dot exit %d" % rc))
            print("%-58s %6d %6d %8s %s" % (label, n, e, "FAIL", failed[-1][1]))
            continue
        times.append((dt, label))
        print("%-58s %6d %6d %8.2f %s" % (label, n, e, dt, size))
        sys.stdout.flush()
    over = [t for t in times if t[0] >= 10.0]
    print()
    print("| rendered | 10 s or more | failed | max s | median s | slowest |")
    print("|---|---|---|---|---|---|")
    if times:
        mx = max(times)
        print("| %d | %d | %d | %.2f | %.2f | %s |" % (
            len(times), len(over), len(failed), mx[0],
            statistics.median(t for t, _ in times), mx[1]))
    else:
        print("| 0 | 0 | %d | - | - | - |" % len(failed))
    if skipped:
        print("\nnot planned (%d):" % len(skipped))
        for label, msg in skipped:
            print("- %s: %s" % (label, msg))
    return 1 if over or failed else 0


if __name__ == "__main__":
    sys.exit(main())
