/* bench_remat: recompute solvers on Checkmate training graphs at budgets
 * that are fractions of each graph's no-recompute peak (live arena bytes +
 * persistent bytes of the default schedule).
 *
 *   bench_remat [--frac F]... [--solver NAME]... [--time-limit SEC]
 *               [--reference memplan|checkmate] GRAPH.json...
 *
 * Defaults: --frac 0.8 --frac 0.9, every solver this build has. For each
 * graph, budget and solver it prints the overhead ((base + extra) / base
 * compute cost), the LP lower bound on it when the solver gives one, the
 * peak reached, the RECOMPUTE steps (n_rec: an overhead of 1.0000 with
 * n_rec > 0 recomputes nodes whose cost is 0 in the graph, as the
 * pooling layers of fcn_8_vgg), the seconds (wall and CPU) and whether
 * mp_verify_plan accepted the plan.
 *   bench_remat ../shared/bench/checkmate/ *_train_*.json
 * The no-recompute peak the fractions apply to (--reference; both are
 * printed per graph, the chosen one marked):
 *   memplan   (default) the default schedule with every value freed after
 *             its last reader: live arena bytes + persistent bytes;
 *   checkmate the peak of Checkmate's checkpoint-all schedule, the top of
 *             the range its budget sweep spans (experiment_budget_sweep.py,
 *             "max point = max RAM that achieves no overhead (ie
 *             CHECKPOINT_ALL)"): the `cm-checkpoint-all` solver's schedule
 *             (Checkmate's 2019 rules and scheduler, the code of the
 *             published figures), replayed by mp_verify_plan; its live
 *             peak + persistent bytes.
 * Exit status: 0 when every auto run met its budget and verified. */
