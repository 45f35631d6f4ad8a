/*
 * memplan.h - offline memory planner for computation graphs.
 *
 * memplan reads a graph (memplan JSON, a networkx node-link graph, and in
 * later versions ONNX), works out every tensor's size and lifetime, and packs
 * all tensors into one arena, before anything runs.
 *
 * Usage:
 *
 *     mp_ctx *ctx = mp_ctx_create(NULL);            // NULL: malloc/free
 *     mp_graph *g = NULL;
 *     mp_plan *plan = NULL;
 *     mp_plan_options opt;
 *     mp_plan_options_init(&opt);                    // 256-byte alignment
 *     if (mp_graph_load(ctx, "model.json", &g) != MP_OK ||
 *         mp_plan_create(g, &opt, &plan) != MP_OK) {
 *         fprintf(stderr, "memplan: %s\n", mp_ctx_message(ctx));
 *     } else {
 *         const mp_figures *f = mp_plan_figures(plan);
 *         printf("arena %llu bytes, lower bound %llu\n",
 *                (unsigned long long)f->arena_bytes,
 *                (unsigned long long)f->lower_bound_bytes);
 *         // offsets: mp_plan_num_blocks() / mp_plan_block()
 *     }
 *     mp_plan_destroy(plan);
 *     mp_graph_destroy(g);
 *     mp_ctx_destroy(ctx);
 *
 * Conventions: every function that can fail returns an mp_status; the
 * message explaining the last failure is kept in the context
 * (mp_ctx_message). The library never prints, exits or aborts. Sizes are
 * 64-bit and every size computation is checked for overflow. Handles are
 * opaque and come in create/destroy pairs; destroy functions accept NULL.
 */
#ifndef MEMPLAN_H
#define MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MP_VERSION_MAJOR 0
#define MP_VERSION_MINOR 1
#define MP_VERSION_PATCH 0
#define MP_VERSION_STRING "0.1.0"

#if defined(MP_BUILDING_LIBRARY) && defined(__GNUC__)
#define MP_API __attribute__((visibility("default")))
#else
#define MP_API
#endif

/* ---- status codes (stable: never renumbered) --------------------------- */
typedef enum mp_status {
    MP_OK = 0,
    MP_ERR_INVALID_ARG = 1,  /* a NULL handle, bad option value */
    MP_ERR_NOMEM = 2,        /* an allocation failed */
    MP_ERR_IO = 3,           /* a file could not be opened, read or written */
    MP_ERR_PARSE = 4,        /* malformed input text (JSON, CSV) */
    MP_ERR_GRAPH = 5,        /* invalid graph: cycle, duplicate name, ... */
    MP_ERR_SHAPE = 6,        /* a size or shape is unknown or inconsistent */
    MP_ERR_OVERFLOW = 7,     /* a size does not fit in 64 bits */
    MP_ERR_UNSUPPORTED = 8,  /* a feature or format not supported */
    MP_ERR_INFEASIBLE = 9,   /* no plan within the given capacity/budget */
    MP_ERR_VERIFY = 10,      /* a plan failed verification */
    MP_ERR_TIMEOUT = 11,     /* the time limit ran out with no solution */
    MP_ERR_INTERNAL = 12,    /* a bug in memplan */
    MP_ERR_NOT_FOUND = 13,   /* a name or index that does not exist */
    /* bad-input classes (issue 3; each has its own exit code of the
     * memplan command, docs/exit-codes.md). Before they existed these
     * inputs gave the general code that mp_status_base returns. */
    MP_ERR_CORRUPT = 14,     /* binary input that cannot be decoded: a
                                truncated or corrupt ONNX protobuf */
    MP_ERR_CYCLE = 15,       /* the graph has a cycle */
    MP_ERR_NO_PRODUCER = 16, /* a tensor is read (or is a graph output) but
                                no node produces it and it is no input,
                                weight or constant */
    MP_ERR_DUPLICATE = 17,   /* a name defined twice: a tensor with two
                                producers, two tensors, nodes or
                                initializers of one name */
    MP_ERR_UNKNOWN_OP = 18,  /* an op memplan does not know, whose output
                                sizes are not declared */
    MP_ERR_BAD_DIM = 19      /* a negative dim, or a rank above
                                MP_MAX_RANK */
} mp_status;

/* Short stable name of a status code ("MP_ERR_PARSE"), never NULL. */
MP_API const char *mp_status_name(mp_status s);
/* Human description of a status code, never NULL. */
MP_API const char *mp_status_str(mp_status s);
/* The general code a bad-input class refines (MP_ERR_CYCLE,
 * MP_ERR_NO_PRODUCER, MP_ERR_DUPLICATE: MP_ERR_GRAPH; MP_ERR_CORRUPT:
 * MP_ERR_PARSE; MP_ERR_UNKNOWN_OP, MP_ERR_BAD_DIM: MP_ERR_SHAPE); any
 * other code itself. */
MP_API mp_status mp_status_base(mp_status s);

MP_API const char *mp_version(void);

/* ---- context ------------------------------------------------------------ */
typedef struct mp_ctx mp_ctx;

/* Caller-supplied allocator; all three functions must be set. */
typedef struct mp_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void *(*realloc_fn)(void *user, void *ptr, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} mp_allocator;

/* NULL allocator: the C library's. Returns NULL only when out of memory. */
MP_API mp_ctx *mp_ctx_create(const mp_allocator *alloc);
MP_API void mp_ctx_destroy(mp_ctx *ctx);
/* The message of the last failure in this context ("" if none). */
MP_API const char *mp_ctx_message(const mp_ctx *ctx);
MP_API mp_status mp_ctx_status(const mp_ctx *ctx);
MP_API void mp_ctx_clear(mp_ctx *ctx);

/* ---- data types, kinds, phases ------------------------------------------ */
/* Numbered as ONNX's TensorProto.DataType. */
typedef enum mp_dtype {
    MP_DTYPE_UNDEFINED = 0,
    MP_DTYPE_FLOAT32 = 1, MP_DTYPE_UINT8 = 2, MP_DTYPE_INT8 = 3,
    MP_DTYPE_UINT16 = 4, MP_DTYPE_INT16 = 5, MP_DTYPE_INT32 = 6,
    MP_DTYPE_INT64 = 7, MP_DTYPE_STRING = 8, MP_DTYPE_BOOL = 9,
    MP_DTYPE_FLOAT16 = 10, MP_DTYPE_FLOAT64 = 11, MP_DTYPE_UINT32 = 12,
    MP_DTYPE_UINT64 = 13, MP_DTYPE_COMPLEX64 = 14, MP_DTYPE_COMPLEX128 = 15,
    MP_DTYPE_BFLOAT16 = 16, MP_DTYPE_FLOAT8E4M3FN = 17,
    MP_DTYPE_FLOAT8E4M3FNUZ = 18, MP_DTYPE_FLOAT8E5M2 = 19,
    MP_DTYPE_FLOAT8E5M2FNUZ = 20, MP_DTYPE_UINT4 = 21, MP_DTYPE_INT4 = 22,
    MP_DTYPE_FLOAT4E2M1 = 23, MP_DTYPE_FLOAT8E8M0 = 24, MP_DTYPE_UINT2 = 25,
    MP_DTYPE_INT2 = 26
} mp_dtype;

