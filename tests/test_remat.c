/* Recompute solvers: every solver's plan verifies and fits its budget, the
 * no-recompute peak matches the default schedule's, an unmeetable budget
 * is MP_ERR_INFEASIBLE with the smallest peak found, and the extra cost
 * equals the cost of the RECOMPUTE steps. */
#include "base.h"
#include "mp_glpk.h"
#include "checkmate.h"
#include "remat.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void test_names(void)
{
    mp_remat_solver s;
    for (int i = MP_REMAT_AUTO; i <= MP_REMAT_ILP; i++) {
        CU_ASSERT_EQUAL(mp_remat_solver_parse(
                            mp_remat_solver_name((mp_remat_solver)i), &s),
                        MP_OK);
        CU_ASSERT_EQUAL(s, i);
    }
    CU_ASSERT_EQUAL(mp_remat_solver_parse("chen", &s), MP_OK);
    CU_ASSERT_EQUAL(s, MP_REMAT_CHEN_GREEDY);
    /* an unknown name, as remat.h and the page say */
    CU_ASSERT_EQUAL(mp_remat_solver_parse("bogus", &s), MP_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(mp_remat_solver_parse(NULL, &s), MP_ERR_INVALID_ARG);
}

static void test_baseline_matches_default(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 16);
    mp_plan *d = NULL, *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &d) == MP_OK);
    mp_remat_result r;
    CU_ASSERT_FATAL(mp_remat_plan(g, NULL, NULL, &p, &r) == MP_OK);
    CU_ASSERT_EQUAL(r.base_peak_bytes, mp_plan_figures(d)->lower_bound_bytes);
    CU_ASSERT_EQUAL(r.peak_bytes, r.base_peak_bytes);
    CU_ASSERT_EQUAL(r.n_recompute, 0);
    /* 16 forward nodes cost 1..16, 16 backward nodes 1 each */
    CU_ASSERT_DOUBLE_EQUAL(r.base_cost, 136.0 + 16.0, 1e-9);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(d);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_every_solver(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 16);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, NULL, NULL, &p, &r) == MP_OK);
    uint64_t base = r.base_peak_bytes;
    mp_plan_destroy(p);
    mp_remat_solver sv[] = {MP_REMAT_CHEN_SQRT, MP_REMAT_CHEN_GREEDY,
                            MP_REMAT_DTR, MP_REMAT_SELECTIVE, MP_REMAT_AUTO};
    double auto_cost = -1, best = 1e300;
    for (size_t k = 0; k < sizeof sv / sizeof sv[0]; k++) {
        mp_remat_options ro;
        mp_remat_options_init(&ro);
        ro.solver = sv[k];
        ro.budget = base / 2;
        p = NULL;
        mp_status st = mp_remat_plan(g, &ro, NULL, &p, &r);
        CU_ASSERT_EQUAL(st, MP_OK);
        if (st)
            continue;
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        CU_ASSERT(r.peak_bytes <= ro.budget);
        CU_ASSERT(r.n_recompute > 0);
        /* the extra cost is the cost of the RECOMPUTE steps */
        double c = 0;
        for (uint32_t s = 0; s < mp_plan_num_steps(p); s++)
            if (mp_plan_steps(p)[s].kind == MP_STEP_RECOMPUTE)
                c += mp_node_cost(g, mp_plan_steps(p)[s].index);
        CU_ASSERT_DOUBLE_EQUAL(c, r.extra_cost, 1e-9);
        if (sv[k] == MP_REMAT_AUTO)
            auto_cost = r.extra_cost;
        else if (r.extra_cost < best)
            best = r.extra_cost;
        mp_plan_destroy(p);
    }
    /* auto returns the best of the heuristics */
    CU_ASSERT(auto_cost >= 0 && auto_cost <= best + 1e-9);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_infeasible(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 8);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    /* b_i reads f_i and b_(i+1) and writes b_i, with b_0 kept: no schedule
     * holds less than 3 tensors of 1024 aligned bytes */
    ro.budget = 2 * 1024;
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_remat_plan(g, &ro, NULL, &p, &r), MP_ERR_INFEASIBLE);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_INFEASIBLE);
    CU_ASSERT(r.min_peak_bytes >= 3 * 1024);
    /* b_i's stage: f_i, b_(i+1), b_i and the output b_0 once computed */
    CU_ASSERT_EQUAL(r.peak_lower_bound, 3 * 1024);
    CU_ASSERT(r.peak_lower_bound <= r.min_peak_bytes);
    CU_ASSERT(r.min_peak_bytes < r.base_peak_bytes);
    CU_ASSERT(strstr(mp_ctx_message(ctx), "smallest peak") != NULL);
    /* and the smallest peak found is itself a budget that can be met */
    ro.budget = r.min_peak_bytes;
    CU_ASSERT_EQUAL(mp_remat_plan(g, &ro, NULL, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* A cap on extra cost excludes schedules that recompute too much. */
static void test_cost_cap(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 16);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    mp_plan_destroy(p);
    p = NULL;
    ro.budget = r.base_peak_bytes / 2;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    mp_plan_destroy(p);
    p = NULL;
    double need = r.extra_cost;
    ro.max_extra_cost = need / 2;
    mp_status st = mp_remat_plan(g, &ro, NULL, &p, &r);
    if (st == MP_OK) {
        CU_ASSERT(r.extra_cost <= need / 2);
    } else {
        CU_ASSERT_EQUAL(st, MP_ERR_INFEASIBLE);
    }
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The Checkmate LP: a lower bound below every schedule found, and its
 * rounding verifies within the budget (skipped without GLPK). */
static void test_lp_bound(void)
{
    if (!mp__glpk_available()) {
        fprintf(stderr, "\n  (remat: built without GLPK, LP test skipped)\n");
        return;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 10);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    mp_plan_destroy(p);
    p = NULL;
    ro.budget = r.base_peak_bytes * 6 / 10;
    double best = 1e300;
    mp_remat_solver sv[] = {MP_REMAT_CHEN_GREEDY, MP_REMAT_DTR,
                            MP_REMAT_SELECTIVE};
    for (size_t k = 0; k < 3; k++) {
        ro.solver = sv[k];
        if (mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK && r.extra_cost < best)
            best = r.extra_cost;
        mp_plan_destroy(p);
        p = NULL;
    }
    ro.solver = MP_REMAT_LP;
    ro.time_limit = 30;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    CU_ASSERT(r.lower_bound_cost >= 0);
    CU_ASSERT(r.lower_bound_cost <= r.extra_cost + 1e-9);
    CU_ASSERT(r.lower_bound_cost <= best + 1e-9);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The stage-boundary LP bound, by hand: mp_test_fwd_bwd(4) (units f0..f3 cost
 * 1..4, each b_i reads f_i and b_(i+1)) peaks at 5 units (b3: f0..f3 and
 * b3). At 4 units, stage b3 holds f3 and b3, so one of f0, f1, f2 (all
 * read later) must go: the cheapest, f0, costs 1 to recompute, needs no
 * input, and recomputing it in stage b0 fits (f0, b1, b0). The optimum
 * and the bound are both 1: auto's schedule is proven optimal. */
static void test_stage_bound(void)
{
    if (!mp__glpk_available()) {
        fprintf(stderr, "\n  (remat: built without GLPK, stage LP test "
                        "skipped)\n");
        return;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 4);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    mp_plan_destroy(p);
    p = NULL;
    uint64_t unit = r.base_peak_bytes / 5;
    CU_ASSERT_EQUAL(r.base_peak_bytes, 5 * unit);
    ro.budget = 4 * unit;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    CU_ASSERT(fabs(r.extra_cost - 1) < 1e-9);
    CU_ASSERT(fabs(r.lower_bound_cost - 1) < 1e-6);
    CU_ASSERT(r.lower_bound_cost <= r.extra_cost);
    CU_ASSERT(r.lower_bound_kind == MP_REMAT_BOUND_STAGE_LP ||
              r.lower_bound_kind == MP_REMAT_BOUND_LP);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The MILP's warm start: a replayed schedule that recomputes (f1 dropped
 * after its forward reader, recomputed for b1) maps to a point of
 * Checkmate's model that the wrapper accepts, and the MILP at that
 * schedule's peak finishes with an optimum no worse than it. */
static mp_status keep_first(void *user, const char *name,
                            const mp__remat_policy *pol)
{
    (void)user;
    (void)name;
    (void)pol;
    return MP_OK;
}

static void test_milp_warm_start(void)
{
    if (!mp__glpk_available()) {
        fprintf(stderr, "\n  (remat: built without GLPK, MILP test "
                        "skipped)\n");
        return;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 4);
    mp__remat_prob p;
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 1, &p) == MP_OK);
    uint32_t drop[8];
    for (uint32_t u = 0; u < p.T; u++)
        drop[u] = UINT32_MAX;
    drop[1] = 2; /* f1 freed after stage 2 (f2 read it) */
    mp__remat_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.drop_after = drop;
    mp__remat_out o;
    CU_ASSERT_FATAL(mp__remat_simulate(&p, &pol, 1, &o) == MP_OK);
    CU_ASSERT(o.n_recompute >= 1);
    CU_ASSERT(o.extra_cost > 0);
    mp__remat_cm_result cr;
    CU_ASSERT_FATAL(mp__remat_checkmate(&p, o.peak, 1, 30, &o, &cr,
                                        keep_first, NULL) == MP_OK);
    CU_ASSERT(cr.warm_mapped);
    CU_ASSERT_EQUAL(cr.status, MP_SOLVE_OPTIMAL);
    /* the optimum (the bound at an optimal MILP) is at most the warm
     * start's cost */
    CU_ASSERT(cr.lower_bound >= 0);
    CU_ASSERT(cr.lower_bound <= o.extra_cost * (1 + 1e-6));
    mp__dealloc(ctx, o.steps);
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Max batch: arena tensors scale with the batch; the answer fits and the
 * next batch does not (checked through the cap max_batch). */
static void test_max_batch(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 12);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &p, &r) == MP_OK);
    mp_plan_destroy(p);
    uint64_t base = r.base_peak_bytes;
    ro.budget = 3 * base;
    ro.solver = MP_REMAT_NONE;
    uint64_t b = 0;
    CU_ASSERT_EQUAL_FATAL(mp_remat_max_batch(g, 1, 64, &ro, NULL, &b, &r),
                          MP_OK);
    /* without recompute the peak grows linearly: 3x the budget, batch 3
     * (sizes rounded up to the 256-byte alignment may cost a little) */
    CU_ASSERT(b >= 2 && b <= 3);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    /* recompute reaches a larger batch under the same budget */
    ro.solver = MP_REMAT_AUTO;
    uint64_t b2 = 0;
    CU_ASSERT_EQUAL(mp_remat_max_batch(g, 1, 64, &ro, NULL, &b2, &r), MP_OK);
    CU_ASSERT(b2 > b);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    /* nothing fits a budget below one stage */
    ro.budget = 1024;
    CU_ASSERT_EQUAL(mp_remat_max_batch(g, 1, 64, &ro, NULL, &b2, &r),
                    MP_ERR_INFEASIBLE);
    CU_ASSERT_EQUAL(b2, 0);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static CU_TestInfo tests[] = {
    {"solver names", test_names},
    {"no recompute = default schedule", test_baseline_matches_default},
    {"every solver verifies within budget", test_every_solver},
    {"infeasible budget", test_infeasible},
    {"extra cost cap", test_cost_cap},
    {"Checkmate LP bound and rounding", test_lp_bound},
    {"stage-boundary LP bound by hand", test_stage_bound},
    {"MILP warm start from a replayed schedule", test_milp_warm_start},
    {"max batch", test_max_batch},
    CU_TEST_INFO_NULL,
};

void mp_register_remat(void) { mp_test_add_suite("remat", tests); }
