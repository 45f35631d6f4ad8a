/* The min-cut save/recompute choice (solvers/remat/remat_mincut.c, solver
 * "mincut"): on two hand-made SiLU blocks the cut saves the MatMul
 * outputs alone and recomputes the Sigmoids and Muls in backward; on the
 * repository's transformer block and ResNet-50 training graphs the plan
 * verifies, recomputes, and peaks below the plan that saves everything;
 * `plan --train` prints both peaks, `--save eager` keeps today's plan;
 * under a budget, dtr and selective start from the min-cut plan. */
#include "heuristics.h"
#include "planner.h"
#include "remat.h"
#include "remat_mincut.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two SiLU blocks, x[32,64] -> h = MatMul(x, Wk) -> s = Sigmoid(h) ->
 * m = Mul(h, s), then y = MatMul(m, Wo): every activation 8 KiB.
 * Backward reads each block's h and s (the Mul's inputs) and m (the next
 * MatMul's input), x, and y (the loss's gradient). */
static mp_graph *silu_train(mp_ctx *ctx)
{
    mp_graph *g = NULL, *t = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {32, 64}, dw[] = {64, 64};
    char nm[32];
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    for (int k = 1; k <= 2; k++) {
        snprintf(nm, sizeof nm, "W%d", k);
        uint32_t w = mp_test_tensor(g, nm, MP_KIND_WEIGHT, 2, dw);
        snprintf(nm, sizeof nm, "h%d", k);
        uint32_t h = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        snprintf(nm, sizeof nm, "s%d", k);
        uint32_t s = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        snprintf(nm, sizeof nm, "m%d", k);
        uint32_t m = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dx);
        uint32_t i1[] = {x, w}, i3[] = {h, s};
        snprintf(nm, sizeof nm, "mm%d", k);
        mp_test_node(g, nm, "MatMul", i1, 2, &h, 1);
        snprintf(nm, sizeof nm, "sig%d", k);
        mp_test_node(g, nm, "Sigmoid", &h, 1, &s, 1);
        snprintf(nm, sizeof nm, "mul%d", k);
        mp_test_node(g, nm, "Mul", i3, 2, &m, 1);
        x = m;
    }
    uint32_t wo = mp_test_tensor(g, "Wo", MP_KIND_WEIGHT, 2, dw);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dx);
    uint32_t i4[] = {x, wo};
    mp_test_node(g, "mmo", "MatMul", i4, 2, &y, 1);
    CU_ASSERT_FATAL(mp_graph_mark_output(g, y) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    /* no optimizer temporary: the peak is the activations' */
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    CU_ASSERT_FATAL(mp_train_graph(g, &o, &t, NULL) == MP_OK);
    mp_graph_destroy(g);
    return t;
}

static uint32_t unit_named(const mp__remat_prob *p, const char *name)
{
    for (uint32_t u = 0; u < p->T; u++)
        if (strcmp(p->name[u], name) == 0)
            return u;
    CU_FAIL(name);
    return 0;
}

static void test_silu_cut(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = silu_train(ctx);
    mp__remat_prob p;
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 64, &p) == MP_OK);
    uint32_t mm1 = unit_named(&p, "mm1"), sig = unit_named(&p, "sig1"),
             mul = unit_named(&p, "mul1"), mm2 = unit_named(&p, "mm2"),
             sig2 = unit_named(&p, "sig2"), mul2 = unit_named(&p, "mul2"),
             mmo = unit_named(&p, "mmo");
    CU_ASSERT(!p.cheap[mm1] && !p.cheap[mm2] && !p.cheap[mmo]);
    CU_ASSERT(p.cheap[sig] && p.cheap[mul] && p.cheap[sig2] && p.cheap[mul2]);
    mp__remat_mincut_choice c;
    CU_ASSERT_FATAL(mp__remat_mincut_choose(&p, &c) == MP_OK);
    /* each block's h alone and y (3 x 8 KiB) instead of h, s, m, y */
    CU_ASSERT(c.saved[mm1] && c.saved[mm2] && c.saved[mmo]);
    CU_ASSERT(!c.saved[sig] && !c.saved[mul] && !c.saved[sig2] &&
              !c.saved[mul2]);
    CU_ASSERT_EQUAL(c.saved_bytes, 3 * 8192);
    CU_ASSERT_EQUAL(c.n_recomputed, 4);
    mp__remat_mincut_free(&p, &c);
    mp__remat_prob_free(&p);

    /* the plan: four RECOMPUTE steps (the Sigmoids and Muls), verified,
     * below the no-recompute plan */
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    mp_remat_result r;
    mp_plan *mc = NULL, *eager = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &mc, &r) == MP_OK);
    CU_ASSERT_STRING_EQUAL(r.solver, "mincut");
    CU_ASSERT_EQUAL(r.n_recompute, 4);
    CU_ASSERT(r.extra_cost > 0);
    CU_ASSERT_EQUAL(mp_verify_plan(g, mc), MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &eager) == MP_OK);
    CU_ASSERT(mp_plan_figures(mc)->lower_bound_bytes <
              mp_plan_figures(eager)->lower_bound_bytes);
    uint32_t nrc = 0;
    const mp_step *steps = mp_plan_steps(mc);
    for (uint32_t i = 0; i < mp_plan_num_steps(mc); i++) {
        if (steps[i].kind == MP_STEP_RECOMPUTE) {
            nrc++;
            mp_node_info ni;
            CU_ASSERT_FATAL(mp_graph_node_info(g, steps[i].index, &ni) ==
                            MP_OK);
            CU_ASSERT(strncmp(ni.name, "sig", 3) == 0 ||
                      strncmp(ni.name, "mul", 3) == 0);
        }
    }
    CU_ASSERT_EQUAL(nrc, 4);
    mp_plan_destroy(mc);
    mp_plan_destroy(eager);

    /* nothing cheap: the cut saves what eager saves, no recompute */
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 64, &p) == MP_OK);
    memset(p.cheap, 0, p.T);
    CU_ASSERT_FATAL(mp__remat_mincut_choose(&p, &c) == MP_OK);
    CU_ASSERT(c.saved[mm1] && c.saved[sig] && c.saved[mul] &&
              c.saved[mm2] && c.saved[sig2] && c.saved[mul2]);
    CU_ASSERT_EQUAL(c.n_recomputed, 0);
    mp__remat_out o;
    CU_ASSERT_FATAL(mp__remat_mincut_schedule(&p, c.saved, &o) == MP_OK);
    CU_ASSERT_EQUAL(o.n_recompute, 0);
    mp__dealloc(ctx, o.steps);
    mp__remat_mincut_free(&p, &c);
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* A repository example's training graph (Adam in implementation impl):
 * the min-cut plan verifies and recomputes; both placed peaks. */
