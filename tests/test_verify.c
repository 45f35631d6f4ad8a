/* The verifier must accept good plans and reject hand-made bad ones, each
 * with a message naming the violation. */
#include "sched.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mp_ctx *ctx;
static mp_graph *g;
static mp_plan *p;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static void add_n(const char *name, uint32_t *in, uint32_t nin, uint32_t *out)
{
    mp_node_desc d = {name, "Op", NULL, in, nin, out, 1, MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, NULL), MP_OK);
}

/* chain x -> n1 -> a -> n2 -> b -> n3 -> c (output), plus skip x -> n3 */
static void setup(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, 1000);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 3000);
    uint32_t b = add_t("b", MP_KIND_ACTIVATION, 2000);
    uint32_t c = add_t("c", MP_KIND_ACTIVATION, 500);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, 700);
    uint32_t i1[] = {x, w}, o1[] = {a}, o2[] = {b}, i3[] = {b, x}, o3[] = {c};
    add_n("n1", i1, 2, o1);
    add_n("n2", o1, 1, o2);
    add_n("n3", i3, 2, o3);
    mp_graph_mark_output(g, c);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    CU_ASSERT_FATAL(mp_plan_create(g, &o, &p) == MP_OK);
    CU_ASSERT_FATAL(mp_verify_plan(g, p) == MP_OK);
}

static void teardown(void)
{
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static mp_block *blk(const char *tensor)
{
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (strcmp(g->tensors[p->blocks[i].tensor].name, tensor) == 0)
            return &p->blocks[i];
    CU_FAIL_FATAL("no block");
    return NULL;
}

static uint32_t step_of(mp_step_kind k, const char *name)
{
    for (uint32_t s = 0; s < p->n_steps; s++) {
        if (p->steps[s].kind != k)
            continue;
        const char *nm = k == MP_STEP_FREE ? g->tensors[p->steps[s].index].name
                                           : g->nodes[p->steps[s].index].name;
        if (strcmp(nm, name) == 0)
            return s;
    }
    CU_FAIL_FATAL("no step");
    return 0;
}

static void expect_reject(const char *needle)
{
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    if (!strstr(mp_ctx_message(ctx), needle)) {
        printf("\n  message: %s\n  expected to contain: %s\n",
               mp_ctx_message(ctx), needle);
        CU_FAIL("message does not name the violation");
    }
}

/* Each case tampers with a good plan. */
static void t_overlap(void)
{
    setup();
    /* a and b are live together at n2: put b on top of a */
    blk("b")->offset = blk("a")->offset;
    expect_reject("overlap");
    teardown();
}

static void t_outside_arena(void)
{
    setup();
    p->fig.arena_bytes -= 256;
    p->fig.peak_bytes -= 256;
    expect_reject("outside the arena");
    teardown();
}

static void t_misaligned(void)
{
    setup();
    blk("c")->offset += 8;
    expect_reject("not aligned");
    teardown();
}

/* After tampering with the steps: blocks and figures re-derived from the
 * new schedule, blocks stacked without reuse, so that only the schedule is
 * wrong. */
static void rederive(void)
{
    mp__dealloc(ctx, p->blocks);
    mp__dealloc(ctx, p->live);
    CU_ASSERT_FATAL(mp__schedule_blocks(g, p->steps, p->n_steps, 256, NULL,
                                       NULL, &p->blocks, &p->n_blocks,
                                       NULL) == MP_OK);
    uint64_t off = 0;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        p->blocks[i].offset = off;
        off += p->blocks[i].size;
    }
    CU_ASSERT_FATAL(mp__blocks_live(ctx, p->blocks, p->n_blocks, p->n_steps,
                                   &p->live) == MP_OK);
    CU_ASSERT_FATAL(mp__plan_compute_figures(p) == MP_OK);
    p->fig.status = MP_SOLVE_FEASIBLE;
}

static void t_input_not_resident(void)
{
    setup();
    /* free x right after n1, although n3 reads it */
    uint32_t fx = step_of(MP_STEP_FREE, "x");
    uint32_t target = step_of(MP_STEP_COMPUTE, "n1") + 1;
    mp_step moved = p->steps[fx];
    memmove(&p->steps[target + 1], &p->steps[target],
            (fx - target) * sizeof *p->steps);
    p->steps[target] = moved;
    rederive();
    expect_reject("input 'x'");
    teardown();
}

