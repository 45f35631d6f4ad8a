/* report.c - what `memplan validate` reports after a run: the device
 * memory predicted from the plan against what the run measured, the time
 * against the cost model, and the checks (docs/validation.md); the
 * lowering --lower-only prints; and the executor's options from the
 * command line, which every form of the command (main.c, ranks_cmd.c,
 * serve_cmd.c) runs with. */
#include "command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    return g > 1 ? (v + g - 1) / g * g : v;
}

int mpv_cmd_figures_get(mpv_cmd *v, mpv_cmd_figures *f)
{
    const mp_figures *pf = mp_plan_figures(v->plan);
    const mpv_program *prog = v->prog;
    const mpv_result *res = &v->res;
    int no_ref = v->a->no_reference;
    memset(f, 0, sizeof *f);
    f->gran = res->granularity ? res->granularity : 1;
    f->cublas_ws = MPV_CUBLAS_WS_BYTES;
    f->pred_arena = round_up(pf->arena_bytes, f->gran);
    f->pred_ws = round_up(prog->workspace_bytes + f->cublas_ws, f->gran);
    f->pred_w = round_up(prog->weights_bytes, f->gran);
    f->pred_total = f->pred_arena + f->pred_ws + f->pred_w;
    f->r_arena = ratio(res->arena_measured, f->pred_arena);
    f->r_aw = ratio(res->arena_measured + res->workspace_measured,
                    f->pred_arena + f->pred_ws);
    f->r_total = ratio(res->peak_measured, f->pred_total);
    f->ok_arena = res->arena_measured == f->pred_arena;
    f->ok_ws = f->r_aw >= 0.99 && f->r_aw <= 1.01;
    f->ok_id = no_ref || res->outputs_identical;
    f->ok_rep = res->planned_repeatable;
    /* the reference run allocates every tensor on its own: its live
     * bytes equal the planner's lower bound, or exceed it where the
     * plan wrote outputs in place over dying inputs or fused values */
    for (uint32_t i = 0; i < mp_plan_num_blocks(v->plan); i++)
        f->n_over += mp_plan_block_over(v->plan, i) != MP_NONE;
    f->ok_lb = !prog->compute_only || no_ref ||
               (f->n_over || prog->n_fused_refs
                    ? res->ref_live_max >= pf->lower_bound_bytes
                    : res->ref_live_max == pf->lower_bound_bytes);
    f->ok_extra = res->run_extra_bytes == 0;
    f->all_ok = f->ok_arena && f->ok_ws && f->ok_id && f->ok_rep &&
                f->ok_lb && f->ok_extra;
    /* predicted time: the cost model over the schedule, on --device */
    v->step_s = calloc(prog->n_steps + 1, sizeof *v->step_s);
    if (!v->step_s)
        return CLI_EXIT_INTERNAL;
    mp_status st = mp_device_get(v->ctx, v->a->offload.device, &f->dev);
    if (st)
        return cli_fail(v->ctx, st, v->a->offload.device);
    f->pred_s = mpv_predict_seconds(prog, &f->dev, v->step_s);
    f->have_pred = f->pred_s >= 0;
    return 0;
}

/* A real member; one that is not finite is left out (as the report has
 * always done). */
static void real(mp__jw *w, const char *key, double v)
{
    if (isfinite(v))
        cli_json_real(w, key, v);
}

