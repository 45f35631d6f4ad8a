/* ONNX frontend: reads a ModelProto with the protobuf-c code generated at
 * build time from Debian's onnx.proto, and builds an mp_graph.
 *
 * - graph inputs become inputs, initializers weights (an input that is also
 *   an initializer, as IR < 4 models list them, is a weight);
 * - only dims and dtypes of weights are read, plus the values of small
 *   integer tensors (and tiny float ones: Resize scales) that shape
 *   arithmetic needs; external data is never opened;
 * - Constant nodes give their output's dtype, shape and small value;
 * - symbolic dims (dim_param) are bound from the options; an unbound one
 *   that a used graph input needs is one error listing the symbols;
 * - shapes of everything else come from the op registry (core/ops/registry.c);
 *   shapes declared in value_info / graph outputs fill in what inference
 *   cannot reach (unless opt->declared_shapes is 0).
 * Tensor-valued attributes other than Constant's are kept as
 * NAME.dtype (int), NAME.dims (ints) and, for small integer tensors,
 * NAME.ints (ints): ConstantOfShape reads value.dtype / value.ints. */
#include "ir.h"
#include "shape.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void mp_onnx_options_init(mp_onnx_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->declared_shapes = 1;
}

#ifndef MP_WITH_ONNX

int mp_onnx_available(void) { return 0; }

mp_status mp_graph_load_onnx_buffer(mp_ctx *ctx, const void *data, size_t len,
                                    const char *source_name,
                                    const mp_onnx_options *opt, mp_graph **out)
{
    (void)data, (void)len, (void)opt;
    if (out)
        *out = NULL;
    return mp__err(ctx, MP_ERR_UNSUPPORTED,
                  "%s: this memplan was built without ONNX support (it needs "
                  "protoc-c, libprotobuf-c and libonnx-dev at build time)",
                  source_name ? source_name : "<buffer>");
}

mp_status mp_graph_load_onnx(mp_ctx *ctx, const char *path,
                             const mp_onnx_options *opt, mp_graph **out)
{
    return mp_graph_load_onnx_buffer(ctx, NULL, 0, path, opt, out);
}

#else /* MP_WITH_ONNX */

#include "onnx.pb-c.h"
#include "onnx_scan.h"
#include "onnx_seq.h"
#include "strval.h"

int mp_onnx_available(void) { return 1; }

/* float tensors with at most this many elements keep their values */
#define FLOAT_VALUE_MAX 16u

static void *pb_alloc(void *data, size_t size)
{
    return mp__alloc((mp_ctx *)data, size ? size : 1);
}

static void pb_free(void *data, void *ptr) { mp__dealloc((mp_ctx *)data, ptr); }

typedef struct loader {
    mp_ctx *ctx;
    mp_graph *g;
    const char *src;
    const mp_onnx_options *opt;
    /* unbound symbols: names and the first tensors needing them */
    char unbound[768];
    size_t unbound_len;
    unsigned n_unbound;
    int unbound_batch;      /* an input's dim 0 is among them */
    /* subgraphs: ids (in g) of names taken from an enclosing scope */
    uint32_t *outer;
    size_t n_outer, cap_outer;
    unsigned depth;
    /* values of graph inputs (opt->values): effective names, use marks */
    char **vnames;
    bool *vused;
    /* float values carried up to this many elements (0: FLOAT_VALUE_MAX);
     * raised for bound graph inputs (NonMaxSuppression boxes, scores) */
    uint32_t float_cap;
} loader;

#define MAX_DEPTH MP__ONNX_MAX_NESTING

static mp_status build_graph(loader *top, const Onnx__GraphProto *gp);
static mp_status finish_top(loader *L, const Onnx__GraphProto *gp);

static mp_status dtype_of(loader *L, int32_t t, const char *what,
                          mp_dtype *out)
{
    if (t < 0 || t > MP_DTYPE_INT2 || !mp_dtype_name((mp_dtype)t))
        return mp__err(L->ctx, MP_ERR_UNSUPPORTED,
                      "%s: %s has data type %d, which memplan does not know",
                      L->src, what, (int)t);
    *out = (mp_dtype)t;
    return MP_OK;
}

static bool little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* float16 / bfloat16 bits as the bits of a double */
static int64_t half_bits(int dt, uint32_t h)
{
    double d;
    if (dt == MP_DTYPE_BFLOAT16) {
        uint32_t f32 = (h & 0xffffu) << 16;
        float f;
        memcpy(&f, &f32, sizeof f);
        d = f;
    } else {
        int e = (int)((h >> 10) & 0x1f);
        double m = (double)(h & 0x3ff);
        double v = e == 0 ? m / 1024.0 / 16384.0            /* subnormal */
                 : e == 31 ? (m ? NAN : INFINITY)
                           : (1.0 + m / 1024.0) * ldexp(1.0, e - 15);
        d = (h & 0x8000u) ? -v : v;
    }
    int64_t out;
    memcpy(&out, &d, sizeof out);
    return out;
}

/* Reads up to cap values of a TensorProto as int64 (integer/bool dtypes)
 * or double bits (float16/bfloat16/float32/float64). Returns the count, 0
 * when unknown. */
static uint32_t tensor_values(const Onnx__TensorProto *t, int64_t count,
                              int64_t *out, uint32_t cap)
{
    if (count <= 0 || count > (int64_t)cap)
        return 0;
    if (t->has_data_location &&
        t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return 0;
    int dt = t->data_type;
    size_t n = (size_t)count;
    if (t->has_raw_data && t->raw_data.len) {
        if (!little_endian())
            return 0;
        const uint8_t *p = t->raw_data.data;
        unsigned bits = mp_dtype_bits((mp_dtype)dt);
        if (bits < 8 || bits % 8 || t->raw_data.len != n * (bits / 8))
            return 0;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *q = p + i * (bits / 8);
            switch (dt) {
            case MP_DTYPE_INT64: case MP_DTYPE_UINT64: {
                int64_t v;
                memcpy(&v, q, 8);
                out[i] = v;
                break;
            }
            case MP_DTYPE_INT32: {
                int32_t v;
                memcpy(&v, q, 4);
                out[i] = v;
                break;
            }
            case MP_DTYPE_UINT32: {
                uint32_t v;
                memcpy(&v, q, 4);
                out[i] = v;
                break;
            }
            case MP_DTYPE_INT16: {
                int16_t v;
                memcpy(&v, q, 2);
                out[i] = v;
                break;
            }
            case MP_DTYPE_UINT16: {
                uint16_t v;
                memcpy(&v, q, 2);
                out[i] = v;
                break;
            }
            case MP_DTYPE_INT8:
                out[i] = (int8_t)q[0];
                break;
            case MP_DTYPE_UINT8: case MP_DTYPE_BOOL:
                out[i] = q[0];
                break;
            case MP_DTYPE_FLOAT32: {
                float f;
                memcpy(&f, q, 4);
                double d = f;
                memcpy(&out[i], &d, 8);
                break;
            }
            case MP_DTYPE_FLOAT64:
                memcpy(&out[i], q, 8);
                break;
            case MP_DTYPE_FLOAT16: case MP_DTYPE_BFLOAT16:
                out[i] = half_bits(dt, (uint32_t)q[0] | (uint32_t)q[1] << 8);
                break;
            default:
                return 0;
            }
        }
        return (uint32_t)n;
    }
    switch (dt) {
    case MP_DTYPE_INT64:
        if (t->n_int64_data != n)
            return 0;
        memcpy(out, t->int64_data, n * sizeof *out);
        return (uint32_t)n;
    case MP_DTYPE_UINT64: case MP_DTYPE_UINT32:
        if (t->n_uint64_data != n)
            return 0;
        for (size_t i = 0; i < n; i++)
            out[i] = (int64_t)t->uint64_data[i];
        return (uint32_t)n;
    case MP_DTYPE_INT32: case MP_DTYPE_INT16: case MP_DTYPE_INT8:
    case MP_DTYPE_UINT16: case MP_DTYPE_UINT8: case MP_DTYPE_BOOL:
        if (t->n_int32_data != n)
            return 0;
        for (size_t i = 0; i < n; i++)
            out[i] = t->int32_data[i];
        return (uint32_t)n;
    case MP_DTYPE_FLOAT32:
        if (t->n_float_data != n)
            return 0;
        for (size_t i = 0; i < n; i++) {
            double d = t->float_data[i];
            memcpy(&out[i], &d, 8);
        }
        return (uint32_t)n;
    case MP_DTYPE_FLOAT64:
        if (t->n_double_data != n)
            return 0;
        memcpy(out, t->double_data, n * sizeof *out);
        return (uint32_t)n;
    case MP_DTYPE_FLOAT16: case MP_DTYPE_BFLOAT16: /* bits in int32_data */
        if (t->n_int32_data != n)
            return 0;
        for (size_t i = 0; i < n; i++)
            out[i] = half_bits(dt, (uint32_t)t->int32_data[i]);
        return (uint32_t)n;
    default:
        return 0;
    }
}

static int64_t tensor_count(const Onnx__TensorProto *t)
{
    uint64_t c = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || !mp__mul_u64(c, (uint64_t)t->dims[i], &c) ||
            c > (uint64_t)INT64_MAX)
            return -1;
    }
    return (int64_t)c;
}

