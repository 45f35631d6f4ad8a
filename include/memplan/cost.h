/*
 * memplan/cost.h - the cost model (docs/cost-model.md): device profiles
 * (builtin or JSON), peak FLOP/s per dtype, host-link transfer times, and
 * the estimated cost of one node from the op registry. The offload and
 * recompute planners (memplan/offload.h, memplan/remat.h) time their
 * schedules with it.
 */
#ifndef MEMPLAN_COST_H
#define MEMPLAN_COST_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device profiles ---------------------------------------------------- */
/* Calibrated figures of a device: what the validation executor's kernels
 * reach on it, by kernel class, as `memplan calibrate` measures them
 * (docs/cost-model.md). 0 where not measured: the data-sheet peaks and
 * the memory bandwidth of mp_device stand in. */
enum { MP_CAL_FP32, MP_CAL_16BIT, MP_CAL_DTYPES };  /* float32; bf16/fp16 */
enum {
    MP_GEMM_SKINNY, /* a dimension (M, N or K) below 128 */
    MP_GEMM_SMALL,  /* else under 2 * 512^3 FLOPs */
    MP_GEMM_MEDIUM, /* else under 2 * 2048^3 FLOPs */
    MP_GEMM_LARGE,
    MP_GEMM_CLASSES
};
enum {
    MP_CONV_POINTWISE, /* 1x1 kernel, one group */
    MP_CONV_SPATIAL,   /* a larger kernel, one group (or a few) */
    MP_CONV_DEPTHWISE, /* one group per input channel */
    MP_CONV_CLASSES
};
/* Sequence classes of fused attention, by the query length Tq (a
 * backward node: its output gradient's): short windows (Swin's 49
 * tokens), medium (BERT's 128, ViT's 197), long (GPT-2's 1024). */
enum {
    MP_ATTN_SHORT,  /* Tq <= 64 */
    MP_ATTN_MEDIUM, /* Tq <= 512 */
    MP_ATTN_LONG,
    MP_ATTN_CLASSES
};
/* Memory-bound kernel families, each with an affine fit of its own
 * (bytes/s); the executor kernel of the op's registry entry says which. */
enum {
    MP_FAM_POINTWISE, /* unary, binary, variadic, Cast, Where, the loss
                         gradient, the synthetic kernel */
    MP_FAM_REDUCE,    /* windowed pools, LRN, the loss */
    MP_FAM_COPY,      /* data movement: transpose, concat, slice, ... */
    MP_FAM_BATCHNORM, /* BatchNormalization (in training: with its
                         statistics) */
    MP_FAM_REDUCTION, /* reductions to a small output: ReduceSum, ...,
                         global pools */
    MP_FAM_ROWNORM,   /* Softmax, LogSoftmax, LayerNormalization */
    MP_FAM_SGD,       /* SGD and momentum steps, one per parameter */
    MP_FAM_ADAM,      /* Adam and AdamW steps, one per parameter */
    MP_FAM_CLASSES
};
/* An affine time model of one kernel class, fitted to measurements at a
 * small and a large size: seconds = fixed + work / rate (work: FLOPs, or
 * bytes read and written for a memory-bound family). rate 0: not fitted
 * (the class's throughput figure and kernel_overhead stand in). */
typedef struct mp_cal_fit {
    double rate;  /* FLOP/s or bytes/s beyond the fixed cost */
    double fixed; /* seconds a kernel of the class costs whatever its work */
} mp_cal_fit;
typedef struct mp_device_calibration {
    int version;     /* the profile's format version; 0: not calibrated */
    double gemm[MP_CAL_DTYPES][MP_GEMM_CLASSES]; /* achieved FLOP/s */
    double conv[MP_CAL_DTYPES][MP_CONV_CLASSES]; /* achieved FLOP/s */
    double attention[MP_CAL_DTYPES]; /* FLOP/s of fused attention */
    /* the backward passes, FLOPs as the training graph counts them (0:
     * not measured; the forward's figure stands in) */
    double conv_grad[MP_CAL_DTYPES][MP_CONV_CLASSES]; /* input + weight */
    double attention_grad[MP_CAL_DTYPES]; /* dQ, dK, dV */
    double pointwise_bw;  /* bytes/s read + written by pointwise kernels */
    double reduce_bw;     /* by reductions (softmax, norms, pools too) */
    double copy_bw;       /* by data movement (transpose, concat, ...) */
    double overlap;       /* fraction of a host copy hidden behind a GEMM
                             running on another stream, 0..1 */
    /* The affine fits ("calibration.affine", optional; docs/cost-model.md),
     * [...][0] the forward kernels, [...][1] the backward ones (a
     * backward node's own fit, else its forward's). A class fitted is
     * timed fixed + max(work / rate, the roofline's other term); one not
     * fitted as without them. */
    mp_cal_fit gemm_fit[MP_CAL_DTYPES][MP_GEMM_CLASSES];
    mp_cal_fit conv_fit[MP_CAL_DTYPES][MP_CONV_CLASSES][2];
    mp_cal_fit attention_fit[MP_CAL_DTYPES][MP_ATTN_CLASSES][2];
    mp_cal_fit family_fit[MP_FAM_CLASSES][2]; /* float32 kernels */
} mp_device_calibration;

