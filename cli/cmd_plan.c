/* cmd_plan.c - memplan plan INPUT: plan a graph and report the figures. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEAK_TOP 10

/* Arena blocks live at the peak step, largest first. */
typedef struct peak_info {
    uint32_t step;
    uint64_t live;
    const mp_block **blocks;
    uint32_t n;
} peak_info;

static int cmp_block(const void *pa, const void *pb)
{
    const mp_block *a = *(const mp_block *const *)pa;
    const mp_block *b = *(const mp_block *const *)pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->tensor > b->tensor) - (a->tensor < b->tensor);
}

static int peak_collect(const mp_plan *plan, peak_info *pk)
{
    const mp_figures *f = mp_plan_figures(plan);
    uint32_t nb = mp_plan_num_blocks(plan);
    const mp_block *blocks = mp_plan_blocks(plan);
    memset(pk, 0, sizeof *pk);
    pk->step = f->peak_step;
    if (pk->step >= mp_plan_num_steps(plan))
        return 0;
    pk->live = mp_plan_live_bytes(plan, pk->step);
    pk->blocks = malloc((nb ? nb : 1) * sizeof *pk->blocks);
    if (!pk->blocks)
        return -1;
    for (uint32_t i = 0; i < nb; i++)
        if (blocks[i].first <= pk->step && pk->step < blocks[i].end)
            pk->blocks[pk->n++] = &blocks[i];
    qsort(pk->blocks, pk->n, sizeof *pk->blocks, cmp_block);
    return 0;
}

static const char *tensor_name(const mp_graph *g, uint32_t t)
{
    mp_tensor_info ti;
    return mp_graph_tensor_info(g, t, &ti) == MP_OK ? ti.name : "?";
}

/* What runs at step s: "compute conv1 (Conv)" or "free t42". */
static void describe_step(const mp_graph *g, const mp_plan *plan, uint32_t s,
                          char *buf, size_t cap)
{
    const mp_step *st = &mp_plan_steps(plan)[s];
    mp_node_info ni;
    if ((st->kind == MP_STEP_COMPUTE || st->kind == MP_STEP_RECOMPUTE) &&
        mp_graph_node_info(g, st->index, &ni) == MP_OK)
        snprintf(buf, cap, "%s %s (%s)", mp_step_kind_name(st->kind), ni.name,
                 ni.op);
    else
        snprintf(buf, cap, "%s %s", mp_step_kind_name(st->kind),
                 tensor_name(g, st->index));
}

