/* host.c - lowering a plan into an executor program (no GPU needed).
 *
 * Every op-specific decision starts from the registry entry's kernel
 * (MP__OP_KERNEL / MP__OP_KOP); shapes and attributes give the parameters.
 * Anything the kernels cannot do (an unsupported dtype, rank, mode) falls
 * back to the synthetic kernel, and the node records why. */
#include "validate.h"

#include "sched.h"
#include "shape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WALIGN 256u

static int64_t numel(const mp__tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

static int64_t attr_i(const mp__node *n, const char *name, int64_t def)
{
    const mp__attr *a = mp__node_attr(n, name);
    return a && a->type == MP__ATTR_INT ? a->v.i : def;
}

/* ints attribute into v (up to cap); returns the count or -1 */
static int attr_ints(const mp__node *n, const char *name, int64_t *v, int cap)
{
    const mp__attr *a = mp__node_attr(n, name);
    if (!a || a->type != MP__ATTR_INTS || a->n > (uint32_t)cap)
        return -1;
    for (uint32_t i = 0; i < a->n; i++)
        v[i] = a->v.ints[i];
    return (int)a->n;
}

/* known int values of input slot i (a folded constant); count or -1 */
static int input_ints(const mp_graph *g, const mp__node *n, uint32_t i,
                      int64_t *v, int cap)
{
    if (i >= n->n_in || n->inputs[i] == MP_NONE)
        return -1;
    const mp__tensor *t = &g->tensors[n->inputs[i]];
    if (!t->value || t->n_value > (uint32_t)cap)
        return -1;
    int is_float = t->dtype == MP_DTYPE_FLOAT32 ||
                   t->dtype == MP_DTYPE_FLOAT64 ||
                   t->dtype == MP_DTYPE_FLOAT16;
    for (uint32_t k = 0; k < t->n_value; k++) {
        if (is_float) {
            double d;
            memcpy(&d, &t->value[k], sizeof d);
            v[k] = (int64_t)d;
        } else {
            v[k] = t->value[k];
        }
    }
    return (int)t->n_value;
}

/* known float values of input slot i; count or -1 */
static int input_floats(const mp_graph *g, const mp__node *n, uint32_t i,
                        double *v, int cap)
{
    if (i >= n->n_in || n->inputs[i] == MP_NONE)
        return -1;
    const mp__tensor *t = &g->tensors[n->inputs[i]];
    if (!t->value || t->n_value > (uint32_t)cap)
        return -1;
    int is_float = t->dtype == MP_DTYPE_FLOAT32 ||
                   t->dtype == MP_DTYPE_FLOAT64 ||
                   t->dtype == MP_DTYPE_FLOAT16;
    for (uint32_t k = 0; k < t->n_value; k++) {
        if (is_float)
            memcpy(&v[k], &t->value[k], sizeof v[k]);
        else
            v[k] = (double)t->value[k];
    }
    return (int)t->n_value;
}

static const mp__tensor *in_t(const mp_graph *g, const mp__node *n, uint32_t i)
{
    return i < n->n_in && n->inputs[i] != MP_NONE ? &g->tensors[n->inputs[i]]
                                                  : NULL;
}

static int esize_of(const mp__tensor *t)
{
    unsigned b = mp_dtype_bits((mp_dtype)t->dtype);
    return (b == 8 || b == 16 || b == 32 || b == 64) ? (int)(b / 8) : 0;
}

static int is_f32(const mp__tensor *t)
{
    return t && t->dtype == MP_DTYPE_FLOAT32;
}

/* row-major strides of a shape */
static void strides_of(const int64_t *dims, int rank, int64_t *st)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= dims[i];
    }
}

typedef struct lower {
    const mp_graph *g;
    mpv_launch *l;
    uint32_t n, cap;
    mp_ctx *ctx;
} lower;

static mpv_launch *add_launch(lower *L, int kind)
{
    if (L->n == L->cap) {
        uint32_t nc = L->cap ? L->cap * 2 : 256;
        mpv_launch *nl = mp__realloc_array(L->ctx, L->l, nc, sizeof *nl);
        if (!nl)
            return NULL;
        L->l = nl;
        L->cap = nc;
    }
    mpv_launch *x = &L->l[L->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    for (int i = 0; i < MPV_MAXIN; i++)
        x->in[i] = -1;
    x->out = -1;
    return x;
}

/* fallback reasons (static strings) */
#define FAIL(msg)                                                            \
    do {                                                                     \
        *why = (msg);                                                        \
        return 1;                                                            \
    } while (0)

/* broadcast strides of t against the output dims (rank r) */
static int bcast_strides(const mp__tensor *t, const int64_t *od, int r,
                         int64_t *st)
{
    int64_t ts[MPV_MAXR];
    if (t->rank > r)
        return -1;
    strides_of(t->dims, t->rank, ts);
    for (int i = 0; i < r; i++) {
        int j = i - (r - t->rank);
        if (j < 0 || t->dims[j] == 1)
            st[i] = 0;
        else if (t->dims[j] == od[i])
            st[i] = ts[j];
        else
            return -1;
    }
    return 0;
}

static int lower_nary(lower *L, const mp__node *n, int op, int first_in,
                      int n_in, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(y) || y->rank > MPV_MAXR || n_in > MPV_MAXIN || n_in < 1)
        FAIL("pointwise: only float32, rank <= 8, up to 4 inputs");
    mpv_launch *x = add_launch(L, MPV_L_NARY);
    if (!x)
        return -1;
    x->p.nary.op = op;
    x->p.nary.n_in = n_in;
    x->p.nary.rank = y->rank;
    x->p.nary.n = numel(y);
    for (int i = 0; i < y->rank; i++)
        x->p.nary.dims[i] = y->dims[i];
    for (int k = 0; k < n_in; k++) {
        const mp__tensor *a = in_t(g, n, (uint32_t)(first_in + k));
        if (!is_f32(a) || bcast_strides(a, y->dims, y->rank,
                                        x->p.nary.st[k]) != 0) {
            L->n--;
            FAIL("pointwise: input not float32 or not broadcastable");
        }
        x->in[k] = first_in + k;
    }
    x->out = 0;
    return 0;
}

static int norm_axis(int64_t a, int rank)
{
    return (int)(a < 0 ? a + rank : a);
}

/* strided copy of a whole input (in slot) into an output region */
static mpv_launch *add_copy(lower *L, int in, int out, int rank,
                            const int64_t *dims, const int64_t *ist,
                            const int64_t *ost, int64_t ioff, int64_t ooff,
                            int esize)
{
    mpv_launch *x = add_launch(L, MPV_L_COPY);
    if (!x)
        return NULL;
    x->in[0] = in;
    x->out = out;
    x->p.copy.rank = rank;
    x->p.copy.esize = esize;
    int64_t nn = 1;
    for (int i = 0; i < rank; i++) {
        x->p.copy.dims[i] = dims[i];
        x->p.copy.ist[i] = ist[i];
        x->p.copy.ost[i] = ost[i];
        nn *= dims[i];
    }
    x->p.copy.n = nn;
    x->p.copy.ioff = ioff;
    x->p.copy.ooff = ooff;
    return x;
}

static int lower_gemm_matmul(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *a = in_t(g, n, 0), *b = in_t(g, n, 1);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(a) || !is_f32(b) || !is_f32(y))
        FAIL("MatMul: only float32");
    if (a->rank < 2 || b->rank < 1 || y->rank < 1)
        FAIL("MatMul: 1-D A not supported");
    int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (b->rank >= 2 && b->dims[b->rank - 2] != K)
        FAIL("MatMul: inner dims differ");
    int64_t ba = 1, bb = 1;
    for (int i = 0; i < a->rank - 2; i++)
        ba *= a->dims[i];
    for (int i = 0; i < b->rank - 2; i++)
        bb *= b->dims[i];
    mpv_launch *x = add_launch(L, MPV_L_GEMM);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->in[1] = 1;
    x->out = 0;
    x->p.gemm.alpha = 1.0;
    x->p.gemm.beta = 0.0;
    x->p.gemm.k = K;
    x->p.gemm.n = N;
    x->p.gemm.lda = K;
    x->p.gemm.ldb = N;
    x->p.gemm.ldc = N;
    if (bb == 1) {
        /* B shared: one product with the batch folded into M */
        x->p.gemm.m = M * ba;
        x->p.gemm.batch = 1;
    } else if (ba == bb || ba == 1) {
        /* same batch (the batch dims must then be equal, not broadcast) */
        if (ba == bb && a->rank != b->rank) {
            L->n--;
            FAIL("MatMul: batch broadcast not supported");
        }
        x->p.gemm.m = M;
        x->p.gemm.batch = bb;
        x->p.gemm.sa = ba == 1 ? 0 : M * K;
        x->p.gemm.sb = K * N;
        x->p.gemm.sc = M * N;
    } else {
        L->n--;
        FAIL("MatMul: batch broadcast not supported");
    }
    if (numel(y) != x->p.gemm.m * N * x->p.gemm.batch) {
        L->n--;
        FAIL("MatMul: output size does not match");
    }
    return 0;
}

