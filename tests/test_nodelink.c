/* networkx node-link graphs (Checkmate, Moccasin). */
#include "ir.h"
#include "support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *small_graph =
    "{\"directed\": true, \"multigraph\": false,\n"
    " \"graph\": {\"name\": \"small\"},\n"
    " \"nodes\": [\n"
    "  {\"name\": \"a\", \"backward\": false, \"cost_cpu\": 10, "
    "\"cost_ram\": 100, \"id\": 0},\n"
    "  {\"name\": \"c\", \"backward\": false, \"cost_cpu\": 30, "
    "\"cost_ram\": 300, \"id\": 2},\n"
    "  {\"name\": \"b\", \"backward\": false, \"cost_cpu\": 20.5, "
    "\"cost_ram\": 200, \"id\": 1},\n"
    "  {\"name\": \"a\", \"backward\": true, \"cost_cpu\": 40, "
    "\"cost_ram\": 0, \"id\": 3},\n"
    "  {\"name\": \"lone\", \"cost_ram\": 7.0, \"id\": \"s\"}\n"
    " ],\n"
    " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": "
    "2},\n"
    "           {\"source\": 0, \"target\": 2}, {\"source\": 2, \"target\": "
    "3}]}\n";

static mp_graph *load_text(mp_ctx *ctx, const char *text, mp_status want,
                           const char **path_out)
{
    const char *p = mp_test_write_temp(".json", text);
    CU_ASSERT_FATAL(p != NULL);
    static char path[256];
    snprintf(path, sizeof path, "%s", p);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load(ctx, path, &g);
    if (st != want)
        printf("\n  got %s: %s\n", mp_status_name(st), mp_ctx_message(ctx));
    CU_ASSERT_EQUAL(st, want);
    /* the explicit entry point agrees */
    mp_graph *g2 = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_nodelink(ctx, path, &g2), want);
    mp_graph_destroy(g2);
    remove(path);
    if (path_out)
        *path_out = path;
    return g;
}

static const mp__tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    if (mp_graph_find_tensor(g, name, &id) != MP_OK)
        return NULL;
    return &g->tensors[id];
}

static void test_small(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_text(ctx, small_graph, MP_OK, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(mp_graph_name(g), "small");
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 5);
    CU_ASSERT_EQUAL(mp_graph_num_tensors(g), 5);
    /* repeated names get "#<id>"; the others keep theirs */
    const mp__tensor *a = tensor(g, "a#0"), *a3 = tensor(g, "a#3"),
                    *b = tensor(g, "b"), *c = tensor(g, "c"),
                    *lone = tensor(g, "lone");
    CU_ASSERT_FATAL(a && a3 && b && c && lone);
    CU_ASSERT_PTR_NULL(tensor(g, "a"));
    CU_ASSERT_EQUAL(a->bytes, 100);
    CU_ASSERT_EQUAL(b->bytes, 200);
    CU_ASSERT_EQUAL(c->bytes, 300);
    CU_ASSERT_EQUAL(a3->bytes, 0);
    CU_ASSERT(a3->flags & MP__TF_SIZE_KNOWN);
    CU_ASSERT_EQUAL(lone->bytes, 7);
    CU_ASSERT_EQUAL(a->kind, MP_KIND_ACTIVATION);
    CU_ASSERT_EQUAL(a3->kind, MP_KIND_GRADIENT);
    /* nodes in topological order: b (id 1) before c (id 2) although the
     * file lists c first */
    CU_ASSERT_STRING_EQUAL(g->nodes[0].name, "a#0");
    CU_ASSERT_STRING_EQUAL(g->nodes[1].name, "b");
    CU_ASSERT_STRING_EQUAL(g->nodes[2].name, "c");
    CU_ASSERT_STRING_EQUAL(g->nodes[3].name, "a#3");
    CU_ASSERT_STRING_EQUAL(g->nodes[4].name, "lone");
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(g->nodes[i].op, "Checkmate");
    const mp__node *nc = &g->nodes[2];
    CU_ASSERT_EQUAL_FATAL(nc->n_in, 2);
    CU_ASSERT_STRING_EQUAL(g->tensors[nc->inputs[0]].name, "b");
    CU_ASSERT_STRING_EQUAL(g->tensors[nc->inputs[1]].name, "a#0");
    CU_ASSERT_EQUAL(nc->n_out, 1);
    CU_ASSERT_EQUAL(g->tensors[nc->outputs[0]].bytes, 300);
    CU_ASSERT_EQUAL(nc->seconds, 30.0);
    CU_ASSERT_EQUAL(g->nodes[1].seconds, 20.5);
    CU_ASSERT(g->nodes[4].seconds < 0); /* no cost_cpu */
    CU_ASSERT_EQUAL(g->nodes[3].phase, MP_PHASE_BACKWARD);
    CU_ASSERT_EQUAL(g->nodes[2].phase, MP_PHASE_FORWARD);
    /* sinks are the outputs */
    CU_ASSERT(a3->flags & MP__TF_OUTPUT);
    CU_ASSERT(lone->flags & MP__TF_OUTPUT);
    CU_ASSERT(!(a->flags & MP__TF_OUTPUT));
    CU_ASSERT(!(c->flags & MP__TF_OUTPUT));
    CU_ASSERT_EQUAL(c->n_cons, 1);
    CU_ASSERT_EQUAL(a->n_cons, 2);
    /* the graph plans */
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    opt.alignment = 1;
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL(mp_plan_create(g, &opt, &plan), MP_OK);
    if (plan)
        CU_ASSERT(mp_plan_figures(plan)->lower_bound_bytes >= 600);
    mp_plan_destroy(plan);
    /* and round-trips through memplan JSON */
    char *s1 = NULL, *s2 = NULL;
    mp_graph *g2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &s1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, s1, NULL, &g2),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g2, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"a#3\", \"bytes\": 0, "
                                      "\"kind\": \"gradient\"}"));
    mp_free(ctx, s1);
    mp_free(ctx, s2);
    mp_graph_destroy(g2);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Moccasin's random layered graphs: node ids in "name", costs under the
 * names given by the graph's tags, links with keys "0" and "1". */
