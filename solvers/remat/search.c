/* The recompute search (docs/training.md): runs the heuristics
 * (heuristics.c, remat_segments.c), Checkmate's baselines (remat_chen.c)
 * and Checkmate's models (checkmate.c) that the options ask for, replays
 * every policy they offer (model.c) and keeps the cheapest schedule
 * within the budget, with the best lower bound on its cost; also the
 * solvers' names. The top of solvers/remat/: nothing below calls it. */
#include "search.h"
#include "checkmate.h"
#include "heuristics.h"
#include "mp_glpk.h"
#include "remat_chen.h"
#include "remat_mincut.h"

#include <stdio.h>
#include <string.h>

/* ---- names and options --------------------------------------------------- */
static const char *const solver_names[] = {
    "auto", "checkpoint-all", "chen-sqrt", "chen-greedy", "dtr", "selective",
    "lp", "ilp", "chen-linear", "cm-checkpoint-all", "cm-chen-sqrt",
    "cm-chen-greedy", "mincut"};

const char *mp_remat_solver_name(mp_remat_solver s)
{
    if ((unsigned)s < sizeof solver_names / sizeof solver_names[0])
        return solver_names[s];
    return "unknown";
}

mp_status mp_remat_solver_parse(const char *name, mp_remat_solver *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < sizeof solver_names / sizeof solver_names[0]; i++)
        if (strcmp(name, solver_names[i]) == 0) {
            *out = (mp_remat_solver)i;
            return MP_OK;
        }
    if (strcmp(name, "none") == 0) {
        *out = MP_REMAT_NONE;
        return MP_OK;
    }
    if (strcmp(name, "chen") == 0) {
        *out = MP_REMAT_CHEN_GREEDY;
        return MP_OK;
    }
    if (strcmp(name, "checkmate") == 0) {
        *out = MP_REMAT_ILP;
        return MP_OK;
    }
    return MP_ERR_NOT_FOUND;
}

void mp_remat_options_init(mp_remat_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->solver = MP_REMAT_AUTO;
    o->budget = 0;
    o->time_limit = 0;
    o->max_extra_cost = -1;
    o->seed = 0;
}

/* ---- search bookkeeping -------------------------------------------------- */
typedef struct search {
    const mp__remat_prob *p;
    uint64_t cap;            /* live arena bytes allowed */
    double max_extra;        /* < 0: no cap */
    int keep_ckpt;           /* Checkmate's baseline semantics */
    /* best feasible schedule */
    int have;
    const char *name;
    double cost;
    uint64_t peak;
    mp__remat_out best;      /* its replay, steps owned */
    /* smallest peak seen */
    uint64_t min_peak;
    uint32_t n_sims;
    /* the stage bound (live arena bytes) and the unit that sets it */
    uint64_t lb;
    uint32_t lb_unit;
} search;

/* o is feasible and cheaper than the best so far (or as cheap, lower). */
static bool improves(const search *S, const mp__remat_out *o)
{
    return mp__remat_fits(o, S->cap, S->max_extra) &&
           (!S->have || o->extra_cost < S->cost * (1 - 1e-12) ||
            (o->extra_cost <= S->cost * (1 + 1e-12) && o->peak < S->peak));
}

/* A free schedule within the budget is known: nothing left to improve. */
static bool have_free(const search *S)
{
    return S->have && S->cost == 0;
}

/* Counts replay o in the search (its peak among the smallest seen); true
 * when it is the best feasible one so far. */
static bool count_replay(search *S, const mp__remat_out *o)
{
    S->n_sims++;
    if (!o->cut && o->peak < S->min_peak)
        S->min_peak = o->peak;
    if (S->min_peak != UINT64_MAX)
        mp__progress_set(S->p->ctx, S->min_peak + S->p->persistent, 0);
    return improves(S, o);
}

