/* Shape functions of the ONNX sequence and optional ops (SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
 * SequenceLength, SplitToSequence, ConcatFromSequence, Optional,
 * OptionalHasElement, OptionalGetElement) and the helpers that give a
 * tensor of the IR a sequence or optional value (mp_seq, shape.h).
 * SequenceMap, which runs a body per element, is in ops_control.c. */
#include "shape.h"

#include <string.h>

mp_seq *mp_seq_new(mp_ctx *ctx, int type, int dtype, int32_t n)
{
    uint32_t ne = n >= 0 ? (uint32_t)n : 1;
    if (ne > MP_VALUE_MAX) {
        mp_err(ctx, MP_ERR_UNSUPPORTED, "a sequence of %u elements (at most "
               "%u are followed)", ne, MP_VALUE_MAX);
        return NULL;
    }
    mp_seq *s = mp_calloc(ctx, 1, sizeof *s + (size_t)ne * sizeof(mp_shape));
    if (!s)
        return NULL;
    s->type = (uint8_t)type;
    s->dtype = (uint8_t)dtype;
    s->present = type == MP_SEQ_SEQUENCE ? 1 : -1;
    s->n = n;
    s->n_elems = ne;
    for (uint32_t i = 0; i < ne; i++)
        s->elems[i].rank = -1;
    return s;
}

mp_seq *mp_seq_copy(mp_ctx *ctx, const mp_seq *s)
{
    mp_seq *c = mp_seq_new(ctx, s->type, s->dtype, s->n);
    if (!c)
        return NULL;
    c->present = s->present;
    memcpy(c->elems, s->elems, (size_t)s->n_elems * sizeof *c->elems);
    return c;
}

/* bytes of the elements; false when one is unknown */
static bool seq_bytes(const mp_seq *s, uint64_t *out)
{
    if (s->present == 0) {
        *out = 0;
        return true;
    }
    unsigned bits = mp_dtype_bits((mp_dtype)s->dtype);
    if (s->n < 0 || !bits)
        return false;
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->n_elems; i++) {
        int64_t c = mp_shape_numel(&s->elems[i]);
        uint64_t b;
        if (c < 0 || !mp_mul_u64((uint64_t)c, bits, &b) ||
            !mp_add_u64(total, (b + 7) / 8, &total))
            return false;
    }
    *out = total;
    return true;
}

mp_status mp_tensor_take_seq(mp_ctx *ctx, mp_tensor *t, mp_seq *s)
{
    if (!s)
        return ctx->status ? ctx->status : MP_ERR_NOMEM;
    mp_dealloc(ctx, t->seq);
    t->seq = s;
    if (s->dtype != MP_DTYPE_UNDEFINED)
        t->dtype = s->dtype;
    mp_status st = mp_tensor_set_shape(ctx, t, -1, NULL);
    uint64_t b;
    if (!st && !(t->flags & MP_TF_SIZE_KNOWN) && seq_bytes(s, &b)) {
        t->bytes = b;
        t->flags |= MP_TF_SIZE_KNOWN | MP_TF_BYTES_GIVEN;
    }
    return st;
}

mp_status mp_out_seq(mp_graph *g, uint32_t node, uint32_t o, mp_seq *s)
{
    const mp_node *n = &g->nodes[node];
    if (o >= n->n_out) {
        mp_dealloc(g->ctx, s);
        return MP_OK;
    }
    return mp_tensor_take_seq(g->ctx, &g->tensors[n->outputs[o]], s);
}

/* input i as a sequence (NULL when it is not one) */
static const mp_seq *in_seq(const mp_graph *g, const mp_node *n, uint32_t i,
                            int type)
{
    const mp_tensor *t = mp_in(g, n, i);
    return t && t->seq && t->seq->type == type ? t->seq : NULL;
}

/* a scalar int input's value (a position), or false */
static bool in_scalar(const mp_graph *g, const mp_node *n, uint32_t i,
                      int64_t *v)
{
    const int64_t *p;
    uint32_t c;
    if (!mp_in_value(g, n, i, &p, &c) || c != 1)
        return false;
    *v = p[0];
    return true;
}

static bool same_shape(const mp_shape *a, const mp_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i])
            return false;
    return true;
}

/* The shape every element of s has, as far as known (rank -1 when the
 * ranks differ; a dim that differs is -1). */
