/* Memory pools and placement constraints (issue 9): which pool each arena
 * buffer goes to, and its offset there, under pool capacities, pinned
 * offsets, per-tensor alignment and no-share tensors.
 *
 * The plan is first made as usual (schedule, lifetimes, in-place chains);
 * then its buffers (one per chain of blocks sharing memory) are assigned:
 * pinned and assigned buffers go where they are told; the others are
 * offered to the pools other than the last, fastest first, in decreasing
 * order of estimated time saved per byte-step of the pool's space-time
 * they take (the bandwidth model of mp_plan_estimate_seconds), while the
 * live bytes of the pool stay under its capacity. Each pool is then placed
 * by the offsets solvers (mp_offsets_solve); where pins or alignments the
 * solvers do not know are present, by a first-fit placement around the
 * pinned buffers. When a pool's arena exceeds its capacity, its target is
 * lowered by the excess and the pool refilled (at most 32 rounds). What is
 * left goes to the last pool. Deterministic. */
#include "sched.h"
#include "constraints.h"
#include "cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pbuf {
    uint32_t pool;        /* MP_NONE: not assigned yet */
    uint8_t fixed;        /* pinned: offset given */
    uint8_t forced;       /* pool given */
    uint8_t no_share;
    uint64_t align;       /* lcm of the plan's and the tensors' */
    double density;       /* time saved per byte-step in the fastest pool */
    double access;        /* accesses (reads + writes) of the buffer */
    uint32_t any_block;   /* a block of the buffer (for names) */
} pbuf;

typedef struct pctx {
    mp_ctx *ctx;
    const mp_graph *g;
    mp_plan *p;
    mp_buffer *bufs;
    pbuf *pb;
    uint32_t nb;
    uint64_t plan_align;
    const mp_plan_options *opt;
} pctx;

static const char *buf_name(const pctx *x, uint32_t b)
{
    return x->g->tensors[x->p->blocks[x->pb[b].any_block].tensor].name;
}

