/* Static lints (analysis/lints.c): one graph built to trigger each lint,
 * with its exact byte figure. Sizes are multiples of the 256-byte
 * alignment, so block sizes equal tensor sizes. */
#include "memplan/memplan.h"
#include "support.h"

#include <string.h>

static mp_ctx *ctx;
static mp_graph *g;
static mp_plan *plan;
static mp_lints *lints;

static void begin(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(ctx != NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
}

static uint32_t tf(const char *name, mp_tensor_kind kind, mp_dtype dt,
                   int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t dims[4] = {d0, d1, d2, d3};
    mp_tensor_desc d = {name, dt, rank, dims, 0, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

/* float32 [1, n] */
static uint32_t vec(const char *name, mp_tensor_kind kind, int64_t n)
{
    return tf(name, kind, MP_DTYPE_FLOAT32, 2, 1, n, 0, 0);
}

static void node(const char *name, const char *op, uint32_t i0, uint32_t i1,
                 uint32_t out)
{
    uint32_t in[2] = {i0, i1}, o[1] = {out};
    mp_node_desc d = {name, op, NULL, in, i1 == MP_NONE ? 1u : 2u, o, 1,
                      MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

static mp_attention_mode att_mode = MP_ATTENTION_NAIVE;

static void finish(const mp_lint_options *lo)
{
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0; /* figures below: plans without in-place reuse */
    po.attention = att_mode; /* the chains as built, unless a test fuses */
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, lo, &lints), MP_OK);
}

static void end(void)
{
    mp_lints_destroy(lints);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    lints = NULL;
    plan = NULL;
    g = NULL;
    ctx = NULL;
}

/* the k-th finding of a kind, or NULL */
static const mp_lint *find(mp_lint_kind kind, uint32_t k)
{
    for (uint32_t i = 0; i < mp_lints_count(lints); i++) {
        const mp_lint *l = mp_lints_get(lints, i);
        if (l->kind == kind && k-- == 0)
            return l;
    }
    return NULL;
}

static uint32_t count(mp_lint_kind kind)
{
    uint32_t n = 0;
    while (find(kind, n))
        n++;
    return n;
}

/* x -> /enc/r1 (Relu) -> h1 -> /enc/r2 (Relu) -> h2; /dec/add(h2, h1) -> y.
 * Steps: r1, free x, r2, add: the peak is at add with h1, h2 and y live
 * (3 x 4 KiB): the layer "enc" holds 8 KiB (2/3), "dec" 4 KiB. */
static void test_peak_attribution(void)
{
    begin();
    uint32_t x = vec("x", MP_KIND_INPUT, 1024);
    uint32_t h1 = vec("h1", MP_KIND_ACTIVATION, 1024);
    uint32_t h2 = vec("h2", MP_KIND_ACTIVATION, 1024);
    uint32_t y = vec("y", MP_KIND_ACTIVATION, 1024);
    node("/enc/r1", "Relu", x, MP_NONE, h1);
    node("/enc/r2", "Relu", h1, MP_NONE, h2);
    node("/dec/add", "Add", h2, h1, y);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(mp_plan_live_bytes(plan, mp_plan_figures(plan)->peak_step),
                    12288);
    const mp_lint *l = find(MP_LINT_PEAK_LAYER, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "enc");
    CU_ASSERT_EQUAL(l->bytes, 8192);
    CU_ASSERT_DOUBLE_EQUAL(l->share, 2.0 / 3.0, 1e-12);
    l = find(MP_LINT_PEAK_LAYER, 1);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "dec");
    CU_ASSERT_EQUAL(l->bytes, 4096);
    CU_ASSERT_EQUAL(count(MP_LINT_PEAK_LAYER), 2);
    l = find(MP_LINT_PEAK_OP, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "Relu");
    CU_ASSERT_EQUAL(l->bytes, 8192);
    CU_ASSERT_PTR_NOT_NULL(strstr(l->message, "66.7%"));
    /* y is computed at the peak step: not a pinned output */
    CU_ASSERT_EQUAL(count(MP_LINT_PINNED_OUTPUT), 0);
    CU_ASSERT_EQUAL(count(MP_LINT_DEAD_OUTPUT), 0);
    /* one entry per group with top = 1 */
    mp_lints_destroy(lints);
    mp_lint_options lo;
    mp_lint_options_init(&lo);
    lo.top = 1;
    CU_ASSERT_EQUAL(mp_plan_lint(plan, &lo, &lints), MP_OK);
    CU_ASSERT_EQUAL(count(MP_LINT_PEAK_LAYER), 1);
    CU_ASSERT_EQUAL(count(MP_LINT_PEAK_OP), 1);
    end();
}

/* d = Relu(x) is never read and not an output: 4 KiB computed for nothing */
static void test_dead_output(void)
{
    begin();
    uint32_t x = vec("x", MP_KIND_INPUT, 1024);
    uint32_t d = vec("d", MP_KIND_ACTIVATION, 1024);
    uint32_t y = vec("y", MP_KIND_ACTIVATION, 2048);
    node("dead", "Relu", x, MP_NONE, d);
    node("live", "Concat", x, x, y);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, 1, "axis", 1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(count(MP_LINT_DEAD_OUTPUT), 1);
    const mp_lint *l = find(MP_LINT_DEAD_OUTPUT, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->tensor, d);
    CU_ASSERT_EQUAL(l->node, 0);
    CU_ASSERT_EQUAL(l->bytes, 4096);
    CU_ASSERT_STRING_EQUAL(l->subject, "d");
    end();
    /* the same never-read output written by a node memplan synthesizes
     * (domain "memplan": a backward workspace, an optimizer temporary)
     * is by design, not a finding */
    begin();
    x = vec("x", MP_KIND_INPUT, 1024);
    d = vec("ws", MP_KIND_ACTIVATION, 1024);
    y = vec("y", MP_KIND_ACTIVATION, 1024);
    uint32_t in[1] = {x}, o2[2] = {y, d};
    mp_node_desc nd = {"step", "Opt", "memplan", in, 1, o2, 2,
                       MP_PHASE_OPTIMIZER};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &nd, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(count(MP_LINT_DEAD_OUTPUT), 0);
    end();
}

/* o1 = Relu(x) is an output computed first; the peak comes later, at
 * add(h2, h1) -> o2, with o1, h1, h2, o2 live: o1 pins 8 KiB there. */
static void test_pinned_output(void)
{
    begin();
    uint32_t x = vec("x", MP_KIND_INPUT, 2048);
    uint32_t o1 = vec("o1", MP_KIND_ACTIVATION, 2048);
    uint32_t h1 = vec("h1", MP_KIND_ACTIVATION, 2048);
    uint32_t h2 = vec("h2", MP_KIND_ACTIVATION, 2048);
    uint32_t o2 = vec("o2", MP_KIND_ACTIVATION, 2048);
    node("early", "Relu", x, MP_NONE, o1);
    node("r1", "Relu", x, MP_NONE, h1);
    node("r2", "Relu", h1, MP_NONE, h2);
    node("add", "Add", h2, h1, o2);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o2), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(mp_plan_live_bytes(plan, mp_plan_figures(plan)->peak_step),
                    4 * 8192);
    CU_ASSERT_EQUAL(count(MP_LINT_PINNED_OUTPUT), 1);
    const mp_lint *l = find(MP_LINT_PINNED_OUTPUT, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->tensor, o1);
    CU_ASSERT_EQUAL(l->bytes, 8192);
    end();
}

/* r0 = Relu(x): x is a graph input (never overwritten); r1 = Relu(a): a
 * dies there, at the peak step (x, a, b live): 4 KiB now and at the peak;
 * r2 = Add(x, b): b (input 1, Add may overwrite any input) dies there,
 * 4 KiB, nothing at the peak. Plans without in-place reuse. */
static void inplace_graph(uint32_t *x, uint32_t *a, uint32_t *b, uint32_t *c)
{
    *x = vec("x", MP_KIND_INPUT, 1024);
    *a = vec("a", MP_KIND_ACTIVATION, 1024);
    *b = vec("b", MP_KIND_ACTIVATION, 1024);
    *c = vec("c", MP_KIND_ACTIVATION, 1024);
    node("r0", "Relu", *x, MP_NONE, *a);
    node("r1", "Relu", *a, MP_NONE, *b);
    node("r2", "Add", *x, *b, *c);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, *c), MP_OK);
}

