/* cli.h - shared pieces of the memplan command (not installed).
 *
 * The command is thin: it parses options, calls the public API of
 * libmemplan (include/memplan/memplan.h) and prints what comes back; its
 * --json output goes through the library's JSON writer (the one internal
 * header it includes, frontends/json/json.h, with core/base.h).
 *
 * Every option is declared once, in the table of cli/options.c: its name,
 * its value, its default, its help and the commands that take it. Parsing
 * (cli/args.c; each option's setter: cli/option_set.c), help, usage lines
 * and docs/cli.md's option lists (cli/help.c) and the checks that refuse
 * an option that would do nothing (the rules of cli/options.c) all read
 * that table. The files, bottom up (none calls a file above it):
 * json_out.c, report.c, values.c, options.c, option_set.c, paths.c,
 * help.c, args.c, model.c, offload_opts.c, train_opts.c, parallel_opts.c,
 * progress.c; then
 * each command, cmd_NAME.c,
 * and main.c. */
#ifndef MEMPLAN_CLI_H
#define MEMPLAN_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "memplan/memplan.h"
/* the library's JSON writer (internal), for --json */
#include "json.h"

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

/* ---- the shape of every --json output (cli/json_out.c) --------------------
 * Every object --json prints starts with "schema": CLI_JSON_SCHEMA (raised
 * when a member is removed or changes its meaning) and "command"; a run
 * that fails carries "error": {"code", "message", "exit_code"}, in the
 * output it prints anyway or in an object of its own
 * (docs/json-schema.md). */
#define CLI_JSON_SCHEMA 1
/* At the start of a command: is --json among its arguments? */
void cli_json_errors_begin(const char *command, int argc, char *const *argv);
/* cli_error's message; cli_fail's status and exit code (the first). */
void cli_json_note_error(const char *msg);
void cli_json_note_status(mp_status st, int exit_code);
/* cli_json_print printed an object. */
void cli_json_note_printed(void);
/* The command's name, for "command". */
const char *cli_json_command(void);
/* The "error" member, when a failure was noted. */
void cli_json_error_member(mp__jw *w);
/* At the end of a --json command that failed without printing an object:
 * prints {"schema", "command", "error"}. Returns rc. */
int cli_json_errors_end(int rc);

/* ---- messages -------------------------------------------------------------- */
/* Text for the terminal: a control character (ANSI escapes start with
 * ESC), a C1 control or a byte that is not well-formed UTF-8, taken from
 * a name in the user's files, is written as \xNN. cli_safe writes into buf
 * (cap bytes, at least 8; cut with "..." when full) and returns it. Every
 * name the summaries print, and every error message, goes through it. */
const char *cli_safe(const char *s, char *buf, size_t cap);
void cli_fputs_safe(FILE *f, const char *s);
/* A context with the default allocator; NULL (printed) when out of memory. */
mp_ctx *cli_ctx_create(void);
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
/* cli_fail for a planner's status: 0 for MP_OK; MP_ERR_INFEASIBLE sets
 * *infeasible and gives exit 4. */
int cli_fail_plan(mp_ctx *ctx, mp_status st, const char *path,
                  int *infeasible);

/* ---- the commands and the options (cli/options.c) ------------------------- */
enum {
    CLI_CMD_PLAN, CLI_CMD_OFFSETS, CLI_CMD_VERIFY, CLI_CMD_SHAPES,
    CLI_CMD_CONVERT, CLI_CMD_VALIDATE, CLI_CMD_OFFLOAD_POLICY,
    CLI_CMD_CALIBRATE, CLI_CMD_SERVE,
    CLI_CMD_COUNT_
};
#define CLI_C(name) (1u << CLI_CMD_##name)

typedef struct cli_command {
    const char *name;
    const char *args;     /* the positional arguments, e.g. "INPUT" */
    int min_pos, max_pos; /* how many positional arguments */
    const char *summary;  /* one line, for 'memplan --help' */
    const char *about;    /* the help's description */
    const char *notes;    /* after the options (NULL: none) */
    const char *examples; /* one command a line */
} cli_command;
extern const cli_command cli_commands[CLI_CMD_COUNT_];

