/* main.c - the memplan command: dispatch to subcommands.
 *
 * Every subcommand lives in its own file (cmd_NAME.c) and is one row of
 * the table below; later subcommands (convert, shapes, validate) are added
 * as rows when they exist. */
#include "cli.h"

#include <string.h>

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} cli_command;

static const cli_command commands[] = {
    {"plan", "plan a graph: lifetimes, arena offsets, peak and its tensors",
     cli_cmd_plan},
    {"offsets", "place the buffers of a trace (id,lower,upper,size CSV)",
     cli_cmd_offsets},
    {"verify", "check a plan against its graph, or a trace's offsets",
     cli_cmd_verify},
    {"shapes", "print every tensor's dtype and shape (ONNX: with --dim)",
     cli_cmd_shapes},
    {"convert", "write a model (ONNX) as a memplan JSON graph",
     cli_cmd_convert},
    {"validate", "run the plan on a GPU: measured against predicted memory",
     cli_cmd_validate},
    {"offload-policy", "FlexGen-style offload policy for LLM inference",
     cli_cmd_offload_policy},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void list_commands(FILE *f)
{
    fputs("Commands:\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
}

static void usage(FILE *f)
{
    fputs("Usage: memplan COMMAND [OPTIONS] ARGS...\n"
          "       memplan COMMAND --help\n"
          "       memplan --version\n"
          "\n"
          "Offline memory planner for computation graphs: works out every\n"
          "tensor's size and lifetime and packs them into one arena.\n"
          "\n",
          f);
    list_commands(f);
    fputs("\n"
          "Examples:\n"
          "  memplan plan examples/resnet50.json -o plan.json\n"
          "  memplan verify examples/resnet50.json plan.json\n"
          "  memplan offsets trace.csv -o placed.csv && memplan verify placed.csv\n"
          "\n"
          "Sizes accept units: B, KiB, MiB, GiB, TiB (1024) and KB, MB, GB, TB\n"
          "(1000), any case, e.g. --align 4KiB.\n"
          "\n",
          f);
    cli_print_exit_codes(f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("memplan %s\n", mp_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strcmp(argv[2], commands[i].name) == 0) {
                static char help_opt[] = "--help";
                char *help_argv[] = {argv[2], help_opt, NULL};
                return commands[i].run(2, help_argv);
            }
        cmd = argv[2];
    } else {
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strcmp(cmd, commands[i].name) == 0)
                return commands[i].run(argc - 1, argv + 1);
    }
    if (cmd[0] == '-')
        cli_error("unknown option '%s'", cmd);
    else
        cli_error("unknown command '%s'", cmd);
    list_commands(stderr);
    fputs("Run 'memplan --help' for usage.\n", stderr);
    return CLI_EXIT_USAGE;
}
