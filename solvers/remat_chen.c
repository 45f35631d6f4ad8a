/* Checkmate's fixed-checkpoint baselines as its released code builds them
 * (issue 5; docs/training.md, "chen-linear"): the checkpoint set gives a
 * residency matrix S (S[t][i] = 1: unit i is resident when stage t
 * starts), S gives the cheapest recompute matrix R that S allows, and the
 * two give a schedule whose frees follow Checkmate's scheduler. Written
 * from a reading of parasj/checkmate (strategy_chen.py, utils/
 * solver_common.py gen_s_matrix_fixed_checkpoints and solve_r_opt,
 * utils/scheduler.py schedule_from_rs); no code taken from it.
 *
 * Stages are units (nodes in the graph's topological order; Checkmate's
 * vertex ids are topological too), T of them, Tf forward. For a sorted
 * checkpoint set C, S[t][i] = 1 when:
 *   - edges: u < t < v for an edge u -> v (a value stays to its last
 *     reader; the last reader's own stage is not included);
 *   - stripe: t > c for every checkpoint c (kept to the end);
 *   - segments [s, e) are [0, c1), [c1, c2), ..., [cm, Tf + 1); for i in
 *     [s, e): ladder: T - e <= t <= T - 1 - s and t > i (the segment's
 *     values stay through its mirrored backward stages); forward block:
 *     i < t <= e;
 *   - backward edges u -> v (both backward): u < t <= v.
 * Every rule but the ladder starts at t = i + 1, so a unit's column of S
 * is at most two intervals: [i + 1, a] and the ladder [lo, hi]. R[t][t] =
 * 1; R[t][i] = 1 when S[t + 1][i] = 1 and S[t][i] = 0 (the ladder starts
 * after a gap: recomputed at its start); and, down from t, a dependency u
 * of a unit computed in stage t with S[t][u] = 0 is computed in stage t.
 *
 * The scheduler: at the start of stage t, every resident value that
 * S[t + 1] does not hold and no computation of stage t reads is freed;
 * stage t computes its R row in ascending order, and after each
 * computation its inputs and its output are freed unless S[t + 1] holds
 * them or a later computation of the stage reads them (S[T] is empty).
 * Peaks count a computation's output with its inputs (memplan's count;
 * Checkmate's scheduler since January 2020 samples the live bytes just
 * before each allocation instead, docs/results.md). Graph outputs are
 * never freed; graph inputs are freed after the last stage that reads
 * them. */
#include "remat_chen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ck_state {
    const rm_prob *p;
    uint32_t *a;          /* S column: [i + 1, a[i]] (empty when a <= i) */
    uint32_t *lo, *hi;    /* and the ladder [lo, hi] (empty when lo > hi) */
} ck_state;

static bool s_has(const ck_state *c, uint32_t t, uint32_t i)
{
    if (t >= c->p->T)
        return false; /* S[T] is empty: nothing is kept past the step */
    return (t > i && t <= c->a[i]) || (t >= c->lo[i] && t <= c->hi[i]);
}