static void common_shape(const mp_seq *s, mp_shape *out)
{
    *out = s->n_elems ? s->elems[0] : (mp_shape){.rank = -1};
    for (uint32_t k = 1; k < s->n_elems; k++) {
        if (s->elems[k].rank != out->rank) {
            out->rank = -1;
            return;
        }
        for (int32_t i = 0; i < out->rank; i++)
            if (s->elems[k].d[i] != out->d[i])
                out->d[i] = -1;
    }
}

MP_SHAPE_FN(mp_shape_seq_empty)
{
    int dt = (int)mp_attr_int(&g->nodes[node], "dtype", MP_DTYPE_FLOAT32);
    mp_status st = mp_out_seq(g, node, 0,
                              mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, dt, 0));
    return st ? st : mp_shape_done(g, node);
}

MP_SHAPE_FN(mp_shape_seq_construct)
{
    const mp_node *n = &g->nodes[node];
    const mp_tensor *t0 = mp_in(g, n, 0);
    mp_seq *s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE,
                           t0 ? t0->dtype : MP_DTYPE_UNDEFINED,
                           (int32_t)n->n_in);
    for (uint32_t i = 0; s && i < n->n_in; i++)
        mp_in_shape(g, n, i, &s->elems[i]);
    mp_status st = mp_out_seq(g, node, 0, s);
    return st ? st : mp_shape_done(g, node);
}

/* SequenceInsert(seq, tensor, position?) and SequenceErase(seq,
 * position?): without a position at the end; an unknown position is fine
 * when every element (and the new one) has the same shape. */
static mp_status insert_or_erase(mp_graph *g, uint32_t node, bool insert)
{
    const mp_node *n = &g->nodes[node];
    const mp_seq *in = in_seq(g, n, 0, MP_SEQ_SEQUENCE);
    if (!in || in->n < 0) {
        mp_seq *s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE,
                               in ? in->dtype : MP_DTYPE_UNDEFINED, -1);
        if (s && in)
            common_shape(in, &s->elems[0]);
        if (s && insert) {
            mp_shape t;
            mp_in_shape(g, n, 1, &t);
            if (!in)
                s->elems[0] = t;
            else if (!same_shape(&t, &s->elems[0]))
                s->elems[0].rank = -1;
        }
        mp_status st = mp_out_seq(g, node, 0, s);
        return st ? st : mp_shape_done(g, node);
    }
    int32_t len = in->n;
    if (!insert && len == 0)
        return mp_node_err(g, node, "erases from an empty sequence");
    int64_t pos = insert ? len : len - 1;
    uint32_t pi = insert ? 2 : 1;
    bool known = !mp_in(g, n, pi) || in_scalar(g, n, pi, &pos);
    int64_t lim = insert ? len : len - 1;
    if (known) {
        if (pos < 0)
            pos += len;
        if (pos < 0 || pos > lim)
            return mp_node_err(g, node, "position %lld is outside the "
                               "sequence of %d elements", (long long)pos,
                               (int)len);
    }
    mp_seq *s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, in->dtype,
                           insert ? len + 1 : len - 1);
    if (!s)
        return g->ctx->status ? g->ctx->status : MP_ERR_NOMEM;
    mp_shape t = {.rank = -1};
    if (insert)
        mp_in_shape(g, n, 1, &t);
    if (s->dtype == MP_DTYPE_UNDEFINED && insert && mp_in(g, n, 1))
        s->dtype = mp_in(g, n, 1)->dtype;
    if (!known) {
        /* every slot takes the common shape of all elements */
        mp_shape c;
        common_shape(in, &c);
        if (insert && len && !same_shape(&c, &t))
            c.rank = -1;
        else if (insert && !len)
            c = t;
        for (uint32_t i = 0; i < s->n_elems; i++)
            s->elems[i] = c;
    } else {
        uint32_t j = 0;
        for (int32_t i = 0; i < len; i++) {
            if (i == pos && insert)
                s->elems[j++] = t;
            if (i != pos || insert)
                s->elems[j++] = in->elems[i];
        }
        if (insert && pos == len)
            s->elems[j] = t;
    }
    mp_status st = mp_out_seq(g, node, 0, s);
    return st ? st : mp_shape_done(g, node);
}

MP_SHAPE_FN(mp_shape_seq_insert) { return insert_or_erase(g, node, true); }
MP_SHAPE_FN(mp_shape_seq_erase) { return insert_or_erase(g, node, false); }

