/*
 * memplan/report.h - pictures and traces of a plan (docs/report.md): the
 * graph as DOT through Graphviz, a self-contained HTML report (figures,
 * memory timeline, arena layout, lints), and a Chrome trace-event file
 * for Perfetto.
 *
 *     mp_html_options ho;
 *     mp_html_options_init(&ho);
 *     mp_plan_write_html(plan, "plan.html", &ho);
 *     mp_plan_write_trace(plan, "plan.trace.json", NULL);
 */
#ifndef MEMPLAN_REPORT_H
#define MEMPLAN_REPORT_H

#include "cost.h"
#include "lint.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- DOT ---------------------------------------------------------------- */
/* DOT through Graphviz cgraph: one box per node coloured by phase, edges
 * labelled with tensor sizes, tensors live at the peak in red, recompute
 * and offload marked. Nodes are grouped by module, from their names as
 * TensorBoard does ("/layer1/layer1.0/conv1/Conv": conv1 in layer1.0 in
 * layer1): modules are nested clusters, and above max_nodes drawn nodes
 * the deepest module level that fits is collapsed, each module one box
 * (its op count and bytes), edges between boxes merged with their tensor
 * count; names without '/' are cut into runs of consecutive nodes. A
 * collapsed graph is acyclic (a module whose nodes cannot be drawn
 * together without a cycle is split into parts). */
typedef struct mp_dot_options {
    const char *collapse_prefix; /* comma-separated prefixes: the nodes of
                                    each become one node; NULL: none */
    uint32_t collapse_depth;     /* > 0: nodes grouped by their first N
                                    '/'-separated name components, one box
                                    per group */
    int clusters;                /* 1 (default): modules as clusters */
    int show_weights;            /* 0 (default): persistent tensors hidden */
    uint32_t max_nodes;          /* without collapse_prefix/depth: above
                                    this many drawn nodes (120) the graph
                                    is collapsed to at most this many
                                    boxes; 0: never (every node drawn) */
} mp_dot_options;
/* Fills DOT options with their defaults (the comments above). NULL is a
 * no-op. */
MP_API void mp_dot_options_init(mp_dot_options *o);
/* 1 when this build writes DOT (cgraph), else 0: mp_plan_write_dot then
 * returns MP_ERR_UNSUPPORTED. */
MP_API int mp_dot_available(void);
/* Writes the plan's graph as DOT (mp_dot_options, above); opt may be NULL.
 * Errors: MP_ERR_UNSUPPORTED (a build without Graphviz), MP_ERR_IO (not
 * writable), MP_ERR_INVALID_ARG (NULL, a bad option), MP_ERR_NOMEM.
 * Example: mp_plan_write_dot(plan, "plan.dot", NULL); */
MP_API mp_status mp_plan_write_dot(const mp_plan *p, const char *path,
                                   const mp_dot_options *opt);

/* ---- HTML --------------------------------------------------------------- */
/* HTML report: one self-contained file (inline SVG, CSS and script, no
 * network): figures, the budget against the peak, memory timeline (the
 * persistent memory as a band under the live arena bytes by tensor kind,
 * the budget as a line), arena layout (one bordered rectangle per block,
 * <title> on hover, the persistent memory as a band under it), what was
 * recomputed and offloaded, the tensors at the peak, the modules (node
 * names' hierarchy) and the lints (lints may be NULL). Steps that
 * allocate nothing are folded out of the drawings; the page's script
 * zooms, pans, searches by name and shows the folded steps. */
typedef struct mp_html_options {
    const char *title;       /* NULL: the graph's name */
    uint32_t max_rects;      /* arena rectangles drawn (5000), the largest
                                by bytes x steps; the rest are summed up in
                                a note */
    uint32_t max_points;     /* timeline samples (4000) */
    const mp_lints *lints;
    uint64_t budget;         /* bytes (arena + persistent) the plan was
                                made under, drawn as a line; 0 (default):
                                none */
    const mp_device *device; /* times the recomputes and the offload
                                copies in their table; NULL (default): no
                                times, only the recompute solvers' cost */
} mp_html_options;
/* Fills HTML options with their defaults (in parentheses above). NULL is
 * a no-op. */
MP_API void mp_html_options_init(mp_html_options *o);
/* Writes the HTML report (mp_html_options, above); opt may be NULL.
 * Errors: MP_ERR_IO (not writable), MP_ERR_INVALID_ARG (NULL, a bad
 * option), MP_ERR_NOMEM. */
MP_API mp_status mp_plan_write_html(const mp_plan *p, const char *path,
                                    const mp_html_options *opt);
/* Writes one page for n plans (the distinct ranks of a multi-GPU step,
 * memplan/parallel.h): first every plan's memory timeline side by side on
 * one scale (the highest peak), each with its peak marked and a link to
 * its section, then each plan's section as mp_plan_write_html draws it,
 * headed by labels[i] (labels NULL, or an entry NULL: "plan i+1").
 * Errors: as mp_plan_write_html; MP_ERR_INVALID_ARG (n 0, a NULL plan). */
MP_API mp_status mp_plans_write_html(const mp_plan *const *plans,
                                     const char *const *labels, uint32_t n,
                                     const char *path,
                                     const mp_html_options *opt);

/* ---- trace -------------------------------------------------------------- */
/* Writes a Chrome trace-event JSON file (Perfetto, chrome://tracing): one
 * "X" slice per step (compute and recompute on thread 1,
 * free/offload/prefetch on thread 2), a "C" counter of live arena bytes,
 * one of them by tensor kind (activation, input, gradient, output) and
 * one of the persistent bytes by kind (weight, constant, optimizer
 * state).
 * step_seconds may give each step's duration (n_steps entries, from a cost
 * model for instance); else a node's given seconds, else 1 microsecond per
 * compute step, 0 for the others.
 * Errors: MP_ERR_IO (not writable), MP_ERR_INVALID_ARG (NULL),
 * MP_ERR_NOMEM. */
MP_API mp_status mp_plan_write_trace(const mp_plan *p, const char *path,
                                     const double *step_seconds);

/* ---- PyTorch memory snapshot ------------------------------------------- */
/* Writes the plan as a PyTorch CUDA memory snapshot, the pickle that
 * torch.cuda.memory._dump_snapshot writes, for pytorch.org/memory_viz and
 * python -m torch.cuda._memory_viz (docs/report.md): "segments" (one per
 * pool of the arena, with the blocks live at the end of the schedule and
 * the gaps between them, and one of the persistent tensors) and
 * "device_traces" (one device: an "alloc" event per block at its first
 * step, "free_requested" and "free_completed" at its end; "time_us" is
 * the step; each event's frame names the tensor, its kind, its producer
 * node and op). Addresses: pool k of the arena at 0x7f0000000000 + k *
 * 2^40 plus the block's offset, persistent tensors from 0x7e0000000000.
 * Pickle protocol 2, builtin types only.
 * Errors: MP_ERR_IO (not writable), MP_ERR_INVALID_ARG (NULL),
 * MP_ERR_NOMEM.
 * Example: mp_plan_write_memory_viz(plan, "plan.pickle"); */
MP_API mp_status mp_plan_write_memory_viz(const mp_plan *p, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_REPORT_H */