/* "[2,3]" (unknown dims as ?), cut short to fit cap */
static const char *dims_str(char *buf, size_t cap, int rank,
                            const int64_t *dims)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i <= rank && n < cap; i++) {
        int w = i == rank  ? snprintf(buf + n, cap - n, "%s]", i ? "" : "[")
                : dims[i] < 0 ? snprintf(buf + n, cap - n, "%s?",
                                         i ? "," : "[")
                              : snprintf(buf + n, cap - n, "%s%lld",
                                         i ? "," : "[", (long long)dims[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return buf;
}

/* A TensorProto's data against its dims: raw_data of exactly the bytes
 * the dims need, or a typed field (float_data, int64_data, ...) of
 * exactly as many values; none at all is a tensor given by its shape
 * only. External data is never opened, so never checked, nor is a
 * segment (part of a tensor). what names the tensor ("tensor 'w'"). */
static mp_status check_tensor_data(loader *L, const Onnx__TensorProto *t,
                                   const char *what)
{
    if ((t->has_data_location &&
         t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        t->segment) /* a segment holds part of the tensor */
        return MP_OK;
    int64_t cnt = tensor_count(t);
    int dt = t->has_data_type ? t->data_type : 0;
    unsigned bits = dt == MP_DTYPE_STRING ? 0 : mp_dtype_bits((mp_dtype)dt);
    if (cnt < 0 || !bits) /* an overflow, a string, an unknown dtype:
                             reported elsewhere or not held as bytes */
        return MP_OK;
    char ds[200];
    dims_str(ds, sizeof ds, (int)(t->n_dims < MP_MAX_RANK ? t->n_dims
                                                          : MP_MAX_RANK),
             t->dims);
    uint64_t need;
    if (t->has_raw_data) {
        if (!mp__mul_u64((uint64_t)cnt, bits, &need) ||
            !mp__add_u64(need, 7, &need))
            return MP_OK; /* the size overflows: reported as such */
        need /= 8;
        if (t->raw_data.len != need)
            return mp__err(L->ctx, MP_ERR_CORRUPT, "%s: %s: raw_data holds "
                          "%zu bytes, but its dims %s of %s need %llu",
                          L->src, what, t->raw_data.len, ds,
                          mp_dtype_name((mp_dtype)dt),
                          (unsigned long long)need);
        return MP_OK;
    }
    size_t have;
    const char *field;
    need = (uint64_t)cnt;
    switch (dt) {
    case MP_DTYPE_FLOAT32: case MP_DTYPE_COMPLEX64:
        have = t->n_float_data, field = "float_data";
        break;
    case MP_DTYPE_INT32: case MP_DTYPE_INT16: case MP_DTYPE_INT8:
    case MP_DTYPE_UINT16: case MP_DTYPE_UINT8: case MP_DTYPE_BOOL:
    case MP_DTYPE_FLOAT16: case MP_DTYPE_BFLOAT16:
        have = t->n_int32_data, field = "int32_data";
        break;
    case MP_DTYPE_INT64:
        have = t->n_int64_data, field = "int64_data";
        break;
    case MP_DTYPE_FLOAT64: case MP_DTYPE_COMPLEX128:
        have = t->n_double_data, field = "double_data";
        break;
    case MP_DTYPE_UINT32: case MP_DTYPE_UINT64:
        have = t->n_uint64_data, field = "uint64_data";
        break;
    default: /* 8-, 4- and 2-bit floats and integers: packing varies */
        return MP_OK;
    }
    if (dt == MP_DTYPE_COMPLEX64 || dt == MP_DTYPE_COMPLEX128)
        need *= 2; /* real and imaginary parts; cnt < 2^63 */
    if (have && have != need)
        return mp__err(L->ctx, MP_ERR_CORRUPT, "%s: %s: %s holds %zu values, "
                      "but its dims %s of %s need %llu", L->src, what, field,
                      have, ds, mp_dtype_name((mp_dtype)dt),
                      (unsigned long long)need);
    return MP_OK;
}

/* Adds a tensor from a TensorProto (initializer or Constant value);
 * *id gets its id. kind: weight or activation (Constant's output). */
static mp_status add_proto_tensor(loader *L, const char *name,
                                  const Onnx__TensorProto *t,
                                  mp_tensor_kind kind, uint32_t existing,
                                  uint32_t *id)
{
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (t->n_dims > MP_MAX_RANK)
        return mp__err(L->ctx, MP_ERR_BAD_DIM,
                      "%s: %s has rank %zu (at most %d)", L->src, what,
                      t->n_dims, MP_MAX_RANK);
    mp_dtype dt = MP_DTYPE_UNDEFINED;
    mp_status st = dtype_of(L, t->has_data_type ? t->data_type : 0, what, &dt);
    if (st)
        return st;
    for (size_t i = 0; i < t->n_dims; i++)
        if (t->dims[i] < 0)
            return mp__err(L->ctx, MP_ERR_BAD_DIM, "%s: %s has negative "
                          "dim %lld", L->src, what, (long long)t->dims[i]);
    if ((st = check_tensor_data(L, t, what)))
        return st;
    uint32_t tid = existing;
    if (tid == MP_NONE) {
        mp_tensor_desc d = {name, dt, (int)t->n_dims, t->dims, 0, kind};
        st = mp_graph_add_tensor(L->g, &d, &tid);
        if (st)
            return st;
    } else {
        mp__tensor *tt = &L->g->tensors[tid];
        tt->dtype = (uint8_t)dt;
        st = mp__tensor_set_shape(L->ctx, tt, (int32_t)t->n_dims, t->dims);
        if (st)
            return st;
    }
    int64_t cnt = tensor_count(t);
    if (dt == MP_DTYPE_STRING && cnt > 0 && cnt <= (int64_t)MP__VALUE_MAX &&
        t->n_string_data == (size_t)cnt) {
        /* strings: interned ids (core/ops/strval.c) */
        const char **sv = mp__alloc(L->ctx, (size_t)cnt * sizeof *sv);
        size_t *sl = mp__alloc(L->ctx, (size_t)cnt * sizeof *sl);
        if (sv && sl)
            for (int64_t i = 0; i < cnt; i++) {
                sv[i] = (const char *)t->string_data[i].data;
                sl[i] = t->string_data[i].len;
            }
        st = sv && sl ? mp__str_set_value(L->g, &L->g->tensors[tid], sv, sl,
                                         (uint32_t)cnt)
                      : MP_ERR_NOMEM;
        mp__dealloc(L->ctx, sv);
        mp__dealloc(L->ctx, sl);
        if (st)
            return st;
    }
    uint32_t cap = mp__dtype_is_int(dt) ? MP__VALUE_MAX
                   : L->float_cap      ? L->float_cap
                                       : FLOAT_VALUE_MAX;
    if (cnt > 0 && cnt <= (int64_t)cap &&
        (mp__dtype_is_int(dt) || mp__dtype_is_float(dt))) {
        int64_t *buf = mp__alloc(L->ctx, (size_t)cnt * sizeof *buf);
        if (!buf)
            return MP_ERR_NOMEM;
        uint32_t got = tensor_values(t, cnt, buf, cap);
        if (got)
            st = mp__tensor_set_value(L->ctx, &L->g->tensors[tid], buf, got);
        mp__dealloc(L->ctx, buf);
        if (st)
            return st;
    }
    *id = tid;
    return MP_OK;
}

/* ---- values of graph inputs (mp_input_value) ---------------------------- */
static Onnx__TensorProto *unpack_tensor(loader *L, const mp_input_value *iv)
{
    ProtobufCAllocator pa = {pb_alloc, pb_free, L->ctx};
    return onnx__tensor_proto__unpack(&pa, iv->pb_len,
                                      (const uint8_t *)iv->pb);
}

static void free_tensor(loader *L, Onnx__TensorProto *t)
{
    ProtobufCAllocator pa = {pb_alloc, pb_free, L->ctx};
    if (t)
        protobuf_c_message_free_unpacked(&t->base, &pa);
}

/* Effective names of the bound values (a TensorProto's own name when the
 * value has none). */
static mp_status value_names(loader *L)
{
    size_t n = L->opt ? L->opt->n_values : 0;
    if (!n)
        return MP_OK;
    if (!L->opt->values)
        return mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: n_values %zu with no "
                      "values", L->src, n);
    L->vnames = mp__calloc(L->ctx, n, sizeof *L->vnames);
    L->vused = mp__calloc(L->ctx, n, sizeof *L->vused);
    if (!L->vnames || !L->vused)
        return MP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const mp_input_value *iv = &L->opt->values[i];
        const char *name = iv->name;
        Onnx__TensorProto *t = NULL;
        if (!name && iv->pb) {
            t = unpack_tensor(L, iv);
            if (!t)
                return mp__err(L->ctx, MP_ERR_PARSE, "%s: input value %zu: "
                              "not a valid TensorProto (%zu bytes)", L->src,
                              i, iv->pb_len);
            name = t->name;
        }
        if (!name || !name[0]) {
            free_tensor(L, t);
            return mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: input value %zu "
                          "has no name", L->src, i);
        }
        L->vnames[i] = mp__strdup(L->ctx, name);
        free_tensor(L, t);
        if (!L->vnames[i])
            return MP_ERR_NOMEM;
    }
    return MP_OK;
}

static void free_value_names(loader *L)
{
    for (size_t i = 0; L->vnames && i < L->opt->n_values; i++)
        mp__dealloc(L->ctx, L->vnames[i]);
    mp__dealloc(L->ctx, L->vnames);
    mp__dealloc(L->ctx, L->vused);
}

static const mp_input_value *find_value(const loader *L, const char *name)
{
    for (size_t i = 0; L->vnames && i < L->opt->n_values; i++)
        if (strcmp(L->vnames[i], name) == 0) {
            L->vused[i] = true;
            return &L->opt->values[i];
        }
    return NULL;
}

static mp_status type_shape(loader *L, const char *name,
                            const Onnx__TypeProto *tp, mp_dtype *dt,
                            int *rank, int64_t *dims, bool *has_unbound,
                            const char **first_sym, size_t *first_dim);

/* The value's dtype and dims against the input's declared type. */
static mp_status check_declared(loader *L, const Onnx__ValueInfoProto *v,
                                mp_dtype dt, int rank, const int64_t *dims)
{
    mp_dtype ddt;
    int drank;
    int64_t dd[MP_MAX_RANK];
    bool unbound;
    const char *sym = NULL;
    size_t sd = 0;
    mp_status st = type_shape(L, v->name, v->type, &ddt, &drank, dd,
                              &unbound, &sym, &sd);
    if (st)
        return st;
    if (ddt != MP_DTYPE_UNDEFINED && ddt != dt)
        return mp__err(L->ctx, MP_ERR_SHAPE, "%s: the value given for graph "
                      "input '%s' has data type %d, declared %d", L->src,
                      v->name, (int)dt, (int)ddt);
    if (drank >= 0 && drank != rank)
        return mp__err(L->ctx, MP_ERR_SHAPE, "%s: the value given for graph "
                      "input '%s' has rank %d, declared %d", L->src, v->name,
                      rank, drank);
    for (int i = 0; drank >= 0 && i < rank; i++)
        if (dd[i] >= 0 && dd[i] != dims[i])
            return mp__err(L->ctx, MP_ERR_SHAPE, "%s: the value given for "
                          "graph input '%s' has dim %d = %lld, declared %lld",
                          L->src, v->name, i, (long long)dims[i],
                          (long long)dd[i]);
    return MP_OK;
}

