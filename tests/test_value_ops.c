/* Shapes that depend on input VALUES (issue 3, core/ops/ops_values.c):
 * string values (core/strval.c) through StringNormalizer and
 * StringSplit, NonMaxSuppression's selected boxes, ImageDecoder's image
 * size from the container header. Models are built here with the
 * generated protobuf-c code (tests/onnx_build.h); values are given as
 * mp_input_value (strings, floats) or as Constant nodes. Skipped with a
 * message when memplan is built without ONNX. */
#include "support.h"

#include "ir.h"
#include "shape.h"
#include "strval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* t's value as strings joined by '|' into buf */
static const char *strings_of(const mp_graph *g, const mp__tensor *t,
                              char *buf, size_t cap)
{
    size_t w = 0;
    buf[0] = '\0';
    if (!t->value)
        return "(unknown)";
    for (uint32_t i = 0; i < t->n_value; i++) {
        const char *s;
        size_t len;
        CU_ASSERT_FATAL(mp__str_get(g, t->value[i], &s, &len));
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
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv, 1, &g), MP_OK);
    static const int64_t w3[] = {3};
    mp_test_assert_shape(g, "y", 1, w3);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
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
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 2, w12);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
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
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv2, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 1, w1);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
                           "");
    CU_ASSERT_EQUAL(ob_tensor(g, "y")->n_value, 1u);
    mp_graph_destroy(g);
    /* case-sensitive: "MONDAY" stays */
    ob_attr_int(&b, n, "is_case_sensitive", 1);
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv2, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 1, w1);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
                           "MONDAY");
    mp_graph_destroy(g);
    /* without the value: the input's length, an upper bound */
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    mp_test_assert_shape(g, "y", 1, d2);
    CU_ASSERT_PTR_NULL(ob_tensor(g, "y")->value);
    mp_graph_destroy(g);
    ob_free(&b);
    /* non-ASCII under case-insensitive matching: not decided (upper
     * bound), as Unicode case rules are not memplan's */
    static const char *const x3[] = {"\xc3\x89t\xc3\xa9", "monday"};
    n = normalizer_model(&b, 1, 2);
    attr_strs(&b, n, "stopwords", stop, 1);
    iv2.strings = x3;
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv2, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 1, d2);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* the stopwords survive ONNX export (STRINGS attribute) and reload */
static void test_normalizer_roundtrip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    char buf[256], path[64];
    ob b;
    static const char *const stop[] = {"monday", "a\xff"};
    static const char *const x1[] = {"monday", "Tuesday", "a\xff", "b"};
    static const int64_t d4[] = {4}, w2[] = {2};
    Onnx__NodeProto *n = normalizer_model(&b, 1, 4);
    attr_strs(&b, n, "stopwords", stop, 2);
    ob_attr_int(&b, n, "is_case_sensitive", 1);
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    snprintf(path, sizeof path, "/tmp/memplan_value_ops_%ld.onnx",
             (long)getpid());
    CU_ASSERT_EQUAL_FATAL(mp_graph_save_onnx(g, path), MP_OK);
    mp_graph_destroy(g);
    /* written as the STRINGS attribute "stopwords", bytes as given */
    static uint8_t file[1 << 16];
    FILE *f = fopen(path, "rb");
    CU_ASSERT_FATAL(f != NULL);
    size_t flen = fread(file, 1, sizeof file, f);
    fclose(f);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, flen, file);
    CU_ASSERT_FATAL(m && m->graph && m->graph->n_node == 1);
    const Onnx__NodeProto *wn = m->graph->node[0];
    int found = 0;
    for (size_t i = 0; i < wn->n_attribute; i++) {
        const Onnx__AttributeProto *a = wn->attribute[i];
        if (strcmp(a->name, "stopwords") != 0)
            continue;
        found = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS &&
                a->n_strings == 2 && a->strings[1].len == 2 &&
                memcmp(a->strings[1].data, "a\xff", 2) == 0;
    }
    CU_ASSERT(found);
    onnx__model_proto__free_unpacked(m, NULL);
    mp_input_value iv = {.name = "x", .dtype = MP_DTYPE_STRING, .rank = 1,
                         .dims = d4, .strings = x1};
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    o.values = &iv;
    o.n_values = 1;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_onnx(ctx, path, &o, &g), MP_OK);
    remove(path);
    mp_test_assert_shape(g, "y", 1, w2);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
                           "Tuesday|b");
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
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    static const int64_t w2[] = {2};
    mp_test_assert_shape(g, "y", 1, w2);
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "x"), buf, sizeof buf),
                           "monday|tuesday|wednesday|thursday");
    CU_ASSERT_STRING_EQUAL(strings_of(g, ob_tensor(g, "y"), buf, sizeof buf),
                           "monday|wednesday");
    /* interned: equal strings have equal ids */
    CU_ASSERT_EQUAL(ob_tensor(g, "x")->value[0], ob_tensor(g, "y")->value[0]);
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
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 2, wy);
    mp_test_assert_shape(g, "z", 1, dims);
    const mp__tensor *z = ob_tensor(g, "z");
    if (n > 0) {
        CU_ASSERT_FATAL(z->value && z->n_value == (uint32_t)n);
        for (int64_t i = 0; i < n; i++)
            CU_ASSERT_EQUAL(z->value[i], want_z[i]);
    }
    if (want_y) {
        const char *got = strings_of(g, ob_tensor(g, "y"), buf, sizeof buf);
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
    CU_ASSERT_EQUAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_ERR_SHAPE);
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
    CU_ASSERT_EQUAL_FATAL(mp__graph_set_attr_strings(g, node, "w", s, len, 3),
                          MP_OK);
    size_t n;
    const char *cur;
    CU_ASSERT_FATAL(mp__attr_strings(&g->nodes[node], "w", &n, &cur));
    CU_ASSERT_EQUAL_FATAL(n, 3u);
    for (size_t i = 0; i < 3; i++) {
        char buf[8];
        size_t l;
        CU_ASSERT_FATAL(mp__attr_strings_next(&cur, buf, sizeof buf, &l));
        CU_ASSERT_EQUAL(l, len[i]);
        CU_ASSERT(memcmp(buf, s[i], l) == 0);
    }
    /* a string longer than the buffer is refused */
    CU_ASSERT_FATAL(mp__attr_strings(&g->nodes[node], "w", &n, &cur));
    char small[2];
    size_t l;
    CU_ASSERT(mp__attr_strings_next(&cur, small, sizeof small, &l));
    CU_ASSERT(!mp__attr_strings_next(&cur, small, sizeof small, &l));
    CU_ASSERT(!mp__attr_strings(&g->nodes[node], "nope", &n, &cur));
    /* interning: same bytes, same id; ids of another string differ */
    int64_t i1, i2, i3;
    CU_ASSERT_EQUAL(mp__str_intern(g, "a\0b", 3, &i1), MP_OK);
    CU_ASSERT_EQUAL(mp__str_intern(g, "a\0c", 3, &i2), MP_OK);
    CU_ASSERT_EQUAL(mp__str_intern(g, "a\0b", 3, &i3), MP_OK);
    CU_ASSERT(i1 >= 0 && i2 >= 0 && i1 == i3 && i1 != i2);
    CU_ASSERT(!mp__str_get(g, 12345, &cur, &l));
    CU_ASSERT(!mp__str_get(g, -1, &cur, &l));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- NonMaxSuppression ------------------------------------------------------ */

