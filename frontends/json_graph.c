/* memplan JSON graph format, version 1 (docs/graph-format.md): reader
 * (streaming, hand-written) and writer (by hand: deterministic, fixed key order, one
 * tensor or node per line).
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
#include "json_pos.h"
#include "json_tok.h"
#include "ops.h"
#include "shape.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "memplan-graph"
#define FORMAT_VERSION 1

/* ---- reader ------------------------------------------------------------------
 *
 * A streaming reader rather than jansson's DOM: a 100k-node graph is ~15 MB
 * of JSON with ~300k small objects, and jansson spends well over half a
 * second building (and freeing) a hash table per object. The reader below
 * keeps the byte offset of every value, so every error names
 * file:line:column. Pass 1 checks the syntax of the whole document and
 * finds the top-level members; pass 2 reads "tensors", "nodes" and
 * "outputs" in that order (whatever their order in the file). */
#define MAX_DEPTH 512
/* subgraphs nested deeper than this are refused (as the ONNX loader does) */
#define MAX_SUB_DEPTH 64

enum jt { J_NULL, J_FALSE, J_TRUE, J_INT, J_REAL, J_STRING, J_ARRAY, J_OBJECT };

typedef struct jv {
    enum jt type;
    size_t off;    /* offset of the value in the text */
    int64_t i;
    double d;
    size_t s;      /* J_STRING: offset of the decoded string in the arena */
} jv;

typedef struct rd {
    mp__jloc loc;
    mp_ctx *ctx;
    mp_graph *g;
    const char *t;
    size_t len, pos;
    /* string arena: decoded strings of the object being read */
    char *sb;
    size_t sb_len, sb_cap;
    /* per tensor: first node reading it, input slot, offset of that
     * reference; declared (bit 0), listed in "outputs" (bit 1), a formal
     * input of a subgraph (bit 2) */
    uint32_t *ref_node, *ref_slot;
    size_t *ref_off;
    uint8_t *declared;
    size_t cap_ref;
    /* a node being read */
    size_t *in_s, *in_off, *out_s, *out_off;
    size_t n_in, n_out, cap_in, cap_out;
    uint32_t *ids, *oids;
    size_t cap_ids, cap_oids;
    struct rattr {
        size_t name_s, off, key_off;
        enum jt type;      /* J_INT, J_REAL, J_STRING, J_ARRAY, J_OBJECT */
        int64_t i;         /* J_OBJECT: index of the subgraph in g */
        double d;
        size_t s, first, n; /* J_ARRAY: elements in num pools */
        bool any_real;
    } *attrs;
    size_t n_attrs, cap_attrs;
    int64_t *pi;
    double *pd;
    size_t n_pool, cap_pi, cap_pd;
    /* the attribute key in the location path: a copy, since reading its
     * value may move r->sb (a pointer into it would dangle) */
    char attr_key[128];
    /* subgraphs: the reader of the enclosing graph (NULL at the top), the
     * nesting depth, loc.prefix's text, the position after the graph's
     * object, capacities of g->sub_inputs / g->sub_outputs */
    struct rd *parent;
    unsigned sub_depth;
    char prefix[384];
    size_t end, cap_sub_in, cap_sub_out;
    /* names the bodies of the node being read take from enclosing scopes,
     * each with the offset of its first use */
    struct outer_ref {
        const char *name;
        size_t off;
    } *outer;
    size_t n_outer, cap_outer;
} rd;

static const char *S(rd *r, size_t s) { return r->sb + s; }

/* Label of the tensor or node being read ("\"name\""), cheaper than
 * snprintf: it is set for every element. */
static void set_label(rd *r, const char *name)
{
    char *l = r->loc.label;
    size_t n = strlen(name), max = sizeof r->loc.label - 3;
    if (n > max)
        n = max;
    l[0] = '"';
    memcpy(l + 1, name, n);
    l[n + 1] = '"';
    l[n + 2] = 0;
}

static mp_status syn(rd *r, size_t off, const char *fmt, ...) MP__PRINTF(3, 4);
static mp_status syn(rd *r, size_t off, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    mp__json_offset_pos(r->t, r->len, off, &line, &col);
    return mp__err(r->ctx, MP_ERR_PARSE, "%s:%d:%d: %s", r->loc.src, line, col,
                  msg);
}

/* The shared tokenizer (json_tok.h) at the reader's position. */
static mp__jtok tok(const rd *r)
{
    mp__jtok k;
    mp__jtok_init(&k, r->t, r->len, r->pos);
    return k;
}

static void ws(rd *r)
{
    mp__jtok k = tok(r);
    mp__jtok_ws(&k);
    r->pos = k.pos;
}

static mp_status unexpected(rd *r)
{
    ws(r);
    if (r->pos >= r->len)
        return syn(r, r->pos, "unexpected end of file");
    char c = r->t[r->pos];
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        return syn(r, r->pos, "unexpected character 0x%02x",
                   (unsigned)(unsigned char)c);
    return syn(r, r->pos, "unexpected token near '%c'", c);
}

/* Words what the tokenizer refused (messages and positions as this reader
 * has always given them). */
static mp_status tok_fail(rd *r, const mp__jtok *k)
{
    size_t start = k->err.start, at = k->err.at;
    switch (k->err.kind) {
    case MP__JTOK_UNTERMINATED: return syn(r, start, "unterminated string");
    case MP__JTOK_CONTROL:
        return syn(r, at, "control character in a string");
    case MP__JTOK_BAD_HEX: return syn(r, start, "invalid \\u escape");
    case MP__JTOK_SURROGATE: return syn(r, start, "invalid UTF-16 surrogate");
    case MP__JTOK_NUL:
        return syn(r, start, "\\u0000 is not allowed in a string");
    case MP__JTOK_BAD_ESCAPE:
        return syn(r, start, "invalid escape '\\%c'", k->err.c);
    case MP__JTOK_NUM_FRAC:
    case MP__JTOK_NUM_EXP: return syn(r, start, "invalid number");
    case MP__JTOK_WANT_KEY:
        if (at < r->len)
            return syn(r, at, "string or '}' expected near '%c'", r->t[at]);
        r->pos = at;
        return unexpected(r);
    case MP__JTOK_NUM_DIGIT: r->pos = start; return unexpected(r);
    default: r->pos = at; return unexpected(r);
    }
}

/* At '"': decodes the string into the arena (when decode) and moves past
 * it. */
static mp_status rd_string(rd *r, bool decode, size_t *soff)
{
    mp__jtok k = tok(r);
    size_t n = 0;
    mp_status st = mp__jtok_string(&k, r->ctx, decode ? &r->sb : NULL,
                                  &r->sb_cap, r->sb_len, &n);
    if (st)
        return st == MP_ERR_PARSE ? tok_fail(r, &k) : st;
    if (decode) {
        *soff = r->sb_len;
        r->sb_len += n + 1;
    }
    r->pos = k.pos;
    return MP_OK;
}

static mp_status rd_number(rd *r, jv *v)
{
    const char *t = r->t;
    mp__jtok tk = tok(r);
    size_t p;
    bool is_int;
    /* a leading 0 ends the number (a digit after it is the next token's
     * problem) */
    if (mp__jtok_number(&tk, &p, &is_int) &&
        tk.err.kind != MP__JTOK_LEADING_ZERO)
        return tok_fail(r, &tk);
    bool neg = t[r->pos] == '-', real = !is_int;
    size_t digits = r->pos + (neg ? 1 : 0), int_end = p;
    v->off = r->pos;
    if (!real) {
        uint64_t u = 0;
        for (size_t k = digits; k < int_end; k++) {
            unsigned d = (unsigned)(t[k] - '0');
            if (u > (UINT64_MAX - d) / 10) {
                u = UINT64_MAX;
                break;
            }
            u = u * 10 + d;
        }
        if (u > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) {
            int line, col;
            mp__json_offset_pos(r->t, r->len, r->pos, &line, &col);
            return mp__err(r->ctx, MP_ERR_OVERFLOW,
                          "%s:%d:%d: too big integer near '%.*s' (numbers "
                          "must fit in 64 bits)",
                          r->loc.src, line, col, (int)(p - r->pos),
                          t + r->pos);
        }
        v->type = J_INT;
        v->i = neg ? (int64_t)(0 - u) : (int64_t)u;
        v->d = (double)v->i;
    } else {
        char buf[64];
        const char *num = t + r->pos;
        size_t nl = p - r->pos;
        char *end;
        errno = 0;
        double d;
        if (nl < sizeof buf) {
            memcpy(buf, num, nl);
            buf[nl] = 0;
            d = strtod(buf, &end);
        } else {
            d = strtod(num, &end); /* the text is NUL-terminated */
        }
        if (errno == ERANGE && isinf(d)) {
            int line, col;
            mp__json_offset_pos(r->t, r->len, r->pos, &line, &col);
            return mp__err(r->ctx, MP_ERR_OVERFLOW,
                          "%s:%d:%d: real number overflow near '%.*s'",
                          r->loc.src, line, col, (int)nl, num);
        }
        v->type = J_REAL;
        v->d = d;
    }
    r->pos = p;
    return MP_OK;
}

