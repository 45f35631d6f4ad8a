#!/usr/bin/env python3
"""batch_onnx.py - makes a batch-N version of an ONNX model exported with a
fixed batch of 1 (issue 6, docs/validation.md).

    python3 validate/batch_onnx.py IN.onnx OUT.onnx [--name N]

The corpus CNNs declare their input as [1, C, H, W] and also write the
batch into their Reshape targets (e.g. [1, 2048] before the classifier, or
[1, groups, C/groups, H, W] for a channel shuffle), so binding the input's
dim alone leaves a model no runtime can run at batch 32. This rewrites
what an exporter with a dynamic batch axis writes instead: dim 0 of every
graph input becomes the symbol N (--name), and a Reshape target (an int64
initializer or Constant) whose first value is 1 gets 0 there, which ONNX
reads as "copy the input's dim 0", and one whose first value is larger
with no -1 or 0 elsewhere (the batch folded into dim 0, as FastestDet's
channel shuffle [24, 2, 1936]) gets -1 there. Value infos and output shapes are
dropped. Prints what it changed. Needs the onnx package.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(argv):
    args = list(argv[1:])
    name = "N"
    if "--name" in args:
        i = args.index("--name")
        name = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    m = onnx.load(args[0])
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    used = {n.input[1] for n in g.node if n.op_type == "Reshape" and len(n.input) > 1}
    changed = 0

    def patch(a):
        # [1, ...] -> [0, ...]; [B*k, ...] with no -1 and no 0 (the batch
        # folded into dim 0, e.g. a channel shuffle [24, 2, 1936]) -> [-1, ...]
        if a.ndim != 1 or a.size < 2:
            return None
        a = a.copy()
        if a[0] == 1:
            a[0] = 0
        elif a[0] > 1 and not np.any(a == -1) and not np.any(a == 0):
            a[0] = -1
        else:
            return None
        return a.astype(np.int64)

    for t in used:
        if t in inits:
            a = patch(numpy_helper.to_array(inits[t]))
            if a is not None:
                inits[t].CopyFrom(numpy_helper.from_array(a, t))
                changed += 1
        elif t in consts:
            for at in consts[t].attribute:
                if at.name == "value":
                    a = patch(numpy_helper.to_array(at.t))
                    if a is not None:
                        at.t.CopyFrom(numpy_helper.from_array(a, t))
                        changed += 1
    init_names = set(inits)
    for vi in g.input:
        if vi.name in init_names:
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].Clear()
            dims[0].dim_param = name
    for vi in g.output:
        vi.type.tensor_type.ClearField("shape")
    del g.value_info[:]
    onnx.save(m, args[1])
    print("%s: %d Reshape targets now copy the batch; input dim 0 is %s"
          % (args[1], changed, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
