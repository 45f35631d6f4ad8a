#!/usr/bin/env python3
"""Checks the executor's real backward kernels against gradients computed
by hand (numpy, float64), on the GPU machine.

Small training graphs are written as memplan JSON graphs:
  mlp: x[8,32] -> MatMul W1 -> Add b1 -> Relu -> Mul s -> Div d -> Sub c
       -> Gemm(W2 [10,64] transB, b2) -> Softmax -> Mul s2 -> output
  bmm: x[4,8,16] -> MatMul W3[16,12] -> Relu -> MatMul W4[4,12,6] -> output
  sums: gradients of many terms (a bias over 512 rows, a scalar factor,
       a per-channel factor of [8,16,32,32]), summed in chunks
  conv: x[2,4,9,9] -> Conv 3x3 + bias -> Relu -> Conv grouped (4), stride
       2 -> Conv depthwise, dilation 2, + bias -> Relu -> Conv 2x2 with
       bottom/right pads only (im2col forward, direct backward kernels)
       -> Mul s -> output
  dwres: x[4,16,12,12] -> Conv 1x1 + bias -> Relu -> Conv depthwise 5x5 +
       bias -> Add (residual) -> Conv 1x1 stride 2 -> Mul s7 -> output
  bn_train, bn_eval: x[4,3,5,5] * w0[3,5,5] -> BatchNormalization (batch
       statistics; the running ones) -> * s -> output
  ln: x[6,10,16] * w0 -> LayerNormalization (axis -1, bias) ->
       LayerNormalization (axis 1, no bias) -> * s -> output
  ln_rows: x[2048,48] * w0 -> LayerNormalization -> * s -> output (the
       scale's and bias's sums over 2048 rows in parts)
  pool: x[2,3,10,10] * wP[3,1,1] -> P -> * sP -> output, for P MaxPool
       (3x3 stride 2 pad 1; 2x2 dilation 2), AveragePool (3x3 stride 2 pad
       1; count_include_pad 0, and 1 with ceil_mode) and GlobalAveragePool
  attn, attn_where: a fused attention (attn_graph: its masks, scalars and
       views), every operand trained
  moves: Transpose, Gather (int64 indices with repeats), Concat, Split,
       Slice, Pad, ReduceMean, Expand (a broadcast view), Where (a bool
       condition), Pow (its exponent a weight), Cast
  unary: Erf, LeakyRelu, Elu, Neg, Abs, Sin, Gelu, HardSwish, Clip, Cos,
       Gelu (tanh), Softplus, Sqrt, Log, Exp, Reciprocal, Sigmoid,
       HardSigmoid, Tanh in a chain
  pmm: MatMul of a permuted view (perm 1,0,2) and a transposed weight,
       both read in place
Each is planned and run as one SGD training step:
  memplan validate G --train --optimizer sgd --dump DIR --json [--poison]
The loss is the sum of the outputs; SGD updates every weight in place
(w -= 0.01 dw), and --dump writes the weights before (kind weight) and
after (kind weight_after) the step, so the executor's gradient of each
weight is (before - after) / 0.01. It must match the hand-computed one:
max|dw_gpu - dw_ref| <= TOL x max|dw_ref| (TOL 1e-3, fp32), and the loss
within 1e-4 relative. Every node must run a real kernel
(nodes_synthetic 0), and the run with --poison (freed blocks filled
with 0xff) must give the same gradients. Then one step of Adam, AdamW
(foreach and for-loop), Adam (fused) and momentum on mlp: the states
after the step and the updated weights against torch.optim's formulas
(opt_check).

The reference gradients are written out by hand (numpy, float64);
--check-formulas checks them against finite differences of the
reference's loss, and the reference convolution against its definition,
without a GPU.

norm_fwd runs forward only (memplan validate G --dump DIR --json) and
compares every output: BatchNormalization in training (y, the running
mean and var updated with momentum 0.9 and the unbiased variance, as
PyTorch), LayerNormalization's Mean and InvStdDev, MaxPool's indices.

Usage: python3 validate/train_check.py [--memplan build-gpu/memplan]
                                       [--out DIR] [--keep]
                                       [--check-formulas]
Exit status 0 when every check passes, 1 otherwise.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

LR = 0.01  # the SGD step's default learning rate (validate/host.c)
TOL = 1e-3


def graph(name, tensors, nodes, outputs):
    """tensors: (name, shape, kind[, dtype]); kind None: produced by a
    node (not declared)"""
    ts = []
    for t in tensors:
        d = {"name": t[0], "dtype": t[3] if len(t) > 3 else "float32",
             "shape": list(t[1])}
        if t[2]:
            d["kind"] = t[2]
        ts.append(d)
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


def conv_out(n, k, s, d, p0, p1):
    return (n + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def conv_fwd(x, w, b=None, s=(1, 1), pads=(0, 0, 0, 0), d=(1, 1), g=1):
    """ONNX Conv (NCHW; pads top, left, bottom, right) in float64: one
    product per kernel tap and group."""
    N, C, H, W = x.shape
    M, Cg, KH, KW = w.shape
    pt, pl, pb, pr = pads
    OH = conv_out(H, KH, s[0], d[0], pt, pb)
    OW = conv_out(W, KW, s[1], d[1], pl, pr)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    y = np.zeros((N, M, OH, OW))
    Mg = M // g
    for gi in range(g):
        xs, ws = xp[:, gi * Cg:(gi + 1) * Cg], w[gi * Mg:(gi + 1) * Mg]
        for i in range(KH):
            for j in range(KW):
                patch = xs[:, :, i * d[0]:i * d[0] + (OH - 1) * s[0] + 1:s[0],
                           j * d[1]:j * d[1] + (OW - 1) * s[1] + 1:s[1]]
                y[:, gi * Mg:(gi + 1) * Mg] += np.einsum(
                    "nchw,mc->nmhw", patch, ws[:, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    return y


def conv_bwd(dy, x, w, s=(1, 1), pads=(0, 0, 0, 0), d=(1, 1), g=1):
    """The gradients of conv_fwd's x, w and bias from dy, tap by tap: the
    transposes of the forward's products."""
    N, C, H, W = x.shape
    M, Cg, KH, KW = w.shape
    pt, pl, pb, pr = pads
    OH, OW = dy.shape[2], dy.shape[3]
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    Mg = M // g
    for gi in range(g):
        gc, gm = slice(gi * Cg, (gi + 1) * Cg), slice(gi * Mg, (gi + 1) * Mg)
        for i in range(KH):
            for j in range(KW):
                sh = slice(i * d[0], i * d[0] + (OH - 1) * s[0] + 1, s[0])
                sw = slice(j * d[1], j * d[1] + (OW - 1) * s[1] + 1, s[1])
                dw[gm, :, i, j] += np.einsum("nmhw,nchw->mc", dy[:, gm],
                                             xp[:, gc, sh, sw])
                dxp[:, gc, sh, sw] += np.einsum("nmhw,mc->nchw", dy[:, gm],
                                                w[gm, :, i, j])
    return dxp[:, :, pt:pt + H, pl:pl + W], dw, dy.sum(axis=(0, 2, 3))


