/* Placement engines of the offsets solver.
 *
 * Both engines take an order of the buffers and place each one, in turn,
 * in a gap among the already-placed buffers that overlap it in time:
 * first-fit takes the lowest gap that holds it, best-fit the smallest (the
 * lowest among equal ones); with no such gap the buffer goes on top of
 * them. They differ in how they find the placed buffers that overlap:
 *
 *  - the matrix engine (small instances) keeps a bit matrix of the pairs
 *    that overlap in time and the placed buffers sorted by offset; a
 *    buffer's gaps come from one scan of that list, skipping the buffers
 *    whose bit is clear. Cost per pass: n^2 / 2 bit tests. It re-places
 *    from any position of the order (the improvement pass changes a suffix
 *    of the order and re-places only that suffix).
 *
 *  - the tree engine never enumerates the overlapping buffers. It keeps a
 *    segment tree over (compressed) time; every node v holds two sets of
 *    offset intervals, merged into disjoint runs: own(v), the buffers whose
 *    canonical decomposition contains v (they cover all of v), and sub(v),
 *    the union of own() over v's subtree. The offsets taken by the buffers
 *    overlapping [l, r) are exactly the union of sub(c) over the canonical
 *    nodes c of [l, r) and own(a) over their ancestors a, at most
 *    ~2 log T run sets, whose free gaps are walked with one cursor per set.
 *    Used when the pairs are too many (62185 buffers of idealloc's Y_1
 *    overlap in 1.8e8 pairs).
 */
#include "offsets_internal.h"

#include <string.h>

/* ---- problem ------------------------------------------------------------ */

/* Sorts idx[0..n) (stable) by key[idx[i]] ascending: LSD radix sort
 * over the order-preserving unsigned image of the keys, 16 bits a pass
 * (linear time; the passes whose digit is the same everywhere are
 * skipped). tmp: n entries of scratch. */
