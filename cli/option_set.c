/* option_set.c - what each option of cli/options.c does to the parsed
 * command line (cli_args): one setter for every row, flags and names by
 * the field they set, the rest by their parser. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Flags (int set to 1) and plain values (the string kept), by field. */
static const size_t flag_field[CLI_O_COUNT_] = {
    [CLI_O_NO_DECLARED] = offsetof(cli_args, no_declared),
    [CLI_O_SHOW_REWRITES] = offsetof(cli_args, show_rewrites),
    [CLI_O_NO_INPLACE] = offsetof(cli_args, no_inplace),
    [CLI_O_FUSE] = offsetof(cli_args, fuse),
    [CLI_O_REORDER] = offsetof(cli_args, reorder),
    [CLI_O_JSON] = offsetof(cli_args, json),
    [CLI_O_PROGRESS] = offsetof(cli_args, progress),
    [CLI_O_QUIET] = offsetof(cli_args, quiet),
    [CLI_O_NO_LINTS] = offsetof(cli_args, no_lints),
    [CLI_O_TRAIN] = offsetof(cli_args, train.train),
    [CLI_O_STEP_IN_BACKWARD] = offsetof(cli_args, train.topt.step_in_backward),
    [CLI_O_SPLIT_WEIGHT_GRAD] =
        offsetof(cli_args, train.topt.split_weight_grad),
    [CLI_O_TRAIN_ALL_WEIGHTS] =
        offsetof(cli_args, train.topt.train_all_weights),
    [CLI_O_OFFLOAD] = offsetof(cli_args, offload.enabled),
    [CLI_O_NO_REFERENCE] = offsetof(cli_args, no_reference),
    [CLI_O_POISON] = offsetof(cli_args, poison),
    [CLI_O_LOWER_ONLY] = offsetof(cli_args, lower_only),
    [CLI_O_STEP_TIMES] = offsetof(cli_args, step_times),
    [CLI_O_SERVE] = offsetof(cli_args, serve),
    [CLI_O_OFFLOAD_OPTIMIZER] = offsetof(cli_args, par.po.offload_optimizer),
    [CLI_O_SP] = offsetof(cli_args, par.po.sp),
};
static const size_t string_field[CLI_O_COUNT_] = {
    [CLI_O_OUTPUT] = offsetof(cli_args, output),
    [CLI_O_DOT] = offsetof(cli_args, dot),
    [CLI_O_HTML] = offsetof(cli_args, html),
    [CLI_O_TRACE] = offsetof(cli_args, trace),
    [CLI_O_MEMORY_VIZ] = offsetof(cli_args, memory_viz),
    [CLI_O_DEVICE] = offsetof(cli_args, offload.device),
    [CLI_O_PLAN] = offsetof(cli_args, plan),
    [CLI_O_DUMP] = offsetof(cli_args, dump),
    [CLI_O_WEIGHTS] = offsetof(cli_args, weights_dir),
    [CLI_O_INPUTS] = offsetof(cli_args, inputs_dir),
    [CLI_O_FSDP_UNIT] = offsetof(cli_args, par.po.fsdp_unit),
    [CLI_O_PP_CUTS] = offsetof(cli_args, par.po.cuts),
    [CLI_O_LENGTHS] = offsetof(cli_args, lengths),
};
/* Sizes by field. */
static const size_t size_field[CLI_O_COUNT_] = {
    [CLI_O_ALIGN] = offsetof(cli_args, alignment),
    [CLI_O_CAPACITY] = offsetof(cli_args, capacity),
    [CLI_O_BUDGET] = offsetof(cli_args, train.ropt.budget),
    [CLI_O_GPU_MEM] = offsetof(cli_args, gpu_mem),
    [CLI_O_CPU_MEM] = offsetof(cli_args, cpu_mem),
    [CLI_O_DISK_MEM] = offsetof(cli_args, disk_mem),
    [CLI_O_BUCKET_SIZE] = offsetof(cli_args, par.po.bucket_bytes),
    [CLI_O_RUNTIME_RESERVE] = offsetof(cli_args, runtime_reserve),
};

