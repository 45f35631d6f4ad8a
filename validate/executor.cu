// executor.cu - runs an executor program (host.c) on a CUDA GPU.
//
// Planned run: one device arena of the planned size, every tensor at its
// planned offset, weights in their own buffer, one workspace buffer (im2col,
// cuDNN, cuBLAS), the schedule executed step by step on one stream; OFFLOAD
// and PREFETCH are cudaMemcpyAsync on a copy stream with pinned host
// memory, ordered by events and overlapped with compute as the offload
// planner's cost model assumes: a copy to the host is issued right after
// the last step that wrote the tensor's bytes (the compute stream goes on);
// the first later step that writes any of those bytes waits for it. A copy
// back is issued at its PREFETCH step (after everything the compute stream
// was given before it) and waited for by the first step that reads or
// writes its bytes. Reference run: every tensor allocated on its
// own from a stream-ordered pool and freed when its use count, counted here
// at run time, reaches zero. Memory is measured with the driver's figures
// (cudaMemGetInfo) around each allocation and after every step, and with
// the pool's high-water mark.
#include "conv.h"
#include "kernels.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CUBLAS_WS_BYTES MPV_CUBLAS_WS_BYTES

extern "C" int mpv_cuda_device_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
}

extern "C" int mpv_cuda_device_ok(char *why, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        snprintf(why, cap, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return 0;
    }
    return 1;
}

namespace {

struct run_ctx {
    const mpv_program *p;
    const mpv_options *o;
    mpv_result *r;
    cudaStream_t s, cs;
    cublasHandle_t h;
    mpv_dnn *dnn;  // cuDNN (convolution passes), NULL when none
    int nan_trace = 0; // MEMPLAN_NAN_TRACE: 1 set, 2 "hash" (nan_trace)
    unsigned char *weights, *ws, *arena;
    std::vector<unsigned char> hweights;
    std::vector<std::vector<unsigned char>> hinputs;
    std::vector<void *> pinned;   // per tensor (offload staging) or NULL
    std::vector<cudaEvent_t> ev;  // per step + 1
    cudaEvent_t evc;
    std::vector<cudaEvent_t> cev;              // per OFFLOAD/PREFETCH step
    std::vector<std::vector<uint32_t>> issue;  // [s]: OFFLOADs issued
                                               // before step s
    std::vector<uint32_t> n_in;                // per step: node inputs
    // a node's operands
    struct step_io {
        std::vector<void *> in, out;
        std::vector<uint64_t> inb, outb;
        std::vector<int> odt;
        mpv_io io;
        bool made = false;
    };
    // the planned run's operands of each node step, made on its first run
    // (the arena, weights and workspace stay put): the timed runs only
    // launch
    std::vector<step_io> planned_io;  // per step
    step_io scratch_io;  // the reference run's and the setup's, per step
    // --dump of a training step: each parameter's gradient, copied out
    // when its optimizer step runs (grab: in this run)
    bool grab;
    std::vector<mpv_grad> grads;
    std::vector<uint64_t> grad_at;   // offsets in gvals
    std::vector<unsigned char> gvals;
};

// an in-flight copy: its arena bytes [lo, hi) and its completion event
struct pending_copy {
    uint64_t lo, hi;
    cudaEvent_t e;
    bool prefetch;
};

// the arena bytes of a reference (at least its root's bytes: a view reads
// and writes inside its root's block)
bool ref_range(const run_ctx &c, const mpv_ref &rf, uint64_t *lo, uint64_t *hi)
{
    if (rf.tensor == MP_NONE || rf.bytes == 0 || rf.space != MPV_SPACE_ARENA)
        return false;
    mp_tensor_info ti;
    mp_graph_tensor_info(c.p->graph, rf.tensor, &ti);
    uint64_t end = rf.view_off + rf.bytes; // (a range view's end)
    *lo = rf.offset - rf.view_off;
    *hi = *lo + (ti.bytes > end ? ti.bytes : end);
    return true;
}

// does step s write (writes only) or touch (reads too) arena bytes [lo, hi)?
bool step_hits(const run_ctx &c, uint32_t s, uint64_t lo, uint64_t hi,
               bool reads_too)
{
    const mpv_step &ps = c.p->steps[s];
    uint32_t first = 0;
    switch (ps.kind) {
    case MP_STEP_COMPUTE:
    case MP_STEP_RECOMPUTE:
        first = reads_too ? 0 : c.n_in[s];
        break;
    case MP_STEP_PREFETCH:
        break;
    case MP_STEP_FREE:
        if (!c.o->poison_free)
            return false;
        break;
    default:
        return false;
    }
    for (uint32_t k = first; k < ps.n_refs; k++) {
        uint64_t a, b;
        if (ref_range(c, c.p->refs[ps.refs + k], &a, &b) && a < hi && lo < b)
            return true;
    }
    return false;
}

// where each OFFLOAD's copy is issued: before the step after the last
// earlier step that wrote any of its bytes (its producer, or a PREFETCH)
void plan_copies(run_ctx &c)
{
    const mpv_program *p = c.p;
    c.issue.assign(p->n_steps + 1, std::vector<uint32_t>());
    c.n_in.assign(p->n_steps, 0);
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step &ps = p->steps[s];
        if (ps.kind == MP_STEP_COMPUTE || ps.kind == MP_STEP_RECOMPUTE) {
            mp_node_info ni;
            mp_graph_node_info(p->graph, ps.index, &ni);
            c.n_in[s] = ni.n_inputs;
        }
    }
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step &ps = p->steps[s];
        uint64_t lo, hi;
        if (ps.kind != MP_STEP_OFFLOAD ||
            !ref_range(c, p->refs[ps.refs], &lo, &hi))
            continue;
        uint32_t at = 0;
        for (uint32_t j = s; j-- > 0;)
            if (step_hits(c, j, lo, hi, false)) {
                at = j + 1;
                break;
            }
        c.issue[at].push_back(s);
    }
}

