/* The HTML report (report/html.c) and the Chrome trace
 * (report/trace_json.c): structure, escaping, caps; and the report opened
 * in headless Chromium when /usr/bin/chromium (or $MEMPLAN_CHROMIUM) is
 * there (scripts/install-deps.sh installs it; skipped with a message
 * otherwise). */
#include "memplan/memplan.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mp_ctx *ctx;
static mp_graph *g;
static mp_plan *plan;

/* x -> r1 -> "a<b&c" -> r2 -> h2; add(h2, a<b&c) -> y (output); w weight.
 * t: the four tensors (may be NULL). */
static void build_graph(uint32_t *tt)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_name(g, "html \"test\""), MP_OK);
    int64_t dims[2] = {1, 1024};
    const char *names[] = {"x", "a<b&c", "h2", "y"};
    uint32_t t[4];
    for (int i = 0; i < 4; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_FLOAT32, 2, dims, 0,
                            i ? MP_KIND_ACTIVATION : MP_KIND_INPUT};
        CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &t[i]), MP_OK);
    }
    uint32_t i1[] = {t[0]}, o1[] = {t[1]}, i2[] = {t[1]}, o2[] = {t[2]},
             i3[] = {t[2], t[1]}, o3[] = {t[3]};
    mp_node_desc n1 = {"r1", "Relu", NULL, i1, 1, o1, 1, MP_PHASE_FORWARD};
    mp_node_desc n2 = {"r2", "Relu", NULL, i2, 1, o2, 1, MP_PHASE_FORWARD};
    mp_node_desc n3 = {"add", "Add", NULL, i3, 2, o3, 1, MP_PHASE_BACKWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &n1, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &n2, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &n3, NULL), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, t[3]), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    if (tt)
        memcpy(tt, t, sizeof t);
}

static void build(void)
{
    build_graph(NULL);
    mp_plan_options po;
    mp_plan_options_init(&po);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
}

static void teardown(void)
{
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    plan = NULL;
    g = NULL;
    ctx = NULL;
}

static const char *temp_path(const char *suffix)
{
    const char *p = mp_test_write_temp(suffix, "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static void test_html_structure(void)
{
    build();
    mp_lints *l = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, NULL, &l), MP_OK);
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path(".html"));
    mp_html_options ho;
    mp_html_options_init(&ho);
    ho.lints = l;
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(plan, path, &ho), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "<svg id=\"timeline\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<svg id=\"arena\""), 1);
    /* one rectangle per block, each with a tooltip */
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "class=\"blk\""),
                    mp_plan_num_blocks(plan));
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "<rect class=\"blk\""),
                    mp_plan_num_blocks(plan));
    /* stacked areas: input and activation and output present */
    CU_ASSERT_EQUAL(mp_test_count(s, "data-kind=\"input\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "data-kind=\"activation\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "data-kind=\"output\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "data-kind=\"gradient\""), 0);
    /* names escaped, never raw */
    CU_ASSERT(mp_test_count(s, "a&lt;b&amp;c") >= 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "a<b&c"), 0);
    CU_ASSERT(mp_test_count(s, "html &quot;test&quot;") >= 1);
    /* tooltip: name, size, producer, lifetime */
    CU_ASSERT(mp_test_count(s, "produced by Relu 'r1'") >= 1);
    CU_ASSERT(mp_test_count(s, "live steps ") >= 3);
    /* figures, peak table and lints */
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"figures\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"peak\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"lints\""), 1);
    CU_ASSERT(mp_test_count(s, "fragmentation") >= 1);
    char fig[64];
    snprintf(fig, sizeof fig, ">%llu<",
             (unsigned long long)mp_plan_figures(plan)->arena_bytes);
    CU_ASSERT(mp_test_count(s, fig) >= 1);
    /* self-contained: one inline script, no external reference */
    CU_ASSERT_EQUAL(mp_test_count(s, "<script>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<script"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "src="), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "href="), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "http"), mp_test_count(s, "xmlns=\"http://www.w3.org/2000/svg\""));
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"capped\""), 0);
    /* zoom, pan and search: the controls and the script behind them */
    CU_ASSERT_EQUAL(mp_test_count(s, "<input type=\"search\" class=\"q\""),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, "function search()"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "addEventListener(\"wheel\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "class=\"zreset\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<svg id=\"arena\" class=\"zoom\""), 1);
    /* every block bordered: the stroke is in the stylesheet */
    CU_ASSERT_EQUAL(mp_test_count(s, ".blk{stroke:#222;"), 1);
    /* nothing folded, no persistent tensor, no budget */
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"folded\""), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"persistent\""), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"budget\""), 0);
    free(s);
    /* capped: 2 rectangles and a note */
    ho.max_rects = 2;
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(plan, path, &ho), MP_OK);
    s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "<rect class=\"blk\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"capped\""), 1);
    free(s);
    remove(path);
    mp_lints_destroy(l);
    /* an unwritable path is an I/O error */
    CU_ASSERT_EQUAL(mp_plan_write_html(plan, "/nonexistent-dir/r.html", NULL),
                    MP_ERR_IO);
    teardown();
}

