/* The min-cut save/recompute choice (docs/training.md), as AOTAutograd's
 * default partitioner (min_cut_rematerialization_partition) makes it.
 * Each forward unit u becomes two vertices, u_in -> u_out, the edge's
 * capacity the unit's bytes; u_out -> c_in for each forward reader c,
 * infinite. The source feeds u_in (infinite) of every forward unit that
 * may not be recomputed (p->cheap: matrix products, convolutions,
 * attention, random ops, reductions that shrink their inputs, anything
 * not pointwise, a view or data movement) and u_out of the graph outputs
 * (kept anyway); u_out feeds the sink (infinite) when a backward unit
 * reads u. Graph inputs (the batch; weights are persistent) are not in
 * the network: a cheap unit that reads only them may be recomputed, the
 * input then kept to that recomputation without its bytes in the cut
 * (the batch usually is kept anyway: the first layer's backward reads
 * it).
 * A minimum cut is a set of units, the fewest bytes, such that every
 * value backward reads is saved or recomputable from saved values
 * through cheap units alone. Of the minimum cuts, the one nearest the
 * sink: the least recompute for the same saved bytes.
 *
 * The schedule is written per tensor, as the default schedule is: the
 * nodes in topological order; before a backward node, the forward units
 * it needs that are gone are recomputed (RECOMPUTE steps), recursively,
 * in topological order; each instance of a tensor (a computation or a
 * recomputation) is freed after its last reader before the next one. So
 * a value the cut does not save dies after its last forward reader, its
 * recomputed copy lives from its first backward reader to its last, and
 * a saved value lives to its last reader, recomputations included, as
 * the saved tensors of a partitioned backward do. */
#include "remat_mincut.h"
#include "mincut.h"

#include <stdlib.h>
#include <string.h>

static uint32_t first_back_use(const mp__remat_prob *p, uint32_t u)
{
    for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++)
        if (!p->fwd[p->uses[j]])
            return p->uses[j];
    return MP_NONE;
}

void mp__remat_mincut_free(const mp__remat_prob *p,
                           mp__remat_mincut_choice *c)
{
    mp__dealloc(p->ctx, c->saved);
    memset(c, 0, sizeof *c);
}

typedef struct net {
    uint32_t *from, *to, m;
    uint64_t *cap;
} net;

static void edge(net *g, uint32_t a, uint32_t b, uint64_t c)
{
    g->from[g->m] = a;
    g->to[g->m] = b;
    g->cap[g->m++] = c;
}

/* The network over the forward units (vertex 0 the source, 1 the sink,
 * 2 + 2k and 3 + 2k unit k's in and out), solved; saved[] from the cut. */
static mp_status cut(const mp__remat_prob *p, const uint32_t *idx,
                     uint32_t nf, mp__remat_mincut_choice *c)
{
    mp_ctx *ctx = p->ctx;
    size_t m = 0;
    for (uint32_t u = 0; u < p->T; u++)
        if (p->fwd[u])
            m += 4 + (p->dep_begin[u + 1] - p->dep_begin[u]);
    if (m > UINT32_MAX / 2 || nf > (UINT32_MAX - 2) / 2)
        return mp__err(ctx, MP_ERR_OVERFLOW,
                       "min-cut recompute: the forward graph is too large "
                       "for the flow network (%u units)",
                       (unsigned)nf);
    net g = {mp__alloc(ctx, (m + 1) * sizeof *g.from),
             mp__alloc(ctx, (m + 1) * sizeof *g.to), 0,
             mp__alloc(ctx, (m + 1) * sizeof *g.cap)};
    mp_status st = MP_OK;
    mp__flow_sol sol = {0, NULL};
    if (!g.from || !g.to || !g.cap) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < p->T; u++) {
        if (!p->fwd[u])
            continue;
        uint32_t in = 2 + 2 * idx[u], out = in + 1;
        edge(&g, in, out, p->mem[u]);
        if (!p->cheap || !p->cheap[u])
            edge(&g, 0, in, MP__FLOW_INF);
        if (p->out[u])
            edge(&g, 0, out, MP__FLOW_INF);
        if (first_back_use(p, u) != MP_NONE)
            edge(&g, out, 1, MP__FLOW_INF);
        for (uint32_t j = p->dep_begin[u]; j < p->dep_begin[u + 1]; j++) {
            uint32_t d = p->deps[j];
            if (p->fwd[d])
                edge(&g, 3 + 2 * idx[d], in, MP__FLOW_INF);
        }
    }
    mp__flow_prob fp = {2 + 2 * nf, g.m, g.from, g.to, g.cap, 0, 1, 1};
    if ((st = mp__mincut(ctx, &fp, &sol)))
        goto done;
    if (sol.value == MP__FLOW_INF) {
        st = mp__err(ctx, MP_ERR_INTERNAL,
                     "min-cut recompute: no finite cut (a unit that may "
                     "not be recomputed has no finite edge)");
        goto done;
    }
    c->saved_bytes = sol.value;
    for (uint32_t u = 0; u < p->T; u++) {
        if (!p->fwd[u])
            continue;
        uint32_t in = 2 + 2 * idx[u];
        c->saved[u] = p->out[u] ||
                      (sol.source_side[in] && !sol.source_side[in + 1]);
        c->n_saved += c->saved[u];
    }
