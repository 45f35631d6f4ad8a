/* Offload planner, alone or jointly with recompute (docs/offload.md): the
 * driver. The decisions on one base schedule are solvers/offload.c's;
 * this file builds the base schedules, offers every schedule the solvers
 * find, and makes the winner a plan.
 *
 * The plan without offload is the answer when it meets the budget.
 * Otherwise every schedule found is timed on one cost model (the device)
 * and joint mode keeps the fastest schedule within the budget among
 * offload only (greedy, ILP), the joint candidates on the default
 * schedule, recompute only (mp_remat_plan with the node times of the same
 * model), and recompute at looser budgets followed by offload. The
 * winner's arena is re-placed where its packing left a gap above the
 * budget. */
#include "planner.h"
#include "offload_solver.h"
#include "cost.h"

#include <stdio.h>
#include <string.h>

void mp_offload_options_init(mp_offload_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->use_given_seconds = 1;
}

/* ---- the search ------------------------------------------------------------ */
typedef struct {
    mp_step *steps;     /* best schedule so far (owned) or NULL */
    uint32_t n;
    mp_plan *plan;      /* or a finished plan (recompute only) */
    mp__offload_timing tm;
    uint64_t peak;
    const char *solver;
    int have;
} best_t;

/* One mp_offload_plan call. */
typedef struct {
    mp_graph *g;
    mp_ctx *ctx;
    mp_offload_options o;
    mp_plan_options po;
    mp_device dev;
    mp_offload_result *res;
    double t0;           /* when solving started */
    uint64_t pers;       /* persistent bytes */
    uint64_t target;     /* live arena peak allowed: budget - persistent */
    uint64_t min_offered; /* the smallest live peak offered (progress) */
    double *ndur;        /* per node: seconds on dev */
    mp_step *steps;      /* the default schedule */
    uint32_t nsteps;
    best_t B;            /* the best schedule within the budget so far */
} run_t;

static void best_clear(mp_ctx *ctx, best_t *b)
{
    mp__dealloc(ctx, b->steps);
    mp_plan_destroy(b->plan);
    memset(b, 0, sizeof *b);
}

/* Offers a schedule st (taken over), or a finished plan (taken over): kept
 * when its live peak is within r->target and it is faster than the best
 * (ties: fewer bytes moved; on a full tie the earlier offer stays unless
 * win_ties, as for the ILP against its warm start). *t_out: its total
 * seconds, or -1 when over the budget; *pk_out (may be NULL): its peak. */
static mp_status offer(run_t *r, mp_step *st, uint32_t n, mp_plan *plan,
                       const char *solver, int win_ties, double *t_out,
                       uint64_t *pk_out)
{
    mp_ctx *ctx = r->ctx;
    best_t *b = &r->B;
    const mp_step *s = plan ? plan->steps : st;
    uint32_t ns = plan ? plan->n_steps : n;
    uint64_t peak = 0;
    mp__offload_timing tm;
    mp_status e = MP_OK;
    if (plan)
        peak = plan->fig.lower_bound_bytes;
    else
        e = mp__offload_schedule_peak(r->g, s, ns, r->po.alignment, &peak);
    if (!e)
        e = mp__offload_simulate(ctx, r->g, s, ns, &r->dev, r->ndur, &tm);
    if (pk_out)
        *pk_out = peak;
    if (t_out)
        *t_out = -1;
    if (!e && peak && (!r->min_offered || peak < r->min_offered)) {
        r->min_offered = peak;
        mp__progress_set(ctx, peak + r->pers, 0);
    }
    if (e || peak > r->target) {
        mp__dealloc(ctx, st);
        mp_plan_destroy(plan);
        return e;
    }
    if (t_out)
        *t_out = tm.total;
    int better = !b->have || tm.total < b->tm.total * (1 - 1e-12) ||
                 (tm.total <= b->tm.total * (1 + 1e-12) &&
                  (tm.to_host + tm.to_device <
                       b->tm.to_host + b->tm.to_device ||
                   (win_ties && tm.to_host + tm.to_device ==
                                    b->tm.to_host + b->tm.to_device)));
    if (!better) {
        mp__dealloc(ctx, st);
        mp_plan_destroy(plan);
        return MP_OK;
    }
    best_clear(ctx, b);
    b->steps = plan ? NULL : st;
    b->n = n;
    b->plan = plan;
    b->tm = tm;
    b->peak = peak;
    b->solver = solver;
    b->have = 1;
    return MP_OK;
}