/* Rectangles of the arena drawing: no two whose steps overlap may overlap
 * in height (each block has its own bytes), and all lie in the frame. */
static void check_rects(const char *s)
{
    enum { MAXR = 64 };
    double r[MAXR][4], fr[4];
    int n = 0;
    const char *q = strstr(s, "<rect class=\"frame\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_EQUAL_FATAL(sscanf(q, "<rect class=\"frame\" x=\"%lf\" "
                                    "y=\"%lf\" width=\"%lf\" height=\"%lf\"",
                                 &fr[0], &fr[1], &fr[2], &fr[3]), 4);
    for (q = s; (q = strstr(q, "<rect class=\"blk\"")) && n < MAXR; q++, n++)
        CU_ASSERT_EQUAL_FATAL(sscanf(q, "<rect class=\"blk\" x=\"%lf\" "
                                        "y=\"%lf\" width=\"%lf\" "
                                        "height=\"%lf\"", &r[n][0], &r[n][1],
                                     &r[n][2], &r[n][3]), 4);
    CU_ASSERT(n >= 2);
    const double e = 0.02;
    for (int i = 0; i < n; i++) {
        CU_ASSERT(r[i][1] >= fr[1] - e);
        CU_ASSERT(r[i][1] + r[i][3] <= fr[1] + fr[3] + e);
        for (int j = 0; j < i; j++) {
            int tx = r[i][0] < r[j][0] + r[j][2] - e &&
                     r[j][0] < r[i][0] + r[i][2] - e;
            int ty = r[i][1] < r[j][1] + r[j][3] - e &&
                     r[j][1] < r[i][1] + r[i][3] - e;
            CU_ASSERT(!(tx && ty));
        }
    }
}

/* A --fuse plan: the fused tensor h2 has no rectangle and the report says
 * so; y written over a<b&c says it. A plan with two pools (x pinned at 0
 * of pool 0, a<b&c at 0 of pool 1, both live at step 0): the pools are
 * stacked, no rectangles overlap, each pool has its figure. */
static void test_html_fused_pools(void)
{
    uint32_t t[4];
    build_graph(t);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.fuse = 1;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_tensor_fused(plan, t[2]), 1);
    uint32_t over = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
        over += mp_plan_block_over(plan, i) != MP_NONE;
    CU_ASSERT_EQUAL(over, 1);
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path(".html"));
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(plan, path, NULL), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "<rect class=\"blk\""),
                    mp_plan_num_blocks(plan));
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"fused\">1 tensor inside fused"),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, "written in place over a&lt;b&amp;c"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"pools\""), 0);
    free(s);
    mp_plan_destroy(plan);
    plan = NULL;

    mp_constraints *c = mp_test_two_pools(ctx, "fast<0>", "slow", t[0], t[1]);
    po.fuse = 0;
    po.inplace = 0;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create_constrained(g, &po, c, &plan), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_num_pools(plan), 2);
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(plan, path, NULL), MP_OK);
    s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "<rect class=\"blk\""),
                    mp_plan_num_blocks(plan));
    check_rects(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"pools\">2 pools"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<line class=\"pool\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "class=\"poolname\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "<tr><th>pool "), 2);
    CU_ASSERT(mp_test_count(s, "in pool fast&lt;0&gt;") >= 1);
    CU_ASSERT(mp_test_count(s, "in pool slow") >= 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "fast<0>"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"fused\""), 0);
    mp_pool_info pi0, pi1;
    CU_ASSERT_EQUAL(mp_plan_pool_info(plan, 0, &pi0), MP_OK);
    CU_ASSERT_EQUAL(mp_plan_pool_info(plan, 1, &pi1), MP_OK);
    char fig[64];
    snprintf(fig, sizeof fig, ">%llu<", (unsigned long long)pi1.arena_bytes);
    CU_ASSERT(mp_test_count(s, fig) >= 1);
    CU_ASSERT_EQUAL(mp_plan_figures(plan)->arena_bytes,
                    pi0.arena_bytes + pi1.arena_bytes);
    free(s);
    remove(path);
    mp_constraints_destroy(c);
    teardown();
}

