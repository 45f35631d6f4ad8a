/* memplan JSON graph format, version 1 (docs/graph-format.md): reader
 * and writer, through the library's JSON reader and writer
 * (frontends/json/json.h). The writer is deterministic: fixed key order,
 * one tensor or node per line.
 *
 * Subgraphs (If/Loop/Scan bodies): a node attribute {"graph": {...}} holds
 * a graph of the same schema as the top level, plus "inputs" (its formal
 * inputs, in order). It is read by a reader of its own with the same
 * functions, nested up to MAX_SUB_DEPTH, into the IR the ONNX loader
 * builds (core/ir.h, core/ops/ops_control.c): the body is owned by the
 * node's graph (g->subgraphs, attribute "NAME.graph" its index); names a
 * body uses without declaring or producing them come from enclosing
 * scopes and become extra inputs of the node (after "body.inputs"
 * explicit ones); the node's extra last output "NODE:body" is the memory
 * its bodies need. The writer undoes that bookkeeping. */
#include "json.h"
#include "ops.h"
#include "shape.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FORMAT_NAME "memplan-graph"
#define FORMAT_VERSION 1

/* ---- reader -------------------------------------------------------------
 *
 * A streaming reader (a 100k-node graph is ~15 MB of JSON with ~300k
 * small objects): values are read as they come and every error names
 * file:line:column. A document whose top-level keys come in the writer's
 * order is read in one pass; any other order in two: the first finds the
 * top-level members (checking the syntax of the whole document), the
 * second reads "tensors", "inputs", "nodes" and "outputs" in that order. */
/* subgraphs nested deeper than this are refused (as the ONNX loader does) */
#define MAX_SUB_DEPTH 64

/* What an attribute holds. */
enum { A_INT, A_REAL, A_STRING, A_ARRAY, A_GRAPH };

typedef struct rd {
    mp__jr jr;
    mp_ctx *ctx;
    mp_graph *g;
    /* per tensor: first node reading it, input slot, offset of that
     * reference; declared (bit 0), listed in "outputs" (bit 1), a formal
     * input of a subgraph (bit 2) */
    uint32_t *ref_node, *ref_slot;
    size_t *ref_off;
    uint8_t *declared;
    /* per tensor, for the node being read (marks equal to stamp, which
     * changes with each node): read at input slot in_pos (in_mark), read
     * by a body of the node as outer[outer_pos] (outer_mark), listed in
     * its outputs (out_mark); so a node's checks are linear in its size */
    uint32_t *in_mark, *in_pos, *outer_mark, *outer_pos, *out_mark;
    uint32_t stamp;
    size_t cap_ref;
    /* a node being read: names (arena offsets) and their text offsets */
    size_t *in_s, *in_off, *out_s, *out_off;
    size_t n_in, n_out, cap_in, cap_out;
    uint32_t *ids, *oids;
    size_t cap_ids, cap_oids;
    struct rattr {
        size_t name_s, off, key_off;
        int type;          /* A_... */
        int64_t i;         /* A_GRAPH: index of the subgraph in g */
        double d;
        size_t s, first, n; /* A_ARRAY: elements in num pools */
        bool any_real;
    } *attrs;
    size_t n_attrs, cap_attrs;
    /* the node's attribute names (index in attrs), once it has more
     * than ATTR_MAP_MIN: duplicates found in constant time */
    mp__name_map attr_map;
    int64_t *pi;
    double *pd;
    size_t n_pool, cap_pi, cap_pd;
    /* subgraphs: the reader of the enclosing graph (NULL at the top), the
     * nesting depth, the path printed before this reader's own,
     * capacities of g->sub_inputs / g->sub_outputs */
    struct rd *parent;
    unsigned sub_depth;
    char prefix[384];
    size_t cap_sub_in, cap_sub_out;
    /* names the bodies of the node being read take from enclosing scopes,
     * each with the offset of its first use */
    struct outer_ref {
        const char *name;
        size_t off;
    } *outer;
    size_t n_outer, cap_outer;
} rd;

static const char *S(const rd *r, size_t s) { return mp__jr_str(&r->jr, s); }

static mp_status grow_refs(rd *r)
{
    size_t need = r->g->n_tensors;
    if (need <= r->cap_ref)
        return MP_OK;
    size_t ncap = r->cap_ref ? r->cap_ref : 64;
    while (ncap < need)
        ncap *= 2;
    void *a = mp__realloc_array(r->ctx, r->ref_node, ncap, sizeof(uint32_t));
    if (!a)
        return MP_ERR_NOMEM;
    r->ref_node = a;
    if (!(a = mp__realloc_array(r->ctx, r->ref_slot, ncap, sizeof(uint32_t))))
        return MP_ERR_NOMEM;
    r->ref_slot = a;
    if (!(a = mp__realloc_array(r->ctx, r->ref_off, ncap, sizeof(size_t))))
        return MP_ERR_NOMEM;
    r->ref_off = a;
    if (!(a = mp__realloc_array(r->ctx, r->declared, ncap, 1)))
        return MP_ERR_NOMEM;
    r->declared = a;
    uint32_t **marks[] = {&r->in_mark, &r->in_pos, &r->outer_mark,
                          &r->outer_pos, &r->out_mark};
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
        if (!(a = mp__realloc_array(r->ctx, *marks[k], ncap,
                                    sizeof(uint32_t))))
            return MP_ERR_NOMEM;
        *marks[k] = a;
    }
    for (size_t i = r->cap_ref; i < ncap; i++) {
        r->ref_node[i] = MP_NONE;
        r->ref_slot[i] = 0;
        r->ref_off[i] = 0;
        r->declared[i] = 0;
        r->in_mark[i] = r->outer_mark[i] = r->out_mark[i] = 0;
        r->in_pos[i] = r->outer_pos[i] = 0;
    }
    r->cap_ref = ncap;
    return MP_OK;
}

/* v as a string (nonempty: "" is an error), its arena offset in *s. */
static mp_status need_string(rd *r, const mp__jval *v, bool nonempty,
                             size_t *s)
{
    const char *text;
    mp_status st = mp__jr_string(&r->jr, v, nonempty, NULL, &text);
    *s = v->s;
    return st;
}

/* v is an integer of the JSON (the reader refuses any beyond 64 bits). */
static bool is_int(const mp__jval *v)
{
    return v->type == MP__JT_NUMBER && v->is_int;
}

static bool needs_producer(uint8_t kind);
static mp_status read_sub(rd *r, int64_t *idx);

/* ---- tensors ------------------------------------------------------------ */
static const char *const tensor_names[] = {"name", "dtype", "shape", "bytes",
                                           "kind", "fold"};
static const mp__jkeys tensor_keys = {tensor_names, 6, MP__JK_EXT, NULL};
enum { TK_NAME, TK_DTYPE, TK_SHAPE, TK_BYTES, TK_KIND, TK_FOLD };

/* A tensor being read. */
typedef struct rtensor {
    mp_tensor_desc d;
    int64_t dims[MP_MAX_RANK];
    size_t name_s, name_off, shape_off, bytes_off;
    bool bytes_given, shape_known, no_fold;
    uint64_t nbytes;
} rtensor;

/* "shape": an array of dims (-1 or null: unknown). */
static mp_status read_shape(rd *r, const mp__jval *v, rtensor *t)
{
    if (v->type != MP__JT_ARRAY)
        return mp__jr_type_err(&r->jr, v, "an array of integers");
    mp__jarr a;
    mp__jval e;
    bool more;
    size_t rank = 0, base = r->jr.n_path;
    mp_status st;
    mp__jr_array_at(&r->jr, &a, v);
    t->shape_off = v->off;
    t->shape_known = true;
    while (!(st = mp__jr_elem(&r->jr, &a, &more)) && more) {
        if (rank >= MP_MAX_RANK) {
            /* the real rank: the rest of the array counted */
            size_t n = rank;
            while (!st && more) {
                n++;
                if (!(st = mp__jr_skip_value(&r->jr)))
                    st = mp__jr_elem(&r->jr, &a, &more);
            }
            if (st)
                return st;
            mp__jr_path_cut(&r->jr, base);
            return mp__jr_err(&r->jr, MP_ERR_BAD_DIM, v->off,
                              "rank %zu is more than the %d supported",
                              n, MP_MAX_RANK);
        }
        if ((st = mp__jr_value(&r->jr, &e)))
            return st;
        if (e.type == MP__JT_NULL)
            t->dims[rank] = -1;
        else if (is_int(&e) && e.i < -1)
            return mp__jr_err(&r->jr, MP_ERR_BAD_DIM, e.off,
                              "dim %zu is negative (%lld): a dim is >= 0, "
                              "or -1 or null for unknown",
                              rank, (long long)e.i);
        else if (!is_int(&e))
            return mp__jr_type_err(&r->jr, &e, "an integer >= 0 (or -1 or "
                                               "null for unknown)");
        else
            t->dims[rank] = e.i;
        if (t->dims[rank] < 0)
            t->shape_known = false;
        rank++;
    }
    t->d.rank = (int)rank;
    t->d.dims = t->dims;
    return st;
}

