/* In-place reuse and fused pointwise chains (issue 4): where they happen,
 * where they must not, exact lower bounds by hand, and the verifier on
 * plans with sharing (also hand-tampered ones and JSON round trips). */
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define K 1024u

static mp_ctx *ctx;
static mp_graph *g;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static void add_n(const char *name, const char *op, uint32_t *in,
                  uint32_t nin, uint32_t *out, uint32_t nout)
{
    mp_node_desc d = {name, op, NULL, in, nin, out, nout, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

static void start(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx != NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
}

static void finish(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    g = NULL;
    ctx = NULL;
}

static uint32_t tid(const char *name)
{
    uint32_t t = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_find_tensor(g, name, &t), MP_OK);
    return t;
}

/* Index of the first block of tensor `name`, or MP_NONE. */
static uint32_t block_of(const mp_plan *p, const char *name)
{
    uint32_t t = tid(name);
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
        if (mp_plan_blocks(p)[i].tensor == t)
            return i;
    return MP_NONE;
}

/* The tensor block of `name` took over, or MP_NONE. */
static uint32_t over_of(const mp_plan *p, const char *name)
{
    uint32_t b = block_of(p, name);
    return b == MP_NONE ? MP_NONE : mp_plan_block_over(p, b);
}

static mp_plan *plan_with(int inplace, int fuse)
{
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.inplace = inplace;
    o.fuse = fuse;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    /* the plan survives its JSON form with the sharing it records */
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &text), MP_OK);
    const char *path = mp_test_write_temp(".json", text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    mp_plan *q = NULL;
    CU_ASSERT_EQUAL(mp_plan_load_json(g, path, &q), MP_OK);
    if (q) {
        CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_num_blocks(q), mp_plan_num_blocks(p));
        for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
            CU_ASSERT_EQUAL(mp_plan_block_over(q, i), mp_plan_block_over(p, i));
        for (uint32_t t = 0; t < mp_graph_num_tensors(g); t++)
            CU_ASSERT_EQUAL(mp_plan_tensor_fused(q, t),
                            mp_plan_tensor_fused(p, t));
        char *text2 = NULL;
        CU_ASSERT_EQUAL(mp_plan_to_json_string(q, &text2), MP_OK);
        if (text2) {
            /* solve_seconds is written as is: same bytes */
            CU_ASSERT_STRING_EQUAL(text, text2);
            mp__dealloc(ctx, text2);
        }
    }
    mp_plan_destroy(q);
    remove(path);
    mp__dealloc(ctx, text);
    return p;
}

/* x(1K, input) -> Conv -> a(4K) -> Relu -> b(4K) -> Sigmoid -> c(4K)
 *   -> Conv -> d(1K, output). */
static void build_chain(void)
{
    start();
    uint32_t x = add_t("x", MP_KIND_INPUT, K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 4 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 4 * K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 4 * K);
    uint32_t d = add_t("d", MP_KIND_ACTIVATION, K);
    uint32_t i1[] = {x, w}, o1[] = {a}, o2[] = {b}, o3[] = {c}, i4[] = {c, w},
             o4[] = {d};
    add_n("conv1", "Conv", i1, 2, o1, 1);
    add_n("relu", "Relu", o1, 1, o2, 1);
    add_n("sig", "Sigmoid", o2, 1, o3, 1);
    add_n("conv2", "Conv", i4, 2, o4, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, d), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
}

static void test_chain(void)
{
    build_chain();
    /* without in-place: relu holds a+b, sig b+c: 8K */
    mp_plan *p = plan_with(0, 0);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 8 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->no_reuse_bytes, 14 * K);
    CU_ASSERT_EQUAL(over_of(p, "b"), MP_NONE);
    CU_ASSERT_EQUAL(over_of(p, "c"), MP_NONE);
    mp_plan_destroy(p);
    /* in place: b over a, c over b; the peak is conv1/conv2: x+a = 5K */
    p = plan_with(1, 0);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 5 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->arena_bytes, 5 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->no_reuse_bytes, 14 * K);
    CU_ASSERT_EQUAL(over_of(p, "b"), tid("a"));
    CU_ASSERT_EQUAL(over_of(p, "c"), tid("b"));
    CU_ASSERT_EQUAL(over_of(p, "a"), MP_NONE); /* Conv: not in place */
    CU_ASSERT_EQUAL(over_of(p, "d"), MP_NONE);
    const mp_block *bl = mp_plan_blocks(p);
    uint32_t ba = block_of(p, "a"), bb = block_of(p, "b"),
             bc = block_of(p, "c");
    CU_ASSERT_EQUAL(bl[ba].offset, bl[bb].offset);
    CU_ASSERT_EQUAL(bl[bb].offset, bl[bc].offset);
    CU_ASSERT_EQUAL(bl[ba].end, bl[bb].first); /* a dies where b starts */
    CU_ASSERT_EQUAL(bl[bb].end, bl[bc].first);
    /* no FREE step for an overwritten tensor */
    for (uint32_t s = 0; s < mp_plan_num_steps(p); s++)
        if (mp_plan_steps(p)[s].kind == MP_STEP_FREE) {
            CU_ASSERT_NOT_EQUAL(mp_plan_steps(p)[s].index, tid("a"));
            CU_ASSERT_NOT_EQUAL(mp_plan_steps(p)[s].index, tid("b"));
        }
    mp_plan_destroy(p);
    finish();
}

