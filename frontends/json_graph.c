/* memplan JSON graph format, version 1 (docs/graph-format.md): reader
 * (jansson) and writer (by hand: deterministic, fixed key order, one
 * tensor or node per line). */
#include "json_pos.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "memplan-graph"
#define FORMAT_VERSION 1

/* ---- reader ------------------------------------------------------------------ */
typedef struct loader {
    mp_jloc loc;
    mp_ctx *ctx;
    mp_graph *g;
    /* per tensor: first node that reads it (index into "nodes") and the
     * input slot, for positioned "not produced" errors */
    uint32_t *ref_node, *ref_slot;
    uint8_t *declared;
    size_t cap_ref;
    /* scratch id arrays for a node's inputs and outputs */
    uint32_t *ins, *outs;
    size_t cap_ins, cap_outs;
    int64_t *ints;
    double *floats;
    size_t cap_ints, cap_floats;
} loader;

static mp_status type_err(loader *L, const json_t *v, const char *expected)
{
    char buf[96];
    return mp_jloc_err(&L->loc, MP_ERR_PARSE, false, "expected %s, got %s",
                       expected, mp_json_describe(v, buf, sizeof buf));
}

/* Checks that every key of obj is one of allowed (NULL-terminated) or an
 * "x-" extension. */
static mp_status check_keys(loader *L, json_t *obj, const char *const *allowed,
                            const char *expected)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (mp_json_is_ext_key(key))
            continue;
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0) {
                ok = true;
                break;
            }
        if (!ok) {
            mp_jloc_key(&L->loc, key);
            mp_status st = mp_jloc_err(&L->loc, MP_ERR_PARSE, true,
                                       "unknown key \"%s\" (expected %s, or an "
                                       "\"x-\" extension key)",
                                       key, expected);
            mp_jloc_pop(&L->loc);
            return st;
        }
    }
    return MP_OK;
}

/* Optional string member; *out NULL when absent. */
static mp_status get_string(loader *L, json_t *obj, const char *key,
                            bool required, bool nonempty, const char **out)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "missing required key \"%s\"", key);
        return MP_OK;
    }
    mp_jloc_key(&L->loc, key);
    mp_status st = MP_OK;
    if (!json_is_string(v))
        st = type_err(L, v, "a string");
    else if (nonempty && !json_string_value(v)[0])
        st = mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                         "must not be an empty string");
    else
        *out = json_string_value(v);
    mp_jloc_pop(&L->loc);
    return st;
}

static mp_status get_array(loader *L, json_t *obj, const char *key,
                           bool required, json_t **out)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "missing required key \"%s\" (an array)", key);
        return MP_OK;
    }
    if (!json_is_array(v)) {
        mp_jloc_key(&L->loc, key);
        mp_status st = type_err(L, v, "an array");
        mp_jloc_pop(&L->loc);
        return st;
    }
    *out = v;
    return MP_OK;
}

static mp_status grow_refs(loader *L)
{
    size_t need = L->g->n_tensors;
    if (need <= L->cap_ref)
        return MP_OK;
    size_t ncap = L->cap_ref ? L->cap_ref : 64;
    while (ncap < need)
        ncap *= 2;
    uint32_t *a = mp_realloc_array(L->ctx, L->ref_node, ncap, sizeof *a);
    if (!a)
        return MP_ERR_NOMEM;
    L->ref_node = a;
    uint32_t *b = mp_realloc_array(L->ctx, L->ref_slot, ncap, sizeof *b);
    if (!b)
        return MP_ERR_NOMEM;
    L->ref_slot = b;
    uint8_t *c = mp_realloc_array(L->ctx, L->declared, ncap, 1);
    if (!c)
        return MP_ERR_NOMEM;
    L->declared = c;
    for (size_t i = L->cap_ref; i < ncap; i++) {
        L->ref_node[i] = MP_NONE;
        L->ref_slot[i] = 0;
        L->declared[i] = 0;
    }
    L->cap_ref = ncap;
    return MP_OK;
}

/* An integer >= 0 (or -1 / null when allow_unknown). */
static mp_status get_dim(loader *L, json_t *v, bool allow_unknown,
                         int64_t *out)
{
    if (allow_unknown && json_is_null(v)) {
        *out = -1;
        return MP_OK;
    }
    const char *what = allow_unknown
                           ? "an integer >= 0 (or -1 or null for unknown)"
                           : "an integer >= 0";
    if (!json_is_integer(v))
        return type_err(L, v, what);
    json_int_t x = json_integer_value(v);
    if (x < 0 && !(allow_unknown && x == -1))
        return type_err(L, v, what);
    *out = (int64_t)x;
    return MP_OK;
}

