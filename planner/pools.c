/* Memory pools and placement constraints, the driver: the plan
 * is first made as usual (schedule, lifetimes, in-place chains); its
 * buffers (one per chain of blocks sharing memory) get the rules of their
 * tensors and their accesses, solvers/pools.c assigns them to pools and
 * places them, and the plan takes the offsets, the pool of each block and
 * the per-pool figures. Also the time estimate of a plan on pools. */
#include "planner.h"
#include "pools_solver.h"
#include "cost.h"

#include <stdio.h>
#include <string.h>

/* Per buffer: rules merged from its blocks' tensors, accesses counted
 * over the compute steps. */
static mp_status collect(mp__pool_problem *x, const mp_plan *p,
                         const mp_constraints *c, const uint32_t *grp)
{
    mp_ctx *ctx = x->ctx;
    const mp_graph *g = p->graph;
    size_t nt = g->n_tensors;
    uint32_t *rule_of = mp__alloc(ctx, (nt + 1) * sizeof *rule_of);
    uint32_t *blk_of = mp__alloc(ctx, (nt + 1) * sizeof *blk_of);
    if (!rule_of || !blk_of) {
        mp__dealloc(ctx, rule_of);
        mp__dealloc(ctx, blk_of);
        return MP_ERR_NOMEM;
    }
    mp_status st = MP_OK;
    for (size_t t = 0; t < nt; t++)
        rule_of[t] = blk_of[t] = MP_NONE;
    for (uint32_t b = 0; b < x->nb; b++)
        x->pb[b] = (mp__pool_buf){MP_NONE, 0, 0, 0, x->plan_align, 0, NULL};
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint32_t b = grp ? grp[i] : i, t = p->blocks[i].tensor;
        if (!x->pb[b].name)
            x->pb[b].name = g->tensors[t].name;
        if (blk_of[t] == MP_NONE)
            blk_of[t] = i;
        if (c->max_buffer && p->blocks[i].size > c->max_buffer)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "tensor '%s' takes %llu bytes, above the largest "
                        "buffer %llu",
                        g->tensors[t].name,
                        (unsigned long long)p->blocks[i].size,
                        (unsigned long long)c->max_buffer);
    }
    for (size_t r = 0; r < c->n_rules && !st; r++) {
        const mp__tensor_rule *ru = &c->rules[r];
        if (ru->tensor >= nt) {
            st = mp__err(ctx, MP_ERR_NOT_FOUND,
                        "constraint on tensor %u: no such tensor",
                        (unsigned)ru->tensor);
            break;
        }
        uint32_t root = g->tensors[ru->tensor].root;
        if (blk_of[root] == MP_NONE) {
            st = mp__err(ctx, MP_ERR_INVALID_ARG,
                        "constraint on tensor '%s': it takes no arena memory",
                        g->tensors[ru->tensor].name);
            break;
        }
        if (rule_of[root] != MP_NONE) {
            st = mp__err(ctx, MP_ERR_INVALID_ARG,
                        "tensor '%s': two constraints on one memory (a view "
                        "and the tensor it views)",
                        g->tensors[ru->tensor].name);
            break;
        }
        rule_of[root] = (uint32_t)r;
    }
    for (uint32_t i = 0; i < p->n_blocks && !st; i++) {
        uint32_t b = grp ? grp[i] : i, t = p->blocks[i].tensor;
        if (rule_of[t] == MP_NONE)
            continue;
        const mp__tensor_rule *ru = &c->rules[rule_of[t]];
        mp__pool_buf *pb = &x->pb[b];
        if (ru->pool != MP_NONE) {
            if (pb->forced && pb->pool != ru->pool)
                st = mp__err(ctx, MP_ERR_INFEASIBLE,
                            "tensor '%s' shares memory in place with a "
                            "tensor of another pool",
                            g->tensors[t].name);
            pb->pool = ru->pool;
            pb->forced = 1;
        }
        if (ru->offset != UINT64_MAX) {
            if (pb->fixed && x->bufs[b].offset != ru->offset)
                st = mp__err(ctx, MP_ERR_INFEASIBLE,
                            "tensor '%s' shares memory in place with a "
                            "tensor pinned elsewhere",
                            g->tensors[t].name);
            pb->fixed = 1;
            x->bufs[b].offset = ru->offset;
        }
        uint64_t a = mp__lcm_u64(pb->align, ru->alignment);
        if (!a)
            st = mp__err(ctx, MP_ERR_OVERFLOW, "tensor '%s': alignment "
                        "overflows", g->tensors[t].name);
        pb->align = a;
        pb->no_share |= ru->no_share;
    }
    for (uint32_t b = 0; b < x->nb && !st; b++) {
        mp__pool_buf *pb = &x->pb[b];
        if (pb->fixed && x->bufs[b].offset % x->plan_align)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "tensor '%s' is pinned at %llu, not a multiple of the "
                        "plan's alignment %llu",
                        pb->name, (unsigned long long)x->bufs[b].offset,
                        (unsigned long long)x->plan_align);
        else if (pb->fixed && x->bufs[b].offset % pb->align)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "tensor '%s' is pinned at %llu, not a multiple of its "
                        "alignment %llu",
                        pb->name, (unsigned long long)x->bufs[b].offset,
                        (unsigned long long)pb->align);
        if (pb->no_share) {
            x->bufs[b].start = 0;
            x->bufs[b].end = (int64_t)p->n_steps;
        }
    }
    /* accesses: the node writing or reading the tensor, per compute step */
    for (uint32_t s = 0; s < p->n_steps && !st; s++) {
        const mp_step *sp = &p->steps[s];
        if (sp->kind != MP_STEP_COMPUTE && sp->kind != MP_STEP_RECOMPUTE)
            continue;
        const mp__node *n = &g->nodes[sp->index];
        for (uint32_t k = 0; k < n->n_in + n->n_out; k++) {
            uint32_t t = k < n->n_in ? n->inputs[k] : n->outputs[k - n->n_in];
            if (t == MP_NONE)
                continue;
            uint32_t i = blk_of[g->tensors[t].root];
            if (i != MP_NONE)
                x->pb[grp ? grp[i] : i].access += 1;
        }
    }
    mp__dealloc(ctx, rule_of);
    mp__dealloc(ctx, blk_of);
    return st;
}

