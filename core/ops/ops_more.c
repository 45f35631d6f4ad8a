/* Shape functions of the less common ops: signal processing (DFT, STFT,
 * windows), Einsum, GatherND, OneHot, GridSample, RoiAlign, attention
 * variants, training optimizers, string and ai.onnx.ml ops, and ops whose
 * output size depends on values (Compress, NonZero, CenterCropPad, ...)
 * that are inferred when those values are constants memplan folded. */
#include "shape.h"

#include <stdio.h>
#include <string.h>

static int in_dtype(const mp_graph *g, const mp__node *n, uint32_t i)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t ? t->dtype : MP_DTYPE_UNDEFINED;
}

/* Scalar (or one-element) int value of input i. */
static bool in_scalar(const mp_graph *g, const mp__node *n, uint32_t i,
                      int64_t *out)
{
    const int64_t *v;
    uint32_t c;
    const mp__tensor *t = mp__in(g, n, i);
    if (!t || !mp__dtype_is_int(t->dtype) || !mp__in_value(g, n, i, &v, &c) ||
        c != 1)
        return false;
    *out = v[0];
    return true;
}

static mp_status all_unknown(mp_graph *g, uint32_t node, int dt)
{
    mp_status st = MP_OK;
    for (uint32_t o = 0; o < g->nodes[node].n_out && !st; o++)
        st = mp__out_set(g, node, o, dt, NULL);
    return st ? st : mp__shape_done(g, node);
}

/* Bernoulli, RandomNormalLike, RandomUniformLike, EyeLike: input 0's
 * shape, dtype from the `dtype` attribute when given. */
MP__SHAPE_FN(mp__shape_like)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status cs = mp__check_dtype(g, node, "dtype", false);
    if (cs)
        return cs;
    if (strcmp(n->op, "EyeLike") == 0 && s.rank >= 0 && s.rank != 2)
        return mp__node_err(g, node, "input '%s' has rank %d: it must be 2",
                           mp__in(g, n, 0)->name, (int)s.rank);
    int dt = (int)mp__attr_int(n, "dtype", in_dtype(g, n, 0));
    mp_status st = mp__out_set(g, node, 0, dt, &s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_bitcast)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    int to = (int)mp__attr_int(n, "to", 0);
    unsigned a = mp_dtype_bits((mp_dtype)in_dtype(g, n, 0));
    unsigned b = mp_dtype_name((mp_dtype)to) ? mp_dtype_bits((mp_dtype)to)
                                             : 0;
    if (!b)
        return mp__node_err(g, node, "attribute 'to' is not a data type (%d)",
                           to);
    if (s.rank >= 0 && a && a != b) {
        if (a > b) { /* one element becomes a/b: a new last dim */
            if (s.rank == MP_MAX_RANK)
                return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                     "rank above %d", MP_MAX_RANK);
            s.d[s.rank++] = a / b;
        } else if (s.rank > 0 && s.d[s.rank - 1] == (int64_t)(b / a)) {
            s.rank--;
        } else {
            return mp__node_err(g, node, "cannot bitcast: the last dim must "
                               "be %u", b / a);
        }
    }
    mp_status st = mp__out_set(g, node, 0, to, &s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_det)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    if (s.rank >= 2)
        s.rank -= 2;
    else if (s.rank >= 0)
        return mp__node_err(g, node, "input of rank %d (needs >= 2)",
                           (int)s.rank);
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_dynamic_quantize)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s, scalar = {.rank = 0};
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_UINT8, &s);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_FLOAT32, &scalar);
    if (!st)
        st = mp__out_set(g, node, 2, MP_DTYPE_UINT8, &scalar);
    return st ? st : mp__shape_done(g, node);
}

/* Adagrad (R, T, X..., G..., H...) -> (X_new..., H_new...); Momentum the
 * same with V; Adam (R, T, X..., G..., V..., H...) -> (X, V, H new). */
/* Gradient (ai.onnx.preview.training): output i is the gradient of y
 * with respect to xs[i], the node's input i: its dtype and shape. */
MP__SHAPE_FN(mp__shape_gradient)
{
    const mp__node *n = &g->nodes[node];
    mp_status st = MP_OK;
    for (uint32_t o = 0; o < n->n_out && !st; o++) {
        if (o >= n->n_in)
            return mp__node_err(g, node, "output %u has no input %u (xs) to "
                               "take its shape from", (unsigned)o,
                               (unsigned)o);
        mp__shape s;
        mp__in_shape(g, n, o, &s);
        st = mp__out_set(g, node, o, in_dtype(g, n, o), &s);
    }
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_optimizer)
{
    const mp__node *n = &g->nodes[node];
    uint32_t groups_in = strcmp(n->op, "Adam") == 0 ? 4 : 3;
    if (n->n_in < 2 + groups_in || (n->n_in - 2) % groups_in)
        return mp__node_err(g, node, "%u inputs: expected 2 + a multiple of "
                           "%u", (unsigned)n->n_in, (unsigned)groups_in);
    uint32_t k = (n->n_in - 2) / groups_in;
    mp_status st = MP_OK;
    for (uint32_t o = 0; o < n->n_out && !st; o++) {
        mp__shape s;
        mp__in_shape(g, n, 2 + o % k, &s);
        st = mp__out_set(g, node, o, in_dtype(g, n, 2 + o % k), &s);
    }
    return st ? st : mp__shape_done(g, node);
}

