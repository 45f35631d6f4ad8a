/* Operator order: a topological order of the nodes that lowers
 * the lower bound (max live arena bytes over the steps).
 *
 * The objective is computed by a model of the schedule that
 * mp__schedule_from_order builds (COMPUTE in order, FREE after the last
 * reader) with the in-place rule of core/sched/inplace.c when opt->inplace:
 * at the step of node v, live = the storage roots resident before v (made
 * earlier, or graph inputs, with a reader at or after v, or kept to the
 * end) + v's outputs - output 0 when it takes over an input that dies at
 * v. Fusion is not modelled (it depends on adjacency); the plans built
 * from the orders are what the figures report.
 *
 * Methods: exact dynamic programming over the sets of computed nodes (a
 * min-max path over down-sets) up to opt->reorder_exact_max nodes; above
 * that, list scheduling with memory priorities (several rules, the best
 * kept) and a local search that moves the producers of tensors live at
 * the peak later and their readers earlier, within each node's window
 * between its predecessors and successors, keeping a move when the peak
 * (then the number of steps at the peak) drops. Deterministic.
 *
 * Pure: a graph in, an order out. The plans built from orders (and the
 * choice between the default order's plan and the solved one) are
 * planner/reorder.c's. */
#include "order_solver.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    mp_ctx *ctx;
    const mp_graph *g;
    uint32_t nn, nr;       /* nodes, arena storage roots with bytes */
    uint32_t *rid;         /* tensor -> root index or MP_NONE */
    uint32_t *rt;          /* root index -> tensor */
    uint64_t *sz;          /* aligned size per root */
    uint8_t *keep;         /* root is (or is viewed by) a graph output */
    uint8_t *input;        /* root is a graph input (resident at start) */
    uint32_t *nread;       /* read occurrences per root */
    uint32_t *prod;        /* producer node per root or MP_NONE */
    /* per node: reads (root indices, with repeats) and outputs */
    uint32_t *rd_beg, *rd;     /* CSR over nodes */
    uint32_t *out_beg, *out;   /* CSR over nodes: root indices */
    uint32_t *ip_beg, *ip;     /* in-place candidates of output 0 */
    uint32_t *out0;            /* root index of output 0 or MP_NONE */
    uint32_t *pred_beg, *pred, *succ_beg, *succ;
    int inplace;
    /* scratch */
    uint32_t *rem;
} model;

static void model_free(model *m)
{
    mp_ctx *c = m->ctx;
    void *arr[] = {m->rid, m->rt, m->sz, m->keep, m->input, m->nread, m->prod,
                   m->rd_beg, m->rd, m->out_beg, m->out, m->ip_beg, m->ip,
                   m->out0, m->pred_beg, m->pred, m->succ_beg, m->succ,
                   m->rem};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++)
        mp__dealloc(c, arr[i]);
}

/* The dependency edges of m (through any tensor, arena or not): pred and
 * succ in CSR over the nodes (pred_beg and succ_beg allocated, zeroed). */
static mp_status model_edges(model *m, const mp_graph *g)
{
    mp_ctx *ctx = m->ctx;
    uint32_t nn = m->nn;
    size_t ne = 0;
    for (uint32_t v = 0; v < nn; v++) {
        const mp__node *n = &g->nodes[v];
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE &&
                g->tensors[n->inputs[i]].producer != MP_NONE)
                ne++;
    }
    m->pred = mp__alloc(ctx, (ne + 1) * sizeof *m->pred);
    m->succ = mp__alloc(ctx, (ne + 1) * sizeof *m->succ);
    if (!m->pred || !m->succ)
        return MP_ERR_NOMEM;
    ne = 0;
    for (uint32_t v = 0; v < nn; v++) {
        const mp__node *n = &g->nodes[v];
        m->pred_beg[v] = (uint32_t)ne;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE &&
                g->tensors[n->inputs[i]].producer != MP_NONE) {
                m->pred[ne++] = g->tensors[n->inputs[i]].producer;
                m->succ_beg[g->tensors[n->inputs[i]].producer + 1]++;
            }
    }
    m->pred_beg[nn] = (uint32_t)ne;
    for (uint32_t v = 0; v < nn; v++)
        m->succ_beg[v + 1] += m->succ_beg[v];
    uint32_t *fillv = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *fillv);
    if (!fillv)
        return MP_ERR_NOMEM;
    for (uint32_t v = 0; v < nn; v++)
        fillv[v] = m->succ_beg[v];
    for (uint32_t v = 0; v < nn; v++)
        for (uint32_t q = m->pred_beg[v]; q < m->pred_beg[v + 1]; q++)
            m->succ[fillv[m->pred[q]]++] = v;
    mp__dealloc(ctx, fillv);
    return MP_OK;
}

