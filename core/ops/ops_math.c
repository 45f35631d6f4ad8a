/* Shape functions of pointwise, broadcasting, reduction and matrix ops,
 * with folding of int64 values (Add/Sub/Mul/Div/Mod, comparisons, Where,
 * Not, Min/Max, ReduceProd/Sum, Cast) for shape arithmetic, and of small
 * float values (the same binary ops, Ceil/Floor/Round/Sqrt/Reciprocal,
 * Cast between ints and floats) where models compute sizes in floats
 * (Pad amounts as ceil(len / hop) in STFT front ends). */
#include "shape.h"

#include <math.h>
#include <string.h>

static int in_dtype(const mp_graph *g, const mp__node *n, uint32_t i)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t ? t->dtype : MP_DTYPE_UNDEFINED;
}

MP__SHAPE_FN(mp__shape_generic) { return mp__shape_done(g, node); }

static mp_status fold_float(mp_graph *g, uint32_t node, const mp__shape *out,
                            int out_dtype);

MP__SHAPE_FN(mp__shape_same)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
    /* Ceil, Floor, Round, Sqrt, ... of a small float constant */
    if (!st && n->n_out && s.rank >= 0 &&
        mp__dtype_is_float(in_dtype(g, n, 0)))
        st = fold_float(g, node, &s, in_dtype(g, n, 0));
    return st ? st : mp__shape_done(g, node);
}

/* Flat index into an input of shape `in` for flat output index `flat` of
 * shape `out` (numpy broadcasting). */
static int64_t bidx(const mp__shape *out, const mp__shape *in, int64_t flat)
{
    int64_t idx = 0, stride = 1;
    for (int32_t k = out->rank - 1; k >= 0; k--) {
        int64_t coord = flat % out->d[k];
        flat /= out->d[k];
        int32_t j = k - (out->rank - in->rank);
        if (j >= 0) {
            if (in->d[j] != 1)
                idx += coord * stride;
            stride *= in->d[j];
        }
    }
    return idx;
}

typedef bool (*fold_fn)(const int64_t *a, uint32_t k, int64_t *r);

static bool f_add(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    return !__builtin_add_overflow(a[0], a[1], r);
}
static bool f_sub(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    return !__builtin_sub_overflow(a[0], a[1], r);
}
static bool f_mul(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    return !__builtin_mul_overflow(a[0], a[1], r);
}
static bool f_div(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    if (a[1] == 0 || (a[0] == INT64_MIN && a[1] == -1))
        return false;
    /* integer Div truncates toward zero (C semantics, as ONNX Runtime) */
    *r = a[0] / a[1];
    return true;
}
static bool f_mod(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    if (a[1] == 0 || (a[0] == INT64_MIN && a[1] == -1))
        return false;
    int64_t m = a[0] % a[1];
    /* fmod=0: the sign of the divisor */
    if (m != 0 && ((m < 0) != (a[1] < 0)))
        m += a[1];
    *r = m;
    return true;
}
static bool f_eq(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] == a[1];
    return true;
}
static bool f_lt(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] < a[1];
    return true;
}
static bool f_le(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] <= a[1];
    return true;
}
static bool f_gt(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] > a[1];
    return true;
}
static bool f_ge(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] >= a[1];
    return true;
}
static bool f_and(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] && a[1];
    return true;
}
static bool f_or(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] || a[1];
    return true;
}
static bool f_not(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = !a[0];
    return true;
}
static bool f_where(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    *r = a[0] ? a[1] : a[2];
    return true;
}
static bool f_min(const int64_t *a, uint32_t k, int64_t *r)
{
    *r = a[0];
    for (uint32_t i = 1; i < k; i++)
        if (a[i] < *r)
            *r = a[i];
    return true;
}
static bool f_max(const int64_t *a, uint32_t k, int64_t *r)
{
    *r = a[0];
    for (uint32_t i = 1; i < k; i++)
        if (a[i] > *r)
            *r = a[i];
    return true;
}
static bool f_sum(const int64_t *a, uint32_t k, int64_t *r)
{
    *r = 0;
    for (uint32_t i = 0; i < k; i++)
        if (__builtin_add_overflow(*r, a[i], r))
            return false;
    return true;
}
static bool f_abs(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    if (a[0] == INT64_MIN)
        return false;
    *r = a[0] < 0 ? -a[0] : a[0];
    return true;
}
static bool f_neg(const int64_t *a, uint32_t k, int64_t *r)
{
    (void)k;
    if (a[0] == INT64_MIN)
        return false;
    *r = -a[0];
    return true;
}

static const struct {
    const char *op;
    fold_fn fn;
} folds[] = {
    {"Abs", f_abs}, {"Add", f_add}, {"And", f_and}, {"Div", f_div},
    {"Equal", f_eq}, {"Greater", f_gt}, {"GreaterOrEqual", f_ge},
    {"Less", f_lt}, {"LessOrEqual", f_le}, {"Max", f_max}, {"Min", f_min},
    {"Mod", f_mod}, {"Mul", f_mul}, {"Neg", f_neg}, {"Not", f_not},
    {"Or", f_or}, {"Sub", f_sub}, {"Sum", f_sum}, {"Where", f_where},
};

static fold_fn fold_of(const mp__node *n)
{
    if (n->domain[0])
        return NULL;
    for (size_t i = 0; i < sizeof folds / sizeof folds[0]; i++)
        if (strcmp(folds[i].op, n->op) == 0)
            return folds[i].fn;
    return NULL;
}

/* ---- float folding: values of float tensors are doubles (bits) ---- */
typedef bool (*dfold_fn)(const double *a, uint32_t k, double *r);

