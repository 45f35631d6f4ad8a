/* Host half of the validation executor (validate/host.c): lowering a plan
 * into launches, tensor placement per step, workspace, the reference
 * allocation model. Needs no GPU. */
#include "support.h"
#include "conv_direct.h"
#include "cost.h"
#include "ir.h"
#include "sched.h"
#include "validate.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* x[1,3,8,8] -> Conv(w[4,3,3,3], pads 1) -> c -> Relu -> r -> Foo -> y */
static mp_graph *small_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[4] = {1, 3, 8, 8}, dw[4] = {4, 3, 3, 3}, dc[4] = {1, 4, 8, 8};
    mp_tensor_desc t[5] = {
        {"x", MP_DTYPE_FLOAT32, 4, dx, 0, MP_KIND_INPUT},
        {"w", MP_DTYPE_FLOAT32, 4, dw, 0, MP_KIND_WEIGHT},
        {"c", MP_DTYPE_FLOAT32, 4, dc, 0, MP_KIND_ACTIVATION},
        {"r", MP_DTYPE_FLOAT32, 4, dc, 0, MP_KIND_ACTIVATION},
        {"y", MP_DTYPE_FLOAT32, 4, dc, 0, MP_KIND_ACTIVATION},
    };
    uint32_t id[5];
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &t[i], &id[i]), MP_OK);
    uint32_t cin[2] = {id[0], id[1]}, cout[1] = {id[2]};
    uint32_t rin[1] = {id[2]}, rout[1] = {id[3]};
    uint32_t fin[1] = {id[3]}, fout[1] = {id[4]};
    mp_node_desc n[3] = {
        {"conv", "Conv", NULL, cin, 2, cout, 1, MP_PHASE_FORWARD},
        {"relu", "Relu", NULL, rin, 1, rout, 1, MP_PHASE_FORWARD},
        {"foo", "NoSuchOp", "x.test", fin, 1, fout, 1, MP_PHASE_FORWARD},
    };
    uint32_t nid[3];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &n[i], &nid[i]), MP_OK);
    int64_t pads[4] = {1, 1, 1, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nid[0], "pads", pads, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[4]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

static void test_lowering(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = small_net(ctx);
    mp_plan *plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    /* the reference model below frees by use count, without in-place
     * reuse: compare it with a plan without in-place reuse */
    po.inplace = 0;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_real, 2);
    CU_ASSERT_EQUAL(p->n_synthetic, 1);
    CU_ASSERT_PTR_NOT_NULL(p->nodes[2].why);
    /* conv: one cuDNN launch over the batch, the workspace the cost
     * model gives the forward pass */
    CU_ASSERT_EQUAL(p->nodes[0].count, 1);
    const mpv_launch *c = &p->launches[p->nodes[0].first];
    CU_ASSERT_EQUAL(c->kind, MPV_L_CONV_DNN);
    CU_ASSERT_EQUAL(c->p.dnn.pass, MPV_CONV_FWD);
    CU_ASSERT_EQUAL(c->p.dnn.cudnn, 1);
    CU_ASSERT_EQUAL(c->p.dnn.pt, 1);
    CU_ASSERT_EQUAL(c->p.dnn.oh, 8);
    mp__conv_shape cs = {c->p.dnn.n,  c->p.dnn.c,  c->p.dnn.h,
                         c->p.dnn.w,  c->p.dnn.m,  c->p.dnn.oh,
                         c->p.dnn.ow, c->p.dnn.kh, c->p.dnn.kw,
                         c->p.dnn.g};
    CU_ASSERT(c->workspace > 2u << 20);
    CU_ASSERT_EQUAL(c->workspace, mp__conv_workspace(&cs, MP__CONV_FWD));
    CU_ASSERT_EQUAL(p->workspace_bytes, c->workspace);
    CU_ASSERT_EQUAL(p->launches[p->nodes[1].first].kind, MPV_L_UNARY);
    CU_ASSERT_EQUAL(p->launches[p->nodes[2].first].kind, MPV_L_SYNTH);
    /* every COMPUTE step's arena refs are the offsets of the live blocks */
    const mp_block *b = mp_plan_blocks(plan);
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        if (ps->kind != MP_STEP_COMPUTE)
            continue;
        for (uint32_t k = 0; k < ps->n_refs; k++) {
            const mpv_ref *rf = &p->refs[ps->refs + k];
            if (rf->space != MPV_SPACE_ARENA)
                continue;
            int found = 0;
            for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
                if (b[i].tensor == rf->tensor && b[i].first <= s &&
                    s < b[i].end)
                    found = b[i].offset == rf->offset;
            CU_ASSERT_TRUE(found);
        }
    }
    /* the weight lives in the weights buffer */
    uint32_t w;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "w", &w), MP_OK);
    CU_ASSERT_NOT_EQUAL(p->woff[w], UINT64_MAX);
    CU_ASSERT_TRUE(p->weights_bytes >= 4u * 27u * 4u);
    /* the reference model's live max equals the planner's lower bound */
    uint64_t live[64];
    CU_ASSERT_FATAL(p->n_steps <= 64);
    CU_ASSERT_EQUAL(mpv_reference_live(p, live),
                    mp_plan_figures(plan)->lower_bound_bytes);
    /* weights: deterministic for a seed, different for another */
    unsigned char *a = malloc(p->weights_bytes), *a2 = malloc(p->weights_bytes);
    CU_ASSERT_FATAL(a && a2);
    mpv_weights_init(p, a, 7);
    mpv_weights_init(p, a2, 7);
    CU_ASSERT_EQUAL(memcmp(a, a2, p->weights_bytes), 0);
    mpv_weights_init(p, a2, 8);
    CU_ASSERT_NOT_EQUAL(memcmp(a, a2, p->weights_bytes), 0);
    free(a);
    free(a2);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* conv; offload c; relu would need c: prefetch it to a new place. Fills
 * the 6 steps and 5 blocks of that schedule over small_net and the ids of
 * x, c, r, y. */
static void offload_schedule(mp_graph *g, mp_step *st, mp_block *bl,
                             uint32_t id[4])
{
    const char *names[4] = {"x", "c", "r", "y"};
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(mp_graph_find_tensor(g, names[i], &id[i]), MP_OK);
    uint32_t x = id[0], c = id[1], r = id[2], y = id[3];
    mp_step s[6] = {{MP_STEP_COMPUTE, 0}, {MP_STEP_FREE, x},
                    {MP_STEP_OFFLOAD, c}, {MP_STEP_PREFETCH, c},
                    {MP_STEP_COMPUTE, 1}, {MP_STEP_COMPUTE, 2}};
    mp_block b[5] = {{x, 0, 768, 0, 1}, {c, 1024, 1024, 0, 2},
                     {c, 4096, 1024, 3, 6}, {r, 0, 1024, 4, 6},
                     {y, 2048, 1024, 5, 6}};
    memcpy(st, s, sizeof s);
    memcpy(bl, b, sizeof b);
}

/* A hand-made schedule with OFFLOAD/PREFETCH: the refs follow the blocks. */
static void test_offload_refs(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = small_net(ctx);
    mp_step st[6];
    mp_block bl[5];
    uint32_t id[4];
    offload_schedule(g, st, bl, id);
    uint32_t x = id[0], c = id[1], r = id[2], y = id[3];
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_build(g, st, 6, bl, 5, 256, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_offload, 1);
    CU_ASSERT_EQUAL(p->n_prefetch, 1);
    CU_ASSERT_FALSE(p->compute_only);
    CU_ASSERT_EQUAL(p->refs[p->steps[2].refs].offset, 1024); /* offload */
    CU_ASSERT_EQUAL(p->refs[p->steps[3].refs].offset, 4096); /* prefetch */
    /* relu reads c from its prefetched block */
    CU_ASSERT_EQUAL(p->refs[p->steps[4].refs].offset, 4096);
    CU_ASSERT_EQUAL(p->arena_bytes, 5120);
    mpv_program_destroy(p);
    /* a step that reads a tensor with no block is rejected */
    mp_block bad[4] = {{x, 0, 768, 0, 1}, {c, 1024, 1024, 0, 2},
                       {r, 0, 1024, 4, 6}, {y, 2048, 1024, 5, 6}};
    CU_ASSERT_EQUAL(mpv_program_build(g, st, 6, bad, 4, 256, NULL, &p),
                    MP_ERR_VERIFY);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}


/* predicted time: the cost model per step, copies over the host link */
static void test_predict(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = small_net(ctx);
    mp_step st[6];
    mp_block bl[5];
    uint32_t id[4];
    offload_schedule(g, st, bl, id);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_build(g, st, 6, bl, 5, 256, NULL, &p), MP_OK);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(ctx, "h200", &d), MP_OK);
    double ss[6];
    double sum = mpv_predict_seconds(p, &d, ss);
    mp_op_cost conv, relu, foo;
    CU_ASSERT_EQUAL(mp_node_estimate(g, 0, &d, &conv), MP_OK);
    CU_ASSERT_EQUAL(mp_node_estimate(g, 1, &d, &relu), MP_OK);
    CU_ASSERT_EQUAL(mp_node_estimate(g, 2, &d, &foo), MP_OK);
    CU_ASSERT_TRUE(conv.seconds > 0 && relu.seconds > 0);
    CU_ASSERT_DOUBLE_EQUAL(ss[0], conv.seconds, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(ss[1], 0.0, 0.0);
    /* c is 4x8x8 floats: 1024 bytes each way */
    CU_ASSERT_DOUBLE_EQUAL(ss[2], mp_device_transfer_seconds(&d, 1024, 1),
                           1e-15);
    CU_ASSERT_DOUBLE_EQUAL(ss[3], mp_device_transfer_seconds(&d, 1024, 0),
                           1e-15);
    CU_ASSERT_TRUE(ss[2] > 0);
    CU_ASSERT_DOUBLE_EQUAL(ss[4], relu.seconds, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(ss[5], foo.seconds, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(sum, ss[0] + ss[2] + ss[3] + ss[4] + ss[5], 1e-15);
    /* a slower device predicts a longer step */
    mp_device t4;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(ctx, "t4", &t4), MP_OK);
    CU_ASSERT_TRUE(mpv_predict_seconds(p, &t4, NULL) > sum);
    mpv_program_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* predicted time of a training step: each node's step is the number the
 * planner's cost model gives it (mp_node_estimate, which the offload
 * solver reads, and mp_node_cost, the recompute solvers' clock) */
/* The launches a collective of rank graph t lowered to (validate --rank):
 * checked against the local operation each stands for; returns how many
 * collectives with an output lowered. */
static int check_collectives(const mp_graph *t, const mpv_program *p)
{
    int seen = 0;
    for (uint32_t i = 0; i < mp_graph_num_nodes(t); i++) {
        const mp__node *n = &t->nodes[i];
        if (!(n->def->flags & MP__OPF_COLLECTIVE))
            continue;
        const mpv_node *pn = &p->nodes[i];
        const mp__tensor *y = &t->tensors[n->outputs[0]];
        int64_t ny = (int64_t)(y->bytes / 4);
        if (y->bytes == 0 || strcmp(n->op, "Send") == 0) {
            CU_ASSERT_EQUAL(pn->count, 0);
            continue;
        }
        seen++;
        CU_ASSERT_FALSE(pn->synthetic);
        CU_ASSERT_TRUE(pn->run);
        const mpv_launch *l = &p->launches[pn->first];
        if (strcmp(n->op, "Recv") == 0) {
            CU_ASSERT_EQUAL(pn->count, 1);
            CU_ASSERT_EQUAL(l[0].kind, MPV_L_FILL);
            continue;
        }
        if (strcmp(n->op, "AllGather") == 0) {
            /* each shard tiled over its full tensor */
            uint32_t k = 0;
            for (uint32_t j = 0; j < n->n_in; j++) {
                int64_t m = (int64_t)(t->tensors[n->inputs[j]].bytes / 4);
                int64_t full = (int64_t)(t->tensors[n->outputs[j]].bytes / 4);
                for (int64_t at = 0; at < full; at += m, k++) {
                    CU_ASSERT_EQUAL_FATAL(l[k].kind, MPV_L_COPY);
                    CU_ASSERT_EQUAL(l[k].in[0], (int)j);
                    CU_ASSERT_EQUAL(l[k].out, (int)j);
                    CU_ASSERT_EQUAL(l[k].p.copy.ooff, at);
                    CU_ASSERT_EQUAL(l[k].p.copy.n,
                                    m < full - at ? m : full - at);
                }
            }
            CU_ASSERT_EQUAL(pn->count, k);
            continue;
        }
        /* all-reduce into a bucket, reduce-scatter into a shard (over 2
         * ranks): the inputs (their first halves) one after the other */
        int rs = strcmp(n->op, "ReduceScatter") == 0;
        CU_ASSERT(rs || strcmp(n->op, "AllReduce") == 0);
        int64_t at = 0;
        uint32_t k = l[0].kind == MPV_L_FILL ? 1 : 0;
        for (uint32_t j = 0; j < n->n_in; j++, k++) {
            int64_t m = (int64_t)(t->tensors[n->inputs[j]].bytes / 4);
            if (rs)
                m = (m + 1) / 2;
            CU_ASSERT_EQUAL_FATAL(l[k].kind, MPV_L_COPY);
            CU_ASSERT_EQUAL(l[k].in[0], (int)j);
            CU_ASSERT_EQUAL(l[k].p.copy.ioff, 0);
            CU_ASSERT_EQUAL(l[k].p.copy.ooff, at);
            CU_ASSERT_EQUAL(l[k].p.copy.n, m);
            at += m;
        }
        CU_ASSERT_EQUAL(pn->count, k);
        /* the padding zeroed first, only where the copies leave some */
        CU_ASSERT_EQUAL(l[0].kind == MPV_L_FILL, at < ny);
        CU_ASSERT(at <= ny);
    }
    return seen;
}

/* x[4,5] -> MatMul(w0[5,7]) -> Relu -> MatMul(w1[7,3]) -> Relu (output):
 * two weights of odd sizes (35, 21 elements: shards of 18 and 11 over 2
 * ranks, the second rank's shorter), Adam fused; its training graph */
static mp_graph *odd_mlp_train(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 5}, dw0[] = {5, 7}, dh[] = {4, 7}, dw1[] = {7, 3},
            dy[] = {4, 3};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w0 = mp_test_tensor(g, "l0.w", MP_KIND_WEIGHT, 2, dw0);
    uint32_t m0 = mp_test_tensor(g, "l0.mm", MP_KIND_ACTIVATION, 2, dh);
    uint32_t r0 = mp_test_tensor(g, "l0.relu", MP_KIND_ACTIVATION, 2, dh);
    uint32_t w1 = mp_test_tensor(g, "l1.w", MP_KIND_WEIGHT, 2, dw1);
    uint32_t m1 = mp_test_tensor(g, "l1.mm", MP_KIND_ACTIVATION, 2, dy);
    uint32_t r1 = mp_test_tensor(g, "l1.relu", MP_KIND_ACTIVATION, 2, dy);
    uint32_t a[] = {x, w0}, b[] = {r0, w1};
    mp_test_node(g, "l0/MatMul", "MatMul", a, 2, &m0, 1);
    mp_test_node(g, "l0/Relu", "Relu", &m0, 1, &r0, 1);
    mp_test_node(g, "l1/MatMul", "MatMul", b, 2, &m1, 1);
    mp_test_node(g, "l1/Relu", "Relu", &m1, 1, &r1, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, r1), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    mp_graph *t = NULL;
    CU_ASSERT_FATAL(mp_train_graph(g, &o, &t, NULL) == MP_OK);
    mp_graph_destroy(g);
    return t;
}

/* the only launch of kind k among node i's, or NULL */
static const mpv_launch *launch_of(const mpv_program *p, uint32_t i, int k,
                                   uint32_t *count)
{
    const mpv_launch *l = NULL;
    *count = 0;
    for (uint32_t j = 0; j < p->nodes[i].count; j++)
        if (p->launches[p->nodes[i].first + j].kind == k) {
            l = l ? l : &p->launches[p->nodes[i].first + j];
            (*count)++;
        }
    return l;
}

/* validate --ranks: each collective of a data-parallel rank graph lowers
 * to NCCL calls at the slices' offsets (ZeRO 0-3, both data-parallel
 * indexes), and each optimizer step to a real step on its slice (the
 * dp_* attributes of planner/parallel.c): the steps' gradient ranges
 * tile the reduced buffer, each rank's weight slices tile the weight */
static void test_collectives_nccl(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = odd_mlp_train(ctx);
    for (int zero = 0; zero <= 3; zero++) {
        mp_parallel_options po;
        mp_parallel_options_init(&po);
        po.dp = 2;
        po.zero = zero;
        mp_parallel *par = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_create(t, &po, &par), MP_OK);
        mp_rank_info ri;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, 0, &ri), MP_OK);
        const mp_graph *g = ri.graph;
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(ri.graph, NULL, &plan), MP_OK);
        int64_t wcover[2] = {0, 0}; /* weight elements updated, per rank */
        for (uint32_t d = 0; d < 2; d++) {
            mpv_rank_lowering rl = {1, d, 2, 2, 1, 0, d, 1, 0};
            mpv_program *p = NULL;
            CU_ASSERT_EQUAL_FATAL(
                mpv_program_from_plan_rank(g, plan, &rl, &p), MP_OK);
            CU_ASSERT_EQUAL(p->n_synthetic, 0);
            int64_t gcover = 0, gbuf = 0;
            for (uint32_t i = 0; i < mp_graph_num_nodes(g); i++) {
                const mp__node *n = &g->nodes[i];
                uint32_t cnt;
                if (n->phase == MP_PHASE_OPTIMIZER &&
                    !(n->def->flags & MP__OPF_COLLECTIVE)) {
                    /* the step on this rank's slice */
                    int64_t ne = 0, sh = -1, go = -1, dps = 0;
                    mp_graph_get_attr_int(g, i, "dp_elems", &ne);
                    mp_graph_get_attr_int(g, i, "dp_shard", &sh);
                    mp_graph_get_attr_int(g, i, "dp_grad_offset", &go);
                    mp_graph_get_attr_int(g, i, "dp_size", &dps);
                    CU_ASSERT_EQUAL(dps, 2);
                    CU_ASSERT(ne == 35 || ne == 21);
                    CU_ASSERT_EQUAL(sh, zero ? (ne + 1) / 2 : 0);
                    const mpv_launch *l =
                        launch_of(p, i, MPV_L_OPT_STEP, &cnt);
                    CU_ASSERT_EQUAL_FATAL(cnt, 1);
                    int64_t lo = zero ? (int64_t)d * sh : 0;
                    int64_t len = zero ? (ne - lo < sh ? ne - lo : sh) : ne;
                    CU_ASSERT_EQUAL(l->p.opt.n, len);
                    CU_ASSERT_EQUAL(l->p.opt.woff, zero == 1 || zero == 2
                                                       ? lo : 0);
                    CU_ASSERT_EQUAL(l->p.opt.goff, zero == 1 ? go + lo : go);
                    CU_ASSERT_EQUAL(l->p.opt.soff, 0);
                    gcover += zero >= 2 ? sh : ne;
                    wcover[d] += len;
                    const mp__tensor *gt = &g->tensors[n->inputs[1]];
                    gbuf = (int64_t)(gt->bytes / 4);
                    CU_ASSERT(go + (zero >= 2 ? sh : ne) <= gbuf);
                    continue;
                }
                if (!(n->def->flags & MP__OPF_COLLECTIVE))
                    continue;
                const mpv_launch *l = launch_of(p, i, MPV_L_COLL, &cnt);
                CU_ASSERT_FATAL(l != NULL);
                if (!strcmp(n->op, "AllReduce")) {
                    /* the copies into the bucket, then the bucket */
                    const mpv_launch *last =
                        &p->launches[p->nodes[i].first + p->nodes[i].count - 1];
                    CU_ASSERT_EQUAL(cnt, 1);
                    CU_ASSERT_EQUAL(l, last);
                    CU_ASSERT_EQUAL(l->p.coll.op, MPV_COLL_ALL_REDUCE);
                    CU_ASSERT_EQUAL(l->out, 0);
                    CU_ASSERT_EQUAL(l->p.coll.count, 56);
                    CU_ASSERT_EQUAL(l->p.coll.group, MPV_COLL_DP);
                    CU_ASSERT_EQUAL(l->p.coll.dtype, MP_DTYPE_FLOAT32);
                } else if (!strcmp(n->op, "ReduceScatter")) {
                    /* each input's slice q to root q, at the input's place */
                    uint32_t k = 0;
                    int64_t at = 0;
                    for (uint32_t j = 0; j < n->n_in; j++) {
                        int64_t m = (int64_t)(g->tensors[n->inputs[j]].bytes /
                                              4), S = (m + 1) / 2;
                        for (int q = 0; q < 2; q++, k++) {
                            CU_ASSERT_EQUAL(l[k].kind, MPV_L_COLL);
                            CU_ASSERT_EQUAL(l[k].p.coll.op, MPV_COLL_REDUCE);
                            CU_ASSERT_EQUAL(l[k].in[0], (int)j);
                            CU_ASSERT_EQUAL(l[k].p.coll.peer, q);
                            CU_ASSERT_EQUAL(l[k].p.coll.soff, q * S);
                            CU_ASSERT_EQUAL(l[k].p.coll.doff, at);
                            CU_ASSERT_EQUAL(l[k].p.coll.count,
                                            q ? m - S : S);
                        }
                        at += S;
                    }
                    CU_ASSERT_EQUAL(cnt, k);
                } else if (!strcmp(n->op, "AllGather") &&
                           g->tensors[n->outputs[0]].bytes) {
                    /* ZeRO-3: shard q into slice q of the full weight */
                    uint32_t k = 0;
                    for (uint32_t j = 0; j < n->n_in; j++) {
                        int64_t S = (int64_t)(g->tensors[n->inputs[j]].bytes /
                                              4),
                                full = (int64_t)(g->tensors[n->outputs[j]]
                                                     .bytes / 4);
                        for (int q = 0; q < 2; q++, k++) {
                            CU_ASSERT_EQUAL(l[k].p.coll.op, MPV_COLL_BCAST);
                            CU_ASSERT_EQUAL(l[k].out, (int)j);
                            CU_ASSERT_EQUAL(l[k].p.coll.peer, q);
                            CU_ASSERT_EQUAL(l[k].p.coll.doff, q * S);
                            CU_ASSERT_EQUAL(l[k].p.coll.count,
                                            q ? full - S : S);
                        }
                    }
                    CU_ASSERT_EQUAL(cnt, k);
                } else if (!strcmp(n->op, "AllGather")) {
                    /* ZeRO-1, -2: slice q of each weight from rank q, in
                     * place */
                    CU_ASSERT_TRUE(p->nodes[i].run);
                    CU_ASSERT_EQUAL(cnt, 2 * n->n_in);
                    for (uint32_t k = 0; k < cnt; k++) {
                        int64_t m = (int64_t)(g->tensors[n->inputs[k / 2]]
                                                  .bytes / 4), S = (m + 1) / 2;
                        CU_ASSERT_EQUAL(l[k].p.coll.op, MPV_COLL_BCAST);
                        CU_ASSERT_EQUAL(l[k].out, -1);
                        CU_ASSERT_EQUAL(l[k].in[0], (int)(k / 2));
                        CU_ASSERT_EQUAL(l[k].in[1], (int)(k / 2));
                        CU_ASSERT_EQUAL(l[k].p.coll.soff, (k % 2) * S);
                        CU_ASSERT_EQUAL(l[k].p.coll.doff, (k % 2) * S);
                    }
                }
            }
            /* the steps read every element of the reduced buffer once */
            CU_ASSERT_EQUAL(gcover, zero >= 2 ? 18 + 11 : 56);
            CU_ASSERT_EQUAL(gcover, gbuf);
            mpv_program_destroy(p);
        }
        /* the two ranks' slices make up the weights */
        if (zero)
            CU_ASSERT_EQUAL(wcover[0] + wcover[1], 56);
        mp_plan_destroy(plan);
        mp_parallel_destroy(par);
    }
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* validate --ranks over 2 pipeline stages: the Send of each micro-batch's
 * activation is linked to the Recv of the same name on the other stage
 * (and the gradient back); with the receives in another order than the
 * sends, the replay reports the deadlock, naming each rank's node */
