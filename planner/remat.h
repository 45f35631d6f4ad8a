/* planner/remat.h - the recompute problem of a graph, as the driver
 * (planner/remat.c) builds it for the solvers of solvers/remat/.
 * Internal, not installed. */
#ifndef MP__PLANNER_REMAT_H
#define MP__PLANNER_REMAT_H

#include "ir.h"
#include "model.h"

/* One unit per node of the finalized graph g, in its topological order;
 * unit memory aligned to alignment (0: 1). The problem borrows g's node
 * names; free it with mp__remat_prob_free (also cleared on failure). */
mp_status mp__remat_prob_build(const mp_graph *g, uint64_t alignment,
                               mp__remat_prob *p);

#endif /* MP__PLANNER_REMAT_H */
