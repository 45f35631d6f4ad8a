/* ONNX frontend: models are built in the test with the protobuf-c code
 * generated at build time, packed, and loaded from memory. Skipped with a
 * message when memplan is built without ONNX. */
#include "support.h"

#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MP_WITH_ONNX

static void test_skipped(void)
{
    printf("\n  ONNX tests skipped: memplan was built without ONNX support "
           "(needs protoc-c, libprotobuf-c, libonnx-dev) ");
    CU_ASSERT_EQUAL(mp_onnx_available(), 0);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_onnx(ctx, "x.onnx", NULL, &g),
                    MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "without ONNX"));
    mp_ctx_destroy(ctx);
}

static CU_TestInfo tests[] = {{"ONNX not built: loader says so", test_skipped},
                              CU_TEST_INFO_NULL};

void mp_register_onnx(void) { mp_test_add_suite("onnx", tests); }

#else
#include "onnx.pb-c.h"

/* ---- a tiny model builder (everything freed with the builder) ---------- */
typedef struct mb {
    void *ptrs[4096];
    size_t n;
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__NodeProto *nodes[64];
    Onnx__ValueInfoProto *inputs[16], *outputs[16], *vinfo[32];
    Onnx__TensorProto *inits[32];
    Onnx__OperatorSetIdProto opset, *opsets[1];
} mb;

static void *mb_new(mb *b, size_t size)
{
    void *p = calloc(1, size);
    CU_ASSERT_FATAL(p != NULL && b->n < 4096);
    b->ptrs[b->n++] = p;
    return p;
}

static char *mb_str(mb *b, const char *s)
{
    char *p = mb_new(b, strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static void mb_init(mb *b, int64_t ir, int64_t opset)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__operator_set_id_proto__init(&b->opset);
    b->model.has_ir_version = 1;
    b->model.ir_version = ir;
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opset.domain = mb_str(b, "");
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->graph.name = mb_str(b, "test");
    b->model.graph = &b->graph;
    b->graph.node = b->nodes;
    b->graph.input = b->inputs;
    b->graph.output = b->outputs;
    b->graph.value_info = b->vinfo;
    b->graph.initializer = b->inits;
}

static void mb_free(mb *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->ptrs[i]);
}