#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* where the lower bound comes from (every kind is a true lower bound) */
static const char *bound_kind(int k)
{
    switch (k) {
    case MP_REMAT_BOUND_LP: return "lp-opt";
    case MP_REMAT_BOUND_LP_DUALS: return "lp-duals";
    case MP_REMAT_BOUND_MILP: return "milp";
    case MP_REMAT_BOUND_STAGE_LP: return "stage-lp";
    default: return "-";
    }
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The peak of Checkmate's checkpoint-all schedule on g (no budget), once
 * mp_verify_plan has replayed it; 0 when it cannot be built or does not
 * verify (the context says why). */
static uint64_t checkmate_reference(mp_graph *g)
{
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_CM_CHECKPOINT_ALL;
    mp_remat_result r;
    mp_plan *plan = NULL;
    uint64_t peak = 0;
    if (mp_remat_plan(g, &ro, NULL, &plan, &r) == MP_OK &&
        mp_verify_plan(g, plan) == MP_OK)
        peak = r.peak_bytes;
    mp_plan_destroy(plan);
    return peak;
}

int main(int argc, char **argv)
{
    double fracs[16];
    int n_fracs = 0;
    mp_remat_solver solvers[16];
    int n_solvers = 0;
    double tl = 0;
    int cm_ref = 0;
    int bad = 0;
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--frac") == 0 && i + 1 < argc && n_fracs < 16) {
            fracs[n_fracs++] = atof(argv[++i]);
        } else if (strcmp(argv[i], "--solver") == 0 && i + 1 < argc &&
                   n_solvers < 16) {
            if (mp_remat_solver_parse(argv[++i], &solvers[n_solvers]) !=
                MP_OK) {
                fprintf(stderr, "bench_remat: unknown solver %s\n", argv[i]);
                return 2;
            }
            n_solvers++;
        } else if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) {
            tl = atof(argv[++i]);
        } else if (strcmp(argv[i], "--reference") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "checkmate") == 0) {
                cm_ref = 1;
            } else if (strcmp(argv[i], "memplan") == 0) {
                cm_ref = 0;
            } else {
                fprintf(stderr, "bench_remat: --reference takes memplan "
                                "or checkmate, not %s\n", argv[i]);
                return 2;
            }
        } else {
            first_file = i;
            break;
        }
    }
    if (!n_fracs) {
        fracs[n_fracs++] = 0.8;
        fracs[n_fracs++] = 0.9;
    }
    if (!n_solvers) {
        mp_remat_solver all[] = {MP_REMAT_CHEN_SQRT, MP_REMAT_CHEN_GREEDY,
                                 MP_REMAT_DTR, MP_REMAT_SELECTIVE,
                                 MP_REMAT_LP, MP_REMAT_AUTO};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            solvers[n_solvers++] = all[k];
    }
    printf("%-40s %5s %-15s %9s %9s %-8s %8s %10s %5s %7s %7s %s\n",
           "graph", "frac", "solver", "overhead", "lp_bound", "bound",
           "ratio", "peak_MiB", "n_rec", "wall_s", "cpu_s", "status");
    for (int f = first_file; f < argc; f++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_plan *base = NULL;
        if (!ctx || mp_graph_load(ctx, argv[f], &g) != MP_OK ||
            mp_plan_create(g, NULL, &base) != MP_OK) {
            fprintf(stderr, "bench_remat: %s: %s\n", argv[f],
                    ctx ? mp_ctx_message(ctx) : "no memory");
            bad = 1;
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            continue;
        }
        const mp_figures *bf = mp_plan_figures(base);
        uint64_t mp_peak = bf->lower_bound_bytes + bf->persistent_bytes;
        uint64_t cm_peak = checkmate_reference(g);
        char gname[41];
        snprintf(gname, sizeof gname, "%s", base_name(argv[f]));
        printf("# %s: reference peaks: memplan %llu%s, checkmate %llu%s "
               "(%.4fx memplan's)\n",
               gname, (unsigned long long)mp_peak, cm_ref ? "" : " (used)",
               (unsigned long long)cm_peak, cm_ref ? " (used)" : "",
               mp_peak ? (double)cm_peak / (double)mp_peak : 0.0);
        uint64_t base_peak = cm_ref ? cm_peak : mp_peak;
        if (!base_peak) {
            fprintf(stderr, "bench_remat: %s: no checkmate reference: %s\n",
                    argv[f], mp_ctx_message(ctx));
            bad = 1;
            mp_plan_destroy(base);
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            continue;
        }
        for (int b = 0; b < n_fracs; b++) {
            uint64_t budget = (uint64_t)((double)base_peak * fracs[b]);
            printf("# %s %.2fx %s: budget %llu bytes\n", gname, fracs[b],
                   cm_ref ? "checkmate" : "memplan",
                   (unsigned long long)budget);
            double lb = -1;
            int lbk = 0;
            for (int s = 0; s < n_solvers; s++) {
                mp_remat_options ro;
                mp_remat_options_init(&ro);
                ro.solver = solvers[s];
                ro.budget = budget;
                ro.time_limit = tl;
                mp_remat_result r;
                mp_plan *plan = NULL;
                double w0 = now(), c0 = cpu();
                mp_status st = mp_remat_plan(g, &ro, NULL, &plan, &r);
                double w = now() - w0, c = cpu() - c0;
                const char *vs = "verified";
                if (st == MP_ERR_UNSUPPORTED) {
                    mp_plan_destroy(plan);
                    continue;
                }
                if (st == MP_OK && mp_verify_plan(g, plan) != MP_OK)
                    vs = "VERIFY-FAILED";
                else if (st == MP_OK && r.peak_bytes > budget)
                    vs = "OVER-BUDGET";
                else if (st != MP_OK)
                    vs = mp_status_name(st);
                if (r.lower_bound_cost >= 0 && r.lower_bound_cost > lb) {
                    lb = r.lower_bound_cost;
                    lbk = r.lower_bound_kind;
                }
                double ov = st == MP_OK
                                ? (r.base_cost + r.extra_cost) / r.base_cost
                                : -1;
                double lbo = lb >= 0 ? (r.base_cost + lb) / r.base_cost : -1;
                printf("%-40s %5.2f %-15s %9.4f %9.4f %-8s %8.4f %10.1f "
                       "%5ld %7.2f %7.2f %s%s%s\n",
                       gname, fracs[b], mp_remat_solver_name(solvers[s]), ov,
                       lbo, bound_kind(lbk), ov > 0 && lbo > 0 ? ov / lbo : -1,
                       (double)(st == MP_OK ? r.peak_bytes : r.min_peak_bytes) /
                           1048576.0,
                       st == MP_OK ? (long)r.n_recompute : -1L, w, c, vs, st == MP_OK ? " " : "",
                       st == MP_OK ? (r.solver ? r.solver : "") : "");
                if (solvers[s] == MP_REMAT_AUTO && strcmp(vs, "verified"))
                    bad = 1;
                fflush(stdout);
                mp_plan_destroy(plan);
            }
        }
        mp_plan_destroy(base);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    return bad;
}
