/* Fused attention (core/ops/attention.c): which chains are recognized on
 * small graphs built as the exporters write them, the fused node's
 * inputs, that a chain with a second reader of the scores is left alone,
 * --attention naive keeping the graph and its plan, what the fused
 * node's backward keeps in training, Swin's shifted-window chains (the
 * mask added over a view of the scores) and the swin_t exports. */
#include "ir.h"
#include "ops.h"
#include "shape.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_SCALE = 1, F_DIV = 2, F_ADD = 4, F_WHERE = 8, F_DROPOUT = 16,
    F_SECOND_READER = 32, F_EXPORT = 64, F_TRAIN = 128
};

#define BH 2
#define T 64
#define D 8

typedef struct built {
    mp_graph *g;
    uint32_t q, kt, v, out; /* tensors the fused node should read/write */
} built;

static uint32_t ten(mp_graph *g, const char *name, mp_tensor_kind k,
                    mp_dtype dt, int rank, const int64_t *dims)
{
    mp_tensor_desc d = {name, dt, rank, dims, 0, k};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static uint32_t act(mp_graph *g, const char *name)
{
    return ten(g, name, MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, NULL);
}

static uint32_t nd(mp_graph *g, const char *name, const char *op,
                   const uint32_t *in, uint32_t nin, const uint32_t *out,
                   uint32_t nout)
{
    return mp_test_node(g, name, op, in, nin, out, nout);
}

/* Scores [BH, T, T] from q [BH, T, D] and kT [BH, D, T] (F_TRAIN: each
 * a MatMul of x [BH, T, D] by a weight), then the chain by flags. */
static built build(mp_ctx *ctx, unsigned f)
{
    built b = {0};
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    b.g = g;
    int64_t dq[] = {BH, T, D}, dk[] = {BH, D, T}, one[] = {1},
            dm[] = {1, T, T}, dw[] = {D, D};
    uint32_t q, kt, v;
    if (f & F_EXPORT) {
        /* [1, T, BH*D] -> Reshape [1, T, BH, D] -> Transpose -> [BH...]:
         * with batch 1 folded: q, v via perm (0,2,1,3), kT via (0,2,3,1) */
        int64_t dl[] = {1, T, BH * D}, d4[] = {4};
        uint32_t shp = ten(g, "shape4", MP_KIND_CONSTANT, MP_DTYPE_INT64, 1,
                           d4);
        int64_t sv[] = {1, T, BH, D};
        CU_ASSERT_EQUAL(mp__tensor_set_value(ctx, &g->tensors[shp], sv, 4),
                        MP_OK);
        const char *nm[3] = {"q", "k", "v"};
        uint32_t res[3];
        for (int i = 0; i < 3; i++) {
            char n1[32], n2[32], n3[32];
            snprintf(n1, sizeof n1, "%s_lin", nm[i]);
            snprintf(n2, sizeof n2, "%s_r", nm[i]);
            snprintf(n3, sizeof n3, "%s_t", nm[i]);
            uint32_t lin = ten(g, n1, MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dl);
            uint32_t r = act(g, n2), t = act(g, n3);
            uint32_t ri[] = {lin, shp};
            nd(g, n2, "Reshape", ri, 2, &r, 1);
            uint32_t tn = nd(g, n3, "Transpose", &r, 1, &t, 1);
            int64_t p0[] = {0, 2, 1, 3}, p1[] = {0, 2, 3, 1};
            CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tn, "perm",
                                                   i == 1 ? p1 : p0, 4),
                            MP_OK);
            res[i] = t;
        }
        /* a Constant node's value (as the ONNX loader stores it) */
        uint32_t cv = ten(g, "cval", MP_KIND_ACTIVATION, MP_DTYPE_INT64, 1,
                          one);
        int64_t seven = 7;
        CU_ASSERT_EQUAL(mp__tensor_set_value(ctx, &g->tensors[cv], &seven, 1),
                        MP_OK);
        nd(g, "cnode", "Constant", NULL, 0, &cv, 1);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, cv), MP_OK);
        /* the TorchScript exporter: Q and K^T each times sqrt(scale) */
        uint32_t s = ten(g, "sqrt_scale", MP_KIND_CONSTANT, MP_DTYPE_FLOAT32,
                         0, NULL);
        q = act(g, "q_s");
        kt = act(g, "k_s");
        uint32_t i1[] = {res[0], s}, i2[] = {res[1], s};
        nd(g, "q_mul", "Mul", i1, 2, &q, 1);
        nd(g, "k_mul", "Mul", i2, 2, &kt, 1);
        b.q = res[0];
        b.kt = res[1];
        v = b.v = res[2];
    } else if (f & F_TRAIN) {
        uint32_t x = ten(g, "x", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dq);
        uint32_t wq = ten(g, "Wq", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 2, dw);
        uint32_t wk = ten(g, "Wk", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 2, dw);
        uint32_t wv = ten(g, "Wv", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 2, dw);
        q = b.q = act(g, "q");
        uint32_t k = act(g, "k");
        kt = b.kt = act(g, "kT");
        v = b.v = act(g, "v");
        uint32_t a1[] = {x, wq}, a2[] = {x, wk}, a3[] = {x, wv};
        nd(g, "q_proj", "MatMul", a1, 2, &q, 1);
        nd(g, "k_proj", "MatMul", a2, 2, &k, 1);
        nd(g, "v_proj", "MatMul", a3, 2, &v, 1);
        uint32_t tn = nd(g, "k_t", "Transpose", &k, 1, &kt, 1);
        int64_t p[] = {0, 2, 1};
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tn, "perm", p, 3), MP_OK);
    } else {
        q = b.q = ten(g, "q", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dq);
        kt = b.kt = ten(g, "kT", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dk);
        v = b.v = ten(g, "v", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dq);
    }
    uint32_t s = act(g, "scores");
    uint32_t mi[] = {q, kt};
    nd(g, "qk", "MatMul", mi, 2, &s, 1);
    if (f & (F_SCALE | F_DIV)) {
        uint32_t c = ten(g, "c", MP_KIND_CONSTANT, MP_DTYPE_FLOAT32, 1, one);
        uint32_t s2 = act(g, "scaled"), in[] = {s, c};
        nd(g, "scale", f & F_DIV ? "Div" : "Mul", in, 2, &s2, 1);
        s = s2;
    }
    if (f & F_ADD) {
        uint32_t m = ten(g, "mask", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 3, dm);
        uint32_t s2 = act(g, "masked"), in[] = {s, m};
        nd(g, "add_mask", "Add", in, 2, &s2, 1);
        s = s2;
    }
    if (f & F_WHERE) {
        uint32_t m = ten(g, "keep", MP_KIND_INPUT, MP_DTYPE_BOOL, 3, dm);
        uint32_t fill = ten(g, "neg_inf", MP_KIND_CONSTANT, MP_DTYPE_FLOAT32,
                            0, NULL);
        uint32_t s2 = act(g, "masked"), in[] = {m, s, fill};
        nd(g, "where_mask", "Where", in, 3, &s2, 1);
        s = s2;
    }
    uint32_t p = act(g, "probs");
    nd(g, "softmax", "Softmax", &s, 1, &p, 1);
    if (f & F_EXPORT) {
        /* Where(IsNaN(p), 0, p) */
        uint32_t isn = ten(g, "isnan", MP_KIND_ACTIVATION, MP_DTYPE_BOOL, -1,
                           NULL);
        uint32_t zero = ten(g, "zero", MP_KIND_CONSTANT, MP_DTYPE_FLOAT32, 0,
                            NULL);
        uint32_t p2 = act(g, "probs_nz"), wi[] = {isn, zero, p};
        nd(g, "isnan", "IsNaN", &p, 1, &isn, 1);
        nd(g, "where_nan", "Where", wi, 3, &p2, 1);
        p = p2;
    }
    if (f & F_DROPOUT) {
        uint32_t p2 = act(g, "dropped");
        nd(g, "dropout", "Dropout", &p, 1, &p2, 1);
        p = p2;
    }
    if (f & F_SECOND_READER) {
        uint32_t r = act(g, "probs_relu");
        nd(g, "reader", "Relu", &p, 1, &r, 1);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, r), MP_OK);
    }
    uint32_t o = b.out = act(g, "attn_out"), pi[] = {p, v};
    nd(g, "pv", "MatMul", pi, 2, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return b;
}

