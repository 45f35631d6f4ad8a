/* Schedules and lifetimes: the default schedule of a graph and the
 * schedule of a given topological order, the blocks (tensor instances in
 * the arena with their live intervals) derived from any schedule, and
 * live bytes per step. */
#include "sched.h"

#include <stdbool.h>
#include <string.h>

/* Position (in topological order) of the last use of each storage root:
 * the latest consumer of the root or of any view of it; UINT32_MAX for
 * roots that must stay to the end (graph outputs or views of them). */
static mp_status last_uses(const mp_graph *g, uint32_t **out)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    uint32_t *pos = mp__alloc(ctx, (nn ? nn : 1) * sizeof *pos);
    uint32_t *last = mp__alloc(ctx, (nt ? nt : 1) * sizeof *last);
    if (!pos || !last) {
        mp__dealloc(ctx, pos);
        mp__dealloc(ctx, last);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < nn; k++)
        pos[g->topo[k]] = k;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        /* unused tensors die where they are produced */
        last[t] = tt->producer != MP_NONE ? pos[tt->producer] : 0;
    }
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        uint32_t r = tt->root, l = 0;
        if (tt->flags & MP__TF_OUTPUT)
            l = UINT32_MAX;
        for (uint32_t c = 0; c < tt->n_cons && l != UINT32_MAX; c++) {
            uint32_t p = pos[g->cons[tt->cons_begin + c]];
            if (p > l)
                l = p;
        }
        if (tt->producer != MP_NONE && pos[tt->producer] > l &&
            l != UINT32_MAX)
            l = pos[tt->producer];
        if (l > last[r])
            last[r] = l;
    }
    mp__dealloc(ctx, pos);
    *out = last;
    return MP_OK;
}

/* The steps of a topological order (nn nodes): COMPUTE each node, then
 * FREE each arena root whose last use (last[], UINT32_MAX: kept to the
 * end) is that position, in increasing id order. steps: room for
 * n_nodes + n_tensors entries. */
static mp_status steps_from_last_uses(const mp_graph *g, const uint32_t *order,
                                      const uint32_t *last, mp_step *steps,
                                      uint32_t *n_out)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    /* bucket the arena roots by the position of their last use */
    uint32_t *head = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *head);
    uint32_t *next = mp__alloc(ctx, (nt ? nt : 1) * sizeof *next);
    if (!head || !next) {
        mp__dealloc(ctx, head);
        mp__dealloc(ctx, next);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k <= nn; k++)
        head[k] = MP_NONE;
    /* insert in decreasing id order so that each list is increasing */
    for (uint32_t t = nt; t-- > 0;) {
        const mp__tensor *tt = &g->tensors[t];
        if (!mp__tensor_in_arena(tt) || last[t] == UINT32_MAX)
            continue;
        if (tt->producer == MP_NONE && tt->n_cons == 0)
            continue; /* an unused input gets no block */
        uint32_t k = last[t] < nn ? last[t] : nn;
        next[t] = head[k];
        head[k] = t;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < nn; k++) {
        steps[n].kind = MP_STEP_COMPUTE;
        steps[n++].index = order[k];
        for (uint32_t t = head[k]; t != MP_NONE; t = next[t]) {
            steps[n].kind = MP_STEP_FREE;
            steps[n++].index = t;
        }
    }
    mp__dealloc(ctx, head);
    mp__dealloc(ctx, next);
    *n_out = n;
    return MP_OK;
}

mp_status mp__schedule_default(const mp_graph *g, mp_step **steps_out,
                              uint32_t *n_out)
{
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    uint32_t *last;
    mp_status st = last_uses(g, &last);
    if (st)
        return st;
    size_t cap = (size_t)nn + nt;
    mp_step *steps = mp__alloc(ctx, (cap ? cap : 1) * sizeof *steps);
    uint32_t n = 0;
    st = steps ? steps_from_last_uses(g, g->topo, last, steps, &n)
               : MP_ERR_NOMEM;
    mp__dealloc(ctx, last);
    if (st) {
        mp__dealloc(ctx, steps);
        return st;
    }
    *steps_out = steps;
    *n_out = n;
    return MP_OK;
}

/* pos[node]: the node's position in order; an error when order is not a
 * topological order of g's nodes. */
static mp_status order_positions(const mp_graph *g, const uint32_t *order,
                                 uint32_t *pos)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nn = (uint32_t)g->n_nodes;
    for (uint32_t k = 0; k < nn; k++)
        pos[k] = MP_NONE;
    for (uint32_t k = 0; k < nn; k++) {
        if (order[k] >= nn || pos[order[k]] != MP_NONE)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "order: entry %u is not a node or repeats one",
                          (unsigned)k);
        pos[order[k]] = k;
    }
    for (uint32_t k = 0; k < nn; k++) {
        const mp__node *n = &g->nodes[order[k]];
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t t = n->inputs[i];
            if (t != MP_NONE && g->tensors[t].producer != MP_NONE &&
                pos[g->tensors[t].producer] >= k)
                return mp__err(ctx, MP_ERR_INVALID_ARG,
                              "order: node '%s' comes before '%s', which "
                              "computes its input '%s'",
                              n->name, g->nodes[g->tensors[t].producer].name,
                              g->tensors[t].name);
        }
    }
    return MP_OK;
}

