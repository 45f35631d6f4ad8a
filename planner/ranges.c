/* Shape ranges (issue 9): a plan made with every symbolic dim at its upper
 * bound holds the same model at smaller values when each arena tensor
 * there is no larger than its block. mp_plan_fits checks one such graph
 * against the plan; mp_plan_check_range loads a model at several values
 * and checks each. The plan itself is never changed: offsets stay sized
 * for the bound. */
#include "sched.h"

#include <string.h>

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

mp_status mp_plan_check_range(const mp_plan *p, const char *path,
                              const mp_dim_binding *sets, size_t n_dims,
                              size_t n_sets, size_t *failed)
{
    if (failed)
        *failed = n_sets;
    if (!p || !path || (n_sets && n_dims && !sets))
        return MP_ERR_INVALID_ARG;
    for (size_t k = 0; k < n_sets; k++) {
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_dims(p->ctx, path, sets + k * n_dims,
                                          n_dims, &g);
        if (!st)
            st = mp_plan_fits(p, g);
        mp_graph_destroy(g);
        if (st) {
            if (failed)
                *failed = k;
            return st;
        }
    }
    return MP_OK;
}
