/* bench_pools: two memory pools (a small fast SRAM beside DRAM) against a
 * single DRAM pool, on ONNX or JSON models.
 *
 *   bench_pools [--sram BYTES]... [--sram-bw B/s] [--dram-bw B/s]
 *               [--rate FLOP/s] MODEL...
 *
 * Defaults: --sram 1048576 --sram 4194304, SRAM 1e12 B/s, DRAM 1e11 B/s,
 * no compute rate (memory time only). For each model and SRAM size it
 * plans with mp_plan_create_constrained, checks the plan with
 * mp_verify_plan and mp_verify_constraints, and prints the arena of the
 * single-pool plan, what went to SRAM (bytes of its arena, blocks), the
 * estimated time of both plans (mp_plan_estimate_seconds), their ratio and
 * the planning time (wall and CPU).
 *   bench_pools ../shared/corpus/models/onnx_light/ *.onnx
 * Exit status: 0 when every plan verified and no two-pool estimate was
 * above the single-pool one. */
#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int main(int argc, char **argv)
{
    uint64_t srams[16];
    int n_srams = 0, rc = 0;
    double sram_bw = 1e12, dram_bw = 1e11, rate = 0;
    const char *models[256];
    int n_models = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sram") && i + 1 < argc && n_srams < 16)
            srams[n_srams++] = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--sram-bw") && i + 1 < argc)
            sram_bw = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--dram-bw") && i + 1 < argc)
            dram_bw = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = strtod(argv[++i], NULL);
        else if (argv[i][0] != '-' && n_models < 256)
            models[n_models++] = argv[i];
        else {
            fprintf(stderr, "usage: bench_pools [--sram BYTES]... [--sram-bw "
                    "B/s] [--dram-bw B/s] [--rate FLOP/s] MODEL...\n");
            return 2;
        }
    }
    if (!n_srams) {
        srams[n_srams++] = 1u << 20;
        srams[n_srams++] = 4u << 20;
    }
    printf("| model | arena (1 pool) | SRAM | SRAM used | blocks in SRAM | "
           "est. 1 pool | est. 2 pools | ratio | plan s (wall / CPU) | "
           "verified |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int m = 0; m < n_models; m++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_plan *single = NULL;
        if (mp_graph_load(ctx, models[m], &g) != MP_OK ||
            mp_plan_create(g, NULL, &single) != MP_OK) {
            printf("| %s | %s | | | | | | | | no |\n", base_name(models[m]),
                   mp_ctx_message(ctx));
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            continue;
        }
        for (int s = 0; s < n_srams; s++) {
            mp_constraints *c = NULL;
            mp_pool_desc sd = {"sram", srams[s], sram_bw, 0};
            mp_pool_desc dd = {"dram", UINT64_MAX, dram_bw, 0};
            mp_plan *p = NULL;
            double t1 = 0, t2 = 0;
            int ok = mp_constraints_create(ctx, &c) == MP_OK &&
                     mp_constraints_add_pool(c, &sd, NULL) == MP_OK &&
                     mp_constraints_add_pool(c, &dd, NULL) == MP_OK &&
                     mp_constraints_compute_rate(c, rate) == MP_OK;
            double w0 = now(), c0 = cpu();
            ok = ok && mp_plan_create_constrained(g, NULL, c, &p) == MP_OK;
            double w = now() - w0, cp = cpu() - c0;
            ok = ok && mp_verify_plan(g, p) == MP_OK &&
                 mp_verify_constraints(g, p, c) == MP_OK &&
                 mp_plan_estimate_seconds(p, c, &t2) == MP_OK &&
                 mp_plan_estimate_seconds(single, c, &t1) == MP_OK;
            mp_pool_info si;
            memset(&si, 0, sizeof si);
            if (ok)
                mp_plan_pool_info(p, 0, &si);
            printf("| %s | %llu | %llu | %llu | %u | %.4g | %.4g | %.3f | "
                   "%.3f / %.3f | %s |\n",
                   base_name(models[m]),
                   (unsigned long long)mp_plan_figures(single)->arena_bytes,
                   (unsigned long long)srams[s],
                   (unsigned long long)si.arena_bytes, si.n_blocks, t1, t2,
                   t1 > 0 ? t2 / t1 : 0, w, cp,
                   ok ? "yes" : mp_ctx_message(ctx));
            if (!ok || t2 > t1)
                rc = 1;
            mp_plan_destroy(p);
            mp_constraints_destroy(c);
        }
        mp_plan_destroy(single);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    return rc;
}