static mp_status model_build(model *m, const mp_graph *g, uint64_t align,
                             int inplace)
{
    mp_ctx *ctx = g->ctx;
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->g = g;
    m->inplace = inplace;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    m->nn = nn;
    m->rid = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *m->rid);
    m->rt = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *m->rt);
    m->sz = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *m->sz);
    m->keep = mp__calloc(ctx, (size_t)nt + 1, 1);
    m->input = mp__calloc(ctx, (size_t)nt + 1, 1);
    m->nread = mp__calloc(ctx, (size_t)nt + 1, sizeof *m->nread);
    m->prod = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *m->prod);
    m->rem = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *m->rem);
    m->rd_beg = mp__calloc(ctx, (size_t)nn + 2, sizeof *m->rd_beg);
    m->out_beg = mp__calloc(ctx, (size_t)nn + 2, sizeof *m->out_beg);
    m->ip_beg = mp__calloc(ctx, (size_t)nn + 2, sizeof *m->ip_beg);
    m->out0 = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *m->out0);
    m->pred_beg = mp__calloc(ctx, (size_t)nn + 2, sizeof *m->pred_beg);
    m->succ_beg = mp__calloc(ctx, (size_t)nn + 2, sizeof *m->succ_beg);
    if (!m->rid || !m->rt || !m->sz || !m->keep || !m->input || !m->nread ||
        !m->prod || !m->rem || !m->rd_beg || !m->out_beg || !m->ip_beg ||
        !m->out0 || !m->pred_beg || !m->succ_beg)
        return MP_ERR_NOMEM;
    uint32_t nr = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        m->rid[t] = MP_NONE;
        if (!mp__tensor_in_arena(tt) || tt->bytes == 0)
            continue;
        if (!mp__align_up(tt->bytes, align, &m->sz[nr]))
            return mp__err(ctx, MP_ERR_OVERFLOW,
                          "tensor '%s': aligned size overflows", tt->name);
        m->rid[t] = nr;
        m->rt[nr] = t;
        m->prod[nr] = tt->producer;
        m->input[nr] = tt->producer == MP_NONE;
        nr++;
    }
    m->nr = nr;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        uint32_t r = m->rid[tt->root];
        if (r != MP_NONE && (tt->flags & MP__TF_OUTPUT))
            m->keep[r] = 1;
    }
    /* reads and outputs per node */
    size_t nrd = 0, nout = 0, nip = 0;
    for (uint32_t v = 0; v < nn; v++) {
        const mp__node *n = &g->nodes[v];
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE &&
                m->rid[g->tensors[n->inputs[i]].root] != MP_NONE)
                nrd++;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE && m->rid[n->outputs[o]] != MP_NONE)
                nout++;
        nip += n->n_in;
    }
    m->rd = mp__alloc(ctx, (nrd + 1) * sizeof *m->rd);
    m->out = mp__alloc(ctx, (nout + 1) * sizeof *m->out);
    m->ip = mp__alloc(ctx, (nip + 1) * sizeof *m->ip);
    if (!m->rd || !m->out || !m->ip)
        return MP_ERR_NOMEM;
    nrd = nout = nip = 0;
    for (uint32_t v = 0; v < nn; v++) {
        const mp__node *n = &g->nodes[v];
        m->rd_beg[v] = (uint32_t)nrd;
        m->out_beg[v] = (uint32_t)nout;
        m->ip_beg[v] = (uint32_t)nip;
        for (uint32_t i = 0; i < n->n_in; i++) {
            if (n->inputs[i] == MP_NONE)
                continue;
            uint32_t r = m->rid[g->tensors[n->inputs[i]].root];
            if (r == MP_NONE)
                continue;
            m->rd[nrd++] = r;
            m->nread[r]++;
        }
        m->out0[v] = MP_NONE;
        for (uint32_t o = 0; o < n->n_out; o++) {
            uint32_t t = n->outputs[o];
            if (t == MP_NONE || m->rid[t] == MP_NONE)
                continue;
            m->out[nout++] = m->rid[t];
            if (o == 0)
                m->out0[v] = m->rid[t];
        }
        /* in-place candidates, as core/sched/inplace.c picks them: roots of
         * the inputs output 0 may overwrite, in input order, once each */
        uint32_t y = m->out0[v];
        if (inplace && y != MP_NONE) {
            for (uint32_t i = 0; i < n->n_in; i++) {
                if (n->inputs[i] == MP_NONE ||
                    !mp__op_may_overwrite(n->def, i))
                    continue;
                uint32_t x = m->rid[g->tensors[n->inputs[i]].root];
                if (x == MP_NONE || x == y || m->input[x] || m->keep[x] ||
                    g->tensors[m->rt[x]].bytes != g->tensors[m->rt[y]].bytes)
                    continue;
                bool dup = false;
                for (uint32_t q = m->ip_beg[v]; q < nip; q++)
                    if (m->ip[q] == x)
                        dup = true;
                if (!dup)
                    m->ip[nip++] = x;
            }
        }
    }
    m->rd_beg[nn] = (uint32_t)nrd;
    m->out_beg[nn] = (uint32_t)nout;
    m->ip_beg[nn] = (uint32_t)nip;
    return model_edges(m, g);
}