/* The report of a plan as a file: its text (free it). */
static char *report(const mp_plan *p, const mp_html_options *ho)
{
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path(".html"));
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(p, path, ho), MP_OK);
    char *s = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    remove(path);
    return s;
}

/* COMPUTE steps at which no block starts: what the report folds in a
 * plan without fused chains. */
static uint32_t steps_allocating_nothing(const mp_plan *p)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < mp_plan_num_steps(p); s++) {
        int starts = 0;
        for (uint32_t i = 0; i < mp_plan_num_blocks(p) && !starts; i++)
            starts = mp_plan_blocks(p)[i].first == s;
        n += mp_plan_steps(p)[s].kind == MP_STEP_COMPUTE && !starts;
    }
    return n;
}

/* A legend entry "<swatch> NAME &nbsp;". */
static int legend_has(const char *s, const char *name)
{
    char key[96];
    snprintf(key, sizeof key, "</span> %s &nbsp;", name);
    return mp_test_count(s, key);
}

static mp_graph *load_example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.json", MP_SOURCE_DIR, name);
    mp_graph *x = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load(ctx, path, &x), MP_OK);
    return x;
}

/* An inference plan of examples/: the persistent memory drawn as a band
 * under the arena (its bytes and label), the steps that allocate nothing
 * folded with their count, the modules grouped, the legend without
 * backward, optimizer or recompute colours, no budget, no table of
 * recomputes. */
static void test_html_inference(void)
{
    ctx = mp_ctx_create(NULL);
    g = load_example("transformer_block");
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &plan), MP_OK);
    const mp_figures *fg = mp_plan_figures(plan);
    CU_ASSERT_FATAL(fg->persistent_bytes > 0);
    char *s = report(plan, NULL);
    char key[160];
    snprintf(key, sizeof key, "<g id=\"persistent\" data-bytes=\"%llu\">",
             (unsigned long long)fg->persistent_bytes);
    CU_ASSERT_EQUAL(mp_test_count(s, key), 1);
    CU_ASSERT(mp_test_count(s, "<rect class=\"pband\"") >= 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"persistent-label\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "(outside the arena; "), 1);
    uint32_t nf = steps_allocating_nothing(plan);
    CU_ASSERT_FATAL(nf > 0);
    snprintf(key, sizeof key, "id=\"folded\" data-count=\"%u\">%u of %u "
             "steps allocate nothing", nf, nf, mp_plan_num_steps(plan));
    CU_ASSERT_EQUAL(mp_test_count(s, key), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "class=\"showfold\""), 1);
    /* the timeline of every step, hidden until the toggle */
    CU_ASSERT_EQUAL(mp_test_count(s, "<g class=\"tl-all\" "
                                     "style=\"display:none\">"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<g class=\"tl-fold\">"), 1);
    /* each block says its steps, for the script */
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "\" data-e=\""),
                    mp_plan_num_blocks(plan));
    /* legend: only what is drawn */
    CU_ASSERT_EQUAL(legend_has(s, "activation"), 1);
    CU_ASSERT_EQUAL(legend_has(s, "gradient"), 0);
    CU_ASSERT_EQUAL(legend_has(s, "recomputed"), 0);
    CU_ASSERT_EQUAL(legend_has(s, "prefetched"), 0);
    CU_ASSERT_EQUAL(legend_has(s, "weights (persistent)"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "optimizer state (persistent)"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "<span class=\"budgetkey\">"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "<line class=\"budget\""), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"changes\""), 0);
    /* modules: the name hierarchy, expandable */
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"groups\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<details><summary><span>attention"
                                     "</span>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<details><summary><span>self</span>"),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, "data-q=\"attention.self\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "data-q=\"attention.self.query\""), 1);
    free(s);
    teardown();
}