static void lints_json(mp__jw *w, const mp_graph *g, const mp_lints *l)
{
    mp__jw_key(w, "lints");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < mp_lints_count(l); i++) {
        const mp_lint *x = mp_lints_get(l, i);
        cli_json_object(w, NULL);
        cli_json_str(w, "kind", mp_lint_kind_name(x->kind));
        cli_json_u64(w, "bytes", x->bytes);
        cli_json_u64(w, "aux_bytes", x->aux_bytes);
        cli_json_real(w, "share", x->share);
        cli_json_str(w, "subject", x->subject);
        if (x->tensor != MP_NONE)
            cli_json_str(w, "tensor", tensor_name(g, x->tensor));
        cli_json_str(w, "message", x->message);
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

/* In-place blocks and fused tensors of a plan (issue 4). */
static void sharing_counts(const mp_graph *g, const mp_plan *plan,
                           uint32_t *n_over, uint32_t *n_fused)
{
    *n_over = *n_fused = 0;
    for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
        *n_over += mp_plan_block_over(plan, i) != MP_NONE;
    for (uint32_t t = 0; t < mp_graph_num_tensors(g); t++)
        *n_fused += (uint32_t)mp_plan_tensor_fused(plan, t);
}

/* The peak step, what runs there and the largest blocks live. */
static void peak_json(mp__jw *w, const mp_graph *g, const mp_plan *plan,
                      const peak_info *pk)
{
    char step[256] = "";
    if (pk->step < mp_plan_num_steps(plan))
        describe_step(g, plan, pk->step, step, sizeof step);
    cli_json_int(w, "peak_step", pk->step);
    cli_json_str(w, "peak_step_action", step);
    cli_json_u64(w, "peak_live_bytes", pk->live);
    cli_json_int(w, "peak_tensors_live", pk->n);
    mp__jw_key(w, "peak_tensors");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < pk->n && i < PEAK_TOP; i++) {
        const mp_block *bl = pk->blocks[i];
        cli_json_object(w, NULL);
        cli_json_str(w, "name", tensor_name(g, bl->tensor));
        cli_json_u64(w, "bytes", bl->size);
        cli_json_u64(w, "offset", bl->offset);
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

static int print_json(mp_ctx *ctx, const mp_graph *g, const mp_plan *plan,
                      const peak_info *pk, const cli_args *pa,
                      const mp_lints *lints, const cli_rewrites *rw)
{
    const mp_figures *f = mp_plan_figures(plan);
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_str(&w, "graph", mp_graph_name(g));
    cli_json_int(&w, "tensors", mp_graph_num_tensors(g));
    cli_json_int(&w, "unknown_shapes", (int64_t)mp_graph_unknown_shapes(g));
    cli_json_int(&w, "nodes", mp_graph_num_nodes(g));
    cli_json_int(&w, "steps", mp_plan_num_steps(plan));
    const cli_json_size sizes[] = {
        {"alignment", f->alignment},
        {"persistent_bytes", f->persistent_bytes},
        {"lower_bound_bytes", f->lower_bound_bytes},
        {"arena_bytes", f->arena_bytes},
        {"peak_bytes", f->peak_bytes},
        {"no_reuse_bytes", f->no_reuse_bytes},
    };
    cli_json_sizes(&w, sizes, sizeof sizes / sizeof sizes[0]);
    uint32_t n_over, n_fused;
    sharing_counts(g, plan, &n_over, &n_fused);
    cli_json_int(&w, "inplace_blocks", n_over);
    cli_json_int(&w, "fused_tensors", n_fused);
    if (pa->reorder) {
        cli_json_u64(&w, "order_lower_bound_before", f->order_lb_before);
        cli_json_u64(&w, "order_lower_bound_after", f->order_lb_after);
    }
    cli_json_ratio(&w, "ratio", f->arena_bytes, f->lower_bound_bytes);
    cli_json_str(&w, "status", mp_solve_status_name(f->status));
    cli_json_str(&w, "solver", f->solver);
    cli_json_real(&w, "solve_seconds", f->solve_seconds);
    peak_json(&w, g, plan, pk);
    if (pa->output)
        cli_json_str(&w, "plan_file", pa->output);
    if (pa->dot)
        cli_json_str(&w, "dot_file", pa->dot);
    if (pa->html)
        cli_json_str(&w, "html_file", pa->html);
    if (pa->trace)
        cli_json_str(&w, "trace_file", pa->trace);
    if (pa->memory_viz)
        cli_json_str(&w, "memory_viz_file", pa->memory_viz);
    if (lints)
        lints_json(&w, g, lints);
    cli_rewrites_json(rw, &w);
    cli_train_json(&pa->train, &w);
    cli_attention_json(pa, &w);
    cli_offload_json(&pa->offload, &w);
    return cli_json_print(&w);
}

#define LINTS_PER_KIND 5

static void print_lints(const mp_lints *l)
{
    int tty = isatty(fileno(stdout));
    printf("\n%slints%s (%u)\n", tty ? "\033[1m" : "", tty ? "\033[0m" : "",
           mp_lints_count(l));
    uint32_t n = mp_lints_count(l);
    for (uint32_t i = 0; i < n;) {
        const mp_lint *x = mp_lints_get(l, i);
        uint32_t j = i, shown = 0;
        uint64_t rest = 0;
        for (; j < n && mp_lints_get(l, j)->kind == x->kind; j++) {
            const mp_lint *y = mp_lints_get(l, j);
            if (shown++ >= LINTS_PER_KIND) {
                rest += y->bytes;
                continue;
            }
            printf("  %s%-13s%s ", tty ? "\033[33m" : "",
                   mp_lint_kind_name(y->kind), tty ? "\033[0m" : "");
            cli_fputs_safe(stdout, y->message);
            putchar('\n');
        }
        if (shown > LINTS_PER_KIND) {
            char b[96];
            printf("  %-13s ... and %u more (%s in all; --json lists every "
                   "one)\n", "", shown - LINTS_PER_KIND,
                   cli_size(rest, b, sizeof b));
        }
        i = j;
    }
}

static void print_summary(const mp_graph *g, const mp_plan *plan,
                          const peak_info *pk, const char *output,
                          const cli_rewrites *rw, int all_rewrites)
{
    const mp_figures *f = mp_plan_figures(plan);
    char b[96], safe[1024];
    const char *name = mp_graph_name(g);
    printf("graph        %s\n",
           name && *name ? cli_safe(name, safe, sizeof safe) : "(unnamed)");
    printf("tensors      %u\n", mp_graph_num_tensors(g));
    printf("nodes        %u (%u schedule steps)\n", mp_graph_num_nodes(g),
           mp_plan_num_steps(plan));
    cli_rewrites_print(rw, all_rewrites);
    printf("persistent   %s  weights, constants, optimizer state\n",
           cli_size(f->persistent_bytes, b, sizeof b));
    printf("lower bound  %s  max live arena bytes\n",
           cli_size(f->lower_bound_bytes, b, sizeof b));
    printf("arena        %s\n", cli_size(f->arena_bytes, b, sizeof b));
    printf("peak         %s  arena + persistent\n",
           cli_size(f->peak_bytes, b, sizeof b));
    printf("no reuse     %s  every arena tensor in its own memory\n",
           cli_size(f->no_reuse_bytes, b, sizeof b));
    uint32_t n_over, n_fused;
    sharing_counts(g, plan, &n_over, &n_fused);
    if (n_over || n_fused)
        printf("sharing      %u outputs written in place, %u tensors fused\n",
               n_over, n_fused);
    if (f->order_lb_before) {
        char b2[96];
        printf("reorder      lower bound %s with the given order, %s "
               "reordered\n",
               cli_size(f->order_lb_before, b, sizeof b),
               cli_size(f->order_lb_after, b2, sizeof b2));
    }
    cli_print_ratio(f->arena_bytes, f->lower_bound_bytes, "empty arena");
    printf("status       %s\n", mp_solve_status_name(f->status));
    printf("solver       %s (alignment %llu)\n", f->solver ? f->solver : "?",
           (unsigned long long)f->alignment);
    printf("seconds      %.3f\n", f->solve_seconds);
    if (pk->step < mp_plan_num_steps(plan)) {
        char step[256];
        describe_step(g, plan, pk->step, step, sizeof step);
        printf("\npeak at step %u of %u: %s\n", pk->step,
               mp_plan_num_steps(plan), cli_safe(step, safe, sizeof safe));
        printf("  %s live in the arena in %u tensors%s\n",
               cli_size(pk->live, b, sizeof b), pk->n,
               pk->n ? ", largest first:" : "");
        for (uint32_t i = 0; i < pk->n && i < PEAK_TOP; i++) {
            const mp_block *bl = pk->blocks[i];
            printf("  %-32s %s\n", cli_size(bl->size, b, sizeof b),
                   cli_safe(tensor_name(g, bl->tensor), safe, sizeof safe));
        }
        if (pk->n > PEAK_TOP)
            printf("  ... and %u more\n", pk->n - PEAK_TOP);
    }
    if (output)
        printf("\nplan written to %s\n", output);
}


/* The HTML report's options: the lints, the budget the plan was made
 * under (--budget) and, with --offload, the device that times the
 * recomputes and copies. */
static void html_options(const cli_args *a, const mp_lints *lints,
                         mp_html_options *ho)
{
    mp_html_options_init(ho);
    ho->lints = lints;
    if (cli_given(a, CLI_O_BUDGET))
        ho->budget = a->train.ropt.budget;
    if (a->offload.enabled)
        ho->device = &a->offload.dev;
}

/* -o, the lints, --dot, --html and --trace of a plan. */
static int write_outputs(mp_ctx *ctx, const cli_args *a, const mp_plan *plan,
                         mp_lints **lints)
{
    mp_status st;
    if (a->output && (st = mp_plan_save_json(plan, a->output)) != MP_OK)
        return cli_fail(ctx, st, a->output);
    if (!a->no_lints) {
        mp_lint_options lopt;
        mp_lint_options_init(&lopt);
        lopt.kv_context = a->kv_context;
        if ((st = mp_plan_lint(plan, &lopt, lints)) != MP_OK)
            return cli_fail(ctx, st, a->pos[0]);
    }
    if (a->dot && (st = mp_plan_write_dot(plan, a->dot, &a->dopt)) != MP_OK)
        return cli_fail(ctx, st, a->dot);
    if (a->html) {
        mp_html_options ho;
        html_options(a, *lints, &ho);
        if ((st = mp_plan_write_html(plan, a->html, &ho)) != MP_OK)
            return cli_fail(ctx, st, a->html);
    }
    if (a->trace && (st = mp_plan_write_trace(plan, a->trace, NULL)) != MP_OK)
        return cli_fail(ctx, st, a->trace);
    if (a->memory_viz &&
        (st = mp_plan_write_memory_viz(plan, a->memory_viz)) != MP_OK)
        return cli_fail(ctx, st, a->memory_viz);
    return 0;
}

/* The summary for humans, or --json. */
static int report(mp_ctx *ctx, const cli_args *a, const mp_graph *g,
                  const mp_plan *plan, const mp_lints *lints,
                  const cli_rewrites *rw)
{
    peak_info pk;
    if (peak_collect(plan, &pk) != 0) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    int rc = CLI_EXIT_OK;
    if (a->json) {
        rc = print_json(ctx, g, plan, &pk, a, lints, rw);
    } else {
        print_summary(g, plan, &pk, a->output, rw, a->show_rewrites);
        cli_attention_print(a);
        cli_train_summary(&a->train);
        cli_offload_summary(&a->offload);
        if (lints)
            print_lints(lints);
        if (a->dot)
            printf("DOT written to %s\n", a->dot);
        if (a->html)
            printf("HTML report written to %s\n", a->html);
        if (a->trace)
            printf("trace written to %s\n", a->trace);
        if (a->memory_viz)
            printf("memory snapshot written to %s (open it at "
                   "https://pytorch.org/memory_viz)\n", a->memory_viz);
    }
    free(pk.blocks);
    return rc;
}

int cli_cmd_plan(cli_args *a)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mp_plan_options opt;
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    cli_progress_install(ctx, a);
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    mp_lints *lints = NULL;
    cli_rewrites rw = {0};
    int rc = cli_load_graph(ctx, a, &g);
    if (!rc)
        rc = cli_rewrites_get(a, g, &rw);
    if (!rc)
        rc = cli_attention_prepare(ctx, a, &g, a->pos[0]);
    if (!rc)
        rc = cli_train_prepare(ctx, &a->train, &g, a->pos[0]);
    /* --time-limit counts from the start of the command: planning gets
     * what loading the graph left */
    if (a->time_limit > 0)
        a->time_limit = cli_time_left(&t0, a->time_limit);
    cli_plan_options(a, &opt);
    /* --dp, --pp: the distinct ranks' plans, reported by their own */
    int ranks = cli_given(a, CLI_O_DP) || cli_given(a, CLI_O_PP) ||
                cli_given(a, CLI_O_TP);
    if (!rc && ranks)
        rc = cli_parallel_plan(ctx, a, g, &opt);
    else if (!rc)
        rc = cli_make_plan(ctx, a, g, &opt, &plan, 1);
    if (!rc && !ranks)
        rc = write_outputs(ctx, a, plan, &lints);
    if (!rc && !ranks)
        rc = report(ctx, a, g, plan, lints, &rw);
    cli_rewrites_free(&rw);
    mp_lints_destroy(lints);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