bool fail(mpv_result *r, const char *what, const char *err)
{
    snprintf(r->error, sizeof r->error, "%s: %s", what, err ? err : "failed");
    return false;
}

#define CK(call)                                                             \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess)                                               \
            return fail(c.r, #call, cudaGetErrorString(e_));                 \
    } while (0)

uint64_t used_now()
{
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    return (uint64_t)(tot - fr);
}

void *ref_ptr(const run_ctx &c, const mpv_ref &rf, void *const *tensor_ptr)
{
    if (rf.tensor == MP_NONE || rf.bytes == 0)
        return NULL;
    if (rf.space == MPV_SPACE_WEIGHTS)
        return c.weights + rf.offset;
    if (rf.space == MPV_SPACE_ARENA)
        return tensor_ptr ? (unsigned char *)tensor_ptr[rf.tensor] + rf.view_off
                          : c.arena + rf.offset;
    if (rf.space == MPV_SPACE_SCRATCH) // a fused value: its own block in
        return tensor_ptr ? (unsigned char *)tensor_ptr[rf.tensor] + rf.view_off // the
                          : c.ws + rf.offset;                            // reference
    return NULL;
}

// the operands of the node of step ps into si (its vectors refilled):
// planned (tensor_ptr NULL: arena offsets) or reference (tensor_ptr per
// root); any number of inputs and outputs (the foreach optimizer node
// reads every parameter's gradient)
void make_io(const run_ctx &c, const mpv_step &ps, void *const *tensor_ptr,
             run_ctx::step_io &si)
{
    const mpv_program *p = c.p;
    mp_node_info ni;
    mp_graph_node_info(p->graph, ps.index, &ni);
    si.in.clear();
    si.inb.clear();
    si.out.clear();
    si.outb.clear();
    si.odt.clear();
    for (uint32_t k = 0; k < ni.n_inputs; k++) {
        const mpv_ref &rf = p->refs[ps.refs + k];
        si.in.push_back(ref_ptr(c, rf, tensor_ptr));
        si.inb.push_back(rf.bytes);
    }
    for (uint32_t k = 0; k < ni.n_outputs; k++) {
        const mpv_ref &rf = p->refs[ps.refs + ni.n_inputs + k];
        mp_tensor_info ti;
        mp_graph_tensor_info(p->graph, ni.outputs[k], &ti);
        si.out.push_back(ref_ptr(c, rf, tensor_ptr));
        si.outb.push_back(rf.bytes);
        si.odt.push_back(ti.dtype);
    }
    // never empty: data() is a valid pointer
    si.in.push_back(NULL);
    si.inb.push_back(0);
    si.out.push_back(NULL);
    si.outb.push_back(0);
    si.odt.push_back(0);
    si.io = mpv_io{si.in.data(), si.inb.data(), ni.n_inputs, si.out.data(),
                   si.outb.data(), si.odt.data(), ni.n_outputs, c.ws,
                   ps.index};
    si.made = true;
}

// MEMPLAN_NAN_TRACE set (debugging a kernel): after each node, its
// float32 and bfloat16 outputs are read back and the nodes whose outputs
// hold a NaN or an infinity named on stderr (the first 20); set to
// "hash", every node's outputs are hashed (FNV-1a) and printed, so that
// two runs' lines can be compared (the first node whose outputs differ
// between the planned and the reference run). Slow: each node waits.
void nan_trace(const run_ctx &c, const mpv_step &ps,
               const run_ctx::step_io &si)
{
    static int shown = 0;
    const bool hash = c.nan_trace == 2;
    if ((!hash && shown >= 20) || cudaStreamSynchronize(c.s) != cudaSuccess)
        return;
    mp_node_info ni;
    mp_graph_node_info(c.p->graph, ps.index, &ni);
    for (uint32_t k = 0; k < ni.n_outputs; k++) {
        int dt = si.odt[k];
        if (!si.out[k] || !si.outb[k])
            continue;
        std::vector<unsigned char> h(si.outb[k]);
        if (cudaMemcpy(h.data(), si.out[k], h.size(),
                       cudaMemcpyDeviceToHost) != cudaSuccess)
            return;
        size_t bad = 0, n = 0;
        if (dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_BFLOAT16) {
            n = dt == MP_DTYPE_FLOAT32 ? h.size() / 4 : h.size() / 2;
            for (size_t i = 0; i < n; i++) {
                uint32_t u = 0;
                if (dt == MP_DTYPE_FLOAT32)
                    memcpy(&u, h.data() + 4 * i, 4);
                else
                    u = (uint32_t)(h[2 * i] | (h[2 * i + 1] << 8)) << 16;
                bad += (u & 0x7f800000u) == 0x7f800000u;
            }
        }
        if (hash) {
            uint64_t f = mpv_fnv1a(MPV_FNV_BASIS, h.data(), h.size());
            fprintf(stderr, "trace '%s' %u %016llx %zu\n", ni.name, k,
                    (unsigned long long)f, bad);
        } else if (bad && shown < 20) {
            fprintf(stderr, "nan-trace: node '%s' (%s) output %u: %zu of %zu "
                    "not finite\n", ni.name, ni.op, k, bad, n);
            shown++;
        }
    }
}

