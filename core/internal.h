/* Internal declarations shared by the library's layers. Not installed. */
#ifndef MP__INTERNAL_H
#define MP__INTERNAL_H

#include "memplan/memplan.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define MP__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MP__PRINTF(a, b)
#endif

/* ---- context ------------------------------------------------------------ */
#define MP__MSG_MAX 1024

struct mp_ctx {
    mp_allocator alloc;
    mp_status status;
    char msg[MP__MSG_MAX];
};

/* Records status and message in ctx; returns status. */
mp_status mp__err(mp_ctx *ctx, mp_status st, const char *fmt, ...)
    MP__PRINTF(3, 4);
mp_status mp__verr(mp_ctx *ctx, mp_status st, const char *fmt, va_list ap);

/* Allocation through the context's hooks. On failure they record
 * MP_ERR_NOMEM in ctx and return NULL. Sizes are checked for overflow. */
void *mp__alloc(mp_ctx *ctx, size_t size);
void *mp__calloc(mp_ctx *ctx, size_t count, size_t size);
void *mp__realloc_array(mp_ctx *ctx, void *ptr, size_t count, size_t size);
void mp__dealloc(mp_ctx *ctx, void *ptr);
char *mp__strdup(mp_ctx *ctx, const char *s);

/* Grows *arr (element size elt) so that it holds at least need elements;
 * *cap is updated. Returns MP_OK or MP_ERR_NOMEM. */
mp_status mp__grow(mp_ctx *ctx, void **arr, size_t elt, size_t need,
                  size_t *cap);

/* Checked 64-bit arithmetic: return false on overflow. */
static inline bool mp__add_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline bool mp__mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
/* Rounds v up to a multiple of align (>= 1); false on overflow. */
static inline bool mp__align_up(uint64_t v, uint64_t align, uint64_t *r)
{
    uint64_t rem = v % align;
    if (rem == 0) {
        *r = v;
        return true;
    }
    return mp__add_u64(v, align - rem, r);
}

double mp__now_seconds(void);

/* Binary min-heap of uint32 (h holds *n values): the smallest-index-first
 * topological orders use it, keeping a given order that is already
 * topological. */
static inline void mp__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p] <= v)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static inline uint32_t mp__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0], v = h[--(*n)], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* Reads a whole file with the context allocator; the text is
 * NUL-terminated. MP_ERR_IO names the file. (core/io.c) */
mp_status mp__read_file(mp_ctx *ctx, const char *path, char **text,
                       size_t *len);
/* Writes len bytes to path (created or truncated); MP_ERR_IO names it. */
mp_status mp__write_file(mp_ctx *ctx, const char *path, const char *data,
                        size_t len);

/* ---- string -> index hash map (open addressing) ------------------------ */
typedef struct mp__name_map {
    uint32_t *slots;   /* index + 1; 0 = empty */
    uint32_t *hashes;  /* full hash of each slot's key */
    uint32_t cap;      /* power of two */
    uint32_t count;
} mp__name_map;

/* names(i) gives the key of index i: the map stores indices only. */
typedef const char *(*mp__name_of_fn)(const void *owner, uint32_t idx);
mp_status mp__name_map_insert(mp_ctx *ctx, mp__name_map *m, const void *owner,
                             mp__name_of_fn name_of, const char *key,
                             uint32_t idx, uint32_t *existing);
uint32_t mp__name_map_find(const mp__name_map *m, const void *owner,
                          mp__name_of_fn name_of, const char *key);
void mp__name_map_free(mp_ctx *ctx, mp__name_map *m);

/* ---- op registry ------------------------------------------------------- */
struct mp_graph;

enum {
    MP__OPF_VIEW = 1u << 0,        /* output 0 aliases input 0: no memory */
    MP__OPF_ELEMENTWISE = 1u << 1, /* same-shape pointwise op */
    MP__OPF_INPLACE = 1u << 2,     /* may write output 0 into input 0 */
    MP__OPF_CONSTANT = 1u << 3,    /* a source of constants (Constant) */
    /* roles the static lints (analysis/lints.c) look for: */
    MP__OPF_MATMUL = 1u << 4,      /* a matrix product (attention scores) */
    MP__OPF_SOFTMAX = 1u << 5      /* a softmax over the last axis */
};
/* In-place reuse (core/sched/inplace.c, issue 4). MP__OPF_INPLACE lets output
 * 0 take over input 0's memory when that input dies at the node; with
 * MP__OPF_INPLACE_ANY too, any input of output 0's byte size (binary and
 * variadic pointwise ops: out[i] reads every in[i] before writing it). */
