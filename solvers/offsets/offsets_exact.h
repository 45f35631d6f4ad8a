/* Exact and ILP tiers of the offsets solver (solvers/offsets/offsets_exact.c,
 * solvers/offsets/offsets_ilp.c). Internal. */
#ifndef MP__OFFSETS_EXACT_H
#define MP__OFFSETS_EXACT_H

#include "offsets_internal.h"

typedef struct mp__ofs_exact_opts {
    uint64_t capacity;    /* > 0: find a packing within it; 0: minimise */
    double time_limit;    /* seconds, safety net; <= 0: default */
    uint64_t node_limit;  /* search nodes in all; 0: default */
    uint64_t work_limit;  /* work units in all (list entries and section
                           * members visited); 0: none */
    uint64_t mem_limit;   /* bytes of search state; 0: none. Above it the
                           * search does not start (res->skipped), or stops
                           * when its lists outgrow it */
} mp__ofs_exact_opts;

typedef struct mp__ofs_exact_res {
    uint64_t arena;       /* of off_out; UINT64_MAX when nothing was found */
    uint64_t proven_lb;   /* no packing exists below this */
    mp_solve_status status;
    uint64_t nodes;       /* search nodes explored */
    uint64_t work;        /* work units spent */
    int timed_out;        /* the wall-clock limit fired */
    int skipped;          /* mem_limit: the search state would not fit */
} mp__ofs_exact_res;

#define MP__OFS_EXACT_DEFAULT_NODES 20000000ull
#define MP__OFS_EXACT_DEFAULT_TIME 10.0

/* Branch and bound over canonical placements (see offsets_exact.c).
 * seed_off/seed_arena: a known packing (may be NULL / UINT64_MAX). Writes
 * the best packing found to off_out (p->n entries; the seed when nothing
 * better). status: OPTIMAL (minimise: arena == proven_lb; capacity: the
 * packing fits and arena == lb), FEASIBLE (a packing within the capacity,
 * or the minimisation stopped with a gap), INFEASIBLE (proven: nothing
 * fits the capacity), TIMEOUT (capacity: budget spent, none found). */
mp_status mp__ofs_exact(const mp__ofs_prob *p, const uint64_t *seed_off,
                       uint64_t seed_arena, const mp__ofs_exact_opts *opt,
                       uint64_t *off_out, mp__ofs_exact_res *res);

/* The exact stage of mp_offsets_solve: runs for method EXACT, and for
 * AUTO (up to 20000 buffers, a budget of 1e5 nodes) when the best packing
 * is above the lower bound or the capacity. best_off/best_arena: in, the
 * heuristic's packing; out, the best known. Sets res->proven_lb_bytes and
 * res->nodes; *ran tells whether the search ran. */
mp_status mp__ofs_exact_stage(const mp__ofs_prob *p,
                             const mp_offsets_options *opt, double t0,
                             uint64_t *best_off, uint64_t *best_arena,
                             mp_offsets_result *res, int *ran);

/* ILP tier through GLPK: pairwise big-M non-overlap for pairs that overlap
 * in time, offsets in units of the GCD of the sizes, warm start from
 * seed_off. capacity > 0: offsets must fit it (decision); 0: minimise.
 * MP_ERR_UNSUPPORTED without GLPK. Meant for small instances. */
typedef struct mp__ofs_ilp_res {
    uint64_t arena;       /* UINT64_MAX when none */
    uint64_t proven_lb;
    mp_solve_status status;
    double seconds;
} mp__ofs_ilp_res;
mp_status mp__ofs_ilp(const mp__ofs_prob *p, const uint64_t *seed_off,
                     uint64_t seed_arena, uint64_t capacity,
                     double time_limit, uint64_t *off_out,
                     mp__ofs_ilp_res *res);

#endif