static mp_status radix_sort_i64(mp_ctx *ctx, const int64_t *key, uint32_t *idx,
                                uint32_t n)
{
    uint32_t *tmp = mp__alloc(ctx, (size_t)n * sizeof *tmp);
    uint32_t *cnt = mp__alloc(ctx, 65536 * sizeof *cnt);
    if (!tmp || !cnt) {
        mp__dealloc(ctx, tmp);
        mp__dealloc(ctx, cnt);
        return MP_ERR_NOMEM;
    }
    uint32_t *src = idx, *dst = tmp;
    for (int sh = 0; sh < 64; sh += 16) {
        memset(cnt, 0, 65536 * sizeof *cnt);
        for (uint32_t i = 0; i < n; i++)
            cnt[(((uint64_t)key[src[i]] ^ (1ull << 63)) >> sh) & 0xFFFF]++;
        uint32_t d0 = (uint32_t)((((uint64_t)key[src[0]] ^ (1ull << 63)) >>
                                  sh) & 0xFFFF);
        if (cnt[d0] == n)
            continue; /* one digit: the order stands */
        uint32_t sum = 0;
        for (uint32_t d = 0; d < 65536; d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t d = (uint32_t)((((uint64_t)key[src[i]] ^ (1ull << 63)) >>
                                     sh) & 0xFFFF);
            dst[cnt[d]++] = src[i];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, (size_t)n * sizeof *idx);
    mp__dealloc(ctx, tmp);
    mp__dealloc(ctx, cnt);
    return MP_OK;
}

mp_status mp__ofs_sort_idx(mp_ctx *ctx, uint32_t *idx, uint32_t n,
                          mp__ofs_cmp_fn cmp, const void *cctx)
{
    if (n < 2)
        return MP_OK;
    uint32_t *tmp = mp__alloc(ctx, (size_t)n * sizeof *tmp);
    if (!tmp)
        return MP_ERR_NOMEM;
    /* insertion sort runs of 16, then bottom-up merges */
    const uint32_t run = 16;
    for (uint32_t s = 0; s < n; s += run) {
        uint32_t e = s + run < n ? s + run : n;
        for (uint32_t i = s + 1; i < e; i++) {
            uint32_t v = idx[i], j = i;
            while (j > s && cmp(cctx, v, idx[j - 1]) < 0) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
    }
    uint32_t *src = idx, *dst = tmp;
    for (uint32_t w = run; w < n; w *= 2) {
        for (uint32_t s = 0; s < n; s += 2 * w) {
            uint32_t m = s + w < n ? s + w : n;
            uint32_t e = s + 2 * w < n ? s + 2 * w : n;
            uint32_t i = s, j = m, k = s;
            while (i < m && j < e)
                dst[k++] = cmp(cctx, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < m)
                dst[k++] = src[i++];
            while (j < e)
                dst[k++] = src[j++];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
        if (w > UINT32_MAX / 2)
            break;
    }
    if (src != idx)
        memcpy(idx, src, (size_t)n * sizeof *idx);
    mp__dealloc(ctx, tmp);
    return MP_OK;
}

void mp__ofs_prob_free(mp__ofs_prob *p)
{
    if (!p || !p->ctx)
        return;
    mp__dealloc(p->ctx, p->l);
    mp__dealloc(p->ctx, p->r);
    mp__dealloc(p->ctx, p->size);
    mp__dealloc(p->ctx, p->mat);
    memset(p, 0, sizeof *p);
}

mp_status mp__ofs_prob_init(mp_ctx *ctx, mp__ofs_prob *p, const mp_buffer *bufs,
                           size_t n, uint64_t alignment)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->bufs = bufs;
    if (alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "offsets: alignment must be at least 1");
    if (n > 0 && !bufs)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "offsets: buffers are NULL");
    if (n >= UINT32_MAX / 4)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "offsets: too many buffers (%zu)", n);
    p->n = (uint32_t)n;
    if (n == 0)
        return MP_OK;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].start >= bufs[i].end)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "offsets: buffer %zu: empty interval [%lld, %lld) "
                          "(start must be less than end)",
                          i, (long long)bufs[i].start, (long long)bufs[i].end);
        if (bufs[i].size == 0)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "offsets: buffer %zu: size is 0", i);
    }
    p->l = mp__alloc(ctx, n * sizeof *p->l);
    p->r = mp__alloc(ctx, n * sizeof *p->r);
    p->size = mp__alloc(ctx, n * sizeof *p->size);
    int64_t *starts = mp__alloc(ctx, n * sizeof *starts);
    uint32_t *idx = mp__alloc(ctx, n * sizeof *idx);
    uint64_t *delta = mp__calloc(ctx, n + 1, sizeof *delta);
    mp_status st = MP_OK;
    if (!p->l || !p->r || !p->size || !starts || !idx || !delta) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (!mp__align_up(bufs[i].size, alignment, &p->size[i]) ||
            !mp__add_u64(total, p->size[i], &total)) {
            st = mp__err(ctx, MP_ERR_OVERFLOW,
                        "offsets: buffer %u: sizes add up to more than 64 "
                        "bits", i);
            goto out;
        }
        starts[i] = bufs[i].start;
        idx[i] = i;
    }
    p->total = total;
    /* distinct start times, sorted; l = rank of the start among them */
    st = radix_sort_i64(ctx, starts, idx, p->n);
    if (st != MP_OK)
        goto out;
    uint32_t nt = 0;
    int64_t *pts = mp__alloc(ctx, n * sizeof *pts);
    if (!pts) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < p->n; i++) {
        int64_t v = starts[idx[i]];
        if (nt == 0 || pts[nt - 1] != v)
            pts[nt++] = v;
        p->l[idx[i]] = nt - 1;
    }
    p->nt = nt;
    /* r = number of distinct starts below the end: ends in order, merged
     * with the starts */
    for (uint32_t i = 0; i < p->n; i++) {
        starts[i] = bufs[i].end;
        idx[i] = i;
    }
    st = radix_sort_i64(ctx, starts, idx, p->n);
    if (st != MP_OK) {
        mp__dealloc(ctx, pts);
        goto out;
    }
    for (uint32_t i = 0, j = 0; i < p->n; i++) {
        int64_t e = starts[idx[i]];
        while (j < nt && pts[j] < e)
            j++;
        p->r[idx[i]] = j;
    }
    mp__dealloc(ctx, pts);
    for (uint32_t i = 0; i < p->n; i++) {
        delta[p->l[i]] += p->size[i];
        delta[p->r[i]] -= p->size[i]; /* modular; prefix sums stay exact */
    }
    uint64_t live = 0, lb = 0;
    for (uint32_t t = 0; t < nt; t++) {
        live += delta[t];
        if (live > lb)
            lb = live;
    }
    p->lb = lb;
    /* overlapping ordered pairs: for b, starts in [l_b, r_b) give the
     * buffers starting at or after b that overlap it. */
    {
        uint32_t *cnt = (uint32_t *)delta; /* n+1 u64 >= nt+1 u32 */
        memset(cnt, 0, (nt + 1) * sizeof *cnt);
        for (uint32_t i = 0; i < p->n; i++)
            cnt[p->l[i] + 1]++;
        for (uint32_t t = 0; t < nt; t++)
            cnt[t + 1] += cnt[t];
        uint64_t pairs = 0;
        uint32_t *deg = idx; /* reuse as per-buffer degree */
        memset(deg, 0, n * sizeof *deg);
        for (uint32_t i = 0; i < p->n; i++) {
            uint64_t later = cnt[p->r[i]] - cnt[p->l[i]] - 1;
            pairs += 2 * later;
        }
        /* ties at the same start are counted from both sides: subtract */
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t same = cnt[t + 1] - cnt[t];
            pairs -= same * (same - 1);
        }
        p->pairs = pairs;
    }