/* One option per row; the row's index is its id (CLI_O_*). */
enum {
    /* input */
    CLI_O_DIM, CLI_O_SHAPE, CLI_O_BATCH, CLI_O_SHOW_REWRITES,
    CLI_O_NO_DECLARED,
    /* placement */
    CLI_O_ALIGN, CLI_O_METHOD, CLI_O_SEED, CLI_O_TIME_LIMIT, CLI_O_CAPACITY,
    CLI_O_NO_INPLACE, CLI_O_FUSE, CLI_O_REORDER, CLI_O_ATTENTION,
    /* output */
    CLI_O_OUTPUT, CLI_O_JSON, CLI_O_PROGRESS, CLI_O_QUIET,
    /* report */
    CLI_O_DOT, CLI_O_COLLAPSE, CLI_O_DOT_MAX_NODES, CLI_O_HTML, CLI_O_TRACE,
    CLI_O_MEMORY_VIZ, CLI_O_KV_CONTEXT, CLI_O_NO_LINTS,
    /* training and recompute */
    CLI_O_TRAIN, CLI_O_OPTIMIZER, CLI_O_OPTIMIZER_IMPL, CLI_O_PRECISION,
    CLI_O_STEP_IN_BACKWARD, CLI_O_SPLIT_WEIGHT_GRAD, CLI_O_TRAIN_ALL_WEIGHTS,
    CLI_O_SAVE,
    CLI_O_BUDGET, CLI_O_SOLVER, CLI_O_MAX_EXTRA,
    CLI_O_MAXIMIZE,
    /* multi-GPU training (cli/parallel_opts.c) */
    CLI_O_DP, CLI_O_ZERO, CLI_O_BUCKET_SIZE, CLI_O_FSDP_UNIT, CLI_O_PREFETCH,
    CLI_O_OFFLOAD_OPTIMIZER, CLI_O_PP, CLI_O_MICROBATCHES, CLI_O_SCHEDULE,
    CLI_O_VIRTUAL_STAGES, CLI_O_PP_CUTS, CLI_O_PP_BALANCE, CLI_O_TP, CLI_O_SP, CLI_O_RANK,
    CLI_O_RANKS,
    /* offload */
    CLI_O_OFFLOAD, CLI_O_DEVICE, CLI_O_OFFLOAD_SOLVER,
    /* validate */
    CLI_O_PLAN, CLI_O_NO_REFERENCE, CLI_O_POISON, CLI_O_DUMP, CLI_O_WEIGHTS,
    CLI_O_INPUTS, CLI_O_LOWER_ONLY, CLI_O_STEP_TIMES, CLI_O_CONV_MATH,
    CLI_O_SERVE,
    /* offload-policy */
    CLI_O_PROMPT, CLI_O_GEN, CLI_O_GPU_BATCH, CLI_O_NUM_BATCHES, CLI_O_PERCENT,
    CLI_O_COMPRESS_WEIGHTS, CLI_O_COMPRESS_KV, CLI_O_GPU_MEM, CLI_O_CPU_MEM,
    CLI_O_DISK_MEM, CLI_O_ALPHA,
    /* serve */
    CLI_O_GROUP_SIZE, CLI_O_KV_DTYPE, CLI_O_KV_LAYOUT,
    CLI_O_BLOCK_SIZE, CLI_O_MAX_MODEL_LEN, CLI_O_MAX_BATCHED_TOKENS,
    CLI_O_MAX_SEQS, CLI_O_CUDA_GRAPH_SIZES, CLI_O_GPU_UTIL,
    CLI_O_RUNTIME_RESERVE, CLI_O_LENGTHS, CLI_O_SHARED_PREFIX,
    CLI_O_COUNT_
};

/* What an option says for some commands instead of the row's own text. */
typedef struct cli_variant {
    unsigned cmds;        /* CLI_C() bits; 0 ends a list */
    const char *def;      /* NULL: the row's */
    const char *note;     /* NULL: the row's */
    const char *help;     /* NULL: the row's */
} cli_variant;

typedef struct cli_option {
    const char *name;     /* long name without "--" */
    char short_name;      /* 0: none */
    const char *arg;      /* the value's name in help; NULL: a flag */
    unsigned cmds;        /* CLI_C() bits: the commands that take it */
    const char *group;    /* help section */
    /* the default: `def` is applied through the option's own parser
     * before the command line is read; `note` is only shown (a default
     * the library chooses, or none) */
    const char *def, *note;
    const char *help;
    const cli_variant *variants; /* NULL, or a list ended by cmds == 0 */
    void (*values)(FILE *f);     /* appends the values the library knows */
    int repeat;                  /* may be given more than once */
} cli_option;
extern const cli_option cli_options[CLI_O_COUNT_];

