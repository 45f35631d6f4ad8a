/*
 * memplan/load.h - reading and writing graphs: memplan's JSON graph
 * (docs/graph-format.md), networkx node-link JSON, and ONNX (docs/onnx.md)
 * with its loading options: values for symbolic dims, values of graph
 * inputs, re-batching. Every loader returns a finalized graph, ready for
 * planning; on failure *out is NULL and the message names the place
 * (file:line:column and the key for JSON).
 */
#ifndef MEMPLAN_LOAD_H
#define MEMPLAN_LOAD_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- loading and saving ------------------------------------------------- */
/* Reads a graph file, detecting the format from the content: memplan JSON
 * graph or networkx node-link JSON (or ONNX, when this build reads it). The
 * graph comes back finalized. Messages name file:line:column and the key.
 * Errors: MP_ERR_IO (unreadable), MP_ERR_PARSE (malformed JSON),
 * MP_ERR_CORRUPT (a bad ONNX protobuf), the bad-input classes MP_ERR_CYCLE,
 * MP_ERR_NO_PRODUCER, MP_ERR_DUPLICATE, MP_ERR_UNKNOWN_OP, MP_ERR_BAD_DIM,
 * MP_ERR_OVERFLOW, MP_ERR_SHAPE (a size not inferable, an unbound symbolic
 * dim), MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL).
 * Example: mp_graph *g = NULL; mp_graph_load(ctx, "model.json", &g); */
MP_API mp_status mp_graph_load(mp_ctx *ctx, const char *path, mp_graph **out);
/* Reads a memplan JSON graph file; finalized.
 * Errors: MP_ERR_IO, MP_ERR_PARSE (malformed JSON, an unknown key, a
 * wrong type; file:line:column named), the bad-input classes,
 * MP_ERR_GRAPH and MP_ERR_SHAPE as mp_graph_finalize, MP_ERR_NOMEM,
 * MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_load_json(mp_ctx *ctx, const char *path,
                                    mp_graph **out);
/* Reads a memplan JSON graph from a string; source_name names it in
 * messages (source:line:column). Finalized.
 * Errors: as mp_graph_load_json, without MP_ERR_IO.
 * Example: mp_graph_load_json_string(ctx, text, "generated", &g); */
MP_API mp_status mp_graph_load_json_string(mp_ctx *ctx, const char *text,
                                           const char *source_name,
                                           mp_graph **out);
/* Reads a networkx node-link JSON graph (Checkmate and Moccasin benchmark
 * graphs): nodes with their memory, edges as dependencies. Finalized.
 * Errors: MP_ERR_IO, MP_ERR_PARSE (malformed JSON, a missing key),
 * MP_ERR_CYCLE (a cycle or self-loop), MP_ERR_DUPLICATE (a node id or
 * tensor name twice), MP_ERR_GRAPH (a link to a missing node),
 * MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_load_nodelink(mp_ctx *ctx, const char *path,
                                        mp_graph **out);
/* Writes the graph as memplan JSON, what mp_graph_load_json reads back.
 * Errors: MP_ERR_IO (not writable), MP_ERR_NOMEM, MP_ERR_INVALID_ARG
 * (NULL). */
MP_API mp_status mp_graph_save_json(const mp_graph *g, const char *path);
/* Writes the JSON graph to a malloc'ed (context allocator) string; release
 * with mp_free(ctx, s).
 * Errors: MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_graph_to_json_string(const mp_graph *g, char **out);

/* ---- ONNX loading options ----------------------------------------------- */
/* A value for a symbolic dimension (an ONNX dim_param such as "N"), or,
 * named "INPUT:AXIS", for axis AXIS of graph input INPUT: an unnamed, a
 * symbolic or a fixed dim (re-batching: declared intermediate shapes are
 * then hints that inference overrides); for an input declared with no
 * shape, INPUT:0 .. INPUT:R-1 give its shape. A binding that names
 * nothing of the model is an error (docs/api/mp_graph_load_dims.md). */
typedef struct mp_dim_binding {
    const char *name;
    int64_t value;           /* >= 0 */
} mp_dim_binding;