/* FlexAttention: (Q [B,H,Lq,E], K, V [B,H,Lk,Ev]) -> [B,H,Lq,Ev] */
MP__SHAPE_FN(mp__shape_flex_attention)
{
    const mp__node *n = &g->nodes[node];
    mp__shape q, v;
    mp__in_shape(g, n, 0, &q);
    mp__in_shape(g, n, 2, &v);
    if (q.rank >= 1 && v.rank >= 1)
        q.d[q.rank - 1] = v.d[v.rank - 1];
    else
        q.rank = -1;
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &q);
    return st ? st : mp__shape_done(g, node);
}

/* LinearAttention (query, key, value, past_state, decay, beta):
 * 3D inputs [B, L, heads*D]: output [B, L, Hq*Dv], present_state
 * [B, Hkv, Dk, Dv] (past_state's shape when given). */
MP__SHAPE_FN(mp__shape_linear_attention)
{
    const mp__node *n = &g->nodes[node];
    mp__shape q, k, v, past;
    mp__in_shape(g, n, 0, &q);
    mp__in_shape(g, n, 1, &k);
    mp__in_shape(g, n, 2, &v);
    mp__in_shape(g, n, 3, &past);
    int64_t hq = mp__attr_int(n, "q_num_heads", 1);
    int64_t hkv = mp__attr_int(n, "kv_num_heads", hq);
    if (hq <= 0 || hkv <= 0)
        return mp__node_err(g, node, "head counts must be positive");
    mp__shape out = {.rank = -1}, state = past;
    if (q.rank == 3 && v.rank == 3 && k.rank == 3) {
        int64_t dv = v.d[2] >= 0 ? v.d[2] / hkv : -1;
        int64_t dk = k.d[2] >= 0 ? k.d[2] / hkv : -1;
        out = q;
        out.d[2] = dv >= 0 ? hq * dv : -1;
        if (state.rank < 0) {
            state.rank = 4;
            state.d[0] = q.d[0];
            state.d[1] = hkv;
            state.d[2] = dk;
            state.d[3] = dv;
        }
    } else if (q.rank == 4 && v.rank == 4) { /* [B, H, L, D] */
        out = q;
        out.d[3] = v.d[3];
        if (state.rank < 0 && k.rank == 4) {
            state.rank = 4;
            state.d[0] = q.d[0];
            state.d[1] = k.d[1];
            state.d[2] = k.d[3];
            state.d[3] = v.d[3];
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    if (!st)
        st = mp__out_set(g, node, 1,
                        past.rank >= 0 ? in_dtype(g, n, 3) : in_dtype(g, n, 0),
                        &state);
    return st ? st : mp__shape_done(g, node);
}

/* CausalConvWithState (input [N, C, L...], weight [M, C/group, K], ...):
 * output [N, M, L...] (causal padding keeps the length), present_state
 * [N, C, K-1] (past_state's shape when given). */
MP__SHAPE_FN(mp__shape_causal_conv_state)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, w, past, out = {.rank = -1}, state = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &w);
    mp__in_shape(g, n, 3, &past);
    if (x.rank >= 3 && w.rank == x.rank) {
        out = x;
        out.d[1] = w.d[0];
        state = x;
        for (int32_t i = 2; i < x.rank; i++)
            state.d[i] = w.d[i] >= 1 ? w.d[i] - 1 : -1;
    }
    if (past.rank >= 0)
        state = past;
    int dt = in_dtype(g, n, 0);
    mp_status st = mp__out_set(g, node, 0, dt, &out);
    if (!st)
        st = mp__out_set(g, node, 1, dt, &state);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_tfidf)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    uint32_t c;
    const int64_t *idx = mp__attr_ints(n, "ngram_indexes", &c);
    int64_t k = 0;
    for (uint32_t i = 0; idx && i < c; i++)
        if (idx[i] + 1 > k)
            k = idx[i] + 1;
    if (x.rank == 1 || x.rank == 2) {
        out = x;
        out.d[x.rank - 1] = k;
    }
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_FLOAT32, &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_grid_sample)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, grid, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &grid);
    static const char *const modes[] = {"bilinear", "nearest", "bicubic",
                                        "linear", "cubic", NULL};
    static const char *const pads[] = {"zeros", "border", "reflection", NULL};
    mp_status cs = mp__check_enum(g, node, "mode", "bilinear", modes, NULL);
    if (!cs)
        cs = mp__check_enum(g, node, "padding_mode", "zeros", pads, NULL);
    if (cs)
        return cs;
    if (x.rank >= 0 && grid.rank >= 0 && grid.rank != x.rank)
        return mp__node_err(g, node, "grid '%s' has rank %d, the input %d: "
                           "they must be equal", mp__in(g, n, 1)->name,
                           (int)grid.rank, (int)x.rank);
    if (x.rank >= 3 && grid.rank == x.rank &&
        grid.d[grid.rank - 1] >= 0 && grid.d[grid.rank - 1] != x.rank - 2)
        return mp__node_err(g, node, "grid '%s' has a last dim of %lld: it "
                           "must be the spatial rank %d",
                           mp__in(g, n, 1)->name,
                           (long long)grid.d[grid.rank - 1],
                           (int)x.rank - 2);
    if (x.rank >= 3 && grid.rank == x.rank) {
        out.rank = x.rank;
        out.d[0] = x.d[0];
        out.d[1] = x.d[1];
        for (int32_t i = 2; i < x.rank; i++)
            out.d[i] = grid.d[i - 1];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_roi_align)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, rois, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &rois);
    static const char *const modes[] = {"avg", "max", NULL};
    mp_status cs = mp__check_enum(g, node, "mode", "avg", modes, NULL);
    if (cs)
        return cs;
    static const char *const ctm[] = {"half_pixel", "output_half_pixel",
                                      NULL};
    if ((cs = mp__check_enum(g, node, "coordinate_transformation_mode",
                             "half_pixel", ctm, NULL)))
        return cs;
    static const char *const names[] = {"output_height", "output_width"};
    for (int i = 0; i < 2; i++)
        if (mp__attr_int(n, names[i], 1) < 1)
            return mp__node_err(g, node, "attribute '%s' = %lld: must be >= "
                               "1", names[i],
                               (long long)mp__attr_int(n, names[i], 1));
    if (mp__attr_int(n, "sampling_ratio", 0) < 0)
        return mp__node_err(g, node, "attribute 'sampling_ratio' = %lld: "
                           "must be >= 0",
                           (long long)mp__attr_int(n, "sampling_ratio", 0));
    if (x.rank == 4 && rois.rank == 2) {
        out.rank = 4;
        out.d[0] = rois.d[0];
        out.d[1] = x.d[1];
        out.d[2] = mp__attr_int(n, "output_height", 1);
        out.d[3] = mp__attr_int(n, "output_width", 1);
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* out = indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:] */
MP__SHAPE_FN(mp__shape_gather_nd)
{
    const mp__node *n = &g->nodes[node];
    mp__shape d, ix, out = {.rank = -1};
    mp__in_shape(g, n, 0, &d);
    mp__in_shape(g, n, 1, &ix);
    int64_t b = mp__attr_int(n, "batch_dims", 0);
    if (b < 0 || (d.rank >= 0 && b >= d.rank) || (ix.rank >= 0 && b >= ix.rank))
        return mp__node_err(g, node, "attribute 'batch_dims' = %lld: must be "
                           ">= 0 and below the ranks of data (%d) and "
                           "indices (%d)", (long long)b, (int)d.rank,
                           (int)ix.rank);
    if (d.rank >= 0 && ix.rank >= 0)
        for (int64_t i = 0; i < b; i++)
            if (d.d[i] >= 0 && ix.d[i] >= 0 && d.d[i] != ix.d[i])
                return mp__node_err(g, node, "batch dim %lld: data has %lld, "
                                   "indices %lld: they must be equal",
                                   (long long)i, (long long)d.d[i],
                                   (long long)ix.d[i]);
    if (d.rank >= 1 && ix.rank >= 1 && ix.d[ix.rank - 1] >= 0) {
        int64_t last = ix.d[ix.rank - 1];
        if (b < 0 || b + last > d.rank)
            return mp__node_err(g, node, "indices' last dim %lld with "
                               "batch_dims %lld exceeds the data rank %d",
                               (long long)last, (long long)b, (int)d.rank);
        int64_t r = ix.rank - 1 + d.rank - b - last;
        if (r > MP_MAX_RANK)
            return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                 "output rank above %d", MP_MAX_RANK);
        out.rank = (int32_t)r;
        int32_t k = 0;
        for (int32_t i = 0; i < ix.rank - 1; i++)
            out.d[k++] = ix.d[i];
        for (int64_t i = b + last; i < d.rank; i++)
            out.d[k++] = d.d[i];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_one_hot)
{
    const mp__node *n = &g->nodes[node];
    mp__shape ix, out = {.rank = -1};
    mp__in_shape(g, n, 0, &ix);
    int64_t depth;
    if (ix.rank >= 0 && ix.rank < MP_MAX_RANK) {
        int32_t ax;
        mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", -1),
                                      ix.rank + 1, &ax);
        if (cs)
            return cs;
        const mp__tensor *dt = mp__in(g, n, 1);
        const int64_t *v;
        uint32_t c;
        bool known = false;
        if (dt && mp__in_value(g, n, 1, &v, &c) && c == 1) {
            if (mp__dtype_is_int(dt->dtype)) {
                depth = v[0];
                known = true;
            } else if (dt->dtype == MP_DTYPE_FLOAT32 ||
                       dt->dtype == MP_DTYPE_FLOAT64) {
                double f;
                memcpy(&f, &v[0], sizeof f);
                known = mp__dim_from_double(f, &depth);
            }
        }
        if (known && depth < 1)
            return mp__node_err(g, node, "input 'depth' ('%s') = %lld: must "
                               "be >= 1", dt->name, (long long)depth);
        if (!known && dt && mp__in_value(g, n, 1, &v, &c) && c == 1 &&
            (dt->dtype == MP_DTYPE_FLOAT32 || dt->dtype == MP_DTYPE_FLOAT64))
            return mp__node_err(g, node, "input 'depth' ('%s') is not a "
                               "positive number below 2^62", dt->name);
        out.rank = ix.rank + 1;
        for (int32_t i = 0, k = 0; i < out.rank; i++)
            out.d[i] = i == ax ? (known ? depth : -1) : ix.d[k++];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 2), &out);
    return st ? st : mp__shape_done(g, node);
}