/* boxes [B, N, 4], scores [B, C, N] -> NonMaxSuppression -> sel; the
 * optional inputs given when have_* */
static mp_status nms_run(mp_ctx *ctx, int64_t B, int64_t C, int64_t N,
                         const double *boxes, const double *scores,
                         int center, const int64_t *max, const double *iou,
                         const double *thr, int bind_scores, int64_t *rows)
{
    ob b;
    ob_init(&b, 8, 11);
    int64_t bd[3] = {B, N, 4}, sd[3] = {B, C, N}, one[1] = {1};
    ob_input(&b, "boxes", MP_DTYPE_FLOAT32, 3, bd);
    ob_input(&b, "scores", MP_DTYPE_FLOAT32, 3, sd);
    const char *ins[5] = {"boxes", "scores", "", "", ""};
    int nin = 2;
    mp_input_value v[5];
    size_t nv = 0;
    memset(v, 0, sizeof v);
    v[nv++] = (mp_input_value){.name = "boxes", .dtype = MP_DTYPE_FLOAT32,
                               .rank = 3, .dims = bd, .floats = boxes};
    if (bind_scores)
        v[nv++] = (mp_input_value){.name = "scores",
                                   .dtype = MP_DTYPE_FLOAT32, .rank = 3,
                                   .dims = sd, .floats = scores};
    /* the optional inputs, in order: max, iou, thr */
    const char *const opt_names[3] = {"max", "iou", "thr"};
    const double *const opt_f[3] = {NULL, iou, thr};
    for (int k = 0; k < 3; k++) {
        if (k == 0 ? !max : !opt_f[k])
            continue;
        int dt = k == 0 ? MP_DTYPE_INT64 : MP_DTYPE_FLOAT32;
        ob_input(&b, opt_names[k], dt, 1, one);
        v[nv++] = (mp_input_value){.name = opt_names[k], .dtype = dt,
                                   .rank = 1, .dims = one,
                                   .ints = k == 0 ? max : NULL,
                                   .floats = opt_f[k]};
        ins[2 + k] = opt_names[k];
        nin = 3 + k;
    }
    Onnx__NodeProto *n = ob_node(&b, "NonMaxSuppression", "nms", "boxes",
                                 NULL, "sel");
    n->input = ob_new(&b, 5 * sizeof *n->input);
    for (int i = 0; i < nin; i++)
        n->input[i] = (char *)ins[i];
    n->n_input = (size_t)nin;
    if (center)
        ob_attr_int(&b, n, "center_point_box", 1);
    ob_output(&b, "sel", MP_DTYPE_INT64, -1, NULL);
    mp_graph *g;
    mp_status st = ob_load_values(&b, ctx, v, nv, &g);
    if (!st) {
        const mp__tensor *t = ob_tensor(g, "sel");
        CU_ASSERT_EQUAL(t->rank, 2);
        CU_ASSERT_EQUAL(t->dtype, MP_DTYPE_INT64);
        *rows = t->rank == 2 ? t->dims[0] : -2;
        if (t->rank == 2) {
            CU_ASSERT_EQUAL(t->dims[1], 3);
            CU_ASSERT_EQUAL(t->bytes, (uint64_t)t->dims[0] * 24u);
        }
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        mp_plan_destroy(p);
    }
    mp_graph_destroy(g);
    ob_free(&b);
    return st;
}