static int bad_value(const char *value, const char *name, const char *want)
{
    cli_error("bad value '%s' for %s: %s", value, name, want);
    return CLI_EXIT_USAGE;
}

/* --collapse PREFIX|DEPTH */
static int set_collapse(mp_dot_options *d, const char *name, const char *value)
{
    const char *p = value;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*value && !*p) {
        uint64_t depth;
        int rc = cli_parse_u64(name, value, &depth);
        if (rc)
            return rc;
        if (depth == 0 || depth > 64)
            return bad_value(value, name, "a depth from 1 to 64 or a name "
                                          "prefix");
        d->collapse_depth = (uint32_t)depth;
        d->collapse_prefix = NULL;
        return 0;
    }
    if (!*value) {
        cli_error("empty value for %s", name);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(value, "none") == 0) {   /* every node drawn */
        d->max_nodes = 0;
        d->collapse_prefix = NULL;
        d->collapse_depth = 0;
        return 0;
    }
    d->collapse_prefix = value;
    d->collapse_depth = 0;
    return 0;
}

/* --dot-max-nodes N: 1 to 100000 */
static int set_dot_max_nodes(mp_dot_options *d, const char *name,
                             const char *value)
{
    uint64_t n;
    int rc = cli_parse_u64(name, value, &n);
    if (rc)
        return rc;
    if (n == 0 || n > 100000)
        return bad_value(value, name, "a node count from 1 to 100000 (use "
                                      "--collapse none to draw every node)");
    d->max_nodes = (uint32_t)n;
    return 0;
}

/* a whole number from 1 to 2^24 (offload-policy) */
static int parse_u32(const char *name, const char *v, uint32_t *out)
{
    uint64_t x;
    int rc = cli_parse_u64(name, v, &x);
    if (rc)
        return rc;
    if (x == 0 || x > 1u << 24) {
        cli_error("bad value '%s' for %s: expected 1 to %u", v, name,
                  1u << 24);
        return CLI_EXIT_USAGE;
    }
    *out = (uint32_t)x;
    return 0;
}

static int parse_bits(const char *name, const char *v, unsigned *out)
{
    if (strcmp(v, "4bit") == 0 || strcmp(v, "4") == 0) {
        *out = 4;
        return 0;
    }
    if (strcmp(v, "none") == 0 || strcmp(v, "16bit") == 0) {
        *out = 16;
        return 0;
    }
    return bad_value(v, name, "expected 4bit or none");
}

static int parse_percent(const char *v, double *p)
{
    const char *s = v;
    for (int i = 0; i < 6; i++) {
        if (*s == '-' && (s[1] == ',' || s[1] == '\0')) {
            p[i] = -1;
            s++;
        } else {
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end == s || errno || !(x >= 0 && x <= 100))
                goto bad;
            p[i] = x;
            s = end;
        }
        if (i < 5) {
            if (*s != ',')
                goto bad;
            s++;
        }
    }
    if (*s == '\0')
        return 0;
bad:
    cli_error("bad value '%s' for --percent: expected six percentages "
              "wg,wc,cg,cc,hg,hc in [0, 100], '-' for a free one",
              v);
    return CLI_EXIT_USAGE;
}

static int set_alpha(mp_flexgen_options *fo, const char *name,
                     const char *value)
{
    double x;
    int rc = cli_parse_seconds(name, value, &x);
    if (rc)
        return rc;
    if (x <= 0 || x > 4)
        return bad_value(value, name, "expected a share in (0, 4]");
    fo->alpha_g = fo->alpha_c = fo->alpha_n = x;
    return 0;
}

static int set_max_extra(cli_train_args *t, const char *name,
                         const char *value)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (!end || *end || !(v >= 0))
        return bad_value(value, name, "a number >= 0");
    t->max_extra = v;
    t->have_max_extra = 1;
    return 0;
}

