/* Subgraphs in the JSON graph format (frontends/json_graph.c): If, Loop
 * and nested bodies written as node attributes {"graph": {...}} load
 * into the IR the ONNX loader builds (outer-scope names as extra node
 * inputs, NODE:body sized by the bodies' peak), plan and verify, and
 * survive JSON -> ONNX -> JSON; malformed subgraphs give positioned
 * errors, nesting is bounded. */
#include "ir.h"
#include "shape.h"
#include "support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static const mp__tensor *tensor(const mp_graph *g, const char *name)
{
    uint32_t id;
    return mp_graph_find_tensor(g, name, &id) == MP_OK ? &g->tensors[id]
                                                        : NULL;
}

static const mp__node *node(const mp_graph *g, const char *name)
{
    uint32_t id;
    return mp_graph_find_node(g, name, &id) == MP_OK ? &g->nodes[id] : NULL;
}

/* bytes of a tensor (UINT64_MAX when absent or unsized) */
static uint64_t bytes_of(const mp_graph *g, const char *name)
{
    const mp__tensor *t = tensor(g, name);
    return t && (t->flags & MP__TF_SIZE_KNOWN) ? t->bytes : UINT64_MAX;
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

/* load(text), and its node `name` in *n (both must exist) */
static mp_graph *load_at(mp_ctx *ctx, const char *src, const char *name,
                         const mp__node **n)
{
    mp_graph *g = load(ctx, src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    *n = node(g, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*n);
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

/* g written as JSON reads back and is written again byte for byte; and
 * it equals g written as ONNX, read back and written as JSON: the same
 * lines (one per tensor, node or subgraph member; the ONNX loader orders
 * tensors its own way); the ONNX part is skipped without ONNX. */
static void round_trips(mp_graph *g)
{
    mp_ctx *ctx = mp_graph_ctx(g);
    mp_graph *h = NULL;
    char *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &a), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, a, "a.json", &h),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(h, &b), MP_OK);
    CU_ASSERT_STRING_EQUAL(a, b);
    mp_free(ctx, a);
    mp_free(ctx, b);
    mp_graph_destroy(h);
    h = NULL;
    if (!mp_onnx_available())
        return;
    void *buf = NULL;
    size_t len = 0;
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
    "{'name': 'if_graph', 'opset': 13,\n"
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

static mp_graph *load_if(mp_ctx *ctx, int cond, const mp__node **n)
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
    return load_at(ctx, text, "if", n);
}

