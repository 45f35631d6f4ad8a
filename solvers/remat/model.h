/* solvers/remat/model.h - the recompute problem every recompute solver
 * sees, and the replay that turns a keep/drop policy into a schedule
 * (solvers/remat/model.c). The bottom of solvers/remat/: the heuristics
 * (heuristics.h, remat_chen.h), Checkmate's models (checkmate.h) and the
 * search (search.h) sit above it; the problem is plain data, built from
 * a graph by the driver (planner/remat.c). Internal, not installed. */
#ifndef MP__REMAT_MODEL_H
#define MP__REMAT_MODEL_H

#include "base.h"

/* One unit per node, in the graph's topological order (unit u is stage u).
 * A unit's memory is the aligned bytes of its arena outputs, computed
 * together (the replay frees each after its last reader: t_last).
 * Dependencies go through views to storage roots. */
typedef struct mp__remat_prob {
    mp_ctx *ctx;             /* allocator and messages */
    uint32_t T;
    uint32_t *node;          /* unit -> node id (the steps' index) */
    uint32_t *pos;           /* node id -> unit */
    const char **name;       /* unit -> node name (the graph's: messages) */
    uint64_t *mem;           /* aligned arena bytes of the unit's outputs */
    double *cost, *flops;    /* flops < 0: not given */
    uint8_t *fwd;            /* forward phase */
    uint8_t *out;            /* holds a graph output: never freed */
    uint8_t *cheap;          /* the min-cut default may recompute it
                              * (mp__op_cheap, and its outputs at least a
                              * quarter of its inputs' bytes); NULL: none */
    uint32_t *dep_begin, *deps;  /* producer units of inputs (unique) */
    uint32_t *use_begin, *uses;  /* consumer units, ascending, unique */
    uint32_t *horizon;       /* last stage at which the unit may be needed */
    uint32_t *lock;          /* last stage before which the unit may be
                              * recomputed: the first optimizer unit that
                              * updates in place a weight read by it or by
                              * a unit its recompute may redo (later, it
                              * would read the updated weight); UINT32_MAX
                              * or NULL: no limit. Optimizer units lock
                              * at themselves (never recomputed). */
    uint32_t *free_begin, *frees; /* the unit's arena outputs (tensor ids,
                                   * output order): its FREE steps */
    uint32_t *read_begin, *reads; /* graph inputs (0..n_in-1) it reads */
    uint32_t *root_begin, *roots; /* the arena storage roots the unit reads
                                   * (tensor ids, graph inputs too; a
                                   * schedule written per tensor) */
    uint32_t n_tensors;
    uint64_t *t_mem;         /* tensor -> its aligned bytes when it is an
                              * arena storage root, else 0 */
    uint32_t *unit_of;       /* tensor -> unit whose node produces its
                              * storage root; MP_NONE: none (graph input) */
    uint32_t *t_last;        /* arena storage root -> the last unit reading
                              * it (its producer's when none does): the
                              * replay frees a unit's outputs one by one
                              * (NULL: together, when the unit goes) */
    /* graph inputs that take arena memory */
    uint32_t n_in;
    uint32_t *in_tensor, *in_last, *in_horizon;
    uint64_t *in_mem;
    uint8_t *in_out;         /* the input is (or is viewed by) an output */
    uint64_t persistent;     /* bytes outside the arena (weights, ...) */
    uint64_t alignment;
    double base_cost;
} mp__remat_prob;

/* True when a recompute of unit u before stage t is allowed (p->lock). */
static inline bool mp__remat_may_recompute(const mp__remat_prob *p,
                                           uint32_t u, uint32_t t)
{
    return !p->lock || t <= p->lock[u];
}

/* True when every RECOMPUTE step of the schedule may be there
 * (mp__remat_may_recompute at the stage of the next COMPUTE step). */
bool mp__remat_steps_legal(const mp__remat_prob *p, const mp_step *steps,
                           uint32_t n_steps);

/* Frees the problem's arrays (context allocator); p may be cleared. */
void mp__remat_prob_free(mp__remat_prob *p);

/* cut[u] = 1 for the forward units that no forward edge jumps over (the
 * articulation points of a chain-like forward graph). */
void mp__remat_forward_cuts(const mp__remat_prob *p, uint8_t *cut);
/* Last stage of a forward reader of u (u itself when none). */
uint32_t mp__remat_last_fwd_use(const mp__remat_prob *p, uint32_t u);

/* Policy for the replay. */
typedef struct mp__remat_policy {
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
     * recompute cost). */
    int evict_next_use;
} mp__remat_policy;

typedef struct mp__remat_out {
    uint64_t peak;           /* live arena bytes, max over steps */
    double extra_cost, extra_flops;
    uint32_t n_recompute;
    int cut;                 /* stopped early by cost_cutoff */
    mp_step *steps;          /* when requested */
    uint32_t n_steps;
} mp__remat_out;

/* Replays stages 0..T-1 under the policy. want_steps: also build the
 * schedule (context allocator; the caller owns out->steps). */
mp_status mp__remat_simulate(const mp__remat_prob *p,
                             const mp__remat_policy *pol, int want_steps,
                             mp__remat_out *out);

/* A replay fits: not cut, its peak within cap (live arena bytes), its
 * extra cost within max_extra (< 0: no cap). */
bool mp__remat_fits(const mp__remat_out *o, uint64_t cap, double max_extra);

/* Offers a policy to the search (simulated; kept when it is the best so
 * far: the search stores the schedule, so user data need not outlive the
 * call). */
typedef mp_status (*mp__remat_try_fn)(void *user, const char *name,
                                      const mp__remat_policy *pol);

/* Takes a finished replay (o->steps owned by the callee from then on). */
typedef mp_status (*mp__remat_offer_fn)(void *user, const char *name,
                                        mp__remat_out *o);

/* A schedule being written (context allocator): the first failure
 * sticks in st and later steps are dropped. */
typedef struct mp__remat_steps {
    mp_ctx *ctx;
    mp_step *steps;
    size_t n, cap;
    mp_status st;
} mp__remat_steps;
void mp__remat_step(mp__remat_steps *e, mp_step_kind k, uint32_t idx);
/* FREE steps of unit u's arena outputs. */
void mp__remat_step_frees(mp__remat_steps *e, const mp__remat_prob *p,
                          uint32_t u);

#endif /* MP__REMAT_MODEL_H */