static int lower_gemm(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *a = in_t(g, n, 0), *b = in_t(g, n, 1),
                    *c = in_t(g, n, 2);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(a) || !is_f32(b) || !is_f32(y) || a->rank != 2 ||
        b->rank != 2 || y->rank != 2)
        FAIL("Gemm: only float32 2-D");
    int ta = (int)attr_i(n, "transA", 0), tb = (int)attr_i(n, "transB", 0);
    int64_t M = y->dims[0], N = y->dims[1];
    int64_t K = ta ? a->dims[0] : a->dims[1];
    double beta = mp__attr_float(n, "beta", 1.0);
    if (c) {
        if (!is_f32(c))
            FAIL("Gemm: C not float32");
        int64_t st[MPV_MAXR], ost[2] = {N, 1};
        if (bcast_strides(c, y->dims, 2, st) != 0)
            FAIL("Gemm: C not broadcastable");
        if (!add_copy(L, 2, 0, 2, y->dims, st, ost, 0, 0, 4))
            return -1;
    }
    mpv_launch *x = add_launch(L, MPV_L_GEMM);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->in[1] = 1;
    x->out = 0;
    x->p.gemm.ta = ta;
    x->p.gemm.tb = tb;
    x->p.gemm.m = M;
    x->p.gemm.n = N;
    x->p.gemm.k = K;
    x->p.gemm.lda = ta ? M : K;
    x->p.gemm.ldb = tb ? K : N;
    x->p.gemm.ldc = N;
    x->p.gemm.batch = 1;
    x->p.gemm.alpha = mp__attr_float(n, "alpha", 1.0);
    x->p.gemm.beta = c ? beta : 0.0;
    return 0;
}

/* pads of a 2-D window op: explicit pads or auto_pad */
static void window_pads(const mp__node *n, int64_t h, int64_t w, int64_t oh,
                        int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                        int64_t sw, int64_t dh, int64_t dw, int64_t *pt,
                        int64_t *pl)
{
    int64_t pads[8];
    *pt = *pl = 0;
    const char *ap = mp__attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
        int64_t th = (oh - 1) * sh + (kh - 1) * dh + 1 - h;
        int64_t tw = (ow - 1) * sw + (kw - 1) * dw + 1 - w;
        if (th < 0)
            th = 0;
        if (tw < 0)
            tw = 0;
        int upper = strcmp(ap, "SAME_UPPER") == 0;
        *pt = upper ? th / 2 : th - th / 2;
        *pl = upper ? tw / 2 : tw - tw / 2;
    } else if (attr_ints(n, "pads", pads, 8) == 4) {
        *pt = pads[0];
        *pl = pads[1];
    }
}

static int lower_conv(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *wt = in_t(g, n, 1),
                    *bt = in_t(g, n, 2);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(y) || xt->rank != 4 ||
        wt->rank != 4 || y->rank != 4)
        FAIL("Conv: only float32 2-D (NCHW)");
    if (bt && !is_f32(bt))
        FAIL("Conv: bias not float32");
    int64_t k[2], s[2] = {1, 1}, d[2] = {1, 1};
    k[0] = wt->dims[2];
    k[1] = wt->dims[3];
    if (attr_ints(n, "strides", s, 2) < 0) {
        s[0] = s[1] = 1;
    }
    if (attr_ints(n, "dilations", d, 2) < 0) {
        d[0] = d[1] = 1;
    }
    int64_t G = attr_i(n, "group", 1);
    mpv_launch *x = add_launch(L, MPV_L_CONV);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->in[1] = 1;
    x->in[2] = bt ? 2 : -1;
    x->out = 0;
    x->p.conv.n = xt->dims[0];
    x->p.conv.c = xt->dims[1];
    x->p.conv.h = xt->dims[2];
    x->p.conv.w = xt->dims[3];
    x->p.conv.m = y->dims[1];
    x->p.conv.oh = y->dims[2];
    x->p.conv.ow = y->dims[3];
    x->p.conv.kh = k[0];
    x->p.conv.kw = k[1];
    x->p.conv.sh = s[0];
    x->p.conv.sw = s[1];
    x->p.conv.dh = d[0];
    x->p.conv.dw = d[1];
    x->p.conv.g = G;
    x->p.conv.has_bias = bt != NULL;
    window_pads(n, xt->dims[2], xt->dims[3], y->dims[2], y->dims[3], k[0],
                k[1], s[0], s[1], d[0], d[1], &x->p.conv.pt, &x->p.conv.pl);
    if (G <= 0 || xt->dims[1] % G || y->dims[1] % G ||
        wt->dims[1] * G != xt->dims[1] || wt->dims[0] != y->dims[1]) {
        L->n--;
        FAIL("Conv: inconsistent group/channels");
    }
    x->p.conv.direct = k[0] == 1 && k[1] == 1 && s[0] == 1 && s[1] == 1 &&
                       x->p.conv.pt == 0 && x->p.conv.pl == 0 &&
                       y->dims[2] == xt->dims[2] && y->dims[3] == xt->dims[3];
    if (!x->p.conv.direct) {
        /* im2col of one image: C*kh*kw rows of OH*OW floats */
        uint64_t ws = (uint64_t)xt->dims[1] * (uint64_t)(k[0] * k[1]) *
                      (uint64_t)(y->dims[2] * y->dims[3]) * 4u;
        x->workspace = ws;
    }
    return 0;
}

static int lower_pool(lower *L, const mp__node *n, int op, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(xt) || !is_f32(y) || xt->rank != 4 || y->rank != 4)
        FAIL("pool: only float32 2-D (NCHW)");
    int64_t k[2], s[2] = {1, 1}, d[2] = {1, 1};
    if (attr_ints(n, "kernel_shape", k, 2) != 2)
        FAIL("pool: kernel_shape missing");
    if (attr_ints(n, "strides", s, 2) < 0)
        s[0] = s[1] = 1;
    if (attr_ints(n, "dilations", d, 2) < 0)
        d[0] = d[1] = 1;
    mpv_launch *x = add_launch(L, MPV_L_POOL);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->out = 0;
    x->p.pool.nc = xt->dims[0] * xt->dims[1];
    x->p.pool.h = xt->dims[2];
    x->p.pool.w = xt->dims[3];
    x->p.pool.oh = y->dims[2];
    x->p.pool.ow = y->dims[3];
    x->p.pool.kh = k[0];
    x->p.pool.kw = k[1];
    x->p.pool.sh = s[0];
    x->p.pool.sw = s[1];
    x->p.pool.dh = d[0];
    x->p.pool.dw = d[1];
    x->p.pool.op = op;
    x->p.pool.count_pad = (int)attr_i(n, "count_include_pad", 0);
    window_pads(n, xt->dims[2], xt->dims[3], y->dims[2], y->dims[3], k[0],
                k[1], s[0], s[1], d[0], d[1], &x->p.pool.pt, &x->p.pool.pl);
    return 0;
}

