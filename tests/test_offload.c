/* OFFLOAD / PREFETCH steps: lifetimes, the verifier (hand-made good and
 * bad plans), and the offload planner under a budget. */
#include "planner.h"
#include "mp_glpk.h"
#include "support.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mp_ctx *ctx;
static mp_graph *g;

static uint32_t add_t(const char *name, mp_tensor_kind kind, uint64_t bytes)
{
    mp_tensor_desc d = {name, MP_DTYPE_UNDEFINED, -1, NULL, bytes, kind};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

static uint32_t add_n(const char *name, uint32_t *in, uint32_t nin,
                      uint32_t out, mp_phase ph)
{
    mp_node_desc d = {name, "Op", NULL, in, nin, &out, 1, ph};
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, &id), MP_OK);
    return id;
}

/* x -> n1 -> a -> n2 -> b -> n3 -> c -> n4(a, c) -> d (output) */
static uint32_t x, a, b, c, d, n1, n2, n3, n4;
static void build_chain(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    x = add_t("x", MP_KIND_INPUT, 100);
    a = add_t("a", MP_KIND_ACTIVATION, 1000);
    b = add_t("b", MP_KIND_ACTIVATION, 200);
    c = add_t("c", MP_KIND_ACTIVATION, 300);
    d = add_t("d", MP_KIND_ACTIVATION, 50);
    uint32_t i4[] = {a, c};
    n1 = add_n("n1", &x, 1, a, MP_PHASE_FORWARD);
    n2 = add_n("n2", &a, 1, b, MP_PHASE_FORWARD);
    n3 = add_n("n3", &b, 1, c, MP_PHASE_FORWARD);
    n4 = add_n("n4", i4, 2, d, MP_PHASE_BACKWARD);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, d), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
}

static void destroy(void)
{
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    g = NULL;
    ctx = NULL;
}

#define S(k, i) ((mp_step){MP_STEP_##k, (i)})

static mp_plan *offload_plan(void)
{
    mp_step *st = mp__alloc(ctx, 10 * sizeof *st);
    CU_ASSERT_FATAL(st != NULL);
    mp_step s[] = {S(COMPUTE, n1), S(FREE, x),     S(COMPUTE, n2),
                   S(OFFLOAD, a),  S(COMPUTE, n3), S(FREE, b),
                   S(PREFETCH, a), S(COMPUTE, n4), S(FREE, a),
                   S(FREE, c)};
    memcpy(st, s, sizeof s);
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.alignment = 1;
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp__plan_from_schedule(g, st, 10, &o, 0, &p), MP_OK);
    return p;
}

static void t_blocks(void)
{
    build_chain();
    mp_plan *p = offload_plan();
    /* a has two instances: [0.. OFFLOAD) and [PREFETCH .. FREE) */
    int n_a = 0;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *bl = &p->blocks[i];
        if (bl->tensor != a)
            continue;
        n_a++;
        CU_ASSERT(bl->first == 0 ? bl->end == 3 : (bl->first == 6 &&
                                                   bl->end == 8));
    }
    CU_ASSERT_EQUAL(n_a, 2);
    /* n3 runs without a: b + c = 500; the peak is at n4: a + c + d */
    CU_ASSERT_EQUAL(p->live[4], 500u);
    CU_ASSERT_EQUAL(p->fig.lower_bound_bytes, 1350u);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    /* the same graph without offload peaks at n3 with a + b + c */
    mp_plan_options o;
    mp_plan_options_init(&o);
    o.alignment = 1;
    CU_ASSERT_EQUAL(mp_plan_create(g, &o, &p), MP_OK);
    CU_ASSERT_EQUAL(p->fig.lower_bound_bytes, 1500u);
    mp_plan_destroy(p);
    destroy();
}

static void expect_reject(mp_plan *p, const char *needle)
{
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_ERR_VERIFY);
    if (!strstr(mp_ctx_message(ctx), needle)) {
        printf("\n  message: %s\n  expected: %s\n", mp_ctx_message(ctx),
               needle);
        CU_FAIL("message does not name the violation");
    }
}

