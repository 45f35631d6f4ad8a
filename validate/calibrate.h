/* calibrate.h - `memplan calibrate` (docs/cost-model.md): the
 * measurements that make a calibrated device profile.
 *
 * calibrate.c (plain C, tested without a GPU): the benchmarks, each a
 * one-node graph planned and lowered as `memplan validate` lowers a model
 * (so that what is timed is the executor's own kernels), and the profile
 * JSON from what was measured. calibrate.cu (CUDA): the timings. The
 * command itself is in calibrate_cmd.c. Not installed. */
#ifndef MEMPLAN_VALIDATE_CALIBRATE_H
#define MEMPLAN_VALIDATE_CALIBRATE_H

#include "validate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what a benchmark measures */
enum { MPV_CB_GEMM, MPV_CB_CONV, MPV_CB_POINTWISE, MPV_CB_REDUCE,
       MPV_CB_MOVE, MPV_CB_ATTENTION };
/* what its time goes into (mpv_cal_bench.use) */
enum { MPV_CB_BOTH, MPV_CB_FIT, MPV_CB_FIGURE };

typedef struct mpv_cal_bench {
    const char *name;   /* e.g. "gemm_1024" */
    int kind;           /* MPV_CB_* */
    int cls;            /* MP_GEMM_* (GEMM), MP_CONV_* (conv), MP_ATTN_*
                           (attention), MP_FAM_* (the memory-bound kinds:
                           pointwise, reduce, move): the class its
                           affine fit is of */
    const char *op;     /* the node's op */
    int64_t a[4], b[4]; /* GEMM: M, K, N; conv: N, C, H, W and M, C/g, kh,
                           kw; attention: Q's B, H, T, D; others: the
                           input's shape (rank 2) */
    int64_t group;      /* conv */
    int grad;           /* 1: the backward pass of the op (its NAMEGrad
                           node in the training graph), its inputs
                           requiring gradients */
    int train;          /* 1: timed in the training graph (BatchNorm with
                           its statistics, an optimizer step) */
    int use;            /* MPV_CB_BOTH, MPV_CB_FIT (the affine fit
                           only: the class figures, "gemm", "conv", ...,
                           are the medians of the others, as before the
                           fits), MPV_CB_FIGURE (the class figure only:
                           the batch-32 convolutions, whose throughputs
                           the reference models at batch 8 do not
                           reach) */
    int optim;          /* the training graph's optimizer + 1 (0: the
                           default) */
    const char *timed;  /* the op of the node timed (NULL: op, or
                           opGrad with grad) */
} mpv_cal_bench;
extern const mpv_cal_bench mpv_cal_benches[];
/* 1 when b is of a memory-bound kind (its work the bytes, its class an
 * MP_FAM_*), 0 for a GEMM, convolution or attention (work: FLOPs). */
int mpv_cal_bench_memory(const mpv_cal_bench *b);
extern const size_t mpv_cal_n_benches;

/* One benchmark ready to run: its graph, plan and program, and the op of
 * the nodes timed (the benchmark's op, or its NAMEGrad in the training
 * graph of a backward benchmark: the forward graph is `fwd`). */
typedef struct mpv_cal_case {
    mp_graph *g, *fwd;
    mp_plan *plan;
    mpv_program *prog;
    char timed[64];       /* the op of the nodes timed */
    double flops, bytes;  /* as the cost model counts them (those nodes) */
} mpv_cal_case;
/* Builds benchmark b in ctx. MP_OK or the library's status (message in
 * ctx). */
mp_status mpv_cal_case_make(mp_ctx *ctx, const mpv_cal_bench *b,
                            mpv_cal_case *c);
/* The same with the operands of a GEMM, convolution or attention
 * benchmark of dtype dt (bfloat16: the executor's bfloat16 kernels; a
 * backward benchmark's training graph keeps that dtype). */
mp_status mpv_cal_case_make_dt(mp_ctx *ctx, const mpv_cal_bench *b,
                               mp_dtype dt, mpv_cal_case *c);