static void test_if(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    const mp__node *n;
    mp_graph *g = load_if(ctx, -1, &n);
    CU_ASSERT_EQUAL_FATAL(g->n_subgraphs, 2);
    /* the condition, then x taken from the enclosing graph; y, if:body */
    CU_ASSERT_EQUAL_FATAL(n->n_in, 2);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->inputs[1]].name, "x");
    CU_ASSERT_EQUAL(mp__attr_int(n, "body.inputs", -1), 1);
    CU_ASSERT_EQUAL(mp__attr_int(n, "then_branch.graph", -1), 0);
    CU_ASSERT_EQUAL(mp__attr_int(n, "else_branch.graph", -1), 1);
    CU_ASSERT_EQUAL_FATAL(n->n_out, 2);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->outputs[1]].name, "if:body");
    const mp_graph *then = g->subgraphs[0];
    CU_ASSERT_STRING_EQUAL(then->name, "big");
    CU_ASSERT_EQUAL(then->n_sub_inputs, 0);
    CU_ASSERT_EQUAL_FATAL(then->n_sub_outputs, 1);
    CU_ASSERT_STRING_EQUAL(then->tensors[then->sub_outputs[0]].name, "u");
    CU_ASSERT_EQUAL(tensor(then, "x")->kind, MP_KIND_INPUT);
    CU_ASSERT_EQUAL(g->onnx_opset, 13);
    CU_ASSERT_EQUAL(then->onnx_opset, 13); /* the top level's */
    /* unknown condition: the larger branch; t and u live together in
     * then_branch (8192 + 12288 bytes), else_branch takes none */
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 8192 + 12288);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 12288);
    CU_ASSERT_EQUAL(tensor(g, "y")->dims[1], -1);
    uint64_t peak = plan_verified(g);
    CU_ASSERT(peak >= 8192 + 12288);
    round_trips(g);
    mp_graph_destroy(g);

    /* a constant condition picks its branch */
    g = load_if(ctx, 1, &n);
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 8192 + 12288);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 12288);
    CU_ASSERT_EQUAL(tensor(g, "y")->dims[1], 3072);
    CU_ASSERT(plan_verified(g) >= 8192 + 12288);
    round_trips(g);
    mp_graph_destroy(g);
    g = load_if(ctx, 0, &n);
    CU_ASSERT_EQUAL(bytes_of(g, "if:body"), 0);
    CU_ASSERT_EQUAL(bytes_of(g, "y"), 4096);
    CU_ASSERT(plan_verified(g) < peak);
    round_trips(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Loop, 3 iterations: carried v (vi + w, w a weight of the top level),
 * scan output so = Concat(vi, vo) [2, 256] per iteration. */
static const char loop_text[] =
    "{'name': 'loop_graph', 'opset': 16,\n"
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
    const mp__node *n;
    mp_graph *g = load_at(ctx, loop_text, "loop", &n);
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
    const mp__tensor *s = tensor(g, "s");
    CU_ASSERT_EQUAL_FATAL(s->rank, 3);
    CU_ASSERT_EQUAL(s->dims[0], 3);
    CU_ASSERT_EQUAL(s->dims[1], 2);
    CU_ASSERT_EQUAL(bytes_of(g, "s"), 3 * 2048);
    /* one iteration: the new carried value and the scan slice (co is a
     * view of the input ci) */
    CU_ASSERT_EQUAL(bytes_of(g, "loop:body"), 1024 + 2048);
    CU_ASSERT(plan_verified(g) >= 1024 + 3 * 2048 + 3072);
    round_trips(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* An If inside a Loop body (2 iterations): its branches read w of the
 * top level (two scopes up) and vi of the body; then_branch a = vi * w,
 * a2 = Concat(a, vi) [8, 64]; else_branch Concat(vi, w) [8, 64]; the If's
 * output is the Loop's scan output, vi is carried through a view. */
static const char nested_text[] =
    "{'opset': 11, 'name': 'nested',\n"
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
    const mp__node *n;
    mp_graph *g = load_at(ctx, nested_text, "loop", &n);
    /* w, read two scopes down, is an input of the Loop ... */
    CU_ASSERT_EQUAL_FATAL(n->n_in, 4);
    CU_ASSERT_STRING_EQUAL(g->tensors[n->inputs[3]].name, "w");
    CU_ASSERT_EQUAL_FATAL(g->n_subgraphs, 1);
    const mp_graph *b = g->subgraphs[0];
    CU_ASSERT_EQUAL_FATAL(b->n_subgraphs, 2);
    /* ... and of the If in the body, with vi */
    const mp__node *in = node(b, "inner");
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
    round_trips(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* "sub.json:LINE:COL:" of the first occurrence of needle in text (its
 * position counted here, not by the library's locator) */
static void where(const char *text, const char *needle, char *buf, size_t cap)
{
    const char *at = strstr(text, needle);
    int line = 1, col = 1;
    for (const char *c = text; at && c < at; c++) {
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(buf, cap, "sub.json:%d:%d: ", line, col);
}

/* An If on input c whose then_branch is %s (else_branch: Identity of x). */
static const char bad_fmt[] =
    "{'tensors': [\n"
    "  {'name': 'c', 'dtype': 'bool', 'shape': [], 'kind': 'input'},\n"
    "  {'name': 'x', 'dtype': 'float32', 'shape': [4], 'kind': 'input'}],\n"
    " 'nodes': [{'name': 'if', 'op': 'If', 'inputs': ['c'], "
    "'outputs': ['y'], 'attributes': {\n"
    "   'then_branch': %s,\n"
    "   'else_branch': {'graph': {'nodes': [{'name': 'id', 'op': "
    "'Identity', 'inputs': ['x'], 'outputs': ['e']}], 'outputs': ['e']}}}}],\n"
    " 'outputs': ['y']}\n";

static const struct bad_case {
    const char *what, *then; /* then_branch's text */
    mp_status st;
    const char *at, *msg;    /* where (first occurrence), message part */
} bad_cases[] = {
    {"graph not an object", "{'graph': 7}", MP_ERR_PARSE, "7}",
     "nodes[0] (\"if\").attributes.then_branch.graph: expected an object "
     "(a subgraph), got 7"},
    {"unknown key beside graph", "{'graph': {'outputs': []}, 'x': 1}",
     MP_ERR_PARSE, "'x': 1", "one key, \"graph\""},
    {"no graph key", "{}", MP_ERR_PARSE, "{},",
     "missing required key \"graph\""},
    {"undeclared name in a body",
     "{'graph': {'nodes': [{'name': 'r', 'op': 'Relu', 'inputs': ['nope'], "
     "'outputs': ['t']}], 'outputs': ['t']}}",
     MP_ERR_NO_PRODUCER, "'nope'",
     "nodes[0] (\"if\"): \"nope\", used in a subgraph of the node, is "
     "neither declared nor produced"},
    {"bad dtype in a body",
     "{'graph': {'tensors': [{'name': 't', 'dtype': 'float99'}], "
     "'outputs': []}}",
     MP_ERR_PARSE, "'float99'",
     "then_branch.graph.tensors[0] (\"t\").dtype: unknown dtype"},
    {"input listed twice",
     "{'graph': {'inputs': ['a', 'a'], 'outputs': []}}", MP_ERR_DUPLICATE,
     "'a']", "graph.inputs[1]: \"a\" is listed twice"},
    {"input declared as a weight",
     "{'graph': {'tensors': [{'name': 'a', 'kind': 'weight'}], "
     "'inputs': ['a'], 'outputs': []}}",
     MP_ERR_PARSE, "'a'],", "an input of a subgraph has kind input"},
    {"a node produces an input",
     "{'graph': {'inputs': ['a'], 'nodes': [{'name': 'r', 'op': 'Relu', "
     "'inputs': ['x'], 'outputs': ['a']}], 'outputs': ['a']}}",
     MP_ERR_DUPLICATE, "'a']}]", "is an input of the subgraph"},
    {"body reads the node's output",
     "{'graph': {'nodes': [{'name': 'r', 'op': 'Relu', 'inputs': ['y'], "
     "'outputs': ['t']}], 'outputs': ['t']}}",
     MP_ERR_CYCLE, "'y'], 'outputs': ['t']",
     "a subgraph of the node reads its own output \"y\""},
    {"syntax error in a body",
     "{'graph': {'nodes': [] 'outputs': []}}", MP_ERR_PARSE, "'outputs': []}}",
     ""},
    {"unknown key in a body", "{'graph': {'nodez': []}}", MP_ERR_PARSE,
     "'nodez'", "unknown key \"nodez\" (expected format, version, name, "
     "inputs,"},
    {"opset in a subgraph", "{'graph': {'opset': 13, 'outputs': []}}",
     MP_ERR_PARSE, "13,", "graph.opset: a subgraph has the opset of the top "
                          "level"},
    {"bookkeeping attribute beside a body",
     "{'graph': {'outputs': []}}, 'body.inputs': 3", MP_ERR_PARSE,
     "'body.inputs'", "attributes.body.inputs: attribute \"body.inputs\" is "
                      "reserved"},
    {"bookkeeping attribute alone", "{'graph': {'outputs': []}}, "
                                    "'then_branch.graph': 0",
     MP_ERR_PARSE, "'then_branch.graph'", "\"then_branch.graph\" is "
                                          "reserved"},
};

static void test_malformed(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        char src[2048], pos[64];
        snprintf(src, sizeof src, bad_fmt, c->then);
        char *text = dq(src), *at = dq(c->at);
        where(text, at, pos, sizeof pos);
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, text, "sub.json", &g);
        const char *msg = mp_ctx_message(ctx);
        if (st != c->st || !strstr(msg, pos) || !strstr(msg, c->msg))
            fprintf(stderr, "\n  case '%s': %s, want %s at %s\n  %s\n",
                    c->what, mp_status_name(st), mp_status_name(c->st), pos,
                    msg);
        CU_ASSERT_EQUAL(st, c->st);
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, pos));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, c->msg));
        mp_graph_destroy(g);
        free(text);
        free(at);
    }
    /* "inputs" belongs to subgraphs */
    mp_graph *g = NULL;
    char *text = dq("{'inputs': ['x'], 'nodes': []}");
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, text, "sub.json", &g),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "sub.json:1:12: inputs: \"inputs\" lists "
                                  "the inputs of a subgraph"));
    free(text);
    text = dq("{'opset': 0, 'nodes': []}");
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, text, "sub.json", &g),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "sub.json:1:11: opset: expected an integer "
                                  ">= 1 (the ONNX opset), got 0"));
    free(text);
    mp_ctx_destroy(ctx);
}