/* "float32", "int64", ...; NULL for an unknown code. */
MP_API const char *mp_dtype_name(mp_dtype t);
/* Parses a dtype name (also ONNX spellings: "float", "double", "half"). */
MP_API mp_status mp_dtype_parse(const char *name, mp_dtype *out);
/* Bits per element; 0 for UNDEFINED. STRING counts 64 bits: one handle
 * (pointer) per element; the characters live outside the planned arena. */
MP_API unsigned mp_dtype_bits(mp_dtype t);

typedef enum mp_tensor_kind {
    MP_KIND_ACTIVATION = 0,  /* produced by a node, lives in the arena */
    MP_KIND_INPUT = 1,       /* graph input, in the arena from the start */
    MP_KIND_WEIGHT = 2,      /* parameter: persistent, outside the arena */
    MP_KIND_CONSTANT = 3,    /* constant (also folded): persistent */
    MP_KIND_GRADIENT = 4,    /* produced in backward, lives in the arena */
    MP_KIND_OPTIMIZER_STATE = 5, /* persistent */
    MP_KIND_OUTPUT = 6       /* graph output, in the arena to the end */
} mp_tensor_kind;
MP_API const char *mp_kind_name(mp_tensor_kind k);
MP_API mp_status mp_kind_parse(const char *name, mp_tensor_kind *out);

typedef enum mp_phase {
    MP_PHASE_FORWARD = 0, MP_PHASE_BACKWARD = 1, MP_PHASE_OPTIMIZER = 2
} mp_phase;
MP_API const char *mp_phase_name(mp_phase p);
MP_API mp_status mp_phase_parse(const char *name, mp_phase *out);

/* ---- graphs --------------------------------------------------------------- */
typedef struct mp_graph mp_graph;

#define MP_MAX_RANK 16
#define MP_NONE UINT32_MAX

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

MP_API mp_status mp_graph_create(mp_ctx *ctx, mp_graph **out);
MP_API void mp_graph_destroy(mp_graph *g);
MP_API mp_ctx *mp_graph_ctx(const mp_graph *g);
MP_API mp_status mp_graph_set_name(mp_graph *g, const char *name);
MP_API const char *mp_graph_name(const mp_graph *g);

MP_API mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                                     uint32_t *id_out);
MP_API mp_status mp_graph_add_node(mp_graph *g, const mp_node_desc *d,
                                   uint32_t *id_out);
/* Marks a tensor as a graph output (kept to the end of the schedule). */
MP_API mp_status mp_graph_mark_output(mp_graph *g, uint32_t tensor);
/* Optional cost of a node: FLOPs, bytes moved, estimated seconds (<0 unset). */
MP_API mp_status mp_graph_set_node_cost(mp_graph *g, uint32_t node,
                                        double flops, double bytes,
                                        double seconds);
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
 * before planning; the graph cannot be extended afterwards. */
MP_API mp_status mp_graph_finalize(mp_graph *g);

MP_API uint32_t mp_graph_num_tensors(const mp_graph *g);
MP_API uint32_t mp_graph_num_nodes(const mp_graph *g);
MP_API mp_status mp_graph_find_tensor(const mp_graph *g, const char *name,
                                      uint32_t *id);
MP_API mp_status mp_graph_find_node(const mp_graph *g, const char *name,
                                    uint32_t *id);

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

MP_API mp_status mp_graph_tensor_info(const mp_graph *g, uint32_t id,
                                      mp_tensor_info *out);
MP_API mp_status mp_graph_node_info(const mp_graph *g, uint32_t id,
                                    mp_node_info *out);

/* ---- loading and saving --------------------------------------------------- */
/* Detects the format from the content: memplan JSON graph or networkx
 * node-link JSON. The graph comes back finalized. Errors name
 * file:line:column and the key. */
MP_API mp_status mp_graph_load(mp_ctx *ctx, const char *path, mp_graph **out);
MP_API mp_status mp_graph_load_json(mp_ctx *ctx, const char *path,
                                    mp_graph **out);
MP_API mp_status mp_graph_load_json_string(mp_ctx *ctx, const char *text,
                                           const char *source_name,
                                           mp_graph **out);
MP_API mp_status mp_graph_load_nodelink(mp_ctx *ctx, const char *path,
                                        mp_graph **out);
MP_API mp_status mp_graph_save_json(const mp_graph *g, const char *path);
/* Writes the JSON graph to a malloc'ed (context allocator) string; release
 * with mp_free(ctx, s). */
MP_API mp_status mp_graph_to_json_string(const mp_graph *g, char **out);
MP_API void mp_free(mp_ctx *ctx, void *p);

/* ---- ONNX ------------------------------------------------------------------ */
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
     * none. Added by issue 3 (node conformance). */
    const struct mp_input_value *values;
    size_t n_values;
    /* Re-batching (issues 3/5, helper rebatch; docs/onnx.md,
     * "Re-batching"): > 0 plans the model at this batch N. The leading dim
     * of every graph input that is not an initializer becomes N (a symbol
     * there is bound to N), and shape constants that hold the declared
     * batch B0 (Reshape targets, Resize sizes; [1, 2048] -> [N, 2048]) are
     * re-batched, as a dynamic-batch export writes them. An input of rank
     * 0, or inputs whose fixed leading dims disagree, are
     * MP_ERR_INVALID_ARG naming them; a constant that cannot be re-batched
     * is MP_ERR_SHAPE naming the node and the constant. 0 (default): the
     * batch as declared. */
    int64_t batch;
} mp_onnx_options;
MP_API void mp_onnx_options_init(mp_onnx_options *o);

/* ---- ONNX: values of graph inputs (issue 3, node conformance) --------- */
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
    /* MP_DTYPE_STRING: prod(dims) NUL-terminated strings (added by issue
     * 3, helper values: StringNormalizer/StringSplit fold through them) */
    const char *const *strings;
} mp_input_value;
/* 1 when this build reads ONNX (protobuf-c), else 0: then the loaders
 * return MP_ERR_UNSUPPORTED. */
MP_API int mp_onnx_available(void);
/* Reads an ONNX model (IR 1..13, any opset): initializers become weights
 * (dims and dtype; bytes are read only of small integer tensors that shape
 * arithmetic needs; external data is never opened), Constant nodes
 * constants, and shapes are inferred through the op registry. An unbound
 * symbolic dim of a used graph input is an error naming the symbols and
 * the tensors that need them. opt may be NULL (defaults). The graph comes
 * back finalized. */
