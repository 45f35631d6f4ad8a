/* validate.h - the validation executor (docs/validation.md).
 *
 * Two halves:
 *  - host.c (plain C, always built, tested in CI without a GPU): lowers a
 *    graph and a schedule with its blocks into a program: which kernel
 *    runs each node (from the op registry's MP__OPF_KERNEL), the kernels'
 *    parameters (from shapes and attributes), where every tensor lives at
 *    every step (arena offset from the plan's blocks, or the weights
 *    buffer), the workspace each launch needs, and the initial values of
 *    weights and inputs. It also replays the reference run's allocation
 *    model (use counts counted at run time) on the host.
 *  - executor.cu + kernels.cu (CUDA, built with MEMPLAN_WITH_CUDA): runs the
 *    program on a GPU twice (planned arena; one allocation per tensor) and
 *    measures memory and time.
 *
 * Not installed; used by the memplan command and the tests. */
#ifndef MEMPLAN_VALIDATE_H
#define MEMPLAN_VALIDATE_H

#include "memplan/memplan.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPV_MAXR 8   /* highest rank the kernels index */
#define MPV_MAXIN 4  /* inputs of one n-ary pointwise launch */
#define MPV_TPB 256  /* threads per block of the kernels */
/* the workspace handed to cuBLAS (cublasSetWorkspace), so that it
 * allocates nothing of its own: 32 MiB, what PyTorch gives it on Hopper
 * (its caching allocator holds it from the first product on, and the
 * reference set's baselines count it); with 4 MiB cuBLAS's fp32 products
 * of the H200 run kernels without the split the larger one allows */
#define MPV_CUBLAS_WS_BYTES (32u << 20)

/* where a tensor lives at a step; SCRATCH: a value inside a fused chain
 * (no block), in one of two slots of the workspace after what the
 * launches use: the chain's nodes run one after another through them */
enum {
    MPV_SPACE_NONE = 0, MPV_SPACE_ARENA = 1, MPV_SPACE_WEIGHTS = 2,
    MPV_SPACE_SCRATCH = 3
};
typedef struct mpv_ref {
    uint32_t space;
    uint32_t tensor;    /* the storage root */
    uint64_t offset;    /* bytes from the start of the space (view_off in) */
    uint64_t bytes;     /* the bytes it reads or writes there: the tensor's,
                           a broadcast view's the viewed tensor's */
    uint64_t view_off;  /* bytes from the root's start (a range view) */
} mpv_ref;

/* launch kinds: the primitives nodes are lowered into */
enum {
    MPV_L_SYNTH = 0,  /* reads every input byte, writes every output byte */
    MPV_L_COPY,       /* strided copy (Transpose, Slice, Concat, Split, ...) */
    MPV_L_FILL,       /* fill the output with a float or zero bytes */
    MPV_L_UNARY,
    MPV_L_NARY,       /* broadcasting pointwise op over 1..MPV_MAXIN inputs */
    MPV_L_GEMM,       /* cuBLAS sgemm (strided batched), row-major terms */
    MPV_L_CONV,       /* im2col into the workspace + cuBLAS per image */
    MPV_L_POOL,
    MPV_L_GPOOL,
    MPV_L_BN,
    MPV_L_LN,
    MPV_L_LRN,
    MPV_L_SOFTMAX,
    MPV_L_REDUCE,
    MPV_L_GATHER,
    MPV_L_RESIZE,
    MPV_L_CAST,
    MPV_L_SHAPE,
    MPV_L_ATTENTION,  /* fused attention, flash-style (online softmax) */
    MPV_L_SUM_ALL,    /* the sum of a whole input into a scalar output */
    MPV_L_GRAD_PW,    /* a pointwise gradient summed to an operand's shape */
    MPV_L_SOFTMAX_GRAD, /* Softmax / LogSoftmax backward from the output */
    MPV_L_AXPY,       /* in place: input in[0] += alpha * input in[1] */
    MPV_L_CONV_DNN,   /* a convolution pass over the whole batch: cuDNN
                         (conv.cu), or its direct kernel */
    /* normalization and pooling in training (the p.bnt, bngrad, lngrad,
     * pgrad parameters below) */
    MPV_L_BN_TRAIN,   /* BatchNormalization writing its statistics */
    MPV_L_BN_GRAD,    /* BatchNormalization backward */
    MPV_L_LN_GRAD,    /* LayerNormalization backward */
    MPV_L_POOL_GRAD,  /* Max/Average/GlobalAveragePool backward */
    MPV_L_OPT_STEP,   /* in place: a momentum or Adam/AdamW step */
    MPV_L_ATTN_BWD_Q, /* attention backward: per query row (D, dQ) */
    MPV_L_ATTN_BWD_KV, /* attention backward: per key row (dK^T, dV) */
    MPV_L_ATTN_BWD_MASK, /* attention backward: the float mask's gradient */
    MPV_L_ATTN_BWD_SCALARS, /* attention backward: the scalars' gradients */
    MPV_L_GATHER_GRAD, /* Gather's data gradient: added at the indices */
    MPV_L_COLL,       /* an NCCL call (validate --ranks; validate/nccl.c):
                         p.coll */
    /* serving (PagedAttention, Sort, Sample; planner/serve.c) */
    MPV_L_KV_WRITE,   /* new tokens' K and V into the cache: p.paged */
    MPV_L_PAGED_ATTN, /* causal attention over the cache: p.paged */
    MPV_L_SORT,       /* rows sorted descending with indices: p.sort */
    MPV_L_SAMPLE,     /* greedy: each row's first largest index: p.sort */
    MPV_L_COUNT_
};
/* extra unary op: y = alpha * x (Mean) */
#define MPV_UOP_SCALE 200
/* extra n-ary op of MPV_L_NARY: Where, in[0] the condition (bool bytes),
 * in[1] where true, in[2] where false */
