/* Bad input, one class at a time (docs/exit-codes.md): each gives its own
 * library status (MP_ERR_CORRUPT, _CYCLE, _NO_PRODUCER, _DUPLICATE,
 * _UNKNOWN_OP, _BAD_DIM, _OVERFLOW) and its own exit code of the memplan
 * command (6..12), with a message naming the place, for ONNX models (built
 * here with the generated protobuf-c code) and JSON graphs. */
#define _DEFAULT_SOURCE 1 /* mkstemps */
#include "support.h"

#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- running the command on a file --------------------------------------- */
static char out[1 << 15];

/* Writes len bytes to a fresh temporary file with the suffix; the path is
 * copied into path. */
static int write_temp(char *path, size_t cap, const char *suffix,
                      const void *data, size_t len)
{
    snprintf(path, cap, "/tmp/mp_bad_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, data, len);
    close(fd);
    return w == (ssize_t)len ? 0 : -1;
}

/* memplan plan on the data (as a file with the suffix): the exit code;
 * stderr is in `out`, and names the file on an error. */
static int plan_exit(const char *suffix, const void *data, size_t len)
{
    char path[128], cmd[512];
    if (write_temp(path, sizeof path, suffix, data, len))
        return -1;
    snprintf(cmd, sizeof cmd, "'%s' plan %s 2>&1 >/dev/null", MP_CLI_PATH,
             path);
    int rc = mp_test_run(cmd, out, sizeof out);
    if (rc != 0) { /* one error line naming the file */
        CU_ASSERT_PTR_NOT_NULL(strstr(out, path));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "memplan: "));
    }
    unlink(path);
    return rc;
}

/* The JSON graph's load status (message in msg) and the command's exit. */
static mp_status json_status(const char *text, char *msg, size_t cap)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_json_string(ctx, text, "bad.json", &g);
    snprintf(msg, cap, "%s", mp_ctx_message(ctx));
    CU_ASSERT((st == MP_OK) == (g != NULL));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return st;
}

#define X_IN "{'name': 'x', 'dtype': 'float32', 'shape': [2, 3], " \
             "'kind': 'input'}"

/* single quotes -> double quotes, so the JSON texts below read easily */
static char *dq(const char *s)
{
    char *t = strdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    return t;
}

/* JSON graphs of the classes (single quotes: see dq) */
static const char json_cycle[] =
    "{'tensors': [" X_IN "], 'nodes': ["
    "{'name': 'p', 'op': 'Add', 'inputs': ['x', 'b'], "
    "'outputs': ['a']},"
    "{'name': 'q', 'op': 'Relu', 'inputs': ['a'], "
    "'outputs': ['b']}]}";
static const char json_no_producer[] =
    "{'tensors': [" X_IN "], 'nodes': ["
    "{'name': 'n', 'op': 'Add', 'inputs': ['x', 'foo'], "
    "'outputs': ['y']}], 'outputs': ['y']}";
static const char json_duplicate[] =
    "{'tensors': [" X_IN ", " X_IN "]}";
static const char json_negative_dim[] =
    "{'tensors': [{'name': 'x', 'dtype': 'int8', "
    "'shape': [4, -2], 'kind': 'input'}]}";
static const char json_overflow[] =
    "{'tensors': [{'name': 'x', 'dtype': 'float32', "
    "'shape': [1099511627776, 1099511627776], 'kind': 'input'}]}";

static void check_json(const char *text_sq, mp_status want, int want_exit,
                       const char *says)
{
    char *text = dq(text_sq), msg[1024];
    mp_status st = json_status(text, msg, sizeof msg);
    if (st != want || !strstr(msg, says))
        printf("\n  JSON: %s (want %s): %s\n", mp_status_name(st),
               mp_status_name(want), msg);
    CU_ASSERT_EQUAL(st, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, says));
    CU_ASSERT_EQUAL(plan_exit(".json", text, strlen(text)), want_exit);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, says));
    free(text);
}

#ifdef MP_WITH_ONNX
#include "onnx_build.h"

/* The model's load status and the command's exit code; both checked,
 * and the message must contain says. */
static void check_onnx(ob *b, mp_status want, int want_exit,
                       const char *says)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, "bad.onnx", NULL,
                                             &g);
    const char *msg = mp_ctx_message(ctx);
    if (st != want || !strstr(msg, says))
        printf("\n  ONNX: %s (want %s): %s\n", mp_status_name(st),
               mp_status_name(want), msg);
    CU_ASSERT_EQUAL(st, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "bad.onnx"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, says));
    CU_ASSERT_PTR_NULL(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    CU_ASSERT_EQUAL(plan_exit(".onnx", buf, len), want_exit);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, says));
}

