/* Offsets (dynamic storage allocation): the heuristic tier.
 *
 * Methods (see docs/algorithms and docs/results.md):
 *  - size-bestfit / size-firstfit: buffers by decreasing size, each in the
 *    best-fitting (smallest) or the lowest gap among the placed buffers
 *    that overlap it in time (TFLite's and XLA's greedy by size);
 *  - breadth: TFLite's greedy by breadth: time points by decreasing live
 *    bytes, the unplaced buffers live there largest first, best fit;
 *  - start-firstfit: by start time, lowest gap (an online allocator);
 *  - naive: no reuse, buffers end to end in input order;
 *  - auto: size, duration and area orders x (best fit, first fit), breadth
 *    and start, keeps the best, then improves it with a local search over
 *    the order (moves and swaps, a seeded PRNG, accept when not worse).
 *    Above OFS_MATRIX_MAX_N buffers: breadth first fit, then the "tiny
 *    first" orders (buffers below 1e-6 of the lower bound first, longest
 *    first; then by size, or by size class and lifetime), then the others
 *    while a placement budget lasts; the best is then lowered by the
 *    repair pass of offsets_large.c (ejection of the buffers in the way
 *    of those at the top).
 *
 * Determinism: every decision depends on the input and the seed only,
 * within the budgets: the improvement pass (simulated annealing over the
 * order) has an iteration budget derived from the instance size, the
 * repair pass and the exact stage work budgets. The wall-clock limit
 * (opt->time_limit, default 10 s) bounds the whole solve: every pass reads
 * the clock (docs/algorithms-offsets.md, "Time limit and cost"); a run it
 * stops depends on the machine's speed.
 */
#include "offsets_internal.h"
#include "offsets_exact.h"

#include <math.h>
#include <string.h>

#define OFS_DEFAULT_TIME_LIMIT MP_OFFSETS_DEFAULT_TIME_LIMIT
/* Larger instances use the tree engine and the repair pass instead of the
 * improvement pass. */
#define OFS_MATRIX_MAX_N 4096u
/* Work budget of the improvement pass, in placed-buffer visits. */
#define OFS_IMPROVE_WORK 100000000ull
/* Annealing: start temperature and the weight of one buffer at the top,
 * as fractions of the lower bound. */
#ifndef OFS_SA_T0
#define OFS_SA_T0 0.002
#endif
#define OFS_SA_TOPW 0.0005

static const char *const method_names[] = {
    "auto", "size-bestfit", "size-firstfit", "breadth", "start-firstfit",
    "naive", "exact"};
#define N_METHODS (sizeof method_names / sizeof method_names[0])

const char *mp_offsets_method_name(mp_offsets_method m)
{
    return (unsigned)m < N_METHODS ? method_names[m] : "unknown";
}

mp_status mp_offsets_method_parse(const char *name, mp_offsets_method *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < N_METHODS; i++)
        if (strcmp(name, method_names[i]) == 0) {
            *out = (mp_offsets_method)i;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}

void mp_offsets_options_init(mp_offsets_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->method = MP_OFFSETS_AUTO;
    o->alignment = 1;
    o->time_limit = 0; /* default */
    o->seed = 0;
}

mp_status mp_offsets_lower_bound(mp_ctx *ctx, const mp_buffer *bufs,
                                 size_t n, uint64_t alignment, uint64_t *lb)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    if (!lb)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "offsets: lb is NULL");
    mp__ofs_prob p;
    mp_status st = mp__ofs_prob_init(ctx, &p, bufs, n, alignment);
    if (st == MP_OK)
        *lb = p.lb;
    mp__ofs_prob_free(&p);
    return st;
}

/* ---- orders --------------------------------------------------------------- */

enum { ORD_SIZE, ORD_DURATION, ORD_AREA, ORD_START, ORD_BREADTH,
       ORD_TINY_SIZE, ORD_TINY_CLASS, N_ORD };

/* Large instances: buffers below this fraction of the lower bound are
 * "tiny"; the tiny orders place them first, longest first, at the bottom
 * (they cost at most their total size), since a tiny long-lived buffer
 * placed last finds no gap along its whole lifetime and lands on top. */