mp_status mp__schedule_from_order(const mp_graph *g, const uint32_t *order,
                                 mp_step **steps_out, uint32_t *n_out)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    uint32_t *pos = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *pos);
    uint32_t *last = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *last);
    mp_step *steps = mp__alloc(ctx, ((size_t)nn + nt + 1) * sizeof *steps);
    mp_status st = MP_OK;
    if (!pos || !last || !steps) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = order_positions(g, order, pos)))
        goto done;
    /* last use of each storage root (UINT32_MAX: kept to the end) */
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        last[t] = tt->producer != MP_NONE ? pos[tt->producer] : 0;
    }
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        uint32_t r = tt->root;
        if (tt->flags & MP__TF_OUTPUT) {
            last[r] = UINT32_MAX;
            continue;
        }
        for (uint32_t c = 0; c < tt->n_cons; c++) {
            uint32_t p = pos[g->cons[tt->cons_begin + c]];
            if (last[r] != UINT32_MAX && p > last[r])
                last[r] = p;
        }
    }
    uint32_t n = 0;
    if ((st = steps_from_last_uses(g, order, last, steps, &n)))
        goto done;
    *steps_out = steps;
    *n_out = n;
    steps = NULL;
done:
    mp__dealloc(ctx, pos);
    mp__dealloc(ctx, last);
    mp__dealloc(ctx, steps);
    return st;
}

/* The walk over a schedule that makes its blocks: open[t] is the block
 * of tensor t while it is resident, MP_NONE otherwise. */
typedef struct walk {
    const mp_graph *g;
    mp_ctx *ctx;
    uint64_t alignment;
    uint32_t n_steps;
    const uint32_t *step_over; /* in-place sharing (NULL: none) */
    const uint8_t *step_fused; /* per step: its output is fused (NULL: none) */
    uint32_t *open;
    uint8_t *on_host;          /* offloaded tensors (without sharing) */
    bool want_over;            /* keep each block's over[] */
    mp_block *blocks;
    uint32_t *over;
    size_t n, cap, cap_over;
} walk;

/* A new block of tensor t from step s, taking over tensor ov's memory
 * (MP_NONE: none). */
static mp_status open_block(walk *w, uint32_t t, uint32_t s, uint32_t ov)
{
    const mp__tensor *tt = &w->g->tensors[t];
    uint64_t sz;
    if (!mp__align_up(tt->bytes, w->alignment, &sz))
        return mp__err(w->ctx, MP_ERR_OVERFLOW,
                       "tensor '%s': aligned size overflows", tt->name);
    mp_status st = mp__grow(w->ctx, (void **)&w->blocks, sizeof *w->blocks,
                            w->n + 1, &w->cap);
    if (!st && w->want_over)
        st = mp__grow(w->ctx, (void **)&w->over, sizeof *w->over, w->n + 1,
                      &w->cap_over);
    if (st)
        return st;
    mp_block *b = &w->blocks[w->n];
    b->tensor = t;
    b->offset = 0;
    b->size = sz;
    b->first = s;
    b->end = w->n_steps;
    if (w->want_over)
        w->over[w->n] = ov;
    w->open[t] = (uint32_t)w->n++;
    return MP_OK;
}

static void close_block(walk *w, uint32_t t, uint32_t s)
{
    w->blocks[w->open[t]].end = s;
    w->open[t] = MP_NONE;
}

/* COMPUTE or RECOMPUTE at step s: a block per arena output (none when
 * the step's output instance is fused); output 0 may take over a dying
 * input (step_over). */
static mp_status walk_compute(walk *w, uint32_t s, uint32_t node)
{
    const mp_graph *g = w->g;
    if (node >= g->n_nodes)
        return mp__err(w->ctx, MP_ERR_INVALID_ARG, "step %u: no node %u",
                       (unsigned)s, (unsigned)node);
    const mp__node *nd = &g->nodes[node];
    uint32_t x = w->step_over ? w->step_over[s] : MP_NONE;
    for (uint32_t o = 0; o < nd->n_out; o++) {
        uint32_t t = nd->outputs[o];
        if (t == MP_NONE || !mp__tensor_in_arena(&g->tensors[t]) ||
            (w->step_fused && w->step_fused[s]))
            continue;
        if (w->open[t] != MP_NONE)
            return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                           "step %u: node '%s' writes '%s' which is still "
                           "resident",
                           (unsigned)s, nd->name, g->tensors[t].name);
        uint32_t ov = MP_NONE;
        if (o == 0 && x != MP_NONE) {
            if (x >= g->n_tensors || w->open[x] == MP_NONE)
                return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                               "step %u: node '%s' writes in place over a "
                               "tensor that is not resident",
                               (unsigned)s, nd->name);
            close_block(w, x, s);
            ov = x;
        }
        mp_status st = open_block(w, t, s, ov);
        if (st)
            return st;
    }
    return MP_OK;
}

