/* Node-conformance features of the ONNX loader and the registry (issue 3):
 * values of graph inputs (mp_input_value, as a TensorProto or as values),
 * sequences and optionals (SplitToSequence, SequenceInsert/Erase/At/
 * Length, ConcatFromSequence, SequenceProto input values, OptionalProto),
 * a Loop inferred per iteration, Scan opset 8, IRFFT, and value folding
 * through Split and a Concat with an empty part. Models are built here
 * with the generated protobuf-c code; every plan is verified. Skipped
 * with a message when memplan is built without ONNX. */
#include "support.h"

#include "ir.h"
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MP_WITH_ONNX

static void test_skipped(void)
{
    CU_ASSERT_EQUAL(mp_onnx_available(), 0);
    fprintf(stderr, "\n  onnx_values: skipped (memplan built without ONNX)\n");
}

void mp_register_onnx_values(void)
{
    static CU_TestInfo tests[] = {{"skipped: no ONNX", test_skipped},
                                  CU_TEST_INFO_NULL};
    mp_test_add_suite("onnx_values", tests);
}

#else
#include "onnx_build.h"

/* a node with n inputs ("" omitted) and one output */
static Onnx__NodeProto *node_n(ob *b, const char *op, const char *name,
                               int n, const char *const *ins, const char *out)
{
    Onnx__NodeProto *nd = ob_node(b, op, name, ins[0], NULL, out);
    nd->input = ob_new(b, (size_t)n * sizeof *nd->input);
    for (int i = 0; i < n; i++)
        nd->input[i] = (char *)ins[i];
    nd->n_input = (size_t)n;
    return nd;
}

static void attr_ints(ob *b, Onnx__NodeProto *n, const char *name,
                      const int64_t *v, size_t cnt)
{
    Onnx__AttributeProto *a =
        ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = (int64_t *)v;
    a->n_ints = cnt;
}

/* Constant int64 scalar (rank 0) or 1-D list */
static void constant(ob *b, const char *out, const int64_t *v, size_t cnt,
                     int scalar)
{
    Onnx__NodeProto *n = ob_node(b, "Constant", out, "", NULL, out);
    n->n_input = 0;
    if (scalar)
        ob_attr_int(b, n, "value_int", v[0]);
    else
        attr_ints(b, n, "value_ints", v, cnt);
}

/* a sequence<tensor<elem>> (or optional<tensor<elem>>) graph input/output */
static Onnx__ValueInfoProto *seq_vi(ob *b, const char *name, int elem,
                                    int optional)
{
    Onnx__ValueInfoProto *v = ob_vi(b, name, elem, -1, NULL);
    Onnx__TypeProto *outer = ob_new(b, sizeof *outer);
    onnx__type_proto__init(outer);
    if (optional) {
        Onnx__TypeProto__Optional *o = ob_new(b, sizeof *o);
        onnx__type_proto__optional__init(o);
        o->elem_type = v->type;
        outer->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        outer->optional_type = o;
    } else {
        Onnx__TypeProto__Sequence *s = ob_new(b, sizeof *s);
        onnx__type_proto__sequence__init(s);
        s->elem_type = v->type;
        outer->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        outer->sequence_type = s;
    }
    v->type = outer;
    return v;
}

/* x [2,3] reshaped to the value of input 'shape' */
static void reshape_model(ob *b)
{
    static const int64_t x_dims[] = {2, 3}, s_dims[] = {2};
    ob_init(b, 8, 13);
    ob_input(b, "x", 1, 2, x_dims);
    ob_input(b, "shape", 7, 1, s_dims);
    ob_node(b, "Reshape", "r", "x", "shape", "y");
    ob_output(b, "y", 1, -1, NULL);
}

