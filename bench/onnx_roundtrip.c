/* bench_onnx_roundtrip: the ONNX writer on every corpus model.
 *
 *   bench_onnx_roundtrip [CORPUS_DIR] [-v] [--node-tests]
 *
 * For every .onnx under CORPUS_DIR/models (default $MEMPLAN_CORPUS or
 * /work/shared/corpus) that loads (declared shapes, every symbolic input
 * dim bound to 1, as bench_corpus does):
 *   onnx   the graph written as ONNX (mp_graph_to_onnx) and read back;
 *   json   the graph written as JSON (If/Loop/Scan bodies as subgraph
 *          attributes) and read back, then written as ONNX and read back
 *          (ONNX -> JSON -> ONNX): both the JSON graph and the final ONNX
 *          one are compared;
 * each must give the same tensors (name, bytes, dtype and shape where
 * known, effective kind), the same subgraphs (count, formal inputs and
 * outputs, and their tensors alike, to any depth) and the same plan
 * (arena, lower bound, persistent and peak bytes), verified by
 * mp_verify_plan. Prints one row per model and a summary; exits 1 when a
 * model that loads fails either round trip, 0 otherwise; skips with a
 * message when the corpus or ONNX support is absent. --node-tests also
 * round-trips every model of CORPUS_DIR/onnx-node that loads and plans
 * (rows only for failures; a summary line; not part of the exit status). */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef MP_WITH_ONNX
int main(void)
{
    printf("bench_onnx_roundtrip: skipped: memplan was built without ONNX "
           "support\n");
    return 0;
}
#else
#include "support/corpus_files.h"

/* First difference between the tensors of a and b (a's sized tensors must
 * all be in b, alike), or 0. */
static int diff_tensors(const mp_graph *a, const mp_graph *b, char *why,
                        size_t cap)
{
    for (size_t i = 0; i < a->n_tensors; i++) {
        const mp__tensor *t = &a->tensors[i];
        if (!(t->flags & MP__TF_SIZE_KNOWN))
            continue;
        uint32_t id;
        if (mp_graph_find_tensor(b, t->name, &id) != MP_OK) {
            snprintf(why, cap, "tensor '%s' missing", t->name);
            return -1;
        }
        const mp__tensor *u = &b->tensors[id];
        int ka = t->kind == MP_KIND_OUTPUT ? MP_KIND_ACTIVATION : t->kind;
        int kb = u->kind == MP_KIND_OUTPUT ? MP_KIND_ACTIVATION : u->kind;
        if (u->bytes != t->bytes || ka != kb) {
            snprintf(why, cap, "tensor '%s': %llu bytes (%s), back %llu (%s)",
                     t->name, (unsigned long long)t->bytes,
                     mp_kind_name((mp_tensor_kind)ka),
                     (unsigned long long)u->bytes,
                     mp_kind_name((mp_tensor_kind)kb));
            return -1;
        }
        if (t->rank >= 0 && !(t->flags & MP__TF_BYTES_GIVEN) &&
            (u->rank != t->rank || u->dtype != t->dtype ||
             (t->rank > 0 && memcmp(u->dims, t->dims,
                                    (size_t)t->rank * sizeof *t->dims)))) {
            snprintf(why, cap, "tensor '%s': dtype or shape differs",
                     t->name);
            return -1;
        }
    }
    return 0;
}

/* diff_tensors, and the same subgraphs to any depth: as many, with the
 * same formal inputs and outputs (by name) and alike tensors. */
