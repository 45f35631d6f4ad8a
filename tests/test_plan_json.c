/* Plan JSON: round trips (builder graph -> plan -> file -> plan), the
 * loader handing tampered plans to the verifier, and a table of malformed
 * plans with the status and message each must give. */
#include "support.h"

#include "sched.h"
#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a small graph built with the builder API -------------------------- */
/* x -> fc1 -> h1 -> relu1 -> a1 -> fc2 -> h2 -> skip(h2, a1) -> s
 *   -> relu2 -> r -> view -> y (output). Two names need escaping. */
#define ODD_NAME "odd \"quoted\"\\name\t\x01"
#define UTF8_NAME "r\xc3\xa9lu\xe2\x82\xac"

static mp_graph *build_graph(mp_ctx *ctx)
{
    mp_graph *g = NULL;
    if (mp_graph_create(ctx, &g) != MP_OK)
        return NULL;
    mp_graph_set_name(g, "plan-json-test");
    const int64_t act[2] = {8, 1000};   /* 32000 bytes: not 256-aligned */
    const int64_t wsh[2] = {1000, 1000};
    const int64_t ysh[3] = {8, 10, 100};
    struct {
        const char *name;
        int rank;
        const int64_t *dims;
        mp_tensor_kind kind;
    } ts[] = {
        {"x", 2, act, MP_KIND_INPUT},      {"w1", 2, wsh, MP_KIND_WEIGHT},
        {"w2", 2, wsh, MP_KIND_WEIGHT},    {"h1", 2, act, MP_KIND_ACTIVATION},
        {"a1", 2, act, MP_KIND_ACTIVATION}, {ODD_NAME, 2, act, MP_KIND_ACTIVATION},
        {"s", 2, act, MP_KIND_ACTIVATION}, {"r", 2, act, MP_KIND_ACTIVATION},
        {"y", 3, ysh, MP_KIND_OUTPUT},
    };
    uint32_t id[9];
    for (int i = 0; i < 9; i++) {
        mp_tensor_desc d = {ts[i].name, MP_DTYPE_FLOAT32, ts[i].rank,
                            ts[i].dims, 0, ts[i].kind};
        if (mp_graph_add_tensor(g, &d, &id[i]) != MP_OK)
            goto fail;
    }
    struct {
        const char *name, *op;
        uint32_t in[2], n_in, out;
    } ns[] = {
        {"fc1", "MatMul", {0, 1}, 2, 3},
        {UTF8_NAME, "Relu", {3, 0}, 1, 4},
        {"fc2", "MatMul", {4, 2}, 2, 5},
        {"skip", "Add", {5, 4}, 2, 6},
        {"relu2", "Relu", {6, 0}, 1, 7},
        {"view", "Reshape", {7, 0}, 1, 8},
    };
    for (int i = 0; i < 6; i++) {
        uint32_t in[2] = {id[ns[i].in[0]], id[ns[i].in[1]]};
        uint32_t out = id[ns[i].out];
        mp_node_desc d = {ns[i].name, ns[i].op, NULL, in, ns[i].n_in,
                          &out, 1, MP_PHASE_FORWARD};
        if (mp_graph_add_node(g, &d, NULL) != MP_OK)
            goto fail;
    }
    if (mp_graph_finalize(g) != MP_OK)
        goto fail;
    return g;
fail:
    fprintf(stderr, "build_graph: %s\n", mp_ctx_message(ctx));
    mp_graph_destroy(g);
    return NULL;
}

