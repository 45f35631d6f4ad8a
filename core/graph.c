/* Graph IR: the builder (tensors, nodes, outputs, costs) and the
 * accessors. Finalize (consumers, topological order, sizes through the op
 * registry) is one layer up, core/ops/finalize.c; attributes are in
 * core/attrs.c, a tensor's size and value in core/tensor.c. */
#include "ir.h"
#include "strval.h"

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
    if (n->attr_index) {
        mp__name_map_free(ctx, n->attr_index);
        mp__dealloc(ctx, n->attr_index);
    }
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
    mp__dealloc(ctx, g->rebatches);
    mp__dealloc(ctx, g->name);
    mp__dealloc(ctx, g->cost_unit);
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

mp_status mp_graph_set_cost_unit(mp_graph *g, const char *unit)
{
    if (!g)
        return MP_ERR_INVALID_ARG;
    char *s = NULL;
    if (unit && strcmp(unit, "s") != 0 && strcmp(unit, "seconds") != 0 &&
        !(s = mp__strdup(g->ctx, unit)))
        return MP_ERR_NOMEM;
    mp__dealloc(g->ctx, g->cost_unit);
    g->cost_unit = s;
    return MP_OK;
}

const char *mp_graph_cost_unit(const mp_graph *g)
{
    return g && g->cost_unit ? g->cost_unit : "s";
}

mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                              uint32_t *id_out)
{
    MP__CHECK_OPEN(g);
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
    t->view_off = 0;
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
    MP__CHECK_OPEN(g);
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
    /* each output: one producer, not twice in the list (an output seen
     * is marked in its producer field, MARK, until the node is added or
     * refused: linear in the outputs) */
    const uint32_t MARK = MP_NONE - 1;
    mp_status st = MP_OK;
    uint32_t marked = 0;
    for (; marked < d->n_outputs && !st; marked++) {
        uint32_t t = d->outputs ? d->outputs[marked] : MP_NONE;
        if (t >= g->n_tensors)
            st = mp__err(ctx, MP_ERR_NOT_FOUND,
                        "node '%s': output %u is not a tensor id", d->name,
                        (unsigned)marked);
        else if (g->tensors[t].producer == MARK)
            st = mp__err(ctx, MP_ERR_DUPLICATE,
                        "node '%s': tensor '%s' listed twice as output",
                        d->name, g->tensors[t].name);
        else if (g->tensors[t].producer != MP_NONE)
            st = mp__err(ctx, MP_ERR_DUPLICATE,
                        "tensor '%s' is produced by two nodes: '%s' and '%s'",
                        g->tensors[t].name,
                        g->nodes[g->tensors[t].producer].name, d->name);
        else
            g->tensors[t].producer = MARK;
    }
    /* the marks are cleared here; a node added sets the producers below */
    for (uint32_t i = 0; i < marked && d->outputs; i++) {
        uint32_t t = d->outputs[i];
        if (t < g->n_tensors && g->tensors[t].producer == MARK)
            g->tensors[t].producer = MP_NONE;
    }
    if (st)
        return st;
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
    for (uint32_t i = 0; i < n->n_out; i++)
        g->tensors[n->outputs[i]].producer = id;
    g->n_nodes++;
    if (id_out)
        *id_out = id;
    return MP_OK;
}

