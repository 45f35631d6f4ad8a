/* The cost model: FLOPs and bytes of each node from its op registry entry
 * (the cost class in the entry's flags), and time on a device profile as
 * a roofline, max(FLOPs / F, bytes / B), plus a fixed kernel overhead: F
 * and B are the calibrated throughputs of the node's kernel class (GEMM
 * and conv by shape class, bandwidth by pointwise, reduction or move)
 * where the profile has them, else the peak of the dtype and the memory
 * bandwidth; without a profile, the node's given figures alone
 * (mp_node_cost, the recompute solvers' clock; docs/cost-model.md). */
#include "ops.h"
#include "cost.h"

#include <math.h>
#include <string.h>

/* Elements of a tensor: from its shape when known, else from its bytes
 * and element size (4 bytes when the dtype is unknown). */
static double numel(const mp__tensor *t)
{
    if (t->rank >= 0) {
        double n = 1;
        int known = 1;
        for (int32_t i = 0; i < t->rank; i++) {
            if (t->dims[i] < 0) {
                known = 0;
                break;
            }
            n *= (double)t->dims[i];
        }
        if (known)
            return n;
    }
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    return bits ? (double)t->bytes * 8.0 / bits : (double)t->bytes / 4.0;
}

static int dim(const mp__tensor *t, int32_t i, double *out)
{
    if (!t || t->rank < 0)
        return 0;
    if (i < 0)
        i += t->rank;
    if (i < 0 || i >= t->rank || t->dims[i] < 0)
        return 0;
    *out = (double)t->dims[i];
    return 1;
}

static const mp__tensor *in_t(const mp_graph *g, const mp__node *n, uint32_t i)
{
    return i < n->n_in && n->inputs[i] != MP_NONE
               ? &g->tensors[n->inputs[i]]
               : NULL;
}

mp_status mp__node_flops_bytes(const mp_graph *g, uint32_t node, double *flops,
                              double *bytes)
{
    if (!g || node >= g->n_nodes || !flops || !bytes)
        return MP_ERR_INVALID_ARG;
    const mp__node *n = &g->nodes[node];
    /* n->def is set by finalize; an open graph looks the entry up */
    const mp__op_def *def = n->def ? n->def : mp__op_lookup(n->op,
                                                              n->domain);
    double rd = 0, wr = 0, out_el = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->inputs[i] != MP_NONE)
            rd += (double)g->tensors[n->inputs[i]].bytes;
    for (uint32_t o = 0; o < n->n_out; o++) {
        wr += (double)g->tensors[n->outputs[o]].bytes;
        out_el += numel(&g->tensors[n->outputs[o]]);
    }
    if ((def->flags & MP__OPF_VIEW) || n->view) {
        *flops = 0;
        *bytes = 0;
        return MP_OK;
    }
    const mp__tensor *x = in_t(g, n, 0), *w = in_t(g, n, 1);
    const mp__tensor *y = n->n_out ? &g->tensors[n->outputs[0]] : NULL;
    double f = out_el, k = 0;
    switch (MP__OP_COST_CLASS(def)) {
    case MP__COST_MATMUL:
        if (x && y && dim(x, -1, &k))
            f = 2.0 * numel(y) * k;
        break;
    case MP__COST_GEMM:
        if (x && y && x->rank == 2) {
            const mp__attr *ta = mp__node_attr(n, "transA");
            int trans = ta && ta->type == MP__ATTR_INT && ta->v.i != 0;
            if (dim(x, trans ? 0 : 1, &k))
                f = 2.0 * numel(y) * k + (in_t(g, n, 2) ? numel(y) : 0);
        }
        break;
    case MP__COST_CONV:
        if (w && y && dim(w, 0, &k) && k > 0)
            f = 2.0 * numel(y) * numel(w) / k;
        break;
    case MP__COST_CONV_TRANSPOSE:
        if (x && w && dim(w, 0, &k) && k > 0)
            f = 2.0 * numel(x) * numel(w) / k;
        break;
    case MP__COST_POOL: {
        const mp__attr *ks = mp__node_attr(n, "kernel_shape");
        double kk = 1;
        if (ks && ks->type == MP__ATTR_INTS)
            for (uint32_t i = 0; i < ks->n; i++)
                kk *= (double)(ks->v.ints[i] > 0 ? ks->v.ints[i] : 1);
        else if (x && y && numel(y) > 0) /* global pooling */
            kk = numel(x) / numel(y);
        f = out_el * kk;
        break;
    }
    case MP__COST_NORM:
        f = 8.0 * (x ? numel(x) : out_el);
        break;
    case MP__COST_SOFTMAX:
        f = 5.0 * out_el;
        break;
    case MP__COST_MOVE:
        f = 0;
        break;
    case MP__COST_ATTENTION: /* Q [..., Tq, D] and K transposed [..., D, Tk] */
        if (x && w && dim(w, -1, &k))
            f = 4.0 * numel(x) * k;
        break;
    default:
        break;
    }
    *flops = f;
    *bytes = rd + wr;
    return MP_OK;
}