/* dims: >= 0 numbers; a dim of -1 takes the next name from syms */
static Onnx__ValueInfoProto *mb_vi(mb *b, const char *name, int elem, int rank,
                                   const int64_t *dims, const char **syms)
{
    Onnx__ValueInfoProto *v = mb_new(b, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = mb_str(b, name);
    Onnx__TypeProto *tp = mb_new(b, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = mb_new(b, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = mb_new(b, sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = mb_new(b, (size_t)(rank ? rank : 1) * sizeof *sh->dim);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = mb_new(b, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0) {
                d->value_case =
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case =
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = mb_str(b, *syms++);
            }
            sh->dim[i] = d;
        }
        tt->shape = sh;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static void mb_input(mb *b, const char *name, int elem, int rank,
                     const int64_t *dims, const char **syms)
{
    b->inputs[b->graph.n_input++] = mb_vi(b, name, elem, rank, dims, syms);
}

static void mb_output(mb *b, const char *name, int elem, int rank,
                      const int64_t *dims)
{
    b->outputs[b->graph.n_output++] = mb_vi(b, name, elem, rank, dims, NULL);
}

static Onnx__TensorProto *mb_tensor(mb *b, const char *name, int elem,
                                    int rank, const int64_t *dims,
                                    const int64_t *ivals, size_t nvals)
{
    Onnx__TensorProto *t = mb_new(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = mb_str(b, name);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)rank;
    t->dims = mb_new(b, (size_t)(rank ? rank : 1) * sizeof(int64_t));
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    if (ivals) {
        t->n_int64_data = nvals;
        t->int64_data = mb_new(b, (nvals ? nvals : 1) * sizeof(int64_t));
        memcpy(t->int64_data, ivals, nvals * sizeof(int64_t));
    }
    return t;
}

static void mb_init_tensor(mb *b, Onnx__TensorProto *t)
{
    b->inits[b->graph.n_initializer++] = t;
}

/* node with up to 4 inputs/outputs ("" omitted); attributes added after */
static Onnx__NodeProto *mb_node(mb *b, const char *op, const char *name,
                                const char *const *ins, size_t nin,
                                const char *const *outs, size_t nout)
{
    Onnx__NodeProto *n = mb_new(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = mb_str(b, op);
    n->name = mb_str(b, name);
    n->n_input = nin;
    n->input = mb_new(b, (nin ? nin : 1) * sizeof(char *));
    for (size_t i = 0; i < nin; i++)
        n->input[i] = mb_str(b, ins[i]);
    n->n_output = nout;
    n->output = mb_new(b, (nout ? nout : 1) * sizeof(char *));
    for (size_t i = 0; i < nout; i++)
        n->output[i] = mb_str(b, outs[i]);
    n->attribute = mb_new(b, 8 * sizeof(Onnx__AttributeProto *));
    b->nodes[b->graph.n_node++] = n;
    return n;
}

static Onnx__AttributeProto *mb_attr(mb *b, Onnx__NodeProto *n,
                                     const char *name, int type)
{
    Onnx__AttributeProto *a = mb_new(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = mb_str(b, name);
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void mb_attr_ints(mb *b, Onnx__NodeProto *n, const char *name,
                         const int64_t *v, size_t cnt)
{
    Onnx__AttributeProto *a =
        mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = cnt;
    a->ints = mb_new(b, cnt * sizeof(int64_t));
    memcpy(a->ints, v, cnt * sizeof(int64_t));
}

static void mb_attr_int(mb *b, Onnx__NodeProto *n, const char *name,
                        int64_t v)
{
    Onnx__AttributeProto *a =
        mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static uint8_t *mb_pack(mb *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = mb_new(b, *len ? *len : 1);
    onnx__model_proto__pack(&b->model, buf);
    return buf;
}

static mp_status load(mb *b, const mp_onnx_options *opt, mp_ctx *ctx,
                      mp_graph **g)
{
    size_t len;
    uint8_t *buf = mb_pack(b, &len);
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", opt, g);
    if (st)
        printf("\n  load: %s ", mp_ctx_message(ctx));
    return st;
}

static const mp__tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    if (mp_graph_find_tensor(g, name, &id))
        return NULL;
    return &g->tensors[id];
}

static int shape_is(const mp__tensor *t, int rank, const int64_t *dims)
{
    if (!t || t->rank != rank)
        return 0;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            return 0;
    return 1;
}

/* x[1,3,8,8] -> Conv(w[4,3,3,3], pad 1, stride 2) -> Relu -> shape
 * arithmetic (Shape, Gather, Unsqueeze, Concat with [-1]) -> Reshape */
static void build_cnn(mb *b, int declared_output)
{
    mb_init(b, 8, 13);
    const int64_t xd[] = {1, 3, 8, 8}, wd[] = {4, 3, 3, 3};
    mb_input(b, "x", MP_DTYPE_FLOAT32, 4, xd, NULL);
    mb_init_tensor(b, mb_tensor(b, "w", MP_DTYPE_FLOAT32, 4, wd, NULL, 0));
    const int64_t one = 1, minus1 = -1, zero = 0;
    mb_init_tensor(b, mb_tensor(b, "idx0", MP_DTYPE_INT64, 0, &one, &zero, 1));
    mb_init_tensor(b, mb_tensor(b, "ax0", MP_DTYPE_INT64, 1, &one, &zero, 1));
    mb_init_tensor(b, mb_tensor(b, "m1", MP_DTYPE_INT64, 1, &one, &minus1, 1));
    const char *cin[] = {"x", "w"}, *cout[] = {"c"};
    Onnx__NodeProto *conv = mb_node(b, "Conv", "conv", cin, 2, cout, 1);
    const int64_t pads[] = {1, 1, 1, 1}, strides[] = {2, 2};
    mb_attr_ints(b, conv, "pads", pads, 4);
    mb_attr_ints(b, conv, "strides", strides, 2);
    const char *r_in[] = {"c"}, *r_out[] = {"r"};
    mb_node(b, "Relu", "relu", r_in, 1, r_out, 1);
    const char *s_out[] = {"s"};
    mb_node(b, "Shape", "shape", r_out, 1, s_out, 1);
    const char *g_in[] = {"s", "idx0"}, *g_out[] = {"n"};
    mb_node(b, "Gather", "gather", g_in, 2, g_out, 1);
    const char *u_in[] = {"n", "ax0"}, *u_out[] = {"n1"};
    mb_node(b, "Unsqueeze", "unsq", u_in, 2, u_out, 1);
    const char *k_in[] = {"n1", "m1"}, *k_out[] = {"shp"};
    Onnx__NodeProto *cat = mb_node(b, "Concat", "cat", k_in, 2, k_out, 1);
    mb_attr_int(b, cat, "axis", 0);
    const char *re_in[] = {"r", "shp"}, *re_out[] = {"y"};
    mb_node(b, "Reshape", "reshape", re_in, 2, re_out, 1);
    const int64_t yd[] = {1, 64};
    mb_output(b, "y", MP_DTYPE_FLOAT32, declared_output ? 2 : -1, yd);
}

static void test_cnn_shapes(void)
{
    mb b;
    build_cnn(&b, 0);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.declared_shapes = 0;
    CU_ASSERT_EQUAL_FATAL(load(&b, &opt, ctx, &g), MP_OK);
    const int64_t cd[] = {1, 4, 4, 4}, yd[] = {1, 64}, sd[] = {4};
    CU_ASSERT(shape_is(tensor(g, "c"), 4, cd));
    CU_ASSERT(shape_is(tensor(g, "r"), 4, cd));
    CU_ASSERT(shape_is(tensor(g, "s"), 1, sd));
    const mp__tensor *shp = tensor(g, "shp");
    CU_ASSERT_PTR_NOT_NULL_FATAL(shp);
    CU_ASSERT_EQUAL_FATAL(shp->n_value, 2);
    CU_ASSERT_EQUAL(shp->value[0], 1);
    CU_ASSERT_EQUAL(shp->value[1], -1);
    const mp__tensor *y = tensor(g, "y");
    CU_ASSERT(shape_is(y, 2, yd));
    CU_ASSERT_EQUAL(y->bytes, 64 * 4);
    CU_ASSERT_EQUAL(y->dtype, MP_DTYPE_FLOAT32);
    CU_ASSERT_EQUAL(y->alias_of, tensor(g, "r") - g->tensors); /* a view */
    CU_ASSERT_EQUAL(tensor(g, "w")->kind, MP_KIND_WEIGHT);
    CU_ASSERT_EQUAL(tensor(g, "x")->kind, MP_KIND_INPUT);
    CU_ASSERT_EQUAL(g->onnx_opset, 13);
    /* it plans */
    mp_plan_options po;
    mp_plan_options_init(&po);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_plan_create(g, &po, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* input [N, 3] with N symbolic: unbound is one error naming N and the
 * input; bound, the shapes follow */
static void test_symbolic_dims(void)
{
    mb b;
    mb_init(&b, 7, 13);
    const int64_t xd[] = {-1, 3};
    const char *syms[] = {"N"};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, syms);
    const char *in[] = {"x", "x"}, *out[] = {"y"};
    mb_node(&b, "Add", "add", in, 2, out, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", NULL,
                                              &g),
                    MP_ERR_SHAPE);
    CU_ASSERT_PTR_NULL(g);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'N'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "input 'x'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "--dim"));
    mp_dim_binding bind = {"N", 5};
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = &bind;
    opt.n_dims = 1;
    CU_ASSERT_EQUAL_FATAL(
        mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &opt, &g), MP_OK);
    const int64_t yd[] = {5, 3};
    CU_ASSERT(shape_is(tensor(g, "y"), 2, yd));
    CU_ASSERT_EQUAL(tensor(g, "y")->bytes, 60);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* IR 3: initializers also listed as graph inputs are weights */
static void test_ir3_initializer_inputs(void)
{
    mb b;
    mb_init(&b, 3, 9);
    const int64_t xd[] = {2, 4}, wd[] = {4, 6};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
    mb_input(&b, "w", MP_DTYPE_FLOAT32, 2, wd, NULL);
    mb_init_tensor(&b, mb_tensor(&b, "w", MP_DTYPE_FLOAT32, 2, wd, NULL, 0));
    const char *in[] = {"x", "w"}, *out[] = {"y"};
    mb_node(&b, "MatMul", "mm", in, 2, out, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
    CU_ASSERT_EQUAL(tensor(g, "w")->kind, MP_KIND_WEIGHT);
    CU_ASSERT_EQUAL(tensor(g, "x")->kind, MP_KIND_INPUT);
    const int64_t yd[] = {2, 6};
    CU_ASSERT(shape_is(tensor(g, "y"), 2, yd));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* an unknown op: an error naming op, domain and node; with its output
 * declared in value_info it plans */
static void test_unknown_op(void)
{
    for (int declared = 0; declared < 2; declared++) {
        mb b;
        mb_init(&b, 8, 17);
        const int64_t xd[] = {2, 4};
        mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
        const char *in[] = {"x"}, *out[] = {"t"};
        Onnx__NodeProto *n = mb_node(&b, "FancyOp", "fancy", in, 1, out, 1);
        n->domain = mb_str(&b, "com.example");
        const char *in2[] = {"t"}, *out2[] = {"y"};
        mb_node(&b, "Relu", "relu", in2, 1, out2, 1);
        mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
        if (declared) {
            const int64_t td[] = {2, 8};
            b.vinfo[b.graph.n_value_info++] =
                mb_vi(&b, "t", MP_DTYPE_FLOAT32, 2, td, NULL);
        }
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        size_t len;
        uint8_t *buf = mb_pack(&b, &len);
        mp_status st =
            mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", NULL, &g);
        if (!declared) {
            CU_ASSERT_EQUAL(st, MP_ERR_UNKNOWN_OP);
            const char *msg = mp_ctx_message(ctx);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "FancyOp"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "com.example"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'fancy'"));
        } else {
            CU_ASSERT_EQUAL_FATAL(st, MP_OK);
            const int64_t yd[] = {2, 8};
            CU_ASSERT(shape_is(tensor(g, "y"), 2, yd));
        }
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        mb_free(&b);
    }
}

/* truncated and corrupted models: a clear error or a valid graph, never a
 * crash (the suite runs under ASan/UBSan in CI) */
static void test_corrupt(void)
{
    mb b;
    build_cnn(&b, 1);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    uint8_t *copy = malloc(len);
    CU_ASSERT_FATAL(copy != NULL);
    mp_ctx *ctx = mp_ctx_create(NULL);
    int parse_errors = 0;
    for (size_t cut = 0; cut < len; cut += 1) {
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_onnx_buffer(ctx, buf, cut, "t.onnx",
                                                 NULL, &g);
        CU_ASSERT(st != MP_ERR_INTERNAL && st != MP_ERR_NOMEM);
        CU_ASSERT((st == MP_OK) == (g != NULL));
        if (st == MP_ERR_CORRUPT) {
            parse_errors++;
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "t.onnx"));
        }
        mp_graph_destroy(g);
    }
    /* most prefixes cut a field in half */
    CU_ASSERT(parse_errors > (int)len / 2);
    uint64_t seed = 42;
    for (int k = 0; k < 300; k++) {
        memcpy(copy, buf, len);
        for (int f = 0; f < 3; f++)
            copy[mp_test_rand(&seed) % len] = (uint8_t)mp_test_rand(&seed);
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_onnx_buffer(ctx, copy, len, "t.onnx",
                                                 NULL, &g);
        CU_ASSERT(st != MP_ERR_INTERNAL);
        CU_ASSERT((st == MP_OK) == (g != NULL));
        mp_graph_destroy(g);
    }
    /* not protobuf at all */
    mp_graph *g = NULL;
    const char junk[] = "\xff\xff\xff\xff garbage";
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, junk, sizeof junk,
                                              "j.onnx", NULL, &g),
                    MP_ERR_CORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "not a valid ONNX"));
    CU_ASSERT_EQUAL(mp_graph_load_onnx(ctx, "/nonexistent/m.onnx", NULL, &g),
                    MP_ERR_IO);
    mp_ctx_destroy(ctx);
    free(copy);
    mb_free(&b);
}

/* mp_graph_load picks the ONNX frontend for a .onnx file */
static void test_graph_load_detects_onnx(void)
{
    mb b;
    build_cnn(&b, 1);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    char path[128];
    snprintf(path, sizeof path, "/tmp/memplan_test_onnx_%ld.onnx",
             (long)getpid());
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT_EQUAL(fwrite(buf, 1, len, f), len);
    fclose(f);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, path, &g), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 7);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    remove(path);
    mb_free(&b);
}

static Onnx__TensorProto *mb_float_scalar(mb *b, const char *name, float v)
{
    Onnx__TensorProto *t = mb_tensor(b, name, MP_DTYPE_FLOAT32, 0, NULL, NULL,
                                     0);
    t->n_float_data = 1;
    t->float_data = mb_new(b, sizeof(float));
    t->float_data[0] = v;
    return t;
}

/* Pad amounts computed in floats (as STFT front ends do):
 * pad = int(ceil(float(len) / 32) * 32 - float(len)); x[1,1,100] padded to
 * [1,1,128]. Everything past x is inferred (declared_shapes = 0). */
static void test_float_folding(void)
{
    mb b;
    mb_init(&b, 8, 17);
    const int64_t xd[] = {1, 1, 100}, zd[] = {5}, zv[5] = {0}, one[] = {1};
    const int64_t two = 2, ax0 = 0;
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 3, xd, NULL);
    mb_init_tensor(&b, mb_float_scalar(&b, "c32", 32.0f));
    mb_init_tensor(&b, mb_tensor(&b, "i2", MP_DTYPE_INT64, 0, NULL, &two, 1));
    mb_init_tensor(&b, mb_tensor(&b, "ax", MP_DTYPE_INT64, 1, one, &ax0, 1));
    mb_init_tensor(&b, mb_tensor(&b, "zeros", MP_DTYPE_INT64, 1, zd, zv, 5));
    const char *i1[] = {"x"}, *o1[] = {"shp"};
    mb_node(&b, "Shape", "shape", i1, 1, o1, 1);
    const char *i2[] = {"shp", "i2"}, *o2[] = {"len"};
    mb_node(&b, "Gather", "gather", i2, 2, o2, 1);
    const char *i3[] = {"len"}, *o3[] = {"lenf"};
    mb_attr_int(&b, mb_node(&b, "Cast", "tofloat", i3, 1, o3, 1), "to",
                MP_DTYPE_FLOAT32);
    const char *i4[] = {"lenf", "c32"}, *o4[] = {"q"};
    mb_node(&b, "Div", "div", i4, 2, o4, 1);
    const char *i5[] = {"q"}, *o5[] = {"qc"};
    mb_node(&b, "Ceil", "ceil", i5, 1, o5, 1);
    const char *i6[] = {"qc", "c32"}, *o6[] = {"m"};
    mb_node(&b, "Mul", "mul", i6, 2, o6, 1);
    const char *i7[] = {"m", "lenf"}, *o7[] = {"d"};
    mb_node(&b, "Sub", "sub", i7, 2, o7, 1);
    const char *i8[] = {"d"}, *o8[] = {"p"};
    mb_attr_int(&b, mb_node(&b, "Cast", "toint", i8, 1, o8, 1), "to",
                MP_DTYPE_INT64);
    const char *i9[] = {"p", "ax"}, *o9[] = {"pu"};
    mb_node(&b, "Unsqueeze", "unsq", i9, 2, o9, 1);
    const char *i10[] = {"zeros", "pu"}, *o10[] = {"pads"};
    mb_attr_int(&b, mb_node(&b, "Concat", "concat", i10, 2, o10, 1), "axis",
                0);
    const char *i11[] = {"x", "pads"}, *o11[] = {"y"};
    mb_node(&b, "Pad", "pad", i11, 2, o11, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, &o, ctx, &g), MP_OK);
    const int64_t yd[] = {1, 1, 128};
    CU_ASSERT(shape_is(tensor(g, "y"), 3, yd));
    const mp__tensor *p = tensor(g, "p");
    CU_ASSERT_FATAL(p && p->value && p->n_value == 1);
    CU_ASSERT_EQUAL(p->value[0], 28);
    CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g), 0);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* PyTorch's F.pad lowering: pads [lo, hi] of the last axis become the ONNX
 * pads through Concat(zeros) -> Reshape [-1, 2] -> Slice (step -1, a
 * flip) -> Transpose -> Reshape [-1]; the 2-D Slice and Transpose fold the
 * value. x[1,3,10] with (lo, hi) = (2, 5) -> y[1,3,17]. */