static bool d_add(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] + a[1];
    return true;
}
static bool d_sub(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] - a[1];
    return true;
}
static bool d_mul(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] * a[1];
    return true;
}
static bool d_div(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] / a[1];
    return true;
}
static bool d_eq(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] == a[1];
    return true;
}
static bool d_lt(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] < a[1];
    return true;
}
static bool d_le(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] <= a[1];
    return true;
}
static bool d_gt(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] > a[1];
    return true;
}
static bool d_ge(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] >= a[1];
    return true;
}
static bool d_where(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] != 0 ? a[1] : a[2];
    return true;
}
static bool d_min(const double *a, uint32_t k, double *r)
{
    *r = a[0];
    for (uint32_t i = 1; i < k; i++)
        if (a[i] < *r)
            *r = a[i];
    return true;
}
static bool d_max(const double *a, uint32_t k, double *r)
{
    *r = a[0];
    for (uint32_t i = 1; i < k; i++)
        if (a[i] > *r)
            *r = a[i];
    return true;
}
static bool d_sum(const double *a, uint32_t k, double *r)
{
    *r = 0;
    for (uint32_t i = 0; i < k; i++)
        *r += a[i];
    return true;
}
static bool d_neg(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = -a[0];
    return true;
}
static bool d_abs(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = fabs(a[0]);
    return true;
}
static bool d_ceil(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = ceil(a[0]);
    return true;
}
static bool d_floor(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = floor(a[0]);
    return true;
}
static bool d_round(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = nearbyint(a[0]); /* halves to even, as ONNX Round */
    return true;
}
static bool d_sqrt(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = sqrt(a[0]);
    return true;
}
static bool d_recip(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = 1.0 / a[0];
    return true;
}
static bool d_relu(const double *a, uint32_t k, double *r)
{
    (void)k;
    *r = a[0] > 0 ? a[0] : 0;
    return true;
}

static const struct {
    const char *op;
    dfold_fn fn;
} dfolds[] = {
    {"Abs", d_abs}, {"Add", d_add}, {"Ceil", d_ceil}, {"Div", d_div},
    {"Equal", d_eq}, {"Floor", d_floor}, {"Greater", d_gt},
    {"GreaterOrEqual", d_ge}, {"Less", d_lt}, {"LessOrEqual", d_le},
    {"Max", d_max}, {"Min", d_min}, {"Mul", d_mul}, {"Neg", d_neg},
    {"Reciprocal", d_recip}, {"Relu", d_relu}, {"Round", d_round},
    {"Sqrt", d_sqrt}, {"Sub", d_sub}, {"Sum", d_sum}, {"Where", d_where},
};

static dfold_fn dfold_of(const mp__node *n)
{
    if (n->domain[0])
        return NULL;
    for (size_t i = 0; i < sizeof dfolds / sizeof dfolds[0]; i++)
        if (strcmp(dfolds[i].op, n->op) == 0)
            return dfolds[i].fn;
    return NULL;
}

/* Folds in doubles when every input has a value and one is a float. */
static mp_status fold_float(mp_graph *g, uint32_t node, const mp__shape *out,
                            int out_dtype)
{
    const mp__node *n = &g->nodes[node];
    dfold_fn fn = dfold_of(n);
    int64_t total = mp__shape_numel(out);
    if (!fn || total <= 0 || total > (int64_t)MP__VALUE_MAX || n->n_in == 0 ||
        n->n_in > 8 || !(mp__dtype_is_int(out_dtype) ||
                         mp__dtype_is_float(out_dtype)))
        return MP_OK;
    mp__shape sh[8];
    const mp__tensor *ts[8];
    bool any_float = false;
    for (uint32_t i = 0; i < n->n_in; i++) {
        const mp__tensor *t = mp__in(g, n, i);
        if (!t || !t->value ||
            !(mp__dtype_is_int(t->dtype) || mp__dtype_is_float(t->dtype)))
            return MP_OK;
        any_float |= mp__dtype_is_float(t->dtype);
        mp__in_shape(g, n, i, &sh[i]);
        if (mp__shape_numel(&sh[i]) != (int64_t)t->n_value)
            return MP_OK;
        ts[i] = t;
    }
    if (!any_float)
        return MP_OK;
    int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
    if (!buf)
        return MP_ERR_NOMEM;
    bool ok = true;
    for (int64_t e = 0; e < total && ok; e++) {
        double args[8], r;
        for (uint32_t i = 0; i < n->n_in; i++)
            args[i] = mp__value_double(ts[i], (uint32_t)bidx(out, &sh[i], e));
        ok = fn(args, n->n_in, &r) && mp__value_from_double(out_dtype, r,
                                                           &buf[e]);
    }
    mp_status st = MP_OK;
    if (ok)
        st = mp__out_value(g, node, 0, buf, (uint32_t)total);
    mp__dealloc(g->ctx, buf);
    return st;
}

/* Folds the node's value when every input has an integer value. */
static mp_status fold(mp_graph *g, uint32_t node, const mp__shape *out)
{
    const mp__node *n = &g->nodes[node];
    fold_fn fn = fold_of(n);
    int64_t total = mp__shape_numel(out);
    if (!fn || total <= 0 || total > (int64_t)MP__VALUE_MAX || n->n_in == 0 ||
        n->n_in > 8)
        return MP_OK;
    mp__shape sh[8];
    const int64_t *vals[8];
    for (uint32_t i = 0; i < n->n_in; i++) {
        const mp__tensor *t = mp__in(g, n, i);
        uint32_t c;
        if (!t || !mp__dtype_is_int(t->dtype) ||
            !mp__in_value(g, n, i, &vals[i], &c))
            return MP_OK;
        mp__in_shape(g, n, i, &sh[i]);
        if (mp__shape_numel(&sh[i]) != (int64_t)c)
            return MP_OK;
    }
    int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
    if (!buf)
        return MP_ERR_NOMEM;
    bool ok = true;
    for (int64_t e = 0; e < total && ok; e++) {
        int64_t args[8];
        for (uint32_t i = 0; i < n->n_in; i++)
            args[i] = vals[i][bidx(out, &sh[i], e)];
        ok = fn(args, n->n_in, &buf[e]);
    }
    mp_status st = MP_OK;
    if (ok)
        st = mp__out_value(g, node, 0, buf, (uint32_t)total);
    mp__dealloc(g->ctx, buf);
    return st;
}