/* Einsum: explicit ("ij,jk->ik") or implicit ("ij,jk") output, with
 * ellipsis broadcasting. */
MP__SHAPE_FN(mp__shape_einsum)
{
    const mp__node *n = &g->nodes[node];
    const char *eq = mp__attr_str(n, "equation", NULL);
    if (!eq)
        return mp__node_err(g, node, "attribute 'equation' missing");
    int64_t letter[52];
    int count[52];
    for (int i = 0; i < 52; i++)
        letter[i] = -2, count[i] = 0;
    mp__shape ell = {.rank = 0};
    bool unknown = false;
    const char *p = eq;
    uint32_t term = 0;
    while (*p && !(p[0] == '-' && p[1] == '>')) {
        mp__shape s;
        mp__in_shape(g, n, term, &s);
        if (term >= n->n_in)
            return mp__node_err(g, node, "equation has more terms than "
                               "inputs");
        /* count the term's letters to place the ellipsis */
        int nl = 0;
        bool has_ell = false;
        for (const char *q = p; *q && *q != ',' && *q != '-'; q++) {
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                nl++;
            else if (*q == '.')
                has_ell = true;
        }
        int32_t ell_rank = s.rank >= 0 ? s.rank - nl : -1;
        if (s.rank >= 0 && (ell_rank < 0 || (!has_ell && ell_rank)))
            return mp__node_err(g, node, "term %u of the equation does not "
                               "match input rank %d", (unsigned)term,
                               (int)s.rank);
        int32_t pos = 0;
        while (*p && *p != ',' && !(p[0] == '-' && p[1] == '>')) {
            char ch = *p;
            if (ch == '.') {
                if (strncmp(p, "...", 3) != 0)
                    return mp__node_err(g, node, "bad ellipsis");
                if (s.rank < 0) {
                    unknown = true;
                } else {
                    mp__shape part = {.rank = ell_rank}, b;
                    for (int32_t i = 0; i < ell_rank; i++)
                        part.d[i] = s.d[pos + i];
                    if (!mp__broadcast(&ell, &part, &b))
                        return mp__node_err(g, node, "ellipsis dims do not "
                                           "broadcast");
                    ell = b;
                    pos += ell_rank;
                }
                p += 3;
                continue;
            }
            int li = (ch >= 'a' && ch <= 'z')   ? ch - 'a'
                     : (ch >= 'A' && ch <= 'Z') ? 26 + ch - 'A'
                                                : -1;
            if (li >= 0) {
                int64_t d = s.rank >= 0 ? s.d[pos] : -1;
                if (d >= 0 && letter[li] >= 0 && d != letter[li] && d != 1 &&
                    letter[li] != 1)
                    return mp__node_err(g, node, "letter '%c' of the "
                                       "equation stands for dims %lld and "
                                       "%lld: they must be equal", ch,
                                       (long long)letter[li], (long long)d);
                if (letter[li] < 0 || letter[li] == 1)
                    letter[li] = d >= 0 || letter[li] == -2 ? d : letter[li];
                count[li]++;
                pos++;
            } else if (ch != ' ') {
                return mp__node_err(g, node, "bad character '%c' in the "
                                   "equation", ch);
            }
            p++;
        }
        term++;
        if (*p == ',')
            p++;
    }
    /* "->x": one term, a scalar (the loop above sees no term) */
    if (term == 0 && p == eq)
        term = 1;
    if (term != n->n_in)
        return mp__node_err(g, node, "attribute 'equation' has %u terms for "
                           "%u inputs: they must be equal", (unsigned)term,
                           (unsigned)n->n_in);
    mp__shape out = {.rank = 0};
    if (p[0] == '-') {
        p += 2;
        bool used[52] = {false};
        for (; *p; p++) {
            if (*p == '.') {
                if (strncmp(p, "...", 3) != 0)
                    return mp__node_err(g, node, "bad ellipsis");
                if (out.rank + ell.rank > MP_MAX_RANK)
                    return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                         "rank above %d", MP_MAX_RANK);
                for (int32_t i = 0; i < ell.rank; i++)
                    out.d[out.rank++] = ell.d[i];
                p += 2;
                continue;
            }
            int li = (*p >= 'a' && *p <= 'z')   ? *p - 'a'
                     : (*p >= 'A' && *p <= 'Z') ? 26 + *p - 'A'
                                                : -1;
            if (li < 0)
                continue;
            if (!count[li])
                return mp__node_err(g, node, "output letter '%c' is not in "
                                   "any input", *p);
            if (used[li])
                return mp__node_err(g, node, "output letter '%c' appears "
                                   "twice", *p);
            used[li] = true;
            if (out.rank == MP_MAX_RANK)
                return mp__node_fail(g, node, MP_ERR_BAD_DIM,
                                     "rank above %d", MP_MAX_RANK);
            out.d[out.rank++] = letter[li] < 0 ? -1 : letter[li];
        }
    } else {
        for (int32_t i = 0; i < ell.rank; i++)
            out.d[out.rank++] = ell.d[i];
        for (int li = 0; li < 52; li++)
            if (count[li] == 1 && out.rank < MP_MAX_RANK)
                out.d[out.rank++] = letter[li] < 0 ? -1 : letter[li];
    }
    if (unknown)
        out.rank = -1;
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* DFT: opset 17 (axis attribute, dft_length input 1); opset >= 20 (inputs
 * dft_length, axis). The last dim becomes 2 (complex); the axis dim is
 * dft_length, halved plus one when onesided. */
