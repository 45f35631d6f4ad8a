/* memviz.c - a plan as a PyTorch CUDA memory snapshot: the pickle that
 * torch.cuda.memory._dump_snapshot writes and pytorch.org/memory_viz and
 * torch.cuda._memory_viz read (docs/report.md). Written with a small
 * pickle writer of its own: protocol 2, builtin types only (dict, list,
 * str, int, bool), the opcodes the viewer's own unpickler knows. */
#include "sched.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Base addresses: the arena's pool k at ARENA_BASE + k * POOL_STRIDE,
 * the persistent tensors at PERSIST_BASE (like device addresses). */
#define ARENA_BASE 0x7f0000000000ull
#define POOL_STRIDE 0x10000000000ull
#define PERSIST_BASE 0x7e0000000000ull

/* ---- pickle (protocol 2) ------------------------------------------------ */
typedef struct pk {
    FILE *f;
} pk;

static void pk_op(pk *w, int op) { fputc(op, w->f); }

static void pk_int(pk *w, int64_t v)
{
    unsigned char b[9];
    if (v >= INT32_MIN && v <= INT32_MAX) {
        uint32_t u = (uint32_t)(int32_t)v;
        b[0] = 'J';                      /* BININT: 4 bytes, little end */
        for (int i = 0; i < 4; i++)
            b[1 + i] = (unsigned char)(u >> (8 * i));
        fwrite(b, 1, 5, w->f);
        return;
    }
    uint64_t u = (uint64_t)v;
    b[0] = 0x8a;                         /* LONG1: 8 bytes, two's compl. */
    b[1] = 8;
    fwrite(b, 1, 2, w->f);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(u >> (8 * i));
    fwrite(b, 1, 8, w->f);
}

