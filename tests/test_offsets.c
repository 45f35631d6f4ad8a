/* Offsets solver (heuristic tier) and MiniMalloc CSV traces. */
#include "base.h"
#include "offsets_internal.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const mp_offsets_method all_methods[] = {
    MP_OFFSETS_AUTO, MP_OFFSETS_SIZE_BESTFIT, MP_OFFSETS_SIZE_FIRSTFIT,
    MP_OFFSETS_BREADTH, MP_OFFSETS_START_FIRSTFIT, MP_OFFSETS_NAIVE};
#define N_ALL (sizeof all_methods / sizeof all_methods[0])

/* Brute-force lower bound: max over every start time of live aligned
 * bytes (computed independently of the solver). */
static uint64_t brute_lb(const mp_buffer *b, size_t n, uint64_t align)
{
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t live = 0;
        for (size_t j = 0; j < n; j++)
            if (b[j].start <= b[i].start && b[i].start < b[j].end)
                live += (b[j].size + align - 1) / align * align;
        if (live > best)
            best = live;
    }
    return best;
}

static mp_buffer *random_instance(uint64_t *rng, size_t n, int64_t horizon,
                                  uint64_t max_size)
{
    mp_buffer *b = calloc(n, sizeof *b);
    for (size_t i = 0; i < n; i++) {
        int64_t s = (int64_t)(mp_test_rand(rng) % (uint64_t)horizon) - 7;
        int64_t d = 1 + (int64_t)(mp_test_rand(rng) % (uint64_t)(horizon / 3));
        b[i].start = s;
        b[i].end = s + d;
        b[i].size = 1 + mp_test_rand(rng) % max_size;
    }
    return b;
}

static void test_options_and_names(void)
{
    mp_offsets_options o;
    memset(&o, 0xff, sizeof o);
    mp_offsets_options_init(&o);
    CU_ASSERT_EQUAL(o.method, MP_OFFSETS_AUTO);
    CU_ASSERT_EQUAL(o.alignment, 1);
    CU_ASSERT(o.time_limit <= 0);
    CU_ASSERT_EQUAL(o.seed, 0);
    static const char *names[] = {"auto", "size-bestfit", "size-firstfit",
                                  "breadth", "start-firstfit", "naive"};
    for (unsigned i = 0; i < 6; i++) {
        mp_offsets_method m;
        CU_ASSERT_STRING_EQUAL(mp_offsets_method_name(all_methods[i]),
                               names[i]);
        CU_ASSERT_EQUAL(mp_offsets_method_parse(names[i], &m), MP_OK);
        CU_ASSERT_EQUAL(m, all_methods[i]);
    }
    mp_offsets_method m = MP_OFFSETS_NAIVE;
    CU_ASSERT_NOT_EQUAL(mp_offsets_method_parse("best", &m), MP_OK);
    CU_ASSERT_EQUAL(m, MP_OFFSETS_NAIVE);
}

static void test_lower_bound_hand(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t lb = 1;
    /* empty */
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, NULL, 0, 1, &lb), MP_OK);
    CU_ASSERT_EQUAL(lb, 0);
    /* half-open: [0,2) and [2,4) never live together */
    mp_buffer a[] = {{0, 2, 10, 0}, {2, 4, 20, 0}};
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, a, 2, 1, &lb), MP_OK);
    CU_ASSERT_EQUAL(lb, 20);
    /* nested and overlapping */
    mp_buffer b[] = {{0, 10, 5, 0}, {2, 4, 7, 0}, {3, 8, 11, 0},
                     {8, 9, 100, 0}};
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, b, 4, 1, &lb), MP_OK);
    CU_ASSERT_EQUAL(lb, 105); /* at t=8: 5 + 100 (the 11 ends at 8) */
    /* alignment rounds each size up: 5->8, 7->8, 11->16, 100->104 */
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, b, 4, 8, &lb), MP_OK);
    CU_ASSERT_EQUAL(lb, 112);
    /* negative times */
    mp_buffer c[] = {{-5, -1, 3, 0}, {-2, 1, 4, 0}, {-1, 0, 6, 0}};
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, c, 3, 1, &lb), MP_OK);
    CU_ASSERT_EQUAL(lb, 10);
    /* invalid alignment */
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, a, 2, 0, &lb),
                    MP_ERR_INVALID_ARG);
    mp_ctx_destroy(ctx);
}