static int lower_softmax(lower *L, const mp__node *n, int log, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(xt) || !is_f32(y) || xt->rank < 1)
        FAIL("Softmax: only float32");
    int old = g->onnx_opset > 0 && g->onnx_opset < 13;
    int axis = norm_axis(attr_i(n, "axis", old ? 1 : -1), xt->rank);
    if (axis < 0 || axis >= xt->rank)
        FAIL("Softmax: bad axis");
    int64_t outer = 1, dim = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    if (old) {
        /* opset < 13: coerced to 2-D at axis */
        for (int i = axis; i < xt->rank; i++)
            dim *= xt->dims[i];
    } else {
        dim = xt->dims[axis];
        for (int i = axis + 1; i < xt->rank; i++)
            inner *= xt->dims[i];
    }
    mpv_launch *x = add_launch(L, MPV_L_SOFTMAX);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->out = 0;
    x->p.softmax.outer = outer;
    x->p.softmax.dim = dim;
    x->p.softmax.inner = inner;
    x->p.softmax.log = log;
    return 0;
}

static int lower_concat(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    int es = esize_of(y);
    if (!es || y->rank < 1 || y->rank > MPV_MAXR)
        FAIL("Concat: element size or rank");
    int axis = norm_axis(attr_i(n, "axis", 0), y->rank);
    if (axis < 0 || axis >= y->rank)
        FAIL("Concat: bad axis");
    int64_t ost[MPV_MAXR];
    strides_of(y->dims, y->rank, ost);
    int64_t off = 0;
    uint32_t first = L->n;
    for (uint32_t i = 0; i < n->n_in; i++) {
        const mp__tensor *a = in_t(g, n, i);
        if (!a)
            continue;
        if (a->rank != y->rank || esize_of(a) != es) {
            L->n = first;
            FAIL("Concat: input rank or dtype");
        }
        int64_t ist[MPV_MAXR];
        strides_of(a->dims, a->rank, ist);
        if (numel(a) > 0 &&
            !add_copy(L, (int)i, 0, a->rank, a->dims, ist, ost, 0,
                      off * ost[axis], es))
            return -1;
        off += a->dims[axis];
    }
    return 0;
}

static int lower_split(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    int es = esize_of(xt);
    if (!es || xt->rank < 1 || xt->rank > MPV_MAXR)
        FAIL("Split: element size or rank");
    int axis = norm_axis(attr_i(n, "axis", 0), xt->rank);
    if (axis < 0 || axis >= xt->rank)
        FAIL("Split: bad axis");
    int64_t ist[MPV_MAXR];
    strides_of(xt->dims, xt->rank, ist);
    int64_t off = 0;
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *y = &g->tensors[n->outputs[o]];
        if (y->rank != xt->rank)
            FAIL("Split: output rank");
        int64_t ost[MPV_MAXR];
        strides_of(y->dims, y->rank, ost);
        if (numel(y) > 0 &&
            !add_copy(L, 0, (int)o, y->rank, y->dims, ist, ost,
                      off * ist[axis], 0, es))
            return -1;
        off += y->dims[axis];
    }
    return 0;
}

static int lower_transpose(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    int es = esize_of(xt);
    if (!es || xt->rank > MPV_MAXR)
        FAIL("Transpose: element size or rank");
    int64_t perm[MPV_MAXR];
    int r = xt->rank;
    if (attr_ints(n, "perm", perm, MPV_MAXR) != r)
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    int64_t ist[MPV_MAXR], pst[MPV_MAXR], ost[MPV_MAXR];
    strides_of(xt->dims, r, ist);
    strides_of(y->dims, r, ost);
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r)
            FAIL("Transpose: bad perm");
        pst[i] = ist[perm[i]];
    }
    if (!add_copy(L, 0, 0, r, y->dims, pst, ost, 0, 0, es))
        return -1;
    return 0;
}

static int lower_slice(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    int es = esize_of(xt);
    int r = xt->rank;
    if (!es || r > MPV_MAXR || y->rank != r)
        FAIL("Slice: element size or rank");
    int64_t starts[MPV_MAXR], axes[MPV_MAXR], steps[MPV_MAXR];
    int ns, na, nst;
    if (n->n_in >= 2) { /* opset >= 10: inputs */
        ns = input_ints(g, n, 1, starts, MPV_MAXR);
        na = input_ints(g, n, 3, axes, MPV_MAXR);
        nst = input_ints(g, n, 4, steps, MPV_MAXR);
    } else {
        ns = attr_ints(n, "starts", starts, MPV_MAXR);
        na = attr_ints(n, "axes", axes, MPV_MAXR);
        nst = -1;
    }
    if (ns < 0)
        FAIL("Slice: starts not known");
    if (na < 0) {
        na = ns;
        for (int i = 0; i < ns; i++)
            axes[i] = i;
    }
    if (nst < 0) {
        nst = ns;
        for (int i = 0; i < ns; i++)
            steps[i] = 1;
    }
    if (na != ns || nst != ns)
        FAIL("Slice: starts/axes/steps lengths differ");
    int64_t ist[MPV_MAXR], sst[MPV_MAXR], ost[MPV_MAXR];
    strides_of(xt->dims, r, ist);
    strides_of(y->dims, r, ost);
    for (int i = 0; i < r; i++)
        sst[i] = ist[i];
    int64_t off = 0;
    for (int i = 0; i < ns; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0 || a >= r || steps[i] == 0)
            FAIL("Slice: bad axis or step");
        int64_t dim = xt->dims[a], st = starts[i];
        if (st < 0)
            st += dim;
        if (steps[i] > 0) {
            if (st < 0)
                st = 0;
            if (st > dim)
                st = dim;
        } else {
            if (st < 0)
                st = -1;
            if (st > dim - 1)
                st = dim - 1;
        }
        if (y->dims[a] > 0)
            off += st * ist[a];
        sst[a] = ist[a] * steps[i];
    }
    if (numel(y) > 0 && !add_copy(L, 0, 0, r, y->dims, sst, ost, off, 0, es))
        return -1;
    return 0;
}

static int lower_pad(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    int r = xt->rank;
    if (!is_f32(xt) || r > MPV_MAXR || y->rank != r)
        FAIL("Pad: only float32");
    const char *mode = mp__attr_str(n, "mode", "constant");
    if (strcmp(mode, "constant") != 0)
        FAIL("Pad: only constant mode");
    int64_t pads[2 * MPV_MAXR];
    int np = n->n_in >= 2 ? input_ints(g, n, 1, pads, 2 * MPV_MAXR)
                          : attr_ints(n, "pads", pads, 2 * MPV_MAXR);
    if (np != 2 * r)
        FAIL("Pad: pads not known (or axes given)");
    double value = 0.0;
    if (n->n_in >= 3) {
        double v[1];
        if (in_t(g, n, 2) && input_floats(g, n, 2, v, 1) == 1)
            value = v[0];
    } else {
        value = mp__attr_float(n, "value", 0.0);
    }
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] < 0)
            FAIL("Pad: negative pads");
    mpv_launch *f = add_launch(L, MPV_L_FILL);
    if (!f)
        return -1;
    f->out = 0;
    f->p.fill.n = numel(y);
    f->p.fill.value = value;
    int64_t ist[MPV_MAXR], ost[MPV_MAXR], off = 0;
    strides_of(xt->dims, r, ist);
    strides_of(y->dims, r, ost);
    for (int i = 0; i < r; i++)
        off += pads[i] * ost[i];
    if (numel(xt) > 0 &&
        !add_copy(L, 0, 0, r, xt->dims, ist, ost, 0, off, 4))
        return -1;
    return 0;
}

static int lower_gather(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *it = in_t(g, n, 1);
    int es = esize_of(xt);
    if (!es || !it ||
        (it->dtype != MP_DTYPE_INT64 && it->dtype != MP_DTYPE_INT32))
        FAIL("Gather: element size or index dtype");
    int axis = norm_axis(attr_i(n, "axis", 0), xt->rank);
    if (axis < 0 || axis >= xt->rank)
        FAIL("Gather: bad axis");
    mpv_launch *x = add_launch(L, MPV_L_GATHER);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->in[1] = 1;
    x->out = 0;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    x->p.gather.outer = outer;
    x->p.gather.axis = xt->dims[axis];
    x->p.gather.inner = inner;
    x->p.gather.nidx = numel(it);
    x->p.gather.esize = es;
    x->p.gather.iesize = esize_of(it);
    return 0;
}

