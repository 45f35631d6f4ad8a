#!/usr/bin/env python3
"""bert_onnx.py - writes one BERT-base encoder layer (hidden 768, 12 heads
of 64, FFN 3072, float32) as an ONNX model (opset 17) with a symbolic
batch, for `memplan validate` and its onnxruntime comparison (issue 6,
docs/validation.md). The graph is what exporters write: MatMul + Add per
linear layer, Reshape/Transpose around the attention, Div by sqrt(64), Add
of the attention mask, Softmax, residual Adds, LayerNormalization, and the
FFN's exact Gelu as x * 0.5 * (1 + Erf(x / sqrt(2))). Needs the onnx and
numpy packages (the GPU machine has them).

    python3 validate/bert_onnx.py OUT.onnx [--seq 128]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H, NH, D, FFN = 768, 12, 64, 3072


def build(seq):
    rng = np.random.default_rng(1)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0] + "/" + op,
                                      **attrs))
        return outs[0]

    def linear(name, x, k, n):
        w = const(name + ".weight",
                  (rng.standard_normal((k, n)) * 0.02).astype(np.float32))
        b = const(name + ".bias",
                  (rng.standard_normal(n) * 0.02).astype(np.float32))
        mm = node("MatMul", [x, w], [name + ".matmul"])
        return node("Add", [mm, b], [name + ".out"])

    def layernorm(name, x, out=None):
        gm = const(name + ".weight", np.ones(H, np.float32))
        bt = const(name + ".bias", np.zeros(H, np.float32))
        return node("LayerNormalization", [x, gm, bt], [out or name + ".out"],
                    axis=-1, epsilon=1e-12)

    const("shape_bsnd", np.array([0, 0, NH, D], np.int64))
    const("shape_bsh", np.array([0, 0, H], np.int64))
    const("scale", np.array(8.0, np.float32))
    const("half", np.array(0.5, np.float32))
    const("one", np.array(1.0, np.float32))
    const("sqrt2", np.array(np.sqrt(2.0), np.float32))

    def heads(name, t, perm):
        r = node("Reshape", [t, "shape_bsnd"], [name + ".reshaped"])
        return node("Transpose", [r], [name + ".heads"], perm=perm)

    x = "hidden_states"
    q = heads("query", linear("attention.self.query", x, H, H), [0, 2, 1, 3])
    k = heads("key", linear("attention.self.key", x, H, H), [0, 2, 3, 1])
    v = heads("value", linear("attention.self.value", x, H, H), [0, 2, 1, 3])
    s = node("MatMul", [q, k], ["attention.scores"])
    s = node("Div", [s, "scale"], ["attention.scaled"])
    s = node("Add", [s, "attention_mask"], ["attention.masked"])
    p = node("Softmax", [s], ["attention.probs"], axis=-1)
    c = node("MatMul", [p, v], ["attention.context"])
    c = node("Transpose", [c], ["attention.context_t"], perm=[0, 2, 1, 3])
    c = node("Reshape", [c, "shape_bsh"], ["attention.merged"])
    o = linear("attention.output.dense", c, H, H)
    r1 = node("Add", [o, x], ["attention.output.residual"])
    ln1 = layernorm("attention.output.LayerNorm", r1)
    i = linear("intermediate.dense", ln1, H, FFN)
    e = node("Div", [i, "sqrt2"], ["gelu.scaled"])
    e = node("Erf", [e], ["gelu.erf"])
    e = node("Add", [e, "one"], ["gelu.plus1"])
    e = node("Mul", [i, e], ["gelu.xmul"])
    a = node("Mul", [e, "half"], ["intermediate.gelu"])
    o2 = linear("output.dense", a, FFN, H)
    r2 = node("Add", [o2, ln1], ["output.residual"])
    layernorm("output.LayerNorm", r2, out="output")

    g = helper.make_graph(
        nodes, "bert_base_layer",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT,
                                       ["batch", seq, H]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT,
                                       ["batch", 1, 1, seq])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       ["batch", seq, H])],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="memplan validate/bert_onnx.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main(argv):
    seq = 128
    args = list(argv[1:])
    if "--seq" in args:
        i = args.index("--seq")
        seq = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    onnx.save(build(seq), args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