static void test_lower_bound_random(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 12345;
    for (int rep = 0; rep < 30; rep++) {
        size_t n = 1 + mp_test_rand(&rng) % 60;
        uint64_t align = rep % 3 == 0 ? 1 : (uint64_t)1 << (rep % 7);
        mp_buffer *b = random_instance(&rng, n, 50, 1000);
        uint64_t lb = 0;
        CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, b, n, align, &lb), MP_OK);
        CU_ASSERT_EQUAL(lb, brute_lb(b, n, align));
        free(b);
    }
    mp_ctx_destroy(ctx);
}

static void test_invalid_buffers(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result r;
    uint64_t lb;
    mp_buffer empty[] = {{0, 4, 8, 0}, {3, 3, 8, 0}};
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, empty, 2, &o, &r),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "buffer 1"));
    CU_ASSERT_EQUAL(mp_offsets_lower_bound(ctx, empty, 2, 1, &lb),
                    MP_ERR_INVALID_ARG);
    mp_buffer reversed[] = {{5, 2, 8, 0}};
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, reversed, 1, &o, &r),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "buffer 0"));
    mp_buffer zero[] = {{0, 1, 1, 0}, {0, 1, 2, 0}, {0, 2, 0, 0}};
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, zero, 3, &o, &r),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "buffer 2"));
    mp_buffer ok[] = {{0, 1, 1, 0}};
    o.alignment = 0;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, ok, 1, &o, &r), MP_ERR_INVALID_ARG);
    mp_offsets_options_init(&o);
    o.method = (mp_offsets_method)99;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, ok, 1, &o, &r), MP_ERR_INVALID_ARG);
    mp_offsets_options_init(&o);
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, NULL, 1, &o, &r),
                    MP_ERR_INVALID_ARG);
    /* sizes whose sum does not fit in 64 bits */
    mp_buffer huge[] = {{0, 1, UINT64_MAX / 2 + 1, 0},
                        {0, 1, UINT64_MAX / 2 + 1, 0}};
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, huge, 2, &o, &r), MP_ERR_OVERFLOW);
    /* a size that overflows when aligned */
    mp_buffer big[] = {{0, 1, UINT64_MAX - 1, 0}};
    o.alignment = 4096;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, big, 1, &o, &r), MP_ERR_OVERFLOW);
    mp_ctx_destroy(ctx);
}

/* Solves with every method on random instances; the verifier must accept
 * every result; arena >= LB; naive = sum of sizes; OPTIMAL iff arena==LB. */
static void check_methods(size_t n, int64_t horizon, uint64_t max_size,
                          uint64_t align, uint64_t seed)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = seed;
    mp_buffer *b = random_instance(&rng, n, horizon, max_size);
    uint64_t lb = brute_lb(b, n, align), best_plain = UINT64_MAX;
    uint64_t auto_arena = 0;
    for (size_t m = 0; m < N_ALL; m++) {
        mp_offsets_options o;
        mp_offsets_options_init(&o);
        o.method = all_methods[m];
        o.alignment = align;
        o.seed = seed;
        mp_offsets_result r;
        for (size_t i = 0; i < n; i++)
            b[i].offset = 12345;
        CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
        CU_ASSERT_EQUAL(r.lower_bound_bytes, lb);
        CU_ASSERT(r.arena_bytes >= lb);
        CU_ASSERT_PTR_NOT_NULL(r.solver);
        CU_ASSERT_EQUAL(r.status, r.arena_bytes == lb ? MP_SOLVE_OPTIMAL
                                                      : MP_SOLVE_FEASIBLE);
        mp_status vs = mp_offsets_verify(ctx, b, n, align, r.arena_bytes);
        CU_ASSERT_EQUAL(vs, MP_OK);
        if (vs != MP_OK)
            fprintf(stderr, "\n%s: %s\n", mp_offsets_method_name(o.method),
                    mp_ctx_message(ctx));
        /* the arena is tight: some buffer ends exactly there */
        uint64_t top = 0;
        for (size_t i = 0; i < n; i++) {
            CU_ASSERT_EQUAL(b[i].offset % align, 0);
            uint64_t e = b[i].offset +
                         (b[i].size + align - 1) / align * align;
            if (e > top)
                top = e;
        }
        CU_ASSERT_EQUAL(top, r.arena_bytes);
        if (o.method == MP_OFFSETS_NAIVE) {
            uint64_t sum = 0;
            for (size_t i = 0; i < n; i++)
                sum += (b[i].size + align - 1) / align * align;
            CU_ASSERT_EQUAL(r.arena_bytes, sum);
        } else if (o.method == MP_OFFSETS_AUTO) {
            auto_arena = r.arena_bytes;
        } else if (r.arena_bytes < best_plain) {
            best_plain = r.arena_bytes;
        }
    }
    /* AUTO runs every plain heuristic: never worse than the best of them */
    CU_ASSERT(auto_arena <= best_plain);
    free(b);
    mp_ctx_destroy(ctx);
}

