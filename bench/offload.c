/* bench_offload [DEVICE] [GRAPH.json...]: the offload planner on the
 * default: the _train_ graphs of ../shared/bench/checkmate) at 0.5x,
 * 0.7x and 0.9x of the no-offload peak: peak reached,
 * bytes moved, compute and exposed transfer time on DEVICE (default
 * h200), every plan verified. Node times: the device's roofline from each
 * node's bytes (the graphs' cost_cpu figures have no common unit).
 * Prints a Markdown table for docs/offload.md. */
#include "memplan/memplan.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int run_graph(const char *path, const mp_device *dev)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    int rc = 0;
    if (!ctx || mp_graph_load(ctx, path, &g) != MP_OK) {
        fprintf(stderr, "bench_offload: %s: %s\n", path,
                ctx ? mp_ctx_message(ctx) : "out of memory");
        mp_ctx_destroy(ctx);
        return 1;
    }
    mp_plan_options po;
    mp_plan_options_init(&po);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.device = dev;
    oo.use_given_seconds = 0;
    /* the no-offload peak: the offload planner with no budget */
    mp_offload_result base;
    mp_plan *p = NULL;
    if (mp_offload_plan(g, &oo, &po, &p, &base) != MP_OK) {
        fprintf(stderr, "bench_offload: %s: %s\n", path, mp_ctx_message(ctx));
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        return 1;
    }
    mp_plan_destroy(p);
    char name[48];
    snprintf(name, sizeof name, "%.40s", base_name(path));
    char *cut = strstr(name, "_(MLSys)");
    if (cut)
        *cut = '\0';
    static const double fr[] = {0.9, 0.7, 0.5};
    for (int i = 0; i < 3; i++) {
        mp_offload_result r;
        oo.budget = (uint64_t)(fr[i] * (double)base.peak_bytes);
        double t0 = cpu_seconds();
        mp_status st = mp_offload_plan(g, &oo, &po, &p, &r);
        double secs = cpu_seconds() - t0;
        if (st == MP_ERR_INFEASIBLE) {
            printf("| %s | %.1fx | %.2f | infeasible (min %.2f GiB) | | | | "
                   "| | |\n",
                   name, fr[i], base.peak_bytes / 1073741824.0,
                   r.peak_bytes / 1073741824.0);
            continue;
        }
        if (st != MP_OK) {
            fprintf(stderr, "bench_offload: %s: %s\n", path,
                    mp_ctx_message(ctx));
            rc = 1;
            continue;
        }
        mp_status vs = mp_verify_plan(g, p);
        mp_plan_destroy(p);
        /* the ILP on the same candidates, warm-started from the greedy */
        mp_offload_result ri;
        oo.ilp = 1;
        oo.time_limit = 10;
        double t1 = cpu_seconds();
        mp_status sti = mp_offload_plan(g, &oo, &po, &p, &ri);
        double secs_i = cpu_seconds() - t1;
        oo.ilp = 0;
        mp_status vi = sti == MP_OK ? mp_verify_plan(g, p) : sti;
        if (sti == MP_OK)
            mp_plan_destroy(p);
        printf("| %s | %.1fx | %.2f | %.2f | %u | %.2f | %.2f | %.2f (%+.0f%%) "
               "| %.2f (%s, %s) | %s, %.3f / %.3f |\n",
               name, fr[i], base.peak_bytes / 1073741824.0,
               r.peak_bytes / 1073741824.0, r.n_offloaded,
               r.bytes_to_host / 1073741824.0, r.compute_seconds * 1e3,
               r.exposed_seconds * 1e3,
               100 * r.exposed_seconds / (r.compute_seconds > 0
                                              ? r.compute_seconds
                                              : 1),
               sti == MP_OK ? ri.exposed_seconds * 1e3 : -1.0,
               sti == MP_OK ? ri.solver : "failed",
               mp_solve_status_name(ri.ilp_status),
               vs == MP_OK && vi == MP_OK ? "ok" : "FAILED", secs, secs_i);
        if (vs != MP_OK || vi != MP_OK) {
            fprintf(stderr, "bench_offload: %s: %s\n", path,
                    mp_ctx_message(ctx));
            rc = 1;
        }
    }
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    const char *devname = argc > 1 ? argv[1] : "h200";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_device dev;
    if (!ctx || mp_device_get(ctx, devname, &dev) != MP_OK) {
        fprintf(stderr, "bench_offload: %s\n",
                ctx ? mp_ctx_message(ctx) : "out of memory");
        return 2;
    }
    mp_ctx_destroy(ctx);
    printf("device %s: host link %.0f GB/s each way, %d copy engines, "
           "memory %.2f TB/s\n\n",
           dev.name, dev.h2d_bw / 1e9, dev.copy_engines, dev.mem_bw / 1e12);
    printf("| graph | budget | no-offload peak GiB | peak GiB | offloaded | "
           "GiB each way | compute ms | exposed ms (greedy) | exposed ms "
           "(ILP) | verified, CPU s greedy / ILP |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    if (argc > 2) {
        for (int i = 2; i < argc; i++)
            rc |= run_graph(argv[i], &dev);
        return rc;
    }
    const char *pats[] = {"../shared/bench/checkmate/*_train_*.json",
                          "/work/shared/bench/checkmate/*_train_*.json"};
    for (int k = 0; k < 2; k++) {
        glob_t gl;
        if (glob(pats[k], 0, NULL, &gl) != 0)
            continue;
        for (size_t i = 0; i < gl.gl_pathc; i++)
            rc |= run_graph(gl.gl_pathv[i], &dev);
        globfree(&gl);
        return rc;
    }
    fprintf(stderr, "bench_offload: no Checkmate training graphs found "
                    "(../shared/bench/checkmate); skipped\n");
    return 0;
}