enum {
    MP__OPF_INPLACE_ANY = 1u << 6
};

/* Cost class of an op (analysis/cost.c: FLOPs and bytes), kept in the
 * registry entry's flags as MP__OPF_COST(class); 0 (the default) counts
 * one FLOP per output element and the bytes of every input and output. */
enum {
    MP__COST_DEFAULT = 0,
    MP__COST_MATMUL = 1,          /* 2 * numel(Y) * K */
    MP__COST_GEMM = 2,            /* 2 * M * N * K (+ M * N with C) */
    MP__COST_CONV = 3,            /* 2 * numel(Y) * numel(W) / C_out */
    MP__COST_CONV_TRANSPOSE = 4,  /* 2 * numel(X) * numel(W) / C_in */
    MP__COST_POOL = 5,            /* numel(Y) * prod(kernel_shape) */
    MP__COST_NORM = 6,            /* 8 FLOPs per input element */
    MP__COST_SOFTMAX = 7,         /* 5 FLOPs per element */
    MP__COST_MOVE = 8             /* data movement only: 0 FLOPs */
};
#define MP__OPF_COST_SHIFT 8
#define MP__OPF_COST(c) ((unsigned)(c) << MP__OPF_COST_SHIFT)
#define MP__OP_COST_CLASS(def) (((def)->flags >> MP__OPF_COST_SHIFT) & 0xffu)
/* FLOPs and bytes (read + written) of a node from its registry entry. */
mp_status mp__node_flops_bytes(const struct mp_graph *g, uint32_t node,
                              double *flops, double *bytes);
/* mp_node_estimate; use_given = 0 ignores FLOPs, bytes and seconds the
 * graph gives and estimates from the registry alone. */
mp_status mp__node_estimate_ex(const struct mp_graph *g, uint32_t node,
                              const mp_device *d, int use_given,
                              mp_op_cost *out);

/* Executor kernel of an op (validate/, issue 6): which kernel of the CUDA
 * executor implements it and its variant (MP__KOP_*), kept in the registry
 * entry's flags as MP__OPF_KERNEL(kernel, kop). The default (0) is
 * MP__KERNEL_SYNTHETIC: a deterministic kernel that reads every input byte
 * and writes every output byte. */
