/* host.c - lowering a plan into an executor program (no GPU needed).
 *
 * Every op-specific decision starts from the registry entry's kernel
 * (MP__OP_KERNEL / MP__OP_KOP); shapes and attributes give the parameters.
 * Anything the kernels cannot do (an unsupported dtype, rank, mode) falls
 * back to the synthetic kernel, and the node records why. */
#include "validate.h"

#include "cost.h"
#include "ops.h"
#include "sched.h"
#include "shape.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WALIGN 256u

/* product of dims[from..to) (1 when empty) */
static int64_t dims_prod(const int64_t *dims, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= dims[i];
    return n;
}

static int64_t numel(const mp__tensor *t)
{
    return dims_prod(t->dims, 0, t->rank);
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

static const mp__tensor *in_t(const mp_graph *g, const mp__node *n, uint32_t i)
{
    return i < n->n_in && n->inputs[i] != MP_NONE ? &g->tensors[n->inputs[i]]
                                                  : NULL;
}

static int is_float_dtype(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_FLOAT16;
}

/* element k of a tensor's known values; those of a float tensor are kept
 * as the bits of a double */
static double value_at(const mp__tensor *t, uint64_t k)
{
    double d;
    if (!is_float_dtype(t->dtype))
        return (double)t->value[k];
    memcpy(&d, &t->value[k], sizeof d);
    return d;
}

/* known values of input slot i (a folded constant), at most cap of them:
 * as ints into iv, or as floats into fv when given; count or -1 */
static int input_values(const mp_graph *g, const mp__node *n, uint32_t i,
                        int cap, int64_t *iv, double *fv)
{
    const mp__tensor *t = in_t(g, n, i);
    if (!t || !t->value || t->n_value > (uint32_t)cap)
        return -1;
    for (uint32_t k = 0; k < t->n_value; k++) {
        if (fv)
            fv[k] = value_at(t, k);
        else
            iv[k] = is_float_dtype(t->dtype) ? (int64_t)value_at(t, k)
                                             : t->value[k];
    }
    return (int)t->n_value;
}

static int input_ints(const mp_graph *g, const mp__node *n, uint32_t i,
                      int64_t *v, int cap)
{
    return input_values(g, n, i, cap, v, NULL);
}

static int input_floats(const mp_graph *g, const mp__node *n, uint32_t i,
                        double *v, int cap)
{
    return input_values(g, n, i, cap, NULL, v);
}

static int esize_of(const mp__tensor *t)
{
    unsigned b = mp_dtype_bits((mp_dtype)t->dtype);
    return (b == 8 || b == 16 || b == 32 || b == 64) ? (int)(b / 8) : 0;
}

/* a float operand of the kernels: float32, or bfloat16, which they read
 * and write as float32 (launch_bf16); the launch kinds that take only
 * float32 are kept from bfloat16 operands by lower_node */
static int is_f32(const mp__tensor *t)
{
    return t && (t->dtype == MP_DTYPE_FLOAT32 ||
                 t->dtype == MP_DTYPE_BFLOAT16);
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

static int norm_axis(int64_t a, int rank)
{
    return (int)(a < 0 ? a + rank : a);
}

/* attribute "axis" (default def) counted from 0 for rank; -1 when out of
 * range */
static int axis_attr(const mp__node *n, int64_t def, int rank)
{
    int axis = norm_axis(attr_i(n, "axis", def), rank);
    return axis < 0 || axis >= rank ? -1 : axis;
}

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

/* Element strides of tensor t's axes in its storage (rank <= MPV_MAXR):
 * row-major for a tensor of its own layout (a range view included: its
 * ref points at its first byte), the input's permuted for a transposed
 * or permuted view (a Transpose its readers take in place). 0 or -1. */
static int operand_strides(const mp_graph *g, uint32_t t, int64_t *st)
{
    const mp__tensor *tt = &g->tensors[t];
    if (tt->rank < 0 || tt->rank > MPV_MAXR)
        return -1;
    unsigned k = mp__tensor_view_kind(g, t);
    if (k != MP__NVIEW_T && k != MP__NVIEW_P) {
        strides_of(tt->dims, tt->rank, st);
        return 0;
    }
    const mp__node *n = &g->nodes[tt->producer];
    const mp__tensor *x = &g->tensors[n->inputs[0]];
    int r = tt->rank;
    int64_t ist[MPV_MAXR], perm[MPV_MAXR];
    if (x->rank != r || operand_strides(g, n->inputs[0], ist))
        return -1;
    if (attr_ints(n, "perm", perm, MPV_MAXR) != r)
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r)
            return -1;
        st[i] = ist[perm[i]];
    }
    return 0;
}

/* ---- launches -------------------------------------------------------------- */

typedef struct lower {
    const mp_graph *g;
    mpv_launch *l;
    uint32_t n, cap;
    mp_ctx *ctx;
    const mpv_rank_lowering *rl; /* a rank graph's (NULL: none) */
    int group;          /* the collective being lowered: MPV_COLL_DP, _TP */
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

/* a launch that reads node input slots 0 .. n_in - 1 and writes output
 * slot 0 */
static mpv_launch *add_launch_io(lower *L, int kind, int n_in)
{
    mpv_launch *x = add_launch(L, kind);
    if (!x)
        return NULL;
    for (int i = 0; i < n_in; i++)
        x->in[i] = i;
    x->out = 0;
    return x;
}

/* fills output slot out: n floats of value, or (zero_bytes > 0) every
 * byte with zero_bytes - 1; 0 or -1 */
static int add_fill(lower *L, int out, int64_t n, int zero_bytes,
                    double value)
{
    mpv_launch *f = add_launch(L, MPV_L_FILL);
    if (!f)
        return -1;
    f->out = out;
    f->p.fill.n = n;
    f->p.fill.value = value;
    f->p.fill.zero_bytes = zero_bytes;
    return 0;
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
    for (int i = 0; i < rank; i++) {
        x->p.copy.dims[i] = dims[i];
        x->p.copy.ist[i] = ist[i];
        x->p.copy.ost[i] = ost[i];
    }
    x->p.copy.n = dims_prod(dims, 0, rank);
    x->p.copy.ioff = ioff;
    x->p.copy.ooff = ooff;
    return x;
}

/* ---- one lowering per kernel ----------------------------------------------- */

/* Each returns 0 (lowered), 1 (needs the synthetic kernel, *why set to a
 * static string; the caller drops the launches the node added) or -1
 * (out of memory). */
#define FAIL(msg)                                                            \
    do {                                                                     \
        *why = (msg);                                                        \
        return 1;                                                            \
    } while (0)

static const mp__tensor *out_t(const mp_graph *g, const mp__node *n,
                               uint32_t o)
{
    return &g->tensors[n->outputs[o]];
}

static unsigned kop_of(const mp__node *n)
{
    return MP__OP_KOP(n->def);
}

/* Dropout (inference): y = x; mask: ones */
static int lower_copy(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0), *y = out_t(L->g, n, 0);
    int es = xt ? esize_of(xt) : 0;
    if (!xt || !es || numel(xt) != numel(y) || n->n_out > 2)
        FAIL("copy: shapes or extra outputs");
    int64_t dims[1] = {numel(y)}, st[1] = {1};
    if (!add_copy(L, 0, 0, 1, dims, st, st, 0, 0, es))
        return -1;
    /* the mask: all true (bytes 0x01) */
    if (n->n_out == 2 && add_fill(L, 1, numel(out_t(L->g, n, 1)), 2, 0) != 0)
        return -1;
    return 0;
}

/* input slot i, a scalar: its value into *v when the node has the input
 * (else *v stays); -1 when it has it but the value is not known */
static int scalar_input(const mp_graph *g, const mp__node *n, uint32_t i,
                        double *v)
{
    if (!in_t(g, n, i))
        return 0;
    return input_floats(g, n, i, v, 1) == 1 ? 0 : -1;
}

/* a unary op's alpha and beta */
static int unary_params(const mp_graph *g, const mp__node *n, double *a,
                        double *b, const char **why)
{
    *a = *b = 0;
    switch (kop_of(n)) {
    case MP__KOP_CLIP:
        *a = mp__attr_float(n, "min", -INFINITY);
        *b = mp__attr_float(n, "max", INFINITY);
        if (scalar_input(g, n, 1, a) != 0)
            FAIL("Clip: min not known");
        if (scalar_input(g, n, 2, b) != 0)
            FAIL("Clip: max not known");
        break;
    case MP__KOP_HARDSIGMOID:
        *a = mp__attr_float(n, "alpha", 0.2);
        *b = mp__attr_float(n, "beta", 0.5);
        break;
    case MP__KOP_LEAKYRELU:
        *a = mp__attr_float(n, "alpha", 0.01);
        break;
    case MP__KOP_ELU:
        *a = mp__attr_float(n, "alpha", 1.0);
        break;
    case MP__KOP_GELU:
        *a = strcmp(mp__attr_str(n, "approximate", "none"), "tanh") == 0;
        break;
    default:
        break;
    }
    return 0;
}

static int lower_unary(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0), *y = out_t(L->g, n, 0);
    if (!is_f32(xt) || !is_f32(y) || numel(xt) != numel(y))
        FAIL("unary: only float32");
    double a, b;
    if (unary_params(L->g, n, &a, &b, why) != 0)
        return 1;
    mpv_launch *x = add_launch_io(L, MPV_L_UNARY, 1);
    if (!x)
        return -1;
    x->p.unary.n = numel(y);
    x->p.unary.op = (int)kop_of(n);
    x->p.unary.alpha = a;
    x->p.unary.beta = b;
    return 0;
}

/* broadcasting pointwise op over the node's first n_in inputs */
static int lower_nary(lower *L, const mp__node *n, int op, int n_in,
                      const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *y = out_t(g, n, 0);
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
        const mp__tensor *a = in_t(g, n, (uint32_t)k);
        /* a broadcast view: its storage is the tensor it views, which
         * broadcasts to the output as the view would */
        if (a && mp__tensor_bview(g, n->inputs[k]))
            a = &g->tensors[a->alias_of];
        if (!is_f32(a) ||
            bcast_strides(a, y->dims, y->rank, x->p.nary.st[k]) != 0)
            FAIL("pointwise: input not float32 or not broadcastable");
        x->in[k] = k;
    }
    x->out = 0;
    return 0;
}

static int lower_binary(lower *L, const mp__node *n, const char **why)
{
    if (n->n_in != 2)
        FAIL("binary: two inputs");
    return lower_nary(L, n, (int)kop_of(n), 2, why);
}

/* Sum, Max, Min, Mean (a sum, then scaled by 1 / inputs) */
static int lower_variadic(lower *L, const mp__node *n, const char **why)
{
    unsigned kop = kop_of(n);
    int mean = kop == MP__KOP_MEAN;
    int r = lower_nary(L, n, mean ? MP__KOP_ADD : (int)kop, (int)n->n_in, why);
    if (r != 0 || !mean)
        return r;
    mpv_launch *x = add_launch(L, MPV_L_UNARY);
    if (!x)
        return -1;
    x->in[0] = -2; /* the output itself */
    x->out = 0;
    x->p.unary.n = numel(out_t(L->g, n, 0));
    x->p.unary.op = MPV_UOP_SCALE;
    x->p.unary.alpha = 1.0 / (double)n->n_in;
    return 0;
}

/* A matrix operand of rank r with element strides st: op N when its
 * columns are contiguous (ld: the row stride), op T when its rows are
 * (ld: the column stride); -1 when neither. */
static int matrix_op(const int64_t *st, int r, int64_t *ld)
{
    if (st[r - 1] == 1) {
        *ld = st[r - 2];
        return 0;
    }
    if (st[r - 2] == 1) {
        *ld = st[r - 1];
        return 1;
    }
    return -1;
}

/* The rows of a matrix operand (dims of rank r, element strides st) and
 * the output's leading dims yd[0..lead) walk as one row index: the
 * operand has every leading dim (none broadcast), each with the row
 * stride times the rows below it; read with op T (rows contiguous), its
 * column stride must hold the folded rows too. *mf: the folded rows. A
 * product whose other operand is shared by every batch index is then one
 * GEMM (cuBLAS is far faster on one tall product than on many short
 * ones: vit_b_32's Linear layers, whose weight is a transposed view). */
static int fold_rows(const int64_t *dims, const int64_t *st, int r,
                     const int64_t *yd, int lead, int64_t *mf)
{
    int64_t rows = dims[r - 2], rs = st[r - 2];
    if (r - 2 != lead)
        return 0;
    for (int i = lead - 1; i >= 0; i--) {
        if (dims[i] != yd[i] || (dims[i] != 1 && st[i] != rs * rows))
            return 0;
        rows *= dims[i];
    }
    if (st[r - 1] != 1 && !(rs == 1 && st[r - 1] >= rows))
        return 0;
    *mf = rows;
    return 1;
}

/* 1 when operand dims (rank r) are broadcast over every leading dim of an
 * output of rank ry (each absent or 1) */
static int shared_operand(const int64_t *dims, int r, int ry)
{
    for (int i = 0; i < ry - 2; i++) {
        int ib = i - (ry - r);
        if (ib >= 0 && dims[ib] != 1)
            return 0;
    }
    return 1;
}

/* MatMul with a permuted operand (a view read in place): each operand's
 * matrix read with op N or T through its strides, the batch dims (the
 * output's leading dims, an operand's broadcast ones at stride 0) walked
 * as a strided batch over the innermost and outer products over the
 * rest. */
static int lower_matmul_strided(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *a = in_t(g, n, 0), *b = in_t(g, n, 1);
    const mp__tensor *y = out_t(g, n, 0);
    int ra = a->rank, rb = b->rank, ry = y->rank;
    int64_t sa[MPV_MAXR], sb[MPV_MAXR], sy[MPV_MAXR];
    if (rb < 2 || ra > MPV_MAXR || rb > MPV_MAXR || ry > MPV_MAXR ||
        ry != (ra > rb ? ra : rb) ||
        operand_strides(g, n->inputs[0], sa) ||
        operand_strides(g, n->inputs[1], sb))
        FAIL("MatMul: a permuted operand's rank or strides");
    strides_of(y->dims, ry, sy);
    int64_t lda = 0, ldb = 0;
    int ta = matrix_op(sa, ra, &lda), tb = matrix_op(sb, rb, &ldb);
    if (ta < 0 || tb < 0)
        FAIL("MatMul: a permuted operand with no contiguous rows or columns");
    int64_t M = a->dims[ra - 2], K = a->dims[ra - 1], N = b->dims[rb - 1];
    if (b->dims[rb - 2] != K || y->dims[ry - 2] != M || y->dims[ry - 1] != N)
        FAIL("MatMul: shapes");
    mpv_launch *x = add_launch_io(L, MPV_L_GEMM, 2);
    if (!x)
        return -1;
    x->p.gemm.alpha = 1.0;
    x->p.gemm.ta = ta;
    x->p.gemm.tb = tb;
    x->p.gemm.m = M;
    x->p.gemm.n = N;
    x->p.gemm.k = K;
    x->p.gemm.lda = lda;
    x->p.gemm.ldb = ldb;
    x->p.gemm.ldc = N;
    x->p.gemm.batch = 1;
    /* the output's leading dims: the innermost a strided batch, the
     * others outer products; an operand broadcast there has stride 0;
     * with B shared and A's rows folding, one product */
    int lead = ry - 2;
    int64_t mf;
    if (lead > 0 && shared_operand(b->dims, rb, ry) &&
        fold_rows(a->dims, sa, ra, y->dims, lead, &mf)) {
        x->p.gemm.m = mf;
        return 0;
    }
    for (int i = 0; i < lead; i++) {
        int ia = i - (ry - ra), ib = i - (ry - rb);
        int64_t s_a = ia >= 0 && a->dims[ia] != 1 ? sa[ia] : 0;
        int64_t s_b = ib >= 0 && b->dims[ib] != 1 ? sb[ib] : 0;
        if ((ia >= 0 && a->dims[ia] != 1 && a->dims[ia] != y->dims[i]) ||
            (ib >= 0 && b->dims[ib] != 1 && b->dims[ib] != y->dims[i]))
            FAIL("MatMul: batch dims");
        int64_t ls[2] = {s_a, sa[ra - 1]}, lda2 = 0;
        int ta2 = ia >= 0 && a->dims[ia] != 1 ? matrix_op(ls, 2, &lda2) : -1;
        if (i == lead - 1 && s_b == 0 && y->dims[i] > M && ta2 >= 0) {
            /* B shared along this dim, which has more rows than M: its
             * index becomes the rows (A's at stride s_a, the output's at
             * sy[i]) and M the strided batch (MHA's seq-first in_proj:
             * [50, 8, 768] as 8 products of 50 rows, not 50 of 8) */
            x->p.gemm.m = y->dims[i];
            x->p.gemm.ta = ta2;
            x->p.gemm.lda = lda2;
            x->p.gemm.ldc = sy[i];
            x->p.gemm.batch = M;
            x->p.gemm.sa = sa[ra - 2];
            x->p.gemm.sb = 0;
            x->p.gemm.sc = sy[ry - 2];
        } else if (i == lead - 1) {
            x->p.gemm.batch = y->dims[i];
            x->p.gemm.sa = s_a;
            x->p.gemm.sb = s_b;
            x->p.gemm.sc = sy[i];
        } else {
            int o = x->p.gemm.orank++;
            x->p.gemm.odims[o] = y->dims[i];
            x->p.gemm.osa[o] = s_a;
            x->p.gemm.osb[o] = s_b;
            x->p.gemm.osc[o] = sy[i];
        }
    }
    return 0;
}

static int lower_matmul(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *a = in_t(g, n, 0), *b = in_t(g, n, 1);
    const mp__tensor *y = out_t(g, n, 0);
    if (!is_f32(a) || !is_f32(b) || !is_f32(y))
        FAIL("MatMul: only float32");
    if (a->rank < 2 || b->rank < 1 || y->rank < 1)
        FAIL("MatMul: 1-D A not supported");
    if (mp__tensor_view_kind(g, n->inputs[0]) == MP__NVIEW_P ||
        mp__tensor_view_kind(g, n->inputs[1]) == MP__NVIEW_P)
        return lower_matmul_strided(L, n, why);
    int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (b->rank >= 2 && b->dims[b->rank - 2] != K)
        FAIL("MatMul: inner dims differ");
    int64_t ba = dims_prod(a->dims, 0, a->rank - 2);
    int64_t bb = dims_prod(b->dims, 0, b->rank - 2);
    /* B shared, or the same batch (the batch dims must then be equal, not
     * broadcast), or A shared */
    if (bb != 1 && !(ba == bb && a->rank == b->rank) && ba != 1)
        FAIL("MatMul: batch broadcast not supported");
    /* an operand that is a transposed view holds its producer's input:
     * read it with op T */
    int ta = mp__tensor_tview(g, n->inputs[0]);
    int tb = b->rank >= 2 && mp__tensor_tview(g, n->inputs[1]);
    if (ta && ba != 1 && bb == 1)
        FAIL("MatMul: a transposed batched A with a shared B");
    mpv_launch *x = add_launch_io(L, MPV_L_GEMM, 2);
    if (!x)
        return -1;
    x->p.gemm.alpha = 1.0;
    x->p.gemm.beta = 0.0;
    x->p.gemm.ta = ta;
    x->p.gemm.tb = tb;
    x->p.gemm.k = K;
    x->p.gemm.n = N;
    x->p.gemm.lda = ta ? M : K;
    x->p.gemm.ldb = tb ? K : N;
    x->p.gemm.ldc = N;
    if (bb == 1) {
        /* B shared: one product with the batch folded into M */
        x->p.gemm.m = M * ba;
        x->p.gemm.batch = 1;
    } else {
        x->p.gemm.m = M;
        x->p.gemm.batch = bb;
        x->p.gemm.sa = ba == 1 ? 0 : M * K;
        x->p.gemm.sb = K * N;
        x->p.gemm.sc = M * N;
    }
    if (numel(y) != x->p.gemm.m * N * x->p.gemm.batch)
        FAIL("MatMul: output size does not match");
    return 0;
}

static int lower_gemm(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *a = in_t(g, n, 0), *b = in_t(g, n, 1),
                     *c = in_t(g, n, 2);
    const mp__tensor *y = out_t(g, n, 0);
    if (!is_f32(a) || !is_f32(b) || !is_f32(y) || a->rank != 2 ||
        b->rank != 2 || y->rank != 2)
        FAIL("Gemm: only float32 2-D");
    int ta = (int)attr_i(n, "transA", 0), tb = (int)attr_i(n, "transB", 0);
    int64_t M = y->dims[0], N = y->dims[1];
    int64_t K = ta ? a->dims[0] : a->dims[1];
    /* an operand that is a transposed view holds its producer's input,
     * [K, M] for A [M, K]: ta and tb say how the memory is read */
    ta ^= mp__tensor_tview(g, n->inputs[0]);
    tb ^= mp__tensor_tview(g, n->inputs[1]);
    double beta = mp__attr_float(n, "beta", 1.0);
    if (c) {
        /* C is copied into the output first, which the product adds to */
        if (!is_f32(c) || c->dtype != y->dtype)
            FAIL("Gemm: C not float32, or not the output's dtype");
        int64_t st[MPV_MAXR], ost[2] = {N, 1};
        if (bcast_strides(c, y->dims, 2, st) != 0)
            FAIL("Gemm: C not broadcastable");
        if (!add_copy(L, 2, 0, 2, y->dims, st, ost, 0, 0, esize_of(y)))
            return -1;
    }
    mpv_launch *x = add_launch_io(L, MPV_L_GEMM, 2);
    if (!x)
        return -1;
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

/* a 2-D window op over NCHW: input and output sizes, kernel, strides,
 * dilations and the top and left pads */
typedef struct window {
    int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
} window;

/* the same fields of the conv and pool parameters */
#define SET_WINDOW(P, W)                                                     \
    ((P).h = (W).h, (P).w = (W).w, (P).oh = (W).oh, (P).ow = (W).ow,         \
     (P).kh = (W).kh, (P).kw = (W).kw, (P).sh = (W).sh, (P).sw = (W).sw,     \
     (P).dh = (W).dh, (P).dw = (W).dw, (P).pt = (W).pt, (P).pl = (W).pl)

/* The window of x -> y with a kh x kw kernel: strides and dilations (1
 * where not given), pads explicit or from auto_pad. */
static void window_of(const mp__node *n, const mp__tensor *xt,
                      const mp__tensor *y, int64_t kh, int64_t kw, window *w)
{
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, pads[8];
    attr_ints(n, "strides", s, 2);
    attr_ints(n, "dilations", d, 2);
    *w = (window){.h = xt->dims[2], .w = xt->dims[3], .oh = y->dims[2],
                  .ow = y->dims[3], .kh = kh, .kw = kw, .sh = s[0],
                  .sw = s[1], .dh = d[0], .dw = d[1]};
    const char *ap = mp__attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
        int64_t th = (w->oh - 1) * w->sh + (w->kh - 1) * w->dh + 1 - w->h;
        int64_t tw = (w->ow - 1) * w->sw + (w->kw - 1) * w->dw + 1 - w->w;
        if (th < 0)
            th = 0;
        if (tw < 0)
            tw = 0;
        int upper = strcmp(ap, "SAME_UPPER") == 0;
        w->pt = upper ? th / 2 : th - th / 2;
        w->pl = upper ? tw / 2 : tw - tw / 2;
    } else if (attr_ints(n, "pads", pads, 8) == 4) {
        w->pt = pads[0];
        w->pl = pads[1];
    }
}

static int lower_conv(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *wt = in_t(g, n, 1),
                     *bt = in_t(g, n, 2);
    const mp__tensor *y = out_t(g, n, 0);
    if (!is_f32(xt) || !is_f32(wt) || !is_f32(y) || xt->rank != 4 ||
        wt->rank != 4 || y->rank != 4)
        FAIL("Conv: only float32 2-D (NCHW)");
    if (bt && !is_f32(bt))
        FAIL("Conv: bias not float32");
    int64_t G = attr_i(n, "group", 1);
    if (G <= 0 || xt->dims[1] % G || y->dims[1] % G ||
        wt->dims[1] * G != xt->dims[1] || wt->dims[0] != y->dims[1])
        FAIL("Conv: inconsistent group/channels");
    window w;
    window_of(n, xt, y, wt->dims[2], wt->dims[3], &w);
    mpv_launch *x = add_launch_io(L, MPV_L_CONV, bt ? 3 : 2);
    if (!x)
        return -1;
    SET_WINDOW(x->p.conv, w);
    x->p.conv.n = xt->dims[0];
    x->p.conv.c = xt->dims[1];
    x->p.conv.m = y->dims[1];
    x->p.conv.g = G;
    x->p.conv.has_bias = bt != NULL;
    x->p.conv.direct = w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 &&
                       w.pt == 0 && w.pl == 0 && w.oh == w.h && w.ow == w.w;
    if (!x->p.conv.direct) {
        /* im2col of one image: C*kh*kw rows of OH*OW floats */
        uint64_t ws = (uint64_t)xt->dims[1] * (uint64_t)(w.kh * w.kw) *
                      (uint64_t)(w.oh * w.ow) * 4u;
        x->workspace = ws;
    }
    return 0;
}

