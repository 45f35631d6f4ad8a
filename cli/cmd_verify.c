/* cmd_verify.c - memplan verify: check a plan or a trace's offsets. */
#include "cli.h"

#include <string.h>

enum { OPT_CAPACITY, OPT_ALIGN, OPT_DIM, OPT_SHAPE, OPT_BATCH };

static const cli_opt verify_opts[] = {
    {"capacity", 0, 1, OPT_CAPACITY},
    {"align", 0, 1, OPT_ALIGN},
    {"dim", 0, 1, OPT_DIM},
    {"shape", 0, 1, OPT_SHAPE},
    {"batch", 0, 1, OPT_BATCH},
    {NULL, 0, 0, 0},
};

typedef struct verify_args {
    uint64_t capacity;   /* UINT64_MAX: no limit */
    uint64_t alignment;
    int trace_opts;      /* --capacity or --align given */
    cli_dims dims;       /* --dim: ONNX symbolic dims */
} verify_args;

static int on_opt(void *state, int id, const char *name, const char *value)
{
    verify_args *a = state;
    if (id == OPT_DIM)
        return cli_parse_dim(&a->dims, name, value);
    if (id == OPT_SHAPE)
        return cli_parse_shape(&a->dims, value);
    if (id == OPT_BATCH)
        return cli_parse_batch(&a->dims, name, value);
    a->trace_opts = 1;
    switch (id) {
    case OPT_CAPACITY: return cli_parse_size(name, value, &a->capacity);
    case OPT_ALIGN: return cli_parse_size(name, value, &a->alignment);
    default: return CLI_EXIT_INTERNAL;
    }
}

static void help(void)
{
    fputs("Usage: memplan verify INPUT PLAN.json [--dim NAME=VALUE]... "
          "[--shape INPUT=D0xD1x...]...\n"
          "                      [--batch N]\n"
          "       memplan verify TRACE.csv [--capacity N] [--align N]\n"
          "\n"
          "With a graph and a plan: replays the plan against the graph and\n"
          "checks every invariant (each input of a step is resident when it\n"
          "runs, every arena tensor is placed, no two resident tensors overlap,\n"
          "every block lies in the arena and is aligned, the plan's figures\n"
          "equal the replayed ones).\n"
          "\n"
          "With one trace (id,lower,upper,size,offset CSV, as written by\n"
          "'memplan offsets -o'): checks that buffers live at the same time do\n"
          "not overlap, that offsets are aligned and that every buffer ends\n"
          "within the capacity.\n"
          "\n"
          "Prints 'valid: ...' and exits 0 when valid; otherwise prints the\n"
          "first violation to stderr and exits 5.\n"
          "\n"
          "The model is loaded as plan loads it: --dim, --shape and --batch N\n"
          "(an ONNX model re-batched to N, see 'memplan plan --help').\n"
          "\n"
          "Options (trace only):\n"
          "      --capacity N    arena size every buffer must fit in (default:\n"
          "                      no limit); units accepted, e.g. 1MiB\n"
          "      --align N       required offset alignment (default 1)\n"
          "  -h, --help          show this help\n"
          "\n"
          "Examples:\n"
          "  memplan verify examples/resnet50.json plan.json\n"
          "  memplan verify placed.csv --capacity 1MiB\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

static int verify_plan(const char *input, const char *plan_path,
                       const cli_dims *dims)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    int rc;
    mp_status st = cli_load_graph(ctx, input, dims, 0, &g);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, input);
        goto done;
    }
    st = mp_plan_load_json(g, plan_path, &plan);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, plan_path);
        goto done;
    }
    st = mp_verify_plan(g, plan);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, plan_path);
        goto done;
    }
    const mp_figures *f = mp_plan_figures(plan);
    char arena[96], peak[96];
    printf("valid: %s: %u steps, %u arena blocks, arena %s, peak %s\n",
           plan_path, mp_plan_num_steps(plan), mp_plan_num_blocks(plan),
           cli_size(f->arena_bytes, arena, sizeof arena),
           cli_size(f->peak_bytes, peak, sizeof peak));
    rc = CLI_EXIT_OK;
done:
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}

static int verify_trace(const char *trace, const verify_args *a)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_buffer *bufs = NULL;
    size_t n = 0;
    int has_offsets = 0, rc;
    uint64_t lb = 0;
    mp_status st = mp_trace_load_csv(ctx, trace, &bufs, NULL, &n, &has_offsets);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, trace);
        goto done;
    }
    if (!has_offsets) {
        cli_error("%s: no offset column (a fifth column `offset` is needed; "
                  "'memplan offsets %s -o OUT.csv' writes one)",
                  trace, trace);
        rc = CLI_EXIT_INPUT;
        goto done;
    }
    st = mp_offsets_verify(ctx, bufs, n, a->alignment, a->capacity);
    if (st == MP_OK)
        st = mp_offsets_lower_bound(ctx, bufs, n, a->alignment, &lb);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, trace);
        goto done;
    }
    uint64_t arena = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t end = bufs[i].offset + bufs[i].size;
        if (end < bufs[i].offset)
            end = UINT64_MAX;   /* cannot happen once verified; saturate */
        if (end > arena)
            arena = end;
    }
    char b1[96], b2[96];
    printf("valid: %s: %zu buffers, arena %s, lower bound %s\n", trace, n,
           cli_size(arena, b1, sizeof b1), cli_size(lb, b2, sizeof b2));
    rc = CLI_EXIT_OK;
done:
    mp_free(ctx, bufs);
    mp_ctx_destroy(ctx);
    return rc;
}

int cli_cmd_verify(int argc, char **argv)
{
    verify_args a;
    a.capacity = UINT64_MAX;
    a.alignment = 1;
    a.trace_opts = 0;
    a.dims.n = 0;
    a.dims.batch = 0;
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("verify", argc, argv, verify_opts, on_opt, &a, pos,
                       &n_pos, &want_help);
    if (rc)
        return rc;
    if (want_help) {
        help();
        return CLI_EXIT_OK;
    }
    if (n_pos == 2) {
        if (a.trace_opts) {
            cli_error("verify: --capacity and --align apply to a trace only; "
                      "a plan carries its own alignment and arena");
            return CLI_EXIT_USAGE;
        }
        return verify_plan(pos[0], pos[1], &a.dims);
    }
    if (n_pos == 1)
        return verify_trace(pos[0], &a);
    cli_error("verify: expected INPUT PLAN.json or TRACE.csv, got %d "
              "arguments (see 'memplan verify --help')",
              n_pos);
    return CLI_EXIT_USAGE;
}
