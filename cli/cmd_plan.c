/* cmd_plan.c - memplan plan INPUT: plan a graph and report the figures. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEAK_TOP 10

static void help(void)
{
    fputs("Usage: memplan plan INPUT [-o PLAN.json] [--json] [--align N]\n"
          "                    [--method M] [--seed S] [--time-limit SEC]\n"
          "\n"
          "Loads a graph (ONNX when built with it, memplan JSON, or networkx\n"
          "node-link JSON), builds the default schedule (topological order,\n"
          "each arena tensor freed after its last use), places every tensor\n"
          "in one arena and prints the figures: persistent bytes (weights,\n"
          "constants), the lower bound (max live arena bytes), the arena, the\n"
          "peak (arena + persistent), and the step where live bytes peak with\n"
          "the largest tensors there.\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE   write the plan JSON (docs/plan-format.md)\n"
          "      --json          print one JSON object instead of the summary\n"
          "      --align N       arena alignment in bytes (default 256); units\n"
          "                      accepted, e.g. 4KiB\n"
          "      --method M      offsets method (default auto), one of:\n"
          "                      ",
          stdout);
    cli_print_methods(stdout);
    fputs("\n"
          "      --seed S        seed for randomized improvement (default 0)\n"
          "      --time-limit SEC  seconds for improvement passes\n"
          "      --dim NAME=VALUE  bind an ONNX symbolic dim (repeatable);\n"
          "                        INPUT:AXIS=VALUE binds a dim of a graph\n"
          "                        input (also a fixed one: re-batching)\n"
          "      --shape INPUT=D0xD1x...  the whole shape of a graph input\n"
          "                        (one declared with no shape; repeatable)\n"
          "      --dot FILE      write the graph as Graphviz DOT (render with\n"
          "                      dot -Tsvg); needs a build with Graphviz\n"
          "      --collapse PREFIX|DEPTH  in the DOT, draw the nodes whose name\n"
          "                      starts with PREFIX (comma-separated list), or\n"
          "                      each group of the first DEPTH name parts, as one\n"
          "      --html FILE     write the HTML report (timeline, arena layout,\n"
          "                      peak tensors, lints; one file, no network)\n"
          "      --trace FILE    write a Chrome trace (Perfetto) with a memory\n"
          "                      counter\n"
          "      --kv-context N  tokens for the KV-cache lint (default 4096)\n"
          "      --no-lints      skip the static lints\n"
          "      --no-inplace    no in-place reuse (by default an output may\n"
          "                      take over an input that dies at its node,\n"
          "                      where the op allows it)\n"
          "      --fuse          tensors inside fused pointwise chains take no\n"
          "                      memory (docs/memory-model.md)\n"
          "      --reorder       memory-aware operator order; reports the lower\n"
          "                      bound before and after\n"
          "  -h, --help          show this help\n"
          "\n",
          stdout);
    cli_train_help(stdout);
    fputs("Offload (docs/offload.md):\n"
          "      --offload       move idle tensors to host memory (OFFLOAD /\n"
          "                      PREFETCH steps) to fit --budget\n"
          "      --device D      cost model: h200 (default), h100, a100, l4,\n"
          "                      t4 or a device profile JSON\n"
          "      --offload-solver S  greedy, ilp (offload only), joint (per\n"
          "                      tensor keep / recompute / offload, the fastest\n"
          "                      plan on the device's cost model) or auto\n"
          "                      (default: joint unless --solver\n"
          "                      checkpoint-all forbids recompute)\n"
          "\n"
          "Examples:\n"
          "  memplan plan g.json --budget 12GiB --offload --device h200 --json\n"
          "  memplan plan examples/resnet50.json\n"
          "  memplan plan examples/resnet50.json -o plan.json --align 64\n"
          "  memplan plan model.onnx --json --method size-bestfit\n"
          "  memplan plan model.onnx --html report.html --dot g.dot --collapse 2\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

/* Options of plan beyond the shared solver ones (ids above theirs). */
enum { P_DOT = 1000, P_COLLAPSE, P_HTML, P_TRACE, P_KV, P_NOLINT };
enum { P_NOINPLACE = 1200, P_FUSE, P_REORDER }; /* issue 4 */
enum { P_OFFLOAD = 1100, P_DEVICE, P_OFFLOAD_SOLVER };
static const cli_opt plan_only_opts[] = {
    {"offload", 0, 0, P_OFFLOAD},
    {"device", 0, 1, P_DEVICE},
    {"offload-solver", 0, 1, P_OFFLOAD_SOLVER},
    {"dot", 0, 1, P_DOT},
    {"collapse", 0, 1, P_COLLAPSE},
    {"html", 0, 1, P_HTML},
    {"trace", 0, 1, P_TRACE},
    {"kv-context", 0, 1, P_KV},
    {"no-lints", 0, 0, P_NOLINT},
    {"no-inplace", 0, 0, P_NOINPLACE},
    {"fuse", 0, 0, P_FUSE},
    {"reorder", 0, 0, P_REORDER},
    {NULL, 0, 0, 0},
};