/* A training plan of examples/transformer_block.json under a budget that
 * recomputes: the budget in the header, the figures and as a line on both
 * drawings; one row per recomputed node; the legend with gradients,
 * optimizer state and recomputed blocks. Then offloaded under a budget:
 * one row per offload, timed on the device. */
static void test_html_budget(void)
{
    ctx = mp_ctx_create(NULL);
    mp_graph *fwd = load_example("transformer_block");
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_ADAM;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(fwd, &to, &g, NULL), MP_OK);
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    mp_remat_result r;
    CU_ASSERT_EQUAL_FATAL(mp_remat_plan(g, &ro, NULL, &plan, &r), MP_OK);
    uint64_t pers = mp_plan_figures(plan)->persistent_bytes;
    mp_plan_destroy(plan);
    plan = NULL;
    ro.budget = r.base_peak_bytes - (r.base_peak_bytes - pers) / 8;
    CU_ASSERT_EQUAL_FATAL(mp_remat_plan(g, &ro, NULL, &plan, &r), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, plan), MP_OK);
    CU_ASSERT_FATAL(r.n_recompute > 0);
    /* the nodes recomputed */
    uint32_t nodes = 0;
    for (uint32_t s = 0; s < mp_plan_num_steps(plan); s++) {
        const mp_step *st = &mp_plan_steps(plan)[s];
        int seen = 0;
        for (uint32_t q = 0; q < s && !seen; q++)
            seen = mp_plan_steps(plan)[q].kind == MP_STEP_RECOMPUTE &&
                   mp_plan_steps(plan)[q].index == st->index;
        nodes += st->kind == MP_STEP_RECOMPUTE && !seen;
    }
    mp_html_options ho;
    mp_html_options_init(&ho);
    ho.budget = ro.budget;
    char *s = report(plan, &ho);
    char key[160];
    CU_ASSERT_EQUAL(mp_test_count(s, "<p id=\"budget\">Planned under a budget "
                                     "of"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "class=\"fits\">fits, with"), 1);
    snprintf(key, sizeof key, "<tr><th>budget</th><td class=\"num\">");
    CU_ASSERT_EQUAL(mp_test_count(s, key), 1);
    snprintf(key, sizeof key, ">%llu<", (unsigned long long)ro.budget);
    CU_ASSERT(mp_test_count(s, key) >= 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<line class=\"budget\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "<span class=\"budgetkey\">"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"changes\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<table id=\"recomputed\">"), 1);
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "<tr class=\"rc\">"), nodes);
    snprintf(key, sizeof key, "%u recompute steps of %u nodes", r.n_recompute,
             nodes);
    CU_ASSERT_EQUAL(mp_test_count(s, key), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<table id=\"offloaded\">"), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "<th>extra time</th>"), 0);
    CU_ASSERT_EQUAL(legend_has(s, "gradient"), 1);
    CU_ASSERT_EQUAL(legend_has(s, "recomputed"), 1);
    CU_ASSERT_EQUAL(legend_has(s, "optimizer state (persistent)"), 1);
    CU_ASSERT(mp_test_count(s, "recomputed at step ") >= 1);
    free(s);
    /* a budget far above the peak is named, not drawn */
    ho.budget = mp_plan_figures(plan)->peak_bytes * 4;
    s = report(plan, &ho);
    CU_ASSERT_EQUAL(mp_test_count(s, "<line class=\"budget\""), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"budget-off\""), 1);
    free(s);
    mp_plan_destroy(plan);
    plan = NULL;

    /* offloaded under a budget, timed on the h200 */
    mp_device dev;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(ctx, "h200", &dev), MP_OK);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.budget = ro.budget;
    oo.device = &dev;
    mp_offload_result orr;
    CU_ASSERT_EQUAL_FATAL(mp_offload_plan(g, &oo, NULL, &plan, &orr), MP_OK);
    CU_ASSERT_FATAL(orr.n_offloaded > 0);
    ho.budget = oo.budget;
    ho.device = &dev;
    s = report(plan, &ho);
    CU_ASSERT_EQUAL(mp_test_count(s, "<table id=\"offloaded\">"), 1);
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(s, "<tr class=\"off\">"),
                    orr.n_offloaded);
    CU_ASSERT_EQUAL(mp_test_count(s, "<th>copy time (both ways)</th>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "ms of copies on h200"), 1);
    CU_ASSERT_EQUAL(legend_has(s, "prefetched"), 1);
    CU_ASSERT(mp_test_count(s, "prefetched from host at step ") >= 1);
    free(s);
    mp_graph_destroy(fwd);
    teardown();
}

/* The command passes --budget and the --offload device to the report. */
static void test_html_cli(void)
{
    char html[256], cmd[2048];
    snprintf(html, sizeof html, "%s", temp_path(".html"));
    snprintf(cmd, sizeof cmd, "'%s' plan '%s/examples/transformer_block.json' "
             "--train --budget 145MiB --offload --device h200 --html '%s' "
             ">/dev/null 2>&1", MP_CLI_PATH, MP_SOURCE_DIR, html);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, NULL, 0), 0);
    char *s = mp_test_slurp(html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "<p id=\"budget\">Planned under a budget "
                                     "of <b>145 MiB</b>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<tr><th>budget</th><td class=\"num\">"
                                     "145 MiB</td><td class=\"num\">"
                                     "152043520<"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<table id=\"offloaded\">"), 1);
    CU_ASSERT(mp_test_count(s, "ms of copies on h200") == 1);
    free(s);
    /* without --budget: no budget */
    snprintf(cmd, sizeof cmd, "'%s' plan '%s/examples/transformer_block.json' "
             "--train --html '%s' >/dev/null 2>&1", MP_CLI_PATH, MP_SOURCE_DIR,
             html);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, NULL, 0), 0);
    s = mp_test_slurp(html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"budget\""), 0);
    CU_ASSERT_EQUAL(mp_test_count(s, "<line class=\"budget\""), 0);
    free(s);
    remove(html);
}