static int diff_graphs(const mp_graph *a, const mp_graph *b, char *why,
                       size_t cap, unsigned depth)
{
    if (diff_tensors(a, b, why, cap))
        return -1;
    if (a->n_subgraphs != b->n_subgraphs || depth > 64) {
        snprintf(why, cap, "%zu subgraphs, back %zu", a->n_subgraphs,
                 b->n_subgraphs);
        return -1;
    }
    for (size_t i = 0; i < a->n_subgraphs; i++) {
        const mp_graph *x = a->subgraphs[i], *y = b->subgraphs[i];
        bool same_io = x->n_sub_inputs == y->n_sub_inputs &&
                       x->n_sub_outputs == y->n_sub_outputs;
        for (uint32_t k = 0; same_io && k < x->n_sub_inputs; k++)
            same_io = strcmp(x->tensors[x->sub_inputs[k]].name,
                             y->tensors[y->sub_inputs[k]].name) == 0;
        for (uint32_t k = 0; same_io && k < x->n_sub_outputs; k++)
            same_io = strcmp(x->tensors[x->sub_outputs[k]].name,
                             y->tensors[y->sub_outputs[k]].name) == 0;
        if (!same_io) {
            snprintf(why, cap, "subgraph %zu: formal inputs or outputs "
                     "differ", i);
            return -1;
        }
        if (diff_graphs(x, y, why, cap, depth + 1)) {
            size_t l = strlen(why);
            snprintf(why + l, cap - l, " (in subgraph %zu)", i);
            return -1;
        }
    }
    return 0;
}

