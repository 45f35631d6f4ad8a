/* ONNX writer (frontends/onnx/onnx_write.c): graphs built here (JSON text, the
 * C API, or a protobuf-c model with If bodies) are written as ONNX, read
 * back, and compared tensor by tensor and plan by plan. Skipped with a
 * message when memplan is built without ONNX. */
#include "support.h"

#include "ir.h"
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MP_WITH_ONNX

static void test_skipped(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(
                        ctx, "{\"tensors\": [], \"nodes\": []}", "t", &g),
                    MP_OK);
    void *d;
    size_t n;
    CU_ASSERT_EQUAL(mp_graph_to_onnx(g, &d, &n), MP_ERR_UNSUPPORTED);
    fprintf(stderr, "\n  onnx_write: skipped (memplan built without ONNX)\n");
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

void mp_register_onnx_write(void)
{
    static CU_TestInfo tests[] = {{"skipped: no ONNX", test_skipped},
                                  CU_TEST_INFO_NULL};
    mp_test_add_suite("onnx_write", tests);
}

#else
#include "onnx_build.h"

/* A graph exercising every attribute type the IR keeps, weights, a bytes-
 * only tensor behind an unknown op, a Constant node and a view. */
static const char json_text[] =
    "{\"name\": \"rt\",\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [2, 3, 8, 8], "
    "\"kind\": \"input\"},\n"
    "  {\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [4, 3, 3, 3], "
    "\"kind\": \"weight\"},\n"
    "  {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [4], "
    "\"kind\": \"weight\"},\n"
    "  {\"name\": \"fw\", \"dtype\": \"float16\", \"shape\": [64, 10], "
    "\"kind\": \"weight\"},\n"
    "  {\"name\": \"c\", \"dtype\": \"float16\", \"shape\": [1, 10]},\n"
    "  {\"name\": \"packed\", \"bytes\": 1000}\n"
    " ],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"conv\", \"op\": \"Conv\", \"inputs\": [\"x\", \"w\", \"b\"],"
    " \"outputs\": [\"y\"], \"attributes\": {\"kernel_shape\": [3, 3], "
    "\"pads\": [1, 1, 1, 1], \"group\": 1}},\n"
    "  {\"name\": \"act\", \"op\": \"LeakyRelu\", \"inputs\": [\"y\"], "
    "\"outputs\": [\"a\"], \"attributes\": {\"alpha\": 0.25}},\n"
    "  {\"name\": \"pool\", \"op\": \"MaxPool\", \"inputs\": [\"a\"], "
    "\"outputs\": [\"p\"], \"attributes\": {\"kernel_shape\": [2, 2], "
    "\"strides\": [2, 2], \"auto_pad\": \"NOTSET\"}},\n"
    "  {\"name\": \"flat\", \"op\": \"Flatten\", \"inputs\": [\"p\"], "
    "\"outputs\": [\"f\"], \"attributes\": {\"axis\": 1}},\n"
    "  {\"name\": \"cast\", \"op\": \"Cast\", \"inputs\": [\"f\"], "
    "\"outputs\": [\"h\"], \"attributes\": {\"to\": 10}},\n"
    "  {\"name\": \"mm\", \"op\": \"MatMul\", \"inputs\": [\"h\", \"fw\"], "
    "\"outputs\": [\"m\"]},\n"
    "  {\"name\": \"cst\", \"op\": \"Constant\", \"inputs\": [], "
    "\"outputs\": [\"c\"]},\n"
    "  {\"name\": \"add\", \"op\": \"Add\", \"inputs\": [\"m\", \"c\"], "
    "\"outputs\": [\"s\"]},\n"
    "  {\"name\": \"rs\", \"op\": \"Resize\", \"inputs\": [\"s\"], "
    "\"outputs\": [\"r\"], \"attributes\": {\"scales\": [1.0, 2.0], "
    "\"mode\": \"nearest\"}},\n"
    "  {\"name\": \"pack\", \"op\": \"MyPack\", \"domain\": \"com.example\", "
    "\"inputs\": [\"r\"], \"outputs\": [\"packed\"], "
    "\"attributes\": {\"level\": 3}},\n"
    "  {\"name\": \"sm\", \"op\": \"Softmax\", \"inputs\": [\"r\"], "
    "\"outputs\": [\"out\"], \"attributes\": {\"axis\": -1}}\n"
    " ],\n"
    " \"outputs\": [\"out\", \"packed\"]}\n";

