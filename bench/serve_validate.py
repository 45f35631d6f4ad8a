#!/usr/bin/env python3
"""Serving: PyTorch/transformers' measured memory next to memplan's
prediction, per term (issue 21; docs/serving.md, "The GPU run").

On the GPU machine (torch and transformers installed, memplan built):

    python3 bench/serve_validate.py --memplan build/memplan \
        --batch 8 --prompt 512 --gen 64 -o serve_validate.json

It writes a small Llama-style config (hidden 1024, 8 layers, 16 heads,
4 KV heads, FFN 2816, vocab 32000, bf16: about 311 MB of weights), builds
the model with random weights on the GPU (no download), runs generate()
with a static cache (cache_implementation="static") at --batch sequences
of --prompt + --gen tokens, and records the weights (parameters' bytes),
the static cache (its tensors' bytes), the peak
(torch.cuda.max_memory_allocated) and what is left. Then it runs
`memplan serve CONFIG --json` with the same batch and length (--max-seqs
batch, --max-batched-tokens batch x prompt, the contiguous layout at
prompt + gen, no CUDA graphs, no reserve, gpu-util 1) and puts memplan's
terms beside.

The peak, term by term. The generate() run records the caching
allocator's history (torch.cuda.memory._record_memory_history: every
alloc, free and segment with its Python and C++ stack) from before the
model is built; at its end torch.cuda.memory._snapshot() returns it. The
script replays that trace, simulating the allocator's blocks (requests
rounded to 512 bytes, a block split only when the rest is at least 512
bytes in a small segment or more than 1 MiB in a large one), finds the
event at which the allocated bytes peak during generate(), and classifies
every block live at that moment by its address (the parameters', the
static cache's, a CUDA graph pool's segment) and its stack (cache_utils,
generation/, the model's head, the decoder's modules, inductor's
generated code, cuBLAS's workspace) into: weights, KV cache, logits,
fp32 logits, attention/MLP activations, sampling, torch.compile / CUDA
graph pool, cuBLAS workspaces, allocator rounding (allocated - requested)
and other (named by its top frame). The rows sum to the measured peak:
what the replay does not explain is its own row, the residual (0 when
the replay is exact). The memory the allocator holds reserved but not
allocated at that moment is given beside, outside the sum.

As a cross-check, and as the fallback when the snapshot is unavailable,
a second process measures the peaks of separate phases with the same
model: a tiny forward (what stays allocated after it: cuBLAS's
workspace), the prefill with the logits of every prompt token and with
logits_to_keep=1, the prefill into a static cache and one eager decode
step, generate() of one token, and generate() with disable_compile=True.
The generate() run and the phases each run in a child process, so that
a failure of the breakdown never loses the main measurement (a failed
child is retried without the history).

    --markdown      print the per-term table as Markdown (for the docs)
    --from-json F   print the tables of an earlier run's JSON, no GPU
    --self-test     check the classifier on a synthetic snapshot, no torch

One JSON object out (-o, default stdout); the tables go to stdout when
the JSON goes to a file, else to stderr.
"""
import argparse
import bisect
import json
import linecache
import os
import subprocess
import sys
import tempfile
import traceback

CONFIG = {
    "_name_or_path": "memplan/serve-small-llama",
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 2816,
    "num_attention_heads": 16, "num_key_value_heads": 4,
    "num_hidden_layers": 8, "vocab_size": 32000,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}

# The terms of the peak, in the order of the table. All but the last
# sum to the measured peak; "reserved_free" is beside it.
TERMS = [
    ("weights", "weights"),
    ("kv_cache", "KV cache (static cache tensors)"),
    ("logits", "logits (lm_head output, 16-bit)"),
    ("logits_fp32", "logits in fp32 (upcast copies)"),
    ("activations", "attention/MLP activations"),
    ("sampling", "sampling, generate() bookkeeping"),
    ("compile", "torch.compile / CUDA graph pool"),
    ("workspace", "cuBLAS/cuBLASLt workspaces"),
    ("rounding", "allocator rounding (allocated - requested)"),
    ("other", "other"),
    ("residual", "residual (measured - replayed)"),
]
SUM_TERMS = [k for k, _ in TERMS]
RESERVED_TERM = ("reserved_free",
                 "reserved, not allocated (beside the sum)")

# ---- the caching allocator, as c10/cuda/CUDACachingAllocator.cpp ----
MIN_BLOCK = 512            # kMinBlockSize: every request rounds up to it
SMALL_SIZE = 1 << 20       # kSmallSize: a large block is split above it
SMALL_BUFFER = 2 << 20     # kSmallBuffer: the small pool's segments

COMPILE_FILES = ("/torch/_inductor/", "torchinductor", "cudagraph_trees",
                 "/torch/_functorch/_aot_autograd/", "/torch/cuda/graphs.py")
MODEL_DIRS = ("/transformers/models/", "/transformers/integrations/",
              "/transformers/masking_utils", "/transformers/modeling_",
              "/transformers/pytorch_utils", "/transformers/utils/generic")


def round_size(n):
    """The caching allocator's request size: a multiple of 512 bytes."""
    if n < MIN_BLOCK:
        return MIN_BLOCK
    return MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