static const char *const tensor_keys[] = {"name", "dtype", "shape", "bytes",
                                          "kind", NULL};

static mp_status load_tensor(loader *L, json_t *t)
{
    mp_graph *g = L->g;
    if (!json_is_object(t))
        return type_err(L, t, "an object (a tensor)");
    const char *name, *dtype_s, *kind_s;
    mp_status st = get_string(L, t, "name", true, true, &name);
    if (st)
        return st;
    snprintf(L->loc.label, sizeof L->loc.label, "\"%s\"", name);
    if ((st = check_keys(L, t, tensor_keys,
                         "name, dtype, shape, bytes or kind")))
        return st;
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.rank = -1;
    d.kind = MP_KIND_ACTIVATION;
    if ((st = get_string(L, t, "dtype", false, false, &dtype_s)))
        return st;
    if (dtype_s && mp_dtype_parse(dtype_s, &d.dtype) != MP_OK) {
        mp_jloc_key(&L->loc, "dtype");
        return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                           "unknown dtype \"%s\" (expected float32, float16, "
                           "bfloat16, int64, ...)", dtype_s);
    }
    if ((st = get_string(L, t, "kind", false, false, &kind_s)))
        return st;
    if (kind_s && mp_kind_parse(kind_s, &d.kind) != MP_OK) {
        mp_jloc_key(&L->loc, "kind");
        return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                           "unknown kind \"%s\" (expected activation, input, "
                           "weight, constant, gradient, optimizer_state or "
                           "output)", kind_s);
    }
    int64_t dims[MP_MAX_RANK];
    json_t *shape = json_object_get(t, "shape");
    bool shape_known = false;
    if (shape) {
        mp_jloc_key(&L->loc, "shape");
        if (!json_is_array(shape))
            return type_err(L, shape, "an array of integers");
        size_t rank = json_array_size(shape);
        if (rank > MP_MAX_RANK)
            return mp_jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                               "rank %zu is more than the %d supported", rank,
                               MP_MAX_RANK);
        shape_known = true;
        for (size_t k = 0; k < rank; k++) {
            mp_jloc_index(&L->loc, k);
            if ((st = get_dim(L, json_array_get(shape, k), true, &dims[k])))
                return st;
            mp_jloc_pop(&L->loc);
            if (dims[k] < 0)
                shape_known = false;
        }
        d.rank = (int)rank;
        d.dims = dims;
        /* element count and byte size must fit in 64 bits */
        unsigned bits = mp_dtype_bits(d.dtype);
        uint64_t count = 1, b = 0;
        bool ok = true;
        for (size_t k = 0; k < rank && ok; k++)
            if (dims[k] >= 0)
                ok = mp_mul_u64(count, (uint64_t)dims[k], &count);
        if (ok && bits)
            ok = mp_mul_u64(count, bits, &b) && mp_add_u64(b, 7, &b);
        if (!ok)
            return mp_jloc_err(&L->loc, MP_ERR_OVERFLOW, false,
                               "the tensor's %s overflows 64 bits",
                               bits ? "size in bytes" : "element count");
        mp_jloc_pop(&L->loc);
        if (!bits)
            shape_known = false;
        else if (shape_known)
            d.bytes = b / 8; /* for the check against "bytes" below */
    }
    json_t *bytes = json_object_get(t, "bytes");
    bool bytes_given = false;
    uint64_t nbytes = 0;
    if (bytes) {
        mp_jloc_key(&L->loc, "bytes");
        int64_t v;
        if ((st = get_dim(L, bytes, false, &v)))
            return st;
        nbytes = (uint64_t)v;
        if (shape_known && d.bytes != nbytes)
            return mp_jloc_err(&L->loc, MP_ERR_SHAPE, false,
                               "%llu bytes disagree with the dtype and shape "
                               "(%llu bytes)",
                               (unsigned long long)nbytes,
                               (unsigned long long)d.bytes);
        mp_jloc_pop(&L->loc);
        bytes_given = true;
    }
    d.bytes = bytes_given ? nbytes : 0;
    uint32_t prev;
    if (mp_graph_find_tensor(g, name, &prev) == MP_OK) {
        mp_jloc_key(&L->loc, "name");
        return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                           "duplicate tensor name \"%s\" (first declared at "
                           "tensors[%u])", name, (unsigned)prev);
    }
    uint32_t id;
    if ((st = mp_graph_add_tensor(g, &d, &id)))
        return st;
    if (bytes_given && nbytes == 0) {
        g->tensors[id].bytes = 0;
        g->tensors[id].flags |= MP_TF_SIZE_KNOWN | MP_TF_BYTES_GIVEN;
    }
    if ((st = grow_refs(L)))
        return st;
    L->declared[id] = 1;
    return MP_OK;
}

