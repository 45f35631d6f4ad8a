/* Offload decisions, alone or jointly with recompute (docs/offload.md):
 * the solver. planner/offload.c builds the plans and chooses among them.
 *
 * A base schedule (the default topological one, or a recompute solver's)
 * is replayed into tensor instances: an instance of an arena storage root
 * is created by a COMPUTE/RECOMPUTE step (or is a graph input) and ends at
 * its FREE step; its uses are the node steps ("positions") that create or
 * read it (through views too). Each instance's longest idle gap, in
 * estimated time, is its candidate: OFFLOAD after the use before the gap,
 * PREFETCH before the use after it, or (joint mode) FREE after the first
 * use and RECOMPUTE its producer right before the second. An offload copy
 * is "hidden" when the device->host copy ends before the OFFLOAD step
 * (memory is released there), or the host->device copy, issued at the
 * PREFETCH step, before the reader starts. A candidate has up to five
 * variants (both copies hidden, one of them, the whole gap with both
 * exposed; recompute), each a range of positions without the tensor and an
 * estimated cost in seconds (stall or recompute time). A recompute needs
 * the producer's inputs resident at that position: such pairs exclude
 * each other.
 *
 * Greedy: while the live peak is above the budget, take the allowed
 * variant covering the peak position with the least cost, largest size x
 * idle time first. ILP (GLPK): one binary per variant, at most one per
 * candidate, the excess covered at every position above the budget, the
 * exclusions, least estimated cost; warm-started from the greedy. The
 * chosen variants become a schedule, which a simulation of the compute
 * stream and the copy engines (one per direction when the device has two)
 * times on one cost model (the device).
 *
 * Pure: a graph, a base schedule, node times and a device in; decisions,
 * schedules and their times out. */
#include "offload_solver.h"
#include "mp_glpk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV 5

typedef struct {
    uint32_t inst;     /* instance */
    uint32_t t;        /* storage root */
    uint64_t size;     /* aligned */
    uint32_t ua, ub;   /* uses around the gap (positions) */
    /* variants: ranges [vk, vj) of positions without the tensor and the
     * estimated cost; vrec: drop and recompute instead of offload */
    uint32_t vk[MAXV], vj[MAXV];
    double vcost[MAXV];
    uint8_t vrec[MAXV];
    uint32_t nv;
    uint32_t node;     /* producer (recompute variant) */
    uint32_t v;        /* chosen variant */
    double score;
    int chosen;
} cand;

typedef struct {
    uint32_t root;
    uint32_t first;    /* position it becomes live (0 for inputs) */
    uint32_t ubeg, ucnt;
    int created;       /* by a node step (not a graph input) */
} inst;

struct mp__offload_problem {
    mp_ctx *ctx;
    const mp_graph *g;
    const mp_device *d;
    const mp_step *steps;
    uint32_t nsteps;
    uint32_t np;         /* node steps = positions */
    uint32_t *pstep;     /* position -> step */
    const double *ndur;  /* per node */
    double *start;       /* per position (np + 1), no stalls */
    inst *in;
    uint32_t ni;
    uint32_t *uses;      /* per instance: ascending positions */
    uint64_t *live;      /* per position */
    cand *c;
    uint32_t nc;
    uint32_t *inst_cand; /* instance -> candidate or MP_NONE */
    /* recompute variant of candidate i needs candidates need[...] resident
     * at ub_i; nb: the reverse */
    uint32_t *need_beg, *need, *nb_beg, *nb;
};
typedef struct mp__offload_problem ctx_t;

static void free_ctx(ctx_t *x)
{
    mp_ctx *ctx = x->ctx;
    mp__dealloc(ctx, x->pstep);
    mp__dealloc(ctx, x->start);
    mp__dealloc(ctx, x->in);
    mp__dealloc(ctx, x->uses);
    mp__dealloc(ctx, x->live);
    mp__dealloc(ctx, x->c);
    mp__dealloc(ctx, x->inst_cand);
    mp__dealloc(ctx, x->need_beg);
    mp__dealloc(ctx, x->need);
    mp__dealloc(ctx, x->nb_beg);
    mp__dealloc(ctx, x->nb);
    memset(x, 0, sizeof *x);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : (x > y);
}

static int root_used(const mp__tensor *tt)
{
    return tt->producer != MP_NONE || tt->n_cons ||
           (tt->flags & MP__TF_OUTPUT);
}