/* Bytes resident before the first step: graph inputs with readers (or
 * kept). */
static uint64_t initial_live(const model *m)
{
    uint64_t live = 0;
    for (uint32_t r = 0; r < m->nr; r++)
        if (m->input[r] && (m->nread[r] || m->keep[r]))
            live += m->sz[r];
    return live;
}

/* Bytes output 0 of v saves in place when rem[] counts the reads still to
 * come (v's own reads included). */
static uint64_t inplace_saving(const model *m, uint32_t v, const uint32_t *rem)
{
    if (!m->inplace || m->out0[v] == MP_NONE)
        return 0;
    for (uint32_t q = m->ip_beg[v]; q < m->ip_beg[v + 1]; q++) {
        uint32_t x = m->ip[q], mine = 0;
        for (uint32_t k = m->rd_beg[v]; k < m->rd_beg[v + 1]; k++)
            mine += m->rd[k] == x;
        if (rem[x] == mine)
            return m->sz[m->out0[v]];
    }
    return 0;
}

static uint64_t out_bytes(const model *m, uint32_t v)
{
    uint64_t s = 0;
    for (uint32_t k = m->out_beg[v]; k < m->out_beg[v + 1]; k++)
        s += m->sz[m->out[k]];
    return s;
}

/* Applies v to the running state: returns the live bytes at v's step and
 * updates *live to the bytes resident after it. */
