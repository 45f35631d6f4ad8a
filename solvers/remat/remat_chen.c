/* Checkmate's fixed-checkpoint baselines (issue 5; docs/training.md,
 * "Checkmate's baselines"): a checkpoint set gives a residency matrix S
 * (S[t][i] = 1: unit i is resident when stage t starts), S gives the
 * cheapest recompute matrix R that S allows, and the two give a schedule
 * whose frees follow Checkmate's scheduler. Written from a reading of
 * parasj/checkmate (strategy_chen.py, strategy_checkpoint_all.py,
 * gen_s_matrix_fixed_checkpoints, solve_r_opt, schedule_from_rs, and the
 * experiment_max_batchsize_baseline.py of its max-batch figure); no code
 * taken from it.
 *
 * Stages are units (nodes in the graph's topological order; Checkmate's
 * vertex ids are topological, forward nodes first, then the loss and the
 * backward nodes mirrored: the backward node of forward i is T - 1 - i).
 * T units, Tf forward. For a sorted checkpoint set C, S[t][i] = 1 when:
 *   - inputs (RM_CM_RELEASED, Checkmate since January 2020): u < t < v
 *     for an edge u -> v; (RM_CM_2019, the code of the published figure):
 *     t = v only, so a value is resident at its readers' stages and
 *     recomputed in between unless another rule holds it;
 *   - backward edges u -> v (both backward): u < t <= v;
 *   - stripe: t > c for every checkpoint c (kept to the end);
 *   - segments [s, e) are [0, c1), [c1, c2), ..., [cm, Tf + 1); for i in
 *     [s, e): ladder: T - e <= t <= T - 1 - s and t > i (a segment's
 *     values stay through its mirrored backward stages); forward block:
 *     i < t <= e;
 *   - backward block (RM_CM_2019 only; "removed in public release"): for
 *     t in [s, e] and forward i in (t, e): S[T-1-t][T-1-i] = 1 (a
 *     segment's gradients stay through their segment's backward stages).
 * R[t][t] = 1; R[t][i] = 1 when S[t + 1][i] = 1 and S[t][i] = 0; and, down
 * from t, every dependency u of a unit computed in stage t with S[t][u] =
 * 0 is computed in stage t too.
 *
 * The scheduler: at the start of stage t, every resident value that
 * S[t + 1] does not hold and no computation of stage t reads is freed;
 * stage t computes its R row in ascending order, and after each
 * computation its inputs and its output are freed unless S[t + 1] holds
 * them or a later computation of the stage reads them (S[T] is empty).
 * The peak counts a computation's output with its inputs (memplan's count,
 * and Checkmate's scheduler until January 2020; since then it samples the
 * live bytes just before each allocation). Graph outputs are held in S
 * from their producer to the end, so they are never freed nor computed
 * again; graph inputs are freed after the last stage that reads them. S is a
 * dense T x T bit matrix: graphs up to RM_CM_MAX_UNITS units. */
#include "sched.h"
#include "remat_chen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RM_CM_MAX_UNITS 32768u

typedef struct cm_s {
    uint32_t T, W;     /* rows, 64-bit words per row */
    uint64_t *bits;
} cm_s;

static inline bool s_get(const cm_s *s, uint32_t t, uint32_t i)
{
    if (t >= s->T)
        return false; /* S[T] is empty: nothing is kept past the step */
    return (s->bits[(size_t)t * s->W + i / 64] >> (i % 64)) & 1u;
}

/* S[t][i] = 1 for t in [lo, hi] (clamped to the matrix) */
static void s_col(cm_s *s, uint64_t lo, uint64_t hi, uint32_t i)
{
    if (hi >= s->T)
        hi = s->T ? s->T - 1 : 0;
    for (uint64_t t = lo; t <= hi && t < s->T; t++)
        s->bits[t * s->W + i / 64] |= (uint64_t)1 << (i % 64);
}

