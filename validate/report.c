/* report.c - what `memplan validate` reports after a run: the device
 * memory predicted from the plan against what the run measured, the time
 * against the cost model, and the checks (docs/validation.md). */
#include "command.h"

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
    f->cublas_ws = 4u << 20;
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
     * plan wrote outputs in place over dying inputs */
    for (uint32_t i = 0; i < mp_plan_num_blocks(v->plan); i++)
        f->n_over += mp_plan_block_over(v->plan, i) != MP_NONE;
    f->ok_lb = !prog->compute_only || no_ref ||
               (f->n_over ? res->ref_live_max >= pf->lower_bound_bytes
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

/* predicted and measured (per-step events) milliseconds summed by op */
static json_t *by_op_json(const mpv_program *prog, const double *step_s,
                          const mpv_result *res)
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
    json_t *o = json_object();
    for (uint32_t k = 0; o && k < n; k++) {
        json_t *e = json_object();
        cli_json_set(e, "steps", json_integer(cnt[k]));
        cli_json_set(e, "predicted_ms", json_real(pred[k]));
        cli_json_set(e, "measured_ms", json_real(meas[k]));
        cli_json_set(o, name[k], e);
    }
    return o;
}

typedef struct size_row {
    const char *key;
    uint64_t bytes;
} size_row;

/* An object with each key of rows set to its size; NULL when out of
 * memory. */
static json_t *sizes_json(const size_row *rows, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        cli_json_set(o, rows[i].key, cli_json_u64(rows[i].bytes));
    return o;
}

/* "predicted": the plan's figures and the device memory they need */
static json_t *predicted_json(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    const mp_figures *pf = mp_plan_figures(v->plan);
    const size_row rows[] = {
        {"arena_bytes", pf->arena_bytes},
        {"lower_bound_bytes", pf->lower_bound_bytes},
        {"persistent_bytes", pf->persistent_bytes},
        {"peak_bytes", pf->peak_bytes},
        {"workspace_bytes", v->prog->workspace_bytes + f->cublas_ws},
        {"weights_buffer_bytes", v->prog->weights_bytes},
        {"arena_device_bytes", f->pred_arena},
        {"total_device_bytes", f->pred_total},
    };
    json_t *p = sizes_json(rows, sizeof rows / sizeof rows[0]);
    if (!p)
        return NULL;
    cli_json_set(p, "seconds",
                 f->have_pred ? json_real(f->pred_s) : json_null());
    cli_json_set(p, "time_device", cli_json_str(f->dev.name));
    return p;
}

/* "measured": what the run used, by part, and its times */
static json_t *measured_json(const mpv_result *res)
{
    const size_row rows[] = {
        {"context_bytes", res->ctx_bytes},
        {"cublas_bytes", res->cublas_bytes},
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
    json_t *m = sizes_json(rows, sizeof rows / sizeof rows[0]);
    if (!m)
        return NULL;
    cli_json_set(m, "planned_ms", json_real(res->planned_ms));
    cli_json_set(m, "steps_ms_sum", json_real(res->steps_ms_sum));
    cli_json_set(m, "reference_ms", json_real(res->reference_ms));
    cli_json_set(m, "max_abs_output", json_real(res->max_abs_output));
    cli_json_set(m, "nonfinite_outputs", json_integer(res->nonfinite_outputs));
    return m;
}

/* "checks" */
static json_t *checks_json(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    int no_ref = v->a->no_reference;
    json_t *ck = json_object();
    if (!ck)
        return NULL;
    cli_json_set(ck, "arena_exact", json_boolean(f->ok_arena));
    cli_json_set(ck, "arena_workspace_within_1pct", json_boolean(f->ok_ws));
    cli_json_set(ck, "outputs_identical",
                 no_ref ? json_null() : json_boolean(v->res.outputs_identical));
    cli_json_set(ck, "planned_repeatable", json_boolean(f->ok_rep));
    cli_json_set(ck, "live_max_equals_lower_bound",
                 v->prog->compute_only && !no_ref ? json_boolean(f->ok_lb)
                                                  : json_null());
    cli_json_set(ck, "no_growth_while_running", json_boolean(f->ok_extra));
    cli_json_set(ck, "all", json_boolean(f->all_ok));
    return ck;
}

int mpv_cmd_report_json(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    const mpv_program *prog = v->prog;
    const mpv_result *res = &v->res;
    const cli_args *a = v->a;
    json_t *o = json_object(), *p = predicted_json(v, f),
           *m = measured_json(res), *ck = checks_json(v, f);
    if (!o || !m || !p || !ck) {
        json_decref(o);
        json_decref(p);
        json_decref(m);
        json_decref(ck);
        return CLI_EXIT_INTERNAL;
    }
    cli_json_set(o, "model", cli_json_str(a->pos[0]));
    cli_json_set(o, "device", cli_json_str(res->device));
    cli_json_set(o, "nodes_real_kernel", json_integer(prog->n_real));
    cli_json_set(o, "nodes_synthetic", json_integer(prog->n_synthetic));
    cli_json_set(o, "steps", json_integer(prog->n_steps));
    cli_json_set(o, "recompute_steps", json_integer(prog->n_recompute));
    cli_json_set(o, "offload_steps", json_integer(prog->n_offload));
    cli_json_set(o, "prefetch_steps", json_integer(prog->n_prefetch));
    cli_json_set(o, "granularity", cli_json_u64(f->gran));
    cli_json_set(o, "predicted", p);
    cli_json_set(o, "measured", m);
    cli_json_set(o, "by_op", by_op_json(prog, v->step_s, res));
    if (f->have_pred && res->planned_ms > 0)
        cli_json_set(o, "ratio_time_measured_predicted",
                     json_real(res->planned_ms / (f->pred_s * 1e3)));
    if (a->train.did_train || a->train.did_remat)
        cli_train_json(&a->train, o);
    if (a->offload.did)
        cli_offload_json(&a->offload, o);
    cli_json_set(o, "ratio_arena", json_real(f->r_arena));
    cli_json_set(o, "ratio_arena_workspace", json_real(f->r_aw));
    cli_json_set(o, "ratio_total", json_real(f->r_total));
    cli_json_set(o, "inplace_blocks", json_integer(f->n_over));
    cli_json_set(o, "checks", ck);
    return cli_json_print(o);
}

void mpv_cmd_report_text(const mpv_cmd *v, const mpv_cmd_figures *f)
{
    const mp_figures *pf = mp_plan_figures(v->plan);
    const mpv_program *prog = v->prog;
    const mpv_result *res = &v->res;
    char b1[64], b2[64], b3[64];
    printf("model        %s on %s\n", v->a->pos[0], res->device);
    printf("nodes        %u real kernels, %u synthetic; %u steps "
           "(%u recompute, %u offload, %u prefetch)\n",
           prog->n_real, prog->n_synthetic, prog->n_steps, prog->n_recompute,
           prog->n_offload, prog->n_prefetch);
    printf("context      %s, cuBLAS handle %s, first-run library "
           "allocations %s (not in the plan)\n",
           cli_size(res->ctx_bytes, b1, sizeof b1),
           cli_size(res->cublas_bytes, b2, sizeof b2),
           cli_size(res->lazy_bytes, b3, sizeof b3));
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
