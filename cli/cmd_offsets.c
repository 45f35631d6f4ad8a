/* cmd_offsets.c - memplan offsets TRACE.csv: place the buffers of a trace. */
#include "cli.h"

#include <string.h>

enum { OPT_OUTPUT, OPT_JSON, OPT_ALIGN, OPT_METHOD, OPT_SEED, OPT_TIME };

static const cli_opt offsets_opts[] = {
    {"output", 'o', 1, OPT_OUTPUT},
    {"json", 0, 0, OPT_JSON},
    {"align", 0, 1, OPT_ALIGN},
    {"method", 0, 1, OPT_METHOD},
    {"seed", 0, 1, OPT_SEED},
    {"time-limit", 0, 1, OPT_TIME},
    {NULL, 0, 0, 0},
};

typedef struct offsets_args {
    const char *output;
    int json;
    mp_offsets_options opt;
} offsets_args;

static int on_opt(void *state, int id, const char *name, const char *value)
{
    offsets_args *a = state;
    switch (id) {
    case OPT_OUTPUT: a->output = value; return 0;
    case OPT_JSON: a->json = 1; return 0;
    case OPT_ALIGN: return cli_parse_size(name, value, &a->opt.alignment);
    case OPT_METHOD: return cli_parse_method(value, &a->opt.method);
    case OPT_SEED: return cli_parse_u64(name, value, &a->opt.seed);
    case OPT_TIME: return cli_parse_seconds(name, value, &a->opt.time_limit);
    default: return CLI_EXIT_INTERNAL;
    }
}

static void help(void)
{
    fputs("Usage: memplan offsets TRACE.csv [-o OUT.csv] [--json] [--align N]\n"
          "                       [--method M] [--seed S] [--time-limit SEC]\n"
          "\n"
          "Reads a MiniMalloc trace (CSV with header id,lower,upper,size: a\n"
          "buffer of `size` bytes live on the half-open interval\n"
          "[lower, upper)), places every buffer in one arena so that buffers\n"
          "live at the same time do not overlap, and reports the arena against\n"
          "the lower bound (max over time of live bytes). A fifth column\n"
          "`offset` in the input is ignored.\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE   write the trace with a fifth column `offset`\n"
          "      --json          print one JSON object instead of the summary\n"
          "      --align N       offset alignment in bytes (default 1: traces\n"
          "                      give exact sizes); units accepted, e.g. 64B\n"
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
          "  memplan offsets trace.csv\n"
          "  memplan offsets trace.csv -o placed.csv && memplan verify placed.csv\n"
          "  memplan offsets trace.csv --json --method naive\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

static int print_json(size_t n, const mp_offsets_result *r,
                      const mp_offsets_options *opt, const char *output)
{
    json_t *o = json_object();
    if (!o) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    int bad = 0;
    bad |= cli_json_set(o, "buffers", cli_json_u64(n));
    bad |= cli_json_set(o, "alignment", cli_json_u64(opt->alignment));
    bad |= cli_json_set(o, "lower_bound_bytes", cli_json_u64(r->lower_bound_bytes));
    bad |= cli_json_set(o, "arena_bytes", cli_json_u64(r->arena_bytes));
    bad |= cli_json_set(o, "ratio", r->lower_bound_bytes
                                        ? json_real((double)r->arena_bytes /
                                                    (double)r->lower_bound_bytes)
                                        : json_null());
    bad |= cli_json_set(o, "status", json_string(mp_solve_status_name(r->status)));
    bad |= cli_json_set(o, "solver", json_string(r->solver ? r->solver : ""));
    bad |= cli_json_set(o, "solve_seconds", json_real(r->seconds));
    if (output)
        bad |= cli_json_set(o, "output_file", json_string(output));
    if (bad) {
        json_decref(o);
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    return cli_json_print(o);
}

static void print_summary(const char *trace, size_t n,
                          const mp_offsets_result *r,
                          const mp_offsets_options *opt, const char *output)
{
    char b[96];
    printf("trace        %s\n", trace);
    printf("buffers      %zu\n", n);
    printf("lower bound  %s  max live bytes\n",
           cli_size(r->lower_bound_bytes, b, sizeof b));
    printf("arena        %s\n", cli_size(r->arena_bytes, b, sizeof b));
    if (r->lower_bound_bytes)
        printf("arena/LB     %.4f\n",
               (double)r->arena_bytes / (double)r->lower_bound_bytes);
    else
        printf("arena/LB     n/a (empty trace)\n");
    printf("status       %s\n", mp_solve_status_name(r->status));
    printf("solver       %s (alignment %llu)\n", r->solver ? r->solver : "?",
           (unsigned long long)opt->alignment);
    printf("seconds      %.3f\n", r->seconds);
    if (output)
        printf("\noffsets written to %s\n", output);
}

int cli_cmd_offsets(int argc, char **argv)
{
    offsets_args a;
    memset(&a, 0, sizeof a);
    mp_offsets_options_init(&a.opt);
    a.opt.alignment = 1;
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("offsets", argc, argv, offsets_opts, on_opt, &a, pos,
                       &n_pos, &want_help);
    if (rc)
        return rc;
    if (want_help) {
        help();
        return CLI_EXIT_OK;
    }
    if (n_pos != 1) {
        cli_error("offsets: expected one TRACE.csv, got %d arguments "
                  "(see 'memplan offsets --help')",
                  n_pos);
        return CLI_EXIT_USAGE;
    }
    const char *trace = pos[0];

    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_buffer *bufs = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int has_offsets = 0;
    mp_offsets_result res;
    memset(&res, 0, sizeof res);
    mp_status st = mp_trace_load_csv(ctx, trace, &bufs, &ids, &n, &has_offsets);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, trace);
        goto done;
    }
    st = mp_offsets_solve(ctx, bufs, n, &a.opt, &res);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, trace);
        goto done;
    }
    if (a.output) {
        st = mp_trace_save_csv(ctx, a.output, bufs, ids, n);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, a.output);
            goto done;
        }
    }
    if (a.json) {
        rc = print_json(n, &res, &a.opt, a.output);
    } else {
        print_summary(trace, n, &res, &a.opt, a.output);
        rc = CLI_EXIT_OK;
    }
done:
    mp_free(ctx, bufs);
    mp_free(ctx, ids);
    mp_ctx_destroy(ctx);
    return rc;
}
