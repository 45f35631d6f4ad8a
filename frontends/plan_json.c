/* Plan JSON: writer and reader (schema in docs/plan-format.md).
 *
 * Both directions are hand-written rather than going through jansson's
 * DOM: a 100k-node plan is ~15 MB of JSON with 300k small objects, which
 * jansson takes over half a second to build (a hash table per object),
 * while the streaming reader below resolves names as it goes and keeps the
 * position of every value, so semantic errors name file:line:column too.
 *
 * The reader loads what it reads: it checks syntax, types, required keys
 * and that every name exists in the graph, but not whether the plan is
 * right (resident inputs, overlaps, figures): that is mp_verify_plan's job,
 * so a tampered plan reaches the verifier intact. */
#include "sched.h"
#include "json_tok.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_FORMAT "memplan-plan"
#define PLAN_VERSION 1
#define MAX_DEPTH 256

/* ======================================================================
 * Writer
 * ====================================================================== */
typedef struct wbuf {
    mp_ctx *ctx;
    char *buf;
    size_t len, cap;
    mp_status st;
} wbuf;

static void w_reserve(wbuf *w, size_t extra)
{
    if (w->st)
        return;
    if (w->len + extra + 1 <= w->cap)
        return;
    void *p = w->buf;
    w->st = mp__grow(w->ctx, &p, 1, w->len + extra + 1, &w->cap);
    w->buf = p;
}

static void w_raw(wbuf *w, const char *s, size_t n)
{
    w_reserve(w, n);
    if (w->st)
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void w_str(wbuf *w, const char *s) { w_raw(w, s, strlen(s)); }

static void w_u64(wbuf *w, uint64_t v)
{
    char tmp[24];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_raw(w, tmp + i, sizeof tmp - (size_t)i);
}

/* Shortest "%.Ng" that reads back as the same double. */
static void w_double(wbuf *w, double v)
{
    char tmp[40];
    if (!isfinite(v))
        v = 0.0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* keep it a JSON number that reads back as a real: "1" -> "1.0" is not
     * needed, the reader accepts integers for real fields */
    w_str(w, tmp);
}

static void w_json_string(wbuf *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    w_reserve(w, strlen(s) + 2);
    w_raw(w, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        w_raw(w, run, (size_t)(s - run));
        run = s + 1;
        switch (c) {
        case '"': w_raw(w, "\\\"", 2); break;
        case '\\': w_raw(w, "\\\\", 2); break;
        case '\n': w_raw(w, "\\n", 2); break;
        case '\t': w_raw(w, "\\t", 2); break;
        case '\r': w_raw(w, "\\r", 2); break;
        case '\b': w_raw(w, "\\b", 2); break;
        case '\f': w_raw(w, "\\f", 2); break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            w_raw(w, u, 6);
        }
        }
    }
    w_raw(w, run, (size_t)(s - run));
    w_raw(w, "\"", 1);
}

static void w_key_u64(wbuf *w, const char *key, uint64_t v)
{
    w_str(w, key);
    w_u64(w, v);
}

static mp_status plan_write(const mp_plan *p, wbuf *w)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    const mp_figures *f = &p->fig;

    /* the format has no pools yet (issue 9): refuse rather than write
     * per-pool offsets as if they shared one arena */
    if (p->n_pools)
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "plan JSON cannot hold memory pools yet (%u pools)",
                      (unsigned)p->n_pools);

    /* every index must name something in the graph, or the file would not
     * read back */
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const mp_step *s = &p->steps[i];
        bool is_node = s->kind == MP_STEP_COMPUTE ||
                       s->kind == MP_STEP_RECOMPUTE;
        if ((unsigned)s->kind > MP_STEP_PREFETCH)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan step %u has an unknown kind %d", i,
                          (int)s->kind);
        if (s->index >= (is_node ? g->n_nodes : g->n_tensors))
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan step %u (%s) refers to %s %u, the graph has "
                          "%zu",
                          i, mp_step_kind_name(s->kind),
                          is_node ? "node" : "tensor", s->index,
                          is_node ? g->n_nodes : g->n_tensors);
    }
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].tensor >= g->n_tensors)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                          "plan block %u refers to tensor %u, the graph has "
                          "%zu",
                          i, p->blocks[i].tensor, g->n_tensors);

    /* ~40 bytes per step and ~90 per block, plus names */
    w_reserve(w, 1024 + (size_t)p->n_steps * 48 + (size_t)p->n_blocks * 96);

    w_str(w, "{\n  \"format\": \"" PLAN_FORMAT "\",\n  \"version\": ");
    w_u64(w, PLAN_VERSION);
    w_str(w, ",\n  \"graph\": {\"name\": ");
    if (g->name)
        w_json_string(w, g->name);
    else
        w_str(w, "null");
    w_key_u64(w, ", \"tensors\": ", g->n_tensors);
    w_key_u64(w, ", \"nodes\": ", g->n_nodes);
    w_str(w, "},\n  \"figures\": {");
    w_key_u64(w, "\"lower_bound_bytes\": ", f->lower_bound_bytes);
    w_key_u64(w, ", \"arena_bytes\": ", f->arena_bytes);
    w_key_u64(w, ", \"persistent_bytes\": ", f->persistent_bytes);
    w_key_u64(w, ", \"peak_bytes\": ", f->peak_bytes);
    w_key_u64(w, ", \"no_reuse_bytes\": ", f->no_reuse_bytes);
    w_key_u64(w, ", \"alignment\": ", f->alignment);
    w_key_u64(w, ", \"peak_step\": ", f->peak_step);
    w_str(w, ", \"status\": ");
    w_json_string(w, mp_solve_status_name(f->status));
    w_str(w, ", \"solver\": ");
    if (f->solver)
        w_json_string(w, f->solver);
    else
        w_str(w, "null");
    w_str(w, ", \"solve_seconds\": ");
    w_double(w, f->solve_seconds);
    w_str(w, "},\n  \"schedule\": [");
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const mp_step *s = &p->steps[i];
        bool is_node = s->kind == MP_STEP_COMPUTE ||
                       s->kind == MP_STEP_RECOMPUTE;
        w_str(w, i ? ",\n    {\"step\": \"" : "\n    {\"step\": \"");
        w_str(w, mp_step_kind_name(s->kind));
        if (is_node) {
            w_str(w, "\", \"node\": ");
            w_json_string(w, g->nodes[s->index].name);
        } else {
            w_str(w, "\", \"tensor\": ");
            w_json_string(w, g->tensors[s->index].name);
        }
        w_str(w, "}");
    }
    w_str(w, p->n_steps ? "\n  ],\n  \"blocks\": [" : "],\n  \"blocks\": [");
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        w_str(w, i ? ",\n    {\"tensor\": " : "\n    {\"tensor\": ");
        w_json_string(w, g->tensors[b->tensor].name);
        w_key_u64(w, ", \"offset\": ", b->offset);
        w_key_u64(w, ", \"size\": ", b->size);
        w_key_u64(w, ", \"first\": ", b->first);
        w_key_u64(w, ", \"end\": ", b->end);
        if (p->block_over && p->block_over[i] < g->n_tensors) {
            /* optional: written in place over that tensor (issue 4) */
            w_str(w, ", \"over\": ");
            w_json_string(w, g->tensors[p->block_over[i]].name);
        }
        w_str(w, "}");
    }
    w_str(w, p->n_blocks ? "\n  ]" : "]");
    if (p->fused) {
        /* optional: tensors inside fused chains, without memory */
        bool first = true;
        w_str(w, ",\n  \"fused\": [");
        for (size_t t = 0; t < g->n_tensors; t++)
            if (p->fused[t]) {
                w_str(w, first ? "" : ", ");
                w_json_string(w, g->tensors[t].name);
                first = false;
            }
        w_str(w, "]");
    }
    w_str(w, "\n}\n");
    if (w->st == MP_OK)
        w->buf[w->len] = 0;
    return w->st;
}

