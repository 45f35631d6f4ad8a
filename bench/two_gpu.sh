#!/bin/sh
# bench/two_gpu.sh - issue 20's table on a 2-GPU machine, in one call:
# every rank's plan run with real NCCL collectives (memplan validate
# --ranks 2) for DDP, ZeRO-2, ZeRO-3, PP=2 1F1B, TP=2 and TP=2 with
# sequence parallelism (--tp 2 --sp: the tensor-parallel collectives on
# their own communicator), PyTorch's own peak for the same settings
# (torchrun, bench/torch_dist_mem.py; none for TP=2 with sp), and the
# one-GPU run of the unsplit graph (its weights after the step against
# the DDP/ZeRO ranks'). Builds nothing.
#
#   sh bench/two_gpu.sh [BUNDLE]     BUNDLE: build-bundle (memplan,
#                                    memplan-validate, lib/)
#
# Writes $OUT (default /tmp/two_gpu-out): table.md, summary.json and
# two_gpu.tgz (every command's JSON and stderr). Needs: 2 GPUs, python3
# with torch (its nvidia-nccl wheel is the NCCL memplan loads:
# bench/find-nccl.sh). Env: MODEL_LAYERS, MODEL_BATCH, MODEL_SEQ (12,
# 2, 1024: GPT-2 small's shape), STEP_TIMEOUT (seconds per command, 150).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:-build-bundle}" && pwd)
out=${OUT:-/tmp/two_gpu-out}
work=$(mktemp -d /tmp/two_gpu.XXXXXX)
mkdir -p "$out"
M="$bundle/memplan"
L=${MODEL_LAYERS:-12}; B=${MODEL_BATCH:-2}; S=${MODEL_SEQ:-1024}
T=${STEP_TIMEOUT:-150}
export NCCL_NVLS_ENABLE=0
MEMPLAN_NCCL=$(sh "$here/find-nccl.sh") || { echo "two_gpu: no NCCL" >&2; exit 1; }
export MEMPLAN_NCCL
mlib="$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L > "$work/gpus.txt" 2>&1
echo "NCCL: $MEMPLAN_NCCL" >> "$work/gpus.txt"
python3 "$here/gen_gpt.py" --layers "$L" --hidden 768 --heads 12 --seq "$S" \
  --batch "$B" --vocab 50257 -o "$work/gpt.json"
C="--train --precision bf16-mixed --optimizer-impl fused"
# the pipeline cut between two blocks: one tensor crosses each way (a cut
# inside a block sends two, in an order the receiving stage's schedule
# does not keep: validate --ranks refuses it as a deadlock)
cut="h.$((L / 2 - 1))/Add_mlp"

mp() { # name, options...: memplan validate --ranks 2 --json
  name=$1; shift
  echo "== memplan $name: $*" >&2
  LD_LIBRARY_PATH="$mlib" timeout "$T" "$M" validate "$work/gpt.json" $C "$@" \
    --json > "$work/memplan-$name.json" 2> "$work/memplan-$name.err"
  echo "exit $?" >> "$work/memplan-$name.err"
}
pt() { # name, mode, options...: torchrun over 2 GPUs
  name=$1; mode=$2; shift 2
  echo "== torch $name ($mode)" >&2
  n=2; [ "$mode" = single ] && n=1
  timeout "$T" torchrun --standalone --nproc-per-node "$n" \
    "$here/torch_dist_mem.py" --mode "$mode" --layers "$L" --seq "$S" \
    --batch "$B" -o "$work/torch-$name.json" "$@" \
    > "$work/torch-$name.out" 2> "$work/torch-$name.err"
  echo "exit $?" >> "$work/torch-$name.err"
}

keep_cvd=${CUDA_VISIBLE_DEVICES-unset}
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES%%,*}
mp single
if [ "$keep_cvd" = unset ]; then unset CUDA_VISIBLE_DEVICES
else export CUDA_VISIBLE_DEVICES="$keep_cvd"; fi
mp ddp --dp 2 --ranks 2
mp zero2 --dp 2 --zero 2 --ranks 2
mp zero3 --dp 2 --zero 3 --ranks 2
mp pp --pp 2 --schedule 1f1b --microbatches 2 --pp-cuts "$cut" --ranks 2
mp tp --tp 2 --ranks 2
mp tpsp --tp 2 --sp --ranks 2
pt single single
pt ddp ddp
pt zero2 zero2
pt zero3 fsdp
pt pp pp --schedule 1f1b --microbatches 2
pt tp tp

