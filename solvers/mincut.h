/* solvers/mincut.h - maximum flow / minimum s-t cut (solvers/mincut.c):
 * a directed graph with 64-bit capacities in, the flow value (= the
 * capacity of a minimum cut) and each vertex's side of a minimum cut out.
 * Dinic's algorithm, iterative. Internal, not installed. */
#ifndef MP__MINCUT_H
#define MP__MINCUT_H

#include "base.h"

/* An infinite capacity: never cut. */
#define MP__FLOW_INF UINT64_MAX

typedef struct mp__flow_prob {
    uint32_t n;                /* vertices 0..n-1 */
    uint32_t m;                /* edges */
    const uint32_t *from, *to; /* edge i: from[i] -> to[i] */
    const uint64_t *cap;       /* capacity; MP__FLOW_INF: infinite */
    uint32_t source, sink;     /* distinct, < n */
    /* 0: the minimum cut nearest the source (source side = the vertices
     * the source reaches in the residual graph); 1: the one nearest the
     * sink (sink side = the vertices that reach the sink) */
    int near_sink;
} mp__flow_prob;

typedef struct mp__flow_sol {
    /* the maximum flow = the capacity of a minimum cut; MP__FLOW_INF when
     * every cut holds an infinite edge (a path of infinite edges joins the
     * source to the sink) */
    uint64_t value;
    /* n entries (context allocator, the caller frees): 1 for the vertices
     * on the source side of the minimum cut (unspecified when value is
     * MP__FLOW_INF) */
    uint8_t *source_side;
} mp__flow_sol;

/* Solves p. The finite capacities must sum below 2^62 (else
 * MP_ERR_OVERFLOW, with a message); MP_ERR_INVALID_ARG for a bad vertex;
 * MP_ERR_NOMEM. Deterministic; time O(n^2 m), memory O(n + m). */
mp_status mp__mincut(mp_ctx *ctx, const mp__flow_prob *p, mp__flow_sol *s);

/* The capacity of the cut that side[] gives (edges from side 1 to side
 * 0); MP__FLOW_INF when one of them is infinite. */
uint64_t mp__cut_capacity(const mp__flow_prob *p, const uint8_t *side);

#endif /* MP__MINCUT_H */
