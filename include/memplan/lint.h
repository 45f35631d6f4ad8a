/*
 * memplan/lint.h - static lints of a plan (docs/report.md): where the peak
 * comes from by layer and by op, dead and pinned outputs, missed in-place
 * chances, unfused attention, KV-cache size, fragmentation; each finding
 * with a byte figure. Also the simulation of PyTorch's CUDA caching
 * allocator that the fragmentation lint replays.
 *
 *     mp_lints *l = NULL;
 *     if (mp_plan_lint(plan, NULL, &l) == MP_OK)
 *         for (uint32_t i = 0; i < mp_lints_count(l); i++)
 *             puts(mp_lints_get(l, i)->message);
 *     mp_lints_destroy(l);
 */
#ifndef MEMPLAN_LINT_H
#define MEMPLAN_LINT_H

#include "offsets.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- static lints ------------------------------------------------------- */
/* Lints: static findings about a plan, each with a byte figure. */
typedef enum mp_lint_kind {
    MP_LINT_PEAK_LAYER = 0,    /* a layer (name prefix) holding part of the
                                  peak: bytes live there, share of the peak */
    MP_LINT_PEAK_OP = 1,       /* the same grouped by producing op type */
    MP_LINT_DEAD_OUTPUT = 2,   /* computed, never read, not a graph output:
                                  bytes = its arena block */
    MP_LINT_PINNED_OUTPUT = 3, /* a graph output live at the peak step,
                                  computed before it: bytes = its block */
    MP_LINT_INPLACE = 4,       /* an op that may write its output into its
                                  input, which dies there, but does not:
                                  bytes = output block saved while it runs,
                                  aux_bytes = the saving at the peak step */
    MP_LINT_ATTENTION = 5,     /* MatMul -> (pointwise) -> Softmax -> MatMul:
                                  bytes = score-chain bytes live at the peak
                                  step (what a fused kernel would not hold),
                                  aux_bytes = one score tensor */
    MP_LINT_KV_CACHE = 6,      /* decoder KV cache (past key/value inputs):
                                  bytes per token, aux_bytes at the context */
    MP_LINT_FRAGMENTATION = 7  /* PyTorch caching-allocator replay:
                                  bytes = reserved - arena (0 when below),
                                  aux_bytes = reserved bytes */
} mp_lint_kind;
#define MP_LINT_KIND_COUNT 8
/* The name of a lint kind: "peak-layer", "dead-output", ...; NULL for an
 * unknown kind. */
MP_API const char *mp_lint_kind_name(mp_lint_kind k);

typedef struct mp_lint {
    mp_lint_kind kind;
    uint64_t bytes;       /* the figure (see each kind) */
    uint64_t aux_bytes;   /* a second figure, 0 where the kind has none */
    double share;         /* a fraction in [0, 1]: PEAK_*: bytes / live
                           * bytes at the peak step; FRAGMENTATION: bytes
                           * / aux_bytes, the part of the reserved memory
                           * the planned arena does without; 0 for the
                           * other kinds */
    uint32_t node;        /* the node concerned, or MP_NONE */
    uint32_t tensor;      /* the tensor concerned, or MP_NONE */
    const char *subject;  /* layer, op type, tensor or pattern name */
    const char *message;  /* one line for people */
} mp_lint;

typedef struct mp_lint_options {
    uint32_t layer_depth;   /* name components that make a layer (1) */
    uint32_t top;           /* peak attribution entries per grouping (5) */
    uint64_t kv_context;    /* tokens for the KV-cache figure (4096) */
    int fragmentation;      /* 1: replay the caching allocator (default) */
} mp_lint_options;
/* Fills lint options with their defaults (in parentheses above). NULL is
 * a no-op. */
MP_API void mp_lint_options_init(mp_lint_options *o);

typedef struct mp_lints mp_lints;
/* Runs every lint on a plan. opt may be NULL (defaults). Deterministic:
 * the findings come in kind order, largest figure first within a kind.
 * Errors: MP_ERR_INVALID_ARG (NULL, a bad option), MP_ERR_NOMEM. */
MP_API mp_status mp_plan_lint(const mp_plan *p, const mp_lint_options *opt,
                              mp_lints **out);
/* Frees the findings. NULL is accepted. */
MP_API void mp_lints_destroy(mp_lints *l);
/* The number of findings; 0 for NULL. */
MP_API uint32_t mp_lints_count(const mp_lints *l);
/* Finding i (its strings live in the findings); NULL out of range. */
MP_API const mp_lint *mp_lints_get(const mp_lints *l, uint32_t i);

/* ---- caching-allocator simulation --------------------------------------- */
/* Caching-allocator simulation (PyTorch's CUDA caching allocator rules:
 * requests rounded up to 512 bytes; <= 1 MiB from 2 MiB segments, larger
 * from 20 MiB segments below 10 MiB and from segments rounded up to 2 MiB
 * above; best fit over cached free blocks (smallest, then lowest address);
 * a block is split when the rest is >= 512 bytes (small pool) or > 1 MiB
 * (large pool); freed blocks merge with free neighbours; segments are never
 * returned). Buffers are allocated at `start` and freed at `end` (frees of
 * a time before its allocations, each in buffer order); `size` is the
 * requested byte count, `offset` is ignored. */
typedef struct mp_cache_sim_result {
    uint64_t reserved_bytes;        /* all segments obtained (cudaMalloc) */
    uint64_t small_reserved_bytes;  /* of which 2 MiB small-pool segments */
    uint64_t peak_allocated_bytes;  /* max over time of rounded block bytes */
    uint64_t peak_requested_bytes;  /* max over time of requested bytes */
    uint32_t segments;              /* cudaMalloc calls */
    uint32_t splits;                /* blocks split on allocation */
    uint32_t reuses;                /* allocations served from the cache */
} mp_cache_sim_result;
/* Replays n buffers through the caching allocator (above) and reports what
 * it reserves: what a framework without a planner would need.
 * Errors: MP_ERR_INVALID_ARG (NULL, a bad value), MP_ERR_NOMEM.
 * Example: mp_cache_sim(ctx, bufs, n, &r); r.reserved_bytes vs arena. */
MP_API mp_status mp_cache_sim(mp_ctx *ctx, const mp_buffer *bufs, size_t n,
                              mp_cache_sim_result *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_LINT_H */
