/* solvers/offload_solver.h - offload decisions, alone or with recompute
 * (solvers/offload.c): a base schedule's tensor instances, their idle
 * gaps as candidates, the greedy and ILP choices of OFFLOAD/PREFETCH (or
 * FREE/RECOMPUTE) variants under a live-bytes target, the schedule of a
 * choice, and a schedule's time on a device. planner/offload.c drives it.
 * Internal, not installed. */
#ifndef MP__OFFLOAD_SOLVER_H
#define MP__OFFLOAD_SOLVER_H

#include "sched.h"

/* The candidates of one base schedule, and the current choice. */
typedef struct mp__offload_problem mp__offload_problem;

/* Analyses base schedule `steps` (n steps of COMPUTE/RECOMPUTE/FREE; not
 * owned, and kept with g, d and ndur while the problem lives): instances,
 * uses, live bytes per node position (sizes rounded up to align), and a
 * candidate per instance with an idle gap; recompute variants too when
 * `recompute`. ndur: estimated seconds per node on device d. */
mp_status mp__offload_problem_create(const mp_graph *g, const mp_device *d,
                                     const double *ndur, const mp_step *steps,
                                     uint32_t n, uint64_t align, int recompute,
                                     mp__offload_problem **out);
void mp__offload_problem_destroy(mp__offload_problem *x);
/* How many candidates (tensors that may leave the device) x has. */
uint32_t mp__offload_num_candidates(const mp__offload_problem *x);

/* Greedy choice (replacing the current one): while the live peak is above
 * `target` bytes, the allowed variant covering the peak position with the
 * least cost (recompute variants only when rec). *n_chosen (may be NULL):
 * how many were chosen. */
mp_status mp__offload_greedy(mp__offload_problem *x, uint64_t target, int rec,
                             uint32_t *n_chosen);
/* ILP choice (GLPK; MP_ERR_UNSUPPORTED without it), warm-started from the
 * current choice, which the solution replaces when there is one (*have
 * 1; *from_warm: the warm start was kept). *status: the ILP's. */
mp_status mp__offload_ilp(mp__offload_problem *x, uint64_t target, int rec,
                          double time_limit, mp_solve_status *status,
                          int *from_warm, int *have);
/* The base schedule with the current choice's OFFLOAD/PREFETCH (or
 * FREE/RECOMPUTE) steps inserted; *out allocated with the context
 * allocator. */
mp_status mp__offload_schedule(const mp__offload_problem *x, mp_step **out,
                               uint32_t *n_out);

/* The time of a schedule on a device. */
typedef struct mp__offload_timing {
    double compute, recompute, exposed, total;
    uint64_t to_host, to_device;
    uint32_t n_off, n_rec;
} mp__offload_timing;
/* Two-stream simulation of schedule st (ns steps) on device d with node
 * times ndur: compute, recompute and exposed (stall) seconds, bytes moved
 * each way, OFFLOAD and RECOMPUTE steps. */
mp_status mp__offload_simulate(mp_ctx *ctx, const mp_graph *g,
                               const mp_step *st, uint32_t ns,
                               const mp_device *d, const double *ndur,
                               mp__offload_timing *tm);
/* Live arena peak of a schedule (no in-place), sizes rounded up to align. */
mp_status mp__offload_schedule_peak(const mp_graph *g, const mp_step *st,
                                    uint32_t ns, uint64_t align,
                                    uint64_t *peak);

#endif /* MP__OFFLOAD_SOLVER_H */
