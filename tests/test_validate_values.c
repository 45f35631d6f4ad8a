/* Values from files for `memplan validate --weights DIR --inputs DIR`
 * (validate/values.c): the --dump folder read back, the errors naming the
 * tensor and the file, and the gradients a training step dumps (kind
 * grad). Needs no GPU. */
#include "support.h"
#include "validate.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* x[4,3] -> MatMul(w[3,3]) -> h -> Add(b[3]) -> a -> Relu -> y; its SGD
 * training graph with momentum (one state per parameter) */
static mp_graph *train_mlp(mp_ctx *ctx, mp_graph **fwd)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {4, 3}, dw[] = {3, 3}, db[] = {3};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, dw);
    uint32_t b = mp_test_tensor(g, "b", MP_KIND_WEIGHT, 1, db);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t in1[] = {x, w}, in2[] = {h, b};
    mp_test_node(g, "mm", "MatMul", in1, 2, &h, 1);
    mp_test_node(g, "add", "Add", in2, 2, &a, 1);
    mp_test_node(g, "relu", "Relu", &a, 1, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_MOMENTUM;
    mp_graph *t = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(g, &to, &t, NULL), MP_OK);
    *fwd = g;
    return t;
}

static uint32_t tensor(const mp_graph *g, const char *name)
{
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, name, &id), MP_OK);
    return id;
}

/* DIR/values.txt with this text, DIR/values.bin with bin_bytes bytes
 * 0, 1, 2, ... */
static void write_dir(const char *dir, const char *txt, size_t bin_bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/values.txt", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(txt, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/values.bin", dir);
    f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (size_t i = 0; i < bin_bytes; i++)
        fputc((int)(i & 0xff), f);
    fclose(f);
}

static void remove_dir(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/values.txt", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/values.bin", dir);
    remove(path);
    rmdir(dir);
}

/* A dump read back: the weights and the input as written, the momentum
 * state zero; the gradients of both parameters listed at their optimizer
 * steps and dumped as kind grad under the parameter's name. */