static mp_status lit(rd *r, const char *word)
{
    mp__jtok k = tok(r);
    if (!mp__jtok_literal(&k, word))
        return unexpected(r);
    r->pos = k.pos;
    return MP_OK;
}

/* Reads the start of a value: scalars whole, containers their opening
 * bracket. */
static mp_status rd_value(rd *r, jv *v)
{
    ws(r);
    v->off = r->pos;
    v->i = 0;
    v->d = 0;
    v->s = 0;
    if (r->pos >= r->len)
        return unexpected(r);
    switch (r->t[r->pos]) {
    case '{': r->pos++; v->type = J_OBJECT; return MP_OK;
    case '[': r->pos++; v->type = J_ARRAY; return MP_OK;
    case '"': v->type = J_STRING; return rd_string(r, true, &v->s);
    case 't': v->type = J_TRUE; return lit(r, "true");
    case 'f': v->type = J_FALSE; return lit(r, "false");
    case 'n': v->type = J_NULL; return lit(r, "null");
    default: return rd_number(r, v);
    }
}

/* Object iteration after '{': *more = 1 with the key decoded and the
 * position at its value, 0 at the closing brace. */
static mp_status obj_next(rd *r, bool *first, bool *more, size_t *key,
                          size_t *key_off)
{
    mp__jtok k = tok(r);
    int state = !*first;
    mp_status st = mp__jtok_obj_next(&k, &state, more);
    if (st)
        return tok_fail(r, &k);
    *first = state == 0;
    r->pos = k.pos;
    if (!*more)
        return MP_OK;
    *key_off = r->pos;
    if ((st = rd_string(r, true, key)))
        return st;
    k = tok(r);
    if (mp__jtok_colon(&k))
        return tok_fail(r, &k);
    r->pos = k.pos;
    return MP_OK;
}

static mp_status arr_next(rd *r, bool *first, bool *more)
{
    mp__jtok k = tok(r);
    int state = !*first;
    mp_status st = mp__jtok_arr_next(&k, &state, more);
    if (st)
        return tok_fail(r, &k);
    *first = state == 0;
    r->pos = k.pos;
    return MP_OK;
}

/* Skips (and checks) a value whose start was read into v. Keys of
 * skipped objects are checked for duplicates only at the top level. */
static mp_status skip_rest(rd *r, const jv *v, int depth)
{
    if (v->type != J_OBJECT && v->type != J_ARRAY)
        return MP_OK;
    if (depth > MAX_DEPTH)
        return syn(r, v->off, "maximum nesting depth %d exceeded", MAX_DEPTH);
    bool first = true, more;
    mp_status st;
    for (;;) {
        size_t mark = r->sb_len;
        if (v->type == J_OBJECT) {
            size_t key, key_off;
            if ((st = obj_next(r, &first, &more, &key, &key_off)))
                return st;
        } else if ((st = arr_next(r, &first, &more))) {
            return st;
        }
        if (!more)
            return MP_OK;
        jv e;
        ws(r);
        /* strings in skipped values need not be kept */
        if (r->pos < r->len && r->t[r->pos] == '"') {
            e.off = r->pos;
            e.type = J_STRING;
            st = rd_string(r, false, &e.s);
        } else {
            st = rd_value(r, &e);
        }
        if (st || (st = skip_rest(r, &e, depth + 1)))
            return st;
        r->sb_len = mark;
    }
}

/* ---- typed access with positioned errors ---------------------------------- */
static const char *describe(rd *r, const jv *v, char *buf, size_t cap)
{
    switch (v->type) {
    case J_OBJECT: return "an object";
    case J_ARRAY: return "an array";
    case J_STRING: {
        const char *s = S(r, v->s);
        if (strlen(s) > 40)
            snprintf(buf, cap, "\"%.40s...\"", s);
        else
            snprintf(buf, cap, "\"%s\"", s);
        return buf;
    }
    case J_INT: snprintf(buf, cap, "%lld", (long long)v->i); return buf;
    case J_REAL: {
        size_t p = v->off, e = p;
        while (e < r->len && e - p < 40 && strchr("+-.eE0123456789", r->t[e]))
            e++;
        snprintf(buf, cap, "%.*s", (int)(e - p), r->t + p);
        return buf;
    }
    case J_TRUE: return "true";
    case J_FALSE: return "false";
    case J_NULL: return "null";
    }
    return "a value";
}

static mp_status type_err(rd *r, const jv *v, const char *expected)
{
    char buf[96];
    return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v->off, "expected %s, got %s",
                          expected, describe(r, v, buf, sizeof buf));
}

static mp_status unknown_key(rd *r, const char *key, size_t key_off,
                             const char *expected)
{
    return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, key_off,
                          "unknown key \"%s\" (expected %s, or an \"x-\" "
                          "extension key)",
                          key, expected);
}

static mp_status dup_key(rd *r, const char *key, size_t key_off)
{
    return syn(r, key_off, "duplicate object key near '\"%s\"'", key);
}

/* Index of key in keys (NULL-terminated), or -1. */
static int key_index(const char *key, const char *const *keys)
{
    for (int i = 0; keys[i]; i++)
        if (strcmp(keys[i], key) == 0)
            return i;
    return -1;
}

/* Reads the member value of key k; checks duplicates against *seen and
 * unknown keys. Returns 1 in *skip for an extension key (value skipped). */
static mp_status member(rd *r, const char *key, size_t key_off,
                        const char *const *keys, const char *expected,
                        unsigned *seen, int *k)
{
    *k = -1;
    if (mp__json_is_ext_key(key)) {
        jv e;
        mp_status st = rd_value(r, &e);
        return st ? st : skip_rest(r, &e, 1);
    }
    int i = key_index(key, keys);
    if (i < 0)
        return unknown_key(r, key, key_off, expected);
    if (*seen & (1u << i))
        return dup_key(r, key, key_off);
    *seen |= 1u << i;
    *k = i;
    return MP_OK;
}

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
    for (size_t i = r->cap_ref; i < ncap; i++) {
        r->ref_node[i] = MP_NONE;
        r->ref_slot[i] = 0;
        r->ref_off[i] = 0;
        r->declared[i] = 0;
    }
    r->cap_ref = ncap;
    return MP_OK;
}

static mp_status need_string(rd *r, const jv *v, bool nonempty)
{
    if (v->type != J_STRING)
        return type_err(r, v, "a string");
    if (nonempty && !S(r, v->s)[0])
        return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v->off,
                              "must not be an empty string");
    return MP_OK;
}

static mp_status missing(rd *r, size_t obj_off, const char *key,
                         const char *what)
{
    return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, obj_off,
                          "missing required key \"%s\"%s", key, what);
}

static bool needs_producer(uint8_t kind);
static mp_status read_sub(rd *r, int64_t *idx);

/* ---- tensors ------------------------------------------------------------------ */
static const char *const tensor_keys[] = {"name", "dtype", "shape", "bytes",
                                          "kind", NULL};
enum { TK_NAME, TK_DTYPE, TK_SHAPE, TK_BYTES, TK_KIND };