MP_SHAPE_FN(mp_shape_seq_at)
{
    const mp_node *n = &g->nodes[node];
    const mp_seq *in = in_seq(g, n, 0, MP_SEQ_SEQUENCE);
    if (!in)
        return mp_shape_done(g, node);
    mp_shape s;
    int64_t pos;
    if (in->n >= 0 && in_scalar(g, n, 1, &pos)) {
        if (pos < 0)
            pos += in->n;
        if (pos < 0 || pos >= in->n)
            return mp_node_err(g, node, "position %lld is outside the "
                               "sequence of %d elements", (long long)pos,
                               (int)in->n);
        s = in->elems[pos];
    } else {
        common_shape(in, &s);
    }
    mp_status st = mp_out_set(g, node, 0, in->dtype, &s);
    return st ? st : mp_shape_done(g, node);
}

MP_SHAPE_FN(mp_shape_seq_length)
{
    const mp_node *n = &g->nodes[node];
    const mp_seq *in = in_seq(g, n, 0, MP_SEQ_SEQUENCE);
    mp_shape s = {.rank = 0};
    mp_status st = mp_out_set(g, node, 0, MP_DTYPE_INT64, &s);
    if (!st && in && in->n >= 0) {
        int64_t v = in->n;
        st = mp_out_value(g, node, 0, &v, 1);
    }
    return st ? st : mp_shape_done(g, node);
}

/* SplitToSequence(input, split?; axis, keepdims) */
MP_SHAPE_FN(mp_shape_split_to_seq)
{
    const mp_node *n = &g->nodes[node];
    mp_shape x;
    mp_in_shape(g, n, 0, &x);
    const mp_tensor *in = mp_in(g, n, 0);
    int dt = in ? in->dtype : MP_DTYPE_UNDEFINED;
    int32_t ax = 0;
    if (x.rank >= 0 && !mp_axis(mp_attr_int(n, "axis", 0), x.rank, &ax))
        return mp_node_err(g, node, "axis out of range");
    const mp_tensor *split = mp_in(g, n, 1);
    const int64_t *sv = NULL;
    uint32_t sc = 0;
    bool have = split && mp_in_value(g, n, 1, &sv, &sc);
    int64_t len = x.rank >= 0 ? x.d[ax] : -1;
    mp_seq *s = NULL;
    if (x.rank < 0 || len < 0 || (split && !have)) {
        s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, dt, -1);
    } else if (!split) {
        /* one element per index; keepdims 0 drops the axis */
        bool keep = mp_attr_int(n, "keepdims", 1) != 0;
        s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, dt, (int32_t)len);
        mp_shape e = x;
        if (keep) {
            e.d[ax] = 1;
        } else {
            for (int32_t k = ax; k + 1 < e.rank; k++)
                e.d[k] = e.d[k + 1];
            e.rank--;
        }
        for (uint32_t i = 0; s && i < s->n_elems; i++)
            s->elems[i] = e;
    } else if (split->rank == 0) {
        /* chunks of sv[0], the last one smaller */
        if (sc != 1 || sv[0] <= 0)
            return mp_node_err(g, node, "split must be positive");
        int64_t cnt = (len + sv[0] - 1) / sv[0];
        s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, dt, (int32_t)cnt);
        for (int64_t i = 0; s && i < cnt; i++) {
            s->elems[i] = x;
            s->elems[i].d[ax] = i + 1 < cnt ? sv[0] : len - i * sv[0];
        }
    } else {
        int64_t sum = 0;
        for (uint32_t i = 0; i < sc; i++) {
            if (sv[i] < 0)
                return mp_node_err(g, node, "negative split %lld",
                                   (long long)sv[i]);
            sum += sv[i];
        }
        if (sum != len)
            return mp_node_err(g, node, "splits sum to %lld, the axis has "
                               "%lld", (long long)sum, (long long)len);
        s = mp_seq_new(g->ctx, MP_SEQ_SEQUENCE, dt, (int32_t)sc);
        for (uint32_t i = 0; s && i < sc; i++) {
            s->elems[i] = x;
            s->elems[i].d[ax] = sv[i];
        }
    }
    if (s && s->n < 0 && x.rank >= 0 && !split) {
        s->elems[0] = x;
        s->elems[0].d[ax] = 1;
    }
    mp_status st = mp_out_seq(g, node, 0, s);
    return st ? st : mp_shape_done(g, node);
}

