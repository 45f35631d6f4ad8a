/* core/ir.h - the graph IR: tensors, attributes, nodes and the graph,
 * and the format of an op registry entry (flags, cost class, executor
 * kernel, backward rule) that each node points to. The registry table and
 * shape inference are one layer up (core/ops/ops.h). Internal, not
 * installed. */
#ifndef MP__IR_H
#define MP__IR_H

#include "base.h"

struct mp_graph;

/* ---- op registry entries ------------------------------------------------ */

enum {
    MP__OPF_VIEW = 1u << 0,        /* output 0 aliases input 0: no memory */
    MP__OPF_ELEMENTWISE = 1u << 1, /* same-shape pointwise op */
    MP__OPF_INPLACE = 1u << 2,     /* may write output 0 into input 0 */
    MP__OPF_CONSTANT = 1u << 3,    /* a source of constants (Constant) */
    /* roles the static lints (analysis/lints.c) look for: */
    MP__OPF_MATMUL = 1u << 4,      /* a matrix product (attention scores) */
    MP__OPF_SOFTMAX = 1u << 5      /* a softmax over the last axis */
};
/* In-place reuse (core/sched/inplace.c). MP__OPF_INPLACE lets output
 * 0 take over input 0's memory when that input dies at the node; with
 * MP__OPF_INPLACE_ANY too, any input of output 0's byte size (binary and
 * variadic pointwise ops: out[i] reads every in[i] before writing it). */
enum {
    MP__OPF_INPLACE_ANY = 1u << 6
};
/* Cheap to recompute although no other flag says so: reductions,
 * comparisons, casts, Where (see mp__op_cheap). */
enum {
    MP__OPF_CHEAP = 1u << 7
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
    MP__COST_MOVE = 8,            /* data movement only: 0 FLOPs */
    MP__COST_ATTENTION = 9        /* fused attention: 4 * B*H * Tq * Tk * D
                                     (the two products; backward 2.5x) */
};
#define MP__OPF_COST_SHIFT 8
#define MP__OPF_COST(c) ((unsigned)(c) << MP__OPF_COST_SHIFT)
#define MP__OP_COST_CLASS(def) (((def)->flags >> MP__OPF_COST_SHIFT) & 0xffu)

/* Executor kernel of an op (validate/): which kernel of the CUDA
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
    MP__KERNEL_ATTENTION, MP__KERNEL_LOSS, MP__KERNEL_LOSS_GRAD,
    MP__KERNEL_SGD, MP__KERNEL_WHERE, MP__KERNEL_COLLECTIVE,
    /* serving (docs/serving.md, "The executor run"): attention over a
     * paged or contiguous KV cache, the sampler's sort and greedy pick */
    MP__KERNEL_PAGED_ATTENTION, MP__KERNEL_SORT, MP__KERNEL_SAMPLE,
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
    MP__KOP_SWIGLU,   /* silu(x) * y */
    /* pooling, reductions, softmax */
    MP__KOP_POOL_MAX = 64, MP__KOP_POOL_AVG, MP__KOP_REDUCE_SUM,
    MP__KOP_REDUCE_MEAN, MP__KOP_REDUCE_MAX, MP__KOP_REDUCE_MIN,
    MP__KOP_REDUCE_PROD, MP__KOP_REDUCE_SUMSQ, MP__KOP_REDUCE_L1,
    MP__KOP_REDUCE_L2, MP__KOP_SOFTMAX, MP__KOP_LOGSOFTMAX,
    MP__KOP_RMS_NORM, /* MP__KERNEL_LAYERNORM without the mean, no bias */
    /* optimizer steps (MP__KERNEL_SGD; 0: plain SGD) and the foreach
     * group's temporary */
    MP__KOP_OPT_MOMENTUM = 96, MP__KOP_OPT_ADAM, MP__KOP_OPT_ADAMW,
    MP__KOP_OPT_FOREACH,
    /* collectives (MP__KERNEL_COLLECTIVE): on one GPU (validate --rank),
     * local operations on the same buffers */
    MP__KOP_ALL_REDUCE = 112, MP__KOP_ALL_GATHER, MP__KOP_REDUCE_SCATTER,
    MP__KOP_SEND, MP__KOP_RECV
};
#define MP__OPF_KERNEL_SHIFT 16
#define MP__OPF_KOP_SHIFT 24
#define MP__OPF_KERNEL(k, kop) (((unsigned)(k) << MP__OPF_KERNEL_SHIFT) | \
                               ((unsigned)(kop) << MP__OPF_KOP_SHIFT))
