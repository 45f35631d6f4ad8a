// calibrate.cu - the timings of `memplan calibrate` (calibrate.h;
// docs/cost-model.md). Every figure is the median over `reps` batches
// timed with CUDA events, a batch being as many back-to-back calls as
// fill about 2 ms (at least one), after three warm-up calls.
#include "calibrate.h"
#include "conv.h"
#include "kernels.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <stdio.h>
#include <string.h>
#include <vector>

#define CAL_CUBLAS_WS MPV_CUBLAS_WS_BYTES  // as the executor

struct mpv_cal_gpu {
    cudaStream_t s, s2;
    cublasHandle_t h;
    cudaEvent_t e0, e1, ec;
    void *cws;  // cuBLAS's workspace, as the executor gives it
};

#define CKG(x)                                                               \
    do {                                                                     \
        cudaError_t e_ = (x);                                                \
        if (e_ != cudaSuccess) {                                             \
            snprintf(why, cap, "%s: %s", #x, cudaGetErrorString(e_));        \
            return -1;                                                       \
        }                                                                    \
    } while (0)
#define CKB(x)                                                               \
    do {                                                                     \
        if ((x) != CUBLAS_STATUS_SUCCESS) {                                  \
            snprintf(why, cap, "%s failed", #x);                             \
            return -1;                                                       \
        }                                                                    \
    } while (0)

namespace {

__global__ void empty_kernel() {}

__global__ void fill_f32(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

__global__ void fill_bf16(__nv_bfloat16 *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = __float2bfloat16(v);
}

unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256); }

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// seconds per call of run (which enqueues on stream s; 0 or -1 with why)
template <class F>
int time_it(mpv_cal_gpu *g, cudaStream_t s, F run, int reps, double *out,
            char *why, size_t cap)
{
    for (int i = 0; i < 3; i++)
        if (run())
            return -1;
    CKG(cudaStreamSynchronize(s));
    float ms = 0;
    CKG(cudaEventRecord(g->e0, s));
    if (run())
        return -1;
    CKG(cudaEventRecord(g->e1, s));
    CKG(cudaEventSynchronize(g->e1));
    CKG(cudaEventElapsedTime(&ms, g->e0, g->e1));
    int inner = ms > 0 ? (int)(2.0 / ms) : 1000;
    inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
    std::vector<double> v;
    for (int r = 0; r < reps; r++) {
        CKG(cudaEventRecord(g->e0, s));
        for (int i = 0; i < inner; i++)
            if (run())
                return -1;
        CKG(cudaEventRecord(g->e1, s));
        CKG(cudaEventSynchronize(g->e1));
        CKG(cudaEventElapsedTime(&ms, g->e0, g->e1));
        v.push_back(ms * 1e-3 / inner);
    }
    *out = median(v);
    return 0;
}

} // namespace

extern "C" mpv_cal_gpu *mpv_cal_open(mpv_cal_meas *m, char *why, size_t cap)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        snprintf(why, cap, "no CUDA device");
        return NULL;
    }
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        snprintf(why, cap, "no usable CUDA device");
        return NULL;
    }
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
        snprintf(m->gpu, sizeof m->gpu, "%s", prop.name);
        m->copy_engines = prop.asyncEngineCount;
    }
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    m->mem_bytes = tot;
    mpv_cal_gpu *g = new mpv_cal_gpu();
    bool ok = cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking) ==
                  cudaSuccess &&
              cudaStreamCreateWithFlags(&g->s2, cudaStreamNonBlocking) ==
                  cudaSuccess &&
              cudaEventCreate(&g->e0) == cudaSuccess &&
              cudaEventCreate(&g->e1) == cudaSuccess &&
              cudaEventCreate(&g->ec) == cudaSuccess &&
              cudaMalloc(&g->cws, CAL_CUBLAS_WS) == cudaSuccess &&
              cublasCreate(&g->h) == CUBLAS_STATUS_SUCCESS &&
              cublasSetStream(g->h, g->s) == CUBLAS_STATUS_SUCCESS &&
              cublasSetWorkspace(g->h, g->cws, CAL_CUBLAS_WS) ==
                  CUBLAS_STATUS_SUCCESS;
    if (!ok) {
        snprintf(why, cap, "cannot set up streams, events or cuBLAS");
        delete g;
        return NULL;
    }
    return g;
}