static void t_rederived_is_valid(void)
{
    setup();
    rederive(); /* the untampered schedule, stacked: valid */
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    teardown();
}

static void t_never_computed(void)
{
    setup();
    uint32_t s = step_of(MP_STEP_COMPUTE, "n3");
    memmove(&p->steps[s], &p->steps[s + 1],
            (p->n_steps - s - 1) * sizeof *p->steps);
    p->n_steps--;
    /* drop the FREE of b too (it then stays to the end) and re-derive */
    uint32_t fx = step_of(MP_STEP_FREE, "b");
    memmove(&p->steps[fx], &p->steps[fx + 1],
            (p->n_steps - fx - 1) * sizeof *p->steps);
    p->n_steps--;
    rederive();
    expect_reject("node 'n3' is never computed");
    teardown();
}

static void t_computed_twice(void)
{
    setup();
    uint32_t s = step_of(MP_STEP_COMPUTE, "n2");
    p->steps[step_of(MP_STEP_COMPUTE, "n3")].index = p->steps[s].index;
    expect_reject("n2");
    teardown();
}

static void t_wrong_lower_bound(void)
{
    setup();
    p->fig.lower_bound_bytes += 1;
    expect_reject("lower bound");
    teardown();
}

static void t_wrong_peak(void)
{
    setup();
    p->fig.peak_bytes -= 1;
    expect_reject("peak");
    teardown();
}

static void t_wrong_persistent(void)
{
    setup();
    p->fig.persistent_bytes = 0;
    p->fig.peak_bytes = p->fig.arena_bytes;
    expect_reject("persistent");
    teardown();
}

static void t_false_optimal(void)
{
    setup();
    /* enlarge the arena: move c to the top, then claim optimal */
    mp_block *c = blk("c");
    c->offset = p->fig.arena_bytes;
    p->fig.arena_bytes += c->size;
    p->fig.peak_bytes += c->size;
    p->fig.status = MP_SOLVE_OPTIMAL;
    expect_reject("optimal");
    teardown();
}

static void t_block_too_small(void)
{
    setup();
    mp_block *a = blk("a");
    a->size = 256; /* a needs 3000 bytes */
    p->fig.no_reuse_bytes = 0;
    expect_reject("size 256 bytes is smaller than the tensor: expected 3072");
    teardown();
}

static void t_block_end_mismatch(void)
{
    setup();
    blk("a")->end += 1;
    expect_reject("end");
    teardown();
}

static void t_output_freed(void)
{
    setup();
    /* append FREE c: the output must stay */
    p->steps[p->n_steps - 1].kind = MP_STEP_FREE;
    p->steps[p->n_steps - 1].index = blk("c")->tensor;
    expect_reject("");
    teardown();
}

static void t_extra_block(void)
{
    setup();
    /* duplicate a block: a second instance of a tensor at the same step */
    mp_block *nb = realloc(p->blocks, (p->n_blocks + 1) * sizeof *nb);
    CU_ASSERT_FATAL(nb != NULL);
    p->blocks = nb;
    p->blocks[p->n_blocks] = p->blocks[0];
    p->n_blocks++;
    expect_reject("two blocks");
    teardown();
}

static void t_offload_block_end(void)
{
    setup();
    /* OFFLOAD of the output c, whose block runs to the end */
    p->steps[p->n_steps - 1].kind = MP_STEP_OFFLOAD;
    p->steps[p->n_steps - 1].index = blk("c")->tensor;
    expect_reject("claims to end");
    teardown();
}

/* offsets verifier */
static void t_offsets(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_buffer b[3] = {{0, 10, 100, 0}, {5, 15, 100, 100}, {10, 20, 100, 0}};
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 1, 200), MP_OK);
    /* touching in time is not overlap ([0,10) and [10,20) share offset 0) */
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 100, 200), MP_OK);
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 1, 199), MP_ERR_VERIFY);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "buffer 1"));
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 64, 200), MP_ERR_VERIFY);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "multiple of 64"));
    b[1].offset = 99;
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 1, UINT64_MAX), MP_ERR_VERIFY);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "overlap"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "buffer 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "buffer 1"));
    b[1].offset = 100;
    b[2].end = 2; /* empty interval */
    CU_ASSERT_EQUAL(mp_offsets_verify(c, b, 3, 1, UINT64_MAX), MP_ERR_VERIFY);
    mp_ctx_destroy(c);
}

