/* The recompute model (docs/training.md): the problem's arrays, the
 * replay that turns a keep/drop policy into a schedule with RECOMPUTE
 * steps, and what the heuristics share about the forward graph. Calls
 * nothing above it in solvers/remat/.
 *
 * Replay semantics: stage t computes unit t. Missing inputs are
 * recomputed first, recursively, in topological order; a value is freed
 * right after its last reader in the stage when no later stage reads it,
 * and a unit's outputs one by one (an output no later stage reads goes
 * while the unit stays for the others).
 * A first materialization whose drop_after stage has passed is freed
 * (later readers recompute it); a recomputed copy is kept to its last
 * reader (Chen's semantics) unless the policy's keep() or the eviction
 * under pressure frees it. Graph inputs cannot be recomputed: when
 * recompute is possible they stay until the last stage that could need
 * them (the unit's horizon). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* ---- the problem --------------------------------------------------------- */
void mp__remat_prob_free(mp__remat_prob *p)
{
    if (!p || !p->ctx)
        return;
    mp_ctx *c = p->ctx;
    mp__dealloc(c, p->node);
    mp__dealloc(c, p->pos);
    mp__dealloc(c, (void *)p->name);
    mp__dealloc(c, p->mem);
    mp__dealloc(c, p->cost);
    mp__dealloc(c, p->flops);
    mp__dealloc(c, p->fwd);
    mp__dealloc(c, p->out);
    mp__dealloc(c, p->cheap);
    mp__dealloc(c, p->root_begin);
    mp__dealloc(c, p->roots);
    mp__dealloc(c, p->t_mem);
    mp__dealloc(c, p->dep_begin);
    mp__dealloc(c, p->deps);
    mp__dealloc(c, p->use_begin);
    mp__dealloc(c, p->uses);
    mp__dealloc(c, p->horizon);
    mp__dealloc(c, p->lock);
    mp__dealloc(c, p->free_begin);
    mp__dealloc(c, p->frees);
    mp__dealloc(c, p->read_begin);
    mp__dealloc(c, p->reads);
    mp__dealloc(c, p->unit_of);
    mp__dealloc(c, p->t_last);
    mp__dealloc(c, p->in_tensor);
    mp__dealloc(c, p->in_last);
    mp__dealloc(c, p->in_horizon);
    mp__dealloc(c, p->in_mem);
    mp__dealloc(c, p->in_out);
    memset(p, 0, sizeof *p);
}

bool mp__remat_steps_legal(const mp__remat_prob *p, const mp_step *steps,
                           uint32_t n_steps)
{
    if (!p->lock)
        return true;
    /* the stage of a step: the unit of the next COMPUTE step */
    uint32_t stage = p->T;
    for (uint32_t i = n_steps; i-- > 0;) {
        const mp_step *sp = &steps[i];
        if (sp->kind == MP_STEP_COMPUTE)
            stage = p->pos[sp->index];
        else if (sp->kind == MP_STEP_RECOMPUTE &&
                 !mp__remat_may_recompute(p, p->pos[sp->index], stage))
            return false;
    }
    return true;
}

uint32_t mp__remat_last_fwd_use(const mp__remat_prob *p, uint32_t u)
{
    uint32_t l = u;
    for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++)
        if (p->fwd[p->uses[j]] && p->uses[j] > l)
            l = p->uses[j];
    return l;
}

/* Forward units at which no forward edge crosses (articulation points of
 * a chain-like forward graph): cut[u] = 1. */
void mp__remat_forward_cuts(const mp__remat_prob *p, uint8_t *cut)
{
    uint32_t reach = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        cut[u] = 0;
        if (!p->fwd[u])
            continue;
        cut[u] = reach <= u;
        uint32_t l = mp__remat_last_fwd_use(p, u);
        if (l > reach)
            reach = l;
    }
}

bool mp__remat_fits(const mp__remat_out *o, uint64_t cap, double max_extra)
{
    return !o->cut && o->peak <= cap &&
           (max_extra < 0 || o->extra_cost <= max_extra * (1 + 1e-12));
}

