/* Malformed ONNX models are refused at load, naming the place, never
 * misread: a graph input listed twice, an initializer whose dims or dtype
 * disagree with the graph input of its name (MP_ERR_DUPLICATE, exit 9);
 * tensor data of the wrong length, a negative ir_version or opset version,
 * a name holding a NUL byte or bytes that are not UTF-8 (MP_ERR_CORRUPT,
 * exit 6); a string attribute holding a NUL byte (MP_ERR_UNSUPPORTED,
 * exit 3). Names with a NUL or bad UTF-8 cannot be written by protobuf-c
 * from C strings: those models are packed with a placeholder byte, then
 * patched. */
#define _DEFAULT_SOURCE 1 /* mkstemps */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MP_WITH_ONNX
#include "onnx_build.h"

static char msg[1024], out[1 << 14];

/* memplan CMD on the bytes as a .onnx file: the exit code, stderr in out */
static int cli_exit(const char *cmd_fmt, const uint8_t *buf, size_t len)
{
    char path[64], cmd[512], tail[256];
    snprintf(path, sizeof path, "/tmp/mp_chk_XXXXXX.onnx");
    int fd = mkstemps(path, 5);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, buf, len) == (ssize_t)len);
    close(fd);
    snprintf(tail, sizeof tail, cmd_fmt, path);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", MP_CLI_PATH, tail);
    int rc = mp_test_run(cmd, out, sizeof out);
    unlink(path);
    return rc;
}

static mp_status load_bytes(const uint8_t *buf, size_t len)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st =
        mp_graph_load_onnx_buffer(ctx, buf, len, "bad.onnx", NULL, &g);
    snprintf(msg, sizeof msg, "%s", mp_ctx_message(ctx));
    CU_ASSERT((st == MP_OK) == (g != NULL));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return st;
}

/* The packed model, with the first occurrence of each placeholder byte
 * '@' in turn replaced by the bytes of patch (NULL: none). */
static uint8_t *packed(ob *b, const char *patch, size_t *len)
{
    uint8_t *buf = ob_pack(b, len);
    for (const char *p = patch; p && *p; p++) {
        uint8_t *at = memchr(buf, '@', *len);
        CU_ASSERT_FATAL(at != NULL);
        *at = (uint8_t)(*p == '0' ? 0 : *p);
    }
    return buf;
}

/* The model's load status and message, and `memplan plan`'s exit and
 * message. patch: see packed ('0' stands for a NUL byte). */
static void check(ob *b, const char *patch, mp_status want, int want_exit,
                  const char *says)
{
    size_t len;
    uint8_t *buf = packed(b, patch, &len);
    mp_status st = load_bytes(buf, len);
    if (st != want || !strstr(msg, says))
        printf("\n  %s (want %s): %s\n", mp_status_name(st),
               mp_status_name(want), msg);
    CU_ASSERT_EQUAL(st, want);
    if (want) {
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "bad.onnx: "));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, says));
    }
    int rc = cli_exit("plan %s", buf, len);
    if (rc != want_exit)
        printf("\n  exit %d (want %d): %s\n", rc, want_exit, out);
    CU_ASSERT_EQUAL(rc, want_exit);
    if (want)
        CU_ASSERT_PTR_NOT_NULL(strstr(out, says));
}

static const int64_t d23[] = {2, 3}, d32[] = {3, 2}, d4[] = {4};

/* x -> Relu -> y */
static void relu_model(ob *b)
{
    ob_init(b, 8, 17);
    ob_input(b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(b, "Relu", "relu", "x", NULL, "y");
    ob_output(b, "y", MP_DTYPE_FLOAT32, -1, NULL);
}

static void test_duplicate_input(void)
{
    ob b;
    relu_model(&b);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 1, d4);
    check(&b, NULL, MP_ERR_DUPLICATE, 9,
          "graph input 'x' is listed twice (inputs 0 and 1), as [2,3] and "
          "as [4]");
    ob_free(&b);
    /* the same type twice is still two inputs of one name */
    relu_model(&b);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    check(&b, NULL, MP_ERR_DUPLICATE, 9,
          "graph input 'x' is listed twice (inputs 0 and 1)");
    CU_ASSERT_PTR_NULL(strstr(msg, " as "));
    ob_free(&b);
    relu_model(&b);
    ob_input(&b, "x", MP_DTYPE_INT64, 2, d23);
    check(&b, NULL, MP_ERR_DUPLICATE, 9, "(and data types differ)");
    ob_free(&b);
}