static uint32_t find_op(const mp_graph *g, const char *op)
{
    for (uint32_t v = 0; v < mp_graph_num_nodes(g); v++) {
        mp_node_info ni;
        if (mp_graph_node_info(g, v, &ni) == MP_OK && strcmp(ni.op, op) == 0)
            return v;
    }
    return MP_NONE;
}

static const char *tname(const mp_graph *g, uint32_t t)
{
    mp_tensor_info ti;
    return t != MP_NONE && mp_graph_tensor_info(g, t, &ti) == MP_OK ? ti.name
                                                                     : "";
}

/* Fuses b's graph; checks the fused node reads q, kT, v (by name) and
 * writes the output; returns the fused node (MP_NONE when not fused). */
static uint32_t fuse(built *b, uint32_t want)
{
    char qn[64], kn[64], vn[64], on[64];
    snprintf(qn, sizeof qn, "%s", tname(b->g, b->q));
    snprintf(kn, sizeof kn, "%s", tname(b->g, b->kt));
    snprintf(vn, sizeof vn, "%s", tname(b->g, b->v));
    snprintf(on, sizeof on, "%s", tname(b->g, b->out));
    uint32_t n = 99;
    uint64_t bytes = 0;
    CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(b->g, &n, &bytes), MP_OK);
    CU_ASSERT_EQUAL(n, want);
    uint32_t v = find_op(b->g, "ScaledDotProductAttention");
    if (!want) {
        CU_ASSERT_EQUAL(v, MP_NONE);
        CU_ASSERT_EQUAL(bytes, 0);
        return MP_NONE;
    }
    CU_ASSERT_FATAL(v != MP_NONE);
    CU_ASSERT(bytes >= (uint64_t)BH * T * T * 4 * 2); /* scores, probs */
    CU_ASSERT_EQUAL(find_op(b->g, "Softmax"), MP_NONE);
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(b->g, v, &ni), MP_OK);
    CU_ASSERT_STRING_EQUAL(ni.domain, "memplan");
    CU_ASSERT_FATAL(ni.n_inputs >= 3 && ni.n_outputs == 1);
    CU_ASSERT_STRING_EQUAL(tname(b->g, ni.inputs[0]), qn);
    CU_ASSERT_STRING_EQUAL(tname(b->g, ni.inputs[1]), kn);
    CU_ASSERT_STRING_EQUAL(tname(b->g, ni.inputs[2]), vn);
    CU_ASSERT_STRING_EQUAL(tname(b->g, ni.outputs[0]), on);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(b->g, ni.outputs[0], &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, (uint64_t)BH * T * D * 4);
    uint32_t none;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(b->g, "scores", &none),
                    MP_ERR_NOT_FOUND);
    return v;
}