/* the ONNX operator examples' boxes: two clusters of three overlapping
 * boxes and one far away ([y1, x1, y2, x2]) */
static const double nms_boxes[24] = {
    0, 0, 1, 1,  0, 0.1, 1, 1.1,  0, -0.1, 1, 0.9,
    0, 10, 1, 11,  0, 10.1, 1, 11.1,  0, 100, 1, 101};
static const double nms_scores[6] = {0.9, 0.75, 0.6, 0.95, 0.5, 0.3};

static void test_nms(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t rows = -1;
    const int64_t m3[] = {3}, m2[] = {2}, m0[] = {0}, m9[] = {9};
    const double iou5[] = {0.5}, iou9[] = {0.9}, thr0[] = {0.0},
                 thr4[] = {0.4};
    /* the thresholds on the example boxes: max, iou, score threshold
     * (NULL: input omitted) and the rows selected */
    const struct {
        const int64_t *max;
        const double *iou, *thr;
        int64_t want;
    } cases[] = {
        {m3, iou5, thr0, 3}, /* one box per cluster and the far one */
        {m3, iou5, thr4, 2}, /* score_threshold 0.4 drops the far box */
        {m2, iou5, thr0, 2}, /* max_output_boxes_per_class 2 */
        {m9, iou9, NULL, 6}, /* IoU 0.9: the shifted boxes (0.82) stay */
        {NULL, NULL, NULL, 0}, /* no max given: nothing selected */
        {m0, iou5, NULL, 0},   /* max 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rows = -1;
        CU_ASSERT_EQUAL(nms_run(ctx, 1, 1, 6, nms_boxes, nms_scores, 0,
                                cases[i].max, cases[i].iou, cases[i].thr, 1,
                                &rows), MP_OK);
        CU_ASSERT_EQUAL(rows, cases[i].want);
    }
    /* center_point_box: [xc, yc, w, h], the same layout */
    static const double cboxes[24] = {
        0.5, 0.5, 1, 1,  0.6, 0.5, 1, 1,  0.4, 0.5, 1, 1,
        10.5, 0.5, 1, 1,  10.6, 0.5, 1, 1,  100.5, 0.5, 1, 1};
    CU_ASSERT_EQUAL(nms_run(ctx, 1, 1, 6, cboxes, nms_scores, 1, m3, iou5,
                            thr0, 1, &rows), MP_OK);
    CU_ASSERT_EQUAL(rows, 3);
    /* flipped corners ([y2, x2, y1, x1]) are the same boxes */
    double flipped[24];
    for (int i = 0; i < 6; i++) {
        flipped[4 * i] = nms_boxes[4 * i + 2];
        flipped[4 * i + 1] = nms_boxes[4 * i + 3];
        flipped[4 * i + 2] = nms_boxes[4 * i];
        flipped[4 * i + 3] = nms_boxes[4 * i + 1];
    }
    CU_ASSERT_EQUAL(nms_run(ctx, 1, 1, 6, flipped, nms_scores, 0, m3, iou5,
                            thr0, 1, &rows), MP_OK);
    CU_ASSERT_EQUAL(rows, 3);
    /* two batches x two classes: per batch and class */
    double b2[48], s4[24];
    memcpy(b2, nms_boxes, sizeof nms_boxes);
    memcpy(b2 + 24, nms_boxes, sizeof nms_boxes);
    for (int k = 0; k < 4; k++)
        memcpy(s4 + 6 * k, nms_scores, sizeof nms_scores);
    s4[18 + 5] = 0.0; /* batch 1, class 1: the far box scores 0 */
    CU_ASSERT_EQUAL(nms_run(ctx, 2, 2, 6, b2, s4, 0, m3, iou5, thr0, 1,
                            &rows), MP_OK);
    CU_ASSERT_EQUAL(rows, 3 + 3 + 3 + 2);
    /* identical boxes: one survives */
    double same[40], ss[10];
    for (int i = 0; i < 10; i++) {
        memcpy(same + 4 * i, nms_boxes, 4 * sizeof *same);
        ss[i] = 0.9;
    }
    CU_ASSERT_EQUAL(nms_run(ctx, 1, 1, 10, same, ss, 0, m3, iou5, thr0, 1,
                            &rows), MP_OK);
    CU_ASSERT_EQUAL(rows, 1);
    /* scores not known: the count cannot be inferred (an error naming the
     * node), never a guess */
    CU_ASSERT_EQUAL(nms_run(ctx, 1, 1, 6, nms_boxes, nms_scores, 0, m3,
                            iou5, thr0, 0, &rows), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "NonMaxSuppression"));
    mp_ctx_destroy(ctx);
}

