/* json_read.c - the JSON reader (json.h): values, objects with key tables,
 * arrays, typed accessors, and messages that name src:line:column and
 * the path. Tokens come from the lexer (json_tok.c). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp__jr_init(mp__jr *r, mp_ctx *ctx, const char *src, const char *text,
                size_t len, unsigned flags)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->src = src;
    /* a byte order mark before the document is skipped */
    mp__jtok_init(&r->k, text, len, mp__json_bom(text, len));
    r->flags = flags;
}

/* The keys of objects being read that are not in their table ("x-" keys,
 * the free keys of MP__JK_ANY objects and of objects without a table), by
 * object and text: a second such key of one object is "duplicate key"
 * (table keys are checked by the object's `seen` bits). A key read again
 * at the same place (a document read a second time) is no duplicate. The
 * keys of an object are dropped when it ends (objects end in the reverse
 * order they open): what is kept is the keys of the open objects. */
typedef struct xkey {
    size_t obj, off;    /* the object's '{', the key's '"' */
    size_t s, n;        /* the key's text in chars */
    uint64_t h;
} xkey;
struct mp__jxkeys {
    xkey *e;
    size_t n, cap;
    uint32_t *slot;     /* index + 1; 0 empty */
    size_t nslot;
    char *chars;
    size_t nchars, ccap;
};

