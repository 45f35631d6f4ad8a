/* parallel_opts.c - plan --dp / --zero / --pp: the plans of the distinct
 * ranks of a multi-GPU training step (memplan/parallel.h), one row each,
 * --json, and -o as one plan file per distinct rank. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

void cli_rank_path(const char *path, uint32_t rank, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path ||
        (slash && dot == slash + 1))
        snprintf(buf, cap, "%s.rank%u", path, (unsigned)rank);
    else
        snprintf(buf, cap, "%.*s.rank%u%s", (int)(dot - path), path,
                 (unsigned)rank, dot);
}

/* One distinct rank: its info, plan and breakdown. */
typedef struct rank_row {
    mp_rank_info ri;
    mp_plan *plan;
    mp_rank_breakdown bd;
    char file[1024], graph_file[1024];
} rank_row;

static void step_label(const mp_graph *g, const mp_plan *p, uint32_t s,
                       char *buf, size_t cap)
{
    const mp_step *st = s < mp_plan_num_steps(p) ? &mp_plan_steps(p)[s] : NULL;
    mp_node_info ni;
    mp_tensor_info ti;
    if (!st)
        snprintf(buf, cap, "-");
    else if ((st->kind == MP_STEP_COMPUTE || st->kind == MP_STEP_RECOMPUTE) &&
             mp_graph_node_info(g, st->index, &ni) == MP_OK)
        snprintf(buf, cap, "%s (%s)", ni.name, ni.op);
    else if (mp_graph_tensor_info(g, st->index, &ti) == MP_OK)
        snprintf(buf, cap, "%s %s", mp_step_kind_name(st->kind), ti.name);
    else
        snprintf(buf, cap, "?");
}

static void ranks_label(const mp_rank_info *ri, char *buf, size_t cap)
{
    if (ri->n_ranks == 1)
        snprintf(buf, cap, "%u", (unsigned)ri->first_rank);
    else
        snprintf(buf, cap, "%u-%u", (unsigned)ri->first_rank,
                 (unsigned)(ri->first_rank + ri->n_ranks - 1));
}

static void print_rows(const cli_args *a, const rank_row *r, uint32_t n,
                       uint32_t n_ranks)
{
    const mp_parallel_options *po = &a->par.po;
    printf("ranks        %u (", (unsigned)n_ranks);
    if (po->tp > 1)
        printf("tp %u%s, ", (unsigned)po->tp, po->sp ? " with sp" : "");
    printf("dp %u", (unsigned)po->dp);
    if (po->dp > 1)
        printf(", ZeRO-%d", po->zero);
    if (po->pp > 1)
        printf(", pp %u, %u micro-batches, %s", (unsigned)po->pp,
               (unsigned)po->microbatches, mp_pp_schedule_name(po->schedule));
    if (po->pp > 1 && po->schedule == MP_PP_INTERLEAVED)
        printf(" over %u virtual stages", (unsigned)po->virtual_stages);
    if (po->offload_optimizer)
        printf(", optimizer on the host");
    printf("); %u distinct\n", (unsigned)n);
    if (po->tp > 1 && n)
        printf("tp blocks    %u split over %u ranks: %u attention, %u MLP; "
               "%u vocabulary-parallel layer%s\n",
               (unsigned)(r[0].ri.tp_attention + r[0].ri.tp_mlp),
               (unsigned)po->tp, (unsigned)r[0].ri.tp_attention,
               (unsigned)r[0].ri.tp_mlp, (unsigned)r[0].ri.tp_vocab,
               r[0].ri.tp_vocab == 1 ? "" : "s");
    if (po->sp && n)
        printf("sp           %u nodes split along the sequence\n",
               (unsigned)r[0].ri.sp_nodes);
    printf("\n");
    printf("%-9s %5s %10s %10s %10s %10s %10s %10s  %s\n", "ranks", "stage",
           "peak", "params", "grads", "optimizer", "activation", "comm",
           "peak at");
    for (uint32_t i = 0; i < n; i++) {
        char rk[32], b[6][32], st[512], safe[600];
        const mp_rank_breakdown *d = &r[i].bd;
        ranks_label(&r[i].ri, rk, sizeof rk);
        step_label(r[i].ri.graph, r[i].plan, d->peak_step, st, sizeof st);
        printf("%-9s %5u %10s %10s %10s %10s %10s %10s  step %u: %s\n", rk,
               (unsigned)r[i].ri.stage,
               cli_size_short(d->peak_bytes, b[0], sizeof b[0]),
               cli_size_short(d->param_bytes, b[1], sizeof b[1]),
               cli_size_short(d->grad_bytes, b[2], sizeof b[2]),
               cli_size_short(d->optimizer_bytes, b[3], sizeof b[3]),
               cli_size_short(d->activation_bytes, b[4], sizeof b[4]),
               cli_size_short(d->comm_bytes, b[5], sizeof b[5]),
               (unsigned)d->peak_step, cli_safe(st, safe, sizeof safe));
    }
    for (uint32_t i = 0; i < n; i++) {
        char b[64];
        if (r[i].ri.host_bytes)
            printf("host         stage %u: %s optimizer state\n",
                   (unsigned)r[i].ri.stage,
                   cli_size(r[i].ri.host_bytes, b, sizeof b));
        if (r[i].bd.free_bytes)
            printf("arena gaps   stage %u: %s free at the peak step\n",
                   (unsigned)r[i].ri.stage,
                   cli_size(r[i].bd.free_bytes, b, sizeof b));
    }
    for (uint32_t i = 0; i < n; i++)
        if (r[i].file[0])
            printf("%sranks from %u: plan written to %s, graph to %s\n",
                   i ? "" : "\n", (unsigned)r[i].ri.first_rank, r[i].file,
                   r[i].graph_file);
}

