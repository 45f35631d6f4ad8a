/* solvers/pools_solver.h - memory pools and placement constraints, the
 * solver (solvers/pools.c): buffers with their rules and the pools in,
 * each buffer's pool and offset out. Internal, not installed. */
#ifndef MP__POOLS_SOLVER_H
#define MP__POOLS_SOLVER_H

#include "constraints.h"

/* What a buffer must obey, and where it went. */
typedef struct mp__pool_buf {
    uint32_t pool;        /* MP_NONE: not assigned yet; out: its pool */
    uint8_t fixed;        /* pinned: its offset is given */
    uint8_t forced;       /* its pool is given */
    uint8_t no_share;     /* alone in its address range (live throughout) */
    uint64_t align;       /* lcm of the plan's and its tensors' */
    double access;        /* accesses (reads + writes) of the buffer */
    const char *name;     /* a tensor of the buffer, for messages */
} mp__pool_buf;

typedef struct mp__pool_problem {
    mp_ctx *ctx;
    mp_buffer *bufs;      /* sizes, live steps, pinned offsets; out: offsets */
    mp__pool_buf *pb;     /* per buffer */
    uint32_t nb;
    uint32_t n_steps;     /* buffers live within [0, n_steps) */
    uint64_t plan_align;
    const mp_plan_options *opt; /* offsets method, time limit, seed */
    const mp_constraints *c;    /* the pools; none: one unbounded pool */
} mp__pool_problem;

/* Assigns the buffers without a given pool (fastest pools first, by time
 * saved per byte-step, within each pool's capacity; the rest to the last
 * pool) and places each pool from offset 0. pool_arena: per pool (or one
 * without pools), the extent of its offsets. MP_ERR_INFEASIBLE names a
 * pool over its capacity or pinned buffers that overlap. */
mp_status mp__pools_assign(mp__pool_problem *x, uint64_t *pool_arena);

#endif /* MP__POOLS_SOLVER_H */
