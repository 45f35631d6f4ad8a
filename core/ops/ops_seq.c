/* Shape functions of the ONNX sequence and optional ops (SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
 * SequenceLength, SplitToSequence, ConcatFromSequence, Optional,
 * OptionalHasElement, OptionalGetElement) and the helpers that give a
 * tensor of the IR a sequence or optional value (mp__seq, shape.h).
 * SequenceMap, which runs a body per element, is in ops_control.c. */
#include "shape.h"

#include <string.h>

mp__seq *mp__seq_new(mp_ctx *ctx, int type, int dtype, int32_t n)
{
    uint32_t ne = n >= 0 ? (uint32_t)n : 1;
    if (ne > MP__VALUE_MAX) {
        mp__err(ctx, MP_ERR_UNSUPPORTED, "a sequence of %u elements (at most "
               "%u are followed)", ne, MP__VALUE_MAX);
        return NULL;
    }
    mp__seq *s = mp__calloc(ctx, 1, sizeof *s + (size_t)ne * sizeof(mp__shape));
    if (!s)
        return NULL;
    s->type = (uint8_t)type;
    s->dtype = (uint8_t)dtype;
    s->present = type == MP__SEQ_SEQUENCE ? 1 : -1;
    s->n = n;
    s->n_elems = ne;
    for (uint32_t i = 0; i < ne; i++)
        s->elems[i].rank = -1;
    return s;
}

mp__seq *mp__seq_copy(mp_ctx *ctx, const mp__seq *s)
{
    mp__seq *c = mp__seq_new(ctx, s->type, s->dtype, s->n);
    if (!c)
        return NULL;
    c->present = s->present;
    memcpy(c->elems, s->elems, (size_t)s->n_elems * sizeof *c->elems);
    return c;
}

/* bytes of the elements; false when one is unknown */
static bool seq_bytes(const mp__seq *s, uint64_t *out)
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
        int64_t c = mp__shape_numel(&s->elems[i]);
        uint64_t b;
        if (c < 0 || !mp__mul_u64((uint64_t)c, bits, &b) ||
            !mp__add_u64(total, (b + 7) / 8, &total))
            return false;
    }
    *out = total;
    return true;
}

mp_status mp__tensor_take_seq(mp_ctx *ctx, mp__tensor *t, mp__seq *s)
{
    if (!s)
        return ctx->status ? ctx->status : MP_ERR_NOMEM;
    mp__dealloc(ctx, t->seq);
    t->seq = s;
    if (s->dtype != MP_DTYPE_UNDEFINED)
        t->dtype = s->dtype;
    mp_status st = mp__tensor_set_shape(ctx, t, -1, NULL);
    uint64_t b;
    if (!st && !(t->flags & MP__TF_SIZE_KNOWN) && seq_bytes(s, &b)) {
        t->bytes = b;
        t->flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    }
    return st;
}

mp_status mp__out_seq(mp_graph *g, uint32_t node, uint32_t o, mp__seq *s)
{
    const mp__node *n = &g->nodes[node];
    if (o >= n->n_out) {
        mp__dealloc(g->ctx, s);
        return MP_OK;
    }
    mp__tensor *t = &g->tensors[n->outputs[o]];
    /* a shape declared for it (not a hint) says it is a tensor: the
     * declaration and the op disagree, and neither can be trusted */
    if (s && t->rank >= 0 && !t->seq && !(t->flags & MP__TF_SHAPE_HINT)) {
        mp__dealloc(g->ctx, s);
        return mp__node_err(g, node, "output '%s' is a sequence, but the "
                            "graph declares it a tensor of rank %d; leave "
                            "out its shape", t->name, (int)t->rank);
    }
    t->flags &= (uint8_t)~MP__TF_SHAPE_HINT;
    return mp__tensor_take_seq(g->ctx, t, s);
}

/* input i as a sequence (NULL when it is not one) */
static const mp__seq *in_seq(const mp_graph *g, const mp__node *n, uint32_t i,
                            int type)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t && t->seq && t->seq->type == type ? t->seq : NULL;
}

/* a scalar int input's value (a position), or false */
static bool in_scalar(const mp_graph *g, const mp__node *n, uint32_t i,
                      int64_t *v)
{
    const int64_t *p;
    uint32_t c;
    if (!mp__in_value(g, n, i, &p, &c) || c != 1)
        return false;
    *v = p[0];
    return true;
}

static bool same_shape(const mp__shape *a, const mp__shape *b)
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
static void common_shape(const mp__seq *s, mp__shape *out)
{
    *out = s->n_elems ? s->elems[0] : (mp__shape){.rank = -1};
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

MP__SHAPE_FN(mp__shape_seq_empty)
{
    int dt = (int)mp__attr_int(&g->nodes[node], "dtype", MP_DTYPE_FLOAT32);
    mp_status st = mp__out_seq(g, node, 0,
                              mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, dt, 0));
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_seq_construct)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *t0 = mp__in(g, n, 0);
    mp__seq *s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE,
                           t0 ? t0->dtype : MP_DTYPE_UNDEFINED,
                           (int32_t)n->n_in);
    for (uint32_t i = 0; s && i < n->n_in; i++)
        mp__in_shape(g, n, i, &s->elems[i]);
    mp_status st = mp__out_seq(g, node, 0, s);
    return st ? st : mp__shape_done(g, node);
}