/* ConcatFromSequence(seq; axis, new_axis) */
MP_SHAPE_FN(mp_shape_concat_from_seq)
{
    const mp_node *n = &g->nodes[node];
    const mp_seq *in = in_seq(g, n, 0, MP_SEQ_SEQUENCE);
    if (!in)
        return mp_shape_done(g, node);
    bool stack = mp_attr_int(n, "new_axis", 0) != 0;
    mp_shape c, out = {.rank = -1};
    common_shape(in, &c);
    if (in->n > 0 && c.rank >= 0) {
        int32_t ax;
        if (!mp_axis(mp_attr_int(n, "axis", 0), c.rank + (stack ? 1 : 0),
                     &ax))
            return mp_node_err(g, node, "axis out of range");
        out = c;
        if (stack) {
            for (int32_t k = c.rank; k > ax; k--)
                out.d[k] = out.d[k - 1];
            out.rank++;
            out.d[ax] = in->n;
        } else {
            int64_t sum = 0;
            for (uint32_t i = 0; i < in->n_elems; i++)
                sum = sum < 0 || in->elems[i].d[ax] < 0
                          ? -1
                          : sum + in->elems[i].d[ax];
            out.d[ax] = sum;
        }
    }
    mp_status st = mp_out_set(g, node, 0, in->dtype, &out);
    return st ? st : mp_shape_done(g, node);
}

/* Optional(input?; type): an optional holding input, or none */
MP_SHAPE_FN(mp_shape_optional)
{
    const mp_node *n = &g->nodes[node];
    const mp_tensor *in = mp_in(g, n, 0);
    mp_seq *s;
    if (in && in->seq && in->seq->type == MP_SEQ_SEQUENCE) {
        s = mp_seq_copy(g->ctx, in->seq);
        if (s)
            s->type = MP_SEQ_OPTIONAL_SEQUENCE;
    } else {
        s = mp_seq_new(g->ctx, MP_SEQ_OPTIONAL,
                       in ? in->dtype
                          : (int)mp_attr_int(n, "type.elem_type",
                                             MP_DTYPE_UNDEFINED),
                       1);
        if (s && in)
            mp_in_shape(g, n, 0, &s->elems[0]);
    }
    if (s)
        s->present = in ? 1 : 0;
    mp_status st = mp_out_seq(g, node, 0, s);
    return st ? st : mp_shape_done(g, node);
}

/* OptionalHasElement(input?): a bool scalar, folded when known; a plain
 * tensor input counts as present */
MP_SHAPE_FN(mp_shape_optional_has)
{
    const mp_node *n = &g->nodes[node];
    const mp_tensor *in = mp_in(g, n, 0);
    mp_shape s = {.rank = 0};
    mp_status st = mp_out_set(g, node, 0, MP_DTYPE_BOOL, &s);
    int64_t v = -1;
    if (!in)
        v = 0;
    else if (!in->seq || in->seq->type == MP_SEQ_SEQUENCE)
        v = 1;
    else if (in->seq->present >= 0)
        v = in->seq->present;
    if (!st && v >= 0)
        st = mp_out_value(g, node, 0, &v, 1);
    return st ? st : mp_shape_done(g, node);
}

/* OptionalGetElement(input): the tensor or sequence an optional holds (a
 * plain tensor or sequence passes through) */
MP_SHAPE_FN(mp_shape_optional_get)
{
    const mp_node *n = &g->nodes[node];
    const mp_tensor *in = mp_in(g, n, 0);
    mp_status st = MP_OK;
    if (!in)
        return mp_node_err(g, node, "has no input");
    if (in->seq && in->seq->present == 0)
        return mp_node_err(g, node, "input '%s' is an optional with no "
                           "value", in->name);
    if (in->seq && in->seq->type != MP_SEQ_OPTIONAL) {
        mp_seq *s = mp_seq_copy(g->ctx, in->seq);
        if (s) {
            s->type = MP_SEQ_SEQUENCE;
            s->present = 1;
        }
        st = mp_out_seq(g, node, 0, s);
    } else {
        mp_shape s;
        if (in->seq)
            s = in->seq->elems[0];
        else
            mp_in_shape(g, n, 0, &s);
        st = mp_out_set(g, node, 0, in->dtype, &s);
    }
    return st ? st : mp_shape_done(g, node);
}
