/*
 * memplan/constraints.h - planning under constraints (docs/embedding.md):
 * several memory pools (on-chip SRAM, device DRAM, host memory) with
 * capacities and bandwidths, tensors pinned at fixed offsets or assigned
 * to a pool, tensors that share memory with no other, per-tensor
 * alignment, a largest single buffer. Plans made under constraints, their
 * pools, their estimated time, and a verifier of the constraints.
 *
 *     mp_constraints *c = NULL;
 *     mp_pool_desc sram = {"sram", 1 << 20, 1e12, 0};
 *     mp_pool_desc dram = {"dram", UINT64_MAX, 1e11, 0};
 *     mp_constraints_create(ctx, &c);
 *     mp_constraints_add_pool(c, &sram, NULL);
 *     mp_constraints_add_pool(c, &dram, NULL);
 *     mp_plan_create_constrained(g, NULL, c, &plan);
 */
#ifndef MEMPLAN_CONSTRAINTS_H
#define MEMPLAN_CONSTRAINTS_H

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory pools and constraints --------------------------------------- */
/* A memory pool: on-chip SRAM, device DRAM, host memory, ... */
typedef struct mp_pool_desc {
    const char *name;       /* copied; required */
    uint64_t capacity;      /* bytes; UINT64_MAX: unbounded */
    double bandwidth;       /* bytes/s of reads and writes there; > 0 */
    uint64_t max_buffer;    /* largest single block it takes; 0: no limit */
} mp_pool_desc;

/* Planning constraints: pools, pinned offsets, tensors that share memory
 * with no other, per-tensor alignment, a largest single buffer. Tensors
 * are graph tensor ids (mp_graph_find_tensor); a constraint naming a view
 * applies to the tensor whose memory it views. */
typedef struct mp_constraints mp_constraints;
/* Creates an empty set of constraints in ctx; it may serve several plans
 * of graphs of the same context.
 * Errors: MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_constraints_create(mp_ctx *ctx, mp_constraints **out);
/* Frees constraints; plans made with them stay valid. NULL is accepted. */
MP_API void mp_constraints_destroy(mp_constraints *c);
/* Adds a pool; its id (counting from 0 in the order added) goes to *id,
 * which may be NULL. Without pools a plan has one unbounded pool. The
 * planner chooses each tensor's pool to minimise the estimated time
 * (mp_plan_estimate_seconds) under the capacities; the last pool also holds
 * what fits nowhere else.
 * Errors: MP_ERR_INVALID_ARG (no name, a duplicate name, capacity 0,
 * bandwidth <= 0, more than 1024 pools), MP_ERR_NOMEM. */
MP_API mp_status mp_constraints_add_pool(mp_constraints *c,
                                         const mp_pool_desc *d, uint32_t *id);
/* The tensor's block starts exactly at `offset` of `pool` (an offline
 * planned buffer); others are placed around it. Pool 0 is valid without
 * pools.
 * Errors: MP_ERR_NOT_FOUND (no such pool), MP_ERR_INVALID_ARG (offset
 * UINT64_MAX, tensor MP_NONE), MP_ERR_NOMEM; at planning,
 * MP_ERR_INFEASIBLE (pins that overlap, a misaligned pin, a pin beyond the
 * capacity).
 * Example: mp_constraints_pin(c, input_id, 0, 0); */
MP_API mp_status mp_constraints_pin(mp_constraints *c, uint32_t tensor,
                                    uint32_t pool, uint64_t offset);
/* The tensor goes to `pool`; the planner chooses its offset.
 * Errors: MP_ERR_NOT_FOUND (no such pool), MP_ERR_INVALID_ARG (the tensor
 * is pinned in another pool), MP_ERR_NOMEM; at planning,
 * MP_ERR_INFEASIBLE (the assigned tensors do not fit the pool). */
MP_API mp_status mp_constraints_assign(mp_constraints *c, uint32_t tensor,
                                       uint32_t pool);
/* The tensor's memory is shared with no other tensor at any time (no
 * reuse, no in-place).
 * Errors: MP_ERR_INVALID_ARG (tensor MP_NONE), MP_ERR_NOMEM. */