static void t_reject_read_offloaded(void)
{
    build_chain();
    mp_plan *p = offload_plan();
    /* swap PREFETCH a and COMPUTE n4: n4 reads a while it is on host */
    mp_step tmp = p->steps[6];
    p->steps[6] = p->steps[7];
    p->steps[7] = tmp;
    expect_reject(p, "input 'a' is not resident");
    mp_plan_destroy(p);
    destroy();
}

static void t_reject_prefetch_not_on_host(void)
{
    build_chain();
    mp_plan *p = offload_plan();
    /* OFFLOAD a becomes a FREE: the later PREFETCH has no host copy */
    p->steps[3].kind = MP_STEP_FREE;
    expect_reject(p, "never offloaded");
    mp_plan_destroy(p);
    /* a PREFETCH of a resident tensor */
    p = offload_plan();
    p->steps[3] = S(PREFETCH, a);
    expect_reject(p, "already resident");
    mp_plan_destroy(p);
    /* an OFFLOAD of a tensor no longer resident */
    p = offload_plan();
    p->steps[1] = S(OFFLOAD, x);
    p->steps[2] = S(COMPUTE, n2);
    p->steps[3] = S(OFFLOAD, x);
    expect_reject(p, "");
    mp_plan_destroy(p);
    destroy();
}

static void t_schedule_rejects(void)
{
    build_chain();
    /* schedules that cannot give lifetimes */
    mp_step bad1[] = {S(COMPUTE, n1), S(PREFETCH, a)};
    mp_step bad2[] = {S(COMPUTE, n1), S(OFFLOAD, a), S(OFFLOAD, a)};
    mp_block *bl = NULL;
    uint32_t nb = 0;
    CU_ASSERT_EQUAL(mp__schedule_blocks(g, bad1, 2, 1, NULL, NULL, &bl, &nb, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "not on host"));
    CU_ASSERT_EQUAL(mp__schedule_blocks(g, bad2, 3, 1, NULL, NULL, &bl, &nb, NULL),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "not resident"));
    destroy();
}


/* Planner: x -> n1 -> a; x -> n2 -> b -> n3 -> c -> n4 -> e; (a, e) ->
 * n5 -> d (output); every node takes 1 s (given). Live bytes per
 * position: x+a, x+a+b, a+b+c (the peak, 2100), a+c+e, a+e+d. */
