/* Segment checkpointing (solvers/remat/remat_segments.c) and optimizer steps in
 * backward (mp_train_options.step_in_backward) on a hand-made residual
 * training graph: the budget is met, the schedule verifies, the extra
 * cost stays within one extra forward pass (the sum of the forward
 * units' costs), and each optimizer step runs right after its gradient
 * is complete (after the backward node that completes it and that
 * node's gradient accumulations). */
#include "planner.h"
#include "heuristics.h"
#include "remat.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x[32,64] through n residual blocks x' = Relu(x + MatMul(Relu(MatMul(x,
 * Wa)), Wb)); every activation is 8 KiB. The Add of each block is a
 * forward articulation point that backward does not read (Add saves
 * nothing), the Relu after it is one that backward reads. */
static mp_graph *residual(mp_ctx *ctx, int n)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {32, 64}, dw[] = {64, 64};
    char nm[64];
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    for (int k = 0; k < n; k++) {
        uint32_t t[6];
        const char *parts[] = {"Wa", "Wb", "h", "a", "m", "s"};
        for (int i = 0; i < 6; i++) {
            snprintf(nm, sizeof nm, "b%d/%s", k, parts[i]);
            t[i] = mp_test_tensor(g, nm, i < 2 ? MP_KIND_WEIGHT
                                           : MP_KIND_ACTIVATION,
                              2, i < 2 ? dw : dx);
        }
        snprintf(nm, sizeof nm, "b%d/out", k);
        uint32_t y = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        uint32_t i1[] = {x, t[0]}, i2[] = {t[3], t[1]}, i3[] = {x, t[4]};
        snprintf(nm, sizeof nm, "b%d/mm1", k);
        mp_test_node(g, nm, "MatMul", i1, 2, &t[2], 1);
        snprintf(nm, sizeof nm, "b%d/relu1", k);
        mp_test_node(g, nm, "Relu", &t[2], 1, &t[3], 1);
        snprintf(nm, sizeof nm, "b%d/mm2", k);
        mp_test_node(g, nm, "MatMul", i2, 2, &t[4], 1);
        snprintf(nm, sizeof nm, "b%d/add", k);
        mp_test_node(g, nm, "Add", i3, 2, &t[5], 1);
        snprintf(nm, sizeof nm, "b%d/relu2", k);
        mp_test_node(g, nm, "Relu", &t[5], 1, &y, 1);
        x = y;
    }
    CU_ASSERT_FATAL(mp_graph_mark_output(g, x) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

static mp_graph *residual_train(mp_ctx *ctx, int n, int step_in_backward,
                                mp_train_breakdown *bd)
{
    mp_graph *f = residual(ctx, n), *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    o.step_in_backward = step_in_backward;
    /* the same nodes either way: a step in backward is on its own, so
     * foreach's group temporary (one node more) would not compare */
    o.optimizer_impl = MP_OPTIM_IMPL_FOR_LOOP;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, bd) == MP_OK);
    mp_graph_destroy(f);
    return t;
}

/* What mp__remat_segments hands to the search: replayed with its steps,
 * placed and verified here. */
typedef struct seg_seen {
    const mp__remat_prob *p;
    mp_graph *g;
    int calls, verified;
    char name[32];
    uint64_t peak;
    double extra;
} seg_seen;

static mp_status seg_try(void *user, const char *name,
                         const mp__remat_policy *pol)
{
    seg_seen *s = user;
    s->calls++;
    snprintf(s->name, sizeof s->name, "%s", name);
    mp__remat_out o;
    mp_status st = mp__remat_simulate(s->p, pol, 1, &o);
    if (st)
        return st;
    s->peak = o.peak;
    s->extra = o.extra_cost;
    mp_plan *plan = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = 64;
    st = mp__plan_from_schedule(s->g, o.steps, o.n_steps, &po, 0, &plan);
    if (st)
        return st;
    s->verified = mp_verify_plan(s->g, plan) == MP_OK &&
                  mp_plan_figures(plan)->lower_bound_bytes <= o.peak;
    mp_plan_destroy(plan);
    return MP_OK;
}