#define OFS_TINY_FRACTION 1e-6

typedef struct ord_ctx {
    const mp__ofs_prob *p;
    const double *area;
    const uint64_t *bkey;  /* breadth: live bytes of the first visit */
    const uint32_t *bpt;   /* breadth: the time point of the first visit */
} ord_ctx;

static uint64_t dur(const mp_buffer *b)
{
    return (uint64_t)b->end - (uint64_t)b->start;
}

#define CMP_DESC(x, y) \
    do { if ((x) != (y)) return (x) > (y) ? -1 : 1; } while (0)
#define CMP_ASC(x, y) \
    do { if ((x) != (y)) return (x) < (y) ? -1 : 1; } while (0)

static int cmp_tail(const ord_ctx *c, uint32_t a, uint32_t b)
{
    const mp_buffer *A = &c->p->bufs[a], *B = &c->p->bufs[b];
    CMP_DESC(c->p->size[a], c->p->size[b]);
    CMP_DESC(dur(A), dur(B));
    CMP_ASC(A->start, B->start);
    CMP_ASC(a, b);
    return 0;
}

static int cmp_size(const void *ctx, uint32_t a, uint32_t b)
{
    return cmp_tail(ctx, a, b);
}

static int cmp_duration(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    CMP_DESC(dur(&c->p->bufs[a]), dur(&c->p->bufs[b]));
    return cmp_tail(c, a, b);
}

static int cmp_area(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    CMP_DESC(c->area[a], c->area[b]);
    return cmp_tail(c, a, b);
}

static int cmp_start(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    CMP_ASC(c->p->bufs[a].start, c->p->bufs[b].start);
    return cmp_tail(c, a, b);
}

static int is_tiny(const mp__ofs_prob *p, uint32_t a)
{
    return (double)p->size[a] < OFS_TINY_FRACTION * (double)p->lb;
}

static int cmp_tiny_first(const ord_ctx *c, uint32_t a, uint32_t b)
{
    int ta = is_tiny(c->p, a), tb = is_tiny(c->p, b);
    if (ta != tb)
        return ta ? -1 : 1;
    if (ta) {
        CMP_DESC(dur(&c->p->bufs[a]), dur(&c->p->bufs[b]));
        CMP_ASC(a, b);
    }
    return 0;
}

/* tiny first; then by size, earlier start first */
static int cmp_tiny_size(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    int r = cmp_tiny_first(c, a, b);
    if (r)
        return r;
    CMP_DESC(c->p->size[a], c->p->size[b]);
    CMP_ASC(c->p->bufs[a].start, c->p->bufs[b].start);
    CMP_ASC(a, b);
    return 0;
}

/* size class (powers of 4), then longest first: sizes within a class are
 * interchangeable enough that lifetime decides */
static uint32_t size_class(uint64_t z)
{
    return (uint32_t)(63 - __builtin_clzll(z)) / 2;
}

static int cmp_tiny_class(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    int r = cmp_tiny_first(c, a, b);
    if (r)
        return r;
    CMP_DESC(size_class(c->p->size[a]), size_class(c->p->size[b]));
    CMP_DESC(dur(&c->p->bufs[a]), dur(&c->p->bufs[b]));
    return cmp_tail(c, a, b);
}

static int cmp_breadth(const void *ctx, uint32_t a, uint32_t b)
{
    const ord_ctx *c = ctx;
    CMP_DESC(c->bkey[a], c->bkey[b]);
    CMP_ASC(c->bpt[a], c->bpt[b]);
    return cmp_tail(c, a, b);
}

/* Breadth keys: for every buffer, the first time point that TFLite's
 * greedy by breadth visits among those it covers: the one of maximal live
 * bytes (the earliest among equal). Range-max over a segment tree. */
