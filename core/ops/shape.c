/* Shape inference helpers: node access, attributes, setting outputs,
 * broadcasting, and the final "every output known" check (a tensor's own
 * shape and value setters are in core/tensor.c). */
#include "shape.h"

#include <stdio.h>
#include <string.h>

const mp__tensor *mp__in(const mp_graph *g, const mp__node *n, uint32_t i)
{
    if (i >= n->n_in || n->inputs[i] == MP_NONE)
        return NULL;
    return &g->tensors[n->inputs[i]];
}

void mp__in_shape(const mp_graph *g, const mp__node *n, uint32_t i, mp__shape *s)
{
    const mp__tensor *t = mp__in(g, n, i);
    s->rank = -1;
    if (!t || t->rank < 0)
        return;
    s->rank = t->rank;
    for (int32_t k = 0; k < t->rank; k++)
        s->d[k] = t->dims[k];
}

bool mp__in_value(const mp_graph *g, const mp__node *n, uint32_t i,
                 const int64_t **v, uint32_t *cnt)
{
    const mp__tensor *t = mp__in(g, n, i);
    if (!t)
        return false;
    if (!t->value) {
        /* an empty tensor's value is known: no elements */
        static const int64_t none[1] = {0};
        bool empty = t->rank > 0 && mp__tensor_shape_known(t);
        for (int32_t k = 0; empty && k < t->rank; k++)
            if (t->dims[k] == 0)
                break;
            else if (k == t->rank - 1)
                empty = false;
        if (!empty)
            return false;
        *v = none;
        *cnt = 0;
        return true;
    }
    *v = t->value;
    *cnt = t->n_value;
    return true;
}

int64_t mp__attr_int(const mp__node *n, const char *name, int64_t dflt)
{
    const mp__attr *a = mp__node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == MP__ATTR_INT)
        return a->v.i;
    if (a->type == MP__ATTR_FLOAT) {
        /* saturating: a float outside int64 (or NaN) is not UB here */
        double f = a->v.f;
        if (f != f)
            return dflt;
        if (f >= 9223372036854775807.0)
            return INT64_MAX;
        if (f <= -9223372036854775807.0)
            return INT64_MIN;
        return (int64_t)f;
    }
    return dflt;
}

bool mp__dim_from_double(double x, int64_t *out)
{
    if (!(x >= 0) || x >= 4611686018427387904.0) /* NaN, < 0, >= 2^62 */
        return false;
    *out = (int64_t)x;
    return true;
}

double mp__attr_float(const mp__node *n, const char *name, double dflt)
{
    const mp__attr *a = mp__node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == MP__ATTR_FLOAT)
        return a->v.f;
    if (a->type == MP__ATTR_INT)
        return (double)a->v.i;
    return dflt;
}

const int64_t *mp__attr_ints(const mp__node *n, const char *name, uint32_t *cnt)
{
    const mp__attr *a = mp__node_attr(n, name);
    *cnt = 0;
    if (!a)
        return NULL;
    if (a->type == MP__ATTR_INTS) {
        *cnt = a->n;
        return a->v.ints;
    }
    if (a->type == MP__ATTR_INT) {
        *cnt = 1;
        return &a->v.i;
    }
    return NULL;
}

const char *mp__attr_str(const mp__node *n, const char *name, const char *dflt)
{
    const mp__attr *a = mp__node_attr(n, name);
    return a && a->type == MP__ATTR_STRING ? a->v.s : dflt;
}

