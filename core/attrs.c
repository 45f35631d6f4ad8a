/* Node attributes: the builder's setters, and reading them back (the
 * getters a runtime or a compiler needs to execute a node it got from a
 * loaded graph). */
#include "ir.h"

#include <string.h>

static const char *attr_name_of(const void *owner, uint32_t idx)
{
    return ((const mp__node *)owner)->attrs[idx].name;
}

static uint32_t attr_find(const mp__node *n, const char *name)
{
    if (n->attr_index)
        return mp__name_map_find(n->attr_index, n, attr_name_of, name);
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return i;
    return MP_NONE;
}

/* Returns a cleared slot at n->attrs[n->n_attrs] with its name set; the
 * setter fills it and calls attr_commit. A name already set is an error. */
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
    if (attr_find(n, name) != MP_NONE)
        return mp__err(g->ctx, MP_ERR_DUPLICATE,
                      "node '%s': attribute '%s' given twice", n->name,
                      name);
    if (n->n_attrs >= UINT32_MAX / 2)
        return mp__err(g->ctx, MP_ERR_OVERFLOW,
                      "node '%s': too many attributes", n->name);
    if (n->n_attrs == n->cap_attrs) {
        uint32_t nc = n->cap_attrs ? n->cap_attrs * 2 : 4;
        mp__attr *na = mp__realloc_array(g->ctx, n->attrs, nc, sizeof *na);
        if (!na)
            return MP_ERR_NOMEM;
        n->attrs = na;
        n->cap_attrs = nc;
    }
    mp__attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = mp__strdup(g->ctx, name);
    if (!a->name)
        return MP_ERR_NOMEM;
    *out = a;
    return MP_OK;
}

static void attr_clear(mp_ctx *ctx, mp__attr *a)
{
    mp__dealloc(ctx, a->name);
    if (a->type == MP__ATTR_STRING)
        mp__dealloc(ctx, a->v.s);
    else if (a->type == MP__ATTR_INTS)
        mp__dealloc(ctx, a->v.ints);
    else if (a->type == MP__ATTR_FLOATS)
        mp__dealloc(ctx, a->v.floats);
    memset(a, 0, sizeof *a);
}

/* The filled slot becomes the node's last attribute; past
 * MP__ATTR_INDEX_MIN attributes the name index holds it too (built once,
 * then one insertion per attribute). On failure the slot is freed. */
static mp_status attr_commit(mp_graph *g, uint32_t node)
{
    mp__node *n = &g->nodes[node];
    uint32_t k = n->n_attrs;
    mp_status st = MP_OK;
    if (!n->attr_index && k + 1 > MP__ATTR_INDEX_MIN) {
        n->attr_index = mp__calloc(g->ctx, 1, sizeof *n->attr_index);
        for (uint32_t i = 0; n->attr_index && i < k && !st; i++)
            st = mp__name_map_insert(g->ctx, n->attr_index, n, attr_name_of,
                                    n->attrs[i].name, i, NULL);
        if (!n->attr_index || st) {
            if (n->attr_index)
                mp__name_map_free(g->ctx, n->attr_index);
            mp__dealloc(g->ctx, n->attr_index);
            n->attr_index = NULL;
            st = MP_ERR_NOMEM;
        }
    }
    if (!st && n->attr_index)
        st = mp__name_map_insert(g->ctx, n->attr_index, n, attr_name_of,
                                n->attrs[k].name, k, NULL);
    if (st) {
        attr_clear(g->ctx, &n->attrs[k]);
        return st;
    }
    n->n_attrs++;
    return MP_OK;
}

mp_status mp_graph_set_attr_int(mp_graph *g, uint32_t node, const char *name,
                                int64_t v)
{
    mp__attr *a = NULL;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->type = MP__ATTR_INT;
    a->v.i = v;
    return attr_commit(g, node);
}

mp_status mp_graph_set_attr_float(mp_graph *g, uint32_t node,
                                  const char *name, double v)
{
    mp__attr *a = NULL;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->type = MP__ATTR_FLOAT;
    a->v.f = v;
    return attr_commit(g, node);
}

mp_status mp_graph_set_attr_string(mp_graph *g, uint32_t node,
                                   const char *name, const char *v)
{
    if (!v)
        return MP_ERR_INVALID_ARG;
    mp__attr *a = NULL;
    mp_status st = attr_slot(g, node, name, &a);
    if (st)
        return st;
    a->v.s = mp__strdup(g->ctx, v);
    if (!a->v.s) {
        mp__dealloc(g->ctx, a->name);
        return MP_ERR_NOMEM;
    }
    a->type = MP__ATTR_STRING;
    return attr_commit(g, node);
}

static mp_status set_array(mp_graph *g, uint32_t node, const char *name,
                           const void *v, uint32_t n, size_t elt,
                           mp__attr_type type)
{
    if (n && !v)
        return MP_ERR_INVALID_ARG;
    mp__attr *a = NULL;
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
    return attr_commit(g, node);
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
    uint32_t i = attr_find(n, name);
    return i == MP_NONE ? NULL : &n->attrs[i];
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

mp_status mp__node_copy_attrs(mp_graph *g, const mp__node *n, uint32_t id)
{
    mp_status st = MP_OK;
    for (uint32_t a = 0; a < n->n_attrs && !st; a++) {
        const mp__attr *at = &n->attrs[a];
        switch (at->type) {
        case MP__ATTR_INT:
            st = mp_graph_set_attr_int(g, id, at->name, at->v.i);
            break;
        case MP__ATTR_FLOAT:
            st = mp_graph_set_attr_float(g, id, at->name, at->v.f);
            break;
        case MP__ATTR_STRING:
            st = mp_graph_set_attr_string(g, id, at->name, at->v.s);
            break;
        case MP__ATTR_INTS:
            st = mp_graph_set_attr_ints(g, id, at->name, at->v.ints, at->n);
            break;
        case MP__ATTR_FLOATS:
            st = mp_graph_set_attr_floats(g, id, at->name, at->v.floats,
                                          at->n);
            break;
        }
    }
    return st;
}
