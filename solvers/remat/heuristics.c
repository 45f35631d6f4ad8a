/* Recompute heuristics (docs/training.md): checkpoint-all, Chen's sqrt(n)
 * and greedy segments with a budget sweep, DTR-style eviction, selective
 * recompute of cheap ops with polishing. Each builds policies on the
 * problem (solvers/remat/model.h) and hands them to the search through
 * the goal's eval, which replays them and keeps the best schedule. */
#include "heuristics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mp_status offer(const mp__remat_goal *g, const char *name,
                       const mp__remat_policy *pol, mp__remat_out *o)
{
    return g->eval(g->user, name, pol, o);
}

static uint32_t last_use(const mp__remat_prob *p, uint32_t u)
{
    uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
    return e > b ? p->uses[e - 1] : u;
}

/* Units worth dropping: forward, read after their last forward reader. */
static bool droppable(const mp__remat_prob *p, uint32_t u)
{
    return p->fwd[u] && !p->out[u] && p->mem[u] > 0 &&
           last_use(p, u) > mp__remat_last_fwd_use(p, u);
}

/* drop_after from a set of kept (checkpointed) forward units. */
static void drops_from_keep(const mp__remat_prob *p, const uint8_t *keep,
                            uint32_t *drop)
{
    for (uint32_t u = 0; u < p->T; u++)
        drop[u] = droppable(p, u) && !keep[u] ? mp__remat_last_fwd_use(p, u)
                                               : UINT32_MAX;
}

/* ---- checkpoint-all, Chen, DTR ------------------------------------------- */
mp_status mp__remat_checkpoint_all(const mp__remat_prob *p,
                                   const mp__remat_goal *g)
{
    mp__remat_policy pol;
    mp__remat_out o;
    memset(&pol, 0, sizeof pol);
    if (!g->keep_ckpt)
        return offer(g, "checkpoint-all", &pol, &o);
    uint8_t *pin = mp__alloc(p->ctx, (size_t)p->T + 1);
    if (!pin)
        return MP_ERR_NOMEM;
    for (uint32_t u = 0; u < p->T; u++)
        pin[u] = p->fwd[u];
    pol.pin = pin;
    mp_status st = offer(g, "checkpoint-all", &pol, &o);
    mp__dealloc(p->ctx, pin);
    return st;
}

/* Chen's greedy segmentation with per-segment budget b; b = 0 means the
 * sqrt(n) variant: every ceil(sqrt(n_cuts))-th cut is a checkpoint. */
static void chen_keep(const mp__remat_prob *p, const uint8_t *cut, double b,
                      uint8_t *keep)
{
    uint32_t n_cut = 0;
    for (uint32_t u = 0; u < p->T; u++)
        n_cut += cut[u];
    /* as Checkmate's solve_chen_sqrtn: every floor(sqrt(n))-th candidate */
    uint32_t stride = (uint32_t)floor(sqrt((double)(n_cut ? n_cut : 1)));
    if (stride < 1)
        stride = 1;
    double acc = 0;
    uint32_t seen = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        keep[u] = 0;
        if (!p->fwd[u])
            continue;
        if (b <= 0) {
            if (cut[u] && ++seen % stride == 0)
                keep[u] = 1;
            continue;
        }
        acc += (double)p->mem[u];
        if (cut[u] && acc > b) {
            keep[u] = 1;
            acc = 0;
        }
    }
}