def conv_graph():
    """Convolutions of every kind the executor lowers: plain with a bias
    (cuDNN), grouped and strided, depthwise and dilated with a bias, and
    one with bottom/right pads only (im2col forward, direct backward)."""
    t = [("x", (2, 4, 9, 9), "input"), ("w1", (8, 4, 3, 3), "weight"),
         ("b1", (8,), "weight"), ("h1", (2, 8, 9, 9), "activation"),
         ("h2", (2, 8, 9, 9), "activation"), ("w2", (8, 2, 3, 3), "weight"),
         ("h3", (2, 8, 5, 5), "activation"), ("w3", (8, 1, 3, 3), "weight"),
         ("b3", (8,), "weight"), ("h4", (2, 8, 5, 5), "activation"),
         ("h5", (2, 8, 5, 5), "activation"), ("w4", (4, 8, 2, 2), "weight"),
         ("y", (2, 4, 5, 5), "activation"), ("s", (4, 5, 5), "weight"),
         ("o", (2, 4, 5, 5), "output")]
    n = [("a", "Conv", ["x", "w1", "b1"], ["h1"],
          {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
         ("relu1", "Relu", ["h1"], ["h2"], None),
         ("b", "Conv", ["h2", "w2"], ["h3"],
          {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2],
           "group": 4}),
         ("c", "Conv", ["h3", "w3", "b3"], ["h4"],
          {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2],
           "dilations": [2, 2], "group": 8}),
         ("relu2", "Relu", ["h4"], ["h5"], None),
         ("d", "Conv", ["h5", "w4"], ["y"],
          {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1]}),
         ("scale", "Mul", ["y", "s"], ["o"], None)]
    return graph("conv", t, n, ["o"])


def conv_ref(v):
    x = v["x"]
    A = dict(pads=(1, 1, 1, 1))
    B = dict(pads=(1, 1, 1, 1), s=(2, 2), g=4)
    C = dict(pads=(2, 2, 2, 2), d=(2, 2), g=8)
    D = dict(pads=(0, 0, 1, 1))
    h1 = conv_fwd(x, v["w1"], v["b1"], **A)
    h2 = np.maximum(h1, 0)
    h3 = conv_fwd(h2, v["w2"], **B)
    h4 = conv_fwd(h3, v["w3"], v["b3"], **C)
    h5 = np.maximum(h4, 0)
    y = conv_fwd(h5, v["w4"], **D)
    o = y * v["s"]
    g = {"s": y.sum(axis=0)}
    dh5, g["w4"], _ = conv_bwd(np.broadcast_to(v["s"], o.shape), h5,
                               v["w4"], **D)
    dh3, g["w3"], g["b3"] = conv_bwd(dh5 * (h4 > 0), h3, v["w3"], **C)
    dh2, g["w2"], _ = conv_bwd(dh3, h2, v["w2"], **B)
    _, g["w1"], g["b1"] = conv_bwd(dh2 * (h1 > 0), x, v["w1"], **A)
    return o.sum(), g


def dwres_graph():
    """An inverted-residual block as in EfficientNet and MobileNet: a 1x1
    expansion with a bias, a depthwise 5x5 with a bias, a residual Add, a
    1x1 projection with stride 2."""
    t = [("x", (4, 16, 12, 12), "input"), ("w5", (32, 16, 1, 1), "weight"),
         ("b5", (32,), "weight"), ("a1", (4, 32, 12, 12), "activation"),
         ("a2", (4, 32, 12, 12), "activation"),
         ("w6", (32, 1, 5, 5), "weight"), ("b6", (32,), "weight"),
         ("a3", (4, 32, 12, 12), "activation"),
         ("a4", (4, 32, 12, 12), "activation"),
         ("w7", (16, 32, 1, 1), "weight"), ("a5", (4, 16, 6, 6), "activation"),
         ("s7", (16, 6, 6), "weight"), ("o", (4, 16, 6, 6), "output")]
    n = [("e", "Conv", ["x", "w5", "b5"], ["a1"], {"kernel_shape": [1, 1]}),
         ("relu", "Relu", ["a1"], ["a2"], None),
         ("f", "Conv", ["a2", "w6", "b6"], ["a3"],
          {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "group": 32}),
         ("res", "Add", ["a3", "a2"], ["a4"], None),
         ("p", "Conv", ["a4", "w7"], ["a5"],
          {"kernel_shape": [1, 1], "strides": [2, 2]}),
         ("scale", "Mul", ["a5", "s7"], ["o"], None)]
    return graph("dwres", t, n, ["o"])


def dwres_ref(v):
    E, F, P = {}, dict(pads=(2, 2, 2, 2), g=32), dict(s=(2, 2))
    a1 = conv_fwd(v["x"], v["w5"], v["b5"], **E)
    a2 = np.maximum(a1, 0)
    a3 = conv_fwd(a2, v["w6"], v["b6"], **F)
    a4 = a3 + a2
    a5 = conv_fwd(a4, v["w7"], **P)
    o = a5 * v["s7"]
    g = {"s7": a5.sum(axis=0)}
    da4, g["w7"], _ = conv_bwd(np.broadcast_to(v["s7"], o.shape), a4,
                               v["w7"], **P)
    da2, g["w6"], g["b6"] = conv_bwd(da4, a2, v["w6"], **F)
    da2 = da2 + da4
    _, g["w5"], g["b5"] = conv_bwd(da2 * (a1 > 0), v["x"], v["w5"], **E)
    return o.sum(), g


CASES = (("mlp", mlp_graph, mlp_ref), ("bmm", bmm_graph, bmm_ref),
         ("sums", sums_graph, sums_ref), ("conv", conv_graph, conv_ref),
         ("dwres", dwres_graph, dwres_ref))


def conv_naive(x, w, b, s, pads, d, g):
    """ONNX Conv by its definition, one output element at a time."""
    N, C, H, W = x.shape
    M, Cg, KH, KW = w.shape
    OH = conv_out(H, KH, s[0], d[0], pads[0], pads[2])
    OW = conv_out(W, KW, s[1], d[1], pads[1], pads[3])
    y = np.zeros((N, M, OH, OW))
    for n, m, oh, ow in np.ndindex(N, M, OH, OW):
        c0 = m // (M // g) * Cg
        acc = b[m] if b is not None else 0.0
        for c, i, j in np.ndindex(Cg, KH, KW):
            ih = oh * s[0] - pads[0] + i * d[0]
            iw = ow * s[1] - pads[1] + j * d[1]
            if 0 <= ih < H and 0 <= iw < W:
                acc += x[n, c0 + c, ih, iw] * w[m, c, i, j]
        y[n, m, oh, ow] = acc
    return y


