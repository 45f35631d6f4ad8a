/* Shape functions of tensor-manipulation ops (Shape, Reshape, Concat,
 * Slice, Gather, ...), with constant folding of int64 shape arithmetic:
 * when the inputs' values are known, the output's value is computed too,
 * so that dims computed from other dims become numbers. */
#include "rebatch.h"
#include "shape.h"

#include <math.h>
#include <string.h>

static int in_dtype(const mp_graph *g, const mp__node *n, uint32_t i)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t ? t->dtype : MP_DTYPE_UNDEFINED;
}

/* Output 0 = input 0's shape and dtype, value passed through (views). */
MP__SHAPE_FN(mp__shape_view)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *in = mp__in(g, n, 0);
    if (in && in->seq) { /* Identity of a sequence or optional */
        mp_status st = mp__out_seq(g, node, 0, mp__seq_copy(g->ctx, in->seq));
        return st ? st : mp__shape_done(g, node);
    }
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
    const int64_t *v;
    uint32_t c;
    if (!st && mp__in_value(g, n, 0, &v, &c))
        st = mp__out_value(g, node, 0, v, c);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_shape)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = 1;
    out.d[0] = -1;
    mp_status st = MP_OK;
    if (in.rank >= 0) {
        int64_t start = mp__attr_int(n, "start", 0);
        int64_t end = mp__attr_int(n, "end", in.rank);
        if (start < 0)
            start += in.rank;
        if (end < 0)
            end += in.rank;
        if (start < 0)
            start = 0;
        if (end > in.rank)
            end = in.rank;
        int64_t len = end > start ? end - start : 0;
        out.d[0] = len;
        bool known = true;
        for (int64_t i = start; i < end; i++)
            if (in.d[i] < 0)
                known = false;
        st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &out);
        if (!st && known && len > 0)
            st = mp__out_value(g, node, 0, in.d + start, (uint32_t)len);
    } else {
        st = mp__out_set(g, node, 0, MP_DTYPE_INT64, NULL);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_size)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = 0};
    mp__in_shape(g, n, 0, &in);
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &out);
    int64_t c = mp__shape_numel(&in);
    if (!st && c >= 0)
        st = mp__out_value(g, node, 0, &c, 1);
    return st ? st : mp__shape_done(g, node);
}

/* Constant: the loader sets the output's dtype, shape and value from the
 * attribute; nothing to infer. */
MP__SHAPE_FN(mp__shape_constant) { return mp__shape_done(g, node); }

