/* Graph IR: the builder, finalize (validation, sizes, views, folding,
 * consumers, topological order) and accessors. */
#include "ops.h"
#include "strval.h"

#include <stdio.h>
#include <string.h>

static const char *tensor_name_of(const void *owner, uint32_t i)
{
    return ((const mp_graph *)owner)->tensors[i].name;
}

static const char *node_name_of(const void *owner, uint32_t i)
{
    return ((const mp_graph *)owner)->nodes[i].name;
}

/* Copies s into the graph's string chunks. */
static char *graph_strdup(mp_graph *g, const char *s)
{
    size_t n = strlen(s) + 1;
    mp__str_chunk *c = g->strings;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 65536 - sizeof *c;
        mp__str_chunk *nc = mp__alloc(g->ctx, sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (c && n > 16384) { /* a long string: keep the current chunk on top */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            g->strings = nc;
        }
        c = nc;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    c->used += n;
    return p;
}

mp_status mp_graph_create(mp_ctx *ctx, mp_graph **out)
{
    if (!ctx || !out)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "mp_graph_create: NULL argument");
    *out = NULL;
    mp_graph *g = mp__calloc(ctx, 1, sizeof *g);
    if (!g)
        return MP_ERR_NOMEM;
    g->ctx = ctx;
    *out = g;
    return MP_OK;
}

static void free_node(mp_ctx *ctx, mp__node *n)
{
    mp__dealloc(ctx, n->inputs);
    mp__dealloc(ctx, n->outputs);
    for (uint32_t a = 0; a < n->n_attrs; a++) {
        mp__attr *at = &n->attrs[a];
        mp__dealloc(ctx, at->name);
        if (at->type == MP__ATTR_STRING)
            mp__dealloc(ctx, at->v.s);
        else if (at->type == MP__ATTR_INTS)
            mp__dealloc(ctx, at->v.ints);
        else if (at->type == MP__ATTR_FLOATS)
            mp__dealloc(ctx, at->v.floats);
    }
    mp__dealloc(ctx, n->attrs);
}

void mp_graph_destroy(mp_graph *g)
{
    if (!g)
        return;
    mp_ctx *ctx = g->ctx;
    for (size_t i = 0; i < g->n_tensors; i++) {
        mp__dealloc(ctx, g->tensors[i].dims);
        mp__dealloc(ctx, g->tensors[i].seq);
    }
    mp__strtab_free(g);
    while (g->strings) {
        mp__str_chunk *next = g->strings->next;
        mp__dealloc(ctx, g->strings);
        g->strings = next;
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        free_node(ctx, &g->nodes[i]);
    for (size_t i = 0; i < g->n_subgraphs; i++)
        mp_graph_destroy(g->subgraphs[i]);
    mp__dealloc(ctx, g->subgraphs);
    mp__dealloc(ctx, g->sub_inputs);
    mp__dealloc(ctx, g->sub_outputs);
    mp__dealloc(ctx, g->tensors);
    mp__dealloc(ctx, g->nodes);
    mp__name_map_free(ctx, &g->tensor_map);
    mp__name_map_free(ctx, &g->node_map);
    mp__dealloc(ctx, g->cons);
    mp__dealloc(ctx, g->topo);
    mp__dealloc(ctx, g->name);
    mp__dealloc(ctx, g);
}

mp_ctx *mp_graph_ctx(const mp_graph *g) { return g ? g->ctx : NULL; }

mp_status mp_graph_set_name(mp_graph *g, const char *name)
{
    if (!g || !name)
        return MP_ERR_INVALID_ARG;
    char *s = mp__strdup(g->ctx, name);
    if (!s)
        return MP_ERR_NOMEM;
    mp__dealloc(g->ctx, g->name);
    g->name = s;
    return MP_OK;
}

const char *mp_graph_name(const mp_graph *g)
{
    return g && g->name ? g->name : "";
}

bool mp__kind_persistent(uint8_t kind)
{
    return kind == MP_KIND_WEIGHT || kind == MP_KIND_CONSTANT ||
           kind == MP_KIND_OPTIMIZER_STATE;
}

bool mp__tensor_in_arena(const mp__tensor *t)
{
    return t->alias_of == MP_NONE && !mp__kind_persistent(t->kind) &&
           t->bytes > 0;
}

mp_status mp__tensor_bytes_from_shape(mp_ctx *ctx, const mp__tensor *t,
                                     uint64_t *bytes)
{
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    if (t->rank < 0 || bits == 0)
        return mp__err(ctx, MP_ERR_SHAPE, "tensor '%s': %s unknown", t->name,
                      t->rank < 0 ? "shape" : "element size");
    uint64_t count = 1;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return mp__err(ctx, MP_ERR_SHAPE, "tensor '%s': dim %d unknown",
                          t->name, (int)i);
        if (!mp__mul_u64(count, (uint64_t)t->dims[i], &count))
            return mp__err(ctx, MP_ERR_OVERFLOW,
                          "tensor '%s': element count overflows 64 bits",
                          t->name);
    }
    uint64_t b;
    if (!mp__mul_u64(count, bits, &b) || !mp__add_u64(b, 7, &b))
        return mp__err(ctx, MP_ERR_OVERFLOW,
                      "tensor '%s': byte size overflows 64 bits", t->name);
    *bytes = b / 8;
    return MP_OK;
}