#define MPV_NOP_WHERE 229
/* binary op of MPV_L_GRAD_PW (beside MP__KOP_*): x where y > 0, else 0
 * (ReLU's gradient from its output) */
#define MPV_BOP_RELU_GRAD 201
/* more derivative ops of MPV_L_GRAD_PW: v = op(v, s), v the output
 * gradient so far, s a saved operand (y: the forward output, x: its
 * input), a and b the launch's pa and pb */
enum {
    MPV_BOP_SIGMOID_GRAD = 230, /* v s (1 - s), y */
    MPV_BOP_TANH_GRAD,          /* v (1 - s^2), y */
    MPV_BOP_SQRT_GRAD,          /* v 0.5 / s, y */
    MPV_BOP_RECIPROCAL_GRAD,    /* -v s^2, y */
    MPV_BOP_ERF_GRAD,           /* v 2/sqrt(pi) exp(-s^2), x */
    MPV_BOP_GELU_GRAD,          /* Gelu's derivative at x (a: tanh form) */
    MPV_BOP_ABS_GRAD,           /* v sign(s), x */
    MPV_BOP_CLIP_GRAD,          /* v where a <= s <= b, else 0; x */
    MPV_BOP_HARDSIGMOID_GRAD,   /* v a where 0 < a s + b < 1, else 0; x */
    MPV_BOP_HARDSWISH_GRAD,     /* 0, v (s / 3 + 0.5), v by s < -3,
                                 * <= 3, > 3; x */
    MPV_BOP_LEAKYRELU_GRAD,     /* v where s > 0, else a v; x */
    MPV_BOP_ELU_GRAD,           /* v where s > 0, else a v exp(s); x */
    MPV_BOP_SOFTPLUS_GRAD,      /* v / (1 + exp(-s)), x */
    MPV_BOP_SIN_GRAD,           /* v cos(s), x */
    MPV_BOP_COS_GRAD,           /* -v sin(s), x */
    /* two operands, s and the next one t (which the op consumes):
     * Pow's base gradient v t s^(t - 1) (0 where t = 0), s the base, t
     * the exponent; its exponent gradient v s log(t) (0 where t = 0), s
     * the output, t the base */
    MPV_BOP_POW_GRAD,
    MPV_BOP_POW_EXP_GRAD,
    MPV_BOP_WHERE_T,            /* v where s, else 0: s a bool byte */
    MPV_BOP_WHERE_F             /* 0 where s, else v: s a bool byte */
};

typedef struct mpv_strided {       /* element counts */
    int32_t rank, esize;
    int64_t n;
    int64_t dims[MPV_MAXR];
    int64_t ist[MPV_MAXR], ost[MPV_MAXR];
    int64_t ioff, ooff;
} mpv_strided;

