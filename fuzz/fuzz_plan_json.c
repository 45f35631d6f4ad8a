/* libFuzzer harness: the plan JSON reader (frontends/plan_json.c) on
 * arbitrary text, against one fixed graph built here; a plan that reads is
 * replayed by the verifier (which may reject it, but must not crash) and
 * written back. mp_plan_load_json reads a path, so each input goes through
 * a per-process file (fuzz/common.h). Built with
 * -DMEMPLAN_FUZZ=ON (clang); docs/fuzzing.md. */
#include "common.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a small graph with a weight, a view (Reshape), a fan-out and an output */
static const char graph_json[] =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"fz\","
    " \"tensors\": ["
    "  {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 16], \"kind\": \"input\"},"
    "  {\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [16, 16], \"kind\": \"weight\"},"
    "  {\"name\": \"shp\", \"dtype\": \"int64\", \"shape\": [2], \"kind\": \"constant\"},"
    "  {\"name\": \"h\", \"dtype\": \"float32\", \"shape\": [4, 16], \"kind\": \"activation\"},"
    "  {\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [4, 16], \"kind\": \"activation\"},"
    "  {\"name\": \"r\", \"dtype\": \"float32\", \"shape\": [8, 8], \"kind\": \"activation\"},"
    "  {\"name\": \"s\", \"dtype\": \"float32\", \"shape\": [4, 16], \"kind\": \"activation\"},"
    "  {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [8, 8], \"kind\": \"output\"}"
    " ],"
    " \"nodes\": ["
    "  {\"name\": \"mm\", \"op\": \"MatMul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"h\"]},"
    "  {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"h\"], \"outputs\": [\"a\"]},"
    "  {\"name\": \"add\", \"op\": \"Add\", \"inputs\": [\"a\", \"h\"], \"outputs\": [\"s\"]},"
    "  {\"name\": \"rs\", \"op\": \"Reshape\", \"inputs\": [\"s\", \"shp\"], \"outputs\": [\"r\"]},"
    "  {\"name\": \"neg\", \"op\": \"Neg\", \"inputs\": [\"r\"], \"outputs\": [\"y\"]}"
    " ],"
    " \"outputs\": [\"y\"]}";

static mp_ctx *g_ctx;
static mp_graph *g_graph;
static char g_path[256];

static void setup(void)
{
    g_ctx = mp_ctx_create(NULL);
    if (!g_ctx || mp_graph_load_json_string(g_ctx, graph_json, "fuzz-graph",
                                            &g_graph) != MP_OK)
        mp_fuzz_fail("cannot build the fixed graph", g_ctx);
    mp_fuzz_tmp_path(g_path, sizeof g_path, "plan", "json");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_graph)
        setup();
    if (!mp_fuzz_write_file(g_path, data, size))
        return 0;
    mp_plan *p = NULL;
    mp_status st = mp_plan_load_json(g_graph, g_path, &p);
    if (st == MP_ERR_INTERNAL)
        mp_fuzz_fail("mp_plan_load_json: internal error", g_ctx);
    if (st == MP_OK) {
        (void)mp_verify_plan(g_graph, p);
        char *s = NULL;
        if (mp_plan_to_json_string(p, &s) == MP_OK)
            mp_free(g_ctx, s);
        mp_plan_destroy(p);
    }
    mp_ctx_clear(g_ctx);
    return 0;
}
