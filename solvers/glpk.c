/* The GLPK wrapper (see mp__glpk.h for the contract).
 *
 * The problem lives in memplan's memory; a glp_prob exists only inside
 * mp__lp_solve, in a region guarded by glp_error_hook + setjmp. On a GLPK
 * error the hook longjmps back, glp_free_env() releases every GLPK object
 * (the glp_prob included: it must not be touched again) and the call
 * returns MP_ERR_INTERNAL with GLPK's message. The state the hook and the
 * callbacks touch lives in a heap block (not in automatic variables of the
 * function that calls setjmp), so nothing is indeterminate after longjmp.
 */
#include "mp_glpk.h"

#include <float.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#ifdef MP_WITH_GLPK
#include <glpk.h>
#endif

typedef struct lp_ent {
    uint32_t r, c;
    size_t seq; /* insertion order: duplicates are summed in this order */
    double v;
} lp_ent;

struct mp__lp {
    mp_ctx *ctx;
    int maximize;
    double obj0;
    uint32_t ncols, nrows;
    size_t ccap, rcap, nnz, ecap;
    double *clo, *chi, *cobj;
    unsigned char *ckind;
    double *rlo, *rhi;
    lp_ent *ent;
    double *x;
    int has_x;
};

int mp__glpk_available(void)
{
#ifdef MP_WITH_GLPK
    return 1;
#else
    return 0;
#endif
}

mp_status mp__lp_create(mp_ctx *ctx, int maximize, mp__lp **out)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    if (!out)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "lp: out is NULL");
    *out = NULL;
    mp__lp *lp = mp__calloc(ctx, 1, sizeof *lp);
    if (!lp)
        return MP_ERR_NOMEM;
    lp->ctx = ctx;
    lp->maximize = maximize != 0;
    *out = lp;
    return MP_OK;
}

void mp__lp_destroy(mp__lp *lp)
{
    if (!lp)
        return;
    mp_ctx *ctx = lp->ctx;
    mp__dealloc(ctx, lp->clo);
    mp__dealloc(ctx, lp->chi);
    mp__dealloc(ctx, lp->cobj);
    mp__dealloc(ctx, lp->ckind);
    mp__dealloc(ctx, lp->rlo);
    mp__dealloc(ctx, lp->rhi);
    mp__dealloc(ctx, lp->ent);
    mp__dealloc(ctx, lp->x);
    mp__dealloc(ctx, lp);
}

static int bad_bounds(double lo, double hi)
{
    return isnan(lo) || isnan(hi) || lo > hi || lo == MP__LP_INF ||
           hi == -MP__LP_INF;
}

mp_status mp__lp_add_col(mp__lp *lp, double lo, double hi, mp__lp_kind kind,
                        double obj, uint32_t *idx)
{
    if (!lp)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = lp->ctx;
    if (kind == MP__LP_BINARY) {
        lo = 0;
        hi = 1;
    }
    if (bad_bounds(lo, hi) || !isfinite(obj) ||
        (kind != MP__LP_CONTINUOUS && kind != MP__LP_INTEGER &&
         kind != MP__LP_BINARY))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "lp: column %u: invalid bounds [%g, %g], kind or "
                      "objective",
                      lp->ncols, lo, hi);
    if (lp->ncols >= (uint32_t)INT32_MAX - 1)
        return mp__err(ctx, MP_ERR_OVERFLOW, "lp: too many columns");
    size_t need = (size_t)lp->ncols + 1, cap = lp->ccap;
    if (need > cap) {
        size_t c1 = cap, c2 = cap, c3 = cap, c4 = cap;
        if (mp__grow(ctx, (void **)&lp->clo, sizeof *lp->clo, need, &c1) ||
            mp__grow(ctx, (void **)&lp->chi, sizeof *lp->chi, need, &c2) ||
            mp__grow(ctx, (void **)&lp->cobj, sizeof *lp->cobj, need, &c3) ||
            mp__grow(ctx, (void **)&lp->ckind, sizeof *lp->ckind, need, &c4))
            return MP_ERR_NOMEM;
        /* keep the smallest: every array holds at least that many */
        size_t m = c1;
        if (c2 < m) m = c2;
        if (c3 < m) m = c3;
        if (c4 < m) m = c4;
        lp->ccap = m;
    }
    lp->clo[lp->ncols] = lo;
    lp->chi[lp->ncols] = hi;
    lp->cobj[lp->ncols] = obj;
    lp->ckind[lp->ncols] = (unsigned char)kind;
    if (idx)
        *idx = lp->ncols;
    lp->ncols++;
    lp->has_x = 0;
    return MP_OK;
}

