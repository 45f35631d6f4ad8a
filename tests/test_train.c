/* Training-graph synthesis: the breakdown of a small network against
 * values computed by hand, gradient accumulation, precisions, optimizers,
 * and a training graph planned under a budget with recompute. */
#include "ir.h"
#include "ops.h"
#include "shape.h"
#include "support.h"

#include <stdio.h>
#include <string.h>

/* x[4,8] -> MatMul(W1[8,16]) -> h1[4,16] -> Relu -> h2 -> MatMul(W2[16,2])
 * -> y[4,2] (output). With skip: h5 = (h2 + Relu(h2)) + b[16] (a
 * broadcast bias) feeds the second MatMul, so h2 has two consumers. */
static mp_graph *mlp(mp_ctx *ctx, int skip)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw1[] = {8, 16}, dh[] = {4, 16}, dw2[] = {16, 2},
            dy[] = {4, 2};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w1 = mp_test_tensor(g, "W1", MP_KIND_WEIGHT, 2, dw1);
    uint32_t h1 = mp_test_tensor(g, "h1", MP_KIND_ACTIVATION, 2, dh);
    uint32_t h2 = mp_test_tensor(g, "h2", MP_KIND_ACTIVATION, 2, dh);
    uint32_t w2 = mp_test_tensor(g, "W2", MP_KIND_WEIGHT, 2, dw2);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dy);
    uint32_t i1[] = {x, w1}, r1[] = {h1};
    mp_test_node(g, "mm1", "MatMul", i1, 2, &h1, 1);
    mp_test_node(g, "relu", "Relu", r1, 1, &h2, 1);
    uint32_t last = h2;
    if (skip) {
        uint32_t h3 = mp_test_tensor(g, "h3", MP_KIND_ACTIVATION, 2, dh);
        uint32_t h4 = mp_test_tensor(g, "h4", MP_KIND_ACTIVATION, 2, dh);
        mp_test_node(g, "relu2", "Relu", &h2, 1, &h3, 1);
        uint32_t ia[] = {h2, h3};
        mp_test_node(g, "add", "Add", ia, 2, &h4, 1);
        int64_t db[] = {16};
        uint32_t b = mp_test_tensor(g, "b", MP_KIND_WEIGHT, 1, db);
        uint32_t h5 = mp_test_tensor(g, "h5", MP_KIND_ACTIVATION, 2, dh);
        uint32_t ib[] = {h4, b};
        mp_test_node(g, "addb", "Add", ib, 2, &h5, 1);
        last = h5;
    }
    uint32_t i2[] = {last, w2};
    mp_test_node(g, "mm2", "MatMul", i2, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

static void test_breakdown_fp32_adam(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 0), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    mp_train_breakdown b;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    /* parameters: 8*16 + 16*2 = 160 */
    CU_ASSERT_EQUAL(b.n_params, 160);
    CU_ASSERT_EQUAL(b.weight_bytes, 640);
    CU_ASSERT_EQUAL(b.gradient_bytes, 640);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 1280); /* m and v, fp32 */
    CU_ASSERT_EQUAL(b.master_weight_bytes, 0);
    /* Adam foreach (the default): sqrt(v) of the whole group, fp32 */
    CU_ASSERT_EQUAL(b.temporary_bytes, 640);
    /* saved: x (W1's gradient needs it: 4*8*4 = 128; x needs no
     * gradient, so mm1 does not keep W1 for it, which would cost nothing
     * anyway), h2 (Relu saves its output, W2's gradient needs it:
     * 4*16*4 = 256), y (the loss gradient: 4*2*4 = 32); h1 is not
     * saved */
    CU_ASSERT_EQUAL(b.saved_bytes, 128 + 256 + 32);
    CU_ASSERT_EQUAL(b.n_forward, 3);
    CU_ASSERT_EQUAL(b.n_backward, 4);
    CU_ASSERT_EQUAL(b.n_optimizer, 2);
    uint32_t id;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "opt/W1/m", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "h1", &id), MP_OK);
    /* h1 is read by no backward node: Relu's gradient uses h2 */
    mp_node_info ni;
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "relu/grad", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.phase, MP_PHASE_BACKWARD);
    CU_ASSERT_EQUAL(ni.n_inputs, 2);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(t, ni.inputs[1], &ti), MP_OK);
    CU_ASSERT_STRING_EQUAL(ti.name, "h2");
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_plan_create(t, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    /* persistent: weights + Adam states */
    CU_ASSERT_EQUAL(mp_plan_figures(p)->persistent_bytes, 640 + 1280);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Under autocast an explicit conversion keeps the model's dtype: h =
 * MatMul(x, W) is bf16, y = Cast(h, float32) (PyTorch's `.float()`) is
 * fp32, and Relu(y) after it too. */
static void test_autocast_explicit_cast(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 16}, dh[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 2, dh);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dh);
    uint32_t r = mp_test_tensor(g, "r", MP_KIND_ACTIVATION, 2, dh);
    uint32_t in[] = {x, w};
    mp_test_node(g, "mm", "MatMul", in, 2, &h, 1);
    uint32_t c = mp_test_node(g, "cast", "Cast", &h, 1, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, c, "to", MP_DTYPE_FLOAT32),
                    MP_OK);
    mp_test_node(g, "relu", "Relu", &y, 1, &r, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, r), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    o.precision = MP_PRECISION_BF16_MIXED;
    mp_graph *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &o, &t, NULL), MP_OK);
    const char *names[] = {"h", "y", "r"};
    const mp_dtype want[] = {MP_DTYPE_BFLOAT16, MP_DTYPE_FLOAT32,
                             MP_DTYPE_FLOAT32};
    for (int i = 0; i < 3; i++) {
        uint32_t id;
        mp_tensor_info ti;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, names[i], &id), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_tensor_info(t, id, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.dtype, want[i]);
    }
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_breakdown_mixed_and_8bit(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 0), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    o.precision = MP_PRECISION_BF16_MIXED;
    mp_train_breakdown b;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    /* autocast: fp32 weights, gradients and states, no master copy;
     * both MatMuls read bf16 copies of their weights (cached: 256 + 64
     * bytes) and mm1 a bf16 copy of x */
    CU_ASSERT_EQUAL(b.weight_bytes, 640);
    CU_ASSERT_EQUAL(b.master_weight_bytes, 0);
    CU_ASSERT_EQUAL(b.gradient_bytes, 640);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 1280);
    CU_ASSERT_EQUAL(b.cast_weight_bytes, 256 + 64);
    /* saved, all bf16: x's copy (W1's gradient: 64), h2 (Relu and W2's
     * gradient: 128), W2's copy (h2's gradient: 64), y (16) */
    CU_ASSERT_EQUAL(b.saved_bytes, 64 + 128 + 64 + 16);
    uint32_t id;
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "W1/autocast", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(t, id, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.dtype, MP_DTYPE_BFLOAT16);
    CU_ASSERT_FALSE(ti.folded); /* made every step, not at load */
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "h1", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(t, id, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.dtype, MP_DTYPE_BFLOAT16);
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "W1", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(t, id, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.dtype, MP_DTYPE_FLOAT32);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    /* persistent: the weights and Adam's states only (no copies) */
    CU_ASSERT_EQUAL(mp_plan_figures(p)->persistent_bytes, 640 + 1280);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    t = NULL;
    /* bf16-true: weights, gradients, states and the foreach temporary in
     * bf16, no copies */
    o.precision = MP_PRECISION_BF16_TRUE;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    CU_ASSERT_EQUAL(b.weight_bytes, 320);
    CU_ASSERT_EQUAL(b.gradient_bytes, 320);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 640);
    CU_ASSERT_EQUAL(b.temporary_bytes, 320);
    CU_ASSERT_EQUAL(b.master_weight_bytes, 0);
    CU_ASSERT_EQUAL(b.cast_weight_bytes, 0);
    CU_ASSERT_EQUAL(b.saved_bytes, 64 + 128 + 16);
    mp_graph_destroy(t);
    t = NULL;
    o.precision = MP_PRECISION_FP32;
    o.optimizer = MP_OPTIM_ADAM8BIT;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    /* two 1-byte states per parameter + one fp32 absmax per 2048-block
     * per state per tensor: 2*160 + 2*(2*4) */
    CU_ASSERT_EQUAL(b.optimizer_bytes, 320 + 16);
    mp_graph_destroy(t);
    t = NULL;
    o.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 0);
    CU_ASSERT_EQUAL(b.temporary_bytes, 0);
    mp_graph_destroy(t);
    t = NULL;
    o.optimizer = MP_OPTIM_MOMENTUM;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &b) == MP_OK);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 640);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* x[4,8] -> MatMul(W[8,16]) -> y, with W read directly (how 0), through
 * an Identity (1: as torchvision exports write shared weights) or stored
 * as [16,8] and read through a Transpose (2: as exporters write a Linear
 * layer without constant folding). */