class AllocatorSim:
    """The caching allocator's blocks, replayed from its trace.

    Each segment is a sorted list of block starts with [size, state];
    an alloc takes the free block at its address and splits it as the
    allocator does; free_requested stops counting it as allocated (as
    the allocated_bytes statistic does); free_completed frees it and
    merges it with free neighbours. When the trace does not match (a
    block not found: the history began late, expandable segments, a CUDA
    graph pool's state reset), the block counts at its rounded size and
    the mismatch is counted."""

    def __init__(self):
        self.seg_starts = []     # sorted segment addresses
        self.segs = {}           # addr -> {"size", "starts", "blocks"}
        self.live = {}           # addr -> block record
        self.allocated = 0       # bytes of allocated blocks
        self.requested = 0       # bytes requested by them
        self.reserved = 0        # bytes of segments
        self.mismatches = 0
        self.unknown_frees = 0
        self.mapped = 0          # expandable segments' events seen

    def _seg_of(self, addr):
        i = bisect.bisect_right(self.seg_starts, addr) - 1
        if i < 0:
            return None
        s = self.segs[self.seg_starts[i]]
        return s if addr < s["addr"] + s["size"] else None

    def apply(self, i, ev):
        a = ev.get("action")
        addr = ev.get("addr", 0)
        size = ev.get("size", 0)
        if a == "segment_alloc":
            bisect.insort(self.seg_starts, addr)
            self.segs[addr] = {"addr": addr, "size": size, "starts": [addr],
                               "blocks": {addr: [size, "free"]}}
            self.reserved += size
        elif a == "segment_free":
            if addr in self.segs:
                self.reserved -= self.segs.pop(addr)["size"]
                self.seg_starts.remove(addr)
            else:
                self.reserved -= size
        elif a in ("segment_map", "segment_unmap"):
            self.mapped += 1
            self.reserved += size if a == "segment_map" else -size
        elif a == "alloc":
            r = round_size(size)
            blk_size = r
            seg = self._seg_of(addr)
            b = seg["blocks"].get(addr) if seg else None
            if b is not None and b[1] == "free" and b[0] >= r:
                rest = b[0] - r
                small = seg["size"] <= SMALL_BUFFER
                split = rest >= MIN_BLOCK if small else rest > SMALL_SIZE
                if split:
                    b[0] = r
                    seg["blocks"][addr + r] = [rest, "free"]
                    bisect.insort(seg["starts"], addr + r)
                b[1] = "alloc"
                blk_size = b[0]
            else:
                self.mismatches += 1
            self.live[addr] = {"addr": addr, "requested": size,
                               "size": blk_size, "index": i,
                               "frames": ev.get("frames") or []}
            self.allocated += blk_size
            self.requested += size
        elif a == "free_requested":
            blk = self.live.pop(addr, None)
            if blk is None:
                self.unknown_frees += 1
                return
            self.allocated -= blk["size"]
            self.requested -= blk["requested"]
            seg = self._seg_of(addr)
            b = seg["blocks"].get(addr) if seg else None
            if b is not None:
                b[1] = "pending"
        elif a == "free_completed":
            seg = self._seg_of(addr)
            b = seg["blocks"].get(addr) if seg else None
            if b is None or b[1] == "alloc":
                return
            b[1] = "free"
            st, bl = seg["starts"], seg["blocks"]
            j = bisect.bisect_left(st, addr)
            nxt = addr + b[0]
            if nxt in bl and bl[nxt][1] == "free":      # merge the next
                b[0] += bl.pop(nxt)[0]
                st.pop(j + 1)
            if j > 0:                                   # into the previous
                prev = st[j - 1]
                p = bl[prev]
                if p[1] == "free" and prev + p[0] == addr:
                    p[0] += bl.pop(addr)[0]
                    st.pop(j)


def replay_peak(trace, start=0):
    """The moment, at or after trace[start], at which the allocated bytes
    peak, and the blocks live then. Two passes: the first finds the
    event, the second stops at it."""
    sim = AllocatorSim()
    for i in range(min(start, len(trace))):
        sim.apply(i, trace[i])
    best, at = sim.allocated, start - 1
    for i in range(start, len(trace)):
        sim.apply(i, trace[i])
        if sim.allocated > best:
            best, at = sim.allocated, i
    final = {"mismatches": sim.mismatches,
             "unknown_frees": sim.unknown_frees,
             "expandable_events": sim.mapped}
    sim = AllocatorSim()
    for i in range(at + 1):
        sim.apply(i, trace[i])
    return {"index": at, "allocated": sim.allocated,
            "requested": sim.requested, "reserved": sim.reserved,
            "live": list(sim.live.values()), "checks": final,
            "event": trace[at] if 0 <= at < len(trace) else None}


def _py(frames):
    return [f for f in frames if str(f.get("filename", "")).endswith(".py")]


def _site(f):
    if not f:
        return "?"
    fn = str(f.get("filename", "?")).replace("\\", "/").split("/")
    return "%s:%s:%s" % ("/".join(fn[-2:]) if fn[-1] in (
        "utils.py", "__init__.py") else fn[-1], f.get("line", "?"),
        f.get("name", "?"))


def _user_frame(frames):
    """The innermost Python frame outside torch itself (transformers,
    inductor's generated code, this script)."""
    for f in _py(frames):
        fn = str(f.get("filename", ""))
        if "/torch/" not in fn or "torchinductor" in fn:
            return f
    return None


def classify_block(blk, ctx):
    """(term, site) of one live block: by its address first (parameters,
    the static cache, a private CUDA graph pool), then by its stack
    (frames innermost first, as the snapshot gives them)."""
    addr, frames = blk["addr"], blk.get("frames") or []
    py = _py(frames)
    if py and py[0].get("name") == "<module>":
        frames = frames[::-1]       # outermost first: turn it round
        py = py[::-1]
    if addr in ctx.get("weight_addrs", ()):
        return "weights", "parameters"
    files = [str(f.get("filename", "")) for f in py]
    kv_addrs = ctx.get("kv_addrs") or ()
    if addr in kv_addrs or (not kv_addrs and any(
            fn.endswith("cache_utils.py") for fn in files)):
        top = next((f for f in py
                    if str(f.get("filename", "")).endswith("cache_utils.py")),
                   None)
        return "kv_cache", _site(top) if top else "static cache tensors"
    user = _user_frame(frames)
    for f in frames:
        if "workspace" in str(f.get("name", "")).lower():
            return "workspace", str(f.get("name"))[:80]
    for lo, hi in ctx.get("private_pools", ()):
        if lo <= addr < hi:
            return "compile", "CUDA graph pool: " + _site(user)
    if any(any(c in fn for c in COMPILE_FILES) for fn in files):
        return "compile", _site(user)
    if addr in ctx.get("buffer_addrs", ()):
        return "other", "model buffers (rotary inv_freq)"
    if user is None:
        top = _py(frames)[:1] or frames[:1]
        return "other", _site(top[0]) if top else "no stack"
    fn, line = str(user.get("filename", "")), user.get("line", 0)
    site = _site(user)
    vocab = ctx.get("vocab", 0)
    req = blk.get("requested", 0)
    if "/transformers/generation/" in fn:
        if vocab and req and req % (4 * vocab) == 0:
            return "logits_fp32", site
        return "sampling", site
    head = ctx.get("head")
    if head and fn.endswith(head[0]) and head[1] <= line <= head[2]:
        code = user.get("code")
        if code is None:
            code = linecache.getline(fn, line) if line else ""
        if "float" in code:         # an upcast in the model's forward
            return "logits_fp32", site
        return "logits", site
    if any(d in fn for d in MODEL_DIRS):
        if head is None and vocab and req >= 2 * vocab and \
                req % (2 * vocab) == 0 and \
                os.path.basename(fn).startswith("modeling_"):
            return "logits", site + " (by size)"
        return "activations", site
    if os.path.basename(fn) == os.path.basename(__file__):
        return "other", "inputs (%s)" % site
    return "other", site