def check_formulas():
    """The hand-written gradients against central finite differences of
    the reference's own loss (float64), a few elements of every weight;
    conv_fwd against the definition; needs no GPU."""
    rng = np.random.default_rng(1)
    ok = True
    for xs, ws, kw in (((2, 4, 9, 9), (8, 4, 3, 3), dict(pads=(1, 1, 1, 1))),
                       ((2, 8, 9, 9), (8, 2, 3, 3),
                        dict(pads=(1, 1, 1, 1), s=(2, 2), g=4)),
                       ((2, 8, 5, 5), (8, 1, 3, 3),
                        dict(pads=(2, 2, 2, 2), d=(2, 2), g=8)),
                       ((2, 8, 5, 5), (4, 8, 2, 2), dict(pads=(0, 0, 1, 1)))):
        x, w = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ws)
        b = rng.uniform(-1, 1, ws[0])
        a = dict(s=(1, 1), pads=(0, 0, 0, 0), d=(1, 1), g=1)
        a.update(kw)
        err = np.abs(conv_fwd(x, w, b, **a) - conv_naive(x, w, b, **a)).max()
        good = err <= 1e-12
        ok &= good
        print("  %-4s conv_fwd %s against the definition, max diff %.1e" % (
            "ok" if good else "FAIL", kw, err))
    for name, gfun, ref in CASES:
        g = gfun()
        v = {t["name"]: rng.uniform(-1, 1, t["shape"])
             for t in g["tensors"] if t.get("kind") in ("input", "weight")}
        if name == "mlp":  # divisors away from 0
            v["d"] = rng.uniform(0.5, 1.5, v["d"].shape)
        if name.startswith("attn"):  # the divisor; the bool mask
            v["c"] = rng.uniform(0.5, 1.5, ())
            if "keep" in v:
                v["keep"] = rng.random(v["keep"].shape) < 0.5
        _, grads = ref(v)
        worst = 0.0
        for k, gr in grads.items():
            for _ in range(6):
                i = tuple(int(rng.integers(0, n)) for n in gr.shape)
                e = 1e-6
                keep = v[k][i]
                v[k][i] = keep + e
                lp, _ = ref(v)
                v[k][i] = keep - e
                lm, _ = ref(v)
                v[k][i] = keep
                fd = (lp - lm) / (2 * e)
                err = abs(fd - gr[i]) / max(np.abs(gr).max(), 1e-6)
                worst = max(worst, err)
        good = worst <= 1e-6
        ok &= good
        print("  %-4s %s: hand-written gradients vs finite differences, "
              "max rel %.1e" % ("ok" if good else "FAIL", name, worst))
    return ok & check_shape_formulas(rng)


def attn_graph(where):
    """Fused attention, trained. attn: q = x Wq, kT = Transpose(kin) of an
    input (a transposed view the kernels read in place), v = x Wv;
    MatMul(q, kT) / c + mask [1,T,T] (weights: the mask broadcast over
    the batch) -> Softmax -> MatMul v. attn_where: K^T a weight, Q and
    K^T both scaled by one scalar weight a (as GPT-2's exports),
    Where(keep [1,T,T] bool input, scores, fill weight), then / c (the
    mask before the scale)."""
    B, T, E, D = 2, 8, 16, 8
    t = [("x", (B, T, E), "input"), ("Wq", (E, D), "weight"),
         ("Wv", (E, D), "weight"), ("c", (), "weight")]
    for n in ("q", "v", "o"):
        t.append((n, (B, T, D), "activation"))
    for n in ("s", "z", "w", "p"):
        t.append((n, (B, T, T), "activation"))
    n = [("mmq", "MatMul", ["x", "Wq"], ["q"], None),
         ("mmv", "MatMul", ["x", "Wv"], ["v"], None)]
    if not where:
        t += [("mask", (1, T, T), "weight"), ("kin", (B, T, D), "input"),
              ("kT", (B, D, T), "activation")]
        n += [("tk", "Transpose", ["kin"], ["kT"], {"perm": [0, 2, 1]}),
              ("qk", "MatMul", ["q", "kT"], ["s"], None),
              ("div", "Div", ["s", "c"], ["z"], None),
              ("add", "Add", ["z", "mask"], ["w"], None)]
    else:
        t += [("kT", (B, D, T), "weight"), ("a", (), "weight"),
              ("fill", (), "weight"), ("qa", (B, T, D), "activation"),
              ("ka", (B, D, T), "activation")]
        n += [("sq", "Mul", ["q", "a"], ["qa"], None),
              ("sk", "Mul", ["kT", "a"], ["ka"], None),
              ("qk", "MatMul", ["qa", "ka"], ["s"], None),
              ("where", "Where", ["keep", "s", "fill"], ["z"], None),
              ("div", "Div", ["z", "c"], ["w"], None)]
    n += [("softmax", "Softmax", ["w"], ["p"], {"axis": -1}),
          ("pv", "MatMul", ["p", "v"], ["o"], None)]
    g = graph("attn_where" if where else "attn", t, n, ["o"])
    if where:
        g["tensors"].append({"name": "keep", "dtype": "bool",
                             "shape": [1, T, T], "kind": "input"})
    return g