static void s_columns(ck_state *c, const uint32_t *ckpt, uint32_t nc)
{
    const rm_prob *p = c->p;
    uint32_t T = p->T, Tf = 0;
    for (uint32_t u = 0; u < T; u++)
        Tf += p->fwd[u];
    for (uint32_t i = 0; i < T; i++) {
        uint32_t a = i;
        uint32_t b = p->use_begin[i], e = p->use_begin[i + 1];
        if (e > b && p->uses[e - 1] > i + 1)
            a = p->uses[e - 1] - 1; /* edges */
        if (!p->fwd[i])
            for (uint32_t j = b; j < e; j++)
                if (!p->fwd[p->uses[j]] && p->uses[j] > a)
                    a = p->uses[j]; /* backward edges: u < t <= v */
        c->a[i] = a;
        c->lo[i] = 1;
        c->hi[i] = 0;
    }
    for (uint32_t j = 0; j < nc; j++)
        c->a[ckpt[j]] = T - 1; /* stripe */
    /* segments: starts [0, c1, ..., cm], ends [c1, ..., cm, Tf + 1] */
    for (uint32_t j = 0; j <= nc; j++) {
        uint64_t s = j ? ckpt[j - 1] : 0;
        uint64_t e = j < nc ? ckpt[j] : (uint64_t)Tf + 1;
        for (uint64_t i = s; i < e && i < T; i++) {
            /* forward block: i < t <= min(e, T - 1) */
            uint64_t fb = e < T - 1 ? e : T - 1;
            if (fb > c->a[i])
                c->a[i] = (uint32_t)fb;
            /* ladder: t = T - 1 - x for x in [s, e), t > i, t >= 0 */
            if (T < 1 + s)
                continue;
            uint64_t hi = T - 1 - s;
            uint64_t lo = e <= T ? T - e : 0;
            if (lo < i + 1)
                lo = i + 1;
            if (lo > hi)
                continue;
            if (lo <= (uint64_t)c->a[i] + 1) {
                /* overlaps or touches [i + 1, a]: one interval */
                if (hi > c->a[i])
                    c->a[i] = (uint32_t)hi;
            } else {
                c->lo[i] = (uint32_t)lo;
                c->hi[i] = (uint32_t)hi;
            }
        }
    }
}

/* Later computation of stage t (after i) reading u: rowmark[v] == t + 1. */
static bool read_later(const rm_prob *p, const uint32_t *rowmark, uint32_t u,
                       uint32_t t, uint32_t i)
{
    for (uint32_t j = p->use_begin[u + 1]; j-- > p->use_begin[u];) {
        uint32_t v = p->uses[j];
        if (v <= i)
            break;
        if (rowmark[v] == t + 1)
            return true;
    }
    return false;
}

