/* Shape functions of neural-network ops: convolutions, pooling,
 * normalisations, Resize, recurrent layers. */
#include "rebatch.h"
#include "shape.h"

#include <math.h>
#include <string.h>

static int in_dtype(const mp_graph *g, const mp__node *n, uint32_t i)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t ? t->dtype : MP_DTYPE_UNDEFINED;
}

static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t div_ceil(int64_t a, int64_t b) { return -div_floor(-a, b); }

/* Spatial output dims of Conv / pooling. k: kernel dims (nsp entries). */
static mp_status window_dims(mp_graph *g, uint32_t node, const mp__shape *x,
                             const int64_t *k, int32_t nsp, bool ceil_mode,
                             mp__shape *out)
{
    const mp__node *n = &g->nodes[node];
    uint32_t c;
    const int64_t *strides = mp__attr_ints(n, "strides", &c);
    if (strides && c != (uint32_t)nsp)
        return mp__node_err(g, node, "strides has %u entries for %d spatial "
                           "dims", (unsigned)c, (int)nsp);
    const int64_t *dil = mp__attr_ints(n, "dilations", &c);
    if (dil && c != (uint32_t)nsp)
        return mp__node_err(g, node, "dilations has %u entries", (unsigned)c);
    const int64_t *pads = mp__attr_ints(n, "pads", &c);
    if (pads && c != 2u * (uint32_t)nsp)
        return mp__node_err(g, node, "pads has %u entries", (unsigned)c);
    const char *ap = mp__attr_str(n, "auto_pad", "NOTSET");
    for (int32_t i = 0; i < nsp; i++) {
        int64_t in = x->d[2 + i];
        int64_t s = strides ? strides[i] : 1, d = dil ? dil[i] : 1;
        if (s <= 0 || d <= 0 || k[i] < 0)
            return mp__node_err(g, node, "bad stride, dilation or kernel");
        if (in < 0) {
            out->d[2 + i] = -1;
            continue;
        }
        int64_t ek = d * (k[i] - 1) + 1;
        int64_t o;
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0)
            o = div_ceil(in, s);
        else if (strcmp(ap, "VALID") == 0)
            o = div_floor(in - ek, s) + 1;
        else {
            int64_t p = pads ? pads[i] + pads[i + nsp] : 0;
            if (ceil_mode) {
                o = div_ceil(in + p - ek, s) + 1;
                /* the last window must start inside the input or the
                 * leading padding */
                if ((o - 1) * s >= in + (pads ? pads[i] : 0))
                    o--;
            } else {
                o = div_floor(in + p - ek, s) + 1;
            }
        }
        out->d[2 + i] = o < 0 ? 0 : o;
    }
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_conv)
{
    const mp__node *n = &g->nodes[node];
    bool qlinear = strcmp(n->op, "QLinearConv") == 0;
    bool integer = strcmp(n->op, "ConvInteger") == 0;
    mp__shape x, w, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, qlinear ? 3 : 1, &w);
    if (x.rank >= 3) {
        int32_t nsp = x.rank - 2;
        int64_t k[MP_MAX_RANK];
        uint32_t c;
        const int64_t *ks = mp__attr_ints(n, "kernel_shape", &c);
        bool have = true;
        for (int32_t i = 0; i < nsp; i++) {
            if (ks && c == (uint32_t)nsp)
                k[i] = ks[i];
            else if (w.rank == x.rank)
                k[i] = w.d[2 + i];
            else
                have = false;
        }
        if (have) {
            out = x;
            out.d[1] = w.rank == x.rank ? w.d[0] : -1;
            mp_status st = window_dims(g, node, &x, k, nsp, false, &out);
            if (st)
                return st;
        }
    }
    int dt = in_dtype(g, n, 0);
    if (qlinear)
        dt = in_dtype(g, n, 7);
    else if (integer)
        dt = MP_DTYPE_INT32;
    mp_status st = mp__out_set(g, node, 0, dt, &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_conv_transpose)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, w, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &w);
    if (x.rank >= 3 && w.rank == x.rank) {
        int32_t nsp = x.rank - 2;
        uint32_t c, cs, cp, cd, co, cpad;
        const int64_t *ks = mp__attr_ints(n, "kernel_shape", &c);
        const int64_t *strides = mp__attr_ints(n, "strides", &cs);
        const int64_t *dil = mp__attr_ints(n, "dilations", &cd);
        const int64_t *opad = mp__attr_ints(n, "output_padding", &cp);
        const int64_t *oshape = mp__attr_ints(n, "output_shape", &co);
        const int64_t *pads = mp__attr_ints(n, "pads", &cpad);
        const char *ap = mp__attr_str(n, "auto_pad", "NOTSET");
        int64_t group = mp__attr_int(n, "group", 1);
        out = x;
        out.d[1] = w.d[1] < 0 ? -1 : w.d[1] * group;
        for (int32_t i = 0; i < nsp; i++) {
            int64_t in = x.d[2 + i];
            if (oshape && co >= (uint32_t)nsp) {
                out.d[2 + i] = oshape[co - (uint32_t)nsp + (uint32_t)i];
                continue;
            }
            int64_t k = ks && c == (uint32_t)nsp ? ks[i] : w.d[2 + i];
            int64_t s = strides && cs == (uint32_t)nsp ? strides[i] : 1;
            int64_t d = dil && cd == (uint32_t)nsp ? dil[i] : 1;
            int64_t op = opad && cp == (uint32_t)nsp ? opad[i] : 0;
            if (in < 0 || k < 0) {
                out.d[2 + i] = -1;
                continue;
            }
            if (strcmp(ap, "SAME_UPPER") == 0 ||
                strcmp(ap, "SAME_LOWER") == 0) {
                out.d[2 + i] = in * s;
                continue;
            }
            int64_t p = pads && cpad == 2u * (uint32_t)nsp
                            ? pads[i] + pads[i + nsp]
                            : 0;
            out.d[2 + i] = s * (in - 1) + op + ((k - 1) * d + 1) - p;
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_pool)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    uint32_t c;
    const int64_t *ks = mp__attr_ints(n, "kernel_shape", &c);
    if (x.rank >= 3 && ks && c == (uint32_t)(x.rank - 2)) {
        out = x;
        mp_status st = window_dims(g, node, &x, ks, x.rank - 2,
                                   mp__attr_int(n, "ceil_mode", 0) != 0, &out);
        if (st)
            return st;
    } else if (x.rank >= 3 && (!ks || c != (uint32_t)(x.rank - 2))) {
        return mp__node_err(g, node, "kernel_shape missing or of the wrong "
                           "length");
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_INT64, &out); /* MaxPool indices */
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_global_pool)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    for (int32_t i = 2; i < x.rank; i++)
        x.d[i] = 1;
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &x);
    return st ? st : mp__shape_done(g, node);
}