static int lower_reduce(lower *L, const mp__node *n, int op, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    int r = xt->rank;
    if (!is_f32(xt) || !is_f32(y) || r > MPV_MAXR || r < 1)
        FAIL("Reduce: only float32");
    int64_t axes[MPV_MAXR];
    int na = attr_ints(n, "axes", axes, MPV_MAXR);
    if (na < 0 && n->n_in >= 2 && in_t(g, n, 1))
        na = input_ints(g, n, 1, axes, MPV_MAXR);
    if (na < 0 && n->n_in >= 2 && in_t(g, n, 1))
        FAIL("Reduce: axes not known");
    mpv_launch *x = add_launch(L, MPV_L_REDUCE);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->out = 0;
    x->p.reduce.op = op;
    x->p.reduce.rank = r;
    x->p.reduce.n = numel(y);
    for (int i = 0; i < r; i++) {
        x->p.reduce.dims[i] = xt->dims[i];
        x->p.reduce.red[i] = na <= 0 ? !attr_i(n, "noop_with_empty_axes", 0)
                                     : 0;
    }
    for (int i = 0; i < na; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0 || a >= r) {
            L->n--;
            FAIL("Reduce: bad axis");
        }
        x->p.reduce.red[a] = 1;
    }
    return 0;
}

static int lower_resize(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    if (!is_f32(xt) || !is_f32(y) || xt->rank != 4 || y->rank != 4 ||
        xt->dims[0] != y->dims[0] || xt->dims[1] != y->dims[1])
        FAIL("Resize: only float32 NCHW over H and W");
    const char *mode = mp__attr_str(n, "mode", "nearest");
    int linear;
    if (strcmp(mode, "nearest") == 0)
        linear = 0;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        linear = 1;
    else
        FAIL("Resize: only nearest and linear");
    int upsample = strcmp(n->op, "Upsample") == 0 || g->onnx_opset == 10;
    const char *ct = mp__attr_str(n, "coordinate_transformation_mode",
                            upsample ? "asymmetric" : "half_pixel");
    const char *nm = mp__attr_str(n, "nearest_mode",
                            upsample ? "floor" : "round_prefer_floor");
    mpv_launch *x = add_launch(L, MPV_L_RESIZE);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->out = 0;
    x->p.resize.nc = xt->dims[0] * xt->dims[1];
    x->p.resize.h = xt->dims[2];
    x->p.resize.w = xt->dims[3];
    x->p.resize.oh = y->dims[2];
    x->p.resize.ow = y->dims[3];
    /* scales: given ones when known (input "scales"), else out / in */
    double sc[4];
    int si = upsample ? 1 : 2;
    if (input_floats(g, n, (uint32_t)si, sc, 4) == 4 && sc[2] > 0 &&
        sc[3] > 0) {
        x->p.resize.sh = sc[2];
        x->p.resize.sw = sc[3];
    } else {
        x->p.resize.sh = (double)y->dims[2] / (double)xt->dims[2];
        x->p.resize.sw = (double)y->dims[3] / (double)xt->dims[3];
    }
    x->p.resize.linear = linear;
    x->p.resize.coord = strcmp(ct, "asymmetric") == 0 ? MPV_CT_ASYMMETRIC
                        : strcmp(ct, "align_corners") == 0
                            ? MPV_CT_ALIGN_CORNERS
                        : strcmp(ct, "pytorch_half_pixel") == 0
                            ? MPV_CT_PYTORCH_HALF_PIXEL
                        : strcmp(ct, "tf_half_pixel_for_nn") == 0
                            ? MPV_CT_TF_HALF_PIXEL
                            : MPV_CT_HALF_PIXEL;
    x->p.resize.nearest = strcmp(nm, "floor") == 0   ? MPV_NM_FLOOR
                          : strcmp(nm, "ceil") == 0  ? MPV_NM_CEIL
                          : strcmp(nm, "round_prefer_ceil") == 0
                              ? MPV_NM_ROUND_PREFER_CEIL
                              : MPV_NM_ROUND_PREFER_FLOOR;
    return 0;
}

static int cast_ok(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_INT64 || dt == MP_DTYPE_INT32 ||
           dt == MP_DTYPE_INT8 || dt == MP_DTYPE_UINT8 || dt == MP_DTYPE_BOOL ||
           dt == MP_DTYPE_FLOAT16;
}

/* Lowers one node; returns 0 (lowered), 1 (needs the synthetic kernel,
 * *why set), -1 (out of memory). */