static void test_input_values(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    reshape_model(&b);
    mp_graph *g = NULL;
    /* statically the target shape is unknown (the view keeps its bytes) */
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    CU_ASSERT_EQUAL(ob_tensor(g, "y")->rank, -1);
    CU_ASSERT(mp_graph_unknown_shapes(g) > 0);
    mp_graph_destroy(g);
    /* the value itself */
    static const int64_t dims1[] = {2}, v[] = {3, 2}, want[] = {3, 2};
    mp_input_value iv = {.name = "shape", .dtype = MP_DTYPE_INT64, .rank = 1,
                         .dims = dims1, .ints = v};
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 2, want);
    CU_ASSERT_EQUAL(ob_tensor(g, "y")->bytes, 24u);
    CU_ASSERT_EQUAL(ob_tensor(g, "shape")->kind, MP_KIND_INPUT);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    /* the same as a serialized TensorProto with -1 (input_0.pb style) */
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    int64_t tdims[] = {2}, tv[] = {-1, 3};
    t.n_dims = 1;
    t.dims = tdims;
    t.has_data_type = 1;
    t.data_type = MP_DTYPE_INT64;
    t.n_int64_data = 2;
    t.int64_data = tv;
    size_t plen = onnx__tensor_proto__get_packed_size(&t);
    uint8_t *pb = malloc(plen);
    CU_ASSERT_FATAL(pb != NULL);
    onnx__tensor_proto__pack(&t, pb);
    mp_input_value pv = {.name = "shape", .pb = pb, .pb_len = plen};
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &pv, 1, &g), MP_OK);
    static const int64_t want2[] = {2, 3};
    mp_test_assert_shape(g, "y", 2, want2);
    mp_graph_destroy(g);
    /* bad values: unknown input, wrong dtype, wrong dim, corrupt proto */
    mp_input_value bad = iv;
    bad.name = "nope";
    CU_ASSERT_EQUAL(ob_load_values(&b, ctx, &bad, 1, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "nope"));
    bad = iv;
    bad.dtype = MP_DTYPE_INT32;
    CU_ASSERT_EQUAL(ob_load_values(&b, ctx, &bad, 1, &g), MP_ERR_SHAPE);
    static const int64_t dims3[] = {3}, v3[] = {1, 2, 3};
    bad.dtype = MP_DTYPE_INT64;
    bad.dims = dims3;
    bad.ints = v3;
    CU_ASSERT_EQUAL(ob_load_values(&b, ctx, &bad, 1, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "dim 0"));
    pv.pb_len = plen - 1; /* truncated */
    CU_ASSERT_NOT_EQUAL(ob_load_values(&b, ctx, &pv, 1, &g), MP_OK);
    CU_ASSERT_PTR_NULL(g);
    free(pb);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