static int lower_pool(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    if (!is_f32(xt) || !is_f32(y) || xt->rank != 4 || y->rank != 4)
        FAIL("pool: only float32 2-D (NCHW)");
    int64_t k[2];
    if (attr_ints(n, "kernel_shape", k, 2) != 2)
        FAIL("pool: kernel_shape missing");
    window w;
    window_of(n, xt, y, k[0], k[1], &w);
    /* MaxPool's output 1: its int64 indices (ONNX's, or the ones a
     * training graph saves for the backward) */
    int is_max = kop_of(n) == MP__KOP_POOL_MAX, idx_out = -1;
    if (n->n_out > 1 && n->outputs[1] != MP_NONE) {
        const mp__tensor *it = out_t(g, n, 1);
        if (!is_max || n->n_out > 2 || it->dtype != MP_DTYPE_INT64 ||
            numel(it) != numel(y))
            FAIL("pool: outputs beyond MaxPool's indices");
        if (attr_i(n, "storage_order", 0) != 0)
            FAIL("MaxPool: indices in column-major storage order");
        idx_out = 1;
    }
    mpv_launch *x = add_launch_io(L, MPV_L_POOL, 1);
    if (!x)
        return -1;
    SET_WINDOW(x->p.pool, w);
    x->p.pool.nc = xt->dims[0] * xt->dims[1];
    x->p.pool.op = (int)kop_of(n);
    x->p.pool.count_pad = (int)attr_i(n, "count_include_pad", 0);
    x->p.pool.idx_out = idx_out;
    return 0;
}

static int lower_global_pool(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0);
    if (!is_f32(xt) || xt->rank < 3)
        FAIL("global pool: only float32");
    mpv_launch *x = add_launch_io(L, MPV_L_GPOOL, 1);
    if (!x)
        return -1;
    x->p.gpool.nc = xt->dims[0] * xt->dims[1];
    x->p.gpool.hw = numel(xt) / (x->p.gpool.nc ? x->p.gpool.nc : 1);
    x->p.gpool.op = (int)kop_of(n);
    return 0;
}

/* batch, channels and the size of one channel's plane of x, for the
 * per-channel parameters of BatchNormalization and LRN */
#define SET_NCHW(P, X)                                                       \
    ((P).n = (X)->dims[0], (P).c = (X)->dims[1],                             \
     (P).hw = numel(X) / ((X)->dims[0] * (X)->dims[1]))

/* the statistics a training graph saves (planner/train.c): the node's
 * last output, float32 [2, count] */
static int is_stats_out(const mp_graph *g, const mp__node *n, uint32_t o,
                        int64_t count)
{
    const mp__tensor *t = out_t(g, n, o);
    return o + 1 == n->n_out && is_f32(t) && t->rank == 2 &&
           t->dims[0] == 2 && t->dims[1] == count;
}

/* Inference form (training_mode 0): y from the running mean and var;
 * training form: from the batch's, writing the updated running ones
 * (outputs 1, 2); either writes the statistics a training graph saves
 * (the last output, [2, C]) */
static int lower_batchnorm(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    if (!is_f32(xt) || !is_f32(y) || xt->rank < 2 || n->n_in < 5 ||
        numel(y) != numel(xt))
        FAIL("BatchNormalization: float32 with its four parameters");
    for (uint32_t i = 1; i < 5; i++) {
        const mp__tensor *t = in_t(g, n, i);
        if (!is_f32(t) || numel(t) != xt->dims[1])
            FAIL("BatchNormalization: parameters not float32 [C]");
    }
    int training = attr_i(n, "training_mode", 0) != 0;
    int rm = -1, rv = -1, stats = -1;
    for (uint32_t o = 1; o < n->n_out; o++) {
        if (n->outputs[o] == MP_NONE)
            continue;
        const mp__tensor *t = out_t(g, n, o);
        if (is_stats_out(g, n, o, xt->dims[1]))
            stats = (int)o;
        else if (training && o <= 2 && is_f32(t) && t->rank == 1 &&
                 numel(t) == xt->dims[1])
            *(o == 1 ? &rm : &rv) = (int)o;
        else
            FAIL("BatchNormalization: outputs beyond the running and the "
                 "saved statistics");
    }
    mpv_launch *x;
    if (!training && stats < 0) {
        if (!(x = add_launch_io(L, MPV_L_BN, 4)))
            return -1;
        SET_NCHW(x->p.bn, xt);
        x->p.bn.eps = mp__attr_float(n, "epsilon", 1e-5);
        return 0;
    }
    if (!(x = add_launch_io(L, MPV_L_BN_TRAIN, 4)))
        return -1;
    SET_NCHW(x->p.bnt, xt);
    x->p.bnt.eps = mp__attr_float(n, "epsilon", 1e-5);
    x->p.bnt.momentum = mp__attr_float(n, "momentum", 0.9);
    x->p.bnt.training = training;
    x->p.bnt.rm_out = rm;
    x->p.bnt.rv_out = rv;
    x->p.bnt.stats_out = stats;
    return 0;
}

static int lower_layernorm(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0);
    /* RMSNormalization: x / sqrt(mean(x^2) + eps) * scale, one output */
    if (kop_of(n) == MP__KOP_RMS_NORM) {
        if (!is_f32(xt) || xt->rank < 1 || !is_f32(in_t(g, n, 1)) ||
            n->n_in > 2 || n->n_out > 1)
            FAIL("RMSNormalization: float32 or bfloat16 X and scale, one "
                 "output");
        int ax = axis_attr(n, -1, xt->rank);
        if (ax < 0)
            FAIL("RMSNormalization: bad axis");
        int64_t c = dims_prod(xt->dims, ax, xt->rank);
        if (numel(in_t(g, n, 1)) != c)
            FAIL("RMSNormalization: scale not of the normalized size");
        mpv_launch *x = add_launch_io(L, MPV_L_LN, 2);
        if (!x)
            return -1;
        x->p.ln.cols = c;
        x->p.ln.rows = numel(xt) / (c ? c : 1);
        x->p.ln.eps = mp__attr_float(n, "epsilon", 1e-5);
        x->p.ln.rms = 1;
        x->p.ln.mean_out = x->p.ln.inv_out = x->p.ln.stats_out = -1;
        return 0;
    }
    if (!is_f32(xt) || xt->rank < 1 || !is_f32(in_t(g, n, 1)))
        FAIL("LayerNormalization: only float32");
    int axis = axis_attr(n, -1, xt->rank);
    if (axis < 0)
        FAIL("LayerNormalization: bad axis");
    int64_t cols = dims_prod(xt->dims, axis, xt->rank);
    const mp__tensor *st = in_t(g, n, 1), *bt = in_t(g, n, 2);
    if (numel(st) != cols || (bt && numel(bt) != cols))
        FAIL("LayerNormalization: scale/bias not of the normalized size");
    mpv_launch *x = add_launch_io(L, MPV_L_LN, bt ? 3 : 2);
    if (!x)
        return -1;
    x->p.ln.cols = cols;
    x->p.ln.rows = numel(xt) / (cols ? cols : 1);
    x->p.ln.eps = mp__attr_float(n, "epsilon", 1e-5);
    x->p.ln.has_bias = bt != NULL;
    /* ONNX's Mean and InvStdDev (outputs 1, 2), the statistics a training
     * graph saves (the last output) */
    x->p.ln.mean_out = x->p.ln.inv_out = x->p.ln.stats_out = -1;
    for (uint32_t o = 1; o < n->n_out; o++) {
        if (n->outputs[o] == MP_NONE)
            continue;
        const mp__tensor *t = out_t(g, n, o);
        if (is_stats_out(g, n, o, x->p.ln.rows))
            x->p.ln.stats_out = (int)o;
        else if (o <= 2 && is_f32(t) && numel(t) == x->p.ln.rows)
            *(o == 1 ? &x->p.ln.mean_out : &x->p.ln.inv_out) = (int)o;
        else
            FAIL("LayerNormalization: outputs beyond Mean, InvStdDev and "
                 "the saved statistics");
    }
    return 0;
}

static int lower_lrn(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0);
    if (!is_f32(xt) || xt->rank < 3)
        FAIL("LRN: only float32");
    mpv_launch *x = add_launch_io(L, MPV_L_LRN, 1);
    if (!x)
        return -1;
    SET_NCHW(x->p.lrn, xt);
    x->p.lrn.size = attr_i(n, "size", 5);
    x->p.lrn.alpha = mp__attr_float(n, "alpha", 1e-4);
    x->p.lrn.beta = mp__attr_float(n, "beta", 0.75);
    x->p.lrn.bias = mp__attr_float(n, "bias", 1.0);
    return 0;
}

static int lower_softmax(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    if (!is_f32(xt) || !is_f32(y) || xt->rank < 1)
        FAIL("Softmax: only float32");
    int old = g->onnx_opset > 0 && g->onnx_opset < 13;
    int axis = axis_attr(n, old ? 1 : -1, xt->rank);
    if (axis < 0)
        FAIL("Softmax: bad axis");
    mpv_launch *x = add_launch_io(L, MPV_L_SOFTMAX, 1);
    if (!x)
        return -1;
    x->p.softmax.outer = dims_prod(xt->dims, 0, axis);
    if (old) {
        /* opset < 13: coerced to 2-D at axis */
        x->p.softmax.dim = dims_prod(xt->dims, axis, xt->rank);
        x->p.softmax.inner = 1;
    } else {
        x->p.softmax.dim = xt->dims[axis];
        x->p.softmax.inner = dims_prod(xt->dims, axis + 1, xt->rank);
    }
    x->p.softmax.log = kop_of(n) == MP__KOP_LOGSOFTMAX;
    return 0;
}

/* Concat and Split: a strided copy of each part (Concat's inputs, Split's
 * outputs) to or from its place along the axis in the whole (Concat's
 * output, Split's input) */
static int lower_parts(lower *L, const mp__node *n, int concat,
                       const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *w = concat ? out_t(g, n, 0) : in_t(g, n, 0);
    int es = esize_of(w);
    if (!es || w->rank < 1 || w->rank > MPV_MAXR)
        FAIL(concat ? "Concat: element size or rank"
                    : "Split: element size or rank");
    int axis = axis_attr(n, 0, w->rank);
    if (axis < 0)
        FAIL(concat ? "Concat: bad axis" : "Split: bad axis");
    int64_t wst[MPV_MAXR], pst[MPV_MAXR], off = 0;
    strides_of(w->dims, w->rank, wst);
    for (uint32_t i = 0; i < (concat ? n->n_in : n->n_out); i++) {
        const mp__tensor *a = concat ? in_t(g, n, i) : out_t(g, n, i);
        if (!a)
            continue;
        if (a->rank != w->rank || (concat && esize_of(a) != es))
            FAIL(concat ? "Concat: input rank or dtype" : "Split: output rank");
        strides_of(a->dims, a->rank, pst);
        int64_t at = off * wst[axis];
        if (numel(a) > 0 &&
            !(concat ? add_copy(L, (int)i, 0, a->rank, a->dims, pst, wst, 0,
                                at, es)
                     : add_copy(L, 0, (int)i, a->rank, a->dims, wst, pst, at,
                                0, es)))
            return -1;
        off += a->dims[axis];
    }
    return 0;
}

static int lower_concat(lower *L, const mp__node *n, const char **why)
{
    return lower_parts(L, n, 1, why);
}

static int lower_split(lower *L, const mp__node *n, const char **why)
{
    return lower_parts(L, n, 0, why);
}

static int lower_transpose(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
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

/* Slice's starts, axes and steps (axes 0.., steps 1 where not given):
 * inputs from opset 10, attributes before; their count or -1 */
static int slice_args(const mp_graph *g, const mp__node *n, int64_t *starts,
                      int64_t *axes, int64_t *steps, const char **why)
{
    int ns, na, nst;
    if (n->n_in >= 2) {
        ns = input_ints(g, n, 1, starts, MPV_MAXR);
        na = input_ints(g, n, 3, axes, MPV_MAXR);
        nst = input_ints(g, n, 4, steps, MPV_MAXR);
    } else {
        ns = attr_ints(n, "starts", starts, MPV_MAXR);
        na = attr_ints(n, "axes", axes, MPV_MAXR);
        nst = -1;
    }
    if (ns < 0) {
        *why = "Slice: starts not known";
        return -1;
    }
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
    if (na != ns || nst != ns) {
        *why = "Slice: starts/axes/steps lengths differ";
        return -1;
    }
    return ns;
}

/* a slice's first index on an axis of dim elements: start clamped into
 * range for the direction of step */
static int64_t slice_start(int64_t st, int64_t dim, int64_t step)
{
    if (st < 0)
        st += dim;
    if (step > 0) {
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
    return st;
}

/* Where a Slice's output y [r dims] lies in its input xt: the input's
 * element strides per output axis (sst) and the offset of its first
 * element (*off). 0, or 1 with *why set. */
static int slice_map(const mp_graph *g, const mp__node *n,
                     const mp__tensor *xt, const mp__tensor *y, int64_t *sst,
                     int64_t *off, const char **why)
{
    int r = xt->rank;
    int64_t starts[MPV_MAXR], axes[MPV_MAXR], steps[MPV_MAXR];
    int ns = slice_args(g, n, starts, axes, steps, why);
    if (ns < 0)
        return 1;
    int64_t ist[MPV_MAXR];
    strides_of(xt->dims, r, ist);
    for (int i = 0; i < r; i++)
        sst[i] = ist[i];
    *off = 0;
    for (int i = 0; i < ns; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0 || a >= r || steps[i] == 0)
            FAIL("Slice: bad axis or step");
        if (y->dims[a] > 0)
            *off += slice_start(starts[i], xt->dims[a], steps[i]) * ist[a];
        sst[a] = ist[a] * steps[i];
    }
    return 0;
}

static int lower_slice(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    int es = esize_of(xt);
    int r = xt->rank;
    if (!es || r > MPV_MAXR || y->rank != r)
        FAIL("Slice: element size or rank");
    int64_t sst[MPV_MAXR], ost[MPV_MAXR], off;
    if (slice_map(g, n, xt, y, sst, &off, why) != 0)
        return 1;
    strides_of(y->dims, r, ost);
    if (numel(y) > 0 && !add_copy(L, 0, 0, r, y->dims, sst, ost, off, 0, es))
        return -1;
    return 0;
}

/* a constant-mode Pad's pads (2 r of them, none negative) and value;
 * 0, or 1 with *why set */
static int pad_args(const mp_graph *g, const mp__node *n, int r,
                    int64_t *pads, double *value, const char **why)
{
    const char *mode = mp__attr_str(n, "mode", "constant");
    if (strcmp(mode, "constant") != 0)
        FAIL("Pad: only constant mode");
    int np = n->n_in >= 2 ? input_ints(g, n, 1, pads, 2 * MPV_MAXR)
                          : attr_ints(n, "pads", pads, 2 * MPV_MAXR);
    if (np != 2 * r)
        FAIL("Pad: pads not known (or axes given)");
    *value = 0.0;
    if (n->n_in >= 3) {
        double v[1];
        if (in_t(g, n, 2) && input_floats(g, n, 2, v, 1) == 1)
            *value = v[0];
    } else {
        *value = mp__attr_float(n, "value", 0.0);
    }
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] < 0)
            FAIL("Pad: negative pads");
    return 0;
}

/* constant-mode Pad: the output filled with the value, then the input
 * copied inside it */
static int lower_pad(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    int r = xt->rank;
    if (!is_f32(xt) || xt->dtype != y->dtype || r > MPV_MAXR ||
        y->rank != r)
        FAIL("Pad: only float32");
    int64_t pads[2 * MPV_MAXR];
    double value;
    if (pad_args(g, n, r, pads, &value, why) != 0)
        return 1;
    if (add_fill(L, 0, numel(y), 0, value) != 0)
        return -1;
    int64_t ist[MPV_MAXR], ost[MPV_MAXR], off = 0;
    strides_of(xt->dims, r, ist);
    strides_of(y->dims, r, ost);
    for (int i = 0; i < r; i++)
        off += pads[i] * ost[i];
    if (numel(xt) > 0 &&
        !add_copy(L, 0, 0, r, xt->dims, ist, ost, 0, off, esize_of(y)))
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
    int axis = axis_attr(n, 0, xt->rank);
    if (axis < 0)
        FAIL("Gather: bad axis");
    mpv_launch *x = add_launch_io(L, MPV_L_GATHER, 2);
    if (!x)
        return -1;
    x->p.gather.outer = dims_prod(xt->dims, 0, axis);
    x->p.gather.axis = xt->dims[axis];
    x->p.gather.inner = dims_prod(xt->dims, axis + 1, xt->rank);
    x->p.gather.nidx = numel(it);
    x->p.gather.esize = es;
    x->p.gather.iesize = esize_of(it);
    return 0;
}

static int lower_reduce(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    int r = xt->rank;
    if (!is_f32(xt) || !is_f32(y) || r > MPV_MAXR || r < 1)
        FAIL("Reduce: only float32");
    /* axes: the attribute, or the second input */
    int64_t axes[MPV_MAXR];
    int na = attr_ints(n, "axes", axes, MPV_MAXR);
    if (na < 0 && n->n_in >= 2 && in_t(g, n, 1)) {
        na = input_ints(g, n, 1, axes, MPV_MAXR);
        if (na < 0)
            FAIL("Reduce: axes not known");
    }
    mpv_launch *x = add_launch_io(L, MPV_L_REDUCE, 1);
    if (!x)
        return -1;
    x->p.reduce.op = (int)kop_of(n);
    x->p.reduce.rank = r;
    x->p.reduce.n = numel(y);
    for (int i = 0; i < r; i++) {
        x->p.reduce.dims[i] = xt->dims[i];
        x->p.reduce.red[i] = na <= 0 ? !attr_i(n, "noop_with_empty_axes", 0)
                                     : 0;
    }
    for (int i = 0; i < na; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0 || a >= r)
            FAIL("Reduce: bad axis");
        x->p.reduce.red[a] = 1;
    }
    return 0;
}

/* a string attribute's code in a table; def when not there */
typedef struct name_code {
    const char *name;
    int code;
} name_code;

static int code_of(const name_code *t, size_t n, const char *name, int def)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return t[i].code;
    return def;
}

#define CODE_OF(t, name, def) code_of(t, sizeof t / sizeof t[0], name, def)

static const name_code resize_modes[] = {
    {"nearest", 0}, {"linear", 1}, {"bilinear", 1}};
static const name_code coord_modes[] = {
    {"asymmetric", MPV_CT_ASYMMETRIC},
    {"align_corners", MPV_CT_ALIGN_CORNERS},
    {"pytorch_half_pixel", MPV_CT_PYTORCH_HALF_PIXEL},
    {"tf_half_pixel_for_nn", MPV_CT_TF_HALF_PIXEL}};
static const name_code nearest_modes[] = {
    {"floor", MPV_NM_FLOOR},
    {"ceil", MPV_NM_CEIL},
    {"round_prefer_ceil", MPV_NM_ROUND_PREFER_CEIL}};

static int lower_resize(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *y = out_t(g, n, 0);
    if (!is_f32(xt) || !is_f32(y) || xt->rank != 4 || y->rank != 4 ||
        xt->dims[0] != y->dims[0] || xt->dims[1] != y->dims[1])
        FAIL("Resize: only float32 NCHW over H and W");
    int linear =
        CODE_OF(resize_modes, mp__attr_str(n, "mode", "nearest"), -1);
    if (linear < 0)
        FAIL("Resize: only nearest and linear");
    int upsample = strcmp(n->op, "Upsample") == 0 || g->onnx_opset == 10;
    const char *ct = mp__attr_str(n, "coordinate_transformation_mode",
                                  upsample ? "asymmetric" : "half_pixel");
    const char *nm = mp__attr_str(n, "nearest_mode",
                                  upsample ? "floor" : "round_prefer_floor");
    mpv_launch *x = add_launch_io(L, MPV_L_RESIZE, 1);
    if (!x)
        return -1;
    x->p.resize.nc = xt->dims[0] * xt->dims[1];
    x->p.resize.h = xt->dims[2];
    x->p.resize.w = xt->dims[3];
    x->p.resize.oh = y->dims[2];
    x->p.resize.ow = y->dims[3];
    /* scales: given ones when known (input "scales"), else out / in */
    double sc[4];
    if (input_floats(g, n, upsample ? 1u : 2u, sc, 4) == 4 && sc[2] > 0 &&
        sc[3] > 0) {
        x->p.resize.sh = sc[2];
        x->p.resize.sw = sc[3];
    } else {
        x->p.resize.sh = (double)y->dims[2] / (double)xt->dims[2];
        x->p.resize.sw = (double)y->dims[3] / (double)xt->dims[3];
    }
    x->p.resize.linear = linear;
    x->p.resize.coord = CODE_OF(coord_modes, ct, MPV_CT_HALF_PIXEL);
    x->p.resize.nearest =
        CODE_OF(nearest_modes, nm, MPV_NM_ROUND_PREFER_FLOOR);
    return 0;
}

static int cast_ok(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_INT64 || dt == MP_DTYPE_INT32 ||
           dt == MP_DTYPE_INT8 || dt == MP_DTYPE_UINT8 || dt == MP_DTYPE_BOOL ||
           dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16;
}

static int lower_cast(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0), *y = out_t(L->g, n, 0);
    if (!xt || !cast_ok(xt->dtype) || !cast_ok(y->dtype) ||
        numel(xt) != numel(y))
        FAIL("Cast: dtype pair not supported");
    mpv_launch *x = add_launch_io(L, MPV_L_CAST, 1);
    if (!x)
        return -1;
    x->p.cast.n = numel(y);
    x->p.cast.from = xt->dtype;
    x->p.cast.to = y->dtype;
    return 0;
}

/* Shape: the input's dims start .. end, written as constants */
static int lower_shape(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0), *y = out_t(L->g, n, 0);
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

static int lower_expand(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *xt = in_t(L->g, n, 0), *y = out_t(L->g, n, 0);
    int es = esize_of(y);
    int64_t st[MPV_MAXR], ost[MPV_MAXR];
    if (!xt || !es || y->rank > MPV_MAXR ||
        bcast_strides(xt, y->dims, y->rank, st) != 0)
        FAIL("Expand: shapes");
    strides_of(y->dims, y->rank, ost);
    return add_copy(L, 0, 0, y->rank, y->dims, st, ost, 0, 0, es) ? 0 : -1;
}

/* Where(c, a, b): float32 a and b, a bool c, each broadcast to the
 * output (a broadcast view's storage read as the view would) */
static int lower_where(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *y = out_t(g, n, 0);
    if (n->n_in != 3 || !is_f32(y) || y->rank > MPV_MAXR)
        FAIL("Where: a float32 output, rank <= 8");
    mpv_launch *x = add_launch(L, MPV_L_NARY);
    if (!x)
        return -1;
    x->p.nary.op = MPV_NOP_WHERE;
    x->p.nary.n_in = 3;
    x->p.nary.rank = y->rank;
    x->p.nary.n = numel(y);
    for (int i = 0; i < y->rank; i++)
        x->p.nary.dims[i] = y->dims[i];
    for (int k = 0; k < 3; k++) {
        const mp__tensor *a = in_t(g, n, (uint32_t)k);
        if (a && mp__tensor_bview(g, n->inputs[k]))
            a = &g->tensors[a->alias_of];
        if (!a || (k ? !is_f32(a) : a->dtype != MP_DTYPE_BOOL) ||
            bcast_strides(a, y->dims, y->rank, x->p.nary.st[k]) != 0)
            FAIL("Where: a bool condition, float32 values, broadcastable");
        x->in[k] = k;
    }
    x->out = 0;
    return 0;
}

typedef int (*lower_fn)(lower *L, const mp__node *n, const char **why);

/* the lowering of each registry kernel (none: the synthetic kernel) */

/* the parameters of forward node n's attention into x->p.attn (the
 * node's input slots into x->in); 0 or 1 with *why set */