/* x -> Conv -> a; Relu(a) -> b; Sigmoid(b) -> c; Add(c, a) -> d (output):
 * a is read again by the residual Add, so Relu must not overwrite it. */
static void test_read_later(void)
{
    start();
    uint32_t x = add_t("x", MP_KIND_INPUT, K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 4 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 4 * K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 4 * K);
    uint32_t d = add_t("d", MP_KIND_ACTIVATION, 4 * K);
    uint32_t i1[] = {x, w}, o1[] = {a}, o2[] = {b}, o3[] = {c}, i4[] = {c, a},
             o4[] = {d};
    add_n("conv", "Conv", i1, 2, o1, 1);
    add_n("relu", "Relu", o1, 1, o2, 1);
    add_n("sig", "Sigmoid", o2, 1, o3, 1);
    add_n("add", "Add", i4, 2, o4, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, d), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *p = plan_with(0, 0);
    /* sig: a + b + c */
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 12 * K);
    mp_plan_destroy(p);
    p = plan_with(1, 0);
    /* relu: a + b; sig: a + c (over b); add: d over c (input 0) + a */
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 8 * K);
    CU_ASSERT_EQUAL(over_of(p, "b"), MP_NONE);
    CU_ASSERT_EQUAL(over_of(p, "c"), tid("b"));
    CU_ASSERT_EQUAL(over_of(p, "d"), tid("c"));
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
        CU_ASSERT_NOT_EQUAL(mp_plan_block_over(p, i), tid("a"));

    /* hand-tampered: claim that b was written over a (which add reads
     * later), with b moved onto a's memory and a's block ended there */
    mp_plan *q = plan_with(0, 0);
    uint32_t ba = block_of(q, "a"), bb = block_of(q, "b");
    q->block_over = mp__alloc(ctx, q->n_blocks * sizeof *q->block_over);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q->block_over);
    for (uint32_t i = 0; i < q->n_blocks; i++)
        q->block_over[i] = MP_NONE;
    q->block_over[bb] = tid("a");
    q->blocks[ba].end = q->blocks[bb].first;
    q->blocks[bb].offset = q->blocks[ba].offset;
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_ERR_VERIFY);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "written in place"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "'a'"));
    mp_plan_destroy(q);

    /* tampered in place plan: c no longer on b's memory */
    q = plan_with(1, 0);
    uint32_t bc = block_of(q, "c");
    q->blocks[bc].offset = q->blocks[bc].offset ? 0 : 4 * K;
    q->fig.arena_bytes = q->fig.arena_bytes > q->blocks[bc].offset + 4 * K
                             ? q->fig.arena_bytes
                             : q->blocks[bc].offset + 4 * K;
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_ERR_VERIFY);
    mp_plan_destroy(q);
    /* tampered: in place over a graph input */
    q = plan_with(1, 0);
    bc = block_of(q, "c");
    q->block_over[bc] = tid("x");
    CU_ASSERT_EQUAL(mp_verify_plan(g, q), MP_ERR_VERIFY);
    mp_plan_destroy(q);
    mp_plan_destroy(p);
    finish();
}

/* Read later through a view: v = Identity(a) is read by the last node. */
static void test_read_later_via_view(void)
{
    start();
    uint32_t x = add_t("x", MP_KIND_INPUT, K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 4 * K);
    uint32_t v = add_t("v", MP_KIND_ACTIVATION, 4 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 4 * K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 4 * K);
    uint32_t i1[] = {x, w}, o1[] = {a}, ov[] = {v}, o2[] = {b},
             i3[] = {b, v}, o3[] = {c};
    add_n("conv", "Conv", i1, 2, o1, 1);
    add_n("view", "Identity", o1, 1, ov, 1);
    add_n("relu", "Relu", o1, 1, o2, 1);
    add_n("add", "Add", i3, 2, o3, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, c), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *p = plan_with(1, 0);
    CU_ASSERT_EQUAL(over_of(p, "b"), MP_NONE); /* a lives on through v */
    CU_ASSERT_EQUAL(over_of(p, "c"), tid("b"));
    /* relu: a + b = 8K; add: c over b, a (via v) = 8K */
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 8 * K);
    mp_plan_destroy(p);
    finish();
}

