/* Context: allocator hooks, status and message; enum name tables. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- status table ---------------------------------------------------------- */
static const struct {
    const char *name;
    const char *text;
} status_table[] = {
    {"MP_OK", "success"},
    {"MP_ERR_INVALID_ARG", "invalid argument"},
    {"MP_ERR_NOMEM", "out of memory"},
    {"MP_ERR_IO", "input/output error"},
    {"MP_ERR_PARSE", "malformed input"},
    {"MP_ERR_GRAPH", "invalid graph"},
    {"MP_ERR_SHAPE", "unknown or inconsistent shape"},
    {"MP_ERR_OVERFLOW", "size overflows 64 bits"},
    {"MP_ERR_UNSUPPORTED", "not supported"},
    {"MP_ERR_INFEASIBLE", "infeasible"},
    {"MP_ERR_VERIFY", "plan failed verification"},
    {"MP_ERR_TIMEOUT", "time limit reached"},
    {"MP_ERR_INTERNAL", "internal error"},
    {"MP_ERR_NOT_FOUND", "not found"},
    {"MP_ERR_CORRUPT", "truncated or corrupt input"},
    {"MP_ERR_CYCLE", "graph has a cycle"},
    {"MP_ERR_NO_PRODUCER", "tensor produced by no node"},
    {"MP_ERR_DUPLICATE", "name defined twice"},
    {"MP_ERR_UNKNOWN_OP", "unknown op"},
    {"MP_ERR_BAD_DIM", "negative dim or rank too large"},
};
#define N_STATUS (sizeof status_table / sizeof status_table[0])

const char *mp_status_name(mp_status s)
{
    return (unsigned)s < N_STATUS ? status_table[s].name : "MP_ERR_UNKNOWN";
}

const char *mp_status_str(mp_status s)
{
    return (unsigned)s < N_STATUS ? status_table[s].text : "unknown status";
}

mp_status mp_status_base(mp_status s)
{
    switch (s) {
    case MP_ERR_CYCLE: case MP_ERR_NO_PRODUCER: case MP_ERR_DUPLICATE:
        return MP_ERR_GRAPH;
    case MP_ERR_CORRUPT:
        return MP_ERR_PARSE;
    case MP_ERR_UNKNOWN_OP: case MP_ERR_BAD_DIM:
        return MP_ERR_SHAPE;
    default:
        return s;
    }
}

const char *mp_version(void) { return MP_VERSION_STRING; }

/* ---- default allocator ----------------------------------------------------- */
static void *std_malloc(void *u, size_t n)
{
    (void)u;
    return malloc(n ? n : 1);
}
static void *std_realloc(void *u, void *p, size_t n)
{
    (void)u;
    return realloc(p, n ? n : 1);
}
static void std_free(void *u, void *p)
{
    (void)u;
    free(p);
}

mp_ctx *mp_ctx_create(const mp_allocator *alloc)
{
    mp_allocator a = {std_malloc, std_realloc, std_free, NULL};
    if (alloc) {
        if (!alloc->malloc_fn || !alloc->realloc_fn || !alloc->free_fn)
            return NULL;
        a = *alloc;
    }
    mp_ctx *ctx = a.malloc_fn(a.user, sizeof *ctx);
    if (!ctx)
        return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->alloc = a;
    return ctx;
}

void mp_ctx_destroy(mp_ctx *ctx)
{
    if (ctx)
        ctx->alloc.free_fn(ctx->alloc.user, ctx);
}

const char *mp_ctx_message(const mp_ctx *ctx) { return ctx ? ctx->msg : ""; }
mp_status mp_ctx_status(const mp_ctx *ctx)
{
    return ctx ? ctx->status : MP_ERR_INVALID_ARG;
}
void mp_ctx_clear(mp_ctx *ctx)
{
    if (ctx) {
        ctx->status = MP_OK;
        ctx->msg[0] = 0;
    }
}

mp_status mp__verr(mp_ctx *ctx, mp_status st, const char *fmt, va_list ap)
{
    if (!ctx)
        return st;
    ctx->status = st;
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    return st;
}

mp_status mp__err(mp_ctx *ctx, mp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mp__verr(ctx, st, fmt, ap);
    va_end(ap);
    return st;
}

void *mp__alloc(mp_ctx *ctx, size_t size)
{
    void *p = ctx->alloc.malloc_fn(ctx->alloc.user, size ? size : 1);
    if (!p)
        mp__err(ctx, MP_ERR_NOMEM, "out of memory (allocating %zu bytes)",
               size);
    return p;
}

