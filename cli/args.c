/* args.c - the command-line parser over the table of cli/options.c and
 * its checks: unknown options (with a suggestion), positional arguments,
 * and the rules that refuse an option that would do nothing. */
#include "cli.h"

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
    mp_parallel_options_init(&a->par.po);
    mp_remat_options_init(&a->train.ropt);
    mp_dot_options_init(&a->dopt);
    mp_flexgen_options_init(&a->fo);
    mp_serve_options_init(&a->so);
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
    return cli_check_paths(a);
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
    /* --device times the training graph too (cli_train_prepare) */
    a->train.device = a->offload.device;
    return check_args(a);
}

int cli_run_command(int cmd, int argc, char **argv, int (*run)(cli_args *a))
{
    cli_json_errors_begin(cli_commands[cmd].name, argc, argv);
    cli_args *a = malloc(sizeof *a);
    if (!a) {
        cli_error("out of memory");
        return cli_json_errors_end(CLI_EXIT_INTERNAL);
    }
    int rc = cli_parse_args(cmd, argc, argv, a);
    if (!rc && a->help)
        cli_help(stdout, cmd);
    else if (!rc)
        rc = run(a);
    free(a);
    return cli_json_errors_end(rc);
}
