/* Re-batching a model exported at a fixed batch (mp_onnx_options.batch,
 * CLI --batch; issues 3/5, helper rebatch): input leading dims, constant
 * Reshape targets ([1, K], [1, -1], the batch folded into dim 0), constant
 * Resize sizes, a symbolic batch, and the errors (rank 0, disagreeing
 * inputs, a conflicting binding, a target that cannot be re-batched, a
 * JSON graph). Models are built here with the generated protobuf-c code;
 * the corpus test (all 9 onnx_light models at batch 8, and the CLI on
 * light_resnet50) skips when ../shared/corpus is absent. Every plan is
 * verified. */
#include "support.h"

#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MP_WITH_ONNX

static void test_skipped(void)
{
    CU_ASSERT_EQUAL(mp_onnx_available(), 0);
    fprintf(stderr, "\n  rebatch: skipped (memplan built without ONNX)\n");
}

void mp_register_rebatch(void)
{
    static CU_TestInfo tests[] = {{"skipped: no ONNX", test_skipped},
                                  CU_TEST_INFO_NULL};
    mp_test_add_suite("rebatch", tests);
}

#else
#include "onnx_build.h"

/* an int64 initializer holding v (a shape constant, as exporters write
 * Reshape targets) */
static void int_init(ob *b, const char *name, const int64_t *v, size_t n)
{
    Onnx__TensorProto *t = ob_new(b, sizeof *t);
    int64_t *dims = ob_new(b, sizeof *dims);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 7; /* int64 */
    dims[0] = (int64_t)n;
    t->n_dims = 1;
    t->dims = dims;
    t->n_int64_data = n;
    t->int64_data = (int64_t *)v;
    b->graph->initializer[b->graph->n_initializer++] = t;
}

/* a Transpose node in -> out with perm (n entries) */
static void transpose(ob *b, const char *in, const char *out,
                      const int64_t *perm, size_t n)
{
    Onnx__NodeProto *tr = ob_node(b, "Transpose", out, in, NULL, out);
    Onnx__AttributeProto *pa = ob_attr(
        b, tr, "perm", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    pa->ints = (int64_t *)perm;
    pa->n_ints = n;
}

static mp_status load(ob *b, mp_ctx *ctx, int64_t batch,
                      const mp_dim_binding *dims, size_t n_dims,
                      mp_graph **g)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.batch = batch;
    o.dims = dims;
    o.n_dims = n_dims;
    return mp_graph_load_onnx_buffer(ctx, buf, len, "t.onnx", &o, g);
}

static const mp__tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, name, &id) == MP_OK);
    return &g->tensors[id];
}

/* Every tensor of g1 that is not persistent has n times its bytes in gn
 * (same name); returns how many were compared. */
static int assert_scaled(const mp_graph *g1, const mp_graph *gn, uint64_t n)
{
    int cnt = 0;
    for (size_t i = 0; i < g1->n_tensors; i++) {
        const mp__tensor *a = &g1->tensors[i];
        if (mp__kind_persistent(a->kind) || a->bytes == 0 ||
            a->dtype != MP_DTYPE_FLOAT32)
            continue;
        uint32_t id;
        CU_ASSERT_FATAL(mp_graph_find_tensor(gn, a->name, &id) == MP_OK);
        if (gn->tensors[id].bytes != a->bytes * n)
            fprintf(stderr, "\n  %s: %llu bytes, at batch 1 %llu\n", a->name,
                    (unsigned long long)gn->tensors[id].bytes,
                    (unsigned long long)a->bytes);
        CU_ASSERT_EQUAL(gn->tensors[id].bytes, a->bytes * n);
        cnt++;
    }
    return cnt;
}

/* x [1,3,4,4] -> Relu r -> Reshape [1, 48] -> y -> Gemm (W [10, 48]) z;
 * r -> Reshape [1, -1] -> y2; x -> Resize (sizes [1, 3, 8, 8]) -> u;
 * r -> Reshape [3, 16] (no batch in it at batch 1: a dim folded) -> f */
static const int64_t x_dims[] = {1, 3, 4, 4}, w_dims[] = {10, 48};
static const int64_t t48[] = {1, 48}, tm1[] = {1, -1}, sz[] = {1, 3, 8, 8};
static const int64_t t316[] = {3, 16};

static void model(ob *b)
{
    ob_init(b, 8, 13);
    ob_input(b, "x", 1, 4, x_dims);
    ob_init_tensor(b, "W", 2, w_dims);
    int_init(b, "target48", t48, 2);
    int_init(b, "target_m1", tm1, 2);
    int_init(b, "sizes", sz, 4);
    int_init(b, "target316", t316, 2);
    ob_node(b, "Relu", "relu", "x", NULL, "r");
    ob_node(b, "Reshape", "flatten", "r", "target48", "y");
    Onnx__NodeProto *gm = ob_node(b, "Gemm", "fc", "y", "W", "z");
    ob_attr_int(b, gm, "transB", 1);
    ob_node(b, "Reshape", "flatten_m1", "r", "target_m1", "y2");
    Onnx__NodeProto *rs = ob_node(b, "Resize", "up", "x", "", "u");
    rs->input = ob_new(b, 4 * sizeof *rs->input);
    rs->input[0] = (char *)"x";
    rs->input[1] = rs->input[2] = (char *)"";
    rs->input[3] = (char *)"sizes";
    rs->n_input = 4;
    ob_node(b, "Reshape", "fold", "r", "target316", "f");
    /* declared (batch-1) shapes, as an exporter writes them: hints */
    static const int64_t y_dims[] = {1, 48}, z_dims[] = {1, 10};
    ob_value_info(b, "y", 1, 2, y_dims);
    ob_output(b, "z", 1, 2, z_dims);
    ob_output(b, "y2", 1, -1, NULL);
    ob_output(b, "u", 1, -1, NULL);
    ob_output(b, "f", 1, -1, NULL);
}