static const mp__tensor *find(const mp_graph *g, const char *name)
{
    uint32_t id;
    if (mp_graph_find_tensor(g, name, &id) != MP_OK)
        return NULL;
    return &g->tensors[id];
}

/* kind OUTPUT is an activation marked as graph output */
static int kind_of(const mp__tensor *t)
{
    return t->kind == MP_KIND_OUTPUT ? MP_KIND_ACTIVATION : t->kind;
}

/* Every tensor of a with a size is in b with the same dtype, shape, bytes
 * and effective kind; returns the number compared. */
static int same_tensors(const mp_graph *a, const mp_graph *b)
{
    int n = 0;
    for (size_t i = 0; i < a->n_tensors; i++) {
        const mp__tensor *t = &a->tensors[i];
        if (!(t->flags & MP__TF_SIZE_KNOWN))
            continue;
        const mp__tensor *u = find(b, t->name);
        CU_ASSERT_PTR_NOT_NULL(u);
        if (!u)
            continue;
        n++;
        CU_ASSERT_EQUAL(u->bytes, t->bytes);
        CU_ASSERT_EQUAL(kind_of(u), kind_of(t));
        CU_ASSERT_EQUAL(u->alias_of == MP_NONE, t->alias_of == MP_NONE);
        if (t->rank >= 0 && !(t->flags & MP__TF_BYTES_GIVEN)) {
            CU_ASSERT_EQUAL(u->dtype, t->dtype);
            CU_ASSERT_EQUAL_FATAL(u->rank, t->rank);
            for (int32_t k = 0; k < t->rank; k++)
                CU_ASSERT_EQUAL(u->dims[k], t->dims[k]);
        }
    }
    return n;
}

static void same_plan(mp_graph *a, mp_graph *b)
{
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *pa = NULL, *pb = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(a, &o, &pa), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(b, &o, &pb), MP_OK);
    const mp_figures *fa = mp_plan_figures(pa), *fb = mp_plan_figures(pb);
    CU_ASSERT(fa->arena_bytes > 0);
    CU_ASSERT_EQUAL(fa->arena_bytes, fb->arena_bytes);
    CU_ASSERT_EQUAL(fa->lower_bound_bytes, fb->lower_bound_bytes);
    CU_ASSERT_EQUAL(fa->persistent_bytes, fb->persistent_bytes);
    CU_ASSERT_EQUAL(fa->peak_bytes, fb->peak_bytes);
    CU_ASSERT_EQUAL(mp_verify_plan(b, pb), MP_OK);
    mp_plan_destroy(pa);
    mp_plan_destroy(pb);
}

static mp_status reload(mp_graph *g, int declared, mp_graph **out)
{
    void *buf = NULL;
    size_t len = 0;
    mp_status st = mp_graph_to_onnx(g, &buf, &len);
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT(len > 0);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.declared_shapes = declared;
    st = mp_graph_load_onnx_buffer(g->ctx, buf, len, "rt.onnx", &o, out);
    mp_free(g->ctx, buf);
    return st;
}