MP_API mp_status mp_constraints_no_share(mp_constraints *c, uint32_t tensor);
/* The tensor's offset is a multiple of `alignment` (and of the plan's);
 * repeated calls combine (least common multiple).
 * Errors: MP_ERR_INVALID_ARG (alignment 0), MP_ERR_OVERFLOW (the combined
 * alignment), MP_ERR_NOMEM. */
MP_API mp_status mp_constraints_align(mp_constraints *c, uint32_t tensor,
                                      uint64_t alignment);
/* No block may be larger than `bytes` (a device's largest allocation);
 * 0: no limit. A larger tensor makes planning fail, MP_ERR_INFEASIBLE.
 * Errors: MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_constraints_max_buffer(mp_constraints *c, uint64_t bytes);
/* Compute rate for the time estimate (FLOP/s; 0, the default: compute
 * time ignored, only memory traffic counts).
 * Errors: MP_ERR_INVALID_ARG (NULL, a negative or NaN rate). */
MP_API mp_status mp_constraints_compute_rate(mp_constraints *c,
                                             double flops_per_second);

/* mp_plan_create under constraints (c may be NULL: mp_plan_create). Offsets
 * are per pool, from 0 in each; MP_ERR_INFEASIBLE names what does not fit
 * (a pin beyond a capacity, two pins that overlap, a tensor above the
 * largest buffer, everything else beyond the last pool's capacity). The
 * plan's arena_bytes is the sum of the pools' arenas.
 * Errors: MP_ERR_INFEASIBLE (above; the tensor or pool named),
 * MP_ERR_NOT_FOUND (a constraint names a missing pool or tensor),
 * MP_ERR_INVALID_ARG (NULL, constraints of another context, a constraint
 * on a tensor that takes no arena memory), MP_ERR_NOMEM, and the errors
 * of mp_plan_create. */
MP_API mp_status mp_plan_create_constrained(mp_graph *g,
                                            const mp_plan_options *opt,
                                            const mp_constraints *c,
                                            mp_plan **out);
typedef struct mp_pool_info {
    const char *name;
    uint64_t capacity;
    double bandwidth;
    uint64_t arena_bytes;        /* the offsets' extent in this pool */
    uint64_t lower_bound_bytes;  /* max over steps of live bytes here */
    uint32_t n_blocks;
} mp_pool_info;
/* The number of pools of a plan: 1 for a plan made without pools, 0 for
 * NULL. */
MP_API uint32_t mp_plan_num_pools(const mp_plan *p);
/* A pool's figures: name, capacity, bandwidth, arena (what to allocate
 * for it), lower bound, blocks. Without pools, pool 0 is "default" with
 * the plan's arena.
 * Errors: MP_ERR_NOT_FOUND (no such pool), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_pool_info pi; mp_plan_pool_info(p, 0, &pi); */
MP_API mp_status mp_plan_pool_info(const mp_plan *p, uint32_t pool,
                                   mp_pool_info *out);
/* The pool of block i (0 without pools, or out of range). */
MP_API uint32_t mp_plan_block_pool(const mp_plan *p, uint32_t block);
/* Estimated time of a plan on the pools of c: for each compute step,
 * max(FLOPs / compute rate, sum over the tensors it reads and writes of
 * bytes / bandwidth of the tensor's pool); persistent tensors (weights)
 * and the blocks of a plan without pools count in c's last pool.
 * Errors: MP_ERR_INVALID_ARG (NULL, c without pools or with a number of
 * pools other than the plan's), MP_ERR_NOMEM. */
MP_API mp_status mp_plan_estimate_seconds(const mp_plan *p,
                                          const mp_constraints *c,
                                          double *seconds);
/* Checks what mp_verify_plan cannot know: pins at their offsets and
 * pools, per-tensor alignment, no-share tensors alone in their address
 * range, the largest buffer, pool capacities. c NULL: MP_OK.
 * Errors: MP_ERR_VERIFY (the first violation: tensor, offsets, pool),
 * MP_ERR_INVALID_ARG (NULL g or p). */
MP_API mp_status mp_verify_constraints(const mp_graph *g, const mp_plan *p,
                                       const mp_constraints *c);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_CONSTRAINTS_H */
