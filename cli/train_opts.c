/* train_opts.c - the plan of plan and validate: training (--train),
 * recompute under --budget, offload (cli/offload_opts.c) or the default
 * plan. The work is the library's (mp_train_graph, mp_remat_plan); this
 * file calls it and reports the figures. The options themselves are rows
 * of cli/options.c. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cli_train_prepare(mp_ctx *ctx, cli_train_args *t, mp_graph **g,
                      const char *input)
{
    if (!t->train)
        return 0;
    mp_graph *tg = NULL;
    mp_status st = mp_train_graph(*g, &t->topt, &tg, &t->bd);
    if (st != MP_OK)
        return cli_fail(ctx, st, input);
    mp_graph_destroy(*g);
    *g = tg;
    t->did_train = 1;
    return 0;
}

int cli_train_plan(mp_ctx *ctx, cli_train_args *t, mp_graph *g,
                   const mp_plan_options *opt, mp_plan **plan,
                   const char *input)
{
    mp_status st;
    if (!t->remat) {
        st = mp_plan_create(g, opt, plan);
        return st == MP_OK ? 0 : cli_fail(ctx, st, input);
    }
    if (t->have_max_extra) {
        /* a fraction of the forward compute */
        double fwd = 0;
        for (uint32_t v = 0; v < mp_graph_num_nodes(g); v++) {
            mp_node_info ni;
            if (mp_graph_node_info(g, v, &ni) == MP_OK &&
                ni.phase == MP_PHASE_FORWARD)
                fwd += mp_node_cost(g, v);
        }
        t->ropt.max_extra_cost = t->max_extra * fwd;
    }
    t->ropt.time_limit = opt->time_limit;
    t->ropt.seed = opt->seed;
    if (t->maximize) {
        mp_remat_result mr;
        st = mp_remat_max_batch(g, t->batch ? t->batch : 1, 0, &t->ropt, opt,
                                &t->max_batch, &mr);
        if (st == MP_ERR_INFEASIBLE) {
            t->did_remat = 1;
            t->rr = mr;
        }
        if (st != MP_OK)
            return cli_fail_plan(ctx, st, input, &t->infeasible);
        t->max_batch_rr = mr;
        t->did_max = 1;
    }
    st = mp_remat_plan(g, &t->ropt, opt, plan, &t->rr);
    t->did_remat = 1;
    return cli_fail_plan(ctx, st, input, &t->infeasible);
}

void cli_plan_options(const cli_args *a, mp_plan_options *opt)
{
    mp_plan_options_init(opt);
    opt->alignment = a->alignment;
    opt->method = a->method;
    opt->seed = a->seed;
    opt->time_limit = a->time_limit;
    opt->inplace = !a->no_inplace;
    opt->fuse = a->fuse;
    opt->reorder = a->reorder;
}

/* {"graph": NAME, ...what is known} after an infeasible budget */
static void print_infeasible(const cli_args *a, const mp_graph *g)
{
    json_t *o = json_object();
    if (o && !cli_json_set(o, "graph", cli_json_str(mp_graph_name(g))) &&
        !(a->offload.enabled ? cli_offload_json(&a->offload, o)
                             : cli_train_json(&a->train, o)))
        cli_json_print(o);
    else
        json_decref(o);
}

int cli_make_plan(mp_ctx *ctx, cli_args *a, mp_graph *g,
                  const mp_plan_options *opt, mp_plan **plan,
                  int json_infeasible)
{
    int rc;
    a->train.remat = cli_given(a, CLI_O_BUDGET);
    if (a->offload.enabled) {
        /* --offload: the offload planner under --budget */
        a->offload.ropt = &a->train.ropt;
        rc = cli_offload_plan(ctx, &a->offload, a->train.ropt.budget, g, opt,
                              plan, a->pos[0]);
    } else {
        rc = cli_train_plan(ctx, &a->train, g, opt, plan, a->pos[0]);
    }
    int infeasible = a->offload.enabled ? a->offload.infeasible
                                        : a->train.infeasible;
    if (rc && infeasible && json_infeasible && a->json)
        print_infeasible(a, g);
    return rc;
}

static json_t *jnum(double v) { return json_real(v); }

