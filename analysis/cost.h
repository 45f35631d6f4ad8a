/* analysis/cost.h - the cost model inside the library: FLOPs and bytes
 * of a node from its registry entry, and its time on a device profile
 * (analysis/cost.c). Internal, not installed. */
#ifndef MP__COST_H
#define MP__COST_H

#include "ir.h"

/* FLOPs and bytes (read + written) of a node from its registry entry. */
mp_status mp__node_flops_bytes(const struct mp_graph *g, uint32_t node,
                              double *flops, double *bytes);
/* mp_node_estimate; use_given = 0 ignores FLOPs, bytes and seconds the
 * graph gives and estimates from the registry alone. */
mp_status mp__node_estimate_ex(const struct mp_graph *g, uint32_t node,
                              const mp_device *d, int use_given,
                              mp_op_cost *out);

/* What kind of kernel a node runs, for the calibrated throughputs. */
enum {
    MP__KK_OTHER = 0,   /* synthetic and unknown: the pointwise family */
    MP__KK_GEMM,        /* MatMul, Gemm (cls: MP_GEMM_*) */
    MP__KK_ATTENTION,   /* fused attention (cls: MP_GEMM_*, its fallback;
                           seq: MP_ATTN_*) */
    MP__KK_CONV,        /* cls: MP_CONV_* */
    MP__KK_MEMORY       /* memory-bound (cls: MP_FAM_*) */
};
typedef struct mp__kernel_desc {
    int kind, cls;
    double flops, bytes;
    mp_dtype dt;        /* the dtype of its arithmetic */
    int grad;           /* a backward pass (ConvGrad, the attention's) */
    int seq;            /* attention: MP_ATTN_* (< 0: unknown) */
} mp__kernel_desc;

/* The kernel node runs as the cost model sees it (kind, class, FLOPs
 * and bytes from the registry, dtype); MP_ERR_INVALID_ARG without one. */
mp_status mp__node_kernel_desc(const struct mp_graph *g, uint32_t node,
                               mp__kernel_desc *k);

/* The GEMM class (MP_GEMM_*) of an M x K by K x N product of `flops`
 * FLOPs; a dimension <= 0 is unknown (the class from the FLOPs alone). */
int mp__gemm_class(double m, double n, double k, double flops);

/* The sequence class (MP_ATTN_*) of attention over tq query rows; -1
 * when tq is unknown (<= 0). */
int mp__attn_class(double tq);

/* The one time of a kernel on d: the roofline max(flops / F, bytes / B)
 * plus the kernel overhead, F and B the calibrated throughput of the
 * kernel's kind and class (d->cal) where measured, else the peak of its
 * dtype and the memory bandwidth; where the class has an affine fit
 * (d->cal.*_fit), fixed + max(work / rate, the other term) instead (work:
 * FLOPs of a compute class against bytes at the memory bandwidth, bytes
 * of a memory family against FLOPs at the peak). Every prediction of a node's time
 * (mp__node_estimate_ex: the planners, the offload solver, the training
 * synthesis, validate) goes through it. */
double mp__kernel_seconds(const mp_device *d, const mp__kernel_desc *k);

/* A 2-D convolution's geometry (NCHW): input N x C x H x W, output
 * N x M x OH x OW, a KH x KW kernel, G groups. */
typedef struct mp__conv_shape {
    int64_t n, c, h, w, m, oh, ow, kh, kw, g;
} mp__conv_shape;
/* the passes of a convolution: the forward, the input's gradient, the
 * weight's gradient */
enum { MP__CONV_FWD = 0, MP__CONV_BWD_DATA = 1, MP__CONV_BWD_FILTER = 2 };
/* The workspace bytes the cost model assumes the algorithm of one pass
 * needs (docs/cost-model.md, "Convolution workspace"): implicit-GEMM
 * algorithms (cuDNN's IMPLICIT_PRECOMP_GEMM class and the deterministic
 * backward ALGO_1), a deterministic function of the shape, so that a plan
 * made without a GPU can hold it; the executor runs the fastest algorithm
 * that needs no more. 0 when the shape is invalid or the size overflows. */
uint64_t mp__conv_workspace(const mp__conv_shape *s, int pass);

/* The one time of a copy over the host link is the public
 * mp_device_transfer_seconds (analysis/devices.c): the offload solver's
 * candidates and simulation and validate's prediction call it. */

#endif /* MP__COST_H */