static mp_status breadth_keys(const mp__ofs_prob *p, uint64_t *bkey,
                              uint32_t *bpt)
{
    mp_ctx *ctx = p->ctx;
    uint32_t P = 1;
    while (P < p->nt)
        P *= 2;
    uint64_t *live = mp__calloc(ctx, 2 * (size_t)P, sizeof *live);
    uint32_t *arg = mp__calloc(ctx, 2 * (size_t)P, sizeof *arg);
    if (!live || !arg) {
        mp__dealloc(ctx, live);
        mp__dealloc(ctx, arg);
        return MP_ERR_NOMEM;
    }
    uint64_t *d = live + P; /* leaves: build deltas then prefix sums */
    for (uint32_t i = 0; i < p->n; i++) {
        d[p->l[i]] += p->size[i];
        if (p->r[i] < P)
            d[p->r[i]] -= p->size[i];
    }
    for (uint32_t t = 1; t < P; t++)
        d[t] += d[t - 1];
    for (uint32_t t = p->nt; t < P; t++)
        d[t] = 0;
    for (uint32_t t = 0; t < P; t++)
        arg[P + t] = t;
    for (uint32_t v = P - 1; v >= 1; v--) {
        uint32_t a = 2 * v, b = 2 * v + 1;
        int left = live[a] >= live[b];
        live[v] = left ? live[a] : live[b];
        arg[v] = left ? arg[a] : arg[b];
    }
    for (uint32_t i = 0; i < p->n; i++) {
        uint64_t bv = 0;
        uint32_t bt = UINT32_MAX;
        for (uint32_t a = p->l[i] + P, b = p->r[i] + P; a < b;
             a >>= 1, b >>= 1) {
            if (a & 1) {
                if (live[a] > bv || (live[a] == bv && arg[a] < bt)) {
                    bv = live[a];
                    bt = arg[a];
                }
                a++;
            }
            if (b & 1) {
                b--;
                if (live[b] > bv || (live[b] == bv && arg[b] < bt)) {
                    bv = live[b];
                    bt = arg[b];
                }
            }
        }
        bkey[i] = bv;
        bpt[i] = bt;
    }
    mp__dealloc(ctx, live);
    mp__dealloc(ctx, arg);
    return MP_OK;
}

static mp_status make_order(const mp__ofs_prob *p, int kind, uint32_t *order)
{
    mp_ctx *ctx = p->ctx;
    ord_ctx c = {p, NULL, NULL, NULL};
    double *area = NULL;
    uint64_t *bkey = NULL;
    uint32_t *bpt = NULL;
    mp_status st = MP_OK;
    for (uint32_t i = 0; i < p->n; i++)
        order[i] = i;
    mp__ofs_cmp_fn cmp = cmp_size;
    switch (kind) {
    case ORD_SIZE:
        cmp = cmp_size;
        break;
    case ORD_DURATION:
        cmp = cmp_duration;
        break;
    case ORD_START:
        cmp = cmp_start;
        break;
    case ORD_TINY_SIZE:
        cmp = cmp_tiny_size;
        break;
    case ORD_TINY_CLASS:
        cmp = cmp_tiny_class;
        break;
    case ORD_AREA:
        area = mp__alloc(ctx, (size_t)p->n * sizeof *area);
        if (!area)
            return MP_ERR_NOMEM;
        for (uint32_t i = 0; i < p->n; i++)
            area[i] = (double)p->size[i] * (double)dur(&p->bufs[i]);
        c.area = area;
        cmp = cmp_area;
        break;
    default:
        bkey = mp__alloc(ctx, (size_t)p->n * sizeof *bkey);
        bpt = mp__alloc(ctx, (size_t)p->n * sizeof *bpt);
        if (!bkey || !bpt) {
            st = MP_ERR_NOMEM;
            goto out;
        }
        st = breadth_keys(p, bkey, bpt);
        if (st != MP_OK)
            goto out;
        c.bkey = bkey;
        c.bpt = bpt;
        cmp = cmp_breadth;
        break;
    }
    st = mp__ofs_sort_idx(ctx, order, p->n, cmp, &c);
out:
    mp__dealloc(ctx, area);
    mp__dealloc(ctx, bkey);
    mp__dealloc(ctx, bpt);
    return st;
}

/* ---- candidates ---------------------------------------------------------- */

typedef struct cand {
    int ord, fit;
    const char *name;
} cand;