typedef struct plan_args {
    cli_train_args train;   /* issue 5 */
    cli_solve_args solve;
    const char *dot, *html, *trace;
    mp_dot_options dopt;
    uint64_t kv_context;
    int no_lints;
    int no_inplace, fuse, reorder; /* issue 4 */
    cli_offload_args offload; /* issue 8 */
} plan_args;

static int plan_on_opt(void *state, int id, const char *name,
                       const char *value)
{
    plan_args *a = state;
    switch (id) {
    case P_DOT: a->dot = value; return 0;
    case P_HTML: a->html = value; return 0;
    case P_TRACE: a->trace = value; return 0;
    case P_NOLINT: a->no_lints = 1; return 0;
    case P_NOINPLACE: a->no_inplace = 1; return 0;
    case P_FUSE: a->fuse = 1; return 0;
    case P_REORDER: a->reorder = 1; return 0;
    case P_OFFLOAD: a->offload.enabled = 1; return 0;
    case P_DEVICE: a->offload.device = value; return 0;
    case P_OFFLOAD_SOLVER:
        a->offload.solver = value;
        a->offload.enabled = 1;
        return cli_offload_check_solver(value, name);
    case P_KV: return cli_parse_u64(name, value, &a->kv_context);
    case P_COLLAPSE: {
        const char *p = value;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*value && !*p) {
            uint64_t d;
            int rc = cli_parse_u64(name, value, &d);
            if (rc)
                return rc;
            if (d == 0 || d > 64) {
                cli_error("bad value '%s' for %s: a depth from 1 to 64 or a "
                          "name prefix", value, name);
                return CLI_EXIT_USAGE;
            }
            a->dopt.collapse_depth = (uint32_t)d;
            a->dopt.collapse_prefix = NULL;
        } else {
            if (!*value) {
                cli_error("empty value for %s", name);
                return CLI_EXIT_USAGE;
            }
            a->dopt.collapse_prefix = value;
            a->dopt.collapse_depth = 0;
        }
        return 0;
    }
    default: {
        int trc = cli_train_on_opt(&a->train, id, name, value);
        if (trc >= 0)
            return trc;
        return cli_solve_on_opt(&a->solve, id, name, value);
    }
    }
}

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

