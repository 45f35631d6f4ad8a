/* Per-rank graphs of multi-GPU training (memplan/parallel.h): a 4-layer
 * MLP under DDP, ZeRO-1, -2 and -3 over 2 ranks, each byte of the peak
 * accounted for by hand, every rank plan verified. */
#include "ir.h"
#include "support.h"

#include <stdio.h>
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
    mp_graph *f = mlp4(ctx), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    mp_graph_destroy(f);
    return t;
}

/* Plans distinct rank 0 (alignment 1, no in-place: sizes as they are),
 * verifies it and returns its breakdown. */
static mp_rank_breakdown rank_bd(const mp_parallel_options *po,
                                 mp_rank_info *ri_out)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx);
    mp_parallel *par = NULL;
    mp_rank_breakdown bd;
    memset(&bd, 0, sizeof bd);
    CU_ASSERT_FATAL(mp_parallel_create(t, po, &par) == MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_num_ranks(par), po->dp * po->pp);
    mp_rank_info ri;
    CU_ASSERT_FATAL(mp_parallel_rank_info(par, 0, &ri) == MP_OK);
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    opt.alignment = 1;
    opt.inplace = 0;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(ri.graph, &opt, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(ri.graph, p), MP_OK);
    CU_ASSERT_EQUAL(mp_parallel_breakdown(par, 0, p, &bd), MP_OK);
    CU_ASSERT_EQUAL(bd.param_bytes + bd.grad_bytes + bd.optimizer_bytes +
                        bd.activation_bytes + bd.comm_bytes + bd.free_bytes,
                    bd.peak_bytes);
    if (ri_out)
        *ri_out = ri;
    mp_plan_destroy(p);
    mp_parallel_destroy(par);
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

/* 1F1B, 4 micro-batches over 2 stages cut after layers.1/Relu: stage
 * 0 (layers 0, 1) holds p - s = 2 micro-batches, stage 1 (layers 2, 3
 * and the loss) one. Each stage: 2 weights (512) and their m and v
 * (1024). */
static void test_pipeline_1f1b(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mlp4_train(ctx);
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.pp = 2;
    po.microbatches = 4;
    po.cuts = "layers.1/Relu";
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
    {"bad options name the option", test_bad_options},
    CU_TEST_INFO_NULL,
};

void mp_register_parallel(void) { mp_test_add_suite("parallel", tests); }
