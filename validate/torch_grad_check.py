#!/usr/bin/env python3
"""torch_grad_check.py - one training step run by memplan's executor,
checked against PyTorch, parameter by parameter (docs/validation.md,
"Gradients against PyTorch"). Runs on the GPU machine.

For each model: build it in PyTorch (nothing downloaded), export it to
ONNX in training mode (TorchScript exporter, opset 17, no constant
folding, BatchNorm in training mode; the export post-pass of
validate/train_reference.py: Dropout of ratio 0 -> Identity, initializer
data stripped), and write its real values in the folder format that
`memplan validate --dump` writes (values.txt + values.bin): every ONNX
initializer and Constant, and every tensor the ONNX graph computes from
them alone (a Linear's weight Transpose, the class token's Expand: memplan
folds those at load and holds no value for them), by name, as kind weight;
the graph inputs as kind input. Then

  memplan validate MODEL.onnx --train --optimizer sgd --precision P
      --weights V --inputs V --dump D --json [PLAN OPTIONS]

runs one SGD step (lr 0.01, validate/host.c) and dumps each parameter's
gradient (kind grad) and value after the step (weight_after). The same
step in PyTorch: loss = the sum of every element of the output (memplan's
Loss node: planner/train.c), loss.backward(), dropout off, BatchNorm in
training mode, computed in float64 (the reference), and in the step's own
precision for context (pt/S column: PyTorch's own error against the
float64 reference). The exported model's output is the model's times a
fixed random tensor (a buffer; weighted_output says why; --plain-sum:
the model's own). Per parameter:

  gradient   max|g_mp - g_ref| <= TOL x S
  update     max|w_mp - (w0 - lr g_ref)| <= TOL x lr x S
                                            + 2^-23 x max|w0|  (rounding)
  loss       |l_mp - l_ref| <= TOL x sum|output_ref|
with S = max(max|g_ref|, FLOOR x G), G the largest max|g_ref| of the
model's parameters and FLOOR 1e-3: a gradient that is zero in exact
arithmetic (a convolution's bias before BatchNorm: 1e-17 in float64)
is rounding noise of the size of the model's other gradients in any
float32 computation, PyTorch's own included (the pt/S column: PyTorch's
step in the same precision against the float64 one). A parameter also
passes when memplan's error is at most PT_FACTOR (4) x PyTorch's own:
an ill-conditioned gradient (BatchNorm over a channel that ReLU left
almost empty: resnet18 at batch 2 is 3% off in PyTorch's float32) is no
more exact in any float32 run. The vision models run at batch 8 (as the
reference set is measured), where resnet18's float32 gradients are
within 1e-5 of float64's.

TOL: fp32 1e-3, bf16-mixed 5e-2 (bf16 keeps 8 bits of mantissa: one
rounding is 2^-9 relative; the tolerance leaves room for a few dozen
layers of it). Plans, each a run of the command above:
  plain      the default plan (--save mincut, which recomputes some cheap
             forward values in backward already)
  poison     the same with --poison (freed blocks filled with 0xff): every
             gradient and updated value must be bit-identical to plain's
  recompute  --budget below the plain plan's peak, where the plan
             recomputes (validate's recompute_steps > 0)
  offload    --budget ... --offload --offload-solver greedy (offload only;
             validate's offload_steps > 0)
The budget is searched with `memplan plan --json` (no GPU): the plain
peak's persistent part plus a fraction (0.9, 0.8, ... 0.3) of its arena.
Every node must run a real kernel: a node lowered to the synthetic kernel
(`memplan validate --lower-only` lists them) computes no meaning, so the
model FAILS and the table names those nodes.

Models: cnn_bn (Conv-BN-ReLU x2, max pool, global average pool, Linear),
vit_block (patch Conv, LayerNorm, nn.MultiheadAttention, GELU MLP),
gpt_block (token and position Embedding, causal attention by hand, GELU
MLP, LM head) - built here, small; resnet18, vit_b_32, gpt2_medium - the
reference set (validate/train_reference.py's constructors; needs
torchvision and transformers).

Usage:
  python3 validate/torch_grad_check.py [--memplan build-bundle/memplan]
      [--models cnn_bn,vit_block,gpt_block,resnet18,vit_b_32,gpt2_medium]
      [--plans plain,poison,recompute,offload] [--precision fp32]
      [--batch 8] [--text-batch 2] [--image 224] [--seq 64] [--out DIR]
      [--keep] [--plain-sum]
      [--tol 1e-3] [--show N]
  python3 validate/torch_grad_check.py --self-test   (no numpy/torch)

Prints a table per model and plan, then ALL OK or FAILED. Exit status 0
when every check passes, 1 when one fails, 2 on a usage error or a
missing module (numpy, torch, onnx: imported only when needed).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

LR = 0.01            # the SGD step's learning rate (validate/host.c)
EPS32 = 2.0 ** -23   # float32's relative spacing
TOL = {"fp32": 1e-3, "32-true": 1e-3, "bf16-mixed": 5e-2, "bf16": 5e-2}
FLOOR = 1e-3         # of the model's largest gradient (see above)
PT_FACTOR = 4.0      # x PyTorch's own error in the same precision
SMALL = ["cnn_bn", "vit_block", "gpt_block"]
REFSET = ["resnet18", "vit_b_32", "gpt2_medium"]
MODELS = SMALL + REFSET
PLANS = ["plain", "poison", "recompute", "offload"]
BUDGET_FRACTIONS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
HERE = os.path.dirname(os.path.abspath(__file__))


class Missing(Exception):
    """A module the check needs is not installed."""


def need(name):
    """Imports a module, or raises Missing saying what to install."""
    try:
        return __import__(name, fromlist=["_"])
    except ImportError as e:
        raise Missing("%s is needed (%s): run this on the GPU machine, "
                      "where PyTorch, numpy and onnx are installed"
                      % (name, e))


def log(msg):
    sys.stderr.write("[torch_grad_check] %s\n" % msg)
    sys.stderr.flush()


# ------------------------------------------------ the values folder format

def index_line(kind, name, dtype, dims, off, nbytes):
    """One line of values.txt (validate/host.c mpv_dump_values)."""
    if "\t" in name or "\n" in name:
        raise ValueError("a tensor name with a tab or newline: %r" % name)
    return "%s\t%s\t%s\t%s\t%d\t%d\n" % (
        kind, name, dtype, ",".join(str(int(d)) for d in dims), off, nbytes)


def parse_index(text):
    """values.txt -> list of dicts kind, name, dtype, dims, off, bytes."""
    out = []
    for ln, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        f = line.split("\t")
        if len(f) != 6:
            raise ValueError("values.txt line %d: %d fields, want 6"
                             % (ln, len(f)))
        dims = [int(d) for d in f[3].split(",")] if f[3] else []
        out.append({"kind": f[0], "name": f[1], "dtype": f[2], "dims": dims,
                    "off": int(f[4]), "bytes": int(f[5])})
    return out


def write_values(folder, entries):
    """entries: (kind, name, dtype name, dims, raw bytes) -> DIR/values.*"""
    os.makedirs(folder, exist_ok=True)
    off = 0
    with open(os.path.join(folder, "values.txt"), "w") as ix, \
            open(os.path.join(folder, "values.bin"), "wb") as bin_:
        for kind, name, dtype, dims, raw in entries:
            ix.write(index_line(kind, name, dtype, dims, off, len(raw)))
            bin_.write(raw)
            off += len(raw)
    return off


def np_entry(kind, name, arr):
    """A numpy array as a values entry (little-endian, C order)."""
    np = need("numpy")
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    dtype = a.dtype.name
    if dtype not in ("float32", "float64", "float16", "int64", "int32",
                     "int16", "int8", "uint8", "uint16", "uint32", "uint64",
                     "bool"):
        return None
    return (kind, name, dtype, list(a.shape), a.tobytes())


def read_values(folder, kinds=("grad", "weight_after", "output")):
    """DIR/values.* -> {(kind, name): numpy array} (bfloat16 as float32)
    of the lines of these kinds."""
    np = need("numpy")
    with open(os.path.join(folder, "values.txt")) as f:
        idx = parse_index(f.read())
    out = {}
    path = os.path.join(folder, "values.bin")
    for e in idx:
        if kinds and e["kind"] not in kinds:
            continue
        if e["dtype"] == "bfloat16":
            raw = np.fromfile(path, dtype=np.uint16, count=e["bytes"] // 2,
                              offset=e["off"])
            a = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            dt = np.dtype(e["dtype"])
            a = np.fromfile(path, dtype=dt, count=e["bytes"] // dt.itemsize,
                            offset=e["off"])
        n = 1
        for d in e["dims"]:
            n *= d
        out[(e["kind"], e["name"])] = a.reshape(e["dims"]) if a.size == n \
            else a
    return out


# ------------------------------------------------ memplan's command

def validate_cmd(memplan, model, precision, vals, dump, plan_opts,
                 poison=False, lower_only=False):
    cmd = [memplan, "validate", model, "--train", "--optimizer", "sgd",
           "--precision", precision, "--weights", vals, "--inputs", vals]
    cmd += list(plan_opts)
    if lower_only:
        return cmd + ["--lower-only"]
    # FMA-only convolutions: the reference is float64 (TF32, the default,
    # rounds the operands to 10 mantissa bits)
    cmd += ["--dump", dump, "--json", "--conv-math", "fp32"]
    if poison:
        cmd.append("--poison")
    return cmd


def find_key(doc, key):
    """The first value of key anywhere in a JSON document, or None."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(doc, list):
        for v in doc:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


