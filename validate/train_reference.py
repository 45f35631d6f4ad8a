#!/usr/bin/env python3
"""train_reference.py - the PyTorch reference set for memplan's training and
inference plans (docs/training.md, "PyTorch reference set").

Builds models from their configs (random weights, nothing downloaded),
exports each to ONNX with its weights dropped (dims kept), and measures
PyTorch's peak device memory for one training step and one inference pass,
eager and torch.compile. bench/train_vs_pytorch.py then plans the exports
with memplan and prints memplan's peaks over these.

Needs a CUDA GPU with torch, torchvision, transformers and onnx; nothing is
fetched from the network.

    python3 validate/train_reference.py --out OUT_DIR
        [--models resnet18,bert_base] [--modes fp32-sgd,fp32-adam,bf16-adam,inference]
        [--batch 8] [--text-batch 8] [--seq 128] [--image 224]
        [--backends eager,compile] [--skip-compile] [--quick]
        [--skip-export] [--export-only]
        [--opset 17] [--time-budget SECONDS]

Writes OUT_DIR/reference.json (merged with the rows already there: a row is
replaced only when it is measured again, so a run per model can be split
over several commands), OUT_DIR/NAME.train.onnx (training-mode export:
BatchNorm in training mode, Dropout of ratio 0 removed) and
OUT_DIR/NAME.infer.onnx (eval-mode export). Progress lines go to stderr;
the table to stdout at the end.

Models: resnet101, resnet18, mobilenet_v3_large, efficientnet_b0, swin_t,
vit_b_32 (torchvision, weights=None), bert_base (BertModel, BERT-base
config, no pooler; output last_hidden_state), gpt2_medium (GPT2LMHeadModel,
GPT-2-medium config; output logits), t5_small (T5ForConditionalGeneration,
t5-small config, decoder input = encoder input; output logits). Dropout
and stochastic depth are off (every probability 0; the exports' Dropout
nodes of ratio 0 become Identity); BatchNorm stays in training mode for
training.

Protocol (per model x mode x backend, "eager" or "compile" =
torch.compile(model) with default options):
  training modes  fp32-sgd   torch.optim.SGD(lr=1e-3), fp32
                  fp32-adam  torch.optim.Adam(lr=1e-4) (foreach, PyTorch's
                             default on CUDA), fp32
                  bf16-adam  Adam as above, forward and loss under
                             torch.autocast("cuda", dtype=torch.bfloat16);
                             fp32 weights, gradients and states
    step = forward, loss = output.sum(), loss.backward(), optimizer.step(),
           optimizer.zero_grad(set_to_none=True)
    one warm-up step (optimizer states exist, compilation done), then
    torch.cuda.synchronize(); before = memory_allocated();
    reset_peak_memory_stats(); one measured step; synchronize;
    peak = max_memory_allocated().
  inference       model.eval(), torch.no_grad(), fp32: one warm-up
                  forward, then the same measurement around one forward
                  (its output is held until the peak is read).
max_memory_allocated counts every live tensor of the caching allocator:
weights, gradients, optimizer states, inputs, activations, temporaries,
and cuBLAS's workspace (allocated through the caching allocator on the
first matmul and kept; the "baseline_bytes" - "weights_bytes" -
"input_bytes" difference shows it). It does not count the CUDA context or
the allocator's cached-but-free blocks.

JSON schema (reference.json):
{
  "schema": 1,
  "generator": "validate/train_reference.py",
  "env": {"torch", "torchvision", "transformers", "onnx", "cuda", "device",
          "python"},
  "args": {the command-line arguments of the last run},
  "models": {NAME: {
      "family": "vision" | "encoder" | "decoder" | "encoder-decoder",
      "batch", "seq" (null for images), "image" (null for text),
      "params": number of trainable parameters,
      "weights_bytes": their bytes (fp32),
      "buffers_bytes": bytes of buffers (BatchNorm statistics, ...),
      "input_bytes": bytes of the input tensors,
      "attn_implementation": HF config's attention implementation or null,
      "onnx_train", "onnx_infer": file names in OUT_DIR (null if no export),
      "export": {"train": {...}, "infer": {...}}: per export "exporter"
          ("torchscript" or "dynamo"), "opset", "constant_folding",
          "nodes", "initializers",
          "stripped" (initializers whose data was dropped),
          "dropout_removed", "seconds", "error" (null or the message),
          "torchscript_error" (why the dynamo fallback ran, if it did)
      }},
  "rows": [{
      "model", "mode" ("fp32-sgd" | "fp32-adam" | "bf16-adam" | "inference"),
      "optimizer" ("sgd" | "adam" | null), "precision" ("fp32" | "bf16"),
      "batch", "seq", "params", "weights_bytes",
      "onnx": the export this row is planned from (file name in OUT_DIR),
      "eager_peak_bytes", "eager_before_bytes", "eager_baseline_bytes",
      "eager_opt_state_bytes", "eager_step_ms",
      "compile_peak_bytes", "compile_before_bytes", "compile_baseline_bytes",
      "compile_opt_state_bytes", "compile_step_ms",
      "errors": {"eager": message, "compile": message} (only those that
          failed; a backend not run has null figures and no error)
      }]
}
"before" = memory_allocated() just before the measured step (weights,
optimizer states, inputs, cuBLAS workspace; gradients are None);
"baseline" = memory_allocated() after the model and inputs were built,
before any step; "opt_state" = bytes of the optimizer's CUDA state tensors.
"""
import argparse
import contextlib
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings

