/* The public API as a compiler sees it (issue 9): version macros and the
 * runtime version agree, status codes keep their numbers and names,
 * allocator hooks are validated and used for everything, destroy
 * functions take NULL, messages are per context, attribute getters read
 * back what the builder set, the shared library exports exactly the
 * functions the headers declare, and docs/api/index.md is up to date. */
#include "base.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void t_version(void)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d.%d.%d", MP_VERSION_MAJOR, MP_VERSION_MINOR,
             MP_VERSION_PATCH);
    CU_ASSERT_STRING_EQUAL(buf, MP_VERSION_STRING);
    CU_ASSERT_STRING_EQUAL(mp_version(), MP_VERSION_STRING);
}

/* The numbers are part of the ABI: a renumbering breaks every caller
 * that stored them. */
static void t_status_codes(void)
{
    static const struct {
        mp_status s;
        int value;
        const char *name;
    } table[] = {
        {MP_OK, 0, "MP_OK"},
        {MP_ERR_INVALID_ARG, 1, "MP_ERR_INVALID_ARG"},
        {MP_ERR_NOMEM, 2, "MP_ERR_NOMEM"},
        {MP_ERR_IO, 3, "MP_ERR_IO"},
        {MP_ERR_PARSE, 4, "MP_ERR_PARSE"},
        {MP_ERR_GRAPH, 5, "MP_ERR_GRAPH"},
        {MP_ERR_SHAPE, 6, "MP_ERR_SHAPE"},
        {MP_ERR_OVERFLOW, 7, "MP_ERR_OVERFLOW"},
        {MP_ERR_UNSUPPORTED, 8, "MP_ERR_UNSUPPORTED"},
        {MP_ERR_INFEASIBLE, 9, "MP_ERR_INFEASIBLE"},
        {MP_ERR_VERIFY, 10, "MP_ERR_VERIFY"},
        {MP_ERR_TIMEOUT, 11, "MP_ERR_TIMEOUT"},
        {MP_ERR_INTERNAL, 12, "MP_ERR_INTERNAL"},
        {MP_ERR_NOT_FOUND, 13, "MP_ERR_NOT_FOUND"},
        {MP_ERR_CORRUPT, 14, "MP_ERR_CORRUPT"},
        {MP_ERR_CYCLE, 15, "MP_ERR_CYCLE"},
        {MP_ERR_NO_PRODUCER, 16, "MP_ERR_NO_PRODUCER"},
        {MP_ERR_DUPLICATE, 17, "MP_ERR_DUPLICATE"},
        {MP_ERR_UNKNOWN_OP, 18, "MP_ERR_UNKNOWN_OP"},
        {MP_ERR_BAD_DIM, 19, "MP_ERR_BAD_DIM"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CU_ASSERT_EQUAL((int)table[i].s, table[i].value);
        CU_ASSERT_STRING_EQUAL(mp_status_name(table[i].s), table[i].name);
        CU_ASSERT(strlen(mp_status_str(table[i].s)) > 0);
    }
    CU_ASSERT_STRING_EQUAL(mp_status_name((mp_status)999), "MP_ERR_UNKNOWN");
    /* the bad-input classes refine the older general codes */
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_CYCLE), MP_ERR_GRAPH);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_NO_PRODUCER), MP_ERR_GRAPH);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_DUPLICATE), MP_ERR_GRAPH);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_CORRUPT), MP_ERR_PARSE);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_UNKNOWN_OP), MP_ERR_SHAPE);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_BAD_DIM), MP_ERR_SHAPE);
    CU_ASSERT_EQUAL(mp_status_base(MP_ERR_OVERFLOW), MP_ERR_OVERFLOW);
    CU_ASSERT_EQUAL(mp_status_base(MP_OK), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(mp_status_str((mp_status)-1));
}

typedef struct counter {
    long mallocs, frees;
} counter;
static void *c_malloc(void *u, size_t n)
{
    ((counter *)u)->mallocs++;
    return malloc(n);
}
static void *c_realloc(void *u, void *p, size_t n)
{
    if (!p)
        ((counter *)u)->mallocs++;
    return realloc(p, n);
}
static void c_free(void *u, void *p)
{
    if (p)
        ((counter *)u)->frees++;
    free(p);
}