/* BatchNormalization, LayerNormalization, InstanceNormalization, ...:
 * output 0 = X; BatchNorm training outputs are per-channel; LayerNorm's
 * Mean and InvStdDev keep the leading dims with 1s after axis. */
MP__SHAPE_FN(mp__shape_norm)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    int dt = in_dtype(g, n, 0);
    mp_status st = mp__out_set(g, node, 0, dt, &x);
    if (st || n->n_out < 2)
        return st ? st : mp__shape_done(g, node);
    if (strcmp(n->op, "BatchNormalization") == 0) {
        mp__shape c = {.rank = 1, .d = {x.rank >= 2 ? x.d[1] : -1}};
        for (uint32_t o = 1; o < n->n_out && !st; o++)
            st = mp__out_set(g, node, o, in_dtype(g, n, 3), &c);
    } else if (x.rank >= 0) {
        int32_t a;
        int stash = (int)mp__attr_int(n, "stash_type", MP_DTYPE_FLOAT32);
        if (!mp__axis(mp__attr_int(n, "axis", -1), x.rank, &a))
            return mp__node_err(g, node, "axis out of range");
        mp__shape m = x;
        for (int32_t i = a; i < x.rank; i++)
            m.d[i] = 1;
        for (uint32_t o = 1; o < n->n_out && !st; o++)
            st = mp__out_set(g, node, o, stash, &m);
    }
    return st ? st : mp__shape_done(g, node);
}

static bool float_values(const mp__tensor *t, double *out, uint32_t cap,
                         uint32_t *cnt)
{
    if (!t || !t->value || t->n_value > cap)
        return false;
    for (uint32_t i = 0; i < t->n_value; i++) {
        if (mp__dtype_is_int(t->dtype))
            out[i] = (double)t->value[i];
        else
            memcpy(&out[i], &t->value[i], sizeof out[i]);
    }
    *cnt = t->n_value;
    return true;
}

/* Resize (inputs X, roi, scales, sizes) and Upsample (X, scales or the
 * scales attribute). */
