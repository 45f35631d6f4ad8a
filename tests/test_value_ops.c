/* Shapes that depend on input VALUES (issue 3, planner/ops_values.c):
 * string values (planner/strval.c) through StringNormalizer and
 * StringSplit, NonMaxSuppression's selected boxes, ImageDecoder's image
 * size from the container header. Models are built here with the
 * generated protobuf-c code (tests/onnx_build.h); values are given as
 * mp_input_value (strings, floats) or as Constant nodes. Skipped with a
 * message when memplan is built without ONNX. */
#include "support.h"

#include "internal.h"
#include "shape.h"
#include "strval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MP_WITH_ONNX

static void test_skipped(void)
{
    CU_ASSERT_EQUAL(mp_onnx_available(), 0);
    fprintf(stderr, "\n  value_ops: skipped (memplan built without ONNX)\n");
}

void mp_register_value_ops(void)
{
    static CU_TestInfo tests[] = {{"skipped: no ONNX", test_skipped},
                                  CU_TEST_INFO_NULL};
    mp_test_add_suite("value_ops", tests);
}

#else
#include "onnx_build.h"

static mp_status load(ob *b, mp_ctx *ctx, const mp_input_value *vals,
                      size_t nv, mp_graph **g)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    o.values = vals;
    o.n_values = nv;
    *g = NULL;
    return mp_graph_load_onnx_buffer(ctx, buf, len, "t.onnx", &o, g);
}

static const mp_tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, name, &id) == MP_OK);
    return &g->tensors[id];
}

static void assert_shape(const mp_graph *g, const char *name, int rank,
                         const int64_t *dims)
{
    const mp_tensor *t = tensor(g, name);
    CU_ASSERT_EQUAL_FATAL(t->rank, rank);
    for (int i = 0; i < rank; i++)
        CU_ASSERT_EQUAL(t->dims[i], dims[i]);
}

/* t's value as strings joined by '|' into buf */
static const char *strings_of(const mp_graph *g, const mp_tensor *t,
                              char *buf, size_t cap)
{
    size_t w = 0;
    buf[0] = '\0';
    if (!t->value)
        return "(unknown)";
    for (uint32_t i = 0; i < t->n_value; i++) {
        const char *s;
        size_t len;
        CU_ASSERT_FATAL(mp_str_get(g, t->value[i], &s, &len));
        int k = snprintf(buf + w, cap - w, "%s%.*s", i ? "|" : "", (int)len,
                         s);
        CU_ASSERT_FATAL(k >= 0 && (size_t)k < cap - w);
        w += (size_t)k;
    }
    return buf;
}

static void attr_str(ob *b, Onnx__NodeProto *n, const char *name,
                     const char *v)
{
    Onnx__AttributeProto *a =
        ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
}

static void attr_strs(ob *b, Onnx__NodeProto *n, const char *name,
                      const char *const *v, size_t cnt)
{
    Onnx__AttributeProto *a =
        ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->strings = ob_new(b, (cnt ? cnt : 1) * sizeof *a->strings);
    for (size_t i = 0; i < cnt; i++) {
        a->strings[i].data = (uint8_t *)v[i];
        a->strings[i].len = strlen(v[i]);
    }
    a->n_strings = cnt;
}

/* ---- strings ---------------------------------------------------------------- */

static const char *const week[] = {"monday", "tuesday", "wednesday",
                                   "thursday"};

/* x [rank 1 or 2] -> StringNormalizer -> y */
static Onnx__NodeProto *normalizer_model(ob *b, int rank, int64_t c)
{
    int64_t dims[2] = {rank == 2 ? 1 : c, c};
    ob_init(b, 8, 10);
    ob_input(b, "x", MP_DTYPE_STRING, rank, dims);
    Onnx__NodeProto *n = ob_node(b, "StringNormalizer", "sn", "x", NULL, "y");
    ob_output(b, "y", MP_DTYPE_STRING, -1, NULL);
    return n;
}