/* Tensor id by name, creating an implicit activation when unknown. */
static mp_status tensor_ref(loader *L, const char *name, uint32_t *id)
{
    if (mp_graph_find_tensor(L->g, name, id) == MP_OK)
        return MP_OK;
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.rank = -1;
    d.kind = MP_KIND_ACTIVATION;
    mp_status st = mp_graph_add_tensor(L->g, &d, id);
    if (st)
        return st;
    return grow_refs(L);
}

static mp_status load_attr(loader *L, uint32_t node, const char *name,
                           json_t *v)
{
    mp_graph *g = L->g;
    if (!name[0])
        return mp_jloc_err(&L->loc, MP_ERR_PARSE, true,
                           "an attribute needs a name");
    if (json_is_integer(v))
        return mp_graph_set_attr_int(g, node, name,
                                     (int64_t)json_integer_value(v));
    if (json_is_real(v))
        return mp_graph_set_attr_float(g, node, name, json_real_value(v));
    if (json_is_string(v))
        return mp_graph_set_attr_string(g, node, name, json_string_value(v));
    if (!json_is_array(v))
        return type_err(L, v, "a number, a string or an array of numbers");
    size_t n = json_array_size(v);
    if (n > UINT32_MAX)
        return mp_jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                           "too many values");
    bool any_real = false;
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(v, k);
        if (json_is_real(e))
            any_real = true;
        else if (!json_is_integer(e)) {
            mp_jloc_index(&L->loc, k);
            return type_err(L, e, "a number (attribute arrays hold numbers)");
        }
    }
    if (any_real) {
        if (mp_grow(L->ctx, (void **)&L->floats, sizeof *L->floats, n,
                    &L->cap_floats))
            return MP_ERR_NOMEM;
        for (size_t k = 0; k < n; k++)
            L->floats[k] = json_number_value(json_array_get(v, k));
        return mp_graph_set_attr_floats(g, node, name, L->floats, (uint32_t)n);
    }
    if (mp_grow(L->ctx, (void **)&L->ints, sizeof *L->ints, n, &L->cap_ints))
        return MP_ERR_NOMEM;
    for (size_t k = 0; k < n; k++)
        L->ints[k] = (int64_t)json_integer_value(json_array_get(v, k));
    return mp_graph_set_attr_ints(g, node, name, L->ints, (uint32_t)n);
}

static const char *const node_keys[] = {"name", "op", "domain", "inputs",
                                        "outputs", "attributes", "phase",
                                        "cost", NULL};
static const char *const cost_keys[] = {"flops", "bytes", "seconds", NULL};

static mp_status cost_value(loader *L, json_t *cost, const char *key,
                            double *out)
{
    *out = -1.0;
    json_t *v = json_object_get(cost, key);
    if (!v)
        return MP_OK;
    mp_jloc_key(&L->loc, key);
    if (!json_is_number(v) || json_number_value(v) < 0)
        return type_err(L, v, "a number >= 0");
    *out = json_number_value(v);
    mp_jloc_pop(&L->loc);
    return MP_OK;
}