// an MPV_L_COLL launch (validate --ranks): NCCL on the node's operands at
// the launch's offsets; without NCCL (one GPU) nothing
const char *run_coll(run_ctx &c, const mpv_launch *l, const mpv_io &io)
{
    if (!c.o->nccl)
        return "a collective lowered for NCCL, run without it";
    const auto &k = l->p.coll;
    const unsigned char *send =
        l->in[0] >= 0 ? (const unsigned char *)io.in[l->in[0]] : NULL;
    unsigned char *recv =
        l->out >= 0     ? (unsigned char *)io.out[l->out]
        : l->in[1] >= 0 ? (unsigned char *)io.in[l->in[1]]
                        : NULL;
    if (send)
        send += k.soff * k.esize;
    if (recv)
        recv += k.doff * k.esize;
    return mpv_nccl_call(c.o->nccl, l, send, recv, (void *)c.s);
}

// the launches of the node of step ps on the operands si; a node's NCCL
// calls in one NCCL group
bool launch_io(run_ctx &c, const mpv_step &ps, const run_ctx::step_io &si)
{
    const mpv_program *p = c.p;
    const mpv_node &pn = p->nodes[ps.index];
    bool group = false;
    for (uint32_t i = 0; i < pn.count && c.o->nccl; i++)
        group |= p->launches[pn.first + i].kind == MPV_L_COLL;
    const char *ge = group ? mpv_nccl_group(c.o->nccl, 1) : NULL;
    if (ge)
        return fail(c.r, "ncclGroupStart", ge);
    for (uint32_t i = 0; i < pn.count; i++) {
        const mpv_launch *l = &p->launches[pn.first + i];
        if (l->out >= 0 && !si.out[l->out])
            continue; // zero-byte output
        const char *e = l->kind == MPV_L_CONV_DNN
                            ? mpv_dnn_run(c.dnn, pn.first + i, l, &si.io, c.s)
                        : l->kind == MPV_L_COLL
                            ? run_coll(c, l, si.io)
                            : mpv_run_launch(l, &si.io, c.h, c.s);
        if (e && group)
            mpv_nccl_group(c.o->nccl, 0);
        if (e) {
            mp_node_info ni;
            mp_graph_node_info(p->graph, ps.index, &ni);
            char what[200];
            snprintf(what, sizeof what, "node '%s' (%s)", ni.name, ni.op);
            return fail(c.r, what, e);
        }
    }
    if (group && (ge = mpv_nccl_group(c.o->nccl, 0)) != NULL)
        return fail(c.r, "ncclGroupEnd", ge);
    if (c.nan_trace)
        nan_trace(c, ps, si);
    return true;
}

// the launches of the node of step ps (a step of the schedule, or of the
// setup that computes folded constants), its operands made now
bool run_step(run_ctx &c, const mpv_step &ps, void *const *tensor_ptr)
{
    make_io(c, ps, tensor_ptr, c.scratch_io);
    return launch_io(c, ps, c.scratch_io);
}

// Runs the node of step s (planned: arena offsets, the operands made on
// the step's first run and kept; reference: tensor_ptr per root).
bool run_node(run_ctx &c, uint32_t s, void *const *tensor_ptr)
{
    const mpv_program *p = c.p;
    const mpv_step &ps = p->steps[s];
    if (!p->nodes[ps.index].run)
        return true;
    if (tensor_ptr)
        return run_step(c, ps, tensor_ptr);
    if (c.planned_io.size() != p->n_steps)
        c.planned_io.resize(p->n_steps);
    run_ctx::step_io &si = c.planned_io[s];
    if (!si.made)
        make_io(c, ps, NULL, si);
    return launch_io(c, ps, si);
}

// the gradients that the optimizer step at step s reads, copied to the
// host before it runs (planned run; the step's copies were waited for)
bool grab_grads(run_ctx &c, uint32_t s)
{
    for (size_t k = 0; k < c.grads.size(); k++) {
        if (c.grads[k].step != s)
            continue;
        const mpv_step &ps = c.p->steps[s];
        const void *src = ref_ptr(c, c.p->refs[ps.refs + 1], NULL);
        if (!src)
            continue;
        CK(cudaMemcpyAsync(c.gvals.data() + c.grad_at[k], src,
                           c.grads[k].bytes, cudaMemcpyDeviceToHost, c.s));
        CK(cudaStreamSynchronize(c.s));
    }
    return true;
}