MODELS = ["resnet101", "resnet18", "mobilenet_v3_large", "efficientnet_b0",
          "swin_t", "vit_b_32", "bert_base", "gpt2_medium", "t5_small"]
VISION = {"resnet101", "resnet18", "mobilenet_v3_large", "efficientnet_b0",
          "swin_t", "vit_b_32"}
MODES = ["fp32-sgd", "fp32-adam", "bf16-adam", "inference"]
MODE_SPEC = {  # mode -> (optimizer, precision)
    "fp32-sgd": ("sgd", "fp32"),
    "fp32-adam": ("adam", "fp32"),
    "bf16-adam": ("adam", "bf16"),
    "inference": (None, "fp32"),
}
# memplan keeps the values of float tensors of at most this many elements
# and of integer tensors of at most MAX_INT_KEEP (docs/onnx.md, "Weights")
MAX_FLOAT_KEEP = 16
MAX_INT_KEEP = 16384
NO_DATA = "memplan-no-data"

T0 = time.time()


def log(msg):
    sys.stderr.write("[%7.1fs] %s\n" % (time.time() - T0, msg))
    sys.stderr.flush()


def short_error(e):
    s = "%s: %s" % (type(e).__name__, e)
    s = " ".join(s.split())
    return s if len(s) <= 600 else s[:600] + " ..."


# ---------------------------------------------------------------- models

def no_dropout(model):
    """Every dropout probability -> 0: nn.Dropout* and StochasticDepth
    modules' p, and the float rates attention modules keep for functional
    dropout. The modules stay (model code reads their p); eager PyTorch
    returns the input of a dropout of p 0 without a mask, and the ONNX
    post-pass turns the exporter's Dropout(ratio 0) nodes into Identity."""
    import torch.nn as nn
    for mod in model.modules():
        if isinstance(mod, nn.modules.dropout._DropoutNd) or (
                type(mod).__name__ == "StochasticDepth"
                and hasattr(mod, "p")):
            mod.p = 0.0
        for attr in ("dropout", "attention_dropout", "dropout_p",
                     "attn_dropout_p"):
            if isinstance(getattr(mod, attr, None), float):
                setattr(mod, attr, 0.0)
    return model


