/* cli.h - shared pieces of the memplan command (not installed).
 *
 * The command is thin: it parses options, calls the public API of
 * libmemplan (include/memplan/memplan.h) and prints what comes back. */
#ifndef MEMPLAN_CLI_H
#define MEMPLAN_CLI_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "memplan/memplan.h"

/* ---- exit codes (stable; docs/exit-codes.md) ----------------------------- */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_INTERNAL = 1,   /* out of memory, a bug in memplan */
    CLI_EXIT_USAGE = 2,      /* bad command line */
    CLI_EXIT_INPUT = 3,      /* I/O, parse, graph, shape, unsupported */
    CLI_EXIT_INFEASIBLE = 4, /* no plan within the capacity / time limit */
    CLI_EXIT_VERIFY = 5,     /* a plan or trace failed verification */
    /* bad-input classes, one code each (docs/exit-codes.md) */
    CLI_EXIT_CORRUPT = 6,    /* truncated or corrupt binary input */
    CLI_EXIT_CYCLE = 7,      /* the graph has a cycle */
    CLI_EXIT_NO_PRODUCER = 8, /* a tensor read, produced by no node */
    CLI_EXIT_DUPLICATE = 9,  /* a name defined twice */
    CLI_EXIT_UNKNOWN_OP = 10, /* an unknown op, outputs undeclared */
    CLI_EXIT_BAD_DIM = 11,   /* a negative dim or a rank above 16 */
    CLI_EXIT_OVERFLOW = 12   /* a size that does not fit in 64 bits */
};

/* The exit code for a library status (the one table: cli/report.c). */
int cli_exit_code(mp_status st);
/* Prints the exit-code table (for --help). */
void cli_print_exit_codes(FILE *f);

/* ---- messages -------------------------------------------------------------- */
/* "memplan: <message>" on stderr. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Reports a library failure: prints the context's message (which names
 * file:line:column where the library knows it), prefixed with `path` when
 * the message does not already name it (except for a rejected option value
 * or out of memory), and returns the exit code. */
int cli_fail(mp_ctx *ctx, mp_status st, const char *path);

/* ---- option parsing -------------------------------------------------------- */
typedef struct cli_opt {
    const char *name;   /* long name without "--" */
    char short_name;    /* 0: none */
    int takes_value;
    int id;
} cli_opt;

/* Called for each option found; returns 0 or an exit code. */
typedef int (*cli_opt_fn)(void *state, int id, const char *name,
                          const char *value);

#define CLI_MAX_POSITIONAL 8

/* Parses argv[1..argc-1] (argv[0] is the subcommand name). Options may come
 * before, between or after positional arguments; "--" ends the options;
 * "--name=value" and "--name value" are both accepted. -h/--help sets
 * *help. Returns 0, or CLI_EXIT_USAGE after printing the reason. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              cli_opt_fn fn, void *state, const char **pos, int *n_pos,
              int *help);

/* Parses a byte size: a decimal integer with an optional unit B, KiB, MiB,
 * GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), any case,
 * e.g. "256", "4KiB", "1 MiB". On error prints why (naming `what`) and
 * returns CLI_EXIT_USAGE. */
int cli_parse_size(const char *what, const char *s, uint64_t *out);
int cli_parse_u64(const char *what, const char *s, uint64_t *out);
int cli_parse_seconds(const char *what, const char *s, double *out);
/* --method NAME through mp_offsets_method_parse. */
int cli_parse_method(const char *s, mp_offsets_method *out);

/* The options `plan` and `offsets` share: -o, --json, --align, --method,
 * --seed, --time-limit. Callers set the defaults, then pass
 * cli_solve_opts / cli_solve_on_opt to cli_parse. */
/* --dim NAME=VALUE (repeatable): ONNX symbolic dims, or INPUT:AXIS=VALUE
 * for a graph input's dim without a name (issue 3). */
#define CLI_MAX_DIMS 64
typedef struct cli_dims {
    mp_dim_binding b[CLI_MAX_DIMS];
    char names[CLI_MAX_DIMS][256];
    size_t n;
    int64_t batch; /* --batch N: re-batch an ONNX model (0: as declared) */
} cli_dims;
/* --batch N (N >= 1) into d->batch; 0 or CLI_EXIT_USAGE (printed). */
int cli_parse_batch(cli_dims *d, const char *opt, const char *value);
/* Loads INPUT with d's bindings and batch (mp_graph_load_opts). With
 * json_batch_ok, a graph that is not ONNX (JSON: no input dims to set)
 * takes --batch only as the batch it is at (plan --maximize batch) and is
 * loaded as it is. */
mp_status cli_load_graph(mp_ctx *ctx, const char *path, const cli_dims *d,
                         int json_batch_ok, mp_graph **g);
/* Parses one NAME=VALUE into d; 0 or CLI_EXIT_USAGE (printed). */
int cli_parse_dim(cli_dims *d, const char *opt, const char *value);
/* --shape INPUT=D0xD1x... (repeatable): the whole shape of a graph input,
 * as bindings INPUT:0=D0, INPUT:1=D1, ... (an input declared with no
 * shape, or one re-shaped); 0 or CLI_EXIT_USAGE (printed). */