typedef struct mpv_launch {
    int32_t kind;
    int32_t in[MPV_MAXIN];  /* node input slots (-1: none) */
    int32_t out;            /* node output slot (-1: none) */
    uint64_t workspace;     /* bytes of workspace this launch needs */
    /* which float operands are bfloat16 (else float32): bit k node
     * input slot k, bit 32 + k output slot k (slots below 32); set by
     * the lowering from the node's tensors, read by the kernels that
     * take either (host.c bf16_kind); slots past these: bit j of
     * bf16_hi for in[j], bit MPV_MAXIN for out */
    uint64_t bf16;
    uint32_t bf16_hi;
    union {
        mpv_strided copy;
        /* zero_bytes > 0: every byte set to zero_bytes - 1 */
        struct { int64_t n; double value; int32_t zero_bytes; } fill;
        struct { int64_t n; int32_t op; double alpha, beta; } unary;
        struct {
            int32_t op, n_in, rank;
            int64_t n;
            int64_t dims[MPV_MAXR];
            int64_t st[MPV_MAXIN][MPV_MAXR];
        } nary;
        struct {
            int32_t ta, tb;
            int64_t m, n, k, lda, ldb, ldc, batch, sa, sb, sc;
            double alpha, beta;
            /* outer batch dims (a permuted operand's batch axes that one
             * stride cannot walk): orank dims, the operands' strides;
             * one strided-batched product per outer index */
            int32_t orank;
            int64_t odims[MPV_MAXR], osa[MPV_MAXR], osb[MPV_MAXR],
                osc[MPV_MAXR];
        } gemm;
        struct {
            int64_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, g;
            int32_t has_bias, direct;  /* direct: 1x1, stride 1, no pad */
        } conv;
        /* MPV_L_CONV_DNN: x [n, c, h, w], w [m, c/g, kh, kw], y [n, m,
         * oh, ow] (float32, contiguous); pass MPV_CONV_FWD: in[0] x,
         * in[1] w, in[2] the bias [m] (has_bias) -> y; MPV_CONV_BWD_DATA:
         * in[0] dy, in[1] w -> dx; MPV_CONV_BWD_FILTER: in[0] dy, in[1] x
         * -> dw. cudnn 1: cuDNN, the fastest algorithm whose workspace is
         * at most the launch's (the cost model's, mp__conv_workspace);
         * 0 (pads cuDNN cannot express: bottom/right unlike top/left):
         * the direct kernel of conv.cu, no workspace */
        struct {
            int64_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, g;
            int32_t pass, has_bias, cudnn;
            /* bytes at the workspace's start (before cuDNN's) where a
             * bfloat16 pass writes its result when the output is float32
             * (an autocast weight's gradient), converted after; 0: none */
            int64_t stage;
        } dnn;
        /* idx_out (-1: none): MaxPool's int64 indices output (ONNX's
         * Indices: flat into the input, row-major; the first maximum) */
        struct {
            int64_t nc, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
            int32_t op, count_pad, idx_out;
        } pool;
        struct { int64_t nc, hw; int32_t op; } gpool;
        struct { int64_t n, c, hw; double eps; } bn;
        /* mean_out, inv_out (-1: none): ONNX's Mean and InvStdDev
         * outputs (rows floats each); stats_out (-1: none): the training
         * statistics [2, rows], the mean then 1 / sqrt(var + eps) */
        /* rms: RMSNormalization (no mean subtracted, no bias) */
        struct {
            int64_t rows, cols;
            double eps;
            int32_t has_bias, mean_out, inv_out, stats_out, rms;
        } ln;
        struct { int64_t n, c, hw, size; double alpha, beta, bias; } lrn;
        struct { int64_t outer, dim, inner; int32_t log; } softmax;
        struct {
            int32_t op, rank;
            int64_t n, dims[MPV_MAXR];
            int32_t red[MPV_MAXR];
        } reduce;
        struct { int64_t outer, axis, inner, nidx; int32_t esize, iesize; } gather;
        struct {
            int64_t nc, h, w, oh, ow;
            double sh, sw;     /* output / input scale */
            int32_t linear, coord, nearest;
        } resize;
        struct { int64_t n; int32_t from, to; } cast;
        /* MPV_L_SUM_ALL: out[0] = sum of n floats of in[0], plus out[0]
         * when accumulate */
        struct { int64_t n; int32_t accumulate; } sum_all;
        /* MPV_L_GRAD_PW: over the index space dims (rank; the forward
         * output's), v = in[0], then v = ops[k](v, in[k]) for k = 1 ..
         * n_in - 1 (inputs broadcast by st, element strides), summed over
         * the dims with red set, times alpha: out is contiguous over the
         * other dims (n elements, m terms each). Many terms (m >= 64):
         * blocks of `lanes` output elements side by side and
         * MPV_TPB / lanes rows of terms, the terms in `parts` chunks of
         * `chunk` (grid parts high); parts > 1: the chunks' sums go to
         * the workspace, [parts][n], and a second kernel adds them in
         * order (deterministic) */
        struct {
            int32_t n_in, rank;
            int32_t ops[MPV_MAXIN];
            int32_t lanes, parts;
            int64_t chunk;
            int64_t n, m;
            int64_t dims[MPV_MAXR];
            int32_t red[MPV_MAXR];
            int64_t st[MPV_MAXIN][MPV_MAXR];
            double alpha;
            double pa, pb;  /* the derivative ops' a and b (MPV_BOP_*) */
        } gpw;
        /* MPV_L_SOFTMAX_GRAD: in[0] the output gradient, in[1] the
         * forward output, rows as softmax's (outer x inner rows of dim);
         * Softmax: dx = y (dy - sum(dy y)); LogSoftmax: dx = dy - exp(y)
         * sum(dy) */
        struct { int64_t outer, dim, inner; int32_t log; } smgrad;
        /* MPV_L_GATHER_GRAD uses gather: in[0] the output gradient
         * [outer, nidx, inner] (float32), in[1] the indices; each is
         * added to out [outer, axis, inner] at its index (wrapped as
         * the forward does), out zeroed before; one thread per (outer,
         * inner) walks the indices in order (deterministic) */
        /* MPV_L_AXPY: n floats */
        struct { int64_t n; double alpha; } axpy;
        struct { int64_t n; int64_t v[MPV_MAXR]; } shape;
        /* MPV_L_BN_TRAIN: node inputs x, scale, bias, running mean and
         * var (slots 0-4); output 0 y. training: the batch's mean and
         * biased variance over n x hw per channel normalize; the running
         * mean and var (outputs rm_out, rv_out, -1: none) become
         * momentum r + (1 - momentum) s, s the batch mean and the
         * unbiased variance. Else (inference) the running statistics
         * normalize (|var|, as MPV_L_BN). stats_out (-1: none): [2, c],
         * the mean and 1 / sqrt(var + eps) that normalized. */
        struct {
            int64_t n, c, hw;
            double eps, momentum;
            int32_t training, rm_out, rv_out, stats_out;
        } bnt;
        /* MPV_L_BN_GRAD: in[0] the output gradient; node input slots x,
         * scale and stats ([2, c] as MPV_L_BN_TRAIN writes; -1: not saved,
         * recomputed from x, or from the running mean and var (slots rm,
         * rv) in inference); output slots (-1: not wanted) of the
         * gradients of x, scale, bias, running mean and var */
        struct {
            int64_t n, c, hw;
            double eps;
            int32_t training;
            int32_t x, scale, stats, rm, rv;
            int32_t dx, dscale, dbias, drm, drv;
        } bngrad;
        /* MPV_L_LN_GRAD: rows x cols (the normalized dims); in[0] the
         * output gradient; node input slots x, scale, stats ([2, rows]:
         * mean, 1 / sqrt(var + eps); -1: recomputed from x into the
         * workspace's first 2 rows floats); output slots of the gradients
         * of x, scale, bias (-1: not wanted). The scale's and bias's sums
         * over the rows: parts chunks of chunk rows, each part's two sums
         * per column in the workspace (after the statistics) when parts
         * > 1, then added in order */
        struct {
            int64_t rows, cols, chunk;
            double eps;
            int32_t x, scale, stats;
            int32_t dx, dscale, dbias, parts;
        } lngrad;
        /* MPV_L_POOL_GRAD: the forward window (as p.pool) and op; in[0]
         * the output gradient [nc, oh, ow], out the input's gradient
         * [nc, h, w]; MaxPool: the argmax of each window from node input
         * slot idx (int64 flat indices into the input, as ONNX's
         * Indices), else recomputed from node input slot x (the first
         * maximum, as PyTorch) */
        struct {
            int64_t nc, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
            int32_t op, count_pad, x, idx;
        } pgrad;
        /* MPV_L_OPT_STEP (torch.optim's update, one step): in[0] the
         * weight, in[1] its gradient, in[2] the momentum buffer or Adam's
         * m, in[3] Adam's v, all n floats, updated in place; out (-1:
         * none) Adam's per-parameter temporary, written with the
         * denominator sqrt(v / (1 - beta2^step)) + eps */
        struct {
            int32_t op;    /* MP__KOP_OPT_MOMENTUM, _ADAM, _ADAMW */
            int64_t n, step;
            double lr, momentum, beta1, beta2, eps, weight_decay;
            /* element offsets of the weight, the gradient and the states
             * (and the temporary) where the n updated elements start: a
             * rank graph's step on its slice of a bucket or its shard */
            int64_t woff, goff, soff;
        } opt;
        /* MPV_L_COLL: one NCCL call (validate/nccl.c). The send buffer is
         * input slot in[0] + soff elements; the receive buffer output slot
         * out + doff, or (out -1) input slot in[1] + doff (in place: the
         * regather of a weight's shards). count elements of esize bytes
         * (dtype: the tensor's, for the reductions). peer: the root of a
         * reduce or broadcast (its index in the group), the other rank of
         * a send or receive (-1: not linked, the call does nothing; a
         * Recv's buffer is filled first). group: MPV_COLL_WORLD (every
         * rank), MPV_COLL_DP (the data-parallel ranks of this stage and
         * tensor-parallel index) or MPV_COLL_TP (the tensor-parallel
         * ranks of this stage and data-parallel index). A reduce-scatter
         * or all-gather (tp) moves count elements per rank: the send
         * buffer holds tp x count of a reduce-scatter, the receive
         * buffer tp x count of an all-gather. The launches of one node
         * are issued in one NCCL group. */
        struct {
            int32_t op, dtype, esize, peer, group;
            int64_t count, soff, doff;
        } coll;
        /* MPV_L_KV_WRITE, MPV_L_PAGED_ATTN (a PagedAttention node): node
         * input slots q 0 [rows, heads x d], k 1 and v 2 [rows, kv_heads
         * x d], the K and V caches 3 and 4, the block table 5 (int32
         * [seqs, max_blocks]; paged 0: none). Paged, the caches are
         * [num_blocks, block_size, kv_heads, d] and token t of sequence
         * s is in slot table[s][t / block_size] x block_size + t %
         * block_size; contiguous, they are [seqs, max_len, kv_heads, d]
         * and it is in slot s x max_len + t. Row r (rows = seqs x qlen)
         * is token past + r % qlen of sequence r / qlen. KV_WRITE copies
         * each row's K and V into its slot; PAGED_ATTN attends each row
         * and query head h (kv head h / (heads / kv_heads)) over tokens
         * 0 .. its own (causal), scores times scale, into output 0 */
        struct {
            int64_t rows, seqs, qlen, past, heads, kv_heads, d;
            int64_t block_size, max_blocks, num_blocks, max_len;
            int32_t paged;
            double scale;
        } paged;
        /* MPV_L_SORT: rows of n float32 (in[0]) into values (output 0)
         * and int64 indices (output slot idx_out), each row descending,
         * equal values by index (a total order: NaN above +inf).
         * MPV_L_SAMPLE: the int64 index of each row's first largest
         * value (greedy sampling) into output 0 [rows] */
        struct { int64_t rows, n; int32_t idx_out; } sort;
        /* ScaledDotProductAttention (docs/attention.md): Q [bh, tq, d],
         * K^T [bh, d, tk], V [bh, tk, dv] -> [bh, tq, dv]; the mask
         * (slot 3, float or bool) broadcast by mst over the dims it is
         * added at (lead..., tq, tk; rank dims): the scores', or the
         * node's mask_dims, whose leading dims regroup the scores' (a
         * row's bh index is walked through lead); the scalars are node
         * inputs 4-7 */
        struct {
            int64_t bh, tq, tk, d, dv;
            int32_t rank, mask_kind, mask_esize, scale_div, mask_first,
                nan_to_zero;
            int32_t lse;  /* 1: output 1 gets the log-sum-exp per row
                             (training: the saved statistics) */
            int32_t qrank;    /* rank of Q, K^T and V */
            int64_t lead[MPV_MAXR], mst[MPV_MAXR];
            /* Q's leading dims (qrank - 2 of them) and the element
             * strides of Q [lead..., tq, d], K^T [lead..., d, tk] and
             * V [lead..., tk, dv] in their storage: transposed and
             * permuted views (the heads' permutes) are read in place */
            int64_t qlead[MPV_MAXR], qst[MPV_MAXR], kst[MPV_MAXR],
                vst[MPV_MAXR];
            /* the backward (MPV_L_ATTN_BWD_*; node slots, -1: none):
             * the forward's inputs by position (Q, K^T, V, mask, the
             * scalars), its output, the output gradient, the log-sum-exp;
             * the gradients: dQ, dK^T, dV (row-major, the operands'
             * shapes), the mask's (its own shape, row-major), and per
             * output slot of a scalar (sgrad, up to 4) which scalar
             * positions (bit k: input 4 + k) it sums; the workspace
             * output (bh * tq rows: D, then the rows' partial sums of
             * the scalars' gradients, 3 more rows) */
            int32_t b_in[8], b_o, b_do, b_lse, b_dq, b_dk, b_dv, b_dm,
                b_ws;
            int32_t b_sg[4], b_sgpos[4];
        } attn;
    } p;
} mpv_launch;