static void test_normalizer(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    char buf[256];
    ob b;
    static const char *const stop[] = {"monday"};
    /* case-sensitive, LOWER: "monday" dropped, the rest lowered */
    static const char *const x1[] = {"monday", "Tuesday", "wednesday",
                                     "Monday"};
    static const int64_t d4[] = {4};
    Onnx__NodeProto *n = normalizer_model(&b, 1, 4);
    attr_strs(&b, n, "stopwords", stop, 1);
    attr_str(&b, n, "case_change_action", "LOWER");
    ob_attr_int(&b, n, "is_case_sensitive", 1);
    mp_input_value iv = {.name = "x", .dtype = MP_DTYPE_STRING, .rank = 1,
                         .dims = d4, .strings = x1};
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv, 1, &g), MP_OK);
    static const int64_t w3[] = {3};
    assert_shape(g, "y", 1, w3);
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "y"), buf, sizeof buf),
                           "tuesday|wednesday|monday");
    mp_graph_destroy(g);
    ob_free(&b);
    /* case-insensitive, UPPER, [1, C]: both Mondays dropped */
    n = normalizer_model(&b, 2, 4);
    attr_strs(&b, n, "stopwords", stop, 1);
    attr_str(&b, n, "case_change_action", "UPPER");
    static const int64_t d14[] = {1, 4}, w12[] = {1, 2};
    iv.rank = 2;
    iv.dims = d14;
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv, 1, &g), MP_OK);
    assert_shape(g, "y", 2, w12);
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "y"), buf, sizeof buf),
                           "TUESDAY|WEDNESDAY");
    mp_graph_destroy(g);
    ob_free(&b);
    /* every element dropped: [1] holding "" */
    static const char *const x2[] = {"monday", "MONDAY"};
    static const int64_t d2[] = {2}, w1[] = {1};
    n = normalizer_model(&b, 1, 2);
    attr_strs(&b, n, "stopwords", stop, 1);
    mp_input_value iv2 = {.name = "x", .dtype = MP_DTYPE_STRING, .rank = 1,
                          .dims = d2, .strings = x2};
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv2, 1, &g), MP_OK);
    assert_shape(g, "y", 1, w1);
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "y"), buf, sizeof buf),
                           "");
    CU_ASSERT_EQUAL(tensor(g, "y")->n_value, 1u);
    mp_graph_destroy(g);
    /* case-sensitive: "MONDAY" stays */
    ob_attr_int(&b, n, "is_case_sensitive", 1);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv2, 1, &g), MP_OK);
    assert_shape(g, "y", 1, w1);
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "y"), buf, sizeof buf),
                           "MONDAY");
    mp_graph_destroy(g);
    /* without the value: the input's length, an upper bound */
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, NULL, 0, &g), MP_OK);
    assert_shape(g, "y", 1, d2);
    CU_ASSERT_PTR_NULL(tensor(g, "y")->value);
    mp_graph_destroy(g);
    ob_free(&b);
    /* non-ASCII under case-insensitive matching: not decided (upper
     * bound), as Unicode case rules are not memplan's */
    static const char *const x3[] = {"\xc3\x89t\xc3\xa9", "monday"};
    n = normalizer_model(&b, 1, 2);
    attr_strs(&b, n, "stopwords", stop, 1);
    iv2.strings = x3;
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv2, 1, &g), MP_OK);
    assert_shape(g, "y", 1, d2);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* a Constant value_strings feeding StringNormalizer; Identity carries the
 * string value (ids move like integers) */
static void test_constant_strings(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    char buf[256];
    ob b;
    ob_init(&b, 8, 13);
    Onnx__NodeProto *c = ob_node(&b, "Constant", "c", "", NULL, "k");
    c->n_input = 0;
    attr_strs(&b, c, "value_strings", week, 4);
    ob_node(&b, "Identity", "id", "k", NULL, "x");
    static const char *const stop[] = {"tuesday", "thursday", "friday"};
    Onnx__NodeProto *n = ob_node(&b, "StringNormalizer", "sn", "x", NULL,
                                 "y");
    attr_strs(&b, n, "stopwords", stop, 3);
    ob_output(&b, "y", MP_DTYPE_STRING, -1, NULL);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, NULL, 0, &g), MP_OK);
    static const int64_t w2[] = {2};
    assert_shape(g, "y", 1, w2);
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "x"), buf, sizeof buf),
                           "monday|tuesday|wednesday|thursday");
    CU_ASSERT_STRING_EQUAL(strings_of(g, tensor(g, "y"), buf, sizeof buf),
                           "monday|wednesday");
    /* interned: equal strings have equal ids */
    CU_ASSERT_EQUAL(tensor(g, "x")->value[0], tensor(g, "y")->value[0]);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* x [n] -> StringSplit -> (y, z) */
