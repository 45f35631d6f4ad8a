#!/usr/bin/env python3
"""bench/time_vs_measured.py - predicted against measured step time, from
`memplan validate --json` runs (docs/cost-model.md, "Checking the
prediction").

    python3 bench/time_vs_measured.py OUT/*.json [--tol 0.25] [--json]

Each file is one `memplan validate --json` output (validate/run-on-gpu
table writes OUT/NAME.json; run it with VALIDATE_ARGS="--device
PROFILE.json --step-times" so that the prediction uses the calibrated
profile and the per-op times are timed by events alone). Prints a row per
run: predicted and measured milliseconds (the planned run's total) and
measured / predicted; then the distribution of that ratio (min, median,
max) and how many rows are within +-tol (default 25%). For every row
outside, the time by kind of kernel (gemm, conv, attention, pointwise,
reduce, move, other; a backward node "XGrad" is X's kind, marked
"(bwd)"), from validate's by_op, largest measured first, with each kind's
measured / predicted. Exit 0 (the figures are a benchmark, not a test).
"""
import json
import os
import statistics
import sys

KIND = {}
for ops, kind in (
        ("MatMul Gemm MatMulInteger QLinearMatMul FusedMatMul", "gemm"),
        ("Conv ConvInteger QLinearConv ConvTranspose", "conv"),
        ("ScaledDotProductAttention", "attention"),
        ("Add Sub Mul Div Pow Max Min Mean Sum Relu Sigmoid Tanh Exp Log Erf "
         "Gelu Clip HardSigmoid HardSwish LeakyRelu Sqrt Neg Abs Reciprocal "
         "Softplus Elu Floor Ceil Sin Cos PRelu Cast Where Equal Less Greater "
         "Not And Or Dropout LossGrad SGD Adam AdamW Momentum", "pointwise"),
        ("ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare "
         "ReduceL1 ReduceL2 Softmax LogSoftmax BatchNormalization "
         "LayerNormalization GroupNormalization InstanceNormalization "
         "RMSNormalization MaxPool AveragePool GlobalAveragePool "
         "GlobalMaxPool LRN Loss", "reduce"),
        ("Transpose Concat Split Slice Gather Pad Expand Tile Resize Upsample "
         "Identity", "move"),
        ("(offload) (prefetch)", "host copy")):
    for op in ops.split():
        KIND[op] = kind


def kind_of(op):
    if op in KIND:
        return KIND[op]
    if op.endswith("Grad") and op[:-4] in KIND:
        return KIND[op[:-4]] + " (bwd)"
    return "other"


def load(path):
    with open(path) as f:
        d = json.load(f)
    name = os.path.splitext(os.path.basename(path))[0]
    pred = d.get("predicted", {}).get("seconds")
    meas = d.get("measured", {}).get("planned_ms")
    if pred is None or not meas:
        return None
    return {"name": name, "pred_ms": pred * 1e3, "meas_ms": meas,
            "ratio": meas / (pred * 1e3) if pred > 0 else float("inf"),
            "device": d.get("predicted", {}).get("time_device", "?"),
            "events_only": d.get("measured", {}).get("steps_events_only"),
            "by_op": (d.get("time") or {}).get("by_op") or d.get("by_op")
            or {}}


def by_kind(row):
    k = {}
    for op, v in row["by_op"].items():
        e = k.setdefault(kind_of(op), [0, 0.0, 0.0, set()])
        e[0] += v.get("steps", 0)
        e[1] += v.get("predicted_ms", 0.0)
        e[2] += v.get("measured_ms", 0.0)
        e[3].add(op)
    return sorted(k.items(), key=lambda kv: -kv[1][2])


def main(argv):
    tol, as_json, files = 0.25, False, []
    i = 1
    while i < len(argv):
        if argv[i] == "--tol":
            tol = float(argv[i + 1])
            i += 2
            continue
        if argv[i] == "--json":
            as_json = True
        elif argv[i] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            files.append(argv[i])
        i += 1
    rows, skipped = [], []
    for p in files:
        try:
            r = load(p)
        except (OSError, ValueError) as e:
            skipped.append("%s (%s)" % (p, e))
            continue
        if r is None:
            skipped.append("%s (no predicted or measured time)" % p)
        else:
            rows.append(r)
    if not rows:
        print("no rows with a predicted and a measured time", file=sys.stderr)
        return 2
    ratios = [r["ratio"] for r in rows]
    within = [r for r in rows if abs(r["ratio"] - 1) <= tol]
    dist = {"min": min(ratios), "median": statistics.median(ratios),
            "max": max(ratios), "rows": len(rows), "within": len(within),
            "tolerance": tol}
    if as_json:
        out = {"distribution": dist, "rows": [], "skipped": skipped}
        for r in rows:
            o = {k: r[k] for k in ("name", "pred_ms", "meas_ms", "ratio",
                                   "device")}
            if abs(r["ratio"] - 1) > tol:
                o["by_kind"] = {k: {"steps": v[0], "predicted_ms": v[1],
                                    "measured_ms": v[2], "ops": sorted(v[3])}
                                for k, v in by_kind(r)}
            out["rows"].append(o)
        print(json.dumps(out, indent=2))
        return 0
    print("| row | device | predicted ms | measured ms | measured/predicted |")
    print("|---|---|---|---|---|")
    for r in rows:
        mark = "" if abs(r["ratio"] - 1) <= tol else " **miss**"
        print("| %s | %s | %.3f | %.3f | %.2f%s |" % (
            r["name"], r["device"], r["pred_ms"], r["meas_ms"], r["ratio"],
            mark))
    print()
    print("measured/predicted over %d rows: min %.2f, median %.2f, max %.2f; "
          "%d within +-%d%%" % (len(rows), dist["min"], dist["median"],
                                dist["max"], len(within), round(tol * 100)))
    for r in rows:
        if abs(r["ratio"] - 1) <= tol:
            continue
        print()
        print("%s: measured/predicted %.2f, by kind of kernel%s" % (
            r["name"], r["ratio"], "" if r["events_only"] else
            " (steps timed with memory samples: run validate with "
            "--step-times for per-step times by events alone)"))
        print("| kind | steps | predicted ms | measured ms | measured/predicted "
              "| ops |")
        print("|---|---|---|---|---|---|")
        for k, v in by_kind(r):
            ratio = "%.2f" % (v[2] / v[1]) if v[1] > 0 else "-"
            print("| %s | %d | %.3f | %.3f | %s | %s |" % (
                k, v[0], v[1], v[2], ratio, " ".join(sorted(v[3]))))
    for s in skipped:
        print("skipped: %s" % s, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