static int print_json(mp_ctx *ctx, const cli_args *a, const rank_row *r,
                      uint32_t n, uint32_t n_ranks)
{
    const mp_parallel_options *po = &a->par.po;
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_object(&w, "parallel");
    cli_json_int(&w, "ranks", n_ranks);
    cli_json_int(&w, "tp", po->tp);
    cli_json_int(&w, "sp", po->sp);
    cli_json_int(&w, "tp_attention_blocks", n ? r[0].ri.tp_attention : 0);
    cli_json_int(&w, "tp_mlp_blocks", n ? r[0].ri.tp_mlp : 0);
    cli_json_int(&w, "tp_vocab_layers", n ? r[0].ri.tp_vocab : 0);
    cli_json_int(&w, "sp_nodes", n ? r[0].ri.sp_nodes : 0);
    cli_json_int(&w, "dp", po->dp);
    cli_json_int(&w, "zero", po->zero);
    cli_json_u64(&w, "bucket_bytes", po->bucket_bytes);
    cli_json_int(&w, "pp", po->pp);
    cli_json_int(&w, "microbatches", po->microbatches);
    cli_json_str(&w, "schedule", mp_pp_schedule_name(po->schedule));
    cli_json_int(&w, "virtual_stages",
                 po->schedule == MP_PP_INTERLEAVED ? po->virtual_stages : 1);
    cli_json_int(&w, "offload_optimizer", po->offload_optimizer);
    mp__jw_end(&w);
    mp__jw_key(&w, "distinct_ranks");
    mp__jw_array(&w, true);
    for (uint32_t i = 0; i < n; i++) {
        const mp_rank_breakdown *d = &r[i].bd;
        const mp_figures *f = mp_plan_figures(r[i].plan);
        char st[512];
        cli_json_object(&w, NULL);
        cli_json_int(&w, "first_rank", r[i].ri.first_rank);
        cli_json_int(&w, "n_ranks", r[i].ri.n_ranks);
        cli_json_int(&w, "stage", r[i].ri.stage);
        cli_json_int(&w, "in_flight", r[i].ri.in_flight);
        cli_json_int(&w, "collectives", r[i].ri.n_collectives);
        cli_json_int(&w, "nodes", mp_graph_num_nodes(r[i].ri.graph));
        step_label(r[i].ri.graph, r[i].plan, d->peak_step, st, sizeof st);
        cli_json_int(&w, "peak_step", d->peak_step);
        cli_json_str(&w, "peak_step_action", st);
        cli_rank_breakdown_json(&w, d);
        const cli_json_size sizes[] = {
            {"free_bytes", d->free_bytes},
            {"arena_bytes", f->arena_bytes},
            {"persistent_bytes", f->persistent_bytes},
            {"host_bytes", r[i].ri.host_bytes},
        };
        cli_json_sizes(&w, sizes, sizeof sizes / sizeof sizes[0]);
        if (r[i].file[0])
        {
            cli_json_str(&w, "plan_file", r[i].file);
            cli_json_str(&w, "graph_file", r[i].graph_file);
        }
        mp__jw_end(&w);
    }
    mp__jw_end(&w);
    if (a->html)
        cli_json_str(&w, "html_file", a->html);
    cli_train_json(&a->train, &w);
    return cli_json_print(&w);
}

