/* Recompute / checkpoint under a memory budget (issue 5): the problem
 * (units = nodes in topological order), the replay that turns a keep/drop
 * policy into a schedule with RECOMPUTE steps, the heuristics
 * (checkpoint-all, Chen sqrt(n), Chen greedy with a budget sweep,
 * selective recompute of cheap ops with polishing, DTR-style eviction) and
 * the driver (mp_remat_plan). The Checkmate LP/MILP live in checkmate.c.
 *
 * Replay semantics (docs/training.md): stage t computes unit t. Missing
 * inputs are recomputed first, recursively, in topological order; a value
 * is freed right after its last reader in the stage when no later stage
 * reads it. A first materialization whose drop_after stage has passed is
 * freed (later readers recompute it); a recomputed copy is kept to its
 * last reader (Chen's semantics) unless the policy's keep() or the
 * eviction under pressure frees it. Graph inputs cannot be recomputed:
 * when recompute is possible they stay until the last stage that could
 * need them (the unit's horizon). */
#include "../../planner/planner.h" /* LAYER: a driver, moves to planner/ */
#include "remat_internal.h"
#include "remat_chen.h"
#include "mp_glpk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */
static const char *const solver_names[] = {
    "auto", "checkpoint-all", "chen-sqrt", "chen-greedy", "dtr", "selective",
    "lp", "ilp", "chen-linear", "cm-checkpoint-all", "cm-chen-sqrt",
    "cm-chen-greedy"};

const char *mp_remat_solver_name(mp_remat_solver s)
{
    if ((unsigned)s < sizeof solver_names / sizeof solver_names[0])
        return solver_names[s];
    return "unknown";
}

mp_status mp_remat_solver_parse(const char *name, mp_remat_solver *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < sizeof solver_names / sizeof solver_names[0]; i++)
        if (strcmp(name, solver_names[i]) == 0) {
            *out = (mp_remat_solver)i;
            return MP_OK;
        }
    if (strcmp(name, "none") == 0) {
        *out = MP_REMAT_NONE;
        return MP_OK;
    }
    if (strcmp(name, "chen") == 0) {
        *out = MP_REMAT_CHEN_GREEDY;
        return MP_OK;
    }
    if (strcmp(name, "checkmate") == 0) {
        *out = MP_REMAT_ILP;
        return MP_OK;
    }
    return MP_ERR_INVALID_ARG;
}

void mp_remat_options_init(mp_remat_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->solver = MP_REMAT_AUTO;
    o->budget = 0;
    o->time_limit = 0;
    o->max_extra_cost = -1;
    o->seed = 0;
}

double mp_node_cost(const mp_graph *g, uint32_t node)
{
    if (!g || node >= g->n_nodes)
        return 0;
    const mp__node *n = &g->nodes[node];
    if (n->seconds >= 0)
        return n->seconds;
    if (n->flops >= 0)
        return n->flops / 1e12;
    if (n->bytes_moved >= 0)
        return n->bytes_moved / 1e12;
    return 1e-9;
}

/* ---- the problem -------------------------------------------------------------- */
void rm_prob_free(rm_prob *p)
{
    if (!p || !p->ctx)
        return;
    mp_ctx *c = p->ctx;
    mp__dealloc(c, p->node);
    mp__dealloc(c, p->pos);
    mp__dealloc(c, p->mem);
    mp__dealloc(c, p->cost);
    mp__dealloc(c, p->flops);
    mp__dealloc(c, p->fwd);
    mp__dealloc(c, p->out);
    mp__dealloc(c, p->dep_begin);
    mp__dealloc(c, p->deps);
    mp__dealloc(c, p->use_begin);
    mp__dealloc(c, p->uses);
    mp__dealloc(c, p->horizon);
    mp__dealloc(c, p->in_tensor);
    mp__dealloc(c, p->in_last);
    mp__dealloc(c, p->in_horizon);
    mp__dealloc(c, p->in_mem);
    mp__dealloc(c, p->in_out);
    memset(p, 0, sizeof *p);
}

