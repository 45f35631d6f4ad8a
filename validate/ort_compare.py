#!/usr/bin/env python3
"""ort_compare.py - compare a `memplan validate --dump DIR` run with
onnxruntime (CPU provider) on the same values (issue 6, docs/validation.md).

    python3 validate/ort_compare.py MODEL.onnx DIR [--rtol R] [--json]

DIR/values.txt lists, one per line and tab-separated, kind (weight, input,
output), name, dtype, dims (comma-separated), byte offset into
DIR/values.bin and bytes. Every "weight" the executor used (initializers
and folded constants, random where the model carries no values) replaces
the model's initializer of that name, or, for a tensor a node computes
(light models compute their weights from shape tensors), the node is
removed and an initializer holds the values. Inputs are fed as dumped
(their shapes replace the declared ones, so a batch set with --dim runs).
onnxruntime's outputs are compared with the executor's:
float outputs pass when max|gpu - ort| <= rtol * max(max|ort|, 1e-6)
(default rtol 1e-3); integer and bool outputs must be equal.
Prints one JSON object; exits 0 when every output passes, 1 when one
differs, 2 when the comparison could not run.
"""
import json
import sys

import numpy as np

DTYPES = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "bool": np.bool_,
}


def read_dump(d):
    raw = np.fromfile(d + "/values.bin", dtype=np.uint8)
    out = {"weight": {}, "input": {}, "output": {}}
    with open(d + "/values.txt") as f:
        for line in f:
            kind, name, dt, dims, off, nb = line.rstrip("\n").split("\t")
            if dt not in DTYPES:
                raise ValueError("dtype %s of %s not handled" % (dt, name))
            shape = [int(x) for x in dims.split(",")] if dims else []
            off, nb = int(off), int(nb)
            a = raw[off:off + nb].view(DTYPES[dt])
            out.setdefault(kind, {})[name] = a.reshape(shape) if a.size == int(np.prod(shape)) else a
    return out


def patch_model(model, vals):
    import onnx
    from onnx import numpy_helper
    g = model.graph
    weights = vals["weight"]
    inits = {t.name: i for i, t in enumerate(g.initializer)}
    replaced = 0
    for name, arr in weights.items():
        # integer initializers (shape tensors) keep the model's values: the
        # executor reads the ones it needs; it fills only floats at random
        if name in inits and np.issubdtype(arr.dtype, np.floating):
            g.initializer[inits[name]].CopyFrom(numpy_helper.from_array(arr, name))
            replaced += 1
    # tensors computed by nodes (e.g. ConstantOfShape of a __SHAPE tensor):
    # drop the producing node when all its outputs are dumped
    keep = []
    for n in g.node:
        outs = [o for o in n.output if o]
        if outs and all(o in weights and o not in inits for o in outs):
            for o in outs:
                g.initializer.append(numpy_helper.from_array(weights[o], o))
                replaced += 1
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    # graph inputs: the dumped shapes; outputs and value_info: no shapes
    for vi in g.input:
        if vi.name in vals["input"]:
            shp = vals["input"][vi.name].shape
            tt = vi.type.tensor_type
            tt.ClearField("shape")
            for d in shp:
                tt.shape.dim.add().dim_value = int(d)
    for vi in g.output:
        vi.type.tensor_type.ClearField("shape")
    del g.value_info[:]
    return replaced


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    rtol = 1e-3
    for i, a in enumerate(argv):
        if a == "--rtol" and i + 1 < len(argv):
            rtol = float(argv[i + 1])
            args = [x for x in args if x != argv[i + 1]]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    model_path, d = args
    res = {"model": model_path, "rtol": rtol}
    try:
        import onnx
        import onnxruntime as ort
        vals = read_dump(d)
        # exports with weights dropped name external data that is not
        # there: every float initializer is replaced by the dumped values
        model = onnx.load(model_path, load_external_data=False)
        res["weights_replaced"] = patch_model(model, vals)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        feed = {}
        for i in sess.get_inputs():
            if i.name in vals["input"]:
                feed[i.name] = vals["input"][i.name]
            elif i.name in vals["weight"]:
                feed[i.name] = vals["weight"][i.name]
        names = [o.name for o in sess.get_outputs()]
        got = sess.run(names, feed)
        res["onnxruntime"] = ort.__version__
    except Exception as e:  # the comparison could not run
        res["error"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(res))
        return 2
    outs, ok = [], True
    for name, ref in zip(names, got):
        if name not in vals["output"]:
            outs.append({"name": name, "compared": False})
            continue
        mine = vals["output"][name].reshape(ref.shape) \
            if vals["output"][name].size == ref.size else None
        e = {"name": name, "shape": list(ref.shape)}
        if mine is None:
            e.update(compared=True, passed=False, why="sizes differ")
        elif np.issubdtype(ref.dtype, np.floating):
            r64, m64 = ref.astype(np.float64), mine.astype(np.float64)
            scale = max(float(np.max(np.abs(r64))) if r64.size else 0.0, 1e-6)
            diff = float(np.max(np.abs(m64 - r64))) if r64.size else 0.0
            e.update(compared=True, max_abs_diff=diff, max_abs_ref=scale,
                     rel=diff / scale,
                     passed=bool(np.all(np.isfinite(m64)) and diff <= rtol * scale))
        else:
            e.update(compared=True, passed=bool(np.array_equal(mine, ref)))
        ok &= e["passed"]
        outs.append(e)
    res["outputs"] = outs
    res["compared"] = sum(1 for o in outs if o.get("compared"))
    res["max_rel"] = max([o.get("rel", 0.0) for o in outs] + [0.0])
    res["passed"] = bool(ok and res["compared"] > 0)
    print(json.dumps(res))
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