/* coordinate transformation (Resize) */
enum { MPV_CT_HALF_PIXEL = 0, MPV_CT_ASYMMETRIC, MPV_CT_ALIGN_CORNERS,
       MPV_CT_PYTORCH_HALF_PIXEL, MPV_CT_TF_HALF_PIXEL };
/* nearest mode */
enum { MPV_NM_ROUND_PREFER_FLOOR = 0, MPV_NM_ROUND_PREFER_CEIL, MPV_NM_FLOOR,
       MPV_NM_CEIL };

/* the passes of MPV_L_CONV_DNN (the cost model's MP__CONV_*) */
enum { MPV_CONV_FWD = 0, MPV_CONV_BWD_DATA = 1, MPV_CONV_BWD_FILTER = 2 };

/* MPV_L_COLL's calls: the reductions of the data-parallel group average
 * (ncclAvg: DDP's gradient average), the tensor-parallel group's sum
 * (ncclSum: the partial sums of a row-parallel layer) */
enum {
    MPV_COLL_ALL_REDUCE = 0, /* in place on the receive buffer */
    MPV_COLL_REDUCE,         /* send -> receive at the root */
    MPV_COLL_BCAST,          /* root's send -> everyone's receive */
    MPV_COLL_SEND,
    MPV_COLL_RECV,
    MPV_COLL_REDUCE_SCATTER, /* send (tp x count) -> receive (count) */
    MPV_COLL_ALL_GATHER,     /* send (count) -> receive (tp x count) */
    MPV_COLL_N_OPS
};
enum { MPV_COLL_WORLD = 0, MPV_COLL_DP = 1, MPV_COLL_TP = 2 };