static void test_moccasin_variant(void)
{
    const char *text =
        "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": "
        "\"rl\", \"node_output_cost_tag\": \"out_cost\", "
        "\"node_duration_tag\": \"duration\", \"node_param_cost_tag\": "
        "\"param_cost\", \"order\": [0, 2, 1]},\n"
        " \"nodes\": [{\"out_cost\": 8, \"param_cost\": 0, \"duration\": 0, "
        "\"name\": 0},\n"
        "  {\"out_cost\": 16, \"param_cost\": 4, \"duration\": 5, \"name\": "
        "1},\n"
        "  {\"out_cost\": 32, \"param_cost\": 0, \"duration\": 7, \"name\": "
        "2}],\n"
        " \"links\": [{\"0\": 0, \"1\": 2}, {\"0\": 2, \"1\": 1}, {\"0\": 0, "
        "\"1\": 1}]}";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_text(ctx, text, MP_OK, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 3);
    /* one weight tensor for the non-zero param_cost */
    CU_ASSERT_EQUAL(mp_graph_num_tensors(g), 4);
    const mp__tensor *t1 = tensor(g, "1"), *p1 = tensor(g, "1.param");
    CU_ASSERT_FATAL(t1 && p1);
    CU_ASSERT_EQUAL(t1->bytes, 16);
    CU_ASSERT_EQUAL(p1->bytes, 4);
    CU_ASSERT_EQUAL(p1->kind, MP_KIND_WEIGHT);
    CU_ASSERT_STRING_EQUAL(g->nodes[0].name, "0");
    CU_ASSERT_STRING_EQUAL(g->nodes[1].name, "2");
    CU_ASSERT_STRING_EQUAL(g->nodes[2].name, "1");
    CU_ASSERT_EQUAL(g->nodes[2].n_in, 3);
    CU_ASSERT_EQUAL(g->nodes[2].seconds, 5.0);
    CU_ASSERT(t1->flags & MP__TF_OUTPUT);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

typedef struct nl_bad {
    const char *what, *text;
    mp_status status;
    const char *expect;
    int line, col; /* 0: no position expected */
} nl_bad;

#define NODES2 "{\"nodes\": [{\"id\": 0, \"name\": \"a\", \"cost_ram\": 1},\n" \
               " {\"id\": 1, \"name\": \"b\", \"cost_ram\": 2}],\n"

static const nl_bad nl_bad_cases[] = {
    {"unknown link target", NODES2 " \"links\": [{\"source\": 0, "
                                   "\"target\": 1}, {\"source\": 1, "
                                   "\"target\": 9}]}",
     MP_ERR_GRAPH, "links[1].target: no node with id 9", 3, 64},
    {"cycle", NODES2 " \"links\": [{\"source\": 0, \"target\": 1}, "
                     "{\"source\": 1, \"target\": 0}]}",
     MP_ERR_CYCLE, "cycle through this node", 0, 0},
    {"self-loop", NODES2 " \"links\": [{\"source\": 1, \"target\": 1}]}",
     MP_ERR_CYCLE, "links[0]: self-loop on node id 1", 3, 12},
    {"missing cost_ram",
     "{\"nodes\": [{\"id\": 0, \"name\": \"a\"}], \"links\": []}",
     MP_ERR_PARSE, "nodes[0] (id 0, \"a\"): missing \"cost_ram\"", 1, 12},
    {"negative cost_ram",
     "{\"nodes\": [{\"id\": 0, \"cost_ram\": -5}], \"links\": []}",
     MP_ERR_PARSE, "nodes[0] (id 0, \"0\").cost_ram: expected a byte count",
     1, 34},
    {"bad backward",
     "{\"nodes\": [{\"id\": 0, \"cost_ram\": 5, \"backward\": 1}], "
     "\"links\": []}",
     MP_ERR_PARSE, "backward: expected true or false, got 1", 1, 49},
    {"duplicate id",
     "{\"nodes\": [{\"id\": 0, \"cost_ram\": 5}, {\"id\": 0, \"cost_ram\": "
     "5}], \"links\": []}",
     MP_ERR_DUPLICATE, "nodes[1].id: duplicate node id 0 (first at nodes[0])",
     1,
     45},
    {"id of a bad type",
     "{\"nodes\": [{\"id\": [0], \"cost_ram\": 5}], \"links\": []}",
     MP_ERR_PARSE, "nodes[0].id: expected a node id", 1, 19},
    {"links not an array",
     "{\"nodes\": [], \"links\": {}}", MP_ERR_PARSE,
     "links: expected an array", 1, 24},
    {"link missing target", NODES2 " \"links\": [{\"source\": 0}]}",
     MP_ERR_PARSE, "links[0]: missing \"target\"", 3, 12},
    {"negative cost_cpu",
     "{\"nodes\": [{\"id\": 0, \"cost_ram\": 5, \"cost_cpu\": -1}], "
     "\"links\": []}",
     MP_ERR_PARSE, "cost_cpu: expected a number >= 0", 1, 49},
    {"undirected", "{\"directed\": false, \"nodes\": [], \"links\": []}",
     MP_ERR_UNSUPPORTED, "directed: undirected graphs are not supported", 1,
     14},
    {"cost_ram beyond 64 bits",
     "{\"nodes\": [{\"id\": 0, \"cost_ram\": 1e30}], \"links\": []}",
     MP_ERR_OVERFLOW, "do not fit in 64 bits", 1, 34},
};

static void test_bad(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (size_t i = 0; i < sizeof nl_bad_cases / sizeof nl_bad_cases[0];
         i++) {
        const nl_bad *c = &nl_bad_cases[i];
        const char *path;
        mp_graph *g = load_text(ctx, c->text, c->status, &path);
        CU_ASSERT_PTR_NULL(g);
        mp_graph_destroy(g);
        const char *msg = mp_ctx_message(ctx);
        char want[300];
        if (c->line)
            snprintf(want, sizeof want, "%s:%d:%d: ", path, c->line, c->col);
        else
            snprintf(want, sizeof want, "%s", path);
        bool ok = strncmp(msg, want, strlen(want)) == 0 &&
                  strstr(msg, c->expect) != NULL;
        if (!ok)
            printf("\n  case '%s': %s\n    want prefix '%s' and '%s'\n",
                   c->what, msg, want, c->expect);
        CU_ASSERT(ok);
    }
    mp_ctx_destroy(ctx);
}

/* Every Checkmate/Moccasin graph from the shared benchmark data loads with
 * one node per JSON node and one output per sink. */
static void test_checkmate_corpus(void)
{
    const char *dirs[] = {"/work/shared/bench/checkmate",
                          MP_SOURCE_DIR "/../shared/bench/checkmate"};
    DIR *d = NULL;
    const char *dir = NULL;
    for (size_t i = 0; i < 2 && !d; i++)
        if ((d = opendir(dirs[i])))
            dir = dirs[i];
    if (!d) {
        printf("\n  skipped: %s (or %s) not present\n", dirs[0], dirs[1]);
        return;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        mp_test_json *root = mp_test_json_load(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(root);
        size_t nn = mp_test_jlen(root, "nodes");
        size_t n_links = mp_test_jlen(root, "links");
        /* sinks: nodes that are no link's source */
        size_t n_src = 0;
        char *is_src = calloc(nn + 1, 1);
        for (size_t k = 0; k < n_links; k++) {
            const char *key = mp_test_jget(root, "links[%zu].source", k)
                                  ? "source"
                                  : "0";
            /* ids are 0..n-1 in these files */
            int64_t id = mp_test_jint(root, "links[%zu].%s", k, key);
            if (id >= 0 && (size_t)id < nn && !is_src[id]) {
                is_src[id] = 1;
                n_src++;
            }
        }
        free(is_src);
        mp_graph *g = NULL;
        double t0 = mp__now_seconds();
        mp_status st = mp_graph_load(ctx, path, &g);
        double t1 = mp__now_seconds();
        if (st)
            printf("\n  %s: %s\n", e->d_name, mp_ctx_message(ctx));
        CU_ASSERT_EQUAL(st, MP_OK);
        if (g) {
            CU_ASSERT_EQUAL(mp_graph_num_nodes(g), nn);
            size_t outs = 0;
            for (size_t t = 0; t < g->n_tensors; t++)
                if (g->tensors[t].flags & MP__TF_OUTPUT)
                    outs++;
            CU_ASSERT_EQUAL(outs, nn - n_src);
            printf("\n  %-60.60s %5zu nodes %5zu links %.4f s", e->d_name, nn,
                   n_links, t1 - t0);
        }
        mp_graph_destroy(g);
        mp_test_json_free(root);
        files++;
    }
    closedir(d);
    printf("\n  %d checkmate graphs loaded\n", files);
    CU_ASSERT(files > 0);
    mp_ctx_destroy(ctx);
}

void mp_register_nodelink(void)
{
    static CU_TestInfo tests[] = {
        {"small Checkmate graph", test_small},
        {"Moccasin variant", test_moccasin_variant},
        {"malformed node-link graphs", test_bad},
        {"Checkmate corpus", test_checkmate_corpus},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("nodelink", tests);
}
