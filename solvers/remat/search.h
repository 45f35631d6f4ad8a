/* solvers/remat/search.h - the recompute search (solvers/remat/search.c):
 * a problem and the options in, the best schedule out, with its lower
 * bound and status. It runs the heuristics and Checkmate's models that
 * the options ask for and keeps the cheapest schedule within the budget.
 * Internal, not installed. */
#ifndef MP__REMAT_SEARCH_H
#define MP__REMAT_SEARCH_H

#include "model.h"

typedef struct mp__remat_solution {
    mp__remat_out best;       /* the best schedule's replay; steps: the
                               * caller's (context allocator); none on
                               * failure */
    /* its figures as mp_remat_plan reports them: solver, status (OPTIMAL
     * when the cost meets the bound, FEASIBLE, INFEASIBLE or TIMEOUT),
     * peak_bytes (the replay's live peak, or the smallest one found when
     * none fits, with the persistent bytes), extra cost, FLOPs and
     * recomputes, the bounds, the base and smallest peaks, base_cost;
     * seconds and min_placed_peak_bytes are the driver's (0) */
    mp_remat_result fig;
} mp__remat_solution;

/* The best schedule for p under ro (solver, budget on the peak with the
 * persistent bytes, cost cap, time limit, Checkmate's semantics).
 * MP_ERR_INFEASIBLE when none fits and MP_ERR_TIMEOUT when the model
 * asked for gave no solution in the time limit, each with a message and
 * sol->fig (status INFEASIBLE / TIMEOUT). */
mp_status mp__remat_search(const mp__remat_prob *p,
                           const mp_remat_options *ro,
                           mp__remat_solution *sol);

#endif /* MP__REMAT_SEARCH_H */