static int64_t attr(const mp_graph *g, uint32_t v, const char *name)
{
    int64_t x = 0;
    return mp_graph_get_attr_int(g, v, name, &x) == MP_OK ? x : 0;
}

static void test_plain(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    built b = build(ctx, 0);
    uint32_t v = fuse(&b, 1);
    mp_node_info ni;
    CU_ASSERT_EQUAL(mp_graph_node_info(b.g, v, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.n_inputs, 3);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(b.g), 1);
    CU_ASSERT_EQUAL(attr(b.g, v, "mask_kind"), 0);
    /* again: nothing left to fuse */
    uint32_t n = 9;
    CU_ASSERT_EQUAL(mp_graph_fuse_attention(b.g, &n, NULL), MP_OK);
    CU_ASSERT_EQUAL(n, 0);
    /* FLOPs: 4 * BH * T * T * D */
    mp_op_cost c;
    mp_device dev;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(ctx, "h200", &dev), MP_OK);
    CU_ASSERT_EQUAL(mp_node_estimate(b.g, v, &dev, &c), MP_OK);
    CU_ASSERT_DOUBLE_EQUAL(c.flops, 4.0 * BH * T * T * D, 0.5);
    mp_graph_destroy(b.g);
    mp_ctx_destroy(ctx);
}

static void test_scale_mask(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    struct {
        unsigned f;
        int64_t kind, div;
        uint32_t n_in;
    } cases[] = {
        {F_SCALE, 0, 0, 7},          {F_DIV, 0, 1, 7},
        {F_ADD, 1, 0, 4},            {F_SCALE | F_ADD, 1, 0, 7},
        {F_WHERE, 2, 0, 8},          {F_DIV | F_WHERE | F_DROPOUT, 2, 1, 8},
        {F_DROPOUT, 0, 0, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        built b = build(ctx, cases[i].f);
        uint32_t v = fuse(&b, 1);
        if (v == MP_NONE) {
            mp_graph_destroy(b.g);
            continue;
        }
        mp_node_info ni;
        CU_ASSERT_EQUAL(mp_graph_node_info(b.g, v, &ni), MP_OK);
        CU_ASSERT_EQUAL(ni.n_inputs, cases[i].n_in);
        CU_ASSERT_EQUAL(attr(b.g, v, "mask_kind"), cases[i].kind);
        CU_ASSERT_EQUAL(attr(b.g, v, "scale_div"), cases[i].div);
        CU_ASSERT_EQUAL(attr(b.g, v, "dropout"),
                        (cases[i].f & F_DROPOUT) ? 1 : 0);
        if (cases[i].f & (F_SCALE | F_DIV))
            CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[6]), "c");
        if (cases[i].f & F_ADD)
            CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[3]), "mask");
        if (cases[i].f & F_WHERE) {
            CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[3]), "keep");
            CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[7]), "neg_inf");
        }
        CU_ASSERT_EQUAL(mp_graph_num_nodes(b.g), 1);
        mp_graph_destroy(b.g);
    }
    mp_ctx_destroy(ctx);
}

