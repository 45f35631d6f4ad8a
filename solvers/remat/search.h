/* solvers/remat/search.h - the recompute search (solvers/remat/search.c):
 * a problem and the options in, the best schedule out, with its lower
 * bound and status. It runs the heuristics and Checkmate's models that
 * the options ask for and keeps the cheapest schedule within the budget.
 * Internal, not installed. */
#ifndef MP__REMAT_SEARCH_H
#define MP__REMAT_SEARCH_H

#include "model.h"

typedef struct mp__remat_solution {
    const char *solver;       /* what found best; NULL: nothing fits */
    mp__remat_out best;       /* its replay; steps: the caller's (context
                               * allocator), also on failure */
    mp_solve_status status;   /* OPTIMAL (the cost meets the bound),
                               * FEASIBLE, INFEASIBLE or TIMEOUT */
    /* bytes at peak, the problem's persistent bytes included */
    uint64_t base_peak_bytes;  /* without recompute */
    uint64_t peak_lower_bound; /* no schedule in this order peaks lower */
    uint64_t min_peak_bytes;   /* smallest peak of any replay; 0: none */
    double lower_bound;        /* on the extra cost; < 0: none */
    int lower_bound_kind;      /* MP_REMAT_BOUND_* of lower_bound */
} mp__remat_solution;

/* The best schedule for p under ro (solver, budget on the peak with the
 * persistent bytes, cost cap, time limit, Checkmate's semantics).
 * MP_ERR_INFEASIBLE when none fits and MP_ERR_TIMEOUT when the model
 * asked for gave no solution in the time limit, each with a message and
 * sol's figures (status INFEASIBLE / TIMEOUT). */
mp_status mp__remat_search(const mp__remat_prob *p,
                           const mp_remat_options *ro,
                           mp__remat_solution *sol);

#endif /* MP__REMAT_SEARCH_H */
