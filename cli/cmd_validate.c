/* cmd_validate.c - memplan validate MODEL: run the plan on a GPU and
 * compare what the device used with the prediction (docs/validation.md). */
#include "cli.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

enum { V_PLAN = 100, V_NO_REF, V_POISON, V_LOWER, V_OFFLOAD, V_DEVICE,
       V_DUMP, V_OFFLOAD_SOLVER };

static const cli_opt validate_opts[] = {
    {"plan", 0, 1, V_PLAN},
    {"no-reference", 0, 0, V_NO_REF},
    {"poison", 0, 0, V_POISON},
    {"lower-only", 0, 0, V_LOWER},
    {"offload", 0, 0, V_OFFLOAD},
    {"device", 0, 1, V_DEVICE},
    {"dump", 0, 1, V_DUMP},
    {"offload-solver", 0, 1, V_OFFLOAD_SOLVER},
    {NULL, 0, 0, 0},
};

typedef struct vargs {
    cli_solve_args solve;
    cli_train_args train;
    cli_offload_args offload;
    const char *plan, *dump;
    int no_reference, poison, lower_only;
} vargs;

static void help(void)
{
    fputs("Usage: memplan validate MODEL [--dim NAME=VALUE]... [--plan PLAN.json]\n"
          "                        [--align N] [--method M] [--seed S] [--json]\n"
          "                        [--train ...] [--budget SIZE] [--offload]\n"
          "                        [--offload-solver greedy|ilp|joint|auto]\n"
          "                        [--device D] [--no-reference] [--poison]\n"
          "                        [--dump DIR] [--lower-only]\n"
          "\n"
          "Runs the plan of MODEL on the GPU (one arena of the planned size,\n"
          "every tensor at its planned offset, the schedule step by step) and\n"
          "prints predicted against measured device memory (arena, workspace,\n"
          "weights; CUDA context and cuBLAS apart), time per step and in total\n"
          "against the cost model's prediction, and the checks: outputs\n"
          "bit-identical to a reference run with one allocation per tensor,\n"
          "and the reference run's live bytes (summed by the executor) against\n"
          "the planner's lower bound. Exits 5 when a check fails.\n"
          "\n"
          "Options:\n"
          "      --dim NAME=VALUE  bind a symbolic dimension (ONNX); INPUT:AXIS=VALUE\n"
          "                        sets a graph input's dim (also a fixed one)\n"
          "      --plan FILE       validate this plan (default: plan it now)\n"
          "      --align N, --method M, --seed S, --time-limit SEC  as for plan\n"
          "      --train, --optimizer, --precision, --budget, --solver,\n"
          "      --max-extra, --batch  as for plan (recompute steps run again)\n"
          "      --offload         plan offload under --budget (OFFLOAD/PREFETCH\n"
          "                        steps copy to pinned host memory and back)\n"
          "      --device D        cost-model profile for the offload plan and\n"
          "                        the predicted time (default h200)\n"
          "      --json            print one JSON object\n"
          "      --no-reference    skip the reference run\n"
          "      --poison          fill freed blocks with 0xff in the planned run\n"
          "      --dump DIR        write the inputs, weights and outputs of the\n"
          "                        planned run to DIR/values.{txt,bin} (for\n"
          "                        validate/ort_compare.py)\n"
          "      --lower-only      print how each node is lowered (kernel or\n"
          "                        synthetic, and why); needs no GPU\n"
          "  -h, --help            show this help\n"
          "\n"
          "Built without CUDA, it loads and lowers the model (which kernel runs\n"
          "each node) and exits 3 before touching a GPU.\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

static int on_opt(void *state, int id, const char *name, const char *value)
{
    vargs *a = state;
    switch (id) {
    case V_PLAN: a->plan = value; return 0;
    case V_NO_REF: a->no_reference = 1; return 0;
    case V_POISON: a->poison = 1; return 0;
    case V_LOWER: a->lower_only = 1; return 0;
    case V_OFFLOAD: a->offload.enabled = 1; return 0;
    case V_DEVICE: a->offload.device = value; return 0;
    case V_DUMP: a->dump = value; return 0;
    case V_OFFLOAD_SOLVER:
        a->offload.solver = value;
        return cli_offload_check_solver(value, name);
    default: {
        int rc = cli_train_on_opt(&a->train, id, name, value);
        return rc >= 0 ? rc : cli_solve_on_opt(&a->solve, id, name, value);
    }
    }
}

#ifdef MP_WITH_CUDA
static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    return g > 1 ? (v + g - 1) / g * g : v;
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
#endif

int cli_cmd_validate(int argc, char **argv)
{
    vargs a;
    memset(&a, 0, sizeof a);
    a.solve.alignment = 256;
    a.solve.method = MP_OFFSETS_AUTO;
    cli_train_init(&a.train);
    cli_offload_init(&a.offload);
    cli_opt opts[48];
    size_t no = 0;
    for (const cli_opt *o = cli_solve_opts; o->name; o++)
        opts[no++] = *o;
    for (const cli_opt *o = validate_opts; o->name; o++)
        opts[no++] = *o;
    for (const cli_opt *o = cli_train_opts; o->name && no < 47; o++)
        opts[no++] = *o;
    opts[no] = (cli_opt){NULL, 0, 0, 0};
    const char *pos[CLI_MAX_POSITIONAL];
    int npos = 0, want_help = 0, rc;
    mp_ctx *ctx = NULL;
    mp_graph *g = NULL;
    mp_plan *plan = NULL;
    mpv_program *prog = NULL;
    double *step_s = NULL;
    mpv_result res;
    memset(&res, 0, sizeof res);
    cli_dims dims;
    dims.n = 0;
    rc = cli_parse_dims(&dims, "validate", argc, argv, opts, on_opt, &a, pos,
                        &npos, &want_help);
    if (rc)
        goto out;
    if (want_help) {
        help();
        goto out;
    }
    if (npos != 1) {
        cli_error("validate wants one MODEL (see memplan validate --help)");
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    ctx = mp_ctx_create(NULL);
    if (!ctx) {
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    dims.batch = (int64_t)a.train.batch; /* --batch: re-batch an ONNX model */
    mp_status st = cli_load_graph(ctx, pos[0], &dims, 1, &g);
    if (st) {
        rc = cli_fail(ctx, st, pos[0]);
        goto out;
    }
    if ((rc = cli_train_prepare(ctx, &a.train, &g, pos[0])) != 0)
        goto out;
    if (a.plan) {
        st = mp_plan_load_json(g, a.plan, &plan);
    } else {
        mp_plan_options po;
        mp_plan_options_init(&po);
        po.alignment = a.solve.alignment;
        po.method = a.solve.method;
        po.seed = a.solve.seed;
        po.time_limit = a.solve.time_limit;
        if (a.offload.enabled)
            rc = cli_offload_plan(ctx, &a.offload, a.train.ropt.budget, g,
                                  &po, &plan, pos[0]);
        else
            rc = cli_train_plan(ctx, &a.train, g, &po, &plan, pos[0]);
        if (rc)
            goto out;
        st = MP_OK;
    }
    if (!st)
        st = mp_verify_plan(g, plan);
    if (!st)
        st = mpv_program_from_plan(g, plan, &prog);
    if (st) {
        rc = cli_fail(ctx, st, a.plan ? a.plan : pos[0]);
        goto out;
    }
    const mp_figures *f = mp_plan_figures(plan);
    if (a.lower_only) {
        printf("%u nodes run: %u real kernels, %u synthetic; arena %llu, "
               "workspace %llu, weights buffer %llu bytes\n",
               prog->n_real + prog->n_synthetic, prog->n_real,
               prog->n_synthetic, (unsigned long long)prog->arena_bytes,
               (unsigned long long)prog->workspace_bytes,
               (unsigned long long)prog->weights_bytes);
        for (uint32_t i = 0; i < mp_graph_num_nodes(g); i++) {
            mp_node_info ni;
            mp_graph_node_info(g, i, &ni);
            if (prog->nodes[i].synthetic)
                printf("  synthetic  %s (%s): %s\n", ni.name, ni.op,
                       prog->nodes[i].why ? prog->nodes[i].why : "");
        }
        goto out;
    }
#ifndef MP_WITH_CUDA
    (void)f;
    cli_error("built without CUDA (MEMPLAN_WITH_CUDA=OFF): lowered %u nodes "
              "(%u real kernels, %u synthetic), nothing run",
              prog->n_real + prog->n_synthetic, prog->n_real,
              prog->n_synthetic);
    rc = CLI_EXIT_INPUT;
    goto out;
#else
    {
        char why[200];
        if (!mpv_cuda_device_ok(why, sizeof why)) {
            cli_error("%s", why);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
        mpv_options vo;
        mpv_options_init(&vo);
        vo.seed = a.solve.seed + 1;
        vo.reference = !a.no_reference;
        vo.poison_free = a.poison;
        vo.dump_dir = a.dump;
        if (mpv_execute(prog, &vo, &res) != 0) {
            cli_error("executor: %s", res.error);
            rc = CLI_EXIT_INTERNAL;
            goto out;
        }
    }
    {
        uint64_t gran = res.granularity ? res.granularity : 1;
        uint64_t cublas_ws = 4u << 20;
        uint64_t pred_arena = round_up(f->arena_bytes, gran);
        uint64_t pred_ws = round_up(prog->workspace_bytes + cublas_ws, gran);
        uint64_t pred_w = round_up(prog->weights_bytes, gran);
        uint64_t pred_total = pred_arena + pred_ws + pred_w;
        double r_arena = ratio(res.arena_measured, pred_arena);
        double r_aw = ratio(res.arena_measured + res.workspace_measured,
                            pred_arena + pred_ws);
        double r_total = ratio(res.peak_measured, pred_total);
        int ok_arena = res.arena_measured == pred_arena;
        int ok_ws = r_aw >= 0.99 && r_aw <= 1.01;
        int ok_id = a.no_reference || res.outputs_identical;
        int ok_rep = res.planned_repeatable;
        /* the reference run allocates every tensor on its own: its live
         * bytes equal the planner's lower bound, or exceed it where the
         * plan wrote outputs in place over dying inputs */
        uint32_t n_over = 0;
        for (uint32_t i = 0; i < mp_plan_num_blocks(plan); i++)
            n_over += mp_plan_block_over(plan, i) != MP_NONE;
        int ok_lb = !prog->compute_only || a.no_reference ||
                    (n_over ? res.ref_live_max >= f->lower_bound_bytes
                            : res.ref_live_max == f->lower_bound_bytes);
        int ok_extra = res.run_extra_bytes == 0;
        int all_ok = ok_arena && ok_ws && ok_id && ok_rep && ok_lb && ok_extra;
        /* predicted time: the cost model over the schedule, on --device */
        mp_device dev;
        double pred_s = -1;
        step_s = calloc(prog->n_steps + 1, sizeof *step_s);
        if (!step_s) {
            rc = CLI_EXIT_INTERNAL;
            goto out;
        }
        st = mp_device_get(ctx, a.offload.device, &dev);
        if (st) {
            rc = cli_fail(ctx, st, a.offload.device);
            goto out;
        }
        pred_s = mpv_predict_seconds(prog, &dev, step_s);
        int have_pred = pred_s >= 0;
        if (a.solve.json) {
            json_t *o = json_object(), *m = json_object(), *p = json_object(),
                   *ck = json_object();
            if (!o || !m || !p || !ck) {
                rc = CLI_EXIT_INTERNAL;
                goto out;
            }
            cli_json_set(o, "model", cli_json_str(pos[0]));
            cli_json_set(o, "device", cli_json_str(res.device));
            cli_json_set(o, "nodes_real_kernel", json_integer(prog->n_real));
            cli_json_set(o, "nodes_synthetic", json_integer(prog->n_synthetic));
            cli_json_set(o, "steps", json_integer(prog->n_steps));
            cli_json_set(o, "recompute_steps", json_integer(prog->n_recompute));
            cli_json_set(o, "offload_steps", json_integer(prog->n_offload));
            cli_json_set(o, "prefetch_steps", json_integer(prog->n_prefetch));
            cli_json_set(o, "granularity", cli_json_u64(gran));
            cli_json_set(p, "arena_bytes", cli_json_u64(f->arena_bytes));
            cli_json_set(p, "lower_bound_bytes",
                         cli_json_u64(f->lower_bound_bytes));
            cli_json_set(p, "persistent_bytes", cli_json_u64(f->persistent_bytes));
            cli_json_set(p, "peak_bytes", cli_json_u64(f->peak_bytes));
            cli_json_set(p, "workspace_bytes",
                         cli_json_u64(prog->workspace_bytes + cublas_ws));
            cli_json_set(p, "weights_buffer_bytes",
                         cli_json_u64(prog->weights_bytes));
            cli_json_set(p, "arena_device_bytes", cli_json_u64(pred_arena));
            cli_json_set(p, "total_device_bytes", cli_json_u64(pred_total));
            cli_json_set(p, "seconds",
                         have_pred ? json_real(pred_s) : json_null());
            cli_json_set(p, "time_device", cli_json_str(dev.name));
            cli_json_set(o, "predicted", p);
            cli_json_set(m, "context_bytes", cli_json_u64(res.ctx_bytes));
            cli_json_set(m, "cublas_bytes", cli_json_u64(res.cublas_bytes));
            cli_json_set(m, "weights_bytes", cli_json_u64(res.weights_measured));
            cli_json_set(m, "workspace_bytes",
                         cli_json_u64(res.workspace_measured));
            cli_json_set(m, "arena_bytes", cli_json_u64(res.arena_measured));
            cli_json_set(m, "peak_bytes", cli_json_u64(res.peak_measured));
            cli_json_set(m, "lazy_library_bytes", cli_json_u64(res.lazy_bytes));
            cli_json_set(m, "run_extra_bytes", cli_json_u64(res.run_extra_bytes));
            cli_json_set(m, "staging_host_bytes",
                         cli_json_u64(res.staging_host_bytes));
            cli_json_set(m, "reference_pool_high_bytes",
                         cli_json_u64(res.ref_pool_high));
            cli_json_set(m, "reference_pool_reserved_high_bytes",
                         cli_json_u64(res.ref_pool_reserved_high));
            cli_json_set(m, "reference_live_max_bytes",
                         cli_json_u64(res.ref_live_max));
            cli_json_set(m, "planned_ms", json_real(res.planned_ms));
            cli_json_set(m, "steps_ms_sum", json_real(res.steps_ms_sum));
            cli_json_set(m, "reference_ms", json_real(res.reference_ms));
            cli_json_set(m, "max_abs_output", json_real(res.max_abs_output));
            cli_json_set(m, "nonfinite_outputs",
                         json_integer(res.nonfinite_outputs));
            cli_json_set(o, "measured", m);
            cli_json_set(o, "by_op", by_op_json(prog, step_s, &res));
            if (have_pred && res.planned_ms > 0)
                cli_json_set(o, "ratio_time_measured_predicted",
                             json_real(res.planned_ms / (pred_s * 1e3)));
            if (a.train.did_train || a.train.did_remat)
                cli_train_json(&a.train, o);
            if (a.offload.did)
                cli_offload_json(&a.offload, o);
            cli_json_set(o, "ratio_arena", json_real(r_arena));
            cli_json_set(o, "ratio_arena_workspace", json_real(r_aw));
            cli_json_set(o, "ratio_total", json_real(r_total));
            cli_json_set(ck, "arena_exact", json_boolean(ok_arena));
            cli_json_set(ck, "arena_workspace_within_1pct", json_boolean(ok_ws));
            cli_json_set(ck, "outputs_identical",
                         a.no_reference ? json_null()
                                        : json_boolean(res.outputs_identical));
            cli_json_set(ck, "planned_repeatable", json_boolean(ok_rep));
            cli_json_set(o, "inplace_blocks", json_integer(n_over));
            cli_json_set(ck, "live_max_equals_lower_bound",
                         prog->compute_only && !a.no_reference
                             ? json_boolean(ok_lb)
                             : json_null());
            cli_json_set(ck, "no_growth_while_running", json_boolean(ok_extra));
            cli_json_set(ck, "all", json_boolean(all_ok));
            cli_json_set(o, "checks", ck);
            rc = cli_json_print(o);
        } else {
            char b1[64], b2[64], b3[64];
            printf("model        %s on %s\n", pos[0], res.device);
            printf("nodes        %u real kernels, %u synthetic; %u steps "
                   "(%u recompute, %u offload, %u prefetch)\n",
                   prog->n_real, prog->n_synthetic, prog->n_steps,
                   prog->n_recompute, prog->n_offload, prog->n_prefetch);
            printf("context      %s, cuBLAS handle %s, first-run library "
                   "allocations %s (not in the plan)\n",
                   cli_size(res.ctx_bytes, b1, sizeof b1),
                   cli_size(res.cublas_bytes, b2, sizeof b2),
                   cli_size(res.lazy_bytes, b3, sizeof b3));
            printf("arena        predicted %s (plan %s, granule %llu), "
                   "measured %s, ratio %.3f\n",
                   cli_size(pred_arena, b1, sizeof b1),
                   cli_size(f->arena_bytes, b2, sizeof b2),
                   (unsigned long long)gran,
                   cli_size(res.arena_measured, b3, sizeof b3), r_arena);
            printf("workspace    predicted %s, measured %s\n",
                   cli_size(pred_ws, b1, sizeof b1),
                   cli_size(res.workspace_measured, b2, sizeof b2));
            printf("weights      predicted %s (persistent %s), measured %s\n",
                   cli_size(pred_w, b1, sizeof b1),
                   cli_size(f->persistent_bytes, b2, sizeof b2),
                   cli_size(res.weights_measured, b3, sizeof b3));
            printf("arena+ws     ratio %.4f\n", r_aw);
            printf("total        predicted %s, measured peak %s, ratio %.4f "
                   "(growth while running %s)\n",
                   cli_size(pred_total, b1, sizeof b1),
                   cli_size(res.peak_measured, b2, sizeof b2), r_total,
                   cli_size(res.run_extra_bytes, b3, sizeof b3));
            printf("reference    live max %s (lower bound %s; %u blocks in "
                   "place), pool high %s\n",
                   cli_size(res.ref_live_max, b1, sizeof b1),
                   cli_size(f->lower_bound_bytes, b2, sizeof b2),
                   (unsigned)n_over,
                   cli_size(res.ref_pool_high, b3, sizeof b3));
            printf("time         planned %.3f ms (steps %.3f ms), reference "
                   "%.3f ms", res.planned_ms, res.steps_ms_sum,
                   res.reference_ms);
            if (have_pred)
                printf(", predicted %.3f ms (%s cost model)", pred_s * 1e3,
                       dev.name);
            printf("\n");
            printf("outputs      %s, repeatable %s, %llu bytes, max |y| %g, "
                   "%d non-finite\n",
                   a.no_reference ? "not compared"
                   : res.outputs_identical ? "bit-identical"
                                           : "DIFFER",
                   ok_rep ? "yes" : "NO",
                   (unsigned long long)res.output_bytes, res.max_abs_output,
                   res.nonfinite_outputs);
            printf("checks       %s\n", all_ok ? "all passed" : "FAILED");
            rc = 0;
        }
        if (!rc && !all_ok)
            rc = CLI_EXIT_VERIFY;
    }
#endif
out:
    mpv_result_free(&res);
    mpv_program_destroy(prog);
    mp_plan_destroy(plan);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    free(step_s);
    return rc;
}