static uint32_t pa, pd;
static void build_gap(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t tx = add_t("x", MP_KIND_INPUT, 10);
    pa = add_t("a", MP_KIND_ACTIVATION, 1000);
    uint32_t tb = add_t("b", MP_KIND_ACTIVATION, 500);
    uint32_t tc = add_t("c", MP_KIND_ACTIVATION, 600);
    uint32_t te = add_t("e", MP_KIND_ACTIVATION, 100);
    pd = add_t("d", MP_KIND_ACTIVATION, 50);
    uint32_t i5[] = {pa, te};
    uint32_t ns[5];
    ns[0] = add_n("n1", &tx, 1, pa, MP_PHASE_FORWARD);
    ns[1] = add_n("n2", &tx, 1, tb, MP_PHASE_FORWARD);
    ns[2] = add_n("n3", &tb, 1, tc, MP_PHASE_FORWARD);
    ns[3] = add_n("n4", &tc, 1, te, MP_PHASE_FORWARD);
    ns[4] = add_n("n5", i5, 2, pd, MP_PHASE_BACKWARD);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(mp_graph_set_node_cost(g, ns[i], -1, -1, 1.0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, pd), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
}

static mp_device link_dev(double bw)
{
    mp_device dv;
    memset(&dv, 0, sizeof dv);
    snprintf(dv.name, sizeof dv.name, "unit");
    dv.flops_fp32 = 1e12;
    dv.mem_bw = 1e12;
    dv.h2d_bw = dv.d2h_bw = bw;
    dv.copy_engines = 2;
    return dv;
}

static int count_steps(const mp_plan *p, mp_step_kind k, uint32_t t)
{
    int n = 0;
    for (uint32_t s = 0; s < p->n_steps; s++)
        n += p->steps[s].kind == k && p->steps[s].index == t;
    return n;
}

static void t_planner_hidden(void)
{
    build_gap();
    mp_device dv = link_dev(1e6); /* a's copies take 1 ms each */
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.device = &dv;
    oo.budget = 1800;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = 1;
    mp_plan *p = NULL;
    mp_offload_result r;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(r.base_peak_bytes, 2100u);
    /* a leaves for n3 only (its copy is done by n3's start at 2 s and the
     * prefetch issued at n4's start is back long before n5): a+c+e */
    CU_ASSERT_EQUAL(r.peak_bytes, 1700u);
    CU_ASSERT_EQUAL(p->fig.lower_bound_bytes, 1700u);
    CU_ASSERT_EQUAL(r.n_offloaded, 1u);
    CU_ASSERT_EQUAL(r.bytes_to_host, 1000u);
    CU_ASSERT_EQUAL(r.bytes_to_device, 1000u);
    CU_ASSERT_EQUAL(count_steps(p, MP_STEP_OFFLOAD, pa), 1);
    CU_ASSERT_EQUAL(count_steps(p, MP_STEP_PREFETCH, pa), 1);
    CU_ASSERT_DOUBLE_EQUAL(r.compute_seconds, 5.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(r.exposed_seconds, 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(r.total_seconds, 5.0, 1e-12);
    mp_plan_destroy(p);
    /* a budget the plain plan meets: nothing moves */
    oo.budget = 2100;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(r.n_offloaded, 0u);
    CU_ASSERT_EQUAL(r.bytes_to_host, 0u);
    CU_ASSERT_EQUAL(count_steps(p, MP_STEP_OFFLOAD, pa), 0);
    mp_plan_destroy(p);
    /* no budget: nothing moves */
    oo.budget = 0;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(r.n_offloaded, 0u);
    CU_ASSERT_EQUAL(r.peak_bytes, 2100u);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
    destroy();
}

static void t_planner_exposed(void)
{
    build_gap();
    /* 500 B/s: each copy of a takes 2 s, more than the gap can hide. a
     * leaves for n2..n4: OFFLOAD before n2 waits for the copy issued when
     * n1 ends (1 s -> 3 s); the PREFETCH before n5 is issued at 6 s and
     * lands at 8 s. Exposed 2 + 2 s, total 9 s. */
    mp_device dv = link_dev(500);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.device = &dv;
    oo.budget = 1800;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = 1;
    mp_plan *p = NULL;
    mp_offload_result r;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(r.peak_bytes, 1150u); /* a + e + d at n5 */
    CU_ASSERT_EQUAL(count_steps(p, MP_STEP_OFFLOAD, pa), 1);
    CU_ASSERT_DOUBLE_EQUAL(r.exposed_seconds, 4.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r.total_seconds, 9.0, 1e-9);
    mp_plan_destroy(p);
    /* below what n5 itself needs: infeasible, the best peak reported */
    oo.budget = 1000;
    CU_ASSERT_EQUAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_ERR_INFEASIBLE);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(r.peak_bytes, 1150u);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "budget"));
    destroy();
}


/* The gap graph, byte-exact offsets and a budget of 1800 bytes. */
static void gap_setup(mp_plan_options *po, mp_offload_options *oo)
{
    build_gap();
    mp_plan_options_init(po);
    po->alignment = 1;
    mp_offload_options_init(oo);
    oo->budget = 1800;
}

/* The ILP on the same candidates reaches the hand-computed plans. */
static void t_planner_ilp(void)
{
    mp_plan_options po;
    mp_offload_options oo;
    gap_setup(&po, &oo);
    oo.ilp = 1;
    mp_plan *p = NULL;
    mp_offload_result r;
    mp_device fast = link_dev(1e6), slow = link_dev(500);
    oo.device = &fast;
    mp_status st = mp_offload_plan(g, &oo, &po, &p, &r);
    if (!mp__glpk_available()) {
        CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
        destroy();
        return;
    }
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(r.peak_bytes, 1700u);
    CU_ASSERT_DOUBLE_EQUAL(r.exposed_seconds, 0.0, 1e-12);
    CU_ASSERT_EQUAL(r.ilp_status, MP_SOLVE_OPTIMAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.solver, "ilp"));
    mp_plan_destroy(p);
    oo.device = &slow;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT_EQUAL(r.peak_bytes, 1150u);
    CU_ASSERT_DOUBLE_EQUAL(r.exposed_seconds, 4.0, 1e-9);
    mp_plan_destroy(p);
    destroy();
}

