/* Allocation-failure torture (issue 9): each scenario runs once with a
 * counting allocator to learn how many allocations the library makes, then
 * once more for every k, with the k-th allocation failed by the hook.
 * Every run must end with an error code (MP_ERR_NOMEM: the failure is
 * neither swallowed nor turned into another error), and after the
 * handles are destroyed no allocation may be left (the allocator counts
 * live blocks; ASan checks the rest). Scenarios: a JSON graph loaded,
 * planned, verified, its plan written and read back and verified again;
 * a graph built through the builder planned under pools and pins; an ONNX
 * model loaded and planned (when compiled in and the corpus is present);
 * the other planning paths (reordering, fused chains, every offsets
 * method, training graph, recompute, lints, HTML report); the BERT
 * encoder layer and the Loop/If subgraphs of examples/ loaded and
 * planned. */
#include "base.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct torture {
    long calls;      /* allocations attempted (malloc, realloc) */
    long fail_at;    /* 1-based; 0: never */
    long live;       /* blocks handed out and not freed */
    int failed;      /* the failure was injected */
} torture;

static void *t_malloc(void *u, size_t n)
{
    torture *t = u;
    if (++t->calls == t->fail_at) {
        t->failed = 1;
        return NULL;
    }
    void *p = malloc(n ? n : 1);
    if (p)
        t->live++;
    return p;
}

static void *t_realloc(void *u, void *p, size_t n)
{
    torture *t = u;
    if (++t->calls == t->fail_at) {
        t->failed = 1;
        return NULL;
    }
    void *q = realloc(p, n ? n : 1);
    if (q && !p)
        t->live++;
    return q;
}

static void t_free(void *u, void *p)
{
    torture *t = u;
    if (p)
        t->live--;
    free(p);
}

typedef mp_status (*scenario_fn)(mp_ctx *ctx, const void *arg);

/* Runs fn once counting, then failing every allocation in turn. Returns
 * the number of allocations. */
