/* Per-rank graphs of multi-GPU training (memplan/parallel.h): a 4-layer
 * MLP under DDP, ZeRO-1, -2 and -3 over 2 ranks, each byte of the peak
 * accounted for by hand, every rank plan verified. */
#include "ir.h"
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x[4,8] -> 4 x (MatMul(layers.i.w[8,8]) -> Relu) -> y[4,8] (output).
 * Every activation 128 bytes, every weight 256 (64 elements). */
static mp_graph *mlp4(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 8};
    uint32_t h = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    char nm[64];
    for (int i = 0; i < 4; i++) {
        snprintf(nm, sizeof nm, "layers.%d.w", i);
        uint32_t w = mp_test_tensor(g, nm, MP_KIND_WEIGHT, 2, dw);
        snprintf(nm, sizeof nm, "layers.%d.mm", i);
        uint32_t m = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        snprintf(nm, sizeof nm, "layers.%d.relu", i);
        uint32_t r = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        uint32_t in[] = {h, w};
        snprintf(nm, sizeof nm, "layers.%d/MatMul", i);
        mp_test_node(g, nm, "MatMul", in, 2, &m, 1);
        snprintf(nm, sizeof nm, "layers.%d/Relu", i);
        mp_test_node(g, nm, "Relu", &m, 1, &r, 1);
        h = r;
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, h), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

/* The training graph of mlp4: Adam, fused (no step temporary). */
static mp_graph *mlp4_train(mp_ctx *ctx)
{
    return mp_test_train_fused(mlp4(ctx));
}

/* Plans distinct rank i of t under po (alignment 1, no in-place),
 * verifies it, returns the breakdown and the rank's info (its graph is
 * freed: read the figures only). */
static mp_rank_breakdown plan_distinct(const mp_graph *t,
                                       const mp_parallel_options *po,
                                       uint32_t i, mp_rank_info *ri)
{
    mp_parallel *par = NULL;
    mp_rank_breakdown bd;
    memset(&bd, 0, sizeof bd);
    CU_ASSERT_FATAL(mp_parallel_create(t, po, &par) == MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_num_ranks(par), po->dp * po->pp * po->tp);
    CU_ASSERT_FATAL(mp_parallel_rank_info(par, i, ri) == MP_OK);
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    opt.alignment = 1;
    opt.inplace = 0;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(ri->graph, &opt, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(ri->graph, p), MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_breakdown(par, i, p, &bd), MP_OK);
    CU_ASSERT_EQUAL(bd.param_bytes + bd.grad_bytes + bd.optimizer_bytes +
                        bd.activation_bytes + bd.comm_bytes + bd.free_bytes,
                    bd.peak_bytes);
    if (getenv("MP_TEST_SHOW_PEAK")) {
        const mp_step *st = mp_plan_steps(p);
        mp_node_info ni;
        if (mp_graph_node_info(ri->graph, st[bd.peak_step].index, &ni) ==
            MP_OK)
            printf("\n  peak at %s", ni.name);
        for (uint32_t b = 0; b < p->n_blocks; b++)
            if (p->blocks[b].first <= bd.peak_step &&
                bd.peak_step < p->blocks[b].end)
                printf("\n    live %s %llu",
                       ri->graph->tensors[p->blocks[b].tensor].name,
                       (unsigned long long)p->blocks[b].size);
    }
    mp_plan_destroy(p);
    mp_parallel_destroy(par);
    return bd;
}

/* Plans distinct rank 0 of mlp4's training graph, verifies it and
 * returns its breakdown. */
static mp_rank_breakdown rank_bd(const mp_parallel_options *po,
                                 mp_rank_info *ri_out)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx);
    mp_rank_info ri;
    mp_rank_breakdown bd = plan_distinct(t, po, 0, &ri);
    if (ri_out)
        *ri_out = ri;
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
    return bd;
}

static void show(const char *what, const mp_rank_breakdown *b)
{
    printf("\n  %s: peak %llu = params %llu + grads %llu + opt %llu + act "
           "%llu + comm %llu + free %llu (step %u)",
           what, (unsigned long long)b->peak_bytes,
           (unsigned long long)b->param_bytes,
           (unsigned long long)b->grad_bytes,
           (unsigned long long)b->optimizer_bytes,
           (unsigned long long)b->activation_bytes,
           (unsigned long long)b->comm_bytes,
           (unsigned long long)b->free_bytes, (unsigned)b->peak_step);
}

/* Each part of a breakdown (bytes). */
static void expect_bd(const mp_rank_breakdown *b, uint64_t params,
                      uint64_t grads, uint64_t opt, uint64_t act,
                      uint64_t comm)
{
    CU_ASSERT_EQUAL(b->param_bytes, params);
    CU_ASSERT_EQUAL(b->grad_bytes, grads);
    CU_ASSERT_EQUAL(b->optimizer_bytes, opt);
    CU_ASSERT_EQUAL(b->activation_bytes, act);
    CU_ASSERT_EQUAL(b->comm_bytes, comm);
}

static mp_parallel_options dp2(int zero)
{
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.dp = 2;
    po.zero = zero;
    return po;
}