/* ---- the kernel class of a node ------------------------------------------ */

/* The registry entry that says what kind of kernel a node runs: its own,
 * or for a backward node of the training graph ("ConvGrad", unknown to the
 * registry) its forward op's. */
static const mp__op_def *kernel_def(const mp__node *n, const mp__op_def *def,
                                    int *grad)
{
    *grad = 0;
    if (def != mp__op_generic() || !n->op)
        return def;
    size_t len = strlen(n->op);
    char fwd[96];
    if (len <= 4 || len - 4 >= sizeof fwd || strcmp(n->op + len - 4, "Grad"))
        return def;
    memcpy(fwd, n->op, len - 4);
    fwd[len - 4] = '\0';
    const mp__op_def *f = mp__op_lookup(fwd, n->domain);
    if (f == mp__op_generic())
        f = mp__op_lookup(fwd, "");
    *grad = f != mp__op_generic();
    return f;
}

int mp__gemm_class(double m, double n, double k, double flops)
{
    double lo = m < n ? m : n;
    lo = lo < k ? lo : k;
    if (m > 0 && n > 0 && k > 0 && lo < 128)
        return MP_GEMM_SKINNY;
    if (flops < 2.0 * 512 * 512 * 512)
        return MP_GEMM_SMALL;
    if (flops < 2.0 * 2048 * 2048 * 2048)
        return MP_GEMM_MEDIUM;
    return MP_GEMM_LARGE;
}

/* The conv class from its weight [C_out, C_in / group, kh, kw, ...] and
 * its group attribute. */
static int conv_class(const mp__node *n, const mp__tensor *x,
                      const mp__tensor *w)
{
    const mp__attr *ga = mp__node_attr(n, "group");
    double c = 0, one = 1, g = ga && ga->type == MP__ATTR_INT ? (double)ga->v.i
                                                              : 1;
    if (g > 1 && dim(w, 1, &one) && one == 1 && dim(x, 1, &c) && c == g)
        return MP_CONV_DEPTHWISE;
    if (!w || w->rank < 3)
        return MP_CONV_SPATIAL;
    for (int32_t i = 2; i < w->rank; i++)
        if (w->dims[i] != 1)
            return MP_CONV_SPATIAL;
    return g > 1 ? MP_CONV_SPATIAL : MP_CONV_POINTWISE;
}

/* A convolution's gradient node: the class of its forward, from what
 * the gradient saved (x [N, C, ...] and the weight [C_out, C_in / group,
 * kh, ...], after the output gradient) and the group attribute the node
 * keeps: depthwise when the groups are the channels (x's C, or a weight
 * of one input channel per group), pointwise for a 1x1 weight. */
static int conv_grad_class(const mp_graph *g, const mp__node *n)
{
    const mp__attr *ga = mp__node_attr(n, "group");
    int64_t grp = ga && ga->type == MP__ATTR_INT ? ga->v.i : 1;
    for (uint32_t i = n->n_in; i-- > 1;) {
        const mp__tensor *t = in_t(g, n, i);
        if (!t || t->rank < 3)
            continue;
        if (grp > 1)
            return t->dims[1] == grp || (t->dims[1] == 1 &&
                                         t->dims[0] % grp == 0)
                       ? MP_CONV_DEPTHWISE
                       : MP_CONV_SPATIAL;
        /* the last of rank >= 3: the weight when it was saved (else x,
         * whose spatial dims say spatial) */
        for (int32_t k = 2; k < t->rank; k++)
            if (t->dims[k] != 1)
                return MP_CONV_SPATIAL;
        return MP_CONV_POINTWISE;
    }
    return MP_CONV_SPATIAL;
}