static void s_build(const rm_prob *p, const uint32_t *ck, uint32_t nc,
                    int rules, cm_s *s)
{
    uint32_t T = p->T, Tf = 0;
    for (uint32_t u = 0; u < T; u++)
        Tf += p->fwd[u];
    for (uint32_t u = 0; u < T; u++) {
        uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
        for (uint32_t j = b; j < e; j++) {
            uint32_t v = p->uses[j];
            if (rules == RM_CM_2019)
                s_col(s, v, v, u);
            else if (v > u + 1)
                s_col(s, (uint64_t)u + 1, v - 1, u);
            if (!p->fwd[u] && !p->fwd[v])
                s_col(s, (uint64_t)u + 1, v, u); /* backward edges */
        }
    }
    for (uint32_t j = 0; j < nc; j++)
        s_col(s, (uint64_t)ck[j] + 1, T - 1, ck[j]); /* stripe */
    for (uint32_t u = 0; u < T; u++)
        if (p->out[u]) /* graph outputs stay (never freed in memplan) */
            s_col(s, (uint64_t)u + 1, T - 1, u);
    /* segments: starts [0, c1, ..., cm], ends [c1, ..., cm, Tf + 1] */
    for (uint32_t j = 0; j <= nc; j++) {
        uint64_t st = j ? ck[j - 1] : 0;
        uint64_t en = j < nc ? ck[j] : (uint64_t)Tf + 1;
        for (uint64_t i = st; i < en && i < T; i++) {
            /* ladder: t = T - 1 - x for x in [st, en), t > i */
            if ((uint64_t)T >= st + 1) {
                uint64_t hi = T - 1 - st;
                uint64_t lo = en <= T ? T - en : 0;
                if (lo < i + 1)
                    lo = i + 1;
                if (lo <= hi)
                    s_col(s, lo, hi, (uint32_t)i);
            }
            s_col(s, i + 1, en, (uint32_t)i); /* forward block */
        }
        if (rules != RM_CM_2019)
            continue;
        /* backward block: t in [st, en], forward i in (t, en) */
        for (uint64_t t = st; t <= en && t < T; t++)
            for (uint64_t i = t + 1; i < en && i < T; i++) {
                uint64_t bt = T - 1 - t, bi = T - 1 - i;
                if (p->fwd[i] && !p->fwd[bi])
                    s_col(s, bt, bt, (uint32_t)bi);
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

typedef struct cm_emit {
    mp_ctx *ctx;
    mp_step *steps;
    size_t n, cap;
    mp_status st;
} cm_emit;

static void cm_step(cm_emit *e, mp_step_kind k, uint32_t idx)
{
    if (e->st)
        return;
    if ((e->st = mp__grow(e->ctx, (void **)&e->steps, sizeof *e->steps,
                         e->n + 1, &e->cap)))
        return;
    e->steps[e->n].kind = k;
    e->steps[e->n++].index = idx;
}

static void cm_free_unit(const rm_prob *p, cm_emit *e, uint8_t *res,
                         uint64_t *cur, uint32_t u)
{
    const mp__node *nd = &p->g->nodes[p->node[u]];
    for (uint32_t o = 0; o < nd->n_out; o++)
        if (mp__tensor_in_arena(&p->g->tensors[nd->outputs[o]]))
            cm_step(e, MP_STEP_FREE, nd->outputs[o]);
    res[u] = 0;
    *cur -= p->mem[u];
}

mp_status rm_checkmate_fixed(const rm_prob *p, const uint8_t *is_ckpt,
                             int rules, rm_out *out)
{
    mp_ctx *ctx = p->ctx;
    uint32_t T = p->T, nt = (uint32_t)p->g->n_tensors;
    size_t T1 = (size_t)T + 1;
    memset(out, 0, sizeof *out);
    if (T > RM_CM_MAX_UNITS)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "Checkmate's baselines build a dense %u x %u "
                      "residency matrix: at most %u nodes",
                      (unsigned)T, (unsigned)T, RM_CM_MAX_UNITS);
    cm_s s;
    s.T = T;
    s.W = (T + 63) / 64;
    s.bits = mp__calloc(ctx, (size_t)T * s.W + 1, sizeof *s.bits);
    uint32_t *ck = mp__alloc(ctx, T1 * sizeof *ck);
    uint32_t *rowmark = mp__calloc(ctx, T1, sizeof *rowmark);
    uint32_t *row = mp__alloc(ctx, T1 * sizeof *row);
    uint32_t *in_of = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *in_of);
    uint32_t *in_end = mp__calloc(ctx, (size_t)p->n_in + 1, sizeof *in_end);
    uint8_t *res = mp__calloc(ctx, T1, 1);
    uint32_t *rows = NULL;
    uint32_t *row_begin = mp__calloc(ctx, T1 + 1, sizeof *row_begin);
    size_t n_rows = 0, cap_rows = 0;
    cm_emit em = {ctx, NULL, 0, 0, MP_OK};
    mp_status st = MP_OK;
    if (!s.bits || !ck || !rowmark || !row || !in_of || !in_end || !res ||
        !row_begin) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    uint32_t nc = 0;
    for (uint32_t u = 0; u < T; u++)
        if (is_ckpt[u])
            ck[nc++] = u;
    s_build(p, ck, nc, rules, &s);
    /* the R rows, stage by stage */
    for (uint32_t t = 0; t < T; t++) {
        uint32_t n = 0;
        rowmark[t] = t + 1;
        row[n++] = t;
        if (t + 1 < T) /* S[t + 1][i] = 1 and S[t][i] = 0 */
            for (uint32_t w = 0; w < s.W; w++) {
                uint64_t d = s.bits[(size_t)(t + 1) * s.W + w] &
                             ~s.bits[(size_t)t * s.W + w];
                while (d) {
                    uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(d);
                    d &= d - 1;
                    if (rowmark[i] != t + 1) {
                        rowmark[i] = t + 1;
                        row[n++] = i;
                    }
                }
            }
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = row[k];
            for (uint32_t j = p->dep_begin[v]; j < p->dep_begin[v + 1]; j++) {
                uint32_t u = p->deps[j];
                if (rowmark[u] != t + 1 && !s_get(&s, t, u)) {
                    rowmark[u] = t + 1;
                    row[n++] = u;
                }
            }
        }
        qsort(row, n, sizeof *row, cmp_unit);
        if ((st = mp__grow(ctx, (void **)&rows, sizeof *rows, n_rows + n,
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
            const mp__node *nd = &p->g->nodes[p->node[rows[r]]];
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
    uint64_t cur = 0, peak;
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
            if (res[x] && !p->out[x] && !s_get(&s, t + 1, x) &&
                !read_later(p, rowmark, x, t, x))
                cm_free_unit(p, &em, res, &cur, x);
        for (uint32_t r = rb; r < re; r++) {
            uint32_t i = rows[r];
            for (uint32_t j = p->dep_begin[i]; j < p->dep_begin[i + 1]; j++)
                if (!res[p->deps[j]]) {
                    st = mp__err(ctx, MP_ERR_INTERNAL,
                                "Checkmate baseline: stage %u computes node "
                                "'%s' without its input from node '%s'",
                                (unsigned)t, p->g->nodes[p->node[i]].name,
                                p->g->nodes[p->node[p->deps[j]]].name);
                    goto done;
                }
            if (res[i]) {
                st = mp__err(ctx, MP_ERR_INTERNAL,
                            "Checkmate baseline: stage %u computes node "
                            "'%s' while its output is resident",
                            (unsigned)t, p->g->nodes[p->node[i]].name);
                goto done;
            }
            bool again = i != t;
            cm_step(&em, again ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE,
                    p->node[i]);
            res[i] = 1;
            cur += p->mem[i];
            if (cur > peak)
                peak = cur;
            if (again) {
                out->extra_cost += p->cost[i];
                if (p->flops[i] > 0)
                    out->extra_flops += p->flops[i];
                out->n_recompute++;
            }
            for (uint32_t j = p->dep_begin[i]; j <= p->dep_begin[i + 1]; j++) {
                uint32_t u = j < p->dep_begin[i + 1] ? p->deps[j] : i;
                if (res[u] && !p->out[u] && !s_get(&s, t + 1, u) &&
                    !read_later(p, rowmark, u, t, i))
                    cm_free_unit(p, &em, res, &cur, u);
            }
        }
        for (uint32_t k = 0; k < p->n_in; k++)
            if (!p->in_out[k] && in_end[k] == t) {
                cm_step(&em, MP_STEP_FREE, p->in_tensor[k]);
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
    mp__dealloc(ctx, s.bits);
    mp__dealloc(ctx, ck);
    mp__dealloc(ctx, rowmark);
    mp__dealloc(ctx, row);
    mp__dealloc(ctx, in_of);
    mp__dealloc(ctx, in_end);
    mp__dealloc(ctx, res);
    mp__dealloc(ctx, rows);
    mp__dealloc(ctx, row_begin);
    mp__dealloc(ctx, em.steps);
    if (st)
        memset(out, 0, sizeof *out);
    return st;
}

/* Every floor(sqrt(n))-th candidate (in unit order) is a checkpoint. */
static void every_kth(const rm_prob *p, const uint8_t *cand, uint8_t *ck)
{
    uint32_t n = 0;
    for (uint32_t u = 0; u < p->T; u++)
        n += cand[u];
    uint32_t k = (uint32_t)floor(sqrt((double)n));
    while ((uint64_t)(k + 1) * (k + 1) <= n)
        k++;
    while (k > 1 && (uint64_t)k * k > n)
        k--;
    if (k < 1)
        k = 1;
    uint32_t seen = 0;
    for (uint32_t u = 0; u < p->T; u++)
        ck[u] = cand[u] && ++seen % k == 0;
}

static mp_status cm_try(const rm_prob *p, const uint8_t *ck, int rules,
                        const char *name, rm_offer_fn offer, void *user)
{
    rm_out o;
    mp_status st = rm_checkmate_fixed(p, ck, rules, &o);
    return st ? st : offer(user, name, &o);
}

mp_status rm_checkmate_baseline(const rm_prob *p, mp_remat_solver which,
                                rm_offer_fn offer, void *user)
{
    mp_ctx *ctx = p->ctx;
    size_t T1 = (size_t)p->T + 1;
    uint8_t *cand = mp__calloc(ctx, T1, 1), *ck = mp__calloc(ctx, T1, 1);
    mp_status st = MP_OK;
    if (!cand || !ck) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    switch (which) {
    case MP_REMAT_CHEN_LINEAR: /* every unit a candidate; released rules */
        memset(cand, 1, p->T);
        every_kth(p, cand, ck);
        st = cm_try(p, ck, RM_CM_RELEASED, "chen-linear", offer, user);
        break;
    case MP_REMAT_CM_CHECKPOINT_ALL:
        st = cm_try(p, p->fwd, RM_CM_2019, "cm-checkpoint-all", offer, user);
        break;
    case MP_REMAT_CM_CHEN_SQRT:
        /* Checkmate's articulation points as its 2019 code counts them (a
         * source before the first forward node and a sink after the last;
         * removing a node separates them, or leaves one isolated): on a
         * chain, the forward units no forward edge jumps over */
        rm_forward_cuts(p, cand);
        every_kth(p, cand, ck);
        st = cm_try(p, ck, RM_CM_2019, "cm-chen-sqrt", offer, user);
        break;
    case MP_REMAT_CM_CHEN_GREEDY: {
        /* the experiment's sweep: segment budgets b x (0, 0.05, ..., 2.95)
         * around the activation peak b of sqrt(n) on the forward nodes */
        uint64_t base = 0;
        every_kth(p, p->fwd, ck);
        rm_out o;
        if ((st = rm_checkmate_fixed(p, ck, RM_CM_2019, &o)))
            break;
        base = o.peak;
        mp__dealloc(ctx, o.steps);
        rm_forward_cuts(p, cand);
        for (int j = 0; j < 60 && !st; j++) {
            double b = (double)base * (1.0 + (-1.0 + 0.05 * j)), acc = 0;
            for (uint32_t u = 0; u < p->T; u++) {
                ck[u] = 0;
                if (!p->fwd[u])
                    continue;
                acc += (double)p->mem[u];
                if (cand[u] && acc > b) {
                    ck[u] = 1;
                    acc = 0;
                }
            }
            st = cm_try(p, ck, RM_CM_2019, "cm-chen-greedy", offer, user);
        }
        break;
    }
    default:
        st = mp__err(ctx, MP_ERR_INVALID_ARG,
                    "solver %d is not one of Checkmate's baselines",
                    (int)which);
    }
done:
    mp__dealloc(ctx, cand);
    mp__dealloc(ctx, ck);
    return st;
}
