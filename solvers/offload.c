/* Offload planner: tensors go to host memory during their idle gaps so
 * that a schedule fits a memory budget (docs/offload.md).
 *
 * Positions are the nodes of the default (topological) order. Each arena
 * storage root has uses (its producer and the readers of it and of its
 * views); its longest idle gap (in estimated time) between two uses is its
 * candidate: OFFLOAD after the first use, PREFETCH before the second. A
 * copy is "hidden" when the device->host copy can finish before the
 * OFFLOAD step (memory is released there), or the host->device copy,
 * issued at the PREFETCH step, before the reader starts. Each candidate
 * has up to four variants (both copies hidden, one of them, the whole gap
 * with both exposed), each a range of positions and an estimated stall.
 * Greedy: while the live peak is above the budget, take the variant that
 * covers the peak position with the least stall, largest size x idle
 * time first. The exposed time comes from a simulation of the compute stream
 * and the copy engines (one per direction when the device has two). */
#include "internal.h"
#include "mp_glpk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_offload_options_init(mp_offload_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->use_given_seconds = 1;
}

typedef struct {
    uint32_t t;        /* storage root */
    uint64_t size;     /* aligned */
    uint32_t ua, ub;   /* uses around the gap (positions) */
    /* variants: ranges [vk, vj) of positions without the tensor and the
     * estimated stall: both copies hidden, only the prefetch hidden, only
     * the offload hidden, the whole gap */
    uint32_t vk[4], vj[4];
    double vstall[4];
    uint32_t nv;
    uint32_t k, j;     /* chosen range */
    uint32_t v;        /* chosen variant */
    double score;
    int chosen;
} cand;

static void add_variant(cand *c, uint32_t k, uint32_t j, double stall)
{
    if (k >= j || k <= c->ua || j > c->ub)
        return;
    for (uint32_t v = 0; v < c->nv; v++)
        if (c->vk[v] == k && c->vj[v] == j)
            return;
    c->vk[c->nv] = k;
    c->vj[c->nv] = j;
    c->vstall[c->nv++] = stall;
}

typedef struct {
    uint32_t pos, cand, is_prefetch;
} ins;

static int cmp_ins(const void *a, const void *b)
{
    const ins *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    if (x->is_prefetch != y->is_prefetch)
        return x->is_prefetch < y->is_prefetch ? -1 : 1;
    return x->cand < y->cand ? -1 : (x->cand > y->cand);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : (x > y);
}

typedef struct {
    mp_ctx *ctx;
    const mp_graph *g;
    uint32_t nn, nt;
    uint32_t *pos;       /* node -> position */
    double *dur, *start; /* per position, no stalls */
    uint32_t *ubeg, *ucnt, *uses; /* per root: sorted positions */
    uint64_t *live;      /* per position */
    cand *c;
    uint32_t nc;
} ctx_t;

static void free_ctx(ctx_t *x)
{
    mp_ctx *ctx = x->ctx;
    mp_dealloc(ctx, x->pos);
    mp_dealloc(ctx, x->dur);
    mp_dealloc(ctx, x->start);
    mp_dealloc(ctx, x->ubeg);
    mp_dealloc(ctx, x->ucnt);
    mp_dealloc(ctx, x->uses);
    mp_dealloc(ctx, x->live);
    mp_dealloc(ctx, x->c);
}

/* Uses of every arena root: producer position and readers of it and of
 * its views, sorted, unique. Roots that must stay to the end (outputs)
 * get a final use at nn - 1. Fills live[] from first to last use. */