def build(name, args):
    """-> (module returning one tensor, family, config attn impl)."""
    import torch
    import torch.nn as nn

    class Out(nn.Module):
        def __init__(self, m, kind):
            super().__init__()
            self.m = m
            self.kind = kind

        def forward(self, *xs):
            if self.kind == "vision":
                return self.m(xs[0])
            if self.kind == "encoder-decoder":
                out = self.m(input_ids=xs[0], decoder_input_ids=xs[1],
                             use_cache=False)
            elif self.kind == "decoder":
                out = self.m(input_ids=xs[0], use_cache=False)
            else:
                out = self.m(input_ids=xs[0])
            if isinstance(out, torch.Tensor):
                return out
            for attr in ("logits", "last_hidden_state"):
                v = getattr(out, attr, None)
                if isinstance(v, torch.Tensor):
                    return v
            return out[0]

    if name in VISION:
        import torchvision
        # the builders' own dropout / stochastic-depth defaults; no_dropout
        # sets them to 0 (swin_t's builder fixes stochastic_depth_prob)
        m = getattr(torchvision.models, name)(weights=None)
        return Out(no_dropout(m), "vision"), "vision", None

    import transformers as tf
    if name == "bert_base":
        cfg = tf.BertConfig(vocab_size=30522, hidden_size=768,
                            num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, hidden_act="gelu",
                            hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0,
                            max_position_embeddings=512)
        m = tf.BertModel(cfg, add_pooling_layer=False)
        kind = "encoder"
    elif name == "gpt2_medium":
        cfg = tf.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=1024,
                            n_layer=24, n_head=16, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
        m = tf.GPT2LMHeadModel(cfg)
        kind = "decoder"
    elif name == "t5_small":
        cfg = tf.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048,
                          num_layers=6, num_decoder_layers=6, num_heads=8,
                          dropout_rate=0.0, feed_forward_proj="relu",
                          use_cache=False, pad_token_id=0,
                          decoder_start_token_id=0, eos_token_id=1)
        m = tf.T5ForConditionalGeneration(cfg)
        kind = "encoder-decoder"
    else:
        raise ValueError("unknown model %r (known: %s)"
                         % (name, ", ".join(MODELS)))
    attn = getattr(m.config, "_attn_implementation", None)
    return Out(no_dropout(m), kind), kind, attn


def make_inputs(name, family, args, device):
    import torch
    g = torch.Generator(device="cpu").manual_seed(0)
    if family == "vision":
        x = torch.randn(args.batch, 3, args.image, args.image, generator=g)
        return (x.to(device),)
    vocab = {"bert_base": 30522, "gpt2_medium": 50257,
             "t5_small": 32128}[name]
    ids = torch.randint(0, vocab, (args.text_batch, args.seq), generator=g)
    if family == "encoder-decoder":
        dec = torch.randint(0, vocab, (args.text_batch, args.seq),
                            generator=g)
        return (ids.to(device), dec.to(device))
    return (ids.to(device),)


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


# ---------------------------------------------------------------- export