def parse_json_out(text):
    """The JSON object a command printed (None when there is none)."""
    i, j = text.find("{"), text.rfind("}")
    if i < 0 or j < i:
        return None
    try:
        return json.loads(text[i:j + 1])
    except ValueError:
        return None


def parse_synthetic(text):
    """--lower-only's lines "  synthetic  NAME (OP): WHY" -> list."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("synthetic "):
            continue
        s = s[len("synthetic "):].strip()
        head, _, why = s.partition("): ")
        name, _, op = head.rpartition(" (")
        out.append((name, op, why))
    return out


def budget_candidates(persistent, peak):
    """Budgets to try, largest first: persistent + f x arena."""
    arena = max(0, peak - persistent)
    return [persistent + int(f * arena) for f in BUDGET_FRACTIONS]


def plan_counts(kind, doc):
    """What a budgeted `memplan plan --json` did: recompute steps, or
    offloaded tensors."""
    if kind == "recompute":
        return int((doc.get("recompute") or {}).get("recompute_steps") or 0)
    return int((doc.get("offload") or {}).get("offloaded_tensors") or 0)


def run(cmd, timeout=3600):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def find_budget(args, onnx_path, kind):
    """Plan options under which the plan recomputes (kind recompute) or
    offloads (offload), found with `memplan plan` (no GPU); None with the
    reason when no fraction works."""
    base = [args.memplan, "plan", onnx_path, "--train", "--optimizer", "sgd",
            "--precision", args.precision, "--json"]
    rc, out, err, _ = run(base)
    doc = parse_json_out(out)
    if rc != 0 or not doc:
        return None, "memplan plan failed: %s" % err.strip()[-300:]
    peak, pers = doc.get("peak_bytes"), doc.get("persistent_bytes")
    extra = (["--offload", "--offload-solver", "greedy"]
             if kind == "offload" else [])
    for b in budget_candidates(pers, peak):
        opts = ["--budget", str(b)] + extra
        rc, out, err, _ = run(base + opts)
        d = parse_json_out(out)
        if rc == 0 and d and plan_counts(kind, d) > 0:
            return opts, None
    return None, ("no budget between %d and %d bytes gave a plan that %s"
                  % (budget_candidates(pers, peak)[-1], peak,
                     "recomputes" if kind == "recompute" else "offloads"))


# ------------------------------------------------ comparisons (pure)

def grad_scale(gmax, model_gmax, floor=FLOOR):
    """S: the parameter's max|g_ref|, at least FLOOR x the model's
    largest."""
    return max(gmax, floor * model_gmax)


def grad_ok(err, scale, tol, pt_err=0.0):
    """max|g_mp - g_ref| within tol x S (exactly zero when S is), or
    within PT_FACTOR x PyTorch's own error in the same precision."""
    if pt_err > 0 and err <= PT_FACTOR * pt_err:
        return True
    return err <= tol * scale if scale > 0 else err <= 1e-30


