/* Repair pass of the offsets solver: lowers the buffers at the top of the
 * arena by re-placing them, ejecting what is in the way (an ejection
 * chain of depth one), for instances of any size.
 *
 * A move takes a buffer b whose end reaches the arena height H and picks
 * an offset x with x + size(b) < H among the canonical positions (0 and
 * the ends of the buffers overlapping b in time) where the buffers in the
 * way (overlapping b in time and [x, x + size(b)) in offsets) weigh least.
 * It puts b at x, lifts those buffers and re-places each one, largest
 * first, in the best-fitting gap below H (its own time range only). If
 * every lifted buffer finds such a gap the move stands: one buffer fewer
 * reaches H, and when none is left H falls to the next highest end.
 * Otherwise the move is undone and the next position is tried.
 *
 * Lifetimes never change, so the time overlaps come from a static
 * segment tree over (compressed) time whose nodes list the buffers whose
 * canonical decomposition contains them (each buffer in O(log T) nodes,
 * so memory stays linear); a query walks the nodes that meet a time range.
 * Offsets live in a plain array. A query costs O(k log k) for the k
 * buffers overlapping in time. The pass stops on a work budget (counted
 * in visited buffers), deterministic; the deadline is only a safety net.
 */
#include "offsets_internal.h"

#include <string.h>

typedef struct lg {
    const mp__ofs_prob *p;
    mp_ctx *ctx;
    uint64_t *off;
    uint32_t P;
    uint32_t *first;   /* CSR: node v lists ids[first[v] .. first[v+1]) */
    uint32_t *ids;
    uint32_t *stamp;   /* dedup of query results */
    uint32_t qstamp;
    uint8_t *lifted;   /* buffers removed by the current move */
    uint32_t *res;     /* query result */
    uint32_t nres;
    uint32_t *stack;
    /* sweep scratch (2n u64 each) */
    uint64_t *a, *b2, *pre;
    uint32_t *wl, *wh, *tw;
    uint64_t work;
} lg;

static void lg_free(lg *g)
{
    mp_ctx *ctx = g->ctx;
    mp__dealloc(ctx, g->first);
    mp__dealloc(ctx, g->ids);
    mp__dealloc(ctx, g->stamp);
    mp__dealloc(ctx, g->lifted);
    mp__dealloc(ctx, g->res);
    mp__dealloc(ctx, g->stack);
    mp__dealloc(ctx, g->a);
    mp__dealloc(ctx, g->b2);
    mp__dealloc(ctx, g->pre);
    mp__dealloc(ctx, g->wl);
    mp__dealloc(ctx, g->wh);
    mp__dealloc(ctx, g->tw);
}

static mp_status lg_init(lg *g, const mp__ofs_prob *p, uint64_t *off)
{
    mp_ctx *ctx = p->ctx;
    memset(g, 0, sizeof *g);
    g->p = p;
    g->ctx = ctx;
    g->off = off;
    uint32_t P = 1;
    while (P < p->nt)
        P *= 2;
    g->P = P;
    size_t n = p->n;
    g->first = mp__calloc(ctx, 2 * (size_t)P + 1, sizeof *g->first);
    g->stamp = mp__calloc(ctx, n, sizeof *g->stamp);
    g->lifted = mp__calloc(ctx, n, sizeof *g->lifted);
    g->res = mp__alloc(ctx, n * sizeof *g->res);
    g->stack = mp__alloc(ctx, 2 * (size_t)P * sizeof *g->stack);
    g->a = mp__alloc(ctx, n * sizeof *g->a);
    g->b2 = mp__alloc(ctx, n * sizeof *g->b2);
    g->pre = mp__alloc(ctx, (n + 1) * sizeof *g->pre);
    g->wl = mp__alloc(ctx, n * sizeof *g->wl);
    g->wh = mp__alloc(ctx, n * sizeof *g->wh);
    g->tw = mp__alloc(ctx, n * sizeof *g->tw);
    if (!g->first || !g->stamp || !g->lifted || !g->res || !g->stack ||
        !g->a || !g->b2 || !g->pre || !g->wl || !g->wh || !g->tw)
        return MP_ERR_NOMEM;
    /* count, then fill (canonical nodes of [l, r)) */
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < p->n; i++)
            for (uint32_t x = p->l[i] + P, y = p->r[i] + P; x < y;
                 x >>= 1, y >>= 1) {
                if (x & 1) {
                    if (pass == 0)
                        g->first[x + 1]++;
                    else
                        g->ids[g->first[x]++] = i;
                    x++;
                }
                if (y & 1) {
                    --y;
                    if (pass == 0)
                        g->first[y + 1]++;
                    else
                        g->ids[g->first[y]++] = i;
                }
            }
        if (pass == 0) {
            for (uint32_t v = 0; v < 2 * P; v++)
                g->first[v + 1] += g->first[v];
            total = g->first[2 * P];
            g->ids = mp__alloc(ctx, (total ? total : 1) * sizeof *g->ids);
            if (!g->ids)
                return MP_ERR_NOMEM;
        } else {
            /* first[v] now holds the old first[v+1]: shift back */
            for (uint32_t v = 2 * P; v > 0; v--)
                g->first[v] = g->first[v - 1];
            g->first[0] = 0;
        }
    }
    return MP_OK;
}