/* JSON -> ONNX -> graph: same tensors, shapes, attributes and plan */
static void test_json_roundtrip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL;
    mp_status st0 = mp_graph_load_json_string(ctx, json_text, "rt.json", &g);
    if (st0)
        fprintf(stderr, "\n%s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st0, MP_OK);
    mp_status st = reload(g, 1, &h);
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT(same_tensors(g, h) >= 14);
    CU_ASSERT_EQUAL(g->n_nodes, h->n_nodes);
    /* nodes: op, domain, inputs, outputs and every attribute */
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mp__node *n = &g->nodes[i];
        uint32_t id;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(h, n->name, &id), MP_OK);
        const mp__node *m = &h->nodes[id];
        CU_ASSERT_STRING_EQUAL(m->op, n->op);
        CU_ASSERT_STRING_EQUAL(m->domain, n->domain);
        CU_ASSERT_EQUAL_FATAL(m->n_in, n->n_in);
        CU_ASSERT_EQUAL_FATAL(m->n_out, n->n_out);
        for (uint32_t k = 0; k < n->n_in; k++)
            CU_ASSERT_STRING_EQUAL(h->tensors[m->inputs[k]].name,
                                   g->tensors[n->inputs[k]].name);
        for (uint32_t k = 0; k < n->n_out; k++)
            CU_ASSERT_STRING_EQUAL(h->tensors[m->outputs[k]].name,
                                   g->tensors[n->outputs[k]].name);
        /* the Constant node gains a value tensor (value.dtype/.dims) */
        if (strcmp(n->op, "Constant") != 0)
            CU_ASSERT_EQUAL(m->n_attrs, n->n_attrs);
        for (uint32_t k = 0; k < n->n_attrs; k++) {
            const mp__attr *a = &n->attrs[k], *b = mp__node_attr(m, a->name);
            CU_ASSERT_PTR_NOT_NULL_FATAL(b);
            CU_ASSERT_EQUAL_FATAL(b->type, a->type);
            switch (a->type) {
            case MP__ATTR_INT: CU_ASSERT_EQUAL(b->v.i, a->v.i); break;
            case MP__ATTR_FLOAT: CU_ASSERT_EQUAL(b->v.f, a->v.f); break;
            case MP__ATTR_STRING: CU_ASSERT_STRING_EQUAL(b->v.s, a->v.s); break;
            case MP__ATTR_INTS:
            case MP__ATTR_FLOATS:
                CU_ASSERT_EQUAL_FATAL(b->n, a->n);
                for (uint32_t j = 0; j < a->n; j++)
                    CU_ASSERT(a->type == MP__ATTR_INTS
                                  ? b->v.ints[j] == a->v.ints[j]
                                  : b->v.floats[j] == a->v.floats[j]);
                break;
            }
        }
    }
    const mp__tensor *c = find(h, "c");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->dtype, MP_DTYPE_FLOAT16);
    CU_ASSERT_EQUAL(c->bytes, 20);
    /* graph outputs, and the bytes-only tensor keeps its size */
    CU_ASSERT(find(h, "out")->flags & MP__TF_OUTPUT);
    CU_ASSERT(find(h, "packed")->flags & MP__TF_OUTPUT);
    CU_ASSERT_EQUAL(find(h, "packed")->bytes, 1000);
    same_plan(g, h);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Values of small integer weights round-trip exactly: the reloaded graph
 * infers Reshape/Slice shapes from them with declared shapes ignored. A
 * large weight is written without data (EXTERNAL, placeholder). */