bool upload_state(run_ctx &c, void *const *tensor_ptr)
{
    const mpv_program *p = c.p;
    if (p->weights_bytes)
        CK(cudaMemcpyAsync(c.weights, c.hweights.data(), p->weights_bytes,
                           cudaMemcpyHostToDevice, c.s));
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        uint32_t t = p->inputs[i];
        void *dst = tensor_ptr ? tensor_ptr[t] : c.arena + p->in_offs[i];
        CK(cudaMemcpyAsync(dst, c.hinputs[i].data(), c.hinputs[i].size(),
                           cudaMemcpyHostToDevice, c.s));
    }
    // the folded constants the weights buffer holds without known values,
    // from the weights just uploaded
    for (uint32_t k = 0; k < p->n_setup; k++)
        if (!run_step(c, p->setup[k], tensor_ptr))
            return false;
    CK(cudaStreamSynchronize(c.s));
    return true;
}

bool download_outputs(run_ctx &c, void *const *tensor_ptr,
                      std::vector<unsigned char> &buf)
{
    const mpv_program *p = c.p;
    buf.clear();
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        uint32_t t = p->outputs[i];
        mp_tensor_info ti;
        mp_graph_tensor_info(p->graph, t, &ti);
        size_t at = buf.size();
        buf.resize(at + ti.bytes);
        const void *src = tensor_ptr ? tensor_ptr[t] : c.arena + p->out_offs[i];
        CK(cudaMemcpy(buf.data() + at, src, ti.bytes, cudaMemcpyDeviceToHost));
    }
    return true;
}

// mode 0: plain (total time), 1: per-step events and memory samples
bool run_planned(run_ctx &c, int mode, float *total_ms, uint64_t *peak_used)
{
    const mpv_program *p = c.p;
    // mode 2: issued into a stream capture (time_graph): the state is
    // uploaded before it, and nothing waits or times here
    const bool capture = mode == 2;
    if (!capture && !upload_state(c, NULL))
        return false;
    cudaEvent_t t0 = NULL;
    if (!capture) {
        CK(cudaEventRecord(c.ev[p->n_steps], c.s));
        CK(cudaEventCreate(&t0));
        CK(cudaEventRecord(t0, c.s));
    }
    std::vector<pending_copy> pend;
    // issues the copy of step cs_step on the copy stream after everything
    // given to the compute stream so far
    auto copy = [&](uint32_t cs_step) -> bool {
        const mpv_step &ps = p->steps[cs_step];
        const mpv_ref &rf = p->refs[ps.refs];
        void *host = c.pinned[rf.tensor];
        uint64_t lo, hi;
        if (!host || !ref_range(c, rf, &lo, &hi))
            return true;
        CK(cudaEventRecord(c.evc, c.s));
        CK(cudaStreamWaitEvent(c.cs, c.evc, 0));
        if (ps.kind == MP_STEP_OFFLOAD)
            CK(cudaMemcpyAsync(host, c.arena + rf.offset, rf.bytes,
                               cudaMemcpyDeviceToHost, c.cs));
        else
            CK(cudaMemcpyAsync(c.arena + rf.offset, host, rf.bytes,
                               cudaMemcpyHostToDevice, c.cs));
        CK(cudaEventRecord(c.cev[cs_step], c.cs));
        pend.push_back({lo, hi, c.cev[cs_step], ps.kind == MP_STEP_PREFETCH});
        return true;
    };
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step &ps = p->steps[s];
        if (mode == 1)
            CK(cudaEventRecord(c.ev[s], c.s));
        for (uint32_t o : c.issue[s])
            if (!copy(o))
                return false;
        // wait for the copies this step depends on: a copy to the host
        // before its bytes are overwritten, a copy back before its bytes
        // are read or overwritten
        for (size_t i = 0; i < pend.size();) {
            if (step_hits(c, s, pend[i].lo, pend[i].hi, pend[i].prefetch)) {
                CK(cudaStreamWaitEvent(c.s, pend[i].e, 0));
                pend[i] = pend.back();
                pend.pop_back();
            } else {
                i++;
            }
        }
        switch (ps.kind) {
        case MP_STEP_COMPUTE:
        case MP_STEP_RECOMPUTE:
            if (c.grab && !grab_grads(c, s))
                return false;
            if (!run_node(c, s, NULL))
                return false;
            break;
        case MP_STEP_FREE:
            if (c.o->poison_free && p->refs[ps.refs].space == MPV_SPACE_ARENA &&
                p->refs[ps.refs].bytes)
                CK(cudaMemsetAsync(c.arena + p->refs[ps.refs].offset, 0xff,
                                   p->refs[ps.refs].bytes, c.s));
            break;
        case MP_STEP_PREFETCH:
            if (!copy(s))
                return false;
            break;
        default: // OFFLOAD: issued earlier, waited for by the next writer
            break;
        }
        if (mode == 1 && c.o->sample_memory) {
            CK(cudaStreamSynchronize(c.s));
            uint64_t u = used_now();
            if (u > *peak_used)
                *peak_used = u;
        }
    }
    // the run ends when its copies have ended too
    for (const pending_copy &pc : pend)
        CK(cudaStreamWaitEvent(c.s, pc.e, 0));
    if (capture)
        return true;
    cudaEvent_t t1;
    CK(cudaEventCreate(&t1));
    CK(cudaEventRecord(t1, c.s));
    CK(cudaStreamSynchronize(c.s));
    CK(cudaEventElapsedTime(total_ms, t0, t1));
    if (mode == 1) {
        c.r->steps_ms_sum = 0;
        for (uint32_t s = 0; s < p->n_steps; s++) {
            float ms = 0;
            cudaEvent_t e1 = s + 1 < p->n_steps ? c.ev[s + 1] : t1;
            CK(cudaEventElapsedTime(&ms, c.ev[s], e1));
            c.r->steps[s].ms = ms;
            c.r->steps_ms_sum += ms;
        }
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return true;
}