/* random rectangles: the sweep agrees with an O(n^2) check */
static void t_offsets_random(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    uint64_t seed = 99;
    for (int iter = 0; iter < 300; iter++) {
        mp_buffer b[24];
        size_t n = 2 + mp_test_rand(&seed) % 22;
        for (size_t i = 0; i < n; i++) {
            b[i].start = (int64_t)(mp_test_rand(&seed) % 30);
            b[i].end = b[i].start + 1 + (int64_t)(mp_test_rand(&seed) % 10);
            b[i].size = 1 + mp_test_rand(&seed) % 20;
            b[i].offset = mp_test_rand(&seed) % 200;
        }
        int brute = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (b[i].start < b[j].end && b[j].start < b[i].end &&
                    b[i].offset < b[j].offset + b[j].size &&
                    b[j].offset < b[i].offset + b[i].size)
                    brute = 1;
        mp_status st = mp_offsets_verify(c, b, n, 1, UINT64_MAX);
        CU_ASSERT_EQUAL(st, brute ? MP_ERR_VERIFY : MP_OK);
    }
    mp_ctx_destroy(c);
}

/* ---- memplan verify: the plans of the issue's examples -------------------- */
/* Plans examples/GRAPH.json (in-place reuse as given), lets `tamper`
 * change the plan, saves it and runs `memplan verify`: exit 5 and a
 * message containing `needle`. */
static void cli_case(const char *graph, int inplace,
                     void (*tamper)(const mp_graph *, mp_plan *),
                     const char *needle)
{
    char gpath[1024], cmd[4096], out[4096];
    snprintf(gpath, sizeof gpath, "%s/examples/%s", MP_SOURCE_DIR, graph);
    mp_ctx *c = mp_ctx_create(NULL);
    mp_graph *gg = NULL;
    mp_plan *pp = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(c, gpath, &gg), MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.inplace = inplace;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(gg, &o, &pp), MP_OK);
    tamper(gg, pp);
    const char *tmp = mp_test_write_temp(".json", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    char ppath[512];
    snprintf(ppath, sizeof ppath, "%s", tmp);
    CU_ASSERT_EQUAL_FATAL(mp_plan_save_json(pp, ppath), MP_OK);
    snprintf(cmd, sizeof cmd, "'%s' verify '%s' '%s' 2>&1", MP_CLI_PATH,
             gpath, ppath);
    int rc = mp_test_run(cmd, out, sizeof out);
    CU_ASSERT_EQUAL(rc, 5);
    if (rc != 5 || !strstr(out, needle)) {
        printf("\n  %s: exit %d: %s  expected exit 5 and: %s\n", graph, rc,
               out, needle);
        CU_FAIL("memplan verify does not reject the plan as it should");
    }
    remove(ppath);
    mp_plan_destroy(pp);
    mp_graph_destroy(gg);
    mp_ctx_destroy(c);
}

static mp_block *block_of(const mp_graph *gg, mp_plan *pp, const char *name)
{
    for (uint32_t i = 0; i < pp->n_blocks; i++)
        if (strcmp(gg->tensors[pp->blocks[i].tensor].name, name) == 0)
            return &pp->blocks[i];
    CU_FAIL_FATAL("no block");
    return NULL;
}

/* fc1's input x given 256 bytes at offset 0 and its output h1 put at 256:
 * their real bytes overlap, their blocks do not */
static void tamper_tiny_x(const mp_graph *gg, mp_plan *pp)
{
    block_of(gg, pp, "x")->offset = 0;
    block_of(gg, pp, "x")->size = 256;
    block_of(gg, pp, "h1")->offset = 256;
}

static void tamper_shrink(const mp_graph *gg, mp_plan *pp)
{
    (void)gg;
    pp->blocks[pp->n_blocks / 2].size -= 256;
}

static void tamper_grow(const mp_graph *gg, mp_plan *pp)
{
    /* one block 256 bytes larger, moved to the top of the arena, the
     * figures restated: only its size is wrong */
    mp_block *b = block_of(gg, pp, "s");
    b->offset = pp->fig.arena_bytes;
    b->size += 256;
    pp->fig.arena_bytes += b->size;
    pp->fig.peak_bytes += b->size;
    pp->fig.no_reuse_bytes += 256;
    pp->fig.status = MP_SOLVE_FEASIBLE;
}