/* Every field of two plans, exactly. */
static void assert_same_plan(const mp_plan *a, const mp_plan *b)
{
    CU_ASSERT_EQUAL_FATAL(mp_plan_num_steps(a), mp_plan_num_steps(b));
    CU_ASSERT_EQUAL_FATAL(mp_plan_num_blocks(a), mp_plan_num_blocks(b));
    const mp_step *sa = mp_plan_steps(a), *sb = mp_plan_steps(b);
    for (uint32_t i = 0; i < mp_plan_num_steps(a); i++) {
        CU_ASSERT_EQUAL(sa[i].kind, sb[i].kind);
        CU_ASSERT_EQUAL(sa[i].index, sb[i].index);
        CU_ASSERT_EQUAL(mp_plan_live_bytes(a, i), mp_plan_live_bytes(b, i));
    }
    const mp_block *ba = mp_plan_blocks(a), *bb = mp_plan_blocks(b);
    for (uint32_t i = 0; i < mp_plan_num_blocks(a); i++) {
        CU_ASSERT_EQUAL(ba[i].tensor, bb[i].tensor);
        CU_ASSERT_EQUAL(ba[i].offset, bb[i].offset);
        CU_ASSERT_EQUAL(ba[i].size, bb[i].size);
        CU_ASSERT_EQUAL(ba[i].first, bb[i].first);
        CU_ASSERT_EQUAL(ba[i].end, bb[i].end);
    }
    const mp_figures *fa = mp_plan_figures(a), *fb = mp_plan_figures(b);
    CU_ASSERT_EQUAL(fa->lower_bound_bytes, fb->lower_bound_bytes);
    CU_ASSERT_EQUAL(fa->arena_bytes, fb->arena_bytes);
    CU_ASSERT_EQUAL(fa->persistent_bytes, fb->persistent_bytes);
    CU_ASSERT_EQUAL(fa->peak_bytes, fb->peak_bytes);
    CU_ASSERT_EQUAL(fa->no_reuse_bytes, fb->no_reuse_bytes);
    CU_ASSERT_EQUAL(fa->alignment, fb->alignment);
    CU_ASSERT_EQUAL(fa->peak_step, fb->peak_step);
    CU_ASSERT_EQUAL(fa->status, fb->status);
    CU_ASSERT(fa->solve_seconds == fb->solve_seconds);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fa->solver);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fb->solver);
    CU_ASSERT_STRING_EQUAL(fa->solver, fb->solver);
}

static void test_round_trip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    mp_plan *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &opt, &p), MP_OK);
    /* the plan really has something to save */
    CU_ASSERT(mp_plan_num_steps(p) >= 6);
    CU_ASSERT(mp_plan_num_blocks(p) >= 5);

    const char *tmp = mp_test_write_temp(".json", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char path[256];
    snprintf(path, sizeof path, "%s", tmp);
    CU_ASSERT_EQUAL_FATAL(mp_plan_save_json(p, path), MP_OK);
    char *file = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    /* names, not indices; escaped names as JSON escapes */
    CU_ASSERT_PTR_NOT_NULL(strstr(file, "\"format\": \"memplan-plan\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(file, "{\"step\": \"compute\", \"node\": "
                                        "\"fc1\"}"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(file, "\"odd \\\"quoted\\\"\\\\name\\t\\u0001\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(file, "\"" UTF8_NAME "\""));

    /* the string form is the file's bytes */
    char *s1 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &s1), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, file);

    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, path, &q), MP_OK);
    assert_same_plan(p, q);
    /* a loaded plan is a full plan: it replays */
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_OK);

    /* saving the loaded plan gives the same bytes */
    char *s2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(q, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);

    mp_free(ctx, s1);
    mp_free(ctx, s2);
    free(file);
    unlink(path);
    mp_plan_destroy(p);
    mp_plan_destroy(q);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Steps of every kind survive a round trip (the loader does not judge
 * whether the schedule makes sense). */