static int set_batch(cli_args *a, const char *name, const char *value)
{
    uint64_t v;
    int rc = cli_parse_u64(name, value, &v);
    if (rc)
        return rc;
    if (v < 1 || v > (uint64_t)INT64_MAX)
        return bad_value(value, name, "a batch must be >= 1");
    a->dims.batch = (int64_t)v;
    a->train.batch = v;
    return 0;
}

/* a whole number from lo to hi (--zero, --prefetch) */
static int parse_int_in(const char *name, const char *v, int lo, int hi,
                        int *out)
{
    uint64_t x;
    if (cli_parse_u64(name, v, &x))
        return CLI_EXIT_USAGE;
    if (x < (uint64_t)lo || x > (uint64_t)hi) {
        cli_error("bad value '%s' for %s: expected %d to %d", v, name, lo,
                  hi);
        return CLI_EXIT_USAGE;
    }
    *out = (int)x;
    return 0;
}

/* the options whose value a library parser reads */
static int set_named(cli_args *a, int id, const char *name, const char *v)
{
    mp_status st = MP_OK;
    const char *want = NULL;
    switch (id) {
    case CLI_O_METHOD:
        if (mp_offsets_method_parse(v, &a->method) == MP_OK)
            return 0;
        fprintf(stderr, "memplan: unknown method '%s' for --method (one "
                        "of: ", v);
        cli_print_methods(stderr);
        fprintf(stderr, ")\n");
        return CLI_EXIT_USAGE;
    case CLI_O_OPTIMIZER:
        st = mp_optimizer_parse(v, &a->train.topt.optimizer);
        want = "one of sgd, momentum, adam, adamw, adam8bit";
        break;
    case CLI_O_OPTIMIZER_IMPL:
        st = mp_optimizer_impl_parse(v, &a->train.topt.optimizer_impl);
        want = "one of foreach, fused, for-loop";
        break;
    case CLI_O_PRECISION:
        st = mp_precision_parse(v, &a->train.topt.precision);
        want = "one of 32-true, bf16-mixed, 16-mixed, bf16-true";
        break;
    case CLI_O_SOLVER:
        st = mp_remat_solver_parse(v, &a->train.ropt.solver);
        want = "one of auto, checkpoint-all, chen-sqrt, chen-greedy, chen, "
               "dtr, selective, lp, ilp, mincut, chen-linear, "
               "cm-checkpoint-all, cm-chen-sqrt, cm-chen-greedy";
        break;
    case CLI_O_ATTENTION:
        st = mp_attention_parse(v, &a->attention);
        a->train.topt.attention = a->attention;
        want = "fused or naive";
        break;
    case CLI_O_SCHEDULE:
        st = mp_pp_schedule_parse(v, &a->par.po.schedule);
        want = "one of gpipe, 1f1b, interleaved-1f1b";
        break;
    case CLI_O_PP_BALANCE:
        st = MP_OK;
        if (strcmp(v, "memory") == 0)
            a->par.po.balance_compute = 0;
        else if (strcmp(v, "compute") == 0)
            a->par.po.balance_compute = 1;
        else
            st = MP_ERR_INVALID_ARG;
        want = "memory or compute";
        break;
    case CLI_O_CONV_MATH:
        st = MP_OK;
        if (strcmp(v, "tf32") == 0)
            a->conv_fp32 = 0;
        else if (strcmp(v, "fp32") == 0)
            a->conv_fp32 = 1;
        else
            st = MP_ERR_INVALID_ARG;
        want = "tf32 or fp32";
        break;
    case CLI_O_SAVE:
        st = MP_OK;
        if (strcmp(v, "eager") == 0)
            a->train.save_eager = 1;
        else if (strcmp(v, "mincut") == 0)
            a->train.save_eager = 0;
        else
            st = MP_ERR_INVALID_ARG;
        want = "eager or mincut";
        break;
    case CLI_O_OFFLOAD_SOLVER:
        a->offload.solver = v;
        return cli_offload_check_solver(v, name);
    default:
        return CLI_EXIT_INTERNAL;
    }
    return st == MP_OK ? 0 : bad_value(v, name, want);
}