/* Replays the base schedule into instances, uses and live bytes. */
static mp_status build_instances(ctx_t *x, uint64_t align)
{
    const mp_graph *g = x->g;
    mp_ctx *ctx = x->ctx;
    uint32_t nt = (uint32_t)g->n_tensors;
    mp_status st = MP_OK;
    uint32_t *open = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *open);
    size_t cap_in = 0, nu = 0;
    /* uses are gathered as (instance, position) pairs, then grouped */
    uint32_t *pi = NULL, *pp = NULL;
    size_t cap_pi = 0, cap_pp = 0;
    x->pstep = mp__alloc(ctx, ((size_t)x->nsteps + 1) * sizeof *x->pstep);
    if (!open || !x->pstep) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (uint32_t t = 0; t < nt; t++)
        open[t] = MP_NONE;
#define NEW_INST(r, q, made)                                                 \
    do {                                                                     \
        if ((st = mp__grow(ctx, (void **)&x->in, sizeof *x->in, x->ni + 1,    \
                          &cap_in)))                                         \
            goto out;                                                        \
        x->in[x->ni] = (inst){(r), (q), 0, 0, (made)};                      \
        open[r] = x->ni++;                                                   \
    } while (0)
#define ADD_USE(i, q)                                                        \
    do {                                                                     \
        if ((st = mp__grow(ctx, (void **)&pi, sizeof *pi, nu + 1, &cap_pi)) ||\
            (st = mp__grow(ctx, (void **)&pp, sizeof *pp, nu + 1, &cap_pp)))  \
            goto out;                                                        \
        pi[nu] = (i);                                                        \
        pp[nu++] = (q);                                                      \
    } while (0)
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE && mp__tensor_in_arena(tt) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            NEW_INST(t, 0, 0);
    }
    uint32_t q = 0;
    for (uint32_t s = 0; s < x->nsteps; s++) {
        const mp_step *sp = &x->steps[s];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            const mp__node *n = &g->nodes[sp->index];
            for (uint32_t i = 0; i < n->n_in; i++) {
                if (n->inputs[i] == MP_NONE)
                    continue;
                uint32_t r = g->tensors[n->inputs[i]].root;
                if (open[r] != MP_NONE)
                    ADD_USE(open[r], q);
            }
            for (uint32_t o = 0; o < n->n_out; o++) {
                uint32_t t = n->outputs[o];
                if (!mp__tensor_in_arena(&g->tensors[t]))
                    continue;
                NEW_INST(t, q, 1);
                ADD_USE(open[t], q);
            }
            x->pstep[q++] = s;
        } else if (sp->kind == MP_STEP_FREE) {
            if (sp->index < nt)
                open[sp->index] = MP_NONE;
        } else {
            st = mp__err(ctx, MP_ERR_INTERNAL,
                        "offload: base schedule with transfer steps");
            goto out;
        }
    }
    x->np = q;
    /* still resident at the end (outputs, tensors never freed) */
    for (uint32_t t = 0; t < nt; t++)
        if (open[t] != MP_NONE && q)
            ADD_USE(open[t], q - 1);
#undef NEW_INST
#undef ADD_USE
    /* group the uses by instance (counting sort), sort, unique */
    for (size_t k = 0; k < nu; k++)
        x->in[pi[k]].ucnt++;
    uint32_t total = 0;
    for (uint32_t i = 0; i < x->ni; i++) {
        x->in[i].ubeg = total;
        total += x->in[i].ucnt;
        x->in[i].ucnt = 0;
    }
    x->uses = mp__alloc(ctx, ((size_t)total + 1) * sizeof *x->uses);
    x->live = mp__calloc(ctx, (size_t)x->np + 1, sizeof *x->live);
    if (!x->uses || !x->live) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < nu; k++) {
        inst *I = &x->in[pi[k]];
        x->uses[I->ubeg + I->ucnt++] = pp[k];
    }
    for (uint32_t i = 0; i < x->ni; i++) {
        inst *I = &x->in[i];
        if (!I->ucnt)
            continue;
        uint32_t *u = x->uses + I->ubeg;
        qsort(u, I->ucnt, sizeof *u, cmp_u32);
        uint32_t m = 1;
        for (uint32_t k = 1; k < I->ucnt; k++)
            if (u[k] != u[m - 1])
                u[m++] = u[k];
        I->ucnt = m;
        const mp__tensor *tr = &g->tensors[I->root];
        if (!root_used(tr))
            continue;
        uint64_t sz;
        if (!mp__align_up(tr->bytes, align, &sz)) {
            st = mp__err(ctx, MP_ERR_OVERFLOW, "tensor '%s': size overflows",
                        tr->name);
            goto out;
        }
        for (uint32_t p = I->first; p <= u[m - 1] && p < x->np; p++)
            x->live[p] += sz;
    }
    x->inst_cand = mp__alloc(ctx, ((size_t)x->ni + 1) * sizeof *x->inst_cand);
    if (!x->inst_cand)
        st = MP_ERR_NOMEM;
    for (uint32_t i = 0; i < x->ni && !st; i++)
        x->inst_cand[i] = MP_NONE;