static void t_reshape_resize(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    model(&b);
    mp_graph *g1 = NULL, *g8 = NULL, *g = NULL;
    /* as declared (batch 0 and batch 1 the same) */
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 0, NULL, 0, &g1), MP_OK);
    mp_test_assert_shape(g1, "y", 2, t48);
    mp_test_assert_shape(g1, "f", 2, t316);
    CU_ASSERT_EQUAL(g1->rebatch_to, 0);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 1, NULL, 0, &g), MP_OK);
    CU_ASSERT_EQUAL(assert_scaled(g1, g, 1), 7);
    mp_graph_destroy(g);
    /* batch 8: [1, 48] -> [8, 48], [1, -1] -> [8, 48], sizes [8, 3, 8, 8],
     * [3, 16] holds 48 elements at batch 1 -> [24, 16] (dim 0 scaled) */
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 8, NULL, 0, &g8), MP_OK);
    CU_ASSERT_EQUAL(g8->rebatch_from, 1);
    CU_ASSERT_EQUAL(g8->rebatch_to, 8);
    static const int64_t x8[] = {8, 3, 4, 4}, y8[] = {8, 48}, z8[] = {8, 10},
                         u8[] = {8, 3, 8, 8}, f8[] = {24, 16};
    mp_test_assert_shape(g8, "x", 4, x8);
    mp_test_assert_shape(g8, "y", 2, y8);
    mp_test_assert_shape(g8, "z", 2, z8);
    mp_test_assert_shape(g8, "y2", 2, y8);
    mp_test_assert_shape(g8, "u", 4, u8);
    mp_test_assert_shape(g8, "f", 2, f8);
    CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g8), 0);
    /* x, r, y, z, y2, u, f: every activation 8x its batch-1 bytes */
    CU_ASSERT_EQUAL(assert_scaled(g1, g8, 8), 7);
    mp_test_plan_verify(g8);
    /* reported: the input, the three targets and the sizes; at batch 1
     * (as declared) nothing */
    uint32_t kinds[MP_REBATCH_KIND_COUNT] = {0};
    for (uint32_t i = 0; i < mp_graph_num_rebatches(g8); i++) {
        mp_rebatch_info r;
        CU_ASSERT_EQUAL_FATAL(mp_graph_rebatch_info(g8, i, &r), MP_OK);
        CU_ASSERT_FATAL((unsigned)r.kind < MP_REBATCH_KIND_COUNT);
        kinds[r.kind]++;
        if (r.kind == MP_REBATCH_RESIZE) {
            CU_ASSERT_EQUAL(r.rank, 4);
            CU_ASSERT_EQUAL(r.old_value[0], 1);
            CU_ASSERT_EQUAL(r.new_value[0], 8);
            CU_ASSERT_EQUAL(r.new_value[3], 8);
        }
        if (r.kind == MP_REBATCH_FOLDED) {
            CU_ASSERT_EQUAL(r.old_value[0], 3);
            CU_ASSERT_EQUAL(r.new_value[0], 24);
        }
    }
    CU_ASSERT_EQUAL(mp_graph_num_rebatches(g8), 5);
    CU_ASSERT_EQUAL(kinds[MP_REBATCH_INPUT], 1);
    CU_ASSERT_EQUAL(kinds[MP_REBATCH_RESHAPE], 2);
    CU_ASSERT_EQUAL(kinds[MP_REBATCH_FOLDED], 1);
    CU_ASSERT_EQUAL(kinds[MP_REBATCH_RESIZE], 1);
    CU_ASSERT_EQUAL(mp_graph_num_rebatches(g1), 0);
    /* the constants themselves are unchanged (other readers see them as
     * written) */
    const mp__tensor *t = tensor(g8, "target48");
    CU_ASSERT_EQUAL_FATAL(t->n_value, 2);
    CU_ASSERT_EQUAL(t->value[0], 1);
    mp_graph_destroy(g8);
    mp_graph_destroy(g1);
    /* --dim x:0=8 alone re-batches the input only: the constant target is
     * an error naming the node and the constant */
    mp_dim_binding d = {"x:0", 8};
    CU_ASSERT_EQUAL(load(&b, ctx, 0, &d, 1, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "flatten"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "target48"));
    /* the same binding with the batch: agrees */
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 8, &d, 1, &g), MP_OK);
    mp_test_assert_shape(g, "y", 2, y8);
    mp_graph_destroy(g);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* FastestDet's channel shuffle: [1, 48, 4, 4] -> Reshape [24, 2, 16]
 * (batch x 48/2) -> Transpose [2, 24, 16] -> Reshape [2, -1, 24, 4, 4];
 * at batch 8: [192, 2, 16], [2, 192, 16], [2, 8, 24, 4, 4]. */