/* The 8-block residual training graph (steps in backward), its problem,
 * and its no-recompute live peak. */
static uint64_t seg_setup(mp_ctx *ctx, mp_graph **g, mp__remat_prob *p)
{
    *g = residual_train(ctx, 8, 1, NULL);
    CU_ASSERT_FATAL(mp__remat_prob_build(*g, 64, p) == MP_OK);
    mp__remat_policy none;
    memset(&none, 0, sizeof none);
    mp__remat_out o;
    CU_ASSERT_FATAL(mp__remat_simulate(p, &none, 0, &o) == MP_OK);
    return o.peak;
}

static void test_segments_budget_and_bound(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp__remat_prob p;
    uint64_t base = seg_setup(ctx, &g, &p);
    /* one extra forward pass: what Chen's segments may recompute */
    double fwd = 0;
    for (uint32_t u = 0; u < p.T; u++)
        if (p.fwd[u])
            fwd += p.cost[u];
    CU_ASSERT(fwd > 0);
    for (int k = 1; k <= 3; k++) {
        uint64_t cap = base * (uint64_t)(6 - k) / 6; /* 5/6, 2/3, 1/2 */
        seg_seen s;
        memset(&s, 0, sizeof s);
        s.p = &p;
        s.g = g;
        CU_ASSERT_EQUAL(mp__remat_segments(&p, cap, -1, NULL, seg_try, &s), MP_OK);
        CU_ASSERT_EQUAL(s.calls, 1);
        if (s.calls != 1)
            continue;
        CU_ASSERT(s.verified);
        CU_ASSERT(s.peak <= cap);
        CU_ASSERT(s.peak < base);
        CU_ASSERT(s.extra > 0);
        /* without eviction, each dropped value is recomputed at most once;
         * at 5/6 the plain segments are the cheapest (below, eviction as
         * a repair of a denser segmentation can be cheaper) */
        if (k == 1)
            CU_ASSERT_STRING_EQUAL(s.name, "segments");
        if (strcmp(s.name, "segments") == 0)
            CU_ASSERT(s.extra <= fwd * (1 + 1e-9));
    }
    /* a cap on the extra cost below what the cap on memory needs: none */
    seg_seen s;
    memset(&s, 0, sizeof s);
    s.p = &p;
    s.g = g;
    CU_ASSERT_EQUAL(mp__remat_segments(&p, base / 2, 1e-12, NULL, seg_try, &s),
                    MP_OK);
    CU_ASSERT_EQUAL(s.calls, 0);
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Eviction scored by the next reader (mp__remat_policy.evict_next_use)
 * alone, no drops: the replay stays within the cap, recomputes, and its
 * schedule places and verifies. */
static void test_evict_next_use(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp__remat_prob p;
    uint64_t base = seg_setup(ctx, &g, &p);
    mp__remat_policy pol;
    memset(&pol, 0, sizeof pol);
    seg_seen s;
    memset(&s, 0, sizeof s);
    s.p = &p;
    s.g = g;
    pol.evict_cap = base * 2 / 3;
    pol.evict_next_use = 1;
    CU_ASSERT_EQUAL(seg_try(&s, "next-use", &pol), MP_OK);
    CU_ASSERT(s.verified);
    CU_ASSERT(s.peak <= pol.evict_cap);
    CU_ASSERT(s.extra > 0);
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Through the driver: 2/3 of the no-recompute arena (the weights and Adam
 * states stay), verified, within one extra forward pass. */
static void test_auto_two_thirds(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = residual_train(ctx, 8, 1, NULL);
    mp_remat_result r;
    mp_plan *plan = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, NULL, NULL, &plan, &r) == MP_OK);
    uint64_t pers = mp_plan_figures(plan)->persistent_bytes;
    CU_ASSERT_FATAL(r.base_peak_bytes > pers);
    mp_plan_destroy(plan);
    double fwd = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->nodes[v].phase == MP_PHASE_FORWARD)
            fwd += mp_node_cost(g, v);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.budget = pers + (r.base_peak_bytes - pers) * 2 / 3;
    ro.solver = MP_REMAT_AUTO;
    /* the LPs only add a bound here (and maybe a cheaper schedule): a
     * short limit keeps the suite quick, the assertions hold for any */
    ro.time_limit = 1;
    plan = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &plan, &r) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT(mp_plan_figures(plan)->peak_bytes <= ro.budget);
    CU_ASSERT(r.peak_bytes <= ro.budget);
    CU_ASSERT(r.n_recompute > 0);
    CU_ASSERT(r.extra_cost <= fwd * (1 + 1e-9));
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* step_in_backward: the same tensors and breakdown; each optimizer node
 * comes right after the node that completes its gradient, before the
 * backward pass ends; the no-recompute peak does not rise. */