/* How a rank graph (planner/parallel.c) is lowered: its rank, its stage,
 * data-parallel and tensor-parallel index (ranks numbered as Megatron-
 * LM's: rank = (stage x dp + dp_index) x tp + tp_index; tp 0 reads as
 * 1), and whether the collectives are NCCL calls (validate --ranks) or
 * local operations on the same buffers (validate --rank). */
typedef struct mpv_rank_lowering {
    int nccl;
    uint32_t rank, n_ranks, dp, pp, stage, dp_index;
    uint32_t tp, tp_index;
} mpv_rank_lowering;

/* one node's lowering */
typedef struct mpv_node {
    uint32_t first, count;  /* launches */
    int32_t run;            /* 0: nothing to do (view, folded constant) */
    int32_t synthetic;      /* 1: lowered to MPV_L_SYNTH */
    int32_t setup;          /* 1: a folded constant's node, run once after
                             * the weights are uploaded (prog->setup) */
    const char *why;        /* static reason when synthetic (or a folded
                             * node left out of the setup), else NULL */
} mpv_node;

typedef struct mpv_step {
    uint32_t kind;          /* mp_step_kind */
    uint32_t index;
    uint32_t refs;          /* first ref in prog->refs: node inputs then
                             * outputs (COMPUTE/RECOMPUTE), or the one
                             * tensor (OFFLOAD/PREFETCH/FREE) */
    uint32_t n_refs;
} mpv_step;

