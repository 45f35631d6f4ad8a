"""Helpers shared by the example generators (Python 3 standard library only).

A Graph collects tensors and nodes and writes memplan JSON (docs/graph-format.md)
with one tensor or node per line, so that the files diff well.
"""
import json

DTYPE_BYTES = {"float32": 4, "float16": 2, "int64": 8, "int32": 4}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class Graph:
    def __init__(self, name):
        self.name = name
        self.tensors = []
        self.nodes = []
        self.outputs = []
        self._shapes = {}

    def tensor(self, name, shape, kind="activation", dtype="float32"):
        if name in self._shapes:
            raise ValueError("duplicate tensor " + name)
        self._shapes[name] = list(shape)
        self.tensors.append({"name": name, "dtype": dtype,
                             "shape": list(shape), "kind": kind})
        return name

    def shape(self, name):
        return self._shapes[name]

    def bytes(self, name):
        t = next(t for t in self.tensors if t["name"] == name)
        return numel(t["shape"]) * DTYPE_BYTES[t["dtype"]]

    def node(self, name, op, inputs, outputs, attributes=None, flops=None):
        n = {"name": name, "op": op, "inputs": list(inputs),
             "outputs": list(outputs)}
        if attributes:
            n["attributes"] = attributes
        n["phase"] = "forward"
        if flops is not None:
            n["cost"] = {"flops": int(flops)}
        self.nodes.append(n)

    def output(self, name):
        self.outputs.append(name)

    def to_json(self):
        def one(x):
            return json.dumps(x, separators=(", ", ": "))
        lines = ['{"format": "memplan-graph", "version": 1,',
                 ' "name": ' + json.dumps(self.name) + ',',
                 ' "tensors": [']
        lines.append(",\n".join("  " + one(t) for t in self.tensors))
        lines.append(' ],')
        lines.append(' "nodes": [')
        lines.append(",\n".join("  " + one(n) for n in self.nodes))
        lines.append(' ],')
        lines.append(' "outputs": ' + one(self.outputs))
        lines.append('}')
        return "\n".join(lines) + "\n"

    def write(self, path):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(self.to_json())
