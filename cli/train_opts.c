/* train_opts.c - the plan of plan and validate: training (--train),
 * recompute under --budget, offload (cli/offload_opts.c) or the default
 * plan. The work is the library's (mp_train_graph, mp_remat_plan); this
 * file calls it and reports the figures. The options themselves are rows
 * of cli/options.c. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The peak of the plain plan of g (mp_plan_create, attention as given). */
static mp_status plain_peak(const cli_args *a, mp_graph *g,
                            mp_attention_mode m, uint64_t *peak)
{
    mp_plan_options o;
    cli_plan_options(a, &o);
    o.attention = m;
    o.reorder = 0;
    mp_plan *p = NULL;
    mp_status st = mp_plan_create(g, &o, &p);
    if (!st)
        *peak = mp_plan_figures(p)->peak_bytes;
    mp_plan_destroy(p);
    return st;
}

/* The training graph of fwd with attention m, its plain plan's peak. */
static mp_status train_peak(const cli_args *a, const mp_graph *fwd,
                            mp_attention_mode m, uint32_t *n_fused,
                            uint64_t *bytes, uint64_t *peak)
{
    mp_train_options to = a->train.topt;
    to.attention = m;
    mp_graph *tg = NULL;
    mp_train_breakdown bd;
    mp_status st = mp_train_graph(fwd, &to, &tg, &bd);
    if (!st)
        st = plain_peak(a, tg, MP_ATTENTION_NAIVE, peak);
    if (!st && n_fused) {
        *n_fused = bd.n_attention_fused;
        *bytes = bd.attention_bytes;
    }
    mp_graph_destroy(tg);
    return st;
}

int cli_attention_prepare(mp_ctx *ctx, cli_args *a, mp_graph **g,
                          const char *input)
{
    a->train.topt.attention = a->attention;
    a->att_fused = 0;
    if (a->attention != MP_ATTENTION_FUSED)
        return 0;
    mp_status st;
    if (a->train.train) {
        st = train_peak(a, *g, MP_ATTENTION_FUSED, &a->att_fused,
                        &a->att_bytes, &a->att_fused_peak);
        if (!st && a->att_fused)
            st = train_peak(a, *g, MP_ATTENTION_NAIVE, NULL, NULL,
                            &a->att_naive_peak);
    } else {
        st = plain_peak(a, *g, MP_ATTENTION_NAIVE, &a->att_naive_peak);
        if (!st)
            st = mp_graph_fuse_attention(*g, &a->att_fused, &a->att_bytes);
        if (!st && a->att_fused)
            st = plain_peak(a, *g, MP_ATTENTION_NAIVE, &a->att_fused_peak);
    }
    return st ? cli_fail(ctx, st, input) : 0;
}

void cli_attention_print(const cli_args *a)
{
    if (!a->att_fused)
        return;
    char b[96], b2[96], b3[96], b4[96];
    uint64_t saved = a->att_naive_peak > a->att_fused_peak
                         ? a->att_naive_peak - a->att_fused_peak
                         : 0;
    printf("attention    %u chains fused (SDPA): %s of intermediates "
           "removed; peak %s naive, %s fused (%s less%s)\n",
           a->att_fused, cli_size(a->att_bytes, b, sizeof b),
           cli_size(a->att_naive_peak, b2, sizeof b2),
           cli_size(a->att_fused_peak, b3, sizeof b3),
           cli_size(saved, b4, sizeof b4),
           a->train.train ? ", plans saving every value backward reads" : "");
}

void cli_attention_json(const cli_args *a, mp__jw *w)
{
    cli_json_object(w, "attention");
    cli_json_str(w, "mode", mp_attention_name(a->attention));
    cli_json_int(w, "chains_fused", a->att_fused);
    if (a->att_fused) {
        cli_json_u64(w, "removed_bytes", a->att_bytes);
        cli_json_u64(w, "naive_peak_bytes", a->att_naive_peak);
        cli_json_u64(w, "fused_peak_bytes", a->att_fused_peak);
        cli_json_u64(w, "saved_peak_bytes",
                     a->att_naive_peak > a->att_fused_peak
                         ? a->att_naive_peak - a->att_fused_peak
                         : 0);
    }
    mp__jw_end(w);
}

