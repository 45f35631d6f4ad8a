/* Segment checkpointing with polishing: Chen et al.'s greedy
 * segmentation on the forward graph's articulation points, where only a
 * value that backward reads can be a checkpoint, swept over the segment
 * budget, then polished.
 *
 * Why a checkpoint must be a saved value: the cut after an Add (a ResNet
 * block's sum) is an articulation point, but the sum is read only by the
 * Relu after it, so it is freed in forward whatever the policy says; taken
 * as a checkpoint it holds nothing, and the backward pass recomputes from
 * the previous real checkpoint or from the graph input. Candidates are
 * therefore the cut units whose value a later (backward) stage reads.
 *
 * Policy: checkpoints are kept; every other value that backward reads is
 * freed after its last forward reader and recomputed in backward by the
 * replay (mp__remat_simulate: missing inputs are recomputed recursively
 * from the resident ones, recomputed copies kept to their last reader), so
 * each dropped value is recomputed about once per segment: at most one
 * extra forward pass. The sweep over the segment budget b (geometric, between
 * the largest forward value and the whole forward pass) keeps the
 * cheapest schedule within the cap; with eviction under pressure as a
 * repair where the plain policy does not fit. Polishing then keeps again
 * each dropped value, most expensive per byte first, while the cap holds
 * and the cost does not rise: what is left dropped is what the cap needs.
 * The best schedule goes to the search (try_fn), which replays it again;
 * when none fits, the one with the smallest peak does (the search
 * reports the smallest peak found). */
#include "heuristics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct seg_ctx {
    const mp__remat_prob *p;
    uint64_t cap;
    double max_extra;
    uint32_t *lfu;       /* last forward reader (the unit itself if none) */
    uint8_t *saved;      /* forward value that a later stage reads */
    uint8_t *cand;       /* saved and at a forward articulation point */
    uint32_t *drop;      /* the policy's drop_after */
    uint32_t n_sims;
} seg_ctx;

/* Evaluates drop (with eviction at cap when evict): 1 when it fits. */
static mp_status seg_eval(seg_ctx *C, int evict, mp__remat_out *o, int *fits)
{
    mp__remat_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.drop_after = C->drop;
    if (evict) {
        pol.evict_cap = C->cap;
        pol.evict_next_use = evict == 2;
    }
    if (C->max_extra >= 0)
        pol.cost_cutoff = C->max_extra > 0 ? C->max_extra * (1 + 1e-9) : 1e-300;
    mp_status st = mp__remat_simulate(C->p, &pol, 0, o);
    C->n_sims++;
    *fits = !st && mp__remat_fits(o, C->cap, C->max_extra);
    return st;
}

/* drop from the greedy segmentation with budget b. */
static void seg_drops(seg_ctx *C, double b)
{
    const mp__remat_prob *p = C->p;
    double acc = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        C->drop[u] = UINT32_MAX;
        if (!p->fwd[u])
            continue;
        acc += (double)p->mem[u];
        if (C->cand[u] && acc > b) {
            acc = 0; /* a checkpoint: kept */
            continue;
        }
        if (C->saved[u])
            C->drop[u] = C->lfu[u];
    }
}

typedef struct seg_key {
    double key;
    uint32_t u;
} seg_key;

static int cmp_seg_key(const void *a, const void *b)
{
    const seg_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1; /* descending */
    return (x->u > y->u) - (x->u < y->u);
}