/* g->res = the buffers other than `self` overlapping [l, r) in time and
 * not lifted. */
static void lg_query(lg *g, uint32_t l, uint32_t r, uint32_t self)
{
    const uint32_t P = g->P;
    uint32_t sp = 0, nres = 0;
    if (++g->qstamp == 0) {
        memset(g->stamp, 0, (size_t)g->p->n * sizeof *g->stamp);
        g->qstamp = 1;
    }
    uint32_t q = g->qstamp;
    g->stack[sp++] = 1;
    while (sp > 0) {
        uint32_t v = g->stack[--sp];
        /* node range */
        uint32_t h = 0;
        for (uint32_t t = v; t < P; t <<= 1)
            h++;
        uint64_t lo = ((uint64_t)v << h) - P, hi = ((uint64_t)(v + 1) << h) - P;
        if (hi <= l || lo >= r)
            continue;
        for (uint32_t k = g->first[v]; k < g->first[v + 1]; k++) {
            uint32_t c = g->ids[k];
            if (g->stamp[c] == q)
                continue;
            g->stamp[c] = q;
            if (c != self && !g->lifted[c])
                g->res[nres++] = c;
        }
        g->work += g->first[v + 1] - g->first[v] + 1;
        if (v < P) {
            g->stack[sp++] = 2 * v + 1;
            g->stack[sp++] = 2 * v;
        }
    }
    g->nres = nres;
}

/* In-place sort of u64 keys (LSD radix on 11-bit digits, only the digits
 * that vary). tmp holds n values. */