def update_ok(err, gscale, wscale, tol, lr=LR, pt_err=0.0):
    """The updated value within lr x the gradient's allowance (tol x S,
    or PT_FACTOR x PyTorch's own error), plus float32's rounding of the
    update."""
    return err <= lr * max(tol * gscale, PT_FACTOR * pt_err) + EPS32 * wscale


def fmt_row(cols, widths):
    return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                     for i, (c, w) in enumerate(zip(cols, widths)))


# ------------------------------------------------ models (torch)

def build_small(name, args, torch):
    nn = torch.nn
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    B = args.batch

    if name == "cnn_bn":
        class CNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
                self.bn1 = nn.BatchNorm2d(8)
                self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
                self.bn2 = nn.BatchNorm2d(16)
                self.fc = nn.Linear(16, 10)

            def forward(self, x):
                x = F.relu(self.bn1(self.conv1(x)))
                x = F.max_pool2d(x, 2)
                x = F.relu(self.bn2(self.conv2(x)))
                x = x.mean(dim=(2, 3))
                return self.fc(x)
        x = torch.randn(B, 3, 16, 16, generator=g)
        return CNN(), [x], ["x"]

    if name == "vit_block":
        class ViTBlock(nn.Module):
            def __init__(self, d=32, heads=4, patch=4, side=16):
                super().__init__()
                self.patch = nn.Conv2d(3, d, patch, stride=patch)
                n = (side // patch) ** 2
                self.pos = nn.Parameter(torch.randn(1, n, d, generator=g)
                                        * 0.02)
                self.ln1 = nn.LayerNorm(d)
                self.attn = nn.MultiheadAttention(d, heads, dropout=0.0,
                                                  batch_first=True)
                self.ln2 = nn.LayerNorm(d)
                self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                         nn.Linear(2 * d, d))
                self.ln3 = nn.LayerNorm(d)
                self.head = nn.Linear(d, 10)

            def forward(self, x):
                x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
                h = self.ln1(x)
                x = x + self.attn(h, h, h, need_weights=False)[0]
                x = x + self.mlp(self.ln2(x))
                return self.head(self.ln3(x).mean(dim=1))
        x = torch.randn(B, 3, 16, 16, generator=g)
        return ViTBlock(), [x], ["x"]

    if name == "gpt_block":
        class GPTBlock(nn.Module):
            def __init__(self, vocab=64, d=32, heads=4, t=16):
                super().__init__()
                self.heads = heads
                self.wte = nn.Embedding(vocab, d)
                self.wpe = nn.Embedding(t, d)
                self.ln1 = nn.LayerNorm(d)
                self.qkv = nn.Linear(d, 3 * d)
                self.proj = nn.Linear(d, d)
                self.ln2 = nn.LayerNorm(d)
                self.fc1 = nn.Linear(d, 4 * d)
                self.fc2 = nn.Linear(4 * d, d)
                self.lnf = nn.LayerNorm(d)
                self.lm = nn.Linear(d, vocab, bias=False)

            def forward(self, ids):
                b, t = ids.shape
                pos = torch.arange(t, device=ids.device)
                x = self.wte(ids) + self.wpe(pos)
                q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
                dh = x.shape[-1] // self.heads

                def heads(z):
                    return z.view(b, t, self.heads, dh).transpose(1, 2)
                q, k, v = heads(q), heads(k), heads(v)
                s = q @ k.transpose(-2, -1) / (dh ** 0.5)
                mask = torch.ones(t, t, dtype=torch.bool,
                                  device=ids.device).triu(1)
                s = s.masked_fill(mask, -1e4)
                a = torch.softmax(s, dim=-1) @ v
                a = a.transpose(1, 2).reshape(b, t, -1)
                x = x + self.proj(a)
                x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
                return self.lm(self.lnf(x))
        ids = torch.randint(0, 64, (B, 16), generator=g)
        return GPTBlock(), [ids], ["input_ids"]
    raise ValueError(name)