static int plan_of(mp_graph *g, mp_figures *f, char *why, size_t cap)
{
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *p = NULL;
    mp_status st = mp_plan_create(g, &o, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (st) {
        snprintf(why, cap, "plan: %s: %s", mp_status_name(st),
                 mp_ctx_message(mp_graph_ctx(g)));
        mp_plan_destroy(p);
        return -1;
    }
    *f = *mp_plan_figures(p);
    mp_plan_destroy(p);
    return 0;
}

/* g written as ONNX and read back into *out */
static int via_onnx(mp_graph *g, mp_graph **out, size_t *bytes, char *why,
                    size_t cap)
{
    mp_ctx *ctx = mp_graph_ctx(g);
    void *buf = NULL;
    size_t len = 0;
    mp_status st = mp_graph_to_onnx(g, &buf, &len);
    if (!st)
        st = mp_graph_load_onnx_buffer(ctx, buf, len, "written.onnx", NULL,
                                       out);
    mp_free(ctx, buf);
    *bytes = len;
    if (st) {
        snprintf(why, cap, "write/read ONNX: %s: %s", mp_status_name(st),
                 mp_ctx_message(ctx));
        return -1;
    }
    return 0;
}

/* 0 when h has g's tensors and plan */
static int same(mp_graph *g, const mp_figures *fg, mp_graph *h, char *why,
                size_t cap)
{
    mp_figures fh;
    if (diff_graphs(g, h, why, cap, 0) || plan_of(h, &fh, why, cap))
        return -1;
    if (fh.arena_bytes != fg->arena_bytes ||
        fh.lower_bound_bytes != fg->lower_bound_bytes ||
        fh.persistent_bytes != fg->persistent_bytes ||
        fh.peak_bytes != fg->peak_bytes) {
        snprintf(why, cap, "plan differs: arena %llu vs %llu, LB %llu vs "
                 "%llu, persistent %llu vs %llu",
                 (unsigned long long)fg->arena_bytes,
                 (unsigned long long)fh.arena_bytes,
                 (unsigned long long)fg->lower_bound_bytes,
                 (unsigned long long)fh.lower_bound_bytes,
                 (unsigned long long)fg->persistent_bytes,
                 (unsigned long long)fh.persistent_bytes);
        return -1;
    }
    return 0;
}

typedef struct tally {
    unsigned loaded, ok_onnx, ok_json, with_bodies;
} tally;

/* Both round trips of one model; a row when rows (always) or when a path
 * fails (rows < 0: failures only). */
static void round_trip(const char *path, const char *name, int rows,
                       int verbose, tally *t)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL, *j = NULL, *k = NULL;
    char why[1024] = "", why2[1024] = "", whyj[1000] = "";
    mp_figures fg;
    if (mpb_load_onnx_dims1(ctx, path, &g) != MP_OK ||
        plan_of(g, &fg, why, sizeof why)) {
        if (verbose)
            printf("| %s | does not load or plan: %s | | | | |\n", name,
                   mp_ctx_message(ctx));
        goto next;
    }
    t->loaded++;
    t->with_bodies += g->n_subgraphs > 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        sb.st_size = 0;
    size_t out_bytes = 0, out2;
    int r1 = via_onnx(g, &h, &out_bytes, why, sizeof why);
    if (!r1)
        r1 = same(g, &fg, h, why, sizeof why);
    char *s = NULL;
    int r2 = -1;
    mp_status st = mp_graph_to_json_string(g, &s);
    if (!st)
        st = mp_graph_load_json_string(ctx, s, "written.json", &j);
    mp_free(ctx, s);
    if (st)
        snprintf(why2, sizeof why2, "JSON: %s: %s", mp_status_name(st),
                 mp_ctx_message(ctx));
    else if (same(g, &fg, j, whyj, sizeof whyj))
        snprintf(why2, sizeof why2, "JSON: %s", whyj);
    else if (!via_onnx(j, &k, &out2, why2, sizeof why2))
        r2 = same(g, &fg, k, why2, sizeof why2);
    t->ok_onnx += !r1;
    t->ok_json += !r2;
    if (rows > 0 || r1 || r2)
        printf("| %s | %zu | %lld | %zu | %s%s | %s%s |\n", name,
               g->n_tensors, (long long)sb.st_size, out_bytes,
               r1 ? "FAIL: " : "same", r1 ? why : "", r2 ? "FAIL: " : "same",
               r2 ? why2 : "");
next:
    mp_graph_destroy(k);
    mp_graph_destroy(j);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

int main(int argc, char **argv)
{
    int verbose, node_tests = 0;
    char **files;
    size_t n;
    /* --node-tests: also every model of CORPUS_DIR/onnx-node (a row only
     * when a path fails) */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--node-tests") == 0) {
            node_tests = 1;
            memmove(argv + i, argv + i + 1,
                    (size_t)(argc - i) * sizeof *argv);
            argc--;
            i--;
        }
    if (mpb_corpus_models(argc, argv, "bench_onnx_roundtrip", &verbose,
                          &files, &n))
        return 0;
    printf("| model | tensors | ONNX bytes in | ONNX bytes out | onnx | "
           "json->onnx |\n|---|---|---|---|---|---|\n");
    tally t = {0, 0, 0, 0};
    clock_t c0 = clock();
    for (size_t i = 0; i < n; i++) {
        const char *name = strstr(files[i], "/models/");
        round_trip(files[i], name ? name + 8 : files[i], 1, verbose, &t);
        free(files[i]);
    }
    free(files);
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("\n%zu models, %u load and plan (%u with If/Loop/Scan bodies); "
           "ONNX -> ONNX same tensors and plan: %u/%u; ONNX -> JSON -> "
           "ONNX: %u/%u (%.2f s CPU)\n",
           n, t.loaded, t.with_bodies, t.ok_onnx, t.loaded, t.ok_json,
           t.loaded, cpu);
    if (node_tests) {
        const char *dir = getenv("MEMPLAN_CORPUS");
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "-v") != 0)
                dir = argv[i];
        char ndir[4096];
        snprintf(ndir, sizeof ndir, "%s/onnx-node",
                 dir ? dir : "/work/shared/corpus");
        char **nf = NULL;
        size_t nn = 0, cap = 0;
        mpb_list_onnx(ndir, 0, NULL, &nf, &nn, &cap);
        if (nn)
            qsort(nf, nn, sizeof *nf, mpb_cmp_str);
        tally u = {0, 0, 0, 0};
        c0 = clock();
        for (size_t i = 0; i < nn; i++) {
            const char *name = strrchr(nf[i], '/');
            round_trip(nf[i], name ? name + 1 : nf[i], -1, verbose, &u);
            free(nf[i]);
        }
        free(nf);
        printf("%zu onnx-node models, %u load and plan (%u with bodies); "
               "ONNX -> ONNX same tensors and plan: %u/%u; ONNX -> JSON -> "
               "ONNX: %u/%u (%.2f s CPU)\n",
               nn, u.loaded, u.with_bodies, u.ok_onnx, u.loaded, u.ok_json,
               u.loaded, (double)(clock() - c0) / CLOCKS_PER_SEC);
    }
    return t.ok_onnx == t.loaded && t.ok_json == t.loaded ? 0 : 1;
}
#endif