#define MP__OP_KERNEL(def) (((def)->flags >> MP__OPF_KERNEL_SHIFT) & 0xffu)
#define MP__OP_KOP(def) (((def)->flags >> MP__OPF_KOP_SHIFT) & 0xffu)

/* Backward rule of an op (planner/train.c): which forward tensors the
 * gradient of each of its inputs needs saved, as PyTorch's autograd saves
 * them (tools/autograd/derivatives.yaml; docs/training.md lists the
 * source of each). Kept in the registry entry's flags as MP__OPF_BWD(rule);
 * 0 (the default, also unknown ops) saves every input. A node saves the
 * union of the needs of only its inputs that require a gradient
 * (mp__bwd_needs, core/ops/ops.h). */
enum {
    MP__BWD_INPUTS = 0,     /* each input's gradient: every input (unknown
                              ops, Max, Min, PRelu, GatherElements) */
    MP__BWD_NONE,           /* nothing (Add, Sub, Concat, Transpose, views) */
    MP__BWD_OUTPUT,         /* output 0 (Relu, Sigmoid, Tanh, Softmax, Exp) */
    MP__BWD_INPUT0,         /* input 0 (Gelu, Erf, Log, AveragePool, ...) */
    MP__BWD_NORM_ROWS,      /* every input + fp32 mean and inverse std per
                              row (LayerNormalization; RMSNormalization) */
    MP__BWD_NORM_CHANNELS,  /* every input + fp32 mean and inverse std per
                              channel (BatchNormalization) */
    MP__BWD_MASK,           /* a 1-byte mask of output 0's shape (Dropout) */
    MP__BWD_INDICES,        /* input 0 + int64 indices of output 0 (MaxPool) */
    MP__BWD_NONDIFF,        /* no gradient flows (Shape, comparisons, ...) */
    MP__BWD_OTHER,          /* input 0's gradient: input 1; input 1's:
                              input 0 (Mul) */
    MP__BWD_MATMUL,         /* A's gradient: B; B's: A; Gemm's C: nothing
                              (MatMul, Gemm, whatever transA/transB) */
    MP__BWD_DIV,            /* input 0's gradient: input 1; input 1's:
                              both inputs (Div) */
    MP__BWD_POW,            /* base's gradient: base and exponent; the
                              exponent's: both and output 0 (Pow) */
    MP__BWD_WHERE,          /* the condition (input 0) for either branch */
    MP__BWD_GATHER,         /* data's gradient: the indices (input 1) */
    MP__BWD_CONV,           /* input, weight and bias share one formula:
                              input and weight when any needs a gradient
                              (Conv, ConvTranspose) */
    MP__BWD_NORM_GROUPS,    /* every input + fp32 mean and inverse std per
                              sample and group (GroupNormalization;
                              InstanceNormalization: a group per channel) */
    MP__BWD_NORM_RMS,       /* every input + fp32 inverse rms per row
                              (RMSNormalization) */
    MP__BWD_SDPA,           /* every input (Q, K, V, the mask and scale
                              factors) + output 0 + the fp32 log-sum-exp
                              per query row; no T x T scores
                              (ScaledDotProductAttention, as
                              _scaled_dot_product_efficient_attention
                              saves) */
    MP__BWD_COUNT_
};
/* What the gradient of one input needs (mp__bwd_needs): input 0, 1, 2,
 * every input, output 0, the extra saved output (statistics, mask or
 * indices, planner/train.c). */
enum {
    MP__BWDN_IN0 = 1u << 0,
    MP__BWDN_IN1 = 1u << 1,
    MP__BWDN_IN2 = 1u << 2,
    MP__BWDN_ALL_IN = 1u << 3,
    MP__BWDN_OUT0 = 1u << 4,
    MP__BWDN_EXTRA = 1u << 5
};
/* The extra saved output of a rule (mp__bwd_extra): none, statistics
 * (fp32, n_stats vectors of one value per row before the axis, per
 * channel, or per sample and group), a bool mask or int64 indices of
 * output 0's shape. */