/* The ranks of `plan --dp/--pp --html`: one page, every distinct rank's
 * timeline side by side on one scale, then its section; --trace one file
 * per distinct rank. The library call with NULL labels names them. */
static void test_html_ranks(void)
{
    char html[256], trace[256], cmd[2048];
    snprintf(html, sizeof html, "%s", temp_path(".html"));
    snprintf(trace, sizeof trace, "%s", temp_path(".json"));
    snprintf(cmd, sizeof cmd, "'%s' plan '%s/examples/transformer_block.json' "
             "--train --pp 2 --microbatches 4 --html '%s' --trace '%s' "
             ">/dev/null 2>&1", MP_CLI_PATH, MP_SOURCE_DIR, html, trace);
    CU_ASSERT_EQUAL_FATAL(mp_test_run(cmd, NULL, 0), 0);
    char *s = mp_test_slurp(html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "<h2>Side by side</h2>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<div class=\"rank-card\">"), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "<polyline class=\"ov-line\""), 2);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"plan-1\">ranks 0, stage 0</h2>"),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"plan-2\">ranks 1, stage 1</h2>"),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<section class=\"plan\""), 2);
    free(s);
    /* the traces: trace.rank0.json and trace.rank1.json */
    for (int r = 0; r < 2; r++) {
        char path[300];
        const char *dot = strrchr(trace, '.');
        snprintf(path, sizeof path, "%.*s.rank%d.json", (int)(dot - trace),
                 trace, r);
        char *t = mp_test_slurp(path);
        CU_ASSERT_PTR_NOT_NULL(t);
        if (t)
            CU_ASSERT(strstr(t, "traceEvents") != NULL);
        free(t);
        remove(path);
    }
    remove(html);
    /* the library: two plans, labels NULL; no plans refused */
    build();
    const mp_plan *two[2] = {plan, plan};
    CU_ASSERT_EQUAL(mp_plans_write_html(two, NULL, 2, html, NULL), MP_OK);
    s = mp_test_slurp(html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(mp_test_count(s, "id=\"plan-2\">plan 2</h2>"), 1);
    CU_ASSERT_EQUAL(mp_test_count(s, "<div class=\"rank-card\">"), 2);
    free(s);
    CU_ASSERT_EQUAL(mp_plans_write_html(two, NULL, 0, html, NULL),
                    MP_ERR_INVALID_ARG);
    const mp_plan *one_null[2] = {plan, NULL};
    CU_ASSERT_EQUAL(mp_plans_write_html(one_null, NULL, 2, html, NULL),
                    MP_ERR_INVALID_ARG);
    remove(html);
    teardown();
}

