/* Plan creation in an operator order: mp_plan_create (the
 * graph's default order; with opt->reorder, the default order's plan and
 * the solved order's, the winner kept), the plan of a given order, and the
 * public order search (mp_order_solve, over the pure search of
 * solvers/order.c). The plans themselves are built by planner/plan.c. */
#include "planner.h"
#include "order_solver.h"

/* The common arguments: opt (NULL: *defaults, filled) checked, g
 * finalized. */
static mp_status plan_args(mp_graph *g, const mp_plan_options **opt,
                            mp_plan_options *defaults)
{
    if (!*opt) {
        mp_plan_options_init(defaults);
        *opt = defaults;
    }
    if ((*opt)->alignment == 0)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    if ((unsigned)(*opt)->attention > MP_ATTENTION_NAIVE)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                       "attention mode %u: it must be MP_ATTENTION_FUSED or "
                       "MP_ATTENTION_NAIVE", (unsigned)(*opt)->attention);
    if (!g->finalized)
        return mp_graph_finalize(g);
    return MP_OK;
}

mp_status mp_order_solve(mp_graph *g, const mp_plan_options *opt,
                         uint32_t *order, uint64_t *lb_before,
                         uint64_t *lb_after)
{
    if (!g || !order)
        return MP_ERR_INVALID_ARG;
    mp_plan_options defaults;
    mp_status st = plan_args(g, &opt, &defaults);
    if (st)
        return st;
    return mp__order_solve(g, opt, order, lb_before, lb_after);
}

mp_status mp_plan_create_ordered(mp_graph *g, const uint32_t *order,
                                 const mp_plan_options *opt, mp_plan **out)
{
    if (!g || !order || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_plan_options defaults;
    mp_status st = plan_args(g, &opt, &defaults);
    if (st)
        return st;
    double t0 = mp__now_seconds();
    double dl = mp__deadline_begin(g->ctx, opt->time_limit);
    mp__progress_mark pm;
    mp__progress_begin(g->ctx, &pm, "plan in the given order");
    mp_step *steps = NULL;
    uint32_t n = 0;
    st = mp__schedule_from_order(g, order, &steps, &n);
    if (!st)
        st = mp__plan_from_schedule(g, steps, n, opt, t0, out);
    mp__plan_progress(*out);
    mp__progress_end(g->ctx, &pm);
    mp__deadline_end(g->ctx, dl);
    return st;
}

/* mp_plan_create with opt->reorder: the default order's plan and the
 * reordered one; the one with the lower bound kept (the default on a
 * tie), both bounds reported in the figures. */
static mp_status plan_create_reordered(mp_graph *g,
                                      const mp_plan_options *opt,
                                      mp_plan **out)
{
    mp_ctx *ctx = g->ctx;
    double t0 = mp__now_seconds();
    *out = NULL;
    mp_plan_options o = *opt;
    o.reorder = 0;
    mp_step *steps = NULL;
    uint32_t n = 0;
    mp_plan *base = NULL, *re = NULL;
    uint32_t *order = mp__alloc(ctx, (g->n_nodes + 1) * sizeof *order);
    if (!order)
        return MP_ERR_NOMEM;
    /* under a time limit (the caller's deadline): the default order's
     * placement a third of it, the order search until half of what is
     * left, the reordered placement the rest */
    mp_plan_options ob = o, os = o;
    if (ctx->deadline != 0)
        ob.time_limit = (ctx->deadline - mp__now_seconds()) / 3;
    mp_status st = mp__schedule_default(g, &steps, &n);
    if (!st)
        st = mp__plan_from_schedule(g, steps, n, &ob, t0, &base);
    if (!st && ctx->deadline != 0)
        os.time_limit = mp__time_slice(ctx, 0) / 2;
    mp__plan_progress(base);
    mp__progress_phase(ctx, "plan: operator order search");
    if (!st)
        st = mp_order_solve(g, &os, order, NULL, NULL);
    mp__progress_phase(ctx, "plan: reordered");
    if (!st)
        st = mp_plan_create_ordered(g, order, &o, &re);
    mp__dealloc(ctx, order);
    if (st) {
        mp_plan_destroy(base);
        mp_plan_destroy(re);
        return st;
    }
    uint64_t before = base->fig.lower_bound_bytes;
    uint64_t after = re->fig.lower_bound_bytes;
    mp_plan *keep = after < before ? re : base;
    mp_plan_destroy(keep == re ? base : re);
    keep->fig.order_lb_before = before;
    keep->fig.order_lb_after = after < before ? after : before;
    keep->fig.solve_seconds = mp__now_seconds() - t0;
    *out = keep;
    return MP_OK;
}

mp_status mp_plan_create(mp_graph *g, const mp_plan_options *opt,
                         mp_plan **out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_plan_options defaults;
    mp_status st = plan_args(g, &opt, &defaults);
    if (!st && opt->attention == MP_ATTENTION_FUSED)
        st = mp_graph_fuse_attention(g, NULL, NULL);
    if (st)
        return st;
    /* opt->time_limit bounds the whole plan (every stage takes what is
     * left of it: mp__time_slice) */
    double dl = mp__deadline_begin(g->ctx, opt->time_limit);
    mp__progress_mark pm;
    mp__progress_begin(g->ctx, &pm, "plan");
    if (opt->reorder) {
        st = plan_create_reordered(g, opt, out);
    } else {
        double t0 = mp__now_seconds();
        mp_step *steps = NULL;
        uint32_t n_steps = 0;
        st = mp__schedule_default(g, &steps, &n_steps);
        if (!st)
            st = mp__plan_from_schedule(g, steps, n_steps, opt, t0, out);
    }
    mp__plan_progress(*out);
    mp__progress_end(g->ctx, &pm);
    mp__deadline_end(g->ctx, dl);
    return st;
}