mp_status rm_prob_build(const mp_graph *g, uint64_t alignment, rm_prob *p)
{
    mp_ctx *ctx = g->ctx;
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->g = g;
    p->alignment = alignment ? alignment : 1;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    uint32_t T = (uint32_t)g->n_nodes, nt = (uint32_t)g->n_tensors;
    size_t T1 = (size_t)T + 1;
    p->T = T;
    p->node = mp__alloc(ctx, T1 * sizeof *p->node);
    p->pos = mp__alloc(ctx, T1 * sizeof *p->pos);
    p->mem = mp__calloc(ctx, T1, sizeof *p->mem);
    p->cost = mp__calloc(ctx, T1, sizeof *p->cost);
    p->flops = mp__calloc(ctx, T1, sizeof *p->flops);
    p->fwd = mp__calloc(ctx, T1, 1);
    p->out = mp__calloc(ctx, T1, 1);
    p->dep_begin = mp__calloc(ctx, T1 + 1, sizeof *p->dep_begin);
    p->use_begin = mp__calloc(ctx, T1 + 1, sizeof *p->use_begin);
    p->horizon = mp__calloc(ctx, T1, sizeof *p->horizon);
    uint32_t *in_idx = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *in_idx);
    uint32_t *stamp = mp__calloc(ctx, T1 + nt, sizeof *stamp);
    mp_status st = MP_OK;
    if (!p->node || !p->pos || !p->mem || !p->cost || !p->flops || !p->fwd ||
        !p->out || !p->dep_begin || !p->use_begin || !p->horizon || !in_idx ||
        !stamp) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    /* graph inputs in the arena */
    uint32_t n_in = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        in_idx[t] = MP_NONE;
        if (tt->producer == MP_NONE && mp__tensor_in_arena(tt) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            in_idx[t] = n_in++;
    }
    p->n_in = n_in;
    p->in_tensor = mp__alloc(ctx, ((size_t)n_in + 1) * sizeof *p->in_tensor);
    p->in_last = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_last);
    p->in_horizon = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_horizon);
    p->in_mem = mp__calloc(ctx, (size_t)n_in + 1, sizeof *p->in_mem);
    p->in_out = mp__calloc(ctx, (size_t)n_in + 1, 1);
    if (!p->in_tensor || !p->in_last || !p->in_horizon || !p->in_mem ||
        !p->in_out) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t t = 0; t < nt; t++)
        if (in_idx[t] != MP_NONE) {
            uint32_t k = in_idx[t];
            p->in_tensor[k] = t;
            if (!mp__align_up(g->tensors[t].bytes, p->alignment, &p->in_mem[k])) {
                st = mp__err(ctx, MP_ERR_OVERFLOW, "tensor '%s': size overflows",
                            g->tensors[t].name);
                goto done;
            }
        }
    for (uint32_t u = 0; u < T; u++) {
        p->node[u] = g->topo[u];
        p->pos[g->topo[u]] = u;
    }
    p->base_cost = 0;
    size_t n_deps = 0;
    /* first pass: count deps (unique) */
    for (uint32_t u = 0; u < T; u++) {
        const mp__node *nd = &g->nodes[p->node[u]];
        p->cost[u] = mp_node_cost(g, p->node[u]);
        p->flops[u] = nd->flops;
        p->base_cost += p->cost[u];
        p->fwd[u] = nd->phase == MP_PHASE_FORWARD;
        for (uint32_t o = 0; o < nd->n_out; o++) {
            const mp__tensor *tt = &g->tensors[nd->outputs[o]];
            uint64_t a;
            if (!mp__tensor_in_arena(tt))
                continue;
            if (!mp__align_up(tt->bytes, p->alignment, &a) ||
                !mp__add_u64(p->mem[u], a, &p->mem[u])) {
                st = mp__err(ctx, MP_ERR_OVERFLOW, "tensor '%s': size overflows",
                            tt->name);
                goto done;
            }
        }
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t x = nd->inputs[i];
            if (x == MP_NONE)
                continue;
            uint32_t r = g->tensors[x].root;
            const mp__tensor *tr = &g->tensors[r];
            if (mp__kind_persistent(tr->kind) || tr->bytes == 0)
                continue;
            if (tr->producer == MP_NONE) {
                if (in_idx[r] != MP_NONE && u > p->in_last[in_idx[r]])
                    p->in_last[in_idx[r]] = u;
                continue;
            }
            uint32_t d = p->pos[tr->producer];
            if (stamp[d] == u + 1)
                continue;
            stamp[d] = u + 1;
            n_deps++;
            p->use_begin[d + 1]++;
        }
        p->dep_begin[u + 1] = (uint32_t)n_deps;
    }
    p->deps = mp__alloc(ctx, (n_deps + 1) * sizeof *p->deps);
    p->uses = mp__alloc(ctx, (n_deps + 1) * sizeof *p->uses);
    if (!p->deps || !p->uses) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < T; u++)
        p->use_begin[u + 1] += p->use_begin[u];
    memset(stamp, 0, T1 * sizeof *stamp);
    uint32_t *fill = stamp + T1; /* reuse: per-unit fill cursor (nt >= 0) */
    (void)fill;
    uint32_t *cursor = mp__alloc(ctx, T1 * sizeof *cursor);
    if (!cursor) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t u = 0; u < T; u++)
        cursor[u] = p->use_begin[u];
    size_t k = 0;
    for (uint32_t u = 0; u < T; u++) {
        const mp__node *nd = &g->nodes[p->node[u]];
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t x = nd->inputs[i];
            if (x == MP_NONE)
                continue;
            uint32_t r = g->tensors[x].root;
            const mp__tensor *tr = &g->tensors[r];
            if (mp__kind_persistent(tr->kind) || tr->bytes == 0 ||
                tr->producer == MP_NONE)
                continue;
            uint32_t d = p->pos[tr->producer];
            if (stamp[d] == u + 1)
                continue;
            stamp[d] = u + 1;
            p->deps[k++] = d;
            p->uses[cursor[d]++] = u;
        }
    }
    mp__dealloc(ctx, cursor);
    /* graph outputs */
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (!(tt->flags & MP__TF_OUTPUT))
            continue;
        const mp__tensor *tr = &g->tensors[tt->root];
        if (tr->producer != MP_NONE)
            p->out[p->pos[tr->producer]] = 1;
        else if (in_idx[tt->root] != MP_NONE)
            p->in_out[in_idx[tt->root]] = 1;
    }
    /* horizons, backwards */
    for (uint32_t u = T; u-- > 0;) {
        uint32_t h = u;
        for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++) {
            uint32_t c = p->uses[j];
            if (c > h)
                h = c;
            if (p->horizon[c] > h)
                h = p->horizon[c];
        }
        p->horizon[u] = h;
    }
    for (uint32_t u = 0; u < T; u++) {
        const mp__node *nd = &g->nodes[p->node[u]];
        for (uint32_t i = 0; i < nd->n_in; i++) {
            uint32_t x = nd->inputs[i];
            if (x == MP_NONE)
                continue;
            uint32_t r = g->tensors[x].root;
            if (in_idx[r] != MP_NONE && p->horizon[u] > p->in_horizon[in_idx[r]])
                p->in_horizon[in_idx[r]] = p->horizon[u];
        }
    }
    p->persistent = mp__plan_persistent_bytes(g);
    if (p->persistent == UINT64_MAX)
        st = mp__err(ctx, MP_ERR_OVERFLOW, "persistent bytes overflow");
done:
    mp__dealloc(ctx, in_idx);
    mp__dealloc(ctx, stamp);
    if (st)
        rm_prob_free(p);
    return st;
}

/* ---- the replay ------------------------------------------------------------------ */
typedef struct sim {
    const rm_prob *p;
    const rm_policy *pol;
    mp_ctx *ctx;
    uint8_t *res, *rc, *in_res;
    uint32_t *need, *mark, *L, *stack, *ev_head, *ev_next;
    uint32_t *rlist, *rpos; /* resident units */
    uint32_t n_res;
    uint64_t *stale;        /* clock of last access */
    uint64_t clock;
    uint32_t t;             /* the stage being replayed */
    uint64_t cur, peak;
    double extra, extra_flops;
    uint32_t n_rec;
    int want;
    mp_step *steps;
    size_t n_steps, cap_steps;
    mp_status st;
} sim;

static void emit(sim *s, mp_step_kind k, uint32_t idx)
{
    if (!s->want || s->st)
        return;
    if ((s->st = mp__grow(s->ctx, (void **)&s->steps, sizeof *s->steps,
                         s->n_steps + 1, &s->cap_steps)))
        return;
    s->steps[s->n_steps].kind = k;
    s->steps[s->n_steps++].index = idx;
}