static const cand cands[] = {
    {ORD_SIZE, MP__OFS_BESTFIT, "size-bestfit"},
    {ORD_SIZE, MP__OFS_FIRSTFIT, "size-firstfit"},
    {ORD_DURATION, MP__OFS_BESTFIT, "duration-bestfit"},
    {ORD_DURATION, MP__OFS_FIRSTFIT, "duration-firstfit"},
    {ORD_AREA, MP__OFS_BESTFIT, "area-bestfit"},
    {ORD_AREA, MP__OFS_FIRSTFIT, "area-firstfit"},
    {ORD_BREADTH, MP__OFS_BESTFIT, "breadth"},
    {ORD_START, MP__OFS_FIRSTFIT, "start-firstfit"},
    {ORD_BREADTH, MP__OFS_FIRSTFIT, "breadth-firstfit"},
    /* large instances only (see large_seq) */
    {ORD_TINY_SIZE, MP__OFS_FIRSTFIT, "tiny-size-firstfit"},
    {ORD_TINY_CLASS, MP__OFS_FIRSTFIT, "tiny-class-firstfit"},
    {ORD_TINY_CLASS, MP__OFS_BESTFIT, "tiny-class-bestfit"},
};
/* Small instances (matrix engine) run the first nine. */
#define N_SMALL_CANDS 9u
/* Large instances (tree engine): the cheap and usually best first, as many
 * as the pass budget allows. */
static const int large_seq[] = {8, 9, 10, 11, 1, 0, 2, 3, 5, 4, 6, 7};
#define N_LARGE_SEQ (sizeof large_seq / sizeof large_seq[0])
#define OFS_LARGE_PLACEMENTS 150000u
#define OFS_LARGE_MIN_PASSES 3u
/* Work budget of the repair pass (offsets_large.c), in visited buffers. */
#define OFS_REPAIR_WORK 30000000ull

/* Names for the winner after improvement ("<candidate>+search"). */
static const char *const improved_names[] = {
    "auto:size-bestfit+search", "auto:size-firstfit+search",
    "auto:duration-bestfit+search", "auto:duration-firstfit+search",
    "auto:area-bestfit+search", "auto:area-firstfit+search",
    "auto:breadth+search", "auto:start-firstfit+search",
    "auto:breadth-firstfit+search", "auto:tiny-size-firstfit+search",
    "auto:tiny-class-firstfit+search", "auto:tiny-class-bestfit+search"};
static const char *const repaired_names[] = {
    "auto:size-bestfit+repair", "auto:size-firstfit+repair",
    "auto:duration-bestfit+repair", "auto:duration-firstfit+repair",
    "auto:area-bestfit+repair", "auto:area-firstfit+repair",
    "auto:breadth+repair", "auto:start-firstfit+repair",
    "auto:breadth-firstfit+repair", "auto:tiny-size-firstfit+repair",
    "auto:tiny-class-firstfit+repair", "auto:tiny-class-bestfit+repair"};
static const char *const auto_names[] = {
    "auto:size-bestfit", "auto:size-firstfit", "auto:duration-bestfit",
    "auto:duration-firstfit", "auto:area-bestfit", "auto:area-firstfit",
    "auto:breadth", "auto:start-firstfit", "auto:breadth-firstfit",
    "auto:tiny-size-firstfit", "auto:tiny-class-firstfit",
    "auto:tiny-class-bestfit"};

/* Solver state shared by the passes. */
typedef struct solver {
    mp__ofs_prob p;
    mp__ofs_tree *tree;
    mp__ofs_mat_ws ws;
    uint32_t *order;
    uint64_t *off;
    uint64_t *best_off;
    uint32_t *best_order;
    uint64_t best_arena;
    int best_cand;
    int best_fit;
    int cut;    /* the first placement was cut at the time limit */
} solver;

/* deadline: the tree engine stops there (*complete = 0; with `stack`,
 * the rest of the order is stacked on top, a valid placement). */
static mp_status place_order(solver *s, const uint32_t *order, int fit,
                             uint64_t *off, uint64_t *arena, double deadline,
                             int stack, int *complete)
{
    *complete = 1;
    const mp__ofs_prob *p = &s->p;
    if (p->mat) {
        for (uint32_t i = 0; i < p->n; i++)
            s->ws.pos[order[i]] = i;
        *arena = mp__ofs_mat_place(p, &s->ws, order, 0, fit);
        memcpy(off, s->ws.off, (size_t)p->n * sizeof *off);
        return MP_OK;
    }
    if (!s->tree) {
        mp_status st = mp__ofs_tree_create(p, &s->tree);
        if (st != MP_OK)
            return st;
    }
    return mp__ofs_tree_place(s->tree, order, fit, off, arena, deadline,
                              stack, complete);
}

