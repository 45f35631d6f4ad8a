/* mp_graph_load: reads a file once, detects its format from the content
 * and hands the parsed document to the right frontend. */
#include "json_pos.h"

#include <string.h>

typedef enum { FMT_NONE, FMT_MEMPLAN, FMT_NODELINK } graph_format;

static graph_format detect(json_t *root)
{
    json_t *fmt = json_object_get(root, "format");
    if (fmt && json_is_string(fmt) &&
        strcmp(json_string_value(fmt), "memplan-graph") == 0)
        return FMT_MEMPLAN;
    if (json_object_get(root, "links"))
        return FMT_NODELINK;
    /* networkx >= 3.4 may name the links "edges" */
    if (json_object_get(root, "edges") && json_object_get(root, "directed"))
        return FMT_NODELINK;
    if (json_object_get(root, "tensors") || json_object_get(root, "nodes") ||
        fmt)
        return FMT_MEMPLAN;
    return FMT_NONE;
}

mp_status mp_graph_load(mp_ctx *ctx, const char *path, mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp_err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    char *text;
    size_t len;
    mp_status st = mp_read_file(ctx, path, &text, &len);
    if (st)
        return st;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                       text[i] == '\r'))
        i++;
    if (i < len && text[i] != '{' && text[i] != '[') {
        mp_dealloc(ctx, text);
        return mp_err(ctx, MP_ERR_UNSUPPORTED,
                      "%s: not a graph memplan can read (expected a memplan "
                      "JSON graph or a networkx node-link JSON graph)",
                      path);
    }
    json_t *root;
    st = mp_json_parse(ctx, text, len, path, &root);
    if (!st) {
        switch (detect(root)) {
        case FMT_MEMPLAN:
            st = mp_json_graph_build(ctx, root, text, len, path, out);
            break;
        case FMT_NODELINK:
            st = mp_nodelink_build(ctx, root, text, len, path, out);
            break;
        default:
            st = mp_err(ctx, MP_ERR_UNSUPPORTED,
                        "%s: unrecognised JSON graph: expected a memplan "
                        "graph (\"tensors\"/\"nodes\") or a networkx "
                        "node-link graph (\"nodes\" and \"links\")",
                        path);
        }
        json_decref(root);
    }
    mp_dealloc(ctx, text);
    return st;
}
