/* core/sched/sched.h - schedules and what derives from them: the plan
 * (steps, blocks, live bytes, figures), lifetimes as blocks, in-place
 * sharing and fused chains. Plans are built by planner/; this is their
 * data and the arithmetic on it. Internal, not installed. */
#ifndef MP__SCHED_H
#define MP__SCHED_H

#include "ir.h"

/* ---- plans --------------------------------------------------------------- */
/* A pool of a plan: offsets of its blocks start at 0. */
#define MP__MAX_POOLS 1024
typedef struct mp__pool_plan {
    char name[32];
    uint64_t capacity;
    double bandwidth;
    uint64_t arena_bytes, lower_bound_bytes;
    uint32_t n_blocks;
} mp__pool_plan;

struct mp_plan {
    mp_ctx *ctx;
    const mp_graph *graph;
    mp_step *steps;
    uint32_t n_steps;
    mp_block *blocks;
    uint32_t n_blocks;
    uint64_t *live;        /* live arena bytes per step */
    mp_figures fig;
    char solver_name[32];
    /* memory pools (planner/pools.c): the pool of each block
     * and the pools; NULL / 0 for a plan made without pools (one pool) */
    uint32_t *block_pool;
    struct mp__pool_plan *pools;
    uint32_t n_pools;
    /* in-place reuse and fused chains (core/sched/inplace.c): */
    uint32_t *block_over;  /* per block: the tensor whose memory it took
                              over at its first step, or MP_NONE; NULL
                              when no block did */
    uint8_t *fused;        /* per tensor: 1 when the tensor may be fused:
                              each instance of it (the value one node
                              step writes) that has no block starting at
                              its step is inside a fused chain; NULL when
                              none */
};

/* Builds the default schedule of g (topological order, FREE after last
 * use). Allocates *steps with the context allocator. */
mp_status mp__schedule_default(const mp_graph *g, mp_step **steps,
                              uint32_t *n_steps);
/* Derives blocks (lifetimes) from a schedule: one block per arena tensor
 * instance, offsets 0. With in-place sharing (step_over, per step: the
 * input output 0 takes over, or MP_NONE) or fused chains (step_fused, per
 * step: 1 when the node step's output instance is fused, no block), both
 * from mp__sharing_apply, the
 * schedule may hold only COMPUTE, RECOMPUTE and FREE steps, and
 * *block_over (when block_over is not NULL) gets per block the tensor
 * whose memory it took over, or NULL when no block took over another.
 * step_over, step_fused and block_over may be NULL (no sharing). */
mp_status mp__schedule_blocks(const mp_graph *g, const mp_step *steps,
                             uint32_t n_steps, uint64_t alignment,
                             const uint32_t *step_over,
                             const uint8_t *step_fused, mp_block **blocks,
                             uint32_t *n_blocks, uint32_t **block_over);
/* Live bytes per step from blocks. */
mp_status mp__blocks_live(mp_ctx *ctx, const mp_block *blocks, uint32_t n,
                         uint32_t n_steps, uint64_t **live);

/* In-place reuse and fused chains (core/sched/inplace.c). Rewrites a
 * schedule of COMPUTE/RECOMPUTE/FREE steps: with fuse, marks the output
 * instances inside fused pointwise chains (*step_fused, per new step: the
 * node step's output instance is fused; *fused, per tensor: some instance
 * is; both NULL when none) and moves the FREE steps of a chain's inputs
 * after its last node; with
 * inplace, lets output 0 of a node take over an input that dies there (its
 * FREE step disappears; *step_over[s] is that input, per new step, NULL
 * when none). Takes ownership of *steps (replaced). Schedules with other
 * step kinds are left as they are. */
mp_status mp__sharing_apply(const mp_graph *g, mp_step **steps,
                           uint32_t *n_steps, int inplace, int fuse,
                           uint32_t **step_over, uint8_t **fused,
                           uint8_t **step_fused);
/* The buffers handed to the offsets solver: one per chain of blocks that
 * share memory in place (one per block without block_over). *group
 * (NULL when identity) maps each block to its buffer. */
mp_status mp__sharing_buffers(const mp_plan *p, mp_buffer **bufs,
                             uint32_t *n_bufs, uint32_t **group);
/* Schedule from a topological order: COMPUTE each node, FREE each arena
 * storage root right after its last reader. */
mp_status mp__schedule_from_order(const mp_graph *g, const uint32_t *order,
                                 mp_step **steps, uint32_t *n_steps);

/* ---- the plan's data (core/sched/plan.c) ------------------------------- */
/* mp_plan_options_init's defaults (planner/plan.c), which control-flow
 * bodies are sized with (mp__schedule_body_peak). */
#define MP__PLAN_ALIGNMENT 256
#define MP__PLAN_INPLACE 1
#define MP__PLAN_FUSE 0

/* The layout of p's schedule (p->ctx, p->graph, p->steps, p->n_steps set,
 * nothing else): with inplace or fuse, in-place sharing and fused chains
 * (mp__sharing_apply: the steps are rewritten, p->fused and p->block_over
 * set); then p->blocks (offsets 0) and p->live. mp__plan_from_schedule
 * places these blocks; control-flow bodies are sized from them. */
mp_status mp__schedule_layout(mp_plan *p, int inplace, int fuse,
                             uint64_t alignment);
/* The most memory g's own tensors (not its graph inputs) take at one step
 * of its default schedule laid out as mp_plan_create lays it out by
 * default: what an If/Loop/Scan body needs (core/ops/ops_control.c). g is
 * finalized. */
mp_status mp__schedule_body_peak(const mp_graph *g, uint64_t *peak);
/* Sum of the bytes of persistent storage roots (weights, constants,
 * optimizer state); UINT64_MAX on overflow. */
uint64_t mp__plan_persistent_bytes(const mp_graph *g);
/* Fills p->fig from p->blocks and p->live: lower bound, peak step, arena,
 * no-reuse and persistent bytes, peak (not status, solver, alignment). */
mp_status mp__plan_compute_figures(mp_plan *p);

#endif /* MP__SCHED_H */
