/* cmd_offload_policy.c - memplan offload-policy: FlexGen-style search of
 * where weights, KV cache and activations live for LLM inference. */
#include "cli.h"

#include <string.h>

static double pct(double f) { return 100.0 * f; }

static int print_json(const mp_llm_config *m, const mp_flexgen_hw *hw,
                      const mp_flexgen_options *fo,
                      const mp_flexgen_policy *p)
{
    json_t *o = json_pack(
        "{s:o, s:o, s:i, s:i, s:i, s:i, s:i, s:i, "
        "s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, "
        "s:f, s:f, s:f, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:i}",
        "model", cli_json_str(m->name), "hardware", cli_json_str(hw->name),
        "prompt_len", (json_int_t)fo->prompt_len, "gen_len",
        (json_int_t)fo->gen_len, "gpu_batch", (json_int_t)p->gpu_batch,
        "num_batches", (json_int_t)p->num_batches, "effective_batch",
        (json_int_t)p->gpu_batch * p->num_batches, "weight_bits",
        (json_int_t)fo->weight_bits, "weights", "gpu", pct(p->w_gpu), "cpu",
        pct(p->w_cpu), "disk", pct(p->w_disk), "kv_cache", "gpu",
        pct(p->c_gpu), "cpu", pct(p->c_cpu), "disk", pct(p->c_disk),
        "activations", "gpu", pct(p->h_gpu), "cpu", pct(p->h_cpu), "disk",
        pct(p->h_disk), "throughput_tokens_per_s", p->throughput,
        "prefill_seconds", p->prefill_seconds, "decode_seconds",
        p->decode_seconds, "peak_bytes", "gpu", p->gpu_peak, "cpu",
        p->cpu_peak, "disk", p->disk_peak, "total_bytes", "weights",
        p->weight_bytes, "kv_cache", p->cache_bytes, "activations",
        p->hidden_bytes, "lps_solved", (json_int_t)p->lps_solved);
    if (!o) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    return cli_json_print(o);
}

int cli_cmd_offload_policy(cli_args *a)
{
    const char *model = a->pos[0], *device = a->offload.device;
    int rc;
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    mp_llm_config m;
    mp_flexgen_hw hw;
    mp_flexgen_policy p;
    mp_status st = mp_llm_config_load_json(ctx, model, &m);
    if (st) {
        rc = cli_fail(ctx, st, model);
        goto out;
    }
    if (strcmp(device, "t4") == 0 || strcmp(device, "T4") == 0) {
        mp_flexgen_hw_t4(&hw);
    } else {
        mp_device d;
        if ((st = mp_device_get(ctx, device, &d))) {
            rc = cli_fail(ctx, st, device);
            goto out;
        }
        mp_flexgen_hw_from_device(&d, &hw);
    }
    if (a->gpu_mem)
        hw.gpu_mem = a->gpu_mem;
    if (a->cpu_mem)
        hw.cpu_mem = a->cpu_mem;
    if (a->disk_mem)
        hw.disk_mem = a->disk_mem;
    if ((st = mp_flexgen_search(ctx, &m, &hw, &a->fo, &p))) {
        rc = cli_fail(ctx, st, model);
        goto out;
    }
    if (a->json) {
        rc = print_json(&m, &hw, &a->fo, &p);
        goto out;
    }
    char b1[64], b2[64], b3[64];
    printf("model        %s (%u layers, hidden %u, %u heads, %u KV heads)\n",
           m.name, m.layers, m.hidden, m.heads, m.kv_heads);
    printf("hardware     %s: GPU %s, CPU %s, disk %s\n", hw.name,
           cli_size(hw.gpu_mem, b1, sizeof b1),
           cli_size(hw.cpu_mem, b2, sizeof b2),
           cli_size(hw.disk_mem, b3, sizeof b3));
    printf("prompt/gen   %u / %u\n", a->fo.prompt_len, a->fo.gen_len);
    printf("batch        GPU batch %u x %u batches = %u sequences\n",
           p.gpu_batch, p.num_batches, p.gpu_batch * p.num_batches);
    printf("             %-12s %6s %6s %6s\n", "", "GPU", "CPU", "disk");
    printf("  weights    %-12s %5.1f%% %5.1f%% %5.1f%%\n", "", pct(p.w_gpu),
           pct(p.w_cpu), pct(p.w_disk));
    printf("  KV cache   %-12s %5.1f%% %5.1f%% %5.1f%%\n", "", pct(p.c_gpu),
           pct(p.c_cpu), pct(p.c_disk));
    printf("  activations%-12s %5.1f%% %5.1f%% %5.1f%%\n", "", pct(p.h_gpu),
           pct(p.h_cpu), pct(p.h_disk));
    printf("peak memory  GPU %.2f GiB, CPU %.2f GiB, disk %.2f GiB\n",
           p.gpu_peak / 1073741824.0, p.cpu_peak / 1073741824.0,
           p.disk_peak / 1073741824.0);
    printf("time         prefill %.2f s, decode %.2f s\n", p.prefill_seconds,
           p.decode_seconds);
    printf("throughput   %.3f tokens/s (estimated; %u LPs solved)\n",
           p.throughput, p.lps_solved);
    rc = CLI_EXIT_OK;
out:
    mp_ctx_destroy(ctx);
    return rc;
}
