/* networkx node-link graphs as used by Checkmate and Moccasin
 * (docs/graph-format.md, "Node-link graphs").
 *
 * Each node becomes an mp__node (op "Checkmate") producing one tensor of
 * cost_ram bytes named after the node; a link source -> target makes the
 * source's tensor an input of the target. Nodes are added in topological
 * order (the file's order whenever it is already topological) and the
 * sinks' tensors are the graph outputs.
 *
 * Two spellings are read: Checkmate's (nodes with id, name, backward,
 * cost_cpu, cost_ram; links with source and target) and Moccasin's random
 * layered graphs (nodes with name used as the id, out_cost, duration,
 * param_cost, named by the graph's node_*_tag attributes; links with keys
 * "0" and "1"). */
#include "sched.h"
#include "json_pos.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define OP_NAME "Checkmate"

typedef struct nl {
    mp__jloc loc;
    mp_ctx *ctx;
    size_t n, n_links;
    char **ids;         /* canonical id per node */
    char **names;       /* tensor/node name per node */
    uint64_t *ram, *param;
    double *cpu;
    uint8_t *backward, *dup;
    uint32_t *src, *dst; /* per link: node indices */
    uint32_t *in_begin, *in_list, *out_begin, *out_list;
    uint32_t *indeg, *order, *heap, *tid, *stamp, *ins;
    mp__name_map id_map, name_map;
    const char *tag_ram, *tag_cpu, *tag_param;
} nl;

static const char *str_at(const void *owner, uint32_t i)
{
    return ((char *const *)owner)[i];
}

static mp_status nl_type_err(nl *L, const json_t *v, const char *expected)
{
    char buf[96];
    return mp__jloc_err(&L->loc, MP_ERR_PARSE, false, "expected %s, got %s",
                       expected, mp__json_describe(v, buf, sizeof buf));
}

/* A node id (integer or string) in canonical form. */
static mp_status canon_id(nl *L, json_t *v, char **out)
{
    char buf[32];
    const char *s;
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        s = buf;
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else {
        return nl_type_err(L, v, "a node id (an integer or a string)");
    }
    *out = mp__strdup(L->ctx, s);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

/* First member present among keys (NULLs skipped). */
static json_t *member(json_t *obj, const char *const *keys, size_t nk,
                      const char **used)
{
    for (size_t k = 0; k < nk; k++) {
        if (!keys[k])
            continue;
        json_t *v = json_object_get(obj, keys[k]);
        if (v) {
            *used = keys[k];
            return v;
        }
    }
    return NULL;
}

/* A byte count: an integer >= 0, or an integral real (networkx may write
 * 1024.0). */
static mp_status get_bytes(nl *L, json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return MP_OK;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= 0 && d == floor(d)) {
            if (d >= 18446744073709551616.0)
                return mp__jloc_err(&L->loc, MP_ERR_OVERFLOW, false,
                                   "%.17g bytes do not fit in 64 bits", d);
            *out = (uint64_t)d;
            return MP_OK;
        }
    }
    return nl_type_err(L, v, "a byte count (an integer >= 0)");
}