/* IR 3: the initializer w is listed as a graph input too */
static void weight_model(ob *b, int elem, int rank, const int64_t *dims)
{
    ob_init(b, 3, 9);
    ob_input(b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_init_tensor(b, "w", 2, d23);
    ob_input(b, "w", elem, rank, dims);
    ob_node(b, "Add", "add", "x", "w", "y");
    ob_output(b, "y", MP_DTYPE_FLOAT32, -1, NULL);
}

static void test_initializer_vs_input(void)
{
    ob b;
    weight_model(&b, MP_DTYPE_FLOAT32, 2, d23); /* agrees: loads */
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    weight_model(&b, MP_DTYPE_FLOAT32, -1, NULL); /* no shape: agrees */
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    weight_model(&b, MP_DTYPE_FLOAT32, 2, d32);
    check(&b, NULL, MP_ERR_DUPLICATE, 9,
          "initializer 'w' has dims [2,3], but graph input 'w' (input 1) "
          "declares [3,2]");
    ob_free(&b);
    weight_model(&b, MP_DTYPE_FLOAT32, 1, d4);
    check(&b, NULL, MP_ERR_DUPLICATE, 9, "declares [4]");
    ob_free(&b);
    weight_model(&b, MP_DTYPE_INT64, 2, d23);
    check(&b, NULL, MP_ERR_DUPLICATE, 9,
          "initializer 'w' is float32, but graph input 'w' (input 1) "
          "declares int64");
    ob_free(&b);
    /* a symbolic dim agrees with any size */
    weight_model(&b, MP_DTYPE_FLOAT32, 2, d23);
    Onnx__TensorShapeProto__Dimension *d =
        b.top->input[1]->type->tensor_type->shape->dim[1];
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d->dim_param = (char *)"n";
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
}

/* x + w with w [2,3] of dtype dt holding raw_data of raw bytes (raw < 0:
 * int64_data of -raw values) */
static void data_model(ob *b, int dt, long raw)
{
    static uint8_t bytes[64];
    static int64_t ints[16];
    ob_init(b, 8, 17);
    ob_input(b, "x", dt, 2, d23);
    ob_init_tensor(b, "w", 2, d23);
    Onnx__TensorProto *t = b->top->initializer[0];
    t->has_data_location = 0;
    t->data_type = dt;
    if (raw >= 0) {
        t->has_raw_data = 1;
        t->raw_data.len = (size_t)raw;
        t->raw_data.data = bytes;
    } else {
        t->n_int64_data = (size_t)-raw;
        t->int64_data = ints;
    }
    ob_node(b, "Add", "add", "x", "w", "y");
    ob_output(b, "y", dt, -1, NULL);
}

static void test_tensor_data(void)
{
    ob b;
    data_model(&b, MP_DTYPE_FLOAT32, 24);
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    data_model(&b, MP_DTYPE_FLOAT32, 20);
    check(&b, NULL, MP_ERR_CORRUPT, 6,
          "tensor 'w': raw_data holds 20 bytes, but its dims [2,3] of "
          "float32 need 24");
    ob_free(&b);
    data_model(&b, MP_DTYPE_FLOAT32, 28);
    check(&b, NULL, MP_ERR_CORRUPT, 6, "raw_data holds 28 bytes");
    ob_free(&b);
    data_model(&b, MP_DTYPE_FLOAT32, 0);
    check(&b, NULL, MP_ERR_CORRUPT, 6, "raw_data holds 0 bytes");
    ob_free(&b);
    data_model(&b, MP_DTYPE_INT64, 48);
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    data_model(&b, MP_DTYPE_INT64, -6);
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    data_model(&b, MP_DTYPE_INT64, -5);
    check(&b, NULL, MP_ERR_CORRUPT, 6,
          "tensor 'w': int64_data holds 5 values, but its dims [2,3] of "
          "int64 need 6");
    ob_free(&b);
    /* 4-bit elements: two per byte, rounded up */
    data_model(&b, MP_DTYPE_INT4, 3);
    size_t len;
    uint8_t *buf = packed(&b, NULL, &len);
    CU_ASSERT_NOT_EQUAL(load_bytes(buf, len), MP_ERR_CORRUPT);
    CU_ASSERT_PTR_NULL(strstr(msg, "raw_data"));
    ob_free(&b);
    data_model(&b, MP_DTYPE_INT4, 4);
    buf = packed(&b, NULL, &len);
    CU_ASSERT_EQUAL(load_bytes(buf, len), MP_ERR_CORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "need 3"));
    ob_free(&b);
    /* a Constant's value and a tensor attribute are checked too */
    static uint8_t five[5];
    Onnx__TensorProto *t;
    for (int k = 0; k < 2; k++) {
        ob_init(&b, 8, 17);
        Onnx__NodeProto *n = ob_node(&b, k ? "ConstantOfShape" : "Constant",
                                     "c", k ? "s" : NULL, NULL, "y");
        if (k) {
            ob_input(&b, "s", MP_DTYPE_INT64, 1, d4);
        } else {
            n->n_input = 0;
        }
        ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
        t = ob_new(&b, sizeof *t);
        onnx__tensor_proto__init(t);
        t->has_data_type = 1;
        t->data_type = MP_DTYPE_FLOAT32;
        t->n_dims = 1;
        t->dims = (int64_t *)d4;
        t->has_raw_data = 1;
        t->raw_data.len = 5;
        t->raw_data.data = five;
        ob_attr(&b, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)
            ->t = t;
        check(&b, NULL, MP_ERR_CORRUPT, 6,
              "node 'c' attribute 'value': raw_data holds 5 bytes, but its "
              "dims [4] of float32 need 16");
        ob_free(&b);
    }
}