static void sort_u64(uint64_t *v, uint64_t *tmp, uint32_t n)
{
    if (n < 2)
        return;
    if (n <= 32) {
        for (uint32_t i = 1; i < n; i++) {
            uint64_t x = v[i];
            uint32_t j = i;
            while (j > 0 && v[j - 1] > x) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
        return;
    }
    uint64_t orv = 0, andv = ~0ull;
    for (uint32_t i = 0; i < n; i++) {
        orv |= v[i];
        andv &= v[i];
    }
    uint64_t diff = orv ^ andv;
    uint32_t cnt[2048];
    uint64_t *src = v, *dst = tmp;
    for (int sh = 0; sh < 64; sh += 11) {
        if (!((diff >> sh) & 0x7FF))
            continue;
        memset(cnt, 0, sizeof cnt);
        for (uint32_t i = 0; i < n; i++)
            cnt[(src[i] >> sh) & 0x7FF]++;
        uint32_t s = 0;
        for (uint32_t d = 0; d < 2048; d++) {
            uint32_t c = cnt[d];
            cnt[d] = s;
            s += c;
        }
        for (uint32_t i = 0; i < n; i++)
            dst[cnt[(src[i] >> sh) & 0x7FF]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, (size_t)n * sizeof *v);
}

/* Sorts keys v[0..n) with payloads w (LSD radix, 11-bit digits); tv/tw
 * hold n values each. */
static void sort_kv(uint64_t *v, uint32_t *w, uint64_t *tv, uint32_t *tw,
                    uint32_t n)
{
    if (n < 2)
        return;
    uint64_t orv = 0, andv = ~0ull;
    for (uint32_t i = 0; i < n; i++) {
        orv |= v[i];
        andv &= v[i];
    }
    uint64_t diff = orv ^ andv;
    uint32_t cnt[2048];
    uint64_t *sv = v, *dv = tv;
    uint32_t *sw = w, *dw = tw;
    for (int sh = 0; sh < 64; sh += 11) {
        if (!((diff >> sh) & 0x7FF))
            continue;
        memset(cnt, 0, sizeof cnt);
        for (uint32_t i = 0; i < n; i++)
            cnt[(sv[i] >> sh) & 0x7FF]++;
        uint32_t s = 0;
        for (uint32_t d = 0; d < 2048; d++) {
            uint32_t c = cnt[d];
            cnt[d] = s;
            s += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t d = cnt[(sv[i] >> sh) & 0x7FF]++;
            dv[d] = sv[i];
            dw[d] = sw[i];
        }
        uint64_t *t = sv;
        sv = dv;
        dv = t;
        uint32_t *u = sw;
        sw = dw;
        dw = u;
    }
    if (sv != v) {
        memcpy(v, sv, (size_t)n * sizeof *v);
        memcpy(w, sw, (size_t)n * sizeof *w);
    }
}

/* Best-fit offset for buffer b below `limit` (x + size <= limit) among the
 * buffers in g->res; UINT64_MAX when there is none. Uses g->a/b2. */
static uint64_t lg_fit(lg *g, uint32_t b, uint64_t limit)
{
    const mp__ofs_prob *p = g->p;
    uint32_t k = g->nres;
    uint64_t z = p->size[b];
    /* the free gaps are those of the union of the intervals: sweep their
     * starts and ends, each sorted on its own, with a depth counter */
    uint64_t *lo = g->a, *tmp = g->b2;
    for (uint32_t i = 0; i < k; i++)
        lo[i] = g->off[g->res[i]];
    sort_u64(lo, tmp, k);
    uint64_t *hi = g->pre;
    for (uint32_t i = 0; i < k; i++)
        hi[i] = g->off[g->res[i]] + p->size[g->res[i]];
    sort_u64(hi, tmp, k);
    g->work += 4 * (uint64_t)k;
    uint64_t best = UINT64_MAX, bestx = UINT64_MAX;
    uint64_t cur = 0; /* free from cur when depth == 0 */
    uint32_t i = 0, j = 0, depth = 0;
    while (i < k || j < k) {
        if (i < k && (j >= k || lo[i] < hi[j])) {
            /* an interval opens at lo[i] */
            if (depth == 0 && lo[i] > cur) {
                uint64_t gsz = lo[i] - cur;
                if (gsz >= z && cur + z <= limit && gsz < best) {
                    best = gsz;
                    bestx = cur;
                }
            }
            depth++;
            i++;
        } else {
            depth--;
            if (depth == 0)
                cur = hi[j];
            j++;
        }
    }
    if (best == UINT64_MAX && cur + z <= limit)
        bestx = cur;
    return bestx;
}

typedef struct lg_cand {
    uint64_t x;
    double score;
} lg_cand;
#define LG_MAXCAND 16

/* Tries to move top buffer b below H. Returns 1 when moved. */
static int lg_move(lg *g, uint32_t b, uint64_t H, uint32_t ncand,
                   uint32_t *ej, uint64_t *save)
{
    const mp__ofs_prob *p = g->p;
    uint64_t z = p->size[b];
    if (z >= H)
        return 0;
    lg_query(g, p->l[b], p->r[b], b);
    uint32_t k = g->nres;
    /* weight of [x, x+z): the buffers in the way, each weighing its
     * area in compressed time (long buffers are hard to re-place): those
     * with lo < x+z minus those with end <= x; candidates x = 0 and every
     * end below H - z. */
    uint64_t *lo = g->a, *hi = g->b2, *tv = g->pre;
    uint32_t *wl = g->wl, *wh = g->wh, *tw = g->tw;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t c = g->res[i];
        lo[i] = g->off[c];
        hi[i] = g->off[c] + p->size[c];
        wl[i] = wh[i] = c;
    }
    sort_kv(lo, wl, tv, tw, k);
    sort_kv(hi, wh, tv, tw, k);
    g->work += 6 * (uint64_t)k;
    lg_cand best[LG_MAXCAND];
    uint32_t nb = 0;
    if (ncand > LG_MAXCAND)
        ncand = LG_MAXCAND;
    uint32_t jlo = 0, jhi = 0;
    double wsum = 0; /* weight of lo < x+z minus end <= x */
    for (uint32_t t = 0; t <= k; t++) {
        uint64_t x = t == 0 ? 0 : hi[t - 1];
        if (t >= 2 && hi[t - 2] == x)
            continue;
        if (x + z >= H)
            break;
        while (jlo < k && lo[jlo] < x + z) {
            uint32_t c = wl[jlo++];
            wsum += (double)p->size[c] * (double)(p->r[c] - p->l[c]);
        }
        while (jhi < k && hi[jhi] <= x) {
            uint32_t c = wh[jhi++];
            wsum -= (double)p->size[c] * (double)(p->r[c] - p->l[c]);
        }
        double sc = wsum < 0.5 ? 0 : wsum;
        if (nb < ncand || sc < best[nb - 1].score) {
            uint32_t pos = nb < ncand ? nb++ : nb - 1;
            while (pos > 0 && best[pos - 1].score > sc) {
                best[pos] = best[pos - 1];
                pos--;
            }
            best[pos].x = x;
            best[pos].score = sc;
        }
    }
    g->work += k;
    uint64_t old = g->off[b];
    for (uint32_t ci = 0; ci < nb; ci++) {
        uint64_t x = best[ci].x;
        /* the buffers in the way */
        lg_query(g, p->l[b], p->r[b], b);
        uint32_t ne = 0;
        for (uint32_t i = 0; i < g->nres; i++) {
            uint32_t c = g->res[i];
            if (g->off[c] < x + z && g->off[c] + p->size[c] > x)
                ej[ne++] = c;
        }
        /* largest first (insertion sort: few) */
        for (uint32_t i = 1; i < ne; i++) {
            uint32_t c = ej[i], j = i;
            while (j > 0 && (p->size[ej[j - 1]] < p->size[c] ||
                             (p->size[ej[j - 1]] == p->size[c] &&
                              ej[j - 1] > c))) {
                ej[j] = ej[j - 1];
                j--;
            }
            ej[j] = c;
        }
        for (uint32_t i = 0; i < ne; i++) {
            save[i] = g->off[ej[i]];
            g->lifted[ej[i]] = 1;
        }
        g->off[b] = x;
        int ok = 1;
        for (uint32_t i = 0; i < ne && ok; i++) {
            uint32_t c = ej[i];
            lg_query(g, p->l[c], p->r[c], c);
            uint64_t y = lg_fit(g, c, H - 1);
            if (y == UINT64_MAX)
                ok = 0;
            else {
                g->off[c] = y;
                g->lifted[c] = 0;
            }
        }
        if (ok)
            return 1;
        for (uint32_t i = 0; i < ne; i++) {
            g->off[ej[i]] = save[i];
            g->lifted[ej[i]] = 0;
        }
        g->off[b] = old;
    }
    return 0;
}

mp_status mp__ofs_repair(const mp__ofs_prob *p, uint64_t *off, uint64_t *arena,
                        uint64_t budget, double deadline, int *improved)
{
    mp_ctx *ctx = p->ctx;
    *improved = 0;
    if (p->n < 2 || *arena <= p->lb)
        return MP_OK;
    lg g;
    mp_status st = lg_init(&g, p, off);
    uint32_t *tops = mp__alloc(ctx, (size_t)p->n * sizeof *tops);
    uint32_t *ej = mp__alloc(ctx, (size_t)p->n * sizeof *ej);
    uint64_t *save = mp__alloc(ctx, (size_t)p->n * sizeof *save);
    if (st != MP_OK || !tops || !ej || !save) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    uint64_t H = *arena;
    for (;;) {
        uint32_t nt = 0;
        for (uint32_t i = 0; i < p->n; i++)
            if (off[i] + p->size[i] == H)
                tops[nt++] = i;
        g.work += p->n;
        int stuck = 0;
        for (uint32_t t = 0; t < nt; t++) {
            if (g.work > budget || mp__now_seconds() > deadline ||
                !lg_move(&g, tops[t], H, LG_MAXCAND, ej, save)) {
                stuck = 1;
                break;
            }
        }
        if (stuck)
            break;
        uint64_t h = 0;
        for (uint32_t i = 0; i < p->n; i++)
            if (off[i] + p->size[i] > h)
                h = off[i] + p->size[i];
        H = h;
        *arena = H;
        *improved = 1;
        if (H <= p->lb)
            break;
    }
out:
    /* a stuck round may have moved some top buffers: the offsets stay
     * valid and the arena is still H (some buffer reaches it) */
    mp__dealloc(ctx, tops);
    mp__dealloc(ctx, ej);
    mp__dealloc(ctx, save);
    lg_free(&g);
    return st;
}