typedef enum mp__kernel {
    MP__KERNEL_SYNTHETIC = 0, MP__KERNEL_VIEW, MP__KERNEL_COPY, MP__KERNEL_UNARY,
    MP__KERNEL_BINARY, MP__KERNEL_VARIADIC, MP__KERNEL_MATMUL, MP__KERNEL_GEMM,
    MP__KERNEL_CONV, MP__KERNEL_POOL, MP__KERNEL_GLOBAL_POOL,
    MP__KERNEL_BATCHNORM, MP__KERNEL_LAYERNORM, MP__KERNEL_LRN,
    MP__KERNEL_SOFTMAX, MP__KERNEL_CONCAT, MP__KERNEL_SPLIT, MP__KERNEL_SLICE,
    MP__KERNEL_TRANSPOSE, MP__KERNEL_GATHER, MP__KERNEL_REDUCE, MP__KERNEL_RESIZE,
    MP__KERNEL_CAST, MP__KERNEL_PAD, MP__KERNEL_SHAPE, MP__KERNEL_EXPAND,
    MP__KERNEL_COUNT_
} mp__kernel;
enum {
    /* unary (MP__KERNEL_UNARY) */
    MP__KOP_RELU = 1, MP__KOP_SIGMOID, MP__KOP_TANH, MP__KOP_EXP, MP__KOP_LOG,
    MP__KOP_ERF, MP__KOP_GELU, MP__KOP_CLIP, MP__KOP_HARDSIGMOID,
    MP__KOP_HARDSWISH, MP__KOP_LEAKYRELU, MP__KOP_SQRT, MP__KOP_NEG, MP__KOP_ABS,
    MP__KOP_RECIPROCAL, MP__KOP_SOFTPLUS, MP__KOP_ELU, MP__KOP_FLOOR,
    MP__KOP_CEIL, MP__KOP_SIN, MP__KOP_COS,
    /* binary and variadic (MP__KERNEL_BINARY, MP__KERNEL_VARIADIC) */
    MP__KOP_ADD = 32, MP__KOP_SUB, MP__KOP_MUL, MP__KOP_DIV, MP__KOP_POW,
    MP__KOP_MAX, MP__KOP_MIN, MP__KOP_MEAN, MP__KOP_PRELU,
    /* pooling, reductions, softmax */
    MP__KOP_POOL_MAX = 64, MP__KOP_POOL_AVG, MP__KOP_REDUCE_SUM,
    MP__KOP_REDUCE_MEAN, MP__KOP_REDUCE_MAX, MP__KOP_REDUCE_MIN,
    MP__KOP_REDUCE_PROD, MP__KOP_REDUCE_SUMSQ, MP__KOP_REDUCE_L1,
    MP__KOP_REDUCE_L2, MP__KOP_SOFTMAX, MP__KOP_LOGSOFTMAX
};
#define MP__OPF_KERNEL_SHIFT 16
#define MP__OPF_KOP_SHIFT 24
#define MP__OPF_KERNEL(k, kop) (((unsigned)(k) << MP__OPF_KERNEL_SHIFT) | \
                               ((unsigned)(kop) << MP__OPF_KOP_SHIFT))
#define MP__OP_KERNEL(def) (((def)->flags >> MP__OPF_KERNEL_SHIFT) & 0xffu)
#define MP__OP_KOP(def) (((def)->flags >> MP__OPF_KOP_SHIFT) & 0xffu)

/* Backward rule of an op (issue 5, planner/train.c): which forward
 * tensors its gradient needs saved. Kept in the registry entry's flags as
 * MP__OPF_BWD(rule); 0 (the default) saves every input. */
enum {
    MP__BWD_INPUTS = 0,     /* every input (MatMul, Gemm, Conv, Mul, ...) */
    MP__BWD_NONE,           /* nothing (Add, Sub, Concat, Transpose, views) */
    MP__BWD_OUTPUT,         /* output 0 (Relu, Sigmoid, Tanh, Softmax, Exp) */
    MP__BWD_INPUT0,         /* input 0 (Gelu, Erf, Log, AveragePool, ...) */
    MP__BWD_NORM_ROWS,      /* input 0 + fp32 mean and inverse std per row
                              (LayerNormalization; RMSNormalization) */
    MP__BWD_NORM_CHANNELS,  /* input 0 + fp32 mean and inverse std per
                              channel (BatchNormalization, ...) */
    MP__BWD_MASK,           /* a 1-byte mask of output 0's shape (Dropout) */
    MP__BWD_INDICES,        /* input 0 + int64 indices of output 0 (MaxPool) */
    MP__BWD_NONDIFF         /* no gradient flows (Shape, comparisons, ...) */
};
#define MP__OPF_BWD_SHIFT 32
#define MP__OPF_BWD(r) ((uint64_t)(r) << MP__OPF_BWD_SHIFT)
#define MP__OP_BWD(def) ((unsigned)(((def)->flags >> MP__OPF_BWD_SHIFT) & 0xffu))
/* Gradient pass-through (planner/train.c): the gradient of an input that
 * has output 0's shape (not broadcast) is output 0's gradient unchanged,
 * so the training graph makes it a view of that gradient (no copy), as
 * autograd frameworks pass one tensor to both inputs of an Add.
 * MP__OPF_GRAD_PASS0: input 0 only (Sub: input 1 is negated);
 * MP__OPF_GRAD_PASS_ALL: every input (Add, Sum). */
#define MP__OPF_GRAD_PASS0 ((uint64_t)1 << 40)
#define MP__OPF_GRAD_PASS_ALL ((uint64_t)1 << 41)