/* Joint keep / recompute / offload on the gap graph: with a fast link a's
 * copies hide in the gap (offload, 5 s, nothing recomputed); with a slow
 * one (2 s per copy of a) recomputing n1 (1 s) beats a 4 s stall. */
static void t_joint_gap(void)
{
    mp_plan_options po;
    mp_offload_options oo;
    gap_setup(&po, &oo);
    oo.recompute = 1;
    mp_device fast = link_dev(1e6), slow = link_dev(500);
    mp_plan *p = NULL;
    mp_offload_result r;
    oo.device = &fast;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT(r.peak_bytes <= 1800);
    CU_ASSERT_EQUAL(r.n_recomputed, 0u);
    CU_ASSERT_EQUAL(r.bytes_to_host, 1000u);
    CU_ASSERT_DOUBLE_EQUAL(r.total_seconds, 5.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r.offload_only_seconds, 5.0, 1e-9);
    mp_plan_destroy(p);
    oo.device = &slow;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    CU_ASSERT(r.peak_bytes <= 1800);
    CU_ASSERT_EQUAL(r.n_recomputed, 1u);
    CU_ASSERT_EQUAL(r.bytes_to_host, 0u);
    CU_ASSERT_DOUBLE_EQUAL(r.recompute_seconds, 1.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r.total_seconds, 6.0, 1e-9);
    /* offload alone stalls 4 s (both copies of a exposed) */
    CU_ASSERT_DOUBLE_EQUAL(r.offload_only_seconds, 9.0, 1e-9);
    CU_ASSERT_EQUAL(count_steps(p, MP_STEP_RECOMPUTE, 0), 1);
    mp_plan_destroy(p);
    destroy();
}

/* A U-shaped network (forward chain f_i, backward b_i reading b_{i+1} and
 * f_i) with sizes and times varying by layer: every joint plan (greedy and
 * ILP candidates, recompute only, recompute then offload) verifies, fits
 * and is never slower than offload only or recompute only; recomputing f_i
 * needs f_{i-1} resident, which the exclusions keep. */