/* ---- ImageDecoder ------------------------------------------------------------ */

/* x uint8 [n] (bytes bound) -> ImageDecoder(pixel_format) -> y; *out the
 * inferred shape (rank 3) */
static mp_status decode(mp_ctx *ctx, const unsigned char *bytes, size_t n,
                        const char *pf, int64_t *out)
{
    ob b;
    ob_init(&b, 8, 20);
    int64_t d[1] = {(int64_t)n};
    ob_input(&b, "x", MP_DTYPE_UINT8, 1, d);
    Onnx__NodeProto *nd = ob_node(&b, "ImageDecoder", "dec", "x", NULL, "y");
    if (pf)
        attr_str(&b, nd, "pixel_format", pf);
    ob_output(&b, "y", MP_DTYPE_UINT8, -1, NULL);
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    CU_ASSERT_FATAL(v != NULL);
    for (size_t i = 0; i < n; i++)
        v[i] = bytes[i];
    mp_input_value iv = {.name = "x", .dtype = MP_DTYPE_UINT8, .rank = 1,
                         .dims = d, .ints = v};
    mp_graph *g;
    mp_status st = ob_load_values(&b, ctx, &iv, 1, &g);
    if (!st) {
        const mp__tensor *t = ob_tensor(g, "y");
        CU_ASSERT_EQUAL_FATAL(t->rank, 3);
        CU_ASSERT_EQUAL(t->dtype, MP_DTYPE_UINT8);
        for (int i = 0; i < 3; i++)
            out[i] = t->dims[i];
        CU_ASSERT_EQUAL(t->bytes, (uint64_t)(out[0] * out[1] * out[2]));
    }
    mp_graph_destroy(g);
    free(v);
    ob_free(&b);
    return st;
}

typedef struct img_case {
    const char *what;
    const unsigned char *bytes;
    size_t n;
    int64_t h, w;
} img_case;

static const unsigned char png[] = {
    0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D',
    'R', 0, 0, 0x01, 0x2c, 0, 0, 0, 200, 8, 2, 0, 0, 0};
static const unsigned char bmp[] = {
    'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0,
    5, 0, 0, 0, 0xfc, 0xff, 0xff, 0xff /* -4: top-down */, 1, 0, 24, 0};