out:
    mp__dealloc(ctx, open);
    mp__dealloc(ctx, pi);
    mp__dealloc(ctx, pp);
    return st;
}

static void add_variant(cand *c, uint32_t k, uint32_t j, double cost, int rec)
{
    if (k >= j || k <= c->ua || j > c->ub || c->nv >= MAXV)
        return;
    for (uint32_t v = 0; v < c->nv; v++)
        if (c->vk[v] == k && c->vj[v] == j && c->vrec[v] == rec)
            return;
    c->vk[c->nv] = k;
    c->vj[c->nv] = j;
    c->vcost[c->nv] = cost;
    c->vrec[c->nv++] = (uint8_t)rec;
}

/* The instance of root r resident at position q, or MP_NONE. */
static uint32_t inst_at(const ctx_t *x, const uint32_t *rbeg,
                        const uint32_t *rlist, uint32_t r, uint32_t q)
{
    for (uint32_t k = rbeg[r]; k < rbeg[r + 1]; k++) {
        const inst *I = &x->in[rlist[k]];
        if (I->ucnt && I->first <= q && x->uses[I->ubeg + I->ucnt - 1] >= q)
            return rlist[k];
    }
    return MP_NONE;
}

/* The need / needed-by lists over candidates from the (candidate, needed
 * instance) pairs (reordered in place); instances without a candidate are
 * never removed: no exclusion. */
static mp_status build_needs(ctx_t *x, uint32_t *pairs, size_t npairs)
{
    mp_ctx *ctx = x->ctx;
    x->need_beg = mp__calloc(ctx, (size_t)x->nc + 2, sizeof *x->need_beg);
    x->nb_beg = mp__calloc(ctx, (size_t)x->nc + 2, sizeof *x->nb_beg);
    x->need = mp__alloc(ctx, (npairs + 1) * sizeof *x->need);
    x->nb = mp__alloc(ctx, (npairs + 1) * sizeof *x->nb);
    if (!x->need_beg || !x->nb_beg || !x->need || !x->nb)
        return MP_ERR_NOMEM;
    size_t m = 0;
    for (size_t k = 0; k < npairs; k++) {
        uint32_t a = pairs[2 * k], b = x->inst_cand[pairs[2 * k + 1]];
        if (a >= x->nc || x->c[a].node == MP_NONE || b == MP_NONE || a == b)
            continue;
        pairs[2 * m] = a;
        pairs[2 * m + 1] = b;
        m++;
    }
    npairs = m;
    for (size_t k = 0; k < npairs; k++) {
        x->need_beg[pairs[2 * k] + 1]++;
        x->nb_beg[pairs[2 * k + 1] + 1]++;
    }
    for (uint32_t i = 0; i < x->nc; i++) {
        x->need_beg[i + 1] += x->need_beg[i];
        x->nb_beg[i + 1] += x->nb_beg[i];
    }
    uint32_t *f1 = mp__alloc(ctx, ((size_t)x->nc + 1) * sizeof *f1);
    uint32_t *f2 = mp__alloc(ctx, ((size_t)x->nc + 1) * sizeof *f2);
    if (!f1 || !f2) {
        mp__dealloc(ctx, f1);
        mp__dealloc(ctx, f2);
        return MP_ERR_NOMEM;
    }
    memcpy(f1, x->need_beg, (size_t)x->nc * sizeof *f1);
    memcpy(f2, x->nb_beg, (size_t)x->nc * sizeof *f2);
    for (size_t k = 0; k < npairs; k++) {
        x->need[f1[pairs[2 * k]]++] = pairs[2 * k + 1];
        x->nb[f2[pairs[2 * k + 1]]++] = pairs[2 * k];
    }
    mp__dealloc(ctx, f1);
    mp__dealloc(ctx, f2);
    return MP_OK;
}

/* Candidates: the longest idle gap of each instance; with recompute, the
 * recompute variant and the candidates it needs resident. */
