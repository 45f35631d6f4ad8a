/* memplan JSON graph format: malformed inputs (status, position, key),
 * lossless round trips, sizes, load speed, format detection. */
#include "ir.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

/* Test texts are written with ' for " (no escaping noise); '@' marks the
 * character the error message must point at (line:column computed here
 * from the text, independently of the library's locator). */
static char *prepare(const char *src, int *line, int *col)
{
    size_t n = strlen(src);
    char *t = malloc(n + 1);
    size_t k = 0;
    int ln = 1, cl = 1;
    *line = *col = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '@') {
            *line = ln;
            *col = cl;
            continue;
        }
        if (c == '\'')
            c = '"';
        if (c == '\n') {
            ln++;
            cl = 1;
        } else {
            cl++;
        }
        t[k++] = c;
    }
    t[k] = 0;
    return t;
}

typedef struct bad_case {
    const char *what;
    const char *text;
    mp_status status;
    const char *expect; /* substring of the message */
} bad_case;

#define T0 "{'tensors': [\n"
#define X_W "  {'name': 'x', 'dtype': 'float32', 'shape': [2, 3], 'kind': 'input'},\n" \
            "  {'name': 'w', 'dtype': 'float32', 'shape': [3, 3], 'kind': 'weight'}"
#define Y ",\n  {'name': 'y', 'dtype': 'float32', 'shape': [2, 3]}\n"