static const unsigned char bmp_core[] = {
    'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 26, 0, 0, 0, 12, 0, 0, 0,
    7, 0, 6, 0, 1, 0, 24, 0};
static const unsigned char jpeg[] = {
    0xff, 0xd8, 0xff, 0xe0, 0, 6, 'J', 'F', 'I', 'F', 0xff, 0xff /* fill */,
    0xc2, 0, 17, 8, 0, 10, 0, 20, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1};
static const unsigned char tiff_le[] = {
    'I', 'I', 42, 0, 8, 0, 0, 0, 3, 0,
    0x03, 0x01, 3, 0, 1, 0, 0, 0, 8, 0, 0, 0,        /* 259: skipped */
    0x00, 0x01, 3, 0, 1, 0, 0, 0, 33, 0, 0, 0,       /* width SHORT 33 */
    0x01, 0x01, 4, 0, 1, 0, 0, 0, 17, 0, 0, 0};      /* height LONG 17 */
static const unsigned char tiff_be[] = {
    'M', 'M', 0, 42, 0, 0, 0, 8, 0, 2,
    0x01, 0x00, 0, 4, 0, 0, 0, 1, 0, 0, 1, 0,        /* width LONG 256 */
    0x01, 0x01, 0, 3, 0, 0, 0, 1, 0, 9, 0, 0};       /* height SHORT 9 */
static const unsigned char webp_vp8[] = {
    'R', 'I', 'F', 'F', 30, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' ',
    18, 0, 0, 0, 0x50, 0x01, 0, 0x9d, 0x01, 0x2a, 0x40, 0x41 /* scale bits */,
    0x20, 0x00, 0, 0};
static const unsigned char webp_vp8l[] = {
    'R', 'I', 'F', 'F', 20, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L',
    5, 0, 0, 0, 0x2f, 0x63, 0x40, 0x09, 0x00};     /* 100 x 38 */
static const unsigned char webp_vp8x[] = {
    'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X',
    10, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x01, 0, 0x1f, 0, 0};   /* 512 x 32 */
static const unsigned char jp2[] = {
    0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n',
    0, 0, 0, 20, 'f', 't', 'y', 'p', 'j', 'p', '2', ' ', 0, 0, 0, 0,
    'j', 'p', '2', ' ',
    0, 0, 0, 30, 'j', 'p', '2', 'h',
    0, 0, 0, 22, 'i', 'h', 'd', 'r', 0, 0, 0, 48, 0, 0, 0, 64, 0, 3, 7, 7,
    0, 0};
static const unsigned char j2k[] = {
    0xff, 0x4f, 0xff, 0x51, 0, 41, 0, 0, 0, 0, 0, 100, 0, 0, 0, 60,
    0, 0, 0, 10, 0, 0, 0, 20};
static const unsigned char pnm[] = "P6\n# a comment\n 12\t8\n255\n";

static const img_case imgs[] = {
    {"png", png, sizeof png, 200, 300},
    {"bmp", bmp, sizeof bmp, 4, 5},
    {"bmp core header", bmp_core, sizeof bmp_core, 6, 7},
    {"jpeg", jpeg, sizeof jpeg, 10, 20},
    {"tiff little-endian", tiff_le, sizeof tiff_le, 17, 33},
    {"tiff big-endian", tiff_be, sizeof tiff_be, 9, 256},
    {"webp VP8", webp_vp8, sizeof webp_vp8, 32, 320},
    {"webp VP8L", webp_vp8l, sizeof webp_vp8l, 38, 100},
    {"webp VP8X", webp_vp8x, sizeof webp_vp8x, 32, 512},
    {"jpeg 2000 (jp2)", jp2, sizeof jp2, 48, 64},
    {"jpeg 2000 codestream", j2k, sizeof j2k, 40, 90},
    {"pnm", pnm, sizeof pnm - 1, 8, 12},
};