def softmax_bwd(p, dp):
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def attn_ref(v):
    x, Wq, Wv, c, M = (v[k] for k in ("x", "Wq", "Wv", "c", "mask"))
    q, kT, vv = x @ Wq, v["kin"].transpose(0, 2, 1), x @ Wv
    S = q @ kT
    Z = S / c + M
    e = np.exp(Z - Z.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    O = P @ vv
    dO = np.ones_like(O)
    dZ = softmax_bwd(P, dO @ vv.transpose(0, 2, 1))
    g = {"mask": dZ.sum(axis=0, keepdims=True),
         "c": np.array((dZ * -S / c / c).sum())}
    dq = (dZ / c) @ kT.transpose(0, 2, 1)
    dv = P.transpose(0, 2, 1) @ dO
    for w, d in (("Wq", dq), ("Wv", dv)):
        g[w] = x.reshape(-1, x.shape[-1]).T @ d.reshape(-1, d.shape[-1])
    return O.sum(), g


def attn_where_ref(v):
    x, Wq, kT, Wv, c, a, fill = (v[k] for k in (
        "x", "Wq", "kT", "Wv", "c", "a", "fill"))
    keep = v["keep"] != 0
    q, vv = x @ Wq, x @ Wv
    S = (q * a) @ (kT * a)
    W = np.where(keep, S, fill)
    Z = W / c
    e = np.exp(Z - Z.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    O = P @ vv
    dO = np.ones_like(O)
    dZ = softmax_bwd(P, dO @ vv.transpose(0, 2, 1))
    dW = dZ / c
    g = {"c": np.array((dZ * -W / c / c).sum()),
         "fill": np.array(np.where(keep, 0.0, dW).sum())}
    dS = np.where(keep, dW, 0.0)
    dqa = dS @ (kT * a).transpose(0, 2, 1)
    dka = (q * a).transpose(0, 2, 1) @ dS
    g["a"] = np.array((dqa * q).sum() + (dka * kT).sum())
    g["kT"] = dka * a
    dq, dv = dqa * a, P.transpose(0, 2, 1) @ dO
    for w, d in (("Wq", dq), ("Wv", dv)):
        g[w] = x.reshape(-1, x.shape[-1]).T @ d.reshape(-1, d.shape[-1])
    return O.sum(), g


CASES += (("attn", lambda: attn_graph(False), attn_ref),
          ("attn_where", lambda: attn_graph(True), attn_where_ref))

# torch.optim's defaults the executor's steps use (validate/host.c)
ADAM_LR, BETA1, BETA2, ADAM_EPS, ADAMW_WD = 1e-3, 0.9, 0.999, 1e-8, 0.01
MOMENTUM_LR = 0.01


DTYPES = {"float32": np.float32, "int64": np.int64}


# ---- normalization and pooling ---------------------------------------------
EPS = 1e-5
MOM = 0.9  # ONNX's momentum: running = MOM running + (1 - MOM) batch


def bn_graph(training):
    """x[4,3,5,5] * w0[3,5,5] -> BatchNormalization(g, b, rm, rv) -> y
    (+ the running statistics in training) -> * s[4,3,5,5] -> output"""
    t = [("x", (4, 3, 5, 5), "input"), ("w0", (3, 5, 5), "weight"),
         ("h", (4, 3, 5, 5), "activation"), ("g", (3,), "weight"),
         ("b", (3,), "weight"), ("rm", (3,), "weight"), ("rv", (3,), "weight"),
         ("y", (4, 3, 5, 5), "activation"), ("s", (4, 3, 5, 5), "weight"),
         ("o", (4, 3, 5, 5), "output")]
    outs = ["y"]
    if training:
        t += [("rm_out", (3,), "activation"), ("rv_out", (3,), "activation")]
        outs += ["rm_out", "rv_out"]
    n = [("mul", "Mul", ["x", "w0"], ["h"], None),
         ("bn", "BatchNormalization", ["h", "g", "b", "rm", "rv"], outs,
          {"epsilon": EPS, "momentum": MOM, "training_mode": training}),
         ("scale", "Mul", ["y", "s"], ["o"], None)]
    return graph("bn_train" if training else "bn_eval", t, n, ["o"])


def bn_ref(v, training):
    x, w0, gm, b, rm, rv, s = (v[k] for k in (
        "x", "w0", "g", "b", "rm", "rv", "s"))
    ax = (0, 2, 3)
    c = lambda a: a.reshape(1, -1, 1, 1)
    h = x * w0
    M = h.size // h.shape[1]
    if training:
        mean, var = h.mean(axis=ax), h.var(axis=ax)  # biased
    else:
        mean, var = rm, np.abs(rv)
    inv = 1.0 / np.sqrt(var + EPS)
    xh = (h - c(mean)) * c(inv)
    y = xh * c(gm) + c(b)
    o = y * s
    dy = s
    sdy, sdyx = dy.sum(axis=ax), (dy * xh).sum(axis=ax)
    g = {"s": y, "g": sdyx, "b": sdy}
    if training:
        dh = c(gm * inv) * (dy - c(sdy) / M - xh * c(sdyx) / M)
        g["rm"] = np.zeros(3)
        g["rv"] = np.zeros(3)
    else:
        dh = c(gm * inv) * dy
        g["rm"] = -gm * inv * sdy
        g["rv"] = -0.5 * gm * inv * inv * sdyx * np.sign(rv)
    g["w0"] = (dh * x).sum(axis=0)
    return o.sum(), g


def ln_graph():
    """x[6,10,16] * w0[10,16] -> LayerNormalization(g1, b1; axis -1) -> y1
    -> LayerNormalization(g2[10,16], no bias; axis 1) -> y2 * s -> output"""
    t = [("x", (6, 10, 16), "input"), ("w0", (10, 16), "weight"),
         ("h", (6, 10, 16), "activation"), ("g1", (16,), "weight"),
         ("b1", (16,), "weight"), ("y1", (6, 10, 16), "activation"),
         ("g2", (10, 16), "weight"), ("y2", (6, 10, 16), "activation"),
         ("s", (6, 10, 16), "weight"), ("o", (6, 10, 16), "output")]
    n = [("mul", "Mul", ["x", "w0"], ["h"], None),
         ("ln1", "LayerNormalization", ["h", "g1", "b1"], ["y1"],
          {"axis": -1, "epsilon": EPS}),
         ("ln2", "LayerNormalization", ["y1", "g2"], ["y2"],
          {"axis": 1, "epsilon": EPS}),
         ("scale", "Mul", ["y2", "s"], ["o"], None)]
    return graph("ln", t, n, ["o"])


def ln_fwd(x, gm, b, axes):
    mean = x.mean(axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(x.var(axis=axes, keepdims=True) + EPS)
    xh = (x - mean) * inv
    return xh * gm + (b if b is not None else 0), xh, inv


def ln_bwd(dy, xh, inv, gm, axes):
    """dx, dscale, dbias (dscale/dbias summed over the other axes)"""
    D = np.prod([xh.shape[a] for a in axes])
    other = tuple(a for a in range(xh.ndim) if a not in axes)
    gg = dy * gm
    dx = inv * (gg - gg.sum(axis=axes, keepdims=True) / D -
                xh * (gg * xh).sum(axis=axes, keepdims=True) / D)
    return dx, (dy * xh).sum(axis=other), dy.sum(axis=other)


def ln_ref(v):
    x, w0, g1, b1, g2, s = (v[k] for k in ("x", "w0", "g1", "b1", "g2", "s"))
    h = x * w0
    y1, xh1, inv1 = ln_fwd(h, g1, b1, (2,))
    y2, xh2, inv2 = ln_fwd(y1, g2, None, (1, 2))
    o = y2 * s
    g = {"s": y2}
    dy1, g["g2"], _ = ln_bwd(s, xh2, inv2, g2, (1, 2))
    dh, g["g1"], g["b1"] = ln_bwd(dy1, xh1, inv1, g1, (2,))
    g["w0"] = (dh * x).sum(axis=0)
    return o.sum(), g


def ln_rows_graph():
    """x[2048,48] * w0[48] -> LayerNormalization(g, b) -> y * s -> output:
    the scale's and bias's sums over the rows in parts"""
    t = [("x", (2048, 48), "input"), ("w0", (48,), "weight"),
         ("h", (2048, 48), "activation"), ("g", (48,), "weight"),
         ("b", (48,), "weight"), ("y", (2048, 48), "activation"),
         ("s", (2048, 48), "weight"), ("o", (2048, 48), "output")]
    n = [("mul", "Mul", ["x", "w0"], ["h"], None),
         ("ln", "LayerNormalization", ["h", "g", "b"], ["y"],
          {"axis": -1, "epsilon": EPS}),
         ("scale", "Mul", ["y", "s"], ["o"], None)]
    return graph("ln_rows", t, n, ["o"])


def ln_rows_ref(v):
    x, w0, gm, b, s = (v[k] for k in ("x", "w0", "g", "b", "s"))
    h = x * w0
    y, xh, inv = ln_fwd(h, gm, b, (1,))
    g = {"s": y}
    dh, g["g"], g["b"] = ln_bwd(s, xh, inv, gm, (1,))
    g["w0"] = (dh * x).sum(axis=0)
    return (y * s).sum(), g


# pools of the pool graph: name, op, attributes (2-D windows of x[2,3,10,10])
POOLS = [
    ("mp", "MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2],
                       "pads": [1, 1, 1, 1]}),
    ("mpd", "MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2],
                        "strides": [1, 1]}),
    ("ap", "AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2],
                           "pads": [1, 1, 1, 1], "count_include_pad": 0}),
    ("apc", "AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2],
                            "pads": [1, 1, 1, 1], "count_include_pad": 1,
                            "ceil_mode": 1}),
    ("gap", "GlobalAveragePool", {}),
]
PX = (2, 3, 10, 10)