python3 - "$work" "$out" "$L" "$B" "$S" <<'PY'
import json, os, sys
work, out, L, B, S = sys.argv[1:6]
MIB = 1 << 20
def load(name):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
single = load('memplan-single.json') or {}
h1 = (single.get('measured') or {}).get('weights_after_hash')
rows, summary = [], {'model': 'gpt %sx768, seq %s, batch %s' % (L, S, B),
                     'single_gpu_weights_after_hash': h1, 'settings': []}
for name, label in [('ddp', 'DDP'), ('zero2', 'ZeRO-2'), ('zero3', 'ZeRO-3 / FSDP'),
                    ('pp', 'PP=2, 1F1B, M 2'), ('tp', 'TP=2'),
                    ('tpsp', 'TP=2, SP')]:
    m, t = load('memplan-%s.json' % name), load('torch-%s.json' % name)
    if m is None and t is None:
        continue
    s = {'setting': label, 'memplan': m, 'torch': t}
    summary['settings'].append(s)
    tr = {r['rank']: r for r in (t or {}).get('ranks', [])}
    mr = (m or {}).get('ranks') or []
    if not mr:
        err = open(os.path.join(work, 'memplan-%s.err' % name)).read().strip()[-200:]
        rows.append('| %s | - | - | - | - | - | - | - | %s | %s |' % (
            label, (tr.get(0) or {}).get('peak_allocated_mib', '-'), 'memplan: ' + err.replace('|', '/').replace('\n', ' ')))
        continue
    for r in mr:
        p = tr.get(r['rank']) or {}
        same = ''
        if name in ('ddp', 'zero2') and h1:
            same = 'weights = 1 GPU' if r.get('weights_after_hash') == h1 else 'weights != 1 GPU'
        checks = 'all pass' if r.get('all_ok') else ('FAIL: ' + r.get('error', 'a check'))
        rows.append('| %s | %d | %d | %.1f | %.1f | %.4f | %.1f | %s | %.2f | %s | %s / %s | %s%s |' % (
            label, r['rank'], r['stage'],
            r.get('total_device_bytes', 0) / MIB, r.get('peak_bytes', 0) / MIB,
            r.get('ratio_total', 0), r.get('nccl_bytes', 0) / MIB,
            '%.2f' % r['predicted_ms'] if 'predicted_ms' in r else '-',
            r.get('planned_ms', 0), '%.7g' % r.get('loss', 0),
            p.get('peak_allocated_mib', '-'), p.get('peak_reserved_mib', '-'),
            checks, (', ' + same) if same else ''))
    if m:
        s['losses_agree'] = m.get('losses_agree')
        s['weights_agree'] = m.get('weights_agree')
        if 'tp_losses_agree' in m:
            s['tp_losses_agree'] = m.get('tp_losses_agree')
hdr = ('| setting | rank | stage | predicted MiB | measured MiB | measured/predicted '
       '| NCCL MiB | predicted step ms | measured step ms | loss '
       '| PyTorch peak allocated / reserved MiB | checks |\n'
       '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
tail = []
for s in summary['settings']:
    m = s['memplan'] or {}
    if 'tp_losses_agree' in s:
        # a tensor-parallel group's ranks hold different shards: their
        # weights are not compared; the loss is reported, not checked
        tail.append('- %s: loss identical across the tensor-parallel ranks: %s (weights not compared: shards)' % (
            s['setting'], s['tp_losses_agree']))
    elif 'losses_agree' in s:
        tail.append('- %s: loss identical across data-parallel ranks: %s; weights after the step: %s' % (
            s['setting'], m.get('losses_agree'), m.get('weights_agree')))
ts = load('torch-single.json')
if ts:
    tail.append('- PyTorch, one GPU, no parallelism: peak allocated %s MiB, reserved %s MiB' % (
        ts['ranks'][0]['peak_allocated_mib'], ts['ranks'][0]['peak_reserved_mib']))
if single.get('measured'):
    tail.append('- memplan, one GPU, the unsplit graph: measured %.1f MiB, weights after the step %s' % (
        single['measured'].get('peak_bytes', 0) / MIB, h1))
md = '%s\n\n%s\n\n%s\n' % (summary['model'], hdr + '\n' + '\n'.join(rows), '\n'.join(tail))
open(os.path.join(out, 'table.md'), 'w').write(md)
json.dump(summary, open(os.path.join(out, 'summary.json'), 'w'), indent=1)
print(md)
PY
tar czf "$out/two_gpu.tgz" -C "$work" .
rm -rf "$work"