MP__SHAPE_FN(mp__shape_constant_of_shape)
{
    const mp__node *n = &g->nodes[node];
    int dt = (int)mp__attr_int(n, "value.dtype", MP_DTYPE_FLOAT32);
    const int64_t *v;
    uint32_t c;
    mp_status st = MP_OK;
    if (mp__in_value(g, n, 0, &v, &c)) {
        mp__shape s;
        if (c > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                 "shape of rank %u is above %d",
                               (unsigned)c, MP_MAX_RANK);
        s.rank = (int32_t)c;
        for (uint32_t i = 0; i < c; i++) {
            if (v[i] < 0)
                return mp__node_err(g, node, "negative dim %lld in the shape",
                                   (long long)v[i]);
            s.d[i] = v[i];
        }
        st = mp__out_set(g, node, 0, dt, &s);
        int64_t cnt = mp__shape_numel(&s);
        uint32_t nf;
        const int64_t *fill = mp__attr_ints(n, "value.ints", &nf);
        if (!st && mp__dtype_is_int(dt) && cnt > 0 && cnt <= (int64_t)MP__VALUE_MAX) {
            int64_t *buf = mp__alloc(g->ctx, (size_t)cnt * sizeof *buf);
            if (!buf)
                return MP_ERR_NOMEM;
            for (int64_t i = 0; i < cnt; i++)
                buf[i] = nf ? fill[0] : 0;
            st = mp__out_value(g, node, 0, buf, (uint32_t)cnt);
            mp__dealloc(g->ctx, buf);
        }
    } else {
        const mp__tensor *shp = mp__in(g, n, 0);
        if (shp && shp->rank == 1 && shp->dims[0] >= 0 &&
            shp->dims[0] <= MP_MAX_RANK) {
            mp__shape s;
            s.rank = (int32_t)shp->dims[0];
            for (int32_t i = 0; i < s.rank; i++)
                s.d[i] = -1;
            st = mp__out_set(g, node, 0, dt, &s);
        } else {
            st = mp__out_set(g, node, 0, dt, NULL);
        }
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_reshape)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    const int64_t *v;
    uint32_t c;
    bool have = mp__in_value(g, n, 1, &v, &c);
    if (!have && (v = mp__attr_ints(n, "shape", &c)) != NULL)
        have = true;
    int64_t rb[MP_MAX_RANK]; /* a re-batched target (core/ops/rebatch.h) */
    mp_status rs = have ? mp__rebatch_operand(g, node, mp__in(g, n, 1) ? 1
                                                                     : MP_NONE,
                                             MP__REBATCH_RESHAPE, &in, &v, c,
                                             rb)
                        : MP_OK;
    if (rs)
        return rs;
    out.rank = -1;
    if (have) {
        if (c > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                 "target rank %u above %d",
                               (unsigned)c, MP_MAX_RANK);
        bool allowzero = mp__attr_int(n, "allowzero", 0) != 0;
        if (allowzero) {
            bool zero = false, minus = false;
            for (uint32_t i = 0; i < c; i++) {
                zero |= v[i] == 0;
                minus |= v[i] == -1;
            }
            if (zero && minus)
                return mp__node_err(g, node, "the target shape has both 0 "
                                   "and -1 while attribute 'allowzero' = 1: "
                                   "the -1 cannot be inferred");
        }
        out.rank = (int32_t)c;
        int32_t infer_at = -1;
        uint64_t known = 1;
        bool all = true;
        for (uint32_t i = 0; i < c; i++) {
            int64_t d = v[i];
            if (d == 0 && !allowzero && in.rank >= 0 && (int32_t)i >= in.rank)
                return mp__node_err(g, node, "target shape[%u] = 0 copies "
                                   "input dim %u, but the input has rank %d",
                                   (unsigned)i, (unsigned)i, (int)in.rank);
            if (d == 0 && !allowzero)
                d = (in.rank > (int32_t)i) ? in.d[i] : -1;
            else if (d == -1) {
                if (infer_at >= 0)
                    return mp__node_err(g, node, "more than one -1 in the "
                                       "target shape");
                infer_at = (int32_t)i;
            } else if (d < -1)
                return mp__node_err(g, node, "target shape[%u] = %lld: must "
                                   "be >= -1", (unsigned)i, (long long)d);
            out.d[i] = d;
            if (i != (uint32_t)infer_at) {
                if (d < 0)
                    all = false;
                else if (!mp__mul_u64(known, (uint64_t)d, &known))
                    all = false;
            }
        }
        if (infer_at >= 0) {
            int64_t total = mp__shape_numel(&in);
            if (total >= 0 && all && known > 0) {
                if ((uint64_t)total % known)
                    return mp__node_err(g, node, "cannot reshape %lld "
                                       "elements into the target shape",
                                       (long long)total);
                out.d[infer_at] = (int64_t)((uint64_t)total / known);
            } else if (total == 0 && all) {
                out.d[infer_at] = 0;
            } else {
                out.d[infer_at] = -1;
            }
        } else if (all) {
            /* a fixed target must hold the input's elements (a constant
             * target that fixes the batch fails here when a model is
             * re-batched with --dim INPUT:0=N) */
            int64_t total = mp__shape_numel(&in);
            if (total >= 0 && (uint64_t)total != known) {
                const mp__tensor *tt = mp__in(g, n, 1);
                return mp__node_err(g, node, "cannot reshape input '%s' "
                                   "(%lld elements) into the target shape "
                                   "%s%s%s(%llu elements)",
                                   mp__in(g, n, 0)->name, (long long)total,
                                   tt ? "'" : "", tt ? tt->name : "",
                                   tt ? "' " : "", (unsigned long long)known);
            }
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    if (!st && mp__in_value(g, n, 0, &v, &c))
        st = mp__out_value(g, node, 0, v, c);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_flatten)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = -1;
    if (in.rank >= 0) {
        int64_t axis = mp__attr_int(n, "axis", 1);
        if (axis < 0)
            axis += in.rank;
        if (axis < 0 || axis > in.rank)
            return mp__node_err(g, node, "attribute 'axis' = %lld: must be in "
                               "[%d, %d] (input rank %d)",
                               (long long)mp__attr_int(n, "axis", 1),
                               -(int)in.rank, (int)in.rank, (int)in.rank);
        mp__shape a = {.rank = (int32_t)axis}, b = {.rank = in.rank - (int32_t)axis};
        memcpy(a.d, in.d, (size_t)a.rank * sizeof a.d[0]);
        memcpy(b.d, in.d + axis, (size_t)b.rank * sizeof b.d[0]);
        out.rank = 2;
        out.d[0] = mp__shape_numel(&a);
        out.d[1] = mp__shape_numel(&b);
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *v;
    uint32_t c;
    if (!st && mp__in_value(g, n, 0, &v, &c))
        st = mp__out_value(g, node, 0, v, c);
    return st ? st : mp__shape_done(g, node);
}

/* axes from the attribute (older opsets) or input 1 (opset 13+) */
static bool get_axes(const mp_graph *g, const mp__node *n, uint32_t input,
                     const int64_t **axes, uint32_t *cnt)
{
    *axes = mp__attr_ints(n, "axes", cnt);
    if (*axes)
        return true;
    if (mp__in_value(g, n, input, axes, cnt))
        return true;
    *cnt = 0;
    return mp__in(g, n, input) == NULL; /* absent: no axes given */
}

MP__SHAPE_FN(mp__shape_squeeze)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = -1;
    const int64_t *axes;
    uint32_t c;
    if (in.rank >= 0 && get_axes(g, n, 1, &axes, &c)) {
        bool drop[MP_MAX_RANK] = {false};
        bool ok = true;
        if (c == 0) {
            for (int32_t i = 0; i < in.rank; i++) {
                if (in.d[i] < 0)
                    ok = false;
                drop[i] = in.d[i] == 1;
            }
        } else {
            const char *what = mp__attr_ints(n, "axes", &(uint32_t){0})
                                   ? "attribute 'axes'"
                                   : "input 'axes'";
            mp_status cs = mp__check_axes(g, node, what, axes, c, in.rank,
                                          drop);
            if (cs)
                return cs;
            for (int32_t i = 0; i < in.rank; i++)
                if (drop[i] && in.d[i] >= 0 && in.d[i] != 1)
                    return mp__node_err(g, node, "%s names axis %d, whose "
                                       "dim is %lld: only a dim of 1 can be "
                                       "squeezed", what, (int)i,
                                       (long long)in.d[i]);
        }
        if (ok) {
            out.rank = 0;
            for (int32_t i = 0; i < in.rank; i++)
                if (!drop[i])
                    out.d[out.rank++] = in.d[i];
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *v;
    uint32_t vc;
    if (!st && mp__in_value(g, n, 0, &v, &vc))
        st = mp__out_value(g, node, 0, v, vc);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_unsqueeze)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = -1;
    const int64_t *axes;
    uint32_t c;
    if (in.rank >= 0 && get_axes(g, n, 1, &axes, &c) && c > 0) {
        int32_t r = in.rank + (int32_t)c;
        if (r > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                 "rank %d above %d", (int)r,
                               MP_MAX_RANK);
        bool ins[MP_MAX_RANK];
        mp_status cs = mp__check_axes(g, node,
                                      mp__attr_ints(n, "axes", &(uint32_t){0})
                                          ? "attribute 'axes'"
                                          : "input 'axes'",
                                      axes, c, r, ins);
        if (cs)
            return cs;
        out.rank = r;
        for (int32_t i = 0, j = 0; i < r; i++)
            out.d[i] = ins[i] ? 1 : in.d[j++];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *v;
    uint32_t vc;
    if (!st && mp__in_value(g, n, 0, &v, &vc))
        st = mp__out_value(g, node, 0, v, vc);
    return st ? st : mp__shape_done(g, node);
}

/* Folds the value of a gather of in's value by an affine map per axis:
 * output coordinate c along axis i reads input axis src[i] at
 * first[i] + c * step[i]. in and out have the same rank; the value is left
 * unknown when anything is out of range or too large. */
static mp_status fold_affine(mp_graph *g, uint32_t node, const mp__shape *in,
                             const mp__shape *out, const int32_t *src,
                             const int64_t *first, const int64_t *step)
{
    const mp__node *n = &g->nodes[node];
    const int64_t *v;
    uint32_t vc;
    int64_t total = mp__shape_numel(out);
    if (in->rank < 0 || out->rank != in->rank || total <= 0 ||
        total > (int64_t)MP__VALUE_MAX || !mp__in_value(g, n, 0, &v, &vc) ||
        (int64_t)vc != mp__shape_numel(in))
        return MP_OK;
    int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
    if (!buf)
        return MP_ERR_NOMEM;
    bool ok = true;
    for (int64_t e = 0; e < total && ok; e++) {
        int64_t rest = e, coord[MP_MAX_RANK];
        for (int32_t i = out->rank - 1; i >= 0; i--) {
            coord[i] = rest % out->d[i];
            rest /= out->d[i];
        }
        int64_t incoord[MP_MAX_RANK];
        for (int32_t i = 0; i < out->rank; i++) {
            int64_t c;
            if (__builtin_mul_overflow(coord[i], step[i], &c) ||
                __builtin_add_overflow(first[i], c, &c) || c < 0 ||
                c >= in->d[src[i]])
                ok = false;
            incoord[src[i]] = c;
        }
        int64_t idx = 0;
        for (int32_t i = 0; i < in->rank && ok; i++)
            idx = idx * in->d[i] + incoord[i];
        if (ok)
            buf[e] = v[idx];
    }
    mp_status st = ok ? mp__out_value(g, node, 0, buf, (uint32_t)total)
                      : MP_OK;
    mp__dealloc(g->ctx, buf);
    return st;
}

MP__SHAPE_FN(mp__shape_transpose)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = -1;
    if (in.rank >= 0) {
        uint32_t c;
        const int64_t *perm = mp__attr_ints(n, "perm", &c);
        out.rank = in.rank;
        if (perm) {
            mp_status cs = mp__check_perm(g, node, "attribute 'perm'", perm, c,
                                          in.rank);
            if (cs)
                return cs;
            for (uint32_t i = 0; i < c; i++)
                out.d[i] = in.d[perm[i]];
        } else {
            for (int32_t i = 0; i < in.rank; i++)
                out.d[i] = in.d[in.rank - 1 - i];
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *v;
    uint32_t vc;
    /* rank <= 1: transposition keeps the value */
    if (!st && in.rank >= 0 && in.rank <= 1 && mp__in_value(g, n, 0, &v, &vc))
        st = mp__out_value(g, node, 0, v, vc);
    else if (!st && in.rank > 1 && mp__shape_numel(&in) > 0) {
        /* small constants (PyTorch's pad list: reshape, flip, transpose) */
        int32_t src[MP_MAX_RANK];
        int64_t first[MP_MAX_RANK] = {0}, step[MP_MAX_RANK];
        uint32_t c;
        const int64_t *perm = mp__attr_ints(n, "perm", &c);
        for (int32_t i = 0; i < in.rank; i++) {
            if (perm)
                mp__axis(perm[i], in.rank, &src[i]);
            else
                src[i] = in.rank - 1 - i;
            step[i] = 1;
        }
        st = fold_affine(g, node, &in, &out, src, first, step);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_concat)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = -1};
    int64_t axis = mp__attr_int(n, "axis", 0);
    int32_t ax = -1;
    bool all_vals = true;
    int dt = MP_DTYPE_UNDEFINED;
    for (uint32_t i = 0; i < n->n_in; i++) {
        mp__shape s;
        mp__in_shape(g, n, i, &s);
        if (!mp__in(g, n, i))
            continue;
        if (dt == MP_DTYPE_UNDEFINED)
            dt = in_dtype(g, n, i);
        const int64_t *iv;
        uint32_t ic;
        if (!mp__in_value(g, n, i, &iv, &ic)) /* an empty one is known */
            all_vals = false;
        if (s.rank < 0) {
            out.rank = -1;
            all_vals = false;
            break;
        }
        if (out.rank < 0) {
            mp_status cs = mp__check_axis(g, node, "attribute 'axis'", axis,
                                          s.rank, &ax);
            if (cs)
                return cs;
            out = s;
            continue;
        }
        if (s.rank != out.rank)
            return mp__node_err(g, node, "input '%s' has rank %d, the inputs "
                               "before it %d: they must be equal",
                               mp__in(g, n, i)->name, (int)s.rank,
                               (int)out.rank);
        for (int32_t k = 0; k < s.rank; k++) {
            if (k == ax) {
                if (out.d[k] < 0 || s.d[k] < 0)
                    out.d[k] = -1;
                else if (__builtin_add_overflow(out.d[k], s.d[k], &out.d[k]))
                    return mp__node_fail(g, node, MP_ERR_OVERFLOW, "the "
                                        "concatenated axis overflows 64 "
                                        "bits");
            } else if (out.d[k] >= 0 && s.d[k] >= 0 && out.d[k] != s.d[k]) {
                return mp__node_err(g, node, "input '%s' has dim %d = %lld, "
                                   "the inputs before it %lld: only the "
                                   "axis %d may differ",
                                   mp__in(g, n, i)->name, (int)k,
                                   (long long)s.d[k], (long long)out.d[k],
                                   (int)ax);
            } else if (out.d[k] < 0) {
                out.d[k] = s.d[k];
            }
        }
    }
    mp_status st = mp__out_set(g, node, 0, dt, &out);
    if (st)
        return st;
    int64_t total = mp__shape_numel(&out);
    if (all_vals && total > 0 && total <= (int64_t)MP__VALUE_MAX) {
        /* outer blocks over axis, each input contributes d_i * inner */
        int64_t inner = 1, outer = 1;
        for (int32_t k = ax + 1; k < out.rank; k++)
            inner *= out.d[k];
        for (int32_t k = 0; k < ax; k++)
            outer *= out.d[k];
        int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        int64_t pos = 0;
        bool ok = true;
        for (int64_t o = 0; o < outer && ok; o++)
            for (uint32_t i = 0; i < n->n_in; i++) {
                const mp__tensor *t = mp__in(g, n, i);
                if (!t)
                    continue;
                int64_t chunk = t->dims[ax] * inner;
                if (chunk == 0)
                    continue;
                if ((int64_t)t->n_value != chunk * outer ||
                    pos + chunk > total) {
                    ok = false;
                    break;
                }
                memcpy(buf + pos, t->value + o * chunk,
                       (size_t)chunk * sizeof *buf);
                pos += chunk;
            }
        if (ok && pos == total)
            st = mp__out_value(g, node, 0, buf, (uint32_t)total);
        mp__dealloc(g->ctx, buf);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_split)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in;
    mp__in_shape(g, n, 0, &in);
    int dt = in_dtype(g, n, 0);
    mp_status st = MP_OK;
    int32_t ax;
    const mp__attr *nattr = mp__node_attr(n, "num_outputs");
    int64_t num_outputs = mp__attr_int(n, "num_outputs", 0);
    if (nattr && num_outputs != (int64_t)n->n_out)
        return mp__node_err(g, node, "attribute 'num_outputs' = %lld: the "
                           "node has %u outputs", (long long)num_outputs,
                           (unsigned)n->n_out);
    if (in.rank >= 0 &&
        (st = mp__check_axis(g, node, "attribute 'axis'",
                             mp__attr_int(n, "axis", 0), in.rank, &ax)))
        return st;
    if (in.rank < 0) {
        for (uint32_t o = 0; o < n->n_out && !st; o++)
            st = mp__out_set(g, node, o, dt, NULL);
        return st ? st : mp__shape_done(g, node);
    }
    uint32_t c;
    const int64_t *split = mp__attr_ints(n, "split", &c);
    const char *what = "attribute 'split'";
    if (!split && mp__in_value(g, n, 1, &split, &c))
        what = "input 'split'";
    else if (!split)
        split = NULL;
    if (split && nattr)
        return mp__node_err(g, node, "%s and attribute 'num_outputs' are "
                           "both given: only one may be", what);
    if (split && c != n->n_out)
        return mp__node_err(g, node, "%s has %u entries for %u outputs: "
                           "they must be equal", what, (unsigned)c,
                           (unsigned)n->n_out);
    int64_t dim = in.d[ax];
    if (split) {
        if ((st = mp__check_min(g, node, what, split, c, 0)))
            return st;
        int64_t sum = 0;
        for (uint32_t i = 0; i < c; i++)
            if (__builtin_add_overflow(sum, split[i], &sum))
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "the sum of "
                                    "%s overflows 64 bits", what);
        if (dim >= 0 && sum != dim)
            return mp__node_err(g, node, "%s sums to %lld, but axis %d of "
                               "input '%s' has %lld: they must be equal",
                               what, (long long)sum, (int)ax,
                               mp__in(g, n, 0)->name, (long long)dim);
    }
    uint32_t nout = n->n_out ? n->n_out : 1;
    /* before opset 18 a split without sizes is into equal parts */
    if (!split && !mp__in(g, n, 1) && g->onnx_opset && g->onnx_opset < 18 &&
        dim >= 0 && dim % (int64_t)nout)
        return mp__node_err(g, node, "axis %d of input '%s' has %lld, not a "
                           "multiple of the %u outputs (opset %d splits "
                           "into equal parts)", (int)ax,
                           mp__in(g, n, 0)->name, (long long)dim,
                           (unsigned)nout, (int)g->onnx_opset);
    /* a split input whose value is only known at run time */
    bool runtime_split = !split && mp__in(g, n, 1) != NULL;
    /* a folded input value is split too (shape lists: N, C, H, W) */
    const int64_t *iv;
    uint32_t ic;
    bool fold = mp__in_value(g, n, 0, &iv, &ic) && ic &&
                (int64_t)ic == mp__shape_numel(&in);
    int64_t outer = 1, inner = 1, off = 0;
    for (int32_t k = 0; k < in.rank; k++)
        if (k < ax)
            outer *= in.d[k];
        else if (k > ax)
            inner *= in.d[k];
    for (uint32_t o = 0; o < n->n_out && !st; o++) {
        mp__shape s = in;
        if (split)
            s.d[ax] = split[o];
        else if (dim < 0 || runtime_split)
            s.d[ax] = -1;
        else {
            int64_t part = (dim + nout - 1) / (int64_t)nout;
            int64_t left = dim - part * (int64_t)o;
            s.d[ax] = left < 0 ? 0 : (left < part ? left : part);
        }
        st = mp__out_set(g, node, o, dt, &s);
        int64_t cnt = s.d[ax] < 0 ? -1 : outer * s.d[ax] * inner;
        if (!st && fold && cnt > 0 && off + s.d[ax] <= dim &&
            cnt <= (int64_t)MP__VALUE_MAX) {
            int64_t *buf = mp__alloc(g->ctx, (size_t)cnt * sizeof *buf);
            if (!buf)
                return MP_ERR_NOMEM;
            for (int64_t b = 0, p = 0; b < outer; b++)
                for (int64_t k = 0; k < s.d[ax] * inner; k++)
                    buf[p++] = iv[(b * dim + off) * inner + k];
            st = mp__out_value(g, node, o, buf, (uint32_t)cnt);
            mp__dealloc(g->ctx, buf);
        }
        off += s.d[ax] < 0 ? 0 : s.d[ax];
    }
    return st ? st : mp__shape_done(g, node);
}

/* Number of elements a slice takes from a dim (start/end/step clamped). */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step,
                         int64_t *first)
{
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : (start > dim ? dim : start);
        end = end < 0 ? 0 : (end > dim ? dim : end);
        *first = start;
        return end > start ? 1 + (end - start - 1) / step : 0;
    }
    start = start < 0 ? 0 : (start > dim - 1 ? dim - 1 : start);
    end = end < -1 ? -1 : (end > dim - 1 ? dim - 1 : end);
    *first = start;
    if (start <= end)
        return 0;
    return step == INT64_MIN ? 1 : 1 + (start - end - 1) / (-step);
}

