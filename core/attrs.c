/* Node attributes: the builder's setters, and reading them back (the
 * getters a runtime or a compiler needs to execute a node it got from a
 * loaded graph). */
#include "ir.h"

#include <string.h>

/* Returns the attribute slot for name (replacing an existing one). */
static mp_status attr_slot(mp_graph *g, uint32_t node, const char *name,
                           mp__attr **out)
{
    MP__CHECK_OPEN(g);
    if (node >= g->n_nodes)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "no node %u", (unsigned)node);
    if (!name || !name[0])
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "node '%s': attribute without a name",
                      g->nodes[node].name);
    mp__node *n = &g->nodes[node];
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return mp__err(g->ctx, MP_ERR_DUPLICATE,
                          "node '%s': attribute '%s' given twice", n->name,
                          name);
    mp__attr *na = mp__realloc_array(g->ctx, n->attrs, n->n_attrs + 1u,
                                   sizeof *na);
    if (!na)
        return MP_ERR_NOMEM;
    n->attrs = na;
    mp__attr *a = &na[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = mp__strdup(g->ctx, name);
    if (!a->name)
        return MP_ERR_NOMEM;
    *out = a;
    return MP_OK;
}

mp_status mp_graph_set_attr_int(mp_graph *g, uint32_t node, const char *name,
                                int64_t v)
{
    mp__attr *a;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->type = MP__ATTR_INT;
    a->v.i = v;
    g->nodes[node].n_attrs++;
    return MP_OK;
}

mp_status mp_graph_set_attr_float(mp_graph *g, uint32_t node,
                                  const char *name, double v)
{
    mp__attr *a;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->type = MP__ATTR_FLOAT;
    a->v.f = v;
    g->nodes[node].n_attrs++;
    return MP_OK;
}

mp_status mp_graph_set_attr_string(mp_graph *g, uint32_t node,
                                   const char *name, const char *v)
{
    if (!v)
        return MP_ERR_INVALID_ARG;
    mp__attr *a;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->v.s = mp__strdup(g->ctx, v);
    if (!a->v.s) {
        mp__dealloc(g->ctx, a->name);
        return MP_ERR_NOMEM;
    }
    a->type = MP__ATTR_STRING;
    g->nodes[node].n_attrs++;
    return MP_OK;
}

static mp_status set_array(mp_graph *g, uint32_t node, const char *name,
                           const void *v, uint32_t n, size_t elt,
                           mp__attr_type type)
{
    if (n && !v)
        return MP_ERR_INVALID_ARG;
    mp__attr *a;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    void *copy = mp__alloc(g->ctx, n ? (size_t)n * elt : 1);
    if (!copy) {
        mp__dealloc(g->ctx, a->name);
        return MP_ERR_NOMEM;
    }
    if (n)
        memcpy(copy, v, (size_t)n * elt);
    a->type = type;
    a->n = n;
    if (type == MP__ATTR_INTS)
        a->v.ints = copy;
    else
        a->v.floats = copy;
    g->nodes[node].n_attrs++;
    return MP_OK;
}

mp_status mp_graph_set_attr_ints(mp_graph *g, uint32_t node, const char *name,
                                 const int64_t *v, uint32_t n)
{
    return set_array(g, node, name, v, n, sizeof *v, MP__ATTR_INTS);
}

mp_status mp_graph_set_attr_floats(mp_graph *g, uint32_t node,
                                   const char *name, const double *v,
                                   uint32_t n)
{
    return set_array(g, node, name, v, n, sizeof *v, MP__ATTR_FLOATS);
}

const mp__attr *mp__node_attr(const mp__node *n, const char *name)
{
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

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
