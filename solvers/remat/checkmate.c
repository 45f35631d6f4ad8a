/* Checkmate's recompute model (Jain et al., MLSys 2020) on GLPK through
 * the project's wrapper (mp__glpk.h): the MILP and its LP relaxation.
 *
 * Stage t computes unit t (the graph's topological order) and may
 * recompute earlier units. Variables, for i <= t: R[t,i] (computed in
 * stage t; R[t,t] = 1), S[t,i] (resident entering stage t, i < t),
 * FREE[t,i,k] (i freed right after k in stage t, i a dependency of k or k
 * itself) and U[t,k] (live bytes after computing k in stage t). Rows:
 *   S[t+1,i] <= S[t,i] + R[t,i]           (nothing appears from nowhere)
 *   R[t,k] <= R[t,i] + S[t,i]             (dependencies present)
 *   R[t,i] + S[t,i] <= 1                  (a resident unit is not redone)
 *   U[t,0] = in(t) + R[t,0] M0 + sum_i S[t,i] M_i
 *   U[t,k] = U[t,k-1] + R[t,k] M_k - sum_i M_i FREE[t,i,k-1],  U <= cap
 * and the tight cut families of Checkmate's open-source version bounding
 * FREE (no big-M): FREE[t,i,k] <= R[t,k]; FREE[t,i,k] + S[t+1,i] <= 1;
 * FREE[t,i,k] + R[t,j] <= 1 for every user j of i with k < j <= t;
 * sum_k FREE[t,i,k] <= 1. Minimise sum_{i<t} cost_i R[t,i].
 * Variables that cannot matter are left out (R/S of a unit past its
 * horizon, FREE of graph outputs); graph outputs stay resident.
 *
 * The LP value is a lower bound on the extra cost of every schedule that
 * first computes the nodes in this topological order (any such schedule
 * maps to a point of the model with no more memory and the same cost).
 * Rounding (two-phase, as Checkmate's approximation): keep a value across
 * a stage boundary when its S is at least a threshold (0.1 .. 0.9), let the
 * replay recompute what is missing, and keep the cheapest schedule that
 * fits; the MILP is warm-started from the best heuristic when the wrapper
 * can use it and stops at the time limit. */
#include "checkmate.h"
#include "mp_glpk.h"

#include <math.h>
#include <string.h>

typedef struct cm_model {
    const mp__remat_prob *p;
    double mscale, cscale;    /* bytes and cost per model unit */
    uint32_t T;
    uint32_t *rb, *sb, *ub;   /* per stage: first column of R, S, U */
    uint32_t *fb;             /* per (t,k) pair: first FREE column */
    size_t *pair;             /* per stage: index of (t,0) in fb */
    mp__lp *lp;
} cm_model;

#define NOCOL UINT32_MAX
/* LPs of larger graphs drop the cut rows that are not needed for a valid
 * bound (solve time). */
#define CM_LEAN_ABOVE 120

static inline bool alive(const mp__remat_prob *p, uint32_t i, uint32_t t)
{
    return p->horizon[i] >= t || p->out[i];
}

static uint32_t colR(const cm_model *m, uint32_t t, uint32_t i)
{
    return m->rb[t] == NOCOL ? NOCOL : (i == t || alive(m->p, i, t))
                                           ? m->rb[t] + i
                                           : NOCOL;
}

static uint32_t colS(const cm_model *m, uint32_t t, uint32_t i)
{
    if (t == 0 || i >= t || t >= m->T)
        return NOCOL;
    return alive(m->p, i, t) ? m->sb[t] + i : NOCOL;
}

/* deps of k then k itself */
static uint32_t n_fi(const mp__remat_prob *p, uint32_t k)
{
    return p->dep_begin[k + 1] - p->dep_begin[k] + 1;
}
static uint32_t fi_at(const mp__remat_prob *p, uint32_t k, uint32_t j)
{
    uint32_t n = p->dep_begin[k + 1] - p->dep_begin[k];
    return j < n ? p->deps[p->dep_begin[k] + j] : k;
}

typedef struct rowbuf {
    uint32_t c[8];
    double v[8];
    uint32_t n;
} rowbuf;

static void rb_add(rowbuf *r, uint32_t col, double v)
{
    if (col != NOCOL && r->n < 8) {
        r->c[r->n] = col;
        r->v[r->n++] = v;
    }
}

static void cm_free(cm_model *m)
{
    mp_ctx *ctx = m->p->ctx;
    mp__dealloc(ctx, m->rb);
    mp__dealloc(ctx, m->sb);
    mp__dealloc(ctx, m->ub);
    mp__dealloc(ctx, m->fb);
    mp__dealloc(ctx, m->pair);
    mp__lp_destroy(m->lp);
    memset(m, 0, sizeof *m);
}

/* Units of both models: memory in units of the largest unit, cost in
 * units of the largest cost (GLPK's simplex wants coefficients near 1). */
