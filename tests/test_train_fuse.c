/* --fuse in training plans: a decomposed GELU between two MatMuls. */
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dump(const mp_graph *g, const mp_plan *p)
{
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mp_step *st = &p->steps[s];
        int node = st->kind != MP_STEP_FREE;
        printf("%3u %-9s %-22s", s, mp_step_kind_name(st->kind),
               node ? g->nodes[st->index].name : g->tensors[st->index].name);
        if (node) {
            const mp__node *n = &g->nodes[st->index];
            for (uint32_t o = 0; o < n->n_out; o++) {
                uint32_t t = n->outputs[o];
                if (t == MP_NONE)
                    continue;
                int blk = 0;
                for (uint32_t i = 0; i < p->n_blocks; i++)
                    blk |= p->blocks[i].tensor == t && p->blocks[i].first == s;
                printf(" %s%s", g->tensors[t].name,
                       p->fused && p->fused[t] && !blk ? "(F)" : "");
            }
        }
        printf("\n");
    }
    printf("lb %llu\n", (unsigned long long)p->fig.lower_bound_bytes);
}

static void test_explore(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = mp_test_gelu_train(ctx);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    mp_remat_result r;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_remat_plan(g, &ro, &po, &p, &r) == MP_OK);
    dump(g, p);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    printf("%s\n", mp_ctx_message(ctx));
    mp_plan_destroy(p);
    p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(g, &po, &p) == MP_OK);
    dump(g, p);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

void mp_register_train_fuse(void)
{
    static CU_TestInfo tests[] = {
        {"explore", test_explore},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("train_fuse", tests);
}