/* Plans, verifies and breaks down distinct rank i; writes its plan with
 * -o. 0 or an exit code (printed). */
static int plan_rank(mp_ctx *ctx, const cli_args *a, mp_parallel *par,
                     uint32_t i, const mp_plan_options *opt, rank_row *r)
{
    mp_status st;
    if ((st = mp_parallel_rank_info(par, i, &r->ri)) ||
        (st = mp_plan_create(r->ri.graph, opt, &r->plan)))
        return cli_fail(ctx, st, a->pos[0]);
    if ((st = mp_verify_plan(r->ri.graph, r->plan)) != MP_OK)
        return cli_fail(ctx, st, a->pos[0]);
    if ((st = mp_parallel_breakdown(par, i, r->plan, &r->bd)))
        return cli_fail(ctx, st, a->pos[0]);
    if (a->output) {
        /* the plan, and the rank's graph it was made for (what memplan
         * verify replays it against): plan.rank0.json and
         * plan.rank0.graph.json */
        cli_rank_path(a->output, r->ri.first_rank, r->file, sizeof r->file);
        snprintf(r->graph_file, sizeof r->graph_file, "%s", r->file);
        char *dot = strrchr(r->graph_file, '.');
        size_t at = dot && dot > strrchr(r->graph_file, '/')
                        ? (size_t)(dot - r->graph_file)
                        : strlen(r->graph_file);
        snprintf(r->graph_file + at, sizeof r->graph_file - at,
                 ".graph.json");
        if ((st = mp_plan_save_json(r->plan, r->file)))
            return cli_fail(ctx, st, r->file);
        if ((st = mp_graph_save_json(r->ri.graph, r->graph_file)))
            return cli_fail(ctx, st, r->graph_file);
    }
    return 0;
}

void cli_rank_breakdown_json(mp__jw *w, const mp_rank_breakdown *d)
{
    const cli_json_size sizes[] = {
        {"peak_bytes", d->peak_bytes},
        {"param_bytes", d->param_bytes},
        {"grad_bytes", d->grad_bytes},
        {"optimizer_bytes", d->optimizer_bytes},
        {"activation_bytes", d->activation_bytes},
        {"comm_bytes", d->comm_bytes},
    };
    cli_json_sizes(w, sizes, sizeof sizes / sizeof sizes[0]);
}

/* The ranks of --dp/--pp (micro-batches default to --pp). 0 or an exit
 * code (printed). */
int cli_parallel_make(mp_ctx *ctx, cli_args *a, const mp_graph *g,
                      mp_parallel **par)
{
    if (!cli_given(a, CLI_O_MICROBATCHES))
        a->par.po.microbatches = a->par.po.pp;
    *par = NULL;
    mp_status st = mp_parallel_create(g, &a->par.po, par);
    return st ? cli_fail(ctx, st, a->pos[0]) : 0;
}

int cli_parallel_rank_graph(mp_ctx *ctx, cli_args *a, const mp_graph *g,
                            mp_parallel **par, mp_rank_info *ri)
{
    *par = NULL;
    if (!cli_given(a, CLI_O_DP) && !cli_given(a, CLI_O_PP) &&
        !cli_given(a, CLI_O_TP)) {
        cli_error("--rank chooses one of the ranks of --dp N, --tp N or --pp "
                  "N: give one of them (with --train)");
        return CLI_EXIT_USAGE;
    }
    int rc = cli_parallel_make(ctx, a, g, par);
    if (rc)
        return rc;
    uint32_t n = mp_parallel_num_ranks(*par);
    if (a->par.rank >= n) {
        cli_error("--rank %u: this job has %u ranks (tp %u x dp %u x pp "
                  "%u): give --rank 0 to %u", (unsigned)a->par.rank,
                  (unsigned)n, (unsigned)a->par.po.tp,
                  (unsigned)a->par.po.dp, (unsigned)a->par.po.pp,
                  (unsigned)(n - 1));
        return CLI_EXIT_USAGE;
    }
    mp_status st = mp_parallel_rank_info(
        *par, mp_parallel_distinct_of(*par, a->par.rank), ri);
    return st ? cli_fail(ctx, st, a->pos[0]) : 0;
}