/* full (a replay with its steps, taken) becomes the best schedule. */
static void take_best(search *S, const char *name, mp__remat_out *full)
{
    mp__dealloc(S->p->ctx, S->best.steps);
    S->best = *full;
    full->steps = NULL;
    S->have = 1;
    S->name = name;
    S->cost = full->extra_cost;
    S->peak = full->peak;
}

/* Simulates pol; records it when it is the best feasible one so far. */
static mp_status try_policy(search *S, const char *name,
                            const mp__remat_policy *pol, mp__remat_out *o)
{
    mp_status st = mp__remat_simulate(S->p, pol, 0, o);
    if (st || !count_replay(S, o))
        return st;
    mp__remat_out full;
    if ((st = mp__remat_simulate(S->p, pol, 1, &full)))
        return st;
    take_best(S, name, &full);
    return MP_OK;
}

/* The heuristics' eval (heuristics.h). */
static mp_status eval_cb(void *user, const char *name,
                         const mp__remat_policy *pol, mp__remat_out *o)
{
    return try_policy(user, name, pol, o);
}

/* mp__remat_try_fn: segments and Checkmate's models. */
static mp_status try_cb(void *user, const char *name,
                        const mp__remat_policy *pol)
{
    mp__remat_out o;
    return try_policy(user, name, pol, &o);
}

/* A finished replay (remat_chen.c): kept, steps and all, when it is the
 * best feasible one so far; its steps are freed otherwise. */
static mp_status offer_cb(void *user, const char *name, mp__remat_out *o)
{
    search *S = user;
    /* a fixed schedule that recomputes a node after the optimizer step
     * that updated its weight is not one (the replay's policies never
     * are: mp__remat_simulate keeps such units) */
    if (mp__remat_steps_legal(S->p, o->steps, o->n_steps) &&
        count_replay(S, o)) {
        take_best(S, name, o);
        return MP_OK;
    }
    mp__dealloc(S->p->ctx, o->steps);
    o->steps = NULL;
    return MP_OK;
}

/* ---- the search ---------------------------------------------------------- */
/* Graphs up to this many nodes get the Checkmate LP in auto mode. */
#define MP__REMAT_LP_AUTO_MAX 120

/* Stage bound on the live bytes: computing u needs u and its inputs
 * resident, and graph outputs computed before u stay. An input is the
 * tensor u reads, not every output of its unit (the replay frees those
 * one by one). */
static mp_status stage_bound(const mp__remat_prob *p, uint64_t *out,
                              uint32_t *at)
{
    uint64_t lb = 0, outs = 0;
    *at = MP_NONE;
    uint32_t *seen = mp__calloc(p->ctx, (size_t)p->n_tensors + 1,
                                sizeof *seen);
    if (!seen)
        return MP_ERR_NOMEM;
    for (uint32_t u = 0; u < p->T; u++) {
        uint64_t need = p->mem[u] + outs;
        for (uint32_t j = p->root_begin[u]; j < p->root_begin[u + 1]; j++) {
            uint32_t r = p->roots[j], d = p->unit_of[r];
            if (d != MP_NONE && !p->out[d] && seen[r] != u + 1)
                need += p->t_mem[r];
            seen[r] = u + 1; /* a root read twice counts once */
        }
        for (uint32_t k = 0; k < p->n_in; k++)
            if (p->in_out[k] || p->in_last[k] >= u)
                need += p->in_mem[k];
        if (need > lb) {
            lb = need;
            *at = u;
        }
        if (p->out[u])
            outs += p->mem[u];
    }
    mp__dealloc(p->ctx, seen);
    *out = lb;
    return MP_OK;
}

/* Every unit has at most one arena output: the LPs' memory (a unit's
 * outputs together) is the replay's (one by one). */
static bool one_output_units(const mp__remat_prob *p)
{
    for (uint32_t u = 0; u < p->T; u++) {
        uint32_t n = 0;
        for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
            n += p->t_mem[p->frees[j]] > 0;
        if (n > 1)
            return false;
    }
    return true;
}