static void test_methods_random_small(void)
{
    for (uint64_t s = 1; s <= 12; s++)
        check_methods(1 + s * 7, 40, 500, 1, s);
}

static void test_methods_random_aligned(void)
{
    check_methods(80, 60, 5000, 64, 77);
    check_methods(50, 30, 100, 256, 78);
    check_methods(120, 200, 1 << 20, 3, 79);
}

static void test_methods_random_large(void)
{
    /* above the matrix engine's limit: the segment-tree engine */
    check_methods(4200, 3000, 100000, 16, 4242);
}

static void test_single_and_disjoint(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result r;
    /* buffers that never overlap all go to offset 0 (except naive) */
    mp_buffer b[] = {{0, 1, 10, 9}, {1, 2, 30, 9}, {2, 5, 20, 9}};
    for (size_t m = 0; m + 1 < N_ALL; m++) {
        o.method = all_methods[m];
        CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, 3, &o, &r), MP_OK);
        CU_ASSERT_EQUAL(r.arena_bytes, 30);
        CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
        for (int i = 0; i < 3; i++)
            CU_ASSERT_EQUAL(b[i].offset, 0);
    }
    /* empty problem */
    o.method = MP_OFFSETS_AUTO;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, NULL, 0, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.arena_bytes, 0);
    CU_ASSERT_EQUAL(r.status, MP_SOLVE_OPTIMAL);
    mp_ctx_destroy(ctx);
}

/* Best fit takes the smallest gap that holds the buffer, first fit the
 * lowest: a hand-made case where they differ. */
static void test_bestfit_vs_firstfit(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* placed by size: A(100) [0,10), B(50) [0,10), C(40) [0,10) would stack;
     * use offsets built by the engine: big long-lived 100, then gaps. */
    mp_buffer b[] = {
        {0, 10, 100, 0}, /* 0: offset 0 */
        {0, 4, 60, 0},   /* 1: offset 100 (on top of 0) */
        {6, 10, 50, 0},  /* 2: lowest gap: 100 (free after t=4) */
        {0, 10, 30, 0},  /* 3: on top: 160 */
        {5, 6, 20, 0},   /* 4: gaps at t=5: [100,160) (60) for FF and BF */
    };
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result r;
    o.method = MP_OFFSETS_SIZE_FIRSTFIT;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, 5, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(b[0].offset, 0);
    CU_ASSERT_EQUAL(b[1].offset, 100);
    CU_ASSERT_EQUAL(b[2].offset, 100);
    CU_ASSERT_EQUAL(b[3].offset, 160);
    CU_ASSERT_EQUAL(b[4].offset, 100);
    CU_ASSERT_EQUAL(r.arena_bytes, 190);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, 5, 1, r.arena_bytes), MP_OK);
    /* gaps of 30 (low) and 10 (high) at time 1 for a 10-byte buffer */
    mp_buffer c[] = {
        {0, 10, 100, 0}, /* 0 */
        {0, 10, 70, 0},  /* 1: offset 100 */
        {0, 10, 40, 0},  /* 2: offset 170 */
        {0, 10, 35, 0},  /* 3: 210 */
        {0, 10, 20, 0},  /* 4: 245 */
        {2, 3, 10, 0},   /* 5 */
    };
    /* make gaps: shorten 1 and 3 so they leave room at t=2 */
    c[1].end = 2; /* [100,170) free at t=2: gap 70 */
    c[3].end = 2; /* [210,245) free at t=2: gap 35 */
    o.method = MP_OFFSETS_SIZE_BESTFIT;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, c, 6, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(c[5].offset, 210);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, c, 6, 1, r.arena_bytes), MP_OK);
    o.method = MP_OFFSETS_SIZE_FIRSTFIT;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, c, 6, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(c[5].offset, 100);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, c, 6, 1, r.arena_bytes), MP_OK);
    mp_ctx_destroy(ctx);
}