typedef struct mp__op_def {
    const char *name;     /* op type; "" for the generic entry */
    const char *domain;   /* "" = ai.onnx */
    uint64_t flags;       /* MP__OPF_* bits and the packed fields */
    /* Fills in sizes (and shapes where it can) of the node's outputs that
     * are not known yet. Returns MP_OK, or an error naming node/tensor. */
    mp_status (*infer)(struct mp_graph *g, uint32_t node);
} mp__op_def;

/* The registry entry of an op type; the generic entry when unknown. */
const mp__op_def *mp__op_lookup(const char *op, const char *domain);
const mp__op_def *mp__op_generic(void);
/* Pointwise op (ELEMENTWISE, INPLACE or INPLACE_ANY, not a view): what a
 * fused chain (--fuse) is made of. */
bool mp__op_pointwise(const mp__op_def *d);
/* True when the op's output 0 may be written into its input position i. */
bool mp__op_may_overwrite(const mp__op_def *d, uint32_t i);

/* ---- graph IR ------------------------------------------------------------ */
enum {
    MP__TF_SIZE_KNOWN = 1u << 0,
    MP__TF_OUTPUT = 1u << 1,
    MP__TF_FOLDED = 1u << 2,  /* computed only from weights/constants */
    MP__TF_BYTES_GIVEN = 1u << 3, /* bytes given explicitly (not derived) */
    /* shape declared as a hint (ONNX value_info / graph outputs): when
     * inference gives a shape that conflicts with it, the inferred one
     * replaces it (mp__out_set) */
    MP__TF_SHAPE_HINT = 1u << 4
};

typedef struct mp__tensor {
    char *name;
    int64_t *dims;         /* rank entries, -1 unknown */
    uint64_t bytes;
    int32_t rank;          /* -1: unknown */
    uint8_t dtype;
    uint8_t kind;          /* mp_tensor_kind (after finalize: effective) */
    uint8_t declared_kind; /* as given by the builder */
    uint8_t flags;
    uint32_t producer;     /* node or MP_NONE */
    uint32_t alias_of;     /* MP_NONE, or the tensor whose memory it views */
    uint32_t root;         /* storage root (itself when no alias) */
    uint32_t cons_begin, n_cons;   /* into g->cons (after finalize) */
    /* Value of a small constant, row-major: n_value elements, or NULL
     * when unknown. Integer and bool dtypes hold int64 values; floating
     * dtypes hold the bits of doubles (memcpy), used by Resize scales. Shape arithmetic (Shape,
     * Gather, Concat, ... feeding Reshape) is folded through it. The
     * array lives in the same allocation as dims, right after the rank
     * dims, so it is released with dims: set it only through
     * mp__tensor_set_value / mp__tensor_set_shape (core/ops/shape.c). */
    int64_t *value;
    uint32_t n_value;
    /* ONNX sequence or optional value (core/ops/ops_seq.c; NULL for a
     * tensor): its element types and shapes; owned by the tensor (one
     * allocation, freed with the graph). dtype is the elements' type. */
    struct mp__seq *seq;
} mp__tensor;

typedef enum mp__attr_type {
    MP__ATTR_INT = 0, MP__ATTR_FLOAT, MP__ATTR_STRING, MP__ATTR_INTS,
    MP__ATTR_FLOATS
} mp__attr_type;

typedef struct mp__attr {
    char *name;
    mp__attr_type type;
    uint32_t n;            /* element count for INTS/FLOATS */
    union {
        int64_t i;
        double f;
        char *s;
        int64_t *ints;
        double *floats;
    } v;
} mp__attr;

typedef struct mp__node {
    char *name;
    char *op;              /* op type as written */
    char *domain;          /* "" for the default */
    const mp__op_def *def;
    uint32_t *inputs;      /* MP_NONE for omitted optional inputs */
    uint32_t *outputs;
    uint32_t n_in, n_out;
    mp__attr *attrs;
    uint32_t n_attrs;
    uint8_t phase;
    double flops, bytes_moved, seconds;   /* < 0 unset */
} mp__node;