static mp_status load_node(loader *L, json_t *n, size_t i)
{
    mp_graph *g = L->g;
    if (!json_is_object(n))
        return type_err(L, n, "an object (a node)");
    const char *name, *op, *domain, *phase_s;
    mp_status st = get_string(L, n, "name", true, true, &name);
    if (st)
        return st;
    snprintf(L->loc.label, sizeof L->loc.label, "\"%s\"", name);
    if ((st = check_keys(L, n, node_keys,
                         "name, op, domain, inputs, outputs, attributes, "
                         "phase or cost")))
        return st;
    uint32_t prev;
    if (mp_graph_find_node(g, name, &prev) == MP_OK) {
        mp_jloc_key(&L->loc, "name");
        return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                           "duplicate node name \"%s\" (first at nodes[%u])",
                           name, (unsigned)prev);
    }
    if ((st = get_string(L, n, "op", true, true, &op)) ||
        (st = get_string(L, n, "domain", false, false, &domain)) ||
        (st = get_string(L, n, "phase", false, false, &phase_s)))
        return st;
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.op = op;
    d.domain = domain;
    d.phase = MP_PHASE_FORWARD;
    if (phase_s && mp_phase_parse(phase_s, &d.phase) != MP_OK) {
        mp_jloc_key(&L->loc, "phase");
        return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                           "unknown phase \"%s\" (expected forward, backward "
                           "or optimizer)", phase_s);
    }
    json_t *ins, *outs, *attrs = json_object_get(n, "attributes"),
                        *cost = json_object_get(n, "cost");
    if ((st = get_array(L, n, "inputs", true, &ins)) ||
        (st = get_array(L, n, "outputs", true, &outs)))
        return st;
    if (attrs && !json_is_object(attrs)) {
        mp_jloc_key(&L->loc, "attributes");
        return type_err(L, attrs, "an object");
    }
    if (cost && !json_is_object(cost)) {
        mp_jloc_key(&L->loc, "cost");
        return type_err(L, cost, "an object with flops, bytes, seconds");
    }
    size_t n_in = json_array_size(ins), n_out = json_array_size(outs);
    if (n_in > UINT32_MAX / 2 || n_out > UINT32_MAX / 2)
        return mp_jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                           "too many inputs or outputs");
    if (mp_grow(L->ctx, (void **)&L->ins, sizeof *L->ins, n_in + 1,
                &L->cap_ins) ||
        mp_grow(L->ctx, (void **)&L->outs, sizeof *L->outs, n_out + 1,
                &L->cap_outs))
        return MP_ERR_NOMEM;
    mp_jloc_key(&L->loc, "inputs");
    for (size_t k = 0; k < n_in; k++) {
        json_t *v = json_array_get(ins, k);
        mp_jloc_index(&L->loc, k);
        if (!json_is_string(v))
            return type_err(L, v, "a tensor name (a string; \"\" for an "
                                  "omitted optional input)");
        const char *tn = json_string_value(v);
        if (!tn[0]) {
            L->ins[k] = MP_NONE;
        } else {
            if ((st = tensor_ref(L, tn, &L->ins[k])))
                return st;
            if (L->ref_node[L->ins[k]] == MP_NONE) {
                L->ref_node[L->ins[k]] = (uint32_t)i;
                L->ref_slot[L->ins[k]] = (uint32_t)k;
            }
        }
        mp_jloc_pop(&L->loc);
    }
    mp_jloc_pop(&L->loc);
    mp_jloc_key(&L->loc, "outputs");
    for (size_t k = 0; k < n_out; k++) {
        json_t *v = json_array_get(outs, k);
        mp_jloc_index(&L->loc, k);
        if (!json_is_string(v))
            return type_err(L, v, "a tensor name (a string)");
        const char *tn = json_string_value(v);
        if (!tn[0])
            return mp_jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "an output needs a tensor name");
        uint32_t t;
        if ((st = tensor_ref(L, tn, &t)))
            return st;
        uint32_t p = g->tensors[t].producer;
        if (p != MP_NONE)
            return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                               "tensor \"%s\" is already produced by "
                               "nodes[%u] (\"%s\"): a tensor has one producer",
                               tn, (unsigned)p, g->nodes[p].name);
        for (size_t j = 0; j < k; j++)
            if (L->outs[j] == t)
                return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                                   "tensor \"%s\" is listed twice as an "
                                   "output", tn);
        for (size_t j = 0; j < n_in; j++)
            if (L->ins[j] == t)
                return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                                   "the node reads its own output \"%s\" "
                                   "(inputs[%zu])", tn, j);
        L->outs[k] = t;
        mp_jloc_pop(&L->loc);
    }
    mp_jloc_pop(&L->loc);
    d.inputs = L->ins;
    d.n_inputs = (uint32_t)n_in;
    d.outputs = L->outs;
    d.n_outputs = (uint32_t)n_out;
    uint32_t id;
    if ((st = mp_graph_add_node(g, &d, &id)))
        return st;
    if (attrs) {
        mp_jloc_key(&L->loc, "attributes");
        const char *key;
        json_t *v;
        json_object_foreach(attrs, key, v) {
            mp_jloc_key(&L->loc, key);
            if ((st = load_attr(L, id, key, v)))
                return st;
            mp_jloc_pop(&L->loc);
        }
        mp_jloc_pop(&L->loc);
    }
    if (cost) {
        mp_jloc_key(&L->loc, "cost");
        if ((st = check_keys(L, cost, cost_keys, "flops, bytes or seconds")))
            return st;
        double fl, by, se;
        if ((st = cost_value(L, cost, "flops", &fl)) ||
            (st = cost_value(L, cost, "bytes", &by)) ||
            (st = cost_value(L, cost, "seconds", &se)))
            return st;
        mp_jloc_pop(&L->loc);
        if ((st = mp_graph_set_node_cost(g, id, fl, by, se)))
            return st;
    }
    return MP_OK;
}

