/* ONNX sequences and optionals for the loader: see onnx_seq.h. */
#include "ir.h"

#ifdef MP_WITH_ONNX

#include "onnx_seq.h"
#include "onnx_wire.h"

#include <string.h>

static void shape_of_type(const Onnx__TypeProto__Tensor *tt, mp__shape *s)
{
    s->rank = -1;
    if (!tt || !tt->shape || tt->shape->n_dim > MP_MAX_RANK)
        return;
    s->rank = (int32_t)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        s->d[i] = d && d->value_case ==
                           ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          d->dim_value >= 0
                      ? d->dim_value
                      : -1;
    }
}

/* sequence<tensor>: element type and prototype shape */
static mp__seq *seq_of_seq_type(mp_ctx *ctx, const Onnx__TypeProto *et,
                               int type)
{
    const Onnx__TypeProto__Tensor *tt =
        et && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
            ? et->tensor_type
            : NULL;
    mp__seq *s = mp__seq_new(ctx, type,
                           tt && tt->has_elem_type ? tt->elem_type : 0, -1);
    if (s)
        shape_of_type(tt, &s->elems[0]);
    return s;
}

mp_status mp__onnx_seq_of_type(mp_ctx *ctx, const Onnx__TypeProto *tp,
                              mp__seq **out)
{
    *out = NULL;
    if (!tp)
        return MP_OK;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
        tp->sequence_type) {
        *out = seq_of_seq_type(ctx, tp->sequence_type->elem_type,
                               MP__SEQ_SEQUENCE);
    } else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE &&
               tp->optional_type) {
        const Onnx__TypeProto *et = tp->optional_type->elem_type;
        if (et && et->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
            et->sequence_type) {
            *out = seq_of_seq_type(ctx, et->sequence_type->elem_type,
                                   MP__SEQ_OPTIONAL_SEQUENCE);
        } else {
            const Onnx__TypeProto__Tensor *tt =
                et && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
                    ? et->tensor_type
                    : NULL;
            *out = mp__seq_new(ctx, MP__SEQ_OPTIONAL,
                              tt && tt->has_elem_type ? tt->elem_type : 0, 1);
            if (*out)
                shape_of_type(tt, &(*out)->elems[0]);
        }
    } else {
        return MP_OK;
    }
    return *out ? MP_OK : (ctx->status ? ctx->status : MP_ERR_NOMEM);
}

static void *ctx_alloc(void *c, size_t size)
{
    return mp__alloc((mp_ctx *)c, size ? size : 1);
}

static void ctx_free(void *c, void *p) { mp__dealloc((mp_ctx *)c, p); }

/* dtype and dims of a serialized TensorProto */
static bool tensor_type_of(mp_ctx *ctx, const uint8_t *data, size_t len,
                           uint8_t *dtype, mp__shape *s)
{
    ProtobufCAllocator pa = {ctx_alloc, ctx_free, ctx};
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(&pa, len, data);
    if (!t)
        return false;
    bool ok = t->n_dims <= MP_MAX_RANK;
    if (ok) {
        *dtype = (uint8_t)(t->has_data_type ? t->data_type : 0);
        s->rank = (int32_t)t->n_dims;
        for (size_t i = 0; i < t->n_dims; i++) {
            s->d[i] = t->dims[i];
            if (t->dims[i] < 0)
                ok = false;
        }
    }
    onnx__tensor_proto__free_unpacked(t, &pa);
    return ok;
}

/* the tensor elements (field 3) of a SequenceProto */
static mp_status seq_of_sequence_pb(mp_ctx *ctx, const uint8_t *p, size_t len,
                                    int type, const char *what, mp__seq **out)
{
    mp__wire w = {p, len, 0};
    uint32_t f, cnt = 0;
    const uint8_t *d;
    size_t dl;
    unsigned wt;
    bool bad;
    while (mp__wire_next(&w, &f, &wt, &d, &dl, &bad))
        if (f == 3 && d)
            cnt++;
        else if (f == 5 || f == 6 || f == 7 || (f == 4 && d))
            return mp__err(ctx, MP_ERR_UNSUPPORTED, "%s: a sequence of "
                          "sequences, maps, optionals or sparse tensors",
                          what);
    if (bad)
        return mp__err(ctx, MP_ERR_PARSE, "%s: not a valid SequenceProto",
                      what);
    mp__seq *s = mp__seq_new(ctx, type, 0, (int32_t)cnt);
    if (!s)
        return ctx->status ? ctx->status : MP_ERR_NOMEM;
    s->present = 1;
    w.pos = 0;
    uint32_t i = 0;
    while (mp__wire_next(&w, &f, &wt, &d, &dl, &bad)) {
        if (f != 3 || !d)
            continue;
        uint8_t dt = 0;
        if (!tensor_type_of(ctx, d, dl, &dt, &s->elems[i])) {
            mp__dealloc(ctx, s);
            return mp__err(ctx, MP_ERR_PARSE, "%s: element %u is not a valid "
                          "TensorProto", what, (unsigned)i);
        }
        if (i++ == 0 || s->dtype == 0)
            s->dtype = dt;
    }
    *out = s;
    return MP_OK;
}

mp_status mp__onnx_seq_of_pb(mp_ctx *ctx, const void *data, size_t len,
                            int optional, const char *what, mp__seq **out)
{
    *out = NULL;
    if (!optional)
        return seq_of_sequence_pb(ctx, data, len, MP__SEQ_SEQUENCE, what, out);
    /* OptionalProto: tensor_value (3) or sequence_value (5), or none */
    mp__wire w = {data, len, 0};
    uint32_t f;
    const uint8_t *d;
    size_t dl;
    unsigned wt;
    bool bad;
    while (mp__wire_next(&w, &f, &wt, &d, &dl, &bad)) {
        if (f == 3 && d) {
            mp__seq *s = mp__seq_new(ctx, MP__SEQ_OPTIONAL, 0, 1);
            if (!s)
                return ctx->status ? ctx->status : MP_ERR_NOMEM;
            if (!tensor_type_of(ctx, d, dl, &s->dtype, &s->elems[0])) {
                mp__dealloc(ctx, s);
                return mp__err(ctx, MP_ERR_PARSE, "%s: its tensor is not a "
                              "valid TensorProto", what);
            }
            s->present = 1;
            *out = s;
            return MP_OK;
        }
        if (f == 5 && d)
            return seq_of_sequence_pb(ctx, d, dl, MP__SEQ_OPTIONAL_SEQUENCE,
                                      what, out);
    }
    if (bad)
        return mp__err(ctx, MP_ERR_PARSE, "%s: not a valid OptionalProto",
                      what);
    /* no value */
    *out = mp__seq_new(ctx, MP__SEQ_OPTIONAL, 0, 1);
    if (!*out)
        return ctx->status ? ctx->status : MP_ERR_NOMEM;
    (*out)->present = 0;
    return MP_OK;
}

#endif /* MP_WITH_ONNX */