static void pk_u64(pk *w, uint64_t v)
{
    pk_int(w, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* BINUNICODE of s (NULL: ""), each byte that is not part of well-formed
 * UTF-8 written as U+FFFD (Python's unpickler would refuse it). */
static void pk_str(pk *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    uint32_t len = 0;
    for (const unsigned char *q = p; *q;) {
        uint32_t cp;
        size_t k = *q < 0x80 ? 1 : mp__utf8_next((const char *)q, &cp);
        len += k ? (uint32_t)k : 3;
        q += k ? k : 1;
    }
    unsigned char h[5] = {'X', (unsigned char)len, (unsigned char)(len >> 8),
                          (unsigned char)(len >> 16),
                          (unsigned char)(len >> 24)};
    fwrite(h, 1, 5, w->f);
    while (*p) {
        uint32_t cp;
        size_t k = *p < 0x80 ? 1 : mp__utf8_next((const char *)p, &cp);
        if (k)
            fwrite(p, 1, k, w->f);
        else
            fwrite("\xEF\xBF\xBD", 1, 3, w->f);
        p += k ? k : 1;
    }
}

static void pk_dict(pk *w) { pk_op(w, '}'); }
static void pk_list(pk *w) { pk_op(w, ']'); }
static void pk_append(pk *w) { pk_op(w, 'a'); }
static void pk_setitem(pk *w) { pk_op(w, 's'); }

static void kv_int(pk *w, const char *k, uint64_t v)
{
    pk_str(w, k);
    pk_u64(w, v);
    pk_setitem(w);
}

static void kv_str(pk *w, const char *k, const char *v)
{
    pk_str(w, k);
    pk_str(w, v);
    pk_setitem(w);
}

static void kv_bool(pk *w, const char *k, int v)
{
    pk_str(w, k);
    pk_op(w, v ? 0x88 : 0x89);
    pk_setitem(w);
}

/* ---- the snapshot ------------------------------------------------------- */

/* Frames of tensor t: a list of one frame naming the tensor and its
 * kind (name), its producer node and op (filename) and the step (line);
 * the viewers print it as "filename:line:name". */
static void frames(pk *w, const mp_graph *g, uint32_t t, uint32_t step)
{
    const mp__tensor *x = &g->tensors[t];
    char where[600], what[600];
    if (x->producer != MP_NONE)
        snprintf(where, sizeof where, "%.400s (%.100s)",
                 g->nodes[x->producer].name, g->nodes[x->producer].op);
    else
        snprintf(where, sizeof where, "%s",
                 mp__kind_persistent(x->kind) ? "(persistent)"
                                              : "(graph input)");
    snprintf(what, sizeof what, "%.480s [%s]", x->name ? x->name : "",
             mp_kind_name((mp_tensor_kind)x->kind));
    pk_list(w);
    pk_dict(w);
    kv_str(w, "filename", where);
    kv_int(w, "line", step);
    kv_str(w, "name", what);
    pk_append(w);
}

/* A block of a segment: tensor t's (active) or a gap (t = MP_NONE). */
static void block_dict(pk *w, const mp_graph *g, uint64_t addr,
                       uint64_t size, uint32_t t, uint32_t step)
{
    pk_dict(w);
    kv_int(w, "address", addr);
    kv_int(w, "size", size);
    kv_int(w, "requested_size", t == MP_NONE ? 0 : g->tensors[t].bytes);
    kv_str(w, "state", t == MP_NONE ? "inactive" : "active_allocated");
    pk_str(w, "frames");
    if (t == MP_NONE)
        pk_list(w);
    else
        frames(w, g, t, step);
    pk_setitem(w);
}

/* A segment (an opened dict with its figures; the caller adds blocks). */
static void segment_begin(pk *w, uint64_t addr, uint64_t total,
                          uint64_t active, uint64_t requested)
{
    pk_dict(w);
    kv_int(w, "device", 0);
    kv_int(w, "address", addr);
    kv_int(w, "total_size", total);
    kv_int(w, "allocated_size", active);
    kv_int(w, "active_size", active);
    kv_int(w, "requested_size", requested);
    kv_int(w, "stream", 0);
    kv_str(w, "segment_type", "large");
    kv_bool(w, "is_expandable", 0);
    pk_str(w, "frames");
    pk_list(w);
    pk_setitem(w);
    pk_str(w, "blocks");
    pk_list(w);
}

static void segment_end(pk *w)
{
    pk_setitem(w);   /* "blocks" */
    pk_append(w);    /* onto "segments" */
}

typedef struct ev {
    uint32_t step;
    uint32_t is_alloc;
    uint64_t addr;
    uint32_t block;
} ev;

static int ev_cmp(const void *a, const void *b)
{
    const ev *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->is_alloc != y->is_alloc)
        return x->is_alloc < y->is_alloc ? -1 : 1;   /* frees first */
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->block < y->block ? -1 : x->block > y->block;
}

static uint64_t block_addr(const mp_plan *p, uint32_t i)
{
    uint32_t k = p->block_pool ? p->block_pool[i] : 0;
    return ARENA_BASE + (uint64_t)k * POOL_STRIDE + p->blocks[i].offset;
}

static int live_at_end(const mp_plan *p, uint32_t i)
{
    return p->blocks[i].end >= p->n_steps && p->blocks[i].size > 0;
}

/* One segment per pool: the blocks live at the end of the schedule (the
 * state a snapshot taken then shows), the gaps between them inactive. */
static mp_status arena_segments(pk *w, const mp_plan *p, const ev *ends,
                                size_t n_ends)
{
    const mp_graph *g = p->graph;
    uint32_t np = p->n_pools ? p->n_pools : 1;
    for (uint32_t k = 0; k < np; k++) {
        uint64_t base = ARENA_BASE + (uint64_t)k * POOL_STRIDE;
        uint64_t total = p->n_pools ? p->pools[k].arena_bytes
                                    : p->fig.arena_bytes;
        uint64_t active = 0, req = 0;
        if (total == 0)
            continue;
        for (size_t j = 0; j < n_ends; j++)
            if (ends[j].addr >= base && ends[j].addr < base + POOL_STRIDE) {
                active += p->blocks[ends[j].block].size;
                req += g->tensors[p->blocks[ends[j].block].tensor].bytes;
            }
        segment_begin(w, base, total, active, req);
        uint64_t at = base;
        for (size_t j = 0; j < n_ends; j++) {
            const ev *e = &ends[j];
            const mp_block *b = &p->blocks[e->block];
            if (e->addr < base || e->addr >= base + POOL_STRIDE)
                continue;
            if (e->addr > at) {
                block_dict(w, g, at, e->addr - at, MP_NONE, 0);
                pk_append(w);
            }
            block_dict(w, g, e->addr, b->size, b->tensor, b->first);
            pk_append(w);
            at = e->addr + b->size;
        }
        if (at < base + total) {
            block_dict(w, g, at, base + total - at, MP_NONE, 0);
            pk_append(w);
        }
        segment_end(w);
    }
    return MP_OK;
}

/* The persistent tensors (weights, constants): one segment, allocated
 * before the trace and never freed. */
static void persistent_segment(pk *w, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    uint64_t total = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (mp__kind_persistent(x->kind) && x->alias_of == MP_NONE)
            total += x->bytes;
    }
    if (total == 0)
        return;
    segment_begin(w, PERSIST_BASE, total, total, total);
    uint64_t at = PERSIST_BASE;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (!mp__kind_persistent(x->kind) || x->alias_of != MP_NONE ||
            x->bytes == 0)
            continue;
        block_dict(w, g, at, x->bytes, t, 0);
        pk_append(w);
        at += x->bytes;
    }
    segment_end(w);
}