static bool needs_producer(uint8_t kind)
{
    return kind == MP_KIND_ACTIVATION || kind == MP_KIND_GRADIENT ||
           kind == MP_KIND_OUTPUT;
}

/* Every tensor a node reads must be produced by a node or be a source
 * (input, weight, constant, optimizer state). */
static mp_status check_sources(loader *L)
{
    mp_graph *g = L->g;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || L->ref_node[t] == MP_NONE ||
            !needs_producer(tt->declared_kind))
            continue;
        uint32_t nd = L->ref_node[t];
        L->loc.depth = 0;
        mp_jloc_key(&L->loc, "nodes");
        mp_jloc_index(&L->loc, nd);
        mp_jloc_key(&L->loc, "inputs");
        mp_jloc_index(&L->loc, L->ref_slot[t]);
        snprintf(L->loc.label, sizeof L->loc.label, "\"%s\"",
                 g->nodes[nd].name);
        if (!(L->declared[t] & 1))
            return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                               "input \"%s\" is neither declared in "
                               "\"tensors\" nor produced by any node",
                               tt->name);
        return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                           "input \"%s\" (%s) is not produced by any node: "
                           "declare it with kind input, weight or constant",
                           tt->name,
                           mp_kind_name((mp_tensor_kind)tt->declared_kind));
    }
    return MP_OK;
}

static const char *const top_keys[] = {"format", "version", "name",
                                       "tensors", "nodes", "outputs",
                                       "metadata", NULL};

static mp_status load_doc(loader *L, json_t *root)
{
    mp_graph *g = L->g;
    mp_status st;
    json_t *fmt = json_object_get(root, "format");
    if (fmt) {
        mp_jloc_key(&L->loc, "format");
        if (!json_is_string(fmt))
            return type_err(L, fmt, "the string \"" FORMAT_NAME "\"");
        if (strcmp(json_string_value(fmt), FORMAT_NAME) != 0)
            return mp_jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                               "format \"%s\" is not supported (expected \""
                               FORMAT_NAME "\")", json_string_value(fmt));
        mp_jloc_pop(&L->loc);
    }
    json_t *ver = json_object_get(root, "version");
    if (ver) {
        mp_jloc_key(&L->loc, "version");
        if (!json_is_integer(ver))
            return type_err(L, ver, "an integer");
        if (json_integer_value(ver) != FORMAT_VERSION)
            return mp_jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                               "version %lld is not supported (this memplan "
                               "reads version %d)",
                               (long long)json_integer_value(ver),
                               FORMAT_VERSION);
        mp_jloc_pop(&L->loc);
    }
    if ((st = check_keys(L, root, top_keys,
                         "format, version, name, tensors, nodes, outputs or "
                         "metadata")))
        return st;
    const char *name;
    if ((st = get_string(L, root, "name", false, false, &name)))
        return st;
    if (name && (st = mp_graph_set_name(g, name)))
        return st;
    json_t *meta = json_object_get(root, "metadata");
    if (meta && !json_is_object(meta)) {
        mp_jloc_key(&L->loc, "metadata");
        return type_err(L, meta, "an object");
    }
    json_t *tensors, *nodes, *outputs;
    if ((st = get_array(L, root, "tensors", false, &tensors)) ||
        (st = get_array(L, root, "nodes", false, &nodes)) ||
        (st = get_array(L, root, "outputs", false, &outputs)))
        return st;
    if (tensors) {
        mp_jloc_key(&L->loc, "tensors");
        size_t n = json_array_size(tensors);
        for (size_t i = 0; i < n; i++) {
            mp_jloc_index(&L->loc, i);
            L->loc.label[0] = 0;
            if ((st = load_tensor(L, json_array_get(tensors, i))))
                return st;
            mp_jloc_pop(&L->loc);
        }
        mp_jloc_pop(&L->loc);
    }
    L->loc.label[0] = 0;
    if (nodes) {
        mp_jloc_key(&L->loc, "nodes");
        size_t n = json_array_size(nodes);
        for (size_t i = 0; i < n; i++) {
            mp_jloc_index(&L->loc, i);
            L->loc.label[0] = 0;
            if ((st = load_node(L, json_array_get(nodes, i), i)))
                return st;
            mp_jloc_pop(&L->loc);
        }
        mp_jloc_pop(&L->loc);
    }
    L->loc.label[0] = 0;
    if (outputs) {
        mp_jloc_key(&L->loc, "outputs");
        size_t n = json_array_size(outputs);
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(outputs, i);
            mp_jloc_index(&L->loc, i);
            if (!json_is_string(v))
                return type_err(L, v, "a tensor name (a string)");
            uint32_t t;
            if (mp_graph_find_tensor(g, json_string_value(v), &t) != MP_OK)
                return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                                   "no tensor named \"%s\"",
                                   json_string_value(v));
            const mp_tensor *tt = &g->tensors[t];
            if (L->declared[t] & 2)
                return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                                   "\"%s\" is listed twice", tt->name);
            L->declared[t] |= 2;
            if (tt->producer == MP_NONE && needs_producer(tt->declared_kind))
                return mp_jloc_err(&L->loc, MP_ERR_GRAPH, false,
                                   "output \"%s\" (%s) is not produced by any "
                                   "node", tt->name,
                                   mp_kind_name(
                                       (mp_tensor_kind)tt->declared_kind));
            if ((st = mp_graph_mark_output(g, t)))
                return st;
            mp_jloc_pop(&L->loc);
        }
        mp_jloc_pop(&L->loc);
    }
    return check_sources(L);
}

