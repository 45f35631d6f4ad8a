/* cmd_convert.c - memplan convert: read a model (ONNX or JSON graph) and
 * write memplan's JSON graph, with every inferred shape filled in, or an
 * ONNX model when the output file ends in .onnx. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cli_cmd_convert(int argc, char **argv);

enum { OPT_OUT, OPT_DIM, OPT_NO_DECLARED };

static const cli_opt convert_opts[] = {
    {"output", 'o', 1, OPT_OUT},
    {"dim", 0, 1, OPT_DIM},
    {"no-declared-shapes", 0, 0, OPT_NO_DECLARED},
    {NULL, 0, 0, 0},
};

#define MAX_DIMS 64

typedef struct convert_args {
    const char *out;
    mp_dim_binding dims[MAX_DIMS];
    char *dim_names[MAX_DIMS];
    size_t n_dims;
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
    case OPT_DIM: {
        const char *eq = strchr(value, '=');
        uint64_t v;
        if (!eq || eq == value) {
            cli_error("--%s expects NAME=VALUE, got '%s'", name, value);
            return CLI_EXIT_USAGE;
        }
        if (a->n_dims == MAX_DIMS) {
            cli_error("at most %d --%s options", MAX_DIMS, name);
            return CLI_EXIT_USAGE;
        }
        int rc = cli_parse_u64(name, eq + 1, &v);
        if (rc)
            return rc;
        if (v > (uint64_t)INT64_MAX) {
            cli_error("--%s: value too large", name);
            return CLI_EXIT_USAGE;
        }
        char *s = malloc((size_t)(eq - value) + 1);
        if (!s)
            return CLI_EXIT_INTERNAL;
        memcpy(s, value, (size_t)(eq - value));
        s[eq - value] = '\0';
        a->dim_names[a->n_dims] = s;
        a->dims[a->n_dims].name = s;
        a->dims[a->n_dims++].value = (int64_t)v;
        return 0;
    }
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
          "                            repeatable\n"
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
        o.dims = a.dims;
        o.n_dims = a.n_dims;
        o.declared_shapes = !a.no_declared;
        st = mp_graph_load_onnx(ctx, pos[0], &o, &g);
    } else {
        st = mp_graph_load(ctx, pos[0], &g);
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
    for (size_t i = 0; i < a.n_dims; i++)
        free(a.dim_names[i]);
    return rc;
}
