#!/usr/bin/env python3
"""The table of docs/distributed.md: memplan's per-rank peak next to
DeepSpeed's ZeRO estimators and Megatron-LM's theoretical memory formula,
for GPT-2-, BERT- and Llama-shaped graphs (bench/gen_gpt.py) at a few
(dp, zero, pp, tp, sp) settings.

    python3 bench/distributed_table.py BUILD

The formulas, transcribed (docs/distributed.md names their source):
  DeepSpeed estimate_zero2_model_states_mem_needs (no offload):
      4 * P + int(16 * P / gpus)
  DeepSpeed estimate_zero3_model_states_mem_needs (no offload):
      4 * largest_layer_params + int(18 * P / gpus)
  Megatron-LM report_theoretical_memory (tp 1; sequence parallelism and
  selective recompute assumed by the formula):
      weights and optimizer: P_most_loaded_stage * (18, or 6 + 12 / dp
      with the distributed optimizer)
      activations: s*b*h*(18 + 4*ffn/h) * L   [first stage: all layers'
      formula * min(1, M / pp) in flight]
      + 8*s*b*pp + s*b*h*pp + (pp == 1: 4*s*b*h*(1 + V/h))
Standard library only; runs the memplan binary.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIGS = [
    # name, layers, hidden, heads, seq, ffn, vocab, micro-batch
    ('GPT-2 (124M)', 12, 768, 12, 1024, 3072, 50257, 1),
    ('BERT-base-shaped', 12, 768, 12, 512, 3072, 30522, 8),
    ('Llama-7B-shaped', 32, 4096, 32, 2048, 11008, 32000, 1),
]
SETTINGS = [
    # label, memplan options, (dp, zero, pp, M, tp)
    ('dp 8, ZeRO-0', ['--dp', '8', '--zero', '0'], (8, 0, 1, 1, 1)),
    ('dp 8, ZeRO-2', ['--dp', '8', '--zero', '2'], (8, 2, 1, 1, 1)),
    ('dp 8, ZeRO-3', ['--dp', '8', '--zero', '3'], (8, 3, 1, 1, 1)),
    ('pp 4, 1F1B, M 8', ['--pp', '4', '--microbatches', '8'], (1, 0, 4, 8, 1)),
    ('tp 2', ['--tp', '2'], (1, 0, 1, 1, 2)),
    ('tp 2, pp 2, 1F1B, M 4', ['--tp', '2', '--pp', '2', '--microbatches',
                               '4'], (1, 0, 2, 4, 2)),
    ('tp 2, sp', ['--tp', '2', '--sp'], (1, 0, 1, 1, 2)),
    ('tp 2, sp, pp 2, 1F1B, M 4', ['--tp', '2', '--sp', '--pp', '2',
                                   '--microbatches', '4'], (1, 0, 2, 4, 2)),
]
MIB = 1 << 20


def params(L, h, f, V, s):
    # the generated graph's parameters: per layer 4 h x h (+ bias),
    # fc and proj, 2 LayerNorms; embeddings, positions, ln_f, lm_head
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 4 * h
    largest = max(h * f, h * h)
    return L * layer + V * h + s * h + 2 * h + h * V, largest, layer


def megatron(L, h, s, f, V, b, dp, zero, pp, M, tp=1):
    # compute_weight_and_optimizer_memory: P of the most loaded stage
    # (layers / pp + one embedding), 18 bytes a parameter
    p_layers = 10 * L * h * h * ((1 + f / h) / 5.0 + 1 / 5.0 +
                                 2 / (5 * h) + 1 / (5 * L * h))
    shard = p_layers / pp + h * V
    if pp == 1:
        shard += h * V  # untied output layer
    shard /= tp  # the layers and the vocabulary-parallel embedding split
    per = 18 if zero == 0 else 6 + 12 / dp
    wo = shard * per
    act = s * b * h * (18 + 4 * f / h) * L
    act += 8 * s * b * pp + s * b * h * pp
    if pp > 1:
        act *= min(1, M / pp)
    else:
        act += s * b * h * 4 * (1 + V / h)
    # the formula assumes sequence parallelism: all of it split by tp
    return wo, act / tp


def gen_graph(tmp, L, h, n, s, f, V, b):
    # bench/gen_gpt.py's graph at one config, in tmp/g.json
    g = os.path.join(tmp, 'g.json')
    subprocess.run([sys.executable, os.path.join(HERE, 'gen_gpt.py'),
                    '--layers', str(L), '--hidden', str(h), '--heads', str(n),
                    '--seq', str(s), '--ffn', str(f), '--vocab', str(V),
                    '--batch', str(b), '-o', g], check=True)
    return g


def run(build, graph, opts):
    cmd = [os.path.join(build, 'memplan'), 'plan', graph, '--train',
           '--precision', 'bf16-mixed', '--optimizer-impl', 'fused',
           '--json'] + opts
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else 'build'
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, L, h, n, s, f, V, b in CONFIGS:
            g = gen_graph(tmp, L, h, n, s, f, V, b)
            P, largest, _ = params(L, h, f, V, s)
            for label, opts, (dp, zero, pp, M, tp) in SETTINGS:
                j = run(build, g, opts)
                worst = max(j['distinct_ranks'], key=lambda r: r['peak_bytes'])
                states = (worst['param_bytes'] + worst['grad_bytes'] +
                          worst['optimizer_bytes'])
                gpus = dp * pp * tp
                if tp > 1:
                    ds = None  # DeepSpeed's estimators are data-parallel
                elif zero == 3:
                    ds = 4 * largest + int(18 * P / gpus)
                elif zero in (1, 2):
                    ds = 4 * P + int(16 * P / gpus)
                else:
                    ds = None  # DeepSpeed has no estimator for DDP
                wo, act = megatron(L, h, s, f, V, b, dp, zero, pp, M, tp)
                rows.append((name, label, worst['stage'], worst['peak_bytes'],
                             states, worst['activation_bytes'],
                             worst['comm_bytes'], ds, wo, act))
    print('| model | setting | stage | memplan peak | memplan params+grads+optimizer '
          '| memplan activations | memplan comm | DeepSpeed estimate | '
          'Megatron weights+optimizer | Megatron activations |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        ds = '-' if r[7] is None else '%.0f' % (r[7] / MIB)
        print('| %s | %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %.0f | %.0f |'
              % (r[0], r[1], r[2], r[3] / MIB, r[4] / MIB, r[5] / MIB,
                 r[6] / MIB, ds, r[8] / MIB, r[9] / MIB))
    print('\n(MiB; memplan: the distinct rank with the highest peak, '
          'bf16-mixed, Adam fused, attention fused, eager saves)')


if __name__ == '__main__':
    main()
