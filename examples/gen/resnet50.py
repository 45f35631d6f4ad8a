#!/usr/bin/env python3
"""Generates examples/resnet50.json: ResNet-50 (torchvision layout, v1.5:
stride on the 3x3 convolution) for inference at batch 1, 224x224, float32.

Every Conv, BatchNormalization, Relu, Add, MaxPool, GlobalAveragePool,
Flatten and Gemm is a node with its real output shape; weights (and the
batch-norm running statistics) are "weight" tensors; node costs are FLOPs
(a multiply-add counts 2).

    python3 examples/gen/resnet50.py [-o examples/resnet50.json] [--batch N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Graph, numel  # noqa: E402


def conv_out(h, k, s, p):
    return (h + 2 * p - k) // s + 1


class ResNet50:
    def __init__(self, batch):
        self.g = Graph("resnet50")
        self.n = batch
        self.params = 0

    def weight(self, name, shape):
        self.params += numel(shape)
        return self.g.tensor(name, shape, kind="weight")

    def conv(self, name, x, cout, k, s, p):
        g = self.g
        n, cin, h, w = g.shape(x)
        ho, wo = conv_out(h, k, s, p), conv_out(w, k, s, p)
        wt = self.weight(name + ".weight", [cout, cin, k, k])
        y = g.tensor(name + ".out", [n, cout, ho, wo])
        g.node(name, "Conv", [x, wt], [y],
               {"kernel_shape": [k, k], "strides": [s, s],
                "pads": [p, p, p, p], "dilations": [1, 1], "group": 1},
               flops=2 * n * cout * ho * wo * cin * k * k)
        return y

    def bn(self, name, x):
        g = self.g
        c = g.shape(x)[1]
        ins = [x] + [self.weight(name + "." + s, [c])
                     for s in ("weight", "bias", "running_mean",
                               "running_var")]
        y = g.tensor(name + ".out", g.shape(x))
        g.node(name, "BatchNormalization", ins, [y], {"epsilon": 1e-5},
               flops=2 * numel(g.shape(x)))
        return y

    def relu(self, name, x):
        g = self.g
        y = g.tensor(name + ".out", g.shape(x))
        g.node(name, "Relu", [x], [y], flops=numel(g.shape(x)))
        return y

    def add(self, name, a, b):
        g = self.g
        y = g.tensor(name + ".out", g.shape(a))
        g.node(name, "Add", [a, b], [y], flops=numel(g.shape(a)))
        return y

    def bottleneck(self, name, x, width, cout, stride):
        g = self.g
        y = self.relu(name + ".relu1",
                      self.bn(name + ".bn1",
                              self.conv(name + ".conv1", x, width, 1, 1, 0)))
        y = self.relu(name + ".relu2",
                      self.bn(name + ".bn2",
                              self.conv(name + ".conv2", y, width, 3, stride,
                                        1)))
        y = self.bn(name + ".bn3", self.conv(name + ".conv3", y, cout, 1, 1, 0))
        if stride != 1 or g.shape(x)[1] != cout:
            sc = self.bn(name + ".downsample.1",
                         self.conv(name + ".downsample.0", x, cout, 1, stride,
                                   0))
        else:
            sc = x
        return self.relu(name + ".relu3", self.add(name + ".add", y, sc))

    def build(self):
        g = self.g
        x = g.tensor("input", [self.n, 3, 224, 224], kind="input")
        y = self.relu("relu", self.bn("bn1", self.conv("conv1", x, 64, 7, 2,
                                                       3)))
        n, c, h, w = g.shape(y)
        ho, wo = conv_out(h, 3, 2, 1), conv_out(w, 3, 2, 1)
        p = g.tensor("maxpool.out", [n, c, ho, wo])
        g.node("maxpool", "MaxPool", [y], [p],
               {"kernel_shape": [3, 3], "strides": [2, 2],
                "pads": [1, 1, 1, 1]},
               flops=n * c * ho * wo * 9)
        y = p
        for li, (blocks, width, stride) in enumerate(
                [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], 1):
            for b in range(blocks):
                y = self.bottleneck("layer%d.%d" % (li, b), y, width,
                                    width * 4, stride if b == 0 else 1)
        n, c, h, w = g.shape(y)
        gap = g.tensor("avgpool.out", [n, c, 1, 1])
        g.node("avgpool", "GlobalAveragePool", [y], [gap],
               flops=n * c * h * w)
        flat = g.tensor("flatten.out", [n, c])
        g.node("flatten", "Flatten", [gap], [flat], {"axis": 1})
        fw = self.weight("fc.weight", [1000, c])
        fb = self.weight("fc.bias", [1000])
        out = g.tensor("output", [n, 1000], kind="output")
        g.node("fc", "Gemm", [flat, fw, fb], [out],
               {"alpha": 1.0, "beta": 1.0, "transB": 1},
               flops=2 * n * c * 1000 + n * 1000)
        g.output(out)
        return g


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output",
                    default=os.path.normpath(
                        os.path.join(here, "..", "resnet50.json")))
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    m = ResNet50(a.batch)
    g = m.build()
    g.write(a.output)
    flops = sum(n.get("cost", {}).get("flops", 0) for n in g.nodes)
    # torchvision's count excludes the running statistics (buffers)
    stats = sum(numel(t["shape"]) for t in g.tensors
                if t["name"].endswith(("running_mean", "running_var")))
    sys.stderr.write("%s: %d nodes, %d tensors, %d parameters "
                     "(%d without running stats), %.2f GFLOPs\n"
                     % (a.output, len(g.nodes), len(g.tensors), m.params,
                        m.params - stats, flops / 1e9))


if __name__ == "__main__":
    main()