static uint64_t step_apply(const model *m, uint32_t v, uint32_t *rem,
                           uint64_t *live)
{
    uint64_t at = *live + out_bytes(m, v) - inplace_saving(m, v, rem);
    uint64_t l = *live + out_bytes(m, v);
    for (uint32_t k = m->rd_beg[v]; k < m->rd_beg[v + 1]; k++) {
        uint32_t r = m->rd[k];
        if (--rem[r] == 0 && !m->keep[r])
            l -= m->sz[r];
    }
    for (uint32_t k = m->out_beg[v]; k < m->out_beg[v + 1]; k++) {
        uint32_t y = m->out[k];
        if (m->nread[y] == 0 && !m->keep[y])
            l -= m->sz[y];
    }
    *live = l;
    return at;
}

/* Peak of an order, its first step and how many steps reach it. */
static uint64_t simulate(model *m, const uint32_t *order, uint32_t *peak_at,
                         uint32_t *n_at_peak)
{
    for (uint32_t r = 0; r < m->nr; r++)
        m->rem[r] = m->nread[r];
    uint64_t live = initial_live(m), peak = 0;
    uint32_t at = 0, cnt = 0;
    for (uint32_t k = 0; k < m->nn; k++) {
        uint64_t s = step_apply(m, order[k], m->rem, &live);
        if (s > peak) {
            peak = s;
            at = k;
            cnt = 1;
        } else if (s == peak) {
            cnt++;
        }
    }
    if (peak_at)
        *peak_at = at;
    if (n_at_peak)
        *n_at_peak = cnt;
    return peak;
}

/* ---- exact: min-max paths over down-sets ------------------------------ */
static mp_status exact_order(model *m, uint32_t *order, uint64_t *best_out)
{
    mp_ctx *ctx = m->ctx;
    uint32_t n = m->nn;
    size_t ns = (size_t)1 << n;
    uint64_t *best = mp__alloc(ctx, ns * sizeof *best);
    uint8_t *par = mp__alloc(ctx, ns);
    uint32_t *predm = mp__calloc(ctx, n + 1, sizeof *predm);
    uint32_t *readm = mp__calloc(ctx, m->nr + 1, sizeof *readm);
    uint32_t *rem = mp__alloc(ctx, ((size_t)m->nr + 1) * sizeof *rem);
    if (!best || !par || !predm || !readm || !rem) {
        mp__dealloc(ctx, best);
        mp__dealloc(ctx, par);
        mp__dealloc(ctx, predm);
        mp__dealloc(ctx, readm);
        mp__dealloc(ctx, rem);
        return MP_ERR_NOMEM;
    }
    for (uint32_t v = 0; v < n; v++) {
        for (uint32_t q = m->pred_beg[v]; q < m->pred_beg[v + 1]; q++)
            predm[v] |= 1u << m->pred[q];
        for (uint32_t k = m->rd_beg[v]; k < m->rd_beg[v + 1]; k++)
            readm[m->rd[k]] |= 1u << v;
    }
    for (size_t s = 0; s < ns; s++)
        best[s] = UINT64_MAX;
    best[0] = 0;
    for (size_t S = 0; S < ns; S++) {
        if (best[S] == UINT64_MAX)
            continue;
        uint32_t set = (uint32_t)S;
        /* resident bytes after S and reads still to come */
        uint64_t live = 0;
        for (uint32_t r = 0; r < m->nr; r++) {
            bool made = m->input[r] ||
                        (m->prod[r] != MP_NONE && (set >> m->prod[r]) & 1u);
            rem[r] = 0;
            for (uint32_t w = readm[r] & ~set; w; w &= w - 1) {
                uint32_t v = (uint32_t)__builtin_ctz(w);
                for (uint32_t k = m->rd_beg[v]; k < m->rd_beg[v + 1]; k++)
                    rem[r] += m->rd[k] == r;
            }
            if (made && (m->keep[r] || rem[r]))
                live += m->sz[r];
        }
        for (uint32_t v = 0; v < n; v++) {
            if ((set >> v) & 1u || (predm[v] & ~set))
                continue;
            uint64_t at = live + out_bytes(m, v) - inplace_saving(m, v, rem);
            uint64_t val = at > best[S] ? at : best[S];
            size_t T = S | ((size_t)1 << v);
            if (val < best[T]) {
                best[T] = val;
                par[T] = (uint8_t)v;
            }
        }
    }
    size_t S = ns - 1;
    *best_out = best[S];
    for (uint32_t k = n; k-- > 0;) {
        uint32_t v = par[S];
        order[k] = v;
        S &= ~((size_t)1 << v);
    }
    mp__dealloc(ctx, best);
    mp__dealloc(ctx, par);
    mp__dealloc(ctx, predm);
    mp__dealloc(ctx, readm);
    mp__dealloc(ctx, rem);
    return MP_OK;
}

