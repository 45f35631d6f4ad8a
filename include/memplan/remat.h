/*
 * memplan/remat.h - recompute (checkpointing) under a memory budget
 * (docs/training.md): solvers that choose which tensors to keep and which
 * to recompute so that a schedule's peak (live arena bytes + persistent
 * bytes) fits a budget at the least extra compute, and the largest batch
 * that fits. Every solver returns a plan with RECOMPUTE steps, placed like
 * any other (memplan/plan.h), that mp_verify_plan replays.
 *
 *     mp_remat_options ro;
 *     mp_remat_result res;
 *     mp_remat_options_init(&ro);
 *     ro.budget = 8ull << 30;
 *     if (mp_remat_plan(g, &ro, NULL, &plan, &res) == MP_OK)
 *         printf("%u recomputes\n", res.n_recompute);
 */
#ifndef MEMPLAN_REMAT_H
#define MEMPLAN_REMAT_H

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- recompute / checkpoint under a memory budget ----------------------- */
typedef enum mp_remat_solver {
    MP_REMAT_AUTO = 0,       /* every solver that fits the graph's size */
    MP_REMAT_NONE,           /* checkpoint-all: no recompute */
    MP_REMAT_CHEN_SQRT,      /* Chen et al.: sqrt(n) segments */
    MP_REMAT_CHEN_GREEDY,    /* Chen greedy segments, budget sweep */
    MP_REMAT_DTR,            /* DTR-style eviction replayed statically */
    MP_REMAT_SELECTIVE,      /* cheap ops first, then polished */
    MP_REMAT_LP,             /* Checkmate LP relaxation + rounding (GLPK) */
    MP_REMAT_ILP,            /* Checkmate MILP (GLPK) */
    /* Checkmate's baselines as its code builds them (its residency matrix
     * from a checkpoint set, the recomputes that matrix implies, its
     * frees; no budget search, never in auto; docs/training.md,
     * "Checkmate's baselines"): */
    MP_REMAT_CHEN_LINEAR,       /* released code: linearized Chen sqrt(n) */
    MP_REMAT_CM_CHECKPOINT_ALL, /* code of the published max-batch figure: */
    MP_REMAT_CM_CHEN_SQRT,      /*   checkpoint-all, Chen sqrt(n) on */
    MP_REMAT_CM_CHEN_GREEDY,    /*   articulation points, Chen greedy */
    /* AOTAutograd's default partitioner: the forward values saved for
     * backward are a minimum cut (the fewest bytes) such that every other
     * value backward reads is recomputed from them by cheap ops
     * (pointwise, reductions, views; never matmul, conv, attention or
     * random ops). Without a budget: kept when its live peak is at most
     * checkpoint-all's, else checkpoint-all. Also a candidate of auto. */
    MP_REMAT_MINCUT
} mp_remat_solver;
/* The name of a recompute solver: "auto", "checkpoint-all" (NONE),
 * "chen-sqrt", "chen-greedy", "dtr", "selective", "lp", "ilp", ...,
 * "mincut" */
MP_API const char *mp_remat_solver_name(mp_remat_solver s);
/* Parses a recompute solver name: the names above in lower case ("chen" =
 * chen-greedy, "lp", "ilp", "checkpoint-all" = none, "auto").
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_remat_solver_parse("dtr", &ro.solver); */
MP_API mp_status mp_remat_solver_parse(const char *name, mp_remat_solver *out);

typedef struct mp_remat_options {
    mp_remat_solver solver;  /* default AUTO */
    uint64_t budget;         /* bytes for live arena + persistent; 0: none */
    double time_limit;       /* seconds for LP/ILP; <= 0: 60 */
    double max_extra_cost;   /* cap on extra compute (cost units); < 0: none */
    uint64_t seed;
    /* 1: Checkmate's baseline semantics for checkpoint-all and Chen: the
     * checkpoints stay resident to the end of the step (reproduces the
     * published baselines); 0 (default): freed after their last use. */
    int keep_checkpoints;
} mp_remat_options;
/* Fills recompute options with their defaults (the comments above). NULL
 * is a no-op. */
