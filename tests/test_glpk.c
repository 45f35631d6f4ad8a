/* The GLPK wrapper (solvers/glpk.c): LP, MIP, infeasible, time limit with
 * a warm start, error-hook recovery. Skips (with a message) when memplan
 * was built without GLPK, after checking the UNSUPPORTED path. */
#include "base.h"
#include "mp_glpk.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int skip_without_glpk(void)
{
    if (mp__glpk_available())
        return 0;
    static int said;
    if (!said++)
        fprintf(stderr, "glpk: built without GLPK (MEMPLAN_WITH_GLPK=OFF): "
                        "solver tests skipped\n");
    return 1;
}

/* max 3x + 2y s.t. x + y <= 4, x + 3y <= 6, x <= 3 (LP optimum 11 at
 * (3, 1)); the constraint x + y is given as x + 0.5y + 0.5y to exercise
 * the merging of duplicate entries. */
static mp__lp *small_lp(mp_ctx *ctx, mp__lp_kind kind)
{
    mp__lp *lp = NULL;
    CU_ASSERT_FATAL(mp__lp_create(ctx, 1, &lp) == MP_OK);
    uint32_t x, y;
    CU_ASSERT(mp__lp_add_col(lp, 0, 3, kind, 3, &x) == MP_OK);
    CU_ASSERT(mp__lp_add_col(lp, 0, MP__LP_INF, kind, 2, &y) == MP_OK);
    uint32_t c1[] = {x, y, y};
    double v1[] = {1, 0.5, 0.5};
    CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 4, 3, c1, v1, NULL) == MP_OK);
    uint32_t c2[] = {x, y};
    double v2[] = {1, 3};
    CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 6, 2, c2, v2, NULL) == MP_OK);
    return lp;
}