/* predicted and measured (per-step events) milliseconds summed by op */
static void by_op_json(mp__jw *w, const mpv_program *prog,
                       const double *step_s, const mpv_result *res)
{
    enum { MAXOP = 96 };
    const char *name[MAXOP];
    double pred[MAXOP], meas[MAXOP];
    uint32_t cnt[MAXOP], n = 0;
    for (uint32_t s = 0; s < prog->n_steps && s < res->n_steps; s++) {
        const mpv_step *ps = &prog->steps[s];
        const char *op;
        if (ps->kind == MP_STEP_COMPUTE || ps->kind == MP_STEP_RECOMPUTE) {
            mp_node_info ni;
            mp_graph_node_info(prog->graph, ps->index, &ni);
            if (!prog->nodes[ps->index].run)
                continue;
            op = ni.op;
        } else if (ps->kind == MP_STEP_OFFLOAD) {
            op = "(offload)";
        } else if (ps->kind == MP_STEP_PREFETCH) {
            op = "(prefetch)";
        } else {
            continue;
        }
        uint32_t k = 0;
        while (k < n && strcmp(name[k], op) != 0)
            k++;
        if (k == n) {
            if (n == MAXOP)
                continue;
            name[n] = op;
            pred[n] = meas[n] = 0;
            cnt[n++] = 0;
        }
        pred[k] += step_s[s] * 1e3;
        meas[k] += res->steps[s].ms;
        cnt[k]++;
    }
    cli_json_object(w, "by_op");
    for (uint32_t k = 0; k < n; k++) {
        if (!mp__utf8_valid(name[k]))
            continue;   /* a key that is not UTF-8 is left out */
        cli_json_object(w, name[k]);
        cli_json_int(w, "steps", cnt[k]);
        real(w, "predicted_ms", pred[k]);
        real(w, "measured_ms", meas[k]);
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

/* "predicted": the plan's figures and the device memory they need */
static void predicted_json(mp__jw *w, const mpv_cmd *v,
                           const mpv_cmd_figures *f)
{
    const mp_figures *pf = mp_plan_figures(v->plan);
    const cli_json_size rows[] = {
        {"arena_bytes", pf->arena_bytes},
        {"lower_bound_bytes", pf->lower_bound_bytes},
        {"persistent_bytes", pf->persistent_bytes},
        {"peak_bytes", pf->peak_bytes},
        {"workspace_bytes", v->prog->workspace_bytes + f->cublas_ws},
        {"weights_buffer_bytes", v->prog->weights_bytes},
        {"arena_device_bytes", f->pred_arena},
        {"total_device_bytes", f->pred_total},
    };
    cli_json_object(w, "predicted");
    cli_json_sizes(w, rows, sizeof rows / sizeof rows[0]);
    if (f->have_pred)
        real(w, "seconds", f->pred_s);
    else
        cli_json_null(w, "seconds");
    cli_json_str(w, "time_device", f->dev.name);
    mp__jw_end(w);
}

/* "conv_passes": the convolution passes on cuDNN (of them on the
 * heuristics' first choice) and on the direct kernel, the most workspace
 * a first choice wanted beyond the plan's, the most one chosen uses */
static void conv_json(mp__jw *w, const mpv_result *res)
{
    const cli_json_size rows[] = {
        {"first_choice_over_plan_max_bytes", res->conv_first_ws_max},
        {"workspace_used_max_bytes", res->conv_ws_used_max},
    };
    cli_json_object(w, "conv_passes");
    cli_json_str(w, "math", res->conv_fp32 ? "fp32" : "tf32");
    cli_json_int(w, "cudnn", res->conv_cudnn);
    cli_json_int(w, "cudnn_first_choice", res->conv_first);
    cli_json_int(w, "direct", res->conv_direct);
    cli_json_sizes(w, rows, sizeof rows / sizeof rows[0]);
    mp__jw_end(w);
}

/* "measured": what the run used, by part, and its times */
static void measured_json(mp__jw *w, const mpv_result *res)
{
    const cli_json_size rows[] = {
        {"context_bytes", res->ctx_bytes},
        {"cublas_bytes", res->cublas_bytes},
        {"nccl_bytes", res->nccl_bytes},
        {"cudnn_bytes", res->cudnn_bytes},
        {"weights_bytes", res->weights_measured},
        {"workspace_bytes", res->workspace_measured},
        {"arena_bytes", res->arena_measured},
        {"peak_bytes", res->peak_measured},
        {"lazy_library_bytes", res->lazy_bytes},
        {"run_extra_bytes", res->run_extra_bytes},
        {"staging_host_bytes", res->staging_host_bytes},
        {"reference_pool_high_bytes", res->ref_pool_high},
        {"reference_pool_reserved_high_bytes", res->ref_pool_reserved_high},
        {"reference_live_max_bytes", res->ref_live_max},
    };
    cli_json_object(w, "measured");
    cli_json_sizes(w, rows, sizeof rows / sizeof rows[0]);
    real(w, "planned_ms", res->planned_ms);
    real(w, "planned_graph_ms", res->planned_graph_ms);
    if (res->graph_note[0])
        cli_json_str(w, "graph_note", res->graph_note);
    real(w, "steps_ms_sum", res->steps_ms_sum);
    /* --step-times: the steps were timed by events alone */
    cli_json_bool(w, "steps_events_only", res->steps_events_only);
    real(w, "reference_ms", res->reference_ms);
    real(w, "max_abs_output", res->max_abs_output);
    {
        char h[2][32];
        snprintf(h[0], sizeof h[0], "%016llx",
                 (unsigned long long)res->outputs_hash);
        snprintf(h[1], sizeof h[1], "%016llx",
                 (unsigned long long)res->weights_hash);
        cli_json_str(w, "outputs_hash", h[0]);
        real(w, "first_output", res->first_output);
        if (res->weights_hash)
            cli_json_str(w, "weights_after_hash", h[1]);
    }
    cli_json_int(w, "nonfinite_outputs", res->nonfinite_outputs);
    conv_json(w, res);
    mp__jw_end(w);
}

/* A check: true or false, or null where it was not made. */
static void check(mp__jw *w, const char *key, int made, int ok)
{
    if (made)
        cli_json_bool(w, key, ok);
    else
        cli_json_null(w, key);
}

/* "checks" */
static void checks_json(mp__jw *w, const mpv_cmd *v, const mpv_cmd_figures *f)
{
    int no_ref = v->a->no_reference;
    cli_json_object(w, "checks");
    cli_json_bool(w, "arena_exact", f->ok_arena);
    cli_json_bool(w, "arena_workspace_within_1pct", f->ok_ws);
    check(w, "outputs_identical", !no_ref, v->res.outputs_identical);
    cli_json_bool(w, "planned_repeatable", f->ok_rep);
    check(w, "live_max_equals_lower_bound", v->prog->compute_only && !no_ref,
          f->ok_lb);
    cli_json_bool(w, "no_growth_while_running", f->ok_extra);
    cli_json_bool(w, "all", f->all_ok);
    mp__jw_end(w);
}

/* "parallel": --dp/--pp --rank, the rank run and its predicted breakdown */
static void rank_json(mp__jw *w, const mpv_cmd *v)
{
    const mp_parallel_options *po = &v->a->par.po;
    cli_json_object(w, "parallel");
    cli_json_int(w, "rank", v->a->par.rank);
    cli_json_int(w, "ranks", mp_parallel_num_ranks(v->par));
    cli_json_int(w, "dp", po->dp);
    cli_json_int(w, "zero", po->zero);
    cli_json_int(w, "pp", po->pp);
    cli_json_int(w, "microbatches", po->microbatches);
    cli_json_str(w, "schedule", mp_pp_schedule_name(po->schedule));
    cli_json_int(w, "offload_optimizer", po->offload_optimizer);
    cli_json_int(w, "stage", v->ri.stage);
    cli_json_int(w, "in_flight", v->ri.in_flight);
    cli_json_int(w, "collectives", v->ri.n_collectives);
    mp_rank_breakdown bd;
    if (mp_parallel_breakdown(v->par,
                              mp_parallel_distinct_of(v->par, v->a->par.rank),
                              v->plan, &bd) == MP_OK) {
        cli_rank_breakdown_json(w, &bd);
        cli_json_u64(w, "host_bytes", v->ri.host_bytes);
    }
    mp__jw_end(w);
}

int mpv_cmd_report_json(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    mp__jw w;
    cli_json_begin(&w, v->ctx);
    cli_json_str(&w, "model", v->a->pos[0]);
    mpv_cmd_json_members(&w, v, f);
    return cli_json_print(&w);
}

void mpv_cmd_json_members(mp__jw *w, const mpv_cmd *v,
                          const mpv_cmd_figures *f)
{
    const mpv_program *prog = v->prog;
    const mpv_result *res = &v->res;
    const cli_args *a = v->a;
    if (v->par)
        rank_json(w, v);
    cli_json_str(w, "device", res->device);
    cli_json_int(w, "nodes_real_kernel", prog->n_real);
    cli_json_int(w, "nodes_synthetic", prog->n_synthetic);
    cli_json_int(w, "setup_nodes", prog->n_setup);
    cli_json_int(w, "setup_nodes_left", prog->n_setup_left);
    cli_json_int(w, "backward_nodes_real_kernel", prog->n_bwd_real);
    cli_json_int(w, "backward_nodes_synthetic", prog->n_bwd_synthetic);
    cli_json_int(w, "optimizer_nodes_real_kernel", prog->n_opt_real);
    cli_json_int(w, "optimizer_nodes_synthetic", prog->n_opt_synthetic);
    cli_json_int(w, "steps", prog->n_steps);
    cli_json_int(w, "recompute_steps", prog->n_recompute);
    cli_json_int(w, "offload_steps", prog->n_offload);
    cli_json_int(w, "prefetch_steps", prog->n_prefetch);
    cli_json_u64(w, "granularity", f->gran);
    predicted_json(w, v, f);
    measured_json(w, res);
    by_op_json(w, prog, v->step_s, res);
    if (f->have_pred && res->planned_ms > 0)
        real(w, "ratio_time_measured_predicted",
             res->planned_ms / (f->pred_s * 1e3));
    cli_train_json(&a->train, w);
    cli_attention_json(a, w);
    cli_offload_json(&a->offload, w);
    real(w, "ratio_arena", f->r_arena);
    real(w, "ratio_arena_workspace", f->r_aw);
    real(w, "ratio_total", f->r_total);
    cli_json_int(w, "inplace_blocks", f->n_over);
    checks_json(w, v, f);
}

void mpv_cmd_report_text(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    const mp_figures *pf = mp_plan_figures(v->plan);
    const mpv_program *prog = v->prog;
    const mpv_result *res = &v->res;
    char b1[64], b2[64], b3[64];
    printf("model        %s on %s\n", v->a->pos[0], res->device);
    if (v->par) {
        const mp_parallel_options *po = &v->a->par.po;
        printf("rank         %u of %u (dp %u, ZeRO-%d", (unsigned)v->a->par.rank,
               (unsigned)mp_parallel_num_ranks(v->par), (unsigned)po->dp,
               po->zero);
        if (po->pp > 1)
            printf(", pp %u, %u micro-batches, %s", (unsigned)po->pp,
                   (unsigned)po->microbatches,
                   mp_pp_schedule_name(po->schedule));
        printf("): stage %u, %u collectives run as local copies of their "
               "buffers (docs/distributed.md)\n", (unsigned)v->ri.stage,
               (unsigned)v->ri.n_collectives);
    }
    printf("nodes        %u real kernels, %u synthetic; %u steps "
           "(%u recompute, %u offload, %u prefetch)\n",
           prog->n_real, prog->n_synthetic, prog->n_steps, prog->n_recompute,
           prog->n_offload, prog->n_prefetch);
    if (prog->n_setup + prog->n_setup_left)
        printf("folded       %u nodes computed once after the weights are "
               "uploaded (constants of the graph), %u left with their "
               "initial fill\n",
               prog->n_setup, prog->n_setup_left);
    cli_attention_print(v->a);
    printf("context      %s, cuBLAS handle %s, first-run library "
           "allocations %s (not in the plan)\n",
           cli_size(res->ctx_bytes, b1, sizeof b1),
           cli_size(res->cublas_bytes, b2, sizeof b2),
           cli_size(res->lazy_bytes, b3, sizeof b3));
    if (res->cudnn_bytes || res->conv_cudnn || res->conv_direct)
        printf("conv         %u passes on cuDNN (%s; %u its first choice; "
               "a first choice wanted up to %s beyond the plan), %u on the "
               "direct kernel; cuDNN handle %s\n",
               res->conv_cudnn, res->conv_fp32 ? "fp32" : "tf32",
               res->conv_first,
               cli_size(res->conv_first_ws_max, b1, sizeof b1),
               res->conv_direct, cli_size(res->cudnn_bytes, b2, sizeof b2));
    printf("arena        predicted %s (plan %s, granule %llu), measured %s, "
           "ratio %.3f\n",
           cli_size(f->pred_arena, b1, sizeof b1),
           cli_size(pf->arena_bytes, b2, sizeof b2),
           (unsigned long long)f->gran,
           cli_size(res->arena_measured, b3, sizeof b3), f->r_arena);
    printf("workspace    predicted %s, measured %s\n",
           cli_size(f->pred_ws, b1, sizeof b1),
           cli_size(res->workspace_measured, b2, sizeof b2));
    printf("weights      predicted %s (persistent %s), measured %s\n",
           cli_size(f->pred_w, b1, sizeof b1),
           cli_size(pf->persistent_bytes, b2, sizeof b2),
           cli_size(res->weights_measured, b3, sizeof b3));
    printf("arena+ws     ratio %.4f\n", f->r_aw);
    printf("total        predicted %s, measured peak %s, ratio %.4f "
           "(growth while running %s)\n",
           cli_size(f->pred_total, b1, sizeof b1),
           cli_size(res->peak_measured, b2, sizeof b2), f->r_total,
           cli_size(res->run_extra_bytes, b3, sizeof b3));
    printf("reference    live max %s (lower bound %s; %u blocks in place), "
           "pool high %s\n",
           cli_size(res->ref_live_max, b1, sizeof b1),
           cli_size(pf->lower_bound_bytes, b2, sizeof b2),
           (unsigned)f->n_over, cli_size(res->ref_pool_high, b3, sizeof b3));
    printf("time         planned %.3f ms (steps %.3f ms), reference %.3f ms",
           res->planned_ms, res->steps_ms_sum, res->reference_ms);
    if (res->planned_graph_ms > 0)
        printf(", as one CUDA graph %.3f ms", res->planned_graph_ms);
    else if (res->graph_note[0])
        printf(", no CUDA graph (%s)", res->graph_note);
    if (f->have_pred)
        printf(", predicted %.3f ms (%s cost model)", f->pred_s * 1e3,
               f->dev.name);
    printf("\n");
    printf("outputs      %s, repeatable %s, %llu bytes, max |y| %g, "
           "%d non-finite\n",
           v->a->no_reference ? "not compared"
           : res->outputs_identical ? "bit-identical"
                                    : "DIFFER",
           f->ok_rep ? "yes" : "NO", (unsigned long long)res->output_bytes,
           res->max_abs_output, res->nonfinite_outputs);
    printf("checks       %s\n", f->all_ok ? "all passed" : "FAILED");
}

/* the executor's options from the command line */
void mpv_cmd_run_options(const cli_args *a, mpv_options *vo)
{
    mpv_options_init(vo);
    vo->seed = a->seed + 1;
    vo->reference = !a->no_reference;
    vo->poison_free = a->poison;
    vo->step_times = a->step_times;
    vo->conv_fp32 = a->conv_fp32;
    vo->keep_weights = 1;
}

/* --lower-only: the convolution passes by how they run (cuDNN, the
 * direct kernel, im2col), when there are any */
static void print_conv_passes(const mpv_program *prog)
{
    uint32_t n[3][2] = {{0}}, im2col = 0;
    for (uint32_t i = 0; i < prog->n_launches; i++) {
        const mpv_launch *l = &prog->launches[i];
        if (l->kind == MPV_L_CONV)
            im2col++;
        else if (l->kind == MPV_L_CONV_DNN && l->p.dnn.pass >= 0 &&
                 l->p.dnn.pass < 3)
            n[l->p.dnn.pass][l->p.dnn.cudnn != 0]++;
    }
    if (im2col + n[0][0] + n[0][1] + n[1][0] + n[1][1] + n[2][0] + n[2][1])
        printf("convolutions: forward %u on cuDNN, %u im2col; input "
               "gradient %u on cuDNN, %u direct; weight gradient %u on "
               "cuDNN, %u direct\n",
               n[0][1], im2col, n[1][1], n[1][0], n[2][1], n[2][0]);
}

/* --lower-only: which kernel runs each node, and the synthetic ones. */
void mpv_cmd_print_lowering(const mpv_cmd *v)
{
    const mpv_program *prog = v->prog;
    printf("%u nodes run: %u real kernels, %u synthetic; arena %llu, "
           "workspace %llu, weights buffer %llu bytes\n",
           prog->n_real + prog->n_synthetic, prog->n_real, prog->n_synthetic,
           (unsigned long long)prog->arena_bytes,
           (unsigned long long)prog->workspace_bytes,
           (unsigned long long)prog->weights_bytes);
    if (prog->n_bwd_real + prog->n_bwd_synthetic + prog->n_opt_real +
        prog->n_opt_synthetic)
        printf("training: backward %u real, %u synthetic; optimizer %u "
               "real, %u synthetic\n",
               prog->n_bwd_real, prog->n_bwd_synthetic, prog->n_opt_real,
               prog->n_opt_synthetic);
    if (prog->n_setup + prog->n_setup_left)
        printf("folded constants: %u nodes computed once after the weights "
               "are uploaded, %u left with their initial fill\n",
               prog->n_setup, prog->n_setup_left);
    mp_device dev;
    if (mp_device_get(v->ctx, v->a->offload.device, &dev) == MP_OK) {
        double s = mpv_predict_seconds(prog, &dev, NULL);
        if (s >= 0)
            printf("predicted step time %.3f ms (%s cost model)\n", s * 1e3,
                   dev.name);
    }
    print_conv_passes(prog);
    for (uint32_t i = 0; i < mp_graph_num_nodes(v->g); i++) {
        mp_node_info ni;
        mp_graph_node_info(v->g, i, &ni);
        if (prog->nodes[i].synthetic)
            printf("  synthetic  %s (%s): %s\n", ni.name, ni.op,
                   prog->nodes[i].why ? prog->nodes[i].why : "");
        else if (!prog->nodes[i].run && prog->nodes[i].why)
            printf("  folded, initial fill  %s (%s): %s\n", ni.name, ni.op,
                   prog->nodes[i].why);
    }
}