static void t_folded_batch(void)
{
    static const int64_t in[] = {1, 48, 4, 4}, t1[] = {24, 2, 16},
                         t2[] = {2, -1, 24, 4, 4}, perm[] = {1, 0, 2};
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 4, in);
    int_init(&b, "shuffle1", t1, 3);
    int_init(&b, "shuffle2", t2, 5);
    ob_node(&b, "Reshape", "r1", "x", "shuffle1", "a");
    transpose(&b, "a", "t", perm, 3);
    ob_node(&b, "Reshape", "r2", "t", "shuffle2", "y");
    ob_output(&b, "y", 1, -1, NULL);
    mp_graph *g1 = NULL, *g = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 0, NULL, 0, &g1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 8, NULL, 0, &g), MP_OK);
    static const int64_t a8[] = {192, 2, 16}, tt8[] = {2, 192, 16},
                         y8[] = {2, 8, 24, 4, 4};
    mp_test_assert_shape(g, "a", 3, a8);
    mp_test_assert_shape(g, "t", 3, tt8);
    mp_test_assert_shape(g, "y", 5, y8);
    CU_ASSERT_EQUAL(assert_scaled(g1, g, 8), 4);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    mp_graph_destroy(g1);
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

/* A symbolic batch: --batch binds the symbol of the inputs' dim 0
 * everywhere; no declared batch, so no constant is re-batched. */
static void t_symbolic(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    static const int64_t d[] = {0, 3};
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 2, d);
    ob_input(&b, "m", 1, 1, d);
    Onnx__TensorShapeProto__Dimension *x0 =
        b.graph->input[0]->type->tensor_type->shape->dim[0];
    Onnx__TensorShapeProto__Dimension *m0 =
        b.graph->input[1]->type->tensor_type->shape->dim[0];
    x0->value_case = m0->value_case =
        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    x0->dim_param = m0->dim_param = (char *)"N";
    ob_node(&b, "Relu", "relu", "x", NULL, "y");
    ob_node(&b, "Relu", "relu_m", "m", NULL, "z");
    ob_output(&b, "y", 1, -1, NULL);
    ob_output(&b, "z", 1, -1, NULL);
    mp_graph *g = NULL;
    /* without a batch the symbol is unbound */
    CU_ASSERT_EQUAL(load(&b, ctx, 0, NULL, 0, &g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'N'"));
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 5, NULL, 0, &g), MP_OK);
    static const int64_t y5[] = {5, 3}, z5[] = {5};
    mp_test_assert_shape(g, "y", 2, y5);
    mp_test_assert_shape(g, "z", 1, z5);
    CU_ASSERT_EQUAL(g->rebatch_from, 0);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);
    /* a binding of the symbol to another value disagrees */
    mp_dim_binding n4 = {"N", 4};
    CU_ASSERT_EQUAL(load(&b, ctx, 5, &n4, 1, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "N=4"));
    ob_free(&b);
    mp_ctx_destroy(ctx);
}

