/* Memory pools and placement constraints, the solver: which
 * pool each arena buffer goes to, and its offset there, under pool
 * capacities, pinned offsets and per-buffer alignment.
 *
 * Pinned and assigned buffers go where they are told; the others are
 * offered to the pools other than the last, fastest first, in decreasing
 * order of estimated time saved per byte-step of the pool's space-time
 * they take (the bandwidth model of mp_plan_estimate_seconds), while the
 * live bytes of the pool stay under its capacity. Each pool is then placed
 * by the offsets solvers (mp_offsets_solve); where pins or alignments the
 * solvers do not know are present, by a first-fit placement around the
 * pinned buffers. When a pool's arena exceeds its capacity, its target is
 * lowered by the excess and the pool refilled (at most 32 rounds). What is
 * left goes to the last pool. Deterministic.
 *
 * Pure: buffers, rules and pools in, pools and offsets out. The plan they
 * come from and go back to is planner/pools.c's. */
#include "pools_solver.h"

#include <stdlib.h>
#include <string.h>

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
static mp_status first_fit(mp__pool_problem *x, const uint32_t *ids, uint32_t n,
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
                            x->pb[b].name, x->pb[placed[q]].name);
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
static mp_status place_pool(mp__pool_problem *x, const uint32_t *ids, uint32_t n,
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
static uint32_t members(const mp__pool_problem *x, uint32_t k, uint32_t *ids)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < x->nb; b++)
        if (x->pb[b].pool == k)
            ids[n++] = b;
    return n;
}

/* Fills fast pool k: the forced buffers, then free ones by density while
 * the pool's live bytes stay within target; placed; *arena its extent. */
static mp_status fill_pool(mp__pool_problem *x, uint32_t k, const mp__pool_def *pd,
                           uint64_t target, const dens_key *cand,
                           uint32_t n_cand, uint64_t *live, uint32_t *ids,
                           uint64_t *arena)
{
    uint32_t ns = x->n_steps;
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

mp_status mp__pools_assign(mp__pool_problem *x, uint64_t *pool_arena)
{
    mp_ctx *ctx = x->ctx;
    const mp_constraints *c = x->c;
    uint32_t npools = (uint32_t)(c->n_pools ? c->n_pools : 1);
    uint32_t last = npools - 1, ns = x->n_steps;
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