static void test_pad_list_folding(void)
{
    mb b;
    mb_init(&b, 8, 17);
    const int64_t xd[] = {1, 3, 10}, n2[] = {2}, n4[] = {4}, n1[] = {1};
    const int64_t lohi[] = {2, 5}, zeros[4] = {0}, shp[] = {-1, 2};
    const int64_t st[] = {-1}, en[] = {INT64_MIN}, ax[] = {0}, sp[] = {-1};
    const int64_t flat[] = {-1};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 3, xd, NULL);
    mb_init_tensor(&b, mb_tensor(&b, "lohi", MP_DTYPE_INT64, 1, n2, lohi, 2));
    mb_init_tensor(&b, mb_tensor(&b, "z", MP_DTYPE_INT64, 1, n4, zeros, 4));
    mb_init_tensor(&b, mb_tensor(&b, "shp", MP_DTYPE_INT64, 1, n2, shp, 2));
    mb_init_tensor(&b, mb_tensor(&b, "st", MP_DTYPE_INT64, 1, n1, st, 1));
    mb_init_tensor(&b, mb_tensor(&b, "en", MP_DTYPE_INT64, 1, n1, en, 1));
    mb_init_tensor(&b, mb_tensor(&b, "ax", MP_DTYPE_INT64, 1, n1, ax, 1));
    mb_init_tensor(&b, mb_tensor(&b, "sp", MP_DTYPE_INT64, 1, n1, sp, 1));
    mb_init_tensor(&b, mb_tensor(&b, "flat", MP_DTYPE_INT64, 1, n1, flat, 1));
    const char *i1[] = {"lohi", "z"}, *o1[] = {"cat"};
    mb_attr_int(&b, mb_node(&b, "Concat", "cat", i1, 2, o1, 1), "axis", 0);
    const char *i2[] = {"cat", "shp"}, *o2[] = {"r2"};
    mb_node(&b, "Reshape", "r2", i2, 2, o2, 1);
    const char *i3[] = {"r2", "st", "en", "ax", "sp"}, *o3[] = {"fl"};
    mb_node(&b, "Slice", "flip", i3, 5, o3, 1);
    const char *i4[] = {"fl"}, *o4[] = {"tr"};
    const int64_t perm[] = {1, 0};
    mb_attr_ints(&b, mb_node(&b, "Transpose", "tr", i4, 1, o4, 1), "perm",
                 perm, 2);
    const char *i5[] = {"tr", "flat"}, *o5[] = {"pads"};
    mb_node(&b, "Reshape", "r1", i5, 2, o5, 1);
    const char *i6[] = {"x", "pads"}, *o6[] = {"y"};
    mb_node(&b, "Pad", "pad", i6, 2, o6, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, &o, ctx, &g), MP_OK);
    /* cat [2,5,0,0,0,0] -> [[2,5],[0,0],[0,0]] -> flipped rows
     * [[0,0],[0,0],[2,5]] -> transposed [[0,0,2],[0,0,5]] -> flat */
    const mp__tensor *p = tensor(g, "pads");
    CU_ASSERT_FATAL(p && p->value && p->n_value == 6);
    const int64_t want[6] = {0, 0, 2, 0, 0, 5};
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(p->value[i], want[i]);
    const int64_t yd[] = {1, 3, 17};
    CU_ASSERT(shape_is(tensor(g, "y"), 3, yd));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* IR 1 / opset 1 Add with broadcast=1, axis=1: B[4] lines up with A's axis
 * 1 of [2,4,3,3] (super_resolution's bias adds); the dims after B's were
 * left unset before. */
static void test_legacy_broadcast(void)
{
    mb b;
    mb_init(&b, 3, 1);
    const int64_t xd[] = {2, 4, 3, 3}, bd[] = {4};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 4, xd, NULL);
    mb_input(&b, "bias", MP_DTYPE_FLOAT32, 1, bd, NULL);
    const char *in[] = {"x", "bias"}, *out[] = {"y"};
    Onnx__NodeProto *n = mb_node(&b, "Add", "add", in, 2, out, 1);
    mb_attr_int(&b, n, "broadcast", 1);
    mb_attr_int(&b, n, "axis", 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = 0;
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, &o, ctx, &g), MP_OK);
    CU_ASSERT(shape_is(tensor(g, "y"), 4, xd));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* Found by fuzz_onnx: Tile with repeats whose product overflows int64 was
 * signed overflow (UB); negative repeats gave a negative dim. Now
 * MP_ERR_OVERFLOW and MP_ERR_SHAPE. A node without outputs whose inputs
 * are float constants read outputs[0] of an empty list (UB). */