static mp_graph *one_layer(mp_ctx *ctx, int how)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 16}, dwt[] = {16, 8}, dy[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, how == 2 ? dwt : dw);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dy);
    uint32_t r = w;
    if (how == 1) {
        r = mp_test_tensor(g, "Wi", MP_KIND_ACTIVATION, 2, dw);
        mp_test_node(g, "id", "Identity", &w, 1, &r, 1);
    } else if (how == 2) {
        r = mp_test_tensor(g, "Wt", MP_KIND_ACTIVATION, 2, dw);
        mp_test_node(g, "tr", "Transpose", &w, 1, &r, 1);
    }
    uint32_t in[] = {x, r};
    mp_test_node(g, "mm", "MatMul", in, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

/* A weight read through an Identity is trained once, as the weight: the
 * same parameters, states and peak as when it is read directly, in fp32
 * and in bf16-mixed (where the view once kept fp32 while the weight
 * became bf16, and the graph did not build). */
static void test_identity_over_weight(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_precision precs[] = {MP_PRECISION_FP32, MP_PRECISION_BF16_MIXED};
    for (int k = 0; k < 2; k++) {
        mp_train_breakdown b[2];
        uint64_t peak[2] = {0, 0};
        for (int idn = 0; idn < 2; idn++) {
            mp_graph *f = one_layer(ctx, idn), *t = NULL;
            mp_train_options o;
            mp_train_options_init(&o);
            o.precision = precs[k];
            CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &o, &t, &b[idn]), MP_OK);
            mp_plan *p = NULL;
            CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &p), MP_OK);
            CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
            peak[idn] = mp_plan_figures(p)->peak_bytes;
            uint32_t id;
            /* one optimizer step, for W only */
            CU_ASSERT_EQUAL(mp_graph_find_node(t, "opt/W", &id), MP_OK);
            CU_ASSERT_NOT_EQUAL(mp_graph_find_node(t, "opt/Wi", &id), MP_OK);
            mp_plan_destroy(p);
            mp_graph_destroy(t);
            mp_graph_destroy(f);
        }
        CU_ASSERT_EQUAL(b[1].n_params, 128);
        CU_ASSERT_EQUAL(b[1].n_params, b[0].n_params);
        CU_ASSERT_EQUAL(b[1].weight_bytes, b[0].weight_bytes);
        CU_ASSERT_EQUAL(b[1].master_weight_bytes, b[0].master_weight_bytes);
        CU_ASSERT_EQUAL(b[1].gradient_bytes, b[0].gradient_bytes);
        CU_ASSERT_EQUAL(b[1].optimizer_bytes, b[0].optimizer_bytes);
        CU_ASSERT_EQUAL(b[1].saved_bytes, b[0].saved_bytes);
        CU_ASSERT_EQUAL(peak[1], peak[0]);
    }
    mp_ctx_destroy(ctx);
}

/* y = MatMul(x[4,8], W[8,16]) / Sqrt(Cast(Shape(x)[1:])): the scale is a
 * float constant folded from a shape (an attention scale as exporters
 * write it). It is not a parameter: W alone is trained (the scale once
 * got an optimizer step of its own). */
