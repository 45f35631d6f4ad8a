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

static void print_text(const mp_tensor_info *t, const char *dt)
{
    char shp[512], name[1024];
    shape_text(t, shp, sizeof shp);
    printf("%-40s %-10s %-24s %12llu  %s\n",
           cli_safe(t->name, name, sizeof name), dt ? dt : "?", shp,
           (unsigned long long)t->bytes, mp_kind_name(t->kind));
}

static void tensor_json(mp__jw *w, const mp_tensor_info *t, const char *dt)
{
    cli_json_object(w, NULL);
    cli_json_str(w, "name", t->name);
    cli_json_str(w, "dtype", dt ? dt : "undefined");
    mp__jw_key(w, "shape");
    if (t->rank >= 0) {
        mp__jw_array(w, true);
        for (int k = 0; k < t->rank; k++)
            mp__jw_i64(w, t->dims[k]);
        mp__jw_end(w);
    } else {
        mp__jw_null(w);
    }
    cli_json_u64(w, "bytes", t->bytes);
    cli_json_str(w, "kind", mp_kind_name(t->kind));
    mp__jw_end(w);
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
    cli_rewrites rw;
    if ((rc = cli_rewrites_get(a, g, &rw)) != 0) {
        cli_rewrites_free(&rw);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        return rc;
    }
    size_t n = mp_graph_num_tensors(g), unknown = mp_graph_unknown_shapes(g);
    mp__jw w;
    if (a->json) {
        cli_json_begin(&w, ctx);
        cli_json_str(&w, "graph", mp_graph_name(g));
        cli_json_int(&w, "unknown_shapes", (int64_t)unknown);
        cli_rewrites_json(&rw, &w);
        mp__jw_key(&w, "tensors");
        mp__jw_array(&w, true);
    }
    for (size_t i = 0; i < n; i++) {
        mp_tensor_info t;
        if (mp_graph_tensor_info(g, (uint32_t)i, &t) != MP_OK)
            continue;
        const char *dt = mp_dtype_name(t.dtype);
        if (a->json)
            tensor_json(&w, &t, dt);
        else
            print_text(&t, dt);
    }
    if (a->json) {
        mp__jw_end(&w);
        rc = cli_json_print(&w);
    } else {
        printf("unknown_shapes: %zu\n", unknown);
        cli_rewrites_print(&rw, a->show_rewrites);
    }
    cli_rewrites_free(&rw);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