static void test_round_trip_step_kinds(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    mp_plan *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    uint32_t n = p->n_steps;
    mp_step *st = mp__realloc_array(ctx, p->steps, n + 3, sizeof *st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    uint32_t a1, fc2;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, "a1", &a1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g, "fc2", &fc2), MP_OK);
    st[n] = (mp_step){MP_STEP_OFFLOAD, a1};
    st[n + 1] = (mp_step){MP_STEP_PREFETCH, a1};
    st[n + 2] = (mp_step){MP_STEP_RECOMPUTE, fc2};
    p->steps = st;
    p->n_steps = n + 3;
    uint64_t *live = mp__realloc_array(ctx, p->live, n + 4, sizeof *live);
    CU_ASSERT_PTR_NOT_NULL_FATAL(live);
    live[n] = live[n + 1] = live[n + 2] = live[n + 3] = 0;
    p->live = live;
    p->fig.solver = NULL;   /* written as null, read back as NULL */
    p->fig.solve_seconds = 0.1 + 0.2;   /* needs 17 digits */

    char *s1 = NULL, *s2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &s1), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"step\": \"offload\", \"tensor\": "
                                      "\"a1\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"step\": \"prefetch\", \"tensor\": "
                                      "\"a1\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"step\": \"recompute\", \"node\": "
                                      "\"fc2\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"solver\": null"));
    const char *path = mp_test_write_temp(".json", s1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, path, &q), MP_OK);
    CU_ASSERT_EQUAL(q->n_steps, n + 3);
    CU_ASSERT_EQUAL(q->steps[n].kind, MP_STEP_OFFLOAD);
    CU_ASSERT_EQUAL(q->steps[n].index, a1);
    CU_ASSERT_EQUAL(q->steps[n + 1].kind, MP_STEP_PREFETCH);
    CU_ASSERT_EQUAL(q->steps[n + 2].kind, MP_STEP_RECOMPUTE);
    CU_ASSERT_EQUAL(q->steps[n + 2].index, fc2);
    CU_ASSERT_PTR_NULL(q->fig.solver);
    CU_ASSERT(q->fig.solve_seconds == 0.1 + 0.2);
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(q, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);
    unlink(path);
    mp_free(ctx, s1);
    mp_free(ctx, s2);
    mp_plan_destroy(p);
    mp_plan_destroy(q);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Replaces the first occurrence of `find` in text (malloc'ed result). */
static char *replace(const char *text, const char *find, const char *repl)
{
    const char *at = find ? strstr(text, find) : NULL;
    size_t n = strlen(text), fl = at ? strlen(find) : 0,
           rl = at ? strlen(repl) : 0;
    char *out = malloc(n - fl + rl + 1);
    if (!at) {
        memcpy(out, text, n + 1);
        return out;
    }
    size_t pre = (size_t)(at - text);
    memcpy(out, text, pre);
    memcpy(out + pre, repl, rl);
    memcpy(out + pre + rl, at + fl, n - pre - fl + 1);
    return out;
}

/* A tampered plan loads (the loader does not judge it) and the verifier
 * rejects it. */
static void test_tampered_reaches_verifier(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    mp_plan *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    /* put every block at offset 0: blocks live together now overlap */
    for (uint32_t i = 0; i < p->n_blocks; i++)
        p->blocks[i].offset = 0;
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &text), MP_OK);
    const char *path = mp_test_write_temp(".json", text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, path, &q), MP_OK);
    for (uint32_t i = 0; i < q->n_blocks; i++)
        CU_ASSERT_EQUAL(q->blocks[i].offset, 0);
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_ERR_VERIFY);
    mp_plan_destroy(q);
    q = NULL;

    /* a schedule that drops the first compute step loads too; the
     * verifier finds the missing input */
    char *bad = replace(text, "{\"step\": \"compute\", \"node\": \"fc1\"},", "");
    CU_ASSERT(strcmp(bad, text) != 0);
    path = mp_test_write_temp(".json", bad);
    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, path, &q), MP_OK);
    CU_ASSERT_EQUAL(q->n_steps, p->n_steps - 1);
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_ERR_VERIFY);
    unlink(path);
    free(bad);
    mp_free(ctx, text);
    mp_plan_destroy(p);
    mp_plan_destroy(q);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* ---- malformed plans ---------------------------------------------------- */
/* The base plan names the test graph's tensors and nodes; %u %u are the
 * graph's tensor and node counts. It loads. */
static const char base_plan[] =
    "{\"format\": \"memplan-plan\", \"version\": 1,\n"
    " \"graph\": {\"name\": \"t\", \"tensors\": %u, \"nodes\": %u},\n"
    " \"figures\": {\"lower_bound_bytes\": 0, \"arena_bytes\": 0, "
    "\"persistent_bytes\": 0, \"peak_bytes\": 0, \"no_reuse_bytes\": 0, "
    "\"alignment\": 1, \"peak_step\": 0, \"status\": \"none\", "
    "\"solver\": \"x\", \"solve_seconds\": 0},\n"
    " \"schedule\": [{\"step\": \"compute\", \"node\": \"fc1\"},\n"
    "   {\"step\": \"free\", \"tensor\": \"x\"}],\n"
    " \"blocks\": [{\"tensor\": \"h1\", \"offset\": 0, \"size\": 16, "
    "\"first\": 0, \"end\": 1},\n"
    "   {\"tensor\": \"a1\", \"offset\": 16, \"size\": 16, \"first\": 1, "
    "\"end\": 2}]}\n";