done:
    mp__dealloc(ctx, sol.source_side);
    mp__dealloc(ctx, g.from);
    mp__dealloc(ctx, g.to);
    mp__dealloc(ctx, g.cap);
    return st;
}

/* ---- the schedule, per tensor -------------------------------------------- */
typedef struct emitter {
    const mp__remat_prob *p;
    const uint8_t *saved;
    uint32_t *seq;           /* units; RECOMPUTE_BIT: a recomputation */
    size_t n, cap;
    uint8_t *avail;          /* a recomputed copy lives (to its last reader) */
    uint32_t *last_fwd, *mark, *stack, *L;
} emitter;

#define RECOMPUTE_BIT 0x80000000u

static mp_status seq_push(emitter *E, uint32_t v)
{
    mp_status st = mp__grow(E->p->ctx, (void **)&E->seq, sizeof *E->seq,
                            E->n + 1, &E->cap);
    if (!st)
        E->seq[E->n++] = v;
    return st;
}

/* Forward unit d is gone at stage t: not saved, past its last forward
 * reader, and no recomputed copy lives. */
static bool gone(const emitter *E, uint32_t d, uint32_t t)
{
    const mp__remat_prob *p = E->p;
    return p->fwd[d] && !(E->saved && E->saved[d]) && !p->out[d] &&
           !E->avail[d] && E->last_fwd[d] < t;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The sequence: each unit in order, a backward unit after the
 * recomputations of the forward units it needs that are gone. */
static mp_status build_seq(emitter *E)
{
    const mp__remat_prob *p = E->p;
    mp_status st = MP_OK;
    for (uint32_t t = 0; t < p->T && !st; t++) {
        uint32_t nL = 0, sp = 0;
        if (!p->fwd[t])
            for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++) {
                uint32_t d = p->deps[j];
                if (gone(E, d, t) && E->mark[d] != t + 1) {
                    E->mark[d] = t + 1;
                    E->stack[sp++] = d;
                }
            }
        while (sp) {
            uint32_t x = E->stack[--sp];
            E->L[nL++] = x;
            for (uint32_t j = p->dep_begin[x]; j < p->dep_begin[x + 1]; j++) {
                uint32_t d = p->deps[j];
                if (gone(E, d, t) && E->mark[d] != t + 1) {
                    E->mark[d] = t + 1;
                    E->stack[sp++] = d;
                }
            }
        }
        if (nL > 1)
            qsort(E->L, nL, sizeof *E->L, cmp_u32);
        for (uint32_t i = 0; i < nL && !st; i++) {
            uint32_t x = E->L[i];
            if (first_back_use(p, x) != MP_NONE)
                E->avail[x] = 1;
            st = seq_push(E, x | RECOMPUTE_BIT);
        }
        if (!st)
            st = seq_push(E, t);
    }
    return st;
}

