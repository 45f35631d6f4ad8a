/* Regression tests for inputs the fuzzers (fuzz/, docs/fuzzing.md) found:
 * each case is the smallest form of a crashing input, written out here,
 * with the behaviour it must have now. The sanitizer build (CI) is what
 * catches a relapse of the undefined behaviour; the assertions check the
 * result. */
#include "support.h"

#include "ir.h"
#include "memplan/memplan.h"

#include <stdio.h>
#include <string.h>

/* fuzz_json_graph: an empty attribute array ("value.dims": []) passed
 * NULL + 0 to the attribute setter (UBSan: applying zero offset to null
 * pointer, frontends/json_graph.c). It loads, the attribute is empty. */
static void test_json_empty_attr_array(void)
{
    static const char text[] =
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": ["
        " {\"name\": \"x\", \"dtype\": \"float64\", \"shape\": [2, 3],"
        "  \"kind\": \"input\"},"
        " {\"name\": \"c\", \"dtype\": \"float64\", \"shape\": []},"
        " {\"name\": \"y\", \"dtype\": \"float64\", \"shape\": [2, 3]}],"
        " \"nodes\": ["
        " {\"name\": \"k\", \"op\": \"Constant\", \"inputs\": [],"
        "  \"outputs\": [\"c\"], \"attributes\": {\"value.dtype\": 11,"
        "  \"value.dims\": [], \"e\": []}},"
        " {\"name\": \"add\", \"op\": \"Add\", \"inputs\": [\"x\", \"c\"],"
        "  \"outputs\": [\"y\"]}],"
        " \"outputs\": [\"y\"]}";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, text, "t", &g),
                          MP_OK);
    uint32_t k;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g, "k", &k), MP_OK);
    const mp__attr *a = mp__node_attr(&g->nodes[k], "value.dims");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->type, MP__ATTR_INTS);
    CU_ASSERT_EQUAL(a->n, 0);
    CU_ASSERT_PTR_NOT_NULL(mp__node_attr(&g->nodes[k], "e"));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* fuzz_json_graph: the error path of an attribute array holding a string
 * printed the attribute's key through a pointer into the reader's string
 * arena, which reading the string had moved (heap-use-after-free under
 * ASan). A long string forces the arena to grow. The error names the key. */
static void test_json_attr_key_after_growth(void)
{
    char text[4096];
    char big[2048];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(text, sizeof text,
             "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": ["
             " {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4],"
             "  \"kind\": \"input\"},"
             " {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [4]}],"
             " \"nodes\": [{\"name\": \"r\", \"op\": \"Relu\","
             " \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
             " \"attributes\": {\"dilations_key\": [\"%s\"]}}],"
             " \"outputs\": [\"y\"]}", big);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, text, "t", &g),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "dilations_key"));
    mp_ctx_destroy(ctx);
}

static CU_TestInfo tests[] = {
    {"json: attribute key named after the string arena grew",
     test_json_attr_key_after_growth},
    {"json: empty attribute array", test_json_empty_attr_array},
    CU_TEST_INFO_NULL};

void mp_register_fuzz(void) { mp_test_add_suite("fuzz", tests); }