/* the softmax output read by another node: the scores must exist */
static void test_second_reader(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    built b = build(ctx, F_SCALE | F_SECOND_READER);
    uint32_t nn = mp_graph_num_nodes(b.g);
    fuse(&b, 0);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(b.g), nn);
    CU_ASSERT(find_op(b.g, "Softmax") != MP_NONE);
    mp_graph_destroy(b.g);
    mp_ctx_destroy(ctx);
}

/* Q, K, V through Reshape and Transpose, Q and K^T scaled, Where(IsNaN):
 * fused; the node reads the Transposes' outputs, which stay */
static void test_export_form(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    built b = build(ctx, F_EXPORT | F_ADD);
    uint32_t v = fuse(&b, 1);
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(b.g, v, &ni), MP_OK);
    CU_ASSERT_EQUAL(ni.n_inputs, 6);
    CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[4]), "sqrt_scale");
    CU_ASSERT_STRING_EQUAL(tname(b.g, ni.inputs[5]), "sqrt_scale");
    CU_ASSERT_EQUAL(attr(b.g, v, "nan_to_zero"), 1);
    CU_ASSERT_EQUAL(find_op(b.g, "IsNaN"), MP_NONE);
    CU_ASSERT(find_op(b.g, "Transpose") != MP_NONE);
    /* 3 Reshapes, 3 Transposes, the Constant and the fused node */
    CU_ASSERT_EQUAL(mp_graph_num_nodes(b.g), 8);
    /* values kept: an initializer's, a Constant's */
    uint32_t t;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(b.g, "shape4", &t), MP_OK);
    CU_ASSERT_FATAL(b.g->tensors[t].value != NULL);
    CU_ASSERT_EQUAL(b.g->tensors[t].value[2], BH);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(b.g, "cval", &t), MP_OK);
    CU_ASSERT_FATAL(b.g->tensors[t].value != NULL);
    CU_ASSERT_EQUAL(b.g->tensors[t].value[0], 7);
    mp_graph_destroy(b.g);
    mp_ctx_destroy(ctx);
}

/* --attention naive: the graph is not changed and the plan is the one of
 * the graph as built; fused: no scores, a lower bound below */
static void test_naive_keeps(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    built a = build(ctx, F_SCALE | F_ADD), b = build(ctx, F_SCALE | F_ADD);
    uint32_t nn = mp_graph_num_nodes(a.g), nt = mp_graph_num_tensors(a.g);
    mp_plan_options o;
    mp_plan_options_init(&o);
    /* the library plans the graph as written unless asked (a fused node
     * is an op the caller's runtime must know); the CLI fuses */
    CU_ASSERT_EQUAL(o.attention, MP_ATTENTION_NAIVE);
    mp_plan *pa = NULL, *pb = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(a.g, &o, &pa), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(a.g), nn);
    CU_ASSERT_EQUAL(mp_graph_num_tensors(a.g), nt);
    CU_ASSERT_EQUAL(mp_verify_plan(a.g, pa), MP_OK);
    /* scores, scaled, masked (no in-place: probs beside masked) */
    uint64_t sc = (uint64_t)BH * T * T * 4;
    CU_ASSERT(mp_plan_figures(pa)->lower_bound_bytes >= 2 * sc);
    o.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(b.g, &o, &pb), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(b.g), 1);
    CU_ASSERT_EQUAL(mp_verify_plan(b.g, pb), MP_OK);
    /* the inputs q, kT, v, the mask [1, T, T] and the output */
    CU_ASSERT_EQUAL(mp_plan_figures(pb)->lower_bound_bytes,
                    4 * (uint64_t)BH * T * D * 4 + (uint64_t)T * T * 4);
    CU_ASSERT(mp_plan_figures(pb)->lower_bound_bytes <
              mp_plan_figures(pa)->lower_bound_bytes);
    o.attention = (mp_attention_mode)7;
    mp_plan *pc = NULL;
    CU_ASSERT_EQUAL(mp_plan_create(b.g, &o, &pc), MP_ERR_INVALID_ARG);
    mp_attention_mode m;
    CU_ASSERT_EQUAL(mp_attention_parse("naive", &m), MP_OK);
    CU_ASSERT_EQUAL(m, MP_ATTENTION_NAIVE);
    CU_ASSERT_EQUAL(mp_attention_parse("flash", &m), MP_ERR_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(mp_attention_name(MP_ATTENTION_FUSED), "fused");
    mp_plan_destroy(pa);
    mp_plan_destroy(pb);
    mp_graph_destroy(a.g);
    mp_graph_destroy(b.g);
    mp_ctx_destroy(ctx);
}