static const bad_case bad_cases[] = {
    {"syntax error", "{'tensors': [@}", MP_ERR_PARSE, "unexpected token"},
    {"truncated file", "{'tensors': [{'name': 'x'", MP_ERR_PARSE,
     "end of file"},
    {"empty file", "", MP_ERR_PARSE, "t.json:1:1: empty file"},
    {"blank file", "  \n  ", MP_ERR_PARSE, "empty file"},
    {"top-level array", "@[1, 2]", MP_ERR_PARSE, "top level"},
    {"trailing garbage", "{'nodes': []} @x", MP_ERR_PARSE,
     "end of file expected"},
    {"unknown top-level key", "{'nodes': [],\n @'tensor': []}", MP_ERR_PARSE,
     "unknown key \"tensor\""},
    {"unknown tensor key",
     T0 "  {'name': 'x', @'shpe': [1]}\n]}", MP_ERR_PARSE,
     "tensors[0] (\"x\"): unknown key \"shpe\""},
    {"unknown node key",
     T0 X_W Y "],\n 'nodes': [{'name': 'n', 'op': 'MatMul', 'inputs': ['x', "
              "'w'], 'outputs': ['y'], @'atributes': {}}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\"): unknown key \"atributes\""},
    {"duplicate key", "{'tensors': [{'name': 'a', @'name': 'b'}]}",
     MP_ERR_PARSE, "tensors[0] (\"a\"): duplicate key \"name\""},
    {"tensors not an array", "{'tensors': @{}}", MP_ERR_PARSE,
     "tensors: expected an array, got an object"},
    {"tensor not an object", "{'tensors': [@'x']}", MP_ERR_PARSE,
     "tensors[0]: expected an object"},
    {"tensor name not a string", "{'tensors': [{'name': @5}]}",
     MP_ERR_PARSE, "tensors[0].name: expected a string, got 5"},
    {"missing tensor name", "{'tensors': [\n  @{'dtype': 'float32'}]}",
     MP_ERR_PARSE, "tensors[0]: missing required key \"name\""},
    {"empty tensor name", "{'tensors': [{'name': @''}]}", MP_ERR_PARSE,
     "tensors[0].name: must not be an empty string"},
    {"shape entry not an integer",
     T0 "  {'name': 'x', 'dtype': 'float32', 'shape': [1, @'a']}]}",
     MP_ERR_PARSE,
     "tensors[0] (\"x\").shape[1]: expected an integer >= 0 (or -1 or null "
     "for unknown), got \"a\""},
    {"shape not an array", "{'tensors': [{'name': 'x', 'shape': @3}]}",
     MP_ERR_PARSE, "shape: expected an array of integers, got 3"},
    {"negative shape dim",
     "{'tensors': [{'name': 'x', 'dtype': 'int8', 'shape': [4, @-2]}]}",
     MP_ERR_BAD_DIM, "shape[1]: dim 1 is negative (-2)"},
    {"fractional shape dim", "{'tensors': [{'name': 'x', 'shape': [@2.5]}]}",
     MP_ERR_PARSE, "shape[0]: expected an integer"},
    {"rank too large",
     "{'tensors': [{'name': 'x', 'shape': @[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
     "1]}]}",
     MP_ERR_BAD_DIM, "rank 17"},
    {"negative bytes", "{'tensors': [{'name': 't', 'bytes': @-1}]}",
     MP_ERR_PARSE, "tensors[0] (\"t\").bytes: expected an integer >= 0, "
                   "got -1"},
    {"bytes not an integer", "{'tensors': [{'name': 't', 'bytes': @'1k'}]}",
     MP_ERR_PARSE, "bytes: expected an integer >= 0, got \"1k\""},
    {"bytes beyond 64 bits",
     "{'tensors': [{'name': 't',\n  'bytes': @99999999999999999999}]}",
     MP_ERR_OVERFLOW, "too big integer"},
    {"real beyond double", "{'tensors': [{'name': 't', 'bytes': @1e400}]}",
     MP_ERR_OVERFLOW, "overflow"},
    {"shape product overflows 64 bits",
     "{'tensors': [{'name': 'x', 'dtype': 'float32',\n"
     "  'shape': @[4294967296, 4294967296, 2]}]}",
     MP_ERR_OVERFLOW, "tensors[0] (\"x\").shape: the tensor's size in bytes "
                      "overflows 64 bits"},
    {"bytes disagree with shape",
     "{'tensors': [{'name': 'x', 'dtype': 'float32', 'shape': [2], 'bytes': "
     "@9}]}",
     MP_ERR_SHAPE, "9 bytes disagree with the dtype and shape (8 bytes)"},
    {"unknown dtype",
     "{'tensors': [{'name': 'x', 'dtype': @'flaot32', 'shape': [1]}]}",
     MP_ERR_PARSE, "dtype: unknown dtype \"flaot32\""},
    {"dtype not a string", "{'tensors': [{'name': 'x', 'dtype': @32}]}",
     MP_ERR_PARSE, "dtype: expected a string, got 32"},
    {"unknown kind", "{'tensors': [{'name': 'x', 'kind': @'weights'}]}",
     MP_ERR_PARSE, "kind: unknown kind \"weights\""},
    {"unknown phase",
     T0 X_W Y "],\n 'nodes': [{'name': 'n', 'op': 'MatMul', 'inputs': ['x', "
              "'w'], 'outputs': ['y'], 'phase': @'backwards'}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").phase: unknown phase \"backwards\""},
    {"unsupported version", "{'format': 'memplan-graph', 'version': @2}",
     MP_ERR_UNSUPPORTED, "version: version 2 is not supported"},
    {"version not an integer", "{'version': @'1'}", MP_ERR_PARSE,
     "version: expected an integer, got \"1\""},
    {"other format", "{'format': @'onnx-json', 'nodes': []}",
     MP_ERR_UNSUPPORTED, "format \"onnx-json\" is not supported"},
    {"name not a string", "{'name': @['a']}", MP_ERR_PARSE,
     "name: expected a string, got an array"},
    {"metadata not an object", "{'metadata': @1}", MP_ERR_PARSE,
     "metadata: expected an object"},
    {"duplicate tensor name",
     T0 "  {'name': 'x', 'bytes': 4, 'kind': 'input'},\n"
        "  {'name': @'x', 'bytes': 8, 'kind': 'input'}]}",
     MP_ERR_DUPLICATE,
     "tensors[1] (\"x\").name: duplicate tensor name \"x\" (first declared "
     "at tensors[0])"},
    {"duplicate node name",
     T0 X_W Y "],\n 'nodes': [\n"
              "  {'name': 'n', 'op': 'Relu', 'inputs': ['x'], 'outputs': "
              "['a']},\n"
              "  {'name': @'n', 'op': 'Relu', 'inputs': ['x'], 'outputs': "
              "['b']}]}",
     MP_ERR_DUPLICATE, "nodes[1] (\"n\").name: duplicate node name \"n\""},
    {"two producers",
     T0 X_W Y "],\n 'nodes': [\n"
              "  {'name': 'p', 'op': 'Relu', 'inputs': ['x'], 'outputs': "
              "['a']},\n"
              "  {'name': 'q', 'op': 'Relu', 'inputs': ['x'], 'outputs': "
              "[@'a']}]}",
     MP_ERR_DUPLICATE,
     "nodes[1] (\"q\").outputs[0]: tensor \"a\" is already produced by "
     "nodes[0] (\"p\")"},
    {"output listed twice",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
            "'outputs': ['a', @'a']}]}",
     MP_ERR_DUPLICATE, "outputs[1]: tensor \"a\" is listed twice"},
    {"node reads its own output",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Add', 'inputs': ['x', 'a'], "
            "'outputs': [@'a']}]}",
     MP_ERR_CYCLE, "nodes[0] (\"p\").outputs[0]: the node reads its own "
                   "output \"a\" (inputs[1])"},
    {"cycle",
     T0 X_W "],\n 'nodes': [\n"
            "  {'name': 'p', 'op': 'Add', 'inputs': ['x', 'b'], 'outputs': "
            "['a']},\n"
            "  {'name': 'q', 'op': 'Relu', 'inputs': ['a'], 'outputs': "
            "['b']}]}",
     MP_ERR_CYCLE, "t.json: graph has a cycle through node"},
    {"missing op",
     T0 X_W "],\n 'nodes': [@{'name': 'p', 'inputs': ['x'], 'outputs': "
            "['a']}]}",
     MP_ERR_PARSE, "nodes[0] (\"p\"): missing required key \"op\""},
    {"missing node name",
     "{'nodes': [@{'op': 'Relu', 'inputs': [], 'outputs': []}]}",
     MP_ERR_PARSE, "nodes[0]: missing required key \"name\""},
    {"op not a string",
     "{'nodes': [{'name': 'n', 'op': @null, 'inputs': [], 'outputs': []}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").op: expected a string, got null"},
    {"missing outputs",
     "{'nodes': [@{'name': 'n', 'op': 'Relu', 'inputs': []}]}",
     MP_ERR_PARSE, "missing required key \"outputs\" (an array)"},
    {"inputs not an array",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': @'x', 'outputs': "
     "[]}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").inputs: expected an array, got \"x\""},
    {"input not a string",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [@0], 'outputs': "
     "[]}]}",
     MP_ERR_PARSE, "inputs[0]: expected a tensor name"},
    {"empty output name",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': "
     "[@'']}]}",
     MP_ERR_PARSE, "outputs[0]: an output needs a tensor name"},
    {"input never produced",
     T0 X_W Y "],\n 'nodes': [\n"
              "  {'name': 'n', 'op': 'MatMul', 'inputs': ['x', @'foo'], "
              "'outputs': ['y']}]}",
     MP_ERR_NO_PRODUCER,
     "nodes[0] (\"n\").inputs[1]: input \"foo\" is neither declared in "
     "\"tensors\" nor produced by any node"},
    {"declared activation never produced",
     T0 X_W ",\n  {'name': 'h', 'bytes': 24}" Y
     "],\n 'nodes': [\n  {'name': 'n', 'op': 'Add', 'inputs': ['x', @'h'], "
     "'outputs': ['y']}]}",
     MP_ERR_NO_PRODUCER, "input \"h\" (activation) is not produced by any node"},
    {"attribute of unsupported type",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
            "'outputs': ['a'], 'attributes': {'k': 1, 'flag': @true}}]}",
     MP_ERR_PARSE, "attributes.flag: expected a number, a string, an "
                   "array of numbers or {\"graph\": {...}}, got true"},
    {"attribute array of strings",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
            "'outputs': ['a'], 'attributes': {'s': [1, @'a']}}]}",
     MP_ERR_PARSE, "attributes.s[1]: expected a number"},
    {"negative cost",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
            "'outputs': ['a'], 'cost': {'flops': @-3}}]}",
     MP_ERR_PARSE, "nodes[0] (\"p\").cost.flops: expected a number >= 0, "
                   "got -3"},
    {"unknown cost key",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['x'], "
            "'outputs': ['a'], 'cost': {@'time': 1}}]}",
     MP_ERR_PARSE, "cost: unknown key \"time\""},
    {"graph output unknown",
     T0 X_W "],\n 'outputs': [@'z']}", MP_ERR_NO_PRODUCER,
     "outputs[0]: no tensor named \"z\""},
    {"graph output not produced",
     T0 X_W ",\n  {'name': 'h', 'bytes': 4}],\n 'outputs': ['x', @'h']}",
     MP_ERR_NO_PRODUCER, "outputs[1]: output \"h\" (activation) is not produced"},
    {"graph output listed twice",
     T0 X_W "],\n 'outputs': ['x', @'x']}", MP_ERR_DUPLICATE,
     "outputs[1]: \"x\" is listed twice"},
    {"unknown size for a generic op",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'MyOp', 'inputs': ['x', "
            "'w'], 'outputs': ['y']}]}",
     MP_ERR_UNKNOWN_OP, "t.json: node 'p' (op MyOp): size of output 'y' is "
                   "unknown"},
    {"produced graph input",
     T0 X_W "],\n 'nodes': [{'name': 'p', 'op': 'Relu', 'inputs': ['w'], "
            "'outputs': ['x']}]}",
     MP_ERR_GRAPH, "t.json: tensor 'x' is a graph input but node 'p'"},
    {"kind not a string", "{'tensors': [{'name': 'x', 'kind': @1}]}",
     MP_ERR_PARSE, "tensors[0] (\"x\").kind: expected a string, got 1"},
    {"node name not a string",
     "{'nodes': [{'name': @{}, 'op': 'Relu', 'inputs': [], 'outputs': []}]}",
     MP_ERR_PARSE, "nodes[0].name: expected a string, got an object"},
    {"domain not a string",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'domain': @0, 'inputs': [], "
     "'outputs': []}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").domain: expected a string, got 0"},
    {"phase not a string",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'phase': @1.5, 'inputs': [], "
     "'outputs': []}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").phase: expected a string, got 1.5"},
    {"attributes not an object",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'attributes': @[1]}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").attributes: expected an object, got "
                   "an array"},
    {"cost not an object",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'cost': @5}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").cost: expected an object"},
    {"cost value not a number",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'cost': {'seconds': @'1ms'}}]}",
     MP_ERR_PARSE, "cost.seconds: expected a number >= 0, got \"1ms\""},
    {"duplicate attribute",
     "{'nodes': [{'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'attributes': {'a': 1, @'a': 2}}]}",
     MP_ERR_PARSE, "nodes[0] (\"n\").attributes: duplicate key \"a\""},
    {"duplicate attribute among many (each node its own names)",
     "{'nodes': [{'name': 'm', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'attributes': {'a0': 0, 'a1': 1, 'a2': 2, 'a3': 3, 'a4': 4, 'a5': 5, 'a6': 6, 'a7': 7, 'a8': 8, 'a9': 9}},\n"
     " {'name': 'n', 'op': 'Relu', 'inputs': [], 'outputs': [], "
     "'attributes': {'a0': 0, 'a1': 1, 'a2': 2, 'a3': 3, 'a4': 4, 'a5': 5, 'a6': 6, 'a7': 7, 'a8': 8, 'a9': 9, 'b': 1, @'a9': 2}}]}",
     MP_ERR_PARSE, "nodes[1] (\"n\").attributes: duplicate key \"a9\""},
    {"format not a string", "{'format': @1}", MP_ERR_PARSE,
     "format: expected the string \"memplan-graph\", got 1"},
    {"nodes not an array", "{'nodes': @'n'}", MP_ERR_PARSE,
     "nodes: expected an array, got \"n\""},
    {"node not an object", "{'nodes': [@3]}", MP_ERR_PARSE,
     "nodes[0]: expected an object (a node), got 3"},
    {"outputs not an array", "{'outputs': @{}}", MP_ERR_PARSE,
     "outputs: expected an array, got an object"},
    {"output not a string", "{'outputs': [@null]}", MP_ERR_PARSE,
     "outputs[0]: expected a tensor name (a string), got null"},
    {"duplicate top-level key", "{'nodes': [],\n @'nodes': []}",
     MP_ERR_PARSE, "the top level: duplicate key \"nodes\""},
    {"malformed metadata", "{'metadata': {'a': [1, @}}", MP_ERR_PARSE,
     "unexpected token near '}'"},
    {"malformed extension value", "{'x-a': {'b' @1}, 'nodes': []}",
     MP_ERR_PARSE, ""},
    {"key with escapes located",
     "{'tensors': [{'name': 'x', 'x-note': 1, @'k\\u0069ind': 3}]}",
     MP_ERR_PARSE, "unknown key \"kiind\""},
};