static mp_status read_node(nl *L, json_t *nd, size_t i)
{
    mp_status st;
    if (!json_is_object(nd))
        return nl_type_err(L, nd, "an object (a node)");
    const char *key = NULL;
    static const char *const id_keys[] = {"id", "name"};
    json_t *idv = member(nd, id_keys, 2, &key);
    if (!idv)
        return mp__jloc_err(&L->loc, MP_ERR_PARSE, false,
                           "missing \"id\" (the node's id)");
    mp__jloc_key(&L->loc, key);
    if ((st = canon_id(L, idv, &L->ids[i])))
        return st;
    uint32_t prev;
    if (mp__name_map_insert(L->ctx, &L->id_map, L->ids, str_at, L->ids[i],
                           (uint32_t)i, &prev)) {
        if (prev == MP_NONE)
            return MP_ERR_NOMEM;
        return mp__jloc_err(&L->loc, MP_ERR_DUPLICATE, false,
                           "duplicate node id %s (first at nodes[%u])",
                           L->ids[i], (unsigned)prev);
    }
    mp__jloc_pop(&L->loc);
    snprintf(L->loc.label, sizeof L->loc.label, "id %s", L->ids[i]);

    json_t *nm = json_object_get(nd, "name");
    if (nm && !json_is_string(nm) && !json_is_integer(nm)) {
        mp__jloc_key(&L->loc, "name");
        return nl_type_err(L, nm, "a string or an integer");
    }
    if (nm && json_is_string(nm)) {
        if (!json_string_value(nm)[0]) {
            mp__jloc_key(&L->loc, "name");
            return mp__jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "must not be an empty string");
        }
        L->names[i] = mp__strdup(L->ctx, json_string_value(nm));
    } else if (nm) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(nm));
        L->names[i] = mp__strdup(L->ctx, buf);
    } else {
        L->names[i] = mp__strdup(L->ctx, L->ids[i]);
    }
    if (!L->names[i])
        return MP_ERR_NOMEM;
    snprintf(L->loc.label, sizeof L->loc.label, "id %s, \"%s\"", L->ids[i],
             L->names[i]);
    if (mp__name_map_insert(L->ctx, &L->name_map, L->names, str_at,
                           L->names[i], (uint32_t)i, &prev)) {
        if (prev == MP_NONE)
            return MP_ERR_NOMEM;
        L->dup[i] = L->dup[prev] = 1;
    }

    const char *ram_keys[] = {"cost_ram", L->tag_ram, "out_cost"};
    json_t *v = member(nd, ram_keys, 3, &key);
    if (!v)
        return mp__jloc_err(&L->loc, MP_ERR_PARSE, false,
                           "missing \"cost_ram\" (bytes of the node's "
                           "output)");
    mp__jloc_key(&L->loc, key);
    if ((st = get_bytes(L, v, &L->ram[i])))
        return st;
    mp__jloc_pop(&L->loc);

    const char *cpu_keys[] = {"cost_cpu", L->tag_cpu, "duration"};
    L->cpu[i] = -1.0;
    if ((v = member(nd, cpu_keys, 3, &key))) {
        mp__jloc_key(&L->loc, key);
        if (!json_is_number(v) || !(json_number_value(v) >= 0))
            return nl_type_err(L, v, "a number >= 0");
        L->cpu[i] = json_number_value(v);
        mp__jloc_pop(&L->loc);
    }

    const char *param_keys[] = {L->tag_param, "param_cost"};
    if ((v = member(nd, param_keys, 2, &key))) {
        mp__jloc_key(&L->loc, key);
        if ((st = get_bytes(L, v, &L->param[i])))
            return st;
        mp__jloc_pop(&L->loc);
    }

    if ((v = json_object_get(nd, "backward"))) {
        if (!json_is_boolean(v)) {
            mp__jloc_key(&L->loc, "backward");
            return nl_type_err(L, v, "true or false");
        }
        L->backward[i] = json_is_true(v);
    }
    return MP_OK;
}

static mp_status link_end(nl *L, json_t *lk, const char *key, uint32_t *out)
{
    json_t *v = json_object_get(lk, key);
    if (!v)
        return mp__jloc_err(&L->loc, MP_ERR_PARSE, false, "missing \"%s\"",
                           key);
    mp__jloc_key(&L->loc, key);
    char *id = NULL;
    mp_status st = canon_id(L, v, &id);
    if (st)
        return st;
    uint32_t k = mp__name_map_find(&L->id_map, L->ids, str_at, id);
    if (k == MP_NONE) {
        st = mp__jloc_err(&L->loc, MP_ERR_GRAPH, false, "no node with id %s",
                         id);
        mp__dealloc(L->ctx, id);
        return st;
    }
    mp__dealloc(L->ctx, id);
    mp__jloc_pop(&L->loc);
    *out = k;
    return MP_OK;
}


/* Builds the in/out adjacency (CSR, link order kept) and a topological
 * order (smallest file index first). */