def build_model(name, args, torch):
    """-> (module, [inputs on the CPU], [input names])"""
    if name in SMALL:
        return build_small(name, args, torch)
    sys.path.insert(0, HERE)
    import train_reference as tr
    ns = argparse.Namespace(batch=args.batch, image=args.image,
                            text_batch=args.text_batch, seq=args.seq)
    model, family, _ = tr.build(name, ns)
    inputs = list(tr.make_inputs(name, family, ns, "cpu"))
    names = (["pixel_values"] if family == "vision" else
             ["input_ids", "decoder_input_ids"][:len(inputs)])
    return model, inputs, names


def weighted_output(model, inputs, torch):
    """The model with its output multiplied by a fixed random tensor R (a
    buffer: an ONNX initializer, not a parameter): memplan's loss, the sum
    of the output, is then sum(output x R). With sum(output) alone a
    BatchNorm network's gradient below its last BatchNorm is almost zero
    by cancellation (BatchNorm's backward removes what is constant per
    channel, and the sum's gradient through global pooling and the last
    Linear is), and float32's rounding is large against it in PyTorch's
    own step too (resnet18: 3% of the largest gradient)."""
    import copy
    with torch.no_grad():
        out = copy.deepcopy(model)(*inputs)
    g = torch.Generator().manual_seed(2)
    r = torch.randn(out.shape, generator=g)

    class Weighted(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m
            self.register_buffer("loss_weights", r)

        def forward(self, *xs):
            return self.m(*xs) * self.loss_weights
    return Weighted(model)


def distinct_parameters(model, torch):
    """Parameters whose elements are all equal (LayerNorm's ones, zero
    biases, ViT's class token) get noise: every parameter then has values
    of its own, so that an ONNX initializer can be matched with its
    parameter by value, and the check sees non-trivial normalization
    parameters."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() and bool((p == p.reshape(-1)[0]).all()):
                noise = torch.rand(p.shape, generator=g) * 0.5 - 0.25
                p.add_(noise.to(p.device, p.dtype))


# ------------------------------------------------ export and values (onnx)

def export(model, inputs, names, raw_path, opset, torch):
    """torch.onnx.export in training mode, as validate/train_reference.py
    exports the reference set: the TorchScript exporter without constant
    folding, the dynamo exporter where that fails (gpt2_medium:
    aten::diff). The trace runs the model: BatchNorm's running statistics
    are put back afterwards. Returns the exporter's name."""
    import copy
    import inspect
    import warnings
    state = copy.deepcopy(model.state_dict())
    model.train(True)
    params = inspect.signature(torch.onnx.export).parameters
    kw = dict(export_params=True, input_names=list(names),
              output_names=["output"], opset_version=opset,
              training=torch.onnx.TrainingMode.TRAINING,
              do_constant_folding=False, dynamo=False)
    kw = {k: v for k, v in kw.items() if k in params}
    used = "torchscript"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, tuple(inputs), raw_path, **kw)
    except Exception as e:
        if "dynamo" not in params:
            raise
        log("TorchScript export failed (%s); the dynamo exporter"
            % str(e)[:200])
        kw = dict(input_names=list(names), output_names=["output"],
                  opset_version=opset, dynamo=True, external_data=True)
        kw = {k: v for k, v in kw.items() if k in params}
        model.load_state_dict(state)
        model.train(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, tuple(inputs), raw_path, **kw)
        used = "dynamo"
    model.load_state_dict(state)
    model.train(True)
    return used


def static_shapes(stripped_path):
    """name -> static shape (list) from ONNX shape inference of the
    stripped model (dims only; no data needed)."""
    onnx = need("onnx")
    m = onnx.load(stripped_path, load_external_data=False)
    try:
        m = onnx.shape_inference.infer_shapes(m)
    except Exception as e:
        log("shape inference failed (%s): Shape nodes of activations "
            "stay unknown" % e)
    out = {}
    vis = list(m.graph.value_info) + list(m.graph.input) + \
        list(m.graph.output)
    for vi in vis:
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = []
        for d in t.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            else:
                dims = None
                break
        if dims is not None:
            out[vi.name] = dims
    for t in m.graph.initializer:
        out[t.name] = list(t.dims)
    return out


NOT_FOLDABLE = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                "RandomUniformLike", "Multinomial", "Bernoulli", "If", "Loop",
                "Scan", "Dropout", "BatchNormalization"}


