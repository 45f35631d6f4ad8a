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
    CU_ASSERT_EQUAL(mp_test_count(s, "2 ops, 8.00 KiB"), 1);
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
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"/enc/\\n2 ops"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 3);   /* x, enc->add (2 tensors), y */
    CU_ASSERT(renders(path));
    free(s);
    remove(path);
    CU_ASSERT_EQUAL(mp_plan_write_dot(plan, "/nonexistent-dir/g.dot", NULL),
                    MP_ERR_IO);
    teardown();
}

/* A chain of nodes named names[i] (op ops[i]), each reading the tensor
 * before it (x, the graph input, first): 1 KiB float tensors. */
static void build_chain(const char *const *names, const char *const *ops,
                        int n)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dims[2] = {1, 1024};
    uint32_t prev = 0, t;
    mp_tensor_desc d = {"x", MP_DTYPE_FLOAT32, 2, dims, 0, MP_KIND_INPUT};
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &d, &prev), MP_OK);
    for (int i = 0; i < n; i++) {
        char tn[64];
        snprintf(tn, sizeof tn, "t%d", i);
        mp_tensor_desc o = {tn, MP_DTYPE_FLOAT32, 2, dims, 0,
                            MP_KIND_ACTIVATION};
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &o, &t), MP_OK);
        uint32_t in[] = {prev}, out[] = {t};
        mp_node_desc nd = {names[i], ops[i], NULL, in, 1, out, 1,
                           MP_PHASE_FORWARD};
        CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &nd, NULL), MP_OK);
        prev = t;
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, prev), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
}

/* 1 when the edges "A -> B" of a DOT text form no cycle (node IDs of up
 * to 15 characters, at most 4096 of them). */
static int dot_acyclic(const char *s)
{
    enum { MAXN = 4096 };
    static char ids[MAXN][16];
    static int head[MAXN], nxt[4 * MAXN], to[4 * MAXN], color[MAXN],
        stack[MAXN], it[MAXN];
    int n = 0, ne = 0;
    memset(head, -1, sizeof head);
    for (const char *p = strstr(s, " -> "); p; p = strstr(p + 4, " -> ")) {
        const char *a = p;
        while (a > s && a[-1] != '\t' && a[-1] != ' ' && a[-1] != '\n')
            a--;
        const char *b = p + 4, *be = b;
        while (*be && *be != ' ' && *be != '\t' && *be != '\n' &&
               *be != '[' && *be != ';')
            be++;
        int ab[2] = {-1, -1};
        for (int k = 0; k < 2; k++) {
            const char *x = k ? b : a;
            size_t len = (size_t)(k ? be - b : p - a);
            if (len == 0 || len > 15)
                return 0;
            for (int i = 0; i < n && ab[k] < 0; i++)
                if (strlen(ids[i]) == len && memcmp(ids[i], x, len) == 0)
                    ab[k] = i;
            if (ab[k] < 0) {
                if (n == MAXN)
                    return 0;
                memcpy(ids[n], x, len);
                ids[n][len] = 0;
                ab[k] = n++;
            }
        }
        if (ne == 4 * MAXN)
            return 0;
        to[ne] = ab[1];
        nxt[ne] = head[ab[0]];
        head[ab[0]] = ne++;
    }
    memset(color, 0, sizeof color);
    for (int r = 0; r < n; r++) {
        if (color[r])
            continue;
        int sp = 0;
        stack[sp] = r;
        it[sp++] = head[r];
        color[r] = 1;
        while (sp) {
            int v = stack[sp - 1], e = it[sp - 1];
            if (e < 0) {
                color[v] = 2;
                sp--;
                continue;
            }
            it[sp - 1] = nxt[e];
            if (color[to[e]] == 1)
                return 0;   /* a back edge: a cycle */
            if (color[to[e]] == 0) {
                color[to[e]] = 1;
                stack[sp] = to[e];
                it[sp++] = head[to[e]];
            }
        }
    }
    return 1;
}

/* The DOT of the plan with options o, its long lines joined (agwrite
 * breaks a long string with a backslash and a newline). */
static char *write_dot(const mp_dot_options *o, char *path, size_t cap)
{
    temp_dot(path, cap);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(plan, path, o), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == '\n')
            r++;
        else
            *w++ = *r;
    }
    *w = 0;
    return s;
}

/* Modules from '/' names as nested clusters (TensorBoard's name scopes);
 * collapsed at a depth, the modules are boxes in their parents' clusters;
 * above max_nodes the graph collapses by itself, never with 0. */