def strip_onnx(path_in, path_out):
    """Drops the data of large initializers (dims and dtype kept, data
    marked EXTERNAL at memplan's no-data location), large Constant nodes
    become such initializers, Dropouts of constant ratio 0 become Identity.
    Returns (nodes, initializers, stripped, dropout_removed)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load(path_in, load_external_data=False)
    g = m.graph
    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16,
              TensorProto.DOUBLE}

    def numel(t):
        n = 1
        for d in t.dims:
            n *= d
        return n

    def elem_size(t):
        return {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2,
                TensorProto.BFLOAT16: 2, TensorProto.DOUBLE: 8,
                TensorProto.INT64: 8, TensorProto.INT32: 4,
                TensorProto.INT16: 2, TensorProto.INT8: 1,
                TensorProto.UINT8: 1, TensorProto.BOOL: 1,
                TensorProto.UINT16: 2, TensorProto.UINT32: 4,
                TensorProto.UINT64: 8}.get(t.data_type, 4)

    def big(t):
        n = numel(t)
        return n > (MAX_FLOAT_KEEP if t.data_type in floats else MAX_INT_KEEP)

    def drop(t):
        length = numel(t) * elem_size(t)
        for field in ("raw_data", "float_data", "double_data", "int32_data",
                      "int64_data", "uint64_data", "string_data"):
            t.ClearField(field)
        t.ClearField("external_data")
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key = "location"
        e.value = NO_DATA
        e = t.external_data.add()
        e.key = "length"
        e.value = str(length)

    # constant values small enough to read (Dropout ratios)
    consts = {}
    for t in g.initializer:
        if numel(t) == 1 and t.data_location != TensorProto.EXTERNAL:
            try:
                consts[t.name] = float(numpy_helper.to_array(t).reshape(-1)[0])
            except Exception:
                pass
    keep_nodes = []
    moved = 0
    for n in g.node:
        if n.op_type == "Constant" and len(n.output) == 1:
            val = [a for a in n.attribute if a.name == "value"]
            if val and val[0].t is not None:
                t = val[0].t
                if numel(t) == 1:
                    try:
                        consts[n.output[0]] = float(
                            numpy_helper.to_array(t).reshape(-1)[0])
                    except Exception:
                        pass
                if big(t):
                    nt = g.initializer.add()
                    nt.CopyFrom(t)
                    nt.name = n.output[0]
                    moved += 1
                    continue
        keep_nodes.append(n)
    used = set()
    for n in keep_nodes:
        used.update(n.input)
    used.update(o.name for o in g.output)
    out_nodes = []
    dropout_removed = 0
    for n in keep_nodes:
        if n.op_type == "Dropout":
            ratio = consts.get(n.input[1]) if len(n.input) > 1 and n.input[1] \
                else None
            if ratio is None:
                for a in n.attribute:  # opset < 12
                    if a.name == "ratio":
                        ratio = a.f
            mask_used = len(n.output) > 1 and n.output[1] in used
            if ratio == 0.0 and not mask_used:
                out_nodes.append(helper.make_node(
                    "Identity", [n.input[0]], [n.output[0]],
                    name=(n.name or n.output[0]) + "/no_dropout"))
                dropout_removed += 1
                continue
        out_nodes.append(n)
    # Constant nodes nothing reads any more (the removed Dropouts' ratio
    # and training_mode operands)
    used = set(o.name for o in g.output)
    for n in out_nodes:
        used.update(n.input)
    out_nodes = [n for n in out_nodes if n.op_type != "Constant"
                 or any(o in used for o in n.output)]
    del g.node[:]
    g.node.extend(out_nodes)
    stripped = 0
    for t in g.initializer:
        if big(t):
            drop(t)
            stripped += 1
    onnx.save(m, path_out)
    return len(g.node), len(g.initializer), stripped, dropout_removed


def export_one(model, inputs, input_names, path_out, training, args):
    """torch.onnx.export with the TorchScript exporter (dynamo=False), the
    dynamo exporter when that fails. Returns the export record."""
    import inspect
    import torch
    rec = {"exporter": None, "opset": args.opset, "error": None,
           "constant_folding": bool(args.constant_folding)}
    t0 = time.time()
    tm = getattr(torch.onnx, "TrainingMode", None)
    mode = None if tm is None else (tm.TRAINING if training else tm.EVAL)
    model.train(training)
    params = inspect.signature(torch.onnx.export).parameters
    tmp = tempfile.mkdtemp(prefix="mp_export_")
    try:
        raw = os.path.join(tmp, "model.onnx")
        kw = dict(export_params=True, input_names=list(input_names),
                  output_names=["output"], opset_version=args.opset,
                  training=mode,
                  do_constant_folding=bool(args.constant_folding))
        if mode is None:
            del kw["training"]
        if "dynamo" in params:
            kw["dynamo"] = False
        kw = {k: v for k, v in kw.items() if k in params}
        try:
            if getattr(args, "exporter", "auto") == "dynamo":
                raise RuntimeError("--exporter dynamo")
            # not under no_grad: nn.MultiheadAttention's inference fast
            # path (_native_multi_head_attention) has no ONNX export
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # one per node otherwise
                torch.onnx.export(model, tuple(inputs), raw, **kw)
            rec["exporter"] = "torchscript"
        except Exception as e:
            if ("dynamo" not in params or
                    getattr(args, "exporter", "auto") == "torchscript"):
                raise
            rec["torchscript_error"] = short_error(e)
            log("  torchscript export failed (%s); trying dynamo"
                % rec["torchscript_error"][:200])
            for f in os.listdir(tmp):
                os.remove(os.path.join(tmp, f))
            kw = dict(input_names=list(input_names), output_names=["output"],
                      opset_version=args.opset, dynamo=True,
                      external_data=True)
            kw = {k: v for k, v in kw.items() if k in params}
            model.train(training)  # torch.export traces the current mode
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, tuple(inputs), raw, **kw)
            rec["exporter"] = "dynamo"
        (rec["nodes"], rec["initializers"], rec["stripped"],
         rec["dropout_removed"]) = strip_onnx(raw, path_out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        model.train(True)
        if rec.get("exporter") == "dynamo" or "torchscript_error" in rec:
            # torch.export's caches keep the traced model (GPT-2's 1.4 GB
            # were still allocated when the next model was measured)
            import torch._dynamo
            torch._dynamo.reset()
    rec["seconds"] = round(time.time() - t0, 2)
    return rec


# ---------------------------------------------------------------- measure

def cleanup():
    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def measure(model, inputs, mode, backend):
    """One row's figures for one backend: dict of peak/before/... bytes."""
    import torch
    optimizer, precision = MODE_SPEC[mode]
    model.zero_grad(set_to_none=True)
    cleanup()
    baseline = torch.cuda.memory_allocated()
    fn = torch.compile(model) if backend == "compile" else model
    opt = None
    res = {}
    try:
        if optimizer is None:
            model.eval()

            def step():
                with torch.no_grad():
                    return fn(*inputs)
        else:
            model.train()
            params = [p for p in model.parameters() if p.requires_grad]
            if optimizer == "sgd":
                opt = torch.optim.SGD(params, lr=1e-3)
            else:
                opt = torch.optim.Adam(params, lr=1e-4)
            amp = (torch.autocast("cuda", dtype=torch.bfloat16)
                   if precision == "bf16" else contextlib.nullcontext())

            def step():
                with amp:
                    out = fn(*inputs)
                    loss = out.sum()
                del out
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss.detach()

        r = step()  # warm-up: compilation, optimizer states, cuBLAS
        del r
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.time()
        r = step()
        torch.cuda.synchronize()
        ms = (time.time() - t0) * 1e3
        peak = torch.cuda.max_memory_allocated()
        del r
        res["peak_bytes"] = int(peak)
        res["before_bytes"] = int(before)
        res["baseline_bytes"] = int(baseline)
        res["step_ms"] = round(ms, 3)
        st = 0
        if opt is not None:
            for s in opt.state.values():
                for v in s.values():
                    if torch.is_tensor(v) and v.is_cuda:
                        st += v.numel() * v.element_size()
        res["opt_state_bytes"] = int(st)
    finally:
        del opt
        del fn
        model.zero_grad(set_to_none=True)
        model.train()
        if backend == "compile":
            import torch._dynamo
            torch._dynamo.reset()
        cleanup()
    return res