static int attn_params(const mp_graph *g, const mp__node *n, mpv_launch *x,
                       const char **why)
{
    const mp__tensor *q = in_t(g, n, 0), *k = in_t(g, n, 1), *v = in_t(g, n, 2);
    const mp__tensor *y = out_t(g, n, 0), *m = in_t(g, n, 3);
    if (!q || !k || !v || !is_f32(q) || !is_f32(k) || !is_f32(v) || !is_f32(y))
        FAIL("attention: Q, K, V and the output must be float32");
    int r = q->rank;
    if (r < 2 || r > MPV_MAXR || k->rank != r || v->rank != r ||
        y->rank != r)
        FAIL("attention: ranks");
    for (uint32_t i = 4; i < n->n_in && i < 8; i++) {
        const mp__tensor *c = in_t(g, n, i);
        if (c && (!is_f32(c) || numel(c) != 1))
            FAIL("attention: a scalar factor that is not one float32");
    }
    int64_t kind = mp__attr_int(n, "mask_kind", 0);
    if ((kind != 0) != (m != NULL) || kind < 0 || kind > 3)
        FAIL("attention: mask and mask_kind disagree");
    /* the shape the mask is added at: the scores (lead..., tq, tk), or
     * the node's mask_dims, the scores with their leading dims regrouped
     * (Swin's shifted windows: [b, windows, heads, tq, tk] for scores
     * [b*windows, heads, tq, tk]); the kernel walks a row's batch*head
     * index through these leading dims */
    mp__shape ms;
    const char *mwhy = "";
    int mr = r;
    if (m) {
        if (mp__sdpa_mask_shape(g, n, &ms, &mwhy) != 1 || ms.rank < 2 ||
            ms.rank > MPV_MAXR)
            FAIL("attention: the shape the mask is added at (mask_dims)");
        mr = ms.rank;
    }
    if (m && (m->rank > mr || (kind == 1 ? !is_f32(m)
                                         : m->dtype != MP_DTYPE_BOOL)))
        FAIL("attention: the mask's dtype or rank");
    /* the mask's strides over those dims, aligned right; 0 where it
     * broadcasts */
    int64_t mst[MPV_MAXR] = {0};
    if (m) {
        int64_t st = 1;
        for (int i = mr - 1; i >= 0; i--) {
            int mi = i - (mr - m->rank);
            int64_t md = mi >= 0 ? m->dims[mi] : 1;
            if (md != 1 && md != ms.d[i])
                FAIL("attention: the mask does not broadcast to the scores");
            mst[i] = md == 1 ? 0 : st;
            st *= md;
        }
    }
    for (int i = 0; i < 3; i++)
        x->in[i] = i;
    if (m)
        x->in[3] = 3;
    x->p.attn.rank = mr;
    x->p.attn.bh = dims_prod(q->dims, 0, r - 2);
    x->p.attn.tq = q->dims[r - 2];
    x->p.attn.d = q->dims[r - 1];
    x->p.attn.tk = k->dims[r - 1];
    x->p.attn.dv = v->dims[r - 1];
    for (int i = 0; i < mr; i++) {
        x->p.attn.lead[i] = i >= mr - 2 ? 0 : m ? ms.d[i] : q->dims[i];
        x->p.attn.mst[i] = mst[i];
    }
    x->p.attn.mask_kind = (int32_t)kind;
    x->p.attn.mask_esize = m ? (kind == 1 ? esize_of(m) : 1) : 0;
    x->p.attn.scale_div = mp__attr_int(n, "scale_div", 0) != 0;
    x->p.attn.mask_first = mp__attr_int(n, "mask_first", 0) != 0;
    x->p.attn.nan_to_zero = mp__attr_int(n, "nan_to_zero", 0) != 0;
    /* Q, K^T, V read in place through transposed and permuted views */
    x->p.attn.qrank = r;
    for (int i = 0; i < r - 2; i++)
        x->p.attn.qlead[i] = q->dims[i];
    if (operand_strides(g, n->inputs[0], x->p.attn.qst) ||
        operand_strides(g, n->inputs[1], x->p.attn.kst) ||
        operand_strides(g, n->inputs[2], x->p.attn.vst))
        FAIL("attention: an operand's strides (a view of rank > 8)");
    for (int i = 0; i < r - 2; i++)
        if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
            FAIL("attention: Q, K and V with different leading dims");
    return 0;
}

/* ScaledDotProductAttention (core/ops/attention.c): one flash-style
 * launch; float32 Q, K^T, V, output and scalars, a float (Add) or bool
 * (Where) mask broadcast over the scores */
static int lower_attention(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *lse = n->n_out > 1 && n->outputs[1] != MP_NONE
                                ? out_t(L->g, n, 1)
                                : NULL;
    mpv_launch *x = add_launch(L, MPV_L_ATTENTION);
    if (!x)
        return -1;
    x->out = 0;
    int r = attn_params(L->g, n, x, why);
    if (r != 0)
        return r;
    /* training: output 1 holds the fp32 log-sum-exp per query row; other
     * statistics are zeros (a fill: x may move, so last) */
    if (lse && is_f32(lse) && numel(lse) == x->p.attn.bh * x->p.attn.tq)
        x->p.attn.lse = 1;
    else if (lse && add_fill(L, 1, 0, 1, 0) != 0)
        return -1;
    return 0;
}

/* ---- serving: PagedAttention, Sort, Sample (planner/serve.c) ----------- */

/* PagedAttention (memplan): two launches, the new tokens' K and V written
 * into the cache, then the attention over it (p.paged) */
static int lower_paged_attention(lower *L, const mp__node *n,
                                 const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *q = in_t(g, n, 0), *k = in_t(g, n, 1),
                     *v = in_t(g, n, 2), *kc = in_t(g, n, 3),
                     *vc = in_t(g, n, 4), *tb = in_t(g, n, 5),
                     *y = out_t(g, n, 0);
    if (!q || !k || !v || !kc || !vc || !is_f32(q) || !is_f32(k) ||
        !is_f32(v) || !is_f32(kc) || !is_f32(vc) || !is_f32(y))
        FAIL("PagedAttention: q, k, v, the caches and the output must be "
             "float32 or bfloat16");
    int64_t heads = mp__attr_int(n, "q_num_heads", 0),
            kvh = mp__attr_int(n, "kv_num_heads", 0),
            seqs = mp__attr_int(n, "seqs", 0),
            past = mp__attr_int(n, "past", -1),
            bs = mp__attr_int(n, "block_size", 0);
    if (heads < 1 || kvh < 1 || heads % kvh || seqs < 1 || past < 0 ||
        kc->rank != 4 || vc->rank != 4 ||
        memcmp(kc->dims, vc->dims, 4 * sizeof *kc->dims) != 0 ||
        kc->dims[2] != kvh)
        FAIL("PagedAttention: q_num_heads, kv_num_heads, seqs, past or the "
             "caches' shapes [blocks or seqs, block or length, kv heads, "
             "head dim]");
    int64_t d = kc->dims[3], rows = numel(q) / (heads * d);
    if (d < 1 || d > 128 || numel(q) != rows * heads * d ||
        numel(k) != rows * kvh * d || numel(v) != numel(k) ||
        numel(y) != numel(q) || rows % seqs)
        FAIL("PagedAttention: q, k, v or the output do not hold rows x heads "
             "x head dim (head dim 1 to 128)");
    int64_t qlen = rows / seqs, end = past + qlen;
    int64_t mb = 0, nblk = 0, maxlen = 0;
    if (tb) {
        if (tb->dtype != MP_DTYPE_INT32 || tb->rank != 2 ||
            tb->dims[0] != seqs || bs < 1 || bs != kc->dims[1])
            FAIL("PagedAttention: the block table is no int32 [seqs, "
                 "blocks] or block_size is not the caches'");
        mb = tb->dims[1];
        nblk = kc->dims[0];
        if (mb * bs < end)
            FAIL("PagedAttention: the block table holds fewer tokens than "
                 "the sequences reach");
        /* a table the graph knows is checked: every block in the cache */
        if (tb->value && tb->n_value == (uint32_t)(seqs * mb))
            for (int64_t i = 0; i < seqs * mb; i++)
                if (tb->value[i] < 0 || tb->value[i] >= nblk)
                    FAIL("PagedAttention: a block of the table outside "
                         "the cache");
    } else {
        if (kc->dims[0] != seqs || kc->dims[1] < end)
            FAIL("PagedAttention: a contiguous cache of fewer sequences or "
                 "tokens than written");
        maxlen = kc->dims[1];
    }
    /* the cache write, then the attention with the same parameters */
    mpv_launch *x = add_launch(L, MPV_L_KV_WRITE);
    if (!x)
        return -1;
    x->in[0] = 1;
    x->in[1] = 2;
    x->in[2] = 3;
    x->in[3] = 4;
    x->p.paged.rows = rows;
    x->p.paged.seqs = seqs;
    x->p.paged.qlen = qlen;
    x->p.paged.past = past;
    x->p.paged.heads = heads;
    x->p.paged.kv_heads = kvh;
    x->p.paged.d = d;
    x->p.paged.paged = tb != NULL;
    x->p.paged.block_size = bs;
    x->p.paged.max_blocks = mb;
    x->p.paged.num_blocks = nblk;
    x->p.paged.max_len = maxlen;
    x->p.paged.scale = mp__attr_float(n, "scale", 1.0 / sqrt((double)d));
    mpv_launch *at = add_launch(L, MPV_L_PAGED_ATTN);
    if (!at)
        return -1;
    at->p = L->l[L->n - 2].p; /* x may have moved */
    at->in[0] = 0;
    at->in[1] = 3;
    at->in[2] = 4;
    at->in[3] = tb ? 5 : -1;
    at->out = 0;
    return 0;
}

/* the rows x n float32 input of a sort or sample: its last dim */
static int sort_rows(const mp__tensor *x, int64_t *rows, int64_t *cols)
{
    if (!x || x->dtype != MP_DTYPE_FLOAT32 || x->rank < 1)
        return -1;
    *cols = x->dims[x->rank - 1];
    *rows = *cols > 0 ? numel(x) / *cols : 0;
    return *cols > 0 ? 0 : -1;
}

/* Sort (the serving sampler's top-k/top-p sort): values, then indices */
static int lower_sort(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    int64_t rows, cols;
    if (sort_rows(in_t(g, n, 0), &rows, &cols) || n->n_out != 2 ||
        out_t(g, n, 0)->dtype != MP_DTYPE_FLOAT32 ||
        out_t(g, n, 1)->dtype != MP_DTYPE_INT64 ||
        numel(out_t(g, n, 0)) != rows * cols ||
        numel(out_t(g, n, 1)) != rows * cols)
        FAIL("Sort: float32 rows into float32 values and int64 indices");
    if (rows > 65535 || (cols + MPV_TPB - 1) / MPV_TPB > 65535)
        FAIL("Sort: more than 65535 rows or blocks of a row");
    mpv_launch *x = add_launch_io(L, MPV_L_SORT, 1);
    if (!x)
        return -1;
    x->p.sort.rows = rows;
    x->p.sort.n = cols;
    x->p.sort.idx_out = 1;
    return 0;
}

/* Sample: greedy, the first largest of input 0 per row */
static int lower_sample(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    int64_t rows, cols;
    if (sort_rows(in_t(g, n, 0), &rows, &cols) ||
        out_t(g, n, 0)->dtype != MP_DTYPE_INT64 ||
        numel(out_t(g, n, 0)) != rows)
        FAIL("Sample: float32 rows (the probabilities) into int64 ids");
    mpv_launch *x = add_launch_io(L, MPV_L_SAMPLE, 1);
    if (!x)
        return -1;
    x->p.sort.rows = rows;
    x->p.sort.n = cols;
    x->p.sort.idx_out = -1;
    return 0;
}

/* ---- training: the loss, backward nodes, SGD ---------------------------- */

/* Loss (memplan): the sum of every element of its inputs into one float */
static int lower_loss(lower *L, const mp__node *n, const char **why)
{
    const mp__tensor *y = out_t(L->g, n, 0);
    /* the sum of the first `terms` inputs (all by default); the rest are
     * only held (autocast's weight casts, planner/train.c) */
    int64_t terms = mp__attr_int(n, "terms", (int64_t)n->n_in);
    uint32_t nt = terms >= 1 && terms <= (int64_t)n->n_in ? (uint32_t)terms
                                                          : n->n_in;
    if (!is_f32(y) || numel(y) != 1 || n->n_in < 1)
        FAIL("Loss: a float32 scalar of inputs");
    for (uint32_t i = 0; i < nt; i++)
        if (!is_f32(in_t(L->g, n, i)) ||
            mp__tensor_bview(L->g, n->inputs[i]))
            FAIL("Loss: only float32 inputs, not broadcast views");
    for (uint32_t i = 0; i < nt; i++) {
        mpv_launch *x = add_launch(L, MPV_L_SUM_ALL);
        if (!x)
            return -1;
        x->in[0] = (int32_t)i;
        x->out = 0;
        x->p.sum_all.n = numel(in_t(L->g, n, i));
        x->p.sum_all.accumulate = i > 0;
    }
    return 0;
}

/* LossGrad (memplan): the gradient of a sum, ones */
static int lower_loss_grad(lower *L, const mp__node *n, const char **why)
{
    for (uint32_t o = 0; o < n->n_out; o++)
        if (!is_f32(out_t(L->g, n, o)))
            FAIL("LossGrad: only float32");
    for (uint32_t o = 0; o < n->n_out; o++)
        if (add_fill(L, (int)o, numel(out_t(L->g, n, o)), 0, 1.0) != 0)
            return -1;
    return 0;
}

/* the plain SGD step's learning rate (attribute lr of the node) */
#define MPV_SGD_LR 0.01

/* SGD (memplan): the weight (input 0) minus lr times its gradient (input
 * 1), in place; the update's temporary (output 0) is empty */
static int lower_opt_step(lower *L, const mp__node *n, unsigned kop,
                          const char **why);

/* A rank graph's step (planner/parallel.c) that reads its gradient from
 * a collective's buffer shared by several gradients, or updates a shard
 * of its weight (ZeRO-1, -2: states of another size than the weight):
 * its slices are at offsets the graph does not keep. n_state: the
 * inputs that are the weight, its gradient and states (a foreach
 * group's temporary after them is of another size) */
static int grad_in_bucket(const mp_graph *g, const mp__node *n,
                          uint32_t n_state)
{
    const mp__tensor *gt = n->n_in > 1 ? in_t(g, n, 1) : NULL;
    if (!gt || gt->producer == MP_NONE ||
        !(g->nodes[gt->producer].def->flags & MP__OPF_COLLECTIVE))
        return 0;
    if (g->nodes[gt->producer].n_in > 1)
        return 1;
    for (uint32_t i = 1; i < n->n_in && i < n_state; i++)
        if (in_t(g, n, i) && in_t(g, n, i)->bytes != in_t(g, n, 0)->bytes)
            return 1;
    return 0;
}
#define BUCKET_WHY "optimizer: a slice of a communication bucket or a " \
                   "shard of the weight (validate --rank)"

static int64_t flat_n(const mp__tensor *t);

/* A rank graph's step on its slice (planner/parallel.c's dp_* attributes:
 * the gradient's offset in its reduced buffer, the parameter's elements,
 * the shard's): the elements this data-parallel index updates and where
 * they start in the weight (the full weight under ZeRO-1, -2; its shard
 * under ZeRO-3), the gradient (a bucket of full gradients under DDP and
 * ZeRO-1, a shard buffer under ZeRO-2, -3) and the states. 0: set; 1: no
 * such attributes; -1: attributes that do not fit the tensors. */
typedef struct step_slice {
    int64_t n, woff, goff, soff;
} step_slice;

static int step_slice_of(const lower *L, const mp__node *n, step_slice *sl)
{
    const mp_graph *g = L->g;
    int64_t dp = attr_i(n, "dp_size", 0), ne = attr_i(n, "dp_elems", -1);
    int64_t sh = attr_i(n, "dp_shard", -1);
    int64_t go = attr_i(n, "dp_grad_offset", -1);
    if (dp <= 0)
        return 1;
    const mp__tensor *w = in_t(g, n, 0), *gr = in_t(g, n, 1);
    int64_t d = L->rl ? (int64_t)L->rl->dp_index : 0;
    if (!w || !gr || ne < 0 || sh < 0 || go < 0 || d >= dp ||
        gr->producer == MP_NONE)
        return -1;
    int full_grad = kop_of(&g->nodes[gr->producer]) == MP__KOP_ALL_REDUCE;
    sl->soff = 0;
    if (sh == 0) {
        sl->n = ne;
        sl->woff = 0;
        sl->goff = go;
    } else {
        int64_t lo = d * sh, c = ne - lo < sh ? ne - lo : sh;
        sl->n = c > 0 ? c : 0;
        sl->woff = flat_n(w) == ne ? lo : 0;
        sl->goff = go + (full_grad ? lo : 0);
    }
    return sl->woff + sl->n > flat_n(w) || sl->goff + sl->n > flat_n(gr)
               ? -1 : 0;
}

static int lower_sgd(lower *L, const mp__node *n, const char **why)
{
    if (kop_of(n) != 0)
        return lower_opt_step(L, n, kop_of(n), why);
    const mp__tensor *w = in_t(L->g, n, 0), *gr = in_t(L->g, n, 1);
    if (grad_in_bucket(L->g, n, n->n_in))
        FAIL(BUCKET_WHY);
    if (n->n_in != 2 || !is_f32(w) || !is_f32(gr) || numel(w) != numel(gr))
        FAIL("SGD: a float32 weight and its gradient");
    if (mp__tensor_view_kind(L->g, n->inputs[0]) != MP__NVIEW_NONE)
        FAIL("SGD: the weight is a view");
    mpv_launch *x = add_launch(L, MPV_L_AXPY);
    if (!x)
        return -1;
    x->in[0] = 0;
    x->in[1] = 1;
    x->p.axpy.n = numel(w);
    x->p.axpy.alpha = -mp__attr_float(n, "lr", MPV_SGD_LR);
    return 0;
}

/* ---- optimizer steps: momentum, Adam, AdamW, the foreach temporary ---- */

/* The hyper-parameters of torch.optim's defaults (each read from the
 * node's attribute of that name when it has one): SGD(lr=0.01,
 * momentum=0.9) for Momentum, Adam(lr=1e-3, betas=(0.9, 0.999),
 * eps=1e-8, weight_decay=0), AdamW(the same, weight_decay=0.01); the
 * step number (bias correction) 1, the states zero before it
 * (mpv_weights_init) */
#define MPV_MOMENTUM_LR 0.01
#define MPV_MOMENTUM 0.9
#define MPV_ADAM_LR 1e-3
#define MPV_ADAM_BETA1 0.9
#define MPV_ADAM_BETA2 0.999
#define MPV_ADAM_EPS 1e-8
#define MPV_ADAMW_WEIGHT_DECAY 0.01

/* Momentum (buf = momentum buf + dw; w -= lr buf), Adam and AdamW
 * (planner/train.c's add_opt_step: the weight, its gradient, the states,
 * the foreach group's temporary when there is one; output 0 the step's
 * own temporary, empty under foreach and fused), in place, one launch;
 * the foreach group's temporary (ForeachTemp) is zeroed: each step
 * computes its denominator itself */
static int lower_opt_step(lower *L, const mp__node *n, unsigned kop,
                          const char **why)
{
    const mp_graph *g = L->g;
    if (kop == MP__KOP_OPT_FOREACH)
        return add_fill(L, 0, 0, 1, 0) != 0 ? -1 : 0;
    uint32_t ns = kop == MP__KOP_OPT_MOMENTUM ? 1 : 2;
    const mp__tensor *w = in_t(g, n, 0);
    if (n->n_in < 2 + ns || n->n_in > 3 + ns || !w || !is_f32(w))
        FAIL("optimizer: a float32 weight, its gradient and states");
    int64_t ne = numel(w);
    /* a rank graph's step on its slice, else the whole tensors */
    step_slice sl = {ne, 0, 0, 0};
    int whole = step_slice_of(L, n, &sl);
    if (whole < 0)
        FAIL("optimizer: its dp_* attributes (rank graph) do not fit its "
             "tensors");
    if (whole && grad_in_bucket(g, n, 2 + ns))
        FAIL(BUCKET_WHY);
    for (uint32_t i = 0; i < 2 + ns; i++) {
        const mp__tensor *t = in_t(g, n, i);
        int64_t at = i == 0 ? sl.woff : i == 1 ? sl.goff : sl.soff;
        if (!t || !is_f32(t) ||
            (whole ? numel(t) != ne : flat_n(t) < at + sl.n) ||
            mp__tensor_view_kind(g, n->inputs[i]) != MP__NVIEW_NONE)
            FAIL("optimizer: the weight, gradient or a state not float32 "
                 "of the weight's size, or a view");
    }
    if (sl.n == 0) /* this rank's shard of a small weight is padding */
        return 0;
    mpv_launch *x = add_launch(L, MPV_L_OPT_STEP);
    if (!x)
        return -1;
    for (uint32_t i = 0; i < 2 + ns; i++)
        x->in[i] = (int32_t)i;
    const mp__tensor *tmp = out_t(g, n, 0);
    if (kop != MP__KOP_OPT_MOMENTUM && is_f32(tmp) &&
        flat_n(tmp) >= sl.soff + sl.n && tmp->bytes > 0)
        x->out = 0;
    x->p.opt.op = (int32_t)kop;
    x->p.opt.n = sl.n;
    x->p.opt.woff = sl.woff;
    x->p.opt.goff = sl.goff;
    x->p.opt.soff = sl.soff;
    x->p.opt.step = mp__attr_int(n, "step", 1);
    if (x->p.opt.step < 1)
        FAIL("optimizer: a step number below 1");
    int mom = kop == MP__KOP_OPT_MOMENTUM;
    x->p.opt.lr = mp__attr_float(n, "lr", mom ? MPV_MOMENTUM_LR : MPV_ADAM_LR);
    x->p.opt.momentum = mp__attr_float(n, "momentum", MPV_MOMENTUM);
    x->p.opt.beta1 = mp__attr_float(n, "beta1", MPV_ADAM_BETA1);
    x->p.opt.beta2 = mp__attr_float(n, "beta2", MPV_ADAM_BETA2);
    x->p.opt.eps = mp__attr_float(n, "epsilon", MPV_ADAM_EPS);
    x->p.opt.weight_decay = mp__attr_float(
        n, "weight_decay", kop == MP__KOP_OPT_ADAMW ? MPV_ADAMW_WEIGHT_DECAY
                                                    : 0.0);
    return 0;
}

/* A backward node (planner/train.c's OPGrad, docs/training.md
 * "Backward"): its forward op's registry entry, and which of its slots
 * hold the output gradients, the saved forward inputs and output 0, and
 * the gradients of the forward inputs (-1: not there). */
#define GMAX 8
typedef struct gnode {
    const mp__op_def *fwd;
    int dy[GMAX];   /* input slot of forward output o's gradient */
    int in[GMAX];   /* input slot of saved forward input i */
    int y0;         /* input slot of saved forward output 0 */
    int dx[GMAX];   /* output slot of forward input i's gradient */
    int n_dx;
    int read_twice; /* a gradient's tensor is read at two positions */
} gnode;

/* 0, or 1 with *why set */
static int grad_node(const mp__node *n, gnode *G, const char **why)
{
    int64_t dy[GMAX], sv[2 * GMAX], dx[GMAX], reads[GMAX];
    int ndy = attr_ints(n, "grad_dy", dy, GMAX);
    int nsv = attr_ints(n, "grad_saved", sv, 2 * GMAX);
    int ndx = attr_ints(n, "grad_dx", dx, GMAX);
    if (ndy < 1 || nsv < 0 || ndx < 1 ||
        attr_ints(n, "grad_dx_reads", reads, GMAX) != ndx)
        FAIL("backward: no grad_dy, grad_saved, grad_dx attributes");
    G->read_twice = 0;
    for (int j = 0; j < ndx; j++)
        G->read_twice |= reads[j] != 1;
    if ((uint32_t)(ndy + nsv) != n->n_in || (uint32_t)ndx > n->n_out)
        FAIL("backward: inputs or outputs beyond the attributes");
    size_t len = strlen(n->op);
    char fop[128];
    if (len <= 4 || len - 4 >= sizeof fop || strcmp(n->op + len - 4, "Grad"))
        FAIL("backward: op not NAMEGrad");
    memcpy(fop, n->op, len - 4);
    fop[len - 4] = '\0';
    G->fwd = mp__op_lookup(fop, mp__attr_str(n, "grad_domain", ""));
    G->y0 = -1;
    G->n_dx = ndx;
    for (int i = 0; i < GMAX; i++)
        G->dy[i] = G->in[i] = G->dx[i] = -1;
    for (int k = 0; k < ndy; k++) {
        if (dy[k] < 0 || dy[k] >= GMAX)
            FAIL("backward: a forward output beyond 8");
        G->dy[dy[k]] = k;
    }
    for (int k = 0; k < nsv; k++) {
        if (sv[k] >= 0 && sv[k] < GMAX)
            G->in[sv[k]] = ndy + k;
        else if (sv[k] == -1)
            G->y0 = ndy + k;
    }
    for (int j = 0; j < ndx; j++) {
        if (dx[j] < 0 || dx[j] >= GMAX)
            FAIL("backward: a forward input beyond 8");
        G->dx[dx[j]] = j;
    }
    return 0;
}

/* an operand of dtype dt read in row-major order of its own shape (a
 * range view included), or a broadcast view's storage; NULL otherwise */
static const mp__tensor *plain_of(const mp_graph *g, const mp__node *n,
                                  int slot, int dt)
{
    const mp__tensor *t = in_t(g, n, (uint32_t)slot);
    if (!t)
        return NULL;
    unsigned k = mp__tensor_view_kind(g, n->inputs[slot]);
    if (k == MP__NVIEW_T || k == MP__NVIEW_P)
        return NULL;
    if (k == MP__NVIEW_B)
        t = &g->tensors[t->alias_of];
    return t->dtype == dt || (dt == MP_DTYPE_FLOAT32 &&
                              t->dtype == MP_DTYPE_BFLOAT16)
               ? t
               : NULL;
}

static const mp__tensor *plain_f32(const mp_graph *g, const mp__node *n,
                                   int slot)
{
    return plain_of(g, n, slot, MP_DTYPE_FLOAT32);
}

/* How MPV_L_GRAD_PW's many-term sums are spread (validate.h): 32
 * output elements side by side when the innermost dim is kept (their
 * terms are then 32 consecutive floats), else one, the terms read
 * consecutively by the rows; the terms cut into enough chunks for about
 * 1024 blocks, each row summing at least 32 terms, the partial sums in
 * at most 1 MiB of workspace. */
