/* libFuzzer harness: the MiniMalloc CSV trace reader (frontends/
 * trace_csv.c) on arbitrary text. A trace that reads is packed by the
 * greedy placement, which the offsets verifier must accept; offsets given
 * in the trace are checked too (the verifier may reject them, but must not
 * crash); the packed trace is written back and read again (same number of
 * buffers, same sizes and lifetimes). mp_trace_load_csv reads a path, so
 * each input goes through a per-process file (fuzz/common.h). Built with
 * -DMEMPLAN_FUZZ=ON (clang); docs/fuzzing.md. */
#include "common.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mp_ctx *g_ctx;
static char g_in[256], g_out[256];

static void check_roundtrip(const mp_buffer *b, const int64_t *ids, size_t n)
{
    if (mp_trace_save_csv(g_ctx, g_out, b, ids, n) != MP_OK)
        return; /* a full disk is not a bug */
    mp_buffer *b2 = NULL;
    int64_t *ids2 = NULL;
    size_t n2 = 0;
    int has = 0;
    if (mp_trace_load_csv(g_ctx, g_out, &b2, &ids2, &n2, &has) != MP_OK)
        mp_fuzz_fail("a written trace does not read back", g_ctx);
    if (n2 != n || !has)
        mp_fuzz_fail("a written trace reads back with other buffers", g_ctx);
    for (size_t i = 0; i < n; i++)
        if (b2[i].size != b[i].size || b2[i].start != b[i].start ||
            b2[i].end != b[i].end || b2[i].offset != b[i].offset ||
            ids2[i] != ids[i])
            mp_fuzz_fail("a written trace reads back changed", g_ctx);
    mp_free(g_ctx, b2);
    mp_free(g_ctx, ids2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ctx) {
        g_ctx = mp_ctx_create(NULL);
        if (!g_ctx)
            mp_fuzz_fail("cannot create a context", NULL);
        mp_fuzz_tmp_path(g_in, sizeof g_in, "trace-in", "csv");
        mp_fuzz_tmp_path(g_out, sizeof g_out, "trace-out", "csv");
    }
    if (!mp_fuzz_write_file(g_in, data, size))
        return 0;
    mp_buffer *b = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int has = 0;
    mp_status st = mp_trace_load_csv(g_ctx, g_in, &b, &ids, &n, &has);
    if (st == MP_ERR_INTERNAL)
        mp_fuzz_fail("mp_trace_load_csv: internal error", g_ctx);
    if (st == MP_OK) {
        if (has)
            (void)mp_offsets_verify(g_ctx, b, n, 1, UINT64_MAX);
        mp_offsets_options o;
        mp_offsets_result r;
        mp_offsets_options_init(&o);
        o.method = MP_OFFSETS_SIZE_BESTFIT;
        st = mp_offsets_solve(g_ctx, b, n, &o, &r);
        if (st == MP_ERR_INTERNAL)
            mp_fuzz_fail("mp_offsets_solve: internal error", g_ctx);
        if (st == MP_OK) {
            if (mp_offsets_verify(g_ctx, b, n, 1, r.arena_bytes) != MP_OK)
                mp_fuzz_fail("a packing from mp_offsets_solve fails the "
                             "verifier", g_ctx);
            check_roundtrip(b, ids, n);
        }
        mp_free(g_ctx, b);
        mp_free(g_ctx, ids);
    }
    mp_ctx_clear(g_ctx);
    return 0;
}