/* If nodes nested `depth` subgraphs deep: each then_branch (first, its
 * graph on a line of its own) holds the next If, the innermost one an
 * Identity of x; every else_branch is an Identity of x. Subgraph k starts
 * on line k + 1. Caller frees. */
static char *nested_ifs(int depth)
{
    static const char top[] =
        "{\"tensors\": [{\"name\": \"c\", \"dtype\": \"bool\", "
        "\"shape\": [], \"kind\": \"input\"}, {\"name\": \"x\", "
        "\"dtype\": \"float32\", \"shape\": [8], \"kind\": \"input\"}], ";
    static const char head[] =
        "{\"nodes\": [{\"name\": \"n\", \"op\": \"If\", \"inputs\": "
        "[\"c\"], \"outputs\": [\"o\"], \"attributes\": {"
        "\"then_branch\": {\"graph\": \n";
    static const char leaf[] =
        "{\"nodes\": [{\"name\": \"i\", \"op\": \"Identity\", "
        "\"inputs\": [\"x\"], \"outputs\": [\"o\"]}], "
        "\"outputs\": [\"o\"]}";
    size_t n = sizeof top + (size_t)depth * (sizeof head + 2 * sizeof leaf) +
               sizeof leaf;
    char *t = malloc(n), *p = t;
    p += sprintf(p, "%s%s", top, head + 1); /* the top level's If */
    for (int k = 1; k < depth; k++)
        p += sprintf(p, "%s", head);
    p += sprintf(p, "%s", leaf);
    for (int k = 0; k < depth; k++)
        p += sprintf(p, "}, \"else_branch\": {\"graph\": %s}}}], "
                        "\"outputs\": [\"o\"]}",
                     leaf);
    return t;
}