static mp_status build_uses(ctx_t *x, uint64_t align)
{
    const mp_graph *g = x->g;
    mp_ctx *ctx = x->ctx;
    uint32_t nt = x->nt, nn = x->nn;
    x->ubeg = mp_calloc(ctx, (size_t)nt + 1, sizeof *x->ubeg);
    x->ucnt = mp_calloc(ctx, (size_t)nt + 1, sizeof *x->ucnt);
    x->live = mp_calloc(ctx, (size_t)nn + 1, sizeof *x->live);
    if (!x->ubeg || !x->ucnt || !x->live)
        return MP_ERR_NOMEM;
    size_t total = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const mp_tensor *tt = &g->tensors[t];
        uint32_t r = tt->root;
        if (!mp_tensor_in_arena(&g->tensors[r]))
            continue;
        x->ucnt[r] += tt->n_cons + 2;
    }
    for (uint32_t t = 0; t < nt; t++) {
        x->ubeg[t] = (uint32_t)total;
        total += x->ucnt[t];
        x->ucnt[t] = 0;
    }
    x->uses = mp_alloc(ctx, (total + 1) * sizeof *x->uses);
    if (!x->uses)
        return MP_ERR_NOMEM;
    for (uint32_t t = 0; t < nt; t++) {
        const mp_tensor *tt = &g->tensors[t];
        uint32_t r = tt->root;
        if (!mp_tensor_in_arena(&g->tensors[r]))
            continue;
        uint32_t *u = x->uses + x->ubeg[r];
        for (uint32_t c = 0; c < tt->n_cons; c++)
            u[x->ucnt[r]++] = x->pos[g->cons[tt->cons_begin + c]];
        if (tt->producer != MP_NONE)
            u[x->ucnt[r]++] = x->pos[tt->producer];
        if (tt->flags & MP_TF_OUTPUT)
            u[x->ucnt[r]++] = nn ? nn - 1 : 0;
    }
    for (uint32_t r = 0; r < nt; r++) {
        if (!x->ucnt[r])
            continue;
        uint32_t *u = x->uses + x->ubeg[r];
        qsort(u, x->ucnt[r], sizeof *u, cmp_u32);
        uint32_t m = 1;
        for (uint32_t i = 1; i < x->ucnt[r]; i++)
            if (u[i] != u[m - 1])
                u[m++] = u[i];
        x->ucnt[r] = m;
        const mp_tensor *tr = &g->tensors[r];
        /* an input nobody reads gets no memory */
        if (tr->producer == MP_NONE && tr->n_cons == 0 &&
            !(tr->flags & MP_TF_OUTPUT)) {
            int read = 0;
            for (uint32_t t = 0; t < nt && !read; t++)
                read = g->tensors[t].root == r && g->tensors[t].n_cons;
            if (!read)
                continue;
        }
        uint64_t sz;
        if (!mp_align_up(tr->bytes, align, &sz))
            return mp_err(ctx, MP_ERR_OVERFLOW, "tensor '%s': size overflows",
                          tr->name);
        uint32_t first = tr->producer == MP_NONE ? 0 : u[0];
        uint32_t last = u[m - 1];
        for (uint32_t q = first; q <= last && q < nn; q++)
            x->live[q] += sz;
    }
    return MP_OK;
}

/* Candidates: the longest idle gap of each root. */
static mp_status build_cands(ctx_t *x, const mp_device *d, uint64_t align)
{
    const mp_graph *g = x->g;
    x->c = mp_alloc(x->ctx, ((size_t)x->nt + 1) * sizeof *x->c);
    if (!x->c)
        return MP_ERR_NOMEM;
    x->nc = 0;
    for (uint32_t r = 0; r < x->nt; r++) {
        const mp_tensor *tr = &g->tensors[r];
        if (tr->root != r || !mp_tensor_in_arena(tr) || x->ucnt[r] < 2 ||
            tr->bytes == 0)
            continue;
        const uint32_t *u = x->uses + x->ubeg[r];
        double best = -1;
        uint32_t ba = 0, bb = 0;
        for (uint32_t i = 0; i + 1 < x->ucnt[r]; i++) {
            if (u[i + 1] - u[i] < 2)
                continue;
            double gap = x->start[u[i + 1]] - (x->start[u[i]] + x->dur[u[i]]);
            if (gap > best) {
                best = gap;
                ba = u[i];
                bb = u[i + 1];
            }
        }
        if (best < 0)
            continue;
        cand *c = &x->c[x->nc++];
        memset(c, 0, sizeof *c);
        c->t = r;
        if (!mp_align_up(tr->bytes, align, &c->size))
            return MP_ERR_OVERFLOW;
        c->ua = ba;
        c->ub = bb;
        double xo = mp_device_transfer_seconds(d, tr->bytes, 1);
        double xi = mp_device_transfer_seconds(d, tr->bytes, 0);
        /* hk: the first position that starts after the offload copy
         * ends; hj: the last whose start leaves time for the prefetch */
        double done = x->start[ba] + x->dur[ba] + xo;
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
            add_variant(c, hk, hj, 0);
        if (pre_hidden)
            add_variant(c, ba + 1, hj, so);
        add_variant(c, hk, bb, xi);
        add_variant(c, ba + 1, bb, so + xi);
        if (c->nv == 0) {
            x->nc--;
            continue;
        }
        c->score = (double)c->size * (best > 0 ? best : 0);
    }
    return MP_OK;
}