# ---------------------------------------------------------------- output

def load_json(path):
    try:
        with open(path) as f:
            d = json.load(f)
        if isinstance(d, dict) and isinstance(d.get("rows"), list):
            return d
    except (OSError, ValueError):
        pass
    return {"schema": 1, "generator": "validate/train_reference.py",
            "env": {}, "args": {}, "models": {}, "rows": []}


def save_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def find_row(doc, model, mode):
    for r in doc["rows"]:
        if r.get("model") == model and r.get("mode") == mode:
            return r
    return None


def put_row(doc, row):
    rows = doc["rows"]
    for i, r in enumerate(rows):
        if r.get("model") == row["model"] and r.get("mode") == row["mode"]:
            rows[i] = row
            return
    rows.append(row)


def mib(b):
    return "-" if b is None else "%.1f" % (b / 1048576.0)


def print_table(doc, out=sys.stdout):
    out.write("%-20s %-10s %10s %10s %10s %10s  %s\n"
              % ("model", "mode", "weights", "eager", "compile", "before",
                 "errors"))
    for r in doc["rows"]:
        errs = "; ".join("%s: %s" % (k, v[:80])
                         for k, v in sorted((r.get("errors") or {}).items()))
        out.write("%-20s %-10s %10s %10s %10s %10s  %s\n"
                  % (r["model"], r["mode"], mib(r.get("weights_bytes")),
                     mib(r.get("eager_peak_bytes")),
                     mib(r.get("compile_peak_bytes")),
                     mib(r.get("eager_before_bytes")), errs))
    out.write("(MiB = 2^20 bytes; peaks = torch.cuda.max_memory_allocated "
              "of one measured step)\n")