#define GPW_PARTS_MAX 1024
#define GPW_WS_FLOATS 262144
static void gpw_split(mpv_launch *x)
{
    int64_t n = x->p.gpw.n, m = x->p.gpw.m;
    int r = x->p.gpw.rank;
    x->p.gpw.lanes = 1;
    x->p.gpw.parts = 1;
    x->p.gpw.chunk = m;
    if (m < 64)
        return; /* one thread per element sums its few terms */
    int inner_kept = r > 0 && !x->p.gpw.red[r - 1];
    int lanes = inner_kept && n >= 32 ? 32 : 1;
    int64_t rows = MPV_TPB / lanes;
    int64_t nbx = (n + lanes - 1) / lanes;
    int64_t parts = (1024 + nbx - 1) / nbx;
    int64_t by_terms = (m + rows * 32 - 1) / (rows * 32);
    if (parts > by_terms)
        parts = by_terms;
    if (parts > GPW_PARTS_MAX)
        parts = GPW_PARTS_MAX;
    if (parts > GPW_WS_FLOATS / n)
        parts = GPW_WS_FLOATS / n;
    if (parts < 1)
        parts = 1;
    int64_t chunk = (m + parts - 1) / parts;
    parts = (m + chunk - 1) / chunk;
    x->p.gpw.lanes = lanes;
    x->p.gpw.parts = (int32_t)parts;
    x->p.gpw.chunk = chunk;
    if (parts > 1)
        x->workspace = (uint64_t)parts * (uint64_t)n * sizeof(float);
}

/* MPV_L_GRAD_PW into output slot out (dims of the forward output: the
 * gradient's; out's shape broadcasts to them): in[0] op[0] in[1] ...,
 * summed to out's shape, times alpha */
static int add_grad_pw(lower *L, const mp__node *n, int out, const int *in,
                       const int *ops, int n_in, double alpha,
                       const char **why)
{
    const mp_graph *g = L->g;
    /* the index space: the output gradient's dims (a view's own) */
    const mp__tensor *dy = in_t(g, n, (uint32_t)in[0]);
    const mp__tensor *o = out_t(g, n, (uint32_t)out);
    if (!dy || !is_f32(dy) || !is_f32(o) || dy->rank > MPV_MAXR ||
        o->rank > dy->rank)
        FAIL("backward: pointwise operands not float32, rank <= 8");
    mpv_launch *x = add_launch(L, MPV_L_GRAD_PW);
    if (!x)
        return -1;
    int r = dy->rank;
    x->out = out;
    x->p.gpw.n_in = n_in;
    x->p.gpw.rank = r;
    x->p.gpw.alpha = alpha;
    x->p.gpw.n = numel(o);
    x->p.gpw.m = 1;
    for (int d = 0; d < r; d++) {
        int j = d - (r - o->rank);
        int64_t od = j >= 0 ? o->dims[j] : 1;
        x->p.gpw.dims[d] = dy->dims[d];
        x->p.gpw.red[d] = od == 1 && dy->dims[d] != 1;
        if (od != 1 && od != dy->dims[d])
            FAIL("backward: a gradient not of its operand's shape");
        if (x->p.gpw.red[d])
            x->p.gpw.m *= dy->dims[d];
    }
    for (int k = 0; k < n_in; k++) {
        /* a Where's condition: bool bytes */
        int cond = k > 0 && (ops[k - 1] == MPV_BOP_WHERE_T ||
                             ops[k - 1] == MPV_BOP_WHERE_F);
        const mp__tensor *a = plain_of(g, n, in[k], cond ? MP_DTYPE_BOOL
                                                         : MP_DTYPE_FLOAT32);
        if (!a || bcast_strides(a, dy->dims, r, x->p.gpw.st[k]) != 0)
            FAIL("backward: a pointwise operand not float32 or broadcastable");
        x->in[k] = in[k];
        if (k > 0)
            x->p.gpw.ops[k - 1] = ops[k - 1];
    }
    gpw_split(x);
    return 0;
}

/* Relu, Mul, Div, Add, Sub: each wanted input gradient, one launch */
static int lower_grad_pointwise(lower *L, const mp__node *n, const gnode *G,
                                unsigned kernel, unsigned kop,
                                const char **why)
{
    int dy = G->dy[0], a = G->in[0], b = G->in[1];
    if (dy < 0)
        FAIL("backward: no output gradient");
    for (int i = 0; i < GMAX; i++) {
        int o = G->dx[i], r;
        if (o < 0)
            continue;
        if (i > 1 || (kernel == MP__KERNEL_UNARY && i > 0))
            FAIL("backward: a gradient of an input past the operands");
        if (kernel == MP__KERNEL_UNARY) { /* Relu, from its output */
            int in[2] = {dy, G->y0}, ops[1] = {MPV_BOP_RELU_GRAD};
            if (G->y0 < 0)
                FAIL("ReluGrad: the output is not saved");
            r = add_grad_pw(L, n, o, in, ops, 2, 1.0, why);
        } else if (kop == MP__KOP_ADD || kop == MP__KOP_SUB) {
            int in[1] = {dy};
            r = add_grad_pw(L, n, o, in, NULL, 1,
                            kop == MP__KOP_SUB && i == 1 ? -1.0 : 1.0, why);
        } else if (kop == MP__KOP_MUL) { /* dy times the other */
            int in[2] = {dy, i ? a : b}, ops[1] = {MP__KOP_MUL};
            if (in[1] < 0)
                FAIL("MulGrad: the other operand is not saved");
            r = add_grad_pw(L, n, o, in, ops, 2, 1.0, why);
        } else if (i == 0) { /* Div: dy / b */
            int in[2] = {dy, b}, ops[1] = {MP__KOP_DIV};
            if (b < 0)
                FAIL("DivGrad: the divisor is not saved");
            r = add_grad_pw(L, n, o, in, ops, 2, 1.0, why);
        } else { /* Div: -dy a / b / b */
            int in[4] = {dy, a, b, b};
            int ops[3] = {MP__KOP_MUL, MP__KOP_DIV, MP__KOP_DIV};
            if (a < 0 || b < 0)
                FAIL("DivGrad: the operands are not saved");
            r = add_grad_pw(L, n, o, in, ops, 4, -1.0, why);
        }
        if (r != 0)
            return r;
    }
    return 0;
}

/* A matrix operand of a product, row-major [rows, cols] as the product
 * uses it: input slot, whether it is used transposed, and the tensor's
 * memory (its logical 2-D [d0, d1], transposed in memory when a
 * transposed view) */
typedef struct mat {
    int slot, use_t, tview;
    int64_t d0, d1;
} mat;

/* out slot = alpha op(X) op(Z), [m, n] (k inner), batch products at
 * element strides sx, sz, sc */
static mpv_launch *add_product(lower *L, int out, mat X, mat Z, int64_t m,
                               int64_t nn, int64_t k, double alpha,
                               int64_t batch, int64_t sx, int64_t sz,
                               int64_t sc)
{
    mpv_launch *x = add_launch(L, MPV_L_GEMM);
    if (!x)
        return NULL;
    x->in[0] = X.slot;
    x->in[1] = Z.slot;
    x->out = out;
    /* stored transposed when used transposed xor held transposed; the
     * leading dimension is the stored rows' length */
    x->p.gemm.ta = X.use_t ^ X.tview;
    x->p.gemm.tb = Z.use_t ^ Z.tview;
    x->p.gemm.lda = X.tview ? X.d0 : X.d1;
    x->p.gemm.ldb = Z.tview ? Z.d0 : Z.d1;
    x->p.gemm.m = m;
    x->p.gemm.n = nn;
    x->p.gemm.k = k;
    x->p.gemm.ldc = nn;
    x->p.gemm.alpha = alpha;
    x->p.gemm.beta = 0.0;
    x->p.gemm.batch = batch;
    x->p.gemm.sa = sx;
    x->p.gemm.sb = sz;
    x->p.gemm.sc = sc;
    return x;
}

/* a forward operand's tensor: the saved input, else (its gradient is
 * wanted) the gradient output, which has its shape; *tv: a transposed
 * view (saved only) */
static const mp__tensor *fwd_operand(const mp_graph *g, const mp__node *n,
                                     const gnode *G, int i, int *tv)
{
    *tv = 0;
    if (G->in[i] >= 0) {
        unsigned k = mp__tensor_view_kind(g, n->inputs[G->in[i]]);
        if (k == MP__NVIEW_P)
            return NULL;
        *tv = k == MP__NVIEW_T;
        return in_t(g, n, (uint32_t)G->in[i]);
    }
    return G->dx[i] >= 0 ? out_t(g, n, (uint32_t)G->dx[i]) : NULL;
}

/* MatMul with a permuted operand (a view read in place, as the forward
 * reads it): each product's operands read with op N or T through their
 * strides, the batch dims (Y's leading dims) walked as outer products.
 * dA = dY B^T per batch index (A not broadcast); dB zeroed, then A^T dY
 * added per batch index, the indices where B is broadcast summed one
 * product after another (beta 1, one stream: a fixed order). */
static int lower_grad_matmul_strided(lower *L, const mp__node *n,
                                     const gnode *G, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *dy = G->dy[0] >= 0 ? plain_f32(g, n, G->dy[0]) : NULL;
    int wa = G->dx[0] >= 0, wb = G->dx[1] >= 0;
    const mp__tensor *a = G->in[0] >= 0 ? in_t(g, n, (uint32_t)G->in[0]) : NULL;
    const mp__tensor *b = G->in[1] >= 0 ? in_t(g, n, (uint32_t)G->in[1]) : NULL;
    if (!dy || (wa && !b) || (wb && !a))
        FAIL("MatMulGrad: an operand the gradient needs is not saved");
    for (int i = 2; i < GMAX; i++)
        if (G->dx[i] >= 0)
            FAIL("MatMulGrad: a gradient of an input past the operands");
    /* the operands' shapes: the saved tensors', else their gradients' */
    const mp__tensor *at = wa ? out_t(g, n, (uint32_t)G->dx[0]) : a;
    const mp__tensor *bt = wb ? out_t(g, n, (uint32_t)G->dx[1]) : b;
    int ra = at->rank, rb = bt->rank, ry = dy->rank;
    if (!is_f32(at) || !is_f32(bt) || (a && !is_f32(a)) || (b && !is_f32(b)) ||
        ra < 2 || rb < 2 || ry != (ra > rb ? ra : rb) || ry > MPV_MAXR)
        FAIL("MatMulGrad: float32 operands of rank >= 2");
    int64_t M = at->dims[ra - 2], K = at->dims[ra - 1], N = bt->dims[rb - 1];
    if (bt->dims[rb - 2] != K || dy->dims[ry - 2] != M ||
        dy->dims[ry - 1] != N || (a && numel(a) != numel(at)) ||
        (b && numel(b) != numel(bt)))
        FAIL("MatMulGrad: shapes");
    int64_t sa[MPV_MAXR], sb[MPV_MAXR], sy[MPV_MAXR], sc[MPV_MAXR];
    if ((a && operand_strides(g, n->inputs[G->in[0]], sa)) ||
        (b && operand_strides(g, n->inputs[G->in[1]], sb)))
        FAIL("MatMulGrad: a permuted operand's strides");
    strides_of(dy->dims, ry, sy);
    int lead = ry - 2;
    for (int i = 0; i < lead; i++) {
        int ia = i - (ry - ra), ib = i - (ry - rb);
        if ((ia >= 0 && at->dims[ia] != 1 && at->dims[ia] != dy->dims[i]) ||
            (ib >= 0 && bt->dims[ib] != 1 && bt->dims[ib] != dy->dims[i]))
            FAIL("MatMulGrad: batch dims");
    }
    if (wa) { /* dA [M, K] = dY [M, N] B^T [N, K] */
        if (ra != ry)
            FAIL("MatMulGrad: a broadcast A's gradient");
        for (int i = 0; i < lead; i++)
            if (at->dims[i] != dy->dims[i])
                FAIL("MatMulGrad: a broadcast A's gradient");
        int64_t bs[2] = {sb[rb - 1], sb[rb - 2]}, ldb;
        int tb = matrix_op(bs, 2, &ldb);
        if (tb < 0)
            FAIL("MatMulGrad: B with no contiguous rows or columns");
        mpv_launch *x = add_launch(L, MPV_L_GEMM);
        if (!x)
            return -1;
        x->in[0] = G->dy[0];
        x->in[1] = G->in[1];
        x->out = G->dx[0];
        x->p.gemm.tb = tb;
        x->p.gemm.m = M;
        x->p.gemm.n = K;
        x->p.gemm.k = N;
        x->p.gemm.lda = N;
        x->p.gemm.ldb = ldb;
        x->p.gemm.ldc = K;
        x->p.gemm.alpha = 1.0;
        x->p.gemm.batch = 1;
        if (lead > 0 && shared_operand(bt->dims, rb, ry)) {
            /* B shared: dY and dA (both contiguous) folded into rows */
            x->p.gemm.m = M * dims_prod(dy->dims, 0, lead);
            goto dA_done;
        }
        strides_of(at->dims, ra, sc);
        for (int i = 0; i < lead; i++) {
            int ib = i - (ry - rb), o = x->p.gemm.orank++;
            x->p.gemm.odims[o] = dy->dims[i];
            x->p.gemm.osa[o] = sy[i];
            x->p.gemm.osb[o] = ib >= 0 && bt->dims[ib] != 1 ? sb[ib] : 0;
            x->p.gemm.osc[o] = sc[i];
        }
    }
dA_done:
    if (wb) { /* dB [K, N] += A^T [K, M] dY [M, N] */
        int64_t as[2] = {sa[ra - 1], sa[ra - 2]}, lda, mf;
        int ta = matrix_op(as, 2, &lda);
        if (ta < 0)
            FAIL("MatMulGrad: A with no contiguous rows or columns");
        /* B shared, A's rows folding: dB = A^T dY over all the rows, one
         * product (the batch's sum in cuBLAS's order); else dB zeroed and
         * the products added one by one */
        int fold = lead > 0 && shared_operand(bt->dims, rb, ry) &&
                   fold_rows(at->dims, sa, ra, dy->dims, lead, &mf);
        if (!fold && add_fill(L, G->dx[1], numel(bt), 1, 0) != 0)
            return -1;
        mpv_launch *x = add_launch(L, MPV_L_GEMM);
        if (!x)
            return -1;
        x->in[0] = G->in[0];
        x->in[1] = G->dy[0];
        x->out = G->dx[1];
        x->p.gemm.ta = ta;
        x->p.gemm.m = K;
        x->p.gemm.n = N;
        x->p.gemm.k = fold ? mf : M;
        x->p.gemm.lda = lda;
        x->p.gemm.ldb = N;
        x->p.gemm.ldc = N;
        x->p.gemm.alpha = 1.0;
        x->p.gemm.beta = fold ? 0.0 : 1.0;
        x->p.gemm.batch = 1;
        if (fold)
            return 0;
        strides_of(bt->dims, rb, sc);
        for (int i = 0; i < lead; i++) {
            int ia = i - (ry - ra), ib = i - (ry - rb), o = x->p.gemm.orank++;
            int64_t s_a = ia >= 0 && at->dims[ia] != 1 ? sa[ia] : 0, lda2 = 0;
            int64_t as2[2] = {sa[ra - 1], s_a};
            int ta2 = s_a ? matrix_op(as2, 2, &lda2) : -1;
            if (i == lead - 1 && !(ib >= 0 && bt->dims[ib] != 1) &&
                dy->dims[i] > M && ta2 >= 0) {
                /* B shared along this dim, which has more rows than M:
                 * its index is summed inside each product (A's rows at
                 * stride s_a, dY's at sy[i]) and M walked outside (the
                 * seq-first in_proj's weight: 8 products of 50 rows, not
                 * 50 of 8) */
                x->p.gemm.k = dy->dims[i];
                x->p.gemm.ta = ta2;
                x->p.gemm.lda = lda2;
                x->p.gemm.ldb = sy[i];
                x->p.gemm.odims[o] = M;
                x->p.gemm.osa[o] = sa[ra - 2];
                x->p.gemm.osb[o] = N;
                x->p.gemm.osc[o] = 0;
                continue;
            }
            x->p.gemm.odims[o] = dy->dims[i];
            x->p.gemm.osa[o] = s_a;
            x->p.gemm.osb[o] = sy[i];
            x->p.gemm.osc[o] = ib >= 0 && bt->dims[ib] != 1 ? sc[ib] : 0;
        }
    }
    return 0;
}

/* MatMul [.., M, K] x [.., K, N] and Gemm (2-D, transA, transB, alpha,
 * C): dA = dY B^T, dB = A^T dY (cuBLAS), dC = beta dY summed to C's
 * shape */
static int lower_grad_matmul(lower *L, const mp__node *n, const gnode *G,
                             int gemm, const char **why)
{
    const mp_graph *g = L->g;
    int tva, tvb;
    const mp__tensor *a = fwd_operand(g, n, G, 0, &tva);
    const mp__tensor *b = fwd_operand(g, n, G, 1, &tvb);
    const mp__tensor *dy = G->dy[0] >= 0 ? plain_f32(g, n, G->dy[0]) : NULL;
    for (int i = 0; i < 2; i++)
        if (G->in[i] >= 0 &&
            mp__tensor_view_kind(g, n->inputs[G->in[i]]) == MP__NVIEW_P)
            return gemm ? (*why = "GemmGrad: a permuted operand", 1)
                        : lower_grad_matmul_strided(L, n, G, why);
    if (!a || !b || !dy || !is_f32(a) || !is_f32(b) || a->rank < 2 ||
        b->rank < 2 || dy->rank < 2 || (gemm && (a->rank != 2 || b->rank != 2)))
        FAIL("MatMulGrad: float32 operands of rank >= 2 (Gemm: 2)");
    if ((G->dx[0] >= 0 && G->in[1] < 0) || (G->dx[1] >= 0 && G->in[0] < 0))
        FAIL("MatMulGrad: an operand the gradient needs is not saved");
    for (int i = 2; i < GMAX; i++)
        if (G->dx[i] >= 0 && !(gemm && i == 2))
            FAIL("MatMulGrad: a gradient of an input past the operands");
    int ta = gemm ? (int)attr_i(n, "transA", 0) : 0;
    int tb = gemm ? (int)attr_i(n, "transB", 0) : 0;
    double alpha = gemm ? mp__attr_float(n, "alpha", 1.0) : 1.0;
    int ra = a->rank, rb = b->rank, ry = dy->rank;
    /* the logical product [M, K] x [K, N] */
    int64_t M = ta ? a->dims[ra - 1] : a->dims[ra - 2];
    int64_t K = ta ? a->dims[ra - 2] : a->dims[ra - 1];
    int64_t N = tb ? b->dims[rb - 2] : b->dims[rb - 1];
    int64_t KB = tb ? b->dims[rb - 1] : b->dims[rb - 2];
    int64_t ba = dims_prod(a->dims, 0, ra - 2), bb = dims_prod(b->dims, 0,
                                                               rb - 2);
    int64_t by = dims_prod(dy->dims, 0, ry - 2);
    if (KB != K || dy->dims[ry - 2] != M || dy->dims[ry - 1] != N)
        FAIL("MatMulGrad: shapes");
    mat A = {G->in[0], 0, tva, a->dims[ra - 2], a->dims[ra - 1]};
    mat B = {G->in[1], 0, tvb, b->dims[rb - 2], b->dims[rb - 1]};
    mat D = {G->dy[0], 0, 0, M, N};
    /* batch: B shared (A's batch folded into M, A not a transposed view),
     * or the same batch dims */
    int fold = bb == 1;
    if (fold && ba > 1 && tva)
        FAIL("MatMulGrad: a transposed batched A with a shared B");
    if (!fold && !(ba == bb && ra == rb && ba == by))
        FAIL("MatMulGrad: batch broadcast");
    int64_t Mf = fold ? M * ba : M, nb = fold ? 1 : bb;
    if (fold && ba > 1)
        A.d0 = Mf, D.d0 = Mf;
    int64_t sA = fold ? 0 : M * K, sB = fold ? 0 : K * N, sD = fold ? 0 : M * N;
    if (G->dx[0] >= 0) {
        int o = G->dx[0];
        if (numel(out_t(g, n, (uint32_t)o)) != numel(a) ||
            !is_f32(out_t(g, n, (uint32_t)o)))
            FAIL("MatMulGrad: dA's size");
        mat Bu = B;
        if (!ta) { /* dA [M, K] = dY op(B)^T */
            Bu.use_t = !tb;
            if (!add_product(L, o, D, Bu, Mf, K, N, alpha, nb, sD, sB, sA))
                return -1;
        } else { /* dA [K, M] = op(B) dY^T */
            mat Du = D;
            Du.use_t = 1;
            Bu.use_t = tb;
            if (!add_product(L, o, Bu, Du, K, M, N, alpha, nb, sB, sD, sA))
                return -1;
        }
    }
    if (G->dx[1] >= 0) {
        int o = G->dx[1];
        if (numel(out_t(g, n, (uint32_t)o)) != numel(b) ||
            !is_f32(out_t(g, n, (uint32_t)o)))
            FAIL("MatMulGrad: dB's size");
        mat Au = A;
        if (!tb) { /* dB [K, N] = op(A)^T dY */
            Au.use_t = !ta;
            if (!add_product(L, o, Au, D, K, N, Mf, alpha, nb, sA, sD, sB))
                return -1;
        } else { /* dB [N, K] = dY^T op(A) */
            mat Du = D;
            Du.use_t = 1;
            Au.use_t = ta;
            if (!add_product(L, o, Du, Au, N, K, Mf, alpha, nb, sD, sA, sB))
                return -1;
        }
    }
    if (gemm && G->dx[2] >= 0) { /* dC = beta dY, summed to C's shape */
        int in[1] = {G->dy[0]};
        int r = add_grad_pw(L, n, G->dx[2], in, NULL, 1,
                            mp__attr_float(n, "beta", 1.0), why);
        if (r != 0)
            return r;
    }
    return 0;
}

/* Softmax / LogSoftmax from the saved output */
static int lower_grad_softmax(lower *L, const mp__node *n, const gnode *G,
                              unsigned kop, const char **why)
{
    const mp_graph *g = L->g;
    int dy = G->dy[0], o = G->dx[0];
    const mp__tensor *dt = dy >= 0 ? plain_f32(g, n, dy) : NULL;
    const mp__tensor *yt = G->y0 >= 0 ? plain_f32(g, n, G->y0) : NULL;
    if (!dt || !yt || o < 0 || G->n_dx != 1 || dt->rank < 1 ||
        numel(yt) != numel(dt) || !is_f32(out_t(g, n, (uint32_t)o)) ||
        numel(out_t(g, n, (uint32_t)o)) != numel(dt))
        FAIL("SoftmaxGrad: float32, the output saved");
    int old = g->onnx_opset > 0 && g->onnx_opset < 13;
    int axis = axis_attr(n, old ? 1 : -1, dt->rank);
    if (axis < 0)
        FAIL("SoftmaxGrad: bad axis");
    mpv_launch *x = add_launch(L, MPV_L_SOFTMAX_GRAD);
    if (!x)
        return -1;
    x->in[0] = dy;
    x->in[1] = G->y0;
    x->out = o;
    x->p.smgrad.outer = dims_prod(dt->dims, 0, axis);
    if (old) {
        x->p.smgrad.dim = dims_prod(dt->dims, axis, dt->rank);
        x->p.smgrad.inner = 1;
    } else {
        x->p.smgrad.dim = dt->dims[axis];
        x->p.smgrad.inner = dims_prod(dt->dims, axis + 1, dt->rank);
    }
    x->p.smgrad.log = kop == MP__KOP_LOGSOFTMAX;
    return 0;
}

/* ---- convolution on cuDNN: forward, input and weight gradients ----------- */