static inline bool has_future(const rm_prob *p, uint32_t u, uint32_t t)
{
    uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
    return e > b && p->uses[e - 1] > t;
}

static void res_add(sim *s, uint32_t u)
{
    s->res[u] = 1;
    s->rpos[u] = s->n_res;
    s->rlist[s->n_res++] = u;
}

static void free_unit(sim *s, uint32_t u)
{
    const rm_prob *p = s->p;
    const mp__node *nd = &p->g->nodes[p->node[u]];
    for (uint32_t o = 0; o < nd->n_out; o++)
        if (mp__tensor_in_arena(&p->g->tensors[nd->outputs[o]]))
            emit(s, MP_STEP_FREE, nd->outputs[o]);
    s->res[u] = 0;
    s->cur -= p->mem[u];
    uint32_t i = s->rpos[u], last = s->rlist[--s->n_res];
    s->rlist[i] = last;
    s->rpos[last] = i;
}

/* u's in-stage readers are done: free it unless a later stage keeps it. */
static void maybe_free(sim *s, uint32_t u, uint32_t t)
{
    const rm_prob *p = s->p;
    if (!s->res[u] || p->out[u] || (s->pol->pin && s->pol->pin[u]))
        return;
    if (!has_future(p, u, t)) {
        free_unit(s, u);
        return;
    }
    if (!s->rc[u] && s->pol->drop_after && s->pol->drop_after[u] <= t)
        free_unit(s, u);
}