static mp_status broadcast_all(mp_graph *g, uint32_t node, uint32_t first,
                               int dtype)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = 0};
    bool any = false;
    for (uint32_t i = first; i < n->n_in; i++) {
        if (!mp__in(g, n, i))
            continue;
        mp__shape s;
        mp__in_shape(g, n, i, &s);
        /* opset < 7: broadcast=1 with axis aligns B at axis of A */
        if (i == 1 && any && out.rank >= 0 && s.rank >= 0 &&
            mp__attr_int(n, "broadcast", 0) && mp__node_attr(n, "axis")) {
            int32_t ax;
            if (mp__axis(mp__attr_int(n, "axis", 0), out.rank, &ax) &&
                ax + s.rank <= out.rank) {
                /* B's dims sit at A's axes ax.., then ones to the end */
                for (int32_t k = s.rank; k < out.rank - ax; k++)
                    s.d[k] = 1;
                s.rank = out.rank - ax;
            }
        }
        if (!any) {
            out = s;
            any = true;
            continue;
        }
        mp__shape r;
        if (!mp__broadcast(&out, &s, &r))
            return mp__node_err(g, node, "input '%s' does not broadcast with "
                               "the other inputs",
                               mp__in(g, n, i)->name);
        out = r;
    }
    if (!any)
        out.rank = -1;
    if (first > 0 && n->n_in > 0) {
        mp__shape s0, r;
        mp__in_shape(g, n, 0, &s0);
        if (!mp__broadcast(&out, &s0, &r))
            return mp__node_err(g, node, "condition does not broadcast");
        out = r;
    }
    mp_status st = mp__out_set(g, node, 0, dtype, &out);
    if (!st && mp__dtype_is_int(dtype))
        st = fold(g, node, &out);
    if (!st && n->n_out && !g->tensors[n->outputs[0]].value)
        st = fold_float(g, node, &out, dtype);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_broadcast)
{
    const mp__node *n = &g->nodes[node];
    return broadcast_all(g, node, 0, in_dtype(g, n, 0));
}

/* PRelu: the output has X's shape. Before opset 7 a 1-D slope of size C
 * (or 1) applies along the channel axis 1, which numpy broadcasting would
 * refuse for X of rank > 2; from opset 7 the slope broadcasts to X. */
MP__SHAPE_FN(mp__shape_prelu)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *x = mp__in(g, n, 0), *sl = mp__in(g, n, 1);
    if (g->onnx_opset && g->onnx_opset < 7 && x && sl && sl->rank == 1 &&
        x->rank >= 2 && (sl->dims[0] == 1 || sl->dims[0] == x->dims[1])) {
        mp__shape s;
        mp__in_shape(g, n, 0, &s);
        mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
        return st ? st : mp__shape_done(g, node);
    }
    return mp__shape_broadcast(g, node);
}

MP__SHAPE_FN(mp__shape_compare)
{
    return broadcast_all(g, node, 0, MP_DTYPE_BOOL);
}

MP__SHAPE_FN(mp__shape_logical)
{
    return broadcast_all(g, node, 0, MP_DTYPE_BOOL);
}

MP__SHAPE_FN(mp__shape_where)
{
    const mp__node *n = &g->nodes[node];
    return broadcast_all(g, node, 1, in_dtype(g, n, 1));
}

MP__SHAPE_FN(mp__shape_variadic)
{
    const mp__node *n = &g->nodes[node];
    int dt = MP_DTYPE_UNDEFINED;
    for (uint32_t i = 0; i < n->n_in && !dt; i++)
        dt = in_dtype(g, n, i);
    return broadcast_all(g, node, 0, dt);
}

static mp_status cast_to(mp_graph *g, uint32_t node, int to)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, to, &s);
    const mp__tensor *in = mp__in(g, n, 0);
    if (!st && in && in->value && (int64_t)in->n_value == mp__shape_numel(&s) &&
        (mp__dtype_is_float(in->dtype) || mp__dtype_is_float(to)) &&
        (mp__dtype_is_int(in->dtype) || mp__dtype_is_float(in->dtype)) &&
        (mp__dtype_is_int(to) || mp__dtype_is_float(to))) {
        /* ints and floats into each other: through doubles */
        int64_t *buf = mp__alloc(g->ctx, in->n_value * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        bool ok = true;
        for (uint32_t i = 0; i < in->n_value && ok; i++)
            ok = mp__value_from_double(to, mp__value_double(in, i), &buf[i]);
        if (ok)
            st = mp__out_value(g, node, 0, buf, in->n_value);
        mp__dealloc(g->ctx, buf);
    } else if (!st && in && in->value && mp__dtype_is_int(in->dtype) &&
        mp__dtype_is_int(to)) {
        if (to == MP_DTYPE_BOOL) {
            int64_t *buf = mp__alloc(g->ctx, in->n_value * sizeof *buf);
            if (!buf)
                return MP_ERR_NOMEM;
            for (uint32_t i = 0; i < in->n_value; i++)
                buf[i] = in->value[i] != 0;
            st = mp__out_value(g, node, 0, buf, in->n_value);
            mp__dealloc(g->ctx, buf);
        } else {
            st = mp__out_value(g, node, 0, in->value, in->n_value);
        }
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_cast)
{
    const mp__node *n = &g->nodes[node];
    int64_t to = mp__attr_int(n, "to", MP_DTYPE_UNDEFINED);
    if (to < 0 || to > MP_DTYPE_INT2 || !mp_dtype_name((mp_dtype)to))
        return mp__node_err(g, node, "attribute 'to' is not a data type "
                           "(%lld)", (long long)to);
    return cast_to(g, node, (int)to);
}

MP__SHAPE_FN(mp__shape_cast_like)
{
    const mp__node *n = &g->nodes[node];
    return cast_to(g, node, in_dtype(g, n, 1));
}

MP__SHAPE_FN(mp__shape_reduce)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    bool keep = mp__attr_int(n, "keepdims", 1) != 0;
    bool noop = mp__attr_int(n, "noop_with_empty_axes", 0) != 0;
    uint32_t c = 0;
    const int64_t *axes = mp__attr_ints(n, "axes", &c);
    bool have = true;
    if (!axes && mp__in(g, n, 1) && !mp__in_value(g, n, 1, &axes, &c))
        have = false;
    if (!axes)
        c = 0;
    bool red[MP_MAX_RANK] = {false};
    if (in.rank >= 0 && have) {
        mp_status cs = mp__check_axes(g, node,
                                      mp__attr_ints(n, "axes", &(uint32_t){0})
                                          ? "attribute 'axes'"
                                          : "input 'axes'",
                                      axes, c, in.rank, red);
        if (cs)
            return cs;
        if (c == 0 && !noop)
            for (int32_t i = 0; i < in.rank; i++)
                red[i] = true;
        out.rank = 0;
        for (int32_t i = 0; i < in.rank; i++) {
            if (!red[i])
                out.d[out.rank++] = in.d[i];
            else if (keep)
                out.d[out.rank++] = 1;
        }
    } else if (in.rank >= 0 && keep) {
        out.rank = in.rank;
        for (int32_t i = 0; i < in.rank; i++)
            out.d[i] = -1;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    /* fold ReduceProd/Sum/Min/Max over every element of an int vector */
    const int64_t *v;
    uint32_t vc;
    bool all = in.rank >= 0;
    for (int32_t i = 0; i < in.rank; i++)
        if (!red[i])
            all = false;
    if (!st && all && mp__shape_numel(&out) == 1 &&
        mp__dtype_is_int(in_dtype(g, n, 0)) && mp__in_value(g, n, 0, &v, &vc) &&
        vc > 0 && (int64_t)vc == mp__shape_numel(&in)) {
        fold_fn fn = NULL;
        if (strcmp(n->op, "ReduceSum") == 0)
            fn = f_sum;
        else if (strcmp(n->op, "ReduceMin") == 0)
            fn = f_min;
        else if (strcmp(n->op, "ReduceMax") == 0)
            fn = f_max;
        int64_t r = 1;
        bool ok = true;
        if (strcmp(n->op, "ReduceProd") == 0) {
            for (uint32_t i = 0; i < vc && ok; i++)
                ok = !__builtin_mul_overflow(r, v[i], &r);
        } else if (fn) {
            ok = fn(v, vc, &r);
        } else {
            ok = false;
        }
        if (ok)
            st = mp__out_value(g, node, 0, &r, 1);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_argreduce)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    bool keep = mp__attr_int(n, "keepdims", 1) != 0;
    int32_t a;
    if (in.rank >= 0) {
        mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", 0), in.rank, &a);
        if (cs)
            return cs;
        out.rank = 0;
        for (int32_t i = 0; i < in.rank; i++) {
            if (i != a)
                out.d[out.rank++] = in.d[i];
            else if (keep)
                out.d[out.rank++] = 1;
        }
    }
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &out);
    return st ? st : mp__shape_done(g, node);
}