static uint64_t xkey_hash(size_t obj, const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull ^
                 ((uint64_t)obj * 0x9E3779B97F4A7C15ull);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static void xkeys_free(mp_ctx *ctx, struct mp__jxkeys *x)
{
    if (!x)
        return;
    mp__dealloc(ctx, x->e);
    mp__dealloc(ctx, x->slot);
    mp__dealloc(ctx, x->chars);
    mp__dealloc(ctx, x);
}

/* Places e (index i) in the table. */
static void xkeys_place(struct mp__jxkeys *x, size_t i)
{
    size_t m = x->nslot - 1, j = (size_t)x->e[i].h & m;
    while (x->slot[j])
        j = (j + 1) & m;
    x->slot[j] = (uint32_t)(i + 1);
}

/* Drops the keys of the object at obj (the last ones kept): each one's
 * slot emptied, the slots after it in its run moved back where they may
 * stand (deletion in linear probing). */
static void xkeys_end(struct mp__jxkeys *x, size_t obj)
{
    if (!x)
        return;
    size_t m = x->nslot - 1;
    while (x->n && x->e[x->n - 1].obj == obj) {
        size_t i = x->n - 1, j = (size_t)x->e[i].h & m;
        while (x->slot[j] != i + 1)
            j = (j + 1) & m;
        x->slot[j] = 0;
        for (size_t k = (j + 1) & m; x->slot[k]; k = (k + 1) & m) {
            size_t home = (size_t)x->e[x->slot[k] - 1].h & m;
            /* the entry at k may move to j when its home is not in
             * the cyclic interval (j, k] */
            bool stays = j < k ? (home > j && home <= k)
                               : (home > j || home <= k);
            if (!stays) {
                x->slot[j] = x->slot[k];
                x->slot[k] = 0;
                j = k;
            }
        }
        x->nchars = x->e[i].s;
        x->n = i;
    }
}

/* Key k (n bytes) of the object at obj, read at off: MP_OK, or
 * "duplicate key" when the object had it at another place. */
static mp_status xkey_check(mp__jr *r, size_t obj, size_t off, const char *k,
                            size_t n)
{
    mp_ctx *ctx = r->ctx;
    struct mp__jxkeys *x = r->xkeys;
    if (!x && !(x = r->xkeys = mp__calloc(ctx, 1, sizeof *x)))
        return MP_ERR_NOMEM;
    uint64_t h = xkey_hash(obj, k, n);
    if (x->nslot) {
        size_t m = x->nslot - 1;
        for (size_t j = (size_t)h & m; x->slot[j]; j = (j + 1) & m) {
            const xkey *e = &x->e[x->slot[j] - 1];
            if (e->h != h || e->obj != obj || e->n != n ||
                memcmp(x->chars + e->s, k, n) != 0)
                continue;
            if (e->off == off)
                return MP_OK;   /* the same key, read again */
            return mp__jr_err(r, MP_ERR_PARSE, off, "duplicate key \"%s\"",
                              k);
        }
    }
    if (x->n >= UINT32_MAX - 1)
        return mp__err(ctx, MP_ERR_OVERFLOW, "%s: too many keys", r->src);
    void *p = x->e;
    if (mp__grow(ctx, &p, sizeof *x->e, x->n + 1, &x->cap))
        return MP_ERR_NOMEM;
    x->e = p;
    p = x->chars;
    if (mp__grow(ctx, &p, 1, x->nchars + n + 1, &x->ccap))
        return MP_ERR_NOMEM;
    x->chars = p;
    memcpy(x->chars + x->nchars, k, n);
    x->chars[x->nchars + n] = 0;
    x->e[x->n] = (xkey){obj, off, x->nchars, n, h};
    x->nchars += n + 1;
    x->n++;
    if (2 * x->n > x->nslot) {   /* grow the table: at most half full */
        size_t ns = x->nslot ? 2 * x->nslot : 64;
        uint32_t *sl = mp__calloc(ctx, ns, sizeof *sl);
        if (!sl) {
            x->n--;   /* not kept: every kept key has its slot */
            x->nchars = x->e[x->n].s;
            return MP_ERR_NOMEM;
        }
        mp__dealloc(ctx, x->slot);
        x->slot = sl;
        x->nslot = ns;
        for (size_t i = 0; i < x->n; i++)
            xkeys_place(x, i);
    } else {
        xkeys_place(x, x->n - 1);
    }
    return MP_OK;
}

void mp__jr_free(mp__jr *r)
{
    xkeys_free(r->ctx, r->xkeys);
    r->xkeys = NULL;
    mp__dealloc(r->ctx, r->sb);
    mp__dealloc(r->ctx, r->stack);
    r->sb = NULL;
    r->stack = NULL;
    r->sb_len = r->sb_cap = r->stack_cap = 0;
}

static void ws(mp__jr *r) { mp__jtok_ws(&r->k); }

/* ---- messages ----------------------------------------------------------- */
/* The path as messages print it: prefix, steps, the label after step 1;
 * "the top level" (when top) for none. */
static void render_path(const mp__jr *r, bool top, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    if (r->prefix && r->prefix[0]) {
        int w = snprintf(buf, cap, "%s", r->prefix);
        n = w < 0 ? 0 : (size_t)w;
    }
    size_t shown = r->n_path < MP__JPATH_MAX ? r->n_path : MP__JPATH_MAX;
    for (size_t d = 0; d < shown && n < cap; d++) {
        const mp__jpath *p = &r->path[d];
        int w = p->key ? snprintf(buf + n, cap - n, "%s%s", n ? "." : "",
                                  p->key)
                       : snprintf(buf + n, cap - n, "[%zu]", p->index);
        if (w < 0)
            break;
        n += (size_t)w;
        if (d == 1 && r->label[0] && n < cap) {
            w = snprintf(buf + n, cap - n, " (%s)", r->label);
            if (w < 0)
                break;
            n += (size_t)w;
        }
    }
    if (!n && top)
        snprintf(buf, cap, "the top level");
}

static mp_status verr_at(mp__jr *r, mp_status st, size_t off, bool path,
                         const char *fmt, va_list ap)
{
    char msg[MP__MSG_MAX], where[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    int line, col;
    mp__jtok_line_col(r->k.t, r->k.len, off, &line, &col);
    if (!path)
        return mp__err(r->ctx, st, "%s:%d:%d: %s", r->src, line, col, msg);
    render_path(r, true, where, sizeof where);
    return mp__err(r->ctx, st, "%s:%d:%d: %s: %s", r->src, line, col, where,
                  msg);
}

mp_status mp__jr_err(mp__jr *r, mp_status st, size_t off, const char *fmt,
                    ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = verr_at(r, st, off, true, fmt, ap);
    va_end(ap);
    return st;
}

/* A fault of the text itself: no path. */
static mp_status lex_err(mp__jr *r, mp_status st, size_t off,
                         const char *fmt, ...) MP__PRINTF(4, 5);
static mp_status lex_err(mp__jr *r, mp_status st, size_t off,
                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = verr_at(r, st, off, false, fmt, ap);
    va_end(ap);
    return st;
}

/* The byte at off as messages show it: "token near 'c'", or its code. */
static const char *token_at(const mp__jr *r, size_t off, char *buf,
                            size_t cap)
{
    unsigned char c = (unsigned char)r->k.t[off];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "token near '%c'", (char)c);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)c);
    return buf;
}

static mp_status unexpected(mp__jr *r, size_t at, const char *expected)
{
    char b[32];
    if (at >= r->k.len)
        return lex_err(r, MP_ERR_PARSE, r->k.len, "syntax error: unexpected "
                       "end of file, expected %s", expected);
    return lex_err(r, MP_ERR_PARSE, at, "syntax error: unexpected %s, "
                   "expected %s", token_at(r, at, b, sizeof b), expected);
}

/* Words what the lexer refused; `expected` is what a bad character
 * between tokens should have been. */