/* The heuristics sv asks for (auto: each while no free schedule fits).
 * Under a budget and seeded, dtr, selective and segments run twice: from
 * the checkpoint-all start and from the min-cut save plan's (its
 * recomputed values dropped already; not when the cut saves every
 * value). */
static mp_status run_heuristics(search *S, mp_remat_solver sv, bool seeded)
{
    const mp__remat_prob *p = S->p;
    mp__remat_goal g = {S->cap, S->max_extra, S->keep_ckpt, eval_cb, S,
                        NULL};
    bool aut = sv == MP_REMAT_AUTO;
    uint8_t *seed = NULL;
    mp_status st = MP_OK;
    if (seeded && S->cap != UINT64_MAX && !S->keep_ckpt &&
        (aut || sv == MP_REMAT_DTR || sv == MP_REMAT_SELECTIVE ||
         sv == MP_REMAT_ILP)) {
        uint32_t n = 0;
        if (!(seed = mp__alloc(p->ctx, (size_t)p->T + 1)))
            return MP_ERR_NOMEM;
        if ((st = mp__remat_mincut_seed(p, seed, &n)))
            goto done;
        if (n)
            g.seed = seed;
    }
    if (sv == MP_REMAT_NONE || aut)
        st = mp__remat_checkpoint_all(p, &g);
    /* the min-cut choice: alone (or the schedule that saves everything
     * when its peak is lower), or a candidate of auto (the other solvers
     * must beat it) */
    if (!st && (sv == MP_REMAT_MINCUT || (aut && seeded && !have_free(S))))
        st = mp__remat_mincut(p, sv == MP_REMAT_MINCUT, offer_cb, S);
    if (!st && sv >= MP_REMAT_CHEN_LINEAR &&
        sv <= MP_REMAT_CM_CHEN_GREEDY) /* baselines: never in auto */
        st = mp__remat_checkmate_baseline(p, sv, offer_cb, S);
    if (!st && (sv == MP_REMAT_CHEN_SQRT || (aut && !S->have)))
        st = mp__remat_chen(p, &g, 0);
    if (!st && (sv == MP_REMAT_CHEN_GREEDY || (aut && !have_free(S))))
        st = mp__remat_chen(p, &g, 1);
    /* segment checkpointing on saved articulation points, polished */
    if (!st && aut && S->cap != UINT64_MAX && !have_free(S))
        st = mp__remat_segments(p, S->cap, S->max_extra, NULL, try_cb, S);
    if (!st && aut && g.seed && !have_free(S))
        st = mp__remat_segments(p, S->cap, S->max_extra, g.seed, try_cb, S);
    /* the MILP starts from the best of DTR and selective (warm start) */
    if (!st && (sv == MP_REMAT_DTR || sv == MP_REMAT_ILP ||
                (aut && !have_free(S))))
        st = mp__remat_dtr(p, &g);
    if (!st && (sv == MP_REMAT_SELECTIVE || sv == MP_REMAT_ILP ||
                (aut && !have_free(S))))
        for (int order = 0; order < 3 && !st; order++)
            for (int ev = 0; ev < 2 && !st; ev++)
                st = mp__remat_selective(p, &g, order, ev);
done:
    mp__dealloc(p->ctx, seed);
    return st;
}

/* The stage-boundary relaxation (checkmate.h) into *sb. */
static mp_status run_stage_lp(search *S, double time_limit,
                              mp__remat_cm_result *sb)
{
    mp__progress_phase(S->p->ctx, "recompute: stage LP");
    return mp__remat_stage_lp(S->p, S->cap, time_limit, sb, try_cb, S);
}

/* The stage LP's bound into cm when it is the larger. */
static void merge_stage_bound(mp__remat_cm_result *cm,
                              const mp__remat_cm_result *sb)
{
    if (sb->lower_bound > cm->lower_bound) {
        cm->lower_bound = sb->lower_bound;
        cm->bound_kind = sb->bound_kind;
    }
}