/* Training: the fused node's backward reads Q, K^T, V, the output and
 * the fp32 log-sum-exp [1, BH*T]; no T x T tensor exists; its workspace
 * (BH*T rows of D+1 fp32) is written and freed there; the peak is below
 * the naive training graph's. */
static void test_train_saved(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    built b = build(ctx, F_TRAIN | F_SCALE);
    mp_train_options to;
    mp_train_options_init(&to);
    CU_ASSERT_EQUAL(to.attention, MP_ATTENTION_NAIVE);
    to.attention = MP_ATTENTION_FUSED;
    to.optimizer = MP_OPTIM_SGD;
    mp_graph *tf = NULL, *tn = NULL;
    mp_train_breakdown bf, bn;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(b.g, &to, &tf, &bf), MP_OK);
    to.attention = MP_ATTENTION_NAIVE;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(b.g, &to, &tn, &bn), MP_OK);
    CU_ASSERT_EQUAL(bf.n_attention_fused, 1);
    CU_ASSERT_EQUAL(bn.n_attention_fused, 0);
    CU_ASSERT(bf.saved_bytes < bn.saved_bytes);
    /* the forward graph is not changed */
    CU_ASSERT(find_op(b.g, "Softmax") != MP_NONE);
    uint32_t gv = find_op(tf, "ScaledDotProductAttentionGrad");
    CU_ASSERT_FATAL(gv != MP_NONE);
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(tf, gv, &ni), MP_OK);
    /* the output gradient, q, kT, v, c, the output, the statistics */
    CU_ASSERT_EQUAL(ni.n_inputs, 7);
    const char *want[] = {"q", "kT", "v", "c", "attn_out"};
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(tname(tf, ni.inputs[1 + i]), want[i]);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(tf, ni.inputs[6], &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, (uint64_t)BH * T * 4);
    CU_ASSERT(strstr(ti.name, "/stats") != NULL);
    /* outputs: the gradients of q, kT and v, and the workspace */
    CU_ASSERT_EQUAL_FATAL(ni.n_outputs, 4);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(tf, ni.outputs[3], &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, (uint64_t)BH * T * (D + 1) * 4);
    for (uint32_t t = 0; t < mp_graph_num_tensors(tf); t++) {
        CU_ASSERT_EQUAL(mp_graph_tensor_info(tf, t, &ti), MP_OK);
        CU_ASSERT(ti.bytes != (uint64_t)BH * T * T * 4);
    }
    /* the backward costs 2.5 forwards */
    mp_node_info fi;
    uint32_t fv = find_op(tf, "ScaledDotProductAttention");
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(tf, fv, &fi), MP_OK);
    CU_ASSERT(fi.flops > 0);
    CU_ASSERT_DOUBLE_EQUAL(ni.flops, 2.5 * fi.flops, 1e-6 * fi.flops);
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *pf = NULL, *pn = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(tf, &o, &pf), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(tn, &o, &pn), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(tf, pf), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(tn, pn), MP_OK);
    CU_ASSERT(mp_plan_figures(pf)->peak_bytes <
              mp_plan_figures(pn)->peak_bytes);
    mp_plan_destroy(pf);
    mp_plan_destroy(pn);
    mp_graph_destroy(tf);
    mp_graph_destroy(tn);
    mp_graph_destroy(b.g);
    mp_ctx_destroy(ctx);
}

/* the CLI: the summary line and --attention naive */
static void test_cli(void)
{
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    int rc = mp_test_run(cmd, out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    int fused = strstr(out, "chains fused (SDPA)") != NULL;
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --attention "
             "naive 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "chains fused") == NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --attention "
             "flash 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --json 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "\"attention\"") != NULL);
    CU_ASSERT_EQUAL(strstr(out, "\"chains_fused\": 0") == NULL, fused);
}


/* ---- Swin's shifted windows ------------------------------------------------
 * The mask added over a Reshape of the scores to [B, W, H, N, N]: fused,
 * the node reading the sum of the bias and the window mask (a new Add)
 * or the window mask alone, with mask_dims [-1, W, H, N, N]. */
#define SW_SCORES ((uint64_t)SW_B * SW_W * SW_H * SW_N * SW_N * 4)
#define SW_Q ((uint64_t)SW_B * SW_W * SW_H * SW_N * SW_D * 4)

static uint32_t tensor_named(const mp_graph *g, const char *name)
{
    uint32_t t = MP_NONE;
    return mp_graph_find_tensor(g, name, &t) == MP_OK ? t : MP_NONE;
}