/* ---- list scheduling ----------------------------------------------------- */
/* rule 0: least net allocation (outputs - in-place - freed), then least
 * live at the step; rule 1: least live at the step, then net; ties by
 * the graph's order (position in topo). */
static mp_status list_schedule(model *m, const uint32_t *topo_pos, int rule,
                               uint32_t *order)
{
    mp_ctx *ctx = m->ctx;
    uint32_t n = m->nn;
    uint32_t *indeg = mp__calloc(ctx, (size_t)n + 1, sizeof *indeg);
    uint32_t *ready = mp__alloc(ctx, ((size_t)n + 1) * sizeof *ready);
    if (!indeg || !ready) {
        mp__dealloc(ctx, indeg);
        mp__dealloc(ctx, ready);
        return MP_ERR_NOMEM;
    }
    for (uint32_t v = 0; v < n; v++)
        indeg[v] = m->pred_beg[v + 1] - m->pred_beg[v];
    uint32_t nready = 0;
    for (uint32_t v = 0; v < n; v++)
        if (!indeg[v])
            ready[nready++] = v;
    for (uint32_t r = 0; r < m->nr; r++)
        m->rem[r] = m->nread[r];
    uint64_t live = initial_live(m);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t bi = 0;
        int64_t bnet = 0;
        uint64_t bat = 0;
        for (uint32_t i = 0; i < nready; i++) {
            uint32_t v = ready[i];
            uint64_t ob = out_bytes(m, v);
            uint64_t at = live + ob - inplace_saving(m, v, m->rem);
            uint64_t freed = 0;
            for (uint32_t q = m->rd_beg[v]; q < m->rd_beg[v + 1]; q++) {
                uint32_t r = m->rd[q], mine = 0;
                if (m->keep[r])
                    continue;
                for (uint32_t q2 = m->rd_beg[v]; q2 < q; q2++)
                    if (m->rd[q2] == r)
                        mine = UINT32_MAX; /* counted already */
                if (mine == UINT32_MAX)
                    continue;
                for (uint32_t q2 = q; q2 < m->rd_beg[v + 1]; q2++)
                    mine += m->rd[q2] == r;
                if (m->rem[r] == mine)
                    freed += m->sz[r];
            }
            int64_t net = (int64_t)ob - (int64_t)freed;
            bool better;
            if (i == 0)
                better = true;
            else if (rule == 0)
                better = net < bnet || (net == bnet && at < bat) ||
                         (net == bnet && at == bat &&
                          topo_pos[v] < topo_pos[ready[bi]]);
            else
                better = at < bat || (at == bat && net < bnet) ||
                         (at == bat && net == bnet &&
                          topo_pos[v] < topo_pos[ready[bi]]);
            if (better) {
                bi = i;
                bnet = net;
                bat = at;
            }
        }
        uint32_t v = ready[bi];
        ready[bi] = ready[--nready];
        order[k] = v;
        step_apply(m, v, m->rem, &live);
        for (uint32_t q = m->succ_beg[v]; q < m->succ_beg[v + 1]; q++)
            if (--indeg[m->succ[q]] == 0)
                ready[nready++] = m->succ[q];
    }
    mp__dealloc(ctx, indeg);
    mp__dealloc(ctx, ready);
    return MP_OK;
}