static void test_fuzz_regressions(void)
{
    const int64_t reps[2][2] = {{INT64_MAX / 2, 1}, {-3, 1}};
    const mp_status want[2] = {MP_ERR_OVERFLOW, MP_ERR_SHAPE};
    for (int k = 0; k < 2; k++) {
        mb b;
        mb_init(&b, 8, 17);
        const int64_t xd[] = {4, 3}, rd[] = {2};
        mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
        mb_init_tensor(&b, mb_tensor(&b, "r", MP_DTYPE_INT64, 1, rd,
                                     reps[k], 2));
        const char *in[] = {"x", "r"}, *out[] = {"y"};
        mb_node(&b, "Tile", "tile", in, 2, out, 1);
        mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
        mp_onnx_options o;
        mp_onnx_options_init(&o);
        o.declared_shapes = 0;
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        size_t len;
        uint8_t *buf = mb_pack(&b, &len);
        CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &o,
                                                  &g), want[k]);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "tile"));
        CU_ASSERT_PTR_NULL(g);
        mp_ctx_destroy(ctx);
        mb_free(&b);
    }
    /* Add(c1, c2) with no outputs, beside x -> Relu -> y */
    mb b;
    mb_init(&b, 8, 17);
    const int64_t xd[] = {2};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 1, xd, NULL);
    mb_init_tensor(&b, mb_float_scalar(&b, "c1", 1.5f));
    mb_init_tensor(&b, mb_float_scalar(&b, "c2", 2.0f));
    const char *ia[] = {"c1", "c2"};
    mb_node(&b, "Add", "add", ia, 2, NULL, 0);
    const char *ir[] = {"x"}, *or_[] = {"y"};
    mb_node(&b, "Relu", "relu", ir, 1, or_, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(load(&b, NULL, ctx, &g), MP_OK);
    CU_ASSERT(shape_is(tensor(g, "y"), 1, xd));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* plans g and checks the plan with the verifier */
static void plans_and_verifies(mp_graph *g)
{
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
}

/* --dim x:0=6 re-batches a model whose input has a fixed batch 1: the
 * declared value_info and output shapes (batch 1) are hints that the
 * re-inferred shapes replace */
static void test_rebatch_fixed_dim(void)
{
    mb b;
    build_cnn(&b, 1);
    const int64_t cd1[] = {1, 4, 4, 4};
    b.vinfo[b.graph.n_value_info++] =
        mb_vi(&b, "c", MP_DTYPE_FLOAT32, 4, cd1, NULL);
    b.vinfo[b.graph.n_value_info++] =
        mb_vi(&b, "r", MP_DTYPE_FLOAT32, 4, cd1, NULL);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g1 = NULL, *g6 = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g1), MP_OK);
    mp_dim_binding bind = {"x:0", 6};
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = &bind;
    opt.n_dims = 1;
    CU_ASSERT_EQUAL_FATAL(load(&b, &opt, ctx, &g6), MP_OK);
    const int64_t xd[] = {6, 3, 8, 8}, cd[] = {6, 4, 4, 4}, yd[] = {6, 64};
    CU_ASSERT(shape_is(tensor(g6, "x"), 4, xd));
    CU_ASSERT(shape_is(tensor(g6, "c"), 4, cd));
    CU_ASSERT(shape_is(tensor(g6, "r"), 4, cd));
    CU_ASSERT(shape_is(tensor(g6, "y"), 2, yd));
    CU_ASSERT_EQUAL(tensor(g6, "y")->bytes, 6 * 64 * 4);
    CU_ASSERT_EQUAL(tensor(g6, "c")->bytes, 6 * tensor(g1, "c")->bytes);
    CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g6), 0);
    /* the weight keeps its dims */
    const int64_t wd[] = {4, 3, 3, 3};
    CU_ASSERT(shape_is(tensor(g6, "w"), 4, wd));
    plans_and_verifies(g6);
    mp_graph_destroy(g1);
    mp_graph_destroy(g6);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* a declared intermediate shape that disagrees with inference (no
 * binding at all) is replaced by the inferred one */