static void test_determinism(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 99;
    size_t n = 150;
    mp_buffer *a = random_instance(&rng, n, 80, 4096);
    mp_buffer *b = malloc(n * sizeof *b);
    memcpy(b, a, n * sizeof *b);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    o.seed = 7;
    /* the iteration budget decides; the wall-clock safety net must not
     * cut one run short on a loaded (or sanitized) machine */
    o.time_limit = 3600;
    mp_offsets_result ra, rb;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, a, n, &o, &ra), MP_OK);
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &rb), MP_OK);
    CU_ASSERT_EQUAL(ra.arena_bytes, rb.arena_bytes);
    CU_ASSERT_STRING_EQUAL(ra.solver, rb.solver);
    int same = 1;
    for (size_t i = 0; i < n; i++)
        same &= a[i].offset == b[i].offset;
    CU_ASSERT(same);
    free(a);
    free(b);
    mp_ctx_destroy(ctx);
}

/* The improvement pass must beat plain greedy on a case built so that
 * greedy by size is not optimal. */
static void test_auto_improves(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    char *path = NULL;
    const char *dirs[] = {MP_SOURCE_DIR "/../shared/bench/minimalloc/A.csv",
                          "../shared/bench/minimalloc/A.csv"};
    for (int i = 0; i < 2 && !path; i++)
        if (access(dirs[i], R_OK) == 0)
            path = (char *)dirs[i];
    if (!path) {
        fprintf(stderr, " (MiniMalloc A.csv not found: skipped) ");
        mp_ctx_destroy(ctx);
        return;
    }
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(mp_trace_load_csv(ctx, path, &b, NULL, &n, NULL),
                          MP_OK);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result plain, best;
    o.method = MP_OFFSETS_SIZE_FIRSTFIT;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &plain), MP_OK);
    o.method = MP_OFFSETS_SIZE_BESTFIT;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &best), MP_OK);
    uint64_t greedy = plain.arena_bytes < best.arena_bytes ? plain.arena_bytes
                                                           : best.arena_bytes;
    o.method = MP_OFFSETS_AUTO;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &best), MP_OK);
    CU_ASSERT(best.arena_bytes < greedy);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, best.arena_bytes), MP_OK);
    mp_free(ctx, b);
    mp_ctx_destroy(ctx);
}

/* ---- time limits and the capacity -------------------------------------- */

/* Log-uniform draw in [1, max]. */
static uint64_t log_uniform(uint64_t *rng, uint64_t max)
{
    double u = (double)(mp_test_rand(rng) >> 11) * 0x1.0p-53;
    double v = exp(u * log((double)max + 1.0));
    uint64_t r = (uint64_t)v;
    return r < 1 ? 1 : r > max ? max : r;
}

/* A dense random trace: starts uniform on [0, n), durations and sizes
 * log-uniform (the first greedy pass alone takes seconds at 200k). */
static mp_buffer *dense_trace(uint64_t *rng, size_t n)
{
    mp_buffer *b = calloc(n, sizeof *b);
    for (size_t i = 0; i < n; i++) {
        b[i].start = (int64_t)(mp_test_rand(rng) % n);
        b[i].end = b[i].start + (int64_t)log_uniform(rng, n);
        b[i].size = log_uniform(rng, 1u << 20);
    }
    return b;
}

/* The time limit bounds AUTO, a single greedy method and the exact tier
 * on an instance that takes far longer unbounded; the result is still a
 * valid placement. The bound allows for setup (sorting) on a slow or
 * instrumented build. */