void *mp__calloc(mp_ctx *ctx, size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        mp__err(ctx, MP_ERR_NOMEM, "allocation of %zu x %zu bytes overflows",
               count, size);
        return NULL;
    }
    void *p = mp__alloc(ctx, total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *mp__realloc_array(mp_ctx *ctx, void *ptr, size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        mp__err(ctx, MP_ERR_NOMEM, "allocation of %zu x %zu bytes overflows",
               count, size);
        return NULL;
    }
    void *p = ctx->alloc.realloc_fn(ctx->alloc.user, ptr, total ? total : 1);
    if (!p)
        mp__err(ctx, MP_ERR_NOMEM, "out of memory (allocating %zu bytes)",
               total);
    return p;
}

void mp__dealloc(mp_ctx *ctx, void *ptr)
{
    if (ptr)
        ctx->alloc.free_fn(ctx->alloc.user, ptr);
}

void mp_free(mp_ctx *ctx, void *p)
{
    if (ctx)
        mp__dealloc(ctx, p);
}

char *mp__strdup(mp_ctx *ctx, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = mp__alloc(ctx, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

mp_status mp__grow(mp_ctx *ctx, void **arr, size_t elt, size_t need,
                  size_t *cap)
{
    if (need <= *cap)
        return MP_OK;
    /* 1.5x: amortized constant time, and a third less spare capacity
     * than doubling in the graph's node and tensor arrays */
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return mp__err(ctx, MP_ERR_NOMEM, "array too large");
        nc += nc / 2;
    }
    void *p = mp__realloc_array(ctx, *arr, nc, elt);
    if (!p)
        return MP_ERR_NOMEM;
    *arr = p;
    *cap = nc;
    return MP_OK;
}

double mp__now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double mp__deadline_begin(mp_ctx *ctx, double limit)
{
    double saved = ctx->deadline;
    if (limit > 0 && saved == 0)
        ctx->deadline = mp__now_seconds() + limit;
    return saved;
}

void mp__deadline_end(mp_ctx *ctx, double saved) { ctx->deadline = saved; }

double mp__time_slice(const mp_ctx *ctx, double limit)
{
    if (ctx->deadline == 0)
        return limit;
    double left = ctx->deadline - mp__now_seconds();
    if (left < MP__TIME_SLICE_MIN)
        left = MP__TIME_SLICE_MIN;
    return limit > 0 && limit < left ? limit : left;
}

bool mp__deadline_passed(const mp_ctx *ctx)
{
    return ctx->deadline != 0 && mp__now_seconds() >= ctx->deadline;
}

/* ---- name map ----------------------------------------------------------------- */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static mp_status map_rehash(mp_ctx *ctx, mp__name_map *m, uint32_t ncap)
{
    uint32_t *ns = mp__calloc(ctx, ncap, sizeof *ns);
    uint32_t *nh = mp__calloc(ctx, ncap, sizeof *nh);
    if (!ns || !nh) {
        mp__dealloc(ctx, ns);
        mp__dealloc(ctx, nh);
        return MP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->slots[i])
            continue;
        uint32_t h = m->hashes[i] & (ncap - 1);
        while (ns[h])
            h = (h + 1) & (ncap - 1);
        ns[h] = m->slots[i];
        nh[h] = m->hashes[i];
    }
    mp__dealloc(ctx, m->slots);
    mp__dealloc(ctx, m->hashes);
    m->slots = ns;
    m->hashes = nh;
    m->cap = ncap;
    return MP_OK;
}

