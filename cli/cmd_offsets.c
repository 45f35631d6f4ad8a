/* cmd_offsets.c - memplan offsets TRACE.csv: place the buffers of a trace. */
#include "cli.h"

#include <string.h>

static void help(void)
{
    fputs("Usage: memplan offsets TRACE.csv [-o OUT.csv] [--json] [--align N]\n"
          "                       [--method M] [--seed S] [--time-limit SEC]\n"
          "                       [--capacity N]\n"
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
          "      --time-limit SEC  seconds for improvement passes and the exact\n"
          "                      search (a safety net; default 10)\n"
          "      --capacity N    ask for a packing within N bytes (units accepted,\n"
          "                      e.g. 1MiB); when there is none, or none is found,\n"
          "                      the best packing is still reported and written\n"
          "                      and the exit code is 4. --method exact proves\n"
          "                      optimality or infeasibility\n"
          "  -h, --help          show this help\n"
          "\n"
          "Examples:\n"
          "  memplan offsets trace.csv\n"
          "  memplan offsets trace.csv -o placed.csv && memplan verify placed.csv\n"
          "  memplan offsets trace.csv --json --method naive\n"
          "  memplan offsets trace.csv --method exact --capacity 1MiB\n"
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
    bad |= cli_json_set(o, "proven_lower_bound_bytes",
                        cli_json_u64(r->proven_lb_bytes));
    bad |= cli_json_set(o, "search_nodes", cli_json_u64(r->nodes));
    if (opt->capacity)
        bad |= cli_json_set(o, "capacity_bytes", cli_json_u64(opt->capacity));
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
    if (opt->capacity)
        printf("capacity     %s\n", cli_size(opt->capacity, b, sizeof b));
    if (r->nodes || r->proven_lb_bytes > r->lower_bound_bytes)
        printf("proven LB    %s  (%llu search nodes)\n",
               cli_size(r->proven_lb_bytes, b, sizeof b),
               (unsigned long long)r->nodes);
    printf("solver       %s (alignment %llu)\n", r->solver ? r->solver : "?",
           (unsigned long long)opt->alignment);
    printf("seconds      %.3f\n", r->seconds);
    if (output)
        printf("\noffsets written to %s\n", output);
}

/* offsets' own option on top of the shared solver options */
enum { OPT_CAPACITY = 900 };
typedef struct offsets_args {
    cli_solve_args solve;
    uint64_t capacity;
} offsets_args;

static int offsets_on_opt(void *state, int id, const char *name,
                          const char *value)
{
    offsets_args *oa = state;
    if (id == OPT_CAPACITY) {
        int rc = cli_parse_size(name, value, &oa->capacity);
        if (!rc && oa->capacity == 0) {
            cli_error("bad value '%s' for --capacity: expected a size > 0",
                      value);
            return CLI_EXIT_USAGE;
        }
        return rc;
    }
    return cli_solve_on_opt(&oa->solve, id, name, value);
}

int cli_cmd_offsets(int argc, char **argv)
{
    mp_offsets_options opt;
    mp_offsets_options_init(&opt);
    offsets_args oa = {{NULL, 0, 1, opt.method, opt.seed, opt.time_limit}, 0};
    cli_opt opts[24];
    size_t no = 0;
    for (const cli_opt *o = cli_solve_opts; o->name && no < 22; o++)
        opts[no++] = *o;
    opts[no++] = (cli_opt){"capacity", 0, 1, OPT_CAPACITY};
    opts[no] = (cli_opt){NULL, 0, 0, 0};
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("offsets", argc, argv, opts, offsets_on_opt, &oa, pos,
                       &n_pos, &want_help);
    cli_solve_args a = oa.solve;
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
    opt.capacity = oa.capacity;

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
    /* MP_ERR_INFEASIBLE with a capacity: the buffers hold the best packing
     * found; report and write it, then exit 4 */
    mp_status solve_st = st;
    if (st == MP_ERR_INFEASIBLE && opt.capacity && res.solver)
        st = MP_OK;
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
    if (solve_st != MP_OK && rc == CLI_EXIT_OK)
        rc = cli_fail(ctx, solve_st, trace);
done:
    mp_free(ctx, bufs);
    mp_free(ctx, ids);
    mp_ctx_destroy(ctx);
    return rc;
}