MP__SHAPE_FN(mp__shape_resize)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    bool upsample = strcmp(n->op, "Upsample") == 0;
    uint32_t na = 0;
    const int64_t *axes = mp__attr_ints(n, "axes", &na);
    double sc[MP_MAX_RANK];
    uint32_t nsc = 0;
    const mp__tensor *scales = mp__in(g, n, upsample ? 1 : (n->n_in >= 3 ? 2 : 1));
    const mp__tensor *sizes = upsample ? NULL : mp__in(g, n, 3);
    const mp__attr *sattr = mp__node_attr(n, "scales");
    if (x.rank >= 0) {
        const int64_t *sv;
        uint32_t sc_n;
        if (sizes && mp__in_value(g, n, 3, &sv, &sc_n)) {
            int64_t rb[MP_MAX_RANK]; /* re-batched sizes (rebatch.h) */
            mp_status rs = axes ? MP_OK
                                : mp__rebatch_operand(g, node, 3,
                                                     MP__REBATCH_DIMS, &x, &sv,
                                                     sc_n, rb);
            if (rs)
                return rs;
            out = x;
            uint32_t k = axes ? na : (uint32_t)x.rank;
            if (sc_n != k)
                return mp__node_err(g, node, "sizes has %u entries",
                                   (unsigned)sc_n);
            for (uint32_t i = 0; i < k; i++) {
                int32_t a;
                if (!mp__axis(axes ? axes[i] : (int64_t)i, x.rank, &a))
                    return mp__node_err(g, node, "axis out of range");
                out.d[a] = sv[i];
            }
            const char *policy =
                mp__attr_str(n, "keep_aspect_ratio_policy", "stretch");
            if (strcmp(policy, "stretch") != 0) {
                double best = 0;
                bool first = true, larger = strcmp(policy, "not_larger");
                for (uint32_t i = 0; i < k; i++) {
                    int32_t a;
                    mp__axis(axes ? axes[i] : (int64_t)i, x.rank, &a);
                    if (x.d[a] <= 0)
                        continue;
                    double r = (double)sv[i] / (double)x.d[a];
                    if (first || (larger ? r > best : r < best))
                        best = r;
                    first = false;
                }
                for (uint32_t i = 0; i < k; i++) {
                    int32_t a;
                    mp__axis(axes ? axes[i] : (int64_t)i, x.rank, &a);
                    if (x.d[a] >= 0 &&
                        !mp__dim_from_double(
                            floor((double)x.d[a] * best + 0.5), &out.d[a]))
                        return mp__node_err(g, node, "scaled dim %d out of "
                                           "range", (int)a);
                }
            }
        } else if ((sattr && sattr->type == MP__ATTR_FLOATS &&
                    sattr->n <= MP_MAX_RANK &&
                    (nsc = sattr->n,
                     memcpy(sc, sattr->v.floats, nsc * sizeof sc[0]), 1)) ||
                   (scales && scales->n_value > 0 &&
                    float_values(scales, sc, MP_MAX_RANK, &nsc))) {
            out = x;
            uint32_t k = axes ? na : (uint32_t)x.rank;
            if (nsc != k)
                return mp__node_err(g, node, "scales has %u entries",
                                   (unsigned)nsc);
            for (uint32_t i = 0; i < k; i++) {
                int32_t a;
                if (!mp__axis(axes ? axes[i] : (int64_t)i, x.rank, &a))
                    return mp__node_err(g, node, "axis out of range");
                out.d[a] = -1;
                if (x.d[a] >= 0 &&
                    !mp__dim_from_double(floor((double)x.d[a] * sc[i]),
                                        &out.d[a]))
                    return mp__node_err(g, node, "scaled dim %d out of range",
                                       (int)a);
            }
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* LSTM, GRU, RNN: Y [seq, dirs, batch, hidden] (layout 0) or
 * [batch, seq, dirs, hidden] (layout 1); Y_h, Y_c [dirs, batch, hidden]. */
MP__SHAPE_FN(mp__shape_rnn)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, y = {.rank = -1}, h = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    int64_t hidden = mp__attr_int(n, "hidden_size", -1);
    const char *dir = mp__attr_str(n, "direction", "forward");
    int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    bool l1 = mp__attr_int(n, "layout", 0) != 0;
    if (hidden < 0) {
        mp__shape r;
        mp__in_shape(g, n, 2, &r);
        if (r.rank == 3)
            hidden = r.d[2];
    }
    if (x.rank == 3) {
        int64_t seq = l1 ? x.d[1] : x.d[0], batch = l1 ? x.d[0] : x.d[1];
        y.rank = 4;
        if (l1) {
            y.d[0] = batch, y.d[1] = seq, y.d[2] = dirs, y.d[3] = hidden;
            h.rank = 3, h.d[0] = batch, h.d[1] = dirs, h.d[2] = hidden;
        } else {
            y.d[0] = seq, y.d[1] = dirs, y.d[2] = batch, y.d[3] = hidden;
            h.rank = 3, h.d[0] = dirs, h.d[1] = batch, h.d[2] = hidden;
        }
    }
    int dt = in_dtype(g, n, 0);
    mp_status st = mp__out_set(g, node, 0, dt, &y);
    for (uint32_t o = 1; o < n->n_out && !st; o++)
        st = mp__out_set(g, node, o, dt, &h);
    return st ? st : mp__shape_done(g, node);
}