mp_status mp__out_set(mp_graph *g, uint32_t node, uint32_t o, int dtype,
                     const mp__shape *s)
{
    const mp__node *n = &g->nodes[node];
    if (o >= n->n_out)
        return MP_OK;
    mp__tensor *t = &g->tensors[n->outputs[o]];
    /* the dtype is set together with a shape: a tensor whose shape stays
     * unknown keeps what was declared */
    if (dtype != MP_DTYPE_UNDEFINED && t->dtype == MP_DTYPE_UNDEFINED &&
        ((s && s->rank >= 0) || t->rank >= 0))
        t->dtype = (uint8_t)dtype;
    if (s && s->rank >= 0) {
        for (int32_t i = 0; i < s->rank; i++)
            if (s->d[i] < -1)
                return mp__node_err(g, node, "output '%s' would get dim %d "
                                   "of size %lld", t->name, (int)i,
                                   (long long)s->d[i]);
        bool conflict = false;
        if ((t->flags & MP__TF_SHAPE_HINT) && t->rank >= 0) {
            /* a declared shape is a hint: one that disagrees with the
             * inferred shape (rank, or a dim known in both) is dropped */
            conflict = t->rank != s->rank;
            for (int32_t i = 0; !conflict && i < s->rank; i++)
                conflict = t->dims[i] >= 0 && s->d[i] >= 0 &&
                           t->dims[i] != s->d[i];
            t->flags &= (uint8_t)~MP__TF_SHAPE_HINT;
            if (conflict)
                t->flags &= (uint8_t)~MP__TF_SIZE_KNOWN;
        }
        if (t->rank < 0 || conflict) {
            mp_status st = mp__tensor_set_shape(g->ctx, t, s->rank, s->d);
            if (st)
                return st;
        } else if (t->rank == s->rank) {
            for (int32_t i = 0; i < t->rank; i++)
                if (t->dims[i] < 0 && s->d[i] >= 0)
                    t->dims[i] = s->d[i];
        }
    }
    if (mp__tensor_shape_known(t) && mp_dtype_bits((mp_dtype)t->dtype) &&
        (!(t->flags & MP__TF_SIZE_KNOWN) ||
         ((t->flags & MP__TF_BYTES_GIVEN) && !t->seq))) {
        uint64_t b;
        mp_status st = mp__tensor_bytes_from_shape(g->ctx, t, &b);
        if (st)
            return st;
        /* bytes declared for an output whose shape is then inferred: the
         * two must agree, or the plan would size it by the declaration */
        if ((t->flags & MP__TF_SIZE_KNOWN) && b != t->bytes)
            return mp__node_err(g, node, "output '%s' is declared with "
                                "%llu bytes, but its inferred dtype and "
                                "shape give %llu bytes", t->name,
                                (unsigned long long)t->bytes,
                                (unsigned long long)b);
        t->bytes = b;
        t->flags |= MP__TF_SIZE_KNOWN;
    }
    return MP_OK;
}

mp_status mp__out_value(mp_graph *g, uint32_t node, uint32_t o,
                       const int64_t *v, uint32_t n)
{
    const mp__node *nd = &g->nodes[node];
    if (o >= nd->n_out)
        return MP_OK;
    mp__tensor *t = &g->tensors[nd->outputs[o]];
    if (t->value)
        return MP_OK;
    return mp__tensor_set_value(g->ctx, t, v, n);
}

static void node_label(const mp_graph *g, const mp__node *n, char *buf,
                       size_t cap)
{
    (void)g;
    snprintf(buf, cap, "node '%s' (op %s%s%s)", n->name,
             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op);
}

mp_status mp__node_err(mp_graph *g, uint32_t node, const char *fmt, ...)
{
    char lab[400], msg[600];
    node_label(g, &g->nodes[node], lab, sizeof lab);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mp__err(g->ctx, MP_ERR_SHAPE, "%s: %s", lab, msg);
}

mp_status mp__node_fail(mp_graph *g, uint32_t node, mp_status st,
                       const char *fmt, ...)
{
    char lab[400], msg[600];
    node_label(g, &g->nodes[node], lab, sizeof lab);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mp__err(g->ctx, st, "%s: %s", lab, msg);
}

mp_status mp__check_axis(mp_graph *g, uint32_t node, const char *what,
                        int64_t axis, int32_t rank, int32_t *out)
{
    if (mp__axis(axis, rank, out))
        return MP_OK;
    if (rank <= 0)
        return mp__node_err(g, node, "%s = %lld: the input has rank %d, "
                           "so there is no axis", what, (long long)axis,
                           (int)rank);
    return mp__node_err(g, node, "%s = %lld: must be in [%d, %d] (input "
                       "rank %d)", what, (long long)axis, -(int)rank,
                       (int)rank - 1, (int)rank);
}

