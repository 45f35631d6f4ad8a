#!/usr/bin/env python3
"""table.py - the markdown table of docs/validation.md from the files
`validate/run-on-gpu table DIR OUT` wrote (OUT/NAME.json, OUT/NAME.ort.json).

    python3 validate/table.py OUT [NAME...]

Rows in the order given (default: every NAME.json, sorted). MiB = 2^20.
"""
import json
import os
import re
import sys


def mib(b):
    return "%.2f" % (b / 1048576.0)


def batch_of(name):
    m = re.search(r"_b(\d+)", name)
    return m.group(1) if m else "1"


def row(out, name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        err = ""
        try:
            with open(os.path.join(out, name + ".err")) as f:
                err = f.read().strip().splitlines()[-1][:120]
        except (OSError, IndexError):
            pass
        return "| %s | %s | not run: %s |" % (name, batch_of(name), err.replace("|", "/"))
    p, m, ck = d["predicted"], d["measured"], d["checks"]
    ort = "-"
    op = os.path.join(out, name + ".ort.json")
    if os.path.exists(op):
        try:
            with open(op) as f:
                o = json.load(f)
            ort = ("%.1e" % o["max_rel"]) if o.get("passed") else \
                ("FAIL %.1e" % o["max_rel"] if "max_rel" in o and o["max_rel"] is not None
                 else "not run (%s)" % o.get("error", "?").split(":")[0])
        except (OSError, ValueError):
            ort = "?"
    steps = "%d" % d["steps"]
    extra = []
    if d.get("recompute_steps"):
        extra.append("%d R" % d["recompute_steps"])
    if d.get("offload_steps"):
        extra.append("%d O/%d P" % (d["offload_steps"], d["prefetch_steps"]))
    if extra:
        steps += " (" + ", ".join(extra) + ")"
    pws = p["arena_device_bytes"] + -(-p["workspace_bytes"] // d["granularity"]) * d["granularity"]
    mws = m["arena_bytes"] + m["workspace_bytes"]
    ps = p["seconds"] * 1e3 if p.get("seconds") is not None else float("nan")
    ident = {True: "yes", False: "NO", None: "-"}[ck["outputs_identical"]]
    return ("| %s | %s | %d/%d | %s | %s (%s) | %s | %s | %.3f | %s / %s | %.4f | %s / %s | %.4f "
            "| %s | %s | %.3f | %.3f | %.2f | %s |" % (
                name, batch_of(name), d["nodes_real_kernel"], d["nodes_synthetic"], steps,
                mib(p["arena_bytes"]), mib(p["lower_bound_bytes"]),
                mib(p["arena_device_bytes"]), mib(m["arena_bytes"]), d["ratio_arena"],
                mib(pws), mib(mws), d["ratio_arena_workspace"],
                mib(p["total_device_bytes"]), mib(m["peak_bytes"]), d["ratio_total"],
                ident, ort, ps, m["planned_ms"],
                m["planned_ms"] / ps if ps > 0 else float("nan"),
                "pass" if ck["all"] else "FAIL"))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    names = argv[2:] or sorted(f[:-5] for f in os.listdir(out)
                               if f.endswith(".json") and not f.endswith(".ort.json"))
    print("| row | batch | kernels real/synth | steps | planned arena (LB) MiB "
          "| predicted arena (device) | measured arena | ratio "
          "| arena+ws pred / meas | ratio | total pred / meas | ratio "
          "| identical | ORT max rel | time pred ms | measured ms | meas/pred | checks |")
    print("|" + "---|" * 20)
    for n in names:
        print(row(out, n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