/* Adds graph input v with the value iv: its dtype, shape and (small)
 * value. */
static mp_status add_bound_input(loader *L, const Onnx__ValueInfoProto *v,
                                 const mp_input_value *iv, uint32_t *id)
{
    mp_status st;
    mp__seq *decl;
    if ((st = mp__onnx_seq_of_type(L->ctx, v->type, &decl)))
        return st;
    if (decl) { /* a SequenceProto or OptionalProto */
        mp__seq *sq = NULL;
        char what[300];
        snprintf(what, sizeof what, "%s: the value given for graph input "
                 "'%s'", L->src, v->name);
        st = iv->pb ? mp__onnx_seq_of_pb(L->ctx, iv->pb, iv->pb_len,
                                        decl->type != MP__SEQ_SEQUENCE, what,
                                        &sq)
                    : mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: give it as a "
                             "serialized proto (pb)", what);
        if (!st && sq->dtype == MP_DTYPE_UNDEFINED)
            sq->dtype = decl->dtype;
        if (!st && sq->present == 0 && sq->type == MP__SEQ_OPTIONAL &&
            decl->type == MP__SEQ_OPTIONAL_SEQUENCE)
            sq->type = MP__SEQ_OPTIONAL_SEQUENCE;
        mp__dealloc(L->ctx, decl);
        mp_tensor_desc d = {v->name, st ? 0 : sq->dtype, -1, NULL, 0,
                            MP_KIND_INPUT};
        if (!st)
            st = mp_graph_add_tensor(L->g, &d, id);
        if (!st)
            return mp__tensor_take_seq(L->ctx, &L->g->tensors[*id], sq);
        mp__dealloc(L->ctx, sq);
        return st;
    }
    if (iv->pb) {
        Onnx__TensorProto *t = unpack_tensor(L, iv);
        if (!t)
            return mp__err(L->ctx, MP_ERR_PARSE, "%s: the value given for "
                          "graph input '%s' is not a valid TensorProto (%zu "
                          "bytes)", L->src, v->name, iv->pb_len);
        st = t->n_dims > MP_MAX_RANK
                 ? mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: the value given "
                          "for graph input '%s' has rank %zu", L->src,
                          v->name, t->n_dims)
                 : check_declared(L, v, (mp_dtype)(t->has_data_type
                                                       ? t->data_type
                                                       : 0),
                                  (int)t->n_dims, t->dims);
        /* a bound input's floats are carried as its integers are (the
         * caller chose to give them) */
        L->float_cap = MP__VALUE_MAX;
        if (!st)
            st = add_proto_tensor(L, v->name, t, MP_KIND_INPUT, MP_NONE, id);
        L->float_cap = 0;
        free_tensor(L, t);
        return st;
    }
    if (iv->rank < 0 || iv->rank > MP_MAX_RANK || (iv->rank && !iv->dims) ||
        !mp_dtype_name(iv->dtype) || iv->dtype == MP_DTYPE_UNDEFINED)
        return mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: the value given for "
                      "graph input '%s' needs a dtype, a rank in 0..%d and "
                      "its dims", L->src, v->name, MP_MAX_RANK);
    uint64_t cnt = 1;
    for (int i = 0; i < iv->rank; i++)
        if (iv->dims[i] < 0 || !mp__mul_u64(cnt, (uint64_t)iv->dims[i], &cnt))
            return mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: the value given "
                          "for graph input '%s' has a negative or overflowing "
                          "dim", L->src, v->name);
    if ((st = check_declared(L, v, iv->dtype, iv->rank, iv->dims)))
        return st;
    mp_tensor_desc d = {v->name, iv->dtype, iv->rank, iv->dims, 0,
                        MP_KIND_INPUT};
    if ((st = mp_graph_add_tensor(L->g, &d, id)))
        return st;
    if (iv->dtype == MP_DTYPE_STRING) {
        if (!iv->strings || cnt == 0 || cnt > MP__VALUE_MAX)
            return MP_OK; /* shape only */
        size_t *sl = mp__alloc(L->ctx, (size_t)cnt * sizeof *sl);
        if (!sl)
            return MP_ERR_NOMEM;
        for (size_t i = 0; i < cnt; i++)
            sl[i] = iv->strings[i] ? strlen(iv->strings[i]) : 0;
        for (size_t i = 0; i < cnt && !st; i++)
            if (!iv->strings[i])
                st = mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: the value given "
                            "for graph input '%s': string %zu is NULL",
                            L->src, v->name, i);
        if (!st)
            st = mp__str_set_value(L->g, &L->g->tensors[*id], iv->strings, sl,
                                  (uint32_t)cnt);
        mp__dealloc(L->ctx, sl);
        return st;
    }
    bool is_int = mp__dtype_is_int(iv->dtype);
    uint32_t cap = MP__VALUE_MAX; /* integers and floats alike */
    if (cnt == 0 || cnt > cap || (is_int ? !iv->ints : !iv->floats) ||
        (!is_int && !mp__dtype_is_float(iv->dtype)))
        return MP_OK; /* shape only */
    int64_t *buf = mp__alloc(L->ctx, (size_t)cnt * sizeof *buf);
    if (!buf)
        return MP_ERR_NOMEM;
    for (size_t i = 0; i < cnt; i++) {
        if (is_int)
            buf[i] = iv->ints[i];
        else if (!mp__value_from_double(iv->dtype, iv->floats[i], &buf[i])) {
            mp__dealloc(L->ctx, buf);
            return MP_OK;
        }
    }
    st = mp__tensor_set_value(L->ctx, &L->g->tensors[*id], buf,
                             (uint32_t)cnt);
    mp__dealloc(L->ctx, buf);
    return st;
}

static const mp_dim_binding *find_binding(const loader *L, const char *name)
{
    if (!L->opt)
        return NULL;
    for (size_t i = 0; i < L->opt->n_dims; i++)
        if (L->opt->dims[i].name && strcmp(L->opt->dims[i].name, name) == 0)
            return &L->opt->dims[i];
    return NULL;
}

/* The binding "NAME:AXIS" of axis `axis` of tensor `name`, or NULL. */
static const mp_dim_binding *find_axis_binding(const loader *L,
                                               const char *name, size_t axis)
{
    char key[320];
    int w = snprintf(key, sizeof key, "%s:%zu", name, axis);
    if (w < 0 || (size_t)w >= sizeof key)
        return NULL;
    return find_binding(L, key);
}

static void note_unbound(loader *L, const char *sym, const char *tensor,
                         size_t dim)
{
    /* one entry per symbol: "N (input 'x' dim 0)" */
    char key[200];
    snprintf(key, sizeof key, "'%s' ", sym);
    if (strstr(L->unbound, key))
        return;
    int w = snprintf(L->unbound + L->unbound_len,
                     sizeof L->unbound - L->unbound_len,
                     "%s'%s' (needed by input '%s', dim %zu)",
                     L->n_unbound ? ", " : "", sym, tensor, dim);
    if (w > 0 && (size_t)w < sizeof L->unbound - L->unbound_len)
        L->unbound_len += (size_t)w;
    L->n_unbound++;
}

/* Shape from a TypeProto: dims with symbols bound; -1 where unknown.
 * *rank -1 when the type has no shape. */
static mp_status type_shape(loader *L, const char *name,
                            const Onnx__TypeProto *tp, mp_dtype *dt,
                            int *rank, int64_t *dims, bool *has_unbound,
                            const char **first_sym, size_t *first_dim)
{
    *rank = -1;
    *dt = MP_DTYPE_UNDEFINED;
    *has_unbound = false;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !tp->tensor_type)
        return MP_OK; /* sequences, maps, optionals: unknown here */
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type) {
        char what[300];
        snprintf(what, sizeof what, "tensor '%s'", name);
        mp_status st = dtype_of(L, tt->elem_type, what, dt);
        if (st)
            return st;
    }
    if (!tt->shape) {
        /* no shape at all: a top-graph input takes one from the bindings
         * NAME:0 .. NAME:R-1 (check_bindings refuses gaps) */
        int r = 0;
        for (; L->depth == 0 && r < MP_MAX_RANK; r++) {
            const mp_dim_binding *b = find_axis_binding(L, name, (size_t)r);
            if (!b)
                break;
            dims[r] = b->value;
        }
        if (r)
            *rank = r;
        return MP_OK;
    }
    if (tt->shape->n_dim > MP_MAX_RANK)
        return mp__err(L->ctx, MP_ERR_BAD_DIM,
                      "%s: tensor '%s' has rank %zu (at most %d)", L->src,
                      name, tt->shape->n_dim, MP_MAX_RANK);
    *rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        const char *sym = NULL;
        dims[i] = -1;
        if (d && d->value_case ==
                     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value >= 0)
                dims[i] = d->dim_value;
            else if (d->dim_value < -1) /* -1: unknown, as some exporters
                                           write it */
                return mp__err(L->ctx, MP_ERR_BAD_DIM,
                              "%s: tensor '%s': dim %zu is negative (%lld)",
                              L->src, name, i, (long long)d->dim_value);
        } else if (d && d->value_case ==
                            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && d->dim_param[0]) {
            const mp_dim_binding *b = find_binding(L, d->dim_param);
            if (b && b->value >= 0)
                dims[i] = b->value;
            else if (L->opt && L->opt->unbound_dims > 0)
                dims[i] = L->opt->unbound_dims; /* a placeholder */
            else
                sym = d->dim_param;
        }
        /* a binding by position, "NAME:AXIS", of a top-graph input wins
         * over a symbol and over a fixed size (re-batching a model) */
        const mp_dim_binding *b =
            L->depth == 0 ? find_axis_binding(L, name, i) : NULL;
        if (b)
            dims[i] = b->value;
        if (dims[i] < 0 && !*has_unbound) {
            *has_unbound = true;
            *first_sym = sym;
            *first_dim = i;
        }
    }
    return MP_OK;
}