static void test_time_limit(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 77;
    size_t n = 200000;
    mp_buffer *b = dense_trace(&rng, n);
    const mp_offsets_method ms[] = {MP_OFFSETS_AUTO, MP_OFFSETS_SIZE_FIRSTFIT,
                                    MP_OFFSETS_EXACT};
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        mp_offsets_options o;
        mp_offsets_options_init(&o);
        o.method = ms[k];
        o.time_limit = 0.3;
        mp_offsets_result r;
        double t = mp__now_seconds();
        CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
        t = mp__now_seconds() - t;
        CU_ASSERT(t < 2.0);
        CU_ASSERT(r.seconds < 2.0);
        CU_ASSERT(r.arena_bytes >= r.lower_bound_bytes);
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, r.arena_bytes), MP_OK);
    }
    free(b);
    mp_ctx_destroy(ctx);
}

/* With a capacity, AUTO escalates to the exact tier: MiniMalloc's B fits
 * its capacity (the greedy placements and the local search end ~10 %
 * above it). */
static void test_capacity_escalates(void)
{
    const char *path = MP_SOURCE_DIR "/../shared/bench/minimalloc/B.csv";
    if (access(path, R_OK) != 0) {
        fprintf(stderr, " (MiniMalloc B.csv not found: skipped) ");
        return;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(mp_trace_load_csv(ctx, path, &b, NULL, &n, NULL),
                          MP_OK);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    o.capacity = 1048576;
    mp_offsets_result r;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
    CU_ASSERT(r.arena_bytes <= o.capacity);
    CU_ASSERT_STRING_EQUAL(r.solver, "auto:exact");
    CU_ASSERT(r.nodes > 0);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, o.capacity), MP_OK);
    mp_free(ctx, b);
    mp_ctx_destroy(ctx);
}

/* ---- large instances: repair pass and tiny-first orders ------------------- */

/* A tiny long-lived buffer on top that fits only after the buffer in its
 * way moves down: the repair pass must reach the lower bound. */
static void test_repair_hand(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* A [0,5) 10 at 0; B [5,10) 10 at 1; D [0,10) 10 at 11; T [0,10) 1 at
     * 21: arena 22, lower bound 21 (A + D + T) */
    mp_buffer b[] = {{0, 5, 10, 0}, {5, 10, 10, 1}, {0, 10, 10, 11},
                     {0, 10, 1, 21}};
    CU_ASSERT_EQUAL_FATAL(mp_offsets_verify(ctx, b, 4, 1, 22), MP_OK);
    mp__ofs_prob p;
    CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, 4, 1), MP_OK);
    CU_ASSERT_EQUAL(p.lb, 21);
    uint64_t off[4], arena = 22;
    for (int i = 0; i < 4; i++)
        off[i] = b[i].offset;
    int improved = 0;
    CU_ASSERT_EQUAL(mp__ofs_repair(&p, off, &arena, 1000000, 1e30, &improved),
                    MP_OK);
    CU_ASSERT(improved);
    CU_ASSERT_EQUAL(arena, 21);
    for (int i = 0; i < 4; i++)
        b[i].offset = off[i];
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, 4, 1, 21), MP_OK);
    mp__ofs_prob_free(&p);
    mp_ctx_destroy(ctx);
}

/* Random instances with a share of tiny long-lived buffers. */
static mp_buffer *random_tiny_instance(uint64_t *rng, size_t n,
                                       int64_t horizon)
{
    mp_buffer *b = random_instance(rng, n, horizon, 1 << 20);
    for (size_t i = 0; i < n; i += 37) {
        b[i].size = 1 + mp_test_rand(rng) % 8;
        b[i].end = b[i].start + horizon / 2 +
                   (int64_t)(mp_test_rand(rng) % (uint64_t)(horizon / 2));
    }
    return b;
}

/* From a poor start (start-time order, first fit) the repair pass keeps a
 * valid placement, never raises the arena and reports it exactly. */
