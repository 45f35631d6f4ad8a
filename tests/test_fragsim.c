/* The caching-allocator simulator (analysis/fragsim.c): one test per rule
 * of PyTorch's CUDA caching allocator that it models. */
#include "memplan/memplan.h"
#include "support.h"

#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

static mp_cache_sim_result run(const mp_buffer *b, size_t n)
{
    mp_cache_sim_result r;
    mp_ctx *ctx = mp_ctx_create(NULL);
    CU_ASSERT_EQUAL(mp_cache_sim(ctx, b, n, &r), MP_OK);
    mp_ctx_destroy(ctx);
    return r;
}

/* 1 byte is rounded to 512 and takes a 2 MiB small segment; 1000 -> 1024 */
static void test_round_512(void)
{
    mp_buffer b[] = {{0, 1, 1, 0}};
    mp_cache_sim_result r = run(b, 1);
    CU_ASSERT_EQUAL(r.reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.small_reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, 512);
    CU_ASSERT_EQUAL(r.peak_requested_bytes, 1);
    CU_ASSERT_EQUAL(r.segments, 1);
    mp_buffer c[] = {{0, 1, 1000, 0}, {0, 1, 512, 0}};
    r = run(c, 2);
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, 1024 + 512);
    CU_ASSERT_EQUAL(r.reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.splits, 2);
}

/* small requests (<= 1 MiB) share 2 MiB segments: four 512 KiB live at
 * once fill one, a fifth opens a second; exactly 1 MiB is still small */
static void test_small_pool(void)
{
    mp_buffer b[5];
    for (int i = 0; i < 5; i++)
        b[i] = (mp_buffer){0, 1, 512 * KiB, 0};
    mp_cache_sim_result r = run(b, 4);
    CU_ASSERT_EQUAL(r.reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.segments, 1);
    r = run(b, 5);
    CU_ASSERT_EQUAL(r.reserved_bytes, 4 * MiB);
    CU_ASSERT_EQUAL(r.segments, 2);
    mp_buffer m[] = {{0, 1, MiB, 0}};
    r = run(m, 1);
    CU_ASSERT_EQUAL(r.reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.small_reserved_bytes, 2 * MiB);
}

/* above 1 MiB and below 10 MiB: a 20 MiB segment, split and shared */
static void test_large_20mib(void)
{
    mp_buffer b[] = {{0, 1, MiB + 1, 0}};
    mp_cache_sim_result r = run(b, 1);
    CU_ASSERT_EQUAL(r.reserved_bytes, 20 * MiB);
    CU_ASSERT_EQUAL(r.small_reserved_bytes, 0);
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, MiB + 512);
    mp_buffer c[] = {{0, 1, 5 * MiB, 0}, {0, 1, 5 * MiB, 0},
                     {0, 1, 5 * MiB, 0}, {0, 1, 5 * MiB, 0}};
    r = run(c, 4);   /* 4 x 5 MiB fill one 20 MiB segment */
    CU_ASSERT_EQUAL(r.reserved_bytes, 20 * MiB);
    CU_ASSERT_EQUAL(r.splits, 3);
    CU_ASSERT_EQUAL(r.reuses, 3);
}

/* 10 MiB and above: the segment is the size rounded up to 2 MiB */
static void test_large_rounded(void)
{
    mp_buffer b[] = {{0, 1, 10 * MiB + 1, 0}};
    mp_cache_sim_result r = run(b, 1);
    CU_ASSERT_EQUAL(r.reserved_bytes, 12 * MiB);
    /* rest 2 MiB - 512 > 1 MiB: split */
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, 10 * MiB + 512);
    CU_ASSERT_EQUAL(r.splits, 1);
}

/* large pool: a remainder of 1 MiB or less is not split off */
static void test_large_no_split(void)
{
    mp_buffer b[] = {{0, 1, 11 * MiB, 0}};
    mp_cache_sim_result r = run(b, 1);
    CU_ASSERT_EQUAL(r.reserved_bytes, 12 * MiB);
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, 12 * MiB);
    CU_ASSERT_EQUAL(r.splits, 0);
}