static void tamper_huge(const mp_graph *gg, mp_plan *pp)
{
    block_of(gg, pp, "a1")->size = UINT64_MAX - 255; /* 2^64 - 256 */
}

static void tamper_align0(const mp_graph *gg, mp_plan *pp)
{
    (void)gg;
    pp->fig.alignment = 0;
}

static void tamper_infeasible(const mp_graph *gg, mp_plan *pp)
{
    (void)gg;
    pp->fig.status = MP_SOLVE_INFEASIBLE;
}

static void tamper_feasible(const mp_graph *gg, mp_plan *pp)
{
    (void)gg;
    CU_ASSERT_EQUAL(pp->fig.status, MP_SOLVE_OPTIMAL);
    pp->fig.status = MP_SOLVE_FEASIBLE;
}

static void tamper_seconds(const mp_graph *gg, mp_plan *pp)
{
    (void)gg;
    pp->fig.solve_seconds = -1.0;
}

static void tamper_fused_weight(const mp_graph *gg, mp_plan *pp)
{
    uint32_t w1;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(gg, "w1", &w1), MP_OK);
    pp->fused = mp__calloc(pp->ctx, gg->n_tensors, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pp->fused);
    pp->fused[w1] = 1;
}

static void t_cli_issue_cases(void)
{
    cli_case("tiny.json", 0, tamper_tiny_x,
             "block 0 (tensor 'x' from step 0): size 256 bytes is smaller "
             "than the tensor: expected 32768");
    cli_case("resnet50.json", 1, tamper_shrink, "is smaller than the tensor");
    cli_case("tiny.json", 1, tamper_grow,
             "(tensor 's' from step 4): size 33024 bytes is larger than the "
             "tensor: expected 32768");
    cli_case("tiny.json", 1, tamper_huge,
             "size 18446744073709551360 bytes is larger than the tensor");
    cli_case("tiny.json", 1, tamper_align0, "plan alignment is 0");
    cli_case("tiny.json", 1, tamper_infeasible, "plan status 'infeasible'");
    cli_case("tiny.json", 1, tamper_feasible,
             "plan claims to be feasible but its arena equals the lower "
             "bound");
    cli_case("tiny.json", 1, tamper_seconds, "plan solve time -1 seconds");
    cli_case("tiny.json", 1, tamper_fused_weight,
             "tensor 'w1' is marked fused but is a weight");
}

/* The claims the replay cannot see: each one alone is rejected. */
static void t_claims(void)
{
    setup();
    p->fig.peak_step = p->n_steps;
    expect_reject("not a step of the schedule");
    teardown();
    setup();
    /* a later step with as many live bytes is not the peak step */
    uint32_t s = p->fig.peak_step;
    p->fig.peak_step = s + 1;
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    teardown();
    setup();
    p->fig.status = MP_SOLVE_TIMEOUT;
    expect_reject("plan status 'timeout'");
    teardown();
    setup();
    p->fig.solve_seconds = NAN;
    expect_reject("not a finite non-negative number");
    teardown();
    setup();
    /* an in-place claim on a graph input's block */
    p->block_over = mp__alloc(ctx, p->n_blocks * sizeof *p->block_over);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->block_over);
    for (uint32_t i = 0; i < p->n_blocks; i++)
        p->block_over[i] = MP_NONE;
    p->block_over[blk("x") - p->blocks] = blk("a")->tensor;
    expect_reject("input tensor 'x' claims to be written in place");
    teardown();
}

/* x, w -> n1 (forward) -> a -> n2 (backward) -> gw; opt (optimizer) reads
 * w and gw, writing u (the output): opt updates w in place. The plan
 * recomputes n1 (it reads w) right before (before = 1) or right after
 * opt, the inputs it reads kept for it. */