static void cm_scales(const mp__remat_prob *p, double *mscale, double *cscale)
{
    *mscale = 1;
    *cscale = 0;
    for (uint32_t u = 0; u < p->T; u++) {
        if ((double)p->mem[u] > *mscale)
            *mscale = (double)p->mem[u];
        if (p->cost[u] > *cscale)
            *cscale = p->cost[u];
    }
    if (!(*cscale > 0))
        *cscale = 1;
}

/* Clears res; MP_ERR_UNSUPPORTED without GLPK. */
static mp_status cm_start(const mp__remat_prob *p, mp__remat_cm_result *res,
                          const char *what)
{
    memset(res, 0, sizeof *res);
    res->lower_bound = -1;
    if (!mp__glpk_available())
        return mp__err(p->ctx, MP_ERR_UNSUPPORTED,
                      "the %s needs GLPK (build with MEMPLAN_WITH_GLPK=ON)",
                      what);
    return MP_OK;
}

/* Bytes in model units. */
static inline double mem_units(const cm_model *m, uint64_t x)
{
    return (double)x / m->mscale;
}

/* The columns, stage by stage: R[t,0..t], S[t,0..t-1], U[t,0..t] and
 * FREE[t,k,*] for k = 0..t (bk: the kind of the binary columns). */
static mp_status cm_columns(cm_model *m, mp__lp_kind bk, double capd)
{
    const mp__remat_prob *p = m->p;
    mp_status st;
    size_t pr = 0;
    for (uint32_t t = 0; t < m->T; t++) {
        uint32_t idx;
        m->rb[t] = mp__lp_num_cols(m->lp);
        for (uint32_t i = 0; i <= t; i++) {
            double lo = i == t ? 1 : 0;
            double hi = i == t || alive(p, i, t) ? 1 : 0;
            if ((st = mp__lp_add_col(m->lp, lo, hi, i == t ? MP__LP_CONTINUOUS
                                                           : bk,
                                     i < t ? p->cost[i] / m->cscale : 0,
                                     &idx)))
                return st;
        }
        m->sb[t] = mp__lp_num_cols(m->lp);
        for (uint32_t i = 0; i < t; i++) {
            double lo = p->out[i] ? 1 : 0; /* outputs stay once computed */
            double hi = alive(p, i, t) ? 1 : 0;
            if ((st = mp__lp_add_col(m->lp, lo, hi, bk, 0, &idx)))
                return st;
        }
        m->ub[t] = mp__lp_num_cols(m->lp);
        for (uint32_t k = 0; k <= t; k++)
            if ((st = mp__lp_add_col(m->lp, 0, capd, MP__LP_CONTINUOUS, 0,
                                     &idx)))
                return st;
        m->pair[t] = pr;
        for (uint32_t k = 0; k <= t; k++) {
            m->fb[pr++] = mp__lp_num_cols(m->lp);
            for (uint32_t j = 0; j < n_fi(p, k); j++) {
                uint32_t i = fi_at(p, k, j);
                double hi = p->out[i] ? 0 : 1;
                if ((st = mp__lp_add_col(m->lp, 0, hi, bk, 0, &idx)))
                    return st;
            }
        }
    }
    return MP_OK;
}

/* A row lo <= sum r <= hi. */
static mp_status rb_row(cm_model *m, double lo, double hi, const rowbuf *r)
{
    return mp__lp_add_row(m->lp, lo, hi, r->n, r->c, r->v, NULL);
}

/* Stage t: S[t+1,i] <= S[t,i] + R[t,i] (nothing appears from nowhere)
 * and, unless lean, R[t,i] + S[t,i] <= 1; then R[t,k] <= R[t,i] + S[t,i]
 * for every dependency i of k (dependencies present). */
static mp_status cm_rows_residency(cm_model *m, uint32_t t, int lean)
{
    const mp__remat_prob *p = m->p;
    mp_status st;
    rowbuf r;
    for (uint32_t i = 0; i <= t; i++) {
        if (t + 1 < m->T && colS(m, t + 1, i) != NOCOL) {
            r.n = 0;
            rb_add(&r, colS(m, t + 1, i), 1);
            rb_add(&r, colS(m, t, i), -1);
            rb_add(&r, colR(m, t, i), -1);
            if ((st = rb_row(m, -MP__LP_INF, 0, &r)))
                return st;
        }
        if (!lean && i < t && colR(m, t, i) != NOCOL &&
            colS(m, t, i) != NOCOL) {
            r.n = 0;
            rb_add(&r, colR(m, t, i), 1);
            rb_add(&r, colS(m, t, i), 1);
            if ((st = rb_row(m, -MP__LP_INF, 1, &r)))
                return st;
        }
    }
    for (uint32_t k = 0; k <= t; k++) {
        if (colR(m, t, k) == NOCOL)
            continue;
        for (uint32_t j = p->dep_begin[k]; j < p->dep_begin[k + 1]; j++) {
            uint32_t i = p->deps[j];
            r.n = 0;
            rb_add(&r, colR(m, t, k), 1);
            rb_add(&r, colR(m, t, i), -1);
            rb_add(&r, colS(m, t, i), -1);
            if ((st = rb_row(m, -MP__LP_INF, 0, &r)))
                return st;
        }
    }
    return MP_OK;
}