static void test_shape_scale_not_trained(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 16}, dy[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t m = mp_test_tensor(g, "m", MP_KIND_ACTIVATION, 2, dy);
    mp_tensor_desc sd = {"s", MP_DTYPE_INT64, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    uint32_t s = MP_NONE;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &sd, &s), MP_OK);
    uint32_t f = mp_test_tensor(g, "f", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dy);
    uint32_t in[] = {x, w}, dv[] = {m, q};
    mp_test_node(g, "mm", "MatMul", in, 2, &m, 1);
    uint32_t sh = mp_test_node(g, "shape", "Shape", &x, 1, &s, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, sh, "start", 1), MP_OK);
    uint32_t c = mp_test_node(g, "cast", "Cast", &s, 1, &f, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, c, "to", MP_DTYPE_FLOAT32),
                    MP_OK);
    mp_test_node(g, "sqrt", "Sqrt", &f, 1, &q, 1);
    mp_test_node(g, "div", "Div", dv, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_tensor_info ti;
    mp_graph_tensor_info(g, q, &ti);
    CU_ASSERT_TRUE(ti.folded);
    mp_train_options o;
    mp_train_options_init(&o);
    mp_graph *t = NULL;
    mp_train_breakdown b;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &o, &t, &b), MP_OK);
    CU_ASSERT_EQUAL(b.n_params, 128);
    uint32_t id;
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "opt/W", &id), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_find_node(t, "opt/q", &id), MP_OK);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* x[4,8] -> MatMul(Transpose(W[16,8])) -> y[4,16] (one_layer, how 2). W
 * is trained (its gradient flows back through the Transpose, a view of
 * W); the transposed copy gets no optimizer step of its own (it once
 * did, and the graph built no gradient for W, or failed: "no graph output
 * depends on a trainable weight"). */
static void test_transposed_weight(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = one_layer(ctx, 2);
    mp_train_options o;
    mp_train_options_init(&o);
    mp_graph *t = NULL;
    mp_train_breakdown b;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &o, &t, &b), MP_OK);
    CU_ASSERT_EQUAL(b.n_params, 128);
    CU_ASSERT_EQUAL(b.weight_bytes, 512);
    CU_ASSERT_EQUAL(b.gradient_bytes, 512);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 1024);
    uint32_t id;
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "opt/W", &id), MP_OK);
    CU_ASSERT_NOT_EQUAL(mp_graph_find_node(t, "opt/Wt", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "tr/grad", &id), MP_OK);
    /* the transposed weight is a view the product reads with op T, as
     * PyTorch's Linear reads its weight: no copy held, persistent is the
     * weight and Adam's two states (512 + 1024 bytes) */
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "Wt", &id), MP_OK);
    CU_ASSERT_NOT_EQUAL(t->tensors[id].alias_of, MP_NONE);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->persistent_bytes, 512u + 1024u);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    /* bf16-mixed: autocast casts W (256 bytes, in the arena) and the
     * product reads the same transposed view of the copy; the fp32
     * Transpose, read by nothing now, is a view too: no copy persists */
    o.precision = MP_PRECISION_BF16_MIXED;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &o, &t, &b), MP_OK);
    CU_ASSERT_EQUAL(b.cast_weight_bytes, 256);
    uint32_t wc, wtc;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "W/autocast", &wc), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_find_tensor(t, "Wt/autocast", &wtc), MP_OK);
    CU_ASSERT_EQUAL(t->tensors[wtc].alias_of, wc);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->persistent_bytes, 512u + 1024u);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Adam's temporaries by implementation, as PyTorch runs them: foreach,
 * one fp32 buffer for the whole group (160 parameters: 640 bytes) held
 * by one node before the steps and freed after the last; for-loop, one
 * parameter's at a time (W1: 128 parameters, 512 bytes); fused, none. The
 * peaks in that order; SGD has no temporary under any; with the steps in
 * backward, foreach is per parameter. */
static void test_optimizer_impl(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 0);
    const mp_optimizer_impl impls[] = {MP_OPTIM_IMPL_FOREACH,
                                       MP_OPTIM_IMPL_FOR_LOOP,
                                       MP_OPTIM_IMPL_FUSED};
    const uint64_t want_tmp[] = {640, 512, 0};
    uint64_t peak[3];
    uint32_t id;
    for (int k = 0; k < 3; k++) {
        mp_train_options o;
        mp_train_options_init(&o);
        CU_ASSERT_EQUAL(o.optimizer_impl, MP_OPTIM_IMPL_FOREACH);
        o.optimizer_impl = impls[k];
        mp_graph *t = NULL;
        mp_train_breakdown b;
        CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &o, &t, &b), MP_OK);
        CU_ASSERT_EQUAL(b.temporary_bytes, want_tmp[k]);
        CU_ASSERT_EQUAL(b.weight_bytes, 640);
        CU_ASSERT_EQUAL(b.gradient_bytes, 640);
        CU_ASSERT_EQUAL(b.optimizer_bytes, 1280);
        CU_ASSERT_EQUAL(b.n_optimizer, 2);
        CU_ASSERT_EQUAL(mp_graph_find_node(t, "opt/foreach", &id) == MP_OK,
                        k == 0);
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
        peak[k] = mp_plan_figures(p)->peak_bytes;
        mp_plan_destroy(p);
        mp_graph_destroy(t);
        /* SGD: in place under every implementation */
        o.optimizer = MP_OPTIM_SGD;
        CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &o, &t, &b), MP_OK);
        CU_ASSERT_EQUAL(b.temporary_bytes, 0);
        CU_ASSERT_NOT_EQUAL(mp_graph_find_node(t, "opt/foreach", &id), MP_OK);
        mp_graph_destroy(t);
        /* steps in backward: each on its own */
        o.optimizer = MP_OPTIM_ADAM;
        o.step_in_backward = 1;
        CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &o, &t, &b), MP_OK);
        CU_ASSERT_EQUAL(b.temporary_bytes, k == 2 ? 0 : 512);
        mp_graph_destroy(t);
    }
    CU_ASSERT(peak[0] > peak[1]);
    CU_ASSERT(peak[1] >= peak[2]);
    mp_optimizer_impl x;
    CU_ASSERT_EQUAL(mp_optimizer_impl_parse("for-loop", &x), MP_OK);
    CU_ASSERT_EQUAL(x, MP_OPTIM_IMPL_FOR_LOOP);
    CU_ASSERT_STRING_EQUAL(mp_optimizer_impl_name(MP_OPTIM_IMPL_FUSED), "fused");
    CU_ASSERT_EQUAL(mp_optimizer_impl_parse("foreachx", &x), MP_ERR_NOT_FOUND);
    /* the three parsers answer an unknown name as their pages say */
    mp_optimizer oo;
    mp_precision pp;
    CU_ASSERT_EQUAL(mp_optimizer_parse("adamx", &oo), MP_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(mp_precision_parse("fp8", &pp), MP_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(mp_optimizer_parse(NULL, &oo), MP_ERR_INVALID_ARG);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* h2 has two consumers (relu2, add): its gradient is a Sum of two parts */
static void test_accumulation(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 1), *t = NULL;
    CU_ASSERT_FATAL(mp_train_graph(f, NULL, &t, NULL) == MP_OK);
    uint32_t id;
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "d/h2#sum2", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_STRING_EQUAL(ni.op, "Sum");
    CU_ASSERT_EQUAL(ni.n_inputs, 2);
    /* the Add's inputs have its output's shape: their gradients are
     * views of d/h4 (one Identity node each), not an AddGrad node */
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "add/grad", &id), MP_ERR_NOT_FOUND);
    uint32_t gy, g2;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h4#1", &gy), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "add/grad_pass0", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_STRING_EQUAL(ni.op, "Identity");
    CU_ASSERT_EQUAL(ni.n_inputs, 1);
    CU_ASSERT_EQUAL(ni.inputs[0], gy);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h2#1", &g2), MP_OK);
    CU_ASSERT_EQUAL(ni.outputs[0], g2);
    CU_ASSERT_EQUAL(t->tensors[g2].root, t->tensors[gy].root);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* The gradients of same-shape Add inputs are views of the Add's output
 * gradient (zero bytes); the broadcast bias keeps its reducing node. */