static const int64_t d23[] = {2, 3};

/* x -> Relu -> y: a valid model to cut or extend */
static void ob_relu(ob *b)
{
    ob_init(b, 8, 17);
    ob_input(b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(b, "Relu", "relu", "x", NULL, "y");
    ob_output(b, "y", MP_DTYPE_FLOAT32, -1, NULL);
}

static void test_corrupt(void)
{
    ob b;
    ob_relu(&b);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    /* the whole model plans */
    CU_ASSERT_EQUAL(plan_exit(".onnx", buf, len), 0);
    /* cut at every length that leaves a field half-read: exit 6 each */
    int corrupt = 0, tried = 0;
    for (size_t cut = 1; cut < len; cut += 3) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_status st =
            mp_graph_load_onnx_buffer(ctx, buf, cut, "bad.onnx", NULL, &g);
        tried++;
        if (st == MP_ERR_CORRUPT) {
            corrupt++;
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "bad.onnx"));
        }
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    CU_ASSERT(corrupt > tried / 2);
    CU_ASSERT_EQUAL(plan_exit(".onnx", buf, len / 2), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "truncated or corrupt"));
    const char junk[] = "\x0a\xff\xff\xff\xff\x0f garbage";
    CU_ASSERT_EQUAL(plan_exit(".onnx", junk, sizeof junk - 1), 6);
    ob_free(&b);
    /* a JSON graph cut short is a syntax error (3), not this class */
    const char *cut_json = "{\"tensors\": [{\"name\": \"x\", \"dty";
    CU_ASSERT_EQUAL(plan_exit(".json", cut_json, strlen(cut_json)), 3);
}

/* Files that are not ONNX (a PyTorch checkpoint, zip or pickle, GGUF,
 * safetensors, Keras HDF5, TFLite): exit 6, the message saying what the
 * file is and how to get an ONNX model, not "truncated or corrupt" */
static void test_foreign_formats(void)
{
    /* the bytes: a string literal, its length without the NUL */
#define FOREIGN(ext, lit, what, howto) {ext, lit, sizeof lit - 1, what, howto}
    static const struct {
        const char *ext, *bytes;
        size_t len;
        const char *what, *howto;
    } cases[] = {
        FOREIGN(".pt", "PK\x03\x04\x14\x00\x00\x00archive/data.pkl",
                "PyTorch checkpoint", "torch.onnx.export"),
        FOREIGN(".pth", "\x80\x02}q\x00X\x03\x00\x00\x00foo", "pickle",
                "torch.onnx.export"),
        FOREIGN(".gguf", "GGUF\x03\x00\x00\x00\x00\x00", "GGUF",
                "optimum-cli export onnx"),
        FOREIGN(".safetensors",
                "\x0a\x00\x00\x00\x00\x00\x00\x00{\"a\": 1}  ",
                "a safetensors file (weights only", "optimum-cli export onnx"),
        FOREIGN(".h5", "\x89HDF\r\n\x1a\n\x00\x00", "HDF5", "tf2onnx"),
        FOREIGN(".tflite", "\x1c\x00\x00\x00TFL3\x00\x00", "TensorFlow Lite",
                "tf2onnx"),
    };
#undef FOREIGN
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(plan_exit(cases[i].ext, cases[i].bytes, cases[i].len),
                        6);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "not an ONNX model"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].what));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].howto));
        CU_ASSERT_PTR_NULL(strstr(out, "truncated or corrupt"));
    }
}

/* Every unbound symbol of an input is listed in one run (batch and
 * seq of x [batch, seq]), with the count and --batch for a leading dim */
static void test_unbound_dims(void)
{
    ob b;
    ob_relu(&b);
    Onnx__TensorShapeProto *sh = b.graph->input[0]->type->tensor_type->shape;
    static char batch[] = "batch", seq[] = "seq";
    char *names[2] = {batch, seq};
    for (int i = 0; i < 2; i++) {
        sh->dim[i]->value_case =
            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        sh->dim[i]->dim_param = names[i];
    }
    check_onnx(&b, MP_ERR_SHAPE, 3,
               "2 symbolic dims not bound: 'batch' (needed by input 'x', "
               "dim 0), 'seq' (needed by input 'x', dim 1); bind them with "
               "--dim NAME=VALUE (a leading batch dim also with --batch N)");
    ob_free(&b);
}