/* Frees resident units by DTR score until `need` more bytes fit. */
static void evict_for(sim *s, uint64_t bytes, uint32_t y)
{
    const rm_prob *p = s->p;
    uint64_t cap = s->pol->evict_cap;
    while (s->cur + bytes > cap) {
        uint32_t best = MP_NONE;
        double best_h = 0;
        for (uint32_t i = 0; i < s->n_res; i++) {
            uint32_t x = s->rlist[i];
            if (x == y || s->need[x] || p->out[x] || p->mem[x] == 0 ||
                (s->pol->pin && s->pol->pin[x]))
                continue;
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
                age = lo < p->use_begin[x + 1]
                          ? (double)(p->uses[lo] - s->t)
                          : (double)p->T;
            }
            double c = p->cost[x];
            if (s->pol->evict_next_use) /* inputs gone: recomputed too */
                for (uint32_t j = p->dep_begin[x]; j < p->dep_begin[x + 1];
                     j++)
                    if (!s->res[p->deps[j]])
                        c += p->cost[p->deps[j]];
            double h = (c + 1e-12) / ((double)p->mem[x] * age);
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

mp_status rm_simulate(const rm_prob *p, const rm_policy *pol, int want_steps,
                      rm_out *out)
{
    mp_ctx *ctx = p->ctx;
    memset(out, 0, sizeof *out);
    uint32_t T = p->T;
    size_t T1 = (size_t)T + 1;
    sim s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.pol = pol;
    s.ctx = ctx;
    s.want = want_steps;
    s.res = mp__calloc(ctx, T1, 1);
    s.rc = mp__calloc(ctx, T1, 1);
    s.in_res = mp__calloc(ctx, (size_t)p->n_in + 1, 1);
    s.need = mp__calloc(ctx, T1, sizeof *s.need);
    s.mark = mp__calloc(ctx, T1, sizeof *s.mark);
    s.L = mp__alloc(ctx, T1 * sizeof *s.L);
    s.stack = mp__alloc(ctx, T1 * sizeof *s.stack);
    s.ev_head = mp__alloc(ctx, T1 * sizeof *s.ev_head);
    s.ev_next = mp__alloc(ctx, T1 * sizeof *s.ev_next);
    s.rlist = mp__alloc(ctx, T1 * sizeof *s.rlist);
    s.rpos = mp__alloc(ctx, T1 * sizeof *s.rpos);
    s.stale = mp__calloc(ctx, T1, sizeof *s.stale);
    /* in-head: inputs bucketed by the stage after which they are freed */
    uint32_t *in_head = mp__alloc(ctx, T1 * sizeof *in_head);
    uint32_t *in_next = mp__alloc(ctx, ((size_t)p->n_in + 1) * sizeof *in_next);
    mp_status st = MP_OK;
    if (!s.res || !s.rc || !s.in_res || !s.need || !s.mark || !s.L ||
        !s.stack || !s.ev_head || !s.ev_next || !s.rlist || !s.rpos ||
        !s.stale || !in_head || !in_next) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    bool may_recompute =
        pol->drop_after || pol->keep || pol->evict_cap > 0;
    for (uint32_t t = 0; t < T1; t++)
        s.ev_head[t] = in_head[t] = MP_NONE;
    for (uint32_t k = 0; k < p->n_in; k++) {
        s.in_res[k] = 1;
        s.cur += p->in_mem[k];
        if (p->in_out[k])
            continue;
        uint32_t f = may_recompute ? p->in_horizon[k] : p->in_last[k];
        if (f >= T)
            f = T ? T - 1 : 0;
        in_next[k] = in_head[f];
        in_head[f] = k;
    }
    s.peak = s.cur;
    for (uint32_t t = 0; t < T; t++) {
        s.t = t;
        /* missing inputs, recursively */
        uint32_t nL = 0, sp = 0;
        for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++) {
            uint32_t d = p->deps[j];
            if (!s.res[d] && s.mark[d] != t + 1) {
                s.mark[d] = t + 1;
                s.stack[sp++] = d;
            }
        }
        while (sp) {
            uint32_t x = s.stack[--sp];
            s.L[nL++] = x;
            for (uint32_t j = p->dep_begin[x]; j < p->dep_begin[x + 1]; j++) {
                uint32_t d = p->deps[j];
                if (!s.res[d] && s.mark[d] != t + 1) {
                    s.mark[d] = t + 1;
                    s.stack[sp++] = d;
                }
            }
        }
        if (nL > 1)
            qsort(s.L, nL, sizeof *s.L, cmp_u32);
        s.L[nL++] = t;
        for (uint32_t i = 0; i < nL; i++) {
            uint32_t y = s.L[i];
            for (uint32_t j = p->dep_begin[y]; j < p->dep_begin[y + 1]; j++)
                s.need[p->deps[j]]++;
        }
        for (uint32_t i = 0; i < nL; i++) {
            uint32_t y = s.L[i];
            if (pol->evict_cap)
                evict_for(&s, p->mem[y], y);
            bool re = y != t;
            emit(&s, re ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE, p->node[y]);
            res_add(&s, y);
            s.rc[y] = re;
            s.cur += p->mem[y];
            if (s.cur > s.peak)
                s.peak = s.cur;
            s.stale[y] = ++s.clock;
            if (re) {
                s.extra += p->cost[y];
                if (p->flops[y] > 0)
                    s.extra_flops += p->flops[y];
                s.n_rec++;
            } else if (pol->drop_after && pol->drop_after[y] != UINT32_MAX &&
                       pol->drop_after[y] > t && pol->drop_after[y] < T) {
                uint32_t e = pol->drop_after[y];
                s.ev_next[y] = s.ev_head[e];
                s.ev_head[e] = y;
            }
            for (uint32_t j = p->dep_begin[y]; j < p->dep_begin[y + 1]; j++) {
                uint32_t x = p->deps[j];
                s.stale[x] = s.clock;
                if (--s.need[x] == 0)
                    maybe_free(&s, x, t);
            }
            if (s.need[y] == 0)
                maybe_free(&s, y, t);
        }
        if (pol->cost_cutoff > 0 && s.extra > pol->cost_cutoff) {
            out->cut = 1;
            break;
        }
        for (uint32_t u = s.ev_head[t]; u != MP_NONE; u = s.ev_next[u])
            if (s.res[u] && !s.rc[u] && !p->out[u] && has_future(p, u, t) &&
                !(pol->pin && pol->pin[u]))
                free_unit(&s, u);
        if (pol->keep) {
            for (uint32_t i = 0; i < s.n_res;) {
                uint32_t u = s.rlist[i];
                if (!p->out[u] && has_future(p, u, t) &&
                    !(pol->pin && pol->pin[u]) &&
                    !pol->keep(pol->user, u, t))
                    free_unit(&s, u); /* swaps another unit into slot i */
                else
                    i++;
            }
        }
        for (uint32_t k = in_head[t]; k != MP_NONE; k = in_next[k]) {
            emit(&s, MP_STEP_FREE, p->in_tensor[k]);
            s.in_res[k] = 0;
            s.cur -= p->in_mem[k];
        }
        if (s.st)
            break;
    }
    st = s.st;
    if (!st) {
        out->peak = s.peak;
        out->extra_cost = s.extra;
        out->extra_flops = s.extra_flops;
        out->n_recompute = s.n_rec;
        if (want_steps) {
            out->steps = s.steps;
            out->n_steps = (uint32_t)s.n_steps;
            s.steps = NULL;
        }
    }
done:
    mp__dealloc(ctx, s.res);
    mp__dealloc(ctx, s.rc);
    mp__dealloc(ctx, s.in_res);
    mp__dealloc(ctx, s.need);
    mp__dealloc(ctx, s.mark);
    mp__dealloc(ctx, s.L);
    mp__dealloc(ctx, s.stack);
    mp__dealloc(ctx, s.ev_head);
    mp__dealloc(ctx, s.ev_next);
    mp__dealloc(ctx, s.rlist);
    mp__dealloc(ctx, s.rpos);
    mp__dealloc(ctx, s.stale);
    mp__dealloc(ctx, s.steps);
    mp__dealloc(ctx, in_head);
    mp__dealloc(ctx, in_next);
    return st;
}

/* ---- search bookkeeping ----------------------------------------------------- */
typedef struct rm_search {
    const rm_prob *p;
    uint64_t cap;            /* live arena bytes allowed */
    double max_extra;        /* < 0: no cap */
    int keep_ckpt;           /* Checkmate's baseline semantics */
    /* best feasible schedule */
    int have;
    const char *name;
    double cost;
    uint64_t peak;
    rm_out best;             /* its replay, steps owned */
    /* smallest peak seen */
    uint64_t min_peak;
    uint32_t n_sims;
} rm_search;

static bool feasible(const rm_search *S, const rm_out *o)
{
    return !o->cut && o->peak <= S->cap &&
           (S->max_extra < 0 || o->extra_cost <= S->max_extra * (1 + 1e-12));
}

/* o is feasible and cheaper than the best so far (or as cheap, lower). */
static bool improves(const rm_search *S, const rm_out *o)
{
    return feasible(S, o) &&
           (!S->have || o->extra_cost < S->cost * (1 - 1e-12) ||
            (o->extra_cost <= S->cost * (1 + 1e-12) && o->peak < S->peak));
}

/* Counts replay o in the search (its peak among the smallest seen); true
 * when it is the best feasible one so far. */
static bool count_replay(rm_search *S, const rm_out *o)
{
    S->n_sims++;
    if (!o->cut && o->peak < S->min_peak)
        S->min_peak = o->peak;
    return improves(S, o);
}

/* full (a replay with its steps, taken) becomes the best schedule. */
static void take_best(rm_search *S, const char *name, rm_out *full)
{
    mp__dealloc(S->p->ctx, S->best.steps);
    S->best = *full;
    full->steps = NULL;
    S->have = 1;
    S->name = name;
    S->cost = full->extra_cost;
    S->peak = full->peak;
}

/* Simulates pol; records it when it is the best feasible one so far. */
static mp_status try_policy(rm_search *S, const char *name,
                            const rm_policy *pol, rm_out *o)
{
    mp_status st = rm_simulate(S->p, pol, 0, o);
    if (st || !count_replay(S, o))
        return st;
    rm_out full;
    if ((st = rm_simulate(S->p, pol, 1, &full)))
        return st;
    take_best(S, name, &full);
    return MP_OK;
}

static mp_status try_cb(void *user, const char *name, const rm_policy *pol)
{
    rm_out o;
    return try_policy(user, name, pol, &o);
}

/* A finished replay (solvers/remat/remat_chen.c): kept, steps and all, when it
 * is the best feasible one so far; its steps are freed otherwise. */
static mp_status offer_cb(void *user, const char *name, rm_out *o)
{
    rm_search *S = user;
    if (count_replay(S, o)) {
        take_best(S, name, o);
        return MP_OK;
    }
    mp__dealloc(S->p->ctx, o->steps);
    o->steps = NULL;
    return MP_OK;
}

/* Last stage of a forward reader of u (u itself when none). */
static uint32_t last_fwd_use(const rm_prob *p, uint32_t u)
{
    uint32_t l = u;
    for (uint32_t j = p->use_begin[u]; j < p->use_begin[u + 1]; j++)
        if (p->fwd[p->uses[j]] && p->uses[j] > l)
            l = p->uses[j];
    return l;
}

static uint32_t last_use(const rm_prob *p, uint32_t u)
{
    uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
    return e > b ? p->uses[e - 1] : u;
}

/* Units worth dropping: forward, read after their last forward reader. */
static bool droppable(const rm_prob *p, uint32_t u)
{
    return p->fwd[u] && !p->out[u] && p->mem[u] > 0 &&
           last_use(p, u) > last_fwd_use(p, u);
}

/* drop_after from a set of kept (checkpointed) forward units. */
static void drops_from_keep(const rm_prob *p, const uint8_t *keep,
                            uint32_t *drop)
{
    for (uint32_t u = 0; u < p->T; u++)
        drop[u] = droppable(p, u) && !keep[u] ? last_fwd_use(p, u)
                                               : UINT32_MAX;
}

/* Forward units at which no forward edge crosses (articulation points of
 * a chain-like forward graph): cut[u] = 1. Also remat_chen.c's. */
void rm_forward_cuts(const rm_prob *p, uint8_t *cut)
{
    uint32_t reach = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        cut[u] = 0;
        if (!p->fwd[u])
            continue;
        cut[u] = reach <= u;
        uint32_t l = last_fwd_use(p, u);
        if (l > reach)
            reach = l;
    }
}