MP_API mp_status mp_graph_load_onnx(mp_ctx *ctx, const char *path,
                                    const mp_onnx_options *opt,
                                    mp_graph **out);
MP_API mp_status mp_graph_load_onnx_buffer(mp_ctx *ctx, const void *data,
                                           size_t len, const char *source_name,
                                           const mp_onnx_options *opt,
                                           mp_graph **out);
/* mp_graph_load with dim bindings for ONNX models (n may be 0); other
 * formats have no symbolic dims: bindings there are MP_ERR_INVALID_ARG. */
MP_API mp_status mp_graph_load_dims(mp_ctx *ctx, const char *path,
                                    const mp_dim_binding *dims, size_t n,
                                    mp_graph **out);
/* mp_graph_load with all the ONNX options (bindings, input values, batch;
 * opt may be NULL). Other formats have none of these: dims, values or a
 * batch given for them are MP_ERR_INVALID_ARG (helper rebatch). */
MP_API mp_status mp_graph_load_opts(mp_ctx *ctx, const char *path,
                                    const mp_onnx_options *opt,
                                    mp_graph **out);
/* Tensors in use (read, a graph output, or taking bytes) whose shape is
 * not fully known (a view may know its bytes but not its dims); 0 when
 * every shape is resolved. g must be finalized. */
MP_API size_t mp_graph_unknown_shapes(const mp_graph *g);

/* ---- ONNX export (issue 3, helper onnx-export; frontends/onnx/onnx_write.c) -- */
/* Writes g as an ONNX model (protobuf-c): nodes with their attributes
 * (tensor attributes and If/Loop/Scan bodies included), graph inputs and
 * outputs and value_info with dtype and shape, weights as initializers
 * with their data only where the graph holds their values (small integer
 * and tiny float tensors); other weights keep dims and dtype, their data
 * marked EXTERNAL at the placeholder location "memplan-no-data" (never
 * opened by memplan). docs/onnx.md lists what is kept. *data is allocated
 * with the context allocator: release it with mp_free. Without ONNX
 * support: MP_ERR_UNSUPPORTED. */
MP_API mp_status mp_graph_to_onnx(const mp_graph *g, void **data,
                                  size_t *len);
MP_API mp_status mp_graph_save_onnx(const mp_graph *g, const char *path);

/* ---- offsets (dynamic storage allocation) -------------------------------- */
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
MP_API const char *mp_solve_status_name(mp_solve_status s);

typedef enum mp_offsets_method {
    MP_OFFSETS_AUTO = 0,        /* every heuristic, keep the best, improve */
    MP_OFFSETS_SIZE_BESTFIT,    /* greedy by size, best-fit gap */
    MP_OFFSETS_SIZE_FIRSTFIT,   /* greedy by size, lowest gap */
    MP_OFFSETS_BREADTH,         /* greedy by breadth (TFLite) */
    MP_OFFSETS_START_FIRSTFIT,  /* by start time, lowest gap */
    MP_OFFSETS_NAIVE,           /* no reuse: buffers stacked end to end */
    /* exact tier (issue 4): greedy seed, then a branch and bound that
     * proves optimality or fits opt->capacity (docs/algorithms-offsets.md) */
    MP_OFFSETS_EXACT
} mp_offsets_method;
MP_API const char *mp_offsets_method_name(mp_offsets_method m);
MP_API mp_status mp_offsets_method_parse(const char *name,
                                         mp_offsets_method *out);

typedef struct mp_offsets_options {
    mp_offsets_method method;
    uint64_t alignment;      /* offsets and sizes rounded up to it; >= 1 */
    double time_limit;       /* seconds for improvement passes; <= 0: default */
    uint64_t seed;
    /* exact tier (issue 4): > 0 asks for a packing within `capacity` bytes
     * (mp_offsets_solve returns MP_ERR_INFEASIBLE, with the best packing
     * found placed, when there is none or none was found); 0: minimise */
    uint64_t capacity;
} mp_offsets_options;
MP_API void mp_offsets_options_init(mp_offsets_options *o);

typedef struct mp_offsets_result {
    uint64_t arena_bytes;
    uint64_t lower_bound_bytes;  /* max over time of live (aligned) bytes */
    mp_solve_status status;      /* OPTIMAL when arena == lower bound */
    const char *solver;          /* static string: which heuristic won */
    double seconds;
    /* exact tier (issue 4): no packing is smaller than proven_lb_bytes
     * (>= lower_bound_bytes); search nodes explored (0: not run) */
    uint64_t proven_lb_bytes;
    uint64_t nodes;
} mp_offsets_result;

/* Places every buffer (sets .offset). Deterministic for a given seed. */
MP_API mp_status mp_offsets_solve(mp_ctx *ctx, mp_buffer *bufs, size_t n,
                                  const mp_offsets_options *opt,
                                  mp_offsets_result *res);
/* Max over time of the sum of live sizes, each rounded up to alignment. */
MP_API mp_status mp_offsets_lower_bound(mp_ctx *ctx, const mp_buffer *bufs,
                                        size_t n, uint64_t alignment,
                                        uint64_t *lb);
/* Checks that buffers live at the same time do not overlap, that every
 * offset is a multiple of alignment and that every buffer ends within
 * `arena` bytes (UINT64_MAX: no limit). MP_ERR_VERIFY names the first
 * violation. */
MP_API mp_status mp_offsets_verify(mp_ctx *ctx, const mp_buffer *bufs,
                                   size_t n, uint64_t alignment,
                                   uint64_t arena);

/* Reads a MiniMalloc trace: CSV with header id,lower,upper,size and an
 * optional fifth column offset. ids are kept in *ids_out (may be NULL). */
MP_API mp_status mp_trace_load_csv(mp_ctx *ctx, const char *path,
                                   mp_buffer **bufs_out, int64_t **ids_out,
                                   size_t *n_out, int *has_offsets);
MP_API mp_status mp_trace_save_csv(mp_ctx *ctx, const char *path,
                                   const mp_buffer *bufs, const int64_t *ids,
                                   size_t n);

/* ---- schedules and plans ---------------------------------------------------- */
typedef enum mp_step_kind {
    MP_STEP_COMPUTE = 0, MP_STEP_RECOMPUTE = 1, MP_STEP_FREE = 2,
    MP_STEP_OFFLOAD = 3, MP_STEP_PREFETCH = 4
} mp_step_kind;
MP_API const char *mp_step_kind_name(mp_step_kind k);

typedef struct mp_step {
    mp_step_kind kind;
    uint32_t index;      /* node for COMPUTE/RECOMPUTE, tensor otherwise */
} mp_step;

/* One tensor instance placed in the arena: the tensor lives at `offset`
 * from step `first` (the step that allocates it; 0 for inputs) up to, not
 * including, step `end` (its FREE step; the step count when never freed). */
typedef struct mp_block {
    uint32_t tensor;
    uint64_t offset;
    uint64_t size;       /* aligned size reserved in the arena */
    uint32_t first, end;
} mp_block;