/* Greedy (and the ILP when use_ilp: 2 when the caller asked for it, so
 * that a build without GLPK says MP_ERR_UNSUPPORTED; 1 when it is only
 * tried) on base schedule x toward r->target; each schedule found is
 * offered. */
static mp_status search_base(run_t *r, mp__offload_problem *x, int rec,
                             int use_ilp, const char *name_greedy,
                             const char *name_ilp, const char *name_ilp_warm,
                             double *t_best)
{
    uint32_t n_chosen = 0;
    mp_status st = mp__offload_greedy(x, r->target, rec, &n_chosen);
    if (st)
        return st;
    mp_step *s = NULL;
    uint32_t n = 0;
    double t = -1;
    if ((st = mp__offload_schedule(x, &s, &n)) ||
        (st = offer(r, s, n, NULL, name_greedy, 0, &t, NULL)))
        return st;
    if (t >= 0 && (*t_best < 0 || t < *t_best))
        *t_best = t;
    if (!use_ilp || !n_chosen)
        return MP_OK;
    mp_solve_status ss = MP_SOLVE_NONE;
    int fw = 0, have = 0;
    st = mp__offload_ilp(x, r->target, rec,
                         mp__time_slice(r->ctx, r->o.time_limit > 0
                                                    ? r->o.time_limit
                                                    : 10),
                         &ss, &fw, &have);
    if (st == MP_ERR_UNSUPPORTED && use_ilp < 2) {
        /* an ILP the caller did not ask for: the greedy stands */
        mp_ctx_clear(r->ctx);
        return MP_OK;
    }
    if (st)
        return st;
    r->res->ilp_status = ss;
    if (!have)
        return MP_OK;
    if ((st = mp__offload_schedule(x, &s, &n)) ||
        (st = offer(r, s, n, NULL, fw ? name_ilp_warm : name_ilp, 1, &t,
                    NULL)))
        return st;
    if (t >= 0 && (*t_best < 0 || t < *t_best))
        *t_best = t;
    return MP_OK;
}

/* mp_remat_plan with the node times of the device model (the graph's
 * given seconds are put back afterwards). inplace 0: the schedule keeps
 * its FREE steps (a base for offload). */
static mp_status remat_run(run_t *r, uint64_t budget, int inplace,
                           mp_remat_solver solver, mp_plan **out,
                           const char **name)
{
    mp_graph *g = r->g;
    const mp_offload_options *o = &r->o;
    const double *ndur = r->ndur;
    mp_ctx *ctx = g->ctx;
    uint32_t nn = (uint32_t)g->n_nodes;
    double *saved = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *saved);
    if (!saved)
        return MP_ERR_NOMEM;
    for (uint32_t v = 0; v < nn; v++) {
        saved[v] = g->nodes[v].seconds;
        g->nodes[v].seconds = ndur[v] > 0 ? ndur[v] : 1e-12;
    }
    mp_remat_options ro;
    if (o->remat)
        ro = *o->remat;
    else {
        mp_remat_options_init(&ro);
        ro.time_limit = 10;
    }
    if (solver != MP_REMAT_AUTO)
        ro.solver = solver;
    ro.budget = budget;
    mp_plan_options p2 = r->po;
    p2.inplace = inplace;
    mp_remat_result rr;
    mp_status st = mp_remat_plan(g, &ro, &p2, out, &rr);
    for (uint32_t v = 0; v < nn; v++)
        g->nodes[v].seconds = saved[v];
    mp__dealloc(ctx, saved);
    if (name)
        *name = rr.solver;
    return st;
}

/* ---- the steps of mp_offload_plan ------------------------------------------ */
/* Options, device, persistent bytes, node times and the default schedule
 * into r. */