/* fits cuDNN's int dims and strides */
static int dnn_int(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* a float32 NCHW operand cuDNN reads as it is stored: not a transposed,
 * permuted or broadcast view (a range view is contiguous) */
static int dnn_plain(const mp_graph *g, const mp__node *n, int slot)
{
    const mp__tensor *t = in_t(g, n, (uint32_t)slot);
    unsigned k = t ? mp__tensor_view_kind(g, n->inputs[slot]) : 0;
    return t && is_f32(t) && t->rank == 4 && k != MP__NVIEW_T &&
           k != MP__NVIEW_P && k != MP__NVIEW_B && dnn_int(numel(t));
}

/* One MPV_L_CONV_DNN launch of pass `pass` for x [n, c, h, w] -> y [n, m,
 * oh, ow] by a kernel [m, c/g, kh, kw], the window from n's attributes
 * (a backward node carries its forward node's). cuDNN takes one pad per
 * side pair: it runs the pass when the output size it computes from the
 * top/left pads is the graph's, else the direct kernel (no workspace).
 * NULL with *why set (1) or on out of memory (*why NULL). */
static mpv_launch *add_conv_dnn(lower *L, const mp__node *n,
                                const mp__tensor *x, const mp__tensor *wt,
                                const mp__tensor *y, int pass,
                                const char **why)
{
    *why = NULL;
    int64_t G = attr_i(n, "group", 1);
    if (!is_f32(x) || !is_f32(wt) || !is_f32(y) || x->rank != 4 ||
        wt->rank != 4 || y->rank != 4 || !dnn_int(numel(x)) ||
        !dnn_int(numel(wt)) || !dnn_int(numel(y))) {
        *why = "Conv: only float32 2-D (NCHW) below 2^31 elements";
        return NULL;
    }
    if (G <= 0 || x->dims[1] % G || y->dims[1] % G ||
        wt->dims[1] * G != x->dims[1] || wt->dims[0] != y->dims[1] ||
        x->dims[0] != y->dims[0]) {
        *why = "Conv: inconsistent group/channels";
        return NULL;
    }
    window w;
    window_of(n, x, y, wt->dims[2], wt->dims[3], &w);
    if (w.sh <= 0 || w.sw <= 0 || w.dh <= 0 || w.dw <= 0 || w.pt < 0 ||
        w.pl < 0) {
        *why = "Conv: strides, dilations or pads out of range";
        return NULL;
    }
    mpv_launch *l = add_launch(L, MPV_L_CONV_DNN);
    if (!l)
        return NULL;
    SET_WINDOW(l->p.dnn, w);
    l->p.dnn.n = x->dims[0];
    l->p.dnn.c = x->dims[1];
    l->p.dnn.m = y->dims[1];
    l->p.dnn.g = G;
    l->p.dnn.pass = pass;
    /* cuDNN's output size with pads pt, pl on both sides */
    int64_t eh = (w.kh - 1) * w.dh + 1, ew = (w.kw - 1) * w.dw + 1;
    l->p.dnn.cudnn = w.h + 2 * w.pt >= eh && w.w + 2 * w.pl >= ew &&
                     (w.h + 2 * w.pt - eh) / w.sh + 1 == w.oh &&
                     (w.w + 2 * w.pl - ew) / w.sw + 1 == w.ow;
    if (l->p.dnn.cudnn) {
        mp__conv_shape cs = {l->p.dnn.n, l->p.dnn.c, w.h, w.w, l->p.dnn.m,
                             w.oh, w.ow, w.kh, w.kw, G};
        l->workspace = mp__conv_workspace(&cs, pass);
        if (!l->workspace) {
            *why = "Conv: the workspace overflows";
            return NULL;
        }
    }
    return l;
}

/* Conv forward: one cuDNN call over the whole batch, then the bias;
 * shapes or views cuDNN cannot take, and pads it cannot express, run
 * the im2col path (lower_conv) */
static int lower_conv_dnn(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *xt = in_t(g, n, 0), *wt = in_t(g, n, 1),
                     *bt = in_t(g, n, 2), *y = out_t(g, n, 0);
    if (n->n_out != 1 || !dnn_plain(g, n, 0) || !dnn_plain(g, n, 1) ||
        (bt && (!is_f32(bt) || numel(bt) != y->dims[1] ||
                mp__tensor_view_kind(g, n->inputs[2]) == MP__NVIEW_B)))
        return lower_conv(L, n, why);
    uint32_t first = L->n;
    mpv_launch *l = add_conv_dnn(L, n, xt, wt, y, MPV_CONV_FWD, why);
    if (!l && !*why)
        return -1;
    if (!l || !l->p.dnn.cudnn) {
        L->n = first; /* the im2col path */
        return lower_conv(L, n, why);
    }
    l->in[0] = 0;
    l->in[1] = 1;
    l->in[2] = bt ? 2 : -1;
    l->out = 0;
    l->p.dnn.has_bias = bt != NULL;
    return 0;
}

/* ConvGrad: the input's gradient (cuDNN backward data, from the saved
 * weight), the weight's (backward filter, from the saved input) and the
 * bias's (the output gradient summed over N, OH, OW: MPV_L_GRAD_PW) */
static int lower_grad_conv(lower *L, const mp__node *n, const gnode *G,
                           const char **why)
{
    const mp_graph *g = L->g;
    int tvx, tvw;
    const mp__tensor *x = fwd_operand(g, n, G, 0, &tvx);
    const mp__tensor *w = fwd_operand(g, n, G, 1, &tvw);
    int dy = G->dy[0];
    for (int i = 3; i < GMAX; i++)
        if (G->dx[i] >= 0)
            FAIL("ConvGrad: a gradient of an input past the bias");
    if (dy < 0 || !dnn_plain(g, n, dy) || !x || !w)
        FAIL("ConvGrad: a float32 NCHW output gradient and the operands' "
             "shapes");
    if ((G->dx[0] >= 0 && G->in[1] < 0) || (G->dx[1] >= 0 && G->in[0] < 0))
        FAIL("ConvGrad: an operand the gradient needs is not saved");
    if ((G->in[0] >= 0 && !dnn_plain(g, n, G->in[0])) ||
        (G->in[1] >= 0 && !dnn_plain(g, n, G->in[1])))
        FAIL("ConvGrad: a saved operand is a view cuDNN cannot read");
    const mp__tensor *yt = in_t(g, n, (uint32_t)dy);
    static const int pass[2] = {MPV_CONV_BWD_DATA, MPV_CONV_BWD_FILTER};
    for (int i = 0; i < 2; i++) {
        int o = G->dx[i];
        if (o < 0)
            continue;
        const mp__tensor *ot = out_t(g, n, (uint32_t)o);
        if (!is_f32(ot) || numel(ot) != numel(i ? w : x))
            FAIL("ConvGrad: a gradient not of its operand's size");
        mpv_launch *l = add_conv_dnn(L, n, x, w, yt, pass[i], why);
        if (!l)
            return *why ? 1 : -1;
        l->in[0] = dy;
        l->in[1] = i ? G->in[0] : G->in[1];
        l->out = o;
        /* bfloat16 operands, a float32 gradient (an autocast weight's):
         * computed in bfloat16 into the workspace, then widened */
        if (yt->dtype == MP_DTYPE_BFLOAT16 && ot->dtype == MP_DTYPE_FLOAT32) {
            uint64_t st;
            if (!mp__mul_u64((uint64_t)numel(ot), 2, &st) ||
                !mp__align_up(st, 256, &st) ||
                !mp__add_u64(l->workspace, st, &l->workspace))
                FAIL("ConvGrad: the workspace overflows");
            l->p.dnn.stage = (int64_t)st;
        }
    }
    if (G->dx[2] >= 0) { /* db [m] = dy summed over n, oh, ow */
        const mp__tensor *bt = out_t(g, n, (uint32_t)G->dx[2]);
        if (!is_f32(bt) || numel(bt) != yt->dims[1])
            FAIL("ConvGrad: the bias's gradient not of [M]");
        mpv_launch *l = add_launch(L, MPV_L_GRAD_PW);
        if (!l)
            return -1;
        int64_t hw = yt->dims[2] * yt->dims[3];
        l->in[0] = dy;
        l->out = G->dx[2];
        l->p.gpw.n_in = 1;
        l->p.gpw.rank = 3;
        l->p.gpw.alpha = 1.0;
        l->p.gpw.dims[0] = yt->dims[0];
        l->p.gpw.dims[1] = yt->dims[1];
        l->p.gpw.dims[2] = hw;
        l->p.gpw.red[0] = l->p.gpw.red[2] = 1;
        l->p.gpw.st[0][0] = yt->dims[1] * hw;
        l->p.gpw.st[0][1] = hw;
        l->p.gpw.st[0][2] = 1;
        l->p.gpw.n = yt->dims[1];
        l->p.gpw.m = yt->dims[0] * hw;
        gpw_split(l);
    }
    return 0;
}

/* ---- training: normalization and pooling backward ---------------------- */

/* The input slot of the extra tensor a backward node reads (statistics,
 * indices: the grad_saved code below -1, docs/training.md), or -1. */
static int saved_extra(const mp__node *n)
{
    int64_t dy[GMAX], sv[2 * GMAX];
    int ndy = attr_ints(n, "grad_dy", dy, GMAX);
    int nsv = attr_ints(n, "grad_saved", sv, 2 * GMAX);
    for (int k = 0; ndy >= 0 && k < nsv; k++)
        if (sv[k] < -1)
            return ndy + k;
    return -1;
}

/* input slot `slot` as a float32 tensor stored row-major in its own shape
 * (a range view included), else NULL */
static const mp__tensor *dense_f32(const mp_graph *g, const mp__node *n,
                                   int slot)
{
    const mp__tensor *t = slot >= 0 ? in_t(g, n, (uint32_t)slot) : NULL;
    if (!is_f32(t))
        return NULL;
    unsigned k = mp__tensor_view_kind(g, n->inputs[slot]);
    return k == MP__NVIEW_T || k == MP__NVIEW_P || k == MP__NVIEW_B ? NULL
                                                                    : t;
}

/* output slot o (-1: not wanted) is float32 of count elements */
static int grad_out_ok(const mp_graph *g, const mp__node *n, int o,
                       int64_t count)
{
    if (o < 0)
        return 1;
    if (n->outputs[o] == MP_NONE)
        return 0;
    const mp__tensor *t = out_t(g, n, (uint32_t)o);
    return is_f32(t) && numel(t) == count;
}

/* the gradients of forward inputs first .. GMAX - 1 are not wanted, and
 * the node writes nothing else */
static int grads_only_below(const mp__node *n, const gnode *G, int first)
{
    for (int i = first; i < GMAX; i++)
        if (G->dx[i] >= 0)
            return 0;
    return (uint32_t)G->n_dx == n->n_out;
}

/* BatchNormalization: from the output gradient, x, the scale and the
 * saved statistics (or, not saved, x's batch statistics again; in
 * inference the running ones), one launch, a block per channel */
static int lower_grad_batchnorm(lower *L, const mp__node *n, const gnode *G,
                                const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *dy = dense_f32(g, n, G->dy[0]);
    if (!dy || dy->rank < 2 || dy->dims[0] * dy->dims[1] <= 0)
        FAIL("BatchNormalizationGrad: a float32 output gradient");
    for (int o = 1; o < GMAX; o++)
        if (G->dy[o] >= 0)
            FAIL("BatchNormalizationGrad: a gradient of the running "
                 "statistics");
    if (!grads_only_below(n, G, 5))
        FAIL("BatchNormalizationGrad: outputs beyond the gradients");
    int64_t C = dy->dims[1];
    int training = attr_i(n, "training_mode", 0) != 0;
    int stats = saved_extra(n);
    const mp__tensor *xt = dense_f32(g, n, G->in[0]);
    const mp__tensor *sc = dense_f32(g, n, G->in[1]);
    const mp__tensor *st = dense_f32(g, n, stats);
    if (!xt || numel(xt) != numel(dy) || !sc || numel(sc) != C)
        FAIL("BatchNormalizationGrad: x and the scale not saved (float32)");
    if (stats >= 0 && (!st || numel(st) != 2 * C))
        FAIL("BatchNormalizationGrad: saved statistics not float32 [2, C]");
    const mp__tensor *rm = dense_f32(g, n, G->in[3]);
    const mp__tensor *rv = dense_f32(g, n, G->in[4]);
    if (!training && (!rm || numel(rm) != C || !rv || numel(rv) != C))
        FAIL("BatchNormalizationGrad: the running statistics not saved");
    if (!grad_out_ok(g, n, G->dx[0], numel(dy)))
        FAIL("BatchNormalizationGrad: dx not float32 of x's size");
    for (int i = 1; i < 5; i++)
        if (!grad_out_ok(g, n, G->dx[i], C))
            FAIL("BatchNormalizationGrad: a parameter's gradient not "
                 "float32 [C]");
    mpv_launch *x = add_launch(L, MPV_L_BN_GRAD);
    if (!x)
        return -1;
    x->in[0] = G->dy[0];
    SET_NCHW(x->p.bngrad, dy);
    x->p.bngrad.eps = mp__attr_float(n, "epsilon", 1e-5);
    x->p.bngrad.training = training;
    x->p.bngrad.x = G->in[0];
    x->p.bngrad.scale = G->in[1];
    x->p.bngrad.stats = stats;
    x->p.bngrad.rm = rm ? G->in[3] : -1;
    x->p.bngrad.rv = rv ? G->in[4] : -1;
    x->p.bngrad.dx = G->dx[0];
    x->p.bngrad.dscale = G->dx[1];
    x->p.bngrad.dbias = G->dx[2];
    x->p.bngrad.drm = G->dx[3];
    x->p.bngrad.drv = G->dx[4];
    return 0;
}

/* LayerNormalization: from the output gradient, x, the scale and the
 * saved statistics (or, not saved, recomputed into the workspace): the
 * scale's and bias's gradients summed over the rows, then x's, a block
 * per row */
static int lower_grad_layernorm(lower *L, const mp__node *n, const gnode *G,
                                const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *dy = dense_f32(g, n, G->dy[0]);
    if (!dy || dy->rank < 1)
        FAIL("LayerNormalizationGrad: a float32 output gradient");
    for (int o = 1; o < GMAX; o++)
        if (G->dy[o] >= 0)
            FAIL("LayerNormalizationGrad: a gradient of Mean or InvStdDev");
    if (!grads_only_below(n, G, 3))
        FAIL("LayerNormalizationGrad: outputs beyond the gradients");
    int axis = axis_attr(n, -1, dy->rank);
    if (axis < 0)
        FAIL("LayerNormalizationGrad: bad axis");
    int64_t cols = dims_prod(dy->dims, axis, dy->rank);
    int64_t rows = cols ? numel(dy) / cols : 0;
    int stats = saved_extra(n);
    const mp__tensor *xt = dense_f32(g, n, G->in[0]);
    const mp__tensor *sc = dense_f32(g, n, G->in[1]);
    const mp__tensor *st = dense_f32(g, n, stats);
    if (!xt || numel(xt) != numel(dy) || !sc || numel(sc) != cols)
        FAIL("LayerNormalizationGrad: x and the scale not saved (float32)");
    if (stats >= 0 && (!st || numel(st) != 2 * rows))
        FAIL("LayerNormalizationGrad: saved statistics not float32 "
             "[2, rows]");
    if (!grad_out_ok(g, n, G->dx[0], numel(dy)) ||
        !grad_out_ok(g, n, G->dx[1], cols) ||
        !grad_out_ok(g, n, G->dx[2], cols))
        FAIL("LayerNormalizationGrad: gradients not float32 of their "
             "inputs' sizes");
    mpv_launch *x = add_launch(L, MPV_L_LN_GRAD);
    if (!x)
        return -1;
    x->in[0] = G->dy[0];
    x->p.lngrad.rows = rows;
    x->p.lngrad.cols = cols;
    x->p.lngrad.eps = mp__attr_float(n, "epsilon", 1e-5);
    x->p.lngrad.x = G->in[0];
    x->p.lngrad.scale = G->in[1];
    x->p.lngrad.stats = stats;
    x->p.lngrad.dx = G->dx[0];
    x->p.lngrad.dscale = G->dx[1];
    x->p.lngrad.dbias = G->dx[2];
    /* the statistics (not saved): the mean and 1 / std per row */
    uint64_t ws = stats < 0 ? 2u * (uint64_t)rows * 4u : 0;
    /* the rows cut into chunks for about 1024 blocks of 32 columns, each
     * of the 8 row lanes of a block summing at least 32 rows, the partial
     * sums in at most 1 MiB */
    int64_t tiles = (cols + 31) / 32, parts = 1;
    if (tiles > 0 && rows > 0) {
        parts = (1024 + tiles - 1) / tiles;
        if (parts > (rows + 255) / 256)
            parts = (rows + 255) / 256;
        if (parts > 262144 / (2 * cols))
            parts = 262144 / (2 * cols);
        if (parts < 1)
            parts = 1;
    }
    int64_t chunk = rows > 0 ? (rows + parts - 1) / parts : 1;
    parts = rows > 0 ? (rows + chunk - 1) / chunk : 1;
    x->p.lngrad.chunk = chunk;
    x->p.lngrad.parts = (int32_t)parts;
    if (parts > 1 && (G->dx[1] >= 0 || G->dx[2] >= 0))
        ws += (uint64_t)parts * 2u * (uint64_t)cols * 4u;
    x->workspace = ws;
    return 0;
}

/* MaxPool, AveragePool (2-D) and GlobalAveragePool (a window of the whole
 * plane): x's gradient, a thread per element of x summing the windows
 * that hold it; MaxPool's argmax from the saved indices, else from the
 * saved x */
static int lower_grad_pool(lower *L, const mp__node *n, const gnode *G,
                           unsigned kop, int global, const char **why)
{
    const mp_graph *g = L->g;
    const mp__tensor *dy = dense_f32(g, n, G->dy[0]);
    int o = G->dx[0];
    if (!dy || o < 0 || !grads_only_below(n, G, 1))
        FAIL("poolGrad: a float32 output gradient, x's gradient");
    const mp__tensor *dx = out_t(g, n, (uint32_t)o);
    if (!is_f32(dx) || dx->rank != dy->rank || dx->rank < 3 ||
        (!global && dx->rank != 4) || dx->dims[0] != dy->dims[0] ||
        dx->dims[1] != dy->dims[1])
        FAIL("poolGrad: only float32 2-D (NCHW), global of rank >= 3");
    window w;
    if (global) {
        int64_t hw = numel(dx) / (dx->dims[0] * dx->dims[1]);
        if (numel(dy) != dx->dims[0] * dx->dims[1])
            FAIL("GlobalAveragePoolGrad: output gradient not [N, C, 1...]");
        w = (window){.h = hw, .w = 1, .oh = 1, .ow = 1, .kh = hw, .kw = 1,
                     .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    } else {
        int64_t k[2];
        if (attr_ints(n, "kernel_shape", k, 2) != 2)
            FAIL("poolGrad: kernel_shape missing");
        window_of(n, dx, dy, k[0], k[1], &w);
        if (w.kh < 1 || w.kw < 1 || w.sh < 1 || w.sw < 1 || w.dh < 1 ||
            w.dw < 1)
            FAIL("poolGrad: kernel, strides, dilations not positive");
    }
    int xs = -1, idx = -1;
    if (kop == MP__KOP_POOL_MAX) {
        int e = saved_extra(n);
        const mp__tensor *it = e >= 0 ? in_t(g, n, (uint32_t)e) : NULL;
        unsigned vk = e >= 0 ? mp__tensor_view_kind(g, n->inputs[e]) : 0;
        if (it && it->dtype == MP_DTYPE_INT64 && numel(it) == numel(dy) &&
            vk != MP__NVIEW_T && vk != MP__NVIEW_P && vk != MP__NVIEW_B)
            idx = e;
        const mp__tensor *xt = dense_f32(g, n, G->in[0]);
        if (xt && numel(xt) == numel(dx))
            xs = G->in[0];
        if (idx < 0 && xs < 0)
            FAIL("MaxPoolGrad: neither the indices nor x saved");
        if (attr_i(n, "storage_order", 0) != 0)
            FAIL("MaxPoolGrad: indices in column-major storage order");
    }
    mpv_launch *x = add_launch(L, MPV_L_POOL_GRAD);
    if (!x)
        return -1;
    x->in[0] = G->dy[0];
    x->out = o;
    SET_WINDOW(x->p.pgrad, w);
    x->p.pgrad.nc = dx->dims[0] * dx->dims[1];
    x->p.pgrad.op = (int)kop;
    x->p.pgrad.count_pad = global ? 0 : (int)attr_i(n, "count_include_pad", 0);
    x->p.pgrad.x = xs;
    x->p.pgrad.idx = idx;
    return 0;
}

/* ScaledDotProductAttentionGrad (planner/train.c, rule SDPA): from the
 * saved Q, K^T, V, mask, scalars, output O and log-sum-exp and the
 * output gradient dO, as FlashAttention-2's backward: D = rowsum(dO O),
 * P = exp(S - LSE) recomputed, dV = P^T dO, dP = dO V^T, dS = P (dP - D),
 * back through the mask and the scale to the product: dQ = dS K qk,
 * dK^T = (dS^T Q)^T qk (qk the scalars of Q and K^T); the float mask's
 * gradient is dS (times the scale when the mask comes first) summed
 * where it broadcasts; a scalar's is its sum over the scores. The
 * forward node (the producer of the saved output) says which tensor
 * sits at each position: a tensor read at two (GPT-2's exports scale Q
 * and K^T by one scalar initializer) gets the sum of both gradients.
 * Launches: per query row (D into the workspace, dQ, the rows' sums for
 * the scalars), per key (dK^T, dV), per mask element, one for the
 * scalars; the node's workspace output (bh * tq rows of D + 1 floats)
 * holds D and the sums. */
static int lower_grad_attention(lower *L, const mp__node *n, const gnode *G,
                                const char **why)
{
    const mp_graph *g = L->g;
    int64_t sv[2 * GMAX];
    int nsv = attr_ints(n, "grad_saved", sv, 2 * GMAX);
    int ndy = (int)n->n_in - nsv, lse = -1;
    for (int k = 0; k < nsv; k++)
        if (sv[k] < -1)
            lse = ndy + k;
    if (G->dy[0] < 0 || G->y0 < 0 || lse < 0 || G->n_dx < 1 ||
        n->n_out != (uint32_t)G->n_dx + 1)
        FAIL("attention backward: dO, the saved output, the log-sum-exp "
             "and the workspace");
    for (int o = 1; o < GMAX; o++)
        if (G->dy[o] >= 0)
            FAIL("attention backward: a gradient of the statistics");
    /* the forward node: the saved output's producer */
    const mp__tensor *y = in_t(g, n, (uint32_t)G->y0);
    const mp__node *f = y->producer != MP_NONE ? &g->nodes[y->producer]
                                               : NULL;
    if (!f || MP__OP_KERNEL(f->def) != MP__KERNEL_ATTENTION ||
        f->outputs[0] != n->inputs[G->y0] || f->n_in > 8)
        FAIL("attention backward: the forward node");
    mpv_launch t;
    memset(&t, 0, sizeof t);
    int r = attn_params(g, f, &t, why);
    if (r != 0)
        return r;
    mpv_launch *a = &t;
    int64_t rows = a->p.attn.bh * a->p.attn.tq;
    for (int i = 0; i < 8; i++)
        a->p.attn.b_in[i] = -1;
    /* each forward position's saved slot */
    for (uint32_t i = 0; i < f->n_in; i++) {
        if (f->inputs[i] == MP_NONE)
            continue;
        for (uint32_t s = (uint32_t)ndy; s < n->n_in; s++)
            if (n->inputs[s] == f->inputs[i])
                a->p.attn.b_in[i] = (int32_t)s;
        if (a->p.attn.b_in[i] < 0)
            FAIL("attention backward: a forward input not saved");
    }
    a->p.attn.b_o = G->y0;
    a->p.attn.b_do = G->dy[0];
    a->p.attn.b_lse = lse;
    a->p.attn.b_dq = a->p.attn.b_dk = a->p.attn.b_dv = a->p.attn.b_dm = -1;
    for (int k = 0; k < 4; k++)
        a->p.attn.b_sg[k] = -1, a->p.attn.b_sgpos[k] = 0;
    const mp__tensor *dyt = plain_f32(g, n, G->dy[0]);
    const mp__tensor *lt = plain_f32(g, n, lse);
    const mp__tensor *yt = plain_f32(g, n, G->y0);
    if (!dyt || !lt || !yt || mp__tensor_bview(g, n->inputs[G->dy[0]]) ||
        mp__tensor_bview(g, n->inputs[G->y0]) ||
        numel(dyt) != rows * a->p.attn.dv || numel(yt) != numel(dyt) ||
        numel(lt) != rows)
        FAIL("attention backward: dO, O and the log-sum-exp float32, "
             "row-major");
    /* the gradients, by the positions their tensors sit at */
    int nsc = 0;
    for (int j = 0; j < G->n_dx; j++) {
        int p0 = -1;
        for (int i = 0; i < GMAX; i++)
            if (G->dx[i] == j)
                p0 = i;
        if (p0 < 0 || (uint32_t)p0 >= f->n_in)
            FAIL("attention backward: a gradient's position");
        uint32_t tx = f->inputs[p0];
        int pos = 0, npos = 0;
        for (uint32_t i = 0; i < f->n_in; i++)
            if (f->inputs[i] == tx)
                pos |= 1 << i, npos++;
        const mp__tensor *o = out_t(g, n, (uint32_t)j);
        const mp__tensor *x = in_t(g, f, (uint32_t)p0);
        if (!is_f32(o) || numel(o) != numel(x))
            FAIL("attention backward: a gradient not float32 of its "
                 "input's size");
        if (p0 <= 3 && npos != 1)
            FAIL("attention backward: Q, K^T, V or the mask read twice");
        if (p0 == 0)
            a->p.attn.b_dq = j;
        else if (p0 == 1)
            a->p.attn.b_dk = j;
        else if (p0 == 2)
            a->p.attn.b_dv = j;
        else if (p0 == 3) {
            if (a->p.attn.mask_kind != 1)
                FAIL("attention backward: the gradient of a bool mask");
            a->p.attn.b_dm = j;
        } else {
            if (pos & 0xf || nsc >= 4)
                FAIL("attention backward: a scalar read as an operand");
            a->p.attn.b_sg[nsc] = j;
            a->p.attn.b_sgpos[nsc++] = pos >> 4;
        }
    }
    /* the workspace: D, and three rows of sums for the scalars */
    const mp__tensor *ws = out_t(g, n, (uint32_t)G->n_dx);
    a->p.attn.b_ws = G->n_dx;
    if (!is_f32(ws) || numel(ws) < rows * (nsc ? 4 : 1))
        FAIL("attention backward: the workspace (bh * tq rows of D + 1 "
             "floats; D >= 3 for a scalar's gradient)");
    static const int kinds[4] = {MPV_L_ATTN_BWD_Q, MPV_L_ATTN_BWD_KV,
                                 MPV_L_ATTN_BWD_MASK, MPV_L_ATTN_BWD_SCALARS};
    for (int k = 0; k < 4; k++) {
        if ((k == 1 && a->p.attn.b_dk < 0 && a->p.attn.b_dv < 0) ||
            (k == 2 && a->p.attn.b_dm < 0) || (k == 3 && !nsc))
            continue;
        mpv_launch *x = add_launch(L, kinds[k]);
        if (!x)
            return -1;
        x->p = t.p;
        /* every launch writes through p.attn's slots; out (the
         * workspace) is never empty */
        x->out = a->p.attn.b_ws;
    }
    return 0;
}

/* ---- backward: data movement, reductions, pointwise derivatives -------- */

/* The forward node of backward node n (NAME/grad or NAME/grad_w, named
 * after it by planner/train.c), when it is in the graph with the op the
 * backward node names; NULL otherwise. What the backward node does not
 * carry (the constant inputs of Slice, Pad, Clip, a reduction's axes;
 * the shapes of Concat's inputs and Split's outputs) is read there. */
static const mp__node *fwd_node(const mp_graph *g, const mp__node *n,
                                const gnode *G)
{
    static const char *const sfx[] = {"/grad", "/grad_w"};
    size_t len = strlen(n->name);
    char name[512];
    for (size_t k = 0; k < 2; k++) {
        size_t ls = strlen(sfx[k]);
        if (len <= ls || len - ls >= sizeof name ||
            strcmp(n->name + len - ls, sfx[k]) != 0)
            continue;
        memcpy(name, n->name, len - ls);
        name[len - ls] = '\0';
        uint32_t id;
        if (mp_graph_find_node(g, name, &id) != MP_OK)
            return NULL;
        const mp__node *f = &g->nodes[id];
        return f->def == G->fwd && f->phase == MP_PHASE_FORWARD ? f : NULL;
    }
    return NULL;
}

/* tensors a and b have the same shape */
static int same_dims(const mp__tensor *a, const mp__tensor *b)
{
    if (!a || !b || a->rank != b->rank || a->rank < 0)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

/* the forward node of n (fwd_node) when its input 0 has dx's shape and
 * its output 0 dy's: the node whose gradient n is */
static const mp__node *fwd_node_of(const mp_graph *g, const mp__node *n,
                                   const gnode *G, const mp__tensor *dxt,
                                   const mp__tensor *dyt)
{
    const mp__node *f = fwd_node(g, n, G);
    return f && f->n_out >= 1 && same_dims(in_t(g, f, 0), dxt) &&
                   same_dims(out_t(g, f, 0), dyt)
               ? f
               : NULL;
}

/* an input slot read row-major (no transposed, permuted or broadcast
 * view), any dtype; NULL otherwise */
static const mp__tensor *plain_in(const mp_graph *g, const mp__node *n,
                                  int slot)
{
    const mp__tensor *t = slot >= 0 ? in_t(g, n, (uint32_t)slot) : NULL;
    unsigned k = t ? mp__tensor_view_kind(g, n->inputs[slot]) : 0;
    return t && k != MP__NVIEW_T && k != MP__NVIEW_P && k != MP__NVIEW_B
               ? t
               : NULL;
}

/* the one input gradient (forward input 0) of a node with one output
 * gradient: *dy its slot, returns dx's output slot, or -1 */
static int one_grad(const mp_graph *g, const mp__node *n, const gnode *G,
                    int *dy, const mp__tensor **dyt, const mp__tensor **dxt)
{
    *dy = G->dy[0];
    int o = G->dx[0];
    if (*dy < 0 || o < 0 || G->n_dx != 1 || n->n_out != 1)
        return -1;
    for (int i = 1; i < GMAX; i++)
        if (G->dy[i] >= 0)
            return -1;
    *dyt = plain_in(g, n, *dy);
    *dxt = out_t(g, n, (uint32_t)o);
    return *dyt && (*dyt)->rank <= MPV_MAXR && (*dxt)->rank <= MPV_MAXR ? o
                                                                        : -1;
}

/* MPV_L_GRAD_PW as add_grad_pw, the derivative op's a and b set */
static int add_grad_pw_ab(lower *L, const mp__node *n, int out, const int *in,
                          const int *ops, int n_in, double alpha, double a,
                          double b, const char **why)
{
    int r = add_grad_pw(L, n, out, in, ops, n_in, alpha, why);
    if (r == 0) {
        L->l[L->n - 1].p.gpw.pa = a;
        L->l[L->n - 1].p.gpw.pb = b;
    }
    return r;
}

/* A unary op's gradient: dx = dy f'(s), s the saved output (y) or input
 * (x) as the op's backward rule saves it; Neg: -dy */
static int lower_grad_unary(lower *L, const mp__node *n, const gnode *G,
                            unsigned kop, const char **why)
{
    static const struct {
        unsigned kop;
        int bop, from_y;
    } ops[] = {
        {MP__KOP_SIGMOID, MPV_BOP_SIGMOID_GRAD, 1},
        {MP__KOP_TANH, MPV_BOP_TANH_GRAD, 1},
        {MP__KOP_EXP, MP__KOP_MUL, 1},
        {MP__KOP_SQRT, MPV_BOP_SQRT_GRAD, 1},
        {MP__KOP_RECIPROCAL, MPV_BOP_RECIPROCAL_GRAD, 1},
        {MP__KOP_LOG, MP__KOP_DIV, 0},
        {MP__KOP_ERF, MPV_BOP_ERF_GRAD, 0},
        {MP__KOP_GELU, MPV_BOP_GELU_GRAD, 0},
        {MP__KOP_ABS, MPV_BOP_ABS_GRAD, 0},
        {MP__KOP_CLIP, MPV_BOP_CLIP_GRAD, 0},
        {MP__KOP_HARDSIGMOID, MPV_BOP_HARDSIGMOID_GRAD, 0},
        {MP__KOP_HARDSWISH, MPV_BOP_HARDSWISH_GRAD, 0},
        {MP__KOP_LEAKYRELU, MPV_BOP_LEAKYRELU_GRAD, 0},
        {MP__KOP_ELU, MPV_BOP_ELU_GRAD, 0},
        {MP__KOP_SOFTPLUS, MPV_BOP_SOFTPLUS_GRAD, 0},
        {MP__KOP_SIN, MPV_BOP_SIN_GRAD, 0},
        {MP__KOP_COS, MPV_BOP_COS_GRAD, 0},
    };
    const mp_graph *g = L->g;
    int dy, o;
    const mp__tensor *dyt, *dxt;
    if ((o = one_grad(g, n, G, &dy, &dyt, &dxt)) < 0)
        FAIL("backward: a unary op's one gradient");
    if (kop == MP__KOP_NEG) {
        int in[1] = {dy};
        return add_grad_pw(L, n, o, in, NULL, 1, -1.0, why);
    }
    size_t k = 0;
    while (k < sizeof ops / sizeof ops[0] && ops[k].kop != kop)
        k++;
    if (k == sizeof ops / sizeof ops[0])
        FAIL("backward: no kernel for this unary op's gradient");
    int s = ops[k].from_y ? G->y0 : G->in[0];
    if (s < 0)
        FAIL(ops[k].from_y ? "backward: the unary op's output is not saved"
                           : "backward: the unary op's input is not saved");
    /* the op's parameters: the forward node's (Clip's min and max may be
     * inputs, which the backward node does not have) */
    const mp__node *f = fwd_node_of(g, n, G, dxt, dyt);
    if (kop == MP__KOP_CLIP && !f)
        FAIL("ClipGrad: the forward node (its min and max) not found");
    double a, b;
    if (unary_params(g, f ? f : n, &a, &b, why) != 0)
        return 1;
    int in[2] = {dy, s}, bop[1] = {ops[k].bop};
    return add_grad_pw_ab(L, n, o, in, bop, 2, 1.0, a, b, why);
}

/* Pow: the base's gradient dy e x^(e - 1), the exponent's dy y log(x)
 * summed to its shape (0 where x = 0: PyTorch masks x = 0 for e >= 0),
 * the exponent read as a tensor */
static int lower_grad_pow(lower *L, const mp__node *n, const gnode *G,
                          const char **why)
{
    if (G->dy[0] < 0 || (uint32_t)G->n_dx != n->n_out || G->in[0] < 0)
        FAIL("PowGrad: the output gradient, the base saved");
    if (G->dx[0] >= 0) {
        int in[3] = {G->dy[0], G->in[0], G->in[1]};
        int ops[2] = {MPV_BOP_POW_GRAD, MPV_BOP_POW_GRAD};
        if (G->in[1] < 0)
            FAIL("PowGrad: the exponent is not saved");
        int r = add_grad_pw(L, n, G->dx[0], in, ops, 3, 1.0, why);
        if (r != 0)
            return r;
    }
    if (G->dx[1] >= 0) {
        int in[3] = {G->dy[0], G->y0, G->in[0]};
        int ops[2] = {MPV_BOP_POW_EXP_GRAD, MPV_BOP_POW_EXP_GRAD};
        if (G->y0 < 0)
            FAIL("PowGrad: the output is not saved");
        return add_grad_pw(L, n, G->dx[1], in, ops, 3, 1.0, why);
    }
    return 0;
}

/* Where(c, a, b): da = dy where c, db = dy where not c, each summed to
 * its operand's shape; c saved (bool) */
static int lower_grad_where(lower *L, const mp__node *n, const gnode *G,
                            const char **why)
{
    if (G->dy[0] < 0 || G->in[0] < 0 || G->dx[0] >= 0 ||
        (uint32_t)G->n_dx != n->n_out)
        FAIL("WhereGrad: the condition saved, no gradient of it");
    for (int i = 1; i < 3; i++) {
        if (G->dx[i] < 0)
            continue;
        int in[2] = {G->dy[0], G->in[0]};
        int ops[1] = {i == 1 ? MPV_BOP_WHERE_T : MPV_BOP_WHERE_F};
        int r = add_grad_pw(L, n, G->dx[i], in, ops, 2, 1.0, why);
        if (r != 0)
            return r;
    }
    return 0;
}

/* Transpose: dx = dy transposed back (a strided copy over dx's dims,
 * reading dy's axis k for dx's axis perm[k]) */
static int lower_grad_transpose(lower *L, const mp__node *n, const gnode *G,
                                const char **why)
{
    int dy, o;
    const mp__tensor *dyt, *dxt;
    if ((o = one_grad(L->g, n, G, &dy, &dyt, &dxt)) < 0)
        FAIL("TransposeGrad: one gradient, read row-major");
    int r = dxt->rank, es = esize_of(dxt);
    if (dyt->rank != r || !es || esize_of(dyt) != es)
        FAIL("TransposeGrad: ranks or dtypes");
    int64_t perm[MPV_MAXR], yst[MPV_MAXR], ist[MPV_MAXR], ost[MPV_MAXR];
    if (attr_ints(n, "perm", perm, MPV_MAXR) != r)
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    strides_of(dyt->dims, r, yst);
    strides_of(dxt->dims, r, ost);
    for (int i = 0; i < r; i++)
        ist[i] = -1;
    for (int k = 0; k < r; k++) {
        if (perm[k] < 0 || perm[k] >= r || ist[perm[k]] >= 0 ||
            dxt->dims[perm[k]] != dyt->dims[k])
            FAIL("TransposeGrad: bad perm");
        ist[perm[k]] = yst[k];
    }
    if (numel(dxt) > 0 &&
        !add_copy(L, dy, o, r, dxt->dims, ist, ost, 0, 0, es))
        return -1;
    return 0;
}

/* Cast: dy cast back to the input's dtype */
static int lower_grad_cast(lower *L, const mp__node *n, const gnode *G,
                           const char **why)
{
    int dy, o;
    const mp__tensor *dyt, *dxt;
    if ((o = one_grad(L->g, n, G, &dy, &dyt, &dxt)) < 0 ||
        !cast_ok(dyt->dtype) || !cast_ok(dxt->dtype) ||
        numel(dyt) != numel(dxt))
        FAIL("CastGrad: one gradient of a supported dtype pair");
    mpv_launch *x = add_launch(L, MPV_L_CAST);
    if (!x)
        return -1;
    x->in[0] = dy;
    x->out = o;
    x->p.cast.n = numel(dxt);
    x->p.cast.from = dyt->dtype;
    x->p.cast.to = dxt->dtype;
    return 0;
}

/* Gather (data input 0, indices saved): dx zeroed, then each row of dy
 * added at its index */
static int lower_grad_gather(lower *L, const mp__node *n, const gnode *G,
                             const char **why)
{
    const mp_graph *g = L->g;
    int dy, o;
    const mp__tensor *dyt, *dxt, *it = plain_in(g, n, G->in[1]);
    if ((o = one_grad(g, n, G, &dy, &dyt, &dxt)) < 0 || !is_f32(dyt) ||
        !is_f32(dxt) || !it ||
        (it->dtype != MP_DTYPE_INT64 && it->dtype != MP_DTYPE_INT32))
        FAIL("GatherGrad: float32 data, int32/int64 indices saved");
    int axis = axis_attr(n, 0, dxt->rank);
    if (axis < 0)
        FAIL("GatherGrad: bad axis");
    int64_t outer = dims_prod(dxt->dims, 0, axis), ax = dxt->dims[axis];
    int64_t inner = dims_prod(dxt->dims, axis + 1, dxt->rank);
    if (numel(dyt) != outer * numel(it) * inner)
        FAIL("GatherGrad: the output gradient's size");
    if (add_fill(L, o, numel(dxt), 1, 0) != 0)
        return -1;
    if (ax == 0 || numel(dyt) == 0)
        return 0;
    mpv_launch *x = add_launch(L, MPV_L_GATHER_GRAD);
    if (!x)
        return -1;
    x->in[0] = dy;
    x->in[1] = G->in[1];
    x->out = o;
    x->p.gather.outer = outer;
    x->p.gather.axis = ax;
    x->p.gather.inner = inner;
    x->p.gather.nidx = numel(it);
    x->p.gather.esize = 4;
    x->p.gather.iesize = esize_of(it);
    return 0;
}

/* ReduceMean / ReduceSum: dy broadcast back over the reduced axes (times
 * 1 / count for the mean): a pointwise launch over dx's dims with no
 * sum, dy read at stride 0 along them */
static int lower_grad_reduce(lower *L, const mp__node *n, const gnode *G,
                             unsigned kop, const char **why)
{
    const mp_graph *g = L->g;
    int dy, o;
    const mp__tensor *dyt, *dxt;
    if ((kop != MP__KOP_REDUCE_MEAN && kop != MP__KOP_REDUCE_SUM) ||
        (o = one_grad(g, n, G, &dy, &dyt, &dxt)) < 0 || !is_f32(dyt) ||
        !is_f32(dxt))
        FAIL("ReduceGrad: ReduceMean or ReduceSum, float32");
    int r = dxt->rank;
    /* the axes: the attribute, else the forward node's second input */
    int64_t axes[MPV_MAXR];
    int na = attr_ints(n, "axes", axes, MPV_MAXR);
    const mp__node *f = na < 0 ? fwd_node_of(g, n, G, dxt, dyt) : NULL;
    if (na < 0 && f && f->n_in >= 2 && in_t(g, f, 1)) {
        na = input_ints(g, f, 1, axes, MPV_MAXR);
        if (na < 0)
            FAIL("ReduceGrad: axes not known");
    } else if (na < 0 && !f && numel(dyt) != 1) {
        FAIL("ReduceGrad: the forward node (its axes) not found");
    }
    int red[MPV_MAXR];
    for (int i = 0; i < r; i++)
        red[i] = na <= 0 ? !attr_i(n, "noop_with_empty_axes", 0) : 0;
    for (int i = 0; i < na; i++) {
        int a = norm_axis(axes[i], r);
        if (a < 0 || a >= r)
            FAIL("ReduceGrad: bad axis");
        red[a] = 1;
    }
    /* dy's dims: dx's with the reduced ones 1 (keepdims) or gone */
    int keep = attr_i(n, "keepdims", 1) != 0;
    int64_t kd[MPV_MAXR], st[MPV_MAXR], count = 1;
    int kr = 0;
    for (int i = 0; i < r; i++) {
        if (red[i])
            count *= dxt->dims[i];
        if (!red[i] || keep)
            kd[kr++] = red[i] ? 1 : dxt->dims[i];
    }
    if (kr != dyt->rank)
        FAIL("ReduceGrad: the output gradient's rank");
    for (int i = 0; i < kr; i++)
        if (kd[i] != dyt->dims[i])
            FAIL("ReduceGrad: the output gradient's dims");
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        st[i] = red[i] ? 0 : s;
        if (!red[i])
            s *= dxt->dims[i];
    }
    mpv_launch *x = add_launch(L, MPV_L_GRAD_PW);
    if (!x)
        return -1;
    x->in[0] = dy;
    x->out = o;
    x->p.gpw.n_in = 1;
    x->p.gpw.rank = r;
    x->p.gpw.n = numel(dxt);
    x->p.gpw.m = 1;
    x->p.gpw.alpha = kop == MP__KOP_REDUCE_MEAN && count > 0
                         ? 1.0 / (double)count
                         : 1.0;
    for (int i = 0; i < r; i++) {
        x->p.gpw.dims[i] = dxt->dims[i];
        x->p.gpw.st[0][i] = st[i];
    }
    gpw_split(x);
    return 0;
}

/* Expand: dy summed over the broadcast dims to the input's shape */
static int lower_grad_expand(lower *L, const mp__node *n, const gnode *G,
                             const char **why)
{
    int dy, o;
    const mp__tensor *dyt, *dxt;
    if ((o = one_grad(L->g, n, G, &dy, &dyt, &dxt)) < 0)
        FAIL("ExpandGrad: one gradient");
    int in[1] = {dy};
    return add_grad_pw(L, n, o, in, NULL, 1, 1.0, why);
}

/* Concat (forward input i's gradient: its part of dy) and Split (dx:
 * each output's gradient copied to its part, zeros where an output has
 * none): strided copies along the axis, the parts' sizes from the
 * forward node */
static int lower_grad_parts(lower *L, const mp__node *n, const gnode *G,
                            int concat, const char **why)
{
    const mp_graph *g = L->g;
    const mp__node *f = fwd_node(g, n, G);
    if (!f)
        FAIL("Concat/SplitGrad: the forward node (the parts) not found");
    /* the whole: Concat's output, Split's input; its gradient */
    const mp__tensor *w = concat ? out_t(g, f, 0) : in_t(g, f, 0);
    int wslot = concat ? G->dy[0] : G->dx[0];
    const mp__tensor *wg = wslot < 0 ? NULL
                           : concat  ? plain_in(g, n, wslot)
                                     : out_t(g, n, (uint32_t)wslot);
    int es = w ? esize_of(w) : 0;
    uint32_t parts = concat ? f->n_in : f->n_out;
    if (!wg || !es || w->rank < 1 || w->rank > MPV_MAXR ||
        !same_dims(wg, w) || esize_of(wg) != es ||
        parts > GMAX || (!concat && G->n_dx != 1) ||
        (uint32_t)G->n_dx != n->n_out)
        FAIL("Concat/SplitGrad: the whole's gradient, rank, parts");
    int axis = axis_attr(n, 0, w->rank);
    if (axis < 0)
        FAIL("Concat/SplitGrad: bad axis");
    int64_t wst[MPV_MAXR], pst[MPV_MAXR], off = 0;
    strides_of(w->dims, w->rank, wst);
    /* Split: zeros under the parts with no gradient */
    for (uint32_t i = 0; !concat && i < parts; i++)
        if (G->dy[i] < 0) {
            if (add_fill(L, wslot, numel(w), 1, 0) != 0)
                return -1;
            break;
        }
    for (uint32_t i = 0; i < parts; i++) {
        const mp__tensor *a = concat ? in_t(g, f, i) : out_t(g, f, i);
        if (!a || a->rank != w->rank)
            FAIL("Concat/SplitGrad: a part's rank");
        int slot = concat ? G->dx[i] : G->dy[i];
        const mp__tensor *ag = slot < 0 ? NULL
                               : concat  ? out_t(g, n, (uint32_t)slot)
                                         : plain_in(g, n, slot);
        if (slot >= 0 && (!same_dims(ag, a) || esize_of(ag) != es))
            FAIL("Concat/SplitGrad: a part's gradient");
        strides_of(a->dims, a->rank, pst);
        int64_t at = off * wst[axis];
        if (ag && numel(a) > 0 &&
            !(concat ? add_copy(L, wslot, slot, a->rank, a->dims, wst, pst,
                                at, 0, es)
                     : add_copy(L, slot, wslot, a->rank, a->dims, pst, wst, 0,
                                at, es)))
            return -1;
        off += a->dims[axis];
    }
    if (off != w->dims[axis])
        FAIL("Concat/SplitGrad: the parts do not make the whole");
    return 0;
}

/* The one gradient of a data-movement node (Slice, Pad) that moves dy's
 * elements to dx: its output slot, dy's slot and both tensors, the
 * forward node, the element size (dx's and dy's, equal, as their
 * ranks); -1 with *why (found, or shape: the node's messages) when the
 * lowering cannot take it. */
static int moved_grad(const mp_graph *g, const mp__node *n, const gnode *G,
                      const char *found, const char *shape, int *dy,
                      const mp__tensor **dyt, const mp__tensor **dxt,
                      const mp__node **f, int *es, const char **why)
{
    int o = one_grad(g, n, G, dy, dyt, dxt);
    if (o < 0 || !(*f = fwd_node_of(g, n, G, *dxt, *dyt))) {
        *why = found;
        return -1;
    }
    *es = esize_of(*dxt);
    if (!*es || esize_of(*dyt) != *es || (*dyt)->rank != (*dxt)->rank) {
        *why = shape;
        return -1;
    }
    return o;
}

/* Slice: dx zeroed, dy copied to where the slice took it from */
static int lower_grad_slice(lower *L, const mp__node *n, const gnode *G,
                            const char **why)
{
    const mp_graph *g = L->g;
    int dy, es;
    const mp__tensor *dyt, *dxt;
    const mp__node *f = NULL;
    int o = moved_grad(g, n, G, "SliceGrad: one gradient, the forward node "
                       "found", "SliceGrad: element size or rank", &dy, &dyt,
                       &dxt, &f, &es, why);
    if (o < 0)
        return 1;
    int r = dxt->rank;
    int64_t sst[MPV_MAXR], yst[MPV_MAXR], off;
    if (slice_map(g, f, dxt, dyt, sst, &off, why) != 0)
        return 1;
    strides_of(dyt->dims, r, yst);
    if (add_fill(L, o, numel(dxt), 1, 0) != 0)
        return -1;
    if (numel(dyt) > 0 &&
        !add_copy(L, dy, o, r, dyt->dims, yst, sst, 0, off, es))
        return -1;
    return 0;
}

/* constant-mode Pad: dx is dy's inside, without the pads */
static int lower_grad_pad(lower *L, const mp__node *n, const gnode *G,
                          const char **why)
{
    const mp_graph *g = L->g;
    int dy, es;
    const mp__tensor *dyt, *dxt;
    const mp__node *f = NULL;
    int o = moved_grad(g, n, G, "PadGrad: one gradient, the forward node "
                       "found", "PadGrad: element size or rank", &dy, &dyt,
                       &dxt, &f, &es, why);
    if (o < 0)
        return 1;
    int r = dxt->rank;
    int64_t pads[2 * MPV_MAXR], yst[MPV_MAXR], xst[MPV_MAXR], off = 0;
    double value;
    if (pad_args(g, f, r, pads, &value, why) != 0)
        return 1;
    strides_of(dyt->dims, r, yst);
    strides_of(dxt->dims, r, xst);
    for (int i = 0; i < r; i++) {
        if (dxt->dims[i] + pads[i] + pads[r + i] != dyt->dims[i])
            FAIL("PadGrad: shapes and pads");
        off += pads[i] * yst[i];
    }
    if (numel(dxt) > 0 &&
        !add_copy(L, dy, o, r, dxt->dims, yst, xst, off, 0, es))
        return -1;
    return 0;
}

/* The backward nodes of this section; 2: not one of them */
static int lower_grad_more(lower *L, const mp__node *n, const gnode *G,
                           unsigned k, unsigned kop, const char **why)
{
    if (MP__OP_BWD(G->fwd) == MP__BWD_WHERE)
        return lower_grad_where(L, n, G, why);
    switch (k) {
    case MP__KERNEL_UNARY:
        return kop == MP__KOP_RELU ? 2 : lower_grad_unary(L, n, G, kop, why);
    case MP__KERNEL_BINARY:
        return kop == MP__KOP_POW ? lower_grad_pow(L, n, G, why) : 2;
    case MP__KERNEL_TRANSPOSE:
        return lower_grad_transpose(L, n, G, why);
    case MP__KERNEL_CAST:
        return lower_grad_cast(L, n, G, why);
    case MP__KERNEL_GATHER:
        return lower_grad_gather(L, n, G, why);
    case MP__KERNEL_REDUCE:
        return lower_grad_reduce(L, n, G, kop, why);
    case MP__KERNEL_EXPAND:
        return lower_grad_expand(L, n, G, why);
    case MP__KERNEL_CONCAT:
    case MP__KERNEL_SPLIT:
        return lower_grad_parts(L, n, G, k == MP__KERNEL_CONCAT, why);
    case MP__KERNEL_SLICE:
        return lower_grad_slice(L, n, G, why);
    case MP__KERNEL_PAD:
        return lower_grad_pad(L, n, G, why);
    default:
        return 2;
    }
}

/* A backward node: by its forward op's registry kernel */
static int lower_grad(lower *L, const mp__node *n, const char **why)
{
    gnode G;
    if (grad_node(n, &G, why) != 0)
        return 1;
    unsigned k = MP__OP_KERNEL(G.fwd), kop = MP__OP_KOP(G.fwd);
    if (k == MP__KERNEL_ATTENTION)
        return lower_grad_attention(L, n, &G, why);
    if (G.read_twice)
        FAIL("backward: a tensor the forward node reads twice");
    int r = lower_grad_more(L, n, &G, k, kop, why);
    if (r != 2)
        return r;
    /* (a flash backward's workspace follows the gradients) */
    if ((uint32_t)G.n_dx != n->n_out &&
        (k == MP__KERNEL_UNARY || k == MP__KERNEL_BINARY ||
         k == MP__KERNEL_MATMUL || k == MP__KERNEL_GEMM ||
         k == MP__KERNEL_SOFTMAX || k == MP__KERNEL_CONV))
        FAIL("backward: outputs beyond the gradients");
    switch (k) {
    case MP__KERNEL_UNARY:
        if (kop != MP__KOP_RELU)
            FAIL("backward: no kernel for this unary op's gradient");
        return lower_grad_pointwise(L, n, &G, k, kop, why);
    case MP__KERNEL_BINARY:
        if (kop != MP__KOP_ADD && kop != MP__KOP_SUB && kop != MP__KOP_MUL &&
            kop != MP__KOP_DIV)
            FAIL("backward: no kernel for this binary op's gradient");
        return lower_grad_pointwise(L, n, &G, k, kop, why);
    case MP__KERNEL_MATMUL:
    case MP__KERNEL_GEMM:
        return lower_grad_matmul(L, n, &G, k == MP__KERNEL_GEMM, why);
    case MP__KERNEL_SOFTMAX:
        return lower_grad_softmax(L, n, &G, kop, why);
    case MP__KERNEL_CONV:
        return lower_grad_conv(L, n, &G, why);
    case MP__KERNEL_BATCHNORM:
        return lower_grad_batchnorm(L, n, &G, why);
    case MP__KERNEL_LAYERNORM:
        return lower_grad_layernorm(L, n, &G, why);
    case MP__KERNEL_POOL:
        return lower_grad_pool(L, n, &G, kop, 0, why);
    case MP__KERNEL_GLOBAL_POOL:
        if (kop != MP__KOP_POOL_AVG)
            FAIL("backward: no kernel for GlobalMaxPool's gradient");
        return lower_grad_pool(L, n, &G, kop, 1, why);
    default:
        FAIL("backward: no kernel for this op's gradient");
    }
}

/* ---- collectives on one GPU (validate --rank) ---------------------------- */

/* elements of a collective's operand: its bytes (a bucket or a shard
 * buffer has no shape) */
static int64_t flat_n(const mp__tensor *t)
{
    int es = t ? esize_of(t) : 0;
    return es ? (int64_t)(t->bytes / (uint64_t)es) : 0;
}

/* The parts a reduce-scatter splits each input into: the p with
 * sum(ceil(n_i / p)) == the output's elements (planner/parallel.c shards
 * every tensor by ceil(n / ranks)); 0 when none does. */
static int64_t scatter_parts(const mp_graph *g, const mp__node *n,
                             int64_t out_elems)
{
    int64_t total = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        total += in_t(g, n, i) ? flat_n(in_t(g, n, i)) : 0;
    if (out_elems <= 0 || total <= 0)
        return 0;
    /* the sum falls as p grows: bisect for the smallest p reaching it */
    int64_t lo = 1, hi = total;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, s = 0;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (in_t(g, n, i))
                s += (flat_n(in_t(g, n, i)) + mid - 1) / mid;
        if (s <= out_elems)
            hi = mid;
        else
            lo = mid + 1;
    }
    int64_t s = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (in_t(g, n, i))
            s += (flat_n(in_t(g, n, i)) + lo - 1) / lo;
    return s == out_elems ? lo : 0;
}

/* a flat copy of n elements: input slot i from element ioff into output
 * slot o at element ooff */
static int flat_copy(lower *L, int i, int o, int64_t n, int64_t ioff,
                     int64_t ooff, int es)
{
    int64_t dims[1] = {n}, st[1] = {1};
    return n <= 0 || add_copy(L, i, o, 1, dims, st, st, ioff, ooff, es)
               ? 0 : -1;
}

/* one NCCL call of a collective (validate/validate.h's p.coll) */
static int add_coll(lower *L, int op, int in, int out, const mp__tensor *t,
                    int64_t count, int64_t soff, int64_t doff, int peer)
{
    if (count <= 0)
        return 0;
    mpv_launch *x = add_launch(L, MPV_L_COLL);
    if (!x)
        return -1;
    int bytes = op == MPV_COLL_SEND || op == MPV_COLL_RECV;
    x->in[0] = in;
    x->out = out;
    x->p.coll.op = op;
    x->p.coll.dtype = bytes ? MP_DTYPE_UINT8 : t->dtype;
    x->p.coll.esize = bytes ? 1 : esize_of(t);
    x->p.coll.peer = peer;
    x->p.coll.group = bytes ? MPV_COLL_WORLD : L->group;
    x->p.coll.count = bytes ? count * esize_of(t) : count;
    x->p.coll.soff = bytes ? soff * esize_of(t) : soff;
    x->p.coll.doff = bytes ? doff * esize_of(t) : doff;
    return 0;
}

/* the length of slice q of a tensor of n elements cut in slices of S
 * (S = ceil(n / dp)): S, less for the last, 0 past the end */
static int64_t slice_len(int64_t n, int64_t S, int64_t q)
{
    int64_t c = n - q * S;
    return c <= 0 ? 0 : c < S ? c : S;
}

/* The group collective n runs in: its attribute group ("tp": planner/
 * tp.c's, the tensor-parallel ranks), else the data-parallel ranks */
static int coll_group(const mp__node *n)
{
    const mp__attr *a = mp__node_attr(n, "group");
    return a && a->type == MP__ATTR_STRING && !strcmp(a->v.s, "tp")
               ? MPV_COLL_TP : MPV_COLL_DP;
}

/* A tensor-parallel collective (attribute group "tp") as one NCCL call
 * on the tensor-parallel communicator: ReduceScatter (a row layer's
 * partial sums into the split sequence, --sp) is ncclReduceScatter
 * (sum) of the input into the output, 1/tp of it; AllGather is
 * ncclAllGather of the input into the output, tp times it. The rank
 * graph's split is a flat contiguous one: rank t's part is elements t x
 * count .. of the flat tensor (the sequence slice only when the dims
 * before it are 1). AllReduce is lower_collective's: its output after
 * the local copy, summed in place. */
static int lower_collective_tp(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    unsigned kop = kop_of(n);
    const mp__tensor *x = in_t(g, n, 0), *y = out_t(g, n, 0);
    int64_t tp = L->rl->tp ? L->rl->tp : 1;
    if (n->n_in != 1 || n->n_out != 1 || !x || !y ||
        esize_of(x) != esize_of(y) || x->dtype != y->dtype)
        FAIL("collective: a tensor-parallel one has one input and one "
             "output of one dtype");
    if (kop == MP__KOP_REDUCE_SCATTER) {
        if (flat_n(y) * tp != flat_n(x))
            FAIL("collective: a tensor-parallel reduce-scatter's output is "
                 "not 1/tp of its input");
        return add_coll(L, MPV_COLL_REDUCE_SCATTER, 0, 0, y, flat_n(y), 0,
                        0, -1) ? -1 : 0;
    }
    if (kop == MP__KOP_ALL_GATHER) {
        if (flat_n(x) * tp != flat_n(y))
            FAIL("collective: a tensor-parallel all-gather's output is not "
                 "tp times its input");
        return add_coll(L, MPV_COLL_ALL_GATHER, 0, 0, y, flat_n(x), 0, 0,
                        -1) ? -1 : 0;
    }
    FAIL("collective: no NCCL lowering of this tensor-parallel kind");
}

/* A collective of a rank graph as NCCL calls (validate --ranks) on the
 * buffers of the local lowering (lower_collective below); the
 * tensor-parallel ones are lower_collective_tp's:
 * - AllReduce: the gradients copied into the bucket, then the bucket
 *   all-reduced in place, averaged (DDP's gradient average);
 * - ReduceScatter: for each input of n elements (S = ceil(n / dp)) and
 *   each data-parallel rank q, slice q reduced (averaged) to root q, into
 *   the input's place in the output: rank q receives its slices;
 * - AllGather of shards (ZeRO-3): each rank q's shard broadcast into
 *   slice q of the full tensor; AllGather with an empty output (ZeRO-1,
 *   -2: the updated weights gathered in place): slice q of each weight
 *   (its inputs) broadcast from rank q, in place;
 * - Send: one send to each stage that receives the tensor, Recv: its
 *   buffer filled, then one receive; their peers are set when the ranks'
 *   programs are linked (mpv_ranks_link). */
static int lower_collective_nccl(lower *L, const mp__node *n,
                                 const char **why)
{
    const mp_graph *g = L->g;
    unsigned kop = kop_of(n);
    const mp__tensor *y = out_t(g, n, 0);
    int64_t dp = L->rl->dp;
    if (L->group == MPV_COLL_TP && kop != MP__KOP_SEND &&
        kop != MP__KOP_RECV)
        return lower_collective_tp(L, n, why);
    if (kop == MP__KOP_SEND) {
        const mp__tensor *x = in_t(g, n, 0);
        for (uint32_t s = 0; x && s + 1 < L->rl->pp; s++)
            if (add_coll(L, MPV_COLL_SEND, 0, -1, x, flat_n(x), 0, 0, -1))
                return -1;
        return 0;
    }
    if (kop == MP__KOP_RECV)
        return add_fill(L, 0, flat_n(y), is_f32(y) ? 0 : 1, 0.25) ||
                       add_coll(L, MPV_COLL_RECV, -1, 0, y, flat_n(y), 0, 0,
                                -1)
                   ? -1 : 0;
    if (kop == MP__KOP_ALL_GATHER && flat_n(y) == 0) {
        for (uint32_t i = 0; i < n->n_in; i++) {
            const mp__tensor *w = in_t(g, n, i);
            int64_t m = w ? flat_n(w) : 0, S = (m + dp - 1) / dp;
            for (int64_t q = 0; q < dp; q++) {
                if (add_coll(L, MPV_COLL_BCAST, (int)i, -1, w,
                             slice_len(m, S, q), q * S, q * S, (int)q))
                    return -1;
                if (L->n && L->l[L->n - 1].kind == MPV_L_COLL &&
                    L->l[L->n - 1].out == -1)
                    L->l[L->n - 1].in[1] = (int)i; /* in place */
            }
        }
        return 0;
    }
    if (kop == MP__KOP_ALL_GATHER) {
        if (n->n_out != n->n_in)
            FAIL("collective: an all-gather has one output per input");
        for (uint32_t i = 0; i < n->n_in; i++) {
            int64_t S = flat_n(in_t(g, n, i)), full = flat_n(out_t(g, n, i));
            for (int64_t q = 0; q < dp; q++)
                if (add_coll(L, MPV_COLL_BCAST, (int)i, (int)i,
                             out_t(g, n, i), slice_len(full, S, q), 0, q * S,
                             (int)q))
                    return -1;
        }
        return 0;
    }
    if (kop == MP__KOP_REDUCE_SCATTER) {
        if (n->n_out != 1)
            FAIL("collective: a reduce-scatter has one output");
        if (flat_n(y) > 0 && add_fill(L, 0, 0, 1, 0) != 0)
            return -1;
        int64_t at = 0;
        for (uint32_t i = 0; i < n->n_in; i++) {
            const mp__tensor *x = in_t(g, n, i);
            int64_t m = flat_n(x), S = (m + dp - 1) / dp;
            if (at + S > flat_n(y))
                FAIL("collective: the inputs do not fit the output");
            for (int64_t q = 0; q < dp; q++)
                if (add_coll(L, MPV_COLL_REDUCE, (int)i, 0, x,
                             slice_len(m, S, q), q * S, at, (int)q))
                    return -1;
            at += S;
        }
        return 0;
    }
    FAIL("collective: no NCCL lowering of this kind");
}

/* A collective of a rank graph (planner/parallel.c, pipeline.c) run on
 * one GPU: a local operation on the same buffers, in the same order, so
 * that the memory is what the rank holds in a real run (docs/
 * distributed.md).
 * - AllReduce: its inputs copied one after the other into its output
 *   (DDP's bucket), or each into its own output;
 * - ReduceScatter: each input's slice of ceil(n / parts) elements for
 *   this data-parallel index (--rank R's; every data-parallel rank runs
 *   the same graph, the slice only changes values) one after the other;
 * - AllGather: each input (a shard) copied into every slice of its
 *   output; an empty output (ZeRO-1/2's gather of the updated weights in
 *   place) is nothing to do;
 * - Send: nothing (it reads its buffer); Recv: its output filled.
 * Output elements past the copies are zero-filled. With NCCL (validate
 * --ranks) the collectives are lower_collective_nccl's, and the bucket
 * of an AllReduce, copied in as here, is then all-reduced in place. */
static int lower_collective(lower *L, const mp__node *n, const char **why)
{
    const mp_graph *g = L->g;
    unsigned kop = kop_of(n);
    L->group = coll_group(n);
    if (L->rl && L->rl->nccl && kop != MP__KOP_ALL_REDUCE)
        return lower_collective_nccl(L, n, why);
    const mp__tensor *y = out_t(g, n, 0);
    int es = esize_of(y);
    if (kop == MP__KOP_SEND || flat_n(y) == 0)
        return 0;
    if (!es)
        FAIL("collective: element size");
    if (kop == MP__KOP_RECV)
        return add_fill(L, 0, flat_n(y), is_f32(y) ? 0 : 1, 0.25);
    for (uint32_t i = 0; i < n->n_in; i++)
        if (!in_t(g, n, i) || esize_of(in_t(g, n, i)) != es)
            FAIL("collective: an input missing or of another dtype");
    /* outputs paired with inputs (a reduce-scatter has one) */
    int pairs = n->n_out == n->n_in && kop != MP__KOP_REDUCE_SCATTER;
    if (!pairs && n->n_out != 1)
        FAIL("collective: neither one output nor one per input");
    if (kop == MP__KOP_ALL_GATHER) {
        if (!pairs)
            FAIL("collective: an all-gather has one output per input");
        for (uint32_t i = 0; i < n->n_in; i++) {
            int64_t m = flat_n(in_t(g, n, i)), cap = flat_n(out_t(g, n, i));
            for (int64_t k = 0; k < cap && m > 0; k += m)
                if (flat_copy(L, (int)i, (int)i, m < cap - k ? m : cap - k,
                              0, k, es))
                    return -1;
        }
        return 0;
    }
    int64_t parts = 1;
    if (kop == MP__KOP_REDUCE_SCATTER &&
        !(parts = scatter_parts(g, n, flat_n(y))))
        FAIL("collective: a reduce-scatter's one output is no shard of its "
             "inputs");
    /* what each output receives; its padding zeroed first */
    int64_t at = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        int64_t m = flat_n(in_t(g, n, i));
        m = (m + parts - 1) / parts;
        at = pairs ? m : at + m;
        if (at > flat_n(out_t(g, n, pairs ? i : 0)))
            FAIL("collective: the inputs do not fit the output");
        if (pairs && at < flat_n(out_t(g, n, i)) &&
            add_fill(L, (int)i, 0, 1, 0) != 0)
            return -1;
    }
    /* a reduce-scatter's slice: this data-parallel (tensor-parallel, for
     * the tp group's) index's (the local lowering of rank R), else the
     * first; a later one may be shorter */
    int64_t idx = !L->rl ? 0
                  : L->group == MPV_COLL_TP ? (int64_t)L->rl->tp_index
                                            : (int64_t)L->rl->dp_index;
    int64_t d = kop == MP__KOP_REDUCE_SCATTER && idx < parts ? idx : 0;
    if (!pairs && (at < flat_n(y) || d > 0) && add_fill(L, 0, 0, 1, 0) != 0)
        return -1;
    at = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        int64_t full = flat_n(in_t(g, n, i)), m = (full + parts - 1) / parts;
        if (flat_copy(L, (int)i, pairs ? (int)i : 0,
                      slice_len(full, m, d), d * m, pairs ? 0 : at, es))
            return -1;
        at += m;
    }
    /* NCCL (validate --ranks): the bucket all-reduced (averaged) in place
     * after its gradients were copied in; a tensor-parallel all-reduce
     * (a row layer's partial sums) summed in place after its copy */
    for (uint32_t o = 0; L->rl && L->rl->nccl && o < n->n_out; o++)
        if (add_coll(L, MPV_COLL_ALL_REDUCE, -1, (int)o, out_t(g, n, o),
                     flat_n(out_t(g, n, o)), 0, 0, -1))
            return -1;
    return 0;
}