static void check_mask_dims(const mp_graph *g, uint32_t v)
{
    const int64_t want[] = {-1, SW_W, SW_H, SW_N, SW_N};
    uint32_t n = 0;
    const int64_t *d = mp__attr_ints(&g->nodes[v], "mask_dims", &n);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(d[i], want[i]);
}

static void test_shifted_window(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* the bias and the window mask: one mask, their sum */
    mp_graph *g = mp_test_shifted_window(ctx, SW_BIAS);
    uint32_t n = 0;
    uint64_t bytes = 0;
    CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(g, &n, &bytes), MP_OK);
    CU_ASSERT_EQUAL(n, 1);
    /* scores, biased, shift_masked, probs and q_scaled (the Reshapes'
     * outputs are views) */
    CU_ASSERT_EQUAL(bytes, 4 * SW_SCORES + SW_Q);
    uint32_t v = find_op(g, "ScaledDotProductAttention");
    CU_ASSERT_FATAL(v != MP_NONE);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 2); /* the mask's Add, the node */
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(g, v, &ni), MP_OK);
    CU_ASSERT_EQUAL_FATAL(ni.n_inputs, 5);
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[0]), "q");
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[1]), "kT");
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[2]), "v");
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[3]), "softmax/mask");
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[4]), "qscale");
    CU_ASSERT_STRING_EQUAL(tname(g, ni.outputs[0]), "out");
    CU_ASSERT_EQUAL(attr(g, v, "mask_kind"), 1);
    CU_ASSERT_EQUAL(attr(g, v, "mask_first"), 0);
    check_mask_dims(g, v);
    /* the sum: Add(bias, smask) -> [1, W, H, N, N], before the node */
    const int64_t dm[] = {1, SW_W, SW_H, SW_N, SW_N};
    mp_test_assert_shape(g, "softmax/mask", 5, dm);
    uint32_t a = find_op(g, "Add");
    CU_ASSERT_FATAL(a != MP_NONE);
    mp_node_info ai;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(g, a, &ai), MP_OK);
    CU_ASSERT_STRING_EQUAL(ai.name, "softmax/mask");
    CU_ASSERT_STRING_EQUAL(tname(g, ai.inputs[0]), "bias");
    CU_ASSERT_STRING_EQUAL(tname(g, ai.inputs[1]), "smask");
    CU_ASSERT_EQUAL(ai.outputs[0], ni.inputs[3]);
    const char *gone[] = {"scores", "biased", "viewed", "shift_masked",
                          "unviewed", "probs", "q_scaled"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        CU_ASSERT_EQUAL(tensor_named(g, gone[i]), MP_NONE);
    /* planned and verified */
    mp_test_plan_verify(g);
    mp_graph_destroy(g);

    /* the window mask alone: read as it is */
    g = mp_test_shifted_window(ctx, 0);
    CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(g, &n, &bytes), MP_OK);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(bytes, 3 * SW_SCORES + SW_Q);
    v = find_op(g, "ScaledDotProductAttention");
    CU_ASSERT_FATAL(v != MP_NONE);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 1);
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(g, v, &ni), MP_OK);
    CU_ASSERT_STRING_EQUAL(tname(g, ni.inputs[3]), "smask");
    check_mask_dims(g, v);
    mp_test_plan_verify(g);
    mp_graph_destroy(g);

    /* the Reshape targets written by Constant nodes: those nodes only fed
     * the removed Reshapes, so they go too */
    g = mp_test_shifted_window(ctx, SW_BIAS | SW_CONST_NODES);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 10);
    CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(g, &n, NULL), MP_OK);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 2);
    CU_ASSERT_EQUAL(find_op(g, "Constant"), MP_NONE);
    CU_ASSERT_EQUAL(tensor_named(g, "view_shape"), MP_NONE);
    mp_graph_destroy(g);

    /* left alone: a scale between the two masks (their sum would be
     * scaled), a bias that varies with the window's image (no [W, H, N,
     * N] mask holds it) */
    unsigned keep[] = {SW_BIAS | SW_SCALE_BETWEEN, SW_WIDE_BIAS};
    for (size_t i = 0; i < 2; i++) {
        g = mp_test_shifted_window(ctx, keep[i]);
        uint32_t nn = mp_graph_num_nodes(g);
        CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(g, &n, &bytes), MP_OK);
        CU_ASSERT_EQUAL(n, 0);
        CU_ASSERT_EQUAL(bytes, 0);
        CU_ASSERT_EQUAL(mp_graph_num_nodes(g), nn);
        CU_ASSERT(find_op(g, "Softmax") != MP_NONE);
        mp_graph_destroy(g);
    }
    mp_ctx_destroy(ctx);
}