/* Checkmate's LP/MILP when sv asks for it (auto: small graphs), and the
 * stage-boundary relaxation: O(edges) columns, a bound on graphs whose
 * full LP does not finish (and a second one where it does: the larger
 * valid bound is kept in cm). In auto mode the relaxation comes after
 * Checkmate's model; when the model is asked for by name it comes first,
 * a cheap proof that no schedule fits (then the model does not run) and
 * the model gets the rest of the time. */
static mp_status run_models(search *S, mp_remat_solver sv, double time_limit,
                            mp__remat_cm_result *cm, bool *run_cm)
{
    const mp__remat_prob *p = S->p;
    bool aut = sv == MP_REMAT_AUTO;
    double tl = time_limit > 0 ? time_limit : 60, t0 = mp__now_seconds();
    mp_status st = MP_OK;
    *run_cm = sv == MP_REMAT_LP || sv == MP_REMAT_ILP;
    if (aut && S->cap != UINT64_MAX && !have_free(S) &&
        p->T <= MP__REMAT_LP_AUTO_MAX)
        *run_cm = true;
    bool stage = (aut || *run_cm) && S->cap != UINT64_MAX && !have_free(S) &&
                 mp__glpk_available();
    mp__remat_cm_result sb;
    memset(&sb, 0, sizeof sb);
    sb.lower_bound = -1;
    if (stage && !aut) {
        if ((st = run_stage_lp(S, tl / 4, &sb)))
            return st;
        if (sb.infeasible) {
            cm->infeasible = 1;
            cm->lower_bound = -1;
            return MP_OK;
        }
        stage = false;
    }
    if (*run_cm) {
        /* in auto mode the LP gets at most half of the time limit (the
         * heuristics are done by then: their schedules stand) */
        double left = aut ? tl / 2 : tl - (mp__now_seconds() - t0);
        mp__progress_phase(p->ctx, "recompute: Checkmate %s",
                           sv == MP_REMAT_ILP ? "MILP" : "LP");
        st = mp__remat_checkmate(p, S->cap, sv == MP_REMAT_ILP,
                                 left > 1e-3 ? left : 1e-3,
                                 S->have ? &S->best : NULL, cm, try_cb, S);
        if (st == MP_ERR_UNSUPPORTED && aut) {
            mp_ctx_clear(p->ctx);
            st = MP_OK;
        }
    }
    if (st)
        return st;
    merge_stage_bound(cm, &sb);
    if (stage && !have_free(S)) {
        if ((st = run_stage_lp(S, tl / 4, &sb)))
            return st;
        merge_stage_bound(cm, &sb);
        if (sb.infeasible && !*run_cm)
            cm->infeasible = 1;
    }
    return MP_OK;
}

/* The Checkmate model asked for by name gave nothing in its time limit:
 * TIMEOUT, with the best the search has (the smallest peak any schedule
 * reached, the bound on the peak) and what to try next. */
static mp_status timed_out(const search *S, mp_remat_solver sv,
                           const mp_remat_options *ro,
                           const mp__remat_cm_result *cm,
                           mp__remat_solution *sol)
{
    const mp__remat_prob *p = S->p;
    sol->fig.status = MP_SOLVE_TIMEOUT;
    sol->fig.peak_bytes = sol->fig.min_peak_bytes;
    uint64_t best = sol->fig.min_peak_bytes, bound = sol->fig.peak_lower_bound;
    const double mib = 1024.0 * 1024.0;
    char lim[64] = "its time limit";
    if (ro->time_limit > 0)
        snprintf(lim, sizeof lim, "the %.3g s it had", ro->time_limit);
    /* the way out: a higher budget, or a higher cost cap when a schedule
     * within the budget recomputes more than it allows */
    char next[160];
    if (best > ro->budget)
        snprintf(next, sizeof next,
                 "or a budget of at least %llu bytes (%.1f MiB), where a "
                 "schedule was found", (unsigned long long)best, best / mib);
    else
        snprintf(next, sizeof next,
                 "or a higher --max-extra (a schedule within the budget "
                 "recomputes more than the cap allows)");
    char cost[128] = "";
    if (cm->lower_bound >= 0)
        snprintf(cost, sizeof cost,
                 "; a fitting schedule recomputes at least %.6g of cost",
                 cm->lower_bound);
    if (!best)
        best = sol->fig.base_peak_bytes;
    return mp__err(p->ctx, MP_ERR_TIMEOUT,
                   "the Checkmate %s (%u columns, %u rows) found no schedule "
                   "within the budget of %llu bytes (%.1f MiB) in %s (%s). "
                   "The best so far: the smallest peak any schedule reached "
                   "is %llu bytes (%.1f MiB), and no schedule in this order "
                   "can peak below %llu bytes (%.1f MiB)%s. Try a longer "
                   "--time-limit, --solver auto (heuristics, then the LPs "
                   "as time allows), %s",
                   sv == MP_REMAT_ILP ? "MILP" : "LP", (unsigned)cm->n_cols,
                   (unsigned)cm->n_rows, (unsigned long long)ro->budget,
                   ro->budget / mib, lim, mp_solve_status_name(cm->status),
                   (unsigned long long)best, best / mib,
                   (unsigned long long)bound, bound / mib, cost, next);
}