/* --html: one page, the distinct ranks side by side; --dot, --trace,
 * --memory-viz: one file per distinct rank, named as -o's. 0 or an exit
 * code (printed). */
static int write_reports(mp_ctx *ctx, const cli_args *a, const rank_row *r,
                         uint32_t n)
{
    mp_status st = MP_OK;
    if (a->html) {
        const mp_plan **plans = calloc(n, sizeof *plans);
        char (*lab)[64] = calloc(n, sizeof *lab);
        const char **labels = calloc(n, sizeof *labels);
        if (!plans || !lab || !labels)
            st = MP_ERR_NOMEM;
        for (uint32_t i = 0; i < n && !st; i++) {
            char rk[32];
            ranks_label(&r[i].ri, rk, sizeof rk);
            snprintf(lab[i], sizeof lab[i], "ranks %s, stage %u", rk,
                     (unsigned)r[i].ri.stage);
            plans[i] = r[i].plan;
            labels[i] = lab[i];
        }
        mp_html_options ho;
        mp_html_options_init(&ho);
        if (!st)
            st = mp_plans_write_html(plans, labels, n, a->html, &ho);
        free(plans);
        free(lab);
        free(labels);
        if (st)
            return cli_fail(ctx, st, a->html);
    }
    for (uint32_t i = 0; i < n; i++) {
        char path[1024];
        if (a->dot) {
            cli_rank_path(a->dot, r[i].ri.first_rank, path, sizeof path);
            if ((st = mp_plan_write_dot(r[i].plan, path, &a->dopt)))
                return cli_fail(ctx, st, path);
        }
        if (a->trace) {
            cli_rank_path(a->trace, r[i].ri.first_rank, path, sizeof path);
            if ((st = mp_plan_write_trace(r[i].plan, path, NULL)))
                return cli_fail(ctx, st, path);
        }
        if (a->memory_viz) {
            cli_rank_path(a->memory_viz, r[i].ri.first_rank, path,
                          sizeof path);
            if ((st = mp_plan_write_memory_viz(r[i].plan, path)))
                return cli_fail(ctx, st, path);
        }
    }
    return 0;
}

/* The files of write_reports, for humans. */
static void print_reports(const cli_args *a, const rank_row *r, uint32_t n)
{
    if (a->html)
        printf("HTML report written to %s (%u distinct ranks side by side)\n",
               a->html, (unsigned)n);
    const char *what[] = {"DOT", "trace", "memory snapshot"};
    const char *paths[] = {a->dot, a->trace, a->memory_viz};
    for (int k = 0; k < 3; k++) {
        if (!paths[k])
            continue;
        printf("%s written to", what[k]);
        for (uint32_t i = 0; i < n; i++) {
            char path[1024];
            cli_rank_path(paths[k], r[i].ri.first_rank, path, sizeof path);
            printf("%s %s", i ? "," : "", path);
        }
        printf("\n");
    }
}

int cli_parallel_plan(mp_ctx *ctx, cli_args *a, mp_graph *g,
                      const mp_plan_options *opt)
{
    mp_parallel *par = NULL;
    int rc0 = cli_parallel_make(ctx, a, g, &par);
    if (rc0)
        return rc0;
    uint32_t n = mp_parallel_num_distinct(par);
    rank_row *r = calloc(n ? n : 1, sizeof *r);
    int rc = r ? 0 : CLI_EXIT_INTERNAL;
    if (!r)
        cli_error("out of memory");
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = plan_rank(ctx, a, par, i, opt, &r[i]);
    if (!rc)
        rc = write_reports(ctx, a, r, n);
    if (!rc && a->json) {
        rc = print_json(ctx, a, r, n, mp_parallel_num_ranks(par));
    } else if (!rc) {
        print_rows(a, r, n, mp_parallel_num_ranks(par));
        print_reports(a, r, n);
    }
    for (uint32_t i = 0; r && i < n; i++)
        mp_plan_destroy(r[i].plan);
    free(r);
    mp_parallel_destroy(par);
    return rc;
}
