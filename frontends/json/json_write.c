/* json_write.c - the JSON writer (json.h): a growable buffer, nested
 * objects and arrays whose layout follows from how they are opened,
 * escaped strings and the number forms of the library's formats. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp__jw_init(mp__jw *w, mp_ctx *ctx, unsigned flags, size_t reserve)
{
    w->ctx = ctx;
    w->buf = NULL;
    w->len = w->cap = 0;
    w->st = MP_OK;
    w->flags = flags;
    w->depth = 0;
    w->newline = false;
    /* the document itself: one value, at the start of a line */
    memset(&w->lv[0], 0, sizeof w->lv[0]);
    w->lv[0].lines = 1;
    if (reserve && mp__grow(ctx, (void **)&w->buf, 1, reserve, &w->cap))
        w->st = MP_ERR_NOMEM;
}

void mp__jw_fail(mp__jw *w, mp_status st, const char *fmt, ...)
{
    if (w->st)
        return;
    va_list ap;
    va_start(ap, fmt);
    w->st = mp__verr(w->ctx, st, fmt, ap);
    va_end(ap);
}

/* Room for n more bytes and the final NUL. */
static inline bool room(mp__jw *w, size_t n)
{
    if (w->st)
        return false;
    if (w->len + n + 1 > w->cap &&
        mp__grow(w->ctx, (void **)&w->buf, 1, w->len + n + 1, &w->cap)) {
        w->st = MP_ERR_NOMEM;
        return false;
    }
    return true;
}

