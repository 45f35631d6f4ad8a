#!/usr/bin/env python3
"""Check a memory snapshot written by `memplan plan --memory-viz FILE`.

    python3 scripts/check_memory_viz.py FILE.pickle [--out DIR] [--no-torch]
                                        [--expect-blocks N]

1. Structure (python3 alone): the pickle loads with `pickle`; it is a dict
   with "segments" and "device_traces"; every segment's blocks tile it
   (their sizes sum to total_size, addresses consecutive); the arena
   segments' total equals the plan's arena ("memplan" figures); every
   "alloc" event lies inside a segment, and every block allocated is
   freed by a "free_requested" immediately followed by a "free_completed"
   of the same address and size, unless it is still active in a segment at
   the end; replaying the trace backwards from the segments, as the
   viewer does, never frees an address that is not allocated.
   --expect-blocks N: the trace has N "alloc" events.
2. PyTorch's own tooling (when `import torch` works, unless --no-torch):
   torch.cuda._memory_viz's segsum ("stats", which asserts that the blocks
   tile each segment), trace, segments and memory (flamegraph lines, no
   download), and trace_plot / segment_plot (HTML) on the file; then
   `python -m torch.cuda._memory_viz stats|trace|trace_plot|segment_plot`
   as a user runs them. The HTML files go to --out (default: a temporary
   folder).
Prints what it checked; exits 0 when everything passed, 1 otherwise, 2 on
a usage error.
"""
import argparse
import os
import pickle
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_structure(d, expect_blocks):
    if not isinstance(d, dict):
        fail("the pickle is a %s, not a dict" % type(d).__name__)
    for k in ("segments", "device_traces"):
        if k not in d:
            fail("no %r key" % k)
    segs = d["segments"]
    arena_total = 0
    intervals = []
    active_end = {}
    for i, s in enumerate(segs):
        for k in ("address", "total_size", "stream", "blocks", "device"):
            if k not in s:
                fail("segment %d has no %r" % (i, k))
        at = s["address"]
        for b in s["blocks"]:
            for k in ("address", "size", "requested_size", "state", "frames"):
                if k not in b:
                    fail("a block of segment %d has no %r" % (i, k))
            if b["address"] != at:
                fail("segment %d: block at %#x, expected %#x" %
                     (i, b["address"], at))
            if b["state"] == "active_allocated":
                active_end[b["address"]] = b["size"]
            elif b["state"] != "inactive":
                fail("segment %d: block state %r" % (i, b["state"]))
            at += b["size"]
        if at - s["address"] != s["total_size"]:
            fail("segment %d: blocks sum to %d, total_size %d" %
                 (i, at - s["address"], s["total_size"]))
        intervals.append((s["address"], s["address"] + s["total_size"]))
        if s["address"] >= 0x7f0000000000:
            arena_total += s["total_size"]
    fig = d.get("memplan", {})
    if "arena_bytes" in fig and arena_total != fig["arena_bytes"]:
        fail("arena segments sum to %d, the plan's arena is %d" %
             (arena_total, fig["arena_bytes"]))
    traces = d["device_traces"]
    if not isinstance(traces, list) or len(traces) != 1:
        fail("device_traces is not a list of one device's events")
    ev = traces[0]
    live = {}
    allocs = frees = 0
    i = 0
    while i < len(ev):
        e = ev[i]
        for k in ("action", "addr", "size", "stream", "frames"):
            if k not in e:
                fail("event %d has no %r" % (i, k))
        a = e["action"]
        if a == "alloc":
            if not any(lo <= e["addr"] and e["addr"] + e["size"] <= hi
                       for lo, hi in intervals):
                fail("event %d: alloc at %#x outside every segment" %
                     (i, e["addr"]))
            if e["addr"] in live:
                fail("event %d: %#x allocated twice" % (i, e["addr"]))
            live[e["addr"]] = e["size"]
            allocs += 1
        elif a == "free_requested":
            nxt = ev[i + 1] if i + 1 < len(ev) else None
            if not nxt or nxt["action"] != "free_completed" or \
                    nxt["addr"] != e["addr"] or nxt["size"] != e["size"]:
                fail("event %d: free_requested not followed by its "
                     "free_completed" % i)
            if live.pop(e["addr"], None) != e["size"]:
                fail("event %d: frees %#x, not allocated with that size" %
                     (i, e["addr"]))
            frees += 1
            i += 1
        else:
            fail("event %d: unexpected action %r" % (i, a))
        i += 1
    for addr, size in live.items():
        if active_end.get(addr) != size:
            fail("%#x allocated, never freed, not active at the end" % addr)
    if expect_blocks is not None and allocs != expect_blocks:
        fail("%d alloc events, expected %d" % (allocs, expect_blocks))
    print("structure: %d segments, %d alloc and %d free pairs, %d live at "
          "the end: ok" % (len(segs), allocs, frees, len(live)))


def check_torch(path, d, out):
    try:
        import torch  # noqa: F401
        from torch.cuda import _memory_viz as mv
    except Exception as e:  # pragma: no cover - depends on the machine
        print("torch: skipped (import torch failed: %s)" % e)
        return
    print("torch %s" % torch.__version__)
    text = mv.segsum(d)
    print("segsum (stats): ok, %d lines" % len(text.splitlines()))
    text = mv.trace(d)
    print("trace: ok, %d lines" % len(text.splitlines()))
    for name in ("segments", "memory"):
        lines = getattr(mv, name)(d, format_flamegraph=lambda s: s)
        if not lines.strip():
            fail("%s: no flamegraph lines" % name)
        print("%s: ok, %d flamegraph lines" % (name, len(lines.splitlines())))
    for name in ("trace_plot", "segment_plot"):
        html = getattr(mv, name)(d)
        if "add_local_files" not in html:
            fail("%s: not the viewer's HTML" % name)
        print("%s: ok, %d bytes of HTML" % (name, len(html)))
    for args in (["stats", path], ["trace", path],
                 ["trace_plot", path, "-o", os.path.join(out, "trace.html")],
                 ["segment_plot", path, "-o",
                  os.path.join(out, "segments.html")]):
        r = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz"]
                           + args, capture_output=True, text=True)
        if r.returncode != 0:
            fail("python -m torch.cuda._memory_viz %s: exit %d\n%s" %
                 (args[0], r.returncode, r.stderr[-2000:]))
        print("python -m torch.cuda._memory_viz %s: ok" % args[0])
    print("HTML written to %s (open in a browser with network access: the "
          "viewer loads its script from cdn.jsdelivr.net)" % out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--out")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--expect-blocks", type=int)
    a = ap.parse_args()
    with open(a.file, "rb") as f:
        d = pickle.load(f)
    check_structure(d, a.expect_blocks)
    if not a.no_torch:
        out = a.out or tempfile.mkdtemp(prefix="memplan-memviz-")
        os.makedirs(out, exist_ok=True)
        check_torch(a.file, d, out)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