/* A device: peak dense FLOP/s per dtype class, memory, the host link and
 * the host tiers (for offload), and optionally its calibration. A plain
 * value; builtin profiles (h200, h100, a100, l4, t4) or user JSON files
 * fill it. Bandwidths in bytes/s, times in seconds, 0 where unknown. */
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
    mp_device_calibration cal; /* all 0: not calibrated */
} mp_device;

/* A builtin profile by name (case-insensitive: "h200", "h100", "a100",
 * "l4", "t4").
 * Errors: MP_ERR_NOT_FOUND (an unknown name; the message lists the
 * names), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_device d; mp_device_builtin(ctx, "h100", &d); */
MP_API mp_status mp_device_builtin(mp_ctx *ctx, const char *name,
                                   mp_device *out);
/* The number of builtin profiles. */
MP_API size_t mp_device_builtin_count(void);
/* The name of builtin profile i (i below mp_device_builtin_count()); NULL
 * beyond. */
MP_API const char *mp_device_builtin_name(size_t i);
/* Reads a user device profile (docs/cost-model.md): a JSON object,
 * optionally "base" (a builtin whose figures the others override), and
 * optionally "version" and "calibration" (what `memplan calibrate`
 * writes; format version 1). Unknown keys, wrong types and negative
 * figures are errors naming the key.
 * Errors: MP_ERR_IO (unreadable), MP_ERR_PARSE (malformed JSON, an unknown
 * key, a wrong type, a negative figure, a calibration without its
 * version or missing a required figure, a version other than 1;
 * file:line:column named),
 * MP_ERR_NOT_FOUND (an unknown base), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_device_load_json(mp_ctx *ctx, const char *path,
                                     mp_device *out);
/* mp_device_load_json from a string; source_name names it in messages.
 * Errors: as mp_device_load_json, without MP_ERR_IO. */
MP_API mp_status mp_device_load_json_string(mp_ctx *ctx, const char *text,
                                            const char *source_name,
                                            mp_device *out);
/* "name" of a builtin, else a JSON file path: what a --device option
 * takes.
 * Errors: as mp_device_builtin and mp_device_load_json.
 * Example: mp_device_get(ctx, "profiles/my-gpu.json", &d); */
MP_API mp_status mp_device_get(mp_ctx *ctx, const char *name_or_path,
                               mp_device *out);
/* Peak FLOP/s for arithmetic in dtype t (fp32 for unknown classes; a
 * class the device lacks falls back to the next wider one). */
MP_API double mp_device_flops(const mp_device *d, mp_dtype t);

/* ---- node costs --------------------------------------------------------- */
/* Cost of one node from the op registry: FLOPs, bytes read and written,
 * and the estimated time on d, max(flops / F, bytes / B) plus the kernel
 * overhead (views cost nothing): F and B the calibrated throughput of the
 * node's kernel class where d is calibrated, else the peak of its dtype
 * and the memory bandwidth. A time the graph gives
 * (mp_graph_set_node_cost) is used as is. */
typedef struct mp_op_cost {
    double flops;
    double bytes;
    double seconds;
} mp_op_cost;
/* Fills *out with the cost of node `node` on device d (mp_op_cost, above).
 * Errors: MP_ERR_NOT_FOUND (no such node), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_op_cost c; mp_node_estimate(g, n, &d, &c); */
MP_API mp_status mp_node_estimate(const mp_graph *g, uint32_t node,
                                  const mp_device *d, mp_op_cost *out);
/* Seconds to move `bytes` over the host link (to_host: device -> host),
 * latency included. */
MP_API double mp_device_transfer_seconds(const mp_device *d, uint64_t bytes,
                                         int to_host);
/* Node cost used by the recompute solvers: the node's seconds when given,
 * else FLOPs / 1e12 (1 TFLOP/s), else bytes moved / 1e12, else 1e-9. */
MP_API double mp_node_cost(const mp_graph *g, uint32_t node);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_COST_H */