def pool_geom(a, H):
    """output size, kernel, stride, dilation, top pad of one axis"""
    k = a.get("kernel_shape", [H, H])[0]
    s = a.get("strides", [1, 1])[0]
    d = a.get("dilations", [1, 1])[0]
    p = a.get("pads", [0, 0, 0, 0])
    pb, pe = p[0], p[2]
    ek = d * (k - 1) + 1
    if a.get("ceil_mode", 0):
        o = -(-(H + pb + pe - ek) // s) + 1
        if (o - 1) * s >= H + pb:
            o -= 1
    else:
        o = (H + pb + pe - ek) // s + 1
    return o, k, s, d, pb


def pool_fwd_bwd(op, a, x, dy_fn):
    """y of the pool over x [N,C,H,W] (square windows), then dx from
    dy = dy_fn(y); MaxPool: the first maximum of each window; average:
    the count of the window's taps inside x, or (count_include_pad)
    inside the padded x"""
    N, C, H, W = x.shape
    O, k, s, d, pt = pool_geom(a, H)
    cip = a.get("count_include_pad", 0)
    taps = {}
    y = np.zeros((N, C, O, O))
    for oh in range(O):
        for ow in range(O):
            hs = [oh * s - pt + i * d for i in range(k)]
            ws = [ow * s - pt + j * d for j in range(k)]
            inside = [(ih, iw) for ih in hs for iw in ws
                      if 0 <= ih < H and 0 <= iw < W]
            npad = len([1 for ih in hs if ih < H + pt]) * \
                len([1 for iw in ws if iw < W + pt])
            taps[oh, ow] = (inside, npad)
            for n in range(N):
                for c in range(C):
                    vals = [x[n, c, ih, iw] for ih, iw in inside]
                    if op == "MaxPool":
                        y[n, c, oh, ow] = max(vals)
                    else:
                        y[n, c, oh, ow] = sum(vals) / (npad if cip else
                                                       len(inside))
    dy = dy_fn(y)
    dx = np.zeros_like(x)
    for (oh, ow), (inside, npad) in taps.items():
        for n in range(N):
            for c in range(C):
                if op == "MaxPool":
                    vals = [x[n, c, ih, iw] for ih, iw in inside]
                    ih, iw = inside[int(np.argmax(vals))]  # the first
                    dx[n, c, ih, iw] += dy[n, c, oh, ow]
                else:
                    cnt = npad if cip else len(inside)
                    for ih, iw in inside:
                        dx[n, c, ih, iw] += dy[n, c, oh, ow] / cnt
    return y, dx


def pool_graph():
    """per pool P: x * wP[3,1,1] -> P -> pP * sP -> output oP"""
    t = [("x", PX, "input")]
    n = []
    for name, op, a in POOLS:
        if op == "GlobalAveragePool":
            a = {"kernel_shape": [PX[2], PX[2]]}
        O = pool_geom(a, PX[2])[0]
        po = (PX[0], PX[1], O, O)
        t += [("w_" + name, (3, 1, 1), "weight"),
              ("h_" + name, PX, "activation"),
              ("p_" + name, po, "activation"),
              ("s_" + name, po, "weight"),
              ("o_" + name, po, "output")]
        n += [("mul_" + name, "Mul", ["x", "w_" + name], ["h_" + name], None),
              (name, op, ["h_" + name], ["p_" + name],
               dict(a) if op != "GlobalAveragePool" else None),
              ("scale_" + name, "Mul", ["p_" + name, "s_" + name],
               ["o_" + name], None)]
    return graph("pool", t, n, ["o_" + nm for nm, _, _ in POOLS])


def pool_ref(v):
    x = v["x"]
    loss, g = 0.0, {}
    for name, op, a in POOLS:
        if op == "GlobalAveragePool":
            a = {"kernel_shape": [PX[2], PX[2]]}
            op = "AveragePool"
        w, sc = v["w_" + name], v["s_" + name]
        y, dh = pool_fwd_bwd(op, a, x * w, lambda y: sc)
        loss += (y * sc).sum()
        g["s_" + name] = y
        g["w_" + name] = (dh * x).sum(axis=(0, 2, 3)).reshape(3, 1, 1)
    return loss, g


def norm_fwd_graph():
    """forward only, every output compared: BatchNormalization in training
    (y and the updated running mean and var), LayerNormalization with its
    Mean and InvStdDev, MaxPool with its indices"""
    t = [("x", (4, 3, 5, 5), "input"), ("g", (3,), "weight"),
         ("b", (3,), "weight"), ("rm", (3,), "weight"), ("rv", (3,), "weight"),
         ("y", (4, 3, 5, 5), "output"), ("rm_out", (3,), "output"),
         ("rv_out", (3,), "output"),
         ("x2", (6, 10, 16), "input"), ("g2", (16,), "weight"),
         ("b2", (16,), "weight"), ("y2", (6, 10, 16), "output"),
         ("mean2", (6, 10, 1), "output"), ("inv2", (6, 10, 1), "output"),
         ("x3", PX, "input"), ("y3", (2, 3, 5, 5), "output")]
    n = [("bn", "BatchNormalization", ["x", "g", "b", "rm", "rv"],
          ["y", "rm_out", "rv_out"],
          {"epsilon": EPS, "momentum": MOM, "training_mode": 1}),
         ("ln", "LayerNormalization", ["x2", "g2", "b2"],
          ["y2", "mean2", "inv2"], {"axis": -1, "epsilon": EPS}),
         ("mp", "MaxPool", ["x3"], ["y3", "i3"], dict(POOLS[0][2]))]
    g = graph("norm_fwd", t, n, ["y", "rm_out", "rv_out", "y2", "mean2",
                                 "inv2", "y3", "i3"])
    g["tensors"].append({"name": "i3", "dtype": "int64",
                         "shape": [2, 3, 5, 5], "kind": "output"})
    return g


def norm_fwd_ref(v):
    x, gm, b, rm, rv = (v[k] for k in ("x", "g", "b", "rm", "rv"))
    c = lambda a: a.reshape(1, -1, 1, 1)
    ax = (0, 2, 3)
    M = x.size // x.shape[1]
    mean, var = x.mean(axis=ax), x.var(axis=ax)
    out = {"y": (x - c(mean)) / np.sqrt(c(var) + EPS) * c(gm) + c(b),
           "rm_out": MOM * rm + (1 - MOM) * mean,
           "rv_out": MOM * rv + (1 - MOM) * var * M / (M - 1)}
    out["y2"], _, out["inv2"] = ln_fwd(v["x2"], v["g2"], v["b2"], (2,))
    out["mean2"] = v["x2"].mean(axis=2, keepdims=True)
    x3 = v["x3"]
    y3, _ = pool_fwd_bwd("MaxPool", POOLS[0][2], x3, lambda y: y)
    out["y3"] = y3
    # the flat index into x3 of each window's first maximum
    N, C, H, W = x3.shape
    O, k, s, d, pt = pool_geom(POOLS[0][2], H)
    idx = np.zeros((N, C, O, O), dtype=np.int64)
    for n in range(N):
        for ch in range(C):
            for oh in range(O):
                for ow in range(O):
                    best = None
                    for i in range(k):
                        for j in range(k):
                            ih, iw = oh * s - pt + i * d, ow * s - pt + j * d
                            if 0 <= ih < H and 0 <= iw < W and (
                                    best is None or x3[n, ch, ih, iw] > best):
                                best = x3[n, ch, ih, iw]
                                idx[n, ch, oh, ow] = ((n * C + ch) * H + ih) \
                                    * W + iw
    out["i3"] = idx
    return out


def run_forward(memplan, out, name, g, ref):
    """memplan validate (inference) with --dump: every output against the
    reference (float: max|gpu-ref| <= 1e-4 max|ref|; int: equal)"""
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
    dump = os.path.join(out, name)
    # FMA-only convolutions: the references are float64 (TF32, the
    # default, rounds the operands to 10 mantissa bits)
    cmd = [memplan, "validate", path, "--dump", dump, "--json",
           "--conv-math", "fp32"]
    print("$ " + " ".join(cmd))
    pr = subprocess.run(cmd, capture_output=True, text=True)
    if pr.returncode not in (0, 5):
        print(pr.stdout + pr.stderr)
        print("FAIL %s: memplan validate exited %d" % (name, pr.returncode))
        return False
    rep = json.loads(pr.stdout)
    ok = pr.returncode == 0
    if not ok:
        print("  FAIL: memplan validate's checks: %s" % rep.get("checks"))
    if rep["nodes_synthetic"] != 0:
        print("  FAIL: nodes on the synthetic kernel")
        ok = False
    v = read_dump(dump)
    vals = {k: a.astype(np.float64) for k, a in v["weight"].items()}
    vals.update({k: a.astype(np.float64) for k, a in v["input"].items()})
    for k, r in sorted(ref(vals).items()):
        got = v["output"][k]
        if got.dtype.kind == "i":
            good = got.shape == r.shape and np.array_equal(got, r)
            print("  %-4s %-6s indices equal" % ("ok" if good else "FAIL", k))
        else:
            scale = max(np.abs(r).max(), 1e-6)
            err = np.abs(got.astype(np.float64).reshape(r.shape) - r).max() \
                / scale
            good = err <= 1e-4
            print("  %-4s %-6s max|ref| %.3e  max|gpu-ref|/max|ref| %.2e" % (
                "ok" if good else "FAIL", k, scale, err))
        ok &= bool(good)
    return ok


def read_dump(d):
    raw = np.fromfile(os.path.join(d, "values.bin"), dtype=np.uint8)
    out = {}
    with open(os.path.join(d, "values.txt")) as f:
        for line in f:
            kind, name, dt, dims, off, nb = line.rstrip("\n").split("\t")
            shape = [int(x) for x in dims.split(",")] if dims else []
            a = raw[int(off):int(off) + int(nb)].view(
                DTYPES.get(dt, np.uint8))  # (others: bytes, unused)
            if a.size == int(np.prod(shape)):
                a = a.reshape(shape)
            out.setdefault(kind, {})[name] = a
    return out


def run_case(memplan, out, name, g, ref, poison, optim="sgd"):
    """optim: sgd (the gradient is (before - after) / lr), or adam, adamw
    (foreach), adamw-for-loop, momentum: the step's update and states
    after one step checked against the formulas of torch.optim, from the
    reference gradient"""
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
    opt, impl = (optim.split("-", 1) + ["foreach"])[:2]
    tag = name + ("" if optim == "sgd" else "_" + optim)
    dump = os.path.join(out, tag + ("_poison" if poison else ""))
    cmd = [memplan, "validate", path, "--train", "--optimizer", opt,
           "--optimizer-impl", impl, "--dump", dump, "--json",
           "--conv-math", "fp32", "--train-all-weights"] + (
               ["--poison"] if poison else [])
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
    if optim != "sgd":
        return opt_check(v, gref, opt, ok), None
    grads = {}
    for k, gr in sorted(gref.items()):
        before = v["weight"][k].astype(np.float64)
        after = v["weight_after"][k].astype(np.float64)
        gg = (before - after) / LR
        grads[k] = gg
        scale = max(np.abs(gr).max(), 1e-6)
        err = np.abs(gg - gr).max() / scale
        # what (before - after) / lr resolves: the fp32 rounding of the
        # weight after the step, 2^-24 |w| each side, over lr (a gradient
        # far smaller than the weight, the unary chain's, is known only
        # to that)
        res = 2.0 ** -23 * np.abs(before).max() / LR / scale
        good = err <= TOL + res
        ok &= good
        print("  %-4s d%-3s max|ref| %.3e  max|gpu-ref|/max|ref| %.2e%s" % (
            "ok" if good else "FAIL", k, scale, err,
            "" if res < TOL else " (the method resolves %.1e)" % res))
    return ok, grads


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def moves_graph():
    """Transpose, Sigmoid, Gather, Concat, Split, Slice, Pad, ReduceMean,
    Expand (a broadcast view), Where, Pow (the exponent a weight), Cast;
    a second Gather of few narrow rows by many indices (its gradient on
    the executor's one-block-per-row kernel)"""
    t = [("x", (4, 6), "input"), ("w", (4, 6), "weight"),
         ("e", (10, 4), "weight"), ("idx", (5,), "input", "int64"),
         ("v", (1, 4), "weight"), ("cond", (4, 4), "input", "bool"),
         ("pe", (), "weight"), ("shp", (2,), None, "int64"),
         ("a", (4, 6), None), ("t", (6, 4), None), ("s", (6, 4), None),
         ("gt", (5, 4), None), ("c", (11, 4), None), ("c0", (6, 4), None),
         ("c1", (5, 4), None), ("sl", (4, 4), None), ("pd", (5, 7), None),
         ("rm", (5,), "output"), ("ex", (4, 4), None), ("wh", (4, 4), None),
         ("sg", (4, 4), None), ("pw", (4, 4), None), ("cs", (4, 4), "output"),
         ("e2", (6, 3), "weight"), ("idx2", (300,), "input", "int64"),
         ("g2", (300, 3), "output")]
    n = [("mul", "Mul", ["x", "w"], ["a"], None),
         ("tr", "Transpose", ["a"], ["t"], {"perm": [1, 0]}),
         ("sig", "Sigmoid", ["t"], ["s"], None),
         ("gather", "Gather", ["e", "idx"], ["gt"], {"axis": 0}),
         ("concat", "Concat", ["s", "gt"], ["c"], {"axis": 0}),
         ("split", "Split", ["c"], ["c0", "c1"], {"axis": 0, "split": [6, 5]}),
         ("slice", "Slice", ["c0"], ["sl"],
          {"starts": [1], "ends": [5], "axes": [0]}),
         ("pad", "Pad", ["c1"], ["pd"], {"pads": [0, 1, 0, 2]}),
         ("rmean", "ReduceMean", ["pd"], ["rm"], {"axes": [1], "keepdims": 0}),
         ("shape", "Constant", [], ["shp"], {"value_ints": [4, 4]}),
         ("expand", "Expand", ["v", "shp"], ["ex"], None),
         ("where", "Where", ["cond", "sl", "ex"], ["wh"], None),
         ("sig2", "Sigmoid", ["wh"], ["sg"], None),
         ("pow", "Pow", ["sg", "pe"], ["pw"], None),
         ("cast", "Cast", ["pw"], ["cs"], {"to": 1}),
         ("gather2", "Gather", ["e2", "idx2"], ["g2"], {"axis": 0})]
    return graph("moves", t, n, ["rm", "cs", "g2"])


def moves_ref(v):
    x, w, e, idx, vv, cond, pe = (v[k] for k in (
        "x", "w", "e", "idx", "v", "cond", "pe"))
    idx = np.mod(idx.astype(np.int64), e.shape[0])  # the kernel's wrapping
    cond = cond.astype(bool)
    a = x * w
    t = a.T
    s = sigmoid(t)
    gt = e[idx]
    c = np.concatenate([s, gt], axis=0)
    c0, c1 = c[:6], c[6:]
    sl = c0[1:5]
    pd = np.pad(c1, ((0, 0), (1, 2)))
    rm = pd.mean(axis=1)
    ex = np.broadcast_to(vv, (4, 4))
    wh = np.where(cond, sl, ex)
    sg = sigmoid(wh)
    pw = sg ** pe
    g = {}
    dsg = pe * sg ** (pe - 1)
    g["pe"] = np.array((pw * np.log(sg)).sum())
    dwh = dsg * sg * (1 - sg)
    dsl = np.where(cond, dwh, 0.0)
    g["v"] = np.where(cond, 0.0, dwh).sum(axis=0, keepdims=True)
    dc1 = np.full((5, 7), 1.0 / 7)[:, 1:5]
    dc0 = np.zeros((6, 4))
    dc0[1:5] = dsl
    dc = np.concatenate([dc0, dc1], axis=0)
    ds, dgt = dc[:6], dc[6:]
    de = np.zeros_like(e)
    np.add.at(de, idx, dgt)
    g["e"] = de
    g["w"] = (ds * s * (1 - s)).T * x
    e2, idx2 = v["e2"], np.mod(v["idx2"].astype(np.int64), 6)
    de2 = np.zeros_like(e2)
    np.add.at(de2, idx2, 1.0)
    g["e2"] = de2
    return rm.sum() + pw.sum() + e2[idx2].sum(), g


ERF = np.vectorize(math.erf)
K_TANH = math.sqrt(2.0 / math.pi)

# the unary chain: (op, attributes, forward, derivative at the input x
# and the output y)
UNARY = [
    ("Erf", None, ERF,
     lambda x, y: 2.0 / math.sqrt(math.pi) * np.exp(-x * x)),
    ("LeakyRelu", {"alpha": 0.1}, lambda x: np.where(x >= 0, x, 0.1 * x),
     lambda x, y: np.where(x > 0, 1.0, 0.1)),
    ("Elu", {"alpha": 0.7}, lambda x: np.where(x >= 0, x, 0.7 * np.expm1(x)),
     lambda x, y: np.where(x > 0, 1.0, 0.7 * np.exp(x))),
    ("Neg", None, lambda x: -x, lambda x, y: -np.ones_like(x)),
    ("Abs", None, np.abs, lambda x, y: np.sign(x)),
    ("Sin", None, np.sin, lambda x, y: np.cos(x)),
    ("Gelu", None, lambda x: 0.5 * x * (1 + ERF(x / math.sqrt(2))),
     lambda x, y: 0.5 * (1 + ERF(x / math.sqrt(2))) +
     x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
    ("HardSwish", None, lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
     lambda x, y: np.where(x < -3, 0.0, np.where(x <= 3, x / 3 + 0.5, 1.0))),
    ("Clip", {"min": 0.01, "max": 0.08}, lambda x: np.clip(x, 0.01, 0.08),
     lambda x, y: ((x >= 0.01) & (x <= 0.08)).astype(np.float64)),
    ("Cos", None, np.cos, lambda x, y: -np.sin(x)),
    ("Gelu", {"approximate": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(K_TANH * (x + 0.044715 * x ** 3))),
     lambda x, y: 0.5 * (1 + np.tanh(K_TANH * (x + 0.044715 * x ** 3))) +
     0.5 * x * (1 - np.tanh(K_TANH * (x + 0.044715 * x ** 3)) ** 2) *
     K_TANH * (1 + 3 * 0.044715 * x * x)),
    ("Softplus", None, lambda x: np.log1p(np.exp(x)),
     lambda x, y: sigmoid(x)),
    ("Sqrt", None, np.sqrt, lambda x, y: 0.5 / y),
    ("Log", None, np.log, lambda x, y: 1.0 / x),
    ("Exp", None, np.exp, lambda x, y: y),
    ("Reciprocal", None, lambda x: 1.0 / x, lambda x, y: -y * y),
    ("Sigmoid", None, sigmoid, lambda x, y: y * (1 - y)),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4},
     lambda x: np.clip(0.3 * x + 0.4, 0, 1),
     lambda x, y: np.where((0.3 * x + 0.4 > 0) & (0.3 * x + 0.4 < 1), 0.3,
                           0.0)),
    ("Tanh", None, np.tanh, lambda x, y: 1 - y * y),
]


