/* Graph IR, op registry and finalize. */
#include "sched.h"
#include "ops.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mp__op_registry_sorted(void);

static mp_ctx *ctx;
static mp_graph *g;

static void setup(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx != NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
}

static void teardown(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    g = NULL;
    ctx = NULL;
}

static uint32_t tensor(const char *name, mp_tensor_kind kind, int rank,
                       const int64_t *dims)
{
    mp_tensor_desc d = {name, MP_DTYPE_FLOAT32, rank, dims, 0, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static uint32_t tensor_v(const char *name)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, 0,
                        MP_KIND_ACTIVATION};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static mp_status node(const char *name, const char *op, uint32_t *in,
                      uint32_t nin, uint32_t *out, uint32_t nout)
{
    mp_node_desc d = {name, op, NULL, in, nin, out, nout, MP_PHASE_FORWARD};
    return mp_graph_add_node(g, &d, NULL);
}

static const int64_t d23[] = {2, 3};
static const int64_t d6[] = {6};

static void test_sizes_and_consumers(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t z = tensor("z", MP_KIND_ACTIVATION, 2, d23);
    uint32_t a[] = {x}, b[] = {y}, c[] = {x, y}, d[] = {z};
    CU_ASSERT_EQUAL(node("relu", "Relu", a, 1, b, 1), MP_OK);
    CU_ASSERT_EQUAL(node("add", "Add", c, 2, d, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, z), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, x, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, 24);
    CU_ASSERT_EQUAL(ti.n_consumers, 2);
    CU_ASSERT_EQUAL(ti.producer, MP_NONE);
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, z, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.producer, 1);
    CU_ASSERT_TRUE(ti.is_output);
    uint32_t id;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, "y", &id), MP_OK);
    CU_ASSERT_EQUAL(id, y);
    CU_ASSERT_EQUAL(mp_graph_find_node(g, "add", &id), MP_OK);
    CU_ASSERT_EQUAL(id, 1);
    CU_ASSERT_EQUAL(mp_graph_find_node(g, "nope", &id), MP_ERR_NOT_FOUND);
    /* finalized graphs cannot change */
    CU_ASSERT_EQUAL(node("late", "Relu", a, 1, NULL, 0), MP_ERR_INVALID_ARG);
    teardown();
}

static void test_duplicate_names(void)
{
    setup();
    tensor("x", MP_KIND_INPUT, 2, d23);
    mp_tensor_desc d = {"x", MP_DTYPE_FLOAT32, 2, d23, 0, MP_KIND_INPUT};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, NULL), MP_ERR_DUPLICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "duplicate tensor name 'x'"));
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t y2 = tensor("y2", MP_KIND_ACTIVATION, 2, d23);
    uint32_t in[] = {0}, out[] = {y}, out2[] = {y2};
    CU_ASSERT_EQUAL(node("n", "Relu", in, 1, out, 1), MP_OK);
    CU_ASSERT_EQUAL(node("n", "Relu", in, 1, out2, 1), MP_ERR_DUPLICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "duplicate node name 'n'"));
    teardown();
}

static void test_two_producers(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t in[] = {x}, out[] = {y};
    CU_ASSERT_EQUAL(node("a", "Relu", in, 1, out, 1), MP_OK);
    CU_ASSERT_EQUAL(node("b", "Relu", in, 1, out, 1), MP_ERR_DUPLICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "two nodes: 'a' and 'b'"));
    teardown();
}

