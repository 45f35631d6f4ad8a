/* Maximum flow / minimum cut (solvers/mincut.c): the flow value against
 * brute force over every s-t cut of a few hundred random small graphs
 * (up to 12 vertices, finite and infinite capacities, parallel and
 * antiparallel edges, self-loops), the returned cut's capacity equal to
 * the flow, and hand cases: a path, parallel paths, infinite edges, a
 * sink the source cannot reach, the cut nearest the sink, bad input. */
#include "mincut.h"
#include "ops.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

/* The smallest capacity over every cut (source side a set holding the
 * source and not the sink), with the capacity of side[]. */
static uint64_t brute_min_cut(const mp__flow_prob *p)
{
    uint32_t others[16], k = 0;
    for (uint32_t v = 0; v < p->n; v++)
        if (v != p->source && v != p->sink)
            others[k++] = v;
    uint64_t best = MP__FLOW_INF;
    uint8_t side[16];
    for (uint32_t mask = 0; mask < (1u << k); mask++) {
        memset(side, 0, sizeof side);
        side[p->source] = 1;
        for (uint32_t i = 0; i < k; i++)
            side[others[i]] = (uint8_t)((mask >> i) & 1);
        uint64_t c = mp__cut_capacity(p, side);
        if (c < best)
            best = c;
    }
    return best;
}

/* Checks one problem: the flow equals brute force, the sides hold the
 * source and not the sink, and their cut has the flow's capacity. */
static void check_problem(mp_ctx *ctx, mp__flow_prob *p)
{
    uint64_t want = brute_min_cut(p);
    for (int ns = 0; ns < 2; ns++) {
        p->near_sink = ns;
        mp__flow_sol s;
        CU_ASSERT_EQUAL_FATAL(mp__mincut(ctx, p, &s), MP_OK);
        CU_ASSERT_EQUAL(s.value, want);
        if (want == MP__FLOW_INF) { /* no finite cut: sides unspecified */
            mp__dealloc(ctx, s.source_side);
            continue;
        }
        CU_ASSERT_EQUAL(s.source_side[p->source], 1);
        CU_ASSERT_EQUAL(s.source_side[p->sink], 0);
        CU_ASSERT_EQUAL(mp__cut_capacity(p, s.source_side), s.value);
        mp__dealloc(ctx, s.source_side);
    }
}

static void test_random_vs_brute(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx != NULL);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    uint32_t from[64], to[64];
    uint64_t cap[64];
    int n_inf_cut = 0, n_finite = 0;
    for (int trial = 0; trial < 400; trial++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t n = 2 + (uint32_t)((rng >> 33) % 11); /* 2..12 */
        uint32_t m = (uint32_t)((rng >> 40) % 40);
        for (uint32_t i = 0; i < m; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            from[i] = (uint32_t)((rng >> 20) % n);
            to[i] = (uint32_t)((rng >> 30) % n);
            uint32_t r = (uint32_t)(rng >> 45) % 16;
            /* one in eight infinite; a few large (2^40 scale) */
            cap[i] = r == 0 || r == 1 ? MP__FLOW_INF
                   : r == 2          ? (rng >> 24) & ((1ull << 40) - 1)
                                     : (rng >> 50) % 100;
        }
        mp__flow_prob p = {n, m, from, to, cap, 0, n - 1, 0};
        if (trial % 3 == 1) { /* source and sink elsewhere */
            p.source = n - 1;
            p.sink = n / 2 == n - 1 ? 0 : n / 2;
        }
        check_problem(ctx, &p);
        if (brute_min_cut(&p) == MP__FLOW_INF)
            n_inf_cut++;
        else
            n_finite++;
    }
    /* both kinds were drawn */
    CU_ASSERT(n_inf_cut > 10);
    CU_ASSERT(n_finite > 200);
    mp_ctx_destroy(ctx);
}