# ---------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="PyTorch reference peaks and ONNX exports for memplan")
    ap.add_argument("--out", default="train_reference_out",
                    help="output folder (reference.json and the exports)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated subset of: " + ", ".join(MODES))
    ap.add_argument("--batch", type=int, default=8, help="image batch")
    ap.add_argument("--image", type=int, default=224, help="image side")
    ap.add_argument("--text-batch", type=int, default=8, help="text batch")
    ap.add_argument("--seq", type=int, default=128, help="text length")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--constant-folding", action="store_true",
                    help="export with do_constant_folding=True (default "
                         "False, as for training; with it a Linear's "
                         "weight Transpose is folded into the initializer)")
    ap.add_argument("--exporter", default="auto",
                    choices=["auto", "torchscript", "dynamo"],
                    help="torch.onnx exporter: auto (TorchScript, dynamo "
                         "where it fails), or only one of them")
    ap.add_argument("--quick", action="store_true",
                    help="batch 2 and sequence 32 (a smoke run)")
    ap.add_argument("--backends", default="eager,compile",
                    help="comma-separated subset of: eager, compile (a row "
                         "measured again keeps the other backend's figures)")
    ap.add_argument("--skip-compile", action="store_true",
                    help="eager only (same as --backends eager)")
    ap.add_argument("--skip-export", action="store_true",
                    help="measure only (keeps the exports already there)")
    ap.add_argument("--export-only", action="store_true",
                    help="export only, measure nothing (no GPU needed)")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="stop cleanly before starting work after this many "
                         "seconds (0: no limit)")
    # a dry run of the control flow on another device (figures meaningless)
    ap.add_argument("--device", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.quick:
        a.batch, a.text_batch, a.seq = 2, 2, 32
    a.models = [m for m in a.models.split(",") if m]
    a.backends = [b for b in a.backends.split(",") if b]
    if a.skip_compile:
        a.backends = [b for b in a.backends if b != "compile"]
    for b in a.backends:
        if b not in ("eager", "compile"):
            ap.error("unknown backend %r (known: eager, compile)" % b)
    a.modes = [m for m in a.modes.split(",") if m]
    for m in a.models:
        if m not in MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(MODELS)))
    for m in a.modes:
        if m not in MODES:
            ap.error("unknown mode %r (known: %s)" % (m, ", ".join(MODES)))
    return a