/* ---- schedules ----------------------------------------------------------- */
void mp__remat_step(mp__remat_steps *e, mp_step_kind k, uint32_t idx)
{
    if (e->st)
        return;
    if ((e->st = mp__grow(e->ctx, (void **)&e->steps, sizeof *e->steps,
                          e->n + 1, &e->cap)))
        return;
    e->steps[e->n].kind = k;
    e->steps[e->n++].index = idx;
}

void mp__remat_step_frees(mp__remat_steps *e, const mp__remat_prob *p,
                          uint32_t u)
{
    for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
        mp__remat_step(e, MP_STEP_FREE, p->frees[j]);
}

/* ---- the replay ---------------------------------------------------------- */
typedef struct sim {
    const mp__remat_prob *p;
    const mp__remat_policy *pol;
    mp_ctx *ctx;
    uint8_t *res, *rc, *in_res;
    uint8_t *tlive;         /* per tensor: an output of a resident unit
                             * not yet freed (with p->t_last) */
    uint64_t *rmem;         /* per unit: its resident bytes */
    uint32_t *need, *mark, *L, *stack, *ev_head, *ev_next;
    uint32_t *in_head, *in_next; /* inputs by the stage after which they go */
    uint32_t *rlist, *rpos; /* resident units */
    uint32_t n_res;
    uint64_t *stale;        /* clock of last access */
    uint64_t clock;
    uint32_t t;             /* the stage being replayed */
    uint64_t cur, peak;
    double extra, extra_flops;
    uint32_t n_rec;
    int want;
    mp__remat_steps em;     /* the schedule, when wanted */
} sim;

static void emit(sim *s, mp_step_kind k, uint32_t idx)
{
    if (s->want)
        mp__remat_step(&s->em, k, idx);
}

static inline bool has_future(const mp__remat_prob *p, uint32_t u, uint32_t t)
{
    uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
    return e > b && p->uses[e - 1] > t;
}

/* Resident unit u must stay past stage t although a later stage reads
 * it: freed, it would be recomputed for its next reader after its lock
 * (the optimizer step that updated a weight it reads). */
static bool lock_keeps(const sim *s, uint32_t u, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    if (!p->lock || p->lock[u] >= p->T)
        return false;
    uint32_t lo = p->use_begin[u], hi = p->use_begin[u + 1];
    while (lo < hi) { /* the first reader after t */
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->uses[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->use_begin[u + 1] &&
           !mp__remat_may_recompute(p, u, p->uses[lo]);
}

static void res_add(sim *s, uint32_t u)
{
    const mp__remat_prob *p = s->p;
    s->res[u] = 1;
    s->rpos[u] = s->n_res;
    s->rlist[s->n_res++] = u;
    s->rmem[u] = p->mem[u];
    if (p->t_last)
        for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
            s->tlive[p->frees[j]] = 1;
}

static void free_unit(sim *s, uint32_t u)
{
    const mp__remat_prob *p = s->p;
    if (p->t_last) {
        for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++)
            if (s->tlive[p->frees[j]]) {
                s->tlive[p->frees[j]] = 0;
                emit(s, MP_STEP_FREE, p->frees[j]);
            }
    } else if (s->want) {
        mp__remat_step_frees(&s->em, p, u);
    }
    s->res[u] = 0;
    s->cur -= s->rmem[u];
    s->rmem[u] = 0;
    uint32_t i = s->rpos[u], last = s->rlist[--s->n_res];
    s->rlist[i] = last;
    s->rpos[last] = i;
}

/* u's in-stage readers are done: its outputs that no later stage reads
 * are freed one by one, the unit staying for the others (a gradient
 * node's input gradient does not wait for its weight gradient; a reader
 * recomputed later recomputes u: stale_deps); graph outputs and pinned
 * units stay whole. */
static void free_dead(sim *s, uint32_t u, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    if (!p->t_last || p->out[u] || (s->pol->pin && s->pol->pin[u]))
        return;
    for (uint32_t j = p->free_begin[u]; j < p->free_begin[u + 1]; j++) {
        uint32_t r = p->frees[j];
        if (s->tlive[r] && p->t_last[r] <= t) {
            s->tlive[r] = 0;
            emit(s, MP_STEP_FREE, r);
            s->cur -= p->t_mem[r];
            s->rmem[u] -= p->t_mem[r];
        }
    }
}

/* u's in-stage readers are done: free it unless a later stage keeps it. */
static void maybe_free(sim *s, uint32_t u, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    if (!s->res[u] || p->out[u] || (s->pol->pin && s->pol->pin[u]))
        return;
    if (!has_future(p, u, t)) {
        free_unit(s, u);
        return;
    }
    if (!s->rc[u] && s->pol->drop_after && s->pol->drop_after[u] <= t &&
        !lock_keeps(s, u, t))
        free_unit(s, u);
    else
        free_dead(s, u, t);
}

/* DTR's score of resident unit x (the lowest is evicted first). */
static double evict_score(const sim *s, uint32_t x)
{
    const mp__remat_prob *p = s->p;
    double age = (double)(s->clock - s->stale[x]) + 1.0;
    if (s->pol->evict_next_use) {
        /* stages to the first reader after the current one */
        uint32_t lo = p->use_begin[x], hi = p->use_begin[x + 1];
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (p->uses[mid] <= s->t)
                lo = mid + 1;
            else
                hi = mid;
        }
        age = lo < p->use_begin[x + 1] ? (double)(p->uses[lo] - s->t)
                                       : (double)p->T;
    }
    double c = p->cost[x];
    if (s->pol->evict_next_use) /* inputs gone: recomputed too */
        for (uint32_t j = p->dep_begin[x]; j < p->dep_begin[x + 1]; j++)
            if (!s->res[p->deps[j]])
                c += p->cost[p->deps[j]];
    return (c + 1e-12) / ((double)s->rmem[x] * age);
}

