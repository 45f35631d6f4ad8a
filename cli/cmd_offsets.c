/* cmd_offsets.c - memplan offsets TRACE.csv: place the buffers of a trace. */
#include "cli.h"

#include <string.h>
#include <time.h>

static int print_json(mp_ctx *ctx, size_t n, const mp_offsets_result *r,
                      const mp_offsets_options *opt, const char *output)
{
    mp__jw w;
    cli_json_begin(&w, ctx);
    const cli_json_size sizes[] = {
        {"buffers", n},
        {"alignment", opt->alignment},
        {"lower_bound_bytes", r->lower_bound_bytes},
        {"arena_bytes", r->arena_bytes},
    };
    cli_json_sizes(&w, sizes, sizeof sizes / sizeof sizes[0]);
    cli_json_ratio(&w, "ratio", r->arena_bytes, r->lower_bound_bytes);
    cli_json_str(&w, "status", mp_solve_status_name(r->status));
    cli_json_str(&w, "solver", r->solver);
    cli_json_real(&w, "solve_seconds", r->seconds);
    cli_json_u64(&w, "proven_lower_bound_bytes", r->proven_lb_bytes);
    cli_json_u64(&w, "search_nodes", r->nodes);
    if (opt->capacity)
        cli_json_u64(&w, "capacity_bytes", opt->capacity);
    if (output)
        cli_json_str(&w, "output_file", output);
    return cli_json_print(&w);
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

int cli_cmd_offsets(cli_args *a)
{
    mp_offsets_options opt;
    mp_offsets_options_init(&opt);
    const char *trace = a->pos[0];
    opt.alignment = a->alignment;
    opt.method = a->method;
    opt.seed = a->seed;
    opt.time_limit = a->time_limit;
    opt.capacity = a->capacity;
    int rc;

    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    cli_progress_install(ctx, a);
    mp_buffer *bufs = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int has_offsets = 0;
    mp_offsets_result res;
    memset(&res, 0, sizeof res);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mp_status st = mp_trace_load_csv(ctx, trace, &bufs, &ids, &n, &has_offsets);
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, trace);
        goto done;
    }
    /* the time limit counts from the start of the command: the solve gets
     * what reading the trace left (at least a tenth of the limit) */
    opt.time_limit = cli_time_left(&t0, opt.time_limit > 0
                                            ? opt.time_limit
                                            : MP_OFFSETS_DEFAULT_TIME_LIMIT);
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
    if (a->output) {
        st = mp_trace_save_csv(ctx, a->output, bufs, ids, n);
        if (st != MP_OK) {
            rc = cli_fail(ctx, st, a->output);
            goto done;
        }
    }
    if (a->json) {
        /* the packing that misses --capacity, with the error */
        int fail = solve_st != MP_OK ? cli_fail(ctx, solve_st, trace) : 0;
        rc = print_json(ctx, n, &res, &opt, a->output);
        if (rc == CLI_EXIT_OK)
            rc = fail;
    } else {
        print_summary(trace, n, &res, &opt, a->output);
        rc = CLI_EXIT_OK;
        if (solve_st != MP_OK)
            rc = cli_fail(ctx, solve_st, trace);
    }
done:
    mp_free(ctx, bufs);
    mp_free(ctx, ids);
    mp_ctx_destroy(ctx);
    return rc;
}