static void test_bad_table(void)
{
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    CU_ASSERT(n >= 20);
    for (size_t i = 0; i < n; i++) {
        const bad_case *c = &bad_cases[i];
        int line, col;
        char *text = prepare(c->text, &line, &col);
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = (mp_graph *)1;
        mp_status st = mp_graph_load_json_string(ctx, text, "t.json", &g);
        const char *msg = mp_ctx_message(ctx);
        char pos[64] = "";
        if (line)
            snprintf(pos, sizeof pos, "t.json:%d:%d: ", line, col);
        int ok = st == c->status && g == NULL && strstr(msg, c->expect) &&
                 strncmp(msg, pos, strlen(pos)) == 0;
        if (!ok)
            printf("\n  case '%s': status %s (want %s), pos want '%s'\n"
                   "    message: %s\n    want substring: %s\n",
                   c->what, mp_status_name(st), mp_status_name(c->status),
                   pos, msg, c->expect);
        CU_ASSERT(ok);
        mp_graph_destroy(g == (mp_graph *)1 ? NULL : g);
        mp_ctx_destroy(ctx);
        free(text);
    }
}

static void test_missing_file(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json(ctx, "/nonexistent/dir/g.json", &g),
                    MP_ERR_IO);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "/nonexistent/dir/g.json: cannot open"));
    CU_ASSERT_EQUAL(mp_graph_load(ctx, "/nonexistent/dir/g.json", &g),
                    MP_ERR_IO);
    /* a file with a syntax error names the path */
    const char *p = mp_test_write_temp(".json", "{\n  \"nodes\": [,]\n}");
    CU_ASSERT_FATAL(p != NULL);
    char want[300];
    snprintf(want, sizeof want, "%s:2:13: ", p);
    CU_ASSERT_EQUAL(mp_graph_load_json(ctx, p, &g), MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), want));
    remove(p);
    mp_ctx_destroy(ctx);
}