static Onnx__NodeProto *split_model(ob *b, int64_t n)
{
    int64_t dims[1] = {n};
    ob_init(b, 8, 20);
    ob_input(b, "x", MP_DTYPE_STRING, 1, dims);
    Onnx__NodeProto *nd = ob_node(b, "StringSplit", "ss", "x", NULL, "y");
    nd->output = ob_new(b, 2 * sizeof *nd->output);
    nd->output[0] = (char *)"y";
    nd->output[1] = (char *)"z";
    nd->n_output = 2;
    ob_output(b, "y", MP_DTYPE_STRING, -1, NULL);
    ob_output(b, "z", MP_DTYPE_INT64, -1, NULL);
    return nd;
}

/* StringSplit of strs with delimiter (NULL: none) and maxsplit (< -1:
 * none): y's shape [n, want_k], z's counts and y's strings */
static void check_split(const char *const *strs, int64_t n,
                        const char *delim, int64_t maxsplit, int64_t want_k,
                        const int64_t *want_z, const char *want_y)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    char buf[512];
    ob b;
    Onnx__NodeProto *nd = split_model(&b, n);
    if (delim)
        attr_str(&b, nd, "delimiter", delim);
    if (maxsplit >= -1)
        ob_attr_int(&b, nd, "maxsplit", maxsplit);
    int64_t dims[1] = {n}, wy[2] = {n, want_k};
    mp_input_value iv = {.name = "x", .dtype = MP_DTYPE_STRING, .rank = 1,
                         .dims = dims, .strings = strs};
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, &iv, 1, &g), MP_OK);
    assert_shape(g, "y", 2, wy);
    assert_shape(g, "z", 1, dims);
    const mp_tensor *z = tensor(g, "z");
    if (n > 0) {
        CU_ASSERT_FATAL(z->value && z->n_value == (uint32_t)n);
        for (int64_t i = 0; i < n; i++)
            CU_ASSERT_EQUAL(z->value[i], want_z[i]);
    }
    if (want_y) {
        const char *got = strings_of(g, tensor(g, "y"), buf, sizeof buf);
        CU_ASSERT_STRING_EQUAL(got, want_y);
        if (strcmp(got, want_y))
            printf("\n  StringSplit: got '%s', want '%s'\n", got, want_y);
    }
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

static void test_split(void)
{
    /* whitespace runs; leading/trailing space dropped; "" gives 0 */
    static const char *const a[] = {"  hello   world ", "one", "", " \t\n"};
    static const int64_t za[] = {2, 1, 0, 0};
    check_split(a, 4, NULL, -2, 2, za, "hello|world|one|||||");
    /* a delimiter: consecutive ones delimit empty strings */
    static const char *const c[] = {"1,2,,3", ",", "abc"};
    static const int64_t zc[] = {4, 2, 1};
    check_split(c, 3, ",", -2, 4, zc, "1|2||3|||||abc|||");
    /* a longer delimiter */
    static const char *const d[] = {"a<>b<><>c", "<>"};
    static const int64_t zd[] = {4, 2};
    check_split(d, 2, "<>", -2, 4, zd, "a|b||c||||");
    /* maxsplit: the rest stays whole (leading space skipped in whitespace
     * mode, trailing kept) */
    static const char *const e[] = {"a b  c d ", "x,y,z"};
    static const int64_t ze[] = {3, 1};
    check_split(e, 2, NULL, 2, 3, ze, "a|b|c d |x,y,z||");
    static const int64_t ze2[] = {1, 3};
    check_split(e, 2, ",", 2, 3, ze2, "a b  c d |||x|y|z");
    /* maxsplit 0: no split */
    static const int64_t ze0[] = {1, 1};
    check_split(e, 2, NULL, 0, 1, ze0, "a b  c d |x,y,z");
    /* Unicode spaces (U+3000, U+00A0) split in whitespace mode */
    static const char *const u[] = {"a\xe3\x80\x80" "b\xc2\xa0" "c"};
    static const int64_t zu[] = {3};
    check_split(u, 1, NULL, -2, 3, zu, "a|b|c");
    /* an empty tensor: [0, 0] */
    check_split(NULL, 0, NULL, -2, 0, NULL, NULL);
}

