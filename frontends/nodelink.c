/* networkx node-link graphs as used by Checkmate and Moccasin
 * (docs/graph-format.md, "Node-link graphs"), read with the library's
 * JSON reader (frontends/json/json.h).
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
 * "0" and "1"). Keys the format does not use are passed over. */
#include "json.h"
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define OP_NAME "Checkmate"

typedef struct nl_node {
    char *id;           /* canonical id */
    char *name;         /* tensor/node name */
    uint64_t ram, param;
    double cpu;
    uint8_t backward, dup;
    size_t off;         /* its object in the text */
} nl_node;

typedef struct nl {
    mp__jr jr;
    mp_ctx *ctx;
    nl_node *nodes;
    size_t n, cap_nodes;
    uint32_t *src, *dst; /* per link: node indices */
    size_t n_links, cap_src, cap_dst;
    uint32_t *in_begin, *in_list, *out_begin, *out_list;
    uint32_t *indeg, *order, *heap, *tid, *stamp, *ins;
    mp__name_map id_map, name_map;
    char *tags[3];      /* node_output_cost_tag, _duration_, _param_cost_ */
    const char *cpu_key; /* the key of the first node time read */
} nl;

static const char *id_at(const void *owner, uint32_t i)
{
    return ((const nl_node *)owner)[i].id;
}

static const char *name_at(const void *owner, uint32_t i)
{
    return ((const nl_node *)owner)[i].name;
}

/* The path of node v for messages: nodes[v] (id ID, "NAME"). */
static void at_node(nl *L, size_t v)
{
    mp__jr_path_cut(&L->jr, 0);
    mp__jr_push_key(&L->jr, "nodes");
    mp__jr_push_index(&L->jr, v);
    mp__jr_label(&L->jr, "id %s, \"%s\"", L->nodes[v].id, L->nodes[v].name);
}

