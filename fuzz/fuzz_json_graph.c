/* libFuzzer harness: the JSON graph reader (frontends/json_graph.c) on
 * arbitrary text; a graph that loads is planned and verified, written back
 * to JSON and read again (the writer's output must load). Built with
 * -DMEMPLAN_FUZZ=ON (clang); docs/fuzzing.md. */
#include "common.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        free(text);
        return 0;
    }
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_json_string(ctx, text, "fuzz.json", &g);
    if (st == MP_ERR_INTERNAL)
        mp_fuzz_fail("mp_graph_load_json_string: internal error", ctx);
    if (st == MP_OK) {
        mp_fuzz_plan(ctx, g);
        char *out = NULL;
        if (mp_graph_to_json_string(g, &out) == MP_OK) {
            mp_graph *g2 = NULL;
            if (mp_graph_load_json_string(ctx, out, "fuzz-roundtrip.json",
                                          &g2) != MP_OK)
                mp_fuzz_fail("the JSON a loaded graph writes does not load",
                             ctx);
            if (mp_graph_num_tensors(g2) != mp_graph_num_tensors(g) ||
                mp_graph_num_nodes(g2) != mp_graph_num_nodes(g))
                mp_fuzz_fail("JSON round trip changed the graph", ctx);
            mp_graph_destroy(g2);
            mp_free(ctx, out);
        }
        mp_graph_destroy(g);
    }
    mp_ctx_destroy(ctx);
    free(text);
    return 0;
}