static void test_ranks_link(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = odd_mlp_train(ctx);
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.pp = 2;
    po.microbatches = 2;
    po.schedule = MP_PP_GPIPE;
    po.cuts = "l0/Relu";
    mp_parallel *par = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_parallel_create(t, &po, &par), MP_OK);
    mpv_program *progs[2] = {NULL, NULL};
    mp_plan *plans[2] = {NULL, NULL};
    for (uint32_t r = 0; r < 2; r++) {
        mp_rank_info ri;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, r, &ri), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(ri.graph, NULL, &plans[r]),
                              MP_OK);
        mpv_rank_lowering rl = {1, r, 2, 1, 2, r, 0, 1, 0};
        CU_ASSERT_EQUAL_FATAL(
            mpv_program_from_plan_rank(ri.graph, plans[r], &rl, &progs[r]),
            MP_OK);
    }
    uint32_t linked = 0;
    CU_ASSERT_EQUAL_FATAL(mpv_ranks_link(progs, 2, &linked), MP_OK);
    /* l0.relu#mb1, #mb2 forward, their gradients back */
    CU_ASSERT_EQUAL(linked, 4);
    uint32_t recv_steps[2], nr = 0;
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t i = 0; i < progs[r]->n_launches; i++) {
            const mpv_launch *l = &progs[r]->launches[i];
            if (l->kind != MPV_L_COLL)
                continue;
            CU_ASSERT(l->p.coll.op == MPV_COLL_SEND ||
                      l->p.coll.op == MPV_COLL_RECV);
            CU_ASSERT_EQUAL(l->p.coll.peer, (int)(1 - r));
            CU_ASSERT_EQUAL(l->p.coll.group, MPV_COLL_WORLD);
            CU_ASSERT_EQUAL(l->p.coll.count, 4 * 7 * 4); /* bytes */
        }
    /* stage 1's two forward receives swapped: it waits for micro-batch 2
     * while stage 0 sends micro-batch 1 */
    for (uint32_t s = 0; s < progs[1]->n_steps && nr < 2; s++) {
        const mpv_step *st = &progs[1]->steps[s];
        const mp__node *n = &progs[1]->graph->nodes[st->index];
        if (st->kind == MP_STEP_COMPUTE && !strcmp(n->op, "Recv") &&
            n->phase == MP_PHASE_FORWARD)
            recv_steps[nr++] = s;
    }
    CU_ASSERT_EQUAL_FATAL(nr, 2);
    mpv_step tmp = progs[1]->steps[recv_steps[0]];
    progs[1]->steps[recv_steps[0]] = progs[1]->steps[recv_steps[1]];
    progs[1]->steps[recv_steps[1]] = tmp;
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t i = 0; i < progs[r]->n_launches; i++)
            progs[r]->launches[i].p.coll.peer =
                progs[r]->launches[i].kind == MPV_L_COLL
                    ? -1 : progs[r]->launches[i].p.coll.peer;
    CU_ASSERT_EQUAL(mpv_ranks_link(progs, 2, &linked), MP_ERR_VERIFY);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "would deadlock"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "rank 0 waits at 'send/l0.relu#mb1' "
                                       "(a send to rank 1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "rank 1 waits at 'recv/l0.relu#mb2' "
                                       "(a receive from rank 0)"));
    /* a program not lowered for NCCL is refused */
    mpv_program *local = NULL;
    mp_rank_info ri0;
    CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, 0, &ri0), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(ri0.graph, plans[0], &local),
                          MP_OK);
    mpv_program *mixed[2] = {local, progs[1]};
    CU_ASSERT_EQUAL(mpv_ranks_link(mixed, 2, NULL), MP_ERR_INVALID_ARG);
    mpv_program_destroy(local);
    for (uint32_t r = 0; r < 2; r++) {
        mpv_program_destroy(progs[r]);
        mp_plan_destroy(plans[r]);
    }
    mp_parallel_destroy(par);
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}


/* validate --ranks with --tp 2 (and --sp): each tensor-parallel
 * collective (attribute group "tp") is one NCCL call on the
 * tensor-parallel communicator: an AllReduce the in-place sum of its
 * output after the local copy, a ReduceScatter ncclReduceScatter of the
 * input into the output (count: each rank's part, 1/2 of the input), an
 * AllGather ncclAllGather (count: the input, 1/2 of the output); the two
 * ranks' programs link (nothing to link) and replay deadlock-free; a
 * rank whose index does not make its number is refused */
static void test_collectives_nccl_tp(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mp_test_tiny_gpt_train(ctx);
    for (int sp = 0; sp <= 1; sp++) {
        mp_parallel_options po;
        mp_parallel_options_init(&po);
        po.tp = 2;
        po.sp = sp;
        mp_parallel *par = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_create(t, &po, &par), MP_OK);
        CU_ASSERT_EQUAL(mp_parallel_num_ranks(par), 2);
        mp_rank_info ri;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, 0, &ri), MP_OK);
        const mp_graph *g = ri.graph;
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(ri.graph, NULL, &plan), MP_OK);
        mpv_program *progs[2] = {NULL, NULL};
        for (uint32_t ti = 0; ti < 2; ti++) {
            mpv_rank_lowering rl = {1, ti, 2, 1, 1, 0, 0, 2, ti};
            CU_ASSERT_EQUAL_FATAL(
                mpv_program_from_plan_rank(g, plan, &rl, &progs[ti]), MP_OK);
            const mpv_program *p = progs[ti];
            CU_ASSERT_EQUAL(p->n_synthetic, 0);
            CU_ASSERT_EQUAL(p->rank.tp, 2);
            CU_ASSERT_EQUAL(p->rank.tp_index, ti);
            uint32_t n_ar = 0, n_rs = 0, n_ag = 0;
            for (uint32_t i = 0; i < mp_graph_num_nodes(g); i++) {
                const mp__node *n = &g->nodes[i];
                if (!(n->def->flags & MP__OPF_COLLECTIVE))
                    continue;
                const char *grp = NULL;
                CU_ASSERT_EQUAL(mp_graph_get_attr_string(g, i, "group", &grp),
                                MP_OK);
                CU_ASSERT_STRING_EQUAL(grp, "tp");
                uint32_t cnt;
                const mpv_launch *l = launch_of(p, i, MPV_L_COLL, &cnt);
                CU_ASSERT_FATAL(l != NULL);
                CU_ASSERT_EQUAL(cnt, 1);
                CU_ASSERT_EQUAL(l->p.coll.group, MPV_COLL_TP);
                CU_ASSERT_EQUAL(l->p.coll.dtype, MP_DTYPE_FLOAT32);
                CU_ASSERT_EQUAL(l->p.coll.esize, 4);
                CU_ASSERT_EQUAL(l->p.coll.peer, -1);
                CU_ASSERT_EQUAL(l->p.coll.soff, 0);
                CU_ASSERT_EQUAL(l->p.coll.doff, 0);
                CU_ASSERT_EQUAL(n->n_in, 1);
                CU_ASSERT_EQUAL(n->n_out, 1);
                int64_t in_b = (int64_t)g->tensors[n->inputs[0]].bytes,
                        out_b = (int64_t)g->tensors[n->outputs[0]].bytes;
                if (!strcmp(n->op, "AllReduce")) {
                    /* the copy, then the sum in place, last */
                    n_ar++;
                    const mpv_launch *last =
                        &p->launches[p->nodes[i].first + p->nodes[i].count -
                                     1];
                    CU_ASSERT_EQUAL(l, last);
                    CU_ASSERT(p->nodes[i].count >= 2);
                    CU_ASSERT_EQUAL(p->launches[p->nodes[i].first].kind,
                                    MPV_L_COPY);
                    CU_ASSERT_EQUAL(l->p.coll.op, MPV_COLL_ALL_REDUCE);
                    CU_ASSERT_EQUAL(l->out, 0);
                    CU_ASSERT_EQUAL(l->p.coll.count * 4, out_b);
                    CU_ASSERT_EQUAL(in_b, out_b);
                } else if (!strcmp(n->op, "ReduceScatter")) {
                    n_rs++;
                    CU_ASSERT_EQUAL(p->nodes[i].count, 1);
                    CU_ASSERT_EQUAL(l->p.coll.op, MPV_COLL_REDUCE_SCATTER);
                    CU_ASSERT_EQUAL(l->in[0], 0);
                    CU_ASSERT_EQUAL(l->out, 0);
                    CU_ASSERT_EQUAL(l->p.coll.count * 4, out_b);
                    CU_ASSERT_EQUAL(l->p.coll.count * 4 * 2, in_b);
                } else if (!strcmp(n->op, "AllGather")) {
                    n_ag++;
                    CU_ASSERT_EQUAL(p->nodes[i].count, 1);
                    CU_ASSERT_EQUAL(l->p.coll.op, MPV_COLL_ALL_GATHER);
                    CU_ASSERT_EQUAL(l->in[0], 0);
                    CU_ASSERT_EQUAL(l->out, 0);
                    CU_ASSERT_EQUAL(l->p.coll.count * 4, in_b);
                    CU_ASSERT_EQUAL(l->p.coll.count * 4 * 2, out_b);
                } else {
                    CU_FAIL("a collective other than AllReduce, "
                            "ReduceScatter, AllGather");
                }
            }
            CU_ASSERT_EQUAL(n_ar + n_rs + n_ag, ri.n_collectives);
            CU_ASSERT_EQUAL(p->n_coll, ri.n_collectives);
            /* tp: wte's and proj's outputs, the gradients of a and z
             * (test_parallel's test_tp_vocab_sp); sp: the same 14 */
            if (!sp) {
                CU_ASSERT_EQUAL(n_ar, 4);
                CU_ASSERT_EQUAL(n_rs + n_ag, 0);
            } else {
                CU_ASSERT_EQUAL(ri.n_collectives, 14);
                CU_ASSERT(n_rs > 0 && n_ag > 0 && n_ar > 0);
            }
        }
        uint32_t linked = 7;
        CU_ASSERT_EQUAL(mpv_ranks_link(progs, 2, &linked), MP_OK);
        CU_ASSERT_EQUAL(linked, 0);
        for (uint32_t ti = 0; ti < 2; ti++)
            mpv_program_destroy(progs[ti]);
        /* rank 1 is tp index 1, not 0 */
        mpv_rank_lowering bad = {1, 1, 2, 1, 1, 0, 0, 2, 0};
        mpv_program *p = NULL;
        CU_ASSERT_EQUAL(mpv_program_from_plan_rank(g, plan, &bad, &p),
                        MP_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "tp 2 + 0"));
        mp_plan_destroy(plan);
        mp_parallel_destroy(par);
    }
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* validate --ranks with tp 2 x pp 2 (4 ranks: (stage, tp index) = rank
 * / 2, rank % 2): each Send is linked to the Recv of the other stage's
 * rank of the same tensor-parallel index, and the schedules replay
 * deadlock-free with the tensor-parallel collectives; two collectives
 * of one tp rank in the other order are named as a deadlock of its
 * tensor-parallel group */
static void test_ranks_link_tp_pp(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *t = mp_test_tiny_gpt_train(ctx);
    mp_parallel_options po;
    mp_parallel_options_init(&po);
    po.tp = 2;
    po.pp = 2;
    po.microbatches = 2;
    po.schedule = MP_PP_1F1B;
    po.cuts = "res";
    mp_parallel *par = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_parallel_create(t, &po, &par), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_parallel_num_ranks(par), 4);
    mpv_program *progs[4] = {NULL, NULL, NULL, NULL};
    mp_plan *plans[2] = {NULL, NULL};
    for (uint32_t s = 0; s < 2; s++) {
        mp_rank_info ri;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, s, &ri), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(ri.graph, NULL, &plans[s]),
                              MP_OK);
    }
    for (uint32_t r = 0; r < 4; r++) {
        mp_rank_info ri;
        uint32_t d = mp_parallel_distinct_of(par, r);
        CU_ASSERT_EQUAL_FATAL(d, r / 2);
        CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, d, &ri), MP_OK);
        mpv_rank_lowering rl = {1, r, 4, 1, 2, r / 2, 0, 2, r % 2};
        CU_ASSERT_EQUAL_FATAL(
            mpv_program_from_plan_rank(ri.graph, plans[d], &rl, &progs[r]),
            MP_OK);
    }
    uint32_t linked = 0;
    CU_ASSERT_EQUAL_FATAL(mpv_ranks_link(progs, 4, &linked), MP_OK);
    CU_ASSERT(linked > 0);
    CU_ASSERT_EQUAL(linked % 2, 0); /* the same on both tp indexes */
    uint32_t n_tp = 0, n_p2p = 0;
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t i = 0; i < progs[r]->n_launches; i++) {
            const mpv_launch *l = &progs[r]->launches[i];
            if (l->kind != MPV_L_COLL)
                continue;
            if (l->p.coll.op == MPV_COLL_SEND ||
                l->p.coll.op == MPV_COLL_RECV) {
                CU_ASSERT_EQUAL(l->p.coll.group, MPV_COLL_WORLD);
                if (l->p.coll.peer < 0)
                    continue; /* no partner: local */
                n_p2p++;
                CU_ASSERT_EQUAL(l->p.coll.peer % 2, (int)(r % 2));
                CU_ASSERT_NOT_EQUAL(l->p.coll.peer / 2, (int)(r / 2));
            } else {
                CU_ASSERT_EQUAL(l->p.coll.group, MPV_COLL_TP);
                n_tp++;
            }
        }
    CU_ASSERT_EQUAL(n_p2p, 2 * linked);
    CU_ASSERT(n_tp > 0);
    /* rank 1 (stage 0, tp index 1) runs its first two tensor-parallel
     * collectives in the other order */
    uint32_t at[2], na = 0;
    for (uint32_t s = 0; s < progs[1]->n_steps && na < 2; s++) {
        const mpv_step *st = &progs[1]->steps[s];
        const mp__node *n = &progs[1]->graph->nodes[st->index];
        const char *grp = NULL;
        if (st->kind == MP_STEP_COMPUTE &&
            (n->def->flags & MP__OPF_COLLECTIVE) &&
            mp_graph_get_attr_string(progs[1]->graph, st->index, "group",
                                     &grp) == MP_OK &&
            !strcmp(grp, "tp"))
            at[na++] = s;
    }
    CU_ASSERT_EQUAL_FATAL(na, 2);
    mpv_step tmp = progs[1]->steps[at[0]];
    progs[1]->steps[at[0]] = progs[1]->steps[at[1]];
    progs[1]->steps[at[1]] = tmp;
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t i = 0; i < progs[r]->n_launches; i++)
            if (progs[r]->launches[i].kind == MPV_L_COLL)
                progs[r]->launches[i].p.coll.peer = -1;
    CU_ASSERT_EQUAL(mpv_ranks_link(progs, 4, &linked), MP_ERR_VERIFY);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "would deadlock"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "of its tensor-parallel group"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "rank 1 waits at"));
    for (uint32_t r = 0; r < 4; r++)
        mpv_program_destroy(progs[r]);
    for (uint32_t s = 0; s < 2; s++)
        mp_plan_destroy(plans[s]);
    mp_parallel_destroy(par);
    mp_graph_destroy(t);
    mp_ctx_destroy(ctx);
}

/* NCCL is loaded at run time: MEMPLAN_NCCL names the file or its folder
 * and is the only place looked at when set; a wrong one says so and how
 * to point at PyTorch's. The weights' hash ignores order and offsets. */
static void test_nccl_load(void)
{
    char why[2048];
    const char *keep = getenv("MEMPLAN_NCCL");
    char saved[1024] = "";
    if (keep)
        snprintf(saved, sizeof saved, "%s", keep);
    setenv("MEMPLAN_NCCL", "/nonexistent/nccl", 1);
    mpv_nccl *n = mpv_nccl_load(why, sizeof why);
    CU_ASSERT_PTR_NULL(n);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "MEMPLAN_NCCL=/nonexistent/nccl"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "/nonexistent/nccl/libnccl.so.2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "nvidia/nccl/lib"));
    /* where this machine has one (CUDA's folder), it loads from there */
    if (access("/usr/local/cuda/lib64/libnccl.so.2", R_OK) == 0) {
        setenv("MEMPLAN_NCCL", "/usr/local/cuda/lib64", 1);
        n = mpv_nccl_load(why, sizeof why);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        int ver = 0;
        CU_ASSERT_PTR_NOT_NULL(strstr(mpv_nccl_path(n, &ver),
                                      "/usr/local/cuda/lib64/libnccl.so.2"));
        CU_ASSERT(ver >= 21800);
        mpv_nccl_destroy(n);
    }
    if (keep)
        setenv("MEMPLAN_NCCL", saved, 1);
    else
        unsetenv("MEMPLAN_NCCL");
    CU_ASSERT_EQUAL(mpv_nccl_dtype(MP_DTYPE_FLOAT32), 7);
    CU_ASSERT_EQUAL(mpv_nccl_dtype(MP_DTYPE_BFLOAT16), 9);
    CU_ASSERT_EQUAL(mpv_nccl_dtype(MP_DTYPE_UINT8), 1);
}

/* validate --rank: a rank graph's collectives lower to local copies of
 * the same buffers (DDP's bucket, ZeRO-2's and -3's shards of odd-sized
 * weights, FSDP's gathers, a pipeline stage's Recv); the optimizer steps
 * that read a bucket's slice stay synthetic and say why */
static void test_collectives_local(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_mm_relu(ctx, 4, 5); /* w: 25 elements */
    mp_train_options to;
    mp_train_options_init(&to);
    mp_graph *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    /* the collectives with an output: DDP's all-reduce, ZeRO-2's
     * reduce-scatter; ZeRO-3's forward gather and reduce-scatter (the
     * backward needs no weight: x is an input); the stages' Recvs (2 micro-batches: h once
     * in the last stage, which holds 1 in flight; h's gradient per
     * micro-batch in stage 0) */
    const struct { uint32_t dp, pp; int zero; int want; } cases[] = {
        {2, 1, 0, 1}, {2, 1, 2, 1}, {2, 1, 3, 2}, {1, 2, 0, 3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mp_parallel_options po;
        mp_parallel_options_init(&po);
        po.dp = cases[c].dp;
        po.pp = po.microbatches = cases[c].pp;
        po.zero = cases[c].zero;
        mp_parallel *par = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_parallel_create(t, &po, &par), MP_OK);
        int seen = 0;
        for (uint32_t d = 0; d < mp_parallel_num_distinct(par); d++) {
            mp_rank_info ri;
            CU_ASSERT_EQUAL_FATAL(mp_parallel_rank_info(par, d, &ri), MP_OK);
            mp_plan *plan = NULL;
            mpv_program *p = NULL;
            CU_ASSERT_EQUAL_FATAL(mp_plan_create(ri.graph, NULL, &plan),
                                  MP_OK);
            CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(ri.graph, plan, &p),
                                  MP_OK);
            seen += check_collectives(ri.graph, p);
            for (uint32_t i = 0; i < mp_graph_num_nodes(ri.graph); i++) {
                const mp__node *n = &ri.graph->nodes[i];
                if (n->phase == MP_PHASE_OPTIMIZER && p->nodes[i].synthetic) {
                    CU_ASSERT_PTR_NOT_NULL(strstr(p->nodes[i].why,
                                                  "validate --rank"));
                } else if (!(n->def->flags & MP__OPF_COLLECTIVE)) {
                    CU_ASSERT_FALSE(p->nodes[i].synthetic);
                }
            }
            mpv_program_destroy(p);
            mp_plan_destroy(plan);
        }
        CU_ASSERT_EQUAL(seen, cases[c].want);
        mp_parallel_destroy(par);
    }
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_predict_train(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_mm_relu(ctx, 64, 256);
    mp_train_options to;
    mp_train_options_init(&to);
    to.precision = MP_PRECISION_BF16_MIXED;
    mp_graph *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(ctx, "h200", &d), MP_OK);
    double *ss = calloc(p->n_steps + 1, sizeof *ss);
    CU_ASSERT_FATAL(ss != NULL);
    double sum = mpv_predict_seconds(p, &d, ss), add = 0;
    uint32_t n_run = 0, mm_grad = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_find_node(t, "mm/grad", &mm_grad), MP_OK);
    int seen_grad = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        add += ss[s];
        if (ps->kind != MP_STEP_COMPUTE || !p->nodes[ps->index].run)
            continue;
        mp_op_cost e;
        CU_ASSERT_EQUAL(mp_node_estimate(t, ps->index, &d, &e), MP_OK);
        CU_ASSERT_EQUAL(ss[s], e.seconds);
        CU_ASSERT_EQUAL(ss[s], mp_node_cost(t, ps->index));
        if (ps->index == mm_grad) {
            seen_grad = 1;
            CU_ASSERT(ss[s] > d.kernel_overhead);
        }
        n_run++;
    }
    CU_ASSERT(n_run > 3);
    CU_ASSERT_TRUE(seen_grad);
    CU_ASSERT_DOUBLE_EQUAL(sum, add, 1e-15);
    free(ss);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* --dump: the index names every weight, input and output with its bytes */
static void test_dump(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = small_net(ctx);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    CU_ASSERT_EQUAL_FATAL(p->n_inputs, 1);
    CU_ASSERT_EQUAL_FATAL(p->n_outputs, 1);
    unsigned char *w = malloc(p->weights_bytes), *in = malloc(768),
                  *out = malloc(1024);
    CU_ASSERT_FATAL(w && in && out);
    mpv_weights_init(p, w, 3);
    mpv_input_init(p, p->inputs[0], in, 3);
    for (int i = 0; i < 1024; i++)
        out[i] = (unsigned char)(i * 7 + 1);
    char dir[] = "/tmp/mpv_dumpXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const void *ins[1] = {in};
    CU_ASSERT_EQUAL_FATAL(
        mpv_dump_values(p, dir, w, ins, out, NULL, NULL, 0, NULL), MP_OK);
    char path[64];
    snprintf(path, sizeof path, "%s/values.txt", dir);
    char *ix = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
    uint32_t wt;
    mp_graph_find_tensor(g, "w", &wt);
    /* w first (the only weight), then x, then y */
    CU_ASSERT_STRING_EQUAL(ix, "weight\tw\tfloat32\t4,3,3,3\t0\t432\n"
                               "input\tx\tfloat32\t1,3,8,8\t432\t768\n"
                               "output\ty\tfloat32\t1,4,8,8\t1200\t1024\n");
    snprintf(path, sizeof path, "%s/values.bin", dir);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    unsigned char *bin = malloc(2700);
    size_t n = fread(bin, 1, 2700, f);
    fclose(f);
    CU_ASSERT_EQUAL(n, 432u + 768u + 1024u);
    CU_ASSERT_EQUAL(memcmp(bin, w + p->woff[wt], 432), 0);
    CU_ASSERT_EQUAL(memcmp(bin + 432, in, 768), 0);
    CU_ASSERT_EQUAL(memcmp(bin + 1200, out, 1024), 0);
    /* the weights after the run (a training step updates them): again,
     * after the outputs */
    unsigned char *w2 = malloc(p->weights_bytes);
    CU_ASSERT_FATAL(w2 != NULL);
    for (uint64_t i = 0; i < p->weights_bytes; i++)
        w2[i] = (unsigned char)(w[i] ^ 0x5a);
    CU_ASSERT_EQUAL_FATAL(
        mpv_dump_values(p, dir, w, ins, out, w2, NULL, 0, NULL), MP_OK);
    f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    n = fread(bin, 1, 2700, f);
    fclose(f);
    CU_ASSERT_EQUAL(n, 432u + 768u + 1024u + 432u);
    CU_ASSERT_EQUAL(memcmp(bin + 2224, w2 + p->woff[wt], 432), 0);
    free(w2);
    snprintf(path, sizeof path, "%s/values.txt", dir);
    free(ix);
    ix = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
    CU_ASSERT_STRING_EQUAL(ix, "weight\tw\tfloat32\t4,3,3,3\t0\t432\n"
                               "input\tx\tfloat32\t1,3,8,8\t432\t768\n"
                               "output\ty\tfloat32\t1,4,8,8\t1200\t1024\n"
                               "weight_after\tw\tfloat32\t4,3,3,3\t2224\t432\n");
    snprintf(path, sizeof path, "%s/values.bin", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/values.txt", dir);
    remove(path);
    rmdir(dir);
    /* a directory that cannot be written is an I/O error */
    CU_ASSERT_EQUAL(mpv_dump_values(p, "/nonexistent/dir", w, ins, out, NULL,
                                    NULL, 0, NULL),
                    MP_ERR_IO);
    free(bin);
    free(ix);
    free(w);
    free(in);
    free(out);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* x[2,4,6] and a weight w[5,6] read through Transpose(w) (perm 1,0) by
 * MatMul(x, wt) -> y[2,4,5]; with `also` the transposed weight is read
 * by a Relu too (then it is a copy, not a view) */
static mp_graph *linear_net(mp_ctx *ctx, int also, uint32_t *wt_id)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[3] = {2, 4, 6}, dw[2] = {5, 6}, dt[2] = {6, 5},
            dy[3] = {2, 4, 5};
    mp_tensor_desc t[5] = {
        {"x", MP_DTYPE_FLOAT32, 3, dx, 0, MP_KIND_INPUT},
        {"w", MP_DTYPE_FLOAT32, 2, dw, 0, MP_KIND_WEIGHT},
        {"wt", MP_DTYPE_FLOAT32, 2, dt, 0, MP_KIND_ACTIVATION},
        {"y", MP_DTYPE_FLOAT32, 3, dy, 0, MP_KIND_ACTIVATION},
        {"r", MP_DTYPE_FLOAT32, 2, dt, 0, MP_KIND_ACTIVATION},
    };
    uint32_t id[5];
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &t[i], &id[i]), MP_OK);
    uint32_t tin[1] = {id[1]}, tout[1] = {id[2]};
    uint32_t min[2] = {id[0], id[2]}, mout[1] = {id[3]};
    uint32_t rout[1] = {id[4]};
    mp_node_desc n[3] = {
        {"t", "Transpose", NULL, tin, 1, tout, 1, MP_PHASE_FORWARD},
        {"mm", "MatMul", NULL, min, 2, mout, 1, MP_PHASE_FORWARD},
        {"relu", "Relu", NULL, tout, 1, rout, 1, MP_PHASE_FORWARD},
    };
    uint32_t nid[3];
    for (int i = 0; i < 2 + (also != 0); i++)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &n[i], &nid[i]), MP_OK);
    int64_t perm[2] = {1, 0};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nid[0], "perm", perm, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[3]), MP_OK);
    if (also)
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[4]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    *wt_id = id[2];
    return g;
}