def folded_values(raw_path, stripped_path):
    """Every value the ONNX graph holds or computes from initializers,
    Constants and static shapes alone: name -> numpy array. memplan folds
    these at load (a weight's Transpose, an Expand of the class token)
    and knows only the small ones' values, so --weights carries them."""
    np = need("numpy")
    onnx = need("onnx")
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    m = onnx.load(raw_path)
    shapes = static_shapes(stripped_path)
    known = {}
    for t in m.graph.initializer:
        known[t.name] = numpy_helper.to_array(t)
    opsets = list(m.opset_import)

    def elem(a):
        try:
            return helper.np_dtype_to_tensor_dtype(a.dtype)
        except AttributeError:
            from onnx import mapping
            return mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]

    failed = 0
    for n in m.graph.node:
        if n.domain not in ("", "ai.onnx") or n.op_type in NOT_FOLDABLE:
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH,
                          onnx.AttributeProto.GRAPHS) for a in n.attribute):
            continue
        ins = [x for x in n.input if x]
        if n.op_type in ("Shape", "Size") and ins and ins[0] in shapes:
            shp = shapes[ins[0]]
            if n.op_type == "Size":
                v = np.array(int(np.prod(shp)), dtype=np.int64)
            else:
                at = {a.name: a.i for a in n.attribute}
                r = len(shp)
                s, e = at.get("start", 0), at.get("end", r)
                s = max(0, s + r if s < 0 else s)
                e = min(r, e + r if e < 0 else e)
                v = np.array(shp[s:e], dtype=np.int64)
            known[n.output[0]] = v
            continue
        if not all(x in known for x in ins):
            continue
        feeds = {x: known[x] for x in ins}
        g = helper.make_graph(
            [n], "fold",
            [helper.make_tensor_value_info(x, elem(known[x]), None)
             for x in feeds],
            [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED,
                                           None) for o in n.output if o])
        try:
            model = helper.make_model(g, opset_imports=opsets)
            res = ReferenceEvaluator(model).run(None, feeds)
        except Exception as e:
            failed += 1
            if failed <= 5:
                log("cannot fold %s (%s): %s" % (n.name or n.output[0],
                                                 n.op_type, e))
            continue
        for o, v in zip([o for o in n.output if o], res):
            known[o] = np.asarray(v)
    return known


# ------------------------------------------------ the PyTorch step

def torch_step(model, inputs, dtype, device, torch, autocast=None):
    """One forward and backward: loss = sum of the output. Returns
    (loss, sum|output|, {param name: grad as float64 numpy})."""
    import copy
    m = copy.deepcopy(model).to(device)
    if dtype is not None:
        m = m.to(dtype)
    m.train(True)
    xs = [x.to(device) if not x.is_floating_point() or dtype is None
          else x.to(device, dtype) for x in inputs]
    if autocast:
        with torch.autocast("cuda", dtype=autocast):
            out = m(*xs)
            loss = out.float().sum()
    else:
        out = m(*xs)
        loss = out.sum()
    loss.backward()
    grads = {n: p.grad.detach().double().cpu().numpy()
             for n, p in m.named_parameters() if p.grad is not None}
    return (float(loss.detach().double().cpu()),
            float(out.detach().double().abs().sum().cpu()), grads)


# ------------------------------------------------ one model

def match_params(grad_names, params, inits):
    """ONNX initializer name -> (PyTorch parameter name, transposed): by
    name, else by value, else by the transposed value (an exporter that
    folds a Linear's weight Transpose into the initializer); every
    parameter's values are distinct (distinct_parameters)."""
    np = need("numpy")
    out = {}
    left = {n: v for n, v in params.items()}
    for g in grad_names:
        if g in left:
            out[g] = (g, False)
            del left[g]
    for transposed in (False, True):
        for g in grad_names:
            if g in out or g not in inits:
                continue
            a = inits[g]
            if transposed:
                if a.ndim != 2:
                    continue
                a = a.T
            for n, v in list(left.items()):
                if v.shape == a.shape and np.array_equal(v, a):
                    out[g] = (n, transposed)
                    del left[n]
                    break
    return out


class Result:
    def __init__(self):
        self.ok = True
        self.notes = []

    def fail(self, msg):
        self.ok = False
        self.notes.append("FAIL: " + msg)

    def note(self, msg):
        self.notes.append(msg)