typedef struct fr {
    uint32_t pos, tensor;
} fr;

static int cmp_fr(const void *a, const void *b)
{
    const fr *x = a, *y = b;
    if (x->pos != y->pos)
        return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

/* The FREE of each instance after its last reader before the next
 * (re)computation of its tensor; the steps, the live peak, the extra
 * cost. */
static mp_status write_steps(emitter *E, mp__remat_out *out)
{
    const mp__remat_prob *p = E->p;
    mp_ctx *ctx = p->ctx;
    uint32_t nt = p->n_tensors;
    uint32_t *last = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *last);
    uint8_t *live = mp__calloc(ctx, (size_t)nt + 1, 1);
    uint8_t *keep = mp__calloc(ctx, (size_t)nt + 1, 1);
    fr *frees = NULL;
    size_t nf = 0, fcap = 0;
    mp__remat_steps em = {ctx, NULL, 0, 0, MP_OK};
    mp_status st = MP_OK;
    if (!last || !live || !keep) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    uint64_t cur = 0;
    for (uint32_t k = 0; k < p->n_in; k++) {
        uint32_t r = p->in_tensor[k];
        live[r] = 1;
        last[r] = 0;
        keep[r] = p->in_out[k];
        cur += p->in_mem[k];
    }
    for (uint32_t u = 0; u < p->T; u++)
        if (p->out[u])
            for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
                keep[p->frees[j]] = 1;
    /* instances: ends into frees[] */
    for (size_t i = 0; i <= E->n && !st; i++) {
        if (i == E->n) { /* the end: what is left and not kept */
            for (uint32_t r = 0; r < nt && !st; r++)
                if (live[r] && !keep[r] &&
                    !(st = mp__grow(ctx, (void **)&frees, sizeof *frees,
                                    nf + 1, &fcap)))
                    frees[nf++] = (fr){last[r], r};
            break;
        }
        uint32_t y = E->seq[i] & ~RECOMPUTE_BIT;
        for (uint32_t j = p->root_begin[y]; j < p->root_begin[y + 1]; j++)
            last[p->roots[j]] = (uint32_t)i;
        for (uint32_t j = p->free_begin[y]; j < p->free_begin[y + 1]; j++) {
            uint32_t r = p->frees[j];
            if (live[r]) {
                if ((st = mp__grow(ctx, (void **)&frees, sizeof *frees,
                                   nf + 1, &fcap)))
                    break;
                frees[nf++] = (fr){last[r], r};
            }
            live[r] = 1;
            last[r] = (uint32_t)i;
        }
    }
    if (st)
        goto done;
    if (nf > 1)
        qsort(frees, nf, sizeof *frees, cmp_fr);
    memset(out, 0, sizeof *out);
    out->peak = cur;
    size_t f = 0;
    for (size_t i = 0; i < E->n; i++) {
        uint32_t y = E->seq[i] & ~RECOMPUTE_BIT;
        bool re = (E->seq[i] & RECOMPUTE_BIT) != 0;
        mp__remat_step(&em, re ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE,
                       p->node[y]);
        cur += p->mem[y];
        if (cur > out->peak)
            out->peak = cur;
        if (re) {
            out->extra_cost += p->cost[y];
            if (p->flops[y] > 0)
                out->extra_flops += p->flops[y];
            out->n_recompute++;
        }
        for (; f < nf && frees[f].pos == i; f++) {
            mp__remat_step(&em, MP_STEP_FREE, frees[f].tensor);
            cur -= p->t_mem[frees[f].tensor];
        }
    }
    if ((st = em.st))
        goto done;
    out->steps = em.steps;
    out->n_steps = (uint32_t)em.n;
    em.steps = NULL;
done:
    mp__dealloc(ctx, em.steps);
    mp__dealloc(ctx, last);
    mp__dealloc(ctx, live);
    mp__dealloc(ctx, keep);
    mp__dealloc(ctx, frees);
    return st;
}