static void test_cycle(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t p = tensor("p", MP_KIND_ACTIVATION, 2, d23);
    uint32_t q = tensor("q", MP_KIND_ACTIVATION, 2, d23);
    uint32_t i1[] = {x, q}, o1[] = {p}, i2[] = {p}, o2[] = {q};
    CU_ASSERT_EQUAL(node("first", "Add", i1, 2, o1, 1), MP_OK);
    CU_ASSERT_EQUAL(node("second", "Relu", i2, 1, o2, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_CYCLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "cycle"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'first'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'second'"));
    teardown();
}

static void test_self_loop(void)
{
    setup();
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t io[] = {y};
    CU_ASSERT_EQUAL(node("loop", "Relu", io, 1, io, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_CYCLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "cycle through node 'loop'"));
    teardown();
}

static void test_missing_producer(void)
{
    setup();
    uint32_t x = tensor("ghost", MP_KIND_ACTIVATION, 2, d23);
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t in[] = {x}, out[] = {y};
    CU_ASSERT_EQUAL(node("user", "Relu", in, 1, out, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_NO_PRODUCER);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'ghost'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'user'"));
    teardown();
}

static void test_unknown_size(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t y = tensor_v("y");
    uint32_t in[] = {x}, out[] = {y};
    CU_ASSERT_EQUAL(node("mystery", "FooOp", in, 1, out, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_UNKNOWN_OP);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'mystery'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "FooOp"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'y'"));
    teardown();
}

static void test_views_and_pointwise(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t r = tensor_v("r");  /* Relu infers shape and size */
    uint32_t v = tensor("v", MP_KIND_ACTIVATION, 1, d6); /* view */
    uint32_t v2 = tensor_v("v2");                         /* view, inferred */
    uint32_t a[] = {x}, b[] = {r}, c[] = {v}, d[] = {v2};
    CU_ASSERT_EQUAL(node("relu", "Relu", a, 1, b, 1), MP_OK);
    CU_ASSERT_EQUAL(node("flat", "Reshape", b, 1, c, 1), MP_OK);
    CU_ASSERT_EQUAL(node("id", "Identity", c, 1, d, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, v2), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    mp_graph_tensor_info(g, r, &ti);
    CU_ASSERT_EQUAL(ti.bytes, 24);
    CU_ASSERT_EQUAL(ti.rank, 2);
    CU_ASSERT_EQUAL(ti.alias_of, MP_NONE);
    mp_graph_tensor_info(g, v, &ti);
    CU_ASSERT_EQUAL(ti.alias_of, r);
    mp_graph_tensor_info(g, v2, &ti);
    CU_ASSERT_EQUAL(ti.alias_of, v);
    CU_ASSERT_EQUAL(ti.bytes, 24);
    CU_ASSERT_EQUAL(g->tensors[v2].root, r);
    CU_ASSERT_FALSE(mp__tensor_in_arena(&g->tensors[v2]));
    CU_ASSERT_TRUE(mp__tensor_in_arena(&g->tensors[r]));
    teardown();
}

static void test_view_size_mismatch(void)
{
    setup();
    static const int64_t d5[] = {5};
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t v = tensor("v", MP_KIND_ACTIVATION, 1, d5);
    uint32_t a[] = {x}, b[] = {v};
    CU_ASSERT_EQUAL(node("bad", "Reshape", a, 1, b, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'bad'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "20 bytes"));
    teardown();
}

/* Gemm's inner dims are checked with transA/transB applied: A [2,3] times
 * B [2,3] is refused as it stands and accepted with transB = 1 (B^T is
 * [3,2], out [2,2]) */
static void test_gemm_inner_dims(void)
{
    for (int trans_b = 0; trans_b <= 1; trans_b++) {
        setup();
        uint32_t a = tensor("a", MP_KIND_INPUT, 2, d23);
        uint32_t b = tensor("b", MP_KIND_WEIGHT, 2, d23);
        uint32_t y = tensor_v("y");
        uint32_t in[] = {a, b}, out[] = {y};
        uint32_t id = MP_NONE;
        mp_node_desc d = {"fc", "Gemm", NULL, in, 2, out, 1,
                          MP_PHASE_FORWARD};
        CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, &id), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, id, "transB", trans_b),
                        MP_OK);
        mp_status st = mp_graph_finalize(g);
        if (trans_b) {
            CU_ASSERT_EQUAL(st, MP_OK);
            mp_tensor_info ti;
            mp_graph_tensor_info(g, y, &ti);
            CU_ASSERT_EQUAL(ti.bytes, 2 * 2 * 4);
        } else {
            CU_ASSERT_EQUAL(st, MP_ERR_SHAPE);
            CU_ASSERT_PTR_NOT_NULL(
                strstr(mp_ctx_message(ctx), "inner dims differ (3 and 2)"));
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'fc'"));
        }
        teardown();
    }
}

static void test_constant_folding(void)
{
    setup();
    uint32_t w = tensor("w", MP_KIND_WEIGHT, 2, d23);
    uint32_t wt = tensor("wt", MP_KIND_ACTIVATION, 2, d23);
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t c = tensor("c", MP_KIND_ACTIVATION, 1, d6);
    uint32_t a[] = {w}, b[] = {wt}, i2[] = {x, wt}, o2[] = {y}, oc[] = {c};
    CU_ASSERT_EQUAL(node("transpose_w", "Transpose", a, 1, b, 1), MP_OK);
    CU_ASSERT_EQUAL(node("mul", "Mul", i2, 2, o2, 1), MP_OK);
    CU_ASSERT_EQUAL(node("const", "Constant", NULL, 0, oc, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    mp_graph_tensor_info(g, wt, &ti);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_CONSTANT);
    CU_ASSERT_TRUE(ti.folded);
    mp_graph_tensor_info(g, c, &ti);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_CONSTANT);
    mp_graph_tensor_info(g, y, &ti);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_ACTIVATION);
    CU_ASSERT_FALSE(ti.folded);
    /* weights + folded transpose + folded constant */
    CU_ASSERT_EQUAL(mp__plan_persistent_bytes(g), 24 + 24 + 24);
    teardown();
}

/* Shape reads only its input's shape: once shapes are known its output is
 * a constant, folded with its value, and so is the shape arithmetic that
 * reads it; the tensor whose shape it reads stays an activation. */
static void test_shape_folding(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t r = tensor("r", MP_KIND_ACTIVATION, 2, d23);
    mp_tensor_desc sd = {"s", MP_DTYPE_INT64, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    uint32_t s = MP_NONE;
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_tensor(g, &sd, &s), MP_OK);
    uint32_t y = tensor("y", MP_KIND_ACTIVATION, 2, d23);
    uint32_t a[] = {x}, b[] = {r}, os[] = {s}, ry[] = {r, s}, oy[] = {y};
    CU_ASSERT_EQUAL(node("relu", "Relu", a, 1, b, 1), MP_OK);
    CU_ASSERT_EQUAL(node("shape", "Shape", b, 1, os, 1), MP_OK);
    CU_ASSERT_EQUAL(node("reshape", "Reshape", ry, 2, oy, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    mp_graph_tensor_info(g, s, &ti);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_CONSTANT);
    CU_ASSERT_TRUE(ti.folded);
    CU_ASSERT_EQUAL(ti.bytes, 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g->tensors[s].value);
    CU_ASSERT_EQUAL(g->tensors[s].n_value, 2);
    CU_ASSERT_EQUAL(g->tensors[s].value[1], 3);
    mp_graph_tensor_info(g, r, &ti);
    CU_ASSERT_EQUAL(ti.kind, MP_KIND_ACTIVATION);
    CU_ASSERT_FALSE(ti.folded);
    teardown();
}

static void test_overflow(void)
{
    setup();
    static const int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
    mp_tensor_desc d = {"big", MP_DTYPE_FLOAT32, 2, huge, 0, MP_KIND_INPUT};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, NULL), MP_OK);
    static const int64_t neg[] = {-5};
    mp_tensor_desc dn = {"neg", MP_DTYPE_FLOAT32, 1, neg, 0, MP_KIND_INPUT};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &dn, NULL), MP_ERR_BAD_DIM);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, 0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_ERR_OVERFLOW);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'big'"));
    teardown();
}