static void test_residual_grad_views(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 1), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    mp_train_breakdown bd;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, &bd) == MP_OK);
    uint32_t dh5, dh4, dh2, dh3, db, id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h5#1", &dh5), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h4#1", &dh4), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h2#1", &dh2), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/h3#1", &dh3), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/b#1", &db), MP_OK);
    /* d/h4 views d/h5; d/h2#1 and d/h3 view d/h4, so their root is d/h5 */
    CU_ASSERT_EQUAL(t->tensors[dh4].alias_of, dh5);
    CU_ASSERT_EQUAL(t->tensors[dh2].alias_of, dh4);
    CU_ASSERT_EQUAL(t->tensors[dh3].alias_of, dh4);
    CU_ASSERT_EQUAL(t->tensors[dh2].root, dh5);
    CU_ASSERT_EQUAL(t->tensors[dh3].root, dh5);
    CU_ASSERT(!mp__tensor_in_arena(&t->tensors[dh4]));
    CU_ASSERT(mp__tensor_in_arena(&t->tensors[db]));
    CU_ASSERT_EQUAL(t->tensors[db].bytes, 64);
    /* the bias's gradient is a reduction: addb/grad reads d/h5 only and
     * writes d/b; add (no broadcast) has no such node */
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "addb/grad", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.n_inputs, 1);
    CU_ASSERT_EQUAL(ni.inputs[0], dh5);
    CU_ASSERT_EQUAL(ni.n_outputs, 1);
    CU_ASSERT_EQUAL(ni.outputs[0], db);
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "add/grad_pass1", &id), MP_OK);
    /* arena bytes of the backward pass's gradients, by hand: d/y 32,
     * d/h5 256, d/W2 128, d/b 64, d/h2#2 (from relu2) 256, d/h2#sum2 256,
     * d/h1 256, d/W1 512 = 1760; d/h4, d/h2#1 and d/h3 (3 x 256) take no
     * memory */
    uint64_t grad_arena = 0;
    uint32_t n_views = 0;
    for (uint32_t v = 0; v < t->n_tensors; v++) {
        const mp__tensor *tt = &t->tensors[v];
        if (tt->kind != MP_KIND_GRADIENT)
            continue;
        if (mp__tensor_in_arena(tt))
            grad_arena += tt->bytes;
        else
            n_views += tt->alias_of != MP_NONE;
    }
    CU_ASSERT_EQUAL(grad_arena, 1760);
    CU_ASSERT_EQUAL(n_views, 3);
    /* breakdown: parameter gradients 512 + 64 + 128; saved: x 128 (mm1),
     * h2 256 (relu), h3 256 (relu2), h5 256 (mm2), y 32 (the loss) */
    CU_ASSERT_EQUAL(bd.gradient_bytes, 512 + 64 + 128);
    CU_ASSERT_EQUAL(bd.saved_bytes, 128 + 256 + 256 + 256 + 32);
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(t, NULL, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    /* Sub: only input 0's gradient passes through (input 1 is negated) */
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 16}, dw[] = {16, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t u = mp_test_tensor(g, "u", MP_KIND_ACTIVATION, 2, dx);
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_ACTIVATION, 2, dx);
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, 2, dx);
    uint32_t im[] = {x, w}, is[] = {u, q};
    mp_test_node(g, "mm", "MatMul", im, 2, &u, 1);
    mp_test_node(g, "relu", "Relu", &u, 1, &q, 1);
    mp_test_node(g, "sub", "Sub", is, 2, &s, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, s), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    t = NULL;
    CU_ASSERT_FATAL(mp_train_graph(g, &o, &t, NULL) == MP_OK);
    uint32_t du, dq;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/u#1", &du), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "d/q#1", &dq), MP_OK);
    CU_ASSERT_NOT_EQUAL(t->tensors[du].alias_of, MP_NONE);
    CU_ASSERT_EQUAL(t->tensors[dq].alias_of, MP_NONE);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "sub/grad", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.n_outputs, 1);
    CU_ASSERT_EQUAL(ni.outputs[0], dq);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}