MP__SHAPE_FN(mp__shape_dft)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    bool onesided = mp__attr_int(n, "onesided", 0) != 0;
    /* IRFFT (onesided inverse): complex one-sided input, real output of
     * dft_length, by default 2 * (n - 1) */
    bool irfft = onesided && mp__attr_int(n, "inverse", 0) != 0;
    int64_t len = -1;
    bool has_len = mp__in(g, n, 1) != NULL;
    if (has_len && !in_scalar(g, n, 1, &len))
        len = -2; /* given but unknown */
    else if (has_len && len < 1)
        return mp__node_err(g, node, "input 'dft_length' = %lld: must be >= "
                           "1", (long long)len);
    if (s.rank >= 2) {
        bool need_axis = onesided || has_len;
        int64_t axis;
        bool axis_known = true;
        if (g->onnx_opset >= 20 || mp__in(g, n, 2)) {
            axis = -2;
            if (mp__in(g, n, 2) && !in_scalar(g, n, 2, &axis))
                axis_known = false;
        } else {
            axis = mp__attr_int(n, "axis", 1);
        }
        if (need_axis) {
            int32_t ax;
            if (!axis_known) {
                s.rank = -1;
            } else if (!mp__axis(axis, s.rank, &ax) || ax == s.rank - 1) {
                return mp__node_err(g, node, "axis %lld out of range",
                                   (long long)axis);
            } else {
                int64_t l = has_len ? (len >= 0 ? len : -1) : s.d[ax];
                if (l < 0 || (irfft && !has_len && l < 1))
                    s.d[ax] = -1;
                else if (irfft)
                    s.d[ax] = has_len ? l : 2 * (l - 1);
                else
                    s.d[ax] = onesided ? l / 2 + 1 : l;
            }
        }
        if (s.rank >= 0)
            s.d[s.rank - 1] = irfft ? 1 : 2;
    } else if (s.rank >= 0) {
        return mp__node_err(g, node, "input of rank %d (needs >= 2)",
                           (int)s.rank);
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &s);
    return st ? st : mp__shape_done(g, node);
}