static mp_status build_cands(ctx_t *x, uint64_t align, int recompute)
{
    const mp_graph *g = x->g;
    mp_ctx *ctx = x->ctx;
    uint32_t nt = (uint32_t)g->n_tensors;
    mp_status st = MP_OK;
    uint8_t *is_out = mp__calloc(ctx, (size_t)nt + 1, 1);
    uint32_t *rbeg = mp__calloc(ctx, (size_t)nt + 2, sizeof *rbeg);
    uint32_t *rlist = mp__alloc(ctx, ((size_t)x->ni + 1) * sizeof *rlist);
    uint32_t *pairs = NULL; /* (cand, needed instance) */
    size_t npairs = 0, cap_pairs = 0;
    /* upd[r]: the first position of an optimizer step, which updates the
     * persistent tensors it reads in place (a recompute after it would
     * read the update) */
    uint32_t *upd = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *upd);
    x->c = mp__alloc(ctx, ((size_t)x->ni + 1) * sizeof *x->c);
    if (!is_out || !rbeg || !rlist || !upd || !x->c) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (uint32_t t = 0; t < nt; t++)
        upd[t] = MP_NONE;
    for (uint32_t q = x->np; q-- > 0;) {
        const mp__node *n = &g->nodes[x->steps[x->pstep[q]].index];
        if (n->phase != MP_PHASE_OPTIMIZER)
            continue;
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t r = mp__persistent_root(g, n->inputs[k]);
            if (r != MP_NONE)
                upd[r] = q;
        }
    }
    for (uint32_t t = 0; t < nt; t++)
        if (g->tensors[t].flags & MP__TF_OUTPUT)
            is_out[g->tensors[t].root] = 1;
    for (uint32_t i = 0; i < x->ni; i++)
        rbeg[x->in[i].root + 1]++;
    for (uint32_t t = 0; t < nt; t++)
        rbeg[t + 1] += rbeg[t];
    {
        uint32_t *fill = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *fill);
        if (!fill) {
            st = MP_ERR_NOMEM;
            goto out;
        }
        memcpy(fill, rbeg, (size_t)nt * sizeof *fill);
        for (uint32_t i = 0; i < x->ni; i++)
            rlist[fill[x->in[i].root]++] = i;
        mp__dealloc(ctx, fill);
    }
    x->nc = 0;
    for (uint32_t i = 0; i < x->ni; i++) {
        const inst *I = &x->in[i];
        const mp__tensor *tr = &g->tensors[I->root];
        if (I->ucnt < 2 || tr->bytes == 0 || !root_used(tr))
            continue;
        const uint32_t *u = x->uses + I->ubeg;
        double best = -1;
        uint32_t ba = 0, bb = 0;
        for (uint32_t k = 0; k + 1 < I->ucnt; k++) {
            if (u[k + 1] - u[k] < 2)
                continue;
            double gap = x->start[u[k + 1]] - (x->start[u[k]] +
                                               x->ndur[x->steps[x->pstep[u[k]]]
                                                           .index]);
            if (gap > best) {
                best = gap;
                ba = u[k];
                bb = u[k + 1];
            }
        }
        if (best < 0)
            continue;
        cand *c = &x->c[x->nc];
        memset(c, 0, sizeof *c);
        c->inst = i;
        c->t = I->root;
        c->node = MP_NONE;
        if (!mp__align_up(tr->bytes, align, &c->size)) {
            st = MP_ERR_OVERFLOW;
            goto out;
        }
        c->ua = ba;
        c->ub = bb;
        const mp_device *d = x->d;
        double xo = mp_device_transfer_seconds(d, tr->bytes, 1);
        double xi = mp_device_transfer_seconds(d, tr->bytes, 0);
        double end_a = x->start[ba] + x->ndur[x->steps[x->pstep[ba]].index];
        /* hk: the first position that starts after the offload copy
         * ends; hj: the last whose start leaves time for the prefetch */
        double done = end_a + xo;
        uint32_t hk = ba + 1;
        while (hk < bb && x->start[hk] < done)
            hk++;
        uint32_t hj = bb;
        while (hj > ba + 1 && x->start[hj] + xi > x->start[bb])
            hj--;
        int pre_hidden = x->start[hj] + xi <= x->start[bb];
        double so = done - x->start[ba + 1]; /* offload at ua + 1 */
        if (so < 0)
            so = 0;
        if (pre_hidden)
            add_variant(c, hk, hj, 0, 0);
        if (pre_hidden)
            add_variant(c, ba + 1, hj, so, 0);
        add_variant(c, hk, bb, xi, 0);
        add_variant(c, ba + 1, bb, so + xi, 0);
        /* recompute: a node-created instance of a non-output root whose
         * producer has this single output and inputs resident at ub */
        if (recompute && I->created && !is_out[I->root] &&
            tr->producer != MP_NONE &&
            g->nodes[tr->producer].n_out == 1) {
            const mp__node *pn = &g->nodes[tr->producer];
            int ok = 1;
            size_t p0 = npairs;
            for (uint32_t k = 0; k < pn->n_in && ok; k++) {
                if (pn->inputs[k] == MP_NONE)
                    continue;
                uint32_t w = mp__persistent_root(g, pn->inputs[k]);
                if (w != MP_NONE && upd[w] != MP_NONE &&
                    upd[w] >= I->first && upd[w] < bb) {
                    ok = 0; /* its weight updated since */
                    break;
                }
                uint32_t r = g->tensors[pn->inputs[k]].root;
                const mp__tensor *rt = &g->tensors[r];
                if (!mp__tensor_in_arena(rt) || rt->bytes == 0)
                    continue;
                uint32_t ii = inst_at(x, rbeg, rlist, r, bb);
                if (ii == MP_NONE) {
                    ok = 0;
                    break;
                }
                if ((st = mp__grow(ctx, (void **)&pairs, sizeof *pairs * 2,
                                  npairs + 1, &cap_pairs)))
                    goto out;
                pairs[2 * npairs] = x->nc;
                pairs[2 * npairs + 1] = ii;
                npairs++;
            }
            if (ok) {
                c->node = tr->producer;
                add_variant(c, ba + 1, bb, x->ndur[tr->producer], 1);
            } else {
                npairs = p0;
            }
        }
        if (c->nv == 0)
            continue;
        c->score = (double)c->size * (best > 0 ? best : 0);
        x->inst_cand[i] = x->nc++;
    }
    st = build_needs(x, pairs, npairs);
