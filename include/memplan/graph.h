/*
 * memplan/graph.h - the computation graph: building one in memory
 * (tensors, nodes, attributes, costs), finalizing it, and reading it back
 * (counts, lookups by name, tensor and node descriptions, attributes).
 *
 * A graph is built with mp_graph_add_tensor and mp_graph_add_node, closed
 * with mp_graph_finalize, then planned (memplan/plan.h). The loaders of
 * memplan/load.h return finalized graphs.
 */
#ifndef MEMPLAN_GRAPH_H
#define MEMPLAN_GRAPH_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- graphs ------------------------------------------------------------- */
typedef struct mp_graph mp_graph;

#define MP_MAX_RANK 16

typedef struct mp_tensor_desc {
    const char *name;       /* unique, required */
    mp_dtype dtype;
    int rank;               /* -1: shape not given */
    const int64_t *dims;    /* rank entries; -1 for an unknown dim */
    uint64_t bytes;         /* 0: derive from dtype and shape */
    mp_tensor_kind kind;
} mp_tensor_desc;

typedef struct mp_node_desc {
    const char *name;       /* unique, required */
    const char *op;         /* op type, e.g. "Relu", required */
    const char *domain;     /* NULL or "" for the default domain */
    const uint32_t *inputs; /* tensor ids; MP_NONE for an omitted input */
    uint32_t n_inputs;
    const uint32_t *outputs;
    uint32_t n_outputs;
    mp_phase phase;
} mp_node_desc;

/* Creates an empty graph in ctx, to be filled with mp_graph_add_tensor and
 * mp_graph_add_node and closed with mp_graph_finalize.
 * Errors: MP_ERR_INVALID_ARG (NULL), MP_ERR_NOMEM.
 * Example: mp_graph *g = NULL; mp_graph_create(ctx, &g); */
MP_API mp_status mp_graph_create(mp_ctx *ctx, mp_graph **out);
/* Frees a graph and everything it owns; destroy the plans made from it
 * first. NULL is accepted. */
MP_API void mp_graph_destroy(mp_graph *g);
/* The context a graph belongs to; NULL for NULL. */
MP_API mp_ctx *mp_graph_ctx(const mp_graph *g);
/* Sets the graph's name (copied), written to JSON and shown in reports.
 * Errors: MP_ERR_INVALID_ARG (NULL), MP_ERR_NOMEM. */
MP_API mp_status mp_graph_set_name(mp_graph *g, const char *name);
/* The graph's name; "" when it has none, and for NULL. */
MP_API const char *mp_graph_name(const mp_graph *g);

/* Adds a tensor and returns its id in *id_out (ids count from 0 in the
 * order added). bytes 0 derives the size from dtype and dims; rank -1
 * leaves the shape to inference. The kind decides where it lives (arena or
 * persistent).
 * Errors: MP_ERR_DUPLICATE (a name taken), MP_ERR_INVALID_ARG (NULL, no
 * name, a bad kind or dtype, a rank above MP_MAX_RANK, a finalized graph),
 * MP_ERR_BAD_DIM (a dim below -1), MP_ERR_OVERFLOW (a size beyond 64 bits,
 * too many tensors), MP_ERR_NOMEM.
 * Example: int64_t d[2] = {8, 512};
 *          mp_tensor_desc t = {"x", MP_DTYPE_FLOAT32, 2, d, 0,
 *                              MP_KIND_INPUT};
 *          mp_graph_add_tensor(g, &t, &x); */
MP_API mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                                     uint32_t *id_out);
/* Adds a node reading d->inputs and writing d->outputs (tensor ids); its
 * id goes to *id_out. The op is looked up in the op registry at finalize;
 * an unknown op is accepted when its outputs have explicit sizes.
 * Errors: MP_ERR_DUPLICATE (a name taken, an output already produced or
 * listed twice), MP_ERR_NOT_FOUND (an id that is no tensor),
 * MP_ERR_INVALID_ARG (NULL, no name or op, a bad phase, a finalized
 * graph), MP_ERR_NOMEM. */
MP_API mp_status mp_graph_add_node(mp_graph *g, const mp_node_desc *d,
                                   uint32_t *id_out);
/* Marks a tensor as a graph output (kept to the end of the schedule).
 * Errors: MP_ERR_NOT_FOUND (no such tensor), MP_ERR_INVALID_ARG (NULL, a
 * finalized graph). */
MP_API mp_status mp_graph_mark_output(mp_graph *g, uint32_t tensor);
/* Optional cost of a node: FLOPs, bytes moved, estimated seconds (<0 unset).
 * Given figures take precedence over the op registry's estimates.
 * Errors: MP_ERR_NOT_FOUND (no such node), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_set_node_cost(mp_graph *g, uint32_t node,
                                        double flops, double bytes,
                                        double seconds);
/* The unit of the node times the graph gives (mp_graph_set_node_cost's
 * `seconds`): NULL or "s" for seconds (the default), else the name of the
 * graph's own unit, e.g. "cost_cpu" for Checkmate's profiled costs, which
 * are not seconds. Planners that add node times to seconds of their own
 * (the offload planner's host transfers) do not take node times in
 * another unit: they time those nodes on the device's cost model.
 * Like the node costs, it may be set on a finalized graph.
 * Errors: MP_ERR_INVALID_ARG (NULL graph), MP_ERR_NOMEM. */
