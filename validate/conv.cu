// conv.cu - convolution passes (MPV_L_CONV_DNN) on cuDNN over the whole
// batch: the forward (then the bias, cudnnAddTensor), the input's gradient
// (backward data) and the weight's (backward filter). Each launch's
// workspace is planned (the cost model's mp__conv_workspace, host.c); the
// algorithm is the fastest of cuDNN's heuristics' candidates that is
// deterministic, uses an allowed arithmetic (TF32 tensor cores or FMA by
// default, as PyTorch allows; FMA only with --conv-math fp32: results as
// an fp32 reference), fits that workspace and runs (each timed once, as
// torch.backends.cudnn.benchmark does). Where none does, or cuDNN cannot
// express the pads,
// a direct kernel computes the pass: one thread per output element, a
// fixed order of additions, no workspace. Everything here is
// deterministic, so the planned and the reference runs agree bit for bit.
#include "conv.h"
#include "conv_direct.h"

#include <cstdio>
#include <cstdlib>

#include <cuda_bf16.h>
#include <cudnn.h>
#include <stdio.h>
#include <vector>

#define TPB 256

namespace {

unsigned blocks(int64_t n)
{
    int64_t b = (n + TPB - 1) / TPB;
    if (b < 1)
        b = 1;
    if (b > 65535LL * 32)
        b = 65535LL * 32;
    return (unsigned)b;
}

#define LOOP(i, n)                                                           \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

typedef decltype(((mpv_launch *)0)->p.dnn) geom;

// the direct passes (conv_direct.h): one thread per output element
__global__ void k_fwd(const float *x, const float *w, const float *b,
                      float *y, mpv_launch l)
{
    const geom &p = l.p.dnn;
    LOOP(i, p.n * p.m * p.oh * p.ow) y[i] = mpv_conv_fwd_at(&l, x, w, b, i);
}

__global__ void k_bwd_data(const float *dy, const float *w, float *dx,
                           mpv_launch l)
{
    const geom &p = l.p.dnn;
    LOOP(i, p.n * p.c * p.h * p.w) dx[i] = mpv_conv_bwd_data_at(&l, dy, w, i);
}

__global__ void k_bwd_filter(const float *dy, const float *x, float *dw,
                             mpv_launch l)
{
    const geom &p = l.p.dnn;
    LOOP(i, p.m * (p.c / p.g) * p.kh * p.kw)
    {
        dw[i] = mpv_conv_bwd_filter_at(&l, dy, x, i);
    }
}

const char *launch_check()
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

// one launch's descriptors and algorithm
struct dnn_launch {
    bool used = false, direct = true;
    cudnnTensorDescriptor_t x = NULL, y = NULL, b = NULL;
    cudnnFilterDescriptor_t w = NULL;
    cudnnConvolutionDescriptor_t cv = NULL;
    int algo = 0;
    size_t ws = 0;
    bool first = false; // cuDNN's first heuristic choice
    bool bf = false;    // bfloat16 operands
};

bool is_fma(cudnnMathType_t t)
{
    return t == CUDNN_DEFAULT_MATH || t == CUDNN_FMA_MATH;
}

} // namespace

struct mpv_dnn {
    cudnnHandle_t h = NULL;
    std::vector<dnn_launch> l;
    uint32_t n_cudnn = 0, n_first = 0, n_direct = 0;
    uint64_t first_ws_max = 0, ws_used_max = 0;
    bool fp32 = false; // FMA arithmetic only (no TF32)
    cudaEvent_t ev[2] = {NULL, NULL}; // timing the trial calls
    bool roots16 = false; // every root starts on 16 bytes in both runs
    char err[256];
};

int mpv_dnn_needed(const mpv_program *p)
{
    for (uint32_t i = 0; i < p->n_launches; i++)
        if (p->launches[i].kind == MPV_L_CONV_DNN)
            return 1;
    return 0;
}

const char *mpv_dnn_create(mpv_dnn **out, int fp32)
{
    mpv_dnn *d = new mpv_dnn();
    d->fp32 = fp32 != 0;
    cudnnStatus_t st = cudnnCreate(&d->h);
    if (st != CUDNN_STATUS_SUCCESS) {
        delete d;
        *out = NULL;
        return cudnnGetErrorString(st);
    }
    *out = d;
    return NULL;
}

