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
#include "sched.h"
#include "remat_internal.h"
#include "mp_glpk.h"

#include <math.h>
#include <string.h>

typedef struct cm_model {
    const rm_prob *p;
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
#define RM_CM_LEAN_ABOVE 120

static inline bool alive(const rm_prob *p, uint32_t i, uint32_t t)
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
static uint32_t n_fi(const rm_prob *p, uint32_t k)
{
    return p->dep_begin[k + 1] - p->dep_begin[k] + 1;
}
static uint32_t fi_at(const rm_prob *p, uint32_t k, uint32_t j)
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
static void cm_scales(const rm_prob *p, double *mscale, double *cscale)
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
static mp_status cm_start(const rm_prob *p, rm_cm_result *res,
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

/* lean: without the R + S <= 1 rows and the FREE + R[t,j] <= 1 cut
 * family (a weaker but still valid relaxation, far fewer rows). */
static mp_status cm_build(const rm_prob *p, uint64_t cap, int integer,
                          int lean, cm_model *m)
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
    mp__lp_kind bk = integer ? MP__LP_BINARY : MP__LP_CONTINUOUS;
    /* GLPK's simplex wants coefficients near 1: memory in units of the
     * largest unit, cost in units of the largest cost */
    cm_scales(p, &m->mscale, &m->cscale);
    double capd = (double)cap / m->mscale;
#define MEM(x) ((double)(x) / m->mscale)
    /* columns */
    size_t pr = 0;
    for (uint32_t t = 0; t < T; t++) {
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
    /* rows */
    rowbuf r;
    for (uint32_t t = 0; t < T; t++) {
        for (uint32_t i = 0; i <= t; i++) {
            /* S[t+1,i] <= S[t,i] + R[t,i] */
            if (t + 1 < T && colS(m, t + 1, i) != NOCOL) {
                r.n = 0;
                rb_add(&r, colS(m, t + 1, i), 1);
                rb_add(&r, colS(m, t, i), -1);
                rb_add(&r, colR(m, t, i), -1);
                if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 0, r.n, r.c, r.v,
                                        NULL)))
                    return st;
            }
            /* R[t,i] + S[t,i] <= 1 */
            if (!lean && i < t && colR(m, t, i) != NOCOL &&
                colS(m, t, i) != NOCOL) {
                r.n = 0;
                rb_add(&r, colR(m, t, i), 1);
                rb_add(&r, colS(m, t, i), 1);
                if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 1, r.n, r.c, r.v,
                                        NULL)))
                    return st;
            }
        }
        /* dependencies present */
        for (uint32_t k = 0; k <= t; k++) {
            if (colR(m, t, k) == NOCOL)
                continue;
            for (uint32_t j = p->dep_begin[k]; j < p->dep_begin[k + 1]; j++) {
                uint32_t i = p->deps[j];
                r.n = 0;
                rb_add(&r, colR(m, t, k), 1);
                rb_add(&r, colR(m, t, i), -1);
                rb_add(&r, colS(m, t, i), -1);
                if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 0, r.n, r.c, r.v,
                                        NULL)))
                    return st;
            }
        }
        /* memory: U[t,0] */
        {
            double in = 0;
            for (uint32_t q = 0; q < p->n_in; q++)
                if (p->in_out[q] || p->in_last[q] >= t)
                    in += MEM(p->in_mem[q]);
            uint32_t nterm = t + 2;
            uint32_t *c = mp__alloc(ctx, nterm * sizeof *c);
            double *v = mp__alloc(ctx, nterm * sizeof *v);
            if (!c || !v) {
                mp__dealloc(ctx, c);
                mp__dealloc(ctx, v);
                return MP_ERR_NOMEM;
            }
            uint32_t n = 0;
            c[n] = m->ub[t];
            v[n++] = 1;
            if (colR(m, t, 0) != NOCOL) {
                c[n] = colR(m, t, 0);
                v[n++] = -MEM(p->mem[0]);
            }
            for (uint32_t i = 0; i < t; i++)
                if (colS(m, t, i) != NOCOL && p->mem[i]) {
                    c[n] = colS(m, t, i);
                    v[n++] = -MEM(p->mem[i]);
                }
            st = mp__lp_add_row(m->lp, in, in, n, c, v, NULL);
            mp__dealloc(ctx, c);
            mp__dealloc(ctx, v);
            if (st)
                return st;
        }
        for (uint32_t k = 1; k <= t; k++) {
            uint32_t nf = n_fi(p, k - 1);
            uint32_t *c = mp__alloc(ctx, (nf + 3) * sizeof *c);
            double *v = mp__alloc(ctx, (nf + 3) * sizeof *v);
            if (!c || !v) {
                mp__dealloc(ctx, c);
                mp__dealloc(ctx, v);
                return MP_ERR_NOMEM;
            }
            uint32_t n = 0;
            c[n] = m->ub[t] + k;
            v[n++] = 1;
            c[n] = m->ub[t] + k - 1;
            v[n++] = -1;
            if (colR(m, t, k) != NOCOL) {
                c[n] = colR(m, t, k);
                v[n++] = -MEM(p->mem[k]);
            }
            uint32_t f0 = m->fb[m->pair[t] + k - 1];
            for (uint32_t j = 0; j < nf; j++) {
                uint32_t i = fi_at(p, k - 1, j);
                if (p->mem[i] && !p->out[i]) {
                    c[n] = f0 + j;
                    v[n++] = MEM(p->mem[i]);
                }
            }
            st = mp__lp_add_row(m->lp, 0, 0, n, c, v, NULL);
            mp__dealloc(ctx, c);
            mp__dealloc(ctx, v);
            if (st)
                return st;
        }
        /* FREE cuts */
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
                if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 0, r.n, r.c, r.v,
                                        NULL)))
                    return st;
                if (t + 1 < T && colS(m, t + 1, i) != NOCOL) {
                    r.n = 0;
                    rb_add(&r, fc, 1);
                    rb_add(&r, colS(m, t + 1, i), 1);
                    if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 1, r.n, r.c,
                                            r.v, NULL)))
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
                    if ((st = mp__lp_add_row(m->lp, -MP__LP_INF, 1, r.n, r.c,
                                            r.v, NULL)))
                        return st;
                }
            }
        }
        /* each value freed at most once per stage: sum over k of FREE */
        for (uint32_t i = 0; i <= t; i++) {
            if (p->out[i] || (i < t && colS(m, t, i) == NOCOL &&
                              colR(m, t, i) == NOCOL))
                continue;
            uint32_t cnt = 0;
            if (i <= t)
                cnt++; /* (i, i) */
            for (uint32_t q = p->use_begin[i]; q < p->use_begin[i + 1]; q++)
                if (p->uses[q] <= t)
                    cnt++;
            if (cnt < 2)
                continue;
            uint32_t *c = mp__alloc(ctx, cnt * sizeof *c);
            double *v = mp__alloc(ctx, cnt * sizeof *v);
            if (!c || !v) {
                mp__dealloc(ctx, c);
                mp__dealloc(ctx, v);
                return MP_ERR_NOMEM;
            }
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
            st = mp__lp_add_row(m->lp, -MP__LP_INF, 1, n, c, v, NULL);
            mp__dealloc(ctx, c);
            mp__dealloc(ctx, v);
            if (st)
                return st;
        }
    }