def env_info():
    import platform
    info = {"python": platform.python_version()}
    for mod in ("torch", "torchvision", "transformers", "onnx"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception as e:
            info[mod] = "unavailable: " + short_error(e)
    try:
        import torch
        info["cuda"] = torch.version.cuda
        info["device"] = (torch.cuda.get_device_name(0)
                          if torch.cuda.is_available() else "cpu")
    except Exception as e:
        info["device"] = "unavailable: " + short_error(e)
    return info


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "reference.json")
    doc = load_json(path)
    import torch
    if not torch.cuda.is_available() and not args.export_only:
        log("no CUDA device: nothing to measure (--export-only runs on "
            "the CPU)")
        return 3
    doc["env"] = env_info()
    doc["args"] = {k: v for k, v in vars(args).items()}
    save_json(path, doc)
    backends = args.backends
    dev = torch.device(args.device or
                       ("cuda" if torch.cuda.is_available() else "cpu"))
    stopped = False

    def over_budget():
        return args.time_budget > 0 and time.time() - T0 > args.time_budget

    for name in args.models:
        if over_budget():
            stopped = True
            break
        log("%s: building" % name)
        model = inputs = None
        try:
            torch.manual_seed(0)
            model, family, attn = build(name, args)
            model = model.to(dev)
            inputs = make_inputs(name, family, args, dev)
        except Exception as e:
            log("%s: build failed: %s" % (name, short_error(e)))
            traceback.print_exc(file=sys.stderr)
            doc["models"][name] = {"error": short_error(e)}
            save_json(path, doc)
            model = inputs = None
            cleanup()
            continue
        params = [p for p in model.parameters() if p.requires_grad]
        info = doc["models"].get(name) or {}
        info.pop("error", None)
        info.update({
            "family": family,
            "batch": args.batch if family == "vision" else args.text_batch,
            "seq": None if family == "vision" else args.seq,
            "image": args.image if family == "vision" else None,
            "params": sum(p.numel() for p in params),
            "weights_bytes": nbytes(params),
            "buffers_bytes": nbytes(list(model.buffers())),
            "input_bytes": nbytes(inputs),
            "attn_implementation": attn,
        })
        info.setdefault("export", {})
        names = (["pixel_values"] if family == "vision" else
                 ["input_ids", "decoder_input_ids"][:len(inputs)])
        if not args.skip_export:
            for kind, training in (("train", True), ("infer", False)):
                want = ("inference" in args.modes if kind == "infer" else
                        any(m != "inference" for m in args.modes))
                if not want and not args.export_only:
                    continue
                fname = "%s.%s.onnx" % (name, kind)
                log("%s: exporting %s" % (name, fname))
                try:
                    rec = export_one(model, inputs, names,
                                     os.path.join(args.out, fname),
                                     training, args)
                    info["onnx_" + kind] = fname
                    log("%s: %s by %s, %d nodes, %d initializers stripped, "
                        "%d dropouts removed, %.1fs"
                        % (name, fname, rec["exporter"], rec["nodes"],
                           rec["stripped"], rec["dropout_removed"],
                           rec["seconds"]))
                except Exception as e:
                    rec = {"exporter": None, "error": short_error(e)}
                    info["onnx_" + kind] = None
                    log("%s: export %s failed: %s" % (name, kind,
                                                      rec["error"]))
                    traceback.print_exc(file=sys.stderr)
                info["export"][kind] = rec
                cleanup()
        doc["models"][name] = info
        save_json(path, doc)
        if args.export_only:
            del model, inputs, params
            cleanup()
            continue
        for mode in args.modes:
            if over_budget():
                stopped = True
                break
            opt_name, prec = MODE_SPEC[mode]
            row = {"model": name, "mode": mode, "optimizer": opt_name,
                   "precision": prec, "batch": info["batch"],
                   "seq": info["seq"], "image": info["image"],
                   "params": info["params"],
                   "weights_bytes": info["weights_bytes"],
                   "onnx": info.get("onnx_infer" if mode == "inference"
                                    else "onnx_train")
                   or "%s.%s.onnx" % (name, "infer" if mode == "inference"
                                      else "train"),
                   "errors": {}}
            old = find_row(doc, name, mode)
            same = old is not None and all(
                old.get(k) == row[k] for k in ("batch", "seq", "image"))
            for b in ("eager", "compile"):
                keep = same and b not in backends
                for k in ("peak_bytes", "before_bytes", "baseline_bytes",
                          "opt_state_bytes", "step_ms"):
                    key = "%s_%s" % (b, k)
                    row[key] = old.get(key) if keep else None
                if keep and b in (old.get("errors") or {}):
                    row["errors"][b] = old["errors"][b]
            for backend in backends:
                if over_budget():
                    stopped = True
                    break
                log("%s %s %s: measuring" % (name, mode, backend))
                try:
                    res = measure(model, inputs, mode, backend)
                    for k, v in res.items():
                        row["%s_%s" % (backend, k)] = v
                    # memory allocated before the step that is not this
                    # model's (weights, buffers, inputs): left by an
                    # earlier model of the run; the peaks include it
                    own = (info["weights_bytes"] + info["buffers_bytes"] +
                           info["input_bytes"])
                    left = res["baseline_bytes"] - own
                    row["%s_residue_bytes" % backend] = max(0, int(left))
                    if left > 256 * 2**20:  # (cuBLAS workspaces: ~70 MiB)
                        log("%s %s %s: WARNING %.1f MiB allocated before "
                            "the model's own tensors (left by an earlier "
                            "model): the peak includes it; measure this "
                            "model alone (--models %s)"
                            % (name, mode, backend, left / 2**20, name))
                    log("%s %s %s: peak %.1f MiB (before the step %.1f MiB)"
                        % (name, mode, backend, res["peak_bytes"] / 2**20,
                           res["before_bytes"] / 2**20))
                except Exception as e:
                    row["errors"][backend] = short_error(e)
                    log("%s %s %s: failed: %s" % (name, mode, backend,
                                                  row["errors"][backend]))
                    traceback.print_exc(file=sys.stderr)
                # the exception's frames are gone here: their tensors can go
                try:
                    cleanup()
                except Exception as e:
                    log("cleanup failed: %s" % short_error(e))
                put_row(doc, row)
                save_json(path, doc)
            if stopped:
                break
        del model, inputs, params
        cleanup()
        if stopped:
            break
    if stopped:
        log("time budget of %.0f s reached: stopped; %s has what was "
            "measured" % (args.time_budget, path))
    doc["stopped_by_time_budget"] = stopped
    save_json(path, doc)
    print_table(doc)
    log("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
