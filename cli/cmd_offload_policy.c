/* cmd_offload_policy.c - memplan offload-policy: FlexGen-style search of
 * where weights, KV cache and activations live for LLM inference. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    fputs("Usage: memplan offload-policy --model CONFIG.json [--gpu t4|NAME|FILE]\n"
          "                              [--prompt N] [--gen N] [--json]\n"
          "                              [--gpu-batch N] [--num-batches N]\n"
          "                              [--compress-weights 4bit]\n"
          "                              [--compress-kv 4bit]\n"
          "                              [--gpu-mem SIZE] [--cpu-mem SIZE]\n"
          "                              [--disk-mem SIZE] [--percent WG,WC,CG,CC,HG,HC]\n"
          "\n"
          "For a decoder-only transformer (its Hugging Face config.json:\n"
          "layers, hidden size, heads, KV heads, FFN size, dtype), searches the\n"
          "GPU batch size and the number of GPU batches and solves, for each,\n"
          "FlexGen's linear program over the fractions of the weights, KV cache\n"
          "and activations kept on GPU, CPU and disk (GLPK). Reports the best\n"
          "policy, its estimated generation throughput and the memory of each\n"
          "tier (docs/offload.md).\n"
          "\n"
          "Options:\n"
          "      --model FILE       model config (examples/llm/opt-30b.json)\n"
          "      --gpu G            t4 (FlexGen's fitted T4 machine, default),\n"
          "                         a builtin device (h200, h100, a100, l4)\n"
          "                         or a device profile JSON\n"
          "      --prompt N         prompt length (default 512)\n"
          "      --gen N            tokens generated (default 32)\n"
          "      --gpu-batch N      fix the GPU batch size\n"
          "      --num-batches N    fix the number of GPU batches\n"
          "      --percent LIST     fix wg,wc,cg,cc,hg,hc (percent; '-' frees one)\n"
          "      --compress-weights 4bit, --compress-kv 4bit\n"
          "                         group-wise 4-bit compression\n"
          "      --gpu-mem, --cpu-mem, --disk-mem SIZE  override a tier\n"
          "      --alpha A          usable share of each tier's memory (default\n"
          "                         0.8; FlexGen relaxes it to 1.2 to evaluate\n"
          "                         a given policy)\n"
          "      --json             print one JSON object\n"
          "  -h, --help             show this help\n"
          "\n"
          "Example:\n"
          "  memplan offload-policy --model examples/llm/opt-30b.json --gpu t4\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

enum {
    O_MODEL, O_GPU, O_PROMPT, O_GEN, O_GBS, O_NB, O_CW, O_CK, O_GMEM,
    O_CMEM, O_DMEM, O_JSON, O_PERCENT, O_ALPHA
};
static const cli_opt opts[] = {
    {"model", 0, 1, O_MODEL},          {"gpu", 0, 1, O_GPU},
    {"prompt", 0, 1, O_PROMPT},        {"gen", 0, 1, O_GEN},
    {"gpu-batch", 0, 1, O_GBS},        {"num-batches", 0, 1, O_NB},
    {"compress-weights", 0, 1, O_CW},  {"compress-kv", 0, 1, O_CK},
    {"gpu-mem", 0, 1, O_GMEM},         {"cpu-mem", 0, 1, O_CMEM},
    {"disk-mem", 0, 1, O_DMEM},        {"json", 0, 0, O_JSON},
    {"percent", 0, 1, O_PERCENT},      {"alpha", 0, 1, O_ALPHA},
    {NULL, 0, 0, 0},
};

typedef struct {
    const char *model, *gpu;
    mp_flexgen_options fo;
    uint64_t gmem, cmem, dmem;
    int json;
} args_t;

static int parse_u32(const char *what, const char *v, uint32_t *out)
{
    uint64_t x;
    int rc = cli_parse_u64(what, v, &x);
    if (rc)
        return rc;
    if (x == 0 || x > 1u << 24) {
        cli_error("bad value '%s' for %s: expected 1 to %u", v, what,
                  1u << 24);
        return CLI_EXIT_USAGE;
    }
    *out = (uint32_t)x;
    return 0;
}

static int parse_bits(const char *what, const char *v, unsigned *out)
{
    if (strcmp(v, "4bit") == 0 || strcmp(v, "4") == 0) {
        *out = 4;
        return 0;
    }
    if (strcmp(v, "none") == 0 || strcmp(v, "16bit") == 0) {
        *out = 16;
        return 0;
    }
    cli_error("bad value '%s' for %s: expected 4bit or none", v, what);
    return CLI_EXIT_USAGE;
}

static int parse_percent(const char *v, double *p)
{
    const char *s = v;
    for (int i = 0; i < 6; i++) {
        if (*s == '-' && (s[1] == ',' || s[1] == '\0')) {
            p[i] = -1;
            s++;
        } else {
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end == s || errno || !(x >= 0 && x <= 100))
                goto bad;
            p[i] = x;
            s = end;
        }
        if (i < 5) {
            if (*s != ',')
                goto bad;
            s++;
        }
    }
    if (*s == '\0')
        return 0;
bad:
    cli_error("bad value '%s' for --percent: expected six percentages "
              "wg,wc,cg,cc,hg,hc in [0, 100], '-' for a free one",
              v);
    return CLI_EXIT_USAGE;
}

static int on_opt(void *state, int id, const char *name, const char *value)
{
    args_t *a = state;
    switch (id) {
    case O_MODEL: a->model = value; return 0;
    case O_GPU: a->gpu = value; return 0;
    case O_PROMPT: return parse_u32(name, value, &a->fo.prompt_len);
    case O_GEN: return parse_u32(name, value, &a->fo.gen_len);
    case O_GBS: return parse_u32(name, value, &a->fo.gpu_batch);
    case O_NB: return parse_u32(name, value, &a->fo.num_batches);
    case O_CW: return parse_bits(name, value, &a->fo.weight_bits);
    case O_CK: return parse_bits(name, value, &a->fo.cache_bits);
    case O_GMEM: return cli_parse_size(name, value, &a->gmem);
    case O_CMEM: return cli_parse_size(name, value, &a->cmem);
    case O_DMEM: return cli_parse_size(name, value, &a->dmem);
    case O_JSON: a->json = 1; return 0;
    case O_PERCENT: return parse_percent(value, a->fo.percent);
    case O_ALPHA: {
        double x;
        int rc = cli_parse_seconds(name, value, &x);
        if (rc)
            return rc;
        if (x <= 0 || x > 4) {
            cli_error("bad value '%s' for %s: expected a share in (0, 4]",
                      value, name);
            return CLI_EXIT_USAGE;
        }
        a->fo.alpha_g = a->fo.alpha_c = a->fo.alpha_n = x;
        return 0;
    }
    default: return CLI_EXIT_INTERNAL;
    }
}

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

int cli_cmd_offload_policy(int argc, char **argv)
{
    args_t a;
    memset(&a, 0, sizeof a);
    a.gpu = "t4";
    mp_flexgen_options_init(&a.fo);
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("offload-policy", argc, argv, opts, on_opt, &a, pos,
                       &n_pos, &want_help);
    if (rc)
        return rc;
    if (want_help) {
        help();
        return CLI_EXIT_OK;
    }
    if (n_pos > 0) {
        cli_error("offload-policy: unexpected argument '%s' (the model is "
                  "given with --model)",
                  pos[0]);
        return CLI_EXIT_USAGE;
    }
    if (!a.model) {
        cli_error("offload-policy: --model CONFIG.json is required (see "
                  "'memplan offload-policy --help')");
        return CLI_EXIT_USAGE;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_llm_config m;
    mp_flexgen_hw hw;
    mp_flexgen_policy p;
    mp_status st = mp_llm_config_load_json(ctx, a.model, &m);
    if (st) {
        rc = cli_fail(ctx, st, a.model);
        goto out;
    }
    if (strcmp(a.gpu, "t4") == 0 || strcmp(a.gpu, "T4") == 0) {
        mp_flexgen_hw_t4(&hw);
    } else {
        mp_device d;
        if ((st = mp_device_get(ctx, a.gpu, &d))) {
            rc = cli_fail(ctx, st, a.gpu);
            goto out;
        }
        mp_flexgen_hw_from_device(&d, &hw);
    }
    if (a.gmem)
        hw.gpu_mem = a.gmem;
    if (a.cmem)
        hw.cpu_mem = a.cmem;
    if (a.dmem)
        hw.disk_mem = a.dmem;
    if ((st = mp_flexgen_search(ctx, &m, &hw, &a.fo, &p))) {
        rc = cli_fail(ctx, st, a.model);
        goto out;
    }
    if (a.json) {
        rc = print_json(&m, &hw, &a.fo, &p);
        goto out;
    }
    char b1[64], b2[64], b3[64];
    printf("model        %s (%u layers, hidden %u, %u heads, %u KV heads)\n",
           m.name, m.layers, m.hidden, m.heads, m.kv_heads);
    printf("hardware     %s: GPU %s, CPU %s, disk %s\n", hw.name,
           cli_size(hw.gpu_mem, b1, sizeof b1),
           cli_size(hw.cpu_mem, b2, sizeof b2),
           cli_size(hw.disk_mem, b3, sizeof b3));
    printf("prompt/gen   %u / %u\n", a.fo.prompt_len, a.fo.gen_len);
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
