/* Offsets, the exact tier: a branch and bound that decides "fits in
 * capacity C" and minimises the arena by repeating the decision.
 *
 * Ideas (after MiniMalloc, Moffitt, ASPLOS 2023; our own implementation):
 *  - canonical solutions: every buffer sits at the highest top of the
 *    placed buffers that overlap it in time (or at 0), and buffers are
 *    placed in non-decreasing offset order, ties in a fixed preorder. Any
 *    packing can be "dropped" into such a form without growing, so the
 *    search loses nothing; permutations of equal placements are never
 *    enumerated twice.
 *  - sections: the maximal sets of buffers live together (one per start
 *    time after which some buffer ends). Every unplaced buffer of a section
 *    lies above the section's floor (the highest placed top in it) and
 *    above the current offset, and they are stacked: prune when
 *    max(floor, offset) + unplaced bytes of the section > C.
 *  - dominance: never place a buffer at or above the lowest top that an
 *    unplaced buffer could reach (that buffer would fit under it).
 *  - a buffer with nothing unplaced overlapping it ("hatless") constrains
 *    no one: if the subtree under it fails, its siblings fail too.
 *  - decomposition: when no unplaced buffer crosses a section boundary,
 *    the two sides are independent subproblems, solved one after the
 *    other, each with its own canonical order; a failing side fails the
 *    node without trying other solutions of the sides before it.
 *  - ordering: static preorders (width, area, section total; three
 *    lexicographic mixes tried round robin under doubling node limits) and
 *    dynamic ordering by the smallest viable offset.
 * Minimisation: the seed (heuristic packing) is the upper bound, the max
 * live bytes the lower bound; decide C = LB first, then bisect.
 *
 * Budgets: search nodes and work units (list entries and section members
 * visited, so a budget bounds the time whatever the instance's shape);
 * within them the search is deterministic. The wall clock is read every
 * OFS_EX_CLOCK_WORK work units (res->timed_out says when it stopped the
 * search). mem_limit bounds the search state: the overlap lists, the
 * section memberships and the trail are sized up front (above the limit
 * the search does not start), and the per-node candidate lists, which
 * grow with the depth, stop the search when they reach the rest.
 */
#include "offsets_exact.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT64_MAX
#define SEC_FLAG 0x80000000u

enum { EX_FOUND = 0, EX_NOTFOUND = 1, EX_ABORT = 2, EX_NOMEM = 3 };

/* Work units between two readings of the clock (well under a
 * millisecond). */
#define OFS_EX_CLOCK_WORK 65536u

typedef struct ent {
    uint64_t o;     /* smallest viable offset when the list was built */
    uint32_t pre;   /* preorder rank */
    uint32_t b;
} ent;

typedef struct pkey {
    double k[3];
    uint32_t b;
} pkey;

typedef struct ex {
    mp_ctx *ctx;
    uint32_t n, ns;
    const uint64_t *size;
    uint32_t *sl, *sr;     /* section range [sl, sr) of each buffer */
    uint32_t *aoff, *adj;  /* buffers overlapping in time (CSR) */
    uint64_t *tot0;        /* bytes of each section */
    uint32_t *cut0;        /* buffers crossing boundary s|s+1 */
    uint64_t *width;       /* lifetime length (original time units) */
    int heur;              /* static preorder in use (preorders[]) */
    struct pkey *pk;       /* scratch for ranking a list */
    uint32_t *moff;        /* buffers of each section (CSR offsets) */
    uint32_t *mem;         /* ... latest end first */
    uint32_t *mem2;        /* ... earliest start first */
    uint32_t *sstamp;      /* sections already checked at this placement */
    /* unplaced members of each section as doubly linked lists over the
     * positions of mem (lk[0]) and mem2 (lk[1]); position nmem + s is the
     * head of section s; bpos[bbase[b] + s - sl[b]] holds b's positions */
    uint32_t *nx[2], *pv[2];
    uint32_t *bbase, *bpos[2];
    uint32_t nmem;
    uint64_t C;
    /* search state */
    uint64_t *off, *minoff, *floor, *total, *sol;
    uint32_t *cut;
    uint32_t *stamp;
    uint32_t stamp_now;
    uint32_t *tr_idx;
    uint64_t *tr_val;
    size_t tr_n, tr_cap;
    ent *la;               /* list arena (indices, never pointers, kept) */
    size_t la_n, la_cap;
    ent *tmp;              /* changed entries while building a child list */
    uint32_t *cuts_hit;    /* zero-cut boundaries found at a node (stack) */
    size_t ch_n;
    size_t la_max;         /* entries; 0: no limit */
    uint64_t nodes, nodes_left;
    uint64_t work, work_limit, next_clock;
    double deadline;
    int timed_out;
    int capped;            /* the lists reached la_max */
} ex;

/* ---- setup ------------------------------------------------------------------ */

static void ex_free(ex *E)
{
    mp_ctx *c = E->ctx;
    mp__dealloc(c, E->sl);
    mp__dealloc(c, E->sr);
    mp__dealloc(c, E->aoff);
    mp__dealloc(c, E->adj);
    mp__dealloc(c, E->tot0);
    mp__dealloc(c, E->cut0);
    mp__dealloc(c, E->width);
    mp__dealloc(c, E->pk);
    mp__dealloc(c, E->moff);
    mp__dealloc(c, E->mem);
    mp__dealloc(c, E->mem2);
    for (int k = 0; k < 2; k++) {
        mp__dealloc(c, E->nx[k]);
        mp__dealloc(c, E->pv[k]);
        mp__dealloc(c, E->bpos[k]);
    }
    mp__dealloc(c, E->bbase);
    mp__dealloc(c, E->sstamp);
    mp__dealloc(c, E->off);
    mp__dealloc(c, E->minoff);
    mp__dealloc(c, E->floor);
    mp__dealloc(c, E->total);
    mp__dealloc(c, E->sol);
    mp__dealloc(c, E->cut);
    mp__dealloc(c, E->stamp);
    mp__dealloc(c, E->tr_idx);
    mp__dealloc(c, E->tr_val);
    mp__dealloc(c, E->la);
    mp__dealloc(c, E->tmp);
    mp__dealloc(c, E->cuts_hit);
}