MP_API mp_status mp_graph_set_cost_unit(mp_graph *g, const char *unit);
/* The unit of the graph's given node times: "s" (seconds, also for NULL)
 * or the unit mp_graph_set_cost_unit named. */
MP_API const char *mp_graph_cost_unit(const mp_graph *g);
/* Sets attribute `name` of a node (int, float, string, int list, float
 * list; strings and lists are copied), replacing one of the same name:
 * what shape inference and kernels read.
 * Errors: MP_ERR_NOT_FOUND (no such node), MP_ERR_INVALID_ARG (NULL, a
 * finalized graph), MP_ERR_NOMEM.
 * Example: mp_graph_set_attr_int(g, softmax, "axis", -1); */
MP_API mp_status mp_graph_set_attr_int(mp_graph *g, uint32_t node,
                                       const char *name, int64_t v);
MP_API mp_status mp_graph_set_attr_float(mp_graph *g, uint32_t node,
                                         const char *name, double v);
MP_API mp_status mp_graph_set_attr_string(mp_graph *g, uint32_t node,
                                          const char *name, const char *v);
MP_API mp_status mp_graph_set_attr_ints(mp_graph *g, uint32_t node,
                                        const char *name, const int64_t *v,
                                        uint32_t n);
MP_API mp_status mp_graph_set_attr_floats(mp_graph *g, uint32_t node,
                                          const char *name, const double *v,
                                          uint32_t n);

/* Checks the graph (one producer per tensor, no cycles, sizes known),
 * infers sizes through the op registry, resolves views (aliases), folds
 * constants and builds consumer lists and a topological order. Required
 * before planning; the graph cannot be extended afterwards.
 * Errors: MP_ERR_CYCLE (the message names nodes on it),
 * MP_ERR_NO_PRODUCER (a tensor read but never produced), MP_ERR_GRAPH (a
 * graph input that a node produces), MP_ERR_UNKNOWN_OP (an unknown op
 * whose output sizes are not given), MP_ERR_SHAPE (a size that cannot be
 * inferred; node and tensor named), MP_ERR_NOMEM. */
MP_API mp_status mp_graph_finalize(mp_graph *g);

/* ---- fused attention ------------------------------------------------------
 * How scaled-dot-product attention is planned: FUSED as one
 * ScaledDotProductAttention node, as PyTorch's scaled_dot_product_attention
 * runs it (no T x T scores in memory; the memplan command's default);
 * NAIVE as the exported ops, each intermediate in memory (the plan of the
 * graph as written; mp_plan_options_init's and mp_train_options_init's
 * default, since a fused node is an op the runtime must implement). */
typedef enum mp_attention_mode {
    MP_ATTENTION_FUSED = 0, MP_ATTENTION_NAIVE
} mp_attention_mode;
/* The name of an attention mode: "fused", "naive". */
MP_API const char *mp_attention_name(mp_attention_mode m);
/* Parses an attention mode name as mp_attention_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_attention_parse(const char *name, mp_attention_mode *out);
/* Rewrites each scaled-dot-product attention chain of a finalized graph,
 * MatMul(Q, K^T) -> optional scale (Mul or Div by a scalar, also on Q and
 * K^T) -> optional mask (Add, or Where with a scalar fill) -> Softmax over
 * the last axis -> optional Where(IsNaN) and Dropout -> MatMul(., V),
 * whose intermediates have no other reader, as one node
 * ScaledDotProductAttention (domain "memplan"; docs/attention.md) reading
 * Q, K^T, V, the mask and the scalars and writing the second MatMul's
 * output. An additive mask may also be added over a Reshape of the
 * scores that regroups their leading dims and back (Swin's shifted
 * windows): the node reads that mask, or its sum with the scores' mask
 * (a new Add node and tensor NAME/mask), with attribute mask_dims. The
 * chain's other nodes and tensors, and the nodes that only fed them, are
 * removed, and g comes back finalized. Tensor and node ids change when a chain is fused (look
 * names up again); plans made from g before are no longer valid. A graph
 * with no chain (or with control-flow subgraphs) is left as it was.
 * *n_fused (may be NULL): the chains fused; *scores_bytes (may be NULL):
 * the bytes of the tensors removed.
 * Errors: MP_ERR_INVALID_ARG (NULL, not finalized), MP_ERR_NOMEM; on an
 * error g is unchanged. */
MP_API mp_status mp_graph_fuse_attention(mp_graph *g, uint32_t *n_fused,
                                         uint64_t *scores_bytes);

