/* Operator order (issue 4): hand-computed before/after peaks, the exact
 * method against brute force over every topological order on small
 * random DAGs, the heuristics on larger ones, and every reordered plan
 * through the verifier. */
#include "ir.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 1024u

static mp_ctx *ctx;
static mp_graph *g;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static void add_n(const char *name, const char *op, uint32_t *in,
                  uint32_t nin, uint32_t *out, uint32_t nout)
{
    mp_node_desc d = {name, op, NULL, in, nin, out, nout, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

/* Two branches from x; the graph lists both big convolutions first:
 *   A: a(8K) = Conv(x)   B: b(8K) = Conv(x)
 *   A2: a2(1K) = Conv(a) B2: b2(1K) = Conv(b)   C: c(2K) = Concat(a2, b2)
 * Given order A, B, A2, B2, C: at B, x + a + b = 17K.
 * Best: A, A2, B, B2, C: A2 holds x + a + a2 = 10K, B x + a2 + b = 10K. */
static void build_branches(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx && mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 8 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 8 * K);
    uint32_t a2 = add_t("a2", MP_KIND_ACTIVATION, K);
    uint32_t b2 = add_t("b2", MP_KIND_ACTIVATION, K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 2 * K);
    uint32_t ix[] = {x, w}, oa[] = {a}, ob[] = {b}, ia[] = {a, w},
             ib[] = {b, w}, oa2[] = {a2}, ob2[] = {b2}, ic[] = {a2, b2},
             oc[] = {c};
    add_n("A", "Conv", ix, 2, oa, 1);
    add_n("B", "Conv", ix, 2, ob, 1);
    add_n("A2", "Conv", ia, 2, oa2, 1);
    add_n("B2", "Conv", ib, 2, ob2, 1);
    add_n("C", "Concat", ic, 2, oc, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, c), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
}

static void destroy(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    g = NULL;
    ctx = NULL;
}

static void test_branches(void)
{
    build_branches();
    mp_plan_options o;
    mp_plan_options_init(&o);
    for (int exact = 1; exact >= 0; exact--) {
        o.reorder_exact_max = exact ? 20 : 0; /* exact, then heuristics */
        uint32_t order[5];
        uint64_t before = 0, after = 0;
        CU_ASSERT_EQUAL(mp_order_solve(g, &o, order, &before, &after), MP_OK);
        CU_ASSERT_EQUAL(before, 17 * K);
        CU_ASSERT_EQUAL(after, 10 * K);
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create_ordered(g, order, &o, &p),
                              MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 10 * K);
        mp_plan_destroy(p);
        /* through mp_plan_create */
        o.reorder = 1;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_figures(p)->order_lb_before, 17 * K);
        CU_ASSERT_EQUAL(mp_plan_figures(p)->order_lb_after, 10 * K);
        CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 10 * K);
        mp_plan_destroy(p);
        o.reorder = 0;
    }
    /* without reordering the figures say nothing about order */
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 17 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->order_lb_before, 0);
    mp_plan_destroy(p);
    /* an order that is not topological is refused */
    uint32_t bad[5] = {2, 0, 1, 3, 4};
    CU_ASSERT_EQUAL(mp_plan_create_ordered(g, bad, &o, &p),
                    MP_ERR_INVALID_ARG);
    uint32_t dup[5] = {0, 0, 1, 3, 4};
    CU_ASSERT_EQUAL(mp_plan_create_ordered(g, dup, &o, &p),
                    MP_ERR_INVALID_ARG);
    destroy();
}

/* Random DAG: n nodes, each reading one or two earlier tensors; Relu and
 * Add keep their first input's size (so in-place applies), Conv makes a
 * random size. */
static void build_random(uint64_t *rng, uint32_t n)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx && mp_graph_create(ctx, &g) == MP_OK);
    uint64_t sizes[64];
    uint32_t ids[64], nt = 0;
    char name[32];
    ids[nt] = add_t("x", MP_KIND_INPUT, 512);
    sizes[nt++] = 512;
    uint32_t w = add_t("w", MP_KIND_WEIGHT, 256);
    for (uint32_t v = 0; v < n; v++) {
        static const char *const ops[] = {"Conv", "Relu", "Add", "Conv"};
        const char *op = ops[mp_test_rand(rng) % 4];
        uint32_t i0 = nt - 1 - (uint32_t)(mp_test_rand(rng) % (nt < 4 ? nt : 4));
        uint32_t i1 = (uint32_t)(mp_test_rand(rng) % nt);
        uint64_t sz = strcmp(op, "Conv") == 0
                          ? 256 * (1 + mp_test_rand(rng) % 6)
                          : sizes[i0];
        snprintf(name, sizeof name, "t%u", (unsigned)v);
        ids[nt] = add_t(name, MP_KIND_ACTIVATION, sz);
        sizes[nt] = sz;
        uint32_t in[2] = {ids[i0], strcmp(op, "Conv") == 0 ? w : ids[i1]};
        if (strcmp(op, "Add") == 0 && sizes[i1] != sz)
            in[1] = ids[i0];
        uint32_t out[1] = {ids[nt]};
        nt++;
        snprintf(name, sizeof name, "n%u", (unsigned)v);
        add_n(name, op, in, strcmp(op, "Relu") == 0 ? 1 : 2, out, 1);
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, ids[nt - 1]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
}