static int cmp_by_l(const void *cx, uint32_t a, uint32_t b)
{
    const mp__ofs_prob *p = cx;
    if (p->l[a] != p->l[b])
        return p->l[a] < p->l[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_by_start(const void *cx, uint32_t a, uint32_t b)
{
    const mp__ofs_prob *p = cx;
    if (p->bufs[a].start != p->bufs[b].start)
        return p->bufs[a].start < p->bufs[b].start ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_by_end_desc(const void *cx, uint32_t a, uint32_t b)
{
    const mp__ofs_prob *p = cx;
    if (p->bufs[a].end != p->bufs[b].end)
        return p->bufs[a].end > p->bufs[b].end ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* maximal sections: start ranks k after which some buffer ends (r ==
 * k + 1); cntmax[k] = maximal ranks below k; [sl, sr) of each buffer */
static mp_status ex_sections(ex *E, const mp__ofs_prob *p, uint32_t *cntmax)
{
    uint32_t n = p->n, nt = p->nt;
    unsigned char *ismax = mp__calloc(E->ctx, (size_t)nt + 1, 1);
    if (!ismax)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        ismax[p->r[i] - 1] = 1;
    for (uint32_t k = 0; k < nt; k++)
        cntmax[k + 1] = cntmax[k] + ismax[k];
    mp__dealloc(E->ctx, ismax);
    E->ns = cntmax[nt];
    for (uint32_t i = 0; i < n; i++) {
        E->sl[i] = cntmax[p->l[i]];
        E->sr[i] = cntmax[p->r[i]];
    }
    return MP_OK;
}

/* overlaps: by start rank, b's later-starting partners start before
 * b ends; both directions in CSR (aoff, adj). byl and deg (zeroed) are
 * scratch of n entries. */
static mp_status ex_overlaps(ex *E, const mp__ofs_prob *p, uint32_t *byl,
                             uint32_t *deg)
{
    mp_ctx *ctx = E->ctx;
    uint32_t n = p->n;
    for (uint32_t i = 0; i < n; i++)
        byl[i] = i;
    mp_status st = mp__ofs_sort_idx(ctx, byl, n, cmp_by_l, p);
    if (st != MP_OK)
        return st;
    uint64_t pairs = 0;
    for (uint32_t a = 0; a < n; a++) {
        uint32_t x = byl[a];
        for (uint32_t c = a + 1; c < n && p->l[byl[c]] < p->r[x]; c++) {
            deg[x]++;
            deg[byl[c]]++;
            pairs++;
        }
    }
    if (pairs > (uint64_t)UINT32_MAX / 2 - n)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "offsets: exact tier: too many overlapping pairs (%llu)",
                      (unsigned long long)pairs);
    E->aoff = mp__alloc(ctx, ((size_t)n + 1) * sizeof *E->aoff);
    E->adj = mp__alloc(ctx, (size_t)(2 * pairs + 1) * sizeof *E->adj);
    if (!E->aoff || !E->adj)
        return MP_ERR_NOMEM;
    E->aoff[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        E->aoff[i + 1] = E->aoff[i] + deg[i];
    memset(deg, 0, (size_t)n * sizeof *deg);
    for (uint32_t a = 0; a < n; a++) {
        uint32_t x = byl[a];
        for (uint32_t c = a + 1; c < n && p->l[byl[c]] < p->r[x]; c++) {
            uint32_t y = byl[c];
            E->adj[E->aoff[x] + deg[x]++] = y;
            E->adj[E->aoff[y] + deg[y]++] = x;
        }
    }
    return MP_OK;
}

/* The arrays of the search, per buffer and per section; the trail. */
static mp_status ex_alloc_search(ex *E)
{
    mp_ctx *ctx = E->ctx;
    size_t n = E->n, ns = E->ns;
    E->tot0 = mp__calloc(ctx, ns + 1, sizeof *E->tot0);
    E->cut0 = mp__calloc(ctx, ns + 1, sizeof *E->cut0);
    E->width = mp__alloc(ctx, n * sizeof *E->width);
    E->pk = mp__alloc(ctx, (n + 1) * sizeof *E->pk);
    E->off = mp__alloc(ctx, n * sizeof *E->off);
    E->minoff = mp__alloc(ctx, n * sizeof *E->minoff);
    E->sol = mp__alloc(ctx, n * sizeof *E->sol);
    E->stamp = mp__calloc(ctx, n, sizeof *E->stamp);
    E->floor = mp__alloc(ctx, (ns + 1) * sizeof *E->floor);
    E->total = mp__alloc(ctx, (ns + 1) * sizeof *E->total);
    E->cut = mp__alloc(ctx, (ns + 1) * sizeof *E->cut);
    E->tmp = mp__alloc(ctx, (n + 1) * sizeof *E->tmp);
    E->cuts_hit = mp__alloc(ctx, (ns + 1) * sizeof *E->cuts_hit);
    /* trail: grown on demand (tr_reserve) */
    E->tr_cap = 2 * n + 2 * ns + 64;
    E->tr_idx = mp__alloc(ctx, E->tr_cap * sizeof *E->tr_idx);
    E->tr_val = mp__alloc(ctx, E->tr_cap * sizeof *E->tr_val);
    if (!E->tot0 || !E->cut0 || !E->width || !E->pk || !E->off || !E->minoff ||
        !E->sol || !E->stamp || !E->floor || !E->total || !E->cut ||
        !E->tmp || !E->cuts_hit || !E->tr_idx || !E->tr_val)
        return MP_ERR_NOMEM;
    return MP_OK;
}

/* Lifetime widths; the bytes of each section and the buffers crossing
 * each boundary; *nmem: the (buffer, section) memberships. */
static mp_status ex_section_totals(ex *E, const mp__ofs_prob *p,
                                   uint64_t *nmem)
{
    uint32_t n = E->n;
    uint64_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        m += E->sr[i] - E->sl[i];
    if (m + E->ns >= UINT32_MAX / 2)
        return mp__err(E->ctx, MP_ERR_UNSUPPORTED,
                      "offsets: exact tier: instance too large");
    for (uint32_t i = 0; i < n; i++)
        E->width[i] = (uint64_t)p->bufs[i].end - (uint64_t)p->bufs[i].start;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t s = E->sl[i]; s < E->sr[i]; s++)
            E->tot0[s] += p->size[i];
        for (uint32_t s = E->sl[i]; s + 1 < E->sr[i]; s++)
            E->cut0[s]++;
    }
    *nmem = m;
    return MP_OK;
}

/* members by latest end (mem) and by earliest start (mem2): the
 * prefixes of either are sets of buffers live together; bpos[pass]
 * records each membership's position. byl is scratch of n entries,
 * fill of ns. */
static mp_status ex_fill_members(ex *E, const mp__ofs_prob *p, uint32_t *byl,
                                 uint32_t *fill)
{
    uint32_t n = E->n;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n; i++)
            byl[i] = i;
        mp_status st = mp__ofs_sort_idx(E->ctx, byl, n,
                                        pass ? cmp_by_start : cmp_by_end_desc,
                                        p);
        if (st != MP_OK)
            return st;
        uint32_t *dst = pass ? E->mem2 : E->mem;
        memcpy(fill, E->moff, (size_t)E->ns * sizeof *fill);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = byl[k];
            for (uint32_t s = E->sl[i]; s < E->sr[i]; s++) {
                E->bpos[pass][E->bbase[i] + s - E->sl[i]] = fill[s];
                dst[fill[s]++] = i;
            }
        }
    }
    return MP_OK;
}