static void test_negative_versions(void)
{
    ob b;
    relu_model(&b);
    b.opset.version = -1;
    check(&b, NULL, MP_ERR_CORRUPT, 6,
          "opset_import 0 (domain 'ai.onnx') has a negative version (-1)");
    ob_free(&b);
    relu_model(&b);
    b.model.ir_version = -3;
    check(&b, NULL, MP_ERR_CORRUPT, 6,
          "the model's ir_version is negative (-3)");
    ob_free(&b);
}

static void test_bad_names(void)
{
    ob b;
    /* a NUL inside a tensor name: the first place it is written is the
     * node's output */
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_node(&b, "Relu", "relu", "x", NULL, "y@z");
    ob_output(&b, "y@z", MP_DTYPE_FLOAT32, -1, NULL);
    check(&b, "0", MP_ERR_CORRUPT, 6,
          "graph 'test' > node 0 'relu' ('Relu') > output 0: "
          "'y\\x00z' holds a NUL byte");
    ob_free(&b);
    /* invalid UTF-8 in a node's name; in an initializer's name */
    relu_model(&b);
    b.top->node[0]->name = (char *)"re@u";
    check(&b, "\xff", MP_ERR_CORRUPT, 6,
          "graph 'test' > node 0 're\\xffu' ('Relu') > name: 're\\xffu' is "
          "not valid UTF-8 (byte 0xff");
    ob_free(&b);
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, d23);
    ob_init_tensor(&b, "w@", 2, d23);
    ob_node(&b, "Add", "add", "x", "w@", "y");
    ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    /* the node's input comes first in the file; patch both */
    check(&b, "\xe9\xe9", MP_ERR_CORRUPT, 6,
          "graph 'test' > node 0 'add' ('Add') > input 1: 'w\\xe9' is not "
          "valid UTF-8");
    ob_free(&b);
    /* an overlong encoding of NUL, a surrogate, a cut sequence */
    const char *bad[] = {"\xc0\x80", "\xed\xa0\x80", "\xe2\x82"};
    for (int i = 0; i < 3; i++) {
        relu_model(&b);
        b.top->node[0]->name = (char *)(i == 0   ? "r@@"
                                        : i == 1 ? "r@@@"
                                                 : "r@@");
        check(&b, bad[i], MP_ERR_CORRUPT, 6, "is not valid UTF-8");
        ob_free(&b);
    }
    /* in a dim_param, in the graph's name */
    relu_model(&b);
    Onnx__TensorShapeProto__Dimension *d =
        b.top->input[0]->type->tensor_type->shape->dim[0];
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d->dim_param = (char *)"b@";
    check(&b, "\x80", MP_ERR_CORRUPT, 6,
          "graph 'test' > input 0 'x' > type > dim 0 > dim_param: 'b\\x80'");
    ob_free(&b);
    relu_model(&b);
    b.top->name = (char *)"g@";
    check(&b, "0", MP_ERR_CORRUPT, 6, "graph 'g\\x00' > name: 'g\\x00' holds "
                                      "a NUL byte");
    ob_free(&b);
    /* UTF-8 names load, and `convert` writes them */
    relu_model(&b);
    b.top->node[0]->output[0] = (char *)"y\xc3\xa9\xe5\x90\x8d\xf0\x9f\x98\x80";
    b.top->output[0]->name = b.top->node[0]->output[0];
    check(&b, NULL, MP_OK, 0, "");
    ob_free(&b);
    /* `convert` refuses a bad name (it wrote it raw before) */
    relu_model(&b);
    b.top->node[0]->name = (char *)"re@u";
    size_t len;
    uint8_t *buf = packed(&b, "\xff", &len);
    CU_ASSERT_EQUAL(cli_exit("convert %s", buf, len), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "is not valid UTF-8"));
    ob_free(&b);
}

static void test_string_attr_nul(void)
{
    ob b;
    relu_model(&b);
    Onnx__AttributeProto *a =
        ob_attr(&b, b.top->node[0], "note",
                ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)"ab@cd";
    a->s.len = 5;
    check(&b, "0", MP_ERR_UNSUPPORTED, 3,
          "node 'relu' attribute 'note': the string holds a NUL byte (at 2)");
    ob_free(&b);
}

void mp_register_onnx_checks(void)
{
    static CU_TestInfo tests[] = {
        {"a graph input listed twice: exit 9", test_duplicate_input},
        {"an initializer against its graph input: exit 9",
         test_initializer_vs_input},
        {"tensor data of the wrong length: exit 6", test_tensor_data},
        {"negative ir_version or opset version: exit 6",
         test_negative_versions},
        {"a NUL or bad UTF-8 in a name: exit 6", test_bad_names},
        {"a NUL in a string attribute: exit 3", test_string_attr_nul},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("onnx_checks", tests);
}

#else

void mp_register_onnx_checks(void) {}

#endif