/* autocast's copies: float32 to bfloat16 and back are real Cast kernels
 * (they ran the synthetic kernel: 161-799 per bf16-mixed model) */
static void test_cast_bf16(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t d[2] = {4, 6};
    mp_tensor_desc t[3] = {
        {"x", MP_DTYPE_FLOAT32, 2, d, 0, MP_KIND_INPUT},
        {"h", MP_DTYPE_BFLOAT16, 2, d, 0, MP_KIND_ACTIVATION},
        {"y", MP_DTYPE_FLOAT32, 2, d, 0, MP_KIND_ACTIVATION},
    };
    uint32_t id[3];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &t[i], &id[i]), MP_OK);
    uint32_t a = mp_test_node(g, "to_bf16", "Cast", &id[0], 1, &id[1], 1);
    uint32_t b = mp_test_node(g, "to_f32", "Cast", &id[1], 1, &id[2], 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, a, "to", MP_DTYPE_BFLOAT16),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, b, "to", MP_DTYPE_FLOAT32),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[2]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0u);
    for (uint32_t n = 0; n < 2; n++) {
        const mpv_launch *l = &p->launches[p->nodes[n].first];
        CU_ASSERT_EQUAL(p->nodes[n].count, 1u);
        CU_ASSERT_EQUAL(l->kind, MPV_L_CAST);
        CU_ASSERT_EQUAL(l->p.cast.n, 24);
        CU_ASSERT_EQUAL(l->p.cast.from,
                        n ? MP_DTYPE_BFLOAT16 : MP_DTYPE_FLOAT32);
        CU_ASSERT_EQUAL(l->p.cast.to, n ? MP_DTYPE_FLOAT32 : MP_DTYPE_BFLOAT16);
    }
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* a weight transposed for a matrix product is a view the product reads
 * with op T (cuBLAS), as PyTorch's Linear reads its weight: no second
 * persistent copy, no launch for the Transpose */
static void test_transposed_operand(void)
{
    for (int also = 0; also <= 1; also++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        uint32_t wt;
        mp_graph *g = linear_net(ctx, also, &wt);
        uint32_t w;
        mp_graph_find_tensor(g, "w", &w);
        CU_ASSERT_EQUAL(g->tensors[wt].alias_of, also ? MP_NONE : w);
        CU_ASSERT_EQUAL(g->nodes[g->tensors[wt].producer].view, !also);
        /* persistent: w alone, or w and the copies folded at load (its
         * transpose and the Relu of that) */
        CU_ASSERT_EQUAL(mp__plan_persistent_bytes(g), also ? 360u : 120u);
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
        mpv_program *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
        /* a view runs nothing, nor does a copy folded at load; the
         * copy and the Relu of it are computed once from the weights
         * uploaded (the setup), in order, in the weights buffer */
        CU_ASSERT_EQUAL(p->nodes[0].run, 0);
        CU_ASSERT_EQUAL(p->nodes[0].setup, also);
        CU_ASSERT_EQUAL(p->n_setup, also ? 2u : 0u);
        CU_ASSERT_EQUAL(p->n_setup_left, 0u);
        for (uint32_t k = 0; k < p->n_setup; k++) {
            const mpv_step *ss = &p->setup[k];
            CU_ASSERT_EQUAL(ss->index, k ? 2u : 0u);
            CU_ASSERT_EQUAL(ss->n_refs, 2u);
            CU_ASSERT_EQUAL(p->nodes[ss->index].count, 1u);
            for (uint32_t j = 0; j < ss->n_refs; j++) {
                const mpv_ref *rf = &p->refs[ss->refs + j];
                CU_ASSERT_EQUAL(rf->space, MPV_SPACE_WEIGHTS);
                CU_ASSERT_EQUAL(rf->offset, p->woff[rf->tensor]);
            }
        }
        const mpv_launch *l = NULL;
        for (uint32_t k = 0; k < p->n_launches; k++)
            if (p->launches[k].kind == MPV_L_GEMM)
                l = &p->launches[k];
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        /* y[8,5] = x[8,6] op(B): B is w [5,6] read transposed (ldb = K),
         * or the copy wt [6,5] read as it is (ldb = N) */
        CU_ASSERT_EQUAL(l->p.gemm.ta, 0);
        CU_ASSERT_EQUAL(l->p.gemm.tb, !also);
        CU_ASSERT_EQUAL(l->p.gemm.m, 8);
        CU_ASSERT_EQUAL(l->p.gemm.n, 5);
        CU_ASSERT_EQUAL(l->p.gemm.k, 6);
        CU_ASSERT_EQUAL(l->p.gemm.ldb, also ? 5 : 6);
        CU_ASSERT_EQUAL(l->p.gemm.lda, 6);
        mpv_program_destroy(p);
        mp_plan_destroy(plan);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
}

/* an activation transposed on its last two axes (perm 0,2,1) is read as
 * operand A with op T; kept apart when it is also a graph output */
static void test_transposed_activation(void)
{
    for (int out = 0; out <= 1; out++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
        int64_t da[3] = {2, 4, 6}, dt[3] = {2, 6, 4}, db[3] = {2, 4, 3},
                dy[3] = {2, 6, 3};
        mp_tensor_desc t[4] = {
            {"a", MP_DTYPE_FLOAT32, 3, da, 0, MP_KIND_INPUT},
            {"at", MP_DTYPE_FLOAT32, 3, dt, 0, MP_KIND_ACTIVATION},
            {"b", MP_DTYPE_FLOAT32, 3, db, 0, MP_KIND_INPUT},
            {"y", MP_DTYPE_FLOAT32, 3, dy, 0, MP_KIND_ACTIVATION},
        };
        uint32_t id[4], nid[2];
        for (int i = 0; i < 4; i++)
            CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &t[i], &id[i]),
                                  MP_OK);
        uint32_t tin[1] = {id[0]}, tout[1] = {id[1]};
        uint32_t min[2] = {id[1], id[2]}, mout[1] = {id[3]};
        mp_node_desc n[2] = {
            {"t", "Transpose", NULL, tin, 1, tout, 1, MP_PHASE_FORWARD},
            {"mm", "MatMul", NULL, min, 2, mout, 1, MP_PHASE_FORWARD},
        };
        for (int i = 0; i < 2; i++)
            CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &n[i], &nid[i]),
                                  MP_OK);
        int64_t perm[3] = {0, 2, 1};
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nid[0], "perm", perm, 3),
                        MP_OK);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[3]), MP_OK);
        if (out)
            CU_ASSERT_EQUAL(mp_graph_mark_output(g, id[1]), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
        CU_ASSERT_EQUAL(g->tensors[id[1]].alias_of, out ? MP_NONE : id[0]);
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
        mpv_program *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
        CU_ASSERT_EQUAL(p->nodes[nid[0]].run, out);
        const mpv_launch *l = &p->launches[p->nodes[nid[1]].first];
        CU_ASSERT_EQUAL_FATAL(l->kind, MPV_L_GEMM);
        /* per batch y[6,3] = op(A) b[4,3]: A is a's [4,6] read with op T
         * (lda = M = 6), or the copy at [6,4] (lda = K = 4) */
        CU_ASSERT_EQUAL(l->p.gemm.ta, !out);
        CU_ASSERT_EQUAL(l->p.gemm.lda, out ? 4 : 6);
        CU_ASSERT_EQUAL(l->p.gemm.m, 6);
        CU_ASSERT_EQUAL(l->p.gemm.k, 4);
        CU_ASSERT_EQUAL(l->p.gemm.batch, 2);
        CU_ASSERT_EQUAL(l->p.gemm.sa, 24);
        mpv_program_destroy(p);
        mp_plan_destroy(plan);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
}

/* A training --fuse plan (min-cut, a decomposed GELU): every fused value
 * is a SCRATCH ref in one of two slots after the launches' workspace;
 * the node step after its producer reads it from the slot the producer
 * wrote; a chain alternates slots; materialized instances of the same
 * tensors stay in the arena. */
static void test_fused_scratch(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_gelu_train(ctx);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    mp_remat_result rr;
    mp_plan *plan = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, &po, &plan, &rr) == MP_OK);
    mpv_program *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    /* the same steps and blocks without the fused marks: refused, the
     * fused values have no block */
    CU_ASSERT_EQUAL(mpv_program_build(g, plan->steps, plan->n_steps,
                                      plan->blocks, plan->n_blocks, 256,
                                      NULL, &q),
                    MP_ERR_VERIFY);
    uint64_t slot = 32768; /* [32, 256] fp32 */
    uint64_t base = p->workspace_bytes - 2 * slot;
    CU_ASSERT(base >= 256); /* after the synthetic kernel's workspace */
    uint32_t n_scratch = 0, n_arena_fusedt = 0;
    int prev_out = -1; /* slot the previous node step wrote, -1 none */
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        if (ps->kind != MP_STEP_COMPUTE && ps->kind != MP_STEP_RECOMPUTE)
            continue;
        const mp__node *n = &g->nodes[ps->index];
        int wrote = -1;
        for (uint32_t k = 0; k < ps->n_refs; k++) {
            const mpv_ref *rf = &p->refs[ps->refs + k];
            if (rf->tensor != MP_NONE && mp_plan_tensor_fused(plan, rf->tensor) &&
                rf->space == MPV_SPACE_ARENA)
                n_arena_fusedt++;
            if (rf->space != MPV_SPACE_SCRATCH)
                continue;
            n_scratch++;
            CU_ASSERT(rf->offset == base || rf->offset == base + slot);
            int sl = rf->offset == base ? 0 : 1;
            if (k < n->n_in) {
                CU_ASSERT_EQUAL(sl, prev_out); /* read where written */
            } else {
                CU_ASSERT(sl != prev_out);     /* the other slot */
                wrote = sl;
            }
        }
        prev_out = wrote;
    }
    CU_ASSERT_EQUAL(p->n_fused_refs, n_scratch);
    /* 8 fused instances (forward d e a m, recomputed e m, backward
     * d/d#1 d/h#2), each written once and read once */
    CU_ASSERT_EQUAL(n_scratch, 16);
    CU_ASSERT(n_arena_fusedt > 0); /* recomputed d and a: in the arena */
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* q [2,3,16,8] x kT [2,3,8,32] -> Div(c) -> Add(mask [2,1,1,32]) (or
 * Where(keep [2,1,1,32], ., fill)) -> Softmax -> MatMul(v [2,3,32,4]):
 * fused (the default), lowered to one attention launch */
static void attention_case(int where, mp_dtype dt)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dq[] = {2, 3, 16, 8}, dk[] = {2, 3, 8, 32}, dv[] = {2, 3, 32, 4},
            dm[] = {2, 1, 1, 32}, one[] = {1};
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_INPUT, 4, dq);
    uint32_t kt = mp_test_tensor(g, "kT", MP_KIND_INPUT, 4, dk);
    uint32_t v = mp_test_tensor(g, "v", MP_KIND_INPUT, 4, dv);
    if (dt != MP_DTYPE_FLOAT32) {
        /* the same chain in float16: not run by the kernel */
        g->tensors[q].dtype = g->tensors[kt].dtype = g->tensors[v].dtype =
            (uint8_t)dt;
    }
    mp_tensor_desc cd = {"c", dt, 1, one, 0, MP_KIND_CONSTANT};
    mp_tensor_desc md = {where ? "keep" : "mask",
                         where ? MP_DTYPE_BOOL : dt, 4, dm, 0,
                         MP_KIND_INPUT};
    mp_tensor_desc fd = {"fill", dt, 0, NULL, 0, MP_KIND_CONSTANT};
    uint32_t c, m, f = MP_NONE, s[4], o;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &cd, &c), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &md, &m), MP_OK);
    if (where)
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &fd, &f), MP_OK);
    const char *sn[4] = {"s0", "s1", "s2", "s3"};
    for (int i = 0; i < 4; i++) {
        mp_tensor_desc d = {sn[i], dt, -1, NULL, 0, MP_KIND_ACTIVATION};
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &d, &s[i]), MP_OK);
    }
    mp_tensor_desc od = {"o", dt, -1, NULL, 0, MP_KIND_ACTIVATION};
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &od, &o), MP_OK);
    uint32_t i0[] = {q, kt}, i1[] = {s[0], c}, i2[] = {s[1], m},
             i2w[] = {m, s[1], f}, i4[] = {s[3], v};
    mp_test_node(g, "qk", "MatMul", i0, 2, &s[0], 1);
    mp_test_node(g, "div", "Div", i1, 2, &s[1], 1);
    if (where)
        mp_test_node(g, "mask", "Where", i2w, 3, &s[2], 1);
    else
        mp_test_node(g, "mask", "Add", i2, 2, &s[2], 1);
    mp_test_node(g, "softmax", "Softmax", &s[2], 1, &s[3], 1);
    mp_test_node(g, "pv", "MatMul", i4, 2, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_num_nodes(g), 1);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    if (dt != MP_DTYPE_FLOAT32) {
        CU_ASSERT_EQUAL(p->nodes[0].synthetic, 1);
        CU_ASSERT_PTR_NOT_NULL(p->nodes[0].why);
    } else {
        CU_ASSERT_EQUAL(p->n_synthetic, 0);
        CU_ASSERT_EQUAL_FATAL(p->nodes[0].count, 1);
        const mpv_launch *l = &p->launches[p->nodes[0].first];
        CU_ASSERT_EQUAL(l->kind, MPV_L_ATTENTION);
        CU_ASSERT_EQUAL(l->in[0], 0);
        CU_ASSERT_EQUAL(l->in[1], 1);
        CU_ASSERT_EQUAL(l->in[2], 2);
        CU_ASSERT_EQUAL(l->in[3], 3);
        CU_ASSERT_EQUAL(l->out, 0);
        CU_ASSERT_EQUAL(l->p.attn.rank, 4);
        CU_ASSERT_EQUAL(l->p.attn.bh, 6);
        CU_ASSERT_EQUAL(l->p.attn.tq, 16);
        CU_ASSERT_EQUAL(l->p.attn.tk, 32);
        CU_ASSERT_EQUAL(l->p.attn.d, 8);
        CU_ASSERT_EQUAL(l->p.attn.dv, 4);
        CU_ASSERT_EQUAL(l->p.attn.lead[0], 2);
        CU_ASSERT_EQUAL(l->p.attn.lead[1], 3);
        CU_ASSERT_EQUAL(l->p.attn.mask_kind, where ? 2 : 1);
        CU_ASSERT_EQUAL(l->p.attn.mask_esize, where ? 1 : 4);
        CU_ASSERT_EQUAL(l->p.attn.scale_div, 1);
        CU_ASSERT_EQUAL(l->p.attn.mask_first, 0);
        /* the mask [2,1,1,32] over the scores [2,3,16,32] */
        CU_ASSERT_EQUAL(l->p.attn.mst[0], 32);
        CU_ASSERT_EQUAL(l->p.attn.mst[1], 0);
        CU_ASSERT_EQUAL(l->p.attn.mst[2], 0);
        CU_ASSERT_EQUAL(l->p.attn.mst[3], 1);
        CU_ASSERT_EQUAL(l->workspace, 0);
    }
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* training: the fused forward node also writes the log-sum-exp its
 * backward reads (output 1, [1, bh*tq] fp32), so the synthetic backward
 * reads defined bytes */
static void attention_train(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dq[] = {2, 16, 8}, dk[] = {2, 8, 16};
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_INPUT, 3, dq);
    uint32_t kt = mp_test_tensor(g, "kT", MP_KIND_WEIGHT, 3, dk);
    uint32_t v = mp_test_tensor(g, "v", MP_KIND_WEIGHT, 3, dq);
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t pr = mp_test_tensor(g, "p", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t o = mp_test_tensor(g, "o", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t i0[] = {q, kt}, i1[] = {pr, v};
    mp_test_node(g, "qk", "MatMul", i0, 2, &s, 1);
    mp_test_node(g, "softmax", "Softmax", &s, 1, &pr, 1);
    mp_test_node(g, "pv", "MatMul", i1, 2, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_graph *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    int found = 0;
    for (uint32_t k = 0; k < p->n_launches; k++)
        if (p->launches[k].kind == MPV_L_ATTENTION) {
            found++;
            CU_ASSERT_EQUAL(p->launches[k].p.attn.lse, 1);
            CU_ASSERT_EQUAL(p->launches[k].p.attn.bh, 2);
            CU_ASSERT_EQUAL(p->launches[k].p.attn.tk, 16);
        }
    CU_ASSERT_EQUAL(found, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* K^T a Transpose of K's last two axes read only by the chain: after the
 * fusion a transposed view (no copy), the kernel reading K through its
 * strides (K [2,16,8]: K^T's axes (b, d, t) at (128, 1, 8)) */
static void attention_kview(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dq[] = {2, 16, 8};
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_INPUT, 3, dq);
    uint32_t k = mp_test_tensor(g, "k", MP_KIND_INPUT, 3, dq);
    uint32_t v = mp_test_tensor(g, "v", MP_KIND_INPUT, 3, dq);
    uint32_t kt = mp_test_tensor(g, "kT", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t pr = mp_test_tensor(g, "p", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t o = mp_test_tensor(g, "o", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t tn = mp_test_node(g, "kt", "Transpose", &k, 1, &kt, 1);
    int64_t perm[] = {0, 2, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tn, "perm", perm, 3), MP_OK);
    uint32_t i0[] = {q, kt}, i1[] = {pr, v};
    mp_test_node(g, "qk", "MatMul", i0, 2, &s, 1);
    mp_test_node(g, "softmax", "Softmax", &s, 1, &pr, 1);
    mp_test_node(g, "pv", "MatMul", i1, 2, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_num_nodes(g), 2);
    uint32_t ktn;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, "kT", &ktn), MP_OK);
    CU_ASSERT(mp__tensor_tview(g, ktn));
    /* q, k, v and o: kT takes no memory of its own */
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes, 4u * 1024u);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    int found = 0;
    for (uint32_t i = 0; i < p->n_launches; i++)
        if (p->launches[i].kind == MPV_L_ATTENTION) {
            found++;
            const int64_t *ks = p->launches[i].p.attn.kst,
                          *qs = p->launches[i].p.attn.qst;
            CU_ASSERT(ks[0] == 128 && ks[1] == 1 && ks[2] == 8);
            CU_ASSERT(qs[0] == 128 && qs[1] == 8 && qs[2] == 1);
        }
    CU_ASSERT_EQUAL(found, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- broadcast and range views ------------------------------------------ */

/* x[1,4] -> Relu -> r -> Expand(r, [3,4]) -> e; Add(e, m[3,4]) -> y.
 * reader 1: e also read by a Relu (no broadcasting reader: a copy);
 * reader 2: e is a graph output (a copy). */
static void broadcast_case(int reader)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[2] = {1, 4}, dm[2] = {3, 4}, ds[1] = {2};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t r = mp_test_tensor(g, "r", MP_KIND_ACTIVATION, 2, dx);
    mp_tensor_desc sd = {"shape", MP_DTYPE_INT64, 1, ds, 0, MP_KIND_CONSTANT};
    uint32_t sh;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &sd, &sh), MP_OK);
    uint32_t e = mp_test_tensor(g, "e", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t m = mp_test_tensor(g, "m", MP_KIND_INPUT, 2, dm);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t z = mp_test_tensor(g, "z", MP_KIND_ACTIVATION, -1, NULL);
    int64_t sv[2] = {3, 4};
    CU_ASSERT_EQUAL(mp__tensor_set_value(ctx, &g->tensors[sh], sv, 2), MP_OK);
    uint32_t ein[2] = {r, sh}, ain[2] = {e, m};
    mp_test_node(g, "relu", "Relu", &x, 1, &r, 1);
    uint32_t ex = mp_test_node(g, "expand", "Expand", ein, 2, &e, 1);
    uint32_t add = mp_test_node(g, "add", "Add", ain, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    if (reader == 1) {
        mp_test_node(g, "relu2", "Relu", &e, 1, &z, 1);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, z), MP_OK);
    }
    if (reader == 2)
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, e), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    int view = reader == 0;
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, e, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, 48u);
    CU_ASSERT_EQUAL(ti.alias_of, view ? r : MP_NONE);
    CU_ASSERT_EQUAL(ti.view, view ? MP_VIEW_BROADCAST : MP_VIEW_NONE);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    /* the expanded copy takes no block when it is a view */
    int e_block = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
        e_block |= mp_plan_blocks(plan)[i].tensor == e;
    CU_ASSERT_EQUAL(e_block, !view);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->nodes[ex].run, !view);
    const mpv_launch *l = &p->launches[p->nodes[add].first];
    CU_ASSERT_EQUAL_FATAL(l->kind, MPV_L_NARY);
    /* input 0 of the Add: r [1,4] broadcast over the rows (stride 0), or
     * the copy e [3,4] */
    CU_ASSERT_EQUAL(l->p.nary.st[0][0], view ? 0 : 4);
    CU_ASSERT_EQUAL(l->p.nary.st[0][1], 1);
    CU_ASSERT_EQUAL(l->p.nary.st[1][0], 4);
    /* the Add's step reads 16 bytes of r's block (the view's storage) */
    for (uint32_t s = 0; s < p->n_steps; s++)
        if (p->steps[s].kind == MP_STEP_COMPUTE &&
            mp_plan_steps(plan)[s].index == add) {
            const mpv_ref *rf = &p->refs[p->steps[s].refs];
            CU_ASSERT_EQUAL(rf->tensor, view ? r : e);
            CU_ASSERT_EQUAL(rf->bytes, view ? 16u : 48u);
        }
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_broadcast_view(void)
{
    for (int reader = 0; reader <= 2; reader++)
        broadcast_case(reader);
}

/* the arena offset of tensor t's root block at step s plus its view
 * offset equals the ref's offset */
static uint64_t root_offset_at(const mp_plan *plan, uint32_t root, uint32_t s)
{
    const mp_block *b = mp_plan_blocks(plan);
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
        if (b[i].tensor == root && b[i].first <= s && s <= b[i].end)
            return b[i].offset;
    return UINT64_MAX;
}

/* x[4,6] -> Relu -> r; Slice(r) along axis 0 rows 1..3 -> s[2,6], a range
 * view 24 bytes in; along axis 1 (not contiguous) a copy; Split of
 * r3[1,6,4] along axis 1 into [1,2,4] and [1,4,4]: views at 0 and 32
 * bytes. Each read by a Relu. */
static void test_range_view(void)
{
    for (int axis = 0; axis <= 1; axis++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
        int64_t dx[2] = {4, 6}, d3[3] = {1, 6, 4};
        uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
        uint32_t r = mp_test_tensor(g, "r", MP_KIND_ACTIVATION, 2, dx);
        uint32_t sl = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t x3 = mp_test_tensor(g, "x3", MP_KIND_INPUT, 3, d3);
        uint32_t r3 = mp_test_tensor(g, "r3", MP_KIND_ACTIVATION, 3, d3);
        uint32_t p0 = mp_test_tensor(g, "p0", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t p1 = mp_test_tensor(g, "p1", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t y0 = mp_test_tensor(g, "y0", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t y1 = mp_test_tensor(g, "y1", MP_KIND_ACTIVATION, -1, NULL);
        mp_test_node(g, "relu", "Relu", &x, 1, &r, 1);
        uint32_t sn = mp_test_node(g, "slice", "Slice", &r, 1, &sl, 1);
        uint32_t rs = mp_test_node(g, "relu_s", "Relu", &sl, 1, &y, 1);
        mp_test_node(g, "relu3", "Relu", &x3, 1, &r3, 1);
        uint32_t parts[2] = {p0, p1};
        uint32_t spn = mp_test_node(g, "split", "Split", &r3, 1, parts, 2);
        uint32_t r0 = mp_test_node(g, "relu_0", "Relu", &p0, 1, &y0, 1);
        uint32_t r1 = mp_test_node(g, "relu_1", "Relu", &p1, 1, &y1, 1);
        int64_t st = 1, en = axis ? 4 : 3, ax = axis, sp[2] = {2, 4}, one = 1;
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "starts", &st, 1), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "ends", &en, 1), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "axes", &ax, 1), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, spn, "split", sp, 2), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, spn, "axis", one), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, y0), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, y1), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
        mp_tensor_info ti;
        CU_ASSERT_EQUAL(mp_graph_tensor_info(g, sl, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.bytes, 48u);
        CU_ASSERT_EQUAL(ti.alias_of, axis ? MP_NONE : r);
        CU_ASSERT_EQUAL(ti.view, axis ? MP_VIEW_NONE : MP_VIEW_RANGE);
        CU_ASSERT_EQUAL(ti.view_offset, axis ? 0u : 24u);
        uint32_t pt[2] = {p0, p1};
        uint64_t want[2] = {0, 32};
        for (int i = 0; i < 2; i++) {
            CU_ASSERT_EQUAL(mp_graph_tensor_info(g, pt[i], &ti), MP_OK);
            CU_ASSERT_EQUAL(ti.alias_of, r3);
            CU_ASSERT_EQUAL(ti.view, MP_VIEW_RANGE);
            CU_ASSERT_EQUAL(ti.view_offset, want[i]);
        }
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
        mpv_program *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
        CU_ASSERT_EQUAL(p->nodes[sn].run, axis);
        CU_ASSERT_EQUAL(p->nodes[spn].run, 0);
        /* each reader's ref: the root's block offset + the view offset */
        uint32_t readers[3] = {rs, r0, r1}, roots[3] = {axis ? sl : r, r3, r3};
        uint64_t offs[3] = {axis ? 0u : 24u, 0, 32};
        int seen = 0;
        for (uint32_t s = 0; s < p->n_steps; s++) {
            const mp_step *ps = &mp_plan_steps(plan)[s];
            if (ps->kind != MP_STEP_COMPUTE)
                continue;
            for (int k = 0; k < 3; k++)
                if (ps->index == readers[k]) {
                    const mpv_ref *rf = &p->refs[p->steps[s].refs];
                    CU_ASSERT_EQUAL(rf->tensor, roots[k]);
                    CU_ASSERT_EQUAL(rf->view_off, offs[k]);
                    CU_ASSERT_EQUAL(rf->offset,
                                    root_offset_at(plan, roots[k], s) +
                                        offs[k]);
                    seen++;
                }
        }
        CU_ASSERT_EQUAL(seen, 3);
        mpv_program_destroy(p);
        mp_plan_destroy(plan);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
}