/* ---- first-fit placement around fixed buffers -------------------------------- */
typedef struct span {
    uint64_t off, end;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

typedef struct order_key {
    uint64_t size;
    int64_t start;
    uint32_t idx;
} order_key;

static int cmp_order(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool time_overlap(const mp_buffer *a, const mp_buffer *b)
{
    return a->start < b->end && b->start < a->end;
}

/* Places the buffers `ids` (n of them; fixed ones keep their offset) by
 * first fit in decreasing size. *arena: the extent. */
static mp_status first_fit(pctx *x, const uint32_t *ids, uint32_t n,
                           uint64_t *arena)
{
    mp_ctx *ctx = x->ctx;
    order_key *ord = mp__alloc(ctx, ((size_t)n + 1) * sizeof *ord);
    uint32_t *placed = mp__alloc(ctx, ((size_t)n + 1) * sizeof *placed);
    span *sp = mp__alloc(ctx, ((size_t)n + 1) * sizeof *sp);
    if (!ord || !placed || !sp) {
        mp__dealloc(ctx, ord);
        mp__dealloc(ctx, placed);
        mp__dealloc(ctx, sp);
        return MP_ERR_NOMEM;
    }
    uint32_t np = 0, no = 0;
    mp_status st = MP_OK;
    *arena = 0;
    for (uint32_t k = 0; k < n && !st; k++) {
        uint32_t b = ids[k];
        if (!x->pb[b].fixed) {
            ord[no++] = (order_key){x->bufs[b].size, x->bufs[b].start, b};
            continue;
        }
        const mp_buffer *bb = &x->bufs[b];
        for (uint32_t q = 0; q < np; q++) {
            const mp_buffer *o = &x->bufs[placed[q]];
            if (time_overlap(bb, o) && bb->offset < o->offset + o->size &&
                o->offset < bb->offset + bb->size)
                st = mp__err(ctx, MP_ERR_INFEASIBLE,
                            "pinned tensors '%s' and '%s' overlap while both "
                            "are live",
                            buf_name(x, b), buf_name(x, placed[q]));
        }
        placed[np++] = b;
    }
    qsort(ord, no, sizeof *ord, cmp_order);
    for (uint32_t k = 0; k < no && !st; k++) {
        uint32_t b = ord[k].idx;
        mp_buffer *bb = &x->bufs[b];
        uint32_t ns = 0;
        for (uint32_t q = 0; q < np; q++) {
            const mp_buffer *o = &x->bufs[placed[q]];
            if (time_overlap(bb, o))
                sp[ns++] = (span){o->offset, o->offset + o->size};
        }
        qsort(sp, ns, sizeof *sp, cmp_span);
        uint64_t cand = 0;
        for (uint32_t q = 0; q < ns; q++) {
            uint64_t e;
            if (!mp__add_u64(cand, bb->size, &e)) {
                st = mp__err(ctx, MP_ERR_OVERFLOW, "offset overflows");
                break;
            }
            if (e <= sp[q].off)
                break;
            if (sp[q].end > cand &&
                !mp__align_up(sp[q].end, x->pb[b].align, &cand)) {
                st = mp__err(ctx, MP_ERR_OVERFLOW, "offset overflows");
                break;
            }
        }
        bb->offset = cand;
        placed[np++] = b;
    }
    for (uint32_t q = 0; q < np && !st; q++) {
        const mp_buffer *o = &x->bufs[placed[q]];
        if (o->offset + o->size > *arena)
            *arena = o->offset + o->size;
    }
    mp__dealloc(ctx, ord);
    mp__dealloc(ctx, placed);
    mp__dealloc(ctx, sp);
    return st;
}

/* Places the buffers of one pool; *arena: their extent. */
static mp_status place_pool(pctx *x, const uint32_t *ids, uint32_t n,
                            uint64_t *arena)
{
    mp_ctx *ctx = x->ctx;
    *arena = 0;
    if (!n)
        return MP_OK;
    bool plain = true;
    for (uint32_t k = 0; k < n; k++)
        if (x->pb[ids[k]].fixed || x->pb[ids[k]].align != x->plan_align)
            plain = false;
    if (!plain)
        return first_fit(x, ids, n, arena);
    mp_buffer *tmp = mp__alloc(ctx, (size_t)n * sizeof *tmp);
    if (!tmp)
        return MP_ERR_NOMEM;
    for (uint32_t k = 0; k < n; k++)
        tmp[k] = x->bufs[ids[k]];
    mp_offsets_options oo;
    mp_offsets_options_init(&oo);
    oo.method = x->opt->method;
    oo.alignment = x->plan_align;
    oo.time_limit = x->opt->time_limit;
    oo.seed = x->opt->seed;
    mp_offsets_result res;
    mp_status st = mp_offsets_solve(ctx, tmp, n, &oo, &res);
    if (!st) {
        for (uint32_t k = 0; k < n; k++)
            x->bufs[ids[k]].offset = tmp[k].offset;
        *arena = res.arena_bytes;
    }
    mp__dealloc(ctx, tmp);
    return st;
}

/* ---- assignment ---------------------------------------------------------------- */
typedef struct dens_key {
    double d;
    uint32_t idx;
} dens_key;

static int cmp_dens(const void *a, const void *b)
{
    const dens_key *x = a, *y = b;
    if (x->d != y->d)
        return x->d > y->d ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Members of pool k (ids, count). */
static uint32_t members(const pctx *x, uint32_t k, uint32_t *ids)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < x->nb; b++)
        if (x->pb[b].pool == k)
            ids[n++] = b;
    return n;
}

/* Fills fast pool k: the forced buffers, then free ones by density while
 * the pool's live bytes stay within target; placed; *arena its extent. */
static mp_status fill_pool(pctx *x, uint32_t k, const mp__pool_def *pd,
                           uint64_t target, const dens_key *cand,
                           uint32_t n_cand, uint64_t *live, uint32_t *ids,
                           uint64_t *arena)
{
    uint32_t ns = x->p->n_steps;
    memset(live, 0, ((size_t)ns + 1) * sizeof *live);
    for (uint32_t b = 0; b < x->nb; b++)
        if (x->pb[b].pool == k && !x->pb[b].forced)
            x->pb[b].pool = MP_NONE;
    for (uint32_t b = 0; b < x->nb; b++)
        if (x->pb[b].pool == k)
            for (int64_t s = x->bufs[b].start; s < x->bufs[b].end; s++)
                live[s] += x->bufs[b].size;
    for (uint32_t c = 0; c < n_cand; c++) {
        uint32_t b = cand[c].idx;
        const mp_buffer *bb = &x->bufs[b];
        if (x->pb[b].pool != MP_NONE || cand[c].d <= 0)
            continue;
        if (pd->max_buffer && bb->size > pd->max_buffer)
            continue;
        bool fits = bb->size <= target;
        for (int64_t s = bb->start; s < bb->end && fits; s++)
            if (live[s] + bb->size > target)
                fits = false;
        if (!fits)
            continue;
        x->pb[b].pool = k;
        for (int64_t s = bb->start; s < bb->end; s++)
            live[s] += bb->size;
    }
    return place_pool(x, ids, members(x, k, ids), arena);
}

static mp_status assign_and_place(pctx *x, const mp_constraints *c,
                                  uint64_t *pool_arena)
{
    mp_ctx *ctx = x->ctx;
    uint32_t npools = (uint32_t)(c->n_pools ? c->n_pools : 1);
    uint32_t last = npools - 1, ns = x->p->n_steps;
    uint32_t *ids = mp__alloc(ctx, ((size_t)x->nb + 1) * sizeof *ids);
    uint64_t *live = mp__alloc(ctx, ((size_t)ns + 1) * sizeof *live);
    dens_key *cand = mp__alloc(ctx, ((size_t)x->nb + 1) * sizeof *cand);
    uint32_t *porder = mp__alloc(ctx, (size_t)npools * sizeof *porder);
    mp_status st = MP_OK;
    if (!ids || !live || !cand || !porder) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    /* fast pools in decreasing bandwidth (ties: in the order given) */
    uint32_t nf = 0;
    for (uint32_t k = 0; k + 1 < npools; k++) {
        uint32_t j = nf++;
        while (j > 0 && c->pools[porder[j - 1]].bandwidth <
                            c->pools[k].bandwidth) {
            porder[j] = porder[j - 1];
            j--;
        }
        porder[j] = k;
    }
    for (uint32_t f = 0; f < nf; f++) {
        uint32_t k = porder[f];
        const mp__pool_def *pd = &c->pools[k];
        double gain = 1.0 / c->pools[last].bandwidth - 1.0 / pd->bandwidth;
        uint32_t n_cand = 0;
        for (uint32_t b = 0; b < x->nb; b++) {
            const mp_buffer *bb = &x->bufs[b];
            double area = (double)bb->size * (double)(bb->end - bb->start);
            double d = area > 0 ? x->pb[b].access * (double)bb->size * gain /
                                      area
                                : 0;
            cand[n_cand++] = (dens_key){d, b};
        }
        qsort(cand, n_cand, sizeof *cand, cmp_dens);
        uint64_t target = pd->capacity, arena = 0;
        for (int round = 0; round < 32; round++) {
            st = fill_pool(x, k, pd, target, cand, n_cand, live, ids, &arena);
            if (st || arena <= pd->capacity)
                break;
            uint64_t excess = arena - pd->capacity;
            target = target > excess ? target - excess : 0;
            if (round == 31) {
                /* keep only what the pool must hold */
                st = fill_pool(x, k, pd, 0, cand, 0, live, ids, &arena);
            }
        }
        if (st)
            goto done;
        if (arena > pd->capacity) {
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "pool '%s': the tensors assigned or pinned there need "
                        "%llu bytes, above its capacity %llu",
                        pd->name, (unsigned long long)arena,
                        (unsigned long long)pd->capacity);
            goto done;
        }
        pool_arena[k] = arena;
    }
    for (uint32_t b = 0; b < x->nb; b++)
        if (x->pb[b].pool == MP_NONE)
            x->pb[b].pool = last;
    st = place_pool(x, ids, members(x, last, ids), &pool_arena[last]);
    if (!st && c->n_pools && pool_arena[last] > c->pools[last].capacity)
        st = mp__err(ctx, MP_ERR_INFEASIBLE,
                    "pool '%s': %llu bytes needed, above its capacity %llu",
                    c->pools[last].name,
                    (unsigned long long)pool_arena[last],
                    (unsigned long long)c->pools[last].capacity);
done:
    mp__dealloc(ctx, ids);
    mp__dealloc(ctx, live);
    mp__dealloc(ctx, cand);
    mp__dealloc(ctx, porder);
    return st;
}

