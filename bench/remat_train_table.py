#!/usr/bin/env python3
"""The light ONNX models' training recompute table (docs/results.md,
"Rerun: nothing recomputed after an optimizer step").

For light_resnet50 and light_inception_v1 at batch 8, 16 and 32: P, the
default training graph's no-recompute peak (`--budget 1TiB`), then each
of the four graphs (optimizer steps after backward or in it, weight
gradients split or not) planned under P/2. Prints one markdown row per
plan: the graph's own no-recompute peak, the budget, the peak found and
overhead (or the smallest peak found when infeasible), the solver, the
recompute steps, and CPU s (wall).

    python3 bench/remat_train_table.py [--memplan build/memplan]
        [--corpus ../shared/corpus]

Needs ../shared/corpus (skips with a message without it)."""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def plan(memplan, args):
    t0 = time.time()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([memplan, "plan"] + args + ["--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    i = p.stdout.find("{")
    d = json.loads(p.stdout[i:]) if i >= 0 else {}
    return p.returncode, d, p.stderr, cpu, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memplan", default="build/memplan")
    ap.add_argument("--corpus", default="../shared/corpus")
    a = ap.parse_args()
    mdir = os.path.join(a.corpus, "models", "onnx_light")
    if not os.path.isdir(mdir):
        print("skipped: %s not found (the shared corpus)" % mdir)
        return 0
    print("| model | batch | optimizer steps | weight grads split | "
          "no-recompute peak (this graph) | budget (half the default P) | "
          "peak found | overhead | solver | recompute steps | CPU s (wall) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in ["light_resnet50", "light_inception_v1"]:
        path = os.path.join(mdir, model + ".onnx")
        for b in [8, 16, 32]:
            base = [path, "--train", "--batch", str(b)]
            rc, d, err, _, _ = plan(a.memplan, base + ["--budget", "1TiB"])
            if rc != 0:
                print("%s batch %d: %s" % (model, b, err.strip()),
                      file=sys.stderr)
                return 1
            bud = d["recompute"]["peak_bytes"] // 2
            for sib in (0, 1):
                for split in (0, 1):
                    g = base + (["--step-in-backward"] if sib else []) + \
                        (["--split-weight-grad"] if split else [])
                    _, d0, _, _, _ = plan(a.memplan, g + ["--budget", "1TiB"])
                    pg = d0["recompute"]["peak_bytes"]
                    rc, d, err, cpu, wall = plan(a.memplan,
                                                 g + ["--budget", str(bud)])
                    r = (d or {}).get("recompute", {})
                    if rc == 0:
                        res = "%s | **%.3f** | %s | %s" % (
                            format(r["peak_bytes"], ","), r["overhead"],
                            r.get("solver"), r.get("recompute_steps"))
                    else:
                        res = "infeasible (smallest found %s) |  |  | " % \
                            format(r.get("min_peak_bytes") or 0, ",")
                    print("| %s | %d | %s | %s | %s | %s | %s | %.2f (%.2f) |"
                          % (model, b, "in backward" if sib else
                             "after backward", "yes" if split else "no",
                             format(pg, ","), format(bud, ","), res, cpu,
                             wall), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