/* Step s; OFFLOAD and PREFETCH only without sharing. */
static mp_status walk_step(walk *w, uint32_t s, const mp_step *sp)
{
    uint32_t t = sp->index, nt = (uint32_t)w->g->n_tensors;
    bool shared = w->step_over || w->step_fused;
    switch (sp->kind) {
    case MP_STEP_COMPUTE:
    case MP_STEP_RECOMPUTE:
        return walk_compute(w, s, t);
    case MP_STEP_FREE:
        if (t >= nt || w->open[t] == MP_NONE)
            return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                           "step %u: frees a tensor that is not resident",
                           (unsigned)s);
        close_block(w, t, s);
        return MP_OK;
    case MP_STEP_OFFLOAD:
        if (shared)
            break;
        /* the copy to host has completed: the device block ends */
        if (t >= nt || w->open[t] == MP_NONE)
            return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                           "step %u: offloads a tensor that is not resident",
                           (unsigned)s);
        close_block(w, t, s);
        w->on_host[t] = 1;
        return MP_OK;
    case MP_STEP_PREFETCH:
        if (shared)
            break;
        /* a new device instance of a tensor held on host */
        if (t >= nt || w->open[t] != MP_NONE || !w->on_host[t])
            return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                           "step %u: prefetches a tensor that is not on host",
                           (unsigned)s);
        return open_block(w, t, s, MP_NONE);
    default:
        if (shared)
            break;
        return mp__err(w->ctx, MP_ERR_INVALID_ARG,
                       "step %u: invalid step kind", (unsigned)s);
    }
    return mp__err(w->ctx, MP_ERR_UNSUPPORTED,
                   "step %u: %s steps do not combine with in-place reuse or "
                   "fusion",
                   (unsigned)s, mp_step_kind_name(sp->kind));
}

mp_status mp__schedule_blocks(const mp_graph *g, const mp_step *steps,
                             uint32_t n_steps, uint64_t alignment,
                             const uint32_t *step_over,
                             const uint8_t *step_fused,
                             mp_block **blocks_out, uint32_t *n_out,
                             uint32_t **over_out)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors;
    if (over_out)
        *over_out = NULL;
    if (alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    walk w = {.g = g, .ctx = ctx, .alignment = alignment, .n_steps = n_steps,
              .step_over = step_over, .step_fused = step_fused,
              .want_over = step_over && over_out};
    w.open = mp__alloc(ctx, (nt ? nt : 1) * sizeof *w.open);
    if (!step_over && !step_fused)
        w.on_host = mp__calloc(ctx, nt ? nt : 1, 1);
    mp_status st = MP_OK;
    if (!w.open || (!step_over && !step_fused && !w.on_host))
        st = MP_ERR_NOMEM;
    for (uint32_t t = 0; t < nt && !st; t++)
        w.open[t] = MP_NONE;
    /* graph inputs in the arena are resident from the start */
    for (uint32_t t = 0; t < nt && !st; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE && mp__tensor_in_arena(tt) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            st = open_block(&w, t, 0, MP_NONE);
    }
    for (uint32_t s = 0; s < n_steps && !st; s++)
        st = walk_step(&w, s, &steps[s]);
    mp__dealloc(ctx, w.open);
    mp__dealloc(ctx, w.on_host);
    bool any = false;
    for (size_t i = 0; i < w.n && w.over && !any; i++)
        any = w.over[i] != MP_NONE;
    if (st || !any) {
        mp__dealloc(ctx, w.over);
        w.over = NULL;
    }
    if (st) {
        mp__dealloc(ctx, w.blocks);
        return st;
    }
    *blocks_out = w.blocks;
    *n_out = (uint32_t)w.n;
    if (over_out)
        *over_out = w.over;
    return MP_OK;
}

mp_status mp__blocks_live(mp_ctx *ctx, const mp_block *blocks, uint32_t n,
                         uint32_t n_steps, uint64_t **live_out)
{
    uint64_t *live = mp__calloc(ctx, (size_t)n_steps + 1, sizeof *live);
    if (!live)
        return MP_ERR_NOMEM;
    /* starts in live[], ends in delta_neg[]; the prefix sum is checked */
    uint64_t *delta_neg = mp__calloc(ctx, (size_t)n_steps + 1, sizeof *delta_neg);
    if (!delta_neg) {
        mp__dealloc(ctx, live);
        return MP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = blocks[i].first, b = blocks[i].end;
        if (a >= b || a > n_steps)
            continue;
        live[a] += blocks[i].size;
        if (b <= n_steps)
            delta_neg[b] += blocks[i].size;
    }
    uint64_t cur = 0;
    for (uint32_t s = 0; s < n_steps; s++) {
        cur -= delta_neg[s];
        if (!mp__add_u64(cur, live[s], &cur)) {
            mp__dealloc(ctx, live);
            mp__dealloc(ctx, delta_neg);
            return mp__err(ctx, MP_ERR_OVERFLOW, "live bytes overflow 64 bits");
        }
        live[s] = cur;
    }
    live[n_steps] = 0;
    mp__dealloc(ctx, delta_neg);
    *live_out = live;
    return MP_OK;
}