/* STFT (signal [B, L, 1|2], frame_step, window, frame_length) ->
 * [B, frames, bins, 2] */
MP__SHAPE_FN(mp__shape_stft)
{
    const mp__node *n = &g->nodes[node];
    mp__shape sig, win, out = {.rank = -1};
    mp__in_shape(g, n, 0, &sig);
    mp__in_shape(g, n, 2, &win);
    int64_t step, flen = -1;
    if (!in_scalar(g, n, 3, &flen) && win.rank == 1)
        flen = win.d[0];
    if (in_scalar(g, n, 1, &step) && step < 1)
        return mp__node_err(g, node, "input 'frame_step' = %lld: must be >= "
                           "1", (long long)step);
    if (flen == 0 || flen < -1)
        return mp__node_err(g, node, "frame length %lld: must be >= 1",
                           (long long)flen);
    if (sig.rank >= 0 && sig.rank != 3)
        return mp__node_err(g, node, "input 'signal' has rank %d: it must be "
                           "3 [batch, length, 1 or 2]", (int)sig.rank);
    if (sig.rank == 3 && sig.d[1] >= 0 && flen > sig.d[1])
        return mp__node_err(g, node, "frame length %lld is longer than the "
                           "signal (%lld)", (long long)flen,
                           (long long)sig.d[1]);
    if (sig.rank == 3 && in_scalar(g, n, 1, &step) && step > 0 && flen > 0 &&
        sig.d[1] >= flen) {
        bool onesided = mp__attr_int(n, "onesided", 1) != 0;
        out.rank = 4;
        out.d[0] = sig.d[0];
        out.d[1] = (sig.d[1] - flen) / step + 1;
        out.d[2] = onesided ? flen / 2 + 1 : flen;
        out.d[3] = 2;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* HannWindow, HammingWindow, BlackmanWindow: [size] */
MP__SHAPE_FN(mp__shape_window)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = 1, .d = {-1}};
    int64_t size;
    if (in_scalar(g, n, 0, &size)) {
        if (size < 0)
            return mp__node_err(g, node, "negative window size %lld",
                               (long long)size);
        out.d[0] = size;
    }
    mp_status st = mp__check_dtype(g, node, "output_datatype", false);
    if (st)
        return st;
    int dt = (int)mp__attr_int(n, "output_datatype", MP_DTYPE_FLOAT32);
    st = mp__out_set(g, node, 0, dt, &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_mel_weight)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = 2, .d = {-1, -1}};
    int64_t bins, dft;
    if (in_scalar(g, n, 0, &bins)) {
        if (bins < 1)
            return mp__node_err(g, node, "input 'num_mel_bins' = %lld: must "
                               "be >= 1", (long long)bins);
        out.d[1] = bins;
    }
    if (in_scalar(g, n, 1, &dft)) {
        if (dft < 1)
            return mp__node_err(g, node, "input 'dft_length' = %lld: must be "
                               ">= 1", (long long)dft);
        out.d[0] = dft / 2 + 1;
    }
    mp_status st = mp__check_dtype(g, node, "output_datatype", false);
    if (st)
        return st;
    int dt = (int)mp__attr_int(n, "output_datatype", MP_DTYPE_FLOAT32);
    st = mp__out_set(g, node, 0, dt, &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_max_unpool)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    const int64_t *v;
    uint32_t c;
    if (mp__in(g, n, 2)) {
        if (mp__in_value(g, n, 2, &v, &c) && c <= MP_MAX_RANK) {
            out.rank = (int32_t)c;
            memcpy(out.d, v, c * sizeof *v);
        }
    } else if (x.rank >= 3) {
        uint32_t nk, ns, np;
        const int64_t *k = mp__attr_ints(n, "kernel_shape", &nk);
        const int64_t *s = mp__attr_ints(n, "strides", &ns);
        const int64_t *pd = mp__attr_ints(n, "pads", &np);
        int32_t sp = x.rank - 2;
        if (!k)
            return mp__node_err(g, node, "attribute 'kernel_shape' is "
                               "missing: it is required (one entry per "
                               "spatial dim)");
        mp_status cs = mp__check_count(g, node, "attribute 'kernel_shape'",
                                       nk, (uint32_t)sp,
                                       "(one per spatial dim)");
        if (!cs)
            cs = mp__check_min(g, node, "attribute 'kernel_shape'", k, nk, 1);
        if (!cs && s)
            cs = mp__check_count(g, node, "attribute 'strides'", ns,
                                 (uint32_t)sp, "(one per spatial dim)");
        if (!cs && s)
            cs = mp__check_min(g, node, "attribute 'strides'", s, ns, 1);
        if (!cs && pd)
            cs = mp__check_count(g, node, "attribute 'pads'", np,
                                 2u * (uint32_t)sp,
                                 "(begin and end of each spatial dim)");
        if (!cs && pd)
            cs = mp__check_min(g, node, "attribute 'pads'", pd, np, 0);
        if (cs)
            return cs;
        out = x;
        for (int32_t i = 0; i < sp; i++) {
            int64_t st_ = s && ns == (uint32_t)sp ? s[i] : 1;
            int64_t pads = 0;
            if (pd && __builtin_add_overflow(pd[i], pd[i + sp], &pads))
                pads = INT64_MAX; /* more than any output */
            int64_t o = -1;
            if (x.d[2 + i] >= 0 &&
                (__builtin_mul_overflow(x.d[2 + i] > 0 ? x.d[2 + i] - 1 : 0,
                                        st_, &o) ||
                 __builtin_add_overflow(o, k[i], &o) ||
                 __builtin_sub_overflow(o, pads, &o)))
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "spatial dim "
                                    "%d: the output size overflows 64 bits",
                                    (int)i);
            if (x.d[2 + i] > 0 && o < 1)
                return mp__node_err(g, node, "spatial dim %d: pads leave an "
                                   "output of %lld: it must be >= 1",
                                   (int)i, (long long)o);
            out.d[2 + i] = x.d[2 + i] == 0 ? 0 : o;
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_compress)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    const int64_t *v;
    uint32_t c;
    if (x.rank >= 0 && mp__in_value(g, n, 1, &v, &c)) {
        int64_t cnt = 0;
        for (uint32_t i = 0; i < c; i++)
            cnt += v[i] != 0;
        const mp__attr *a = mp__node_attr(n, "axis");
        int32_t ax;
        if (!a) {
            out.rank = 1;
            out.d[0] = cnt;
        } else {
            mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                          mp__attr_int(n, "axis", 0), x.rank,
                                          &ax);
            if (cs)
                return cs;
            /* a longer condition is cut to the axis; a true entry past
             * its end selects a slice that does not exist */
            for (uint32_t i = 0; x.d[ax] >= 0 && i < c; i++)
                if (v[i] && (int64_t)i >= x.d[ax])
                    return mp__node_err(g, node, "input 'condition'[%u] is "
                                       "true, past the end of axis %d of "
                                       "the input (%lld)", (unsigned)i,
                                       (int)ax, (long long)x.d[ax]);
            if (x.d[ax] >= 0 && (int64_t)c > x.d[ax]) {
                cnt = 0;
                for (int64_t i = 0; i < x.d[ax]; i++)
                    cnt += v[i] != 0;
            }
            out = x;
            out.d[ax] = cnt;
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_nonzero)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = 2, .d = {-1, -1}};
    mp__in_shape(g, n, 0, &x);
    const int64_t *v;
    uint32_t c;
    if (x.rank >= 0) {
        out.d[0] = x.rank;
        if (mp__in_value(g, n, 0, &v, &c) && mp__dtype_is_int(in_dtype(g, n, 0))) {
            int64_t cnt = 0;
            for (uint32_t i = 0; i < c; i++)
                cnt += v[i] != 0;
            out.d[1] = cnt;
        }
    }
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &out);
    return st ? st : mp__shape_done(g, node);
}