/* No schedule: TIMEOUT when the model asked for gave nothing in the time
 * limit, else INFEASIBLE; the message says why. */
static mp_status no_schedule(const search *S, mp_remat_solver sv,
                             const mp_remat_options *ro,
                             const mp__remat_cm_result *cm, bool run_cm,
                             mp__remat_solution *sol)
{
    mp_ctx *ctx = S->p->ctx;
    if (run_cm && sv != MP_REMAT_AUTO && !cm->infeasible &&
        cm->status != MP_SOLVE_OPTIMAL && cm->status != MP_SOLVE_FEASIBLE)
        return timed_out(S, sv, ro, cm, sol);
    sol->fig.status = MP_SOLVE_INFEASIBLE;
    sol->fig.peak_bytes = sol->fig.min_peak_bytes;
    if (S->max_extra >= 0)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                       "no schedule within the budget of %llu bytes at "
                       "most %g extra cost (smallest peak found %llu "
                       "bytes)",
                       (unsigned long long)ro->budget, S->max_extra,
                       (unsigned long long)sol->fig.min_peak_bytes);
    /* the term that already exceeds the budget, when one does */
    const mp__remat_prob *p = S->p;
    char why[400] = "";
    const double mib = 1024.0 * 1024.0;
    if (p->persistent >= ro->budget)
        snprintf(why, sizeof why,
                 ". The persistent tensors alone (weights, and in training "
                 "the optimizer states) take %llu bytes (%.1f MiB), at or "
                 "above the budget: recompute frees only activations; "
                 "offload weights or states (--offload) or use a lower "
                 "precision",
                 (unsigned long long)p->persistent, p->persistent / mib);
    else if (S->lb_unit != MP_NONE && S->lb + p->persistent > ro->budget)
        snprintf(why, sizeof why,
                 ". Node '%s' alone needs %llu bytes (%.1f MiB) live at "
                 "once (its inputs and outputs, with the graph inputs and "
                 "outputs held then) beside %llu bytes (%.1f MiB) of "
                 "persistent tensors: no recompute lowers that; a smaller "
                 "batch or offload (--offload) does",
                 p->name[S->lb_unit], (unsigned long long)S->lb, S->lb / mib,
                 (unsigned long long)p->persistent, p->persistent / mib);
    return mp__err(ctx, MP_ERR_INFEASIBLE,
                   "no schedule within the budget of %llu bytes "
                   "(smallest peak found %llu bytes; none in this "
                   "order can peak below %llu bytes%s)%s",
                   (unsigned long long)ro->budget,
                   (unsigned long long)sol->fig.min_peak_bytes,
                   (unsigned long long)sol->fig.peak_lower_bound,
                   cm->infeasible ? "; the Checkmate LP proves that no "
                                    "schedule in this order fits"
                                  : "",
                   why);
}