def breakdown(snapshot, ctx):
    """PyTorch's peak, term by term, from a memory snapshot (the dict of
    torch.cuda.memory._snapshot()). ctx: device, generate_start (the
    trace's length when generate() began), measured_peak
    (max_memory_allocated over generate(), less the bytes allocated
    before the history), weight_addrs, kv_addrs, buffer_addrs, vocab,
    head (file, first line, last line of the model's forward), and
    max_entries. The rows sum to measured_peak exactly: the residual row
    is what the replay does not explain."""
    dev = ctx.get("device", 0)
    traces = snapshot.get("device_traces") or []
    if dev >= len(traces) or not traces[dev]:
        raise ValueError("the snapshot has no trace for device %d "
                         "(was the history recording?)" % dev)
    trace = traces[dev]
    pools = []
    for s in snapshot.get("segments", []):
        pid = s.get("segment_pool_id")
        if s.get("device", dev) == dev and pid and tuple(pid) != (0, 0):
            pools.append((s["address"], s["address"] + s["total_size"]))
    c = dict(ctx)
    c["private_pools"] = pools
    start = c.get("generate_start") or 0
    wrapped = bool(c.get("max_entries")) and len(trace) >= c["max_entries"]
    if wrapped:
        start = 0       # the ring buffer wrapped: indices moved
    pk = replay_peak(trace, start)
    terms = {k: 0 for k in SUM_TERMS}
    sites = {k: {} for k in SUM_TERMS}
    for blk in pk["live"]:
        term, site = classify_block(blk, c)
        terms[term] += blk["requested"]
        sites[term][site] = sites[term].get(site, 0) + blk["requested"]
        extra = blk["size"] - blk["requested"]
        terms["rounding"] += extra
        if extra:
            key = "512-byte rounding" if blk["size"] == round_size(
                blk["requested"]) else "block not split (rest kept)"
            sites["rounding"][key] = sites["rounding"].get(key, 0) + extra
    measured = c.get("measured_peak")
    replayed = pk["allocated"]
    if measured is None:
        measured = replayed
    terms["residual"] = measured - replayed
    top = {k: sorted(v.items(), key=lambda kv: -kv[1])[:6]
           for k, v in sites.items() if v}
    ev = pk["event"] or {}
    return {
        "method": "snapshot replay",
        "measured_peak_bytes": measured,
        "replayed_peak_bytes": replayed,
        "replayed_requested_bytes": pk["requested"],
        "terms": terms,
        "sum_bytes": sum(terms.values()),
        "residual_bytes": terms["residual"],
        "reserved_at_peak_bytes": pk["reserved"],
        "reserved_free_bytes": pk["reserved"] - replayed,
        "sites": {k: [[s, b] for s, b in v] for k, v in top.items()},
        "peak_event": {"index": pk["index"], "trace_length": len(trace),
                       "generate_start": start,
                       "action": ev.get("action"), "size": ev.get("size"),
                       "stack": [_site(f) for f in _py(ev.get("frames")
                                                      or [])][:8]},
        "live_blocks": len(pk["live"]),
        "checks": dict(pk["checks"], trace_wrapped=wrapped,
                       private_pool_segments=len(pools)),
    }


# ---- memplan's side ---------------------------------------------------

def predict(memplan, cfg_path, batch, prompt, gen):
    cmd = [memplan, "serve", cfg_path, "--json", "--max-seqs", str(batch),
           "--max-batched-tokens", str(batch * prompt),
           "--max-model-len", str(prompt + gen), "--kv-layout", "contiguous",
           "--cuda-graph-sizes", "none", "--runtime-reserve", "0",
           "--gpu-util", "1"]
    r = json.loads(subprocess.check_output(cmd))
    kv = r["kv_seq_bytes"] * batch
    ph = ("prefill" if r["prefill"]["arena_bytes"] >=
          r["decode"]["arena_bytes"] else "decode")
    return {
        "command": " ".join(cmd),
        "weights_bytes": r["breakdown"]["weights_bytes"],
        "kv_cache_bytes": kv,
        "prefill_peak_bytes": r["prefill"]["arena_bytes"],
        "decode_peak_bytes": r["decode"]["arena_bytes"],
        "logits_fp32_bytes": r["prefill"]["logits_fp32_bytes"],
        "sampler_bytes": r["prefill"]["sampler_bytes"],
        "predicted_peak_bytes": r["breakdown"]["weights_bytes"] + kv +
        r["breakdown"]["activations_bytes"],
        "peak_phase": ph,
        "peak_logits_fp32_bytes": r[ph]["logits_fp32_bytes"],
        "peak_sampler_bytes": r[ph]["sampler_bytes"],
        "activations_bytes": r["breakdown"]["activations_bytes"],
        "cuda_graphs_bytes": r["breakdown"].get("cuda_graphs_bytes", 0),
    }


def memplan_terms(m, dtype_bytes=2):
    """memplan's prediction in the same terms. The logits are the sampled
    rows' lm_head output (16-bit) and their fp32 cast, the sampling the
    softmax and sort buffers, of the phase whose arena is the peak;
    'activations' is that arena less them (so the column sums to the
    predicted peak). The workspaces and the CUDA context are memplan's
    runtime reserve, 0 here; it plans no allocator rounding."""
    f32 = m.get("peak_logits_fp32_bytes", m.get("logits_fp32_bytes", 0))
    smp = m.get("peak_sampler_bytes", m.get("sampler_bytes", 0))
    lg = f32 * dtype_bytes // 4
    act = m.get("activations_bytes",
                m["predicted_peak_bytes"] - m["weights_bytes"] -
                m["kv_cache_bytes"])
    t = {k: 0 for k in SUM_TERMS}
    t.update(weights=m["weights_bytes"], kv_cache=m["kv_cache_bytes"],
             logits=lg, logits_fp32=f32, sampling=smp,
             activations=act - lg - f32 - smp,
             compile=m.get("cuda_graphs_bytes", 0))
    return t


