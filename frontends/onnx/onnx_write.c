/* ONNX writer: an mp_graph as an ONNX ModelProto, packed with the
 * protobuf-c code generated at build time (the same code the loader in
 * frontends/onnx/onnx.c reads with). See docs/onnx.md, "Writing ONNX".
 *
 * - tensors of declared kind input (no producer) become graph inputs;
 *   weights, constants and optimizer state initializers; graph outputs and
 *   every other tensor whose dtype or shape is known get a type (graph
 *   output or value_info), so that the loader finds the same shapes;
 * - dims unknown in the IR are written as dim_param "TENSOR:AXIS" on graph
 *   inputs (bind it with --dim TENSOR:AXIS=V) and as dims without a value
 *   elsewhere; a tensor known only by its byte size is written as a 1-d
 *   tensor of that many elements (uint8 when its dtype does not divide it);
 * - an initializer whose values the IR holds (small integer tensors of
 *   shape arithmetic, tiny float tensors) is written with its data; any
 *   other keeps dims and dtype only, its data marked EXTERNAL at the
 *   placeholder location MP__ONNX_NO_DATA (the loader never opens external
 *   data; other tools report the missing file);
 * - node attributes: int, float, string, ints, floats as they are; the
 *   loader's tensor attributes (NAME.dtype, NAME.dims, NAME.ints) as one
 *   TENSOR attribute NAME; subgraphs (NAME.graph) as GRAPH attributes with
 *   the bodies written recursively; the loader's bookkeeping (body.inputs,
 *   the extra inputs a body takes from outer scopes, NODE:body and
 *   NODE:omittedI outputs) is undone;
 * - a Constant node is written with a "value" tensor built from its output
 *   (unless it has a value_* attribute);
 * - opset import: the default domain at the graph's opset (17 when the
 *   graph has none: a JSON graph), other domains used at version 1; the IR
 *   version is the one that goes with the opset. */
#include "ir.h"
#include "shape.h"
#include "strval.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifndef MP_WITH_ONNX

mp_status mp_graph_to_onnx(const mp_graph *g, void **data, size_t *len)
{
    if (data)
        *data = NULL;
    if (len)
        *len = 0;
    if (!g)
        return MP_ERR_INVALID_ARG;
    return mp__err(g->ctx, MP_ERR_UNSUPPORTED,
                  "this memplan was built without ONNX support (it needs "
                  "protoc-c, libprotobuf-c and libonnx-dev at build time)");
}

mp_status mp_graph_save_onnx(const mp_graph *g, const char *path)
{
    void *d;
    size_t n;
    (void)path;
    return mp_graph_to_onnx(g, &d, &n);
}

#else /* MP_WITH_ONNX */

#include "onnx.pb-c.h"

#define MP__ONNX_NO_DATA "memplan-no-data"
#define DEFAULT_OPSET 17

/* Every message and array is allocated here and released at once. */
typedef struct blk {
    struct blk *next;
    max_align_t data[];
} blk;

typedef struct wr {
    mp_ctx *ctx;
    blk *blocks;
    mp_status st;
    /* domains used by the nodes (other than the default) */
    const char **domains;
    size_t n_domains, cap_domains;
} wr;

static void *w_new(wr *w, size_t count, size_t size)
{
    if (w->st)
        return NULL;
    size_t n;
    if (__builtin_mul_overflow(count ? count : 1, size ? size : 1, &n) ||
        n > SIZE_MAX - sizeof(blk)) {
        w->st = mp__err(w->ctx, MP_ERR_OVERFLOW, "ONNX writer: too large");
        return NULL;
    }
    blk *b = mp__calloc(w->ctx, 1, sizeof(blk) + n);
    if (!b) {
        w->st = MP_ERR_NOMEM;
        return NULL;
    }
    b->next = w->blocks;
    w->blocks = b;
    return b->data;
}

static void w_free(wr *w)
{
    while (w->blocks) {
        blk *b = w->blocks;
        w->blocks = b->next;
        mp__dealloc(w->ctx, b);
    }
    mp__dealloc(w->ctx, w->domains);
}