static void test_values_roundtrip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    const int64_t xd[] = {4, 6}, sd[] = {3}, wd[] = {512, 1024}, sl[] = {1};
    uint32_t x, s, w, st1, en, y, z, q;
    mp_tensor_desc dx = {"x", MP_DTYPE_FLOAT32, 2, xd, 0, MP_KIND_INPUT};
    mp_tensor_desc ds = {"shape", MP_DTYPE_INT64, 1, sd, 0, MP_KIND_WEIGHT};
    mp_tensor_desc dw = {"big", MP_DTYPE_FLOAT32, 2, wd, 0, MP_KIND_WEIGHT};
    mp_tensor_desc d1 = {"starts", MP_DTYPE_INT32, 1, sl, 0, MP_KIND_WEIGHT};
    mp_tensor_desc d2 = {"ends", MP_DTYPE_INT32, 1, sl, 0, MP_KIND_WEIGHT};
    mp_tensor_desc dy = {"y", MP_DTYPE_UNDEFINED, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc dz = {"z", MP_DTYPE_UNDEFINED, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc dq = {"q", MP_DTYPE_UNDEFINED, -1, NULL, 0,
                         MP_KIND_OUTPUT};
    CU_ASSERT_FATAL(!mp_graph_add_tensor(g, &dx, &x) &&
                    !mp_graph_add_tensor(g, &ds, &s) &&
                    !mp_graph_add_tensor(g, &dw, &w) &&
                    !mp_graph_add_tensor(g, &d1, &st1) &&
                    !mp_graph_add_tensor(g, &d2, &en) &&
                    !mp_graph_add_tensor(g, &dy, &y) &&
                    !mp_graph_add_tensor(g, &dz, &z) &&
                    !mp_graph_add_tensor(g, &dq, &q));
    const int64_t shape_v[] = {4, -1, 3}, st_v[] = {1}, en_v[] = {-1};
    CU_ASSERT_FATAL(!mp__tensor_set_value(ctx, &g->tensors[s], shape_v, 3));
    CU_ASSERT_FATAL(!mp__tensor_set_value(ctx, &g->tensors[st1], st_v, 1));
    CU_ASSERT_FATAL(!mp__tensor_set_value(ctx, &g->tensors[en], en_v, 1));
    uint32_t in1[] = {x, s}, in2[] = {y, st1, en}, in3[] = {z};
    mp_node_desc n1 = {"reshape", "Reshape", "", in1, 2, &y, 1,
                       MP_PHASE_FORWARD};
    mp_node_desc n2 = {"slice", "Slice", "", in2, 3, &z, 1, MP_PHASE_FORWARD};
    mp_node_desc n3 = {"relu", "Relu", "", in3, 1, &q, 1, MP_PHASE_FORWARD};
    CU_ASSERT_FATAL(!mp_graph_add_node(g, &n1, NULL) &&
                    !mp_graph_add_node(g, &n2, NULL) &&
                    !mp_graph_add_node(g, &n3, NULL));
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    const int64_t zd[] = {2, 2, 3};
    CU_ASSERT_EQUAL_FATAL(find(g, "z")->rank, 3);
    CU_ASSERT_EQUAL(memcmp(find(g, "z")->dims, zd, sizeof zd), 0);

    /* the written model: shape and slice bounds with data, big without */
    void *buf = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_onnx(g, &buf, &len), MP_OK);
    CU_ASSERT(len < 4096); /* 2 MiB of weights are not written */
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT(m->has_ir_version && m->ir_version >= 4);
    CU_ASSERT_EQUAL_FATAL(m->n_opset_import, 1);
    CU_ASSERT_EQUAL(m->opset_import[0]->version, 17);
    CU_ASSERT_EQUAL_FATAL(m->graph->n_initializer, 4);
    int with_data = 0, external = 0;
    for (size_t i = 0; i < m->graph->n_initializer; i++) {
        const Onnx__TensorProto *t = m->graph->initializer[i];
        if (strcmp(t->name, "shape") == 0) {
            CU_ASSERT_EQUAL_FATAL(t->n_int64_data, 3);
            CU_ASSERT_EQUAL(t->int64_data[1], -1);
            with_data++;
        } else if (strcmp(t->name, "ends") == 0) {
            CU_ASSERT_EQUAL_FATAL(t->n_int32_data, 1);
            CU_ASSERT_EQUAL(t->int32_data[0], -1);
            with_data++;
        } else if (strcmp(t->name, "big") == 0) {
            CU_ASSERT(t->has_data_location &&
                      t->data_location ==
                          ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
            CU_ASSERT_EQUAL(t->n_dims, 2);
            CU_ASSERT_EQUAL(t->n_float_data, 0);
            CU_ASSERT(!t->has_raw_data);
            external++;
        }
    }
    CU_ASSERT_EQUAL(with_data, 2);
    CU_ASSERT_EQUAL(external, 1);
    onnx__model_proto__free_unpacked(m, NULL);
    mp_free(ctx, buf);

    CU_ASSERT_EQUAL_FATAL(reload(g, 0, &h), MP_OK);
    CU_ASSERT_EQUAL(same_tensors(g, h), 8);
    const mp__tensor *sv = find(h, "shape");
    CU_ASSERT_EQUAL_FATAL(sv->n_value, 3);
    CU_ASSERT_EQUAL(memcmp(sv->value, shape_v, sizeof shape_v), 0);
    CU_ASSERT_EQUAL(find(h, "big")->bytes, 512u * 1024u * 4u);
    same_plan(g, h);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* float16 and bfloat16 values are written as their bits in int32_data */
static void test_half_values(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    const int64_t d4[] = {4};
    const double v[] = {1.5, -0.25, 65504.0, 5.960464477539063e-08};
    const uint32_t want16[] = {0x3e00, 0xb400, 0x7bff, 0x0001};
    const uint32_t want_bf[] = {0x3fc0, 0xbe80, 0x4780, 0x3380};
    int64_t bits[4];
    memcpy(bits, v, sizeof bits);
    mp_tensor_desc dh = {"h", MP_DTYPE_FLOAT16, 1, d4, 0, MP_KIND_WEIGHT};
    mp_tensor_desc db = {"b", MP_DTYPE_BFLOAT16, 1, d4, 0, MP_KIND_WEIGHT};
    uint32_t h, b;
    CU_ASSERT_FATAL(!mp_graph_add_tensor(g, &dh, &h) &&
                    !mp_graph_add_tensor(g, &db, &b));
    CU_ASSERT_FATAL(!mp__tensor_set_value(ctx, &g->tensors[h], bits, 4) &&
                    !mp__tensor_set_value(ctx, &g->tensors[b], bits, 4));
    void *buf;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_onnx(g, &buf, &len), MP_OK);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL_FATAL(m->graph->n_initializer, 2);
    for (size_t i = 0; i < 2; i++) {
        const Onnx__TensorProto *t = m->graph->initializer[i];
        const uint32_t *want = strcmp(t->name, "h") == 0 ? want16 : want_bf;
        CU_ASSERT_EQUAL_FATAL(t->n_int32_data, 4);
        for (int k = 0; k < 4; k++)
            CU_ASSERT_EQUAL((uint32_t)t->int32_data[k], want[k]);
        CU_ASSERT(!t->has_data_location);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    mp_free(ctx, buf);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- a model with If bodies that read an outer-scope name ---------------- */
static void test_if_roundtrip(void)
{
    /* top: cond (bool), x [2,3]; if: then Relu(x) [2,3], else
     * Concat(x, x) [4,3]; the If output y is declared in neither */
    const int64_t xd[] = {2, 3}, ed[] = {4, 3};
    ob b;
    ob_init(&b, 7, 13);
    Onnx__GraphProto *gt = ob_graph(&b, "then"), *ge = ob_graph(&b, "else");
    b.graph = gt;
    ob_node(&b, "Relu", "then_relu", "x", NULL, "t");
    ob_output(&b, "t", MP_DTYPE_FLOAT32, 2, xd);
    b.graph = ge;
    ob_attr_int(&b, ob_node(&b, "Concat", "else_cat", "x", "x", "e"), "axis",
                0);
    ob_output(&b, "e", MP_DTYPE_FLOAT32, 2, ed);
    b.graph = b.top;
    ob_input(&b, "cond", MP_DTYPE_BOOL, 0, NULL);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd);
    Onnx__NodeProto *ifn = ob_node(&b, "If", "if", "cond", NULL, "y");
    ob_attr_graph(&b, ifn, "then_branch", gt);
    ob_attr_graph(&b, ifn, "else_branch", ge);
    ob_node(&b, "Sigmoid", "sig", "y", NULL, "z");
    ob_output(&b, "z", MP_DTYPE_FLOAT32, 2, ed);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);

    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL;
    CU_ASSERT_EQUAL_FATAL(
        mp_graph_load_onnx_buffer(ctx, buf, len, "if.onnx", NULL, &g), MP_OK);
    ob_free(&b);
    CU_ASSERT_EQUAL_FATAL(g->n_subgraphs, 2);
    CU_ASSERT_EQUAL_FATAL(reload(g, 1, &h), MP_OK);
    CU_ASSERT_EQUAL_FATAL(h->n_subgraphs, 2);
    CU_ASSERT_EQUAL(g->onnx_opset, h->onnx_opset);
    CU_ASSERT(same_tensors(g, h) >= 4);
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_EQUAL(h->subgraphs[k]->n_nodes, g->subgraphs[k]->n_nodes);
        CU_ASSERT_EQUAL(h->subgraphs[k]->n_sub_outputs, 1);
        same_tensors(g->subgraphs[k], h->subgraphs[k]);
    }
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(h, "if", &id), MP_OK);
    /* the body's outer-scope input x, as the loader made it */
    CU_ASSERT_EQUAL(h->nodes[id].n_in, g->nodes[id].n_in);
    CU_ASSERT_PTR_NOT_NULL(mp__node_attr(&h->nodes[id], "then_branch.graph"));
    same_plan(g, h);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* A sequence value (SequenceConstruct -> ConcatFromSequence) is written
 * with a sequence type and reads back as one, same plan */