static mp_status topo_sort(nl *L)
{
    size_t n = L->n, m = L->n_links;
    for (size_t l = 0; l < m; l++) {
        L->in_begin[L->dst[l] + 1]++;
        L->out_begin[L->src[l] + 1]++;
    }
    for (size_t i = 0; i < n; i++) {
        L->in_begin[i + 1] += L->in_begin[i];
        L->out_begin[i + 1] += L->out_begin[i];
    }
    /* fill using indeg/order as cursors */
    for (size_t i = 0; i < n; i++) {
        L->indeg[i] = L->in_begin[i];
        L->order[i] = L->out_begin[i];
    }
    for (size_t l = 0; l < m; l++) {
        L->in_list[L->indeg[L->dst[l]]++] = L->src[l];
        L->out_list[L->order[L->src[l]]++] = L->dst[l];
    }
    for (size_t i = 0; i < n; i++)
        L->indeg[i] = L->in_begin[i + 1] - L->in_begin[i];
    uint32_t hn = 0, done = 0;
    for (size_t i = 0; i < n; i++)
        if (!L->indeg[i])
            mp__heap_push(L->heap, &hn, (uint32_t)i);
    while (hn) {
        uint32_t v = mp__heap_pop(L->heap, &hn);
        L->order[done++] = v;
        for (uint32_t k = L->out_begin[v]; k < L->out_begin[v + 1]; k++)
            if (--L->indeg[L->out_list[k]] == 0)
                mp__heap_push(L->heap, &hn, L->out_list[k]);
    }
    if (done == n)
        return MP_OK;
    /* walk back along remaining predecessors: after n steps we are on a
     * cycle */
    uint32_t cur = MP_NONE;
    for (size_t i = 0; i < n && cur == MP_NONE; i++)
        if (L->indeg[i])
            cur = (uint32_t)i;
    for (size_t s = 0; s < n; s++) {
        uint32_t next = MP_NONE;
        for (uint32_t k = L->in_begin[cur]; k < L->in_begin[cur + 1]; k++)
            if (L->indeg[L->in_list[k]]) {
                next = L->in_list[k];
                break;
            }
        if (next == MP_NONE)
            break;
        cur = next;
    }
    L->loc.depth = 0;
    mp__jloc_key(&L->loc, "nodes");
    mp__jloc_index(&L->loc, cur);
    snprintf(L->loc.label, sizeof L->loc.label, "id %s, \"%s\"", L->ids[cur],
             L->names[cur]);
    return mp__jloc_err(&L->loc, MP_ERR_CYCLE, false,
                       "the graph has a cycle through this node");
}

static mp_status set_bytes(mp_graph *g, uint32_t t, uint64_t bytes)
{
    /* explicit size, also when 0 (a desc's 0 means "derive") */
    g->tensors[t].bytes = bytes;
    g->tensors[t].flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    return MP_OK;
}

static mp_status build_graph(nl *L, mp_graph *g)
{
    mp_status st;
    size_t n = L->n;
    /* final names: repeated names get "#<id>" */
    for (size_t i = 0; i < n; i++) {
        if (!L->dup[i])
            continue;
        size_t len = strlen(L->names[i]) + strlen(L->ids[i]) + 2;
        char *s = mp__alloc(L->ctx, len);
        if (!s)
            return MP_ERR_NOMEM;
        snprintf(s, len, "%s#%s", L->names[i], L->ids[i]);
        mp__dealloc(L->ctx, L->names[i]);
        L->names[i] = s;
    }
    char *pname = NULL;
    for (size_t k = 0; k < n; k++) {
        uint32_t v = L->order[k];
        L->loc.depth = 0;
        mp__jloc_key(&L->loc, "nodes");
        mp__jloc_index(&L->loc, v);
        snprintf(L->loc.label, sizeof L->loc.label, "id %s, \"%s\"",
                 L->ids[v], L->names[v]);
        uint32_t n_in = 0;
        for (uint32_t e = L->in_begin[v]; e < L->in_begin[v + 1]; e++) {
            uint32_t s = L->in_list[e];
            if (L->stamp[s] == v + 1)
                continue; /* parallel link */
            L->stamp[s] = v + 1;
            L->ins[n_in++] = L->tid[s];
        }
        mp_tensor_desc td;
        memset(&td, 0, sizeof td);
        td.rank = -1;
        uint32_t t;
        if (L->param[v]) {
            size_t len = strlen(L->names[v]) + 7;
            pname = mp__alloc(L->ctx, len);
            if (!pname)
                return MP_ERR_NOMEM;
            snprintf(pname, len, "%s.param", L->names[v]);
            td.name = pname;
            td.kind = MP_KIND_WEIGHT;
            uint32_t dummy;
            if (mp_graph_find_tensor(g, pname, &dummy) == MP_OK) {
                st = mp__jloc_err(&L->loc, MP_ERR_DUPLICATE, false,
                                 "tensor name \"%s\" is taken", pname);
                mp__dealloc(L->ctx, pname);
                return st;
            }
            st = mp_graph_add_tensor(g, &td, &t);
            mp__dealloc(L->ctx, pname);
            if (st)
                return st;
            set_bytes(g, t, L->param[v]);
            L->ins[n_in++] = t;
        }
        td.name = L->names[v];
        td.kind = L->backward[v] ? MP_KIND_GRADIENT : MP_KIND_ACTIVATION;
        uint32_t dummy;
        if (mp_graph_find_tensor(g, td.name, &dummy) == MP_OK)
            return mp__jloc_err(&L->loc, MP_ERR_DUPLICATE, false,
                               "name \"%s\" is used twice", td.name);
        if ((st = mp_graph_add_tensor(g, &td, &t)))
            return st;
        set_bytes(g, t, L->ram[v]);
        L->tid[v] = t;
        mp_node_desc nd;
        memset(&nd, 0, sizeof nd);
        nd.name = L->names[v];
        nd.op = OP_NAME;
        nd.inputs = L->ins;
        nd.n_inputs = n_in;
        nd.outputs = &t;
        nd.n_outputs = 1;
        nd.phase = L->backward[v] ? MP_PHASE_BACKWARD : MP_PHASE_FORWARD;
        uint32_t id;
        if ((st = mp_graph_add_node(g, &nd, &id)))
            return st;
        if (L->cpu[v] >= 0 &&
            (st = mp_graph_set_node_cost(g, id, -1.0, -1.0, L->cpu[v])))
            return st;
    }
    for (size_t i = 0; i < n; i++)
        if (L->out_begin[i] == L->out_begin[i + 1] &&
            (st = mp_graph_mark_output(g, L->tid[i])))
            return st;
    return MP_OK;
}