mp_status mp_json_graph_build(mp_ctx *ctx, json_t *root, const char *text,
                              size_t len, const char *src, mp_graph **out)
{
    *out = NULL;
    loader L;
    memset(&L, 0, sizeof L);
    mp_jloc_init(&L.loc, ctx, src, text, len);
    L.ctx = ctx;
    mp_status st = mp_graph_create(ctx, &L.g);
    if (!st)
        st = load_doc(&L, root);
    if (!st)
        st = mp_json_finalize(ctx, L.g, src);
    mp_dealloc(ctx, L.ref_node);
    mp_dealloc(ctx, L.ref_slot);
    mp_dealloc(ctx, L.declared);
    mp_dealloc(ctx, L.ins);
    mp_dealloc(ctx, L.outs);
    mp_dealloc(ctx, L.ints);
    mp_dealloc(ctx, L.floats);
    if (st) {
        mp_graph_destroy(L.g);
        return st;
    }
    *out = L.g;
    return MP_OK;
}

mp_status mp_graph_load_json_string(mp_ctx *ctx, const char *text,
                                    const char *source_name, mp_graph **out)
{
    if (!ctx || !text || !out)
        return ctx ? mp_err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_json_string: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    const char *src = source_name ? source_name : "<string>";
    size_t len = strlen(text);
    json_t *root;
    mp_status st = mp_json_parse(ctx, text, len, src, &root);
    if (st)
        return st;
    st = mp_json_graph_build(ctx, root, text, len, src, out);
    json_decref(root);
    return st;
}

mp_status mp_graph_load_json(mp_ctx *ctx, const char *path, mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp_err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_json: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    char *text;
    size_t len;
    mp_status st = mp_read_file(ctx, path, &text, &len);
    if (st)
        return st;
    json_t *root;
    st = mp_json_parse(ctx, text, len, path, &root);
    if (!st) {
        st = mp_json_graph_build(ctx, root, text, len, path, out);
        json_decref(root);
    }
    mp_dealloc(ctx, text);
    return st;
}

/* ---- writer ---------------------------------------------------------------- */
typedef struct wbuf {
    mp_ctx *ctx;
    char *p;
    size_t len, cap;
    mp_status st;
} wbuf;

static void w_reserve(wbuf *w, size_t extra)
{
    if (w->st)
        return;
    if (w->len + extra + 1 > w->cap)
        w->st = mp_grow(w->ctx, (void **)&w->p, 1, w->len + extra + 1,
                        &w->cap);
}