static mp_status read_tensor(rd *r)
{
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_OBJECT)
        return type_err(r, &v, "an object (a tensor)");
    size_t obj_off = v.off;
    r->sb_len = 0;
    r->loc.label[0] = 0;
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.rank = -1;
    d.kind = MP_KIND_ACTIVATION;
    int64_t dims[MP_MAX_RANK];
    size_t name_s = 0, name_off = 0, shape_off = 0, bytes_off = 0;
    bool bytes_given = false, shape_known = false;
    uint64_t nbytes = 0;
    unsigned seen = 0;
    bool first = true, more;
    for (;;) {
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        int k;
        if ((st = member(r, S(r, key), key_off, tensor_keys,
                         "name, dtype, shape, bytes or kind", &seen, &k)))
            return st;
        if (k < 0)
            continue;
        mp__jloc_key(&r->loc, tensor_keys[k]);
        if ((st = rd_value(r, &v)))
            return st;
        switch (k) {
        case TK_NAME:
            if ((st = need_string(r, &v, true)))
                return st;
            name_s = v.s;
            name_off = v.off;
            set_label(r, S(r, name_s));
            break;
        case TK_DTYPE:
            if ((st = need_string(r, &v, false)))
                return st;
            if (mp_dtype_parse(S(r, v.s), &d.dtype) != MP_OK)
                return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v.off,
                                      "unknown dtype \"%s\" (expected "
                                      "float32, float16, bfloat16, int64, "
                                      "...)",
                                      S(r, v.s));
            break;
        case TK_KIND:
            if ((st = need_string(r, &v, false)))
                return st;
            if (mp_kind_parse(S(r, v.s), &d.kind) != MP_OK)
                return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v.off,
                                      "unknown kind \"%s\" (expected "
                                      "activation, input, weight, constant, "
                                      "gradient, optimizer_state or output)",
                                      S(r, v.s));
            break;
        case TK_BYTES:
            if (v.type != J_INT || v.i < 0)
                return type_err(r, &v, "an integer >= 0");
            nbytes = (uint64_t)v.i;
            bytes_given = true;
            bytes_off = v.off;
            break;
        case TK_SHAPE: {
            if (v.type != J_ARRAY)
                return type_err(r, &v, "an array of integers");
            shape_off = v.off;
            size_t rank = 0;
            bool f2 = true, m2;
            shape_known = true;
            for (;;) {
                if ((st = arr_next(r, &f2, &m2)))
                    return st;
                if (!m2)
                    break;
                if (rank >= MP_MAX_RANK)
                    return mp__jloc_err_at(&r->loc, MP_ERR_BAD_DIM,
                                          shape_off,
                                          "rank %zu is more than the %d "
                                          "supported",
                                          rank + 1, MP_MAX_RANK);
                jv e;
                if ((st = rd_value(r, &e)))
                    return st;
                if (e.type == J_NULL) {
                    dims[rank] = -1;
                } else if (e.type == J_INT && e.i < -1) {
                    mp__jloc_index(&r->loc, rank);
                    return mp__jloc_err_at(&r->loc, MP_ERR_BAD_DIM, e.off,
                                          "dim %zu is negative (%lld): a "
                                          "dim is >= 0, or -1 or null for "
                                          "unknown",
                                          rank, (long long)e.i);
                } else if (e.type != J_INT) {
                    mp__jloc_index(&r->loc, rank);
                    return type_err(r, &e, "an integer >= 0 (or -1 or null "
                                           "for unknown)");
                } else {
                    dims[rank] = e.i;
                }
                if (dims[rank] < 0)
                    shape_known = false;
                rank++;
            }
            d.rank = (int)rank;
            d.dims = dims;
            break;
        }
        }
        mp__jloc_pop(&r->loc);
    }
    if (!(seen & (1u << TK_NAME)))
        return missing(r, obj_off, "name", "");
    d.name = S(r, name_s);
    if (d.rank >= 0) {
        /* element count and byte size must fit in 64 bits */
        unsigned bits = mp_dtype_bits(d.dtype);
        uint64_t count = 1, b = 0;
        bool ok = true;
        for (int k = 0; k < d.rank && ok; k++)
            if (dims[k] >= 0)
                ok = mp__mul_u64(count, (uint64_t)dims[k], &count);
        if (ok && bits)
            ok = mp__mul_u64(count, bits, &b) && mp__add_u64(b, 7, &b);
        mp__jloc_key(&r->loc, "shape");
        if (!ok)
            return mp__jloc_err_at(&r->loc, MP_ERR_OVERFLOW, shape_off,
                                  "the tensor's %s overflows 64 bits",
                                  bits ? "size in bytes" : "element count");
        mp__jloc_pop(&r->loc);
        if (bits && shape_known && bytes_given && b / 8 != nbytes) {
            mp__jloc_key(&r->loc, "bytes");
            return mp__jloc_err_at(&r->loc, MP_ERR_SHAPE, bytes_off,
                                  "%llu bytes disagree with the dtype and "
                                  "shape (%llu bytes)",
                                  (unsigned long long)nbytes,
                                  (unsigned long long)(b / 8));
        }
    }
    d.bytes = bytes_given ? nbytes : 0;
    uint32_t id, prev;
    if ((st = mp_graph_add_tensor(r->g, &d, &id))) {
        if (st == MP_ERR_DUPLICATE &&
            mp_graph_find_tensor(r->g, d.name, &prev) == MP_OK) {
            mp__jloc_key(&r->loc, "name");
            return mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, name_off,
                                  "duplicate tensor name \"%s\" (first "
                                  "declared at tensors[%u])",
                                  d.name, (unsigned)prev);
        }
        return st;
    }
    if (bytes_given && nbytes == 0) {
        r->g->tensors[id].bytes = 0;
        r->g->tensors[id].flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    }
    if ((st = grow_refs(r)))
        return st;
    r->declared[id] = 1;
    /* in a subgraph, the shape of an activation is a hint, as ONNX
     * value_info is: the body is inferred again for each use, and an
     * inferred shape that disagrees replaces it */
    if (r->parent && needs_producer(d.kind) && d.rank >= 0)
        r->g->tensors[id].flags |= MP__TF_SHAPE_HINT;
    return MP_OK;
}

/* ---- nodes ------------------------------------------------------------------- */
static const char *const node_keys[] = {"name", "op", "domain", "inputs",
                                        "outputs", "attributes", "phase",
                                        "cost", NULL};
enum { NK_NAME, NK_OP, NK_DOMAIN, NK_INPUTS, NK_OUTPUTS, NK_ATTRS, NK_PHASE,
       NK_COST };
static const char *const cost_keys[] = {"flops", "bytes", "seconds", NULL};

/* Reads an array of tensor names into (s, off) lists. */
static mp_status read_names(rd *r, bool inputs)
{
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_ARRAY)
        return type_err(r, &v, "an array");
    bool first = true, more;
    size_t n = 0;
    for (;;) {
        if ((st = arr_next(r, &first, &more)))
            return st;
        if (!more)
            break;
        jv e;
        if ((st = rd_value(r, &e)))
            return st;
        mp__jloc_index(&r->loc, n);
        if (e.type != J_STRING)
            return type_err(r, &e, inputs ? "a tensor name (a string; \"\" "
                                            "for an omitted optional input)"
                                          : "a tensor name (a string)");
        if (!inputs && !S(r, e.s)[0])
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, e.off,
                                  "an output needs a tensor name");
        mp__jloc_pop(&r->loc);
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
    if (n > UINT32_MAX / 2)
        return mp__jloc_err_at(&r->loc, MP_ERR_UNSUPPORTED, v.off,
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

/* After the '{' of an attribute's object value: {"graph": {...}}, a
 * subgraph, read and attached to r->g (at->i its index). */
static mp_status read_graph_attr(rd *r, struct rattr *at)
{
    bool first = true, more, got = false;
    mp_status st;
    for (;;) {
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        if (got || strcmp(S(r, key), "graph") != 0)
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, key_off,
                                  "unknown key \"%s\" (an attribute object "
                                  "holds one key, \"graph\": a subgraph)",
                                  S(r, key));
        got = true;
        mp__jloc_key(&r->loc, "graph");
        if ((st = read_sub(r, &at->i)))
            return st;
        mp__jloc_pop(&r->loc);
    }
    if (!got)
        return missing(r, at->off, "graph",
                       " (an attribute object holds a subgraph)");
    at->type = J_OBJECT;
    return MP_OK;
}

