/* Checkmate's baselines (solvers/remat/remat_chen.c): chen-linear (its released
 * code's linearized Chen sqrt(n)) and the rules of the code of its
 * published max-batch figure, on a hand-made node-link training graph
 * whose checkpoints, ladder residency, recomputes and peaks are worked
 * out by hand below; every schedule is verified. */
#include "planner.h"
#include "remat.h"
#include "remat_chen.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checkmate's shape with 6 forward nodes: units (= node ids, topological)
 * 0..5 = f0..f5, 6 = loss, 7..12 = b5..b0; f_i -> f_(i+1), f5 -> loss;
 * b_i (unit 12 - i) reads f_i, f_(i-1) and the unit before it (b_(i+1),
 * or the loss for b5). Bytes: f_i = 1000 (6 - i), loss 10, unit 7 + j =
 * 100 (j + 1); cost_cpu of unit u = u + 1. skip_f4: b5 and b4 do not
 * read f4 (its last reader is then f5). */
static char *graph_text(int skip_f4)
{
    static const char *names[13] = {"f0", "f1", "f2", "f3", "f4",
                                    "f5", "loss", "b5", "b4", "b3",
                                    "b2", "b1", "b0"};
    size_t cap = 8192, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    n += (size_t)snprintf(s + n, cap - n,
                          "{\"directed\": true, \"multigraph\": false, "
                          "\"graph\": {\"name\": \"chain6\"}, \"nodes\": [");
    for (int u = 0; u < 13; u++) {
        long ram = u < 6 ? 1000L * (6 - u) : u == 6 ? 10 : 100L * (u - 6);
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"name\": \"%s\", \"backward\": %s, "
                              "\"cost_cpu\": %d, \"cost_ram\": %ld, "
                              "\"id\": %d}",
                              u ? ", " : "", names[u],
                              u >= 6 ? "true" : "false", u + 1, ram, u);
    }
    n += (size_t)snprintf(s + n, cap - n, "], \"links\": [");
    int first = 1;
#define LINK(a, b)                                                          \
    do {                                                                    \
        n += (size_t)snprintf(s + n, cap - n,                               \
                              "%s{\"source\": %d, \"target\": %d}",         \
                              first ? "" : ", ", (a), (b));                 \
        first = 0;                                                          \
    } while (0)
    for (int i = 0; i < 6; i++)
        LINK(i, i + 1); /* f_i -> f_(i+1), f5 -> loss */
    for (int i = 0; i < 6; i++) {
        int b = 12 - i;
        if (!(skip_f4 && i == 4))
            LINK(i, b);
        if (i > 0 && !(skip_f4 && i == 5))
            LINK(i - 1, b);
        LINK(b - 1, b);
    }
#undef LINK
    snprintf(s + n, cap - n, "]}\n");
    return s;
}

static mp_graph *load(mp_ctx *ctx, int skip_f4)
{
    char *text = graph_text(skip_f4);
    CU_ASSERT_FATAL(text != NULL);
    const char *p = mp_test_write_temp(".json", text);
    free(text);
    CU_ASSERT_FATAL(p != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    mp_graph *g = NULL;
    mp_status st = mp_graph_load(ctx, path, &g);
    remove(path);
    if (st)
        printf("\n  %s\n", mp_ctx_message(ctx));
    CU_ASSERT_FATAL(st == MP_OK);
    CU_ASSERT_FATAL(mp_graph_num_nodes(g) == 13);
    return g;
}

/* For each node (by id), the last stage (0-based count of COMPUTE steps
 * before it, less one) through which its output stays resident; -1:
 * never freed. RECOMPUTE steps counted in rec[]. */
static void residency(const mp_graph *g, const mp_plan *pl, int *through,
                      int *rec)
{
    for (int v = 0; v < 13; v++)
        through[v] = rec[v] = -1;
    uint32_t n = mp_plan_num_steps(pl);
    const mp_step *st = mp_plan_steps(pl);
    int computed = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (st[k].kind == MP_STEP_COMPUTE) {
            computed++;
        } else if (st[k].kind == MP_STEP_RECOMPUTE) {
            CU_ASSERT_FATAL(st[k].index < 13);
            rec[st[k].index] = computed; /* its stage: before COMPUTE */
        } else if (st[k].kind == MP_STEP_FREE) {
            mp_tensor_info ti;
            CU_ASSERT_FATAL(mp_graph_tensor_info(g, st[k].index, &ti) ==
                            MP_OK);
            CU_ASSERT_FATAL(ti.producer < 13);
            through[ti.producer] = computed - 1;
        }
    }
}