/* One member of a tensor (key k), its value read into v. */
static mp_status tensor_member(rd *r, int k, const mp__jval *v, rtensor *t)
{
    size_t s;
    mp_status st;
    int64_t i;
    switch (k) {
    case TK_NAME:
        if ((st = need_string(r, v, true, &t->name_s)))
            return st;
        t->name_off = v->off;
        mp__jr_label_name(&r->jr, S(r, t->name_s));
        return MP_OK;
    case TK_DTYPE:
    case TK_KIND:
        if ((st = need_string(r, v, false, &s)))
            return st;
        if (k == TK_DTYPE ? mp_dtype_parse(S(r, s), &t->d.dtype) == MP_OK
                          : mp_kind_parse(S(r, s), &t->d.kind) == MP_OK)
            return MP_OK;
        return mp__jr_err(&r->jr, MP_ERR_PARSE, v->off,
                          "unknown %s \"%s\" (expected %s)", tensor_names[k],
                          S(r, s),
                          k == TK_DTYPE ? "float32, float16, bfloat16, "
                                          "int64, ..."
                                        : "activation, input, weight, "
                                          "constant, gradient, "
                                          "optimizer_state or output");
    case TK_FOLD:
        /* false: computed every step even from persistent inputs
         * (autocast's weight copies) */
        if (v->type != MP__JT_TRUE && v->type != MP__JT_FALSE)
            return mp__jr_type_err(&r->jr, v, "true or false");
        t->no_fold = v->type == MP__JT_FALSE;
        return MP_OK;
    case TK_BYTES:
        if ((st = mp__jr_i64(&r->jr, v, 0, INT64_MAX, "an integer >= 0", &i)))
            return st;
        t->nbytes = (uint64_t)i;
        t->bytes_given = true;
        t->bytes_off = v->off;
        return MP_OK;
    default: return read_shape(r, v, t);
    }
}

/* The element count and byte size must fit in 64 bits and agree with
 * "bytes" when both are known. */
static mp_status tensor_size(rd *r, const rtensor *t)
{
    const mp_tensor_desc *d = &t->d;
    if (d->rank < 0)
        return MP_OK;
    unsigned bits = mp_dtype_bits(d->dtype);
    uint64_t count = 1, b = 0;
    bool ok = true;
    for (int k = 0; k < d->rank && ok; k++)
        if (t->dims[k] >= 0)
            ok = mp__mul_u64(count, (uint64_t)t->dims[k], &count);
    if (ok && bits)
        ok = mp__mul_u64(count, bits, &b) && mp__add_u64(b, 7, &b);
    if (!ok) {
        mp__jr_push_key(&r->jr, "shape");
        return mp__jr_err(&r->jr, MP_ERR_OVERFLOW, t->shape_off,
                          "the tensor's %s overflows 64 bits",
                          bits ? "size in bytes" : "element count");
    }
    if (bits && t->shape_known && t->bytes_given && b / 8 != t->nbytes) {
        mp__jr_push_key(&r->jr, "bytes");
        return mp__jr_err(&r->jr, MP_ERR_SHAPE, t->bytes_off,
                          "%llu bytes disagree with the dtype and shape "
                          "(%llu bytes)",
                          (unsigned long long)t->nbytes,
                          (unsigned long long)(b / 8));
    }
    return MP_OK;
}

/* Adds the tensor read to the graph. */
static mp_status tensor_add(rd *r, rtensor *t)
{
    mp_tensor_desc *d = &t->d;
    d->name = S(r, t->name_s);
    d->bytes = t->bytes_given ? t->nbytes : 0;
    uint32_t id, prev;
    mp_status st = mp_graph_add_tensor(r->g, d, &id);
    if (st == MP_ERR_DUPLICATE &&
        mp_graph_find_tensor(r->g, d->name, &prev) == MP_OK) {
        mp__jr_push_key(&r->jr, "name");
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, t->name_off,
                          "duplicate tensor name \"%s\" (first declared at "
                          "tensors[%u])",
                          d->name, (unsigned)prev);
    }
    if (st)
        return st;
    if (t->no_fold)
        r->g->tensors[id].flags |= MP__TF_NO_FOLD;
    if (t->bytes_given && t->nbytes == 0) {
        r->g->tensors[id].bytes = 0;
        r->g->tensors[id].flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    }
    if ((st = grow_refs(r)))
        return st;
    r->declared[id] = 1;
    /* in a subgraph, the shape of an activation is a hint, as ONNX
     * value_info is: the body is inferred again for each use, and an
     * inferred shape that disagrees replaces it */
    if (r->parent && needs_producer(d->kind) && d->rank >= 0)
        r->g->tensors[id].flags |= MP__TF_SHAPE_HINT;
    return MP_OK;
}

static mp_status read_tensor(rd *r, size_t i)
{
    (void)i;
    mp__jobj o;
    mp__jval v;
    rtensor t;
    memset(&t, 0, sizeof t);
    t.d.rank = -1;
    t.d.kind = MP_KIND_ACTIVATION;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, &tensor_keys,
                                 "an object (a tensor)");
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &v)) &&
           k != MP__JK_END)
        st = tensor_member(r, k, &v, &t);
    if (st)
        return st;
    if (!(o.seen & (1u << TK_NAME)))
        return mp__jr_missing(&r->jr, &o, "name", NULL);
    if ((st = tensor_size(r, &t)))
        return st;
    return tensor_add(r, &t);
}

/* ---- nodes -------------------------------------------------------------- */
static const char *const node_names[] = {"name", "op", "domain", "inputs",
                                         "outputs", "attributes", "phase",
                                         "cost"};
static const mp__jkeys node_keys = {node_names, 8, MP__JK_EXT, NULL};
enum { NK_NAME, NK_OP, NK_DOMAIN, NK_INPUTS, NK_OUTPUTS, NK_ATTRS, NK_PHASE,
       NK_COST };
static const char *const cost_names[] = {"flops", "bytes", "seconds"};
static const mp__jkeys cost_keys = {cost_names, 3, MP__JK_EXT, NULL};

/* Reads an array of tensor names into (s, off) lists. */
static mp_status read_names(rd *r, bool inputs)
{
    mp__jarr a;
    mp__jval e;
    bool more;
    size_t n = 0;
    mp_status st = mp__jr_array(&r->jr, &a, NULL);
    while (!st && !(st = mp__jr_elem(&r->jr, &a, &more)) && more) {
        if ((st = mp__jr_value(&r->jr, &e)))
            return st;
        if (e.type != MP__JT_STRING)
            return mp__jr_type_err(&r->jr, &e,
                                   inputs ? "a tensor name (a string; \"\" "
                                            "for an omitted optional input)"
                                          : "a tensor name (a string)");
        if (!inputs && !e.n)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, e.off,
                              "an output needs a tensor name");
        size_t **ps = inputs ? &r->in_s : &r->out_s;
        size_t **po = inputs ? &r->in_off : &r->out_off;
        size_t *cap = inputs ? &r->cap_in : &r->cap_out;
        if (n + 1 > *cap) {
            size_t c2 = *cap;
            if (mp__grow(r->ctx, (void **)ps, sizeof **ps, n + 1, cap))
                return MP_ERR_NOMEM;
            if (mp__grow(r->ctx, (void **)po, sizeof **po, n + 1, &c2))
                return MP_ERR_NOMEM;
        }
        (*ps)[n] = e.s;
        (*po)[n] = e.off;
        n++;
    }
    if (st)
        return st;
    if (n > UINT32_MAX / 2)
        return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, a.off,
                          "too many tensors");
    if (inputs)
        r->n_in = n;
    else
        r->n_out = n;
    return MP_OK;
}

static mp_status pool_push(rd *r, int64_t i, double d)
{
    if (r->n_pool + 1 > r->cap_pi) {
        size_t c2 = r->cap_pi;
        if (mp__grow(r->ctx, (void **)&r->pi, sizeof *r->pi, r->n_pool + 1,
                    &r->cap_pi) ||
            mp__grow(r->ctx, (void **)&r->pd, sizeof *r->pd, r->n_pool + 1,
                    &c2))
            return MP_ERR_NOMEM;
        r->cap_pd = c2;
    }
    r->pi[r->n_pool] = i;
    r->pd[r->n_pool] = d;
    r->n_pool++;
    return MP_OK;
}

/* The object value v of an attribute: {"graph": {...}}, a subgraph, read
 * and attached to r->g (at->i its index). */
static mp_status read_graph_attr(rd *r, const mp__jval *v, struct rattr *at)
{
    static const char *const names[] = {"graph"};
    static const mp__jkeys keys = {names, 1, 0,
                                   "one key, \"graph\": a subgraph"};
    mp__jobj o;
    int k;
    mp_status st;
    mp__jr_object_at(&r->jr, &o, v, &keys);
    while (!(st = mp__jr_member(&r->jr, &o, &k)) && k != MP__JK_END)
        if ((st = read_sub(r, &at->i)))
            return st;
    if (st)
        return st;
    if (!o.seen)
        return mp__jr_missing(&r->jr, &o, "graph",
                              " (an attribute object holds a subgraph)");
    at->type = A_GRAPH;
    return MP_OK;
}