mp_status mp__lp_add_coef(mp__lp *lp, uint32_t row, uint32_t col, double v)
{
    if (!lp)
        return MP_ERR_INVALID_ARG;
    if (row >= lp->nrows || col >= lp->ncols || !isfinite(v))
        return mp__err(lp->ctx, MP_ERR_INVALID_ARG,
                      "lp: coefficient (%u, %u) = %g out of range", row, col,
                      v);
    if (mp__grow(lp->ctx, (void **)&lp->ent, sizeof *lp->ent, lp->nnz + 1,
                &lp->ecap))
        return MP_ERR_NOMEM;
    lp->ent[lp->nnz] = (lp_ent){row, col, lp->nnz, v};
    lp->nnz++;
    return MP_OK;
}

mp_status mp__lp_add_row(mp__lp *lp, double lo, double hi, uint32_t nnz,
                        const uint32_t *cols, const double *vals,
                        uint32_t *idx)
{
    if (!lp)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = lp->ctx;
    if (bad_bounds(lo, hi) || (nnz && (!cols || !vals)))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "lp: row %u: invalid bounds [%g, %g] or terms",
                      lp->nrows, lo, hi);
    if (lp->nrows >= (uint32_t)INT32_MAX - 1)
        return mp__err(ctx, MP_ERR_OVERFLOW, "lp: too many rows");
    size_t need = (size_t)lp->nrows + 1, cap = lp->rcap;
    if (need > cap) {
        size_t c1 = cap, c2 = cap;
        if (mp__grow(ctx, (void **)&lp->rlo, sizeof *lp->rlo, need, &c1) ||
            mp__grow(ctx, (void **)&lp->rhi, sizeof *lp->rhi, need, &c2))
            return MP_ERR_NOMEM;
        lp->rcap = c1 < c2 ? c1 : c2;
    }
    uint32_t r = lp->nrows;
    lp->rlo[r] = lo;
    lp->rhi[r] = hi;
    lp->nrows++;
    for (uint32_t k = 0; k < nnz; k++) {
        mp_status st = mp__lp_add_coef(lp, r, cols[k], vals[k]);
        if (st != MP_OK) {
            /* undo the row */
            while (lp->nnz && lp->ent[lp->nnz - 1].r == r)
                lp->nnz--;
            lp->nrows--;
            return st;
        }
    }
    if (idx)
        *idx = r;
    lp->has_x = 0;
    return MP_OK;
}

void mp__lp_set_obj_const(mp__lp *lp, double c)
{
    if (lp && isfinite(c))
        lp->obj0 = c;
}

uint32_t mp__lp_num_cols(const mp__lp *lp)
{
    return lp ? lp->ncols : 0;
}

uint32_t mp__lp_num_rows(const mp__lp *lp)
{
    return lp ? lp->nrows : 0;
}