/* A row lo <= sum v c <= hi of n terms at most, built by fill. */
static mp_status cm_long_row(cm_model *m, uint32_t max_terms, double lo,
                             double hi,
                             uint32_t (*fill)(const cm_model *m, uint32_t t,
                                              uint32_t k, uint32_t *c,
                                              double *v),
                             uint32_t t, uint32_t k)
{
    mp_ctx *ctx = m->p->ctx;
    uint32_t *c = mp__alloc(ctx, max_terms * sizeof *c);
    double *v = mp__alloc(ctx, max_terms * sizeof *v);
    mp_status st = MP_ERR_NOMEM;
    if (c && v) {
        uint32_t n = fill(m, t, k, c, v);
        st = mp__lp_add_row(m->lp, lo, hi, n, c, v, NULL);
    }
    mp__dealloc(ctx, c);
    mp__dealloc(ctx, v);
    return st;
}

/* U[t,0] - R[t,0] M0 - sum_i S[t,i] M_i (= the graph inputs still read) */
static uint32_t fill_u0(const cm_model *m, uint32_t t, uint32_t k,
                        uint32_t *c, double *v)
{
    const mp__remat_prob *p = m->p;
    (void)k;
    uint32_t n = 0;
    c[n] = m->ub[t];
    v[n++] = 1;
    if (colR(m, t, 0) != NOCOL) {
        c[n] = colR(m, t, 0);
        v[n++] = -mem_units(m, p->mem[0]);
    }
    for (uint32_t i = 0; i < t; i++)
        if (colS(m, t, i) != NOCOL && p->mem[i]) {
            c[n] = colS(m, t, i);
            v[n++] = -mem_units(m, p->mem[i]);
        }
    return n;
}

/* U[t,k] - U[t,k-1] - R[t,k] M_k + sum_i M_i FREE[t,i,k-1] (= 0) */
static uint32_t fill_uk(const cm_model *m, uint32_t t, uint32_t k,
                        uint32_t *c, double *v)
{
    const mp__remat_prob *p = m->p;
    uint32_t n = 0;
    c[n] = m->ub[t] + k;
    v[n++] = 1;
    c[n] = m->ub[t] + k - 1;
    v[n++] = -1;
    if (colR(m, t, k) != NOCOL) {
        c[n] = colR(m, t, k);
        v[n++] = -mem_units(m, p->mem[k]);
    }
    uint32_t f0 = m->fb[m->pair[t] + k - 1];
    for (uint32_t j = 0; j < n_fi(p, k - 1); j++) {
        uint32_t i = fi_at(p, k - 1, j);
        if (p->mem[i] && !p->out[i]) {
            c[n] = f0 + j;
            v[n++] = mem_units(m, p->mem[i]);
        }
    }
    return n;
}

/* FREE[t,i,*] + ... : each value freed at most once in stage t */
static uint32_t fill_once(const cm_model *m, uint32_t t, uint32_t i,
                          uint32_t *c, double *v)
{
    const mp__remat_prob *p = m->p;
    uint32_t n = 0;
    c[n] = m->fb[m->pair[t] + i] + n_fi(p, i) - 1;
    v[n++] = 1;
    for (uint32_t q = p->use_begin[i]; q < p->use_begin[i + 1]; q++) {
        uint32_t u = p->uses[q];
        if (u > t)
            continue;
        /* position of i among u's deps */
        for (uint32_t j = 0; j + 1 < n_fi(p, u); j++)
            if (fi_at(p, u, j) == i) {
                c[n] = m->fb[m->pair[t] + u] + j;
                v[n++] = 1;
                break;
            }
    }
    return n;
}

/* Stage t's memory rows: U[t,0] and U[t,k] for k = 1..t. */
static mp_status cm_rows_memory(cm_model *m, uint32_t t)
{
    const mp__remat_prob *p = m->p;
    double in = 0;
    for (uint32_t q = 0; q < p->n_in; q++)
        if (p->in_out[q] || p->in_last[q] >= t)
            in += mem_units(m, p->in_mem[q]);
    mp_status st = cm_long_row(m, t + 2, in, in, fill_u0, t, 0);
    for (uint32_t k = 1; k <= t && !st; k++)
        st = cm_long_row(m, n_fi(p, k - 1) + 3, 0, 0, fill_uk, t, k);
    return st;
}

/* Stage t's FREE cuts: FREE[t,i,k] <= R[t,k]; FREE[t,i,k] + S[t+1,i] <=
 * 1; unless lean, FREE[t,i,k] + R[t,j] <= 1 for every user j of i with
 * k < j <= t. Then sum_k FREE[t,i,k] <= 1. */
