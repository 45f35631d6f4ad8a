/* Subgraphs in the JSON graph format (frontends/json_graph.c): If, Loop
 * and nested bodies written as node attributes {"graph": {...}} load
 * into the IR the ONNX loader builds (outer-scope names as extra node
 * inputs, NODE:body sized by the bodies' peak), plan and verify, and
 * survive JSON -> ONNX -> JSON; malformed subgraphs give positioned
 * errors, nesting is bounded. */
#include "internal.h"
#include "shape.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The test documents are written with ' for " */
static char *dq(const char *src)
{
    char *t = malloc(strlen(src) + 1);
    size_t k = 0;
    for (; src[k]; k++)
        t[k] = src[k] == '\'' ? '"' : src[k];
    t[k] = 0;
    return t;
}

static const mp_tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    return mp_graph_find_tensor(g, name, &id) == MP_OK ? &g->tensors[id]
                                                        : NULL;
}

static const mp_node *node(const mp_graph *g, const char *name)
{
    uint32_t id;
    return mp_graph_find_node(g, name, &id) == MP_OK ? &g->nodes[id] : NULL;
}

/* bytes of a tensor (UINT64_MAX when absent or unsized) */
static uint64_t bytes_of(const mp_graph *g, const char *name)
{
    const mp_tensor *t = tensor(g, name);
    return t && (t->flags & MP_TF_SIZE_KNOWN) ? t->bytes : UINT64_MAX;
}

static mp_graph *load(mp_ctx *ctx, const char *src)
{
    char *text = dq(src);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_json_string(ctx, text, "sub.json", &g);
    if (st)
        fprintf(stderr, "\n  load: %s\n", mp_ctx_message(ctx));
    free(text);
    return g;
}

/* plan with the defaults, verify; the peak (0 on failure) */
static uint64_t plan_verified(mp_graph *g)
{
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    uint64_t peak = mp_plan_figures(p)->peak_bytes;
    mp_plan_destroy(p);
    return peak;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of s without a trailing comma, sorted (pointers into s,
 * whose newlines and trailing commas become NULs). */
static char **sorted_lines(char *s, size_t *n)
{
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == '\n';
    char **l = malloc(cap * sizeof *l);
    *n = 0;
    for (char *c = s; *c;) {
        l[(*n)++] = c;
        char *e = strchr(c, '\n');
        if (!e)
            break;
        *e = 0;
        if (e > c && e[-1] == ',')
            e[-1] = 0;
        c = e + 1;
    }
    qsort(l, *n, sizeof *l, cmp_line);
    return l;
}

/* g written as JSON equals g written as ONNX, read back and written as
 * JSON: the same lines (one per tensor, node or subgraph member; the
 * ONNX loader orders tensors its own way). Skipped without ONNX. */
static void same_after_onnx(mp_graph *g)
{
    if (!mp_onnx_available())
        return;
    mp_ctx *ctx = mp_graph_ctx(g);
    void *buf = NULL;
    size_t len = 0;
    mp_graph *h = NULL;
    char *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_onnx(g, &buf, &len), MP_OK);
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, "rt.onnx", NULL,
                                             &h);
    mp_free(ctx, buf);
    if (st)
        fprintf(stderr, "\n  reload: %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &a), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(h, &b), MP_OK);
    size_t na, nb;
    char **la = sorted_lines(a, &na), **lb = sorted_lines(b, &nb);
    CU_ASSERT_EQUAL(na, nb);
    for (size_t i = 0; i < na && i < nb; i++)
        if (strcmp(la[i], lb[i]) != 0) {
            fprintf(stderr, "\n  JSON -> ONNX -> JSON differs:\n  %s\n  %s\n",
                    la[i], lb[i]);
            CU_FAIL("a line differs after the trip through ONNX");
            break;
        }
    CU_ASSERT_EQUAL(plan_verified(g), plan_verified(h));
    free(la);
    free(lb);
    mp_free(ctx, a);
    mp_free(ctx, b);
    mp_graph_destroy(h);
}

/* If: then_branch concatenates x twice (t, [1, 2048]) and then with x
 * again (u, [1, 3072]); else_branch is an Identity of x (a view: no
 * memory). %s: the condition's source, %s: z's shape. */