static mp_status read_attrs(rd *r)
{
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_OBJECT)
        return type_err(r, &v, "an object");
    bool first = true, more;
    for (;;) {
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        if (!S(r, key)[0])
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, key_off,
                                  "an attribute needs a name");
        for (size_t a = 0; a < r->n_attrs; a++)
            if (strcmp(S(r, r->attrs[a].name_s), S(r, key)) == 0)
                return dup_key(r, S(r, key), key_off);
        if (mp__grow(r->ctx, (void **)&r->attrs, sizeof *r->attrs,
                    r->n_attrs + 1, &r->cap_attrs))
            return MP_ERR_NOMEM;
        struct rattr *at = &r->attrs[r->n_attrs];
        memset(at, 0, sizeof *at);
        at->name_s = key;
        at->key_off = key_off;
        snprintf(r->attr_key, sizeof r->attr_key, "%s", S(r, key));
        mp__jloc_key(&r->loc, r->attr_key);
        jv e;
        if ((st = rd_value(r, &e)))
            return st;
        at->off = e.off;
        switch (e.type) {
        case J_INT: at->type = J_INT; at->i = e.i; break;
        case J_REAL: at->type = J_REAL; at->d = e.d; break;
        case J_STRING: at->type = J_STRING; at->s = e.s; break;
        case J_ARRAY: {
            at->type = J_ARRAY;
            at->first = r->n_pool;
            bool f2 = true, m2;
            for (;;) {
                if ((st = arr_next(r, &f2, &m2)))
                    return st;
                if (!m2)
                    break;
                jv x;
                if ((st = rd_value(r, &x)))
                    return st;
                if (x.type != J_INT && x.type != J_REAL) {
                    mp__jloc_index(&r->loc, at->n);
                    return type_err(r, &x, "a number (attribute arrays hold "
                                           "numbers)");
                }
                if (x.type == J_REAL)
                    at->any_real = true;
                if ((st = pool_push(r, x.i, x.type == J_REAL ? x.d
                                                             : (double)x.i)))
                    return st;
                at->n++;
            }
            if (at->n > UINT32_MAX)
                return mp__jloc_err_at(&r->loc, MP_ERR_UNSUPPORTED, e.off,
                                      "too many values");
            break;
        }
        case J_OBJECT:
            if ((st = read_graph_attr(r, at)))
                return st;
            break;
        default:
            return type_err(r, &e, "a number, a string, an array of "
                                   "numbers or {\"graph\": {...}}");
        }
        /* the names the reader gives a node with subgraphs */
        size_t kl = strlen(r->attr_key);
        if (at->type != J_OBJECT &&
            (strcmp(r->attr_key, "body.inputs") == 0 ||
             (kl > 6 && strcmp(r->attr_key + kl - 6, ".graph") == 0)))
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, key_off,
                                  "attribute \"%s\" is reserved: a "
                                  "subgraph is written \"NAME\": "
                                  "{\"graph\": {...}}",
                                  r->attr_key);
        mp__jloc_pop(&r->loc);
        r->n_attrs++;
    }
    return MP_OK;
}

static mp_status read_cost(rd *r, double *c)
{
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_OBJECT)
        return type_err(r, &v, "an object with flops, bytes, seconds");
    unsigned seen = 0;
    bool first = true, more;
    for (;;) {
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        int k;
        if ((st = member(r, S(r, key), key_off, cost_keys,
                         "flops, bytes or seconds", &seen, &k)))
            return st;
        if (k < 0)
            continue;
        mp__jloc_key(&r->loc, cost_keys[k]);
        jv e;
        if ((st = rd_value(r, &e)))
            return st;
        if ((e.type != J_INT && e.type != J_REAL) || !(e.d >= 0))
            return type_err(r, &e, "a number >= 0");
        c[k] = e.d;
        mp__jloc_pop(&r->loc);
    }
    return MP_OK;
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