def check_plan(args, name, plan, onnx_path, vals, work, plan_opts, ref,
               params0, inits, base_dump, res):
    """Runs one plan and compares it; returns its dump folder."""
    np = need("numpy")
    tol = args.tol if args.tol else TOL.get(args.precision, 1e-3)
    dump = os.path.join(work, "dump_" + plan)
    shutil.rmtree(dump, ignore_errors=True)
    cmd = validate_cmd(args.memplan, onnx_path, args.precision, vals, dump,
                       plan_opts, poison=(plan == "poison"))
    log("%s %s: %s" % (name, plan, " ".join(cmd)))
    rc, out, err, secs = run(cmd)
    doc = parse_json_out(out)
    if rc not in (0, 5) or doc is None:
        res.fail("%s: memplan validate exited %d: %s"
                 % (plan, rc, err.strip()[-600:]))
        return None
    if rc == 5:
        bad = [k for k, v in (find_key(doc, "checks") or {}).items()
               if v is False]
        res.fail("%s: memplan validate's own checks failed: %s"
                 % (plan, ", ".join(bad) or "?"))
    rs, os_ = find_key(doc, "recompute_steps"), find_key(doc, "offload_steps")
    syn = find_key(doc, "nodes_synthetic")
    print("\n== %s, plan %s (%s): %.1f s, recompute steps %s, offload "
          "steps %s, synthetic nodes %s (backward %s, optimizer %s)"
          % (name, plan, " ".join(plan_opts) or "default", secs, rs, os_,
             syn, find_key(doc, "backward_nodes_synthetic"),
             find_key(doc, "optimizer_nodes_synthetic")))
    if plan == "recompute" and not rs:
        res.fail("recompute: the plan recomputes nothing")
    if plan == "offload" and not os_:
        res.fail("offload: the plan offloads nothing")
    vals_mp = read_values(dump)
    loss_ref, abs_ref, g_ref, g_pt, loss_pt = ref
    # the loss
    lm = vals_mp.get(("output", "loss"))
    if lm is not None:
        lm = float(np.asarray(lm, dtype=np.float64).reshape(-1)[0])
        ok = abs(lm - loss_ref) <= tol * max(abs_ref, 1e-30)
        print("loss: memplan %.9g, float64 %.9g, PyTorch %s %.9g: %s"
              % (lm, loss_ref, args.precision, loss_pt,
                 "ok" if ok else "MISMATCH"))
        if not ok:
            res.fail("%s: loss %.9g, want %.9g" % (plan, lm, loss_ref))
    else:
        res.fail("%s: no loss in the dump" % plan)
    grads = {k[1]: v for k, v in vals_mp.items() if k[0] == "grad"}
    after = {k[1]: v for k, v in vals_mp.items() if k[0] == "weight_after"}
    mapping = match_params(list(grads), params0, inits)
    widths = (44, 16, 10, 10, 10, 10, 4)
    print(fmt_row(("parameter", "shape", "max|g|", "err/S", "pt/S",
                   "upd/lim", "ok"), widths))
    n_bad = 0
    rows = []
    model_gmax = max([float(np.abs(v).max()) for v in g_ref.values()
                      if v.size] or [0.0])
    for g, (pn, tr) in sorted(mapping.items(), key=lambda kv: kv[1]):
        if pn not in g_ref:
            continue
        gr, gm = g_ref[pn], np.asarray(grads[g], dtype=np.float64)
        if gm.size != gr.size:
            res.fail("%s: %s: memplan's gradient has %d elements, "
                     "PyTorch's %d" % (plan, pn, gm.size, gr.size))
            continue
        gm = gm.T.reshape(gr.shape) if tr else gm.reshape(gr.shape)
        gmax = float(np.abs(gr).max()) if gr.size else 0.0
        scale = grad_scale(gmax, model_gmax)
        err = float(np.abs(gm - gr).max()) if gr.size else 0.0
        pt_err = (float(np.abs(g_pt[pn] - gr).max())
                  if pn in g_pt and gr.size else 0.0)
        pt = pt_err / scale if scale > 0 else 0.0
        ok = grad_ok(err, scale, tol, pt_err)
        upd = "-"
        if g in after:
            w0 = params0[pn].astype(np.float64)
            wr = w0 - LR * gr
            wm = np.asarray(after[g], np.float64)
            wm = wm.T.reshape(gr.shape) if tr else wm.reshape(gr.shape)
            werr = float(np.abs(wm - wr).max())
            wscale = float(np.abs(w0).max())
            lim = LR * max(tol * scale, PT_FACTOR * pt_err) + EPS32 * wscale
            upd = "%.3g" % (werr / lim if lim > 0 else werr)
            if not update_ok(werr, scale, wscale, tol,
                             pt_err=pt_err):
                ok = False
        else:
            ok = False
            upd = "none"
        n_bad += not ok
        rows.append((ok, fmt_row((pn[-44:], "x".join(map(str, gr.shape)),
                                  "%.3g" % gmax,
                                  "%.3g" % (err / scale if scale else err),
                                  "%.3g" % pt, upd,
                                  "ok" if ok else "BAD"), widths)))
    shown = 0
    for ok, line in rows:
        if not ok or shown < args.show or args.show < 0:
            print(line)
            shown += ok
    if shown < sum(1 for ok, _ in rows if ok):
        print("  ... %d more parameters ok (--show N: how many ok rows to "
              "print)" % (sum(1 for ok, _ in rows if ok) - shown))
    missing = sorted(set(g_ref) - set(pn for pn, _ in mapping.values()))
    extra = sorted(set(grads) - set(mapping))
    if missing:
        res.fail("%s: %d PyTorch parameters have no gradient in memplan's "
                 "dump: %s" % (plan, len(missing), ", ".join(missing[:8])))
    if extra:
        res.note("%s: memplan trained %d tensors that are not PyTorch "
                 "parameters (float buffers or constants: not compared): %s"
                 % (plan, len(extra), ", ".join(extra[:8])))
    if n_bad:
        res.fail("%s: %d of %d parameters outside the tolerance %g"
                 % (plan, n_bad, len(rows), tol))
    print("%s %s: %d parameters compared, %d outside tolerance %g"
          % (name, plan, len(rows), n_bad, tol))
    # poison: bit-identical to plain
    if plan == "poison" and base_dump:
        base = read_values(base_dump)
        diff = [k[1] for k, v in vals_mp.items()
                if k[0] in ("grad", "weight_after", "output")
                and (k not in base or base[k].tobytes() != v.tobytes())]
        if diff:
            res.fail("poison: %d values differ from the plain plan's: %s"
                     % (len(diff), ", ".join(diff[:8])))
        else:
            print("poison: every gradient, updated weight and output "
                  "bit-identical to the plain plan's")
    return dump