static void test_inplace(void)
{
    begin();
    uint32_t x, a, b, c;
    inplace_graph(&x, &a, &b, &c);
    finish(NULL);
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes, 12288);
    CU_ASSERT_EQUAL(count(MP_LINT_INPLACE), 2);
    const mp_lint *l = find(MP_LINT_INPLACE, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "r1");
    CU_ASSERT_EQUAL(l->tensor, b);
    CU_ASSERT_EQUAL(l->bytes, 4096);
    CU_ASSERT_EQUAL(l->aux_bytes, 4096);
    CU_ASSERT_PTR_NOT_NULL(strstr(l->message, "over its input 'a'"));
    l = find(MP_LINT_INPLACE, 1);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "r2");
    CU_ASSERT_EQUAL(l->tensor, c);
    CU_ASSERT_EQUAL(l->bytes, 4096);
    CU_ASSERT_EQUAL(l->aux_bytes, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l->message, "over its input 'b'"));
    /* the figure at the peak is what in-place reuse takes off the bound */
    uint64_t lb_off = mp_plan_figures(plan)->lower_bound_bytes;
    uint64_t at_peak = find(MP_LINT_INPLACE, 0)->aux_bytes +
                       find(MP_LINT_INPLACE, 1)->aux_bytes;
    end();

    /* the default plan takes both: nothing is left to report */
    begin();
    inplace_graph(&x, &a, &b, &c);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes,
                    lb_off - at_peak);
    uint32_t taken = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
        taken += mp_plan_block_over(plan, i) != MP_NONE;
    CU_ASSERT_EQUAL(taken, 2);
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, NULL, &lints), MP_OK);
    CU_ASSERT_EQUAL(count(MP_LINT_INPLACE), 0);
    end();
}

