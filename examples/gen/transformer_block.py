#!/usr/bin/env python3
"""Generates examples/transformer_block.json: one BERT-base encoder layer
(hidden 768, 12 heads of 64, FFN 3072) for inference at batch 8, sequence
128, float32, as ONNX exporters write it: MatMul + Add for every linear
layer, Reshape (a view: its output aliases its input) and Transpose (a
copy) around the attention, Div by sqrt(64), Add of the attention mask,
Softmax, residual Adds, LayerNormalization, and a Gelu FFN.

    python3 examples/gen/transformer_block.py [-o FILE] [--batch 8] [--seq 128]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Graph, numel  # noqa: E402

HIDDEN, HEADS, FFN = 768, 12, 3072
HEAD = HIDDEN // HEADS


def build(batch, seq):
    g = Graph("bert_base_layer")
    B, S, H, NH, D = batch, seq, HIDDEN, HEADS, HEAD
    x = g.tensor("hidden_states", [B, S, H], kind="input")
    mask = g.tensor("attention_mask", [B, 1, 1, S], kind="input")
    # Reshape targets are int64 shape constants, as in an exported model
    g.tensor("shape_bsnd", [4], kind="constant", dtype="int64")
    g.tensor("shape_bsh", [3], kind="constant", dtype="int64")
    g.tensor("scale", [], kind="constant")

    def linear(name, inp, k, n):
        w = g.tensor(name + ".weight", [k, n], kind="weight")
        b = g.tensor(name + ".bias", [n], kind="weight")
        shp = g.shape(inp)[:-1]
        mm = g.tensor(name + ".matmul", shp + [n])
        g.node(name + "/MatMul", "MatMul", [inp, w], [mm],
               flops=2 * numel(shp) * k * n)
        out = g.tensor(name + ".out", shp + [n])
        g.node(name + "/Add", "Add", [mm, b], [out], flops=numel(shp) * n)
        return out

    def heads(name, t, perm):
        r = g.tensor(name + ".reshaped", [B, S, NH, D])
        g.node(name + "/Reshape", "Reshape", [t, "shape_bsnd"], [r])
        s = [B, S, NH, D]
        out = g.tensor(name + ".heads", [s[p] for p in perm])
        g.node(name + "/Transpose", "Transpose", [r], [out], {"perm": perm})
        return out

    q = heads("query", linear("attention.self.query", x, H, H), [0, 2, 1, 3])
    k = heads("key", linear("attention.self.key", x, H, H), [0, 2, 3, 1])
    v = heads("value", linear("attention.self.value", x, H, H), [0, 2, 1, 3])

    scores = g.tensor("attention.scores", [B, NH, S, S])
    g.node("attention/MatMul_QK", "MatMul", [q, k], [scores],
           flops=2 * B * NH * S * S * D)
    scaled = g.tensor("attention.scaled", [B, NH, S, S])
    g.node("attention/Div", "Div", [scores, "scale"], [scaled],
           flops=B * NH * S * S)
    masked = g.tensor("attention.masked", [B, NH, S, S])
    g.node("attention/Add_mask", "Add", [scaled, mask], [masked],
           flops=B * NH * S * S)
    probs = g.tensor("attention.probs", [B, NH, S, S])
    g.node("attention/Softmax", "Softmax", [masked], [probs], {"axis": -1},
           flops=5 * B * NH * S * S)
    ctx = g.tensor("attention.context", [B, NH, S, D])
    g.node("attention/MatMul_PV", "MatMul", [probs, v], [ctx],
           flops=2 * B * NH * S * S * D)
    ctx_t = g.tensor("attention.context_t", [B, S, NH, D])
    g.node("attention/Transpose", "Transpose", [ctx], [ctx_t],
           {"perm": [0, 2, 1, 3]})
    merged = g.tensor("attention.merged", [B, S, H])
    g.node("attention/Reshape", "Reshape", [ctx_t, "shape_bsh"], [merged])

    proj = linear("attention.output.dense", merged, H, H)
    res1 = g.tensor("attention.output.residual", [B, S, H])
    g.node("attention.output/Add_residual", "Add", [proj, x], [res1],
           flops=B * S * H)

    def layernorm(name, inp, out_kind="activation"):
        gamma = g.tensor(name + ".weight", [H], kind="weight")
        beta = g.tensor(name + ".bias", [H], kind="weight")
        out = g.tensor(name + ".out", [B, S, H], kind=out_kind)
        g.node(name + "/LayerNormalization", "LayerNormalization",
               [inp, gamma, beta], [out], {"axis": -1, "epsilon": 1e-12},
               flops=8 * B * S * H)
        return out

    ln1 = layernorm("attention.output.LayerNorm", res1)
    inter = linear("intermediate.dense", ln1, H, FFN)
    act = g.tensor("intermediate.gelu", [B, S, FFN])
    g.node("intermediate/Gelu", "Gelu", [inter], [act], flops=8 * B * S * FFN)
    out = linear("output.dense", act, FFN, H)
    res2 = g.tensor("output.residual", [B, S, H])
    g.node("output/Add_residual", "Add", [out, ln1], [res2], flops=B * S * H)
    y = layernorm("output.LayerNorm", res2, out_kind="output")
    g.output(y)
    return g


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=os.path.normpath(
        os.path.join(here, "..", "transformer_block.json")))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    g = build(a.batch, a.seq)
    g.write(a.output)
    flops = sum(n.get("cost", {}).get("flops", 0) for n in g.nodes)
    sys.stderr.write("%s: %d nodes, %d tensors, %.2f GFLOPs\n"
                     % (a.output, len(g.nodes), len(g.tensors), flops / 1e9))


if __name__ == "__main__":
    main()