int cli_train_json(const cli_train_args *t, json_t *o)
{
    int bad = 0;
    if (t->did_train) {
        json_t *b = json_object();
        if (!b)
            return 1;
        const mp_train_breakdown *d = &t->bd;
        bad |= cli_json_set(b, "optimizer",
                            json_string(mp_optimizer_name(t->topt.optimizer)));
        bad |= cli_json_set(b, "precision",
                            json_string(mp_precision_name(t->topt.precision)));
        bad |= cli_json_set(b, "params", cli_json_u64(d->n_params));
        bad |= cli_json_set(b, "weight_bytes", cli_json_u64(d->weight_bytes));
        bad |= cli_json_set(b, "master_weight_bytes",
                            cli_json_u64(d->master_weight_bytes));
        bad |= cli_json_set(b, "gradient_bytes", cli_json_u64(d->gradient_bytes));
        bad |= cli_json_set(b, "optimizer_state_bytes",
                            cli_json_u64(d->optimizer_bytes));
        bad |= cli_json_set(b, "saved_activation_bytes",
                            cli_json_u64(d->saved_bytes));
        bad |= cli_json_set(b, "temporary_bytes",
                            cli_json_u64(d->temporary_bytes));
        bad |= cli_json_set(b, "frozen_bytes", cli_json_u64(d->frozen_bytes));
        bad |= cli_json_set(o, "training", b);
    }
    if (t->did_remat) {
        json_t *r = json_object();
        if (!r)
            return 1;
        const mp_remat_result *x = &t->rr;
        bad |= cli_json_set(r, "status",
                            json_string(t->infeasible
                                            ? "infeasible"
                                            : mp_solve_status_name(x->status)));
        bad |= cli_json_set(r, "solver", cli_json_str(x->solver ? x->solver
                                                                : ""));
        bad |= cli_json_set(r, "budget_bytes", cli_json_u64(t->ropt.budget));
        bad |= cli_json_set(r, "peak_bytes", cli_json_u64(x->peak_bytes));
        bad |= cli_json_set(r, "min_peak_bytes",
                            cli_json_u64(x->min_peak_bytes));
        bad |= cli_json_set(r, "min_placed_peak_bytes",
                            cli_json_u64(x->min_placed_peak_bytes));
        bad |= cli_json_set(r, "peak_lower_bound_bytes",
                            cli_json_u64(x->peak_lower_bound));
        bad |= cli_json_set(r, "no_recompute_peak_bytes",
                            cli_json_u64(x->base_peak_bytes));
        bad |= cli_json_set(r, "base_cost", jnum(x->base_cost));
        bad |= cli_json_set(r, "extra_cost", jnum(x->extra_cost));
        bad |= cli_json_set(r, "extra_flops", jnum(x->extra_flops));
        bad |= cli_json_set(r, "overhead",
                            jnum(x->base_cost > 0 ? (x->base_cost +
                                                     x->extra_cost) /
                                                        x->base_cost
                                                  : 1));
        bad |= cli_json_set(r, "lp_lower_bound_extra_cost",
                            x->lower_bound_cost >= 0
                                ? jnum(x->lower_bound_cost)
                                : json_null());
        {
            static const char *const kinds[] = {"none", "lp", "lp-duals",
                                                "milp", "stage-lp"};
            int k = x->lower_bound_kind;
            bad |= cli_json_set(
                r, "lp_lower_bound_kind",
                json_string(x->lower_bound_cost >= 0 && k >= 0 && k <= 4
                                ? kinds[k]
                                : "none"));
        }
        bad |= cli_json_set(r, "recompute_steps",
                            json_integer(x->n_recompute));
        bad |= cli_json_set(r, "seconds", jnum(x->seconds));
        if (t->did_max) {
            json_t *mb = json_object();
            if (!mb)
                return 1;
            const mp_remat_result *y = &t->max_batch_rr;
            bad |= cli_json_set(mb, "graph_batch",
                                cli_json_u64(t->batch ? t->batch : 1));
            bad |= cli_json_set(mb, "max_batch", cli_json_u64(t->max_batch));
            bad |= cli_json_set(mb, "peak_bytes", cli_json_u64(y->peak_bytes));
            bad |= cli_json_set(mb, "extra_cost", jnum(y->extra_cost));
            bad |= cli_json_set(mb, "solver",
                                cli_json_str(y->solver ? y->solver : ""));
            bad |= cli_json_set(r, "maximize_batch", mb);
        }
        bad |= cli_json_set(o, "recompute", r);
    }
    return bad;
}

void cli_train_summary(const cli_train_args *t)
{
    char b1[64];
    if (t->did_train) {
        const mp_train_breakdown *d = &t->bd;
        printf("training (%s, %s): %llu parameters\n",
               mp_optimizer_name(t->topt.optimizer),
               mp_precision_name(t->topt.precision),
               (unsigned long long)d->n_params);
        printf("  weights            %s\n", cli_size(d->weight_bytes, b1, sizeof b1));
        if (d->master_weight_bytes)
            printf("  master weights     %s\n",
                   cli_size(d->master_weight_bytes, b1, sizeof b1));
        printf("  gradients          %s\n", cli_size(d->gradient_bytes, b1, sizeof b1));
        printf("  optimizer state    %s\n", cli_size(d->optimizer_bytes, b1, sizeof b1));
        printf("  saved activations  %s\n", cli_size(d->saved_bytes, b1, sizeof b1));
        printf("  temporaries        %s (largest optimizer temporary)\n",
               cli_size(d->temporary_bytes, b1, sizeof b1));
    }
    if (t->did_remat && !t->infeasible) {
        const mp_remat_result *x = &t->rr;
        printf("recompute (%s): peak %s", x->solver ? x->solver : "?",
               cli_size(x->peak_bytes, b1, sizeof b1));
        printf(" within budget %s\n", cli_size(t->ropt.budget, b1, sizeof b1));
        printf("  no-recompute peak  %s\n",
               cli_size(x->base_peak_bytes, b1, sizeof b1));
        printf("  extra compute      %.4g (%.2f%% of %.4g), %u recompute steps\n",
               x->extra_cost,
               x->base_cost > 0 ? 100.0 * x->extra_cost / x->base_cost : 0.0,
               x->base_cost, (unsigned)x->n_recompute);
        if (x->lower_bound_cost >= 0)
            printf("  LP lower bound     %.4g extra (%s)\n", x->lower_bound_cost,
                   x->status == MP_SOLVE_OPTIMAL ? "reached: optimal"
                                                 : "certificate");
        if (t->did_max)
            printf("  max batch          %llu (graph at batch %llu): peak %s, "
                   "%.4g extra (%s)\n",
                   (unsigned long long)t->max_batch,
                   (unsigned long long)(t->batch ? t->batch : 1),
                   cli_size(t->max_batch_rr.peak_bytes, b1, sizeof b1),
                   t->max_batch_rr.extra_cost,
                   t->max_batch_rr.solver ? t->max_batch_rr.solver : "?");
    }
}