def check_model(args, name):
    """Builds, exports and checks one model over the plans; a Result."""
    torch = need("torch")
    np = need("numpy")
    need("onnx")
    res = Result()
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model, inputs, names = build_model(name, args, torch)
    distinct_parameters(model, torch)
    if not args.plain_sum:
        model = weighted_output(model, inputs, torch)
    model.train(True)
    raw = os.path.join(work, "raw.onnx")
    onnx_path = os.path.join(work, name + ".train.onnx")
    log("%s: exporting" % name)
    exporter = export(model, inputs, names, raw, args.opset, torch)
    sys.path.insert(0, HERE)
    import train_reference as tr
    tr.strip_onnx(raw, onnx_path)
    res.note("exported by the %s exporter" % exporter)
    log("%s: values" % name)
    known = folded_values(raw, onnx_path)
    entries = [e for e in (np_entry("weight", k, v)
                           for k, v in known.items()) if e]
    for n, x in zip(names, inputs):
        entries.append(np_entry("input", n, x.numpy()))
    vals = os.path.join(work, "values")
    write_values(vals, entries)
    if not args.keep:
        for f in os.listdir(work):  # (the dynamo exporter's raw.onnx.data)
            if f.startswith("raw.onnx"):
                os.remove(os.path.join(work, f))
    params0 = {n: p.detach().cpu().numpy().copy()
               for n, p in model.named_parameters()}
    inits = {k: v for k, v in known.items() if hasattr(v, "shape")}
    # which nodes run the synthetic kernel
    rc, out, err, _ = run(validate_cmd(args.memplan, onnx_path,
                                       args.precision, vals, None, [],
                                       lower_only=True))
    if rc != 0:
        res.fail("memplan validate --lower-only exited %d: %s"
                 % (rc, err.strip()[-600:]))
        return res
    syn = parse_synthetic(out)
    print("\n==== %s (%s)" % (name, onnx_path))
    for line in out.splitlines():
        if not line.strip().startswith("synthetic "):
            print(line)
    if syn:
        res.fail("%d nodes run the synthetic kernel (no meaning computed)"
                 % len(syn))
        print("synthetic kernel (%d nodes):" % len(syn))
        for n, op, why in syn[:args.list_synthetic]:
            print("  %s (%s): %s" % (n, op, why))
        if len(syn) > args.list_synthetic:
            print("  ... %d more (memplan validate %s --train --optimizer "
                  "sgd --precision %s --lower-only)"
                  % (len(syn) - args.list_synthetic, onnx_path,
                     args.precision))
    # the PyTorch step: float64 reference, and the step's own precision
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    log("%s: PyTorch float64 step" % name)
    loss_ref, abs_ref, g_ref = torch_step(model, inputs, torch.float64, dev,
                                          torch)
    bf16 = args.precision.startswith("bf16")
    loss_pt, _, g_pt = torch_step(model, inputs, None, dev, torch,
                                  autocast=torch.bfloat16 if bf16 else None)
    ref = (loss_ref, abs_ref, g_ref, g_pt, loss_pt)
    base_dump = None
    for plan in args.plans:
        opts = []
        if plan in ("recompute", "offload"):
            opts, why = find_budget(args, onnx_path, plan)
            if opts is None:
                res.fail("%s: %s" % (plan, why))
                continue
        d = check_plan(args, name, plan, onnx_path, vals, work, opts, ref,
                       params0, inits, base_dump, res)
        if plan == "plain":
            base_dump = d
    return res