/* best fit: the smallest cached block that holds the request, not the
 * lowest address. Segments 12, 16, 14 MiB at increasing addresses; after
 * they are freed, 13 MiB takes the 14 (rest 1 MiB: no split) and 15 MiB
 * the 16 (no split): no new segment. First fit would split the 16 for the
 * 13 MiB and need a new segment for 15 MiB. */
static void test_best_fit(void)
{
    mp_buffer b[] = {{0, 1, 12 * MiB, 0}, {0, 1, 16 * MiB, 0},
                     {0, 1, 14 * MiB, 0}, {1, 2, 13 * MiB, 0},
                     {1, 2, 15 * MiB, 0}};
    mp_cache_sim_result r = run(b, 5);
    CU_ASSERT_EQUAL(r.reserved_bytes, 42 * MiB);
    CU_ASSERT_EQUAL(r.segments, 3);
    CU_ASSERT_EQUAL(r.reuses, 2);
    CU_ASSERT_EQUAL(r.splits, 0);
    CU_ASSERT_EQUAL(r.peak_allocated_bytes, 42 * MiB);
}

/* freed neighbours merge: two adjacent 512 KiB blocks freed make room for
 * 1 MiB in the same segment */
static void test_merge(void)
{
    mp_buffer b[] = {{0, 3, 512 * KiB, 0}, {0, 1, 512 * KiB, 0},
                     {0, 1, 512 * KiB, 0}, {0, 3, 512 * KiB, 0},
                     {2, 3, MiB, 0}};
    mp_cache_sim_result r = run(b, 5);
    CU_ASSERT_EQUAL(r.reserved_bytes, 2 * MiB);
    CU_ASSERT_EQUAL(r.segments, 1);
    /* without the middle blocks freed first, 1 MiB needs a new segment */
    mp_buffer c[] = {{0, 3, 512 * KiB, 0}, {0, 3, 512 * KiB, 0},
                     {0, 3, 512 * KiB, 0}, {0, 3, 512 * KiB, 0},
                     {2, 3, MiB, 0}};
    r = run(c, 5);
    CU_ASSERT_EQUAL(r.reserved_bytes, 4 * MiB);
}

/* the pools are separate: a cached small block never serves a large
 * request (nor a large block a small one) */
static void test_pools_separate(void)
{
    mp_buffer b[] = {{0, 1, MiB, 0}, {1, 2, 1536 * KiB, 0}};
    mp_cache_sim_result r = run(b, 2);
    CU_ASSERT_EQUAL(r.reserved_bytes, 22 * MiB);
    mp_buffer c[] = {{0, 1, 5 * MiB, 0}, {1, 2, 4 * KiB, 0}};
    r = run(c, 2);
    CU_ASSERT_EQUAL(r.reserved_bytes, 22 * MiB);
}

/* a buffer freed at time t serves a request at t; reuse is counted; zero
 * sizes and empty intervals take nothing; a bad interval is an error */
static void test_reuse_and_edges(void)
{
    mp_buffer b[] = {{0, 1, 3 * MiB, 0}, {1, 2, 3 * MiB, 0},
                     {2, 3, 0, 0}, {3, 3, 8 * MiB, 0}};
    mp_cache_sim_result r = run(b, 4);
    CU_ASSERT_EQUAL(r.reserved_bytes, 20 * MiB);
    CU_ASSERT_EQUAL(r.reuses, 1);
    CU_ASSERT_EQUAL(r.peak_requested_bytes, 3 * MiB);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer bad[] = {{2, 1, 10, 0}};
    CU_ASSERT_EQUAL(mp_cache_sim(ctx, bad, 1, &r), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "ends"));
    CU_ASSERT_EQUAL(mp_cache_sim(ctx, NULL, 0, &r), MP_OK);
    CU_ASSERT_EQUAL(r.reserved_bytes, 0);
    mp_ctx_destroy(ctx);
}

void mp_register_fragsim(void)
{
    static CU_TestInfo tests[] = {
        {"round_512", test_round_512},
        {"small_pool", test_small_pool},
        {"large_20mib", test_large_20mib},
        {"large_rounded", test_large_rounded},
        {"large_no_split", test_large_no_split},
        {"best_fit", test_best_fit},
        {"merge", test_merge},
        {"pools_separate", test_pools_separate},
        {"reuse_and_edges", test_reuse_and_edges},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("fragsim", tests);
}
