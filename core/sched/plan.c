/* A plan's data: its destructor and accessors, the persistent bytes and
 * figures computed from its blocks and live bytes, the layout a plan is
 * built on (sharing, blocks, live bytes) and a body's peak from it, and
 * whether a graph fits a plan's blocks (shape ranges). Plans are built by
 * planner/plan.c. */
#include "sched.h"

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

uint32_t mp_plan_block_over(const mp_plan *p, uint32_t block)
{
    if (!p || !p->block_over || block >= p->n_blocks)
        return MP_NONE;
    return p->block_over[block];
}

int mp_plan_tensor_fused(const mp_plan *p, uint32_t tensor)
{
    if (!p || !p->fused || tensor >= p->graph->n_tensors)
        return 0;
    return p->fused[tensor] ? 1 : 0;
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

mp_status mp__schedule_layout(mp_plan *p, int inplace, int fuse,
                             uint64_t alignment)
{
    const mp_graph *g = p->graph;
    uint32_t *step_over = NULL;
    uint8_t *step_fused = NULL;
    mp_status st = MP_OK;
    if (inplace || fuse)
        st = mp__sharing_apply(g, &p->steps, &p->n_steps, inplace, fuse,
                               &step_over, &p->fused, &step_fused);
    if (!st)
        st = mp__schedule_blocks(g, p->steps, p->n_steps, alignment,
                                 step_over, step_fused, &p->blocks,
                                 &p->n_blocks, &p->block_over);
    mp__dealloc(p->ctx, step_over);
    mp__dealloc(p->ctx, step_fused);
    if (!st)
        st = mp__blocks_live(p->ctx, p->blocks, p->n_blocks, p->n_steps,
                             &p->live);
    return st;
}

mp_status mp__schedule_body_peak(const mp_graph *g, uint64_t *peak)
{
    mp_ctx *ctx = g->ctx;
    *peak = 0;
    mp_plan *p = mp__calloc(ctx, 1, sizeof *p);
    if (!p)
        return MP_ERR_NOMEM;
    p->ctx = ctx;
    p->graph = g;
    mp_status st = mp__schedule_default(g, &p->steps, &p->n_steps);
    if (!st)
        st = mp__schedule_layout(p, MP__PLAN_INPLACE, MP__PLAN_FUSE,
                                 MP__PLAN_ALIGNMENT);
    /* live bytes of the blocks that are not graph inputs (the node's
     * inputs, counted outside the body) */
    mp_block *own = NULL;
    uint32_t n_own = 0;
    uint64_t *live = NULL;
    if (!st && !(own = mp__alloc(ctx, ((size_t)p->n_blocks + 1) *
                                         sizeof *own)))
        st = MP_ERR_NOMEM;
    for (uint32_t k = 0; !st && k < p->n_blocks; k++) {
        const mp_block *bl = &p->blocks[k];
        if (bl->tensor >= g->n_tensors ||
            g->tensors[bl->tensor].kind != MP_KIND_INPUT)
            own[n_own++] = *bl;
    }
    if (!st)
        st = mp__blocks_live(ctx, own, n_own, p->n_steps, &live);
    for (uint32_t s = 0; !st && s < p->n_steps; s++)
        if (live[s] > *peak)
            *peak = live[s];
    mp__dealloc(ctx, live);
    mp__dealloc(ctx, own);
    mp_plan_destroy(p);
    return st;
}

/* Shape ranges: a plan made with every symbolic dim at its upper
 * bound holds the same model at smaller values when each arena tensor
 * there is no larger than its block. mp_plan_fits checks one such graph
 * against the plan (mp_plan_check_range, frontends/load.c, loads a model
 * at several values and checks each). The plan itself is never changed:
 * offsets stay sized for the bound. */
mp_status mp_plan_fits(const mp_plan *p, const mp_graph *g)
{
    if (!p || !g)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    const mp_graph *pg = p->graph;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    if (g->n_tensors != pg->n_tensors || g->n_nodes != pg->n_nodes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "graph has %zu tensors and %zu nodes, the plan's "
                      "%zu and %zu: not the same model",
                      g->n_tensors, g->n_nodes, pg->n_tensors, pg->n_nodes);
    /* the largest block of each tensor of the plan's graph */
    uint64_t *cap = mp__calloc(ctx, pg->n_tensors + 1, sizeof *cap);
    uint8_t *has = mp__calloc(ctx, pg->n_tensors + 1, 1);
    if (!cap || !has) {
        mp__dealloc(ctx, cap);
        mp__dealloc(ctx, has);
        return MP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        has[b->tensor] = 1;
        if (b->size > cap[b->tensor])
            cap[b->tensor] = b->size;
    }
    mp_status st = MP_OK;
    for (size_t t = 0; t < g->n_tensors && !st; t++) {
        const mp__tensor *gt = &g->tensors[t];
        uint32_t pt = MP_NONE;
        if (mp_graph_find_tensor(pg, gt->name, &pt) != MP_OK) {
            st = mp__err(ctx, MP_ERR_VERIFY,
                        "tensor '%s' is not in the plan's graph", gt->name);
            break;
        }
        const mp__tensor *ptt = &pg->tensors[pt];
        bool in_g = mp__tensor_in_arena(gt), in_p = mp__tensor_in_arena(ptt);
        /* an empty tensor (a dim of 0 at these values) needs no memory */
        if (!in_g && gt->bytes == 0 && gt->alias_of == MP_NONE &&
            gt->kind == ptt->kind)
            continue;
        if (in_g != in_p || (gt->alias_of == MP_NONE) !=
                                (ptt->alias_of == MP_NONE)) {
            st = mp__err(ctx, MP_ERR_VERIFY,
                        "tensor '%s' takes memory differently from the "
                        "plan's graph (kind or view)",
                        gt->name);
            break;
        }
        /* no block: unused, or inside a fused chain; no memory either way */
        if (!in_g || !has[pt])
            continue;
        if (gt->bytes > cap[pt])
            st = mp__err(ctx, MP_ERR_VERIFY,
                        "tensor '%s' needs %llu bytes, its block holds %llu",
                        gt->name, (unsigned long long)gt->bytes,
                        (unsigned long long)cap[pt]);
    }
    mp__dealloc(ctx, cap);
    mp__dealloc(ctx, has);
    return st;
}