#define CHECK_OPEN(g)                                                        \
    do {                                                                     \
        if (!(g))                                                            \
            return MP_ERR_INVALID_ARG;                                       \
        if ((g)->finalized)                                                  \
            return mp__err((g)->ctx, MP_ERR_INVALID_ARG,                      \
                          "graph is finalized and cannot be changed");      \
    } while (0)

mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                              uint32_t *id_out)
{
    CHECK_OPEN(g);
    mp_ctx *ctx = g->ctx;
    if (!d || !d->name || !d->name[0])
        return mp__err(ctx, MP_ERR_INVALID_ARG, "tensor without a name");
    if (d->rank > MP_MAX_RANK || (d->rank > 0 && !d->dims))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "tensor '%s': rank %d not supported (at most %d)",
                      d->name, d->rank, MP_MAX_RANK);
    if ((unsigned)d->kind > MP_KIND_OUTPUT)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "tensor '%s': bad kind %d",
                      d->name, (int)d->kind);
    if (mp_dtype_name(d->dtype) == NULL)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "tensor '%s': bad dtype %d",
                      d->name, (int)d->dtype);
    if (g->n_tensors >= UINT32_MAX - 1)
        return mp__err(ctx, MP_ERR_OVERFLOW, "too many tensors");
    for (int i = 0; i < d->rank; i++)
        if (d->dims[i] < -1)
            return mp__err(ctx, MP_ERR_BAD_DIM,
                          "tensor '%s': dim %d is negative (%lld)", d->name, i,
                          (long long)d->dims[i]);
    if (mp__grow(ctx, (void **)&g->tensors, sizeof *g->tensors,
                g->n_tensors + 1, &g->cap_tensors))
        return MP_ERR_NOMEM;
    uint32_t id = (uint32_t)g->n_tensors;
    mp__tensor *t = &g->tensors[id];
    memset(t, 0, sizeof *t);
    t->name = graph_strdup(g, d->name);
    if (!t->name)
        return MP_ERR_NOMEM;
    t->rank = d->rank < 0 ? -1 : d->rank;
    if (t->rank > 0) {
        t->dims = mp__alloc(ctx, (size_t)t->rank * sizeof *t->dims);
        if (!t->dims)
            return MP_ERR_NOMEM;
        memcpy(t->dims, d->dims, (size_t)t->rank * sizeof *t->dims);
    }
    t->dtype = (uint8_t)d->dtype;
    t->kind = t->declared_kind = (uint8_t)d->kind;
    t->producer = MP_NONE;
    t->alias_of = MP_NONE;
    t->root = id;
    if (d->bytes) {
        t->bytes = d->bytes;
        t->flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    }
    if (d->kind == MP_KIND_OUTPUT)
        t->flags |= MP__TF_OUTPUT;
    uint32_t prev;
    mp_status st = mp__name_map_insert(ctx, &g->tensor_map, g, tensor_name_of,
                                      t->name, id, &prev);
    if (st) {
        if (prev != MP_NONE)
            mp__err(ctx, MP_ERR_DUPLICATE, "duplicate tensor name '%s'",
                   d->name);
        mp__dealloc(ctx, t->dims);
        return st;
    }
    g->n_tensors++;
    if (id_out)
        *id_out = id;
    return MP_OK;
}