/* The first candidate always yields a placement (stacked past the
 * deadline); a later one that the deadline cuts short is dropped. */
static mp_status run_cand(solver *s, int ci, double deadline)
{
    mp_status st = make_order(&s->p, cands[ci].ord, s->order);
    if (st != MP_OK)
        return st;
    uint64_t arena;
    int complete;
    st = place_order(s, s->order, cands[ci].fit, s->off, &arena, deadline,
                     s->best_cand < 0, &complete);
    if (st != MP_OK)
        return st;
    if (!complete && s->best_cand >= 0)
        return MP_OK;
    if (!complete)
        s->cut = 1;
    if (s->best_cand < 0 || arena < s->best_arena) {
        s->best_arena = arena;
        s->best_cand = ci;
        s->best_fit = cands[ci].fit;
        memcpy(s->best_off, s->off, (size_t)s->p.n * sizeof *s->off);
        memcpy(s->best_order, s->order, (size_t)s->p.n * sizeof *s->order);
    }
    mp__progress_set(s->p.ctx, s->best_arena, s->p.lb);
    return MP_OK;
}

/* ---- improvement: local search over the order ---------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rng_next(s) % n);
}

/* Number of buffers that reach the top of the arena (a plateau measure:
 * fewer is closer to lowering the arena). */
static uint32_t count_top(const mp__ofs_prob *p, const uint64_t *off,
                          uint64_t arena)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < p->n; i++)
        c += off[i] + p->size[i] == arena;
    return c;
}