/* the error of a product whose inner dims ka (input ia) and kb (input
 * ib) differ, naming both tensors */
static mp_status inner_dims_err(mp_graph *g, uint32_t node, int64_t ka,
                                int64_t kb, uint32_t ia, uint32_t ib)
{
    const mp__tensor *ta = mp__in(g, &g->nodes[node], ia);
    const mp__tensor *tb = mp__in(g, &g->nodes[node], ib);
    return mp__node_err(g, node, "inner dims differ (%lld and %lld): "
                       "'%s' and '%s'", (long long)ka, (long long)kb,
                       ta ? ta->name : "?", tb ? tb->name : "?");
}

/* numpy matmul of shapes a0 (node input ia) and b0 (input ib) */
static mp_status matmul_shape(mp_graph *g, uint32_t node, const mp__shape *a0,
                              uint32_t ia, const mp__shape *b0, uint32_t ib,
                              mp__shape *out)
{
    out->rank = -1;
    if (a0->rank < 1 || b0->rank < 1)
        return a0->rank == 0 || b0->rank == 0
                   ? mp__node_err(g, node, "MatMul of a scalar")
                   : MP_OK;
    mp__shape a = *a0, b = *b0;
    bool a1 = a.rank == 1, b1 = b.rank == 1;
    if (a1) {
        a.rank = 2;
        a.d[1] = a.d[0];
        a.d[0] = 1;
    }
    if (b1) {
        b.rank = 2;
        b.d[1] = 1;
    }
    int64_t ka = a.d[a.rank - 1], kb = b.d[b.rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return inner_dims_err(g, node, ka, kb, ia, ib);
    mp__shape ba = {.rank = a.rank - 2}, bb = {.rank = b.rank - 2}, bo;
    memcpy(ba.d, a.d, (size_t)ba.rank * sizeof a.d[0]);
    memcpy(bb.d, b.d, (size_t)bb.rank * sizeof b.d[0]);
    if (!mp__broadcast(&ba, &bb, &bo))
        return mp__node_err(g, node, "batch dims do not broadcast");
    *out = bo;
    if (!a1)
        out->d[out->rank++] = a.d[a.rank - 2];
    if (!b1)
        out->d[out->rank++] = b.d[b.rank - 1];
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_matmul)
{
    const mp__node *n = &g->nodes[node];
    bool qlinear = strcmp(n->op, "QLinearMatMul") == 0;
    mp__shape a, b, out;
    mp__in_shape(g, n, 0, &a);
    mp__in_shape(g, n, qlinear ? 3 : 1, &b);
    mp_status st = matmul_shape(g, node, &a, 0, &b, qlinear ? 3 : 1, &out);
    if (st)
        return st;
    int dt = in_dtype(g, n, 0);
    if (strcmp(n->op, "MatMulInteger") == 0)
        dt = MP_DTYPE_INT32;
    else if (qlinear)
        dt = in_dtype(g, n, 7);
    st = mp__out_set(g, node, 0, dt, &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_gemm)
{
    const mp__node *n = &g->nodes[node];
    mp__shape a, b, out = {.rank = -1};
    mp__in_shape(g, n, 0, &a);
    mp__in_shape(g, n, 1, &b);
    if (a.rank == 2 && b.rank == 2) {
        bool ta = mp__attr_int(n, "transA", 0) != 0;
        bool tb = mp__attr_int(n, "transB", 0) != 0;
        int64_t ka = ta ? a.d[0] : a.d[1], kb = tb ? b.d[1] : b.d[0];
        if (ka >= 0 && kb >= 0 && ka != kb)
            return inner_dims_err(g, node, ka, kb, 0, 1);
        out.rank = 2;
        out.d[0] = ta ? a.d[1] : a.d[0];
        out.d[1] = tb ? b.d[0] : b.d[1];
    } else if (a.rank >= 0 && a.rank != 2) {
        return mp__node_err(g, node, "A has rank %d, expected 2", (int)a.rank);
    } else if (b.rank >= 0 && b.rank != 2) {
        return mp__node_err(g, node, "B has rank %d, expected 2", (int)b.rank);
    }
    /* C broadcasts to [M, N] in one direction */
    mp__shape cc;
    mp__in_shape(g, n, 2, &cc);
    if (out.rank == 2 && cc.rank >= 0) {
        if (cc.rank > 2)
            return mp__node_err(g, node, "C ('%s') has rank %d: it must "
                               "broadcast to the output [M, N]",
                               mp__in(g, n, 2)->name, (int)cc.rank);
        for (int32_t i = 0; i < cc.rank; i++) {
            int64_t cd = cc.d[i], od = out.d[2 - cc.rank + i];
            if (cd >= 0 && od >= 0 && cd != 1 && cd != od)
                return mp__node_err(g, node, "C ('%s') dim %d = %lld does "
                                   "not broadcast to the output's %lld",
                                   mp__in(g, n, 2)->name, (int)i,
                                   (long long)cd, (long long)od);
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* Softmax, LogSoftmax, Hardmax, LpNormalization, CumSum, CumProd,
 * Trilu, ReverseSequence, Scatter*: the input's shape, after the checks
 * of their axis attribute or input. */
MP__SHAPE_FN(mp__shape_softmax)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    int32_t a;
    /* Softmax, LogSoftmax, Hardmax before opset 13: axis 1 by default
     * (the input coerced to 2-D there) */
    bool lp = strcmp(n->op, "LpNormalization") == 0;
    int64_t dflt = !lp && g->onnx_opset && g->onnx_opset < 13 ? 1 : -1;
    if (lp) {
        int64_t p = mp__attr_int(n, "p", 2);
        if (p != 1 && p != 2)
            return mp__node_err(g, node, "attribute 'p' = %lld: must be 1 "
                               "or 2", (long long)p);
    }
    if (x.rank > 0) {
        mp_status st = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", dflt), x.rank,
                                      &a);
        if (st)
            return st;
    }
    return mp__shape_same(g, node);
}

/* CumSum, CumProd: the axis is input 1, a scalar */
MP__SHAPE_FN(mp__shape_cumsum)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    const int64_t *v;
    uint32_t c;
    if (x.rank >= 0 && mp__in_value(g, n, 1, &v, &c)) {
        int32_t a;
        if (c != 1)
            return mp__node_err(g, node, "input 'axis' ('%s') has %u values: "
                               "it must be a scalar", mp__in(g, n, 1)->name,
                               (unsigned)c);
        mp_status st = mp__check_axis(g, node, "input 'axis'", v[0], x.rank,
                                      &a);
        if (st)
            return st;
    }
    return mp__shape_same(g, node);
}

/* Trilu: input of rank >= 2 */
MP__SHAPE_FN(mp__shape_trilu)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    if (x.rank >= 0 && x.rank < 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it needs at "
                           "least 2", mp__in(g, n, 0)->name, (int)x.rank);
    return mp__shape_same(g, node);
}

/* ReverseSequence: batch_axis and time_axis are 0 and 1 (either way) */
MP__SHAPE_FN(mp__shape_reverse_sequence)
{
    const mp__node *n = &g->nodes[node];
    int64_t b = mp__attr_int(n, "batch_axis", 1);
    int64_t t = mp__attr_int(n, "time_axis", 0);
    if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
        return mp__node_err(g, node, "attributes 'batch_axis' = %lld and "
                           "'time_axis' = %lld: one must be 0 and the other "
                           "1", (long long)b, (long long)t);
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    if (x.rank >= 0 && x.rank < 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it needs at "
                           "least 2", mp__in(g, n, 0)->name, (int)x.rank);
    return mp__shape_same(g, node);
}

/* MeanVarianceNormalization: axes in range, none twice */
MP__SHAPE_FN(mp__shape_mvn)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    uint32_t c;
    const int64_t *axes = mp__attr_ints(n, "axes", &c);
    mp_status st;
    if (axes && x.rank >= 0 &&
        (st = mp__check_axes(g, node, "attribute 'axes'", axes, c, x.rank,
                             NULL)))
        return st;
    return mp__shape_same(g, node);
}