/* without the value StringSplit's token axis is unknown */
static void test_split_unknown(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    ob b;
    split_model(&b, 3);
    CU_ASSERT_EQUAL(load(&b, ctx, NULL, 0, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "StringSplit"));
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* the STRINGS attribute encoding: any bytes (NUL too) round-trip */
static void test_strings_attr(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    uint32_t in, out, node;
    mp_tensor_desc d = {"a", MP_DTYPE_FLOAT32, 0, NULL, 0, MP_KIND_INPUT};
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &d, &in), MP_OK);
    d.name = "b";
    d.kind = MP_KIND_ACTIVATION;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &d, &out), MP_OK);
    mp_node_desc nd = {"n", "Relu", NULL, &in, 1, &out, 1, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &nd, &node), MP_OK);
    const char *s[] = {"", "a\0b", "\xff,:"};
    size_t len[] = {0, 3, 3};
    CU_ASSERT_EQUAL_FATAL(mp_graph_set_attr_strings(g, node, "w", s, len, 3),
                          MP_OK);
    size_t n;
    const char *cur;
    CU_ASSERT_FATAL(mp_attr_strings(&g->nodes[node], "w", &n, &cur));
    CU_ASSERT_EQUAL_FATAL(n, 3u);
    for (size_t i = 0; i < 3; i++) {
        char buf[8];
        size_t l;
        CU_ASSERT_FATAL(mp_attr_strings_next(&cur, buf, sizeof buf, &l));
        CU_ASSERT_EQUAL(l, len[i]);
        CU_ASSERT(memcmp(buf, s[i], l) == 0);
    }
    /* a string longer than the buffer is refused */
    CU_ASSERT_FATAL(mp_attr_strings(&g->nodes[node], "w", &n, &cur));
    char small[2];
    size_t l;
    CU_ASSERT(mp_attr_strings_next(&cur, small, sizeof small, &l));
    CU_ASSERT(!mp_attr_strings_next(&cur, small, sizeof small, &l));
    CU_ASSERT(!mp_attr_strings(&g->nodes[node], "nope", &n, &cur));
    /* interning: same bytes, same id; ids of another string differ */
    int64_t i1, i2, i3;
    CU_ASSERT_EQUAL(mp_str_intern(g, "a\0b", 3, &i1), MP_OK);
    CU_ASSERT_EQUAL(mp_str_intern(g, "a\0c", 3, &i2), MP_OK);
    CU_ASSERT_EQUAL(mp_str_intern(g, "a\0b", 3, &i3), MP_OK);
    CU_ASSERT(i1 >= 0 && i2 >= 0 && i1 == i3 && i1 != i2);
    CU_ASSERT(!mp_str_get(g, 12345, &cur, &l));
    CU_ASSERT(!mp_str_get(g, -1, &cur, &l));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

void mp_register_value_ops(void)
{
    static CU_TestInfo tests[] = {
        {"StringNormalizer: stopwords, case, all dropped, bound", test_normalizer},
        {"Constant strings through Identity into StringNormalizer",
         test_constant_strings},
        {"StringSplit: whitespace, delimiter, maxsplit, empty", test_split},
        {"StringSplit without values: token axis unknown", test_split_unknown},
        {"STRINGS attributes and interning", test_strings_attr},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("value_ops", tests);
}
#endif