/* --fuse: a (r0 -> r1) and b (r1 -> r2) are fused and take no memory;
 * c cannot take over x (a graph input): no in-place finding, and the
 * figures at the peak count only real blocks (x and c: 8 KiB). */
static void test_lints_fused(void)
{
    begin();
    uint32_t x, a, b, c;
    inplace_graph(&x, &a, &b, &c);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(plan, a), 1);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(plan, b), 1);
    CU_ASSERT_EQUAL(mp_plan_num_blocks(plan), 2);
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, NULL, &lints), MP_OK);
    CU_ASSERT_EQUAL(count(MP_LINT_INPLACE), 0);
    CU_ASSERT_EQUAL(count(MP_LINT_DEAD_OUTPUT), 0);
    uint64_t sum = 0;
    for (uint32_t k = 0; find(MP_LINT_PEAK_OP, k); k++)
        sum += find(MP_LINT_PEAK_OP, k)->bytes;
    CU_ASSERT_EQUAL(sum, 8192);
    CU_ASSERT_EQUAL(mp_plan_live_bytes(plan, mp_plan_figures(plan)->peak_step),
                    8192);
    const mp_lint *l = find(MP_LINT_PEAK_LAYER, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->bytes, 4096);
    end();
}

/* Two pools, a pinned in pool 0 and b in pool 1: both at offset 0
 * (equal offsets, different memory). r1 = Relu(a) may still write b over
 * a: 4 KiB, at the peak too. */
static void test_inplace_pools(void)
{
    begin();
    uint32_t x, a, b, c;
    inplace_graph(&x, &a, &b, &c);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    mp_constraints *cs = mp_test_two_pools(ctx, "sram", "dram", a, b);
    const uint32_t p0 = 0, p1 = 1;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create_constrained(g, &po, cs, &plan),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_num_pools(plan), 2);
    const mp_block *bl = mp_plan_blocks(plan);
    uint32_t ba = MP_NONE, bb = MP_NONE;
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++) {
        if (bl[i].tensor == a)
            ba = i;
        if (bl[i].tensor == b)
            bb = i;
    }
    CU_ASSERT_FATAL(ba != MP_NONE && bb != MP_NONE);
    CU_ASSERT_EQUAL(mp_plan_block_pool(plan, ba), p0);
    CU_ASSERT_EQUAL(mp_plan_block_pool(plan, bb), p1);
    CU_ASSERT_EQUAL(bl[ba].offset, bl[bb].offset);
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, NULL, &lints), MP_OK);
    const mp_lint *l = find(MP_LINT_INPLACE, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_STRING_EQUAL(l->subject, "r1");
    CU_ASSERT_EQUAL(l->bytes, 4096);
    CU_ASSERT_EQUAL(l->aux_bytes, 4096);
    mp_constraints_destroy(cs);
    end();
}