/* A graph with no trainable weight cannot be trained. */
static void test_no_weights(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL, *t = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t d[] = {4};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 1, d);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 1, d);
    mp_test_node(g, "r", "Relu", &x, 1, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    CU_ASSERT_EQUAL(mp_train_graph(g, NULL, &t, NULL), MP_ERR_GRAPH);
    CU_ASSERT_PTR_NULL(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* A chain of `layers` blocks x -> MatMul(W[256,256]) -> Relu on [1024,256]
 * activations; with residual, each block's output is its input plus the
 * Relu's (an Add whose input gradients are views). */
static mp_graph *chain_rows(mp_ctx *ctx, int layers, int residual_add,
                            int64_t rows)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t da[] = {rows, 256}, dw[] = {256, 256};
    uint32_t cur = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, da);
    char nm[32];
    for (int l = 0; l < layers; l++) {
        snprintf(nm, sizeof nm, "W%d", l);
        uint32_t w = mp_test_tensor(g, nm, MP_KIND_WEIGHT, 2, dw);
        snprintf(nm, sizeof nm, "a%d", l);
        uint32_t a = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, da);
        snprintf(nm, sizeof nm, "r%d", l);
        uint32_t r = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, da);
        uint32_t in[] = {cur, w};
        snprintf(nm, sizeof nm, "mm%d", l);
        mp_test_node(g, nm, "MatMul", in, 2, &a, 1);
        snprintf(nm, sizeof nm, "relu%d", l);
        mp_test_node(g, nm, "Relu", &a, 1, &r, 1);
        if (residual_add) {
            snprintf(nm, sizeof nm, "s%d", l);
            uint32_t sm = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, da);
            uint32_t ia[] = {cur, r};
            snprintf(nm, sizeof nm, "add%d", l);
            mp_test_node(g, nm, "Add", ia, 2, &sm, 1);
            r = sm;
        }
        cur = r;
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, cur), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

static mp_graph *chain(mp_ctx *ctx, int layers, int residual_add)
{
    return chain_rows(ctx, layers, residual_add, 1024);
}

/* g's training graph with SGD (the optimizer the budget tests use) */
static mp_graph *sgd_step(const mp_graph *g)
{
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer = MP_OPTIM_SGD;
    mp_graph *t = NULL;
    CU_ASSERT_FATAL(mp_train_graph(g, &o, &t, NULL) == MP_OK);
    return t;
}

/* The chain trained (SGD) and planned under 75% of its no-recompute
 * peak (the replay's, a unit's outputs freed one by one): the plan
 * recomputes activations, verifies and fits. The activations are four
 * times a weight: the weight gradients, held to the optimizer steps after
 * the backward pass, cannot be recomputed there (the steps have updated
 * the weights a recompute would read: mp_verify_plan rejects that). */
static void chain_under_budget(int layers, int residual_add)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = chain(ctx, layers, residual_add), *t = sgd_step(g);
    uint32_t id;
    if (residual_add)
        CU_ASSERT_EQUAL(mp_graph_find_node(t, "add3/grad_pass1", &id), MP_OK);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(t, &ro, NULL, &p, &r) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    uint64_t base = r.base_peak_bytes;
    CU_ASSERT_EQUAL(r.extra_cost, 0);
    mp_plan_destroy(p);
    p = NULL;
    ro.budget = base * 7 / 10;
    ro.budget = base * 3 / 4;
    CU_ASSERT_FATAL(mp_remat_plan(t, &ro, NULL, &p, &r) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(t, p), MP_OK);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    CU_ASSERT(r.n_recompute > 0);
    CU_ASSERT(r.extra_cost > 0);
    uint32_t nrec = 0;
    for (uint32_t s = 0; s < mp_plan_num_steps(p); s++)
        nrec += mp_plan_steps(p)[s].kind == MP_STEP_RECOMPUTE;
    CU_ASSERT_EQUAL(nrec, r.n_recompute);
    mp_plan_destroy(p);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The saved inputs of backward node `name` of t (after its output
 * gradients): 1 when tensor `tname` is among its inputs. */
static int grad_reads(const mp_graph *t, const char *name, const char *tname)
{
    uint32_t id;
    mp_node_info ni;
    if (mp_graph_find_node(t, name, &id) != MP_OK ||
        mp_graph_node_info(t, id, &ni) != MP_OK)
        return -1;
    for (uint32_t i = 0; i < ni.n_inputs; i++) {
        mp_tensor_info ti;
        if (mp_graph_tensor_info(t, ni.inputs[i], &ti) == MP_OK &&
            strcmp(ti.name, tname) == 0)
            return 1;
    }
    return 0;
}

/* x[4,8] (input) -> MatMul W1[8,16] -> h1[4,16] -> OP(h1, s) -> y[4,16]
 * (output), s of shape sdims and kind sk; with swap, OP(s, h1). */
static mp_graph *binary_after_mm(mp_ctx *ctx, const char *op,
                                 mp_tensor_kind sk, int srank,
                                 const int64_t *sdims, int swap)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw1[] = {8, 16}, dh[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w1 = mp_test_tensor(g, "W1", MP_KIND_WEIGHT, 2, dw1);
    uint32_t h1 = mp_test_tensor(g, "h1", MP_KIND_ACTIVATION, 2, dh);
    uint32_t sv = mp_test_tensor(g, "s", sk, srank, sdims);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dh);
    uint32_t i1[] = {x, w1}, i2[] = {h1, sv}, i3[] = {sv, h1};
    mp_test_node(g, "mm1", "MatMul", i1, 2, &h1, 1);
    mp_test_node(g, "op", op, swap ? i3 : i2, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

static uint64_t saved_of(mp_graph *f, mp_graph **t)
{
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer = MP_OPTIM_SGD;
    mp_train_breakdown b;
    memset(&b, 0, sizeof b);
    CU_ASSERT_FATAL(mp_train_graph(f, &o, t, &b) == MP_OK);
    return b.saved_bytes;
}

/* Mul(h1, W) keeps h1 for W's gradient; Mul(h1, constant) keeps only the
 * constant (persistent: no saved bytes), as mul's derivatives.yaml entry
 * (self: grad * other, other: grad * self) is saved by autograd. */
static void test_saved_mul(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t ds[] = {4, 16};
    mp_graph *f = binary_after_mm(ctx, "Mul", MP_KIND_WEIGHT, 2, ds, 0), *t;
    /* x 128 (W1's gradient) + h1 256 (W's gradient) + y 256 (loss) */
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256 + 256);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "s"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    f = binary_after_mm(ctx, "Mul", MP_KIND_CONSTANT, 2, ds, 0);
    /* x 128 + y 256: h1's gradient needs only the constant */
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 0);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "s"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    /* the constant on the left: the same */
    f = binary_after_mm(ctx, "Mul", MP_KIND_CONSTANT, 2, ds, 1);
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 0);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Div(h1, c): h1's gradient needs only the divisor; Div(h1, W): W's
 * gradient needs h1 and W; Div(c, h1): h1's gradient needs both. */