enum {
    MP__BWDX_NONE = 0, MP__BWDX_ROWS, MP__BWDX_CHANNELS, MP__BWDX_GROUPS,
    MP__BWDX_MASK, MP__BWDX_INDICES
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
/* Transposed operands, as cuBLAS reads them (op T): a Transpose that
 * swaps the last two axes (MP__OPF_VIEW_T) is a view of its input, not a
 * copy, when every node that reads it is a matrix product reading it as
 * operand 0 or 1 (MP__OPF_T_OPERAND: MatMul, Gemm, and the fused
 * attention's Q and K transposed) or a backward node of
 * a training graph (which reads the saved operand as the product did):
 * the transposed weight of a Linear layer as exporters write it. The
 * decision is per node (mp__node.view, set by mp_graph_finalize);
 * mp__node_view answers for both kinds of view. */
#define MP__OPF_VIEW_T ((uint64_t)1 << 42)
#define MP__OPF_T_OPERAND ((uint64_t)1 << 43)
/* Broadcast views: an Expand (MP__OPF_VIEW_B) is a view of its input, not
 * a copy, when every node that reads it reads all its inputs broadcast to
 * its output's shape (MP__OPF_BCAST_IN: the numpy-broadcasting pointwise
 * ops, comparisons and Where) or is a backward node: broadcasting the
 * Expand's input directly gives the same values. Range views: a Slice
 * with unit steps or a Split (MP__OPF_VIEW_R) whose outputs are each one
 * contiguous range of the input's bytes (every axis before the sliced
 * one has one element taken, every axis after it is whole) and are no
 * graph outputs is a view of the input at a byte offset. Both decided per
 * node by mp_graph_finalize, like transposed views. */
#define MP__OPF_VIEW_B ((uint64_t)1 << 47)
#define MP__OPF_BCAST_IN ((uint64_t)1 << 48)
#define MP__OPF_VIEW_R ((uint64_t)1 << 49)
/* Permuted views: a Transpose (MP__OPF_VIEW_T) with any perm is a view of
 * its input when every node that reads it takes operands 0-2 with any
 * strides (MP__OPF_STRIDED_IN: the fused attention reads Q, K^T and V
 * so, as PyTorch's scaled_dot_product_attention reads q.transpose(1, 2))
 * and reads it only there, or is a backward node: the Q/K/V permutes of
 * multi-head attention, (0,2,1,3) and (0,2,3,1), cost no copy. */
#define MP__OPF_STRIDED_IN ((uint64_t)1 << 50)
/* Reads only the shapes of its inputs (Shape, Size): once the shapes are
 * known its output is a constant, folded as the outputs of nodes that
 * read only weights and constants are (core/ops/finalize.c), and so is
 * the shape arithmetic that follows it. */
#define MP__OPF_SHAPE_READ ((uint64_t)1 << 51)
/* A collective of a multi-GPU rank's graph (planner/parallel.c:
 * AllReduce, AllGather, ReduceScatter, Send, Recv): its outputs are
 * communication buffers (mp_rank_breakdown.comm_bytes), never folded
 * into constants (an all-gather of persistent shards runs every step). */
#define MP__OPF_COLLECTIVE ((uint64_t)1 << 52)
/* Autocast class (planner/train.c, bf16-mixed and 16-mixed), as
 * torch.autocast's CUDA lists place the op, kept in the registry entry's
 * flags as MP__OPF_AMP(class):
 * MP__AMP_PROMOTE (0, the default): ops on no list; the output takes the
 * widest float dtype of the inputs that are not scalars (PyTorch's type
 * promotion: bf16 + fp32 -> fp32), no copies;
 * MP__AMP_LOW: the lower-precision list (matmul, linear, conv, bmm,
 * einsum, prelu, attention): float32 inputs are cast to bf16/fp16 copies
 * (a weight's copy is cached and held through forward), bf16/fp16 out;
 * MP__AMP_F32: the fp32 list (layer_norm, group_norm, exp, log, pow,
 * reciprocal, softplus, upsample, norms): bf16/fp16 inputs are cast to
 * fp32 copies, fp32 out;
 * MP__AMP_F32_OPT: the fp32 ops that take a dtype argument (softmax,
 * log_softmax, sum, prod, cumsum): fp32 out, the input read as it is;
 * MP__AMP_INPUT0: ops on no list whose output has input 0's dtype
 * whatever the other inputs' (batch_norm, instance_norm: fp32 statistics
 * and affine weights with bf16 activations);
 * MP__AMP_KEEP: an explicit conversion (Cast, CastLike: `.float()`,
 * `.to(dtype)`): the output keeps the dtype the model gives it. */
enum {
    MP__AMP_PROMOTE = 0, MP__AMP_LOW, MP__AMP_F32, MP__AMP_F32_OPT,
    MP__AMP_INPUT0, MP__AMP_KEEP
};
#define MP__OPF_AMP_SHIFT 44
#define MP__OPF_AMP(c) ((uint64_t)(c) << MP__OPF_AMP_SHIFT)
#define MP__OP_AMP(def) ((unsigned)(((def)->flags >> MP__OPF_AMP_SHIFT) & 0x7u))

typedef struct mp__op_def {
    const char *name;     /* op type; "" for the generic entry */
    const char *domain;   /* "" = ai.onnx */
    uint64_t flags;       /* MP__OPF_* bits and the packed fields */
    /* Fills in sizes (and shapes where it can) of the node's outputs that
     * are not known yet. Returns MP_OK, or an error naming node/tensor. */
    mp_status (*infer)(struct mp_graph *g, uint32_t node);
} mp__op_def;

/* The generic entry (core/ops/registry.c, name ""): the one unknown ops
 * get, which needs their outputs' shapes declared. */
static inline bool mp__op_is_generic(const mp__op_def *d)
{
    return d && d->name[0] == '\0';
}
/* Pointwise op (ELEMENTWISE, INPLACE or INPLACE_ANY, not a view): what a
 * fused chain (--fuse) is made of. */
static inline bool mp__op_pointwise(const mp__op_def *d)
{
    return d && (d->flags & (MP__OPF_ELEMENTWISE | MP__OPF_INPLACE |
                             MP__OPF_INPLACE_ANY)) &&
           !(d->flags & MP__OPF_VIEW);
}
/* Cheap to recompute: what the min-cut save/recompute choice
 * (solvers/remat/remat_mincut.c) may recompute in backward, as
 * AOTAutograd's default allowlist: pointwise ops (ELEMENTWISE or
 * INPLACE_ANY), views, layout and data movement (cost class MOVE),
 * normalizations and softmax (reductions and pointwise ops once
 * decomposed), constants, and the entries marked MP__OPF_CHEAP. Never a
 * matrix product, convolution, attention, pooling or random op. */
static inline bool mp__op_cheap(const mp__op_def *d)
{
    if (!d)
        return false;
    unsigned c = (unsigned)MP__OP_COST_CLASS(d);
    return (d->flags & (MP__OPF_ELEMENTWISE | MP__OPF_INPLACE_ANY |
                        MP__OPF_VIEW | MP__OPF_CONSTANT | MP__OPF_CHEAP)) ||
           c == MP__COST_NORM || c == MP__COST_SOFTMAX || c == MP__COST_MOVE;
}
/* True when the op's output 0 may be written into its input position i. */
static inline bool mp__op_may_overwrite(const mp__op_def *d, uint32_t i)
{
    if (!d)
        return false;
    if (d->flags & MP__OPF_INPLACE_ANY)
        return true;
    return i == 0 && (d->flags & MP__OPF_INPLACE);
}

/* ---- graph IR ------------------------------------------------------------ */
enum {
    MP__TF_SIZE_KNOWN = 1u << 0,
    MP__TF_OUTPUT = 1u << 1,
    MP__TF_FOLDED = 1u << 2,  /* computed only from weights/constants */
    MP__TF_BYTES_GIVEN = 1u << 3, /* bytes given explicitly (not derived) */
    /* shape declared as a hint (ONNX value_info / graph outputs): when
     * inference gives a shape that conflicts with it, the inferred one
     * replaces it (mp__out_set) */
    MP__TF_SHAPE_HINT = 1u << 4,
    /* computed every step although its inputs are persistent (autocast's
     * cast of a weight in a training graph): finalize does not fold it */
    MP__TF_NO_FOLD = 1u << 5
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
    /* bytes from the start of the root's memory to this tensor's (a
     * range view: a Slice or Split part; 0 for roots and other views) */
    uint64_t view_off;
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
    const mp__op_def *def; /* registry entry: NULL until finalize */
    uint32_t *inputs;      /* MP_NONE for omitted optional inputs */
    uint32_t *outputs;
    uint32_t n_in, n_out;
    mp__attr *attrs;       /* in the order they were set */
    uint32_t n_attrs, cap_attrs;
    /* attribute name -> index, built once a node has more than
     * MP__ATTR_INDEX_MIN attributes (NULL below: a scan is faster) */
    mp__name_map *attr_index;
    uint8_t phase;
    uint8_t view;          /* a view by its readers: MP__NVIEW_* */
    /* a backward node that is pointwise though its op has no registry
     * entry: the gradient of a pointwise op, one output the size of the
     * output gradient it reads, every arena input that size (set by the
     * training graph's builder, planner/train.c) */
    uint8_t bwd_pointwise;
    double flops, bytes_moved, seconds;   /* < 0 unset */
} mp__node;

/* A pointwise node: its op is (mp__op_pointwise), or it is a pointwise
 * backward node. What a fused chain (--fuse) is made of. */
static inline bool mp__node_pointwise(const mp__node *n)
{
    return mp__op_pointwise(n->def) || n->bwd_pointwise;
}

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
    /* the unit of the nodes' given seconds (mp_graph_set_cost_unit):
     * NULL for seconds */
    char *cost_unit;
    /* Re-batching (mp_onnx_options.batch,
     * core/ops/rebatch.c): the model was declared at batch rebatch_from
     * and is planned at rebatch_to; shape constants that carry the batch
     * are re-batched by the shape functions (Reshape targets, Resize sizes).
     * 0: not re-batched (or the declared batch is unknown). */
    int64_t rebatch_from, rebatch_to;
    /* the rewrites re-batching made (mp_graph_rebatch_info), in the order
     * made: graph inputs first, then masks, then constants in topological
     * order of their readers */
    struct mp__rebatch_rec *rebatches;
    size_t n_rebatches, cap_rebatches;
    /* ONNX control flow (frontends/onnx/onnx.c, core/ops/ops_control.c):
     * subgraphs owned by this graph (If/Loop/Scan bodies), destroyed with
     * it; a node finds its body by the int attribute "ATTR.graph" (index
     * here). A subgraph lists its formal inputs and outputs in order. */
    struct mp_graph **subgraphs;
    size_t n_subgraphs, cap_subgraphs;
    uint32_t *sub_inputs, *sub_outputs;
    uint32_t n_sub_inputs, n_sub_outputs;
    /* String values (core/strval.c): a STRING tensor's value
     * holds ids into one interned table per graph tree (equal ids are
     * equal strings), owned by the top graph; str_root is the graph whose
     * table a subgraph uses (NULL: its own). */
    struct mp__strtab *strtab;
    struct mp_graph *str_root;
    /* Set by finalize (core/ops/finalize.c) before it runs this graph's
     * shape functions: how a control-flow shape function finalizes a body
     * (core/ops/ops_control.c). Handed down through the graph so that the
     * shape functions, which the registry table names, do not call the
     * pass that looks the table up. */
    mp_status (*finalize_body)(struct mp_graph *body);
};