static int lower_node(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__op_def *d = n->def;
    unsigned k = MP__OP_KERNEL(d), kop = MP__OP_KOP(d);
    if (n->n_out < 1)
        FAIL("no outputs");
    const mp__tensor *y = &g->tensors[n->outputs[0]];
    switch (k) {
    case MP__KERNEL_COPY: { /* Dropout (inference): y = x; mask: ones */
        const mp__tensor *xt = in_t(g, n, 0);
        int es = esize_of(xt);
        if (!xt || !es || numel(xt) != numel(y) || n->n_out > 2)
            FAIL("copy: shapes or extra outputs");
        int64_t dims[1] = {numel(y)}, st[1] = {1};
        if (!add_copy(L, 0, 0, 1, dims, st, st, 0, 0, es))
            return -1;
        if (n->n_out == 2) { /* the mask: all true (bytes 0x01) */
            mpv_launch *m = add_launch(L, MPV_L_FILL);
            if (!m)
                return -1;
            m->out = 1;
            m->p.fill.n = numel(&g->tensors[n->outputs[1]]);
            m->p.fill.zero_bytes = 2;
        }
        return 0;
    }
    case MP__KERNEL_UNARY: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!is_f32(xt) || !is_f32(y) || numel(xt) != numel(y))
            FAIL("unary: only float32");
        mpv_launch *x = add_launch(L, MPV_L_UNARY);
        if (!x)
            return -1;
        x->in[0] = 0;
        x->out = 0;
        x->p.unary.n = numel(y);
        x->p.unary.op = (int)kop;
        double a = 0, b = 0;
        switch (kop) {
        case MP__KOP_CLIP: {
            a = mp__attr_float(n, "min", -INFINITY);
            b = mp__attr_float(n, "max", INFINITY);
            double v[1];
            if (n->n_in >= 2 && in_t(g, n, 1)) {
                if (input_floats(g, n, 1, v, 1) != 1) {
                    L->n--;
                    FAIL("Clip: min not known");
                }
                a = v[0];
            }
            if (n->n_in >= 3 && in_t(g, n, 2)) {
                if (input_floats(g, n, 2, v, 1) != 1) {
                    L->n--;
                    FAIL("Clip: max not known");
                }
                b = v[0];
            }
            break;
        }
        case MP__KOP_HARDSIGMOID:
            a = mp__attr_float(n, "alpha", 0.2);
            b = mp__attr_float(n, "beta", 0.5);
            break;
        case MP__KOP_LEAKYRELU:
            a = mp__attr_float(n, "alpha", 0.01);
            break;
        case MP__KOP_ELU:
            a = mp__attr_float(n, "alpha", 1.0);
            break;
        case MP__KOP_GELU:
            a = strcmp(mp__attr_str(n, "approximate", "none"), "tanh") == 0;
            break;
        default:
            break;
        }
        x->p.unary.alpha = a;
        x->p.unary.beta = b;
        return 0;
    }
    case MP__KERNEL_BINARY:
        if (n->n_in != 2)
            FAIL("binary: two inputs");
        return lower_nary(L, n, (int)kop, 0, 2, why);
    case MP__KERNEL_VARIADIC: {
        int r = lower_nary(L, n, kop == MP__KOP_MEAN ? MP__KOP_ADD : (int)kop, 0,
                           (int)n->n_in, why);
        if (r == 0 && kop == MP__KOP_MEAN) {
            mpv_launch *x = add_launch(L, MPV_L_UNARY);
            if (!x)
                return -1;
            x->in[0] = -2; /* the output itself */
            x->out = 0;
            x->p.unary.n = numel(y);
            x->p.unary.op = MPV_UOP_SCALE;
            x->p.unary.alpha = 1.0 / (double)n->n_in;
        }
        return r;
    }
    case MP__KERNEL_MATMUL:
        return lower_gemm_matmul(L, n, why);
    case MP__KERNEL_GEMM:
        return lower_gemm(L, n, why);
    case MP__KERNEL_CONV:
        return lower_conv(L, n, why);
    case MP__KERNEL_POOL:
        return lower_pool(L, n, (int)kop, why);
    case MP__KERNEL_GLOBAL_POOL: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!is_f32(xt) || xt->rank < 3)
            FAIL("global pool: only float32");
        mpv_launch *x = add_launch(L, MPV_L_GPOOL);
        if (!x)
            return -1;
        x->in[0] = 0;
        x->out = 0;
        x->p.gpool.nc = xt->dims[0] * xt->dims[1];
        x->p.gpool.hw = numel(xt) / (x->p.gpool.nc ? x->p.gpool.nc : 1);
        x->p.gpool.op = (int)kop;
        return 0;
    }
    case MP__KERNEL_BATCHNORM: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!is_f32(xt) || xt->rank < 2 || n->n_in < 5 || n->n_out > 1)
            FAIL("BatchNormalization: float32 inference form only");
        for (uint32_t i = 1; i < 5; i++)
            if (!is_f32(in_t(g, n, i)))
                FAIL("BatchNormalization: parameters not float32");
        mpv_launch *x = add_launch(L, MPV_L_BN);
        if (!x)
            return -1;
        for (int i = 0; i < 4; i++)
            x->in[i] = i;
        x->out = 0;
        x->p.bn.n = xt->dims[0];
        x->p.bn.c = xt->dims[1];
        x->p.bn.hw = numel(xt) / (xt->dims[0] * xt->dims[1]);
        x->p.bn.eps = mp__attr_float(n, "epsilon", 1e-5);
        return 0;
    }
    case MP__KERNEL_LAYERNORM: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!is_f32(xt) || xt->rank < 1 || !is_f32(in_t(g, n, 1)))
            FAIL("LayerNormalization: only float32");
        int axis = norm_axis(attr_i(n, "axis", -1), xt->rank);
        if (axis < 0 || axis >= xt->rank)
            FAIL("LayerNormalization: bad axis");
        int64_t cols = 1;
        for (int i = axis; i < xt->rank; i++)
            cols *= xt->dims[i];
        const mp__tensor *st = in_t(g, n, 1), *bt = in_t(g, n, 2);
        if (numel(st) != cols || (bt && numel(bt) != cols))
            FAIL("LayerNormalization: scale/bias not of the normalized size");
        mpv_launch *x = add_launch(L, MPV_L_LN);
        if (!x)
            return -1;
        x->in[0] = 0;
        x->in[1] = 1;
        x->in[2] = bt ? 2 : -1;
        x->out = 0;
        x->p.ln.cols = cols;
        x->p.ln.rows = numel(xt) / (cols ? cols : 1);
        x->p.ln.eps = mp__attr_float(n, "epsilon", 1e-5);
        x->p.ln.has_bias = bt != NULL;
        for (uint32_t o = 1; o < n->n_out; o++) { /* Mean, InvStdDev */
            mpv_launch *s = add_launch(L, MPV_L_FILL);
            if (!s)
                return -1;
            s->out = (int)o;
            s->p.fill.n = numel(&g->tensors[n->outputs[o]]);
            s->p.fill.zero_bytes = 1;
        }
        return 0;
    }
    case MP__KERNEL_LRN: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!is_f32(xt) || xt->rank < 3)
            FAIL("LRN: only float32");
        mpv_launch *x = add_launch(L, MPV_L_LRN);
        if (!x)
            return -1;
        x->in[0] = 0;
        x->out = 0;
        x->p.lrn.n = xt->dims[0];
        x->p.lrn.c = xt->dims[1];
        x->p.lrn.hw = numel(xt) / (xt->dims[0] * xt->dims[1]);
        x->p.lrn.size = attr_i(n, "size", 5);
        x->p.lrn.alpha = mp__attr_float(n, "alpha", 1e-4);
        x->p.lrn.beta = mp__attr_float(n, "beta", 0.75);
        x->p.lrn.bias = mp__attr_float(n, "bias", 1.0);
        return 0;
    }
    case MP__KERNEL_SOFTMAX:
        return lower_softmax(L, n, kop == MP__KOP_LOGSOFTMAX, why);
    case MP__KERNEL_CONCAT:
        return lower_concat(L, n, why);
    case MP__KERNEL_SPLIT:
        return lower_split(L, n, why);
    case MP__KERNEL_SLICE:
        return lower_slice(L, n, why);
    case MP__KERNEL_TRANSPOSE:
        return lower_transpose(L, n, why);
    case MP__KERNEL_GATHER:
        return lower_gather(L, n, why);
    case MP__KERNEL_REDUCE:
        return lower_reduce(L, n, (int)kop, why);
    case MP__KERNEL_RESIZE:
        return lower_resize(L, n, why);
    case MP__KERNEL_PAD:
        return lower_pad(L, n, why);
    case MP__KERNEL_CAST: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!xt || !cast_ok(xt->dtype) || !cast_ok(y->dtype) ||
            numel(xt) != numel(y))
            FAIL("Cast: dtype pair not supported");
        mpv_launch *x = add_launch(L, MPV_L_CAST);
        if (!x)
            return -1;
        x->in[0] = 0;
        x->out = 0;
        x->p.cast.n = numel(y);
        x->p.cast.from = xt->dtype;
        x->p.cast.to = y->dtype;
        return 0;
    }
    case MP__KERNEL_SHAPE: {
        const mp__tensor *xt = in_t(g, n, 0);
        if (!xt || y->dtype != MP_DTYPE_INT64 || numel(y) > MPV_MAXR)
            FAIL("Shape: output");
        int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", xt->rank);
        if (start < 0)
            start += xt->rank;
        if (end < 0)
            end += xt->rank;
        if (end > xt->rank)
            end = xt->rank;
        if (start < 0)
            start = 0;
        if (end - start != numel(y))
            FAIL("Shape: start/end");
        mpv_launch *x = add_launch(L, MPV_L_SHAPE);
        if (!x)
            return -1;
        x->out = 0;
        x->p.shape.n = numel(y);
        for (int64_t i = start; i < end; i++)
            x->p.shape.v[i - start] = xt->dims[i];
        return 0;
    }
    case MP__KERNEL_EXPAND: {
        const mp__tensor *xt = in_t(g, n, 0);
        int es = esize_of(y);
        int64_t st[MPV_MAXR], ost[MPV_MAXR];
        if (!xt || !es || y->rank > MPV_MAXR ||
            bcast_strides(xt, y->dims, y->rank, st) != 0)
            FAIL("Expand: shapes");
        strides_of(y->dims, y->rank, ost);
        return add_copy(L, 0, 0, y->rank, y->dims, st, ost, 0, 0, es) ? 0
                                                                       : -1;
    }
    default:
        FAIL("no kernel for this op in the registry");
    }
}

/* ---- program -------------------------------------------------------------- */

void mpv_program_destroy(mpv_program *p)
{
    if (!p)
        return;
    mp_ctx *ctx = p->ctx;
    mp__dealloc(ctx, p->steps);
    mp__dealloc(ctx, p->refs);
    mp__dealloc(ctx, p->nodes);
    mp__dealloc(ctx, p->launches);
    mp__dealloc(ctx, p->woff);
    mp__dealloc(ctx, p->outputs);
    mp__dealloc(ctx, p->out_offs);
    mp__dealloc(ctx, p->inputs);
    mp__dealloc(ctx, p->in_offs);
    mp__dealloc(ctx, p);
}

static int node_runs(const mp_graph *g, const mp__node *n)
{
    if (n->def->flags & MP__OPF_VIEW)
        return 0;
    /* folded constants are set up with the weights */
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *t = &g->tensors[n->outputs[o]];
        if (!(t->flags & MP__TF_FOLDED) && t->bytes > 0 &&
            t->kind != MP_KIND_CONSTANT)
            return 1;
    }
    return 0;
}

/* the block of arena root r that holds step s (for OFFLOAD also the one
 * that ends at s) */
