#!/usr/bin/env python3
"""Generates a large, realistic computation graph as memplan JSON.

    python3 bench/gen_graph.py NODES [SEED] [-o FILE]

The graph is a long chain of stages, each a run of blocks on tensors of
one shape [1, C, H, W] (C, H, W and the dtype change from stage to stage,
so tensor sizes range from a few KiB to several MiB):

  - residual blocks   x -> Conv -> Relu -> Conv -> Add(x) -> Relu
  - bottlenecks       x -> Conv 1x1 -> Relu -> Conv 3x3 -> Relu -> Conv 1x1
                        -> Add(x)
  - branches          x -> Split -> (Conv, Relu | Sigmoid) -> Mul -> Concat
  - view chains       x -> Reshape (a view) -> Relu -> Flatten (a view)
                        -> Identity (a view) -> Reshape back
  - long skips        a tensor saved earlier in the stage is added back
                      tens to hundreds of nodes later, and a few tensors
                      saved in early stages are consumed by the very last
                      nodes (U-Net style), so lifetimes vary from one step
                      to the whole schedule;
  - a downsampling Conv between stages.

Every tensor is declared with dtype and shape; every Conv has a weight;
nodes carry FLOP costs. Exactly NODES nodes; the same NODES and SEED give
the same bytes. Python 3 standard library only.
"""
import argparse
import json
import random
import sys

DTYPE_BYTES = {"float32": 4, "float16": 2}