def phase_terms(p, main, kv_bytes):
    """The cross-check from the separate phases (the fallback when the
    snapshot failed): what each phase's peak says of a term. Differences
    of peaks, so approximations, named as such."""
    def pk(name, key="peak_above_start_bytes"):
        v = p.get(name) or {}
        return v.get(key)
    out = {}
    ws = pk("warmup_tiny_forward", "after_above_start_bytes")
    full, keep1 = pk("prefill_full_logits"), pk("prefill_logits_to_keep_1")
    if full is not None and keep1 is not None:
        out["logits_all_prompt_tokens_bytes"] = full - keep1
    if keep1 is not None:
        out["prefill_logits_to_keep_1_bytes"] = keep1
    if ws is not None:
        out["workspace_bytes"] = ws
    dec = pk("decode_step_eager")
    if dec is not None:
        out["decode_step_eager_bytes"] = dec
    g1 = pk("generate_1_token")
    if g1 is not None:
        out["generate_1_token_less_kv_bytes"] = g1 - kv_bytes
    eager = pk("generate_no_compile")
    if eager is not None:
        out["generate_eager_less_kv_bytes"] = eager - kv_bytes
        if main and ws is not None:
            rest = (main["max_memory_allocated_bytes"] -
                    main["allocated_before_generate_bytes"])
            out["compile_by_difference_bytes"] = rest - eager - ws
    return out


def fallback_terms(p, main, kv_bytes):
    """The per-term peak from the phases alone, summing to the measured
    peak: weights, KV, the eager generate()'s peak less the cache
    (activations, logits and sampling together), the workspace, other
    (what was allocated before generate() besides the weights) and
    torch.compile by difference (the rest)."""
    d = phase_terms(p, main, kv_bytes)
    if "generate_eager_less_kv_bytes" not in d or not main:
        return None
    t = {k: 0 for k in SUM_TERMS}
    t["weights"] = main["weights_bytes"]
    t["kv_cache"] = kv_bytes
    t["activations"] = d["generate_eager_less_kv_bytes"]
    t["workspace"] = d.get("workspace_bytes", 0)
    t["other"] = main["allocated_before_generate_bytes"] - t["weights"]
    t["compile"] = (main["max_memory_allocated_bytes"] -
                    sum(v for k, v in t.items() if k != "compile"))
    return {"method": "phases (compile by difference; activations include "
            "logits and sampling)",
            "measured_peak_bytes": main["max_memory_allocated_bytes"],
            "terms": t, "sum_bytes": sum(t.values()), "residual_bytes": 0}


def side_by_side(bd, mt):
    rows = []
    for k, label in TERMS:
        pt = bd["terms"].get(k, 0)
        mp = mt.get(k, 0)
        row = {"term": k, "label": label, "pytorch_bytes": pt,
               "memplan_bytes": mp, "pytorch_minus_memplan_bytes": pt - mp}
        s = bd.get("sites", {}).get(k)
        if s:
            row["sites"] = s
        rows.append(row)
    if "reserved_free_bytes" in bd:
        rows.append({"term": RESERVED_TERM[0], "label": RESERVED_TERM[1],
                     "pytorch_bytes": bd["reserved_free_bytes"],
                     "memplan_bytes": 0, "pytorch_minus_memplan_bytes":
                     bd["reserved_free_bytes"], "in_sum": False})
    return rows


# ---- PyTorch's side (child processes) ---------------------------------

def _start_history(torch, max_entries):
    rec = torch.cuda.memory._record_memory_history
    try:
        rec(enabled="all", context="all", stacks="all",
            max_entries=max_entries)
    except TypeError:               # older signature
        rec(True, trace_alloc_max_entries=max_entries,
            trace_alloc_record_context=True)


def _stop_history(torch):
    try:
        torch.cuda.memory._record_memory_history(enabled=None)
    except TypeError:
        torch.cuda.memory._record_memory_history(False)


def _tensor_addrs(torch, obj, depth=4, seen=None):
    """Storage addresses of the tensors reachable from obj (a cache)."""
    seen = set() if seen is None else seen
    out = set()
    if id(obj) in seen or depth < 0:
        return out
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        if obj.is_cuda:
            out.add(obj.untyped_storage().data_ptr())
        return out
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__"):
        items = list(vars(obj).values())
    else:
        return out
    for v in items:
        out |= _tensor_addrs(torch, v, depth - 1, seen)
    return out


def _head_lines(model):
    import inspect
    try:
        f = inspect.unwrap(type(model).forward)
        lines, first = inspect.getsourcelines(f)
        return [inspect.getsourcefile(f), first, first + len(lines) - 1]
    except Exception:
        return None


def _build(torch, cfg_path):
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(os.path.dirname(cfg_path))
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg,
                                                 torch_dtype=torch.bfloat16)
    model.eval()
    return cfg, model