int mp__attn_class(double tq)
{
    if (tq <= 0)
        return -1;
    return tq <= 64 ? MP_ATTN_SHORT : tq <= 512 ? MP_ATTN_MEDIUM
                                                : MP_ATTN_LONG;
}

/* The memory-bound family (MP_FAM_*) of an executor kernel and its
 * variant, from the registry entry; -1: not a memory-bound kernel of
 * its own (the synthetic kernel, a view, a collective, unknown). */
static int kernel_family(unsigned kernel, unsigned kop)
{
    switch (kernel) {
    case MP__KERNEL_UNARY: case MP__KERNEL_BINARY: case MP__KERNEL_VARIADIC:
    case MP__KERNEL_CAST: case MP__KERNEL_LOSS_GRAD: case MP__KERNEL_WHERE:
        return MP_FAM_POINTWISE;
    case MP__KERNEL_SGD:
        return kop == MP__KOP_OPT_ADAM || kop == MP__KOP_OPT_ADAMW
                   ? MP_FAM_ADAM
               : kop == MP__KOP_OPT_FOREACH ? MP_FAM_POINTWISE
                                            : MP_FAM_SGD;
    case MP__KERNEL_BATCHNORM:
        return MP_FAM_BATCHNORM;
    case MP__KERNEL_REDUCE: case MP__KERNEL_GLOBAL_POOL:
        return MP_FAM_REDUCTION;
    case MP__KERNEL_SOFTMAX: case MP__KERNEL_LAYERNORM:
        return MP_FAM_ROWNORM;
    case MP__KERNEL_POOL: case MP__KERNEL_LRN: case MP__KERNEL_LOSS:
        return MP_FAM_REDUCE;
    case MP__KERNEL_COPY: case MP__KERNEL_CONCAT: case MP__KERNEL_SPLIT:
    case MP__KERNEL_SLICE: case MP__KERNEL_TRANSPOSE: case MP__KERNEL_GATHER:
    case MP__KERNEL_PAD: case MP__KERNEL_EXPAND: case MP__KERNEL_RESIZE:
        return MP_FAM_COPY;
    default:
        return -1;
    }
}

/* What kind of kernel node runs, and its class (GEMM and conv), its
 * family (memory-bound kernels) or its sequence class (attention). */
static void node_kernel(const mp_graph *g, const mp__node *n,
                        const mp__op_def *def, mp__kernel_desc *k)
{
    int grad;
    const mp__op_def *kd = kernel_def(n, def, &grad);
    const mp__tensor *x = in_t(g, n, 0), *w = in_t(g, n, 1);
    const mp__tensor *y = n->n_out ? &g->tensors[n->outputs[0]] : NULL;
    double m = 0, nn = 0, kk = 0;
    k->kind = MP__KK_OTHER;
    k->cls = 0;
    k->grad = grad;
    k->seq = -1;
    switch (MP__OP_KERNEL(kd)) {
    case MP__KERNEL_MATMUL: case MP__KERNEL_GEMM:
        k->kind = MP__KK_GEMM;
        /* a forward product: Y [..., M, N] from X [..., M, K] */
        if (!grad && x && y && dim(y, -1, &nn) && dim(x, -1, &kk) && nn > 0)
            m = numel(y) / nn;
        if (!grad && MP__OP_KERNEL(kd) == MP__KERNEL_GEMM && x &&
            x->rank == 2) {
            const mp__attr *ta = mp__node_attr(n, "transA");
            if (ta && ta->type == MP__ATTR_INT && ta->v.i && !dim(x, 0, &kk))
                kk = 0;
        }
        k->cls = mp__gemm_class(m, nn, kk, k->flops);
        break;
    case MP__KERNEL_ATTENTION: {
        /* the two products: [Tq, D] x [D, Tk] per batch and head (the
         * GEMM class stands in where attention is not calibrated); the
         * sequence class by Tq, of Q or of the backward's output
         * gradient (input 0 both) */
        double tq = 0;
        k->kind = MP__KK_ATTENTION;
        if (!grad && x && w)
            (void)(dim(x, -2, &m) && dim(x, -1, &kk) && dim(w, -1, &nn));
        k->cls = mp__gemm_class(m, nn, kk, k->flops);
        if (x && x->rank >= 2 && dim(x, -2, &tq))
            k->seq = mp__attn_class(tq);
        break;
    }
    case MP__KERNEL_CONV:
        k->kind = MP__KK_CONV;
        k->cls = grad ? conv_grad_class(g, n) : conv_class(n, x, w);
        break;
    default: {
        int fam = kernel_family(MP__OP_KERNEL(kd), MP__OP_KOP(kd));
        if (fam >= 0) {
            k->kind = MP__KK_MEMORY;
            k->cls = fam;
        }
        break;
    }
    }
}