mp_status mp_graph_mark_output(mp_graph *g, uint32_t tensor)
{
    MP__CHECK_OPEN(g);
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
    out->view = MP_VIEW_NONE;
    out->view_offset = 0;
    if (t->alias_of != MP_NONE) {
        static const mp_view_kind kinds[] = {
            [MP__NVIEW_NONE] = MP_VIEW_SAME, [MP__NVIEW_T] = MP_VIEW_TRANSPOSED,
            [MP__NVIEW_B] = MP_VIEW_BROADCAST, [MP__NVIEW_R] = MP_VIEW_RANGE,
            [MP__NVIEW_P] = MP_VIEW_PERMUTED};
        unsigned k = mp__tensor_view_kind(g, id);
        out->view = k < sizeof kinds / sizeof kinds[0] ? kinds[k]
                                                       : MP_VIEW_SAME;
        out->view_offset = t->view_off - g->tensors[t->alias_of].view_off;
    }
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

/* ---- re-batching rewrites ----------------------------------------------- */
static const char *const rebatch_names[MP_REBATCH_KIND_COUNT] = {
    "input", "mask", "reshape", "folded", "expand", "resize"};

const char *mp_rebatch_kind_name(mp_rebatch_kind k)
{
    return (unsigned)k < MP_REBATCH_KIND_COUNT ? rebatch_names[k] : NULL;
}

mp_status mp__graph_note_rebatch(mp_graph *g, int kind, uint32_t node,
                                 uint32_t tensor, const int64_t *old_v,
                                 const int64_t *new_v, int rank)
{
    if (rank < 0 || rank > MP_MAX_RANK)
        return MP_OK;
    mp__rebatch_rec *r = NULL;
    for (size_t i = 0; i < g->n_rebatches && !r; i++)
        if (g->rebatches[i].node == node && g->rebatches[i].tensor == tensor)
            r = &g->rebatches[i];
    if (!r) {
        if (mp__grow(g->ctx, (void **)&g->rebatches, sizeof *g->rebatches,
                     g->n_rebatches + 1, &g->cap_rebatches))
            return MP_ERR_NOMEM;
        r = &g->rebatches[g->n_rebatches++];
    }
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->node = node;
    r->tensor = tensor;
    r->rank = rank;
    r->axis = 0;
    if (rank) {
        memcpy(r->old_v, old_v, (size_t)rank * sizeof *old_v);
        memcpy(r->new_v, new_v, (size_t)rank * sizeof *new_v);
    }
    while (r->axis < rank - 1 && r->old_v[r->axis] == r->new_v[r->axis])
        r->axis++;
    return MP_OK;
}

uint32_t mp_graph_num_rebatches(const mp_graph *g)
{
    return g ? (uint32_t)g->n_rebatches : 0;
}

mp_status mp_graph_rebatch_info(const mp_graph *g, uint32_t i,
                                mp_rebatch_info *out)
{
    if (!g || !out)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_rebatch_info: NULL argument")
                 : MP_ERR_INVALID_ARG;
    if (i >= g->n_rebatches)
        return mp__err(g->ctx, MP_ERR_NOT_FOUND, "re-batching rewrite %u: "
                      "the graph has %zu", i, g->n_rebatches);
    const mp__rebatch_rec *r = &g->rebatches[i];
    *out = (mp_rebatch_info){(mp_rebatch_kind)r->kind, r->node, r->tensor,
                             r->axis, r->rank, r->old_v, r->new_v,
                             g->rebatch_from, g->rebatch_to};
    return MP_OK;
}

mp_status mp__graph_copy_tensor(mp_graph *ng, const mp__tensor *t,
                                const char *name, uint32_t *id)
{
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name ? name : t->name;
    d.dtype = (mp_dtype)t->dtype;
    d.kind = (mp_tensor_kind)t->declared_kind;
    d.rank = t->rank;
    d.dims = t->rank > 0 ? t->dims : NULL;
    if (t->flags & MP__TF_BYTES_GIVEN || t->rank < 0)
        d.bytes = t->flags & MP__TF_BYTES_GIVEN ? t->bytes : 0;
    mp_status st = mp_graph_add_tensor(ng, &d, id);
    /* values: initializers, and what the loader put on a node's output
     * (a Constant's); folding recomputes the others the same way */
    if (!st && t->value)
        st = mp__tensor_set_value(ng->ctx, &ng->tensors[*id], t->value,
                                  t->n_value);
    if (!st)
        ng->tensors[*id].flags |= t->flags & MP__TF_NO_FOLD;
    return st;
}