out:
    mp__dealloc(ctx, is_out);
    mp__dealloc(ctx, upd);
    mp__dealloc(ctx, rbeg);
    mp__dealloc(ctx, rlist);
    mp__dealloc(ctx, pairs);
    return st;
}

/* Variant v of candidate b keeps its tensor away from position q (a
 * recompute variant also at its own recompute position). */
static int covers(const cand *b, uint32_t v, uint32_t q)
{
    return b->vk[v] <= q && (q < b->vj[v] || (b->vrec[v] && q == b->vj[v]));
}

/* May variant v of candidate i be chosen beside the chosen ones? */
static int allowed(const ctx_t *x, uint32_t i, uint32_t v)
{
    const cand *c = &x->c[i];
    if (c->vrec[v])
        for (uint32_t k = x->need_beg[i]; k < x->need_beg[i + 1]; k++) {
            const cand *b = &x->c[x->need[k]];
            if (b->chosen && covers(b, b->v, c->ub))
                return 0;
        }
    for (uint32_t k = x->nb_beg[i]; k < x->nb_beg[i + 1]; k++) {
        const cand *y = &x->c[x->nb[k]];
        if (y->chosen && y->vrec[y->v] && covers(c, v, y->ub))
            return 0;
    }
    return 1;
}

static void clear_choice(ctx_t *x, uint64_t *live)
{
    memcpy(live, x->live, (size_t)x->np * sizeof *live);
    for (uint32_t i = 0; i < x->nc; i++)
        x->c[i].chosen = 0;
}

/* Greedy over the candidates (recompute variants when rec). live: per
 * position, updated. Returns the number chosen. */
static uint32_t greedy(ctx_t *x, uint64_t target, int rec, uint64_t *live)
{
    uint32_t n_chosen = 0;
    clear_choice(x, live);
    for (;;) {
        uint64_t peak = 0;
        uint32_t P = 0;
        for (uint32_t q = 0; q < x->np; q++)
            if (live[q] > peak) {
                peak = live[q];
                P = q;
            }
        if (peak <= target)
            break;
        uint32_t best = MP_NONE, best_v = 0;
        double best_cost = 0;
        for (uint32_t i = 0; i < x->nc; i++) {
            cand *c = &x->c[i];
            if (c->chosen || P <= c->ua || P >= c->ub)
                continue;
            for (uint32_t v = 0; v < c->nv; v++) {
                if (P < c->vk[v] || P >= c->vj[v] || (c->vrec[v] && !rec))
                    continue;
                if (best != MP_NONE &&
                    !(c->vcost[v] < best_cost ||
                      (c->vcost[v] == best_cost &&
                       c->score > x->c[best].score)))
                    continue;
                if (!allowed(x, i, v))
                    continue;
                best = i;
                best_v = v;
                best_cost = c->vcost[v];
            }
        }
        if (best == MP_NONE)
            break;
        cand *c = &x->c[best];
        c->chosen = 1;
        c->v = best_v;
        for (uint32_t q = c->vk[best_v]; q < c->vj[best_v]; q++)
            live[q] -= c->size;
        n_chosen++;
    }
    return n_chosen;
}

/* ILP over the candidates: a binary per variant, at most one per
 * candidate; at every position above the budget the bytes taken out cover
 * the excess; a recompute excludes the variants of its inputs that keep
 * them away at that position; minimise the estimated cost plus a small
 * cost per transfer. Warm start: the current choice in x->c, which is
 * replaced by the solution when there is one. */
