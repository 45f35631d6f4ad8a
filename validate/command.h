/* command.h - the steps of `memplan validate` (memplan-validate: the
 * command in validate/main.c, its report in validate/report.c). Not
 * installed. */
#ifndef MEMPLAN_VALIDATE_COMMAND_H
#define MEMPLAN_VALIDATE_COMMAND_H

#include "cli.h"
#include "validate.h"

/* One validation: the command line, the model and its plan, the program
 * the plan is lowered into and what the run measured. */
typedef struct mpv_cmd {
    cli_args *a;
    mp_ctx *ctx;
    mp_graph *g;          /* the graph run: the model's, or rank R's */
    mp_graph *own_g;      /* the model's (training) graph, destroyed */
    mp_parallel *par;     /* --dp/--pp: the ranks; owns g */
    mp_rank_info ri;      /* --dp/--pp: rank R's graph */
    mp_plan *plan;
    mpv_program *prog;
    mpv_result res;
    double *step_s;       /* predicted seconds of each step */
} mpv_cmd;

/* Predicted against measured, and the checks. */
typedef struct mpv_cmd_figures {
    uint64_t gran;                  /* the driver's allocation granularity */
    uint64_t cublas_ws;             /* cuBLAS's workspace */
    uint64_t pred_arena, pred_ws, pred_w, pred_total;
    double r_arena, r_aw, r_total;  /* measured / predicted */
    uint32_t n_over;                /* blocks written in place */
    int ok_arena, ok_ws, ok_id, ok_rep, ok_lb, ok_extra, all_ok;
    mp_device dev;                  /* --device: the predicted time's */
    double pred_s;                  /* predicted seconds (< 0: none) */
    int have_pred;
} mpv_cmd_figures;

/* The figures of a run (v->res) against the plan; fills v->step_s. 0 or
 * an exit code (printed). */
int mpv_cmd_figures_get(mpv_cmd *v, mpv_cmd_figures *f);
/* The --json report; an exit code. */
int mpv_cmd_report_json(const mpv_cmd *v, const mpv_cmd_figures *f);
/* Its members but "model" (the report of one run inside another
 * object: validate --serve's) */
void mpv_cmd_json_members(mp__jw *w, const mpv_cmd *v,
                          const mpv_cmd_figures *f);
/* --lower-only: which kernel runs each node, and the synthetic ones */
void mpv_cmd_print_lowering(const mpv_cmd *v);
/* The summary for humans. */
void mpv_cmd_report_text(const mpv_cmd *v, const mpv_cmd_figures *f);

/* The executor's options from the command line: --seed, the reference
 * run, --poison, --step-times, --conv-math; the weights after the run
 * kept (main.c) */
void mpv_cmd_run_options(const cli_args *a, mpv_options *vo);

/* `memplan validate ... --ranks N` (ranks_cmd.c): every rank at once,
 * one process per GPU; an exit code. */
int mpv_validate_ranks(cli_args *a);

/* `memplan validate CONFIG --serve` (serve_cmd.c): a generation with a
 * paged KV cache and again with a contiguous one; an exit code. */
int mpv_validate_serve(cli_args *a);

/* `memplan calibrate` (calibrate_cmd.c); an exit code. */
int mpv_calibrate(cli_args *a);

#endif /* MEMPLAN_VALIDATE_COMMAND_H */
