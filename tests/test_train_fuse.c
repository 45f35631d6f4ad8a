/* --fuse in training plans (docs/memory-model.md, "Fused pointwise
 * chains"): on a two-layer MLP whose GELU is decomposed as torch.onnx
 * exports it (support.c, mp_test_gelu_train), the min-cut plan fuses the
 * forward chain Div -> Erf -> Add -> Mul -> Mul into one kernel while the
 * values backward reads keep their memory when recomputed; the plan that
 * saves what backward reads fuses only what backward does not keep; the
 * backward chain ErfGrad -> DivGrad -> Sum fuses too; and the verifier
 * rejects a fusion of a value read later, by backward or by a node that
 * is not pointwise. */
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t node_id(const mp_graph *g, const char *name)
{
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (strcmp(g->nodes[v].name, name) == 0)
            return v;
    CU_FAIL(name);
    return MP_NONE;
}

static uint32_t tensor_id(const mp_graph *g, const char *name)
{
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (strcmp(g->tensors[t].name, name) == 0)
            return t;
    CU_FAIL(name);
    return MP_NONE;
}

/* the step of node `name` of this kind (the first), MP_NONE when none */
static uint32_t step_of(const mp_graph *g, const mp_plan *p, const char *name,
                        mp_step_kind kind)
{
    uint32_t v = node_id(g, name);
    for (uint32_t s = 0; s < p->n_steps; s++)
        if (p->steps[s].kind == kind && p->steps[s].index == v)
            return s;
    return MP_NONE;
}

/* the block of tensor t starting at step s, MP_NONE when none */
static uint32_t block_at(const mp_plan *p, uint32_t t, uint32_t s)
{
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].tensor == t && p->blocks[i].first == s)
            return i;
    return MP_NONE;
}

/* 1 when the instance that node `name`'s step of this kind writes is
 * fused: its output marked fused and no block starting there; 0 when it
 * has a block; -1 when there is no such step */
static int fused_at(const mp_graph *g, const mp_plan *p, const char *name,
                    mp_step_kind kind)
{
    uint32_t s = step_of(g, p, name, kind);
    if (s == MP_NONE)
        return -1;
    uint32_t y = g->nodes[p->steps[s].index].outputs[0];
    if (block_at(p, y, s) != MP_NONE)
        return 0;
    return mp_plan_tensor_fused(p, y) ? 1 : -1;
}

static mp_plan *mincut_plan(mp_graph *g, int fuse)
{
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = fuse;
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, &po, &p, &r) == MP_OK);
    CU_ASSERT_FATAL(r.n_recompute > 0);
    return p;
}

/* min-cut: the forward chain fused (d, e, a, m: no memory; the chain
 * writes u); the recomputed d and a, which ErfGrad and MulGrad read,
 * have blocks, e and m (read by nothing in backward) are fused again;
 * backward: ErfGrad -> DivGrad -> Sum fused (d/d#1, d/h#2). Verified,
 * through the plan JSON too, and never above the unfused plan. */
static void test_chain_fused(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_gelu_train(ctx);
    mp_plan *p = mincut_plan(g, 1), *q = mincut_plan(g, 0);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    const mp_step_kind C = MP_STEP_COMPUTE, R = MP_STEP_RECOMPUTE;
    CU_ASSERT_EQUAL(fused_at(g, p, "div", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "erf", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "add", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "mul", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "mulhalf", C), 0); /* u: MatMul reads */
    CU_ASSERT_EQUAL(fused_at(g, p, "div", R), 0);     /* d: ErfGrad */
    CU_ASSERT_EQUAL(fused_at(g, p, "erf", R), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "add", R), 0);     /* a: MulGrad */
    CU_ASSERT_EQUAL(fused_at(g, p, "mul", R), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "erf/grad", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "div/grad", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "mul/grad", C), 0); /* two outputs */
    CU_ASSERT(g->nodes[node_id(g, "erf/grad")].bwd_pointwise);
    CU_ASSERT(!g->nodes[node_id(g, "mul/grad")].bwd_pointwise);
    CU_ASSERT(!g->nodes[node_id(g, "mm2/grad")].bwd_pointwise);
    uint32_t nf = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++)
        nf += (uint32_t)mp_plan_tensor_fused(p, t);
    CU_ASSERT_EQUAL(nf, 6); /* d e a m d/d#1 d/h#2 */
    CU_ASSERT(mp_plan_figures(p)->lower_bound_bytes <=
              mp_plan_figures(q)->lower_bound_bytes);
    /* a chain's inputs stay resident to its end: d (read by ErfGrad)
     * is freed after the Sum that ends ErfGrad's chain */
    uint32_t d = tensor_id(g, "d"), sum = step_of(g, p, "d/h#sum2", C);
    uint32_t bd = block_at(p, d, step_of(g, p, "div", R));
    CU_ASSERT_FATAL(bd != MP_NONE);
    CU_ASSERT(p->blocks[bd].end > sum);
    /* the plan JSON keeps the instances: fused without a block */
    const char *path = mp_test_write_temp(".json", "");
    CU_ASSERT_FATAL(path != NULL);
    char file[512];
    snprintf(file, sizeof file, "%s", path);
    CU_ASSERT_EQUAL_FATAL(mp_plan_save_json(p, file), MP_OK);
    mp_plan *l = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, file, &l), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, l), MP_OK);
    CU_ASSERT_EQUAL(fused_at(g, l, "div", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, l, "div", R), 0);
    mp_plan_destroy(l);
    remove(file);
    mp_plan_destroy(p);
    mp_plan_destroy(q);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Saving what backward reads (no recompute): d and a are kept for
 * ErfGrad and MulGrad, so they are not fused; e and m, which backward
 * does not read, are. */