static const char if_fmt[] =
    "{'name': 'if_graph',\n"
    " 'tensors': [\n"
    "  %s,\n"
    "  {'name': 'x', 'dtype': 'float32', 'shape': [1, 1024], "
    "'kind': 'input'},\n"
    "  {'name': 'z', 'dtype': 'float32', 'shape': [1, %d]}\n"
    " ],\n"
    " 'nodes': [%s\n"
    "  {'name': 'if', 'op': 'If', 'inputs': ['c'], 'outputs': ['y'],\n"
    "   'attributes': {\n"
    "    'then_branch': {'graph': {'name': 'big', 'nodes': [\n"
    "      {'name': 'cat', 'op': 'Concat', 'inputs': ['x', 'x'], "
    "'outputs': ['t'], 'attributes': {'axis': 1}},\n"
    "      {'name': 'cat2', 'op': 'Concat', 'inputs': ['t', 'x'], "
    "'outputs': ['u'], 'attributes': {'axis': 1}}],\n"
    "     'outputs': ['u']}},\n"
    "    'else_branch': {'graph': {'name': 'small', 'nodes': [\n"
    "      {'name': 'id', 'op': 'Identity', 'inputs': ['x'], "
    "'outputs': ['e']}],\n"
    "     'outputs': ['e']}}}},\n"
    "  {'name': 'post', 'op': 'Sigmoid', 'inputs': ['y'], 'outputs': ['z']}\n"
    " ],\n"
    " 'outputs': ['z']}\n";

static mp_graph *load_if(mp_ctx *ctx, int cond)
{
    char text[4096];
    if (cond < 0) /* unknown: a graph input */
        snprintf(text, sizeof text, if_fmt,
                 "{'name': 'c', 'dtype': 'bool', 'shape': [], 'kind': "
                 "'input'}",
                 3072, "");
    else /* a Constant */
        snprintf(text, sizeof text, if_fmt,
                 "{'name': 'c', 'dtype': 'bool', 'shape': []}",
                 cond ? 3072 : 1024,
                 cond ? "\n  {'name': 'k', 'op': 'Constant', 'inputs': [], "
                        "'outputs': ['c'], 'attributes': {'value.dtype': 9, "
                        "'value.dims': [], 'value.ints': [1]}},"
                      : "\n  {'name': 'k', 'op': 'Constant', 'inputs': [], "
                        "'outputs': ['c'], 'attributes': {'value.dtype': 9, "
                        "'value.dims': [], 'value.ints': [0]}},");
    return load(ctx, text);
}

