/* Schedules, lifetimes, live bytes, lower bound and peak attribution. */
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mp_ctx *ctx;
static mp_graph *g;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static void add_n(const char *name, const char *op, uint32_t *in, uint32_t nin,
                  uint32_t *out, uint32_t nout)
{
    mp_node_desc d = {name, op, NULL, in, nin, out, nout, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

/* x(100,input) -> A -> a(200) -> B -> b(300) -> D -> d(50, output)
 *                  \-> C(a) -> c(400) ------------/
 * with w(1000, weight) read by A. */
static void build_diamond(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, 100);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, 1000);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 200);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 300);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 400);
    uint32_t d = add_t("d", MP_KIND_ACTIVATION, 50);
    uint32_t ia[] = {x, w}, oa[] = {a}, ob[] = {b}, oc[] = {c}, id[] = {b, c},
             od[] = {d};
    add_n("A", "Conv", ia, 2, oa, 1);
    add_n("B", "Relu", oa, 1, ob, 1);
    add_n("C", "Sigmoid", oa, 1, oc, 1);
    add_n("D", "Add", id, 2, od, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, d), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
}

static void destroy(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static const mp_block *block_of(const mp_block *bl, uint32_t n, uint32_t t)
{
    for (uint32_t i = 0; i < n; i++)
        if (bl[i].tensor == t)
            return &bl[i];
    return NULL;
}

static void test_default_schedule(void)
{
    build_diamond();
    mp_step *steps;
    uint32_t ns;
    CU_ASSERT_EQUAL_FATAL(mp__schedule_default(g, &steps, &ns), MP_OK);
    /* compute A, free x, compute B, compute C, free a, compute D, free b, c */
    static const struct {
        mp_step_kind k;
        const char *name;
    } want[] = {{MP_STEP_COMPUTE, "A"}, {MP_STEP_FREE, "x"},
                {MP_STEP_COMPUTE, "B"}, {MP_STEP_COMPUTE, "C"},
                {MP_STEP_FREE, "a"},    {MP_STEP_COMPUTE, "D"},
                {MP_STEP_FREE, "b"},    {MP_STEP_FREE, "c"}};
    CU_ASSERT_EQUAL_FATAL(ns, sizeof want / sizeof want[0]);
    for (uint32_t i = 0; i < ns; i++) {
        CU_ASSERT_EQUAL(steps[i].kind, want[i].k);
        const char *nm = steps[i].kind == MP_STEP_FREE
                             ? g->tensors[steps[i].index].name
                             : g->nodes[steps[i].index].name;
        CU_ASSERT_STRING_EQUAL(nm, want[i].name);
    }
    mp_block *bl;
    uint32_t nb;
    CU_ASSERT_EQUAL_FATAL(mp__schedule_blocks(g, steps, ns, 1, NULL, NULL, &bl, &nb, NULL), MP_OK);
    CU_ASSERT_EQUAL(nb, 5); /* x a b c d; w is persistent */
    const mp_block *bx = block_of(bl, nb, 0), *ba = block_of(bl, nb, 2),
                   *bd = block_of(bl, nb, 5);
    CU_ASSERT_FATAL(bx && ba && bd);
    CU_ASSERT_EQUAL(bx->first, 0);
    CU_ASSERT_EQUAL(bx->end, 1);
    CU_ASSERT_EQUAL(ba->first, 0);
    CU_ASSERT_EQUAL(ba->end, 4);
    CU_ASSERT_EQUAL(bd->first, 5);
    CU_ASSERT_EQUAL(bd->end, ns); /* output: never freed */
    uint64_t *live;
    CU_ASSERT_EQUAL_FATAL(mp__blocks_live(ctx, bl, nb, ns, &live), MP_OK);
    /* step0: x+a=300; 2: a+b=500; 3: a+b+c=900; 5: b+c+d=750 */
    CU_ASSERT_EQUAL(live[0], 300);
    CU_ASSERT_EQUAL(live[1], 200);
    CU_ASSERT_EQUAL(live[2], 500);
    CU_ASSERT_EQUAL(live[3], 900);
    CU_ASSERT_EQUAL(live[4], 700);
    CU_ASSERT_EQUAL(live[5], 750);
    CU_ASSERT_EQUAL(live[6], 450);
    CU_ASSERT_EQUAL(live[7], 50);
    mp__dealloc(ctx, live);
    /* alignment rounds every block up */
    mp__dealloc(ctx, bl);
    CU_ASSERT_EQUAL_FATAL(mp__schedule_blocks(g, steps, ns, 256, NULL, NULL, &bl, &nb, NULL), MP_OK);
    for (uint32_t i = 0; i < nb; i++)
        CU_ASSERT_EQUAL(bl[i].size % 256, 0);
    CU_ASSERT_EQUAL(block_of(bl, nb, 4)->size, 512);
    mp__dealloc(ctx, bl);
    mp__dealloc(ctx, steps);
    destroy();
}

static void test_plan_figures(void)
{
    build_diamond();
    mp_plan_options o;
    mp_plan_options_init(&o);
    CU_ASSERT_EQUAL(o.alignment, 256);
    o.alignment = 1;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    const mp_figures *f = mp_plan_figures(p);
    CU_ASSERT_EQUAL(f->lower_bound_bytes, 900);
    CU_ASSERT_EQUAL(f->peak_step, 3);
    CU_ASSERT_EQUAL(f->persistent_bytes, 1000);
    CU_ASSERT_EQUAL(f->no_reuse_bytes, 100 + 200 + 300 + 400 + 50);
    CU_ASSERT_TRUE(f->arena_bytes >= f->lower_bound_bytes);
    CU_ASSERT_EQUAL(f->peak_bytes, f->arena_bytes + 1000);
    CU_ASSERT_EQUAL(mp_plan_live_bytes(p, 3), 900);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    /* the tensors live at the peak step: a, b, c */
    uint64_t sum = 0;
    const mp_block *bl = mp_plan_blocks(p);
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
        if (bl[i].first <= f->peak_step && f->peak_step < bl[i].end)
            sum += bl[i].size;
    CU_ASSERT_EQUAL(sum, 900);
    mp_plan_destroy(p);
    destroy();
}

static void test_views_extend_lifetime(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, 64);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 64);
    uint32_t v = add_t("v", MP_KIND_ACTIVATION, 0); /* view, inferred */
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 64);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 64);
    uint32_t i1[] = {x}, o1[] = {a}, o2[] = {v}, o3[] = {b}, i4[] = {b, v},
             o4[] = {c};
    add_n("relu", "Relu", i1, 1, o1, 1);
    add_n("view", "Reshape", o1, 1, o2, 1);
    add_n("other", "Exp", o1, 1, o3, 1);
    add_n("last", "Add", i4, 2, o4, 1);
    mp_graph_mark_output(g, c);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *p = NULL;
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.alignment = 1;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    const mp_block *ba = block_of(mp_plan_blocks(p), mp_plan_num_blocks(p), a);
    CU_ASSERT_FATAL(ba != NULL);
    CU_ASSERT_PTR_NULL(block_of(mp_plan_blocks(p), mp_plan_num_blocks(p), v));
    /* a must live until "last" (step of last compute), through its view */
    const mp_step *st = mp_plan_steps(p);
    uint32_t last_step = 0;
    for (uint32_t s = 0; s < mp_plan_num_steps(p); s++)
        if (st[s].kind == MP_STEP_COMPUTE &&
            strcmp(g->nodes[st[s].index].name, "last") == 0)
            last_step = s;
    CU_ASSERT_TRUE(ba->end > last_step);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    destroy();
}

