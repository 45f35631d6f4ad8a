/* args.c - command-line option parsing and number/size parsing. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt *find_long(const cli_opt *opts, const char *name,
                                size_t len)
{
    for (const cli_opt *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (const cli_opt *o = opts; o && o->name; o++)
        if (o->short_name && o->short_name == c)
            return o;
    return NULL;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              cli_opt_fn fn, void *state, const char **pos, int *n_pos,
              int *help)
{
    int only_pos = 0;
    *n_pos = 0;
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const cli_opt *o = NULL;
        const char *value = NULL;
        char shown[64];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (*n_pos >= CLI_MAX_POSITIONAL) {
                cli_error("%s: too many arguments (see 'memplan %s --help')",
                          cmd, cmd);
                return CLI_EXIT_USAGE;
            }
            pos[(*n_pos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = 1;
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(opts, name, len);
            snprintf(shown, sizeof shown, "--%.*s", (int)(len < 40 ? len : 40),
                     name);
            if (!o) {
                cli_error("%s: unknown option '%s' (see 'memplan %s --help')",
                          cmd, shown, cmd);
                return CLI_EXIT_USAGE;
            }
            if (eq) {
                if (!o->takes_value) {
                    cli_error("%s: option '%s' takes no value", cmd, shown);
                    return CLI_EXIT_USAGE;
                }
                value = eq + 1;
            }
        } else {
            if (a[2] != '\0') {
                cli_error("%s: unknown option '%s' (see 'memplan %s --help')",
                          cmd, a, cmd);
                return CLI_EXIT_USAGE;
            }
            o = find_short(opts, a[1]);
            snprintf(shown, sizeof shown, "-%c", a[1]);
            if (!o) {
                cli_error("%s: unknown option '%s' (see 'memplan %s --help')",
                          cmd, a, cmd);
                return CLI_EXIT_USAGE;
            }
        }
        if (o->takes_value && !value) {
            if (i + 1 >= argc) {
                cli_error("%s: option '%s' needs a value", cmd, shown);
                return CLI_EXIT_USAGE;
            }
            value = argv[++i];
        }
        int rc = fn(state, o->id, shown, value);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- numbers ------------------------------------------------------------------ */
static const struct {
    const char *suffix;
    uint64_t mult;
} units[] = {
    {"", 1},
    {"b", 1},
    {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30},
    {"tib", 1ull << 40},
    {"kb", 1000ull}, {"mb", 1000000ull}, {"gb", 1000000000ull},
    {"tb", 1000000000000ull},
};

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* Parses the leading decimal digits of s; *end after them. 0 or -1 on
 * overflow; -2 when there are no digits. */
static int parse_digits(const char *s, const char **end, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    int overflow = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
    }
    *end = p;
    if (p == s)
        return -2;
    *out = v;
    return overflow ? -1 : 0;
}