/* ---- heuristics ------------------------------------------------------------------- */
static mp_status h_none(rm_search *S)
{
    rm_policy pol;
    rm_out o;
    memset(&pol, 0, sizeof pol);
    if (!S->keep_ckpt)
        return try_policy(S, "checkpoint-all", &pol, &o);
    uint8_t *pin = mp__alloc(S->p->ctx, (size_t)S->p->T + 1);
    if (!pin)
        return MP_ERR_NOMEM;
    for (uint32_t u = 0; u < S->p->T; u++)
        pin[u] = S->p->fwd[u];
    pol.pin = pin;
    mp_status st = try_policy(S, "checkpoint-all", &pol, &o);
    mp__dealloc(S->p->ctx, pin);
    return st;
}

/* Chen's greedy segmentation with per-segment budget b; b = 0 means the
 * sqrt(n) variant: every ceil(sqrt(n_cuts))-th cut is a checkpoint. */
static void chen_keep(const rm_prob *p, const uint8_t *cut, double b,
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

static mp_status h_chen(rm_search *S, int greedy)
{
    const rm_prob *p = S->p;
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    uint8_t *cut = mp__alloc(ctx, T1), *keep = mp__alloc(ctx, T1);
    uint32_t *drop = mp__alloc(ctx, T1 * sizeof *drop);
    mp_status st = MP_OK;
    if (!cut || !keep || !drop) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    rm_forward_cuts(p, cut);
    rm_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.drop_after = drop;
    if (S->keep_ckpt)
        pol.pin = keep; /* checkpoints stay to the end */
    rm_out o;
    if (!greedy) {
        chen_keep(p, cut, 0, keep);
        drops_from_keep(p, keep, drop);
        st = try_policy(S, "chen-sqrt", &pol, &o);
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
        st = try_policy(S, "chen-greedy", &pol, &o);
    }
done:
    mp__dealloc(ctx, cut);
    mp__dealloc(ctx, keep);
    mp__dealloc(ctx, drop);
    return st;
}

static mp_status h_dtr(rm_search *S)
{
    rm_policy pol;
    rm_out o;
    memset(&pol, 0, sizeof pol);
    pol.evict_cap = S->cap == UINT64_MAX ? 0 : S->cap;
    if (!pol.evict_cap)
        return h_none(S);
    return try_policy(S, "dtr", &pol, &o);
}

/* Selective recompute: droppable units sorted by a score (cheap per byte
 * first: pointwise ops before matmul/conv), the shortest prefix that fits
 * found by bisection, then polished: each dropped unit, most expensive
 * first, is kept again when the budget still holds. With evict: the same
 * with DTR eviction as a fallback under pressure. */
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

static mp_status sel_eval(rm_search *S, const char *name, rm_policy *pol,
                          uint32_t *drop, const sel_key *c, uint32_t k,
                          uint32_t n, rm_out *o)
{
    const rm_prob *p = S->p;
    for (uint32_t u = 0; u < p->T; u++)
        drop[u] = UINT32_MAX;
    for (uint32_t i = 0; i < k && i < n; i++)
        drop[c[i].u] = last_fwd_use(p, c[i].u);
    return try_policy(S, name, pol, o);
}

static mp_status h_selective(rm_search *S, int order, int evict)
{
    const rm_prob *p = S->p;
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    sel_key *c = mp__alloc(ctx, T1 * sizeof *c);
    uint32_t *drop = mp__alloc(ctx, T1 * sizeof *drop);
    mp_status st = MP_OK;
    if (!c || !drop) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    uint32_t n = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        if (!droppable(p, u))
            continue;
        double m = (double)p->mem[u], cost = p->cost[u] + 1e-15;
        c[n].u = u;
        c[n].key = order == 0 ? cost / m : order == 1 ? cost : -m;
        n++;
    }
    qsort(c, n, sizeof *c, cmp_sel);
    rm_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.drop_after = drop;
    if (evict && S->cap != UINT64_MAX)
        pol.evict_cap = S->cap;
    const char *name = evict ? "selective+evict" : "selective";
    rm_out o;
    uint32_t k;
    if (!evict) {
        /* smallest feasible prefix (bisection; the peak falls with k) */
        if ((st = sel_eval(S, name, &pol, drop, c, n, n, &o)))
            goto done;
        if (!feasible(S, &o))
            goto done;
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if ((st = sel_eval(S, name, &pol, drop, c, mid, n, &o)))
                goto done;
            if (feasible(S, &o))
                hi = mid;
            else
                lo = mid + 1;
        }
        k = lo;
    } else {
        /* the cheapest prefix on a grid */
        double best = INFINITY;
        k = 0;
        const uint32_t G = 32;
        for (uint32_t i = 0; i <= G; i++) {
            uint32_t kk = (uint32_t)((uint64_t)n * i / G);
            if ((st = sel_eval(S, name, &pol, drop, c, kk, n, &o)))
                goto done;
            if (feasible(S, &o) && o.extra_cost < best) {
                best = o.extra_cost;
                k = kk;
            }
        }
        if (best == INFINITY)
            goto done;
    }
    /* polish: try keeping each dropped unit, most expensive first */
    if ((st = sel_eval(S, name, &pol, drop, c, k, n, &o)))
        goto done;
    double cur = o.extra_cost;
    for (int pass = 0; pass < 2; pass++) {
        bool changed = false;
        for (uint32_t i = k; i-- > 0;) {
            uint32_t u = c[i].u;
            if (drop[u] == UINT32_MAX)
                continue;
            uint32_t saved = drop[u];
            drop[u] = UINT32_MAX;
            if ((st = try_policy(S, name, &pol, &o)))
                goto done;
            if (feasible(S, &o) && o.extra_cost <= cur) {
                cur = o.extra_cost;
                changed = true;
            } else {
                drop[u] = saved;
            }
        }
        if (!changed)
            break;
    }