/* Stops at `target` (the lower bound, or a capacity above it). */
static mp_status improve(solver *s, uint64_t seed, uint64_t target,
                         double deadline, int *improved)
{
    mp__ofs_prob *p = &s->p;
    mp_ctx *ctx = p->ctx;
    uint32_t n = p->n;
    *improved = 0;
    if (!p->mat || n < 3 || s->best_arena <= target)
        return MP_OK;
    uint64_t per_pass = (uint64_t)n * n / 3 + n;
    /* the clock every iteration once an iteration costs ~1e5 visits */
    uint64_t clock_mask = per_pass > 100000 ? 0 : 255;
    uint64_t iters = OFS_IMPROVE_WORK / per_pass;
    if (iters > 400 * (uint64_t)n)
        iters = 400 * (uint64_t)n;
    if (iters < 50)
        iters = 50;
    uint32_t *order = s->order;
    uint64_t *save_off = mp__alloc(ctx, (size_t)n * sizeof *save_off);
    uint64_t *save_top = mp__alloc(ctx, (size_t)n * sizeof *save_top);
    uint32_t *tops = mp__alloc(ctx, (size_t)n * sizeof *tops);
    uint32_t *save_sorted = mp__alloc(ctx, (size_t)n * sizeof *save_sorted);
    if (!save_off || !save_top || !tops || !save_sorted) {
        mp__dealloc(ctx, save_sorted);
        mp__dealloc(ctx, save_off);
        mp__dealloc(ctx, save_top);
        mp__dealloc(ctx, tops);
        return MP_ERR_NOMEM;
    }
    memcpy(order, s->best_order, (size_t)n * sizeof *order);
    int fit = s->best_fit;
    mp__ofs_mat_ws *w = &s->ws;
    for (uint32_t i = 0; i < n; i++)
        w->pos[order[i]] = i;
    uint64_t cur = mp__ofs_mat_place(p, w, order, 0, fit);
    uint32_t cur_top = count_top(p, w->off, cur);
    uint64_t rng = seed ^ 0x6A09E667F3BCC909ull;
    for (uint64_t it = 0; it < iters; it++) {
        if ((it & clock_mask) == clock_mask) {
            if (mp__now_seconds() > deadline)
                break;
            mp__progress_set(ctx, cur < s->best_arena ? cur : s->best_arena,
                             0);
        }
        uint32_t i, j, kind = rng_below(&rng, 3);
        if (kind == 0) {
            /* move a buffer that reaches the top earlier in the order */
            uint32_t nt = 0;
            for (uint32_t k = 0; k < n; k++)
                if (w->off[order[k]] + p->size[order[k]] == cur)
                    tops[nt++] = k;
            j = tops[rng_below(&rng, nt)];
            if (j == 0)
                continue;
            i = rng_below(&rng, j);
        } else {
            i = rng_below(&rng, n);
            j = rng_below(&rng, n);
            if (i == j)
                continue;
            if (i > j) {
                uint32_t t = i;
                i = j;
                j = t;
            }
        }
        /* save the suffix from i */
        for (uint32_t k = i; k < n; k++)
            save_off[k] = w->off[order[k]];
        memcpy(save_top + i, w->ptop + i, (size_t)(n - i) * sizeof *save_top);
        memcpy(save_sorted, w->sorted, (size_t)n * sizeof *save_sorted);
        uint32_t bj = order[j], bi = order[i];
        if (kind == 2) { /* swap */
            order[i] = bj;
            order[j] = bi;
            w->pos[bj] = i;
            w->pos[bi] = j;
        } else { /* move j to i */
            memmove(order + i + 1, order + i, (size_t)(j - i) * sizeof *order);
            order[i] = bj;
            for (uint32_t k = i; k <= j; k++)
                w->pos[order[k]] = k;
        }
        uint64_t a = mp__ofs_mat_place(p, w, order, i, fit);
        uint32_t at = count_top(p, w->off, a);
        /* simulated annealing on (arena, buffers at the top): the
         * temperature falls linearly to 0 over the budget */
        double temp = OFS_SA_T0 * (double)p->lb * (double)(iters - it) /
                      (double)iters;
        double delta = (double)a - (double)cur +
                       ((double)at - (double)cur_top) * OFS_SA_TOPW *
                           (double)p->lb;
        int accept = delta <= 0;
        if (!accept && temp > 0) {
            double u = (double)(rng_next(&rng) >> 11) * 0x1.0p-53;
            accept = u < exp(-delta / temp);
        }
        if (accept) {
            if (a < s->best_arena) {
                s->best_arena = a;
                memcpy(s->best_off, w->off, (size_t)n * sizeof *w->off);
                memcpy(s->best_order, order, (size_t)n * sizeof *order);
                *improved = 1;
                if (a <= target)
                    break;
            }
            cur = a;
            cur_top = at;
            continue;
        }
        /* undo */
        if (kind == 2) {
            order[i] = bi;
            order[j] = bj;
            w->pos[bi] = i;
            w->pos[bj] = j;
        } else {
            memmove(order + i, order + i + 1, (size_t)(j - i) * sizeof *order);
            order[j] = bj;
            for (uint32_t k = i; k <= j; k++)
                w->pos[order[k]] = k;
        }
        for (uint32_t k = i; k < n; k++)
            w->off[order[k]] = save_off[k];
        memcpy(w->ptop + i, save_top + i, (size_t)(n - i) * sizeof *save_top);
        memcpy(w->sorted, save_sorted, (size_t)n * sizeof *save_sorted);
        w->nsorted = n;
    }
    mp__dealloc(ctx, save_sorted);
    mp__dealloc(ctx, save_off);
    mp__dealloc(ctx, save_top);
    mp__dealloc(ctx, tops);
    return MP_OK;
}

/* ---- solve ----------------------------------------------------------------- */

static void solver_free(solver *s)
{
    mp_ctx *ctx = s->p.ctx;
    if (!ctx)
        return;
    mp__ofs_tree_destroy(s->tree);
    mp__ofs_mat_ws_free(ctx, &s->ws);
    mp__dealloc(ctx, s->order);
    mp__dealloc(ctx, s->off);
    mp__dealloc(ctx, s->best_off);
    mp__dealloc(ctx, s->best_order);
    mp__ofs_prob_free(&s->p);
}

/* AUTO: the greedy candidates (all of them on small instances, a budget of
 * placements on large ones) until one reaches the target, the exact tier
 * first when a capacity is missed, then local search and repair with the
 * time left; *solver_name says which won. */
