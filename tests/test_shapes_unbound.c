/* `memplan shapes` on an ONNX model whose symbolic dims are not bound:
 * it runs, the dims and sizes that depend on the unbound symbols are ?,
 * and a note names them; mp_onnx_options.unbound_dims is the placeholder
 * the loader gives them. */
#include "support.h"

#include <memplan/memplan.h>

#include <stdio.h>
#include <string.h>

/* input dense_2_input [N, 1] -> Dense(16) -> Dense(16) -> Dense(1) */
#define HELLO "models/onnx2c/tfl_helloworld.onnx"

static void t_placeholder_binds(void)
{
    char buf[1024];
    const char *path = mp_test_corpus_file(HELLO, buf, sizeof buf);
    if (!path)
        return;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    CU_ASSERT_EQUAL(o.unbound_dims, 0);
    /* unbound: an error naming the symbol */
    CU_ASSERT_EQUAL(mp_graph_load_opts(ctx, path, &o, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'N'"));
    /* a placeholder: N is 7 wherever it appears */
    o.unbound_dims = 7;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_opts(ctx, path, &o, &g), MP_OK);
    uint32_t id;
    mp_tensor_info t;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, "dense_2_input", &id),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g, id, &t), MP_OK);
    CU_ASSERT_EQUAL(t.rank, 2);
    CU_ASSERT_EQUAL(t.dims[0], 7);
    CU_ASSERT_EQUAL(t.bytes, 7 * 1 * 4);
    mp_graph_destroy(g);
    /* a binding wins over the placeholder */
    mp_dim_binding b = {"N", 3};
    o.dims = &b;
    o.n_dims = 1;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_opts(ctx, path, &o, &g), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g, id, &t), MP_OK);
    CU_ASSERT_EQUAL(t.dims[0], 3);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void t_shapes_prints_unknown(void)
{
    char buf[1024], cmd[2048];
    static char out[1 << 16];
    const char *path = mp_test_corpus_file(HELLO, buf, sizeof buf);
    if (!path)
        return;
    snprintf(cmd, sizeof cmd, "'%s' shapes '%s' 2>&1", MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memplan: note: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'N' (needed by input "
                                       "'dense_2_input', dim 0)"));
    /* the input: [?, 1], bytes ?; a weight: known */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "[?, 1]"));
    const char *line = strstr(out, "\ndense_2_input ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "?  input"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "[1, 16]                            64"));
    /* --json: null dims and bytes; the weight's are numbers */
    snprintf(cmd, sizeof cmd, "'%s' shapes '%s' --json 2>/dev/null",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    mp_test_json *o = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    size_t n = mp_test_jlen(o, "tensors");
    int seen_input = 0, seen_weight = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = mp_test_jstr(o, "tensors[%zu].name", i);
        if (name && strcmp(name, "dense_2_input") == 0) {
            seen_input = 1;
            CU_ASSERT_EQUAL(mp_test_jtype(o, "tensors[%zu].shape[0]", i), 'n');
            CU_ASSERT_EQUAL(mp_test_jint(o, "tensors[%zu].shape[1]", i), 1);
            CU_ASSERT_EQUAL(mp_test_jtype(o, "tensors[%zu].bytes", i), 'n');
        } else if (name && strcmp(name, "dense_2/kernel:0") == 0) {
            seen_weight = 1;
            CU_ASSERT_EQUAL(mp_test_jint(o, "tensors[%zu].bytes", i), 64);
        }
    }
    CU_ASSERT(seen_input && seen_weight);
    CU_ASSERT(mp_test_jint(o, "unknown_shapes") > 0);
    mp_test_json_free(o);
    /* plan still refuses an unbound symbol */
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' 2>&1", MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "symbolic dim not bound"));
}

/* A model that does not infer at the placeholders gets plan's error. */
static void t_shapes_placeholder_fails(void)
{
    char buf[1024], cmd[2048];
    static char out[1 << 16];
    const char *path = mp_test_corpus_file(
        "models/tensorrt_polygraphy/attention_head.onnx", buf, sizeof buf);
    if (!path)
        return;
    snprintf(cmd, sizeof cmd, "'%s' shapes '%s' 2>&1", MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "symbolic dims not bound"));
    CU_ASSERT_PTR_NULL(strstr(out, "note:"));
}

void mp_register_shapes_unbound(void)
{
    static CU_TestInfo tests[] = {
        {"a placeholder binds unbound symbols", t_placeholder_binds},
        {"shapes prints ? for what depends on them", t_shapes_prints_unknown},
        {"a model that needs its dims related still fails",
         t_shapes_placeholder_fails},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("shapes_unbound", tests);
}