static mp_status prepare(run_t *r, const mp_offload_options *oo,
                         const mp_plan_options *po_in)
{
    mp_graph *g = r->g;
    mp_ctx *ctx = r->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    if (oo)
        r->o = *oo;
    else
        mp_offload_options_init(&r->o);
    if (po_in)
        r->po = *po_in;
    else
        mp_plan_options_init(&r->po);
    if (r->po.alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    if (r->o.device)
        r->dev = *r->o.device;
    else if (mp_device_builtin(ctx, "h200", &r->dev))
        return MP_ERR_INTERNAL;
    if (r->dev.h2d_bw <= 0 || r->dev.d2h_bw <= 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "device '%s': the host link bandwidth is unknown",
                      r->dev.name);
    r->pers = mp__plan_persistent_bytes(g);
    if (r->pers == UINT64_MAX)
        return mp__err(ctx, MP_ERR_OVERFLOW, "persistent bytes overflow");
    uint32_t nn = (uint32_t)g->n_nodes;
    r->ndur = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *r->ndur);
    if (!r->ndur)
        return MP_ERR_NOMEM;
    /* node times in another unit than seconds are not added to transfer
     * seconds: the device's cost model times those nodes */
    int given = r->o.use_given_seconds && !g->cost_unit;
    r->res->node_times = given ? "given" : "device";
    for (uint32_t v = 0; v < nn; v++) {
        mp_op_cost k;
        mp_status st = mp__node_estimate_ex(g, v, &r->dev, given, &k);
        if (st)
            return st;
        r->ndur[v] = k.seconds;
    }
    return mp__schedule_default(g, &r->steps, &r->nsteps);
}

/* The plan without offload (in-place reuse and the rest of po included)
 * and res->base_peak_bytes; when it meets the budget, it is the answer
 * (*out, with its figures in res). */
static mp_status plan_without_offload(run_t *r, mp_plan **out)
{
    mp_offload_result *res = r->res;
    mp_plan *p0 = NULL;
    /* under a deadline: a quarter of it, the rest for the search */
    mp_plan_options po = r->po;
    po.attention = MP_ATTENTION_NAIVE; /* r indexes the graph as it is */
    if (r->ctx->deadline != 0)
        po.time_limit = mp__time_slice(r->ctx, 0) / 4;
    mp_status st = mp_plan_create(r->g, &po, &p0);
    if (st)
        return st;
    uint64_t pk0 = p0->fig.lower_bound_bytes + r->pers, pkd = 0;
    if ((st = mp__offload_schedule_peak(r->g, r->steps, r->nsteps,
                                        r->po.alignment, &pkd)))
        goto fail;
    res->base_peak_bytes = pk0 < pkd + r->pers ? pk0 : pkd + r->pers;
    if (r->o.budget != 0 && pk0 > r->o.budget)
        goto fail; /* st == MP_OK: offload is needed */
    mp__offload_timing tm;
    if ((st = mp__offload_simulate(r->ctx, r->g, p0->steps, p0->n_steps,
                                   &r->dev, r->ndur, &tm)))
        goto fail;
    res->peak_bytes = pk0;
    res->status = MP_SOLVE_FEASIBLE;
    res->solver = "none";
    res->ilp_status = MP_SOLVE_NONE;
    res->compute_seconds = tm.compute;
    res->total_seconds = tm.total;
    res->offload_only_seconds = tm.total;
    if (r->o.recompute)
        res->recompute_only_seconds = tm.total;
    res->seconds = mp__now_seconds() - r->t0;
    *out = p0;
    return MP_OK;
fail:
    mp_plan_destroy(p0);
    return st;
}

/* Recompute only, offered; a budget it cannot meet is not an error. */
static mp_status search_recompute_only(run_t *r)
{
    mp_plan *pr = NULL;
    const char *rname = NULL;
    mp_status st = remat_run(r, r->o.budget, r->po.inplace, MP_REMAT_AUTO,
                             &pr, &rname);
    if (st == MP_ERR_INFEASIBLE) {
        mp_ctx_clear(r->ctx); /* one of the alternatives */
        return MP_OK;
    }
    if (st)
        return st;
    uint64_t pk = 0;
    double t_rec = -1;
    if ((st = offer(r, NULL, 0, pr, "recompute", 0, &t_rec, &pk)))
        return st;
    r->res->recompute_only_seconds = t_rec;
    r->res->remat_solver = rname;
    return MP_OK;
}

/* Recompute at looser budgets (5% to 75% of the way to the no-offload
 * peak), then offload or recompute down to the budget (joint moves: a few
 * hidden copies in place of recomputes). */