static void test_saved_div(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t dc[] = {16};
    mp_graph *f = binary_after_mm(ctx, "Div", MP_KIND_CONSTANT, 1, dc, 0), *t;
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256); /* x, y */
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 0);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "s"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    f = binary_after_mm(ctx, "Div", MP_KIND_WEIGHT, 1, dc, 0);
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256 + 256); /* x, h1, y */
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    f = binary_after_mm(ctx, "Div", MP_KIND_CONSTANT, 1, dc, 1);
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256 + 256); /* x, h1, y */
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "s"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* MatMul(x, W) with x a graph input: W's gradient needs x (saved, 128
 * bytes); x needs no gradient, so W is not kept for it: mm1/grad reads
 * the output gradient and x only. */
static void test_saved_matmul_input(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t ds[] = {4, 16};
    mp_graph *f = binary_after_mm(ctx, "Mul", MP_KIND_CONSTANT, 2, ds, 0), *t;
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256);
    uint32_t id;
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "mm1/grad", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.n_inputs, 2);
    CU_ASSERT_EQUAL(grad_reads(t, "mm1/grad", "x"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "mm1/grad", "W1"), 0);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    /* h1 @ W (both need a gradient): both operands are kept */
    int64_t dw[] = {16, 16};
    f = binary_after_mm(ctx, "MatMul", MP_KIND_WEIGHT, 2, dw, 0);
    CU_ASSERT_EQUAL(saved_of(f, &t), 128 + 256 + 256); /* x, h1, y */
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "h1"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "op/grad", "s"), 1);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Conv(x, W, B) with x a graph input: convolution's one formula for
 * input, weight and bias keeps x and W; the bias is never read. */
static void test_saved_conv_bias(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *t = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &f) == MP_OK);
    int64_t dx[] = {1, 3, 8, 8}, dw[] = {4, 3, 1, 1}, db[] = {4},
            dy[] = {1, 4, 8, 8};
    uint32_t x = mp_test_tensor(f, "x", MP_KIND_INPUT, 4, dx);
    uint32_t w = mp_test_tensor(f, "W", MP_KIND_WEIGHT, 4, dw);
    uint32_t b = mp_test_tensor(f, "B", MP_KIND_WEIGHT, 1, db);
    uint32_t y = mp_test_tensor(f, "y", MP_KIND_ACTIVATION, 4, dy);
    uint32_t in[] = {x, w, b};
    mp_test_node(f, "conv", "Conv", in, 3, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(f, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(f) == MP_OK);
    /* x 1*3*8*8*4 = 768 (W's gradient), y 1*4*8*8*4 = 1024 (loss) */
    CU_ASSERT_EQUAL(saved_of(f, &t), 768 + 1024);
    CU_ASSERT_EQUAL(grad_reads(t, "conv/grad", "x"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "conv/grad", "W"), 1);
    CU_ASSERT_EQUAL(grad_reads(t, "conv/grad", "B"), 0);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Unary rules: Relu, Sqrt keep their output; Elu (out of place), Gelu
 * their input; Neg nothing. */
static void test_saved_unary(void)
{
    static const struct {
        const char *op;
        int keeps_in, keeps_out;
    } cases[] = {{"Relu", 0, 1}, {"Sqrt", 0, 1}, {"Elu", 1, 0},
                 {"Gelu", 1, 0}, {"Neg", 0, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *f = NULL, *t = NULL;
        CU_ASSERT_FATAL(mp_graph_create(ctx, &f) == MP_OK);
        int64_t dx[] = {4, 8}, dw[] = {8, 16}, dh[] = {4, 16};
        uint32_t x = mp_test_tensor(f, "x", MP_KIND_INPUT, 2, dx);
        uint32_t w = mp_test_tensor(f, "W", MP_KIND_WEIGHT, 2, dw);
        uint32_t h = mp_test_tensor(f, "h", MP_KIND_ACTIVATION, 2, dh);
        uint32_t u = mp_test_tensor(f, "u", MP_KIND_ACTIVATION, 2, dh);
        uint32_t i1[] = {x, w};
        mp_test_node(f, "mm", "MatMul", i1, 2, &h, 1);
        mp_test_node(f, "un", cases[c].op, &h, 1, &u, 1);
        CU_ASSERT_EQUAL(mp_graph_mark_output(f, u), MP_OK);
        CU_ASSERT_FATAL(mp_graph_finalize(f) == MP_OK);
        /* x 128 (W's gradient), u 256 (the loss gradient reads it
         * anyway), h 256 when the rule keeps the input */
        uint64_t sb = saved_of(f, &t);
        CU_ASSERT_EQUAL(sb, 128 + 256 + (cases[c].keeps_in ? 256 : 0));
        CU_ASSERT_EQUAL(grad_reads(t, "un/grad", "h"), cases[c].keeps_in);
        CU_ASSERT_EQUAL(grad_reads(t, "un/grad", "u"), cases[c].keeps_out);
        mp_graph_destroy(t);
        mp_graph_destroy(f);
        mp_ctx_destroy(ctx);
    }
}

/* LayerNormalization keeps h, its scale and bias (persistent) and fp32
 * mean and rstd per row; RMSNormalization only rstd per row. */
static void test_saved_norm_stats(void)
{
    static const struct {
        const char *op;
        int n_stats;
    } cases[] = {{"LayerNormalization", 2}, {"RMSNormalization", 1}};
    for (size_t c = 0; c < 2; c++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *f = NULL;
        CU_ASSERT_FATAL(mp_graph_create(ctx, &f) == MP_OK);
        int64_t dx[] = {4, 8}, dw[] = {8, 16}, dh[] = {4, 16}, ds[] = {16};
        uint32_t x = mp_test_tensor(f, "x", MP_KIND_INPUT, 2, dx);
        uint32_t w = mp_test_tensor(f, "W", MP_KIND_WEIGHT, 2, dw);
        uint32_t h = mp_test_tensor(f, "h", MP_KIND_ACTIVATION, 2, dh);
        uint32_t sc = mp_test_tensor(f, "scale", MP_KIND_WEIGHT, 1, ds);
        uint32_t y = mp_test_tensor(f, "y", MP_KIND_ACTIVATION, 2, dh);
        uint32_t i1[] = {x, w}, i2[] = {h, sc};
        mp_test_node(f, "mm", "MatMul", i1, 2, &h, 1);
        mp_test_node(f, "norm", cases[c].op, i2, 2, &y, 1);
        CU_ASSERT_EQUAL(mp_graph_mark_output(f, y), MP_OK);
        CU_ASSERT_FATAL(mp_graph_finalize(f) == MP_OK);
        mp_graph *t = NULL;
        /* x 128, h 256, y 256, stats n_stats x 4 rows x 4 bytes */
        CU_ASSERT_EQUAL(saved_of(f, &t),
                        128 + 256 + 256 + (uint64_t)cases[c].n_stats * 16);
        uint32_t id;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "norm/stats", &id),
                              MP_OK);
        CU_ASSERT_EQUAL(t->tensors[id].dims[0], cases[c].n_stats);
        CU_ASSERT_EQUAL(t->tensors[id].dims[1], 4);
        CU_ASSERT_EQUAL(grad_reads(t, "norm/grad", "norm/stats"), 1);
        CU_ASSERT_EQUAL(grad_reads(t, "norm/grad", "h"), 1);
        CU_ASSERT_EQUAL(grad_reads(t, "norm/grad", "scale"), 1);
        mp_graph_destroy(t);
        mp_graph_destroy(f);
        mp_ctx_destroy(ctx);
    }
}