static void test_step_in_backward(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_train_breakdown b0, b1;
    mp_graph *g0 = residual_train(ctx, 4, 0, &b0);
    mp_graph *g1 = residual_train(ctx, 4, 1, &b1);
    CU_ASSERT_EQUAL(g0->n_nodes, g1->n_nodes);
    CU_ASSERT_EQUAL(g0->n_tensors, g1->n_tensors);
    CU_ASSERT_EQUAL(b0.gradient_bytes, b1.gradient_bytes);
    CU_ASSERT_EQUAL(b0.optimizer_bytes, b1.optimizer_bytes);
    CU_ASSERT_EQUAL(b0.n_optimizer, 8);
    CU_ASSERT_EQUAL(b1.n_optimizer, 8);
    uint32_t *pos = calloc(g1->n_nodes, sizeof *pos);
    CU_ASSERT_FATAL(pos != NULL);
    uint32_t last_bwd = 0, first_opt = UINT32_MAX, n_opt = 0;
    for (uint32_t k = 0; k < g1->n_nodes; k++) {
        const mp__node *n = &g1->nodes[g1->topo[k]];
        pos[g1->topo[k]] = k;
        if (n->phase == MP_PHASE_BACKWARD)
            last_bwd = k;
        if (n->phase == MP_PHASE_OPTIMIZER && k < first_opt)
            first_opt = k;
    }
    CU_ASSERT(first_opt < last_bwd);
    for (uint32_t v = 0; v < g1->n_nodes; v++) {
        const mp__node *n = &g1->nodes[v];
        if (n->phase != MP_PHASE_OPTIMIZER)
            continue;
        n_opt++;
        uint32_t gr = g1->tensors[n->inputs[1]].root;
        uint32_t prod = g1->tensors[gr].producer;
        CU_ASSERT_FATAL(prod != MP_NONE);
        CU_ASSERT(pos[v] > pos[prod]);
        /* only the accumulations of the same backward node between */
        for (uint32_t k = pos[prod] + 1; k < pos[v]; k++)
            CU_ASSERT_STRING_EQUAL(g1->nodes[g1->topo[k]].op, "Sum");
        /* the gradient is complete: nothing else reads it */
        CU_ASSERT_EQUAL(g1->tensors[gr].n_cons, 1);
    }
    CU_ASSERT_EQUAL(n_opt, 8);
    /* default order: every step after the last backward node */
    for (uint32_t k = 0; k < g0->n_nodes; k++)
        if (g0->nodes[g0->topo[k]].phase == MP_PHASE_BACKWARD)
            for (uint32_t j = 0; j < k; j++)
                CU_ASSERT(g0->nodes[g0->topo[j]].phase != MP_PHASE_OPTIMIZER);
    mp_plan *p0 = NULL, *p1 = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g0, NULL, &p0) == MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g1, NULL, &p1) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g1, p1), MP_OK);
    CU_ASSERT(mp_plan_figures(p1)->lower_bound_bytes <
              mp_plan_figures(p0)->lower_bound_bytes);
    mp_plan_destroy(p0);
    mp_plan_destroy(p1);
    free(pos);
    mp_graph_destroy(g0);
    mp_graph_destroy(g1);
    mp_ctx_destroy(ctx);
}

static double seg_phase_flops(const mp_graph *g, mp_phase ph)
{
    double f = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->nodes[v].phase == ph && g->nodes[v].flops > 0)
            f += g->nodes[v].flops;
    return f;
}