static mp_status apply_constraints(mp_plan *p, const mp_plan_options *opt,
                                   const mp_constraints *c)
{
    mp_ctx *ctx = p->ctx;
    mp__pool_problem x = {ctx, NULL, NULL, 0, p->n_steps, opt->alignment,
                          opt, c};
    uint32_t *grp = NULL;
    uint64_t *pool_arena = NULL;
    uint32_t npools = (uint32_t)(c->n_pools ? c->n_pools : 1);
    mp_status st = mp__sharing_buffers(p, &x.bufs, &x.nb, &grp);
    if (st)
        return st;
    x.pb = mp__alloc(ctx, ((size_t)x.nb + 1) * sizeof *x.pb);
    pool_arena = mp__calloc(ctx, npools, sizeof *pool_arena);
    p->block_pool = mp__calloc(ctx, (size_t)p->n_blocks + 1,
                              sizeof *p->block_pool);
    if (c->n_pools)
        p->pools = mp__calloc(ctx, npools, sizeof *p->pools);
    if (!x.pb || !pool_arena || !p->block_pool || (c->n_pools && !p->pools)) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    st = collect(&x, p, c, grp);
    if (!st)
        st = mp__pools_assign(&x, pool_arena);
    if (st)
        goto done;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint32_t b = grp ? grp[i] : i;
        p->blocks[i].offset = x.bufs[b].offset;
        p->block_pool[i] = x.pb[b].pool;
    }
    uint64_t sum = 0;
    for (uint32_t k = 0; k < npools; k++)
        if (!mp__add_u64(sum, pool_arena[k], &sum)) {
            st = mp__err(ctx, MP_ERR_OVERFLOW, "arena size overflows");
            goto done;
        }
    if (c->n_pools) {
        p->n_pools = npools;
        for (uint32_t k = 0; k < npools; k++) {
            mp__pool_plan *pp = &p->pools[k];
            snprintf(pp->name, sizeof pp->name, "%s", c->pools[k].name);
            pp->capacity = c->pools[k].capacity;
            pp->bandwidth = c->pools[k].bandwidth;
            pp->arena_bytes = pool_arena[k];
        }
        /* per-pool lower bound: max over steps of the pool's live bytes */
        uint64_t *live = mp__calloc(ctx, (size_t)npools * ((size_t)p->n_steps + 1),
                                   sizeof *live);
        if (!live) {
            st = MP_ERR_NOMEM;
            goto done;
        }
        for (uint32_t i = 0; i < p->n_blocks; i++) {
            uint32_t k = p->block_pool[i];
            p->pools[k].n_blocks++;
            for (uint32_t s = p->blocks[i].first; s < p->blocks[i].end; s++) {
                uint64_t *l = &live[(size_t)k * (p->n_steps + 1) + s];
                *l += p->blocks[i].size;
                if (*l > p->pools[k].lower_bound_bytes)
                    p->pools[k].lower_bound_bytes = *l;
            }
        }
        mp__dealloc(ctx, live);
    } else {
        mp__dealloc(ctx, p->block_pool);
        p->block_pool = NULL;
    }
    st = mp__plan_compute_figures(p);
    if (st)
        goto done;
    p->fig.arena_bytes = sum;
    if (!mp__add_u64(sum, p->fig.persistent_bytes, &p->fig.peak_bytes)) {
        st = mp__err(ctx, MP_ERR_OVERFLOW, "peak bytes overflow");
        goto done;
    }
    p->fig.status = sum == p->fig.lower_bound_bytes ? MP_SOLVE_OPTIMAL
                                                    : MP_SOLVE_FEASIBLE;
    snprintf(p->solver_name, sizeof p->solver_name, "%s",
             c->n_pools ? "pools" : "constrained");
    p->fig.solver = p->solver_name;