static int cmp_unit(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

typedef struct ck_emit {
    mp_ctx *ctx;
    mp_step *steps;
    size_t n, cap;
    mp_status st;
} ck_emit;

static void ck_step(ck_emit *e, mp_step_kind k, uint32_t idx)
{
    if (e->st)
        return;
    if ((e->st = mp_grow(e->ctx, (void **)&e->steps, sizeof *e->steps,
                         e->n + 1, &e->cap)))
        return;
    e->steps[e->n].kind = k;
    e->steps[e->n++].index = idx;
}

static void ck_free_unit(const rm_prob *p, ck_emit *e, uint8_t *res,
                         uint64_t *cur, uint32_t u)
{
    const mp_node *nd = &p->g->nodes[p->node[u]];
    for (uint32_t o = 0; o < nd->n_out; o++)
        if (mp_tensor_in_arena(&p->g->tensors[nd->outputs[o]]))
            ck_step(e, MP_STEP_FREE, nd->outputs[o]);
    res[u] = 0;
    *cur -= p->mem[u];
}

mp_status rm_checkmate_fixed(const rm_prob *p, const uint8_t *is_ckpt,
                             rm_out *out)
{
    mp_ctx *ctx = p->ctx;
    uint32_t T = p->T, nt = (uint32_t)p->g->n_tensors;
    size_t T1 = (size_t)T + 1;
    memset(out, 0, sizeof *out);
    ck_state c;
    c.p = p;
    c.a = mp_alloc(ctx, T1 * sizeof *c.a);
    c.lo = mp_alloc(ctx, T1 * sizeof *c.lo);
    c.hi = mp_alloc(ctx, T1 * sizeof *c.hi);
    uint32_t *ckpt = mp_alloc(ctx, T1 * sizeof *ckpt);
    uint32_t *gap_head = mp_alloc(ctx, T1 * sizeof *gap_head);
    uint32_t *gap_next = mp_alloc(ctx, T1 * sizeof *gap_next);
    uint32_t *rowmark = mp_calloc(ctx, T1, sizeof *rowmark);
    uint32_t *row = mp_alloc(ctx, T1 * sizeof *row);
    uint32_t *in_of = mp_alloc(ctx, ((size_t)nt + 1) * sizeof *in_of);
    uint32_t *in_end = mp_calloc(ctx, (size_t)p->n_in + 1, sizeof *in_end);
    uint8_t *res = mp_calloc(ctx, T1, 1);
    uint32_t *rows = NULL, *row_begin = mp_calloc(ctx, T1 + 1,
                                                  sizeof *row_begin);
    size_t n_rows = 0, cap_rows = 0;
    ck_emit em = {ctx, NULL, 0, 0, MP_OK};
    mp_status st = MP_OK;
    if (!c.a || !c.lo || !c.hi || !ckpt || !gap_head || !gap_next ||
        !rowmark || !row || !in_of || !in_end || !res || !row_begin) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    uint32_t nc = 0;
    for (uint32_t u = 0; u < T; u++)
        if (is_ckpt[u])
            ckpt[nc++] = u;
    s_columns(&c, ckpt, nc);
    for (uint32_t t = 0; t < T1; t++)
        gap_head[t] = MP_NONE;
    for (uint32_t i = 0; i < T; i++)
        if (c.lo[i] <= c.hi[i]) { /* S[lo][i] = 1, S[lo - 1][i] = 0 */
            uint32_t t = c.lo[i] - 1;
            gap_next[i] = gap_head[t];
            gap_head[t] = i;
        }
    /* the R rows, stage by stage (R[t] is a closure over dependencies
     * that S[t] does not hold) */
    for (uint32_t t = 0; t < T; t++) {
        uint32_t n = 0;
        rowmark[t] = t + 1;
        row[n++] = t;
        for (uint32_t i = gap_head[t]; i != MP_NONE; i = gap_next[i])
            if (rowmark[i] != t + 1) {
                rowmark[i] = t + 1;
                row[n++] = i;
            }
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = row[k];
            for (uint32_t j = p->dep_begin[v]; j < p->dep_begin[v + 1]; j++) {
                uint32_t u = p->deps[j];
                if (rowmark[u] != t + 1 && !s_has(&c, t, u)) {
                    rowmark[u] = t + 1;
                    row[n++] = u;
                }
            }
        }
        qsort(row, n, sizeof *row, cmp_unit);
        if ((st = mp_grow(ctx, (void **)&rows, sizeof *rows, n_rows + n,
                          &cap_rows)))
            goto done;
        memcpy(rows + n_rows, row, n * sizeof *row);
        n_rows += n;
        row_begin[t + 1] = (uint32_t)n_rows;
    }
    /* graph inputs: freed after the last stage computing a reader */
    for (uint32_t x = 0; x < nt; x++)
        in_of[x] = MP_NONE;
    for (uint32_t k = 0; k < p->n_in; k++)
        in_of[p->in_tensor[k]] = k;
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t r = row_begin[t]; r < row_begin[t + 1]; r++) {
            const mp_node *nd = &p->g->nodes[p->node[rows[r]]];
            for (uint32_t q = 0; q < nd->n_in; q++) {
                uint32_t x = nd->inputs[q];
                if (x == MP_NONE)
                    continue;
                uint32_t k = in_of[p->g->tensors[x].root];
                if (k != MP_NONE && t > in_end[k])
                    in_end[k] = t;
            }
        }
    /* the schedule */
    uint64_t cur = 0, peak = 0;
    for (uint32_t k = 0; k < p->n_in; k++)
        cur += p->in_mem[k];
    peak = cur;
    memset(rowmark, 0, T1 * sizeof *rowmark);
    for (uint32_t t = 0; t < T && !em.st; t++) {
        uint32_t rb = row_begin[t], re = row_begin[t + 1];
        for (uint32_t r = rb; r < re; r++)
            rowmark[rows[r]] = t + 1;
        /* stage start: what S[t + 1] does not hold and stage t does not
         * read */
        for (uint32_t x = 0; x < T; x++)
            if (res[x] && !p->out[x] && !s_has(&c, t + 1, x) &&
                !read_later(p, rowmark, x, t, x))
                ck_free_unit(p, &em, res, &cur, x);
        for (uint32_t r = rb; r < re; r++) {
            uint32_t i = rows[r];
            for (uint32_t j = p->dep_begin[i]; j < p->dep_begin[i + 1]; j++)
                if (!res[p->deps[j]]) {
                    st = mp_err(ctx, MP_ERR_INTERNAL,
                                "chen-linear: stage %u computes node '%s' "
                                "without its input from node '%s'",
                                (unsigned)t, p->g->nodes[p->node[i]].name,
                                p->g->nodes[p->node[p->deps[j]]].name);
                    goto done;
                }
            if (res[i]) {
                st = mp_err(ctx, MP_ERR_INTERNAL,
                            "chen-linear: stage %u computes node '%s' while "
                            "its output is resident",
                            (unsigned)t, p->g->nodes[p->node[i]].name);
                goto done;
            }
            bool re_ = i != t;
            ck_step(&em, re_ ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE,
                    p->node[i]);
            res[i] = 1;
            cur += p->mem[i];
            if (cur > peak)
                peak = cur;
            if (re_) {
                out->extra_cost += p->cost[i];
                if (p->flops[i] > 0)
                    out->extra_flops += p->flops[i];
                out->n_recompute++;
            }
            for (uint32_t j = p->dep_begin[i]; j <= p->dep_begin[i + 1]; j++) {
                uint32_t u = j < p->dep_begin[i + 1] ? p->deps[j] : i;
                if (res[u] && !p->out[u] && !s_has(&c, t + 1, u) &&
                    !read_later(p, rowmark, u, t, i))
                    ck_free_unit(p, &em, res, &cur, u);
            }
        }
        for (uint32_t k = 0; k < p->n_in; k++)
            if (!p->in_out[k] && in_end[k] == t) {
                ck_step(&em, MP_STEP_FREE, p->in_tensor[k]);
                cur -= p->in_mem[k];
            }
    }
    if ((st = em.st))
        goto done;
    out->peak = peak;
    out->steps = em.steps;
    out->n_steps = (uint32_t)em.n;
    em.steps = NULL;