int cli_train_prepare(mp_ctx *ctx, cli_train_args *t, mp_graph **g,
                      const char *input)
{
    if (!t->train)
        return 0;
    mp_graph *tg = NULL;
    mp_device dev;
    mp_status st = MP_OK;
    /* the training graph's nodes are timed on --device */
    t->topt.device = NULL;
    if (t->device) {
        if ((st = mp_device_get(ctx, t->device, &dev)) != MP_OK)
            return cli_fail(ctx, st, t->device);
        t->topt.device = &dev;
    }
    st = mp_train_graph(*g, &t->topt, &tg, &t->bd);
    t->topt.device = NULL;
    if (st != MP_OK)
        return cli_fail(ctx, st, input);
    mp_graph_destroy(*g);
    *g = tg;
    t->did_train = 1;
    return 0;
}

/* --train without --budget, --save mincut: the plan that saves every
 * value backward reads (eager) and the min-cut's; the lower one kept
 * (eager on a tie), both peaks reported. */
static mp_status save_plan(cli_train_args *t, mp_graph *g,
                           const mp_plan_options *opt, mp_plan **plan)
{
    mp_plan *eager = NULL, *mc = NULL;
    mp_status st = mp_plan_create(g, opt, &eager);
    if (st)
        return st;
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = MP_REMAT_MINCUT;
    ro.time_limit = opt->time_limit;
    ro.seed = opt->seed;
    if ((st = mp_remat_plan(g, &ro, opt, &mc, &t->save_rr))) {
        mp_plan_destroy(eager);
        return st;
    }
    t->did_save = 1;
    t->eager_peak = mp_plan_figures(eager)->peak_bytes;
    t->mincut_peak = mp_plan_figures(mc)->peak_bytes;
    if (t->mincut_peak < t->eager_peak) {
        t->save_kept = "mincut";
        mp_plan_destroy(eager);
        *plan = mc;
    } else {
        t->save_kept = "eager";
        mp_plan_destroy(mc);
        *plan = eager;
    }
    return MP_OK;
}

