/* Two contexts on two threads at once (issue 9): the library keeps no
 * global mutable state, so two threads that each load, plan, verify and
 * round-trip plans in their own context get the same results as one
 * thread alone, and ThreadSanitizer (a -DMEMPLAN_TSAN=ON build,
 * scripts/tsan.sh) sees no race; DOT, whose Graphviz library keeps global
 * state, written by two threads at once, is each time what one thread
 * writes alone. */
#include "base.h"
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct job {
    const char *graph_path;
    int rounds;
    uint64_t arena, pooled_arena;  /* results of the last round */
    uint32_t steps;
    mp_status st;
    char msg[256];
} job;

static mp_status one_round(mp_ctx *ctx, job *j)
{
    mp_graph *g = NULL;
    mp_plan *p = NULL, *q = NULL;
    mp_constraints *c = NULL;
    char *text = NULL;
    mp_status st = mp_graph_load(ctx, j->graph_path, &g);
    mp_plan_options o;
    mp_plan_options_init(&o);
    if (!st)
        st = mp_plan_create(g, &o, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (!st)
        st = mp_plan_to_json_string(p, &text);
    if (!st) {
        j->arena = mp_plan_figures(p)->arena_bytes;
        j->steps = mp_plan_num_steps(p);
        st = mp_constraints_create(ctx, &c);
    }
    mp_pool_desc sram = {"sram", 1 << 20, 1e12, 0};
    mp_pool_desc dram = {"dram", UINT64_MAX, 1e11, 0};
    if (!st)
        st = mp_constraints_add_pool(c, &sram, NULL);
    if (!st)
        st = mp_constraints_add_pool(c, &dram, NULL);
    if (!st)
        st = mp_plan_create_constrained(g, &o, c, &q);
    if (!st)
        st = mp_verify_plan(g, q);
    if (!st)
        st = mp_verify_constraints(g, q, c);
    if (!st)
        j->pooled_arena = mp_plan_figures(q)->arena_bytes;
    /* an error path too: messages are per context */
    mp_graph *bad = NULL;
    if (!st && mp_graph_load_json_string(ctx, "{\"format\": 1", "bad", &bad) !=
                   MP_ERR_PARSE)
        st = MP_ERR_INTERNAL;
    if (!st && !strstr(mp_ctx_message(ctx), "bad"))
        st = MP_ERR_INTERNAL;
    mp_ctx_clear(ctx);
    mp_free(ctx, text);
    mp_plan_destroy(q);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    mp_graph_destroy(g);
    return st;
}

static void *worker(void *arg)
{
    job *j = arg;
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        j->st = MP_ERR_NOMEM;
        return NULL;
    }
    for (int r = 0; r < j->rounds && !j->st; r++)
        j->st = one_round(ctx, j);
    if (j->st)
        snprintf(j->msg, sizeof j->msg, "%s", mp_ctx_message(ctx));
    mp_ctx_destroy(ctx);
    return NULL;
}

static void t_two_threads(void)
{
    const char *paths[2] = {MP_SOURCE_DIR "/examples/transformer_block.json",
                            MP_SOURCE_DIR "/examples/resnet50.json"};
    job alone[2], both[2];
    memset(alone, 0, sizeof alone);
    memset(both, 0, sizeof both);
    for (int i = 0; i < 2; i++) {
        alone[i].graph_path = both[i].graph_path = paths[i];
        alone[i].rounds = 1;
        both[i].rounds = 3;
        worker(&alone[i]);
        CU_ASSERT_EQUAL(alone[i].st, MP_OK);
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker, &both[i]) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        if (both[i].st)
            printf("\n  thread %d: %s: %s", i, mp_status_name(both[i].st),
                   both[i].msg);
        CU_ASSERT_EQUAL(both[i].st, MP_OK);
        CU_ASSERT_EQUAL(both[i].arena, alone[i].arena);
        CU_ASSERT_EQUAL(both[i].pooled_arena, alone[i].pooled_arena);
        CU_ASSERT_EQUAL(both[i].steps, alone[i].steps);
        CU_ASSERT(both[i].arena > 0);
    }
}