done:
    mp_dealloc(ctx, c.a);
    mp_dealloc(ctx, c.lo);
    mp_dealloc(ctx, c.hi);
    mp_dealloc(ctx, ckpt);
    mp_dealloc(ctx, gap_head);
    mp_dealloc(ctx, gap_next);
    mp_dealloc(ctx, rowmark);
    mp_dealloc(ctx, row);
    mp_dealloc(ctx, in_of);
    mp_dealloc(ctx, in_end);
    mp_dealloc(ctx, res);
    mp_dealloc(ctx, rows);
    mp_dealloc(ctx, row_begin);
    mp_dealloc(ctx, em.steps);
    if (st)
        memset(out, 0, sizeof *out);
    return st;
}

mp_status rm_chen_linear(const rm_prob *p, rm_offer_fn offer, void *user)
{
    mp_ctx *ctx = p->ctx;
    uint8_t *ck = mp_calloc(ctx, (size_t)p->T + 1, 1);
    if (!ck)
        return MP_ERR_NOMEM;
    /* candidates: every unit, forward and backward; every k-th one
     * (k = floor(sqrt(T))) is a checkpoint */
    uint32_t k = (uint32_t)floor(sqrt((double)p->T));
    if (k < 1)
        k = 1;
    while ((uint64_t)(k + 1) * (k + 1) <= p->T)
        k++; /* floor(sqrt) exact for large T */
    while (k > 1 && (uint64_t)k * k > p->T)
        k--;
    for (uint32_t u = 0; u < p->T; u++)
        ck[u] = (u + 1) % k == 0;
    rm_out o;
    mp_status st = rm_checkmate_fixed(p, ck, &o);
    mp_dealloc(ctx, ck);
    if (st)
        return st;
    return offer(user, "chen-linear", &o);
}