/* One event of the device trace. */
static void event(pk *w, const mp_plan *p, const ev *e, const char *action)
{
    const mp_block *b = &p->blocks[e->block];
    pk_dict(w);
    kv_str(w, "action", action);
    kv_int(w, "addr", e->addr);
    kv_int(w, "size", b->size);
    kv_int(w, "stream", 0);
    kv_int(w, "time_us", e->step);
    pk_str(w, "frames");
    frames(w, p->graph, b->tensor, b->first);
    pk_setitem(w);
    pk_append(w);
}

static void figures(pk *w, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    pk_str(w, "memplan");
    pk_dict(w);
    kv_str(w, "graph", g->name ? g->name : "");
    kv_int(w, "arena_bytes", p->fig.arena_bytes);
    kv_int(w, "lower_bound_bytes", p->fig.lower_bound_bytes);
    kv_int(w, "persistent_bytes", p->fig.persistent_bytes);
    kv_int(w, "peak_step", p->fig.peak_step);
    kv_int(w, "steps", p->n_steps);
    kv_str(w, "time_us", "schedule step");
    pk_setitem(w);
}

mp_status mp_plan_write_memory_viz(const mp_plan *p, const char *path)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_memory_viz: NULL argument")
                 : MP_ERR_INVALID_ARG;
    mp_ctx *ctx = p->ctx;
    size_t n = 0, n_ends = 0;
    ev *evs = mp__alloc(ctx, (2 * (size_t)p->n_blocks + 1) * sizeof *evs);
    ev *ends = mp__alloc(ctx, ((size_t)p->n_blocks + 1) * sizeof *ends);
    if (!evs || !ends) {
        mp__dealloc(ctx, evs);
        mp__dealloc(ctx, ends);
        return mp__err(ctx, MP_ERR_NOMEM, "memory snapshot: out of memory");
    }
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->size == 0 || b->end <= b->first)
            continue;
        uint64_t a = block_addr(p, i);
        evs[n++] = (ev){b->first, 1, a, i};
        if (live_at_end(p, i))
            ends[n_ends++] = (ev){0, 1, a, i};
        else
            evs[n++] = (ev){b->end, 0, a, i};
    }
    qsort(evs, n, sizeof *evs, ev_cmp);
    qsort(ends, n_ends, sizeof *ends, ev_cmp);
    mp__wfile f;
    memset(&f, 0, sizeof f);
    mp_status st = mp__wfile_open(ctx, path, &f);
    if (!st) {
        pk w = {f.f};
        pk_op(&w, 0x80);   /* PROTO 2 */
        pk_op(&w, 2);
        pk_dict(&w);
        pk_str(&w, "segments");
        pk_list(&w);
        arena_segments(&w, p, ends, n_ends);
        persistent_segment(&w, p);
        pk_setitem(&w);
        pk_str(&w, "device_traces");
        pk_list(&w);
        pk_list(&w);
        for (size_t i = 0; i < n; i++) {
            if (evs[i].is_alloc) {
                event(&w, p, &evs[i], "alloc");
            } else {
                event(&w, p, &evs[i], "free_requested");
                event(&w, p, &evs[i], "free_completed");
            }
        }
        pk_append(&w);
        pk_setitem(&w);
        figures(&w, p);
        pk_op(&w, '.');   /* STOP */
        st = mp__wfile_commit(&f, ferror(f.f) != 0);
    }
    mp__dealloc(ctx, evs);
    mp__dealloc(ctx, ends);
    return st;
}