static mp_status read_node(rd *r, size_t idx)
{
    mp_graph *g = r->g;
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_OBJECT)
        return type_err(r, &v, "an object (a node)");
    size_t obj_off = v.off;
    r->sb_len = 0;
    r->n_in = r->n_out = r->n_attrs = r->n_pool = r->n_outer = 0;
    r->loc.label[0] = 0;
    size_t name_s = 0, name_off = 0, op_s = 0, dom_s = 0;
    bool has_dom = false;
    double cost[3] = {-1.0, -1.0, -1.0};
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.phase = MP_PHASE_FORWARD;
    unsigned seen = 0;
    bool first = true, more;
    for (;;) {
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        int k;
        if ((st = member(r, S(r, key), key_off, node_keys,
                         "name, op, domain, inputs, outputs, attributes, "
                         "phase or cost",
                         &seen, &k)))
            return st;
        if (k < 0)
            continue;
        mp__jloc_key(&r->loc, node_keys[k]);
        switch (k) {
        case NK_NAME:
        case NK_OP:
        case NK_DOMAIN:
        case NK_PHASE:
            if ((st = rd_value(r, &v)) ||
                (st = need_string(r, &v, k == NK_NAME || k == NK_OP)))
                return st;
            if (k == NK_NAME) {
                name_s = v.s;
                name_off = v.off;
                set_label(r, S(r, v.s));
            } else if (k == NK_OP) {
                op_s = v.s;
            } else if (k == NK_DOMAIN) {
                dom_s = v.s;
                has_dom = true;
            } else if (mp_phase_parse(S(r, v.s), &d.phase) != MP_OK) {
                return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v.off,
                                      "unknown phase \"%s\" (expected "
                                      "forward, backward or optimizer)",
                                      S(r, v.s));
            }
            break;
        case NK_INPUTS: st = read_names(r, true); break;
        case NK_OUTPUTS: st = read_names(r, false); break;
        case NK_ATTRS: st = read_attrs(r); break;
        case NK_COST: st = read_cost(r, cost); break;
        }
        if (st)
            return st;
        mp__jloc_pop(&r->loc);
    }
    if (!(seen & (1u << NK_NAME)))
        return missing(r, obj_off, "name", "");
    if (!(seen & (1u << NK_OP)))
        return missing(r, obj_off, "op", "");
    if (!(seen & (1u << NK_INPUTS)))
        return missing(r, obj_off, "inputs", " (an array)");
    if (!(seen & (1u << NK_OUTPUTS)))
        return missing(r, obj_off, "outputs", " (an array)");
    d.name = S(r, name_s);
    d.op = S(r, op_s);
    d.domain = has_dom ? S(r, dom_s) : NULL;
    uint32_t prev;
    if (mp_graph_find_node(g, d.name, &prev) == MP_OK) {
        mp__jloc_key(&r->loc, "name");
        return mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, name_off,
                              "duplicate node name \"%s\" (first at "
                              "nodes[%u])",
                              d.name, (unsigned)prev);
    }
    size_t n_body = 0;
    for (size_t a = 0; a < r->n_attrs; a++)
        n_body += r->attrs[a].type == J_OBJECT;
    if (mp__grow(r->ctx, (void **)&r->ids, sizeof *r->ids,
                r->n_in + r->n_outer + 1, &r->cap_ids) ||
        mp__grow(r->ctx, (void **)&r->oids, sizeof *r->oids, r->n_out + 2,
                &r->cap_oids))
        return MP_ERR_NOMEM;
    for (size_t k = 0; k < r->n_in; k++) {
        const char *tn = S(r, r->in_s[k]);
        if (!tn[0]) {
            r->ids[k] = MP_NONE;
            continue;
        }
        if ((st = tensor_ref(r, tn, &r->ids[k])))
            return st;
        uint32_t t = r->ids[k];
        if (r->ref_node[t] == MP_NONE) {
            r->ref_node[t] = (uint32_t)idx;
            r->ref_slot[t] = (uint32_t)k;
            r->ref_off[t] = r->in_off[k];
        }
    }
    /* names its bodies take from enclosing scopes: extra inputs (once;
     * the first use inside the body is where an error points) */
    size_t n_all = r->n_in;
    for (size_t k = 0; k < r->n_outer; k++) {
        uint32_t t;
        if ((st = tensor_ref(r, r->outer[k].name, &t)))
            return st;
        bool dup = false;
        for (size_t j = 0; j < n_all && !dup; j++)
            dup = r->ids[j] == t;
        if (dup)
            continue;
        if (r->ref_node[t] == MP_NONE) {
            r->ref_node[t] = (uint32_t)idx;
            r->ref_slot[t] = (uint32_t)n_all;
            r->ref_off[t] = r->outer[k].off;
        }
        r->ids[n_all++] = t;
    }
    /* a node with bodies: its last output NODE:body */
    char *body_name = NULL;
    if (n_body) {
        size_t nl = strlen(S(r, name_s));
        if (!(body_name = mp__alloc(r->ctx, nl + 6)))
            return MP_ERR_NOMEM;
        memcpy(body_name, S(r, name_s), nl);
        memcpy(body_name + nl, ":body", 6);
    }
    mp__jloc_key(&r->loc, "outputs");
    size_t n_outs = r->n_out + (n_body ? 1 : 0);
    for (size_t k = 0; k < n_outs && !st; k++) {
        bool made = k == r->n_out;
        const char *tn = made ? body_name : S(r, r->out_s[k]);
        size_t off = made ? obj_off : r->out_off[k];
        mp__jloc_index(&r->loc, k);
        uint32_t t;
        if ((st = tensor_ref(r, tn, &t)))
            break;
        uint32_t p = g->tensors[t].producer;
        if (p != MP_NONE) {
            st = mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, off,
                                "tensor \"%s\" is already produced by "
                                "nodes[%u] (\"%s\"): a tensor has one "
                                "producer",
                                tn, (unsigned)p, g->nodes[p].name);
            break;
        }
        if (r->declared[t] & 4) {
            st = mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, off,
                                "tensor \"%s\" is an input of the subgraph: "
                                "no node produces it",
                                tn);
            break;
        }
        for (size_t j = 0; j < k && !st; j++)
            if (r->oids[j] == t)
                st = mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, off,
                                    "tensor \"%s\" is listed twice as an "
                                    "output",
                                    tn);
        for (size_t j = 0; j < r->n_in && !st; j++)
            if (r->ids[j] == t)
                st = mp__jloc_err_at(&r->loc, MP_ERR_CYCLE, off,
                                    "the node reads its own output \"%s\" "
                                    "(inputs[%zu])",
                                    tn, j);
        for (size_t j = 0; j < r->n_outer && !st; j++) /* where it is read */
            if (strcmp(r->outer[j].name, tn) == 0)
                st = mp__jloc_err_at(&r->loc, MP_ERR_CYCLE, r->outer[j].off,
                                    "a subgraph of the node reads its own "
                                    "output \"%s\"",
                                    tn);
        r->oids[k] = t;
        mp__jloc_pop(&r->loc);
    }
    mp__dealloc(r->ctx, body_name);
    if (st)
        return st;
    mp__jloc_pop(&r->loc);
    d.inputs = r->ids;
    d.n_inputs = (uint32_t)n_all;
    d.outputs = r->oids;
    d.n_outputs = (uint32_t)n_outs;
    uint32_t id;
    if ((st = mp_graph_add_node(g, &d, &id)))
        return st;
    for (size_t a = 0; a < r->n_attrs && !st; a++) {
        const struct rattr *at = &r->attrs[a];
        const char *an = S(r, at->name_s);
        switch (at->type) {
        case J_OBJECT: break; /* a subgraph: below */
        case J_INT: st = mp_graph_set_attr_int(g, id, an, at->i); break;
        case J_REAL: st = mp_graph_set_attr_float(g, id, an, at->d); break;
        case J_STRING:
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
    /* then, as the ONNX loader does: body.inputs, and NAME.graph (the
     * index of the body in g) of each subgraph attribute */
    if (!st && n_body)
        st = mp_graph_set_attr_int(g, id, "body.inputs", (int64_t)r->n_in);
    for (size_t a = 0; a < r->n_attrs && !st; a++) {
        if (r->attrs[a].type != J_OBJECT)
            continue;
        char key[512];
        snprintf(key, sizeof key, "%s.graph", S(r, r->attrs[a].name_s));
        st = mp_graph_set_attr_int(g, id, key, r->attrs[a].i);
    }
    if (!st)
        st = constant_value(g, id);
    if (st)
        return st;
    if ((seen & (1u << NK_COST)) &&
        (st = mp_graph_set_node_cost(g, id, cost[0], cost[1], cost[2])))
        return st;
    return MP_OK;
}

static bool needs_producer(uint8_t kind)
{
    return kind == MP_KIND_ACTIVATION || kind == MP_KIND_GRADIENT ||
           kind == MP_KIND_OUTPUT;
}

/* Reads an array of tensor names, calling fn with each name and its
 * offset (the location path at the name). */
static mp_status read_name_list(rd *r,
                                mp_status (*fn)(rd *r, const char *tn,
                                                size_t off))
{
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_ARRAY)
        return type_err(r, &v, "an array");
    bool first = true, more;
    for (size_t i = 0;; i++) {
        if ((st = arr_next(r, &first, &more)))
            return st;
        if (!more)
            break;
        r->sb_len = 0;
        jv e;
        if ((st = rd_value(r, &e)))
            return st;
        mp__jloc_index(&r->loc, i);
        if (e.type != J_STRING)
            return type_err(r, &e, "a tensor name (a string)");
        if ((st = fn(r, S(r, e.s), e.off)))
            return st;
        mp__jloc_pop(&r->loc);
    }
    return MP_OK;
}

/* One name of the top level's "outputs". */
static mp_status top_output(rd *r, const char *tn, size_t off)
{
    mp_graph *g = r->g;
    uint32_t t;
    if (mp_graph_find_tensor(g, tn, &t) != MP_OK)
        return mp__jloc_err_at(&r->loc, MP_ERR_NO_PRODUCER, off,
                              "no tensor named \"%s\"", tn);
    const mp__tensor *tt = &g->tensors[t];
    if (r->declared[t] & 2)
        return mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, off,
                              "\"%s\" is listed twice", tn);
    r->declared[t] |= 2;
    if (tt->producer == MP_NONE && needs_producer(tt->declared_kind))
        return mp__jloc_err_at(&r->loc, MP_ERR_NO_PRODUCER, off,
                              "output \"%s\" (%s) is not produced by any "
                              "node",
                              tn,
                              mp_kind_name((mp_tensor_kind)tt->declared_kind));
    return mp_graph_mark_output(g, t);
}

/* A name of a subgraph's "inputs" or "outputs" (what): its tensor in *t,
 * the list (*ids, *n) grown to hold one more. */
static mp_status sub_name(rd *r, const char *tn, size_t off, const char *what,
                          uint32_t *t, uint32_t **ids, uint32_t n,
                          size_t *cap)
{
    if (!tn[0])
        return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, off,
                              "an %s needs a tensor name", what);
    mp_status st = tensor_ref(r, tn, t);
    return st ? st : mp__grow(r->ctx, (void **)ids, sizeof **ids, n + 1, cap);
}

/* One name of a subgraph's "outputs": its formal outputs, in order (a
 * name may come twice, or from an enclosing scope). */
static mp_status sub_output(rd *r, const char *tn, size_t off)
{
    mp_graph *g = r->g;
    uint32_t t;
    mp_status st = sub_name(r, tn, off, "output", &t, &g->sub_outputs,
                            g->n_sub_outputs, &r->cap_sub_out);
    if (st)
        return st;
    g->sub_outputs[g->n_sub_outputs++] = t;
    if (!(r->declared[t] & 2) && r->ref_node[t] == MP_NONE)
        r->ref_off[t] = off;
    r->declared[t] |= 2;
    return mp_graph_mark_output(g, t);
}