/* The members of each section (CSR: moff; mem, mem2), the linked lists
 * of unplaced members over them and each buffer's positions in them. */
static mp_status ex_members(ex *E, const mp__ofs_prob *p, uint32_t *byl,
                            uint64_t nmem)
{
    mp_ctx *ctx = E->ctx;
    uint32_t n = E->n, ns = E->ns;
    E->moff = mp__calloc(ctx, (size_t)ns + 1, sizeof *E->moff);
    E->mem = mp__alloc(ctx, (size_t)(nmem + 1) * sizeof *E->mem);
    E->mem2 = mp__alloc(ctx, (size_t)(nmem + 1) * sizeof *E->mem2);
    E->sstamp = mp__calloc(ctx, (size_t)ns + 1, sizeof *E->sstamp);
    uint32_t *fill = mp__alloc(ctx, ((size_t)ns + 1) * sizeof *fill);
    E->nmem = (uint32_t)nmem;
    E->bbase = mp__alloc(ctx, ((size_t)n + 1) * sizeof *E->bbase);
    int lk_ok = 1;
    for (int k = 0; k < 2; k++) {
        E->nx[k] = mp__alloc(ctx, (size_t)(nmem + ns + 1) * sizeof *E->nx[k]);
        E->pv[k] = mp__alloc(ctx, (size_t)(nmem + ns + 1) * sizeof *E->pv[k]);
        E->bpos[k] = mp__alloc(ctx, (size_t)(nmem + 1) * sizeof *E->bpos[k]);
        lk_ok &= E->nx[k] && E->pv[k] && E->bpos[k];
    }
    mp_status st = MP_ERR_NOMEM;
    if (E->moff && E->mem && E->mem2 && E->sstamp && fill && E->bbase &&
        lk_ok) {
        E->bbase[0] = 0;
        for (uint32_t i = 0; i < n; i++)
            E->bbase[i + 1] = E->bbase[i] + (E->sr[i] - E->sl[i]);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t s = E->sl[i]; s < E->sr[i]; s++)
                E->moff[s + 1]++;
        for (uint32_t s = 0; s < ns; s++)
            E->moff[s + 1] += E->moff[s];
        st = ex_fill_members(E, p, byl, fill);
    }
    mp__dealloc(ctx, fill);
    return st;
}

/* Bytes of the search state before the candidate lists: per buffer,
 * per overlapping pair (the adjacency lists), per section membership
 * (the member lists and their links) and per section; the trail (a
 * growable array) holds at most one entry per pair and membership along
 * a path, counted twice for its growth. */
static uint64_t ex_state_bytes(const mp__ofs_prob *p, uint64_t nmem,
                               uint64_t ns)
{
    uint64_t upairs = p->pairs / 2;
    return 128 * (uint64_t)p->n + 8 * upairs + 32 * nmem + 64 * ns +
           24 * (upairs + nmem + 2 * (uint64_t)p->n + 2 * ns);
}

/* mem_limit > 0: when the state would not fit, sets *skip and returns
 * MP_OK without building anything; otherwise sets E->la_max to the list
 * entries that fit beside it. */