/* CenterCropPad (input, shape) with optional axes */
MP__SHAPE_FN(mp__shape_center_crop_pad)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    const int64_t *v;
    uint32_t c, na;
    const int64_t *axes = mp__attr_ints(n, "axes", &na);
    if (x.rank >= 0 && mp__in_value(g, n, 1, &v, &c)) {
        out = x;
        if (axes && na != c)
            return mp__node_err(g, node, "shape and axes differ in length");
        if (!axes && c != (uint32_t)x.rank)
            return mp__node_err(g, node, "shape needs %d entries",
                               (int)x.rank);
        mp_status cs = axes ? mp__check_axes(g, node, "attribute 'axes'",
                                             axes, na, x.rank, NULL)
                            : MP_OK;
        if (!cs)
            cs = mp__check_min(g, node, "input 'shape'", v, c, 0);
        if (cs)
            return cs;
        for (uint32_t i = 0; i < c; i++) {
            int32_t ax = (int32_t)i;
            if (axes && !mp__axis(axes[i], x.rank, &ax))
                return mp__node_err(g, node, "axis out of range");
            out.d[ax] = v[i];
        }
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* Col2Im (input [N, C*prod(block), L], image_shape, block_shape) */
MP__SHAPE_FN(mp__shape_col2im)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    const int64_t *img, *blk;
    uint32_t ci, cb;
    static const char *const wattrs[] = {"dilations", "strides", "pads"};
    for (int k = 0; k < 3; k++) {
        uint32_t c;
        const int64_t *v = mp__attr_ints(n, wattrs[k], &c);
        char what[40];
        snprintf(what, sizeof what, "attribute '%s'", wattrs[k]);
        mp_status cs = mp__check_min(g, node, what, v, c, k < 2 ? 1 : 0);
        if (cs)
            return cs;
    }
    if (x.rank >= 0 && x.rank != 3)
        return mp__node_err(g, node, "input '%s' has rank %d: it must be 3 "
                           "(N, C x block, L)", mp__in(g, n, 0)->name,
                           (int)x.rank);
    if (x.rank == 3 && mp__in_value(g, n, 1, &img, &ci) &&
        mp__in_value(g, n, 2, &blk, &cb) && ci + 2 <= MP_MAX_RANK) {
        if (ci != cb)
            return mp__node_err(g, node, "inputs 'image_shape' (%u entries) "
                               "and 'block_shape' (%u) differ in length",
                               (unsigned)ci, (unsigned)cb);
        mp_status cs = mp__check_min(g, node, "input 'block_shape'", blk, cb,
                                     1);
        if (!cs)
            cs = mp__check_min(g, node, "input 'image_shape'", img, ci, 1);
        if (cs)
            return cs;
        int64_t prod = 1;
        for (uint32_t i = 0; i < cb; i++)
            if (__builtin_mul_overflow(prod, blk[i], &prod))
                return mp__node_fail(g, node, MP_ERR_OVERFLOW, "the product "
                                    "of 'block_shape' overflows 64 bits");
        if (x.d[1] >= 0 && x.d[1] % prod)
            return mp__node_err(g, node, "input dim 1 (%lld) is not a "
                               "multiple of the block size %lld",
                               (long long)x.d[1], (long long)prod);
        out.rank = (int32_t)ci + 2;
        out.d[0] = x.d[0];
        out.d[1] = x.d[1] >= 0 ? x.d[1] / prod : -1;
        for (uint32_t i = 0; i < ci; i++)
            out.d[2 + i] = img[i];
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* AffineGrid (theta, size [N, C, H, W] or [N, C, D, H, W]) */
MP__SHAPE_FN(mp__shape_affine_grid)
{
    const mp__node *n = &g->nodes[node];
    mp__shape out = {.rank = -1};
    const int64_t *v;
    uint32_t c;
    if (mp__in_value(g, n, 1, &v, &c)) {
        if (c != 4 && c != 5)
            return mp__node_err(g, node, "input 'size' has %u entries: it "
                               "must be 4 (N, C, H, W) or 5 (N, C, D, H, W)",
                               (unsigned)c);
        mp_status cs = mp__check_min(g, node, "input 'size'", v, c, 0);
        if (cs)
            return cs;
        out.rank = (int32_t)c;
        out.d[0] = v[0];
        for (uint32_t i = 2; i < c; i++)
            out.d[i - 1] = v[i];
        out.d[c - 1] = (int64_t)c - 2;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* Outputs whose sizes depend on the data (NonMaxSuppression, Unique,
 * StringSplit's tokens, ImageDecoder, ...): unknown unless declared. */
MP__SHAPE_FN(mp__shape_data_dependent)
{
    return all_unknown(g, node, MP_DTYPE_UNDEFINED);
}

/* Unique (X; axis?) -> (Y, indices, inverse_indices, counts): the count
 * of distinct elements (or slices along axis) depends on the data; it is
 * folded when X's value is known (a constant, or a bound input value). */
MP__SHAPE_FN(mp__shape_unique)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *x = mp__in(g, n, 0);
    mp__shape xs;
    mp__in_shape(g, n, 0, &xs);
    int64_t numel = mp__shape_numel(&xs);
    if (!x || !x->value || numel < 0 || (int64_t)x->n_value != numel)
        return all_unknown(g, node, x ? x->dtype : MP_DTYPE_UNDEFINED);
    /* slices along the axis: len of them, each `size` values (outer
     * blocks of inner runs); no axis: every element alone */
    const mp__attr *aa = mp__node_attr(n, "axis");
    int32_t ax = 0;
    mp_status cs;
    if (aa && (cs = mp__check_axis(g, node, "attribute 'axis'",
                                   mp__attr_int(n, "axis", 0), xs.rank, &ax)))
        return cs;
    int64_t len = aa ? xs.d[ax] : numel, outer = 1, inner = 1;
    for (int32_t k = 0; aa && k < xs.rank; k++)
        if (k < ax)
            outer *= xs.d[k];
        else if (k > ax)
            inner *= xs.d[k];
    int64_t u = 0;
    for (int64_t i = 0; i < len; i++) {
        bool seen = false;
        for (int64_t j = 0; j < i && !seen; j++) {
            bool same = true;
            for (int64_t b = 0; b < outer && same; b++)
                for (int64_t k = 0; k < inner && same; k++)
                    same = mp__value_double(x, (uint32_t)((b * len + i) *
                                                        inner + k)) ==
                           mp__value_double(x, (uint32_t)((b * len + j) *
                                                        inner + k));
            seen = same;
        }
        u += !seen;
    }
    mp__shape y = xs, one = {.rank = 1, .d = {u}}, inv = {.rank = 1,
                                                        .d = {len}};
    if (aa)
        y.d[ax] = u;
    else
        y = one;
    mp_status st = mp__out_set(g, node, 0, x->dtype, &y);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_INT64, &one);
    if (!st)
        st = mp__out_set(g, node, 2, MP_DTYPE_INT64, &inv);
    if (!st)
        st = mp__out_set(g, node, 3, MP_DTYPE_INT64, &one);
    return st ? st : mp__shape_done(g, node);
}

/* RegexFullMatch: bool of the input's shape */
MP__SHAPE_FN(mp__shape_regex_match)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_BOOL, &s);
    return st ? st : mp__shape_done(g, node);
}

/* ai.onnx.ml LabelEncoder: same shape; dtype from the values attribute
 * (a STRINGS attribute is kept as NAME.strings, core/strval.h). */
MP__SHAPE_FN(mp__shape_label_encoder)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    int dt = MP_DTYPE_UNDEFINED;
    if (mp__node_attr(n, "values_int64s"))
        dt = MP_DTYPE_INT64;
    else if (mp__node_attr(n, "values_floats"))
        dt = MP_DTYPE_FLOAT32;
    else if (mp__node_attr(n, "values_strings.strings"))
        dt = MP_DTYPE_STRING;
    else
        dt = (int)mp__attr_int(n, "values_tensor.dtype", MP_DTYPE_UNDEFINED);
    mp_status st = mp__out_set(g, node, 0, dt, &s);
    return st ? st : mp__shape_done(g, node);
}