static const lower_fn lowerings[MP__KERNEL_COUNT_] = {
    [MP__KERNEL_COPY] = lower_copy,
    [MP__KERNEL_UNARY] = lower_unary,
    [MP__KERNEL_BINARY] = lower_binary,
    [MP__KERNEL_VARIADIC] = lower_variadic,
    [MP__KERNEL_MATMUL] = lower_matmul,
    [MP__KERNEL_GEMM] = lower_gemm,
    [MP__KERNEL_CONV] = lower_conv_dnn,
    [MP__KERNEL_POOL] = lower_pool,
    [MP__KERNEL_GLOBAL_POOL] = lower_global_pool,
    [MP__KERNEL_BATCHNORM] = lower_batchnorm,
    [MP__KERNEL_LAYERNORM] = lower_layernorm,
    [MP__KERNEL_LRN] = lower_lrn,
    [MP__KERNEL_SOFTMAX] = lower_softmax,
    [MP__KERNEL_CONCAT] = lower_concat,
    [MP__KERNEL_SPLIT] = lower_split,
    [MP__KERNEL_SLICE] = lower_slice,
    [MP__KERNEL_TRANSPOSE] = lower_transpose,
    [MP__KERNEL_GATHER] = lower_gather,
    [MP__KERNEL_REDUCE] = lower_reduce,
    [MP__KERNEL_RESIZE] = lower_resize,
    [MP__KERNEL_CAST] = lower_cast,
    [MP__KERNEL_PAD] = lower_pad,
    [MP__KERNEL_SHAPE] = lower_shape,
    [MP__KERNEL_EXPAND] = lower_expand,
    [MP__KERNEL_ATTENTION] = lower_attention,
    [MP__KERNEL_LOSS] = lower_loss,
    [MP__KERNEL_LOSS_GRAD] = lower_loss_grad,
    [MP__KERNEL_SGD] = lower_sgd,
    [MP__KERNEL_WHERE] = lower_where,
    [MP__KERNEL_COLLECTIVE] = lower_collective,
    [MP__KERNEL_PAGED_ATTENTION] = lower_paged_attention,
    [MP__KERNEL_SORT] = lower_sort,
    [MP__KERNEL_SAMPLE] = lower_sample,
};