/* A chain of 30 Relus planned without in-place reuse: 30 in-place
 * findings, of which the report lists 20 and sums the other 10. */
static void test_html_lints_capped(void)
{
    ctx = mp_ctx_create(NULL);
    CU_ASSERT_EQUAL_FATAL(mp_graph_create(ctx, &g), MP_OK);
    int64_t dims[2] = {4, 256};
    uint32_t cur = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dims);
    for (int i = 0; i < 31; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "t%d", i);
        uint32_t t = mp_test_tensor(g, nm, MP_KIND_ACTIVATION, 2, dims);
        snprintf(nm, sizeof nm, "relu%d", i);
        mp_test_node(g, nm, "Relu", &cur, 1, &t, 1);
        cur = t;
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, cur), MP_OK);
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.inplace = 0;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &po, &plan), MP_OK);
    mp_lints *l = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_lint(plan, NULL, &l), MP_OK);
    uint32_t n = 0;
    for (uint32_t i = 0; i < mp_lints_count(l); i++)
        n += mp_lints_get(l, i)->kind == MP_LINT_INPLACE;
    CU_ASSERT_FATAL(n > 20);
    mp_html_options ho;
    mp_html_options_init(&ho);
    ho.lints = l;
    char *s = report(plan, &ho);
    char key[96];
    CU_ASSERT_EQUAL(mp_test_count(s, "<tr><td>inplace</td>"), 20);
    snprintf(key, sizeof key, "</td><td>and %u more of this kind", n - 20);
    CU_ASSERT_EQUAL(mp_test_count(s, "<tr class=\"more\"><td>inplace</td>"),
                    1);
    CU_ASSERT_EQUAL(mp_test_count(s, key), 1);
    free(s);
    mp_lints_destroy(l);
    teardown();
}