/* The array value v of an attribute: numbers into the pools. */
static mp_status read_attr_array(rd *r, const mp__jval *v, struct rattr *at)
{
    mp__jarr a;
    mp__jval x;
    bool more;
    mp_status st;
    at->type = A_ARRAY;
    at->first = r->n_pool;
    mp__jr_array_at(&r->jr, &a, v);
    while (!(st = mp__jr_elem(&r->jr, &a, &more)) && more) {
        if ((st = mp__jr_value(&r->jr, &x)))
            return st;
        if (x.type != MP__JT_NUMBER)
            return mp__jr_type_err(&r->jr, &x, "a number (attribute arrays "
                                               "hold numbers)");
        if (!x.is_int)
            at->any_real = true;
        if ((st = pool_push(r, x.i, x.d)))
            return st;
        at->n++;
    }
    if (!st && at->n > UINT32_MAX)
        return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, v->off,
                          "too many values");
    return st;
}

/* One attribute's value (its key on the path). */
static mp_status read_attr(rd *r, struct rattr *at)
{
    mp__jval e;
    mp_status st = mp__jr_value(&r->jr, &e);
    if (st)
        return st;
    at->off = e.off;
    switch (e.type) {
    case MP__JT_NUMBER:
        at->type = e.is_int ? A_INT : A_REAL;
        at->i = e.i;
        at->d = e.d;
        break;
    case MP__JT_STRING: at->type = A_STRING; at->s = e.s; break;
    case MP__JT_ARRAY: st = read_attr_array(r, &e, at); break;
    case MP__JT_OBJECT: st = read_graph_attr(r, &e, at); break;
    default:
        return mp__jr_type_err(&r->jr, &e, "a number, a string, an array of "
                                           "numbers or {\"graph\": {...}}");
    }
    if (st)
        return st;
    /* the names the reader gives a node with subgraphs */
    const char *key = S(r, at->name_s);
    size_t kl = strlen(key);
    if (at->type != A_GRAPH &&
        (strcmp(key, "body.inputs") == 0 ||
         (kl > 6 && strcmp(key + kl - 6, ".graph") == 0)))
        return mp__jr_err(&r->jr, MP_ERR_PARSE, at->key_off,
                          "attribute \"%s\" is reserved: a subgraph is "
                          "written \"NAME\": {\"graph\": {...}}",
                          key);
    return MP_OK;
}

#define ATTR_MAP_MIN 8u

static const char *rattr_name_of(const void *owner, uint32_t idx)
{
    const rd *r = owner;
    return S(r, r->attrs[idx].name_s);
}

/* True when the node being read already has an attribute named key. */
static mp_status attr_seen(rd *r, const char *key, bool *seen)
{
    *seen = false;
    if (r->n_attrs < ATTR_MAP_MIN) {
        for (size_t a = 0; a < r->n_attrs && !*seen; a++)
            *seen = strcmp(S(r, r->attrs[a].name_s), key) == 0;
        return MP_OK;
    }
    if (r->attr_map.count == 0) /* the first ATTR_MAP_MIN names */
        for (uint32_t a = 0; a < (uint32_t)r->n_attrs; a++)
            if (mp__name_map_insert(r->ctx, &r->attr_map, r, rattr_name_of,
                                   S(r, r->attrs[a].name_s), a, NULL))
                return MP_ERR_NOMEM;
    mp_status st = mp__name_map_insert(r->ctx, &r->attr_map, r, rattr_name_of,
                                      key, (uint32_t)r->n_attrs, NULL);
    if (st == MP_ERR_DUPLICATE)
        *seen = true;
    return st == MP_ERR_DUPLICATE ? MP_OK : st;
}

static mp_status read_attrs(rd *r)
{
    mp__jobj o;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, NULL, NULL);
    while (!st && !(st = mp__jr_member(&r->jr, &o, &k)) && k != MP__JK_END) {
        const char *key = mp__jr_key(&r->jr, &o);
        if (!key[0])
            return mp__jr_err(&r->jr, MP_ERR_PARSE, o.key_off,
                              "an attribute needs a name");
        bool seen;
        if (r->n_attrs >= UINT32_MAX - 1)
            return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, o.key_off,
                              "too many attributes");
        if ((st = attr_seen(r, key, &seen)))
            return st;
        if (seen)
            return mp__jr_dup_key(&r->jr, &o);
        if (mp__grow(r->ctx, (void **)&r->attrs, sizeof *r->attrs,
                    r->n_attrs + 1, &r->cap_attrs))
            return MP_ERR_NOMEM;
        struct rattr *at = &r->attrs[r->n_attrs];
        memset(at, 0, sizeof *at);
        at->name_s = o.key;
        at->key_off = o.key_off;
        mp__jr_push_key(&r->jr, key);
        if ((st = read_attr(r, at)))
            return st;
        mp__jr_pop(&r->jr);
        r->n_attrs++;
    }
    return st;
}

static mp_status read_cost(rd *r, double *c)
{
    mp__jobj o;
    mp__jval e;
    int k;
    mp_status st = mp__jr_object(&r->jr, &o, &cost_keys,
                                 "an object with flops, bytes, seconds");
    while (!st && !(st = mp__jr_next(&r->jr, &o, &k, &e)) &&
           k != MP__JK_END)
        st = mp__jr_num(&r->jr, &e, 0, "a number >= 0", &c[k]);
    return st;
}

/* Tensor id by name, creating an implicit activation when unknown. */
static mp_status tensor_ref(rd *r, const char *name, uint32_t *id)
{
    if (mp_graph_find_tensor(r->g, name, id) == MP_OK)
        return MP_OK;
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.rank = -1;
    d.kind = MP_KIND_ACTIVATION;
    mp_status st = mp_graph_add_tensor(r->g, &d, id);
    return st ? st : grow_refs(r);
}

/* A constant source (the registry's MP__OPF_CONSTANT: Constant) gets its
 * output's dtype, shape and small value from its attributes, as the ONNX
 * loader sets them from the value tensor: "value.dtype", "value.dims" and
 * "value.ints" (how the loader keeps a tensor attribute,
 * frontends/onnx/onnx.c), or value_int, value_ints, value_float, value_floats.
 * A declared dtype and shape are kept; the value is stored when its
 * element count is the tensor's. */
static mp_status constant_value(mp_graph *g, uint32_t node)
{
    const mp__node *n = &g->nodes[node];
    /* before finalize, which sets n->def */
    const mp__op_def *def = mp__op_lookup(n->op, n->domain);
    if (!(def->flags & MP__OPF_CONSTANT) || !n->n_out)
        return MP_OK;
    const mp__attr *dt = mp__node_attr(n, "value.dtype");
    const mp__attr *dims = mp__node_attr(n, "value.dims");
    const mp__attr *a;
    int dtype;
    int32_t rank;
    int64_t d[MP_MAX_RANK], bits;
    const int64_t *v = NULL;
    uint32_t nv = 0;
    if (dt && dt->type == MP__ATTR_INT && dims && dims->type == MP__ATTR_INTS &&
        dims->n <= MP_MAX_RANK) {
        const mp__attr *ints = mp__node_attr(n, "value.ints");
        dtype = dt->v.i >= 0 && dt->v.i < 256 ? (int)dt->v.i : 0;
        rank = (int32_t)dims->n;
        for (int32_t k = 0; k < rank; k++)
            d[k] = dims->v.ints[k];
        if (ints && ints->type == MP__ATTR_INTS && mp__dtype_is_int(dtype)) {
            v = ints->v.ints;
            nv = ints->n;
        }
    } else if ((a = mp__node_attr(n, "value_int")) && a->type == MP__ATTR_INT) {
        dtype = MP_DTYPE_INT64;
        rank = 0;
        v = &a->v.i;
        nv = 1;
    } else if ((a = mp__node_attr(n, "value_ints")) &&
               a->type == MP__ATTR_INTS) {
        dtype = MP_DTYPE_INT64;
        rank = 1;
        d[0] = a->n;
        v = a->v.ints;
        nv = a->n;
    } else if ((a = mp__node_attr(n, "value_float")) &&
               (a->type == MP__ATTR_FLOAT || a->type == MP__ATTR_INT)) {
        double x = a->type == MP__ATTR_FLOAT ? a->v.f : (double)a->v.i;
        memcpy(&bits, &x, sizeof bits);
        dtype = MP_DTYPE_FLOAT32;
        rank = 0;
        v = &bits;
        nv = 1;
    } else if ((a = mp__node_attr(n, "value_floats")) &&
               (a->type == MP__ATTR_FLOATS || a->type == MP__ATTR_INTS)) {
        dtype = MP_DTYPE_FLOAT32;
        rank = 1;
        d[0] = a->n;
    } else {
        return MP_OK;
    }
    mp__tensor *t = &g->tensors[n->outputs[0]];
    if (!dtype || !mp_dtype_name((mp_dtype)dtype))
        return MP_OK;
    for (int32_t k = 0; k < rank; k++)
        if (d[k] < 0)
            return MP_OK;
    if (t->dtype == MP_DTYPE_UNDEFINED)
        t->dtype = (uint8_t)dtype;
    mp_status st = MP_OK;
    if (t->rank < 0 && !(t->flags & MP__TF_BYTES_GIVEN))
        st = mp__tensor_set_shape(g->ctx, t, rank, d);
    uint64_t count = 1;
    for (int32_t k = 0; k < t->rank && count; k++)
        if (t->dims[k] < 0 || !mp__mul_u64(count, (uint64_t)t->dims[k], &count))
            count = 0;
    if (!st && v && nv && !t->value && t->dtype == dtype && t->rank >= 0 &&
        count == nv)
        st = mp__tensor_set_value(g->ctx, t, v, nv);
    return st;
}

