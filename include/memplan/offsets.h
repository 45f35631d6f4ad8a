/*
 * memplan/offsets.h - the offsets problem on its own (dynamic storage
 * allocation): buffers with a size and a lifetime in, an offset for each
 * out, so that no two buffers live at the same time overlap and the arena
 * is as small as possible (docs/algorithms-offsets.md). Also its lower
 * bound, an independent verifier, and MiniMalloc CSV traces.
 *
 * For runtimes that already know their lifetimes and only need placement;
 * graph plans (memplan/plan.h) use the same solvers.
 */
#ifndef MEMPLAN_OFFSETS_H
#define MEMPLAN_OFFSETS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- offsets (dynamic storage allocation) ------------------------------- */
/* A buffer of `size` bytes live on the half-open interval [start, end). */
typedef struct mp_buffer {
    int64_t start, end;
    uint64_t size;
    uint64_t offset;   /* output of the solver, input of the verifier */
} mp_buffer;

typedef enum mp_solve_status {
    MP_SOLVE_NONE = 0, MP_SOLVE_OPTIMAL = 1, MP_SOLVE_FEASIBLE = 2,
    MP_SOLVE_INFEASIBLE = 3, MP_SOLVE_TIMEOUT = 4
} mp_solve_status;
/* The name of a solver status: "none", "optimal", "feasible",
 * "infeasible", "timeout"; "unknown" outside the table. */
MP_API const char *mp_solve_status_name(mp_solve_status s);

typedef enum mp_offsets_method {
    MP_OFFSETS_AUTO = 0,        /* every heuristic, keep the best, improve */
    MP_OFFSETS_SIZE_BESTFIT,    /* greedy by size, best-fit gap */
    MP_OFFSETS_SIZE_FIRSTFIT,   /* greedy by size, lowest gap */
    MP_OFFSETS_BREADTH,         /* greedy by breadth (TFLite) */
    MP_OFFSETS_START_FIRSTFIT,  /* by start time, lowest gap */
    MP_OFFSETS_NAIVE,           /* no reuse: buffers stacked end to end */
    /* exact tier: greedy seed, then a branch and bound that proves
     * optimality or fits opt->capacity (docs/algorithms-offsets.md) */
    MP_OFFSETS_EXACT
} mp_offsets_method;
/* The name of an offsets method: "auto", "size-bestfit", "size-firstfit",
 * "breadth", "start-firstfit", "naive", "exact"; "unknown" outside the
 * table. */
MP_API const char *mp_offsets_method_name(mp_offsets_method m);
/* Parses an offsets method name as mp_offsets_method_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_offsets_method_parse("exact", &opt.method); */
MP_API mp_status mp_offsets_method_parse(const char *name,
                                         mp_offsets_method *out);

/* Seconds mp_offsets_solve takes at most when time_limit is <= 0. */
#define MP_OFFSETS_DEFAULT_TIME_LIMIT 10.0

typedef struct mp_offsets_options {
    mp_offsets_method method;
    uint64_t alignment;      /* offsets and sizes rounded up to it; >= 1 */
    /* seconds for the whole solve, every pass and tier (setup that is
     * linear or n log n excepted); <= 0: MP_OFFSETS_DEFAULT_TIME_LIMIT */
    double time_limit;
    uint64_t seed;
    /* exact tier: > 0 asks for a packing within `capacity` bytes
     * (mp_offsets_solve returns MP_ERR_INFEASIBLE, with the best packing
     * found placed, when there is none or none was found); 0: minimise */
    uint64_t capacity;
} mp_offsets_options;
/* Fills offsets options with their defaults: method AUTO, alignment 1,
 * the default time limit, seed 0, no capacity. NULL is a no-op. */
MP_API void mp_offsets_options_init(mp_offsets_options *o);

typedef struct mp_offsets_result {
    uint64_t arena_bytes;
    uint64_t lower_bound_bytes;  /* max over time of live (aligned) bytes */
    mp_solve_status status;      /* OPTIMAL when arena == lower bound */
    const char *solver;          /* static string: which heuristic won */
    double seconds;
    /* exact tier: no packing is smaller than proven_lb_bytes
     * (>= lower_bound_bytes); search nodes explored (0: not run) */
    uint64_t proven_lb_bytes;
    uint64_t nodes;
} mp_offsets_result;

/* Places every buffer so that no two live at the same time overlap,
 * minimising the arena (sets .offset). Deterministic for a given seed.
 * Errors: MP_ERR_INVALID_ARG (NULL, an unknown method, bad options),
 * MP_ERR_INFEASIBLE (opt->capacity given and no packing found within it;
 * the best packing found is placed), MP_ERR_NOMEM.
 * Example: mp_offsets_solve(ctx, bufs, n, &opt, &res); then
 *          printf("%llu\n", (unsigned long long)res.arena_bytes); */
MP_API mp_status mp_offsets_solve(mp_ctx *ctx, mp_buffer *bufs, size_t n,
                                  const mp_offsets_options *opt,
                                  mp_offsets_result *res);
/* Max over time of the sum of live sizes, each rounded up to alignment:
 * no placement has a smaller arena.
 * Errors: MP_ERR_INVALID_ARG (NULL, alignment 0), MP_ERR_OVERFLOW (the
 * sum), MP_ERR_NOMEM. */
MP_API mp_status mp_offsets_lower_bound(mp_ctx *ctx, const mp_buffer *bufs,
                                        size_t n, uint64_t alignment,
                                        uint64_t *lb);
/* Checks that buffers live at the same time do not overlap, that every
 * offset is a multiple of alignment and that every buffer ends within
 * `arena` bytes (UINT64_MAX: no limit). Independent of the solvers.
 * Errors: MP_ERR_VERIFY (the first violation, naming the buffers and
 * offsets), MP_ERR_INVALID_ARG (NULL, alignment 0), MP_ERR_OVERFLOW (too
 * many buffers), MP_ERR_NOMEM.
 * Example: mp_offsets_verify(ctx, bufs, n, 64, res.arena_bytes); */
MP_API mp_status mp_offsets_verify(mp_ctx *ctx, const mp_buffer *bufs,
                                   size_t n, uint64_t alignment,
                                   uint64_t arena);

/* ---- MiniMalloc traces -------------------------------------------------- */
/* Reads a MiniMalloc trace: CSV with header id,lower,upper,size and an
 * optional fifth column offset. The buffers (and the ids, kept in *ids_out
 * when it is not NULL) are allocated with the context allocator: release
 * them with mp_free. *has_offsets says whether offsets were given.
 * Errors: MP_ERR_IO (unreadable), MP_ERR_PARSE (a malformed line;
 * file:line named), MP_ERR_INVALID_ARG (NULL), MP_ERR_NOMEM. */
MP_API mp_status mp_trace_load_csv(mp_ctx *ctx, const char *path,
                                   mp_buffer **bufs_out, int64_t **ids_out,
                                   size_t *n_out, int *has_offsets);
/* Writes buffers as a MiniMalloc CSV trace with their offsets (ids from
 * `ids`, or 0..n-1 when NULL).
 * Errors: MP_ERR_IO (not writable), MP_ERR_INVALID_ARG (NULL),
 * MP_ERR_NOMEM. */
MP_API mp_status mp_trace_save_csv(mp_ctx *ctx, const char *path,
                                   const mp_buffer *bufs, const int64_t *ids,
                                   size_t n);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_OFFSETS_H */