static mp_plan *plan(mp_graph *g, mp_remat_solver sv, uint64_t budget,
                     mp_status want, mp_remat_result *r)
{
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = sv;
    ro.budget = budget;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = 1;
    mp_plan *p = NULL;
    mp_status st = mp_remat_plan(g, &ro, &po, &p, r);
    CU_ASSERT_EQUAL(st, want);
    if (st == MP_OK) {
        CU_ASSERT_FATAL(p != NULL);
        CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    }
    return p;
}

/* T = 13 units, k = floor(sqrt(13)) = 3: checkpoints are units 2, 5, 8,
 * 11 (f2, f5, b4, b1). Tf = 6 forward units; segments [0,2), [2,5),
 * [5,8), [8,11), [11,7) (empty). What stays resident (x stays through
 * stage t when S[t+1][x] = 1 or stage t reads it; S[13] is empty):
 *   - checkpoints are striped (S[t][c] = 1 for t > c): f2, f5, b4 stay
 *     through stage 11 (their last readers: 10, 7, 9), and at the start
 *     of stage 12 they go; b1 is read by b0 in stage 12;
 *   - f4 is in segment [2,5): its ladder is t in [13 - 5, 13 - 1 - 2] =
 *     [8, 10], so S[10][f4] = 1 and f4 stays through stage 9 (b3), past
 *     its last reader b4 (stage 8);
 *   - every other value through its last reader: f0 12, f1 11, f3 9,
 *     loss 7, b5 8, b3 10, b2 11; b0 is the graph output.
 * Peak: stage 9 computes b3 with f0..f5 (21000), b4 (200) and b3 (300)
 * resident: 21500. Stage 8 (b4): f0..f5 + b5 100 + b4 200 = 21300. With
 * every value freed after its last reader (checkpoint-all, memplan's
 * semantics) the peak is stage 7: f0..f5, loss, b5 = 21110. Nothing is
 * recomputed: every column of S is one interval from the producer. */
static void test_hand(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, 0);
    mp_remat_result r;
    mp_plan *p = plan(g, MP_REMAT_CHEN_LINEAR, 0, MP_OK, &r);
    CU_ASSERT_STRING_EQUAL(r.solver, "chen-linear");
    CU_ASSERT_EQUAL(r.peak_bytes, 21500);
    CU_ASSERT_EQUAL(r.n_recompute, 0);
    CU_ASSERT_EQUAL(r.extra_cost, 0);
    int through[13], rec[13];
    residency(g, p, through, rec);
    static const int want[13] = {12, 11, 11, 9, 9, 11, 7, 8, 11, 10, 11, 12,
                                 -1};
    for (int v = 0; v < 13; v++) {
        CU_ASSERT_EQUAL(through[v], want[v]);
        CU_ASSERT_EQUAL(rec[v], -1);
        if (through[v] != want[v])
            printf("\n  node %d: resident through %d, want %d\n", v,
                   through[v], want[v]);
    }
    mp_plan_destroy(p);
    /* the same graph freed after last use: f4 through 8, f2 10, f5 7,
     * b4 9 */
    p = plan(g, MP_REMAT_NONE, 0, MP_OK, &r);
    CU_ASSERT_EQUAL(r.peak_bytes, 21110);
    residency(g, p, through, rec);
    CU_ASSERT_EQUAL(through[4], 8);
    CU_ASSERT_EQUAL(through[2], 10);
    CU_ASSERT_EQUAL(through[5], 7);
    CU_ASSERT_EQUAL(through[8], 9);
    mp_plan_destroy(p);
    /* a budget: the baseline is one schedule, met or not */
    p = plan(g, MP_REMAT_CHEN_LINEAR, 21500, MP_OK, &r);
    CU_ASSERT_EQUAL(r.peak_bytes, 21500);
    mp_plan_destroy(p);
    p = plan(g, MP_REMAT_CHEN_LINEAR, 21499, MP_ERR_INFEASIBLE, &r);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(r.min_peak_bytes, 21500);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Without b5 -> f4 and b4 -> f4, f4's last reader is f5 (stage 5): its
 * S column is [5, 5] (the forward block of [2,5) ends at t = 5) and the
 * ladder [8, 10] again, with a gap: S[8][f4] = 1 and S[7][f4] = 0 put
 * R[7][f4] = 1, so Checkmate's baseline recomputes f4 in stage 7 (from
 * f3, which S[7] holds: its reader b3 is at stage 9) and keeps it
 * through stage 9 though nothing reads it again. Extra cost = f4's cost
 * (cost_cpu 5). f4 is freed at the start of stage 6 (S[7][f4] = 0, stage
 * 6 does not read it). Stage 6: f0..f3, f5, loss = 19010; stage 7
 * recomputes f4: f0..f5 + loss = 21010, then b5: 21110; stage 9: 21500
 * as before. */