/* ---- local search -------------------------------------------------------- */
static void move_node(uint32_t *order, uint32_t *pos, uint32_t from,
                      uint32_t to)
{
    uint32_t v = order[from];
    if (from < to)
        for (uint32_t k = from; k < to; k++) {
            order[k] = order[k + 1];
            pos[order[k]] = k;
        }
    else
        for (uint32_t k = from; k > to; k--) {
            order[k] = order[k - 1];
            pos[order[k]] = k;
        }
    order[to] = v;
    pos[v] = to;
}

static void window(const model *m, const uint32_t *pos, uint32_t v,
                   uint32_t *lo, uint32_t *hi)
{
    uint32_t a = 0, b = m->nn - 1;
    for (uint32_t q = m->pred_beg[v]; q < m->pred_beg[v + 1]; q++)
        if (pos[m->pred[q]] + 1 > a)
            a = pos[m->pred[q]] + 1;
    for (uint32_t q = m->succ_beg[v]; q < m->succ_beg[v + 1]; q++)
        if (pos[m->succ[q]] < b + 1)
            b = pos[m->succ[q]] - 1;
    *lo = a;
    *hi = b;
}

/* stop: a wall-clock time (mp__now_seconds) after which the search ends
 * with the best order so far; 0: none (the evaluation budget alone) */
static bool past(double stop) { return stop > 0 && mp__now_seconds() > stop; }

static mp_status local_search(model *m, uint32_t *order, uint64_t budget,
                              double stop, uint64_t *peak_io)
{
    mp_ctx *ctx = m->ctx;
    uint32_t n = m->nn;
    uint32_t *pos = mp__alloc(ctx, ((size_t)n + 1) * sizeof *pos);
    uint32_t *cand = mp__alloc(ctx, ((size_t)n * 2 + 2) * sizeof *cand);
    uint8_t *mark = mp__calloc(ctx, (size_t)n + 1, 1);
    uint32_t *rem2 = mp__alloc(ctx, ((size_t)m->nr + 1) * sizeof *rem2);
    if (!pos || !cand || !mark || !rem2) {
        mp__dealloc(ctx, pos);
        mp__dealloc(ctx, cand);
        mp__dealloc(ctx, mark);
        mp__dealloc(ctx, rem2);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < n; k++)
        pos[order[k]] = k;
    uint32_t pk, cnt;
    uint64_t peak = simulate(m, order, &pk, &cnt);
    uint64_t evals = 0;
    bool improved = true;
    while (improved && evals < budget && !past(stop)) {
        improved = false;
        /* roots resident across the peak step pk: made before it, read
         * after it; candidates: their producers (move later) and their
         * next readers (move earlier), and the peak node itself */
        for (uint32_t r = 0; r < m->nr; r++)
            rem2[r] = m->nread[r];
        for (uint32_t k = 0; k < pk; k++)
            for (uint32_t q = m->rd_beg[order[k]];
                 q < m->rd_beg[order[k] + 1]; q++)
                rem2[m->rd[q]]--;
        uint32_t nc = 0;
        memset(mark, 0, n);
        cand[nc++] = order[pk];
        mark[order[pk]] = 1;
        bool late = false;
        for (uint32_t r = 0; r < m->nr && nc + 2 <= 2 * (size_t)n; r++) {
            if ((r & 255) == 255 && (late = past(stop)))
                break;
            if (!rem2[r] || m->keep[r])
                continue;
            uint32_t p = m->prod[r];
            if (p != MP_NONE && pos[p] >= pk)
                continue; /* not yet made at pk */
            if (p != MP_NONE && !mark[p]) {
                mark[p] = 1;
                cand[nc++] = p;
            }
            /* the next reader after pk */
            uint32_t nxt = MP_NONE;
            for (uint32_t k = pk + 1; k < n && nxt == MP_NONE; k++)
                for (uint32_t q = m->rd_beg[order[k]];
                     q < m->rd_beg[order[k] + 1]; q++)
                    if (m->rd[q] == r) {
                        nxt = order[k];
                        break;
                    }
            if (nxt != MP_NONE && !mark[nxt]) {
                mark[nxt] = 1;
                cand[nc++] = nxt;
            }
        }
        for (uint32_t c = 0; c < nc && evals < budget && !improved && !late;
             c++) {
            if ((c & 15) == 15 && (late = past(stop)))
                break;
            uint32_t v = cand[c];
            uint32_t lo, hi;
            window(m, pos, v, &lo, &hi);
            uint32_t targets[2] = {pos[v] < pk ? hi : lo,
                                   pos[v] < pk ? lo : hi};
            for (int t = 0; t < 2 && !improved; t++) {
                uint32_t from = pos[v], to = targets[t];
                if (to == from)
                    continue;
                move_node(order, pos, from, to);
                uint32_t pk2, cnt2;
                uint64_t p2 = simulate(m, order, &pk2, &cnt2);
                evals++;
                if (p2 < peak || (p2 == peak && cnt2 < cnt)) {
                    peak = p2;
                    pk = pk2;
                    cnt = cnt2;
                    improved = true;
                } else {
                    move_node(order, pos, to, from);
                }
            }
        }
    }
    *peak_io = peak;
    mp__dealloc(ctx, pos);
    mp__dealloc(ctx, cand);
    mp__dealloc(ctx, mark);
    mp__dealloc(ctx, rem2);
    return MP_OK;
}

