/* fragsim.c - replay of allocations through a model of PyTorch's CUDA
 * caching allocator (c10/cuda/CUDACachingAllocator.cpp, default settings:
 * no max_split_size, no roundup_power2_divisions, no expandable segments,
 * one stream), to report how much memory it would reserve for a schedule
 * that memplan packs into one arena.
 *
 * Rules modelled:
 * - a request is rounded up to a multiple of 512 bytes (512 minimum);
 * - rounded sizes <= 1 MiB come from the small pool, others from the large;
 * - a request first looks for the smallest cached free block of its pool
 *   that fits (ties: lowest address);
 * - if none fits, a segment is obtained: 2 MiB for the small pool, 20 MiB
 *   for requests below 10 MiB, else the size rounded up to 2 MiB;
 * - the chosen block is split when the remainder is >= 512 bytes (small
 *   pool) or > 1 MiB (large pool); the remainder stays cached;
 * - a freed block merges with its free neighbours in the same segment;
 * - segments are never returned (no out-of-memory retry is modelled).
 */
#include "base.h"

#include <stdlib.h>
#include <string.h>

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define SIM_MIN_BLOCK 512ull
#define SIM_SMALL_SIZE MIB
#define SIM_SMALL_BUFFER (2 * MIB)
#define SIM_LARGE_BUFFER (20 * MIB)
#define SIM_MIN_LARGE_ALLOC (10 * MIB)
#define SIM_ROUND_LARGE (2 * MIB)

typedef struct sim_block {
    uint64_t addr, size;
    uint32_t prev, next;   /* neighbours in the segment, MP_NONE at ends */
    uint8_t small;         /* pool */
    uint8_t allocated;
    uint8_t dead;          /* merged into a neighbour: slot unused */
} sim_block;

typedef struct sim {
    mp_ctx *ctx;
    sim_block *b;
    size_t n, cap;
    uint32_t *freel[2];    /* free block ids per pool (0 large, 1 small) */
    size_t nfree[2], capfree[2];
    uint64_t next_addr;
    mp_cache_sim_result *res;
} sim;

static uint64_t round_request(uint64_t size)
{
    if (size < SIM_MIN_BLOCK)
        return SIM_MIN_BLOCK;
    return (size + SIM_MIN_BLOCK - 1) / SIM_MIN_BLOCK * SIM_MIN_BLOCK;
}

static uint64_t segment_size(uint64_t size)
{
    if (size <= SIM_SMALL_SIZE)
        return SIM_SMALL_BUFFER;
    if (size < SIM_MIN_LARGE_ALLOC)
        return SIM_LARGE_BUFFER;
    return (size + SIM_ROUND_LARGE - 1) / SIM_ROUND_LARGE * SIM_ROUND_LARGE;
}

static mp_status new_block(sim *s, uint64_t addr, uint64_t size, int small,
                           uint32_t *id)
{
    if (s->n >= UINT32_MAX - 1)
        return mp__err(s->ctx, MP_ERR_OVERFLOW, "cache simulation: too many "
                      "blocks");
    mp_status st = mp__grow(s->ctx, (void **)&s->b, sizeof *s->b, s->n + 1,
                           &s->cap);
    if (st)
        return st;
    sim_block *k = &s->b[s->n];
    memset(k, 0, sizeof *k);
    k->addr = addr;
    k->size = size;
    k->prev = k->next = MP_NONE;
    k->small = (uint8_t)small;
    *id = (uint32_t)s->n++;
    return MP_OK;
}

static mp_status free_push(sim *s, uint32_t id)
{
    int p = s->b[id].small;
    mp_status st = mp__grow(s->ctx, (void **)&s->freel[p], sizeof(uint32_t),
                           s->nfree[p] + 1, &s->capfree[p]);
    if (st)
        return st;
    s->freel[p][s->nfree[p]++] = id;
    return MP_OK;
}

static void free_remove(sim *s, uint32_t id)
{
    int p = s->b[id].small;
    for (size_t i = 0; i < s->nfree[p]; i++)
        if (s->freel[p][i] == id) {
            s->freel[p][i] = s->freel[p][--s->nfree[p]];
            return;
        }
}

/* Best fit: the smallest free block of the pool that holds size, lowest
 * address among equals; MP_NONE when none. */
static uint32_t best_fit(const sim *s, int small, uint64_t size)
{
    uint32_t best = MP_NONE;
    for (size_t i = 0; i < s->nfree[small]; i++) {
        const sim_block *k = &s->b[s->freel[small][i]];
        if (k->size < size)
            continue;
        if (best == MP_NONE || k->size < s->b[best].size ||
            (k->size == s->b[best].size && k->addr < s->b[best].addr))
            best = s->freel[small][i];
    }
    return best;
}