/* --kv-dtype */
static int set_kv_dtype(mp_serve_options *so, const char *name,
                        const char *v)
{
    static const struct {
        const char *n;
        mp_dtype t;
    } k[] = {{"bf16", MP_DTYPE_BFLOAT16}, {"bfloat16", MP_DTYPE_BFLOAT16},
             {"fp16", MP_DTYPE_FLOAT16}, {"float16", MP_DTYPE_FLOAT16},
             {"fp8", MP_DTYPE_FLOAT8E4M3FN},
             {"fp8_e4m3", MP_DTYPE_FLOAT8E4M3FN},
             {"fp8_e5m2", MP_DTYPE_FLOAT8E5M2}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(v, k[i].n) == 0) {
            so->kv_dtype = k[i].t;
            return 0;
        }
    return bad_value(v, name, "bf16, fp16, fp8 (fp8_e4m3) or fp8_e5m2");
}

/* --cuda-graph-sizes N,N,... or none */
static int set_graph_sizes(mp_serve_options *so, const char *name,
                           const char *v)
{
    so->n_graph_sizes = 0;
    if (strcmp(v, "none") == 0) {
        so->graph_sizes_default = 0;
        return 0;
    }
    const char *s = v;
    for (;;) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(s, &end, 10);
        if (end == s || errno || x == 0 || x > 1u << 20 || *s == '-' ||
            so->n_graph_sizes == MP_SERVE_MAX_GRAPH_SIZES)
            return bad_value(v, name, "batch sizes from 1 to 1048576, comma "
                                      "separated (at most 128), or none");
        so->graph_sizes[so->n_graph_sizes++] = (uint32_t)x;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return bad_value(v, name, "batch sizes, comma separated, or "
                                      "none");
        s = end + 1;
    }
}

static int set_serve(cli_args *a, int id, const char *name, const char *v)
{
    mp_serve_options *so = &a->so;
    uint64_t x;
    double f;
    int rc;
    switch (id) {
    case CLI_O_GROUP_SIZE:
        if ((rc = cli_parse_u64(name, v, &x)))
            return rc;
        if (x > 1u << 20)
            return bad_value(v, name, "0 (per channel) to 1048576");
        so->group_size = (uint32_t)x;
        return 0;
    case CLI_O_KV_DTYPE: return set_kv_dtype(so, name, v);
    case CLI_O_KV_LAYOUT:
        if (strcmp(v, "paged") == 0 || strcmp(v, "contiguous") == 0) {
            so->kv_paged = v[0] == 'p';
            return 0;
        }
        return bad_value(v, name, "paged or contiguous");
    case CLI_O_BLOCK_SIZE: return parse_u32(name, v, &so->block_size);
    case CLI_O_MAX_MODEL_LEN: return parse_u32(name, v, &so->max_model_len);
    case CLI_O_MAX_BATCHED_TOKENS:
        return parse_u32(name, v, &so->max_batched_tokens);
    case CLI_O_MAX_SEQS: return parse_u32(name, v, &so->max_seqs);
    case CLI_O_CUDA_GRAPH_SIZES: return set_graph_sizes(so, name, v);
    case CLI_O_TP:
        if ((rc = parse_u32(name, v, &so->tp)))
            return rc;
        return so->tp > 1024 ? bad_value(v, name, "1 to 1024 GPUs") : 0;
    case CLI_O_GPU_UTIL:
        if ((rc = cli_parse_seconds(name, v, &f)))
            return rc;
        if (!(f > 0 && f <= 1))
            return bad_value(v, name, "a share in (0, 1], e.g. 0.9");
        so->gpu_util = f;
        return 0;
    case CLI_O_SHARED_PREFIX:
        if ((rc = cli_parse_u64(name, v, &x)))
            return rc;
        if (x > UINT32_MAX)
            return bad_value(v, name, "at most 4294967295 tokens");
        so->shared_prefix = (uint32_t)x;
        return 0;
    default: return set_named(a, id, name, v);
    }
}