static mp_status tok_fail(mp__jr *r, const char *expected)
{
    static const struct {
        int kind;
        bool at_start;   /* at the token's start, else at the fault */
        const char *text;
    } faults[] = {
        {MP__JTOK_UNTERMINATED, true, "syntax error: unterminated string"},
        {MP__JTOK_CONTROL, false,
         "syntax error: control character in a string"},
        {MP__JTOK_BAD_HEX, false, "syntax error: bad \\u escape in a string"},
        {MP__JTOK_SURROGATE, true,
         "syntax error: unpaired surrogate in a \\u escape"},
        {MP__JTOK_NUL, true, "\\u0000 is not allowed in a string"},
        {MP__JTOK_UTF8, false,
         "syntax error: a string holds bytes that are not UTF-8"},
        {MP__JTOK_LEADING_ZERO, false,
         "syntax error: leading zero in a number"}};
    const mp__jtok *k = &r->k;
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (faults[i].kind == (int)k->err.kind)
            return lex_err(r, MP_ERR_PARSE,
                           faults[i].at_start ? k->err.start : k->err.at,
                           "%s", faults[i].text);
    char c = k->err.c;
    switch (k->err.kind) {
    case MP__JTOK_BAD_ESCAPE:
        return lex_err(r, MP_ERR_PARSE, k->err.at,
                       "syntax error: bad escape '\\%c' in a string",
                       (c >= 0x20 && c < 0x7f) ? c : '?');
    case MP__JTOK_NUM_DIGIT: expected = "a digit"; break;
    case MP__JTOK_NUM_FRAC: expected = "a digit after '.'"; break;
    case MP__JTOK_NUM_EXP: expected = "a digit in the exponent"; break;
    case MP__JTOK_WANT_KEY: expected = "a string key"; break;
    case MP__JTOK_WANT_COLON: expected = "':'"; break;
    default: break;
    }
    return unexpected(r, k->err.at, expected);
}

/* ---- scalars ------------------------------------------------------------ */
/* At '"': the string, decoded into the arena (at *s, length *n) when
 * decode, else only checked. */
static mp_status read_string(mp__jr *r, bool decode, size_t *s, size_t *n)
{
    size_t len = 0;
    mp_status st = mp__jtok_string(&r->k, r->ctx, decode ? &r->sb : NULL,
                                  &r->sb_cap, r->sb_len, &len);
    if (st)
        return st == MP_ERR_PARSE ? tok_fail(r, "a JSON value") : st;
    *s = r->sb_len;
    *n = len;
    if (decode)
        r->sb_len += len + 1;
    return MP_OK;
}

/* The integer digits of v (no fraction, no exponent). */
static void int_value(const mp__jr *r, mp__jval *v)
{
    const char *t = r->k.t;
    uint64_t u = 0;
    v->big = false;
    for (size_t q = v->off + (v->neg ? 1 : 0); q < v->end; q++) {
        unsigned d = (unsigned)(t[q] - '0');
        if (u > (UINT64_MAX - d) / 10) {
            v->big = true;
            break;
        }
        u = u * 10 + d;
    }
    v->u = u;
    v->fits = !v->big && u <= (uint64_t)INT64_MAX + (v->neg ? 1u : 0u);
    v->i = v->fits ? (v->neg ? (int64_t)(0 - u) : (int64_t)u) : 0;
}

static double parse_double(const char *num, size_t n)
{
    char buf[64];
    if (n < sizeof buf) {
        memcpy(buf, num, n);
        buf[n] = 0;
        return strtod(buf, NULL);
    }
    return strtod(num, NULL); /* the text is NUL-terminated */
}

static mp_status read_number(mp__jr *r, mp__jval *v)
{
    bool is_int;
    if (mp__jtok_number(&r->k, &v->end, &is_int))
        return tok_fail(r, "a JSON value");
    v->type = MP__JT_NUMBER;
    v->is_int = is_int;
    v->neg = r->k.t[v->off] == '-';
    int n = (int)(v->end - v->off);
    if (is_int) {
        int_value(r, v);
        v->d = v->fits ? (double)v->i
                       : parse_double(r->k.t + v->off, v->end - v->off);
        if (!v->fits && (r->flags & MP__JR_NUM64))
            return lex_err(r, MP_ERR_OVERFLOW, v->off,
                           "too big integer near '%.*s' (numbers must fit "
                           "in 64 bits)",
                           n, r->k.t + v->off);
    } else {
        v->fits = v->big = false;
        v->u = 0;
        v->i = 0;
        errno = 0;
        v->d = parse_double(r->k.t + v->off, v->end - v->off);
        if (errno == ERANGE && isinf(v->d) && (r->flags & MP__JR_NUM64))
            return lex_err(r, MP_ERR_OVERFLOW, v->off,
                           "real number overflow near '%.*s'", n,
                           r->k.t + v->off);
    }
    r->k.pos = v->end;
    return MP_OK;
}

static mp_status literal(mp__jr *r, const char *word, const char *expected)
{
    if (!mp__jtok_literal(&r->k, word))
        return unexpected(r, r->k.pos, expected);
    return MP_OK;
}