mp_status mp__name_map_insert(mp_ctx *ctx, mp__name_map *m, const void *owner,
                             mp__name_of_fn name_of, const char *key,
                             uint32_t idx, uint32_t *existing)
{
    if (existing)
        *existing = MP_NONE;
    if ((uint64_t)(m->count + 1) * 2 > m->cap) {
        uint32_t ncap = m->cap ? m->cap * 2 : 64;
        if (ncap < m->cap)
            return mp__err(ctx, MP_ERR_NOMEM, "too many names");
        mp_status st = map_rehash(ctx, m, ncap);
        if (st)
            return st;
    }
    uint32_t full = hash_str(key), h = full & (m->cap - 1);
    while (m->slots[h]) {
        if (m->hashes[h] == full &&
            strcmp(name_of(owner, m->slots[h] - 1), key) == 0) {
            if (existing)
                *existing = m->slots[h] - 1;
            return MP_ERR_DUPLICATE;
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->slots[h] = idx + 1;
    m->hashes[h] = full;
    m->count++;
    return MP_OK;
}

uint32_t mp__name_map_find(const mp__name_map *m, const void *owner,
                          mp__name_of_fn name_of, const char *key)
{
    if (!m->cap)
        return MP_NONE;
    uint32_t full = hash_str(key), h = full & (m->cap - 1);
    while (m->slots[h]) {
        if (m->hashes[h] == full &&
            strcmp(name_of(owner, m->slots[h] - 1), key) == 0)
            return m->slots[h] - 1;
        h = (h + 1) & (m->cap - 1);
    }
    return MP_NONE;
}

void mp__name_map_free(mp_ctx *ctx, mp__name_map *m)
{
    mp__dealloc(ctx, m->slots);
    mp__dealloc(ctx, m->hashes);
    m->slots = m->hashes = NULL;
    m->cap = m->count = 0;
}

/* ---- enum names ------------------------------------------------------------------ */
static const struct {
    const char *name;
    unsigned bits;
} dtype_table[] = {
    {"undefined", 0}, {"float32", 32}, {"uint8", 8}, {"int8", 8},
    {"uint16", 16}, {"int16", 16}, {"int32", 32}, {"int64", 64},
    {"string", 64}, {"bool", 8}, {"float16", 16}, {"float64", 64},
    {"uint32", 32}, {"uint64", 64}, {"complex64", 64}, {"complex128", 128},
    {"bfloat16", 16}, {"float8e4m3fn", 8}, {"float8e4m3fnuz", 8},
    {"float8e5m2", 8}, {"float8e5m2fnuz", 8}, {"uint4", 4}, {"int4", 4},
    {"float4e2m1", 4}, {"float8e8m0", 8}, {"uint2", 2}, {"int2", 2},
};
#define N_DTYPE (sizeof dtype_table / sizeof dtype_table[0])

const char *mp_dtype_name(mp_dtype t)
{
    return (unsigned)t < N_DTYPE ? dtype_table[t].name : NULL;
}

unsigned mp_dtype_bits(mp_dtype t)
{
    return (unsigned)t < N_DTYPE ? dtype_table[t].bits : 0;
}

mp_status mp_dtype_parse(const char *name, mp_dtype *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    static const struct {
        const char *alias;
        mp_dtype t;
    } aliases[] = {{"float", MP_DTYPE_FLOAT32}, {"f32", MP_DTYPE_FLOAT32},
                   {"double", MP_DTYPE_FLOAT64}, {"f64", MP_DTYPE_FLOAT64},
                   {"half", MP_DTYPE_FLOAT16}, {"f16", MP_DTYPE_FLOAT16},
                   {"fp16", MP_DTYPE_FLOAT16}, {"fp32", MP_DTYPE_FLOAT32},
                   {"bf16", MP_DTYPE_BFLOAT16}, {"i64", MP_DTYPE_INT64},
                   {"i32", MP_DTYPE_INT32}, {"i8", MP_DTYPE_INT8},
                   {"u8", MP_DTYPE_UINT8}};
    for (unsigned i = 1; i < N_DTYPE; i++)
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (mp_dtype)i;
            return MP_OK;
        }
    for (unsigned i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].t;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}

static const char *const kind_names[] = {
    "activation", "input", "weight", "constant", "gradient",
    "optimizer_state", "output"};
static const char *const phase_names[] = {"forward", "backward", "optimizer"};
static const char *const solve_names[] = {"none", "optimal", "feasible",
                                          "infeasible", "timeout"};
static const char *const step_names[] = {"compute", "recompute", "free",
                                         "offload", "prefetch"};

#define NAME_OF(tab, v) \
    ((unsigned)(v) < sizeof tab / sizeof tab[0] ? tab[v] : "unknown")

const char *mp_kind_name(mp_tensor_kind k) { return NAME_OF(kind_names, k); }
const char *mp_phase_name(mp_phase p) { return NAME_OF(phase_names, p); }
const char *mp_solve_status_name(mp_solve_status s)
{
    return NAME_OF(solve_names, s);
}
const char *mp_step_kind_name(mp_step_kind k)
{
    return NAME_OF(step_names, k);
}

static mp_status parse_in(const char *const *tab, unsigned n,
                          const char *name, int *out)
{
    if (!name)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(name, tab[i]) == 0) {
            *out = (int)i;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}

mp_status mp_kind_parse(const char *name, mp_tensor_kind *out)
{
    int v;
    mp_status st = out ? parse_in(kind_names, 7, name, &v)
                       : MP_ERR_INVALID_ARG;
    if (st == MP_OK)
        *out = (mp_tensor_kind)v;
    return st;
}

mp_status mp_phase_parse(const char *name, mp_phase *out)
{
    int v;
    mp_status st = out ? parse_in(phase_names, 3, name, &v)
                       : MP_ERR_INVALID_ARG;
    if (st == MP_OK)
        *out = (mp_phase)v;
    return st;
}