static char *w_fmt(wr *w, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = w_new(w, la + lb + 1, 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* ---- tensor types ---------------------------------------------------------- */

/* The dims and dtype to write: the IR's, or for a tensor known only by its
 * byte size, one dim of that many elements. *rank -1: no shape. */
static void written_shape(const mp__tensor *t, int *dtype, int *rank,
                          int64_t *dims)
{
    *dtype = t->dtype;
    *rank = t->rank;
    if (t->rank >= 0) {
        for (int32_t i = 0; i < t->rank; i++)
            dims[i] = t->dims[i];
        if (mp__tensor_shape_known(t) || !(t->flags & MP__TF_BYTES_GIVEN))
            return;
    }
    if (!(t->flags & MP__TF_BYTES_GIVEN) || t->bytes > (uint64_t)INT64_MAX)
        return;
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    *rank = 1;
    if (bits >= 8 && bits % 8 == 0 && t->bytes % (bits / 8) == 0) {
        dims[0] = (int64_t)(t->bytes / (bits / 8));
    } else {
        *dtype = MP_DTYPE_UINT8;
        dims[0] = (int64_t)t->bytes;
    }
}

static Onnx__TypeProto *w_tensor_type(wr *w, const mp__tensor *t, bool input,
                                      int dtype, int rank,
                                      const int64_t *dims);

/* A sequence or optional value: its element type, with the elements'
 * shape where they all have one (dims that differ written unknown). */
static Onnx__TypeProto *w_seq_type(wr *w, const mp__tensor *t)
{
    const mp__seq *q = t->seq;
    int rank = -1;
    int64_t dims[MP_MAX_RANK];
    for (uint32_t e = 0; e < q->n_elems; e++) {
        const mp__shape *sh = &q->elems[e];
        if (e == 0) {
            rank = sh->rank;
            for (int32_t k = 0; k < rank; k++)
                dims[k] = sh->d[k];
        } else if (sh->rank != rank) {
            rank = -1;
            break;
        } else {
            for (int32_t k = 0; k < rank; k++)
                if (dims[k] != sh->d[k])
                    dims[k] = -1;
        }
    }
    Onnx__TypeProto *tp = w_tensor_type(w, t, false, q->dtype, rank, dims);
    for (int level = 0; level < 2 && tp; level++) {
        bool seq = level == 0 && q->type != MP__SEQ_OPTIONAL;
        bool opt = level == 1 && q->type != MP__SEQ_SEQUENCE;
        if (!seq && !opt)
            continue;
        Onnx__TypeProto *outer = w_new(w, 1, sizeof *outer);
        if (!outer)
            return NULL;
        onnx__type_proto__init(outer);
        if (seq) {
            Onnx__TypeProto__Sequence *sq = w_new(w, 1, sizeof *sq);
            if (!sq)
                return NULL;
            onnx__type_proto__sequence__init(sq);
            sq->elem_type = tp;
            outer->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            outer->sequence_type = sq;
        } else {
            Onnx__TypeProto__Optional *op = w_new(w, 1, sizeof *op);
            if (!op)
                return NULL;
            onnx__type_proto__optional__init(op);
            op->elem_type = tp;
            outer->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            outer->optional_type = op;
        }
        tp = outer;
    }
    return tp;
}

static Onnx__TypeProto *w_type(wr *w, const mp__tensor *t, bool input)
{
    int dtype, rank;
    int64_t dims[MP_MAX_RANK];
    if (t->seq)
        return w_seq_type(w, t);
    written_shape(t, &dtype, &rank, dims);
    return w_tensor_type(w, t, input, dtype, rank, dims);
}

/* A tensor type of dtype and dims (rank -1: no shape); NULL when neither
 * is known. Unknown dims of graph inputs get dim_param "TENSOR:AXIS". */
static Onnx__TypeProto *w_tensor_type(wr *w, const mp__tensor *t, bool input,
                                      int dtype, int rank,
                                      const int64_t *dims)
{
    if (dtype == MP_DTYPE_UNDEFINED && rank < 0)
        return NULL;
    Onnx__TypeProto *tp = w_new(w, 1, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = w_new(w, 1, sizeof *tt);
    if (!tp || !tt)
        return NULL;
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (dtype != MP_DTYPE_UNDEFINED) {
        tt->has_elem_type = 1;
        tt->elem_type = dtype;
    }
    if (rank < 0)
        return tp;
    Onnx__TensorShapeProto *sh = w_new(w, 1, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **ds =
        w_new(w, (size_t)rank, sizeof *ds);
    if (!sh || !ds)
        return NULL;
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = ds;
    tt->shape = sh;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = w_new(w, 1, sizeof *d);
        if (!d)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] >= 0) {
            d->value_case =
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else if (input) {
            char ax[24];
            snprintf(ax, sizeof ax, ":%d", i);
            d->value_case =
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = w_fmt(w, t->name, ax);
        }
        ds[i] = d;
    }
    return w->st ? NULL : tp;
}

static Onnx__ValueInfoProto *w_value_info(wr *w, const mp__tensor *t,
                                          bool input)
{
    Onnx__ValueInfoProto *v = w_new(w, 1, sizeof *v);
    if (!v)
        return NULL;
    onnx__value_info_proto__init(v);
    v->name = t->name;
    v->type = w_type(w, t, input);
    return w->st ? NULL : v;
}

/* ---- tensor data ----------------------------------------------------------- */

/* float16 / bfloat16 bits of a value (round to nearest even; NaN stays
 * NaN, too large goes to infinity) */
static uint32_t half_of(int dtype, double d)
{
    float f = (float)d;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if (dtype == MP_DTYPE_BFLOAT16) {
        if ((x & 0x7fffffffu) > 0x7f800000u)
            return (x >> 16) | 0x40u;
        return (uint32_t)(((uint64_t)x + 0x7fffu + ((x >> 16) & 1u)) >> 16) &
               0xffffu;
    }
    uint32_t sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u)
        return sign | 0x7e00u;
    if (mag >= 0x477ff000u) /* 65520 and above round to infinity */
        return sign | 0x7c00u;
    if (mag < 0x38800000u) { /* below 2^-14: a subnormal half */
        float a = fabsf(f) * 16777216.0f; /* in units of 2^-24 */
        return sign | (uint32_t)lrintf(a);
    }
    uint32_t m = mag & 0x7fffffu;
    uint32_t h = ((((mag >> 23) - 127u + 15u)) << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;
    return sign | h;
}

/* Fills tp's data from count values of dtype (int64 values for integer
 * dtypes, double bits for floating dtypes). False when the dtype has no
 * typed field memplan writes. */
static bool w_values(wr *w, Onnx__TensorProto *tp, int dtype,
                     const int64_t *v, size_t count)
{
    switch (dtype) {
    case MP_DTYPE_INT64: {
        int64_t *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        memcpy(d, v, count * sizeof *d);
        tp->int64_data = d;
        tp->n_int64_data = count;
        return true;
    }
    case MP_DTYPE_UINT64: case MP_DTYPE_UINT32: {
        uint64_t *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        for (size_t i = 0; i < count; i++)
            d[i] = (uint64_t)v[i];
        tp->uint64_data = d;
        tp->n_uint64_data = count;
        return true;
    }
    case MP_DTYPE_INT32: case MP_DTYPE_INT16: case MP_DTYPE_INT8:
    case MP_DTYPE_UINT16: case MP_DTYPE_UINT8: case MP_DTYPE_BOOL: {
        int32_t *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        for (size_t i = 0; i < count; i++)
            d[i] = (int32_t)v[i];
        tp->int32_data = d;
        tp->n_int32_data = count;
        return true;
    }
    case MP_DTYPE_FLOAT32: {
        float *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        for (size_t i = 0; i < count; i++) {
            double x;
            memcpy(&x, &v[i], sizeof x);
            d[i] = (float)x;
        }
        tp->float_data = d;
        tp->n_float_data = count;
        return true;
    }
    case MP_DTYPE_FLOAT16: case MP_DTYPE_BFLOAT16: { /* bits in int32 */
        int32_t *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        for (size_t i = 0; i < count; i++) {
            double x;
            memcpy(&x, &v[i], sizeof x);
            d[i] = (int32_t)half_of(dtype, x);
        }
        tp->int32_data = d;
        tp->n_int32_data = count;
        return true;
    }
    case MP_DTYPE_FLOAT64: {
        double *d = w_new(w, count, sizeof *d);
        if (!d)
            return true;
        memcpy(d, v, count * sizeof *d);
        tp->double_data = d;
        tp->n_double_data = count;
        return true;
    }
    default:
        return false;
    }
}

/* Data of a tensor memplan does not hold: dims and dtype only, the data
 * EXTERNAL at a location that does not exist. */
static void w_no_data(wr *w, Onnx__TensorProto *tp, uint64_t bytes)
{
    Onnx__StringStringEntryProto **e = w_new(w, 2, sizeof *e);
    Onnx__StringStringEntryProto *loc = w_new(w, 1, sizeof *loc);
    Onnx__StringStringEntryProto *len = w_new(w, 1, sizeof *len);
    char *num = w_new(w, 24, 1);
    if (!e || !loc || !len || !num)
        return;
    onnx__string_string_entry_proto__init(loc);
    onnx__string_string_entry_proto__init(len);
    loc->key = (char *)"location";
    loc->value = (char *)MP__ONNX_NO_DATA;
    snprintf(num, 24, "%llu", (unsigned long long)bytes);
    len->key = (char *)"length";
    len->value = num;
    e[0] = loc;
    e[1] = len;
    tp->external_data = e;
    tp->n_external_data = 2;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* A TensorProto of dtype and dims with count values (v may be NULL). */
static Onnx__TensorProto *w_tensor(wr *w, const char *name, int dtype,
                                   int rank, const int64_t *dims,
                                   const int64_t *v, size_t count)
{
    Onnx__TensorProto *tp = w_new(w, 1, sizeof *tp);
    int64_t *d = w_new(w, rank > 0 ? (size_t)rank : 1, sizeof *d);
    if (!tp || !d)
        return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = (char *)name;
    tp->has_data_type = 1;
    tp->data_type = dtype;
    uint64_t numel = 1;
    bool known = rank >= 0;
    for (int i = 0; i < rank; i++) {
        d[i] = dims[i] < 0 ? 0 : dims[i];
        known = known && dims[i] >= 0 &&
                mp__mul_u64(numel, (uint64_t)dims[i], &numel);
    }
    tp->dims = d;
    tp->n_dims = rank > 0 ? (size_t)rank : 0;
    if (known && numel == 0)
        return tp; /* no elements, no data */
    if (known && v && count == numel && w_values(w, tp, dtype, v, count))
        return w->st ? NULL : tp;
    uint64_t bytes = 0, bits = mp_dtype_bits((mp_dtype)dtype);
    if (!known || !mp__mul_u64(numel, bits, &bytes))
        bytes = 0;
    w_no_data(w, tp, (bytes + 7) / 8);
    return w->st ? NULL : tp;
}

/* True when t's written shape is fully known (an initializer needs it). */
static bool writable_shape(const mp__tensor *t)
{
    int dtype, rank;
    int64_t dims[MP_MAX_RANK];
    written_shape(t, &dtype, &rank, dims);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return false;
    return rank >= 0;
}

static Onnx__TensorProto *w_tensor_of(wr *w, const mp__tensor *t,
                                      const char *name)
{
    int dtype, rank;
    int64_t dims[MP_MAX_RANK];
    if (!writable_shape(t)) {
        w->st = mp__err(w->ctx, MP_ERR_SHAPE, "tensor '%s': its shape is not "
                       "known, so it cannot be written as an ONNX tensor",
                       t->name);
        return NULL;
    }
    written_shape(t, &dtype, &rank, dims);
    return w_tensor(w, name, dtype, rank, dims, t->value,
                    t->value ? t->n_value : 0);
}

/* ---- nodes ----------------------------------------------------------------- */

static Onnx__GraphProto *w_graph(wr *w, const mp_graph *g, bool sub,
                                 unsigned depth);

/* "NAME.suffix" -> true with *base_len = strlen(NAME). */
static bool has_suffix(const char *s, const char *suffix, size_t *base_len)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    if (ls <= lx || strcmp(s + ls - lx, suffix) != 0)
        return false;
    *base_len = ls - lx;
    return true;
}

static const mp__attr *attr_n(const mp__node *n, const char *base, size_t len,
                             const char *suffix)
{
    char key[512];
    if (len + strlen(suffix) >= sizeof key)
        return NULL;
    memcpy(key, base, len);
    strcpy(key + len, suffix);
    return mp__node_attr(n, key);
}

/* Index of the subgraph an attribute NAME.graph refers to, or -1. */
static int64_t graph_index(const mp_graph *g, const mp__attr *a)
{
    size_t bl;
    if (a->type != MP__ATTR_INT || !has_suffix(a->name, ".graph", &bl) ||
        a->v.i < 0 || (uint64_t)a->v.i >= g->n_subgraphs ||
        !g->subgraphs[a->v.i])
        return -1;
    return a->v.i;
}

/* A loader tensor attribute: NAME.dtype (int) with NAME.dims (ints). */
static bool tensor_attr(const mp__node *n, const mp__attr *a, size_t *bl)
{
    if (a->type != MP__ATTR_INT || !has_suffix(a->name, ".dtype", bl))
        return false;
    const mp__attr *d = attr_n(n, a->name, *bl, ".dims");
    return d && d->type == MP__ATTR_INTS;
}

static bool part_of_tensor_attr(const mp__node *n, const mp__attr *a)
{
    size_t bl;
    const char *sfx[] = {".dims", ".ints"};
    for (int k = 0; k < 2; k++) {
        if (!has_suffix(a->name, sfx[k], &bl))
            continue;
        const mp__attr *d = attr_n(n, a->name, bl, ".dtype");
        const mp__attr *dd = attr_n(n, a->name, bl, ".dims");
        if (d && d->type == MP__ATTR_INT && dd && dd->type == MP__ATTR_INTS)
            return true;
    }
    return false;
}

static char *w_base(wr *w, const char *s, size_t len)
{
    char *b = w_new(w, len + 1, 1);
    if (b)
        memcpy(b, s, len);
    return b;
}

/* A STRINGS attribute kept as NAME.strings (core/ops/strval.h) written
 * back as one: true when a holds one (ap filled). */
static bool w_strings_attr(wr *w, const mp__node *n, const mp__attr *a,
                           Onnx__AttributeProto *ap)
{
    size_t bl, cnt;
    const char *cur;
    if (a->type != MP__ATTR_STRING || !has_suffix(a->name, ".strings", &bl))
        return false;
    char *base = w_base(w, a->name, bl);
    if (!base || !mp__attr_strings(n, base, &cnt, &cur) ||
        cnt > strlen(a->v.s))
        return false;
    ProtobufCBinaryData *v = w_new(w, cnt, sizeof *v);
    for (size_t i = 0; v && i < cnt; i++) {
        /* each string is at most half its hex text */
        size_t cap = strlen(cur) / 2 + 1;
        char *b = w_new(w, cap, 1);
        if (!b || !mp__attr_strings_next(&cur, b, cap, &v[i].len))
            return false;
        v[i].data = (uint8_t *)b;
    }
    if (!v)
        return false;
    ap->name = base;
    ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    ap->strings = v;
    ap->n_strings = cnt;
    return true;
}

static bool is_constant(const mp__node *n)
{
    return strcmp(n->op, "Constant") == 0 && (!n->domain || !n->domain[0]);
}

static bool constant_has_value_attr(const mp__node *n)
{
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (strncmp(n->attrs[i].name, "value_", 6) == 0 ||
            strcmp(n->attrs[i].name, "sparse_value") == 0)
            return true;
    return false;
}

static mp_status w_attrs(wr *w, const mp_graph *g, const mp__node *n,
                         Onnx__NodeProto *np, unsigned depth)
{
    Onnx__AttributeProto **as = w_new(w, (size_t)n->n_attrs + 1, sizeof *as);
    if (!as)
        return w->st;
    size_t k = 0;
    bool constant = is_constant(n) && n->n_out >= 1 &&
                    !constant_has_value_attr(n) &&
                    writable_shape(&g->tensors[n->outputs[0]]);
    for (uint32_t i = 0; i < n->n_attrs && !w->st; i++) {
        const mp__attr *a = &n->attrs[i];
        size_t bl = 0;
        if (strcmp(a->name, "body.inputs") == 0 && a->type == MP__ATTR_INT)
            continue;
        if (part_of_tensor_attr(n, a))
            continue;
        Onnx__AttributeProto *ap = w_new(w, 1, sizeof *ap);
        if (!ap)
            break;
        onnx__attribute_proto__init(ap);
        ap->name = a->name;
        ap->has_type = 1;
        int64_t gi = graph_index(g, a);
        if (gi >= 0) {
            has_suffix(a->name, ".graph", &bl);
            ap->name = w_base(w, a->name, bl);
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
            ap->g = w_graph(w, g->subgraphs[gi], true, depth + 1);
            as[k++] = ap;
            continue;
        }
        if (tensor_attr(n, a, &bl)) {
            if (constant && bl == 5 && strncmp(a->name, "value", 5) == 0)
                continue; /* written from the output below */
            const mp__attr *dims = attr_n(n, a->name, bl, ".dims");
            const mp__attr *ints = attr_n(n, a->name, bl, ".ints");
            if (ints && ints->type != MP__ATTR_INTS)
                ints = NULL;
            if (dims->n > MP_MAX_RANK)
                goto plain; /* not a tensor the loader made */
            ap->name = w_base(w, a->name, bl);
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
            ap->t = w_tensor(w, "", (int)a->v.i, (int)dims->n, dims->v.ints,
                             ints ? ints->v.ints : NULL, ints ? ints->n : 0);
            as[k++] = ap;
            continue;
        }
        if (w_strings_attr(w, n, a, ap)) {
            as[k++] = ap;
            continue;
        }
    plain:
        switch (a->type) {
        case MP__ATTR_INT:
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            ap->has_i = 1;
            ap->i = a->v.i;
            break;
        case MP__ATTR_FLOAT:
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
            ap->has_f = 1;
            ap->f = (float)a->v.f;
            break;
        case MP__ATTR_STRING:
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
            ap->has_s = 1;
            ap->s.data = (uint8_t *)a->v.s;
            ap->s.len = strlen(a->v.s);
            break;
        case MP__ATTR_INTS:
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            ap->ints = a->v.ints;
            ap->n_ints = a->n;
            break;
        case MP__ATTR_FLOATS: {
            float *f = w_new(w, a->n, sizeof *f);
            if (!f)
                break;
            for (uint32_t j = 0; j < a->n; j++)
                f[j] = (float)a->v.floats[j];
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
            ap->floats = f;
            ap->n_floats = a->n;
            break;
        }
        }
        as[k++] = ap;
    }
    if (constant && !w->st) {
        const mp__tensor *t = &g->tensors[n->outputs[0]];
        Onnx__AttributeProto *ap = w_new(w, 1, sizeof *ap);
        if (ap) {
            onnx__attribute_proto__init(ap);
            ap->name = (char *)"value";
            ap->has_type = 1;
            ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
            ap->t = w_tensor_of(w, t, "");
            as[k++] = ap;
        }
    }
    np->attribute = as;
    np->n_attribute = k;
    return w->st;
}

/* Output i of n is one the loader made up for an omitted optional output
 * ("NODE:omittedI") or for a body's memory ("NODE:body"). */
static bool made_up(const mp__node *n, const char *tname, const char *what)
{
    size_t ln = strlen(n->name);
    return strncmp(tname, n->name, ln) == 0 &&
           strncmp(tname + ln, what, strlen(what)) == 0;
}

static Onnx__NodeProto *w_node(wr *w, const mp_graph *g, const mp__node *n,
                               unsigned depth)
{
    Onnx__NodeProto *np = w_new(w, 1, sizeof *np);
    char **in = w_new(w, (size_t)n->n_in + 1, sizeof *in);
    char **out = w_new(w, (size_t)n->n_out + 1, sizeof *out);
    if (!np || !in || !out)
        return NULL;
    onnx__node_proto__init(np);
    np->name = n->name;
    np->op_type = n->op;
    if (n->domain && n->domain[0])
        np->domain = n->domain;
    /* inputs: without those the loader added for outer-scope names */
    uint32_t n_in = n->n_in;
    const mp__attr *bi = mp__node_attr(n, "body.inputs");
    bool has_body = false;
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (graph_index(g, &n->attrs[i]) >= 0)
            has_body = true;
    if (has_body && bi && bi->type == MP__ATTR_INT && bi->v.i >= 0 &&
        (uint64_t)bi->v.i < n_in)
        n_in = (uint32_t)bi->v.i;
    for (uint32_t i = 0; i < n_in; i++)
        in[i] = n->inputs[i] == MP_NONE ? (char *)""
                                        : g->tensors[n->inputs[i]].name;
    np->input = in;
    np->n_input = n_in;
    size_t k = 0;
    for (uint32_t i = 0; i < n->n_out; i++) {
        const char *tn = g->tensors[n->outputs[i]].name;
        if (has_body && i + 1 == n->n_out && made_up(n, tn, ":body") &&
            strcmp(tn + strlen(n->name), ":body") == 0)
            continue;
        out[k++] = made_up(n, tn, ":omitted") ? (char *)"" : (char *)tn;
    }
    np->output = out;
    np->n_output = k;
    if (n->domain && n->domain[0]) {
        bool seen = false;
        for (size_t i = 0; i < w->n_domains && !seen; i++)
            seen = strcmp(w->domains[i], n->domain) == 0;
        if (!seen && strcmp(n->domain, "ai.onnx") != 0) {
            if (mp__grow(w->ctx, (void **)&w->domains, sizeof *w->domains,
                        w->n_domains + 1, &w->cap_domains)) {
                w->st = MP_ERR_NOMEM;
                return NULL;
            }
            w->domains[w->n_domains++] = n->domain;
        }
    }
    if (w_attrs(w, g, n, np, depth))
        return NULL;
    return np;
}

/* ---- graphs ---------------------------------------------------------------- */

static bool in_list(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static bool made_up_tensor(const mp_graph *g, const mp__tensor *t)
{
    if (t->producer == MP_NONE)
        return false;
    const mp__node *n = &g->nodes[t->producer];
    return made_up(n, t->name, ":omitted") || made_up(n, t->name, ":body");
}

static Onnx__GraphProto *w_graph(wr *w, const mp_graph *g, bool sub,
                                 unsigned depth)
{
    if (depth > 64) {
        w->st = mp__err(w->ctx, MP_ERR_UNSUPPORTED,
                       "ONNX writer: subgraphs nested deeper than 64");
        return NULL;
    }
    size_t nt = g->n_tensors;
    Onnx__GraphProto *gp = w_new(w, 1, sizeof *gp);
    Onnx__ValueInfoProto **ins = w_new(w, nt, sizeof *ins);
    Onnx__ValueInfoProto **outs = w_new(w, nt, sizeof *outs);
    Onnx__ValueInfoProto **vis = w_new(w, nt, sizeof *vis);
    Onnx__TensorProto **inits = w_new(w, nt, sizeof *inits);
    Onnx__NodeProto **nodes = w_new(w, g->n_nodes, sizeof *nodes);
    if (!gp || !ins || !outs || !vis || !inits || !nodes)
        return NULL;
    onnx__graph_proto__init(gp);
    gp->name = g->name && g->name[0] ? g->name : (char *)"memplan";
    if (sub) {
        for (uint32_t i = 0; i < g->n_sub_inputs && !w->st; i++)
            ins[gp->n_input++] =
                w_value_info(w, &g->tensors[g->sub_inputs[i]], true);
        for (uint32_t i = 0; i < g->n_sub_outputs && !w->st; i++)
            outs[gp->n_output++] =
                w_value_info(w, &g->tensors[g->sub_outputs[i]], false);
    }
    for (uint32_t i = 0; i < nt && !w->st; i++) {
        const mp__tensor *t = &g->tensors[i];
        if (t->producer == MP_NONE) {
            switch (t->declared_kind) {
            case MP_KIND_INPUT:
                if (!sub)
                    ins[gp->n_input++] = w_value_info(w, t, true);
                break; /* in a body: formal input or outer-scope name */
            case MP_KIND_WEIGHT: case MP_KIND_CONSTANT:
            case MP_KIND_OPTIMIZER_STATE:
                inits[gp->n_initializer++] = w_tensor_of(w, t, t->name);
                break;
            default:
                break; /* declared, never produced, unused */
            }
            if (!sub && (t->flags & MP__TF_OUTPUT))
                outs[gp->n_output++] = w_value_info(w, t, false);
            continue;
        }
        if (made_up_tensor(g, t))
            continue;
        if (!sub && (t->flags & MP__TF_OUTPUT)) {
            outs[gp->n_output++] = w_value_info(w, t, false);
            continue;
        }
        if (sub && in_list(g->sub_outputs, g->n_sub_outputs, i))
            continue;
        Onnx__ValueInfoProto *v = w_value_info(w, t, false);
        if (v && v->type)
            vis[gp->n_value_info++] = v;
    }
    for (size_t k = 0; k < g->n_nodes && !w->st; k++)
        nodes[gp->n_node++] = w_node(w, g, &g->nodes[k], depth);
    gp->input = ins;
    gp->output = outs;
    gp->value_info = vis;
    gp->initializer = inits;
    gp->node = nodes;
    return w->st ? NULL : gp;
}

/* IR version that goes with an opset of the default domain. */
static int64_t ir_for_opset(int64_t opset)
{
    static const struct { int64_t opset, ir; } t[] = {
        {9, 4}, {10, 5}, {11, 6}, {14, 7}, {18, 8}, {20, 9}, {22, 10},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (opset <= t[i].opset)
            return t[i].ir;
    return 11;
}

mp_status mp_graph_to_onnx(const mp_graph *g, void **data, size_t *len)
{
    if (data)
        *data = NULL;
    if (len)
        *len = 0;
    if (!g || !data || !len)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_to_onnx: NULL argument")
                 : MP_ERR_INVALID_ARG;
    wr w = {.ctx = g->ctx};
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.graph = w_graph(&w, g, false, 0);
    int64_t opset = g->onnx_opset > 0 ? g->onnx_opset : DEFAULT_OPSET;
    Onnx__OperatorSetIdProto *ops =
        w_new(&w, w.n_domains + 1, sizeof *ops);
    Onnx__OperatorSetIdProto **opp =
        w_new(&w, w.n_domains + 1, sizeof *opp);
    if (!w.st) {
        for (size_t i = 0; i <= w.n_domains; i++) {
            onnx__operator_set_id_proto__init(&ops[i]);
            ops[i].domain = i ? (char *)w.domains[i - 1] : (char *)"";
            ops[i].has_version = 1;
            ops[i].version = i ? 1 : opset;
            opp[i] = &ops[i];
        }
        m.opset_import = opp;
        m.n_opset_import = w.n_domains + 1;
        m.has_ir_version = 1;
        m.ir_version = ir_for_opset(opset);
        m.producer_name = (char *)"memplan";
        size_t n = onnx__model_proto__get_packed_size(&m);
        uint8_t *buf = mp__alloc(g->ctx, n ? n : 1);
        if (!buf) {
            w.st = MP_ERR_NOMEM;
        } else {
            size_t got = onnx__model_proto__pack(&m, buf);
            if (got != n) {
                mp__dealloc(g->ctx, buf);
                w.st = mp__err(g->ctx, MP_ERR_INTERNAL, "ONNX writer: packed "
                              "%zu bytes, expected %zu", got, n);
            } else {
                *data = buf;
                *len = n;
            }
        }
    }
    mp_status st = w.st;
    w_free(&w);
    return st;
}

mp_status mp_graph_save_onnx(const mp_graph *g, const char *path)
{
    if (!g || !path)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_save_onnx: NULL path")
                 : MP_ERR_INVALID_ARG;
    void *data;
    size_t len;
    mp_status st = mp_graph_to_onnx(g, &data, &len);
    if (st)
        return st;
    st = mp__write_file(g->ctx, path, data, len);
    mp__dealloc(g->ctx, data);
    return st;
}

#endif /* MP_WITH_ONNX */