static void test_sequence_roundtrip(void)
{
    const int64_t xd[] = {2, 3};
    ob b;
    ob_init(&b, 8, 17);
    ob_input(&b, "x", MP_DTYPE_FLOAT32, 2, xd);
    ob_node(&b, "SequenceConstruct", "make", "x", "x", "s");
    ob_attr_int(&b, ob_node(&b, "ConcatFromSequence", "cat", "s", NULL, "y"),
                "axis", 0);
    ob_output(&b, "y", MP_DTYPE_FLOAT32, -1, NULL);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL;
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, "seq.onnx", NULL,
                                             &g);
    ob_free(&b);
    if (st)
        printf("\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    const mp__tensor *s = find(g, "s");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->seq);
    /* the written value_info of s is a sequence of float [2,3] */
    void *out;
    size_t olen;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_onnx(g, &out, &olen), MP_OK);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, olen, out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    int seen = 0;
    for (size_t i = 0; i < m->graph->n_value_info; i++) {
        const Onnx__ValueInfoProto *v = m->graph->value_info[i];
        if (strcmp(v->name, "s") != 0)
            continue;
        seen = 1;
        CU_ASSERT_EQUAL_FATAL(v->type->value_case,
                              ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE);
        const Onnx__TypeProto *e = v->type->sequence_type->elem_type;
        CU_ASSERT_EQUAL_FATAL(e->value_case,
                              ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE);
        CU_ASSERT_EQUAL(e->tensor_type->elem_type, MP_DTYPE_FLOAT32);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e->tensor_type->shape);
        CU_ASSERT_EQUAL(e->tensor_type->shape->n_dim, 2);
    }
    CU_ASSERT(seen);
    onnx__model_proto__free_unpacked(m, NULL);
    mp_free(ctx, out);
    CU_ASSERT_EQUAL_FATAL(reload(g, 0, &h), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(find(h, "s")->seq);
    CU_ASSERT(same_tensors(g, h) >= 3);
    same_plan(g, h);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Unknown input dims become dim_param "TENSOR:AXIS": the loader names the
 * symbol and a --dim binding of that name plans it. (A graph built through
 * the API and not finalized: loaded graphs have every input dim.) */
static void test_unknown_input_dim(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *h = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    const int64_t xd[] = {-1, 8};
    uint32_t x, y;
    mp_tensor_desc dx = {"x", MP_DTYPE_FLOAT32, 2, xd, 0, MP_KIND_INPUT};
    mp_tensor_desc dy = {"y", MP_DTYPE_UNDEFINED, -1, NULL, 0, MP_KIND_OUTPUT};
    CU_ASSERT_FATAL(!mp_graph_add_tensor(g, &dx, &x) &&
                    !mp_graph_add_tensor(g, &dy, &y));
    mp_node_desc n = {"r", "Relu", "", &x, 1, &y, 1, MP_PHASE_FORWARD};
    CU_ASSERT_FATAL(!mp_graph_add_node(g, &n, NULL));
    void *buf;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_onnx(g, &buf, &len), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_load_onnx_buffer(ctx, buf, len, "u.onnx", NULL,
                                              &h),
                    MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'x:0'"));
    mp_dim_binding b = {"x:0", 5};
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.dims = &b;
    o.n_dims = 1;
    CU_ASSERT_EQUAL_FATAL(
        mp_graph_load_onnx_buffer(ctx, buf, len, "u.onnx", &o, &h), MP_OK);
    CU_ASSERT_EQUAL(find(h, "y")->bytes, 5 * 8 * 4);
    mp_free(ctx, buf);
    mp_graph_destroy(h);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* memplan convert graph.json -o model.onnx, then plan both: same arena */
static void test_cli_convert(void)
{
    const char *p = mp_test_write_temp(".json", json_text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char json[256], onnx[300], cmd[1024], out[8192], out2[8192];
    snprintf(json, sizeof json, "%s", p);
    snprintf(onnx, sizeof onnx, "%s.onnx", json);
    snprintf(cmd, sizeof cmd, "'%s' convert %s -o %s", MP_CLI_PATH, json,
             onnx);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "'%s' plan %s --json", MP_CLI_PATH, json);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "'%s' plan %s --json", MP_CLI_PATH, onnx);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, out2, sizeof out2), 0);
    const char *a = strstr(out, "\"arena_bytes\"");
    const char *b = strstr(out2, "\"arena_bytes\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(strtoull(strchr(a, ':') + 1, NULL, 10),
                    strtoull(strchr(b, ':') + 1, NULL, 10));
    /* and back to JSON */
    snprintf(cmd, sizeof cmd, "'%s' convert %s", MP_CLI_PATH, onnx);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"MyPack\""));
    unlink(onnx);
    unlink(json);
}

void mp_register_onnx_write(void)
{
    static CU_TestInfo tests[] = {
        {"JSON -> ONNX -> graph: tensors, attributes, plan",
         test_json_roundtrip},
        {"small int weights keep their values, large ones none",
         test_values_roundtrip},
        {"float16/bfloat16 values as bits", test_half_values},
        {"If bodies with an outer-scope name", test_if_roundtrip},
        {"sequence values keep a sequence type", test_sequence_roundtrip},
        {"unknown input dim as dim_param TENSOR:AXIS",
         test_unknown_input_dim},
        {"memplan convert graph.json -o model.onnx", test_cli_convert},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("onnx_write", tests);
}

#endif /* MP_WITH_ONNX */