typedef struct mp_plan mp_plan;

typedef struct mp_plan_options {
    uint64_t alignment;            /* default 256 */
    mp_offsets_method method;      /* default AUTO */
    double time_limit;             /* seconds; <= 0: default */
    uint64_t seed;
    /* in-place reuse, fused chains and operator order (issue 4; see
     * docs/memory-model.md): */
    int inplace;          /* default 1: an output may take over the memory
                             of an input that dies at its node, where the
                             op's registry entry allows it */
    int fuse;             /* default 0: tensors inside fused pointwise
                             chains take no arena memory */
    int reorder;          /* default 0: memory-aware operator order */
    uint32_t reorder_exact_max; /* exact order search up to this many
                                   nodes (default 20, at most 24) */
    uint64_t reorder_budget;    /* local search: candidate orders tried
                                   (default 4000) */
} mp_plan_options;
MP_API void mp_plan_options_init(mp_plan_options *o);

typedef struct mp_figures {
    uint64_t lower_bound_bytes;  /* max over steps of live arena bytes */
    uint64_t arena_bytes;        /* size of the arena the offsets need */
    uint64_t persistent_bytes;   /* weights, constants, optimizer state */
    uint64_t peak_bytes;         /* arena_bytes + persistent_bytes */
    uint64_t no_reuse_bytes;     /* every arena tensor in its own memory */
    uint64_t alignment;
    uint32_t peak_step;          /* a step where live bytes are maximal */
    mp_solve_status status;      /* OPTIMAL when arena == lower bound */
    const char *solver;
    double solve_seconds;
    /* operator order (issue 4): the lower bound with the graph's default
     * order and with the order reordering found (the plan keeps the
     * better); both 0 when the plan was not reordered */
    uint64_t order_lb_before, order_lb_after;
} mp_figures;

/* The default schedule from the graph's topological order (COMPUTE each
 * node, FREE each arena tensor right after its last use) and offsets. */
MP_API mp_status mp_plan_create(mp_graph *g, const mp_plan_options *opt,
                                mp_plan **out);
MP_API void mp_plan_destroy(mp_plan *p);
MP_API const mp_figures *mp_plan_figures(const mp_plan *p);
MP_API uint32_t mp_plan_num_steps(const mp_plan *p);
MP_API const mp_step *mp_plan_steps(const mp_plan *p);
MP_API uint32_t mp_plan_num_blocks(const mp_plan *p);
MP_API const mp_block *mp_plan_blocks(const mp_plan *p);
/* Live arena bytes while step i runs (i < num_steps). */
MP_API uint64_t mp_plan_live_bytes(const mp_plan *p, uint32_t step);

/* ---- in-place reuse, fused chains, operator order (issue 4) ------------- */
/* The tensor whose memory block i took over at its first step (its node
 * wrote the output in place over that input, which died there), or
 * MP_NONE. The two blocks share one offset. */
MP_API uint32_t mp_plan_block_over(const mp_plan *p, uint32_t block);
/* 1 when the tensor lies inside a fused pointwise chain (--fuse) and takes
 * no memory, else 0. */
MP_API int mp_plan_tensor_fused(const mp_plan *p, uint32_t tensor);
/* A memory-aware topological order of g's nodes (order: n_nodes entries):
 * list scheduling with memory priorities, local search within each node's
 * window, and an exact search up to opt->reorder_exact_max nodes. The
 * objective is the lower bound (max live arena bytes, in-place aware when
 * opt->inplace). *lb_before / *lb_after (may be NULL): the objective of
 * the graph's default order and of the returned one (never higher).
 * Deterministic. */
MP_API mp_status mp_order_solve(mp_graph *g, const mp_plan_options *opt,
                                uint32_t *order, uint64_t *lb_before,
                                uint64_t *lb_after);
/* A plan that computes the nodes in the given topological order, frees
 * each tensor after its last use, and places the blocks as mp_plan_create
 * does (in-place and fuse per opt). */
MP_API mp_status mp_plan_create_ordered(mp_graph *g, const uint32_t *order,
                                        const mp_plan_options *opt,
                                        mp_plan **out);

/* Plan JSON (docs/plan-format.md). Reading resolves names against g. */
MP_API mp_status mp_plan_save_json(const mp_plan *p, const char *path);
MP_API mp_status mp_plan_to_json_string(const mp_plan *p, char **out);
MP_API mp_status mp_plan_load_json(mp_graph *g, const char *path,
                                   mp_plan **out);

/* Replays a plan against its graph and checks every invariant: each input
 * of a step is resident when it runs, every arena tensor produced is
 * placed, no two resident blocks overlap, every block lies in the arena
 * and is aligned, and the reported figures equal the replayed ones.
 * Independent of the solvers. MP_ERR_VERIFY names the first violation. */
MP_API mp_status mp_verify_plan(const mp_graph *g, const mp_plan *p);

/* ---- cost model and device profiles (issue 8; docs/cost-model.md) ------- */
/* A device: peak dense FLOP/s per dtype class, memory, the host link and
 * the host tiers (for offload). A plain value; builtin profiles (h200,
 * h100, a100, l4, t4) or user JSON files fill it. Bandwidths in bytes/s,
 * times in seconds, 0 where unknown. */
typedef struct mp_device {
    char name[48];
    double flops_fp64, flops_fp32, flops_tf32, flops_fp16, flops_bf16,
        flops_fp8, flops_int8;
    double mem_bw;            /* device memory bandwidth */
    uint64_t mem_bytes;       /* device memory */
    double h2d_bw, d2h_bw;    /* host link, each direction */
    double link_latency;      /* per transfer */
    int copy_engines;         /* 1: both directions share one engine */
    double kernel_overhead;   /* fixed cost of one kernel launch */
    uint64_t host_mem_bytes;  /* host DRAM (offload tier) */
    uint64_t disk_bytes;      /* disk tier */
    double disk_read_bw, disk_write_bw;
} mp_device;

/* A builtin profile by name (case-insensitive: "h200", "h100", "a100",
 * "l4", "t4"); MP_ERR_NOT_FOUND lists the names. */
MP_API mp_status mp_device_builtin(mp_ctx *ctx, const char *name,
                                   mp_device *out);
MP_API size_t mp_device_builtin_count(void);
MP_API const char *mp_device_builtin_name(size_t i);
/* A user profile (docs/cost-model.md): a JSON object, optionally "base"
 * (a builtin whose figures the others override). Unknown keys, wrong
 * types and negative figures are errors naming the key. */
MP_API mp_status mp_device_load_json(mp_ctx *ctx, const char *path,
                                     mp_device *out);
MP_API mp_status mp_device_load_json_string(mp_ctx *ctx, const char *text,
                                            const char *source_name,
                                            mp_device *out);
/* "name" of a builtin, else a JSON file path. */
MP_API mp_status mp_device_get(mp_ctx *ctx, const char *name_or_path,
                               mp_device *out);