static mp_status copy_ids(mp_graph *g, const char *node, const char *what,
                          const uint32_t *src, uint32_t n, bool allow_none,
                          uint32_t **dst)
{
    *dst = NULL;
    if (n == 0)
        return MP_OK;
    if (!src)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG, "node '%s': NULL %s", node,
                      what);
    for (uint32_t i = 0; i < n; i++) {
        if (src[i] == MP_NONE && allow_none)
            continue;
        if (src[i] >= g->n_tensors)
            return mp__err(g->ctx, MP_ERR_NOT_FOUND,
                          "node '%s': %s %u is not a tensor id", node, what,
                          (unsigned)i);
    }
    *dst = mp__alloc(g->ctx, (size_t)n * sizeof **dst);
    if (!*dst)
        return MP_ERR_NOMEM;
    memcpy(*dst, src, (size_t)n * sizeof **dst);
    return MP_OK;
}

mp_status mp_graph_add_node(mp_graph *g, const mp_node_desc *d,
                            uint32_t *id_out)
{
    CHECK_OPEN(g);
    mp_ctx *ctx = g->ctx;
    if (!d || !d->name || !d->name[0])
        return mp__err(ctx, MP_ERR_INVALID_ARG, "node without a name");
    if (!d->op || !d->op[0])
        return mp__err(ctx, MP_ERR_INVALID_ARG, "node '%s': no op type",
                      d->name);
    if ((unsigned)d->phase > MP_PHASE_OPTIMIZER)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "node '%s': bad phase",
                      d->name);
    if (g->n_nodes >= UINT32_MAX - 1)
        return mp__err(ctx, MP_ERR_OVERFLOW, "too many nodes");
    if (mp__name_map_find(&g->node_map, g, node_name_of, d->name) != MP_NONE)
        return mp__err(ctx, MP_ERR_DUPLICATE, "duplicate node name '%s'",
                      d->name);
    /* each output: one producer, not twice in the list */
    for (uint32_t i = 0; i < d->n_outputs; i++) {
        uint32_t t = d->outputs ? d->outputs[i] : MP_NONE;
        if (t >= g->n_tensors)
            return mp__err(ctx, MP_ERR_NOT_FOUND,
                          "node '%s': output %u is not a tensor id", d->name,
                          (unsigned)i);
        if (g->tensors[t].producer != MP_NONE)
            return mp__err(ctx, MP_ERR_DUPLICATE,
                          "tensor '%s' is produced by two nodes: '%s' and '%s'",
                          g->tensors[t].name,
                          g->nodes[g->tensors[t].producer].name, d->name);
        for (uint32_t j = 0; j < i; j++)
            if (d->outputs[j] == t)
                return mp__err(ctx, MP_ERR_DUPLICATE,
                              "node '%s': tensor '%s' listed twice as output",
                              d->name, g->tensors[t].name);
    }
    if (mp__grow(ctx, (void **)&g->nodes, sizeof *g->nodes, g->n_nodes + 1,
                &g->cap_nodes))
        return MP_ERR_NOMEM;
    uint32_t id = (uint32_t)g->n_nodes;
    mp__node *n = &g->nodes[id];
    memset(n, 0, sizeof *n);
    n->flops = n->bytes_moved = n->seconds = -1.0;
    n->phase = (uint8_t)d->phase;
    n->n_in = d->n_inputs;
    n->n_out = d->n_outputs;
    mp_status st = MP_OK;
    if (!(n->name = graph_strdup(g, d->name)) ||
        !(n->op = graph_strdup(g, d->op)) ||
        !(n->domain = graph_strdup(g, d->domain ? d->domain : "")))
        st = MP_ERR_NOMEM;
    if (!st)
        st = copy_ids(g, d->name, "input", d->inputs, d->n_inputs, true,
                      &n->inputs);
    if (!st)
        st = copy_ids(g, d->name, "output", d->outputs, d->n_outputs, false,
                      &n->outputs);
    if (!st)
        st = mp__name_map_insert(ctx, &g->node_map, g, node_name_of, n->name,
                                id, NULL);
    if (st) {
        free_node(ctx, n);
        return st;
    }
    n->def = mp__op_lookup(n->op, n->domain);
    for (uint32_t i = 0; i < n->n_out; i++)
        g->tensors[n->outputs[i]].producer = id;
    g->n_nodes++;
    if (id_out)
        *id_out = id;
    return MP_OK;
}