static mp_status cm_rows_free(cm_model *m, uint32_t t, int lean)
{
    const mp__remat_prob *p = m->p;
    mp_status st;
    rowbuf r;
    for (uint32_t k = 0; k <= t; k++) {
        uint32_t f0 = m->fb[m->pair[t] + k];
        for (uint32_t j = 0; j < n_fi(p, k); j++) {
            uint32_t i = fi_at(p, k, j), fc = f0 + j;
            if (p->out[i])
                continue;
            r.n = 0;
            rb_add(&r, fc, 1);
            if (colR(m, t, k) != NOCOL)
                rb_add(&r, colR(m, t, k), -1);
            if ((st = rb_row(m, -MP__LP_INF, 0, &r)))
                return st;
            if (t + 1 < m->T && colS(m, t + 1, i) != NOCOL) {
                r.n = 0;
                rb_add(&r, fc, 1);
                rb_add(&r, colS(m, t + 1, i), 1);
                if ((st = rb_row(m, -MP__LP_INF, 1, &r)))
                    return st;
            }
            for (uint32_t q = p->use_begin[i];
                 !lean && q < p->use_begin[i + 1]; q++) {
                uint32_t u = p->uses[q];
                if (u <= k || u > t || colR(m, t, u) == NOCOL)
                    continue;
                r.n = 0;
                rb_add(&r, fc, 1);
                rb_add(&r, colR(m, t, u), 1);
                if ((st = rb_row(m, -MP__LP_INF, 1, &r)))
                    return st;
            }
        }
    }
    for (uint32_t i = 0; i <= t; i++) {
        if (p->out[i] || (i < t && colS(m, t, i) == NOCOL &&
                          colR(m, t, i) == NOCOL))
            continue;
        uint32_t cnt = 1; /* (i, i) */
        for (uint32_t q = p->use_begin[i]; q < p->use_begin[i + 1]; q++)
            if (p->uses[q] <= t)
                cnt++;
        if (cnt < 2)
            continue;
        if ((st = cm_long_row(m, cnt, -MP__LP_INF, 1, fill_once, t, i)))
            return st;
    }
    return MP_OK;
}

/* lean: without the R + S <= 1 rows and the FREE + R[t,j] <= 1 cut
 * family (a weaker but still valid relaxation, far fewer rows). */
/* Builds the model; O(T^2) rows and columns, so on a large graph the
 * build alone can outlast a time limit: past `stop` (mp__now_seconds; 0:
 * none) it ends with *late set and no model to solve. */
static mp_status cm_build(const mp__remat_prob *p, uint64_t cap, int integer,
                          int lean, double stop, cm_model *m, int *late)
{
    mp_ctx *ctx = p->ctx;
    memset(m, 0, sizeof *m);
    m->p = p;
    uint32_t T = p->T;
    m->T = T;
    size_t T1 = (size_t)T + 1;
    m->rb = mp__alloc(ctx, T1 * sizeof *m->rb);
    m->sb = mp__alloc(ctx, T1 * sizeof *m->sb);
    m->ub = mp__alloc(ctx, T1 * sizeof *m->ub);
    m->pair = mp__alloc(ctx, T1 * sizeof *m->pair);
    size_t n_pairs = (size_t)T * T1 / 2 + 1;
    m->fb = mp__alloc(ctx, (n_pairs + 1) * sizeof *m->fb);
    if (!m->rb || !m->sb || !m->ub || !m->pair || !m->fb)
        return MP_ERR_NOMEM;
    mp_status st = mp__lp_create(ctx, 0, &m->lp);
    if (st)
        return st;
    /* GLPK's simplex wants coefficients near 1: memory in units of the
     * largest unit, cost in units of the largest cost */
    cm_scales(p, &m->mscale, &m->cscale);
    if ((st = cm_columns(m, integer ? MP__LP_BINARY : MP__LP_CONTINUOUS,
                         mem_units(m, cap))))
        return st;
    *late = 0;
    for (uint32_t t = 0; t < T && !st; t++) {
        if (stop > 0 && (t & 7) == 7 && mp__now_seconds() > stop) {
            *late = 1;
            break;
        }
        if (!(st = cm_rows_residency(m, t, lean)) &&
            !(st = cm_rows_memory(m, t)))
            st = cm_rows_free(m, t, lean);
    }
    return st;
}

/* The model's point of a replayed schedule (the MILP's warm start): R =
 * units computed in each stage, S = units resident when a stage's first
 * computation starts, FREE[t,i,k] = i freed right after k was computed
 * (i an input of k or k itself), U from the memory rows. A free the model
 * cannot express (an eviction of a value that the last computation did
 * not read) is left out: the model then counts the value to the end of
 * its stage, and the wrapper refuses the point if that breaks a row.
 * Returns 0 when the schedule has no point in the model (a unit resident
 * or computed where the model has no column, or computed twice in one
 * stage). */
