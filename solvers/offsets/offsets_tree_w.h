/* The tree engine's run sets and queries for one width of run word,
 * included twice by offsets_place.c: OFS_W is the word (uint32_t when
 * every offset, in units of 2^shift bytes, fits in 32 bits with room for
 * x + z: half the memory; uint64_t otherwise), OFS_N(name) the name with
 * its width. Not a header of its own: it has no guard and defines only
 * static functions. */
#define OFS_RUN(s, i) (((const OFS_W *)(s)->v)[i])

static mp_status OFS_N(runset_insert)(mp_ctx *ctx, ofs_runset *s, OFS_W lo,
                                      OFS_W hi)
{
    OFS_W *v = s->v;
    /* first run with hi >= lo (overlapping or adjacent on the left) */
    uint32_t a = 0, b = s->n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (v[2 * m + 1] < lo)
            a = m + 1;
        else
            b = m;
    }
    uint32_t i = a, j = a;
    while (j < s->n && v[2 * j] <= hi) {
        if (v[2 * j] < lo)
            lo = v[2 * j];
        if (v[2 * j + 1] > hi)
            hi = v[2 * j + 1];
        j++;
    }
    if (j == i) { /* insert a new run at i */
        if (s->n == s->cap) {
            /* 1.5x: these sets hold most of the placement's memory
             * (n log n runs), and doubling left a third of it spare */
            uint64_t nc64 = s->cap ? (uint64_t)s->cap + s->cap / 2 + 2 : 4;
            uint32_t nc = nc64 > UINT32_MAX ? UINT32_MAX : (uint32_t)nc64;
            OFS_W *nv = mp__realloc_array(ctx, v, 2 * (size_t)nc, sizeof *nv);
            if (!nv)
                return MP_ERR_NOMEM;
            s->v = v = nv;
            s->cap = nc;
        }
        memmove(v + 2 * (i + 1), v + 2 * i,
                2 * (size_t)(s->n - i) * sizeof *v);
        s->n++;
    } else if (j > i + 1) { /* runs i..j-1 merge into one */
        memmove(v + 2 * (i + 1), v + 2 * j,
                2 * (size_t)(s->n - j) * sizeof *v);
        s->n -= j - i - 1;
    }
    v[2 * i] = lo;
    v[2 * i + 1] = hi;
    return MP_OK;
}

/* Advances c to the first run of s with hi > x. */
static inline uint32_t OFS_N(runset_seek)(const ofs_runset *s, uint32_t c,
                                          OFS_W x)
{
    const OFS_W *v = s->v;
    uint32_t n = s->n;
    if (c >= n || v[2 * c + 1] > x)
        return c;
    /* gallop */
    uint32_t step = 1, lo = c, hi;
    for (;;) {
        hi = lo + step;
        if (hi >= n) {
            hi = n;
            break;
        }
        if (v[2 * hi + 1] > x)
            break;
        lo = hi;
        step *= 2;
    }
    /* v[lo].hi <= x, answer in (lo, hi] */
    uint32_t a = lo + 1, b = hi;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (v[2 * m + 1] <= x)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* The lowest offset (first fit) or the tightest gap (best fit) for z
 * over the nodes tree_nodes found. */
static OFS_W OFS_N(tree_query)(mp__ofs_tree *t, OFS_W z, int fit)
{
    const ofs_runset **qs = t->qs;
    uint32_t *cur = t->cur, m = 0;
    for (uint32_t i = 0; i < t->ncanon; i++)
        if (t->sub[t->canon[i]].n)
            qs[m++] = &t->sub[t->canon[i]];
    for (uint32_t i = 0; i < t->npart; i++)
        if (t->own[t->part[i]].n)
            qs[m++] = &t->own[t->part[i]];
    for (uint32_t k = 0; k < m; k++)
        cur[k] = 0;
    OFS_W x = 0;
    if (fit == MP__OFS_FIRSTFIT) {
        for (;;) {
            int moved = 0;
            for (uint32_t k = 0; k < m; k++) {
                uint32_t c = cur[k] = OFS_N(runset_seek)(qs[k], cur[k], x);
                const OFS_W *v = qs[k]->v;
                if (c < qs[k]->n && v[2 * c] < x + z) {
                    x = v[2 * c + 1];
                    moved = 1;
                }
            }
            if (!moved)
                return x;
        }
    }
    /* best fit: sweep the union of the sets in offset order, a binary
     * heap of the sets keyed by the start of their current run */
    uint32_t *heap = t->heap, hn = 0;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t i = hn++;
        heap[i] = k;
        while (i > 0 && OFS_RUN(qs[heap[(i - 1) / 2]], 0) > OFS_RUN(qs[k], 0)) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i] = k;
    }
    uint64_t best = UINT64_MAX, bestx = 0;
    while (hn > 0) {
        uint32_t k = heap[0];
        const OFS_W *run = (const OFS_W *)qs[k]->v + 2 * cur[k];
        if (run[0] > x) {
            uint64_t g = run[0] - x;
            if (g >= z && g < best) {
                best = g;
                bestx = x;
                if (g == z)
                    return x;
            }
        }
        if (run[1] > x)
            x = run[1];
        uint32_t c = cur[k] = OFS_N(runset_seek)(qs[k], cur[k], x);
        uint32_t i = 0;
        if (c >= qs[k]->n) {
            k = heap[--hn];
            if (hn == 0)
                break;
        }
        /* sift k down from the root */
        OFS_W key = OFS_RUN(qs[k], 2 * cur[k]);
        for (;;) {
            uint32_t ch = 2 * i + 1;
            if (ch >= hn)
                break;
            if (ch + 1 < hn && OFS_RUN(qs[heap[ch + 1]], 2 * cur[heap[ch + 1]]) <
                                   OFS_RUN(qs[heap[ch]], 2 * cur[heap[ch]]))
                ch++;
            if (OFS_RUN(qs[heap[ch]], 2 * cur[heap[ch]]) >= key)
                break;
            heap[i] = heap[ch];
            i = ch;
        }
        heap[i] = k;
    }
    return best != UINT64_MAX ? (OFS_W)bestx : x;
}

/* Adds [x, e) to the sets of the nodes tree_nodes found. */
static mp_status OFS_N(tree_insert)(mp__ofs_tree *t, OFS_W x, OFS_W e)
{
    mp_ctx *ctx = t->p->ctx;
    for (uint32_t k = 0; k < t->ncanon; k++) {
        uint32_t v = t->canon[k];
        if (OFS_N(runset_insert)(ctx, &t->own[v], x, e) != MP_OK ||
            OFS_N(runset_insert)(ctx, &t->sub[v], x, e) != MP_OK)
            return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < t->npart; k++)
        if (OFS_N(runset_insert)(ctx, &t->sub[t->part[k]], x, e) != MP_OK)
            return MP_ERR_NOMEM;
    return MP_OK;
}

#undef OFS_RUN