/* ---- round trips ------------------------------------------------------------- */
static const char *rich_doc =
    "{'format': 'memplan-graph', 'version': 1, 'name': 'rich \\\"graph\\\" "
    "\\u00e9\\n',\n"
    " 'metadata': {'anything': [1, {'goes': true}]}, 'x-tool': 'gen 1.0',\n"
    " 'tensors': [\n"
    "  {'name': 'x', 'dtype': 'float', 'shape': [1, 64, 56, 56], 'kind': "
    "'input', 'x-note': 'ignored'},\n"
    "  {'name': 'w', 'dtype': 'float16', 'shape': [64, 64, 3, 3], 'kind': "
    "'weight'},\n"
    "  {'name': 'b', 'dtype': 'bfloat16', 'shape': [64], 'kind': "
    "'weight'},\n"
    "  {'name': 'shp', 'dtype': 'int64', 'shape': [2], 'kind': 'constant'},\n"
    "  {'name': 'mom', 'bytes': 4096, 'kind': 'optimizer_state'},\n"
    "  {'name': 'y', 'dtype': 'float32', 'shape': [1, 64, 56, 56]},\n"
    "  {'name': 'sym', 'dtype': 'float32', 'shape': [null, -1, 8], 'bytes': "
    "1024, 'kind': 'input'},\n"
    "  {'name': 'zero', 'bytes': 0, 'kind': 'input'},\n"
    "  {'name': 'scalar', 'dtype': 'int4', 'shape': [], 'kind': "
    "'constant'},\n"
    "  {'name': 'g', 'bytes': 12345678901234, 'kind': 'gradient'}\n"
    " ],\n"
    " 'nodes': [\n"
    "  {'name': 'conv1', 'op': 'Conv', 'domain': '', 'inputs': ['x', 'w', "
    "''], 'outputs': ['y'],\n"
    "   'attributes': {'kernel_shape': [3, 3], 'alpha': 0.5, 'mode': "
    "'same', 'groups': -1, 'big': 9007199254740993, 'scales': [1, 2.0, "
    "0.1], 'none': [], 'two': 2.0, 'tiny': 1e-300, 'esc': 'a\\tb\\u0001'},\n"
    "   'phase': 'forward', 'cost': {'flops': 1.2e9, 'bytes': 3.4e6, "
    "'seconds': 1e-4}, 'x-origin': 'layer1'},\n"
    "  {'name': 'flat', 'op': 'Reshape', 'inputs': ['y', 'shp'], "
    "'outputs': ['yflat']},\n"
    "  {'name': 'wt', 'op': 'Transpose', 'domain': 'com.example', 'inputs': "
    "['w'], 'outputs': ['wT']},\n"
    "  {'name': 'bwd', 'op': 'ConvGrad', 'inputs': ['yflat', 'wT', 'sym', "
    "'zero'], 'outputs': ['g', 'gw'], 'phase': 'backward', 'cost': "
    "{'seconds': 0.25}},\n"
    "  {'name': 'opt', 'op': 'Adam', 'inputs': ['gw', 'mom'], 'outputs': "
    "['w_new'], 'phase': 'optimizer', 'cost': {'flops': 0}}\n"
    " ],\n"
    " 'outputs': ['g', 'w_new']}";

/* wT, gw, w_new have no size: declared by a second list appended here */
static char *rich_text(void)
{
    int l, c;
    char *t = prepare(rich_doc, &l, &c);
    /* give the outputs of the generic ops explicit sizes */
    const char *extra = ",\n  {\"name\": \"wT\", \"dtype\": \"float16\", "
                        "\"shape\": [64, 64, 3, 3]},\n  {\"name\": \"gw\", "
                        "\"bytes\": 73728},\n  {\"name\": \"w_new\", "
                        "\"bytes\": 73728, \"kind\": \"output\"}\n ],";
    char *at = strstr(t, "\"kind\": \"gradient\"}");
    CU_ASSERT_FATAL(at != NULL);
    at += strlen("\"kind\": \"gradient\"}");
    /* skip "\n ]," */
    char *rest = strstr(at, "],");
    CU_ASSERT_FATAL(rest != NULL);
    rest += 2;
    size_t n = (size_t)(at - t);
    char *out = malloc(strlen(t) + strlen(extra) + 1);
    memcpy(out, t, n);
    strcpy(out + n, extra);
    strcat(out, rest);
    free(t);
    return out;
}