/* Every case: 4 weights of 256 bytes (1024), Adam's m and v (2048, 1024
 * sharded over 2 ranks), the loss (4 bytes) live to the end; x and the
 * activations 128 bytes each. */
static void test_ddp(void)
{
    mp_parallel_options po = dp2(0);
    mp_rank_info ri;
    mp_rank_breakdown b = rank_bd(&po, &ri);
    show("ddp", &b);
    CU_ASSERT_EQUAL(ri.n_ranks, 2);
    CU_ASSERT_EQUAL(ri.n_collectives, 1); /* one bucket's all-reduce */
    /* the peak is the all-reduce: the 4 gradients (read) and the bucket
     * they are reduced into (1024, under 25 MiB: one bucket), the loss;
     * every forward value is dead */
    expect_bd(&b, 1024, 1024, 2048, 4, 1024);
    CU_ASSERT_EQUAL(b.peak_bytes, 1024 + 2048 + 1024 + 1024 + 4);
}

static void test_ddp_buckets(void)
{
    /* a 256-byte cap: one bucket per gradient, each reduced as soon as
     * it is complete, so the gradients never live together */
    mp_parallel_options po = dp2(0);
    po.bucket_bytes = 256;
    mp_rank_info ri;
    mp_rank_breakdown b = rank_bd(&po, &ri);
    show("ddp, 256-byte buckets", &b);
    CU_ASSERT_EQUAL(ri.n_collectives, 4);
    /* the peak is the all-reduce of layers.1's gradient (256): the two
     * buckets before it and its own (768), with x and layers.0.relu
     * (saved for layers.0's backward), d(layers.0.relu) and the loss
     * live (3 x 128 + 4); at the last all-reduce x and layers.0.relu are
     * dead: 256 + 1024 + 4 */
    CU_ASSERT_EQUAL(b.grad_bytes, 256);
    CU_ASSERT_EQUAL(b.comm_bytes, 768);
    CU_ASSERT_EQUAL(b.activation_bytes, 3 * 128 + 4);
    CU_ASSERT_EQUAL(b.peak_bytes, 1024 + 2048 + 256 + 768 + 388);
}

static void test_zero1(void)
{
    /* DDP's peak with the states halved (each of the 8 states 32 of its
     * 64 elements: 128 bytes) */
    mp_parallel_options po = dp2(1);
    mp_rank_info ri;
    mp_rank_breakdown b = rank_bd(&po, &ri);
    show("zero1", &b);
    CU_ASSERT_EQUAL(ri.n_collectives, 2); /* all-reduce, all-gather */
    expect_bd(&b, 1024, 1024, 1024, 4, 1024);
    CU_ASSERT_EQUAL(b.peak_bytes, 4100);
}

static void test_zero2(void)
{
    /* the reduce-scatter: the 4 gradients into this rank's shard of
     * them (4 x 32 elements: 512 bytes) */
    mp_parallel_options po = dp2(2);
    mp_rank_breakdown b = rank_bd(&po, NULL);
    show("zero2", &b);
    expect_bd(&b, 1024, 1024, 1024, 4, 512);
    CU_ASSERT_EQUAL(b.peak_bytes, 3588);
}

static void test_zero3(void)
{
    /* units layers.0 .. layers.3, prefetch 1. Parameters: 4 shards of 32
     * elements (512). The peak is the first backward node,
     * layers.3/MatMul/grad: the backward all-gathers of layers.3 and,
     * prefetched, layers.2 (512); its weight gradient (256); reading
     * d(layers.3.mm) and writing d(layers.2.relu), with x and the three
     * Relu outputs saved for backward (6 x 128) and the loss (4) */
    mp_parallel_options po = dp2(3);
    mp_rank_info ri;
    mp_rank_breakdown b = rank_bd(&po, &ri);
    show("zero3", &b);
    /* 4 forward all-gathers, 3 backward ones (layers.0's backward needs
     * no weight: x takes no gradient), 4 reduce-scatters */
    CU_ASSERT_EQUAL(ri.n_collectives, 11);
    expect_bd(&b, 512, 256, 1024, 6 * 128 + 4, 512);
    CU_ASSERT_EQUAL(b.peak_bytes, 512 + 1024 + 256 + 512 + 772);
    /* no prefetch: one gathered weight at a time */
    po.prefetch = 0;
    b = rank_bd(&po, NULL);
    show("zero3, prefetch 0", &b);
    CU_ASSERT_EQUAL(b.comm_bytes, 256);
    CU_ASSERT_EQUAL(b.peak_bytes, 512 + 1024 + 256 + 256 + 772);
    /* one unit (a prefix no parameter has): every weight gathered
     * together, in forward and in backward */
    po.prefetch = 1;
    po.fsdp_unit = "blocks.";
    b = rank_bd(&po, &ri);
    show("zero3, one unit", &b);
    CU_ASSERT_EQUAL(ri.n_collectives, 3);
    /* the optimizer offloaded: no state on the device; the host holds
     * this rank's shards of m and v */
    po.fsdp_unit = NULL;
    po.offload_optimizer = 1;
    b = rank_bd(&po, &ri);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 0);
    CU_ASSERT_EQUAL(ri.host_bytes, 1024);
    CU_ASSERT_EQUAL(b.peak_bytes, 512 + 256 + 512 + 772);
}