static int cm_warm(const cm_model *m, const mp_step *steps, uint32_t n,
                   double *x, uint8_t *res)
{
    const mp__remat_prob *p = m->p;
    uint32_t T = m->T;
    memset(x, 0, (size_t)mp__lp_num_cols(m->lp) * sizeof *x);
    memset(res, 0, T);
    uint32_t t = 0;         /* stage of the current computation */
    int started = 0;        /* stage t has computed something */
    int ended = 0;          /* unit t is computed: stage t + 1 is next */
    uint32_t last = UINT32_MAX;
    for (uint32_t q = 0; q < n; q++) {
        const mp_step *sp = &steps[q];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            if (ended) {
                /* the frees after unit t's computation belonged to t */
                t++;
                started = ended = 0;
                last = UINT32_MAX;
            }
            uint32_t u = p->pos[sp->index];
            if (t >= T)
                return 0;
            if (!started) {
                for (uint32_t i = 0; i < t; i++) {
                    if (!res[i])
                        continue;
                    uint32_t c = colS(m, t, i);
                    if (c == NOCOL)
                        return 0;
                    x[c] = 1;
                }
                started = 1;
            }
            uint32_t c = colR(m, t, u);
            if (u > t || c == NOCOL || (u < t && x[c] != 0))
                return 0;
            if (sp->kind == MP_STEP_COMPUTE && u != t)
                return 0;
            x[c] = 1;
            res[u] = 1;
            last = u;
            ended = sp->kind == MP_STEP_COMPUTE;
        } else if (sp->kind == MP_STEP_FREE) {
            uint32_t u = sp->index < p->n_tensors ? p->unit_of[sp->index]
                                                  : MP_NONE;
            if (u == MP_NONE)
                continue; /* a graph input */
            if (!res[u])
                continue; /* another output of a freed unit */
            res[u] = 0;
            if (p->out[u])
                return 0;
            if (last == UINT32_MAX)
                continue; /* before the stage's first computation */
            uint32_t f0 = m->fb[m->pair[t] + last];
            for (uint32_t j = 0; j < n_fi(p, last); j++)
                if (fi_at(p, last, j) == u) {
                    x[f0 + j] = 1;
                    break;
                }
        } else {
            return 0;
        }
    }
    if (ended)
        t++;
    if (t != T)
        return 0;
    /* U from the memory rows */
    for (t = 0; t < T; t++) {
        double in = 0;
        for (uint32_t q = 0; q < p->n_in; q++)
            if (p->in_out[q] || p->in_last[q] >= t)
                in += (double)p->in_mem[q] / m->mscale;
        double u0 = in;
        if (colR(m, t, 0) != NOCOL)
            u0 += x[colR(m, t, 0)] * (double)p->mem[0] / m->mscale;
        for (uint32_t i = 0; i < t; i++)
            if (colS(m, t, i) != NOCOL && p->mem[i])
                u0 += x[colS(m, t, i)] * (double)p->mem[i] / m->mscale;
        x[m->ub[t]] = u0;
        for (uint32_t k = 1; k <= t; k++) {
            double v = x[m->ub[t] + k - 1];
            if (colR(m, t, k) != NOCOL)
                v += x[colR(m, t, k)] * (double)p->mem[k] / m->mscale;
            uint32_t f0 = m->fb[m->pair[t] + k - 1];
            for (uint32_t j = 0; j < n_fi(p, k - 1); j++) {
                uint32_t i = fi_at(p, k - 1, j);
                if (p->mem[i] && !p->out[i])
                    v -= x[f0 + j] * (double)p->mem[i] / m->mscale;
            }
            x[m->ub[t] + k] = v;
        }
    }
    return 1;
}

/* keep() for the replay: S value of (t+1, u) at least the threshold */
typedef struct cm_keep {
    const double *x;
    const cm_model *m;
    double theta;
} cm_keep;

static int keep_s(void *user, uint32_t u, uint32_t t)
{
    const cm_keep *k = user;
    if (t + 1 >= k->m->T)
        return 1;
    uint32_t c = colS(k->m, t + 1, u);
    return c != NOCOL && k->x[c] >= k->theta;
}

