#!/usr/bin/env python3
"""views_onnx.py OUT.onnx - a small model whose Expand, Slice and Split are
views (docs/memory-model.md, "Where each tensor lives"): an Expand read
only by an Add (a broadcast view: the Add broadcasts the Expand's input),
a Slice of the outermost axis (a range view at a byte offset), a Split
of the outermost axis into two parts (two range views, one read with
broadcasting by a Mul), and multi-head attention whose heads' permutes,
(0,2,1,3) and (0,2,3,1), are permuted views the matrix products read
through their strides (and, fused, the attention kernel). Every op has a
real kernel in the executor, so

    memplan validate OUT.onnx --dump DIR [--attention naive]
    python3 validate/ort_compare.py OUT.onnx DIR

checks the views' reads against onnxruntime (run on the GPU machine,
where the onnx package is installed)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    i64 = lambda v: np.array(v, dtype=np.int64)
    inits = [
        numpy_helper.from_array(i64([1]), "starts"),
        numpy_helper.from_array(i64([3]), "ends"),
        numpy_helper.from_array(i64([0]), "axes"),
        numpy_helper.from_array(i64([2, 6, 8]), "eshape"),
        numpy_helper.from_array(i64([1, 3]), "split"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),                       # [4,6,8]
        helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Sigmoid", ["b"], ["bs"]),                   # [1,6,1]
        helper.make_node("Expand", ["bs", "eshape"], ["e"]),          # [2,6,8]
        helper.make_node("Add", ["s", "e"], ["y1"]),                  # [2,6,8]
        helper.make_node("Tanh", ["x"], ["q"]),                       # [4,6,8]
        helper.make_node("Split", ["q", "split"], ["q0", "q1"], axis=0),
        helper.make_node("Mul", ["q1", "q0"], ["y2"]),                # [3,6,8]
        # attention over [2 batch, 4 tokens, 3 heads, 5 dims]
        helper.make_node("Transpose", ["aq"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["ak"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["av"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["sc"]),             # [2,3,4,4]
        helper.make_node("Softmax", ["sc"], ["pr"], axis=-1),
        helper.make_node("MatMul", ["pr", "vh"], ["oh"]),             # [2,3,4,5]
        helper.make_node("Transpose", ["oh"], ["y3"], perm=[0, 2, 1, 3]),
    ]
    g = helper.make_graph(
        nodes, "views",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6, 8]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 6, 1])] +
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4, 3, 5])
         for n in ("aq", "ak", "av")],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2, 6, 8]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [3, 6, 8]),
         helper.make_tensor_value_info("y3", TensorProto.FLOAT, [2, 4, 3, 5])],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1])