static void test_gap_recompute(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, 1);
    mp_remat_result r;
    mp_plan *p = plan(g, MP_REMAT_CHEN_LINEAR, 0, MP_OK, &r);
    CU_ASSERT_EQUAL(r.peak_bytes, 21500);
    CU_ASSERT_EQUAL(r.n_recompute, 1);
    CU_ASSERT_DOUBLE_EQUAL(r.extra_cost, mp_node_cost(g, 4), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(mp_node_cost(g, 4), 5, 1e-12);
    int through[13], rec[13];
    residency(g, p, through, rec);
    CU_ASSERT_EQUAL(rec[4], 7);
    CU_ASSERT_EQUAL(through[4], 9); /* the recomputed copy */
    /* where f4 is recomputed the live bytes are stage 7's before b5 */
    uint32_t n = mp_plan_num_steps(p);
    const mp_step *st = mp_plan_steps(p);
    uint32_t k = 0;
    while (k < n && st[k].kind != MP_STEP_RECOMPUTE)
        k++;
    CU_ASSERT_FATAL(k < n);
    CU_ASSERT_EQUAL(st[k].index, 4);
    CU_ASSERT_EQUAL(mp_plan_live_bytes(p, k), 21010);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The 2019 rules (MP__REMAT_CM_2019) with the one checkpoint f3: segments
 * [0,3) and [3,7). S columns (stages where the unit is held):
 *   f0: its readers' stages 1, 11, 12; forward block 1..3; ladder of
 *       [0,3): 13 - 3 .. 13 - 1 = 10..12 -> {1,2,3,10,11,12};
 *   f1: readers 2, 10, 11; block 2..3; ladder 10..12 -> {2,3,10,11,12};
 *   f2: readers 3, 9, 10; block 3; ladder 10..12 -> {3,9,10,11,12};
 *   f3: stripe 4..12; f4: readers 5, 7, 8, block 5..7, ladder of [3,7)
 *       6..9 -> 5..9; f5: 6..9; loss: 7..9 (ladder); b5: 8 and 9 (the
 *       backward block of [3,7): S[12-3][12-5]); b4: 9; b3: 10; b2: 11
 *       and 12 (backward block of [0,3)); b1: 12.
 * R: f2 is held at 9 but not 8, so stage 8 computes f2 and, as S[8]
 * holds neither, f1 and f0 before it; f0 and f1 are held at 10 but not
 * 9, so stage 9 computes them again: 5 recomputes, cost 1 + 2 + 3 + 1 +
 * 2 = 9. Peak: stage 11 (b1) with f0..f3 (18000), b2 400 and b1 500 =
 * 18900 (stage 8: 17110 when f1 is recomputed beside f0, f3, f4, f5, the
 * loss and b5). */
static void test_rules_2019(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, 0);
    mp__remat_prob p;
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 1, &p) == MP_OK);
    uint8_t ck[13] = {0};
    ck[3] = 1;
    mp__remat_out o;
    CU_ASSERT_FATAL(mp__remat_checkmate_fixed(&p, ck, MP__REMAT_CM_2019, &o) ==
                    MP_OK);
    CU_ASSERT_EQUAL(o.peak, 18900);
    CU_ASSERT_EQUAL(o.n_recompute, 5);
    CU_ASSERT_DOUBLE_EQUAL(o.extra_cost, 9, 1e-12);
    /* the recomputes, stage by stage */
    int stage = 0, got[5][2], n = 0;
    for (uint32_t k = 0; k < o.n_steps; k++) {
        if (o.steps[k].kind == MP_STEP_COMPUTE)
            stage++;
        else if (o.steps[k].kind == MP_STEP_RECOMPUTE && n < 5) {
            got[n][0] = stage;
            got[n++][1] = (int)o.steps[k].index;
        }
    }
    static const int want[5][2] = {{8, 0}, {8, 1}, {8, 2}, {9, 0}, {9, 1}};
    CU_ASSERT_EQUAL(n, 5);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(got[i][0], want[i][0]);
        CU_ASSERT_EQUAL(got[i][1], want[i][1]);
    }
    /* the one verifier replays it and counts the same peak */
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = 1;
    mp_plan *pl = NULL;
    CU_ASSERT_FATAL(mp__plan_from_schedule(g, o.steps, o.n_steps, &po,
                                          mp__now_seconds(), &pl) == MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, pl), MP_OK);
    CU_ASSERT_EQUAL(pl->fig.lower_bound_bytes, 18900);
    mp_plan_destroy(pl);
    /* the released rules on the same set: every value held from its
     * producer to its readers, nothing recomputed */
    CU_ASSERT_FATAL(mp__remat_checkmate_fixed(&p, ck, MP__REMAT_CM_RELEASED,
                                              &o) == MP_OK);
    CU_ASSERT_EQUAL(o.n_recompute, 0);
    mp__dealloc(ctx, o.steps);
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* The named 2019 baselines. cm-checkpoint-all: every forward unit is a
 * checkpoint, held to the end by its stripe; the peak is stage 11 (b1):
 * f0..f5 21000, b2 400, b1 500 = 21900 (at stage 12 S[13] is empty: f1..
 * f5 go at its start). cm-chen-sqrt: the six forward units are
 * articulation points, k = floor(sqrt(6)) = 2: checkpoints f1, f3, f5;
 * with the 2019 rules f4 is recomputed in stage 6 (held at 5 for f5 and
 * from 7 for b5, not at 6), f2 in 8 and f0 in 10 (cost 5 + 3 + 1 = 9);
 * peak stage 10 (b2): f0..f3 18000, f5 1000, b3 300, b2 400 = 19700.
 * cm-chen-greedy sweeps segment budgets 19700 x (0, 0.05, ..., 2.95);
 * within 19000 bytes its cheapest schedule checkpoints f1 and f3 (extra
 * cost 4, peak 18700); 18000 bytes are beyond every one of them. */