/* Minimum plan lower bound over every topological order (real plans). */
static void brute(uint32_t *order, uint32_t k, uint8_t *done,
                  const mp_plan_options *o, uint64_t *best, uint32_t *count)
{
    uint32_t n = mp_graph_num_nodes(g);
    if (k == n) {
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create_ordered(g, order, o, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        uint64_t lb = mp_plan_figures(p)->lower_bound_bytes;
        if (lb < *best)
            *best = lb;
        (*count)++;
        mp_plan_destroy(p);
        return;
    }
    for (uint32_t v = 0; v < n; v++) {
        if (done[v])
            continue;
        const mp__node *nd = &g->nodes[v];
        bool ready = true;
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t pr = g->tensors[nd->inputs[i]].producer;
            if (pr != MP_NONE && !done[pr])
                ready = false;
        }
        if (!ready)
            continue;
        done[v] = 1;
        order[k] = v;
        brute(order, k + 1, done, o, best, count);
        done[v] = 0;
    }
}

static void test_exact_vs_brute(void)
{
    uint64_t rng = 0x1234567;
    for (int trial = 0; trial < 24; trial++) {
        uint32_t n = 3 + (uint32_t)(mp_test_rand(&rng) % 5); /* 3..7 */
        build_random(&rng, n);
        for (int inplace = 0; inplace <= 1; inplace++) {
            mp_plan_options o;
            mp_plan_options_init(&o);
            o.inplace = inplace;
            o.method = MP_OFFSETS_NAIVE; /* the bound does not need offsets */
            uint32_t order[16], scratch[16];
            uint8_t done[16] = {0};
            uint64_t before, after, best = UINT64_MAX;
            uint32_t count = 0;
            CU_ASSERT_EQUAL_FATAL(mp_order_solve(g, &o, order, &before,
                                                 &after), MP_OK);
            brute(scratch, 0, done, &o, &best, &count);
            CU_ASSERT(count >= 1);
            CU_ASSERT_EQUAL(after, best);
            mp_plan *p = NULL;
            CU_ASSERT_EQUAL_FATAL(mp_plan_create_ordered(g, order, &o, &p),
                                  MP_OK);
            CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
            /* the model's objective is the plan's lower bound */
            CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, after);
            mp_plan_destroy(p);
            CU_ASSERT_EQUAL(mp_plan_create(g, &o, &p), MP_OK);
            CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, before);
            mp_plan_destroy(p);
        }
        destroy();
    }
}

/* Larger DAGs: heuristics (list scheduling + local search) never worse
 * than the given order, deterministic, verified. */
static void test_heuristics(void)
{
    uint64_t rng = 99;
    for (int trial = 0; trial < 6; trial++) {
        build_random(&rng, 40);
        mp_plan_options o;
        mp_plan_options_init(&o);
        o.reorder = 1;
        mp_plan *p = NULL, *q = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        const mp_figures *f = mp_plan_figures(p);
        CU_ASSERT(f->order_lb_after <= f->order_lb_before);
        CU_ASSERT_EQUAL(f->lower_bound_bytes, f->order_lb_after);
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &q), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_num_steps(p), mp_plan_num_steps(q));
        if (mp_plan_num_steps(p) == mp_plan_num_steps(q))
            CU_ASSERT(memcmp(mp_plan_steps(p), mp_plan_steps(q),
                             mp_plan_num_steps(p) * sizeof(mp_step)) == 0);
        mp_plan_destroy(p);
        mp_plan_destroy(q);
        destroy();
    }
}

/* The context's deadline: an inner begin keeps the outer one, a stage's
 * slice is clamped to what is left (never below the minimum), the end
 * restores; without a deadline a limit passes unchanged. */