/* split_weight_grad: each MatMul's backward is two nodes, the input
 * gradient (NAME/grad) and then the weight gradient (NAME/grad_w), one
 * product each; the same tensors, breakdown and backward FLOPs; the
 * no-recompute peak does not rise. */
static void test_split_weight_grad(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = residual(ctx, 4), *g0 = NULL, *g1 = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    mp_train_breakdown b0, b1;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &g0, &b0) == MP_OK);
    o.split_weight_grad = 1;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &g1, &b1) == MP_OK);
    CU_ASSERT_EQUAL(g0->n_tensors, g1->n_tensors);
    CU_ASSERT_EQUAL(b0.gradient_bytes, b1.gradient_bytes);
    CU_ASSERT_EQUAL(b0.saved_bytes, b1.saved_bytes);
    /* 8 MatMuls; b0/mm1's input is a graph input: only a weight gradient */
    CU_ASSERT_EQUAL(b1.n_backward, b0.n_backward + 7);
    CU_ASSERT_DOUBLE_EQUAL(seg_phase_flops(g1, MP_PHASE_BACKWARD),
                           seg_phase_flops(g0, MP_PHASE_BACKWARD),
                           1e-6 * seg_phase_flops(g0, MP_PHASE_BACKWARD));
    char nm[64];
    for (int k = 0; k < 4; k++)
        for (int m = 1; m <= 2; m++) {
            uint32_t a, w;
            mp_node_info ia, iw;
            snprintf(nm, sizeof nm, "b%d/mm%d/grad", k, m);
            CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g1, nm, &a), MP_OK);
            CU_ASSERT_EQUAL(mp_graph_node_info(g1, a, &ia), MP_OK);
            CU_ASSERT_EQUAL(ia.n_outputs, 1);
            snprintf(nm, sizeof nm, "b%d/mm%d/grad_w", k, m);
            if (k == 0 && m == 1) { /* x takes no gradient */
                CU_ASSERT_NOT_EQUAL(mp_graph_find_node(g1, nm, &w), MP_OK);
                mp_ctx_clear(ctx);
                CU_ASSERT_EQUAL(g1->tensors[g1->nodes[a].outputs[0]].kind,
                                MP_KIND_GRADIENT);
                continue;
            }
            CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g1, nm, &w), MP_OK);
            CU_ASSERT_EQUAL(mp_graph_node_info(g1, w, &iw), MP_OK);
            CU_ASSERT_EQUAL(iw.n_outputs, 1);
            CU_ASSERT_EQUAL(iw.n_inputs, ia.n_inputs);
            /* the weight gradient is [64,64], the input gradient [32,64] */
            CU_ASSERT_EQUAL(g1->tensors[g1->nodes[w].outputs[0]].bytes,
                            64 * 64 * 4);
            CU_ASSERT_EQUAL(g1->tensors[g1->nodes[a].outputs[0]].bytes,
                            32 * 64 * 4);
            CU_ASSERT(g1->nodes[w].flops > 0);
            CU_ASSERT_DOUBLE_EQUAL(g1->nodes[w].flops, g1->nodes[a].flops,
                                   1e-9 * g1->nodes[a].flops);
        }
    mp_plan *p0 = NULL, *p1 = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g0, NULL, &p0) == MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g1, NULL, &p1) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g1, p1), MP_OK);
    CU_ASSERT(mp_plan_figures(p1)->lower_bound_bytes <=
              mp_plan_figures(p0)->lower_bound_bytes);
    mp_plan_destroy(p0);
    mp_plan_destroy(p1);
    mp_graph_destroy(g0);
    mp_graph_destroy(g1);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

void mp_register_remat_segments(void)
{
    static CU_TestInfo tests[] = {
        {"segments: budget met, verified, within one extra forward",
         test_segments_budget_and_bound},
        {"auto at 2/3 of the no-recompute arena", test_auto_two_thirds},
        {"eviction by the next reader", test_evict_next_use},
        {"optimizer steps in backward", test_step_in_backward},
        {"weight gradients by a node of their own", test_split_weight_grad},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("remat_segments", tests);
}