static void test_cycle(void)
{
    ob b;
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(&b, "Add", "p", "x", "b", "a");
    ob_node(&b, "Relu", "q", "a", NULL, "b");
    ob_output(&b, "b", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_CYCLE, 7, "cycle through node");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'p'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'q'"));
    ob_free(&b);
    check_json(json_cycle,
               MP_ERR_CYCLE, 7, "cycle through node");
    /* a node that reads its own output */
    check_json("{'tensors': [" X_IN "], 'nodes': ["
               "{'name': 'p', 'op': 'Add', 'inputs': ['x', 'a'], "
               "'outputs': ['a']}]}",
               MP_ERR_CYCLE, 7, "reads its own output \"a\"");
}

static void test_missing_producer(void)
{
    ob b;
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(&b, "Add", "adder", "x", "ghost", "y");
    ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_NO_PRODUCER, 8, "'ghost'");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'adder'"));
    ob_free(&b);
    /* a graph output nothing produces */
    ob_relu(&b);
    ob_output(&b, "nowhere", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_NO_PRODUCER, 8, "'nowhere'");
    ob_free(&b);
    check_json(json_no_producer,
               MP_ERR_NO_PRODUCER, 8,
               "nodes[0] (\"n\").inputs[1]: input \"foo\" is neither "
               "declared");
}

static void test_duplicate(void)
{
    ob b;
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(&b, "Relu", "first", "x", NULL, "a");
    ob_node(&b, "Sigmoid", "second", "x", NULL, "a");
    ob_output(&b, "a", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_DUPLICATE, 9, "'a' is produced by two nodes");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'first' and 'second'"));
    ob_free(&b);
    /* an initializer given twice */
    ob_relu(&b);
    ob_init_tensor(&b, "w", 2, d23);
    ob_init_tensor(&b, "w", 2, d23);
    check_onnx(&b, MP_ERR_DUPLICATE, 9, "initializer 'w' is given twice");
    ob_free(&b);
    check_json("{'tensors': [" X_IN "], 'nodes': ["
               "{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
               "'outputs': ['a']},"
               "{'name': 'q', 'op': 'Relu', 'inputs': ['x'], "
               "'outputs': ['a']}]}",
               MP_ERR_DUPLICATE, 9,
               "tensor \"a\" is already produced by nodes[0] (\"p\")");
    check_json(json_duplicate, MP_ERR_DUPLICATE, 9,
               "duplicate tensor name \"x\"");
}

/* an unknown op: an error naming op, domain and node; with its output
 * declared (value_info / bytes) the model plans */
static void test_unknown_op(void)
{
    for (int declared = 0; declared < 2; declared++) {
        ob b;
        ob_init(&b, 8, 17);
        ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
        Onnx__NodeProto *n = ob_node(&b, "FancyOp", "fancy", "x", NULL, "t");
        n->domain = (char *)"com.example";
        ob_node(&b, "Relu", "relu", "t", NULL, "y");
        ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
        if (!declared) {
            check_onnx(&b, MP_ERR_UNKNOWN_OP, 10, "FancyOp");
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "com.example"));
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "'fancy'"));
        } else {
            const int64_t td[] = {4, 8};
            ob_value_info(&b, "t", MP_DTYPE_FLOAT32, 2, td);
            size_t len;
            uint8_t *buf = ob_pack(&b, &len);
            mp_ctx *ctx = mp_ctx_create(NULL);
            mp_graph *g = NULL;
            CU_ASSERT_EQUAL_FATAL(mp_graph_load_onnx_buffer(
                                      ctx, buf, len, "ok.onnx", NULL, &g),
                                  MP_OK);
            mp_plan *p = NULL;
            CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
            CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
            uint32_t y;
            CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, "y", &y), MP_OK);
            CU_ASSERT_EQUAL(g->tensors[y].bytes, 4 * 8 * 4);
            /* t and y, 128 bytes each, live together at relu */
            CU_ASSERT(mp_plan_figures(p)->lower_bound_bytes >= 256);
            mp_plan_destroy(p);
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            CU_ASSERT_EQUAL(plan_exit(".onnx", buf, len), 0);
        }
        ob_free(&b);
    }
    check_json("{'tensors': [" X_IN "], 'nodes': ["
               "{'name': 'p', 'op': 'MyOp', 'domain': 'com.example', "
               "'inputs': ['x'], 'outputs': ['y']}], 'outputs': ['y']}",
               MP_ERR_UNKNOWN_OP, 10, "'MyOp' of domain 'com.example'");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "node 'p'"));
    char *ok = dq("{'tensors': [" X_IN ", {'name': 'y', 'bytes': 100}], "
                  "'nodes': [{'name': 'p', 'op': 'MyOp', 'inputs': ['x'], "
                  "'outputs': ['y']}], 'outputs': ['y']}");
    CU_ASSERT_EQUAL(plan_exit(".json", ok, strlen(ok)), 0);
    free(ok);
}