/* The number of tensors (ids from 0 to n-1); 0 for NULL. */
MP_API uint32_t mp_graph_num_tensors(const mp_graph *g);
/* The number of nodes (ids from 0 to n-1); 0 for NULL. */
MP_API uint32_t mp_graph_num_nodes(const mp_graph *g);
/* The id of the tensor named `name`, in *id. No message is recorded when
 * it is absent (a probe is not a failure).
 * Errors: MP_ERR_NOT_FOUND (no such tensor), MP_ERR_INVALID_ARG (NULL).
 * Example: if (mp_graph_find_tensor(g, "logits", &t) == MP_OK) ... */
MP_API mp_status mp_graph_find_tensor(const mp_graph *g, const char *name,
                                      uint32_t *id);
/* The id of the node named `name`, in *id, like mp_graph_find_tensor.
 * Errors: MP_ERR_NOT_FOUND (no such node), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_find_node(const mp_graph *g, const char *name,
                                    uint32_t *id);

/* How a view (mp_tensor_info.alias_of set) reads the memory it views,
 * which a runtime that runs the plan must honour:
 * MP_VIEW_SAME: the same bytes in the same order (Reshape, Flatten,
 * Squeeze, Unsqueeze, Identity); MP_VIEW_TRANSPOSED: the viewed tensor's
 * last two axes swapped (a Transpose read only by matrix products, which
 * take the viewed tensor with op T); MP_VIEW_BROADCAST: the viewed
 * tensor's elements broadcast to this shape (an Expand read only by
 * broadcasting pointwise ops, which broadcast the viewed tensor instead);
 * MP_VIEW_RANGE: the bytes [view_offset, view_offset + bytes) of the
 * viewed tensor (a Slice or Split part that is one contiguous range);
 * MP_VIEW_PERMUTED: the viewed tensor's axes permuted as the producing
 * Transpose's perm says (read only by fused attention, which takes Q, K^T
 * and V with any strides). docs/memory-model.md, "Where each tensor
 * lives". */
typedef enum mp_view_kind {
    MP_VIEW_NONE = 0, MP_VIEW_SAME, MP_VIEW_TRANSPOSED, MP_VIEW_BROADCAST,
    MP_VIEW_RANGE, MP_VIEW_PERMUTED
} mp_view_kind;

typedef struct mp_tensor_info {
    const char *name;
    mp_dtype dtype;
    int rank;
    const int64_t *dims;
    uint64_t bytes;
    mp_tensor_kind kind;      /* after finalize: folded constants CONSTANT */
    uint32_t producer;        /* node id or MP_NONE */
    uint32_t n_consumers;
    uint32_t alias_of;        /* tensor whose memory this one views, or MP_NONE */
    int is_output;
    int folded;               /* computed only from weights/constants */
    mp_view_kind view;        /* how it views alias_of (MP_VIEW_NONE: no view) */
    uint64_t view_offset;     /* MP_VIEW_RANGE: its first byte in alias_of */
} mp_tensor_info;

typedef struct mp_node_info {
    const char *name;
    const char *op;
    const char *domain;
    uint32_t n_inputs, n_outputs;
    const uint32_t *inputs, *outputs;
    mp_phase phase;
    double flops, bytes, seconds;  /* < 0: not given */
} mp_node_info;

/* What memplan knows of tensor `id` (the pointers live in the graph).
 * Errors: MP_ERR_NOT_FOUND (no such tensor), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_tensor_info(const mp_graph *g, uint32_t id,
                                      mp_tensor_info *out);
/* Node `id`: name, op, domain, inputs, outputs, phase, given cost (the
 * pointers live in the graph).
 * Errors: MP_ERR_NOT_FOUND (no such node), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_node_info(const mp_graph *g, uint32_t id,
                                    mp_node_info *out);
/* Tensors in use (read, a graph output, or taking bytes) whose shape is
 * not fully known (a view may know its bytes but not its dims); 0 when
 * every shape is resolved, and for NULL. g must be finalized. */
MP_API size_t mp_graph_unknown_shapes(const mp_graph *g);

/* ---- node attributes ---------------------------------------------------- */
/* Attribute getters, for runtimes that execute a loaded graph: attribute
 * `name` of a node as an int, a float (an integer also reads as a float),
 * a string, an int list or a float list (*n entries). Pointers stay valid
 * while the graph lives; v may be NULL (an existence check).
 * Errors: MP_ERR_NOT_FOUND (no such node or attribute; the message names
 * both), MP_ERR_INVALID_ARG (another type, or NULL g or name).
 * Example: int64_t axis = -1; mp_graph_get_attr_int(g, n, "axis", &axis); */
MP_API mp_status mp_graph_get_attr_int(const mp_graph *g, uint32_t node,
                                       const char *name, int64_t *v);
MP_API mp_status mp_graph_get_attr_float(const mp_graph *g, uint32_t node,
                                         const char *name, double *v);
MP_API mp_status mp_graph_get_attr_string(const mp_graph *g, uint32_t node,
                                          const char *name, const char **v);
MP_API mp_status mp_graph_get_attr_ints(const mp_graph *g, uint32_t node,
                                        const char *name, const int64_t **v,
                                        uint32_t *n);
MP_API mp_status mp_graph_get_attr_floats(const mp_graph *g, uint32_t node,
                                          const char *name, const double **v,
                                          uint32_t *n);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_GRAPH_H */
