/* The PyTorch memory snapshot (report/memviz.c): its pickle loaded by
 * python3's pickle and checked by scripts/check_memory_viz.py (segments
 * tiling the arena and the persistent tensors, one alloc per block, each
 * free a free_requested/free_completed pair, the replay the viewer does);
 * skipped, saying so, where python3 is missing. */
#include "planner.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int have_python(void)
{
    char out[64];
    if (mp_test_run("python3 -c 'import pickle' 2>&1 && echo yes", out,
                    sizeof out) == 0 && strstr(out, "yes"))
        return 1;
    fprintf(stderr, "\n  memviz: python3 checks skipped: python3 not found\n");
    return 0;
}

/* Runs the checker on path expecting n_alloc alloc events: its exit code
 * (0 passed), its output in out. */
static int check(const char *path, uint32_t n_alloc, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 '%s/scripts/check_memory_viz.py' '%s' --no-torch "
             "--expect-blocks %u 2>&1",
             MP_SOURCE_DIR, path, n_alloc);
    return mp_test_run(cmd, out, cap);
}

static uint32_t blocks_drawn(const mp_plan *p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++) {
        const mp_block *b = &mp_plan_blocks(p)[i];
        n += b->size > 0 && b->end > b->first;
    }
    return n;
}

/* A transformer block (examples/transformer_block.json): the snapshot
 * loads; two segments (arena, persistent); the checker fails on a wrong
 * block count, so it does check. */
static void test_memviz_structure(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, MP_SOURCE_DIR
                                        "/examples/transformer_block.json",
                                        &g), MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    const char *tmp = mp_test_write_temp(".pickle", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char path[256];
    snprintf(path, sizeof path, "%s", tmp);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_memory_viz(plan, path), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(memcmp(s, "\x80\x02}", 3) == 0);   /* PROTO 2, a dict */
    free(s);
    uint32_t n = blocks_drawn(plan);
    CU_ASSERT(n > 10);
    char out[4096];
    if (have_python()) {
        int rc = check(path, n, out, sizeof out);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "structure: 2 segments"));
        if (rc)
            fprintf(stderr, "\n%s\n", out);
        CU_ASSERT_NOT_EQUAL(check(path, n + 1, out, sizeof out), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "alloc events, expected"));
    }
    CU_ASSERT_EQUAL(mp_plan_write_memory_viz(plan, "/nonexistent-dir/x.pickle"),
                    MP_ERR_IO);
    CU_ASSERT_EQUAL(mp_plan_write_memory_viz(plan, NULL), MP_ERR_INVALID_ARG);
    remove(path);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Two pools: one arena segment each (three segments), every tensor name
 * readable although one is not UTF-8. */
static void test_memviz_pools(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dims[2] = {1, 1024}, wd[1] = {1024};
    const char *names[] = {"x", "h\xff", "y"};
    uint32_t t[3], w;
    for (int i = 0; i < 3; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_FLOAT32, 2, dims, 0,
                            i ? MP_KIND_ACTIVATION : MP_KIND_INPUT};
        CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &t[i]), MP_OK);
    }
    mp_tensor_desc wdsc = {"w", MP_DTYPE_FLOAT32, 1, wd, 0, MP_KIND_WEIGHT};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &wdsc, &w), MP_OK);
    uint32_t i1[] = {t[0], w}, o1[] = {t[1]}, i2[] = {t[1]}, o2[] = {t[2]};
    mp_node_desc n1 = {"/a/mul", "Mul", NULL, i1, 2, o1, 1, MP_PHASE_FORWARD};
    mp_node_desc n2 = {"/b/relu", "Relu", NULL, i2, 1, o2, 1,
                       MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &n1, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &n2, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, t[2]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_constraints *c = mp_test_two_pools(ctx, "sram", "dram", MP_NONE, 1);
    mp_plan_options po;
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create_constrained(g, &po, c, &plan),
                          MP_OK);
    CU_ASSERT_EQUAL(mp_plan_num_pools(plan), 2);
    const char *tmp = mp_test_write_temp(".pickle", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char path[256];
    snprintf(path, sizeof path, "%s", tmp);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_memory_viz(plan, path), MP_OK);
    char out[4096];
    if (have_python()) {
        int rc = check(path, blocks_drawn(plan), out, sizeof out);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "\n%s\n", out);
        /* segments: a pool each and the weight w */
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "structure: 3 segments"));
        char cmd[600];
        snprintf(cmd, sizeof cmd,
                 "python3 -c \"import pickle,sys; d=pickle.load(open('%s',"
                 "'rb')); print(sorted(f['name'] for e in "
                 "d['device_traces'][0] for f in e['frames']))\"", path);
        CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "h\xef\xbf\xbd [activation]"));
    }
    remove(path);
    mp_constraints_destroy(c);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The command: --memory-viz writes the snapshot and says where; with
 * --dot, --collapse none and --dot-max-nodes; a bad node count and an
 * output named twice are usage errors (exit 2). */
static void test_memviz_cli(void)
{
    const char *tmp = mp_test_write_temp(".pickle", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char path[256], dot[300], cmd[1400], out[4096];
    snprintf(path, sizeof path, "%s", tmp);
    snprintf(dot, sizeof dot, "%s.dot", path);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/resnet50.json' --memory-viz '%s' "
             "--dot '%s' --collapse none 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR, path, dot);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memory snapshot written to"));
    char *s = mp_test_slurp(dot);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    if (mp_dot_available())
        CU_ASSERT_EQUAL(mp_test_count(s, "box3d"), 0);   /* none: all nodes */
    free(s);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/resnet50.json' --dot '%s' "
             "--dot-max-nodes 40 2>&1",
             MP_CLI_PATH, MP_SOURCE_DIR, dot);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    s = mp_test_slurp(dot);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    if (mp_dot_available())
        CU_ASSERT(mp_test_count(s, "box3d") > 0);
    free(s);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/tiny.json' --dot '%s' --dot-max-nodes 0 "
             "2>&1", MP_CLI_PATH, MP_SOURCE_DIR, dot);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--collapse none"));
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/tiny.json' --dot '%s' --memory-viz '%s' "
             "2>&1", MP_CLI_PATH, MP_SOURCE_DIR, dot, dot);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--memory-viz"));
    remove(path);
    remove(dot);
}

void mp_register_memviz(void)
{
    static CU_TestInfo tests[] = {
        {"structure", test_memviz_structure},
        {"pools", test_memviz_pools},
        {"cli", test_memviz_cli},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("memviz", tests);
}