#define DK(call)                                                             \
    do {                                                                     \
        cudnnStatus_t s_ = (call);                                           \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                    \
            snprintf(d->err, sizeof d->err, "%s: %s", #call,                 \
                     cudnnGetErrorString(s_));                               \
            return d->err;                                                   \
        }                                                                    \
    } while (0)

namespace {

// y = x, bfloat16 to float32 (a staged pass's result)
__global__ void k_widen(const __nv_bfloat16 *x, float *y, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __bfloat162float(x[i]);
}

// the pass on cuDNN with algorithm algo and a workspace of ws bytes
cudnnStatus_t dnn_pass(cudnnHandle_t h, const dnn_launch &k, const geom &p,
                       int algo, const void *a, const void *b, void *out,
                       void *ws, size_t wsb)
{
    const float one = 1.f, zero = 0.f;
    switch (p.pass) {
    case MPV_CONV_FWD: // a = x, b = w
        return cudnnConvolutionForward(h, &one, k.x, a, k.w, b, k.cv,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws,
                                       wsb, &zero, k.y, out);
    case MPV_CONV_BWD_DATA: // a = dy, b = w
        return cudnnConvolutionBackwardData(
            h, &one, k.w, b, k.y, a, k.cv, (cudnnConvolutionBwdDataAlgo_t)algo,
            ws, wsb, &zero, k.x, out);
    default: // a = dy, b = x
        return cudnnConvolutionBackwardFilter(
            h, &one, k.x, b, k.y, a, k.cv,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsb, &zero, k.w, out);
    }
}

// candidates of one pass, in the heuristics' order: algorithm, whether
// usable (status, determinism, arithmetic), workspace
struct cand {
    int algo;
    bool ok;
    size_t mem;
};

template <typename P>
void to_cands(const P *perf, int n, bool fp32, std::vector<cand> &c)
{
    for (int i = 0; i < n; i++)
        c.push_back({(int)perf[i].algo,
                     perf[i].status == CUDNN_STATUS_SUCCESS &&
                         perf[i].determinism == CUDNN_DETERMINISTIC &&
                         (!fp32 || is_fma(perf[i].mathType)),
                     perf[i].memory});
}

cudnnStatus_t heuristics(cudnnHandle_t h, const dnn_launch &k, int pass,
                         bool fp32, std::vector<cand> &c)
{
    int n = 0;
    cudnnStatus_t st;
    if (pass == MPV_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        st = cudnnGetConvolutionForwardAlgorithm_v7(
            h, k.x, k.w, k.cv, k.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
        if (st == CUDNN_STATUS_SUCCESS)
            to_cands(perf, n, fp32, c);
    } else if (pass == MPV_CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        st = cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, k.w, k.y, k.cv, k.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
            perf);
        if (st == CUDNN_STATUS_SUCCESS)
            to_cands(perf, n, fp32, c);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, k.x, k.y, k.cv, k.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            &n, perf);
        if (st == CUDNN_STATUS_SUCCESS)
            to_cands(perf, n, fp32, c);
    }
    return st;
}

cudnnStatus_t ws_size(cudnnHandle_t h, const dnn_launch &k, int pass,
                      int algo, size_t *sz)
{
    if (pass == MPV_CONV_FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(
            h, k.x, k.w, k.cv, k.y, (cudnnConvolutionFwdAlgo_t)algo, sz);
    if (pass == MPV_CONV_BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, k.w, k.y, k.cv, k.x, (cudnnConvolutionBwdDataAlgo_t)algo, sz);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, k.x, k.y, k.cv, k.w, (cudnnConvolutionBwdFilterAlgo_t)algo, sz);
}

} // namespace

