/* main.c - memplan-validate, the program behind `memplan validate MODEL`:
 * run the plan on a GPU and compare what the device used with the
 * prediction (docs/validation.md).
 *
 * It is a program of its own so that only it loads CUDA (cuBLAS, cudart):
 * `memplan validate ...` checks the command line with the same table
 * (cli/options.c) and executes this program with it, found next to
 * memplan or in the libexec directory. Run directly, it takes the same
 * arguments as `memplan validate`.
 *
 * The steps: load the model (and its training graph), make or read the
 * plan, verify and lower it (validate/host.c), then --lower-only prints
 * the lowering, or the program runs (validate/executor.cu) and the
 * figures are reported (validate/report.c). */
#include "command.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

/* The model, its plan (made, or read with --plan), verified and lowered
 * into v->prog. 0 or an exit code (printed). */
static int load_and_lower(mpv_cmd *v)
{
    cli_args *a = v->a;
    const char *model = a->pos[0];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = cli_load_graph(v->ctx, a, &v->g);
    if (!rc)
        rc = cli_attention_prepare(v->ctx, a, &v->g, model);
    if (!rc)
        rc = cli_train_prepare(v->ctx, &a->train, &v->g, model);
    v->own_g = v->g;
    /* --dp/--pp/--tp: rank R's graph, its collectives lowered as local
     * operations (validate/host.c) */
    if (!rc && (cli_given(a, CLI_O_DP) || cli_given(a, CLI_O_PP) ||
                cli_given(a, CLI_O_TP) || cli_given(a, CLI_O_SP) ||
                cli_given(a, CLI_O_RANK))) {
        rc = cli_parallel_rank_graph(v->ctx, a, v->own_g, &v->par, &v->ri);
        if (!rc)
            v->g = v->ri.graph;
    }
    if (rc)
        return rc;
    mp_status st = MP_OK;
    if (a->plan) {
        st = mp_plan_load_json(v->g, a->plan, &v->plan);
    } else if (v->par) {
        /* as `memplan plan --dp/--pp` plans each rank */
        mp_plan_options po;
        cli_plan_options(a, &po);
        st = mp_plan_create(v->g, &po, &v->plan);
    } else {
        mp_plan_options po;
        if (a->time_limit > 0) /* as `memplan plan`: from the start */
            a->time_limit = cli_time_left(&t0, a->time_limit);
        cli_plan_options(a, &po);
        if ((rc = cli_make_plan(v->ctx, a, v->g, &po, &v->plan, 0)) != 0)
            return rc;
    }
    if (!st)
        st = mp_verify_plan(v->g, v->plan);
    if (!st)
        st = mpv_program_from_plan(v->g, v->plan, &v->prog);
    if (st)
        return cli_fail(v->ctx, st, a->plan ? a->plan : model);
    /* --weights, --inputs: every tensor there, of its dtype and size,
     * before a GPU is touched (the run reads them again) */
    if (a->weights_dir &&
        (st = mpv_weights_read(v->prog, a->weights_dir, NULL, 0)))
        return cli_fail(v->ctx, st, a->weights_dir);
    if (a->inputs_dir && (st = mpv_inputs_read(v->prog, a->inputs_dir, NULL)))
        return cli_fail(v->ctx, st, a->inputs_dir);
    return 0;
}

/* The planned and reference runs on the GPU into v->res. 0 or an exit
 * code (printed). */
static int execute(mpv_cmd *v)
{
#ifdef MP_WITH_CUDA
    char why[200];
    if (!mpv_cuda_device_ok(why, sizeof why)) {
        cli_error("%s: validate runs the plan on a GPU. Without one, "
                  "'memplan validate %s --lower-only' shows how each node "
                  "would run, and 'memplan plan %s --html report.html' "
                  "plans and draws it",
                  why, v->a->pos[0], v->a->pos[0]);
        return CLI_EXIT_INPUT;
    }
    /* the GPU run takes seconds on a large model: say what it does (on a
     * terminal, or with --progress; never with --quiet) */
    if (!v->a->quiet && (v->a->progress || isatty(fileno(stderr))))
        fprintf(stderr, "memplan: validate: running %u steps on the GPU: "
                "the cuDNN algorithm choice, a warm-up, the measured runs%s%s"
                ", one CUDA graph\n",
                v->prog->n_steps, v->a->no_reference ? "" : ", the reference",
                v->a->step_times ? ", the per-step timing" : "");
    mpv_options vo;
    mpv_cmd_run_options(v->a, &vo);
    vo.dump_dir = v->a->dump;
    vo.weights_dir = v->a->weights_dir;
    vo.inputs_dir = v->a->inputs_dir;
    if (mpv_execute(v->prog, &vo, &v->res) != 0) {
        cli_error("executor: %s", v->res.error);
        return CLI_EXIT_INTERNAL;
    }
    /* the weights after the step, for comparing with --ranks' */
    v->res.weights_hash = mpv_weights_hash(v->prog, v->res.weights_after);
    return 0;
#else
    const mpv_program *prog = v->prog;
    cli_error("built without CUDA (MEMPLAN_WITH_CUDA=OFF): lowered %u nodes "
              "(%u real kernels, %u synthetic), nothing run; --lower-only "
              "shows how each node would run, and a build with CUDA "
              "(cmake -DMEMPLAN_WITH_CUDA=ON, nvcc) runs it",
              prog->n_real + prog->n_synthetic, prog->n_real,
              prog->n_synthetic);
    return CLI_EXIT_INPUT;
#endif
}

/* Runs, then reports predicted against measured; exit 5 when a check
 * fails. */
static int run_and_report(mpv_cmd *v)
{
    int rc = execute(v);
    mpv_cmd_figures f;
    if (!rc)
        rc = mpv_cmd_figures_get(v, &f);
    if (rc)
        return rc;
    if (v->a->json) {
        rc = mpv_cmd_report_json(v, &f);
    } else {
        mpv_cmd_report_text(v, &f);
        rc = 0;
    }
    return !rc && !f.all_ok ? CLI_EXIT_VERIFY : rc;
}

static int validate(cli_args *a)
{
    if (cli_given(a, CLI_O_RANKS))
        return mpv_validate_ranks(a);
    if (a->serve)
        return mpv_validate_serve(a);
    mpv_cmd v;
    memset(&v, 0, sizeof v);
    v.a = a;
    v.ctx = cli_ctx_create();
    /* the planning's and the training synthesis's progress, as plan's */
    cli_progress_install(v.ctx, a);
    int rc = v.ctx ? load_and_lower(&v) : CLI_EXIT_INTERNAL;
    if (!rc && a->lower_only)
        mpv_cmd_print_lowering(&v);
    else if (!rc)
        rc = run_and_report(&v);
    mpv_result_free(&v.res);
    mpv_program_destroy(v.prog);
    mp_plan_destroy(v.plan);
    mp_parallel_destroy(v.par);
    mp_graph_destroy(v.own_g);
    mp_ctx_destroy(v.ctx);
    free(v.step_s);
    return rc;
}

int main(int argc, char **argv)
{
    /* memplan calibrate executes this program as `memplan-validate
     * calibrate ...` */
    if (argc > 1 && strcmp(argv[1], "calibrate") == 0)
        return cli_run_command(CLI_CMD_CALIBRATE, argc - 1, argv + 1,
                               mpv_calibrate);
    return cli_run_command(CLI_CMD_VALIDATE, argc, argv, validate);
}
