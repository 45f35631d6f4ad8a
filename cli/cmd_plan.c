/* cmd_plan.c - memplan plan INPUT: plan a graph and report the figures. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

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
          "  -h, --help          show this help\n"
          "\n"
          "Examples:\n"
          "  memplan plan examples/resnet50.json\n"
          "  memplan plan examples/resnet50.json -o plan.json --align 64\n"
          "  memplan plan model.onnx --json --method size-bestfit\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
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

static int print_json(const mp_graph *g, const mp_plan *plan,
                      const peak_info *pk, const char *output)
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
    bad |= cli_json_set(o, "nodes", json_integer(mp_graph_num_nodes(g)));
    bad |= cli_json_set(o, "steps", json_integer(mp_plan_num_steps(plan)));
    bad |= cli_json_set(o, "alignment", cli_json_u64(f->alignment));
    bad |= cli_json_set(o, "persistent_bytes", cli_json_u64(f->persistent_bytes));
    bad |= cli_json_set(o, "lower_bound_bytes", cli_json_u64(f->lower_bound_bytes));
    bad |= cli_json_set(o, "arena_bytes", cli_json_u64(f->arena_bytes));
    bad |= cli_json_set(o, "peak_bytes", cli_json_u64(f->peak_bytes));
    bad |= cli_json_set(o, "no_reuse_bytes", cli_json_u64(f->no_reuse_bytes));
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
    if (bad) {
        json_decref(o);
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    return cli_json_print(o);
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
    cli_solve_args a = {NULL, 0, opt.alignment, opt.method, opt.seed,
                        opt.time_limit};
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("plan", argc, argv, cli_solve_opts, cli_solve_on_opt,
                       &a, pos, &n_pos, &want_help);
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

    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    peak_info pk;
    memset(&pk, 0, sizeof pk);
    mp_status st = mp_graph_load(ctx, input, &g);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, input);
        goto done;
    }
    st = mp_plan_create(g, &opt, &plan);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, input);
        goto done;
    }
    if (a.output) {
        st = mp_plan_save_json(plan, a.output);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, a.output);
            goto done;
        }
    }
    if (peak_collect(plan, &pk) != 0) {
        cli_error("out of memory");
        rc = CLI_EXIT_INTERNAL;
        goto done;
    }
    if (a.json) {
        rc = print_json(g, plan, &pk, a.output);
    } else {
        print_summary(g, plan, &pk, a.output);
        rc = CLI_EXIT_OK;
    }
done:
    free(pk.blocks);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