static mp_status run_auto(solver *s, const mp_offsets_options *opt,
                          double t0, double deadline, uint64_t target,
                          mp_offsets_result *res, int *ran_exact,
                          const char **solver_name)
{
    mp__ofs_prob *p = &s->p;
    mp_status st = MP_OK;
    unsigned passes = N_SMALL_CANDS;
    if (!p->mat) {
        passes = OFS_LARGE_PLACEMENTS / p->n;
        if (passes < OFS_LARGE_MIN_PASSES)
            passes = OFS_LARGE_MIN_PASSES;
        if (passes > N_LARGE_SEQ)
            passes = N_LARGE_SEQ;
    }
    for (unsigned c = 0; c < passes; c++) {
        int ci = p->mat ? (int)c : large_seq[c];
        if (c > 0 && mp__now_seconds() > deadline)
            break;
        if ((st = run_cand(s, ci, deadline)) != MP_OK)
            return st;
        if (s->best_arena <= target)
            break;
    }
    *solver_name = auto_names[s->best_cand];
    /* AUTO with a capacity the greedy placements miss: the exact tier
     * first, with its own budget (it decides the capacity where the
     * local search only lowers the arena); the passes below use what
     * time is left */
    if (opt->method == MP_OFFSETS_AUTO && opt->capacity &&
        s->best_arena > target) {
        uint64_t heur = s->best_arena;
        mp__progress_phase(p->ctx, "offsets: exact search");
        st = mp__ofs_exact_stage(p, opt, t0, s->best_off, &s->best_arena,
                                res, ran_exact);
        if (st != MP_OK)
            return st;
        if (s->best_arena < heur)
            *solver_name = "auto:exact";
    }
    int improved = 0;
    /* the exact tier starts from the greedy packings */
    if (opt->method != MP_OFFSETS_EXACT) {
        mp__progress_phase(p->ctx, "offsets: local search");
        st = improve(s, opt->seed, target, deadline, &improved);
    }
    if (st != MP_OK)
        return st;
    int repaired = 0;
    if (!p->mat && s->best_arena > target &&
        mp__now_seconds() < deadline) {
        st = mp__ofs_repair(p, s->best_off, &s->best_arena, OFS_REPAIR_WORK,
                           deadline, &repaired);
        if (st != MP_OK)
            return st;
    }
    if (repaired)
        *solver_name = repaired_names[s->best_cand];
    else if (improved)
        *solver_name = improved_names[s->best_cand];
    return MP_OK;
}

