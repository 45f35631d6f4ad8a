/* cmd_offsets.c - memplan offsets TRACE.csv: place the buffers of a trace. */
#include "cli.h"

#include <string.h>

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
    bad |= cli_json_set(o, "ratio", cli_json_ratio(r->arena_bytes,
                                                   r->lower_bound_bytes));
    bad |= cli_json_set(o, "status", json_string(mp_solve_status_name(r->status)));
    bad |= cli_json_set(o, "solver", cli_json_str(r->solver));
    bad |= cli_json_set(o, "solve_seconds", json_real(r->seconds));
    if (output)
        bad |= cli_json_set(o, "output_file", cli_json_str(output));
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
    cli_print_ratio(r->arena_bytes, r->lower_bound_bytes, "empty trace");
    printf("status       %s\n", mp_solve_status_name(r->status));
    printf("solver       %s (alignment %llu)\n", r->solver ? r->solver : "?",
           (unsigned long long)opt->alignment);
    printf("seconds      %.3f\n", r->seconds);
    if (output)
        printf("\noffsets written to %s\n", output);
}

int cli_cmd_offsets(int argc, char **argv)
{
    mp_offsets_options opt;
    mp_offsets_options_init(&opt);
    cli_solve_args a = {NULL, 0, 1, opt.method, opt.seed, opt.time_limit};
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("offsets", argc, argv, cli_solve_opts, cli_solve_on_opt,
                       &a, pos, &n_pos, &want_help);
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
    opt.alignment = a.alignment;
    opt.method = a.method;
    opt.seed = a.seed;
    opt.time_limit = a.time_limit;

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
    st = mp_offsets_solve(ctx, bufs, n, &opt, &res);
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
        rc = print_json(n, &res, &opt, a.output);
    } else {
        print_summary(trace, n, &res, &opt, a.output);
        rc = CLI_EXIT_OK;
    }
done:
    mp_free(ctx, bufs);
    mp_free(ctx, ids);
    mp_ctx_destroy(ctx);
    return rc;
}