mp_status mp_graph_mark_output(mp_graph *g, uint32_t tensor)
{
    CHECK_OPEN(g);
    if (tensor >= g->n_tensors)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "output %u is not a tensor id",
                      (unsigned)tensor);
    g->tensors[tensor].flags |= MP__TF_OUTPUT;
    return MP_OK;
}

mp_status mp_graph_set_node_cost(mp_graph *g, uint32_t node, double flops,
                                 double bytes, double seconds)
{
    if (!g || node >= g->n_nodes)
        return g ? mp__err(g->ctx, MP_ERR_NOT_FOUND, "no node %u",
                          (unsigned)node)
                 : MP_ERR_INVALID_ARG;
    g->nodes[node].flops = flops;
    g->nodes[node].bytes_moved = bytes;
    g->nodes[node].seconds = seconds;
    return MP_OK;
}

/* Returns the attribute slot for name (replacing an existing one). */
static mp_status attr_slot(mp_graph *g, uint32_t node, const char *name,
                           mp__attr **out)
{
    CHECK_OPEN(g);
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

/* ---- finalize ----------------------------------------------------------------- */


static mp_status report_cycle(mp_graph *g, const uint32_t *indeg)
{
    /* walk producers backwards among unprocessed nodes until one repeats */
    uint32_t start = MP_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (indeg[i]) {
            start = i;
            break;
        }
    uint32_t cur = start;
    for (size_t steps = 0; steps <= g->n_nodes; steps++) {
        const mp__node *n = &g->nodes[cur];
        uint32_t next = MP_NONE;
        for (uint32_t k = 0; k < n->n_in && next == MP_NONE; k++) {
            uint32_t t = n->inputs[k];
            if (t == MP_NONE)
                continue;
            uint32_t p = g->tensors[t].producer;
            if (p != MP_NONE && indeg[p])
                next = p;
        }
        if (next == MP_NONE)
            break;
        cur = next;
    }
    /* cur is on a cycle (after n steps we are inside it) */
    char buf[512];
    size_t len = 0;
    uint32_t v = cur;
    for (int k = 0; k < 8; k++) {
        int w = snprintf(buf + len, sizeof buf - len, "%s'%s'",
                         k ? " <- " : "", g->nodes[v].name);
        if (w < 0 || (size_t)w >= sizeof buf - len)
            break;
        len += (size_t)w;
        const mp__node *n = &g->nodes[v];
        uint32_t next = MP_NONE;
        for (uint32_t i = 0; i < n->n_in && next == MP_NONE; i++) {
            uint32_t t = n->inputs[i];
            if (t != MP_NONE && g->tensors[t].producer != MP_NONE &&
                indeg[g->tensors[t].producer])
                next = g->tensors[t].producer;
        }
        if (next == MP_NONE || next == cur)
            break;
        v = next;
    }
    return mp__err(g->ctx, MP_ERR_CYCLE, "graph has a cycle through node %s",
                  buf);
}

static mp_status build_consumers_and_order(mp_graph *g)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    size_t total = 0;
    for (uint32_t i = 0; i < nn; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].inputs[k] != MP_NONE)
                total++;
    g->cons = mp__alloc(ctx, (total ? total : 1) * sizeof *g->cons);
    g->topo = mp__alloc(ctx, (nn ? nn : 1) * sizeof *g->topo);
    uint32_t *indeg = mp__calloc(ctx, nn ? nn : 1, sizeof *indeg);
    uint32_t *heap = mp__alloc(ctx, (nn ? nn : 1) * sizeof *heap);
    if (!g->cons || !g->topo || !indeg || !heap) {
        mp__dealloc(ctx, indeg);
        mp__dealloc(ctx, heap);
        return MP_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < nt; t++)
        g->tensors[t].n_cons = 0;
    for (uint32_t i = 0; i < nn; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_in; k++) {
            uint32_t t = g->nodes[i].inputs[k];
            if (t != MP_NONE)
                g->tensors[t].n_cons++;
        }
    uint32_t off = 0;
    for (uint32_t t = 0; t < nt; t++) {
        g->tensors[t].cons_begin = off;
        off += g->tensors[t].n_cons;
        g->tensors[t].n_cons = 0;
    }
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t t = n->inputs[k];
            if (t == MP_NONE)
                continue;
            mp__tensor *tt = &g->tensors[t];
            /* a node reading the same tensor twice counts once */
            if (tt->n_cons && g->cons[tt->cons_begin + tt->n_cons - 1] == i)
                continue;
            g->cons[tt->cons_begin + tt->n_cons++] = i;
            if (tt->producer != MP_NONE)
                indeg[i]++;
        }
    }
    uint32_t hn = 0, done = 0;
    for (uint32_t i = 0; i < nn; i++)
        if (!indeg[i])
            mp__heap_push(heap, &hn, i);
    while (hn) {
        uint32_t v = mp__heap_pop(heap, &hn);
        g->topo[done++] = v;
        const mp__node *n = &g->nodes[v];
        for (uint32_t k = 0; k < n->n_out; k++) {
            const mp__tensor *t = &g->tensors[n->outputs[k]];
            for (uint32_t c = 0; c < t->n_cons; c++) {
                uint32_t u = g->cons[t->cons_begin + c];
                if (--indeg[u] == 0)
                    mp__heap_push(heap, &hn, u);
            }
        }
    }
    mp_status st = MP_OK;
    if (done != nn)
        st = report_cycle(g, indeg);
    mp__dealloc(ctx, indeg);
    mp__dealloc(ctx, heap);
    return st;
}