static void test_saved_not_fused(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_gelu_train(ctx);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g, &po, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    const mp_step_kind C = MP_STEP_COMPUTE;
    CU_ASSERT_EQUAL(fused_at(g, p, "div", C), 0);
    CU_ASSERT_EQUAL(fused_at(g, p, "add", C), 0);
    CU_ASSERT_EQUAL(fused_at(g, p, "erf", C), 1);
    CU_ASSERT_EQUAL(fused_at(g, p, "mul", C), 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tensor_id(g, "d")), 0);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tensor_id(g, "a")), 0);
    /* d lives from its step to ErfGrad */
    uint32_t bd = block_at(p, tensor_id(g, "d"), step_of(g, p, "div", C));
    CU_ASSERT_FATAL(bd != MP_NONE);
    CU_ASSERT(p->blocks[bd].end > step_of(g, p, "erf/grad", C));
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* p with the block of tensor `name` starting at step s removed and the
 * tensor marked fused: that instance claimed fused. */
static void claim_fused(mp_plan *p, const mp_graph *g, const char *name,
                        uint32_t s)
{
    uint32_t t = tensor_id(g, name), b = block_at(p, t, s);
    CU_ASSERT_FATAL(b != MP_NONE);
    if (!p->fused)
        p->fused = mp__calloc(p->ctx, g->n_tensors + 1, 1);
    CU_ASSERT_FATAL(p->fused != NULL);
    p->fused[t] = 1;
    memmove(&p->blocks[b], &p->blocks[b + 1],
            (p->n_blocks - b - 1) * sizeof *p->blocks);
    if (p->block_over)
        memmove(&p->block_over[b], &p->block_over[b + 1],
                (p->n_blocks - b - 1) * sizeof *p->block_over);
    p->n_blocks--;
}

static void expect_rejected(mp_ctx *ctx, const mp_graph *g, const mp_plan *p,
                            const char *what)
{
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    if (!strstr(mp_ctx_message(ctx), what)) {
        printf("\n  message: %s\n  expected: %s\n", mp_ctx_message(ctx),
               what);
        CU_FAIL("verifier message");
    }
}

/* Illegal fusions in training plans, each rejected with MP_ERR_VERIFY:
 * the recomputed a (MulGrad reads it after the Mul) claimed fused; d of
 * the saving plan (ErfGrad reads it in backward) claimed fused; MulGrad's
 * output (a node with two outputs) claimed fused. */
static void test_verify_rejects(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_gelu_train(ctx);
    mp_plan *p = mincut_plan(g, 1);
    claim_fused(p, g, "a", step_of(g, p, "add", MP_STEP_RECOMPUTE));
    expect_rejected(ctx, g, p, "input 'a' is not resident (a fused value is "
                               "read only by the node step right after");
    mp_plan_destroy(p);

    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g, &po, &p) == MP_OK);
    claim_fused(p, g, "d", step_of(g, p, "div", MP_STEP_COMPUTE));
    expect_rejected(ctx, g, p, "node 'erf/grad'): input 'd' is not resident "
                               "(a fused value");
    mp_plan_destroy(p);

    p = mincut_plan(g, 1);
    claim_fused(p, g, "d/a#1", step_of(g, p, "mul/grad", MP_STEP_COMPUTE));
    expect_rejected(ctx, g, p, "tensor 'd/a#1' is marked fused but node "
                               "'mul/grad' (MulGrad) is not a pointwise op "
                               "with one output");
    mp_plan_destroy(p);

    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static char out[1 << 16];

/* plan --train --fuse: the summary counts fused tensors (0 before fused
 * chains were kept per instance) */
static void test_cli(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --train --fuse",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    const char *s = strstr(out, "tensors fused");
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT(strstr(out, ", 0 tensors fused") == NULL);
}

void mp_register_train_fuse(void)
{
    static CU_TestInfo tests[] = {
        {"min-cut: forward chain fused, recomputed reads kept, backward "
         "chain fused",
         test_chain_fused},
        {"saved for backward: not fused", test_saved_not_fused},
        {"verifier: illegal fusions in training rejected",
         test_verify_rejects},
        {"plan --train --fuse counts fused tensors", test_cli},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("train_fuse", tests);
}
