/* Memory pools, placement constraints and shape ranges (issue 9): plans
 * under constraints verify (mp_verify_plan and mp_verify_constraints),
 * the verifier rejects pool plans that break the rules, two pools beat
 * one on the time estimate, pins are honoured, a plan made for a shape
 * bound holds the smaller shapes. */
#include "sched.h"
#include "support.h"

#include <stdio.h>
#include <string.h>

#define MiB (1024ull * 1024ull)

static mp_ctx *ctx;
static mp_graph *g;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static void add_n(const char *name, uint32_t *in, uint32_t nin, uint32_t out)
{
    mp_node_desc d = {name, "Op", NULL, in, nin, &out, 1, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

/* x(1 KiB) -> n1 -> a(8 KiB) -> n2 -> b(2 KiB) -> n3 -> c(1 KiB), n3 also
 * reads a and x; n4 reads c and writes y (output); w is a weight. */
static void build(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, 1024);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 8192);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 2048);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 1024);
    uint32_t y = add_t("y", MP_KIND_ACTIVATION, 512);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, 4096);
    uint32_t i1[] = {x, w}, i2[] = {a}, i3[] = {b, a, x}, i4[] = {c};
    add_n("n1", i1, 2, a);
    add_n("n2", i2, 1, b);
    add_n("n3", i3, 3, c);
    add_n("n4", i4, 1, y);
    mp_graph_mark_output(g, y);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
}

static void done(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    g = NULL;
    ctx = NULL;
}

static uint32_t tid(const char *name)
{
    uint32_t id = MP_NONE;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, name, &id) == MP_OK);
    return id;
}

static const mp_block *block_of(const mp_plan *p, const char *name,
                                uint32_t *index)
{
    uint32_t t = tid(name);
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++)
        if (mp_plan_blocks(p)[i].tensor == t) {
            if (index)
                *index = i;
            return &mp_plan_blocks(p)[i];
        }
    CU_FAIL_FATAL("no block");
    return NULL;
}

static mp_constraints *two_pools(uint64_t sram)
{
    mp_constraints *c = NULL;
    CU_ASSERT_FATAL(mp_constraints_create(ctx, &c) == MP_OK);
    mp_pool_desc s = {"sram", sram, 1e12, 0};
    mp_pool_desc d = {"dram", UINT64_MAX, 1e11, 0};
    uint32_t id = 9;
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &s, &id), MP_OK);
    CU_ASSERT_EQUAL(id, 0);
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &d, &id), MP_OK);
    CU_ASSERT_EQUAL(id, 1);
    return c;
}

static void expect_msg(const char *needle)
{
    if (!strstr(mp_ctx_message(ctx), needle)) {
        printf("\n  message: %s\n  expected to contain: %s\n",
               mp_ctx_message(ctx), needle);
        CU_FAIL("message does not name the violation");
    }
}

/* Two pools: every pool within capacity, the plan verifies, the 8 KiB
 * tensor does not fit a 4 KiB SRAM, and the estimate beats DRAM only. */
static void t_two_pools(void)
{
    build();
    mp_constraints *c = two_pools(4096);
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *p = NULL, *single = NULL;
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, &o, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_num_pools(p), 2);
    mp_pool_info si, di;
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 0, &si), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 1, &di), MP_OK);
    CU_ASSERT_STRING_EQUAL(si.name, "sram");
    CU_ASSERT(si.arena_bytes <= 4096);
    CU_ASSERT(si.n_blocks >= 1);
    CU_ASSERT_EQUAL(si.n_blocks + di.n_blocks, mp_plan_num_blocks(p));
    CU_ASSERT_EQUAL(si.arena_bytes + di.arena_bytes,
                    mp_plan_figures(p)->arena_bytes);
    uint32_t ia = 0;
    block_of(p, "a", &ia);
    CU_ASSERT_EQUAL(mp_plan_block_pool(p, ia), 1);
    /* plan JSON has no pools: refused, not written as one arena */
    char *text = NULL;
    CU_ASSERT_EQUAL(mp_plan_to_json_string(p, &text), MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NULL(text);
    expect_msg("pools");
    CU_ASSERT_EQUAL(mp_plan_create(g, &o, &single), MP_OK);
    double t2 = 0, t1 = 0;
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(p, c, &t2), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(single, c, &t1), MP_OK);
    CU_ASSERT(t2 > 0 && t2 < t1);
    /* by hand: a single-pool plan reads and writes everything at 1e11 */
    double bytes = (1024 + 4096 + 8192) + (8192 + 2048) +
                   (2048 + 8192 + 1024 + 1024) + (1024 + 512);
    CU_ASSERT_DOUBLE_EQUAL(t1, bytes / 1e11, 1e-15);
    mp_plan_destroy(p);
    mp_plan_destroy(single);
    /* a roomy SRAM takes everything: the time is all at SRAM speed */
    mp_constraints_destroy(c);
    c = two_pools(64 * 1024);
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, &o, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 1, &di), MP_OK);
    CU_ASSERT_EQUAL(di.n_blocks, 0);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(p, c, &t2), MP_OK);
    /* the weight stays in the last pool */
    CU_ASSERT_DOUBLE_EQUAL(t2, (bytes - 4096) / 1e12 + 4096 / 1e11, 1e-15);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    done();
}

