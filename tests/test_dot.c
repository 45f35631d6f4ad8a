/* DOT output through cgraph (report/dot.c): phases, peak tensors, sizes,
 * recompute marks, clusters, collapsing; rendered with `dot -Tsvg` when
 * Graphviz's dot is installed. Without Graphviz in the build the writer
 * must say MP_ERR_UNSUPPORTED. */
#include "planner.h"
#include "viz.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mp_ctx *ctx;
static mp_graph *g;
static mp_plan *plan;

/* x -> /enc/r1 -> h1 -> /enc/r2 -> h2; /dec/add(h2, h1) -> y [backward];
 * /opt/upd(y) -> z [optimizer], output */
static void build(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dims[2] = {1, 1024};
    const char *names[] = {"x", "h1", "h2", "y", "z"};
    uint32_t t[5];
    for (int i = 0; i < 5; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_FLOAT32, 2, dims, 0,
                            i ? MP_KIND_ACTIVATION : MP_KIND_INPUT};
        CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &t[i]), MP_OK);
    }
    uint32_t i1[] = {t[0]}, o1[] = {t[1]}, i2[] = {t[1]}, o2[] = {t[2]},
             i3[] = {t[2], t[1]}, o3[] = {t[3]}, i4[] = {t[3]}, o4[] = {t[4]};
    mp_node_desc n[] = {
        {"/enc/r1", "Relu", NULL, i1, 1, o1, 1, MP_PHASE_FORWARD},
        {"/enc/r2", "Relu", NULL, i2, 1, o2, 1, MP_PHASE_FORWARD},
        {"/dec/add", "Add", NULL, i3, 2, o3, 1, MP_PHASE_BACKWARD},
        {"/opt/upd", "Neg", NULL, i4, 1, o4, 1, MP_PHASE_OPTIMIZER}};
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(mp_graph_add_node(g, &n[i], NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, t[4]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
}

static void teardown(void)
{
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    plan = NULL;
    g = NULL;
    ctx = NULL;
}

/* Renders path with dot -Tsvg when dot is installed; 1 when it rendered
 * (or dot is absent), 0 on failure. */
static int renders(const char *path)
{
    if (access("/usr/bin/dot", X_OK) != 0) {
        fprintf(stderr, "\n  dot: rendering skipped: /usr/bin/dot not found "
                        "(apt install graphviz)\n");
        return 1;
    }
    char cmd[600], out[256];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' 2>&1 | grep -c '<svg'", path);
    return mp_test_run(cmd, out, sizeof out) == 0 && atoi(out) == 1;
}

static const char *temp_dot(char *buf, size_t cap)
{
    const char *p = mp_test_write_temp(".dot", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    snprintf(buf, cap, "%s", p);
    return buf;
}

static void test_dot_plain(void)
{
    build();
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0; /* peak figures below: without in-place reuse */
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    char path[256];
    temp_dot(path, sizeof path);
    mp_status st = mp_plan_write_dot(plan, path, NULL);
    if (!mp_dot_available()) {
        CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "Graphviz"));
        teardown();
        return;
    }
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(strncmp(s, "digraph", 7) == 0);
    /* phases */
    CU_ASSERT_EQUAL(mp_test_count(s, "fillcolor=\"#c6dbef\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "fillcolor=\"#fdd0a2\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "fillcolor=\"#c7e9c0\""), 1);
    /* clusters enc, dec, opt */
    CU_ASSERT_EQUAL(mp_test_count(s, "subgraph cluster_"), 3);
    /* edges: x->r1, h1->r2, h2->add, h1->add, y->upd: labelled 4.00 KiB */
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 5);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"4.00 KiB\""), 5);
    /* peak: at /dec/add (h1, h2, y live): that node and the edges of
     * h1 (2) and h2 (1) red; y is computed there and read later (1) */
    uint32_t ps = mp_plan_figures(plan)->peak_step;
    CU_ASSERT_EQUAL(mp_plan_steps(plan)[ps].kind, MP_STEP_COMPUTE);
    CU_ASSERT_EQUAL(mp_plan_steps(plan)[ps].index, 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "penwidth=3"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "fontcolor=red"), 4);   /* 4 edges */
    CU_ASSERT_EQUAL(mp_test_count(s, "penwidth=2"), 4);
    CU_ASSERT_EQUAL(mp_test_count(s, "color=red"), 4 * 2 + 1);   /* and a node */
    CU_ASSERT(renders(path));
    free(s);
    remove(path);
    teardown();
}

