/* cmd_shapes.c - memplan shapes: every tensor's dtype, shape, bytes and
 * kind as memplan inferred them (ONNX models with --dim bindings). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* What a tensor's shape depends on that is not known: dims (bit k: dim
 * k) and bytes that differ between two loads with two placeholders for
 * the unbound symbols, or a rank that differs. */
typedef struct unknown_t {
    uint32_t dims;
    int bytes, rank;
} unknown_t;

static void shape_text(const mp_tensor_info *t, const unknown_t *u,
                       char *buf, size_t cap)
{
    size_t len = 0;
    if (t->rank < 0 || u->rank) {
        snprintf(buf, cap, "?");
        return;
    }
    len += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->rank && len < cap; i++) {
        if (t->dims[i] < 0 || (u->dims >> i & 1))
            len += (size_t)snprintf(buf + len, cap - len, "%s?", i ? ", " : "");
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld",
                                    i ? ", " : "", (long long)t->dims[i]);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

static void print_text(const mp_tensor_info *t, const unknown_t *u,
                       const char *dt)
{
    char shp[512], name[1024], bytes[32];
    shape_text(t, u, shp, sizeof shp);
    if (u->bytes)
        snprintf(bytes, sizeof bytes, "?");
    else
        snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)t->bytes);
    printf("%-40s %-10s %-24s %12s  %s\n",
           cli_safe(t->name, name, sizeof name), dt ? dt : "?", shp, bytes,
           mp_kind_name(t->kind));
}

static void tensor_json(mp__jw *w, const mp_tensor_info *t,
                        const unknown_t *u, const char *dt)
{
    cli_json_object(w, NULL);
    cli_json_str(w, "name", t->name);
    cli_json_str(w, "dtype", dt ? dt : "undefined");
    mp__jw_key(w, "shape");
    if (t->rank >= 0 && !u->rank) {
        mp__jw_array(w, true);
        for (int k = 0; k < t->rank; k++) {
            if (u->dims >> k & 1)
                mp__jw_null(w);
            else
                mp__jw_i64(w, t->dims[k]);
        }
        mp__jw_end(w);
    } else {
        mp__jw_null(w);
    }
    if (u->bytes)
        cli_json_null(w, "bytes");
    else
        cli_json_u64(w, "bytes", t->bytes);
    cli_json_str(w, "kind", mp_kind_name(t->kind));
    mp__jw_end(w);
}

/* Placeholders for unbound symbols: large enough for a network's
 * downsampling (a kernel larger than its input fails inference), apart
 * enough that a dim divided by a stride of up to 64 still differs (3:4),
 * small enough that no size overflows. */
#define PLACEHOLDER_A 960
#define PLACEHOLDER_B 1280

/* An ONNX model whose symbolic dims are not all bound: loaded with each
 * placeholder; *g the first, *u (one per tensor, calloc'ed) what differs
 * in the second. 0, or -1 when either load fails or the two graphs are
 * not the same tensors (nothing printed). */
static int load_unbound(mp_ctx *ctx, const cli_args *a, mp_graph **g,
                        unknown_t **u)
{
    mp_graph *h = NULL;
    if (cli_load_graph_placeholder(ctx, a, PLACEHOLDER_A, g) != MP_OK ||
        cli_load_graph_placeholder(ctx, a, PLACEHOLDER_B, &h) != MP_OK ||
        mp_graph_num_tensors(*g) != mp_graph_num_tensors(h)) {
        mp_graph_destroy(*g);
        mp_graph_destroy(h);
        *g = NULL;
        return -1;
    }
    size_t n = mp_graph_num_tensors(*g);
    *u = calloc(n ? n : 1, sizeof **u);
    for (size_t i = 0; *u && i < n; i++) {
        mp_tensor_info x, y;
        if (mp_graph_tensor_info(*g, (uint32_t)i, &x) != MP_OK ||
            mp_graph_tensor_info(h, (uint32_t)i, &y) != MP_OK)
            continue;
        unknown_t *v = &(*u)[i];
        v->rank = x.rank != y.rank;
        for (int k = 0; !v->rank && k < x.rank; k++)
            if (x.dims[k] != y.dims[k])
                v->dims |= 1u << k;
        v->bytes = x.bytes != y.bytes || v->rank;
    }
    mp_graph_destroy(h);
    if (!*u) {
        mp_graph_destroy(*g);
        *g = NULL;
        return -1;
    }
    return 0;
}

/* The model as --dim and the rest bind it; an ONNX model with symbols
 * left unbound is loaded with placeholders (*u: what depends on them,
 * NULL when everything is bound), with a note saying so. 0 or an exit
 * code (printed). */
static int load(mp_ctx *ctx, const cli_args *a, mp_graph **g, unknown_t **u)
{
    *u = NULL;
    if (cli_is_json(a->pos[0]))
        return cli_load_graph(ctx, a, g);
    mp_status st = cli_load_graph_placeholder(ctx, a, 0, g);
    if (st == MP_OK)
        return 0;
    if (st == MP_ERR_SHAPE) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", mp_ctx_message(ctx));
        if (strstr(msg, "not bound") && load_unbound(ctx, a, g, u) == 0) {
            char safe[1200];
            fprintf(stderr, "memplan: note: %s; the dims and sizes that "
                    "depend on them are shown as ?\n",
                    cli_safe(msg, safe, sizeof safe));
            return 0;
        }
    }
    return cli_load_graph(ctx, a, g); /* the error, printed */
}

int cli_cmd_shapes(cli_args *a)
{
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    mp_graph *g = NULL;
    unknown_t *u = NULL, none = {0, 0, 0};
    int rc = load(ctx, a, &g, &u);
    if (rc) {
        mp_ctx_destroy(ctx);
        return rc;
    }
    cli_rewrites rw;
    if ((rc = cli_rewrites_get(a, g, &rw)) != 0) {
        cli_rewrites_free(&rw);
        free(u);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        return rc;
    }
    size_t n = mp_graph_num_tensors(g), unknown = mp_graph_unknown_shapes(g);
    /* with placeholders: also the tensors that depend on them */
    for (size_t i = 0; u && i < n; i++) {
        mp_tensor_info t;
        int part = 0;
        if (mp_graph_tensor_info(g, (uint32_t)i, &t) != MP_OK)
            continue;
        for (int k = 0; k < t.rank; k++)
            part |= t.dims[k] < 0;
        unknown += !(t.rank < 0 || part) && (u[i].rank || u[i].dims);
    }
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
        const unknown_t *ut = u ? &u[i] : &none;
        if (a->json)
            tensor_json(&w, &t, ut, dt);
        else
            print_text(&t, ut, dt);
    }
    if (a->json) {
        mp__jw_end(&w);
        rc = cli_json_print(&w);
    } else {
        printf("unknown_shapes: %zu\n", unknown);
        cli_rewrites_print(&rw, a->show_rewrites);
    }
    cli_rewrites_free(&rw);
    free(u);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return rc;
}