/* Every backward rule is in docs/training.md's table (as `NAME`), and
 * the rule table answers for each: NONE and NONDIFF need nothing, the
 * others something for input 0 or 1. */
static void test_rules_documented(void)
{
    FILE *fp = fopen(MP_SOURCE_DIR "/docs/training.md", "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    static char doc[1 << 18];
    size_t n = fread(doc, 1, sizeof doc - 1, fp);
    fclose(fp);
    doc[n] = '\0';
    for (unsigned r = 0; r < MP__BWD_COUNT_; r++) {
        char key[64];
        snprintf(key, sizeof key, "| `%s`", mp__bwd_name(r));
        if (!strstr(doc, key))
            printf("\n  rule %s is not in docs/training.md\n",
                   mp__bwd_name(r));
        CU_ASSERT_PTR_NOT_NULL(strstr(doc, key));
        unsigned any = mp__bwd_needs(r, 0) | mp__bwd_needs(r, 1);
        CU_ASSERT_EQUAL(any == 0,
                        r == MP__BWD_NONE || r == MP__BWD_NONDIFF);
    }
    CU_ASSERT_EQUAL(mp__bwd_needs(MP__BWD_COUNT_, 0), 0);
    /* Gemm's C needs nothing; Conv's bias keeps input and weight */
    CU_ASSERT_EQUAL(mp__bwd_needs(MP__BWD_MATMUL, 2), 0);
    CU_ASSERT_EQUAL(mp__bwd_needs(MP__BWD_CONV, 2),
                    MP__BWDN_IN0 | MP__BWDN_IN1);
}

/* node n's ints attribute `attr` equals want (cnt entries) */
static void check_ints(const mp__node *n, const char *attr,
                       const int64_t *want, uint32_t cnt)
{
    const mp__attr *a = mp__node_attr(n, attr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL_FATAL(a->type, MP__ATTR_INTS);
    CU_ASSERT_EQUAL_FATAL(a->n, cnt);
    for (uint32_t k = 0; k < cnt; k++)
        CU_ASSERT_EQUAL(a->v.ints[k], want[k]);
}

static const mp__node *node_named(const mp_graph *t, const char *name)
{
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, name, &id), MP_OK);
    return &t->nodes[id];
}

/* The backward nodes say what their inputs and outputs are: grad_dy (the
 * forward output of each output gradient), grad_saved (forward input i
 * as i, output o as -1 - o) and grad_dx (the forward input of each
 * gradient output). */