/* The kernel of node n (entry def) of f FLOPs and b bytes: its kind,
 * class and the dtype of its arithmetic (input 0's, else output 0's) */
static void kernel_desc(const mp_graph *g, const mp__node *n,
                        const mp__op_def *def, double f, double b,
                        mp__kernel_desc *k)
{
    k->flops = f;
    k->bytes = b;
    k->dt = MP_DTYPE_FLOAT32;
    if (n->n_in && n->inputs[0] != MP_NONE &&
        g->tensors[n->inputs[0]].dtype != MP_DTYPE_UNDEFINED)
        k->dt = (mp_dtype)g->tensors[n->inputs[0]].dtype;
    else if (n->n_out && g->tensors[n->outputs[0]].dtype)
        k->dt = (mp_dtype)g->tensors[n->outputs[0]].dtype;
    node_kernel(g, n, def, k);
}

/* The cost without a device profile (the recompute solvers' clock): only
 * the figures the graph gives, in the order mp__node_estimate_ex lets
 * them override the registry's: the node's seconds, else its FLOPs at 1
 * TFLOP/s, else its bytes moved at 1 TB/s, else 1 ns. The offload
 * planner's joint mode puts the device's times (mp__node_estimate_ex)
 * into the nodes' seconds, so that both planners read one clock
 * (docs/cost-model.md). */
double mp_node_cost(const mp_graph *g, uint32_t node)
{
    if (!g || node >= g->n_nodes)
        return 0;
    const mp__node *n = &g->nodes[node];
    if (n->seconds >= 0)
        return n->seconds;
    if (n->flops >= 0)
        return n->flops / 1e12;
    if (n->bytes_moved >= 0)
        return n->bytes_moved / 1e12;
    return 1e-9;
}

mp_status mp_node_estimate(const mp_graph *g, uint32_t node,
                           const mp_device *d, mp_op_cost *out)
{
    return mp__node_estimate_ex(g, node, d, 1, out);
}

mp_status mp__node_estimate_ex(const mp_graph *g, uint32_t node,
                              const mp_device *d, int use_given,
                              mp_op_cost *out)
{
    if (!g || !d || !out)
        return MP_ERR_INVALID_ARG;
    if (node >= g->n_nodes)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "no node %u",
                      (unsigned)node);
    const mp__node *n = &g->nodes[node];
    double f, b;
    mp_status st = mp__node_flops_bytes(g, node, &f, &b);
    if (st)
        return st;
    if (use_given && n->flops >= 0)
        f = n->flops;
    if (use_given && n->bytes_moved >= 0)
        b = n->bytes_moved;
    out->flops = f;
    out->bytes = b;
    if (use_given && n->seconds >= 0) {
        out->seconds = n->seconds;
        return MP_OK;
    }
    /* n->def is set by finalize; an open graph looks the entry up */
    const mp__op_def *def = n->def ? n->def : mp__op_lookup(n->op,
                                                              n->domain);
    if ((def->flags & MP__OPF_VIEW) || n->view || (f == 0 && b == 0)) {
        out->seconds = 0;
        return MP_OK;
    }
    mp__kernel_desc k;
    kernel_desc(g, n, def, f, b, &k);
    out->seconds = mp__kernel_seconds(d, &k);
    return MP_OK;
}