static void test_declared_shape_is_hint(void)
{
    mb b;
    mb_init(&b, 8, 13);
    const int64_t xd[] = {2, 3}, bad[] = {7, 7, 7};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
    const char *in[] = {"x"}, *out[] = {"r"};
    mb_node(&b, "Relu", "relu", in, 1, out, 1);
    b.vinfo[b.graph.n_value_info++] =
        mb_vi(&b, "r", MP_DTYPE_FLOAT32, 3, bad, NULL);
    mb_output(&b, "r", MP_DTYPE_FLOAT32, 3, bad);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
    CU_ASSERT(shape_is(tensor(g, "r"), 2, xd));
    CU_ASSERT_EQUAL(tensor(g, "r")->bytes, 24);
    plans_and_verifies(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* re-batching through a fixed weight dim or a constant Reshape target is
 * an error naming the node */
static void test_rebatch_conflicts(void)
{
    mb b;
    mb_init(&b, 8, 13);
    const int64_t xd[] = {1, 8}, wd[] = {8, 4}, two = 2, tgt[] = {1, 4};
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
    mb_init_tensor(&b, mb_tensor(&b, "w", MP_DTYPE_FLOAT32, 2, wd, NULL, 0));
    mb_init_tensor(&b, mb_tensor(&b, "tgt", MP_DTYPE_INT64, 1, &two, tgt, 2));
    const char *mi[] = {"x", "w"}, *mo[] = {"m"};
    mb_node(&b, "MatMul", "mm", mi, 2, mo, 1);
    const char *ri[] = {"m", "tgt"}, *ro[] = {"y"};
    mb_node(&b, "Reshape", "flat", ri, 2, ro, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, 2, tgt);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
    mp_graph_destroy(g);
    g = NULL;
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.n_dims = 1;
    /* x:1 = 5 disagrees with w's fixed dim 8 */
    mp_dim_binding k = {"x:1", 5};
    opt.dims = &k;
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &opt,
                                              &g),
                    MP_ERR_SHAPE);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'mm'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "(5 and 8): 'x' and "
                                                       "'w'"));
    /* x:0 = 3: the Reshape target [1, 4] holds 4 of 12 elements */
    mp_dim_binding n3 = {"x:0", 3};
    opt.dims = &n3;
    CU_ASSERT_NOT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx",
                                                  &opt, &g),
                        MP_OK);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "flat"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(mp_ctx_message(ctx), "cannot reshape input 'm' (12 elements) "
                                    "into the target shape 'tgt' (4 "
                                    "elements)"));
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* bindings that name nothing of the model are errors */
static void test_binding_errors(void)
{
    mb b;
    build_cnn(&b, 0);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    mp_ctx *ctx = mp_ctx_create(NULL);
    const struct {
        mp_dim_binding b;
        const char *says;
    } cases[] = {
        {{"nosuch:0", 2}, "'nosuch:0'"}, /* no such input */
        {{"x:4", 2}, "rank 4"},          /* no such axis */
        {{"N", 2}, "no symbolic dim"},   /* no such symbol */
        {{"w:0", 2}, "weight"},          /* an initializer */
        {{"x:", 2}, "'x:'"},             /* no axis */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mp_onnx_options opt;
        mp_onnx_options_init(&opt);
        opt.dims = &cases[i].b;
        opt.n_dims = 1;
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx",
                                                  &opt, &g),
                        MP_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NULL(g);
        if (!strstr(mp_ctx_message(ctx), cases[i].says))
            printf("\n  case %zu: %s ", i, mp_ctx_message(ctx));
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), cases[i].says));
    }
    /* the same name twice with two values */
    mp_dim_binding two[] = {{"x:0", 2}, {"x:0", 3}};
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = two;
    opt.n_dims = 2;
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &opt,
                                              &g),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "twice"));
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* inputs declared with no shape (q, k): the bindings q:0..q:R-1 give the
 * whole shape (--shape q=2x5x3); missing or with a gap, an error */