static void test_if(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load_if(ctx, -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(g->n_subgraphs, 2);
    const mp_node *n = node(g, "if");
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    /* the condition, then x taken from the enclosing graph; y, if:body */
    CU_ASSERT_EQUAL_FATAL(n->n_in, 2);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->inputs[1]].name, "x");
    CU_ASSERT_EQUAL(mp_attr_int(n, "body.inputs", -1), 1);
    CU_ASSERT_EQUAL(mp_attr_int(n, "then_branch.graph", -1), 0);
    CU_ASSERT_EQUAL(mp_attr_int(n, "else_branch.graph", -1), 1);
    CU_ASSERT_EQUAL_FATAL(n->n_out, 2);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->outputs[1]].name, "if:body");
    const mp_graph *then = g->subgraphs[0];
    CU_ASSERT_STRING_EQUAL(then->name, "big");
    CU_ASSERT_EQUAL(then->n_sub_inputs, 0);
    CU_ASSERT_EQUAL_FATAL(then->n_sub_outputs, 1);
    CU_ASSERT_STRING_EQUAL(then->tensors[then->sub_outputs[0]].name, "u");
    CU_ASSERT_EQUAL(tensor(then, "x")->kind, MP_KIND_INPUT);
    /* unknown condition: the larger branch; t and u live together in
     * then_branch (8192 + 12288 bytes), else_branch takes none */
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 8192 + 12288);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 12288);
    CU_ASSERT_EQUAL(tensor(g, "y")->dims[1], -1);
    uint64_t peak = plan_verified(g);
    CU_ASSERT(peak >= 8192 + 12288);
    same_after_onnx(g);
    mp_graph_destroy(g);

    /* a constant condition picks its branch */
    g = load_if(ctx, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 8192 + 12288);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 12288);
    CU_ASSERT_EQUAL(tensor(g, "y")->dims[1], 3072);
    CU_ASSERT(plan_verified(g) >= 8192 + 12288);
    same_after_onnx(g);
    mp_graph_destroy(g);
    g = load_if(ctx, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 0);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 4096);
    CU_ASSERT(plan_verified(g) < peak);
    same_after_onnx(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Loop, 3 iterations: carried v (vi + w, w a weight of the top level),
 * scan output so = Concat(vi, vo) [2, 256] per iteration. */
static const char loop_text[] =
    "{'name': 'loop_graph',\n"
    " 'tensors': [\n"
    "  {'name': 'w', 'dtype': 'float32', 'shape': [1, 256], "
    "'kind': 'weight'},\n"
    "  {'name': 'v0', 'dtype': 'float32', 'shape': [1, 256], "
    "'kind': 'input'}\n"
    " ],\n"
    " 'nodes': [\n"
    "  {'name': 'm', 'op': 'Constant', 'inputs': [], 'outputs': ['M'], "
    "'attributes': {'value_int': 3}},\n"
    "  {'name': 'k', 'op': 'Constant', 'inputs': [], 'outputs': ['cond'], "
    "'attributes': {'value.dtype': 9, 'value.dims': [], "
    "'value.ints': [1]}},\n"
    "  {'name': 'loop', 'op': 'Loop', 'inputs': ['M', 'cond', 'v0'], "
    "'outputs': ['v', 's'],\n"
    "   'attributes': {'body': {'graph': {\n"
    "    'name': 'body',\n"
    "    'inputs': ['i', 'ci', 'vi'],\n"
    "    'tensors': [\n"
    "     {'name': 'i', 'dtype': 'int64', 'shape': []},\n"
    "     {'name': 'ci', 'dtype': 'bool', 'shape': [], 'kind': 'input'},\n"
    "     {'name': 'vi', 'dtype': 'float32', 'shape': [1, 256]}],\n"
    "    'nodes': [\n"
    "     {'name': 'co', 'op': 'Identity', 'inputs': ['ci'], "
    "'outputs': ['co']},\n"
    "     {'name': 'add', 'op': 'Add', 'inputs': ['vi', 'w'], "
    "'outputs': ['vo']},\n"
    "     {'name': 'cat', 'op': 'Concat', 'inputs': ['vi', 'vo'], "
    "'outputs': ['so'], 'attributes': {'axis': 0}}],\n"
    "    'outputs': ['co', 'vo', 'so']}}}},\n"
    "  {'name': 'post', 'op': 'Relu', 'inputs': ['s'], 'outputs': ['r']}\n"
    " ],\n"
    " 'outputs': ['v', 'r']}\n";

static void test_loop(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, loop_text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const mp_node *n = node(g, "loop");
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    CU_ASSERT_EQUAL_FATAL(n->n_in, 4); /* M, cond, v0; w from outside */
    CU_ASSERT_STRING_EQUAL(g->tensors[n->inputs[3]].name, "w");
    const mp_graph *b = g->subgraphs[0];
    CU_ASSERT_EQUAL_FATAL(b->n_sub_inputs, 3);
    CU_ASSERT_STRING_EQUAL(b->tensors[b->sub_inputs[2]].name, "vi");
    for (uint32_t k = 0; k < 3; k++)
        CU_ASSERT_EQUAL(b->tensors[b->sub_inputs[k]].declared_kind,
                        MP_KIND_INPUT);
    CU_ASSERT_EQUAL(b->n_sub_outputs, 3);
    /* carried state keeps its shape; scan outputs stack 3 iterations */
    CU_ASSERT_EQUAL(bytes_of(g, "v"), 1024);
    const mp_tensor *s = tensor(g, "s");
    CU_ASSERT_EQUAL_FATAL(s->rank, 3);
    CU_ASSERT_EQUAL(s->dims[0], 3);
    CU_ASSERT_EQUAL(s->dims[1], 2);
    CU_ASSERT_EQUAL(bytes_of(g, "s"), 3 * 2048);
    /* one iteration: the new carried value and the scan slice (co is a
     * view of the input ci) */
    CU_ASSERT_EQUAL(bytes_of(g, "loop:body"), 1024 + 2048);
    CU_ASSERT(plan_verified(g) >= 1024 + 3 * 2048 + 3072);
    same_after_onnx(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* An If inside a Loop body (2 iterations): its branches read w of the
 * top level (two scopes up) and vi of the body; then_branch a = vi * w,
 * a2 = Concat(a, vi) [8, 64]; else_branch Concat(vi, w) [8, 64]; the If's
 * output is the Loop's scan output, vi is carried through a view. */
static const char nested_text[] =
    "{'name': 'nested',\n"
    " 'tensors': [\n"
    "  {'name': 'w', 'dtype': 'float32', 'shape': [4, 64], "
    "'kind': 'weight'},\n"
    "  {'name': 'cond', 'dtype': 'bool', 'shape': [], 'kind': 'input'},\n"
    "  {'name': 'v0', 'dtype': 'float32', 'shape': [4, 64], "
    "'kind': 'input'}\n"
    " ],\n"
    " 'nodes': [\n"
    "  {'name': 'm', 'op': 'Constant', 'inputs': [], 'outputs': ['M'], "
    "'attributes': {'value_int': 2}},\n"
    "  {'name': 'loop', 'op': 'Loop', 'inputs': ['M', 'cond', 'v0'], "
    "'outputs': ['v', 's'],\n"
    "   'attributes': {'body': {'graph': {\n"
    "    'name': 'body',\n"
    "    'inputs': ['i', 'ci', 'vi'],\n"
    "    'tensors': [\n"
    "     {'name': 'i', 'dtype': 'int64', 'shape': []},\n"
    "     {'name': 'ci', 'dtype': 'bool', 'shape': []},\n"
    "     {'name': 'vi', 'dtype': 'float32', 'shape': [4, 64]}],\n"
    "    'nodes': [\n"
    "     {'name': 'co', 'op': 'Identity', 'inputs': ['ci'], "
    "'outputs': ['co']},\n"
    "     {'name': 'vc', 'op': 'Identity', 'inputs': ['vi'], "
    "'outputs': ['vc']},\n"
    "     {'name': 'inner', 'op': 'If', 'inputs': ['ci'], "
    "'outputs': ['vo'],\n"
    "      'attributes': {\n"
    "       'then_branch': {'graph': {'name': 'mul', 'nodes': [\n"
    "        {'name': 'mul', 'op': 'Mul', 'inputs': ['vi', 'w'], "
    "'outputs': ['a']},\n"
    "        {'name': 'cat', 'op': 'Concat', 'inputs': ['a', 'vi'], "
    "'outputs': ['a2'], 'attributes': {'axis': 0}}],\n"
    "        'outputs': ['a2']}},\n"
    "       'else_branch': {'graph': {'name': 'sub', 'nodes': [\n"
    "        {'name': 'cat', 'op': 'Concat', 'inputs': ['vi', 'w'], "
    "'outputs': ['b'], 'attributes': {'axis': 0}}],\n"
    "        'outputs': ['b']}}}}],\n"
    "    'outputs': ['co', 'vc', 'vo']}}}}\n"
    " ],\n"
    " 'outputs': ['v', 's']}\n";

static void test_nested(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, nested_text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const mp_node *n = node(g, "loop");
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    /* w, read two scopes down, is an input of the Loop ... */
    CU_ASSERT_EQUAL_FATAL(n->n_in, 4);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->inputs[3]].name, "w");
    CU_ASSERT_EQUAL_FATAL(g->n_subgraphs, 1);
    const mp_graph *b = g->subgraphs[0];
    CU_ASSERT_EQUAL_FATAL(b->n_subgraphs, 2);
    /* ... and of the If in the body, with vi */
    const mp_node *in = node(b, "inner");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_EQUAL_FATAL(in->n_in, 3);
    CU_ASSERT_STRING_EQUAL(b->tensors[in->inputs[1]].name, "vi");
    CU_ASSERT_STRING_EQUAL(b->tensors[in->inputs[2]].name, "w");
    CU_ASSERT_EQUAL(tensor(b, "w")->declared_kind, MP_KIND_INPUT);
    CU_ASSERT_EQUAL(b->subgraphs[0]->n_sub_outputs, 1);
    /* sizes reach the top: the unknown condition takes the larger
     * branch (a and a2 live together: 1024 + 2048; else_branch 2048);
     * the Loop one iteration's peak: the If's body and its output vo */
    CU_ASSERT_EQUAL(bytes_of(b, "inner:body"), 1024 + 2048);
    CU_ASSERT_EQUAL(bytes_of(b, "vo"), 2048);
    CU_ASSERT_EQUAL(bytes_of(g, "loop:body"), 3072 + 2048);
    CU_ASSERT_EQUAL(bytes_of(g, "v"), 1024);
    CU_ASSERT_EQUAL(bytes_of(g, "s"), 2 * 2048);
    plan_verified(g);
    same_after_onnx(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

void mp_register_json_sub(void)
{
    static CU_TestInfo tests[] = {
        {"If: branches of different footprint", test_if},
        {"Loop: carried state, scan output, outer weight", test_loop},
        {"If nested in a Loop: names from two scopes up", test_nested},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("json_sub", tests);
}