#undef MEM
    return MP_OK;
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
    const rm_prob *p = m->p;
    const mp_graph *g = p->g;
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
            uint32_t root = g->tensors[sp->index].root;
            uint32_t pr = g->tensors[root].producer;
            if (pr == MP_NONE)
                continue; /* a graph input */
            uint32_t u = p->pos[pr];
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

mp_status rm_checkmate(const rm_prob *p, uint64_t cap, int integer,
                       double time_limit, const rm_out *warm,
                       rm_cm_result *res, rm_try_fn try_fn, void *try_user)
{
    mp_ctx *ctx = p->ctx;
    mp_status st0 = cm_start(p, res, "Checkmate LP/MILP");
    if (st0)
        return st0;
    cm_model m;
    int lean = !integer && p->T > RM_CM_LEAN_ABOVE;
    mp_status st = cm_build(p, cap == UINT64_MAX ? (uint64_t)1 << 62 : cap,
                            integer, lean, &m);
    if (st) {
        cm_free(&m);
        return st;
    }
    res->n_cols = mp__lp_num_cols(m.lp);
    res->n_rows = mp__lp_num_rows(m.lp);
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    lo.time_limit = time_limit > 0 ? time_limit : 60;
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
        for (size_t i = 0; i < sizeof th / sizeof th[0] && !st; i++) {
            k.theta = integer ? 0.5 : th[i];
            rm_policy pol;
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

/* ---- the stage-boundary relaxation ------------------------------------------ */
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
    const rm_prob *p;
    const double *x;
    const uint32_t *k0, *kcol;
    double theta;
} sl_keep;

static int keep_k(void *user, uint32_t u, uint32_t t)
{
    const sl_keep *k = user;
    const rm_prob *p = k->p;
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

mp_status rm_stage_lp(const rm_prob *p, uint64_t cap, double time_limit,
                      rm_cm_result *res, rm_try_fn try_fn, void *try_user)
{
    mp_ctx *ctx = p->ctx;
    mp_status st0 = cm_start(p, res, "stage LP");
    if (st0)
        return st0;
    uint32_t T = p->T;
    size_t E = p->use_begin[T];
    /* per use slot q (use_begin order): column of K after that use and of
     * R at that use; kb[i]: K[i,0] */
    uint32_t *kcol = mp__alloc(ctx, (E + 1) * sizeof *kcol);
    uint32_t *rcol = mp__alloc(ctx, (E + 1) * sizeof *rcol);
    uint32_t *k0 = mp__alloc(ctx, ((size_t)T + 1) * sizeof *k0);
    double *crow = mp__alloc(ctx, ((size_t)T + 1) * sizeof *crow);
    uint8_t *isdep = mp__calloc(ctx, (size_t)T + 1, 1);
    uint32_t *c = mp__alloc(ctx, ((size_t)T + 2) * sizeof *c);
    double *v = mp__alloc(ctx, ((size_t)T + 2) * sizeof *v);
    mp__lp *lp = NULL;
    mp_status st = MP_OK;
    if (!kcol || !rcol || !k0 || !crow || !isdep || !c || !v) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp__lp_create(ctx, 0, &lp)))
        goto done;
    double mscale, cscale;
    cm_scales(p, &mscale, &cscale);
#define SMEM(x) ((double)(x) / mscale)
    /* columns and the two row families per value */
    for (uint32_t i = 0; i < T; i++) {
        k0[i] = NOCOL;
        uint32_t b = p->use_begin[i], e = p->use_begin[i + 1];
        for (uint32_t q = b; q < e; q++)
            kcol[q] = rcol[q] = NOCOL;
        if (p->out[i] || !p->mem[i] || b == e)
            continue; /* always resident, free, or never read */
        if ((st = mp__lp_add_col(lp, 0, 1, MP__LP_CONTINUOUS, 0, &k0[i])))
            goto done;
        uint32_t prev = k0[i];
        for (uint32_t q = b; q < e; q++) {
            if ((st = mp__lp_add_col(lp, 0, 1, MP__LP_CONTINUOUS,
                                    p->cost[i] / cscale, &rcol[q])))
                goto done;
            /* K[prev] + R >= 1 */
            uint32_t rc[3] = {prev, rcol[q], 0};
            double rv[3] = {1, 1, -1};
            if ((st = mp__lp_add_row(lp, 1, MP__LP_INF, 2, rc, rv, NULL)))
                goto done;
            if (q + 1 < e) {
                if ((st = mp__lp_add_col(lp, 0, 1, MP__LP_CONTINUOUS, 0,
                                        &kcol[q])))
                    goto done;
                /* K[next] - K[prev] - R <= 0 */
                rc[0] = kcol[q];
                rc[1] = prev;
                rc[2] = rcol[q];
                rv[0] = 1;
                rv[1] = -1;
                rv[2] = -1;
                if ((st = mp__lp_add_row(lp, -MP__LP_INF, 0, 3, rc, rv, NULL)))
                    goto done;
                prev = kcol[q];
            }
        }
    }
    /* memory rows: walk the stages, tracking each value's current K */
    uint32_t *curq = mp__alloc(ctx, ((size_t)T + 1) * sizeof *curq);
    if (!curq) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (uint32_t i = 0; i < T; i++)
        curq[i] = p->use_begin[i]; /* next use slot of i */
    double capd = (double)cap / mscale;
    double outs = 0;
    for (uint32_t t = 0; t < T && !st; t++) {
        double cst = SMEM(p->mem[t]);
        for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++) {
            uint32_t d = p->deps[j];
            isdep[d] = 1;
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
            if (k0[i] == NOCOL || curq[i] == e || isdep[i])
                continue;
            uint32_t col = curq[i] == p->use_begin[i] ? k0[i]
                                                      : kcol[curq[i] - 1];
            c[n] = col;
            v[n++] = SMEM(p->mem[i]);
        }
        for (uint32_t j = p->dep_begin[t]; j < p->dep_begin[t + 1]; j++)
            isdep[p->deps[j]] = 0;
        if (p->out[t])
            outs += SMEM(p->mem[t]);
        if (cst > capd * (1 + 1e-12)) {
            res->infeasible = 1; /* the stage alone exceeds the cap */
            break;
        }
        if (n)
            st = mp__lp_add_row(lp, -MP__LP_INF, capd - cst, n, c, v, NULL);
    }
