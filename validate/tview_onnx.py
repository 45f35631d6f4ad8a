#!/usr/bin/env python3
"""tview_onnx.py OUT.onnx - a small model whose Transposes are transposed
operands (views the matrix products read with op T, docs/memory-model.md):
a Linear's weight through Transpose + MatMul, an activation transposed on
its last two axes as MatMul's A, and a weight through Transpose into Gemm
(transB=0, so Gemm reads the weight itself with op T). Every op has a real kernel in the executor, so

    memplan validate OUT.onnx --dump DIR
    python3 validate/ort_compare.py OUT.onnx DIR

checks the transposed reads against onnxruntime (run on the GPU machine,
where the onnx package is installed)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 16)).astype(np.float32) * 0.25
    w2 = rng.standard_normal((24, 32)).astype(np.float32) * 0.25
    shape = np.array([64, 32], dtype=np.int64)
    nodes = [
        helper.make_node("Transpose", ["w1"], ["w1t"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "w1t"], ["h"]),          # [2,8,32]
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Transpose", ["r"], ["rt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["rt", "r"], ["s"]),           # [2,32,32]
        helper.make_node("Reshape", ["s", "shape"], ["s2"]),      # [64,32]
        helper.make_node("Transpose", ["w2"], ["w2t"], perm=[1, 0]),
        helper.make_node("Gemm", ["s2", "w2t"], ["y"], transB=0),  # [64,24]
    ]
    g = helper.make_graph(
        nodes, "tview",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 24])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(shape, "shape")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1])