mp_status mp__check_axes(mp_graph *g, uint32_t node, const char *what,
                        const int64_t *axes, uint32_t cnt, int32_t rank,
                        bool *mask)
{
    bool seen[MP_MAX_RANK] = {false};
    for (uint32_t i = 0; i < cnt; i++) {
        int32_t a;
        if (!mp__axis(axes[i], rank, &a))
            return rank <= 0
                       ? mp__node_err(g, node, "%s[%u] = %lld: the input "
                                     "has rank %d, so there is no axis",
                                     what, (unsigned)i, (long long)axes[i],
                                     (int)rank)
                       : mp__node_err(g, node, "%s[%u] = %lld: must be in "
                                     "[%d, %d] (input rank %d)", what,
                                     (unsigned)i, (long long)axes[i],
                                     -(int)rank, (int)rank - 1, (int)rank);
        if (seen[a])
            return mp__node_err(g, node, "%s[%u] = %lld: axis %d is named "
                               "twice", what, (unsigned)i,
                               (long long)axes[i], (int)a);
        seen[a] = true;
    }
    if (mask)
        memcpy(mask, seen, sizeof seen);
    return MP_OK;
}

mp_status mp__check_min(mp_graph *g, uint32_t node, const char *what,
                       const int64_t *v, uint32_t cnt, int64_t min)
{
    for (uint32_t i = 0; v && i < cnt; i++)
        if (v[i] < min)
            return mp__node_err(g, node, "%s[%u] = %lld: must be >= %lld",
                               what, (unsigned)i, (long long)v[i],
                               (long long)min);
    return MP_OK;
}

mp_status mp__check_count(mp_graph *g, uint32_t node, const char *what,
                         uint32_t cnt, uint32_t want, const char *per)
{
    if (cnt == want)
        return MP_OK;
    return mp__node_err(g, node, "%s has %u entries, expected %u%s%s", what,
                       (unsigned)cnt, (unsigned)want, per ? " " : "",
                       per ? per : "");
}

mp_status mp__check_perm(mp_graph *g, uint32_t node, const char *what,
                        const int64_t *perm, uint32_t cnt, int32_t rank)
{
    mp_status st = mp__check_count(g, node, what, cnt, (uint32_t)rank,
                                   "(one per input axis)");
    bool seen[MP_MAX_RANK] = {false};
    for (uint32_t i = 0; !st && i < cnt; i++) {
        if (perm[i] < 0 || perm[i] >= rank)
            return mp__node_err(g, node, "%s[%u] = %lld: must be in [0, %d] "
                               "(input rank %d)", what, (unsigned)i,
                               (long long)perm[i], (int)rank - 1, (int)rank);
        if (seen[perm[i]])
            return mp__node_err(g, node, "%s[%u] = %lld: axis %lld is named "
                               "twice", what, (unsigned)i,
                               (long long)perm[i], (long long)perm[i]);
        seen[perm[i]] = true;
    }
    return st;
}

mp_status mp__check_dtype(mp_graph *g, uint32_t node, const char *name,
                         bool zero_ok)
{
    const mp__node *n = &g->nodes[node];
    if (!mp__node_attr(n, name))
        return MP_OK;
    int64_t v = mp__attr_int(n, name, 0);
    if ((v == 0 && zero_ok) ||
        (v > 0 && v < 256 && mp_dtype_name((mp_dtype)v) &&
         mp_dtype_bits((mp_dtype)v)))
        return MP_OK;
    return mp__node_err(g, node, "attribute '%s' = %lld: not a data type "
                       "(ONNX TensorProto.DataType)", name, (long long)v);
}

mp_status mp__check_enum(mp_graph *g, uint32_t node, const char *name,
                        const char *dflt, const char *const *allowed,
                        const char **out)
{
    const char *v = mp__attr_str(&g->nodes[node], name, dflt);
    char list[300] = "";
    size_t len = 0;
    for (const char *const *a = allowed; *a; a++) {
        if (v && strcmp(v, *a) == 0) {
            if (out)
                *out = v;
            return MP_OK;
        }
        int w = snprintf(list + len, sizeof list - len, "%s'%s'",
                         a == allowed ? "" : (a[1] ? ", " : " or "), *a);
        if (w > 0 && (size_t)w < sizeof list - len)
            len += (size_t)w;
    }
    return mp__node_err(g, node, "attribute '%s' = '%s': must be %s", name,
                       v ? v : "", list);
}

