#!/usr/bin/env python3
"""Writes a GPT-class transformer as memplan JSON (the per-rank plans'
benchmark and formula table, docs/distributed.md).

    python3 bench/gen_gpt.py [--layers 48] [--hidden 1600] [--heads 25]
        [--seq 1024] [--batch 1] [--ffn 4*hidden] [--vocab 50257]
        [--dtype float32] [-o FILE]

Token ids -> embedding (Gather) + positions -> LAYERS pre-LayerNorm blocks
(h.I.ln_1, attention: q, k, v projections with bias, heads split by
Reshape/Transpose, scores, scale, causal mask, Softmax, context, output
projection, residual; h.I.ln_2, MLP: fc, Gelu, proj, residual) -> ln_f ->
lm_head (its own weight). Defaults: GPT-2 XL's shape at 48 layers.
Python 3 standard library only.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--layers', type=int, default=48)
    ap.add_argument('--hidden', type=int, default=1600)
    ap.add_argument('--heads', type=int, default=25)
    ap.add_argument('--seq', type=int, default=1024)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--ffn', type=int, default=0)
    ap.add_argument('--vocab', type=int, default=50257)
    ap.add_argument('--dtype', default='float32')
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    b, s, h, n, L = a.batch, a.seq, a.hidden, a.heads, a.layers
    f, d, dt = a.ffn or 4 * h, h // n, a.dtype
    T, N = [], []

    def t(name, shape, kind='activation', dtype=dt):
        T.append({'name': name, 'dtype': dtype, 'shape': shape, 'kind': kind})
        return name

    def node(name, op, ins, outs, attrs=None):
        x = {'name': name, 'op': op, 'inputs': ins, 'outputs': outs}
        if attrs:
            x['attributes'] = attrs
        N.append(x)

    ids = t('input_ids', [b, s], 'input', 'int64')
    mask = t('causal_mask', [1, 1, s, s], 'constant')
    t('shape_bsnd', [4], 'constant', 'int64')
    t('shape_bsh', [3], 'constant', 'int64')
    t('scale', [], 'constant')
    node('wte', 'Gather', [t('wte.weight', [a.vocab, h], 'weight'), ids],
         [t('wte.out', [b, s, h])], {'axis': 0})
    node('embed/Add', 'Add', ['wte.out', t('wpe.weight', [s, h], 'weight')],
         [t('embed.out', [b, s, h])])
    x = 'embed.out'

    def linear(p, inp, k, m, shape):
        node(p + '/MatMul', 'MatMul', [inp, t(p + '.weight', [k, m], 'weight')],
             [t(p + '.mm', shape + [m])])
        node(p + '/Add', 'Add', [p + '.mm', t(p + '.bias', [m], 'weight')],
             [t(p + '.out', shape + [m])])
        return p + '.out'

    def ln(p, inp):
        node(p + '/LayerNormalization', 'LayerNormalization',
             [inp, t(p + '.weight', [h], 'weight'), t(p + '.bias', [h], 'weight')],
             [t(p + '.out', [b, s, h])], {'axis': -1, 'epsilon': 1e-5})
        return p + '.out'

    for i in range(L):
        p = 'h.%d' % i
        y = ln(p + '.ln_1', x)
        heads = {}
        for q, perm in (('q', [0, 2, 1, 3]), ('k', [0, 2, 3, 1]), ('v', [0, 2, 1, 3])):
            o = linear('%s.attn.%s' % (p, q), y, h, h, [b, s])
            node('%s.attn.%s/Reshape' % (p, q), 'Reshape', [o, 'shape_bsnd'],
                 [t('%s.attn.%s.split' % (p, q), [b, s, n, d])])
            sh = [b, n, d, s] if q == 'k' else [b, n, s, d]
            node('%s.attn.%s/Transpose' % (p, q), 'Transpose',
                 ['%s.attn.%s.split' % (p, q)], [t('%s.attn.%s.heads' % (p, q), sh)],
                 {'perm': perm})
            heads[q] = '%s.attn.%s.heads' % (p, q)
        a_ = p + '.attn'
        node(a_ + '/MatMul_QK', 'MatMul', [heads['q'], heads['k']], [t(a_ + '.scores', [b, n, s, s])])
        node(a_ + '/Mul', 'Mul', [a_ + '.scores', 'scale'], [t(a_ + '.scaled', [b, n, s, s])])
        node(a_ + '/Add_mask', 'Add', [a_ + '.scaled', mask], [t(a_ + '.masked', [b, n, s, s])])
        node(a_ + '/Softmax', 'Softmax', [a_ + '.masked'], [t(a_ + '.probs', [b, n, s, s])], {'axis': -1})
        node(a_ + '/MatMul_PV', 'MatMul', [a_ + '.probs', heads['v']], [t(a_ + '.context', [b, n, s, d])])
        node(a_ + '/Transpose', 'Transpose', [a_ + '.context'], [t(a_ + '.context_t', [b, s, n, d])],
             {'perm': [0, 2, 1, 3]})
        node(a_ + '/Reshape', 'Reshape', [a_ + '.context_t', 'shape_bsh'], [t(a_ + '.merged', [b, s, h])])
        o = linear(a_ + '.proj', a_ + '.merged', h, h, [b, s])
        node(p + '/Add_attn', 'Add', [o, x], [t(p + '.attn_res', [b, s, h])])
        y = ln(p + '.ln_2', p + '.attn_res')
        o = linear(p + '.mlp.fc', y, h, f, [b, s])
        node(p + '.mlp/Gelu', 'Gelu', [o], [t(p + '.mlp.gelu', [b, s, f])])
        o = linear(p + '.mlp.proj', p + '.mlp.gelu', f, h, [b, s])
        node(p + '/Add_mlp', 'Add', [o, p + '.attn_res'], [t(p + '.out', [b, s, h])])
        x = p + '.out'
    y = ln('ln_f', x)
    node('lm_head/MatMul', 'MatMul', [y, t('lm_head.weight', [h, a.vocab], 'weight')],
         [t('logits', [b, s, a.vocab], 'output')])
    g = {'format': 'memplan-graph', 'version': 1,
         'name': 'gpt-%dL-%dh' % (L, h), 'tensors': T, 'nodes': N,
         'outputs': ['logits']}
    out = open(a.output, 'w') if a.output else sys.stdout
    json.dump(g, out)
    out.write('\n')


if __name__ == '__main__':
    main()
