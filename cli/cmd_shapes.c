/* cmd_shapes.c - memplan shapes: every tensor's dtype, shape, bytes and
 * kind as memplan inferred them (ONNX models with --dim bindings). */
#include "cli.h"

#include <string.h>

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

int cli_cmd_shapes(cli_args *a)
{
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    mp_graph *g = NULL;
    int rc = cli_load_graph(ctx, a, &g);
    if (rc) {
        mp_ctx_destroy(ctx);
        return rc;
    }
    size_t n = mp_graph_num_tensors(g);
    json_t *arr = a->json ? json_array() : NULL;
    rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        mp_tensor_info t;
        if (mp_graph_tensor_info(g, (uint32_t)i, &t) != MP_OK)
            continue;
        const char *dt = mp_dtype_name(t.dtype);
        char shp[512];
        shape_text(&t, shp, sizeof shp);
        if (!a->json) {
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
    if (!rc && a->json) {
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