static void compare_graphs(const mp_graph *a, const mp_graph *b)
{
    CU_ASSERT_STRING_EQUAL(mp_graph_name(a), mp_graph_name(b));
    CU_ASSERT_EQUAL_FATAL(a->n_tensors, b->n_tensors);
    CU_ASSERT_EQUAL_FATAL(a->n_nodes, b->n_nodes);
    for (size_t i = 0; i < a->n_tensors; i++) {
        const mp__tensor *x = &a->tensors[i], *y = &b->tensors[i];
        CU_ASSERT_STRING_EQUAL(x->name, y->name);
        CU_ASSERT_EQUAL(x->dtype, y->dtype);
        CU_ASSERT_EQUAL(x->rank, y->rank);
        for (int32_t k = 0; k < x->rank && x->rank == y->rank; k++)
            CU_ASSERT_EQUAL(x->dims[k], y->dims[k]);
        CU_ASSERT_EQUAL(x->bytes, y->bytes);
        CU_ASSERT_EQUAL(x->kind, y->kind);
        CU_ASSERT_EQUAL(x->declared_kind, y->declared_kind);
        CU_ASSERT_EQUAL(x->flags, y->flags);
        CU_ASSERT_EQUAL(x->producer, y->producer);
        CU_ASSERT_EQUAL(x->alias_of, y->alias_of);
    }
    for (size_t i = 0; i < a->n_nodes; i++) {
        const mp__node *x = &a->nodes[i], *y = &b->nodes[i];
        CU_ASSERT_STRING_EQUAL(x->name, y->name);
        CU_ASSERT_STRING_EQUAL(x->op, y->op);
        CU_ASSERT_STRING_EQUAL(x->domain, y->domain);
        CU_ASSERT_EQUAL(x->phase, y->phase);
        CU_ASSERT_EQUAL(x->flops, y->flops);
        CU_ASSERT_EQUAL(x->bytes_moved, y->bytes_moved);
        CU_ASSERT_EQUAL(x->seconds, y->seconds);
        CU_ASSERT_EQUAL_FATAL(x->n_in, y->n_in);
        CU_ASSERT_EQUAL_FATAL(x->n_out, y->n_out);
        for (uint32_t k = 0; k < x->n_in; k++)
            CU_ASSERT_EQUAL(x->inputs[k], y->inputs[k]);
        for (uint32_t k = 0; k < x->n_out; k++)
            CU_ASSERT_EQUAL(x->outputs[k], y->outputs[k]);
        CU_ASSERT_EQUAL_FATAL(x->n_attrs, y->n_attrs);
        for (uint32_t k = 0; k < x->n_attrs; k++) {
            const mp__attr *p = &x->attrs[k], *q = &y->attrs[k];
            CU_ASSERT_STRING_EQUAL(p->name, q->name);
            CU_ASSERT_EQUAL_FATAL(p->type, q->type);
            CU_ASSERT_EQUAL(p->n, q->n);
            switch (p->type) {
            case MP__ATTR_INT: CU_ASSERT_EQUAL(p->v.i, q->v.i); break;
            case MP__ATTR_FLOAT: CU_ASSERT_EQUAL(p->v.f, q->v.f); break;
            case MP__ATTR_STRING: CU_ASSERT_STRING_EQUAL(p->v.s, q->v.s); break;
            case MP__ATTR_INTS:
                for (uint32_t j = 0; j < p->n; j++)
                    CU_ASSERT_EQUAL(p->v.ints[j], q->v.ints[j]);
                break;
            case MP__ATTR_FLOATS:
                for (uint32_t j = 0; j < p->n; j++)
                    CU_ASSERT_EQUAL(p->v.floats[j], q->v.floats[j]);
                break;
            }
        }
    }
}

static void test_round_trip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    char *text = rich_text();
    mp_graph *g1 = NULL, *g2 = NULL, *g3 = NULL;
    mp_status st = mp_graph_load_json_string(ctx, text, "rich.json", &g1);
    if (st)
        printf("\n  load: %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    char *s1 = NULL, *s2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g1, &s1), MP_OK);
    st = mp_graph_load_json_string(ctx, s1, "save1.json", &g2);
    if (st)
        printf("\n  reload: %s\n%s\n", mp_ctx_message(ctx), s1);
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g2, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);
    compare_graphs(g1, g2);

    /* what was declared is what is written */
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"name\": \"rich \\\"graph\\\" \xc3\xa9\\n\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"x\", \"dtype\": "
                                      "\"float32\", \"shape\": [1, 64, 56, "
                                      "56], \"kind\": \"input\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"zero\", \"bytes\": 0, "
                                      "\"kind\": \"input\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"sym\", \"dtype\": "
                                      "\"float32\", \"shape\": [-1, -1, 8], "
                                      "\"bytes\": 1024, \"kind\": \"input\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"scalar\", \"dtype\": "
                                      "\"int4\", \"shape\": [], \"kind\": "
                                      "\"constant\"}"));
    /* the view output keeps no inferred bytes; the folded transpose keeps
     * its declared kind */
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"yflat\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "{\"name\": \"wT\", \"dtype\": "
                                      "\"float16\", \"shape\": [64, 64, 3, "
                                      "3]}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"inputs\": [\"x\", \"w\", \"\"]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"domain\": \"com.example\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"cost\": {\"flops\": 1200000000.0, "
                                      "\"bytes\": 3400000.0, \"seconds\": "
                                      "0.0001}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"cost\": {\"seconds\": 0.25}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"cost\": {\"flops\": 0.0}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"two\": 2.0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"scales\": [1.0, 2.0, 0.1]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"big\": 9007199254740993"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"esc\": \"a\\tb\\u0001\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"outputs\": [\"g\", \"w_new\"]\n}"));
    CU_ASSERT_PTR_NULL(strstr(s1, "x-"));
    CU_ASSERT_PTR_NULL(strstr(s1, "metadata"));

    /* the loaded graph: attribute types and folded constants */
    uint32_t id;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g1, "conv1", &id), MP_OK);
    const mp__node *conv = &g1->nodes[id];
    const mp__attr *a = mp__node_attr(conv, "kernel_shape");
    CU_ASSERT(a && a->type == MP__ATTR_INTS && a->n == 2 && a->v.ints[1] == 3);
    a = mp__node_attr(conv, "two");
    CU_ASSERT(a && a->type == MP__ATTR_FLOAT && a->v.f == 2.0);
    a = mp__node_attr(conv, "scales");
    CU_ASSERT(a && a->type == MP__ATTR_FLOATS && a->n == 3 &&
              a->v.floats[0] == 1.0 && a->v.floats[2] == 0.1);
    a = mp__node_attr(conv, "none");
    CU_ASSERT(a && a->type == MP__ATTR_INTS && a->n == 0);
    a = mp__node_attr(conv, "tiny");
    CU_ASSERT(a && a->type == MP__ATTR_FLOAT && a->v.f == 1e-300);
    a = mp__node_attr(conv, "big");
    CU_ASSERT(a && a->type == MP__ATTR_INT && a->v.i == 9007199254740993LL);
    a = mp__node_attr(conv, "mode");
    CU_ASSERT(a && a->type == MP__ATTR_STRING && strcmp(a->v.s, "same") == 0);
    CU_ASSERT_EQUAL(conv->inputs[2], MP_NONE);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g1, "wT", &id), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g1, id, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_CONSTANT);
    CU_ASSERT(ti.folded);

    /* through a file too */
    const char *p = mp_test_write_temp(".json", "");
    CU_ASSERT_FATAL(p != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    CU_ASSERT_EQUAL(mp_graph_save_json(g2, path), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, path, &g3), MP_OK);
    char *s3 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g3, &s3), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s3);
    remove(path);
    CU_ASSERT_EQUAL(mp_graph_save_json(g2, "/nonexistent/dir/x.json"),
                    MP_ERR_IO);

    mp_free(ctx, s1);
    mp_free(ctx, s2);
    mp_free(ctx, s3);
    mp_graph_destroy(g1);
    mp_graph_destroy(g2);
    mp_graph_destroy(g3);
    mp_ctx_destroy(ctx);
    free(text);
}