static int lower_node_kernels(lower *L, const mp__node *n,
                              const char **why);

/* whether launch kind k reads and writes its float operands as float32
 * or bfloat16 (mpv_launch.bf16; kernels.cu's fin/fout, cuBLAS's and
 * cuDNN's bfloat16 types) */
static int bf16_kind(int32_t k)
{
    switch (k) {
    case MPV_L_CONV: case MPV_L_LRN: case MPV_L_RESIZE:
    case MPV_L_AXPY: case MPV_L_OPT_STEP:
        return 0;
    default:
        return 1;
    }
}

/* bit of node input slot k (output slot k: out) in a launch's bf16 mask
 * (0: the slot is past the mask) */
static uint64_t bf16_bit(int32_t k, int out)
{
    return k >= 0 && k < 32 ? (uint64_t)1 << (k + (out ? 32 : 0)) : 0;
}

/* The bfloat16 operands of node n's launches [first, L->n): the mask of
 * its slots (mpv_launch.bf16), and whether every launch takes them: a
 * kind that computes in float32 only, a product or a convolution whose
 * operands differ in width, or a bfloat16 slot past the mask fall back
 * to the synthetic kernel. */
static int launch_bf16(lower *L, const mp__node *n, uint32_t first,
                       const char **why)
{
    uint64_t mask = 0;
    int any = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        const mp__tensor *t = in_t(L->g, n, i);
        if (t && t->dtype == MP_DTYPE_BFLOAT16) {
            mask |= bf16_bit((int32_t)i, 0);
            any = 1;
        }
    }
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *t = out_t(L->g, n, o);
        if (t && t->dtype == MP_DTYPE_BFLOAT16) {
            mask |= bf16_bit((int32_t)o, 1);
            any = 1;
        }
    }
    if (!any)
        return 0;
    for (uint32_t j = first; j < L->n; j++) {
        mpv_launch *x = &L->l[j];
        /* slots past the mask: the launch's own operands */
        for (int k = 0; k < MPV_MAXIN; k++) {
            const mp__tensor *t =
                x->in[k] >= 32 ? in_t(L->g, n, (uint32_t)x->in[k]) : NULL;
            if (t && t->dtype == MP_DTYPE_BFLOAT16)
                x->bf16_hi |= 1u << k;
        }
        if (x->out >= 32) {
            const mp__tensor *t = out_t(L->g, n, (uint32_t)x->out);
            if (t && t->dtype == MP_DTYPE_BFLOAT16)
                x->bf16_hi |= 1u << MPV_MAXIN;
        }
        if (!bf16_kind(x->kind))
            FAIL("bfloat16: this op's kernel computes float32 only");
        /* the in-place output (-2) is output slot out */
        uint64_t a = x->in[0] == -2 ? bf16_bit(x->out, 1)
                                    : bf16_bit(x->in[0], 0);
        uint64_t b = bf16_bit(x->in[1], 0);
        int abf = (mask & a) != 0, bbf = (mask & b) != 0;
        int obf = (mask & bf16_bit(x->out, 1)) != 0;
        if (x->kind == MPV_L_GEMM && abf != bbf)
            FAIL("bfloat16: a product of a bfloat16 and a float32 operand");
        if (x->kind == MPV_L_CONV_DNN &&
            (abf != bbf || (abf != obf && !(abf && x->p.dnn.stage)) ||
             (x->p.dnn.has_bias && x->in[2] >= 0 &&
              ((mask & bf16_bit(x->in[2], 0)) != 0) != abf)))
            FAIL("bfloat16: a convolution of operands of two widths");
        if (x->kind == MPV_L_CONV_DNN && abf && !x->p.dnn.cudnn)
            FAIL("bfloat16: a convolution cuDNN cannot run (the direct "
                 "kernel is float32)");
        x->bf16 = mask;
    }
    return 0;
}

/* Lowers one node; returns 0 (lowered), 1 (needs the synthetic kernel,
 * *why set), -1 (out of memory). */
static int lower_node(lower *L, const mp__node *n, const char **why)
{
    uint32_t first = L->n;
    int r = lower_node_kernels(L, n, why);
    return r == 0 ? launch_bf16(L, n, first, why) : r;
}

/* lower_node without the operands' widths */
static int lower_node_kernels(lower *L, const mp__node *n, const char **why)
{
    unsigned k = MP__OP_KERNEL(n->def);
    if (n->n_out < 1)
        FAIL("no outputs");
    /* a backward node of a training graph (an op of its own, NAMEGrad):
     * its forward op's kernel */
    if (k == MP__KERNEL_SYNTHETIC && n->phase == MP_PHASE_BACKWARD &&
        mp__node_attr(n, "grad_dx"))
        return lower_grad(L, n, why);
    if (k >= MP__KERNEL_COUNT_ || !lowerings[k])
        FAIL("no kernel for this op in the registry");
    return lowerings[k](L, n, why);
}

/* ---- program -------------------------------------------------------------- */

/* the synthetic kernel's workspace, the least a program has */
#define SYNTH_WORKSPACE 256u

void mpv_program_destroy(mpv_program *p)
{
    if (!p)
        return;
    mp_ctx *ctx = p->ctx;
    mp__dealloc(ctx, p->steps);
    mp__dealloc(ctx, p->setup);
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

static int node_runs(const mp_graph *g, const mp__node *n, int nccl)
{
    if (mp__node_view(n))
        return 0;
    /* NCCL: a Send, and the regather of updated weights in place, write
     * no buffer of their own */
    if (nccl && MP__OP_KERNEL(n->def) == MP__KERNEL_COLLECTIVE)
        return 1;
    /* an optimizer step updates its weight in place */
    if (MP__OP_KERNEL(n->def) == MP__KERNEL_SGD)
        return 1;
    /* folded constants are set up with the weights */
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *t = &g->tensors[n->outputs[o]];
        if (!(t->flags & MP__TF_FOLDED) && t->bytes > 0 &&
            t->kind != MP_KIND_CONSTANT)
            return 1;
    }
    return 0;
}

/* the plan's blocks grouped by tensor: byt[t], cnt[t] of them, by first
 * step */
typedef struct block_index {
    mp_block *sorted;
    const mp_block **byt;
    uint32_t *cnt;
} block_index;

/* the block of arena root r that holds step s (ending_ok: else the one
 * that ends at s) */
static const mp_block *block_at(const block_index *bi, uint32_t r, uint32_t s,
                                int ending_ok)
{
    const mp_block *const b = bi->byt[r];
    for (uint32_t i = 0; i < bi->cnt[r]; i++)
        if (b[i].first <= s && s < b[i].end)
            return &b[i];
    if (ending_ok)
        for (uint32_t i = 0; i < bi->cnt[r]; i++)
            if (b[i].end == s)
                return &b[i];
    return NULL;
}

/* the block of root r that starts at step s (the first such, or the last) */
static const mp_block *block_starting(const block_index *bi, uint32_t r,
                                      uint32_t s, int last)
{
    const mp_block *found = NULL;
    for (uint32_t i = 0; i < bi->cnt[r] && (last || !found); i++)
        if (bi->byt[r][i].first == s)
            found = &bi->byt[r][i];
    return found;
}