def unary_graph():
    """x * w, then every unary op of UNARY in turn"""
    t = [("x", (3, 5), "input"), ("w", (3, 5), "weight"), ("u0", (3, 5), None)]
    n = [("mul", "Mul", ["x", "w"], ["u0"], None)]
    for i, (op, attrs, _, _) in enumerate(UNARY):
        last = i == len(UNARY) - 1
        t.append(("u%d" % (i + 1), (3, 5), "output" if last else None))
        n.append(("op%d" % (i + 1), op, ["u%d" % i], ["u%d" % (i + 1)],
                  attrs))
    return graph("unary", t, n, ["u%d" % len(UNARY)])


def unary_ref(v):
    x, w = v["x"], v["w"]
    us = [x * w]
    for _, _, fwd, _ in UNARY:
        us.append(fwd(us[-1]))
    d = np.ones_like(us[-1])
    for i in range(len(UNARY) - 1, -1, -1):
        d = d * UNARY[i][3](us[i], us[i + 1])
    return us[-1].sum(), {"w": d * x}


def pmm_graph():
    """MatMul(hp, B): hp a permuted view of h = x * a3 (perm 1,0,2), B a
    transposed view of the weight Wt (both read in place)"""
    t = [("x", (4, 3, 8), "input"), ("a3", (4, 3, 8), "weight"),
         ("Wt", (5, 8), "weight"), ("h", (4, 3, 8), None),
         ("hp", (3, 4, 8), None), ("B", (8, 5), None),
         ("y", (3, 4, 5), "output")]
    n = [("mul", "Mul", ["x", "a3"], ["h"], None),
         ("perm", "Transpose", ["h"], ["hp"], {"perm": [1, 0, 2]}),
         ("wt", "Transpose", ["Wt"], ["B"], {"perm": [1, 0]}),
         ("mm", "MatMul", ["hp", "B"], ["y"], None)]
    return graph("pmm", t, n, ["y"])