static inline void put(mp__jw *w, const char *s, size_t n)
{
    if (!room(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

void mp__jw_raw(mp__jw *w, const char *s) { put(w, s, strlen(s)); }

/* A line break and n spaces at o; past them. */
static char *newline(char *o, unsigned n)
{
    *o++ = '\n';
    memset(o, ' ', n);
    return o + n;
}

/* Before an item of the current container (a key, or a value in an
 * array): the comma, and the line break or space. */
static inline void item(mp__jw *w)
{
    mp__jw_level *L = &w->lv[w->depth];
    bool nl = w->depth && (L->lines || w->newline);
    if (!room(w, 2 + (nl ? L->line : 0)))
        return;
    char *o = w->buf + w->len;
    if (w->depth && L->any)
        *o++ = ',';
    if (nl)
        o = newline(o, L->line);
    else if (L->any && !(w->flags & MP__JW_COMPACT))
        *o++ = ' ';
    w->len = (size_t)(o - w->buf);
    L->any = 1;
    w->newline = false;
}

/* Before a value: nothing after a key, else a new item. */
static inline void value(mp__jw *w)
{
    mp__jw_level *L = &w->lv[w->depth];
    if (L->key)
        L->key = 0;
    else
        item(w);
}

static void open_container(mp__jw *w, bool lines, char open_c,
                           char close_c)
{
    value(w);
    if (w->depth >= MP__JSON_MAX_DEPTH) {
        mp__jw_fail(w, MP_ERR_UNSUPPORTED, "JSON writer: nesting deeper "
                    "than %d levels", MP__JSON_MAX_DEPTH);
        return;
    }
    put(w, &open_c, 1);
    const mp__jw_level *P = &w->lv[w->depth];
    unsigned step = (w->flags & MP__JW_COMPACT) ? 0 : 2;
    mp__jw_level *L = &w->lv[++w->depth];
    L->lines = lines;
    L->any = L->key = 0;
    L->close = close_c;
    /* a block opened inside a one-line container is indented one step
     * more than that line */
    L->indent = lines ? P->line + (P->lines ? 0 : step) : P->line;
    L->line = lines ? L->indent + step : P->line;
}

void mp__jw_object(mp__jw *w, bool lines)
{
    open_container(w, lines, '{', '}');
}

void mp__jw_array(mp__jw *w, bool lines)
{
    open_container(w, lines, '[', ']');
}

void mp__jw_end(mp__jw *w)
{
    if (!w->depth) {
        mp__jw_fail(w, MP_ERR_INTERNAL, "JSON writer: end without an open "
                    "object or array");
        return;
    }
    const mp__jw_level *L = &w->lv[w->depth--];
    w->newline = false;
    if (!room(w, L->indent + 2))
        return;
    char *o = w->buf + w->len;
    if (L->lines && L->any)
        o = newline(o, L->indent);
    *o++ = L->close;
    w->len = (size_t)(o - w->buf);
}

void mp__jw_newline(mp__jw *w) { w->newline = true; }

/* ---- strings ------------------------------------------------------------ */
/* Bytes that end a run written as is: 1 always (NUL, controls, '"',
 * '\\', and the bytes of UTF-8 above ASCII, checked before they are
 * copied), 2 with MP__JW_ASCII only (0x7f). */
static const unsigned char stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1, [0x7f] = 2,
    [0x80] = 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};

/* How many bytes of s need no escape. */
static size_t plain_len(const mp__jw *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned mask = (w->flags & MP__JW_ASCII) ? 3 : 1;
    while (!(stop[*p] & mask))
        p++;
    return (size_t)((const char *)p - s);
}

/* The escape of byte c into e (6 bytes): its length. */
static size_t escape(const mp__jw *w, unsigned char c, char *e)
{
    static const char lower[] = "0123456789abcdef", upper[] =
        "0123456789ABCDEF";
    static const char ctl[] = "\b\f\n\r\t", letter[] = "bfnrt";
    const char *sh = c ? strchr(ctl, c) : NULL;
    e[0] = '\\';
    if (c == '"' || c == '\\') {
        e[1] = (char)c;
        return 2;
    }
    if (sh && !(w->flags & MP__JW_ASCII)) {
        e[1] = letter[sh - ctl];
        return 2;
    }
    const char *hex = (w->flags & MP__JW_UPPER) ? upper : lower;
    memcpy(e + 1, "u00", 3);
    e[4] = hex[c >> 4];
    e[5] = hex[c & 15];
    return 6;
}

/* \uXXXX of a code point below 0x10000 into e (6 bytes). */
static void u_escape(const mp__jw *w, uint32_t cp, char *e)
{
    const char *hex = (w->flags & MP__JW_UPPER) ? "0123456789ABCDEF"
                                                : "0123456789abcdef";
    e[0] = '\\';
    e[1] = 'u';
    for (int i = 0; i < 4; i++)
        e[2 + i] = hex[(cp >> (12 - 4 * i)) & 15];
}

/* The character at s, above ASCII: copied when it is well-formed UTF-8
 * (as \uXXXX, a surrogate pair above U+FFFF, with MP__JW_ASCII), else
 * its first byte replaced by U+FFFD. The bytes of s used. */
static size_t non_ascii(mp__jw *w, const char *s)
{
    uint32_t cp;
    size_t k = mp__utf8_next(s, &cp);
    if (!k)
        cp = 0xFFFD;
    if (w->flags & MP__JW_ASCII) {
        char e[12];
        if (cp >= 0x10000) {
            u_escape(w, 0xD800 + ((cp - 0x10000) >> 10), e);
            u_escape(w, 0xDC00 + ((cp - 0x10000) & 0x3FF), e + 6);
            put(w, e, 12);
        } else {
            u_escape(w, cp, e);
            put(w, e, 6);
        }
    } else if (k) {
        put(w, s, k);
    } else {
        put(w, "\xEF\xBF\xBD", 3);
    }
    return k ? k : 1;
}

static void escaped(mp__jw *w, const char *s)
{
    for (;;) {
        size_t n = plain_len(w, s);
        put(w, s, n);
        if (!s[n])
            return;
        s += n;
        if ((unsigned char)*s >= 0x80) {
            s += non_ascii(w, s);
            continue;
        }
        char e[6];
        put(w, e, escape(w, (unsigned char)*s, e));
        s++;
    }
}

/* s quoted, and after it the n (<= 2) bytes of tail. */
static inline void quoted(mp__jw *w, const char *s, const char *tail,
                          size_t n)
{
    size_t k = plain_len(w, s);
    if (!s[k] && room(w, k + 2 + n)) { /* nothing to escape: at once */
        char *o = w->buf + w->len;
        *o++ = '"';
        memcpy(o, s, k);
        o += k;
        *o++ = '"';
        for (size_t i = 0; i < n; i++)
            *o++ = tail[i];
        w->len = (size_t)(o - w->buf);
        return;
    }
    put(w, "\"", 1);
    escaped(w, s);
    put(w, "\"", 1);
    put(w, tail, n);
}

void mp__jw_string_begin(mp__jw *w)
{
    value(w);
    put(w, "\"", 1);
}

void mp__jw_string_add(mp__jw *w, const char *s) { escaped(w, s); }

void mp__jw_string_end(mp__jw *w) { put(w, "\"", 1); }

void mp__jw_string(mp__jw *w, const char *s)
{
    if (!s) {
        mp__jw_null(w);
        return;
    }
    value(w);
    quoted(w, s, "", 0);
}

void mp__jw_key(mp__jw *w, const char *key)
{
    item(w);
    if (w->flags & MP__JW_COMPACT)
        quoted(w, key, ":", 1);
    else
        quoted(w, key, ": ", 2);
    w->lv[w->depth].key = 1;
}

/* ---- scalars ------------------------------------------------------------ */
void mp__jw_null(mp__jw *w)
{
    value(w);
    put(w, "null", 4);
}

void mp__jw_bool(mp__jw *w, bool b)
{
    value(w);
    if (b)
        put(w, "true", 4);
    else
        put(w, "false", 5);
}

static void digits(mp__jw *w, uint64_t v, bool neg)
{
    char b[24];
    size_t i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (neg)
        b[--i] = '-';
    put(w, b + i, sizeof b - i);
}

void mp__jw_u64(mp__jw *w, uint64_t v)
{
    value(w);
    digits(w, v, false);
}

void mp__jw_i64(mp__jw *w, int64_t v)
{
    value(w);
    digits(w, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

/* %.<prec>g, the shortest precision from `from` to 17 that reads back. */
static int shortest_g(char *b, size_t cap, double v, int from)
{
    int n = 0;
    for (int prec = from; prec <= 17; prec++) {
        n = snprintf(b, cap, "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    return n;
}

/* jansson's form: the exponent without '+' and leading zeros. */
static int trim_exponent(char *b, int n)
{
    char *e = strchr(b, 'e');
    if (!e)
        return n;
    char *p = e + 1, *q;
    if (*p == '+') {
        memmove(p, p + 1, strlen(p));
        n--;
    } else if (*p == '-') {
        p++;
    }
    for (q = p; *q == '0' && q[1]; q++)
        ;
    if (q > p) {
        memmove(p, q, strlen(q) + 1);
        n -= (int)(q - p);
    }
    return n;
}

void mp__jw_double(mp__jw *w, double v, mp__jw_real form, const char *what)
{
    char b[48];
    int n;
    if (!isfinite(v) && form == MP__JW_ROUNDTRIP) {
        mp__jw_fail(w, MP_ERR_UNSUPPORTED, "%s: %g cannot be written in JSON",
                    what, v);
        return;
    }
    if (!isfinite(v))
        v = 0.0;
    if (form == MP__JW_G17)
        n = snprintf(b, sizeof b - 2, "%.17g", v);
    else
        n = shortest_g(b, sizeof b - 2, v,
                       form == MP__JW_ROUNDTRIP ? 15 : 1);
    for (int k = 0; k < n; k++)
        if (b[k] == ',')
            b[k] = '.'; /* a locale with a decimal comma */
    if (form != MP__JW_SHORTEST && !strpbrk(b, ".eE")) {
        b[n++] = '.';
        b[n++] = '0';
        b[n] = 0;
    }
    if (form == MP__JW_G17)
        n = trim_exponent(b, n);
    value(w);
    put(w, b, (size_t)n);
}

void mp__jw_fixed(mp__jw *w, double v, int decimals)
{
    char b[64];
    int n = snprintf(b, sizeof b, "%.*f", decimals, v);
    value(w);
    if (n > 0)
        put(w, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* ---- the result --------------------------------------------------------- */
mp_status mp__jw_done(mp__jw *w, char **out, size_t *len)
{
    *out = NULL;
    if (len)
        *len = 0;
    if (!w->st && w->depth)
        mp__jw_fail(w, MP_ERR_INTERNAL, "JSON writer: %u objects or arrays "
                    "left open", w->depth);
    if (!w->st)
        room(w, 0);
    if (w->st) {
        mp__dealloc(w->ctx, w->buf);
        w->buf = NULL;
        return w->st;
    }
    w->buf[w->len] = 0;
    *out = w->buf;
    if (len)
        *len = w->len;
    w->buf = NULL;
    return MP_OK;
}

mp_status mp__jw_save(mp__jw *w, const char *path)
{
    char *text;
    size_t len;
    mp_status st = mp__jw_done(w, &text, &len);
    if (st)
        return st;
    st = mp__write_file(w->ctx, path, text, len);
    mp__dealloc(w->ctx, text);
    return st;
}