/* Two-stream simulation of the final schedule: compute stalls waiting for
 * copies. */
static void simulate(const ctx_t *x, const mp_step *st, uint32_t ns,
                     const mp_device *d, const cand *cs,
                     const uint32_t *cand_of_tensor, mp_offload_result *res)
{
    const mp_graph *g = x->g;
    double c = 0, d2h = 0, h2d = 0, exposed = 0, compute = 0;
    int one_engine = d->copy_engines < 2;
    double *node_end = mp_calloc(x->ctx, (size_t)x->nn + 1, sizeof *node_end);
    double *ready = mp_calloc(x->ctx, (size_t)x->nt + 1, sizeof *ready);
    double *off_done = mp_calloc(x->ctx, (size_t)x->nt + 1,
                                 sizeof *off_done);
    if (!node_end || !ready || !off_done) {
        mp_dealloc(x->ctx, node_end);
        mp_dealloc(x->ctx, ready);
        mp_dealloc(x->ctx, off_done);
        return;
    }
    for (uint32_t s = 0; s < ns; s++) {
        const mp_step *sp = &st[s];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            const mp_node *n = &g->nodes[sp->index];
            double t0 = c;
            for (uint32_t i = 0; i < n->n_in; i++)
                if (n->inputs[i] != MP_NONE) {
                    uint32_t r = g->tensors[n->inputs[i]].root;
                    if (ready[r] > t0)
                        t0 = ready[r];
                }
            exposed += t0 - c;
            double du = x->dur[x->pos[sp->index]];
            compute += du;
            c = t0 + du;
            node_end[x->pos[sp->index]] = c;
        } else if (sp->kind == MP_STEP_OFFLOAD) {
            const cand *cd = &cs[cand_of_tensor[sp->index]];
            double xo = mp_device_transfer_seconds(
                d, g->tensors[sp->index].bytes, 1);
            double free_at = one_engine ? (d2h > h2d ? d2h : h2d) : d2h;
            double issue = node_end[cd->ua];
            double b = issue > free_at ? issue : free_at;
            double done = b + xo;
            if (one_engine)
                d2h = h2d = done;
            else
                d2h = done;
            off_done[sp->index] = done;
            if (done > c) {
                exposed += done - c;
                c = done;
            }
        } else if (sp->kind == MP_STEP_PREFETCH) {
            double xi = mp_device_transfer_seconds(
                d, g->tensors[sp->index].bytes, 0);
            double free_at = one_engine ? (d2h > h2d ? d2h : h2d) : h2d;
            double b = c > free_at ? c : free_at;
            if (off_done[sp->index] > b)
                b = off_done[sp->index];
            double done = b + xi;
            if (one_engine)
                d2h = h2d = done;
            else
                h2d = done;
            ready[sp->index] = done;
        }
    }
    res->compute_seconds = compute;
    res->exposed_seconds = exposed;
    res->total_seconds = c;
    mp_dealloc(x->ctx, node_end);
    mp_dealloc(x->ctx, ready);
    mp_dealloc(x->ctx, off_done);
}

/* ILP over the candidates: a binary per candidate and variant, at most
 * one variant per candidate; at every position above the budget the bytes
 * taken out cover the excess; minimise the estimated stalls plus a small
 * cost per transfer. Warm start: the greedy choice in x->c. On a
 * solution, x->c's choice and x->live are replaced. */
