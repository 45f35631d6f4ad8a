/* The one GLPK wrapper of memplan (solvers/glpk.c).
 *
 * Every use of GLPK in memplan goes through this interface: the offsets
 * ILP tier, recompute and offload models. A problem is built in memplan's
 * own memory (context allocator, 0-based indices, duplicate (row, col)
 * entries summed) and handed to GLPK only inside mp__lp_solve, which
 *  - installs glp_error_hook with setjmp/longjmp recovery: a GLPK error
 *    (which would otherwise abort the process) becomes MP_ERR_INTERNAL with
 *    GLPK's message, after glp_free_env has released every GLPK object;
 *  - turns terminal output off (msg_lev GLP_MSG_OFF, glp_term_out off and
 *    a glp_term_hook that captures the text of error messages);
 *  - converts to GLPK's 1-based arrays and never loads a duplicate (i, j);
 *  - applies a time limit (tm_lim) and a relative MIP gap (mip_gap);
 *  - warm-starts a MIP from a caller's solution: presolve off, a prior
 *    glp_simplex, and glp_ios_heur_sol from the integer-search callback;
 *    if GLPK finds nothing better (or stops before its first callback) and
 *    the warm start is feasible, the warm start is the incumbent;
 *  - reads glp_get_status / glp_mip_status (a return of 0 from GLPK is not
 *    "optimal") and the best proven bound from the search tree;
 *  - releases GLPK's environment (glp_free_env) before returning, so no
 *    GLPK object outlives a call.
 *
 * THREADS: GLPK keeps one environment per thread at best (per process when
 * built without thread-local storage) and the error hook lives in it. Do
 * not call mp__lp_solve from two threads at once, and do not use GLPK
 * directly in the same thread while mp__lp_solve runs (it frees GLPK's
 * environment on return). memplan adds no global state of its own.
 *
 * Built without GLPK (MEMPLAN_WITH_GLPK=OFF, no MP_WITH_GLPK), problems can
 * still be built and mp__lp_solve returns MP_ERR_UNSUPPORTED.
 * GLPK is GPL-3: the option is off wherever that matters to the user. */
#ifndef MP__GLPK_H
#define MP__GLPK_H

#include "base.h"

#include <math.h>

/* 1 when memplan was built with GLPK. */
int mp__glpk_available(void);

typedef struct mp__lp mp__lp;

typedef enum mp__lp_kind {
    MP__LP_CONTINUOUS = 0,
    MP__LP_INTEGER = 1,
    MP__LP_BINARY = 2 /* integer in [0, 1] (the bounds given are ignored) */
} mp__lp_kind;

/* Infinite bound (use -MP__LP_INF for no lower bound). */
#define MP__LP_INF HUGE_VAL

mp_status mp__lp_create(mp_ctx *ctx, int maximize, mp__lp **out);
void mp__lp_destroy(mp__lp *lp);

/* Adds a column lo <= x <= hi (either may be infinite) with objective
 * coefficient obj; its 0-based index goes to *idx (may be NULL). */
mp_status mp__lp_add_col(mp__lp *lp, double lo, double hi, mp__lp_kind kind,
                        double obj, uint32_t *idx);
/* Adds a row lo <= sum_j a_j x_j <= hi with nnz terms (cols 0-based,
 * repeated columns summed); *idx gets its 0-based index (may be NULL). */
mp_status mp__lp_add_row(mp__lp *lp, double lo, double hi, uint32_t nnz,
                        const uint32_t *cols, const double *vals,
                        uint32_t *idx);
/* Adds coefficient v to entry (row, col) of the constraint matrix. */
mp_status mp__lp_add_coef(mp__lp *lp, uint32_t row, uint32_t col, double v);
void mp__lp_set_obj_const(mp__lp *lp, double c);
uint32_t mp__lp_num_cols(const mp__lp *lp);
uint32_t mp__lp_num_rows(const mp__lp *lp);

enum { MP__LP_PRIMAL = 0, MP__LP_DUAL = 1 };

typedef struct mp__lp_options {
    double time_limit;        /* seconds for the whole solve; <= 0: none */
    double mip_gap;           /* relative gap to stop at; 0: prove optimum */
    const double *warm_start; /* one value per column (0-based) or NULL */
    int relax;                /* solve the LP relaxation only */
    /* Simplex method: MP__LP_PRIMAL (default) or MP__LP_DUAL
     * (GLPK's dual simplex, falling back to the primal one; far faster on
     * the recompute LPs, whose dual stays feasible from the start). */
    int method;
    /* Deterministic limits (time_limit depends on the machine's speed):
     * simplex iterations of the LP (for a MIP, its root LP), and
     * branch-and-bound nodes: the search stops once GLPK's tree has
     * created this many (FEASIBLE with the incumbent, else TIMEOUT).
     * 0: none. */
    uint32_t iteration_limit;
    uint64_t node_limit;
    /* Tests only: make an invalid GLPK call inside the guarded region, to
     * exercise the error-hook recovery. Always 0 in real use. */
    int fault_injection;
} mp__lp_options;
void mp__lp_options_init(mp__lp_options *o);

typedef struct mp__lp_result {
    /* OPTIMAL: proven optimal; FEASIBLE: an incumbent, the search stopped
     * (time limit or mip_gap reached: see bound); INFEASIBLE; TIMEOUT: time ran out with no
     * solution (or an iteration or node limit was reached); NONE: unbounded or undecided (see `unbounded`). */
    mp_solve_status status;
    int has_solution;     /* mp__lp_values() holds a feasible solution */
    int unbounded;
    int from_warm_start;  /* the incumbent is the caller's warm start */
    double objective;     /* of the solution (when has_solution) */
    double bound;         /* best proven bound on the optimum (min: lower,
                             max: upper); +-MP__LP_INF when none */
    double seconds;
    /* LP (no integer column, or relax): a certified lower bound (upper for
     * a maximization) on the LP optimum from GLPK's row duals at the end
     * of the simplex, whatever its status (time limit included): weak
     * duality with the duals' signs fixed and the exact reduced costs of
     * memplan's copy of the problem, sum_i y_i b_i + sum_j min over the
     * column's box of d_j x_j, in long double. Valid for any duals when
     * every column with a reduced cost of the wrong sign is bounded on
     * that side (a reduced cost within 1e-9 (1 + |c_j|) of zero on an
     * unbounded side is taken as zero); -MP__LP_INF (+MP__LP_INF) when
     * none. */
    double dual_bound;
} mp__lp_result;

/* Solves the problem. MP_OK whenever GLPK ran to an answer, whatever the
 * status (infeasible and time-outs are statuses, not errors). Errors:
 * MP_ERR_UNSUPPORTED without GLPK, MP_ERR_INVALID_ARG, MP_ERR_NOMEM,
 * MP_ERR_INTERNAL when GLPK reported an error (recovered; its message is
 * in the context). */
mp_status mp__lp_solve(mp__lp *lp, const mp__lp_options *opt, mp__lp_result *res);
/* The column values of the last solution (num_cols entries, 0-based), or
 * NULL when there is none. Valid until the next solve or destroy. */
const double *mp__lp_values(const mp__lp *lp);

#endif