/* One name of a subgraph's "inputs": its formal inputs, in order
 * (declared in "tensors" or not; their kind is input). */
static mp_status sub_input(rd *r, const char *tn, size_t off)
{
    mp_graph *g = r->g;
    uint32_t t;
    mp_status st = sub_name(r, tn, off, "input", &t, &g->sub_inputs,
                            g->n_sub_inputs, &r->cap_sub_in);
    if (st)
        return st;
    mp__tensor *tt = &g->tensors[t];
    if (r->declared[t] & 4)
        return mp__jloc_err_at(&r->loc, MP_ERR_DUPLICATE, off,
                              "\"%s\" is listed twice", tn);
    if (tt->declared_kind != MP_KIND_ACTIVATION &&
        tt->declared_kind != MP_KIND_INPUT)
        return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, off,
                              "\"%s\" is declared with kind %s: an input "
                              "of a subgraph has kind input",
                              tn,
                              mp_kind_name((mp_tensor_kind)tt->declared_kind));
    g->sub_inputs[g->n_sub_inputs++] = t;
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
        r->loc.depth = 0;
        mp__jloc_key(&r->loc, "nodes");
        mp__jloc_index(&r->loc, nd);
        set_label(r, g->nodes[nd].name);
        const mp__attr *bi = mp__node_attr(&g->nodes[nd], "body.inputs");
        if (bi && bi->type == MP__ATTR_INT && r->ref_slot[t] >= bi->v.i)
            return mp__jloc_err_at(&r->loc, MP_ERR_NO_PRODUCER, r->ref_off[t],
                                  "\"%s\", used in a subgraph of the node, "
                                  "is neither declared nor produced in it "
                                  "or in an enclosing graph",
                                  tt->name);
        mp__jloc_key(&r->loc, "inputs");
        mp__jloc_index(&r->loc, r->ref_slot[t]);
        if (!(r->declared[t] & 1))
            return mp__jloc_err_at(&r->loc, MP_ERR_NO_PRODUCER, r->ref_off[t],
                                  "input \"%s\" is neither declared in "
                                  "\"tensors\" nor produced by any node",
                                  tt->name);
        return mp__jloc_err_at(&r->loc, MP_ERR_NO_PRODUCER, r->ref_off[t],
                              "input \"%s\" (%s) is not produced by any "
                              "node: declare it with kind input, weight or "
                              "constant",
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

static const char *const top_keys[] = {"format", "version", "name",
                                       "tensors", "nodes", "outputs",
                                       "metadata", "inputs", "opset", NULL};
enum { TOP_FORMAT, TOP_VERSION, TOP_NAME, TOP_TENSORS, TOP_NODES,
       TOP_OUTPUTS, TOP_METADATA, TOP_INPUTS, TOP_OPSET, TOP_N };

/* Reads the array at offset off element by element with fn. */
static mp_status read_list(rd *r, size_t off, const char *key,
                           mp_status (*fn)(rd *r, size_t i))
{
    r->pos = off;
    r->loc.depth = 0;
    r->loc.label[0] = 0;
    mp__jloc_key(&r->loc, key);
    jv v;
    mp_status st = rd_value(r, &v);
    if (st)
        return st;
    if (v.type != J_ARRAY)
        return type_err(r, &v, "an array");
    bool first = true, more;
    for (size_t i = 0;; i++) {
        if ((st = arr_next(r, &first, &more)))
            return st;
        if (!more)
            break;
        mp__jloc_index(&r->loc, i);
        if ((st = fn(r, i)))
            return st;
        mp__jloc_pop(&r->loc);
    }
    return MP_OK;
}

static mp_status tensor_fn(rd *r, size_t i)
{
    (void)i;
    return read_tensor(r);
}

/* One top-level member, its value at offset off. */
static mp_status top_member(rd *r, int k, size_t off)
{
    mp_status st;
    jv v;
    r->pos = off;
    r->loc.depth = 0;
    r->loc.label[0] = 0;
    switch (k) {
    case TOP_FORMAT:
        mp__jloc_key(&r->loc, "format");
        if ((st = rd_value(r, &v)))
            return st;
        if (v.type != J_STRING)
            return type_err(r, &v, "the string \"" FORMAT_NAME "\"");
        if (strcmp(S(r, v.s), FORMAT_NAME) != 0)
            return mp__jloc_err_at(&r->loc, MP_ERR_UNSUPPORTED, v.off,
                                  "format \"%s\" is not supported (expected "
                                  "\"" FORMAT_NAME "\")",
                                  S(r, v.s));
        break;
    case TOP_VERSION:
        mp__jloc_key(&r->loc, "version");
        if ((st = rd_value(r, &v)))
            return st;
        if (v.type != J_INT)
            return type_err(r, &v, "an integer");
        if (v.i != FORMAT_VERSION)
            return mp__jloc_err_at(&r->loc, MP_ERR_UNSUPPORTED, v.off,
                                  "version %lld is not supported (this "
                                  "memplan reads version %d)",
                                  (long long)v.i, FORMAT_VERSION);
        break;
    case TOP_NAME:
        mp__jloc_key(&r->loc, "name");
        if ((st = rd_value(r, &v)) || (st = need_string(r, &v, false)))
            return st;
        if ((st = mp_graph_set_name(r->g, S(r, v.s))))
            return st;
        break;
    case TOP_OPSET:
        /* the ONNX default-domain opset of the graph (g->onnx_opset);
         * subgraphs have their enclosing graph's */
        mp__jloc_key(&r->loc, "opset");
        if ((st = rd_value(r, &v)))
            return st;
        if (r->parent)
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, v.off,
                                  "a subgraph has the opset of the top "
                                  "level");
        if (v.type != J_INT || v.i < 1)
            return type_err(r, &v, "an integer >= 1 (the ONNX opset)");
        r->g->onnx_opset = v.i;
        break;
    case TOP_METADATA:
        mp__jloc_key(&r->loc, "metadata");
        if ((st = rd_value(r, &v)))
            return st;
        if (v.type != J_OBJECT)
            return type_err(r, &v, "an object");
        if ((st = skip_rest(r, &v, 1)))
            return st;
        break;
    case TOP_TENSORS: return read_list(r, off, "tensors", tensor_fn);
    case TOP_NODES: return read_list(r, off, "nodes", read_node);
    case TOP_OUTPUTS:
        mp__jloc_key(&r->loc, "outputs");
        return read_name_list(r, r->parent ? sub_output : top_output);
    case TOP_INPUTS:
        mp__jloc_key(&r->loc, "inputs");
        if (!r->parent)
            return mp__jloc_err_at(&r->loc, MP_ERR_PARSE, off,
                                  "\"inputs\" lists the inputs of a "
                                  "subgraph; the inputs of the top level are "
                                  "tensors of kind \"input\"");
        return read_name_list(r, sub_input);
    }
    r->loc.depth = 0;
    return MP_OK;
}

/* One pass, for documents whose top-level keys come in the order the
 * writer uses (format, version, name, metadata and "x-" keys, then
 * tensors, nodes, outputs, each present): saves the separate scan of the
 * top level.
 * Sets *other_order (reporting nothing) for any other order, or an
 * unknown key: the caller then starts again with the two-pass read. */
static mp_status read_canonical(rd *r, bool *other_order)
{
    *other_order = false;
    static const int stage_of[TOP_N] = {0, 0, 0, 1, 3, 4, 0, 2, 0};
    int stage = 0;
    unsigned seen = 0;
    bool first = true, more;
    mp_status st;
    for (;;) {
        r->sb_len = 0;
        size_t key, key_off;
        if ((st = obj_next(r, &first, &more, &key, &key_off)))
            return st;
        if (!more)
            break;
        int k = key_index(S(r, key), top_keys);
        if (k < 0) {
            if (!mp__json_is_ext_key(S(r, key)) || stage > 0) {
                *other_order = true;
                return MP_OK;
            }
            jv v;
            if ((st = rd_value(r, &v)) || (st = skip_rest(r, &v, 1)))
                return st;
            continue;
        }
        if (seen & (1u << k))
            return dup_key(r, S(r, key), key_off);
        seen |= 1u << k;
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
        ws(r);
        if ((st = top_member(r, k, r->pos)))
            return st;
    }
    ws(r);
    if (r->pos < r->len)
        return syn(r, r->pos, "end of file expected near '%c'",
                   r->t[r->pos]);
    return MP_OK;
}