static const mp_block *block_at(const mp_block *const *byt, const uint32_t *cnt,
                                uint32_t r, uint32_t s, int ending_ok)
{
    const mp_block *const b = byt[r];
    for (uint32_t i = 0; i < cnt[r]; i++)
        if (b[i].first <= s && s < b[i].end)
            return &b[i];
    if (ending_ok)
        for (uint32_t i = 0; i < cnt[r]; i++)
            if (b[i].end == s)
                return &b[i];
    return NULL;
}

static int cmp_block(const void *a, const void *b)
{
    const mp_block *x = a, *y = b;
    if (x->tensor != y->tensor)
        return x->tensor < y->tensor ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

mp_status mpv_program_build(const mp_graph *g, const mp_step *steps,
                            uint32_t n_steps, const mp_block *blocks,
                            uint32_t n_blocks, uint64_t alignment,
                            mpv_program **out)
{
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "validate: graph not finalized");
    mpv_program *p = mp__calloc(ctx, 1, sizeof *p);
    if (!p)
        return MP_ERR_NOMEM;
    p->ctx = ctx;
    p->graph = g;
    p->alignment = alignment ? alignment : 1;
    p->n_steps = n_steps;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    mp_status st = MP_OK;
    mp_block *sorted = NULL;
    const mp_block **byt = NULL;
    uint32_t *cnt = NULL;
    lower L = {g, NULL, 0, 0, ctx};
    p->steps = mp__calloc(ctx, n_steps ? n_steps : 1, sizeof *p->steps);
    p->nodes = mp__calloc(ctx, nn ? nn : 1, sizeof *p->nodes);
    p->woff = mp__alloc(ctx, (nt ? nt : 1) * sizeof *p->woff);
    p->outputs = mp__alloc(ctx, (nt ? nt : 1) * sizeof *p->outputs);
    p->out_offs = mp__alloc(ctx, (nt ? nt : 1) * sizeof *p->out_offs);
    p->inputs = mp__alloc(ctx, (nt ? nt : 1) * sizeof *p->inputs);
    p->in_offs = mp__alloc(ctx, (nt ? nt : 1) * sizeof *p->in_offs);
    sorted = mp__alloc(ctx, (n_blocks ? n_blocks : 1) * sizeof *sorted);
    byt = mp__calloc(ctx, nt ? nt : 1, sizeof *byt);
    cnt = mp__calloc(ctx, nt ? nt : 1, sizeof *cnt);
    if (!p->steps || !p->nodes || !p->woff || !p->outputs || !p->out_offs ||
        !p->inputs || !p->in_offs || !sorted || !byt ||
        !cnt) {
        st = MP_ERR_NOMEM;
        goto fail;
    }
    /* weights buffer: persistent storage roots, 256-aligned */
    uint64_t w = 0;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        p->woff[t] = UINT64_MAX;
        if (tt->alias_of != MP_NONE || tt->bytes == 0 || mp__tensor_in_arena(tt))
            continue;
        p->woff[t] = w;
        if (!mp__add_u64(w, tt->bytes, &w) || !mp__align_up(w, WALIGN, &w)) {
            st = mp__err(ctx, MP_ERR_OVERFLOW, "validate: weights overflow");
            goto fail;
        }
    }
    p->weights_bytes = w;
    /* blocks grouped by tensor */
    if (n_blocks)
        memcpy(sorted, blocks, n_blocks * sizeof *sorted);
    qsort(sorted, n_blocks, sizeof *sorted, cmp_block);
    for (uint32_t i = 0; i < n_blocks; i++) {
        uint32_t t = sorted[i].tensor;
        if (t >= nt) {
            st = mp__err(ctx, MP_ERR_INVALID_ARG, "validate: block %u: no "
                        "tensor %u", (unsigned)i, (unsigned)t);
            goto fail;
        }
        if (!cnt[t])
            byt[t] = &sorted[i];
        cnt[t]++;
        uint64_t e;
        if (!mp__add_u64(sorted[i].offset, sorted[i].size, &e)) {
            st = mp__err(ctx, MP_ERR_OVERFLOW, "validate: block end overflows");
            goto fail;
        }
        if (e > p->arena_bytes)
            p->arena_bytes = e;
    }
    /* nodes */
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &g->nodes[i];
        mpv_node *pn = &p->nodes[i];
        pn->first = L.n;
        pn->run = node_runs(g, n);
        if (!pn->run)
            continue;
        const char *why = NULL;
        int r = lower_node(&L, n, &why);
        if (r < 0) {
            st = MP_ERR_NOMEM;
            goto fail;
        }
        if (r > 0) {
            L.n = pn->first;
            mpv_launch *x = add_launch(&L, MPV_L_SYNTH);
            if (!x) {
                st = MP_ERR_NOMEM;
                goto fail;
            }
            x->workspace = 256;
            pn->synthetic = 1;
            pn->why = why;
        }
        pn->count = L.n - pn->first;
    }
    p->launches = L.l;
    p->n_launches = L.n;
    L.l = NULL;
    for (uint32_t i = 0; i < p->n_launches; i++)
        if (p->launches[i].workspace > p->workspace_bytes)
            p->workspace_bytes = p->launches[i].workspace;
    if (p->workspace_bytes < 256)
        p->workspace_bytes = 256;
    /* steps and their references */
    size_t cap_refs = 0;
    p->compute_only = 1;
    for (uint32_t s = 0; s < n_steps; s++) {
        const mp_step *sp = &steps[s];
        mpv_step *ps = &p->steps[s];
        ps->kind = sp->kind;
        ps->index = sp->index;
        ps->refs = p->n_refs;
        uint32_t list[2] = {0, 0}, nl = 0;
        const uint32_t *ts = NULL;
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE) {
            if (sp->index >= nn) {
                st = mp__err(ctx, MP_ERR_INVALID_ARG, "validate: step %u: no "
                            "node %u", (unsigned)s, (unsigned)sp->index);
                goto fail;
            }
            const mp__node *n = &g->nodes[sp->index];
            if (sp->kind == MP_STEP_RECOMPUTE) {
                p->n_recompute++;
                p->compute_only = 0;
            }
            nl = n->n_in + n->n_out;
            ts = NULL;
            if ((st = mp__grow(ctx, (void **)&p->refs, sizeof *p->refs,
                              p->n_refs + nl, &cap_refs)))
                goto fail;
            for (uint32_t k = 0; k < nl; k++) {
                uint32_t t = k < n->n_in ? n->inputs[k] : n->outputs[k - n->n_in];
                mpv_ref *rf = &p->refs[p->n_refs + k];
                memset(rf, 0, sizeof *rf);
                rf->tensor = MP_NONE;
                if (t == MP_NONE)
                    continue;
                uint32_t r = g->tensors[t].root;
                rf->tensor = r;
                rf->bytes = g->tensors[t].bytes;
                if (p->woff[r] != UINT64_MAX) {
                    rf->space = MPV_SPACE_WEIGHTS;
                    rf->offset = p->woff[r];
                } else if (mp__tensor_in_arena(&g->tensors[r])) {
                    /* an input may end here: its block was taken over
                     * in place by this step's output (issue 4) */
                    const mp_block *b = block_at(byt, cnt, r, s, k < n->n_in);
                    if (!b) {
                        if (!p->nodes[sp->index].run)
                            continue;
                        st = mp__err(ctx, MP_ERR_VERIFY,
                                    "validate: step %u (node '%s'): tensor "
                                    "'%s' has no block at this step",
                                    (unsigned)s, n->name, g->tensors[t].name);
                        goto fail;
                    }
                    rf->space = MPV_SPACE_ARENA;
                    rf->offset = b->offset;
                }
            }
            p->n_refs += nl;
            ps->n_refs = nl;
            continue;
        }
        if (sp->kind == MP_STEP_OFFLOAD || sp->kind == MP_STEP_PREFETCH ||
            sp->kind == MP_STEP_FREE) {
            if (sp->index >= nt) {
                st = mp__err(ctx, MP_ERR_INVALID_ARG, "validate: step %u: no "
                            "tensor %u", (unsigned)s, (unsigned)sp->index);
                goto fail;
            }
            if (sp->kind != MP_STEP_FREE)
                p->compute_only = 0;
            if (sp->kind == MP_STEP_OFFLOAD)
                p->n_offload++;
            if (sp->kind == MP_STEP_PREFETCH)
                p->n_prefetch++;
            list[0] = sp->index;
            nl = 1;
            ts = list;
            if ((st = mp__grow(ctx, (void **)&p->refs, sizeof *p->refs,
                              p->n_refs + 1, &cap_refs)))
                goto fail;
            uint32_t r = g->tensors[ts[0]].root;
            mpv_ref *rf = &p->refs[p->n_refs];
            memset(rf, 0, sizeof *rf);
            rf->tensor = r;
            rf->bytes = g->tensors[r].bytes;
            const mp_block *b =
                block_at(byt, cnt, r, s, sp->kind != MP_STEP_PREFETCH);
            if (sp->kind == MP_STEP_PREFETCH) {
                b = NULL;
                for (uint32_t i = 0; i < cnt[r]; i++)
                    if (byt[r][i].first == s)
                        b = &byt[r][i];
            }
            if (b) {
                rf->space = MPV_SPACE_ARENA;
                rf->offset = b->offset;
            } else if (sp->kind != MP_STEP_FREE) {
                st = mp__err(ctx, MP_ERR_VERIFY,
                            "validate: step %u: %s of '%s': no block",
                            (unsigned)s, mp_step_kind_name(sp->kind),
                            g->tensors[r].name);
                goto fail;
            }
            p->n_refs += 1;
            ps->n_refs = 1;
            continue;
        }
        st = mp__err(ctx, MP_ERR_UNSUPPORTED, "validate: step %u: unknown kind",
                    (unsigned)s);
        goto fail;
    }
    for (uint32_t i = 0; i < nn; i++) {
        if (!p->nodes[i].run)
            continue;
        if (p->nodes[i].synthetic)
            p->n_synthetic++;
        else
            p->n_real++;
    }
    /* outputs to compare: arena roots of graph outputs */
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (!(tt->flags & MP__TF_OUTPUT))
            continue;
        uint32_t r = tt->root;
        if (!mp__tensor_in_arena(&g->tensors[r]))
            continue;
        int dup = 0;
        for (uint32_t k = 0; k < p->n_outputs; k++)
            dup |= p->outputs[k] == r;
        if (dup)
            continue;
        const mp_block *b = n_steps ? block_at(byt, cnt, r, n_steps - 1, 1)
                                    : NULL;
        if (!b) {
            st = mp__err(ctx, MP_ERR_VERIFY, "validate: output '%s' is not "
                        "resident at the end", g->tensors[r].name);
            goto fail;
        }
        p->out_offs[p->n_outputs] = b->offset;
        p->outputs[p->n_outputs++] = r;
    }
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || !mp__tensor_in_arena(tt))
            continue;
        for (uint32_t i = 0; i < cnt[t]; i++)
            if (byt[t][i].first == 0) {
                p->inputs[p->n_inputs] = t;
                p->in_offs[p->n_inputs++] = byt[t][i].offset;
                break;
            }
    }
    mp__dealloc(ctx, sorted);
    mp__dealloc(ctx, byt);
    mp__dealloc(ctx, cnt);
    *out = p;
    return MP_OK;