static mp_status open_container(mp__jr *r, mp__jval *v, mp__jtype type)
{
    if (r->depth >= MP__JSON_MAX_DEPTH)
        return lex_err(r, MP_ERR_PARSE, r->k.pos, "syntax error: nesting "
                       "deeper than %d levels", MP__JSON_MAX_DEPTH);
    r->depth++;
    r->k.pos++;
    v->type = type;
    return MP_OK;
}

/* The next value's start (decode: strings into the arena); a character
 * that starts no value is "unexpected ..., expected <expected>". */
static mp_status read_value(mp__jr *r, mp__jval *v, bool decode,
                            const char *expected)
{
    ws(r);
    v->off = v->end = r->k.pos;
    v->s = v->n = 0;
    if (r->k.pos >= r->k.len)
        return unexpected(r, r->k.pos, expected);
    switch (r->k.t[r->k.pos]) {
    case '{': return open_container(r, v, MP__JT_OBJECT);
    case '[': return open_container(r, v, MP__JT_ARRAY);
    case '"':
        v->type = MP__JT_STRING;
        return read_string(r, decode, &v->s, &v->n);
    case 't': v->type = MP__JT_TRUE; return literal(r, "true", expected);
    case 'f': v->type = MP__JT_FALSE; return literal(r, "false", expected);
    case 'n': v->type = MP__JT_NULL; return literal(r, "null", expected);
    case '-': case '0': case '1': case '2': case '3': case '4': case '5':
    case '6': case '7': case '8': case '9':
        return read_number(r, v);
    default: return unexpected(r, r->k.pos, expected);
    }
}

mp_status mp__jr_value(mp__jr *r, mp__jval *v)
{
    mp_status st = read_value(r, v, true, "a JSON value");
    if (!st && v->type != MP__JT_NUMBER)
        v->end = r->k.pos;
    return st;
}

/* ---- skipping ----------------------------------------------------------- */
#define STACK0 (sizeof ((mp__jr *)0)->stack0 / sizeof (uint64_t))

/* The word of the bit stack holding level. */
static uint64_t *stack_word(mp__jr *r, size_t level)
{
    size_t word = level / 64;
    return word < STACK0 ? &r->stack0[word] : &r->stack[word - STACK0];
}

static mp_status stack_set(mp__jr *r, size_t level, bool obj)
{
    size_t word = level / 64;
    if (word >= STACK0 && word - STACK0 >= r->stack_cap) {
        void *p = r->stack;
        if (mp__grow(r->ctx, &p, sizeof *r->stack, word - STACK0 + 1,
                    &r->stack_cap))
            return MP_ERR_NOMEM;
        r->stack = p;
    }
    uint64_t bit = (uint64_t)1 << (level % 64), *w = stack_word(r, level);
    *w = obj ? *w | bit : *w & ~bit;
    return MP_OK;
}

static bool stack_obj(mp__jr *r, size_t level)
{
    return (*stack_word(r, level) >> (level % 64)) & 1;
}

/* After the '"' of a key (or an object's first token): the key checked
 * and the ':' after it. */
static mp_status skip_key(mp__jr *r)
{
    size_t s, n;
    mp_status st = read_string(r, false, &s, &n);
    if (st)
        return st;
    if (mp__jtok_colon(&r->k))
        return tok_fail(r, "':'");
    return MP_OK;
}

/* The keys of the objects open in a skipped value, when they are checked
 * unique: each key decoded into the arena, each level's first key and
 * arena mark. */
typedef struct ukey {
    const char *p;  /* set before sorting (the arena may move before) */
    size_t s, n, off;
} ukey;
typedef struct ulevel {
    size_t kstart, mark;
} ulevel;
typedef struct uniq {
    ukey *k;
    size_t nk, kcap;
    ulevel *lv;
    size_t lcap;
} uniq;

static int ukey_cmp(const void *pa, const void *pb)
{
    const ukey *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    int c = memcmp(a->p, b->p, a->n);
    if (c)
        return c;
    return (a->off > b->off) - (a->off < b->off);
}

/* The keys [kstart, nk) of the object just closed: a key given twice is
 * "duplicate key" at its second place (the first such in the text). */
static mp_status unique_check(mp__jr *r, uniq *u, size_t kstart)
{
    if (u->nk <= kstart)
        return MP_OK; /* no keys (u->k may still be NULL) */
    ukey *k = u->k + kstart;
    size_t n = u->nk - kstart, bad = n;
    for (size_t i = 0; i < n; i++)
        k[i].p = r->sb + k[i].s;
    if (n > 1)
        qsort(k, n, sizeof *k, ukey_cmp);
    for (size_t i = 1; i < n; i++)
        if (k[i].n == k[i - 1].n && memcmp(k[i].p, k[i - 1].p, k[i].n) == 0 &&
            (bad == n || k[i].off < k[bad].off))
            bad = i;
    if (bad < n)
        return mp__jr_err(r, MP_ERR_PARSE, k[bad].off,
                          "duplicate key \"%s\" (keys must be unique, also "
                          "inside metadata and \"x-\" values)",
                          k[bad].p);
    return MP_OK;
}