static void example(const char *rel, mp_optimizer_impl impl,
                    uint64_t *eager_peak, uint64_t *mincut_peak,
                    uint32_t *n_rec)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s", MP_SOURCE_DIR, rel);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *g = NULL;
    CU_ASSERT_FATAL(mp_graph_load(ctx, path, &f) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = impl;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &g, NULL) == MP_OK);
    mp_plan *eager = NULL, *mc = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &eager) == MP_OK);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    mp_remat_result r;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &mc, &r) == MP_OK);
    CU_ASSERT_STRING_EQUAL(r.solver, "mincut");
    CU_ASSERT_EQUAL(mp_verify_plan(g, mc), MP_OK);
    *eager_peak = mp_plan_figures(eager)->peak_bytes;
    *mincut_peak = mp_plan_figures(mc)->peak_bytes;
    *n_rec = r.n_recompute;
    mp_plan_destroy(eager);
    mp_plan_destroy(mc);
    mp_graph_destroy(f);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_examples(void)
{
    uint64_t e, m;
    uint32_t n;
    /* transformer block: 162.1 MiB eager, 153.1 MiB min-cut when written
     * (the GELU, both LayerNorms, the attention's scale, mask add and
     * softmax recomputed from the MatMul outputs) */
    example("transformer_block.json", MP_OPTIM_IMPL_FOREACH, &e, &m, &n);
    CU_ASSERT(n > 0);
    CU_ASSERT(m < e);
    /* ResNet-50 with fused Adam (no optimizer temporary): 451.2 MiB
     * eager, 431.1 MiB min-cut (BatchNorm and ReLU outputs recomputed
     * from the convolutions'), at least 3% below */
    example("resnet50.json", MP_OPTIM_IMPL_FUSED, &e, &m, &n);
    CU_ASSERT(n > 0);
    CU_ASSERT(m * 100 < e * 97);
    /* with foreach Adam (the default) the peak is the optimizer step's,
     * after backward: both 488.5 MiB, the min-cut never above */
    example("resnet50.json", MP_OPTIM_IMPL_FOREACH, &e, &m, &n);
    CU_ASSERT(n > 0);
    CU_ASSERT(m <= e);
}


/* ---- budget heuristics started from the min-cut plan -------------------- */
/* The best feasible replay a heuristic offers (its name and cost). */
typedef struct seen {
    const mp__remat_prob *p;
    uint64_t cap;
    double cost;
    const char *name;
} seen;

static mp_status seen_eval(void *user, const char *name,
                           const mp__remat_policy *pol, mp__remat_out *o)
{
    seen *b = user;
    mp_status st = mp__remat_simulate(b->p, pol, 0, o);
    if (!st && mp__remat_fits(o, b->cap, -1) && o->extra_cost < b->cost) {
        b->cost = o->extra_cost;
        b->name = name;
    }
    return st;
}

/* dtr (solver 0) or selective (1, every order, with and without
 * eviction) at cap, from checkpoint-all (seed NULL) or the seed. */