extern "C" void mpv_cal_close(mpv_cal_gpu *g)
{
    if (!g)
        return;
    cudaDeviceSynchronize();
    cublasDestroy(g->h);
    cudaFree(g->cws);
    cudaEventDestroy(g->e0);
    cudaEventDestroy(g->e1);
    cudaEventDestroy(g->ec);
    cudaStreamDestroy(g->s);
    cudaStreamDestroy(g->s2);
    delete g;
}

// ---- one node's launches, as the executor runs them ----------------------

namespace {

struct prog_bufs {
    unsigned char *arena = NULL, *weights = NULL, *ws = NULL;
    mpv_dnn *dnn = NULL;  // cuDNN, for the convolution passes
    ~prog_bufs()
    {
        cudaDeviceSynchronize();
        if (dnn)
            mpv_dnn_destroy(dnn);
        cudaFree(arena);
        cudaFree(weights);
        cudaFree(ws);
    }
};

struct node_call {
    std::vector<void *> in, out;
    std::vector<uint64_t> inb, outb;
    std::vector<int> odt;
    mpv_io io;
    uint32_t first, count;
};

} // namespace

extern "C" int mpv_cal_time_program(mpv_cal_gpu *g, const mpv_program *p,
                                    const char *only, int reps, double *s,
                                    char *why, size_t cap)
{
    prog_bufs b;
    const mp_graph *gr = p->graph;
    CKG(cudaMalloc((void **)&b.arena, p->arena_bytes ? p->arena_bytes : 256));
    CKG(cudaMalloc((void **)&b.weights,
                   p->weights_bytes ? p->weights_bytes : 256));
    CKG(cudaMalloc((void **)&b.ws, p->workspace_bytes + 256));
    CKG(cudaMemset(b.arena, 0, p->arena_bytes ? p->arena_bytes : 256));
    if (p->weights_bytes) {
        std::vector<unsigned char> hw(p->weights_bytes);
        mpv_weights_init(p, hw.data(), 1);
        CKG(cudaMemcpy(b.weights, hw.data(), p->weights_bytes,
                       cudaMemcpyHostToDevice));
    }
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(gr, p->inputs[i], &ti);
        std::vector<unsigned char> hx(ti.bytes);
        mpv_input_init(p, p->inputs[i], hx.data(), 1);
        CKG(cudaMemcpy(b.arena + p->in_offs[i], hx.data(), ti.bytes,
                       cudaMemcpyHostToDevice));
    }
    auto ptr = [&](const mpv_ref &rf) -> void * {
        if (rf.tensor == MP_NONE || rf.bytes == 0)
            return NULL;
        if (rf.space == MPV_SPACE_WEIGHTS)
            return b.weights + rf.offset;
        if (rf.space == MPV_SPACE_ARENA)
            return b.arena + rf.offset;
        if (rf.space == MPV_SPACE_SCRATCH)
            return b.ws + rf.offset;
        return NULL;
    };
    std::vector<node_call> calls;
    for (uint32_t st = 0; st < p->n_steps; st++) {
        const mpv_step &ps = p->steps[st];
        if (ps.kind != MP_STEP_COMPUTE || !p->nodes[ps.index].run)
            continue;
        mp_node_info ni;
        mp_graph_node_info(gr, ps.index, &ni);
        if (only && strcmp(ni.op, only) != 0)
            continue;
        node_call c;
        for (uint32_t k = 0; k < ni.n_inputs; k++) {
            c.in.push_back(ptr(p->refs[ps.refs + k]));
            c.inb.push_back(p->refs[ps.refs + k].bytes);
        }
        for (uint32_t k = 0; k < ni.n_outputs; k++) {
            const mpv_ref &rf = p->refs[ps.refs + ni.n_inputs + k];
            mp_tensor_info ti;
            mp_graph_tensor_info(gr, ni.outputs[k], &ti);
            c.out.push_back(ptr(rf));
            c.outb.push_back(rf.bytes);
            c.odt.push_back(ti.dtype);
        }
        c.first = p->nodes[ps.index].first;
        c.count = p->nodes[ps.index].count;
        c.io.salt = ps.index;
        calls.push_back(c);
    }
    // the convolutions' algorithms, chosen as the executor chooses them
    if (mpv_dnn_needed(p)) {
        const char *e = mpv_dnn_create(&b.dnn, 0); // as validate runs them
        if (!e)
            e = mpv_dnn_prepare(b.dnn, p, g->s);
        if (e) {
            snprintf(why, cap, "cuDNN: %s", e);
            return -1;
        }
    }
    for (node_call &c : calls)  // the vectors stay put from here on
        c.io = mpv_io{c.in.data(), c.inb.data(), (uint32_t)c.in.size(),
                      c.out.data(), c.outb.data(), c.odt.data(),
                      (uint32_t)c.out.size(), b.ws, c.io.salt};
    auto run = [&]() -> int {
        for (const node_call &c : calls)
            for (uint32_t i = 0; i < c.count; i++) {
                const mpv_launch *l = &p->launches[c.first + i];
                if (l->out >= 0 && !c.out[l->out])
                    continue;
                const char *e =
                    l->kind == MPV_L_CONV_DNN
                        ? mpv_dnn_run(b.dnn, c.first + i, l, &c.io, g->s)
                        : mpv_run_launch(l, &c.io, g->h, g->s);
                if (e) {
                    snprintf(why, cap, "launch: %s", e);
                    return -1;
                }
            }
        return 0;
    };
    return time_it(g, g->s, run, reps, s, why, cap);
}