static void test_repair_random(void)
{
    int nimproved = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        uint64_t rng = seed * 1000003;
        size_t n = 200 + 200 * (size_t)seed;
        mp_buffer *b = random_tiny_instance(&rng, n, 50 + 40 * (int64_t)seed);
        mp_offsets_options o;
        mp_offsets_options_init(&o);
        o.method = MP_OFFSETS_START_FIRSTFIT;
        mp_offsets_result r;
        CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
        mp__ofs_prob p;
        CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, n, 1), MP_OK);
        uint64_t *off = malloc(n * sizeof *off), arena = r.arena_bytes;
        for (size_t i = 0; i < n; i++)
            off[i] = b[i].offset;
        int improved = 0;
        CU_ASSERT_EQUAL(mp__ofs_repair(&p, off, &arena, 2000000, 1e30,
                                      &improved),
                        MP_OK);
        CU_ASSERT(arena <= r.arena_bytes);
        CU_ASSERT(arena >= p.lb);
        CU_ASSERT_EQUAL(improved, arena < r.arena_bytes);
        nimproved += improved;
        uint64_t top = 0;
        for (size_t i = 0; i < n; i++) {
            b[i].offset = off[i];
            if (off[i] + b[i].size > top)
                top = off[i] + b[i].size;
        }
        CU_ASSERT_EQUAL(top, arena);
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, arena), MP_OK);
        mp__ofs_prob_free(&p);
        free(off);
        free(b);
        mp_ctx_destroy(ctx);
    }
    /* the start is poor: the pass must find something on most of them */
    CU_ASSERT(nimproved >= 3);
}

/* Above the matrix engine's limit with tiny long-lived buffers: AUTO
 * (tiny-first orders, repair) is valid, not worse than any plain method,
 * and deterministic. */
static void test_large_tiny(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = 4243;
    size_t n = 4200;
    mp_buffer *b = random_tiny_instance(&rng, n, 8000);
    mp_buffer *c = malloc(n * sizeof *c);
    uint64_t lb = brute_lb(b, n, 1), best_plain = UINT64_MAX;
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result r, r2;
    for (size_t m = 1; m < N_ALL; m++) {
        if (all_methods[m] == MP_OFFSETS_NAIVE)
            continue;
        o.method = all_methods[m];
        CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
        if (r.arena_bytes < best_plain)
            best_plain = r.arena_bytes;
    }
    o.method = MP_OFFSETS_AUTO;
    CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.lower_bound_bytes, lb);
    CU_ASSERT(r.arena_bytes >= lb);
    CU_ASSERT(r.arena_bytes <= best_plain);
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, r.arena_bytes), MP_OK);
    memcpy(c, b, n * sizeof *c);
    for (size_t i = 0; i < n; i++)
        c[i].offset = 0;
    CU_ASSERT_EQUAL_FATAL(mp_offsets_solve(ctx, c, n, &o, &r2), MP_OK);
    CU_ASSERT_EQUAL(r.arena_bytes, r2.arena_bytes);
    CU_ASSERT_STRING_EQUAL(r.solver, r2.solver);
    int same = 1;
    for (size_t i = 0; i < n; i++)
        same &= b[i].offset == c[i].offset;
    CU_ASSERT(same);
    free(b);
    free(c);
    mp_ctx_destroy(ctx);
}

/* The tree engine holds its runs in 32-bit words (sizes with a common
 * power of two, small totals) or 64-bit words (odd sizes, large totals):
 * both place every buffer of an order where the matrix engine does (first
 * fit: the lowest offset that fits is unique). */