static void t_joint_unet(void)
{
    enum { L = 12 };
    static const double links[] = {2e8, 2e9, 2e10};
    int mixed = 0;
    for (int li = 0; li < 3; li++) {
        int feasible = 0, any_rec = 0, any_off = 0;
        ctx = mp_ctx_create(NULL);
        CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
        uint32_t f[L + 1], bt[L + 1], nf[L + 1];
        char nm[32];
        f[0] = add_t("x", MP_KIND_INPUT, 1000);
        for (int i = 1; i <= L; i++) {
            snprintf(nm, sizeof nm, "f%d", i);
            f[i] = add_t(nm, MP_KIND_ACTIVATION,
                         (uint64_t)(1 + (i * 7) % 5) * 1000000);
            snprintf(nm, sizeof nm, "F%d", i);
            nf[i] = add_n(nm, &f[i - 1], 1, f[i], MP_PHASE_FORWARD);
            CU_ASSERT_EQUAL(mp_graph_set_node_cost(
                                g, nf[i], -1, -1, 1e-4 * (1 + (i * 3) % 4)),
                            MP_OK);
        }
        for (int i = L; i >= 1; i--) {
            snprintf(nm, sizeof nm, "g%d", i);
            bt[i] = add_t(nm, MP_KIND_ACTIVATION, 1000000);
            uint32_t in[2] = {i == L ? f[L] : bt[i + 1], f[i - 1]};
            snprintf(nm, sizeof nm, "B%d", i);
            uint32_t nb = add_n(nm, in, 2, bt[i], MP_PHASE_BACKWARD);
            CU_ASSERT_EQUAL(mp_graph_set_node_cost(g, nb, -1, -1, 2e-4),
                            MP_OK);
        }
        CU_ASSERT_EQUAL(mp_graph_mark_output(g, bt[1]), MP_OK);
        CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
        mp_device dv = link_dev(links[li]);
        mp_plan_options po;
        mp_plan_options_init(&po);
        mp_offload_options oo;
        mp_offload_options_init(&oo);
        oo.device = &dv;
        mp_offload_result r0;
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, &po, &p, &r0), MP_OK);
        mp_plan_destroy(p);
        for (int k = 5; k <= 8; k++) {
            oo.budget = r0.peak_bytes * (uint64_t)k / 10;
            oo.recompute = 1;
            mp_offload_result r;
            mp_status st = mp_offload_plan(g, &oo, &po, &p, &r);
            if (st == MP_ERR_INFEASIBLE)
                continue;
            CU_ASSERT_EQUAL_FATAL(st, MP_OK);
            CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
            CU_ASSERT(r.peak_bytes <= oo.budget);
            CU_ASSERT(r.offload_only_seconds >= 0 ||
                      r.recompute_only_seconds >= 0);
            if (r.offload_only_seconds >= 0)
                CU_ASSERT(r.total_seconds <=
                          r.offload_only_seconds * (1 + 1e-12));
            if (r.recompute_only_seconds >= 0)
                CU_ASSERT(r.total_seconds <=
                          r.recompute_only_seconds * (1 + 1e-12));
            CU_ASSERT(r.total_seconds >= r.compute_seconds);
            feasible++;
            any_rec |= r.n_recomputed > 0;
            any_off |= r.n_offloaded > 0;
            mixed |= r.n_recomputed > 0 && r.n_offloaded > 0;
            mp_plan_destroy(p);
            /* the offload-only plan is the one joint compared against */
            double t_off = r.offload_only_seconds;
            oo.recompute = 0;
            st = mp_offload_plan(g, &oo, &po, &p, &r);
            CU_ASSERT_EQUAL(st == MP_OK, t_off >= 0);
            if (st == MP_OK) {
                CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
                CU_ASSERT_DOUBLE_EQUAL(r.total_seconds, t_off, 1e-12);
                mp_plan_destroy(p);
            }
        }
        CU_ASSERT(feasible > 0);
        /* a slow link favours recompute, a fast one offload */
        if (li == 0)
            CU_ASSERT(any_rec);
        if (li == 2)
            CU_ASSERT(any_off);
        destroy();
    }
    /* and in between, some budget takes both */
    CU_ASSERT(mixed);
}

/* The command: plan --offload --budget on the gap graph as JSON. */
static const char *gap_json =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"gap\",\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"bytes\": 10, \"kind\": \"input\"},\n"
    "  {\"name\": \"a\", \"bytes\": 1000}, {\"name\": \"b\", \"bytes\": 500},\n"
    "  {\"name\": \"c\", \"bytes\": 600}, {\"name\": \"e\", \"bytes\": 100},\n"
    "  {\"name\": \"d\", \"bytes\": 50}],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"n1\", \"op\": \"Op\", \"inputs\": [\"x\"], \"outputs\": "
    "[\"a\"], \"cost\": {\"seconds\": 1}},\n"
    "  {\"name\": \"n2\", \"op\": \"Op\", \"inputs\": [\"x\"], \"outputs\": "
    "[\"b\"], \"cost\": {\"seconds\": 1}},\n"
    "  {\"name\": \"n3\", \"op\": \"Op\", \"inputs\": [\"b\"], \"outputs\": "
    "[\"c\"], \"cost\": {\"seconds\": 1}},\n"
    "  {\"name\": \"n4\", \"op\": \"Op\", \"inputs\": [\"c\"], \"outputs\": "
    "[\"e\"], \"cost\": {\"seconds\": 1}},\n"
    "  {\"name\": \"n5\", \"op\": \"Op\", \"inputs\": [\"a\", \"e\"], "
    "\"outputs\": [\"d\"], \"cost\": {\"seconds\": 1}}],\n"
    " \"outputs\": [\"d\"]}\n";