int cli_train_plan(mp_ctx *ctx, cli_train_args *t, mp_graph *g,
                   const mp_plan_options *opt, mp_plan **plan,
                   const char *input)
{
    mp_status st;
    snprintf(t->cost_unit, sizeof t->cost_unit, "%s", mp_graph_cost_unit(g));
    if (!t->remat) {
        if (t->did_train && !t->save_eager)
            st = save_plan(t, g, opt, plan);
        else
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
    opt->attention = a->attention;
}

/* {"graph": NAME, ...what is known} after an infeasible budget */
static void print_infeasible(mp_ctx *ctx, const cli_args *a,
                             const mp_graph *g)
{
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_str(&w, "graph", mp_graph_name(g));
    if (a->offload.enabled)
        cli_offload_json(&a->offload, &w);
    else
        cli_train_json(&a->train, &w);
    cli_json_print(&w);
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
        print_infeasible(ctx, a, g);
    return rc;
}

static void training_json(const cli_train_args *t, mp__jw *w)
{
    const mp_train_breakdown *d = &t->bd;
    cli_json_object(w, "training");
    cli_json_str(w, "optimizer", mp_optimizer_name(t->topt.optimizer));
    cli_json_str(w, "optimizer_impl",
                 mp_optimizer_impl_name(t->topt.optimizer_impl));
    cli_json_str(w, "precision", mp_precision_name(t->topt.precision));
    const cli_json_size sizes[] = {
        {"params", d->n_params},
        {"weight_bytes", d->weight_bytes},
        {"master_weight_bytes", d->master_weight_bytes},
        {"gradient_bytes", d->gradient_bytes},
        {"optimizer_state_bytes", d->optimizer_bytes},
        {"saved_activation_bytes", d->saved_bytes},
        {"temporary_bytes", d->temporary_bytes},
        {"frozen_bytes", d->frozen_bytes},
        {"cast_weight_bytes", d->cast_weight_bytes},
    };
    cli_json_sizes(w, sizes, sizeof sizes / sizeof sizes[0]);
    mp__jw_end(w);
}

/* The extra cost's LP lower bound: its value (null: none) and kind. */
static void lp_bound_json(const mp_remat_result *x, mp__jw *w)
{
    static const char *const kinds[] = {"none", "lp", "lp-duals", "milp",
                                        "stage-lp"};
    int k = x->lower_bound_kind;
    if (x->lower_bound_cost >= 0)
        cli_json_real(w, "lp_lower_bound_extra_cost", x->lower_bound_cost);
    else
        cli_json_null(w, "lp_lower_bound_extra_cost");
    cli_json_str(w, "lp_lower_bound_kind",
                 x->lower_bound_cost >= 0 && k >= 0 && k <= 4 ? kinds[k]
                                                               : "none");
}

static void max_batch_json(const cli_train_args *t, mp__jw *w)
{
    const mp_remat_result *y = &t->max_batch_rr;
    cli_json_object(w, "maximize_batch");
    cli_json_u64(w, "graph_batch", t->batch ? t->batch : 1);
    cli_json_u64(w, "max_batch", t->max_batch);
    cli_json_u64(w, "peak_bytes", y->peak_bytes);
    cli_json_real(w, "extra_cost", y->extra_cost);
    cli_json_str(w, "solver", y->solver);
    mp__jw_end(w);
}

static void recompute_json(const cli_train_args *t, mp__jw *w)
{
    const mp_remat_result *x = &t->rr;
    cli_json_object(w, "recompute");
    cli_json_str(w, "status", t->infeasible ? "infeasible"
                                            : mp_solve_status_name(x->status));
    cli_json_str(w, "solver", x->solver);
    const cli_json_size sizes[] = {
        {"budget_bytes", t->ropt.budget},
        {"peak_bytes", x->peak_bytes},
        {"min_peak_bytes", x->min_peak_bytes},
        {"min_placed_peak_bytes", x->min_placed_peak_bytes},
        {"peak_lower_bound_bytes", x->peak_lower_bound},
        {"no_recompute_peak_bytes", x->base_peak_bytes},
    };
    cli_json_sizes(w, sizes, sizeof sizes / sizeof sizes[0]);
    cli_json_str(w, "cost_unit", t->cost_unit);
    cli_json_real(w, "base_cost", x->base_cost);
    cli_json_real(w, "extra_cost", x->extra_cost);
    cli_json_real(w, "extra_flops", x->extra_flops);
    cli_json_real(w, "overhead", x->base_cost > 0 ? (x->base_cost +
                                                     x->extra_cost) /
                                                        x->base_cost
                                                  : 1);
    lp_bound_json(x, w);
    cli_json_int(w, "recompute_steps", x->n_recompute);
    cli_json_real(w, "seconds", x->seconds);
    if (t->did_max)
        max_batch_json(t, w);
    mp__jw_end(w);
}

/* "save": what --save chose and both peaks */
static void save_json(const cli_train_args *t, mp__jw *w)
{
    const mp_remat_result *x = &t->save_rr;
    cli_json_object(w, "save");
    cli_json_str(w, "mode", "mincut");
    cli_json_str(w, "kept", t->save_kept);
    cli_json_str(w, "solver", x->solver);
    const cli_json_size sizes[] = {
        {"eager_peak_bytes", t->eager_peak},
        {"mincut_peak_bytes", t->mincut_peak},
    };
    cli_json_sizes(w, sizes, sizeof sizes / sizeof sizes[0]);
    cli_json_str(w, "cost_unit", t->cost_unit);
    cli_json_real(w, "base_cost", x->base_cost);
    cli_json_real(w, "extra_cost", x->extra_cost);
    cli_json_real(w, "extra_flops", x->extra_flops);
    cli_json_int(w, "recompute_steps", x->n_recompute);
    mp__jw_end(w);
}

void cli_train_json(const cli_train_args *t, mp__jw *w)
{
    if (t->did_train)
        training_json(t, w);
    if (t->did_save)
        save_json(t, w);
    if (t->did_remat)
        recompute_json(t, w);
}

void cli_train_summary(const cli_train_args *t)
{
    char b1[64];
    if (t->did_train) {
        const mp_train_breakdown *d = &t->bd;
        printf("training (%s %s, %s): %llu parameters\n",
               mp_optimizer_name(t->topt.optimizer),
               mp_optimizer_impl_name(t->topt.optimizer_impl),
               mp_precision_name(t->topt.precision),
               (unsigned long long)d->n_params);
        printf("  weights            %s\n", cli_size(d->weight_bytes, b1, sizeof b1));
        if (d->master_weight_bytes)
            printf("  master weights     %s\n",
                   cli_size(d->master_weight_bytes, b1, sizeof b1));
        if (d->cast_weight_bytes)
            printf("  weight casts       %s (autocast's copies, held "
                   "through forward)\n",
                   cli_size(d->cast_weight_bytes, b1, sizeof b1));
        printf("  gradients          %s\n", cli_size(d->gradient_bytes, b1, sizeof b1));
        printf("  optimizer state    %s\n", cli_size(d->optimizer_bytes, b1, sizeof b1));
        printf("  saved activations  %s\n", cli_size(d->saved_bytes, b1, sizeof b1));
        printf("  temporaries        %s (largest optimizer temporary)\n",
               cli_size(d->temporary_bytes, b1, sizeof b1));
    }
    if (t->did_save) {
        const mp_remat_result *x = &t->save_rr;
        char b2[64];
        printf("save (mincut, %s kept): peak %s; eager %s\n", t->save_kept,
               cli_size(t->mincut_peak, b1, sizeof b1),
               cli_size(t->eager_peak, b2, sizeof b2));
        printf("  extra compute      %.4g %s (%.2f%% of %.4g), %u recompute "
               "steps%s\n",
               x->extra_cost, t->cost_unit,
               x->base_cost > 0 ? 100.0 * x->extra_cost / x->base_cost : 0.0,
               x->base_cost, (unsigned)x->n_recompute,
               strcmp(x->solver ? x->solver : "", "mincut") == 0
                   ? ""
                   : " (the min-cut schedule peaked higher: none)");
    }
    if (t->did_remat && !t->infeasible) {
        const mp_remat_result *x = &t->rr;
        printf("recompute (%s): peak %s", x->solver ? x->solver : "?",
               cli_size(x->peak_bytes, b1, sizeof b1));
        printf(" within budget %s\n", cli_size(t->ropt.budget, b1, sizeof b1));
        printf("  no-recompute peak  %s\n",
               cli_size(x->base_peak_bytes, b1, sizeof b1));
        printf("  extra compute      %.4g %s (%.2f%% of %.4g), %u recompute "
               "steps\n",
               x->extra_cost, t->cost_unit,
               x->base_cost > 0 ? 100.0 * x->extra_cost / x->base_cost : 0.0,
               x->base_cost, (unsigned)x->n_recompute);
        if (x->lower_bound_cost >= 0)
            printf("  LP lower bound     %.4g %s extra (%s)\n",
                   x->lower_bound_cost, t->cost_unit,
                   x->status == MP_SOLVE_OPTIMAL ? "reached: optimal"
                                                 : "certificate");
        if (t->did_max)
            printf("  max batch          %llu (graph at batch %llu): peak %s, "
                   "%.4g %s extra (%s)\n",
                   (unsigned long long)t->max_batch,
                   (unsigned long long)(t->batch ? t->batch : 1),
                   cli_size(t->max_batch_rr.peak_bytes, b1, sizeof b1),
                   t->max_batch_rr.extra_cost, t->cost_unit,
                   t->max_batch_rr.solver ? t->max_batch_rr.solver : "?");
    }
}