/* 64 levels of subgraphs load and plan; 65 are refused with the position
 * of the 65th, as is a far deeper document (no stack overflow); every
 * truncation of a document with subgraphs fails cleanly. */
static void test_depth_and_truncation(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    char *t = nested_ifs(64);
    mp_status st = mp_graph_load_json_string(ctx, t, "sub.json", &g);
    if (st)
        fprintf(stderr, "\n  64 levels: %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    const mp_graph *b = g;
    int levels = 0;
    while (b->n_subgraphs == 2) {
        b = b->subgraphs[0];
        levels++;
    }
    CU_ASSERT_EQUAL(levels, 64);
    plan_verified(g);
    mp_graph_destroy(g);
    free(t);
    for (int depth = 65; depth <= 5000; depth += 4935) {
        t = nested_ifs(depth);
        CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, t, "sub.json", &g),
                        MP_ERR_UNSUPPORTED);
        CU_ASSERT_PTR_NULL(g);
        /* subgraph 65, on line 66 */
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "sub.json:66:1: "));
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                      "subgraphs nested deeper than 64"));
        free(t);
    }
    t = dq(nested_text);
    size_t n = (size_t)(strrchr(t, '}') - t); /* up to the last brace */
    for (size_t k = 0; k < n; k++) {
        char c = t[k];
        t[k] = 0;
        st = mp_graph_load_json_string(ctx, t, "sub.json", &g);
        t[k] = c;
        CU_ASSERT_NOT_EQUAL(st, MP_OK);
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "sub.json:"));
        mp_graph_destroy(g);
        g = NULL;
    }
    free(t);
    mp_ctx_destroy(ctx);
}