typedef struct bad_case {
    const char *what;
    const char *find, *repl;  /* edit of the base plan (NULL: none) */
    const char *whole;        /* or the whole text */
    mp_status status;
    const char *msg1, *msg2;  /* must appear in the message */
    const char *at;           /* the message names this text's line:col */
} bad_case;

static const bad_case bad_cases[] = {
    {"base plan loads", NULL, NULL, NULL, MP_OK, NULL, NULL, NULL},
    {"syntax: missing comma", "\"offset\": 16, \"size\"",
     "\"offset\": 16 \"size\"", NULL, MP_ERR_PARSE, "syntax error",
     "expected ',' or '}'", "\"size\": 16, \"first\": 1"},
    {"syntax: unterminated", "\"end\": 2}]}\n", "\"end\": 2}]", NULL,
     MP_ERR_PARSE, "syntax error",
     "syntax error: unexpected end of file, expected ',' or '}'", NULL},
    {"syntax: trailing text", "\"end\": 2}]}\n", "\"end\": 2}]} zzz",
     NULL, MP_ERR_PARSE, "unexpected text after", NULL, "zzz"},
    {"syntax: bad escape", "\"solver\": \"x\"", "\"solver\": \"\\q\"", NULL,
     MP_ERR_PARSE, "bad escape", NULL, "q\""},
    {"empty input", NULL, NULL, "  \n", MP_ERR_PARSE,
     "empty file (expected a JSON object)", NULL, NULL},
    {"top level not an object", NULL, NULL, "[1, 2]", MP_ERR_PARSE,
     "the top level: expected a JSON object, got an array", NULL, "["},
    {"unknown tensor", "\"tensor\": \"a1\"", "\"tensor\": \"nope\"", NULL,
     MP_ERR_NOT_FOUND, "blocks[1].tensor", "no tensor named \"nope\"",
     "\"nope\""},
    {"unknown node", "\"node\": \"fc1\"", "\"node\": \"fc9\"", NULL,
     MP_ERR_NOT_FOUND, "schedule[0].node", "no node named \"fc9\"",
     "\"fc9\""},
    {"unknown tensor in a free step", "\"tensor\": \"x\"",
     "\"tensor\": \"xx\"", NULL, MP_ERR_NOT_FOUND, "schedule[1].tensor",
     "\"xx\"", "\"xx\""},
    {"node name where a tensor is expected", "\"tensor\": \"x\"",
     "\"tensor\": \"fc2\"", NULL, MP_ERR_NOT_FOUND, "schedule[1].tensor",
     "no tensor named \"fc2\"", NULL},
    {"wrong type: offset string", "\"offset\": 16", "\"offset\": \"16\"",
     NULL, MP_ERR_PARSE, "blocks[1].offset",
     "expected a non-negative integer, got \"16\"", "\"16\""},
    {"wrong type: real offset", "\"offset\": 16", "\"offset\": 16.5", NULL,
     MP_ERR_PARSE, "blocks[1].offset", "non-negative integer", "16.5"},
    {"wrong type: negative size", "\"size\": 16, \"first\": 1",
     "\"size\": -16, \"first\": 1", NULL, MP_ERR_PARSE, "blocks[1].size",
     "non-negative integer", "-16"},
    {"wrong type: tensor name a number", "\"tensor\": \"h1\"",
     "\"tensor\": 7", NULL, MP_ERR_PARSE, "blocks[0].tensor",
     "expected a string, got 7", NULL},
    {"wrong type: schedule an object", "\"schedule\": [", "\"schedule\": {"
     "\"a\": [", NULL, MP_ERR_PARSE, "schedule", "expected an array, got an "
     "object", NULL},
    {"wrong type: step not an object", "{\"step\": \"free\", \"tensor\": "
     "\"x\"}", "\"free x\"", NULL, MP_ERR_PARSE, "schedule[1]",
     "expected an object, got \"free x\"", "\"free x\""},
    {"wrong type: alignment null", "\"alignment\": 1", "\"alignment\": null",
     NULL, MP_ERR_PARSE, "figures.alignment", "got null", "null"},
    {"out of range: first beyond 32 bits", "\"first\": 1",
     "\"first\": 4294967296", NULL, MP_ERR_PARSE, "blocks[1].first",
     "out of range", "4294967296"},
    {"out of range: offset beyond 64 bits", "\"offset\": 16",
     "\"offset\": 18446744073709551616", NULL, MP_ERR_PARSE,
     "blocks[1].offset", "out of range", NULL},
    {"missing block key", "\"size\": 16, \"first\": 1, ", "\"first\": 1, ",
     NULL, MP_ERR_PARSE, "blocks[1]: missing required key \"size\"", NULL,
     "{\"tensor\": \"a1\""},
    {"missing step target", ", \"tensor\": \"x\"}", "}", NULL, MP_ERR_PARSE,
     "schedule[1]: missing required key \"tensor\" (a free step)", NULL,
     NULL},
    {"missing step kind", "\"step\": \"compute\", ", "", NULL, MP_ERR_PARSE,
     "schedule[0]: missing required key \"step\"", NULL, NULL},
    {"missing figures", " \"figures\": {", " \"x-figures\": {", NULL,
     MP_ERR_PARSE, "the top level: missing required key \"figures\"", NULL,
     NULL},
    {"misspelt top-level key", " \"figures\": {", " \"figurez\": {", NULL,
     MP_ERR_PARSE, "the top level: unknown key \"figurez\"", NULL,
     "\"figurez\""},
    {"misspelt block key", "\"size\": 16, \"first\": 1",
     "\"size\": 16, \"firts\": 1", NULL, MP_ERR_PARSE,
     "blocks[1]: unknown key \"firts\"", NULL, "\"firts\""},
    {"misspelt step key", "\"node\": \"fc1\"", "\"nod\": \"fc1\"", NULL,
     MP_ERR_PARSE, "schedule[0]: unknown key \"nod\"", NULL, "\"nod\""},
    {"misspelt figure", "\"peak_step\"", "\"peakstep\"", NULL,
     MP_ERR_PARSE, "figures: unknown key \"peakstep\"", NULL,
     "\"peakstep\""},
    {"extension keys and metadata are free", "\"first\": 0, ",
     "\"first\": 0, \"x-note\": {\"a\": [1, {\"b\": null}]}, ", NULL,
     MP_OK, NULL, NULL, NULL},
    {"top-level metadata is free", "\"version\": 1,",
     "\"version\": 1, \"metadata\": {\"by\": \"hand\"}, \"x-y\": 1,",
     NULL, MP_OK, NULL, NULL, NULL},
    {"missing figure", "\"peak_step\": 0, ", "", NULL, MP_ERR_PARSE,
     "figures: missing required key \"peak_step\"", NULL, NULL},
    {"missing format", "\"format\": \"memplan-plan\", ", "", NULL,
     MP_ERR_PARSE, "not a memplan plan: missing required key \"format\"",
     NULL, NULL},
    {"a graph, not a plan", "memplan-plan", "memplan-graph", NULL,
     MP_ERR_PARSE, "not a memplan plan", "this file is a graph", NULL},
    {"higher version", "\"version\": 1", "\"version\": 2", NULL,
     MP_ERR_UNSUPPORTED, "version 2", "newer", "2,"},
    {"higher version, read before the sections",
     "\"format\": \"memplan-plan\", \"version\": 1,",
     "\"format\": \"memplan-plan\",", NULL, MP_ERR_UNSUPPORTED, "version 7",
     NULL, NULL},
    {"unknown step kind", "\"step\": \"free\"", "\"step\": \"swap\"", NULL,
     MP_ERR_PARSE, "schedule[1].step", "unknown step \"swap\"", "\"swap\""},
    {"compute step naming a tensor", "\"node\": \"fc1\"",
     "\"tensor\": \"h1\"", NULL, MP_ERR_PARSE, "schedule[0]",
     "a compute step takes \"node\"", NULL},
    {"unknown status", "\"status\": \"none\"", "\"status\": \"great\"",
     NULL, MP_ERR_PARSE, "figures.status", "unknown status \"great\"",
     "\"great\""},
    {"duplicate key", "\"first\": 0, ", "\"first\": 0, \"first\": 0, ",
     NULL, MP_ERR_PARSE, "blocks[0]", "duplicate key \"first\"", NULL},
    {"solver name too long", "\"solver\": \"x\"",
     "\"solver\": \"a-solver-name-that-is-far-too-long-for-the-plan\"",
     NULL, MP_ERR_PARSE, "figures.solver", "longer than", NULL},
    {"graph of another size", "\"tensors\": %u", "\"tensors\": 1%u", NULL,
     MP_ERR_GRAPH, "graph.tensors", "made for a graph of", NULL},
};