static void tree_vs_matrix(uint64_t seed, uint64_t unit, uint64_t max_units,
                           int odd)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t rng = seed;
    size_t n = 400;
    mp_buffer *b = random_instance(&rng, n, 300, max_units);
    for (size_t i = 0; i < n; i++)
        b[i].size = b[i].size * unit + (odd ? 1 : 0);
    mp__ofs_prob p;
    CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_init(ctx, &p, b, n, 1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp__ofs_prob_matrix(&p, (uint32_t)n), MP_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p.mat);
    mp__ofs_mat_ws ws;
    CU_ASSERT_EQUAL_FATAL(mp__ofs_mat_ws_init(&p, &ws), MP_OK);
    mp__ofs_tree *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp__ofs_tree_create(&p, &t), MP_OK);
    uint32_t *order = malloc(n * sizeof *order);
    uint64_t *off = malloc(n * sizeof *off);
    for (int round = 0; round < 3; round++) {
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        for (uint32_t i = (uint32_t)n - 1; i > 0; i--) { /* shuffle */
            uint32_t j = (uint32_t)(mp_test_rand(&rng) % (i + 1));
            uint32_t x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (uint32_t i = 0; i < n; i++)
            ws.pos[order[i]] = i;
        uint64_t am = mp__ofs_mat_place(&p, &ws, order, 0, MP__OFS_FIRSTFIT);
        uint64_t at = 0;
        int complete = 0;
        CU_ASSERT_EQUAL(mp__ofs_tree_place(t, order, MP__OFS_FIRSTFIT, off,
                                          &at, 1e300, 0, &complete), MP_OK);
        CU_ASSERT(complete);
        CU_ASSERT_EQUAL(am, at);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++)
            differ += off[i] != ws.off[i];
        CU_ASSERT_EQUAL(differ, 0);
        for (size_t i = 0; i < n; i++)
            b[i].offset = off[i];
        CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b, n, 1, at), MP_OK);
    }
    free(order);
    free(off);
    mp__ofs_tree_destroy(t);
    mp__ofs_mat_ws_free(ctx, &ws);
    mp__ofs_prob_free(&p);
    free(b);
    mp_ctx_destroy(ctx);
}

static void test_tree_word_widths(void)
{
    tree_vs_matrix(71, 256, 4096, 0);              /* 32-bit words */
    tree_vs_matrix(72, 1, 1u << 20, 1);            /* 32-bit, odd sizes */
    tree_vs_matrix(73, (uint64_t)1 << 24, 4096, 1); /* 64-bit: odd, 2^41 */
    tree_vs_matrix(74, 3, (uint64_t)1 << 40, 0);   /* 64-bit: large sizes */
}

/* ---- CSV ------------------------------------------------------------------ */

static void test_csv_round_trip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    const char *p = mp_test_write_temp(
        ".csv", "id,lower,upper,size\n"
                "7,0,10,100\r\n"
                " 8 , -5 , 3 , 20 \n"
                "\n"
                "9,2,4,1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    mp_buffer *b = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int has = -1;
    CU_ASSERT_EQUAL_FATAL(mp_trace_load_csv(ctx, path, &b, &ids, &n, &has),
                          MP_OK);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_EQUAL(has, 0);
    CU_ASSERT_EQUAL(ids[1], 8);
    CU_ASSERT_EQUAL(b[1].start, -5);
    CU_ASSERT_EQUAL(b[1].end, 3);
    CU_ASSERT_EQUAL(b[1].size, 20);
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    mp_offsets_result r;
    CU_ASSERT_EQUAL(mp_offsets_solve(ctx, b, n, &o, &r), MP_OK);
    char out[300];
    snprintf(out, sizeof out, "%s.out.csv", path);
    CU_ASSERT_EQUAL(mp_trace_save_csv(ctx, out, b, ids, n), MP_OK);
    mp_buffer *b2 = NULL;
    int64_t *ids2 = NULL;
    size_t n2 = 0;
    CU_ASSERT_EQUAL_FATAL(mp_trace_load_csv(ctx, out, &b2, &ids2, &n2, &has),
                          MP_OK);
    CU_ASSERT_EQUAL(has, 1);
    CU_ASSERT_EQUAL_FATAL(n2, n);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(ids2[i], ids[i]);
        CU_ASSERT_EQUAL(b2[i].start, b[i].start);
        CU_ASSERT_EQUAL(b2[i].end, b[i].end);
        CU_ASSERT_EQUAL(b2[i].size, b[i].size);
        CU_ASSERT_EQUAL(b2[i].offset, b[i].offset);
    }
    CU_ASSERT_EQUAL(mp_offsets_verify(ctx, b2, n2, 1, r.arena_bytes), MP_OK);
    /* without ids: row index; ids_out and has_offsets may be NULL */
    CU_ASSERT_EQUAL(mp_trace_save_csv(ctx, out, b, NULL, n), MP_OK);
    mp_free(ctx, b2);
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, out, &b2, NULL, &n2, NULL), MP_OK);
    CU_ASSERT_EQUAL(n2, 3);
    FILE *f = fopen(out, "r");
    char line[128] = "";
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
    CU_ASSERT_STRING_EQUAL(line, "id,lower,upper,size,offset\n");
    CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
    CU_ASSERT_EQUAL(strncmp(line, "0,0,10,100,", 11), 0);
    fclose(f);
    unlink(out);
    unlink(path);
    mp_free(ctx, b);
    mp_free(ctx, b2);
    mp_free(ctx, ids);
    mp_free(ctx, ids2);
    mp_ctx_destroy(ctx);
}

