/*
 * memplan/plan.h - plans: a schedule of steps over a graph's nodes and an
 * offset in one arena for every tensor instance (a block), with the
 * figures that say how good the arena is. Creating plans (default order,
 * a given order, a memory-aware order), in-place reuse and fused chains
 * (docs/memory-model.md), plan JSON (docs/plan-format.md), and the
 * verifier that replays a plan independently of the solvers.
 *
 *     mp_plan_options opt;
 *     mp_plan_options_init(&opt);
 *     if (mp_plan_create(g, &opt, &plan) == MP_OK)
 *         arena = mp_plan_figures(plan)->arena_bytes;
 */
#ifndef MEMPLAN_PLAN_H
#define MEMPLAN_PLAN_H

#include "graph.h"
#include "offsets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- schedules and plans ------------------------------------------------ */
typedef enum mp_step_kind {
    MP_STEP_COMPUTE = 0, MP_STEP_RECOMPUTE = 1, MP_STEP_FREE = 2,
    MP_STEP_OFFLOAD = 3, MP_STEP_PREFETCH = 4
} mp_step_kind;
/* The name of a step kind: "compute", "recompute", "free", "offload",
 * "prefetch"; "unknown" outside the table. */
MP_API const char *mp_step_kind_name(mp_step_kind k);

typedef struct mp_step {
    mp_step_kind kind;
    uint32_t index;      /* node for COMPUTE/RECOMPUTE, tensor otherwise */
} mp_step;

/* One tensor instance placed in the arena: the tensor lives at `offset`
 * from step `first` (the step that allocates it; 0 for inputs) up to, not
 * including, step `end` (its FREE step; the step count when never freed). */
typedef struct mp_block {
    uint32_t tensor;
    uint64_t offset;
    uint64_t size;       /* aligned size reserved in the arena */
    uint32_t first, end;
} mp_block;

typedef struct mp_plan mp_plan;

typedef struct mp_plan_options {
    uint64_t alignment;            /* default 256 */
    mp_offsets_method method;      /* default AUTO */
    /* seconds the whole plan may take (mp_plan_create, the recompute and
     * offload planners): every stage (placement, order search, recompute
     * models, offload ILP, refits) takes what is left of it; <= 0: no
     * overall limit, each stage its own default */
    double time_limit;
    uint64_t seed;
    /* in-place reuse, fused chains and operator order (see
     * docs/memory-model.md): */
    int inplace;          /* default 1: an output may take over the memory
                             of an input that dies at its node, where the
                             op's registry entry allows it */
    int fuse;             /* default 0: tensors inside fused pointwise
                             chains take no arena memory */
    int reorder;          /* default 0: memory-aware operator order */
    uint32_t reorder_exact_max; /* exact order search up to this many
                                   nodes (default 20, at most 24) */
    uint64_t reorder_budget;    /* local search: candidate orders tried
                                   (default 4000) */
    /* default MP_ATTENTION_NAIVE: the graph as written. FUSED:
     * mp_plan_create first rewrites each scaled-dot-product attention
     * chain of g as one fused node (mp_graph_fuse_attention,
     * memplan/graph.h: g is changed, its ids too), an op
     * (memplan::ScaledDotProductAttention) the runtime that runs the
     * plan must implement. The memplan command fuses by default
     * (--attention fused). */
    mp_attention_mode attention;
} mp_plan_options;
/* Fills planning options with their defaults (the comments above); call
 * it before setting fields. NULL is a no-op.
 * Example: mp_plan_options o; mp_plan_options_init(&o); o.fuse = 1; */
MP_API void mp_plan_options_init(mp_plan_options *o);

typedef struct mp_figures {
    uint64_t lower_bound_bytes;  /* max over steps of live arena bytes */
    uint64_t arena_bytes;        /* size of the arena the offsets need */
    uint64_t persistent_bytes;   /* weights, constants, optimizer state */
    uint64_t peak_bytes;         /* arena_bytes + persistent_bytes */
    uint64_t no_reuse_bytes;     /* every arena tensor in its own memory */
    uint64_t alignment;
    uint32_t peak_step;          /* a step where live bytes are maximal */
    mp_solve_status status;      /* OPTIMAL when arena == lower bound */
    const char *solver;
    double solve_seconds;
    /* operator order: the lower bound with the graph's default order and
     * with the order reordering found (the plan keeps the better); both 0
     * when the plan was not reordered */
    uint64_t order_lb_before, order_lb_after;
} mp_figures;

/* Plans a graph: the default schedule from its topological order (COMPUTE each
 * node, FREE each arena tensor right after its last use) and offsets by
 * opt->method. opt may be NULL (defaults); an unfinalized graph is
 * finalized first, and with opt->attention FUSED (not the default) its
 * attention chains are fused in place first (mp_graph_fuse_attention).
 * Errors: MP_ERR_INVALID_ARG (NULL, alignment 0), MP_ERR_GRAPH or
 * MP_ERR_SHAPE (the graph could not be finalized), MP_ERR_OVERFLOW (the
 * arena beyond 64 bits), MP_ERR_NOMEM.
 * Example: mp_plan *p = NULL; mp_plan_create(g, NULL, &p); */
MP_API mp_status mp_plan_create(mp_graph *g, const mp_plan_options *opt,
                                mp_plan **out);
/* Frees a plan; its graph is not touched. NULL is accepted. */
MP_API void mp_plan_destroy(mp_plan *p);
/* The plan's figures (arena, lower bound, peak, solver, ...); NULL for
 * NULL. The struct lives in the plan. */