/* examples/loop_if.json (docs/graph-format.md): a Loop of 4 steps whose
 * body holds an If; the odd branch's two MatMul outputs (u and u2 live
 * together, the Add takes over one: 512 bytes) are its larger one. Body
 * blocks are aligned to 256 bytes, as plans are. */
static void test_example(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/loop_if.json", MP_SOURCE_DIR);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load(ctx, path, &g);
    if (st)
        fprintf(stderr, "\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    const mp__tensor *hs = tensor(g, "hs");
    CU_ASSERT_EQUAL_FATAL(hs->rank, 3);
    CU_ASSERT_EQUAL(hs->dims[0], 4);
    CU_ASSERT_EQUAL(bytes_of(g, "hs"), 4 * 256);
    CU_ASSERT_EQUAL(bytes_of(g->subgraphs[0], "pick:body"), 512);
    /* at the If: a, the condition e (1 byte, one aligned block), the
     * If's body and its output h_out */
    CU_ASSERT_EQUAL(bytes_of(g, "loop:body"), 256 + 256 + 512 + 256);
    plan_verified(g);
    round_trips(g);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Runs the memplan command (arguments formatted); its exit status, its
 * output in out. */
static int cli(char *out, size_t cap, const char *fmt, ...) MP__PRINTF(3, 4);
static int cli(char *out, size_t cap, const char *fmt, ...)
{
    char args[1024], cmd[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' %s", MP_CLI_PATH, args);
    return mp_test_run(cmd, out, cap);
}

/* The figure `key` of `memplan plan FILE --json` (0 on failure). */
static unsigned long long planned(const char *file, const char *key)
{
    static char out[1 << 16];
    if (cli(out, sizeof out, "plan '%s' --json", file) != 0)
        return 0;
    const char *at = strstr(out, key);
    return at ? strtoull(strchr(at, ':') + 1, NULL, 10) : 0;
}

/* memplan convert: examples/loop_if.json -> ONNX -> JSON keeps the three
 * subgraphs and the plan. */
static void test_cli_convert(void)
{
    if (!mp_onnx_available())
        return;
    char src[512], onnx[320], back[300], out[256];
    snprintf(src, sizeof src, "%s/examples/loop_if.json", MP_SOURCE_DIR);
    const char *tmp = mp_test_write_temp(".json", "{}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    snprintf(back, sizeof back, "%s", tmp);
    snprintf(onnx, sizeof onnx, "%s.onnx", back);
    CU_ASSERT_EQUAL_FATAL(cli(out, sizeof out, "convert '%s' -o '%s'", src,
                              onnx), 0);
    CU_ASSERT_EQUAL_FATAL(cli(out, sizeof out, "convert '%s' -o '%s'", onnx,
                              back), 0);
    char *text = mp_test_slurp(back);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_EQUAL(mp_test_count(text, "{\"graph\": {"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"opset\": 17"));
    free(text);
    const char *keys[] = {"\"arena_bytes\"", "\"peak_bytes\"",
                          "\"persistent_bytes\""};
    for (int k = 0; k < 3; k++) {
        unsigned long long a = planned(src, keys[k]);
        CU_ASSERT(a > 0);
        CU_ASSERT_EQUAL(planned(onnx, keys[k]), a);
        CU_ASSERT_EQUAL(planned(back, keys[k]), a);
    }
    unlink(onnx);
    unlink(back);
}

void mp_register_json_sub(void)
{
    static CU_TestInfo tests[] = {
        {"If: branches of different footprint", test_if},
        {"Loop: carried state, scan output, outer weight", test_loop},
        {"If nested in a Loop: names from two scopes up", test_nested},
        {"malformed subgraphs: status and line:column", test_malformed},
        {"64 levels load, 65 refused; truncations", test_depth_and_truncation},
        {"examples/loop_if.json", test_example},
        {"memplan convert: JSON -> ONNX -> JSON with subgraphs", test_cli_convert},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("json_sub", tests);
}