def pmm_ref(v):
    x, a3, Wt = v["x"], v["a3"], v["Wt"]
    h = x * a3
    hp = np.transpose(h, (1, 0, 2))
    y = hp @ Wt.T
    dy = np.ones_like(y)
    dh = np.transpose(dy @ Wt, (1, 0, 2))
    dB = hp.reshape(-1, 8).T @ dy.reshape(-1, 5)
    return y.sum(), {"a3": dh * x, "Wt": dB.T}


# data movement, Where, Pow, Cast, the unary ops, a permuted MatMul
# (their references checked against finite differences apart: integer
# and bool inputs, a tolerance for the unary chain's small gradient)
SHAPE_CASES = (("moves", moves_graph, moves_ref),
               ("unary", unary_graph, unary_ref),
               ("pmm", pmm_graph, pmm_ref))


def check_shape_formulas(rng):
    """SHAPE_CASES' hand-written gradients against central finite
    differences: every element of every weight"""
    ok = True
    for name, gfun, ref in SHAPE_CASES:
        g = gfun()
        v = {}
        for t in g["tensors"]:
            if t.get("kind") not in ("input", "weight"):
                continue
            if t["dtype"] == "int64":
                v[t["name"]] = rng.integers(0, 4, t["shape"])
            elif t["dtype"] == "bool":
                v[t["name"]] = rng.integers(0, 2, t["shape"]).astype(np.uint8)
            else:
                v[t["name"]] = rng.uniform(-1, 1, t["shape"])
        if "pe" in v:  # the exponent: as its initial values are
            v["pe"] = rng.uniform(0.5, 1.0, v["pe"].shape)
        _, grads = ref(v)
        worst = 0.0
        for k, gr in grads.items():
            for i in np.ndindex(*gr.shape):
                e = 1e-6
                keep = v[k][i]
                v[k][i] = keep + e
                lp, _ = ref(v)
                v[k][i] = keep - e
                lm, _ = ref(v)
                v[k][i] = keep
                fd = (lp - lm) / (2 * e)
                worst = max(worst, abs(fd - gr[i]) /
                            max(np.abs(gr).max(), 1e-9))
        good = worst <= 1e-5
        ok &= good
        print("  %-4s %s: hand-written gradients vs finite differences, "
              "max rel %.1e" % ("ok" if good else "FAIL", name, worst))
    return ok


