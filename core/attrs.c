/* Reading node attributes back (issue 9): the getters a runtime or a
 * compiler needs to execute a node it got from a loaded graph. */
#include "ir.h"

static mp_status find_attr(const mp_graph *g, uint32_t node, const char *name,
                           mp__attr_type want, const mp__attr **out)
{
    if (!g || !name || !out)
        return MP_ERR_INVALID_ARG;
    if (node >= g->n_nodes)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "node %u does not exist",
                      node);
    const mp__node *n = &g->nodes[node];
    const mp__attr *a = mp__node_attr(n, name);
    if (!a)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND,
                      "node '%s' has no attribute '%s'", n->name, name);
    /* an integer may be read as a float, a single value as a list of one */
    bool ok = a->type == want || (want == MP__ATTR_FLOAT && a->type == MP__ATTR_INT);
    if (!ok)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "node '%s': attribute '%s' has another type", n->name,
                      name);
    *out = a;
    return MP_OK;
}

mp_status mp_graph_get_attr_int(const mp_graph *g, uint32_t node,
                                const char *name, int64_t *v)
{
    const mp__attr *a = NULL;
    mp_status st = find_attr(g, node, name, MP__ATTR_INT, &a);
    if (!st && v)
        *v = a->v.i;
    return st;
}

mp_status mp_graph_get_attr_float(const mp_graph *g, uint32_t node,
                                  const char *name, double *v)
{
    const mp__attr *a = NULL;
    mp_status st = find_attr(g, node, name, MP__ATTR_FLOAT, &a);
    if (!st && v)
        *v = a->type == MP__ATTR_INT ? (double)a->v.i : a->v.f;
    return st;
}

mp_status mp_graph_get_attr_string(const mp_graph *g, uint32_t node,
                                   const char *name, const char **v)
{
    const mp__attr *a = NULL;
    mp_status st = find_attr(g, node, name, MP__ATTR_STRING, &a);
    if (!st && v)
        *v = a->v.s;
    return st;
}

mp_status mp_graph_get_attr_ints(const mp_graph *g, uint32_t node,
                                 const char *name, const int64_t **v,
                                 uint32_t *n)
{
    const mp__attr *a = NULL;
    mp_status st = find_attr(g, node, name, MP__ATTR_INTS, &a);
    if (!st) {
        if (v)
            *v = a->v.ints;
        if (n)
            *n = a->n;
    }
    return st;
}

mp_status mp_graph_get_attr_floats(const mp_graph *g, uint32_t node,
                                   const char *name, const double **v,
                                   uint32_t *n)
{
    const mp__attr *a = NULL;
    mp_status st = find_attr(g, node, name, MP__ATTR_FLOATS, &a);
    if (!st) {
        if (v)
            *v = a->v.floats;
        if (n)
            *n = a->n;
    }
    return st;
}