/* SequenceInsert(seq, tensor, position?) and SequenceErase(seq,
 * position?): without a position at the end; an unknown position is fine
 * when every element (and the new one) has the same shape. */
static mp_status insert_or_erase(mp_graph *g, uint32_t node, bool insert)
{
    const mp__node *n = &g->nodes[node];
    const mp__seq *in = in_seq(g, n, 0, MP__SEQ_SEQUENCE);
    if (!in || in->n < 0) {
        mp__seq *s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE,
                               in ? in->dtype : MP_DTYPE_UNDEFINED, -1);
        if (s && in)
            common_shape(in, &s->elems[0]);
        if (s && insert) {
            mp__shape t;
            mp__in_shape(g, n, 1, &t);
            if (!in)
                s->elems[0] = t;
            else if (!same_shape(&t, &s->elems[0]))
                s->elems[0].rank = -1;
        }
        mp_status st = mp__out_seq(g, node, 0, s);
        return st ? st : mp__shape_done(g, node);
    }
    int32_t len = in->n;
    if (!insert && len == 0)
        return mp__node_err(g, node, "erases from an empty sequence");
    int64_t pos = insert ? len : len - 1;
    uint32_t pi = insert ? 2 : 1;
    bool known = !mp__in(g, n, pi) || in_scalar(g, n, pi, &pos);
    int64_t lim = insert ? len : len - 1;
    if (known) {
        if (pos < 0)
            pos += len;
        if (pos < 0 || pos > lim)
            return mp__node_err(g, node, "position %lld is outside the "
                               "sequence of %d elements", (long long)pos,
                               (int)len);
    }
    mp__seq *s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, in->dtype,
                           insert ? len + 1 : len - 1);
    if (!s)
        return g->ctx->status ? g->ctx->status : MP_ERR_NOMEM;
    mp__shape t = {.rank = -1};
    if (insert)
        mp__in_shape(g, n, 1, &t);
    if (s->dtype == MP_DTYPE_UNDEFINED && insert && mp__in(g, n, 1))
        s->dtype = mp__in(g, n, 1)->dtype;
    if (!known) {
        /* every slot takes the common shape of all elements */
        mp__shape c;
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
    mp_status st = mp__out_seq(g, node, 0, s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_seq_insert) { return insert_or_erase(g, node, true); }
MP__SHAPE_FN(mp__shape_seq_erase) { return insert_or_erase(g, node, false); }

MP__SHAPE_FN(mp__shape_seq_at)
{
    const mp__node *n = &g->nodes[node];
    const mp__seq *in = in_seq(g, n, 0, MP__SEQ_SEQUENCE);
    if (!in)
        return mp__shape_done(g, node);
    mp__shape s;
    int64_t pos;
    if (in->n >= 0 && in_scalar(g, n, 1, &pos)) {
        if (pos < 0)
            pos += in->n;
        if (pos < 0 || pos >= in->n)
            return mp__node_err(g, node, "position %lld is outside the "
                               "sequence of %d elements", (long long)pos,
                               (int)in->n);
        s = in->elems[pos];
    } else {
        common_shape(in, &s);
    }
    mp_status st = mp__out_set(g, node, 0, in->dtype, &s);
    return st ? st : mp__shape_done(g, node);
}

MP__SHAPE_FN(mp__shape_seq_length)
{
    const mp__node *n = &g->nodes[node];
    const mp__seq *in = in_seq(g, n, 0, MP__SEQ_SEQUENCE);
    mp__shape s = {.rank = 0};
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &s);
    if (!st && in && in->n >= 0) {
        int64_t v = in->n;
        st = mp__out_value(g, node, 0, &v, 1);
    }
    return st ? st : mp__shape_done(g, node);
}