static mp_status add_attr_tensor(loader *L, uint32_t node, const char *name,
                                 const Onnx__TensorProto *t)
{
    char key[256];
    mp_status st;
    snprintf(key, sizeof key, "node '%s' attribute '%s'",
             L->g->nodes[node].name, name);
    if ((st = check_tensor_data(L, t, key)))
        return st;
    snprintf(key, sizeof key, "%s.dtype", name);
    if ((st = mp_graph_set_attr_int(L->g, node, key,
                                    t->has_data_type ? t->data_type : 0)))
        return st;
    snprintf(key, sizeof key, "%s.dims", name);
    if ((st = mp_graph_set_attr_ints(L->g, node, key, t->dims,
                                     (uint32_t)t->n_dims)))
        return st;
    int64_t cnt = tensor_count(t);
    if (t->has_data_type && mp__dtype_is_int(t->data_type) && cnt > 0 &&
        cnt <= 1024) {
        int64_t buf[1024];
        uint32_t got = tensor_values(t, cnt, buf, 1024);
        if (got) {
            snprintf(key, sizeof key, "%s.ints", name);
            return mp_graph_set_attr_ints(L->g, node, key, buf, got);
        }
    }
    return MP_OK;
}

static mp_status add_attrs(loader *L, uint32_t node,
                           const Onnx__NodeProto *np)
{
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a || !a->name || !a->name[0])
            continue;
        mp_status st = MP_OK;
        int type = a->has_type ? (int)a->type : 0;
        if (!type) { /* IR 1: the type is implied by the field set */
            if (a->has_f)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
            else if (a->has_i)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            else if (a->has_s)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
            else if (a->t)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
            else if (a->n_floats)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
            else if (a->n_ints)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            else if (a->n_strings)
                type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        }
        switch (type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
            st = mp_graph_set_attr_float(L->g, node, a->name, a->f);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
            st = mp_graph_set_attr_int(L->g, node, a->name, a->i);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            if (a->s.len && memchr(a->s.data, 0, a->s.len))
                return mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: node '%s' "
                              "attribute '%s': the string holds a NUL byte "
                              "(at %zu), which memplan cannot keep in a "
                              "string attribute", L->src,
                              L->g->nodes[node].name, a->name,
                              (size_t)((const uint8_t *)memchr(a->s.data, 0,
                                                               a->s.len) -
                                       a->s.data));
            char *s = mp__alloc(L->ctx, a->s.len + 1);
            if (!s)
                return MP_ERR_NOMEM;
            if (a->s.len)
                memcpy(s, a->s.data, a->s.len);
            s[a->s.len] = '\0';
            st = mp_graph_set_attr_string(L->g, node, a->name, s);
            mp__dealloc(L->ctx, s);
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            if (a->n_ints > UINT32_MAX)
                return mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: attribute "
                              "too long", L->src);
            st = mp_graph_set_attr_ints(L->g, node, a->name, a->ints,
                                        (uint32_t)a->n_ints);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
            if (a->n_floats > UINT32_MAX)
                return mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: attribute "
                              "too long", L->src);
            double *d = mp__alloc(L->ctx, (a->n_floats ? a->n_floats : 1) *
                                             sizeof *d);
            if (!d)
                return MP_ERR_NOMEM;
            for (size_t k = 0; k < a->n_floats; k++)
                d[k] = a->floats[k];
            st = mp_graph_set_attr_floats(L->g, node, a->name, d,
                                          (uint32_t)a->n_floats);
            mp__dealloc(L->ctx, d);
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
            if (a->t)
                st = add_attr_tensor(L, node, a->name, a->t);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
            /* kept as NAME.strings (core/ops/strval.h): StringNormalizer's
             * stopwords */
            const char **sv = mp__alloc(L->ctx, (a->n_strings + 1) *
                                                   sizeof *sv);
            size_t *sl = mp__alloc(L->ctx, (a->n_strings + 1) * sizeof *sl);
            if (sv && sl) {
                for (size_t k = 0; k < a->n_strings; k++) {
                    sv[k] = (const char *)a->strings[k].data;
                    sl[k] = a->strings[k].len;
                }
                st = mp__graph_set_attr_strings(L->g, node, a->name, sv, sl,
                                               a->n_strings);
            } else {
                st = MP_ERR_NOMEM;
            }
            mp__dealloc(L->ctx, sv);
            mp__dealloc(L->ctx, sl);
            break;
        }
        default:
            /* graphs (If/Loop/Scan bodies), strings, sparse tensors, type
             * protos: not used by shape inference yet */
            break;
        }
        if (st)
            return st;
    }
    return MP_OK;
}

/* Finds or creates an activation tensor (unknown shape) by name. */
static mp_status tensor_by_name(loader *L, const char *name, uint32_t *id)
{
    if (mp_graph_find_tensor(L->g, name, id) == MP_OK)
        return MP_OK;
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, 0,
                        MP_KIND_ACTIVATION};
    return mp_graph_add_tensor(L->g, &d, id);
}

/* Sets a Constant node's output from its attribute. */
static mp_status constant_output(loader *L, const Onnx__NodeProto *np,
                                 uint32_t out)
{
    mp__tensor *t = &L->g->tensors[out];
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a || !a->name)
            continue;
        uint32_t id;
        if (strcmp(a->name, "value") == 0 && a->t)
            return add_proto_tensor(L, t->name, a->t, MP_KIND_ACTIVATION, out,
                                    &id);
        mp_status st = MP_OK;
        if (strcmp(a->name, "value_int") == 0) {
            t->dtype = MP_DTYPE_INT64;
            st = mp__tensor_set_shape(L->ctx, t, 0, NULL);
            if (!st)
                st = mp__tensor_set_value(L->ctx, t, &a->i, 1);
            return st;
        }
        if (strcmp(a->name, "value_ints") == 0) {
            int64_t n = (int64_t)a->n_ints;
            t->dtype = MP_DTYPE_INT64;
            st = mp__tensor_set_shape(L->ctx, t, 1, &n);
            if (!st && a->n_ints)
                st = mp__tensor_set_value(L->ctx, t, a->ints,
                                         (uint32_t)(a->n_ints > MP__VALUE_MAX
                                                        ? 0
                                                        : a->n_ints));
            return st;
        }
        if (strcmp(a->name, "value_float") == 0) {
            double d = a->f;
            int64_t bits;
            memcpy(&bits, &d, sizeof bits);
            t->dtype = MP_DTYPE_FLOAT32;
            st = mp__tensor_set_shape(L->ctx, t, 0, NULL);
            if (!st)
                st = mp__tensor_set_value(L->ctx, t, &bits, 1);
            return st;
        }
        if (strcmp(a->name, "value_floats") == 0) {
            int64_t n = (int64_t)a->n_floats;
            t->dtype = MP_DTYPE_FLOAT32;
            return mp__tensor_set_shape(L->ctx, t, 1, &n);
        }
        if (strcmp(a->name, "value_string") == 0) {
            const char *sv = (const char *)a->s.data;
            size_t sl = a->s.len;
            t->dtype = MP_DTYPE_STRING;
            st = mp__tensor_set_shape(L->ctx, t, 0, NULL);
            return st ? st : mp__str_set_value(L->g, t, &sv, &sl, 1);
        }
        if (strcmp(a->name, "value_strings") == 0) {
            int64_t n = (int64_t)a->n_strings;
            t->dtype = MP_DTYPE_STRING;
            st = mp__tensor_set_shape(L->ctx, t, 1, &n);
            if (st || !a->n_strings || a->n_strings > MP__VALUE_MAX)
                return st;
            const char **sv = mp__alloc(L->ctx, a->n_strings * sizeof *sv);
            size_t *sl = mp__alloc(L->ctx, a->n_strings * sizeof *sl);
            if (sv && sl) {
                for (size_t k = 0; k < a->n_strings; k++) {
                    sv[k] = (const char *)a->strings[k].data;
                    sl[k] = a->strings[k].len;
                }
                st = mp__str_set_value(L->g, t, sv, sl,
                                      (uint32_t)a->n_strings);
            } else {
                st = MP_ERR_NOMEM;
            }
            mp__dealloc(L->ctx, sv);
            mp__dealloc(L->ctx, sl);
            return st;
        }
        if (strcmp(a->name, "sparse_value") == 0 && a->sparse_tensor) {
            const Onnx__SparseTensorProto *sp = a->sparse_tensor;
            if (sp->n_dims > MP_MAX_RANK || !sp->values)
                break;
            t->dtype = (uint8_t)(sp->values->has_data_type
                                     ? sp->values->data_type
                                     : 0);
            return mp__tensor_set_shape(L->ctx, t, (int32_t)sp->n_dims,
                                       sp->dims);
        }
    }
    return mp__err(L->ctx, MP_ERR_PARSE,
                  "%s: Constant node '%s' has no value attribute", L->src,
                  np->name ? np->name : "");
}

static mp_status build(loader *L, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = m->graph;
    mp_status st;
    if (!gp)
        return mp__err(L->ctx, MP_ERR_PARSE, "%s: the ONNX model has no graph",
                      L->src);
    if (m->has_ir_version && m->ir_version < 0)
        return mp__err(L->ctx, MP_ERR_CORRUPT, "%s: the model's ir_version "
                      "is negative (%lld)", L->src,
                      (long long)m->ir_version);
    L->g->onnx_opset = m->n_opset_import ? 0 : 1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (o && o->has_version && o->version < 0)
            return mp__err(L->ctx, MP_ERR_CORRUPT, "%s: opset_import %zu "
                          "(domain '%s') has a negative version (%lld)",
                          L->src, i,
                          o->domain && o->domain[0] ? o->domain : "ai.onnx",
                          (long long)o->version);
        if (o && (!o->domain || !o->domain[0] ||
                  strcmp(o->domain, "ai.onnx") == 0) && o->has_version)
            L->g->onnx_opset = o->version;
    }
    if ((st = value_names(L)) || (st = build_graph(L, gp)))
        return st;
    for (size_t i = 0; L->vused && i < L->opt->n_values; i++)
        if (!L->vused[i])
            return mp__err(L->ctx, MP_ERR_INVALID_ARG, "%s: a value is given "
                          "for '%s', which is no graph input of the model "
                          "(or is an initializer)", L->src, L->vnames[i]);
    return finish_top(L, gp);
}

/* Re-batching (--batch, g->rebatch_from/to): a bool initializer of rank
 * >= 2 whose leading dim is the exported batch B0 is a per-batch mask
 * folded at export (the dynamo exporter folds GPT-2's attention mask
 * into a [B0, 1, T, T] constant): its leading dim becomes N, its value
 * (if carried) is dropped. Weights are float and keep their shapes. */