static int cmp_block(const void *a, const void *b)
{
    const mp_block *x = a, *y = b;
    if (x->tensor != y->tensor)
        return x->tensor < y->tensor ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* one program being built */
typedef struct build {
    const mp_graph *g;
    mp_ctx *ctx;
    mpv_program *p;
    block_index bi;
    size_t cap_refs;
    /* fused values (SCRATCH): the tensors marked fused, the slots' start
     * in the workspace and size, the slot the latest node step's fused
     * output took (-1: none), and this step's input and output slots */
    const uint8_t *fused;
    uint64_t slot_base, slot_bytes;
    int prev_slot, in_slot, out_slot;
} build;

/* n elements of size bytes, zeroed (at least one element) */
static void *zeroed(mp_ctx *ctx, uint32_t n, size_t size)
{
    return mp__calloc(ctx, n ? n : 1, size);
}

static mp_status program_alloc(build *b, uint32_t n_steps, uint64_t alignment)
{
    mp_ctx *ctx = b->ctx;
    uint32_t nt = (uint32_t)b->g->n_tensors, nn = (uint32_t)b->g->n_nodes;
    mpv_program *p = b->p = mp__calloc(ctx, 1, sizeof *p);
    if (!p)
        return MP_ERR_NOMEM;
    p->ctx = ctx;
    p->graph = b->g;
    p->alignment = alignment ? alignment : 1;
    p->n_steps = n_steps;
    p->steps = zeroed(ctx, n_steps, sizeof *p->steps);
    p->nodes = zeroed(ctx, nn, sizeof *p->nodes);
    p->woff = zeroed(ctx, nt, sizeof *p->woff);
    p->outputs = zeroed(ctx, nt, sizeof *p->outputs);
    p->out_offs = zeroed(ctx, nt, sizeof *p->out_offs);
    p->inputs = zeroed(ctx, nt, sizeof *p->inputs);
    p->in_offs = zeroed(ctx, nt, sizeof *p->in_offs);
    return p->steps && p->nodes && p->woff && p->outputs && p->out_offs &&
                   p->inputs && p->in_offs
               ? MP_OK
               : MP_ERR_NOMEM;
}

/* the weights buffer: persistent storage roots, 256-aligned */
static mp_status place_weights(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    uint64_t w = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        p->woff[t] = UINT64_MAX;
        if (tt->alias_of != MP_NONE || tt->bytes == 0 || mp__tensor_in_arena(tt))
            continue;
        p->woff[t] = w;
        if (!mp__add_u64(w, tt->bytes, &w) || !mp__align_up(w, WALIGN, &w))
            return mp__err(b->ctx, MP_ERR_OVERFLOW,
                           "validate: weights overflow");
    }
    p->weights_bytes = w;
    return MP_OK;
}

/* the blocks grouped by tensor; the arena ends at the highest block end */
static mp_status index_blocks(build *b, const mp_block *blocks,
                              uint32_t n_blocks)
{
    mp_ctx *ctx = b->ctx;
    block_index *bi = &b->bi;
    uint32_t nt = (uint32_t)b->g->n_tensors;
    bi->sorted = zeroed(ctx, n_blocks, sizeof *bi->sorted);
    bi->byt = zeroed(ctx, nt, sizeof *bi->byt);
    bi->cnt = zeroed(ctx, nt, sizeof *bi->cnt);
    if (!bi->sorted || !bi->byt || !bi->cnt)
        return MP_ERR_NOMEM;
    if (n_blocks)
        memcpy(bi->sorted, blocks, n_blocks * sizeof *bi->sorted);
    qsort(bi->sorted, n_blocks, sizeof *bi->sorted, cmp_block);
    for (uint32_t i = 0; i < n_blocks; i++) {
        const mp_block *bl = &bi->sorted[i];
        if (bl->tensor >= nt)
            return mp__err(ctx, MP_ERR_INVALID_ARG, "validate: block %u: "
                           "no tensor %u", (unsigned)i, (unsigned)bl->tensor);
        if (!bi->cnt[bl->tensor])
            bi->byt[bl->tensor] = bl;
        bi->cnt[bl->tensor]++;
        uint64_t e;
        if (!mp__add_u64(bl->offset, bl->size, &e))
            return mp__err(ctx, MP_ERR_OVERFLOW,
                           "validate: block end overflows");
        if (e > b->p->arena_bytes)
            b->p->arena_bytes = e;
    }
    return MP_OK;
}

/* a folded node whose outputs the weights buffer holds without a known
 * value, and whose inputs are all there too (or known): computed once
 * on the device (prog->setup) */
static int node_setup(const build *b, const mp__node *n)
{
    const mp_graph *g = b->g;
    if (mp__node_view(n) || MP__OP_KERNEL(n->def) == MP__KERNEL_SGD)
        return 0;
    int unknown = 0;
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *t = &g->tensors[n->outputs[o]];
        if (!t->bytes)
            continue;
        if (!(t->flags & MP__TF_FOLDED) || b->p->woff[t->root] == UINT64_MAX)
            return 0;
        unknown |= !(t->value && t->rank >= 0 &&
                     (uint64_t)t->n_value == (uint64_t)numel(t));
    }
    for (uint32_t i = 0; i < n->n_in && unknown; i++) {
        uint32_t t = n->inputs[i];
        if (t != MP_NONE && g->tensors[t].bytes &&
            b->p->woff[g->tensors[t].root] == UINT64_MAX)
            return 0;
    }
    return unknown;
}

/* The setup nodes (node_setup), in topological order, lowered after the
 * nodes that run: a node without a real kernel, or whose launches want
 * more workspace than the program has, keeps its initial fill. -1: out
 * of memory. */
static int lower_setup(build *b, lower *L)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t i = g->topo[k];
        mpv_node *pn = &p->nodes[i];
        if (pn->run || !node_setup(b, &g->nodes[i]))
            continue;
        uint32_t first = L->n;
        const char *why = NULL;
        int r = lower_node(L, &g->nodes[i], &why);
        if (r < 0)
            return -1;
        for (uint32_t j = first; r == 0 && j < L->n; j++)
            if (L->l[j].workspace > p->workspace_bytes) {
                why = "more workspace than the program has";
                r = 1;
            }
        if (r > 0) {
            L->n = first;
            pn->why = why;
            p->n_setup_left++;
            continue;
        }
        pn->first = first;
        pn->count = L->n - first;
        pn->setup = 1;
        p->n_setup++;
    }
    return 0;
}

/* Lowers every node that runs into p->launches: its kernels, or the
 * synthetic kernel (and why). The workspace is the most any launch needs. */
static mp_status lower_nodes(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    lower L = {g, NULL, 0, 0, b->ctx, p->rank.dp ? &p->rank : NULL,
               MPV_COLL_DP};
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        mpv_node *pn = &p->nodes[i];
        pn->first = L.n;
        pn->run = node_runs(g, &g->nodes[i], L.rl && L.rl->nccl);
        if (!pn->run)
            continue;
        const char *why = NULL;
        int r = lower_node(&L, &g->nodes[i], &why);
        if (r > 0) {
            L.n = pn->first; /* what the node's own kernels added goes */
            mpv_launch *x = add_launch(&L, MPV_L_SYNTH);
            if (x)
                x->workspace = SYNTH_WORKSPACE;
            pn->synthetic = 1;
            pn->why = why;
            r = x ? 0 : -1;
        }
        if (r < 0) {
            mp__dealloc(b->ctx, L.l);
            return MP_ERR_NOMEM;
        }
        pn->count = L.n - pn->first;
        if (pn->synthetic)
            p->n_synthetic++;
        else
            p->n_real++;
        uint8_t ph = g->nodes[i].phase;
        if (ph == MP_PHASE_BACKWARD)
            *(pn->synthetic ? &p->n_bwd_synthetic : &p->n_bwd_real) += 1;
        else if (ph == MP_PHASE_OPTIMIZER)
            *(pn->synthetic ? &p->n_opt_synthetic : &p->n_opt_real) += 1;
    }
    for (uint32_t i = 0; i < L.n; i++)
        p->n_coll += L.l[i].kind == MPV_L_COLL;
    p->workspace_bytes = SYNTH_WORKSPACE;
    for (uint32_t i = 0; i < L.n; i++)
        if (L.l[i].workspace > p->workspace_bytes)
            p->workspace_bytes = L.l[i].workspace;
    int r = lower_setup(b, &L);
    p->launches = L.l;
    p->n_launches = L.n;
    return r < 0 ? MP_ERR_NOMEM : MP_OK;
}

/* room for n more refs */
static mp_status refs_room(build *b, uint32_t n)
{
    return mp__grow(b->ctx, (void **)&b->p->refs, sizeof *b->p->refs,
                    b->p->n_refs + n, &b->cap_refs);
}

/* where slot k of the node of step s (its inputs, then its outputs)
 * lives while s runs */
static mp_status node_ref(build *b, uint32_t s, uint32_t node, uint32_t k,
                          mpv_ref *rf)
{
    const mp_graph *g = b->g;
    const mp__node *n = &g->nodes[node];
    int is_input = k < n->n_in;
    uint32_t t = is_input ? n->inputs[k] : n->outputs[k - n->n_in];
    memset(rf, 0, sizeof *rf);
    rf->tensor = MP_NONE;
    if (t == MP_NONE)
        return MP_OK;
    const mp__tensor *tt = &g->tensors[t];
    uint32_t r = tt->root;
    rf->tensor = r;
    /* a broadcast view holds the bytes of the tensor it views; a range
     * view starts view_off bytes into its root */
    rf->bytes = mp__tensor_bview(g, t) ? g->tensors[tt->alias_of].bytes
                                       : tt->bytes;
    rf->view_off = tt->view_off;
    if (b->p->woff[r] != UINT64_MAX) {
        rf->space = MPV_SPACE_WEIGHTS;
        rf->offset = b->p->woff[r] + tt->view_off;
    } else if (mp__tensor_in_arena(&g->tensors[r])) {
        /* an input may end here: its block was taken over in place by
         * this step's output */
        const mp_block *bl = block_at(&b->bi, r, s, is_input);
        int slot = is_input ? b->in_slot : b->out_slot;
        if (!bl && b->fused && b->fused[r] && slot >= 0) {
            /* a fused value: written by this step into a free slot, or
             * read from the one the node step before wrote */
            rf->space = MPV_SPACE_SCRATCH;
            rf->offset = b->slot_base + (uint64_t)slot * b->slot_bytes +
                         tt->view_off;
            b->p->n_fused_refs++;
            if (!is_input)
                b->prev_slot = slot;
            return MP_OK;
        }
        if (!bl) {
            if (!b->p->nodes[node].run)
                return MP_OK;
            return mp__err(b->ctx, MP_ERR_VERIFY,
                           "validate: step %u (node '%s'): tensor '%s' has "
                           "no block at this step",
                           (unsigned)s, n->name, g->tensors[t].name);
        }
        rf->space = MPV_SPACE_ARENA;
        rf->offset = bl->offset + tt->view_off;
    }
    return MP_OK;
}

/* COMPUTE and RECOMPUTE step s: a ref for each input of its node, then
 * each output */
static mp_status node_step_refs(build *b, uint32_t s, const mp_step *sp)
{
    mpv_program *p = b->p;
    const mp__node *n = &b->g->nodes[sp->index];
    if (sp->kind == MP_STEP_RECOMPUTE) {
        p->n_recompute++;
        p->compute_only = 0;
    }
    uint32_t nl = n->n_in + n->n_out;
    mp_status st = refs_room(b, nl);
    b->in_slot = b->prev_slot;
    b->out_slot = b->in_slot == 0 ? 1 : 0;
    b->prev_slot = -1;
    for (uint32_t k = 0; k < nl && st == MP_OK; k++)
        st = node_ref(b, s, sp->index, k, &p->refs[p->n_refs + k]);
    if (st != MP_OK)
        return st;
    p->n_refs += nl;
    p->steps[s].n_refs = nl;
    return MP_OK;
}

/* OFFLOAD, PREFETCH and FREE step s: one ref, the tensor's block (for
 * PREFETCH the one it starts, for OFFLOAD the one that holds it or ends
 * at s) */
static mp_status tensor_step_ref(build *b, uint32_t s, const mp_step *sp)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    if (sp->kind != MP_STEP_FREE)
        p->compute_only = 0;
    if (sp->kind == MP_STEP_OFFLOAD)
        p->n_offload++;
    if (sp->kind == MP_STEP_PREFETCH)
        p->n_prefetch++;
    mp_status st = refs_room(b, 1);
    if (st != MP_OK)
        return st;
    uint32_t r = g->tensors[sp->index].root;
    mpv_ref *rf = &p->refs[p->n_refs];
    memset(rf, 0, sizeof *rf);
    rf->tensor = r;
    rf->bytes = g->tensors[r].bytes;
    const mp_block *bl = sp->kind == MP_STEP_PREFETCH
                             ? block_starting(&b->bi, r, s, 1)
                             : block_at(&b->bi, r, s, 1);
    if (bl) {
        rf->space = MPV_SPACE_ARENA;
        rf->offset = bl->offset;
    } else if (sp->kind != MP_STEP_FREE) {
        return mp__err(b->ctx, MP_ERR_VERIFY,
                       "validate: step %u: %s of '%s': no block", (unsigned)s,
                       mp_step_kind_name(sp->kind), g->tensors[r].name);
    }
    p->n_refs += 1;
    p->steps[s].n_refs = 1;
    return MP_OK;
}

/* the steps, each with the tensors it refers to (after checking its kind
 * and that its node or tensor exists) */
static mp_status step_refs(build *b, const mp_step *steps, uint32_t n_steps)
{
    mpv_program *p = b->p;
    p->compute_only = 1;
    for (uint32_t s = 0; s < n_steps; s++) {
        const mp_step *sp = &steps[s];
        mpv_step *ps = &p->steps[s];
        ps->kind = sp->kind;
        ps->index = sp->index;
        ps->refs = p->n_refs;
        int on_node = sp->kind == MP_STEP_COMPUTE ||
                      sp->kind == MP_STEP_RECOMPUTE;
        if (!on_node && sp->kind != MP_STEP_OFFLOAD &&
            sp->kind != MP_STEP_PREFETCH && sp->kind != MP_STEP_FREE)
            return mp__err(b->ctx, MP_ERR_UNSUPPORTED,
                           "validate: step %u: unknown kind", (unsigned)s);
        if (sp->index >= (on_node ? b->g->n_nodes : b->g->n_tensors))
            return mp__err(b->ctx, MP_ERR_INVALID_ARG,
                           "validate: step %u: no %s %u", (unsigned)s,
                           on_node ? "node" : "tensor", (unsigned)sp->index);
        mp_status st = on_node ? node_step_refs(b, s, sp)
                               : tensor_step_ref(b, s, sp);
        if (st != MP_OK)
            return st;
    }
    return MP_OK;
}

/* the setup nodes' steps (prog->setup), in topological order */
static mp_status setup_refs(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    if (!p->n_setup)
        return MP_OK;
    p->setup = zeroed(b->ctx, p->n_setup, sizeof *p->setup);
    if (!p->setup)
        return MP_ERR_NOMEM;
    uint32_t at = 0;
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t i = g->topo[k];
        if (!p->nodes[i].setup)
            continue;
        const mp__node *n = &g->nodes[i];
        uint32_t nl = n->n_in + n->n_out;
        mp_status st = refs_room(b, nl);
        mpv_step *ps = &p->setup[at++];
        ps->kind = MP_STEP_COMPUTE;
        ps->index = i;
        ps->refs = p->n_refs;
        ps->n_refs = nl;
        for (uint32_t j = 0; j < nl && st == MP_OK; j++)
            st = node_ref(b, 0, i, j, &p->refs[p->n_refs + j]);
        if (st != MP_OK)
            return st;
        p->n_refs += nl;
    }
    return MP_OK;
}

/* the outputs to compare: arena roots of graph outputs, where they are at
 * the end */
static mp_status find_outputs(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
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
        const mp_block *bl =
            p->n_steps ? block_at(&b->bi, r, p->n_steps - 1, 1) : NULL;
        if (!bl)
            return mp__err(b->ctx, MP_ERR_VERIFY, "validate: output '%s' is "
                           "not resident at the end", g->tensors[r].name);
        p->out_offs[p->n_outputs] = bl->offset;
        p->outputs[p->n_outputs++] = r;
    }
    return MP_OK;
}

/* the graph inputs in the arena, where they are at step 0 */
static void find_inputs(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || !mp__tensor_in_arena(tt))
            continue;
        const mp_block *bl = block_starting(&b->bi, t, 0, 0);
        if (bl) {
            p->inputs[p->n_inputs] = t;
            p->in_offs[p->n_inputs++] = bl->offset;
        }
    }
}

/* The scratch slots of fused values after the launches' workspace: two
 * of the largest fused tensor's bytes (a chain's node reads one while it
 * writes the other). */
static mp_status scratch_slots(build *b)
{
    const mp_graph *g = b->g;
    mpv_program *p = b->p;
    b->prev_slot = -1;
    b->slot_bytes = 0;
    for (uint32_t t = 0; b->fused && t < g->n_tensors; t++)
        if (b->fused[t] && g->tensors[t].bytes > b->slot_bytes)
            b->slot_bytes = g->tensors[t].bytes;
    if (!b->slot_bytes)
        return MP_OK;
    uint64_t total;
    if (!mp__align_up(p->workspace_bytes, 256, &b->slot_base) ||
        !mp__align_up(b->slot_bytes, 256, &b->slot_bytes) ||
        !mp__mul_u64(b->slot_bytes, 2, &total) ||
        !mp__add_u64(b->slot_base, total, &p->workspace_bytes))
        return mp__err(b->ctx, MP_ERR_OVERFLOW,
                       "validate: the fused values' workspace overflows");
    return MP_OK;
}

static mp_status program_build(const mp_graph *g, const mp_step *steps,
                               uint32_t n_steps, const mp_block *blocks,
                               uint32_t n_blocks, uint64_t alignment,
                               const uint8_t *fused,
                               const mpv_rank_lowering *rl,
                               mpv_program **out)
{
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "validate: graph not finalized");
    mpv_rank_lowering r1;
    if (rl) {
        r1 = *rl;
        r1.tp = r1.tp ? r1.tp : 1;
        rl = &r1;
    }
    if (rl && (!rl->dp || !rl->pp || rl->dp_index >= rl->dp ||
               rl->tp_index >= rl->tp || rl->stage >= rl->pp ||
               rl->rank >= rl->n_ranks ||
               rl->rank != (rl->stage * rl->dp + rl->dp_index) * rl->tp +
                               rl->tp_index))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "validate: rank %u is not (stage %u x dp %u + %u) x "
                       "tp %u + %u of %u ranks", (unsigned)rl->rank,
                       (unsigned)rl->stage, (unsigned)rl->dp,
                       (unsigned)rl->dp_index, (unsigned)rl->tp,
                       (unsigned)rl->tp_index, (unsigned)rl->n_ranks);
    build b = {.g = g, .ctx = ctx, .fused = fused};
    mp_status st = program_alloc(&b, n_steps, alignment);
    if (st == MP_OK && rl)
        b.p->rank = *rl;
    if (st == MP_OK)
        st = place_weights(&b);
    if (st == MP_OK)
        st = index_blocks(&b, blocks, n_blocks);
    if (st == MP_OK)
        st = lower_nodes(&b);
    if (st == MP_OK)
        st = scratch_slots(&b);
    if (st == MP_OK)
        st = step_refs(&b, steps, n_steps);
    if (st == MP_OK)
        st = setup_refs(&b);
    if (st == MP_OK)
        st = find_outputs(&b);
    if (st == MP_OK)
        find_inputs(&b);
    mp__dealloc(ctx, b.bi.sorted);
    mp__dealloc(ctx, b.bi.byt);
    mp__dealloc(ctx, b.bi.cnt);
    if (st != MP_OK) {
        mpv_program_destroy(b.p);
        return st;
    }
    *out = b.p;
    return MP_OK;
}

mp_status mpv_program_build(const mp_graph *g, const mp_step *steps,
                            uint32_t n_steps, const mp_block *blocks,
                            uint32_t n_blocks, uint64_t alignment,
                            const uint8_t *fused, mpv_program **out)
{
    return program_build(g, steps, n_steps, blocks, n_blocks, alignment,
                         fused, NULL, out);
}

mp_status mpv_program_from_plan(const mp_graph *g, const mp_plan *p,
                                mpv_program **out)
{
    return mpv_program_from_plan_rank(g, p, NULL, out);
}

mp_status mpv_program_from_plan_rank(const mp_graph *g, const mp_plan *p,
                                     const mpv_rank_lowering *rl,
                                     mpv_program **out)
{
    uint8_t *fused = NULL;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        if (!mp_plan_tensor_fused(p, t))
            continue;
        if (!fused && !(fused = mp__calloc(g->ctx, g->n_tensors, 1)))
            return MP_ERR_NOMEM;
        fused[t] = 1;
    }
    mp_status st = program_build(
        g, mp_plan_steps(p), mp_plan_num_steps(p), mp_plan_blocks(p),
        mp_plan_num_blocks(p), mp_plan_figures(p)->alignment, fused, rl, out);
    mp__dealloc(g->ctx, fused);
    return st;
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
        for (uint64_t i = 0; i < n; i++)
            put_value(dst, t->dtype, i, value_at(t, i));
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
    /* optimizer states stay zero: torch.optim creates them with
     * zeros_like before the first step */
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (p->woff[t] != UINT64_MAX &&
            g->tensors[t].kind != MP_KIND_OPTIMIZER_STATE)
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

/* the storage root of input slot k of n, unless an earlier slot has the
 * same root (or k is empty): then MP_NONE */
static uint32_t new_input_root(const mp_graph *g, const mp__node *n,
                               uint32_t k)
{
    if (n->inputs[k] == MP_NONE)
        return MP_NONE;
    uint32_t r = g->tensors[n->inputs[k]].root;
    for (uint32_t j = 0; j < k; j++)
        if (n->inputs[j] != MP_NONE && g->tensors[n->inputs[j]].root == r)
            return MP_NONE;
    return r;
}

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
            uint32_t r = new_input_root(g, n, k);
            if (r != MP_NONE)
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
                uint32_t r = new_input_root(g, n, k);
                if (r == MP_NONE || !uses[r])
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

uint64_t mpv_fnv1a(uint64_t h, const void *p, uint64_t n)
{
    const unsigned char *b = p;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t mpv_weights_hash(const mpv_program *p, const void *buf)
{
    if (!p || !buf)
        return 0;
    const mp_graph *g = p->graph;
    uint64_t sum = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (p->woff[t] == UINT64_MAX || x->kind != MP_KIND_WEIGHT || !x->name)
            continue;
        uint64_t h = mpv_fnv1a(MPV_FNV_BASIS, x->name, strlen(x->name));
        h = mpv_fnv1a(h, (const unsigned char *)buf + p->woff[t], x->bytes);
        sum += mix64(h);
    }
    return sum;
}

void mpv_result_free(mpv_result *r)
{
    if (r) {
        free(r->steps);
        r->steps = NULL;
        free(r->weights_after);
        r->weights_after = NULL;
        free(r->outputs);
        r->outputs = NULL;
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
                          const void *outs, const void *weights_after,
                          const mpv_grad *grads, uint32_t n_grads,
                          const void *grad_values)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    size_t n = strlen(dir) + 16;
    char *pi = mp__alloc(ctx, n), *pb = mp__alloc(ctx, n);
    FILE *ix = NULL, *bin = NULL;
    /* both written atomically (core/io.c): a failed run leaves the
     * previous dump as it was */
    mp__wfile wi, wb;
    memset(&wi, 0, sizeof wi);
    memset(&wb, 0, sizeof wb);
    mp_status st = MP_ERR_NOMEM;
    if (!pi || !pb)
        goto out;
    snprintf(pi, n, "%s/values.txt", dir);
    snprintf(pb, n, "%s/values.bin", dir);
    /* the folder is made when missing (not its parents) */
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        st = mp__err(ctx, MP_ERR_IO, "%s: cannot make the folder: %s", dir,
                     strerror(errno));
        goto out;
    }
    if ((st = mp__wfile_open(ctx, pi, &wi)) ||
        (st = mp__wfile_open(ctx, pb, &wb)))
        goto out;
    ix = wi.f;
    bin = wb.f;
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
        at += b;
    }
    for (uint32_t t = 0; t < g->n_tensors && weights_after && !bad; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (p->woff[t] == UINT64_MAX || !tt->bytes)
            continue;
        bad |= dump_line(ix, "weight_after", tt, at, tt->bytes) != 0;
        bad |= fwrite((const unsigned char *)weights_after + p->woff[t], 1,
                      tt->bytes, bin) != tt->bytes;
        at += tt->bytes;
    }
    /* each parameter's gradient, under the parameter's name */
    const unsigned char *gv = grad_values;
    for (uint32_t k = 0; grads && k < n_grads && !bad; k++) {
        const mp__tensor *tg = &g->tensors[grads[k].grad];
        mp__tensor named = *tg;
        named.name = g->tensors[grads[k].weight].name;
        bad |= dump_line(ix, "grad", &named, at, grads[k].bytes) != 0;
        bad |= fwrite(gv, 1, grads[k].bytes, bin) != grads[k].bytes;
        gv += grads[k].bytes;
        at += grads[k].bytes;
    }
    st = bad ? mp__err(ctx, MP_ERR_IO, "%s: write failed", dir) : MP_OK;
out:
    if (!st)
        st = mp__wfile_commit(&wi, false);
    if (!st)
        st = mp__wfile_commit(&wb, false);
    mp__wfile_abort(&wi);
    mp__wfile_abort(&wb);
    mp__dealloc(ctx, pi);
    mp__dealloc(ctx, pb);
    return st;
}