static void w_mem(wbuf *w, const char *s, size_t n)
{
    w_reserve(w, n);
    if (w->st)
        return;
    memcpy(w->p + w->len, s, n);
    w->len += n;
}

static void w_str(wbuf *w, const char *s) { w_mem(w, s, strlen(s)); }

static void w_quoted(wbuf *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s);
    w_reserve(w, n + 2);
    if (w->st)
        return;
    w->p[w->len++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c >= 0x20 && *c != '"' && *c != '\\') {
            w_reserve(w, 2);
            if (w->st)
                return;
            w->p[w->len++] = (char)*c;
            continue;
        }
        char e[7];
        size_t el = 2;
        e[0] = '\\';
        switch (*c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\t': e[1] = 't'; break;
        case '\r': e[1] = 'r'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[*c >> 4];
            e[5] = hex[*c & 15];
            el = 6;
        }
        w_mem(w, e, el);
    }
    w_mem(w, "\"", 1);
}

static void w_i64(wbuf *w, int64_t v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    w_mem(w, b, (size_t)n);
}

static void w_u64(wbuf *w, uint64_t v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    w_mem(w, b, (size_t)n);
}

/* Shortest of %.15g/%.16g/%.17g that reads back exactly, always with a
 * '.' or an exponent so that it reads back as a real. */
static void w_double(wbuf *w, double v, const char *what)
{
    if (!isfinite(v)) {
        if (!w->st)
            w->st = mp_err(w->ctx, MP_ERR_UNSUPPORTED,
                           "%s: %g cannot be written in JSON", what, v);
        return;
    }
    char b[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(b, sizeof b - 2, "%.*g", prec, v);
        for (int k = 0; k < n; k++)
            if (b[k] == ',')
                b[k] = '.'; /* a locale with a decimal comma */
        if (strtod(b, NULL) == v)
            break;
    }
    if (!strpbrk(b, ".eE")) {
        b[n++] = '.';
        b[n++] = '0';
        b[n] = 0;
    }
    w_mem(w, b, (size_t)n);
}

static void write_tensor(wbuf *w, const mp_tensor *t)
{
    w_str(w, "    {\"name\": ");
    w_quoted(w, t->name);
    if (t->dtype != MP_DTYPE_UNDEFINED) {
        w_str(w, ", \"dtype\": ");
        w_quoted(w, mp_dtype_name((mp_dtype)t->dtype));
    }
    if (t->rank >= 0) {
        w_str(w, ", \"shape\": [");
        for (int32_t k = 0; k < t->rank; k++) {
            if (k)
                w_str(w, ", ");
            w_i64(w, t->dims[k] < 0 ? -1 : t->dims[k]);
        }
        w_str(w, "]");
    }
    if (t->flags & MP_TF_BYTES_GIVEN) {
        w_str(w, ", \"bytes\": ");
        w_u64(w, t->bytes);
    }
    if (t->declared_kind != MP_KIND_ACTIVATION) {
        w_str(w, ", \"kind\": ");
        w_quoted(w, mp_kind_name((mp_tensor_kind)t->declared_kind));
    }
    w_str(w, "}");
}

static void write_ids(wbuf *w, const mp_graph *g, const uint32_t *ids,
                      uint32_t n)
{
    w_str(w, "[");
    for (uint32_t k = 0; k < n; k++) {
        if (k)
            w_str(w, ", ");
        w_quoted(w, ids[k] == MP_NONE ? "" : g->tensors[ids[k]].name);
    }
    w_str(w, "]");
}

