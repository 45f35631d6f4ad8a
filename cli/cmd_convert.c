/* cmd_convert.c - memplan convert: read a model (ONNX or JSON graph) and
 * write memplan's JSON graph, with every inferred shape filled in, or an
 * ONNX model when the output file ends in .onnx. */
#include "cli.h"

#include <string.h>

int cli_cmd_convert(int argc, char **argv);

enum { OPT_OUT, OPT_DIM, OPT_SHAPE, OPT_NO_DECLARED, OPT_BATCH };

static const cli_opt convert_opts[] = {
    {"output", 'o', 1, OPT_OUT},
    {"dim", 0, 1, OPT_DIM},
    {"shape", 0, 1, OPT_SHAPE},
    {"no-declared-shapes", 0, 0, OPT_NO_DECLARED},
    {"batch", 0, 1, OPT_BATCH},
    {NULL, 0, 0, 0},
};

typedef struct convert_args {
    const char *out;
    cli_dims dims;
    int no_declared;
} convert_args;

static int on_opt(void *state, int id, const char *name, const char *value)
{
    convert_args *a = state;
    switch (id) {
    case OPT_OUT:
        a->out = value;
        return 0;
    case OPT_NO_DECLARED:
        a->no_declared = 1;
        return 0;
    case OPT_DIM:
        return cli_parse_dim(&a->dims, name, value);
    case OPT_SHAPE:
        return cli_parse_shape(&a->dims, value);
    case OPT_BATCH:
        return cli_parse_batch(&a->dims, name, value);
    default:
        return CLI_EXIT_INTERNAL;
    }
}

static int ends_with(const char *s, const char *sfx)
{
    size_t ls = strlen(s), lx = strlen(sfx);
    return ls >= lx && strcmp(s + ls - lx, sfx) == 0;
}

static void help(void)
{
    fputs("Usage: memplan convert MODEL [-o OUT.json|OUT.onnx] "
          "[--dim NAME=VALUE]...\n"
          "\n"
          "Reads a model (ONNX, or a JSON graph) and writes memplan's JSON\n"
          "graph with the shapes memplan inferred (to stdout without -o),\n"
          "or, when the output ends in .onnx, an ONNX model (weights keep\n"
          "dims and dtype; their data is written only where memplan holds\n"
          "it: see docs/onnx.md).\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE         write the graph there (.onnx: ONNX)\n"
          "      --dim NAME=VALUE      bind a symbolic dim (ONNX dim_param),\n"
          "                            or INPUT:AXIS=VALUE; repeatable\n"
          "      --shape INPUT=D0xD1x...  the whole shape of a graph input\n"
          "      --batch N             ONNX: re-batch a fixed-batch model to N\n"
          "                            (as plan --batch)\n"
          "      --no-declared-shapes  ONNX: ignore value_info and declared\n"
          "                            output shapes (infer everything)\n"
          "  -h, --help                show this help\n"
          "\n"
          "Example:\n"
          "  memplan convert model.onnx --dim N=1 -o graph.json\n"
          "  memplan convert graph.json -o model.onnx\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

int cli_cmd_convert(int argc, char **argv)
{
    convert_args a;
    memset(&a, 0, sizeof a);
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos = 0, want_help = 0;
    int rc = cli_parse("convert", argc, argv, convert_opts, on_opt, &a, pos,
                       &n_pos, &want_help);
    if (!rc && want_help) {
        help();
        goto out;
    }
    if (!rc && n_pos != 1) {
        cli_error("convert: expected one MODEL argument (see memplan convert "
                  "--help)");
        rc = CLI_EXIT_USAGE;
    }
    if (rc)
        goto out;
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    mp_graph *g = NULL;
    mp_status st;
    if (ends_with(pos[0], ".onnx")) {
        mp_onnx_options o;
        mp_onnx_options_init(&o);
        o.dims = a.dims.b;
        o.n_dims = a.dims.n;
        o.declared_shapes = !a.no_declared;
        o.batch = a.dims.batch;
        st = mp_graph_load_onnx(ctx, pos[0], &o, &g);
    } else {
        st = cli_load_graph(ctx, pos[0], &a.dims, 0, &g);
    }
    if (!st) {
        if (a.out && ends_with(a.out, ".onnx")) {
            st = mp_graph_save_onnx(g, a.out);
        } else if (a.out) {
            st = mp_graph_save_json(g, a.out);
        } else {
            char *s = NULL;
            st = mp_graph_to_json_string(g, &s);
            if (!st) {
                fputs(s, stdout);
                mp_free(ctx, s);
            }
        }
    }
    rc = st ? cli_fail(ctx, st, a.out && g ? a.out : pos[0]) : CLI_EXIT_OK;
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
out:
    return rc;
}