/* A node being read: what its members give. */
typedef struct rnode {
    mp_node_desc d;
    size_t name_s, name_off, op_s, dom_s;
    bool has_dom;
    double cost[3];
} rnode;

/* One member of a node (key k; its value is the next one). */
static mp_status node_member(rd *r, int k, rnode *n)
{
    mp__jval v;
    mp_status st = MP_OK;
    size_t s;
    switch (k) {
    case NK_INPUTS: return read_names(r, true);
    case NK_OUTPUTS: return read_names(r, false);
    case NK_ATTRS: return read_attrs(r);
    case NK_COST: return read_cost(r, n->cost);
    }
    if ((st = mp__jr_value(&r->jr, &v)) ||
        (st = need_string(r, &v, k == NK_NAME || k == NK_OP, &s)))
        return st;
    if (k == NK_NAME) {
        n->name_s = s;
        n->name_off = v.off;
        mp__jr_label_name(&r->jr, S(r, s));
    } else if (k == NK_OP) {
        n->op_s = s;
    } else if (k == NK_DOMAIN) {
        n->dom_s = s;
        n->has_dom = true;
    } else if (mp_phase_parse(S(r, s), &n->d.phase) != MP_OK) {
        return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                          "unknown phase \"%s\" (expected forward, "
                          "backward or optimizer)",
                          S(r, s));
    }
    return MP_OK;
}

/* The node's input tensors (r->ids): its "inputs", then the names its
 * bodies take from enclosing scopes (once; the first use inside the body
 * is where an error points). *n_all: how many. */
static mp_status node_inputs(rd *r, size_t idx, size_t *n_all)
{
    mp_status st;
    for (size_t k = 0; k < r->n_in; k++) {
        const char *tn = S(r, r->in_s[k]);
        if (!tn[0]) {
            r->ids[k] = MP_NONE;
            continue;
        }
        if ((st = tensor_ref(r, tn, &r->ids[k])))
            return st;
        uint32_t t = r->ids[k];
        if (r->in_mark[t] != r->stamp) {
            r->in_mark[t] = r->stamp;
            r->in_pos[t] = (uint32_t)k;
        }
        if (r->ref_node[t] == MP_NONE) {
            r->ref_node[t] = (uint32_t)idx;
            r->ref_slot[t] = (uint32_t)k;
            r->ref_off[t] = r->in_off[k];
        }
    }
    *n_all = r->n_in;
    for (size_t k = 0; k < r->n_outer; k++) {
        uint32_t t;
        if ((st = tensor_ref(r, r->outer[k].name, &t)))
            return st;
        bool dup = r->in_mark[t] == r->stamp || r->outer_mark[t] == r->stamp;
        if (r->outer_mark[t] != r->stamp) {
            r->outer_mark[t] = r->stamp;
            r->outer_pos[t] = (uint32_t)k;
        }
        if (dup)
            continue;
        if (r->ref_node[t] == MP_NONE) {
            r->ref_node[t] = (uint32_t)idx;
            r->ref_slot[t] = (uint32_t)*n_all;
            r->ref_off[t] = r->outer[k].off;
        }
        r->ids[(*n_all)++] = t;
    }
    return MP_OK;
}

/* Output k of the node, tensor t named tn (off: where it is named): one
 * producer, not a subgraph input, not twice, not read by the node. */
static mp_status node_output(rd *r, size_t k, uint32_t t, const char *tn,
                             size_t off)
{
    mp_graph *g = r->g;
    uint32_t p = g->tensors[t].producer;
    if (p != MP_NONE)
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, off,
                          "tensor \"%s\" is already produced by nodes[%u] "
                          "(\"%s\"): a tensor has one producer",
                          tn, (unsigned)p, g->nodes[p].name);
    if (r->declared[t] & 4)
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, off,
                          "tensor \"%s\" is an input of the subgraph: no "
                          "node produces it",
                          tn);
    (void)k;
    if (r->out_mark[t] == r->stamp)
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, off,
                          "tensor \"%s\" is listed twice as an output",
                          tn);
    r->out_mark[t] = r->stamp;
    if (r->in_mark[t] == r->stamp)
        return mp__jr_err(&r->jr, MP_ERR_CYCLE, off,
                          "the node reads its own output \"%s\" "
                          "(inputs[%u])",
                          tn, (unsigned)r->in_pos[t]);
    if (r->outer_mark[t] == r->stamp) /* where it is read */
        return mp__jr_err(&r->jr, MP_ERR_CYCLE,
                          r->outer[r->outer_pos[t]].off,
                          "a subgraph of the node reads its own output "
                          "\"%s\"",
                          tn);
    return MP_OK;
}

/* The node's output tensors (r->oids): its "outputs", and for a node
 * with bodies (n_body) its last output NODE:body. */
static mp_status node_outputs(rd *r, const rnode *n, size_t obj_off,
                              size_t n_body, size_t *n_outs)
{
    char *body_name = NULL;
    mp_status st = MP_OK;
    if (n_body) {
        size_t nl = strlen(S(r, n->name_s));
        if (!(body_name = mp__alloc(r->ctx, nl + 6)))
            return MP_ERR_NOMEM;
        memcpy(body_name, S(r, n->name_s), nl);
        memcpy(body_name + nl, ":body", 6);
    }
    mp__jr_push_key(&r->jr, "outputs");
    *n_outs = r->n_out + (n_body ? 1 : 0);
    for (size_t k = 0; k < *n_outs && !st; k++) {
        bool made = k == r->n_out;
        const char *tn = made ? body_name : S(r, r->out_s[k]);
        mp__jr_push_index(&r->jr, k);
        if (!(st = tensor_ref(r, tn, &r->oids[k])))
            st = node_output(r, k, r->oids[k], tn,
                             made ? obj_off : r->out_off[k]);
        mp__jr_pop(&r->jr);
    }
    mp__dealloc(r->ctx, body_name);
    if (!st)
        mp__jr_pop(&r->jr);
    return st;
}

/* The node's attributes; for a node with bodies, then (as the ONNX loader
 * does) body.inputs and NAME.graph, the index of each body in g. */
static mp_status node_attrs(rd *r, uint32_t id, size_t n_body)
{
    mp_graph *g = r->g;
    mp_status st = MP_OK;
    for (size_t a = 0; a < r->n_attrs && !st; a++) {
        const struct rattr *at = &r->attrs[a];
        const char *an = S(r, at->name_s);
        switch (at->type) {
        case A_GRAPH: break; /* below */
        case A_INT: st = mp_graph_set_attr_int(g, id, an, at->i); break;
        case A_REAL: st = mp_graph_set_attr_float(g, id, an, at->d); break;
        case A_STRING:
            st = mp_graph_set_attr_string(g, id, an, S(r, at->s));
            break;
        default:
            /* an empty array: the pools may not exist (NULL + 0 is UB) */
            if (at->any_real)
                st = mp_graph_set_attr_floats(
                    g, id, an, at->n ? r->pd + at->first : NULL,
                    (uint32_t)at->n);
            else
                st = mp_graph_set_attr_ints(
                    g, id, an, at->n ? r->pi + at->first : NULL,
                    (uint32_t)at->n);
        }
    }
    if (!st && n_body)
        st = mp_graph_set_attr_int(g, id, "body.inputs", (int64_t)r->n_in);
    for (size_t a = 0; a < r->n_attrs && !st; a++) {
        if (r->attrs[a].type != A_GRAPH)
            continue;
        char key[512];
        snprintf(key, sizeof key, "%s.graph", S(r, r->attrs[a].name_s));
        st = mp_graph_set_attr_int(g, id, key, r->attrs[a].i);
    }
    return st;
}