static void expect_parse_error(const char *text, int line, const char *what)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    const char *p = mp_test_write_temp(".csv", text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char path[256], want[300];
    snprintf(path, sizeof path, "%s", p);
    mp_buffer *b = (mp_buffer *)&b; /* must be reset to NULL */
    int64_t *ids = NULL;
    size_t n = 99;
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, path, &b, &ids, &n, NULL),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_PTR_NULL(ids);
    CU_ASSERT_EQUAL(n, 0);
    snprintf(want, sizeof want, "%s:%d:", path, line);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
    if (what)
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, what));
    if (!strstr(msg, want) || (what && !strstr(msg, what)))
        fprintf(stderr, "\nmessage: %s (want %s %s)\n", msg, want,
                what ? what : "");
    unlink(path);
    mp_ctx_destroy(ctx);
}

static void test_csv_malformed(void)
{
    expect_parse_error("", 1, "header");
    expect_parse_error("id,lower,upper\n0,1,2\n", 1, "header");
    expect_parse_error("id,low,upper,size\n", 1, "'lower'");
    expect_parse_error("id,lower,upper,size\n0,0,4,8\n1,x,4,8\n", 3,
                       "'lower'");
    expect_parse_error("id,lower,upper,size\n0,0,4,-8\n", 2, "'size'");
    expect_parse_error("id,lower,upper,size\n0,0,4\n", 2, "columns");
    expect_parse_error("id,lower,upper,size\n0,0,4,8,9\n", 2, "columns");
    expect_parse_error("id,lower,upper,size\n0,4,4,8\n", 2, "'upper'");
    expect_parse_error("id,lower,upper,size\n0,0,4,0\n", 2, "'size'");
    expect_parse_error("id,lower,upper,size\n0,0,99999999999999999999,1\n",
                       2, "'upper'");
    expect_parse_error("id,lower,upper,size,offset\n0,0,4,8,\n", 2,
                       "'offset'");
    expect_parse_error("id,lower,upper,size\n\n\n0,0,4,8\n1,0,,8\n", 5,
                       "'upper'");
}

static void test_csv_io_errors(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, "/nonexistent/x.csv", &b, NULL, &n,
                                      NULL),
                    MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "/nonexistent/x.csv"));
    mp_buffer one[] = {{0, 1, 1, 0}};
    CU_ASSERT_EQUAL(mp_trace_save_csv(ctx, "/nonexistent/y.csv", one, NULL, 1),
                    MP_ERR_IO);
    mp_ctx_destroy(ctx);
}

void mp_register_offsets(void)
{
    static CU_TestInfo tests[] = {
        {"options_and_names", test_options_and_names},
        {"lower_bound_hand", test_lower_bound_hand},
        {"lower_bound_random", test_lower_bound_random},
        {"invalid_buffers", test_invalid_buffers},
        {"single_and_disjoint", test_single_and_disjoint},
        {"bestfit_vs_firstfit", test_bestfit_vs_firstfit},
        {"methods_random_small", test_methods_random_small},
        {"methods_random_aligned", test_methods_random_aligned},
        {"methods_random_large", test_methods_random_large},
        {"determinism", test_determinism},
        {"auto_improves", test_auto_improves},
        {"repair_hand", test_repair_hand},
        {"repair_random", test_repair_random},
        {"large_tiny", test_large_tiny},
        {"tree_word_widths", test_tree_word_widths},
        {"time_limit", test_time_limit},
        {"capacity_escalates", test_capacity_escalates},
        CU_TEST_INFO_NULL};
    static CU_TestInfo csv[] = {
        {"round_trip", test_csv_round_trip},
        {"malformed", test_csv_malformed},
        {"io_errors", test_csv_io_errors},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("offsets", tests);
    mp_test_add_suite("trace_csv", csv);
}