mp_status mp__remat_chen(const mp__remat_prob *p, const mp__remat_goal *g,
                         int greedy)
{
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    uint8_t *cut = mp__alloc(ctx, T1), *keep = mp__alloc(ctx, T1);
    uint32_t *drop = mp__alloc(ctx, T1 * sizeof *drop);
    mp_status st = MP_OK;
    if (!cut || !keep || !drop) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    mp__remat_forward_cuts(p, cut);
    mp__remat_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.drop_after = drop;
    if (g->keep_ckpt)
        pol.pin = keep; /* checkpoints stay to the end */
    mp__remat_out o;
    if (!greedy) {
        chen_keep(p, cut, 0, keep);
        drops_from_keep(p, keep, drop);
        st = offer(g, "chen-sqrt", &pol, &o);
        goto done;
    }
    double total = 0, mmax = 1;
    for (uint32_t u = 0; u < p->T; u++)
        if (p->fwd[u]) {
            total += (double)p->mem[u];
            if ((double)p->mem[u] > mmax)
                mmax = (double)p->mem[u];
        }
    if (total < mmax)
        total = mmax;
    const int K = 96;
    for (int i = 0; i <= K && !st; i++) {
        double b = mmax * pow(total / mmax, (double)i / K) * 0.999;
        chen_keep(p, cut, b, keep);
        drops_from_keep(p, keep, drop);
        st = offer(g, "chen-greedy", &pol, &o);
    }
done:
    mp__dealloc(ctx, cut);
    mp__dealloc(ctx, keep);
    mp__dealloc(ctx, drop);
    return st;
}

mp_status mp__remat_dtr(const mp__remat_prob *p, const mp__remat_goal *g)
{
    mp__remat_policy pol;
    mp__remat_out o;
    memset(&pol, 0, sizeof pol);
    pol.evict_cap = g->cap == UINT64_MAX ? 0 : g->cap;
    if (!pol.evict_cap)
        return mp__remat_checkpoint_all(p, g);
    mp_status st = offer(g, "dtr", &pol, &o);
    if (st || !g->seed)
        return st;
    /* from the min-cut's plan: its drops, then eviction under pressure */
    uint32_t *drop = mp__alloc(p->ctx, ((size_t)p->T + 1) * sizeof *drop);
    if (!drop)
        return MP_ERR_NOMEM;
    for (uint32_t u = 0; u < p->T; u++)
        drop[u] = g->seed[u] ? mp__remat_last_fwd_use(p, u) : UINT32_MAX;
    pol.drop_after = drop;
    st = offer(g, "mincut+dtr", &pol, &o);
    mp__dealloc(p->ctx, drop);
    return st;
}

/* ---- selective recompute ------------------------------------------------- */
/* Droppable units sorted by a score (cheap per byte first: pointwise ops
 * before matmul/conv), the shortest prefix that fits found by bisection,
 * then polished: each dropped unit, most expensive first, is kept again
 * when the budget still holds. With evict: the same with DTR eviction as
 * a fallback under pressure. Seeded (the min-cut's drops), the seeded
 * units come first and every prefix holds them: the search starts from
 * the min-cut's plan, and only polishing keeps one of them again. */
typedef struct sel_key {
    double key;
    uint32_t u;
} sel_key;

static int cmp_sel(const void *a, const void *b)
{
    const sel_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->u > y->u) - (x->u < y->u);
}

typedef struct sel {
    const mp__remat_prob *p;
    const mp__remat_goal *g;
    const char *name;
    mp__remat_policy pol;
    uint32_t *drop;
    sel_key *c;              /* the candidates, sorted */
    uint32_t n;
    uint32_t n0;             /* every prefix holds the first n0 (seeded) */
} sel;

/* Drops the first k candidates and replays. */
static mp_status sel_eval(sel *S, uint32_t k, mp__remat_out *o)
{
    const mp__remat_prob *p = S->p;
    for (uint32_t u = 0; u < p->T; u++)
        S->drop[u] = UINT32_MAX;
    for (uint32_t i = 0; i < k && i < S->n; i++)
        S->drop[S->c[i].u] = mp__remat_last_fwd_use(p, S->c[i].u);
    return offer(S->g, S->name, &S->pol, o);
}

/* The smallest feasible prefix (bisection; the peak falls with k) into
 * *k; *found = 0 when not even all of them fit. */
