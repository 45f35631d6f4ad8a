/* model.c - loading the model of a command with its options (--dim,
 * --shape, --batch, --no-declared-shapes). */
#include "cli.h"

#include <stdlib.h>
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

/* The ONNX options of --dim, --shape, --batch, --no-declared-shapes. */
static void onnx_options(const cli_args *a, mp_onnx_options *o)
{
    mp_onnx_options_init(o);
    o->dims = a->dims.b;
    o->n_dims = a->dims.n;
    o->batch = a->dims.batch;
    o->declared_shapes = !a->no_declared;
}

mp_status cli_load_graph_placeholder(mp_ctx *ctx, const cli_args *a,
                                     int64_t placeholder, mp_graph **g)
{
    mp_onnx_options o;
    onnx_options(a, &o);
    o.unbound_dims = placeholder;
    return mp_graph_load_opts(ctx, a->pos[0], &o, g);
}

int cli_load_graph(mp_ctx *ctx, const cli_args *a, mp_graph **g)
{
    const char *path = a->pos[0];
    mp_onnx_options o;
    onnx_options(a, &o);
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

static char *dup_or_null(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int cli_rewrites_get(const cli_args *a, const mp_graph *g, cli_rewrites *rw)
{
    memset(rw, 0, sizeof *rw);
    if (!a->dims.batch || cli_is_json(a->pos[0]))
        return 0;
    rw->on = 1;
    rw->to = a->dims.batch;
    uint32_t n = mp_graph_num_rebatches(g);
    rw->r = calloc(n ? n : 1, sizeof *rw->r);
    if (!rw->r) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    for (uint32_t i = 0; i < n; i++) {
        mp_rebatch_info ri;
        if (mp_graph_rebatch_info(g, i, &ri) != MP_OK)
            continue;
        cli_rewrite *x = &rw->r[rw->n++];
        mp_node_info ni;
        mp_tensor_info ti;
        rw->from = ri.from;
        x->kind = mp_rebatch_kind_name(ri.kind);
        if (ri.node != MP_NONE && mp_graph_node_info(g, ri.node, &ni) == MP_OK) {
            x->node = dup_or_null(ni.name);
            x->op = dup_or_null(ni.op);
        }
        if (ri.tensor != MP_NONE &&
            mp_graph_tensor_info(g, ri.tensor, &ti) == MP_OK)
            x->tensor = dup_or_null(ti.name);
        x->axis = ri.axis;
        x->rank = ri.rank;
        memcpy(x->old_v, ri.old_value, (size_t)ri.rank * sizeof *x->old_v);
        memcpy(x->new_v, ri.new_value, (size_t)ri.rank * sizeof *x->new_v);
        if ((ri.node != MP_NONE && !x->node) ||
            (ri.tensor != MP_NONE && !x->tensor)) {
            cli_error("out of memory");
            return CLI_EXIT_INTERNAL;
        }
    }
    return 0;
}

void cli_rewrites_free(cli_rewrites *rw)
{
    for (uint32_t i = 0; rw->r && i < rw->n; i++) {
        free(rw->r[i].node);
        free(rw->r[i].op);
        free(rw->r[i].tensor);
    }
    free(rw->r);
    memset(rw, 0, sizeof *rw);
}

static void print_dims(const int64_t *v, int n)
{
    putchar('[');
    for (int i = 0; i < n; i++)
        printf("%s%lld", i ? ", " : "", (long long)v[i]);
    putchar(']');
}

void cli_rewrites_print(const cli_rewrites *rw, int all)
{
    if (!rw->on)
        return;
    uint32_t c[MP_REBATCH_KIND_COUNT] = {0};
    for (uint32_t i = 0; i < rw->n; i++)
        for (int k = 0; k < MP_REBATCH_KIND_COUNT; k++)
            c[k] += strcmp(rw->r[i].kind, mp_rebatch_kind_name(k)) == 0;
    printf("rebatch      %u rewrite%s", rw->n, rw->n == 1 ? "" : "s");
    if (rw->n) {
        printf(" from batch %lld to %lld (", (long long)rw->from,
               (long long)rw->to);
        const char *sep = "";
        for (int k = 0; k < MP_REBATCH_KIND_COUNT; k++)
            if (c[k]) {
                printf("%s%u %s", sep, c[k], mp_rebatch_kind_name(k));
                sep = ", ";
            }
        printf(")%s", all ? ":" : "; --show-rewrites or --json lists each");
    } else {
        printf(" (batch %lld as exported, or nothing holds the batch)",
               (long long)rw->to);
    }
    putchar('\n');
    for (uint32_t i = 0; all && i < rw->n; i++) {
        const cli_rewrite *x = &rw->r[i];
        char b1[512], b2[512], b3[64];
        printf("  %-8s ", x->kind);
        if (x->node)
            printf("node '%s' (%s) ", cli_safe(x->node, b1, sizeof b1),
                   cli_safe(x->op, b3, sizeof b3));
        if (x->tensor)
            printf("%s'%s' ", x->node ? "constant " : "",
                   cli_safe(x->tensor, b2, sizeof b2));
        else if (x->node)
            printf("attribute ");
        print_dims(x->old_v, x->rank);
        printf(" -> ");
        print_dims(x->new_v, x->rank);
        printf(" (axis %d)\n", x->axis);
    }
}

static void dims_json(mp__jw *w, const char *key, const int64_t *v, int n)
{
    mp__jw_key(w, key);
    mp__jw_array(w, false);
    for (int i = 0; i < n; i++)
        mp__jw_i64(w, v[i]);
    mp__jw_end(w);
}

void cli_rewrites_json(const cli_rewrites *rw, mp__jw *w)
{
    if (!rw->on)
        return;
    cli_json_object(w, "rebatch");
    if (rw->n)
        cli_json_int(w, "from", rw->from);
    else
        cli_json_null(w, "from");
    cli_json_int(w, "to", rw->to);
    mp__jw_key(w, "rewrites");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < rw->n; i++) {
        const cli_rewrite *x = &rw->r[i];
        cli_json_object(w, NULL);
        cli_json_str(w, "kind", x->kind);
        if (x->node) {
            cli_json_str(w, "node", x->node);
            cli_json_str(w, "op", x->op);
        } else {
            cli_json_null(w, "node");
        }
        if (x->tensor)
            cli_json_str(w, "tensor", x->tensor);
        else
            cli_json_null(w, "tensor");
        cli_json_int(w, "axis", x->axis);
        dims_json(w, "old", x->old_v, x->rank);
        dims_json(w, "new", x->new_v, x->rank);
        mp__jw_end(w);
    }
    mp__jw_end(w);
    mp__jw_end(w);
}