/* LRN: size >= 1 */
MP__SHAPE_FN(mp__shape_lrn)
{
    const mp__node *n = &g->nodes[node];
    int64_t size = mp__attr_int(n, "size", 1);
    if (size < 1)
        return mp__node_err(g, node, "attribute 'size' = %lld: must be >= 1",
                           (long long)size);
    return mp__shape_same(g, node);
}

/* Scatter, ScatterElements (data, indices, updates; axis): indices and
 * updates of one shape and data's rank, known indices inside the axis;
 * ScatterND (data, indices, updates): indices' last dim k <= data's rank
 * and updates = indices.shape[:-1] + data.shape[k:]. Output: data. */
MP__SHAPE_FN(mp__shape_scatter)
{
    const mp__node *n = &g->nodes[node];
    static const char *const reds[] = {"none", "add", "mul", "max", "min",
                                       NULL};
    mp_status st = mp__check_enum(g, node, "reduction", "none", reds, NULL);
    if (st)
        return st;
    mp__shape d, ix, up;
    mp__in_shape(g, n, 0, &d);
    mp__in_shape(g, n, 1, &ix);
    mp__in_shape(g, n, 2, &up);
    const char *dn = mp__in(g, n, 0) ? mp__in(g, n, 0)->name : "?";
    const char *in_ = mp__in(g, n, 1) ? mp__in(g, n, 1)->name : "?";
    const char *un = mp__in(g, n, 2) ? mp__in(g, n, 2)->name : "?";
    if (strcmp(n->op, "ScatterND") == 0) {
        if (ix.rank == 0)
            return mp__node_err(g, node, "indices '%s' have rank 0: they "
                               "need at least 1", in_);
        if (d.rank >= 0 && ix.rank >= 1 && up.rank >= 0 &&
            ix.d[ix.rank - 1] >= 0) {
            int64_t k = ix.d[ix.rank - 1];
            if (k > d.rank)
                return mp__node_err(g, node, "indices '%s' have a last dim "
                                   "of %lld, above the data's rank %d",
                                   in_, (long long)k, (int)d.rank);
            int64_t want = ix.rank - 1 + d.rank - k;
            if (up.rank != want)
                return mp__node_err(g, node, "updates '%s' have rank %d: "
                                   "indices.shape[:-1] + data.shape[%lld:] "
                                   "has rank %lld", un, (int)up.rank,
                                   (long long)k, (long long)want);
            for (int32_t i = 0; i < up.rank; i++) {
                int64_t e = i < ix.rank - 1 ? ix.d[i]
                                            : d.d[k + i - (ix.rank - 1)];
                if (e >= 0 && up.d[i] >= 0 && e != up.d[i])
                    return mp__node_err(g, node, "updates '%s' dim %d = "
                                       "%lld: indices.shape[:-1] + "
                                       "data.shape[%lld:] has %lld", un,
                                       (int)i, (long long)up.d[i],
                                       (long long)k, (long long)e);
            }
        }
        return mp__shape_same(g, node);
    }
    if (d.rank >= 0) {
        int32_t a;
        st = mp__check_axis(g, node, "attribute 'axis'",
                            mp__attr_int(n, "axis", 0), d.rank, &a);
        if (st)
            return st;
        if (ix.rank >= 0 && ix.rank != d.rank)
            return mp__node_err(g, node, "indices '%s' have rank %d, data "
                               "'%s' %d: they must be equal", in_,
                               (int)ix.rank, dn, (int)d.rank);
        const int64_t *v;
        uint32_t c;
        const mp__tensor *t = mp__in(g, n, 1);
        if (d.d[a] >= 0 && t && mp__dtype_is_int(t->dtype) &&
            mp__in_value(g, n, 1, &v, &c))
            for (uint32_t k = 0; k < c; k++)
                if (v[k] < -d.d[a] || v[k] >= d.d[a])
                    return mp__node_err(g, node, "input '%s'[%u] = %lld: an "
                                       "index into axis %d (of %lld) must "
                                       "be in [%lld, %lld]", in_,
                                       (unsigned)k, (long long)v[k], (int)a,
                                       (long long)d.d[a],
                                       (long long)-d.d[a],
                                       (long long)d.d[a] - 1);
    }
    if (ix.rank >= 0 && up.rank >= 0) {
        bool same = ix.rank == up.rank;
        for (int32_t i = 0; same && i < ix.rank; i++)
            same = ix.d[i] < 0 || up.d[i] < 0 || ix.d[i] == up.d[i];
        if (!same)
            return mp__node_err(g, node, "updates '%s' and indices '%s' "
                               "differ in shape: they must be equal", un,
                               in_);
    }
    return mp__shape_same(g, node);
}