/* The members of a node object into n (and r's lists). */
static mp_status node_read(rd *r, mp__jobj *o, rnode *n)
{
    int k;
    mp_status st = mp__jr_object(&r->jr, o, &node_keys, "an object (a node)");
    while (!st && !(st = mp__jr_member(&r->jr, o, &k)) && k != MP__JK_END)
        st = node_member(r, k, n);
    if (st)
        return st;
    if (!(o->seen & (1u << NK_NAME)))
        return mp__jr_missing(&r->jr, o, "name", NULL);
    if (!(o->seen & (1u << NK_OP)))
        return mp__jr_missing(&r->jr, o, "op", NULL);
    if (!(o->seen & (1u << NK_INPUTS)))
        return mp__jr_missing(&r->jr, o, "inputs", " (an array)");
    if (!(o->seen & (1u << NK_OUTPUTS)))
        return mp__jr_missing(&r->jr, o, "outputs", " (an array)");
    return MP_OK;
}

static mp_status read_node(rd *r, size_t idx)
{
    mp_graph *g = r->g;
    mp__jobj o;
    rnode n;
    memset(&n, 0, sizeof n);
    n.d.phase = MP_PHASE_FORWARD;
    n.cost[0] = n.cost[1] = n.cost[2] = -1.0;
    r->n_in = r->n_out = r->n_attrs = r->n_pool = r->n_outer = 0;
    if (r->attr_map.count)
        mp__name_map_free(r->ctx, &r->attr_map);
    r->stamp++;
    mp_status st = node_read(r, &o, &n);
    if (st)
        return st;
    mp_node_desc *d = &n.d;
    d->name = S(r, n.name_s);
    d->op = S(r, n.op_s);
    d->domain = n.has_dom ? S(r, n.dom_s) : NULL;
    uint32_t prev;
    if (mp_graph_find_node(g, d->name, &prev) == MP_OK) {
        mp__jr_push_key(&r->jr, "name");
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, n.name_off,
                          "duplicate node name \"%s\" (first at nodes[%u])",
                          d->name, (unsigned)prev);
    }
    size_t n_body = 0, n_all, n_outs;
    for (size_t a = 0; a < r->n_attrs; a++)
        n_body += r->attrs[a].type == A_GRAPH;
    if (mp__grow(r->ctx, (void **)&r->ids, sizeof *r->ids,
                r->n_in + r->n_outer + 1, &r->cap_ids) ||
        mp__grow(r->ctx, (void **)&r->oids, sizeof *r->oids, r->n_out + 2,
                &r->cap_oids))
        return MP_ERR_NOMEM;
    if ((st = node_inputs(r, idx, &n_all)) ||
        (st = node_outputs(r, &n, o.off, n_body, &n_outs)))
        return st;
    d->inputs = r->ids;
    d->n_inputs = (uint32_t)n_all;
    d->outputs = r->oids;
    d->n_outputs = (uint32_t)n_outs;
    uint32_t id;
    if ((st = mp_graph_add_node(g, d, &id)) ||
        (st = node_attrs(r, id, n_body)) || (st = constant_value(g, id)))
        return st;
    if ((o.seen & (1u << NK_COST)) &&
        (st = mp_graph_set_node_cost(g, id, n.cost[0], n.cost[1],
                                     n.cost[2])))
        return st;
    return MP_OK;
}

static bool needs_producer(uint8_t kind)
{
    return kind == MP_KIND_ACTIVATION || kind == MP_KIND_GRADIENT ||
           kind == MP_KIND_OUTPUT;
}

/* Reads an array of tensor names, calling fn with each name and its
 * offset (the path at the name). */
static mp_status read_name_list(rd *r,
                                mp_status (*fn)(rd *r, const char *tn,
                                                size_t off))
{
    mp__jarr a;
    mp__jval e;
    bool more;
    size_t mark = mp__jr_mark(&r->jr);
    mp_status st = mp__jr_array(&r->jr, &a, NULL);
    while (!st && !(st = mp__jr_elem(&r->jr, &a, &more)) && more) {
        mp__jr_release(&r->jr, mark);
        if ((st = mp__jr_value(&r->jr, &e)))
            return st;
        if (e.type != MP__JT_STRING)
            return mp__jr_type_err(&r->jr, &e, "a tensor name (a string)");
        st = fn(r, S(r, e.s), e.off);
    }
    return st;
}

/* One name of the top level's "outputs". */
static mp_status top_output(rd *r, const char *tn, size_t off)
{
    mp_graph *g = r->g;
    uint32_t t;
    if (mp_graph_find_tensor(g, tn, &t) != MP_OK)
        return mp__jr_err(&r->jr, MP_ERR_NO_PRODUCER, off,
                          "no tensor named \"%s\"", tn);
    const mp__tensor *tt = &g->tensors[t];
    if (r->declared[t] & 2)
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, off,
                          "\"%s\" is listed twice", tn);
    r->declared[t] |= 2;
    if (tt->producer == MP_NONE && needs_producer(tt->declared_kind))
        return mp__jr_err(&r->jr, MP_ERR_NO_PRODUCER, off,
                          "output \"%s\" (%s) is not produced by any node",
                          tn,
                          mp_kind_name((mp_tensor_kind)tt->declared_kind));
    return mp_graph_mark_output(g, t);
}

/* A name of a subgraph's "inputs" (input) or "outputs": its tensor in
 * *t, appended to the list (g->sub_inputs or g->sub_outputs). */
static mp_status sub_name(rd *r, const char *tn, size_t off, bool input,
                          uint32_t *t)
{
    mp_graph *g = r->g;
    uint32_t **ids = input ? &g->sub_inputs : &g->sub_outputs;
    uint32_t *n = input ? &g->n_sub_inputs : &g->n_sub_outputs;
    if (!tn[0])
        return mp__jr_err(&r->jr, MP_ERR_PARSE, off,
                          "an %s needs a tensor name",
                          input ? "input" : "output");
    mp_status st = tensor_ref(r, tn, t);
    if (!st)
        st = mp__grow(r->ctx, (void **)ids, sizeof **ids, *n + 1,
                     input ? &r->cap_sub_in : &r->cap_sub_out);
    if (!st)
        (*ids)[(*n)++] = *t;
    return st;
}

/* One name of a subgraph's "outputs": its formal outputs, in order (a
 * name may come twice, or from an enclosing scope). */
static mp_status sub_output(rd *r, const char *tn, size_t off)
{
    uint32_t t;
    mp_status st = sub_name(r, tn, off, false, &t);
    if (st)
        return st;
    if (!(r->declared[t] & 2) && r->ref_node[t] == MP_NONE)
        r->ref_off[t] = off;
    r->declared[t] |= 2;
    return mp_graph_mark_output(r->g, t);
}

/* One name of a subgraph's "inputs": its formal inputs, in order
 * (declared in "tensors" or not; their kind is input). */
static mp_status sub_input(rd *r, const char *tn, size_t off)
{
    uint32_t t;
    mp_status st = sub_name(r, tn, off, true, &t);
    if (st)
        return st;
    mp__tensor *tt = &r->g->tensors[t];
    if (r->declared[t] & 4)
        return mp__jr_err(&r->jr, MP_ERR_DUPLICATE, off,
                          "\"%s\" is listed twice", tn);
    if (tt->declared_kind != MP_KIND_ACTIVATION &&
        tt->declared_kind != MP_KIND_INPUT)
        return mp__jr_err(&r->jr, MP_ERR_PARSE, off,
                          "\"%s\" is declared with kind %s: an input of a "
                          "subgraph has kind input",
                          tn,
                          mp_kind_name((mp_tensor_kind)tt->declared_kind));
    tt->kind = tt->declared_kind = MP_KIND_INPUT;
    tt->flags &= (uint8_t)~MP__TF_SHAPE_HINT;
    r->declared[t] |= 4;
    return MP_OK;
}

/* Every tensor a node reads must be produced by a node or be a source
 * (input, weight, constant, optimizer state). */
static mp_status check_sources(rd *r)
{
    mp_graph *g = r->g;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || r->ref_node[t] == MP_NONE ||
            !needs_producer(tt->declared_kind))
            continue;
        uint32_t nd = r->ref_node[t];
        mp__jr_path_cut(&r->jr, 0);
        mp__jr_push_key(&r->jr, "nodes");
        mp__jr_push_index(&r->jr, nd);
        mp__jr_label_name(&r->jr, g->nodes[nd].name);
        const mp__attr *bi = mp__node_attr(&g->nodes[nd], "body.inputs");
        if (bi && bi->type == MP__ATTR_INT && r->ref_slot[t] >= bi->v.i)
            return mp__jr_err(&r->jr, MP_ERR_NO_PRODUCER, r->ref_off[t],
                              "\"%s\", used in a subgraph of the node, is "
                              "neither declared nor produced in it or in an "
                              "enclosing graph",
                              tt->name);
        mp__jr_push_key(&r->jr, "inputs");
        mp__jr_push_index(&r->jr, r->ref_slot[t]);
        if (!(r->declared[t] & 1))
            return mp__jr_err(&r->jr, MP_ERR_NO_PRODUCER, r->ref_off[t],
                              "input \"%s\" is neither declared in "
                              "\"tensors\" nor produced by any node",
                              tt->name);
        return mp__jr_err(&r->jr, MP_ERR_NO_PRODUCER, r->ref_off[t],
                          "input \"%s\" (%s) is not produced by any node: "
                          "declare it with kind input, weight or constant",
                          tt->name,
                          mp_kind_name((mp_tensor_kind)tt->declared_kind));
    }
    return MP_OK;
}