static void pos_of(const char *text, const char *at, unsigned *line,
                   unsigned *col)
{
    *line = 1;
    *col = 1;
    for (const char *q = text; q < at; q++) {
        if (*q == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static void test_malformed(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char tmpl[2048];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        char *edited;
        if (c->whole) {
            edited = malloc(strlen(c->whole) + 1);
            strcpy(edited, c->whole);
        } else {
            edited = replace(base_plan, c->find, c->repl);
            /* the edit must have applied */
            CU_ASSERT(c->find == NULL || strcmp(edited, base_plan) != 0);
        }
        /* the "higher version" case with the version key last */
        if (strstr(c->what, "read before the sections")) {
            char *e2 = replace(edited, "}]}\n",
                               "}], \"version\": 7, \"extra\": [1]}\n");
            free(edited);
            edited = e2;
        }
        snprintf(tmpl, sizeof tmpl, edited, (unsigned)g->n_tensors,
                 (unsigned)g->n_nodes);
        free(edited);
        const char *tp = mp_test_write_temp(".json", tmpl);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
        char path[256];
        snprintf(path, sizeof path, "%s", tp);
        mp_plan *p = (mp_plan *)&path; /* must be reset to NULL on error */
        mp_ctx_clear(ctx);
        mp_status st = mp_plan_load_json(g, path, &p);
        const char *msg = mp_ctx_message(ctx);
        int ok = st == c->status;
        if (c->status != MP_OK) {
            ok = ok && p == NULL && strncmp(msg, path, strlen(path)) == 0 &&
                 (!c->msg1 || strstr(msg, c->msg1)) &&
                 (!c->msg2 || strstr(msg, c->msg2));
            if (c->at) {
                const char *at = strstr(tmpl, c->at);
                CU_ASSERT_PTR_NOT_NULL(at);
                if (at) {
                    unsigned line, col;
                    char want[300];
                    pos_of(tmpl, at, &line, &col);
                    snprintf(want, sizeof want, "%s:%u:%u: ", path, line,
                             col);
                    ok = ok && strncmp(msg, want, strlen(want)) == 0;
                }
            } else {
                /* still a file:line:column prefix */
                unsigned line, col;
                char rest[8];
                ok = ok && sscanf(msg + strlen(path), ":%u:%u:%1s", &line,
                                  &col, rest) == 3;
            }
        } else {
            ok = ok && p != NULL;
        }
        if (!ok || getenv("MP_TEST_VERBOSE"))
            fprintf(stderr, "\n  case '%s': got %s \"%s\"\n", c->what,
                    mp_status_name(st), msg);
        CU_ASSERT(ok);
        if (st == MP_OK)
            mp_plan_destroy(p);
        unlink(path);
    }
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Every truncation of a valid plan fails with MP_ERR_PARSE (never a crash,
 * never a plan), and random byte changes give a plan or an error naming
 * the file (run under ASan in CI). */
static void test_truncations_and_flips(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    mp_plan *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &text), MP_OK);
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    int bad_trunc = 0;
    /* the last byte is a newline: dropping it leaves a valid plan */
    for (size_t len = 0; len + 1 < n; len++) {
        memcpy(buf, text, len);
        buf[len] = 0;
        const char *path = mp_test_write_temp(".json", buf);
        CU_ASSERT_PTR_NOT_NULL_FATAL(path);
        mp_status st = mp_plan_load_json(g, path, &q);
        if (st != MP_ERR_PARSE || q != NULL) {
            if (!bad_trunc++)
                fprintf(stderr, "\n  truncated at %zu: %s %s\n", len,
                        mp_status_name(st), mp_ctx_message(ctx));
            mp_plan_destroy(q);
            q = NULL;
        }
        unlink(path);
    }
    CU_ASSERT_EQUAL(bad_trunc, 0);

    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    static const char pick[] = "{}[]\",:0123456789-.eE \n\\atnuf\x01\xff";
    int loaded = 0, failed = 0, unnamed = 0;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(buf, text, n + 1);
        int flips = 1 + (int)(mp_test_rand(&seed) % 3);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)(mp_test_rand(&seed) % (n - 1));
            buf[at] = pick[mp_test_rand(&seed) % (sizeof pick - 1)];
        }
        const char *tp = mp_test_write_temp(".json", buf);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
        char path[256];
        snprintf(path, sizeof path, "%s", tp);
        mp_status st = mp_plan_load_json(g, path, &q);
        if (st == MP_OK) {
            loaded++;
            /* whatever loaded is a whole plan the verifier can replay */
            mp_status vs = mp_verify_plan(g, q);
            CU_ASSERT(vs == MP_OK || vs == MP_ERR_VERIFY);
            mp_plan_destroy(q);
            q = NULL;
        } else {
            failed++;
            if (q != NULL ||
                strncmp(mp_ctx_message(ctx), path, strlen(path)) != 0)
                unnamed++;
        }
        unlink(path);
    }
    CU_ASSERT_EQUAL(unnamed, 0);
    CU_ASSERT(failed > 0);
    CU_ASSERT_EQUAL(loaded + failed, 400);
    free(buf);
    mp_free(ctx, text);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_io_and_args(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = build_graph(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    mp_plan *p = NULL, *q = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    const char *nodir = "/nonexistent-memplan-dir/plan.json";
    CU_ASSERT_EQUAL(mp_plan_save_json(p, nodir), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), nodir));
    CU_ASSERT_EQUAL(mp_plan_load_json(g, nodir, &q), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), nodir));
    CU_ASSERT_PTR_NULL(q);
    CU_ASSERT_EQUAL(mp_plan_load_json(g, NULL, &q), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_load_json(NULL, nodir, &q), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_to_json_string(p, NULL), MP_ERR_INVALID_ARG);

    /* a graph that is not finalized cannot resolve a plan */
    mp_graph *open_g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &open_g), MP_OK);
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &text), MP_OK);
    const char *path = mp_test_write_temp(".json", text);
    CU_ASSERT_EQUAL(mp_plan_load_json(open_g, path, &q), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "not finalized"));
    unlink(path);
    mp_free(ctx, text);
    mp_graph_destroy(open_g);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Every example plan loads against its example graph and verifies, and a
 * save of it is byte-identical to the file. */