done:
    mp__dealloc(ctx, c);
    mp__dealloc(ctx, drop);
    return st;
}

/* Graphs up to this many nodes get the Checkmate LP in auto mode. */
#define MP__REMAT_LP_AUTO_MAX 120

/* ---- driver ------------------------------------------------------------------------ */
/* One run of the solvers: they bound the live bytes (the arena's lower
 * bound) by the budget less the persistent bytes. */
static mp_status rm_plan_once(mp_graph *g, const mp_remat_options *ro,
                              const mp_plan_options *po, mp_plan **out,
                              mp_remat_result *res)
{
    if (!g || !out || !res)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    *out = NULL;
    memset(res, 0, sizeof *res);
    res->lower_bound_cost = -1;
    mp_remat_options rdef;
    mp_plan_options pdef;
    if (!ro) {
        mp_remat_options_init(&rdef);
        ro = &rdef;
    }
    if (!po) {
        mp_plan_options_init(&pdef);
        po = &pdef;
    }
    if (po->alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    if ((unsigned)ro->solver > MP_REMAT_CM_CHEN_GREEDY)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "unknown recompute solver %d",
                      (int)ro->solver);
    mp_status st;
    if (!g->finalized && (st = mp_graph_finalize(g)))
        return st;
    double t0 = mp__now_seconds();
    rm_prob p;
    if ((st = rm_prob_build(g, po->alignment, &p)))
        return st;
    rm_search S;
    memset(&S, 0, sizeof S);
    S.p = &p;
    S.max_extra = ro->max_extra_cost;
    S.keep_ckpt = ro->keep_checkpoints;
    S.min_peak = UINT64_MAX;
    S.cap = UINT64_MAX;
    if (ro->budget)
        S.cap = ro->budget > p.persistent ? ro->budget - p.persistent : 0;
    rm_out o;
    rm_policy none;
    memset(&none, 0, sizeof none);
    if ((st = rm_simulate(&p, &none, 0, &o)))
        goto done;
    res->base_peak_bytes = o.peak + p.persistent;
    {
        /* stage bound: computing u needs u and its inputs resident, and
         * graph outputs computed before u stay */
        uint64_t lb = 0, outs = 0;
        for (uint32_t u = 0; u < p.T; u++) {
            uint64_t need = p.mem[u] + outs;
            for (uint32_t j = p.dep_begin[u]; j < p.dep_begin[u + 1]; j++)
                if (!p.out[p.deps[j]])
                    need += p.mem[p.deps[j]];
            for (uint32_t k = 0; k < p.n_in; k++)
                if (p.in_out[k] || p.in_last[k] >= u)
                    need += p.in_mem[k];
            if (need > lb)
                lb = need;
            if (p.out[u])
                outs += p.mem[u];
        }
        res->peak_lower_bound = lb + p.persistent;
    }
    res->base_cost = p.base_cost;
    mp_remat_solver sv = ro->solver;
    if (sv == MP_REMAT_NONE || sv == MP_REMAT_AUTO)
        st = h_none(&S);
    if (!st && sv >= MP_REMAT_CHEN_LINEAR) /* baselines: never in auto */
        st = rm_checkmate_baseline(&p, sv, offer_cb, &S);
    if (!st && (sv == MP_REMAT_CHEN_SQRT ||
                (sv == MP_REMAT_AUTO && !S.have)))
        st = h_chen(&S, 0);
    if (!st && (sv == MP_REMAT_CHEN_GREEDY ||
                (sv == MP_REMAT_AUTO && !(S.have && S.cost == 0))))
        st = h_chen(&S, 1);
    /* segment checkpointing on saved articulation points, polished */
    if (!st && sv == MP_REMAT_AUTO && S.cap != UINT64_MAX &&
        !(S.have && S.cost == 0))
        st = rm_segments(&p, S.cap, S.max_extra, try_cb, &S);
    /* the MILP starts from the best of DTR and selective (warm start) */
    if (!st && (sv == MP_REMAT_DTR || sv == MP_REMAT_ILP ||
                (sv == MP_REMAT_AUTO && !(S.have && S.cost == 0))))
        st = h_dtr(&S);
    if (!st && (sv == MP_REMAT_SELECTIVE || sv == MP_REMAT_ILP ||
                (sv == MP_REMAT_AUTO && !(S.have && S.cost == 0))))
        for (int order = 0; order < 3 && !st; order++)
            for (int ev = 0; ev < 2 && !st; ev++)
                st = h_selective(&S, order, ev);
    rm_cm_result cm;
    memset(&cm, 0, sizeof cm);
    cm.lower_bound = -1;
    bool run_cm = sv == MP_REMAT_LP || sv == MP_REMAT_ILP;
    if (sv == MP_REMAT_AUTO && S.cap != UINT64_MAX &&
        !(S.have && S.cost == 0) && p.T <= MP__REMAT_LP_AUTO_MAX)
        run_cm = true;
    if (!st && run_cm) {
        /* in auto mode the LP gets at most half of the time limit (the
         * heuristics are done by then: their schedules stand) */
        double tl = ro->time_limit > 0 ? ro->time_limit : 60;
        if (sv == MP_REMAT_AUTO)
            tl /= 2;
        st = rm_checkmate(&p, S.cap, sv == MP_REMAT_ILP, tl,
                          S.have ? &S.best : NULL, &cm, try_cb, &S);
        if (st == MP_ERR_UNSUPPORTED && sv == MP_REMAT_AUTO) {
            mp_ctx_clear(ctx);
            st = MP_OK;
        }
    }
    if (st)
        goto done;
    /* the stage-boundary relaxation: O(edges) columns, a bound on graphs
     * whose full LP does not finish (and a second one where it does: the
     * larger valid bound is reported) */
    if ((sv == MP_REMAT_AUTO || run_cm) && S.cap != UINT64_MAX &&
        !(S.have && S.cost == 0) && mp__glpk_available()) {
        rm_cm_result sb;
        double tl = ro->time_limit > 0 ? ro->time_limit : 60;
        if ((st = rm_stage_lp(&p, S.cap, tl / 4, &sb, try_cb, &S)))
            goto done;
        if (sb.lower_bound > cm.lower_bound) {
            cm.lower_bound = sb.lower_bound;
            cm.bound_kind = sb.bound_kind;
        }
        if (sb.infeasible && !run_cm)
            cm.infeasible = 1;
    }
    res->lower_bound_cost = cm.lower_bound;
    res->lower_bound_kind = cm.lower_bound >= 0 ? cm.bound_kind : 0;
    res->min_peak_bytes =
        S.min_peak == UINT64_MAX ? 0 : S.min_peak + p.persistent;
    res->seconds = mp__now_seconds() - t0;
    if (!S.have && run_cm && sv != MP_REMAT_AUTO && !cm.infeasible &&
        cm.status != MP_SOLVE_OPTIMAL && cm.status != MP_SOLVE_FEASIBLE) {
        res->status = MP_SOLVE_TIMEOUT;
        st = mp__err(ctx, MP_ERR_TIMEOUT,
                    "the Checkmate %s (%u columns, %u rows) gave no solution "
                    "in the time limit (%s)",
                    sv == MP_REMAT_ILP ? "MILP" : "LP", (unsigned)cm.n_cols,
                    (unsigned)cm.n_rows, mp_solve_status_name(cm.status));
        goto done;
    }
    if (!S.have) {
        res->status = MP_SOLVE_INFEASIBLE;
        res->peak_bytes = res->min_peak_bytes;
        if (S.max_extra >= 0)
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "no schedule within the budget of %llu bytes at "
                        "most %g extra cost (smallest peak found %llu "
                        "bytes)",
                        (unsigned long long)ro->budget, S.max_extra,
                        (unsigned long long)res->min_peak_bytes);
        else
            st = mp__err(ctx, MP_ERR_INFEASIBLE,
                        "no schedule within the budget of %llu bytes "
                        "(smallest peak found %llu bytes; none in this "
                        "order can peak below %llu bytes%s)",
                        (unsigned long long)ro->budget,
                        (unsigned long long)res->min_peak_bytes,
                        (unsigned long long)res->peak_lower_bound,
                        cm.infeasible ? "; the Checkmate LP proves that no "
                                        "schedule in this order fits"
                                      : "");
        goto done;
    }
    o = S.best;
    S.best.steps = NULL; /* ownership passes to the plan */
    mp_plan *plan = NULL;
    if ((st = mp__plan_from_schedule(g, o.steps, o.n_steps, po, t0, &plan)))
        goto done;
    /* in-place reuse in mp__plan_from_schedule may only lower the peak */
    if (plan->fig.lower_bound_bytes > o.peak) {
        mp_plan_destroy(plan);
        st = mp__err(ctx, MP_ERR_INTERNAL,
                    "recompute replay peak %llu differs from the plan's "
                    "%llu",
                    (unsigned long long)o.peak,
                    (unsigned long long)plan->fig.lower_bound_bytes);
        goto done;
    }
    /* optimal: the cost meets the bound within its 1e-7 safety margin
     * (GLPK's tolerances) */
    res->status = cm.lower_bound >= 0 &&
                          o.extra_cost <= cm.lower_bound * (1 + 1e-6) +
                                              1e-12 * (1 + o.extra_cost)
                      ? MP_SOLVE_OPTIMAL
                      : MP_SOLVE_FEASIBLE;
    res->solver = S.name;
    res->peak_bytes = plan->fig.lower_bound_bytes + p.persistent;
    res->extra_cost = o.extra_cost;
    res->extra_flops = o.extra_flops;
    res->n_recompute = o.n_recompute;
    res->seconds = mp__now_seconds() - t0;
    *out = plan;
