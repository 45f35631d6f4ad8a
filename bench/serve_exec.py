#!/usr/bin/env python3
"""The executor run of a serving decoder (issue 21's first measured target;
docs/serving.md, "The executor run").

On the GPU machine, with memplan built with CUDA (memplan and
memplan-validate in one folder):

    python3 bench/serve_exec.py BUILD_DIR OUT_DIR [--batches 1,8]
        [--prompt 512] [--gen 64] [--block-size 16] [--timeout 280]

For each batch it runs

    BUILD_DIR/memplan validate CONFIG --serve --batch B --prompt 512 \\
        --gen 64 --block-size 16 --json

on the small Llama-style config of bench/serve_validate.py (hidden 1024,
8 layers, 16 heads, 4 KV heads, FFN 2816, vocab 32000, bf16; written into
OUT_DIR; besides the binaries only this folder is read): the generation (the
prefill of the prompts, then the decode steps, greedy) with the KV cache
paged as planned and again with a contiguous cache. It writes each run's
JSON (OUT_DIR/serve_exec_bB.json, stderr beside it) and one summary,
OUT_DIR/serve_exec_summary.json and .md: per batch and layout the device
memory memplan predicts (weights + KV cache + block table + arena +
workspace, in the driver's granules) and what the run measured
(cudaMemGetInfo), their ratio, and whether the tokens, the last step's
logits and the cache (in sequence order) are the same bytes in both runs.

Standard library only; exits 0 when every run passed all its checks, 1
otherwise (the summary says which), 2 on a usage error.
"""
import argparse
import json
import os
import subprocess
import sys
import time