/* Every truncation of a valid document fails cleanly with MP_ERR_PARSE
 * (under ASan: no crash, no leak), and single-byte corruptions into a
 * quote, bracket, comma or colon fail cleanly or load. */
static void test_truncations(void)
{
    char *text = rich_text();
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    mp_ctx *ctx = mp_ctx_create(NULL);
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        memcpy(buf, text, k);
        buf[k] = 0;
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, buf, "cut.json", &g);
        if (st != MP_ERR_PARSE || g != NULL ||
            !strstr(mp_ctx_message(ctx), "cut.json:")) {
            if (bad++ < 3)
                printf("\n  prefix %zu: %s %s\n", k, mp_status_name(st),
                       mp_ctx_message(ctx));
        }
        mp_graph_destroy(g);
    }
    CU_ASSERT_EQUAL(bad, 0);
    const char subst[] = "\"{}[],:";
    for (size_t k = 0; k < n; k += 3) {
        memcpy(buf, text, n + 1);
        buf[k] = subst[k % (sizeof subst - 1)];
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, buf, "bad.json", &g);
        CU_ASSERT(st != MP_OK ? g == NULL : g != NULL);
        CU_ASSERT(st == MP_OK || strstr(mp_ctx_message(ctx), "bad.json"));
        mp_graph_destroy(g);
    }
    mp_ctx_destroy(ctx);
    free(buf);
    free(text);
}

/* A graph built through the C API (never loaded) round-trips too. */
static void test_api_graph_round_trip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g, *g2 = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t d[] = {4, 4};
    mp_tensor_desc in = {"in", MP_DTYPE_FLOAT32, 2, d, 0, MP_KIND_INPUT};
    mp_tensor_desc out = {"out\x01/\\", MP_DTYPE_UNDEFINED, -1, NULL, 0,
                          MP_KIND_ACTIVATION};
    uint32_t ti, to;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &in, &ti), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &out, &to), MP_OK);
    mp_node_desc nd = {"act", "Relu", NULL, &ti, 1, &to, 1,
                       MP_PHASE_FORWARD};
    uint32_t n;
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &nd, &n), MP_OK);
    double fl[] = {0.5, -0.0};
    CU_ASSERT_EQUAL(mp_graph_set_attr_floats(g, n, "f", fl, 2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, to), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_OK);
    char *s1, *s2;
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &s1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, s1, NULL, &g2),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g2, &s2), MP_OK);
    CU_ASSERT_STRING_EQUAL(s1, s2);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"out\\u0001/\\\\\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "\"f\": [0.5, -0.0]"));
    /* non-finite values cannot be written */
    mp_graph *g3;
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g3), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g3, &in, &ti), MP_OK);
    mp_tensor_desc o2 = {"o", MP_DTYPE_FLOAT32, 2, d, 0, MP_KIND_ACTIVATION};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g3, &o2, &to), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g3, &nd, &n), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_float(g3, n, "alpha", INFINITY),
                    MP_OK);
    char *s3 = (char *)1;
    CU_ASSERT_EQUAL(mp_graph_to_json_string(g3, &s3), MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NULL(s3);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "alpha"));
    mp_graph_destroy(g3);
    mp_free(ctx, s1);
    mp_free(ctx, s2);
    mp_graph_destroy(g);
    mp_graph_destroy(g2);
    mp_ctx_destroy(ctx);
}

/* "fold": false keeps a weight's copy computed every step (autocast's
 * copies in a training graph written by plan --dp -o): without it the
 * Cast of a weight is a folded constant; the writer keeps the key. */