static void t_errors(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    ob b;
    /* an input of rank 0 */
    static const int64_t d13[] = {1, 3}, d23[] = {2, 3};
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 2, d13);
    ob_input(&b, "scale", 1, 0, NULL);
    ob_node(&b, "Mul", "mul", "x", "scale", "y");
    ob_output(&b, "y", 1, -1, NULL);
    CU_ASSERT_EQUAL(load(&b, ctx, 4, NULL, 0, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'scale'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "rank 0"));
    CU_ASSERT_PTR_NULL(g);
    ob_free(&b);
    /* inputs that disagree on their batch: both named */
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 2, d13);
    ob_input(&b, "w", 1, 2, d23);
    ob_node(&b, "Add", "add", "x", "x", "y");
    ob_node(&b, "Relu", "relu", "w", NULL, "z");
    ob_output(&b, "y", 1, -1, NULL);
    ob_output(&b, "z", 1, -1, NULL);
    CU_ASSERT_EQUAL(load(&b, ctx, 4, NULL, 0, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'x'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'w'"));
    /* an INPUT:0 binding to another value */
    mp_dim_binding x2 = {"x:0", 2};
    CU_ASSERT_EQUAL(load(&b, ctx, 4, &x2, 1, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "x:0=2"));
    /* a negative batch */
    CU_ASSERT_EQUAL(load(&b, ctx, -3, NULL, 0, &g), MP_ERR_INVALID_ARG);
    ob_free(&b);
    /* a target whose count does not follow the batch: x [1,3] times its
     * transpose is [B, B]; the constant [1, 1] re-batched to [4, 1] holds
     * 4 of its 16 elements: an error naming node, constant and counts */
    static const int64_t one[] = {1, 1}, perm[] = {1, 0};
    ob_init(&b, 8, 13);
    ob_input(&b, "x", 1, 2, d13);
    int_init(&b, "target11", one, 2);
    transpose(&b, "x", "xt", perm, 2);
    ob_node(&b, "MatMul", "mm", "x", "xt", "m");
    ob_node(&b, "Reshape", "square", "m", "target11", "y");
    ob_output(&b, "y", 1, -1, NULL);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 1, NULL, 0, &g), MP_OK);
    mp_graph_destroy(g);
    g = NULL;
    CU_ASSERT_EQUAL(load(&b, ctx, 4, NULL, 0, &g), MP_ERR_SHAPE);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'square'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'target11'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "16 elements"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "[4, 1]"));
    ob_free(&b);
    /* a JSON graph has no input dims to set */
    const char *p = mp_test_write_temp(
        ".json", "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": "
                 "[{\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [1, 4],"
                 " \"kind\": \"input\"}, {\"name\": \"b\", \"dtype\": "
                 "\"float32\", \"shape\": [1, 4]}], \"nodes\": [{\"name\": "
                 "\"r\", \"op\": \"Relu\", \"inputs\": [\"a\"], \"outputs\": "
                 "[\"b\"]}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_opts(ctx, path, &o, &g), MP_OK);
    mp_graph_destroy(g);
    o.batch = 2;
    CU_ASSERT_EQUAL(mp_graph_load_opts(ctx, path, &o, &g), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--batch"));
    remove(path);
    mp_ctx_destroy(ctx);
}

/* ---- corpus: the 9 onnx_light models at batch 8 ------------------------- */
static const char *const light[] = {
    "light_bvlc_alexnet", "light_densenet121", "light_inception_v1",
    "light_inception_v2", "light_resnet50",    "light_shufflenet",
    "light_squeezenet",   "light_vgg19",       "light_zfnet512"};

static void t_corpus_light(void)
{
    char rel[128], path[1024];
    int done = 0;
    for (size_t k = 0; k < sizeof light / sizeof light[0]; k++) {
        snprintf(rel, sizeof rel, "models/onnx_light/%s.onnx", light[k]);
        if (!mp_test_corpus_file(rel, path, sizeof path))
            return; /* skipped, with a message */
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_onnx_options o;
        mp_onnx_options_init(&o);
        mp_graph *g1 = NULL, *g8 = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_load_opts(ctx, path, &o, &g1), MP_OK);
        o.batch = 8;
        mp_status st = mp_graph_load_opts(ctx, path, &o, &g8);
        if (st)
            fprintf(stderr, "\n  %s: %s\n", light[k], mp_ctx_message(ctx));
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g8), 0);
        /* every float activation is 8x its batch-1 size */
        CU_ASSERT(assert_scaled(g1, g8, 8) > 20);
        mp_test_plan_verify(g8);
        mp_graph_destroy(g8);
        mp_graph_destroy(g1);
        mp_ctx_destroy(ctx);
        done++;
    }
    CU_ASSERT_EQUAL(done, 9);
}

/* The CLI: plan light_resnet50 --batch 8, verify the plan at batch 8; a
 * batch-1 plan is refused at batch 8. */
static void t_corpus_cli(void)
{
    char path[1024], cmd[4096], out[8192];
    if (!mp_test_corpus_file("models/onnx_light/light_resnet50.onnx", path,
                             sizeof path))
        return;
    const char *tmp = mp_test_write_temp(".json", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char plan[512];
    snprintf(plan, sizeof plan, "%s", tmp);
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --batch 8 --json -o '%s'",
             MP_CLI_PATH, path, plan);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"unknown_shapes\": 0"));
    snprintf(cmd, sizeof cmd, "'%s' verify '%s' '%s' --batch 8 2>&1",
             MP_CLI_PATH, path, plan);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    /* a batch-1 plan is too small for the model at batch 8 */
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' -o '%s' >/dev/null && '%s' "
             "verify '%s' '%s' --batch 8 2>&1", MP_CLI_PATH, path, plan,
             MP_CLI_PATH, path, plan);
    CU_ASSERT_NOT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "smaller than the tensor"));
    /* shapes --batch: the flattened classifier input is [8, 2048] */
    snprintf(cmd, sizeof cmd, "'%s' shapes '%s' --batch 8 | grep -c "
             "'^r173 .*\\[8, 2048\\]'", MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "1\n");
    remove(plan);
}

/* What transformer exports traced at batch B0 = 2 write (x [2, 5, 6]):
 * a class token cls [1, 1, 6] expanded to the batch with the constant
 * shape [2, 1, 6] and concatenated to x (torchvision's ViT); x flattened
 * to [10, 6] for a Linear and viewed back as [2, 5, 6] (the batch folded
 * with the sequence in the input of the second Reshape, as the dynamo
 * exporter writes GPT-2); x transposed to [5, 2, 6] and viewed as
 * [5, 2*3, 2] (batch x heads folded into axis 1, as
 * nn.MultiheadAttention traced at a fixed batch); a bool mask folded at
 * export [2, 1, 5, 5] (GPT-2's attention mask, dynamo exporter) in a Where
 * with the input att [2, 1, 5, 5]; a float weight w2 [2, 6] (its leading
 * 2 is no batch). At batch 3: [3, 1, 6], [3, 6, 6], [15, 6], [3, 5, 6],
 * [5, 9, 2], the mask and the Where [3, 1, 5, 5], w2 still [2, 6]. */
static const int64_t tx_dims[] = {2, 5, 6}, cls_dims[] = {1, 1, 6};
static const int64_t exp_shape[] = {2, 1, 6}, flat[] = {10, 6},
                     unflat[] = {2, 5, 6}, perm102[] = {1, 0, 2},
                     heads[] = {5, 6, 2};