/* Frees resident units by DTR score until `need` more bytes fit. */
static void evict_for(sim *s, uint64_t bytes, uint32_t y)
{
    const mp__remat_prob *p = s->p;
    uint64_t cap = s->pol->evict_cap;
    while (s->cur + bytes > cap) {
        uint32_t best = MP_NONE;
        double best_h = 0;
        for (uint32_t i = 0; i < s->n_res; i++) {
            uint32_t x = s->rlist[i];
            if (x == y || s->need[x] || p->out[x] || s->rmem[x] == 0 ||
                (s->pol->pin && s->pol->pin[x]) || lock_keeps(s, x, s->t))
                continue;
            double h = evict_score(s, x);
            if (best == MP_NONE || h < best_h ||
                (h == best_h && x < best)) {
                best = x;
                best_h = h;
            }
        }
        if (best == MP_NONE)
            return;
        free_unit(s, best);
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void sim_release(sim *s)
{
    mp_ctx *ctx = s->ctx;
    mp__dealloc(ctx, s->res);
    mp__dealloc(ctx, s->tlive);
    mp__dealloc(ctx, s->rmem);
    mp__dealloc(ctx, s->rc);
    mp__dealloc(ctx, s->in_res);
    mp__dealloc(ctx, s->need);
    mp__dealloc(ctx, s->mark);
    mp__dealloc(ctx, s->L);
    mp__dealloc(ctx, s->stack);
    mp__dealloc(ctx, s->ev_head);
    mp__dealloc(ctx, s->ev_next);
    mp__dealloc(ctx, s->rlist);
    mp__dealloc(ctx, s->rpos);
    mp__dealloc(ctx, s->stale);
    mp__dealloc(ctx, s->em.steps);
    mp__dealloc(ctx, s->in_head);
    mp__dealloc(ctx, s->in_next);
}

/* The arrays, and the graph inputs resident, bucketed by the stage after
 * which they are freed. */
static mp_status sim_start(sim *s)
{
    const mp__remat_prob *p = s->p;
    const mp__remat_policy *pol = s->pol;
    mp_ctx *ctx = s->ctx;
    uint32_t T = p->T;
    size_t T1 = (size_t)T + 1;
    s->res = mp__calloc(ctx, T1, 1);
    s->tlive = mp__calloc(ctx, (size_t)p->n_tensors + 1, 1);
    s->rmem = mp__calloc(ctx, T1, sizeof *s->rmem);
    s->rc = mp__calloc(ctx, T1, 1);
    s->in_res = mp__calloc(ctx, (size_t)p->n_in + 1, 1);
    s->need = mp__calloc(ctx, T1, sizeof *s->need);
    s->mark = mp__calloc(ctx, T1, sizeof *s->mark);
    s->L = mp__alloc(ctx, T1 * sizeof *s->L);
    s->stack = mp__alloc(ctx, T1 * sizeof *s->stack);
    s->ev_head = mp__alloc(ctx, T1 * sizeof *s->ev_head);
    s->ev_next = mp__alloc(ctx, T1 * sizeof *s->ev_next);
    s->rlist = mp__alloc(ctx, T1 * sizeof *s->rlist);
    s->rpos = mp__alloc(ctx, T1 * sizeof *s->rpos);
    s->stale = mp__calloc(ctx, T1, sizeof *s->stale);
    s->in_head = mp__alloc(ctx, T1 * sizeof *s->in_head);
    s->in_next = mp__alloc(ctx, ((size_t)p->n_in + 1) * sizeof *s->in_next);
    if (!s->res || !s->tlive || !s->rmem || !s->rc || !s->in_res || !s->need || !s->mark || !s->L ||
        !s->stack || !s->ev_head || !s->ev_next || !s->rlist || !s->rpos ||
        !s->stale || !s->in_head || !s->in_next)
        return MP_ERR_NOMEM;
    bool may_recompute = pol->drop_after || pol->keep || pol->evict_cap > 0;
    for (uint32_t t = 0; t < T1; t++)
        s->ev_head[t] = s->in_head[t] = MP_NONE;
    for (uint32_t k = 0; k < p->n_in; k++) {
        s->in_res[k] = 1;
        s->cur += p->in_mem[k];
        if (p->in_out[k])
            continue;
        uint32_t f = may_recompute ? p->in_horizon[k] : p->in_last[k];
        if (f >= T)
            f = T ? T - 1 : 0;
        s->in_next[k] = s->in_head[f];
        s->in_head[f] = k;
    }
    s->peak = s->cur;
    return MP_OK;
}

/* A resident unit of which x reads an output that was freed (no stage
 * read it any more, but x is recomputed) is recomputed whole: its other
 * outputs are freed first. */
static void stale_deps(sim *s, uint32_t x)
{
    const mp__remat_prob *p = s->p;
    if (!p->t_last)
        return;
    for (uint32_t j = p->root_begin[x]; j < p->root_begin[x + 1]; j++) {
        uint32_t r = p->roots[j], d = p->unit_of[r];
        if (d != MP_NONE && s->res[d] && !s->tlive[r])
            free_unit(s, d);
    }
}

/* The units stage t computes into s->L: its missing inputs, recursively,
 * in topological order, then t. Returns their number. */
static uint32_t sim_missing(sim *s, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    uint32_t nL = 0, sp = 0;
    stale_deps(s, t);
    for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++) {
        uint32_t d = p->deps[j];
        if (!s->res[d] && s->mark[d] != t + 1) {
            s->mark[d] = t + 1;
            s->stack[sp++] = d;
        }
    }
    while (sp) {
        uint32_t x = s->stack[--sp];
        s->L[nL++] = x;
        stale_deps(s, x);
        for (uint32_t j = p->dep_begin[x]; j < p->dep_begin[x + 1]; j++) {
            uint32_t d = p->deps[j];
            if (!s->res[d] && s->mark[d] != t + 1) {
                s->mark[d] = t + 1;
                s->stack[sp++] = d;
            }
        }
    }
    if (nL > 1)
        qsort(s->L, nL, sizeof *s->L, cmp_u32);
    s->L[nL++] = t;
    return nL;
}

/* Computes unit y in stage t (a recompute when y != t), then frees what
 * no later reader in the stage needs. */
static void sim_compute(sim *s, uint32_t y, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    const mp__remat_policy *pol = s->pol;
    uint32_t T = p->T;
    if (pol->evict_cap)
        evict_for(s, p->mem[y], y);
    bool re = y != t;
    emit(s, re ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE, p->node[y]);
    res_add(s, y);
    s->rc[y] = re;
    s->cur += p->mem[y];
    if (s->cur > s->peak)
        s->peak = s->cur;
    s->stale[y] = ++s->clock;
    if (re) {
        s->extra += p->cost[y];
        if (p->flops[y] > 0)
            s->extra_flops += p->flops[y];
        s->n_rec++;
    } else if (pol->drop_after && pol->drop_after[y] != UINT32_MAX &&
               pol->drop_after[y] > t && pol->drop_after[y] < T) {
        uint32_t e = pol->drop_after[y];
        s->ev_next[y] = s->ev_head[e];
        s->ev_head[e] = y;
    }
    for (uint32_t j = p->dep_begin[y]; j < p->dep_begin[y + 1]; j++) {
        uint32_t x = p->deps[j];
        s->stale[x] = s->clock;
        if (--s->need[x] == 0)
            maybe_free(s, x, t);
    }
    if (s->need[y] == 0)
        maybe_free(s, y, t);
}

/* End of stage t: first materializations past their drop_after stage,
 * what keep() lets go, and the graph inputs read for the last time. */
static void sim_stage_end(sim *s, uint32_t t)
{
    const mp__remat_prob *p = s->p;
    const mp__remat_policy *pol = s->pol;
    for (uint32_t u = s->ev_head[t]; u != MP_NONE; u = s->ev_next[u])
        if (s->res[u] && !s->rc[u] && !p->out[u] && has_future(p, u, t) &&
            !(pol->pin && pol->pin[u]) && !lock_keeps(s, u, t))
            free_unit(s, u);
    if (pol->keep) {
        for (uint32_t i = 0; i < s->n_res;) {
            uint32_t u = s->rlist[i];
            if (!p->out[u] && has_future(p, u, t) &&
                !(pol->pin && pol->pin[u]) && !lock_keeps(s, u, t) &&
                !pol->keep(pol->user, u, t))
                free_unit(s, u); /* swaps another unit into slot i */
            else
                i++;
        }
    }
    for (uint32_t k = s->in_head[t]; k != MP_NONE; k = s->in_next[k]) {
        emit(s, MP_STEP_FREE, p->in_tensor[k]);
        s->in_res[k] = 0;
        s->cur -= p->in_mem[k];
    }
}

mp_status mp__remat_simulate(const mp__remat_prob *p,
                             const mp__remat_policy *pol, int want_steps,
                             mp__remat_out *out)
{
    memset(out, 0, sizeof *out);
    sim s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.pol = pol;
    s.ctx = p->ctx;
    s.want = want_steps;
    s.em.ctx = p->ctx;
    mp_status st = sim_start(&s);
    if (st) {
        sim_release(&s);
        return st;
    }
    for (uint32_t t = 0; t < p->T; t++) {
        s.t = t;
        uint32_t nL = sim_missing(&s, t);
        for (uint32_t i = 0; i < nL; i++) {
            uint32_t y = s.L[i];
            for (uint32_t j = p->dep_begin[y]; j < p->dep_begin[y + 1]; j++)
                s.need[p->deps[j]]++;
        }
        for (uint32_t i = 0; i < nL; i++)
            sim_compute(&s, s.L[i], t);
        if (pol->cost_cutoff > 0 && s.extra > pol->cost_cutoff) {
            out->cut = 1;
            break;
        }
        sim_stage_end(&s, t);
        if (s.em.st)
            break;
    }
    st = s.em.st;
    if (!st) {
        out->peak = s.peak;
        out->extra_cost = s.extra;
        out->extra_flops = s.extra_flops;
        out->n_recompute = s.n_rec;
        if (want_steps) {
            out->steps = s.em.steps;
            out->n_steps = (uint32_t)s.em.n;
            s.em.steps = NULL;
        }
    }
    sim_release(&s);
    return st;
}