void mp__lp_options_init(mp__lp_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

const double *mp__lp_values(const mp__lp *lp)
{
    return lp && lp->has_x ? lp->x : NULL;
}

/* ---- helpers that need no GLPK --------------------------------------------- */

static int cmp_ent(const void *a, const void *b)
{
    const lp_ent *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the entries by (row, col) and sums duplicates; zero sums dropped.
 * Returns the number of distinct entries (compacted in place). */
static size_t merge_entries(mp__lp *lp)
{
    if (lp->nnz > 1)
        qsort(lp->ent, lp->nnz, sizeof *lp->ent, cmp_ent);
    size_t k = 0;
    for (size_t i = 0; i < lp->nnz;) {
        lp_ent e = lp->ent[i];
        size_t j = i + 1;
        for (; j < lp->nnz && lp->ent[j].r == e.r && lp->ent[j].c == e.c; j++)
            e.v += lp->ent[j].v;
        if (e.v != 0) {
            e.seq = k;
            lp->ent[k++] = e;
        }
        i = j;
    }
    lp->nnz = k;
    return k;
}

static double tol_of(double b)
{
    return 1e-6 * (1.0 + fabs(b));
}

/* Objective of x, or NAN when x violates a bound, an integrality or a row
 * (entries must be merged and sorted by row). */
static double check_point(const mp__lp *lp, const double *x)
{
    double obj = lp->obj0;
    for (uint32_t j = 0; j < lp->ncols; j++) {
        double v = x[j];
        if (!isfinite(v) || v < lp->clo[j] - tol_of(lp->clo[j]) ||
            v > lp->chi[j] + tol_of(lp->chi[j]))
            return NAN;
        if (lp->ckind[j] != MP__LP_CONTINUOUS && fabs(v - nearbyint(v)) > 1e-6)
            return NAN;
        obj += lp->cobj[j] * v;
    }
    size_t k = 0;
    for (uint32_t r = 0; r < lp->nrows; r++) {
        double s = 0;
        for (; k < lp->nnz && lp->ent[k].r == r; k++)
            s += lp->ent[k].v * x[lp->ent[k].c];
        if (s < lp->rlo[r] - tol_of(lp->rlo[r]) ||
            s > lp->rhi[r] + tol_of(lp->rhi[r]))
            return NAN;
    }
    return obj;
}

/* Weak-duality bound from row duals y (0-based, GLPK's signs): the signs
 * are fixed to the row's finite sides, then sum_i y_i b_i + obj0 + sum_j
 * min over [lo_j, hi_j] of d_j x_j with d_j = c_j - sum_i a_ij y_i. Valid
 * for any y; a lower bound for a minimization, an upper one for a
 * maximization (computed on -c). Entries must be merged. y is rewritten
 * (signs fixed). */
static double dual_bound_of(const mp__lp *lp, double *y)
{
    double sg = lp->maximize ? -1.0 : 1.0;
    long double b = (long double)(sg * lp->obj0);
    long double *d = mp__alloc(lp->ctx, ((size_t)lp->ncols + 1) * sizeof *d);
    if (!d)
        return sg * -MP__LP_INF;
    for (uint32_t j = 0; j < lp->ncols; j++)
        d[j] = (long double)(sg * lp->cobj[j]);
    for (uint32_t r = 0; r < lp->nrows; r++) {
        double v = sg * y[r];
        if (!isfinite(v) || (v > 0 && !isfinite(lp->rlo[r])) ||
            (v < 0 && !isfinite(lp->rhi[r])))
            v = 0;
        y[r] = v;
        if (v > 0)
            b += (long double)v * lp->rlo[r];
        else if (v < 0)
            b += (long double)v * lp->rhi[r];
    }
    for (size_t k = 0; k < lp->nnz; k++)
        d[lp->ent[k].c] -= (long double)lp->ent[k].v * y[lp->ent[k].r];
    int ok = 1;
    for (uint32_t j = 0; j < lp->ncols && ok; j++) {
        /* rounding noise on an unbounded side (no such column in a boxed
         * model, where the bound is exact up to summation error) */
        if (fabsl(d[j]) <= 1e-9L * (1 + fabs(lp->cobj[j])) &&
            (d[j] > 0 ? !isfinite(lp->clo[j]) : !isfinite(lp->chi[j])))
            d[j] = 0;
        if (d[j] > 0) {
            if (isfinite(lp->clo[j]))
                b += d[j] * lp->clo[j];
            else
                ok = 0;
        } else if (d[j] < 0) {
            if (isfinite(lp->chi[j]))
                b += d[j] * lp->chi[j];
            else
                ok = 0;
        }
    }
    mp__dealloc(lp->ctx, d);
    return ok ? sg * (double)b : sg * -MP__LP_INF;
}

#ifndef MP_WITH_GLPK

mp_status mp__lp_solve(mp__lp *lp, const mp__lp_options *opt, mp__lp_result *res)
{
    (void)opt;
    if (!lp)
        return MP_ERR_INVALID_ARG;
    if (res)
        memset(res, 0, sizeof *res);
    (void)merge_entries;
    (void)check_point;
    (void)dual_bound_of;
    return mp__err(lp->ctx, MP_ERR_UNSUPPORTED,
                  "lp: memplan was built without GLPK "
                  "(configure with -DMEMPLAN_WITH_GLPK=ON)");
}

#else /* MP_WITH_GLPK */

#define TERM_MAX 512

/* State shared with the GLPK hooks and callbacks (heap: survives longjmp
 * with defined values). */
typedef struct guard {
    jmp_buf jb;
    char term[TERM_MAX]; /* last GLPK output (error text) */
    size_t term_len;
    const mp__lp *lp;
    double *warm1;       /* 1-based warm start for glp_ios_heur_sol */
    int warm_tried, warm_accepted;
    int minimize;
    double bound;        /* best bound seen in the search tree */
    int have_bound;
    /* the job */
    mp__lp *job;
    const mp__lp_options *opt;
    mp__lp_result *res;
    int *idx;
    double *val;
    double deadline, warm_obj;
    int warm_ok;
    double *ydual; /* nrows row duals (LP only) */
    /* the context has a progress callback: the simplex writes its display
     * lines to on_term every half second, which reports progress (the
     * algorithm is the same either way) */
    int display;
} guard;

static void on_error(void *info)
{
    guard *g = info;
    longjmp(g->jb, 1);
}

/* A line of GLPK's normal display, not an error: errors start with the
 * routine ("glp_simplex: ..."), "Error" or "Assertion". */
static int display_line(const char *s)
{
    return strncmp(s, "glp", 3) != 0 && strncmp(s, "Error", 5) != 0 &&
           strncmp(s, "Assertion", 9) != 0;
}

static int on_term(void *info, const char *s)
{
    guard *g = info;
    if (g->display && display_line(s)) {
        mp__progress_tick(g->job->ctx);
        return 1; /* suppressed, not kept */
    }
    size_t n = strlen(s);
    if (n >= TERM_MAX)
        s += n - (TERM_MAX - 1), n = TERM_MAX - 1;
    if (g->term_len + n >= TERM_MAX)
        g->term_len = 0; /* keep the latest message */
    memcpy(g->term + g->term_len, s, n);
    g->term_len += n;
    g->term[g->term_len] = 0;
    return 1; /* suppress the output */
}

static void on_tree(glp_tree *T, void *info)
{
    guard *g = info;
    int p = glp_ios_best_node(T);
    if (p) {
        /* the best active node's bound only tightens; GLPK reports
         * +-DBL_MAX for nodes whose LP is not solved yet */
        double b = glp_ios_node_bound(T, p);
        if (isfinite(b) && fabs(b) < DBL_MAX / 2 &&
            (!g->have_bound || (g->minimize ? b > g->bound : b < g->bound))) {
            g->bound = b;
            g->have_bound = 1;
        }
    }
    if (glp_ios_reason(T) == GLP_IHEUR && g->warm1 && !g->warm_tried) {
        g->warm_tried = 1;
        g->warm_accepted = glp_ios_heur_sol(T, g->warm1) == 0;
    }
    mp__progress_tick(g->job->ctx);
    if (g->opt->node_limit && glp_ios_reason(T) == GLP_ISELECT) {
        int total = 0;
        glp_ios_tree_size(T, NULL, NULL, &total);
        if ((uint64_t)total >= g->opt->node_limit)
            glp_ios_terminate(T); /* glp_intopt returns GLP_ESTOP */
    }
}

static int glp_bnd_type(double lo, double hi)
{
    int fl = isfinite(lo), fh = isfinite(hi);
    if (!fl && !fh)
        return GLP_FR;
    if (fl && !fh)
        return GLP_LO;
    if (!fl)
        return GLP_UP;
    return lo == hi ? GLP_FX : GLP_DB;
}

/* GLPK's uninterruptible start (load and first factorization) in units
 * of the time merge_entries took on the same coefficients */
#define MP__LP_START_COST 12.0

static int ms_left(double deadline)
{
    if (!(deadline < DBL_MAX))
        return INT32_MAX;
    double left = (deadline - mp__now_seconds()) * 1000.0;
    if (left < 1)
        return 1;
    if (left > (double)INT32_MAX)
        return INT32_MAX;
    return (int)left;
}

/* The problem as a glp_prob: bounds, objective, column kinds (integral
 * unless relaxed: *mip), the merged matrix. */
static glp_prob *load_problem(guard *g, int *mip)
{
    mp__lp *lp = g->job;
    int *idx = g->idx;
    double *val = g->val;
    glp_prob *P = glp_create_prob();
    glp_set_obj_dir(P, lp->maximize ? GLP_MAX : GLP_MIN);
    glp_set_obj_coef(P, 0, lp->obj0);
    if (lp->nrows)
        glp_add_rows(P, (int)lp->nrows);
    if (lp->ncols)
        glp_add_cols(P, (int)lp->ncols);
    for (uint32_t r = 0; r < lp->nrows; r++) {
        double lo = lp->rlo[r], hi = lp->rhi[r];
        glp_set_row_bnds(P, (int)r + 1, glp_bnd_type(lo, hi),
                         isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 0);
    }
    for (uint32_t j = 0; j < lp->ncols; j++) {
        double lo = lp->clo[j], hi = lp->chi[j];
        int c = (int)j + 1;
        glp_set_col_bnds(P, c, glp_bnd_type(lo, hi), isfinite(lo) ? lo : 0,
                         isfinite(hi) ? hi : 0);
        glp_set_obj_coef(P, c, lp->cobj[j]);
        if (lp->ckind[j] != MP__LP_CONTINUOUS && !g->opt->relax) {
            glp_set_col_kind(P, c, lp->ckind[j] == MP__LP_BINARY ? GLP_BV
                                                                : GLP_IV);
            *mip = 1;
        }
    }
    /* entries are merged: no duplicate (i, j); GLPK arrays are 1-based */
    for (size_t k = 0; k < lp->nnz; k++) {
        idx[k + 1] = (int)lp->ent[k].r + 1;
        idx[lp->nnz + k + 1] = (int)lp->ent[k].c + 1;
        val[k + 1] = lp->ent[k].v;
    }
    if (lp->nnz)
        glp_load_matrix(P, (int)lp->nnz, idx, idx + lp->nnz, val);
    if (g->opt->fault_injection)
        glp_set_col_bnds(P, (int)lp->ncols + 7, GLP_FX, 0, 0); /* misuse */
    return P;
}

/* The simplex (presolve off, within the time and iteration limits);
 * glp_simplex's return code. */
static int run_simplex(guard *g, glp_prob *P)
{
    const mp__lp_options *opt = g->opt;
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = g->display ? GLP_MSG_ON : GLP_MSG_OFF;
    sp.out_frq = 500;
    sp.presolve = GLP_OFF;
    sp.tm_lim = ms_left(g->deadline);
    if (opt->iteration_limit)
        sp.it_lim = opt->iteration_limit > INT32_MAX
                        ? INT32_MAX : (int)opt->iteration_limit;
    if (opt->method == MP__LP_DUAL)
        sp.meth = GLP_DUALP;
    return glp_simplex(P, &sp);
}

/* An LP (no integral column): the outcome of the simplex, which returned
 * ret with primal status lst. */
static void lp_outcome(guard *g, glp_prob *P, int ret, int lst)
{
    mp__lp *lp = g->job;
    mp__lp_result *res = g->res;
    int dst = glp_get_dual_stat(P);
    double lpobj = glp_get_obj_val(P);
    /* GLPK keeps the last basis and its duals whatever the return */
    if (g->ydual && lst != GLP_UNDEF) {
        for (uint32_t r = 0; r < lp->nrows; r++)
            g->ydual[r] = glp_get_row_dual(P, (int)r + 1);
        res->dual_bound = dual_bound_of(lp, g->ydual);
    }
    if (ret == 0 && lst == GLP_OPT) {
        res->status = MP_SOLVE_OPTIMAL;
        res->has_solution = 1;
        res->objective = lpobj;
        res->bound = lpobj;
        for (uint32_t j = 0; j < lp->ncols; j++)
            lp->x[j] = glp_get_col_prim(P, (int)j + 1);
    } else if (lst == GLP_NOFEAS) {
        res->status = MP_SOLVE_INFEASIBLE;
    } else if (lst == GLP_UNBND || (ret == 0 && dst == GLP_NOFEAS &&
                                    lst == GLP_FEAS)) {
        res->status = MP_SOLVE_NONE;
        res->unbounded = 1;
    } else if (ret == GLP_ETMLIM || ret == GLP_EITLIM) {
        res->status = MP_SOLVE_TIMEOUT;
    } else {
        res->status = MP_SOLVE_NONE;
    }
}

/* The solution is the (feasible) warm start. */
static void take_warm_start(guard *g)
{
    mp__lp *lp = g->job;
    memcpy(lp->x, g->opt->warm_start, (size_t)lp->ncols * sizeof *lp->x);
    g->res->has_solution = 1;
    g->res->from_warm_start = 1;
    g->res->objective = g->warm_obj;
}

/* A MIP whose root LP is not optimal (the search needs it: presolve
 * off, as glp_ios_heur_sol requires): infeasible, unbounded, or the
 * warm start when there is one. */
static void mip_root_outcome(guard *g, int ret, int lst)
{
    mp__lp_result *res = g->res;
    if (lst == GLP_NOFEAS) {
        res->status = MP_SOLVE_INFEASIBLE;
    } else if (lst == GLP_UNBND) {
        res->status = MP_SOLVE_NONE;
        res->unbounded = 1;
    } else if (g->warm_ok) {
        res->status = MP_SOLVE_FEASIBLE;
    } else {
        res->status = ret == GLP_ETMLIM || ret == GLP_EITLIM
                          ? MP_SOLVE_TIMEOUT
                          : MP_SOLVE_NONE;
    }
    if (g->warm_ok)
        take_warm_start(g);
}

/* The outcome of the branch and bound, which returned ret. */
static void mip_outcome(guard *g, glp_prob *P, int ret)
{
    mp__lp *lp = g->job;
    mp__lp_result *res = g->res;
    double warm_obj = g->warm_obj;
    int mst = glp_mip_status(P);
    if (mst == GLP_OPT || mst == GLP_FEAS) {
        double obj = glp_mip_obj_val(P);
        /* an incumbent GLPK did not improve on stays the warm start */
        if (g->warm_ok && !(lp->maximize ? obj > warm_obj + tol_of(warm_obj)
                                         : obj < warm_obj - tol_of(warm_obj))) {
            take_warm_start(g);
        } else {
            for (uint32_t j = 0; j < lp->ncols; j++)
                lp->x[j] = glp_mip_col_val(P, (int)j + 1);
            res->objective = obj;
        }
        res->has_solution = 1;
        if (mst == GLP_OPT && ret == 0) {
            res->status = MP_SOLVE_OPTIMAL;
            res->bound = res->objective;
        } else {
            res->status = MP_SOLVE_FEASIBLE;
        }
    } else if (mst == GLP_NOFEAS && ret == 0) {
        res->status = MP_SOLVE_INFEASIBLE;
    } else if (g->warm_ok) {
        take_warm_start(g);
        res->status = MP_SOLVE_FEASIBLE;
    } else {
        res->status = ret == GLP_ETMLIM || ret == GLP_ESTOP ? MP_SOLVE_TIMEOUT
                                                            : MP_SOLVE_NONE;
    }
}

/* Branch and bound from the optimal root LP (objective lpobj, the first
 * bound); on_tree tightens the bound, offers the warm start and stops at
 * the node limit. */
static void run_intopt(guard *g, glp_prob *P, double lpobj)
{
    mp__lp *lp = g->job;
    mp__lp_result *res = g->res;
    g->bound = lpobj;
    g->have_bound = 1;
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = GLP_MSG_OFF;
    ip.presolve = GLP_OFF;
    ip.tm_lim = ms_left(g->deadline);
    ip.mip_gap = g->opt->mip_gap > 0 ? g->opt->mip_gap : 0;
    ip.cb_func = on_tree;
    ip.cb_info = g;
    mip_outcome(g, P, glp_intopt(P, &ip));
    if (res->status != MP_SOLVE_OPTIMAL && res->status != MP_SOLVE_INFEASIBLE
        && g->have_bound) {
        double b = g->bound;
        /* GLPK's node bounds are for the search; never report a bound on
         * the wrong side of the incumbent */
        if (res->has_solution)
            b = lp->maximize ? fmax(b, res->objective)
                             : fmin(b, res->objective);
        res->bound = b;
    }
}

/* Builds and solves; every GLPK call of memplan happens here, under the
 * error hook. Writes the outcome to res and lp->x. */
static void run_glpk(guard *g)
{
    int mip = 0;
    glp_prob *P = load_problem(g, &mip);
    int ret = run_simplex(g, P);
    int lst = glp_get_status(P);
    g->res->bound = g->job->maximize ? MP__LP_INF : -MP__LP_INF;
    if (!mip)
        lp_outcome(g, P, ret, lst);
    else if (ret != 0 || lst != GLP_OPT)
        mip_root_outcome(g, ret, lst);
    else
        run_intopt(g, P, glp_get_obj_val(P));
    glp_delete_prob(P);
}

/* Runs run_glpk under the error hook; 1 when GLPK failed (longjmp). Only
 * g (never modified here) is used after setjmp returns. */
static int guarded_run(guard *g)
{
    glp_term_out(g->display ? GLP_ON : GLP_OFF);
    glp_term_hook(on_term, g);
    glp_error_hook(on_error, g);
    if (setjmp(g->jb) != 0)
        return 1;
    run_glpk(g);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    return 0;
}

mp_status mp__lp_solve(mp__lp *lp, const mp__lp_options *opt, mp__lp_result *res)
{
    if (!lp)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = lp->ctx;
    if (!res)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "lp: result is NULL");
    mp__lp_options dflt;
    if (!opt) {
        mp__lp_options_init(&dflt);
        opt = &dflt;
    }
    memset(res, 0, sizeof *res);
    res->dual_bound = lp->maximize ? MP__LP_INF : -MP__LP_INF;
    double t0 = mp__now_seconds();
    double deadline = opt->time_limit > 0 ? t0 + opt->time_limit : DBL_MAX;
    if (lp->nnz > (size_t)INT32_MAX / 2)
        return mp__err(ctx, MP_ERR_OVERFLOW, "lp: too many coefficients");
    merge_entries(lp);
    lp->has_x = 0;
    /* GLPK cannot be stopped while it loads the matrix and factors the
     * first basis; on Checkmate's models that costs about 12 times the
     * merge above (a sort of the same entries: 0.6 s, then 2.8 s of
     * loading and 4.3 s before the simplex first looks at its limit, on
     * ResNet-50's 4.2M coefficients). When that would pass the deadline,
     * stop here (TIMEOUT, no bound) rather than overrun it. */
    if (deadline < DBL_MAX) {
        double now = mp__now_seconds();
        if (now + MP__LP_START_COST * (now - t0) > deadline) {
            res->status = MP_SOLVE_TIMEOUT;
            res->seconds = now - t0;
            return MP_OK;
        }
    }
    mp__dealloc(ctx, lp->x);
    lp->x = mp__calloc(ctx, (size_t)lp->ncols + 1, sizeof *lp->x);
    int *idx = mp__alloc(ctx, (2 * lp->nnz + 1) * sizeof *idx);
    double *val = mp__alloc(ctx, (lp->nnz + 1) * sizeof *val);
    guard *g = mp__calloc(ctx, 1, sizeof *g);
    double *warm1 = NULL;
    double *ydual = mp__alloc(ctx, ((size_t)lp->nrows + 1) * sizeof *ydual);
    if (opt->warm_start)
        warm1 = mp__alloc(ctx, ((size_t)lp->ncols + 1) * sizeof *warm1);
    mp_status st = MP_OK;
    if (!lp->x || !idx || !val || !g || !ydual ||
        (opt->warm_start && !warm1)) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    double warm_obj = 0;
    int warm_ok = 0;
    if (opt->warm_start && !opt->relax) {
        warm_obj = check_point(lp, opt->warm_start);
        warm_ok = !isnan(warm_obj);
        if (warm_ok) {
            warm1[0] = 0;
            memcpy(warm1 + 1, opt->warm_start,
                   (size_t)lp->ncols * sizeof *warm1);
            /* integral values exactly, as GLPK checks integrality */
            for (uint32_t j = 0; j < lp->ncols; j++)
                if (lp->ckind[j] != MP__LP_CONTINUOUS)
                    warm1[j + 1] = nearbyint(warm1[j + 1]);
            g->warm1 = warm1;
        }
    }
    g->lp = lp;
    g->minimize = !lp->maximize;
    g->job = lp;
    g->opt = opt;
    g->res = res;
    g->idx = idx;
    g->val = val;
    g->deadline = deadline;
    g->warm_obj = warm_obj;
    g->warm_ok = warm_ok;
    g->ydual = ydual;
    g->display = lp->ctx->progress.fn != NULL;
    int failed = guarded_run(g);
    /* both ways: release every GLPK object (after an error GLPK's state is
     * undefined and glp_free_env is the only way out) */
    glp_free_env();
    if (!failed) {
        lp->has_x = res->has_solution;
        res->seconds = mp__now_seconds() - t0;
    } else {
        size_t n = g->term_len;
        while (n && (g->term[n - 1] == '\n' || g->term[n - 1] == ' '))
            g->term[--n] = 0;
        memset(res, 0, sizeof *res);
        st = mp__err(ctx, MP_ERR_INTERNAL, "lp: GLPK error: %s",
                    n ? g->term : "(no message)");
    }
out:
    mp__dealloc(ctx, idx);
    mp__dealloc(ctx, val);
    mp__dealloc(ctx, g);
    mp__dealloc(ctx, warm1);
    mp__dealloc(ctx, ydual);
    return st;
}

#endif /* MP_WITH_GLPK */
