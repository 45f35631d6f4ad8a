/* cmd_offload_policy.c - memplan offload-policy: FlexGen-style search of
 * where weights, KV cache and activations live for LLM inference. */
#include "cli.h"

#include <string.h>

static double pct(double f) { return 100.0 * f; }

/* key: {"gpu": a, "cpu": b, "disk": c} (or the names given) */
static void three(mp__jw *w, const char *key, const char *const names[3],
                  double a, double b, double c)
{
    static const char *const tiers[3] = {"gpu", "cpu", "disk"};
    const double v[3] = {a, b, c};
    if (!names)
        names = tiers;
    cli_json_object(w, key);
    for (int i = 0; i < 3; i++)
        cli_json_real(w, names[i], v[i]);
    mp__jw_end(w);
}

static int print_json(mp_ctx *ctx, const mp_llm_config *m,
                      const mp_flexgen_hw *hw, const mp_flexgen_options *fo,
                      const mp_flexgen_policy *p)
{
    static const char *const totals[3] = {"weights", "kv_cache",
                                          "activations"};
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_str(&w, "model", m->name);
    cli_json_str(&w, "hardware", hw->name);
    cli_json_int(&w, "prompt_len", fo->prompt_len);
    cli_json_int(&w, "gen_len", fo->gen_len);
    cli_json_int(&w, "gpu_batch", p->gpu_batch);
    cli_json_int(&w, "num_batches", p->num_batches);
    cli_json_int(&w, "effective_batch",
                 (int64_t)p->gpu_batch * p->num_batches);
    cli_json_int(&w, "weight_bits", fo->weight_bits);
    /* shares as fractions 0-1, as every share of --json */
    three(&w, "weights", NULL, p->w_gpu, p->w_cpu, p->w_disk);
    three(&w, "kv_cache", NULL, p->c_gpu, p->c_cpu, p->c_disk);
    three(&w, "activations", NULL, p->h_gpu, p->h_cpu, p->h_disk);
    cli_json_real(&w, "throughput_tokens_per_s", p->throughput);
    cli_json_real(&w, "prefill_seconds", p->prefill_seconds);
    cli_json_real(&w, "decode_seconds", p->decode_seconds);
    three(&w, "peak_bytes", NULL, p->gpu_peak, p->cpu_peak, p->disk_peak);
    three(&w, "total_bytes", totals, p->weight_bytes, p->cache_bytes,
          p->hidden_bytes);
    cli_json_str(&w, "decode_bound", p->decode_bound);
    cli_json_str(&w, "binding", p->binding);
    cli_json_int(&w, "lps_solved", p->lps_solved);
    return cli_json_print(&w);
}

int cli_cmd_offload_policy(cli_args *a)
{
    const char *model = a->pos[0], *device = a->offload.device;
    int rc;
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    cli_progress_install(ctx, a);
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
        rc = print_json(ctx, &m, &hw, &a->fo, &p);
        goto out;
    }
    char b1[64], b2[64], b3[64], safe[512];
    printf("model        %s (%u layers, hidden %u, %u heads, %u KV heads)\n",
           cli_safe(m.name, safe, sizeof safe), m.layers, m.hidden, m.heads,
           m.kv_heads);
    printf("hardware     %s: GPU %s, CPU %s, disk %s\n",
           cli_safe(hw.name, safe, sizeof safe),
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
    printf("binding      %s\n", p.binding);
    rc = CLI_EXIT_OK;
out:
    mp_ctx_destroy(ctx);
    return rc;
}