/* One re-batching rewrite (memplan/load.h, mp_rebatch_info): kind is an
 * mp_rebatch_kind; node MP_NONE for a graph input or a mask; tensor
 * MP_NONE for a node's attribute. */
typedef struct mp__rebatch_rec {
    uint32_t node, tensor;
    int kind, axis, rank;
    int64_t old_v[MP_MAX_RANK], new_v[MP_MAX_RANK];
} mp__rebatch_rec;

/* Records a rewrite of g's re-batching: one (node, tensor) pair is kept
 * once (a later note replaces it). MP_OK or MP_ERR_NOMEM. */
mp_status mp__graph_note_rebatch(struct mp_graph *g, int kind, uint32_t node,
                                 uint32_t tensor, const int64_t *old_v,
                                 const int64_t *new_v, int rank);

/* MP_OK while g can still be changed; MP_ERR_INVALID_ARG (message) once
 * it is finalized, or when g is NULL. MP__CHECK_OPEN returns it. */
static inline mp_status mp__graph_check_open(const mp_graph *g)
{
    if (!g)
        return MP_ERR_INVALID_ARG;
    if (g->finalized)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                       "graph is finalized and cannot be changed");
    return MP_OK;
}
#define MP__CHECK_OPEN(g)                                                    \
    do {                                                                     \
        mp_status open_st_ = mp__graph_check_open(g);                        \
        if (open_st_)                                                        \
            return open_st_;                                                 \
    } while (0)