/* r3[1,6,4] (96 bytes) split into p0[1,2,4] and p1[1,4,4]; Relu(p1)
 * first, then Add(p0, z[3,2,4]) -> y[3,2,4], 96 bytes like r3, where r3
 * dies: the Add reads only a part of r3 (broadcast over z's rows), so
 * writing y over r3 in place would overwrite p0 before it is read. With
 * split [6] (p0 is all of r3, z [1,6,4]) it may. */
static void test_range_view_inplace(void)
{
    for (int whole = 0; whole <= 1; whole++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
        int64_t d3[3] = {1, 6, 4}, dz[3] = {3, 2, 4};
        uint32_t x3 = mp_test_tensor(g, "x3", MP_KIND_INPUT, 3, d3);
        uint32_t r3 = mp_test_tensor(g, "r3", MP_KIND_ACTIVATION, 3, d3);
        uint32_t z = mp_test_tensor(g, "z", MP_KIND_INPUT, 3, whole ? d3 : dz);
        uint32_t p0 = mp_test_tensor(g, "p0", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t p1 = mp_test_tensor(g, "p1", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t y1 = mp_test_tensor(g, "y1", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, -1, NULL);
        mp_test_node(g, "relu3", "Relu", &x3, 1, &r3, 1);
        uint32_t parts[2] = {p0, p1};
        uint32_t spn = mp_test_node(g, "split", "Split", &r3, 1, parts,
                                    whole ? 1 : 2);
        if (!whole)
            mp_test_node(g, "relu_1", "Relu", &p1, 1, &y1, 1);
        uint32_t ain[2] = {p0, z};
        mp_test_node(g, "add", "Add", ain, 2, &y, 1);
        int64_t sp[2] = {2, 4}, six = 6;
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, spn, "split",
                                               whole ? &six : sp,
                                               whole ? 1 : 2), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, spn, "axis", 1), MP_OK);
        if (!whole)
            CU_ASSERT_EQUAL(mp_graph_mark_output(g, y1), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
        CU_ASSERT_EQUAL(g->tensors[p0].alias_of, r3);
        CU_ASSERT_EQUAL(g->tensors[y].bytes, g->tensors[r3].bytes);
        mp_plan *plan = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
        uint32_t over = MP_NONE;
        for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
            if (mp_plan_blocks(plan)[i].tensor == y)
                over = mp_plan_block_over(plan, i);
        CU_ASSERT_EQUAL(over, whole ? r3 : MP_NONE);
        mp_plan_destroy(plan);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
}


/* Swin's shifted windows (mp_test_shifted_window): the fused node reads
 * the sum of the bias [1, H, N, N] and the window mask [1, W, 1, N, N],
 * [1, W, H, N, N], over mask_dims [B, W, H, N, N] of the scores
 * [B*W, H, N, N]; lowered to rank 5, lead (B, W, H) and the mask's
 * strides (0, H*N*N, N*N, N, 1). The kernel's arithmetic (k_attention's
 * mask offsets, on the CPU) on random values gives the unfused chain's
 * output: q*qscale x kT + bias, as [B, W, H, N, N] + the window mask,
 * softmax, x v. */
static void attention_shifted_window(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_shifted_window(ctx, SW_BIAS);
    mp_plan *plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0); /* the mask's Add too */
    const mpv_launch *l = NULL;
    uint32_t node = MP_NONE;
    for (uint32_t i = 0; i < mp_graph_num_nodes(g); i++)
        for (uint32_t k = 0; k < p->nodes[i].count; k++)
            if (p->launches[p->nodes[i].first + k].kind == MPV_L_ATTENTION) {
                l = &p->launches[p->nodes[i].first + k];
                node = i;
            }
    CU_ASSERT_FATAL(l != NULL);
    enum { B = SW_B, W = SW_W, H = SW_H, N = SW_N, D = SW_D };
    CU_ASSERT_FATAL(node != MP_NONE);
    const mp__node *fn = &g->nodes[node];
    const mp__tensor *mt = &g->tensors[fn->inputs[3]];
    int64_t want_m[] = {1, W, H, N, N};
    CU_ASSERT_EQUAL_FATAL(mt->rank, 5);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(mt->dims[i], want_m[i]);
    const mpv_launch L = *l;
    CU_ASSERT_EQUAL(L.p.attn.rank, 5);
    CU_ASSERT_EQUAL(L.p.attn.bh, B * W * H);
    CU_ASSERT_EQUAL(L.p.attn.tq, N);
    CU_ASSERT_EQUAL(L.p.attn.tk, N);
    CU_ASSERT_EQUAL(L.p.attn.d, D);
    CU_ASSERT_EQUAL(L.p.attn.lead[0], B);
    CU_ASSERT_EQUAL(L.p.attn.lead[1], W);
    CU_ASSERT_EQUAL(L.p.attn.lead[2], H);
    const int64_t want_st[] = {0, H * N * N, N * N, N, 1};
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(L.p.attn.mst[i], want_st[i]);
    CU_ASSERT_EQUAL(L.p.attn.mask_kind, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);

    static float q[B * W][H][N][D], kt[B * W][H][D][N], v[B * W][H][N][D],
        bias[H][N][N], smask[W][N][N], mask[W][H][N][N],
        ref[B * W][H][N][D], got[B * W][H][N][D];
    uint64_t rs = 42;
    float *all[] = {&q[0][0][0][0], &kt[0][0][0][0], &v[0][0][0][0],
                    &bias[0][0][0]};
    size_t cnt[] = {sizeof q / 4, sizeof kt / 4, sizeof v / 4,
                    sizeof bias / 4};
    for (int a = 0; a < 4; a++)
        for (size_t i = 0; i < cnt[a]; i++)
            all[a][i] = (float)(mp_test_rand(&rs) % 2001) / 1000.f - 1.f;
    for (int w = 0; w < W; w++) /* Swin's: 0 or -100 by region */
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                smask[w][i][j] = ((i ^ j ^ w) & 2) ? -100.f : 0.f;
    for (int w = 0; w < W; w++) /* the Add's output, [1, W, H, N, N] */
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++)
                    mask[w][h][i][j] = bias[h][i][j] + smask[w][i][j];
    const float qscale = 0.5f;
    float sc[N];
    /* the unfused chain */
    for (int b = 0; b < B * W; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                float mx = -INFINITY, sum = 0.f;
                for (int j = 0; j < N; j++) {
                    float dot = 0.f;
                    for (int c = 0; c < D; c++)
                        dot += q[b][h][i][c] * qscale * kt[b][h][c][j];
                    sc[j] = (dot + bias[h][i][j]) + smask[b % W][i][j];
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j < N; j++)
                    sum += sc[j] = expf(sc[j] - mx);
                for (int c = 0; c < D; c++) {
                    float a = 0.f;
                    for (int j = 0; j < N; j++)
                        a += sc[j] / sum * v[b][h][j][c];
                    ref[b][h][i][c] = a;
                }
            }
    /* the kernel's rows: (b, i) with b over bh, the mask at moff */
    const float *mk = &mask[0][0][0][0];
    const float *qf = &q[0][0][0][0], *kf = &kt[0][0][0][0],
                *vf = &v[0][0][0][0];
    float *of = &got[0][0][0][0];
    const int64_t tq = L.p.attn.tq, tk = L.p.attn.tk, d = L.p.attn.d;
    for (int64_t row = 0; row < L.p.attn.bh * tq; row++) {
        int64_t b = row / tq, i = row % tq, moff = 0, rem = b;
        for (int dd = L.p.attn.rank - 3; dd >= 0; dd--) {
            CU_ASSERT_FATAL(L.p.attn.lead[dd] > 0);
            int64_t x = rem % L.p.attn.lead[dd];
            rem /= L.p.attn.lead[dd];
            moff += x * L.p.attn.mst[dd];
        }
        moff += i * L.p.attn.mst[L.p.attn.rank - 2];
        CU_ASSERT_FATAL(moff >= 0 &&
                        moff + (tk - 1) * L.p.attn.mst[L.p.attn.rank - 1] <
                            (int64_t)(sizeof mask / 4));
        float mx = -INFINITY, sum = 0.f;
        for (int64_t j = 0; j < tk; j++) {
            float dot = 0.f;
            for (int64_t c = 0; c < d; c++)
                dot += qf[(b * tq + i) * d + c] * qscale *
                       kf[(b * d + c) * tk + j];
            sc[j] = dot + mk[moff + j * L.p.attn.mst[L.p.attn.rank - 1]];
            mx = sc[j] > mx ? sc[j] : mx;
        }
        for (int64_t j = 0; j < tk; j++)
            sum += sc[j] = expf(sc[j] - mx);
        for (int64_t c = 0; c < L.p.attn.dv; c++) {
            float a = 0.f;
            for (int64_t j = 0; j < tk; j++)
                a += sc[j] / sum * vf[(b * tk + j) * L.p.attn.dv + c];
            of[(b * tq + i) * L.p.attn.dv + c] = a;
        }
    }
    float worst = 0.f;
    for (size_t i = 0; i < sizeof ref / 4; i++) {
        float e = fabsf((&ref[0][0][0][0])[i] - of[i]);
        worst = e > worst ? e : worst;
    }
    CU_ASSERT(worst < 1e-5f);
}

/* Multi-head attention as exporters write it: q, k, v [2,4,3,5] (batch,
 * tokens, heads, head dim) permuted to heads first, (0,2,1,3) for Q and
 * V and (0,2,3,1) for K^T: the three permutes are views (no copies) the
 * matrix products read through the permuted strides, and after the
 * fusion the attention kernel does. */
static void attention_permuted_heads(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {2, 4, 3, 5};
    const char *nm[3] = {"q", "k", "v"}, *pn[3] = {"qh", "kT", "vh"};
    int64_t perms[3][4] = {{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
    uint32_t x[3], h[3];
    for (int i = 0; i < 3; i++) {
        x[i] = mp_test_tensor(g, nm[i], MP_KIND_INPUT, 4, dx);
        h[i] = mp_test_tensor(g, pn[i], MP_KIND_ACTIVATION, -1, NULL);
        uint32_t tn = mp_test_node(g, pn[i], "Transpose", &x[i], 1, &h[i], 1);
        CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tn, "perm", perms[i], 4),
                        MP_OK);
    }
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t pr = mp_test_tensor(g, "p", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t o = mp_test_tensor(g, "o", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t i0[] = {h[0], h[1]}, i1[] = {pr, h[2]};
    mp_test_node(g, "qk", "MatMul", i0, 2, &s, 1);
    mp_test_node(g, "softmax", "Softmax", &s, 1, &pr, 1);
    mp_test_node(g, "pv", "MatMul", i1, 2, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    /* unfused: the MatMuls read the permutes in place too: Q [2,3,4,5]
     * with op N (ld 15), K^T with op T (ld 15), the heads as a strided
     * batch (stride 5), the batch as outer products (stride 60) */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(g->tensors[h[i]].alias_of, x[i]);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    mpv_program *p0 = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p0), MP_OK);
    int gemms = 0;
    for (uint32_t i = 0; i < p0->n_launches; i++) {
        const mpv_launch *l = &p0->launches[i];
        CU_ASSERT_NOT_EQUAL(l->kind, MPV_L_COPY);
        if (l->kind != MPV_L_GEMM)
            continue;
        const int pv = gemms++; /* 0: Q K^T, 1: P V */
        CU_ASSERT_EQUAL(l->p.gemm.ta, 0);
        CU_ASSERT_EQUAL(l->p.gemm.tb, !pv);
        CU_ASSERT_EQUAL(l->p.gemm.lda, pv ? 4 : 15);
        CU_ASSERT_EQUAL(l->p.gemm.ldb, 15);
        CU_ASSERT_EQUAL(l->p.gemm.batch, 3);
        CU_ASSERT_EQUAL(l->p.gemm.sa, pv ? 16 : 5);
        CU_ASSERT_EQUAL(l->p.gemm.sb, 5);
        CU_ASSERT_EQUAL(l->p.gemm.sc, pv ? 20 : 16);
        CU_ASSERT_EQUAL(l->p.gemm.orank, 1);
        CU_ASSERT_EQUAL(l->p.gemm.odims[0], 2);
        CU_ASSERT_EQUAL(l->p.gemm.osa[0], pv ? 48 : 60);
        CU_ASSERT_EQUAL(l->p.gemm.osb[0], 60);
        CU_ASSERT_EQUAL(l->p.gemm.osc[0], pv ? 60 : 48);
    }
    CU_ASSERT_EQUAL(gemms, 2);
    mpv_program_destroy(p0);
    mp_plan_destroy(plan);
    plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.attention = MP_ATTENTION_FUSED;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    for (int i = 0; i < 3; i++) {
        uint32_t t;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, pn[i], &t), MP_OK);
        mp_tensor_info ti;
        CU_ASSERT_EQUAL(mp_graph_tensor_info(g, t, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.view, MP_VIEW_PERMUTED);
    }
    /* q, k, v, o (120 floats each, 512 bytes aligned): no copy of the
     * heads */
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes, 4u * 512u);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);
    int found = 0;
    for (uint32_t i = 0; i < p->n_launches; i++) {
        const mpv_launch *l = &p->launches[i];
        CU_ASSERT_NOT_EQUAL(l->kind, MPV_L_COPY);
        if (l->kind != MPV_L_ATTENTION)
            continue;
        found++;
        /* storage [2,4,3,5]: strides (60, 15, 5, 1) */
        const int64_t wq[4] = {60, 5, 15, 1}, wk[4] = {60, 5, 1, 15};
        for (int d = 0; d < 4; d++) {
            CU_ASSERT_EQUAL(l->p.attn.qst[d], wq[d]);
            CU_ASSERT_EQUAL(l->p.attn.vst[d], wq[d]);
            CU_ASSERT_EQUAL(l->p.attn.kst[d], wk[d]);
        }
        CU_ASSERT_EQUAL(l->p.attn.qrank, 4);
        CU_ASSERT(l->p.attn.qlead[0] == 2 && l->p.attn.qlead[1] == 3);
        CU_ASSERT(l->p.attn.bh == 6 && l->p.attn.tq == 4 &&
                  l->p.attn.tk == 4 && l->p.attn.d == 5);
    }
    CU_ASSERT_EQUAL(found, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_attention(void)
{
    attention_shifted_window();
    attention_kview();
    attention_permuted_heads();
    attention_case(0, MP_DTYPE_FLOAT32);
    attention_case(1, MP_DTYPE_FLOAT32);
    attention_case(0, MP_DTYPE_FLOAT16);
    attention_train();
}

/* ---- training: real backward kernels ------------------------------------ */

/* x[4,8] -> MatMul W1[8,16] -> h1 -> Relu -> h2 -> Mul s[16] -> h3 ->
 * Div d[4,16] -> h4 -> Sub c[16] -> h5 -> Tanh -> h6 -> Gemm(W2[2,16]
 * transB, b2[2]) -> y[4,2] -> Softmax -> p (output); every weight
 * trainable */
static mp_graph *train_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {4, 8}, dw1[] = {8, 16}, dh[] = {4, 16}, d16[] = {16},
            dw2[] = {2, 16}, d2[] = {2}, dy[] = {4, 2};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w1 = mp_test_tensor(g, "W1", MP_KIND_WEIGHT, 2, dw1);
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_WEIGHT, 1, d16);
    uint32_t d = mp_test_tensor(g, "d", MP_KIND_WEIGHT, 2, dh);
    uint32_t c = mp_test_tensor(g, "c", MP_KIND_WEIGHT, 1, d16);
    uint32_t w2 = mp_test_tensor(g, "W2", MP_KIND_WEIGHT, 2, dw2);
    uint32_t b2 = mp_test_tensor(g, "b2", MP_KIND_WEIGHT, 1, d2);
    uint32_t h[7];
    for (int i = 1; i <= 6; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "h%d", i);
        h[i] = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dh);
    }
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dy);
    uint32_t pr = mp_test_tensor(g, "p", MP_KIND_ACTIVATION, 2, dy);
    uint32_t i1[] = {x, w1}, i3[] = {h[2], s}, i4[] = {h[3], d},
             i5[] = {h[4], c}, ig[] = {h[6], w2, b2};
    mp_test_node(g, "mm1", "MatMul", i1, 2, &h[1], 1);
    mp_test_node(g, "relu", "Relu", &h[1], 1, &h[2], 1);
    mp_test_node(g, "mul", "Mul", i3, 2, &h[3], 1);
    mp_test_node(g, "div", "Div", i4, 2, &h[4], 1);
    mp_test_node(g, "sub", "Sub", i5, 2, &h[5], 1);
    mp_test_node(g, "tanh", "Tanh", &h[5], 1, &h[6], 1);
    uint32_t gn = mp_test_node(g, "gemm", "Gemm", ig, 3, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, gn, "transB", 1), MP_OK);
    mp_test_node(g, "softmax", "Softmax", &y, 1, &pr, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, pr), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

/* node `name` of the program: its launches (count checked) */
static const mpv_launch *launches_of(const mpv_program *p, const char *name,
                                     uint32_t count)
{
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(p->graph, name, &id), MP_OK);
    if (p->nodes[id].synthetic)
        printf("\n  %s: synthetic: %s\n", name, p->nodes[id].why);
    CU_ASSERT_EQUAL_FATAL(p->nodes[id].synthetic, 0);
    if (p->nodes[id].count != count)
        printf("\n  %s: %u launches\n", name, p->nodes[id].count);
    CU_ASSERT_EQUAL_FATAL(p->nodes[id].count, count);
    return &p->launches[p->nodes[id].first];
}

/* the node input slot holding tensor `name` (-1: none) */
static int slot_of(const mpv_program *p, const char *node, const char *name)
{
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(p->graph, node, &id), MP_OK);
    const mp__node *n = &p->graph->nodes[id];
    for (uint32_t i = 0; i < n->n_in; i++)
        if (strcmp(p->graph->tensors[n->inputs[i]].name, name) == 0)
            return (int)i;
    return -1;
}

static void check_gpw(const mpv_launch *l, int out, int n_in, int64_t n,
                      int64_t m, double alpha)
{
    CU_ASSERT_EQUAL(l->kind, MPV_L_GRAD_PW);
    CU_ASSERT_EQUAL(l->out, out);
    CU_ASSERT_EQUAL(l->p.gpw.n_in, n_in);
    CU_ASSERT_EQUAL(l->p.gpw.n, n);
    CU_ASSERT_EQUAL(l->p.gpw.m, m);
    CU_ASSERT_DOUBLE_EQUAL(l->p.gpw.alpha, alpha, 0);
    CU_ASSERT_EQUAL(l->p.gpw.rank, 2);
    CU_ASSERT_EQUAL(l->in[0], 0); /* the output gradient */
}

/* Gradients with many terms: a bias over 512 rows (the kept dim
 * innermost: 32 elements side by side, 2 chunks of 256 terms through
 * the workspace) and a scalar factor (every element a term: the rows
 * read consecutive terms, 4 chunks of 8192); few terms: one thread per
 * element, no chunks. */