static void test_grad_attrs(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = mlp(ctx, 1), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    /* mm2 = MatMul(h5, W2): both take a gradient, each needs the other */
    const mp__node *n = node_named(t, "mm2/grad");
    int64_t dy0[] = {0}, both[] = {0, 1}, one[] = {1}, out0[] = {-1};
    check_ints(n, "grad_dy", dy0, 1);
    check_ints(n, "grad_saved", both, 2);
    check_ints(n, "grad_dx", both, 2);
    int64_t ones[] = {1, 1};
    check_ints(n, "grad_dx_reads", ones, 2);
    CU_ASSERT_EQUAL(n->n_in, 3);
    CU_ASSERT_EQUAL(n->n_out, 2);
    CU_ASSERT_STRING_EQUAL(t->tensors[n->inputs[1]].name, "h5");
    CU_ASSERT_STRING_EQUAL(t->tensors[n->inputs[2]].name, "W2");
    CU_ASSERT_STRING_EQUAL(t->tensors[n->outputs[0]].name, "d/h5#1");
    CU_ASSERT_STRING_EQUAL(t->tensors[n->outputs[1]].name, "d/W2#1");
    /* mm1 = MatMul(x, W1): only W1's gradient, which needs x */
    n = node_named(t, "mm1/grad");
    check_ints(n, "grad_saved", dy0, 1);
    check_ints(n, "grad_dx", one, 1);
    CU_ASSERT_STRING_EQUAL(t->tensors[n->inputs[1]].name, "x");
    /* the forward node's attributes come along */
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &f) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {16, 8}, dh[] = {4, 16};
    uint32_t x = mp_test_tensor(f, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(f, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t h = mp_test_tensor(f, "h", MP_KIND_ACTIVATION, 2, dh);
    uint32_t gi[] = {x, w};
    uint32_t gn = mp_test_node(f, "gemm", "Gemm", gi, 2, &h, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(f, gn, "transB", 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(f, h), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(f) == MP_OK);
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    n = node_named(t, "gemm/grad");
    CU_ASSERT_EQUAL(mp__attr_int(n, "transB", 0), 1);
    check_ints(n, "grad_saved", dy0, 1);
    check_ints(n, "grad_dx", one, 1);
    CU_ASSERT_PTR_NULL(mp__node_attr(n, "grad_domain"));
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    f = mlp(ctx, 1);
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    /* Relu saves its output */
    n = node_named(t, "relu/grad");
    check_ints(n, "grad_saved", out0, 1);
    check_ints(n, "grad_dx", dy0, 1);
    CU_ASSERT_STRING_EQUAL(t->tensors[n->inputs[1]].name, "h2");
    /* addb = Add(h4, b[16]): h4's gradient is a view of the output
     * gradient; b's (broadcast) from addb/grad, which saves nothing */
    n = node_named(t, "addb/grad");
    check_ints(n, "grad_saved", NULL, 0);
    check_ints(n, "grad_dx", one, 1);
    CU_ASSERT_EQUAL(n->n_in, 1);
    mp_graph_destroy(t);
    /* split_weight_grad: mm2/grad (h5's) and mm2/grad_w (W2's) */
    o.split_weight_grad = true;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    check_ints(node_named(t, "mm2/grad"), "grad_dx", dy0, 1);
    check_ints(node_named(t, "mm2/grad_w"), "grad_dx", one, 1);
    check_ints(node_named(t, "mm2/grad_w"), "grad_saved", both, 2);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

static void test_train_remat(void) { chain_under_budget(12, 0); }

/* An infeasible budget names the term that already exceeds it: the
 * persistent tensors (a budget below them), or the node whose working
 * set does (a budget just above them) */
static void test_infeasible_names_term(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = chain(ctx, 4, 0), *t = sgd_step(g);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    /* 4 weights of 256 x 256 floats: 1 MiB persistent */
    ro.budget = 512 << 10;
    CU_ASSERT_EQUAL(mp_remat_plan(t, &ro, NULL, &p, &r), MP_ERR_INFEASIBLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "persistent tensors alone"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "1048576 bytes"));
    mp_ctx_clear(ctx);
    ro.budget = (1 << 20) + 4096;
    CU_ASSERT_EQUAL(mp_remat_plan(t, &ro, NULL, &p, &r), MP_ERR_INFEASIBLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "' alone needs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "Node '"));
    CU_ASSERT_PTR_NULL(p);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The chain's weight gradients (256x256) dwarf its activations (64x256):
 * with the SGD steps after the backward pass, its peak is the gradients
 * held for them. A plan under 75% of that peak would have to rebuild
 * gradients after the first step updated W0 (the replay once did, the
 * whole backward pass again): it is infeasible, and the smallest peak
 * reported is the no-recompute one. */
static void test_grad_peak_no_recompute(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = chain_rows(ctx, 12, 0, 64), *t = sgd_step(g);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(t, &ro, NULL, &p, &r) == MP_OK);
    uint64_t base = r.base_peak_bytes;
    mp_plan_destroy(p);
    p = NULL;
    ro.budget = base * 3 / 4;
    mp_status st = mp_remat_plan(t, &ro, NULL, &p, &r);
    CU_ASSERT_EQUAL(st, MP_ERR_INFEASIBLE);
    if (st == MP_OK) {
        printf("\n  verify: %d\n", mp_verify_plan(t, p));
        mp_plan_destroy(p);
    }
    CU_ASSERT_EQUAL(r.min_peak_bytes, base);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}
/* residual blocks: recompute around the gradient views verifies */
static void test_residual_remat(void) { chain_under_budget(8, 1); }

static CU_TestInfo tests[] = {
    {"breakdown fp32 adam by hand", test_breakdown_fp32_adam},
    {"autocast: an explicit Cast keeps the model's dtype",
     test_autocast_explicit_cast},
    {"breakdown bf16-mixed (autocast), bf16-true, adam8bit, sgd, momentum",
     test_breakdown_mixed_and_8bit},
    {"gradient accumulation", test_accumulation},
    {"a weight read through an Identity", test_identity_over_weight},
    {"a weight read through a Transpose", test_transposed_weight},
    {"a scale folded from a shape is not trained",
     test_shape_scale_not_trained},
    {"optimizer implementations: foreach, for-loop, fused",
     test_optimizer_impl},
    {"residual block: Add input gradients are views",
     test_residual_grad_views},
    {"residual chain under a budget", test_residual_remat},
    {"no trainable weight", test_no_weights},
    {"training graph under a budget", test_train_remat},
    {"held weight gradients are not recomputed", test_grad_peak_no_recompute},
    {"an infeasible budget names the term over it",
     test_infeasible_names_term},
    {"saved: Mul by a weight or a constant", test_saved_mul},
    {"saved: Div by a constant, a weight; a constant by h", test_saved_div},
    {"saved: MatMul of a graph input keeps no weight", test_saved_matmul_input},
    {"saved: Conv with bias keeps input and weight", test_saved_conv_bias},
    {"saved: unary rules (output, input, nothing)", test_saved_unary},
    {"saved: LayerNorm mean and rstd, RMSNorm rstd", test_saved_norm_stats},
    {"every backward rule is documented", test_rules_documented},
    {"backward nodes: grad_dy, grad_saved, grad_dx", test_grad_attrs},
    CU_TEST_INFO_NULL,
};

void mp_register_train(void) { mp_test_add_suite("train", tests); }