static mp_status ex_init(ex *E, const mp__ofs_prob *p, uint64_t mem_limit,
                         int *skip)
{
    mp_ctx *ctx = p->ctx;
    memset(E, 0, sizeof *E);
    E->ctx = ctx;
    uint32_t n = p->n, nt = p->nt;
    E->n = n;
    E->size = p->size;
    uint32_t *cntmax = mp__calloc(ctx, (size_t)nt + 2, sizeof *cntmax);
    uint32_t *byl = mp__alloc(ctx, (size_t)n * sizeof *byl);
    uint32_t *deg = mp__calloc(ctx, (size_t)n + 1, sizeof *deg);
    E->sl = mp__alloc(ctx, (size_t)n * sizeof *E->sl);
    E->sr = mp__alloc(ctx, (size_t)n * sizeof *E->sr);
    mp_status st = MP_ERR_NOMEM;
    uint64_t nmem = 0;
    *skip = 0;
    if (cntmax && byl && deg && E->sl && E->sr &&
        !(st = ex_sections(E, p, cntmax)) && mem_limit) {
        for (uint32_t i = 0; i < n; i++)
            nmem += E->sr[i] - E->sl[i];
        uint64_t state = ex_state_bytes(p, nmem, E->ns);
        /* the rest for the lists (allocated once, see la_reserve) */
        uint64_t lists = state < mem_limit
                             ? (mem_limit - state) / sizeof(ent)
                             : 0;
        if (lists < 2 * (uint64_t)n + 64)
            *skip = 1;
        else
            E->la_max = lists > SIZE_MAX ? SIZE_MAX : (size_t)lists;
    }
    if (cntmax && byl && deg && E->sl && E->sr && st == MP_OK && !*skip &&
        !(st = ex_overlaps(E, p, byl, deg)) && !(st = ex_alloc_search(E)) &&
        !(st = ex_section_totals(E, p, &nmem)))
        st = ex_members(E, p, byl, nmem);
    mp__dealloc(ctx, cntmax);
    mp__dealloc(ctx, byl);
    mp__dealloc(ctx, deg);
    return st;
}

/* ---- preorders ----------------------------------------------------------- */

/* Static preorders, as in MiniMalloc: lexicographic, all descending, on
 * W (lifetime width), A (area: width x size) and T (the largest unplaced
 * bytes of a section the buffer lives in, taken when a (sub)problem
 * starts); ties by buffer index. */
static const char *const preorders[] = {"WAT", "TAW", "TWA"};
#define N_PREORDERS 3

static int pkey_cmp(const void *a, const void *b)
{
    const pkey *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] > y->k[i] ? -1 : 1;
    return x->b < y->b ? -1 : x->b > y->b;
}

static int ent_cmp(const void *a, const void *b);

/* Ranks the m entries of L by the current preorder (pre = rank) and
 * sorts them by (viable offset, rank). */
static void rank_list(ex *E, ent *L, uint32_t m)
{
    const char *keys = preorders[E->heur];
    for (uint32_t i = 0; i < m; i++) {
        uint32_t b = L[i].b;
        uint64_t t = 0;
        for (uint32_t s = E->sl[b]; s < E->sr[b]; s++)
            if (E->total[s] > t)
                t = E->total[s];
        pkey *k = &E->pk[i];
        k->b = b;
        for (int j = 0; j < 3; j++) {
            switch (keys[j]) {
            case 'W': k->k[j] = (double)E->width[b]; break;
            case 'T': k->k[j] = (double)t; break;
            default:  k->k[j] = (double)E->width[b] * (double)E->size[b];
            }
        }
    }
    qsort(E->pk, m, sizeof *E->pk, pkey_cmp);
    for (uint32_t i = 0; i < m; i++) {
        uint32_t b = E->pk[i].b;
        L[i].b = b;
        L[i].pre = i;
        L[i].o = E->minoff[b];
    }
    qsort(L, m, sizeof *L, ent_cmp);
}

/* ---- search ----------------------------------------------------------------- */

static int ent_cmp(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    if (x->o != y->o)
        return x->o < y->o ? -1 : 1;
    return x->pre < y->pre ? -1 : x->pre > y->pre;
}

static int ent_less(const ent *x, const ent *y)
{
    return x->o < y->o || (x->o == y->o && x->pre < y->pre);
}

/* Room for `more` list entries: EX_FOUND, EX_NOMEM, or EX_ABORT when
 * the lists would pass la_max. */
static int la_reserve(ex *E, size_t more)
{
    if (E->la_n + more <= E->la_cap)
        return EX_FOUND;
    size_t need = E->la_n + more;
    if (E->la_max) {
        if (need > E->la_max) {
            E->capped = 1;
            return EX_ABORT;
        }
        /* at once: pages count only once the lists reach them */
        need = E->la_max;
    }
    return mp__grow(E->ctx, (void **)&E->la, sizeof *E->la, need,
                   &E->la_cap) != MP_OK ? EX_NOMEM : EX_FOUND;
}

/* Room on the trail for one placement of b. */
static int tr_reserve(ex *E, uint32_t b)
{
    size_t need = E->tr_n + (E->aoff[b + 1] - E->aoff[b]) + 2 * (size_t)E->ns;
    if (need <= E->tr_cap)
        return 0;
    size_t c1 = E->tr_cap, c2 = E->tr_cap;
    if (mp__grow(E->ctx, (void **)&E->tr_idx, sizeof *E->tr_idx, need, &c1) ||
        mp__grow(E->ctx, (void **)&E->tr_val, sizeof *E->tr_val, need, &c2))
        return 1;
    E->tr_cap = c1 < c2 ? c1 : c2;
    return 0;
}