static void test_one_rank(void)
{
    /* dp 1: no collective; the plan of the training graph itself */
    mp_parallel_options po = dp2(3);
    po.dp = 1;
    mp_rank_info ri;
    mp_rank_breakdown b = rank_bd(&po, &ri);
    CU_ASSERT_EQUAL(ri.n_collectives, 0);
    CU_ASSERT_EQUAL(b.comm_bytes, 0);
    CU_ASSERT_EQUAL(b.param_bytes, 1024);
    CU_ASSERT_EQUAL(b.optimizer_bytes, 2048);
}

/* 2 stages, 4 micro-batches, a schedule, cut points */
static mp_parallel_options pp2(mp_pp_schedule sched, const char *cuts)
{
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.pp = 2;
    po.microbatches = 4;
    po.schedule = sched;
    po.cuts = cuts;
    return po;
}

/* 1F1B, 4 micro-batches over 2 stages cut after layers.1/Relu: stage
 * 0 (layers 0, 1) holds p - s = 2 micro-batches, stage 1 (layers 2, 3
 * and the loss) one. Each stage: 2 weights (512) and their m and v
 * (1024). */
static void test_pipeline_1f1b(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx);
    mp_parallel_options po = pp2(MP_PP_1F1B, "layers.1/Relu");
    mp_parallel *par = NULL;
    CU_ASSERT_FATAL(mp_parallel_create(t, &po, &par) == MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_num_distinct(par), 2);
    CU_ASSERT_EQUAL(mp_parallel_distinct_of(par, 1), 1);
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    opt.alignment = 1;
    opt.inplace = 0;
    mp_rank_breakdown b[2];
    mp_rank_info ri[2];
    for (uint32_t s = 0; s < 2; s++) {
        mp_plan *p = NULL;
        CU_ASSERT_FATAL(mp_parallel_rank_info(par, s, &ri[s]) == MP_OK);
        CU_ASSERT_FATAL(mp_plan_create(ri[s].graph, &opt, &p) == MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(ri[s].graph, p), MP_OK);
        CU_ASSERT_EQUAL(mp_parallel_breakdown(par, s, p, &b[s]), MP_OK);
        CU_ASSERT_EQUAL(b[s].param_bytes + b[s].grad_bytes +
                            b[s].optimizer_bytes + b[s].activation_bytes +
                            b[s].comm_bytes + b[s].free_bytes,
                        b[s].peak_bytes);
        show(s ? "1f1b stage 1" : "1f1b stage 0", &b[s]);
        mp_plan_destroy(p);
    }
    CU_ASSERT_EQUAL(ri[0].in_flight, 2);
    CU_ASSERT_EQUAL(ri[1].in_flight, 1);
    /* stage 0 sends layers.1.relu of each micro-batch and receives its
     * gradient: 2 x 2; stage 1 the converse: 2 */
    CU_ASSERT_EQUAL(ri[0].n_collectives, 4);
    CU_ASSERT_EQUAL(ri[1].n_collectives, 2);
    /* stage 0 peaks where micro-batch 2's gradient of layers.1.w is
     * summed with micro-batch 1's: both and the sum (3 x 256) and
     * layers.0.w's of micro-batch 1 (256); micro-batch 2's x and
     * layers.0.relu (saved for layers.0's backward) and d(layers.0.relu)
     * (3 x 128) */
    expect_bd(&b[0], 512, 4 * 256, 1024, 3 * 128, 0);
    CU_ASSERT_EQUAL(b[0].peak_bytes, 512 + 1024 + 1024 + 384);
    /* stage 1 peaks at layers.2's weight gradient: it and layers.3.w's
     * (512), the received layers.1.relu saved for it (128), reading
     * d(layers.2.mm) and writing d(layers.1.relu), the one to send
     * (2 x 128), and the loss (4) */
    expect_bd(&b[1], 512, 512, 1024, 2 * 128 + 4, 128);
    CU_ASSERT_EQUAL(b[1].peak_bytes, 512 + 1024 + 512 + 128 + 260);
    mp_parallel_destroy(par);
    /* GPipe: stage 0 holds all 4 micro-batches */
    po.schedule = MP_PP_GPIPE;
    CU_ASSERT_FATAL(mp_parallel_create(t, &po, &par) == MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_rank_info(par, 0, &ri[0]), MP_OK);
    CU_ASSERT_EQUAL(ri[0].in_flight, 4);
    CU_ASSERT_EQUAL(ri[0].n_collectives, 8);
    mp_parallel_destroy(par);
    /* a cut that is no forward node; too few micro-batches */
    po.cuts = "layers.1/Relu/grad";
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--pp-cuts"));
    po.cuts = NULL;
    po.microbatches = 1;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--microbatches"));
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}