static void test_hand_cases(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx != NULL);
    mp__flow_sol s;
    /* a path 0 -> 1 -> 2 -> 3 with capacities 5, 2, 7: cut at 1 -> 2 */
    {
        uint32_t f[] = {0, 1, 2}, t[] = {1, 2, 3};
        uint64_t c[] = {5, 2, 7};
        mp__flow_prob p = {4, 3, f, t, c, 0, 3, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 2);
        CU_ASSERT(s.source_side[0] && s.source_side[1] &&
                  !s.source_side[2] && !s.source_side[3]);
        mp__dealloc(ctx, s.source_side);
    }
    /* parallel paths 0 -> {1, 2, 3} -> 4: 3 + 4 + 1 */
    {
        uint32_t f[] = {0, 1, 0, 2, 0, 3}, t[] = {1, 4, 2, 4, 3, 4};
        uint64_t c[] = {3, 10, 9, 4, 1, 1};
        mp__flow_prob p = {5, 6, f, t, c, 0, 4, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 8);
        CU_ASSERT(s.source_side[2] && !s.source_side[1]);
        mp__dealloc(ctx, s.source_side);
    }
    /* infinite edges are never cut: 0 -inf-> 1 -4-> 2 -inf-> 3, and a
     * path of infinite edges makes every cut infinite */
    {
        uint32_t f[] = {0, 1, 2}, t[] = {1, 2, 3};
        uint64_t c[] = {MP__FLOW_INF, 4, MP__FLOW_INF};
        mp__flow_prob p = {4, 3, f, t, c, 0, 3, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 4);
        CU_ASSERT(s.source_side[1] && !s.source_side[2]);
        mp__dealloc(ctx, s.source_side);
        c[1] = MP__FLOW_INF;
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, MP__FLOW_INF);
        mp__dealloc(ctx, s.source_side);
    }
    /* a sink the source cannot reach: flow 0, only the reachable part on
     * the source side (nearest the source), everything but the sink's
     * ancestors nearest the sink */
    {
        uint32_t f[] = {0, 2}, t[] = {1, 3};
        uint64_t c[] = {MP__FLOW_INF, 6};
        mp__flow_prob p = {4, 2, f, t, c, 0, 3, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 0);
        CU_ASSERT(s.source_side[0] && s.source_side[1] &&
                  !s.source_side[2] && !s.source_side[3]);
        mp__dealloc(ctx, s.source_side);
        p.near_sink = 1;
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 0);
        CU_ASSERT(s.source_side[0] && s.source_side[1] &&
                  !s.source_side[2] && !s.source_side[3]);
        mp__dealloc(ctx, s.source_side);
    }
    /* ties: 0 -3-> 1 -3-> 2; nearest the source cuts 0 -> 1, nearest the
     * sink 1 -> 2 */
    {
        uint32_t f[] = {0, 1}, t[] = {1, 2};
        uint64_t c[] = {3, 3};
        mp__flow_prob p = {3, 2, f, t, c, 0, 2, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 3);
        CU_ASSERT(!s.source_side[1]);
        mp__dealloc(ctx, s.source_side);
        p.near_sink = 1;
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 3);
        CU_ASSERT(s.source_side[1]);
        mp__dealloc(ctx, s.source_side);
    }
    /* a long path (no recursion: 200k vertices) */
    {
        uint32_t n = 200000;
        uint32_t *f = malloc(n * sizeof *f), *t = malloc(n * sizeof *t);
        uint64_t *c = malloc(n * sizeof *c);
        CU_ASSERT_FATAL(f && t && c);
        for (uint32_t i = 0; i + 1 < n; i++) {
            f[i] = i;
            t[i] = i + 1;
            c[i] = i == n / 2 ? 7 : 1000 + i;
        }
        mp__flow_prob p = {n, n - 1, f, t, c, 0, n - 1, 0};
        CU_ASSERT_FATAL(mp__mincut(ctx, &p, &s) == MP_OK);
        CU_ASSERT_EQUAL(s.value, 7);
        CU_ASSERT(s.source_side[n / 2] && !s.source_side[n / 2 + 1]);
        mp__dealloc(ctx, s.source_side);
        free(f);
        free(t);
        free(c);
    }
    /* bad input: same source and sink, an edge past n, capacities that
     * sum past 2^62 */
    {
        uint32_t f[] = {0, 1}, t[] = {1, 5};
        uint64_t c[] = {1ull << 61, 1ull << 61};
        mp__flow_prob p = {3, 1, f, t, c, 0, 0, 0};
        CU_ASSERT_EQUAL(mp__mincut(ctx, &p, &s), MP_ERR_INVALID_ARG);
        p.sink = 2;
        p.m = 2;
        CU_ASSERT_EQUAL(mp__mincut(ctx, &p, &s), MP_ERR_INVALID_ARG);
        CU_ASSERT(strstr(mp_ctx_message(ctx), "edge 1") != NULL);
        t[1] = 2;
        CU_ASSERT_EQUAL(mp__mincut(ctx, &p, &s), MP_ERR_OVERFLOW);
        CU_ASSERT(strstr(mp_ctx_message(ctx), "2^62") != NULL);
        CU_ASSERT_PTR_NULL(s.source_side);
    }
    mp_ctx_destroy(ctx);
}

/* The registry's "cheap to recompute" class (mp__op_cheap): pointwise,
 * reductions, views, layout, norms, softmax; never a matrix product,
 * convolution, attention, pooling, random op or unknown op. */
static void test_cheap_ops(void)
{
    const char *cheap[] = {"Relu", "Add", "Mul", "Div", "Erf", "Sigmoid",
                           "Reshape", "Transpose", "Concat", "Slice",
                           "Gather", "Expand", "ReduceMean", "ReduceSum",
                           "Cast", "Where", "LayerNormalization",
                           "BatchNormalization", "Softmax", "Identity"};
    const char *dear[] = {"MatMul", "Gemm", "Conv", "ConvTranspose",
                          "Attention", "Dropout", "RandomNormalLike",
                          "Bernoulli", "MaxPool", "AveragePool", "LSTM"};
    for (size_t i = 0; i < sizeof cheap / sizeof cheap[0]; i++) {
        const mp__op_def *d = mp__op_lookup(cheap[i], "");
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        if (!mp__op_cheap(d))
            CU_FAIL(cheap[i]);
    }
    for (size_t i = 0; i < sizeof dear / sizeof dear[0]; i++) {
        const mp__op_def *d = mp__op_lookup(dear[i], "");
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        if (mp__op_cheap(d))
            CU_FAIL(dear[i]);
    }
    CU_ASSERT(!mp__op_cheap(mp__op_generic()));
    CU_ASSERT(!mp__op_cheap(NULL));
}

void mp_register_mincut(void)
{
    static CU_TestInfo tests[] = {
        {"random graphs against brute force", test_random_vs_brute},
        {"hand cases", test_hand_cases},
        {"ops cheap to recompute", test_cheap_ops},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("mincut", tests);
}