static mp_status sel_bisect(sel *S, uint32_t *k, int *found)
{
    mp__remat_out o;
    mp_status st;
    *found = 0;
    if ((st = sel_eval(S, S->n, &o)))
        return st;
    if (!mp__remat_fits(&o, S->g->cap, S->g->max_extra))
        return MP_OK;
    uint32_t lo = S->n0, hi = S->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((st = sel_eval(S, mid, &o)))
            return st;
        if (mp__remat_fits(&o, S->g->cap, S->g->max_extra))
            hi = mid;
        else
            lo = mid + 1;
    }
    *k = lo;
    *found = 1;
    return MP_OK;
}

/* The cheapest feasible prefix on a grid into *k. */
static mp_status sel_grid(sel *S, uint32_t *k, int *found)
{
    mp__remat_out o;
    double best = INFINITY;
    *k = 0;
    const uint32_t G = 32;
    for (uint32_t i = 0; i <= G; i++) {
        uint32_t kk = S->n0 + (uint32_t)((uint64_t)(S->n - S->n0) * i / G);
        mp_status st = sel_eval(S, kk, &o);
        if (st)
            return st;
        if (mp__remat_fits(&o, S->g->cap, S->g->max_extra) &&
            o.extra_cost < best) {
            best = o.extra_cost;
            *k = kk;
        }
    }
    *found = best != INFINITY;
    return MP_OK;
}

/* Polish: tries keeping each of the first k dropped units again, most
 * expensive first, while the budget holds and the cost does not rise. */
static mp_status sel_polish(sel *S, uint32_t k)
{
    mp__remat_out o;
    mp_status st;
    if ((st = sel_eval(S, k, &o)))
        return st;
    double cur = o.extra_cost;
    for (int pass = 0; pass < 2; pass++) {
        bool changed = false;
        for (uint32_t i = k; i-- > 0;) {
            uint32_t u = S->c[i].u;
            if (S->drop[u] == UINT32_MAX)
                continue;
            uint32_t saved = S->drop[u];
            S->drop[u] = UINT32_MAX;
            if ((st = offer(S->g, S->name, &S->pol, &o)))
                return st;
            if (mp__remat_fits(&o, S->g->cap, S->g->max_extra) &&
                o.extra_cost <= cur) {
                cur = o.extra_cost;
                changed = true;
            } else {
                S->drop[u] = saved;
            }
        }
        if (!changed)
            break;
    }
    return MP_OK;
}

static mp_status selective(const mp__remat_prob *p, const mp__remat_goal *g,
                           int order, int evict, const uint8_t *seed)
{
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    sel S;
    memset(&S, 0, sizeof S);
    S.p = p;
    S.g = g;
    S.c = mp__alloc(ctx, T1 * sizeof *S.c);
    S.drop = mp__alloc(ctx, T1 * sizeof *S.drop);
    mp_status st = MP_OK;
    if (!S.c || !S.drop) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < p->T; u++) {
        if (!droppable(p, u) && !(seed && seed[u]))
            continue;
        double m = (double)p->mem[u], cost = p->cost[u] + 1e-15;
        S.c[S.n].u = u;
        S.c[S.n].key = order == 0 ? cost / m : order == 1 ? cost : -m;
        if (seed && seed[u]) {
            S.c[S.n].key = -INFINITY; /* first, in unit order */
            S.n0++;
        }
        S.n++;
    }
    qsort(S.c, S.n, sizeof *S.c, cmp_sel);
    S.pol.drop_after = S.drop;
    if (evict && g->cap != UINT64_MAX)
        S.pol.evict_cap = g->cap;
    S.name = seed ? (evict ? "mincut+selective+evict" : "mincut+selective")
                  : (evict ? "selective+evict" : "selective");
    uint32_t k = 0;
    int found;
    st = evict ? sel_grid(&S, &k, &found) : sel_bisect(&S, &k, &found);
    if (!st && found)
        st = sel_polish(&S, k);
done:
    mp__dealloc(ctx, S.c);
    mp__dealloc(ctx, S.drop);
    return st;
}

mp_status mp__remat_selective(const mp__remat_prob *p,
                              const mp__remat_goal *g, int order, int evict)
{
    mp_status st = selective(p, g, order, evict, NULL);
    if (!st && g->seed)
        st = selective(p, g, order, evict, g->seed);
    return st;
}