typedef struct mpv_program {
    mp_ctx *ctx;
    const mp_graph *graph;
    uint32_t n_steps;
    mpv_step *steps;
    mpv_ref *refs;
    uint32_t n_refs;
    mpv_node *nodes;        /* per graph node */
    mpv_launch *launches;
    uint32_t n_launches;
    uint64_t arena_bytes;   /* highest block end */
    uint64_t weights_bytes; /* weights buffer, roots 256-aligned */
    uint64_t *woff;         /* per tensor: offset in weights (UINT64_MAX) */
    uint64_t workspace_bytes; /* max over launches, + 256 for SYNTH, then
                                 two slots of the largest fused value */
    uint32_t n_fused_refs;  /* refs to fused values (SCRATCH) */
    uint64_t alignment;
    uint32_t n_synthetic;   /* nodes that run the synthetic kernel */
    uint32_t n_real;        /* nodes with real kernels */
    /* of those, backward and optimizer nodes (a training step) */
    uint32_t n_bwd_real, n_bwd_synthetic, n_opt_real, n_opt_synthetic;
    uint32_t n_offload, n_prefetch, n_recompute;
    uint32_t *outputs;      /* graph output roots to compare */
    uint64_t *out_offs;     /* their arena offsets at the end */
    uint32_t n_outputs;
    uint32_t *inputs;       /* arena roots resident from step 0 (inputs) */
    uint64_t *in_offs;      /* their arena offsets */
    uint32_t n_inputs;
    int compute_only;       /* only COMPUTE and FREE steps */
    /* folded constants whose values the graph does not know (a weight
     * transposed, an attention mask built from shapes), computed on the
     * device once the weights buffer is uploaded, as ONNX Runtime folds
     * constants at session start: nodes in topological order, as COMPUTE
     * steps whose refs are all in the weights buffer */
    mpv_step *setup;
    uint32_t n_setup;
    uint32_t n_setup_left;  /* folded nodes left with their initial fill:
                             * no real kernel, or more workspace */
    mpv_rank_lowering rank; /* a rank graph's (all 0: none) */
    uint32_t n_coll;        /* MPV_L_COLL launches */
} mpv_program;

/* Lowers graph + schedule + blocks (offsets set) into a program. fused
 * (per tensor, NULL: none): the tensors marked fused (mp_plan_tensor_
 * fused); an instance of one without a block lives in a scratch slot. */
mp_status mpv_program_build(const mp_graph *g, const mp_step *steps,
                            uint32_t n_steps, const mp_block *blocks,
                            uint32_t n_blocks, uint64_t alignment,
                            const uint8_t *fused, mpv_program **out);
mp_status mpv_program_from_plan(const mp_graph *g, const mp_plan *p,
                                mpv_program **out);
/* As mpv_program_from_plan, for rank graph g as rank rl runs it (rl
 * NULL: as mpv_program_from_plan: data-parallel index 0, local
 * collectives). */
mp_status mpv_program_from_plan_rank(const mp_graph *g, const mp_plan *p,
                                     const mpv_rank_lowering *rl,
                                     mpv_program **out);
void mpv_program_destroy(mpv_program *p);

/* The point-to-point calls of the ranks' programs (progs[r]: rank r's,
 * lowered with nccl set) linked: a Send of "X#mbJ" (a stage holding one
 * micro-batch names it "X": J = 1) on rank (s, i, t) (stage,
 * data-parallel and tensor-parallel index) and the Recv of the same name
 * on rank (s', i, t), s' != s, get each other as peers; a Send or
 * Recv without a partner stays local (a stage keeps fewer micro-batches
 * in flight than its neighbour under 1F1B). Then the schedules are
 * replayed with blocking calls (a send waits for its receive, a
 * collective for every rank of its group, data-parallel or tensor-
 * parallel, at a collective of the same name): MP_ERR_VERIFY when they would
 * deadlock, naming each rank's waiting node. *n_linked: the pairs. */
mp_status mpv_ranks_link(mpv_program *const *progs, uint32_t n,
                         uint32_t *n_linked);

/* Fills buf (prog->weights_bytes) with the initial weights: known constant
 * values where the graph holds them, else deterministic random values of
 * each dtype (seed). */
void mpv_weights_init(const mpv_program *p, void *buf, uint64_t seed);
/* Bytes and initial value of a graph input (root) at step 0. */
void mpv_input_init(const mpv_program *p, uint32_t tensor, void *buf,
                    uint64_t seed);

/* The reference run's allocation model, replayed on the host: every arena
 * root allocated when produced (inputs at the start), freed when its use
 * count (distinct consumer nodes of it and of its views, counted here)
 * reaches zero; outputs never. live[i] (n_steps entries, may be NULL) is
 * the bytes (aligned) live while step i runs; returns the maximum.
 * Only COMPUTE steps allocate; other steps carry the previous value. */
uint64_t mpv_reference_live(const mpv_program *p, uint64_t *live);

/* Predicted seconds of the schedule on device d, from the cost model
 * (mp_node_estimate): COMPUTE and RECOMPUTE of a node that runs cost its
 * estimate, OFFLOAD/PREFETCH the host-link transfer of the tensor (the
 * executor's compute stream waits for each copy), FREE nothing. step_s
 * (n_steps entries, may be NULL) gets each step's. -1 on error. */