void mpv_cal_case_free(mpv_cal_case *c);
/* The executor's cost per node where the host is the bound (the
 * profile's kernel_overhead, when above an empty kernel's): one SGD step
 * of 16 Linear + ReLU layers on [2, 8], every node of it timed (c->timed
 * empty), each node's kernels costing next to nothing on the device. */
mp_status mpv_cal_launch_case(mp_ctx *ctx, mpv_cal_case *c);
/* Why a node timed runs the synthetic kernel, or NULL when none does. */
const char *mpv_cal_case_synthetic(const mpv_cal_case *c);

/* The affine fit of one class, seconds = fixed + work / rate, from n
 * measurements (work[i], t[i] seconds; t[i] <= 0 skipped): the least
 * squares of the relative error, fixed >= 0, rate > 0. Fewer than two
 * distinct works (or a fit whose time does not grow with the work): the
 * median rate of work over the time less `overhead` (at least a tenth of
 * it) and fixed = overhead, as the class figures. rate 0 when nothing
 * was measured. */
mp_cal_fit mpv_cal_fit(const double *work, const double *t, size_t n,
                       double overhead);

/* What a calibration measured. Times in seconds, < 0 where not measured
 * (a benchmark the executor lowers to the synthetic kernel). */
typedef struct mpv_cal_meas {
    char gpu[128];              /* the CUDA device's name */
    uint64_t mem_bytes;         /* its memory */
    int copy_engines;
    int reps;                   /* timed repetitions (medians) */
    double *bench_s;            /* per mpv_cal_benches[i]: one run (of
                                 * the nodes timed) */
    double *bench16_s;          /* per benchmark, bfloat16 (< 0: not run):
                                 * GEMMs on cublasGemmEx, convolutions and
                                 * attention on the executor's kernels */
    double launch_s;            /* an empty kernel, back to back */
    double node_s;              /* a node of mpv_cal_launch_case, back to
                                 * back (0: not measured); the profile's
                                 * kernel_overhead is the larger */
    double h2d_bw, d2h_bw;      /* pinned, 256 MiB copies, bytes/s */
    double link_latency;        /* a 4 KiB pinned copy */
    double d2d_bw;              /* cudaMemcpy device to device, bytes/s */
    double overlap_h2d, overlap_d2h; /* fraction of the copy hidden */
} mpv_cal_meas;

/* The profile JSON (format version 1; docs/cost-model.md) named `name`
 * from m, into *text (NUL-terminated, from ctx's allocator: free it with
 * mpv_cal_text_free). The figures: each class
 * the flops of its benchmarks over their time less the launch overhead
 * (so that the cost model, which adds that overhead, gives back the time
 * measured), the median over the benchmarks of a class. */
mp_status mpv_cal_profile_json(mp_ctx *ctx, const char *name,
                               const mpv_cal_meas *m, char **text);

void mpv_cal_text_free(mp_ctx *ctx, char *text);

/* ---- the CUDA half (calibrate.cu) ---------------------------------------- */
typedef struct mpv_cal_gpu mpv_cal_gpu;
/* Opens device 0: streams, cuBLAS. NULL with why filled on failure. */
mpv_cal_gpu *mpv_cal_open(mpv_cal_meas *m, char *why, size_t cap);
void mpv_cal_close(mpv_cal_gpu *g);
/* Each returns 0, or -1 with why filled. Times are medians over reps
 * timed batches (each batch long enough to time: about 2 ms). */
/* One run of the program's compute steps (the executor's launches) of
 * the nodes of op `only` (NULL: every node). */
int mpv_cal_time_program(mpv_cal_gpu *g, const mpv_program *p,
                         const char *only, int reps, double *s, char *why,
                         size_t cap);
/* bf16 M x K by K x N, fp32 accumulation (cublasGemmEx). */
int mpv_cal_time_gemm16(mpv_cal_gpu *g, int64_t m, int64_t k, int64_t n,
                        int reps, double *s, char *why, size_t cap);
/* Launch overhead, host link, device copies and overlap into m. */
int mpv_cal_time_system(mpv_cal_gpu *g, int reps, mpv_cal_meas *m,
                        char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