static mp_status read_doc(rd *r)
{
    mp_status st;
    ws(r);
    if (r->pos >= r->len)
        return syn(r, 0, "empty file (expected a JSON object)");
    if (r->t[r->pos] == '[')
        return syn(r, r->pos, "expected a JSON object at the top level, got "
                              "an array");
    if (r->t[r->pos] != '{')
        return unexpected(r);
    r->pos++;
    size_t body = r->pos;
    /* a subgraph is read in two passes: a one-pass attempt given up at
     * each nesting level could read the innermost bodies 2^depth times */
    if (!r->parent) {
        bool other_order;
        if ((st = read_canonical(r, &other_order)))
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
        r->sb_len = 0;
        r->loc.depth = 0;
        r->loc.label[0] = 0;
        r->pos = body;
    }
    /* pass 1: the top-level members, by a fast lenient scan; values are
     * checked when read in pass 2. The strict pass below runs only to
     * word a syntax error. */
    size_t off[TOP_N] = {0}, unknown_off = 0, unknown_s = 0;
    bool has[TOP_N] = {false}, unknown = false;
    size_t ext_off[8], n_ext = 0; /* top-level "x-" values, checked below */
    bool ext_overflow = false;
    size_t p = r->pos, key_off, val_off;
    bool done = false, fast_ok = true;
    while (fast_ok && !done) {
        fast_ok = mp__json_next_member(r->t, r->len, &p, &key_off, &val_off,
                                      &done);
        if (!fast_ok || done)
            break;
        size_t key = 0;
        r->pos = key_off;
        if ((st = rd_string(r, true, &key)))
            return st;
        int k = key_index(S(r, key), top_keys);
        if (k >= 0 && has[k])
            return dup_key(r, S(r, key), key_off);
        if (k >= 0) {
            has[k] = true;
            off[k] = val_off;
        } else if (mp__json_is_ext_key(S(r, key))) {
            if (n_ext < sizeof ext_off / sizeof ext_off[0])
                ext_off[n_ext++] = val_off;
            else
                ext_overflow = true;
        } else if (!unknown) {
            unknown = true;
            unknown_off = key_off;
            unknown_s = key;
        }
    }
    if (fast_ok && r->parent) {
        r->end = p;
    } else if (fast_ok) {
        r->pos = p;
        ws(r);
        fast_ok = r->pos >= r->len;
    }
    if (!fast_ok || ext_overflow) {
        /* strict pass over the whole document */
        r->pos = body;
        bool first = true, more;
        for (;;) {
            size_t mark = r->sb_len, key;
            if ((st = obj_next(r, &first, &more, &key, &key_off)))
                return st;
            if (!more)
                break;
            jv v;
            if ((st = rd_value(r, &v)) || (st = skip_rest(r, &v, 1)))
                return st;
            r->sb_len = mark;
        }
        r->end = r->pos;
        ws(r);
        if (!r->parent && r->pos < r->len)
            return syn(r, r->pos, "end of file expected near '%c'",
                       r->t[r->pos]);
        if (!ext_overflow)
            return syn(r, body, "malformed JSON");
    }
    for (size_t e = 0; e < n_ext; e++) {
        jv v;
        r->pos = ext_off[e];
        if ((st = rd_value(r, &v)) || (st = skip_rest(r, &v, 1)))
            return st;
    }
    /* format and version first: a newer file is "unsupported", not full
     * of unknown keys */
    if (has[TOP_FORMAT] && (st = top_member(r, TOP_FORMAT, off[TOP_FORMAT])))
        return st;
    if (has[TOP_VERSION] &&
        (st = top_member(r, TOP_VERSION, off[TOP_VERSION])))
        return st;
    if (unknown)
        return unknown_key(r, S(r, unknown_s), unknown_off,
                           r->parent ? "format, version, name, inputs, "
                                       "tensors, nodes, outputs or metadata"
                                     : "format, version, name, opset, "
                                       "tensors, nodes, outputs or metadata");
    static const int order[] = {TOP_NAME, TOP_OPSET, TOP_METADATA,
                                TOP_TENSORS, TOP_INPUTS, TOP_NODES,
                                TOP_OUTPUTS};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (has[order[k]] && (st = top_member(r, order[k], off[order[k]])))
            return st;
    r->pos = r->end;
done:
    if ((st = grow_refs(r)))
        return st;
    return r->parent ? sub_sources(r) : check_sources(r);
}

static void rd_free(rd *r)
{
    void *arrays[] = {r->sb, r->ref_node, r->ref_slot, r->ref_off,
                      r->declared, r->in_s, r->in_off, r->out_s, r->out_off,
                      r->ids, r->oids, r->attrs, r->pi, r->pd, r->outer};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        mp__dealloc(r->ctx, arrays[k]);
}

/* At the '{' of a subgraph (the value of an attribute's "graph"): reads
 * it with a reader of its own, attaches it to r->g (*idx its index) and
 * moves past it. */