static long torture_run(const char *name, scenario_fn fn, const void *arg)
{
    torture t = {0, 0, 0, 0};
    mp_allocator a = {t_malloc, t_realloc, t_free, &t};
    mp_ctx *ctx = mp_ctx_create(&a);
    CU_ASSERT_FATAL(ctx != NULL);
    mp_status st = fn(ctx, arg);
    if (st != MP_OK)
        printf("\n  %s: %s: %s\n", name, mp_status_name(st),
               mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    mp_ctx_destroy(ctx);
    CU_ASSERT_EQUAL(t.live, 0);
    long total = t.calls;
    CU_ASSERT(total > 1);
    int reported = 0;
    for (long k = 1; k <= total; k++) {
        torture u = {0, k, 0, 0};
        mp_allocator b = {t_malloc, t_realloc, t_free, &u};
        mp_ctx *c = mp_ctx_create(&b);
        if (!c) {
            /* the context itself was the allocation failed */
            CU_ASSERT_EQUAL(k, 1);
            CU_ASSERT_EQUAL(u.live, 0);
            continue;
        }
        mp_status s = fn(c, arg);
        int bad = s != MP_ERR_NOMEM || !u.failed;
        if (bad && reported < 5) {
            printf("\n  %s: allocation %ld of %ld failed, the run returned "
                   "%s (%s)",
                   name, k, total, mp_status_name(s), mp_ctx_message(c));
            reported++;
        }
        CU_ASSERT(!bad);
        mp_ctx_destroy(c);
        if (u.live != 0 && reported < 5) {
            printf("\n  %s: allocation %ld of %ld failed: %ld blocks leaked",
                   name, k, total, u.live);
            reported++;
        }
        CU_ASSERT_EQUAL(u.live, 0);
    }
    return total;
}

/* ---- scenarios --------------------------------------------------------------- */
static const char *mlp_json =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"mlp\",\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [8, 64], \"kind\": \"input\"},\n"
    "  {\"name\": \"w1\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},\n"
    "  {\"name\": \"w2\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},\n"
    "  {\"name\": \"ys\", \"dtype\": \"int64\", \"shape\": [3], \"kind\": \"constant\"},\n"
    "  {\"name\": \"h1\", \"dtype\": \"float32\", \"shape\": [8, 64]},\n"
    "  {\"name\": \"a1\", \"dtype\": \"float32\", \"shape\": [8, 64]},\n"
    "  {\"name\": \"h2\", \"dtype\": \"float32\", \"shape\": [8, 64]},\n"
    "  {\"name\": \"s\", \"dtype\": \"float32\", \"shape\": [8, 64]},\n"
    "  {\"name\": \"r\", \"dtype\": \"float32\", \"shape\": [8, 64]},\n"
    "  {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [8, 8, 8], \"kind\": \"output\"}\n"
    " ],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"fc1\", \"op\": \"MatMul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"h1\"]},\n"
    "  {\"name\": \"relu1\", \"op\": \"Relu\", \"inputs\": [\"h1\"], \"outputs\": [\"a1\"]},\n"
    "  {\"name\": \"fc2\", \"op\": \"MatMul\", \"inputs\": [\"a1\", \"w2\"], \"outputs\": [\"h2\"]},\n"
    "  {\"name\": \"skip\", \"op\": \"Add\", \"inputs\": [\"h2\", \"a1\"], \"outputs\": [\"s\"]},\n"
    "  {\"name\": \"relu2\", \"op\": \"Relu\", \"inputs\": [\"s\"], \"outputs\": [\"r\"]},\n"
    "  {\"name\": \"reshape\", \"op\": \"Reshape\", \"inputs\": [\"r\", \"ys\"], \"outputs\": [\"y\"]}\n"
    " ],\n"
    " \"outputs\": [\"y\"]\n"
    "}\n";

typedef struct json_arg {
    const char *text;    /* graph text, or NULL: read `path` */
    const char *path;
    const char *plan_path;
} json_arg;

/* load, plan, verify, plan to JSON (file and string), read the plan back,
 * verify it, graph back to JSON text */
static mp_status s_json(mp_ctx *ctx, const void *arg)
{
    const json_arg *ja = arg;
    mp_graph *g = NULL;
    mp_plan *p = NULL, *q = NULL;
    char *s = NULL, *gs = NULL;
    mp_status st = ja->text ? mp_graph_load_json_string(ctx, ja->text, "mlp",
                                                        &g)
                            : mp_graph_load(ctx, ja->path, &g);
    if (!st)
        st = mp_plan_create(g, NULL, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (!st)
        st = mp_plan_to_json_string(p, &s);
    if (!st)
        st = mp_plan_save_json(p, ja->plan_path);
    if (!st)
        st = mp_plan_load_json(g, ja->plan_path, &q);
    if (!st)
        st = mp_verify_plan(g, q);
    if (!st)
        st = mp_graph_to_json_string(g, &gs);
    mp_free(ctx, s);
    mp_free(ctx, gs);
    mp_plan_destroy(q);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    return st;
}

/* the builder, constraints with two pools and a pin, planning, the
 * verifiers and the estimate */
static mp_status s_pools(mp_ctx *ctx, const void *arg)
{
    (void)arg;
    mp_graph *g = NULL;
    mp_constraints *c = NULL;
    mp_plan *p = NULL;
    mp_status st = mp_graph_create(ctx, &g);
    uint32_t id[8];
    const char *names[8] = {"x", "w", "a", "b", "c", "d", "e", "y"};
    uint64_t bytes[8] = {1024, 4096, 8192, 2048, 1024, 4096, 512, 256};
    for (int i = 0; i < 8 && !st; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_UNDEFINED, -1, NULL, bytes[i],
                            i == 0 ? MP_KIND_INPUT
                                   : i == 1 ? MP_KIND_WEIGHT
                                            : MP_KIND_ACTIVATION};
        st = mp_graph_add_tensor(g, &d, &id[i]);
    }
    for (int i = 2; i < 8 && !st; i++) {
        uint32_t in[2] = {id[i - 1 == 1 ? 0 : i - 1], id[1]};
        char nm[8];
        snprintf(nm, sizeof nm, "n%d", i);
        mp_node_desc d = {nm, "Op", NULL, in, 2, &id[i], 1, MP_PHASE_FORWARD};
        st = mp_graph_add_node(g, &d, NULL);
        if (!st)
            st = mp_graph_set_attr_int(g, (uint32_t)(i - 2), "k", i);
    }
    if (!st)
        st = mp_graph_mark_output(g, id[7]);
    if (!st)
        st = mp_graph_finalize(g);
    if (!st)
        st = mp_constraints_create(ctx, &c);
    mp_pool_desc sram = {"sram", 4096, 1e12, 0}, dram = {"dram", UINT64_MAX,
                                                         1e11, 0};
    if (!st)
        st = mp_constraints_add_pool(c, &sram, NULL);
    if (!st)
        st = mp_constraints_add_pool(c, &dram, NULL);
    if (!st)
        st = mp_constraints_pin(c, id[2], 1, 0);
    if (!st)
        st = mp_constraints_align(c, id[3], 1024);
    if (!st)
        st = mp_plan_create_constrained(g, NULL, c, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (!st)
        st = mp_verify_constraints(g, p, c);
    double secs;
    if (!st)
        st = mp_plan_estimate_seconds(p, c, &secs);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    mp_graph_destroy(g);
    return st;
}

typedef struct onnx_arg {
    const unsigned char *data;
    size_t len;
} onnx_arg;

static mp_status s_onnx(mp_ctx *ctx, const void *arg)
{
    const onnx_arg *oa = arg;
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    mp_status st = mp_graph_load_onnx_buffer(ctx, oa->data, oa->len, "model",
                                             NULL, &g);
    if (!st)
        st = mp_plan_create(g, NULL, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    return st;
}

/* the other planning paths on the same graph: operator reordering, fused
 * chains, each offsets method, the training graph, recompute under a
 * budget, lints, the HTML report */
static mp_status s_options(mp_ctx *ctx, const void *arg)
{
    const json_arg *ja = arg;
    mp_graph *g = NULL, *tg = NULL;
    mp_plan *p = NULL;
    mp_lints *l = NULL;
    mp_status st = mp_graph_load_json_string(ctx, ja->text, "mlp", &g);
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.reorder = 1;
    o.fuse = 1;
    if (!st)
        st = mp_plan_create(g, &o, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (!st)
        st = mp_plan_lint(p, NULL, &l);
    if (!st)
        st = mp_plan_write_html(p, ja->plan_path, NULL);
    mp_lints_destroy(l);
    mp_plan_destroy(p);
    p = NULL;
    for (int m = MP_OFFSETS_SIZE_BESTFIT; m <= MP_OFFSETS_EXACT && !st; m++) {
        mp_plan_options_init(&o);
        o.method = (mp_offsets_method)m;
        st = mp_plan_create(g, &o, &p);
        if (!st)
            st = mp_verify_plan(g, p);
        mp_plan_destroy(p);
        p = NULL;
    }
    if (!st)
        st = mp_train_graph(g, NULL, &tg, NULL);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_CHEN_GREEDY;
    mp_remat_result rr;
    if (!st)
        st = mp_remat_plan(tg, &ro, NULL, &p, &rr);
    if (!st)
        st = mp_verify_plan(tg, p);
    mp_plan_destroy(p);
    mp_graph_destroy(tg);
    mp_graph_destroy(g);
    return st;
}

/* ---- tests --------------------------------------------------------------------- */
static char plan_path[256];

static void make_plan_path(void)
{
    const char *t = mp_test_write_temp(".plan.json", "");
    CU_ASSERT_FATAL(t != NULL);
    snprintf(plan_path, sizeof plan_path, "%s", t);
}

static void t_json(void)
{
    make_plan_path();
    json_arg a = {mlp_json, NULL, plan_path};
    long n = torture_run("json mlp", s_json, &a);
    printf("\n  json mlp: %ld allocations, each failed in turn ", n);
    remove(plan_path);
}

static void t_options(void)
{
    make_plan_path();
    json_arg a = {mlp_json, NULL, plan_path};
    long n = torture_run("options", s_options, &a);
    printf("\n  reorder, fuse, methods, train, remat, lints, html: %ld "
           "allocations, each failed in turn ", n);
    remove(plan_path);
}

/* examples/: the BERT encoder layer, and loop_if.json (subgraphs: a Loop
 * whose body holds an If) */
static void t_transformer(void)
{
    static const char *const names[] = {"transformer_block", "loop_if"};
    for (size_t i = 0; i < 2; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s.json", MP_SOURCE_DIR,
                 names[i]);
        make_plan_path();
        json_arg a = {NULL, path, plan_path};
        long n = torture_run(names[i], s_json, &a);
        printf("\n  %s: %ld allocations, each failed in turn ", names[i], n);
        remove(plan_path);
    }
}

static void t_pools(void)
{
    long n = torture_run("pools", s_pools, NULL);
    printf("\n  builder + pools: %ld allocations, each failed in turn ", n);
}

static void t_onnx(void)
{
    if (!mp_onnx_available()) {
        printf("\n  skipped: built without ONNX\n");
        return;
    }
    const char *cands[] = {
        "/work/shared/corpus/models/onnx2c/mnist.onnx",
        MP_SOURCE_DIR "/../shared/corpus/models/onnx2c/mnist.onnx"};
    FILE *f = NULL;
    for (int i = 0; i < 2 && !f; i++)
        f = fopen(cands[i], "rb");
    if (!f) {
        printf("\n  skipped: corpus model onnx2c/mnist.onnx not present\n");
        return;
    }
    static unsigned char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CU_ASSERT_FATAL(len > 0 && len < sizeof buf);
    onnx_arg a = {buf, len};
    long n = torture_run("onnx mnist", s_onnx, &a);
    printf("\n  onnx mnist: %ld allocations, each failed in turn ", n);
}

static CU_TestInfo tests[] = {
    {"JSON graph: load, plan, verify, plan JSON out and in", t_json},
    {"builder, pools, pins, verifiers, estimate", t_pools},
    {"ONNX: load, plan, verify (corpus mnist)", t_onnx},
    {"reorder, fuse, offsets methods, train, remat, lints, HTML", t_options},
    {"examples/transformer_block.json and loop_if.json", t_transformer},
    CU_TEST_INFO_NULL};

void mp_register_alloc_fail(void) { mp_test_add_suite("alloc_fail", tests); }