/* The kind of view a node is by its readers (mp__node.view, decided by
 * mp_graph_finalize): transposed (MP__OPF_VIEW_T), broadcast
 * (MP__OPF_VIEW_B), byte range (MP__OPF_VIEW_R; every output), permuted
 * (MP__OPF_VIEW_T with MP__OPF_STRIDED_IN readers). */
enum { MP__NVIEW_NONE = 0, MP__NVIEW_T, MP__NVIEW_B, MP__NVIEW_R,
       MP__NVIEW_P };
/* Output 0 aliases input 0: the op is a view (MP__OPF_VIEW), or this
 * node is one by its readers (decided by finalize; a range view's every
 * output aliases input 0). */
static inline bool mp__node_view(const mp__node *n)
{
    return (n->def && (n->def->flags & MP__OPF_VIEW)) || n->view;
}
/* The view kind (MP__NVIEW_*) of tensor t's producer. */
static inline unsigned mp__tensor_view_kind(const mp_graph *g, uint32_t t)
{
    uint32_t p = t < g->n_tensors ? g->tensors[t].producer : MP_NONE;
    return p != MP_NONE ? g->nodes[p].view : MP__NVIEW_NONE;
}
/* Tensor t is a transposed view (a Transpose of its last two axes that
 * finalize made a view): a matrix product reads its producer's input with
 * op T. */