out:
    mp__dealloc(ctx, starts);
    mp__dealloc(ctx, idx);
    mp__dealloc(ctx, delta);
    return st;
}

mp_status mp__ofs_prob_matrix(mp__ofs_prob *p, uint32_t max_n)
{
    if (p->n == 0 || p->n > max_n)
        return MP_OK;
    mp_ctx *ctx = p->ctx;
    uint32_t n = p->n, W = (n + 63) / 64;
    p->words = W;
    p->mat = mp__calloc(ctx, (size_t)n * W, sizeof *p->mat);
    if (!p->mat)
        return MP_ERR_NOMEM;
    for (uint32_t a = 0; a < n; a++) {
        uint64_t *row = p->mat + (size_t)a * W;
        for (uint32_t b = 0; b < n; b++)
            if (b != a && p->l[a] < p->r[b] && p->l[b] < p->r[a])
                row[b / 64] |= 1ull << (b % 64);
    }
    return MP_OK;
}

/* ---- matrix engine ------------------------------------------------------- */

mp_status mp__ofs_mat_ws_init(const mp__ofs_prob *p, mp__ofs_mat_ws *w)
{
    mp_ctx *ctx = p->ctx;
    size_t n = p->n ? p->n : 1;
    memset(w, 0, sizeof *w);
    w->pos = mp__alloc(ctx, n * sizeof *w->pos);
    w->off = mp__alloc(ctx, n * sizeof *w->off);
    w->ptop = mp__alloc(ctx, n * sizeof *w->ptop);
    w->sorted = mp__alloc(ctx, n * sizeof *w->sorted);
    if (!w->pos || !w->off || !w->ptop || !w->sorted) {
        mp__ofs_mat_ws_free(ctx, w);
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

void mp__ofs_mat_ws_free(mp_ctx *ctx, mp__ofs_mat_ws *w)
{
    mp__dealloc(ctx, w->pos);
    mp__dealloc(ctx, w->off);
    mp__dealloc(ctx, w->ptop);
    mp__dealloc(ctx, w->sorted);
    memset(w, 0, sizeof *w);
}

uint64_t mp__ofs_mat_place(const mp__ofs_prob *p, mp__ofs_mat_ws *w,
                          const uint32_t *order, uint32_t from, int fit)
{
    const uint64_t *size = p->size;
    const uint32_t *pos = w->pos;
    uint64_t *off = w->off;
    uint32_t *sorted = w->sorted, ns = 0;
    if (from > 0) /* keep the placed prefix, in offset order */
        for (uint32_t k = 0; k < w->nsorted; k++)
            if (pos[sorted[k]] < from)
                sorted[ns++] = sorted[k];
    uint64_t top = from ? w->ptop[from - 1] : 0;
    for (uint32_t i = from; i < p->n; i++) {
        uint32_t b = order[i];
        const uint64_t *row = p->mat + (size_t)b * p->words;
        uint64_t z = size[b], cur = 0, best = UINT64_MAX, bestx = 0;
        uint64_t x = UINT64_MAX;
        for (uint32_t k = 0; k < ns; k++) {
            uint32_t a = sorted[k];
            if (!(row[a / 64] >> (a % 64) & 1))
                continue;
            uint64_t lo = off[a];
            if (lo > cur && lo - cur >= z) {
                uint64_t g = lo - cur;
                if (fit == MP__OFS_FIRSTFIT || g == z) {
                    x = cur;
                    break;
                }
                if (g < best) {
                    best = g;
                    bestx = cur;
                }
            }
            if (lo + size[a] > cur)
                cur = lo + size[a];
        }
        if (x == UINT64_MAX)
            x = best != UINT64_MAX ? bestx : cur;
        off[b] = x;
        if (x + z > top)
            top = x + z;
        w->ptop[i] = top;
        /* insert b after the placed buffers at offsets <= x */
        uint32_t lo = 0, hi = ns;
        while (lo < hi) {
            uint32_t m = lo + (hi - lo) / 2;
            if (off[sorted[m]] <= x)
                lo = m + 1;
            else
                hi = m;
        }
        memmove(sorted + lo + 1, sorted + lo, (size_t)(ns - lo) * sizeof *sorted);
        sorted[lo] = b;
        ns++;
    }
    w->nsorted = ns;
    return top;
}

/* ---- tree engine ------------------------------------------------------------ */

/* The occupied offsets of a node: runs lo, hi interleaved; disjoint,
 * non-adjacent, sorted; words of the tree's width (offsets_tree_w.h), in
 * units of 2^shift bytes. */
typedef struct ofs_runset {
    void *v;
    uint32_t n, cap;
} ofs_runset;

struct mp__ofs_tree {
    const mp__ofs_prob *p;
    uint32_t P;          /* leaves (power of two) */
    /* every size is a multiple of 2^shift; narrow: the sets hold 32-bit
     * words (every offset, in those units, below 2^31) */
    unsigned shift;
    int narrow;
    ofs_runset *own, *sub;
    /* query scratch */
    const ofs_runset **qs;
    uint32_t *cur, *heap;
    uint32_t *canon, *part;
    uint32_t ncanon, npart;
};

void mp__ofs_tree_destroy(mp__ofs_tree *t)
{
    if (!t)
        return;
    mp_ctx *ctx = t->p->ctx;
    if (t->own)
        for (uint32_t v = 0; v < 2 * t->P; v++) {
            mp__dealloc(ctx, t->own[v].v);
            mp__dealloc(ctx, t->sub[v].v);
        }
    mp__dealloc(ctx, t->own);
    mp__dealloc(ctx, t->sub);
    mp__dealloc(ctx, t->qs);
    mp__dealloc(ctx, t->cur);
    mp__dealloc(ctx, t->heap);
    mp__dealloc(ctx, t->canon);
    mp__dealloc(ctx, t->part);
    mp__dealloc(ctx, t);
}

mp_status mp__ofs_tree_create(const mp__ofs_prob *p, mp__ofs_tree **out)
{
    mp_ctx *ctx = p->ctx;
    *out = NULL;
    mp__ofs_tree *t = mp__calloc(ctx, 1, sizeof *t);
    if (!t)
        return MP_ERR_NOMEM;
    t->p = p;
    uint32_t P = 1, depth = 1;
    while (P < p->nt) {
        P *= 2;
        depth++;
    }
    t->P = P;
    uint64_t all = 0;
    for (uint32_t i = 0; i < p->n; i++)
        all |= p->size[i];
    t->shift = all ? (unsigned)__builtin_ctzll(all) : 0;
    /* offsets stay below the sum of the sizes; x + z below twice it */
    t->narrow = (p->total >> t->shift) < ((uint64_t)1 << 31);
    t->own = mp__calloc(ctx, 2 * (size_t)P, sizeof *t->own);
    t->sub = mp__calloc(ctx, 2 * (size_t)P, sizeof *t->sub);
    size_t m = 4 * (size_t)depth + 4;
    t->qs = mp__alloc(ctx, m * sizeof *t->qs);
    t->cur = mp__alloc(ctx, m * sizeof *t->cur);
    t->heap = mp__alloc(ctx, m * sizeof *t->heap);
    t->canon = mp__alloc(ctx, m * sizeof *t->canon);
    t->part = mp__alloc(ctx, m * sizeof *t->part);
    if (!t->own || !t->sub || !t->qs || !t->cur || !t->heap || !t->canon || !t->part) {
        mp__ofs_tree_destroy(t);
        return MP_ERR_NOMEM;
    }
    *out = t;
    return MP_OK;
}

/* Canonical nodes of [l, r) and the partial nodes (ancestors of canonical
 * nodes: on the paths from leaves l and r-1 to the root, not inside). */
static void tree_nodes(mp__ofs_tree *t, uint32_t l, uint32_t r)
{
    uint32_t P = t->P, nc = 0, np = 0;
    for (uint32_t a = l + P, b = r + P; a < b; a >>= 1, b >>= 1) {
        if (a & 1)
            t->canon[nc++] = a++;
        if (b & 1)
            t->canon[nc++] = --b;
    }
    uint32_t va = l + P, vb = r - 1 + P;
    for (uint32_t h = 0; va >= 1; h++, va >>= 1, vb >>= 1) {
        for (int s = 0; s < 2; s++) {
            uint32_t v = s ? vb : va;
            if (s && vb == va)
                break;
            uint64_t lo = ((uint64_t)v << h) - P;
            uint64_t hi = ((uint64_t)(v + 1) << h) - P;
            if (!(l <= lo && hi <= r))
                t->part[np++] = v;
        }
    }
    t->ncanon = nc;
    t->npart = np;
}

#define OFS_W uint32_t
#define OFS_N(name) name##_32
#include "offsets_tree_w.h"
#undef OFS_W
#undef OFS_N
#define OFS_W uint64_t
#define OFS_N(name) name##_64
#include "offsets_tree_w.h"
#undef OFS_W
#undef OFS_N

/* Buffers placed between two readings of the clock. */
#define OFS_TREE_CLOCK_EVERY 256u

mp_status mp__ofs_tree_place(mp__ofs_tree *t, const uint32_t *order, int fit,
                            uint64_t *off, uint64_t *arena, double deadline,
                            int stack, int *complete)
{
    const mp__ofs_prob *p = t->p;
    for (uint32_t v = 0; v < 2 * t->P; v++)
        t->own[v].n = t->sub[v].n = 0;
    uint64_t top = 0;
    *complete = 1;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t b = order[i];
        if (i % OFS_TREE_CLOCK_EVERY == OFS_TREE_CLOCK_EVERY - 1 &&
            mp__now_seconds() > deadline) {
            *complete = 0;
            if (!stack)
                break;
            /* the rest above everything placed: valid, without gaps */
            for (uint32_t k = i; k < p->n; k++) {
                off[order[k]] = top;
                top += p->size[order[k]];
            }
            break;
        }
        tree_nodes(t, p->l[b], p->r[b]);
        uint64_t z = p->size[b] >> t->shift, x;
        mp_status st;
        if (t->narrow) {
            x = tree_query_32(t, (uint32_t)z, fit);
            st = tree_insert_32(t, (uint32_t)x, (uint32_t)(x + z));
        } else {
            x = tree_query_64(t, z, fit);
            st = tree_insert_64(t, x, x + z);
        }
        if (st)
            return st;
        off[b] = x << t->shift;
        if (off[b] + p->size[b] > top)
            top = off[b] + p->size[b];
    }
    *arena = top;
    return MP_OK;
}