/* An option that does nothing where another one is missing (needs) or
 * given (!needs): refused with exit 2 and `why`. */
typedef struct cli_rule {
    unsigned cmds;
    int opt, other;
    int needs;            /* 1: opt needs other; 0: opt does nothing with other */
    const char *why;
} cli_rule;
extern const cli_rule cli_rules[];

/* The row's default, note and help for one command (variants applied). */
const char *cli_option_def(const cli_option *o, int cmd);
const char *cli_option_note(const cli_option *o, int cmd);
const char *cli_option_help(const cli_option *o, int cmd);

/* ---- the parsed command line ---------------------------------------------- */
#define CLI_MAX_POSITIONAL 8
#define CLI_MAX_DIMS 64

/* --dim NAME=VALUE and --shape INPUT=D0xD1x... (repeatable): ONNX symbolic
 * dims, or INPUT:AXIS=VALUE for a graph input's dim; --batch N. */
typedef struct cli_dims {
    mp_dim_binding b[CLI_MAX_DIMS];
    char names[CLI_MAX_DIMS][256];
    size_t n;
    int64_t batch; /* --batch N: re-batch an ONNX model (0: as declared) */
} cli_dims;

/* Training and recompute (cli/train_opts.c). */
typedef struct cli_train_args {
    int train, remat, have_max_extra, maximize;
    int save_eager;              /* --save eager (default mincut) */
    double max_extra;            /* x the forward compute */
    uint64_t batch;              /* --batch: the graph's batch (0: 1) */
    const char *device;          /* --device: times the training graph */
    mp_train_options topt;
    mp_remat_options ropt;
    /* results */
    int did_train, did_remat, infeasible, did_max;
    uint64_t max_batch;
    mp_remat_result max_batch_rr;
    mp_train_breakdown bd;
    mp_remat_result rr;
    /* --save mincut without --budget: both plans' peaks (arena +
     * persistent), the min-cut's figures, the plan kept */
    int did_save;
    uint64_t eager_peak, mincut_peak;
    mp_remat_result save_rr;
    const char *save_kept;       /* "mincut" or "eager" */
    char cost_unit[64];          /* of the costs: mp_graph_cost_unit */
} cli_train_args;

/* Offload (cli/offload_opts.c). */
typedef struct cli_offload_args {
    int enabled;            /* --offload */
    const char *device;     /* --device NAME|FILE.json */
    /* --offload-solver greedy|ilp|joint|auto (auto: joint when recompute
     * is allowed, i.e. unless --solver checkpoint-all) */
    const char *solver;
    const mp_remat_options *ropt; /* --solver etc. for joint; may be NULL */
    mp_device dev;
    uint64_t budget;
    int did, infeasible;
    mp_offload_result res;
    char cost_unit[64];     /* the graph's unit of node times (not "s":
                               the device timed the nodes) */
} cli_offload_args;

/* Multi-GPU training (cli/parallel_opts.c): --dp, --zero, --pp ... */
typedef struct cli_parallel_args {
    mp_parallel_options po;
    uint32_t rank;                 /* validate --rank */
    uint32_t ranks;                /* validate --ranks */
} cli_parallel_args;

typedef struct cli_args {
    int cmd;                       /* CLI_CMD_* */
    int argc;                      /* the command's own argv (argv[0]: its name) */
    char **argv;
    unsigned char given[CLI_O_COUNT_]; /* on the command line */
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, help;
    /* input */
    cli_dims dims;
    int show_rewrites, no_declared;
    /* placement and output */
    uint64_t alignment, capacity;
    mp_offsets_method method;
    uint64_t seed;
    double time_limit;
    int no_inplace, fuse, reorder;
    /* --attention fused|naive (cli/train_opts.c): the chains fused and
     * the peaks of the plain plans without and with the fusion */
    mp_attention_mode attention;
    uint32_t att_fused;
    uint64_t att_bytes, att_naive_peak, att_fused_peak;
    const char *output;
    int json;
    int progress, quiet;           /* --progress, --quiet (cli/progress.c) */
    /* report */
    const char *dot, *html, *trace, *memory_viz;
    mp_dot_options dopt;
    uint64_t kv_context;
    int no_lints;
    /* training, recompute, offload */
    cli_train_args train;
    cli_offload_args offload;
    cli_parallel_args par;
    /* validate */
    const char *plan, *dump, *weights_dir, *inputs_dir;
    int no_reference, poison, lower_only, step_times;
    int serve;                    /* --serve: MODEL is an LLM config, run a
                                     generation (validate/serve_cmd.c) */
    int conv_fp32;                /* --conv-math fp32 (default tf32) */
    /* offload-policy */
    mp_flexgen_options fo;
    uint64_t gpu_mem, cpu_mem, disk_mem;
    /* serve */
    mp_serve_options so;
    uint64_t runtime_reserve;
    const char *lengths;           /* --lengths FILE or a distribution */
} cli_args;