int cli_parse_size(const char *what, const char *s, uint64_t *out)
{
    const char *p;
    uint64_t v;
    int rc = parse_digits(s, &p, &v);
    if (rc == -2) {
        cli_error("bad size '%s' for %s: expected a whole number of bytes "
                  "with an optional unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, "
                  "TB), e.g. 4KiB",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    if (*p == '.') {
        cli_error("bad size '%s' for %s: expected a whole number of bytes "
                  "(no fractions; write 1536KiB, not 1.5MiB)",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!ieq(p, units[i].suffix))
            continue;
        if (rc == -1 || v > UINT64_MAX / units[i].mult) {
            cli_error("size '%s' for %s does not fit in 64 bits", s, what);
            return CLI_EXIT_USAGE;
        }
        *out = v * units[i].mult;
        return 0;
    }
    cli_error("bad size '%s' for %s: unknown unit '%s' (use B, KiB, MiB, "
              "GiB, TiB, KB, MB, GB or TB)",
              s, what, p);
    return CLI_EXIT_USAGE;
}

int cli_parse_u64(const char *what, const char *s, uint64_t *out)
{
    const char *p;
    uint64_t v;
    int rc = parse_digits(s, &p, &v);
    if (rc == -2 || *p != '\0') {
        cli_error("bad value '%s' for %s: expected a non-negative integer", s,
                  what);
        return CLI_EXIT_USAGE;
    }
    if (rc == -1) {
        cli_error("value '%s' for %s does not fit in 64 bits", s, what);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int cli_parse_seconds(const char *what, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0) {
        cli_error("bad value '%s' for %s: expected a number of seconds >= 0",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int cli_parse_method(const char *s, mp_offsets_method *out)
{
    if (mp_offsets_method_parse(s, out) == MP_OK)
        return 0;
    fprintf(stderr, "memplan: unknown method '%s' for --method (one of: ", s);
    cli_print_methods(stderr);
    fprintf(stderr, ")\n");
    return CLI_EXIT_USAGE;
}

void cli_print_methods(FILE *f)
{
    for (int m = MP_OFFSETS_AUTO; m <= MP_OFFSETS_EXACT; m++)
        fprintf(f, "%s%s", m == MP_OFFSETS_AUTO ? "" : ", ",
                mp_offsets_method_name((mp_offsets_method)m));
}

/* ---- options shared by plan and offsets -------------------------------------- */
enum { OPT_OUTPUT, OPT_JSON, OPT_ALIGN, OPT_METHOD, OPT_SEED, OPT_TIME };

const cli_opt cli_solve_opts[] = {
    {"output", 'o', 1, OPT_OUTPUT},
    {"json", 0, 0, OPT_JSON},
    {"align", 0, 1, OPT_ALIGN},
    {"method", 0, 1, OPT_METHOD},
    {"seed", 0, 1, OPT_SEED},
    {"time-limit", 0, 1, OPT_TIME},
    {NULL, 0, 0, 0},
};

int cli_solve_on_opt(void *state, int id, const char *name, const char *value)
{
    cli_solve_args *a = state;
    switch (id) {
    case OPT_OUTPUT: a->output = value; return 0;
    case OPT_JSON: a->json = 1; return 0;
    case OPT_ALIGN: return cli_parse_size(name, value, &a->alignment);
    case OPT_METHOD: return cli_parse_method(value, &a->method);
    case OPT_SEED: return cli_parse_u64(name, value, &a->seed);
    case OPT_TIME: return cli_parse_seconds(name, value, &a->time_limit);
    default: return CLI_EXIT_INTERNAL;
    }
}

int cli_parse_dim(cli_dims *d, const char *opt, const char *value)
{
    const char *eq = strrchr(value, '=');
    if (!eq || eq == value) {
        cli_error("--%s expects NAME=VALUE (or INPUT:AXIS=VALUE), got '%s'",
                  opt, value);
        return CLI_EXIT_USAGE;
    }
    size_t len = (size_t)(eq - value);
    if (d->n == CLI_MAX_DIMS || len >= sizeof d->names[0]) {
        cli_error("--%s: at most %d bindings of names up to %zu characters",
                  opt, CLI_MAX_DIMS, sizeof d->names[0] - 1);
        return CLI_EXIT_USAGE;
    }
    uint64_t v;
    int rc = cli_parse_u64(opt, eq + 1, &v);
    if (rc)
        return rc;
    if (v > (uint64_t)INT64_MAX) {
        cli_error("--%s: value %s too large", opt, eq + 1);
        return CLI_EXIT_USAGE;
    }
    memcpy(d->names[d->n], value, len);
    d->names[d->n][len] = '\0';
    d->b[d->n].name = d->names[d->n];
    d->b[d->n].value = (int64_t)v;
    d->n++;
    return 0;
}

int cli_parse_batch(cli_dims *d, const char *opt, const char *value)
{
    uint64_t v;
    int rc = cli_parse_u64(opt, value, &v);
    if (rc)
        return rc;
    if (v < 1 || v > (uint64_t)INT64_MAX) {
        cli_error("bad value '%s' for --%s: a batch must be >= 1", value, opt);
        return CLI_EXIT_USAGE;
    }
    d->batch = (int64_t)v;
    return 0;
}

mp_status cli_load_graph(mp_ctx *ctx, const char *path, const cli_dims *d,
                         int json_batch_ok, mp_graph **g)
{
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.dims = d->b;
    o.n_dims = d->n;
    o.batch = d->batch;
    if (o.batch && json_batch_ok) {
        /* JSON (first character '{' or '['), as mp_graph_load tells it */
        size_t len = strlen(path);
        FILE *f = len >= 5 && strcmp(path + len - 5, ".onnx") == 0
                      ? NULL : fopen(path, "rb");
        int c = ' ';
        while (f && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))
            c = fgetc(f);
        if (f)
            fclose(f);
        if (c == '{' || c == '[')
            o.batch = 0;
    }
    return mp_graph_load_opts(ctx, path, &o, g);
}

int cli_parse_shape(cli_dims *d, const char *value)
{
    /* INPUT=D0xD1x... : one binding INPUT:i=Di per axis */
    const char *eq = strrchr(value, '=');
    if (!eq || eq == value || !eq[1]) {
        cli_error("--shape expects INPUT=D0xD1x... (e.g. q=1x8x128x64), "
                  "got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    const char *p = eq + 1;
    for (size_t axis = 0;; axis++) {
        const char *x = strchr(p, 'x');
        size_t len = x ? (size_t)(x - p) : strlen(p);
        char buf[300];
        int w = snprintf(buf, sizeof buf, "%.*s:%zu=%.*s", (int)(eq - value),
                         value, axis, (int)len, p);
        if (w < 0 || (size_t)w >= sizeof buf || len == 0) {
            cli_error("--shape: bad shape in '%s'", value);
            return CLI_EXIT_USAGE;
        }
        int rc = cli_parse_dim(d, "shape", buf);
        if (rc)
            return rc;
        if (!x)
            return 0;
        p = x + 1;
    }
}

int cli_parse_dims(cli_dims *d, const char *cmd, int argc, char **argv,
                   const cli_opt *opts, cli_opt_fn fn, void *state,
                   const char **pos, int *n_pos, int *help)
{
    d->batch = 0; /* plan and validate take --batch with the training
                     options (cli_train_opts) and copy it here */
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    if (!rest) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    int n = 0, rc = 0, only_pos = 0;
    for (int i = 0; i < argc && !rc; i++) {
        const char *s = argv[i];
        if (i > 0 && !only_pos && strcmp(s, "--") == 0)
            only_pos = 1;
        if (i > 0 && !only_pos && strncmp(s, "--shape", 7) == 0 &&
            (s[7] == '\0' || s[7] == '=')) {
            if (s[7] == '=') {
                rc = cli_parse_shape(d, s + 8);
            } else if (i + 1 < argc) {
                rc = cli_parse_shape(d, argv[++i]);
            } else {
                cli_error("%s: option '--shape' needs a value", cmd);
                rc = CLI_EXIT_USAGE;
            }
            continue;
        }
        if (i == 0 || only_pos || strncmp(s, "--dim", 5) != 0 ||
            (s[5] != '\0' && s[5] != '=')) {
            rest[n++] = argv[i];
            continue;
        }
        if (s[5] == '=') {
            rc = cli_parse_dim(d, "dim", s + 6);
        } else if (i + 1 < argc) {
            rc = cli_parse_dim(d, "dim", argv[++i]);
        } else {
            cli_error("%s: option '--dim' needs a value", cmd);
            rc = CLI_EXIT_USAGE;
        }
    }
    rest[n] = NULL;
    if (!rc)
        rc = cli_parse(cmd, n, rest, opts, fn, state, pos, n_pos, help);
    free(rest);
    return rc;
}
