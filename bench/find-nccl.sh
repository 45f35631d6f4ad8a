#!/bin/sh
# bench/find-nccl.sh - prints the folder holding libnccl.so.2 for
# `memplan validate --ranks` (MEMPLAN_NCCL), exit 1 when there is none.
# Looks in: $MEMPLAN_NCCL, PyTorch's nvidia-nccl wheel (the python3 on
# PATH: site-packages/nvidia/nccl/lib), the loader's cache (ldconfig -p),
# /usr/local/cuda/lib64.
#   export MEMPLAN_NCCL=$(sh bench/find-nccl.sh)
if [ -n "$MEMPLAN_NCCL" ]; then
  if [ -f "$MEMPLAN_NCCL" ]; then dirname "$MEMPLAN_NCCL"; exit 0; fi
  if [ -f "$MEMPLAN_NCCL/libnccl.so.2" ]; then echo "$MEMPLAN_NCCL"; exit 0; fi
fi
d=$(python3 - 2>/dev/null <<'PY'
import os
try:
    import nvidia.nccl as m
    for p in list(getattr(m, '__path__', [])) + [os.path.dirname(getattr(m, '__file__', '') or '')]:
        if p and os.path.isfile(os.path.join(p, 'lib', 'libnccl.so.2')):
            print(os.path.join(p, 'lib'))
            break
except Exception:
    pass
PY
)
if [ -n "$d" ]; then echo "$d"; exit 0; fi
l=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
if [ -n "$l" ]; then dirname "$l"; exit 0; fi
if [ -f /usr/local/cuda/lib64/libnccl.so.2 ]; then echo /usr/local/cuda/lib64; exit 0; fi
echo "find-nccl: no libnccl.so.2 (pip install nvidia-nccl-cu12, or set MEMPLAN_NCCL)" >&2
exit 1