static seen run_heuristic(const mp__remat_prob *p, int which, uint64_t cap,
                          const uint8_t *seed)
{
    seen b = {p, cap, INFINITY, NULL};
    mp__remat_goal g = {cap, -1, 0, seen_eval, &b, seed};
    if (which == 0)
        CU_ASSERT_EQUAL(mp__remat_dtr(p, &g), MP_OK);
    for (int o = 0; which == 1 && o < 3; o++)
        for (int e = 0; e < 2; e++)
            CU_ASSERT_EQUAL(mp__remat_selective(p, &g, o, e), MP_OK);
    return b;
}

/* The transformer block (fused Adam: the peak is the activations') at 90%
 * of the min-cut plan's live peak: started from the min-cut plan (its
 * recomputed values dropped already), dtr and selective recompute less
 * than from checkpoint-all, and the budget's plan is the seeded one,
 * verified. */
static void test_seeded_start(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/transformer_block.json",
             MP_SOURCE_DIR);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *g = NULL;
    CU_ASSERT_FATAL(mp_graph_load(ctx, path, &f) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &g, NULL) == MP_OK);
    mp__remat_prob p;
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 64, &p) == MP_OK);
    uint8_t *seed = malloc((size_t)p.T + 1);
    CU_ASSERT_FATAL(seed != NULL);
    uint32_t n = 0;
    CU_ASSERT_FATAL(mp__remat_mincut_seed(&p, seed, &n) == MP_OK);
    CU_ASSERT(n > 0);
    /* the seeds are the min-cut's recomputed values */
    mp__remat_mincut_choice c;
    CU_ASSERT_FATAL(mp__remat_mincut_choose(&p, &c) == MP_OK);
    CU_ASSERT_EQUAL(n, c.n_recomputed);
    for (uint32_t u = 0; u < p.T; u++)
        if (seed[u])
            CU_ASSERT(p.fwd[u] && !c.saved[u]);
    mp__remat_out mo;
    CU_ASSERT_FATAL(mp__remat_mincut_schedule(&p, c.saved, &mo) == MP_OK);
    mp__dealloc(ctx, mo.steps);
    mp__remat_mincut_free(&p, &c);
    uint64_t cap = mo.peak / 100 * 90;
    for (int which = 0; which < 2; which++) {
        seen a = run_heuristic(&p, which, cap, NULL);
        seen b = run_heuristic(&p, which, cap, seed);
        /* measured (the heads' permutes read in place by the products):
         * dtr 0.00484 from checkpoint-all, 0.00366 from the min-cut;
         * selective 0.00484 and 0.00363 */
        CU_ASSERT_FATAL(b.name != NULL);
        CU_ASSERT(strncmp(b.name, "mincut+", 7) == 0);
        CU_ASSERT(a.name == NULL || b.cost * 1.2 < a.cost);
    }
    uint64_t persistent = p.persistent;
    mp__remat_prob_free(&p);
    free(seed);
    /* the plans: the seeded schedule wins, the verifier replays it */
    mp_remat_solver sv[] = {MP_REMAT_DTR, MP_REMAT_SELECTIVE, MP_REMAT_AUTO};
    for (int i = 0; i < 3; i++) {
        mp_remat_options ro;
        mp_remat_options_init(&ro);
        ro.solver = sv[i];
        ro.budget = persistent + cap;
        mp_remat_result r;
        mp_plan *plan = NULL;
        CU_ASSERT_FATAL(mp_remat_plan(g, &ro, NULL, &plan, &r) == MP_OK);
        CU_ASSERT(strncmp(r.solver, "mincut+", 7) == 0);
        CU_ASSERT(mp_plan_figures(plan)->peak_bytes <= ro.budget);
        CU_ASSERT(r.n_recompute > 0);
        CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
        mp_plan_destroy(plan);
    }
    mp_graph_destroy(g);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

static char out[1 << 16];

static void test_cli_save(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --train "
             "--attention naive",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "save (mincut, mincut kept): peak ") != NULL);
    CU_ASSERT(strstr(out, "; eager 156.1 MiB") != NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --train "
             "--save eager --attention naive",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "save (") == NULL);
    CU_ASSERT(strstr(out, "peak         156.1 MiB") != NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --train "
             "--json --attention naive",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "\"save\"") != NULL);
    CU_ASSERT(strstr(out, "\"eager_peak_bytes\": 163715388") != NULL);
    /* usage errors: a bad value, --save without --train */
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --train "
             "--save lazy 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT(strstr(out, "eager or mincut") != NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/transformer_block.json' --save eager "
             "2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
}

void mp_register_remat_mincut(void)
{
    static CU_TestInfo tests[] = {
        {"SiLU block: the MatMul output saved, the chain recomputed",
         test_silu_cut},
        {"transformer block and ResNet-50: verified, below eager",
         test_examples},
        {"plan --train: both peaks, --save eager", test_cli_save},
        {"budget heuristics started from the min-cut plan",
         test_seeded_start},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("remat_mincut", tests);
}
