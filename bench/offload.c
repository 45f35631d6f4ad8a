/* bench_offload [--time-limit S] [DEVICE] [GRAPH.json...]: offload only,
 * recompute only and joint recompute + offload on the default graphs (the
 * _train_ graphs of ../shared/bench/checkmate) at 0.9x, 0.7x and 0.5x of
 * the no-offload peak, on one cost model: every node's time is DEVICE's
 * (default h200) roofline from the node's FLOPs and bytes (the graphs'
 * cost_cpu figures have no common unit), set as the node's seconds so that
 * the recompute solvers, the offload planner and the joint search all see
 * the same times. Per case: total and exposed transfer time of each, every
 * plan verified (mp_verify_plan), and whether joint is never worse than
 * the better of the other two. Prints a Markdown table for
 * docs/offload.md; exit 1 when a plan fails verification or joint is
 * worse. */
#include "memplan/memplan.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
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

static double time_limit = 10;

/* "12.3 (e 4.5)" or the reason there is none */
static void cell(char *buf, size_t n, mp_status st, double total,
                 double exposed)
{
    if (st == MP_ERR_INFEASIBLE)
        snprintf(buf, n, "infeasible");
    else if (st != MP_OK)
        snprintf(buf, n, "error");
    else if (exposed > 0)
        snprintf(buf, n, "%.2f (exp. %.2f)", total * 1e3, exposed * 1e3);
    else
        snprintf(buf, n, "%.2f", total * 1e3);
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
    /* one cost model: the device roofline as every node's time */
    mp_node_info ni;
    for (uint32_t v = 0; mp_graph_node_info(g, v, &ni) == MP_OK; v++) {
        mp_op_cost k;
        if (mp_graph_set_node_cost(g, v, -1, -1, -1) != MP_OK ||
            mp_node_estimate(g, v, dev, &k) != MP_OK ||
            mp_graph_set_node_cost(g, v, -1, -1, k.seconds) != MP_OK) {
            fprintf(stderr, "bench_offload: %s: %s\n", path,
                    mp_ctx_message(ctx));
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            return 1;
        }
    }
    mp_plan_options po;
    mp_plan_options_init(&po);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.device = dev;
    oo.time_limit = time_limit;
    /* the no-offload peak */
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
        uint64_t budget = (uint64_t)(fr[i] * (double)base.peak_bytes);
        char co[64], cr[64], cj[64];
        double c0 = cpu_seconds();
        /* offload only: greedy and the ILP (warm-started) */
        mp_offload_result ro;
        oo.budget = budget;
        oo.recompute = 0;
        oo.ilp = 1;
        mp_status so = mp_offload_plan(g, &oo, &po, &p, &ro);
        if (so == MP_ERR_UNSUPPORTED) { /* no GLPK */
            oo.ilp = 0;
            so = mp_offload_plan(g, &oo, &po, &p, &ro);
        }
        mp_status vo = so == MP_OK ? mp_verify_plan(g, p) : MP_OK;
        if (so == MP_OK)
            mp_plan_destroy(p);
        cell(co, sizeof co, so, ro.total_seconds, ro.exposed_seconds);
        double c1 = cpu_seconds();
        /* recompute only, on the same node times */
        mp_remat_options rmo;
        mp_remat_options_init(&rmo);
        rmo.budget = budget;
        rmo.time_limit = time_limit;
        mp_remat_result rr;
        mp_status sr = mp_remat_plan(g, &rmo, &po, &p, &rr);
        mp_status vr = sr == MP_OK ? mp_verify_plan(g, p) : MP_OK;
        if (sr == MP_OK)
            mp_plan_destroy(p);
        double tr = rr.base_cost + rr.extra_cost;
        cell(cr, sizeof cr, sr, tr, 0);
        double c2 = cpu_seconds();
        /* joint */
        mp_offload_result rj;
        oo.recompute = 1;
        oo.ilp = 0;
        oo.remat = &rmo;
        mp_status sj = mp_offload_plan(g, &oo, &po, &p, &rj);
        oo.remat = NULL;
        mp_status vj = sj == MP_OK ? mp_verify_plan(g, p) : MP_OK;
        if (sj == MP_OK)
            mp_plan_destroy(p);
        cell(cj, sizeof cj, sj, rj.total_seconds, rj.exposed_seconds);
        if (sj == MP_ERR_INFEASIBLE)
            /* the smallest peak joint reached, and the recompute
             * solvers' bound for schedules in the graph's order (a
             * node's inputs and outputs, the outputs before it and the
             * persistent bytes) */
            snprintf(cj, sizeof cj,
                     "infeasible (min %.2f GiB reached; bound %.2f GiB)",
                     rj.peak_bytes / 1073741824.0,
                     rr.peak_lower_bound / 1073741824.0);
        double c3 = cpu_seconds();
        double better = -1;
        if (so == MP_OK)
            better = ro.total_seconds;
        if (sr == MP_OK && (better < 0 || tr < better))
            better = tr;
        int worse = better >= 0 &&
                    (sj != MP_OK || rj.total_seconds > better * (1 + 1e-9));
        int bad = vo != MP_OK || vr != MP_OK || vj != MP_OK;
        char how[96] = "";
        if (sj == MP_OK)
            snprintf(how, sizeof how, "%s; %u off, %u rec; %.2f GiB each way",
                     rj.solver, rj.n_offloaded, rj.n_recomputed,
                     rj.bytes_to_host / 1073741824.0);
        printf("| %s | %.1fx | %.2f | %s | %s | **%s** | %s | %s | %s | "
               "%.2f / %.2f / %.2f |\n",
               name, fr[i], budget / 1073741824.0, co, cr, cj,
               better < 0 ? "-"
               : sj == MP_OK ? (rj.total_seconds < better * (1 - 1e-9)
                                    ? "better"
                                    : "equal")
                             : "NO",
               how, bad ? "FAILED" : "all", c1 - c0, c2 - c1, c3 - c2);
        fflush(stdout);
        if (bad) {
            fprintf(stderr, "bench_offload: %s: %s\n", path,
                    mp_ctx_message(ctx));
            rc = 1;
        }
        if (worse) {
            fprintf(stderr, "bench_offload: %s at %.1fx: joint is worse\n",
                    path, fr[i]);
            rc = 1;
        }
    }
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--time-limit") == 0) {
        time_limit = atof(argv[a + 1]);
        a += 2;
    }
    const char *devname = a < argc ? argv[a++] : "h200";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_device dev;
    if (!ctx || mp_device_get(ctx, devname, &dev) != MP_OK) {
        fprintf(stderr, "bench_offload: %s\n",
                ctx ? mp_ctx_message(ctx) : "out of memory");
        return 2;
    }
    mp_ctx_destroy(ctx);
    printf("device %s: host link %.0f GB/s each way, %d copy engines, "
           "memory %.2f TB/s; LP/ILP limits %.0f s\n\n",
           dev.name, dev.h2d_bw / 1e9, dev.copy_engines, dev.mem_bw / 1e12,
           time_limit);
    printf("| graph | budget | GiB | offload only ms | recompute only ms | "
           "joint ms | joint vs best | joint plan | verified | CPU s "
           "off / rec / joint |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    if (a < argc) {
        for (int i = a; i < argc; i++)
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