def measure(cfg_path, batch, prompt, gen, history=True,
            max_entries=2000000, snapshot_path=None):
    """generate() with a static cache, as before; with history, the
    per-term breakdown of its peak (a failure there is reported in
    breakdown_error and keeps the measurement)."""
    import torch
    torch.manual_seed(0)
    notes = []
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    base_reserved = torch.cuda.memory_reserved()
    recording = False
    if history:
        try:
            _start_history(torch, max_entries)
            recording = True
        except Exception as e:
            notes.append("no history: %r" % (e,))
    cfg, model = _build(torch, cfg_path)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    torch.cuda.synchronize()
    start = None
    if recording:
        try:
            start = len(torch.cuda.memory._snapshot()["device_traces"]
                        [torch.cuda.current_device()])
        except Exception as e:
            notes.append("no trace index at generate(): %r" % (e,))
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()

    def run():
        with torch.no_grad():
            return model.generate(ids, max_new_tokens=gen, min_new_tokens=gen,
                                  do_sample=False,
                                  cache_implementation="static")
    try:
        out = run()
    except Exception as e:
        if not recording:
            raise
        notes.append("generate() failed while recording (%r); run again "
                     "without the history" % (e,))
        _stop_history(torch)
        recording = False
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = run()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    stats = torch.cuda.memory_stats()
    hd = cfg.hidden_size // cfg.num_attention_heads
    cache = (2 * cfg.num_hidden_layers * batch * cfg.num_key_value_heads *
             (prompt + gen) * hd * 2)
    res = {
        "weights_bytes": weights,
        "allocated_before_generate_bytes": before - base,
        "static_cache_bytes": cache,
        "max_memory_allocated_bytes": peak - base,
        "rest_bytes": peak - base - weights - cache,
        "max_memory_reserved_bytes":
            torch.cuda.max_memory_reserved() - base_reserved,
        "requested_bytes_peak": stats.get("requested_bytes.all.peak"),
        "tokens_out": int(out.shape[1]),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    try:
        import transformers
        res["transformers"] = transformers.__version__
    except Exception:
        pass
    if notes:
        res["notes"] = notes
    if not recording:
        if history:
            res["breakdown_error"] = "; ".join(notes) or "no history"
        return res
    try:
        snap = torch.cuda.memory._snapshot()
        _stop_history(torch)
        if snapshot_path:
            import pickle
            with open(snapshot_path, "wb") as f:
                pickle.dump(snap, f)
            res["snapshot_file"] = snapshot_path
        kv = set()
        for name in ("_cache", "_static_cache"):
            if getattr(model, name, None) is not None:
                kv |= _tensor_addrs(torch, getattr(model, name))
        head = _head_lines(model)
        if head:
            head[0] = os.path.basename(head[0])
        ctx = {"device": torch.cuda.current_device(),
               "generate_start": start, "measured_peak": peak - base,
               "max_entries": max_entries, "vocab": cfg.vocab_size,
               "weight_addrs": {p.untyped_storage().data_ptr()
                                for p in model.parameters()},
               "buffer_addrs": {b.untyped_storage().data_ptr()
                                for b in model.buffers()},
               "kv_addrs": kv, "head": head}
        res["breakdown"] = breakdown(snap, ctx)
        res["breakdown"]["kv_addrs_found"] = len(kv)
        res["breakdown"]["head"] = head
    except Exception:
        res["breakdown_error"] = traceback.format_exc(limit=4)
    return res


def _static_cache(torch, cfg, batch, length):
    import inspect
    from transformers import StaticCache
    params = inspect.signature(StaticCache.__init__).parameters
    want = {"config": cfg, "max_cache_len": length, "device": "cuda",
            "dtype": torch.bfloat16}
    # newer versions size the batch on the first update
    want["max_batch_size" if "max_batch_size" in params else
         "batch_size"] = batch
    return StaticCache(**{k: v for k, v in want.items() if k in params})


def measure_phases(cfg_path, batch, prompt, gen):
    """The peaks of separate phases (each: peak and what stays allocated,
    above what was allocated when it began). Nothing here compiles (the
    generate() runs are eager), so the order does not matter beyond the
    warm-up going first: it leaves cuBLAS's workspace allocated."""
    import gc
    import inspect
    import torch
    torch.manual_seed(0)
    cfg, model = _build(torch, cfg_path)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    fwd = inspect.signature(model.forward).parameters
    keep_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep")
                    if k in fwd), None)
    out = {"logits_to_keep_argument": keep_kw}
    state = {}

    def phase(name, fn):
        state.clear()
        if hasattr(model, "_cache"):
            try:
                del model._cache
            except Exception:
                pass
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        s = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        try:
            with torch.no_grad():
                r = fn()
            torch.cuda.synchronize()
            out[name] = {
                "peak_above_start_bytes": torch.cuda.max_memory_allocated() - s,
                "after_above_start_bytes": torch.cuda.memory_allocated() - s}
            if isinstance(r, dict):
                out[name].update(r)
        except Exception as e:
            out[name] = {"error": repr(e)[:400]}

    def warm():
        model(ids[:1, :8], use_cache=False)
        return None

    def prefill(keep):
        kw = {keep_kw: 1} if keep and keep_kw else {}
        if keep and not keep_kw:
            raise RuntimeError("the model's forward has no logits_to_keep")
        o = model(ids, use_cache=False, **kw)
        return {"logits_shape": list(o.logits.shape),
                "logits_dtype": str(o.logits.dtype)}

    def cached():
        cache = _static_cache(torch, cfg, batch, prompt + gen)
        kw = {keep_kw: 1} if keep_kw else {}
        pos = torch.arange(prompt, device="cuda")
        o = model(ids, past_key_values=cache, use_cache=True,
                  cache_position=pos, **kw)
        state["cache"] = cache
        state["next"] = o.logits[:, -1:].argmax(-1)
        return None

    def decode():
        if "cache" not in state:
            cached()
        kw = {keep_kw: 1} if keep_kw else {}
        pos = torch.tensor([prompt], device="cuda")
        model(state["next"], past_key_values=state["cache"], use_cache=True,
              cache_position=pos, **kw)
        return None

    def generate(n, **kw):
        def run():
            try:
                model.generate(ids, max_new_tokens=n, min_new_tokens=n,
                               do_sample=False, cache_implementation="static",
                               **kw)
            except (TypeError, ValueError) as e:
                if "disable_compile" not in str(e):
                    raise
                # a transformers without it: without auto-compile too
                model.generate(ids, max_new_tokens=n, min_new_tokens=n,
                               do_sample=False, cache_implementation="static")
                return {"note": "disable_compile not accepted: generate() "
                        "as is (%s)" % str(e)[:200]}
            return None
        return run

    phase("warmup_tiny_forward", warm)
    phase("prefill_full_logits", lambda: prefill(False))
    phase("prefill_logits_to_keep_1", lambda: prefill(True))
    phase("prefill_static_cache", cached)
    # the decode step alone: the cache is made outside the measured part
    state_cache = None
    try:
        with torch.no_grad():
            cached()
        state_cache = dict(state)
    except Exception as e:
        out["decode_step_eager"] = {"error": "prefill: %r" % (e,)}
    if state_cache is not None:
        def decode_only():
            state.update(state_cache)
            return decode()
        gc.collect()
        torch.cuda.synchronize()
        s = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        try:
            with torch.no_grad():
                decode_only()
            torch.cuda.synchronize()
            out["decode_step_eager"] = {
                "peak_above_start_bytes": torch.cuda.max_memory_allocated() - s,
                "after_above_start_bytes": torch.cuda.memory_allocated() - s}
        except Exception as e:
            out["decode_step_eager"] = {"error": repr(e)[:400]}
        state_cache = None
        state.clear()
    phase("generate_1_token", generate(1))
    phase("generate_no_compile", generate(gen, disable_compile=True))
    return out


