/* Internal interface of the offsets solver (dynamic storage allocation).
 * Shared by solvers/offsets/offsets.c (options, lower bound, orchestration, the
 * improvement pass) and solvers/offsets/offsets_place.c (placement engines). */
#ifndef MP__OFFSETS_INTERNAL_H
#define MP__OFFSETS_INTERNAL_H

#include "base.h"

/* A problem after validation: sizes rounded up to the alignment and time
 * compressed to the ranks of the distinct start times. Two buffers overlap
 * in time iff their compressed ranges [l, r) intersect (the later start of
 * two overlapping buffers is a start point covered by both). */
typedef struct mp__ofs_prob {
    mp_ctx *ctx;
    uint32_t n;
    uint32_t nt;        /* distinct start times */
    uint32_t *l, *r;    /* compressed half-open ranges, l < r <= nt */
    uint64_t *size;     /* aligned sizes */
    const mp_buffer *bufs;
    uint64_t total;     /* sum of aligned sizes (fits in 64 bits) */
    uint64_t lb;        /* max over time of live aligned bytes */
    uint64_t pairs;     /* overlapping ordered pairs (a != b) */
    uint32_t maxdeg;
    /* bit matrix of the pairs overlapping in time (n rows of `words`
     * 64-bit words), only for small n; NULL otherwise. */
    uint64_t *mat;
    uint32_t words;
} mp__ofs_prob;

enum { MP__OFS_FIRSTFIT = 0, MP__OFS_BESTFIT = 1 };

/* Builds p from bufs (validates, aligns, compresses, lower bound). */
mp_status mp__ofs_prob_init(mp_ctx *ctx, mp__ofs_prob *p, const mp_buffer *bufs,
                           size_t n, uint64_t alignment);
/* Builds the overlap matrix when n <= max_n. */
mp_status mp__ofs_prob_matrix(mp__ofs_prob *p, uint32_t max_n);
void mp__ofs_prob_free(mp__ofs_prob *p);

/* Stable merge sort of idx[0..n) with cmp(ctx, a, b) < 0 meaning a first. */
typedef int (*mp__ofs_cmp_fn)(const void *ctx, uint32_t a, uint32_t b);
mp_status mp__ofs_sort_idx(mp_ctx *ctx, uint32_t *idx, uint32_t n,
                          mp__ofs_cmp_fn cmp, const void *cctx);

/* ---- matrix engine: incremental re-placement from a position ---------- */
typedef struct mp__ofs_mat_ws {
    uint32_t *pos;      /* pos[b]: position of b in the current order */
    uint64_t *off;      /* offsets */
    uint64_t *ptop;     /* ptop[i]: max end among order[0..i] */
    uint32_t *sorted;   /* placed buffers by offset */
    uint32_t nsorted;
} mp__ofs_mat_ws;

mp_status mp__ofs_mat_ws_init(const mp__ofs_prob *p, mp__ofs_mat_ws *w);
void mp__ofs_mat_ws_free(mp_ctx *ctx, mp__ofs_mat_ws *w);
/* Places order[from..n) given order[0..from) placed (w->off, w->ptop and
 * w->sorted hold at least that prefix, in offset order); w->pos must match
 * order. Returns the arena. */
uint64_t mp__ofs_mat_place(const mp__ofs_prob *p, mp__ofs_mat_ws *w,
                          const uint32_t *order, uint32_t from, int fit);

/* ---- segment-tree engine: any size, O(log T) sets per buffer ----------- */
typedef struct mp__ofs_tree mp__ofs_tree;
mp_status mp__ofs_tree_create(const mp__ofs_prob *p, mp__ofs_tree **out);
void mp__ofs_tree_destroy(mp__ofs_tree *t);
/* Places all buffers in the given order; writes off[], returns arena in
 * *arena. Past `deadline` (read every few hundred buffers) it stops with
 * *complete = 0: with `stack`, the buffers not yet placed are stacked
 * above the placed ones (a valid placement, fast), otherwise off[] is
 * partial. */
mp_status mp__ofs_tree_place(mp__ofs_tree *t, const uint32_t *order, int fit,
                            uint64_t *off, uint64_t *arena, double deadline,
                            int stack, int *complete);

/* ---- repair pass (offsets_large.c): any size ---------------------------- */
/* Lowers the buffers that reach the top of the arena by re-placing them
 * and the buffers in their way; off[] and *arena are updated in place and
 * stay a valid placement. budget: work units (visited buffers); *improved
 * is set when the arena fell. */
mp_status mp__ofs_repair(const mp__ofs_prob *p, uint64_t *off, uint64_t *arena,
                        uint64_t budget, double deadline, int *improved);

#endif