MP_API void mp_remat_options_init(mp_remat_options *o);

typedef struct mp_remat_result {
    mp_solve_status status;      /* FEASIBLE/OPTIMAL when the budget is met,
                                    INFEASIBLE when no solver met it */
    const char *solver;          /* static string: the solver that won */
    uint64_t peak_bytes;         /* live arena peak + persistent bytes */
    uint64_t base_peak_bytes;    /* the same without recompute */
    uint64_t min_peak_bytes;     /* smallest peak any solver reached */
    uint64_t peak_lower_bound;   /* no schedule computing the nodes in this
                                    order peaks below it: a node's inputs
                                    and outputs, the graph outputs computed
                                    before it, plus persistent bytes */
    double base_cost;            /* cost of computing every node once */
    double extra_cost;           /* cost of the RECOMPUTE steps */
    double extra_flops;          /* FLOPs of the RECOMPUTE steps (given ones) */
    double lower_bound_cost;     /* LP lower bound on extra cost; < 0: none */
    uint32_t n_recompute;        /* RECOMPUTE steps */
    double seconds;
    /* where lower_bound_cost comes from (every kind is a true lower bound,
     * by weak duality, on the extra cost of schedules in the graph's
     * order): MP_REMAT_BOUND_LP (the Checkmate LP solved to optimality),
     * _LP_DUALS (the duals where its simplex stopped at the time limit),
     * _MILP (the MILP search tree), _STAGE_LP (the smaller stage-boundary
     * relaxation, solved to optimality). */
    int lower_bound_kind;
    /* when the live peak of a schedule fits the budget but its placed
     * arena does not (MP_ERR_INFEASIBLE once placed): the smallest placed
     * peak found (arena + persistent bytes); then min_peak_bytes is the
     * smallest live peak (live arena peak + persistent) over every round,
     * which may be within the budget. 0: no schedule was placed. */
    uint64_t min_placed_peak_bytes;
} mp_remat_result;
enum { MP_REMAT_BOUND_NONE = 0, MP_REMAT_BOUND_LP, MP_REMAT_BOUND_LP_DUALS,
       MP_REMAT_BOUND_MILP, MP_REMAT_BOUND_STAGE_LP };

/* Plans g under ro->budget with the least extra compute, recomputing
 * instead of keeping. On MP_OK *out is a plan (schedule with
 * RECOMPUTE steps, offsets by po) and res is filled. When no solver meets
 * the budget: MP_ERR_INFEASIBLE, res->min_peak_bytes says the smallest
 * peak found, *out is NULL. po may be NULL (defaults).
 * Errors: MP_ERR_INFEASIBLE (above; "once placed" in the message when a
 * live peak fits but no packing of its arena does, see
 * min_placed_peak_bytes), MP_ERR_UNSUPPORTED (LP/ILP without GLPK),
 * MP_ERR_INVALID_ARG (NULL, a bad option), MP_ERR_NOMEM. */
MP_API mp_status mp_remat_plan(mp_graph *g, const mp_remat_options *ro,
                               const mp_plan_options *po, mp_plan **out,
                               mp_remat_result *res);

/* The largest batch (1..max_batch; 0: 2^20) whose plan meets ro's budget
 * and cost cap, g being at batch graph_batch: every arena tensor scales
 * with the batch (bytes x b / graph_batch, rounded up), weights and
 * optimizer state do not. res: the plan figures at that batch.
 * Errors: MP_ERR_INFEASIBLE (not even batch 1 fits), MP_ERR_INVALID_ARG
 * (NULL, a bad option), MP_ERR_NOMEM.
 * Example: mp_remat_max_batch(g, 1, 0, &ro, NULL, &best, &res); */
MP_API mp_status mp_remat_max_batch(const mp_graph *g, uint64_t graph_batch,
                                    uint64_t max_batch,
                                    const mp_remat_options *ro,
                                    const mp_plan_options *po, uint64_t *best,
                                    mp_remat_result *res);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_REMAT_H */