/* Places b at o; returns 1 when no unplaced buffer overlaps b. */
static int place(ex *E, uint32_t b, uint64_t o)
{
    uint64_t top = o + E->size[b];
    int hatless = 1;
    E->off[b] = o;
    E->stamp_now++;
    for (uint32_t k = E->aoff[b]; k < E->aoff[b + 1]; k++) {
        uint32_t c = E->adj[k];
        if (E->off[c] != NONE)
            continue;
        hatless = 0;
        if (E->minoff[c] < top) {
            E->tr_idx[E->tr_n] = c;
            E->tr_val[E->tr_n++] = E->minoff[c];
            E->minoff[c] = top;
            E->stamp[c] = E->stamp_now;
        }
    }
    const uint32_t *bp0 = E->bpos[0] + E->bbase[b] - E->sl[b];
    const uint32_t *bp1 = E->bpos[1] + E->bbase[b] - E->sl[b];
    for (uint32_t s = E->sl[b]; s < E->sr[b]; s++) {
        E->tr_idx[E->tr_n] = s | SEC_FLAG;
        E->tr_val[E->tr_n++] = E->floor[s];
        E->floor[s] = top;
        E->total[s] -= E->size[b];
        uint32_t q = bp0[s];
        E->nx[0][E->pv[0][q]] = E->nx[0][q];
        E->pv[0][E->nx[0][q]] = E->pv[0][q];
        q = bp1[s];
        E->nx[1][E->pv[1][q]] = E->nx[1][q];
        E->pv[1][E->nx[1][q]] = E->pv[1][q];
    }
    return hatless;
}

static void unplace(ex *E, uint32_t b, size_t mark)
{
    while (E->tr_n > mark) {
        E->tr_n--;
        uint32_t i = E->tr_idx[E->tr_n];
        if (i & SEC_FLAG)
            E->floor[i & ~SEC_FLAG] = E->tr_val[E->tr_n];
        else
            E->minoff[i] = E->tr_val[E->tr_n];
    }
    const uint32_t *bp0 = E->bpos[0] + E->bbase[b] - E->sl[b];
    const uint32_t *bp1 = E->bpos[1] + E->bbase[b] - E->sl[b];
    for (uint32_t s = E->sr[b]; s-- > E->sl[b];) {
        E->total[s] += E->size[b];
        uint32_t q = bp0[s]; /* dancing links: relink in reverse */
        E->nx[0][E->pv[0][q]] = q;
        E->pv[0][E->nx[0][q]] = q;
        q = bp1[s];
        E->nx[1][E->pv[1][q]] = q;
        E->pv[1][E->nx[1][q]] = q;
    }
    E->off[b] = NONE;
}

/* Section inference after placing b. The unplaced buffers of a set live
 * together are stacked, each at or above its smallest viable offset: the
 * set needs min(viable offsets) + its bytes <= C. Checked for the
 * prefixes of each section's members by latest end and by earliest start
 * (the live sets between the section's neighbours, as MiniMalloc's finer
 * sections give), in the sections where something changed: b's and those
 * of the buffers whose viable offset rose. (The floor and the current
 * offset are covered by the node's bound omax.) */
static int check_set(ex *E, int k, uint32_t s)
{
    const uint32_t *m = k ? E->mem2 : E->mem, *nx = E->nx[k];
    uint32_t head = E->nmem + s;
    uint64_t lo = NONE, sum = 0, w = 1;
    int ok = 1;
    for (uint32_t q = nx[head]; q != head; q = nx[q], w++) {
        uint32_t x = m[q];
        if (E->minoff[x] < lo)
            lo = E->minoff[x];
        sum += E->size[x];
        if (lo + sum > E->C) {
            ok = 0;
            break;
        }
    }
    E->work += w;
    return ok;
}

static int check_sec(ex *E, uint32_t s)
{
    if (E->sstamp[s] == E->stamp_now)
        return 1;
    E->sstamp[s] = E->stamp_now;
    if (E->total[s] == 0)
        return 1;
    return check_set(E, 0, s) && check_set(E, 1, s);
}

static int check(ex *E, uint32_t b)
{
    for (uint32_t s = E->sl[b]; s < E->sr[b]; s++)
        if (!check_sec(E, s))
            return 0;
    for (uint32_t k = E->aoff[b]; k < E->aoff[b + 1]; k++) {
        uint32_t c = E->adj[k];
        if (E->stamp[c] != E->stamp_now || E->off[c] != NONE)
            continue;
        for (uint32_t s = E->sl[c]; s < E->sr[c]; s++)
            if (!check_sec(E, s))
                return 0;
    }
    return 1;
}

/* Builds the child list at the end of the arena from the list at `lst`
 * (cnt entries) minus the placed buffer b, with the entries whose viable
 * offset changed (stamp) re-sorted. Returns the count, or -1 (no memory)
 * or -2 (the lists reached la_max). */
static int64_t child_list(ex *E, size_t lst, uint32_t cnt, uint32_t b)
{
    int lr = la_reserve(E, cnt);
    if (lr != EX_FOUND)
        return lr == EX_ABORT ? -2 : -1;
    E->work += cnt;
    ent *src = E->la + lst, *dst = E->la + E->la_n;
    uint32_t nu = 0, nc = 0;
    /* unchanged entries stay in order; changed ones go to tmp */
    ent *un = dst; /* written in place, merged below from the back */
    for (uint32_t i = 0; i < cnt; i++) {
        uint32_t c = src[i].b;
        if (c == b)
            continue;
        if (E->stamp[c] == E->stamp_now) {
            E->tmp[nc] = src[i];
            E->tmp[nc].o = E->minoff[c];
            nc++;
        } else {
            un[nu++] = src[i];
        }
    }
    if (nc) {
        if (nc > 1)
            qsort(E->tmp, nc, sizeof *E->tmp, ent_cmp);
        /* merge from the back: un[0..nu) and tmp[0..nc) into dst */
        int64_t i = (int64_t)nu - 1, j = (int64_t)nc - 1,
                k = (int64_t)(nu + nc) - 1;
        while (j >= 0) {
            if (i >= 0 && ent_less(&E->tmp[j], &un[i]))
                dst[k--] = un[i--];
            else
                dst[k--] = E->tmp[j--];
        }
    }
    return (int64_t)(nu + nc);
}