static void test_named_2019(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = load(ctx, 0);
    mp_remat_result r;
    mp_plan *pl = plan(g, MP_REMAT_CM_CHECKPOINT_ALL, 0, MP_OK, &r);
    CU_ASSERT_STRING_EQUAL(r.solver, "cm-checkpoint-all");
    CU_ASSERT_EQUAL(r.peak_bytes, 21900);
    CU_ASSERT_EQUAL(r.n_recompute, 0);
    mp_plan_destroy(pl);
    pl = plan(g, MP_REMAT_CM_CHEN_SQRT, 0, MP_OK, &r);
    CU_ASSERT_EQUAL(r.peak_bytes, 19700);
    CU_ASSERT_EQUAL(r.n_recompute, 3);
    CU_ASSERT_DOUBLE_EQUAL(r.extra_cost, 9, 1e-12);
    int through[13], rec[13];
    residency(g, pl, through, rec);
    CU_ASSERT_EQUAL(rec[4], 6);
    CU_ASSERT_EQUAL(rec[2], 8);
    CU_ASSERT_EQUAL(rec[0], 10);
    mp_plan_destroy(pl);
    /* greedy: the cheapest of its sweep within the budget */
    pl = plan(g, MP_REMAT_CM_CHEN_GREEDY, 19000, MP_OK, &r);
    CU_ASSERT_STRING_EQUAL(r.solver, "cm-chen-greedy");
    CU_ASSERT_EQUAL(r.peak_bytes, 18700);
    CU_ASSERT_DOUBLE_EQUAL(r.extra_cost, 4, 1e-12);
    mp_plan_destroy(pl);
    pl = plan(g, MP_REMAT_CM_CHEN_GREEDY, 18000, MP_ERR_INFEASIBLE, &r);
    CU_ASSERT_PTR_NULL(pl);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* A synthesized training graph (x[4,8] -> MatMul W1 -> Relu -> MatMul W2,
 * Adam): not mirrored like Checkmate's, and its graph output (the loss)
 * is read later by the loss gradient. Every baseline gives a schedule the
 * verifier accepts, and the output is computed once and never freed. */
static void test_training_graph(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *f = NULL, *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &f) == MP_OK);
    static const int64_t dims[6][2] = {{4, 8}, {8, 16}, {4, 16},
                                       {4, 16}, {16, 2}, {4, 2}};
    static const char *const names[6] = {"x", "W1", "h1", "h2", "W2", "y"};
    static const mp_tensor_kind kinds[6] = {
        MP_KIND_INPUT,      MP_KIND_WEIGHT,     MP_KIND_ACTIVATION,
        MP_KIND_ACTIVATION, MP_KIND_WEIGHT,     MP_KIND_ACTIVATION};
    uint32_t t[6];
    for (int i = 0; i < 6; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_FLOAT32, 2, dims[i], 0,
                            kinds[i]};
        CU_ASSERT_FATAL(mp_graph_add_tensor(f, &d, &t[i]) == MP_OK);
    }
    uint32_t in1[2] = {t[0], t[1]}, in2[2] = {t[3], t[4]}, id;
    mp_node_desc n1 = {"mm1", "MatMul", NULL, in1, 2, &t[2], 1,
                       MP_PHASE_FORWARD};
    mp_node_desc n2 = {"relu", "Relu", NULL, &t[2], 1, &t[3], 1,
                       MP_PHASE_FORWARD};
    mp_node_desc n3 = {"mm2", "MatMul", NULL, in2, 2, &t[5], 1,
                       MP_PHASE_FORWARD};
    CU_ASSERT_FATAL(mp_graph_add_node(f, &n1, &id) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_node(f, &n2, &id) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_node(f, &n3, &id) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_mark_output(f, t[5]) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(f) == MP_OK);
    mp_train_options to;
    mp_train_options_init(&to);
    CU_ASSERT_FATAL(mp_train_graph(f, &to, &g, NULL) == MP_OK);
    uint32_t loss;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, "loss", &loss) == MP_OK);
    mp_tensor_info li;
    CU_ASSERT_FATAL(mp_graph_tensor_info(g, loss, &li) == MP_OK);
    for (int s = MP_REMAT_CHEN_LINEAR; s <= MP_REMAT_CM_CHEN_GREEDY; s++) {
        mp_remat_result r;
        mp_plan *pl = plan(g, (mp_remat_solver)s, 0, MP_OK, &r);
        CU_ASSERT_FATAL(pl != NULL);
        CU_ASSERT_TRUE(r.peak_bytes >= r.peak_lower_bound);
        int computed = 0, freed = 0;
        const mp_step *st = mp_plan_steps(pl);
        for (uint32_t k = 0; k < mp_plan_num_steps(pl); k++) {
            if (st[k].kind != MP_STEP_FREE && st[k].index == li.producer)
                computed++;
            if (st[k].kind == MP_STEP_FREE && st[k].index == loss)
                freed++;
        }
        CU_ASSERT_EQUAL(computed, 1);
        CU_ASSERT_EQUAL(freed, 0);
        mp_plan_destroy(pl);
    }
    mp_graph_destroy(g);
    mp_graph_destroy(f);
    mp_ctx_destroy(ctx);
}