static mp_status load(nl *L, json_t *root, mp_graph *g)
{
    mp_status st;
    json_t *v;
    if ((v = json_object_get(root, "directed")) && !json_is_true(v)) {
        mp__jloc_key(&L->loc, "directed");
        if (!json_is_boolean(v))
            return nl_type_err(L, v, "true or false");
        return mp__jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                           "undirected graphs are not supported");
    }
    json_t *gr = json_object_get(root, "graph");
    if (gr && json_is_object(gr)) {
        json_t *nm = json_object_get(gr, "name");
        if (nm && json_is_string(nm) &&
            (st = mp_graph_set_name(g, json_string_value(nm))))
            return st;
        static const char *const tags[] = {"node_output_cost_tag",
                                           "node_duration_tag",
                                           "node_param_cost_tag"};
        const char **dst[] = {&L->tag_ram, &L->tag_cpu, &L->tag_param};
        for (int k = 0; k < 3; k++) {
            json_t *t = json_object_get(gr, tags[k]);
            if (t && json_is_string(t))
                *dst[k] = json_string_value(t);
        }
    }
    json_t *nodes = json_object_get(root, "nodes");
    const char *links_key = "links";
    json_t *links = json_object_get(root, "links");
    if (!links && (links = json_object_get(root, "edges")))
        links_key = "edges";
    if (!nodes || !json_is_array(nodes)) {
        if (!nodes)
            return mp__jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "missing required key \"nodes\" (an array)");
        mp__jloc_key(&L->loc, "nodes");
        return nl_type_err(L, nodes, "an array");
    }
    if (!links || !json_is_array(links)) {
        if (!links)
            return mp__jloc_err(&L->loc, MP_ERR_PARSE, false,
                               "missing required key \"links\" (an array)");
        mp__jloc_key(&L->loc, links_key);
        return nl_type_err(L, links, "an array");
    }
    size_t n = json_array_size(nodes), m = json_array_size(links);
    if (n >= UINT32_MAX / 2 || m >= UINT32_MAX / 2)
        return mp__jloc_err(&L->loc, MP_ERR_UNSUPPORTED, false,
                           "graph too large");
    L->n = n;
    L->n_links = m;
    size_t n1 = n + 1, m1 = m + 1;
    mp_ctx *ctx = L->ctx;
    if (!(L->ids = mp__calloc(ctx, n1, sizeof *L->ids)) ||
        !(L->names = mp__calloc(ctx, n1, sizeof *L->names)) ||
        !(L->ram = mp__calloc(ctx, n1, sizeof *L->ram)) ||
        !(L->param = mp__calloc(ctx, n1, sizeof *L->param)) ||
        !(L->cpu = mp__calloc(ctx, n1, sizeof *L->cpu)) ||
        !(L->backward = mp__calloc(ctx, n1, 1)) ||
        !(L->dup = mp__calloc(ctx, n1, 1)) ||
        !(L->src = mp__calloc(ctx, m1, sizeof *L->src)) ||
        !(L->dst = mp__calloc(ctx, m1, sizeof *L->dst)) ||
        !(L->in_begin = mp__calloc(ctx, n1, sizeof *L->in_begin)) ||
        !(L->out_begin = mp__calloc(ctx, n1, sizeof *L->out_begin)) ||
        !(L->in_list = mp__calloc(ctx, m1, sizeof *L->in_list)) ||
        !(L->out_list = mp__calloc(ctx, m1, sizeof *L->out_list)) ||
        !(L->indeg = mp__calloc(ctx, n1, sizeof *L->indeg)) ||
        !(L->order = mp__calloc(ctx, n1, sizeof *L->order)) ||
        !(L->heap = mp__calloc(ctx, n1, sizeof *L->heap)) ||
        !(L->tid = mp__calloc(ctx, n1, sizeof *L->tid)) ||
        !(L->stamp = mp__calloc(ctx, n1, sizeof *L->stamp)) ||
        !(L->ins = mp__calloc(ctx, m1 + 1, sizeof *L->ins)))
        return MP_ERR_NOMEM;

    mp__jloc_key(&L->loc, "nodes");
    for (size_t i = 0; i < n; i++) {
        mp__jloc_index(&L->loc, i);
        L->loc.label[0] = 0;
        if ((st = read_node(L, json_array_get(nodes, i), i)))
            return st;
        mp__jloc_pop(&L->loc);
    }
    mp__jloc_pop(&L->loc);
    L->loc.label[0] = 0;

    mp__jloc_key(&L->loc, links_key);
    for (size_t l = 0; l < m; l++) {
        json_t *lk = json_array_get(links, l);
        mp__jloc_index(&L->loc, l);
        if (!json_is_object(lk))
            return nl_type_err(L, lk, "an object (a link)");
        bool moccasin = !json_object_get(lk, "source") &&
                        json_object_get(lk, "0");
        if ((st = link_end(L, lk, moccasin ? "0" : "source", &L->src[l])) ||
            (st = link_end(L, lk, moccasin ? "1" : "target", &L->dst[l])))
            return st;
        if (L->src[l] == L->dst[l])
            return mp__jloc_err(&L->loc, MP_ERR_CYCLE, false,
                               "self-loop on node id %s", L->ids[L->src[l]]);
        mp__jloc_pop(&L->loc);
    }
    mp__jloc_pop(&L->loc);
    if ((st = topo_sort(L)))
        return st;
    return build_graph(L, g);
}