done:
    mp__dealloc(ctx, S.best.steps);
    rm_prob_free(&p);
    return st;
}

/* The budget holds for the placed plan (arena + persistent bytes), not
 * only for the live bytes the solvers bound: when the packing of the
 * schedule leaves a gap above its live bytes, the exact offsets tier is
 * asked to fit the budget, and failing that the solvers run again with
 * the budget lowered by the overshoot (at most three times). When none
 * fits once placed, res says both figures over every round: the smallest
 * live peak (min_peak_bytes, maybe within the budget) and the smallest
 * placed peak (min_placed_peak_bytes). */
#define RM_REFIT_ROUNDS 3
static mp_status rm_placed_infeasible(mp_ctx *ctx, mp_remat_result *res,
                                      uint64_t budget, uint64_t live_min,
                                      uint64_t placed_min, uint64_t cap,
                                      uint64_t cap_min)
{
    res->status = MP_SOLVE_INFEASIBLE;
    res->min_peak_bytes = live_min;
    res->min_placed_peak_bytes = placed_min;
    res->peak_bytes = live_min;
    if (!cap)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                      "no schedule within the budget of %llu bytes once "
                      "placed: the smallest live peak found is %llu bytes "
                      "(live arena + persistent), but the smallest placed "
                      "peak (arena packing + persistent) is %llu bytes",
                      (unsigned long long)budget,
                      (unsigned long long)live_min,
                      (unsigned long long)placed_min);
    return mp__err(ctx, MP_ERR_INFEASIBLE,
                  "no schedule within the budget of %llu bytes once placed: "
                  "the smallest live peak found is %llu bytes (live arena + "
                  "persistent), but the smallest placed peak (arena packing "
                  "+ persistent) is %llu bytes; with the budget for the live "
                  "peak lowered to %llu bytes to leave room for the "
                  "packing, no schedule fits (smallest live peak found "
                  "there %llu bytes)",
                  (unsigned long long)budget, (unsigned long long)live_min,
                  (unsigned long long)placed_min, (unsigned long long)cap,
                  (unsigned long long)cap_min);
}