static mp_status offsets_solve(mp_ctx *ctx, mp_buffer *bufs, size_t n,
                               const mp_offsets_options *opt,
                               mp_offsets_result *res)
{
    mp_offsets_options dflt;
    if (!opt) {
        mp_offsets_options_init(&dflt);
        opt = &dflt;
    }
    if (!res)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "offsets: result is NULL");
    if ((unsigned)opt->method >= N_METHODS)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "offsets: unknown method %d",
                      (int)opt->method);
    memset(res, 0, sizeof *res);
    double t0 = mp__now_seconds();
    double limit = opt->time_limit > 0 ? opt->time_limit
                                       : OFS_DEFAULT_TIME_LIMIT;
    solver s;
    memset(&s, 0, sizeof s);
    s.best_cand = -1;
    mp_status st = mp__ofs_prob_init(ctx, &s.p, bufs, n, opt->alignment);
    if (st != MP_OK)
        goto out;
    mp__ofs_prob *p = &s.p;
    const char *solver_name = mp_offsets_method_name(opt->method);
    uint64_t arena = 0;
    if (n == 0)
        goto done;
    if (opt->method == MP_OFFSETS_NAIVE) {
        for (uint32_t i = 0; i < p->n; i++) {
            bufs[i].offset = arena;
            arena += p->size[i];
        }
        goto done;
    }
    st = mp__ofs_prob_matrix(p, OFS_MATRIX_MAX_N);
    if (st != MP_OK)
        goto out;
    if (p->mat && (st = mp__ofs_mat_ws_init(p, &s.ws)) != MP_OK)
        goto out;
    s.order = mp__alloc(ctx, (size_t)p->n * sizeof *s.order);
    s.off = mp__alloc(ctx, (size_t)p->n * sizeof *s.off);
    s.best_off = mp__alloc(ctx, (size_t)p->n * sizeof *s.best_off);
    s.best_order = mp__alloc(ctx, (size_t)p->n * sizeof *s.best_order);
    if (!s.order || !s.off || !s.best_off || !s.best_order) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    int only = -1;
    switch (opt->method) {
    case MP_OFFSETS_SIZE_BESTFIT: only = 0; break;
    case MP_OFFSETS_SIZE_FIRSTFIT: only = 1; break;
    case MP_OFFSETS_BREADTH: only = 6; break;
    case MP_OFFSETS_START_FIRSTFIT: only = 7; break;
    default: break;
    }
    double deadline = t0 + limit;
    /* stop when this is reached: the lower bound, or a capacity above it */
    uint64_t target = opt->capacity > p->lb ? opt->capacity : p->lb;
    int ran_exact = 0;
    if (only >= 0) {
        if ((st = run_cand(&s, only, deadline)) != MP_OK)
            goto out;
    } else if ((st = run_auto(&s, opt, t0, deadline, target, res, &ran_exact,
                              &solver_name)) != MP_OK) {
        goto out;
    }
    if (only >= 0)
        solver_name = cands[only].name;
    if (s.cut && s.best_cand >= 0 && s.best_arena > p->lb)
        solver_name = "stacked-at-time-limit";
    if (!ran_exact) {
        /* exact tier (solvers/offsets/offsets_exact.c): EXACT always, AUTO when
         * the packing is above the lower bound or the capacity */
        uint64_t heur = s.best_arena;
        int ran = 0;
        mp__progress_phase(ctx, "offsets: exact search");
        st = mp__ofs_exact_stage(p, opt, t0, s.best_off, &s.best_arena, res,
                                &ran);
        if (st != MP_OK)
            goto out;
        if (opt->method == MP_OFFSETS_EXACT)
            solver_name = "exact";
        else if (ran && s.best_arena < heur)
            solver_name = "auto:exact";
    }
    arena = s.best_arena;
    for (uint32_t i = 0; i < p->n; i++)
        bufs[i].offset = s.best_off[i];
done:
    res->arena_bytes = arena;
    res->lower_bound_bytes = p->lb;
    if (res->proven_lb_bytes < p->lb)
        res->proven_lb_bytes = p->lb;
    res->status = arena <= res->proven_lb_bytes ? MP_SOLVE_OPTIMAL
                                                : MP_SOLVE_FEASIBLE;
    res->solver = solver_name;
    res->seconds = mp__now_seconds() - t0;
    if (opt->capacity && arena > opt->capacity) {
        int proven = opt->capacity < res->proven_lb_bytes;
        res->status = proven ? MP_SOLVE_INFEASIBLE : MP_SOLVE_TIMEOUT;
        st = mp__err(ctx, MP_ERR_INFEASIBLE,
                    "offsets: no placement within the capacity of %llu "
                    "bytes: %s (best arena %llu bytes, lower bound %llu)",
                    (unsigned long long)opt->capacity,
                    proven ? "proven impossible" : "none found",
                    (unsigned long long)arena,
                    (unsigned long long)res->proven_lb_bytes);
    }
out:
    if (st == MP_ERR_NOMEM && mp_ctx_status(ctx) != MP_ERR_NOMEM)
        mp__err(ctx, st, "offsets: out of memory");
    solver_free(&s);
    return st;
}

mp_status mp_offsets_solve(mp_ctx *ctx, mp_buffer *bufs, size_t n,
                           const mp_offsets_options *opt,
                           mp_offsets_result *res)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    mp__progress_mark pm;
    mp__progress_begin(ctx, &pm, "offsets");
    mp__progress_phase(ctx, "offsets: greedy placements");
    mp_status st = offsets_solve(ctx, bufs, n, opt, res);
    if (res && res->arena_bytes)
        mp__progress_set(ctx, res->arena_bytes, res->proven_lb_bytes);
    mp__progress_end(ctx, &pm);
    return st;
}