static mp_status rebatch_mask(loader *L, uint32_t id)
{
    mp_graph *g = L->g;
    mp__tensor *t = &g->tensors[id];
    int64_t from = g->rebatch_from, to = g->rebatch_to;
    if (from <= 0 || to <= 0 || from == to || t->dtype != MP_DTYPE_BOOL ||
        t->rank < 2 || t->dims[0] != from)
        return MP_OK;
    int64_t d[MP_MAX_RANK], old[MP_MAX_RANK];
    memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
    memcpy(old, t->dims, (size_t)t->rank * sizeof *d);
    d[0] = to;
    t->value = NULL;
    t->n_value = 0;
    uint64_t b;
    mp_status st = mp__tensor_set_shape(L->ctx, t, t->rank, d);
    if (!st)
        st = mp__tensor_bytes_from_shape(L->ctx, t, &b);
    if (!st)
        t->bytes = b;
    if (!st)
        st = mp__graph_note_rebatch(g, MP_REBATCH_MASK, MP_NONE, id, old, d,
                                    t->rank);
    return st;
}

/* initializers: weights */
static mp_status add_initializers(loader *L, const Onnx__GraphProto *gp)
{
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t || !t->name || !t->name[0])
            return mp__err(L->ctx, MP_ERR_PARSE, "%s: initializer %zu has no "
                          "name", L->src, i);
        uint32_t id;
        if (mp_graph_find_tensor(L->g, t->name, &id) == MP_OK)
            return mp__err(L->ctx, MP_ERR_DUPLICATE, "%s: initializer '%s' "
                          "is given twice", L->src, t->name);
        mp_status st = add_proto_tensor(L, t->name, t, MP_KIND_WEIGHT,
                                        MP_NONE, &id);
        if (!st)
            st = rebatch_mask(L, id);
        if (st)
            return st;
    }
    return MP_OK;
}

/* Graph input i names tensor id, which exists already: an initializer
 * (IR < 4 lists them as inputs too), whose dtype and dims its declared
 * type must match, or an earlier graph input of the same name. */
static mp_status input_again(loader *L, const Onnx__GraphProto *gp, size_t i,
                             uint32_t id)
{
    const Onnx__ValueInfoProto *v = gp->input[i];
    const mp__tensor *t = &L->g->tensors[id];
    int64_t dims[MP_MAX_RANK];
    mp_dtype dt;
    int rank;
    bool unbound;
    const char *sym = NULL;
    size_t sd = 0, first = 0;
    char a[200], b[200];
    if (t->declared_kind != MP_KIND_WEIGHT) {
        while (first < i && strcmp(gp->input[first]->name, v->name) != 0)
            first++;
        mp_dtype dt0;
        int rank0;
        int64_t dims0[MP_MAX_RANK];
        mp_status st = type_shape(L, v->name, gp->input[first]->type, &dt0,
                                  &rank0, dims0, &unbound, &sym, &sd);
        if (!st)
            st = type_shape(L, v->name, v->type, &dt, &rank, dims, &unbound,
                            &sym, &sd);
        if (st)
            return st;
        bool same = dt == dt0 && rank == rank0 &&
                    memcmp(dims, dims0, (size_t)(rank > 0 ? rank : 0) *
                                            sizeof *dims) == 0;
        return mp__err(L->ctx, MP_ERR_DUPLICATE, "%s: graph input '%s' is "
                      "listed twice (inputs %zu and %zu)%s%s%s%s%s", L->src,
                      v->name, first, i, same ? "" : ", as ",
                      same ? "" : rank0 < 0 ? "unknown shape"
                                            : dims_str(a, sizeof a, rank0,
                                                       dims0),
                      same ? "" : " and as ",
                      same ? "" : rank < 0 ? "unknown shape"
                                           : dims_str(b, sizeof b, rank,
                                                      dims),
                      same ? "" : dt != dt0 ? " (and data types differ)"
                                            : "");
    }
    /* an initializer: its dims are fixed; bindings of a weight are
     * refused later (check_bindings) */
    mp_status st = type_shape(L, v->name, v->type, &dt, &rank, dims,
                              &unbound, &sym, &sd);
    if (st)
        return st;
    if (dt != MP_DTYPE_UNDEFINED && t->dtype != MP_DTYPE_UNDEFINED &&
        dt != t->dtype)
        return mp__err(L->ctx, MP_ERR_DUPLICATE, "%s: initializer '%s' is "
                      "%s, but graph input '%s' (input %zu) declares %s",
                      L->src, v->name, mp_dtype_name((mp_dtype)t->dtype),
                      v->name, i, mp_dtype_name(dt));
    bool differ = rank >= 0 && t->rank >= 0 && rank != t->rank;
    for (int k = 0; !differ && rank >= 0 && k < rank; k++)
        differ = dims[k] >= 0 && dims[k] != t->dims[k];
    if (differ)
        return mp__err(L->ctx, MP_ERR_DUPLICATE, "%s: initializer '%s' has "
                      "dims %s, but graph input '%s' (input %zu) declares %s",
                      L->src, v->name, dims_str(a, sizeof a, t->rank, t->dims),
                      v->name, i, dims_str(b, sizeof b, rank, dims));
    return MP_OK;
}

/* graph inputs that are not initializers (a body's, in order, are its
 * sub_inputs) */
static mp_status add_graph_inputs(loader *L, const Onnx__GraphProto *gp,
                                  bool sub)
{
    int64_t dims[MP_MAX_RANK];
    size_t cap_sub = 0;
    mp_status st;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *v = gp->input[i];
        if (!v || !v->name || !v->name[0])
            return mp__err(L->ctx, MP_ERR_PARSE, "%s: graph input %zu has no "
                          "name", L->src, i);
        uint32_t id;
        if (sub) {
            if ((st = mp__grow(L->ctx, (void **)&L->g->sub_inputs,
                              sizeof *L->g->sub_inputs,
                              L->g->n_sub_inputs + 1, &cap_sub)))
                return st;
        }
        if (mp_graph_find_tensor(L->g, v->name, &id) == MP_OK) {
            if (sub) /* a name given twice */
                return mp__err(L->ctx, MP_ERR_DUPLICATE, "%s: subgraph "
                              "input '%s' is given twice", L->src, v->name);
            /* IR < 4: an initializer listed as input, which must agree */
            if ((st = input_again(L, gp, i, id)))
                return st;
            continue;
        }
        mp_dtype dt;
        int rank;
        bool unbound;
        const char *sym = NULL;
        size_t sd = 0;
        const mp_input_value *iv = sub ? NULL : find_value(L, v->name);
        if (iv) {
            if ((st = add_bound_input(L, v, iv, &id)))
                return st;
            continue;
        }
        if ((st = type_shape(L, v->name, v->type, &dt, &rank, dims, &unbound,
                             &sym, &sd)))
            return st;
        mp_tensor_desc d = {v->name, dt, rank, dims, 0, MP_KIND_INPUT};
        if ((st = mp_graph_add_tensor(L->g, &d, &id)))
            return st;
        mp__seq *sq; /* a sequence or optional input */
        if ((st = mp__onnx_seq_of_type(L->ctx, v->type, &sq)) ||
            (sq && (st = mp__tensor_take_seq(L->ctx, &L->g->tensors[id], sq))))
            return st;
        if (sub)
            L->g->sub_inputs[L->g->n_sub_inputs++] = id;
    }
    return MP_OK;
}

/* declared shapes of intermediate values and outputs */
static mp_status add_declared_shapes(loader *L, const Onnx__GraphProto *gp)
{
    int64_t dims[MP_MAX_RANK];
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? gp->n_output : gp->n_value_info;
        Onnx__ValueInfoProto **vs = pass ? gp->output : gp->value_info;
        for (size_t i = 0; i < n; i++) {
            const Onnx__ValueInfoProto *v = vs[i];
            uint32_t id;
            if (!v || !v->name || !v->name[0] ||
                mp_graph_find_tensor(L->g, v->name, &id) == MP_OK)
                continue;
            mp_dtype dt;
            int rank;
            bool unbound;
            const char *sym;
            size_t sd;
            mp_status st = type_shape(L, v->name, v->type, &dt, &rank, dims,
                                      &unbound, &sym, &sd);
            if (st)
                return st;
            mp_tensor_desc d = {v->name, dt, rank, dims, 0,
                                MP_KIND_ACTIVATION};
            if ((st = mp_graph_add_tensor(L->g, &d, &id)))
                return st;
            /* a hint: an inferred shape that disagrees replaces it */
            L->g->tensors[id].flags |= MP__TF_SHAPE_HINT;
        }
    }
    return MP_OK;
}

/* The operands and name of the node being added (buffers reused from
 * node to node). */
typedef struct node_buf {
    uint32_t *ins, *outs;
    size_t cap_in, cap_out;
    size_t n_in, n_out, n_body;
    char name[512];
} node_buf;

/* node name: as given, else op_index; unique */
static void node_name(loader *L, const Onnx__NodeProto *np, size_t k,
                      node_buf *nb)
{
    uint32_t dup;
    if (np->name && np->name[0])
        snprintf(nb->name, sizeof nb->name, "%s", np->name);
    else
        snprintf(nb->name, sizeof nb->name, "%s_%zu", np->op_type, k);
    if (mp_graph_find_node(L->g, nb->name, &dup) == MP_OK) {
        size_t len = strlen(nb->name);
        snprintf(nb->name + (len < 480 ? len : 480), 32, "#%zu", k);
    }
}

/* The node's inputs (its bodies come after: body_begin, body_end). */
static mp_status node_inputs(loader *L, const Onnx__NodeProto *np,
                             node_buf *nb)
{
    mp_status st = MP_OK;
    for (size_t i = 0; i < np->n_input && !st; i++) {
        if (!np->input[i] || !np->input[i][0])
            nb->ins[i] = MP_NONE;
        else
            st = tensor_by_name(L, np->input[i], &nb->ins[i]);
    }
    nb->n_in = np->n_input;
    nb->n_body = 0;
    return st;
}

/* The node's outputs; the memory a body needs is an extra output
 * NODE:body (sized by inference). */
static mp_status node_outputs(loader *L, const Onnx__NodeProto *np,
                              node_buf *nb)
{
    if (nb->n_body && mp__grow(L->ctx, (void **)&nb->outs, sizeof *nb->outs,
                               np->n_output + 1, &nb->cap_out))
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    char oname[600];
    for (size_t i = 0; i < np->n_output && !st; i++) {
        if (np->output[i] && np->output[i][0]) {
            st = tensor_by_name(L, np->output[i], &nb->outs[i]);
        } else {
            /* an omitted optional output keeps its position */
            snprintf(oname, sizeof oname, "%s:omitted%zu", nb->name, i);
            st = tensor_by_name(L, oname, &nb->outs[i]);
        }
    }
    nb->n_out = np->n_output;
    if (nb->n_body && !st) {
        snprintf(oname, sizeof oname, "%s:body", nb->name);
        st = tensor_by_name(L, oname, &nb->outs[nb->n_out++]);
    }
    return st;
}

