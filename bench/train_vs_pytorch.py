#!/usr/bin/env python3
"""train_vs_pytorch.py - memplan's planned peaks over PyTorch's measured ones
(docs/training.md, "PyTorch reference set"). Python 3 standard library
only: it runs where memplan is built, no torch needed.

    python3 bench/train_vs_pytorch.py REF_DIR/reference.json
        [--onnx-dir DIR] [--memplan build/memplan] [--models a,b]
        [--modes fp32-sgd,...] [--extra "ARGS"] [--bf16 bf16-mixed]
        [--timeout SEC] [--json OUT.json] [--markdown] [--fail-above X]
        [--validate [--time-budget SEC] [--validate-extra "ARGS"]]
    python3 bench/train_vs_pytorch.py --self-test --memplan build/memplan
        --examples examples

REF is what validate/train_reference.py wrote on the GPU machine (its
docstring has the schema); the exports it names (row "onnx", a file name
relative to --onnx-dir, default REF's folder) are planned here, one
`memplan plan FILE --json` per row:

  mode        memplan options                               PyTorch step
  fp32-sgd    --train --optimizer sgd  --precision fp32     SGD, fp32
  fp32-adam   --train --optimizer adam --precision fp32     Adam (foreach)
  bf16-adam   --train --optimizer adam --precision BF16     Adam, bf16 autocast
  inference   (no --train; the eval-mode export)            eval, no_grad

BF16 is --bf16 (default bf16-mixed). --extra is appended to every command
(e.g. "--step-in-backward" or a save policy); --validate-extra to the
`memplan validate` commands only (e.g. "--device profile.json": the step
time predicted on a calibrated profile).

What is compared: memplan's `peak_bytes` (the plan JSON: arena +
persistent) with torch.cuda.max_memory_allocated() of one measured step.
Both count the same things: weights and optimizer states (memplan:
persistent_bytes, with master weights and frozen constants), gradients,
the step's activations, inputs, outputs and temporaries (memplan: the
arena). PyTorch's figure also holds cuBLAS's workspace (allocated through
the caching allocator and kept) and its 512-byte rounding of every block;
memplan's the 256-byte alignment of its arena offsets. Neither counts the
CUDA context or memory cached but free. A ratio above 1.00 means memplan's
plan needs more memory than PyTorch did.

Columns (MiB = 2^20 bytes): memplan's peak, PyTorch eager's and
torch.compile's peaks, memplan/eager and memplan/compile, and what failed
(memplan's message or PyTorch's recorded error). Exit status: 0; 1 when
--fail-above X is given and a row's memplan/compile ratio is above X or
a row could not be planned (with --validate also when a GPU run fails a
check); 2 usage; 3 unreadable reference.

--validate (on the GPU machine, memplan built with its CUDA executor)
runs each planned row again with `memplan validate` and the same options:
the plan executed step by step in one arena on the device, measured
against predicted memory and the outputs against a run with one
allocation per tensor (docs/validation.md). The "GPU run" column shows
"ok" when every check passed, with measured/predicted total device
memory. The time columns then give the planned run's measured step
(`measured.planned_ms`), the cost model's prediction (`predicted.seconds`),
PyTorch eager's step from the reference (`eager_step_ms`), their ratios
and the nodes that ran the synthetic kernel; below the table, the
distribution (min, median, max) of measured/predicted (target: within
+-25%) and of memplan/eager (target: <= 1.5x), and for each row that
misses +-25% the op kinds that took longest (validate's `by_op`).
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

MODES = ["fp32-sgd", "fp32-adam", "bf16-adam", "inference"]


def memplan_args(row, bf16):
    mode = row.get("mode")
    if mode == "inference":
        return []
    opt = row.get("optimizer") or {"fp32-sgd": "sgd"}.get(mode, "adam")
    prec = row.get("precision") or ("bf16" if mode == "bf16-adam"
                                    else "fp32")
    return ["--train", "--optimizer", opt,
            "--precision", bf16 if prec == "bf16" else prec]


def one_line(s, limit=300):
    s = " ".join((s or "").split())
    return s if len(s) <= limit else s[:limit] + " ..."


def plan(memplan, path, args, timeout):
    """-> (plan JSON or None, error message or None, command)"""
    cmd = [memplan, "plan", path, "--json"] + args
    if not os.path.exists(path):
        return None, "%s: no such file (not exported?)" % path, cmd
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "memplan ran past %d s" % timeout, cmd
    except OSError as e:
        return None, "cannot run %s: %s" % (memplan, e), cmd
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, one_line(err)), cmd
    try:
        d = json.loads(p.stdout.decode("utf-8", "replace"))
        int(d["peak_bytes"])
    except (ValueError, KeyError, TypeError) as e:
        return None, "unreadable plan JSON (%s) %s" % (e, one_line(err)), cmd
    return d, None, cmd


def validate(memplan, path, args, timeout):
    """`memplan validate PATH --json ARGS` on the GPU: -> summary dict"""
    cmd = [memplan, "validate", path, "--json"] + args
    v = {"command": " ".join(shlex.quote(c) for c in cmd), "all": None,
         "error": None}
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        v["error"] = "memplan validate ran past %d s" % timeout
        return v
    except OSError as e:
        v["error"] = "cannot run %s: %s" % (memplan, e)
        return v
    err = p.stderr.decode("utf-8", "replace")
    try:
        d = json.loads(p.stdout.decode("utf-8", "replace"))
        checks = d["checks"]
    except (ValueError, KeyError, TypeError):
        v["error"] = "exit %d: %s" % (p.returncode, one_line(err))
        return v
    v["all"] = bool(checks.get("all"))
    v["failed_checks"] = sorted(k for k, x in checks.items()
                                if x is False and k != "all")
    for k in ("ratio_total", "ratio_arena", "ratio_arena_workspace",
              "nodes_real_kernel", "nodes_synthetic", "recompute_steps"):
        v[k] = d.get(k)
    v["predicted_peak_bytes"] = (d.get("predicted") or {}).get("peak_bytes")
    for k in ("backward_nodes_synthetic", "optimizer_nodes_synthetic"):
        v[k] = d.get(k)
    # time: the planned run's step, measured, and the cost model's
    # prediction; the op kinds that took longest, measured and predicted
    meas = d.get("measured") or {}
    pred_s = (d.get("predicted") or {}).get("seconds")
    v["measured_ms"] = meas.get("planned_ms")
    v["graph_ms"] = meas.get("planned_graph_ms") or None
    v["predicted_ms"] = pred_s * 1e3 if pred_s is not None else None
    by_op = ((d.get("time") or {}).get("by_op")
             or d.get("by_op") or {})
    top = sorted(by_op.items(), key=lambda kv: -(kv[1].get("measured_ms")
                                                 or 0.0))[:8]
    v["top_ops"] = [{"op": k, "steps": x.get("steps"),
                     "measured_ms": x.get("measured_ms"),
                     "predicted_ms": x.get("predicted_ms")} for k, x in top]
    v["measured_arena_bytes"] = (d.get("measured") or {}).get("arena_bytes")
    v["predicted_arena_device_bytes"] = (d.get("predicted") or {}).get(
        "arena_device_bytes")
    if p.returncode not in (0, 5):
        v["error"] = "exit %d: %s" % (p.returncode, one_line(err))
    return v


def fmt_validated(v):
    if not v:
        return "-"
    if v.get("all") is None:
        return "error"
    return "%s %.3f" % ("ok" if v["all"] else "FAILED",
                        v.get("ratio_total") or 0.0)


def ratio(a, b):
    if a is None or not b:
        return None
    return a / float(b)


def fmt_mib(b):
    return "-" if b is None else "%.1f" % (b / 1048576.0)


def fmt_x(r):
    return "-" if r is None else "%.2fx" % r


def compare(ref, onnx_dir, memplan, models, modes, extra, bf16, timeout,
            progress=True, gpu=False, budget=0.0, vextra=()):
    out = []
    t0 = time.time()
    for row in ref.get("rows", []):
        if models and row.get("model") not in models:
            continue
        if modes and row.get("mode") not in modes:
            continue
        onnx = row.get("onnx") or ""
        path = onnx if os.path.isabs(onnx) else os.path.join(onnx_dir, onnx)
        args = memplan_args(row, bf16) + extra
        if progress:
            sys.stderr.write("planning %s %s\n" % (row.get("model"),
                                                   row.get("mode")))
        d, err, cmd = plan(memplan, path, args, timeout)
        r = {"model": row.get("model"), "mode": row.get("mode"),
             "command": " ".join(shlex.quote(c) for c in cmd),
             "eager_peak_bytes": row.get("eager_peak_bytes"),
             "compile_peak_bytes": row.get("compile_peak_bytes"),
             "eager_before_bytes": row.get("eager_before_bytes"),
             "eager_baseline_bytes": row.get("eager_baseline_bytes"),
             "compile_baseline_bytes": row.get("compile_baseline_bytes"),
             "weights_bytes": row.get("weights_bytes"),
             "compile_before_bytes": row.get("compile_before_bytes"),
             "eager_step_ms": row.get("eager_step_ms"),
             "compile_step_ms": row.get("compile_step_ms"),
             "pytorch_errors": row.get("errors") or {},
             "memplan_error": err}
        if d is not None:
            r["memplan_peak_bytes"] = int(d["peak_bytes"])
            r["memplan_persistent_bytes"] = d.get("persistent_bytes")
            r["memplan_arena_bytes"] = d.get("arena_bytes")
            r["memplan_training"] = d.get("training")
        else:
            r["memplan_peak_bytes"] = None
        if gpu and d is not None:
            if budget and time.time() - t0 > budget:
                r["validate"] = {"all": None, "error": "not run: the time "
                                 "budget of %g s was spent" % budget}
            else:
                if progress:
                    sys.stderr.write("validating %s %s\n"
                                     % (row.get("model"), row.get("mode")))
                r["validate"] = validate(memplan, path, args + list(vextra),
                                         timeout)
        r["x_eager"] = ratio(r["memplan_peak_bytes"], r["eager_peak_bytes"])
        r["x_compile"] = ratio(r["memplan_peak_bytes"],
                               r["compile_peak_bytes"])
        out.append(r)
    return out


def notes(r):
    n = []
    if r["memplan_error"]:
        n.append("memplan: " + r["memplan_error"])
    for k, v in sorted(r["pytorch_errors"].items()):
        n.append("pytorch %s: %s" % (k, one_line(v, 160)))
    for b in ("eager", "compile"):
        # memory not this model's before its step (an earlier model's,
        # left allocated in the reference run): PyTorch's peak includes it
        left = (r.get("%s_baseline_bytes" % b) or 0) - (r.get("weights_bytes")
                                                         or 0)
        if r.get("weights_bytes") and left > 256 * 2**20:
            n.append("pytorch %s: %.0f MiB not this model's allocated "
                     "before the step (in its peak)" % (b, left / 2.0**20))
    v = r.get("validate")
    if v and v.get("error"):
        n.append("validate: " + v["error"])
    if v and v.get("failed_checks"):
        n.append("validate failed: " + ", ".join(v["failed_checks"]))
    return "; ".join(n)


def print_table(rows, markdown, f=sys.stdout):
    gpu = any("validate" in r for r in rows)
    head = ["model", "mode", "memplan MiB", "eager MiB", "compile MiB",
            "/eager", "/compile"] + (["GPU run"] + TIME_HEAD if gpu
                                     else []) + ["notes"]
    cells = [[r["model"] or "?", r["mode"] or "?",
              fmt_mib(r["memplan_peak_bytes"]),
              fmt_mib(r["eager_peak_bytes"]),
              fmt_mib(r["compile_peak_bytes"]),
              fmt_x(r["x_eager"]), fmt_x(r["x_compile"])]
             + ([fmt_validated(r.get("validate"))] + time_cells(r)
                if gpu else [])
             + [notes(r)]
             for r in rows]
    if markdown:
        f.write("| " + " | ".join(head) + " |\n")
        f.write("|" + "---|" * 2 + "---:|" * (len(head) - 3) + "---|\n")
        for c in cells:
            f.write("| " + " | ".join(x.replace("|", "/") for x in c)
                    + " |\n")
    else:
        w = [max([len(h)] + [len(c[i]) for c in cells])
             for i, h in enumerate(head[:-1])]
        line = lambda c: "  ".join(  # noqa: E731
            (c[i].ljust(w[i]) if i < 2 else c[i].rjust(w[i]))
            for i in range(len(w))) + "  " + c[-1]
        f.write(line(head).rstrip() + "\n")
        for c in cells:
            f.write(line(c).rstrip() + "\n")
    xs = [r["x_compile"] for r in rows if r["x_compile"] is not None]
    planned = sum(1 for r in rows if r["memplan_peak_bytes"] is not None)
    f.write("\n%d rows, %d planned; memplan <= 1.00x torch.compile on %d "
            "of %d rows with both figures"
            % (len(rows), planned, sum(1 for x in xs if x <= 1.0), len(xs)))
    if xs:
        worst = max((r for r in rows if r["x_compile"] is not None),
                    key=lambda r: r["x_compile"])
        f.write("; worst %s %s %.2fx" % (worst["model"], worst["mode"],
                                         worst["x_compile"]))
    vs = [r["validate"] for r in rows if r.get("validate")]
    if vs:
        f.write("\nGPU runs (memplan validate): %d of %d rows pass every check"
                " (measured/predicted total in the column)\n"
                % (sum(1 for v in vs if v.get("all")), len(vs)))
        time_summary(rows, f)
    f.write("\n")


# ------------------------------------------------------------ step time

# with --validate: the planned run's step time on the GPU (ms), the cost
# model's prediction, PyTorch eager's step time from the reference, and
# measured/predicted, measured/eager
TIME_HEAD = ["step ms", "pred ms", "eager ms", "meas/pred", "/eager ms",
             "graph ms", "graph/eager", "synthetic"]


def time_of(r):
    """-> (measured ms, predicted ms, eager ms) or Nones"""
    v = r.get("validate") or {}
    return v.get("measured_ms"), v.get("predicted_ms"), r.get("eager_step_ms")


def fmt_ms(x):
    return "-" if x is None else "%.1f" % x


def time_cells(r):
    m, p, e = time_of(r)
    v = r.get("validate") or {}
    syn = v.get("nodes_synthetic")
    gm = v.get("graph_ms")
    return [fmt_ms(m), fmt_ms(p), fmt_ms(e), fmt_x(ratio(m, p)),
            fmt_x(ratio(m, e)), fmt_ms(gm), fmt_x(ratio(gm, e)),
            "-" if syn is None else str(syn)]


def quantiles(xs):
    xs = sorted(xs)
    return xs[0], xs[len(xs) // 2], xs[-1]


def time_summary(rows, f):
    """the distribution of measured/predicted step time (the target:
    within +-25%) and of measured/eager (the target: <= 1.5x), and the
    op kinds that took longest on the rows that miss"""
    mp_ = [(r, ratio(*time_of(r)[:2])) for r in rows]
    mp_ = [(r, x) for r, x in mp_ if x is not None]
    me = [(r, ratio(time_of(r)[0], time_of(r)[2])) for r in rows]
    me = [(r, x) for r, x in me if x is not None]
    if mp_:
        lo, med, hi = quantiles([x for _, x in mp_])
        f.write("step time measured/predicted: min %.2f, median %.2f, max "
                "%.2f; within +-25%% on %d of %d rows\n"
                % (lo, med, hi, sum(1 for _, x in mp_ if 0.75 <= x <= 1.25),
                   len(mp_)))
    if me:
        lo, med, hi = quantiles([x for _, x in me])
        f.write("step time memplan executor/PyTorch eager: min %.2f, median "
                "%.2f, max %.2f; <= 1.5x on %d of %d rows\n"
                % (lo, med, hi, sum(1 for _, x in me if x <= 1.5), len(me)))
    ge = [ratio((r.get("validate") or {}).get("graph_ms"), time_of(r)[2])
          for r in rows]
    ge = [x for x in ge if x is not None]
    if ge:
        lo, med, hi = quantiles(ge)
        f.write("step time as one CUDA graph/PyTorch eager: min %.2f, "
                "median %.2f, max %.2f; <= 1.5x on %d of %d rows\n"
                % (lo, med, hi, sum(1 for x in ge if x <= 1.5), len(ge)))
    for r, x in mp_:
        if 0.75 <= x <= 1.25:
            continue
        tops = (r.get("validate") or {}).get("top_ops") or []
        f.write("  %s %s measured/predicted %.2f; longest: %s\n"
                % (r["model"], r["mode"], x, ", ".join(
                    "%s %s/%s ms" % (t["op"], fmt_ms(t.get("measured_ms")),
                                     fmt_ms(t.get("predicted_ms")))
                    for t in tops[:5])))


def find_memplan(given):
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    cand = os.path.join(here, os.pardir, "build", "memplan")
    if os.path.exists(cand):
        return os.path.normpath(cand)
    return shutil.which("memplan") or "memplan"


# ------------------------------------------------------------ self-test

def self_test(memplan, examples):
    """Plans examples/tiny.json from a hand-written reference and checks
    the figures, the options each mode passes and the error rows."""
    tiny = os.path.join(examples, "tiny.json")
    if not os.path.exists(tiny):
        print("self-test: %s missing" % tiny)
        return 1
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL: " + what)

    def direct(args):
        p = subprocess.run([memplan, "plan", tiny, "--json"] + args,
                           stdout=subprocess.PIPE, check=True)
        return json.loads(p.stdout.decode())

    d_sgd = direct(["--train", "--optimizer", "sgd", "--precision", "fp32"])
    d_adam = direct(["--train", "--optimizer", "adam",
                     "--precision", "bf16-mixed"])
    d_inf = direct([])
    tmp = tempfile.mkdtemp(prefix="mp_tvp_")
    try:
        ref = {"schema": 1, "models": {}, "rows": [
            {"model": "tiny", "mode": "fp32-sgd", "optimizer": "sgd",
             "precision": "fp32", "onnx": tiny,
             "eager_peak_bytes": d_sgd["peak_bytes"] * 2,
             "compile_peak_bytes": d_sgd["peak_bytes"] // 2,
             "errors": {}},
            {"model": "tiny", "mode": "bf16-adam", "optimizer": "adam",
             "precision": "bf16", "onnx": tiny,
             "eager_peak_bytes": 4 * 1048576, "compile_peak_bytes": None,
             "errors": {"compile": "OutOfMemoryError: CUDA out of memory"}},
            {"model": "tiny", "mode": "inference", "optimizer": None,
             "precision": "fp32", "onnx": tiny,
             "eager_peak_bytes": d_inf["peak_bytes"],
             "compile_peak_bytes": d_inf["peak_bytes"], "errors": {}},
            {"model": "absent", "mode": "fp32-adam", "optimizer": "adam",
             "precision": "fp32", "onnx": "absent.train.onnx",
             "eager_peak_bytes": 1, "compile_peak_bytes": 1, "errors": {}},
            {"model": "unreadable", "mode": "fp32-adam", "optimizer": "adam",
             "precision": "fp32", "onnx": "bad.train.onnx",
             "eager_peak_bytes": 1, "compile_peak_bytes": 1, "errors": {}},
        ]}
        with open(os.path.join(tmp, "bad.train.onnx"), "wb") as f:
            f.write(b"\x0a\xff\xff\xff not a model")
        refp = os.path.join(tmp, "reference.json")
        with open(refp, "w") as f:
            json.dump(ref, f)
        outp = os.path.join(tmp, "out.json")
        p = subprocess.run([sys.executable, os.path.abspath(__file__), refp,
                            "--memplan", memplan, "--json", outp,
                            "--fail-above", "1.0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        text = p.stdout.decode()
        print(text)
        check(p.returncode == 1, "exit 1 with --fail-above 1.0 and rows "
              "above it (got %d)" % p.returncode)
        with open(outp) as f:
            rows = json.load(f)["rows"]
        check(len(rows) == 5, "five rows (got %d)" % len(rows))
        by = {(r["model"], r["mode"]): r for r in rows}
        s = by[("tiny", "fp32-sgd")]
        check(s["memplan_peak_bytes"] == d_sgd["peak_bytes"],
              "fp32-sgd peak is memplan's --train --optimizer sgd peak")
        check(s["memplan_training"]["optimizer"] == "sgd",
              "fp32-sgd planned with sgd")
        check(abs(s["x_eager"] - 0.5) < 1e-9, "x eager 0.50")
        check(abs(s["x_compile"] - d_sgd["peak_bytes"]
                  / float(d_sgd["peak_bytes"] // 2)) < 1e-9, "x compile")
        b = by[("tiny", "bf16-adam")]
        check(b["memplan_peak_bytes"] == d_adam["peak_bytes"]
              and b["memplan_training"]["precision"] == "bf16-mixed"
              and b["memplan_training"]["optimizer"] == "adam",
              "bf16-adam planned with adam, bf16-mixed")
        check(b["x_compile"] is None and "OutOfMemoryError" in text,
              "a PyTorch error is shown, no ratio")
        i = by[("tiny", "inference")]
        check(i["memplan_peak_bytes"] == d_inf["peak_bytes"]
              and i["memplan_training"] is None
              and abs(i["x_compile"] - 1.0) < 1e-12,
              "inference planned without --train, ratio 1.00")
        check(d_inf["peak_bytes"] < d_sgd["peak_bytes"],
              "training peak above inference peak")
        a = by[("absent", "fp32-adam")]
        check(a["memplan_peak_bytes"] is None
              and "no such file" in (a["memplan_error"] or ""),
              "a missing export is reported")
        u = by[("unreadable", "fp32-adam")]
        check(u["memplan_peak_bytes"] is None
              and (u["memplan_error"] or "").startswith("exit ")
              and "memplan: exit" in text,
              "memplan's failure is printed with its exit status")
        check("0.50x" in text and "1.00x" in text, "ratios in the table")
        # --validate: a GPU run per planned row, its outcome in a column
        # (here memplan validate fails: no GPU, or built without CUDA)
        p = subprocess.run([sys.executable, os.path.abspath(__file__), refp,
                            "--memplan", memplan, "--json", outp,
                            "--validate", "--models", "tiny",
                            "--modes", "fp32-sgd"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        text = p.stdout.decode()
        with open(outp) as f:
            v = json.load(f)["rows"][0].get("validate") or {}
        check("GPU run" in text and "validate" in v["command"]
              and "--optimizer sgd" in v["command"]
              and (v.get("all") is not None or "validate: " in text),
              "--validate runs memplan validate with the row's options")
        # the step-time summary, from hand-made validate results
        import io
        rows = [{"model": "a", "mode": "m", "eager_step_ms": 10.0,
                 "validate": {"measured_ms": 12.0, "predicted_ms": 10.0,
                              "top_ops": []}},
                {"model": "b", "mode": "m", "eager_step_ms": 10.0,
                 "validate": {"measured_ms": 30.0, "predicted_ms": 10.0,
                              "top_ops": [{"op": "Conv", "steps": 2,
                                           "measured_ms": 25.0,
                                           "predicted_ms": 5.0}]}},
                {"model": "c", "mode": "m", "eager_step_ms": None,
                 "validate": {"measured_ms": 9.0, "predicted_ms": 10.0}}]
        buf = io.StringIO()
        time_summary(rows, buf)
        t = buf.getvalue()
        check("min 0.90, median 1.20, max 3.00; within +-25% on 2 of 3"
              in t, "measured/predicted distribution: " + t)
        check("min 1.20, median 3.00, max 3.00; <= 1.5x on 1 of 2" in t,
              "measured/eager distribution")
        check("b m measured/predicted 3.00; longest: Conv 25.0/5.0 ms" in t
              and " a m " not in t, "the rows that miss, with their ops")
        check(time_cells(rows[1])[3:5] == ["3.00x", "3.00x"],
              "time cells")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("self-test: %s" % ("FAILED: " + "; ".join(failures)
                              if failures else "ok"))
    return 1 if failures else 0


def main(argv):
    ap = argparse.ArgumentParser(
        description="memplan's planned peaks over PyTorch's measured peaks")
    ap.add_argument("reference", nargs="?",
                    help="reference.json from validate/train_reference.py")
    ap.add_argument("--onnx-dir", help="folder of the exports (default: "
                    "the reference's folder)")
    ap.add_argument("--memplan", help="the memplan binary (default: "
                    "build/memplan beside this script, else PATH)")
    ap.add_argument("--models", default="", help="comma-separated subset")
    ap.add_argument("--modes", default="", help="comma-separated subset of "
                    + ", ".join(MODES))
    ap.add_argument("--extra", default="",
                    help="options appended to every memplan command")
    ap.add_argument("--bf16", default="bf16-mixed",
                    help="memplan's --precision for bf16-adam rows")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds per memplan command")
    ap.add_argument("--json", help="write the rows with memplan's figures")
    ap.add_argument("--markdown", action="store_true",
                    help="a markdown table")
    ap.add_argument("--fail-above", type=float,
                    help="exit 1 if a row is above this x torch.compile or "
                         "could not be planned")
    ap.add_argument("--validate", action="store_true",
                    help="also run every planned row on the GPU with "
                         "`memplan validate` (the same options) and show "
                         "whether every check passed and measured/predicted "
                         "total memory")
    ap.add_argument("--validate-extra", default="",
                    help="with --validate: options appended to the "
                         "validate commands only")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="with --validate: start no GPU run after this many "
                         "seconds (0: no limit)")
    ap.add_argument("--self-test", action="store_true",
                    help="check this script on examples/tiny.json")
    ap.add_argument("--examples", default=None,
                    help="with --self-test: the examples folder")
    a = ap.parse_args(argv)
    memplan = find_memplan(a.memplan)
    if a.self_test:
        ex = a.examples or os.path.join(os.path.dirname(
            os.path.abspath(__file__)), os.pardir, "examples")
        return self_test(memplan, ex)
    if not a.reference:
        ap.error("the reference JSON is required")
    try:
        with open(a.reference) as f:
            ref = json.load(f)
        if not isinstance(ref.get("rows"), list):
            raise ValueError("no \"rows\" list")
    except (OSError, ValueError, AttributeError) as e:
        sys.stderr.write("train_vs_pytorch: %s: %s\n" % (a.reference, e))
        return 3
    onnx_dir = a.onnx_dir or os.path.dirname(os.path.abspath(a.reference))
    models = set(x for x in a.models.split(",") if x)
    modes = set(x for x in a.modes.split(",") if x)
    rows = compare(ref, onnx_dir, memplan, models, modes,
                   shlex.split(a.extra), a.bf16, a.timeout,
                   gpu=a.validate, budget=a.time_budget,
                   vextra=shlex.split(a.validate_extra))
    env = ref.get("env") or {}
    if env:
        print("PyTorch reference: torch %s on %s"
              % (env.get("torch", "?"), env.get("device", "?")))
    print_table(rows, a.markdown)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"reference": os.path.abspath(a.reference),
                       "env": env, "rows": rows}, f, indent=1)
            f.write("\n")
    if a.fail_above is not None:
        bad = [r for r in rows if r["memplan_peak_bytes"] is None
               or (r["x_compile"] is not None
                   and r["x_compile"] > a.fail_above)
               or (r.get("validate") and not r["validate"].get("all"))]
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
