/* A tensor's kind, size, shape and small constant value: what the
 * builder, shape inference and schedules read and set on one tensor
 * (declared in core/ir.h). dims and value share one allocation. */
#include "ir.h"

#include <math.h>
#include <string.h>

bool mp__kind_persistent(uint8_t kind)
{
    return kind == MP_KIND_WEIGHT || kind == MP_KIND_CONSTANT ||
           kind == MP_KIND_OPTIMIZER_STATE;
}

uint32_t mp__persistent_root(const mp_graph *g, uint32_t x)
{
    if (x == MP_NONE || x >= g->n_tensors)
        return MP_NONE;
    uint32_t r = g->tensors[x].root;
    if (r == MP_NONE || r >= g->n_tensors)
        r = x;
    return mp__kind_persistent(g->tensors[r].kind) ? r : MP_NONE;
}

bool mp__tensor_in_arena(const mp__tensor *t)
{
    return t->alias_of == MP_NONE && !mp__kind_persistent(t->kind) &&
           t->bytes > 0;
}

mp_status mp__tensor_bytes_from_shape(mp_ctx *ctx, const mp__tensor *t,
                                     uint64_t *bytes)
{
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    if (t->rank < 0 || bits == 0)
        return mp__err(ctx, MP_ERR_SHAPE, "tensor '%s': %s unknown", t->name,
                      t->rank < 0 ? "shape" : "element size");
    uint64_t count = 1;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return mp__err(ctx, MP_ERR_SHAPE, "tensor '%s': dim %d unknown",
                          t->name, (int)i);
        if (!mp__mul_u64(count, (uint64_t)t->dims[i], &count))
            return mp__err(ctx, MP_ERR_OVERFLOW,
                          "tensor '%s': element count overflows 64 bits",
                          t->name);
    }
    uint64_t b;
    if (!mp__mul_u64(count, bits, &b) || !mp__add_u64(b, 7, &b))
        return mp__err(ctx, MP_ERR_OVERFLOW,
                      "tensor '%s': byte size overflows 64 bits", t->name);
    *bytes = b / 8;
    return MP_OK;
}

/* dims and value share one allocation: [rank dims][n_value values]. */
static mp_status set_block(mp_ctx *ctx, mp__tensor *t, int32_t rank,
                           const int64_t *dims, const int64_t *v, uint32_t n)
{
    size_t total = (size_t)(rank > 0 ? rank : 0) + n;
    int64_t *blk = NULL;
    if (total) {
        blk = mp__alloc(ctx, total * sizeof *blk);
        if (!blk)
            return MP_ERR_NOMEM;
        if (rank > 0)
            memcpy(blk, dims, (size_t)rank * sizeof *blk);
        if (n)
            memcpy(blk + (rank > 0 ? rank : 0), v, (size_t)n * sizeof *blk);
    }
    mp__dealloc(ctx, t->dims);
    t->dims = blk;
    t->rank = rank < 0 ? -1 : rank;
    t->value = n ? blk + (rank > 0 ? rank : 0) : NULL;
    t->n_value = n;
    return MP_OK;
}

mp_status mp__tensor_set_shape(mp_ctx *ctx, mp__tensor *t, int32_t rank,
                              const int64_t *dims)
{
    if (rank > MP_MAX_RANK)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "tensor '%s': rank %d is above the supported %d",
                      t->name, (int)rank, MP_MAX_RANK);
    int64_t tmp[MP_MAX_RANK];
    if (rank > 0)
        memcpy(tmp, dims, (size_t)rank * sizeof *tmp);
    /* the value may live in the block being replaced: copy via set_block */
    return set_block(ctx, t, rank, tmp, t->value, t->n_value);
}

mp_status mp__tensor_set_value(mp_ctx *ctx, mp__tensor *t, const int64_t *v,
                              uint32_t n)
{
    if (n > MP__VALUE_MAX || n == 0)
        return MP_OK;
    int64_t tmp[MP_MAX_RANK];
    if (t->rank > 0)
        memcpy(tmp, t->dims, (size_t)t->rank * sizeof *tmp);
    return set_block(ctx, t, t->rank, tmp, v, n);
}

bool mp__dtype_is_int(int dt)
{
    switch (dt) {
    case MP_DTYPE_INT64: case MP_DTYPE_INT32: case MP_DTYPE_INT16:
    case MP_DTYPE_INT8: case MP_DTYPE_UINT8: case MP_DTYPE_UINT16:
    case MP_DTYPE_UINT32: case MP_DTYPE_UINT64: case MP_DTYPE_BOOL:
        return true;
    default:
        return false;
    }
}

bool mp__tensor_shape_known(const mp__tensor *t)
{
    if (t->rank < 0)
        return false;
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0)
            return false;
    return true;
}

bool mp__dtype_is_float(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16;
}

double mp__value_double(const mp__tensor *t, uint32_t i)
{
    if (mp__dtype_is_int(t->dtype))
        return (double)t->value[i];
    double d;
    memcpy(&d, &t->value[i], sizeof d);
    return d;
}

/* x as a value of dtype dt: float dtypes keep the bits of the double,
 * rounded to float32 for float32 (float16/bfloat16 are not rounded
 * further: their values only feed shape arithmetic); integer dtypes take
 * the truncated value. False when x does not fit the integer range. */
bool mp__value_from_double(int dt, double x, int64_t *out)
{
    if (mp__dtype_is_float(dt)) {
        double d = dt == MP_DTYPE_FLOAT64 ? x : (double)(float)x;
        if (dt != MP_DTYPE_FLOAT64 && isfinite(x) && !isfinite(d))
            d = x; /* beyond float range: keep it; only shapes read it */
        memcpy(out, &d, sizeof d);
        return true;
    }
    if (dt == MP_DTYPE_BOOL) {
        *out = x != 0;
        return true;
    }
    if (!isfinite(x) || x >= 9223372036854775808.0 ||
        x < -9223372036854775808.0)
        return false;
    *out = (int64_t)x;
    return true;
}

bool mp__node_reads_whole(const mp_graph *g, const mp__node *n, uint32_t r)
{
    const mp__tensor *tr = &g->tensors[r];
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t t = n->inputs[i];
        if (t == MP_NONE || t == r || g->tensors[t].root != r)
            continue;
        const mp__tensor *tt = &g->tensors[t];
        unsigned k = mp__tensor_view_kind(g, t);
        if (tt->bytes != tr->bytes || tt->view_off != tr->view_off ||
            k == MP__NVIEW_T || k == MP__NVIEW_B)
            return false;
    }
    return true;
}