/* The node's attributes; a node with bodies also records its own input
 * count and, per graph attribute, the index of its subgraph. */
static mp_status node_attrs(loader *L, const Onnx__NodeProto *np,
                            uint32_t nid, size_t n_body)
{
    mp_status st = add_attrs(L, nid, np);
    if (st || !n_body)
        return st;
    st = mp_graph_set_attr_int(L->g, nid, "body.inputs",
                               (int64_t)np->n_input);
    size_t first = L->g->n_subgraphs - n_body;
    for (size_t a = 0; a < np->n_attribute && !st; a++) {
        const Onnx__AttributeProto *at = np->attribute[a];
        if (!at || !at->g || !at->name)
            continue;
        char key[256];
        snprintf(key, sizeof key, "%s.graph", at->name);
        st = mp_graph_set_attr_int(L->g, nid, key, (int64_t)first++);
    }
    return st;
}

/* Node k of the graph, up to its bodies: checks, name, inputs. */
static mp_status node_begin(loader *L, const Onnx__NodeProto *np, size_t k,
                            node_buf *nb)
{
    if (!np || !np->op_type || !np->op_type[0])
        return mp__err(L->ctx, MP_ERR_PARSE, "%s: node %zu has no op type",
                      L->src, k);
    if (np->n_input > UINT32_MAX / 2 || np->n_output > UINT32_MAX / 2)
        return mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: node %zu has too "
                      "many inputs", L->src, k);
    node_name(L, np, k, nb);
    if (mp__grow(L->ctx, (void **)&nb->ins, sizeof *nb->ins, np->n_input + 1,
                &nb->cap_in) ||
        mp__grow(L->ctx, (void **)&nb->outs, sizeof *nb->outs,
                np->n_output + 1, &nb->cap_out))
        return MP_ERR_NOMEM;
    return node_inputs(L, np, nb);
}

/* Node k after its bodies: outputs, the node, its attributes, and the
 * value of a Constant's output. */
static mp_status node_end(loader *L, const Onnx__NodeProto *np, node_buf *nb)
{
    mp_status st = node_outputs(L, np, nb);
    if (st)
        return st;
    const char *dom = np->domain ? np->domain : "";
    if (strcmp(dom, "ai.onnx") == 0)
        dom = "";
    mp_node_desc nd = {nb->name, np->op_type, dom, nb->ins,
                       (uint32_t)nb->n_in, nb->outs,
                       (uint32_t)nb->n_out, MP_PHASE_FORWARD};
    uint32_t nid;
    st = mp_graph_add_node(L->g, &nd, &nid);
    if (st) {
        char *msg = mp__strdup(L->ctx, mp_ctx_message(L->ctx));
        if (!msg)
            return MP_ERR_NOMEM;
        mp__err(L->ctx, st, "%s: %s", L->src, msg);
        mp__dealloc(L->ctx, msg);
        return st;
    }
    st = node_attrs(L, np, nid, nb->n_body);
    if (!st && strcmp(np->op_type, "Constant") == 0 && !dom[0] &&
        np->n_output >= 1)
        st = constant_output(L, np, nb->outs[0]);
    return st;
}

/* graph outputs (a body's, in order, are its sub_outputs) */
static mp_status mark_graph_outputs(loader *L, const Onnx__GraphProto *gp,
                                    bool sub)
{
    size_t cap_sub_out = 0;
    mp_status st;
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *v = gp->output[i];
        uint32_t id;
        if (!v || !v->name || !v->name[0])
            continue;
        if (sub) { /* may name a value of an enclosing scope */
            if ((st = tensor_by_name(L, v->name, &id)))
                return st;
        } else if (mp_graph_find_tensor(L->g, v->name, &id) != MP_OK)
            return mp__err(L->ctx, MP_ERR_NO_PRODUCER, "%s: graph output "
                          "'%s' is produced by no node", L->src, v->name);
        if ((st = mp_graph_mark_output(L->g, id)))
            return st;
        if (sub) {
            if ((st = mp__grow(L->ctx, (void **)&L->g->sub_outputs,
                              sizeof *L->g->sub_outputs,
                              L->g->n_sub_outputs + 1, &cap_sub_out)))
                return st;
            L->g->sub_outputs[L->g->n_sub_outputs++] = id;
        }
    }
    return MP_OK;
}

/* names a body reads but does not define come from enclosing scopes:
 * inputs of the body (values the enclosing graph holds), listed in
 * L->outer */
static mp_status take_outer_names(loader *L)
{
    for (uint32_t t = 0; t < L->g->n_tensors; t++) {
        mp__tensor *tt = &L->g->tensors[t];
        if (tt->producer != MP_NONE || tt->declared_kind != MP_KIND_ACTIVATION)
            continue;
        bool used = (tt->flags & MP__TF_OUTPUT) != 0;
        for (size_t k = 0; k < L->g->n_nodes && !used; k++)
            for (uint32_t i = 0; i < L->g->nodes[k].n_in; i++)
                if (L->g->nodes[k].inputs[i] == t) {
                    used = true;
                    break;
                }
        if (!used)
            continue;
        mp_status st = mp__grow(L->ctx, (void **)&L->outer, sizeof *L->outer,
                                L->n_outer + 1, &L->cap_outer);
        if (st)
            return st;
        tt->kind = tt->declared_kind = MP_KIND_INPUT;
        L->outer[L->n_outer++] = t;
    }
    return MP_OK;
}

/* ---- building graphs: an explicit stack of the graphs being built ----
 * A node's bodies (If/Loop/Scan graph attributes) are built before the
 * node is added, since the names a body takes from enclosing scopes become
 * extra inputs of the node. One frame per graph open, on the heap: the C
 * stack stays flat at any nesting (the scan, onnx_scan.c, bounds it to
 * MAX_DEPTH). */
typedef struct bframe {
    loader *L;  /* the graph being built: the caller's, or sub */
    loader sub; /* a body's loader */
    const Onnx__GraphProto *gp;
    size_t k, a; /* the node being added, its next attribute */
    node_buf nb;
    bool in_node;
} bframe;

/* The part of a graph before its nodes. */
static mp_status graph_begin(loader *L, const Onnx__GraphProto *gp, bool sub)
{
    mp_status st;
    if (gp->name && gp->name[0] && (st = mp_graph_set_name(L->g, gp->name)))
        return st;
    if ((st = add_initializers(L, gp)) || (st = add_graph_inputs(L, gp, sub)))
        return st;
    if ((!L->opt || L->opt->declared_shapes) &&
        (st = add_declared_shapes(L, gp)))
        return st;
    return MP_OK;
}

/* The part of a graph after its nodes. */
static mp_status graph_end(loader *L, const Onnx__GraphProto *gp, bool sub)
{
    mp_status st = mark_graph_outputs(L, gp, sub);
    return st ? st : sub ? take_outer_names(L) : MP_OK;
}

/* A body of the node of frame f (graph attribute gp) as a graph owned by
 * f's graph, to be built in frame c. */
static mp_status body_begin(bframe *f, bframe *c, const Onnx__GraphProto *gp)
{
    loader *L = f->L;
    memset(c, 0, sizeof *c);
    if (L->depth >= MAX_DEPTH)
        return mp__err(L->ctx, MP_ERR_UNSUPPORTED, "%s: subgraphs nested "
                      "deeper than %d", L->src, MAX_DEPTH);
    mp_graph *sub = NULL;
    mp_status st = mp__grow(L->ctx, (void **)&L->g->subgraphs,
                           sizeof *L->g->subgraphs, L->g->n_subgraphs + 1,
                           &L->g->cap_subgraphs);
    if (!st)
        st = mp_graph_create(L->ctx, &sub);
    if (st)
        return st;
    L->g->subgraphs[L->g->n_subgraphs++] = sub;
    sub->onnx_opset = L->g->onnx_opset;
    /* one string table for the whole tree (core/ops/strval.h) */
    sub->str_root = L->g->str_root ? L->g->str_root : L->g;
    c->sub = (loader){.ctx = L->ctx, .g = sub, .src = L->src, .opt = L->opt,
                      .depth = L->depth + 1};
    c->L = &c->sub;
    c->gp = gp;
    return graph_begin(c->L, gp, true);
}

/* The body built in frame c: the names it takes from enclosing scopes
 * become extra inputs of f's node. */
static mp_status body_end(bframe *f, bframe *c)
{
    loader *L = f->L, *S = c->L;
    node_buf *nb = &f->nb;
    mp_status st = MP_OK;
    for (size_t i = 0; i < S->n_outer && !st; i++) {
        uint32_t id;
        if ((st = mp__grow(L->ctx, (void **)&nb->ins, sizeof *nb->ins,
                          nb->n_in + 1, &nb->cap_in)))
            break;
        st = tensor_by_name(L, S->g->tensors[S->outer[i]].name, &id);
        bool dup = false;
        for (size_t k = 0; k < nb->n_in && !st; k++)
            if (nb->ins[k] == id)
                dup = true;
        if (!st && !dup)
            nb->ins[nb->n_in++] = id;
    }
    nb->n_body++;
    return st;
}

static void frame_free(bframe *f)
{
    if (!f->L)
        return;
    mp_ctx *ctx = f->L->ctx;
    mp__dealloc(ctx, f->nb.ins);
    mp__dealloc(ctx, f->nb.outs);
    if (f->L == &f->sub)
        mp__dealloc(ctx, f->sub.outer);
    memset(f, 0, sizeof *f);
}