static void write_node(wbuf *w, const mp_graph *g, const mp_node *n)
{
    char what[256];
    w_str(w, "    {\"name\": ");
    w_quoted(w, n->name);
    w_str(w, ", \"op\": ");
    w_quoted(w, n->op);
    if (n->domain && n->domain[0]) {
        w_str(w, ", \"domain\": ");
        w_quoted(w, n->domain);
    }
    w_str(w, ", \"inputs\": ");
    write_ids(w, g, n->inputs, n->n_in);
    w_str(w, ", \"outputs\": ");
    write_ids(w, g, n->outputs, n->n_out);
    if (n->n_attrs) {
        w_str(w, ", \"attributes\": {");
        for (uint32_t a = 0; a < n->n_attrs; a++) {
            const mp_attr *at = &n->attrs[a];
            snprintf(what, sizeof what, "node '%s': attribute '%s'", n->name,
                     at->name);
            if (a)
                w_str(w, ", ");
            w_quoted(w, at->name);
            w_str(w, ": ");
            switch (at->type) {
            case MP_ATTR_INT: w_i64(w, at->v.i); break;
            case MP_ATTR_FLOAT: w_double(w, at->v.f, what); break;
            case MP_ATTR_STRING: w_quoted(w, at->v.s); break;
            case MP_ATTR_INTS:
            case MP_ATTR_FLOATS:
                w_str(w, "[");
                for (uint32_t k = 0; k < at->n; k++) {
                    if (k)
                        w_str(w, ", ");
                    if (at->type == MP_ATTR_INTS)
                        w_i64(w, at->v.ints[k]);
                    else
                        w_double(w, at->v.floats[k], what);
                }
                w_str(w, "]");
                break;
            }
        }
        w_str(w, "}");
    }
    if (n->phase != MP_PHASE_FORWARD) {
        w_str(w, ", \"phase\": ");
        w_quoted(w, mp_phase_name((mp_phase)n->phase));
    }
    if (n->flops >= 0 || n->bytes_moved >= 0 || n->seconds >= 0) {
        snprintf(what, sizeof what, "node '%s': cost", n->name);
        const char *sep = "";
        w_str(w, ", \"cost\": {");
        if (n->flops >= 0) {
            w_str(w, "\"flops\": ");
            w_double(w, n->flops, what);
            sep = ", ";
        }
        if (n->bytes_moved >= 0) {
            w_str(w, sep);
            w_str(w, "\"bytes\": ");
            w_double(w, n->bytes_moved, what);
            sep = ", ";
        }
        if (n->seconds >= 0) {
            w_str(w, sep);
            w_str(w, "\"seconds\": ");
            w_double(w, n->seconds, what);
        }
        w_str(w, "}");
    }
    w_str(w, "}");
}

mp_status mp_graph_to_json_string(const mp_graph *g, char **out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    wbuf w = {g->ctx, NULL, 0, 0, MP_OK};
    w_reserve(&w, 256 + g->n_tensors * 64 + g->n_nodes * 128);
    w_str(&w, "{\n  \"format\": \"" FORMAT_NAME "\",\n  \"version\": 1,\n");
    if (g->name && g->name[0]) {
        w_str(&w, "  \"name\": ");
        w_quoted(&w, g->name);
        w_str(&w, ",\n");
    }
    w_str(&w, "  \"tensors\": [");
    for (size_t i = 0; i < g->n_tensors; i++) {
        w_str(&w, i ? ",\n" : "\n");
        write_tensor(&w, &g->tensors[i]);
    }
    w_str(&w, g->n_tensors ? "\n  ],\n" : "],\n");
    w_str(&w, "  \"nodes\": [");
    for (size_t i = 0; i < g->n_nodes; i++) {
        w_str(&w, i ? ",\n" : "\n");
        write_node(&w, g, &g->nodes[i]);
    }
    w_str(&w, g->n_nodes ? "\n  ],\n" : "],\n");
    w_str(&w, "  \"outputs\": [");
    bool first = true;
    for (size_t i = 0; i < g->n_tensors; i++) {
        if (!(g->tensors[i].flags & MP_TF_OUTPUT))
            continue;
        if (!first)
            w_str(&w, ", ");
        first = false;
        w_quoted(&w, g->tensors[i].name);
    }
    w_str(&w, "]\n}\n");
    if (w.st) {
        mp_dealloc(g->ctx, w.p);
        return w.st;
    }
    w.p[w.len] = 0;
    *out = w.p;
    return MP_OK;
}

mp_status mp_graph_save_json(const mp_graph *g, const char *path)
{
    if (!g || !path)
        return g ? mp_err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_save_json: NULL path")
                 : MP_ERR_INVALID_ARG;
    char *s;
    mp_status st = mp_graph_to_json_string(g, &s);
    if (st)
        return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        int e = errno;
        mp_dealloc(g->ctx, s);
        return mp_err(g->ctx, MP_ERR_IO, "%s: cannot open for writing: %s",
                      path, strerror(e));
    }
    size_t n = strlen(s);
    bool ok = fwrite(s, 1, n, f) == n;
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    mp_dealloc(g->ctx, s);
    if (!ok)
        return mp_err(g->ctx, MP_ERR_IO, "%s: write error: %s", path,
                      strerror(e));
    return MP_OK;
}
