/* main.c - the memplan command: dispatch to subcommands.
 *
 * Every subcommand is a row of cli_commands (cli/options.c) and lives in
 * its own file (cmd_NAME.c). `validate` runs the CUDA executor, which is a
 * program of its own (memplan-validate, built from validate/): memplan
 * checks the command line, then executes it, so that no other command
 * loads CUDA. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifndef MP_LIBEXEC_REL
#define MP_LIBEXEC_REL "../libexec/memplan"
#endif

/* The executor: next to this program (a build tree, or the bin
 * directory), then in the libexec directory relative to it (an
 * installation, wherever it was moved), then where it was installed. */
static int find_validate(char *path, size_t cap)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    const char *dirs[3] = {NULL, NULL, MP_LIBEXEC_DIR};
    char rel[4096 + 64];
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            dirs[0] = self;
            snprintf(rel, sizeof rel, "%s/%s", self, MP_LIBEXEC_REL);
            dirs[1] = rel;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (!dirs[i])
            continue;
        int w = snprintf(path, cap, "%s/memplan-validate", dirs[i]);
        if (w > 0 && (size_t)w < cap && access(path, X_OK) == 0)
            return 0;
    }
    return -1;
}

static int run_validate(cli_args *a)
{
    char path[4200];
    if (find_validate(path, sizeof path) != 0) {
        cli_error("validate: the executor memplan-validate is not next to "
                  "memplan nor in %s (build the memplan-validate target)",
                  MP_LIBEXEC_DIR);
        return CLI_EXIT_INTERNAL;
    }
    fflush(stdout);
    a->argv[0] = path;
    execv(path, a->argv);
    cli_error("validate: cannot run %s: %s", path, strerror(errno));
    return CLI_EXIT_INTERNAL;
}

/* memplan calibrate: memplan-validate calibrate ARGS... */
static int run_calibrate(cli_args *a)
{
    char path[4200];
    if (find_validate(path, sizeof path) != 0) {
        cli_error("calibrate: the executor memplan-validate is not next to "
                  "memplan nor in %s (build the memplan-validate target)",
                  MP_LIBEXEC_DIR);
        return CLI_EXIT_INTERNAL;
    }
    char **argv = malloc(((size_t)a->argc + 2) * sizeof *argv);
    if (!argv) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    argv[0] = path;
    argv[1] = (char *)"calibrate";
    for (int i = 1; i < a->argc; i++)
        argv[i + 1] = a->argv[i];
    argv[a->argc + 1] = NULL;
    fflush(stdout);
    execv(path, argv);
    cli_error("calibrate: cannot run %s: %s", path, strerror(errno));
    free(argv);
    return CLI_EXIT_INTERNAL;
}

static int (*const run[CLI_CMD_COUNT_])(cli_args *a) = {
    [CLI_CMD_PLAN] = cli_cmd_plan,
    [CLI_CMD_OFFSETS] = cli_cmd_offsets,
    [CLI_CMD_VERIFY] = cli_cmd_verify,
    [CLI_CMD_SHAPES] = cli_cmd_shapes,
    [CLI_CMD_CONVERT] = cli_cmd_convert,
    [CLI_CMD_VALIDATE] = run_validate,
    [CLI_CMD_OFFLOAD_POLICY] = cli_cmd_offload_policy,
    [CLI_CMD_CALIBRATE] = run_calibrate,
    [CLI_CMD_SERVE] = cli_cmd_serve,
};

static int unknown(const char *what, const char *name)
{
    const char *names[CLI_CMD_COUNT_];
    for (int c = 0; c < CLI_CMD_COUNT_; c++)
        names[c] = cli_commands[c].name;
    const char *best = name[0] == '-' ? NULL
                                      : cli_closest(name, names, CLI_CMD_COUNT_);
    if (best)
        cli_error("unknown %s '%s'; did you mean '%s'?", what, name, best);
    else
        cli_error("unknown %s '%s'", what, name);
    cli_list_commands(stderr);
    fputs("Run 'memplan --help' for usage.\n", stderr);
    return CLI_EXIT_USAGE;
}

/* memplan help [--markdown] [COMMAND] */
static int help(int argc, char **argv)
{
    int md = argc > 2 && strcmp(argv[2], "--markdown") == 0;
    if (argc > 3 + md) {
        cli_error("help: expected [--markdown] [COMMAND]");
        return CLI_EXIT_USAGE;
    }
    if (argc < 3 + md) {
        if (md) {
            cli_error("help: --markdown needs a COMMAND");
            return CLI_EXIT_USAGE;
        }
        cli_help_main(stdout);
        return CLI_EXIT_OK;
    }
    int c = cli_command_find(argv[2 + md]);
    if (c < 0)
        return unknown("command", argv[2 + md]);
    if (md)
        cli_help_markdown(stdout, c);
    else
        cli_help(stdout, c);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
    /* Large arrays from mmap, always: glibc's default threshold rises to
     * the size of the largest block freed (up to 32 MiB), after which the
     * planner's growing arrays come from the heap and their reallocations
     * leave holes that stay resident (plan on a 100k-node graph: 110 MiB
     * of RSS at the default, 90 MiB with this). The library does not
     * touch malloc's settings; this is the program's choice. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    if (argc < 2) {
        cli_help_main(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        cli_help_main(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("memplan %s\n", mp_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0)
        return help(argc, argv);
    int c = cli_command_find(cmd);
    if (c >= 0)
        return cli_run_command(c, argc - 1, argv + 1, run[c]);
    return unknown(cmd[0] == '-' ? "option" : "command", cmd);
}