static void test_build_and_unsupported(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__lp *lp = small_lp(ctx, MP__LP_CONTINUOUS);
    CU_ASSERT_EQUAL(mp__lp_num_cols(lp), 2);
    CU_ASSERT_EQUAL(mp__lp_num_rows(lp), 2);
    /* invalid input is refused before GLPK sees it */
    CU_ASSERT_EQUAL(mp__lp_add_col(lp, 2, 1, MP__LP_CONTINUOUS, 0, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp__lp_add_col(lp, NAN, 1, MP__LP_CONTINUOUS, 0, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp__lp_add_coef(lp, 5, 0, 1), MP_ERR_INVALID_ARG);
    uint32_t bad[] = {0, 9};
    double bv[] = {1, 1};
    CU_ASSERT_EQUAL(mp__lp_add_row(lp, 0, 1, 2, bad, bv, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp__lp_num_rows(lp), 2);
    mp__lp_result r;
    mp_status st = mp__lp_solve(lp, NULL, &r);
    if (!mp__glpk_available()) {
        CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
        CU_ASSERT(strstr(mp_ctx_message(ctx), "GLPK") != NULL);
        CU_ASSERT_PTR_NULL(mp__lp_values(lp));
    } else {
        CU_ASSERT_EQUAL(st, MP_OK);
    }
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

static void test_lp(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__lp *lp = small_lp(ctx, MP__LP_CONTINUOUS);
    mp__lp_result r;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(r.has_solution);
    CU_ASSERT(fabs(r.objective - 11) < 1e-7);
    CU_ASSERT(fabs(r.bound - 11) < 1e-7);
    const double *x = mp__lp_values(lp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT(fabs(x[0] - 3) < 1e-7 && fabs(x[1] - 1) < 1e-7);
    /* objective constant */
    mp__lp_set_obj_const(lp, 5);
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT(fabs(r.objective - 16) < 1e-7);
    mp__lp_destroy(lp);

    /* unbounded: max x with x >= 0 free above */
    CU_ASSERT_FATAL(mp__lp_create(ctx, 1, &lp) == MP_OK);
    CU_ASSERT(mp__lp_add_col(lp, 0, MP__LP_INF, MP__LP_CONTINUOUS, 1, NULL) ==
              MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT(r.unbounded);
    CU_ASSERT(!r.has_solution);
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

static void test_mip(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* integer version of the LP: optimum 3x + 2y with x + y <= 4,
     * x + 3y <= 6, x <= 3: (3, 1) -> 11 again; make it fractional at the
     * LP by x + y <= 4.5: LP (3, 1.5) = 12, MIP (3, 1) = 11 */
    mp__lp *lp = NULL;
    CU_ASSERT_FATAL(mp__lp_create(ctx, 1, &lp) == MP_OK);
    CU_ASSERT(mp__lp_add_col(lp, 0, 3, MP__LP_INTEGER, 3, NULL) == MP_OK);
    CU_ASSERT(mp__lp_add_col(lp, 0, 10, MP__LP_INTEGER, 2, NULL) == MP_OK);
    uint32_t c[] = {0, 1};
    double v1[] = {1, 1}, v2[] = {1, 3};
    CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 4.5, 2, c, v1, NULL) == MP_OK);
    CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 7.5, 2, c, v2, NULL) == MP_OK);
    mp__lp_options o;
    mp__lp_options_init(&o);
    o.relax = 1;
    mp__lp_result r;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(fabs(r.objective - 12) < 1e-7);
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(fabs(r.objective - 11) < 1e-7);
    CU_ASSERT(fabs(r.bound - 11) < 1e-7);
    CU_ASSERT(!r.from_warm_start);
    const double *x = mp__lp_values(lp);
    CU_ASSERT_FATAL(x != NULL);
    CU_ASSERT(fabs(x[0] - 3) < 1e-9 && fabs(x[1] - 1) < 1e-9);
    mp__lp_destroy(lp);

    /* binary knapsack: values 10, 13, 7, 8 weights 5, 7, 4, 3, cap 10:
     * best 10 + 8 = 18? (5+3=8) vs 13 + 8 = 21 (7+3=10) vs 10+7=17 ->21 */
    CU_ASSERT_FATAL(mp__lp_create(ctx, 1, &lp) == MP_OK);
    double val[] = {10, 13, 7, 8}, w[] = {5, 7, 4, 3};
    uint32_t cols[4];
    for (int i = 0; i < 4; i++)
        CU_ASSERT(mp__lp_add_col(lp, 7, 9, MP__LP_BINARY, val[i], &cols[i]) ==
                  MP_OK);
    CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 10, 4, cols, w, NULL) == MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(fabs(r.objective - 21) < 1e-7);
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

static void test_infeasible(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (int integer = 0; integer < 2; integer++) {
        mp__lp *lp = NULL;
        CU_ASSERT_FATAL(mp__lp_create(ctx, 0, &lp) == MP_OK);
        mp__lp_kind k = integer ? MP__LP_INTEGER : MP__LP_CONTINUOUS;
        CU_ASSERT(mp__lp_add_col(lp, 0, 10, k, 1, NULL) == MP_OK);
        CU_ASSERT(mp__lp_add_col(lp, 0, 10, k, 1, NULL) == MP_OK);
        uint32_t c[] = {0, 1};
        double v[] = {1, 1};
        /* x + y >= 3 and x + y <= 2 */
        CU_ASSERT(mp__lp_add_row(lp, 3, MP__LP_INF, 2, c, v, NULL) == MP_OK);
        CU_ASSERT(mp__lp_add_row(lp, -MP__LP_INF, 2, 2, c, v, NULL) == MP_OK);
        mp__lp_result r;
        CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
        CU_ASSERT_EQUAL(r.status, MP_SOLVE_INFEASIBLE);
        CU_ASSERT(!r.has_solution);
        CU_ASSERT_PTR_NULL(mp__lp_values(lp));
        mp__lp_destroy(lp);
    }
    /* LP-feasible, integer-infeasible: 2x = 1 */
    mp__lp *lp = NULL;
    CU_ASSERT_FATAL(mp__lp_create(ctx, 0, &lp) == MP_OK);
    CU_ASSERT(mp__lp_add_col(lp, 0, 5, MP__LP_INTEGER, 1, NULL) == MP_OK);
    uint32_t c0 = 0;
    double two = 2;
    CU_ASSERT(mp__lp_add_row(lp, 1, 1, 1, &c0, &two, NULL) == MP_OK);
    mp__lp_result r;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, NULL, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_INFEASIBLE);
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

/* GLPK's MIP and LP objectives agree up to its relative tolerances */
#define TOL(v) (1e-7 * fmax(1.0, fabs(v)))

/* A multi-dimensional covering MIP that GLPK cannot close in a few nodes:
 * minimise sum c_j x_j over 60 binaries s.t. 25 rows sum a_ij x_j >= half
 * their sum; x = all ones (the warm start) is feasible. */
enum { KN = 60, KM = 25 };
static mp__lp *cover_mip(mp_ctx *ctx, double *cost)
{
    mp__lp *lp = NULL;
    CU_ASSERT_FATAL(mp__lp_create(ctx, 0, &lp) == MP_OK);
    uint64_t rng = 12345;
    for (int j = 0; j < KN; j++) {
        cost[j] = (double)(10 + mp_test_rand(&rng) % 90);
        CU_ASSERT(mp__lp_add_col(lp, 0, 1, MP__LP_BINARY, cost[j], NULL) ==
                  MP_OK);
    }
    for (int i = 0; i < KM; i++) {
        uint32_t cols[KN];
        double vals[KN], sum = 0;
        for (int j = 0; j < KN; j++) {
            cols[j] = (uint32_t)j;
            vals[j] = (double)(1 + mp_test_rand(&rng) % 37);
            sum += vals[j];
        }
        CU_ASSERT(mp__lp_add_row(lp, floor(sum / 2) + 0.5, MP__LP_INF, KN, cols,
                                vals, NULL) == MP_OK);
    }
    return lp;
}

/* The limit paths with a warm start, made deterministic by iteration and
 * node limits (a time limit depends on the machine and its load):
 * - the root LP stopped after one simplex iteration: the answer is the
 *   warm start, FEASIBLE, with no bound;
 * - the search stopped after a few nodes: an incumbent no worse than the
 *   warm start, FEASIBLE, the bound between the LP relaxation and it; the
 *   same figures on a second run;
 * - the same limits without a warm start: TIMEOUT with no solution at the
 *   root, and whatever GLPK found in the nodes. */
static void test_limits_warm_start(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    double cost[KN], warm[KN], warm_obj = 0;
    mp__lp *lp = cover_mip(ctx, cost);
    for (int j = 0; j < KN; j++) {
        warm[j] = 1;
        warm_obj += cost[j];
    }
    mp__lp_options o;
    mp__lp_options_init(&o);
    o.relax = 1;
    mp__lp_result rr;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &rr), MP_OK);
    CU_ASSERT_EQUAL(rr.status, MP_SOLVE_OPTIMAL);
    o.relax = 0;

    /* 1. root LP stopped after one iteration */
    o.warm_start = warm;
    o.iteration_limit = 1;
    mp__lp_result r;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_FEASIBLE);
    CU_ASSERT_FATAL(r.has_solution);
    CU_ASSERT(r.from_warm_start);
    CU_ASSERT_DOUBLE_EQUAL(r.objective, warm_obj, 1e-9);
    CU_ASSERT_EQUAL(r.bound, -MP__LP_INF);
    const double *x = mp__lp_values(lp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (int j = 0; j < KN; j++)
        CU_ASSERT_EQUAL(x[j], 1.0);
    /* without the warm start: nothing */
    o.warm_start = NULL;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_TIMEOUT);
    CU_ASSERT(!r.has_solution);
    CU_ASSERT_PTR_NULL(mp__lp_values(lp));

    /* 2. the search stopped after 3 nodes (the root and its children) */
    o.iteration_limit = 0;
    o.node_limit = 3;
    o.warm_start = warm;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_FEASIBLE);
    CU_ASSERT_FATAL(r.has_solution);
    CU_ASSERT(r.objective <= warm_obj + 1e-9);
    CU_ASSERT(r.objective >= rr.objective - TOL(rr.objective));
    x = mp__lp_values(lp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    double obj = 0;
    for (int j = 0; j < KN; j++)
        obj += cost[j] * x[j];
    CU_ASSERT(fabs(obj - r.objective) < 1e-6);
    if (r.from_warm_start)
        CU_ASSERT_DOUBLE_EQUAL(r.objective, warm_obj, 1e-9);
    CU_ASSERT(rr.objective <= r.bound + TOL(r.bound));
    CU_ASSERT(r.bound <= r.objective + TOL(r.objective));
    /* deterministic: the same figures again */
    mp__lp_result r2;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r2), MP_OK);
    CU_ASSERT_EQUAL(r2.status, r.status);
    CU_ASSERT_EQUAL(r2.objective, r.objective);
    CU_ASSERT_EQUAL(r2.bound, r.bound);
    CU_ASSERT_EQUAL(r2.from_warm_start, r.from_warm_start);
    /* a larger node limit never does worse, and a gap remains (the limits
     * cut the search short) */
    o.node_limit = 50;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r2), MP_OK);
    CU_ASSERT_EQUAL(r2.status, MP_SOLVE_FEASIBLE);
    CU_ASSERT(r2.has_solution);
    CU_ASSERT(r2.objective <= r.objective + TOL(r.objective));
    CU_ASSERT(r2.bound >= r.bound - TOL(r.bound));
    CU_ASSERT(r2.bound < r2.objective - 1);
    /* a warm start that violates integrality is not used */
    o.node_limit = 3;
    warm[0] = 0.5;
    CU_ASSERT_EQUAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT(!r.from_warm_start);
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