/* The graph gp into top->g, with its bodies. */
static mp_status build_graph(loader *top, const Onnx__GraphProto *gp)
{
    bframe *fs = mp__calloc(top->ctx, MAX_DEPTH + 1, sizeof *fs);
    if (!fs)
        return MP_ERR_NOMEM;
    size_t n = 1;
    fs[0].L = top;
    fs[0].gp = gp;
    mp_status st = graph_begin(top, gp, false);
    while (!st && n) {
        bframe *f = &fs[n - 1];
        const Onnx__GraphProto *g = f->gp;
        if (!f->in_node) {
            if (f->k == g->n_node) { /* the graph is complete */
                st = graph_end(f->L, g, n > 1);
                if (!st && n > 1)
                    st = body_end(&fs[n - 2], f);
                if (!st && n > 1)
                    fs[n - 2].a++;
                frame_free(f);
                n--;
                continue;
            }
            st = node_begin(f->L, g->node[f->k], f->k, &f->nb);
            f->in_node = true;
            f->a = 0;
            continue;
        }
        const Onnx__NodeProto *np = g->node[f->k];
        while (f->a < np->n_attribute &&
               (!np->attribute[f->a] || !np->attribute[f->a]->g ||
                !np->attribute[f->a]->name))
            f->a++;
        if (f->a < np->n_attribute) { /* a body: built in a new frame */
            if (n > MAX_DEPTH) {
                st = mp__err(top->ctx, MP_ERR_UNSUPPORTED, "%s: subgraphs "
                            "nested deeper than %d", top->src, MAX_DEPTH);
                break;
            }
            st = body_begin(f, &fs[n], np->attribute[f->a]->g);
            n++;
            continue;
        }
        st = node_end(f->L, np, &f->nb);
        f->in_node = false;
        f->k++;
    }
    while (n)
        frame_free(&fs[--n]);
    mp__dealloc(top->ctx, fs);
    return st;
}

/* ---- dim bindings: each must name something of the model --------------- */
static bool shape_has_symbol(const Onnx__ValueInfoProto *v, const char *sym)
{
    if (!v || !v->type ||
        v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !v->type->tensor_type || !v->type->tensor_type->shape)
        return false;
    const Onnx__TensorShapeProto *sp = v->type->tensor_type->shape;
    for (size_t i = 0; i < sp->n_dim; i++)
        if (sp->dim[i] &&
            sp->dim[i]->value_case ==
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
            sp->dim[i]->dim_param && strcmp(sp->dim[i]->dim_param, sym) == 0)
            return true;
    return false;
}

/* True when sym is a dim_param somewhere in gp (inputs, outputs,
 * value_info, bodies of its nodes). */
static bool graph_has_symbol(const Onnx__GraphProto *gp, const char *sym,
                             unsigned depth)
{
    if (!gp || depth > MAX_DEPTH)
        return false;
    for (size_t i = 0; i < gp->n_input; i++)
        if (shape_has_symbol(gp->input[i], sym))
            return true;
    for (size_t i = 0; i < gp->n_output; i++)
        if (shape_has_symbol(gp->output[i], sym))
            return true;
    for (size_t i = 0; i < gp->n_value_info; i++)
        if (shape_has_symbol(gp->value_info[i], sym))
            return true;
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        for (size_t a = 0; np && a < np->n_attribute; a++) {
            const Onnx__AttributeProto *at = np->attribute[a];
            if (!at)
                continue;
            if (graph_has_symbol(at->g, sym, depth + 1))
                return true;
            for (size_t j = 0; j < at->n_graphs; j++)
                if (graph_has_symbol(at->graphs[j], sym, depth + 1))
                    return true;
        }
    }
    return false;
}

/* Every binding names a symbolic dim of the model or an existing axis
 * "INPUT:AXIS" of a graph input (a rankless input: axes 0..R-1, no gap);
 * a name given twice has one value. Nothing is silently ignored. */
static mp_status check_bindings(loader *L, const Onnx__GraphProto *gp)
{
    size_t n = L->opt ? L->opt->n_dims : 0;
    for (size_t i = 0; i < n; i++) {
        const mp_dim_binding *b = &L->opt->dims[i];
        const mp_dim_binding *first = find_binding(L, b->name);
        if (first != b && first->value != b->value)
            return mp__err(L->ctx, MP_ERR_INVALID_ARG,
                          "%s: dim '%s' is bound twice (%lld and %lld)",
                          L->src, b->name, (long long)first->value,
                          (long long)b->value);
        if (graph_has_symbol(gp, b->name, 0))
            continue;
        /* "INPUT:AXIS" */
        const char *colon = strrchr(b->name, ':');
        size_t axis = 0;
        bool pos = colon && colon > b->name && colon[1];
        for (const char *c = pos ? colon + 1 : ""; *c && pos; c++) {
            if (*c < '0' || *c > '9' || axis > 1000000)
                pos = false;
            else
                axis = axis * 10 + (size_t)(*c - '0');
        }
        const Onnx__ValueInfoProto *in = NULL;
        size_t plen = pos ? (size_t)(colon - b->name) : 0;
        for (size_t k = 0; pos && k < gp->n_input && !in; k++)
            if (gp->input[k] && gp->input[k]->name &&
                strlen(gp->input[k]->name) == plen &&
                memcmp(gp->input[k]->name, b->name, plen) == 0)
                in = gp->input[k];
        char pname[320];
        snprintf(pname, sizeof pname, "%.*s", (int)plen, b->name);
        uint32_t id;
        bool weight = pos && mp_graph_find_tensor(L->g, pname, &id) == MP_OK &&
                      L->g->tensors[id].declared_kind == MP_KIND_WEIGHT;
        if (!in && !weight)
            return mp__err(L->ctx, MP_ERR_INVALID_ARG,
                          "%s: dim binding '%s' names no symbolic dim "
                          "(dim_param) of the model and no axis INPUT:AXIS "
                          "of a graph input",
                          L->src, b->name);
        if (weight)
            return mp__err(L->ctx, MP_ERR_INVALID_ARG,
                          "%s: dim binding '%s': '%s' is a weight "
                          "(initializer), not an input whose dims can be "
                          "bound",
                          L->src, b->name, pname);
        const Onnx__TypeProto *tp = in->type;
        bool tensor = tp && tp->value_case ==
                                ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                      tp->tensor_type;
        if (tensor && tp->tensor_type->shape) {
            size_t r = tp->tensor_type->shape->n_dim;
            if (axis >= r)
                return mp__err(L->ctx, MP_ERR_INVALID_ARG,
                              "%s: dim binding '%s': graph input '%s' has "
                              "rank %zu (axes 0..%zu), no axis %zu",
                              L->src, b->name, in->name, r,
                              r ? r - 1 : 0, axis);
            continue;
        }
        size_t r = 0;
        while (r < MP_MAX_RANK && find_axis_binding(L, in->name, r))
            r++;
        if (!tensor || axis >= r)
            return mp__err(L->ctx, MP_ERR_INVALID_ARG,
                          "%s: dim binding '%s': graph input '%s' has no "
                          "declared shape; give its whole shape (--shape "
                          "%s=D0xD1x..., i.e. bindings %s:0 .. %s:R-1 with "
                          "no gap, rank at most %d)",
                          L->src, b->name, in->name, in->name, in->name,
                          in->name, MP_MAX_RANK);
    }
    return MP_OK;
}

/* Top graph: unbound symbols of the inputs it uses, then finalize (shape
 * inference). */
static mp_status finish_top(loader *L, const Onnx__GraphProto *gp)
{
    mp_status st = check_bindings(L, gp);
    if (st)
        return st;
    int64_t dims[MP_MAX_RANK];
    /* unbound symbols of used inputs */
    bool *used = mp__calloc(L->ctx, L->g->n_tensors ? L->g->n_tensors : 1,
                           sizeof *used);
    if (!used)
        return MP_ERR_NOMEM;
    for (size_t k = 0; k < L->g->n_nodes; k++) {
        const mp__node *n = &L->g->nodes[k];
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE)
                used[n->inputs[i]] = true;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *v = gp->input[i];
        uint32_t id;
        if (mp_graph_find_tensor(L->g, v->name, &id) != MP_OK ||
            L->g->tensors[id].kind != MP_KIND_INPUT)
            continue;
        if (!used[id] && !(L->g->tensors[id].flags & MP__TF_OUTPUT))
            continue;
        if (find_value(L, v->name) || L->g->tensors[id].seq)
            continue; /* its shape is the value's; a sequence's is
                         checked with its size */
        mp_dtype dt;
        int rank;
        bool unbound;
        const char *sym = NULL;
        size_t sd = 0;
        if ((st = type_shape(L, v->name, v->type, &dt, &rank, dims, &unbound,
                             &sym, &sd)))
            break;
        if (rank < 0 || dt == MP_DTYPE_UNDEFINED) {
            st = rank < 0 ? mp__err(L->ctx, MP_ERR_SHAPE, "%s: graph input "
                                   "'%s' has no declared shape; give it with "
                                   "--shape %s=D0xD1x... (bindings %s:0 .. "
                                   "%s:R-1)", L->src, v->name, v->name,
                                   v->name, v->name)
                          : mp__err(L->ctx, MP_ERR_SHAPE, "%s: graph input "
                                   "'%s' has no declared element type",
                                   L->src, v->name);
            break;
        }
        if (unbound && !sym) {
            st = mp__err(L->ctx, MP_ERR_SHAPE, "%s: graph input '%s': dim %zu "
                        "has neither a size nor a name; bind it with --dim "
                        "%s:%zu=VALUE", L->src, v->name, sd, v->name, sd);
            break;
        }
        /* every unbound symbol of the input, not only its first: a user
         * binds them all in one run */
        for (int d = 0; unbound && d < rank; d++) {
            const Onnx__TensorShapeProto__Dimension *dd =
                v->type->tensor_type->shape->dim[d];
            if (dims[d] < 0 && dd && dd->dim_param && dd->dim_param[0])
                note_unbound(L, dd->dim_param, v->name, (size_t)d);
            if (dims[d] < 0 && d == 0)
                L->unbound_batch = 1;
        }
    }
    mp__dealloc(L->ctx, used);
    if (st)
        return st;
    if (L->n_unbound)
        return mp__err(L->ctx, MP_ERR_SHAPE,
                      "%s: %u symbolic dim%s not bound: %s; bind %s with "
                      "--dim NAME=VALUE%s",
                      L->src, L->n_unbound, L->n_unbound > 1 ? "s" : "",
                      L->unbound, L->n_unbound > 1 ? "them" : "it",
                      L->unbound_batch ? " (a leading batch dim also with "
                                         "--batch N)"
                                       : "");
    st = mp_graph_finalize(L->g);
    if (st) {
        char msg[MP__MSG_MAX];
        snprintf(msg, sizeof msg, "%s", mp_ctx_message(L->ctx));
        if (strncmp(msg, L->src, strlen(L->src)) != 0)
            mp__err(L->ctx, st, "%s: %s", L->src, msg);
    }
    return st;
}

