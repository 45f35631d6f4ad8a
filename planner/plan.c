/* Plans: the default schedule of a graph, its blocks and their offsets,
 * and the figures. */
#include "planner.h"

#include <stdio.h>
#include <string.h>

void mp_plan_options_init(mp_plan_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->alignment = 256;
    o->method = MP_OFFSETS_AUTO;
    o->time_limit = 0;
    o->seed = 0;
    o->inplace = 1;
    o->fuse = 0;
    o->reorder = 0;
    o->reorder_exact_max = 20;
    o->reorder_budget = 4000;
}

void mp_plan_destroy(mp_plan *p)
{
    if (!p)
        return;
    mp_ctx *ctx = p->ctx;
    mp__dealloc(ctx, p->steps);
    mp__dealloc(ctx, p->blocks);
    mp__dealloc(ctx, p->live);
    mp__dealloc(ctx, p->block_pool);
    mp__dealloc(ctx, p->pools);
    mp__dealloc(ctx, p->block_over);
    mp__dealloc(ctx, p->fused);
    mp__dealloc(ctx, p);
}

uint64_t mp__plan_persistent_bytes(const mp_graph *g)
{
    uint64_t sum = 0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->alias_of == MP_NONE && mp__kind_persistent(tt->kind))
            if (!mp__add_u64(sum, tt->bytes, &sum))
                return UINT64_MAX;
    }
    return sum;
}

mp_status mp__plan_compute_figures(mp_plan *p)
{
    mp_ctx *ctx = p->ctx;
    mp_figures *f = &p->fig;
    f->lower_bound_bytes = 0;
    f->peak_step = 0;
    for (uint32_t s = 0; s < p->n_steps; s++)
        if (p->live[s] > f->lower_bound_bytes) {
            f->lower_bound_bytes = p->live[s];
            f->peak_step = s;
        }
    uint64_t arena = 0, no_reuse = 0;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint64_t end;
        if (!mp__add_u64(p->blocks[i].offset, p->blocks[i].size, &end) ||
            !mp__add_u64(no_reuse, p->blocks[i].size, &no_reuse))
            return mp__err(ctx, MP_ERR_OVERFLOW, "arena size overflows");
        if (end > arena)
            arena = end;
    }
    f->arena_bytes = arena;
    f->no_reuse_bytes = no_reuse;
    f->persistent_bytes = mp__plan_persistent_bytes(p->graph);
    if (f->persistent_bytes == UINT64_MAX ||
        !mp__add_u64(arena, f->persistent_bytes, &f->peak_bytes))
        return mp__err(ctx, MP_ERR_OVERFLOW, "peak bytes overflow");
    return MP_OK;
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
        oo.time_limit = opt->time_limit;
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
    mp_plan *p = mp__calloc(ctx, 1, sizeof *p);
    if (!p) {
        mp__dealloc(ctx, steps);
        return MP_ERR_NOMEM;
    }
    p->ctx = ctx;
    p->graph = g;
    p->steps = steps;
    p->n_steps = n_steps;
    mp_status st;
    if (opt->inplace || opt->fuse) {
        /* in-place reuse and fused chains (core/sched/inplace.c) */
        uint32_t *step_over = NULL;
        st = mp__sharing_apply(g, &p->steps, &p->n_steps, opt->inplace,
                              opt->fuse, &step_over, &p->fused);
        if (!st)
            st = mp__schedule_blocks_shared(g, p->steps, p->n_steps,
                                           opt->alignment, step_over, p->fused,
                                           &p->blocks, &p->n_blocks,
                                           &p->block_over);
        mp__dealloc(ctx, step_over);
    } else {
        st = mp__schedule_blocks(g, p->steps, p->n_steps, opt->alignment,
                                &p->blocks, &p->n_blocks);
    }
    if (!st)
        st = mp__blocks_live(ctx, p->blocks, p->n_blocks, p->n_steps, &p->live);
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

const mp_figures *mp_plan_figures(const mp_plan *p)
{
    return p ? &p->fig : NULL;
}
uint32_t mp_plan_num_steps(const mp_plan *p) { return p ? p->n_steps : 0; }
const mp_step *mp_plan_steps(const mp_plan *p) { return p ? p->steps : NULL; }
uint32_t mp_plan_num_blocks(const mp_plan *p) { return p ? p->n_blocks : 0; }
const mp_block *mp_plan_blocks(const mp_plan *p)
{
    return p ? p->blocks : NULL;
}
uint64_t mp_plan_live_bytes(const mp_plan *p, uint32_t step)
{
    return p && p->live && step < p->n_steps ? p->live[step] : 0;
}
