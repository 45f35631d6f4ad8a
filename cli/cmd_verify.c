/* cmd_verify.c - memplan verify: check a plan or a trace's offsets. */
#include "cli.h"

#include <string.h>

/* --json of a valid plan or trace: what the summary line says */
static int print_json(mp_ctx *ctx, const char *kind, const char *file,
                      const cli_json_size *rows, size_t n)
{
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_bool(&w, "valid", 1);
    cli_json_str(&w, "kind", kind);
    cli_json_str(&w, "file", file);
    cli_json_sizes(&w, rows, n);
    return cli_json_print(&w);
}

static int verify_plan(const cli_args *a)
{
    const char *plan_path = a->pos[1];
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    int rc = cli_load_graph(ctx, a, &g);
    if (rc)
        goto done;
    /* a plan made with --attention fused names the fused nodes */
    mp_status st = a->attention == MP_ATTENTION_FUSED
                       ? mp_graph_fuse_attention(g, NULL, NULL)
                       : MP_OK;
    if (st != MP_OK) {
        rc = cli_fail(ctx, st, a->pos[0]);
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
    const cli_json_size rows[] = {
        {"steps", mp_plan_num_steps(plan)},
        {"blocks", mp_plan_num_blocks(plan)},
        {"arena_bytes", f->arena_bytes},
        {"peak_bytes", f->peak_bytes},
    };
    if (a->json) {
        rc = print_json(ctx, "plan", plan_path, rows, 4);
        goto done;
    }
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

static int verify_trace(const cli_args *a)
{
    const char *trace = a->pos[0];
    /* no limit unless --capacity */
    uint64_t capacity =
        cli_given(a, CLI_O_CAPACITY) ? a->capacity : UINT64_MAX;
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
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
    st = mp_offsets_verify(ctx, bufs, n, a->alignment, capacity);
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
    const cli_json_size rows[] = {
        {"buffers", n},
        {"arena_bytes", arena},
        {"lower_bound_bytes", lb},
    };
    if (a->json) {
        rc = print_json(ctx, "trace", trace, rows, 3);
        goto done;
    }
    printf("valid: %s: %zu buffers, arena %s, lower bound %s\n", trace, n,
           cli_size(arena, b1, sizeof b1), cli_size(lb, b2, sizeof b2));
    rc = CLI_EXIT_OK;
done:
    mp_free(ctx, bufs);
    mp_ctx_destroy(ctx);
    return rc;
}

int cli_cmd_verify(cli_args *a)
{
    /* a model's options with a trace, a trace's with a plan */
    static const int model_opts[] = {CLI_O_DIM, CLI_O_SHAPE, CLI_O_BATCH};
    static const int trace_opts[] = {CLI_O_CAPACITY, CLI_O_ALIGN};
    for (size_t i = 0; a->n_pos == 1 && i < 3; i++)
        if (cli_given(a, model_opts[i]))
            return cli_no_effect(a, model_opts[i], "with a trace",
                                 "it applies to the model of a plan");
    for (size_t i = 0; a->n_pos == 2 && i < 2; i++)
        if (cli_given(a, trace_opts[i]))
            return cli_no_effect(a, trace_opts[i], "with a plan",
                                 "it applies to a trace only; a plan "
                                 "carries its own alignment and arena");
    return a->n_pos == 2 ? verify_plan(a) : verify_trace(a);
}