/* Peak FLOP/s for arithmetic in dtype t (fp32 for unknown classes; a
 * class the device lacks falls back to the next wider one). */
MP_API double mp_device_flops(const mp_device *d, mp_dtype t);

/* Cost of one node from the op registry: FLOPs, bytes read and written,
 * and the estimated time on d, max(flops / peak, bytes / mem_bw) plus
 * the kernel overhead (views cost nothing). A time the graph gives
 * (mp_graph_set_node_cost) is used as is. */
typedef struct mp_op_cost {
    double flops;
    double bytes;
    double seconds;
} mp_op_cost;
MP_API mp_status mp_node_estimate(const mp_graph *g, uint32_t node,
                                  const mp_device *d, mp_op_cost *out);
/* Seconds to move `bytes` over the host link (to_host: device -> host). */
MP_API double mp_device_transfer_seconds(const mp_device *d, uint64_t bytes,
                                         int to_host);

/* ---- FlexGen-style offload policy search for LLM inference (issue 8;
 * docs/offload.md) ---------------------------------------------------- */
/* A decoder-only transformer, as its Hugging Face config.json gives it. */
typedef struct mp_llm_config {
    char name[64];
    uint32_t layers, hidden, heads, kv_heads, ffn, vocab;
    uint32_t mlp_matrices;   /* 2 (OPT, GPT) or 3 (gated: LLaMA, Mistral) */
    mp_dtype dtype;          /* of weights, activations and KV cache */
} mp_llm_config;
/* Reads num_hidden_layers/n_layer, hidden_size/n_embd/d_model,
 * num_attention_heads/n_head, num_key_value_heads (default: heads),
 * ffn_dim/intermediate_size/n_inner (default 4 x hidden), vocab_size,
 * torch_dtype (default float16) and model_type; other keys are ignored. */
MP_API mp_status mp_llm_config_load_json(mp_ctx *ctx, const char *path,
                                         mp_llm_config *out);
MP_API mp_status mp_llm_config_load_json_string(mp_ctx *ctx, const char *text,
                                                const char *source_name,
                                                mp_llm_config *out);

/* The machine of the policy search: three tiers and FlexGen's hardware
 * constants (bytes/s, FLOP/s). "t4" is the profile fitted in FlexGen's
 * cost model; others are derived from an mp_device (docs/offload.md). */
typedef struct mp_flexgen_hw {
    char name[48];
    uint64_t gpu_mem, cpu_mem, disk_mem;
    double ctog_bw, gtoc_bw_cache, gtoc_bw_hidden, dtoc_bw;
    double ctod_bw_cache_p, ctod_bw_hidden_p, ctod_bw_g;
    double mm_flops_p, mm_flops_g, bmm_flops_p, bmm_flops_g, cpu_flops;
    double c1, c2, c3;       /* CPU attention efficiency fit */
    /* device memory bandwidth: a decode step reads every layer's weights
     * and the GPU's share of the KV cache from it; 0: no such term (as in
     * FlexGen's model and its T4 fit) */
    double gpu_mem_bw;
} mp_flexgen_hw;
MP_API void mp_flexgen_hw_t4(mp_flexgen_hw *out);
MP_API void mp_flexgen_hw_from_device(const mp_device *d, mp_flexgen_hw *out);

typedef struct mp_flexgen_options {
    uint32_t prompt_len, gen_len;    /* default 512, 32 */
    uint32_t gpu_batch;              /* 0: searched */
    uint32_t num_batches;            /* 0: searched */
    unsigned weight_bits, cache_bits; /* 16 (default) or 4: compressed */
    double alpha_g, alpha_c, alpha_n; /* usable share of each tier (0.8) */
    /* fixed percentages of wg, wc, cg, cc, hg, hc; < 0: free (default) */
    double percent[6];
    uint32_t max_gpu_batch;          /* search limit (default 1024) */
} mp_flexgen_options;
MP_API void mp_flexgen_options_init(mp_flexgen_options *o);

typedef struct mp_flexgen_policy {
    uint32_t gpu_batch, num_batches;
    double w_gpu, w_cpu, w_disk;     /* fractions of the weights */
    double c_gpu, c_cpu, c_disk;     /* of the KV cache */
    double h_gpu, h_cpu, h_disk;     /* of the activations */
    double throughput;               /* generated tokens/s */
    double prefill_seconds, decode_seconds;
    double gpu_peak, cpu_peak, disk_peak;  /* bytes, max over phases */
    double weight_bytes, cache_bytes, hidden_bytes; /* totals */
    uint32_t lps_solved;
} mp_flexgen_policy;
/* Searches GPU batch size and number of batches and solves FlexGen's LP
 * for each (GLPK); MP_ERR_INFEASIBLE when nothing fits,
 * MP_ERR_UNSUPPORTED without GLPK. */
MP_API mp_status mp_flexgen_search(mp_ctx *ctx, const mp_llm_config *m,
                                   const mp_flexgen_hw *hw,
                                   const mp_flexgen_options *o,
                                   mp_flexgen_policy *out);

/* ---- offload of graph tensors to host under a budget (issue 8) ---------- */
/* Chooses tensors to OFFLOAD after a use and PREFETCH before the next one
 * (largest and longest-idle first) so that live arena bytes + persistent
 * bytes fit the budget, placing each copy where the timeline says it is
 * hidden behind compute when it can; a two-stream simulation (compute and
 * copy engines) gives the exposed transfer time (docs/offload.md). */
typedef struct mp_offload_options {
    uint64_t budget;          /* bytes for live arena + persistent; 0: none */
    const mp_device *device;  /* cost model; NULL: the builtin h200 */
    /* 1 (default): a node's seconds given by the graph are used; 0: the
     * device's roofline estimate from FLOPs and bytes for every node */
    int use_given_seconds;
    /* 0 (default): greedy; 1: ILP through GLPK over the same candidates
     * (hidden or whole-gap offload per tensor, budget at every position,
     * least estimated stall), warm-started from the greedy choice */
    int ilp;
    double time_limit;        /* ILP seconds; <= 0: 10 */
    /* joint recompute + offload (POET-style, docs/offload.md): 1 lets each
     * idle tensor also be dropped and recomputed before its next use; the
     * result is the fastest (one cost model: the device) of offload only,
     * recompute only (mp_remat_plan), the joint candidates (greedy, and
     * the ILP when ilp is set or there are at most ilp_max_candidates) and
     * recompute at looser budgets followed by offload; 0 (default): offload
     * only */
    int recompute;
    /* the recompute-only solver in joint mode (budget and node times are
     * set by the offload planner); NULL: AUTO with a 10 s limit */
    const struct mp_remat_options *remat;
    uint32_t ilp_max_candidates; /* joint: ILP up to this many (0: 400) */
} mp_offload_options;
MP_API void mp_offload_options_init(mp_offload_options *o);