mp_status mp__offload_ilp(ctx_t *x, uint64_t target, int rec,
                          double time_limit, mp_solve_status *status,
                          int *from_warm, int *have)
{
    mp_ctx *ctx = x->ctx;
    *have = 0;
    if (!mp__glpk_available())
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "the offload ILP needs GLPK (build with "
                      "MEMPLAN_WITH_GLPK=ON)");
    mp__lp *lp = NULL;
    mp_status st = mp__lp_create(ctx, 0, &lp);
    if (st)
        return st;
    uint32_t *col0 = mp__alloc(ctx, ((size_t)x->nc + 1) * sizeof *col0);
    double *warm = mp__alloc(ctx, ((size_t)x->nc * MAXV + 1) * sizeof *warm);
    uint32_t *cols = mp__alloc(ctx, ((size_t)x->nc * MAXV + 1) * sizeof *cols);
    double *vals = mp__alloc(ctx, ((size_t)x->nc * MAXV + 1) * sizeof *vals);
    if (!col0 || !warm || !cols || !vals) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    uint32_t ncol = 0;
    for (uint32_t i = 0; i < x->nc; i++) {
        const cand *c = &x->c[i];
        const mp__tensor *t = &x->g->tensors[c->t];
        double xt = mp_device_transfer_seconds(x->d, t->bytes, 1) +
                    mp_device_transfer_seconds(x->d, t->bytes, 0);
        uint32_t cc[MAXV];
        double one[MAXV] = {1, 1, 1, 1, 1};
        col0[i] = ncol;
        for (uint32_t v = 0; v < c->nv; v++) {
            int off = c->vrec[v] && !rec;
            if ((st = mp__lp_add_col(lp, 0, off ? 0 : 1, MP__LP_BINARY,
                                    c->vcost[v] + (c->vrec[v] ? 0 : 1e-3 * xt),
                                    &cc[v])))
                goto out;
            warm[ncol++] = c->chosen && c->v == v;
        }
        if (c->nv > 1 &&
            (st = mp__lp_add_row(lp, -MP__LP_INF, 1, c->nv, cc, one, NULL)))
            goto out;
    }
    for (uint32_t q = 0; q < x->np; q++) {
        if (x->live[q] <= target)
            continue;
        double need = (double)(x->live[q] - target);
        uint32_t nnz = 0;
        for (uint32_t i = 0; i < x->nc; i++) {
            const cand *c = &x->c[i];
            double sz = (double)c->size / need;
            for (uint32_t v = 0; v < c->nv; v++)
                if (c->vk[v] <= q && q < c->vj[v]) {
                    cols[nnz] = col0[i] + v;
                    vals[nnz++] = sz;
                }
        }
        if ((st = mp__lp_add_row(lp, 1, MP__LP_INF, nnz, cols, vals, NULL)))
            goto out;
    }
    if (rec)
        for (uint32_t i = 0; i < x->nc; i++) {
            const cand *c = &x->c[i];
            uint32_t rv = MP_NONE;
            for (uint32_t v = 0; v < c->nv; v++)
                if (c->vrec[v])
                    rv = v;
            if (rv == MP_NONE)
                continue;
            for (uint32_t k = x->need_beg[i]; k < x->need_beg[i + 1]; k++) {
                const cand *b = &x->c[x->need[k]];
                for (uint32_t w = 0; w < b->nv; w++) {
                    if (!covers(b, w, c->ub))
                        continue;
                    uint32_t pc[2] = {col0[i] + rv, col0[x->need[k]] + w};
                    double pv[2] = {1, 1};
                    if ((st = mp__lp_add_row(lp, -MP__LP_INF, 1, 2, pc, pv,
                                            NULL)))
                        goto out;
                }
            }
        }
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    lo.time_limit = time_limit > 0 ? time_limit : 10;
    lo.warm_start = warm;
    mp__lp_result r;
    if ((st = mp__lp_solve(lp, &lo, &r)))
        goto out;
    *status = r.status;
    if (!r.has_solution)
        goto out;
    *have = 1;
    *from_warm = r.from_warm_start;
    const double *v = mp__lp_values(lp);
    for (uint32_t i = 0; i < x->nc; i++) {
        cand *c = &x->c[i];
        c->chosen = 0;
        for (uint32_t w = 0; w < c->nv; w++)
            if (v[col0[i] + w] > 0.5) {
                c->chosen = 1;
                c->v = w;
                break;
            }
    }
out:
    mp__lp_destroy(lp);
    mp__dealloc(ctx, col0);
    mp__dealloc(ctx, warm);
    mp__dealloc(ctx, cols);
    mp__dealloc(ctx, vals);
    return st;
}

