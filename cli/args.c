/* args.c - the command-line parser over the table of cli/options.c, its
 * checks (unknown options with a suggestion, positional arguments, the
 * rules of options that would do nothing), and the parsers of numbers,
 * sizes, dims and shapes. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_command_find(const char *name)
{
    for (int c = 0; c < CLI_CMD_COUNT_; c++)
        if (strcmp(name, cli_commands[c].name) == 0)
            return c;
    return -1;
}

static int takes(int cmd, int id)
{
    return (cli_options[id].cmds >> cmd) & 1u;
}

static int find_long(int cmd, const char *name, size_t len)
{
    for (int id = 0; id < CLI_O_COUNT_; id++)
        if (takes(cmd, id) && strlen(cli_options[id].name) == len &&
            strncmp(cli_options[id].name, name, len) == 0)
            return id;
    return -1;
}

static int find_short(int cmd, char c)
{
    for (int id = 0; id < CLI_O_COUNT_; id++)
        if (takes(cmd, id) && cli_options[id].short_name == c)
            return id;
    return -1;
}

/* ---- unknown options -------------------------------------------------- */
/* Names that were retired, and what to write instead. */
static const struct {
    unsigned cmds;
    const char *name, *instead;
} renamed[] = {
    {CLI_C(OFFLOAD_POLICY), "gpu", "it is --device now"},
    {CLI_C(OFFLOAD_POLICY), "model",
     "the model is the positional argument now: memplan offload-policy "
     "CONFIG.json"},
};

static int unknown_option(int cmd, const char *shown, const char *name,
                          size_t len)
{
    const char *cname = cli_commands[cmd].name;
    char key[64], others[160] = "";
    snprintf(key, sizeof key, "%.*s", (int)(len < 63 ? len : 63), name);
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (((renamed[i].cmds >> cmd) & 1u) &&
            strcmp(key, renamed[i].name) == 0) {
            cli_error("%s: unknown option '%s': %s", cname, shown,
                      renamed[i].instead);
            return CLI_EXIT_USAGE;
        }
    const char *names[CLI_O_COUNT_];
    size_t n = 0;
    for (int id = 0; id < CLI_O_COUNT_; id++) {
        if (takes(cmd, id))
            names[n++] = cli_options[id].name;
        else if (strcmp(cli_options[id].name, key) == 0)
            for (int c = 0; c < CLI_CMD_COUNT_; c++)
                if (takes(c, id))
                    snprintf(others + strlen(others),
                             sizeof others - strlen(others), "%s%s",
                             *others ? ", " : "", cli_commands[c].name);
    }
    const char *best = len ? cli_closest(key, names, n) : NULL;
    if (*others)
        cli_error("%s: unknown option '%s': an option of %s, not of %s (see "
                  "'memplan %s --help')", cname, shown, others, cname, cname);
    else if (best)
        cli_error("%s: unknown option '%s'; did you mean --%s? (see 'memplan "
                  "%s --help')", cname, shown, best, cname);
    else
        cli_error("%s: unknown option '%s' (see 'memplan %s --help')", cname,
                  shown, cname);
    return CLI_EXIT_USAGE;
}

/* ---- the parser --------------------------------------------------------- */
/* The table's defaults of cmd, through each option's parser. */
static int init_args(cli_args *a, int cmd, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    mp_train_options_init(&a->train.topt);
    mp_remat_options_init(&a->train.ropt);
    mp_dot_options_init(&a->dopt);
    mp_flexgen_options_init(&a->fo);
    for (int id = 0; id < CLI_O_COUNT_; id++) {
        const char *def = cli_option_def(&cli_options[id], cmd);
        if (!takes(cmd, id) || !def)
            continue;
        char shown[64];
        snprintf(shown, sizeof shown, "--%s", cli_options[id].name);
        if (cli_option_set(a, id, shown, def) != 0) {
            cli_error("internal error: default '%s' of %s", def, shown);
            return CLI_EXIT_INTERNAL;
        }
    }
    return 0;
}

/* One option at argv[*i]; 0 or an exit code. */
static int parse_option(cli_args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *value = NULL;
    const char *cname = cli_commands[a->cmd].name;
    char shown[64];
    int id;
    if (arg[1] == '-') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        snprintf(shown, sizeof shown, "--%.*s", (int)(len < 40 ? len : 40),
                 name);
        if ((id = find_long(a->cmd, name, len)) < 0)
            return unknown_option(a->cmd, shown, name, len);
        if (eq && !cli_options[id].arg) {
            cli_error("%s: option '%s' takes no value", cname, shown);
            return CLI_EXIT_USAGE;
        }
        value = eq ? eq + 1 : NULL;
    } else {
        snprintf(shown, sizeof shown, "-%c", arg[1]);
        if (arg[2] != '\0' || (id = find_short(a->cmd, arg[1])) < 0) {
            cli_error("%s: unknown option '%s' (see 'memplan %s --help')",
                      cname, arg, cname);
            return CLI_EXIT_USAGE;
        }
        snprintf(shown, sizeof shown, "--%s", cli_options[id].name);
    }
    if (cli_options[id].arg && !value) {
        if (*i + 1 >= argc) {
            cli_error("%s: option '%s' needs a value", cname, shown);
            return CLI_EXIT_USAGE;
        }
        value = argv[++*i];
    }
    a->given[id] = 1;
    return cli_option_set(a, id, shown, value);
}

int cli_no_effect(const cli_args *a, int id, const char *context,
                  const char *why)
{
    cli_error("%s: --%s does nothing %s: %s", cli_commands[a->cmd].name,
              cli_options[id].name, context, why);
    return CLI_EXIT_USAGE;
}