typedef struct mp_offload_result {
    mp_solve_status status;      /* FEASIBLE when the budget is met */
    uint64_t peak_bytes;         /* live arena peak + persistent bytes */
    uint64_t base_peak_bytes;    /* the same without offload */
    uint64_t bytes_to_host, bytes_to_device;
    uint32_t n_offloaded;        /* OFFLOAD steps */
    double compute_seconds;      /* every node once, no stalls */
    double exposed_seconds;      /* stalls waiting for copies */
    double total_seconds;        /* compute + exposed */
    double seconds;              /* solver time */
    const char *solver;          /* "greedy", "ilp" or "ilp(greedy)" when
                                    the ILP kept the warm start */
    mp_solve_status ilp_status;  /* of the ILP; NONE when not run */
    /* joint mode (recompute = 1) */
    uint32_t n_recomputed;       /* RECOMPUTE steps */
    double recompute_seconds;    /* their time (in total_seconds) */
    /* total seconds of the offload-only and recompute-only plans on the
     * same cost model (< 0: no plan within the budget) */
    double offload_only_seconds, recompute_only_seconds;
    const char *remat_solver;    /* recompute solver used, or NULL */
} mp_offload_result;

/* Plans g under oo->budget with OFFLOAD/PREFETCH steps (offsets by po;
 * NULL: defaults). MP_ERR_INFEASIBLE when the budget cannot be met (a
 * step needs more than the budget even with every idle tensor on host);
 * res->peak_bytes then says the smallest peak reached and *out is NULL. */
MP_API mp_status mp_offload_plan(mp_graph *g, const mp_offload_options *oo,
                                 const mp_plan_options *po, mp_plan **out,
                                 mp_offload_result *res);

/* ---- recompute / checkpoint under a memory budget (issue 5) --------------- */
/* Solvers that choose which tensors to keep and which to recompute so that
 * a schedule's peak (live arena bytes + persistent bytes) fits a budget at
 * the least extra compute. Every one returns a schedule with RECOMPUTE
 * steps, placed like any other (mp_plan), that mp_verify_plan replays. */
typedef enum mp_remat_solver {
    MP_REMAT_AUTO = 0,       /* every solver that fits the graph's size */
    MP_REMAT_NONE,           /* checkpoint-all: no recompute */
    MP_REMAT_CHEN_SQRT,      /* Chen et al.: sqrt(n) segments */
    MP_REMAT_CHEN_GREEDY,    /* Chen greedy segments, budget sweep */
    MP_REMAT_DTR,            /* DTR-style eviction replayed statically */
    MP_REMAT_SELECTIVE,      /* cheap ops first, then polished */
    MP_REMAT_LP,             /* Checkmate LP relaxation + rounding (GLPK) */
    MP_REMAT_ILP,            /* Checkmate MILP (GLPK) */
    /* issue 5 (helper chen): Checkmate's baselines as its code builds
     * them (its residency matrix from a checkpoint set, the recomputes
     * that matrix implies, its frees; no budget search, never in auto;
     * docs/training.md, "Checkmate's baselines"): */
    MP_REMAT_CHEN_LINEAR,       /* released code: linearized Chen sqrt(n) */
    MP_REMAT_CM_CHECKPOINT_ALL, /* code of the published max-batch figure: */
    MP_REMAT_CM_CHEN_SQRT,      /*   checkpoint-all, Chen sqrt(n) on */
    MP_REMAT_CM_CHEN_GREEDY     /*   articulation points, Chen greedy */
} mp_remat_solver;
MP_API const char *mp_remat_solver_name(mp_remat_solver s);
/* Accepts the names above in lower case ("chen" = chen-greedy, "lp", "ilp",
 * "checkpoint-all" = none, "auto"). */
MP_API mp_status mp_remat_solver_parse(const char *name, mp_remat_solver *out);

typedef struct mp_remat_options {
    mp_remat_solver solver;  /* default AUTO */
    uint64_t budget;         /* bytes for live arena + persistent; 0: none */
    double time_limit;       /* seconds for LP/ILP; <= 0: 60 */
    double max_extra_cost;   /* cap on extra compute (cost units); < 0: none */
    uint64_t seed;
    /* 1: Checkmate's baseline semantics for checkpoint-all and Chen: the
     * checkpoints stay resident to the end of the step (reproduces the
     * published baselines); 0 (default): freed after their last use. */
    int keep_checkpoints;
} mp_remat_options;
MP_API void mp_remat_options_init(mp_remat_options *o);

typedef struct mp_remat_result {
    mp_solve_status status;      /* FEASIBLE/OPTIMAL when the budget is met,
                                    INFEASIBLE when no solver met it */
    const char *solver;          /* static string: the solver that won */
    uint64_t peak_bytes;         /* live arena peak + persistent bytes */
    uint64_t base_peak_bytes;    /* the same without recompute */
    uint64_t min_peak_bytes;     /* smallest peak any solver reached */
    uint64_t peak_lower_bound;   /* no schedule computing the nodes in this
                                    order peaks below it: a node's inputs
                                    and outputs, the graph outputs computed
                                    before it, plus persistent bytes */
    double base_cost;            /* cost of computing every node once */
    double extra_cost;           /* cost of the RECOMPUTE steps */
    double extra_flops;          /* FLOPs of the RECOMPUTE steps (given ones) */
    double lower_bound_cost;     /* LP lower bound on extra cost; < 0: none */
    uint32_t n_recompute;        /* RECOMPUTE steps */
    double seconds;
    /* issue 5: where lower_bound_cost comes from (every kind is a true
     * lower bound, by weak duality, on the extra cost of schedules in the
     * graph's order): MP_REMAT_BOUND_LP (the Checkmate LP solved to
     * optimality), _LP_DUALS (the duals where its simplex stopped at the
     * time limit), _MILP (the MILP search tree), _STAGE_LP (the smaller
     * stage-boundary relaxation, solved to optimality). */
    int lower_bound_kind;
    /* issue 5 (fix): when the live peak of a schedule fits the budget but
     * its placed arena does not (MP_ERR_INFEASIBLE once placed): the
     * smallest placed peak found (arena + persistent bytes); then
     * min_peak_bytes is the smallest live peak (live arena peak +
     * persistent) over every round, which may be within the budget.
     * 0: no schedule was placed. */
    uint64_t min_placed_peak_bytes;
} mp_remat_result;
enum { MP_REMAT_BOUND_NONE = 0, MP_REMAT_BOUND_LP, MP_REMAT_BOUND_LP_DUALS,
       MP_REMAT_BOUND_MILP, MP_REMAT_BOUND_STAGE_LP };

/* Node cost used by the recompute solvers: the node's seconds when given,
 * else FLOPs / 1e12 (1 TFLOP/s), else bytes moved / 1e12, else 1e-9. */
MP_API double mp_node_cost(const mp_graph *g, uint32_t node);