/* Was option id on the command line? */
static inline int cli_given(const cli_args *a, int id)
{
    return a->given[id] != 0;
}

/* Sets option id from its value (NULL for a flag); `shown` is how the
 * option was written ("--align"). 0 or CLI_EXIT_USAGE (printed). */
int cli_option_set(cli_args *a, int id, const char *shown, const char *value);

/* Parses the command line of command cmd (argv[0]: the command's name):
 * the table's defaults, then every option, then (unless --help) the
 * positional count and the rules. Options may come before, between or
 * after positional arguments; "--" ends the options; "--name=value" and
 * "--name value" are both accepted. Returns 0 or an exit code (printed). */
int cli_parse_args(int cmd, int argc, char **argv, cli_args *a);
/* Parses, prints the help when asked, else runs `run`. */
int cli_run_command(int cmd, int argc, char **argv, int (*run)(cli_args *a));
/* The index of the command called name, or -1. */
int cli_command_find(const char *name);
/* Refuses option id: "CMD: --X does nothing CONTEXT: WHY"; returns
 * CLI_EXIT_USAGE. */
int cli_no_effect(const cli_args *a, int id, const char *context,
                  const char *why);

/* ---- files (cli/paths.c) ----------------------------------------------------
 * Refuses an output (-o, --dot, --html, --trace, --dump) that is one of
 * the command's inputs or another of its outputs, however the path is
 * written (../, ./, a symlink): compared by device and inode when the
 * file exists, by the real path of its folder and its name when not.
 * Devices and pipes are not compared. 0 or CLI_EXIT_USAGE (printed).
 * cli_parse_args calls it for every command. */
int cli_check_paths(const cli_args *a);

/* ---- help (cli/help.c) ------------------------------------------------------ */
/* 'memplan CMD --help' */
void cli_help(FILE *f, int cmd);
/* The usage line and option table of cmd in Markdown (docs/cli.md). */
void cli_help_markdown(FILE *f, int cmd);
/* 'memplan --help' */
void cli_help_main(FILE *f);
/* The commands, one a line with its summary. */
void cli_list_commands(FILE *f);
/* The closest of `n` names to `s` (edit distance, at most a third of its
 * length, and 2 at least), or NULL. */
const char *cli_closest(const char *s, const char *const *names, size_t n);

/* ---- values (cli/values.c) and the model (cli/model.c) -------------------- */
/* Parses a byte size: a decimal integer with an optional unit B, KiB, MiB,
 * GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), any case,
 * e.g. "256", "4KiB", "1 MiB". On error prints why (naming `what`) and
 * returns CLI_EXIT_USAGE. */
int cli_parse_size(const char *what, const char *s, uint64_t *out);
int cli_parse_u64(const char *what, const char *s, uint64_t *out);
int cli_parse_seconds(const char *what, const char *s, double *out);
/* What is left at this moment of a time limit of `limit` seconds counted
 * from t0 (CLOCK_MONOTONIC at the start of the command), but at least a
 * tenth of it: a solver gets what reading the input left. */
double cli_time_left(const struct timespec *t0, double limit);
/* Lists the offsets methods the library knows, comma separated. */
void cli_print_methods(FILE *f);
/* Parses one NAME=VALUE into d; 0 or CLI_EXIT_USAGE (printed). */
int cli_parse_dim(cli_dims *d, const char *value);
/* INPUT=D0xD1x...: bindings INPUT:0=D0, INPUT:1=D1, ...; 0 or
 * CLI_EXIT_USAGE (printed). */
int cli_parse_shape(cli_dims *d, const char *value);
/* 1 when path holds a JSON graph (as mp_graph_load tells it). */
int cli_is_json(const char *path);
/* Loads a's model pos[0] with --dim, --shape, --batch (and convert's
 * --no-declared-shapes). --batch on a JSON graph is refused unless
 * --maximize takes it as the batch the graph is at. 0 or an exit code
 * (printed). */