static const int64_t mask_dims[] = {2, 1, 5, 5}, w2_dims[] = {2, 6};

static void transformer_model(ob *b)
{
    ob_init(b, 8, 17);
    ob_input(b, "x", 1, 3, tx_dims);
    ob_input(b, "att", 1, 4, mask_dims);
    ob_init_tensor(b, "mask", 4, mask_dims);
    b->graph->initializer[b->graph->n_initializer - 1]->data_type = 9;
    ob_init_tensor(b, "w2", 2, w2_dims);
    Onnx__NodeProto *wh = ob_node(b, "Where", "mask_where", "mask", "att",
                                  "wm");
    wh->input = ob_new(b, 3 * sizeof *wh->input);
    wh->input[0] = (char *)"mask";
    wh->input[1] = wh->input[2] = (char *)"att";
    wh->n_input = 3;
    ob_init_tensor(b, "cls", 3, cls_dims);
    int_init(b, "exp_shape", exp_shape, 3);
    int_init(b, "flat", flat, 2);
    int_init(b, "unflat", unflat, 3);
    int_init(b, "heads", heads, 3);
    ob_node(b, "Expand", "expand", "cls", "exp_shape", "e");
    Onnx__NodeProto *cat = ob_node(b, "Concat", "cat", "e", "x", "c");
    ob_attr_int(b, cat, "axis", 1);
    ob_node(b, "Reshape", "flatten", "x", "flat", "f");
    ob_node(b, "Relu", "act", "f", NULL, "fr");
    ob_node(b, "Reshape", "unflatten", "fr", "unflat", "u");
    transpose(b, "x", "xt", perm102, 3);
    ob_node(b, "Reshape", "split_heads", "xt", "heads", "h");
    ob_output(b, "c", 1, -1, NULL);
    ob_output(b, "u", 1, -1, NULL);
    ob_output(b, "h", 1, -1, NULL);
    ob_output(b, "wm", 1, -1, NULL);
}

static void assert_dims(const mp_graph *g, const char *name,
                        const int64_t *d, int32_t rank)
{
    const mp__tensor *t = tensor(g, name);
    CU_ASSERT_EQUAL_FATAL(t->rank, rank);
    for (int32_t i = 0; i < rank; i++) {
        if (t->dims[i] != d[i])
            fprintf(stderr, "\n  %s[%d] = %lld, want %lld\n", name, (int)i,
                    (long long)t->dims[i], (long long)d[i]);
        CU_ASSERT_EQUAL(t->dims[i], d[i]);
    }
}

static void t_transformer_patterns(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    transformer_model(&b);
    mp_graph *g2 = NULL, *g3 = NULL;
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 0, NULL, 0, &g2), MP_OK);
    static const int64_t e2[] = {2, 1, 6}, c2[] = {2, 6, 6}, h2[] = {5, 6, 2};
    assert_dims(g2, "e", e2, 3);
    assert_dims(g2, "c", c2, 3);
    assert_dims(g2, "h", h2, 3);
    ob_free(&b);
    transformer_model(&b);
    mp_status st = load(&b, ctx, 3, NULL, 0, &g3);
    if (st)
        fprintf(stderr, "\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    static const int64_t e3[] = {3, 1, 6}, c3[] = {3, 6, 6}, f3[] = {15, 6},
                         u3[] = {3, 5, 6}, h3[] = {5, 9, 2};
    assert_dims(g3, "e", e3, 3);
    assert_dims(g3, "c", c3, 3);
    assert_dims(g3, "f", f3, 2);
    assert_dims(g3, "u", u3, 3);
    assert_dims(g3, "h", h3, 3);
    static const int64_t m3[] = {3, 1, 5, 5};
    assert_dims(g3, "mask", m3, 4);
    assert_dims(g3, "wm", m3, 4);
    assert_dims(g3, "w2", w2_dims, 2);
    assert_dims(g2, "mask", mask_dims, 4);
    /* the constants themselves are not changed */
    CU_ASSERT_EQUAL(tensor(g3, "cls")->dims[0], 1);
    /* reported: inputs x and att, the mask, the class token's Expand, the
     * flattened [10, 6] and the heads [5, 6, 2] (folded, axes 0 and 1),
     * the view back [2, 5, 6] */
    CU_ASSERT_EQUAL(mp_graph_num_rebatches(g3), 7);
    CU_ASSERT_EQUAL(mp_graph_num_rebatches(g2), 0);
    int heads_seen = 0;
    for (uint32_t i = 0; i < mp_graph_num_rebatches(g3); i++) {
        mp_rebatch_info r;
        mp_tensor_info ti;
        CU_ASSERT_EQUAL_FATAL(mp_graph_rebatch_info(g3, i, &r), MP_OK);
        CU_ASSERT_EQUAL(r.from, 2);
        CU_ASSERT_EQUAL(r.to, 3);
        CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g3, r.tensor, &ti), MP_OK);
        if (strcmp(ti.name, "heads") == 0) {
            heads_seen++;
            CU_ASSERT_EQUAL(r.kind, MP_REBATCH_FOLDED);
            CU_ASSERT_EQUAL(r.axis, 1);
            CU_ASSERT_EQUAL(r.new_value[1], 9);
        }
        if (strcmp(ti.name, "exp_shape") == 0)
            CU_ASSERT_EQUAL(r.kind, MP_REBATCH_EXPAND);
        if (strcmp(ti.name, "mask") == 0)
            CU_ASSERT_EQUAL(r.kind, MP_REBATCH_MASK);
    }
    CU_ASSERT_EQUAL(heads_seen, 1);
    ob_free(&b);
    mp_graph_destroy(g2);
    mp_graph_destroy(g3);
    mp_ctx_destroy(ctx);
}