mp_status mp__remat_search(const mp__remat_prob *p,
                           const mp_remat_options *ro,
                           mp__remat_solution *sol)
{
    if (!sol)
        return MP_ERR_INVALID_ARG;
    memset(sol, 0, sizeof *sol);
    mp_remat_result *fig = &sol->fig;
    fig->lower_bound_cost = -1;
    if (!p || !ro)
        return MP_ERR_INVALID_ARG;
    search S;
    memset(&S, 0, sizeof S);
    S.p = p;
    S.max_extra = ro->max_extra_cost;
    S.keep_ckpt = ro->keep_checkpoints;
    S.min_peak = UINT64_MAX;
    S.cap = UINT64_MAX;
    if (ro->budget)
        S.cap = ro->budget > p->persistent ? ro->budget - p->persistent : 0;
    mp__remat_out o;
    mp__remat_policy none;
    memset(&none, 0, sizeof none);
    mp_status st = mp__remat_simulate(p, &none, 0, &o);
    if (st)
        return st;
    fig->base_peak_bytes = o.peak + p->persistent;
    uint64_t lb;
    if ((st = stage_bound(p, &lb, &S.lb_unit)))
        return st;
    S.lb = lb;
    fig->peak_lower_bound = lb + p->persistent;
    mp__progress_set(p->ctx, fig->base_peak_bytes, fig->peak_lower_bound);
    mp__progress_phase(p->ctx, "recompute: heuristics");
    fig->base_cost = p->base_cost;
    mp__remat_cm_result cm;
    memset(&cm, 0, sizeof cm);
    cm.lower_bound = -1;
    bool run_cm = false;
    mp_remat_solver sv = ro->solver;
    if ((st = run_heuristics(&S, sv, true)))
        goto done;
    if (!one_output_units(p) && sv != MP_REMAT_MINCUT &&
        !(sv >= MP_REMAT_CHEN_LINEAR && sv <= MP_REMAT_CM_CHEN_GREEDY) &&
        S.cap != UINT64_MAX && !have_free(&S)) {
        /* again with a unit's outputs freed together, from checkpoint-all:
         * eviction there can recompute less where freeing one output
         * makes a later recompute of its reader recompute the unit too */
        mp__remat_prob whole = *p;
        whole.t_last = NULL;
        S.p = &whole;
        st = run_heuristics(&S, sv, false);
        S.p = p;
        if (st)
            goto done;
    }
    if ((st = run_models(&S, sv, ro->time_limit, &cm, &run_cm)))
        goto done;
    if (!one_output_units(p)) {
        /* the LPs count a unit's outputs together, the replay one by one:
         * their optimum bounds no schedule of the replay (their roundings
         * stand) */
        cm.lower_bound = -1;
        cm.infeasible = 0;
    }
    fig->lower_bound_cost = cm.lower_bound;
    fig->lower_bound_kind = cm.lower_bound >= 0 ? cm.bound_kind : 0;
    fig->min_peak_bytes =
        S.min_peak == UINT64_MAX ? 0 : S.min_peak + p->persistent;
    if (!S.have) {
        st = no_schedule(&S, sv, ro, &cm, run_cm, sol);
        goto done;
    }
    /* optimal: the cost meets the bound within its 1e-7 safety margin
     * (GLPK's tolerances) */
    double cost = S.best.extra_cost;
    fig->status = cm.lower_bound >= 0 &&
                          cost <= cm.lower_bound * (1 + 1e-6) +
                                      1e-12 * (1 + cost)
                      ? MP_SOLVE_OPTIMAL
                      : MP_SOLVE_FEASIBLE;
    fig->solver = S.name;
    fig->peak_bytes = S.best.peak + p->persistent;
    fig->extra_cost = cost;
    fig->extra_flops = S.best.extra_flops;
    fig->n_recompute = S.best.n_recompute;
    sol->best = S.best;
    S.best.steps = NULL; /* ownership passes to the caller */
done:
    mp__dealloc(p->ctx, S.best.steps);
    return st;
}