MP__SHAPE_FN(mp__shape_topk)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    const int64_t *kv;
    uint32_t kc;
    int64_t k = -1;
    if (mp__in_value(g, n, 1, &kv, &kc) && kc == 1)
        k = kv[0];
    else if (mp__node_attr(n, "k"))
        k = mp__attr_int(n, "k", -1);
    int32_t a;
    bool k_known = (mp__in_value(g, n, 1, &kv, &kc) && kc == 1) ||
                   mp__node_attr(n, "k") != NULL;
    if (k_known && k < 0)
        return mp__node_err(g, node, "k = %lld: must be >= 0", (long long)k);
    if (in.rank >= 0) {
        mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", -1), in.rank,
                                      &a);
        if (cs)
            return cs;
        if (k >= 0 && in.d[a] >= 0 && k > in.d[a])
            return mp__node_err(g, node, "k = %lld: larger than axis %d of "
                               "input '%s' (%lld)", (long long)k, (int)a,
                               mp__in(g, n, 0)->name, (long long)in.d[a]);
        out = in;
        out.d[a] = k;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_INT64, &out);
    return st ? st : mp__shape_done(g, node);
}


MP__SHAPE_FN(mp__shape_dropout)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_BOOL, &s);
    return st ? st : mp__shape_done(g, node);
}


/* QuantizeLinear, DequantizeLinear: a 1-D scale is per axis; the axis
 * must exist and the scale have its length (blocked scales: any rank) */
static mp_status quant_axis(mp_graph *g, uint32_t node, const mp__shape *x)
{
    const mp__node *n = &g->nodes[node];
    mp__shape sc;
    mp__in_shape(g, n, 1, &sc);
    if (x->rank < 1 || sc.rank != 1 || mp__attr_int(n, "block_size", 0) ||
        sc.d[0] == 1)
        return MP_OK;
    int32_t a;
    mp_status st = mp__check_axis(g, node, "attribute 'axis'",
                                  mp__attr_int(n, "axis", 1), x->rank, &a);
    if (st)
        return st;
    if (sc.d[0] >= 0 && x->d[a] >= 0 && sc.d[0] != x->d[a])
        return mp__node_err(g, node, "scale '%s' has %lld entries, axis %d "
                           "of the input %lld: they must be equal",
                           mp__in(g, n, 1)->name, (long long)sc.d[0], (int)a,
                           (long long)x->d[a]);
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_quantize)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status cs = quant_axis(g, node, &s);
    if (!cs)
        cs = mp__check_dtype(g, node, "output_dtype", true);
    if (cs)
        return cs;
    int dt = (int)mp__attr_int(n, "output_dtype", 0);
    if (!dt)
        dt = mp__in(g, n, 2) ? in_dtype(g, n, 2) : MP_DTYPE_UINT8;
    mp_status st = mp__out_set(g, node, 0, dt, &s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_dequantize)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status cs = quant_axis(g, node, &s);
    if (!cs)
        cs = mp__check_dtype(g, node, "output_dtype", true);
    if (cs)
        return cs;
    int dt = (int)mp__attr_int(n, "output_dtype", 0);
    if (!dt)
        dt = in_dtype(g, n, 1);
    mp_status st = mp__out_set(g, node, 0, dt, &s);
    return st ? st : mp__shape_done(g, node);
}

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: a scalar for
 * reduction mean/sum, the target's shape for none; SCE's optional second
 * output (log_prob) has the scores' shape. */
