/* offload_opts.c - the offload plan of plan and validate: --offload,
 * --device NAME|FILE.json and --offload-solver, with --budget (and the
 * recompute options for the joint solver). The work is the library's
 * (mp_offload_plan); this file calls it and reports the figures. */
#include "cli.h"

#include <string.h>

int cli_offload_check_solver(const char *value, const char *name)
{
    static const char *const names[] = {"greedy", "ilp", "joint", "auto"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(value, names[i]) == 0)
            return 0;
    cli_error("bad value '%s' for %s: one of greedy, ilp, joint, auto", value,
              name);
    return CLI_EXIT_USAGE;
}

int cli_offload_plan(mp_ctx *ctx, cli_offload_args *o, uint64_t budget,
                     mp_graph *g, const mp_plan_options *opt, mp_plan **plan,
                     const char *input)
{
    mp_status st = mp_device_get(ctx, o->device, &o->dev);
    if (st != MP_OK)
        return cli_fail(ctx, st, o->device);
    mp_offload_options oo;
    mp_offload_options_init(&oo);
    oo.budget = budget;
    oo.device = &o->dev;
    const char *sv = o->solver ? o->solver : "auto";
    mp_remat_options ro;
    if (o->ropt)
        ro = *o->ropt;
    else
        mp_remat_options_init(&ro);
    if (ro.time_limit <= 0)
        ro.time_limit = 10;
    oo.remat = &ro;
    oo.ilp = strcmp(sv, "ilp") == 0;
    oo.recompute = strcmp(sv, "joint") == 0 ||
                   (strcmp(sv, "auto") == 0 && ro.solver != MP_REMAT_NONE);
    o->budget = budget;
    snprintf(o->cost_unit, sizeof o->cost_unit, "%s", mp_graph_cost_unit(g));
    st = mp_offload_plan(g, &oo, opt, plan, &o->res);
    o->did = 1;
    return cli_fail_plan(ctx, st, input, &o->infeasible);
}

void cli_offload_json(const cli_offload_args *o, mp__jw *w)
{
    if (!o->did)
        return;
    const mp_offload_result *r = &o->res;
    cli_json_object(w, "offload");
    cli_json_str(w, "status", o->infeasible ? "infeasible"
                                            : mp_solve_status_name(r->status));
    cli_json_str(w, "device", o->dev.name);
    cli_json_str(w, "node_times", o->res.node_times);
    cli_json_str(w, "graph_cost_unit", o->cost_unit);
    const cli_json_size sizes[] = {
        {"budget_bytes", o->budget},
        {"peak_bytes", r->peak_bytes},
        {"no_offload_peak_bytes", r->base_peak_bytes},
        {"offloaded_tensors", r->n_offloaded},
        {"bytes_to_host", r->bytes_to_host},
        {"bytes_to_device", r->bytes_to_device},
    };
    cli_json_sizes(w, sizes, sizeof sizes / sizeof sizes[0]);
    cli_json_str(w, "solver", r->solver);
    cli_json_int(w, "recomputed_nodes", r->n_recomputed);
    cli_json_real(w, "compute_seconds", r->compute_seconds);
    cli_json_real(w, "recompute_seconds", r->recompute_seconds);
    cli_json_real(w, "exposed_transfer_seconds", r->exposed_seconds);
    cli_json_real(w, "total_seconds", r->total_seconds);
    if (r->offload_only_seconds >= 0)
        cli_json_real(w, "offload_only_total_seconds",
                      r->offload_only_seconds);
    if (r->recompute_only_seconds >= 0)
        cli_json_real(w, "recompute_only_total_seconds",
                      r->recompute_only_seconds);
    cli_json_real(w, "seconds", r->seconds);
    mp__jw_end(w);
}

void cli_offload_summary(const cli_offload_args *o)
{
    if (!o->did || o->infeasible)
        return;
    const mp_offload_result *r = &o->res;
    char b1[64], b2[64], name[256];
    printf("offload (%s): peak %s", cli_safe(o->dev.name, name, sizeof name),
           cli_size(r->peak_bytes, b1, sizeof b1));
    if (o->budget)
        printf(" within budget %s", cli_size(o->budget, b2, sizeof b2));
    printf("\n  no-offload peak    %s\n",
           cli_size(r->base_peak_bytes, b1, sizeof b1));
    printf("  moved              %s to host, %s back, %u tensors\n",
           cli_size(r->bytes_to_host, b1, sizeof b1),
           cli_size(r->bytes_to_device, b2, sizeof b2),
           (unsigned)r->n_offloaded);
    if (r->n_recomputed)
        printf("  recomputed         %u nodes\n", (unsigned)r->n_recomputed);
    printf("  time               %.6g s compute + %.6g s recompute + %.6g s "
           "exposed transfer (%s)\n",
           r->compute_seconds, r->recompute_seconds, r->exposed_seconds,
           r->solver ? r->solver : "-");
    if (r->node_times && strcmp(r->node_times, "device") == 0 &&
        strcmp(o->cost_unit, "s") != 0)
        printf("  node times         %s's cost model: the graph's %s "
               "figures are not seconds, and are not added to transfer "
               "seconds\n", name, cli_safe(o->cost_unit, b1, sizeof b1));
}