mp_status mp__node_kernel_desc(const mp_graph *g, uint32_t node,
                               mp__kernel_desc *k)
{
    double f, b;
    if (!g || !k || node >= g->n_nodes)
        return MP_ERR_INVALID_ARG;
    mp_status st = mp__node_flops_bytes(g, node, &f, &b);
    if (st)
        return st;
    const mp__node *n = &g->nodes[node];
    kernel_desc(g, n, n->def ? n->def : mp__op_lookup(n->op, n->domain), f,
                b, k);
    return MP_OK;
}

/* The fit of k's class (its backward's, else its forward's), or NULL
 * where the class is not fitted. */
static const mp_cal_fit *class_fit(const mp_device_calibration *c,
                                   const mp__kernel_desc *k, int dc)
{
    const mp_cal_fit *f = NULL; /* [0] forward, [1] backward */
    int cls = k->cls;
    switch (k->kind) {
    case MP__KK_GEMM:
        if (cls >= 0 && cls < MP_GEMM_CLASSES)
            return c->gemm_fit[dc][cls].rate > 0 ? &c->gemm_fit[dc][cls]
                                                 : NULL;
        return NULL;
    case MP__KK_CONV:
        if (cls >= 0 && cls < MP_CONV_CLASSES)
            f = c->conv_fit[dc][cls];
        break;
    case MP__KK_ATTENTION:
        if (k->seq >= 0 && k->seq < MP_ATTN_CLASSES)
            f = c->attention_fit[dc][k->seq];
        break;
    case MP__KK_OTHER:
        f = c->family_fit[MP_FAM_POINTWISE];
        break;
    case MP__KK_MEMORY:
        if (cls >= 0 && cls < MP_FAM_CLASSES)
            f = c->family_fit[cls];
        break;
    default:
        break;
    }
    if (!f)
        return NULL;
    if (k->grad && f[1].rate > 0)
        return &f[1];
    return f[0].rate > 0 ? &f[0] : NULL;
}

/* The bandwidth a memory-bound family had before it was fitted apart:
 * the figure of the class it was in */
static double family_bw(const mp_device_calibration *c, int fam)
{
    switch (fam) {
    case MP_FAM_REDUCE: case MP_FAM_BATCHNORM: case MP_FAM_REDUCTION:
    case MP_FAM_ROWNORM:
        return c->reduce_bw;
    case MP_FAM_COPY:
        return c->copy_bw;
    default:
        return c->pointwise_bw;
    }
}

double mp__kernel_seconds(const mp_device *d, const mp__kernel_desc *k)
{
    const mp_device_calibration *c = &d->cal;
    int dc = k->dt == MP_DTYPE_BFLOAT16 || k->dt == MP_DTYPE_FLOAT16
                 ? MP_CAL_16BIT
                 : MP_CAL_FP32;
    double peak = 0, bw = 0, fixed = d->kernel_overhead;
    int cls = k->cls >= 0 ? k->cls : 0;
    int memory = k->kind == MP__KK_MEMORY || k->kind == MP__KK_OTHER;
    const mp_cal_fit *fit = class_fit(c, k, dc);
    if (fit) {
        /* the class's affine fit: its rate for its work, its fixed cost */
        fixed = fit->fixed;
        if (memory)
            bw = fit->rate;
        else
            peak = fit->rate;
    } else {
        switch (k->kind) {
        case MP__KK_ATTENTION:
            if (k->grad)
                peak = c->attention_grad[dc];
            if (peak <= 0)
                peak = c->attention[dc];
            if (peak <= 0 && cls < MP_GEMM_CLASSES)
                peak = c->gemm[dc][cls];
            break;
        case MP__KK_GEMM:
            if (cls < MP_GEMM_CLASSES)
                peak = c->gemm[dc][cls];
            break;
        case MP__KK_CONV:
            if (cls < MP_CONV_CLASSES && k->grad)
                peak = c->conv_grad[dc][cls];
            if (cls < MP_CONV_CLASSES && peak <= 0)
                peak = c->conv[dc][cls];
            break;
        case MP__KK_MEMORY:
            bw = family_bw(c, k->cls);
            break;
        default:
            bw = c->pointwise_bw;
            break;
        }
    }
    if (peak <= 0)
        peak = mp_device_flops(d, k->dt);
    if (bw <= 0)
        bw = d->mem_bw;
    double tc = peak > 0 && k->flops > 0 ? k->flops / peak : 0;
    double tm = bw > 0 && k->bytes > 0 ? k->bytes / bw : 0;
    return (tc > tm ? tc : tm) + fixed;
}