int cli_load_graph(mp_ctx *ctx, const cli_args *a, mp_graph **g);
/* cli_load_graph of an ONNX model with every symbolic dim left unbound
 * set to `placeholder` (mp_onnx_options.unbound_dims; 0: none), nothing
 * printed: the library's status. */
mp_status cli_load_graph_placeholder(mp_ctx *ctx, const cli_args *a,
                                     int64_t placeholder, mp_graph **g);

/* The rewrites of --batch (mp_graph_rebatch_info), copied from the loaded
 * graph before --train replaces it. */
typedef struct cli_rewrite {
    const char *kind;          /* mp_rebatch_kind_name */
    char *node, *op, *tensor;  /* NULL where the rewrite has none */
    int axis, rank;
    int64_t old_v[MP_MAX_RANK], new_v[MP_MAX_RANK];
} cli_rewrite;
typedef struct cli_rewrites {
    int on;                    /* --batch was applied to an ONNX model */
    int64_t from, to;
    cli_rewrite *r;
    uint32_t n;
} cli_rewrites;
/* Copies g's re-batching rewrites into *rw when --batch was given (0, or
 * CLI_EXIT_INTERNAL when out of memory, printed). */
int cli_rewrites_get(const cli_args *a, const mp_graph *g, cli_rewrites *rw);
void cli_rewrites_free(cli_rewrites *rw);
/* "rebatch      N rewrites ..." (nothing when --batch was not applied);
 * every rewrite, one a line, with all != 0 (--show-rewrites). */
void cli_rewrites_print(const cli_rewrites *rw, int all);
/* The "rebatch" member of --json: from, to and every rewrite. */
void cli_rewrites_json(const cli_rewrites *rw, mp__jw *w);

/* ---- multi-GPU training (cli/parallel_opts.c) ----------------------------- */
/* --dp or --pp given: the per-rank plans of training graph g (after
 * cli_train_prepare), their summary or --json, -o as one plan per
 * distinct rank. 0 or an exit code (printed). */
int cli_parallel_plan(mp_ctx *ctx, cli_args *a, mp_graph *g,
                      const mp_plan_options *opt);
/* -o FILE for the distinct rank graph run first by `rank`: FILE with
 * ".rankR" before its extension (plan.json -> plan.rank0.json). */
void cli_rank_path(const char *path, uint32_t rank, char *buf, size_t cap);
/* The members of a rank's breakdown in --json: its peak and what is live
 * there by role (peak_bytes, param_bytes, ..., comm_bytes). */
void cli_rank_breakdown_json(mp__jw *w, const mp_rank_breakdown *d);
/* validate --dp/--pp --rank R: the graph rank R executes (*par owns it;
 * destroy *par after its plans), its info in *ri. Refuses --rank without
 * --dp or --pp, and a rank out of range. 0 or an exit code (printed). */
int cli_parallel_rank_graph(mp_ctx *ctx, cli_args *a, const mp_graph *g,
                            mp_parallel **par, mp_rank_info *ri);
/* The ranks of --dp/--pp over training graph g (micro-batches default to
 * --pp). 0 or an exit code (printed). */
int cli_parallel_make(mp_ctx *ctx, cli_args *a, const mp_graph *g,
                      mp_parallel **par);

/* ---- training and recompute (cli/train_opts.c) ---------------------------- */
/* --attention fused (before cli_train_prepare): an inference graph's
 * attention chains fused in place; the peaks of the plain plans (eager
 * saves in training) without and with the fusion in a->att_*. 0 or an
 * exit code. */
int cli_attention_prepare(mp_ctx *ctx, cli_args *a, mp_graph **g,
                          const char *input);
/* The "attention" summary line and --json member (nothing when no chain
 * was fused). */
void cli_attention_print(const cli_args *a);
void cli_attention_json(const cli_args *a, mp__jw *w);
/* --train: replaces *g by its training graph. 0 or an exit code. */
int cli_train_prepare(mp_ctx *ctx, cli_train_args *t, mp_graph **g,
                      const char *input);
/* The plan: mp_remat_plan with --budget, else mp_plan_create. */
int cli_train_plan(mp_ctx *ctx, cli_train_args *t, mp_graph *g,
                   const mp_plan_options *opt, mp_plan **plan,
                   const char *input);
/* The "training" and "recompute" members of --json (what was done). */
void cli_train_json(const cli_train_args *t, mp__jw *w);
void cli_train_summary(const cli_train_args *t);
/* a's placement options into a plan's options */
void cli_plan_options(const cli_args *a, mp_plan_options *opt);
/* The plan of plan and validate: offload, recompute or the default; on an
 * infeasible budget with --json and json_infeasible, prints what is
 * known. 0 or an exit code. */