/* The verifier sees pools: an overlap within a pool is caught, the same
 * offsets in different pools are not overlaps, a block beyond its pool's
 * arena and an arena beyond capacity are caught. */
static void t_verify_pools(void)
{
    build();
    mp_constraints *c = two_pools(4096);
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_FATAL(mp_verify_plan(g, p) == MP_OK);
    uint32_t ia = 0, ib = 0;
    mp_block *a = (mp_block *)block_of(p, "a", &ia);
    mp_block *b = (mp_block *)block_of(p, "b", &ib);
    uint64_t ao = a->offset, bo = b->offset;
    uint32_t bp = p->block_pool[ib];
    /* a and b are live together (n2): same pool, same offset */
    p->block_pool[ib] = p->block_pool[ia];
    b->offset = a->offset;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    expect_msg("overlap");
    b->offset = bo;
    p->block_pool[ib] = bp;
    /* outside its pool's arena */
    b->offset = p->pools[bp].arena_bytes;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    expect_msg("outside pool");
    b->offset = bo;
    a->offset = ao;
    /* above capacity */
    uint64_t cap = p->pools[0].capacity;
    p->pools[0].capacity = p->pools[0].arena_bytes - 1;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    expect_msg("capacity");
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_ERR_VERIFY);
    p->pools[0].capacity = cap;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    done();
}

/* A pinned tensor sits where it is pinned, others go around it; the
 * constraint checker catches a moved pin; overlapping pins, misaligned
 * pins and pins beyond a capacity are refused. */
static void t_pins(void)
{
    build();
    mp_constraints *c = NULL;
    CU_ASSERT_FATAL(mp_constraints_create(ctx, &c) == MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("b"), 0, 8192), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("x"), 0, 0), MP_OK);
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    CU_ASSERT_EQUAL(block_of(p, "b", NULL)->offset, 8192);
    CU_ASSERT_EQUAL(block_of(p, "x", NULL)->offset, 0);
    /* a (8 KiB, live with x and b) must go above b: [10240, 18432) */
    CU_ASSERT(block_of(p, "a", NULL)->offset >= 10240);
    ((mp_block *)block_of(p, "b", NULL))->offset = 8448;
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_ERR_VERIFY);
    expect_msg("pinned at 8192");
    mp_plan_destroy(p);
    /* x and a overlap in time: pins that overlap in memory are refused */
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("a"), 0, 512 * 2), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    expect_msg("overlap");
    CU_ASSERT_PTR_NULL(p);
    /* a misaligned pin */
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("a"), 0, 100000), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    expect_msg("alignment");
    /* a pin on a weight: no arena memory */
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("a"), 0, 102400), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("w"), 0, 0), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INVALID_ARG);
    expect_msg("no arena memory");
    mp_constraints_destroy(c);
    /* a pin beyond a pool's capacity */
    c = two_pools(4096);
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("c"), 0, 4096), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    expect_msg("capacity");
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("c"), 0, 3072), MP_OK);
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    uint32_t ic;
    CU_ASSERT_EQUAL(block_of(p, "c", &ic)->offset, 3072);
    CU_ASSERT_EQUAL(mp_plan_block_pool(p, ic), 0);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    done();
}