static mp_status search_recompute_then_offload(run_t *r)
{
    uint64_t pers = r->pers, target = r->target;
    uint64_t base_live = r->res->base_peak_bytes > pers
                             ? r->res->base_peak_bytes - pers : 0;
    static const double fr[] = {0.05, 0.1, 0.25, 0.5, 0.75};
    double t_joint = -1;
    for (int k = 0; k < 5 && base_live > target &&
                    !mp__deadline_passed(r->ctx);
         k++) {
        uint64_t bl = target + (uint64_t)(fr[k] *
                                          (double)(base_live - target));
        mp_plan *pb = NULL;
        mp_status st = remat_run(r, bl + pers, 0, MP_REMAT_SELECTIVE, &pb,
                                 NULL);
        if (st == MP_ERR_INFEASIBLE) {
            mp_ctx_clear(r->ctx);
            continue;
        }
        if (st)
            return st;
        mp__offload_problem *x = NULL;
        st = mp__offload_problem_create(r->g, &r->dev, r->ndur, pb->steps,
                                        pb->n_steps, r->po.alignment, 1, &x);
        if (!st)
            st = search_base(r, x, 1, 0, "recompute+offload",
                             "recompute+offload", "recompute+offload",
                             &t_joint);
        mp__offload_problem_destroy(x);
        mp_plan_destroy(pb);
        if (st)
            return st;
    }
    return MP_OK;
}

/* Every alternative offered to r->B: offload only on the default
 * schedule, then in joint mode the joint candidates there, recompute only,
 * and recompute then offload. *min_peak: the best offload-only schedule's
 * live peak when there is one. */
static mp_status search(run_t *r, uint64_t *min_peak)
{
    const mp_offload_options *o = &r->o;
    mp__offload_problem *x = NULL;
    mp_status st = mp__offload_problem_create(r->g, &r->dev, r->ndur,
                                              r->steps, r->nsteps,
                                              r->po.alignment, o->recompute,
                                              &x);
    if (st)
        return st;
    uint32_t ilp_max = o->ilp_max_candidates ? o->ilp_max_candidates : 400;
    int joint_ilp = o->ilp || mp__offload_num_candidates(x) <= ilp_max;
    double t_off = -1, t_joint = -1;
    /* 1. offload only on the default schedule */
    mp__progress_phase(r->ctx, "offload: offload only");
    if ((st = search_base(r, x, 0, o->ilp ? 2 : 0, "greedy", "ilp",
                          "ilp(greedy)", &t_off)))
        goto out;
    if (r->B.have && r->B.peak < *min_peak)
        *min_peak = r->B.peak;
    r->res->offload_only_seconds = t_off;
    if (!o->recompute)
        goto out;
    /* 2. joint candidates on the default schedule */
    mp__progress_phase(r->ctx, "offload: joint offload and recompute");
    if ((st = search_base(r, x, 1, o->ilp ? 2 : joint_ilp, "joint-greedy",
                          "joint-ilp", "joint-ilp(greedy)", &t_joint)))
        goto out;
    mp__offload_problem_destroy(x);
    x = NULL;
    /* 3. recompute only; 4. recompute at looser budgets, then offload
     * (while the deadline, if any, allows) */
    if (mp__deadline_passed(r->ctx) && r->B.have)
        goto out;
    mp__progress_phase(r->ctx, "offload: recompute, then offload");
    if (!(st = search_recompute_only(r)))
        st = search_recompute_then_offload(r);
out:
    mp__offload_problem_destroy(x);
    return st;
}

/* No schedule met the budget: the smallest peak reached (min_peak, or the
 * offload greedy with no budget left) in res, and the error. */
static mp_status infeasible(run_t *r, uint64_t min_peak)
{
    mp_offload_result *res = r->res;
    res->status = MP_SOLVE_INFEASIBLE;
    mp__offload_problem *x = NULL;
    mp_step *s = NULL;
    uint32_t n = 0;
    uint64_t pk = 0;
    mp_status st = mp__offload_problem_create(r->g, &r->dev, r->ndur,
                                              r->steps, r->nsteps,
                                              r->po.alignment,
                                              r->o.recompute, &x);
    if (!st)
        st = mp__offload_greedy(x, 0, r->o.recompute, NULL);
    if (!st && !(st = mp__offload_schedule(x, &s, &n)))
        st = mp__offload_schedule_peak(r->g, s, n, r->po.alignment, &pk);
    mp__dealloc(r->ctx, s);
    mp__offload_problem_destroy(x);
    if (st)
        return st;
    if (pk < min_peak)
        min_peak = pk;
    res->peak_bytes = min_peak + r->pers;
    if (res->base_peak_bytes < res->peak_bytes)
        res->peak_bytes = res->base_peak_bytes;
    res->seconds = mp__now_seconds() - r->t0;
    return mp__err(r->ctx, MP_ERR_INFEASIBLE,
                  "offload%s cannot meet the budget of %llu bytes: the "
                  "smallest peak is %llu bytes (live arena + %llu "
                  "persistent)",
                  r->o.recompute ? " with recompute" : "",
                  (unsigned long long)r->o.budget,
                  (unsigned long long)res->peak_bytes,
                  (unsigned long long)r->pers);
}