/* The positional count and the rules. */
static int check_args(const cli_args *a)
{
    const cli_command *c = &cli_commands[a->cmd];
    if (a->n_pos < c->min_pos || a->n_pos > c->max_pos) {
        cli_error("%s: expected %s, got %d arguments (see 'memplan %s "
                  "--help')", c->name, c->args, a->n_pos, c->name);
        return CLI_EXIT_USAGE;
    }
    for (const cli_rule *r = cli_rules; r->why; r++) {
        if (!((r->cmds >> a->cmd) & 1u) || !cli_given(a, r->opt) ||
            cli_given(a, r->other) != !r->needs)
            continue;
        char context[64];
        snprintf(context, sizeof context, "%s --%s",
                 r->needs ? "without" : "with", cli_options[r->other].name);
        return cli_no_effect(a, r->opt, context, r->why);
    }
    return 0;
}

int cli_parse_args(int cmd, int argc, char **argv, cli_args *a)
{
    int rc = init_args(a, cmd, argc, argv), only_pos = 0;
    const char *cname = cli_commands[cmd].name;
    for (int i = 1; i < argc && !rc; i++) {
        const char *s = argv[i];
        if (only_pos || s[0] != '-' || s[1] == '\0') {
            if (a->n_pos >= CLI_MAX_POSITIONAL) {
                cli_error("%s: too many arguments (see 'memplan %s --help')",
                          cname, cname);
                return CLI_EXIT_USAGE;
            }
            a->pos[a->n_pos++] = s;
        } else if (strcmp(s, "--") == 0) {
            only_pos = 1;
        } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = 1;
        } else {
            rc = parse_option(a, argc, argv, &i);
        }
    }
    if (rc || a->help)
        return rc;
    return check_args(a);
}

int cli_run_command(int cmd, int argc, char **argv, int (*run)(cli_args *a))
{
    cli_args *a = malloc(sizeof *a);
    if (!a) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    int rc = cli_parse_args(cmd, argc, argv, a);
    if (!rc && a->help)
        cli_help(stdout, cmd);
    else if (!rc)
        rc = run(a);
    free(a);
    return rc;
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

void cli_print_methods(FILE *f)
{
    for (int m = MP_OFFSETS_AUTO; m <= MP_OFFSETS_EXACT; m++)
        fprintf(f, "%s%s", m == MP_OFFSETS_AUTO ? "" : ", ",
                mp_offsets_method_name((mp_offsets_method)m));
}

/* ---- dims and shapes ------------------------------------------------------ */
/* NAME=VALUE for option opt ("--dim", "--shape") */
static int parse_binding(cli_dims *d, const char *opt, const char *value)
{
    const char *eq = strrchr(value, '=');
    if (!eq || eq == value) {
        cli_error("%s expects NAME=VALUE (or INPUT:AXIS=VALUE), got '%s'",
                  opt, value);
        return CLI_EXIT_USAGE;
    }
    size_t len = (size_t)(eq - value);
    if (d->n == CLI_MAX_DIMS || len >= sizeof d->names[0]) {
        cli_error("%s: at most %d bindings of names up to %zu characters",
                  opt, CLI_MAX_DIMS, sizeof d->names[0] - 1);
        return CLI_EXIT_USAGE;
    }
    uint64_t v;
    int rc = cli_parse_u64(opt, eq + 1, &v);
    if (rc)
        return rc;
    if (v > (uint64_t)INT64_MAX) {
        cli_error("%s: value %s too large", opt, eq + 1);
        return CLI_EXIT_USAGE;
    }
    memcpy(d->names[d->n], value, len);
    d->names[d->n][len] = '\0';
    d->b[d->n].name = d->names[d->n];
    d->b[d->n].value = (int64_t)v;
    d->n++;
    return 0;
}

int cli_parse_dim(cli_dims *d, const char *value)
{
    return parse_binding(d, "--dim", value);
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
        int rc = parse_binding(d, "--shape", buf);
        if (rc)
            return rc;
        if (!x)
            return 0;
        p = x + 1;
    }
}

int cli_is_json(const char *path)
{
    /* JSON (first character '{' or '['), as mp_graph_load tells it */
    size_t len = strlen(path);
    FILE *f = len >= 5 && strcmp(path + len - 5, ".onnx") == 0
                  ? NULL : fopen(path, "rb");
    int c = ' ';
    while (f && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))
        c = fgetc(f);
    if (f)
        fclose(f);
    return c == '{' || c == '[';
}

int cli_load_graph(mp_ctx *ctx, const cli_args *a, mp_graph **g)
{
    const char *path = a->pos[0];
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.dims = a->dims.b;
    o.n_dims = a->dims.n;
    o.batch = a->dims.batch;
    o.declared_shapes = !a->no_declared;
    int plans = a->cmd == CLI_CMD_PLAN || a->cmd == CLI_CMD_VALIDATE;
    if ((a->no_declared || (o.batch && plans)) && cli_is_json(path)) {
        if (a->no_declared)
            return cli_no_effect(a, CLI_O_NO_DECLARED, "on a JSON graph",
                                 "only an ONNX model declares shapes");
        if (!a->train.maximize)
            return cli_no_effect(a, CLI_O_BATCH,
                                 "on a JSON graph without --maximize",
                                 "a JSON graph has no input dims to set; "
                                 "there --batch names the batch --maximize "
                                 "scales from");
        o.batch = 0;
    }
    mp_status st = mp_graph_load_opts(ctx, path, &o, g);
    return st == MP_OK ? 0 : cli_fail(ctx, st, path);
}