/* A Slice's starts, ends, axes and steps (attributes before opset 10,
 * inputs after; axes and steps NULL where not given): false when a value
 * is not known. */
typedef struct slice_args {
    const int64_t *starts, *ends, *axes, *steps;
    uint32_t ns, ne, na, nst;
} slice_args;

static bool get_slice_args(const mp_graph *g, const mp__node *n,
                           slice_args *a)
{
    memset(a, 0, sizeof *a);
    a->starts = mp__attr_ints(n, "starts", &a->ns);
    if (a->starts) {
        a->ends = mp__attr_ints(n, "ends", &a->ne);
        a->axes = mp__attr_ints(n, "axes", &a->na);
        return a->ends != NULL;
    }
    bool have = mp__in_value(g, n, 1, &a->starts, &a->ns) &&
                mp__in_value(g, n, 2, &a->ends, &a->ne);
    if (have && mp__in(g, n, 3) && !mp__in_value(g, n, 3, &a->axes, &a->na))
        have = false;
    if (have && mp__in(g, n, 4) && !mp__in_value(g, n, 4, &a->steps, &a->nst))
        have = false;
    return have;
}

bool mp__slice_firsts(const mp_graph *g, uint32_t node, int64_t *firsts)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *x = mp__in(g, n, 0);
    slice_args a;
    if (!x || x->rank < 0 || x->rank > MP_MAX_RANK || !get_slice_args(g, n, &a) ||
        a.ne != a.ns || (a.axes && a.na != a.ns) || (a.steps && a.nst != a.ns))
        return false;
    for (int32_t i = 0; i < x->rank; i++)
        firsts[i] = 0;
    for (uint32_t k = 0; k < a.ns; k++) {
        int32_t ax;
        if ((a.steps && a.steps[k] != 1) ||
            !mp__axis(a.axes ? a.axes[k] : (int64_t)k, x->rank, &ax) ||
            x->dims[ax] < 0)
            return false;
        slice_len(x->dims[ax], a.starts[k], a.ends[k], 1, &firsts[ax]);
    }
    return true;
}