MP_API const mp_figures *mp_plan_figures(const mp_plan *p);
/* The number of steps of the schedule; 0 for NULL. */
MP_API uint32_t mp_plan_num_steps(const mp_plan *p);
/* The schedule, mp_plan_num_steps entries (the array lives in the plan); a
 * runtime runs the COMPUTE and RECOMPUTE steps in this order. NULL for
 * NULL. */
MP_API const mp_step *mp_plan_steps(const mp_plan *p);
/* The number of blocks; 0 for NULL. */
MP_API uint32_t mp_plan_num_blocks(const mp_plan *p);
/* The blocks, mp_plan_num_blocks entries (the array lives in the plan): a
 * runtime sets each tensor's pointer to arena + offset. NULL for NULL.
 * Example: const mp_block *b = mp_plan_blocks(p);
 *          ptr[b[i].tensor] = arena + b[i].offset; */
MP_API const mp_block *mp_plan_blocks(const mp_plan *p);
/* Live arena bytes while step i runs (i < num_steps); 0 out of range or
 * for NULL. */
MP_API uint64_t mp_plan_live_bytes(const mp_plan *p, uint32_t step);

/* ---- in-place reuse, fused chains, operator order ----------------------- */
/* The tensor whose memory block i took over at its first step (its node
 * wrote the output in place over that input, which died there), or
 * MP_NONE (also out of range). The two blocks share one offset. */
MP_API uint32_t mp_plan_block_over(const mp_plan *p, uint32_t block);
/* 1 when the tensor lies inside a fused pointwise chain (--fuse) at some
 * step, else 0: each value of it a node step writes with no block
 * starting there (mp_plan_blocks) is computed inside the chain and takes
 * no memory; in a training plan a recomputed instance that backward reads
 * keeps its block. */
MP_API int mp_plan_tensor_fused(const mp_plan *p, uint32_t tensor);
/* A memory-aware topological order of g's nodes (order: n_nodes entries):
 * list scheduling with memory priorities, local search within each node's
 * window, and an exact search up to opt->reorder_exact_max nodes. The
 * objective is the lower bound (max live arena bytes, in-place aware when
 * opt->inplace). *lb_before / *lb_after (may be NULL): the objective of
 * the graph's default order and of the returned one (never higher).
 * Deterministic.
 * Errors: MP_ERR_INVALID_ARG (NULL), MP_ERR_GRAPH or MP_ERR_SHAPE (the
 * graph could not be finalized), MP_ERR_NOMEM. */
MP_API mp_status mp_order_solve(mp_graph *g, const mp_plan_options *opt,
                                uint32_t *order, uint64_t *lb_before,
                                uint64_t *lb_after);
/* A plan that computes the nodes in the given topological order, frees
 * each tensor after its last use, and places the blocks as mp_plan_create
 * does (in-place and fuse per opt).
 * Errors: MP_ERR_INVALID_ARG (NULL, an order that is not a topological
 * order of the nodes), MP_ERR_NOMEM.
 * Example: mp_order_solve(g, &o, order, NULL, NULL);
 *          mp_plan_create_ordered(g, order, &o, &p); */
MP_API mp_status mp_plan_create_ordered(mp_graph *g, const uint32_t *order,
                                        const mp_plan_options *opt,
                                        mp_plan **out);

/* ---- plan JSON ---------------------------------------------------------- */
/* Writes the plan as JSON (docs/plan-format.md): schedule, blocks with
 * offsets, figures.
 * Errors: MP_ERR_IO (not writable), MP_ERR_NOMEM, MP_ERR_INVALID_ARG
 * (NULL). */
MP_API mp_status mp_plan_save_json(const mp_plan *p, const char *path);
/* mp_plan_save_json into a string allocated with the context allocator;
 * release it with mp_free.
 * Errors: MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_plan_to_json_string(const mp_plan *p, char **out);
/* Reads plan JSON, resolving tensor and node names against g (the graph
 * the plan was made for); run mp_verify_plan on the result.
 * Errors: MP_ERR_IO (unreadable), MP_ERR_PARSE (malformed JSON, a missing
 * key; file:line:column named), MP_ERR_NOT_FOUND (a name not in g),
 * MP_ERR_GRAPH (made for a graph with other counts), MP_ERR_UNSUPPORTED (a
 * newer format version), MP_ERR_VERIFY (blocks live at one step add up
 * to more than 2^64 bytes: no arena holds them), MP_ERR_NOMEM,
 * MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_plan_load_json(mp_graph *g, const char *path,
                                   mp_plan **out);

/* ---- verification ------------------------------------------------------- */
/* Replays a plan against its graph and checks every invariant: each input
 * of a step is resident when it runs, every arena tensor produced is
 * placed, no two resident blocks overlap, every block lies in the arena
 * and is aligned, and the reported figures equal the replayed ones.
 * Every block must be exactly its tensor's size rounded up to the
 * alignment (>= 1); the status must be OPTIMAL when the arena equals the
 * lower bound and FEASIBLE otherwise; the peak step is the first step at
 * the maximum; the solve time a non-negative number; fused and in-place
 * claims legal for their tensors. Independent of the solvers.
 * Errors: MP_ERR_VERIFY (the first violation: step, tensors, offsets),
 * MP_ERR_INVALID_ARG (NULL, an unfinalized graph), MP_ERR_NOMEM.
 * Example: if (mp_verify_plan(g, p) != MP_OK) puts(mp_ctx_message(ctx)); */
MP_API mp_status mp_verify_plan(const mp_graph *g, const mp_plan *p);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_PLAN_H */