/* the least workspace a convolution pass is given: room for the index
 * tables and small split-K buffers of cuDNN's implicit-GEMM engines */
#define MP__CONV_WS_MIN ((uint64_t)1 << 20)
/* the gradients' slack beyond their operands */
#define MP__CONV_WS_SLACK ((uint64_t)2 << 20)

/* Every pass gets x + y + max(x, y) / 2 + w + 2 MiB (y: the output, or
 * the output gradient), at least MP__CONV_WS_MIN. The forward had
 * MP__CONV_WS_MIN alone while validate ran FMA arithmetic only: every
 * forward pass of the reference CNNs then ran cuDNN's first choice within
 * it. With TF32 allowed (validate's default, as PyTorch), the fastest
 * forward engines want up to 29 MiB on resnet18 at batch 8, and 1 MiB
 * left resnet101's inference convolutions at 2.8x their predicted time.
 * The input and weight gradients: the one deterministic FMA engine cuDNN 9 offers for
 * the weight gradient (its algorithm 1) wanted, on the H200 with the
 * reference CNNs at batch 8 (MEMPLAN_CONV_TRACE), about the input's
 * plus the output gradient's bytes plus 1.4 MiB, up to 1.7x that sum
 * for a strided depthwise 5x5; the workspace given is x + dy +
 * max(x, dy) / 2 + w + 2 MiB, which holds each of the 45 passes seen. */
uint64_t mp__conv_workspace(const mp__conv_shape *s, int pass)
{
    if (!s || s->n <= 0 || s->c <= 0 || s->m <= 0 || s->g <= 0 ||
        s->oh <= 0 || s->ow <= 0 || s->kh <= 0 || s->kw <= 0 ||
        s->h <= 0 || s->w <= 0 || s->c % s->g || s->m % s->g)
        return 0;
    if (pass != MP__CONV_FWD && pass != MP__CONV_BWD_DATA &&
        pass != MP__CONV_BWD_FILTER)
        return 0;
    uint64_t xb, yb, wb, t;
    if (!mp__mul_u64((uint64_t)s->n, (uint64_t)s->c, &xb) ||
        !mp__mul_u64(xb, (uint64_t)s->h, &xb) ||
        !mp__mul_u64(xb, (uint64_t)s->w, &xb) ||
        !mp__mul_u64(xb, 4, &xb) ||
        !mp__mul_u64((uint64_t)s->n, (uint64_t)s->m, &yb) ||
        !mp__mul_u64(yb, (uint64_t)s->oh, &yb) ||
        !mp__mul_u64(yb, (uint64_t)s->ow, &yb) ||
        !mp__mul_u64(yb, 4, &yb) ||
        !mp__mul_u64((uint64_t)s->m, (uint64_t)(s->c / s->g), &wb) ||
        !mp__mul_u64(wb, (uint64_t)s->kh, &wb) ||
        !mp__mul_u64(wb, (uint64_t)s->kw, &wb) ||
        !mp__mul_u64(wb, 4, &wb) || !mp__add_u64(xb, yb, &t) ||
        !mp__add_u64(t, (xb > yb ? xb : yb) / 2, &t) ||
        !mp__add_u64(t, wb, &t) || !mp__add_u64(t, MP__CONV_WS_SLACK, &t))
        return 0;
    return t > MP__CONV_WS_MIN ? t : MP__CONV_WS_MIN;
}