mp_status mp__remat_checkmate(const mp__remat_prob *p, uint64_t cap,
                              int integer, double time_limit,
                              const mp__remat_out *warm,
                              mp__remat_cm_result *res,
                              mp__remat_try_fn try_fn, void *try_user)
{
    mp_ctx *ctx = p->ctx;
    mp_status st0 = cm_start(p, res, "Checkmate LP/MILP");
    if (st0)
        return st0;
    cm_model m;
    int lean = !integer && p->T > CM_LEAN_ABOVE, late = 0;
    double t0 = mp__now_seconds();
    double tl = time_limit > 0 ? time_limit : 60;
    mp_status st = cm_build(p, cap == UINT64_MAX ? (uint64_t)1 << 62 : cap,
                            integer, lean, t0 + tl, &m, &late);
    if (st || late) {
        /* the time limit ran out while building: no bound, no schedule */
        if (late)
            res->status = MP_SOLVE_TIMEOUT;
        cm_free(&m);
        return st;
    }
    res->n_cols = mp__lp_num_cols(m.lp);
    res->n_rows = mp__lp_num_rows(m.lp);
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    lo.time_limit = t0 + tl - mp__now_seconds();
    if (lo.time_limit < 1e-3)
        lo.time_limit = 1e-3;
    lo.relax = !integer;
    /* the dual simplex: 3-10x faster here, and its basis stays dual
     * feasible, so a time limit still leaves a good certified bound */
    lo.method = MP__LP_DUAL;
    double *wx = NULL;
    uint8_t *wres = NULL;
    if (integer && warm && warm->steps) {
        wx = mp__alloc(ctx, ((size_t)res->n_cols + 1) * sizeof *wx);
        wres = mp__alloc(ctx, (size_t)p->T + 1);
        if (!wx || !wres) {
            mp__dealloc(ctx, wx);
            mp__dealloc(ctx, wres);
            cm_free(&m);
            return MP_ERR_NOMEM;
        }
        if (cm_warm(&m, warm->steps, warm->n_steps, wx, wres))
            lo.warm_start = wx;
        res->warm_mapped = lo.warm_start != NULL;
    }
    mp__lp_result lr;
    st = mp__lp_solve(m.lp, &lo, &lr);
    mp__dealloc(ctx, wx);
    mp__dealloc(ctx, wres);
    if (st) {
        cm_free(&m);
        return st;
    }
    res->from_warm = lr.from_warm_start;
    res->status = lr.status;
    res->seconds = lr.seconds;
    if (!integer) {
        /* weak duality on GLPK's row duals (the wrapper's dual_bound):
         * valid whether the simplex finished or stopped at the limit; the
         * cost is >= 0, so a negative bound says nothing */
        if (isfinite(lr.dual_bound)) {
            res->lower_bound = fmax(0, lr.dual_bound) * m.cscale;
            res->bound_kind = lr.status == MP_SOLVE_OPTIMAL
                                  ? MP_REMAT_BOUND_LP
                                  : MP_REMAT_BOUND_LP_DUALS;
        }
    } else if (isfinite(lr.bound)) {
        res->lower_bound = lr.bound * m.cscale;
        res->bound_kind = MP_REMAT_BOUND_MILP;
    }
    /* GLPK's tolerances: a bound a hair above a schedule's cost is noise */
    if (res->lower_bound > 0)
        res->lower_bound *= 1 - 1e-7;
    if (lr.status == MP_SOLVE_INFEASIBLE)
        res->infeasible = 1;
    const double *x = mp__lp_values(m.lp);
    if (x && try_fn) {
        static const double th[] = {0.5, 0.1, 0.2, 0.3, 0.4,
                                    0.6, 0.7, 0.8, 0.9, 0.999};
        cm_keep k;
        k.x = x;
        k.m = &m;
        /* the first threshold always; the others while time is left */
        for (size_t i = 0; i < sizeof th / sizeof th[0] && !st &&
                           !(i && mp__now_seconds() > t0 + tl);
             i++) {
            k.theta = integer ? 0.5 : th[i];
            mp__remat_policy pol;
            memset(&pol, 0, sizeof pol);
            pol.keep = keep_s;
            pol.user = &k;
            st = try_fn(try_user, integer ? "ilp" : "lp-rounding", &pol);
            if (!st && cap != UINT64_MAX) {
                pol.evict_cap = cap; /* eviction repairs the rounding */
                st = try_fn(try_user,
                            integer ? "ilp+evict" : "lp-rounding+evict", &pol);
            }
            if (integer)
                break;
        }
    }
    cm_free(&m);
    return st;
}

/* ---- the stage-boundary relaxation --------------------------------------- */
/* A relaxation of Checkmate's model with O(edges) columns (the full model
 * has O(T^2)), for graphs whose full LP GLPK cannot solve in time. It
 * keeps, per value i with uses u_1 < ... < u_m (stages), K[i,a] = "i
 * resident across the stage boundaries from u_a to u_{a+1}" (u_0 = i) and
 * R[i,a] = "i recomputed in stage u_a", with
 *   K[i,a-1] + R[i,a] >= 1        (stage u_a reads i)
 *   K[i,a] <= K[i,a-1] + R[i,a]   (nothing appears from nowhere)
 * and one memory row per stage t, at the moment unit t is computed: its
 * output, its inputs, the graph inputs still read, the graph outputs
 * already computed and every value kept across the boundary after t
 * (K of the interval holding t + 1) fit the cap. Minimise sum cost_i R.
 *
 * Why it bounds every schedule in this order: a schedule maps to an
 * integer point of Checkmate's model, whose S[t+1,i] = 1 values are all
 * resident when unit t is computed (nothing in S[t+1] is freed in stage t
 * and unit t comes last in its stage), so dropping Checkmate's FREE/U
 * rows and the rows for the inputs of recomputed units leaves a
 * relaxation (A) of it with the memory row above. Any LP point of (A) can
 * be changed, at the same cost and no more memory, into one that
 * recomputes a value only at stages that read it (move R[t,i] to i's next
 * reader, lowering S between) and keeps S constant between readers (the
 * value entering the next reader): that is this model. So its LP value is
 * <= the cost of any schedule in this order (the replay's peak, no
 * in-place sharing). It is not comparable with Checkmate's LP value: it
 * ignores the inputs a recompute needs, but its memory row holds at every
 * integer point, where Checkmate's LP lets fractional FREE values release
 * memory early (on VGG19 at 0.8x it is the tighter of the two). */