typedef struct mp_onnx_options {
    const mp_dim_binding *dims;  /* n_dims bindings of symbolic dims */
    size_t n_dims;
    /* 1 (default): shapes declared in value_info and on graph outputs are
     * used where inference cannot reach; 0: every shape past the graph
     * inputs and weights is inferred (conformance checks). */
    int declared_shapes;
    /* n_values values of graph inputs (mp_input_value, below); NULL/0:
     * none. */
    const struct mp_input_value *values;
    size_t n_values;
    /* Re-batching (docs/onnx.md, "Re-batching"): > 0 plans the model at
     * this batch N. The leading dim of every graph input that is not an
     * initializer becomes N (a symbol there is bound to N), and shape
     * constants that hold the declared batch B0 (Reshape targets, Resize
     * sizes, Expand shapes, bool masks; [1, 2048] -> [N, 2048]) are
     * re-batched, as a dynamic-batch export writes them; each rewrite is
     * reported (mp_graph_rebatch_info). An input of rank 0, or inputs
     * whose fixed leading dims disagree, are MP_ERR_INVALID_ARG naming
     * them; a constant that cannot be re-batched is MP_ERR_SHAPE naming
     * the node and the constant. 0 (default): the batch as declared. */
    int64_t batch;
    /* > 0: every symbolic dim (dim_param) left unbound takes this value,
     * a placeholder, instead of being MP_ERR_SHAPE; 0 (default): an
     * unbound symbol of a used input is an error. For inspection: two
     * loads with two placeholders differ exactly in the dims and sizes
     * that depend on the unbound symbols (`memplan shapes` prints those
     * as ?). A plan of such a graph is a plan for the placeholder. */
    int64_t unbound_dims;
} mp_onnx_options;
/* Fills ONNX loading options with their defaults: no bindings, no input
 * values, declared shapes used, the batch as declared. NULL is a no-op.
 * Example: mp_onnx_options o; mp_onnx_options_init(&o); o.batch = 8; */
MP_API void mp_onnx_options_init(mp_onnx_options *o);

/* ---- ONNX: re-batching rewrites ----------------------------------------- */
/* What re-batching (mp_onnx_options.batch) changed in a loaded model, one
 * record per rewrite (docs/onnx.md, "Re-batching"): each graph input whose
 * fixed leading dim B0 became N, each bool mask initializer, and each
 * constant operand of a node that was read re-batched. */
typedef enum mp_rebatch_kind {
    MP_REBATCH_INPUT = 0,   /* a graph input's leading dim B0 -> N */
    MP_REBATCH_MASK = 1,    /* a bool initializer's leading dim B0 -> N (a
                               mask folded at export) */
    MP_REBATCH_RESHAPE = 2, /* a Reshape target's element B0 -> N */
    MP_REBATCH_FOLDED = 3,  /* a Reshape target's element k*B0 -> k*N (the
                               batch folded into that axis) */
    MP_REBATCH_EXPAND = 4,  /* an Expand shape's first element B0 -> N */
    MP_REBATCH_RESIZE = 5   /* Resize sizes' first element B0 -> N */
} mp_rebatch_kind;
#define MP_REBATCH_KIND_COUNT 6
/* The name of a rewrite kind: "input", "mask", "reshape", "folded",
 * "expand", "resize"; NULL for an unknown kind. */
MP_API const char *mp_rebatch_kind_name(mp_rebatch_kind k);

typedef struct mp_rebatch_info {
    mp_rebatch_kind kind;
    uint32_t node;     /* the node reading the constant; MP_NONE for an
                          input or a mask */
    uint32_t tensor;   /* the constant operand, the input or the mask;
                          MP_NONE for a node's attribute */
    int axis;          /* the first element (the axis) that changed */
    int rank;          /* entries in old_value and new_value */
    const int64_t *old_value; /* as exported: the constant's elements, or
                                 the input's / mask's dims */
    const int64_t *new_value; /* as planned */
    int64_t from, to;  /* the batch as exported (B0) and as planned (N) */
} mp_rebatch_info;
/* The number of re-batching rewrites of a loaded graph (0 when it was not
 * re-batched, and for NULL). */
MP_API uint32_t mp_graph_num_rebatches(const mp_graph *g);
/* Rewrite i: graph inputs first, then masks, then constants in the order
 * of their readers (the pointers live in the graph).
 * Errors: MP_ERR_NOT_FOUND (i out of range), MP_ERR_INVALID_ARG (NULL).
 * Example: for (uint32_t i = 0; i < mp_graph_num_rebatches(g); i++)
 *              mp_graph_rebatch_info(g, i, &r); */
MP_API mp_status mp_graph_rebatch_info(const mp_graph *g, uint32_t i,
                                       mp_rebatch_info *out);

/* ---- ONNX: values of graph inputs --------------------------------------- */
/* The value of a graph input of the top graph, known before planning ("plan
 * this model for this shape tensor"): the input takes the value's dtype
 * and shape (symbolic dims need no binding), and a small value (integer,
 * float and string tensors up to 16384 elements) is carried into shape
 * inference like an initializer's, so Reshape/Slice/Pad/Resize/TopK/...
 * operands given as graph inputs fold. The tensor stays a graph input
 * (its bytes count as an input's). Give either pb (a serialized ONNX
 * TensorProto, as in an onnx test's input_N.pb; for a sequence-typed input
 * a SequenceProto of tensors) or the value itself. A declared element type
 * or fixed dim that disagrees is an error naming the input. */
typedef struct mp_input_value {
    const char *name;        /* graph input; with pb, NULL takes its name */
    const void *pb;          /* serialized TensorProto/SequenceProto, or NULL */
    size_t pb_len;
    /* when pb is NULL: */
    mp_dtype dtype;
    int rank;
    const int64_t *dims;     /* rank entries, >= 0 */
    const int64_t *ints;     /* integer and bool dtypes: prod(dims) values */
    const double *floats;    /* floating dtypes: prod(dims) values */
    /* MP_DTYPE_STRING: prod(dims) NUL-terminated strings (string ops such
     * as StringNormalizer and StringSplit fold through them) */
    const char *const *strings;
} mp_input_value;