/* A graph output read late: f0 (forward, a graph output, 1000 bytes) and
 * a backward chain b1..b5 (10 i bytes) where b1 and b3 read f0. With no
 * checkpoint the one segment is [0, Tf + 1) = [0, 2), and S holds f0 at
 * stages 1..2 (edges, forward block) and 4..5 (ladder) but not at 3,
 * where b3 reads it: Checkmate would free it and compute it again;
 * memplan never frees a graph output, so S holds it to the end and it is
 * computed once. b1, in the segment too, is held at 2 and by the ladder
 * at 4..5, not at 3: it is recomputed in stage 3 (both rule sets). Peak:
 * stage 5 (b5) with f0, b4 40 and b5 50 = 1090 (stage 4: f0, b1, b3, b4
 * = 1080). */
static void test_output_read_late(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t t[6], id;
    char nm[8];
    for (int i = 0; i < 6; i++) {
        snprintf(nm, sizeof nm, i ? "b%d" : "f0", i);
        mp_tensor_desc d = {nm, MP_DTYPE_UNDEFINED, -1, NULL,
                            i ? 10u * (uint64_t)i : 1000u,
                            i ? MP_KIND_GRADIENT : MP_KIND_ACTIVATION};
        CU_ASSERT_FATAL(mp_graph_add_tensor(g, &d, &t[i]) == MP_OK);
        uint32_t in[2] = {i ? t[i - 1] : 0, t[0]};
        mp_node_desc nd = {nm, "N", NULL, in, i == 3 ? 2u : i ? 1u : 0u,
                           &t[i], 1,
                           i ? MP_PHASE_BACKWARD : MP_PHASE_FORWARD};
        CU_ASSERT_FATAL(mp_graph_add_node(g, &nd, &id) == MP_OK);
    }
    CU_ASSERT_FATAL(mp_graph_mark_output(g, t[0]) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_mark_output(g, t[5]) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp__remat_prob p;
    CU_ASSERT_FATAL(mp__remat_prob_build(g, 1, &p) == MP_OK);
    uint8_t ck[6] = {0};
    for (int rules = MP__REMAT_CM_RELEASED; rules <= MP__REMAT_CM_2019;
         rules++) {
        mp__remat_out o;
        mp_status st = mp__remat_checkmate_fixed(&p, ck, rules, &o);
        if (st)
            printf("\n  %s\n", mp_ctx_message(ctx));
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT_EQUAL(o.n_recompute, 1);
        CU_ASSERT_EQUAL(o.peak, 1090);
        int f0 = 0, b1 = 0;
        for (uint32_t k = 0; k < o.n_steps; k++) {
            if (o.steps[k].kind == MP_STEP_FREE)
                continue;
            f0 += o.steps[k].index == 0;
            if (o.steps[k].index == 1)
                b1 = b1 * 10 + (o.steps[k].kind == MP_STEP_RECOMPUTE ? 2
                                                                      : 1);
        }
        CU_ASSERT_EQUAL(f0, 1);
        CU_ASSERT_EQUAL(b1, 12); /* computed, then recomputed */
        mp__dealloc(ctx, o.steps);
    }
    mp__remat_prob_free(&p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

static void test_name(void)
{
    static const struct {
        const char *name;
        mp_remat_solver s;
    } names[] = {{"chen-linear", MP_REMAT_CHEN_LINEAR},
                 {"cm-checkpoint-all", MP_REMAT_CM_CHECKPOINT_ALL},
                 {"cm-chen-sqrt", MP_REMAT_CM_CHEN_SQRT},
                 {"cm-chen-greedy", MP_REMAT_CM_CHEN_GREEDY}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        mp_remat_solver s;
        CU_ASSERT_EQUAL(mp_remat_solver_parse(names[i].name, &s), MP_OK);
        CU_ASSERT_EQUAL(s, names[i].s);
        CU_ASSERT_STRING_EQUAL(mp_remat_solver_name(names[i].s),
                               names[i].name);
    }
}

void mp_register_remat_chen(void);
void mp_register_remat_chen(void)
{
    static CU_TestInfo tests[] = {
        {"hand-made node-link graph: checkpoints, ladder, peak", test_hand},
        {"ladder after a gap: Checkmate's recompute", test_gap_recompute},
        {"2019 rules: gaps recomputed, by hand", test_rules_2019},
        {"2019 baselines by name", test_named_2019},
        {"a synthesized training graph", test_training_graph},
        {"a graph output read late is held", test_output_read_late},
        {"solver names", test_name},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("remat_chen", tests);
}