static void test_topological_order(void)
{
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t p = tensor("p", MP_KIND_ACTIVATION, 2, d23);
    uint32_t q = tensor("q", MP_KIND_ACTIVATION, 2, d23);
    /* consumer added before producer */
    uint32_t i1[] = {p}, o1[] = {q}, i2[] = {x}, o2[] = {p};
    CU_ASSERT_EQUAL(node("late", "Relu", i1, 1, o1, 1), MP_OK);
    CU_ASSERT_EQUAL(node("early", "Relu", i2, 1, o2, 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, q), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    CU_ASSERT_EQUAL(g->topo[0], 1);
    CU_ASSERT_EQUAL(g->topo[1], 0);
    teardown();
}

static void test_registry(void)
{
    CU_ASSERT_TRUE(mp__op_registry_sorted());
    const mp__op_def *d = mp__op_lookup("Reshape", "");
    CU_ASSERT_TRUE(d->flags & MP__OPF_VIEW);
    CU_ASSERT_PTR_EQUAL(mp__op_lookup("Reshape", "ai.onnx"), d);
    CU_ASSERT_TRUE(mp__op_lookup("Relu", NULL)->flags & MP__OPF_ELEMENTWISE);
    CU_ASSERT_PTR_EQUAL(mp__op_lookup("NoSuchOp", ""), mp__op_generic());
    CU_ASSERT_PTR_EQUAL(mp__op_lookup("Relu", "com.example"), mp__op_generic());
}

static void test_enum_names(void)
{
    for (int i = 0; i <= MP_ERR_NOT_FOUND; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_status_name((mp_status)i), "MP_"));
        CU_ASSERT_STRING_NOT_EQUAL(mp_status_str((mp_status)i), "unknown status");
    }
    CU_ASSERT_STRING_EQUAL(mp_status_name((mp_status)999), "MP_ERR_UNKNOWN");
    for (int t = 1; t <= MP_DTYPE_INT2; t++) {
        mp_dtype back;
        CU_ASSERT_EQUAL(mp_dtype_parse(mp_dtype_name((mp_dtype)t), &back), MP_OK);
        CU_ASSERT_EQUAL(back, t);
    }
    mp_dtype dt;
    CU_ASSERT_EQUAL(mp_dtype_parse("float", &dt), MP_OK);
    CU_ASSERT_EQUAL(dt, MP_DTYPE_FLOAT32);
    CU_ASSERT_EQUAL(mp_dtype_parse("flaot", &dt), MP_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(mp_dtype_bits(MP_DTYPE_BFLOAT16), 16);
    CU_ASSERT_EQUAL(mp_dtype_bits(MP_DTYPE_INT4), 4);
    for (int k = 0; k <= MP_KIND_OUTPUT; k++) {
        mp_tensor_kind back;
        CU_ASSERT_EQUAL(mp_kind_parse(mp_kind_name((mp_tensor_kind)k), &back), MP_OK);
        CU_ASSERT_EQUAL(back, k);
    }
    mp_phase ph;
    CU_ASSERT_EQUAL(mp_phase_parse("backward", &ph), MP_OK);
    CU_ASSERT_EQUAL(ph, MP_PHASE_BACKWARD);
}