static void t_cli(void)
{
    char path[512], dev[512], cmd[4096], out[1 << 14];
    const char *p = mp_test_write_temp(".json", gap_json);
    CU_ASSERT_FATAL(p != NULL);
    snprintf(path, sizeof path, "%s", p);
    /* a device whose link takes 2 s for a's 1000 bytes */
    p = mp_test_write_temp(".json",
                           "{\"name\": \"slow\", \"flops\": {\"float32\": "
                           "1e12}, \"memory_bandwidth\": 1e12, "
                           "\"h2d_bandwidth\": 500, \"copy_engines\": 2}");
    CU_ASSERT_FATAL(p != NULL);
    snprintf(dev, sizeof dev, "%s", p);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1800 --align 1 --offload "
             "--offload-solver greedy --device '%s' --json --no-lints",
             MP_CLI_PATH, path, dev);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    mp_test_json *o = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mp_test_jget(o, "offload"));
    CU_ASSERT_EQUAL(mp_test_jint(o, "peak_bytes"), 1150);
    CU_ASSERT_EQUAL(mp_test_jint(o, "offload.bytes_to_host"), 1000);
    CU_ASSERT_EQUAL(mp_test_jint(o, "offload.bytes_to_device"), 1000);
    CU_ASSERT_EQUAL(mp_test_jtype(o, "offload.exposed_transfer_seconds"), 'r');
    CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(o, "offload.exposed_transfer_seconds"),
                           4.0, 1e-9);
    CU_ASSERT_STRING_EQUAL(mp_test_jstr(o, "offload.device"), "slow");
    mp_test_json_free(o);
    /* the default (auto = joint): recomputing n1 for 1 s beats the 4 s of
     * exposed copies; both alternatives reported */
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1800 --align 1 --offload --device '%s' "
             "--json --no-lints",
             MP_CLI_PATH, path, dev);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    o = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mp_test_jget(o, "offload"));
    CU_ASSERT_EQUAL(mp_test_jint(o, "offload.recomputed_nodes"), 1);
    CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(o, "offload.total_seconds"), 6.0,
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(o, "offload.offload_only_total_seconds"),
                           9.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(o, "offload.recompute_seconds"), 1.0,
                           1e-9);
    mp_test_json_free(o);
    /* an unknown offload solver is a usage error */
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1800 --offload-solver magic --no-lints "
             "2>/dev/null",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    /* the plan written by --offload verifies */
    char plan[600];
    snprintf(plan, sizeof plan, "%s.plan.json", path);
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1800 --align 1 --offload -o '%s' "
             "--no-lints > /dev/null && '%s' verify '%s' '%s' > /dev/null",
             MP_CLI_PATH, path, plan, MP_CLI_PATH, path, plan);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    /* infeasible budget: exit code 4 */
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1000 --align 1 --offload --no-lints "
             "2>/dev/null",
             MP_CLI_PATH, path);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 4);
    /* unknown device */
    snprintf(cmd, sizeof cmd,
             "'%s' plan '%s' --budget 1800 --offload --device v100 "
             "--no-lints 2>/dev/null",
             MP_CLI_PATH, path);
    CU_ASSERT_NOT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    remove(plan);
    remove(path);
    remove(dev);
}

static CU_TestInfo tests[] = {
    {"offload/prefetch give two instances and a lower peak", t_blocks},
    {"verifier rejects reading an offloaded tensor", t_reject_read_offloaded},
    {"verifier rejects bad offload/prefetch steps",
     t_reject_prefetch_not_on_host},
    {"lifetimes reject impossible transfers", t_schedule_rejects},
    {"planner: a copy hidden in the idle gap (by hand)", t_planner_hidden},
    {"planner: exposed copies and infeasible budget (by hand)",
     t_planner_exposed},
    {"planner: the ILP reaches the hand-computed plans", t_planner_ilp},
    {"joint: recompute or offload by the link's speed (by hand)",
     t_joint_gap},
    {"joint: U-net plans verify, never slower than either", t_joint_unet},
    {"memplan plan --offload --budget --device --json", t_cli},
    CU_TEST_INFO_NULL,
};

void mp_register_offload(void);
void mp_register_offload(void) { mp_test_add_suite("offload", tests); }
