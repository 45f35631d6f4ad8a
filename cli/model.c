/* model.c - loading the model of a command with its options (--dim,
 * --shape, --batch, --no-declared-shapes). */
#include "cli.h"

#include <string.h>

int cli_is_json(const char *path)
{
    /* JSON (first character '{' or '[', after a byte order mark), as
     * mp_graph_load tells it */
    size_t len = strlen(path);
    FILE *f = len >= 5 && strcmp(path + len - 5, ".onnx") == 0
                  ? NULL : fopen(path, "rb");
    int c = ' ';
    if (f) {
        /* a UTF-8 byte order mark may stand before the JSON */
        unsigned char bom[3];
        size_t n = fread(bom, 1, 3, f);
        if (n != 3 || bom[0] != 0xEF || bom[1] != 0xBB || bom[2] != 0xBF)
            rewind(f);
    }
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
