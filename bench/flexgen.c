/* bench_flexgen [EXAMPLES_LLM_DIR]: the policy search against FlexGen's
 * published T4 results (OPT-30B and OPT-175B, prompt 512, gen 32):
 * the searched policy, and FlexGen's published policy evaluated with the
 * same cost model (alpha 1.2, as FlexGen's cost model does to evaluate a
 * given policy). Prints a Markdown table for docs/offload.md. */
#include "memplan/memplan.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *file;
    const char *label;
    uint32_t gbs, nb;
    double percent[6];
    double published;
} case_t;

static double cpu_seconds(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

static void row(const char *what, const mp_flexgen_policy *p, double ref,
                double secs)
{
    printf("| %s | %u x %u = %u | %.0f/%.0f/%.0f | %.0f/%.0f/%.0f | "
           "%.0f/%.0f/%.0f | %.3f | %+.0f%% | %.1f / %.1f / %.1f | %.3f |\n",
           what, p->gpu_batch, p->num_batches, p->gpu_batch * p->num_batches,
           100 * p->w_gpu, 100 * p->w_cpu, 100 * p->w_disk, 100 * p->c_gpu,
           100 * p->c_cpu, 100 * p->c_disk, 100 * p->h_gpu, 100 * p->h_cpu,
           100 * p->h_disk, p->throughput, 100 * (p->throughput / ref - 1),
           p->gpu_peak / 1073741824.0, p->cpu_peak / 1073741824.0,
           p->disk_peak / 1073741824.0, secs);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "examples/llm";
    case_t cases[] = {
        {"opt-30b.json", "OPT-30B", 48, 3, {20, 80, 0, 100, 0, 100}, 7.32},
        {"opt-175b.json", "OPT-175B", 32, 8, {0, 50, 0, 0, 0, 100}, 0.69},
    };
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx)
        return 1;
    mp_flexgen_hw hw;
    mp_flexgen_hw_t4(&hw);
    printf("hardware: %s, GPU %.0f GiB, CPU %.0f GiB, disk %.0f GiB\n\n",
           hw.name, hw.gpu_mem / 1073741824.0, hw.cpu_mem / 1073741824.0,
           hw.disk_mem / 1073741824.0);
    printf("| model / policy | GPU batch x batches | weights G/C/D %% | "
           "KV cache G/C/D %% | activations G/C/D %% | tokens/s | vs "
           "published | peak GiB G/C/D | CPU s |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
        mp_llm_config m;
        mp_flexgen_options o;
        mp_flexgen_policy p;
        if (mp_llm_config_load_json(ctx, path, &m) != MP_OK) {
            fprintf(stderr, "bench_flexgen: %s\n", mp_ctx_message(ctx));
            rc = 1;
            continue;
        }
        printf("| **%s** FlexGen published | %u x %u = %u | %.0f/%.0f/%.0f "
               "| %.0f/%.0f/%.0f | %.0f/%.0f/%.0f | %.2f (measured) | | | "
               "|\n",
               cases[i].label, cases[i].gbs, cases[i].nb,
               cases[i].gbs * cases[i].nb, cases[i].percent[0],
               cases[i].percent[1],
               100 - cases[i].percent[0] - cases[i].percent[1],
               cases[i].percent[2], cases[i].percent[3],
               100 - cases[i].percent[2] - cases[i].percent[3],
               cases[i].percent[4], cases[i].percent[5],
               100 - cases[i].percent[4] - cases[i].percent[5],
               cases[i].published);
        mp_flexgen_options_init(&o);
        double t0 = cpu_seconds();
        if (mp_flexgen_search(ctx, &m, &hw, &o, &p) != MP_OK) {
            fprintf(stderr, "bench_flexgen: %s\n", mp_ctx_message(ctx));
            rc = 1;
            continue;
        }
        char what[128];
        snprintf(what, sizeof what, "%s memplan search (%u LPs)",
                 cases[i].label, p.lps_solved);
        row(what, &p, cases[i].published, cpu_seconds() - t0);
        for (int a = 0; a < 2; a++) {
            mp_flexgen_options_init(&o);
            o.gpu_batch = cases[i].gbs;
            o.num_batches = cases[i].nb;
            memcpy(o.percent, cases[i].percent, sizeof o.percent);
            o.alpha_g = o.alpha_c = o.alpha_n = a ? 1.2 : 1.0;
            t0 = cpu_seconds();
            if (mp_flexgen_search(ctx, &m, &hw, &o, &p) != MP_OK) {
                printf("| %s published policy, alpha %.1f | infeasible in "
                       "the model's memory estimate | | | | | | | |\n",
                       cases[i].label, o.alpha_g);
                continue;
            }
            snprintf(what, sizeof what,
                     "%s published policy, cost model (alpha %.1f)",
                     cases[i].label, o.alpha_g);
            row(what, &p, cases[i].published, cpu_seconds() - t0);
        }
        if (p.w_disk + p.c_disk <= 0)
            continue;
        /* what the published figure implies for the disk: the decode time
         * left after the model's prefill, per layer and token, against
         * the bytes the policy reads from disk there (weights and the KV
         * cache at its mean length) */
        double bls = (double)cases[i].gbs * cases[i].nb;
        double n = o.gen_len, s = o.prompt_len, l = m.layers;
        double dec = bls * n / cases[i].published - p.prefill_seconds;
        double per = dec / (l * (n - 1));
        double rd = (p.w_disk * p.weight_bytes +
                     p.c_disk * p.cache_bytes * (s + n / 2) / (s + n)) /
                    l;
        printf("| %s: the published %.2f tokens/s leaves %.2f s per layer "
               "and decode step after the model's prefill (%.0f s) for "
               "%.2f GB read from disk: %.2f GB/s (fitted disk->CPU: "
               "%.3f GB/s) | | | | | | | | |\n",
               cases[i].label, cases[i].published, per, p.prefill_seconds,
               rd / 1e9, rd / per / 1e9, hw.dtoc_bw / 1e9);
        /* the published policy with other disk read rates (not FlexGen's
         * fit: a sensitivity, every other constant as fitted) */
        static const double gib[] = {1.0, 2.0, 2.5};
        for (int k = 0; k < 3; k++) {
            mp_flexgen_hw h2 = hw;
            h2.dtoc_bw = gib[k] * 1073741824.0;
            mp_flexgen_options_init(&o);
            o.gpu_batch = cases[i].gbs;
            o.num_batches = cases[i].nb;
            memcpy(o.percent, cases[i].percent, sizeof o.percent);
            o.alpha_g = o.alpha_c = o.alpha_n = 1.2;
            t0 = cpu_seconds();
            if (mp_flexgen_search(ctx, &m, &h2, &o, &p) != MP_OK)
                continue;
            snprintf(what, sizeof what,
                     "%s published policy, disk read %.1f GiB/s (not the "
                     "fit)",
                     cases[i].label, gib[k]);
            row(what, &p, cases[i].published, cpu_seconds() - t0);
        }
    }
    mp_ctx_destroy(ctx);
    return rc;
}
