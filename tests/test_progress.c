/* Progress reports (mp_ctx_set_progress): the callback receives the runs'
 * reports with interval 0 (no clock in the assertions), nested runs name
 * their phase after the outer one, every run ends with one final report;
 * a recompute model asked for by name answers an infeasible budget as
 * auto does; memplan's --quiet and --progress. */
#include "base.h"
#include "mp_glpk.h"
#include "support.h"

#include <stdio.h>
#include <string.h>

typedef struct reports {
    int n, finals, last_final;
    char phase[64][MP__PHASE_MAX]; /* the first 64 */
    char last_phase[MP__PHASE_MAX];
    int nested;               /* a phase named after an outer one */
    int bad_order;            /* seconds went backwards */
    int bad_bound;            /* a bound above the best peak (not final) */
    double last_seconds;
    uint64_t final_best, final_bound;
} reports;

static void collect(void *user, const mp_progress *p)
{
    reports *r = user;
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->phase);
    if (r->n < 64)
        snprintf(r->phase[r->n], sizeof r->phase[0], "%s", p->phase);
    snprintf(r->last_phase, sizeof r->last_phase, "%s", p->phase);
    if (strstr(p->phase, " / "))
        r->nested = 1;
    if (p->seconds < r->last_seconds || p->seconds < 0)
        r->bad_order = 1;
    if (!p->final && p->best_bytes && p->bound_bytes > p->best_bytes)
        r->bad_bound = 1;
    r->last_seconds = p->final ? 0 : p->seconds;
    r->n++;
    r->finals += p->final != 0;
    r->last_final = p->final;
    if (p->final) {
        r->final_best = p->best_bytes;
        r->final_bound = p->bound_bytes;
    }
}

/* Plans g n times with the default options. */
static void plan_times(mp_graph *g, int n)
{
    for (int i = 0; i < n; i++) {
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
        mp_plan_destroy(p);
    }
}

/* mp_test_fwd_bwd(n) in a fresh context whose every report (interval 0)
 * goes to r, cleared. */
static mp_graph *watched(reports *r, int n)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    memset(r, 0, sizeof *r);
    mp_ctx_set_progress(ctx, collect, r, 0);
    return mp_test_fwd_bwd(ctx, n);
}

/* Every report with interval 0; one final per run, last; the final
 * figures are the plan's; none without a callback; only the final one
 * for a run quicker than the interval. */
static void test_plan_reports(void)
{
    static reports r;
    mp_graph *g = watched(&r, 8);
    mp_ctx *ctx = mp_graph_ctx(g);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    const mp_figures *f = mp_plan_figures(p);
    CU_ASSERT(r.n >= 2); /* the placement's, then the final one */
    CU_ASSERT_EQUAL(r.finals, 1);
    CU_ASSERT_EQUAL(r.last_final, 1);
    CU_ASSERT_STRING_EQUAL(r.last_phase, "plan");
    CU_ASSERT_EQUAL(r.final_best, f->peak_bytes);
    CU_ASSERT_EQUAL(r.final_bound,
                    f->lower_bound_bytes + f->persistent_bytes);
    /* the placement is a run inside the plan: its phase follows */
    CU_ASSERT(r.nested);
    CU_ASSERT(strncmp(r.phase[0], "plan / offsets", 14) == 0);
    CU_ASSERT_FALSE(r.bad_order);
    CU_ASSERT_FALSE(r.bad_bound);
    mp_plan_destroy(p);
    /* no callback: no report */
    mp_ctx_set_progress(ctx, NULL, NULL, 0);
    int before = r.n;
    plan_times(g, 1);
    CU_ASSERT_EQUAL(r.n, before);
    /* a run that ends before the interval sends the final report only,
     * and every run sends one (the interval is far above any run's time:
     * the clock does not decide the outcome) */
    memset(&r, 0, sizeof r);
    mp_ctx_set_progress(ctx, collect, &r, 1e9);
    plan_times(g, 3);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_EQUAL(r.finals, 3);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* g's peak without recompute (mp_remat_result.base_peak_bytes). */
static uint64_t base_peak(mp_graph *g)
{
    mp_remat_result res;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, NULL, NULL, &p, &res) == MP_OK);
    mp_plan_destroy(p);
    return res.base_peak_bytes;
}

/* Recompute and max batch: phases named, the bisection's tries nested
 * under it, the bound on the peak reported. */
