#!/usr/bin/env python3
"""Serving: PyTorch/transformers' measured memory next to memplan's
prediction (issue 21; docs/serving.md). Prepared, not yet run.

On the GPU machine (torch and transformers installed, memplan built):

    python3 bench/serve_validate.py --memplan build/memplan \
        --batch 8 --prompt 512 --gen 64 -o serve_validate.json

It writes a small Llama-style config (hidden 1024, 8 layers, 16 heads,
4 KV heads, FFN 2816, vocab 32000, bf16: about 260 MB of weights), builds
the model with random weights on the GPU (no download), runs generate()
with a static cache (cache_implementation="static") at --batch sequences
of --prompt + --gen tokens, and records per term: the weights
(parameters' bytes), the static cache (its tensors' bytes), the peak
(torch.cuda.max_memory_allocated) and what is left (activations, logits,
sampler). Then it runs `memplan serve CONFIG --json` with the same batch
and length (--max-seqs batch, --max-batched-tokens batch x prompt, the
contiguous layout at prompt + gen, eager, no reserve, gpu-util 1) and
puts memplan's terms beside: weights, KV bytes of the batch, the prefill
and decode peaks. One JSON object out.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CONFIG = {
    "_name_or_path": "memplan/serve-small-llama",
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 2816,
    "num_attention_heads": 16, "num_key_value_heads": 4,
    "num_hidden_layers": 8, "vocab_size": 32000,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def measure(cfg_path, batch, prompt, gen):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.manual_seed(0)
    cfg = AutoConfig.from_pretrained(os.path.dirname(cfg_path))
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    model.eval()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=gen, min_new_tokens=gen,
                             do_sample=False, cache_implementation="static")
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    # the static cache's bytes: 2 x layers x batch x kv_heads x len x head
    hd = cfg.hidden_size // cfg.num_attention_heads
    cache = (2 * cfg.num_hidden_layers * batch * cfg.num_key_value_heads *
             (prompt + gen) * hd * 2)
    return {
        "weights_bytes": weights,
        "allocated_before_generate_bytes": before - base,
        "static_cache_bytes": cache,
        "max_memory_allocated_bytes": peak - base,
        "rest_bytes": peak - base - weights - cache,
        "tokens_out": int(out.shape[1]),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }


def predict(memplan, cfg_path, batch, prompt, gen):
    cmd = [memplan, "serve", cfg_path, "--json", "--max-seqs", str(batch),
           "--max-batched-tokens", str(batch * prompt),
           "--max-model-len", str(prompt + gen), "--kv-layout", "contiguous",
           "--cuda-graph-sizes", "none", "--runtime-reserve", "0",
           "--gpu-util", "1"]
    r = json.loads(subprocess.check_output(cmd))
    kv = r["kv_seq_bytes"] * batch
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
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memplan", default="build/memplan")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="serve_validate.")
    cfg_path = os.path.join(d, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(CONFIG, f, indent=2)
    res = {"config": CONFIG, "batch": a.batch, "prompt": a.prompt,
           "gen": a.gen,
           "memplan": predict(a.memplan, cfg_path, a.batch, a.prompt, a.gen)}
    try:
        res["pytorch"] = measure(cfg_path, a.batch, a.prompt, a.gen)
        m, p = res["memplan"], res["pytorch"]
        res["diff"] = {
            "weights_bytes": m["weights_bytes"] - p["weights_bytes"],
            "kv_cache_bytes": m["kv_cache_bytes"] - p["static_cache_bytes"],
            "peak_bytes": m["predicted_peak_bytes"] -
            p["max_memory_allocated_bytes"],
        }
    except Exception as e:  # no GPU or no torch: the prediction alone
        res["pytorch_error"] = repr(e)
    text = json.dumps(res, indent=2)
    if a.output == "-":
        print(text)
    else:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    return 0 if "pytorch" in res else 1


if __name__ == "__main__":
    sys.exit(main())