/* --fuse: h2 (r2 -> add) and y (add -> upd) are fused: dotted edges
 * labelled "fused", no bytes; z, at the end of the chain, is written over
 * h1 in place: both edges of h1 say so. Two pools: the label names them. */
static void test_dot_fused_pools(void)
{
    if (!mp_dot_available())
        return;
    build();
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(plan, 2), 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(plan, 3), 1);
    char path[256];
    temp_dot(path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, NULL), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 5);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=fused"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "style=dotted"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"4.00 KiB in place\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"4.00 KiB\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "2 fused tensors (dotted edges) take "
                                     "no memory"), 1);
    CU_ASSERT(renders(path));
    free(s);
    mp_plan_destroy(plan);
    plan = NULL;

    mp_constraints *c = mp_test_two_pools(ctx, "sram", "dram", MP_NONE, 1);
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create_constrained(g, &po, c, &plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_num_pools(plan), 2);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, NULL), MP_OK);
    s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    mp_pool_info i0, i1;
    CU_ASSERT_EQUAL(mp_plan_pool_info(plan, 0, &i0), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_pool_info(plan, 1, &i1), MP_OK);
    char want[160], a[32], b[32];
    snprintf(want, sizeof want, "arena = the sum of its pools: sram %s, "
             "dram %s", mp__viz_size(i0.arena_bytes, a, sizeof a),
             mp__viz_size(i1.arena_bytes, b, sizeof b));
    CU_ASSERT_EQUAL(mp_test_count(s, want), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "fused"), 0);
    CU_ASSERT(renders(path));
    free(s);
    remove(path);
    mp_constraints_destroy(c);
    teardown();
}

/* a schedule with a RECOMPUTE step: the node is marked */
static void test_dot_recompute(void)
{
    if (!mp_dot_available())
        return;
    build();
    mp_step *steps = mp__alloc(ctx, 10 * sizeof *steps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(steps);
    uint32_t x = 0, h1 = 1, h2 = 2, y = 3;
    mp_step seq[] = {{MP_STEP_COMPUTE, 0}, {MP_STEP_COMPUTE, 1},
                     {MP_STEP_FREE, h1},   {MP_STEP_RECOMPUTE, 0},
                     {MP_STEP_FREE, x},    {MP_STEP_COMPUTE, 2},
                     {MP_STEP_FREE, h1},   {MP_STEP_FREE, h2},
                     {MP_STEP_COMPUTE, 3}, {MP_STEP_FREE, y}};
    memcpy(steps, seq, sizeof seq);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0; /* peak figures below: without in-place reuse */
    CU_ASSERT_EQUAL_FATAL(mp__plan_from_schedule(g, steps, 10, &po,
                                                mp__now_seconds(), &plan),
                          MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    char path[256];
    temp_dot(path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, NULL), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "recomputed x1"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "filled,dashed"), 1);
    CU_ASSERT(renders(path));
    free(s);
    remove(path);
    teardown();
}

static void test_dot_collapse(void)
{
    if (!mp_dot_available())
        return;
    build();
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0; /* peak figures below: without in-place reuse */
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    char path[256];
    temp_dot(path, sizeof path);
    mp_dot_options o;
    mp_dot_options_init(&o);
    o.collapse_depth = 1;   /* enc (2 nodes); dec and opt: one node each */
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, &o), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"/dec/add\\nAdd\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "2 nodes"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "subgraph cluster_"), 0);
    /* x->enc, enc->dec (h1 and h2: one edge, 8 KiB), dec->opt */
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 3);
    CU_ASSERT_EQUAL(mp_test_count(s, "8.00 KiB (2 tensors)"), 1);
    CU_ASSERT(renders(path));
    free(s);
    /* by prefix: only /enc/ collapses */
    mp_dot_options_init(&o);
    o.collapse_prefix = "/nothing,/enc/";
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, &o), MP_OK);
    s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "/enc/*"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 3);   /* x, enc->add (2 tensors), y */
    CU_ASSERT(renders(path));
    free(s);
    remove(path);
    CU_ASSERT_EQUAL(mp_plan_write_dot(plan, "/nonexistent-dir/g.dot", NULL),
                    MP_ERR_IO);
    teardown();
}

void mp_register_dot(void)
{
    static CU_TestInfo tests[] = {
        {"plain", test_dot_plain},
        {"recompute", test_dot_recompute},
        {"fused_pools", test_dot_fused_pools},
        {"collapse", test_dot_collapse},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("dot", tests);
}
