/* Building plans: the options' defaults, a plan from a schedule (its
 * layout from core/sched, then offsets for its blocks through the offsets
 * solver, and the figures), and refitting a plan into a capacity.
 * mp_plan_create (the default schedule, or a reordered one) is in
 * planner/reorder.c; the plan's data, accessors and figure arithmetic are
 * in core/sched/plan.c. */
#include "planner.h"

#include <stdio.h>
#include <string.h>

void mp_plan_options_init(mp_plan_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->alignment = MP__PLAN_ALIGNMENT;
    o->method = MP_OFFSETS_AUTO;
    o->time_limit = 0;
    o->seed = 0;
    o->inplace = MP__PLAN_INPLACE;
    o->fuse = MP__PLAN_FUSE;
    o->reorder = 0;
    o->reorder_exact_max = 20;
    o->reorder_budget = 4000;
    /* the graph as written: a fused node is an op the caller's runtime
     * must know, and fusing renumbers g (the CLI fuses by default) */
    o->attention = MP_ATTENTION_NAIVE;
}

/* Offsets for p's blocks (one buffer per in-place chain) by `method`,
 * within `capacity` when > 0 (MP_ERR_INFEASIBLE there is not a failure:
 * the best packing found is kept). The offsets are written to the blocks
 * only when `only_if_smaller` is 0 or the arena shrinks below p's; then
 * the figures, status and solver name are refreshed. */
static mp_status plan_place(mp_plan *p, const mp_plan_options *opt,
                            mp_offsets_method method, uint64_t capacity,
                            int only_if_smaller)
{
    mp_ctx *ctx = p->ctx;
    mp_offsets_result res;
    memset(&res, 0, sizeof res);
    res.status = MP_SOLVE_OPTIMAL;
    res.solver = "none";
    mp_buffer *bufs = NULL;
    uint32_t *grp = NULL, n_bufs = 0;
    mp_status st = MP_OK;
    if (p->n_blocks) {
        if ((st = mp__sharing_buffers(p, &bufs, &n_bufs, &grp)))
            return st;
        mp_offsets_options oo;
        mp_offsets_options_init(&oo);
        oo.method = method;
        oo.alignment = opt->alignment;
        /* what is left of the plan's time limit (mp_plan_create) */
        oo.time_limit = mp__time_slice(ctx, opt->time_limit);
        oo.seed = opt->seed;
        oo.capacity = capacity;
        st = mp_offsets_solve(ctx, bufs, n_bufs, &oo, &res);
        if (st == MP_ERR_INFEASIBLE && capacity) {
            mp_ctx_clear(ctx);
            st = MP_OK;
        }
        if (st || (only_if_smaller && res.arena_bytes >= p->fig.arena_bytes))
            goto out;
        for (uint32_t i = 0; i < p->n_blocks; i++)
            p->blocks[i].offset = bufs[grp ? grp[i] : i].offset;
    }
    if ((st = mp__plan_compute_figures(p)))
        goto out;
    p->fig.status = p->fig.arena_bytes == p->fig.lower_bound_bytes
                        ? MP_SOLVE_OPTIMAL
                        : MP_SOLVE_FEASIBLE;
    snprintf(p->solver_name, sizeof p->solver_name, "%s",
             res.solver ? res.solver : "unknown");
    p->fig.solver = p->solver_name;
out:
    mp__dealloc(ctx, bufs);
    mp__dealloc(ctx, grp);
    return st;
}

mp_status mp__plan_from_schedule(mp_graph *g, mp_step *steps, uint32_t n_steps,
                                const mp_plan_options *opt, double t0,
                                mp_plan **out)
{
    mp_ctx *ctx = g->ctx;
    *out = NULL;
    if (n_steps == 0) {
        /* no node: nothing runs, so no step holds anything (a plan has at
         * least one step for its graph inputs to be live at) */
        mp__dealloc(ctx, steps);
        return mp__err(ctx, MP_ERR_GRAPH,
                       "graph%s%s%s has no nodes: there is nothing to plan "
                       "(its outputs are its inputs); add the nodes that "
                       "compute the outputs",
                       g->name && *g->name ? " '" : "",
                       g->name && *g->name ? g->name : "",
                       g->name && *g->name ? "'" : "");
    }
    mp_plan *p = mp__calloc(ctx, 1, sizeof *p);
    if (!p) {
        mp__dealloc(ctx, steps);
        return MP_ERR_NOMEM;
    }
    p->ctx = ctx;
    p->graph = g;
    p->steps = steps;
    p->n_steps = n_steps;
    /* in-place reuse and fused chains, blocks, live bytes (core/sched) */
    mp_status st = mp__schedule_layout(p, opt->inplace, opt->fuse,
                                       opt->alignment);
    if (st)
        goto fail;
    /* one buffer per block, or per chain of blocks sharing memory in
     * place; figures, status and solver name */
    if ((st = plan_place(p, opt, opt->method, 0, 0)))
        goto fail;
    p->fig.alignment = opt->alignment;
    p->fig.solve_seconds = mp__now_seconds() - t0;
    *out = p;
    return MP_OK;
fail:
    mp_plan_destroy(p);
    return st;
}

mp_status mp__plan_refit(mp_plan *p, const mp_plan_options *opt,
                        uint64_t capacity)
{
    if (!p->n_blocks || p->fig.arena_bytes <= capacity)
        return MP_OK;
    return plan_place(p, opt, MP_OFFSETS_EXACT, capacity, 1);
}

void mp__plan_progress(const mp_plan *p)
{
    if (!p)
        return;
    /* a bound the run proved (recompute's stage bound) stays */
    uint64_t bound = p->ctx->progress.bound
                         ? 0
                         : p->fig.lower_bound_bytes + p->fig.persistent_bytes;
    mp__progress_set(p->ctx, p->fig.peak_bytes, bound);
}