/* ---- schedules and their time -------------------------------------------- */
typedef struct {
    uint32_t pos, cls, index; /* cls: 0 OFFLOAD, 1 FREE, 2 PREFETCH, 3 RECOMPUTE */
} ins;

static int cmp_ins(const void *a, const void *b)
{
    const ins *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* The base schedule with the chosen candidates' steps inserted before the
 * node steps of their positions. */
mp_status mp__offload_schedule(const ctx_t *x, mp_step **out,
                               uint32_t *n_out)
{
    mp_ctx *ctx = x->ctx;
    uint32_t n_chosen = 0;
    for (uint32_t i = 0; i < x->nc; i++)
        n_chosen += x->c[i].chosen != 0;
    ins *ii = mp__alloc(ctx, ((size_t)n_chosen * 2 + 1) * sizeof *ii);
    mp_step *ns = mp__alloc(ctx, ((size_t)x->nsteps + 2 * (size_t)n_chosen +
                                 1) * sizeof *ns);
    if (!ii || !ns) {
        mp__dealloc(ctx, ii);
        mp__dealloc(ctx, ns);
        return MP_ERR_NOMEM;
    }
    uint32_t ni = 0;
    for (uint32_t i = 0; i < x->nc; i++) {
        const cand *c = &x->c[i];
        if (!c->chosen)
            continue;
        if (c->vrec[c->v]) {
            ii[ni++] = (ins){c->vk[c->v], 1, c->t};
            ii[ni++] = (ins){c->vj[c->v], 3, c->node};
        } else {
            ii[ni++] = (ins){c->vk[c->v], 0, c->t};
            ii[ni++] = (ins){c->vj[c->v], 2, c->t};
        }
    }
    qsort(ii, ni, sizeof *ii, cmp_ins);
    static const mp_step_kind kinds[4] = {MP_STEP_OFFLOAD, MP_STEP_FREE,
                                          MP_STEP_PREFETCH,
                                          MP_STEP_RECOMPUTE};
    uint32_t n = 0, k = 0, q = 0;
    for (uint32_t s = 0; s < x->nsteps; s++) {
        const mp_step *sp = &x->steps[s];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            while (k < ni && ii[k].pos <= q) {
                ns[n].kind = kinds[ii[k].cls];
                ns[n++].index = ii[k].index;
                k++;
            }
            q++;
        }
        ns[n++] = *sp;
    }
    mp__dealloc(ctx, ii);
    *out = ns;
    *n_out = n;
    return MP_OK;
}


/* A copy that may start at `earliest` on its engine (one per direction,
 * or one shared): its end; the engine is busy until then. */
static double copy_done(double *d2h, double *h2d, int one_engine,
                        int to_host, double earliest, double secs)
{
    double *eng = to_host ? d2h : h2d;
    double free_at = one_engine ? (*d2h > *h2d ? *d2h : *h2d) : *eng;
    double done = (earliest > free_at ? earliest : free_at) + secs;
    if (one_engine)
        *d2h = *h2d = done;
    else
        *eng = done;
    return done;
}

/* Two-stream simulation: the compute stream runs node steps in order and
 * stalls for inputs still being prefetched and at OFFLOAD steps whose copy
 * has not finished; a copy to host may start once its instance exists,
 * a copy back at its PREFETCH step once the engine is free. */