/* Chunked string storage owned by a graph: names, op types and domains
 * live here, freed all at once with the graph. */
typedef struct mp__str_chunk {
    struct mp__str_chunk *next;
    size_t used, cap;
    char data[];
} mp__str_chunk;

struct mp_graph {
    mp_ctx *ctx;
    mp__str_chunk *strings;
    char *name;
    mp__tensor *tensors;
    size_t n_tensors, cap_tensors;
    mp__node *nodes;
    size_t n_nodes, cap_nodes;
    mp__name_map tensor_map, node_map;
    bool finalized;
    /* after finalize: */
    uint32_t *cons;        /* consumer node ids, grouped per tensor */
    uint32_t *topo;        /* node ids in topological order */
    /* ONNX: opset version of the default domain (0: unknown / not ONNX) */
    int64_t onnx_opset;
    /* Re-batching (issue 3/5, helper rebatch; mp_onnx_options.batch,
     * core/ops/rebatch.c): the model was declared at batch rebatch_from
     * and is planned at rebatch_to; shape constants that carry the batch
     * are re-batched by the shape functions (Reshape targets, Resize sizes).
     * 0: not re-batched (or the declared batch is unknown). */
    int64_t rebatch_from, rebatch_to;
    /* ONNX control flow (frontends/onnx/onnx.c, core/ops/ops_control.c):
     * subgraphs owned by this graph (If/Loop/Scan bodies), destroyed with
     * it; a node finds its body by the int attribute "ATTR.graph" (index
     * here). A subgraph lists its formal inputs and outputs in order. */
    struct mp_graph **subgraphs;
    size_t n_subgraphs, cap_subgraphs;
    uint32_t *sub_inputs, *sub_outputs;
    uint32_t n_sub_inputs, n_sub_outputs;
    /* String values (core/ops/strval.c, issue 3): a STRING tensor's value
     * holds ids into one interned table per graph tree (equal ids are
     * equal strings), owned by the top graph; str_root is the graph whose
     * table a subgraph uses (NULL: its own). */
    struct mp__strtab *strtab;
    struct mp_graph *str_root;
};

const mp__attr *mp__node_attr(const mp__node *n, const char *name);
/* True when the tensor takes arena memory (not persistent, not a view). */
bool mp__tensor_in_arena(const mp__tensor *t);
bool mp__kind_persistent(uint8_t kind);
/* Computes bytes from dtype and dims; MP_ERR_SHAPE when unknown,
 * MP_ERR_OVERFLOW on overflow (message names the tensor). */
mp_status mp__tensor_bytes_from_shape(mp_ctx *ctx, const mp__tensor *t,
                                     uint64_t *bytes);

/* ---- plans --------------------------------------------------------------- */
/* A pool of a plan (issue 9): offsets of its blocks start at 0. */
#define MP__MAX_POOLS 1024
typedef struct mp__pool_plan {
    char name[32];
    uint64_t capacity;
    double bandwidth;
    uint64_t arena_bytes, lower_bound_bytes;
    uint32_t n_blocks;
} mp__pool_plan;

struct mp_plan {
    mp_ctx *ctx;
    const mp_graph *graph;
    mp_step *steps;
    uint32_t n_steps;
    mp_block *blocks;
    uint32_t n_blocks;
    uint64_t *live;        /* live arena bytes per step */
    mp_figures fig;
    char solver_name[32];
    /* memory pools (solvers/pools.c, issue 9): the pool of each block
     * and the pools; NULL / 0 for a plan made without pools (one pool) */
    uint32_t *block_pool;
    struct mp__pool_plan *pools;
    uint32_t n_pools;
    /* in-place reuse and fused chains (core/sched/inplace.c, issue 4): */
    uint32_t *block_over;  /* per block: the tensor whose memory it took
                              over at its first step, or MP_NONE; NULL
                              when no block did */
    uint8_t *fused;        /* per tensor: 1 inside a fused chain (no
                              block); NULL when none */
};

/* Builds the default schedule of g (topological order, FREE after last
 * use). Allocates *steps with the context allocator. */