static void test_bad_dim(void)
{
    ob b;
    ob_relu(&b);
    static const int64_t neg[] = {-3, 2};
    ob_init_tensor(&b, "w", 2, neg);
    check_onnx(&b, MP_ERR_BAD_DIM, 11, "tensor 'w' has negative dim -3");
    ob_free(&b);
    /* a declared dim below -1 (-1 itself is unknown, as some exporters
     * write it) */
    static const int64_t neg_in[] = {2, -5};
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, neg_in);
    ob_node(&b, "Relu", "relu", "x", NULL, "y");
    ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_BAD_DIM, 11, "tensor 'x': dim 1 is negative (-5)");
    ob_free(&b);
    /* a rank above 16 */
    static const int64_t ones[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1,
                                     1, 1, 1, 1, 1, 1, 1, 1};
    ob_relu(&b);
    ob_init_tensor(&b, "w", 17, ones);
    check_onnx(&b, MP_ERR_BAD_DIM, 11, "rank 17");
    ob_free(&b);
    check_json(json_negative_dim,
               MP_ERR_BAD_DIM, 11, "shape[1]: dim 1 is negative (-2)");
    check_json("{'tensors': [{'name': 'x', 'dtype': 'int8', "
               "'shape': [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], "
               "'kind': 'input'}]}",
               MP_ERR_BAD_DIM, 11, "rank 17");
}

static void test_overflow(void)
{
    ob b;
    ob_init(&b, 8, 17);
    static const int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, huge);
    ob_node(&b, "Relu", "relu", "x", NULL, "y");
    ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    check_onnx(&b, MP_ERR_OVERFLOW, 12, "'x'");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "overflows 64 bits"));
    ob_free(&b);
    check_json(json_overflow,
               MP_ERR_OVERFLOW, 12, "overflows 64 bits");
}

void mp_register_bad_input(void)
{
    static CU_TestInfo tests[] = {
        {"a checkpoint, GGUF, safetensors, HDF5, TFLite: what it is, how to "
         "export, exit 6", test_foreign_formats},
        {"every unbound dim listed in one run, with --batch",
         test_unbound_dims},
        {"truncated or corrupt protobuf: MP_ERR_CORRUPT, exit 6",
         test_corrupt},
        {"cycle: MP_ERR_CYCLE, exit 7", test_cycle},
        {"missing producer: MP_ERR_NO_PRODUCER, exit 8",
         test_missing_producer},
        {"duplicate name: MP_ERR_DUPLICATE, exit 9", test_duplicate},
        {"unknown op: MP_ERR_UNKNOWN_OP, exit 10; declared: plans",
         test_unknown_op},
        {"negative dim or rank > 16: MP_ERR_BAD_DIM, exit 11", test_bad_dim},
        {"64-bit overflow: MP_ERR_OVERFLOW, exit 12", test_overflow},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("bad_input", tests);
}

#else /* no ONNX: the JSON half */

static void test_json_classes(void)
{
    printf("\n  bad_input: ONNX cases skipped (memplan built without ONNX)\n");
    check_json(json_cycle,
               MP_ERR_CYCLE, 7, "cycle through node");
    check_json(json_no_producer,
               MP_ERR_NO_PRODUCER, 8, "input \"foo\" is neither declared");
    check_json(json_duplicate, MP_ERR_DUPLICATE, 9,
               "duplicate tensor name \"x\"");
    check_json("{'tensors': [" X_IN "], 'nodes': ["
               "{'name': 'p', 'op': 'MyOp', 'inputs': ['x'], "
               "'outputs': ['y']}], 'outputs': ['y']}",
               MP_ERR_UNKNOWN_OP, 10, "MyOp");
    check_json(json_negative_dim,
               MP_ERR_BAD_DIM, 11, "dim 1 is negative (-2)");
    check_json(json_overflow,
               MP_ERR_OVERFLOW, 12, "overflows 64 bits");
}

void mp_register_bad_input(void)
{
    static CU_TestInfo tests[] = {
        {"JSON bad-input classes (no ONNX)", test_json_classes},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("bad_input", tests);
}
#endif