static void test_rankless_input_shape(void)
{
    mb b;
    mb_init(&b, 8, 13);
    mb_input(&b, "q", MP_DTYPE_FLOAT32, -1, NULL, NULL);
    mb_input(&b, "k", MP_DTYPE_FLOAT32, -1, NULL, NULL);
    const char *mi[] = {"q", "k"}, *mo[] = {"s"};
    mb_node(&b, "MatMul", "mm", mi, 2, mo, 1);
    const char *si[] = {"s"}, *so[] = {"p"};
    mb_node(&b, "Softmax", "sm", si, 1, so, 1);
    mb_output(&b, "p", MP_DTYPE_FLOAT32, -1, NULL);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", NULL,
                                              &g),
                    MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--shape q="));
    mp_dim_binding sh[] = {{"q:0", 2}, {"q:1", 5}, {"q:2", 3},
                           {"k:0", 2}, {"k:1", 3}, {"k:2", 7}};
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = sh;
    opt.n_dims = 6;
    CU_ASSERT_EQUAL_FATAL(
        mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &opt, &g), MP_OK);
    const int64_t qd[] = {2, 5, 3}, pd[] = {2, 5, 7};
    CU_ASSERT(shape_is(tensor(g, "q"), 3, qd));
    CU_ASSERT(shape_is(tensor(g, "p"), 3, pd));
    CU_ASSERT_EQUAL(tensor(g, "p")->bytes, 2 * 5 * 7 * 4);
    CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g), 0);
    plans_and_verifies(g);
    mp_graph_destroy(g);
    g = NULL;
    /* a gap: k:1 missing, k:2 given */
    mp_dim_binding gap[] = {{"q:0", 2}, {"q:1", 5}, {"q:2", 3},
                            {"k:0", 2}, {"k:2", 7}};
    opt.dims = gap;
    opt.n_dims = 5;
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", &opt,
                                              &g),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'k:2'"));
    mp_ctx_destroy(ctx);
    mb_free(&b);
}