static mp_status check_sources(mp_graph *g)
{
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE) {
            if (tt->kind == MP_KIND_ACTIVATION || tt->kind == MP_KIND_GRADIENT ||
                tt->kind == MP_KIND_OUTPUT) {
                if (tt->n_cons == 0 && !(tt->flags & MP__TF_OUTPUT))
                    continue; /* declared but unused: ignored */
                return mp__err(g->ctx, MP_ERR_NO_PRODUCER,
                              "tensor '%s' (%s) has no producer%s%s%s: "
                              "declare it as an input, weight or constant",
                              tt->name, mp_kind_name((mp_tensor_kind)tt->kind),
                              tt->n_cons ? "; it is used by node '" : "",
                              tt->n_cons ? g->nodes[g->cons[tt->cons_begin]].name
                                         : "",
                              tt->n_cons ? "'" : "");
            }
        } else if (tt->kind == MP_KIND_INPUT) {
            return mp__err(g->ctx, MP_ERR_GRAPH,
                          "tensor '%s' is a graph input but node '%s' "
                          "produces it",
                          tt->name, g->nodes[tt->producer].name);
        }
    }
    return MP_OK;
}

/* Sizes from shapes, then the op registry for outputs still unknown (in
 * topological order), views and constant folding. */
static mp_status infer_sizes(mp_graph *g)
{
    mp_ctx *ctx = g->ctx;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        mp__tensor *tt = &g->tensors[t];
        bool shape_known = tt->rank >= 0 && mp_dtype_bits((mp_dtype)tt->dtype);
        for (int32_t d = 0; shape_known && d < tt->rank; d++)
            if (tt->dims[d] < 0)
                shape_known = false;
        if (!shape_known)
            continue;
        uint64_t b;
        mp_status st = mp__tensor_bytes_from_shape(ctx, tt, &b);
        if (st)
            return st;
        if ((tt->flags & MP__TF_BYTES_GIVEN) && b != tt->bytes)
            return mp__err(ctx, MP_ERR_SHAPE,
                          "tensor '%s': bytes %llu disagree with its dtype and "
                          "shape (%llu bytes)",
                          tt->name, (unsigned long long)tt->bytes,
                          (unsigned long long)b);
        tt->bytes = b;
        tt->flags |= MP__TF_SIZE_KNOWN;
    }
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE && !(tt->flags & MP__TF_SIZE_KNOWN) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            return mp__err(ctx, MP_ERR_SHAPE,
                          "tensor '%s' (%s): size unknown: give its dtype and "
                          "shape, or bytes",
                          tt->name, mp_kind_name((mp_tensor_kind)tt->kind));
    }
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t v = g->topo[k];
        mp__node *n = &g->nodes[v];
        mp_status st = n->def->infer(g, v);
        if (st == MP_ERR_SHAPE && n->def == mp__op_generic())
            ctx->status = st = MP_ERR_UNKNOWN_OP; /* the message names op,
                                                     domain and node */
        if (st)
            return st;
        /* views: output 0 shares input 0's memory */
        if ((n->def->flags & MP__OPF_VIEW) && n->n_in && n->n_out &&
            n->inputs[0] != MP_NONE) {
            mp__tensor *in = &g->tensors[n->inputs[0]];
            mp__tensor *out = &g->tensors[n->outputs[0]];
            if (out->bytes != in->bytes)
                return mp__err(ctx, MP_ERR_SHAPE,
                              "node '%s' (%s): view output '%s' has %llu bytes "
                              "but its input '%s' has %llu",
                              n->name, n->op, out->name,
                              (unsigned long long)out->bytes, in->name,
                              (unsigned long long)in->bytes);
            out->alias_of = n->inputs[0];
            out->root = in->root;
        }
        /* folding: every input persistent (or a constant source) */
        bool any = false, all_const = true;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t t = n->inputs[i];
            if (t == MP_NONE)
                continue;
            any = true;
            if (!mp__kind_persistent(g->tensors[t].kind))
                all_const = false;
        }
        if (any ? all_const : (n->def->flags & MP__OPF_CONSTANT) != 0) {
            for (uint32_t o = 0; o < n->n_out; o++) {
                mp__tensor *out = &g->tensors[n->outputs[o]];
                if (!mp__kind_persistent(out->kind)) {
                    out->kind = MP_KIND_CONSTANT;
                    out->flags |= MP__TF_FOLDED;
                }
            }
        }
    }
    return MP_OK;
}