static void test_trace(void)
{
    build();
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path(".json"));
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_trace(plan, path, NULL), MP_OK);
    /* duplicate keys are an error of mp_test_json_load */
    mp_test_json *root = mp_test_json_load(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL_FATAL(mp_test_jtype(root, "traceEvents"), 'a');
    uint32_t nx = 0, nc = 0, nk = 0, compute = 0;
    int64_t live = 0;
    double last_ts = -1, sum_dur = 0;
    size_t n_ev = mp_test_jlen(root, "traceEvents");
    for (size_t i = 0; i < n_ev; i++) {
#define EV(key) "traceEvents[%zu]." key, i
        const char *ph = mp_test_jstr(root, EV("ph"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
        CU_ASSERT_EQUAL(mp_test_jtype(root, EV("pid")), 'i');
        if (strcmp(ph, "X") == 0) {
            char ts_t = mp_test_jtype(root, EV("ts"));
            char dur_t = mp_test_jtype(root, EV("dur"));
            CU_ASSERT_FATAL((ts_t == 'i' || ts_t == 'r') &&
                            (dur_t == 'i' || dur_t == 'r'));
            double ts = mp_test_jnum(root, EV("ts"));
            CU_ASSERT(ts >= last_ts);
            last_ts = ts;
            CU_ASSERT_EQUAL(mp_test_jtype(root, EV("name")), 's');
            CU_ASSERT_EQUAL(mp_test_jint(root, EV("args.step")), nx);
            if (mp_test_jint(root, EV("tid")) == 1) {
                compute++;
                sum_dur += mp_test_jnum(root, EV("dur"));
            }
            nx++;
        } else if (strcmp(ph, "C") == 0 &&
                   strcmp(mp_test_jstr(root, EV("name")),
                          "arena live bytes by kind") == 0) {
            /* the live bytes split by tensor kind: they sum to the total
             * counter's last value */
            int64_t sum = 0;
            static const char *const kinds[] = {"activation", "input",
                                                "gradient", "output"};
            for (int k = 0; k < 4; k++)
                if (mp_test_jtype(root, "traceEvents[%zu].args.%s", i,
                                  kinds[k]) == 'i')
                    sum += mp_test_jint(root, "traceEvents[%zu].args.%s", i,
                                        kinds[k]);
            CU_ASSERT_EQUAL(sum, live);
            CU_ASSERT_EQUAL(mp_test_jtype(root, EV("args.activation")), 'i');
            nk++;
        } else if (strcmp(ph, "C") == 0) {
            CU_ASSERT_EQUAL(mp_test_jtype(root, EV("args.live")), 'i');
            live = mp_test_jint(root, EV("args.live"));
            nc++;
        } else {
            CU_ASSERT_STRING_EQUAL(ph, "M");
        }
    }
    CU_ASSERT_EQUAL(nx, mp_plan_num_steps(plan));
    CU_ASSERT_EQUAL(compute, 3);
    CU_ASSERT_DOUBLE_EQUAL(sum_dur, 3.0, 1e-9);   /* 1 us per compute step */
    CU_ASSERT(nc >= 2);
    CU_ASSERT(nk >= 2);
    /* the backward node's category is its phase */
    int backward = 0;
    for (size_t i = 0; i < n_ev; i++) {
        const char *nm = mp_test_jstr(root, EV("name"));
        const char *cat = mp_test_jstr(root, EV("cat"));
        if (nm && cat && strcmp(nm, "add") == 0)
            backward = strcmp(cat, "backward") == 0;
    }
    CU_ASSERT(backward);
    mp_test_json_free(root);
    /* durations from the caller */
    double *sec = calloc(mp_plan_num_steps(plan), sizeof *sec);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
    for (uint32_t s = 0; s < mp_plan_num_steps(plan); s++)
        sec[s] = 0.5e-3;
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_trace(plan, path, sec), MP_OK);
    root = mp_test_json_load(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    n_ev = mp_test_jlen(root, "traceEvents");
    double end = 0;
    for (size_t i = 0; i < n_ev; i++) {
        const char *ph = mp_test_jstr(root, EV("ph"));
        if (strcmp(ph, "X") == 0) {
            CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(root, EV("dur")), 500.0, 1e-9);
            end = mp_test_jnum(root, EV("ts")) + 500.0;
        }
#undef EV
    }
    CU_ASSERT_DOUBLE_EQUAL(end, 500.0 * mp_plan_num_steps(plan), 1e-6);
    mp_test_json_free(root);
    free(sec);
    remove(path);
    teardown();
}

/* The DOM of the report opened at #find=query (dom: 1 MiB): n blocks
 * highlighted and the count as `count` says. */
static void find_in_chromium(const char *chrome, const char *flags,
                             const char *dir, const char *html,
                             const char *query, char *dom, int n,
                             const char *count)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s --user-data-dir=%s --dump-dom "
             "'file://%s#find=%s' 2>/dev/null", chrome, flags, dir, html,
             query);
    CU_ASSERT_EQUAL(mp_test_run(cmd, dom, 1 << 20), 0);
    CU_ASSERT_EQUAL(mp_test_count(dom, "class=\"blk hit\""), n);
    CU_ASSERT_EQUAL(mp_test_count(dom, count), 1);
}

/* Opens the report in headless Chromium: the DOM has both SVGs with every
 * rectangle, and a screenshot comes out as a PNG. */