mp_status mp__remat_segments(const mp__remat_prob *p, uint64_t cap,
                             double max_extra, const uint8_t *seed,
                             mp__remat_try_fn try_fn, void *try_user)
{
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    seg_ctx C;
    memset(&C, 0, sizeof C);
    C.p = p;
    C.cap = cap;
    C.max_extra = max_extra;
    C.lfu = mp__alloc(ctx, T1 * sizeof *C.lfu);
    C.saved = mp__calloc(ctx, T1, 1);
    C.cand = mp__calloc(ctx, T1, 1);
    C.drop = mp__alloc(ctx, T1 * sizeof *C.drop);
    uint32_t *best = mp__alloc(ctx, T1 * sizeof *best);
    seg_key *keys = mp__alloc(ctx, T1 * sizeof *keys);
    mp_status st = MP_OK;
    if (!C.lfu || !C.saved || !C.cand || !C.drop || !best || !keys) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    /* last forward readers, saved values and articulation points (no
     * forward edge crosses the boundary after u) */
    double total = 0, mmax = 1;
    uint32_t reach = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        uint32_t l = u, last = u;
        for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++) {
            uint32_t c = p->uses[j];
            if (p->fwd[c] && c > l)
                l = c;
            if (c > last)
                last = c;
        }
        C.lfu[u] = l;
        if (!p->fwd[u])
            continue;
        C.saved[u] = !p->out[u] && p->mem[u] > 0 && last > l;
        /* the min-cut's drops stay dropped: never checkpoints */
        C.cand[u] = C.saved[u] && reach <= u && !(seed && seed[u]);
        if (l > reach)
            reach = l;
        total += (double)p->mem[u];
        if ((double)p->mem[u] > mmax)
            mmax = (double)p->mem[u];
    }
    if (total < mmax)
        total = mmax;
    /* the sweep */
    const int K = 64;
    double best_cost = INFINITY;
    int best_evict = 0, low_evict = 0;
    uint64_t low_peak = UINT64_MAX;
    mp__remat_out o;
    for (int i = 0; i <= K; i++) {
        double b = mmax * pow(total / mmax, (double)i / K) * 0.999;
        seg_drops(&C, b);
        for (int ev = 0; ev < 3; ev++) {
            int fits;
            if ((st = seg_eval(&C, ev, &o, &fits)))
                goto done;
            if (fits && o.extra_cost < best_cost) {
                best_cost = o.extra_cost;
                best_evict = ev;
                memcpy(best, C.drop, T1 * sizeof *best);
            }
            if (best_cost == INFINITY && !o.cut && o.peak < low_peak) {
                low_peak = o.peak; /* the smallest peak while none fits */
                low_evict = ev;
                memcpy(best, C.drop, T1 * sizeof *best);
            }
            if (fits && ev == 0)
                break; /* eviction only repairs (both scores tried) */
        }
    }
    if (best_cost == INFINITY) {
        /* none fits: the search still learns the smallest peak found */
        if (low_peak != UINT64_MAX) {
            mp__remat_policy pol;
            memset(&pol, 0, sizeof pol);
            pol.drop_after = best;
            if (low_evict) {
                pol.evict_cap = cap;
                pol.evict_next_use = low_evict == 2;
            }
            st = try_fn(try_user, seed ? "mincut+segments" : "segments",
                        &pol);
        }
        goto done;
    }
    /* polish: keep each dropped value again, most expensive per byte
     * first, while the cap holds and the cost does not rise */
    memcpy(C.drop, best, T1 * sizeof *best);
    uint32_t n = 0;
    for (uint32_t u = 0; u < p->T; u++)
        if (C.drop[u] != UINT32_MAX) {
            keys[n].u = u;
            keys[n].key = (p->cost[u] + 1e-15) / (double)p->mem[u];
            n++;
        }
    qsort(keys, n, sizeof *keys, cmp_seg_key);
    for (int pass = 0; pass < 2; pass++) {
        int changed = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t u = keys[i].u;
            if (C.drop[u] == UINT32_MAX)
                continue;
            uint32_t saved = C.drop[u];
            C.drop[u] = UINT32_MAX;
            int fits;
            if ((st = seg_eval(&C, best_evict, &o, &fits)))
                goto done;
            if (fits && o.extra_cost <= best_cost) {
                changed |= o.extra_cost < best_cost;
                best_cost = o.extra_cost;
            } else {
                C.drop[u] = saved;
            }
        }
        if (!changed)
            break;
    }
    {
        mp__remat_policy pol;
        memset(&pol, 0, sizeof pol);
        pol.drop_after = C.drop;
        if (best_evict) {
            pol.evict_cap = cap;
            pol.evict_next_use = best_evict == 2;
        }
        static const char *const names[2][3] = {
            {"segments", "segments+evict", "segments+evict-next-use"},
            {"mincut+segments", "mincut+segments+evict",
             "mincut+segments+evict-next-use"}};
        st = try_fn(try_user, names[seed != NULL][best_evict], &pol);
    }
done:
    mp__dealloc(ctx, C.lfu);
    mp__dealloc(ctx, C.saved);
    mp__dealloc(ctx, C.cand);
    mp__dealloc(ctx, C.drop);
    mp__dealloc(ctx, best);
    mp__dealloc(ctx, keys);
    return st;
}