/* The largest batch (1..max_batch; 0: 2^20) whose plan meets ro's budget
 * and cost cap, g being at batch graph_batch: every arena tensor scales
 * with the batch (bytes x b / graph_batch, rounded up), weights and
 * optimizer state do not. res: the plan figures at that batch. */
MP_API mp_status mp_remat_max_batch(const mp_graph *g, uint64_t graph_batch,
                                    uint64_t max_batch,
                                    const mp_remat_options *ro,
                                    const mp_plan_options *po, uint64_t *best,
                                    mp_remat_result *res);

/* Training graphs: forward + loss + backward + optimizer step, built from
 * a forward graph through the op registry's backward rules
 * (docs/training.md). */
typedef enum mp_optimizer {
    MP_OPTIM_SGD = 0, MP_OPTIM_MOMENTUM, MP_OPTIM_ADAM, MP_OPTIM_ADAMW,
    MP_OPTIM_ADAM8BIT
} mp_optimizer;
typedef enum mp_precision {
    MP_PRECISION_FP32 = 0,
    MP_PRECISION_BF16_MIXED,  /* bf16 weights/activations, fp32 master */
    MP_PRECISION_FP16_MIXED   /* fp16 weights/activations, fp32 master */
} mp_precision;
/* "sgd", "momentum", "adam", "adamw", "adam8bit"; "fp32", "bf16-mixed",
 * "fp16-mixed". */
MP_API const char *mp_optimizer_name(mp_optimizer o);
MP_API mp_status mp_optimizer_parse(const char *name, mp_optimizer *out);
MP_API const char *mp_precision_name(mp_precision p);
MP_API mp_status mp_precision_parse(const char *name, mp_precision *out);

typedef struct mp_train_options {
    mp_optimizer optimizer;   /* default ADAM */
    mp_precision precision;   /* default FP32 */
    /* issue 5 (remat): 1 runs each parameter's optimizer step right after
     * its gradient is complete (the backward node of its first forward
     * reader), so the gradient is freed there, as PyTorch's optimizer
     * step in backward does; 0 (default): every step after the backward
     * pass, as optimizer.step(). */
    int step_in_backward;
    /* issue 5 (remat): 1 computes the trainable tensors' gradients of a
     * backward node by a node of their own (NAME/grad_w, after NAME/grad
     * which writes the input gradients), as frameworks run the data and
     * the weight gradient as two kernels: an input gradient then need not
     * live as long as the weight gradient written beside it. 0 (default):
     * one node writes both. */
    int split_weight_grad;
} mp_train_options;
MP_API void mp_train_options_init(mp_train_options *o);

/* What a training step holds, from the synthesized graph. */
typedef struct mp_train_breakdown {
    uint64_t n_params;            /* trainable parameters (elements) */
    uint64_t weight_bytes;        /* trainable weights as stored */
    uint64_t master_weight_bytes; /* fp32 master copies (mixed precision) */
    uint64_t gradient_bytes;      /* parameter gradients */
    uint64_t optimizer_bytes;     /* optimizer states (master excluded) */
    uint64_t saved_bytes;         /* forward tensors (inputs included) that
                                     backward nodes read */
    uint64_t temporary_bytes;     /* the largest optimizer temporary */
    uint64_t frozen_bytes;        /* other persistent tensors (constants) */
    uint32_t n_forward, n_backward, n_optimizer;  /* nodes */
} mp_train_breakdown;

/* Builds the training graph of a finalized forward graph: a loss over the
 * forward outputs, one backward node per differentiable forward node (its
 * saved tensors from the registry's backward rule), Sum nodes where a
 * tensor's gradient has several contributions, and one optimizer node per
 * trainable weight (states persistent). The result comes back finalized.
 * bd may be NULL. */
MP_API mp_status mp_train_graph(const mp_graph *fwd,
                                const mp_train_options *opt, mp_graph **out,
                                mp_train_breakdown *bd);

/* Plans g under ro->budget. On MP_OK *out is a plan (schedule with
 * RECOMPUTE steps, offsets by po) and res is filled. When no solver meets
 * the budget: MP_ERR_INFEASIBLE, res->min_peak_bytes says the smallest
 * peak found, *out is NULL. po may be NULL (defaults). */
MP_API mp_status mp_remat_plan(mp_graph *g, const mp_remat_options *ro,
                               const mp_plan_options *po, mp_plan **out,
                               mp_remat_result *res);

/* ---- pictures, traces and static lints (issue 7; docs/report.md) -------- */
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
/* "peak-layer", "dead-output", ...; NULL for an unknown kind. */
MP_API const char *mp_lint_kind_name(mp_lint_kind k);