bool run_reference(run_ctx &c, std::vector<unsigned char> &outs)
{
    const mpv_program *p = c.p;
    const mp_graph *g = p->graph;
    uint32_t nt = mp_graph_num_tensors(g), nn = mp_graph_num_nodes(g);
    std::vector<void *> ptr(nt, NULL);
    std::vector<uint32_t> uses(nt, 0);
    std::vector<uint8_t> keep(nt, 0), done(nn, 0);
    std::vector<mp_tensor_info> ti(nt);
    for (uint32_t t = 0; t < nt; t++)
        mp_graph_tensor_info(g, t, &ti[t]);
    auto root = [&](uint32_t t) {
        while (ti[t].alias_of != MP_NONE)
            t = ti[t].alias_of;
        return t;
    };
    auto in_arena = [&](uint32_t t) {
        return ti[t].alias_of == MP_NONE && ti[t].bytes > 0 &&
               p->woff[t] == UINT64_MAX;
    };
    for (uint32_t t = 0; t < nt; t++)
        if (ti[t].is_output)
            keep[root(t)] = 1;
    // use counts: distinct consumer nodes of each root (through views)
    std::vector<std::vector<uint32_t>> node_roots(nn);
    for (uint32_t i = 0; i < nn; i++) {
        mp_node_info ni;
        mp_graph_node_info(g, i, &ni);
        for (uint32_t k = 0; k < ni.n_inputs; k++) {
            if (ni.inputs[k] == MP_NONE)
                continue;
            uint32_t r = root(ni.inputs[k]);
            bool seen = false;
            for (uint32_t x : node_roots[i])
                seen |= x == r;
            if (!seen) {
                node_roots[i].push_back(r);
                uses[r]++;
            }
        }
    }
    cudaMemPool_t pool;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CK(cudaMemPoolCreate(&pool, &props));
    uint64_t thr = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
    uint64_t al = p->alignment, live = 0, live_max = 0;
    auto sz = [&](uint32_t t) { return (ti[t].bytes + al - 1) / al * al; };
    auto alloc = [&](uint32_t t) -> bool {
        CK(cudaMallocFromPoolAsync(&ptr[t], ti[t].bytes, pool, c.s));
        live += sz(t);
        return true;
    };
    auto release = [&](uint32_t t) -> bool {
        CK(cudaFreeAsync(ptr[t], c.s));
        ptr[t] = NULL;
        live -= sz(t);
        return true;
    };
    for (uint32_t i = 0; i < p->n_inputs; i++)
        if (!alloc(p->inputs[i]))
            return false;
    live_max = live;
    if (!upload_state(c, ptr.data()))
        return false;
    cudaEvent_t t0, t1;
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));
    CK(cudaEventRecord(t0, c.s));
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step &ps = p->steps[s];
        if (ps.kind != MP_STEP_COMPUTE || done[ps.index])
            continue;
        done[ps.index] = 1;
        mp_node_info ni;
        mp_graph_node_info(g, ps.index, &ni);
        for (uint32_t o = 0; o < ni.n_outputs; o++) {
            uint32_t t = ni.outputs[o];
            if (in_arena(t) && !ptr[t] && !alloc(t))
                return false;
        }
        if (live > live_max)
            live_max = live;
        if (!run_node(c, s, ptr.data()))
            return false;
        for (uint32_t r : node_roots[ps.index])
            if (uses[r] && --uses[r] == 0 && ptr[r] && !keep[r] &&
                !release(r))
                return false;
        for (uint32_t o = 0; o < ni.n_outputs; o++) {
            uint32_t t = ni.outputs[o];
            if (ptr[t] && !uses[t] && !keep[t] && !release(t))
                return false;
        }
    }
    CK(cudaEventRecord(t1, c.s));
    CK(cudaStreamSynchronize(c.s));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    c.r->reference_ms = ms;
    c.r->ref_live_max = live_max;
    if (!download_outputs(c, ptr.data(), outs))
        return false;
    for (uint32_t t = 0; t < nt; t++)
        if (ptr[t])
            cudaFreeAsync(ptr[t], c.s);
    CK(cudaStreamSynchronize(c.s));
    uint64_t hi = 0, rhi = 0;
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &hi));
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &rhi));
    c.r->ref_pool_high = hi;
    c.r->ref_pool_reserved_high = rhi;
    cudaMemPoolDestroy(pool);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return true;
}