/* Random DAGs: the live bytes per step of a plan equal a brute-force count
 * of tensors between their producer and last consumer, and the verifier
 * accepts every plan. */
static void test_random_dags(void)
{
    uint64_t seed = 12345;
    for (int iter = 0; iter < 40; iter++) {
        ctx = mp_ctx_create(NULL);
        CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
        uint32_t nn = 5 + (uint32_t)(mp_test_rand(&seed) % 60);
        uint32_t *outs = calloc(nn + 1, sizeof *outs);
        char name[32];
        snprintf(name, sizeof name, "in");
        outs[0] = add_t(name, MP_KIND_INPUT, 1 + mp_test_rand(&seed) % 5000);
        for (uint32_t i = 1; i <= nn; i++) {
            snprintf(name, sizeof name, "t%u", i);
            outs[i] = add_t(name, MP_KIND_ACTIVATION,
                            1 + mp_test_rand(&seed) % 5000);
            uint32_t in[3], k = 1 + (uint32_t)(mp_test_rand(&seed) % 3);
            for (uint32_t j = 0; j < k; j++)
                in[j] = outs[mp_test_rand(&seed) % i];
            snprintf(name, sizeof name, "n%u", i);
            mp_node_desc d = {name, "Op", NULL, in, k, &outs[i], 1,
                              MP_PHASE_FORWARD};
            CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
        }
        mp_graph_mark_output(g, outs[nn]);
        CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
        mp_plan *p = NULL;
        mp_plan_options o;
        mp_plan_options_init(&o);
        o.alignment = 1 + (uint64_t)(iter % 3) * 63;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
        const mp_figures *f = mp_plan_figures(p);
        CU_ASSERT_TRUE(f->arena_bytes >= f->lower_bound_bytes);
        /* brute force: node k computes at the k-th COMPUTE; tensor of node i
         * lives from its compute to its last consumer's compute */
        uint64_t best = 0;
        for (uint32_t k = 0; k < nn; k++) {
            uint64_t live = 0;
            for (uint32_t t = 0; t <= nn; t++) {
                const mp__tensor *tt = &g->tensors[outs[t]];
                uint32_t from = t == 0 ? 0 : t - 1, to = from;
                if (tt->flags & MP__TF_OUTPUT)
                    to = nn;
                for (uint32_t c = 0; c < tt->n_cons; c++) {
                    uint32_t cn = g->cons[tt->cons_begin + c];
                    if (cn > to)
                        to = cn;
                }
                if (t == 0 && tt->n_cons == 0)
                    continue;
                uint64_t sz = (tt->bytes + o.alignment - 1) / o.alignment *
                              o.alignment;
                if (from <= k && k <= to)
                    live += sz;
            }
            if (live > best)
                best = live;
        }
        CU_ASSERT_EQUAL(f->lower_bound_bytes, best);
        mp_plan_destroy(p);
        free(outs);
        destroy();
    }
}

static CU_TestInfo tests[] = {
    {"default schedule and lifetimes", test_default_schedule},
    {"plan figures and peak", test_plan_figures},
    {"views extend lifetimes", test_views_extend_lifetime},
    {"random DAGs: lower bound by brute force", test_random_dags},
    CU_TEST_INFO_NULL,
};

void mp_register_schedule(void) { mp_test_add_suite("schedule", tests); }