static void t_allocator(void)
{
    counter k = {0, 0};
    mp_allocator bad = {c_malloc, NULL, c_free, &k};
    CU_ASSERT_PTR_NULL(mp_ctx_create(&bad));
    mp_allocator a = {c_malloc, c_realloc, c_free, &k};
    mp_ctx *ctx = mp_ctx_create(&a);
    CU_ASSERT_FATAL(ctx != NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_graph_load(ctx, MP_SOURCE_DIR "/examples/tiny.json", &g),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT(k.mallocs > 10);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    CU_ASSERT_EQUAL(k.mallocs, k.frees);
}

static void t_null_handles(void)
{
    mp_ctx_destroy(NULL);
    mp_graph_destroy(NULL);
    mp_plan_destroy(NULL);
    mp_constraints_destroy(NULL);
    mp_lints_destroy(NULL);
    CU_ASSERT_STRING_EQUAL(mp_ctx_message(NULL), "");
    CU_ASSERT_EQUAL(mp_ctx_status(NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_create(NULL, NULL, NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(NULL, NULL, NULL, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_verify_plan(NULL, NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_num_blocks(NULL), 0);
    CU_ASSERT_PTR_NULL(mp_plan_figures(NULL));
    CU_ASSERT_EQUAL(mp_plan_num_pools(NULL), 0);
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(NULL, 0, "a", NULL),
                    MP_ERR_INVALID_ARG);
}

/* NULL where a pointer is expected: an error, never a crash (the
 * parsers and the FlexGen initialisers crashed before this test). */
static void t_null_args(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_graph_load(c, MP_SOURCE_DIR "/examples/tiny.json", &g) ==
                    MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &p) == MP_OK);
    mp_dtype d;
    mp_tensor_kind k;
    mp_phase ph;
    mp_offsets_method m;
    CU_ASSERT_EQUAL(mp_dtype_parse(NULL, &d), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_dtype_parse("float", NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_kind_parse(NULL, &k), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_kind_parse("input", NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_phase_parse(NULL, &ph), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_phase_parse("forward", NULL), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_kind_parse("input", &k), MP_OK);
    CU_ASSERT_EQUAL(k, MP_KIND_INPUT);
    CU_ASSERT_NOT_EQUAL(mp_offsets_method_parse(NULL, &m), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_offsets_method_parse("auto", NULL), MP_OK);
    mp_graph *h = NULL;
    CU_ASSERT_NOT_EQUAL(mp_graph_load(NULL, "x", &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load(c, NULL, &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load(c, MP_SOURCE_DIR "/examples/tiny.json",
                                      NULL),
                        MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load_json_string(c, NULL, "x", &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load_nodelink(c, NULL, &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load_onnx(c, NULL, NULL, &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load_onnx_buffer(c, NULL, 0, NULL, NULL, &h),
                        MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_load_dims(c, NULL, NULL, 0, &h), MP_OK);
    CU_ASSERT_PTR_NULL(h);
    CU_ASSERT_NOT_EQUAL(mp_graph_save_json(NULL, "x"), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_save_json(g, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_to_json_string(g, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_create(NULL, &h), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_create(c, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_add_tensor(NULL, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_add_node(NULL, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_finalize(NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_find_tensor(g, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_tensor_info(g, 0, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_node_info(g, 0, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_save_json(p, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_to_json_string(NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_load_json(g, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_verify_plan(g, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_offsets_solve(c, NULL, 0, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_offsets_lower_bound(c, NULL, 0, 1, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_trace_load_csv(c, NULL, NULL, NULL, NULL, NULL),
                        MP_OK);
    mp_plan *q = NULL;
    CU_ASSERT_NOT_EQUAL(mp_plan_create_ordered(g, NULL, NULL, &q), MP_OK);
    CU_ASSERT_PTR_NULL(q);
    CU_ASSERT_NOT_EQUAL(mp_device_get(c, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_node_estimate(g, 0, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_train_graph(NULL, NULL, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_remat_plan(NULL, NULL, NULL, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_lint(NULL, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_write_html(p, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_write_trace(p, NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_fits(NULL, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_plan_check_range(p, NULL, NULL, 0, 0, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_constraints_create(c, NULL), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_constraints_add_pool(NULL, NULL, NULL), MP_OK);
    /* initialisers take NULL as a no-op */
    mp_plan_options_init(NULL);
    mp_offsets_options_init(NULL);
    mp_onnx_options_init(NULL);
    mp_remat_options_init(NULL);
    mp_lint_options_init(NULL);
    mp_flexgen_options_init(NULL);
    mp_flexgen_hw_t4(NULL);
    mp_flexgen_hw_from_device(NULL, NULL);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(c);
}

/* Messages stay in their context; clearing one leaves the other. */
static void t_messages(void)
{
    mp_ctx *a = mp_ctx_create(NULL), *b = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(a, "{\"format\": \"memplan-graph\"",
                                              "first.json", &g),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_EQUAL(mp_graph_load(b, "/nonexistent/second.json", &g), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(a), "first.json"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(b), "second.json"));
    CU_ASSERT_EQUAL(mp_ctx_status(a), MP_ERR_PARSE);
    mp_ctx_clear(a);
    CU_ASSERT_STRING_EQUAL(mp_ctx_message(a), "");
    CU_ASSERT_EQUAL(mp_ctx_status(a), MP_OK);
    CU_ASSERT_EQUAL(mp_ctx_status(b), MP_ERR_IO);
    mp_ctx_destroy(a);
    mp_ctx_destroy(b);
}

static void t_attrs(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    mp_tensor_desc tx = {"x", MP_DTYPE_FLOAT32, -1, NULL, 64, MP_KIND_INPUT};
    mp_tensor_desc ty = {"y", MP_DTYPE_FLOAT32, -1, NULL, 64, MP_KIND_OUTPUT};
    uint32_t x, y, n;
    CU_ASSERT_FATAL(mp_graph_add_tensor(g, &tx, &x) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_tensor(g, &ty, &y) == MP_OK);
    mp_node_desc nd = {"n", "Op", NULL, &x, 1, &y, 1, MP_PHASE_FORWARD};
    CU_ASSERT_FATAL(mp_graph_add_node(g, &nd, &n) == MP_OK);
    int64_t ints[3] = {0, 2, 1};
    double floats[2] = {0.5, 2.5};
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, n, "axis", -1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_float(g, n, "epsilon", 1e-5), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_string(g, n, "mode", "linear"), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, n, "perm", ints, 3), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_floats(g, n, "scales", floats, 2), MP_OK);
    int64_t i = 0;
    double f = 0;
    const char *s = NULL;
    const int64_t *iv = NULL;
    const double *fv = NULL;
    uint32_t cnt = 0;
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(g, n, "axis", &i), MP_OK);
    CU_ASSERT_EQUAL(i, -1);
    CU_ASSERT_EQUAL(mp_graph_get_attr_float(g, n, "epsilon", &f), MP_OK);
    CU_ASSERT_DOUBLE_EQUAL(f, 1e-5, 1e-20);
    CU_ASSERT_EQUAL(mp_graph_get_attr_float(g, n, "axis", &f), MP_OK);
    CU_ASSERT_DOUBLE_EQUAL(f, -1.0, 0);
    CU_ASSERT_EQUAL(mp_graph_get_attr_string(g, n, "mode", &s), MP_OK);
    CU_ASSERT_STRING_EQUAL(s, "linear");
    CU_ASSERT_EQUAL(mp_graph_get_attr_ints(g, n, "perm", &iv, &cnt), MP_OK);
    CU_ASSERT(cnt == 3 && iv[1] == 2);
    CU_ASSERT_EQUAL(mp_graph_get_attr_floats(g, n, "scales", &fv, &cnt), MP_OK);
    CU_ASSERT(cnt == 2 && fv[1] == 2.5);
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(g, n, "epsilon", &i),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(g, n, "nope", &i), MP_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "nope"));
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(g, 7, "axis", &i), MP_ERR_NOT_FOUND);
    /* and after a round trip through JSON */
    char *text = NULL;
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_OK);
    CU_ASSERT_FATAL(mp_graph_to_json_string(g, &text) == MP_OK);
    mp_graph *h = NULL;
    CU_ASSERT_FATAL(mp_graph_load_json_string(ctx, text, "rt", &h) == MP_OK);
    CU_ASSERT_EQUAL(mp_graph_get_attr_ints(h, 0, "perm", &iv, &cnt), MP_OK);
    CU_ASSERT(cnt == 3 && iv[0] == 0 && iv[1] == 2 && iv[2] == 1);
    CU_ASSERT_EQUAL(mp_graph_get_attr_string(h, 0, "mode", &s), MP_OK);
    CU_ASSERT_STRING_EQUAL(s, "linear");
    mp_free(ctx, text);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* scripts/check-symbols.sh on the build's shared library: every exported
 * function is declared in include/memplan, every declared one exported. */
static void t_exports(void)
{
    const char *lib = MP_BINARY_DIR "/libmemplan.so";
    if (access(lib, R_OK) != 0 || system("command -v nm >/dev/null 2>&1")) {
        printf("\n  skipped: no %s or no nm\n", lib);
        return;
    }
    char out[4096];
    int rc = mp_test_run(MP_SOURCE_DIR "/scripts/check-symbols.sh " MP_BINARY_DIR
                         "/libmemplan.so " MP_SOURCE_DIR "/include 2>&1",
                         out, sizeof out);
    if (rc != 0)
        printf("\n%s", out);
    CU_ASSERT_EQUAL(rc, 0);
}

/* docs/api/index.md is what scripts/gen-api-index.py writes now. */
static void t_api_index(void)
{
    if (system("command -v python3 >/dev/null 2>&1")) {
        printf("\n  skipped: no python3\n");
        return;
    }
    char out[4096];
    int rc = mp_test_run("python3 " MP_SOURCE_DIR "/scripts/gen-api-index.py "
                         "--check 2>&1",
                         out, sizeof out);
    if (rc != 0)
        printf("\n%s", out);
    CU_ASSERT_EQUAL(rc, 0);
}

static CU_TestInfo tests[] = {
    {"version macros and mp_version", t_version},
    {"status codes: numbers and names", t_status_codes},
    {"allocator hooks", t_allocator},
    {"NULL handles", t_null_handles},
    {"NULL arguments: errors, no crash", t_null_args},
    {"messages per context", t_messages},
    {"attribute getters", t_attrs},
    {"exports = header declarations", t_exports},
    {"docs/api/index.md up to date", t_api_index},
    CU_TEST_INFO_NULL};

void mp_register_api(void) { mp_test_add_suite("api", tests); }