static void test_deadline(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_EQUAL(mp__time_slice(c, 5), 5);
    CU_ASSERT_EQUAL(mp__time_slice(c, 0), 0);
    CU_ASSERT_FALSE(mp__deadline_passed(c));
    double d0 = mp__deadline_begin(c, 0); /* no limit: no deadline */
    CU_ASSERT_EQUAL(c->deadline, 0);
    double d1 = mp__deadline_begin(c, 1.0);
    double d2 = mp__deadline_begin(c, 100.0); /* the outer one stays */
    double left = mp__time_slice(c, 50);
    CU_ASSERT(left <= 1.0 && left > 0.5);
    CU_ASSERT(mp__time_slice(c, 0.25) == 0.25);
    CU_ASSERT(mp__time_slice(c, 0) <= 1.0);
    mp__deadline_end(c, d2);
    CU_ASSERT(c->deadline != 0);
    c->deadline = mp__now_seconds() - 1; /* passed */
    CU_ASSERT(mp__deadline_passed(c));
    CU_ASSERT_EQUAL(mp__time_slice(c, 3), MP__TIME_SLICE_MIN);
    mp__deadline_end(c, d1);
    mp__deadline_end(c, d0);
    CU_ASSERT_EQUAL(c->deadline, 0);
    CU_ASSERT_EQUAL(mp__time_slice(c, 3), 3);
    mp_ctx_destroy(c);
}

/* --reorder on a 20k-node DAG with an unbounded evaluation budget: the
 * time limit bounds the whole plan (placements and order search), the
 * deadline ends with it, and the plan is valid. */
static void test_reorder_time_limit(void)
{
    enum { N = 20000 };
    uint64_t rng = 7;
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx && mp_graph_create(ctx, &g) == MP_OK);
    /* each node reads the last tensor and one of the 64 before it */
    uint32_t *ids = malloc((N + 1) * sizeof *ids);
    CU_ASSERT_FATAL(ids != NULL);
    char name[32];
    ids[0] = add_t("x", MP_KIND_INPUT, 512);
    for (uint32_t v = 0; v < N; v++) {
        snprintf(name, sizeof name, "t%u", (unsigned)v);
        ids[v + 1] = add_t(name, MP_KIND_ACTIVATION,
                           256 * (1 + mp_test_rand(&rng) % 16));
        uint32_t back = (uint32_t)(mp_test_rand(&rng) % 64);
        uint32_t in[2] = {ids[v], ids[v > back ? v - back : 0]};
        snprintf(name, sizeof name, "n%u", (unsigned)v);
        add_n(name, "Concat", in, in[0] == in[1] ? 1 : 2, &ids[v + 1], 1);
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, ids[N]), MP_OK);
    free(ids);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.reorder = 1;
    o.reorder_budget = UINT64_MAX;
    o.time_limit = 1.0;
    /* one greedy pass: the offsets solver's own time checks are not
     * what this tests */
    o.method = MP_OFFSETS_SIZE_FIRSTFIT;
    /* the stages that have no time checks (schedules, one greedy
     * placement each, the order model and list schedules), timed alone:
     * the same plan without the local search */
    mp_plan_options o0 = o;
    o0.reorder_budget = 0;
    o0.time_limit = 0;
    mp_plan *p = NULL;
    double t0 = mp__now_seconds();
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o0, &p), MP_OK);
    double fixed = mp__now_seconds() - t0;
    mp_plan_destroy(p);
    p = NULL;
    t0 = mp__now_seconds();
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    double secs = mp__now_seconds() - t0;
    /* 10% over the limit, plus that fixed work (it grows with the
     * machine's load, the limit does not) */
    CU_ASSERT(secs < 1.1 + fixed);
    if (secs >= 1.1 + fixed)
        printf("\n  --reorder, time limit 1 s: %.2f s (fixed part %.2f s)\n",
               secs, fixed);
    CU_ASSERT_EQUAL(ctx->deadline, 0); /* ended with the plan */
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    const mp_figures *f = mp_plan_figures(p);
    CU_ASSERT(f->order_lb_after <= f->order_lb_before);
    mp_plan_destroy(p);
    destroy();
}

static CU_TestInfo tests[] = {
    {"branches: 17K before, 10K after (exact and heuristic)", test_branches},
    {"exact method equals brute force on random DAGs", test_exact_vs_brute},
    {"heuristics on 40-node DAGs: never worse, deterministic",
     test_heuristics},
    {"the context's deadline and time slices", test_deadline},
    {"--reorder within its time limit on 20k nodes",
     test_reorder_time_limit},
    CU_TEST_INFO_NULL,
};

void mp_register_order(void) { mp_test_add_suite("order", tests); }