fail:
    mp__dealloc(ctx, L.l);
    mp__dealloc(ctx, sorted);
    mp__dealloc(ctx, byt);
    mp__dealloc(ctx, cnt);
    mpv_program_destroy(p);
    return st;
}

mp_status mpv_program_from_plan(const mp_graph *g, const mp_plan *p,
                                mpv_program **out)
{
    return mpv_program_build(g, mp_plan_steps(p), mp_plan_num_steps(p),
                             mp_plan_blocks(p), mp_plan_num_blocks(p),
                             mp_plan_figures(p)->alignment, out);
}

/* ---- initial values ------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static double unif(uint64_t seed, uint64_t t, uint64_t i)
{
    uint64_t h = mix64(seed ^ mix64(t * 0x9e3779b97f4a7c15ull + i));
    return (double)(h >> 11) / 9007199254740992.0; /* [0, 1) */
}

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = (x >> 13) & 0x3ffu;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | ((uint32_t)e << 10) | m);
}

static void put_value(void *dst, int dtype, uint64_t i, double v)
{
    unsigned char *b = dst;
    switch (dtype) {
    case MP_DTYPE_FLOAT32: {
        float f = (float)v;
        memcpy(b + i * 4, &f, 4);
        break;
    }
    case MP_DTYPE_FLOAT64:
        memcpy(b + i * 8, &v, 8);
        break;
    case MP_DTYPE_FLOAT16: {
        uint16_t h = f32_to_f16((float)v);
        memcpy(b + i * 2, &h, 2);
        break;
    }
    case MP_DTYPE_INT64: {
        int64_t x = (int64_t)v;
        memcpy(b + i * 8, &x, 8);
        break;
    }
    case MP_DTYPE_INT32: {
        int32_t x = (int32_t)v;
        memcpy(b + i * 4, &x, 4);
        break;
    }
    default:
        b[i] = (unsigned char)(int64_t)v;
        break;
    }
}

static int is_float_dtype(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_FLOAT16;
}

static int put_ok(int dt)
{
    return is_float_dtype(dt) || dt == MP_DTYPE_INT64 || dt == MP_DTYPE_INT32 ||
           dt == MP_DTYPE_INT8 || dt == MP_DTYPE_UINT8 || dt == MP_DTYPE_BOOL;
}

/* fills one tensor's bytes: known values, else random of its dtype */
static void fill_tensor(const mp__tensor *t, uint32_t id, void *dst,
                        uint64_t seed, int is_input)
{
    uint64_t n = (uint64_t)(t->rank >= 0 ? numel(t) : 0);
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    if (!put_ok(t->dtype) || !bits || n * bits / 8 != t->bytes) {
        unsigned char *b = dst;
        for (uint64_t i = 0; i < t->bytes; i++)
            b[i] = (unsigned char)(mix64(seed ^ (id * 1315423911ull + i)) & 0x3f);
        return;
    }
    if (t->value && t->n_value == n) {
        for (uint64_t i = 0; i < n; i++) {
            double v;
            if (is_float_dtype(t->dtype))
                memcpy(&v, &t->value[i], sizeof v);
            else
                v = (double)t->value[i];
            put_value(dst, t->dtype, i, v);
        }
        return;
    }
    if (is_float_dtype(t->dtype)) {
        double lo = -1.0, hi = 1.0;
        if (!is_input) {
            if (t->rank >= 2 && t->dims[0] > 0) {
                /* fan-in scaled, as an initializer would */
                double fan = (double)n / (double)t->dims[0];
                double a = 1.0 / sqrt(fan > 1 ? fan : 1);
                lo = -a;
                hi = a;
            } else {
                /* biases, normalization parameters: positive, near 1 */
                lo = 0.5;
                hi = 1.0;
            }
        }
        for (uint64_t i = 0; i < n; i++)
            put_value(dst, t->dtype, i, lo + (hi - lo) * unif(seed, id, i));
        return;
    }
    /* integers: small non-negative values (indices stay in range) */
    for (uint64_t i = 0; i < n; i++)
        put_value(dst, t->dtype, i,
                  t->dtype == MP_DTYPE_BOOL ? (double)(unif(seed, id, i) < 0.5)
                                            : (double)(int)(4 * unif(seed, id, i)));
}

void mpv_weights_init(const mpv_program *p, void *buf, uint64_t seed)
{
    const mp_graph *g = p->graph;
    memset(buf, 0, p->weights_bytes);
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (p->woff[t] != UINT64_MAX)
            fill_tensor(&g->tensors[t], t, (unsigned char *)buf + p->woff[t],
                        seed, 0);
}

void mpv_input_init(const mpv_program *p, uint32_t tensor, void *buf,
                    uint64_t seed)
{
    fill_tensor(&p->graph->tensors[tensor], tensor, buf, seed ^ 0x1234567ull,
                1);
}

/* ---- reference allocation model ------------------------------------------ */