class Gen:
    def __init__(self, n_nodes, seed):
        self.rng = random.Random(seed)
        self.target = n_nodes
        self.tensors = []
        self.nodes = []
        self.shape = {}
        self.dtype = {}
        self.n_t = 0
        self.n_w = 0

    def left(self):
        return self.target - len(self.nodes)

    def tensor(self, shape, dtype, kind="activation"):
        if kind == "weight":
            name = "w%d" % self.n_w
            self.n_w += 1
        else:
            name = "t%d" % self.n_t
            self.n_t += 1
        self.shape[name] = list(shape)
        self.dtype[name] = dtype
        self.tensors.append({"name": name, "dtype": dtype,
                             "shape": list(shape), "kind": kind})
        return name

    def node(self, op, inputs, outputs, attrs=None, flops=None):
        n = {"name": "n%d" % len(self.nodes), "op": op,
             "inputs": inputs, "outputs": outputs}
        if attrs:
            n["attributes"] = attrs
        if flops is not None:
            n["cost"] = {"flops": flops}
        self.nodes.append(n)

    @staticmethod
    def numel(shape):
        v = 1
        for d in shape:
            v *= d
        return v

    # ---- ops ----
    def unary(self, op, x):
        y = self.tensor(self.shape[x], self.dtype[x])
        self.node(op, [x], [y], flops=self.numel(self.shape[x]))
        return y

    def binary(self, op, a, b):
        y = self.tensor(self.shape[a], self.dtype[a])
        self.node(op, [a, b], [y], flops=self.numel(self.shape[a]))
        return y

    def conv(self, x, cout, k, stride=1):
        n, cin, h, w = self.shape[x]
        ho, wo = (h + stride - 1) // stride, (w + stride - 1) // stride
        dt = self.dtype[x]
        wt = self.tensor([cout, cin, k, k], dt, kind="weight")
        y = self.tensor([n, cout, ho, wo], dt)
        p = k // 2
        self.node("Conv", [x, wt], [y],
                  {"kernel_shape": [k, k], "strides": [stride, stride],
                   "pads": [p, p, p, p]},
                  flops=2 * n * cout * ho * wo * cin * k * k)
        return y

    # ---- blocks; each returns the new current tensor ----
    def residual(self, x):
        c = self.shape[x][1]
        y = self.unary("Relu", self.conv(x, c, 3))
        y = self.binary("Add", self.conv(y, c, 3), x)
        return self.unary("Relu", y)

    def bottleneck(self, x):
        c = self.shape[x][1]
        mid = max(8, c // 4)
        y = self.unary("Relu", self.conv(x, mid, 1))
        y = self.unary("Relu", self.conv(y, mid, 3))
        return self.binary("Add", self.conv(y, c, 1), x)

    def branches(self, x):
        n, c, h, w = self.shape[x]
        dt = self.dtype[x]
        half = [n, c // 2, h, w]
        a, b = self.tensor(half, dt), self.tensor(half, dt)
        self.node("Split", [x], [a, b], {"axis": 1})
        a = self.unary("Relu", self.conv(a, c // 2, 3))
        g = self.unary("Sigmoid", b)
        m = self.binary("Mul", a, g)
        y = self.tensor([n, c, h, w], dt)
        self.node("Concat", [m, b], [y], {"axis": 1},
                  flops=self.numel([n, c, h, w]))
        return y

    def views(self, x):
        n, c, h, w = self.shape[x]
        dt = self.dtype[x]
        r = self.tensor([n, c, h * w], dt)
        self.node("Reshape", [x], [r])
        y = self.unary("Relu", r)
        f = self.tensor([n, c * h * w], dt)
        self.node("Flatten", [y], [f], {"axis": 1})
        i = self.tensor([n, c * h * w], dt)
        self.node("Identity", [f], [i])
        z = self.tensor([n, c, h, w], dt)
        self.node("Reshape", [i], [z])
        return self.unary("Tanh", z)

    def build(self):
        rng = self.rng
        n = 1
        c, h, dt = 32, 112, "float32"
        x = self.tensor([n, 3, h, h], dt, kind="input")
        x = self.conv(x, c, 7)
        unet = []          # saved across stages, consumed at the very end
        blocks = [(self.residual, 6), (self.bottleneck, 7),
                  (self.branches, 7), (self.views, 7)]
        weights = [5, 3, 2, 1]
        while self.left() > 64:
            # one stage: a shape, a run of blocks, long skips inside it
            stage_nodes = rng.randint(60, 600)
            start = len(self.nodes)
            saved = []
            while (len(self.nodes) - start < stage_nodes and
                   self.left() > 64):
                if saved and rng.random() < 0.08:
                    x = self.binary("Add", x, saved.pop(
                        rng.randrange(len(saved))))
                    continue
                fn, _ = rng.choices(blocks, weights)[0]
                x = fn(x)
                if rng.random() < 0.15:
                    saved.append(x)
            if len(unet) < 4 and rng.random() < 0.3:
                unet.append(x)
            # next stage: new channels, spatial size and maybe dtype; a
            # downsampling Conv (or an upsampling Resize) connects them
            c = rng.choice([16, 32, 64, 96, 128, 192, 256, 384, 512])
            hh = rng.choice([7, 14, 28, 56, 112])
            if hh < self.shape[x][2]:
                x = self.conv(x, c, 3, stride=self.shape[x][2] // hh)
            else:
                y = self.tensor([1, self.shape[x][1], hh, hh],
                                self.dtype[x])
                self.node("Resize", [x], [y], {"mode": "nearest"},
                          flops=self.numel([1, self.shape[x][1], hh, hh]))
                x = self.conv(y, c, 1)
            if rng.random() < 0.2:
                ndt = "float16" if self.dtype[x] == "float32" else "float32"
                y = self.tensor(self.shape[x], ndt)
                self.node("Cast", [x], [y],
                          {"to": 10 if ndt == "float16" else 1},
                          flops=self.numel(self.shape[x]))
                x = y
        # the tail: consume the long-lived U-Net tensors, then fill up
        for s in unet:
            if self.left() <= 8:
                break
            y = self.tensor([1, self.shape[s][1]] + self.shape[x][2:],
                            self.dtype[x])
            self.node("Resize", [s], [y], {"mode": "nearest"},
                      flops=self.numel(self.shape[y]))
            if self.shape[y][1] != self.shape[x][1]:
                y = self.conv(y, self.shape[x][1], 1)
            if self.dtype[y] != self.dtype[x]:
                z = self.tensor(self.shape[y], self.dtype[x])
                self.node("Cast", [y], [z], {"to": 1 if self.dtype[x] ==
                                             "float32" else 10},
                          flops=self.numel(self.shape[y]))
                y = z
            x = self.binary("Add", x, y)
        while self.left() > 1:
            x = self.unary(rng.choice(["Relu", "Tanh", "Sigmoid"]), x)
        out = self.tensor(self.shape[x], self.dtype[x], kind="output")
        self.node("Relu", [x], [out], flops=self.numel(self.shape[x]))
        assert len(self.nodes) == self.target
        return out

    def write(self, f, name, out):
        def one(v):
            return json.dumps(v, separators=(",", ":"))
        f.write('{"format":"memplan-graph","version":1,"name":%s,\n'
                '"tensors":[\n' % one(name))
        f.write(",\n".join(one(t) for t in self.tensors))
        f.write('],\n"nodes":[\n')
        f.write(",\n".join(one(n) for n in self.nodes))
        f.write('],\n"outputs":[%s]}\n' % one(out))


def main():
    ap = argparse.ArgumentParser(
        description="Generate a large memplan JSON graph.")
    ap.add_argument("nodes", type=int, help="number of nodes (>= 100)")
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    a = ap.parse_args()
    if a.nodes < 100:
        ap.error("need at least 100 nodes")
    g = Gen(a.nodes, a.seed)
    out = g.build()
    name = "gen_%d_s%d" % (a.nodes, a.seed)
    if a.output:
        with open(a.output, "w", encoding="utf-8", newline="\n") as f:
            g.write(f, name, out)
    else:
        g.write(sys.stdout, name, out)
    act = [t for t in g.tensors if t["kind"] != "weight"]
    total = sum(g.numel(t["shape"]) * DTYPE_BYTES[t["dtype"]] for t in act)
    sys.stderr.write("%s: %d nodes, %d tensors (%d weights), %.1f MiB of "
                     "activations in all\n"
                     % (name, len(g.nodes), len(g.tensors), g.n_w,
                        total / 2**20))


if __name__ == "__main__":
    main()