static void test_roundtrip(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *t = train_mlp(ctx, &f);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    uint32_t w = tensor(t, "w"), b = tensor(t, "b"),
             m = tensor(t, "opt/w/momentum");
    CU_ASSERT_NOT_EQUAL_FATAL(p->woff[w], UINT64_MAX);
    CU_ASSERT_NOT_EQUAL_FATAL(p->woff[b], UINT64_MAX);
    CU_ASSERT_NOT_EQUAL_FATAL(p->woff[m], UINT64_MAX);
    CU_ASSERT_EQUAL_FATAL(p->n_inputs, 1);

    /* the gradients: one per parameter, at its optimizer step, read as
     * the node's input 1 */
    CU_ASSERT_EQUAL_FATAL(mpv_grads_find(p, NULL), 2);
    mpv_grad gr[2];
    CU_ASSERT_EQUAL(mpv_grads_find(p, gr), 2);
    uint32_t seen = 0;
    for (int k = 0; k < 2; k++) {
        const mpv_step *ps = &p->steps[gr[k].step];
        CU_ASSERT_EQUAL(ps->kind, MP_STEP_COMPUTE);
        mp_node_info ni;
        CU_ASSERT_EQUAL(mp_graph_node_info(t, ps->index, &ni), MP_OK);
        CU_ASSERT_EQUAL(ni.phase, MP_PHASE_OPTIMIZER);
        CU_ASSERT_EQUAL(ni.inputs[0], gr[k].weight);
        CU_ASSERT_EQUAL(ni.inputs[1], gr[k].grad);
        CU_ASSERT_EQUAL(p->refs[ps->refs + 1].tensor, gr[k].grad);
        mp_tensor_info ti;
        CU_ASSERT_EQUAL(mp_graph_tensor_info(t, gr[k].grad, &ti), MP_OK);
        CU_ASSERT_EQUAL(ti.kind, MP_KIND_GRADIENT);
        CU_ASSERT_EQUAL(gr[k].bytes, gr[k].weight == w ? 36u : 12u);
        seen |= gr[k].weight == w ? 1u : gr[k].weight == b ? 2u : 4u;
        if (k)
            CU_ASSERT(gr[k].step > gr[k - 1].step);
    }
    CU_ASSERT_EQUAL(seen, 3u);

    /* a dump with the gradients */
    unsigned char *wsrc = malloc(p->weights_bytes),
                  *wgot = malloc(p->weights_bytes);
    float x[12], xgot[12], gv[12];
    CU_ASSERT_FATAL(wsrc && wgot);
    for (uint64_t i = 0; i < p->weights_bytes; i++)
        wsrc[i] = (unsigned char)(i * 13 + 5);
    for (int i = 0; i < 12; i++) {
        x[i] = (float)i - 5.5f;
        gv[i] = 0.25f * (float)i;
    }
    char dir[] = "/tmp/mpv_valuesXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const void *ins[1] = {x};
    unsigned char *outs = calloc(1, 4096);
    CU_ASSERT_FATAL(outs != NULL);
    CU_ASSERT_EQUAL_FATAL(mpv_dump_values(p, dir, wsrc, ins, outs, NULL, gr,
                                          2, gv),
                          MP_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/values.txt", dir);
    char *ix = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
    CU_ASSERT_EQUAL(mp_test_count(ix, "\ngrad\t"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(ix, "\ngrad\tw\tfloat32\t3,3\t"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ix, "\ngrad\tb\tfloat32\t3\t"));
    free(ix);

    /* read back: the parameters as written, the state zero, the input */
    memset(wgot, 0xee, p->weights_bytes);
    CU_ASSERT_EQUAL(mpv_weights_read(p, dir, NULL, 1), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mpv_weights_read(p, dir, wgot, 1), MP_OK);
    CU_ASSERT_EQUAL(memcmp(wgot + p->woff[w], wsrc + p->woff[w], 36), 0);
    CU_ASSERT_EQUAL(memcmp(wgot + p->woff[b], wsrc + p->woff[b], 12), 0);
    /* the dump holds the state too (it is in the weights buffer): it is
     * read like a weight; without its line it starts at zero */
    CU_ASSERT_EQUAL(memcmp(wgot + p->woff[m], wsrc + p->woff[m], 36), 0);
    void *xb[1] = {xgot};
    CU_ASSERT_EQUAL(mpv_inputs_read(p, dir, NULL), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mpv_inputs_read(p, dir, xb), MP_OK);
    CU_ASSERT_EQUAL(memcmp(xgot, x, sizeof x), 0);
    remove_dir(dir);

    /* only the parameters (as an exported model has them): the states
     * start at zero */
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(strcpy(dir, "/tmp/mpv_valuesXXXXXX")));
    write_dir(dir, "weight\tb\tfloat32\t3\t0\t12\n"
                   "weight\tw\tfloat32\t3,3\t12\t36\n"
                   "weight\tunused\tfloat32\t2\t0\t8\n"
                   "\n"
                   "input\tx\tfloat32\t4,3\t0\t48\n",
              48);
    memset(wgot, 0xee, p->weights_bytes);
    CU_ASSERT_EQUAL_FATAL(mpv_weights_read(p, dir, wgot, 1), MP_OK);
    for (int i = 0; i < 12; i++)
        CU_ASSERT_EQUAL(wgot[p->woff[b] + (uint64_t)i], i);
    for (int i = 0; i < 36; i++)
        CU_ASSERT_EQUAL(wgot[p->woff[w] + (uint64_t)i], 12 + i);
    for (int i = 0; i < 36; i++)
        CU_ASSERT_EQUAL(wgot[p->woff[m] + (uint64_t)i], 0);
    unsigned char xr[48];
    void *xrb[1] = {xr};
    CU_ASSERT_EQUAL_FATAL(mpv_inputs_read(p, dir, xrb), MP_OK);
    for (int i = 0; i < 48; i++)
        CU_ASSERT_EQUAL(xr[i], i);
    remove_dir(dir);

    free(outs);
    free(wsrc);
    free(wgot);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* expects status st and a message holding both strings */
static void expect(mp_ctx *ctx, mp_status got, mp_status st, const char *a,
                   const char *b)
{
    CU_ASSERT_EQUAL(got, st);
    const char *msg = mp_ctx_message(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, a));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, b));
    if (got != st || !strstr(msg, a) || !strstr(msg, b))
        fprintf(stderr, "status %d: %s\n", (int)got, msg);
}

/* Missing tensors, wrong sizes or dtypes, bad lines, no folder: errors
 * naming the tensor and the file. */