uint64_t mpv_reference_live(const mpv_program *p, uint64_t *live)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    uint32_t *uses = mp__calloc(ctx, nt ? nt : 1, sizeof *uses);
    uint8_t *alive = mp__calloc(ctx, nt ? nt : 1, 1);
    uint8_t *done = mp__calloc(ctx, nn ? nn : 1, 1);
    uint64_t cur = 0, max = 0;
    if (!uses || !alive || !done)
        goto out;
    /* distinct consumer nodes of each root (through views) */
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_in; k++) {
            if (n->inputs[k] == MP_NONE)
                continue;
            uint32_t r = g->tensors[n->inputs[k]].root;
            int seen = 0;
            for (uint32_t j = 0; j < k; j++)
                seen |= n->inputs[j] != MP_NONE &&
                        g->tensors[n->inputs[j]].root == r;
            if (!seen)
                uses[r]++;
        }
    }
    uint8_t *keep = alive; /* reuse as flags: bit 1 = kept to the end */
    for (uint32_t t = 0; t < nt; t++)
        if (g->tensors[t].flags & MP__TF_OUTPUT)
            keep[g->tensors[t].root] |= 2;
    uint64_t al = p->alignment;
#define SZ(t) ((g->tensors[t].bytes + al - 1) / al * al)
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE && mp__tensor_in_arena(tt) &&
            (uses[t] || (keep[t] & 2))) {
            alive[t] |= 1;
            cur += SZ(t);
        }
    }
    if (cur > max)
        max = cur;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        if (ps->kind == MP_STEP_COMPUTE && !done[ps->index]) {
            const mp__node *n = &g->nodes[ps->index];
            done[ps->index] = 1;
            for (uint32_t o = 0; o < n->n_out; o++) {
                uint32_t t = n->outputs[o];
                if (mp__tensor_in_arena(&g->tensors[t]) && !(alive[t] & 1)) {
                    alive[t] |= 1;
                    cur += SZ(t);
                }
            }
            if (cur > max)
                max = cur;
            for (uint32_t k = 0; k < n->n_in; k++) {
                if (n->inputs[k] == MP_NONE)
                    continue;
                uint32_t r = g->tensors[n->inputs[k]].root;
                int seen = 0;
                for (uint32_t j = 0; j < k; j++)
                    seen |= n->inputs[j] != MP_NONE &&
                            g->tensors[n->inputs[j]].root == r;
                if (seen || !uses[r])
                    continue;
                if (--uses[r] == 0 && (alive[r] & 1) && !(keep[r] & 2)) {
                    alive[r] &= (uint8_t)~1u;
                    cur -= SZ(r);
                }
            }
            /* unused outputs die at once */
            for (uint32_t o = 0; o < n->n_out; o++) {
                uint32_t t = n->outputs[o];
                if ((alive[t] & 1) && !uses[t] && !(keep[t] & 2)) {
                    alive[t] &= (uint8_t)~1u;
                    cur -= SZ(t);
                }
            }
        }
        if (live)
            live[s] = cur;
    }
#undef SZ
out:
    mp__dealloc(ctx, uses);
    mp__dealloc(ctx, alive);
    mp__dealloc(ctx, done);
    return max;
}

void mpv_options_init(mpv_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->reference = 1;
    o->sample_memory = 1;
}

void mpv_result_free(mpv_result *r)
{
    if (r) {
        free(r->steps);
        r->steps = NULL;
    }
}

/* ---- predicted time ------------------------------------------------------ */

double mpv_predict_seconds(const mpv_program *p, const mp_device *d,
                           double *step_s)
{
    const mp_graph *g = p->graph;
    double sum = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        double t = 0;
        if (ps->kind == MP_STEP_COMPUTE || ps->kind == MP_STEP_RECOMPUTE) {
            mp_op_cost c;
            if (p->nodes[ps->index].run) {
                if (mp_node_estimate(g, ps->index, d, &c) != MP_OK)
                    return -1;
                t = c.seconds;
            }
        } else if (ps->kind == MP_STEP_OFFLOAD ||
                   ps->kind == MP_STEP_PREFETCH) {
            /* the executor's compute stream waits for each copy */
            t = mp_device_transfer_seconds(d, p->refs[ps->refs].bytes,
                                           ps->kind == MP_STEP_OFFLOAD);
        }
        if (step_s)
            step_s[s] = t;
        sum += t;
    }
    return sum;
}

/* ---- values for an outside comparison (onnxruntime) ----------------------- */

static int dump_line(FILE *ix, const char *kind, const mp__tensor *t,
                     uint64_t off, uint64_t bytes)
{
    if (fprintf(ix, "%s\t%s\t%s\t", kind, t->name ? t->name : "",
                mp_dtype_name((mp_dtype)t->dtype)) < 0)
        return -1;
    for (int k = 0; k < t->rank; k++)
        fprintf(ix, "%s%lld", k ? "," : "", (long long)t->dims[k]);
    return fprintf(ix, "\t%llu\t%llu\n", (unsigned long long)off,
                   (unsigned long long)bytes) < 0 ? -1 : 0;
}

mp_status mpv_dump_values(const mpv_program *p, const char *dir,
                          const void *weights, const void *const *inputs,
                          const void *outs)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    size_t n = strlen(dir) + 16;
    char *pi = mp__alloc(ctx, n), *pb = mp__alloc(ctx, n);
    FILE *ix = NULL, *bin = NULL;
    mp_status st = MP_ERR_NOMEM;
    if (!pi || !pb)
        goto out;
    snprintf(pi, n, "%s/values.txt", dir);
    snprintf(pb, n, "%s/values.bin", dir);
    ix = fopen(pi, "w");
    bin = fopen(pb, "wb");
    if (!ix || !bin) {
        st = mp__err(ctx, MP_ERR_IO, "%s: cannot write", ix ? pb : pi);
        goto out;
    }
    uint64_t at = 0;
    int bad = 0;
    /* weights and folded constants (the weights buffer) */
    for (uint32_t t = 0; t < g->n_tensors && !bad; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (p->woff[t] == UINT64_MAX || !tt->bytes)
            continue;
        bad |= dump_line(ix, "weight", tt, at, tt->bytes) != 0;
        bad |= fwrite((const unsigned char *)weights + p->woff[t], 1,
                      tt->bytes, bin) != tt->bytes;
        at += tt->bytes;
    }
    for (uint32_t i = 0; i < p->n_inputs && !bad; i++) {
        const mp__tensor *tt = &g->tensors[p->inputs[i]];
        bad |= dump_line(ix, "input", tt, at, tt->bytes) != 0;
        bad |= fwrite(inputs[i], 1, tt->bytes, bin) != tt->bytes;
        at += tt->bytes;
    }
    /* graph outputs, by their own names (a view shares its root's bytes);
     * outs holds the roots of p->outputs one after another */
    uint64_t obase = at;
    for (uint32_t t = 0; t < g->n_tensors && !bad; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (!(tt->flags & MP__TF_OUTPUT))
            continue;
        uint64_t off = 0;
        int found = 0;
        for (uint32_t k = 0; k < p->n_outputs; k++) {
            if (p->outputs[k] == tt->root) {
                found = 1;
                break;
            }
            off += g->tensors[p->outputs[k]].bytes;
        }
        if (found)
            bad |= dump_line(ix, "output", tt, obase + off,
                             tt->bytes < g->tensors[tt->root].bytes
                                 ? tt->bytes
                                 : g->tensors[tt->root].bytes) != 0;
    }
    for (uint32_t k = 0; k < p->n_outputs && !bad; k++) {
        uint64_t b = g->tensors[p->outputs[k]].bytes;
        bad |= fwrite(outs, 1, b, bin) != b;
        outs = (const unsigned char *)outs + b;
    }
    st = bad ? mp__err(ctx, MP_ERR_IO, "%s: write failed", dir) : MP_OK;
out:
    if (ix && fclose(ix) != 0 && st == MP_OK)
        st = mp__err(ctx, MP_ERR_IO, "%s: write failed", pi);
    if (bin && fclose(bin) != 0 && st == MP_OK)
        st = mp__err(ctx, MP_ERR_IO, "%s: write failed", pb);
    mp__dealloc(ctx, pi);
    mp__dealloc(ctx, pb);
    return st;
}