/* Training: one fused node; the bias (a weight) gets its gradient through
 * the mask's Add; no tensor of the scores' size; the plan verifies and
 * its peak is below the naive one's. */
static void test_shifted_window_train(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_shifted_window(ctx, SW_TRAIN | SW_BIAS);
    mp_train_options to;
    mp_train_options_init(&to);
    to.attention = MP_ATTENTION_FUSED;
    to.optimizer = MP_OPTIM_SGD;
    mp_graph *tf = NULL, *tn = NULL;
    mp_train_breakdown bf, bn;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &tf, &bf), MP_OK);
    to.attention = MP_ATTENTION_NAIVE;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &tn, &bn), MP_OK);
    CU_ASSERT_EQUAL(bf.n_attention_fused, 1);
    CU_ASSERT_EQUAL(bn.n_attention_fused, 0);
    uint32_t fv = find_op(tf, "ScaledDotProductAttention");
    CU_ASSERT_FATAL(fv != MP_NONE);
    check_mask_dims(tf, fv);
    CU_ASSERT(find_op(tf, "ScaledDotProductAttentionGrad") != MP_NONE);
    CU_ASSERT(tensor_named(tf, "d/bias#1") != MP_NONE);
    CU_ASSERT(tensor_named(tf, "d/Wq#1") != MP_NONE);
    mp_tensor_info ti;
    int scores_sized = 0;
    for (uint32_t t = 0; t < mp_graph_num_tensors(tf); t++)
        if (mp_graph_tensor_info(tf, t, &ti) == MP_OK &&
            ti.bytes == SW_SCORES)
            scores_sized++;
    CU_ASSERT_EQUAL(scores_sized, 0);
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *pf = NULL, *pn = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(tf, &o, &pf), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(tn, &o, &pn), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(tf, pf), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(tn, pn), MP_OK);
    CU_ASSERT(mp_plan_figures(pf)->peak_bytes <
              mp_plan_figures(pn)->peak_bytes);
    mp_plan_destroy(pf);
    mp_plan_destroy(pn);
    mp_graph_destroy(tf);
    mp_graph_destroy(tn);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The node's mask_dims as its shape function checks them: a reshape of
 * the scores [4, 2, 8, 8] keeping (8, 8), one -1 inferred, the mask
 * broadcasting to it. */
static mp_status sdpa_with(mp_ctx *ctx, const int64_t *md, uint32_t nmd,
                           const int64_t *mask, int mrank)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dq[] = {4, 2, 8, 4}, dk[] = {4, 2, 4, 8};
    uint32_t in[4];
    in[0] = mp_test_tensor(g, "q", MP_KIND_INPUT, 4, dq);
    in[1] = mp_test_tensor(g, "kT", MP_KIND_INPUT, 4, dk);
    in[2] = mp_test_tensor(g, "v", MP_KIND_INPUT, 4, dq);
    in[3] = mp_test_tensor(g, "mask", MP_KIND_INPUT, mrank, mask);
    uint32_t o = mp_test_tensor(g, "o", MP_KIND_ACTIVATION, -1, NULL), id;
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = "sdpa";
    d.op = "ScaledDotProductAttention";
    d.domain = "memplan";
    d.inputs = in;
    d.n_inputs = 4;
    d.outputs = &o;
    d.n_outputs = 1;
    CU_ASSERT_FATAL(mp_graph_add_node(g, &d, &id) == MP_OK);
    CU_ASSERT(mp_graph_set_attr_int(g, id, "mask_kind", 1) == MP_OK);
    if (md)
        CU_ASSERT(mp_graph_set_attr_ints(g, id, "mask_dims", md, nmd) ==
                  MP_OK);
    mp_status st = mp_graph_finalize(g);
    if (st)
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "sdpa"));
    mp_graph_destroy(g);
    return st;
}

