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

static const char *const auto_pads[] = {"NOTSET", "SAME_UPPER",
                                        "SAME_LOWER", "VALID", NULL};

/* strides, dilations and pads of a sliding window over nsp spatial dims:
 * counts, strides and dilations >= 1, pads >= 0, auto_pad one of its four
 * values (the attributes are NULL when absent) */
static mp_status window_attrs(mp_graph *g, uint32_t node, int32_t nsp,
                              const int64_t **strides, const int64_t **dil,
                              const int64_t **pads, const char **ap)
{
    const mp__node *n = &g->nodes[node];
    uint32_t c;
    mp_status st;
    *strides = mp__attr_ints(n, "strides", &c);
    if (*strides &&
        ((st = mp__check_count(g, node, "attribute 'strides'", c,
                               (uint32_t)nsp, "(one per spatial dim)")) ||
         (st = mp__check_min(g, node, "attribute 'strides'", *strides, c,
                             1))))
        return st;
    *dil = mp__attr_ints(n, "dilations", &c);
    if (*dil &&
        ((st = mp__check_count(g, node, "attribute 'dilations'", c,
                               (uint32_t)nsp, "(one per spatial dim)")) ||
         (st = mp__check_min(g, node, "attribute 'dilations'", *dil, c, 1))))
        return st;
    *pads = mp__attr_ints(n, "pads", &c);
    if (*pads &&
        ((st = mp__check_count(g, node, "attribute 'pads'", c,
                               2u * (uint32_t)nsp,
                               "(begin and end of each spatial dim)")) ||
         (st = mp__check_min(g, node, "attribute 'pads'", *pads, c, 0))))
        return st;
    return mp__check_enum(g, node, "auto_pad", "NOTSET", auto_pads, ap);
}

/* Spatial output dims of Conv / pooling. k: kernel dims (nsp entries, -1
 * unknown), from the attribute kernel_shape (k_attr) or the weight. */
static mp_status window_dims(mp_graph *g, uint32_t node, const mp__shape *x,
                             const int64_t *k, bool k_attr, int32_t nsp,
                             bool ceil_mode, mp__shape *out)
{
    const int64_t *strides, *dil, *pads;
    const char *ap;
    mp_status st = window_attrs(g, node, nsp, &strides, &dil, &pads, &ap);
    if (st)
        return st;
    if (k_attr && (st = mp__check_min(g, node, "attribute 'kernel_shape'",
                                      k, (uint32_t)nsp, 1)))
        return st;
    for (int32_t i = 0; i < nsp; i++)
        if (k[i] == 0)
            return mp__node_err(g, node, "the weight's spatial dim %d is 0: "
                               "the kernel must be >= 1", (int)i);
    for (int32_t i = 0; i < nsp; i++) {
        int64_t in = x->d[2 + i];
        int64_t s = strides ? strides[i] : 1, d = dil ? dil[i] : 1;
        if (in < 0 || k[i] < 0) {
            out->d[2 + i] = -1;
            continue;
        }
        int64_t ek, o;
        /* the dilated kernel d * (k - 1) + 1 */
        if (__builtin_mul_overflow(d, k[i] - 1, &ek) ||
            __builtin_add_overflow(ek, 1, &ek))
            return mp__node_fail(g, node, MP_ERR_OVERFLOW, "spatial dim %d: "
                                "the dilated kernel (dilation %lld, kernel "
                                "%lld) overflows 64 bits", (int)i,
                                (long long)d, (long long)k[i]);
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
            o = div_ceil(in, s);
        } else {
            int64_t pb = 0, pe = 0, padded = in;
            if (strcmp(ap, "NOTSET") == 0 && pads) {
                pb = pads[i];
                pe = pads[i + nsp];
            }
            if (__builtin_add_overflow(padded, pb, &padded) ||
                __builtin_add_overflow(padded, pe, &padded))
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "spatial dim "
                                    "%d: input %lld with pads %lld and %lld "
                                    "overflows 64 bits", (int)i,
                                    (long long)in, (long long)pb,
                                    (long long)pe);
            if (padded < ek)
                return mp__node_err(g, node, "spatial dim %d: the kernel "
                                   "(%lld, dilated %lld) is larger than the "
                                   "%sinput (%lld)", (int)i,
                                   (long long)k[i], (long long)ek,
                                   pb || pe ? "padded " : "",
                                   (long long)padded);
            if (ceil_mode) {
                o = div_ceil(padded - ek, s) + 1;
                /* the last window must start inside the input or the
                 * leading padding */
                if ((o - 1) * s >= in + pb)
                    o--;
            } else {
                o = (padded - ek) / s + 1;
            }
        }
        out->d[2 + i] = o;
    }
    return MP_OK;
}