/* keep() for the replay from the stage LP: K of the interval holding the
 * boundary t -> t+1 at least the threshold */
typedef struct sl_keep {
    const mp__remat_prob *p;
    const double *x;
    const uint32_t *k0, *kcol;
    double theta;
} sl_keep;

static int keep_k(void *user, uint32_t u, uint32_t t)
{
    const sl_keep *k = user;
    const mp__remat_prob *p = k->p;
    if (k->k0[u] == NOCOL)
        return 1;
    uint32_t q = p->use_begin[u], e = p->use_begin[u + 1];
    while (q < e && p->uses[q] <= t)
        q++;
    if (q == e)
        return 0; /* no later reader */
    uint32_t c = q == p->use_begin[u] ? k->k0[u] : k->kcol[q - 1];
    return c != NOCOL && k->x[c] >= k->theta;
}

/* The stage LP being built: per use slot q (use_begin order), the column
 * of K after that use and of R at that use; k0[i]: K[i,0]. */
typedef struct sl_model {
    const mp__remat_prob *p;
    mp__lp *lp;
    uint32_t *kcol, *rcol, *k0;
    uint8_t *isdep;
    uint32_t *c;
    double *v;
    double mscale, cscale;
} sl_model;

/* The columns and the two row families of each value. */
static mp_status sl_columns(sl_model *M)
{
    const mp__remat_prob *p = M->p;
    mp_status st;
    for (uint32_t i = 0; i < p->T; i++) {
        M->k0[i] = NOCOL;
        uint32_t b = p->use_begin[i], e = p->use_begin[i + 1];
        for (uint32_t q = b; q < e; q++)
            M->kcol[q] = M->rcol[q] = NOCOL;
        if (p->out[i] || !p->mem[i] || b == e)
            continue; /* always resident, free, or never read */
        if ((st = mp__lp_add_col(M->lp, 0, 1, MP__LP_CONTINUOUS, 0,
                                 &M->k0[i])))
            return st;
        uint32_t prev = M->k0[i];
        for (uint32_t q = b; q < e; q++) {
            if ((st = mp__lp_add_col(M->lp, 0, 1, MP__LP_CONTINUOUS,
                                     p->cost[i] / M->cscale, &M->rcol[q])))
                return st;
            /* K[prev] + R >= 1 */
            uint32_t rc[3] = {prev, M->rcol[q], 0};
            double rv[3] = {1, 1, -1};
            if ((st = mp__lp_add_row(M->lp, 1, MP__LP_INF, 2, rc, rv, NULL)))
                return st;
            if (q + 1 < e) {
                if ((st = mp__lp_add_col(M->lp, 0, 1, MP__LP_CONTINUOUS, 0,
                                         &M->kcol[q])))
                    return st;
                /* K[next] - K[prev] - R <= 0 */
                rc[0] = M->kcol[q];
                rc[1] = prev;
                rc[2] = M->rcol[q];
                rv[0] = 1;
                rv[1] = -1;
                rv[2] = -1;
                if ((st = mp__lp_add_row(M->lp, -MP__LP_INF, 0, 3, rc, rv,
                                         NULL)))
                    return st;
                prev = M->kcol[q];
            }
        }
    }
    return MP_OK;
}

/* The memory rows, walking the stages and tracking each value's current
 * K; *infeasible = 1 when a stage alone exceeds the cap. */
static mp_status sl_memory_rows(sl_model *M, uint64_t cap, int *infeasible)
{
    const mp__remat_prob *p = M->p;
    uint32_t T = p->T;
    uint32_t *curq = mp__alloc(p->ctx, ((size_t)T + 1) * sizeof *curq);
    if (!curq)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < T; i++)
        curq[i] = p->use_begin[i]; /* next use slot of i */
    double capd = (double)cap / M->mscale;
    double outs = 0;
    mp_status st = MP_OK;