/* The end of a subgraph: a name it reads (or lists as an output) that it
 * neither produces nor holds as a formal input, weight or constant comes
 * from an enclosing scope: its kind becomes input, and the enclosing
 * reader makes it an extra input of the node that owns the subgraph. */
static mp_status sub_sources(rd *r)
{
    mp_graph *g = r->g;
    rd *up = r->parent;
    for (size_t t = 0; t < g->n_tensors; t++) {
        mp__tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || (r->declared[t] & 4) ||
            (!needs_producer(tt->declared_kind) &&
             tt->declared_kind != MP_KIND_INPUT) ||
            (r->ref_node[t] == MP_NONE && !(r->declared[t] & 2)))
            continue;
        tt->kind = tt->declared_kind = MP_KIND_INPUT;
        if (mp__grow(r->ctx, (void **)&up->outer, sizeof *up->outer,
                    up->n_outer + 1, &up->cap_outer))
            return MP_ERR_NOMEM;
        up->outer[up->n_outer].name = tt->name;
        up->outer[up->n_outer].off = r->ref_off[t];
        up->n_outer++;
    }
    return MP_OK;
}

/* ---- the top level ------------------------------------------------------ */
static const char *const top_names[] = {"format", "version", "name",
                                        "tensors", "nodes", "outputs",
                                        "metadata", "inputs", "opset",
                                        "cost_unit"};
enum { TOP_FORMAT, TOP_VERSION, TOP_NAME, TOP_TENSORS, TOP_NODES,
       TOP_OUTPUTS, TOP_METADATA, TOP_INPUTS, TOP_OPSET, TOP_COST_UNIT,
       TOP_N };
/* while reading: every key comes to the caller */
static const mp__jkeys top_read = {top_names, TOP_N, MP__JK_ANY, NULL};
/* for messages: the keys of the top level, and of a subgraph */
static const mp__jkeys top_keys = {
    top_names, TOP_N, MP__JK_EXT,
    "format, version, name, opset, cost_unit, tensors, nodes, outputs or "
    "metadata"};
static const mp__jkeys sub_keys = {
    top_names, TOP_N, MP__JK_EXT,
    "format, version, name, inputs, tensors, nodes, outputs or metadata"};

/* The next value, an array, element by element with fn; the strings of
 * an element are dropped after it. */
static mp_status read_list(rd *r, mp_status (*fn)(rd *r, size_t i))
{
    mp__jarr a;
    bool more;
    size_t mark = mp__jr_mark(&r->jr);
    mp_status st = mp__jr_array(&r->jr, &a, NULL);
    while (!st && !(st = mp__jr_elem(&r->jr, &a, &more)) && more) {
        st = fn(r, a.n - 1);
        mp__jr_release(&r->jr, mark);
    }
    return st;
}

/* "format" and "version" (k), the next value. */
static mp_status read_format(rd *r, int k)
{
    mp__jval v;
    mp_status st = mp__jr_value(&r->jr, &v);
    if (st)
        return st;
    if (k == TOP_FORMAT) {
        if (v.type != MP__JT_STRING)
            return mp__jr_type_err(&r->jr, &v,
                                   "the string \"" FORMAT_NAME "\"");
        if (strcmp(S(r, v.s), FORMAT_NAME) != 0)
            return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, v.off,
                              "format \"%s\" is not supported (expected "
                              "\"" FORMAT_NAME "\")",
                              S(r, v.s));
        return MP_OK;
    }
    if (!is_int(&v))
        return mp__jr_type_err(&r->jr, &v, "an integer");
    if (v.i != FORMAT_VERSION)
        return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, v.off,
                          "version %lld is not supported (this memplan "
                          "reads version %d)",
                          (long long)v.i, FORMAT_VERSION);
    return MP_OK;
}

/* "name", "opset", "cost_unit" and "metadata" (k), the next value. */
static mp_status read_header(rd *r, int k)
{
    mp__jval v;
    size_t s;
    mp_status st = mp__jr_value(&r->jr, &v);
    if (st)
        return st;
    switch (k) {
    case TOP_NAME:
        if ((st = need_string(r, &v, false, &s)))
            return st;
        return mp_graph_set_name(r->g, S(r, s));
    case TOP_OPSET:
        /* the ONNX default-domain opset of the graph (g->onnx_opset);
         * subgraphs have their enclosing graph's */
        if (r->parent)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                              "a subgraph has the opset of the top level");
        if ((st = mp__jr_i64(&r->jr, &v, 1, INT64_MAX,
                             "an integer >= 1 (the ONNX opset)",
                             &r->g->onnx_opset)))
            return st;
        return MP_OK;
    case TOP_COST_UNIT:
        /* the unit of the nodes' "cost": {"seconds"} (mp_graph_cost_unit) */
        if (r->parent)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, v.off,
                              "a subgraph has the cost unit of the top "
                              "level");
        if ((st = need_string(r, &v, false, &s)))
            return st;
        return mp_graph_set_cost_unit(r->g, S(r, s));
    default:
        if (v.type != MP__JT_OBJECT)
            return mp__jr_type_err(&r->jr, &v, "an object");
        return mp__jr_skip_unique(&r->jr, &v);
    }
}

/* One top-level member, the value next; its key is on the path. */
static mp_status top_member(rd *r, int k)
{
    size_t off;
    switch (k) {
    case TOP_FORMAT:
    case TOP_VERSION: return read_format(r, k);
    case TOP_TENSORS: return read_list(r, read_tensor);
    case TOP_NODES: return read_list(r, read_node);
    case TOP_OUTPUTS:
        return read_name_list(r, r->parent ? sub_output : top_output);
    case TOP_INPUTS:
        off = mp__jr_ws(&r->jr);
        if (!r->parent)
            return mp__jr_err(&r->jr, MP_ERR_PARSE, off,
                              "\"inputs\" lists the inputs of a subgraph; "
                              "the inputs of the top level are tensors of "
                              "kind \"input\"");
        return read_name_list(r, sub_input);
    default: return read_header(r, k);
    }
}

/* One pass, for documents whose top-level keys come in the order the
 * writer uses (format, version, name, metadata and "x-" keys, then
 * tensors, nodes, outputs, each present): saves the separate scan of the
 * top level. Sets *other_order (reporting nothing) for any other order,
 * or an unknown key: the caller then starts again with two passes. */
static mp_status read_canonical(rd *r, mp__jobj o, bool *other_order)
{
    static const int stage_of[TOP_N] = {0, 0, 0, 1, 3, 4, 0, 2, 0, 0};
    int stage = 0, k;
    mp_status st;
    *other_order = false;
    while (!(st = mp__jr_member(&r->jr, &o, &k)) && k != MP__JK_END) {
        if (k == MP__JK_OTHER) {
            if (!mp__json_is_ext_key(mp__jr_key(&r->jr, &o)) || stage > 0) {
                *other_order = true;
                return MP_OK;
            }
            if ((st = mp__jr_skip_value_unique(&r->jr)))
                return st;
            continue;
        }
        /* a list only after every earlier list: "nodes" first could be
         * followed by the "tensors" its names refer to */
        bool in_order = stage_of[k] == 0
                            ? stage == 0
                            : stage == stage_of[k] - 1 ||
                                  (k == TOP_NODES && stage == 1);
        if (!in_order) {
            *other_order = true;
            return MP_OK;
        }
        if (stage_of[k] > 0)
            stage = stage_of[k];
        if ((st = top_member(r, k)))
            return st;
    }
    return st ? st : mp__jr_doc_end(&r->jr);
}

/* Two passes: the top-level members found (the syntax of the whole
 * document checked), then read in a fixed order. o: the object, not yet
 * read. */