static void test_chromium(void)
{
    const char *chrome = getenv("MEMPLAN_CHROMIUM");
    if (!chrome)
        chrome = "/usr/bin/chromium";
    if (access(chrome, X_OK) != 0) {
        fprintf(stderr, "\n  html/chromium: skipped: %s not found (install "
                        "chromium, or set MEMPLAN_CHROMIUM)\n", chrome);
        return;
    }
    build();
    char html[256], png[300], cmd[2048], dir[] = "/tmp/mp_chrome_XXXXXX";
    snprintf(html, sizeof html, "%s", temp_path(".html"));
    snprintf(png, sizeof png, "%s.png", html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_html(plan, html, NULL), MP_OK);
    const char *flags = "--headless --no-sandbox --disable-gpu "
                        "--disable-background-networking "
                        "--disable-component-update --disable-sync "
                        "--no-first-run";
    snprintf(cmd, sizeof cmd, "'%s' %s --user-data-dir=%s --dump-dom "
             "file://%s 2>/dev/null", chrome, flags, dir, html);
    char *dom = malloc(1 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dom);
    CU_ASSERT_EQUAL(mp_test_run(cmd, dom, 1 << 20), 0);
    CU_ASSERT_EQUAL(mp_test_count(dom, "<svg id=\"timeline\""), 1);
    CU_ASSERT_EQUAL(mp_test_count(dom, "<svg id=\"arena\""), 1);
    CU_ASSERT_EQUAL((uint32_t)mp_test_count(dom, "<rect class=\"blk\""),
                    mp_plan_num_blocks(plan));
    CU_ASSERT(mp_test_count(dom, "<path class=\"area\"") >= 2);
    CU_ASSERT_EQUAL(mp_test_count(dom, "class=\"blk hit\""), 0);
    /* #find=NAME runs the search: the block node r1 produces (its
     * tooltip names it) is highlighted and listed; y, written in place
     * over h2, is found by h2 with h2 */
    find_in_chromium(chrome, flags, dir, html, "R1", dom, 1,
                     "class=\"qn\">1 block matches<");
    CU_ASSERT_EQUAL(mp_test_count(dom, "<li>a&lt;b&amp;c "), 1);
    find_in_chromium(chrome, flags, dir, html, "h2", dom, 2,
                     "class=\"qn\">2 blocks match<");
    CU_ASSERT_EQUAL(mp_test_count(dom, "<li>h2 "), 1);
    CU_ASSERT_EQUAL(mp_test_count(dom, "<li>y "), 1);
    /* the wheel over the arena zooms it 1.25 times about the pointer and
     * the "zoom in" button both drawings 1.5 times more */
    FILE *hf = fopen(html, "a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    fputs("<script>var a = document.getElementById('arena'), "
          "r = a.getBoundingClientRect();\n"
          "a.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, "
          "clientX: r.left + 400, clientY: r.top + 200, bubbles: true, "
          "cancelable: true}));\n"
          "document.querySelector('.zin').click();</script>\n", hf);
    fclose(hf);
    snprintf(cmd, sizeof cmd, "'%s' %s --user-data-dir=%s --dump-dom "
             "file://%s 2>/dev/null", chrome, flags, dir, html);
    CU_ASSERT_EQUAL(mp_test_run(cmd, dom, 1 << 20), 0);
    CU_ASSERT_EQUAL(mp_test_count(dom, "<g class=\"view\" transform=\""
                                       "translate("), 2);
    CU_ASSERT_EQUAL(mp_test_count(dom, "scale(1.875 1.875)"), 1);
    CU_ASSERT_EQUAL(mp_test_count(dom, "scale(1.5 1.5)"), 1);
    free(dom);
    snprintf(cmd, sizeof cmd, "'%s' %s --user-data-dir=%s "
             "--window-size=1100,1200 --screenshot=%s file://%s "
             ">/dev/null 2>&1", chrome, flags, dir, png, html);
    CU_ASSERT_EQUAL(mp_test_run(cmd, NULL, 0), 0);
    FILE *f = fopen(png, "rb");
    unsigned char sig[8] = {0};
    CU_ASSERT_PTR_NOT_NULL(f);
    if (f) {
        CU_ASSERT_EQUAL(fread(sig, 1, 8, f), 8);
        fseek(f, 0, SEEK_END);
        CU_ASSERT(ftell(f) > 5000);   /* something was drawn */
        fclose(f);
    }
    CU_ASSERT(sig[0] == 0x89 && sig[1] == 'P' && sig[2] == 'N' && sig[3] == 'G');
    remove(png);
    remove(html);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(mp_test_run(cmd, NULL, 0), 0);
    teardown();
}

void mp_register_html(void)
{
    static CU_TestInfo tests[] = {
        {"html_structure", test_html_structure},
        {"html_fused_pools", test_html_fused_pools},
        {"html_inference", test_html_inference},
        {"html_budget", test_html_budget},
        {"html_lints_capped", test_html_lints_capped},
        {"html_cli", test_html_cli},
        {"html_ranks", test_html_ranks},
        {"trace", test_trace},
        {"chromium", test_chromium},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("html", tests);
}