def small_config():
    """bench/serve_validate.py's config (the PyTorch run's model), else
    examples/serve/small-llama.json (the same)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        from serve_validate import CONFIG
        return CONFIG
    except ImportError:
        with open(os.path.join(here, "..", "examples", "serve",
                               "small-llama.json")) as f:
            return json.load(f)


def find_tool(build):
    """memplan (which runs memplan-validate beside it), else
    memplan-validate itself (it takes the same arguments)."""
    for name in ("memplan", "memplan-validate"):
        p = os.path.join(build, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p, name
    return None, None


def run(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace"), time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        return None, out, err + "\n(timed out after %d s)" % timeout, \
            time.time() - t0
    except OSError as e:
        return None, "", str(e), time.time() - t0


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def layout_row(batch, layout, j):
    s = get(j, "serve", layout) or {}
    run_ = get(j, layout) or {}
    return {
        "batch": batch,
        "layout": layout,
        "kv_blocks": s.get("kv_blocks"),
        "model_weights_bytes": s.get("model_weights_bytes"),
        "kv_cache_bytes": s.get("kv_cache_bytes"),
        "block_table_bytes": s.get("block_table_bytes"),
        "arena_bytes": s.get("arena_bytes"),
        "workspace_bytes": s.get("workspace_bytes"),
        "predicted_device_bytes": s.get("predicted_device_bytes"),
        "measured_device_bytes": s.get("measured_device_bytes"),
        "ratio": s.get("ratio_measured_predicted"),
        "arena_predicted_device_bytes": get(run_, "predicted",
                                            "arena_device_bytes"),
        "arena_measured_bytes": get(run_, "measured", "arena_bytes"),
        "nodes_real_kernel": run_.get("nodes_real_kernel"),
        "nodes_synthetic": run_.get("nodes_synthetic"),
        "steps": run_.get("steps"),
        "planned_ms": get(run_, "measured", "planned_ms"),
        "planned_graph_ms": get(run_, "measured", "planned_graph_ms"),
        "outputs_identical_to_reference": get(run_, "checks",
                                              "outputs_identical"),
        "checks_all": get(run_, "checks", "all"),
    }


def fmt(v, kind="int"):
    if v is None:
        return "-"
    if kind == "ratio":
        return "%.4f" % v
    if kind == "bool":
        return "yes" if v else "NO"
    if kind == "ms":
        return "%.1f" % v
    return "{:,}".format(v)


def markdown(summary):
    lines = ["# memplan validate --serve: paged KV cache against contiguous",
             "",
             "Device: %s. Config: %s. Prompt %s, %s decode steps, block size "
             "%s. `%s`." % (summary.get("device") or "-", summary["config"],
                            summary["prompt"], summary["gen"],
                            summary["block_size"],
                            summary.get("version") or "-"),
             "",
             "| batch | layout | KV blocks | weights | KV cache | arena | "
             "workspace | predicted | measured | ratio | nodes real/synth | "
             "planned ms | outputs = one-alloc reference | checks |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|"]
    for r in summary["rows"]:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
                     "%s/%s | %s | %s | %s |" % (
                         r["batch"], r["layout"], fmt(r["kv_blocks"]),
                         fmt(r["model_weights_bytes"]),
                         fmt(r["kv_cache_bytes"]), fmt(r["arena_bytes"]),
                         fmt(r["workspace_bytes"]),
                         fmt(r["predicted_device_bytes"]),
                         fmt(r["measured_device_bytes"]),
                         fmt(r["ratio"], "ratio"),
                         fmt(r["nodes_real_kernel"]),
                         fmt(r["nodes_synthetic"]),
                         fmt(r["planned_ms"], "ms"),
                         fmt(r["outputs_identical_to_reference"], "bool"),
                         fmt(r["checks_all"], "bool")))
    lines += ["", "| batch | tokens generated | tokens identical | final "
              "logits identical | KV cache identical (sequence order) | "
              "paged total within 1% | all | exit | seconds |",
              "|---:|---:|---|---|---|---|---|---:|---:|"]
    for b in summary["batches"]:
        c = b.get("checks") or {}
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %.0f |" % (
            b["batch"], fmt(b.get("tokens_generated")),
            fmt(c.get("tokens_identical"), "bool"),
            fmt(c.get("final_logits_identical"), "bool"),
            fmt(c.get("kv_cache_identical_in_sequence_order"), "bool"),
            fmt(c.get("paged_total_within_1pct"), "bool"),
            fmt(c.get("all"), "bool"),
            b["exit"] if b["exit"] is not None else "none",
            b["seconds"]))
        if b.get("error"):
            lines.append("")
            lines.append("batch %s: %s" % (b["batch"], b["error"]))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="folder with memplan and memplan-validate")
    ap.add_argument("out", help="folder for the results (made if missing)")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--timeout", type=int, default=280,
                    help="seconds a run may take (default 280: both batches "
                         "within a 10-minute call)")
    a = ap.parse_args()
    tool, tool_name = find_tool(a.build)
    if not tool:
        print("serve_exec: no memplan or memplan-validate in %s" % a.build,
              file=sys.stderr)
        return 2
    try:
        batches = [int(x) for x in a.batches.split(",") if x.strip()]
    except ValueError:
        print("serve_exec: --batches: comma-separated whole numbers",
              file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    cfg = os.path.join(a.out, "small-llama.json")
    with open(cfg, "w") as f:
        json.dump(small_config(), f, indent=2)
    rc, version, _, _ = run([tool, "--version"], 60)
    summary = {"config": "hidden 1024, 8 layers, 16 heads, 4 KV heads, FFN "
                         "2816, vocab 32000, bf16",
               "prompt": a.prompt, "gen": a.gen, "block_size": a.block_size,
               "tool": tool, "version": version.strip() if rc == 0 else None,
               "device": None, "rows": [], "batches": []}
    ok = True
    for b in batches:
        cmd = [tool] + (["validate"] if tool_name == "memplan" else []) + [
            cfg, "--serve", "--batch", str(b), "--prompt", str(a.prompt),
            "--gen", str(a.gen), "--block-size", str(a.block_size), "--json"]
        print("serve_exec: %s" % " ".join(cmd), file=sys.stderr)
        rc, out, err, secs = run(cmd, a.timeout)
        base = os.path.join(a.out, "serve_exec_b%d" % b)
        with open(base + ".json", "w") as f:
            f.write(out)
        with open(base + ".stderr", "w") as f:
            f.write(err)
        entry = {"batch": b, "exit": rc, "seconds": secs,
                 "command": " ".join(cmd)}
        j = None
        try:
            j = json.loads(out) if out.strip() else None
        except ValueError as e:
            entry["error"] = "output is not JSON (%s); stderr: %s" % (
                e, err.strip()[-400:])
        if j is not None and get(j, "serve") is not None:
            summary["device"] = summary["device"] or j.get("device")
            s = j["serve"]
            entry["tokens_generated"] = s.get("tokens_generated")
            entry["checks"] = s.get("checks")
            entry["tokens"] = s.get("tokens")
            for layout in ("paged", "contiguous"):
                summary["rows"].append(layout_row(b, layout, j))
        elif "error" not in entry:
            msg = get(j, "error", "message") if j else None
            entry["error"] = "no result (exit %s): %s" % (
                rc, msg or err.strip()[-400:])
        ok &= rc == 0 and bool(get(entry, "checks", "all"))
        summary["batches"].append(entry)
        print("serve_exec: batch %d: exit %s, %.0f s, checks %s" % (
            b, rc, secs, "passed" if get(entry, "checks", "all")
            else "FAILED or missing"), file=sys.stderr)
    summary["all_passed"] = ok
    with open(os.path.join(a.out, "serve_exec_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    md = markdown(summary)
    with open(os.path.join(a.out, "serve_exec_summary.md"), "w") as f:
        f.write(md)
    sys.stdout.write(md)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