/* ---- exports at batch 1 (B0 = 1: a 1 may be the batch or a real 1) ----
 * One model in the patterns torch.onnx writes for BERT- and GPT-2-class
 * models, built at batch B0 (ids [B0, 4], hidden 6, 2 heads of 3):
 * - HF BERT's token_type_ids (TorchScript exporter): a buffer tt [1, 8]
 *   expanded to position_ids' leading dim ([1, 8]: 1 at any batch),
 *   gathered at pos [1, 4] (GatherElements), expanded to the batch
 *   ([B0, 4]) and embedded, added to the word embeddings;
 * - heads split with [B0, 4, 2, 3], the batch folded with the sequence
 *   ([4*B0, 6], a Linear's input) and viewed back [B0, 4, 6] (GPT-2,
 *   dynamo exporter);
 * - attention scores [B0, 4, 4] viewed [B0, 1, 4, 4] under a bool mask
 *   folded at export [B0, 1, 4, 4].
 * Planned at batch 8 from B0 = 1, every tensor has the shape it has when
 * built at B0 = 8. */
static void init_ints2(ob *b, const char *name, const int64_t *v,
                       const int64_t *dims, size_t rank)
{
    int_init(b, name, v, 1);
    Onnx__TensorProto *t =
        b->graph->initializer[b->graph->n_initializer - 1];
    t->dims = (int64_t *)dims;
    t->n_dims = rank;
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    t->n_int64_data = n;
}

typedef struct b1_consts {
    int64_t ids[2], shape_b[2], heads[4], fold[2], unfold[3], sc4[4];
    int64_t mask[4];
} b1_consts;

static const int64_t tt_dims[] = {1, 8}, tt_v[8] = {0},
                     pos_v[] = {0, 1, 2, 3}, pos_dims[] = {1, 4},
                     shape_pos[] = {1, 8}, wword[] = {10, 6},
                     wtt[] = {2, 6}, wlin[] = {6, 6}, p021[] = {0, 2, 1};

static void b1_model(ob *b, b1_consts *k, int64_t b0)
{
    *k = (b1_consts){{b0, 4}, {b0, 4}, {b0, 4, 2, 3}, {4 * b0, 6},
                     {b0, 4, 6}, {b0, 1, 4, 4}, {b0, 1, 4, 4}};
    ob_init(b, 12, 17);
    ob_input(b, "ids", 7, 2, k->ids);
    ob_init_tensor(b, "wword", 2, wword);
    ob_init_tensor(b, "wtt", 2, wtt);
    ob_init_tensor(b, "wlin", 2, wlin);
    ob_init_tensor(b, "mask", 4, k->mask);
    b->graph->initializer[b->graph->n_initializer - 1]->data_type = 9;
    init_ints2(b, "tt", tt_v, tt_dims, 2);
    init_ints2(b, "pos", pos_v, pos_dims, 2);
    int_init(b, "shape_pos", shape_pos, 2);
    int_init(b, "shape_b", k->shape_b, 2);
    int_init(b, "heads", k->heads, 4);
    int_init(b, "fold", k->fold, 2);
    int_init(b, "unfold", k->unfold, 3);
    int_init(b, "sc4", k->sc4, 4);
    ob_node(b, "Gather", "word", "wword", "ids", "emb");
    ob_node(b, "Expand", "expand_pos", "tt", "shape_pos", "e1");
    Onnx__NodeProto *ge =
        ob_node(b, "GatherElements", "gather_pos", "e1", "pos", "g1");
    ob_attr_int(b, ge, "axis", 1);
    ob_node(b, "Expand", "expand_batch", "g1", "shape_b", "e2");
    ob_node(b, "Gather", "token_type", "wtt", "e2", "te");
    ob_node(b, "Add", "embed", "emb", "te", "s");
    ob_node(b, "Reshape", "split_heads", "s", "heads", "q");
    ob_node(b, "Reshape", "flatten", "s", "fold", "f");
    ob_node(b, "MatMul", "linear", "f", "wlin", "l");
    ob_node(b, "Reshape", "unflatten", "l", "unfold", "u");
    transpose(b, "u", "ut", p021, 3);
    ob_node(b, "MatMul", "scores", "u", "ut", "sc");
    ob_node(b, "Reshape", "scores4", "sc", "sc4", "r");
    Onnx__NodeProto *wh = ob_node(b, "Where", "masked", "mask", "r", "w");
    wh->input = ob_new(b, 3 * sizeof *wh->input);
    wh->input[0] = (char *)"mask";
    wh->input[1] = wh->input[2] = (char *)"r";
    wh->n_input = 3;
    ob_output(b, "q", 1, -1, NULL);
    ob_output(b, "w", 1, -1, NULL);
}