static mp_status read_two_pass(rd *r, mp__jobj o)
{
    size_t off[TOP_N] = {0}, unknown_off = 0, unknown_s = 0;
    int k;
    mp_status st;
    while (!(st = mp__jr_member(&r->jr, &o, &k)) && k != MP__JK_END) {
        if (k >= 0) {
            off[k] = mp__jr_ws(&r->jr);
        } else if (!mp__json_is_ext_key(mp__jr_key(&r->jr, &o)) &&
                   !unknown_off) {
            unknown_off = o.key_off;
            unknown_s = o.key;
        }
        /* an extension's value is read here only: its keys checked */
        if ((st = k < 0 && mp__json_is_ext_key(mp__jr_key(&r->jr, &o))
                      ? mp__jr_skip_value_unique(&r->jr)
                      : mp__jr_skip_value(&r->jr)))
            return st;
    }
    if (st || (!r->parent && (st = mp__jr_doc_end(&r->jr))))
        return st;
    size_t end = mp__jr_pos(&r->jr);
    unsigned end_depth = r->jr.depth;
    /* format and version first: a newer file is "unsupported", not full
     * of unknown keys */
    static const int order[] = {TOP_FORMAT, TOP_VERSION, TOP_N, TOP_NAME,
                                TOP_OPSET, TOP_COST_UNIT, TOP_METADATA,
                                TOP_TENSORS, TOP_INPUTS, TOP_NODES,
                                TOP_OUTPUTS};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (order[i] == TOP_N && unknown_off)
            return mp__jr_unknown_key(&r->jr, r->parent ? &sub_keys
                                                        : &top_keys,
                                      unknown_off, S(r, unknown_s));
        if (order[i] == TOP_N || !(o.seen >> order[i] & 1))
            continue;
        mp__jr_seek(&r->jr, off[order[i]], o.depth);
        mp__jr_path_cut(&r->jr, 0);
        mp__jr_push_key(&r->jr, top_names[order[i]]);
        if ((st = top_member(r, order[i])))
            return st;
    }
    mp__jr_path_cut(&r->jr, 0);
    mp__jr_seek(&r->jr, end, end_depth);
    return MP_OK;
}

static mp_status read_doc(rd *r, mp__jobj o)
{
    mp_status st;
    /* a subgraph is read in two passes: a one-pass attempt given up at
     * each nesting level could read the innermost bodies 2^depth times */
    if (!r->parent) {
        bool other_order;
        if ((st = read_canonical(r, o, &other_order)))
            return st;
        if (!other_order)
            goto done;
        /* start again from an empty graph */
        mp_graph_destroy(r->g);
        r->g = NULL;
        if ((st = mp_graph_create(r->ctx, &r->g)))
            return st;
        for (size_t i = 0; i < r->cap_ref; i++) {
            r->ref_node[i] = MP_NONE;
            r->declared[i] = 0;
        }
        mp__jr_release(&r->jr, 0);
        mp__jr_path_cut(&r->jr, 0);
        mp__jr_seek(&r->jr, o.off + 1, o.depth);
    }
    if ((st = read_two_pass(r, o)))
        return st;
done:
    if ((st = grow_refs(r)))
        return st;
    return r->parent ? sub_sources(r) : check_sources(r);
}

static void rd_free(rd *r)
{
    void *arrays[] = {r->ref_node, r->ref_slot, r->ref_off, r->declared,
                      r->in_s, r->in_off, r->out_s, r->out_off, r->ids,
                      r->oids, r->attrs, r->pi, r->pd, r->outer,
                      r->in_mark, r->in_pos, r->outer_mark, r->outer_pos,
                      r->out_mark};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        mp__dealloc(r->ctx, arrays[k]);
    mp__name_map_free(r->ctx, &r->attr_map);
    mp__jr_free(&r->jr);
}

/* The next value, a subgraph (the value of an attribute's "graph"): read
 * with a reader of its own, attached to r->g (*idx its index). */
