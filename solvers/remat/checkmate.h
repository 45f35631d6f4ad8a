/* solvers/remat/checkmate.h - Checkmate's recompute model on GLPK
 * (solvers/remat/checkmate.c): the LP relaxation with rounding, the MILP,
 * and the stage-boundary relaxation, each with its lower bound on the
 * extra cost. Internal, not installed. */
#ifndef MP__REMAT_CHECKMATE_H
#define MP__REMAT_CHECKMATE_H

#include "model.h"

typedef struct mp__remat_cm_result {
    mp_solve_status status;   /* of the LP/MILP solve */
    double lower_bound;       /* on the extra cost; < 0: none */
    double seconds;
    uint32_t n_cols, n_rows;
    int infeasible;           /* the model has no point within the cap */
    int bound_kind;           /* MP_REMAT_BOUND_* of lower_bound */
    int warm_mapped;          /* MILP: the warm start maps to a model point */
    int from_warm;            /* MILP: the incumbent is the warm start */
} mp__remat_cm_result;

/* Checkmate's model: LP relaxation (integer = 0) with rounding, or the
 * MILP (warm-started from warm's schedule when it has steps and maps to a
 * point of the model); every schedule found goes to try_fn.
 * MP_ERR_UNSUPPORTED without GLPK. */
mp_status mp__remat_checkmate(const mp__remat_prob *p, uint64_t cap,
                              int integer, double time_limit,
                              const mp__remat_out *warm,
                              mp__remat_cm_result *res,
                              mp__remat_try_fn try_fn, void *try_user);

/* The stage-boundary relaxation of Checkmate's model (O(edges) columns;
 * checkmate.c says why its LP value bounds every schedule in this order):
 * lower_bound and bound_kind MP_REMAT_BOUND_STAGE_LP, or infeasible; its
 * solution rounded (keep across a boundary when K >= threshold) goes to
 * try_fn when try_fn is not NULL. */
mp_status mp__remat_stage_lp(const mp__remat_prob *p, uint64_t cap,
                             double time_limit, mp__remat_cm_result *res,
                             mp__remat_try_fn try_fn, void *try_user);

#endif /* MP__REMAT_CHECKMATE_H */