# normalization and pooling (their references checked against finite
# differences apart: MaxPool's is not smooth)
NORM_CASES = (("bn_train", lambda: bn_graph(1), lambda v: bn_ref(v, 1)),
              ("bn_eval", lambda: bn_graph(0), lambda v: bn_ref(v, 0)),
              ("ln", ln_graph, ln_ref),
              ("ln_rows", ln_rows_graph, ln_rows_ref),
              ("pool", pool_graph, pool_ref))


def opt_check(v, gref, opt, ok):
    """One step of torch.optim's Momentum, Adam or AdamW from zero states
    (step 1): the states after it must be the reference gradient's
    (momentum: g; Adam: m = (1 - beta1) g, v = (1 - beta2) g^2) within
    TOL x max|ref|, and the weight after it the update of the formula
    from the weight before and those states within TOL x lr plus 3e-7 x
    max(1, max|w|) (fp32 rounding of the weight)."""
    for k, gr in sorted(gref.items()):
        w0 = v["weight"][k].astype(np.float64)
        w1 = v["weight_after"][k].astype(np.float64)
        if opt == "momentum":
            states = {"momentum": gr}
            lr = MOMENTUM_LR
        else:
            states = {"m": (1 - BETA1) * gr, "v": (1 - BETA2) * gr * gr}
            lr = ADAM_LR
            base = w0 * (1 - lr * ADAMW_WD) if opt == "adamw" else w0
        for sname, sref in states.items():
            # (a state may be dumped flat: the foreach form's)
            before = v["weight"]["opt/%s/%s" % (k, sname)].reshape(gr.shape)
            after = v["weight_after"]["opt/%s/%s" % (k, sname)].reshape(
                gr.shape)
            sscale = max(np.abs(sref).max(), 1e-12)
            err = np.abs(after.astype(np.float64) - sref).max() / sscale
            good = err <= TOL and not before.any()
            ok &= good
            print("  %-4s %s of %-4s (zero before: %s) max|ref| %.3e  "
                  "max|gpu-ref|/max|ref| %.2e" % (
                      "ok" if good else "FAIL", sname, k,
                      not before.any(), sscale, err))
        # the weight: the update from the executor's own states (checked
        # above; Adam's g / |g| jumps where fp32 rounds g near 0)
        if opt == "momentum":
            b1 = v["weight_after"]["opt/%s/momentum" % k].reshape(w0.shape)
            want = w0 - lr * b1.astype(np.float64)
        else:
            m1 = v["weight_after"]["opt/%s/m" % k].astype(
                np.float64).reshape(w0.shape)
            v1 = v["weight_after"]["opt/%s/v" % k].astype(
                np.float64).reshape(w0.shape)
            want = base - lr * (m1 / (1 - BETA1)) / (
                np.sqrt(v1 / (1 - BETA2)) + ADAM_EPS)
        err = np.abs(w1 - want).max()
        # (the update's size is lr: a wrong formula is off by ~lr)
        good = err <= TOL * lr + 3e-7 * max(1.0, np.abs(w0).max())
        ok &= good
        print("  %-4s %-4s after the step: max|gpu-ref| %.2e (lr %g)" % (
            "ok" if good else "FAIL", k, err, lr))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memplan", default="build-gpu/memplan")
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--check-formulas", action="store_true",
                    help="only check the reference gradients by finite "
                    "differences (no GPU, no memplan)")
    a = ap.parse_args()
    if a.check_formulas:
        ok = check_formulas()
        print("ALL OK" if ok else "SOME CHECKS FAILED")
        return 0 if ok else 1
    out = a.out or tempfile.mkdtemp(prefix="train_check")
    os.makedirs(out, exist_ok=True)
    ok = True
    ok &= run_forward(a.memplan, out, "norm_fwd", norm_fwd_graph(),
                      norm_fwd_ref)
    for name, gfun, ref in CASES + NORM_CASES + SHAPE_CASES:
        g = gfun()
        r1, g1 = run_case(a.memplan, out, name, g, ref, False)
        r2, g2 = run_case(a.memplan, out, name, g, ref, True)
        ok &= r1 and r2
        if g1 is not None and g2 is not None:
            same = all(np.array_equal(g1[k], g2[k]) for k in g1)
            print("  %-4s %s: gradients with --poison identical" % (
                "ok" if same else "FAIL", name))
            ok &= same
    # the optimizer steps on the MLP
    for optim in ("adam", "adamw", "adamw-for-loop", "adam-fused",
                  "momentum"):
        r, _ = run_case(a.memplan, out, "mlp", mlp_graph(), mlp_ref, False,
                        optim)
        ok &= r
    if not a.keep and not a.out:
        shutil.rmtree(out, ignore_errors=True)
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