mp_status mp_graph_finalize(mp_graph *g)
{
    CHECK_OPEN(g);
    mp_status st = build_consumers_and_order(g);
    if (!st)
        st = check_sources(g);
    if (!st)
        st = infer_sizes(g);
    if (st) {
        mp__dealloc(g->ctx, g->cons);
        mp__dealloc(g->ctx, g->topo);
        g->cons = g->topo = NULL;
        for (uint32_t t = 0; t < g->n_tensors; t++) {
            mp__tensor *tt = &g->tensors[t];
            tt->kind = tt->declared_kind;
            tt->flags &= (uint8_t)~MP__TF_FOLDED;
            tt->alias_of = MP_NONE;
            tt->root = t;
        }
        return st;
    }
    g->finalized = true;
    return MP_OK;
}

/* ---- accessors --------------------------------------------------------------------- */
uint32_t mp_graph_num_tensors(const mp_graph *g)
{
    return g ? (uint32_t)g->n_tensors : 0;
}

uint32_t mp_graph_num_nodes(const mp_graph *g)
{
    return g ? (uint32_t)g->n_nodes : 0;
}

mp_status mp_graph_find_tensor(const mp_graph *g, const char *name,
                               uint32_t *id)
{
    if (!g || !name || !id)
        return MP_ERR_INVALID_ARG;
    *id = mp__name_map_find(&g->tensor_map, g, tensor_name_of, name);
    return *id == MP_NONE ? MP_ERR_NOT_FOUND : MP_OK;
}

mp_status mp_graph_find_node(const mp_graph *g, const char *name,
                             uint32_t *id)
{
    if (!g || !name || !id)
        return MP_ERR_INVALID_ARG;
    *id = mp__name_map_find(&g->node_map, g, node_name_of, name);
    return *id == MP_NONE ? MP_ERR_NOT_FOUND : MP_OK;
}

mp_status mp_graph_tensor_info(const mp_graph *g, uint32_t id,
                               mp_tensor_info *out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    if (id >= g->n_tensors)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "no tensor %u", (unsigned)id);
    const mp__tensor *t = &g->tensors[id];
    out->name = t->name;
    out->dtype = (mp_dtype)t->dtype;
    out->rank = t->rank;
    out->dims = t->dims;
    out->bytes = t->bytes;
    out->kind = (mp_tensor_kind)t->kind;
    out->producer = t->producer;
    out->n_consumers = t->n_cons;
    out->alias_of = t->alias_of;
    out->is_output = (t->flags & MP__TF_OUTPUT) != 0;
    out->folded = (t->flags & MP__TF_FOLDED) != 0;
    return MP_OK;
}

mp_status mp_graph_node_info(const mp_graph *g, uint32_t id,
                             mp_node_info *out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    if (id >= g->n_nodes)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "no node %u", (unsigned)id);
    const mp__node *n = &g->nodes[id];
    out->name = n->name;
    out->op = n->op;
    out->domain = n->domain;
    out->n_inputs = n->n_in;
    out->n_outputs = n->n_out;
    out->inputs = n->inputs;
    out->outputs = n->outputs;
    out->phase = (mp_phase)n->phase;
    out->flops = n->flops;
    out->bytes = n->bytes_moved;
    out->seconds = n->seconds;
    return MP_OK;
}