void output_stats(const mpv_program *p, const std::vector<unsigned char> &buf,
                  mpv_result *r)
{
    size_t at = 0;
    r->max_abs_output = 0;
    r->nonfinite_outputs = 0;
    r->outputs_hash = mpv_fnv1a(MPV_FNV_BASIS, buf.data(), buf.size());
    bool first = true;
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(p->graph, p->outputs[i], &ti);
        if (ti.dtype == MP_DTYPE_FLOAT32)
            for (uint64_t k = 0; k + 4 <= ti.bytes; k += 4) {
                float f;
                memcpy(&f, &buf[at + k], 4);
                if (first)
                    r->first_output = f;
                first = false;
                if (!(f == f) || f > 3e38f || f < -3e38f)
                    r->nonfinite_outputs++;
                else if ((double)(f < 0 ? -f : f) > r->max_abs_output)
                    r->max_abs_output = f < 0 ? -f : f;
            }
        at += ti.bytes;
    }
}

// The planned run as one CUDA graph: its launches captured once, then
// replayed twice, the second timed (r->planned_graph_ms). A static plan
// needs no decision on the host between kernels, so the graph removes
// the launch latency that separates small kernels. When the run cannot be
// captured (a library call that may not be, copies to the host), the
// reason goes to r->graph_note and the figure stays 0; the run's result
// does not change.
bool time_graph(run_ctx &c)
{
    mpv_result *r = c.r;
    char keep[sizeof r->error];
    memcpy(keep, r->error, sizeof keep);
    if (!upload_state(c, NULL))
        return false;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    const char *why = NULL;
    float ms = 0, dummy = 0;
    uint64_t peak = 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaStreamBeginCapture(c.s, cudaStreamCaptureModeThreadLocal) !=
        cudaSuccess) {
        why = "cudaStreamBeginCapture";
    } else {
        bool ok = run_planned(c, 2, &dummy, &peak);
        cudaError_t ec = cudaStreamEndCapture(c.s, &g);
        if (!ok)
            why = r->error[0] ? r->error : "capture";
        else if (ec != cudaSuccess)
            why = cudaGetErrorString(ec);
        else if (cudaGraphInstantiate(&x, g, 0) != cudaSuccess)
            why = "cudaGraphInstantiate";
        else if (cudaEventCreate(&e0) != cudaSuccess ||
                 cudaEventCreate(&e1) != cudaSuccess ||
                 cudaGraphLaunch(x, c.s) != cudaSuccess ||
                 cudaEventRecord(e0, c.s) != cudaSuccess ||
                 cudaGraphLaunch(x, c.s) != cudaSuccess ||
                 cudaEventRecord(e1, c.s) != cudaSuccess ||
                 cudaStreamSynchronize(c.s) != cudaSuccess ||
                 cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
            why = "the graph's replay";
    }
    if (why)
        snprintf(r->graph_note, sizeof r->graph_note, "%s", why);
    else
        r->planned_graph_ms = ms;
    cudaGetLastError(); // a failed capture's error is not the run's
    memcpy(r->error, keep, sizeof keep);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (x)
        cudaGraphExecDestroy(x);
    if (g)
        cudaGraphDestroy(g);
    CK(cudaStreamSynchronize(c.s));
    return true;
}

// --step-times: one more planned run, each step between two events and
// nothing else between them (no memory samples, which synchronise the
// stream after every step): the per-step times the cost model predicts
bool time_steps_alone(run_ctx &c)
{
    mpv_options o = *c.o;
    o.sample_memory = 0;
    const mpv_options *keep = c.o;
    c.o = &o;
    float ms = 0;
    uint64_t peak = 0;
    bool ok = run_planned(c, 1, &ms, &peak);
    c.o = keep;
    c.r->steps_events_only = ok;
    return ok;
}

} // namespace