/* The winner as a plan (*out), its arena within the budget, its figures
 * in res. */
static mp_status finish(run_t *r, mp_plan **out)
{
    mp_ctx *ctx = r->ctx;
    mp_offload_result *res = r->res;
    best_t *B = &r->B;
    mp_plan *p = B->plan;
    mp_status st;
    if (!p) {
        st = mp__plan_from_schedule(r->g, B->steps, B->n, &r->po, r->t0, &p);
        B->steps = NULL; /* owned by the plan now */
        if (st)
            return st;
    }
    B->plan = NULL;
    res->peak_bytes = p->fig.lower_bound_bytes + r->pers;
    if (res->peak_bytes > r->o.budget) {
        st = mp__err(ctx, MP_ERR_INTERNAL,
                    "offload: the plan's peak %llu exceeds its schedule's",
                    (unsigned long long)res->peak_bytes);
        goto fail;
    }
    /* the budget holds for the placed arena too: where the packing left a
     * gap above the live bytes, the exact offsets tier is asked to fit */
    if ((st = mp__plan_refit(p, &r->po, r->o.budget - r->pers)))
        goto fail;
    if (p->fig.peak_bytes > r->o.budget) {
        res->status = MP_SOLVE_INFEASIBLE;
        st = mp__err(ctx, MP_ERR_INFEASIBLE,
                    "offload: the schedule's live bytes fit the budget of "
                    "%llu bytes, but the smallest arena packing found "
                    "peaks at %llu bytes",
                    (unsigned long long)r->o.budget,
                    (unsigned long long)p->fig.peak_bytes);
        goto fail;
    }
    res->solver = B->solver;
    res->status = MP_SOLVE_FEASIBLE;
    res->bytes_to_host = B->tm.to_host;
    res->bytes_to_device = B->tm.to_device;
    res->n_offloaded = B->tm.n_off;
    res->n_recomputed = B->tm.n_rec;
    res->compute_seconds = B->tm.compute;
    res->recompute_seconds = B->tm.recompute;
    res->exposed_seconds = B->tm.exposed;
    res->total_seconds = B->tm.total;
    res->seconds = mp__now_seconds() - r->t0;
    snprintf(p->solver_name, sizeof p->solver_name, "offload:%s",
             res->solver);
    *out = p;
    return MP_OK;
fail:
    mp_plan_destroy(p);
    return st;
}

mp_status mp_offload_plan(mp_graph *g, const mp_offload_options *oo,
                          const mp_plan_options *po_in, mp_plan **out,
                          mp_offload_result *res)
{
    if (!g || !out || !res)
        return MP_ERR_INVALID_ARG;
    run_t r;
    memset(&r, 0, sizeof r);
    r.g = g;
    r.ctx = g->ctx;
    r.res = res;
    r.t0 = mp__now_seconds();
    *out = NULL;
    memset(res, 0, sizeof *res);
    res->offload_only_seconds = res->recompute_only_seconds = -1;
    /* po_in->time_limit bounds the whole search (every stage takes what
     * is left of it) */
    double dl = mp__deadline_begin(g->ctx, po_in ? po_in->time_limit : 0);
    mp__progress_mark pm;
    mp__progress_begin(g->ctx, &pm, "offload");
    mp_status st = prepare(&r, oo, po_in);
    if (!st)
        st = plan_without_offload(&r, out);
    if (st || *out)
        goto out;
    r.target = r.o.budget > r.pers ? r.o.budget - r.pers : 0;
    res->ilp_status = MP_SOLVE_NONE;
    uint64_t min_peak = UINT64_MAX;
    if ((st = search(&r, &min_peak)))
        goto out;
    st = r.B.have ? finish(&r, out) : infeasible(&r, min_peak);
out:
    mp__plan_progress(*out);
    mp__progress_end(g->ctx, &pm);
    mp__deadline_end(g->ctx, dl);
    best_clear(r.ctx, &r.B);
    mp__dealloc(r.ctx, r.steps);
    mp__dealloc(r.ctx, r.ndur);
    return st;
}