/* q [1,1,64,8] x kT [1,1,8,64] -> s [1,1,64,64] (16 KiB) -> Mul(scale) ->
 * m -> Softmax -> p -> MatMul(p, v) -> o. The peak is at the Mul step
 * (v, s, m live): the score chain holds s and m there: 32 KiB. */
static void test_attention(void)
{
    begin();
    uint32_t q = tf("q", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 64, 8);
    uint32_t kt = tf("kT", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 8, 64);
    uint32_t v = tf("v", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 64, 8);
    uint32_t sc = tf("scale", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 1, 1, 0, 0, 0);
    uint32_t s = tf("s", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    uint32_t m = tf("m", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    uint32_t p = tf("p", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    uint32_t o = tf("o", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    node("qk", "MatMul", q, kt, s);
    node("scale_mul", "Mul", s, sc, m);
    node("softmax", "Softmax", m, MP_NONE, p);
    node("pv", "MatMul", p, v, o);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    finish(NULL);
    mp_tensor_info ti;
    CU_ASSERT_EQUAL(mp_graph_tensor_info(g, s, &ti), MP_OK);
    CU_ASSERT_EQUAL(ti.bytes, 16384);
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes, 2048 + 32768);
    CU_ASSERT_EQUAL(count(MP_LINT_ATTENTION), 1);
    const mp_lint *l = find(MP_LINT_ATTENTION, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->node, 2);
    CU_ASSERT_EQUAL(l->tensor, p);
    CU_ASSERT_EQUAL(l->bytes, 32768);
    CU_ASSERT_EQUAL(l->aux_bytes, 16384);
    CU_ASSERT_PTR_NOT_NULL(strstr(l->message, "1x1x64x64"));
    end();
    /* fused (the default): the chain is one node, no scores held, and the
     * lint no longer offers what the plan already does */
    att_mode = MP_ATTENTION_FUSED;
    begin();
    q = tf("q", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 64, 8);
    kt = tf("kT", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 8, 64);
    v = tf("v", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 4, 1, 1, 64, 8);
    sc = tf("scale", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 1, 1, 0, 0, 0);
    s = tf("s", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    m = tf("m", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    p = tf("p", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    o = tf("o", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    node("qk", "MatMul", q, kt, s);
    node("scale_mul", "Mul", s, sc, m);
    node("softmax", "Softmax", m, MP_NONE, p);
    node("pv", "MatMul", p, v, o);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, o), MP_OK);
    finish(NULL);
    att_mode = MP_ATTENTION_NAIVE;
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 1);
    /* q, kT, v and o live at the fused node: 4 x 2 KiB */
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->lower_bound_bytes, 4 * 2048);
    CU_ASSERT_EQUAL(count(MP_LINT_ATTENTION), 0);
    end();
}

/* a Softmax that no MatMul reads is not attention */
static void test_attention_negative(void)
{
    begin();
    uint32_t x = tf("x", MP_KIND_INPUT, MP_DTYPE_FLOAT32, 2, 64, 64, 0, 0);
    uint32_t w = tf("w", MP_KIND_WEIGHT, MP_DTYPE_FLOAT32, 2, 64, 64, 0, 0);
    uint32_t s = tf("s", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    uint32_t p = tf("p", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT32, -1, 0, 0, 0, 0);
    node("mm", "MatMul", x, w, s);
    node("sm", "Softmax", s, MP_NONE, p);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, p), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(count(MP_LINT_ATTENTION), 0);
    end();
}

/* past_key and past_value [1, 4, 16, 8] float16: 4 x 8 x 2 bytes each per
 * token: 128 bytes per token, 128000 at a context of 1000 */
static void test_kv_cache(void)
{
    begin();
    uint32_t k = tf("past_key.0", MP_KIND_INPUT, MP_DTYPE_FLOAT16, 4, 1, 4, 16,
                    8);
    uint32_t v = tf("past_value.0", MP_KIND_INPUT, MP_DTYPE_FLOAT16, 4, 1, 4,
                    16, 8);
    uint32_t y = tf("y", MP_KIND_ACTIVATION, MP_DTYPE_FLOAT16, -1, 0, 0, 0, 0);
    node("add", "Add", k, v, y);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    mp_lint_options lo;
    mp_lint_options_init(&lo);
    CU_ASSERT_EQUAL(lo.kv_context, 4096);
    lo.kv_context = 1000;
    finish(&lo);
    CU_ASSERT_EQUAL(count(MP_LINT_KV_CACHE), 1);
    const mp_lint *l = find(MP_LINT_KV_CACHE, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->bytes, 128);
    CU_ASSERT_EQUAL(l->aux_bytes, 128000);
    CU_ASSERT_EQUAL(l->tensor, k);
    end();
    /* no cache-like inputs: no finding */
    begin();
    uint32_t x = vec("x", MP_KIND_INPUT, 64);
    uint32_t z = vec("z", MP_KIND_ACTIVATION, 64);
    node("r", "Relu", x, MP_NONE, z);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, z), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(count(MP_LINT_KV_CACHE), 0);
    end();
}

/* x (4 KiB) -> Relu -> y (4 KiB): the arena is 8 KiB; the caching
 * allocator takes one 2 MiB small segment: 2 MiB - 8 KiB more */
static void test_fragmentation(void)
{
    begin();
    uint32_t x = vec("x", MP_KIND_INPUT, 1024);
    uint32_t y = vec("y", MP_KIND_ACTIVATION, 1024);
    node("r", "Relu", x, MP_NONE, y);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    finish(NULL);
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->arena_bytes, 8192);
    CU_ASSERT_EQUAL(count(MP_LINT_FRAGMENTATION), 1);
    const mp_lint *l = find(MP_LINT_FRAGMENTATION, 0);
    CU_ASSERT_FATAL(l != NULL);
    CU_ASSERT_EQUAL(l->aux_bytes, 2u << 20);
    CU_ASSERT_EQUAL(l->bytes, (2u << 20) - 8192);
    /* a fraction, as every lint's share: the part of the reserved memory
     * the arena does without (it was reserved / arena, 256 here) */
    CU_ASSERT_DOUBLE_EQUAL(l->share,
                           (double)((2u << 20) - 8192) / (double)(2u << 20),
                           1e-12);
    CU_ASSERT(l->share >= 0 && l->share <= 1);
    /* turned off */
    mp_lints_destroy(lints);
    mp_lint_options lo;
    mp_lint_options_init(&lo);
    lo.fragmentation = 0;
    CU_ASSERT_EQUAL(mp_plan_lint(plan, &lo, &lints), MP_OK);
    CU_ASSERT_EQUAL(count(MP_LINT_FRAGMENTATION), 0);
    end();
}

static void test_names_and_args(void)
{
    CU_ASSERT_STRING_EQUAL(mp_lint_kind_name(MP_LINT_PEAK_LAYER), "peak-layer");
    CU_ASSERT_STRING_EQUAL(mp_lint_kind_name(MP_LINT_FRAGMENTATION),
                           "fragmentation");
    CU_ASSERT_PTR_NULL(mp_lint_kind_name((mp_lint_kind)MP_LINT_KIND_COUNT));
    CU_ASSERT_EQUAL(mp_plan_lint(NULL, NULL, &lints), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_lints_count(NULL), 0);
    CU_ASSERT_PTR_NULL(mp_lints_get(NULL, 0));
    mp_lints_destroy(NULL);
}

void mp_register_lints(void)
{
    static CU_TestInfo tests[] = {
        {"peak_attribution", test_peak_attribution},
        {"dead_output", test_dead_output},
        {"pinned_output", test_pinned_output},
        {"inplace", test_inplace},
        {"inplace_pools", test_inplace_pools},
        {"fused", test_lints_fused},
        {"attention", test_attention},
        {"attention_negative", test_attention_negative},
        {"kv_cache", test_kv_cache},
        {"fragmentation", test_fragmentation},
        {"names_and_args", test_names_and_args},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("lints", tests);
}