/* Level `level` opens (an object's keys start at u->nk). */
static mp_status unique_open(mp__jr *r, uniq *u, size_t level)
{
    void *p = u->lv;
    if (mp__grow(r->ctx, &p, sizeof *u->lv, level + 1, &u->lcap))
        return MP_ERR_NOMEM;
    u->lv = p;
    u->lv[level].kstart = u->nk;
    u->lv[level].mark = r->sb_len;
    return MP_OK;
}

/* At the '"' of a key: decoded and kept, then the ':'. */
static mp_status unique_key(mp__jr *r, uniq *u)
{
    size_t off = r->k.pos, s = 0, n = 0;
    mp_status st = read_string(r, true, &s, &n);
    if (st)
        return st;
    void *p = u->k;
    if (mp__grow(r->ctx, &p, sizeof *u->k, u->nk + 1, &u->kcap))
        return MP_ERR_NOMEM;
    u->k = p;
    u->k[u->nk++] = (ukey){NULL, s, n, off};
    if (mp__jtok_colon(&r->k))
        return tok_fail(r, "':'");
    return MP_OK;
}

/* Containers inside a skipped value are tracked on a bit stack (1: an
 * object), without recursion and without a depth limit; with u, the keys
 * of every object are checked unique. */
static mp_status skip(mp__jr *r, const mp__jval *v, uniq *u)
{
    if (v->type != MP__JT_OBJECT && v->type != MP__JT_ARRAY)
        return MP_OK;
    size_t level = 0;
    int state = 0;
    mp_status st = stack_set(r, 0, v->type == MP__JT_OBJECT);
    if (!st && u)
        st = unique_open(r, u, 0);
    while (!st) {
        bool obj = stack_obj(r, level), more;
        if (obj ? mp__jtok_obj_next(&r->k, &state, &more)
                : mp__jtok_arr_next(&r->k, &state, &more))
            return tok_fail(r, obj ? "',' or '}'" : "',' or ']'");
        if (!more) {
            if (u && obj) {
                if ((st = unique_check(r, u, u->lv[level].kstart)))
                    return st;
                u->nk = u->lv[level].kstart;
                r->sb_len = u->lv[level].mark;
            }
            if (level-- == 0)
                break;
            state = 1;
            continue;
        }
        if (obj && (st = u ? unique_key(r, u) : skip_key(r)))
            return st;
        ws(r);
        char c = r->k.pos < r->k.len ? r->k.t[r->k.pos] : 0;
        if (c == '{' || c == '[') { /* counted by the level, not depth */
            r->k.pos++;
            st = stack_set(r, ++level, c == '{');
            if (!st && u)
                st = unique_open(r, u, level);
            state = 0;
            continue;
        }
        mp__jval e;
        if ((st = read_value(r, &e, false, "a JSON value")))
            return st;
    }
    if (!st)
        r->depth--;
    return st;
}

mp_status mp__jr_skip(mp__jr *r, const mp__jval *v)
{
    return skip(r, v, NULL);
}

mp_status mp__jr_skip_unique(mp__jr *r, const mp__jval *v)
{
    uniq u;
    memset(&u, 0, sizeof u);
    size_t mark = r->sb_len;
    mp_status st = skip(r, v, &u);
    r->sb_len = mark;
    mp__dealloc(r->ctx, u.k);
    mp__dealloc(r->ctx, u.lv);
    return st;
}

mp_status mp__jr_skip_value_unique(mp__jr *r)
{
    mp__jval v;
    size_t mark = r->sb_len;
    mp_status st = read_value(r, &v, false, "a JSON value");
    if (!st)
        st = mp__jr_skip_unique(r, &v);
    r->sb_len = mark;
    return st;
}

mp_status mp__jr_skip_value(mp__jr *r)
{
    mp__jval v;
    size_t mark = r->sb_len;
    mp_status st = read_value(r, &v, false, "a JSON value");
    if (!st)
        st = mp__jr_skip(r, &v);
    r->sb_len = mark;
    return st;
}

/* ---- objects and arrays ------------------------------------------------- */
static void push_static(mp__jr *r, const char *key)
{
    if (r->n_path < MP__JPATH_MAX)
        r->path[r->n_path].key = key;
    if (r->n_path == 1)
        r->label[0] = 0;
    r->n_path++;
}

void mp__jr_push_key(mp__jr *r, const char *key)
{
    if (r->n_path < MP__JPATH_MAX) {
        mp__jpath *p = &r->path[r->n_path];
        size_t n = strlen(key);
        if (n >= sizeof p->own)
            n = sizeof p->own - 1;
        memcpy(p->own, key, n);
        p->own[n] = 0;
        key = p->own;
    }
    push_static(r, key);
}