/* ---- ONNX loaders ------------------------------------------------------- */
/* 1 when this build reads ONNX (protobuf-c), else 0: then the loaders
 * return MP_ERR_UNSUPPORTED. */
MP_API int mp_onnx_available(void);
/* Reads an ONNX model (IR 1..13, any opset): initializers become weights
 * (dims and dtype; bytes are read only of small integer tensors that shape
 * arithmetic needs; external data is never opened), Constant nodes
 * constants, and shapes are inferred through the op registry. An unbound
 * symbolic dim of a used graph input is an error naming the symbols and
 * the tensors that need them. opt may be NULL (defaults). The graph comes
 * back finalized.
 * Errors: MP_ERR_UNSUPPORTED (a build without ONNX), MP_ERR_IO,
 * MP_ERR_CORRUPT (a truncated or corrupt protobuf), MP_ERR_PARSE (a node
 * without an op type, a Constant without a value), MP_ERR_SHAPE (an
 * unbound symbol, an inference failure naming the node), the bad-input
 * classes, MP_ERR_OVERFLOW, MP_ERR_NOMEM, MP_ERR_INVALID_ARG (NULL, a
 * binding or value naming nothing of the model).
 * Example: mp_graph_load_onnx(ctx, "resnet50.onnx", NULL, &g); */
MP_API mp_status mp_graph_load_onnx(mp_ctx *ctx, const char *path,
                                    const mp_onnx_options *opt,
                                    mp_graph **out);
/* mp_graph_load_onnx from len bytes in memory; source_name names it in
 * messages. Errors: as mp_graph_load_onnx, without MP_ERR_IO. */
MP_API mp_status mp_graph_load_onnx_buffer(mp_ctx *ctx, const void *data,
                                           size_t len, const char *source_name,
                                           const mp_onnx_options *opt,
                                           mp_graph **out);
/* mp_graph_load with dim bindings for ONNX models (n may be 0); other
 * formats have no symbolic dims: bindings there are MP_ERR_INVALID_ARG.
 * Errors: MP_ERR_SHAPE (a symbol left unbound; the symbols and the tensors
 * needing them named), MP_ERR_INVALID_ARG (bindings for a format without
 * symbols, a negative value, a binding naming no symbol, input or axis,
 * one name bound to two values), MP_ERR_UNSUPPORTED (ONNX in a build
 * without it), and the errors of mp_graph_load.
 * Example: mp_dim_binding b = {"batch", 32};
 *          mp_graph_load_dims(ctx, "bert.onnx", &b, 1, &g); */
MP_API mp_status mp_graph_load_dims(mp_ctx *ctx, const char *path,
                                    const mp_dim_binding *dims, size_t n,
                                    mp_graph **out);
/* mp_graph_load with all the ONNX options (bindings, input values, batch;
 * opt may be NULL). Other formats have none of these: dims, values or a
 * batch given for them are MP_ERR_INVALID_ARG.
 * Errors: MP_ERR_INVALID_ARG (NULL; options for a graph that is not ONNX;
 * a binding naming nothing, a batch for an input of rank 0, inputs whose
 * batches disagree), MP_ERR_SHAPE (an unbound symbol, a constant that
 * cannot be re-batched), and the errors of mp_graph_load. */
MP_API mp_status mp_graph_load_opts(mp_ctx *ctx, const char *path,
                                    const mp_onnx_options *opt,
                                    mp_graph **out);

/* ---- ONNX export -------------------------------------------------------- */
/* Writes g as an ONNX model into memory: *len bytes of a packed
 * ModelProto at *data (protobuf-c). It holds nodes with their attributes
 * (tensor attributes and If/Loop/Scan bodies included), graph inputs and
 * outputs and value_info with dtype and shape, weights as initializers
 * with their data only where the graph holds their values (small integer
 * and tiny float tensors); other weights keep dims and dtype, their data
 * marked EXTERNAL at the placeholder location "memplan-no-data" (never
 * opened by memplan). docs/onnx.md lists what is kept. *data is allocated
 * with the context allocator: release it with mp_free.
 * Errors: MP_ERR_UNSUPPORTED (a build without ONNX), MP_ERR_SHAPE (a
 * weight or constant of unknown shape), MP_ERR_NOMEM, MP_ERR_INVALID_ARG
 * (NULL). */
MP_API mp_status mp_graph_to_onnx(const mp_graph *g, void **data,
                                  size_t *len);
/* mp_graph_to_onnx into a file, what mp_graph_load_onnx reads back.
 * Errors: as mp_graph_to_onnx, and MP_ERR_IO (not writable).
 * Example: mp_graph_save_onnx(g, "model.onnx"); */
MP_API mp_status mp_graph_save_onnx(const mp_graph *g, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_LOAD_H */