static void test_mask_dims(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    int64_t m5[] = {1, 2, 1, 8, 8}, m4[] = {1, 2, 8, 8}, bad[] = {1, 3, 1, 8, 8};
    int64_t ok1[] = {-1, 2, 2, 8, 8}, ok2[] = {2, 2, 2, 8, 8},
            undiv[] = {-1, 3, 2, 8, 8}, last[] = {-1, 2, 2, 8, 4},
            count[] = {3, 2, 2, 8, 8}, two[] = {-1, -1, 2, 8, 8};
    CU_ASSERT_EQUAL(sdpa_with(ctx, ok1, 5, m5, 5), MP_OK);
    CU_ASSERT_EQUAL(sdpa_with(ctx, ok2, 5, m5, 5), MP_OK);
    CU_ASSERT_EQUAL(sdpa_with(ctx, NULL, 0, m4, 4), MP_OK);
    CU_ASSERT_EQUAL(sdpa_with(ctx, undiv, 5, m5, 5), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "mask_dims"));
    CU_ASSERT_EQUAL(sdpa_with(ctx, last, 5, m5, 5), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "(Tq, Tk)"));
    CU_ASSERT_EQUAL(sdpa_with(ctx, count, 5, m5, 5), MP_ERR_SHAPE);
    CU_ASSERT_EQUAL(sdpa_with(ctx, two, 5, m5, 5), MP_ERR_SHAPE);
    /* the mask [1, 3, 1, 8, 8] is no mask of [2, 2, 2, 8, 8] */
    CU_ASSERT_EQUAL(sdpa_with(ctx, ok1, 5, bad, 5), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "does not broadcast"));
    /* without mask_dims a rank-5 mask does not fit rank-4 scores */
    CU_ASSERT_EQUAL(sdpa_with(ctx, NULL, 0, m5, 5), MP_ERR_SHAPE);
    mp_ctx_destroy(ctx);
}

/* The reference exports of torchvision's swin_t (validate/
 * train_reference.py writes them to build-ref/; MEMPLAN_REF_DIR names
 * another folder): all 12 chains fused, 5 of them shifted windows, in
 * training and inference; the plans verify. Skipped when absent. */
static const char *ref_file(const char *name, char *buf, size_t cap)
{
    const char *env = getenv("MEMPLAN_REF_DIR");
    const char *dirs[] = {env && *env ? env : NULL, MP_SOURCE_DIR "/build-ref"};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i])
            continue;
        snprintf(buf, cap, "%s/%s", dirs[i], name);
        FILE *f = fopen(buf, "rb");
        if (f) {
            fclose(f);
            return buf;
        }
    }
    printf("\n  skipped: %s not present (build-ref/ or MEMPLAN_REF_DIR)\n",
           name);
    return NULL;
}

static void test_swin_t(void)
{
    const char *files[] = {"swin_t.train.onnx", "swin_t.infer.onnx"};
    for (int i = 0; i < 2; i++) {
        char path[1024];
        if (!ref_file(files[i], path, sizeof path))
            continue;
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_onnx_options oo;
        mp_onnx_options_init(&oo);
        oo.batch = 8;
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_load_onnx(ctx, path, &oo, &g), MP_OK);
        mp_graph *t = NULL;
        mp_train_breakdown br;
        if (i == 0) {
            mp_train_options to;
            mp_train_options_init(&to);
            to.attention = MP_ATTENTION_FUSED;
            to.optimizer = MP_OPTIM_SGD;
            CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, &br), MP_OK);
            CU_ASSERT_EQUAL(br.n_attention_fused, 12);
        } else {
            uint32_t n = 0;
            CU_ASSERT_EQUAL_FATAL(mp_graph_fuse_attention(g, &n, NULL),
                                  MP_OK);
            CU_ASSERT_EQUAL(n, 12);
            t = g;
            g = NULL;
        }
        uint32_t with_view = 0, softmax = 0;
        for (uint32_t v = 0; v < mp_graph_num_nodes(t); v++) {
            mp_node_info ni;
            CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(t, v, &ni), MP_OK);
            softmax += strcmp(ni.op, "Softmax") == 0;
            if (strcmp(ni.op, "ScaledDotProductAttention") == 0 &&
                attr(t, v, "mask_kind") == 1) {
                uint32_t c = 0;
                with_view += mp__attr_ints(&t->nodes[v], "mask_dims", &c) &&
                             c == 5;
            }
        }
        CU_ASSERT_EQUAL(softmax, 0);
        CU_ASSERT_EQUAL(with_view, 5);
        mp_test_plan_verify(t);
        mp_graph_destroy(t);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    /* the command's summary */
    char path[1024];
    if (!ref_file(files[0], path, sizeof path))
        return;
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' plan '%s' --train --batch 8 2>&1",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "attention    12 chains fused"));
}

static CU_TestInfo tests[] = {
    {"plain chain", test_plain},
    {"scale, mask, Where, Dropout", test_scale_mask},
    {"a second reader of the scores: not fused", test_second_reader},
    {"Q, K, V through Reshape and Transpose", test_export_form},
    {"naive keeps the graph and plan", test_naive_keeps},
    {"training: what backward keeps", test_train_saved},
    {"plan --attention", test_cli},
    {"shifted windows: the mask over a view of the scores", test_shifted_window},
    {"shifted windows in training", test_shifted_window_train},
    {"the node's mask_dims", test_mask_dims},
    {"swin_t exports: 12 chains (build-ref/)", test_swin_t},
    CU_TEST_INFO_NULL,
};

void mp_register_attention(void) { mp_test_add_suite("attention", tests); }