static mp_status recompute_around_step(int before)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t x = add_t("x", MP_KIND_INPUT, 1000);
    uint32_t w = add_t("w", MP_KIND_WEIGHT, 700);
    uint32_t a = add_t("a", MP_KIND_ACTIVATION, 3000);
    uint32_t gw = add_t("gw", MP_KIND_GRADIENT, 700);
    uint32_t u = add_t("u", MP_KIND_ACTIVATION, 8);
    uint32_t i1[] = {x, w}, i3[] = {w, gw};
    add_n("n1", i1, 2, &a);
    mp_node_desc d2 = {"n2", "Op", NULL, &a, 1, &gw, 1, MP_PHASE_BACKWARD};
    mp_node_desc d3 = {"opt", "Op", NULL, i3, 2, &u, 1, MP_PHASE_OPTIMIZER};
    CU_ASSERT(mp_graph_add_node(g, &d2, NULL) == MP_OK);
    CU_ASSERT(mp_graph_add_node(g, &d3, NULL) == MP_OK);
    mp_graph_mark_output(g, u);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    CU_ASSERT_FATAL(mp_plan_create(g, NULL, &p) == MP_OK);
    CU_ASSERT_FATAL(mp_verify_plan(g, p) == MP_OK);
    /* the schedule rebuilt: n1 n2 FREE(a) [RE n1 FREE(a)] opt [RE n1
     * FREE(a)] FREE(gw) FREE(x) */
    uint32_t n1 = p->steps[step_of(MP_STEP_COMPUTE, "n1")].index;
    uint32_t n2 = p->steps[step_of(MP_STEP_COMPUTE, "n2")].index;
    uint32_t op = p->steps[step_of(MP_STEP_COMPUTE, "opt")].index;
    mp_step st[] = {
        {MP_STEP_COMPUTE, n1}, {MP_STEP_COMPUTE, n2}, {MP_STEP_FREE, a},
        {MP_STEP_COMPUTE, op}, {MP_STEP_RECOMPUTE, n1}, {MP_STEP_FREE, a},
        {MP_STEP_FREE, gw}, {MP_STEP_FREE, x}};
    if (before) { /* the recompute and its FREE before opt */
        mp_step o = st[3];
        st[3] = st[4];
        st[4] = st[5];
        st[5] = o;
    }
    uint32_t n = (uint32_t)(sizeof st / sizeof *st);
    mp_step *ns = mp__alloc(ctx, n * sizeof *ns);
    CU_ASSERT_FATAL(ns != NULL);
    memcpy(ns, st, sizeof st);
    mp__dealloc(ctx, p->steps);
    p->steps = ns;
    p->n_steps = n;
    rederive();
    return mp_verify_plan(g, p);
}

/* A recompute after the optimizer step that updated its weight in place
 * would read the new values: rejected, naming both steps; before the
 * step it is valid. */
static void t_read_after_update(void)
{
    CU_ASSERT_EQUAL(recompute_around_step(1), MP_OK);
    if (mp_ctx_status(ctx) != MP_OK)
        printf("\n  %s\n", mp_ctx_message(ctx));
    teardown();
    CU_ASSERT_EQUAL(recompute_around_step(0), MP_ERR_VERIFY);
    if (!strstr(mp_ctx_message(ctx), "step 4 (recompute node 'n1') reads "
                                     "'w' after the optimizer step at step "
                                     "3 ('opt')")) {
        printf("\n  message: %s\n", mp_ctx_message(ctx));
        CU_FAIL("message does not name the two steps");
    }
    teardown();
}

static CU_TestInfo tests[] = {
    {"rejects a recompute after its weight's update", t_read_after_update},
    {"rejects overlapping blocks", t_overlap},
    {"rejects a block outside the arena", t_outside_arena},
    {"rejects a misaligned offset", t_misaligned},
    {"stacked re-derived plan is valid", t_rederived_is_valid},
    {"rejects an input freed too early", t_input_not_resident},
    {"rejects a node never computed", t_never_computed},
    {"rejects a node computed twice", t_computed_twice},
    {"rejects a wrong lower bound", t_wrong_lower_bound},
    {"rejects a wrong peak", t_wrong_peak},
    {"rejects wrong persistent bytes", t_wrong_persistent},
    {"rejects a false optimality claim", t_false_optimal},
    {"rejects a block smaller than its tensor", t_block_too_small},
    {"rejects a block whose end disagrees", t_block_end_mismatch},
    {"rejects a freed graph output", t_output_freed},
    {"rejects a duplicated block", t_extra_block},
    {"rejects an offload whose block does not end there", t_offload_block_end},
    {"offsets verifier cases", t_offsets},
    {"offsets verifier vs brute force", t_offsets_random},
    {"claims: peak step, status, solve time, in place on an input", t_claims},
    {"memplan verify: exit 5 on the issue's broken plans", t_cli_issue_cases},
    CU_TEST_INFO_NULL,
};

void mp_register_verify(void) { mp_test_add_suite("verify", tests); }