static void test_errors(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *t = train_mlp(ctx, &f);
    mp_plan *plan = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(t, NULL, &plan), MP_OK);
    mpv_program *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_program_from_plan(t, plan, &p), MP_OK);
    unsigned char *wb = malloc(p->weights_bytes);
    CU_ASSERT_FATAL(wb != NULL);
    char dir[] = "/tmp/mpv_valuesXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char txt[300];
    snprintf(txt, sizeof txt, "%s/values.txt", dir);

    /* b is missing (w is there; the input line is of another kind) */
    write_dir(dir, "weight\tw\tfloat32\t3,3\t0\t36\n"
                   "input\tb\tfloat32\t3\t0\t12\n", 36);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_NOT_FOUND, "'b'",
           txt);
    expect(ctx, mpv_weights_read(p, dir, NULL, 1), MP_ERR_NOT_FOUND, "'b'",
           "--weights");
    /* and x among the inputs */
    expect(ctx, mpv_inputs_read(p, dir, NULL), MP_ERR_NOT_FOUND, "'x'", txt);

    /* w of the wrong size, then of the wrong dtype */
    write_dir(dir, "weight\tw\tfloat32\t2,4\t0\t32\n"
                   "weight\tb\tfloat32\t3\t32\t12\n", 44);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_SHAPE, "'w'",
           "32 bytes");
    write_dir(dir, "weight\tw\tint32\t3,3\t0\t36\n"
                   "weight\tb\tfloat32\t3\t36\t12\n", 48);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_SHAPE, "'w'",
           "int32");
    /* an input of the wrong size */
    write_dir(dir, "input\tx\tfloat32\t4,2\t0\t32\n", 32);
    expect(ctx, mpv_inputs_read(p, dir, NULL), MP_ERR_SHAPE, "'x'", txt);

    /* a range beyond values.bin; a line of five fields; a bad dtype */
    write_dir(dir, "weight\tw\tfloat32\t3,3\t0\t36\n"
                   "weight\tb\tfloat32\t3\t36\t12\n", 47);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_PARSE, "line 2",
           txt);
    write_dir(dir, "weight\tw\tfloat32\t0\t36\n", 36);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_PARSE, "line 1",
           txt);
    write_dir(dir, "weight\tw\tfloat99\t3,3\t0\t36\n", 36);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_PARSE, "line 1",
           "--weights");
    write_dir(dir, "weight\tw\tfloat32\t3,3\t0\t-36\n", 36);
    expect(ctx, mpv_weights_read(p, dir, wb, 1), MP_ERR_PARSE, "line 1",
           txt);
    remove_dir(dir);

    /* no such folder; values.bin missing */
    expect(ctx, mpv_weights_read(p, "/nonexistent/mpv", wb, 1), MP_ERR_IO,
           "/nonexistent/mpv", "--weights");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(strcpy(dir, "/tmp/mpv_valuesXXXXXX")));
    write_dir(dir, "input\tx\tfloat32\t4,3\t0\t48\n", 48);
    snprintf(txt, sizeof txt, "%s/values.bin", dir);
    remove(txt);
    expect(ctx, mpv_inputs_read(p, dir, NULL), MP_ERR_IO, txt, "--inputs");
    remove_dir(dir);

    free(wb);
    mpv_program_destroy(p);
    mp_plan_destroy(plan);
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

static int run_cli(char *out, size_t cap, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' validate %s 2>&1", MP_CLI_PATH, args);
    out[0] = 0;
    return mp_test_run(cmd, out, cap);
}

/* `memplan validate --weights DIR --inputs DIR --lower-only` checks the
 * files before anything runs: exit 3 naming the missing tensor. */
static void test_cli(void)
{
    static const char graph[] =
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": [\n"
        " {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [2, 4], "
        "\"kind\": \"input\"},\n"
        " {\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [4, 4], "
        "\"kind\": \"weight\"},\n"
        " {\"name\": \"h\", \"dtype\": \"float32\", \"shape\": [2, 4], "
        "\"kind\": \"activation\"},\n"
        " {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [2, 4], "
        "\"kind\": \"output\"}],\n"
        " \"nodes\": [\n"
        " {\"name\": \"mm\", \"op\": \"MatMul\", \"inputs\": [\"x\", \"w\"], "
        "\"outputs\": [\"h\"]},\n"
        " {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"h\"], "
        "\"outputs\": [\"y\"]}],\n"
        " \"outputs\": [\"y\"]}\n";
    const char *gp = mp_test_write_temp(".json", graph);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gp);
    char g[256];
    snprintf(g, sizeof g, "%s", gp);
    char dir[] = "/tmp/mpv_valuesXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char out[4096], args[1024];
    write_dir(dir, "weight\tw\tfloat32\t4,4\t0\t64\n"
                   "input\tx\tfloat32\t2,4\t64\t32\n", 96);
    snprintf(args, sizeof args, "%s --train --optimizer sgd --weights %s "
             "--inputs %s --lower-only", g, dir, dir);
    CU_ASSERT_EQUAL(run_cli(out, sizeof out, args), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nodes run"));
    /* w missing */
    write_dir(dir, "input\tx\tfloat32\t2,4\t0\t32\n", 32);
    CU_ASSERT_EQUAL(run_cli(out, sizeof out, args), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "tensor 'w'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "values.txt"));
    /* x of the wrong size */
    write_dir(dir, "weight\tw\tfloat32\t4,4\t0\t64\n"
                   "input\tx\tfloat32\t1,4\t64\t16\n", 80);
    CU_ASSERT_EQUAL(run_cli(out, sizeof out, args), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "tensor 'x'"));
    /* --dump into the folder it reads is refused */
    snprintf(args, sizeof args, "%s --weights %s --dump %s", g, dir, dir);
    CU_ASSERT_EQUAL(run_cli(out, sizeof out, args), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--weights"));
    remove_dir(dir);
    unlink(g);
}

void mp_register_validate_values(void)
{
    static CU_TestInfo tests[] = {
        {"roundtrip", test_roundtrip},
        {"errors", test_errors},
        {"cli", test_cli},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("validate_values", tests);
}