/* Every tensor of a has b's shape (same name); returns how many. */
static int assert_same_shapes(const mp_graph *a, const mp_graph *b)
{
    int cnt = 0;
    CU_ASSERT_EQUAL(a->n_tensors, b->n_tensors);
    for (size_t i = 0; i < a->n_tensors; i++) {
        const mp__tensor *x = &a->tensors[i];
        uint32_t id;
        CU_ASSERT_FATAL(mp_graph_find_tensor(b, x->name, &id) == MP_OK);
        const mp__tensor *y = &b->tensors[id];
        bool same = x->rank == y->rank && x->bytes == y->bytes;
        for (int32_t d = 0; same && d < x->rank; d++)
            same = x->dims[d] == y->dims[d];
        if (!same)
            fprintf(stderr, "\n  %s: rank %d, %llu bytes; built at 8: rank "
                    "%d, %llu bytes\n", x->name, (int)x->rank,
                    (unsigned long long)x->bytes, (int)y->rank,
                    (unsigned long long)y->bytes);
        CU_ASSERT(same);
        cnt++;
    }
    return cnt;
}

static uint64_t peak_of(mp_graph *g, int train)
{
    mp_graph *t = NULL;
    if (train) {
        mp_train_options to;
        mp_train_options_init(&to);
        CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
        g = t;
    }
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    uint64_t peak = mp_plan_figures(p)->peak_bytes;
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    return peak;
}

static void t_batch1_exports(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    ob b;
    b1_consts k;
    mp_graph *g1 = NULL, *g8 = NULL, *plain = NULL;
    b1_model(&b, &k, 1);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 0, NULL, 0, &plain), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_rebatches(plain), 0);
    mp_status st = load(&b, ctx, 8, NULL, 0, &g1);
    if (st)
        fprintf(stderr, "\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    ob_free(&b);
    b1_model(&b, &k, 8);
    CU_ASSERT_EQUAL_FATAL(load(&b, ctx, 0, NULL, 0, &g8), MP_OK);
    ob_free(&b);
    /* the same shapes as the model built at batch 8, and so the same
     * peaks, inference and training */
    CU_ASSERT(assert_same_shapes(g1, g8) > 20);
    static const int64_t e1[] = {1, 8}, e2[] = {8, 4}, f[] = {32, 6};
    assert_dims(g1, "e1", e1, 2);
    assert_dims(g1, "e2", e2, 2);
    assert_dims(g1, "f", f, 2);
    CU_ASSERT_EQUAL(peak_of(g1, 0), peak_of(g8, 0));
    CU_ASSERT_EQUAL(peak_of(g1, 1), peak_of(g8, 1));
    /* every rewrite reported: the input, the mask, then the constants in
     * the order of their readers; expand_pos is not among them */
    static const struct {
        mp_rebatch_kind kind;
        const char *node, *tensor;
        int axis;
        int64_t old0, new0;
    } want[] = {
        {MP_REBATCH_INPUT, NULL, "ids", 0, 1, 8},
        {MP_REBATCH_MASK, NULL, "mask", 0, 1, 8},
        {MP_REBATCH_EXPAND, "expand_batch", "shape_b", 0, 1, 8},
        {MP_REBATCH_RESHAPE, "split_heads", "heads", 0, 1, 8},
        {MP_REBATCH_FOLDED, "flatten", "fold", 0, 4, 32},
        {MP_REBATCH_RESHAPE, "unflatten", "unfold", 0, 1, 8},
        {MP_REBATCH_RESHAPE, "scores4", "sc4", 0, 1, 8},
    };
    size_t nw = sizeof want / sizeof *want;
    CU_ASSERT_EQUAL_FATAL(mp_graph_num_rebatches(g1), nw);
    /* topological order may put independent readers either way: match
     * the constants by node */
    bool found[16] = {false};
    for (uint32_t i = 0; i < mp_graph_num_rebatches(g1); i++) {
        mp_rebatch_info r;
        CU_ASSERT_EQUAL_FATAL(mp_graph_rebatch_info(g1, i, &r), MP_OK);
        CU_ASSERT_EQUAL(r.from, 1);
        CU_ASSERT_EQUAL(r.to, 8);
        mp_node_info ni = {0};
        mp_tensor_info ti = {0};
        if (r.node != MP_NONE)
            CU_ASSERT_EQUAL(mp_graph_node_info(g1, r.node, &ni), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g1, r.tensor, &ti), MP_OK);
        size_t j = 0;
        while (j < nw && strcmp(want[j].tensor, ti.name) != 0)
            j++;
        CU_ASSERT_FATAL(j < nw);
        CU_ASSERT(!found[j]);
        found[j] = true;
        if (i < 2)
            CU_ASSERT_EQUAL(j, i); /* inputs, then masks, first */
        CU_ASSERT_EQUAL(r.kind, want[j].kind);
        CU_ASSERT_EQUAL(r.node == MP_NONE, want[j].node == NULL);
        if (want[j].node)
            CU_ASSERT_STRING_EQUAL(ni.name, want[j].node);
        CU_ASSERT_EQUAL(r.axis, want[j].axis);
        CU_ASSERT_FATAL(r.rank >= 2);
        CU_ASSERT_EQUAL(r.old_value[r.axis], want[j].old0);
        CU_ASSERT_EQUAL(r.new_value[r.axis], want[j].new0);
        for (int d = 1; d < r.rank; d++)
            CU_ASSERT_EQUAL(r.old_value[d], r.new_value[d]);
    }
    mp_rebatch_info r;
    CU_ASSERT_EQUAL(mp_graph_rebatch_info(g1, (uint32_t)nw, &r),
                    MP_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(mp_graph_rebatch_info(NULL, 0, &r), MP_ERR_INVALID_ARG);
    CU_ASSERT_STRING_EQUAL(mp_rebatch_kind_name(MP_REBATCH_FOLDED), "folded");
    CU_ASSERT_PTR_NULL(mp_rebatch_kind_name((mp_rebatch_kind)99));
    mp_graph_destroy(plain);
    mp_graph_destroy(g1);
    mp_graph_destroy(g8);
    mp_ctx_destroy(ctx);
}