/* A tiny transformer block: x[4,8] (4 tokens, hidden 8); attention with
 * 2 heads of 4: q, k, v = x @ W[8,8], each reshaped to [4,2,4] (a target
 * of unknown value: the declared shape), heads transposed, scores
 * MatMul(q, k^T) [2,4,4], Softmax, MatMul(p, v) [2,4,4], merged back to
 * [4,8], @ Wo[8,8]; residual r = x + o; MLP: r @ W1[8,16], Relu,
 * @ W2[16,8] -> y (output). Adam fused; attention as written; at
 * precision prec. */
static mp_graph *block(mp_ctx *ctx, mp_precision prec)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 8}, dsp[] = {4, 2, 4},
            dh[] = {2, 4, 4}, d3[] = {3}, d1[] = {8, 16}, d2[] = {16, 8},
            df[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    mp_tensor_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.name = "shape_split";
    sd.dtype = MP_DTYPE_INT64;
    sd.kind = MP_KIND_CONSTANT;
    sd.rank = 1;
    sd.dims = d3;
    uint32_t shp, shm;
    CU_ASSERT_FATAL(mp_graph_add_tensor(g, &sd, &shp) == MP_OK);
    int64_t d2r[] = {2};
    sd.name = "shape_merge";
    sd.dims = d2r;
    CU_ASSERT_FATAL(mp_graph_add_tensor(g, &sd, &shm) == MP_OK);
    const char *qkv[] = {"q", "k", "v"};
    uint32_t heads[3];
    char nm[64];
    for (int i = 0; i < 3; i++) {
        snprintf(nm, sizeof nm, "attn.%s.weight", qkv[i]);
        uint32_t w = mp_test_tensor(g, nm, MP_KIND_WEIGHT, 2, dw);
        snprintf(nm, sizeof nm, "attn.%s", qkv[i]);
        uint32_t mm = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        snprintf(nm, sizeof nm, "attn.%s.split", qkv[i]);
        uint32_t sp = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 3, dsp);
        snprintf(nm, sizeof nm, "attn.%s.heads", qkv[i]);
        heads[i] = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 3, dh);
        uint32_t in[] = {x, w}, rin[] = {mm, shp};
        snprintf(nm, sizeof nm, "attn.%s/MatMul", qkv[i]);
        mp_test_node(g, nm, "MatMul", in, 2, &mm, 1);
        snprintf(nm, sizeof nm, "attn.%s/Reshape", qkv[i]);
        mp_test_node(g, nm, "Reshape", rin, 2, &sp, 1);
        snprintf(nm, sizeof nm, "attn.%s/Transpose", qkv[i]);
        uint32_t tr = mp_test_node(g, nm, "Transpose", &sp, 1, &heads[i], 1);
        int64_t perm[3] = {1, 0, 2}, permk[3] = {1, 2, 0};
        CU_ASSERT(mp_graph_set_attr_ints(g, tr, "perm", i == 1 ? permk : perm,
                                         3) == MP_OK);
    }
    uint32_t sc = mp_test_tensor(g, "attn.scores", MP_KIND_ACTIVATION, 3, dh);
    uint32_t pr = mp_test_tensor(g, "attn.probs", MP_KIND_ACTIVATION, 3, dh);
    uint32_t cx = mp_test_tensor(g, "attn.context", MP_KIND_ACTIVATION, 3, dh);
    uint32_t ct = mp_test_tensor(g, "attn.context_t", MP_KIND_ACTIVATION, 3,
                                 dsp);
    uint32_t mg = mp_test_tensor(g, "attn.merged", MP_KIND_ACTIVATION, 2, dx);
    uint32_t wo = mp_test_tensor(g, "attn.proj.weight", MP_KIND_WEIGHT, 2, dw);
    uint32_t o = mp_test_tensor(g, "attn.proj", MP_KIND_ACTIVATION, 2, dx);
    uint32_t r = mp_test_tensor(g, "res", MP_KIND_ACTIVATION, 2, dx);
    uint32_t w1 = mp_test_tensor(g, "mlp.fc.weight", MP_KIND_WEIGHT, 2, d1);
    uint32_t f = mp_test_tensor(g, "mlp.fc", MP_KIND_ACTIVATION, 2, df);
    uint32_t a = mp_test_tensor(g, "mlp.act", MP_KIND_ACTIVATION, 2, df);
    uint32_t w2 = mp_test_tensor(g, "mlp.proj.weight", MP_KIND_WEIGHT, 2, d2);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dx);
    uint32_t i1[] = {heads[0], heads[1]}, i2[] = {pr, heads[2]},
             i3[] = {ct, shm}, i4[] = {mg, wo}, i5[] = {x, o}, i6[] = {r, w1},
             i7[] = {a, w2};
    mp_test_node(g, "attn/MatMul_QK", "MatMul", i1, 2, &sc, 1);
    uint32_t sm = mp_test_node(g, "attn/Softmax", "Softmax", &sc, 1, &pr, 1);
    CU_ASSERT(mp_graph_set_attr_int(g, sm, "axis", -1) == MP_OK);
    mp_test_node(g, "attn/MatMul_PV", "MatMul", i2, 2, &cx, 1);
    uint32_t tr = mp_test_node(g, "attn/Transpose", "Transpose", &cx, 1, &ct,
                               1);
    int64_t perm[3] = {1, 0, 2};
    CU_ASSERT(mp_graph_set_attr_ints(g, tr, "perm", perm, 3) == MP_OK);
    mp_test_node(g, "attn/Reshape", "Reshape", i3, 2, &mg, 1);
    mp_test_node(g, "attn.proj/MatMul", "MatMul", i4, 2, &o, 1);
    mp_test_node(g, "res/Add", "Add", i5, 2, &r, 1);
    mp_test_node(g, "mlp.fc/MatMul", "MatMul", i6, 2, &f, 1);
    mp_test_node(g, "mlp/Relu", "Relu", &f, 1, &a, 1);
    mp_test_node(g, "mlp.proj/MatMul", "MatMul", i7, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_train_options o2;
    mp_train_options_init(&o2);
    o2.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    o2.precision = prec;
    mp_graph *t = NULL;
    CU_ASSERT_FATAL(mp_train_graph(g, &o2, &t, NULL) == MP_OK);
    mp_graph_destroy(g);
    return t;
}