static void test_train_many_terms(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &f), MP_OK);
    int64_t dx[] = {512, 64}, db[] = {64}, ds[] = {1};
    uint32_t x = mp_test_tensor(f, "x", MP_KIND_INPUT, 2, dx);
    uint32_t b = mp_test_tensor(f, "b", MP_KIND_WEIGHT, 1, db);
    uint32_t sc = mp_test_tensor(f, "s", MP_KIND_WEIGHT, 1, ds);
    uint32_t h = mp_test_tensor(f, "h", MP_KIND_ACTIVATION, 2, dx);
    uint32_t y = mp_test_tensor(f, "y", MP_KIND_ACTIVATION, 2, dx);
    uint32_t ia[] = {x, b}, im[] = {h, sc};
    mp_test_node(f, "add", "Add", ia, 2, &h, 1);
    mp_test_node(f, "mul", "Mul", im, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(f, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(f), MP_OK);
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    to.train_all_weights = 1; /* its scalars and running statistics */
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    /* db: the output gradient summed over the rows */
    const mpv_launch *l = launches_of(p, "add/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_GRAD_PW);
    CU_ASSERT_EQUAL(l->p.gpw.n, 64);
    CU_ASSERT_EQUAL(l->p.gpw.m, 512);
    CU_ASSERT_EQUAL(l->p.gpw.lanes, 32);
    CU_ASSERT_EQUAL(l->p.gpw.parts, 2);
    CU_ASSERT_EQUAL(l->p.gpw.chunk, 256);
    CU_ASSERT_EQUAL(l->workspace, 2u * 64u * 4u);
    /* mul/grad: dh = dy s (one term each), ds = sum of dy h */
    l = launches_of(p, "mul/grad", 2);
    int ih = -1;
    for (int k = 0; k < 2; k++)
        if (l[k].p.gpw.n == 1)
            ih = k;
    CU_ASSERT_FATAL(ih >= 0);
    const mpv_launch *one = &l[1 - ih], *all = &l[ih];
    CU_ASSERT_EQUAL(one->p.gpw.m, 1);
    CU_ASSERT_EQUAL(one->p.gpw.parts, 1);
    CU_ASSERT_EQUAL(one->workspace, 0u);
    CU_ASSERT_EQUAL(all->p.gpw.m, 512 * 64);
    CU_ASSERT_EQUAL(all->p.gpw.lanes, 1);
    CU_ASSERT_EQUAL(all->p.gpw.parts, 4);
    CU_ASSERT_EQUAL(all->p.gpw.chunk, 8192);
    CU_ASSERT_EQUAL(all->workspace, 16u);
    /* the program's workspace holds the largest launch's */
    CU_ASSERT(p->workspace_bytes >= 2u * 64u * 4u);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* The loss, its gradient, the backward nodes of Relu, Mul, Div, Sub,
 * Tanh, Gemm, MatMul and Softmax and the SGD steps run real kernels,
 * reading the slots the backward nodes' attributes name. */
static void test_train_kernels(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = train_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    CU_ASSERT_EQUAL(p->workspace_bytes, 256u); /* none of their own */

    const mpv_launch *l = launches_of(p, "loss", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_SUM_ALL);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.sum_all.n, 8);
    CU_ASSERT_EQUAL(l->p.sum_all.accumulate, 0);
    l = launches_of(p, "loss/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.fill.n, 8);
    CU_ASSERT_EQUAL(l->p.fill.zero_bytes, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.fill.value, 1.0, 0);

    /* Softmax from its output p: rows of 2 */
    l = launches_of(p, "softmax/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_SOFTMAX_GRAD);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->in[1], slot_of(p, "softmax/grad", "p"));
    CU_ASSERT_EQUAL(l->in[1], 1);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.smgrad.outer, 4);
    CU_ASSERT_EQUAL(l->p.smgrad.dim, 2);
    CU_ASSERT_EQUAL(l->p.smgrad.inner, 1);
    CU_ASSERT_EQUAL(l->p.smgrad.log, 0);

    /* Gemm(h6, W2 transB, b2): dh6 [4,16] = dy W2, dW2 [2,16] = dy^T h6,
     * db2 = dy summed over rows */
    l = launches_of(p, "gemm/grad", 3);
    int sh6 = slot_of(p, "gemm/grad", "h6"), sw2 = slot_of(p, "gemm/grad", "W2");
    CU_ASSERT(sh6 > 0 && sw2 > 0);
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(l[0].out, 0);
    CU_ASSERT_EQUAL(l[0].in[0], 0);
    CU_ASSERT_EQUAL(l[0].in[1], sw2);
    CU_ASSERT_EQUAL(l[0].p.gemm.ta, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.tb, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.m, 4);
    CU_ASSERT_EQUAL(l[0].p.gemm.n, 16);
    CU_ASSERT_EQUAL(l[0].p.gemm.k, 2);
    CU_ASSERT_EQUAL(l[0].p.gemm.lda, 2);
    CU_ASSERT_EQUAL(l[0].p.gemm.ldb, 16);
    CU_ASSERT_EQUAL(l[0].p.gemm.ldc, 16);
    CU_ASSERT_EQUAL(l[0].p.gemm.batch, 1);
    CU_ASSERT_EQUAL(l[1].kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(l[1].out, 1);
    CU_ASSERT_EQUAL(l[1].in[0], 0);
    CU_ASSERT_EQUAL(l[1].in[1], sh6);
    CU_ASSERT_EQUAL(l[1].p.gemm.ta, 1);
    CU_ASSERT_EQUAL(l[1].p.gemm.tb, 0);
    CU_ASSERT_EQUAL(l[1].p.gemm.m, 2);
    CU_ASSERT_EQUAL(l[1].p.gemm.n, 16);
    CU_ASSERT_EQUAL(l[1].p.gemm.k, 4);
    CU_ASSERT_EQUAL(l[1].p.gemm.lda, 2);
    CU_ASSERT_EQUAL(l[1].p.gemm.ldb, 16);
    CU_ASSERT_EQUAL(l[1].p.gemm.ldc, 16);
    check_gpw(&l[2], 2, 1, 2, 4, 1.0);
    CU_ASSERT_EQUAL(l[2].p.gpw.red[0], 1);
    CU_ASSERT_EQUAL(l[2].p.gpw.red[1], 0);

    /* Sub(h4, c[16]): h4's gradient is a view; c's is -dy summed over
     * rows */
    l = launches_of(p, "sub/grad", 1);
    check_gpw(l, 0, 1, 16, 4, -1.0);

    /* Div(h3, d): dh3 = dy / d, dd = -dy h3 / d / d */
    l = launches_of(p, "div/grad", 2);
    int sh3 = slot_of(p, "div/grad", "h3"), sd = slot_of(p, "div/grad", "d");
    check_gpw(&l[0], 0, 2, 64, 1, 1.0);
    CU_ASSERT_EQUAL(l[0].in[1], sd);
    CU_ASSERT_EQUAL(l[0].p.gpw.ops[0], MP__KOP_DIV);
    check_gpw(&l[1], 1, 4, 64, 1, -1.0);
    CU_ASSERT_EQUAL(l[1].in[1], sh3);
    CU_ASSERT_EQUAL(l[1].in[2], sd);
    CU_ASSERT_EQUAL(l[1].in[3], sd);
    CU_ASSERT_EQUAL(l[1].p.gpw.ops[0], MP__KOP_MUL);
    CU_ASSERT_EQUAL(l[1].p.gpw.ops[1], MP__KOP_DIV);
    CU_ASSERT_EQUAL(l[1].p.gpw.ops[2], MP__KOP_DIV);

    /* Mul(h2, s[16]): dh2 = dy s (s broadcast: strides 0, 1), ds = dy h2
     * summed over rows */
    l = launches_of(p, "mul/grad", 2);
    int sh2 = slot_of(p, "mul/grad", "h2"), ss = slot_of(p, "mul/grad", "s");
    check_gpw(&l[0], 0, 2, 64, 1, 1.0);
    CU_ASSERT_EQUAL(l[0].in[1], ss);
    CU_ASSERT_EQUAL(l[0].p.gpw.st[1][0], 0);
    CU_ASSERT_EQUAL(l[0].p.gpw.st[1][1], 1);
    CU_ASSERT_EQUAL(l[0].p.gpw.ops[0], MP__KOP_MUL);
    check_gpw(&l[1], 1, 2, 16, 4, 1.0);
    CU_ASSERT_EQUAL(l[1].in[1], sh2);
    CU_ASSERT_EQUAL(l[1].p.gpw.st[1][0], 16);
    CU_ASSERT_EQUAL(l[1].p.gpw.st[1][1], 1);

    /* Relu from its output h2 */
    l = launches_of(p, "relu/grad", 1);
    check_gpw(l, 0, 2, 64, 1, 1.0);
    CU_ASSERT_EQUAL(l->in[1], slot_of(p, "relu/grad", "h2"));
    CU_ASSERT_EQUAL(l->p.gpw.ops[0], MPV_BOP_RELU_GRAD);

    /* Tanh from its output h6: dy (1 - h6^2) */
    l = launches_of(p, "tanh/grad", 1);
    check_gpw(l, 0, 2, 64, 1, 1.0);
    CU_ASSERT_EQUAL(l->in[1], slot_of(p, "tanh/grad", "h6"));
    CU_ASSERT_EQUAL(l->p.gpw.ops[0], MPV_BOP_TANH_GRAD);

    /* MatMul(x, W1), x a graph input: dW1 [8,16] = x^T dy */
    l = launches_of(p, "mm1/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->in[0], slot_of(p, "mm1/grad", "x"));
    CU_ASSERT_EQUAL(l->in[1], 0);
    CU_ASSERT_EQUAL(l->p.gemm.ta, 1);
    CU_ASSERT_EQUAL(l->p.gemm.tb, 0);
    CU_ASSERT_EQUAL(l->p.gemm.m, 8);
    CU_ASSERT_EQUAL(l->p.gemm.n, 16);
    CU_ASSERT_EQUAL(l->p.gemm.k, 4);
    CU_ASSERT_EQUAL(l->p.gemm.lda, 8);
    CU_ASSERT_EQUAL(l->p.gemm.ldb, 16);

    /* SGD: W1 -= 0.01 dW1, in place */
    l = launches_of(p, "opt/W1", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_AXPY);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->in[1], 1);
    CU_ASSERT_EQUAL(l->out, -1);
    CU_ASSERT_EQUAL(l->p.axpy.n, 128);
    CU_ASSERT_DOUBLE_EQUAL(l->p.axpy.alpha, -0.01, 0);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Batched MatMul h[3,4,5] x b[3,5,6] (h = x * a, a and b trainable):
 * one strided batched product per gradient; Adam's steps stay
 * synthetic */
static void test_train_batched_matmul(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t da[] = {3, 4, 5}, db[] = {3, 5, 6}, dy[] = {3, 4, 6};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 3, da);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_WEIGHT, 3, da);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 3, da);
    uint32_t b = mp_test_tensor(g, "b", MP_KIND_WEIGHT, 3, db);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 3, dy);
    uint32_t im[] = {x, a}, in[] = {h, b};
    mp_test_node(g, "mul", "Mul", im, 2, &h, 1);
    mp_test_node(g, "mm", "MatMul", in, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_graph *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_ADAM;
    to.optimizer_impl = MP_OPTIM_IMPL_FOR_LOOP;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0); /* Adam's steps too */
    CU_ASSERT_EQUAL(launches_of(p, "opt/a", 1)->kind, MPV_L_OPT_STEP);
    const mpv_launch *l = launches_of(p, "mm/grad", 2);
    /* da [4,5] = dy [4,6] b^T: b [5,6] op T (ldb 6) */
    CU_ASSERT_EQUAL(l[0].out, 0);
    CU_ASSERT_EQUAL(l[0].in[0], 0);
    CU_ASSERT_EQUAL(l[0].in[1], 2);
    CU_ASSERT_EQUAL(l[0].p.gemm.ta, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.tb, 1);
    CU_ASSERT_EQUAL(l[0].p.gemm.m, 4);
    CU_ASSERT_EQUAL(l[0].p.gemm.n, 5);
    CU_ASSERT_EQUAL(l[0].p.gemm.k, 6);
    CU_ASSERT_EQUAL(l[0].p.gemm.lda, 6);
    CU_ASSERT_EQUAL(l[0].p.gemm.ldb, 6);
    CU_ASSERT_EQUAL(l[0].p.gemm.batch, 3);
    CU_ASSERT_EQUAL(l[0].p.gemm.sa, 24);
    CU_ASSERT_EQUAL(l[0].p.gemm.sb, 30);
    CU_ASSERT_EQUAL(l[0].p.gemm.sc, 20);
    /* db [5,6] = a^T dy: a [4,5] op T (lda 5) */
    CU_ASSERT_EQUAL(l[1].out, 1);
    CU_ASSERT_EQUAL(l[1].in[0], 1);
    CU_ASSERT_EQUAL(l[1].in[1], 0);
    CU_ASSERT_EQUAL(l[1].p.gemm.ta, 1);
    CU_ASSERT_EQUAL(l[1].p.gemm.tb, 0);
    CU_ASSERT_EQUAL(l[1].p.gemm.m, 5);
    CU_ASSERT_EQUAL(l[1].p.gemm.n, 6);
    CU_ASSERT_EQUAL(l[1].p.gemm.k, 4);
    CU_ASSERT_EQUAL(l[1].p.gemm.lda, 5);
    CU_ASSERT_EQUAL(l[1].p.gemm.ldb, 6);
    CU_ASSERT_EQUAL(l[1].p.gemm.batch, 3);
    CU_ASSERT_EQUAL(l[1].p.gemm.sa, 20);
    CU_ASSERT_EQUAL(l[1].p.gemm.sb, 24);
    CU_ASSERT_EQUAL(l[1].p.gemm.sc, 30);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Add(h, h): its backward node reads h's gradient twice over
 * (grad_dx_reads 2), which the pointwise kernels do not sum: synthetic */
static void test_train_read_twice(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {4, 8}, dw[] = {8, 16}, dh[] = {4, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 2, dh);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dh);
    uint32_t im[] = {x, w}, ia[] = {h, h};
    mp_test_node(g, "mm", "MatMul", im, 2, &h, 1);
    mp_test_node(g, "add", "Add", ia, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_graph *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "add/grad", &id), MP_OK);
    const mp__attr *a = mp__node_attr(&t->nodes[id], "grad_dx_reads");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->n, 1);
    CU_ASSERT_EQUAL(a->v.ints[0], 2);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->nodes[id].synthetic, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->nodes[id].why, "reads twice"));
    CU_ASSERT_EQUAL(p->n_synthetic, 1);
    CU_ASSERT_EQUAL(p->n_bwd_synthetic, 1);
    CU_ASSERT_EQUAL(p->n_bwd_real, 2); /* loss/grad, mm/grad */
    CU_ASSERT_EQUAL(p->n_opt_real, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- convolutions on cuDNN ---------------------------------------------- */

/* x[2,4,9,9] -> Conv a (w1[8,4,3,3], b1, pads 1) -> h1 -> Relu -> h2 ->
 * Conv b (w2[8,2,3,3], group 4, strides 2, pads 1) -> h3 -> Conv c
 * (depthwise w3[8,1,3,3], group 8, dilations 2, pads 2, b3) -> h4 ->
 * Conv d (w4[4,8,2,2], pads 0,0,1,1: bottom/right only) -> y[2,4,5,5] */
static mp_graph *conv_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {2, 4, 9, 9}, dw1[] = {8, 4, 3, 3}, d8[] = {8},
            dh1[] = {2, 8, 9, 9}, dw2[] = {8, 2, 3, 3}, dh3[] = {2, 8, 5, 5},
            dw3[] = {8, 1, 3, 3}, dw4[] = {4, 8, 2, 2}, dy[] = {2, 4, 5, 5};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 4, dx);
    uint32_t w1 = mp_test_tensor(g, "w1", MP_KIND_WEIGHT, 4, dw1);
    uint32_t b1 = mp_test_tensor(g, "b1", MP_KIND_WEIGHT, 1, d8);
    uint32_t h1 = mp_test_tensor(g, "h1", MP_KIND_ACTIVATION, 4, dh1);
    uint32_t h2 = mp_test_tensor(g, "h2", MP_KIND_ACTIVATION, 4, dh1);
    uint32_t w2 = mp_test_tensor(g, "w2", MP_KIND_WEIGHT, 4, dw2);
    uint32_t h3 = mp_test_tensor(g, "h3", MP_KIND_ACTIVATION, 4, dh3);
    uint32_t w3 = mp_test_tensor(g, "w3", MP_KIND_WEIGHT, 4, dw3);
    uint32_t b3 = mp_test_tensor(g, "b3", MP_KIND_WEIGHT, 1, d8);
    uint32_t h4 = mp_test_tensor(g, "h4", MP_KIND_ACTIVATION, 4, dh3);
    uint32_t w4 = mp_test_tensor(g, "w4", MP_KIND_WEIGHT, 4, dw4);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 4, dy);
    uint32_t ia[] = {x, w1, b1}, ib[] = {h2, w2}, ic[] = {h3, w3, b3},
             id[] = {h4, w4};
    int64_t p1[] = {1, 1, 1, 1}, p2[] = {2, 2, 2, 2}, p4[] = {0, 0, 1, 1},
            s2[] = {2, 2};
    uint32_t na = mp_test_node(g, "a", "Conv", ia, 3, &h1, 1);
    mp_test_node(g, "relu", "Relu", &h1, 1, &h2, 1);
    uint32_t nb = mp_test_node(g, "b", "Conv", ib, 2, &h3, 1);
    uint32_t nc = mp_test_node(g, "c", "Conv", ic, 3, &h4, 1);
    uint32_t nd = mp_test_node(g, "d", "Conv", id, 2, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, na, "pads", p1, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nb, "pads", p1, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nb, "strides", s2, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, nb, "group", 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nc, "pads", p2, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nc, "dilations", s2, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, nc, "group", 8), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, nd, "pads", p4, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

/* a MPV_L_CONV_DNN launch's pass, slots, geometry and workspace (GWS:
 * the cost model's for a gradient pass of the launch's geometry, which
 * is 2 MiB plus the operands') */
#define GWS UINT64_MAX
static void check_dnn(const mpv_launch *l, int pass, int in0, int in1,
                      int out, int64_t c, int64_t m, int64_t g, int cudnn,
                      uint64_t ws)
{
    CU_ASSERT_EQUAL(l->kind, MPV_L_CONV_DNN);
    CU_ASSERT_EQUAL(l->p.dnn.pass, pass);
    CU_ASSERT_EQUAL(l->in[0], in0);
    CU_ASSERT_EQUAL(l->in[1], in1);
    CU_ASSERT_EQUAL(l->out, out);
    CU_ASSERT_EQUAL(l->p.dnn.n, 2);
    CU_ASSERT_EQUAL(l->p.dnn.c, c);
    CU_ASSERT_EQUAL(l->p.dnn.m, m);
    CU_ASSERT_EQUAL(l->p.dnn.g, g);
    CU_ASSERT_EQUAL(l->p.dnn.cudnn, cudnn);
    if (ws == GWS) {
        mp__conv_shape cs = {l->p.dnn.n,  l->p.dnn.c,  l->p.dnn.h,
                             l->p.dnn.w,  l->p.dnn.m,  l->p.dnn.oh,
                             l->p.dnn.ow, l->p.dnn.kh, l->p.dnn.kw,
                             l->p.dnn.g};
        ws = mp__conv_workspace(&cs, pass);
        CU_ASSERT(ws > 2u << 20);
    }
    CU_ASSERT_EQUAL(l->workspace, ws);
}

/* bf16-mixed training of conv_net: the convolutions read autocast's
 * bfloat16 copies on cuDNN (the launch's bf16 mask names them), a
 * weight's float32 gradient is computed in bfloat16 into the workspace's
 * first bytes and widened (p.dnn.stage), the bottom/right pads that only
 * the float32 direct kernel takes fall back to the synthetic kernel, and
 * the Loss sums the output alone, not the weight casts it holds. */
static void test_conv_bf16(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = conv_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_ADAM;
    to.precision = MP_PRECISION_BF16_MIXED;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    /* forward a: bfloat16 x, w1, b1 and h1 */
    const mpv_launch *l = launches_of(p, "a", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_CONV_DNN);
    CU_ASSERT_EQUAL(l->bf16, 0x7ull | (1ull << 32));
    CU_ASSERT_EQUAL(l->p.dnn.stage, 0);
    /* b's gradient: the data pass (bfloat16 dx) and the weight's, a
     * float32 gradient, staged */
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "b/grad", &id), MP_OK);
    CU_ASSERT_EQUAL_FATAL(p->nodes[id].synthetic, 0);
    int staged = 0;
    for (uint32_t k = 0; k < p->nodes[id].count; k++) {
        const mpv_launch *g = &p->launches[p->nodes[id].first + k];
        if (g->kind != MPV_L_CONV_DNN)
            continue;
        CU_ASSERT(g->bf16 & 1); /* dy */
        if (g->p.dnn.pass == MPV_CONV_BWD_FILTER) {
            /* w2 [8, 2, 3, 3]: 144 bfloat16, 288 bytes, 512 aligned */
            CU_ASSERT_EQUAL(g->p.dnn.stage, 512);
            mp__conv_shape cs = {g->p.dnn.n,  g->p.dnn.c,  g->p.dnn.h,
                                 g->p.dnn.w,  g->p.dnn.m,  g->p.dnn.oh,
                                 g->p.dnn.ow, g->p.dnn.kh, g->p.dnn.kw,
                                 g->p.dnn.g};
            CU_ASSERT_EQUAL(g->workspace,
                            mp__conv_workspace(&cs, MPV_CONV_BWD_FILTER) +
                                512);
            staged++;
        } else {
            CU_ASSERT_EQUAL(g->p.dnn.stage, 0);
        }
    }
    CU_ASSERT_EQUAL(staged, 1);
    /* d's pads: the synthetic kernel, and why */
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "d", &id), MP_OK);
    CU_ASSERT_EQUAL(p->nodes[id].synthetic, 1);
    CU_ASSERT_PTR_NOT_NULL(p->nodes[id].why &&
                           strstr(p->nodes[id].why, "bfloat16"));
    /* the loss: one sum (its output), its other inputs held */
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "loss", &id), MP_OK);
    mp_node_info ni;
    CU_ASSERT_EQUAL_FATAL(mp_graph_node_info(t, id, &ni), MP_OK);
    CU_ASSERT(ni.n_inputs > 1);
    CU_ASSERT_EQUAL(p->nodes[id].count, 1u);
    CU_ASSERT_EQUAL(p->launches[p->nodes[id].first].kind, MPV_L_SUM_ALL);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Forward: one cuDNN pass per Conv over the batch (groups, strides,
 * dilations, the bias), bottom/right-only pads on the im2col path.
 * Backward: ConvGrad's input gradient (backward data from the saved
 * weight), weight gradient (backward filter from the saved input) and
 * bias gradient (dy summed over N, OH, OW); bottom/right-only pads on
 * the direct kernel, without workspace. The workspaces are the cost
 * model's (mp__conv_workspace). */
static void test_conv_dnn(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = conv_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    CU_ASSERT_EQUAL(p->n_bwd_synthetic, 0);

    /* every pass's workspace: x + y + max(x, y) / 2 + w + 2 MiB */
    mp__conv_shape sa = {2, 4, 9, 9, 8, 9, 9, 3, 3, 1};
    CU_ASSERT_EQUAL(mp__conv_workspace(&sa, MP__CONV_FWD),
                    (2u * 4u * 81u + 2u * 8u * 81u + 2u * 8u * 81u / 2 +
                     8u * 4u * 9u) * 4u + (2u << 20));
    /* forward a: x, w1, b1 -> h1 */
    const mpv_launch *l = launches_of(p, "a", 1);
    check_dnn(l, MPV_CONV_FWD, 0, 1, 0, 4, 8, 1, 1, GWS);
    CU_ASSERT_EQUAL(l->in[2], 2);
    CU_ASSERT_EQUAL(l->p.dnn.has_bias, 1);
    CU_ASSERT_EQUAL(l->p.dnn.pt, 1);
    CU_ASSERT_EQUAL(l->p.dnn.oh, 9);
    l = launches_of(p, "b", 1);
    check_dnn(l, MPV_CONV_FWD, 0, 1, 0, 8, 8, 4, 1, GWS);
    CU_ASSERT_EQUAL(l->in[2], -1);
    CU_ASSERT_EQUAL(l->p.dnn.has_bias, 0);
    CU_ASSERT_EQUAL(l->p.dnn.sh, 2);
    CU_ASSERT_EQUAL(l->p.dnn.oh, 5);
    l = launches_of(p, "c", 1);
    check_dnn(l, MPV_CONV_FWD, 0, 1, 0, 8, 8, 8, 1, GWS);
    CU_ASSERT_EQUAL(l->p.dnn.dh, 2);
    CU_ASSERT_EQUAL(l->p.dnn.pl, 2);
    CU_ASSERT_EQUAL(l->p.dnn.has_bias, 1);
    /* d's pads (bottom/right only): im2col of one image, C*kh*kw*OH*OW
     * floats */
    l = launches_of(p, "d", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_CONV);
    CU_ASSERT_EQUAL(l->workspace, 8u * 4u * 25u * 4u);

    /* a's gradient: x is a graph input, so dw1 (backward filter from the
     * saved x) and db1 [8] = dy summed over 2 x 9 x 9 */
    int sx = slot_of(p, "a/grad", "x");
    CU_ASSERT(sx > 0);
    l = launches_of(p, "a/grad", 2);
    check_dnn(&l[0], MPV_CONV_BWD_FILTER, 0, sx, 0, 4, 8, 1, 1, GWS);
    CU_ASSERT_EQUAL(l[1].kind, MPV_L_GRAD_PW);
    CU_ASSERT_EQUAL(l[1].in[0], 0);
    CU_ASSERT_EQUAL(l[1].out, 1);
    CU_ASSERT_EQUAL(l[1].p.gpw.rank, 3);
    CU_ASSERT_EQUAL(l[1].p.gpw.n, 8);
    CU_ASSERT_EQUAL(l[1].p.gpw.m, 2 * 81);
    CU_ASSERT_EQUAL(l[1].p.gpw.red[0], 1);
    CU_ASSERT_EQUAL(l[1].p.gpw.red[1], 0);
    CU_ASSERT_EQUAL(l[1].p.gpw.red[2], 1);
    CU_ASSERT_EQUAL(l[1].p.gpw.st[0][0], 8 * 81);
    CU_ASSERT_EQUAL(l[1].p.gpw.st[0][1], 81);
    CU_ASSERT_EQUAL(l[1].p.gpw.st[0][2], 1);
    CU_ASSERT_DOUBLE_EQUAL(l[1].p.gpw.alpha, 1.0, 0);

    /* b's gradient: dh2 (backward data from w2), dw2 (from h2); grouped */
    int sh2 = slot_of(p, "b/grad", "h2"), sw2 = slot_of(p, "b/grad", "w2");
    CU_ASSERT(sh2 > 0 && sw2 > 0);
    l = launches_of(p, "b/grad", 2);
    check_dnn(&l[0], MPV_CONV_BWD_DATA, 0, sw2, 0, 8, 8, 4, 1, GWS);
    check_dnn(&l[1], MPV_CONV_BWD_FILTER, 0, sh2, 1, 8, 8, 4, 1, GWS);
    CU_ASSERT_EQUAL(l[1].p.dnn.sh, 2);

    /* c's (depthwise, with a bias): three launches */
    l = launches_of(p, "c/grad", 3);
    check_dnn(&l[0], MPV_CONV_BWD_DATA, 0, slot_of(p, "c/grad", "w3"), 0, 8,
              8, 8, 1, GWS);
    check_dnn(&l[1], MPV_CONV_BWD_FILTER, 0, slot_of(p, "c/grad", "h3"), 1,
              8, 8, 8, 1, GWS);
    CU_ASSERT_EQUAL(l[2].kind, MPV_L_GRAD_PW);
    CU_ASSERT_EQUAL(l[2].out, 2);
    CU_ASSERT_EQUAL(l[2].p.gpw.n, 8);
    CU_ASSERT_EQUAL(l[2].p.gpw.m, 2 * 25);

    /* d's: bottom/right pads cuDNN cannot express: the direct kernels,
     * no workspace */
    l = launches_of(p, "d/grad", 2);
    check_dnn(&l[0], MPV_CONV_BWD_DATA, 0, slot_of(p, "d/grad", "w4"), 0, 8,
              4, 1, 0, 0);
    check_dnn(&l[1], MPV_CONV_BWD_FILTER, 0, slot_of(p, "d/grad", "h4"), 1,
              8, 4, 1, 0, 0);
    CU_ASSERT_EQUAL(l[0].p.dnn.pt, 0);
    CU_ASSERT_EQUAL(l[0].p.dnn.oh, 5);
    CU_ASSERT_EQUAL(l[0].p.dnn.h, 5);

    /* the program's workspace: the largest launch's */
    uint64_t most = 0;
    for (uint32_t i = 0; i < p->n_launches; i++)
        if (p->launches[i].workspace > most)
            most = p->launches[i].workspace;
    CU_ASSERT(most > 2u << 20);
    CU_ASSERT_EQUAL(p->workspace_bytes, most);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* The direct convolution passes (conv_direct.h, the executor's kernels
 * where cuDNN cannot run a pass), on the CPU: groups, strides,
 * dilations, top/left pads and bottom/right ones that differ. The
 * forward against the sum over an explicitly padded input; the input and
 * weight gradients as its adjoints: <conv(x), dy> = <x, dx(dy)> =
 * <w, dw(dy, x)>. */
static void test_conv_direct(void)
{
    /* x [2, 4, 7, 6], w [6, 2, 3, 2], groups 2, strides 2, 1, dilations
     * 1, 2, pads top 1, left 0, bottom 2, right 1: y [2, 6, 4, 5] */
    enum { N = 2, C = 4, H = 7, W = 6, M = 6, G = 2, KH = 3, KW = 2,
           OH = 4, OW = 5, PT = 1, PL = 0, PB = 2, PR = 1 };
    mpv_launch l;
    memset(&l, 0, sizeof l);
    l.kind = MPV_L_CONV_DNN;
    l.p.dnn.n = N, l.p.dnn.c = C, l.p.dnn.h = H, l.p.dnn.w = W;
    l.p.dnn.m = M, l.p.dnn.oh = OH, l.p.dnn.ow = OW, l.p.dnn.kh = KH;
    l.p.dnn.kw = KW, l.p.dnn.sh = 2, l.p.dnn.sw = 1, l.p.dnn.dh = 1;
    l.p.dnn.dw = 2, l.p.dnn.pt = PT, l.p.dnn.pl = PL, l.p.dnn.g = G;
    enum { NX = N * C * H * W, NW = M * (C / G) * KH * KW,
           NY = N * M * OH * OW, HP = H + PT + PB, WP = W + PL + PR };
    static float x[NX], w[NW], b[M], y[NY], dy[NY], dx[NX], dw[NW];
    static double xp[N][C][HP][WP];
    uint64_t r = 12345;
    for (int i = 0; i < NX; i++)
        x[i] = (float)((r = r * 6364136223846793005u + 1442695040888963407u)
                       >> 40) / (float)(1 << 24) - 0.5f;
    for (int i = 0; i < NW; i++)
        w[i] = (float)((r = r * 6364136223846793005u + 1) >> 40) /
                   (float)(1 << 24) - 0.5f;
    for (int i = 0; i < NY; i++)
        dy[i] = (float)((r = r * 6364136223846793005u + 1) >> 40) /
                    (float)(1 << 24) - 0.5f;
    for (int i = 0; i < M; i++)
        b[i] = (float)i;
    /* the output size as ONNX gives it */
    CU_ASSERT_EQUAL((H + PT + PB - 3) / 2 + 1, OH);
    CU_ASSERT_EQUAL((W + PL + PR - 3) / 1 + 1, OW);
    memset(xp, 0, sizeof xp);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++)
                    xp[n][c][i + PT][j + PL] = x[((n * C + c) * H + i) * W + j];
    double worst = 0, ydy = 0, xdx = 0, wdw = 0;
    for (int i = 0; i < NY; i++) {
        y[i] = mpv_conv_fwd_at(&l, x, w, b, i);
        int q = i % OW, o = i / OW % OH, m = i / (OW * OH) % M,
            n = i / (OW * OH * M);
        double ref = b[m];
        for (int c = 0; c < C / G; c++)
            for (int kh = 0; kh < KH; kh++)
                for (int kw = 0; kw < KW; kw++)
                    ref += xp[n][m / (M / G) * (C / G) + c][o * 2 + kh]
                             [q + kw * 2] *
                           w[((m * (C / G) + c) * KH + kh) * KW + kw];
        if (fabs(y[i] - ref) > worst)
            worst = fabs(y[i] - ref);
        ydy += (double)(mpv_conv_fwd_at(&l, x, w, NULL, i)) * dy[i];
    }
    CU_ASSERT(worst < 1e-5);
    for (int i = 0; i < NX; i++) {
        dx[i] = mpv_conv_bwd_data_at(&l, dy, w, i);
        xdx += (double)x[i] * dx[i];
    }
    for (int i = 0; i < NW; i++) {
        dw[i] = mpv_conv_bwd_filter_at(&l, dy, x, i);
        wdw += (double)w[i] * dw[i];
    }
    CU_ASSERT(fabs(ydy) > 0.1);
    CU_ASSERT(fabs(xdx - ydy) < 1e-4 * fabs(ydy));
    CU_ASSERT(fabs(wdw - ydy) < 1e-4 * fabs(ydy));
    /* and element by element: dx[0, 1, 2, 3] and dw[4, 1, 2, 0] by hand
     * (channel 1 is in group 0: outputs 0..2; input row 2 = o * 2 - 1 +
     * kh: (o, kh) = (1, 1) or (0, 3: outside); column 3 = q + 2 kw: (q,
     * kw) = (3, 0), (1, 1)) */
    double ref = 0;
    for (int m = 0; m < 3; m++) {
        ref += dy[((0 * M + m) * OH + 1) * OW + 3] *
               w[((m * 2 + 1) * KH + 1) * KW + 0];
        ref += dy[((0 * M + m) * OH + 1) * OW + 1] *
               w[((m * 2 + 1) * KH + 1) * KW + 1];
    }
    CU_ASSERT(fabs(dx[((0 * C + 1) * H + 2) * W + 3] - ref) < 1e-5);
    /* dw[4, 1, 2, 0]: output channel 4 in group 1 reads input channel 3;
     * tap (2, 0) at output (o, q) reads row o * 2 + 1, column q */
    ref = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OH; o++)
            for (int q = 0; q < OW; q++)
                if (o * 2 + 1 < H && q < W)
                    ref += dy[((n * M + 4) * OH + o) * OW + q] *
                           x[((n * C + 3) * H + o * 2 + 1) * W + q];
    CU_ASSERT(fabs(dw[((4 * 2 + 1) * KH + 2) * KW + 0] - ref) < 1e-5);
}