/* The same graph on both threads: identical results. */
static void t_same_graph(void)
{
    job j[2];
    memset(j, 0, sizeof j);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        j[i].graph_path = MP_SOURCE_DIR "/examples/resnet50.json";
        j[i].rounds = 2;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker, &j[i]) == 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(j[0].st, MP_OK);
    CU_ASSERT_EQUAL(j[1].st, MP_OK);
    CU_ASSERT_EQUAL(j[0].arena, j[1].arena);
    CU_ASSERT_EQUAL(j[0].pooled_arena, j[1].pooled_arena);
}

/* DOT on two threads at once (report/dot.c makes every cgraph call under
 * one lock: cgraph keeps global state): each thread writes its graph's
 * DOT several times, each file byte for byte the one written alone. */
typedef struct dot_job {
    const char *graph_path;
    char path[64];
    int rounds;
    char *ref;          /* the DOT written alone */
    int mismatches;
    mp_status st;
    char msg[256];
} dot_job;

static mp_status dot_write(mp_ctx *ctx, dot_job *j, char **text)
{
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_dot_options d;
    mp_dot_options_init(&d);
    d.show_weights = 1;
    mp_status st = mp_graph_load(ctx, j->graph_path, &g);
    if (!st)
        st = mp_plan_create(g, &o, &p);
    if (!st)
        st = mp_plan_write_dot(p, j->path, &d);
    if (!st)
        *text = mp_test_slurp(j->path);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    return st;
}

static void *dot_worker(void *arg)
{
    dot_job *j = arg;
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        j->st = MP_ERR_NOMEM;
        return NULL;
    }
    for (int r = 0; r < j->rounds && !j->st; r++) {
        char *text = NULL;
        j->st = dot_write(ctx, j, &text);
        if (!j->st && (!text || !j->ref || strcmp(text, j->ref) != 0))
            j->mismatches++;
        free(text);
    }
    if (j->st)
        snprintf(j->msg, sizeof j->msg, "%s", mp_ctx_message(ctx));
    mp_ctx_destroy(ctx);
    return NULL;
}

static void t_dot_two_threads(void)
{
    if (!mp_dot_available()) {
        printf("skipped: built without Graphviz ");
        return;
    }
    const char *paths[2] = {MP_SOURCE_DIR "/examples/transformer_block.json",
                            MP_SOURCE_DIR "/examples/resnet50.json"};
    dot_job j[2];
    memset(j, 0, sizeof j);
    for (int i = 0; i < 2; i++) {
        j[i].graph_path = paths[i];
        snprintf(j[i].path, sizeof j[i].path, "/tmp/mp_dot_%d_%ld.dot", i,
                 (long)getpid());
        mp_ctx *ctx = mp_ctx_create(NULL);
        CU_ASSERT_EQUAL_FATAL(dot_write(ctx, &j[i], &j[i].ref), MP_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j[i].ref);
        CU_ASSERT_PTR_NOT_NULL(strstr(j[i].ref, "subgraph cluster_"));
        mp_ctx_destroy(ctx);
        j[i].rounds = 4;
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, dot_worker, &j[i]) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        if (j[i].st)
            printf("\n  thread %d: %s: %s", i, mp_status_name(j[i].st),
                   j[i].msg);
        CU_ASSERT_EQUAL(j[i].st, MP_OK);
        CU_ASSERT_EQUAL(j[i].mismatches, 0);
        free(j[i].ref);
        unlink(j[i].path);
    }
}

static CU_TestInfo tests[] = {
    {"two contexts on two threads", t_two_threads},
    {"one graph on two threads", t_same_graph},
    {"DOT on two threads", t_dot_two_threads},
    CU_TEST_INFO_NULL};

void mp_register_threads(void) { mp_test_add_suite("threads", tests); }