/* No-share, per-tensor alignment, assignment and the largest buffer. */
static void t_rules(void)
{
    build();
    mp_constraints *c = NULL;
    CU_ASSERT_FATAL(mp_constraints_create(ctx, &c) == MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_no_share(c, tid("b")), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_align(c, tid("c"), 4096), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_align(c, tid("c"), 0), MP_ERR_INVALID_ARG);
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    CU_ASSERT_EQUAL(block_of(p, "c", NULL)->offset % 4096, 0);
    /* b alone in its range: nothing else ever sits there */
    const mp_block *b = block_of(p, "b", NULL);
    for (uint32_t i = 0; i < mp_plan_num_blocks(p); i++) {
        const mp_block *o = &mp_plan_blocks(p)[i];
        if (o != b)
            CU_ASSERT(o->offset >= b->offset + b->size ||
                      b->offset >= o->offset + o->size);
    }
    /* without the rule, y (512) may reuse b's memory; move it there and
     * the checker names the violation */
    mp_block *y = (mp_block *)block_of(p, "y", NULL);
    y->offset = b->offset;
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_ERR_VERIFY);
    expect_msg("share memory with no other");
    mp_plan_destroy(p);
    /* the largest buffer */
    CU_ASSERT_EQUAL(mp_constraints_max_buffer(c, 4096), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    expect_msg("'a'");
    CU_ASSERT_EQUAL(mp_constraints_max_buffer(c, 0), MP_OK);
    mp_constraints_destroy(c);
    /* assignment: a forced into SRAM would exceed it; b forced to DRAM */
    c = two_pools(4096);
    CU_ASSERT_EQUAL(mp_constraints_assign(c, tid("a"), 0), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    expect_msg("sram");
    CU_ASSERT_EQUAL(mp_constraints_assign(c, tid("a"), 1), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_assign(c, tid("c"), 1), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_assign(c, tid("b"), 7), MP_ERR_NOT_FOUND);
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    uint32_t ic;
    block_of(p, "c", &ic);
    CU_ASSERT_EQUAL(mp_plan_block_pool(p, ic), 1);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    done();
}

static void t_bad_args(void)
{
    build();
    mp_constraints *c = NULL;
    CU_ASSERT_EQUAL(mp_constraints_create(NULL, &c), MP_ERR_INVALID_ARG);
    CU_ASSERT_FATAL(mp_constraints_create(ctx, &c) == MP_OK);
    mp_pool_desc bad = {"p", 0, 1e9, 0};
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &bad, NULL), MP_ERR_INVALID_ARG);
    bad.capacity = 10;
    bad.bandwidth = 0;
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &bad, NULL), MP_ERR_INVALID_ARG);
    bad.bandwidth = 1;
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &bad, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_constraints_add_pool(c, &bad, NULL), MP_ERR_INVALID_ARG);
    expect_msg("already");
    CU_ASSERT_EQUAL(mp_constraints_pin(c, tid("a"), 3, 0), MP_ERR_NOT_FOUND);
    /* everything beyond the last pool's capacity */
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_plan_create_constrained(g, NULL, c, &p),
                    MP_ERR_INFEASIBLE);
    CU_ASSERT_PTR_NULL(p);
    double s;
    mp_constraints_destroy(c);
    CU_ASSERT_FATAL(mp_constraints_create(ctx, &c) == MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(p, c, &s), MP_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(mp_plan_num_pools(p), 1);
    mp_pool_info pi;
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 0, &pi), MP_OK);
    CU_ASSERT_EQUAL(pi.arena_bytes, mp_plan_figures(p)->arena_bytes);
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 1, &pi), MP_ERR_NOT_FOUND);
    mp_plan_destroy(p);
    mp_constraints_destroy(c);
    done();
}

/* Shape ranges: the same two-layer MLP at batch 1..8 built in memory; the
 * plan made at the bound 8 holds every batch up to 8, not 9. */