/* The cost model's workspace of a convolution pass: x + y + max(x, y) /
 * 2 + w + 2 MiB (y the output or its gradient), which holds what cuDNN's
 * deterministic engines wanted on the H200 (the forward's TF32 ones
 * too); 0 for an invalid shape */
static void test_conv_workspace(void)
{
    const uint64_t mib = 1u << 20;
    /* resnet's last 3x3 conv at batch 8: 512 x 512 x 9 floats (9 MiB),
     * 8 x 7 x 7 = 392 positions: one copy */
    mp__conv_shape s = {8, 512, 7, 7, 512, 7, 7, 3, 3, 1};
    /* x = dy = 8 x 512 x 49 floats (784 KiB), w 9 MiB: 784 + 784 + 392
     * KiB + 9 MiB + 2 MiB */
    const uint64_t kib = 1024, xs = 8u * 512u * 49u * 4u;
    CU_ASSERT_EQUAL(xs, 784u * kib);
    CU_ASSERT_EQUAL(mp__conv_workspace(&s, MP__CONV_BWD_DATA),
                    xs + xs + xs / 2 + 512u * 512u * 9u * 4u + 2 * mib);
    CU_ASSERT_EQUAL(mp__conv_workspace(&s, MP__CONV_BWD_FILTER),
                    mp__conv_workspace(&s, MP__CONV_BWD_DATA));
    CU_ASSERT_EQUAL(mp__conv_workspace(&s, MP__CONV_FWD),
                    mp__conv_workspace(&s, MP__CONV_BWD_DATA));
    /* the H200's largest want at batch 8: a strided depthwise 5x5 of
     * efficientnet_b0, 8 x 144 x 56 x 56 -> 28 x 28, 24586830 bytes */
    mp__conv_shape d = {8, 144, 56, 56, 144, 28, 28, 5, 5, 144};
    CU_ASSERT(mp__conv_workspace(&d, MP__CONV_BWD_FILTER) >= 24586830u);
    /* a 1x1 of 8 x 112 x 14 x 14 -> 672: 5218336 wanted */
    mp__conv_shape u = {8, 112, 14, 14, 672, 14, 14, 1, 1, 1};
    CU_ASSERT(mp__conv_workspace(&u, MP__CONV_BWD_FILTER) >= 5218336u);
    mp__conv_shape bad = {8, 6, 7, 7, 4, 7, 7, 3, 3, 4}; /* 6 % 4 */
    CU_ASSERT_EQUAL(mp__conv_workspace(&bad, MP__CONV_FWD), 0u);
    CU_ASSERT_EQUAL(mp__conv_workspace(&s, 3), 0u);
}

/* ---- training: normalization and pooling --------------------------------- */

/* the name of output slot o of node `node` */
static const char *out_name(const mpv_program *p, const char *node, int o)
{
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(p->graph, node, &id), MP_OK);
    const mp__node *n = &p->graph->nodes[id];
    CU_ASSERT_FATAL(o >= 0 && (uint32_t)o < n->n_out);
    return p->graph->tensors[n->outputs[o]].name;
}

#define HAS_PREFIX(s, pre) (strncmp((s), (pre), strlen(pre)) == 0)

/* x[2,4,6,6] * w[4,6,6] -> h -> BatchNormalization (training: y and the
 * running statistics) -> y; MaxPool(y; 3x3 /2 pad 1) -> m [2,4,3,3];
 * AveragePool(y; 2x2 /2) -> a [2,4,3,3]; m + a -> z -> GlobalAveragePool
 * -> q [2,4,1,1] -> LayerNormalization(axis 1; ls, lb [4,1,1]) -> o */
static mp_graph *norm_pool_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {2, 4, 6, 6}, dw[] = {4, 6, 6}, d4[] = {4},
            dp[] = {2, 4, 3, 3}, dq[] = {2, 4, 1, 1}, dl[] = {4, 1, 1};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 4, dx);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 3, dw);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 4, dx);
    uint32_t bp[4];
    const char *bn_names[4] = {"g", "b", "rm", "rv"};
    for (int i = 0; i < 4; i++)
        bp[i] = mp_test_tensor(g, bn_names[i], MP_KIND_WEIGHT, 1, d4);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 4, dx);
    uint32_t rmo = mp_test_tensor(g, "rm_out", MP_KIND_ACTIVATION, 1, d4);
    uint32_t rvo = mp_test_tensor(g, "rv_out", MP_KIND_ACTIVATION, 1, d4);
    uint32_t m = mp_test_tensor(g, "m", MP_KIND_ACTIVATION, 4, dp);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_ACTIVATION, 4, dp);
    uint32_t z = mp_test_tensor(g, "z", MP_KIND_ACTIVATION, 4, dp);
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_ACTIVATION, 4, dq);
    uint32_t ls = mp_test_tensor(g, "ls", MP_KIND_WEIGHT, 3, dl);
    uint32_t lb = mp_test_tensor(g, "lb", MP_KIND_WEIGHT, 3, dl);
    uint32_t o = mp_test_tensor(g, "o", MP_KIND_ACTIVATION, 4, dq);
    uint32_t im[] = {x, w}, ib[] = {h, bp[0], bp[1], bp[2], bp[3]},
             ob[] = {y, rmo, rvo}, iz[] = {m, a}, il[] = {q, ls, lb};
    mp_test_node(g, "mul", "Mul", im, 2, &h, 1);
    uint32_t bn = mp_test_node(g, "bn", "BatchNormalization", ib, 5, ob, 3);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, bn, "training_mode", 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_float(g, bn, "momentum", 0.8), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_float(g, bn, "epsilon", 1e-3), MP_OK);
    uint32_t mp = mp_test_node(g, "mp", "MaxPool", &y, 1, &m, 1);
    int64_t k3[] = {3, 3}, k2[] = {2, 2}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mp, "kernel_shape", k3, 2),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mp, "strides", s2, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mp, "pads", p1, 4), MP_OK);
    uint32_t ap = mp_test_node(g, "ap", "AveragePool", &y, 1, &a, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, ap, "kernel_shape", k2, 2),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, ap, "strides", s2, 2), MP_OK);
    mp_test_node(g, "add", "Add", iz, 2, &z, 1);
    mp_test_node(g, "gap", "GlobalAveragePool", &z, 1, &q, 1);
    uint32_t ln = mp_test_node(g, "ln", "LayerNormalization", il, 3, &o, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, ln, "axis", 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

/* The training step of norm_pool_net: BatchNormalization's training form
 * writes y, the running statistics and the saved ones; MaxPool its
 * indices; LayerNormalization its statistics; their backward nodes and
 * the pools' read the slots the attributes name; no synthetic kernel */
static void test_train_norm_pool(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = norm_pool_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    to.train_all_weights = 1; /* its scalars and running statistics */
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    CU_ASSERT_EQUAL(p->n_bwd_synthetic, 0);
    CU_ASSERT_EQUAL(p->workspace_bytes, 256u); /* none of their own */

    /* forward BatchNormalization: y, rm_out, rv_out, then bn/stats */
    const mpv_launch *l = launches_of(p, "bn", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_BN_TRAIN);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->in[3], 3);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.bnt.n, 2);
    CU_ASSERT_EQUAL(l->p.bnt.c, 4);
    CU_ASSERT_EQUAL(l->p.bnt.hw, 36);
    CU_ASSERT_EQUAL(l->p.bnt.training, 1);
    CU_ASSERT_DOUBLE_EQUAL(l->p.bnt.momentum, 0.8, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(l->p.bnt.eps, 1e-3, 1e-12);
    CU_ASSERT_EQUAL(l->p.bnt.rm_out, 1);
    CU_ASSERT_EQUAL(l->p.bnt.rv_out, 2);
    CU_ASSERT_EQUAL(l->p.bnt.stats_out, 3);
    CU_ASSERT_STRING_EQUAL(out_name(p, "bn", 3), "bn/stats");

    /* its backward: dy, then x (h), the scale, the statistics; the
     * gradients of h, g, b and (zero in training) rm and rv */
    l = launches_of(p, "bn/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_BN_GRAD);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->p.bngrad.x, slot_of(p, "bn/grad", "h"));
    CU_ASSERT_EQUAL(l->p.bngrad.scale, slot_of(p, "bn/grad", "g"));
    CU_ASSERT_EQUAL(l->p.bngrad.stats, slot_of(p, "bn/grad", "bn/stats"));
    CU_ASSERT(l->p.bngrad.x > 0 && l->p.bngrad.stats > 0);
    CU_ASSERT_EQUAL(l->p.bngrad.rm, slot_of(p, "bn/grad", "rm"));
    CU_ASSERT_EQUAL(l->p.bngrad.training, 1);
    CU_ASSERT_EQUAL(l->p.bngrad.n * l->p.bngrad.c * l->p.bngrad.hw, 288);
    CU_ASSERT(HAS_PREFIX(out_name(p, "bn/grad", l->p.bngrad.dx), "d/h"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "bn/grad", l->p.bngrad.dscale), "d/g"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "bn/grad", l->p.bngrad.dbias), "d/b"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "bn/grad", l->p.bngrad.drm), "d/rm"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "bn/grad", l->p.bngrad.drv), "d/rv"));

    /* MaxPool writes its indices (output 1), its backward reads them */
    l = launches_of(p, "mp", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_POOL);
    CU_ASSERT_EQUAL(l->p.pool.idx_out, 1);
    CU_ASSERT_STRING_EQUAL(out_name(p, "mp", 1), "mp/indices");
    l = launches_of(p, "mp/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_POOL_GRAD);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.pgrad.op, MP__KOP_POOL_MAX);
    CU_ASSERT_EQUAL(l->p.pgrad.idx, slot_of(p, "mp/grad", "mp/indices"));
    CU_ASSERT_EQUAL(l->p.pgrad.x, slot_of(p, "mp/grad", "y"));
    CU_ASSERT(l->p.pgrad.idx > 0);
    CU_ASSERT_EQUAL(l->p.pgrad.nc, 8);
    CU_ASSERT_EQUAL(l->p.pgrad.h, 6);
    CU_ASSERT_EQUAL(l->p.pgrad.w, 6);
    CU_ASSERT_EQUAL(l->p.pgrad.oh, 3);
    CU_ASSERT_EQUAL(l->p.pgrad.ow, 3);
    CU_ASSERT_EQUAL(l->p.pgrad.kh, 3);
    CU_ASSERT_EQUAL(l->p.pgrad.sh, 2);
    CU_ASSERT_EQUAL(l->p.pgrad.pt, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.pl, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.dh, 1);

    /* AveragePool: no saved tensor read */
    l = launches_of(p, "ap/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_POOL_GRAD);
    CU_ASSERT_EQUAL(l->p.pgrad.op, MP__KOP_POOL_AVG);
    CU_ASSERT_EQUAL(l->p.pgrad.idx, -1);
    CU_ASSERT_EQUAL(l->p.pgrad.x, -1);
    CU_ASSERT_EQUAL(l->p.pgrad.kh, 2);
    CU_ASSERT_EQUAL(l->p.pgrad.pt, 0);
    CU_ASSERT_EQUAL(l->p.pgrad.count_pad, 0);

    /* GlobalAveragePool: one window of the whole 3x3 plane */
    l = launches_of(p, "gap/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_POOL_GRAD);
    CU_ASSERT_EQUAL(l->p.pgrad.op, MP__KOP_POOL_AVG);
    CU_ASSERT_EQUAL(l->p.pgrad.nc, 8);
    CU_ASSERT_EQUAL(l->p.pgrad.h, 9);
    CU_ASSERT_EQUAL(l->p.pgrad.w, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.kh, 9);
    CU_ASSERT_EQUAL(l->p.pgrad.kw, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.oh, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.ow, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.sh, 1);

    /* LayerNormalization over axis 1: 2 rows of 4; statistics [2, 2] */
    l = launches_of(p, "ln", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_LN);
    CU_ASSERT_EQUAL(l->p.ln.rows, 2);
    CU_ASSERT_EQUAL(l->p.ln.cols, 4);
    CU_ASSERT_EQUAL(l->p.ln.stats_out, 1);
    CU_ASSERT_EQUAL(l->p.ln.mean_out, -1);
    CU_ASSERT_EQUAL(l->p.ln.inv_out, -1);
    CU_ASSERT_STRING_EQUAL(out_name(p, "ln", 1), "ln/stats");
    l = launches_of(p, "ln/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_LN_GRAD);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->workspace, 0u);
    CU_ASSERT_EQUAL(l->p.lngrad.rows, 2);
    CU_ASSERT_EQUAL(l->p.lngrad.cols, 4);
    CU_ASSERT_EQUAL(l->p.lngrad.parts, 1); /* summed in one part */
    CU_ASSERT_EQUAL(l->p.lngrad.chunk, 2);
    CU_ASSERT_EQUAL(l->p.lngrad.x, slot_of(p, "ln/grad", "q"));
    CU_ASSERT_EQUAL(l->p.lngrad.scale, slot_of(p, "ln/grad", "ls"));
    CU_ASSERT_EQUAL(l->p.lngrad.stats, slot_of(p, "ln/grad", "ln/stats"));
    CU_ASSERT(l->p.lngrad.stats > 0);
    CU_ASSERT(HAS_PREFIX(out_name(p, "ln/grad", l->p.lngrad.dx), "d/q"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "ln/grad", l->p.lngrad.dscale), "d/ls"));
    CU_ASSERT(HAS_PREFIX(out_name(p, "ln/grad", l->p.lngrad.dbias), "d/lb"));
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* a backward node (domain memplan, phase backward) with the attributes
 * planner/train.c gives it */
static uint32_t grad_node_of(mp_graph *g, const char *name, const char *op,
                             const uint32_t *in, uint32_t nin,
                             const uint32_t *out, uint32_t nout,
                             const int64_t *saved, uint32_t nsaved)
{
    mp_node_desc d = {name, op, "memplan", in, nin, out, nout,
                      MP_PHASE_BACKWARD};
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &d, &id), MP_OK);
    int64_t dy[] = {0}, dx[8], reads[8];
    for (uint32_t j = 0; j < nout; j++) {
        dx[j] = j;
        reads[j] = 1;
    }
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, id, "grad_dy", dy, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, id, "grad_saved", saved,
                                           nsaved), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, id, "grad_dx", dx, nout),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, id, "grad_dx_reads", reads,
                                           nout), MP_OK);
    return id;
}

/* Backward nodes without their saved statistics or indices: LayerNorm
 * recomputes the statistics into its workspace; MaxPool the argmax from
 * x; BatchNormalization (inference form) reads the running ones, (training
 * form) recomputes the batch's; a node reading neither x nor the indices
 * stays synthetic */
static void test_train_norm_unsaved(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t d2[] = {1024, 8}, d8[] = {8}, dx[] = {1, 2, 4, 4},
            dy[] = {1, 2, 2, 2},
            dc[] = {2};
    /* LayerNormalizationGrad(dy, x, scale) -> dx, dscale */
    uint32_t ldy = mp_test_tensor(g, "ldy", MP_KIND_INPUT, 2, d2);
    uint32_t lx = mp_test_tensor(g, "lx", MP_KIND_INPUT, 2, d2);
    uint32_t ls = mp_test_tensor(g, "ls", MP_KIND_WEIGHT, 1, d8);
    uint32_t ldx = mp_test_tensor(g, "ldx", MP_KIND_OUTPUT, 2, d2);
    uint32_t lds = mp_test_tensor(g, "lds", MP_KIND_OUTPUT, 1, d8);
    uint32_t li[] = {ldy, lx, ls}, lo[] = {ldx, lds};
    int64_t ln_saved[] = {0, 1};
    grad_node_of(g, "lng", "LayerNormalizationGrad", li, 3, lo, 2,
                 ln_saved, 2);
    /* MaxPoolGrad(dy, x) -> dx (2x2 /2) */
    uint32_t mdy = mp_test_tensor(g, "mdy", MP_KIND_INPUT, 4, dy);
    uint32_t mx = mp_test_tensor(g, "mx", MP_KIND_INPUT, 4, dx);
    uint32_t mdx = mp_test_tensor(g, "mdx", MP_KIND_OUTPUT, 4, dx);
    uint32_t mi[] = {mdy, mx};
    int64_t mp_saved[] = {0}, k2[] = {2, 2};
    uint32_t mpg = grad_node_of(g, "mpg", "MaxPoolGrad", mi, 2, &mdx, 1,
                                mp_saved, 1);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mpg, "kernel_shape", k2, 2),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mpg, "strides", k2, 2), MP_OK);
    /* MaxPoolGrad(dy) -> dx: nothing to find the maximum from */
    uint32_t mdx2 = mp_test_tensor(g, "mdx2", MP_KIND_OUTPUT, 4, dx);
    uint32_t mpg2 = grad_node_of(g, "mpg2", "MaxPoolGrad", &mdy, 1, &mdx2,
                                 1, NULL, 0);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mpg2, "kernel_shape", k2, 2),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, mpg2, "strides", k2, 2), MP_OK);
    /* BatchNormalizationGrad(dy, x, scale, bias, rm, rv) -> dx, in the
     * inference form, then the training form */
    uint32_t bp[4], bdx[2];
    const char *nm[4] = {"bs", "bb", "brm", "brv"};
    for (int i = 0; i < 4; i++)
        bp[i] = mp_test_tensor(g, nm[i], MP_KIND_WEIGHT, 1, dc);
    bdx[0] = mp_test_tensor(g, "bdx", MP_KIND_OUTPUT, 4, dx);
    bdx[1] = mp_test_tensor(g, "bdx2", MP_KIND_OUTPUT, 4, dx);
    uint32_t bi[] = {mx, mx, bp[0], bp[1], bp[2], bp[3]};
    int64_t bn_saved[] = {0, 1, 2, 3, 4};
    uint32_t bng = grad_node_of(g, "bng", "BatchNormalizationGrad", bi, 6,
                                &bdx[0], 1, bn_saved, 5);
    uint32_t bng2 = grad_node_of(g, "bng2", "BatchNormalizationGrad", bi, 6,
                                 &bdx[1], 1, bn_saved, 5);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, bng2, "training_mode", 1),
                    MP_OK);
    (void)bng;
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(g, plan, &p), MP_OK);

    const mpv_launch *l = launches_of(p, "lng", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_LN_GRAD);
    CU_ASSERT_EQUAL(l->p.lngrad.stats, -1);
    CU_ASSERT_EQUAL(l->p.lngrad.rows, 1024);
    CU_ASSERT_EQUAL(l->p.lngrad.cols, 8);
    CU_ASSERT_EQUAL(l->p.lngrad.dx, 0);
    CU_ASSERT_EQUAL(l->p.lngrad.dscale, 1);
    CU_ASSERT_EQUAL(l->p.lngrad.dbias, -1);
    /* the rows' sums in 4 parts of 256 rows (8 lanes of 32) */
    CU_ASSERT_EQUAL(l->p.lngrad.parts, 4);
    CU_ASSERT_EQUAL(l->p.lngrad.chunk, 256);
    /* the mean and 1/std per row, then 2 sums per column per part */
    CU_ASSERT_EQUAL(l->workspace, 2u * 1024u * 4u + 4u * 2u * 8u * 4u);
    CU_ASSERT(p->workspace_bytes >= l->workspace);

    l = launches_of(p, "mpg", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_POOL_GRAD);
    CU_ASSERT_EQUAL(l->p.pgrad.idx, -1);
    CU_ASSERT_EQUAL(l->p.pgrad.x, 1);
    CU_ASSERT_EQUAL(l->p.pgrad.oh, 2);
    CU_ASSERT_EQUAL(l->p.pgrad.kh, 2);
    CU_ASSERT_EQUAL(l->p.pgrad.sh, 2);
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g, "mpg2", &id), MP_OK);
    CU_ASSERT_EQUAL(p->nodes[id].synthetic, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p->nodes[id].why, "neither"));

    l = launches_of(p, "bng", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_BN_GRAD);
    CU_ASSERT_EQUAL(l->p.bngrad.training, 0);
    CU_ASSERT_EQUAL(l->p.bngrad.stats, -1);
    CU_ASSERT_EQUAL(l->p.bngrad.rm, 4);
    CU_ASSERT_EQUAL(l->p.bngrad.rv, 5);
    CU_ASSERT_EQUAL(l->p.bngrad.dx, 0);
    CU_ASSERT_EQUAL(l->p.bngrad.dscale, -1);
    CU_ASSERT_EQUAL(l->p.bngrad.c, 2);
    CU_ASSERT_EQUAL(l->p.bngrad.hw, 16);
    l = launches_of(p, "bng2", 1);
    CU_ASSERT_EQUAL(l->p.bngrad.training, 1);
    CU_ASSERT_EQUAL(l->p.bngrad.stats, -1);
    CU_ASSERT_EQUAL(l->workspace, 0u); /* a block per channel recomputes */
    CU_ASSERT_EQUAL(p->n_synthetic, 1);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- attention backward and optimizer steps ------------------------------ */