extern "C" int mpv_execute(const mpv_program *p, const mpv_options *o,
                           mpv_result *r)
{
    memset(r, 0, sizeof *r);
    run_ctx c;
    c.p = p;
    c.o = o;
    const char *nt = getenv("MEMPLAN_NAN_TRACE");
    c.nan_trace = !nt ? 0 : strcmp(nt, "hash") == 0 ? 2 : 1;
    c.r = r;
    c.weights = c.ws = c.arena = NULL;
    c.dnn = NULL;
    bool ok = false;
    std::vector<unsigned char> out_a, out_b, out_ref;
    {
        // driver figures: context first, then each buffer on its own
        if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
            fail(r, "cudaSetDevice", "no usable CUDA device");
            return -1;
        }
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            snprintf(r->device, sizeof r->device, "%s", prop.name);
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        r->total_mem = tot;
        r->ctx_bytes = tot - fr;
        // the driver's allocation granularity, through the runtime's entry
        // point lookup (the executor does not link libcuda itself)
        {
            typedef CUresult (*gran_fn)(size_t *, const CUmemAllocationProp *,
                                        CUmemAllocationGranularity_flags);
            void *fp = NULL;
            cudaDriverEntryPointQueryResult q;
            CUmemAllocationProp ap;
            memset(&ap, 0, sizeof ap);
            ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            ap.location.id = 0;
            size_t gran = 0;
            if (cudaGetDriverEntryPointByVersion("cuMemGetAllocationGranularity",
                                                 &fp, 12000, cudaEnableDefault,
                                                 &q) == cudaSuccess &&
                q == cudaDriverEntryPointSuccess && fp &&
                ((gran_fn)fp)(&gran, &ap, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
                    CUDA_SUCCESS)
                r->granularity = gran;
        }
        uint64_t u0 = used_now();
        if (cublasCreate(&c.h) != CUBLAS_STATUS_SUCCESS) {
            fail(r, "cublasCreate", NULL);
            return -1;
        }
        r->cublas_bytes = used_now() - u0;
        // validate --ranks: the communicators (their buffers) before the
        // plan's buffers, apart like cuBLAS's
        if (o->nccl) {
            char why[300];
            u0 = used_now();
            if (mpv_nccl_init(o->nccl, o->nccl_id, &p->rank, why,
                              sizeof why) != 0) {
                fail(r, "NCCL", why);
                cublasDestroy(c.h);
                return -1;
            }
            r->nccl_bytes = used_now() - u0;
        }
        if (mpv_dnn_needed(p)) {
            u0 = used_now();
            const char *e = mpv_dnn_create(&c.dnn, o ? o->conv_fp32 : 0);
            if (e) {
                fail(r, "cudnnCreate", e);
                cublasDestroy(c.h);
                return -1;
            }
            r->cudnn_bytes = used_now() - u0;
        }
        c.r->n_steps = p->n_steps;
        c.r->steps = (mpv_step_time *)calloc(p->n_steps + 1, sizeof *c.r->steps);
        c.ev.resize(p->n_steps + 1);
        c.pinned.assign(mp_graph_num_tensors(p->graph), NULL);
        // host copies of weights and inputs
        c.hweights.resize(p->weights_bytes);
        if (p->weights_bytes && !o->weights_dir)
            mpv_weights_init(p, c.hweights.data(), o->seed);
        c.hinputs.resize(p->n_inputs);
        std::vector<void *> inb(p->n_inputs);
        for (uint32_t i = 0; i < p->n_inputs; i++) {
            mp_tensor_info ti;
            mp_graph_tensor_info(p->graph, p->inputs[i], &ti);
            c.hinputs[i].resize(ti.bytes);
            inb[i] = c.hinputs[i].data();
            if (!o->inputs_dir)
                mpv_input_init(p, p->inputs[i], c.hinputs[i].data(), o->seed);
        }
        // --weights, --inputs: the values from files
        if ((o->weights_dir &&
             mpv_weights_read(p, o->weights_dir, c.hweights.data(),
                              o->seed) != MP_OK) ||
            (o->inputs_dir &&
             mpv_inputs_read(p, o->inputs_dir, inb.data()) != MP_OK)) {
            fail(r, "values", mp_ctx_message(p->ctx));
            cublasDestroy(c.h);
            return -1;
        }
        c.grab = false;
        if (o->dump_dir) {
            c.grads.resize(mpv_grads_find(p, NULL));
            mpv_grads_find(p, c.grads.data());
            uint64_t at = 0;
            for (const mpv_grad &gr : c.grads) {
                c.grad_at.push_back(at);
                at += gr.bytes;
            }
            c.gvals.resize(at);
        }
    }
    auto body = [&]() -> bool {
        CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&c.cs, cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&c.evc, cudaEventDisableTiming));
        c.cev.assign(p->n_steps, NULL);
        for (uint32_t s = 0; s < p->n_steps; s++)
            if (p->steps[s].kind == MP_STEP_OFFLOAD ||
                p->steps[s].kind == MP_STEP_PREFETCH)
                CK(cudaEventCreateWithFlags(&c.cev[s], cudaEventDisableTiming));
        plan_copies(c);
        for (auto &e : c.ev)
            CK(cudaEventCreate(&e));
        if (cublasSetStream(c.h, c.s) != CUBLAS_STATUS_SUCCESS)
            return fail(r, "cublasSetStream", NULL);
        // the convolutions' algorithms, chosen once before anything is
        // measured (their trial calls' buffers are freed again)
        if (c.dnn) {
            uint64_t u0 = used_now();
            const char *e = mpv_dnn_prepare(c.dnn, p, c.s);
            mpv_dnn_stats(c.dnn, r);
            if (e)
                return fail(r, "cuDNN", e);
            // what cuDNN kept of its first calls goes with its handle
            uint64_t u1 = used_now();
            r->cudnn_bytes += u1 > u0 ? u1 - u0 : 0;
        }
        // pinned host staging for OFFLOAD/PREFETCH
        for (uint32_t s = 0; s < p->n_steps; s++) {
            const mpv_step &ps = p->steps[s];
            if (ps.kind != MP_STEP_OFFLOAD)
                continue;
            const mpv_ref &rf = p->refs[ps.refs];
            if (!c.pinned[rf.tensor] && rf.bytes) {
                CK(cudaHostAlloc(&c.pinned[rf.tensor], rf.bytes,
                                 cudaHostAllocDefault));
                r->staging_host_bytes += rf.bytes;
            }
        }
        CK(cudaDeviceSynchronize());
        // every buffer is asked for rounded up to the driver's granularity:
        // the device gives whole granules anyway, and the runtime serves
        // smaller requests from pages it already holds, where the driver's
        // figures cannot see them (a 512-byte arena measured 0 bytes)
        uint64_t gr = r->granularity ? r->granularity : 1;
        auto gran_up = [gr](uint64_t v) { return (v + gr - 1) / gr * gr; };
        uint64_t base = used_now();
        uint64_t u = base;
        if (p->weights_bytes)
            CK(cudaMalloc((void **)&c.weights, gran_up(p->weights_bytes)));
        r->weights_measured = used_now() - u;
        u = used_now();
        uint64_t wsb = gran_up(p->workspace_bytes + CUBLAS_WS_BYTES);
        CK(cudaMalloc((void **)&c.ws, wsb));
        r->workspace_measured = used_now() - u;
        if (cublasSetWorkspace(c.h, c.ws + p->workspace_bytes,
                               CUBLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS)
            return fail(r, "cublasSetWorkspace", NULL);
        u = used_now();
        r->arena_device_bytes = gran_up(p->arena_bytes);
        if (p->arena_bytes)
            CK(cudaMalloc((void **)&c.arena, r->arena_device_bytes));
        r->arena_measured = used_now() - u;
        uint64_t after = used_now();
        float ms = 0;
        uint64_t peak = after;
        // warm-up (module loading, cuBLAS heuristics), then the measured
        // runs: per-step (events, memory samples) and total
        if (!run_planned(c, 0, &ms, &peak))
            return false;
        // what the first run allocated behind our back (cuBLAS, module
        // loading) is the libraries' lazy memory, reported apart
        uint64_t warm = used_now();
        r->lazy_bytes = warm > after ? warm - after : 0;
        peak = warm;
        if (!run_planned(c, 1, &ms, &peak))
            return false;
        if (!download_outputs(c, NULL, out_a))
            return false;
        r->peak_measured = peak - base - r->lazy_bytes;
        r->run_extra_bytes = peak > warm ? peak - warm : 0;
        if (!run_planned(c, 0, &ms, &peak))
            return false;
        r->planned_ms = ms;
        if (!download_outputs(c, NULL, out_b))
            return false;
        r->planned_repeatable = out_a == out_b;
        // the weights after one step (--ranks compares them across ranks)
        if (o->keep_weights && p->weights_bytes) {
            r->weights_after = (unsigned char *)malloc(p->weights_bytes);
            if (!r->weights_after)
                return fail(r, "weights", "out of memory");
            CK(cudaMemcpy(r->weights_after, c.weights, p->weights_bytes,
                          cudaMemcpyDeviceToHost));
        }
        if (o->dump_dir) {
            std::vector<const void *> ins(p->n_inputs);
            for (uint32_t i = 0; i < p->n_inputs; i++)
                ins[i] = c.hinputs[i].data();
            // a training step's optimizer updates weights in place: the
            // weights after the last planned run go along
            bool updates = false;
            for (uint32_t i = 0; i < p->n_launches; i++)
                updates |= p->launches[i].kind == MPV_L_AXPY ||
                           p->launches[i].kind == MPV_L_OPT_STEP;
            // one more planned run copies each parameter's gradient out
            // as its optimizer step reads it (the timed runs stay free of
            // the copies)
            if (!c.grads.empty()) {
                std::vector<unsigned char> out_g;
                c.grab = true;
                bool okg = run_planned(c, 0, &ms, &peak);
                c.grab = false;
                if (!okg || !download_outputs(c, NULL, out_g))
                    return false;
                if (out_g != out_a)
                    return fail(r, "--dump", "the run that copied the "
                                "gradients out gave other outputs");
            }
            std::vector<unsigned char> wafter;
            if (updates && p->weights_bytes) {
                wafter.resize(p->weights_bytes);
                CK(cudaMemcpy(wafter.data(), c.weights, p->weights_bytes,
                              cudaMemcpyDeviceToHost));
            }
            if (mpv_dump_values(p, o->dump_dir, c.hweights.data(), ins.data(),
                                out_a.data(),
                                wafter.empty() ? NULL : wafter.data(),
                                c.grads.data(), (uint32_t)c.grads.size(),
                                c.gvals.data()) != MP_OK)
                return fail(r, o->dump_dir, mp_ctx_message(p->ctx));
        }
        r->output_bytes = out_a.size();
        output_stats(p, out_a, r);
        if (o->keep_outputs && !out_a.empty()) {
            r->outputs = (unsigned char *)malloc(out_a.size());
            if (!r->outputs)
                return fail(r, "outputs", "out of memory");
            memcpy(r->outputs, out_a.data(), out_a.size());
        }
        if (o->reference) {
            if (!run_reference(c, out_ref))
                return false;
            r->outputs_identical = out_ref == out_a;
        }
        if (o->step_times && !time_steps_alone(c))
            return false;
        // last: the replays update the weights again. NCCL's calls are
        // not captured (each rank would have to capture and replay in
        // step): the figure stays 0
        if (o->nccl && p->n_coll)
            snprintf(r->graph_note, sizeof r->graph_note,
                     "NCCL calls: the run is not captured");
        else if (!time_graph(c))
            return false;
        return true;
    };
    ok = body();
    cudaDeviceSynchronize();
    if (c.arena)
        cudaFree(c.arena);
    if (c.ws)
        cudaFree(c.ws);
    if (c.weights)
        cudaFree(c.weights);
    for (void *h : c.pinned)
        if (h)
            cudaFreeHost(h);
    mpv_dnn_destroy(c.dnn);
    cublasDestroy(c.h);
    return ok ? 0 : -1;
}