int cli_make_plan(mp_ctx *ctx, cli_args *a, mp_graph *g,
                  const mp_plan_options *opt, mp_plan **plan,
                  int json_infeasible);

/* ---- offload (cli/offload_opts.c) ---------------------------------------- */
/* 0 when --offload-solver's value is known, else an exit code. */
int cli_offload_check_solver(const char *value, const char *name);
/* mp_offload_plan under budget (0: none). 0 or an exit code. */
int cli_offload_plan(mp_ctx *ctx, cli_offload_args *o, uint64_t budget,
                     mp_graph *g, const mp_plan_options *opt, mp_plan **plan,
                     const char *input);
/* The "offload" member of --json (when it was done). */
void cli_offload_json(const cli_offload_args *o, mp__jw *w);
void cli_offload_summary(const cli_offload_args *o);

/* ---- progress (cli/progress.c) ---------------------------------------------
 * The progress of the library's long runs on stderr: installed on ctx
 * when stderr is a terminal (one line rewritten in place, shown once a
 * run has taken a second, ended with its final figures) or with
 * --progress (every report on a line of its own, and each run's final
 * one even when it was quick); never with --quiet. */
void cli_progress_install(mp_ctx *ctx, const cli_args *a);

/* ---- output ------------------------------------------------------------------ */
/* "12.3 MiB (12901234 bytes)" or "512 bytes"; buf of at least 64 bytes. */
const char *cli_size(uint64_t bytes, char *buf, size_t cap);
/* "12.3 GiB", "512 B": no byte count (progress lines, narrow tables). */
const char *cli_size_short(uint64_t bytes, char *buf, size_t cap);
/* The summary's "arena/LB" line; `empty` says why there is no ratio. */
void cli_print_ratio(uint64_t arena, uint64_t lower_bound, const char *empty);

/* ---- JSON output (cli/report.c) ------------------------------------------
 * --json prints one object, written with the library's writer in the form
 * it has always had (jansson's JSON_INDENT(2)): every object and array one
 * item a line, control characters as \u00XX in capitals, reals as %.17g.
 * Members are written in order; key NULL writes a value (an array's). A
 * failure is the writer's, reported once by cli_json_print. */
/* Starts the top-level object. */
void cli_json_begin(mp__jw *w, mp_ctx *ctx);
/* Ends it and prints it with a line break to stdout; an exit code (the
 * error printed). */
int cli_json_print(mp__jw *w);
/* The member's key (NULL: none). */
void cli_json_key(mp__jw *w, const char *key);
/* key: {  (close with mp__jw_end) */
void cli_json_object(mp__jw *w, const char *key);
/* A string; NULL gives "". A byte that is not part of well-formed UTF-8
 * is written as U+FFFD (names come from user files; the writer does it). */
void cli_json_str(mp__jw *w, const char *key, const char *s);
/* An integer, exactly (all of uint64: 18446744073709551615 stays that). */
void cli_json_u64(mp__jw *w, const char *key, uint64_t v);
void cli_json_int(mp__jw *w, const char *key, int64_t v);
/* A real; one that is not finite fails the output. */
void cli_json_real(mp__jw *w, const char *key, double v);
void cli_json_bool(mp__jw *w, const char *key, int b);
void cli_json_null(mp__jw *w, const char *key);
/* arena / lower bound, null when the lower bound is 0. */
void cli_json_ratio(mp__jw *w, const char *key, uint64_t arena,
                    uint64_t lower_bound);
/* 64-bit sizes and counts under their keys, in order (cli_json_u64). */
typedef struct cli_json_size {
    const char *key;
    uint64_t bytes;
} cli_json_size;
void cli_json_sizes(mp__jw *w, const cli_json_size *rows, size_t n);

/* ---- subcommands (cmd_NAME.c) ----------------------------------------------
 * validate and calibrate are memplan-validate, a program of its own
 * (validate/main.c): cli/main.c executes it. */
int cli_cmd_plan(cli_args *a);
int cli_cmd_offsets(cli_args *a);
int cli_cmd_verify(cli_args *a);
int cli_cmd_shapes(cli_args *a);
int cli_cmd_convert(cli_args *a);
int cli_cmd_offload_policy(cli_args *a);
int cli_cmd_serve(cli_args *a);

#endif /* MEMPLAN_CLI_H */
