/* Units of the node costs: a graph names the unit of its node times
 * (mp_graph_cost_unit), Checkmate's cost_cpu is not seconds, and the
 * offload planner does not add it to transfer seconds. */
#include "support.h"

#include <memplan/memplan.h>

#include <stdio.h>
#include <string.h>

/* a chain of three Checkmate nodes, 1 MiB each, cost_cpu 1000 each */
static const char chain_nx[] =
    "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": \"c\"},"
    " \"nodes\": ["
    "  {\"name\": \"a\", \"backward\": false, \"cost_cpu\": 1000,"
    "   \"cost_ram\": 1048576, \"id\": 0},"
    "  {\"name\": \"b\", \"backward\": false, \"cost_cpu\": 1000,"
    "   \"cost_ram\": 1048576, \"id\": 1},"
    "  {\"name\": \"c\", \"backward\": true, \"cost_cpu\": 1000,"
    "   \"cost_ram\": 1048576, \"id\": 2}],"
    " \"links\": [{\"source\": 0, \"target\": 1},"
    "            {\"source\": 1, \"target\": 2},"
    "            {\"source\": 0, \"target\": 2}]}";

static mp_graph *load_chain(mp_ctx *ctx)
{
    const char *path = mp_test_write_temp("_nx.json", chain_nx);
    mp_graph *g = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    mp_status st = mp_graph_load(ctx, path, &g);
    remove(path);
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    return g;
}

static void t_unit_named(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_chain(ctx);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(g), "cost_cpu");
    /* seconds, however named, are the default */
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(g, "seconds"), MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(g), "s");
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(g, "cycles"), MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(g), "cycles");
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(g, NULL), MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(g), "s");
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(NULL, "s"), MP_ERR_INVALID_ARG);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(NULL), "s");
    mp_graph_destroy(g);
    /* a JSON graph's costs are seconds */
    g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, MP_SOURCE_DIR "/examples/tiny.json",
                                        &g), MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(g), "s");
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The JSON graph keeps the unit ("cost_unit"), and reads it back. */
static void t_unit_json_round_trip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_chain(ctx), *h = NULL;
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &text), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"cost_unit\": \"cost_cpu\""));
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, text, "rt", &h),
                          MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_graph_cost_unit(h), "cost_cpu");
    mp_free(ctx, text);
    mp_graph_destroy(h);
    /* seconds: no key */
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(g, NULL), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &text), MP_OK);
    CU_ASSERT_PTR_NULL(strstr(text, "cost_unit"));
    mp_free(ctx, text);
    /* a subgraph has the top level's unit; a bad type is named */
    h = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(
                        ctx,
                        "{\"format\": \"memplan-graph\", \"version\": 1, "
                        "\"cost_unit\": 3, \"tensors\": [], \"nodes\": []}",
                        "bad", &h),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "cost_unit"));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Offload on a graph whose costs are cost_cpu times the nodes on the
 * device (a few microseconds each on an H200), not 1000 "seconds" each;
 * the same figures named seconds are used as given. */
static void t_offload_does_not_mix(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_chain(ctx);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.budget = 3u << 20;  /* the no-offload peak: nothing to move */
    mp_offload_result r;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, NULL, &p, &r), MP_OK);
    CU_ASSERT_STRING_EQUAL(r.node_times, "device");
    CU_ASSERT(r.compute_seconds > 0 && r.compute_seconds < 1);
    mp_plan_destroy(p);
    p = NULL;
    CU_ASSERT_EQUAL(mp_graph_set_cost_unit(g, "s"), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, NULL, &p, &r), MP_OK);
    CU_ASSERT_STRING_EQUAL(r.node_times, "given");
    CU_ASSERT_DOUBLE_EQUAL(r.compute_seconds, 3000, 1e-6);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The command names the unit: the offload summary says the node times
 * are the device's, and --json's recompute costs carry their unit. */
static void t_cli_names_units(void)
{
    static char out[1 << 16];
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/offload/chain_train_nx.json' --budget "
             "900MiB --offload --no-lints",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "node times         h200's cost "
                                       "model: the graph's cost_cpu"));
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/offload/chain_train_nx.json' --budget "
             "900MiB --json",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    mp_test_json *o = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(mp_test_jstr(o, "recompute.cost_unit"), "cost_cpu");
    mp_test_json_free(o);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s/examples/offload/chain_train_nx.json' --budget "
             "900MiB --no-lints",
             MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " cost_cpu (")); /* extra compute */
}

void mp_register_units(void)
{
    static CU_TestInfo tests[] = {
        {"a node-link graph names its cost unit", t_unit_named},
        {"the JSON graph keeps the cost unit", t_unit_json_round_trip},
        {"offload does not add cost_cpu to seconds", t_offload_does_not_mix},
        {"the command names the units", t_cli_names_units},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("units", tests);
}