static void test_no_fold(void)
{
    const char *fmt =
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": ["
        "{\"name\": \"x\", \"dtype\": \"bfloat16\", \"shape\": [4, 8], "
        "\"kind\": \"input\"},"
        "{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [8, 8], "
        "\"kind\": \"weight\"},"
        "{\"name\": \"wc\", \"dtype\": \"bfloat16\", \"shape\": [8, 8]%s},"
        "{\"name\": \"y\", \"dtype\": \"bfloat16\", \"shape\": [4, 8]}],"
        "\"nodes\": [{\"name\": \"c\", \"op\": \"Cast\", \"inputs\": [\"w\"], "
        "\"outputs\": [\"wc\"], \"attributes\": {\"to\": 16}},"
        "{\"name\": \"m\", \"op\": \"MatMul\", \"inputs\": [\"x\", \"wc\"], "
        "\"outputs\": [\"y\"]}], \"outputs\": [\"y\"]}";
    const char *extra[] = {"", ", \"fold\": false", ", \"fold\": true",
                           ", \"fold\": 0"};
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (int k = 0; k < 4; k++) {
        char text[2048];
        snprintf(text, sizeof text, fmt, extra[k]);
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, text, NULL, &g);
        if (k == 3) {
            CU_ASSERT_EQUAL(st, MP_ERR_PARSE);
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                          "true or false"));
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        uint32_t wc;
        mp_tensor_info ti;
        CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "wc", &wc), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_tensor_info(g, wc, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.kind, k == 1 ? MP_KIND_ACTIVATION
                                        : MP_KIND_CONSTANT);
        char *out = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &out), MP_OK);
        CU_ASSERT_EQUAL(strstr(out, "\"fold\": false") != NULL, k == 1);
        mp_free(ctx, out);
        mp_graph_destroy(g);
    }
    mp_ctx_destroy(ctx);
}

/* ---- sizes ---------------------------------------------------------------- */
static void test_sizes(void)
{
    int l, c;
    char *text = prepare(
        "{'tensors': [\n"
        "  {'name': 'x', 'dtype': 'float32', 'shape': [2, 3], 'kind': "
        "'input'},\n"
        "  {'name': 'h', 'dtype': 'bf16', 'shape': [7, 5]},\n"
        "  {'name': 'q', 'dtype': 'int4', 'shape': [3]},\n"
        "  {'name': 'c', 'dtype': 'int64', 'shape': [2], 'kind': "
        "'constant'},\n"
        "  {'name': 'raw', 'bytes': 1000}\n"
        " ],\n"
        " 'nodes': [\n"
        "  {'name': 'a', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['r']},\n"
        "  {'name': 'b', 'op': 'Reshape', 'inputs': ['r', 'c'], 'outputs': "
        "['v']},\n"
        "  {'name': 'd', 'op': 'Custom', 'inputs': ['v'], 'outputs': ['h', "
        "'q', 'raw']}\n"
        " ],\n"
        " 'outputs': ['h']}",
        &l, &c);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_json_string(ctx, text, "s.json", &g);
    if (st)
        printf("\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    struct {
        const char *name;
        uint64_t bytes;
        mp_tensor_kind kind;
    } want[] = {{"x", 24, MP_KIND_INPUT},   {"h", 70, MP_KIND_ACTIVATION},
                {"q", 2, MP_KIND_ACTIVATION}, {"c", 16, MP_KIND_CONSTANT},
                {"raw", 1000, MP_KIND_ACTIVATION},
                {"r", 24, MP_KIND_ACTIVATION}, {"v", 24, MP_KIND_ACTIVATION}};
    CU_ASSERT_EQUAL(mp_graph_num_tensors(g), 7);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 3);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t id;
        mp_tensor_info ti;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(g, want[i].name, &id),
                              MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g, id, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.bytes, want[i].bytes);
        CU_ASSERT_EQUAL(ti.kind, want[i].kind);
    }
    uint32_t v, r, h;
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "v", &v), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "r", &r), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "h", &h), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, v, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.alias_of, r); /* Reshape is a view */
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, h, &ti), MP_OK);
    CU_ASSERT(ti.is_output);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, r, &ti), MP_OK);
    CU_ASSERT(!ti.is_output);
    CU_ASSERT_EQUAL(ti.n_consumers, 1);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    free(text);
}

/* Top-level keys in any order read the same (the reader has a one-pass
 * path for the writer's order and a two-pass path for others). */
static void test_key_order(void)
{
    const char *parts[] = {
        "\"format\": \"memplan-graph\"", "\"version\": 1",
        "\"name\": \"order\"", "\"x-tool\": {\"v\": [1, 2]}",
        "\"metadata\": {}",
        "\"tensors\": [{\"name\": \"x\", \"dtype\": \"int8\", "
        "\"shape\": [4], \"kind\": \"input\"}]",
        "\"nodes\": [{\"name\": \"n\", \"op\": \"Relu\", \"inputs\": "
        "[\"x\"], \"outputs\": [\"y\"]}, {\"name\": \"m\", \"op\": "
        "\"Neg\", \"inputs\": [\"y\"], \"outputs\": [\"z\"]}]",
        "\"outputs\": [\"z\"]"};
    const size_t np = sizeof parts / sizeof parts[0];
    mp_ctx *ctx = mp_ctx_create(NULL);
    char *ref = NULL;
    uint64_t state = 7;
    for (int trial = 0; trial < 20; trial++) {
        size_t perm[8];
        for (size_t i = 0; i < np; i++)
            perm[i] = i;
        if (trial == 1) /* reversed */
            for (size_t i = 0; i < np; i++)
                perm[i] = np - 1 - i;
        else if (trial > 1)
            for (size_t i = np - 1; i > 0; i--) {
                size_t j = (size_t)(mp_test_rand(&state) % (i + 1));
                size_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        char doc[1024] = "{";
        for (size_t i = 0; i < np; i++) {
            strcat(doc, i ? ", " : "");
            strcat(doc, parts[perm[i]]);
        }
        strcat(doc, "}");
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_json_string(ctx, doc, "o.json", &g);
        if (st)
            printf("\n  %s\n  %s\n", doc, mp_ctx_message(ctx));
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        char *s = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &s), MP_OK);
        if (!ref)
            ref = s;
        else {
            CU_ASSERT_STRING_EQUAL(ref, s);
            mp_free(ctx, s);
        }
        mp_graph_destroy(g);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(ref, "\"name\": \"order\""));
    mp_free(ctx, ref);
    mp_ctx_destroy(ctx);
}