static void test_example_graph(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL, *q = NULL;
    if (mp_graph_load(ctx, MP_SOURCE_DIR "/examples/resnet50.json", &g) !=
        MP_OK) {
        fprintf(stderr, "\n  resnet50.json: %s\n", mp_ctx_message(ctx));
        CU_FAIL_FATAL("examples/resnet50.json does not load");
    }
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 175);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    char *s1 = NULL, *s2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &s1), MP_OK);
    const char *path = mp_test_write_temp(".json", s1);
    CU_ASSERT_EQUAL_FATAL(mp_plan_load_json(g, path, &q), MP_OK);
    assert_same_plan(p, q);
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(q, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);
    unlink(path);
    mp_free(ctx, s1);
    mp_free(ctx, s2);
    mp_plan_destroy(p);
    mp_plan_destroy(q);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

void mp_register_plan_json(void)
{
    static CU_TestInfo tests[] = {
        {"round trip", test_round_trip},
        {"round trip of every step kind", test_round_trip_step_kinds},
        {"tampered plan reaches the verifier",
         test_tampered_reaches_verifier},
        {"malformed plans", test_malformed},
        {"truncations and byte flips", test_truncations_and_flips},
        {"io errors and arguments", test_io_and_args},
        {"resnet50 example round trip", test_example_graph},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("plan_json", tests);
}