mp_status mp__shape_done(mp_graph *g, uint32_t node)
{
    const mp__node *n = &g->nodes[node];
    /* views and same-shape pointwise ops: output 0 has input 0's bytes
     * even where only bytes (no shape) are known */
    if ((n->def->flags & (MP__OPF_VIEW | MP__OPF_ELEMENTWISE)) && n->n_out &&
        n->n_in && n->inputs[0] != MP_NONE) {
        mp__tensor *out = &g->tensors[n->outputs[0]];
        const mp__tensor *in = &g->tensors[n->inputs[0]];
        if (!(out->flags & MP__TF_SIZE_KNOWN) &&
            (in->flags & MP__TF_SIZE_KNOWN)) {
            out->bytes = in->bytes;
            out->flags |= MP__TF_SIZE_KNOWN;
        }
    }
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp__tensor *t = &g->tensors[n->outputs[o]];
        if (t->flags & MP__TF_SIZE_KNOWN)
            continue;
        if (mp__op_is_generic(n->def))
            return mp__err(g->ctx, MP_ERR_SHAPE,
                          "node '%s' (op %s%s%s): size of output '%s' is "
                          "unknown: op '%s' of domain '%s' has no shape "
                          "function in memplan; declare the output's dtype "
                          "and shape (ONNX value_info), or bytes",
                          n->name, n->domain[0] ? n->domain : "",
                          n->domain[0] ? "." : "", n->op, t->name, n->op,
                          n->domain[0] ? n->domain : "ai.onnx");
        /* an optional output that nothing reads and that is not a graph
         * output (Dropout's mask, MaxPool's indices, ...): when its shape
         * cannot be inferred, it is taken as not materialised */
        if (t->n_cons == 0 && !(t->flags & MP__TF_OUTPUT) && o > 0) {
            mp__tensor *w = &g->tensors[n->outputs[o]];
            w->bytes = 0;
            w->flags |= MP__TF_SIZE_KNOWN;
            continue;
        }
        /* name the first input that blocks inference */
        const char *why = "";
        char buf[300] = "";
        for (uint32_t i = 0; i < n->n_in; i++) {
            const mp__tensor *in = mp__in(g, n, i);
            if (in && !mp__tensor_shape_known(in)) {
                snprintf(buf, sizeof buf, ": the shape of input '%s' is "
                         "unknown", in->name);
                why = buf;
                break;
            }
        }
        if (!why[0])
            for (uint32_t i = 1; i < n->n_in; i++) {
                const mp__tensor *in = mp__in(g, n, i);
                if (in && !in->value &&
                    (in->dtype == MP_DTYPE_INT64 ||
                     in->dtype == MP_DTYPE_INT32)) {
                    snprintf(buf, sizeof buf, ": the value of input '%s' is "
                             "not a constant memplan could fold", in->name);
                    why = buf;
                    break;
                }
            }
        return mp__node_err(g, node, "cannot infer the shape of output "
                           "'%s'%s; declare it (value_info) or bind the "
                           "symbolic dims it depends on",
                           t->name, why);
    }
    return MP_OK;
}

bool mp__broadcast(const mp__shape *a, const mp__shape *b, mp__shape *out)
{
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return true;
    }
    int32_t r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int32_t i = 0; i < r; i++) {
        int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t x = ia >= 0 ? a->d[ia] : 1, y = ib >= 0 ? b->d[ib] : 1;
        int64_t z;
        if (x == 1)
            z = y;
        else if (y == 1)
            z = x;
        else if (x < 0)
            z = y;
        else if (y < 0)
            z = x;
        else if (x == y)
            z = x;
        else
            return false;
        out->d[i] = z;
    }
    return true;
}

bool mp__axis(int64_t axis, int32_t rank, int32_t *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return false;
    *out = (int32_t)axis;
    return true;
}

int64_t mp__shape_numel(const mp__shape *s)
{
    if (s->rank < 0)
        return -1;
    uint64_t c = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->d[i] < 0 || !mp__mul_u64(c, (uint64_t)s->d[i], &c) ||
            c > (uint64_t)INT64_MAX)
            return -1;
    }
    return (int64_t)c;
}

size_t mp_graph_unknown_shapes(const mp_graph *g)
{
    size_t n = 0;
    if (!g)
        return 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const mp__tensor *t = &g->tensors[i];
        bool in_use = t->n_cons || (t->flags & MP__TF_OUTPUT) || t->bytes;
        /* a sequence or optional: resolved when its size is (every
         * element's shape known) */
        if (t->seq && (t->flags & MP__TF_SIZE_KNOWN))
            continue;
        if (in_use && !mp__tensor_shape_known(t) &&
            !(t->flags & MP__TF_BYTES_GIVEN && t->rank < 0 &&
              t->dtype == MP_DTYPE_UNDEFINED))
            n++;
    }
    return n;
}
