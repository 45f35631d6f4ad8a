/* bench_corpus: what each memory step buys on every corpus model.
 *
 *   bench_corpus [CORPUS_DIR] [-v]
 *
 * For every .onnx under CORPUS_DIR/models (default $MEMPLAN_CORPUS or
 * /work/shared/corpus) that loads (declared shapes, the model's bindings
 * from bench/support/corpus_files.c's table, every other symbolic input
 * dim bound to 1, as bench_onnx_conformance does), plans the graph five
 * ways and prints one markdown table row per model:
 *   no reuse    the sum of all arena tensors (no_reuse_bytes);
 *   lifetimes   the lower bound without in-place reuse (--no-inplace);
 *   in-place    the lower bound with in-place reuse (the default);
 *   fuse        the lower bound with in-place and --fuse;
 *   reorder     the lower bound with in-place and --reorder;
 *   arena       the default plan's arena, arena / in-place LB, and whether
 *               it is proven optimal (arena == LB).
 * Every plan goes through mp_verify_plan. The summary counts the models
 * within 1.005x of the in-place-aware bound (issue 4's target). Exits 0 (a
 * measurement); skips with a message when the corpus or ONNX support is
 * absent. */
#include "base.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef MP_WITH_ONNX
int main(void)
{
    printf("bench_corpus: skipped: memplan was built without ONNX support\n");
    return 0;
}
#else
#include "onnx.pb-c.h"
#include "support/corpus_files.h"

static double cpu_now(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

/* Plans g with the given switches; 0 on success (plan verified). */
static int plan_one(mp_graph *g, int inplace, int fuse, int reorder,
                    mp_offsets_method method, mp_plan **out, char *why,
                    size_t cap)
{
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.inplace = inplace;
    o.fuse = fuse;
    o.reorder = reorder;
    o.method = method;
    mp_ctx *ctx = mp_graph_ctx(g);
    mp_status st = mp_plan_create(g, &o, out);
    if (st == MP_OK)
        st = mp_verify_plan(g, *out);
    if (st != MP_OK) {
        snprintf(why, cap, "%s%s%s%s: %s", inplace ? "" : "no-inplace ",
                 fuse ? "fuse " : "", reorder ? "reorder " : "",
                 mp_status_name(st), mp_ctx_message(ctx));
        return -1;
    }
    return 0;
}

static void mib(uint64_t b, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2f", (double)b / (1024.0 * 1024.0));
}

int main(int argc, char **argv)
{
    int verbose;
    char **files;
    size_t n;
    if (mpb_corpus_models(argc, argv, "bench_corpus", &verbose, &files, &n))
        return 0;
    printf("| model | nodes | no reuse MiB | lifetimes LB | in-place LB | "
           "fuse LB | reorder LB | arena MiB | arena/LB | optimal | CPU s |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
    int loaded = 0, within = 0, optimal = 0, failed = 0;
    double worst = 0;
    const char *worst_name = "";
    for (size_t i = 0; i < n; i++) {
        const char *name = strstr(files[i], "/models/");
        name = name ? name + 8 : files[i];
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        double t0 = cpu_now();
        if (!ctx || mpb_load_onnx_dims1(ctx, files[i], &g) != MP_OK) {
            if (verbose)
                fprintf(stderr, "%s: not loaded: %s\n", name,
                        ctx ? mp_ctx_message(ctx) : "no memory");
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            continue;
        }
        loaded++;
        mp_plan *pl = NULL, *pi = NULL, *pf = NULL, *pr = NULL;
        char why[1200] = "";
        int bad = plan_one(g, 0, 0, 0, MP_OFFSETS_NAIVE, &pl, why, sizeof why) ||
                  plan_one(g, 1, 0, 0, MP_OFFSETS_AUTO, &pi, why, sizeof why) ||
                  plan_one(g, 1, 1, 0, MP_OFFSETS_NAIVE, &pf, why, sizeof why) ||
                  plan_one(g, 1, 0, 1, MP_OFFSETS_NAIVE, &pr, why, sizeof why);
        double cpu = cpu_now() - t0;
        if (bad) {
            failed++;
            printf("| %s | %u | failed: %.200s |\n", name,
                   mp_graph_num_nodes(g), why);
        } else {
            const mp_figures *fl = mp_plan_figures(pl), *fi = mp_plan_figures(pi),
                             *ff = mp_plan_figures(pf), *fr = mp_plan_figures(pr);
            char a[32], b[32], c[32], d[32], e[32], f[32];
            mib(fl->no_reuse_bytes, a, sizeof a);
            mib(fl->lower_bound_bytes, b, sizeof b);
            mib(fi->lower_bound_bytes, c, sizeof c);
            mib(ff->lower_bound_bytes, d, sizeof d);
            mib(fr->lower_bound_bytes, e, sizeof e);
            mib(fi->arena_bytes, f, sizeof f);
            double ratio = fi->lower_bound_bytes
                               ? (double)fi->arena_bytes /
                                     (double)fi->lower_bound_bytes
                               : 1.0;
            int opt = fi->arena_bytes == fi->lower_bound_bytes;
            within += fi->arena_bytes * 1000 <= fi->lower_bound_bytes * 1005;
            optimal += opt;
            if (ratio > worst) {
                worst = ratio;
                worst_name = name;
            }
            printf("| %s | %u | %s | %s | %s | %s | %s | %s | %.4f | %s | "
                   "%.2f |\n",
                   name, mp_graph_num_nodes(g), a, b, c, d, e, f, ratio,
                   opt ? "yes" : "no", cpu);
        }
        fflush(stdout);
        mp_plan_destroy(pl);
        mp_plan_destroy(pi);
        mp_plan_destroy(pf);
        mp_plan_destroy(pr);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    printf("\ncorpus: %zu models, %d load; %d planned and verified (%d "
           "failed); %d within 1.005x of the in-place LB, %d proven optimal; "
           "worst arena/LB %.4f (%s)\n",
           n, loaded, loaded - failed, failed, within, optimal, worst,
           worst > 1.0 ? worst_name : "every model at its LB");
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return 0;
}
#endif