static int dfs(ex *E, size_t lst, uint32_t cnt, uint64_t last_o,
               uint32_t last_pre, uint32_t s0, uint32_t s1);

/* Solves the list at lst (cnt entries of the partition [s0, s1)) split at
 * the zero-cut boundaries cuts_hit[from..E->ch_n). */
static int solve_pieces(ex *E, size_t lst, uint32_t cnt, uint32_t s0,
                        uint32_t s1, size_t from)
{
    size_t nb = E->ch_n - from;
    /* boundaries sorted ascending (few: insertion sort) */
    uint32_t *cb = E->cuts_hit + from;
    for (size_t i = 1; i < nb; i++) {
        uint32_t v = cb[i];
        size_t j = i;
        while (j > 0 && cb[j - 1] > v) {
            cb[j] = cb[j - 1];
            j--;
        }
        cb[j] = v;
    }
    uint32_t lo = s0;
    for (size_t k = 0; k <= nb; k++) {
        uint32_t hi = k < nb ? cb[k] : s1;
        if (hi <= lo)
            continue;
        size_t mark = E->la_n;
        int lr = la_reserve(E, cnt);
        if (lr != EX_FOUND)
            return lr;
        E->work += cnt;
        ent *src = E->la + lst, *dst = E->la + E->la_n;
        uint32_t m = 0;
        for (uint32_t i = 0; i < cnt; i++) {
            uint32_t c = src[i].b;
            if (E->sl[c] < hi && E->sr[c] > lo)
                dst[m++] = src[i];
        }
        int r = EX_FOUND;
        if (m) {
            size_t piece = E->la_n;
            E->la_n += m;
            E->work += 8 * (uint64_t)m;
            rank_list(E, E->la + piece, m);
            r = dfs(E, piece, m, 0, 0, lo, hi);
        }
        E->la_n = mark;
        if (r != EX_FOUND)
            return r;
        lo = hi;
    }
    return EX_FOUND;
}

static int dfs(ex *E, size_t lst, uint32_t cnt, uint64_t last_o,
               uint32_t last_pre, uint32_t s0, uint32_t s1)
{
    if (cnt == 0)
        return EX_FOUND;
    if (E->nodes_left == 0)
        return EX_ABORT;
    E->nodes_left--;
    E->nodes++;
    E->work += cnt;
    if (E->work >= E->next_clock) {
        E->next_clock = E->work + OFS_EX_CLOCK_WORK;
        if (mp__now_seconds() > E->deadline) {
            E->timed_out = 1;
            return EX_ABORT;
        }
        mp__progress_tick(E->ctx);
    }
    if (E->work > E->work_limit)
        return EX_ABORT;
    uint64_t minh = NONE;
    {
        const ent *L = E->la + lst;
        for (uint32_t i = 0; i < cnt; i++) {
            uint64_t h = L[i].o + E->size[L[i].b];
            if (h < minh)
                minh = h;
        }
    }
    /* Every section passed the check when this node was entered
     * (floor + unplaced bytes <= C), so after placing any buffer at o a
     * section fails the floor test iff o + its unplaced bytes > C (the
     * placed buffer's own sections included): one bound for all. */
    uint64_t tmax = 0;
    for (uint32_t s = s0; s < s1; s++)
        if (E->total[s] > tmax)
            tmax = E->total[s];
    uint64_t omax = E->C - tmax; /* tmax <= C: checked on entry */
    for (uint32_t i = 0; i < cnt; i++) {
        ent e = E->la[lst + i];
        if (e.o >= minh || e.o > omax)
            break; /* dominated or over capacity, and so is every later */
        if (e.o < last_o || (e.o == last_o && e.pre < last_pre))
            continue; /* not canonical */
        uint32_t b = e.b;
        if (e.o + E->size[b] > E->C)
            continue;
        size_t mark = E->tr_n;
        if (tr_reserve(E, b))
            return EX_NOMEM;
        int hatless = place(E, b, e.o);
        int r = EX_NOTFOUND;
        if (check(E, b)) {
            /* boundaries inside b's span that no unplaced buffer crosses
             * any more split the rest into independent pieces */
            size_t ch0 = E->ch_n;
            for (uint32_t s = E->sl[b]; s + 1 < E->sr[b]; s++)
                if (--E->cut[s] == 0)
                    E->cuts_hit[E->ch_n++] = s + 1;
            size_t amark = E->la_n;
            int64_t m = child_list(E, lst, cnt, b);
            if (m < 0) {
                r = m == -2 ? EX_ABORT : EX_NOMEM;
            } else {
                size_t child = E->la_n;
                E->la_n += (size_t)m;
                if (E->ch_n == ch0)
                    r = dfs(E, child, (uint32_t)m, e.o, e.pre, s0, s1);
                else
                    r = solve_pieces(E, child, (uint32_t)m, s0, s1, ch0);
            }
            E->la_n = amark;
            E->ch_n = ch0;
            for (uint32_t s = E->sl[b]; s + 1 < E->sr[b]; s++)
                E->cut[s]++;
        }
        unplace(E, b, mark);
        if (r == EX_FOUND) {
            E->sol[b] = e.o;
            return EX_FOUND;
        }
        if (r != EX_NOTFOUND)
            return r;
        if (hatless)
            break;
    }
    return EX_NOTFOUND;
}

