/* Checkmate's fixed-checkpoint baselines (docs/training.md,
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
 *   - inputs (MP__REMAT_CM_RELEASED, Checkmate since January 2020):
 *     u < t < v for an edge u -> v; (MP__REMAT_CM_2019, the code of the
 *     published figure): t = v only, so a value is resident at its
 *     readers' stages and recomputed in between unless another rule holds
 *     it;
 *   - backward edges u -> v (both backward): u < t <= v;
 *   - stripe: t > c for every checkpoint c (kept to the end);
 *   - segments [s, e) are [0, c1), [c1, c2), ..., [cm, Tf + 1); for i in
 *     [s, e): ladder: T - e <= t <= T - 1 - s and t > i (a segment's
 *     values stay through its mirrored backward stages); forward block:
 *     i < t <= e;
 *   - backward block (MP__REMAT_CM_2019 only; "removed in public release"): for
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
 * dense T x T bit matrix: graphs up to CM_MAX_UNITS units. */
#include "remat_chen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CM_MAX_UNITS 32768u

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

static void s_build(const mp__remat_prob *p, const uint32_t *ck, uint32_t nc,
                    int rules, cm_s *s)
{
    uint32_t T = p->T, Tf = 0;
    for (uint32_t u = 0; u < T; u++)
        Tf += p->fwd[u];
    for (uint32_t u = 0; u < T; u++) {
        uint32_t b = p->use_begin[u], e = p->use_begin[u + 1];
        for (uint32_t j = b; j < e; j++) {
            uint32_t v = p->uses[j];
            if (rules == MP__REMAT_CM_2019)
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
        if (rules != MP__REMAT_CM_2019)
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
static bool read_later(const mp__remat_prob *p, const uint32_t *rowmark,
                       uint32_t u, uint32_t t, uint32_t i)
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

/* The fixed-checkpoint schedule being built. */
typedef struct cf_state {
    const mp__remat_prob *p;
    cm_s s;
    uint32_t *rowmark, *row;   /* per stage: marks, the row being built */
    uint32_t *rows, *row_begin; /* stage t computes rows[row_begin[t] ..
                                 * row_begin[t + 1]), ascending */
    size_t n_rows, cap_rows;
    uint32_t *in_end;          /* graph input -> last stage reading it */
    uint8_t *res;              /* unit resident */
    mp__remat_steps em;
    uint64_t cur, peak;
} cf_state;

/* The R rows, stage by stage: R[t][t], what S[t + 1] holds and S[t] does
 * not, and down from those every dependency S[t] does not hold. */
static mp_status cf_rows(cf_state *F)
{
    const mp__remat_prob *p = F->p;
    const cm_s *s = &F->s;
    uint32_t T = p->T;
    for (uint32_t t = 0; t < T; t++) {
        uint32_t n = 0;
        F->rowmark[t] = t + 1;
        F->row[n++] = t;
        if (t + 1 < T) /* S[t + 1][i] = 1 and S[t][i] = 0 */
            for (uint32_t w = 0; w < s->W; w++) {
                uint64_t d = s->bits[(size_t)(t + 1) * s->W + w] &
                             ~s->bits[(size_t)t * s->W + w];
                while (d) {
                    uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(d);
                    d &= d - 1;
                    if (F->rowmark[i] != t + 1) {
                        F->rowmark[i] = t + 1;
                        F->row[n++] = i;
                    }
                }
            }
        for (uint32_t k = 0; k < n; k++) {
            uint32_t v = F->row[k];
            for (uint32_t j = p->dep_begin[v]; j < p->dep_begin[v + 1]; j++) {
                uint32_t u = p->deps[j];
                if (F->rowmark[u] != t + 1 && !s_get(s, t, u)) {
                    F->rowmark[u] = t + 1;
                    F->row[n++] = u;
                }
            }
        }
        qsort(F->row, n, sizeof *F->row, cmp_unit);
        mp_status st = mp__grow(p->ctx, (void **)&F->rows, sizeof *F->rows,
                                F->n_rows + n, &F->cap_rows);
        if (st)
            return st;
        memcpy(F->rows + F->n_rows, F->row, n * sizeof *F->row);
        F->n_rows += n;
        F->row_begin[t + 1] = (uint32_t)F->n_rows;
    }
    /* graph inputs: freed after the last stage computing a reader */
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t r = F->row_begin[t]; r < F->row_begin[t + 1]; r++) {
            uint32_t u = F->rows[r];
            for (uint32_t q = p->read_begin[u]; q < p->read_begin[u + 1]; q++)
                if (t > F->in_end[p->reads[q]])
                    F->in_end[p->reads[q]] = t;
        }
    return MP_OK;
}

static void cf_free_unit(cf_state *F, uint32_t u)
{
    mp__remat_step_frees(&F->em, F->p, u);
    F->res[u] = 0;
    F->cur -= F->p->mem[u];
}

/* Stage t computes unit i (again when i != t), then frees its inputs and
 * itself unless S[t + 1] holds them or a later computation reads them. */
static mp_status cf_compute(cf_state *F, uint32_t t, uint32_t i,
                            mp__remat_out *out)
{
    const mp__remat_prob *p = F->p;
    for (uint32_t j = p->dep_begin[i]; j < p->dep_begin[i + 1]; j++)
        if (!F->res[p->deps[j]])
            return mp__err(p->ctx, MP_ERR_INTERNAL,
                           "Checkmate baseline: stage %u computes node "
                           "'%s' without its input from node '%s'",
                           (unsigned)t, p->name[i], p->name[p->deps[j]]);
    if (F->res[i])
        return mp__err(p->ctx, MP_ERR_INTERNAL,
                       "Checkmate baseline: stage %u computes node "
                       "'%s' while its output is resident",
                       (unsigned)t, p->name[i]);
    bool again = i != t;
    mp__remat_step(&F->em, again ? MP_STEP_RECOMPUTE : MP_STEP_COMPUTE,
                   p->node[i]);
    F->res[i] = 1;
    F->cur += p->mem[i];
    if (F->cur > F->peak)
        F->peak = F->cur;
    if (again) {
        out->extra_cost += p->cost[i];
        if (p->flops[i] > 0)
            out->extra_flops += p->flops[i];
        out->n_recompute++;
    }
    for (uint32_t j = p->dep_begin[i]; j <= p->dep_begin[i + 1]; j++) {
        uint32_t u = j < p->dep_begin[i + 1] ? p->deps[j] : i;
        if (F->res[u] && !p->out[u] && !s_get(&F->s, t + 1, u) &&
            !read_later(p, F->rowmark, u, t, i))
            cf_free_unit(F, u);
    }
    return MP_OK;
}

/* The schedule of the R rows under Checkmate's scheduler. */
static mp_status cf_schedule(cf_state *F, mp__remat_out *out)
{
    const mp__remat_prob *p = F->p;
    uint32_t T = p->T;
    F->cur = 0;
    for (uint32_t k = 0; k < p->n_in; k++)
        F->cur += p->in_mem[k];
    F->peak = F->cur;
    memset(F->rowmark, 0, ((size_t)T + 1) * sizeof *F->rowmark);
    for (uint32_t t = 0; t < T && !F->em.st; t++) {
        uint32_t rb = F->row_begin[t], re = F->row_begin[t + 1];
        for (uint32_t r = rb; r < re; r++)
            F->rowmark[F->rows[r]] = t + 1;
        /* stage start: what S[t + 1] does not hold and stage t does not
         * read */
        for (uint32_t x = 0; x < T; x++)
            if (F->res[x] && !p->out[x] && !s_get(&F->s, t + 1, x) &&
                !read_later(p, F->rowmark, x, t, x))
                cf_free_unit(F, x);
        for (uint32_t r = rb; r < re; r++) {
            mp_status st = cf_compute(F, t, F->rows[r], out);
            if (st)
                return st;
        }
        for (uint32_t k = 0; k < p->n_in; k++)
            if (!p->in_out[k] && F->in_end[k] == t) {
                mp__remat_step(&F->em, MP_STEP_FREE, p->in_tensor[k]);
                F->cur -= p->in_mem[k];
            }
    }
    return F->em.st;
}

mp_status mp__remat_checkmate_fixed(const mp__remat_prob *p,
                                    const uint8_t *is_ckpt, int rules,
                                    mp__remat_out *out)
{
    mp_ctx *ctx = p->ctx;
    uint32_t T = p->T;
    size_t T1 = (size_t)T + 1;
    memset(out, 0, sizeof *out);
    if (T > CM_MAX_UNITS)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                       "Checkmate's baselines build a dense %u x %u "
                       "residency matrix: at most %u nodes",
                       (unsigned)T, (unsigned)T, CM_MAX_UNITS);
    cf_state F;
    memset(&F, 0, sizeof F);
    F.p = p;
    F.em.ctx = ctx;
    F.s.T = T;
    F.s.W = (T + 63) / 64;
    F.s.bits = mp__calloc(ctx, (size_t)T * F.s.W + 1, sizeof *F.s.bits);
    uint32_t *ck = mp__alloc(ctx, T1 * sizeof *ck);
    F.rowmark = mp__calloc(ctx, T1, sizeof *F.rowmark);
    F.row = mp__alloc(ctx, T1 * sizeof *F.row);
    F.in_end = mp__calloc(ctx, (size_t)p->n_in + 1, sizeof *F.in_end);
    F.res = mp__calloc(ctx, T1, 1);
    F.row_begin = mp__calloc(ctx, T1 + 1, sizeof *F.row_begin);
    mp_status st = MP_OK;
    if (!F.s.bits || !ck || !F.rowmark || !F.row || !F.in_end || !F.res ||
        !F.row_begin) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    uint32_t nc = 0;
    for (uint32_t u = 0; u < T; u++)
        if (is_ckpt[u])
            ck[nc++] = u;
    s_build(p, ck, nc, rules, &F.s);
    if ((st = cf_rows(&F)) || (st = cf_schedule(&F, out)))
        goto done;
    out->peak = F.peak;
    out->steps = F.em.steps;
    out->n_steps = (uint32_t)F.em.n;
    F.em.steps = NULL;
done:
    mp__dealloc(ctx, F.s.bits);
    mp__dealloc(ctx, ck);
    mp__dealloc(ctx, F.rowmark);
    mp__dealloc(ctx, F.row);
    mp__dealloc(ctx, F.in_end);
    mp__dealloc(ctx, F.res);
    mp__dealloc(ctx, F.rows);
    mp__dealloc(ctx, F.row_begin);
    mp__dealloc(ctx, F.em.steps);
    if (st)
        memset(out, 0, sizeof *out);
    return st;
}

/* Every floor(sqrt(n))-th candidate (in unit order) is a checkpoint. */
static void every_kth(const mp__remat_prob *p, const uint8_t *cand, uint8_t *ck)
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

static mp_status cm_try(const mp__remat_prob *p, const uint8_t *ck, int rules,
                        const char *name, mp__remat_offer_fn offer, void *user)
{
    mp__remat_out o;
    mp_status st = mp__remat_checkmate_fixed(p, ck, rules, &o);
    return st ? st : offer(user, name, &o);
}

mp_status mp__remat_checkmate_baseline(const mp__remat_prob *p,
                                       mp_remat_solver which,
                                       mp__remat_offer_fn offer, void *user)
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
        st = cm_try(p, ck, MP__REMAT_CM_RELEASED, "chen-linear", offer, user);
        break;
    case MP_REMAT_CM_CHECKPOINT_ALL:
        st = cm_try(p, p->fwd, MP__REMAT_CM_2019, "cm-checkpoint-all", offer,
                    user);
        break;
    case MP_REMAT_CM_CHEN_SQRT:
        /* Checkmate's articulation points as its 2019 code counts them (a
         * source before the first forward node and a sink after the last;
         * removing a node separates them, or leaves one isolated): on a
         * chain, the forward units no forward edge jumps over */
        mp__remat_forward_cuts(p, cand);
        every_kth(p, cand, ck);
        st = cm_try(p, ck, MP__REMAT_CM_2019, "cm-chen-sqrt", offer, user);
        break;
    case MP_REMAT_CM_CHEN_GREEDY: {
        /* the experiment's sweep: segment budgets b x (0, 0.05, ..., 2.95)
         * around the activation peak b of sqrt(n) on the forward nodes */
        uint64_t base = 0;
        every_kth(p, p->fwd, ck);
        mp__remat_out o;
        if ((st = mp__remat_checkmate_fixed(p, ck, MP__REMAT_CM_2019, &o)))
            break;
        base = o.peak;
        mp__dealloc(ctx, o.steps);
        mp__remat_forward_cuts(p, cand);
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
            st = cm_try(p, ck, MP__REMAT_CM_2019, "cm-chen-greedy", offer,
                        user);
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
