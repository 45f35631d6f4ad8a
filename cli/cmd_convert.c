/* cmd_convert.c - memplan convert: read a model (ONNX or JSON graph) and
 * write memplan's JSON graph, with every inferred shape filled in, or an
 * ONNX model when the output file ends in .onnx. */
#include "cli.h"

#include <string.h>

static int ends_with(const char *s, const char *sfx)
{
    size_t ls = strlen(s), lx = strlen(sfx);
    return ls >= lx && strcmp(s + ls - lx, sfx) == 0;
}

int cli_cmd_convert(cli_args *a)
{
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    const char *in = a->pos[0], *out = a->output;
    mp_graph *g = NULL;
    mp_status st = MP_OK;
    int rc = cli_load_graph(ctx, a, &g);
    if (!rc) {
        if (out && ends_with(out, ".onnx")) {
            st = mp_graph_save_onnx(g, out);
        } else if (out) {
            st = mp_graph_save_json(g, out);
        } else {
            char *s = NULL;
            st = mp_graph_to_json_string(g, &s);
            if (!st) {
                fputs(s, stdout);
                mp_free(ctx, s);
            }
        }
    }
    if (st)
        rc = cli_fail(ctx, st, out && g ? out : in);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