static void test_error_recovery(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__lp *lp = small_lp(ctx, MP__LP_INTEGER);
    mp__lp_options o;
    mp__lp_options_init(&o);
    o.fault_injection = 1;
    mp__lp_result r;
    /* GLPK would abort the process here; the wrapper returns an error */
    CU_ASSERT_EQUAL(mp__lp_solve(lp, &o, &r), MP_ERR_INTERNAL);
    CU_ASSERT(strstr(mp_ctx_message(ctx), "GLPK") != NULL);
    CU_ASSERT(strstr(mp_ctx_message(ctx), "glp_set_col_bnds") != NULL);
    CU_ASSERT_PTR_NULL(mp__lp_values(lp));
    CU_ASSERT(!r.has_solution);
    /* GLPK works again afterwards (a fresh environment) */
    o.fault_injection = 0;
    CU_ASSERT_EQUAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(fabs(r.objective - 11) < 1e-7);
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

/* The dual simplex and the certified dual bound (issue 5): at the
 * optimum it equals the objective (max: an upper bound, min: a lower
 * one); cut after one iteration the bound is still on the right side of
 * the optimum (weak duality holds for any duals). */
static void test_dual_bound(void)
{
    if (skip_without_glpk())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__lp *lp = small_lp(ctx, MP__LP_CONTINUOUS);
    mp__lp_options o;
    mp__lp_options_init(&o);
    o.method = MP__LP_DUAL;
    mp__lp_result r;
    CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    CU_ASSERT(fabs(r.objective - 11) < 1e-7);
    /* y is unbounded above: no finite bound could hold without the rows'
     * duals pricing it out */
    CU_ASSERT(r.dual_bound >= 11 - 1e-9 && r.dual_bound < 11 + 1e-7);
    mp__lp_destroy(lp);
    /* min x + 2y + 3z s.t. x + y >= 2, y + z >= 3, x + z >= 1 in [0, 5]^3:
     * optimum 7 (x = 1, y = 3, z = 0), proven by the dual point
     * (0, 2, 1) of value 2*0 + 3*2 + 1*1 = 7 */
    CU_ASSERT_FATAL(mp__lp_create(ctx, 0, &lp) == MP_OK);
    uint32_t c[3];
    for (int j = 0; j < 3; j++)
        CU_ASSERT(mp__lp_add_col(lp, 0, 5, MP__LP_CONTINUOUS, j + 1, &c[j]) ==
                  MP_OK);
    uint32_t r1[] = {c[0], c[1]}, r2[] = {c[1], c[2]}, r3[] = {c[0], c[2]};
    double one[] = {1, 1};
    CU_ASSERT(mp__lp_add_row(lp, 2, MP__LP_INF, 2, r1, one, NULL) == MP_OK);
    CU_ASSERT(mp__lp_add_row(lp, 3, MP__LP_INF, 2, r2, one, NULL) == MP_OK);
    CU_ASSERT(mp__lp_add_row(lp, 1, MP__LP_INF, 2, r3, one, NULL) == MP_OK);
    for (int meth = 0; meth < 2; meth++) {
        o.method = meth;
        o.iteration_limit = 0;
        CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
        CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
        CU_ASSERT(fabs(r.objective - 7) < 1e-7);
        CU_ASSERT(r.dual_bound <= r.objective + 1e-9);
        CU_ASSERT(r.dual_bound > r.objective - 1e-7);
        o.iteration_limit = 1;
        CU_ASSERT_EQUAL_FATAL(mp__lp_solve(lp, &o, &r), MP_OK);
        if (r.status != MP_SOLVE_OPTIMAL)
            CU_ASSERT(r.dual_bound <= 7 + 1e-9);
    }
    mp__lp_destroy(lp);
    mp_ctx_destroy(ctx);
}

void mp_register_glpk(void)
{
    static CU_TestInfo tests[] = {
        {"build, invalid input, unsupported", test_build_and_unsupported},
        {"LP optimum, duplicates merged, unbounded", test_lp},
        {"MIP optimum and binary knapsack", test_mip},
        {"infeasible LP and MIP", test_infeasible},
        {"iteration and node limits with warm start", test_limits_warm_start},
        {"error hook recovery", test_error_recovery},
        {"dual simplex and certified dual bound", test_dual_bound},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("glpk", tests);
}
