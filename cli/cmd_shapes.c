/* cmd_shapes.c - memplan shapes: every tensor's dtype, shape, bytes and
 * kind as memplan inferred them (ONNX models with --dim bindings). */
#include "cli.h"

#include <string.h>

enum { OPT_DIM, OPT_JSON, OPT_SHAPE, OPT_BATCH };

static const cli_opt shapes_opts[] = {
    {"dim", 0, 1, OPT_DIM},
    {"json", 0, 0, OPT_JSON},
    {"shape", 0, 1, OPT_SHAPE},
    {"batch", 0, 1, OPT_BATCH},
    {NULL, 0, 0, 0},
};

typedef struct shapes_args {
    cli_dims dims;
    int json;
} shapes_args;

static int on_opt(void *state, int id, const char *name, const char *value)
{
    shapes_args *a = state;
    switch (id) {
    case OPT_DIM: return cli_parse_dim(&a->dims, name, value);
    case OPT_JSON: a->json = 1; return 0;
    case OPT_SHAPE: return cli_parse_shape(&a->dims, value);
    case OPT_BATCH: return cli_parse_batch(&a->dims, name, value);
    default: return CLI_EXIT_INTERNAL;
    }
}

static void help(void)
{
    fputs("Usage: memplan shapes MODEL [--dim NAME=VALUE]... [--json]\n"
          "\n"
          "Loads a graph (ONNX model or JSON graph), infers every shape and\n"
          "prints one line per tensor: name, dtype, shape ('?' for a dim\n"
          "memplan could not resolve), bytes and kind; then the number of\n"
          "tensors whose shape is not fully known (unknown_shapes).\n"
          "\n"
          "Options:\n"
          "      --dim NAME=VALUE  bind an ONNX symbolic dim (repeatable);\n"
          "                        INPUT:AXIS=VALUE binds a dim of a graph\n"
          "                        input (also a fixed one: re-batching)\n"
          "      --shape INPUT=D0xD1x...  the whole shape of a graph input\n"
          "                        (one declared with no shape)\n"
          "      --batch N         re-batch an ONNX model exported at a fixed\n"
          "                        batch: inputs' leading dim and the constant\n"
          "                        Reshape targets / Resize sizes holding it\n"
          "      --json            one JSON object instead of text\n"
          "  -h, --help            show this help\n"
          "\n"
          "Example:\n"
          "  memplan shapes model.onnx --dim batch=8\n"
          "\n",
          stdout);
    cli_print_exit_codes(stdout);
}

static void shape_text(const mp_tensor_info *t, char *buf, size_t cap)
{
    size_t len = 0;
    if (t->rank < 0) {
        snprintf(buf, cap, "?");
        return;
    }
    len += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->rank && len < cap; i++) {
        if (t->dims[i] < 0)
            len += (size_t)snprintf(buf + len, cap - len, "%s?", i ? ", " : "");
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld",
                                    i ? ", " : "", (long long)t->dims[i]);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

int cli_cmd_shapes(int argc, char **argv)
{
    shapes_args a;
    memset(&a, 0, sizeof a);
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos, want_help;
    int rc = cli_parse("shapes", argc, argv, shapes_opts, on_opt, &a, pos,
                       &n_pos, &want_help);
    if (rc)
        return rc;
    if (want_help) {
        help();
        return CLI_EXIT_OK;
    }
    if (n_pos != 1) {
        cli_error("shapes: expected one MODEL argument, got %d (see 'memplan "
                  "shapes --help')", n_pos);
        return CLI_EXIT_USAGE;
    }
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_graph *g = NULL;
    mp_status st = cli_load_graph(ctx, pos[0], &a.dims, 0, &g);
    if (st) {
        rc = cli_fail(ctx, st, pos[0]);
        mp_ctx_destroy(ctx);
        return rc;
    }
    size_t n = mp_graph_num_tensors(g);
    json_t *arr = a.json ? json_array() : NULL;
    rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        mp_tensor_info t;
        if (mp_graph_tensor_info(g, (uint32_t)i, &t) != MP_OK)
            continue;
        const char *dt = mp_dtype_name(t.dtype);
        char shp[512];
        shape_text(&t, shp, sizeof shp);
        if (!a.json) {
            printf("%-40s %-10s %-24s %12llu  %s\n", t.name,
                   dt ? dt : "?", shp, (unsigned long long)t.bytes,
                   mp_kind_name(t.kind));
            continue;
        }
        json_t *e = json_object(), *dims = json_array();
        int bad = !e || !dims || !arr;
        for (int k = 0; !bad && t.rank >= 0 && k < t.rank; k++)
            bad |= json_array_append_new(dims, json_integer(t.dims[k]));
        if (!bad) {
            bad |= cli_json_set(e, "name", cli_json_str(t.name));
            bad |= cli_json_set(e, "dtype", cli_json_str(dt ? dt : "undefined"));
            bad |= cli_json_set(e, "shape", t.rank >= 0 ? dims : json_null());
            if (t.rank < 0)
                json_decref(dims);
            dims = NULL;
            bad |= cli_json_set(e, "bytes", cli_json_u64(t.bytes));
            bad |= cli_json_set(e, "kind", cli_json_str(mp_kind_name(t.kind)));
            bad |= json_array_append_new(arr, e);
            e = NULL;
        }
        json_decref(e);
        json_decref(dims);
        if (bad) {
            cli_error("out of memory");
            rc = CLI_EXIT_INTERNAL;
        }
    }
    size_t unknown = mp_graph_unknown_shapes(g);
    if (!rc && a.json) {
        json_t *o = json_object();
        int bad = !o;
        if (!bad) {
            bad |= cli_json_set(o, "graph", cli_json_str(mp_graph_name(g)));
            bad |= cli_json_set(o, "unknown_shapes",
                                json_integer((json_int_t)unknown));
            bad |= cli_json_set(o, "tensors", arr);
            arr = NULL;
        }
        rc = bad ? (json_decref(o), CLI_EXIT_INTERNAL) : cli_json_print(o);
    } else if (!rc) {
        printf("unknown_shapes: %zu\n", unknown);
    }
    json_decref(arr);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