static mp_graph *mlp(mp_ctx *cx, int64_t batch)
{
    mp_graph *m = NULL;
    CU_ASSERT_FATAL(mp_graph_create(cx, &m) == MP_OK);
    int64_t dx[] = {batch, 64}, dw1[] = {64, 128}, dh[] = {batch, 128},
            dw2[] = {128, 32}, dy[] = {batch, 32};
    mp_tensor_desc td[] = {
        {"x", MP_DTYPE_FLOAT32, 2, dx, 0, MP_KIND_INPUT},
        {"w1", MP_DTYPE_FLOAT32, 2, dw1, 0, MP_KIND_WEIGHT},
        {"h", MP_DTYPE_FLOAT32, 2, dh, 0, MP_KIND_ACTIVATION},
        {"r", MP_DTYPE_FLOAT32, 2, dh, 0, MP_KIND_ACTIVATION},
        {"w2", MP_DTYPE_FLOAT32, 2, dw2, 0, MP_KIND_WEIGHT},
        {"y", MP_DTYPE_FLOAT32, 2, dy, 0, MP_KIND_OUTPUT}};
    uint32_t id[6];
    for (int i = 0; i < 6; i++)
        CU_ASSERT_FATAL(mp_graph_add_tensor(m, &td[i], &id[i]) == MP_OK);
    uint32_t i1[] = {id[0], id[1]}, i3[] = {id[3], id[4]};
    mp_node_desc n1 = {"fc1", "MatMul", NULL, i1, 2, &id[2], 1, 0};
    mp_node_desc n2 = {"relu", "Relu", NULL, &id[2], 1, &id[3], 1, 0};
    mp_node_desc n3 = {"fc2", "MatMul", NULL, i3, 2, &id[5], 1, 0};
    CU_ASSERT_FATAL(mp_graph_add_node(m, &n1, NULL) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_node(m, &n2, NULL) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_node(m, &n3, NULL) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_mark_output(m, id[5]) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(m) == MP_OK);
    return m;
}

static void t_ranges_built(void)
{
    mp_ctx *cx = mp_ctx_create(NULL);
    mp_graph *gb = mlp(cx, 8);
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.alignment = 64;
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(gb, &o, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(gb, p), MP_OK);
    for (int64_t b = 1; b <= 9; b++) {
        mp_graph *gs = mlp(cx, b);
        mp_status st = mp_plan_fits(p, gs);
        CU_ASSERT_EQUAL(st, b <= 8 ? MP_OK : MP_ERR_VERIFY);
        if (b == 9)
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(cx), "needs"));
        mp_graph_destroy(gs);
    }
    /* another model is refused */
    mp_graph *other = NULL;
    CU_ASSERT_FATAL(mp_graph_create(cx, &other) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(other) == MP_OK);
    CU_ASSERT_EQUAL(mp_plan_fits(p, other), MP_ERR_VERIFY);
    mp_graph_destroy(other);
    mp_plan_destroy(p);
    mp_graph_destroy(gb);
    mp_ctx_destroy(cx);
}

/* Shape ranges on a model with three symbolic dims (PaddleOCR's text
 * direction classifier: batch, height, width): planned at the bounds
 * (4, 48, 192), the plan verifies and holds every batch 1..4 with heights
 * 40 and 48 and widths 48..192 (below a height of 33 a 2x2 MaxPool meets
 * a height of 1, an error); a width of
 * 256 does not fit and is named. */