static mp_status solve_ilp(ctx_t *x, const mp_device *d, uint64_t target,
                           double time_limit, mp_offload_result *res)
{
    mp_ctx *ctx = x->ctx;
    if (!mp_glpk_available())
        return mp_err(ctx, MP_ERR_UNSUPPORTED,
                      "the offload ILP needs GLPK (build with "
                      "MEMPLAN_WITH_GLPK=ON)");
    mp_lp *lp = NULL;
    mp_status st = mp_lp_create(ctx, 0, &lp);
    if (st)
        return st;
    uint32_t *col0 = mp_alloc(ctx, ((size_t)x->nc + 1) * sizeof *col0);
    double *warm = mp_alloc(ctx, ((size_t)x->nc * 4 + 1) * sizeof *warm);
    uint64_t *base = mp_alloc(ctx, ((size_t)x->nn + 1) * sizeof *base);
    uint32_t *cols = mp_alloc(ctx, ((size_t)x->nc * 4 + 1) * sizeof *cols);
    double *vals = mp_alloc(ctx, ((size_t)x->nc * 4 + 1) * sizeof *vals);
    if (!col0 || !warm || !base || !cols || !vals) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    /* live bytes with nothing offloaded */
    memcpy(base, x->live, (size_t)x->nn * sizeof *base);
    for (uint32_t i = 0; i < x->nc; i++)
        if (x->c[i].chosen)
            for (uint32_t q = x->c[i].k; q < x->c[i].j; q++)
                base[q] += x->c[i].size;
    uint32_t ncol = 0;
    for (uint32_t i = 0; i < x->nc; i++) {
        const cand *c = &x->c[i];
        const mp_tensor *t = &x->g->tensors[c->t];
        double xt = mp_device_transfer_seconds(d, t->bytes, 1) +
                    mp_device_transfer_seconds(d, t->bytes, 0);
        uint32_t cc[4];
        double one[4] = {1, 1, 1, 1};
        col0[i] = ncol;
        for (uint32_t v = 0; v < c->nv; v++) {
            if ((st = mp_lp_add_col(lp, 0, 1, MP_LP_BINARY,
                                    c->vstall[v] + 1e-3 * xt, &cc[v])))
                goto out;
            warm[ncol++] = c->chosen && c->v == v;
        }
        if (c->nv > 1 &&
            (st = mp_lp_add_row(lp, -MP_LP_INF, 1, c->nv, cc, one, NULL)))
            goto out;
    }
    for (uint32_t q = 0; q < x->nn; q++) {
        if (base[q] <= target)
            continue;
        double need = (double)(base[q] - target);
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
        if ((st = mp_lp_add_row(lp, 1, MP_LP_INF, nnz, cols, vals, NULL)))
            goto out;
    }
    mp_lp_options lo;
    mp_lp_options_init(&lo);
    lo.time_limit = time_limit > 0 ? time_limit : 10;
    lo.warm_start = warm;
    mp_lp_result r;
    if ((st = mp_lp_solve(lp, &lo, &r)))
        goto out;
    res->ilp_status = r.status;
    if (!r.has_solution)
        goto out;
    res->solver = r.from_warm_start ? "ilp(greedy)" : "ilp";
    const double *v = mp_lp_values(lp);
    memcpy(x->live, base, (size_t)x->nn * sizeof *base);
    for (uint32_t i = 0; i < x->nc; i++) {
        cand *c = &x->c[i];
        c->chosen = 0;
        for (uint32_t w = 0; w < c->nv; w++)
            if (v[col0[i] + w] > 0.5) {
                c->chosen = 1;
                c->v = w;
                c->k = c->vk[w];
                c->j = c->vj[w];
                break;
            }
        if (c->chosen)
            for (uint32_t q = c->k; q < c->j; q++)
                x->live[q] -= c->size;
    }
out:
    mp_lp_destroy(lp);
    mp_dealloc(ctx, col0);
    mp_dealloc(ctx, warm);
    mp_dealloc(ctx, base);
    mp_dealloc(ctx, cols);
    mp_dealloc(ctx, vals);
    return st;
}

