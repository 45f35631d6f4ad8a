#!/usr/bin/env python3
"""PyTorch's own memory of one training step of bench/gen_gpt.py's GPT
model over 2 GPUs, per rank, for issue 20's table beside memplan's
prediction (docs/distributed.md "Multi-GPU validation").

  torchrun --nproc-per-node 2 bench/torch_dist_mem.py --mode ddp -o out.json

Modes: ddp (DistributedDataParallel, bucket_cap_mb 25,
gradient_as_bucket_view=True: memplan's DDP), fsdp (FSDP2 fully_shard per
block, then the root: ZeRO-3), zero2 (the same with
reshard_after_forward=False: ZeRO-2), tp (tensor parallel over the 2 ranks:
attention q/k/v and fc column-wise, the projections row-wise), pp
(torch.distributed.pipelining, 2 stages cut after the first half of the
blocks, Schedule1F1B or ScheduleGPipe, --microbatches M), single (one GPU,
no parallelism: rank 0 only). bf16-mixed (fp32 weights, bf16 autocast),
Adam(fused=True), the same batch on every rank (as memplan's ranks).

Per rank: torch.cuda.max_memory_allocated and max_memory_reserved over the
measured step (the second: the first creates Adam's state), the step's
milliseconds (the mean of --steps after it), the loss; rank 0 writes the
JSON (-o) with every rank's row.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

MIB = 1 << 20


class Block(nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.ln_1 = nn.LayerNorm(h)
        self.q = nn.Linear(h, h)
        self.k = nn.Linear(h, h)
        self.v = nn.Linear(h, h)
        self.proj = nn.Linear(h, h)
        self.ln_2 = nn.LayerNorm(h)
        self.fc = nn.Linear(h, ffn)
        self.fc_proj = nn.Linear(ffn, h)
        self.head_dim = h // heads

    def forward(self, x):
        b, s, _ = x.shape
        y = self.ln_1(x)
        q, k, v = self.q(y), self.k(y), self.v(y)
        # heads from the (local, under tp) width
        nh = q.shape[-1] // self.head_dim

        def split(t):
            return t.view(b, s, nh, self.head_dim).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(q), split(k), split(v),
                                           is_causal=True)
        a = a.transpose(1, 2).reshape(b, s, nh * self.head_dim)
        x = x + self.proj(a)
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate='tanh'))


class GPT(nn.Module):
    def __init__(self, layers, h, heads, ffn, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Parameter(torch.randn(seq, h) * 0.02)
        self.h = nn.ModuleList(Block(h, heads, ffn) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


class Stage(nn.Module):
    """Blocks [lo, hi) of a GPT; the first stage embeds, the last has the
    head."""
    def __init__(self, full, lo, hi, first, last):
        super().__init__()
        self.first, self.last = first, last
        if first:
            self.wte, self.wpe = full.wte, full.wpe
        self.h = nn.ModuleList(full.h[lo:hi])
        if last:
            self.ln_f, self.lm_head = full.ln_f, full.lm_head

    def forward(self, x):
        if self.first:
            x = self.wte(x) + self.wpe
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x)) if self.last else x


def loss_fn(logits, target):
    return F.cross_entropy(logits.float().flatten(0, 1), target.flatten())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--mode', required=True,
                    choices=['ddp', 'zero2', 'fsdp', 'tp', 'pp', 'single'])
    ap.add_argument('--layers', type=int, default=12)
    ap.add_argument('--hidden', type=int, default=768)
    ap.add_argument('--heads', type=int, default=12)
    ap.add_argument('--ffn', type=int, default=0)
    ap.add_argument('--vocab', type=int, default=50257)
    ap.add_argument('--seq', type=int, default=1024)
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--microbatches', type=int, default=2)
    ap.add_argument('--schedule', default='1f1b', choices=['1f1b', 'gpipe'])
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    ffn = a.ffn or 4 * a.hidden
    single = a.mode == 'single'
    rank = int(os.environ.get('RANK', 0))
    world = int(os.environ.get('WORLD_SIZE', 1))
    local = int(os.environ.get('LOCAL_RANK', rank))
    dev = torch.device('cuda', local)
    torch.cuda.set_device(dev)
    if not single:
        os.environ.setdefault('NCCL_NVLS_ENABLE', '0')
        dist.init_process_group('nccl', device_id=dev)
    torch.manual_seed(0)
    model = GPT(a.layers, a.hidden, a.heads, ffn, a.vocab, a.seq).to(dev)
    g = torch.Generator(device='cpu').manual_seed(1)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(dev)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(dev)
    sched = None
    if a.mode == 'ddp':
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local], bucket_cap_mb=25,
            gradient_as_bucket_view=True)
    elif a.mode in ('fsdp', 'zero2'):
        # zero2: the parameters stay gathered after forward
        # (reshard_after_forward=False: ZeRO-2's memory, FSDP2's SHARD_GRAD_OP)
        from torch.distributed.fsdp import fully_shard
        re = a.mode == 'fsdp'
        for blk in model.h:
            fully_shard(blk, reshard_after_forward=re)
        fully_shard(model, reshard_after_forward=re)
    elif a.mode == 'tp':
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (
            ColwiseParallel, RowwiseParallel, parallelize_module)
        mesh = init_device_mesh('cuda', (world,))
        for blk in model.h:
            parallelize_module(blk, mesh, {
                'q': ColwiseParallel(), 'k': ColwiseParallel(),
                'v': ColwiseParallel(), 'proj': RowwiseParallel(),
                'fc': ColwiseParallel(), 'fc_proj': RowwiseParallel()})
    elif a.mode == 'pp':
        from torch.distributed.pipelining import (
            PipelineStage, Schedule1F1B, ScheduleGPipe)
        half = a.layers // 2
        lo, hi = (0, half) if rank == 0 else (half, a.layers)
        model = Stage(model, lo, hi, rank == 0, rank == world - 1).to(dev)
        torch.cuda.empty_cache()
        stage = PipelineStage(model, rank, world, dev)
        cls = Schedule1F1B if a.schedule == '1f1b' else ScheduleGPipe
        sched = cls(stage, n_microbatches=a.microbatches, loss_fn=loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cuda', dtype=torch.bfloat16):
            if sched is None:
                loss = loss_fn(model(ids), tgt)
                loss.backward()
            else:
                # the batch is one micro-batch (memplan's --pp): M of them
                xs = ids.repeat(a.microbatches, 1)
                ys = tgt.repeat(a.microbatches, 1)
                losses = []
                if rank == 0:
                    sched.step(xs)
                    loss = torch.zeros((), device=dev)
                else:
                    sched.step(target=ys, losses=losses)
                    loss = torch.stack(losses).mean()
        opt.step()
        return loss

    step()  # Adam's state created
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    loss = step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    reserved = torch.cuda.max_memory_reserved()
    t0 = time.time()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    ms = (time.time() - t0) * 1e3 / max(a.steps, 1)
    row = {'rank': rank, 'peak_allocated_bytes': peak,
           'peak_reserved_bytes': reserved,
           'peak_allocated_mib': round(peak / MIB, 1),
           'peak_reserved_mib': round(reserved / MIB, 1),
           'step_ms': round(ms, 2), 'loss': float(loss)}
    rows = [row]
    if not single:
        rows = [None] * world
        dist.all_gather_object(rows, row)
    if rank == 0:
        out = {'mode': a.mode, 'world': 1 if single else world,
               'config': vars(a), 'torch': torch.__version__,
               'nccl': '.'.join(map(str, torch.cuda.nccl.version())),
               'ranks': rows}
        text = json.dumps(out, indent=1)
        if a.output:
            with open(a.output, 'w') as f:
                f.write(text + '\n')
        print(text)
    if not single:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == '__main__':
    main()