def child(a):
    if a.child == "main":
        r = measure(a.config, a.batch, a.prompt, a.gen,
                    history=not a.no_history, max_entries=a.max_entries,
                    snapshot_path=a.snapshot)
    else:
        r = measure_phases(a.config, a.batch, a.prompt, a.gen)
    with open(a.child_out, "w") as f:
        json.dump(r, f, indent=1)
    return 0


def run_child(a, kind, cfg_path, extra=()):
    fd, outp = tempfile.mkstemp(prefix="serve_validate.%s." % kind,
                                suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind,
           "--config", cfg_path, "--child-out", outp, "--batch",
           str(a.batch), "--prompt", str(a.prompt), "--gen", str(a.gen),
           "--max-entries", str(a.max_entries)] + list(extra)
    env = dict(os.environ)
    env.setdefault("TORCH_SYMBOLIZE_MODE", "fast")
    try:
        p = subprocess.run(cmd, env=env, timeout=a.child_timeout,
                           stdout=sys.stderr)
        if p.returncode == 0:
            with open(outp) as f:
                return json.load(f), None
        return None, "child %s: exit status %d" % (kind, p.returncode)
    except Exception as e:
        return None, "child %s: %r" % (kind, e)
    finally:
        try:
            os.unlink(outp)
        except OSError:
            pass


# ---- the tables -------------------------------------------------------

def _mb(n):
    if abs(n) < 100000:
        return "%+d B" % n if n else "0"
    return "%+.1f MB" % (n / 1e6)


def table_text(res):
    lines = []
    bd = res.get("breakdown")
    if bd:
        lines.append("PyTorch's peak per term (%s), bytes; batch %s, prompt "
                     "%s, gen %s" % (bd.get("method"), res.get("batch"),
                                     res.get("prompt"), res.get("gen")))
        lines.append("%-44s %15s %15s %15s" % ("term", "PyTorch", "memplan",
                                               "PyTorch-memplan"))
        for r in bd["rows"]:
            lab = r["label"] + ("" if r.get("in_sum", True) else " *")
            lines.append("%-44s %15d %15d %15s" % (
                lab[:44], r["pytorch_bytes"], r["memplan_bytes"],
                _mb(r["pytorch_minus_memplan_bytes"])))
            for s, b in (r.get("sites") or [])[:3]:
                lines.append("    %-56s %13d" % (s[:56], b))
        lines.append("%-44s %15d %15d %15s" % (
            "sum (= measured peak)", bd["sum_bytes"], bd["memplan_sum_bytes"],
            _mb(bd["sum_bytes"] - bd["memplan_sum_bytes"])))
        lines.append("measured peak %d, residual %d; * not in the sum" % (
            bd["measured_peak_bytes"], bd.get("residual_bytes", 0)))
    if res.get("breakdown_error"):
        lines.append("breakdown: " + res["breakdown_error"].strip()
                     .splitlines()[-1])
    pc = res.get("phases_crosscheck")
    if pc:
        lines.append("phases (peak differences, approximate):")
        for k, v in pc.items():
            lines.append("  %-44s %15d" % (k, v))
    return "\n".join(lines)


def table_markdown(res):
    bd = res.get("breakdown")
    if not bd:
        return "(no per-term breakdown: %s)" % (
            res.get("breakdown_error", "not measured").strip()
            .splitlines()[-1])
    out = ["| batch | term | memplan | PyTorch | PyTorch - memplan | "
           "where (PyTorch's top sites) |",
           "|---:|---|---:|---:|---:|---|"]
    b = res.get("batch", "")
    for r in bd["rows"]:
        s = "; ".join("%s %d" % (x[0], x[1]) for x in
                      (r.get("sites") or [])[:2]).replace("|", "/")
        lab = r["label"] if r.get("in_sum", True) else \
            "(%s)" % r["label"]
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            b, lab, "{:,}".format(r["memplan_bytes"]),
            "{:,}".format(r["pytorch_bytes"]),
            _mb(r["pytorch_minus_memplan_bytes"]), s))
    out.append("| %s | **peak** (sum) | %s | %s | %s | %s |" % (
        b, "{:,}".format(bd["memplan_sum_bytes"]),
        "{:,}".format(bd["sum_bytes"]),
        _mb(bd["sum_bytes"] - bd["memplan_sum_bytes"]), bd.get("method")))
    return "\n".join(out)