mp_status mp_offload_plan(mp_graph *g, const mp_offload_options *oo,
                          const mp_plan_options *po_in, mp_plan **out,
                          mp_offload_result *res)
{
    if (!g || !out || !res)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    double t0 = mp_now_seconds();
    *out = NULL;
    memset(res, 0, sizeof *res);
    if (!g->finalized)
        return mp_err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    mp_offload_options o;
    if (oo)
        o = *oo;
    else
        mp_offload_options_init(&o);
    mp_plan_options po;
    if (po_in)
        po = *po_in;
    else
        mp_plan_options_init(&po);
    if (po.alignment == 0)
        return mp_err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    mp_device dev;
    if (o.device)
        dev = *o.device;
    else if (mp_device_builtin(ctx, "h200", &dev))
        return MP_ERR_INTERNAL;
    if (dev.h2d_bw <= 0 || dev.d2h_bw <= 0)
        return mp_err(ctx, MP_ERR_INVALID_ARG,
                      "device '%s': the host link bandwidth is unknown",
                      dev.name);
    uint64_t pers = mp_plan_persistent_bytes(g);
    if (pers == UINT64_MAX)
        return mp_err(ctx, MP_ERR_OVERFLOW, "persistent bytes overflow");
    ctx_t x;
    memset(&x, 0, sizeof x);
    x.ctx = ctx;
    x.g = g;
    x.nn = (uint32_t)g->n_nodes;
    x.nt = (uint32_t)g->n_tensors;
    mp_status st = MP_OK;
    mp_step *steps = NULL, *ns = NULL;
    ins *ii = NULL;
    uint32_t *cand_of = NULL;
    x.pos = mp_alloc(ctx, ((size_t)x.nn + 1) * sizeof *x.pos);
    x.dur = mp_alloc(ctx, ((size_t)x.nn + 1) * sizeof *x.dur);
    x.start = mp_alloc(ctx, ((size_t)x.nn + 1) * sizeof *x.start);
    if (!x.pos || !x.dur || !x.start) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    double tcur = 0;
    for (uint32_t q = 0; q < x.nn; q++) {
        uint32_t v = g->topo[q];
        x.pos[v] = q;
        mp_op_cost k;
        if ((st = mp_node_estimate_ex(g, v, &dev, o.use_given_seconds, &k)))
            goto out;
        x.dur[q] = k.seconds;
        x.start[q] = tcur;
        tcur += k.seconds;
    }
    x.start[x.nn] = tcur;
    if ((st = build_uses(&x, po.alignment)) ||
        (st = build_cands(&x, &dev, po.alignment)))
        goto out;
    uint64_t base = 0;
    for (uint32_t q = 0; q < x.nn; q++)
        if (x.live[q] > base)
            base = x.live[q];
    res->base_peak_bytes = base + pers;
    {
        /* the plan without offload (in-place reuse and the rest of po
         * included): when it meets the budget, it is the answer */
        mp_plan *p0 = NULL;
        if ((st = mp_plan_create(g, &po, &p0)))
            goto out;
        uint64_t pk0 = p0->fig.lower_bound_bytes + pers;
        if (pk0 < res->base_peak_bytes)
            res->base_peak_bytes = pk0;
        if (o.budget == 0 || pk0 <= o.budget) {
            res->peak_bytes = pk0;
            res->status = MP_SOLVE_FEASIBLE;
            res->solver = "none";
            res->ilp_status = MP_SOLVE_NONE;
            res->compute_seconds = res->total_seconds = tcur;
            res->seconds = mp_now_seconds() - t0;
            *out = p0;
            goto out;
        }
        mp_plan_destroy(p0);
    }
    uint64_t target = o.budget == 0 ? UINT64_MAX
                      : o.budget > pers ? o.budget - pers : 0;
    uint32_t n_chosen = 0;
    for (;;) {
        uint64_t peak = 0;
        uint32_t P = 0;
        for (uint32_t q = 0; q < x.nn; q++)
            if (x.live[q] > peak) {
                peak = x.live[q];
                P = q;
            }
        if (peak <= target)
            break;
        /* the variant covering P with the least stall, then the largest
         * size x idle time */
        uint32_t best = MP_NONE, best_v = 0;
        double best_stall = 0;
        for (uint32_t i = 0; i < x.nc; i++) {
            cand *c = &x.c[i];
            if (c->chosen || P <= c->ua || P >= c->ub)
                continue;
            for (uint32_t v = 0; v < c->nv; v++) {
                if (P < c->vk[v] || P >= c->vj[v])
                    continue;
                if (best == MP_NONE || c->vstall[v] < best_stall ||
                    (c->vstall[v] == best_stall &&
                     c->score > x.c[best].score)) {
                    best = i;
                    best_v = v;
                    best_stall = c->vstall[v];
                }
            }
        }
        if (best == MP_NONE)
            break;
        cand *c = &x.c[best];
        c->chosen = 1;
        c->v = best_v;
        c->k = c->vk[best_v];
        c->j = c->vj[best_v];
        for (uint32_t q = c->k; q < c->j; q++)
            x.live[q] -= c->size;
        n_chosen++;
    }
    res->solver = "greedy";
    res->ilp_status = MP_SOLVE_NONE;
    if (o.ilp && n_chosen) {
        if ((st = solve_ilp(&x, &dev, target, o.time_limit, res)))
            goto out;
        n_chosen = 0;
        for (uint32_t i = 0; i < x.nc; i++)
            n_chosen += x.c[i].chosen != 0;
    }
    /* the schedule: default steps with OFFLOAD/PREFETCH before COMPUTE */
    uint32_t nsteps;
    if ((st = mp_schedule_default(g, &steps, &nsteps)))
        goto out;
    ii = mp_alloc(ctx, ((size_t)n_chosen * 2 + 1) * sizeof *ii);
    cand_of = mp_alloc(ctx, ((size_t)x.nt + 1) * sizeof *cand_of);
    ns = mp_alloc(ctx, ((size_t)nsteps + 2 * (size_t)n_chosen + 1) *
                           sizeof *ns);
    if (!ii || !cand_of || !ns) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    uint32_t ni = 0;
    for (uint32_t i = 0; i < x.nc; i++)
        if (x.c[i].chosen) {
            ii[ni++] = (ins){x.c[i].k, i, 0};
            ii[ni++] = (ins){x.c[i].j, i, 1};
            cand_of[x.c[i].t] = i;
            res->bytes_to_host += g->tensors[x.c[i].t].bytes;
            res->bytes_to_device += g->tensors[x.c[i].t].bytes;
        }
    qsort(ii, ni, sizeof *ii, cmp_ins);
    uint32_t n = 0, k = 0;
    for (uint32_t s = 0; s < nsteps; s++) {
        if (steps[s].kind == MP_STEP_COMPUTE) {
            uint32_t q = x.pos[steps[s].index];
            while (k < ni && ii[k].pos <= q) {
                ns[n].kind = ii[k].is_prefetch ? MP_STEP_PREFETCH
                                               : MP_STEP_OFFLOAD;
                ns[n++].index = x.c[ii[k].cand].t;
                k++;
            }
        }
        ns[n++] = steps[s];
    }
    res->n_offloaded = n_chosen;
    simulate(&x, ns, n, &dev, x.c, cand_of, res);
    mp_plan *p = NULL;
    st = mp_plan_from_schedule(g, ns, n, &po, t0, &p);
    ns = NULL; /* owned by the plan now */
    if (st)
        goto out;
    res->peak_bytes = p->fig.lower_bound_bytes + pers;
    res->seconds = mp_now_seconds() - t0;
    if (o.budget && res->peak_bytes > o.budget) {
        res->status = MP_SOLVE_INFEASIBLE;
        if (res->base_peak_bytes < res->peak_bytes)
            res->peak_bytes = res->base_peak_bytes;
        mp_plan_destroy(p);
        st = mp_err(ctx, MP_ERR_INFEASIBLE,
                    "offload cannot meet the budget of %llu bytes: the "
                    "smallest peak is %llu bytes (live arena + %llu "
                    "persistent)",
                    (unsigned long long)o.budget,
                    (unsigned long long)res->peak_bytes,
                    (unsigned long long)pers);
        goto out;
    }
    res->status = MP_SOLVE_FEASIBLE;
    snprintf(p->solver_name, sizeof p->solver_name, "offload:%s",
             res->solver);
    *out = p;
out:
    mp_dealloc(ctx, steps);
    mp_dealloc(ctx, ns);
    mp_dealloc(ctx, ii);
    mp_dealloc(ctx, cand_of);
    free_ctx(&x);
    return st;
}