#undef SMEM
    mp__dealloc(ctx, curq);
    if (st || res->infeasible)
        goto done;
    res->n_cols = mp__lp_num_cols(lp);
    res->n_rows = mp__lp_num_rows(lp);
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    lo.time_limit = time_limit > 0 ? time_limit : 60;
    lo.relax = 1;
    lo.method = MP__LP_DUAL;
    mp__lp_result lr;
    if ((st = mp__lp_solve(lp, &lo, &lr)))
        goto done;
    res->status = lr.status;
    res->seconds = lr.seconds;
    if (lr.status == MP_SOLVE_INFEASIBLE)
        res->infeasible = 1;
    else if (isfinite(lr.dual_bound)) {
        res->lower_bound = fmax(0, lr.dual_bound) * cscale * (1 - 1e-7);
        res->bound_kind = MP_REMAT_BOUND_STAGE_LP;
    }
    /* rounding, as for Checkmate's LP: keep a value across a boundary
     * when its K is at least a threshold; the replay recomputes the rest
     * (with eviction as a repair) */
    const double *x = mp__lp_values(lp);
    if (x && try_fn && lr.status == MP_SOLVE_OPTIMAL) {
        static const double th[] = {0.5, 0.1, 0.3, 0.7, 0.9, 0.999};
        sl_keep k = {p, x, k0, kcol, 0};
        for (size_t i = 0; i < sizeof th / sizeof th[0] && !st; i++) {
            k.theta = th[i];
            rm_policy pol;
            memset(&pol, 0, sizeof pol);
            pol.keep = keep_k;
            pol.user = &k;
            st = try_fn(try_user, "stage-lp-rounding", &pol);
            if (!st && cap != UINT64_MAX) {
                pol.evict_cap = cap;
                st = try_fn(try_user, "stage-lp-rounding+evict", &pol);
            }
        }
    }
done:
    mp__dealloc(ctx, kcol);
    mp__dealloc(ctx, rcol);
    mp__dealloc(ctx, k0);
    mp__dealloc(ctx, crow);
    mp__dealloc(ctx, isdep);
    mp__dealloc(ctx, c);
    mp__dealloc(ctx, v);
    mp__lp_destroy(lp);
    return st;
}