/* One complete search at capacity E->C under the current preorder. */
static int search_all(ex *E)
{
    uint32_t n = E->n, ns = E->ns;
    for (uint32_t i = 0; i < n; i++) {
        E->off[i] = NONE;
        E->minoff[i] = 0;
        if (E->size[i] > E->C)
            return EX_NOTFOUND;
    }
    for (int k = 0; k < 2; k++) {
        uint32_t *nx = E->nx[k], *pv = E->pv[k];
        for (uint32_t s = 0; s < ns; s++) {
            uint32_t head = E->nmem + s, prev = head;
            for (uint32_t q = E->moff[s]; q < E->moff[s + 1]; q++) {
                nx[prev] = q;
                pv[q] = prev;
                prev = q;
            }
            nx[prev] = head;
            pv[head] = prev;
        }
    }
    for (uint32_t s = 0; s < ns; s++) {
        E->floor[s] = 0;
        E->total[s] = E->tot0[s];
        E->cut[s] = E->cut0[s];
        if (E->tot0[s] > E->C)
            return EX_NOTFOUND;
    }
    E->tr_n = 0;
    E->la_n = 0;
    E->ch_n = 0;
    E->work += n + E->nmem;
    int lr = la_reserve(E, n);
    if (lr != EX_FOUND)
        return lr;
    for (uint32_t i = 0; i < n; i++)
        E->la[i] = (ent){0, 0, i};
    E->la_n = n;
    for (uint32_t s = 0; s + 1 < ns; s++)
        if (E->cut[s] == 0)
            E->cuts_hit[E->ch_n++] = s + 1;
    int r = solve_pieces(E, 0, n, 0, ns, 0);
    E->ch_n = 0;
    E->la_n = 0;
    return r;
}

typedef struct decide_ctx {
    uint64_t budget;  /* nodes left in all */
} decide_ctx;

/* Decides capacity C: EX_FOUND (E->sol holds a packing within C),
 * EX_NOTFOUND (proven infeasible), EX_ABORT (budget or time), EX_NOMEM. */
static int decide(ex *E, decide_ctx *d, uint64_t C)
{
    E->C = C;
    uint64_t limit = 2 * (uint64_t)E->n + 64;
    for (;;) {
        for (int h = 0; h < N_PREORDERS; h++) {
            if (d->budget == 0)
                return EX_ABORT;
            E->heur = h;
            uint64_t lim = limit < d->budget ? limit : d->budget;
            E->nodes_left = lim;
            int r = search_all(E);
            d->budget -= lim - E->nodes_left;
            if (r != EX_ABORT)
                return r;
            if (E->timed_out || E->capped || E->work > E->work_limit)
                return EX_ABORT;
        }
        limit *= 2;
    }
}

static uint64_t arena_of(const mp__ofs_prob *p, const uint64_t *off)
{
    uint64_t a = 0;
    for (uint32_t i = 0; i < p->n; i++)
        if (off[i] + p->size[i] > a)
            a = off[i] + p->size[i];
    return a;
}

mp_status mp__ofs_exact(const mp__ofs_prob *p, const uint64_t *seed_off,
                       uint64_t seed_arena, const mp__ofs_exact_opts *opt,
                       uint64_t *off_out, mp__ofs_exact_res *res)
{
    mp_ctx *ctx = p->ctx;
    memset(res, 0, sizeof *res);
    res->arena = NONE;
    res->proven_lb = p->lb;
    res->status = MP_SOLVE_NONE;
    double t0 = mp__now_seconds();
    double limit = opt->time_limit > 0 ? opt->time_limit
                                       : MP__OFS_EXACT_DEFAULT_TIME;
    uint64_t cap = opt->capacity;
    if (!seed_off)
        seed_arena = NONE;
    if (seed_off && seed_arena != NONE) {
        memcpy(off_out, seed_off, (size_t)p->n * sizeof *off_out);
        res->arena = seed_arena;
    }
    if (p->n == 0) {
        res->arena = 0;
        res->status = MP_SOLVE_OPTIMAL;
        return MP_OK;
    }
    /* nothing to search: the seed is at the lower bound, or fits */
    if (seed_arena != NONE &&
        (seed_arena <= p->lb || (cap && seed_arena <= cap))) {
        res->status = seed_arena <= p->lb ? MP_SOLVE_OPTIMAL
                                          : MP_SOLVE_FEASIBLE;
        return MP_OK;
    }
    if (cap && cap < p->lb) {
        res->status = MP_SOLVE_INFEASIBLE;
        return MP_OK;
    }
    ex E;
    int skip = 0;
    mp_status st = ex_init(&E, p, opt->mem_limit, &skip);
    decide_ctx d = {opt->node_limit ? opt->node_limit
                                    : MP__OFS_EXACT_DEFAULT_NODES};
    if (st != MP_OK)
        goto out;
    if (skip) {
        res->skipped = 1;
        goto out;
    }
    E.deadline = t0 + limit;
    E.work_limit = opt->work_limit ? opt->work_limit : UINT64_MAX;
    E.next_clock = OFS_EX_CLOCK_WORK;
    if (cap) {
        int r = decide(&E, &d, cap);
        if (r == EX_NOMEM) {
            st = MP_ERR_NOMEM;
            goto out;
        }
        if (r == EX_FOUND) {
            memcpy(off_out, E.sol, (size_t)p->n * sizeof *off_out);
            res->arena = arena_of(p, off_out);
            res->status = res->arena <= p->lb ? MP_SOLVE_OPTIMAL
                                              : MP_SOLVE_FEASIBLE;
        } else if (r == EX_NOTFOUND) {
            res->proven_lb = cap + 1;
            res->status = MP_SOLVE_INFEASIBLE;
        } else {
            res->status = MP_SOLVE_TIMEOUT;
        }
    } else {
        uint64_t lo = p->lb, hi = res->arena; /* hi: best known (NONE) */
        int first = 1, aborted = 0;
        while (hi == NONE || lo < hi) {
            uint64_t C;
            if (first)
                C = lo;
            else if (hi == NONE)
                C = lo + (lo >> 3) + 1; /* no seed: grow geometrically */
            else
                C = lo + (hi - 1 - lo) / 2;
            first = 0;
            int r = decide(&E, &d, C);
            if (r == EX_NOMEM) {
                st = MP_ERR_NOMEM;
                goto out;
            }
            if (r == EX_FOUND) {
                memcpy(off_out, E.sol, (size_t)p->n * sizeof *off_out);
                hi = arena_of(p, off_out);
                res->arena = hi;
            } else if (r == EX_NOTFOUND) {
                lo = C + 1;
            } else {
                aborted = 1;
                break;
            }
        }
        res->proven_lb = lo;
        if (hi != NONE && lo >= hi)
            res->status = MP_SOLVE_OPTIMAL;
        else if (hi != NONE)
            res->status = MP_SOLVE_FEASIBLE;
        else
            res->status = aborted ? MP_SOLVE_TIMEOUT : MP_SOLVE_NONE;
    }
out:
    res->nodes = E.nodes;
    res->work = E.work;
    res->timed_out = E.timed_out;
    if (st == MP_ERR_NOMEM && mp_ctx_status(ctx) != MP_ERR_NOMEM)
        mp__err(ctx, st, "offsets: exact tier: out of memory");
    ex_free(&E);
    return st;
}