/* x [2,16,8] -> MatMul Wq [8,8] -> q; Mul(q, a), Mul(kT, a) with one
 * scalar weight a (as GPT-2's exports scale Q and K^T by one
 * initializer); MatMul -> Add the weight mask [1,16,16] -> Softmax ->
 * MatMul v: fused (Q q, K^T kT, the scalars a and a), every operand
 * trained */
static mp_graph *attn_train_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dx[] = {2, 16, 8}, dw[] = {8, 8}, dk[] = {2, 8, 16},
            dm[] = {1, 16, 16};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 3, dx);
    uint32_t wq = mp_test_tensor(g, "Wq", MP_KIND_WEIGHT, 2, dw);
    uint32_t kt = mp_test_tensor(g, "kT", MP_KIND_WEIGHT, 3, dk);
    uint32_t v = mp_test_tensor(g, "v", MP_KIND_WEIGHT, 3, dx);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_WEIGHT, 0, NULL);
    uint32_t m = mp_test_tensor(g, "mask", MP_KIND_WEIGHT, 3, dm);
    uint32_t t[7];
    const char *nm[7] = {"q", "qs", "ks", "s", "sm", "p", "o"};
    for (int i = 0; i < 7; i++)
        t[i] = mp_test_tensor(g, nm[i], MP_KIND_ACTIVATION, -1, NULL);
    uint32_t i0[] = {x, wq}, i1[] = {t[0], a}, i2[] = {kt, a},
             i3[] = {t[1], t[2]}, i4[] = {t[3], m}, i6[] = {t[5], v};
    mp_test_node(g, "mmq", "MatMul", i0, 2, &t[0], 1);
    mp_test_node(g, "sq", "Mul", i1, 2, &t[1], 1);
    mp_test_node(g, "sk", "Mul", i2, 2, &t[2], 1);
    mp_test_node(g, "qk", "MatMul", i3, 2, &t[3], 1);
    mp_test_node(g, "mask_add", "Add", i4, 2, &t[4], 1);
    mp_test_node(g, "softmax", "Softmax", &t[4], 1, &t[5], 1);
    mp_test_node(g, "pv", "MatMul", i6, 2, &t[6], 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, t[6]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

/* The fused attention's backward: four launches (per query row, per
 * key, per mask element, the scalars) reading the slots of the forward's
 * inputs, output, log-sum-exp and output gradient, writing dQ, dK^T, dV,
 * the mask's gradient and the scalar's (read at positions 4 and 5, the
 * two gradients summed) through the node's workspace output */
static void test_train_attention(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = attn_train_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    to.train_all_weights = 1; /* its scalars and running statistics */
    to.attention = MP_ATTENTION_FUSED;
    mp_train_breakdown br;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, &br), MP_OK);
    CU_ASSERT_EQUAL(br.n_attention_fused, 1);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    uint32_t gid = MP_NONE, fid = MP_NONE;
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        if (strcmp(t->nodes[v].op, "ScaledDotProductAttentionGrad") == 0)
            gid = v;
        if (strcmp(t->nodes[v].op, "ScaledDotProductAttention") == 0)
            fid = v;
    }
    CU_ASSERT_FATAL(gid != MP_NONE && fid != MP_NONE);
    const mp__node *gn = &t->nodes[gid], *fn = &t->nodes[fid];
    /* the forward reads a at positions 4 and 5 */
    CU_ASSERT_EQUAL_FATAL(fn->n_in, 6);
    CU_ASSERT_EQUAL(fn->inputs[4], fn->inputs[5]);
    const mp__attr *rd = mp__node_attr(gn, "grad_dx_reads");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
    const mpv_launch *l = launches_of(p, gn->name, 4);
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_ATTN_BWD_Q);
    CU_ASSERT_EQUAL(l[1].kind, MPV_L_ATTN_BWD_KV);
    CU_ASSERT_EQUAL(l[2].kind, MPV_L_ATTN_BWD_MASK);
    CU_ASSERT_EQUAL(l[3].kind, MPV_L_ATTN_BWD_SCALARS);
    const char *fwd_in[6] = {"q", "kT", "v", "mask", "a", "a"};
#define PA (l[k].p.attn)
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_EQUAL(PA.bh, 2);
        CU_ASSERT_EQUAL(PA.tq, 16);
        CU_ASSERT_EQUAL(PA.tk, 16);
        CU_ASSERT_EQUAL(PA.d, 8);
        CU_ASSERT_EQUAL(PA.dv, 8);
        CU_ASSERT_EQUAL(PA.mask_kind, 1);
        /* the mask [1,16,16] over the scores [2,16,16] */
        CU_ASSERT_EQUAL(PA.mst[0], 0);
        CU_ASSERT_EQUAL(PA.mst[1], 16);
        CU_ASSERT_EQUAL(PA.mst[2], 1);
        for (int i = 0; i < 6; i++) {
            CU_ASSERT_FATAL(PA.b_in[i] >= 0);
            CU_ASSERT_STRING_EQUAL(
                t->tensors[gn->inputs[PA.b_in[i]]].name, fwd_in[i]);
        }
        CU_ASSERT_EQUAL(PA.b_in[6], -1);
        CU_ASSERT_EQUAL(PA.b_in[7], -1);
        CU_ASSERT_EQUAL(PA.b_do, 0);
        CU_ASSERT_EQUAL(gn->inputs[PA.b_o], fn->outputs[0]);
        CU_ASSERT_EQUAL(gn->inputs[PA.b_lse], fn->outputs[1]);
        /* the gradients by the forward's positions, the workspace last */
        CU_ASSERT_EQUAL(gn->outputs[PA.b_dq] != MP_NONE, 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(
            t->tensors[gn->outputs[PA.b_dq]].name, "q"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            t->tensors[gn->outputs[PA.b_dk]].name, "kT"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            t->tensors[gn->outputs[PA.b_dv]].name, "v"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            t->tensors[gn->outputs[PA.b_dm]].name, "mask"));
        CU_ASSERT_FATAL(PA.b_sg[0] >= 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(
            t->tensors[gn->outputs[PA.b_sg[0]]].name, "a"));
        CU_ASSERT_EQUAL(PA.b_sgpos[0], 3); /* positions 4 and 5 */
        CU_ASSERT_EQUAL(PA.b_sg[1], -1);
        CU_ASSERT_EQUAL(PA.b_ws, (int32_t)gn->n_out - 1);
        CU_ASSERT_EQUAL(l[k].out, PA.b_ws);
        CU_ASSERT_EQUAL(l[k].workspace, 0);
    }
#undef PA
    CU_ASSERT_EQUAL(p->nodes[gid].synthetic, 0);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* a program of train_net's training graph with optimizer o, impl im */
static mpv_program *opt_program(mp_ctx *ctx, mp_optimizer o,
                                mp_optimizer_impl im, mp_graph **f,
                                mp_graph **t, mp_plan **plan)
{
    *f = train_net(ctx);
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = o;
    to.optimizer_impl = im;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(*f, &to, t, NULL), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(*t, NULL, plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(*t, *plan, &p), MP_OK);
    return p;
}

static void opt_free(mpv_program *p, mp_graph *f, mp_graph *t, mp_plan *pl)
{
    mpv_program_destroy(p);
    mp_plan_destroy(pl);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
}

/* Adam, AdamW (foreach, for-loop) and momentum steps: one in-place
 * launch each with torch.optim's defaults; the foreach group's
 * temporary zeroed; the states zero in the initial weights */
static void test_train_optimizers(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f, *t;
    mp_plan *pl;
    /* Adam, foreach: the step reads the group's temporary, writes none */
    mpv_program *p = opt_program(ctx, MP_OPTIM_ADAM, MP_OPTIM_IMPL_FOREACH,
                                 &f, &t, &pl);
    CU_ASSERT_EQUAL(p->n_opt_synthetic, 0);
    CU_ASSERT_EQUAL(p->n_opt_real, 7); /* 6 weights and the foreach node */
    const mpv_launch *l = launches_of(p, "opt/W1", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_OPT_STEP);
    CU_ASSERT_EQUAL(l->p.opt.op, MP__KOP_OPT_ADAM);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(l->in[i], i);
    CU_ASSERT_EQUAL(slot_of(p, "opt/W1", "opt/W1/m"), 2);
    CU_ASSERT_EQUAL(slot_of(p, "opt/W1", "opt/W1/v"), 3);
    CU_ASSERT_EQUAL(slot_of(p, "opt/W1", "opt/foreach/tmp"), 4);
    CU_ASSERT_EQUAL(l->out, -1);
    CU_ASSERT_EQUAL(l->p.opt.n, 128);
    CU_ASSERT_EQUAL(l->p.opt.step, 1);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.lr, 1e-3, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.beta1, 0.9, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.beta2, 0.999, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.eps, 1e-8, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.weight_decay, 0, 0);
    l = launches_of(p, "opt/foreach", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.fill.zero_bytes, 1);
    /* the states start at zero, the weights do not */
    unsigned char *w = malloc(p->weights_bytes ? p->weights_bytes : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    mpv_weights_init(p, w, 7);
    uint32_t ms, w1;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "opt/W1/m", &ms), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(t, "W1", &w1), MP_OK);
    CU_ASSERT_FATAL(p->woff[ms] != UINT64_MAX && p->woff[w1] != UINT64_MAX);
    int zero = 1, nonzero = 0;
    for (uint64_t i = 0; i < t->tensors[ms].bytes; i++)
        zero &= w[p->woff[ms] + i] == 0;
    for (uint64_t i = 0; i < t->tensors[w1].bytes; i++)
        nonzero |= w[p->woff[w1] + i] != 0;
    CU_ASSERT(zero);
    CU_ASSERT(nonzero);
    free(w);
    opt_free(p, f, t, pl);
    /* AdamW, for-loop: the step's own temporary gets the denominator */
    p = opt_program(ctx, MP_OPTIM_ADAMW, MP_OPTIM_IMPL_FOR_LOOP, &f, &t, &pl);
    CU_ASSERT_EQUAL(p->n_opt_synthetic, 0);
    l = launches_of(p, "opt/W1", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_OPT_STEP);
    CU_ASSERT_EQUAL(l->p.opt.op, MP__KOP_OPT_ADAMW);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.weight_decay, 0.01, 0);
    opt_free(p, f, t, pl);
    /* fused: no temporary */
    p = opt_program(ctx, MP_OPTIM_ADAM, MP_OPTIM_IMPL_FUSED, &f, &t, &pl);
    CU_ASSERT_EQUAL(p->n_opt_synthetic, 0);
    l = launches_of(p, "opt/b2", 1);
    CU_ASSERT_EQUAL(l->out, -1);
    CU_ASSERT_EQUAL(l->p.opt.n, 2);
    opt_free(p, f, t, pl);
    /* momentum: one state */
    p = opt_program(ctx, MP_OPTIM_MOMENTUM, MP_OPTIM_IMPL_FOREACH, &f, &t,
                    &pl);
    CU_ASSERT_EQUAL(p->n_opt_synthetic, 0);
    l = launches_of(p, "opt/W2", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_OPT_STEP);
    CU_ASSERT_EQUAL(l->p.opt.op, MP__KOP_OPT_MOMENTUM);
    CU_ASSERT_EQUAL(l->in[2], 2);
    CU_ASSERT_EQUAL(l->in[3], -1);
    CU_ASSERT_EQUAL(l->out, -1);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.lr, 0.01, 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.opt.momentum, 0.9, 0);
    opt_free(p, f, t, pl);
    /* Adam8bit keeps the synthetic kernel */
    p = opt_program(ctx, MP_OPTIM_ADAM8BIT, MP_OPTIM_IMPL_FOREACH, &f, &t,
                    &pl);
    CU_ASSERT_EQUAL(p->n_opt_real, 0);
    CU_ASSERT(p->n_opt_synthetic > 0);
    opt_free(p, f, t, pl);
    mp_ctx_destroy(ctx);
}

/* ---- training: data movement, reductions, pointwise derivatives -------- */

/* a tensor of dtype dt (activations: shape from the node) */
static uint32_t dt_tensor(mp_graph *g, const char *name, mp_dtype dt,
                          mp_tensor_kind kind, int rank, const int64_t *dims)
{
    mp_tensor_desc d = {name, dt, rank, dims, 0, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

/* a constant of n known values (floats kept as a double's bits) */
static uint32_t const_tensor(mp_graph *g, const char *name, mp_dtype dt,
                             int rank, const int64_t *dims, const double *v,
                             uint32_t n)
{
    uint32_t id = dt_tensor(g, name, dt, MP_KIND_CONSTANT, rank, dims);
    int64_t iv[8];
    for (uint32_t k = 0; k < n; k++) {
        if (dt == MP_DTYPE_FLOAT32)
            memcpy(&iv[k], &v[k], sizeof iv[k]);
        else
            iv[k] = (int64_t)v[k];
    }
    CU_ASSERT_EQUAL(mp__tensor_set_value(mp_graph_ctx(g), &g->tensors[id],
                                         iv, n), MP_OK);
    return id;
}

/* x[4,6] * w -> a -> Transpose -> t [6,4] -> Sigmoid -> s; Gather(e
 * [10,4], idx [3] int64) -> gt [3,4]; Concat(s, gt) -> c [9,4] -> Split
 * (5, 4) -> c0, c1; Slice(c0, rows 1..4) -> sl [3,4]; Pad(c1, a column
 * each side) -> pd [4,6] -> ReduceMean(axis 1) -> rm [4] (output);
 * Expand(v [1,4]) -> ex [3,4]; Where(cond, sl, ex) -> wh -> Pow(wh, pe
 * []) -> pw -> Cast -> cs -> Erf -> HardSwish -> LeakyRelu(0.2) -> Neg
 * -> Clip(-0.5, 0.5) -> Gelu(tanh) -> u6 (output); w, e, v, pe
 * trainable */
static mp_graph *shape_net(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t d46[] = {4, 6}, d64[] = {6, 4}, d104[] = {10, 4}, d3[] = {3},
            d34[] = {3, 4}, d94[] = {9, 4}, d54[] = {5, 4}, d44[] = {4, 4},
            d4[] = {4}, d14[] = {1, 4}, d2[] = {2}, d1[] = {1};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, d46);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, d46);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_ACTIVATION, 2, d46);
    uint32_t t = mp_test_tensor(g, "t", MP_KIND_ACTIVATION, 2, d64);
    uint32_t s = mp_test_tensor(g, "s", MP_KIND_ACTIVATION, 2, d64);
    uint32_t e = mp_test_tensor(g, "e", MP_KIND_WEIGHT, 2, d104);
    uint32_t idx = dt_tensor(g, "idx", MP_DTYPE_INT64, MP_KIND_INPUT, 1, d3);
    uint32_t gt = mp_test_tensor(g, "gt", MP_KIND_ACTIVATION, 2, d34);
    uint32_t c = mp_test_tensor(g, "c", MP_KIND_ACTIVATION, 2, d94);
    uint32_t c0 = mp_test_tensor(g, "c0", MP_KIND_ACTIVATION, 2, d54);
    uint32_t c1 = mp_test_tensor(g, "c1", MP_KIND_ACTIVATION, 2, d44);
    uint32_t sl = mp_test_tensor(g, "sl", MP_KIND_ACTIVATION, 2, d34);
    uint32_t pd = mp_test_tensor(g, "pd", MP_KIND_ACTIVATION, 2, d46);
    uint32_t rm = mp_test_tensor(g, "rm", MP_KIND_ACTIVATION, 1, d4);
    uint32_t v = mp_test_tensor(g, "v", MP_KIND_WEIGHT, 2, d14);
    double shv[2] = {3, 4}, lo = -0.5, hi = 0.5;
    uint32_t shp = const_tensor(g, "shp", MP_DTYPE_INT64, 1, d2, shv, 2);
    uint32_t ex = mp_test_tensor(g, "ex", MP_KIND_ACTIVATION, 2, d34);
    uint32_t cond = dt_tensor(g, "cond", MP_DTYPE_BOOL, MP_KIND_INPUT, 2, d34);
    uint32_t wh = mp_test_tensor(g, "wh", MP_KIND_ACTIVATION, 2, d34);
    uint32_t pe = mp_test_tensor(g, "pe", MP_KIND_WEIGHT, 1, d1);
    uint32_t pw = mp_test_tensor(g, "pw", MP_KIND_ACTIVATION, 2, d34);
    uint32_t cs = mp_test_tensor(g, "cs", MP_KIND_ACTIVATION, 2, d34);
    uint32_t mn = const_tensor(g, "mn", MP_DTYPE_FLOAT32, 0, NULL, &lo, 1);
    uint32_t mx = const_tensor(g, "mx", MP_DTYPE_FLOAT32, 0, NULL, &hi, 1);
    uint32_t u[7];
    u[0] = cs;
    for (int i = 1; i <= 6; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "u%d", i);
        u[i] = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, d34);
    }
    uint32_t im[] = {x, w}, ig[] = {e, idx}, ic[] = {s, gt}, isp[] = {c0, c1},
             iex[] = {v, shp}, iw[] = {cond, sl, ex}, ip[] = {wh, pe},
             icl[] = {u[4], mn, mx};
    mp_test_node(g, "mul", "Mul", im, 2, &a, 1);
    uint32_t tr = mp_test_node(g, "tr", "Transpose", &a, 1, &t, 1);
    mp_test_node(g, "sig", "Sigmoid", &t, 1, &s, 1);
    mp_test_node(g, "gather", "Gather", ig, 2, &gt, 1);
    uint32_t cn = mp_test_node(g, "concat", "Concat", ic, 2, &c, 1);
    uint32_t sp = mp_test_node(g, "split", "Split", &c, 1, isp, 2);
    uint32_t sn = mp_test_node(g, "slice", "Slice", &c0, 1, &sl, 1);
    uint32_t pn = mp_test_node(g, "pad", "Pad", &c1, 1, &pd, 1);
    uint32_t rn = mp_test_node(g, "rmean", "ReduceMean", &pd, 1, &rm, 1);
    mp_test_node(g, "expand", "Expand", iex, 2, &ex, 1);
    mp_test_node(g, "where", "Where", iw, 3, &wh, 1);
    mp_test_node(g, "pow", "Pow", ip, 2, &pw, 1);
    uint32_t ca = mp_test_node(g, "cast", "Cast", &pw, 1, &cs, 1);
    mp_test_node(g, "erf", "Erf", &u[0], 1, &u[1], 1);
    mp_test_node(g, "hswish", "HardSwish", &u[1], 1, &u[2], 1);
    uint32_t lr = mp_test_node(g, "lrelu", "LeakyRelu", &u[2], 1, &u[3], 1);
    mp_test_node(g, "neg", "Neg", &u[3], 1, &u[4], 1);
    mp_test_node(g, "clip", "Clip", icl, 3, &u[5], 1);
    uint32_t ge = mp_test_node(g, "gelu", "Gelu", &u[5], 1, &u[6], 1);
    int64_t perm[] = {1, 0}, zero = 0, one = 1, split[] = {5, 4}, st = 1,
            en = 4, pads[] = {0, 1, 0, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tr, "perm", perm, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, cn, "axis", 0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, sp, "axis", 0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sp, "split", split, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "starts", &st, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "ends", &en, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sn, "axes", &zero, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, pn, "pads", pads, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, rn, "axes", &one, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, rn, "keepdims", 0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, ca, "to", MP_DTYPE_FLOAT32),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_float(g, lr, "alpha", 0.25), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_string(g, ge, "approximate", "tanh"),
                    MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, rm), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, u[6]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

static void check_copy(const mpv_launch *l, int in, int out, int64_t d0,
                       int64_t d1, const int64_t *ist, const int64_t *ost,
                       int64_t ioff, int64_t ooff)
{
    CU_ASSERT_EQUAL(l->kind, MPV_L_COPY);
    CU_ASSERT_EQUAL(l->in[0], in);
    CU_ASSERT_EQUAL(l->out, out);
    CU_ASSERT_EQUAL(l->p.copy.rank, 2);
    CU_ASSERT_EQUAL(l->p.copy.esize, 4);
    CU_ASSERT_EQUAL(l->p.copy.dims[0], d0);
    CU_ASSERT_EQUAL(l->p.copy.dims[1], d1);
    CU_ASSERT_EQUAL(l->p.copy.n, d0 * d1);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(l->p.copy.ist[i], ist[i]);
        CU_ASSERT_EQUAL(l->p.copy.ost[i], ost[i]);
    }
    CU_ASSERT_EQUAL(l->p.copy.ioff, ioff);
    CU_ASSERT_EQUAL(l->p.copy.ooff, ooff);
}