def self_test():
    """The pure-Python pieces (no numpy, torch or onnx needed)."""
    line = index_line("weight", "m.fc.weight", "float32", [10, 16], 0, 640)
    assert line == "weight\tm.fc.weight\tfloat32\t10,16\t0\t640\n", line
    assert index_line("input", "x", "int64", [], 640, 8) == \
        "input\tx\tint64\t\t640\t8\n"
    idx = parse_index(line + "grad\tb\tfloat32\t3\t640\t12\n\n")
    assert [e["name"] for e in idx] == ["m.fc.weight", "b"]
    assert idx[0]["dims"] == [10, 16] and idx[1]["off"] == 640
    assert parse_index("input\tx\tint64\t\t0\t8\n")[0]["dims"] == []
    try:
        parse_index("weight\tw\tfloat32\t0\t4\n")
        raise AssertionError("a line of five fields was accepted")
    except ValueError:
        pass
    try:
        index_line("weight", "a\tb", "float32", [1], 0, 4)
        raise AssertionError("a name with a tab was accepted")
    except ValueError:
        pass
    d = tempfile.mkdtemp(prefix="tgc_")
    try:
        n = write_values(d, [("weight", "w", "float32", [2], b"\0" * 8),
                             ("input", "x", "int64", [1], b"\1" * 8)])
        assert n == 16
        with open(os.path.join(d, "values.txt")) as f:
            idx = parse_index(f.read())
        assert [(e["kind"], e["off"], e["bytes"]) for e in idx] == \
            [("weight", 0, 8), ("input", 8, 8)]
        assert os.path.getsize(os.path.join(d, "values.bin")) == 16
    finally:
        shutil.rmtree(d)
    cmd = validate_cmd("mp", "m.onnx", "fp32", "V", "D", ["--budget", "9"],
                       poison=True)
    assert cmd == ["mp", "validate", "m.onnx", "--train", "--optimizer",
                   "sgd", "--precision", "fp32", "--weights", "V",
                   "--inputs", "V", "--budget", "9", "--dump", "D", "--json",
                   "--conv-math", "fp32", "--poison"], cmd
    lo = validate_cmd("mp", "m.onnx", "fp32", "V", None, [], lower_only=True)
    assert lo[-1] == "--lower-only" and "--dump" not in lo
    syn = parse_synthetic("3 nodes run: 1 real kernels, 2 synthetic\n"
                          "  synthetic  /m/ln/grad (LayerNormalizationGrad)"
                          ": backward: no kernel\n"
                          "  synthetic  a (b) c (Slice): Slice: starts\n")
    assert syn == [("/m/ln/grad", "LayerNormalizationGrad",
                    "backward: no kernel"),
                   ("a (b) c", "Slice", "Slice: starts")], syn
    doc = parse_json_out('memplan: note\n{"a": {"recompute_steps": 3}}\n')
    assert find_key(doc, "recompute_steps") == 3
    assert find_key(doc, "offload_steps") is None
    assert parse_json_out("no json") is None
    b = budget_candidates(100, 1100)
    assert b[0] == 1000 and b[-1] == 400 and b == sorted(b, reverse=True)
    assert plan_counts("recompute", {"recompute": {"recompute_steps": 4}}) \
        == 4
    assert plan_counts("offload", {"offload": {"offloaded_tensors": 2}}) == 2
    assert plan_counts("offload", {}) == 0
    assert grad_ok(1e-4, 1.0, 1e-3) and not grad_ok(2e-3, 1.0, 1e-3)
    assert grad_ok(0.0, 0.0, 1e-3) and not grad_ok(1e-6, 0.0, 1e-3)
    # a gradient zero in exact arithmetic: noise within the floor passes
    s = grad_scale(5e-17, 2.0)
    assert s == 2e-3 and grad_ok(4e-8, s, 1e-3)
    assert not grad_ok(4e-6, s, 1e-3)
    assert grad_scale(0.5, 2.0) == 0.5
    assert update_ok(1e-6, 1.0, 0.0, 1e-3)      # 1e-3 x 0.01 x 1
    assert not update_ok(2e-5, 1.0, 0.0, 1e-3)
    assert update_ok(2e-5, 1.0, 100.0, 1e-3)    # rounding of |w| 100
    # no further from float64 than 4x PyTorch's own float32 step
    assert grad_ok(3e-2, 1.0, 1e-3, pt_err=1e-2)
    assert not grad_ok(5e-2, 1.0, 1e-3, pt_err=1e-2)
    assert update_ok(3e-4, 1.0, 0.0, 1e-3, pt_err=1e-2)
    # the modules the check needs are imported lazily: a missing one is
    # a clear error, not an ImportError at start
    try:
        need("no_such_module_tgc")
        raise AssertionError("need() of a missing module passed")
    except Missing as e:
        assert "no_such_module_tgc is needed" in str(e)
    print("self-test: ok")
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="memplan's training step against PyTorch's gradients")
    ap.add_argument("--memplan", default="build-bundle/memplan",
                    help="the memplan command (memplan-validate beside it)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--plans", default=",".join(PLANS),
                    help="comma-separated subset of: " + ", ".join(PLANS))
    ap.add_argument("--precision", default="fp32",
                    help="memplan's --precision: fp32 or bf16-mixed")
    ap.add_argument("--tol", type=float, default=0,
                    help="relative tolerance (default fp32 1e-3, bf16-mixed "
                         "5e-2)")
    ap.add_argument("--batch", type=int, default=8,
                    help="batch of the image models (the small ones too)")
    ap.add_argument("--text-batch", type=int, default=2,
                    help="batch of the reference set's LMs")
    ap.add_argument("--image", type=int, default=224,
                    help="image side of the reference set's vision models")
    ap.add_argument("--seq", type=int, default=64,
                    help="text length of the reference set's LMs")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--out", default=None,
                    help="work folder (default: a temporary one, removed "
                         "unless --keep)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work folder (exports, values, dumps)")
    ap.add_argument("--show", type=int, default=12,
                    help="parameter rows printed per plan when they pass "
                         "(-1: all; failing rows always)")
    ap.add_argument("--list-synthetic", type=int, default=40,
                    help="synthetic nodes listed per model")
    ap.add_argument("--plain-sum", action="store_true",
                    help="the loss is the sum of the model's own output "
                         "(default: of the output times a fixed random "
                         "tensor; see weighted_output)")
    ap.add_argument("--self-test", action="store_true",
                    help="test the pure-Python pieces and exit")
    a = ap.parse_args(argv)
    a.models = [m for m in a.models.split(",") if m]
    a.plans = [p for p in a.plans.split(",") if p]
    for m in a.models:
        if m not in MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(MODELS)))
    for p in a.plans:
        if p not in PLANS:
            ap.error("unknown plan %r (known: %s)" % (p, ", ".join(PLANS)))
    if "poison" in a.plans and "plain" not in a.plans:
        ap.error("--plans poison compares with plain: give both")
    return a


def main(argv):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    if not os.path.exists(args.memplan):
        log("no memplan at %s (--memplan PATH)" % args.memplan)
        return 2
    args.memplan = os.path.abspath(args.memplan)
    tmp = None
    if not args.out:
        tmp = args.out = tempfile.mkdtemp(prefix="torch_grad_check_")
    os.makedirs(args.out, exist_ok=True)
    results = []
    try:
        for name in args.models:
            try:
                r = check_model(args, name)
            except Missing:
                raise
            except Exception as e:
                import traceback
                traceback.print_exc()
                r = Result()
                r.fail("%s: %s" % (type(e).__name__, e))
            results.append((name, r))
    except Missing as e:
        log(str(e))
        return 2
    finally:
        if tmp and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\n==== summary (precision %s, tolerance %g)"
          % (args.precision,
             args.tol or TOL.get(args.precision, 1e-3)))
    for name, r in results:
        print("%-12s %s" % (name, "ok" if r.ok else "FAILED"))
        for n in r.notes:
            print("    " + n)
    ok = all(r.ok for _, r in results)
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