static void test_image_decoder(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t s[3];
    for (size_t i = 0; i < sizeof imgs / sizeof imgs[0]; i++) {
        const img_case *c = &imgs[i];
        mp_status st = decode(ctx, c->bytes, c->n, NULL, s);
        CU_ASSERT_EQUAL(st, MP_OK);
        if (st || s[0] != c->h || s[1] != c->w || s[2] != 3)
            printf("\n  %s: status %d, [%lld, %lld, %lld], expected [%lld, "
                   "%lld, 3]\n", c->what, (int)st, (long long)s[0],
                   (long long)s[1], (long long)s[2], (long long)c->h,
                   (long long)c->w);
        CU_ASSERT(s[0] == c->h && s[1] == c->w && s[2] == 3);
    }
    /* pixel_format: Grayscale 1 channel, BGR 3 */
    CU_ASSERT_EQUAL(decode(ctx, png, sizeof png, "Grayscale", s), MP_OK);
    CU_ASSERT(s[0] == 200 && s[1] == 300 && s[2] == 1);
    CU_ASSERT_EQUAL(decode(ctx, png, sizeof png, "BGR", s), MP_OK);
    CU_ASSERT(s[2] == 3);
    /* not an image: the size stays unknown, an error naming the node */
    static const unsigned char junk[] = "GIF89a....";
    CU_ASSERT_EQUAL(decode(ctx, junk, sizeof junk, NULL, s), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "ImageDecoder"));
    mp_ctx_destroy(ctx);
}

/* truncated and corrupted headers: never a crash or an out-of-bounds read
 * (run under ASan in CI); the result is a size or a shape error */
static void test_image_decoder_malformed(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    uint64_t seed = 12345;
    int64_t s[3];
    unsigned char buf[64];
    int ok = 0, err = 0;
    for (size_t i = 0; i < sizeof imgs / sizeof imgs[0]; i++) {
        const img_case *c = &imgs[i];
        CU_ASSERT_FATAL(c->n <= sizeof buf);
        for (size_t len = 1; len < c->n; len++) { /* every prefix */
            mp_status st = decode(ctx, c->bytes, len, NULL, s);
            CU_ASSERT(st == MP_OK || st == MP_ERR_SHAPE);
            ok += st == MP_OK;
            err += st == MP_ERR_SHAPE;
        }
        for (int k = 0; k < 40; k++) { /* random bytes changed */
            memcpy(buf, c->bytes, c->n);
            for (int f = 0; f < 3; f++)
                buf[mp_test_rand(&seed) % c->n] =
                    (unsigned char)mp_test_rand(&seed);
            mp_status st = decode(ctx, buf, c->n, NULL, s);
            CU_ASSERT(st == MP_OK || st == MP_ERR_SHAPE ||
                      st == MP_ERR_OVERFLOW);
        }
    }
    CU_ASSERT(err > 0);
    mp_ctx_destroy(ctx);
}

/* LabelEncoder whose values are strings (a STRINGS attribute, kept as
 * values_strings.strings): the output is a STRING tensor of x's shape */
static void test_label_encoder_strings(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g;
    ob b;
    static const int64_t d3[] = {3};
    ob_init(&b, 8, 10);
    ob_input(&b, "x", MP_DTYPE_INT64, 1, d3);
    Onnx__NodeProto *n = ob_node(&b, "LabelEncoder", "le", "x", NULL, "y");
    n->domain = (char *)"ai.onnx.ml";
    Onnx__AttributeProto *k =
        ob_attr(&b, n, "keys_int64s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static int64_t keys[] = {1, 2};
    k->ints = keys;
    k->n_ints = 2;
    attr_strs(&b, n, "values_strings", week, 2);
    ob_output(&b, "y", MP_DTYPE_UNDEFINED, -1, NULL);
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    mp_test_assert_shape(g, "y", 1, d3);
    CU_ASSERT_EQUAL(ob_tensor(g, "y")->dtype, MP_DTYPE_STRING);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

void mp_register_value_ops(void)
{
    static CU_TestInfo tests[] = {
        {"LabelEncoder with string values: STRING output",
         test_label_encoder_strings},
        {"StringNormalizer: stopwords, case, all dropped, bound", test_normalizer},
        {"StringNormalizer stopwords through ONNX export",
         test_normalizer_roundtrip},
        {"Constant strings through Identity into StringNormalizer",
         test_constant_strings},
        {"StringSplit: whitespace, delimiter, maxsplit, empty", test_split},
        {"StringSplit without values: token axis unknown", test_split_unknown},
        {"STRINGS attributes and interning", test_strings_attr},
        {"NonMaxSuppression: selected boxes from known values", test_nms},
        {"ImageDecoder: H, W from BMP/PNG/PNM/JPEG/TIFF/WebP/JPEG 2000",
         test_image_decoder},
        {"ImageDecoder: truncated and corrupted headers",
         test_image_decoder_malformed},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("value_ops", tests);
}
#endif