/* ---- re-batching (opt->batch) ------------------------------------------
 * --batch N is bindings: INPUT:0 = N for every graph input that is not an
 * initializer, SYMBOL = N for a symbol at an input's dim 0, after the
 * caller's own (which must agree). The declared batch B0 (the inputs'
 * fixed dim 0, one value) goes to g->rebatch_from for the shape functions
 * (core/ops/rebatch.c). */
typedef struct rebatch {
    mp_onnx_options opt;
    mp_dim_binding *dims;  /* the caller's, then the n made here */
    size_t n;
    int64_t from, to;
} rebatch;

static mp_status batch_bind(mp_ctx *ctx, const char *src, rebatch *rb,
                            const char *name, const char *axis)
{
    int64_t n = rb->to;
    char key[320];
    snprintf(key, sizeof key, "%s%s", name, axis);
    for (size_t i = 0; i < rb->opt.n_dims; i++)
        if (strcmp(rb->dims[i].name, key) == 0) {
            if (rb->dims[i].value == n)
                return MP_OK;
            return mp__err(ctx, MP_ERR_INVALID_ARG, "%s: the batch %lld and "
                          "the binding %s=%lld disagree (%s is the batch "
                          "dim)", src, (long long)n, key,
                          (long long)rb->dims[i].value, key);
        }
    size_t len = strlen(key) + 1;
    char *s = mp__alloc(ctx, len);
    if (!s)
        return MP_ERR_NOMEM;
    memcpy(s, key, len);
    rb->dims[rb->opt.n_dims++] = (mp_dim_binding){s, n};
    rb->n++;
    return MP_OK;
}

static mp_status batch_bindings(mp_ctx *ctx, const char *src,
                                const Onnx__GraphProto *gp,
                                const mp_onnx_options *opt, rebatch *rb)
{
    if (opt->batch < 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "%s: batch %lld: needs a "
                      "value >= 1 (0: as declared)", src,
                      (long long)opt->batch);
    if (!gp)
        return MP_OK; /* build() names the problem */
    rb->opt = *opt;
    rb->to = opt->batch;
    rb->dims = mp__alloc(ctx, (opt->n_dims + 2 * gp->n_input + 1) *
                                 sizeof *rb->dims);
    if (!rb->dims)
        return MP_ERR_NOMEM;
    if (opt->n_dims)
        memcpy(rb->dims, opt->dims, opt->n_dims * sizeof *rb->dims);
    rb->opt.dims = rb->dims;
    const char *first = NULL;
    mp_status st = MP_OK;
    size_t inputs = 0;
    for (size_t i = 0; i < gp->n_input && !st; i++) {
        const Onnx__ValueInfoProto *v = gp->input[i];
        bool init = false, valued = false;
        for (size_t k = 0; v && v->name && k < gp->n_initializer && !init; k++)
            init = gp->initializer[k] && gp->initializer[k]->name &&
                   strcmp(gp->initializer[k]->name, v->name) == 0;
        for (size_t k = 0; v && v->name && k < opt->n_values && !valued; k++)
            valued = opt->values[k].name &&
                     strcmp(opt->values[k].name, v->name) == 0;
        const Onnx__TypeProto *tp = v ? v->type : NULL;
        if (!v || !v->name || init || valued || !tp ||
            tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !tp->tensor_type)
            continue; /* weights, inputs given a value, sequences */
        const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
        bool shaped = false; /* a rankless input with --shape */
        char key[320];
        snprintf(key, sizeof key, "%s:0", v->name);
        for (size_t k = 0; !sp && k < opt->n_dims; k++)
            shaped = strcmp(opt->dims[k].name, key) == 0;
        if ((sp && sp->n_dim == 0) || (!sp && !shaped))
            return mp__err(ctx, MP_ERR_INVALID_ARG, "%s: graph input '%s' "
                          "has %s: it has no batch dim for the batch "
                          "%lld%s", src, v->name,
                          sp ? "rank 0" : "no declared shape",
                          (long long)rb->to,
                          sp ? "" : " (give its shape with --shape)");
        const Onnx__TensorShapeProto__Dimension *d =
            sp && sp->dim ? sp->dim[0] : NULL;
        if (d && d->value_case ==
                     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0) {
            if (first && d->dim_value != rb->from)
                return mp__err(ctx, MP_ERR_INVALID_ARG, "%s: graph inputs "
                              "'%s' and '%s' disagree on their batch (leading "
                              "dim %lld and %lld): the batch cannot set "
                              "both; bind each with --dim INPUT:AXIS=VALUE",
                              src, first, v->name, (long long)rb->from,
                              (long long)d->dim_value);
            first = v->name;
            rb->from = d->dim_value;
        } else if (d && d->value_case ==
                            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && d->dim_param[0]) {
            st = batch_bind(ctx, src, rb, d->dim_param, "");
        }
        if (!st)
            st = batch_bind(ctx, src, rb, v->name, ":0");
        inputs++;
    }
    if (!st && !inputs)
        st = mp__err(ctx, MP_ERR_INVALID_ARG, "%s: the model has no graph "
                    "input (other than initializers) whose batch could be "
                    "set to %lld", src, (long long)rb->to);
    return st;
}

/* The rewrites of the graph inputs whose fixed leading dim was B0
 * (mp_graph_rebatch_info), put before those made while loading. */
static mp_status note_inputs(mp_graph *g, const Onnx__GraphProto *gp,
                             const rebatch *rb)
{
    size_t before = g->n_rebatches;
    for (size_t i = 0; gp && i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *v = gp->input[i];
        const Onnx__TypeProto *tp = v ? v->type : NULL;
        const Onnx__TensorShapeProto *sp =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                    tp->tensor_type
                ? tp->tensor_type->shape
                : NULL;
        uint32_t id;
        if (!sp || !sp->n_dim || !sp->dim[0] ||
            sp->dim[0]->value_case !=
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
            sp->dim[0]->dim_value != rb->from || !v->name ||
            mp_graph_find_tensor(g, v->name, &id) != MP_OK)
            continue;
        const mp__tensor *t = &g->tensors[id];
        if (t->kind != MP_KIND_INPUT || t->rank < 1 || t->dims[0] != rb->to)
            continue; /* an initializer, or an input given a value */
        int64_t old[MP_MAX_RANK];
        memcpy(old, t->dims, (size_t)t->rank * sizeof *old);
        old[0] = rb->from;
        if (mp__graph_note_rebatch(g, MP_REBATCH_INPUT, MP_NONE, id, old,
                                   t->dims, t->rank))
            return MP_ERR_NOMEM;
    }
    size_t k = g->n_rebatches - before;
    if (k && before) {
        /* rotate the k input records to the front */
        mp__rebatch_rec *r = mp__alloc(g->ctx, k * sizeof *r);
        if (!r)
            return MP_ERR_NOMEM;
        memcpy(r, g->rebatches + before, k * sizeof *r);
        memmove(g->rebatches + k, g->rebatches, before * sizeof *r);
        memcpy(g->rebatches, r, k * sizeof *r);
        mp__dealloc(g->ctx, r);
    }
    return MP_OK;
}

mp_status mp_graph_load_onnx_buffer(mp_ctx *ctx, const void *data, size_t len,
                                    const char *source_name,
                                    const mp_onnx_options *opt, mp_graph **out)
{
    if (!ctx || !out || (!data && len))
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_onnx: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    const char *src = source_name ? source_name : "<buffer>";
    if (opt)
        for (size_t i = 0; i < opt->n_dims; i++)
            if (!opt->dims || !opt->dims[i].name || opt->dims[i].value < 0)
                return mp__err(ctx, MP_ERR_INVALID_ARG,
                              "dim binding %zu: needs a name and a value "
                              ">= 0", i);
    /* nesting and names first: unpacking recurses once per nested message
     * and cuts strings at a NUL */
    mp_status scan = mp__onnx_scan_model(ctx, data, len, src);
    if (scan)
        return scan;
    ProtobufCAllocator pa = {pb_alloc, pb_free, ctx};
    Onnx__ModelProto *m =
        onnx__model_proto__unpack(&pa, len, (const uint8_t *)data);
    if (!m) {
        if (ctx->status == MP_ERR_NOMEM)
            return MP_ERR_NOMEM;
        return mp__err(ctx, MP_ERR_CORRUPT,
                      "%s: not a valid ONNX model: the protobuf is truncated "
                      "or corrupt (%zu bytes)",
                      src, len);
    }
    mp_graph *g = NULL;
    mp_status st = mp_graph_create(ctx, &g);
    rebatch rb = {0};
    if (!st && opt && opt->batch)
        st = batch_bindings(ctx, src, m->graph, opt, &rb);
    if (!st) {
        g->rebatch_from = rb.from;
        g->rebatch_to = rb.to;
        loader L = {.ctx = ctx, .g = g, .src = src,
                    .opt = rb.to ? &rb.opt : opt};
        st = build(&L, m);
        free_value_names(&L);
        if (!st && rb.from > 0 && rb.to != rb.from)
            st = note_inputs(g, m->graph, &rb);
    }
    for (size_t i = 0; i < rb.n; i++)
        mp__dealloc(ctx, (void *)rb.dims[rb.opt.n_dims - rb.n + i].name);
    mp__dealloc(ctx, rb.dims);
    protobuf_c_message_free_unpacked(&m->base, &pa);
    if (st) {
        mp_graph_destroy(g);
        return st;
    }
    *out = g;
    return MP_OK;
}

mp_status mp_graph_load_onnx(mp_ctx *ctx, const char *path,
                             const mp_onnx_options *opt, mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_onnx: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = mp__alloc(ctx, cap);
    mp_status st = buf ? MP_OK : MP_ERR_NOMEM;
    while (!st) {
        if (len == cap) {
            if (cap > SIZE_MAX / 2) {
                st = mp__err(ctx, MP_ERR_IO, "%s: file too large", path);
                break;
            }
            unsigned char *nb = mp__realloc_array(ctx, buf, cap * 2, 1);
            if (!nb) {
                st = MP_ERR_NOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) {
            if (ferror(f))
                st = mp__err(ctx, MP_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (!st)
        st = mp_graph_load_onnx_buffer(ctx, buf, len, path, opt, out);
    mp__dealloc(ctx, buf);
    return st;
}

#endif /* MP_WITH_ONNX */