static json_t *lints_json(const mp_graph *g, const mp_lints *l)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; arr && i < mp_lints_count(l); i++) {
        const mp_lint *x = mp_lints_get(l, i);
        json_t *e = json_object();
        int bad = !e;
        if (e) {
            bad |= cli_json_set(e, "kind", json_string(mp_lint_kind_name(x->kind)));
            bad |= cli_json_set(e, "bytes", cli_json_u64(x->bytes));
            bad |= cli_json_set(e, "aux_bytes", cli_json_u64(x->aux_bytes));
            bad |= cli_json_set(e, "share", json_real(x->share));
            bad |= cli_json_set(e, "subject", cli_json_str(x->subject));
            if (x->tensor != MP_NONE)
                bad |= cli_json_set(e, "tensor",
                                    cli_json_str(tensor_name(g, x->tensor)));
            bad |= cli_json_set(e, "message", cli_json_str(x->message));
            bad |= json_array_append_new(arr, e);
        }
        if (bad) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
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

static int print_json(const mp_graph *g, const mp_plan *plan,
                      const peak_info *pk, const char *output,
                      const plan_args *pa, const mp_lints *lints)
{
    const mp_figures *f = mp_plan_figures(plan);
    json_t *o = json_object();
    json_t *top = json_array();
    if (!o || !top) {
        json_decref(o);
        json_decref(top);
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    for (uint32_t i = 0; i < pk->n && i < PEAK_TOP; i++) {
        const mp_block *bl = pk->blocks[i];
        json_t *e = json_object();
        int bad = !e;
        if (e) {
            bad |= cli_json_set(e, "name", cli_json_str(tensor_name(g, bl->tensor)));
            bad |= cli_json_set(e, "bytes", cli_json_u64(bl->size));
            bad |= cli_json_set(e, "offset", cli_json_u64(bl->offset));
            bad |= json_array_append_new(top, e);   /* releases e on failure */
        }
        if (bad) {
            json_decref(o);
            json_decref(top);
            cli_error("out of memory");
            return CLI_EXIT_INTERNAL;
        }
    }
    char step[256] = "";
    if (pk->step < mp_plan_num_steps(plan))
        describe_step(g, plan, pk->step, step, sizeof step);
    int bad = 0;
    bad |= cli_json_set(o, "graph", cli_json_str(mp_graph_name(g)));
    bad |= cli_json_set(o, "tensors", json_integer(mp_graph_num_tensors(g)));
    bad |= cli_json_set(o, "unknown_shapes",
                        json_integer((json_int_t)mp_graph_unknown_shapes(g)));
    bad |= cli_json_set(o, "nodes", json_integer(mp_graph_num_nodes(g)));
    bad |= cli_json_set(o, "steps", json_integer(mp_plan_num_steps(plan)));
    bad |= cli_json_set(o, "alignment", cli_json_u64(f->alignment));
    bad |= cli_json_set(o, "persistent_bytes", cli_json_u64(f->persistent_bytes));
    bad |= cli_json_set(o, "lower_bound_bytes", cli_json_u64(f->lower_bound_bytes));
    bad |= cli_json_set(o, "arena_bytes", cli_json_u64(f->arena_bytes));
    bad |= cli_json_set(o, "peak_bytes", cli_json_u64(f->peak_bytes));
    bad |= cli_json_set(o, "no_reuse_bytes", cli_json_u64(f->no_reuse_bytes));
    uint32_t n_over, n_fused;
    sharing_counts(g, plan, &n_over, &n_fused);
    bad |= cli_json_set(o, "inplace_blocks", json_integer(n_over));
    bad |= cli_json_set(o, "fused_tensors", json_integer(n_fused));
    if (pa->reorder) {
        bad |= cli_json_set(o, "order_lower_bound_before",
                            cli_json_u64(f->order_lb_before));
        bad |= cli_json_set(o, "order_lower_bound_after",
                            cli_json_u64(f->order_lb_after));
    }
    bad |= cli_json_set(o, "ratio", cli_json_ratio(f->arena_bytes, f->lower_bound_bytes));
    bad |= cli_json_set(o, "status", json_string(mp_solve_status_name(f->status)));
    bad |= cli_json_set(o, "solver", cli_json_str(f->solver));
    bad |= cli_json_set(o, "solve_seconds", json_real(f->solve_seconds));
    bad |= cli_json_set(o, "peak_step", json_integer(pk->step));
    bad |= cli_json_set(o, "peak_step_action", cli_json_str(step));
    bad |= cli_json_set(o, "peak_live_bytes", cli_json_u64(pk->live));
    bad |= cli_json_set(o, "peak_tensors_live", json_integer(pk->n));
    bad |= cli_json_set(o, "peak_tensors", top);
    if (output)
        bad |= cli_json_set(o, "plan_file", cli_json_str(output));
    if (pa->dot)
        bad |= cli_json_set(o, "dot_file", cli_json_str(pa->dot));
    if (pa->html)
        bad |= cli_json_set(o, "html_file", cli_json_str(pa->html));
    if (pa->trace)
        bad |= cli_json_set(o, "trace_file", cli_json_str(pa->trace));
    if (lints)
        bad |= cli_json_set(o, "lints", lints_json(g, lints));
    bad |= cli_train_json(&pa->train, o);
    bad |= cli_offload_json(&pa->offload, o);
    if (bad) {
        json_decref(o);
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    return cli_json_print(o);
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
            printf("  %s%-13s%s %s\n", tty ? "\033[33m" : "",
                   mp_lint_kind_name(y->kind), tty ? "\033[0m" : "",
                   y->message);
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
                          const peak_info *pk, const char *output)
{
    const mp_figures *f = mp_plan_figures(plan);
    char b[96];
    const char *name = mp_graph_name(g);
    printf("graph        %s\n", name && *name ? name : "(unnamed)");
    printf("tensors      %u\n", mp_graph_num_tensors(g));
    printf("nodes        %u (%u schedule steps)\n", mp_graph_num_nodes(g),
           mp_plan_num_steps(plan));
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
               mp_plan_num_steps(plan), step);
        printf("  %s live in the arena in %u tensors%s\n",
               cli_size(pk->live, b, sizeof b), pk->n,
               pk->n ? ", largest first:" : "");
        for (uint32_t i = 0; i < pk->n && i < PEAK_TOP; i++) {
            const mp_block *bl = pk->blocks[i];
            printf("  %-32s %s\n", cli_size(bl->size, b, sizeof b),
                   tensor_name(g, bl->tensor));
        }
        if (pk->n > PEAK_TOP)
            printf("  ... and %u more\n", pk->n - PEAK_TOP);
    }
    if (output)
        printf("\nplan written to %s\n", output);
}

int cli_cmd_plan(int argc, char **argv)
{
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    plan_args pa;
    memset(&pa, 0, sizeof pa);
    pa.solve = (cli_solve_args){NULL, 0, opt.alignment, opt.method, opt.seed,
                                opt.time_limit};
    mp_dot_options_init(&pa.dopt);
    cli_train_init(&pa.train);
    cli_offload_init(&pa.offload);
    mp_lint_options lopt;
    mp_lint_options_init(&lopt);
    pa.kv_context = lopt.kv_context;
    cli_solve_args a;
    /* the shared solver options, then plan's own */
    cli_opt opts[48];
    size_t no = 0;
    for (const cli_opt *o = cli_solve_opts; o->name && no < 16; o++)
        opts[no++] = *o;
    for (const cli_opt *o = plan_only_opts; o->name && no < 31; o++)
        opts[no++] = *o;
    for (const cli_opt *o = cli_train_opts; o->name && no < 47; o++)
        opts[no++] = *o;
    opts[no] = (cli_opt){NULL, 0, 0, 0};
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    cli_dims dims;
    dims.n = 0;
    int rc = cli_parse_dims(&dims, "plan", argc, argv, opts, plan_on_opt, &pa, pos,
                       &n_pos, &want_help);
    a = pa.solve;
    if (rc)
        return rc;
    if (want_help) {
        help();
        return CLI_EXIT_OK;
    }
    if (n_pos != 1) {
        cli_error("plan: expected one INPUT graph, got %d arguments "
                  "(see 'memplan plan --help')",
                  n_pos);
        return CLI_EXIT_USAGE;
    }
    const char *input = pos[0];
    opt.alignment = a.alignment;
    opt.method = a.method;
    opt.seed = a.seed;
    opt.time_limit = a.time_limit;
    opt.inplace = !pa.no_inplace;
    opt.fuse = pa.fuse;
    opt.reorder = pa.reorder;

    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    mp_lints *lints = NULL;
    peak_info pk;
    memset(&pk, 0, sizeof pk);
    dims.batch = (int64_t)pa.train.batch; /* --batch: re-batch an ONNX model */
    mp_status st = cli_load_graph(ctx, input, &dims, 1, &g);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, input);
        goto done;
    }
    if ((rc = cli_train_prepare(ctx, &pa.train, &g, input)) != 0)
        goto done;
    if (pa.offload.enabled) {
        /* --offload: the offload planner under --budget */
        pa.offload.ropt = &pa.train.ropt;
        if ((rc = cli_offload_plan(ctx, &pa.offload, pa.train.ropt.budget, g,
                                   &opt, &plan, input)) != 0) {
            if (pa.offload.infeasible && a.json) {
                json_t *o = json_object();
                if (o &&
                    !cli_json_set(o, "graph", cli_json_str(mp_graph_name(g))) &&
                    !cli_offload_json(&pa.offload, o))
                    cli_json_print(o);
                else
                    json_decref(o);
            }
            goto done;
        }
    } else if ((rc = cli_train_plan(ctx, &pa.train, g, &opt, &plan,
                                    input)) != 0) {
        if (pa.train.infeasible && a.json) {
            json_t *o = json_object();
            if (o && !cli_json_set(o, "graph", cli_json_str(mp_graph_name(g))) &&
                !cli_train_json(&pa.train, o))
                cli_json_print(o);
            else
                json_decref(o);
        }
        goto done;
    }
    if (a.output) {
        st = mp_plan_save_json(plan, a.output);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, a.output);
            goto done;
        }
    }
    if (!pa.no_lints) {
        lopt.kv_context = pa.kv_context;
        st = mp_plan_lint(plan, &lopt, &lints);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, input);
            goto done;
        }
    }
    if (pa.dot) {
        st = mp_plan_write_dot(plan, pa.dot, &pa.dopt);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, pa.dot);
            goto done;
        }
    }
    if (pa.html) {
        mp_html_options ho;
        mp_html_options_init(&ho);
        ho.lints = lints;
        st = mp_plan_write_html(plan, pa.html, &ho);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, pa.html);
            goto done;
        }
    }
    if (pa.trace) {
        st = mp_plan_write_trace(plan, pa.trace, NULL);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, pa.trace);
            goto done;
        }
    }
    if (peak_collect(plan, &pk) != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_INTERNAL;
        goto done;
    }
    if (a.json) {
        rc = print_json(g, plan, &pk, a.output, &pa, lints);
    } else {
        print_summary(g, plan, &pk, a.output);
        cli_train_summary(&pa.train);
        cli_offload_summary(&pa.offload);
        if (lints)
            print_lints(lints);
        if (pa.dot)
            printf("DOT written to %s\n", pa.dot);
        if (pa.html)
            printf("HTML report written to %s\n", pa.html);
        if (pa.trace)
            printf("trace written to %s\n", pa.trace);
        rc = CLI_EXIT_OK;
    }
done:
    free(pk.blocks);
    mp_lints_destroy(lints);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