// ---- cuBLAS bf16 ------------------------------------------------------------

extern "C" int mpv_cal_time_gemm16(mpv_cal_gpu *g, int64_t m, int64_t k,
                                   int64_t n, int reps, double *s, char *why,
                                   size_t cap)
{
    __nv_bfloat16 *a = NULL, *bm = NULL, *c = NULL;
    size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
    int rc = -1;
    const float one = 1, zero = 0;
    // row-major C [m, n] = A [m, k] B [k, n]: column-major C^T = B^T A^T
    auto run = [&]() -> int {
        CKB(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m,
                         (int)k, &one, bm, CUDA_R_16BF, (int)n, a,
                         CUDA_R_16BF, (int)k, &zero, c, CUDA_R_16BF, (int)n,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return 0;
    };
    if (cudaMalloc((void **)&a, na * 2) != cudaSuccess ||
        cudaMalloc((void **)&bm, nb * 2) != cudaSuccess ||
        cudaMalloc((void **)&c, nc * 2) != cudaSuccess) {
        snprintf(why, cap, "cudaMalloc of a %lldx%lldx%lld bf16 GEMM",
                 (long long)m, (long long)k, (long long)n);
    } else {
        fill_bf16<<<blocks(na), 256, 0, g->s>>>(a, na, 0.01f);
        fill_bf16<<<blocks(nb), 256, 0, g->s>>>(bm, nb, 0.01f);
        rc = time_it(g, g->s, run, reps, s, why, cap);
    }
    cudaDeviceSynchronize();
    cudaFree(a);
    cudaFree(bm);
    cudaFree(c);
    return rc;
}

// ---- launch overhead, copies, overlap ------------------------------------

namespace {

struct sys_bufs {
    void *h = NULL, *d = NULL, *d2 = NULL;
    float *ga = NULL, *gb = NULL, *gc = NULL;
    ~sys_bufs()
    {
        cudaDeviceSynchronize();
        cudaFreeHost(h);
        cudaFree(d);
        cudaFree(d2);
        cudaFree(ga);
        cudaFree(gb);
        cudaFree(gc);
    }
};

} // namespace

extern "C" int mpv_cal_time_system(mpv_cal_gpu *g, int reps, mpv_cal_meas *m,
                                   char *why, size_t cap)
{
    const size_t big = 256u << 20, ov = 64u << 20;
    const int gn = 4096;
    const size_t gsz = (size_t)gn * gn;
    sys_bufs b;
    double t;
    // launch overhead: an empty kernel, back to back
    auto launch = [&]() -> int {
        empty_kernel<<<1, 1, 0, g->s>>>();
        CKG(cudaGetLastError());
        return 0;
    };
    if (time_it(g, g->s, launch, reps, &m->launch_s, why, cap))
        return -1;
    fprintf(stderr, "calibrate: launch overhead %.2f us\n", m->launch_s * 1e6);
    CKG(cudaHostAlloc(&b.h, big, cudaHostAllocDefault));
    CKG(cudaMalloc(&b.d, big));
    CKG(cudaMalloc(&b.d2, big));
    memset(b.h, 1, big);
    CKG(cudaMemset(b.d, 1, big));
    size_t nbytes = big;
    int dir = 0;
    auto copy = [&]() -> int {
        if (dir == 0)
            CKG(cudaMemcpyAsync(b.d, b.h, nbytes, cudaMemcpyHostToDevice,
                                g->s));
        else if (dir == 1)
            CKG(cudaMemcpyAsync(b.h, b.d, nbytes, cudaMemcpyDeviceToHost,
                                g->s));
        else
            CKG(cudaMemcpyAsync(b.d2, b.d, nbytes, cudaMemcpyDeviceToDevice,
                                g->s));
        return 0;
    };
    if (time_it(g, g->s, copy, reps, &t, why, cap))
        return -1;
    m->h2d_bw = (double)big / t;
    dir = 1;
    if (time_it(g, g->s, copy, reps, &t, why, cap))
        return -1;
    m->d2h_bw = (double)big / t;
    dir = 2;
    if (time_it(g, g->s, copy, reps, &t, why, cap))
        return -1;
    m->d2d_bw = 2.0 * (double)big / t; // read + written
    dir = 0;
    nbytes = 4096;
    if (time_it(g, g->s, copy, reps, &m->link_latency, why, cap))
        return -1;
    fprintf(stderr,
            "calibrate: host to device %.1f GB/s, device to host %.1f GB/s, "
            "latency %.2f us, device memory %.0f GB/s (read + written)\n",
            m->h2d_bw / 1e9, m->d2h_bw / 1e9, m->link_latency * 1e6,
            m->d2d_bw / 1e9);
    // overlap: a 64 MiB copy on stream s2 while a 4096^3 fp32 GEMM runs on
    // stream s
    CKG(cudaMalloc((void **)&b.ga, gsz * 4));
    CKG(cudaMalloc((void **)&b.gb, gsz * 4));
    CKG(cudaMalloc((void **)&b.gc, gsz * 4));
    fill_f32<<<blocks(gsz), 256, 0, g->s>>>(b.ga, gsz, 0.01f);
    fill_f32<<<blocks(gsz), 256, 0, g->s>>>(b.gb, gsz, 0.01f);
    const float one = 1, zero = 0;
    auto gemm = [&]() -> int {
        CKB(cublasSgemm(g->h, CUBLAS_OP_N, CUBLAS_OP_N, gn, gn, gn, &one,
                        b.ga, gn, b.gb, gn, &zero, b.gc, gn));
        return 0;
    };
    double tg, tc;
    if (time_it(g, g->s, gemm, reps, &tg, why, cap))
        return -1;
    for (dir = 0; dir < 2; dir++) {
        auto copy_dir = [&]() -> int {
            if (dir == 0)
                CKG(cudaMemcpyAsync(b.d, b.h, ov, cudaMemcpyHostToDevice,
                                    g->s2));
            else
                CKG(cudaMemcpyAsync(b.h, b.d, ov, cudaMemcpyDeviceToHost,
                                    g->s2));
            return 0;
        };
        if (time_it(g, g->s2, copy_dir, reps, &tc, why, cap))
            return -1;
        // both: the copy starts with the GEMM, the end waits for both
        std::vector<double> v;
        for (int r = 0; r < reps + 1; r++) {
            float ms = 0;
            CKG(cudaEventRecord(g->e0, g->s));
            CKG(cudaStreamWaitEvent(g->s2, g->e0, 0));
            if (gemm() || copy_dir())
                return -1;
            CKG(cudaEventRecord(g->ec, g->s2));
            CKG(cudaStreamWaitEvent(g->s, g->ec, 0));
            CKG(cudaEventRecord(g->e1, g->s));
            CKG(cudaEventSynchronize(g->e1));
            CKG(cudaEventElapsedTime(&ms, g->e0, g->e1));
            if (r > 0) // the first is a warm-up
                v.push_back(ms * 1e-3);
        }
        double both = median(v);
        double hidden = (tc + tg - both) / tc;
        hidden = hidden < 0 ? 0 : hidden > 1 ? 1 : hidden;
        (dir == 0 ? m->overlap_h2d : m->overlap_d2h) = hidden;
        fprintf(stderr,
                "calibrate: overlap %s: copy %.3f ms, GEMM %.3f ms, both "
                "%.3f ms: %.0f%% of the copy hidden\n",
                dir == 0 ? "host to device" : "device to host", tc * 1e3,
                tg * 1e3, both * 1e3, hidden * 100);
    }
    return 0;
}