MP__SHAPE_FN(mp__shape_loss)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, t, out = {.rank = 0};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &t);
    static const char *const reds[] = {"none", "sum", "mean", NULL};
    const char *red;
    mp_status cs = mp__check_enum(g, node, "reduction", "mean", reds, &red);
    if (cs)
        return cs;
    if (x.rank >= 0 && x.rank < 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it needs at "
                           "least 2 (N, C)", mp__in(g, n, 0)->name,
                           (int)x.rank);
    if (x.rank >= 2 && t.rank >= 0 && t.rank != x.rank - 1)
        return mp__node_err(g, node, "target '%s' has rank %d: it must be "
                           "the input's rank less 1 (%d)",
                           mp__in(g, n, 1)->name, (int)t.rank,
                           (int)x.rank - 1);
    if (strcmp(red, "none") == 0)
        out = t;
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    if (!st)
        st = mp__out_set(g, node, 1, in_dtype(g, n, 0), &x);
    return st ? st : mp__shape_done(g, node);
}

/* The shape the fused attention node adds its mask at, into *out: the
 * scores [..., Tq, Tk] (Q's leading dims, Tq, K^T's last), or the
 * attribute mask_dims, a reshape of the scores that keeps Tq and Tk and
 * regroups the leading dims (Swin's [B, windows, heads, T, T] for scores
 * [B*windows, heads, T, T]), where one -1 is inferred. Returns 1 with
 * the shape, 0 when Q's or K^T's shape is not known, -1 when mask_dims
 * does not fit the scores (*why says how). */
int mp__sdpa_mask_shape(const mp_graph *g, const mp__node *n, mp__shape *out,
                        const char **why)
{
    mp__shape q, k;
    *why = "";
    mp__in_shape(g, n, 0, &q);
    mp__in_shape(g, n, 1, &k);
    if (q.rank < 2 || k.rank != q.rank)
        return 0;
    int32_t r = q.rank;
    mp__shape s = q;
    s.d[r - 1] = k.d[r - 1];
    for (int32_t i = 0; i < r; i++)
        if (s.d[i] < 0)
            return 0;
    uint32_t c = 0;
    const int64_t *v = mp__attr_ints(n, "mask_dims", &c);
    if (!v) {
        *out = s;
        return 1;
    }
    if (c < 2 || c > MP_MAX_RANK) {
        *why = "it needs 2 to 16 dims";
        return -1;
    }
    if (v[c - 2] != s.d[r - 2] || v[c - 1] != s.d[r - 1]) {
        *why = "its last two dims are not the scores' (Tq, Tk)";
        return -1;
    }
    /* the leading dims: their product is the scores' (one -1 inferred) */
    uint64_t lead = 1, known = 1;
    int32_t infer = -1;
    for (int32_t i = 0; i + 2 < r; i++)
        if (!mp__mul_u64(lead, (uint64_t)s.d[i], &lead)) {
            *why = "the scores' leading dims overflow";
            return -1;
        }
    out->rank = (int32_t)c;
    for (uint32_t i = 0; i < c; i++) {
        out->d[i] = v[i];
        if (i + 2 >= c)
            continue;
        if (v[i] == -1 && infer < 0) {
            infer = (int32_t)i;
        } else if (v[i] < 1 || !mp__mul_u64(known, (uint64_t)v[i], &known)) {
            *why = "a dim below 1 (one -1 may be inferred)";
            return -1;
        }
    }
    if (infer >= 0) {
        if (lead % known) {
            *why = "its leading dims do not divide the scores'";
            return -1;
        }
        out->d[infer] = (int64_t)(lead / known);
        known = lead;
    }
    if (known != lead) {
        *why = "its leading dims do not hold the scores' elements";
        return -1;
    }
    return 1;
}

/* ScaledDotProductAttention (domain memplan): the fused attention chain
 * (core/ops/attention.c). Inputs: Q [..., Tq, D], K transposed
 * [..., D, Tk], V [..., Tk, Dv], then optional: the mask (broadcast to
 * [..., Tq, Tk]), the scalar factors of Q, of K and of the scores, and
 * the fill value of a boolean mask. Output: [..., Tq, Dv] in Q's dtype.
 * The leading dims of Q, K and V are equal. */
MP__SHAPE_FN(mp__shape_sdpa)
{
    const mp__node *n = &g->nodes[node];
    mp__shape q, k, v;
    mp__in_shape(g, n, 0, &q);
    mp__in_shape(g, n, 1, &k);
    mp__in_shape(g, n, 2, &v);
    if (n->n_in < 3 || !mp__in(g, n, 0) || !mp__in(g, n, 1) ||
        !mp__in(g, n, 2))
        return mp__node_err(g, node, "it needs Q, K and V (inputs 0-2)");
    if (q.rank < 0 || k.rank < 0 || v.rank < 0) {
        mp_status st = mp__out_set(g, node, 0, -1, NULL);
        return st ? st : mp__shape_done(g, node);
    }
    if (q.rank < 2 || k.rank != q.rank || v.rank != q.rank)
        return mp__node_err(g, node, "Q, K and V have ranks %d, %d and %d: "
                           "they must be equal and at least 2", (int)q.rank,
                           (int)k.rank, (int)v.rank);
    int32_t r = q.rank;
    for (int32_t i = 0; i < r - 2; i++)
        if (q.d[i] >= 0 && ((k.d[i] >= 0 && k.d[i] != q.d[i]) ||
                            (v.d[i] >= 0 && v.d[i] != q.d[i])))
            return mp__node_err(g, node, "dim %d of Q, K and V differ "
                               "(%lld, %lld, %lld)", (int)i,
                               (long long)q.d[i], (long long)k.d[i],
                               (long long)v.d[i]);
    if ((q.d[r - 1] >= 0 && k.d[r - 2] >= 0 && q.d[r - 1] != k.d[r - 2]) ||
        (k.d[r - 1] >= 0 && v.d[r - 2] >= 0 && k.d[r - 1] != v.d[r - 2]))
        return mp__node_err(g, node, "Q [..., %lld, %lld], K transposed "
                           "[..., %lld, %lld] and V [..., %lld, %lld] do not "
                           "match", (long long)q.d[r - 2],
                           (long long)q.d[r - 1], (long long)k.d[r - 2],
                           (long long)k.d[r - 1], (long long)v.d[r - 2],
                           (long long)v.d[r - 1]);
    /* the mask (input 3) broadcasts to the shape it is added at */
    mp__shape ms, m;
    const char *why;
    int known = mp__sdpa_mask_shape(g, n, &ms, &why);
    if (known < 0)
        return mp__node_err(g, node, "attribute 'mask_dims': %s", why);
    mp__in_shape(g, n, 3, &m);
    if (known > 0 && m.rank >= 0) {
        uint32_t nmd;
        bool viewed = mp__attr_ints(n, "mask_dims", &nmd) != NULL;
        mp__shape b;
        bool ok = m.rank <= ms.rank && mp__broadcast(&m, &ms, &b) &&
                  b.rank == ms.rank;
        for (int32_t i = 0; ok && i < ms.rank; i++)
            ok = b.d[i] == ms.d[i];
        if (!ok)
            return mp__node_err(g, node, "the mask '%s' does not broadcast "
                               "to the %s (rank %d)", mp__in(g, n, 3)->name,
                               viewed ? "shape 'mask_dims' gives the scores"
                                      : "scores",
                               (int)ms.rank);
    }
    mp__shape y = q;
    y.d[r - 1] = v.d[r - 1];
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &y);
    return st ? st : mp__shape_done(g, node);
}