done:
    mp__dealloc(ctx, x.bufs);
    mp__dealloc(ctx, x.pb);
    mp__dealloc(ctx, grp);
    mp__dealloc(ctx, pool_arena);
    return st;
}

mp_status mp_plan_create_constrained(mp_graph *g, const mp_plan_options *opt,
                                     const mp_constraints *c, mp_plan **out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    if (mp__constraints_trivial(c))
        return mp_plan_create(g, opt, out);
    mp_ctx *ctx = g->ctx;
    if (c->ctx != ctx)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "the constraints belong to another context");
    mp_plan_options o;
    if (opt)
        o = *opt;
    else
        mp_plan_options_init(&o);
    for (size_t r = 0; r < c->n_rules; r++)
        if (c->rules[r].no_share)
            o.inplace = 0; /* a no-share tensor is never written over */
    /* the rules name tensors by id: the graph is planned as it is */
    o.attention = MP_ATTENTION_NAIVE;
    if (c->n_pools)
        for (size_t r = 0; r < c->n_rules; r++)
            if (c->rules[r].pool != MP_NONE && c->rules[r].pool >= c->n_pools)
                return mp__err(ctx, MP_ERR_NOT_FOUND, "no pool %u",
                              (unsigned)c->rules[r].pool);
    double t0 = mp__now_seconds();
    mp_plan *p = NULL;
    mp_status st = mp_plan_create(g, &o, &p);
    if (st)
        return st;
    st = apply_constraints(p, &o, c);
    if (st) {
        mp_plan_destroy(p);
        return st;
    }
    p->fig.solve_seconds = mp__now_seconds() - t0;
    *out = p;
    return MP_OK;
}

/* ---- the time estimate --------------------------------------------------------- */
mp_status mp_plan_estimate_seconds(const mp_plan *p, const mp_constraints *c,
                                   double *seconds)
{
    if (!p || !c || !seconds)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = p->ctx;
    const mp_graph *g = p->graph;
    if (!c->n_pools)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "the time estimate needs pools with bandwidths");
    if (p->n_pools && p->n_pools != c->n_pools)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "the plan has %u pools, the constraints %zu",
                      (unsigned)p->n_pools, c->n_pools);
    uint32_t last = (uint32_t)c->n_pools - 1;
    uint32_t *pool = mp__alloc(ctx, (g->n_tensors + 1) * sizeof *pool);
    if (!pool)
        return MP_ERR_NOMEM;
    for (size_t t = 0; t < g->n_tensors; t++)
        pool[t] = last;
    if (p->block_pool)
        for (uint32_t i = p->n_blocks; i-- > 0;)
            pool[p->blocks[i].tensor] = p->block_pool[i];
    double total = 0;
    mp_status st = MP_OK;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mp_step *sp = &p->steps[s];
        if (sp->kind != MP_STEP_COMPUTE && sp->kind != MP_STEP_RECOMPUTE)
            continue;
        const mp__node *n = &g->nodes[sp->index];
        double mem = 0, flops = 0, bytes = 0;
        for (uint32_t k = 0; k < n->n_in + n->n_out; k++) {
            uint32_t t = k < n->n_in ? n->inputs[k] : n->outputs[k - n->n_in];
            if (t == MP_NONE || g->tensors[t].alias_of != MP_NONE)
                continue; /* views move nothing */
            uint32_t r = g->tensors[t].root;
            mem += (double)g->tensors[t].bytes / c->pools[pool[r]].bandwidth;
        }
        if (c->compute_rate > 0) {
            st = mp__node_flops_bytes(g, sp->index, &flops, &bytes);
            if (st)
                break;
        }
        double comp = c->compute_rate > 0 ? flops / c->compute_rate : 0;
        total += comp > mem ? comp : mem;
    }
    mp__dealloc(ctx, pool);
    if (!st)
        *seconds = total;
    return st;
}
