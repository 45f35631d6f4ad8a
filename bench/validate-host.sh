#!/usr/bin/env bash
# validate-host.sh: the host-side figures of docs/validation.md's rows, the
# ones that need no GPU: for each row of validate/run-on-gpu that runs from
# the corpus or from generated JSON graphs, what `memplan validate
# --lower-only` lowers (kernels real and synthetic, arena, workspace,
# weights buffer) and what `memplan plan --json` plans (steps, bounds,
# arena, peak, status, solver) with the row's options. The rows whose
# model needs python's onnx package (validate/batch_onnx.py,
# validate/bert_onnx.py) are left out. bench/run-all.sh runs it; run it
# from a folder holding ../shared (the corpus) and examples/.
#
#   bench/validate-host.sh MEMPLAN
set -u
memplan=${1:?usage: validate-host.sh MEMPLAN}
m=../shared/corpus/models
l=$m/onnx_light
g=validate-host-graphs
mkdir -p "$g"
python3 examples/gen/resnet50.py -o "$g/resnet50_b1.json" --batch 1 >/dev/null
python3 examples/gen/resnet50.py -o "$g/resnet50_b32.json" --batch 32 >/dev/null
python3 examples/gen/transformer_block.py -o "$g/bert_b1.json" --batch 1 >/dev/null
python3 examples/gen/transformer_block.py -o "$g/bert_b8.json" --batch 8 >/dev/null
python3 examples/gen/transformer_block.py -o "$g/bert_b32.json" --batch 32 >/dev/null
python3 examples/gen/transformer_block.py -o "$g/bert_b32_s512.json" --batch 32 --seq 512 >/dev/null

# name, model, options (as validate/run-on-gpu gives them)
while read -r name model opts; do
    [ -n "$name" ] || continue
    echo "== $name: $model $opts"
    # shellcheck disable=SC2086
    "$memplan" validate "$model" $opts --lower-only 2>&1
    echo "validate exit $?"
    # shellcheck disable=SC2086
    "$memplan" plan "$model" $opts --json 2>&1 |
        grep -E '^  "(steps|persistent_bytes|lower_bound_bytes|arena_bytes|peak_bytes|status|solver|recompute_steps|offload_steps|extra_cost|error|exit_code)"'
    echo "plan exit ${PIPESTATUS[0]}"
done <<EOF
resnet50 $l/light_resnet50.onnx
vgg19 $l/light_vgg19.onnx
inception_v1 $l/light_inception_v1.onnx
inception_v2 $l/light_inception_v2.onnx
densenet121 $l/light_densenet121.onnx
squeezenet $l/light_squeezenet.onnx
shufflenet $l/light_shufflenet.onnx
zfnet512 $l/light_zfnet512.onnx
alexnet $l/light_bvlc_alexnet.onnx
ultraface_rfb320 $m/ultra-light-face/version-RFB-320.onnx
ultraface_slim320 $m/ultra-light-face/version-slim-320.onnx
ultraface_rfb640 $m/ultra-light-face/version-RFB-640.onnx
fastestdet $m/fastestdet/FastestDet.onnx
smp_pan $m/smp_segmentation/PAN_mobilenetv3_small_simplified.onnx
ultraface_rfb320_b32 $m/ultra-light-face/version-RFB-320.onnx --dim input:0=32
ultraface_slim320_b32 $m/ultra-light-face/version-slim-320.onnx --dim input:0=32
ultraface_rfb640_b32 $m/ultra-light-face/version-RFB-640.onnx --dim input:0=32
smp_pan_b32 $m/smp_segmentation/PAN_mobilenetv3_small_simplified.onnx --dim x.1:0=32
matmul_2layer $m/tensorrt_polygraphy/matmul_2layer.onnx
attention_head_s100_b100 $m/tensorrt_polygraphy/attention_head.onnx --dim sequence_len=100 --dim batch=100
attention_b1 $m/tensorrt_polygraphy/attention.onnx --shape q=1x128x64 --shape k=1x64x128 --shape v=1x128x64
attention_b32 $m/tensorrt_polygraphy/attention.onnx --shape q=32x128x64 --shape k=32x64x128 --shape v=32x128x64
resnet50_json_b1 $g/resnet50_b1.json
resnet50_json_b32 $g/resnet50_b32.json
bert_layer_b1 $g/bert_b1.json
bert_layer_b8 $g/bert_b8.json
bert_layer_b32 $g/bert_b32.json
bert_layer_b32_s512 $g/bert_b32_s512.json
train_resnet50_recompute $l/light_resnet50.onnx --train --budget 420MiB
train_resnet50_offload $l/light_resnet50.onnx --train --budget 420MiB --offload
offload_skip_chain examples/offload/skip_chain.json --budget 850MiB --offload
offload_skip_chain_greedy examples/offload/skip_chain.json --budget 850MiB --offload --offload-solver greedy
offload_joint_chain_joint examples/offload/joint_chain.json --budget 860MiB --offload --offload-solver joint
EOF
rm -rf "$g"