/* Attention (opset 23): Q, K, V of rank 4 [B, heads, seq, head] or rank 3
 * [B, seq, heads*head]; optional past_key/past_value (inputs 4, 5).
 * Outputs: Y, present_key, present_value, qk_matmul_output. */
MP__SHAPE_FN(mp__shape_attention)
{
    const mp__node *n = &g->nodes[node];
    mp__shape q, k, v, pk;
    mp__in_shape(g, n, 0, &q);
    mp__in_shape(g, n, 1, &k);
    mp__in_shape(g, n, 2, &v);
    mp__in_shape(g, n, 4, &pk);
    mp__shape y = {.rank = -1}, pres_k = {.rank = -1}, pres_v = {.rank = -1},
             qk = {.rank = -1};
    int dt = in_dtype(g, n, 0);
    if ((q.rank >= 0 && q.rank != 3 && q.rank != 4) ||
        (q.rank >= 0 && k.rank >= 0 && k.rank != q.rank) ||
        (q.rank >= 0 && v.rank >= 0 && v.rank != q.rank))
        return mp__node_err(g, node, "Q, K and V have ranks %d, %d and %d: "
                           "they must be all 3 or all 4", (int)q.rank,
                           (int)k.rank, (int)v.rank);
    if (q.rank == 3) {
        static const char *const heads[] = {"q_num_heads", "kv_num_heads"};
        for (int i = 0; i < 2; i++)
            if (mp__attr_int(n, heads[i], 0) < 1)
                return mp__node_err(g, node, "attribute '%s' = %lld: 3-D "
                                   "inputs need it >= 1", heads[i],
                                   (long long)mp__attr_int(n, heads[i], 0));
        int64_t qh0 = mp__attr_int(n, "q_num_heads", 1);
        int64_t kvh0 = mp__attr_int(n, "kv_num_heads", 1);
        if (qh0 % kvh0)
            return mp__node_err(g, node, "attribute 'q_num_heads' = %lld is "
                               "not a multiple of 'kv_num_heads' = %lld",
                               (long long)qh0, (long long)kvh0);
        const mp__shape *qkv[3] = {&q, &k, &v};
        for (int i = 0; i < 3; i++) {
            int64_t h = i ? kvh0 : qh0, d = qkv[i]->rank == 3 ? qkv[i]->d[2]
                                                               : -1;
            if (d >= 0 && d % h)
                return mp__node_err(g, node, "input '%s' has a hidden size "
                                   "of %lld: not a multiple of %lld heads",
                                   mp__in(g, n, (uint32_t)i)->name,
                                   (long long)d, (long long)h);
        }
    }
    if (q.rank == 4 && k.rank == 4 && q.d[1] >= 0 && k.d[1] > 0 &&
        q.d[1] % k.d[1])
        return mp__node_err(g, node, "Q has %lld heads, K %lld: Q's must be "
                           "a multiple of K's", (long long)q.d[1],
                           (long long)k.d[1]);
    if (q.rank == 4 && k.rank == 4 && v.rank == 4) {
        int64_t past = pk.rank == 4 ? pk.d[2] : 0;
        int64_t total = (k.d[2] < 0 || past < 0) ? -1 : k.d[2] + past;
        y = q;
        y.d[3] = v.d[3];
        pres_k = k;
        pres_k.d[2] = total;
        pres_v = v;
        pres_v.d[2] = total;
        qk = q;
        qk.d[3] = total;
    } else if (q.rank == 3 && k.rank == 3 && v.rank == 3) {
        int64_t qh = mp__attr_int(n, "q_num_heads", -1);
        int64_t kvh = mp__attr_int(n, "kv_num_heads", -1);
        int64_t past = pk.rank == 4 ? pk.d[2] : 0;
        int64_t total = (k.d[1] < 0 || past < 0) ? -1 : k.d[1] + past;
        y = q;
        y.d[2] = (qh > 0 && kvh > 0 && v.d[2] >= 0) ? v.d[2] / kvh * qh : -1;
        if (kvh > 0) {
            pres_k.rank = pres_v.rank = 4;
            pres_k.d[0] = pres_v.d[0] = k.d[0];
            pres_k.d[1] = pres_v.d[1] = kvh;
            pres_k.d[2] = pres_v.d[2] = total;
            pres_k.d[3] = k.d[2] < 0 ? -1 : k.d[2] / kvh;
            pres_v.d[3] = v.d[2] < 0 ? -1 : v.d[2] / kvh;
        }
        if (qh > 0) {
            qk.rank = 4;
            qk.d[0] = q.d[0], qk.d[1] = qh, qk.d[2] = q.d[1], qk.d[3] = total;
        }
    }
    mp_status st = mp__out_set(g, node, 0, dt, &y);
    if (!st)
        st = mp__out_set(g, node, 1, dt, &pres_k);
    if (!st)
        st = mp__out_set(g, node, 2, dt, &pres_v);
    if (!st)
        st = mp__out_set(g, node, 3, dt, &qk);
    return st ? st : mp__shape_done(g, node);
}