mp_status mp__order_solve(const mp_graph *g, const mp_plan_options *opt,
                          uint32_t *order, uint64_t *lb_before,
                          uint64_t *lb_after)
{
    mp_ctx *ctx = g->ctx;
    model m;
    mp_status st = model_build(&m, g, opt->alignment, opt->inplace);
    uint32_t n = m.nn;
    uint32_t *cur = mp__alloc(ctx, ((size_t)n + 1) * sizeof *cur);
    uint32_t *topo_pos = mp__alloc(ctx, ((size_t)n + 1) * sizeof *topo_pos);
    if (!st && (!cur || !topo_pos))
        st = MP_ERR_NOMEM;
    if (st)
        goto done;
    memcpy(order, g->topo, (size_t)n * sizeof *order);
    for (uint32_t k = 0; k < n; k++)
        topo_pos[g->topo[k]] = k;
    uint64_t before = simulate(&m, order, NULL, NULL), best = before;
    uint32_t exact_max = opt->reorder_exact_max > 22 ? 22
                                                     : opt->reorder_exact_max;
    if (n > 0 && n <= exact_max) {
        uint64_t v;
        if ((st = exact_order(&m, cur, &v)))
            goto done;
        if (v < best) {
            best = v;
            memcpy(order, cur, (size_t)n * sizeof *order);
        }
    } else if (n > 0) {
        for (int rule = 0; rule < 2; rule++) {
            if ((st = list_schedule(&m, topo_pos, rule, cur)))
                goto done;
            uint64_t v = simulate(&m, cur, NULL, NULL);
            if (v < best) {
                best = v;
                memcpy(order, cur, (size_t)n * sizeof *order);
            }
        }
        uint64_t v = best;
        memcpy(cur, order, (size_t)n * sizeof *cur);
        /* opt->time_limit, clamped to the caller's deadline */
        double tl = mp__time_slice(ctx, opt->time_limit);
        double stop = tl > 0 ? mp__now_seconds() + tl : 0;
        if ((st = local_search(&m, cur, opt->reorder_budget, stop, &v)))
            goto done;
        if (v < best) {
            best = v;
            memcpy(order, cur, (size_t)n * sizeof *order);
        }
    }
    if (lb_before)
        *lb_before = before;
    if (lb_after)
        *lb_after = best;
done:
    mp__dealloc(ctx, cur);
    mp__dealloc(ctx, topo_pos);
    model_free(&m);
    return st;
}
