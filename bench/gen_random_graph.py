#!/usr/bin/env python3
"""Generates a random layered graph as a networkx node-link JSON graph in
Checkmate's spelling (the format of ../shared/bench/checkmate, read by
`memplan plan`).

    python3 bench/gen_random_graph.py NODES [SEED] [-o FILE]

The shape follows Checkmate's random layered graphs (random_layered_n1000
_w0.31_nlv0.75_ed0.2_scd0.14: layers about 20 nodes wide, each node
reading about 4 nodes of the layer before, and skip edges from up to
about 50 layers back), with the same statistics at every size, so that a
series over NODES measures the planner and not a change of structure:

  - layers of 1 to 39 nodes (uniform, mean 20);
  - each node reads each node of the previous layer with probability 0.2
    (at least one of them), and Poisson(0.8) nodes of the layers 2 to 50
    back (skip edges);
  - a node that nobody reads is read by a random node of the next layer,
    and the last layer is read by one sink: one graph output;
  - outputs of 1 KiB to 1 MiB (log-uniform, rounded to 16 bytes), costs
    of 1 to 100 time units.

Exactly NODES nodes (NODES >= 2); the same NODES and SEED give the same
bytes. Python 3 standard library only.
"""
import argparse
import math
import random
import sys

WIDTH_MAX = 39
EDGE_P = 0.2
SKIP_MEAN = 0.8
SKIP_WINDOW = 50


def poisson(rng, mean):
    k, p, lim = 0, 1.0, math.exp(-mean)
    while True:
        p *= rng.random()
        if p < lim:
            return k
        k += 1


def generate(n, seed, out):
    rng = random.Random(seed)
    layers = []  # list of lists of node ids
    links = []
    nid = 0
    read = []  # per node: read by someone
    body = n - 1  # the last node is the sink
    while nid < body:
        w = min(rng.randint(1, WIDTH_MAX), body - nid)
        layer = list(range(nid, nid + w))
        nid += w
        read.extend([False] * w)
        if layers:
            prev = layers[-1]
            for v in layer:
                ins = [u for u in prev if rng.random() < EDGE_P]
                if not ins:
                    ins = [rng.choice(prev)]
                for k in range(poisson(rng, SKIP_MEAN)):
                    back = rng.randint(2, SKIP_WINDOW)
                    if back <= len(layers):
                        ins.append(rng.choice(layers[-back]))
                for u in sorted(set(ins)):
                    links.append((u, v))
                    read[u] = True
            for u in prev:
                if not read[u]:
                    links.append((u, rng.choice(layer)))
                    read[u] = True
        layers.append(layer)
    sink = nid
    for u in layers[-1]:
        links.append((u, sink))
    lo, hi = math.log(1024), math.log(1 << 20)
    w = out.write
    w('{"directed": true, "multigraph": false, "graph": {"name": '
      '"random_layered_n%d_s%d"},\n "nodes": [\n' % (n, seed))
    for v in range(n):
        ram = int(math.exp(rng.uniform(lo, hi))) // 16 * 16
        cpu = rng.randint(1, 100)
        w('  {"id": %d, "name": "n%d", "backward": false, "cost_cpu": %d, '
          '"cost_ram": %d}%s\n' % (v, v, cpu, ram, "," if v < n - 1 else ""))
    w(' ],\n "links": [\n')
    for k, (u, v) in enumerate(links):
        w('  {"source": %d, "target": %d}%s\n'
          % (u, v, "," if k < len(links) - 1 else ""))
    w(' ]}\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nodes", type=int)
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    if a.nodes < 2:
        ap.error("NODES must be at least 2")
    out = open(a.output, "w") if a.output else sys.stdout
    generate(a.nodes, a.seed, out)
    if a.output:
        out.close()


if __name__ == "__main__":
    main()