/* one derivative launch: dy (slot 0) op the saved tensor `saved` */
static void check_deriv(const mpv_program *p, const char *node,
                        const char *saved, int op, double pa, double pb)
{
    const mpv_launch *l = launches_of(p, node, 1);
    check_gpw(l, 0, 2, 12, 1, 1.0);
    CU_ASSERT_EQUAL(l->in[1], slot_of(p, node, saved));
    CU_ASSERT(l->in[1] > 0);
    CU_ASSERT_EQUAL(l->p.gpw.ops[0], op);
    CU_ASSERT_DOUBLE_EQUAL(l->p.gpw.pa, pa, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(l->p.gpw.pb, pb, 1e-12);
}

/* The backward nodes of Transpose, Gather, Concat, Split, Slice, Pad,
 * ReduceMean, Expand, Where, Pow, Cast and the unary ops run real
 * kernels: strided copies (the forward node's copies reversed), an
 * ordered scatter-add, pointwise derivatives; the forward Where too */
static void test_train_shape_kernels(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = shape_net(ctx), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    to.train_all_weights = 1; /* its scalars and running statistics */
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_bwd_synthetic, 0);
    CU_ASSERT_EQUAL(p->n_opt_synthetic, 0);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);

    /* the forward Where: cond, sl and v (ex: a broadcast view of it, read
     * at stride 0 along its rows) */
    const mpv_launch *l = launches_of(p, "where", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_NARY);
    CU_ASSERT_EQUAL(l->p.nary.op, MPV_NOP_WHERE);
    CU_ASSERT_EQUAL(l->p.nary.n_in, 3);
    CU_ASSERT_EQUAL(l->p.nary.n, 12);
    CU_ASSERT_EQUAL(l->p.nary.st[0][0], 4);
    CU_ASSERT_EQUAL(l->p.nary.st[2][0], 0);
    CU_ASSERT_EQUAL(l->p.nary.st[2][1], 1);

    /* Transpose(a [4,6], perm 1,0): da over a's dims reads dy [6,4] at
     * (1, 4) */
    int64_t st14[] = {1, 4}, st61[] = {6, 1}, st41[] = {4, 1};
    l = launches_of(p, "tr/grad", 1);
    check_copy(l, 0, 0, 4, 6, st14, st61, 0, 0);

    /* Gather(e [10,4], idx [3]): de zeroed, rows of dy added at idx */
    l = launches_of(p, "gather/grad", 2);
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l[0].out, 0);
    CU_ASSERT_EQUAL(l[0].p.fill.zero_bytes, 1);
    CU_ASSERT_EQUAL(l[1].kind, MPV_L_GATHER_GRAD);
    CU_ASSERT_EQUAL(l[1].in[0], 0);
    CU_ASSERT_EQUAL(l[1].in[1], slot_of(p, "gather/grad", "idx"));
    CU_ASSERT_EQUAL(l[1].out, 0);
    CU_ASSERT_EQUAL(l[1].p.gather.outer, 1);
    CU_ASSERT_EQUAL(l[1].p.gather.axis, 10);
    CU_ASSERT_EQUAL(l[1].p.gather.inner, 4);
    CU_ASSERT_EQUAL(l[1].p.gather.nidx, 3);
    CU_ASSERT_EQUAL(l[1].p.gather.iesize, 8);

    /* Concat(s [6,4], gt [3,4]): each its rows of dy [9,4] */
    l = launches_of(p, "concat/grad", 2);
    check_copy(&l[0], 0, 0, 6, 4, st41, st41, 0, 0);
    check_copy(&l[1], 0, 1, 3, 4, st41, st41, 24, 0);

    /* Split(c, 5 and 4 rows): each part's gradient (slots 0, 1) to its
     * rows of dc */
    l = launches_of(p, "split/grad", 2);
    check_copy(&l[0], 0, 0, 5, 4, st41, st41, 0, 0);
    check_copy(&l[1], 1, 0, 4, 4, st41, st41, 0, 20);

    /* Slice(c0, rows 1..4): dc0 zeroed, dy to rows 1..3 */
    l = launches_of(p, "slice/grad", 2);
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l[0].p.fill.zero_bytes, 1);
    check_copy(&l[1], 0, 0, 3, 4, st41, st41, 0, 4);

    /* Pad(c1 [4,4], a column each side): dy [4,6] from column 1 */
    l = launches_of(p, "pad/grad", 1);
    check_copy(l, 0, 0, 4, 4, st61, st41, 1, 0);

    /* ReduceMean(pd [4,6], axis 1, keepdims 0): dy [4] broadcast over
     * the columns, times 1/6 */
    l = launches_of(p, "rmean/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_GRAD_PW);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.gpw.n_in, 1);
    CU_ASSERT_EQUAL(l->p.gpw.n, 24);
    CU_ASSERT_EQUAL(l->p.gpw.m, 1);
    CU_ASSERT_EQUAL(l->p.gpw.dims[0], 4);
    CU_ASSERT_EQUAL(l->p.gpw.dims[1], 6);
    CU_ASSERT_EQUAL(l->p.gpw.st[0][0], 1);
    CU_ASSERT_EQUAL(l->p.gpw.st[0][1], 0);
    CU_ASSERT_DOUBLE_EQUAL(l->p.gpw.alpha, 1.0 / 6.0, 1e-15);

    /* Expand(v [1,4] to [3,4]): dy summed over the rows */
    l = launches_of(p, "expand/grad", 1);
    check_gpw(l, 0, 1, 4, 3, 1.0);
    CU_ASSERT_EQUAL(l->p.gpw.red[0], 1);
    CU_ASSERT_EQUAL(l->p.gpw.red[1], 0);

    /* Where(cond, sl, ex): dy where cond, dy where not */
    l = launches_of(p, "where/grad", 2);
    int sc = slot_of(p, "where/grad", "cond");
    CU_ASSERT(sc > 0);
    check_gpw(&l[0], 0, 2, 12, 1, 1.0);
    CU_ASSERT_EQUAL(l[0].in[1], sc);
    CU_ASSERT_EQUAL(l[0].p.gpw.ops[0], MPV_BOP_WHERE_T);
    check_gpw(&l[1], 1, 2, 12, 1, 1.0);
    CU_ASSERT_EQUAL(l[1].in[1], sc);
    CU_ASSERT_EQUAL(l[1].p.gpw.ops[0], MPV_BOP_WHERE_F);

    /* Pow(wh, pe): dwh = dy pe wh^(pe - 1); dpe = dy pw log(wh) summed
     * over all 12 */
    l = launches_of(p, "pow/grad", 2);
    int swh = slot_of(p, "pow/grad", "wh"), spe = slot_of(p, "pow/grad", "pe");
    int spw = slot_of(p, "pow/grad", "pw");
    CU_ASSERT(swh > 0 && spe > 0 && spw > 0);
    check_gpw(&l[0], 0, 3, 12, 1, 1.0);
    CU_ASSERT_EQUAL(l[0].in[1], swh);
    CU_ASSERT_EQUAL(l[0].in[2], spe);
    CU_ASSERT_EQUAL(l[0].p.gpw.ops[0], MPV_BOP_POW_GRAD);
    CU_ASSERT_EQUAL(l[0].p.gpw.st[2][0], 0); /* the scalar broadcast */
    CU_ASSERT_EQUAL(l[0].p.gpw.st[2][1], 0);
    check_gpw(&l[1], 1, 3, 1, 12, 1.0);
    CU_ASSERT_EQUAL(l[1].in[1], spw);
    CU_ASSERT_EQUAL(l[1].in[2], swh);
    CU_ASSERT_EQUAL(l[1].p.gpw.ops[0], MPV_BOP_POW_EXP_GRAD);

    /* Cast: dy cast back */
    l = launches_of(p, "cast/grad", 1);
    CU_ASSERT_EQUAL(l->kind, MPV_L_CAST);
    CU_ASSERT_EQUAL(l->in[0], 0);
    CU_ASSERT_EQUAL(l->out, 0);
    CU_ASSERT_EQUAL(l->p.cast.n, 12);
    CU_ASSERT_EQUAL(l->p.cast.from, MP_DTYPE_FLOAT32);
    CU_ASSERT_EQUAL(l->p.cast.to, MP_DTYPE_FLOAT32);

    /* the unary ops: from their saved input (Sigmoid: its output); the
     * parameters (Clip's bounds from its constant inputs) */
    l = launches_of(p, "sig/grad", 1);
    CU_ASSERT_EQUAL(l->p.gpw.n, 24);
    CU_ASSERT_EQUAL(l->in[1], slot_of(p, "sig/grad", "s"));
    CU_ASSERT_EQUAL(l->p.gpw.ops[0], MPV_BOP_SIGMOID_GRAD);
    check_deriv(p, "erf/grad", "cs", MPV_BOP_ERF_GRAD, 0, 0);
    check_deriv(p, "hswish/grad", "u1", MPV_BOP_HARDSWISH_GRAD, 0, 0);
    check_deriv(p, "lrelu/grad", "u2", MPV_BOP_LEAKYRELU_GRAD, 0.25, 0);
    check_deriv(p, "clip/grad", "u4", MPV_BOP_CLIP_GRAD, -0.5, 0.5);
    check_deriv(p, "gelu/grad", "u5", MPV_BOP_GELU_GRAD, 1, 0);
    l = launches_of(p, "neg/grad", 1);
    check_gpw(l, 0, 1, 12, 1, -1.0);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* Split(a [4,6], axis 1, 2 and 4 columns) with the first part unread:
 * da zeroed, the second part's gradient copied to columns 2..5 */
static void test_train_split_unused(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t d46[] = {4, 6}, d42[] = {4, 2}, d44[] = {4, 4};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, d46);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, d46);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_ACTIVATION, 2, d46);
    uint32_t p0 = mp_test_tensor(g, "p0", MP_KIND_ACTIVATION, 2, d42);
    uint32_t p1 = mp_test_tensor(g, "p1", MP_KIND_ACTIVATION, 2, d44);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, d44);
    uint32_t im[] = {x, w}, parts[] = {p0, p1};
    mp_test_node(g, "mul", "Mul", im, 2, &a, 1);
    uint32_t sp = mp_test_node(g, "split", "Split", &a, 1, parts, 2);
    mp_test_node(g, "relu", "Relu", &p1, 1, &y, 1);
    int64_t split[] = {2, 4};
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, sp, "axis", 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, sp, "split", split, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_graph *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    const mpv_launch *l = launches_of(p, "split/grad", 2);
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l[0].out, 0);
    CU_ASSERT_EQUAL(l[0].p.fill.zero_bytes, 1);
    int64_t st41[] = {4, 1}, st61[] = {6, 1};
    check_copy(&l[1], 0, 0, 4, 4, st41, st61, 0, 2);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* MatMul(hp, W [4,5]), hp = Transpose(h [2,3,4], perm 1,0,2) a permuted
 * view read in place: dhp [3,2,4] = dy W^T as one product, W shared by
 * every index of the leading dim (dy's and dhp's rows folded: [6,5] x
 * [5,4], W read with op T); dW zeroed then hp^T dy added per index of
 * hp's rows (2), each product summing over its leading dim (3 > 2 rows:
 * hp's at stride 4, read with op T, dy's at stride 10) */
static void test_train_permuted_matmul(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dh[] = {2, 3, 4}, dp[] = {3, 2, 4}, dw[] = {4, 5},
            dy[] = {3, 2, 5};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 3, dh);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_WEIGHT, 3, dh);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 3, dh);
    uint32_t hp = mp_test_tensor(g, "hp", MP_KIND_ACTIVATION, 3, dp);
    uint32_t w = mp_test_tensor(g, "W", MP_KIND_WEIGHT, 2, dw);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 3, dy);
    uint32_t im[] = {x, a}, imm[] = {hp, w};
    mp_test_node(g, "mul", "Mul", im, 2, &h, 1);
    uint32_t tn = mp_test_node(g, "perm", "Transpose", &h, 1, &hp, 1);
    mp_test_node(g, "mm", "MatMul", imm, 2, &y, 1);
    int64_t perm[] = {1, 0, 2};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, tn, "perm", perm, 3), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, hp, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.view, MP_VIEW_PERMUTED);
    mp_graph *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    CU_ASSERT_EQUAL(p->n_synthetic, 0);
    /* the forward: hp's leading dim (3) has more rows than M (2) and W is
     * shared: 2 products (batch over M, hp at stride 12, y at 5) of 3
     * rows (hp's at stride 4, y's at 10) */
    const mpv_launch *f = launches_of(p, "mm", 1);
    CU_ASSERT_EQUAL(f[0].kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(f[0].p.gemm.m, 3);
    CU_ASSERT_EQUAL(f[0].p.gemm.n, 5);
    CU_ASSERT_EQUAL(f[0].p.gemm.k, 4);
    CU_ASSERT_EQUAL(f[0].p.gemm.ta, 0);
    CU_ASSERT_EQUAL(f[0].p.gemm.lda, 4);
    CU_ASSERT_EQUAL(f[0].p.gemm.ldc, 10);
    CU_ASSERT_EQUAL(f[0].p.gemm.batch, 2);
    CU_ASSERT_EQUAL(f[0].p.gemm.sa, 12);
    CU_ASSERT_EQUAL(f[0].p.gemm.sb, 0);
    CU_ASSERT_EQUAL(f[0].p.gemm.sc, 5);
    CU_ASSERT_EQUAL(f[0].p.gemm.orank, 0);
    const mpv_launch *l = launches_of(p, "mm/grad", 3);
    int shp = slot_of(p, "mm/grad", "hp"), sw = slot_of(p, "mm/grad", "W");
    CU_ASSERT(shp > 0 && sw > 0);
    /* dhp: dy [6,5] x W^T [5,4], one product */
    CU_ASSERT_EQUAL(l[0].kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(l[0].in[0], 0);
    CU_ASSERT_EQUAL(l[0].in[1], sw);
    CU_ASSERT_EQUAL(l[0].out, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.ta, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.tb, 1);
    CU_ASSERT_EQUAL(l[0].p.gemm.m, 6);
    CU_ASSERT_EQUAL(l[0].p.gemm.n, 4);
    CU_ASSERT_EQUAL(l[0].p.gemm.k, 5);
    CU_ASSERT_EQUAL(l[0].p.gemm.lda, 5);
    CU_ASSERT_EQUAL(l[0].p.gemm.ldb, 5);
    CU_ASSERT_EQUAL(l[0].p.gemm.ldc, 4);
    CU_ASSERT_DOUBLE_EQUAL(l[0].p.gemm.beta, 0.0, 0);
    CU_ASSERT_EQUAL(l[0].p.gemm.batch, 1);
    CU_ASSERT_EQUAL(l[0].p.gemm.orank, 0);
    /* dW: zeroed, then hp[:, m]^T [4,3] dy[:, m] [3,5] added for m = 0, 1 */
    CU_ASSERT_EQUAL(l[1].kind, MPV_L_FILL);
    CU_ASSERT_EQUAL(l[1].out, 1);
    CU_ASSERT_EQUAL(l[1].p.fill.zero_bytes, 1);
    CU_ASSERT_EQUAL(l[2].kind, MPV_L_GEMM);
    CU_ASSERT_EQUAL(l[2].in[0], shp);
    CU_ASSERT_EQUAL(l[2].in[1], 0);
    CU_ASSERT_EQUAL(l[2].out, 1);
    CU_ASSERT_EQUAL(l[2].p.gemm.ta, 1);
    CU_ASSERT_EQUAL(l[2].p.gemm.tb, 0);
    CU_ASSERT_EQUAL(l[2].p.gemm.m, 4);
    CU_ASSERT_EQUAL(l[2].p.gemm.n, 5);
    CU_ASSERT_EQUAL(l[2].p.gemm.k, 3);
    CU_ASSERT_EQUAL(l[2].p.gemm.lda, 4);
    CU_ASSERT_EQUAL(l[2].p.gemm.ldb, 10);
    CU_ASSERT_EQUAL(l[2].p.gemm.ldc, 5);
    CU_ASSERT_DOUBLE_EQUAL(l[2].p.gemm.beta, 1.0, 0);
    CU_ASSERT_EQUAL(l[2].p.gemm.orank, 1);
    CU_ASSERT_EQUAL(l[2].p.gemm.odims[0], 2);
    CU_ASSERT_EQUAL(l[2].p.gemm.osa[0], 12);
    CU_ASSERT_EQUAL(l[2].p.gemm.osb[0], 5);
    CU_ASSERT_EQUAL(l[2].p.gemm.osc[0], 0);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}


/* ---- serving: a generation's graph lowered (validate --serve) --------- */

/* the generation of mp_serve_generation_graph on a tiny config (2 layers,
 * hidden 64, 4 heads of 16, 2 KV heads, gated FFN 128, vocab 100, bf16):
 * 2 sequences, prompt 5, 6 decode steps, blocks of 4 */
static void serve_graph(mp_ctx *ctx, int paged, mp_graph **g, mp_plan **plan,
                        mpv_program **p)
{
    mp_llm_config m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 16;
    m.ffn = 128;
    m.vocab = 100;
    m.mlp_matrices = 3;
    m.dtype = MP_DTYPE_BFLOAT16;
    mp_serve_options so;
    mp_serve_options_init(&so);
    so.block_size = 4;
    so.kv_paged = paged;
    CU_ASSERT_EQUAL_FATAL(mp_serve_generation_graph(ctx, &m, &so, 2, 5, 6, g),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(*g, NULL, plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(*g, *plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(*g, *plan, p), MP_OK);
}

static uint32_t tensor_id(const mp_graph *g, const char *name)
{
    uint32_t t = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, name, &t), MP_OK);
    return t;
}

static void test_serve_generation(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g[2];
    mp_plan *plan[2];
    mpv_program *p[2];
    unsigned char *w[2];
    for (int paged = 0; paged < 2; paged++) {
        serve_graph(ctx, paged, &g[paged], &plan[paged], &p[paged]);
        mpv_program *pp = p[paged];
        /* every node on a real kernel */
        CU_ASSERT_EQUAL(pp->n_synthetic, 0u);
        CU_ASSERT_EQUAL(pp->n_real, (uint32_t)mp_graph_num_nodes(g[paged]));
        uint32_t n[MPV_L_COUNT_] = {0}, rms = 0;
        for (uint32_t i = 0; i < pp->n_launches; i++) {
            n[pp->launches[i].kind]++;
            rms += pp->launches[i].kind == MPV_L_LN &&
                   pp->launches[i].p.ln.rms;
        }
        /* 7 passes (the prefill, 6 decode steps) of 2 layers */
        CU_ASSERT_EQUAL(n[MPV_L_KV_WRITE], 14u);
        CU_ASSERT_EQUAL(n[MPV_L_PAGED_ATTN], 14u);
        CU_ASSERT_EQUAL(n[MPV_L_SORT], 7u);
        CU_ASSERT_EQUAL(n[MPV_L_SAMPLE], 7u);
        CU_ASSERT_EQUAL(rms, 7u * 5u);
        CU_ASSERT_EQUAL(n[MPV_L_SYNTH], 0u);
        CU_ASSERT(n[MPV_L_GEMM] >= 7u * 15u);
        /* the attention of decode step 3, layer 1: token 8 of each
         * sequence, past 7, through the table (paged) or its row */
        uint32_t nid;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g[paged], "step3/l1.attn",
                                                 &nid),
                              MP_OK);
        const mpv_node *pn = &pp->nodes[nid];
        CU_ASSERT_EQUAL_FATAL(pn->count, 2u);
        const mpv_launch *kw = &pp->launches[pn->first],
                         *at = &pp->launches[pn->first + 1];
        CU_ASSERT_EQUAL(kw->kind, MPV_L_KV_WRITE);
        CU_ASSERT_EQUAL(at->kind, MPV_L_PAGED_ATTN);
        CU_ASSERT_EQUAL(at->p.paged.rows, 2);
        CU_ASSERT_EQUAL(at->p.paged.qlen, 1);
        CU_ASSERT_EQUAL(at->p.paged.past, 7);
        CU_ASSERT_EQUAL(at->p.paged.heads, 4);
        CU_ASSERT_EQUAL(at->p.paged.kv_heads, 2);
        CU_ASSERT_EQUAL(at->p.paged.d, 16);
        CU_ASSERT_EQUAL(at->p.paged.paged, paged);
        CU_ASSERT_EQUAL(at->p.paged.block_size, paged ? 4 : 0);
        CU_ASSERT_EQUAL(at->p.paged.max_blocks, paged ? 3 : 0);
        CU_ASSERT_EQUAL(at->p.paged.num_blocks, paged ? 6 : 0);
        CU_ASSERT_EQUAL(at->p.paged.max_len, paged ? 0 : 11);
        CU_ASSERT(fabs(at->p.paged.scale - 0.25) < 1e-12);
        CU_ASSERT_EQUAL(at->in[3], paged ? 5 : -1);
        /* q, the caches and the output are bfloat16 */
        CU_ASSERT((at->bf16 & (1ull << 0)) != 0);
        CU_ASSERT((at->bf16 & (1ull << 3)) != 0);
        CU_ASSERT((at->bf16 & (1ull << 4)) != 0);
        CU_ASSERT((at->bf16 & (1ull << 32)) != 0);
        CU_ASSERT_EQUAL(memcmp(&kw->p.paged, &at->p.paged,
                               sizeof at->p.paged), 0);
        /* the prefill's attention: 10 rows of 5 tokens a sequence */
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g[paged], "step0/l0.attn",
                                                 &nid),
                              MP_OK);
        at = &pp->launches[pp->nodes[nid].first + 1];
        CU_ASSERT_EQUAL(at->p.paged.rows, 10);
        CU_ASSERT_EQUAL(at->p.paged.qlen, 5);
        CU_ASSERT_EQUAL(at->p.paged.past, 0);
        /* the caches in the weights buffer, of their planned bytes, read
         * and written in place there */
        uint32_t kc = tensor_id(g[paged], "l0.k_cache");
        CU_ASSERT(pp->woff[kc] != UINT64_MAX);
        mp_tensor_info ti;
        mp_graph_tensor_info(g[paged], kc, &ti);
        CU_ASSERT_EQUAL(ti.bytes, paged ? 6u * 4u * 2u * 16u * 2u
                                        : 2u * 11u * 2u * 16u * 2u);
        const mpv_step *st = NULL;
        for (uint32_t s = 0; s < pp->n_steps; s++)
            if (pp->steps[s].kind == MP_STEP_COMPUTE &&
                pp->steps[s].index == nid)
                st = &pp->steps[s];
        CU_ASSERT_PTR_NOT_NULL_FATAL(st);
        const mpv_ref *rf = &pp->refs[st->refs + 3];
        CU_ASSERT_EQUAL(rf->space, MPV_SPACE_WEIGHTS);
        CU_ASSERT_EQUAL(rf->offset, pp->woff[kc]);
        CU_ASSERT_EQUAL(rf->bytes, ti.bytes);
        /* the initial weights buffer: the block table's values */
        w[paged] = calloc(1, pp->weights_bytes);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w[paged]);
        mpv_weights_init(pp, w[paged], 7);
        uint32_t tb = MP_NONE;
        mp_status fs = mp_graph_find_tensor(g[paged], "kv_block_table", &tb);
        CU_ASSERT_EQUAL(fs, paged ? MP_OK : MP_ERR_NOT_FOUND);
        if (paged) {
            static const int32_t want[6] = {0, 1, 4, 2, 3, 5};
            CU_ASSERT_EQUAL_FATAL(st->n_refs, 7u);
            CU_ASSERT_EQUAL(pp->refs[st->refs + 5].offset, pp->woff[tb]);
            CU_ASSERT_EQUAL(memcmp(w[paged] + pp->woff[tb], want,
                                   sizeof want), 0);
        }
        /* the prompt: the input's values (the graph's), the tokens in
         * range */
        uint32_t ids = tensor_id(g[paged], "step0/input_ids");
        int64_t buf[10];
        mpv_input_init(pp, ids, buf, 3);
        for (int i = 0; i < 10; i++)
            CU_ASSERT(buf[i] >= 0 && buf[i] < 100);
        CU_ASSERT_EQUAL(buf[0], 12345 % 100);
    }
    /* the model's weights: the same ids, offsets and initial values in
     * both layouts, so that the two runs compute with the same model */
    uint32_t kc0 = tensor_id(g[1], "l0.k_cache");
    CU_ASSERT_EQUAL(kc0, tensor_id(g[0], "l0.k_cache"));
    CU_ASSERT(kc0 > 10);
    CU_ASSERT_EQUAL(p[0]->woff[kc0], p[1]->woff[kc0]);
    CU_ASSERT_EQUAL(memcmp(w[0], w[1], p[1]->woff[kc0]), 0);
    for (int i = 0; i < 2; i++) {
        free(w[i]);
        mpv_program_destroy(p[i]);
        mp_plan_destroy(plan[i]);
        mp_graph_destroy(g[i]);
    }
    mp_ctx_destroy(ctx);
}

void mp_register_validate_host(void)
{
    static CU_TestInfo tests[] = {
        {"conv/relu/unknown op lowered; refs, workspace, reference live",
         test_lowering},
        {"offload/prefetch steps resolve to their blocks", test_offload_refs},
        {"predicted time: cost model per step, copies over the link",
         test_predict},
        {"predicted time of a training step: the planner's node times",
         test_predict_train},
        {"dump: index and bytes of weights, inputs, outputs", test_dump},
        {"transposed weight: a view read with op T, not a copy",
         test_transposed_operand},
        {"transposed activation: operand A with op T unless an output",
         test_transposed_activation},
        {"fused values in two scratch slots of the workspace",
         test_fused_scratch},
        {"fused attention: one flash-style launch, the mask broadcast",
         test_attention},
        {"Expand read by broadcasting ops: a view, the reader broadcasts its "
         "input", test_broadcast_view},
        {"Slice/Split parts that are one byte range: views at an offset",
         test_range_view},
        {"a reader of part of a root does not write over it in place",
         test_range_view_inplace},
        {"training: loss, backward nodes and SGD on real kernels",
         test_train_kernels},
        {"training: gradients of many terms in chunks, the partial sums in "
         "the workspace", test_train_many_terms},
        {"training: batched MatMul gradients, strided batched products",
         test_train_batched_matmul},
        {"training: a tensor read twice keeps the synthetic kernel",
         test_train_read_twice},
        {"conv on cuDNN: forward, input/weight/bias gradients, fallbacks",
         test_conv_dnn},
        {"bf16-mixed convolutions: bfloat16 operands on cuDNN, a float32 "
         "weight gradient staged, the loss sums its outputs only",
         test_conv_bf16},
        {"conv workspace of the cost model by pass and shape",
         test_conv_workspace},
        {"direct conv passes: padded-sum forward, adjoint gradients",
         test_conv_direct},
        {"training: BatchNormalization's training form, Max/Average/Global"
         "AveragePool and LayerNormalization, forward and backward",
         test_train_norm_pool},
        {"training: norm and pool backward without saved statistics or "
         "indices", test_train_norm_unsaved},
        {"training: the fused attention's backward, a scalar read twice",
         test_train_attention},
        {"training: Adam, AdamW, momentum steps and the foreach temporary",
         test_train_optimizers},
        {"training: gradients of data movement, reductions, pointwise ops",
         test_train_shape_kernels},
        {"training: MatMul's gradient with a permuted operand read in place",
         test_train_permuted_matmul},
        {"training: a Split's unread part gets a zero gradient",
         test_train_split_unused},
        {"Cast between float32 and bfloat16 on the real kernel",
         test_cast_bf16},
        {"validate --rank: collectives as local copies of the same buffers",
         test_collectives_local},
        {"validate --ranks: collectives as NCCL calls, steps on slices",
         test_collectives_nccl},
        {"validate --ranks: sends linked to receives, deadlocks named",
         test_ranks_link},
        {"validate --ranks: tp collectives as NCCL calls of the tp group",
         test_collectives_nccl_tp},
        {"validate --ranks: tp x pp linked, tp deadlocks named",
         test_ranks_link_tp_pp},
        {"validate --ranks: NCCL loaded at run time", test_nccl_load},
        {"validate --serve: a generation on real kernels, the paged cache "
         "and its block table in the weights buffer", test_serve_generation},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("validate_host", tests);
}