mp_status mp__offload_simulate(mp_ctx *ctx, const mp_graph *g,
                               const mp_step *st, uint32_t ns,
                               const mp_device *d, const double *ndur,
                               mp__offload_timing *tm)
{
    double c = 0, d2h = 0, h2d = 0;
    int one_engine = d->copy_engines < 2;
    uint32_t nt = (uint32_t)g->n_tensors;
    double *ready = mp__calloc(ctx, (size_t)nt + 1, sizeof *ready);
    double *made = mp__calloc(ctx, (size_t)nt + 1, sizeof *made);
    double *off_done = mp__calloc(ctx, (size_t)nt + 1, sizeof *off_done);
    memset(tm, 0, sizeof *tm);
    if (!ready || !made || !off_done) {
        mp__dealloc(ctx, ready);
        mp__dealloc(ctx, made);
        mp__dealloc(ctx, off_done);
        return MP_ERR_NOMEM;
    }
    for (uint32_t s = 0; s < ns; s++) {
        const mp_step *sp = &st[s];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            const mp__node *n = &g->nodes[sp->index];
            double t0 = c;
            for (uint32_t i = 0; i < n->n_in; i++)
                if (n->inputs[i] != MP_NONE) {
                    uint32_t r = g->tensors[n->inputs[i]].root;
                    if (ready[r] > t0)
                        t0 = ready[r];
                }
            tm->exposed += t0 - c;
            double du = ndur[sp->index];
            if (sp->kind == MP_STEP_COMPUTE) {
                tm->compute += du;
            } else {
                tm->recompute += du;
                tm->n_rec++;
            }
            c = t0 + du;
            for (uint32_t o = 0; o < n->n_out; o++)
                made[n->outputs[o]] = c;
        } else if (sp->kind == MP_STEP_OFFLOAD) {
            uint64_t b = g->tensors[sp->index].bytes;
            double done = copy_done(&d2h, &h2d, one_engine, 1,
                                    made[sp->index],
                                    mp_device_transfer_seconds(d, b, 1));
            off_done[sp->index] = done;
            if (done > c) {
                tm->exposed += done - c;
                c = done;
            }
            tm->to_host += b;
            tm->n_off++;
        } else if (sp->kind == MP_STEP_PREFETCH) {
            uint64_t b = g->tensors[sp->index].bytes;
            double t = c > off_done[sp->index] ? c : off_done[sp->index];
            double done = copy_done(&d2h, &h2d, one_engine, 0, t,
                                    mp_device_transfer_seconds(d, b, 0));
            ready[sp->index] = done;
            made[sp->index] = done;
            tm->to_device += b;
        }
    }
    tm->total = c;
    mp__dealloc(ctx, ready);
    mp__dealloc(ctx, made);
    mp__dealloc(ctx, off_done);
    return MP_OK;
}

mp_status mp__offload_schedule_peak(const mp_graph *g, const mp_step *st,
                                    uint32_t ns, uint64_t align,
                                    uint64_t *peak)
{
    mp_block *bl = NULL;
    uint32_t nb = 0;
    uint64_t *live = NULL;
    mp_status s = mp__schedule_blocks(g, st, ns, align, NULL, NULL, &bl, &nb, NULL);
    if (!s)
        s = mp__blocks_live(g->ctx, bl, nb, ns, &live);
    *peak = 0;
    if (!s)
        for (uint32_t i = 0; i < ns; i++)
            if (live[i] > *peak)
                *peak = live[i];
    mp__dealloc(g->ctx, bl);
    mp__dealloc(g->ctx, live);
    return s;
}

/* Analyses a base schedule (steps not owned) into x. */
static mp_status setup(ctx_t *x, const mp_graph *g, const mp_device *d,
                       const double *ndur, const mp_step *steps, uint32_t n,
                       uint64_t align, int recompute)
{
    memset(x, 0, sizeof *x);
    x->ctx = g->ctx;
    x->g = g;
    x->d = d;
    x->ndur = ndur;
    x->steps = steps;
    x->nsteps = n;
    mp_status st = build_instances(x, align);
    if (st)
        return st;
    x->start = mp__alloc(x->ctx, ((size_t)x->np + 1) * sizeof *x->start);
    if (!x->start)
        return MP_ERR_NOMEM;
    double t = 0;
    for (uint32_t q = 0; q < x->np; q++) {
        x->start[q] = t;
        t += ndur[steps[x->pstep[q]].index];
    }
    x->start[x->np] = t;
    return build_cands(x, align, recompute);
}

mp_status mp__offload_problem_create(const mp_graph *g, const mp_device *d,
                                     const double *ndur, const mp_step *steps,
                                     uint32_t n, uint64_t align, int recompute,
                                     mp__offload_problem **out)
{
    *out = NULL;
    ctx_t *x = mp__alloc(g->ctx, sizeof *x);
    if (!x)
        return MP_ERR_NOMEM;
    mp_status st = setup(x, g, d, ndur, steps, n, align, recompute);
    if (st) {
        mp__offload_problem_destroy(x);
        return st;
    }
    *out = x;
    return MP_OK;
}

void mp__offload_problem_destroy(mp__offload_problem *x)
{
    if (!x)
        return;
    mp_ctx *ctx = x->ctx;
    free_ctx(x);
    mp__dealloc(ctx, x);
}

uint32_t mp__offload_num_candidates(const mp__offload_problem *x)
{
    return x->nc;
}

mp_status mp__offload_greedy(mp__offload_problem *x, uint64_t target, int rec,
                             uint32_t *n_chosen)
{
    uint64_t *live = mp__alloc(x->ctx, ((size_t)x->np + 1) * sizeof *live);
    if (!live)
        return MP_ERR_NOMEM;
    uint32_t n = greedy(x, target, rec, live);
    mp__dealloc(x->ctx, live);
    if (n_chosen)
        *n_chosen = n;
    return MP_OK;
}