/* The input (0) and weight (wi) shapes of a convolution and its group,
 * checked: group >= 1, the input of rank >= 2 and the weight of the
 * input's rank. */
static mp_status conv_inputs(mp_graph *g, uint32_t node, uint32_t wi,
                             mp__shape *x, mp__shape *w, int64_t *group)
{
    const mp__node *n = &g->nodes[node];
    mp__in_shape(g, n, 0, x);
    mp__in_shape(g, n, wi, w);
    *group = mp__attr_int(n, "group", 1);
    if (*group < 1)
        return mp__node_err(g, node, "attribute 'group' = %lld: must be >= 1",
                           (long long)*group);
    if (x->rank >= 0 && x->rank < 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it needs at "
                           "least 2 (N, C, spatial dims)", mp__in(g, n, 0)->name,
                           (int)x->rank);
    if (x->rank >= 0 && w->rank >= 0 && w->rank != x->rank)
        return mp__node_err(g, node, "weight '%s' has rank %d, the input %d: "
                           "they must be equal", mp__in(g, n, wi)->name,
                           (int)w->rank, (int)x->rank);
    return MP_OK;
}

MP__SHAPE_FN(mp__shape_conv)
{
    const mp__node *n = &g->nodes[node];
    bool qlinear = strcmp(n->op, "QLinearConv") == 0;
    bool integer = strcmp(n->op, "ConvInteger") == 0;
    uint32_t wi = qlinear ? 3 : 1;
    mp__shape x, w, out = {.rank = -1};
    int64_t group;
    mp_status cst = conv_inputs(g, node, wi, &x, &w, &group);
    if (cst)
        return cst;
    if (x.rank >= 2 && w.rank == x.rank) {
        /* input channels = weight channels x group; M a multiple of group */
        int64_t c;
        if (x.d[1] >= 0 && w.d[1] >= 0 &&
            (__builtin_mul_overflow(w.d[1], group, &c) || c != x.d[1]))
            return mp__node_err(g, node, "input '%s' has %lld channels, "
                               "weight '%s' %lld per group x group %lld: "
                               "they must be equal", mp__in(g, n, 0)->name,
                               (long long)x.d[1], mp__in(g, n, wi)->name,
                               (long long)w.d[1], (long long)group);
        if (w.d[0] >= 0 && w.d[0] % group)
            return mp__node_err(g, node, "weight '%s' has %lld output "
                               "channels: not a multiple of group %lld",
                               mp__in(g, n, wi)->name, (long long)w.d[0],
                               (long long)group);
    }
    if (x.rank >= 2) {
        int32_t nsp = x.rank - 2;
        int64_t k[MP_MAX_RANK];
        uint32_t c;
        const int64_t *ks = mp__attr_ints(n, "kernel_shape", &c);
        mp_status st;
        if (ks && (st = mp__check_count(g, node, "attribute 'kernel_shape'",
                                        c, (uint32_t)nsp,
                                        "(one per spatial dim)")))
            return st;
        bool have = true;
        for (int32_t i = 0; i < nsp; i++) {
            if (ks && w.rank == x.rank && w.d[2 + i] >= 0 &&
                ks[i] != w.d[2 + i])
                return mp__node_err(g, node, "attribute 'kernel_shape'[%d] "
                                   "= %lld: the weight '%s' has %lld",
                                   (int)i, (long long)ks[i],
                                   mp__in(g, n, wi)->name,
                                   (long long)w.d[2 + i]);
            if (ks)
                k[i] = ks[i];
            else if (w.rank == x.rank)
                k[i] = w.d[2 + i];
            else
                have = false;
        }
        if (have) {
            out = x;
            out.d[1] = w.rank == x.rank ? w.d[0] : -1;
            st = window_dims(g, node, &x, k, ks != NULL, nsp, false, &out);
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
    int64_t group;
    mp_status cst = conv_inputs(g, node, 1, &x, &w, &group);
    if (cst)
        return cst;
    if (x.rank >= 2 && w.rank == x.rank && x.d[1] >= 0 && w.d[0] >= 0 &&
        x.d[1] != w.d[0])
        return mp__node_err(g, node, "input '%s' has %lld channels, weight "
                           "'%s' %lld: they must be equal",
                           mp__in(g, n, 0)->name, (long long)x.d[1],
                           mp__in(g, n, 1)->name, (long long)w.d[0]);
    if (x.rank >= 2 && w.rank == x.rank) {
        int32_t nsp = x.rank - 2;
        uint32_t c = 0, cp = 0, co = 0;
        const int64_t *strides, *dil, *pads;
        const char *ap;
        mp_status st = window_attrs(g, node, nsp, &strides, &dil, &pads, &ap);
        if (st)
            return st;
        const int64_t *ks = mp__attr_ints(n, "kernel_shape", &c);
        if (ks && ((st = mp__check_count(g, node, "attribute 'kernel_shape'",
                                         c, (uint32_t)nsp,
                                         "(one per spatial dim)")) ||
                   (st = mp__check_min(g, node, "attribute 'kernel_shape'",
                                       ks, c, 1))))
            return st;
        const int64_t *opad = mp__attr_ints(n, "output_padding", &cp);
        if (opad && ((st = mp__check_count(g, node,
                                           "attribute 'output_padding'", cp,
                                           (uint32_t)nsp,
                                           "(one per spatial dim)")) ||
                     (st = mp__check_min(g, node,
                                         "attribute 'output_padding'", opad,
                                         cp, 0))))
            return st;
        const int64_t *oshape = mp__attr_ints(n, "output_shape", &co);
        if (oshape && co != (uint32_t)nsp && co != (uint32_t)x.rank)
            return mp__check_count(g, node, "attribute 'output_shape'", co,
                                   (uint32_t)nsp, "(one per spatial dim)");
        if (oshape && (st = mp__check_min(g, node, "attribute 'output_shape'",
                                          oshape, co, 0)))
            return st;
        out = x;
        if (w.d[1] < 0)
            out.d[1] = -1;
        else if (__builtin_mul_overflow(w.d[1], group, &out.d[1]))
            return mp__node_fail(g, node, MP_ERR_OVERFLOW, "output channels "
                                "%lld x group %lld overflow 64 bits",
                                (long long)w.d[1], (long long)group);
        for (int32_t i = 0; i < nsp; i++) {
            int64_t in = x.d[2 + i];
            int64_t k = ks ? ks[i] : w.d[2 + i];
            int64_t s = strides ? strides[i] : 1;
            int64_t d = dil ? dil[i] : 1;
            int64_t op = opad ? opad[i] : 0;
            if (op >= s && op >= d)
                return mp__node_err(g, node, "attribute 'output_padding'[%d] "
                                   "= %lld: must be less than the stride "
                                   "(%lld) or the dilation (%lld)", (int)i,
                                   (long long)op, (long long)s, (long long)d);
            if (oshape) {
                out.d[2 + i] = oshape[co - (uint32_t)nsp + (uint32_t)i];
                continue;
            }
            if (in < 0 || k < 0) {
                out.d[2 + i] = -1;
                continue;
            }
            if (strcmp(ap, "SAME_UPPER") == 0 ||
                strcmp(ap, "SAME_LOWER") == 0) {
                if (__builtin_mul_overflow(in, s, &out.d[2 + i]))
                    return mp__node_fail(g, node, MP_ERR_OVERFLOW, "spatial "
                                        "dim %d: input %lld x stride %lld "
                                        "overflows 64 bits", (int)i,
                                        (long long)in, (long long)s);
                continue;
            }
            int64_t p = 0, o;
            if (pads && strcmp(ap, "NOTSET") == 0 &&
                __builtin_add_overflow(pads[i], pads[i + nsp], &p))
                p = INT64_MAX; /* more than any output */
            if (in == 0) {
                out.d[2 + i] = 0; /* an empty input stays empty */
                continue;
            }
            /* s * (in - 1) + op + ((k - 1) * d + 1) - p */
            bool ovf = __builtin_mul_overflow(s, in - 1, &o) ||
                       __builtin_add_overflow(o, op, &o);
            int64_t ek = 0;
            ovf = ovf || __builtin_mul_overflow(k > 0 ? k - 1 : 0, d, &ek) ||
                  __builtin_add_overflow(o, ek, &o) ||
                  __builtin_add_overflow(o, k > 0 ? 1 : 0, &o);
            if (ovf)
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "spatial dim "
                                    "%d: the output size (input %lld, "
                                    "stride %lld, kernel %lld, dilation "
                                    "%lld) overflows 64 bits", (int)i,
                                    (long long)in, (long long)s,
                                    (long long)k, (long long)d);
            o -= p;
            if (o < 1)
                return mp__node_err(g, node, "spatial dim %d: the output "
                                   "would be %lld (pads %lld + %lld): it "
                                   "must be >= 1", (int)i, (long long)o,
                                   (long long)(pads ? pads[i] : 0),
                                   (long long)(pads ? pads[i + nsp] : 0));
            out.d[2 + i] = o;
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
    if (x.rank >= 0 && x.rank < 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it needs at "
                           "least 2 (N, C, spatial dims)", mp__in(g, n, 0)->name,
                           (int)x.rank);
    if (x.rank >= 2 && !ks)
        return mp__node_err(g, node, "attribute 'kernel_shape' is missing: "
                           "it is required (one entry per spatial dim)");
    if (x.rank >= 2) {
        mp_status st = mp__check_count(g, node, "attribute 'kernel_shape'", c,
                                       (uint32_t)(x.rank - 2),
                                       "(one per spatial dim)");
        if (st)
            return st;
        out = x;
        st = window_dims(g, node, &x, ks, true, x.rank - 2,
                         mp__attr_int(n, "ceil_mode", 0) != 0, &out);
        if (st)
            return st;
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
    mp_status st;
    int32_t ax;
    if ((strcmp(n->op, "LayerNormalization") == 0 ||
         strcmp(n->op, "RMSNormalization") == 0) && x.rank >= 0 &&
        (st = mp__check_axis(g, node, "attribute 'axis'",
                             mp__attr_int(n, "axis", -1), x.rank, &ax)))
        return st;
    if (strcmp(n->op, "GroupNormalization") == 0) {
        int64_t groups = mp__attr_int(n, "num_groups", 1);
        if (groups < 1)
            return mp__node_err(g, node, "attribute 'num_groups' = %lld: "
                               "must be >= 1", (long long)groups);
        if (x.rank >= 2 && x.d[1] >= 0 && x.d[1] % groups)
            return mp__node_err(g, node, "attribute 'num_groups' = %lld: "
                               "the input's %lld channels are not a "
                               "multiple of it", (long long)groups,
                               (long long)x.d[1]);
    }
    st = mp__out_set(g, node, 0, dt, &x);
    if (st || n->n_out < 2)
        return st ? st : mp__shape_done(g, node);
    if (strcmp(n->op, "BatchNormalization") == 0) {
        mp__shape c = {.rank = 1, .d = {x.rank >= 2 ? x.d[1] : -1}};
        for (uint32_t o = 1; o < n->n_out && !st; o++)
            st = mp__out_set(g, node, o, in_dtype(g, n, 3), &c);
    } else if (x.rank >= 0) {
        int32_t a;
        int stash = (int)mp__attr_int(n, "stash_type", MP_DTYPE_FLOAT32);
        st = mp__check_axis(g, node, "attribute 'axis'",
                            mp__attr_int(n, "axis", -1), x.rank, &a);
        if (st)
            return st;
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
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const umodes[] = {"nearest", "linear", "bilinear",
                                         NULL};
    mp_status cs = mp__check_enum(g, node, "mode", "nearest",
                                  upsample ? umodes : modes, NULL);
    if (cs)
        return cs;
    static const char *const ctms[] = {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
        "align_corners", "asymmetric", "tf_crop_and_resize",
        "tf_half_pixel_for_nn", NULL};
    static const char *const nmodes[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil",
                                         NULL};
    static const char *const policies[] = {"stretch", "not_larger",
                                           "not_smaller", NULL};
    if (!upsample &&
        ((cs = mp__check_enum(g, node, "coordinate_transformation_mode",
                              "half_pixel", ctms, NULL)) ||
         (cs = mp__check_enum(g, node, "nearest_mode", "round_prefer_floor",
                              nmodes, NULL)) ||
         (cs = mp__check_enum(g, node, "keep_aspect_ratio_policy", "stretch",
                              policies, NULL))))
        return cs;
    if (axes && x.rank >= 0 &&
        (cs = mp__check_axes(g, node, "attribute 'axes'", axes, na, x.rank,
                             NULL)))
        return cs;
    /* scales or sizes, not both (an empty tensor stands for absent) */
    if (scales && sizes && scales->rank == 1 && scales->dims[0] > 0 &&
        sizes->rank == 1 && sizes->dims[0] > 0)
        return mp__node_err(g, node, "inputs 'scales' ('%s') and 'sizes' "
                           "('%s') are both given: only one may be",
                           scales->name, sizes->name);
    {
        double sv[MP_MAX_RANK];
        uint32_t ns = 0;
        if ((sattr && sattr->type == MP__ATTR_FLOATS &&
             sattr->n <= MP_MAX_RANK &&
             (ns = sattr->n, memcpy(sv, sattr->v.floats, ns * sizeof sv[0]),
              1)) ||
            (scales && scales->n_value > 0 &&
             float_values(scales, sv, MP_MAX_RANK, &ns)))
            for (uint32_t i = 0; i < ns; i++)
                if (!(sv[i] > 0))
                    return mp__node_err(g, node, "%s 'scales'[%u] = %g: "
                                       "must be > 0",
                                       sattr ? "attribute" : "input",
                                       (unsigned)i, sv[i]);
        const int64_t *zv;
        uint32_t zc;
        if (sizes && mp__in_value(g, n, 3, &zv, &zc) &&
            (cs = mp__check_min(g, node, "input 'sizes'", zv, zc, 0)))
            return cs;
    }
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
    static const char *const dirs_ok[] = {"forward", "reverse",
                                          "bidirectional", NULL};
    const char *dir;
    mp_status cs = mp__check_enum(g, node, "direction", "forward", dirs_ok,
                                  &dir);
    if (cs)
        return cs;
    if (mp__node_attr(n, "hidden_size") && hidden < 1)
        return mp__node_err(g, node, "attribute 'hidden_size' = %lld: must be "
                           ">= 1", (long long)hidden);
    if (x.rank >= 0 && x.rank != 3)
        return mp__node_err(g, node, "input '%s' has rank %d: it must be 3",
                           mp__in(g, n, 0)->name, (int)x.rank);
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
