#!/usr/bin/env python3
"""Issue 19's measured target: every setting of docs/distributed.md's
table (bench/distributed_table.py's configs and settings), each distinct
rank's plan run on one GPU with `memplan validate --rank R` (collectives
as local copies of the same buffers), measured device memory against the
prediction.

    python3 bench/distributed_validate.py --memplan PATH [--models A,B]
        [--json OUT] [--markdown] [--no-reference-over MIB]

For a data-parallel setting every rank runs the same graph: rank 0 is
run. For a pipeline setting each stage is distinct: one rank per stage.
Standard library only; needs a GPU (memplan-validate beside memplan).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from distributed_table import CONFIGS, SETTINGS, gen_graph  # noqa: E402

MIB = 1 << 20
COMMON = ['--train', '--precision', 'bf16-mixed', '--optimizer-impl',
          'fused']


def ranks_of(dp, pp, tp):
    # one rank per distinct graph: stage s's first rank is s * dp * tp
    # (ranks numbered tp fastest, then dp, then pp)
    return [s * dp * tp for s in range(pp)]


def validate(memplan, graph, opts, rank, no_ref, timeout):
    cmd = [memplan, 'validate', graph, '--json', '--rank', str(rank)] + \
        COMMON + opts + (['--no-reference'] if no_ref else [])
    t0 = time.time()
    row = {'command': ' '.join(cmd[1:]), 'rank': rank}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        row['error'] = 'past %d s' % timeout
        return row
    row['seconds'] = round(time.time() - t0, 1)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        row['error'] = 'exit %d: %s' % (p.returncode, p.stderr.strip()[-300:])
        return row
    par = d.get('parallel') or {}
    pred = d.get('predicted') or {}
    meas = d.get('measured') or {}
    row.update({
        'stage': par.get('stage'),
        'collectives': par.get('collectives'),
        'plan_peak_bytes': par.get('peak_bytes'),
        'predicted_total_bytes': pred.get('total_device_bytes'),
        'measured_total_bytes': meas.get('peak_bytes'),
        'predicted_arena_bytes': pred.get('arena_device_bytes'),
        'measured_arena_bytes': meas.get('arena_bytes'),
        'ratio_total': d.get('ratio_total'),
        'ratio_arena': d.get('ratio_arena'),
        'synthetic': d.get('nodes_synthetic'),
        'real': d.get('nodes_real_kernel'),
        'checks': d.get('checks'),
        'all': (d.get('checks') or {}).get('all'),
        'step_ms': meas.get('planned_ms'),
    })
    if p.returncode not in (0, 5):
        row['error'] = 'exit %d: %s' % (p.returncode, p.stderr.strip()[-300:])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--memplan', required=True)
    ap.add_argument('--models', default='',
                    help='comma-separated name prefixes (default: all)')
    ap.add_argument('--settings', default='',
                    help='semicolon-separated setting labels (default: all)')
    ap.add_argument('--json')
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('--no-reference-over', type=float, default=40000,
                    help='skip the reference run (one allocation per '
                         'tensor) above this plan peak in MiB')
    ap.add_argument('--timeout', type=int, default=300)
    a = ap.parse_args()
    want = [m for m in a.models.split(',') if m]
    settings = [x for x in a.settings.split(';') if x]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, L, h, n, s, f, V, b in CONFIGS:
            if want and not any(name.startswith(w) for w in want):
                continue
            g = gen_graph(tmp, L, h, n, s, f, V, b)
            for label, opts, (dp, zero, pp, M, tp) in SETTINGS:
                if settings and label not in settings:
                    continue
                # the plan's peak, to choose whether to run the reference
                p = subprocess.run([a.memplan, 'plan', g, '--json'] + COMMON +
                                   opts, capture_output=True, text=True)
                peaks = {r['first_rank']: r['peak_bytes'] for r in
                         json.loads(p.stdout)['distinct_ranks']}
                for r in ranks_of(dp, pp, tp):
                    no_ref = peaks.get(r, 0) / MIB > a.no_reference_over
                    row = validate(a.memplan, g, opts, r, no_ref, a.timeout)
                    row.update({'model': name, 'setting': label,
                                'reference': not no_ref})
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    if a.json:
                        with open(a.json, 'w') as fh:
                            json.dump(rows, fh, indent=1)
    if a.markdown:
        print('| model | setting | rank | stage | collectives | predicted '
              'MiB | measured MiB | measured/predicted | arena ratio | '
              'checks | step ms |')
        print('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|')
        for r in rows:
            if r.get('error'):
                print('| %s | %s | %d | - | - | - | - | - | - | %s | - |'
                      % (r['model'], r['setting'], r['rank'], r['error']))
                continue
            fm = lambda x: '%.1f' % (x / MIB) if x else '-'
            ok = 'all pass' if r['all'] else 'failed: ' + ', '.join(
                k for k, v in (r['checks'] or {}).items() if v is False)
            if not r['reference']:
                ok += ' (no reference run)'
            print('| %s | %s | %d | %s | %s | %s | %s | %.4f | %.4f | %s | '
                  '%.1f |' % (r['model'], r['setting'], r['rank'], r['stage'],
                              r['collectives'], fm(r['predicted_total_bytes']),
                              fm(r['measured_total_bytes']),
                              r['ratio_total'] or 0, r['ratio_arena'] or 0,
                              ok, r['step_ms'] or 0))
    bad = [r for r in rows if r.get('error') or not r.get('all') or
           abs((r.get('ratio_total') or 0) - 1) > 0.01]
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