static mp_status sim_malloc(sim *s, uint64_t request, uint32_t *out)
{
    uint64_t size = round_request(request);
    int small = size <= SIM_SMALL_SIZE;
    uint32_t id = best_fit(s, small, size);
    mp_status st;
    if (id != MP_NONE) {
        free_remove(s, id);
        s->res->reuses++;
    } else {
        uint64_t seg = segment_size(size);
        st = new_block(s, s->next_addr, seg, small, &id);
        if (st)
            return st;
        if (!mp__add_u64(s->next_addr, seg, &s->next_addr) ||
            !mp__add_u64(s->res->reserved_bytes, seg,
                        &s->res->reserved_bytes))
            return mp__err(s->ctx, MP_ERR_OVERFLOW,
                          "cache simulation: reserved bytes overflow");
        if (small)
            s->res->small_reserved_bytes += seg;
        s->res->segments++;
    }
    uint64_t rest = s->b[id].size - size;
    int split = small ? rest >= SIM_MIN_BLOCK : rest > SIM_SMALL_SIZE;
    if (split) {
        uint32_t r = 0;
        st = new_block(s, s->b[id].addr + size, rest, small, &r);
        if (st)
            return st;
        sim_block *k = &s->b[id];   /* new_block may move the array */
        s->b[r].prev = id;
        s->b[r].next = k->next;
        if (k->next != MP_NONE)
            s->b[k->next].prev = r;
        k->next = r;
        k->size = size;
        st = free_push(s, r);
        if (st)
            return st;
        s->res->splits++;
    }
    s->b[id].allocated = 1;
    *out = id;
    return MP_OK;
}

static void absorb(sim *s, uint32_t keep, uint32_t gone)
{
    /* gone follows keep in the segment */
    sim_block *k = &s->b[keep], *g = &s->b[gone];
    k->size += g->size;
    k->next = g->next;
    if (g->next != MP_NONE)
        s->b[g->next].prev = keep;
    g->dead = 1;
}

static mp_status sim_free(sim *s, uint32_t id)
{
    sim_block *k = &s->b[id];
    k->allocated = 0;
    uint32_t nx = k->next, pv = k->prev;
    if (nx != MP_NONE && !s->b[nx].allocated) {
        free_remove(s, nx);
        absorb(s, id, nx);
    }
    if (pv != MP_NONE && !s->b[pv].allocated) {
        free_remove(s, pv);
        absorb(s, pv, id);
        id = pv;
    }
    return free_push(s, id);
}

typedef struct sim_event {
    int64_t time;
    uint32_t buf;
    uint8_t is_alloc;
} sim_event;

static int cmp_event(const void *pa, const void *pb)
{
    const sim_event *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->is_alloc != b->is_alloc)
        return a->is_alloc ? 1 : -1;   /* frees first */
    return (a->buf > b->buf) - (a->buf < b->buf);
}

mp_status mp_cache_sim(mp_ctx *ctx, const mp_buffer *bufs, size_t n,
                       mp_cache_sim_result *out)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    if (!out || (n && !bufs))
        return mp__err(ctx, MP_ERR_INVALID_ARG, "mp_cache_sim: NULL argument");
    memset(out, 0, sizeof *out);
    if (n >= UINT32_MAX / 2)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "mp_cache_sim: too many "
                      "buffers");
    sim s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.res = out;
    sim_event *ev = mp__calloc(ctx, n ? 2 * n : 1, sizeof *ev);
    uint32_t *where = mp__calloc(ctx, n ? n : 1, sizeof *where);
    mp_status st = MP_OK;
    if (!ev || !where) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].end < bufs[i].start) {
            st = mp__err(ctx, MP_ERR_INVALID_ARG, "mp_cache_sim: buffer %zu "
                        "ends (%lld) before it starts (%lld)", i,
                        (long long)bufs[i].end, (long long)bufs[i].start);
            goto done;
        }
        where[i] = MP_NONE;
        if (bufs[i].size == 0 || bufs[i].end == bufs[i].start)
            continue;   /* 0 bytes: no memory in PyTorch; never live */
        if (bufs[i].size > UINT64_MAX / 2) {
            st = mp__err(ctx, MP_ERR_OVERFLOW, "mp_cache_sim: buffer %zu is "
                        "too large", i);
            goto done;
        }
        ev[ne++] = (sim_event){bufs[i].start, (uint32_t)i, 1};
        ev[ne++] = (sim_event){bufs[i].end, (uint32_t)i, 0};
    }
    qsort(ev, ne, sizeof *ev, cmp_event);
    uint64_t allocated = 0, requested = 0;
    for (size_t e = 0; e < ne; e++) {
        uint32_t i = ev[e].buf;
        if (ev[e].is_alloc) {
            st = sim_malloc(&s, bufs[i].size, &where[i]);
            if (st)
                goto done;
            allocated += s.b[where[i]].size;
            requested += bufs[i].size;
            if (allocated > out->peak_allocated_bytes)
                out->peak_allocated_bytes = allocated;
            if (requested > out->peak_requested_bytes)
                out->peak_requested_bytes = requested;
        } else if (where[i] != MP_NONE) {
            allocated -= s.b[where[i]].size;
            requested -= bufs[i].size;
            st = sim_free(&s, where[i]);
            if (st)
                goto done;
            where[i] = MP_NONE;
        }
    }
done:
    mp__dealloc(ctx, ev);
    mp__dealloc(ctx, where);
    mp__dealloc(ctx, s.b);
    mp__dealloc(ctx, s.freel[0]);
    mp__dealloc(ctx, s.freel[1]);
    return st;
}