/* Graph inputs and outputs are never overwritten; neither are inputs of
 * another size, nor inputs at positions the op does not allow. */
static void test_inputs_outputs_sizes(void)
{
    start();
    uint32_t x = add_t("x", MP_KIND_INPUT, 4 * K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 4 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 4 * K);
    uint32_t s = add_t("s", MP_KIND_ACTIVATION, 2 * K);
    uint32_t e = add_t("e", MP_KIND_ACTIVATION, 2 * K);
    uint32_t m = add_t("m", MP_KIND_ACTIVATION, 4 * K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 4 * K);
    uint32_t i0[] = {x}, o0[] = {a}, o1[] = {b}, i2[] = {b, w}, o2[] = {s},
             o3[] = {e}, i4[] = {e, b}, o4[] = {m}, o5[] = {c};
    add_n("relu_in", "Relu", i0, 1, o0, 1);   /* x: graph input */
    add_n("relu_out", "Relu", o0, 1, o1, 1);  /* a: graph output */
    add_n("pool", "Conv", i2, 2, o2, 1);
    add_n("relu_s", "Relu", o2, 1, o3, 1);    /* s -> e: 2K in place */
    add_n("prelu", "PRelu", i4, 2, o4, 1);    /* b at input 1: not allowed */
    add_n("neg", "Neg", o4, 1, o5, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, a), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, c), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *p = plan_with(1, 0);
    CU_ASSERT_EQUAL(over_of(p, "a"), MP_NONE);
    CU_ASSERT_EQUAL(over_of(p, "b"), MP_NONE);
    CU_ASSERT_EQUAL(over_of(p, "e"), tid("s"));
    CU_ASSERT_EQUAL(over_of(p, "m"), MP_NONE); /* e is 2K, b at input 1 */
    CU_ASSERT_EQUAL(over_of(p, "c"), tid("m"));
    mp_plan_destroy(p);
    finish();
}

/* --fuse on the chain: b (Relu -> Sigmoid) is inside a fused chain; a
 * (made by Conv) and c (read by Conv) are not. */
static void test_fuse(void)
{
    build_chain();
    /* fuse alone: relu: a (b fused) = 4K; sig: a (kept to the chain's
     * end) + c = 8K; no-reuse loses b: 14K - 4K */
    mp_plan *p = plan_with(0, 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("b")), 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("a")), 0);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("c")), 0);
    CU_ASSERT_EQUAL(block_of(p, "b"), MP_NONE);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 8 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->no_reuse_bytes, 10 * K);
    /* a is freed after sig, not after relu */
    const mp_block *bl = mp_plan_blocks(p);
    uint32_t ba = block_of(p, "a"), bc = block_of(p, "c");
    CU_ASSERT(bl[ba].end > bl[bc].first);
    mp_plan_destroy(p);
    /* fuse + in place: the chain's output c takes over a, the chain's
     * input: 5K as with in-place alone, one block fewer */
    p = plan_with(1, 1);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->lower_bound_bytes, 5 * K);
    CU_ASSERT_EQUAL(mp_plan_figures(p)->no_reuse_bytes, 10 * K);
    CU_ASSERT_EQUAL(over_of(p, "c"), tid("a"));
    mp_plan_destroy(p);

    /* tampered: a fused tensor whose producer is not pointwise */
    p = plan_with(0, 1);
    p->fused[tid("b")] = 0;
    p->fused[tid("a")] = 1;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    mp_plan_destroy(p);
    finish();
}

/* Not fused: two readers, or the reader not right after the producer. */
static void test_fuse_negative(void)
{
    start();
    uint32_t x = add_t("x", MP_KIND_INPUT, K);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, K);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 4 * K);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 4 * K);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 4 * K);
    uint32_t d = add_t("d", MP_KIND_ACTIVATION, 4 * K);
    uint32_t e = add_t("e", MP_KIND_ACTIVATION, 4 * K);
    uint32_t i1[] = {x, w}, o1[] = {a}, o2[] = {b}, o3[] = {c}, o4[] = {d},
             i5[] = {c, d}, o5[] = {e};
    add_n("conv", "Conv", i1, 2, o1, 1);
    add_n("relu", "Relu", o1, 1, o2, 1);
    add_n("sig", "Sigmoid", o2, 1, o3, 1);  /* b: two readers */
    add_n("tanh", "Tanh", o2, 1, o4, 1);
    add_n("add", "Add", i5, 2, o5, 1);      /* c: tanh runs in between */
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, e), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan *p = plan_with(1, 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("b")), 0);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("c")), 0);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(p, tid("d")), 1); /* tanh -> add */
    mp_plan_destroy(p);
    finish();
}