static mp_status read_sub(rd *r, int64_t *idx)
{
    ws(r);
    if (r->pos >= r->len || r->t[r->pos] != '{') {
        jv v;
        mp_status st = rd_value(r, &v);
        return st ? st : type_err(r, &v, "an object (a subgraph)");
    }
    if (r->sub_depth >= MAX_SUB_DEPTH)
        return mp__jloc_err_at(&r->loc, MP_ERR_UNSUPPORTED, r->pos,
                              "subgraphs nested deeper than %d",
                              MAX_SUB_DEPTH);
    rd *s = mp__calloc(r->ctx, 1, sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    mp__jloc_init(&s->loc, r->ctx, r->loc.src, r->t, r->len);
    mp__jloc_path(&r->loc, s->prefix, sizeof s->prefix);
    s->loc.prefix = s->prefix;
    s->ctx = r->ctx;
    s->t = r->t;
    s->len = r->len;
    s->pos = r->pos;
    s->parent = r;
    s->sub_depth = r->sub_depth + 1;
    mp_status st = mp_graph_create(r->ctx, &s->g);
    if (!st) {
        s->g->onnx_opset = r->g->onnx_opset;
        /* one string table for the whole tree (core/strval.h) */
        s->g->str_root = r->g->str_root ? r->g->str_root : r->g;
        st = read_doc(s);
    }
    if (!st)
        st = mp__grow(r->ctx, (void **)&r->g->subgraphs,
                     sizeof *r->g->subgraphs, r->g->n_subgraphs + 1,
                     &r->g->cap_subgraphs);
    if (!st) {
        *idx = (int64_t)r->g->n_subgraphs;
        r->g->subgraphs[r->g->n_subgraphs++] = s->g;
        s->g = NULL;
        r->pos = s->end;
    }
    mp_graph_destroy(s->g);
    rd_free(s);
    mp__dealloc(r->ctx, s);
    return st;
}

mp_status mp__json_graph_read(mp_ctx *ctx, const char *text, size_t len,
                             const char *src, mp_graph **out)
{
    *out = NULL;
    rd r;
    memset(&r, 0, sizeof r);
    mp__jloc_init(&r.loc, ctx, src, text, len);
    r.ctx = ctx;
    r.t = text;
    r.len = len;
    mp_status st = mp_graph_create(ctx, &r.g);
    if (!st)
        st = read_doc(&r);
    if (!st)
        st = mp__json_finalize(ctx, r.g, src);
    rd_free(&r);
    if (st) {
        mp_graph_destroy(r.g);
        return st;
    }
    *out = r.g;
    return MP_OK;
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
    char *text;
    size_t len;
    mp_status st = mp__read_file(ctx, path, &text, &len);
    if (st)
        return st;
    st = mp__json_graph_read(ctx, text, len, path, out);
    mp__dealloc(ctx, text);
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
        w->st = mp__grow(w->ctx, (void **)&w->p, 1, w->len + extra + 1,
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
    w_reserve(w, n * 6 + 2); /* every byte escaped as \u00XX at worst */
    if (w->st)
        return;
    w->p[w->len++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c >= 0x20 && *c != '"' && *c != '\\') {
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
        memcpy(w->p + w->len, e, el);
        w->len += el;
    }
    w_mem(w, "\"", 1);
}

static void w_u64(wbuf *w, uint64_t v)
{
    char b[24];
    size_t i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_mem(w, b + i, sizeof b - i);
}

static void w_i64(wbuf *w, int64_t v)
{
    if (v < 0) {
        w_mem(w, "-", 1);
        w_u64(w, 0 - (uint64_t)v);
    } else {
        w_u64(w, (uint64_t)v);
    }
}

/* Shortest of %.15g/%.16g/%.17g that reads back exactly, always with a
 * '.' or an exponent so that it reads back as a real. */
static void w_double(wbuf *w, double v, const char *what)
{
    if (!isfinite(v)) {
        if (!w->st)
            w->st = mp__err(w->ctx, MP_ERR_UNSUPPORTED,
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

static void w_indent(wbuf *w, unsigned n)
{
    static const char sp[] = "                                ";
    while (n) {
        unsigned k = n < sizeof sp - 1 ? n : (unsigned)(sizeof sp - 1);
        w_mem(w, sp, k);
        n -= k;
    }
}

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

static void write_graph(wbuf *w, const mp_graph *g, bool sub,
                        unsigned indent, unsigned depth);

static void write_tensor(wbuf *w, const mp__tensor *t, unsigned indent)
{
    w_indent(w, indent);
    w_str(w, "{\"name\": ");
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
    if (t->flags & MP__TF_BYTES_GIVEN) {
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

static void write_node(wbuf *w, const mp_graph *g, const mp__node *n,
                       unsigned indent, unsigned depth)
{
    char what[256];
    bool bodies = has_body(g, n);
    w_indent(w, indent);
    w_str(w, "{\"name\": ");
    w_quoted(w, n->name);
    w_str(w, ", \"op\": ");
    w_quoted(w, n->op);
    if (n->domain && n->domain[0]) {
        w_str(w, ", \"domain\": ");
        w_quoted(w, n->domain);
    }
    w_str(w, ", \"inputs\": ");
    write_ids(w, g, n->inputs, written_inputs(g, n));
    w_str(w, ", \"outputs\": ");
    uint32_t n_out = n->n_out;
    if (n_out && is_body_output(g, (uint32_t)(n - g->nodes),
                                n->outputs[n_out - 1]))
        n_out--;
    write_ids(w, g, n->outputs, n_out);
    if (n->n_attrs) {
        w_str(w, ", \"attributes\": {");
        const char *sep = "";
        for (uint32_t a = 0; a < n->n_attrs; a++) {
            const mp__attr *at = &n->attrs[a];
            if (bodies && strcmp(at->name, "body.inputs") == 0 &&
                at->type == MP__ATTR_INT)
                continue;
            snprintf(what, sizeof what, "node '%s': attribute '%s'", n->name,
                     at->name);
            w_str(w, sep);
            sep = ", ";
            const mp_graph *body = attr_body(g, at);
            if (body) { /* NAME.graph: "NAME": {"graph": {...}} */
                char *key = mp__strdup(w->ctx, at->name);
                if (!key) {
                    w->st = w->st ? w->st : MP_ERR_NOMEM;
                    return;
                }
                key[strlen(key) - 6] = 0;
                w_quoted(w, key);
                mp__dealloc(w->ctx, key);
                w_str(w, ": {\"graph\": ");
                write_graph(w, body, true, indent + 2, depth + 1);
                w_str(w, "}");
                continue;
            }
            w_quoted(w, at->name);
            w_str(w, ": ");
            switch (at->type) {
            case MP__ATTR_INT: w_i64(w, at->v.i); break;
            case MP__ATTR_FLOAT: w_double(w, at->v.f, what); break;
            case MP__ATTR_STRING: w_quoted(w, at->v.s); break;
            case MP__ATTR_INTS:
            case MP__ATTR_FLOATS:
                w_str(w, "[");
                for (uint32_t k = 0; k < at->n; k++) {
                    if (k)
                        w_str(w, ", ");
                    if (at->type == MP__ATTR_INTS)
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

/* A graph object; a subgraph (sub) has "inputs" and its outputs in order,
 * and no format or version. indent: of its braces. */
static void write_graph(wbuf *w, const mp_graph *g, bool sub,
                        unsigned indent, unsigned depth)
{
    if (depth > MAX_SUB_DEPTH) {
        if (!w->st)
            w->st = mp__err(w->ctx, MP_ERR_UNSUPPORTED, "JSON writer: "
                           "subgraphs nested deeper than %d", MAX_SUB_DEPTH);
        return;
    }
    unsigned in = indent + 2;
    w_str(w, "{\n");
    if (!sub) {
        w_indent(w, in);
        w_str(w, "\"format\": \"" FORMAT_NAME "\",\n");
        w_indent(w, in);
        w_str(w, "\"version\": 1,\n");
        if (g->onnx_opset > 0) {
            w_indent(w, in);
            w_str(w, "\"opset\": ");
            w_i64(w, g->onnx_opset);
            w_str(w, ",\n");
        }
    }
    if (g->name && g->name[0]) {
        w_indent(w, in);
        w_str(w, "\"name\": ");
        w_quoted(w, g->name);
        w_str(w, ",\n");
    }
    if (sub) {
        w_indent(w, in);
        w_str(w, "\"inputs\": ");
        write_ids(w, g, g->sub_inputs, g->n_sub_inputs);
        w_str(w, ",\n");
    }
    w_indent(w, in);
    w_str(w, "\"tensors\": [");
    bool first = true;
    for (uint32_t i = 0; i < g->n_tensors; i++) {
        if (skip_tensor(g, i, sub))
            continue;
        w_str(w, first ? "\n" : ",\n");
        first = false;
        write_tensor(w, &g->tensors[i], in + 2);
    }
    if (!first) {
        w_str(w, "\n");
        w_indent(w, in);
    }
    w_str(w, "],\n");
    w_indent(w, in);
    w_str(w, "\"nodes\": [");
    for (size_t i = 0; i < g->n_nodes; i++) {
        w_str(w, i ? ",\n" : "\n");
        write_node(w, g, &g->nodes[i], in + 2, depth);
    }
    if (g->n_nodes) {
        w_str(w, "\n");
        w_indent(w, in);
    }
    w_str(w, "],\n");
    w_indent(w, in);
    w_str(w, "\"outputs\": ");
    if (sub) {
        write_ids(w, g, g->sub_outputs, g->n_sub_outputs);
    } else {
        w_str(w, "[");
        first = true;
        for (size_t i = 0; i < g->n_tensors; i++) {
            if (!(g->tensors[i].flags & MP__TF_OUTPUT))
                continue;
            if (!first)
                w_str(w, ", ");
            first = false;
            w_quoted(w, g->tensors[i].name);
        }
        w_str(w, "]");
    }
    w_str(w, "\n");
    w_indent(w, indent);
    w_str(w, "}");
}

mp_status mp_graph_to_json_string(const mp_graph *g, char **out)
{
    if (!g || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    wbuf w = {g->ctx, NULL, 0, 0, MP_OK};
    w_reserve(&w, 256 + g->n_tensors * 64 + g->n_nodes * 128);
    write_graph(&w, g, false, 0, 0);
    w_str(&w, "\n");
    if (w.st) {
        mp__dealloc(g->ctx, w.p);
        return w.st;
    }
    w.p[w.len] = 0;
    *out = w.p;
    return MP_OK;
}

mp_status mp_graph_save_json(const mp_graph *g, const char *path)
{
    if (!g || !path)
        return g ? mp__err(g->ctx, MP_ERR_INVALID_ARG,
                          "mp_graph_save_json: NULL path")
                 : MP_ERR_INVALID_ARG;
    char *s;
    mp_status st = mp_graph_to_json_string(g, &s);
    if (st)
        return st;
    st = mp__write_file(g->ctx, path, s, strlen(s));
    mp__dealloc(g->ctx, s);
    return st;
}