/* the options with a parser of their own */
static int set_other(cli_args *a, int id, const char *name, const char *v)
{
    switch (id) {
    case CLI_O_DIM: return cli_parse_dim(&a->dims, v);
    case CLI_O_SHAPE: return cli_parse_shape(&a->dims, v);
    case CLI_O_BATCH: return set_batch(a, name, v);
    case CLI_O_SEED: return cli_parse_u64(name, v, &a->seed);
    case CLI_O_TIME_LIMIT: return cli_parse_seconds(name, v, &a->time_limit);
    case CLI_O_COLLAPSE: return set_collapse(&a->dopt, name, v);
    case CLI_O_DOT_MAX_NODES: return set_dot_max_nodes(&a->dopt, name, v);
    case CLI_O_KV_CONTEXT: return cli_parse_u64(name, v, &a->kv_context);
    case CLI_O_MAX_EXTRA: return set_max_extra(&a->train, name, v);
    case CLI_O_MAXIMIZE:
        if (strcmp(v, "batch") != 0)
            return bad_value(v, name, "only 'batch'");
        a->train.maximize = 1;
        return 0;
    case CLI_O_PROMPT: return parse_u32(name, v, &a->fo.prompt_len);
    case CLI_O_GEN: return parse_u32(name, v, &a->fo.gen_len);
    case CLI_O_GPU_BATCH: return parse_u32(name, v, &a->fo.gpu_batch);
    case CLI_O_NUM_BATCHES: return parse_u32(name, v, &a->fo.num_batches);
    case CLI_O_PERCENT: return parse_percent(v, a->fo.percent);
    case CLI_O_COMPRESS_WEIGHTS:
        return parse_bits(name, v, &a->fo.weight_bits);
    case CLI_O_COMPRESS_KV: return parse_bits(name, v, &a->fo.cache_bits);
    case CLI_O_ALPHA: return set_alpha(&a->fo, name, v);
    case CLI_O_DP: return parse_u32(name, v, &a->par.po.dp);
    case CLI_O_PP: return parse_u32(name, v, &a->par.po.pp);
    case CLI_O_TP: /* serve's: its GPUs; plan's and validate's: ranks */
        if (a->cmd == CLI_CMD_SERVE)
            return set_serve(a, id, name, v);
        return parse_u32(name, v, &a->par.po.tp);
    case CLI_O_RANK: {
        int r = 0;
        int rc = parse_int_in(name, v, 0, 1 << 24, &r);
        a->par.rank = (uint32_t)r;
        return rc;
    }
    case CLI_O_RANKS: {
        int r = 0;
        int rc = parse_int_in(name, v, 1, 1024, &r);
        a->par.ranks = (uint32_t)r;
        return rc;
    }
    case CLI_O_MICROBATCHES: return parse_u32(name, v, &a->par.po.microbatches);
    case CLI_O_VIRTUAL_STAGES:
        return parse_u32(name, v, &a->par.po.virtual_stages);
    case CLI_O_ZERO: return parse_int_in(name, v, 0, 3, &a->par.po.zero);
    case CLI_O_PREFETCH: return parse_int_in(name, v, 0, 2, &a->par.po.prefetch);
    default: return set_serve(a, id, name, v);
    }
}

int cli_option_set(cli_args *a, int id, const char *shown, const char *value)
{
    char *base = (char *)a;
    if (flag_field[id]) {
        *(int *)(base + flag_field[id]) = 1;
        return 0;
    }
    if (string_field[id]) {
        *(const char **)(base + string_field[id]) = value;
        return 0;
    }
    if (size_field[id]) {
        uint64_t *dst = (uint64_t *)(base + size_field[id]);
        int rc = cli_parse_size(shown, value, dst);
        if (rc)
            return rc;
        /* a budget, and the capacity offsets asks for, of 0 mean nothing */
        if (*dst == 0 && (id == CLI_O_BUDGET ||
                          (id == CLI_O_CAPACITY && a->cmd == CLI_CMD_OFFSETS)))
            return bad_value(value, shown, id == CLI_O_BUDGET
                                               ? "a budget must be > 0"
                                               : "expected a size > 0");
        return 0;
    }
    return set_other(a, id, shown, value);
}