/* ai.onnx.ml TreeEnsemble: [N, n_targets] */
MP__SHAPE_FN(mp__shape_tree_ensemble)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    if (mp__attr_int(n, "n_targets", 1) < 1)
        return mp__node_err(g, node, "attribute 'n_targets' = %lld: must be "
                           ">= 1", (long long)mp__attr_int(n, "n_targets", 1));
    if (x.rank >= 1) {
        out.rank = 2;
        out.d[0] = x.d[0];
        out.d[1] = mp__attr_int(n, "n_targets", 1);
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}

/* ai.onnx.ml ArrayFeatureExtractor (X [..., C], Y [k]) -> [..., k]; a 1-D
 * X gives [1, k]. */
MP__SHAPE_FN(mp__shape_array_feature)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x, y, out = {.rank = -1};
    mp__in_shape(g, n, 0, &x);
    mp__in_shape(g, n, 1, &y);
    int64_t k = mp__shape_numel(&y);
    if (x.rank == 1) {
        out.rank = 2;
        out.d[0] = 1;
        out.d[1] = k;
    } else if (x.rank >= 2) {
        out = x;
        out.d[x.rank - 1] = k;
    }
    mp_status st = mp__out_set(g, node, 0, in_dtype(g, n, 0), &out);
    return st ? st : mp__shape_done(g, node);
}