static mp_status read_sub(rd *r, int64_t *idx)
{
    mp__jval v;
    mp_status st = mp__jr_value(&r->jr, &v);
    if (st)
        return st;
    if (v.type != MP__JT_OBJECT)
        return mp__jr_type_err(&r->jr, &v, "an object (a subgraph)");
    if (r->sub_depth >= MAX_SUB_DEPTH)
        return mp__jr_err(&r->jr, MP_ERR_UNSUPPORTED, v.off,
                          "subgraphs nested deeper than %d", MAX_SUB_DEPTH);
    rd *s = mp__calloc(r->ctx, 1, sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    mp__jr_child(&s->jr, &r->jr, s->prefix, sizeof s->prefix);
    s->ctx = r->ctx;
    s->parent = r;
    s->sub_depth = r->sub_depth + 1;
    mp__jobj o;
    mp__jr_object_at(&s->jr, &o, &v, &top_read);
    st = mp_graph_create(r->ctx, &s->g);
    if (!st) {
        s->g->onnx_opset = r->g->onnx_opset;
        /* one string table for the whole tree (core/strval.h) */
        s->g->str_root = r->g->str_root ? r->g->str_root : r->g;
        st = read_doc(s, o);
    }
    if (!st)
        st = mp__grow(r->ctx, (void **)&r->g->subgraphs,
                     sizeof *r->g->subgraphs, r->g->n_subgraphs + 1,
                     &r->g->cap_subgraphs);
    if (!st) {
        *idx = (int64_t)r->g->n_subgraphs;
        r->g->subgraphs[r->g->n_subgraphs++] = s->g;
        s->g = NULL;
        mp__jr_resume(&r->jr, &s->jr);
    }
    mp_graph_destroy(s->g);
    rd_free(s);
    mp__dealloc(r->ctx, s);
    return st;
}

mp_status mp__json_graph_done(mp_ctx *ctx, mp_status st, mp_graph *g,
                             const char *src, mp_graph **out)
{
    if (!st && (st = mp_graph_finalize(g))) {
        char msg[MP__MSG_MAX];
        snprintf(msg, sizeof msg, "%s", ctx->msg);
        mp__err(ctx, st, "%s: %s", src, msg);
    }
    if (st) {
        mp_graph_destroy(g);
        return st;
    }
    *out = g;
    return MP_OK;
}

mp_status mp__json_graph_read(mp_ctx *ctx, const char *text, size_t len,
                             const char *src, void *graph)
{
    mp_graph **out = graph;
    *out = NULL;
    rd r;
    memset(&r, 0, sizeof r);
    mp__jr_init(&r.jr, ctx, src, text, len, MP__JR_NUM64);
    r.ctx = ctx;
    mp__jobj o;
    mp_status st = mp_graph_create(ctx, &r.g);
    if (!st)
        st = mp__jr_doc(&r.jr, &o, &top_read);
    if (!st)
        st = read_doc(&r, o);
    rd_free(&r);
    return mp__json_graph_done(ctx, st, r.g, src, out);
}

mp_status mp_graph_load_json_string(mp_ctx *ctx, const char *text,
                                    const char *source_name, mp_graph **out)
{
    if (!ctx || !text || !out)
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_json_string: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    return mp__json_graph_read(ctx, text, strlen(text),
                              source_name ? source_name : "<string>", out);
}

mp_status mp_graph_load_json(mp_ctx *ctx, const char *path, mp_graph **out)
{
    if (!ctx || !path || !out)
        return ctx ? mp__err(ctx, MP_ERR_INVALID_ARG,
                            "mp_graph_load_json: NULL argument")
                   : MP_ERR_INVALID_ARG;
    *out = NULL;
    return mp__json_load_file(ctx, path, mp__json_graph_read, out);
}

/* ---- writer ------------------------------------------------------------- */

/* ---- the loader's subgraph bookkeeping, undone when writing ---- */

/* The subgraph an int attribute NAME.graph refers to, or NULL. */
static const mp_graph *attr_body(const mp_graph *g, const mp__attr *a)
{
    size_t n = strlen(a->name);
    if (a->type != MP__ATTR_INT || n <= 6 ||
        strcmp(a->name + n - 6, ".graph") != 0 || a->v.i < 0 ||
        (uint64_t)a->v.i >= g->n_subgraphs)
        return NULL;
    return g->subgraphs[a->v.i];
}

static bool has_body(const mp_graph *g, const mp__node *n)
{
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (attr_body(g, &n->attrs[i]))
            return true;
    return false;
}

/* Inputs of n as written: without the names its bodies take from
 * enclosing scopes (after "body.inputs" explicit ones). */
static uint32_t written_inputs(const mp_graph *g, const mp__node *n)
{
    const mp__attr *bi = mp__node_attr(n, "body.inputs");
    if (bi && bi->type == MP__ATTR_INT && bi->v.i >= 0 &&
        (uint64_t)bi->v.i <= n->n_in && has_body(g, n))
        return (uint32_t)bi->v.i;
    return n->n_in;
}

/* True when tensor t is the output NODE:body that stands for the memory
 * of node p's bodies (the reader makes it again). */
static bool is_body_output(const mp_graph *g, uint32_t p, uint32_t t)
{
    const mp__node *n = &g->nodes[p];
    const char *tn = g->tensors[t].name;
    size_t ln = strlen(n->name);
    return n->n_out && n->outputs[n->n_out - 1] == t &&
           strncmp(tn, n->name, ln) == 0 && strcmp(tn + ln, ":body") == 0 &&
           has_body(g, n);
}

static bool in_ids(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Tensors the writer leaves out: NODE:body outputs, and in a subgraph
 * the names it takes from enclosing scopes (kind input, not a formal
 * input). */
static bool skip_tensor(const mp_graph *g, uint32_t t, bool sub)
{
    const mp__tensor *tt = &g->tensors[t];
    if (tt->producer != MP_NONE)
        return is_body_output(g, tt->producer, t);
    return sub && tt->declared_kind == MP_KIND_INPUT &&
           !in_ids(g->sub_inputs, g->n_sub_inputs, t);
}

static void write_graph(mp__jw *w, const mp_graph *g, bool sub,
                        unsigned depth);

static void write_tensor(mp__jw *w, const mp__tensor *t)
{
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string(w, t->name);
    if (t->dtype != MP_DTYPE_UNDEFINED) {
        mp__jw_key(w, "dtype");
        mp__jw_string(w, mp_dtype_name((mp_dtype)t->dtype));
    }
    if (t->rank >= 0) {
        mp__jw_key(w, "shape");
        mp__jw_array(w, false);
        for (int32_t k = 0; k < t->rank; k++)
            mp__jw_i64(w, t->dims[k] < 0 ? -1 : t->dims[k]);
        mp__jw_end(w);
    }
    if (t->flags & MP__TF_BYTES_GIVEN) {
        mp__jw_key(w, "bytes");
        mp__jw_u64(w, t->bytes);
    }
    if (t->declared_kind != MP_KIND_ACTIVATION) {
        mp__jw_key(w, "kind");
        mp__jw_string(w, mp_kind_name((mp_tensor_kind)t->declared_kind));
    }
    if (t->flags & MP__TF_NO_FOLD) {
        mp__jw_key(w, "fold");
        mp__jw_bool(w, false);
    }
    mp__jw_end(w);
}

static void write_ids(mp__jw *w, const mp_graph *g, const uint32_t *ids,
                      uint32_t n)
{
    mp__jw_array(w, false);
    for (uint32_t k = 0; k < n; k++)
        mp__jw_string(w, ids[k] == MP_NONE ? "" : g->tensors[ids[k]].name);
    mp__jw_end(w);
}

/* A real of node n (of attribute attr, or its cost when NULL), which must
 * be finite. */
static void write_real(mp__jw *w, const mp__node *n, const char *attr,
                       double v)
{
    char where[256] = "";
    if (!isfinite(v) && attr)
        snprintf(where, sizeof where, "node '%s': attribute '%s'", n->name,
                 attr);
    else if (!isfinite(v))
        snprintf(where, sizeof where, "node '%s': cost", n->name);
    mp__jw_double(w, v, MP__JW_ROUNDTRIP, where);
}

static void write_attr(mp__jw *w, const mp_graph *g, const mp__node *n,
                       const mp__attr *at, unsigned depth)
{
    const mp_graph *body = attr_body(g, at);
    if (body) { /* NAME.graph: "NAME": {"graph": {...}} */
        char *key = mp__strdup(w->ctx, at->name);
        if (!key) {
            mp__jw_fail(w, MP_ERR_NOMEM, "out of memory");
            return;
        }
        key[strlen(key) - 6] = 0;
        mp__jw_key(w, key);
        mp__dealloc(w->ctx, key);
        mp__jw_object(w, false);
        mp__jw_key(w, "graph");
        write_graph(w, body, true, depth + 1);
        mp__jw_end(w);
        return;
    }
    mp__jw_key(w, at->name);
    switch (at->type) {
    case MP__ATTR_INT: mp__jw_i64(w, at->v.i); break;
    case MP__ATTR_FLOAT: write_real(w, n, at->name, at->v.f); break;
    case MP__ATTR_STRING: mp__jw_string(w, at->v.s); break;
    case MP__ATTR_INTS:
    case MP__ATTR_FLOATS:
        mp__jw_array(w, false);
        for (uint32_t k = 0; k < at->n; k++) {
            if (at->type == MP__ATTR_INTS)
                mp__jw_i64(w, at->v.ints[k]);
            else
                write_real(w, n, at->name, at->v.floats[k]);
        }
        mp__jw_end(w);
        break;
    }
}

static void write_cost(mp__jw *w, const mp__node *n)
{
    const double v[3] = {n->flops, n->bytes_moved, n->seconds};
    static const char *const keys[3] = {"flops", "bytes", "seconds"};
    mp__jw_key(w, "cost");
    mp__jw_object(w, false);
    for (int k = 0; k < 3; k++) {
        if (v[k] < 0)
            continue;
        mp__jw_key(w, keys[k]);
        write_real(w, n, NULL, v[k]);
    }
    mp__jw_end(w);
}

static void write_node(mp__jw *w, const mp_graph *g, const mp__node *n,
                       unsigned depth)
{
    bool bodies = has_body(g, n);
    mp__jw_object(w, false);
    mp__jw_key(w, "name");
    mp__jw_string(w, n->name);
    mp__jw_key(w, "op");
    mp__jw_string(w, n->op);
    if (n->domain && n->domain[0]) {
        mp__jw_key(w, "domain");
        mp__jw_string(w, n->domain);
    }
    mp__jw_key(w, "inputs");
    write_ids(w, g, n->inputs, written_inputs(g, n));
    mp__jw_key(w, "outputs");
    uint32_t n_out = n->n_out;
    if (n_out && is_body_output(g, (uint32_t)(n - g->nodes),
                                n->outputs[n_out - 1]))
        n_out--;
    write_ids(w, g, n->outputs, n_out);
    if (n->n_attrs) {
        mp__jw_key(w, "attributes");
        mp__jw_object(w, false);
        for (uint32_t a = 0; a < n->n_attrs; a++)
            if (!bodies || strcmp(n->attrs[a].name, "body.inputs") != 0 ||
                n->attrs[a].type != MP__ATTR_INT)
                write_attr(w, g, n, &n->attrs[a], depth);
        mp__jw_end(w);
    }
    if (n->phase != MP_PHASE_FORWARD) {
        mp__jw_key(w, "phase");
        mp__jw_string(w, mp_phase_name((mp_phase)n->phase));
    }
    if (n->flops >= 0 || n->bytes_moved >= 0 || n->seconds >= 0)
        write_cost(w, n);
    mp__jw_end(w);
}

/* The graph's outputs: a subgraph's formal outputs in order, else the
 * tensors marked as outputs. */
static void write_outputs(mp__jw *w, const mp_graph *g, bool sub)
{
    mp__jw_key(w, "outputs");
    if (sub) {
        write_ids(w, g, g->sub_outputs, g->n_sub_outputs);
        return;
    }
    mp__jw_array(w, false);
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].flags & MP__TF_OUTPUT)
            mp__jw_string(w, g->tensors[i].name);
    mp__jw_end(w);
}

/* A graph object; a subgraph (sub) has "inputs" and its outputs in order,
 * and no format or version. */
static void write_graph(mp__jw *w, const mp_graph *g, bool sub,
                        unsigned depth)
{
    if (depth > MAX_SUB_DEPTH) {
        mp__jw_fail(w, MP_ERR_UNSUPPORTED, "JSON writer: subgraphs nested "
                    "deeper than %d", MAX_SUB_DEPTH);
        return;
    }
    mp__jw_object(w, true);
    if (!sub) {
        mp__jw_key(w, "format");
        mp__jw_string(w, FORMAT_NAME);
        mp__jw_key(w, "version");
        mp__jw_i64(w, FORMAT_VERSION);
        if (g->onnx_opset > 0) {
            mp__jw_key(w, "opset");
            mp__jw_i64(w, g->onnx_opset);
        }
        if (g->cost_unit) {
            mp__jw_key(w, "cost_unit");
            mp__jw_string(w, g->cost_unit);
        }
    }
    if (g->name && g->name[0]) {
        mp__jw_key(w, "name");
        mp__jw_string(w, g->name);
    }
    if (sub) {
        mp__jw_key(w, "inputs");
        write_ids(w, g, g->sub_inputs, g->n_sub_inputs);
    }
    mp__jw_key(w, "tensors");
    mp__jw_array(w, true);
    for (uint32_t i = 0; i < g->n_tensors; i++)
        if (!skip_tensor(g, i, sub))
            write_tensor(w, &g->tensors[i]);
    mp__jw_end(w);
    mp__jw_key(w, "nodes");
    mp__jw_array(w, true);
    for (size_t i = 0; i < g->n_nodes; i++)
        write_node(w, g, &g->nodes[i], depth);
    mp__jw_end(w);
    write_outputs(w, g, sub);
    mp__jw_end(w);
}

/* The graph as JSON into w (initialized here). */
static void graph_write(const mp_graph *g, mp__jw *w)
{
    mp__jw_init(w, g->ctx, 0, 256 + g->n_tensors * 64 + g->n_nodes * 128);
    write_graph(w, g, false, 0);
    mp__jw_raw(w, "\n");
}

mp_status mp_graph_to_json_string(const mp_graph *g, char **out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    mp__jw w;
    graph_write(g, &w);
    return mp__jw_done(&w, out, NULL);
}

mp_status mp_graph_save_json(const mp_graph *g, const char *path)
{
    if (!g || !path)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_save_json: NULL path")
                 : MP_ERR_INVALID_ARG;
    mp__jw w;
    graph_write(g, &w);
    return mp__jw_save(&w, path);
}