void mp__jr_push_index(mp__jr *r, size_t i)
{
    if (r->n_path < MP__JPATH_MAX) {
        r->path[r->n_path].key = NULL;
        r->path[r->n_path].index = i;
    }
    if (r->n_path == 1)
        r->label[0] = 0;
    r->n_path++;
}

void mp__jr_pop(mp__jr *r)
{
    if (r->n_path)
        r->n_path--;
}

void mp__jr_path_cut(mp__jr *r, size_t n)
{
    if (n < r->n_path)
        r->n_path = n;
    if (n < 2)
        r->label[0] = 0;
}

void mp__jr_label_name(mp__jr *r, const char *name)
{
    if (!name) {
        r->label[0] = 0;
        return;
    }
    /* cheaper than snprintf: it is set for every element */
    char *l = r->label;
    size_t n = strlen(name), max = sizeof r->label - 3;
    if (n > max)
        n = max;
    l[0] = '"';
    memcpy(l + 1, name, n);
    l[n + 1] = '"';
    l[n + 2] = 0;
}

void mp__jr_label(mp__jr *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->label, sizeof r->label, fmt, ap);
    va_end(ap);
}

void mp__jr_object_at(mp__jr *r, mp__jobj *o, const mp__jval *v,
                     const mp__jkeys *keys)
{
    memset(o, 0, sizeof *o);
    o->keys = keys;
    o->off = v->off;
    o->depth = r->depth;
}

void mp__jr_array_at(mp__jr *r, mp__jarr *a, const mp__jval *v)
{
    memset(a, 0, sizeof *a);
    a->off = v->off;
    a->depth = r->depth;
}

/* The next value, which must be of type `type`: else "expected what". */
static mp_status expect(mp__jr *r, mp__jval *v, mp__jtype type,
                        const char *what)
{
    mp_status st = mp__jr_value(r, v);
    return st || v->type == type ? st : mp__jr_type_err(r, v, what);
}

mp_status mp__jr_object(mp__jr *r, mp__jobj *o, const mp__jkeys *keys,
                       const char *what)
{
    mp__jval v;
    mp_status st = expect(r, &v, MP__JT_OBJECT, what ? what : "an object");
    if (!st)
        mp__jr_object_at(r, o, &v, keys);
    return st;
}

mp_status mp__jr_array(mp__jr *r, mp__jarr *a, const char *what)
{
    mp__jval v;
    mp_status st = expect(r, &v, MP__JT_ARRAY, what ? what : "an array");
    if (!st)
        mp__jr_array_at(r, a, &v);
    return st;
}