def assemble(res):
    """The breakdown's rows beside memplan's, from the measurement (the
    snapshot's, else the phases')."""
    p, m = res.get("pytorch"), res.get("memplan")
    if not p or not m:
        return
    mt = memplan_terms(m)
    bd = p.pop("breakdown", None) or res.get("breakdown")
    if bd is not None and bd.get("method", "").startswith("phases"):
        bd = None           # made from the phases: made again below
    if bd is None and res.get("phases"):
        bd = fallback_terms(res["phases"], p, p["static_cache_bytes"])
    if res.get("phases"):
        res["phases_crosscheck"] = phase_terms(res["phases"], p,
                                               p["static_cache_bytes"])
    if bd is None:
        return
    bd = dict(bd)
    if bd.get("method", "").startswith("phases"):
        # the phases do not part the activations from the logits and the
        # sampling: memplan's column neither
        for k in ("logits", "logits_fp32", "sampling"):
            mt["activations"] += mt[k]
            mt[k] = 0
    bd["rows"] = side_by_side(bd, mt)
    bd["memplan_sum_bytes"] = sum(mt.values())
    bd["sum_equals_measured_peak"] = (bd["sum_bytes"] ==
                                      p["max_memory_allocated_bytes"])
    res["breakdown"] = bd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memplan", default="build/memplan")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--markdown", action="store_true",
                    help="print the per-term table as Markdown")
    ap.add_argument("--no-history", action="store_true",
                    help="measure without the allocator's history "
                    "(no snapshot breakdown)")
    ap.add_argument("--no-phases", action="store_true",
                    help="skip the separate phases' cross-check")
    ap.add_argument("--max-entries", type=int, default=2000000,
                    help="the history's ring buffer (events)")
    ap.add_argument("--snapshot", default=None,
                    help="also write the snapshot pickle (pytorch.org/"
                    "memory_viz) here")
    ap.add_argument("--child-timeout", type=float, default=3600)
    ap.add_argument("--from-json", default=None,
                    help="print the tables of an earlier run's JSON")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--child", choices=["main", "phases"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if a.child:
        return child(a)
    if a.from_json:
        with open(a.from_json) as f:
            res = json.load(f)
        assemble(res)
        print(table_markdown(res) if a.markdown else table_text(res))
        return 0
    d = tempfile.mkdtemp(prefix="serve_validate.")
    cfg_path = os.path.join(d, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(CONFIG, f, indent=2)
    res = {"config": CONFIG, "batch": a.batch, "prompt": a.prompt,
           "gen": a.gen,
           "memplan": predict(a.memplan, cfg_path, a.batch, a.prompt, a.gen)}
    extra = ["--no-history"] if a.no_history else []
    if a.snapshot:
        extra += ["--snapshot", os.path.abspath(a.snapshot)]
    pt, err = run_child(a, "main", cfg_path, extra)
    if pt is None and not a.no_history:
        res["breakdown_error"] = err + "; measured again without the history"
        pt, err = run_child(a, "main", cfg_path, ["--no-history"])
    if pt is None:
        res["pytorch_error"] = err
    else:
        res["pytorch"] = pt
        if pt.get("breakdown_error"):
            res["breakdown_error"] = pt["breakdown_error"]
        m, p = res["memplan"], pt
        res["diff"] = {
            "weights_bytes": m["weights_bytes"] - p["weights_bytes"],
            "kv_cache_bytes": m["kv_cache_bytes"] - p["static_cache_bytes"],
            "peak_bytes": m["predicted_peak_bytes"] -
            p["max_memory_allocated_bytes"],
        }
        if not a.no_phases:
            ph, perr = run_child(a, "phases", cfg_path)
            if ph is not None:
                res["phases"] = ph
            else:
                res["phases_error"] = perr
        try:
            assemble(res)
        except Exception:
            res["breakdown_error"] = traceback.format_exc(limit=4)
    text = json.dumps(res, indent=2)
    table = table_markdown(res) if a.markdown else table_text(res)
    if a.output == "-":
        print(text)
        if table:
            print(table, file=sys.stderr)
    else:
        with open(a.output, "w") as f:
            f.write(text + "\n")
        if table:
            print(table)
    return 0 if "pytorch" in res else 1


# ---- the self-test (no torch) -----------------------------------------

def _fr(fn, line, name):
    return {"filename": fn, "line": line, "name": name}


def self_test():
    MiB = 1 << 20
    V = 32000
    T = "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"
    TF = "/usr/lib/python3/dist-packages/transformers/"
    lin = _fr(T, 125, "forward")
    head = ["modeling_llama.py", 400, 470]
    L = 0x10000000          # a large segment (20 MiB)
    S = 0x20000000          # a small segment (2 MiB)
    W = 0x30000000          # cuBLAS's workspace segment (32 MiB)
    P = 0x40000000          # a CUDA graph pool's segment (20 MiB)
    A = 0x50000000          # activations (20 MiB)
    me = os.path.abspath(__file__)
    tr = []

    def ev(action, addr, size, frames=()):
        tr.append({"action": action, "addr": addr, "size": size,
                   "stream": 0, "frames": list(frames)})
    # before generate(): two parameters in one large segment; the second
    # takes the rest of it (971,264 bytes left: not split, > 512 rounding)
    ev("segment_alloc", L, 20 * MiB)
    ev("alloc", L, 4000000, [lin])                  # -> 4,000,256
    ev("alloc", L + 4000256, 16000000, [lin])       # -> 16,971,264
    ev("segment_alloc", S, 2 * MiB)
    ev("alloc", S, 4096, [_fr(me, 300, "measure")])  # the prompt's ids
    start = len(tr)
    # generate(): the static cache, a transient activation freed again
    ev("alloc", S + 4096, 1000, [_fr(TF + "cache_utils.py", 80, "lazy")])
    ev("segment_alloc", A, 20 * MiB)
    ev("alloc", A, 6 * MiB, [lin, _fr(TF + "models/llama/modeling_llama.py",
                                      150, "forward")])
    ev("free_requested", A, 6 * MiB)
    ev("free_completed", A, 6 * MiB)
    # the workspace (C++ frame), the head's logits, fp32 copy, sampling
    ev("segment_alloc", W, 32 * MiB)
    ev("alloc", W, 32 * MiB, [_fr("??", 0, "at::cuda::getNewWorkspace()"),
                              lin])
    ev("alloc", S + 5120, 2 * V * 8, [lin, _fr(
        TF + "models/llama/modeling_llama.py", 450, "forward")])
    ev("alloc", S + 5120 + 512000, 4 * V * 4, [_fr(
        TF + "generation/utils.py", 2700, "_sample")])
    ev("alloc", S + 5120 + 1024000, 300, [_fr(
        TF + "generation/utils.py", 2710, "_sample")])
    # an activation of 3 MiB + 100 in the freed 20 MiB block (split)
    ev("alloc", A, 3 * MiB + 100, [lin, _fr(
        TF + "models/llama/modeling_llama.py", 160, "forward")])
    # torch.compile: a CUDA graph pool's block and inductor's output
    ev("segment_alloc", P, 20 * MiB)
    ev("alloc", P, 2 * MiB, [_fr("/tmp/torchinductor_root/ab/cab.py", 9,
                                 "call")])
    ev("alloc", A + 3 * MiB + 512, 1 * MiB + 512, [_fr(
        "/tmp/torchinductor_root/cd/ccd.py", 40, "call"), _fr(
        "/usr/lib/python3/dist-packages/torch/_inductor/output_code.py",
        500, "__call__")])
    # something else, named by its top frame
    ev("alloc", S + 5120 + 1024512, 700, [_fr("/opt/x/foo.py", 7, "bar")])
    peak_index = len(tr) - 1
    # after the peak: frees, and an allocation smaller than them
    ev("free_requested", P, 2 * MiB)
    ev("free_completed", P, 2 * MiB)
    ev("free_requested", A, 3 * MiB + 100)
    ev("free_completed", A, 3 * MiB + 100)
    ev("alloc", A, 1000, [lin, _fr(TF + "models/llama/modeling_llama.py",
                                   160, "forward")])
    snap = {"segments": [{"device": 0, "address": P, "total_size": 20 * MiB,
                          "segment_pool_id": (1, 0), "blocks": []},
                         {"device": 0, "address": L, "total_size": 20 * MiB,
                          "segment_pool_id": (0, 0), "blocks": []}],
            "device_traces": [tr]}
    weights = 4000000 + 16000000
    expect = {
        "weights": weights, "kv_cache": 1000, "logits": 2 * V * 8,
        "logits_fp32": 4 * V * 4, "sampling": 300,
        "activations": 3 * MiB + 100, "workspace": 32 * MiB,
        "compile": 2 * MiB + 1 * MiB + 512, "other": 4096 + 700,
        "rounding": (256 + 971264) + 24 + (512 - 300) + 412 + (1024 - 700),
    }
    replayed = (4000256 + 16971264 + 4096 + 1024 + 32 * MiB + 512000 +
                512000 + 512 + (3 * MiB + 512) + 2 * MiB + (1 * MiB + 512) +
                1024)
    assert sum(expect.values()) == replayed, (sum(expect.values()), replayed)
    ctx = {"device": 0, "generate_start": start, "measured_peak": replayed,
           "max_entries": 10 ** 6, "vocab": V, "head": head,
           "weight_addrs": {L, L + 4000256}, "kv_addrs": set(),
           "buffer_addrs": set()}
    bd = breakdown(snap, ctx)
    t = bd["terms"]
    for k, v in expect.items():
        assert t[k] == v, (k, t[k], v)
    assert t["residual"] == 0 and bd["sum_bytes"] == replayed, bd
    assert bd["peak_event"]["index"] == peak_index, bd["peak_event"]
    assert bd["checks"]["mismatches"] == 0, bd["checks"]
    assert bd["reserved_at_peak_bytes"] == 94 * MiB, bd
    assert bd["reserved_free_bytes"] == 94 * MiB - replayed
    # a measured peak above the replay: the difference is the residual
    bd2 = breakdown(snap, dict(ctx, measured_peak=replayed + 4096))
    assert bd2["residual_bytes"] == 4096
    assert bd2["sum_bytes"] == replayed + 4096
    # no head lines: the logits found by their size
    bd3 = breakdown(snap, dict(ctx, head=None))
    assert bd3["terms"]["logits"] == 2 * V * 8, bd3["terms"]
    # a trace that began late: an unknown free, a block not in a segment
    late = [{"action": "free_requested", "addr": 1, "size": 10},
            {"action": "alloc", "addr": 0x90000000, "size": 1000,
             "frames": [lin]}]
    bd4 = breakdown({"segments": [], "device_traces": [late]},
                    {"measured_peak": 2048})
    assert bd4["checks"]["unknown_frees"] == 1
    assert bd4["checks"]["mismatches"] == 1
    assert bd4["terms"]["rounding"] == 24 and bd4["residual_bytes"] == 1024
    # merging: free two neighbours, the segment is one free block again
    sim = AllocatorSim()
    for i, e in enumerate([
            {"action": "segment_alloc", "addr": S, "size": 2 * MiB},
            {"action": "alloc", "addr": S, "size": 512},
            {"action": "alloc", "addr": S + 512, "size": 512},
            {"action": "free_requested", "addr": S + 512, "size": 512},
            {"action": "free_completed", "addr": S + 512, "size": 512},
            {"action": "free_requested", "addr": S, "size": 512},
            {"action": "free_completed", "addr": S, "size": 512}]):
        sim.apply(i, e)
    assert sim.segs[S]["blocks"] == {S: [2 * MiB, "free"]}, sim.segs[S]
    assert sim.allocated == 0 and sim.requested == 0
    # memplan's column sums to its predicted peak
    m = {"weights_bytes": 100, "kv_cache_bytes": 20,
         "predicted_peak_bytes": 200, "activations_bytes": 80,
         "peak_logits_fp32_bytes": 8, "peak_sampler_bytes": 16,
         "cuda_graphs_bytes": 0}
    mt = memplan_terms(m)
    assert sum(mt.values()) == 200 and mt["logits"] == 4, mt
    assert mt["activations"] == 80 - 4 - 8 - 16
    # the phases' fallback sums to the measured peak
    main_m = {"weights_bytes": 100, "allocated_before_generate_bytes": 104,
              "max_memory_allocated_bytes": 300, "static_cache_bytes": 20}
    phases = {"warmup_tiny_forward": {"peak_above_start_bytes": 50,
                                      "after_above_start_bytes": 30},
              "prefill_full_logits": {"peak_above_start_bytes": 90},
              "prefill_logits_to_keep_1": {"peak_above_start_bytes": 40},
              "generate_no_compile": {"peak_above_start_bytes": 120}}
    fb = fallback_terms(phases, main_m, 20)
    assert fb["sum_bytes"] == 300 and fb["terms"]["compile"] == 46, fb
    pc = phase_terms(phases, main_m, 20)
    assert pc["logits_all_prompt_tokens_bytes"] == 50
    assert pc["compile_by_difference_bytes"] == 196 - 120 - 30
    # the tables render, the rows sum as stated
    res = {"batch": 1, "prompt": 512, "gen": 64, "memplan": dict(
        m, weights_bytes=weights, predicted_peak_bytes=weights + 100),
        "pytorch": {"max_memory_allocated_bytes": replayed,
                    "static_cache_bytes": 1000, "breakdown": bd}}
    assemble(res)
    assert res["breakdown"]["sum_equals_measured_peak"]
    assert sum(r["pytorch_bytes"] for r in res["breakdown"]["rows"]
               if r.get("in_sum", True)) == replayed
    txt, md = table_text(res), table_markdown(res)
    assert "workspace" in txt and md.count("\n") == len(TERMS) + 3, md
    print(txt)
    print(md)
    print("self-test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