mp_status mp__remat_mincut_schedule(const mp__remat_prob *p,
                                    const uint8_t *saved, mp__remat_out *out)
{
    mp_ctx *ctx = p->ctx;
    memset(out, 0, sizeof *out);
    size_t T1 = (size_t)p->T + 1;
    emitter E;
    memset(&E, 0, sizeof E);
    E.p = p;
    E.saved = saved;
    E.avail = mp__calloc(ctx, T1, 1);
    E.last_fwd = mp__alloc(ctx, T1 * sizeof *E.last_fwd);
    E.mark = mp__calloc(ctx, T1, sizeof *E.mark);
    E.stack = mp__alloc(ctx, T1 * sizeof *E.stack);
    E.L = mp__alloc(ctx, T1 * sizeof *E.L);
    mp_status st = MP_OK;
    if (!E.avail || !E.last_fwd || !E.mark || !E.stack || !E.L) {
        st = MP_ERR_NOMEM;
    } else {
        for (uint32_t u = 0; u < p->T; u++)
            E.last_fwd[u] = mp__remat_last_fwd_use(p, u);
        if (!(st = build_seq(&E)))
            st = write_steps(&E, out);
    }
    mp__dealloc(ctx, E.seq);
    mp__dealloc(ctx, E.avail);
    mp__dealloc(ctx, E.last_fwd);
    mp__dealloc(ctx, E.mark);
    mp__dealloc(ctx, E.stack);
    mp__dealloc(ctx, E.L);
    return st;
}
mp_status mp__remat_mincut_choose(const mp__remat_prob *p,
                                  mp__remat_mincut_choice *c)
{
    mp_ctx *ctx = p->ctx;
    memset(c, 0, sizeof *c);
    uint32_t T = p->T, nf = 0;
    size_t T1 = (size_t)T + 1;
    uint32_t *idx = mp__alloc(ctx, T1 * sizeof *idx);
    c->saved = mp__calloc(ctx, T1, 1);
    mp_status st = MP_OK;
    if (!idx || !c->saved) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < T; u++)
        idx[u] = p->fwd[u] ? nf++ : MP_NONE;
    if (!(st = cut(p, idx, nf, c)))
        for (uint32_t u = 0; u < T; u++)
            if (p->fwd[u] && !c->saved[u] &&
                first_back_use(p, u) != MP_NONE)
                c->n_recomputed++;
done:
    mp__dealloc(ctx, idx);
    if (st)
        mp__remat_mincut_free(p, c);
    return st;
}

mp_status mp__remat_mincut_seed(const mp__remat_prob *p, uint8_t *seed,
                                uint32_t *n)
{
    mp__remat_mincut_choice c;
    *n = 0;
    memset(seed, 0, (size_t)p->T + 1);
    mp_status st = mp__remat_mincut_choose(p, &c);
    if (st)
        return st;
    for (uint32_t u = 0; u < p->T; u++) {
        if (!p->fwd[u] || c.saved[u] || p->out[u] || p->mem[u] == 0)
            continue;
        uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
        if (e > b && p->uses[e - 1] > mp__remat_last_fwd_use(p, u)) {
            seed[u] = 1;
            (*n)++;
        }
    }
    mp__remat_mincut_free(p, &c);
    return MP_OK;
}

mp_status mp__remat_mincut(const mp__remat_prob *p, int alone,
                           mp__remat_offer_fn offer, void *user)
{
    mp__remat_mincut_choice c;
    mp_status st = mp__remat_mincut_choose(p, &c);
    if (st)
        return st;
    mp__remat_out o, e;
    memset(&e, 0, sizeof e);
    if (!(st = mp__remat_mincut_schedule(p, c.saved, &o)) && alone)
        st = mp__remat_mincut_schedule(p, NULL, &e);
    mp__remat_mincut_free(p, &c);
    if (st) {
        mp__dealloc(p->ctx, o.steps);
        return st;
    }
    if (alone && e.peak < o.peak) { /* never above saving everything */
        mp__dealloc(p->ctx, o.steps);
        return offer(user, "eager", &e);
    }
    mp__dealloc(p->ctx, e.steps);
    return offer(user, "mincut", &o);
}