MP__SHAPE_FN(mp__shape_slice)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out;
    mp__in_shape(g, n, 0, &in);
    out.rank = -1;
    slice_args sa;
    bool have = get_slice_args(g, n, &sa);
    const int64_t *starts = sa.starts, *ends = sa.ends, *axes = sa.axes,
                  *steps = sa.steps;
    uint32_t ns = sa.ns, ne = sa.ne, na = sa.na, nst = sa.nst;
    if (have && (ne != ns || (axes && na != ns) || (steps && nst != ns)))
        return mp__node_err(g, node, "starts, ends, axes and steps differ "
                           "in length");
    int64_t first0 = 0, step0 = 1;
    int64_t firsts[MP_MAX_RANK] = {0}, stepv[MP_MAX_RANK];
    int32_t src[MP_MAX_RANK];
    for (int32_t i = 0; i < MP_MAX_RANK; i++) {
        stepv[i] = 1;
        src[i] = i;
    }
    if (in.rank >= 0 && have) {
        const char *aw = mp__attr_ints(n, "axes", &(uint32_t){0})
                             ? "attribute 'axes'"
                             : "input 'axes'";
        mp_status cs;
        if (axes && (cs = mp__check_axes(g, node, aw, axes, na, in.rank,
                                         NULL)))
            return cs;
        if (!axes && ns > (uint32_t)in.rank)
            return mp__node_err(g, node, "starts has %u entries for input "
                               "rank %d (without axes, at most one per "
                               "axis)", (unsigned)ns, (int)in.rank);
        out = in;
        for (uint32_t k = 0; k < ns; k++) {
            int32_t a;
            mp__axis(axes ? axes[k] : (int64_t)k, in.rank, &a);
            int64_t step = steps ? steps[k] : 1;
            if (step == 0)
                return mp__node_err(g, node, "input 'steps'[%u] = 0: a step "
                                   "must not be 0", (unsigned)k);
            if (in.d[a] < 0) {
                out.d[a] = -1;
                continue;
            }
            int64_t first;
            out.d[a] = slice_len(in.d[a], starts[k], ends[k], step, &first);
            firsts[a] = first;
            stepv[a] = step;
            if (a == 0) {
                first0 = first;
                step0 = step;
            }
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *v;
    uint32_t vc;
    /* values of rank-1 tensors (shape vectors) */
    if (!st && out.rank == 1 && out.d[0] >= 0 && in.rank == 1 &&
        mp__in_value(g, n, 0, &v, &vc) && (int64_t)vc == in.d[0] &&
        out.d[0] > 0) {
        int64_t buf[MP_MAX_RANK * 4];
        if (out.d[0] <= (int64_t)(sizeof buf / sizeof buf[0])) {
            for (int64_t i = 0; i < out.d[0]; i++)
                buf[i] = v[first0 + i * step0];
            st = mp__out_value(g, node, 0, buf, (uint32_t)out.d[0]);
        }
    } else if (!st && out.rank > 1 && have && mp__shape_numel(&out) > 0)
        st = fold_affine(g, node, &in, &out, src, firsts, stepv);
    return st ? st : mp__shape_done(g, node);
}

/* Known index values of input i (Gather, GatherElements, ScatterElements)
 * must lie in [-dim, dim - 1] of the data's axis ax. */
static mp_status check_indices(mp_graph *g, uint32_t node, uint32_t i,
                               int64_t dim, int32_t ax)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *t = mp__in(g, n, i);
    const int64_t *v;
    uint32_t c;
    if (dim < 0 || !t || !mp__dtype_is_int(t->dtype) ||
        !mp__in_value(g, n, i, &v, &c))
        return MP_OK;
    for (uint32_t k = 0; k < c; k++)
        if (v[k] < -dim || v[k] >= dim)
            return mp__node_err(g, node, "input '%s'[%u] = %lld: an index "
                               "into axis %d (of %lld) must be in [%lld, "
                               "%lld]", t->name, (unsigned)k,
                               (long long)v[k], (int)ax, (long long)dim,
                               (long long)-dim, (long long)dim - 1);
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_gather)
{
    const mp__node *n = &g->nodes[node];
    mp__shape data, idx, out;
    mp__in_shape(g, n, 0, &data);
    mp__in_shape(g, n, 1, &idx);
    out.rank = -1;
    int32_t ax = 0;
    if (data.rank >= 0 && idx.rank >= 0) {
        mp_status as = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", 0), data.rank,
                                      &ax);
        if (as)
            return as;
        out.rank = data.rank - 1 + idx.rank;
        if (out.rank > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                 "rank above %d", MP_MAX_RANK);
        mp_status cs = check_indices(g, node, 1, data.d[ax], ax);
        if (cs)
            return cs;
        int32_t k = 0;
        for (int32_t i = 0; i < ax; i++)
            out.d[k++] = data.d[i];
        for (int32_t i = 0; i < idx.rank; i++)
            out.d[k++] = idx.d[i];
        for (int32_t i = ax + 1; i < data.rank; i++)
            out.d[k++] = data.d[i];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *dv, *iv;
    uint32_t dc, ic;
    int64_t total = mp__shape_numel(&out);
    if (!st && total > 0 && total <= (int64_t)MP__VALUE_MAX &&
        mp__in_value(g, n, 0, &dv, &dc) && mp__in_value(g, n, 1, &iv, &ic) &&
        mp__dtype_is_int(in_dtype(g, n, 0)) &&
        (int64_t)dc == mp__shape_numel(&data) &&
        (int64_t)ic == mp__shape_numel(&idx)) {
        int64_t outer = 1, inner = 1, dim = data.d[ax];
        for (int32_t i = 0; i < ax; i++)
            outer *= data.d[i];
        for (int32_t i = ax + 1; i < data.rank; i++)
            inner *= data.d[i];
        int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        int64_t pos = 0;
        bool ok = true;
        for (int64_t o = 0; o < outer && ok; o++)
            for (uint32_t j = 0; j < ic && ok; j++) {
                int64_t x = iv[j] < 0 ? iv[j] + dim : iv[j];
                if (x < 0 || x >= dim) {
                    ok = false;
                    break;
                }
                for (int64_t q = 0; q < inner; q++)
                    buf[pos++] = dv[(o * dim + x) * inner + q];
            }
        if (ok && pos == total)
            st = mp__out_value(g, node, 0, buf, (uint32_t)total);
        mp__dealloc(g->ctx, buf);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_gather_elements)
{
    const mp__node *n = &g->nodes[node];
    mp__shape data, idx;
    mp__in_shape(g, n, 0, &data);
    mp__in_shape(g, n, 1, &idx);
    if (data.rank >= 0) {
        int32_t ax;
        mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", 0), data.rank,
                                      &ax);
        if (!cs && idx.rank >= 0 && idx.rank != data.rank)
            cs = mp__node_err(g, node, "indices '%s' have rank %d, data '%s' "
                             "%d: they must be equal", mp__in(g, n, 1)->name,
                             (int)idx.rank, mp__in(g, n, 0)->name,
                             (int)data.rank);
        if (!cs)
            cs = check_indices(g, node, 1, data.d[ax], ax);
        if (cs)
            return cs;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &idx);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_expand)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, shp, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    const int64_t *v;
    uint32_t c;
    int64_t rb[MP_MAX_RANK]; /* a re-batched shape (core/ops/rebatch.h) */
    if (mp__in_value(g, n, 1, &v, &c)) {
        if (c > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM, "input 'shape' has "
                                "%u entries: rank above %d", (unsigned)c,
                                MP_MAX_RANK);
        mp_status rs = mp__rebatch_operand(g, node, 1, MP__REBATCH_EXPAND,
                                           &in, &v, c, rb);
        if (rs)
            return rs;
        mp_status cs = mp__check_min(g, node, "input 'shape'", v, c, 0);
        if (cs)
            return cs;
        shp.rank = (int32_t)c;
        memcpy(shp.d, v, c * sizeof *v);
        if (!mp__broadcast(&in, &shp, &out))
            return mp__node_err(g, node, "shape does not broadcast with the "
                               "input");
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    /* value of a scalar / single element expanded */
    int64_t total = mp__shape_numel(&out);
    if (!st && total > 0 && total <= (int64_t)MP__VALUE_MAX &&
        mp__in_value(g, n, 0, &v, &c) && c == 1) {
        int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        for (int64_t i = 0; i < total; i++)
            buf[i] = v[0];
        st = mp__out_value(g, node, 0, buf, (uint32_t)total);
        mp__dealloc(g->ctx, buf);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_tile)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    const int64_t *v;
    uint32_t c;
    if (in.rank >= 0 && mp__in_value(g, n, 1, &v, &c)) {
        if (c != (uint32_t)in.rank)
            return mp__node_err(g, node, "repeats has %u entries for rank %d",
                               (unsigned)c, (int)in.rank);
        out = in;
        for (int32_t i = 0; i < in.rank; i++) {
            if (v[i] < 0)
                return mp__node_err(g, node, "repeats[%d] is negative "
                                   "(%lld)", (int)i, (long long)v[i]);
            if (in.d[i] >= 0 &&
                __builtin_mul_overflow(in.d[i], v[i], &out.d[i]))
                return mp__err(g->ctx, MP_ERR_OVERFLOW, "node '%s' (Tile): "
                              "dim %d overflows 64 bits", n->name, (int)i);
            if (in.d[i] < 0)
                out.d[i] = -1;
        }
    } else if (in.rank >= 0) {
        out.rank = in.rank;
        for (int32_t i = 0; i < in.rank; i++)
            out.d[i] = -1;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    const int64_t *iv;
    uint32_t ic;
    int64_t total = mp__shape_numel(&out);
    if (!st && in.rank == 1 && total > 0 && total <= (int64_t)MP__VALUE_MAX &&
        mp__in_value(g, n, 0, &iv, &ic) && (int64_t)ic == in.d[0] && ic > 0) {
        int64_t *buf = mp__alloc(g->ctx, (size_t)total * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        for (int64_t i = 0; i < total; i++)
            buf[i] = iv[i % ic];
        st = mp__out_value(g, node, 0, buf, (uint32_t)total);
        mp__dealloc(g->ctx, buf);
    }
    return st ? st : mp__shape_done(g, node);
}

static bool scalar_value(const mp_graph *g, const mp__node *n, uint32_t i,
                         double *out)
{
    const mp__tensor *t = mp__in(g, n, i);
    if (!t || !t->value || t->n_value != 1)
        return false;
    if (mp__dtype_is_int(t->dtype))
        *out = (double)t->value[0];
    else
        memcpy(out, &t->value[0], sizeof *out);
    return true;
}

MP__SHAPE_FN(mp__shape_range)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = 1, .d = {-1}};
    double s, l, d;
    int dt = in_dtype(g, n, 0);
    bool known = scalar_value(g, n, 0, &s) && scalar_value(g, n, 1, &l) &&
                 scalar_value(g, n, 2, &d);
    if (known && d == 0)
        return mp__node_err(g, node, "delta is 0");
    if (known) {
        double cnt = ceil((l - s) / d);
        if (cnt != cnt)
            return mp__node_err(g, node, "the length is not a number");
        if (cnt < 0)
            cnt = 0;
        if (!mp__dim_from_double(cnt, &out.d[0]))
            return mp__err(g->ctx, MP_ERR_OVERFLOW, "node '%s' (Range): "
                          "%g elements", n->name, cnt);
    }
    mp_status st = mp__out_set(g, node, 0, dt, &out);
    if (!st && known && mp__dtype_is_int(dt) && out.d[0] > 0 &&
        out.d[0] <= (int64_t)MP__VALUE_MAX) {
        int64_t *buf = mp__alloc(g->ctx, (size_t)out.d[0] * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        /* integer operands: exact int64 steps (they come from int64
         * values; overflow leaves the value unknown) */
        const mp__tensor *ts = mp__in(g, n, 0), *td = mp__in(g, n, 2);
        bool ok = mp__dtype_is_int(ts->dtype) && mp__dtype_is_int(td->dtype);
        for (int64_t i = 0; i < out.d[0] && ok; i++) {
            int64_t step;
            ok = !__builtin_mul_overflow(i, td->value[0], &step) &&
                 !__builtin_add_overflow(ts->value[0], step, &buf[i]);
        }
        if (ok)
            st = mp__out_value(g, node, 0, buf, (uint32_t)out.d[0]);
        mp__dealloc(g->ctx, buf);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_pad)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    const int64_t *pads, *axes = NULL;
    uint32_t c, na = 0;
    pads = mp__attr_ints(n, "pads", &c);
    if (!pads)
        pads = mp__attr_ints(n, "paddings", &c);
    bool have = pads != NULL || mp__in_value(g, n, 1, &pads, &c);
    if (have && mp__in(g, n, 3) && !mp__in_value(g, n, 3, &axes, &na))
        have = false;
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap",
                                        NULL};
    mp_status cs = mp__check_enum(g, node, "mode", "constant", modes, NULL);
    if (cs)
        return cs;
    if (in.rank >= 0 && axes &&
        (cs = mp__check_axes(g, node, "input 'axes'", axes, na, in.rank,
                             NULL)))
        return cs;
    if (in.rank >= 0 && have) {
        uint32_t k = axes ? na : (uint32_t)in.rank;
        if (c != 2 * k)
            return mp__node_err(g, node, "pads has %u entries, expected %u "
                               "(begin and end of each %s)", (unsigned)c,
                               (unsigned)(2 * k), axes ? "axis in 'axes'"
                                                       : "input axis");
        out = in;
        for (uint32_t i = 0; i < k; i++) {
            int32_t a;
            if (!mp__axis(axes ? axes[i] : (int64_t)i, in.rank, &a))
                return mp__node_err(g, node, "axis out of range");
            if (out.d[a] >= 0 &&
                (__builtin_add_overflow(in.d[a], pads[i], &out.d[a]) ||
                 __builtin_add_overflow(out.d[a], pads[i + k], &out.d[a])))
                return mp__err(g->ctx, MP_ERR_OVERFLOW, "node '%s' (Pad): "
                              "dim %d overflows 64 bits", n->name, (int)a);
            if (out.d[a] < -1 || (in.d[a] >= 0 && out.d[a] < 0))
                return mp__node_err(g, node, "pads %lld and %lld make dim %d "
                                   "(%lld) negative", (long long)pads[i],
                                   (long long)pads[i + k], (int)a,
                                   (long long)in.d[a]);
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* DepthToSpace, SpaceToDepth: input [N, C, H, W], blocksize >= 1 */
static mp_status block_check(mp_graph *g, uint32_t node, const mp__shape *in,
                             int64_t *b)
{
    const mp__node *n = &g->nodes[node];
    if (!mp__node_attr(n, "blocksize"))
        return mp__node_err(g, node, "attribute 'blocksize' is missing: it "
                           "is required");
    *b = mp__attr_int(n, "blocksize", 1);
    if (*b < 1)
        return mp__node_err(g, node, "attribute 'blocksize' = %lld: must be "
                           ">= 1", (long long)*b);
    if (in->rank >= 0 && in->rank != 4)
        return mp__node_err(g, node, "input '%s' has rank %d: it must be 4 "
                           "(N, C, H, W)", mp__in(g, n, 0)->name,
                           (int)in->rank);
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_depth_to_space)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    int64_t b = 0, bb;
    static const char *const modes[] = {"DCR", "CRD", NULL};
    mp_status st = block_check(g, node, &in, &b);
    if (!st)
        st = mp__check_enum(g, node, "mode", "DCR", modes, NULL);
    if (st)
        return st;
    if (__builtin_mul_overflow(b, b, &bb))
        return mp__node_fail(g, node, MP_ERR_OVERFLOW, "attribute 'blocksize' "
                            "= %lld: its square overflows 64 bits",
                            (long long)b);
    if (in.rank == 4) {
        out = in;
        if (in.d[1] >= 0 && in.d[1] % bb)
            return mp__node_err(g, node, "input '%s' has %lld channels: not "
                               "a multiple of blocksize^2 = %lld",
                               mp__in(g, n, 0)->name, (long long)in.d[1],
                               (long long)bb);
        out.d[1] = in.d[1] < 0 ? -1 : in.d[1] / bb;
        for (int32_t i = 2; i < 4; i++)
            if (in.d[i] >= 0 && __builtin_mul_overflow(in.d[i], b, &out.d[i]))
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "dim %d (%lld) "
                                    "x blocksize %lld overflows 64 bits",
                                    (int)i, (long long)in.d[i], (long long)b);
    }
    st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_space_to_depth)
{
    const mp__node *n = &g->nodes[node];
    mp__shape in, out = {.rank = -1};
    mp__in_shape(g, n, 0, &in);
    int64_t b = 0, bb;
    mp_status st = block_check(g, node, &in, &b);
    if (st)
        return st;
    if (__builtin_mul_overflow(b, b, &bb))
        return mp__node_fail(g, node, MP_ERR_OVERFLOW, "attribute 'blocksize' "
                            "= %lld: its square overflows 64 bits",
                            (long long)b);
    if (in.rank == 4) {
        out = in;
        for (int32_t i = 2; i < 4; i++) {
            if (in.d[i] >= 0 && in.d[i] % b)
                return mp__node_err(g, node, "input '%s' has dim %d = %lld: "
                                   "not a multiple of blocksize %lld",
                                   mp__in(g, n, 0)->name, (int)i,
                                   (long long)in.d[i], (long long)b);
            out.d[i] = in.d[i] < 0 ? -1 : in.d[i] / b;
        }
        if (in.d[1] >= 0 && __builtin_mul_overflow(in.d[1], bb, &out.d[1]))
            return mp__node_fail(g, node, MP_ERR_OVERFLOW, "%lld channels x "
                                "blocksize^2 %lld overflow 64 bits",
                                (long long)in.d[1], (long long)bb);
    }
    st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}