/* a body with one node OP(ins) -> out, out its only output */
static Onnx__GraphProto *mb_body(mb *b, const char *name, const char *op,
                                 const char *const *ins, size_t nin,
                                 const char *out)
{
    Onnx__GraphProto *gp = mb_new(b, sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = mb_str(b, name);
    Onnx__NodeProto *n = mb_new(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = mb_str(b, op);
    n->name = mb_str(b, name);
    n->n_input = nin;
    n->input = mb_new(b, nin * sizeof(char *));
    for (size_t i = 0; i < nin; i++)
        n->input[i] = mb_str(b, ins[i]);
    n->n_output = 1;
    n->output = mb_new(b, sizeof(char *));
    n->output[0] = mb_str(b, out);
    gp->n_node = 1;
    gp->node = mb_new(b, sizeof *gp->node);
    gp->node[0] = n;
    gp->n_output = 1;
    gp->output = mb_new(b, sizeof *gp->output);
    gp->output[0] = mb_vi(b, out, MP_DTYPE_FLOAT32, -1, NULL, NULL);
    return gp;
}

/* If(cond) with then: Reshape(x[2,3], [3,2]) and else: Reshape(x, tgt);
 * cond a graph input (unknown) or a constant */
static void build_if(mb *b, const int64_t *else_tgt, int cond_const)
{
    mb_init(b, 8, 13);
    const int64_t xd[] = {2, 3}, two = 2, t32[] = {3, 2};
    mb_input(b, "x", MP_DTYPE_FLOAT32, 2, xd, NULL);
    mb_init_tensor(b, mb_tensor(b, "t32", MP_DTYPE_INT64, 1, &two, t32, 2));
    mb_init_tensor(b, mb_tensor(b, "tel", MP_DTYPE_INT64, 1, &two, else_tgt,
                                2));
    if (cond_const >= 0) {
        const int64_t c = cond_const;
        mb_init_tensor(b, mb_tensor(b, "cond", MP_DTYPE_BOOL, 0, &two, NULL,
                                    0));
        Onnx__TensorProto *ct = b->inits[b->graph.n_initializer - 1];
        ct->n_int32_data = 1;
        ct->int32_data = mb_new(b, sizeof(int32_t));
        ct->int32_data[0] = (int32_t)c;
    } else {
        mb_input(b, "cond", MP_DTYPE_BOOL, 0, NULL, NULL);
    }
    const char *ti[] = {"x", "t32"}, *ei[] = {"x", "tel"};
    Onnx__GraphProto *gt = mb_body(b, "then_r", "Reshape", ti, 2, "t");
    Onnx__GraphProto *ge = mb_body(b, "else_r", "Reshape", ei, 2, "e");
    const char *ii[] = {"cond"}, *io[] = {"y"};
    Onnx__NodeProto *ifn = mb_node(b, "If", "if", ii, 1, io, 1);
    Onnx__AttributeProto *a =
        mb_attr(b, ifn, "then_branch",
                ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = gt;
    a = mb_attr(b, ifn, "else_branch",
                ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = ge;
    mb_output(b, "y", MP_DTYPE_FLOAT32, -1, NULL);
}

/* If: a branch that is inconsistent at the input shapes (Reshape of 6
 * elements into [4,4]) cannot run: with an unknown condition the If takes
 * the other branch; a constant condition infers its branch only; both
 * valid, the output has the larger footprint */
static void test_if_invalid_branch(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    const int64_t bad[] = {4, 4}, ok61[] = {6, 1}, t32[] = {3, 2};
    const struct {
        const int64_t *else_tgt;
        int cond;             /* -1: a graph input */
        int rank;             /* of y; -1: shape not known (two shapes) */
        const int64_t *y;
    } cases[] = {
        {bad, -1, 2, t32},   /* else invalid: then taken */
        {bad, 1, 2, t32},    /* cond true: then */
        {ok61, 0, 2, ok61},  /* cond false: else */
        {ok61, -1, -1, NULL}, /* both valid: [?, ?], 24 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mb b;
        build_if(&b, cases[i].else_tgt, cases[i].cond);
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
        const mp__tensor *y = tensor(g, "y");
        if (cases[i].rank >= 0)
            CU_ASSERT(shape_is(y, cases[i].rank, cases[i].y));
        CU_ASSERT_EQUAL(y->bytes, 24);
        plans_and_verifies(g);
        mp_graph_destroy(g);
        mb_free(&b);
    }
    /* both branches invalid: the then-branch's error */
    mb b;
    build_if(&b, bad, -1);
    b.graph.initializer[0]->int64_data[0] = 5; /* t32 -> [5, 2] */
    mp_graph *g = NULL;
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "m.onnx", NULL,
                                              &g),
                    MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "then_branch"));
    mb_free(&b);
    mp_ctx_destroy(ctx);
}

/* PRelu before opset 7: a 1-D slope of size C applies along axis 1;
 * Gradient (preview.training): output i has input i's shape */
static void test_prelu_legacy_and_gradient(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mb b;
    mb_init(&b, 3, 6);
    const int64_t xd[] = {2, 3, 4}, three = 3;
    mb_input(&b, "x", MP_DTYPE_FLOAT32, 3, xd, NULL);
    mb_init_tensor(&b, mb_tensor(&b, "slope", MP_DTYPE_FLOAT32, 1, &three,
                                 NULL, 0));
    const char *pi[] = {"x", "slope"}, *po[] = {"y"};
    mb_node(&b, "PRelu", "prelu", pi, 2, po, 1);
    mb_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
    CU_ASSERT(shape_is(tensor(g, "y"), 3, xd));
    mp_graph_destroy(g);
    g = NULL;
    /* opset 7+: numpy broadcasting, [2,3,4] with [3] is an error */
    b.opset.version = 9;
    CU_ASSERT_EQUAL(load(&b, NULL, ctx, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NULL(g);
    mb_free(&b);
    mb_init(&b, 7, 12);
    const int64_t ad[] = {2, 5}, bd[] = {5};
    mb_input(&b, "a", MP_DTYPE_FLOAT32, 2, ad, NULL);
    mb_input(&b, "b", MP_DTYPE_FLOAT64, 1, bd, NULL);
    const char *gi[] = {"a", "b"}, *go[] = {"da", "db"};
    Onnx__NodeProto *gn = mb_node(&b, "Gradient", "grad", gi, 2, go, 2);
    gn->domain = mb_str(&b, "ai.onnx.preview.training");
    mb_output(&b, "da", MP_DTYPE_FLOAT32, -1, NULL);
    mb_output(&b, "db", MP_DTYPE_FLOAT64, -1, NULL);
    CU_ASSERT_EQUAL_FATAL(load(&b, NULL, ctx, &g), MP_OK);
    CU_ASSERT(shape_is(tensor(g, "da"), 2, ad));
    CU_ASSERT(shape_is(tensor(g, "db"), 1, bd));
    CU_ASSERT_EQUAL(tensor(g, "db")->bytes, 40);
    mp_graph_destroy(g);
    mb_free(&b);
    mp_ctx_destroy(ctx);
}

static CU_TestInfo tests[] = {
    {"CNN: conv, shape arithmetic folded, reshape -1", test_cnn_shapes},
    {"float folding: Pad amounts through Cast/Div/Ceil/Mul/Sub",
     test_float_folding},
    {"pad list folding: 2-D Slice (flip) and Transpose of constants",
     test_pad_list_folding},
    {"legacy broadcast: Add broadcast=1 axis=1 (opset 1)",
     test_legacy_broadcast},
    {"fuzz regressions: Tile overflow, node without outputs",
     test_fuzz_regressions},
    {"symbolic dims: unbound error, --dim binding", test_symbolic_dims},
    {"IR 3: initializers listed as inputs are weights",
     test_ir3_initializer_inputs},
    {"unknown op: error names it; value_info plans", test_unknown_op},
    {"truncated and corrupted protobuf: errors, no crash", test_corrupt},
    {"mp_graph_load detects .onnx", test_graph_load_detects_onnx},
    {"--dim INPUT:AXIS re-batches a fixed dim; declared shapes are hints",
     test_rebatch_fixed_dim},
    {"declared shape that disagrees with inference is replaced",
     test_declared_shape_is_hint},
    {"re-batch conflicts with a weight dim or a constant Reshape: error",
     test_rebatch_conflicts},
    {"bindings naming no input, axis or symbol are errors",
     test_binding_errors},
    {"rankless inputs take their shape from INPUT:0..R-1 (--shape)",
     test_rankless_input_shape},
    {"If: a branch invalid at the input shapes is not taken",
     test_if_invalid_branch},
    {"PRelu opset < 7 channel slope; Gradient takes its inputs' shapes",
     test_prelu_legacy_and_gradient},
    CU_TEST_INFO_NULL};

void mp_register_onnx(void) { mp_test_add_suite("onnx", tests); }
#endif