/* The CLI: the summary line, --show-rewrites, --json, and the rules. */
static void t_cli_rewrites(void)
{
    ob b;
    b1_consts k;
    b1_model(&b, &k, 1);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    const char *tmp = mp_test_write_temp(".onnx", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char path[512], cmd[2048];
    static char out[65536];
    snprintf(path, sizeof path, "%s", tmp);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(buf, 1, len, f), len);
    fclose(f);
    ob_free(&b);
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --batch 8 --no-lints",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "rebatch      7 rewrites from batch 1 "
                                       "to 8 (1 input, 1 mask, 3 reshape, 1 "
                                       "folded, 1 expand); --show-rewrites"));
    CU_ASSERT_PTR_NULL(strstr(out, "'shape_b'"));
    snprintf(cmd, sizeof cmd, "'%s' shapes '%s' --batch 8 --show-rewrites",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  expand   node 'expand_batch' "
                                       "(Expand) constant 'shape_b' [1, 4] "
                                       "-> [8, 4] (axis 0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  folded   node 'flatten' (Reshape) "
                                       "constant 'fold' [4, 6] -> [32, 6]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  input    'ids' [1, 4] -> [8, 4]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "  mask     'mask' [1, 1, 4, 4] -> "
                                       "[8, 1, 4, 4]"));
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --batch 8 --json --no-lints",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    mp_test_json *j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(mp_test_jstr(j, "rebatch.rewrites[2].kind"),
                           "expand");
    mp_test_json_free(j);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"from\": 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"node\": \"flatten\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"tensor\": \"fold\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"new\": [32, 6]"));
    /* without --batch nothing is printed; --show-rewrites needs --batch */
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --no-lints", MP_CLI_PATH,
             path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "rebatch"));
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --show-rewrites 2>&1",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--show-rewrites"));
    remove(path);
}

/* The batch-1 exports of the reference models (torch.onnx, TorchScript
 * and dynamo), when MEMPLAN_B1_DIR names their folder (b1ts/, b1dy/):
 * each loads at batch 8 and reports its rewrites. */
static void t_b1_exports_dir(void)
{
    const char *dir = getenv("MEMPLAN_B1_DIR");
    if (!dir || !*dir) {
        fprintf(stderr, "\n  rebatch: batch-1 exports skipped "
                        "(MEMPLAN_B1_DIR not set)\n");
        return;
    }
    static const char *const files[] = {
        "b1ts/bert_base.train.onnx", "b1ts/t5_small.train.onnx",
        "b1dy/bert_base.train.onnx", "b1dy/t5_small.train.onnx",
        "b1dy/gpt2_medium.train.onnx"};
    mp_ctx *ctx = mp_ctx_create(NULL);
    int found = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fclose(f);
        found++;
        mp_onnx_options o;
        mp_onnx_options_init(&o);
        o.batch = 8;
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_onnx(ctx, path, &o, &g);
        if (st)
            fprintf(stderr, "\n  %s\n", mp_ctx_message(ctx));
        CU_ASSERT_EQUAL(st, MP_OK);
        CU_ASSERT(mp_graph_num_rebatches(g) > 10);
        CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g), 0);
        mp_graph_destroy(g);
    }
    if (!found)
        fprintf(stderr, "\n  rebatch: no batch-1 export in %s\n", dir);
    mp_ctx_destroy(ctx);
}

void mp_register_rebatch(void)
{
    static CU_TestInfo tests[] = {
        {"Reshape [1,K], [1,-1], folded; Resize sizes; 8x sizes",
         t_reshape_resize},
        {"batch folded into dim 0 (channel shuffle)", t_folded_batch},
        {"transformer exports: Expand of a class token, batch folded with "
         "the sequence or the heads", t_transformer_patterns},
        {"symbolic batch bound by --batch", t_symbolic},
        {"errors: rank 0, disagreeing inputs, bindings, counts, JSON",
         t_errors},
        {"corpus: 9 onnx_light models at batch 8, 8x sizes, verified",
         t_corpus_light},
        {"corpus: CLI plan/verify light_resnet50 --batch 8", t_corpus_cli},
        {"batch-1 exports (BERT, GPT-2 patterns): the shapes and peaks of "
         "the model built at batch 8; every rewrite reported",
         t_batch1_exports},
        {"CLI: rewrites summary, --show-rewrites, --json", t_cli_rewrites},
        {"batch-1 exports in MEMPLAN_B1_DIR (skipped when unset)",
         t_b1_exports_dir},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("rebatch", tests);
}

#endif /* MP_WITH_ONNX */