static uint32_t add_s(const char *name, mp_tensor_kind kind, int64_t d0,
                      int64_t d1)
{
    int64_t dims[2] = {d0, d1};
    mp_tensor_desc d = {name, MP_DTYPE_FLOAT32, 2, dims, 0, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

/* Two Splits of 100k outputs each, a Sum over all of them and c, a
 * Concat: o_i [1,64] are read again by the Concat, p_i [1,1] die at the
 * Sum (other size), c [1,64] dies there. The Sum's output takes over c,
 * nothing else; the FREE steps keep their order. Linear work: the rewrite
 * used to walk the Sum's 100k candidates for each o_i (quadratic, minutes)
 * and the FREE list of one node for each FREE. */
static void test_wide_nodes(void)
{
    enum { N = 100000 };
    start();
    uint32_t x = add_s("x", MP_KIND_INPUT, N, 64);
    uint32_t x2 = add_s("x2", MP_KIND_INPUT, N, 1);
    uint32_t x3 = add_s("x3", MP_KIND_INPUT, 1, 64);
    uint32_t *o = malloc((2 * (size_t)N + 1) * sizeof *o);
    uint32_t *pp = malloc((size_t)N * sizeof *pp);
    CU_ASSERT_FATAL(o != NULL && pp != NULL);
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "o%d", i);
        o[i] = add_s(name, MP_KIND_ACTIVATION, 1, 64);
        snprintf(name, sizeof name, "p%d", i);
        pp[i] = add_s(name, MP_KIND_ACTIVATION, 1, 1);
    }
    uint32_t c = add_s("c", MP_KIND_ACTIVATION, 1, 64);
    uint32_t y = add_s("y", MP_KIND_ACTIVATION, 1, 64);
    uint32_t z = add_s("z", MP_KIND_ACTIVATION, N + 1, 64);
    add_n("split1", "Split", &x, 1, o, N);
    add_n("split2", "Split", &x2, 1, pp, N);
    add_n("relu", "Relu", &x3, 1, &c, 1);
    /* Sum(o..., p..., c) */
    memcpy(o + N, pp, (size_t)N * sizeof *o);
    o[2 * N] = c;
    add_n("sum", "Sum", o, 2 * N + 1, &y, 1);
    /* Concat(o..., y) */
    o[N] = y;
    add_n("concat", "Concat", o, N + 1, &z, 1);
    uint32_t cat;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(g, "concat", &cat), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_set_attr_int(g, cat, "axis", 0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, z), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    clock_t t0 = clock(); /* CPU time: not the machine's load */
    mp_plan *p = plan_with(1, 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT(secs < 10.0);
    if (secs >= 10.0)
        printf("\n  wide nodes: %.2f s\n", secs);
    CU_ASSERT_EQUAL(over_of(p, "y"), c);
    uint32_t taken = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
        taken += mp_plan_block_over(p, i) != MP_NONE;
    CU_ASSERT_EQUAL(taken, 1);
    /* the FREE steps in the order of the plan without in-place, less c's */
    mp_plan *q = plan_with(0, 0);
    const mp_step *sp = mp_plan_steps(p), *sq = mp_plan_steps(q);
    uint32_t np = mp_plan_num_steps(p), nq = mp_plan_num_steps(q);
    CU_ASSERT_EQUAL(np + 1, nq);
    uint32_t i = 0, j = 0, bad = 0;
    for (; i < np && j < nq; i++, j++) {
        if (sq[j].kind == MP_STEP_FREE && sq[j].index == c)
            j++;
        bad += j >= nq || sp[i].kind != sq[j].kind ||
               sp[i].index != sq[j].index;
    }
    CU_ASSERT_EQUAL(bad, 0);
    mp_plan_destroy(q);
    mp_plan_destroy(p);
    free(o);
    free(pp);
    finish();
}

static CU_TestInfo tests[] = {
    {"chain: exact bounds with and without in-place", test_chain},
    {"never over a tensor read later; tampered plans", test_read_later},
    {"never over a tensor read later through a view",
     test_read_later_via_view},
    {"graph inputs/outputs, sizes, allowed positions",
     test_inputs_outputs_sizes},
    {"fuse: exact figures by hand", test_fuse},
    {"fuse: not across two readers or a gap", test_fuse_negative},
    {"100k-wide Split, Sum and Concat: linear", test_wide_nodes},
    CU_TEST_INFO_NULL,
};

void mp_register_inplace(void) { mp_test_add_suite("inplace", tests); }