static void test_tp(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = block(ctx, MP_PRECISION_FP32);
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    mp_rank_info ri;
    mp_rank_breakdown one = plan_distinct(t, &po, 0, &ri);
    show("tp 1", &one);
    po.tp = 2;
    mp_rank_breakdown b = plan_distinct(t, &po, 0, &ri);
    show("tp 2", &b);
    CU_ASSERT_EQUAL(ri.tp_attention, 1);
    CU_ASSERT_EQUAL(ri.tp_mlp, 1);
    CU_ASSERT_EQUAL(ri.n_ranks, 2);
    /* the AllReduces of attn.proj's and mlp.proj's outputs, and of the
     * MLP input's gradient (d/res); x, the attention's input, takes no
     * gradient */
    CU_ASSERT_EQUAL(ri.n_collectives, 3);
    /* tp 1: weights q, k, v, o (4 x 256), fc and proj (2 x 512) and the
     * two int64 reshape targets (24 + 16): 2088; Adam's m and v 4096.
     * Both peak at mlp.fc's backward (it writes d(res), the MLP input's
     * partial gradient, before its all-reduce). tp 2: every weight is
     * split (q, k, v, fc by columns, o, proj by rows): 1024 + 40; m, v
     * 2048; the two weight gradients live (fc's and proj's: 512 -> 256
     * each); activations: x, res and d(res) stay whole (3 x 128), q, k,
     * v, probs and context_t (saved) are halved (5 x 64: one head of
     * two), d(mlp.fc) [4,8] of [4,16] (128), and the loss (4) */
    CU_ASSERT_EQUAL(one.param_bytes, 2088);
    CU_ASSERT_EQUAL(one.peak_bytes, 2088 + 4096 + 1024 + 1284);
    expect_bd(&b, 1024 + 40, 512, 2048, 3 * 128 + 5 * 64 + 128 + 4, 0);
    CU_ASSERT_EQUAL(b.peak_bytes, 1064 + 512 + 2048 + 836);
    /* no block: an MLP whose layers are not split by --tp 3 (8 columns),
     * and a graph with no MatMul pair around an activation */
    po.tp = 3;
    mp_parallel *par = NULL;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_GRAPH);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--tp 3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "divisible"));
    mp_graph *m = mlp4_train(ctx);
    po.tp = 2;
    CU_ASSERT_EQUAL(plan_distinct(m, &po, 0, &ri).param_bytes, 512);
    CU_ASSERT_EQUAL(ri.tp_mlp, 2); /* layers 0-1 and 2-3 */
    mp_graph_destroy(m);
    /* --sp needs --tp */
    po.sp = 1;
    po.tp = 1;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--sp"));
    CU_ASSERT_PTR_NULL(par);
    /* sp: the residual Add runs on 2 of the 4 tokens. x (the input,
     * read by the Add and by q, k, v) is given split and gathered for
     * q, k, v; attn.proj's output is reduce-scattered into the Add; res
     * (split) is gathered for mlp.fc, and again in backward for its
     * weight gradient; mlp.proj's output (read by the loss) is
     * all-reduced as without sp; d(res) (mlp.fc's partial gradient) is
     * reduce-scattered, d(attn.proj) all-gathered: 8 collectives. Same
     * peak step; x is 64 bytes instead of 128, res is not held (its
     * gathered copy, 128, is the one communication buffer live): 644
     * activations (x 64, q, k, v, probs, context_t 5 x 64, loss 4,
     * d(mlp.fc) 128, d(res) 128), comm 128. */
    po.tp = 2;
    mp_rank_breakdown s2 = plan_distinct(t, &po, 0, &ri);
    show("tp 2, sp", &s2);
    CU_ASSERT_EQUAL(ri.n_collectives, 8);
    expect_bd(&s2, 1064, 512, 2048, 64 + 5 * 64 + 4 + 128 + 128, 128);
    CU_ASSERT_EQUAL(s2.peak_bytes, b.peak_bytes - 64);
    po.sp = 0;
    mp_graph_destroy(t);
    /* bf16-mixed: the layers read autocast's weight copies (which the
     * Loss holds until forward ends) and the same blocks are split; the
     * float32 weights and Adam's states halve as in float32 */
    t = block(ctx, MP_PRECISION_BF16_MIXED);
    po.tp = 1;
    mp_rank_breakdown h1 = plan_distinct(t, &po, 0, &ri);
    po.tp = 2;
    mp_rank_breakdown h2 = plan_distinct(t, &po, 0, &ri);
    CU_ASSERT_EQUAL(ri.tp_attention, 1);
    CU_ASSERT_EQUAL(ri.tp_mlp, 1);
    CU_ASSERT_EQUAL(h1.param_bytes, 2088);
    CU_ASSERT_EQUAL(h2.param_bytes, 1064);
    CU_ASSERT_EQUAL(h2.optimizer_bytes, 2048);
    CU_ASSERT(h2.peak_bytes < h1.peak_bytes);
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* tp 2 with the vocabulary-parallel layers and sp: the parameters each
 * rank holds, byte by byte, and the collectives. */