mp_status mp_plan_to_json_string(const mp_plan *p, char **out)
{
    if (!out)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_to_json_string: out is NULL")
                 : MP_ERR_INVALID_ARG;
    *out = NULL;
    if (!p || !p->graph)
        return MP_ERR_INVALID_ARG;
    wbuf w = {p->ctx, NULL, 0, 0, MP_OK};
    mp_status st = plan_write(p, &w);
    if (st) {
        mp__dealloc(p->ctx, w.buf);
        return st;
    }
    *out = w.buf;
    return MP_OK;
}

mp_status mp_plan_save_json(const mp_plan *p, const char *path)
{
    if (!p || !p->graph)
        return MP_ERR_INVALID_ARG;
    if (!path)
        return mp__err(p->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_save_json: path is NULL");
    wbuf w = {p->ctx, NULL, 0, 0, MP_OK};
    mp_status st = plan_write(p, &w);
    if (st) {
        mp__dealloc(p->ctx, w.buf);
        return st;
    }
    st = mp__write_file(p->ctx, path, w.buf, w.len);
    mp__dealloc(p->ctx, w.buf);
    return st;
}

/* ======================================================================
 * Reader
 * ====================================================================== */
typedef struct rd {
    mp_ctx *ctx;
    mp_graph *g;
    const char *src;          /* file name for messages */
    const char *beg, *p, *end;
    char *sbuf;               /* decoded string, NUL-terminated */
    size_t scap;
    int depth;
    /* the path of the value being read, formatted only for a message */
    const char *psec, *pkey;
    size_t pidx;
    char pbuf[96];
    uint32_t last_node, last_tensor;   /* previous names resolved */
} rd;

/* The path for a message: `path` when given, else section[index].key from
 * the reader's state (formatting it for every value would cost more than
 * parsing the value). */
static const char *P(rd *r, const char *path)
{
    if (path)
        return path;
    if (r->pkey)
        snprintf(r->pbuf, sizeof r->pbuf, "%s[%zu].%s", r->psec, r->pidx,
                 r->pkey);
    else
        snprintf(r->pbuf, sizeof r->pbuf, "%s[%zu]", r->psec, r->pidx);
    return r->pbuf;
}

enum jtype { J_STRING, J_NUMBER, J_OBJECT, J_ARRAY, J_BOOL, J_NULL, J_BAD };

static const char *jtype_name(enum jtype t)
{
    static const char *const n[] = {"a string", "a number", "an object",
                                    "an array", "a boolean", "null",
                                    "an invalid token"};
    return n[t];
}

/* Error at position pos: "file:line:column: <path>: <text>". */
static mp_status rd_err(rd *r, const char *pos, mp_status st,
                        const char *fmt, ...) MP__PRINTF(4, 5);
static mp_status rd_err(rd *r, const char *pos, mp_status st,
                        const char *fmt, ...)
{
    int line, col;   /* columns count characters (UTF-8), as jansson's */
    mp__jtok_line_col(r->beg, (size_t)(r->end - r->beg),
                     pos > r->end ? (size_t)(r->end - r->beg)
                                  : (size_t)(pos - r->beg),
                     &line, &col);
    char text[MP__MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return mp__err(r->ctx, st, "%s:%d:%d: %s", r->src, line, col, text);
}

/* The shared tokenizer (json_tok.h) at the reader's position. */
static mp__jtok tok(const rd *r)
{
    mp__jtok k;
    mp__jtok_init(&k, r->beg, (size_t)(r->end - r->beg),
                 (size_t)(r->p - r->beg));
    return k;
}

static void ws(rd *r)
{
    mp__jtok k = tok(r);
    mp__jtok_ws(&k);
    r->p = r->beg + k.pos;
}

static enum jtype peek(rd *r)
{
    ws(r);
    if (r->p >= r->end)
        return J_BAD;
    switch (*r->p) {
    case '"': return J_STRING;
    case '{': return J_OBJECT;
    case '[': return J_ARRAY;
    case 't': case 'f': return J_BOOL;
    case 'n': return J_NULL;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5':
    case '6': case '7': case '8': case '9': return J_NUMBER;
    default: return J_BAD;
    }
}

static mp_status syntax(rd *r, const char *what)
{
    if (r->p >= r->end)
        return rd_err(r, r->p, MP_ERR_PARSE,
                      "syntax error: unexpected end of input, expected %s",
                      what);
    unsigned char c = (unsigned char)*r->p;
    if (c >= 0x20 && c < 0x7f)
        return rd_err(r, r->p, MP_ERR_PARSE,
                      "syntax error: unexpected '%c', expected %s", c, what);
    return rd_err(r, r->p, MP_ERR_PARSE,
                  "syntax error: unexpected byte 0x%02x, expected %s", c,
                  what);
}

static mp_status s_reserve(rd *r, size_t need)
{
    if (need <= r->scap)
        return MP_OK;
    void *p = r->sbuf;
    mp_status st = mp__grow(r->ctx, &p, 1, need, &r->scap);
    r->sbuf = p;
    return st;
}

/* Words a string or number the tokenizer refused (messages and positions
 * as this reader has always given them). */
static mp_status tok_fail(rd *r, const mp__jtok *k)
{
    const char *start = r->beg + k->err.start, *at = r->beg + k->err.at;
    char c = k->err.c;
    switch (k->err.kind) {
    case MP__JTOK_UNTERMINATED:
        return rd_err(r, start, MP_ERR_PARSE,
                      "syntax error: unterminated string");
    case MP__JTOK_CONTROL:
        return rd_err(r, at, MP_ERR_PARSE,
                      "syntax error: control character in string");
    case MP__JTOK_BAD_HEX:
        return rd_err(r, at, MP_ERR_PARSE,
                      "syntax error: bad \\u escape in string");
    case MP__JTOK_SURROGATE:
        return rd_err(r, start, MP_ERR_PARSE,
                      "syntax error: unpaired surrogate in \\u escape");
    case MP__JTOK_NUL:
        return rd_err(r, start, MP_ERR_PARSE,
                      "\\u0000 is not allowed in a string");
    case MP__JTOK_BAD_ESCAPE:
        return rd_err(r, at, MP_ERR_PARSE,
                      "syntax error: bad escape '\\%c' in string",
                      (c >= 0x20 && c < 0x7f) ? c : '?');
    case MP__JTOK_LEADING_ZERO:
        r->p = at;
        return rd_err(r, at, MP_ERR_PARSE,
                      "syntax error: leading zero in a number");
    case MP__JTOK_NUM_DIGIT:
        r->p = at;
        return syntax(r, "a digit");
    case MP__JTOK_NUM_FRAC:
        r->p = at;
        return syntax(r, "a digit after '.'");
    case MP__JTOK_NUM_EXP:
        r->p = at;
        return syntax(r, "a digit in the exponent");
    default:
        r->p = at;
        return syntax(r, "a JSON value");
    }
}

/* Reads a string at r->p (which is '"') into r->sbuf. */
static mp_status read_string(rd *r, size_t *len_out)
{
    mp__jtok k = tok(r);
    mp_status st = mp__jtok_string(&k, r->ctx, &r->sbuf, &r->scap, 0,
                                  len_out);
    if (st)
        return st == MP_ERR_PARSE ? tok_fail(r, &k) : st;
    r->p = r->beg + k.pos;
    return MP_OK;
}

/* Scans a JSON number at r->p; sets *is_int when it has no fraction or
 * exponent. */
static mp_status scan_number(rd *r, const char **num_end, bool *is_int)
{
    mp__jtok k = tok(r);
    size_t end;
    if (mp__jtok_number(&k, &end, is_int))
        return tok_fail(r, &k);
    *num_end = r->beg + end;
    return MP_OK;
}

static mp_status expect_literal(rd *r, const char *lit)
{
    mp__jtok k = tok(r);
    if (!mp__jtok_literal(&k, lit))
        return syntax(r, "a JSON value");
    r->p = r->beg + k.pos;
    return MP_OK;
}

static mp_status skip_value(rd *r);

/* Object and array iteration. *state is 0 before the first member. */
static mp_status obj_open(rd *r)
{
    ws(r);
    if (r->p >= r->end || *r->p != '{')
        return syntax(r, "'{'");
    if (++r->depth > MAX_DEPTH)
        return rd_err(r, r->p, MP_ERR_PARSE, "nesting deeper than %d",
                      MAX_DEPTH);
    r->p++;
    return MP_OK;
}

/* Sets *more to true and reads the key into r->sbuf (then consumes ':'),
 * or sets *more to false at the closing brace. */
static mp_status obj_next(rd *r, int *state, bool *more,
                          const char **key_pos)
{
    mp__jtok k = tok(r);
    mp_status st = mp__jtok_obj_next(&k, state, more);
    if (st) {
        r->p = r->beg + k.err.at;
        return syntax(r, k.err.kind == MP__JTOK_WANT_COMMA ? "',' or '}'"
                                                          : "a string key");
    }
    r->p = r->beg + k.pos;
    if (!*more) {
        r->depth--;
        return MP_OK;
    }
    *key_pos = r->p;
    if ((st = read_string(r, NULL)))
        return st;
    k = tok(r);
    if (mp__jtok_colon(&k)) {
        r->p = r->beg + k.err.at;
        return syntax(r, "':'");
    }
    r->p = r->beg + k.pos;
    return MP_OK;
}

static mp_status arr_open(rd *r)
{
    ws(r);
    if (r->p >= r->end || *r->p != '[')
        return syntax(r, "'['");
    if (++r->depth > MAX_DEPTH)
        return rd_err(r, r->p, MP_ERR_PARSE, "nesting deeper than %d",
                      MAX_DEPTH);
    r->p++;
    return MP_OK;
}

static mp_status arr_next(rd *r, int *state, bool *more)
{
    mp__jtok k = tok(r);
    mp_status st = mp__jtok_arr_next(&k, state, more);
    if (st) {
        r->p = r->beg + k.err.at;
        return syntax(r, "',' or ']'");
    }
    r->p = r->beg + k.pos;
    if (!*more)
        r->depth--;
    return MP_OK;
}

static mp_status skip_value(rd *r)
{
    mp_status st;
    bool more, is_int;
    int state = 0;
    const char *kp, *ne = NULL;
    switch (peek(r)) {
    case J_STRING: return read_string(r, NULL);
    case J_NUMBER:
        st = scan_number(r, &ne, &is_int);
        if (st == MP_OK)
            r->p = ne;
        return st;
    case J_BOOL: return expect_literal(r, *r->p == 't' ? "true" : "false");
    case J_NULL: return expect_literal(r, "null");
    case J_OBJECT:
        if ((st = obj_open(r)))
            return st;
        for (;;) {
            if ((st = obj_next(r, &state, &more, &kp)))
                return st;
            if (!more)
                return MP_OK;
            if ((st = skip_value(r)))
                return st;
        }
    case J_ARRAY:
        if ((st = arr_open(r)))
            return st;
        for (;;) {
            if ((st = arr_next(r, &state, &more)))
                return st;
            if (!more)
                return MP_OK;
            if ((st = skip_value(r)))
                return st;
        }
    default: return syntax(r, "a JSON value");
    }
}

/* ---- typed values; `path` names the value in messages ------------------ */
static mp_status wrong_type(rd *r, const char *path, const char *want)
{
    enum jtype t = peek(r);
    if (t == J_BAD)
        return syntax(r, "a JSON value");
    const char *pos = r->p;
    /* make sure the bad value is at least well-formed JSON: a syntax error
     * further on is reported as such */
    mp_status st = skip_value(r);
    if (st)
        return st;
    return rd_err(r, pos, MP_ERR_PARSE, "%s: expected %s, got %s",
                  P(r, path), want, jtype_name(t));
}

static mp_status get_uint(rd *r, const char *path, uint64_t max,
                          uint64_t *out)
{
    if (peek(r) != J_NUMBER)
        return wrong_type(r, path, "a non-negative integer");
    const char *pos = r->p, *ne = NULL;
    bool is_int;
    mp_status st = scan_number(r, &ne, &is_int);
    if (st)
        return st;
    if (!is_int || *pos == '-') {
        r->p = ne;
        return rd_err(r, pos, MP_ERR_PARSE,
                      "%s: expected a non-negative integer, got %.*s",
                      P(r, path),
                      (int)(ne - pos < 40 ? ne - pos : 40), pos);
    }
    uint64_t v = 0;
    for (const char *q = pos; q < ne; q++) {
        if (!mp__mul_u64(v, 10, &v) ||
            !mp__add_u64(v, (uint64_t)(*q - '0'), &v) || v > max) {
            r->p = ne;
            return rd_err(r, pos, MP_ERR_PARSE,
                          "%s: integer %.*s out of range (at most %llu)",
                          P(r, path), (int)(ne - pos < 40 ? ne - pos : 40),
                          pos, (unsigned long long)max);
        }
    }
    r->p = ne;
    *out = v;
    return MP_OK;
}

static mp_status get_u32(rd *r, const char *path, uint32_t *out)
{
    uint64_t v;
    mp_status st = get_uint(r, path, UINT32_MAX, &v);
    if (st == MP_OK)
        *out = (uint32_t)v;
    return st;
}

static mp_status get_double(rd *r, const char *path, double *out)
{
    if (peek(r) != J_NUMBER)
        return wrong_type(r, path, "a number");
    const char *pos = r->p, *ne = NULL;
    bool is_int;
    mp_status st = scan_number(r, &ne, &is_int);
    if (st)
        return st;
    size_t n = (size_t)(ne - pos);
    if ((st = s_reserve(r, n + 1)))
        return st;
    memcpy(r->sbuf, pos, n);
    r->sbuf[n] = 0;
    double v = strtod(r->sbuf, NULL);
    r->p = ne;
    if (!isfinite(v))
        return rd_err(r, pos, MP_ERR_PARSE, "%s: number %s out of range",
                      P(r, path), r->sbuf);
    *out = v;
    return MP_OK;
}

/* A string into r->sbuf; *is_null set when null is allowed and given. */
static mp_status get_string(rd *r, const char *path, bool allow_null,
                            bool *is_null)
{
    enum jtype t = peek(r);
    if (is_null)
        *is_null = false;
    if (t == J_NULL && allow_null) {
        if (is_null)
            *is_null = true;
        return expect_literal(r, "null");
    }
    if (t != J_STRING)
        return wrong_type(r, path, allow_null ? "a string or null"
                                              : "a string");
    return read_string(r, NULL);
}

/* ---- the plan ----------------------------------------------------------- */
typedef struct plan_acc {
    mp_step *steps;
    size_t n_steps, cap_steps;
    mp_block *blocks;
    size_t n_blocks, cap_blocks;
    mp_figures fig;
    bool solver_null;
    char solver[32];
    uint32_t *over;        /* per block: "over" tensor or MP_NONE */
    size_t cap_over;
    bool any_over;
    uint8_t *fused;        /* per tensor, from "fused"; NULL when absent */
} plan_acc;

/* Bit per key, for "missing" and "duplicate" checks. */
static int key_index(const char *key, const char *const *keys, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(key, keys[i]) == 0)
            return i;
    return -1;
}

static mp_status dup_key(rd *r, const char *kp, const char *path,
                         const char *key)
{
    return rd_err(r, kp, MP_ERR_PARSE, "%s: duplicate key \"%s\"",
                  P(r, path), key);
}

/* Unknown keys are errors (a typo must not pass silently), except
 * extension keys "x-..." whose values are skipped; as in graph JSON. */
static mp_status unknown_key(rd *r, const char *kp, const char *path)
{
    if (strncmp(r->sbuf, "x-", 2) == 0)
        return skip_value(r);
    return rd_err(r, kp, MP_ERR_PARSE, "%s: unknown key \"%s\"", P(r, path),
                  r->sbuf);
}

static mp_status missing(rd *r, const char *pos, const char *path,
                         const char *const *keys, int n, unsigned seen)
{
    for (int i = 0; i < n; i++)
        if (!(seen & (1u << i)))
            return rd_err(r, pos, MP_ERR_PARSE, "%s: missing key \"%s\"",
                          P(r, path), keys[i]);
    return MP_OK;
}

static mp_status read_graph_section(rd *r)
{
    static const char *const keys[] = {"name", "tensors", "nodes"};
    const char *opos;
    unsigned seen = 0;
    int state = 0;
    bool more;
    const char *kp;
    const char *vpos[3] = {NULL, NULL, NULL};
    uint32_t nt = 0, nn = 0;
    mp_status st;
    ws(r);
    opos = r->p;
    if (peek(r) != J_OBJECT)
        return wrong_type(r, "graph", "an object");
    if ((st = obj_open(r)))
        return st;
    for (;;) {
        if ((st = obj_next(r, &state, &more, &kp)))
            return st;
        if (!more)
            break;
        int k = key_index(r->sbuf, keys, 3);
        if (k < 0) {
            if ((st = unknown_key(r, kp, "graph")))
                return st;
            continue;
        }
        if (seen & (1u << k))
            return dup_key(r, kp, "graph", keys[k]);
        seen |= 1u << k;
        vpos[k] = r->p;
        if (k == 0)
            st = get_string(r, "graph.name", true, NULL);
        else if (k == 1)
            st = get_u32(r, "graph.tensors", &nt);
        else
            st = get_u32(r, "graph.nodes", &nn);
        if (st)
            return st;
    }
    if ((st = missing(r, opos, "graph", keys, 3, seen)))
        return st;
    /* the plan names tensors and nodes of one graph: a different count
     * means it was made for another graph */
    if (nt != r->g->n_tensors)
        return rd_err(r, vpos[1], MP_ERR_GRAPH,
                      "graph.tensors: the plan was made for a graph of %u "
                      "tensors, this graph has %zu",
                      nt, r->g->n_tensors);
    if (nn != r->g->n_nodes)
        return rd_err(r, vpos[2], MP_ERR_GRAPH,
                      "graph.nodes: the plan was made for a graph of %u "
                      "nodes, this graph has %zu",
                      nn, r->g->n_nodes);
    return MP_OK;
}

static mp_status read_figures(rd *r, plan_acc *a)
{
    static const char *const keys[] = {
        "lower_bound_bytes", "arena_bytes", "persistent_bytes",
        "peak_bytes", "no_reuse_bytes", "alignment", "peak_step",
        "status", "solver", "solve_seconds"};
    enum { NK = 10 };
    char path[64];
    const char *opos;
    unsigned seen = 0;
    int state = 0;
    bool more;
    const char *kp;
    mp_status st;
    mp_figures *f = &a->fig;
    ws(r);
    opos = r->p;
    if (peek(r) != J_OBJECT)
        return wrong_type(r, "figures", "an object");
    if ((st = obj_open(r)))
        return st;
    for (;;) {
        if ((st = obj_next(r, &state, &more, &kp)))
            return st;
        if (!more)
            break;
        int k = key_index(r->sbuf, keys, NK);
        if (k < 0) {
            if ((st = unknown_key(r, kp, "figures")))
                return st;
            continue;
        }
        if (seen & (1u << k))
            return dup_key(r, kp, "figures", keys[k]);
        seen |= 1u << k;
        snprintf(path, sizeof path, "figures.%s", keys[k]);
        const char *vp = r->p;
        switch (k) {
        case 0: st = get_uint(r, path, UINT64_MAX, &f->lower_bound_bytes);
            break;
        case 1: st = get_uint(r, path, UINT64_MAX, &f->arena_bytes); break;
        case 2: st = get_uint(r, path, UINT64_MAX, &f->persistent_bytes);
            break;
        case 3: st = get_uint(r, path, UINT64_MAX, &f->peak_bytes); break;
        case 4: st = get_uint(r, path, UINT64_MAX, &f->no_reuse_bytes);
            break;
        case 5: st = get_uint(r, path, UINT64_MAX, &f->alignment); break;
        case 6: st = get_u32(r, path, &f->peak_step); break;
        case 7: {
            if ((st = get_string(r, path, false, NULL)))
                return st;
            int found = -1;
            for (int s = MP_SOLVE_NONE; s <= MP_SOLVE_TIMEOUT; s++)
                if (strcmp(r->sbuf, mp_solve_status_name(
                                        (mp_solve_status)s)) == 0)
                    found = s;
            if (found < 0)
                return rd_err(r, vp, MP_ERR_PARSE,
                              "%s: unknown status \"%s\" (expected none, "
                              "optimal, feasible, infeasible or timeout)",
                              path, r->sbuf);
            f->status = (mp_solve_status)found;
            break;
        }
        case 8: {
            size_t len;
            if (peek(r) == J_NULL) {
                a->solver_null = true;
                st = expect_literal(r, "null");
                break;
            }
            if (peek(r) != J_STRING)
                return wrong_type(r, path, "a string or null");
            if ((st = read_string(r, &len)))
                return st;
            if (len >= sizeof a->solver)
                return rd_err(r, vp, MP_ERR_PARSE,
                              "%s: solver name longer than %zu bytes", path,
                              sizeof a->solver - 1);
            memcpy(a->solver, r->sbuf, len + 1);
            break;
        }
        default: st = get_double(r, path, &f->solve_seconds); break;
        }
        if (st)
            return st;
    }
    return missing(r, opos, "figures", keys, NK, seen);
}

static mp_status resolve(rd *r, const char *vpos, const char *path,
                         bool is_node, uint32_t *idx)
{
    /* Plans list nodes and blocks mostly in graph order: try the index
     * after the previous one before hashing (a hit costs one strcmp on a
     * name next to the previous one in memory instead of a hash and a
     * probe at a random place). */
    uint32_t *last = is_node ? &r->last_node : &r->last_tensor;
    size_t n = is_node ? r->g->n_nodes : r->g->n_tensors;
    uint32_t guess = *last + 1;
    if (guess < n &&
        strcmp(is_node ? r->g->nodes[guess].name : r->g->tensors[guess].name,
               r->sbuf) == 0) {
        *idx = *last = guess;
        return MP_OK;
    }
    mp_status st = is_node ? mp_graph_find_node(r->g, r->sbuf, idx)
                           : mp_graph_find_tensor(r->g, r->sbuf, idx);
    if (st == MP_OK) {
        *last = *idx;
        return MP_OK;
    }
    if (st != MP_ERR_NOT_FOUND)
        return st;
    const char *gname = r->g->name ? r->g->name : "";
    return rd_err(r, vpos, MP_ERR_NOT_FOUND,
                  "%s: no %s named \"%s\" in graph \"%s\"", P(r, path),
                  is_node ? "node" : "tensor", r->sbuf, gname);
}

static mp_status read_schedule(rd *r, plan_acc *a)
{
    static const char *const keys[] = {"step", "node", "tensor"};
    char path[64];
    int astate = 0;
    bool amore;
    mp_status st;
    if (peek(r) != J_ARRAY)
        return wrong_type(r, "schedule", "an array");
    if ((st = arr_open(r)))
        return st;
    for (;;) {
        if ((st = arr_next(r, &astate, &amore)))
            return st;
        if (!amore)
            return MP_OK;
        size_t i = a->n_steps;
        if (i >= UINT32_MAX)
            return rd_err(r, r->p, MP_ERR_PARSE, "schedule: too many steps");
        const char *opos = r->p;
        if (peek(r) != J_OBJECT) {
            snprintf(path, sizeof path, "schedule[%zu]", i);
            return wrong_type(r, path, "an object");
        }
        if ((st = obj_open(r)))
            return st;
        int state = 0, kind = -1;
        bool more;
        const char *kp, *kind_pos = NULL, *ref_pos = NULL;
        unsigned seen = 0;
        uint32_t idx = 0;
        for (;;) {
            if ((st = obj_next(r, &state, &more, &kp)))
                return st;
            if (!more)
                break;
            int k = key_index(r->sbuf, keys, 3);
            if (k < 0) {
                r->psec = "schedule";
                r->pidx = i;
                r->pkey = NULL;
                if ((st = unknown_key(r, kp, NULL)))
                    return st;
                continue;
            }
            if (seen & (1u << k)) {
                snprintf(path, sizeof path, "schedule[%zu]", i);
                return dup_key(r, kp, path, keys[k]);
            }
            seen |= 1u << k;
            r->psec = "schedule";
            r->pidx = i;
            r->pkey = keys[k];
            const char *vp = r->p;
            if ((st = get_string(r, NULL, false, NULL)))
                return st;
            if (k == 0) {
                kind_pos = vp;
                for (int s = MP_STEP_COMPUTE; s <= MP_STEP_PREFETCH; s++)
                    if (strcmp(r->sbuf,
                               mp_step_kind_name((mp_step_kind)s)) == 0)
                        kind = s;
                if (kind < 0)
                    return rd_err(r, vp, MP_ERR_PARSE,
                                  "%s: unknown step \"%s\" (expected "
                                  "compute, recompute, free, offload or "
                                  "prefetch)",
                                  P(r, NULL), r->sbuf);
            } else {
                ref_pos = vp;
                if ((st = resolve(r, vp, NULL, k == 1, &idx)))
                    return st;
            }
        }
        r->psec = "schedule";
        r->pidx = i;
        r->pkey = NULL;
        if (!(seen & 1u))
            return rd_err(r, opos, MP_ERR_PARSE,
                          "%s: missing key \"step\"", P(r, NULL));
        bool want_node = kind == MP_STEP_COMPUTE ||
                         kind == MP_STEP_RECOMPUTE;
        unsigned want = want_node ? 2u : 4u, other = want_node ? 4u : 2u;
        if (seen & other)
            return rd_err(r, ref_pos ? ref_pos : kind_pos, MP_ERR_PARSE,
                          "%s: a %s step takes \"%s\", not \"%s\"",
                          P(r, NULL),
                          mp_step_kind_name((mp_step_kind)kind),
                          want_node ? "node" : "tensor",
                          want_node ? "tensor" : "node");
        if (!(seen & want))
            return rd_err(r, opos, MP_ERR_PARSE,
                          "%s: missing key \"%s\" (a %s step)",
                          P(r, NULL),
                          want_node ? "node" : "tensor",
                          mp_step_kind_name((mp_step_kind)kind));
        void *arr = a->steps;
        if ((st = mp__grow(r->ctx, &arr, sizeof *a->steps, i + 1,
                          &a->cap_steps)))
            return st;
        a->steps = arr;
        a->steps[i].kind = (mp_step_kind)kind;
        a->steps[i].index = idx;
        a->n_steps = i + 1;
    }
}

static mp_status read_blocks(rd *r, plan_acc *a)
{
    static const char *const keys[] = {"tensor", "offset", "size", "first",
                                       "end", "over"}; /* over: optional */
    char path[64];
    int astate = 0;
    bool amore;
    mp_status st;
    if (peek(r) != J_ARRAY)
        return wrong_type(r, "blocks", "an array");
    if ((st = arr_open(r)))
        return st;
    for (;;) {
        if ((st = arr_next(r, &astate, &amore)))
            return st;
        if (!amore)
            return MP_OK;
        size_t i = a->n_blocks;
        if (i >= UINT32_MAX)
            return rd_err(r, r->p, MP_ERR_PARSE, "blocks: too many blocks");
        const char *opos = r->p;
        if (peek(r) != J_OBJECT) {
            snprintf(path, sizeof path, "blocks[%zu]", i);
            return wrong_type(r, path, "an object");
        }
        if ((st = obj_open(r)))
            return st;
        int state = 0;
        bool more;
        const char *kp;
        unsigned seen = 0;
        mp_block b = {0, 0, 0, 0, 0};
        uint32_t over = MP_NONE;
        for (;;) {
            if ((st = obj_next(r, &state, &more, &kp)))
                return st;
            if (!more)
                break;
            int k = key_index(r->sbuf, keys, 6);
            if (k < 0) {
                r->psec = "blocks";
                r->pidx = i;
                r->pkey = NULL;
                if ((st = unknown_key(r, kp, NULL)))
                    return st;
                continue;
            }
            if (seen & (1u << k)) {
                snprintf(path, sizeof path, "blocks[%zu]", i);
                return dup_key(r, kp, path, keys[k]);
            }
            seen |= 1u << k;
            r->psec = "blocks";
            r->pidx = i;
            r->pkey = keys[k];
            const char *vp = r->p;
            switch (k) {
            case 0:
                if ((st = get_string(r, NULL, false, NULL)))
                    return st;
                st = resolve(r, vp, NULL, false, &b.tensor);
                break;
            case 1: st = get_uint(r, NULL, UINT64_MAX, &b.offset); break;
            case 2: st = get_uint(r, NULL, UINT64_MAX, &b.size); break;
            case 3: st = get_u32(r, NULL, &b.first); break;
            case 4: st = get_u32(r, NULL, &b.end); break;
            default:
                if ((st = get_string(r, NULL, false, NULL)))
                    return st;
                st = resolve(r, vp, NULL, false, &over);
                a->any_over = true;
                break;
            }
            if (st)
                return st;
        }
        r->psec = "blocks";
        r->pidx = i;
        r->pkey = NULL;
        if ((st = missing(r, opos, NULL, keys, 5, seen)))
            return st;
        void *arr = a->blocks;
        if ((st = mp__grow(r->ctx, &arr, sizeof *a->blocks, i + 1,
                          &a->cap_blocks)))
            return st;
        a->blocks = arr;
        a->blocks[i] = b;
        arr = a->over;
        if ((st = mp__grow(r->ctx, &arr, sizeof *a->over, i + 1,
                          &a->cap_over)))
            return st;
        a->over = arr;
        a->over[i] = over;
        a->n_blocks = i + 1;
    }
}

/* Optional "fused": names of the tensors inside fused chains (issue 4). */
static mp_status read_fused(rd *r, plan_acc *a)
{
    int astate = 0;
    bool amore;
    mp_status st;
    if (peek(r) != J_ARRAY)
        return wrong_type(r, "fused", "an array");
    if ((st = arr_open(r)))
        return st;
    if (!a->fused) {
        a->fused = mp__calloc(r->ctx, r->g->n_tensors + 1, 1);
        if (!a->fused)
            return MP_ERR_NOMEM;
    }
    for (size_t i = 0;; i++) {
        if ((st = arr_next(r, &astate, &amore)))
            return st;
        if (!amore)
            return MP_OK;
        r->psec = "fused";
        r->pidx = i;
        r->pkey = NULL;
        const char *vp = r->p;
        uint32_t t;
        if ((st = get_string(r, NULL, false, NULL)) ||
            (st = resolve(r, vp, NULL, false, &t)))
            return st;
        a->fused[t] = 1;
    }
}

enum { SEC_GRAPH, SEC_FIGURES, SEC_SCHEDULE, SEC_BLOCKS, SEC_FUSED, N_SEC };

static mp_status read_section(rd *r, plan_acc *a, int sec)
{
    switch (sec) {
    case SEC_GRAPH: return read_graph_section(r);
    case SEC_FIGURES: return read_figures(r, a);
    case SEC_SCHEDULE: return read_schedule(r, a);
    case SEC_FUSED: return read_fused(r, a);
    default: return read_blocks(r, a);
    }
}

static mp_status read_plan(rd *r, plan_acc *a)
{
    static const char *const keys[] = {"graph", "figures", "schedule",
                                       "blocks", "fused", "format",
                                       "version"}; /* fused: optional */
    enum { K_FORMAT = 5, K_VERSION = 6 };
    const char *sec_pos[N_SEC] = {NULL, NULL, NULL, NULL, NULL};
    const char *opos, *unknown_pos = NULL;
    char unknown[64];
    unsigned seen = 0;
    int state = 0;
    bool more;
    const char *kp;
    mp_status st;

    ws(r);
    opos = r->p;
    if (r->p >= r->end)
        return rd_err(r, r->p, MP_ERR_PARSE,
                      "syntax error: empty input, expected a JSON object");
    if (peek(r) != J_OBJECT) {
        if (peek(r) == J_BAD)
            return syntax(r, "a JSON object");
        return wrong_type(r, "the top level", "an object");
    }
    if ((st = obj_open(r)))
        return st;
    for (;;) {
        if ((st = obj_next(r, &state, &more, &kp)))
            return st;
        if (!more)
            break;
        int k = key_index(r->sbuf, keys, 7);
        if (k < 0) {
            /* "metadata" and "x-..." are free; another key is an error,
             * reported once the version is known to be one we read */
            if (!unknown_pos && strcmp(r->sbuf, "metadata") != 0 &&
                strncmp(r->sbuf, "x-", 2) != 0) {
                unknown_pos = kp;
                snprintf(unknown, sizeof unknown, "%s", r->sbuf);
            }
            if ((st = skip_value(r)))
                return st;
            continue;
        }
        if (seen & (1u << k))
            return dup_key(r, kp, "the top level", keys[k]);
        seen |= 1u << k;
        const char *vp = r->p;
        if (k == K_FORMAT) {
            if ((st = get_string(r, "format", false, NULL)))
                return st;
            if (strcmp(r->sbuf, PLAN_FORMAT) != 0)
                return rd_err(r, vp, MP_ERR_PARSE,
                              "format: \"%s\" is not a memplan plan "
                              "(expected \"" PLAN_FORMAT "\")%s",
                              r->sbuf,
                              strcmp(r->sbuf, "memplan-graph") == 0
                                  ? "; this file is a graph"
                                  : "");
        } else if (k == K_VERSION) {
            uint64_t v;
            if ((st = get_uint(r, "version", UINT64_MAX, &v)))
                return st;
            if (v > PLAN_VERSION)
                return rd_err(r, vp, MP_ERR_UNSUPPORTED,
                              "version: plan format version %llu is newer "
                              "than this memplan reads (%d); upgrade "
                              "memplan",
                              (unsigned long long)v, PLAN_VERSION);
            if (v < 1)
                return rd_err(r, vp, MP_ERR_PARSE,
                              "version: %llu is not a plan format version",
                              (unsigned long long)v);
        } else if (!(seen & (1u << K_VERSION)) ||
                   !(seen & (1u << K_FORMAT))) {
            /* read the sections once format and version are known, so a
             * newer file says so instead of failing on its contents */
            sec_pos[k] = r->p;
            if ((st = skip_value(r)))
                return st;
        } else {
            if ((st = read_section(r, a, k)))
                return st;
        }
    }
    ws(r);
    if (r->p < r->end)
        return rd_err(r, r->p, MP_ERR_PARSE,
                      "syntax error: unexpected text after the plan object");
    if (!(seen & (1u << K_FORMAT)))
        return rd_err(r, opos, MP_ERR_PARSE,
                      "not a memplan plan: missing key \"format\"");
    if (unknown_pos)
        return rd_err(r, unknown_pos, MP_ERR_PARSE,
                      "the top level: unknown key \"%s\"", unknown);
    if ((st = missing(r, opos, "the top level", keys, 7,
                      seen | (1u << SEC_FUSED))))
        return st;
    const char *stop = r->p;
    for (int s = 0; s < N_SEC; s++) {
        if (!sec_pos[s])
            continue;
        r->p = sec_pos[s];
        r->depth = 1;
        if ((st = read_section(r, a, s)))
            return st;
    }
    r->p = stop;
    return MP_OK;
}

/* Parses text (len bytes) against g into a new plan. */
static mp_status plan_from_text(mp_graph *g, const char *text, size_t len,
                                const char *source, mp_plan **out)
{
    mp_ctx *ctx = g->ctx;
    rd r = {.ctx = ctx, .g = g, .src = source, .beg = text, .p = text,
            .end = text + len, .last_node = UINT32_MAX,
            .last_tensor = UINT32_MAX};
    plan_acc a;
    memset(&a, 0, sizeof a);
    mp_status st = read_plan(&r, &a);
    mp__dealloc(ctx, r.sbuf);
    mp_plan *p = NULL;
    if (st == MP_OK) {
        p = mp__calloc(ctx, 1, sizeof *p);
        if (!p)
            st = MP_ERR_NOMEM;
    }
    if (st == MP_OK) {
        /* the live bytes are derived, never read: the verifier checks the
         * figures against them */
        st = mp__blocks_live(ctx, a.blocks, (uint32_t)a.n_blocks,
                            (uint32_t)a.n_steps, &p->live);
    }
    if (st) {
        mp__dealloc(ctx, a.steps);
        mp__dealloc(ctx, a.blocks);
        mp__dealloc(ctx, a.over);
        mp__dealloc(ctx, a.fused);
        mp__dealloc(ctx, p);
        return st;
    }
    p->ctx = ctx;
    p->graph = g;
    p->steps = a.steps;
    p->n_steps = (uint32_t)a.n_steps;
    p->blocks = a.blocks;
    p->n_blocks = (uint32_t)a.n_blocks;
    p->fig = a.fig;
    memcpy(p->solver_name, a.solver, sizeof p->solver_name);
    p->fig.solver = a.solver_null ? NULL : p->solver_name;
    if (a.any_over) {
        p->block_over = a.over;
    } else {
        mp__dealloc(ctx, a.over);
    }
    p->fused = a.fused;
    *out = p;
    return MP_OK;
}

mp_status mp_plan_load_json(mp_graph *g, const char *path, mp_plan **out)
{
    if (out)
        *out = NULL;
    if (!g)
        return MP_ERR_INVALID_ARG;
    if (!path || !out)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_load_json: %s is NULL", path ? "out" : "path");
    if (!g->finalized)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                      "mp_plan_load_json: the graph is not finalized");
    char *text = NULL;
    size_t len = 0;
    mp_status st = mp__read_file(g->ctx, path, &text, &len);
    if (st)
        return st;
    st = plan_from_text(g, text, len, path, out);
    mp__dealloc(g->ctx, text);
    return st;
}