double mpv_predict_seconds(const mpv_program *p, const mp_device *d,
                           double *step_s);

/* A parameter's gradient as its optimizer step reads it: at COMPUTE step
 * `step` (an optimizer node: input 0 the parameter in the weights buffer,
 * input 1 its gradient), the gradient is the node's input ref 1 (whole,
 * `bytes`). */
typedef struct mpv_grad {
    uint32_t step, weight, grad;
    uint64_t bytes;
} mpv_grad;

/* Writes DIR/values.txt and DIR/values.bin, the values a run used and
 * produced, for a comparison outside (validate/ort_compare.py). One line
 * per tensor, tab-separated: kind (weight: the weights buffer's tensors,
 * folded constants included; input; output: a graph output by its own
 * name), name, dtype name, dims (comma-separated), byte offset in
 * values.bin, bytes. weights: the weights buffer; inputs: per p->inputs;
 * outs: the roots of p->outputs one after another; weights_after (NULL:
 * none): the weights buffer after the run (a training step's optimizer
 * updates weights in place), each weight again as kind weight_after.
 * grads (n_grads of mpv_grads_find, NULL: none): each parameter's
 * gradient as its optimizer step read it, as kind grad under the
 * parameter's name (the gradient tensor's dtype and dims); grad_values
 * holds their bytes one after another. */
mp_status mpv_dump_values(const mpv_program *p, const char *dir,
                          const void *weights, const void *const *inputs,
                          const void *outs, const void *weights_after,
                          const mpv_grad *grads, uint32_t n_grads,
                          const void *grad_values);

/* ---- values from files and a training step's gradients (values.c) ------
 * The folder format of mpv_dump_values read back: DIR/values.txt (kind,
 * name, dtype, dims, offset, bytes) and DIR/values.bin. */

/* Fills buf (prog->weights_bytes) from DIR's lines of kind "weight", by
 * tensor name; dtype and bytes must be the tensor's. A tensor that DIR
 * does not hold keeps its known value (a small constant of the graph; the
 * rest as mpv_weights_init with seed), an optimizer state is zero; any
 * other is MP_ERR_NOT_FOUND naming the tensor and the file (a wrong dtype
 * or size: MP_ERR_SHAPE). buf NULL: only checks. */
mp_status mpv_weights_read(const mpv_program *p, const char *dir, void *buf,
                           uint64_t seed);
/* Fills bufs[i] (the bytes of graph input p->inputs[i]) from DIR's lines
 * of kind "input", by name; every input must be there, of its dtype and
 * bytes. bufs NULL: only checks. */
mp_status mpv_inputs_read(const mpv_program *p, const char *dir,
                          void *const *bufs);

/* The optimizer steps' gradients (mpv_grad, above) in step order into
 * out (NULL: only counted); returns their number. */
uint32_t mpv_grads_find(const mpv_program *p, mpv_grad *out);

/* ---- NCCL, loaded at run time (nccl.c; validate --ranks) ---------------- */
#define MPV_NCCL_ID_BYTES 128  /* ncclUniqueId */
typedef struct mpv_nccl mpv_nccl;
/* Loads NCCL: $MEMPLAN_NCCL (the file or its folder), then the loader's
 * path; NULL with why (where it looked, how to point at it). */
mpv_nccl *mpv_nccl_load(char *why, size_t cap);
/* The file loaded and NCCL's version code (e.g. 22805). */
const char *mpv_nccl_path(const mpv_nccl *n, int *version);
/* ncclGetUniqueId into id (MPV_NCCL_ID_BYTES); 0 or -1 with why. */
int mpv_nccl_unique_id(mpv_nccl *n, void *id, char *why, size_t cap);
/* The communicators of rank rl (every rank's; the data-parallel group's,
 * split from it by stage and tensor-parallel index when pp or tp > 1;
 * the tensor-parallel group's, split by stage and data-parallel index,
 * when tp > 1): on the current CUDA device. 0 or -1 with why. */
int mpv_nccl_init(mpv_nccl *n, const void *id, const mpv_rank_lowering *rl,
                  char *why, size_t cap);
/* ncclGroupStart (start 1) or ncclGroupEnd; NULL or NCCL's error. */
const char *mpv_nccl_group(mpv_nccl *n, int start);
/* One MPV_L_COLL launch on stream (a cudaStream_t): send and recv the
 * buffers at the launch's offsets. NULL or the error. */
const char *mpv_nccl_call(mpv_nccl *n, const mpv_launch *l, const void *send,
                          void *recv, void *stream);
/* NCCL's ncclDataType_t of a memplan dtype (-1: none). */
int mpv_nccl_dtype(int mp_dtype);
void mpv_nccl_destroy(mpv_nccl *n);

