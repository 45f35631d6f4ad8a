/* mp_graph_load: reads a file once, detects its format from the content
 * and hands the text to the right frontend; and mp_plan_check_range,
 * which loads a model at several values of its symbolic dims and checks
 * each against a plan (mp_plan_fits, core/sched/plan.c). */
#include "json.h"
#include "sched.h"

#include <stdbool.h>
#include <string.h>

/* The JSON graph formats, told apart by the top-level keys. */
typedef enum jfmt { JFMT_NONE, JFMT_MEMPLAN, JFMT_NODELINK, JFMT_SYNTAX } jfmt;

/* Reads the top-level keys of a JSON text until they decide its format
 * (*f): "tensors", or "format": "memplan-graph", is a memplan graph;
 * "links", or "edges" with "directed", a node-link graph; otherwise
 * "nodes" or "format" a memplan graph. JFMT_SYNTAX when the text is not a
 * JSON object (the graph reader then words the error). */
static mp_status detect(mp_ctx *ctx, const char *text, size_t len, jfmt *fmt)
{
    static const char *const names[] = {"tensors", "format", "links",
                                        "edges", "directed", "nodes"};
    static const mp__jkeys keys = {names, 6, MP__JK_ANY, NULL};
    mp__jr r;
    mp__jobj o;
    mp__jval v;
    int k;
    jfmt f = JFMT_SYNTAX;
    mp__jr_init(&r, ctx, "", text, len, 0);
    mp_status st = mp__jr_doc(&r, &o, &keys);
    while (!st && !(st = mp__jr_next(&r, &o, &k, &v)) &&
           k != MP__JK_END) {
        if (k == 0 || (k == 1 && v.type == MP__JT_STRING &&
                       strcmp(mp__jr_str(&r, v.s), "memplan-graph") == 0)) {
            f = JFMT_MEMPLAN; /* decisive: no need to read further */
            break;
        }
        st = mp__jr_skip(&r, &v);
    }
    if (!st && f == JFMT_SYNTAX)
        f = (o.seen & 4) || (o.seen & 0x18) == 0x18 ? JFMT_NODELINK
            : (o.seen & 0x22)                       ? JFMT_MEMPLAN
                                                    : JFMT_NONE;
    mp__jr_free(&r);
    *fmt = f;
    return st == MP_ERR_NOMEM ? st : MP_OK;
}

mp_status mp_graph_load(mp_ctx *ctx, const char *path, mp_graph **out)
{
    return mp_graph_load_dims(ctx, path, NULL, 0, out);
}

mp_status mp_graph_load_dims(mp_ctx *ctx, const char *path,
                             const mp_dim_binding *dims, size_t n_dims,
                             mp_graph **out)
{
    if (n_dims && !dims)
        return mp_graph_load_opts(ctx, NULL, NULL, out); /* the error */
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    o.dims = dims;
    o.n_dims = n_dims;
    return mp_graph_load_opts(ctx, path, &o, out);
}

mp_status mp_graph_load_opts(mp_ctx *ctx, const char *path,
                             const mp_onnx_options *opt, mp_graph **out)
{
    mp_onnx_options dflt;
    mp_onnx_options_init(&dflt);
    if (!opt)
        opt = &dflt;
    size_t n_dims = opt->n_dims;
    if (!ctx || !path || !out || (n_dims && !opt->dims))
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    char *text;
    size_t len;
    mp_status st = mp__read_file(ctx, path, &text, &len);
    if (st)
        return st;
    /* a UTF-8 byte order mark may stand before JSON */
    size_t i = mp__json_bom(text, len);
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                       text[i] == '\r'))
        i++;
    size_t plen = strlen(path);
    bool onnx_ext = plen >= 5 && strcmp(path + plen - 5, ".onnx") == 0;
    if (onnx_ext || (i < len && text[i] != '{' && text[i] != '[' &&
                     mp_onnx_available())) {
        /* ONNX (frontends/onnx/onnx.c): by extension, or not JSON */
        st = mp_graph_load_onnx_buffer(ctx, text, len, path, opt, out);
        mp__dealloc(ctx, text);
        return st;
    }
    if (n_dims || opt->n_values || opt->batch) {
        mp__dealloc(ctx, text);
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "%s: %s only for ONNX models; this graph has no %s",
                      path,
                      n_dims ? "dim bindings (--dim) are"
                      : opt->n_values ? "input values are"
                                      : "re-batching (--batch) is",
                      n_dims ? "symbolic dims" : "graph input dims to set");
    }
    if (i < len && text[i] != '{' && text[i] != '[') {
        mp__dealloc(ctx, text);
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "%s: not a graph memplan can read (expected a memplan "
                      "JSON graph or a networkx node-link JSON graph)",
                      path);
    }
    jfmt f;
    if ((st = detect(ctx, text, len, &f))) {
        mp__dealloc(ctx, text);
        return st;
    }
    switch (f) {
    case JFMT_NODELINK:
        st = mp__nodelink_read(ctx, text, len, path, out);
        break;
    case JFMT_MEMPLAN:
    case JFMT_SYNTAX: /* the reader names the syntax error */
        st = mp__json_graph_read(ctx, text, len, path, out);
        break;
    default:
        st = mp__err(ctx, MP_ERR_UNSUPPORTED,
                    "%s: unrecognised JSON graph: expected a memplan graph "
                    "(\"tensors\"/\"nodes\") or a networkx node-link graph "
                    "(\"nodes\" and \"links\")",
                    path);
    }
    mp__dealloc(ctx, text);
    return st;
}

/* Shape ranges: the model at each value set must fit the
 * plan made at the upper bounds. */
mp_status mp_plan_check_range(const mp_plan *p, const char *path,
                              const mp_dim_binding *sets, size_t n_dims,
                              size_t n_sets, size_t *failed)
{
    if (failed)
        *failed = n_sets;
    if (!p || !path || (n_sets && n_dims && !sets))
        return MP_ERR_INVALID_ARG;
    for (size_t k = 0; k < n_sets; k++) {
        mp_graph *g = NULL;
        mp_status st = mp_graph_load_dims(p->ctx, path, sets + k * n_dims,
                                          n_dims, &g);
        if (!st)
            st = mp_plan_fits(p, g);
        mp_graph_destroy(g);
        if (st) {
            if (failed)
                *failed = k;
            return st;
        }
    }
    return MP_OK;
}
