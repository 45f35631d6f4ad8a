#!/usr/bin/env python3
"""Checks the executor's real backward kernels against gradients computed
by hand (numpy, float64), on the GPU machine.

Two small training graphs are written as memplan JSON graphs:
  mlp: x[8,32] -> MatMul W1 -> Add b1 -> Relu -> Mul s -> Div d -> Sub c
       -> Gemm(W2 [10,64] transB, b2) -> Softmax -> Mul s2 -> output
  bmm: x[4,8,16] -> MatMul W3[16,12] -> Relu -> MatMul W4[4,12,6] -> output
  sums: gradients of many terms (a bias over 512 rows, a scalar factor,
       a per-channel factor of [8,16,32,32]), summed in chunks
Each is planned and run as one SGD training step:
  memplan validate G --train --optimizer sgd --dump DIR --json [--poison]
The loss is the sum of the outputs; SGD updates every weight in place
(w -= 0.01 dw), and --dump writes the weights before (kind weight) and
after (kind weight_after) the step, so the executor's gradient of each
weight is (before - after) / 0.01. It must match the hand-computed one:
max|dw_gpu - dw_ref| <= TOL x max|dw_ref| (TOL 1e-3, fp32), and the loss
within 1e-4 relative. Every node must run a real kernel
(nodes_synthetic 0), and the run with --poison (freed blocks filled
with 0xff) must give the same gradients.

Usage: python3 validate/train_check.py [--memplan build-gpu/memplan]
                                       [--out DIR] [--keep]
Exit status 0 when every check passes, 1 otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

LR = 0.01  # the SGD step's default learning rate (validate/host.c)
TOL = 1e-3


def graph(name, tensors, nodes, outputs):
    ts = [{"name": n, "dtype": "float32", "shape": list(s), "kind": k}
          for n, s, k in tensors]
    ns = []
    for n, op, ins, outs, attrs in nodes:
        d = {"name": n, "op": op, "inputs": ins, "outputs": outs}
        if attrs:
            d["attributes"] = attrs
        ns.append(d)
    return {"format": "memplan-graph", "version": 1, "name": name,
            "tensors": ts, "nodes": ns, "outputs": outputs}


def mlp_graph():
    B, D, H, C = 8, 32, 64, 10
    t = [("x", (B, D), "input"), ("W1", (D, H), "weight"),
         ("b1", (H,), "weight"), ("s", (H,), "weight"),
         ("d", (H,), "weight"), ("c", (H,), "weight"),
         ("W2", (C, H), "weight"), ("b2", (C,), "weight"),
         ("s2", (C,), "weight")]
    for n in ("h1", "h2", "a", "m", "q", "r"):
        t.append((n, (B, H), "activation"))
    t += [("z", (B, C), "activation"), ("p", (B, C), "activation"),
          ("o", (B, C), "output")]
    n = [("mm1", "MatMul", ["x", "W1"], ["h1"], None),
         ("add", "Add", ["h1", "b1"], ["h2"], None),
         ("relu", "Relu", ["h2"], ["a"], None),
         ("mul", "Mul", ["a", "s"], ["m"], None),
         ("div", "Div", ["m", "d"], ["q"], None),
         ("sub", "Sub", ["q", "c"], ["r"], None),
         ("gemm", "Gemm", ["r", "W2", "b2"], ["z"], {"transB": 1}),
         ("softmax", "Softmax", ["z"], ["p"], {"axis": 1}),
         ("scale", "Mul", ["p", "s2"], ["o"], None)]
    return graph("mlp", t, n, ["o"])


def mlp_ref(v):
    x, W1, b1, s, d, c, W2, b2, s2 = (v[k] for k in (
        "x", "W1", "b1", "s", "d", "c", "W2", "b2", "s2"))
    h1 = x @ W1
    h2 = h1 + b1
    a = np.maximum(h2, 0)
    m = a * s
    q = m / d
    r = q - c
    z = r @ W2.T + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    o = p * s2
    g = {}
    dp = np.broadcast_to(s2, o.shape)
    g["s2"] = p.sum(axis=0)
    dz = p * (dp - (dp * p).sum(axis=1, keepdims=True))
    g["W2"] = dz.T @ r
    g["b2"] = dz.sum(axis=0)
    dr = dz @ W2
    g["c"] = -dr.sum(axis=0)
    dm = dr / d
    g["d"] = -(dr * m / d / d).sum(axis=0)
    g["s"] = (dm * a).sum(axis=0)
    dh2 = dm * s * (h2 > 0)
    g["b1"] = dh2.sum(axis=0)
    g["W1"] = x.T @ dh2
    return o.sum(), g


def bmm_graph():
    t = [("x", (4, 8, 16), "input"), ("W3", (16, 12), "weight"),
         ("t1", (4, 8, 12), "activation"), ("t2", (4, 8, 12), "activation"),
         ("W4", (4, 12, 6), "weight"), ("o", (4, 8, 6), "output")]
    n = [("mm1", "MatMul", ["x", "W3"], ["t1"], None),
         ("relu", "Relu", ["t1"], ["t2"], None),
         ("mm2", "MatMul", ["t2", "W4"], ["o"], None)]
    return graph("bmm", t, n, ["o"])


def bmm_ref(v):
    x, W3, W4 = v["x"], v["W3"], v["W4"]
    t1 = x @ W3
    t2 = np.maximum(t1, 0)
    o = t2 @ W4
    do = np.ones_like(o)
    g = {"W4": np.transpose(t2, (0, 2, 1)) @ do}
    dt1 = (do @ np.transpose(W4, (0, 2, 1))) * (t1 > 0)
    g["W3"] = x.reshape(-1, 16).T @ dt1.reshape(-1, 12)
    return o.sum(), g


def sums_graph():
    """gradients of many terms: a bias over 512 rows, a per-channel
    factor of [8, 16, 32, 32] (inner dims summed), a scalar factor"""
    t = [("x", (512, 64), "input"), ("b", (64,), "weight"),
         ("s", (1,), "weight"), ("h", (512, 64), "activation"),
         ("y", (512, 64), "output"),
         ("u", (8, 16, 32, 32), "input"), ("c", (1, 16, 1, 1), "weight"),
         ("v", (8, 16, 32, 32), "output")]
    n = [("add", "Add", ["x", "b"], ["h"], None),
         ("mul", "Mul", ["h", "s"], ["y"], None),
         ("chan", "Mul", ["u", "c"], ["v"], None)]
    return graph("sums", t, n, ["y", "v"])


def sums_ref(v):
    x, b, s, u, c = (v[k] for k in ("x", "b", "s", "u", "c"))
    h = x + b
    y = h * s
    w = u * c
    g = {"s": h.sum().reshape(1), "b": np.broadcast_to(s, (512, 64)).sum(
        axis=0), "c": u.sum(axis=(0, 2, 3)).reshape(1, 16, 1, 1)}
    return y.sum() + w.sum(), g


def read_dump(d):
    raw = np.fromfile(os.path.join(d, "values.bin"), dtype=np.uint8)
    out = {}
    with open(os.path.join(d, "values.txt")) as f:
        for line in f:
            kind, name, dt, dims, off, nb = line.rstrip("\n").split("\t")
            shape = [int(x) for x in dims.split(",")] if dims else []
            a = raw[int(off):int(off) + int(nb)].view(np.float32)
            out.setdefault(kind, {})[name] = a.reshape(shape)
    return out


def run_case(memplan, out, name, g, ref, poison):
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
    dump = os.path.join(out, name + ("_poison" if poison else ""))
    cmd = [memplan, "validate", path, "--train", "--optimizer", "sgd",
           "--dump", dump, "--json"] + (["--poison"] if poison else [])
    print("$ " + " ".join(cmd))
    pr = subprocess.run(cmd, capture_output=True, text=True)
    # 5: a check failed (the report is still printed)
    if pr.returncode not in (0, 5):
        print(pr.stdout + pr.stderr)
        print("FAIL %s: memplan validate exited %d" % (name, pr.returncode))
        return False, None
    rep = json.loads(pr.stdout)
    ok = pr.returncode == 0
    if not ok:
        print("  FAIL: memplan validate's checks: %s" % rep.get("checks"))
    print("  nodes: %d real, %d synthetic; backward %d real, %d synthetic; "
          "optimizer %d real, %d synthetic; checks all: %s" % (
              rep["nodes_real_kernel"], rep["nodes_synthetic"],
              rep.get("backward_nodes_real_kernel", -1),
              rep.get("backward_nodes_synthetic", -1),
              rep.get("optimizer_nodes_real_kernel", -1),
              rep.get("optimizer_nodes_synthetic", -1),
              rep.get("checks", {}).get("all")))
    if rep["nodes_synthetic"] != 0:
        print("  FAIL: nodes on the synthetic kernel")
        ok = False
    v = read_dump(dump)
    vals = {k: a.astype(np.float64) for k, a in v["weight"].items()}
    vals.update({k: a.astype(np.float64) for k, a in v["input"].items()})
    loss_ref, gref = ref(vals)
    loss = float(v["output"]["loss"].reshape(-1)[0])
    rel = abs(loss - loss_ref) / max(abs(loss_ref), 1e-6)
    good = rel <= 1e-4
    ok &= good
    print("  %-4s loss %.6g, reference %.6g, rel %.2e" % (
        "ok" if good else "FAIL", loss, loss_ref, rel))
    grads = {}
    for k, gr in sorted(gref.items()):
        before = v["weight"][k].astype(np.float64)
        after = v["weight_after"][k].astype(np.float64)
        gg = (before - after) / LR
        grads[k] = gg
        scale = max(np.abs(gr).max(), 1e-6)
        err = np.abs(gg - gr).max() / scale
        good = err <= TOL
        ok &= good
        print("  %-4s d%-3s max|ref| %.3e  max|gpu-ref|/max|ref| %.2e" % (
            "ok" if good else "FAIL", k, scale, err))
    return ok, grads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memplan", default="build-gpu/memplan")
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="train_check")
    os.makedirs(out, exist_ok=True)
    ok = True
    for name, g, ref in (("mlp", mlp_graph(), mlp_ref),
                         ("bmm", bmm_graph(), bmm_ref),
                         ("sums", sums_graph(), sums_ref)):
        r1, g1 = run_case(a.memplan, out, name, g, ref, False)
        r2, g2 = run_case(a.memplan, out, name, g, ref, True)
        ok &= r1 and r2
        if g1 is not None and g2 is not None:
            same = all(np.array_equal(g1[k], g2[k]) for k in g1)
            print("  %-4s %s: gradients with --poison identical" % (
                "ok" if same else "FAIL", name))
            ok &= same
    if not a.keep and not a.out:
        shutil.rmtree(out, ignore_errors=True)
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