/* The keys of K as "a, b or c" into buf. */
static void key_list(const mp__jkeys *K, char *buf, size_t cap)
{
    size_t n = 0, left = 0;
    buf[0] = 0;
    for (int i = 0; i < K->n; i++)
        left += K->names[i] != NULL;
    for (int i = 0; i < K->n && n < cap; i++) {
        if (!K->names[i])
            continue;
        left--;
        int w = snprintf(buf + n, cap - n, "%s%s", K->names[i],
                         left > 1 ? ", " : left == 1 ? " or " : "");
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

mp_status mp__jr_unknown_key(mp__jr *r, const mp__jkeys *K, size_t key_off,
                            const char *key)
{
    char list[512];
    if (K->expected)
        snprintf(list, sizeof list, "%s", K->expected);
    else
        key_list(K, list, sizeof list);
    return mp__jr_err(r, MP_ERR_PARSE, key_off,
                      "unknown key \"%s\" (expected %s%s)", key, list,
                      (K->flags & MP__JK_EXT) ? ", or an \"x-\" extension key"
                                              : "");
}

mp_status mp__jr_dup_key(mp__jr *r, const mp__jobj *o)
{
    return mp__jr_err(r, MP_ERR_PARSE, o->key_off, "duplicate key \"%s\"",
                      mp__jr_key(r, o));
}

/* The table key whose name is the n bytes at t (-1: none). */
static int key_match(const mp__jkeys *K, const char *t, size_t n)
{
    char c = n ? t[0] : 0;
    for (int i = 0; i < K->n; i++) {
        const char *name = K->names[i];
        if (name && name[0] == c && strncmp(name, t, n) == 0 && !name[n])
            return i;
    }
    return -1;
}

/* At the '"' of a key: *i its index in the table (-1: none; such a key,
 * and one with escapes, is decoded into the arena), then the ':'. A key
 * without escapes is matched on the text: most keys are the table's. */
static mp_status read_key(mp__jr *r, mp__jobj *o, int *i)
{
    const char *t = r->k.t;
    size_t p = r->k.pos + 1, q = p, e = r->k.len, n = 0;
    o->key_off = r->k.pos;
    o->name = NULL;
    *i = -1;
    while (q < e && t[q] != '"' && t[q] != '\\' &&
           (unsigned char)t[q] >= 0x20)
        q++;
    bool plain = q < e && t[q] == '"';
    if (plain && o->keys && (*i = key_match(o->keys, t + p, q - p)) >= 0) {
        o->name = o->keys->names[*i];
        r->k.pos = q + 1;
    } else {
        mp_status st = read_string(r, true, &o->key, &n);
        if (st)
            return st;
        if (!plain && o->keys)
            *i = key_match(o->keys, mp__jr_str(r, o->key), n);
    }
    if (r->k.pos < e && t[r->k.pos] == ':')
        r->k.pos++;
    else if (mp__jtok_colon(&r->k))
        return tok_fail(r, "':'");
    return MP_OK;
}

mp_status mp__jr_member(mp__jr *r, mp__jobj *o, int *k)
{
    const mp__jkeys *K = o->keys;
    mp_status st;
    for (;;) {
        if (o->pushed) {
            mp__jr_pop(r);
            o->pushed = false;
        }
        bool more;
        if (mp__jtok_obj_next(&r->k, &o->state, &more))
            return tok_fail(r, "',' or '}'");
        if (!more) {
            xkeys_end(r->xkeys, o->off);
            r->depth = o->depth - 1;
            *k = MP__JK_END;
            return MP_OK;
        }
        int i;
        if ((st = read_key(r, o, &i)))
            return st;
        if (i < 0) {
            const char *key = mp__jr_key(r, o);
            if ((st = xkey_check(r, o->off, o->key_off, key, strlen(key))))
                return st;
        }
        if (i >= 0) {
            uint64_t bit = (uint64_t)1 << i;
            if (o->seen & bit)
                return mp__jr_dup_key(r, o);
            o->seen |= bit;
            push_static(r, K->names[i]);
            o->pushed = true;
            *k = i;
            return MP_OK;
        }
        if (K && (K->flags & MP__JK_EXT) &&
            mp__json_is_ext_key(mp__jr_key(r, o))) {
            r->sb_len = o->key; /* its key is not needed */
            if ((st = mp__jr_skip_value_unique(r)))
                return st;
            continue;
        }
        if (!K || (K->flags & MP__JK_ANY)) {
            *k = MP__JK_OTHER;
            return MP_OK;
        }
        return mp__jr_unknown_key(r, K, o->key_off, mp__jr_key(r, o));
    }
}

mp_status mp__jr_next(mp__jr *r, mp__jobj *o, int *k, mp__jval *v)
{
    mp_status st = mp__jr_member(r, o, k);
    return st || *k == MP__JK_END ? st : mp__jr_value(r, v);
}

mp_status mp__jr_read_doc(mp__jr *r, mp__jobj *o, const mp__jkeys *keys,
                         mp__jmember_fn fn, void *arg)
{
    mp__jval v;
    int k;
    mp_status st = mp__jr_doc(r, o, keys);
    while (!st && !(st = mp__jr_next(r, o, &k, &v)) && k != MP__JK_END)
        st = fn(r, arg, k, &v);
    return st ? st : mp__jr_doc_end(r);
}

mp_status mp__jr_keep(mp__jr *r, void *slots, int k, const mp__jval *v)
{
    if (k >= 0)
        ((mp__jval *)slots)[k] = *v;
    return mp__jr_skip(r, v);
}

mp_status mp__jr_elem(mp__jr *r, mp__jarr *a, bool *more)
{
    if (a->pushed) {
        mp__jr_pop(r);
        a->pushed = false;
    }
    if (mp__jtok_arr_next(&r->k, &a->state, more))
        return tok_fail(r, "',' or ']'");
    if (!*more) {
        r->depth = a->depth - 1;
        return MP_OK;
    }
    mp__jr_push_index(r, a->n++);
    a->pushed = true;
    return MP_OK;
}

mp_status mp__jr_doc(mp__jr *r, mp__jobj *o, const mp__jkeys *keys)
{
    ws(r);
    if (r->k.pos >= r->k.len)
        return mp__err(r->ctx, MP_ERR_PARSE,
                      "%s:1:1: empty file (expected a JSON object)", r->src);
    mp__jval v;
    mp_status st = read_value(r, &v, true, "a JSON object");
    if (st)
        return st;
    if (v.type != MP__JT_OBJECT)
        return mp__jr_type_err(r, &v, "a JSON object");
    mp__jr_object_at(r, o, &v, keys);
    return MP_OK;
}

mp_status mp__jr_doc_end(mp__jr *r)
{
    char b[32];
    ws(r);
    if (r->k.pos < r->k.len)
        return lex_err(r, MP_ERR_PARSE, r->k.pos, "syntax error: unexpected "
                       "text after the top-level object: end of file "
                       "expected, found %s",
                       token_at(r, r->k.pos, b, sizeof b));
    return MP_OK;
}

/* ---- typed values ------------------------------------------------------- */
static const char *describe(const mp__jr *r, const mp__jval *v, char *buf,
                            size_t cap)
{
    switch (v->type) {
    case MP__JT_OBJECT: return "an object";
    case MP__JT_ARRAY: return "an array";
    case MP__JT_STRING:
        if (v->n > 40)
            snprintf(buf, cap, "\"%.40s...\"", mp__jr_str(r, v->s));
        else
            snprintf(buf, cap, "\"%s\"", mp__jr_str(r, v->s));
        return buf;
    case MP__JT_NUMBER: {
        size_t n = v->end - v->off;
        snprintf(buf, cap, "%.*s", (int)(n < 40 ? n : 40), r->k.t + v->off);
        return buf;
    }
    case MP__JT_TRUE: return "true";
    case MP__JT_FALSE: return "false";
    case MP__JT_NULL: return "null";
    }
    return "a value";
}

mp_status mp__jr_type_err(mp__jr *r, const mp__jval *v, const char *expected)
{
    char buf[96];
    return mp__jr_err(r, MP_ERR_PARSE, v->off, "expected %s, got %s",
                      expected, describe(r, v, buf, sizeof buf));
}

mp_status mp__jr_missing(mp__jr *r, const mp__jobj *o, const char *key,
                        const char *detail)
{
    return mp__jr_err(r, MP_ERR_PARSE, o->off,
                      "missing required key \"%s\"%s", key,
                      detail ? detail : "");
}

mp_status mp__jr_require(mp__jr *r, const mp__jobj *o, uint64_t need)
{
    for (int i = 0; i < o->keys->n; i++)
        if (((need & ~o->seen) >> i) & 1)
            return mp__jr_missing(r, o, o->keys->names[i], NULL);
    return MP_OK;
}

mp_status mp__jr_string(mp__jr *r, const mp__jval *v, bool nonempty,
                       const char *expected, const char **s)
{
    if (v->type != MP__JT_STRING)
        return mp__jr_type_err(r, v, expected ? expected : "a string");
    if (nonempty && !v->n)
        return mp__jr_err(r, MP_ERR_PARSE, v->off,
                          "must not be an empty string");
    *s = mp__jr_str(r, v->s);
    return MP_OK;
}

static mp_status out_of_range(mp__jr *r, const mp__jval *v,
                              unsigned long long max)
{
    int n = (int)(v->end - v->off);
    return mp__jr_err(r, MP_ERR_PARSE, v->off,
                      "integer %.*s out of range (at most %llu)",
                      n < 40 ? n : 40, r->k.t + v->off, max);
}

mp_status mp__jr_i64(mp__jr *r, const mp__jval *v, int64_t min, int64_t max,
                    const char *expected, int64_t *out)
{
    if (v->type != MP__JT_NUMBER || !v->is_int || (!v->fits && v->neg) ||
        (v->fits && v->i < min))
        return mp__jr_type_err(r, v, expected);
    if (!v->fits || v->i > max)
        return out_of_range(r, v, (unsigned long long)max);
    *out = v->i;
    return MP_OK;
}

mp_status mp__jr_u64(mp__jr *r, const mp__jval *v, uint64_t max,
                    const char *expected, uint64_t *out)
{
    if (v->type != MP__JT_NUMBER || !v->is_int || v->neg)
        return mp__jr_type_err(r, v, expected);
    if (v->big || v->u > max)
        return out_of_range(r, v, max);
    *out = v->u;
    return MP_OK;
}

mp_status mp__jr_num(mp__jr *r, const mp__jval *v, double min,
                    const char *expected, double *out)
{
    if (v->type != MP__JT_NUMBER || !(v->d >= min))
        return mp__jr_type_err(r, v, expected);
    if (!isfinite(v->d))
        return mp__jr_err(r, MP_ERR_PARSE, v->off, "number %.*s out of range",
                          (int)(v->end - v->off), r->k.t + v->off);
    *out = v->d;
    return MP_OK;
}

/* ---- nested documents --------------------------------------------------- */
void mp__jr_child(mp__jr *child, const mp__jr *parent, char *prefix,
                 size_t cap)
{
    mp__jr_init(child, parent->ctx, parent->src, parent->k.t, parent->k.len,
               parent->flags);
    child->k.pos = parent->k.pos;
    child->depth = parent->depth;
    render_path(parent, false, prefix, cap);
    child->prefix = prefix;
}

mp_status mp__json_load_file(mp_ctx *ctx, const char *path,
                            mp__json_text_fn fn, void *out)
{
    char *text;
    size_t len;
    mp_status st = mp__read_file(ctx, path, &text, &len);
    if (st)
        return st;
    st = fn(ctx, text, len, path, out);
    mp__dealloc(ctx, text);
    return st;
}