static void test_tp_vocab_sp(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mp_test_tiny_gpt_train(ctx); /* tests/support.c */
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    mp_rank_info ri;
    mp_rank_breakdown one = plan_distinct(t, &po, 0, &ri);
    /* tp 1: wte 192, the LayerNorms 4 x 32, fc and proj 2 x 512,
     * head.w 192 */
    CU_ASSERT_EQUAL(one.param_bytes, 192 + 128 + 1024 + 192);
    po.tp = 2;
    mp_rank_breakdown b = plan_distinct(t, &po, 0, &ri);
    show("tiny gpt, tp 2", &b);
    /* the MLP block split; wte's rows (3 of 6 tokens' vectors) and
     * head.w's columns (3 of the 6 logits) split over the vocabulary;
     * the LayerNorms whole: 96 + 128 + 2 x 256 + 96 */
    CU_ASSERT_EQUAL(ri.tp_mlp, 1);
    CU_ASSERT_EQUAL(ri.tp_vocab, 2);
    CU_ASSERT_EQUAL(ri.sp_nodes, 0);
    CU_ASSERT_EQUAL(b.param_bytes, 96 + 128 + 512 + 96);
    /* all-reduces: wte's output (each rank's rows), proj's output, the
     * gradients of a (fc's partial) and z (head's partial) */
    CU_ASSERT_EQUAL(ri.n_collectives, 4);
    po.sp = 1;
    mp_rank_breakdown s = plan_distinct(t, &po, 0, &ri);
    show("tiny gpt, tp 2, sp", &s);
    /* sp: ln1, res and lnf run on 2 of the 4 tokens. Forward: wte's
     * output and proj's reduce-scattered into them, a and z gathered for
     * fc and head; backward: a and z gathered again, the parts of d(a)
     * and d(z) from fc and head reduce-scattered, d(e) and d(o)
     * gathered for wte's and proj's backward, the 4 LayerNorm weight
     * gradients all-reduced: 14 */
    CU_ASSERT_EQUAL(ri.sp_nodes, 3);
    CU_ASSERT_EQUAL(ri.n_collectives, 14);
    CU_ASSERT_EQUAL(s.param_bytes, b.param_bytes);
    CU_ASSERT(s.peak_bytes <= b.peak_bytes);
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* Each collective says which group it runs in (attribute group): the
 * tensor-parallel ones "tp", the data-parallel ones "dp", Send and Recv
 * none; the pipeline's and ZeRO's copies keep it, and a rank graph saved
 * as JSON and read back has it */
static void test_coll_groups(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mp_test_tiny_gpt_train(ctx); /* tests/support.c */
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.tp = 2;
    po.sp = 1;
    po.dp = 2;
    po.zero = 2;
    for (int pp = 1; pp <= 2; pp++) {
        po.pp = (uint32_t)pp;
        po.microbatches = (uint32_t)pp;
        po.cuts = pp > 1 ? "res" : NULL;
        mp_parallel *par = NULL;
        CU_ASSERT_FATAL(mp_parallel_create(t, &po, &par) == MP_OK);
        for (uint32_t d = 0; d < mp_parallel_num_distinct(par); d++) {
            mp_rank_info ri;
            CU_ASSERT_FATAL(mp_parallel_rank_info(par, d, &ri) == MP_OK);
            char *js = NULL;
            CU_ASSERT_FATAL(mp_graph_to_json_string(ri.graph, &js) == MP_OK);
            mp_graph *back = NULL;
            CU_ASSERT_FATAL(mp_graph_load_json_string(ctx, js, "rank",
                                                      &back) == MP_OK);
            free(js);
            const mp_graph *gs[2] = {ri.graph, back};
            for (int k = 0; k < 2; k++) {
                uint32_t n_tp = 0, n_dp = 0, n_p2p = 0;
                for (uint32_t i = 0; i < mp_graph_num_nodes(gs[k]); i++) {
                    const mp__node *n = &gs[k]->nodes[i];
                    if (!(n->def->flags & MP__OPF_COLLECTIVE))
                        continue;
                    const char *grp = NULL;
                    mp_status st = mp_graph_get_attr_string(gs[k], i, "group",
                                                            &grp);
                    if (!strcmp(n->op, "Send") || !strcmp(n->op, "Recv")) {
                        CU_ASSERT_EQUAL(st, MP_ERR_NOT_FOUND);
                        n_p2p++;
                        continue;
                    }
                    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
                    if (!strcmp(grp, "tp")) {
                        n_tp++;
                        /* planner/tp.c's names */
                        CU_ASSERT(strstr(n->name, "tp_") ||
                                  strstr(n->name, "sp_"));
                    } else {
                        CU_ASSERT_STRING_EQUAL(grp, "dp");
                        n_dp++;
                    }
                }
                CU_ASSERT(n_tp > 0);
                CU_ASSERT(n_dp > 0);
                CU_ASSERT_EQUAL(n_tp + n_dp + n_p2p, ri.n_collectives);
                CU_ASSERT_EQUAL(n_p2p > 0, pp > 1);
            }
            mp_graph_destroy(back);
        }
        mp_parallel_destroy(par);
    }
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* Stages balanced by memory or by compute: A = x[64,64] @ w0 (524288
 * FLOPs, 81920 bytes of weight: 4 x its parameters' plus its output),
 * then B, C, D, each a Mul by a [64,64] weight (4096 FLOPs, 81920
 * bytes), and the loss (4 bytes, no FLOPs). By memory the first stage
 * ends where the running weight reaches half of 327684: after C (A, B
 * weigh 163840); by compute after A. Stage 0 holds each micro-batch's
 * copy of its nodes ("A#mb1"). */
static void test_pp_balance(void)
{
    static const char *json =
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": ["
        "{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"input\"},"
        "{\"name\": \"w0\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},"
        "{\"name\": \"s1\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},"
        "{\"name\": \"s2\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},"
        "{\"name\": \"s3\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"weight\"},"
        "{\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [64, 64]},"
        "{\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [64, 64]},"
        "{\"name\": \"c\", \"dtype\": \"float32\", \"shape\": [64, 64]},"
        "{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [64, 64], \"kind\": \"output\"}],"
        " \"nodes\": ["
        "{\"name\": \"A\", \"op\": \"MatMul\", \"inputs\": [\"x\", \"w0\"], \"outputs\": [\"a\"]},"
        "{\"name\": \"B\", \"op\": \"Mul\", \"inputs\": [\"a\", \"s1\"], \"outputs\": [\"b\"]},"
        "{\"name\": \"C\", \"op\": \"Mul\", \"inputs\": [\"b\", \"s2\"], \"outputs\": [\"c\"]},"
        "{\"name\": \"D\", \"op\": \"Mul\", \"inputs\": [\"c\", \"s3\"], \"outputs\": [\"y\"]}],"
        " \"outputs\": [\"y\"]}";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL;
    CU_ASSERT_FATAL(mp_graph_load_json_string(ctx, json, "chain", &f) ==
                    MP_OK);
    mp_graph *t = mp_test_train_fused(f);
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.pp = 2;
    po.microbatches = 2;
    for (int compute = 0; compute < 2; compute++) {
        po.balance_compute = compute;
        mp_parallel *par = NULL;
        CU_ASSERT_FATAL(mp_parallel_create(t, &po, &par) == MP_OK);
        mp_rank_info ri;
        CU_ASSERT_FATAL(mp_parallel_rank_info(par, 0, &ri) == MP_OK);
        uint32_t id;
        CU_ASSERT_EQUAL(mp_graph_find_node(ri.graph, "A#mb1", &id), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_find_node(ri.graph, "B#mb1", &id),
                        compute ? MP_ERR_NOT_FOUND : MP_OK);
        CU_ASSERT_EQUAL(mp_graph_find_node(ri.graph, "C#mb1", &id),
                        compute ? MP_ERR_NOT_FOUND : MP_OK);
        CU_ASSERT_EQUAL(mp_graph_find_node(ri.graph, "D#mb1", &id),
                        MP_ERR_NOT_FOUND);
        mp_parallel_destroy(par);
    }
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

static void test_interleaved(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx);
    mp_parallel_options po = pp2(MP_PP_INTERLEAVED,
                                 "layers.0/Relu,layers.1/Relu,layers.2/Relu");
    po.virtual_stages = 2;
    mp_rank_info ri[2];
    mp_rank_breakdown b[2];
    for (uint32_t r = 0; r < 2; r++) {
        b[r] = plan_distinct(t, &po, r, &ri[r]);
        show(r ? "interleaved rank 1" : "interleaved rank 0", &b[r]);
    }
    /* Megatron's warm-up: rank r runs (2 - r - 1) x 2 + (2 - 1) x 2
     * forwards, then one more before its first backward, forward k in
     * chunk (k mod 4) / 2. Rank 0: 5 forwards, chunk 0 (layers.0) 3
     * micro-batches, chunk 1 (layers.2) 2: 2.5 stages' worth, Megatron's
     * penalty 1 + (p - 1) / (p V) = 1.25 times p = 2. Rank 1: 3 forwards,
     * chunk 0 (layers.1) 2, chunk 1 (layers.3, the loss) 1. */
    CU_ASSERT_EQUAL(ri[0].in_flight, 5);
    CU_ASSERT_EQUAL(ri[1].in_flight, 3);
    /* rank 0: Send layers.0.relu and Recv its gradient for 3
     * micro-batches (chunk 0); Recv layers.1.relu, Send its gradient,
     * Send layers.2.relu, Recv its gradient for 2 (chunk 1): 6 + 8;
     * rank 1: Recv layers.0.relu, Send layers.1.relu and the converse
     * gradients for 2 (chunk 0), Recv layers.2.relu and Send its
     * gradient for 1 (chunk 1): 8 + 2 */
    CU_ASSERT_EQUAL(ri[0].n_collectives, 14);
    CU_ASSERT_EQUAL(ri[1].n_collectives, 10);
    /* rank 0 peaks at layers.2's weight gradient of micro-batch 1: its
     * weights layers.0.w, layers.2.w (512) and their m and v (1024); that
     * gradient (256); x and layers.0.relu of micro-batches 1-3 (saved for
     * layers.0's backward: 6 x 128), layers.2.relu of micro-batch 2
     * (saved), d(layers.2.mm) and d(layers.1.relu) to send (3 x 128);
     * received layers.1.relu of micro-batches 1, 2 (saved for layers.2's
     * weight gradient: 2 x 128) */
    expect_bd(&b[0], 512, 256, 1024, 9 * 128, 2 * 128);
    CU_ASSERT_EQUAL(b[0].peak_bytes, 512 + 1024 + 256 + 1152 + 256);
    /* rank 1 peaks at layers.3's weight gradient of micro-batch 1:
     * layers.1.w, layers.3.w and states (1536), the gradient (256);
     * layers.1.relu of micro-batches 1, 2 (saved), d(layers.3.mm),
     * d(layers.2.relu) to send (4 x 128) and the loss (4); received
     * layers.0.relu of micro-batches 1, 2 and layers.2.relu of 1 (3 x
     * 128). 1F1B's 2-stage split of the same graph peaks at 2944 and
     * 2436 (test_pipeline_1f1b). */
    expect_bd(&b[1], 512, 256, 1024, 4 * 128 + 4, 3 * 128);
    CU_ASSERT_EQUAL(b[1].peak_bytes, 512 + 1024 + 256 + 516 + 384);
    /* cuts: pp x V - 1 of them */
    po.cuts = "layers.1/Relu";
    mp_parallel *par = NULL;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "give 3"));
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

static void test_bad_options(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx), *f = mlp4(ctx);
    mp_parallel *par = NULL;
    mp_parallel_options po = dp2(0);
    po.dp = 0;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--dp"));
    po = dp2(4);
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--zero"));
    po = dp2(0);
    po.prefetch = 3;
    CU_ASSERT_EQUAL(mp_parallel_create(t, &po, &par), MP_ERR_INVALID_ARG);
    po = dp2(0);
    CU_ASSERT_EQUAL(mp_parallel_create(f, &po, &par), MP_ERR_GRAPH);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "--train"));
    CU_ASSERT_PTR_NULL(par);
    CU_ASSERT_EQUAL(mp_parallel_create(NULL, &po, &par), MP_ERR_INVALID_ARG);
    mp_parallel_destroy(NULL);
    CU_ASSERT_EQUAL(mp_parallel_num_distinct(NULL), 0);
    mp_pp_schedule s;
    CU_ASSERT_EQUAL(mp_pp_schedule_parse("1f1b", &s), MP_OK);
    CU_ASSERT_EQUAL(s, MP_PP_1F1B);
    CU_ASSERT_STRING_EQUAL(mp_pp_schedule_name(MP_PP_GPIPE), "gpipe");
    CU_ASSERT_EQUAL(mp_pp_schedule_parse("zb", &s), MP_ERR_NOT_FOUND);
    mp_graph_destroy(f);
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

static CU_TestInfo tests[] = {
    {"4-layer MLP, DDP over 2 ranks", test_ddp},
    {"4-layer MLP, DDP, one bucket per gradient", test_ddp_buckets},
    {"4-layer MLP, ZeRO-1 over 2 ranks", test_zero1},
    {"4-layer MLP, ZeRO-2 over 2 ranks", test_zero2},
    {"4-layer MLP, ZeRO-3 over 2 ranks: prefetch, units, offload",
     test_zero3},
    {"one data-parallel rank: no collective", test_one_rank},
    {"1F1B, 4 micro-batches over 2 stages; GPipe", test_pipeline_1f1b},
    {"tp 2 on a transformer block", test_tp},
    {"tp 2: vocabulary-parallel layers, sp", test_tp_vocab_sp},
    {"collectives name their group (tp, dp), kept through pp, ZeRO, JSON",
     test_coll_groups},
    {"pp stages balanced by memory or compute", test_pp_balance},
    {"interleaved 1F1B, 2 stages x 2 chunks, 4 micro-batches",
     test_interleaved},
    {"bad options name the option", test_bad_options},
    CU_TEST_INFO_NULL,
};

void mp_register_parallel(void) { mp_test_add_suite("parallel", tests); }