static void test_int4_sizes(void)
{
    setup();
    static const int64_t d3[] = {3};
    mp_tensor_desc d = {"q", MP_DTYPE_INT4, 1, d3, 0, MP_KIND_INPUT};
    uint32_t id;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    mp_graph_mark_output(g, id);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_tensor_info ti;
    mp_graph_tensor_info(g, id, &ti);
    CU_ASSERT_EQUAL(ti.bytes, 2); /* 12 bits round up to 2 bytes */
    teardown();
}

/* 100k attributes on one node: each set once (a name given again is
 * refused, below and above the size where the name index starts), each
 * read back by name; linear work, so well under a second here (a scan per
 * attribute took about 20 s). */
static void test_many_attributes(void)
{
    enum { N = 100000 };
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 2, d23);
    uint32_t y = tensor("y", MP_KIND_OUTPUT, 2, d23);
    uint32_t in[] = {x}, out[] = {y}, id = 0;
    mp_node_desc d = {"r", "Relu", NULL, in, 1, out, 1, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL_FATAL(mp_graph_add_node(g, &d, &id), MP_OK);
    char key[32];
    clock_t t0 = clock(); /* CPU time: not the machine's load */
    mp_status st = MP_OK;
    for (int i = 0; i < N && !st; i++) {
        snprintf(key, sizeof key, "a%d", i);
        if (i % 3 == 0)
            st = mp_graph_set_attr_int(g, id, key, i);
        else if (i % 3 == 1)
            st = mp_graph_set_attr_float(g, id, key, i + 0.5);
        else {
            int64_t v[2] = {i, -i};
            st = mp_graph_set_attr_ints(g, id, key, v, 2);
        }
        /* a name given twice: at 5 attributes (scanned) and later on
         * (indexed), the first name and the newest */
        if (!st && (i == 4 || i == 20000 || i == N - 1)) {
            CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, id, "a0", 7),
                            MP_ERR_DUPLICATE);
            CU_ASSERT_EQUAL(mp_graph_set_attr_string(g, id, key, "s"),
                            MP_ERR_DUPLICATE);
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "given twice"));
            CU_ASSERT_EQUAL(g->nodes[id].n_attrs, (uint32_t)i + 1);
        }
    }
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT_EQUAL(g->nodes[id].n_attrs, N);
    int bad = 0;
    for (int i = N; i-- > 0;) {
        snprintf(key, sizeof key, "a%d", i);
        int64_t iv = -1;
        double fv = -1;
        const int64_t *av = NULL;
        uint32_t an = 0;
        if (i % 3 == 0)
            bad += mp_graph_get_attr_int(g, id, key, &iv) != MP_OK || iv != i;
        else if (i % 3 == 1)
            bad += mp_graph_get_attr_float(g, id, key, &fv) != MP_OK ||
                   fv != i + 0.5;
        else
            bad += mp_graph_get_attr_ints(g, id, key, &av, &an) != MP_OK ||
                   an != 2 || av[0] != i || av[1] != -i;
        /* in the order they were set */
        bad += strcmp(g->nodes[id].attrs[i].name, key) != 0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(mp_graph_get_attr_int(g, id, "a100000", NULL),
                    MP_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NULL(mp__node_attr(&g->nodes[id], "a"));
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT(secs < 5.0);
    if (secs >= 5.0)
        printf("\n  100k attributes: %.2f s\n", secs);
    CU_ASSERT_EQUAL(mp_graph_finalize(g), MP_OK);
    teardown();
}

/* A node with 100k outputs, one listed twice at the end: refused, and the
 * outputs it named are still free (a node producing them is accepted);
 * a node with an output produced elsewhere likewise. Linear work. */
static void test_many_outputs(void)
{
    enum { N = 100000 };
    setup();
    uint32_t x = tensor("x", MP_KIND_INPUT, 1, d6);
    uint32_t *out = malloc((N + 1) * sizeof *out);
    CU_ASSERT_FATAL(out != NULL);
    char name[32];
    static const int64_t d1[] = {1};
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "o%d", i);
        out[i] = tensor(name, MP_KIND_ACTIVATION, 1, d1);
    }
    uint32_t in[] = {x};
    clock_t t0 = clock(); /* CPU time: not the machine's load */
    out[N] = out[N / 2];
    CU_ASSERT_EQUAL(node("s", "Split", in, 1, out, N + 1), MP_ERR_DUPLICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "tensor 'o50000' listed twice as output"));
    for (int i = 0; i < N; i++)
        CU_ASSERT_EQUAL_FATAL(g->tensors[out[i]].producer, MP_NONE);
    /* o7 produced by another node first */
    uint32_t o7[] = {out[7]};
    CU_ASSERT_EQUAL(node("r", "Relu", in, 1, o7, 1), MP_OK);
    CU_ASSERT_EQUAL(node("s", "Split", in, 1, out, N), MP_ERR_DUPLICATE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "two nodes: 'r' and 's'"));
    for (int i = 0; i < N; i++)
        if (i != 7)
            CU_ASSERT_EQUAL_FATAL(g->tensors[out[i]].producer, MP_NONE);
    out[7] = tensor("o7b", MP_KIND_ACTIVATION, 1, d1);
    CU_ASSERT_EQUAL(node("s", "Split", in, 1, out, N), MP_OK);
    for (int i = 0; i < N; i++)
        CU_ASSERT_EQUAL_FATAL(g->tensors[out[i]].producer, 1u);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT(secs < 5.0);
    free(out);
    teardown();
}

static CU_TestInfo tests[] = {
    {"sizes and consumers", test_sizes_and_consumers},
    {"duplicate names", test_duplicate_names},
    {"two producers", test_two_producers},
    {"cycle", test_cycle},
    {"self loop", test_self_loop},
    {"missing producer", test_missing_producer},
    {"unknown size", test_unknown_size},
    {"views and pointwise inference", test_views_and_pointwise},
    {"view size mismatch", test_view_size_mismatch},
    {"gemm inner dims", test_gemm_inner_dims},
    {"constant folding", test_constant_folding},
    {"Shape folded: its value, not the tensor it reads", test_shape_folding},
    {"overflow and negative dims", test_overflow},
    {"topological order", test_topological_order},
    {"op registry", test_registry},
    {"enum names", test_enum_names},
    {"sub-byte sizes", test_int4_sizes},
    {"100k attributes on a node", test_many_attributes},
    {"100k outputs of a node", test_many_outputs},
    CU_TEST_INFO_NULL,
};

void mp_register_graph(void) { mp_test_add_suite("graph", tests); }
