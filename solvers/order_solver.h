/* solvers/order_solver.h - the operator order search (solvers/order.c): a
 * graph in, a topological order out. Internal, not installed. */
#ifndef MP__ORDER_SOLVER_H
#define MP__ORDER_SOLVER_H

#include "ir.h"

/* A topological order of g's nodes (order: g->n_nodes entries) that
 * lowers the lower bound (max live arena bytes, in-place aware when
 * opt->inplace), as mp_order_solve documents. g is finalized; opt is not
 * NULL (alignment >= 1, reorder_exact_max, reorder_budget read).
 * *lb_before / *lb_after (may be NULL): the bound of the graph's default
 * order and of the returned one. Deterministic. */
mp_status mp__order_solve(const mp_graph *g, const mp_plan_options *opt,
                          uint32_t *order, uint64_t *lb_before,
                          uint64_t *lb_after);

#endif /* MP__ORDER_SOLVER_H */