mp_status mp_remat_plan(mp_graph *g, const mp_remat_options *ro,
                        const mp_plan_options *po, mp_plan **out,
                        mp_remat_result *res)
{
    mp_status st = rm_plan_once(g, ro, po, out, res);
    if (st || !ro || !ro->budget)
        return st;
    mp_ctx *ctx = g->ctx;
    mp_plan_options pdef;
    if (!po) {
        mp_plan_options_init(&pdef);
        po = &pdef;
    }
    mp_remat_options r = *ro;
    uint64_t live_min = UINT64_MAX, placed_min = UINT64_MAX;
    for (int round = 0;; round++) {
        mp_plan *p = *out;
        /* the schedule's live peak, and the smallest any replay reached */
        if (res->peak_bytes < live_min)
            live_min = res->peak_bytes;
        if (res->min_peak_bytes && res->min_peak_bytes < live_min)
            live_min = res->min_peak_bytes;
        uint64_t pers = p->fig.persistent_bytes;
        uint64_t cap = ro->budget > pers ? ro->budget - pers : 0;
        if ((st = mp__plan_refit(p, po, cap))) {
            mp_plan_destroy(p);
            *out = NULL;
            return st;
        }
        if (p->fig.peak_bytes <= ro->budget)
            return MP_OK;
        uint64_t placed = p->fig.peak_bytes;
        uint64_t over = placed - ro->budget;
        if (placed < placed_min)
            placed_min = placed;
        mp_plan_destroy(p);
        *out = NULL;
        if (round == RM_REFIT_ROUNDS || r.budget <= over + pers)
            return rm_placed_infeasible(ctx, res, ro->budget, live_min,
                                        placed_min, 0, 0);
        r.budget -= over;
        double secs = res->seconds;
        st = rm_plan_once(g, &r, po, out, res);
        res->seconds += secs;
        if (st == MP_ERR_INFEASIBLE) {
            mp_ctx_clear(ctx);
            uint64_t there = res->min_peak_bytes;
            if (there && there < live_min)
                live_min = there;
            return rm_placed_infeasible(ctx, res, ro->budget, live_min,
                                        placed_min, r.budget, there);
        }
        if (st)
            return st;
    }
}

/* ---- max batch ---------------------------------------------------------------- */
/* g with every arena (non-persistent) tensor's bytes scaled by b / b0,
 * rounded up: activations, gradients and inputs grow with the batch,
 * weights and optimizer state do not. Shapes are dropped (sizes given). */
static mp_status scaled_graph(const mp_graph *g, uint64_t b, uint64_t b0,
                              mp_graph **out)
{
    mp_ctx *ctx = g->ctx;
    mp_graph *s = NULL;
    mp_status st = mp_graph_create(ctx, &s);
    if (st)
        return st;
    for (uint32_t t = 0; t < g->n_tensors && !st; t++) {
        const mp__tensor *tt = &g->tensors[t];
        mp_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = tt->name;
        d.rank = -1;
        d.kind = (mp_tensor_kind)tt->declared_kind;
        uint64_t by = tt->bytes;
        if (!mp__kind_persistent(tt->kind)) {
            uint64_t m;
            if (!mp__mul_u64(by, b, &m) || !mp__add_u64(m, b0 - 1, &m)) {
                st = mp__err(ctx, MP_ERR_OVERFLOW,
                            "tensor '%s' at batch %llu: size overflows",
                            tt->name, (unsigned long long)b);
                break;
            }
            by = m / b0;
        }
        d.bytes = by ? by : 1;
        uint32_t id;
        st = mp_graph_add_tensor(s, &d, &id);
    }
    for (uint32_t v = 0; v < g->n_nodes && !st; v++) {
        const mp__node *n = &g->nodes[v];
        mp_node_desc d;
        memset(&d, 0, sizeof d);
        d.name = n->name;
        d.op = n->op;
        d.domain = n->domain;
        d.inputs = n->inputs;
        d.n_inputs = n->n_in;
        d.outputs = n->outputs;
        d.n_outputs = n->n_out;
        d.phase = (mp_phase)n->phase;
        uint32_t id;
        if (!(st = mp_graph_add_node(s, &d, &id)))
            st = mp_graph_set_node_cost(s, id, n->flops, n->bytes_moved,
                                        n->seconds);
    }
    for (uint32_t t = 0; t < g->n_tensors && !st; t++)
        if (g->tensors[t].flags & MP__TF_OUTPUT)
            st = mp_graph_mark_output(s, t);
    if (!st)
        st = mp_graph_finalize(s);
    if (st) {
        mp_graph_destroy(s);
        return st;
    }
    *out = s;
    return MP_OK;
}

mp_status mp_remat_max_batch(const mp_graph *g, uint64_t graph_batch,
                             uint64_t max_batch, const mp_remat_options *ro,
                             const mp_plan_options *po, uint64_t *best,
                             mp_remat_result *res)
{
    if (!g || !ro || !best || !res || !graph_batch || !ro->budget)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "max batch needs a graph batch >= 1 and a budget")
                 : MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    if (max_batch == 0)
        max_batch = 1u << 20;
    *best = 0;
    memset(res, 0, sizeof *res);
    /* bisection on the largest batch that plans within the budget and the
     * cost cap (which scales with the graph: a fraction of its forward
     * compute when ro->max_extra_cost is given as such by the caller) */
    uint64_t lo = 0, hi = max_batch + 1;
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        mp_graph *s = NULL;
        mp_status st = scaled_graph(g, mid, graph_batch, &s);
        if (st)
            return st;
        mp_remat_result r;
        mp_plan *p = NULL;
        st = mp_remat_plan(s, ro, po, &p, &r);
        mp_plan_destroy(p);
        mp_graph_destroy(s);
        if (st == MP_OK) {
            lo = mid;
            *res = r;
        } else if (st == MP_ERR_INFEASIBLE || st == MP_ERR_OVERFLOW) {
            mp_ctx_clear(ctx);
            hi = mid;
        } else {
            return st;
        }
    }
    *best = lo;
    if (!lo)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                      "not even batch 1 fits the budget of %llu bytes",
                      (unsigned long long)ro->budget);
    return MP_OK;
}