static void test_remat_reports(void)
{
    static reports r;
    mp_graph *g = watched(&r, 12);
    mp_ctx *ctx = mp_graph_ctx(g);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result res;
    mp_plan *p = NULL;
    uint64_t base = base_peak(g);
    ro.budget = 2 * base / 3;
    memset(&r, 0, sizeof r);
    CU_ASSERT_EQUAL_FATAL(mp_remat_plan(g, &ro, NULL, &p, &res), MP_OK);
    CU_ASSERT_EQUAL(r.finals, 1);
    CU_ASSERT_EQUAL(r.last_final, 1);
    CU_ASSERT_STRING_EQUAL(r.last_phase, "recompute");
    CU_ASSERT_EQUAL(r.final_best, mp_plan_figures(p)->peak_bytes);
    CU_ASSERT_EQUAL(r.final_bound, res.peak_lower_bound);
    int heur = 0;
    for (int i = 0; i < r.n && i < 64; i++)
        heur += strcmp(r.phase[i], "recompute: heuristics") == 0;
    CU_ASSERT(heur > 0);
    CU_ASSERT_FALSE(r.bad_bound);
    mp_plan_destroy(p);
    memset(&r, 0, sizeof r);
    uint64_t b = 0;
    ro.budget = 3 * base;
    CU_ASSERT_EQUAL(mp_remat_max_batch(g, 1, 16, &ro, NULL, &b, &res),
                    MP_OK);
    CU_ASSERT(b >= 3);
    CU_ASSERT_EQUAL(r.finals, 1);
    CU_ASSERT_STRING_EQUAL(r.last_phase, "max batch");
    CU_ASSERT(strncmp(r.phase[0], "max batch: batch ", 17) == 0);
    CU_ASSERT(r.nested); /* "max batch: batch 8 (...) / recompute..." */
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The MILP asked for by name with a time limit far too short for it even
 * to be built:
 * - on a budget below one stage, the stage LP answers first, and the
 *   message names the node whose working set alone exceeds the budget,
 *   as auto's does (the LP too);
 * - with nothing within the budget at no extra cost (the stage LP, which
 *   ignores the cost cap, proves no infeasibility), TIMEOUT, and the
 *   message gives the smallest peak any schedule reached, the bound and
 *   what to try. */
static void test_ilp_answers(void)
{
    if (!mp__glpk_available())
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_fwd_bwd(ctx, 8);
    uint64_t base = base_peak(g);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result res;
    mp_plan *p = NULL;
    ro.time_limit = 1e-6;
    ro.budget = 2 * 1024; /* a stage holds three 1024-byte tensors */
    for (int lp = 0; lp < 2; lp++) {
        ro.solver = lp ? MP_REMAT_LP : MP_REMAT_ILP;
        CU_ASSERT_EQUAL(mp_remat_plan(g, &ro, NULL, &p, &res),
                        MP_ERR_INFEASIBLE);
        CU_ASSERT_PTR_NULL(p);
        CU_ASSERT_EQUAL(res.status, MP_SOLVE_INFEASIBLE);
        const char *m = mp_ctx_message(ctx);
        CU_ASSERT(strstr(m, "no schedule within the budget of 2048 bytes") !=
                  NULL);
        CU_ASSERT(strstr(m, "alone needs 3072 bytes") != NULL);
        CU_ASSERT(strstr(m, "time limit") == NULL);
    }
    ro.solver = MP_REMAT_ILP;
    ro.max_extra_cost = 0; /* nothing recomputed: the budget is not met */
    ro.budget = base - 1024;
    CU_ASSERT_EQUAL(mp_remat_plan(g, &ro, NULL, &p, &res), MP_ERR_TIMEOUT);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(res.status, MP_SOLVE_TIMEOUT);
    const char *m = mp_ctx_message(ctx);
    char want[128];
    snprintf(want, sizeof want, "the smallest peak any schedule reached is "
             "%llu bytes", (unsigned long long)res.min_peak_bytes);
    CU_ASSERT(strstr(m, want) != NULL);
    snprintf(want, sizeof want, "can peak below %llu bytes",
             (unsigned long long)res.peak_lower_bound);
    CU_ASSERT(strstr(m, want) != NULL);
    CU_ASSERT(strstr(m, "Try a longer --time-limit, --solver auto") != NULL);
    CU_ASSERT(strstr(m, "higher --max-extra") != NULL);
    CU_ASSERT(res.min_peak_bytes <= ro.budget);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- the command ---------------------------------------------------------- */
static char out[1 << 14];

/* memplan's stderr (stdout dropped) for args. */
static int cli_stderr(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", MP_CLI_PATH, args);
    out[0] = 0;
    return mp_test_run(cmd, out, sizeof out);
}

static void test_cli_quiet_progress(void)
{
    const char *tiny = MP_SOURCE_DIR "/examples/tiny.json";
    char args[1024];
    snprintf(args, sizeof args, "plan '%s' --quiet", tiny);
    CU_ASSERT_EQUAL(cli_stderr(args), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    /* --progress: at least the final line, with the run's figures */
    snprintf(args, sizeof args, "plan '%s' --progress", tiny);
    CU_ASSERT_EQUAL(cli_stderr(args), 0);
    CU_ASSERT(strstr(out, "memplan: [") == out);
    CU_ASSERT(strstr(out, "] done: plan  peak ") != NULL);
    CU_ASSERT(strstr(out, "lower bound ") != NULL);
    CU_ASSERT(strchr(out, '\r') == NULL); /* not a terminal: lines */
    /* stderr is not a terminal here: without --progress, nothing */
    snprintf(args, sizeof args, "plan '%s'", tiny);
    CU_ASSERT_EQUAL(cli_stderr(args), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    /* both: refused */
    snprintf(args, sizeof args, "plan '%s' --progress --quiet", tiny);
    CU_ASSERT_EQUAL(cli_stderr(args), 2);
    CU_ASSERT(strstr(out, "--quiet prints no progress") != NULL);
}

static CU_TestInfo tests[] = {
    {"plan reports, nested and final", test_plan_reports},
    {"recompute and max batch reports", test_remat_reports},
    {"ILP with a time limit: infeasible named, time-out explained",
     test_ilp_answers},
    {"memplan --quiet and --progress", test_cli_quiet_progress},
    CU_TEST_INFO_NULL,
};

void mp_register_progress(void) { mp_test_add_suite("progress", tests); }