static void t_ranges_onnx(void)
{
    char buf[1024];
    if (!mp_onnx_available()) {
        printf("\n  skipped: built without ONNX\n");
        return;
    }
    const char *path = mp_test_corpus_file("models/paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                              buf, sizeof buf);
    if (!path)
        return;
    mp_ctx *cx = mp_ctx_create(NULL);
    const char *sym[3] = {"p2o.DynamicDimension.0", "p2o.DynamicDimension.1",
                          "p2o.DynamicDimension.2"};
    mp_dim_binding bound[3] = {{sym[0], 4}, {sym[1], 48}, {sym[2], 192}};
    mp_graph *gb = NULL;
    CU_ASSERT_FATAL(mp_graph_load_dims(cx, path, bound, 3, &gb) == MP_OK);
    mp_plan *p = NULL;
    CU_ASSERT_FATAL(mp_plan_create(gb, NULL, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(gb, p), MP_OK);
    mp_dim_binding sets[33 * 3];
    size_t n = 0;
    for (int b = 1; b <= 4; b++)
        for (int h = 40; h <= 48; h += 8)
            for (int w = 48; w <= 192; w += 48) {
                sets[3 * n] = (mp_dim_binding){sym[0], b};
                sets[3 * n + 1] = (mp_dim_binding){sym[1], h};
                sets[3 * n + 2] = (mp_dim_binding){sym[2], w};
                n++;
            }
    size_t failed = 99;
    CU_ASSERT_EQUAL(mp_plan_check_range(p, path, sets, 3, n, &failed), MP_OK);
    CU_ASSERT_EQUAL(failed, n);
    sets[3 * n] = (mp_dim_binding){sym[0], 4};
    sets[3 * n + 1] = (mp_dim_binding){sym[1], 48};
    sets[3 * n + 2] = (mp_dim_binding){sym[2], 256};
    CU_ASSERT_EQUAL(mp_plan_check_range(p, path, sets, 3, n + 1, &failed),
                    MP_ERR_VERIFY);
    CU_ASSERT_EQUAL(failed, n);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(cx), "its block holds"));
    mp_plan_destroy(p);
    mp_graph_destroy(gb);
    mp_ctx_destroy(cx);
}

/* light_inception_v1 with a 2 MiB SRAM beside DRAM: verified, SRAM within
 * capacity, estimated time below the DRAM-only plan's; with a compute
 * rate the same holds. */
static void t_inception(void)
{
    char buf[1024];
    if (!mp_onnx_available()) {
        printf("\n  skipped: built without ONNX\n");
        return;
    }
    const char *path = mp_test_corpus_file("models/onnx_light/light_inception_v1.onnx", buf,
                              sizeof buf);
    if (!path)
        return;
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_load(ctx, path, &g) == MP_OK);
    mp_constraints *c = two_pools(2 * MiB);
    mp_plan *p = NULL, *single = NULL;
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &single) == MP_OK);
    mp_pool_info si;
    CU_ASSERT_EQUAL(mp_plan_pool_info(p, 0, &si), MP_OK);
    CU_ASSERT(si.arena_bytes <= 2 * MiB && si.n_blocks > 0);
    double t2, t1;
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(p, c, &t2), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(single, c, &t1), MP_OK);
    printf("\n  inception_v1: sram %u blocks %llu B, est. %.3g s vs %.3g s "
           "DRAM only ", si.n_blocks, (unsigned long long)si.arena_bytes, t2, t1);
    CU_ASSERT(t2 < t1);
    mp_plan_destroy(p);
    CU_ASSERT_EQUAL(mp_constraints_compute_rate(c, 1e12), MP_OK);
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(p, c, &t2), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_estimate_seconds(single, c, &t1), MP_OK);
    CU_ASSERT(t2 < t1);
    /* pin the input at the top of SRAM's first MiB: honoured, verified */
    mp_plan_destroy(p);
    uint32_t in = MP_NONE;
    for (uint32_t t = 0; t < mp_graph_num_tensors(g) && in == MP_NONE; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(g, t, &ti);
        if (ti.kind == MP_KIND_INPUT && ti.bytes)
            in = t;
    }
    CU_ASSERT_FATAL(in != MP_NONE);
    CU_ASSERT_EQUAL(mp_constraints_pin(c, in, 1, 1 * MiB), MP_OK);
    CU_ASSERT_FATAL(mp_plan_create_constrained(g, NULL, c, &p) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_constraints(g, p, c), MP_OK);
    mp_plan_destroy(p);
    mp_plan_destroy(single);
    mp_constraints_destroy(c);
    done();
}

static CU_TestInfo tests[] = {
    {"two pools: capacity, verified, faster", t_two_pools},
    {"verifier checks every pool", t_verify_pools},
    {"pinned offsets", t_pins},
    {"no-share, alignment, assignment, largest buffer", t_rules},
    {"bad arguments", t_bad_args},
    {"shape ranges: built graphs", t_ranges_built},
    {"shape ranges: ONNX batch, height, width (corpus)", t_ranges_onnx},
    {"two pools on light_inception_v1 (corpus)", t_inception},
    CU_TEST_INFO_NULL};

void mp_register_pools(void) { mp_test_add_suite("pools", tests); }