#define SMEM(x) ((double)(x) / M->mscale)
    for (uint32_t t = 0; t < T && !st; t++) {
        double cst = SMEM(p->mem[t]);
        for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++) {
            uint32_t d = p->deps[j];
            M->isdep[d] = 1;
            if (!p->out[d])
                cst += SMEM(p->mem[d]);
        }
        for (uint32_t q = 0; q < p->n_in; q++)
            if (p->in_out[q] || p->in_last[q] >= t)
                cst += SMEM(p->in_mem[q]);
        cst += outs;
        uint32_t n = 0;
        /* values i < t kept across boundary t -> t+1: the K of the
         * interval after i's last use at or before t */
        for (uint32_t i = 0; i < t; i++) {
            uint32_t e = p->use_begin[i + 1];
            while (curq[i] < e && p->uses[curq[i]] <= t)
                curq[i]++;
            if (M->k0[i] == NOCOL || curq[i] == e || M->isdep[i])
                continue;
            uint32_t col = curq[i] == p->use_begin[i] ? M->k0[i]
                                                      : M->kcol[curq[i] - 1];
            M->c[n] = col;
            M->v[n++] = SMEM(p->mem[i]);
        }
        for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++)
            M->isdep[p->deps[j]] = 0;
        if (p->out[t])
            outs += SMEM(p->mem[t]);
        if (cst > capd * (1 + 1e-12)) {
            *infeasible = 1; /* the stage alone exceeds the cap */
            break;
        }
        if (n)
            st = mp__lp_add_row(M->lp, -MP__LP_INF, capd - cst, n, M->c, M->v,
                                NULL);
    }
#undef SMEM
    mp__dealloc(p->ctx, curq);
    return st;
}

/* Solves the stage LP: its bound into res; its solution rounded (keep a
 * value across a boundary when its K is at least a threshold; the replay
 * recomputes the rest, with eviction as a repair) to try_fn. */
static mp_status sl_solve(sl_model *M, uint64_t cap, double time_limit,
                          mp__remat_cm_result *res, mp__remat_try_fn try_fn,
                          void *try_user)
{
    res->n_cols = mp__lp_num_cols(M->lp);
    res->n_rows = mp__lp_num_rows(M->lp);
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    lo.time_limit = time_limit > 0 ? time_limit : 60;
    lo.relax = 1;
    lo.method = MP__LP_DUAL;
    mp__lp_result lr;
    mp_status st = mp__lp_solve(M->lp, &lo, &lr);
    if (st)
        return st;
    res->status = lr.status;
    res->seconds = lr.seconds;
    if (lr.status == MP_SOLVE_INFEASIBLE)
        res->infeasible = 1;
    else if (isfinite(lr.dual_bound)) {
        res->lower_bound = fmax(0, lr.dual_bound) * M->cscale * (1 - 1e-7);
        res->bound_kind = MP_REMAT_BOUND_STAGE_LP;
    }
    const double *x = mp__lp_values(M->lp);
    if (!x || !try_fn || lr.status != MP_SOLVE_OPTIMAL)
        return MP_OK;
    static const double th[] = {0.5, 0.1, 0.3, 0.7, 0.9, 0.999};
    sl_keep k = {M->p, x, M->k0, M->kcol, 0};
    for (size_t i = 0; i < sizeof th / sizeof th[0] && !st; i++) {
        k.theta = th[i];
        mp__remat_policy pol;
        memset(&pol, 0, sizeof pol);
        pol.keep = keep_k;
        pol.user = &k;
        st = try_fn(try_user, "stage-lp-rounding", &pol);
        if (!st && cap != UINT64_MAX) {
            pol.evict_cap = cap;
            st = try_fn(try_user, "stage-lp-rounding+evict", &pol);
        }
    }
    return st;
}

mp_status mp__remat_stage_lp(const mp__remat_prob *p, uint64_t cap,
                             double time_limit, mp__remat_cm_result *res,
                             mp__remat_try_fn try_fn, void *try_user)
{
    mp_ctx *ctx = p->ctx;
    mp_status st0 = cm_start(p, res, "stage LP");
    if (st0)
        return st0;
    uint32_t T = p->T;
    size_t E = p->use_begin[T];
    sl_model M;
    memset(&M, 0, sizeof M);
    M.p = p;
    M.kcol = mp__alloc(ctx, (E + 1) * sizeof *M.kcol);
    M.rcol = mp__alloc(ctx, (E + 1) * sizeof *M.rcol);
    M.k0 = mp__alloc(ctx, ((size_t)T + 1) * sizeof *M.k0);
    M.isdep = mp__calloc(ctx, (size_t)T + 1, 1);
    M.c = mp__alloc(ctx, ((size_t)T + 2) * sizeof *M.c);
    M.v = mp__alloc(ctx, ((size_t)T + 2) * sizeof *M.v);
    mp_status st = MP_OK;
    if (!M.kcol || !M.rcol || !M.k0 || !M.isdep || !M.c || !M.v) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp__lp_create(ctx, 0, &M.lp)))
        goto done;
    cm_scales(p, &M.mscale, &M.cscale);
    if ((st = sl_columns(&M)) ||
        (st = sl_memory_rows(&M, cap, &res->infeasible)) || res->infeasible)
        goto done;
    st = sl_solve(&M, cap, time_limit, res, try_fn, try_user);
done:
    mp__dealloc(ctx, M.kcol);
    mp__dealloc(ctx, M.rcol);
    mp__dealloc(ctx, M.k0);
    mp__dealloc(ctx, M.isdep);
    mp__dealloc(ctx, M.c);
    mp__dealloc(ctx, M.v);
    mp__lp_destroy(M.lp);
    return st;
}