static void test_sequence_ops(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t x_dims[] = {4, 6}, e_dims[] = {4};
    static const int64_t minus1 = -1, zero = 0;
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 2, x_dims);
    ob_input(&b, "e", 1, 1, e_dims);
    Onnx__NodeProto *n = ob_node(&b, "SplitToSequence", "split", "x", NULL,
                                 "seq");
    ob_attr_int(&b, n, "axis", 1);
    ob_attr_int(&b, n, "keepdims", 0);
    ob_node(&b, "SequenceInsert", "ins", "seq", "e", "seq7");
    constant(&b, "first", &zero, 1, 1);
    ob_node(&b, "SequenceErase", "erase", "seq7", "first", "seq6");
    ob_node(&b, "SequenceLength", "len", "seq6", NULL, "n");
    constant(&b, "last", &minus1, 1, 1);
    ob_node(&b, "SequenceAt", "at", "seq6", "last", "elem");
    n = ob_node(&b, "ConcatFromSequence", "stack", "seq6", NULL, "y");
    ob_attr_int(&b, n, "axis", 0);
    ob_attr_int(&b, n, "new_axis", 1);
    b.graph->output[b.graph->n_output++] = seq_vi(&b, "seq6", 1, 0);
    ob_output(&b, "n", 7, -1, NULL);
    ob_output(&b, "elem", 1, -1, NULL);
    ob_output(&b, "y", 1, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    const mp__tensor *s = ob_tensor(g, "seq");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->seq);
    CU_ASSERT_EQUAL(s->seq->n, 6);
    CU_ASSERT_EQUAL(s->seq->elems[5].rank, 1);
    CU_ASSERT_EQUAL(s->seq->elems[5].d[0], 4);
    CU_ASSERT_EQUAL(s->bytes, 6u * 4 * 4); /* the sum of the elements */
    CU_ASSERT_EQUAL(ob_tensor(g, "seq7")->seq->n, 7);
    CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g), 0u);
    const mp__tensor *n6 = ob_tensor(g, "n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(n6->value);
    CU_ASSERT_EQUAL(n6->value[0], 6);
    static const int64_t want_y[] = {6, 4};
    mp_test_assert_shape(g, "elem", 1, e_dims);
    mp_test_assert_shape(g, "y", 2, want_y);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* field `field` (length-delimited) of a protobuf message */
static size_t put_len(uint8_t *p, unsigned field, const void *data,
                      size_t len)
{
    size_t k = 0;
    p[k++] = (uint8_t)(field << 3 | 2);
    for (size_t v = len;; v >>= 7) {
        p[k++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    memcpy(p + k, data, len);
    return k + len;
}

static size_t pack_float_tensor(uint8_t *p, int64_t d0, int64_t d1)
{
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    int64_t dims[2] = {d0, d1};
    t.n_dims = 2;
    t.dims = dims;
    t.has_data_type = 1;
    t.data_type = MP_DTYPE_FLOAT32;
    return onnx__tensor_proto__pack(&t, p);
}

static void test_sequence_input_value(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    ob_init(&b, 8, 13);
    b.graph->input[b.graph->n_input++] = seq_vi(&b, "s", 1, 0);
    b.graph->input[b.graph->n_input++] = seq_vi(&b, "o", 1, 1);
    ob_node(&b, "Identity", "id", "s", NULL, "t");
    Onnx__NodeProto *n = ob_node(&b, "ConcatFromSequence", "cat", "t", NULL,
                                 "y");
    ob_attr_int(&b, n, "axis", 0);
    ob_node(&b, "OptionalHasElement", "has", "o", NULL, "h");
    ob_output(&b, "y", 1, -1, NULL);
    ob_output(&b, "h", 9, -1, NULL);
    mp_graph *g = NULL;
    /* the sequence's length is unknown without its value */
    CU_ASSERT_NOT_EQUAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    /* SequenceProto {elem_type 1, tensors [2,3] and [1,3]}; an empty
     * OptionalProto */
    uint8_t sp[256], t1[64], t2[64];
    size_t k = 0, l1 = pack_float_tensor(t1, 2, 3),
           l2 = pack_float_tensor(t2, 1, 3);
    sp[k++] = 2 << 3; /* elem_type = 1 (tensor) */
    sp[k++] = 1;
    k += put_len(sp + k, 3, t1, l1);
    k += put_len(sp + k, 3, t2, l2);
    uint8_t op[4] = {2 << 3, 1}; /* elem_type only: no value */
    mp_input_value vals[2] = {{.name = "s", .pb = sp, .pb_len = k},
                              {.name = "o", .pb = op, .pb_len = 2}};
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, vals, 2, &g), MP_OK);
    static const int64_t want[] = {3, 3};
    mp_test_assert_shape(g, "y", 2, want);
    CU_ASSERT_EQUAL(ob_tensor(g, "s")->bytes, 9u * 4);
    CU_ASSERT_EQUAL(ob_tensor(g, "t")->seq->n, 2);
    CU_ASSERT_EQUAL(ob_tensor(g, "o")->seq->present, 0);
    CU_ASSERT_EQUAL(ob_tensor(g, "o")->bytes, 0u);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ob_tensor(g, "h")->value);
    CU_ASSERT_EQUAL(ob_tensor(g, "h")->value[0], 0);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    /* a corrupt SequenceProto is a parse error naming the input */
    sp[1] = 0xff;
    vals[0].pb_len = 2;
    CU_ASSERT_EQUAL(ob_load_values(&b, ctx, vals, 2, &g), MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'s'"));
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* Loop(3) over a sequence that grows by x[0 : i + 1] each iteration */
static void test_loop_per_iteration(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t x_dims[] = {5}, three = 3, one = 1, zero1[] = {0};
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 1, x_dims);
    constant(&b, "M", &three, 1, 1);
    Onnx__NodeProto *se = ob_node(&b, "SequenceEmpty", "empty", "", NULL,
                                  "seq0");
    se->n_input = 0;
    Onnx__GraphProto *top = b.graph, *body = ob_graph(&b, "body");
    b.graph = body;
    static const int64_t scalar[1] = {0};
    ob_input(&b, "i", 7, 0, scalar);
    ob_input(&b, "c", 9, 0, scalar);
    body->input[body->n_input++] = seq_vi(&b, "s_in", 1, 0);
    ob_node(&b, "Identity", "cid", "c", NULL, "c_out");
    constant(&b, "one", &one, 1, 1);
    constant(&b, "start", zero1, 1, 0);
    constant(&b, "axes", zero1, 1, 0);
    ob_node(&b, "Add", "add", "i", "one", "end0");
    ob_node(&b, "Unsqueeze", "unsq", "end0", "axes", "end");
    const char *sl[] = {"x", "start", "end"};
    node_n(&b, "Slice", "slice", 3, sl, "part");
    ob_node(&b, "SequenceInsert", "ins", "s_in", "part", "s_out");
    ob_output(&b, "c_out", 9, 0, scalar);
    body->output[body->n_output++] = seq_vi(&b, "s_out", 1, 0);
    b.graph = top;
    const char *li[] = {"M", "", "seq0"};
    Onnx__NodeProto *loop = node_n(&b, "Loop", "loop", 3, li, "seq3");
    ob_attr_graph(&b, loop, "body", body);
    Onnx__NodeProto *cat = ob_node(&b, "ConcatFromSequence", "cat", "seq3",
                                   NULL, "y");
    ob_attr_int(&b, cat, "axis", 0);
    ob_output(&b, "y", 1, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    const mp__seq *s = ob_tensor(g, "seq3")->seq;
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL_FATAL(s->n, 3);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(s->elems[i].d[0], i + 1);
    static const int64_t want[] = {6}; /* 1 + 2 + 3 */
    mp_test_assert_shape(g, "y", 1, want);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* Scan opset 8: sum over the sequence axis (axis 1) with a batch axis */
static void test_scan_opset8(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t init_dims[] = {1, 2}, x_dims[] = {1, 3, 2},
                         row[] = {2};
    ob_init(&b, 3, 8);
    ob_input(&b, "initial", 1, 2, init_dims);
    ob_input(&b, "x", 1, 3, x_dims);
    Onnx__GraphProto *top = b.graph, *body = ob_graph(&b, "body");
    b.graph = body;
    ob_input(&b, "sum_in", 1, 1, row);
    ob_input(&b, "next", 1, 1, row);
    ob_node(&b, "Add", "add", "sum_in", "next", "sum_out");
    ob_node(&b, "Identity", "id", "sum_out", NULL, "scan_out");
    ob_output(&b, "sum_out", 1, 1, row);
    ob_output(&b, "scan_out", 1, 1, row);
    b.graph = top;
    const char *si[] = {"", "initial", "x"};
    Onnx__NodeProto *scan = node_n(&b, "Scan", "scan", 3, si, "y");
    scan->output = ob_new(&b, 2 * sizeof *scan->output);
    scan->output[0] = (char *)"y";
    scan->output[1] = (char *)"z";
    scan->n_output = 2;
    ob_attr_int(&b, scan, "num_scan_inputs", 1);
    ob_attr_graph(&b, scan, "body", body);
    ob_output(&b, "y", 1, -1, NULL);
    ob_output(&b, "z", 1, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    mp_test_assert_shape(g, "y", 2, init_dims);
    mp_test_assert_shape(g, "z", 3, x_dims);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* IRFFT; Split and Concat folding of shape values */
static void test_irfft_and_folding(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t x_dims[] = {1, 6, 10, 2}, one = 1, z1[] = {0};
    ob_init(&b, 8, 20);
    ob_input(&b, "x", 1, 4, x_dims);
    constant(&b, "axis", &one, 1, 1);
    const char *di[] = {"x", "", "axis"};
    Onnx__NodeProto *d = node_n(&b, "DFT", "dft", 3, di, "y");
    ob_attr_int(&b, d, "inverse", 1);
    ob_attr_int(&b, d, "onesided", 1);
    /* Shape(x) split in four; [] ++ the last two: [10, 2] */
    ob_node(&b, "Shape", "shape", "x", NULL, "xs");
    Onnx__NodeProto *sp = ob_node(&b, "Split", "split", "xs", NULL, "n");
    sp->output = ob_new(&b, 4 * sizeof *sp->output);
    sp->output[0] = (char *)"n";
    sp->output[1] = (char *)"c";
    sp->output[2] = (char *)"h";
    sp->output[3] = (char *)"w";
    sp->n_output = 4;
    ob_attr_int(&b, sp, "num_outputs", 4);
    constant(&b, "zero", z1, 1, 0);
    const char *si[] = {"xs", "zero", "zero"};
    node_n(&b, "Slice", "empty", 3, si, "none");
    const char *ci[] = {"none", "h", "w"};
    Onnx__NodeProto *cat = node_n(&b, "Concat", "cat", 3, ci, "hw");
    ob_attr_int(&b, cat, "axis", 0);
    ob_output(&b, "y", 1, -1, NULL);
    ob_output(&b, "hw", 7, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    static const int64_t want[] = {1, 10, 10, 1};
    mp_test_assert_shape(g, "y", 4, want);
    const mp__tensor *c = ob_tensor(g, "c"), *hw = ob_tensor(g, "hw");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->value);
    CU_ASSERT_EQUAL(c->value[0], 6);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hw->value);
    CU_ASSERT_EQUAL_FATAL(hw->n_value, 2u);
    CU_ASSERT_EQUAL(hw->value[0], 10);
    CU_ASSERT_EQUAL(hw->value[1], 2);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* Unique: folded from a bound value, unknown without one */
static void test_unique_folding(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t x_dims[] = {3, 3};
    ob_init(&b, 8, 11);
    ob_input(&b, "x", 7, 2, x_dims);
    Onnx__NodeProto *u = ob_node(&b, "Unique", "rows", "x", NULL, "y");
    u->output = ob_new(&b, 4 * sizeof *u->output);
    u->output[0] = (char *)"y";
    u->output[1] = (char *)"idx";
    u->output[2] = (char *)"inv";
    u->output[3] = (char *)"cnt";
    u->n_output = 4;
    ob_attr_int(&b, u, "axis", 0);
    ob_node(&b, "Unique", "elems", "x", NULL, "ye");
    ob_output(&b, "y", 7, -1, NULL);
    ob_output(&b, "inv", 7, -1, NULL);
    ob_output(&b, "cnt", 7, -1, NULL);
    ob_output(&b, "ye", 7, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_NOT_EQUAL(ob_load_values(&b, ctx, NULL, 0, &g), MP_OK);
    /* rows 0 and 1 equal: 2 distinct rows; elements {1, 0, 2, 3, 4} */
    static const int64_t v[] = {1, 0, 0, 1, 0, 0, 2, 3, 4};
    mp_input_value iv = {.name = "x", .dtype = MP_DTYPE_INT64, .rank = 2,
                         .dims = x_dims, .ints = v};
    CU_ASSERT_EQUAL_FATAL(ob_load_values(&b, ctx, &iv, 1, &g), MP_OK);
    static const int64_t y[] = {2, 3}, inv[] = {3}, cnt[] = {2}, ye[] = {5};
    mp_test_assert_shape(g, "y", 2, y);
    mp_test_assert_shape(g, "inv", 1, inv);
    mp_test_assert_shape(g, "cnt", 1, cnt);
    mp_test_assert_shape(g, "ye", 1, ye);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

void mp_register_onnx_values(void)
{
    static CU_TestInfo tests[] = {
        {"Unique folded from a bound value", test_unique_folding},
        {"graph input values: values, TensorProto, errors", test_input_values},
        {"sequence ops: split, insert, erase, length, at, stack",
         test_sequence_ops},
        {"SequenceProto and OptionalProto input values",
         test_sequence_input_value},
        {"Loop inferred per iteration (growing sequence)",
         test_loop_per_iteration},
        {"Scan opset 8 (batch axis)", test_scan_opset8},
        {"IRFFT; Split and empty-Concat folding", test_irfft_and_folding},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("onnx_values", tests);
}

#endif /* MP_WITH_ONNX */