/* A node id (integer or string) in canonical form. */
static mp_status canon_id(nl *L, const mp__jval *v, char **out)
{
    char buf[32];
    const char *s;
    if (v->type == MP__JT_NUMBER && v->is_int) {
        snprintf(buf, sizeof buf, "%lld", (long long)v->i);
        s = buf;
    } else if (v->type == MP__JT_STRING) {
        s = mp__jr_str(&L->jr, v->s);
    } else {
        return mp__jr_type_err(&L->jr, v,
                               "a node id (an integer or a string)");
    }
    *out = mp__strdup(L->ctx, s);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

/* A byte count: an integer >= 0, or an integral real (networkx may write
 * 1024.0). */
static mp_status get_bytes(nl *L, const mp__jval *v, uint64_t *out)
{
    if (v->type == MP__JT_NUMBER && v->is_int && v->i >= 0) {
        *out = (uint64_t)v->i;
        return MP_OK;
    }
    if (v->type == MP__JT_NUMBER && !v->is_int && v->d >= 0 &&
        v->d == floor(v->d)) {
        if (v->d >= 18446744073709551616.0)
            return mp__jr_err(&L->jr, MP_ERR_OVERFLOW, v->off,
                              "%.17g bytes do not fit in 64 bits", v->d);
        *out = (uint64_t)v->d;
        return MP_OK;
    }
    return mp__jr_type_err(&L->jr, v, "a byte count (an integer >= 0)");
}

/* The members of a node the format reads, by slot. */
enum { N_ID, N_NAME, N_RAM, N_RAM_TAG, N_OUT_COST, N_CPU, N_CPU_TAG,
       N_DURATION, N_PARAM_TAG, N_PARAM_COST, N_BACKWARD, N_SLOTS };

typedef struct nl_obj {
    mp__jobj o;
    mp__jval v[N_SLOTS];
} nl_obj;

/* The next value, an object (what: its kind), its members of the table
 * keys into m->v (containers skipped); other members passed over. */
static mp_status read_members(nl *L, const mp__jkeys *keys, const char *what,
                              nl_obj *m)
{
    int k;
    mp__jval v;
    mp_status st = mp__jr_object(&L->jr, &m->o, keys, what);
    while (!st && !(st = mp__jr_next(&L->jr, &m->o, &k, &v)) &&
           k != MP__JK_END)
        st = mp__jr_keep(&L->jr, m->v, k, &v);
    return st;
}

/* The first member present among the slots (from, n of them): its slot,
 * with its key on the path; -1 when none is. */
static int present(nl *L, const nl_obj *m, int from, int n)
{
    for (int k = from; k < from + n; k++)
        if (m->o.seen >> k & 1) {
            mp__jr_push_key(&L->jr, m->o.keys->names[k]);
            return k;
        }
    return -1;
}

/* The node's id and name (ids unique; repeated names marked). */
static mp_status node_names(nl *L, const nl_obj *m, size_t i)
{
    nl_node *nd = &L->nodes[i];
    int k = present(L, m, N_ID, 2);
    if (k < 0)
        return mp__jr_err(&L->jr, MP_ERR_PARSE, m->o.off,
                          "missing \"id\" (the node's id)");
    uint32_t prev;
    mp_status st = canon_id(L, &m->v[k], &nd->id);
    if (!st && mp__name_map_insert(L->ctx, &L->id_map, L->nodes, id_at,
                                   nd->id, (uint32_t)i, &prev))
        st = prev == MP_NONE ? MP_ERR_NOMEM
                             : mp__jr_err(&L->jr, MP_ERR_DUPLICATE,
                                          m->v[k].off,
                                          "duplicate node id %s (first at "
                                          "nodes[%u])",
                                          nd->id, (unsigned)prev);
    if (st)
        return st;
    mp__jr_pop(&L->jr);
    mp__jr_label(&L->jr, "id %s", nd->id);
    const mp__jval *nm = &m->v[N_NAME];
    char buf[32];
    const char *name = nd->id;
    if (m->o.seen >> N_NAME & 1) {
        mp__jr_push_key(&L->jr, "name");
        if (nm->type == MP__JT_NUMBER && nm->is_int)
            snprintf(buf, sizeof buf, "%lld", (long long)nm->i);
        else if ((st = mp__jr_string(&L->jr, nm, true,
                                     "a string or an integer", &name)))
            return st;
        mp__jr_pop(&L->jr);
        name = nm->type == MP__JT_STRING ? name : buf;
    }
    if (!(nd->name = mp__strdup(L->ctx, name)))
        return MP_ERR_NOMEM;
    mp__jr_label(&L->jr, "id %s, \"%s\"", nd->id, nd->name);
    if (mp__name_map_insert(L->ctx, &L->name_map, L->nodes, name_at,
                           nd->name, (uint32_t)i, &prev)) {
        if (prev == MP_NONE)
            return MP_ERR_NOMEM;
        nd->dup = L->nodes[prev].dup = 1;
    }
    return MP_OK;
}

/* The node's costs and phase. */
static mp_status node_costs(nl *L, const nl_obj *m, nl_node *nd)
{
    mp_status st;
    int k = present(L, m, N_RAM, 3);
    if (k < 0)
        return mp__jr_err(&L->jr, MP_ERR_PARSE, m->o.off,
                          "missing \"cost_ram\" (bytes of the node's "
                          "output)");
    if ((st = get_bytes(L, &m->v[k], &nd->ram)))
        return st;
    mp__jr_pop(&L->jr);
    nd->cpu = -1.0;
    if ((k = present(L, m, N_CPU, 3)) >= 0) {
        if ((st = mp__jr_num(&L->jr, &m->v[k], 0, "a number >= 0",
                             &nd->cpu)))
            return st;
        mp__jr_pop(&L->jr);
        if (!L->cpu_key)
            L->cpu_key = m->o.keys->names[k];
    }
    if ((k = present(L, m, N_PARAM_TAG, 2)) >= 0) {
        if ((st = get_bytes(L, &m->v[k], &nd->param)))
            return st;
        mp__jr_pop(&L->jr);
    }
    if (present(L, m, N_BACKWARD, 1) >= 0) {
        mp__jtype t = m->v[N_BACKWARD].type;
        if (t != MP__JT_TRUE && t != MP__JT_FALSE)
            return mp__jr_type_err(&L->jr, &m->v[N_BACKWARD],
                                   "true or false");
        nd->backward = t == MP__JT_TRUE;
        mp__jr_pop(&L->jr);
    }
    return MP_OK;
}

/* The next value: node i. */
static mp_status read_node(nl *L, size_t i)
{
    const char *names[N_SLOTS] = {"id", "name", "cost_ram", L->tags[0],
                                  "out_cost", "cost_cpu", L->tags[1],
                                  "duration", L->tags[2], "param_cost",
                                  "backward"};
    const mp__jkeys keys = {names, N_SLOTS, MP__JK_ANY, NULL};
    nl_obj m;
    size_t mark = mp__jr_mark(&L->jr), depth = L->jr.n_path;
    if (i >= UINT32_MAX / 2)
        return mp__jr_err(&L->jr, MP_ERR_UNSUPPORTED, mp__jr_pos(&L->jr),
                          "graph too large");
    if (mp__grow(L->ctx, (void **)&L->nodes, sizeof *L->nodes, i + 1,
                &L->cap_nodes))
        return MP_ERR_NOMEM;
    memset(&L->nodes[i], 0, sizeof L->nodes[i]);
    L->n = i + 1;
    L->nodes[i].off = mp__jr_ws(&L->jr);
    mp_status st = read_members(L, &keys, "an object (a node)", &m);
    if (!st)
        st = node_names(L, &m, i);
    if (!st)
        st = node_costs(L, &m, &L->nodes[i]);
    mp__jr_path_cut(&L->jr, depth);
    mp__jr_release(&L->jr, mark);
    return st;
}

/* One end of link l (key: "source"/"target" or "0"/"1"): its node. */
static mp_status link_end(nl *L, const nl_obj *m, int k, uint32_t *out)
{
    static const char *const names[4] = {"source", "target", "0", "1"};
    if (!(m->o.seen >> k & 1))
        return mp__jr_err(&L->jr, MP_ERR_PARSE, m->o.off, "missing \"%s\"",
                          names[k]);
    mp__jr_push_key(&L->jr, names[k]);
    char *id = NULL;
    mp_status st = canon_id(L, &m->v[k], &id);
    if (st)
        return st;
    uint32_t n = mp__name_map_find(&L->id_map, L->nodes, id_at, id);
    if (n == MP_NONE)
        st = mp__jr_err(&L->jr, MP_ERR_GRAPH, m->v[k].off,
                        "no node with id %s", id);
    mp__dealloc(L->ctx, id);
    mp__jr_pop(&L->jr);
    *out = n;
    return st;
}

/* The next value: link l. */
static mp_status read_link(nl *L, size_t l)
{
    static const char *const names[] = {"source", "target", "0", "1"};
    static const mp__jkeys keys = {names, 4, MP__JK_ANY, NULL};
    nl_obj m;
    size_t mark = mp__jr_mark(&L->jr);
    if (l >= UINT32_MAX / 2)
        return mp__jr_err(&L->jr, MP_ERR_UNSUPPORTED, mp__jr_pos(&L->jr),
                          "graph too large");
    size_t c2 = L->cap_dst;
    if (mp__grow(L->ctx, (void **)&L->src, sizeof *L->src, l + 1,
                &L->cap_src) ||
        mp__grow(L->ctx, (void **)&L->dst, sizeof *L->dst, l + 1, &c2))
        return MP_ERR_NOMEM;
    L->cap_dst = c2;
    L->n_links = l + 1;
    mp_status st = read_members(L, &keys, "an object (a link)", &m);
    /* Moccasin writes the ends as "0" and "1" */
    int k = (m.o.seen & 1) || !(m.o.seen & 4) ? 0 : 2;
    if (!st)
        st = link_end(L, &m, k, &L->src[l]);
    if (!st)
        st = link_end(L, &m, k + 1, &L->dst[l]);
    if (!st && L->src[l] == L->dst[l])
        st = mp__jr_err(&L->jr, MP_ERR_CYCLE, m.o.off,
                        "self-loop on node id %s", L->nodes[L->src[l]].id);
    mp__jr_release(&L->jr, mark);
    return st;
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
    at_node(L, cur);
    return mp__jr_err(&L->jr, MP_ERR_CYCLE, L->nodes[cur].off,
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
        nl_node *nd = &L->nodes[i];
        if (!nd->dup)
            continue;
        size_t len = strlen(nd->name) + strlen(nd->id) + 2;
        char *s = mp__alloc(L->ctx, len);
        if (!s)
            return MP_ERR_NOMEM;
        snprintf(s, len, "%s#%s", nd->name, nd->id);
        mp__dealloc(L->ctx, nd->name);
        nd->name = s;
    }
    char *pname = NULL;
    for (size_t k = 0; k < n; k++) {
        uint32_t v = L->order[k];
        const nl_node *nn = &L->nodes[v];
        at_node(L, v);
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
        if (nn->param) {
            size_t len = strlen(nn->name) + 7;
            pname = mp__alloc(L->ctx, len);
            if (!pname)
                return MP_ERR_NOMEM;
            snprintf(pname, len, "%s.param", nn->name);
            td.name = pname;
            td.kind = MP_KIND_WEIGHT;
            uint32_t dummy;
            if (mp_graph_find_tensor(g, pname, &dummy) == MP_OK) {
                st = mp__jr_err(&L->jr, MP_ERR_DUPLICATE, nn->off,
                                "tensor name \"%s\" is taken", pname);
                mp__dealloc(L->ctx, pname);
                return st;
            }
            st = mp_graph_add_tensor(g, &td, &t);
            mp__dealloc(L->ctx, pname);
            if (st)
                return st;
            set_bytes(g, t, nn->param);
            L->ins[n_in++] = t;
        }
        td.name = nn->name;
        td.kind = nn->backward ? MP_KIND_GRADIENT : MP_KIND_ACTIVATION;
        uint32_t dummy;
        if (mp_graph_find_tensor(g, td.name, &dummy) == MP_OK)
            return mp__jr_err(&L->jr, MP_ERR_DUPLICATE, nn->off,
                              "name \"%s\" is used twice", td.name);
        if ((st = mp_graph_add_tensor(g, &td, &t)))
            return st;
        set_bytes(g, t, nn->ram);
        L->tid[v] = t;
        mp_node_desc nd;
        memset(&nd, 0, sizeof nd);
        nd.name = nn->name;
        nd.op = OP_NAME;
        nd.inputs = L->ins;
        nd.n_inputs = n_in;
        nd.outputs = &t;
        nd.n_outputs = 1;
        nd.phase = nn->backward ? MP_PHASE_BACKWARD : MP_PHASE_FORWARD;
        uint32_t id;
        if ((st = mp_graph_add_node(g, &nd, &id)))
            return st;
        if (nn->cpu >= 0 &&
            (st = mp_graph_set_node_cost(g, id, -1.0, -1.0, nn->cpu)))
            return st;
    }
    for (size_t i = 0; i < n; i++)
        if (L->out_begin[i] == L->out_begin[i + 1] &&
            (st = mp_graph_mark_output(g, L->tid[i])))
            return st;
    return MP_OK;
}

/* The value at off (at depth), an array, element by element with fn. */
static mp_status read_list(nl *L, size_t off, unsigned depth,
                           const char *key,
                           mp_status (*fn)(nl *L, size_t i))
{
    mp__jarr a;
    bool more;
    mp__jr_seek(&L->jr, off, depth);
    mp__jr_path_cut(&L->jr, 0);
    mp__jr_push_key(&L->jr, key);
    mp_status st = mp__jr_array(&L->jr, &a, NULL);
    while (!st && !(st = mp__jr_elem(&L->jr, &a, &more)) && more)
        st = fn(L, a.n - 1);
    return st;
}

/* "graph": its name and the node attributes' names (Moccasin's tags). */
static mp_status read_graph_attrs(nl *L, mp_graph *g)
{
    static const char *const names[] = {"node_output_cost_tag",
                                        "node_duration_tag",
                                        "node_param_cost_tag", "name"};
    static const mp__jkeys keys = {names, 4, MP__JK_ANY, NULL};
    mp__jval v;
    mp__jobj o;
    int k;
    mp_status st = mp__jr_value(&L->jr, &v);
    if (st || v.type != MP__JT_OBJECT)
        return st ? st : mp__jr_skip(&L->jr, &v);
    mp__jr_object_at(&L->jr, &o, &v, &keys);
    while (!(st = mp__jr_member(&L->jr, &o, &k)) && k != MP__JK_END) {
        if ((st = mp__jr_value(&L->jr, &v)) || (st = mp__jr_skip(&L->jr, &v)))
            return st;
        if (k < 0 || v.type != MP__JT_STRING)
            continue;
        const char *s = mp__jr_str(&L->jr, v.s);
        if (k == 3) {
            if ((st = mp_graph_set_name(g, s)))
                return st;
        } else if (!(L->tags[k] = mp__strdup(L->ctx, s))) {
            return MP_ERR_NOMEM;
        }
    }
    return st;
}

/* The top level: "directed" (its value v) must be true. */
static mp_status check_directed(nl *L, const mp__jval *v)
{
    if (v->type == MP__JT_TRUE)
        return MP_OK;
    mp__jr_push_key(&L->jr, "directed");
    if (v->type != MP__JT_FALSE)
        return mp__jr_type_err(&L->jr, v, "true or false");
    return mp__jr_err(&L->jr, MP_ERR_UNSUPPORTED, v->off,
                      "undirected graphs are not supported");
}

/* The top-level member k (its value v) must be an array. */
static mp_status check_list(nl *L, const mp__jobj *o, int k,
                            const mp__jval *v)
{
    static const char *const names[] = {"nodes", "links", "edges"};
    if (!(o->seen >> k & 1))
        return mp__jr_missing(&L->jr, o, names[k < 2 ? k : 1],
                              " (an array)");
    if (v->type == MP__JT_ARRAY)
        return MP_OK;
    mp__jr_push_key(&L->jr, names[k]);
    return mp__jr_type_err(&L->jr, v, "an array");
}

/* CSR arrays and the topological order, once n and m are known. */
static mp_status alloc_order(nl *L)
{
    size_t n1 = L->n + 1, m1 = L->n_links + 1;
    mp_ctx *ctx = L->ctx;
    if (!(L->in_begin = mp__calloc(ctx, n1, sizeof *L->in_begin)) ||
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
    return MP_OK;
}

enum { T_NODES, T_LINKS, T_EDGES, T_DIRECTED, T_GRAPH, T_N };

static mp_status load(nl *L, mp_graph *g)
{
    static const char *const names[] = {"nodes", "links", "edges",
                                        "directed", "graph"};
    static const mp__jkeys keys = {names, T_N, MP__JK_ANY, NULL};
    mp__jval top[T_N];
    mp__jobj o;
    mp_status st = mp__jr_read_doc(&L->jr, &o, &keys, mp__jr_keep, top);
    if (st || ((o.seen >> T_DIRECTED & 1) &&
               (st = check_directed(L, &top[T_DIRECTED]))))
        return st;
    if (o.seen >> T_GRAPH & 1) {
        mp__jr_seek(&L->jr, top[T_GRAPH].off, o.depth);
        if ((st = read_graph_attrs(L, g)))
            return st;
    }
    int lk = (o.seen >> T_LINKS & 1) || !(o.seen >> T_EDGES & 1) ? T_LINKS
                                                                 : T_EDGES;
    if ((st = check_list(L, &o, T_NODES, &top[T_NODES])) ||
        (st = check_list(L, &o, lk, &top[lk])) ||
        (st = read_list(L, top[T_NODES].off, o.depth, "nodes", read_node)) ||
        (st = read_list(L, top[lk].off, o.depth, names[lk], read_link)) ||
        (st = alloc_order(L)) || (st = topo_sort(L)))
        return st;
    /* what only the links and the sort needed goes before the graph is
     * built (the peak of a large load) */
    uint32_t **done[] = {&L->src, &L->dst, &L->heap, &L->indeg,
                         &L->out_list};
    for (size_t k = 0; k < sizeof done / sizeof done[0]; k++) {
        mp__dealloc(L->ctx, *done[k]);
        *done[k] = NULL;
    }
    mp__name_map_free(L->ctx, &L->id_map);
    mp__name_map_free(L->ctx, &L->name_map);
    if ((st = build_graph(L, g)))
        return st;
    /* the node times are in the file's own unit (Checkmate's cost_cpu is
     * a profiled cost, not seconds): named, so that no planner adds them
     * to seconds */
    return L->cpu_key ? mp_graph_set_cost_unit(g, L->cpu_key) : MP_OK;
}

mp_status mp__nodelink_read(mp_ctx *ctx, const char *text, size_t len,
                           const char *src, void *graph)
{
    mp_graph **out = graph;
    *out = NULL;
    nl L;
    memset(&L, 0, sizeof L);
    mp__jr_init(&L.jr, ctx, src, text, len, MP__JR_NUM64);
    L.ctx = ctx;
    mp_graph *g = NULL;
    mp_status st = mp_graph_create(ctx, &g);
    if (!st)
        st = load(&L, g);
    for (size_t i = 0; i < L.n; i++) {
        mp__dealloc(ctx, L.nodes[i].id);
        mp__dealloc(ctx, L.nodes[i].name);
    }
    void *arrays[] = {L.nodes, L.src, L.dst, L.in_begin, L.out_begin,
                      L.in_list, L.out_list, L.indeg, L.order, L.heap,
                      L.tid, L.stamp, L.ins, L.tags[0], L.tags[1],
                      L.tags[2]};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        mp__dealloc(ctx, arrays[k]);
    mp__name_map_free(ctx, &L.id_map);
    mp__name_map_free(ctx, &L.name_map);
    mp__jr_free(&L.jr);
    return mp__json_graph_done(ctx, st, g, src, out);
}

mp_status mp_graph_load_nodelink(mp_ctx *ctx, const char *path,
                                 mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_nodelink: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    return mp__json_load_file(ctx, path, mp__nodelink_read, out);
}