namespace {

// launch k's descriptors: NCHW float32, the window, groups, the
// arithmetic (FMA only, or TF32 allowed); false when cuDNN refuses one
// or computes another output shape
bool set_descriptors(dnn_launch &k, const geom &g, bool fp32, bool bf)
{
    const cudnnDataType_t dt = bf ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    auto ok = [&](cudnnStatus_t x) {
        if (st == CUDNN_STATUS_SUCCESS)
            st = x;
        return st == CUDNN_STATUS_SUCCESS;
    };
    ok(cudnnCreateTensorDescriptor(&k.x));
    ok(cudnnCreateTensorDescriptor(&k.y));
    ok(cudnnCreateFilterDescriptor(&k.w));
    ok(cudnnCreateConvolutionDescriptor(&k.cv));
    ok(cudnnSetTensor4dDescriptor(k.x, CUDNN_TENSOR_NCHW, dt,
                                  (int)g.n, (int)g.c, (int)g.h, (int)g.w));
    ok(cudnnSetTensor4dDescriptor(k.y, CUDNN_TENSOR_NCHW, dt,
                                  (int)g.n, (int)g.m, (int)g.oh, (int)g.ow));
    ok(cudnnSetFilter4dDescriptor(k.w, dt, CUDNN_TENSOR_NCHW,
                                  (int)g.m, (int)(g.c / g.g), (int)g.kh,
                                  (int)g.kw));
    ok(cudnnSetConvolution2dDescriptor(
        k.cv, (int)g.pt, (int)g.pl, (int)g.sh, (int)g.sw, (int)g.dh,
        (int)g.dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    ok(cudnnSetConvolutionGroupCount(k.cv, (int)g.g));
    ok(cudnnSetConvolutionMathType(k.cv, fp32 ? CUDNN_FMA_MATH
                                              : CUDNN_TENSOR_OP_MATH));
    if (g.has_bias) {
        ok(cudnnCreateTensorDescriptor(&k.b));
        ok(cudnnSetTensor4dDescriptor(k.b, CUDNN_TENSOR_NCHW, dt, 1,
                                      (int)g.m, 1, 1));
    }
    int on = 0, oc = 0, oh = 0, ow = 0;
    return st == CUDNN_STATUS_SUCCESS &&
           cudnnGetConvolution2dForwardOutputDim(k.cv, k.x, k.w, &on, &oc,
                                                 &oh, &ow) ==
               CUDNN_STATUS_SUCCESS &&
           on == g.n && oc == g.m && oh == g.oh && ow == g.ow;
}

// the scratch operands of the trial calls
struct trial {
    void *x, *w, *y, *ws;
};

// Launch k's algorithm: of every usable candidate that fits the
// workspace and runs, under each allowed arithmetic (TF32 then FMA, or
// FMA alone), the fastest of a second, timed call (ties: the earlier;
// FMA alone: the first, which does not depend on the timing);
// k stays direct when none qualifies. all: every candidate seen (the
// trace). NULL, or the error of a trial that broke the stream.
const char *choose(mpv_dnn *d, dnn_launch &k, const mpv_launch &l,
                   cudaStream_t s, const trial &t, std::vector<cand> &all)
{
    const geom &g = l.p.dnn;
    const void *ta = g.pass == MPV_CONV_FWD ? t.x : t.y;
    const void *tb = g.pass == MPV_CONV_BWD_FILTER ? t.x : t.w;
    void *to = g.pass == MPV_CONV_FWD        ? t.y
               : g.pass == MPV_CONV_BWD_DATA ? t.x
                                             : t.w;
    float best_ms = 0.f;
    bool best_fma = false, first = true;
    std::vector<cand> c;
    for (int fma = d->fp32 ? 1 : 0; fma <= 1; fma++) {
        c.clear();
        if (cudnnSetConvolutionMathType(k.cv, fma ? CUDNN_FMA_MATH
                                                  : CUDNN_TENSOR_OP_MATH) !=
                CUDNN_STATUS_SUCCESS ||
            heuristics(d->h, k, g.pass, fma != 0, c) != CUDNN_STATUS_SUCCESS)
            continue;
        all.insert(all.end(), c.begin(), c.end());
        for (const cand &x : c) {
            if (!x.ok)
                continue;
            size_t sz = 0, cap = l.workspace - (size_t)g.stage;
            bool fits = x.mem <= cap &&
                        ws_size(d->h, k, g.pass, x.algo, &sz) ==
                            CUDNN_STATUS_SUCCESS &&
                        sz <= cap;
            size_t need = sz > x.mem ? sz : x.mem;
            bool was_first = first;
            first = false;
            if (was_first && need > cap && need > d->first_ws_max)
                d->first_ws_max = need;
            for (int rep = 0; rep < 2 && fits; rep++) {
                if (rep == 1)
                    cudaEventRecord(d->ev[0], s);
                fits = dnn_pass(d->h, k, g, x.algo, ta, tb, to, t.ws, sz) ==
                       CUDNN_STATUS_SUCCESS;
                if (rep == 1)
                    cudaEventRecord(d->ev[1], s);
                if (cudaStreamSynchronize(s) != cudaSuccess)
                    return "a trial convolution failed";
                // (a launch error of the trial: this algorithm does not
                // run; the error is cleared)
                fits &= cudaGetLastError() == cudaSuccess;
            }
            float ms = 0.f;
            if (!fits || cudaEventElapsedTime(&ms, d->ev[0], d->ev[1]) !=
                             cudaSuccess)
                continue;
            if (k.direct || ms < best_ms) {
                k.direct = false;
                k.algo = x.algo;
                k.ws = sz;
                best_ms = ms;
                best_fma = fma != 0;
                k.first = was_first;
            }
            // FMA alone (--conv-math fp32, the comparisons with a
            // reference): cuDNN's first candidate that fits and runs, the
            // same in every run, so that two runs (--poison against the
            // plain plan) compute bit for bit alike
            if (d->fp32)
                break;
        }
    }
    if (!k.direct)
        cudnnSetConvolutionMathType(k.cv, best_fma ? CUDNN_FMA_MATH
                                                   : CUDNN_TENSOR_OP_MATH);
    return NULL;
}

} // namespace

const char *mpv_dnn_prepare(mpv_dnn *d, const mpv_program *p, cudaStream_t s)
{
    DK(cudnnSetStream(d->h, s));
    d->l.assign(p->n_launches, dnn_launch());
    d->roots16 = p->alignment > 0 && p->alignment % 16 == 0;
    // scratch operands for the trial calls: the largest of each
    uint64_t mx = 0, mw = 0, my = 0, mws = 0;
    for (uint32_t i = 0; i < p->n_launches; i++) {
        const mpv_launch &l = p->launches[i];
        if (l.kind != MPV_L_CONV_DNN || !l.p.dnn.cudnn)
            continue;
        const geom &g = l.p.dnn;
        uint64_t x = (uint64_t)(g.n * g.c * g.h * g.w) * 4,
                 w = (uint64_t)(g.m * (g.c / g.g) * g.kh * g.kw) * 4,
                 y = (uint64_t)(g.n * g.m * g.oh * g.ow) * 4;
        mx = x > mx ? x : mx;
        mw = w > mw ? w : mw;
        my = y > my ? y : my;
        mws = l.workspace > mws ? l.workspace : mws;
    }
    void *bx = NULL, *bw = NULL, *by = NULL, *bws = NULL;
    auto release = [&]() {
        cudaStreamSynchronize(s);
        for (int e = 0; e < 2; e++)
            if (d->ev[e]) {
                cudaEventDestroy(d->ev[e]);
                d->ev[e] = NULL;
            }
        cudaFree(bx);
        cudaFree(bw);
        cudaFree(by);
        cudaFree(bws);
    };
    if (mx && (cudaMalloc(&bx, mx) != cudaSuccess ||
               cudaMalloc(&bw, mw) != cudaSuccess ||
               cudaMalloc(&by, my) != cudaSuccess ||
               cudaMalloc(&bws, mws ? mws : 256) != cudaSuccess ||
               cudaMemset(bx, 0, mx) != cudaSuccess ||
               cudaMemset(bw, 0, mw) != cudaSuccess ||
               cudaMemset(by, 0, my) != cudaSuccess)) {
        release();
        return "cudaMalloc of the trial operands";
    }
    if (mx && (cudaEventCreate(&d->ev[0]) != cudaSuccess ||
               cudaEventCreate(&d->ev[1]) != cudaSuccess)) {
        release();
        return "cudaEventCreate for the trial calls";
    }
    const char *err = NULL;
    for (uint32_t i = 0; i < p->n_launches && !err; i++) {
        const mpv_launch &l = p->launches[i];
        if (l.kind != MPV_L_CONV_DNN)
            continue;
        dnn_launch &k = d->l[i];
        k.used = true;
        const geom &g = l.p.dnn;
        if (!g.cudnn) {
            d->n_direct++;
            continue;
        }
        std::vector<cand> all;
        k.bf = (l.bf16 & 1) != 0; // x, or dy: the pass's width
        if (set_descriptors(k, g, d->fp32, k.bf))
            err = choose(d, k, l, s, trial{bx, bw, by, bws}, all);
        if (!k.direct) {
            d->n_cudnn++;
            d->n_first += k.first;
            if (k.ws > d->ws_used_max)
                d->ws_used_max = k.ws;
        }
        if (k.direct)
            d->n_direct++;
        if (getenv("MEMPLAN_CONV_TRACE")) { // calibrating the workspace
            fprintf(stderr, "conv-trace pass %d x %lldx%lldx%lldx%lld m %lld "
                    "k %lldx%lld s %lld g %lld planned %llu chosen %d%s:",
                    (int)g.pass, (long long)g.n, (long long)g.c,
                    (long long)g.h, (long long)g.w, (long long)g.m,
                    (long long)g.kh, (long long)g.kw, (long long)g.sh,
                    (long long)g.g, (unsigned long long)l.workspace,
                    k.direct ? -1 : k.algo, k.direct ? " (direct)" : "");
            for (const cand &x : all)
                fprintf(stderr, " %d%s:%zu", x.algo, x.ok ? "" : "x",
                        x.mem);
            fprintf(stderr, "\n");
        }
    }
    release();
    return err;
}

const char *mpv_dnn_run(mpv_dnn *d, uint32_t index, const mpv_launch *l,
                        const mpv_io *io, cudaStream_t s)
{
    if (!d || index >= d->l.size() || !d->l[index].used)
        return "convolution launch not prepared";
    const dnn_launch &k = d->l[index];
    const geom &g = l->p.dnn;
    const void *a = io->in[l->in[0]], *b = io->in[l->in[1]];
    const void *bias = g.has_bias && l->in[2] >= 0 ? io->in[l->in[2]] : NULL;
    void *out = io->out[l->out];
    // cuDNN's vectorized kernels want aligned operands; a range view may
    // start anywhere: the direct kernel then, the same in the planned and
    // the reference run where both place every root on 16 bytes (a plan
    // aligned to less takes the direct kernel throughout)
    bool aligned = d->roots16 && ((uintptr_t)a | (uintptr_t)b |
                                  (uintptr_t)out | (uintptr_t)bias) % 16 == 0;
    if (k.direct || !aligned) {
        if (k.bf)
            return "a bfloat16 convolution pass without a cuDNN algorithm "
                   "(no direct kernel for bfloat16)";
        switch (g.pass) {
        case MPV_CONV_FWD:
            k_fwd<<<blocks(g.n * g.m * g.oh * g.ow), TPB, 0, s>>>(
                (const float *)a, (const float *)b, (const float *)bias,
                (float *)out, *l);
            break;
        case MPV_CONV_BWD_DATA:
            k_bwd_data<<<blocks(g.n * g.c * g.h * g.w), TPB, 0, s>>>(
                (const float *)a, (const float *)b, (float *)out, *l);
            break;
        default:
            k_bwd_filter<<<blocks(g.m * (g.c / g.g) * g.kh * g.kw), TPB, 0,
                           s>>>((const float *)a, (const float *)b,
                                (float *)out, *l);
            break;
        }
        return launch_check();
    }
    if (g.stage) { // bfloat16 into the workspace's start, then widened
        char *ws = (char *)io->ws;
        DK(dnn_pass(d->h, k, g, k.algo, a, b, ws, ws + g.stage, k.ws));
        int64_t n = (int64_t)(io->out_bytes[l->out] / sizeof(float));
        k_widen<<<blocks(n), TPB, 0, s>>>((const __nv_bfloat16 *)ws,
                                          (float *)out, n);
        return launch_check();
    }
    DK(dnn_pass(d->h, k, g, k.algo, a, b, out, io->ws, k.ws));
    if (bias) {
        const float one = 1.f;
        DK(cudnnAddTensor(d->h, &one, k.b, bias, &one, k.y, out));
    }
    return NULL;
}

void mpv_dnn_stats(const mpv_dnn *d, mpv_result *r)
{
    if (!d)
        return;
    r->conv_cudnn = d->n_cudnn;
    r->conv_first = d->n_first;
    r->conv_direct = d->n_direct;
    r->conv_first_ws_max = d->first_ws_max;
    r->conv_ws_used_max = d->ws_used_max;
    r->conv_fp32 = d->fp32;
}

void mpv_dnn_destroy(mpv_dnn *d)
{
    if (!d)
        return;
    for (dnn_launch &k : d->l) {
        if (k.x)
            cudnnDestroyTensorDescriptor(k.x);
        if (k.y)
            cudnnDestroyTensorDescriptor(k.y);
        if (k.b)
            cudnnDestroyTensorDescriptor(k.b);
        if (k.w)
            cudnnDestroyFilterDescriptor(k.w);
        if (k.cv)
            cudnnDestroyConvolutionDescriptor(k.cv);
    }
    if (d->h)
        cudnnDestroy(d->h);
    delete d;
}