mp_status mp__schedule_default(const mp_graph *g, mp_step **steps,
                              uint32_t *n_steps);
/* Derives blocks (lifetimes) from a schedule: one block per arena tensor
 * instance, offsets unset. */
mp_status mp__schedule_blocks(const mp_graph *g, const mp_step *steps,
                             uint32_t n_steps, uint64_t alignment,
                             mp_block **blocks, uint32_t *n_blocks);
/* Live bytes per step from blocks. */
mp_status mp__blocks_live(mp_ctx *ctx, const mp_block *blocks, uint32_t n,
                         uint32_t n_steps, uint64_t **live);

/* Builds a plan from a schedule (steps allocated with the context
 * allocator; ownership passes to the plan, also on failure): blocks and
 * lifetimes derived from the steps, offsets by opt->method, figures.
 * t0 (mp__now_seconds) is when solving started, for solve_seconds. */
mp_status mp__plan_from_schedule(mp_graph *g, mp_step *steps, uint32_t n_steps,
                                const mp_plan_options *opt, double t0,
                                mp_plan **out);
/* Re-places p's offsets so that the arena fits `capacity` bytes (the
 * exact tier asked for that capacity, seeded by the heuristics). The new
 * offsets are kept only when the arena shrinks; MP_OK whether or not it
 * fits (compare p->fig.arena_bytes), an error only on failure. Used by
 * planners that promise a budget on the placed arena, not only on the
 * live bytes (recompute, offload). */
mp_status mp__plan_refit(mp_plan *p, const mp_plan_options *opt,
                        uint64_t capacity);
/* In-place reuse and fused chains (core/sched/inplace.c). Rewrites a
 * schedule of COMPUTE/RECOMPUTE/FREE steps: with fuse, marks the tensors
 * inside fused pointwise chains (*fused, per tensor, NULL when none) and
 * moves the FREE steps of a chain's inputs after its last node; with
 * inplace, lets output 0 of a node take over an input that dies there (its
 * FREE step disappears; *step_over[s] is that input, per new step, NULL
 * when none). Takes ownership of *steps (replaced). Schedules with other
 * step kinds are left as they are. */
mp_status mp__sharing_apply(const mp_graph *g, mp_step **steps,
                           uint32_t *n_steps, int inplace, int fuse,
                           uint32_t **step_over, uint8_t **fused);
/* mp__schedule_blocks that understands step_over and fused (either NULL):
 * *block_over per block (NULL when no block took over another). */
mp_status mp__schedule_blocks_shared(const mp_graph *g, const mp_step *steps,
                                    uint32_t n_steps, uint64_t alignment,
                                    const uint32_t *step_over,
                                    const uint8_t *fused, mp_block **blocks,
                                    uint32_t *n_blocks, uint32_t **block_over);
/* The buffers handed to the offsets solver: one per chain of blocks that
 * share memory in place (one per block without block_over). *group
 * (NULL when identity) maps each block to its buffer. */
mp_status mp__sharing_buffers(const mp_plan *p, mp_buffer **bufs,
                             uint32_t *n_bufs, uint32_t **group);
/* Schedule from a topological order: COMPUTE each node, FREE each arena
 * storage root right after its last reader (solvers/order.c). */
mp_status mp__schedule_from_order(const mp_graph *g, const uint32_t *order,
                                 mp_step **steps, uint32_t *n_steps);
/* mp_plan_create with opt->reorder (solvers/order.c): plans the default
 * order and mp_order_solve's, keeps the lower bound's winner (the default
 * on a tie) and reports both in fig.order_lb_before/after. */
mp_status mp__plan_create_reordered(mp_graph *g, const mp_plan_options *opt,
                                   mp_plan **out);

/* Sum of the bytes of persistent storage roots (weights, constants,
 * optimizer state); UINT64_MAX on overflow. */
uint64_t mp__plan_persistent_bytes(const mp_graph *g);
/* Fills p->fig from p->blocks and p->live: lower bound, peak step, arena,
 * no-reuse and persistent bytes, peak (not status, solver, alignment). */
mp_status mp__plan_compute_figures(mp_plan *p);

#endif /* MP__INTERNAL_H */