/* ---- the CUDA half (executor.cu) ------------------------------------------ */
typedef struct mpv_options {
    uint64_t seed;
    int reference;          /* run the reference (one allocation a tensor) */
    int sample_memory;      /* cudaMemGetInfo after every step */
    int poison_free;        /* fill freed blocks with 0xff (planned run) */
    int conv_fp32;          /* convolutions on cuDNN with FMA arithmetic
                               only (default: TF32 tensor cores allowed) */
    int step_times;         /* at the end, one more planned run timing each
                               step with events alone (no memory samples):
                               mpv_result's steps come from it */
    const char *dump_dir;   /* mpv_dump_values of the planned run (NULL) */
    const char *weights_dir; /* mpv_weights_read (NULL: mpv_weights_init) */
    const char *inputs_dir;  /* mpv_inputs_read (NULL: mpv_input_init) */
    /* validate --ranks: NCCL loaded, and the id of the ranks' clique; the
     * communicators are made after cuBLAS's handle (their memory is
     * mpv_result's nccl_bytes) and the MPV_L_COLL launches call NCCL */
    mpv_nccl *nccl;
    const void *nccl_id;
    int keep_weights;        /* mpv_result's weights_after */
    int keep_outputs;        /* mpv_result's outputs */
} mpv_options;
void mpv_options_init(mpv_options *o);

typedef struct mpv_step_time {
    float ms;               /* planned run, CUDA events */
} mpv_step_time;

typedef struct mpv_result {
    char device[128];
    uint64_t granularity;      /* driver allocation granularity */
    uint64_t total_mem;
    uint64_t ctx_bytes;        /* used after context creation */
    uint64_t cublas_bytes;     /* cublasCreate */
    uint64_t nccl_bytes;       /* the NCCL communicators (validate --ranks) */
    uint64_t cudnn_bytes;      /* cudnnCreate and what the algorithm
                                * choice kept (programs with convolution
                                * passes), apart like cuBLAS's */
    /* convolution passes (MPV_L_CONV_DNN launches): on cuDNN (of them,
     * on the heuristics' first deterministic FMA choice), on the direct
     * kernel; the most workspace a first choice wanted beyond the
     * launch's (0: none did), the most a chosen algorithm uses */
    uint32_t conv_cudnn, conv_first, conv_direct;
    int conv_fp32;             /* FMA only (--conv-math fp32), else TF32 */
    uint64_t conv_first_ws_max, conv_ws_used_max;
    uint64_t weights_measured, workspace_measured, arena_measured,
        staging_host_bytes;
    uint64_t lazy_bytes;       /* allocated by the libraries during the
                                * first (warm-up) run */
    uint64_t run_extra_bytes;  /* growth during the measured runs */
    uint64_t arena_device_bytes; /* the arena asked of the driver: the
                                  * planned arena rounded up to granularity */
    uint64_t peak_measured;    /* max used during the planned run minus the
                                * used before weights/workspace/arena */
    uint64_t ref_pool_high;    /* reference: pool used-memory high-water */
    uint64_t ref_pool_reserved_high;
    uint64_t ref_live_max;     /* reference: executor-summed live bytes */
    double planned_ms, reference_ms;  /* total, one pass, events */
    double planned_graph_ms;   /* the planned run as one CUDA graph,
                                * replayed (0: not captured: graph_note) */
    char graph_note[160];
    double steps_ms_sum;
    int steps_events_only;     /* steps timed by events alone (step_times) */
    mpv_step_time *steps;      /* n_steps entries (malloc; mpv_result_free) */
    uint32_t n_steps;
    int outputs_identical;     /* planned vs reference, bytes */
    int planned_repeatable;    /* two planned runs give the same bytes */
    uint64_t output_bytes;
    double max_abs_output;     /* of float outputs (sanity) */
    uint64_t outputs_hash;     /* FNV-1a of the planned run's outputs */
    double first_output;       /* its first float32 output's first element
                                * (a training graph's loss) */
    unsigned char *weights_after; /* keep_weights: the weights buffer after
                                   * one planned run (malloc) */
    uint64_t weights_hash;     /* mpv_weights_hash of weights_after (the
                                * caller's) */
    unsigned char *outputs;    /* keep_outputs: the planned run's outputs,
                                * the roots of p->outputs one after another
                                * (output_bytes; malloc) */
    int nonfinite_outputs;
    char error[256];
} mpv_result;
void mpv_result_free(mpv_result *r);

/* FNV-1a of n bytes at p, continuing from h (MPV_FNV_BASIS to start):
 * the executor's output and trace hashes and mpv_weights_hash. */
#define MPV_FNV_BASIS 1469598103934665603ull
uint64_t mpv_fnv1a(uint64_t h, const void *p, uint64_t n);
/* The weights (tensors of kind weight) in buf, a weights buffer, hashed
 * by name and bytes, independent of their order and offsets: equal for
 * two programs whose graphs hold the same weights with the same values
 * (a data-parallel rank's and the unsplit graph's). 0 when buf is NULL. */
uint64_t mpv_weights_hash(const mpv_program *p, const void *buf);
/* The CUDA devices this process sees (-1: CUDA fails). */
int mpv_cuda_device_count(void);
/* 1 when a CUDA device can be used (0 with the reason in why). */
int mpv_cuda_device_ok(char *why, size_t cap);
/* Runs the program; 0 on success, else -1 with r->error set. */
int mpv_execute(const mpv_program *p, const mpv_options *o, mpv_result *r);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_VALIDATE_H */