typedef struct mp_lint {
    mp_lint_kind kind;
    uint64_t bytes;       /* the figure (see each kind) */
    uint64_t aux_bytes;   /* a second figure, 0 where the kind has none */
    double share;         /* PEAK_*: bytes / live bytes at the peak step */
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
MP_API void mp_lint_options_init(mp_lint_options *o);

typedef struct mp_lints mp_lints;
/* Runs every lint on a plan. opt may be NULL (defaults). Deterministic:
 * the findings come in kind order, largest figure first within a kind. */
MP_API mp_status mp_plan_lint(const mp_plan *p, const mp_lint_options *opt,
                              mp_lints **out);
MP_API void mp_lints_destroy(mp_lints *l);
MP_API uint32_t mp_lints_count(const mp_lints *l);
MP_API const mp_lint *mp_lints_get(const mp_lints *l, uint32_t i);

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
MP_API mp_status mp_cache_sim(mp_ctx *ctx, const mp_buffer *bufs, size_t n,
                              mp_cache_sim_result *out);

/* DOT through Graphviz cgraph: one box per node coloured by phase, edges
 * labelled with tensor sizes, tensors live at the peak in red, recompute
 * and offload marked, name-prefix groups as clusters. */
typedef struct mp_dot_options {
    const char *collapse_prefix; /* comma-separated prefixes: the nodes of
                                    each become one node; NULL: none */
    uint32_t collapse_depth;     /* > 0: nodes grouped by their first N name
                                    components, one node per group */
    int clusters;                /* 1 (default): name groups as clusters */
    int show_weights;            /* 0 (default): persistent tensors hidden */
} mp_dot_options;
MP_API void mp_dot_options_init(mp_dot_options *o);
/* 1 when this build writes DOT (cgraph), else 0: mp_plan_write_dot then
 * returns MP_ERR_UNSUPPORTED. */
MP_API int mp_dot_available(void);
MP_API mp_status mp_plan_write_dot(const mp_plan *p, const char *path,
                                   const mp_dot_options *opt);

/* HTML report: one self-contained file (inline SVG and CSS, no script, no
 * network): figures, memory timeline by tensor kind, arena layout (one
 * rectangle per block, <title> on hover), the tensors at the peak and the
 * lints (lints may be NULL). */
typedef struct mp_html_options {
    const char *title;       /* NULL: the graph's name */
    uint32_t max_rects;      /* arena rectangles drawn (5000), the largest
                                by bytes x steps; the rest are summed up in
                                a note */
    uint32_t max_points;     /* timeline samples (4000) */
    const mp_lints *lints;
} mp_html_options;
MP_API void mp_html_options_init(mp_html_options *o);
MP_API mp_status mp_plan_write_html(const mp_plan *p, const char *path,
                                    const mp_html_options *opt);

/* Chrome trace-event JSON (Perfetto, chrome://tracing): one "X" slice per
 * step (compute and recompute on thread 1, free/offload/prefetch on
 * thread 2), a "C" counter of live arena bytes. step_seconds may give each
 * step's duration (n_steps entries, e.g. from a cost model); else a node's
 * given seconds, else 1 microsecond per compute step, 0 for the others. */
MP_API mp_status mp_plan_write_trace(const mp_plan *p, const char *path,
                                     const double *step_seconds);

/* ---- node attributes, memory pools, constraints, shape ranges (issue 9;
 * docs/embedding.md, docs/api/) ------------------------------------------ */
/* Attribute getters, for runtimes that execute a loaded graph. Pointers
 * stay valid while the graph lives. MP_ERR_NOT_FOUND when the node has no
 * such attribute, MP_ERR_INVALID_ARG when it has another type (an integer
 * also reads as a float). */
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

/* A memory pool: on-chip SRAM, device DRAM, host memory, ... */
typedef struct mp_pool_desc {
    const char *name;       /* copied; required */
    uint64_t capacity;      /* bytes; UINT64_MAX: unbounded */
    double bandwidth;       /* bytes/s of reads and writes there; > 0 */
    uint64_t max_buffer;    /* largest single block it takes; 0: no limit */
} mp_pool_desc;

/* Planning constraints: pools, pinned offsets, tensors that share memory
 * with no other, per-tensor alignment, a largest single buffer. Tensors
 * are graph tensor ids (mp_graph_find_tensor); a constraint naming a view
 * applies to the tensor whose memory it views. */
typedef struct mp_constraints mp_constraints;
MP_API mp_status mp_constraints_create(mp_ctx *ctx, mp_constraints **out);
MP_API void mp_constraints_destroy(mp_constraints *c);
/* Adds a pool (ids 0, 1, ... in the order added). Without pools a plan
 * has one unbounded pool. The planner chooses each tensor's pool to
 * minimise the estimated time (mp_plan_estimate_seconds) under the
 * capacities; the last pool also holds what fits nowhere else. */
MP_API mp_status mp_constraints_add_pool(mp_constraints *c,
                                         const mp_pool_desc *d, uint32_t *id);
/* The tensor's block starts exactly at `offset` of `pool` (an offline
 * planned buffer); others are placed around it. */
MP_API mp_status mp_constraints_pin(mp_constraints *c, uint32_t tensor,
                                    uint32_t pool, uint64_t offset);
/* The tensor goes to `pool`; the planner chooses its offset. */
MP_API mp_status mp_constraints_assign(mp_constraints *c, uint32_t tensor,
                                       uint32_t pool);
/* The tensor's memory is shared with no other tensor at any time (no
 * reuse, no in-place). */
MP_API mp_status mp_constraints_no_share(mp_constraints *c, uint32_t tensor);
/* The tensor's offset is a multiple of `alignment` (and of the plan's). */
MP_API mp_status mp_constraints_align(mp_constraints *c, uint32_t tensor,
                                      uint64_t alignment);
/* No block may be larger than `bytes` (a device's largest allocation);
 * 0: no limit. A larger tensor makes planning fail, MP_ERR_INFEASIBLE. */
MP_API mp_status mp_constraints_max_buffer(mp_constraints *c, uint64_t bytes);
/* Compute rate for the time estimate (FLOP/s; 0, the default: compute
 * time ignored, only memory traffic counts). */
MP_API mp_status mp_constraints_compute_rate(mp_constraints *c,
                                             double flops_per_second);

/* mp_plan_create under constraints (c may be NULL: mp_plan_create). Offsets
 * are per pool, from 0 in each; MP_ERR_INFEASIBLE names what does not fit
 * (a pin beyond a capacity, two pins that overlap, a tensor above the
 * largest buffer, everything else beyond the last pool's capacity). The
 * plan's arena_bytes is the sum of the pools' arenas. */
MP_API mp_status mp_plan_create_constrained(mp_graph *g,
                                            const mp_plan_options *opt,
                                            const mp_constraints *c,
                                            mp_plan **out);
typedef struct mp_pool_info {
    const char *name;
    uint64_t capacity;
    double bandwidth;
    uint64_t arena_bytes;        /* the offsets' extent in this pool */
    uint64_t lower_bound_bytes;  /* max over steps of live bytes here */
    uint32_t n_blocks;
} mp_pool_info;
/* 1 for a plan made without pools. */
MP_API uint32_t mp_plan_num_pools(const mp_plan *p);
MP_API mp_status mp_plan_pool_info(const mp_plan *p, uint32_t pool,
                                   mp_pool_info *out);
/* The pool of block i (0 without pools). */
MP_API uint32_t mp_plan_block_pool(const mp_plan *p, uint32_t block);
/* Estimated time of a plan on the pools of c: for each compute step,
 * max(FLOPs / compute rate, sum over the tensors it reads and writes of
 * bytes / bandwidth of the tensor's pool); persistent tensors (weights)
 * and the blocks of a plan without pools count in c's last pool. */
MP_API mp_status mp_plan_estimate_seconds(const mp_plan *p,
                                          const mp_constraints *c,
                                          double *seconds);
/* Checks what mp_verify_plan cannot know: pins at their offsets and
 * pools, per-tensor alignment, no-share tensors alone in their address
 * range, the largest buffer, pool capacities. MP_ERR_VERIFY names the
 * first violation. */
MP_API mp_status mp_verify_constraints(const mp_graph *g, const mp_plan *p,
                                       const mp_constraints *c);

/* Shape ranges: a plan made for the upper bounds of symbolic dims (load
 * the model with every symbol bound to its bound) holds the graph for any
 * smaller values when every arena tensor's bytes there are at most its
 * block's. mp_plan_fits checks a graph (the same model loaded with other
 * values) against such a plan: same tensors by name, each arena tensor no
 * larger than its block. MP_ERR_VERIFY names the first that is. */
MP_API mp_status mp_plan_fits(const mp_plan *p, const mp_graph *g);
/* Loads `path` once per value set (n_sets sets of n_dims bindings) and
 * checks each with mp_plan_fits; *failed (may be NULL) is the first set
 * that does not fit, or n_sets. */
MP_API mp_status mp_plan_check_range(const mp_plan *p, const char *path,
                                     const mp_dim_binding *sets,
                                     size_t n_dims, size_t n_sets,
                                     size_t *failed);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_H */