/* ---- the stage mp_offsets_solve runs ------------------------------------------ */

/* AUTO's exact stage without a capacity: a budget of work units and a
 * memory bound that grow linearly with the instance (a small constant
 * part for small instances, where the search is most useful), so the
 * stage costs time and memory in proportion to the input: the whole run
 * stays under 1 KiB a buffer above the program's own few MiB. With 32 MiB
 * instead of 2, two of the benchmark traces reach their optimum (a random
 * 1,000-buffer trace, 4.5% better; idealloc's resnet50, 0.27%) at 10-15
 * MiB; --method exact has no such bound. */
#define OFS_AUTO_EXACT_WORK0 200000000ull
#define OFS_AUTO_EXACT_WORK_PER_BUF 2000ull
#define OFS_AUTO_EXACT_MEM0 (2ull << 20)
#define OFS_AUTO_EXACT_MEM_PER_BUF 512ull
/* AUTO with a capacity escalates to the exact tier's own budgets (nodes,
 * the time limit), its state bounded by this much memory. */
#define OFS_CAP_EXACT_MEM0 (256ull << 20)
#define OFS_CAP_EXACT_MEM_PER_BUF 1024ull
/* Overlapping (ordered) pairs above which the search is not tried
 * (its adjacency lists take 4 bytes a pair). */
#define OFS_EXACT_MAX_PAIRS 40000000ull

mp_status mp__ofs_exact_stage(const mp__ofs_prob *p,
                             const mp_offsets_options *opt, double t0,
                             uint64_t *best_off, uint64_t *best_arena,
                             mp_offsets_result *res, int *ran)
{
    *ran = 0;
    if (res->proven_lb_bytes < p->lb)
        res->proven_lb_bytes = p->lb;
    int exact = opt->method == MP_OFFSETS_EXACT;
    uint64_t cap = opt->capacity;
    if (p->n == 0 || *best_arena <= p->lb || (cap && *best_arena <= cap))
        return MP_OK;
    if (!exact && opt->method != MP_OFFSETS_AUTO)
        return MP_OK;
    if (p->pairs > OFS_EXACT_MAX_PAIRS)
        return MP_OK; /* too large for the search: keep the heuristic */
    double limit = opt->time_limit > 0 ? opt->time_limit
                                       : MP__OFS_EXACT_DEFAULT_TIME;
    double left = t0 + limit - mp__now_seconds();
    if (left <= 0)
        return MP_OK;
    mp__ofs_exact_opts eo = {cap, left, 0, 0, 0};
    if (!exact && cap) {
        eo.mem_limit = OFS_CAP_EXACT_MEM0 +
                       OFS_CAP_EXACT_MEM_PER_BUF * (uint64_t)p->n;
    } else if (!exact) {
        eo.node_limit = UINT64_MAX;
        eo.work_limit = OFS_AUTO_EXACT_WORK0 +
                        OFS_AUTO_EXACT_WORK_PER_BUF * (uint64_t)p->n;
        eo.mem_limit = OFS_AUTO_EXACT_MEM0 +
                       OFS_AUTO_EXACT_MEM_PER_BUF * (uint64_t)p->n;
    }
    uint64_t *off = mp__alloc(p->ctx, (size_t)p->n * sizeof *off);
    if (!off)
        return MP_ERR_NOMEM;
    mp__ofs_exact_res er;
    mp_status st = mp__ofs_exact(p, best_off, *best_arena, &eo, off, &er);
    if (st == MP_OK && !er.skipped) {
        *ran = 1;
        res->nodes += er.nodes;
        if (er.arena < *best_arena) {
            memcpy(best_off, off, (size_t)p->n * sizeof *off);
            *best_arena = er.arena;
        }
        if (er.proven_lb > res->proven_lb_bytes)
            res->proven_lb_bytes = er.proven_lb;
    }
    mp__dealloc(p->ctx, off);
    return st;
}
