/* Recompute solvers: the problem every one of them sees, and the replay
 * that turns a keep/drop policy into a schedule (solvers/remat/remat.c), shared
 * with the Checkmate LP/MILP (solvers/remat/checkmate.c). */
#ifndef MP__REMAT_INTERNAL_H
#define MP__REMAT_INTERNAL_H

#include "base.h"

/* One unit per node, in the graph's topological order (unit u is stage u).
 * A unit's memory is the aligned bytes of its arena outputs, which live
 * and die together. Dependencies go through views to storage roots. */
typedef struct rm_prob {
    mp_ctx *ctx;
    const mp_graph *g;
    uint32_t T;
    uint32_t *node;          /* unit -> node id */
    uint32_t *pos;           /* node id -> unit */
    uint64_t *mem;           /* aligned arena bytes of the unit's outputs */
    double *cost, *flops;    /* flops < 0: not given */
    uint8_t *fwd;            /* forward phase */
    uint8_t *out;            /* holds a graph output: never freed */
    uint32_t *dep_begin, *deps;  /* producer units of inputs (unique) */
    uint32_t *use_begin, *uses;  /* consumer units, ascending, unique */
    uint32_t *horizon;       /* last stage at which the unit may be needed */
    /* graph inputs that take arena memory */
    uint32_t n_in;
    uint32_t *in_tensor, *in_last, *in_horizon;
    uint64_t *in_mem;
    uint8_t *in_out;         /* the input is (or is viewed by) an output */
    uint64_t persistent;
    uint64_t alignment;
    double base_cost;
} rm_prob;

mp_status rm_prob_build(const mp_graph *g, uint64_t alignment, rm_prob *p);
void rm_prob_free(rm_prob *p);

/* cut[u] = 1 for the forward units that no forward edge jumps over (the
 * articulation points of a chain-like forward graph; remat.c). */
void rm_forward_cuts(const rm_prob *p, uint8_t *cut);

/* Policy for the replay. */
typedef struct rm_policy {
    /* drop_after[u]: stage after which the first materialization of u is
     * freed although later stages read it (they recompute it); UINT32_MAX
     * or NULL: kept to its last use. Recomputed copies are kept to their
     * last use unless keep() says otherwise or pressure evicts them. */
    const uint32_t *drop_after;
    /* Optional: called at the end of stage t for each resident unit that
     * later stages read; return 0 to free it now. */
    int (*keep)(void *user, uint32_t u, uint32_t t);
    void *user;
    /* > 0: evict resident units (DTR score) before a step would exceed
     * this many live arena bytes. */
    uint64_t evict_cap;
    /* Optional: pinned units are never freed once computed (Checkmate's
     * baselines keep their checkpoints to the end of the step). */
    const uint8_t *pin;
    /* > 0: stop as soon as the extra cost exceeds this (pruning). */
    double cost_cutoff;
    /* With evict_cap: 1 scores a resident unit by cost / (bytes x stages
     * to its next reader) instead of DTR's staleness (the schedule is
     * static, so the next use is known: Belady's rule weighted by the
     * recompute cost; helper remat). */
    int evict_next_use;
} rm_policy;

typedef struct rm_out {
    uint64_t peak;           /* live arena bytes, max over steps */
    double extra_cost, extra_flops;
    uint32_t n_recompute;
    int cut;                 /* stopped early by cost_cutoff */
    mp_step *steps;          /* when requested */
    uint32_t n_steps;
} rm_out;

/* Replays stages 0..T-1 under the policy. want_steps: also build the
 * schedule (context allocator; the caller owns out->steps). */
mp_status rm_simulate(const rm_prob *p, const rm_policy *pol, int want_steps,
                      rm_out *out);

/* Offers a policy to the search (simulated; kept when it is the best so
 * far: the search stores the schedule, so user data need not outlive the
 * call). */
typedef mp_status (*rm_try_fn)(void *user, const char *name,
                               const rm_policy *pol);

typedef struct rm_cm_result {
    mp_solve_status status;   /* of the LP/MILP solve */
    double lower_bound;       /* on the extra cost; < 0: none */
    double seconds;
    uint32_t n_cols, n_rows;
    int infeasible;           /* the model has no point within the cap */
    int bound_kind;           /* MP__REMAT_BOUND_* of lower_bound */
    int warm_mapped;          /* MILP: the warm start maps to a model point */
    int from_warm;            /* MILP: the incumbent is the warm start */
} rm_cm_result;

/* bound_kind: one of memplan.h's MP__REMAT_BOUND_*. */

/* Checkmate's model (solvers/remat/checkmate.c): LP relaxation (integer = 0)
 * with rounding, or the MILP (warm-started from warm's schedule when it
 * has steps and maps to a point of the model); every schedule found goes
 * to try_fn. */
mp_status rm_checkmate(const rm_prob *p, uint64_t cap, int integer,
                       double time_limit, const rm_out *warm,
                       rm_cm_result *res, rm_try_fn try_fn, void *try_user);

/* The stage-boundary relaxation of Checkmate's model (O(edges) columns;
 * solvers/remat/checkmate.c says why its LP value bounds every schedule in this
 * order): lower_bound and bound_kind MP_REMAT_BOUND_STAGE_LP, or
 * infeasible; its solution rounded (keep across a boundary when K >=
 * threshold) goes to try_fn when try_fn is not NULL. */
mp_status rm_stage_lp(const rm_prob *p, uint64_t cap, double time_limit,
                      rm_cm_result *res, rm_try_fn try_fn, void *try_user);

/* ---- segment checkpointing (solvers/remat/remat_segments.c, helper remat) ---- */
/* Chen's greedy segments on forward articulation points whose value
 * backward reads, swept over the segment budget, with eviction as a
 * repair, then polished (dropped values kept again while the cap and the
 * cost allow); the best schedule within cap (and max_extra when >= 0)
 * goes to try_fn as "segments" or "segments+evict"; when none fits, the
 * one with the smallest peak does (for the smallest peak found). */
mp_status rm_segments(const rm_prob *p, uint64_t cap, double max_extra,
                      rm_try_fn try_fn, void *try_user);

#endif