mp_status mp__nodelink_build(mp_ctx *ctx, json_t *root, const char *text,
                            size_t len, const char *src, mp_graph **out)
{
    *out = NULL;
    nl L;
    memset(&L, 0, sizeof L);
    mp__jloc_init(&L.loc, ctx, src, text, len);
    L.ctx = ctx;
    mp_graph *g = NULL;
    mp_status st = mp_graph_create(ctx, &g);
    if (!st)
        st = load(&L, root, g);
    if (!st)
        st = mp__json_finalize(ctx, g, src);
    for (size_t i = 0; i < L.n; i++) {
        if (L.ids)
            mp__dealloc(ctx, L.ids[i]);
        if (L.names)
            mp__dealloc(ctx, L.names[i]);
    }
    void *arrays[] = {L.ids, L.names, L.ram, L.param, L.cpu, L.backward,
                      L.dup, L.src, L.dst, L.in_begin, L.out_begin,
                      L.in_list, L.out_list, L.indeg, L.order, L.heap,
                      L.tid, L.stamp, L.ins};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        mp__dealloc(ctx, arrays[k]);
    mp__name_map_free(ctx, &L.id_map);
    mp__name_map_free(ctx, &L.name_map);
    if (st) {
        mp_graph_destroy(g);
        return st;
    }
    *out = g;
    return MP_OK;
}

mp_status mp_graph_load_nodelink(mp_ctx *ctx, const char *path,
                                 mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_nodelink: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    char *text;
    size_t len;
    mp_status st = mp__read_file(ctx, path, &text, &len);
    if (st)
        return st;
    json_t *root;
    st = mp__json_parse(ctx, text, len, path, &root);
    if (!st) {
        st = mp__nodelink_build(ctx, root, text, len, path, out);
        json_decref(root);
    }
    mp__dealloc(ctx, text);
    return st;
}