/* The shipped examples load (through detection) and round-trip. */
static void test_examples(void)
{
    const char *names[] = {"tiny.json", "resnet50.json",
                           "transformer_block.json"};
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", MP_SOURCE_DIR,
                 names[i]);
        FILE *f = fopen(path, "r");
        if (!f) {
            printf("\n  skipped: %s not present\n", path);
            continue;
        }
        fclose(f);
        mp_graph *g = NULL, *g2 = NULL;
        mp_status st = mp_graph_load(ctx, path, &g);
        if (st)
            printf("\n  %s\n", mp_ctx_message(ctx));
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT(mp_graph_num_nodes(g) > 0);
        char *s1, *s2;
        CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &s1), MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, s1, "s1", &g2),
                              MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g2, &s2), MP_OK);
        CU_ASSERT_STRING_EQUAL(s1, s2);
        compare_graphs(g, g2);
        mp_free(ctx, s1);
        mp_free(ctx, s2);
        mp_graph_destroy(g);
        mp_graph_destroy(g2);
    }
    mp_ctx_destroy(ctx);
}

/* ---- format detection -------------------------------------------------------- */
static void test_detect(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    const char *p = mp_test_write_temp(".json", "{\"foo\": 1}");
    CU_ASSERT_FATAL(p != NULL);
    CU_ASSERT_EQUAL(mp_graph_load(ctx, p, &g), MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), p));
    CU_ASSERT_PTR_NULL(g);
    remove(p);
    /* not JSON: unsupported, or an ONNX error when ONNX is built in */
    p = mp_test_write_temp(".bin", "\x08\x07\x12\x04onnx");
    CU_ASSERT_FATAL(p != NULL);
    mp_status st = mp_graph_load(ctx, p, &g);
    CU_ASSERT(st == MP_ERR_UNSUPPORTED || st == MP_ERR_PARSE);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), p));
    remove(p);
    p = mp_test_write_temp(".json", "");
    CU_ASSERT_EQUAL(mp_graph_load(ctx, p, &g), MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "empty file"));
    remove(p);
    /* "format" alone selects memplan JSON */
    p = mp_test_write_temp(".json", "{\"format\": \"memplan-graph\"}");
    CU_ASSERT_EQUAL(mp_graph_load(ctx, p, &g), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 0);
    mp_graph_destroy(g);
    g = NULL;
    remove(p);
    /* memplan JSON with a node-link key is still memplan JSON when it
     * says so */
    p = mp_test_write_temp(".json", "{\"format\": \"memplan-graph\", "
                                    "\"links\": []}");
    CU_ASSERT_EQUAL(mp_graph_load(ctx, p, &g), MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "unknown key \"links\""));
    remove(p);
    mp_ctx_destroy(ctx);
}

/* ---- speed ------------------------------------------------------------------- */
static void test_speed_100k(void)
{
    const size_t n = 100000;
    size_t cap = n * 240 + 1024, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len,
                            "{\"format\": \"memplan-graph\", \"version\": 1, "
                            "\"name\": \"chain\", \"tensors\": [\n"
                            "{\"name\": \"t0\", \"dtype\": \"float32\", "
                            "\"shape\": [64, 1024], \"kind\": \"input\"}");
    for (size_t i = 1; i <= n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                ",\n{\"name\": \"t%zu\", \"dtype\": "
                                "\"float32\", \"shape\": [64, 1024]}",
                                i);
    CU_ASSERT_FATAL(len < cap / 2);
    len += (size_t)snprintf(t + len, cap - len, "],\n\"nodes\": [\n");
    for (size_t i = 1; i <= n; i++)
        len += (size_t)snprintf(
            t + len, cap - len,
            "%s{\"name\": \"n%zu\", \"op\": \"%s\", \"inputs\": [\"t%zu\"%s], "
            "\"outputs\": [\"t%zu\"], \"cost\": {\"flops\": 65536}}",
            i > 1 ? ",\n" : "", i, i % 3 ? "Relu" : "Add", i - 1,
            i % 3 ? "" : ", \"t0\"", i);
    len += (size_t)snprintf(t + len, cap - len, "],\n\"outputs\": [\"t%zu\"]}",
                            n);
    CU_ASSERT_FATAL(len < cap);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    double t0 = mp__now_seconds();
    mp_status st = mp_graph_load_json_string(ctx, t, "chain.json", &g);
    double t1 = mp__now_seconds();
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    char *s = NULL;
    CU_ASSERT_EQUAL(mp_graph_to_json_string(g, &s), MP_OK);
    double t2 = mp__now_seconds();
    printf("\n  %zu nodes, %.1f MB: load %.3f s, write %.3f s (%.1f MB)\n",
           n, (double)len / 1e6, t1 - t0, t2 - t1,
           s ? (double)strlen(s) / 1e6 : 0.0);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), n);
    CU_ASSERT_EQUAL(mp_graph_num_tensors(g), n + 1);
    mp_free(ctx, s);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    free(t);
}

void mp_register_json(void)
{
    static CU_TestInfo tests[] = {
        {"malformed inputs (table)", test_bad_table},
        {"missing file, positioned syntax error", test_missing_file},
        {"round trip is lossless and byte-identical", test_round_trip},
        {"graph built through the API round-trips", test_api_graph_round_trip},
        {"\"fold\": false keeps a weight's copy computed", test_no_fold},
        {"truncated and corrupted documents fail cleanly", test_truncations},
        {"tensor sizes, views, folding, outputs", test_sizes},
        {"top-level keys in any order", test_key_order},
        {"examples load and round-trip", test_examples},
        {"format detection", test_detect},
        {"100k-node graph loads fast", test_speed_100k},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("json", tests);
}