/* Per buffer: rules merged from its blocks' tensors, accesses counted
 * over the compute steps. */
static mp_status collect(pctx *x, const mp_constraints *c, const uint32_t *grp)
{
    mp_ctx *ctx = x->ctx;
    const mp_graph *g = x->g;
    mp_plan *p = x->p;
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
    for (uint32_t b = 0; b < x->nb; b++) {
        x->pb[b] = (pbuf){MP_NONE, 0, 0, 0, x->plan_align, 0, 0, MP_NONE};
    }
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint32_t b = grp ? grp[i] : i, t = p->blocks[i].tensor;
        if (x->pb[b].any_block == MP_NONE)
            x->pb[b].any_block = i;
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
        pbuf *pb = &x->pb[b];
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
        pbuf *pb = &x->pb[b];
        if (pb->fixed && x->bufs[b].offset % x->plan_align)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "tensor '%s' is pinned at %llu, not a multiple of the "
                        "plan's alignment %llu",
                        buf_name(x, b), (unsigned long long)x->bufs[b].offset,
                        (unsigned long long)x->plan_align);
        else if (pb->fixed && x->bufs[b].offset % pb->align)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "tensor '%s' is pinned at %llu, not a multiple of its "
                        "alignment %llu",
                        buf_name(x, b), (unsigned long long)x->bufs[b].offset,
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
    pctx x = {ctx, p->graph, p, NULL, NULL, 0, opt->alignment, opt};
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
    st = collect(&x, c, grp);
    if (!st)
        st = assign_and_place(&x, c, pool_arena);
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