/* SplitToSequence(input, split?; axis, keepdims) */
MP__SHAPE_FN(mp__shape_split_to_seq)
{
    const mp__node *n = &g->nodes[node];
    mp__shape x;
    mp__in_shape(g, n, 0, &x);
    const mp__tensor *in = mp__in(g, n, 0);
    int dt = in ? in->dtype : MP_DTYPE_UNDEFINED;
    int32_t ax = 0;
    mp_status cs;
    if (x.rank >= 0 &&
        (cs = mp__check_axis(g, node, "attribute 'axis'",
                             mp__attr_int(n, "axis", 0), x.rank, &ax)))
        return cs;
    const mp__tensor *split = mp__in(g, n, 1);
    const int64_t *sv = NULL;
    uint32_t sc = 0;
    bool have = split && mp__in_value(g, n, 1, &sv, &sc);
    int64_t len = x.rank >= 0 ? x.d[ax] : -1;
    mp__seq *s = NULL;
    if (x.rank < 0 || len < 0 || (split && !have)) {
        s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, dt, -1);
    } else if (!split) {
        /* one element per index; keepdims 0 drops the axis */
        bool keep = mp__attr_int(n, "keepdims", 1) != 0;
        s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, dt, (int32_t)len);
        mp__shape e = x;
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
            return mp__node_err(g, node, "split must be positive");
        int64_t cnt = (len + sv[0] - 1) / sv[0];
        s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, dt, (int32_t)cnt);
        for (int64_t i = 0; s && i < cnt; i++) {
            s->elems[i] = x;
            s->elems[i].d[ax] = i + 1 < cnt ? sv[0] : len - i * sv[0];
        }
    } else {
        int64_t sum = 0;
        for (uint32_t i = 0; i < sc; i++) {
            if (sv[i] < 0)
                return mp__node_err(g, node, "negative split %lld",
                                   (long long)sv[i]);
            sum += sv[i];
        }
        if (sum != len)
            return mp__node_err(g, node, "splits sum to %lld, the axis has "
                               "%lld", (long long)sum, (long long)len);
        s = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE, dt, (int32_t)sc);
        for (uint32_t i = 0; s && i < sc; i++) {
            s->elems[i] = x;
            s->elems[i].d[ax] = sv[i];
        }
    }
    if (s && s->n < 0 && x.rank >= 0 && !split) {
        s->elems[0] = x;
        s->elems[0].d[ax] = 1;
    }
    mp_status st = mp__out_seq(g, node, 0, s);
    return st ? st : mp__shape_done(g, node);
}

/* ConcatFromSequence(seq; axis, new_axis) */
MP__SHAPE_FN(mp__shape_concat_from_seq)
{
    const mp__node *n = &g->nodes[node];
    const mp__seq *in = in_seq(g, n, 0, MP__SEQ_SEQUENCE);
    if (!in)
        return mp__shape_done(g, node);
    bool stack = mp__attr_int(n, "new_axis", 0) != 0;
    mp__shape c, out = {.rank = -1};
    common_shape(in, &c);
    if (in->n > 0 && c.rank >= 0) {
        int32_t ax;
        mp_status cs = mp__check_axis(g, node, "attribute 'axis'",
                                      mp__attr_int(n, "axis", 0),
                                      c.rank + (stack ? 1 : 0), &ax);
        if (cs)
            return cs;
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
    mp_status st = mp__out_set(g, node, 0, in->dtype, &out);
    return st ? st : mp__shape_done(g, node);
}

/* Optional(input?; type): an optional holding input, or none */
MP__SHAPE_FN(mp__shape_optional)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *in = mp__in(g, n, 0);
    mp__seq *s;
    if (in && in->seq && in->seq->type == MP__SEQ_SEQUENCE) {
        s = mp__seq_copy(g->ctx, in->seq);
        if (s)
            s->type = MP__SEQ_OPTIONAL_SEQUENCE;
    } else {
        s = mp__seq_new(g->ctx, MP__SEQ_OPTIONAL,
                       in ? in->dtype
                          : (int)mp__attr_int(n, "type.elem_type",
                                             MP_DTYPE_UNDEFINED),
                       1);
        if (s && in)
            mp__in_shape(g, n, 0, &s->elems[0]);
    }
    if (s)
        s->present = in ? 1 : 0;
    mp_status st = mp__out_seq(g, node, 0, s);
    return st ? st : mp__shape_done(g, node);
}

/* OptionalHasElement(input?): a bool scalar, folded when known; a plain
 * tensor input counts as present */
MP__SHAPE_FN(mp__shape_optional_has)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *in = mp__in(g, n, 0);
    mp__shape s = {.rank = 0};
    mp_status st = mp__out_set(g, node, 0, MP_DTYPE_BOOL, &s);
    int64_t v = -1;
    if (!in)
        v = 0;
    else if (!in->seq || in->seq->type == MP__SEQ_SEQUENCE)
        v = 1;
    else if (in->seq->present >= 0)
        v = in->seq->present;
    if (!st && v >= 0)
        st = mp__out_value(g, node, 0, &v, 1);
    return st ? st : mp__shape_done(g, node);
}

/* OptionalGetElement(input): the tensor or sequence an optional holds (a
 * plain tensor or sequence passes through) */
MP__SHAPE_FN(mp__shape_optional_get)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *in = mp__in(g, n, 0);
    mp_status st = MP_OK;
    if (!in)
        return mp__node_err(g, node, "has no input");
    if (in->seq && in->seq->present == 0)
        return mp__node_err(g, node, "input '%s' is an optional with no "
                           "value", in->name);
    if (in->seq && in->seq->type != MP__SEQ_OPTIONAL) {
        mp__seq *s = mp__seq_copy(g->ctx, in->seq);
        if (s) {
            s->type = MP__SEQ_SEQUENCE;
            s->present = 1;
        }
        st = mp__out_seq(g, node, 0, s);
    } else {
        mp__shape s;
        if (in->seq)
            s = in->seq->elems[0];
        else
            mp__in_shape(g, n, 0, &s);
        st = mp__out_set(g, node, 0, in->dtype, &s);
    }
    return st ? st : mp__shape_done(g, node);
}
