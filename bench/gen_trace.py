#!/usr/bin/env python3
"""Generates a random buffer trace in MiniMalloc's CSV form.

    python3 bench/gen_trace.py BUFFERS [SEED] [-o FILE]
        [--horizon T] [--max-duration D] [--max-size S]

Columns `id,lower,upper,size`: buffer i is live on [lower, upper) and
takes `size` bytes (the input of `memplan offsets` and `memplan verify`).
Starts are uniform on [0, T) (T = --horizon, default BUFFERS); durations
are log-uniform on [1, D] (D = --max-duration, default 1000; 0 means T),
cut at T; sizes are log-uniform on [1, S] bytes (S = --max-size, default
2^20). With the defaults about D / ln(D) (~145) buffers are live at once
whatever BUFFERS is, as in a longer program: the overlapping pairs grow
linearly. With --max-duration 0, about T / ln(T) are live at once and the
pairs grow almost quadratically (a dense trace). Used by
bench/scaling_offsets.sh.

The same arguments give the same bytes (Python's Mersenne Twister, seeded).
Python 3 standard library only.
"""
import argparse
import math
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("buffers", type=int)
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--horizon", type=int, default=0)
    ap.add_argument("--max-duration", type=int, default=1000)
    ap.add_argument("--max-size", type=int, default=1 << 20)
    a = ap.parse_args()
    if a.buffers < 1 or a.max_size < 1 or a.horizon < 0 or a.max_duration < 0:
        ap.error("BUFFERS and the limits must be positive")
    n = a.buffers
    horizon = a.horizon or n
    max_dur = min(a.max_duration, horizon) if a.max_duration else horizon
    rng = random.Random(a.seed)
    log_d = math.log(max_dur + 1)
    log_s = math.log(a.max_size + 1)
    rows = ["id,lower,upper,size"]
    for i in range(n):
        start = rng.randrange(horizon)
        dur = min(max(1, int(math.exp(rng.random() * log_d))), max_dur)
        end = min(start + dur, horizon)
        if end <= start:
            end = start + 1
        size = min(max(1, int(math.exp(rng.random() * log_s))), a.max_size)
        rows.append("%d,%d,%d,%d" % (i, start, end, size))
    text = "\n".join(rows) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