int cli_parse_shape(cli_dims *d, const char *value);
/* cli_parse, with every --dim NAME=VALUE and --shape INPUT=D0xD1x...
 * (before "--") taken into d. */
int cli_parse_dims(cli_dims *d, const char *cmd, int argc, char **argv,
                   const cli_opt *opts, cli_opt_fn fn, void *state,
                   const char **pos, int *n_pos, int *help);

typedef struct cli_solve_args {
    const char *output;
    int json;
    uint64_t alignment;
    mp_offsets_method method;
    uint64_t seed;
    double time_limit;
} cli_solve_args;
extern const cli_opt cli_solve_opts[];
int cli_solve_on_opt(void *state, int id, const char *name, const char *value);
/* Lists the offsets methods the library knows, comma separated. */
void cli_print_methods(FILE *f);

/* ---- training and recompute options of plan (issue 5, train_opts.c) ----- */
enum {
    CLI_T_TRAIN = 2000, CLI_T_OPTIMIZER, CLI_T_PRECISION, CLI_T_BUDGET,
    CLI_T_SOLVER, CLI_T_MAX_EXTRA, CLI_T_MAXIMIZE, CLI_T_BATCH,
    CLI_T_STEP_IN_BACKWARD, CLI_T_SPLIT_WEIGHT_GRAD
};
typedef struct cli_train_args {
    int train, remat, have_max_extra, maximize;
    double max_extra;            /* x the forward compute */
    uint64_t batch;              /* --batch: the graph's batch (0: 1) */
    mp_train_options topt;
    mp_remat_options ropt;
    /* results */
    int did_train, did_remat, infeasible, did_max;
    uint64_t max_batch;
    mp_remat_result max_batch_rr;
    mp_train_breakdown bd;
    mp_remat_result rr;
} cli_train_args;
extern const cli_opt cli_train_opts[];
void cli_train_init(cli_train_args *t);
void cli_train_help(FILE *f);
/* 0, an exit code, or -1 when id is not a training option. */
int cli_train_on_opt(cli_train_args *t, int id, const char *name,
                     const char *value);
/* --train: replaces *g by its training graph. 0 or an exit code. */
int cli_train_prepare(mp_ctx *ctx, cli_train_args *t, mp_graph **g,
                      const char *input);
/* The plan: mp_remat_plan with --budget/--solver, else mp_plan_create. */
int cli_train_plan(mp_ctx *ctx, cli_train_args *t, mp_graph *g,
                   const mp_plan_options *opt, mp_plan **plan,
                   const char *input);
int cli_train_json(const cli_train_args *t, json_t *o);
void cli_train_summary(const cli_train_args *t);

/* ---- plan --offload [--device D] (issue 8; cli/offload_opts.c) ---------- */
typedef struct cli_offload_args {
    int enabled;            /* --offload */
    const char *device;     /* --device NAME|FILE.json (default h200) */
    /* --offload-solver greedy|ilp|joint|auto (default auto: joint when
     * recompute is allowed, i.e. unless --solver checkpoint-all) */
    const char *solver;
    const mp_remat_options *ropt; /* --solver etc. for joint; may be NULL */
    mp_device dev;
    uint64_t budget;
    int did, infeasible;
    mp_offload_result res;
} cli_offload_args;
void cli_offload_init(cli_offload_args *o);
/* 0 when --offload-solver's value is known, else an exit code. */
int cli_offload_check_solver(const char *value, const char *name);
/* mp_offload_plan under budget (0: none). 0 or an exit code. */
int cli_offload_plan(mp_ctx *ctx, cli_offload_args *o, uint64_t budget,
                     mp_graph *g, const mp_plan_options *opt, mp_plan **plan,
                     const char *input);
int cli_offload_json(const cli_offload_args *o, json_t *obj);
void cli_offload_summary(const cli_offload_args *o);

/* ---- output ------------------------------------------------------------------ */
/* "12.3 MiB (12901234 bytes)" or "512 bytes"; buf of at least 64 bytes. */
const char *cli_size(uint64_t bytes, char *buf, size_t cap);
/* arena / lower bound: a JSON real, null when the lower bound is 0. */
json_t *cli_json_ratio(uint64_t arena, uint64_t lower_bound);
/* The summary's "arena/LB" line; `empty` says why there is no ratio. */
void cli_print_ratio(uint64_t arena, uint64_t lower_bound, const char *empty);
/* A JSON string; NULL gives "", bytes that are not UTF-8 become '?'
 * (names come from user files). NULL only when out of memory. */
json_t *cli_json_str(const char *s);
/* A JSON integer for a 64-bit size (a real above INT64_MAX). */
json_t *cli_json_u64(uint64_t v);
/* Prints one JSON object to stdout and releases it; returns an exit code. */
int cli_json_print(json_t *obj);
/* Sets key on obj (takes the reference of v); returns 0 or -1. */
int cli_json_set(json_t *obj, const char *key, json_t *v);

/* ---- subcommands --------------------------------------------------------------- */
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_offsets(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_shapes(int argc, char **argv);
int cli_cmd_convert(int argc, char **argv);
int cli_cmd_offload_policy(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);

#endif /* MEMPLAN_CLI_H */