static void test_dot_modules(void)
{
    if (!mp_dot_available())
        return;
    static const char *const names[] = {
        "/layer1/0/conv/Conv", "/layer1/0/relu/Relu", "/layer1/1/conv/Conv",
        "/layer1/1/relu/Relu", "/head/fc/Gemm"};
    static const char *const ops[] = {"Relu", "Relu", "Relu", "Relu",
                                      "Relu"};
    build_chain(names, ops, 5);
    char path[256];
    char *s = write_dot(NULL, path, sizeof path);
    /* layer1 > 0 > conv, relu; layer1 > 1 > conv, relu; head > fc */
    CU_ASSERT_EQUAL(mp_test_count(s, "subgraph cluster_"), 9);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=layer1"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=0,"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=conv"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 0);
    CU_ASSERT(renders(path));
    free(s);
    mp_dot_options o;
    mp_dot_options_init(&o);
    o.collapse_depth = 2;
    s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 2);   /* layer1/0, layer1/1 */
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"0\\n2 ops, 8.00 KiB\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"1\\n2 ops, 8.00 KiB\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "subgraph cluster_"), 2); /* layer1, head */
    CU_ASSERT_EQUAL(mp_test_count(s, "->"), 3);   /* x, 0 -> 1, 1 -> fc */
    CU_ASSERT_EQUAL(mp_test_count(s, "modules at name depth 2"), 1);
    CU_ASSERT(renders(path));
    free(s);
    /* the default collapse: above max_nodes (5 drawn nodes > 4) */
    mp_dot_options_init(&o);
    CU_ASSERT_EQUAL(o.max_nodes, 120);
    o.max_nodes = 4;
    s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "3-D boxes: 2 groups of ops"), 1);
    free(s);
    o.max_nodes = 5;   /* not above it */
    s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "3-D boxes"), 0);
    free(s);
    o.max_nodes = 0;   /* never */
    s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 0);
    free(s);
    remove(path);
    teardown();
}

/* /a/ runs before and after /b/y, which reads /a/'s output and feeds it:
 * one box for a would be a cycle a -> b -> a; it is drawn as two parts. */
static void test_dot_acyclic(void)
{
    if (!mp_dot_available())
        return;
    static const char *const names[] = {"/a/x1", "/a/x2", "/b/y", "/a/x3",
                                        "/a/x4"};
    static const char *const ops[] = {"Relu", "Relu", "Relu", "Relu",
                                      "Relu"};
    build_chain(names, ops, 5);
    mp_dot_options o;
    mp_dot_options_init(&o);
    o.collapse_depth = 1;
    char path[256];
    char *s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"a (1/2)\\n2 ops"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"a (2/2)\\n2 ops"), 1);
    CU_ASSERT(dot_acyclic(s));
    CU_ASSERT(renders(path));
    /* the checker itself finds a cycle */
    CU_ASSERT(!dot_acyclic("\tg0 -> g1 [x];\n\tg1 -> g0;\n"));
    CU_ASSERT(dot_acyclic("\tg0 -> g1 [x];\n\tg0 -> g2;\n\tg1 -> g2;\n"));
    free(s);
    remove(path);
    teardown();
}

/* A real model (examples/resnet50.json, 175 nodes named layer1.0.conv1):
 * collapsed by default into its bottleneck blocks, acyclic, rendered;
 * an inference graph's legend has no backward or optimizer colour, a
 * training graph's has both. */
static void test_dot_resnet_legend(void)
{
    if (!mp_dot_available())
        return;
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, MP_SOURCE_DIR
                                        "/examples/resnet50.json", &g),
                          MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    char path[256];
    char *s = write_dot(NULL, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 16);   /* 3 + 4 + 6 + 3 */
    CU_ASSERT_EQUAL(mp_test_count(s, "modules at name depth 2"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=\"0\\n12 ops"), 4);
    CU_ASSERT_EQUAL(mp_test_count(s, "label=layer4"), 1);
    CU_ASSERT(dot_acyclic(s));
    CU_ASSERT_EQUAL(mp_test_count(s, "blue forward"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "orange backward"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "green optimizer"), 0);
    CU_ASSERT(renders(path));
    free(s);
    mp_dot_options o;
    mp_dot_options_init(&o);
    o.max_nodes = 0;
    s = write_dot(&o, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 0);
    CU_ASSERT(dot_acyclic(s));
    free(s);
    remove(path);
    teardown();
    build();   /* forward, backward and optimizer nodes */
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    s = write_dot(NULL, path, sizeof path);
    CU_ASSERT_EQUAL(mp_test_count(s, "blue forward, orange backward, green "
                                     "optimizer"), 1);
    free(s);
    remove(path);
    teardown();
}

void mp_register_dot(void)
{
    static CU_TestInfo tests[] = {
        {"plain", test_dot_plain},
        {"recompute", test_dot_recompute},
        {"fused_pools", test_dot_fused_pools},
        {"collapse", test_dot_collapse},
        {"modules", test_dot_modules},
        {"acyclic", test_dot_acyclic},
        {"resnet_legend", test_dot_resnet_legend},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("dot", tests);
}