static inline bool mp__tensor_tview(const mp_graph *g, uint32_t t)
{
    return mp__tensor_view_kind(g, t) == MP__NVIEW_T;
}
/* Tensor t is a broadcast view (an Expand finalize made a view): its
 * readers broadcast its producer's input (alias_of) instead. */
static inline bool mp__tensor_bview(const mp_graph *g, uint32_t t)
{
    return mp__tensor_view_kind(g, t) == MP__NVIEW_B;
}

/* The attribute of that name, or NULL (core/attrs.c): a scan of a few,
 * a hash lookup above MP__ATTR_INDEX_MIN. */
#define MP__ATTR_INDEX_MIN 8u
const mp__attr *mp__node_attr(const mp__node *n, const char *name);
/* Sets every attribute of n (of another graph) on node id of g, in n's
 * order (core/attrs.c). */
mp_status mp__node_copy_attrs(struct mp_graph *g, const mp__node *n,
                              uint32_t id);
/* Adds to ng a copy of tensor t of another graph (core/graph.c): its
 * name (or `name` when not NULL), dtype, declared kind, shape, bytes when
 * given, known value and the no-fold mark; not its output mark. */
mp_status mp__graph_copy_tensor(struct mp_graph *ng, const mp__tensor *t,
                                const char *name, uint32_t *id);

/* ---- tensors (core/tensor.c) --------------------------------------------- */
/* Every input of node n stored in root r reads all of r as it is laid
 * out (r itself, or a view of the same bytes at offset 0 that is not
 * transposed or broadcast): what writing output 0 over r in place needs
 * (a part of r, a range view, would be overwritten before it is read). */
bool mp__node_reads_whole(const mp_graph *g, const mp__node *n, uint32_t r);
/* True when the tensor takes arena memory (not persistent, not a view). */
bool mp__tensor_in_arena(const mp__tensor *t);
bool mp__kind_persistent(uint8_t kind);
/* The persistent tensor (weight, constant, optimizer state) whose storage
 * input x reads, through views; MP_NONE when x is none or not one. An
 * optimizer-phase node updates the ones it reads in place: a node reading
 * one after that step, a recompute above all, reads the updated values
 * (mp_verify_plan rejects that; the recompute solvers never do it). */
uint32_t mp__persistent_root(const mp_graph *g, uint32_t x);
/* Computes bytes from dtype and dims; MP_ERR_SHAPE when unknown,
 * MP_ERR_OVERFLOW on overflow (message names the tensor). */
mp_status mp__tensor_bytes_from_shape(mp_ctx *ctx, const mp__tensor *t,
                                     uint64_t *bytes);

/* Largest integer constant whose value is carried for shape arithmetic. */
#define MP__VALUE_MAX 16384u

/* Replaces t's shape (keeps its value). rank -1: unknown. */
mp_status mp__tensor_set_shape(mp_ctx *ctx, mp__tensor *t, int32_t rank,
                              const int64_t *dims);
/* Stores a copy of n int64 values on t (n <= MP__VALUE_MAX; larger is
 * silently not stored). */
mp_status mp__tensor_set_value(mp_ctx *ctx, mp__tensor *t, const int64_t *v,
                              uint32_t n);
/* True when every dim is known (rank >= 0). */
bool mp__tensor_shape_known(const mp__tensor *t);
/* Integer or bool dtypes (values carried as int64). */
bool mp__dtype_is_int(int dtype);
/* float32/64, float16, bfloat16: values carried as the bits of doubles. */
bool mp__dtype_is_float(int dtype);
/* Element i of t's value as a double (t->value set, int or float dtype). */
double mp__value_double(const mp__tensor *t, uint32_t i);
/* x stored as a value of dtype dt (float: double bits, rounded to float32
 * for float32; int: truncated; false when out of the int64 range). */
bool mp__value_from_double(int dtype, double x, int64_t *out);

#endif /* MP__IR_H */
