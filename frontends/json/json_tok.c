/* json_tok.c - the lexer of the JSON reader (json_tok.h). */
#include "json_tok.h"

#include <string.h>

static mp_status fail(mp__jtok *k, mp__jtok_err kind, size_t start, size_t at)
{
    k->err.kind = kind;
    k->err.start = start;
    k->err.at = at;
    k->err.c = 0;
    return MP_ERR_PARSE;
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes up to 4 hex digits at p (avail bytes there): how many are hex
 * digits; *out set when all 4 are. */
static unsigned hex_digits(const char *p, size_t avail, unsigned *out)
{
    unsigned v = 0, i = 0;
    for (; i < 4 && i < avail; i++) {
        int h = hexv(p[i]);
        if (h < 0)
            break;
        v = v * 16 + (unsigned)h;
    }
    if (i == 4)
        *out = v;
    return i;
}

/* Four hex digits at p; false with *bad at the first bad one. */
static bool hex4(const mp__jtok *k, size_t p, unsigned *out, size_t *bad)
{
    unsigned n = hex_digits(k->t + p, p < k->len ? k->len - p : 0, out);
    *bad = p + n;
    return n == 4;
}

static mp_status reserve(mp_ctx *ctx, char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return MP_OK;
    void *p = *buf;
    mp_status st = mp__grow(ctx, &p, 1, need, cap);
    *buf = p;
    return st ? MP_ERR_NOMEM : MP_OK;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* The length (2 to 4) of the well-formed UTF-8 character of n bytes at s
 * (its first byte >= 0x80), or 0: a stray continuation byte, an overlong
 * form, a surrogate, beyond U+10FFFF, or cut short (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0], len, min;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (unsigned i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
        return 0;
    return len;
}

mp_status mp__jtok_string(mp__jtok *k, mp_ctx *ctx, char **buf, size_t *cap,
                         size_t at, size_t *out_len)
{
    const char *t = k->t;
    size_t start = k->pos, e = k->len, p = start + 1, q = p;
    /* fast path: ASCII without escapes or control characters up to the
     * '"' */
    while (q < e && t[q] != '"' && t[q] != '\\' &&
           (unsigned char)t[q] >= 0x20 && (unsigned char)t[q] < 0x80)
        q++;
    if (q < e && t[q] == '"') {
        size_t n = q - p;
        if (buf) {
            if (reserve(ctx, buf, cap, at + n + 1))
                return MP_ERR_NOMEM;
            memcpy(*buf + at, t + p, n);
            (*buf)[at + n] = 0;
        }
        k->pos = q + 1;
        if (out_len)
            *out_len = n;
        return MP_OK;
    }
    char *o = NULL;
    if (buf) {
        /* the decoded string is never longer than the raw one */
        size_t r = q;
        while (r < e && t[r] != '"')
            r += t[r] == '\\' ? 2 : 1;
        if (reserve(ctx, buf, cap, at + (r - p) + 1))
            return MP_ERR_NOMEM;
        o = *buf + at;
    }
    for (;;) {
        if (p >= e)
            return fail(k, MP__JTOK_UNTERMINATED, start, start);
        unsigned char c = (unsigned char)t[p];
        if (c == '"') {
            p++;
            break;
        }
        if (c < 0x20)
            return fail(k, MP__JTOK_CONTROL, p, p);
        if (c >= 0x80) {
            /* JSON text is UTF-8 (RFC 8259): bytes that are not would be
             * written back changed, or not at all */
            size_t u = utf8_len((const unsigned char *)t + p, e - p);
            if (!u)
                return fail(k, MP__JTOK_UTF8, p, p);
            if (o) {
                memcpy(o, t + p, u);
                o += u;
            }
            p += u;
            continue;
        }
        if (c != '\\') {
            if (o)
                *o++ = (char)c;
            p++;
            continue;
        }
        if (p + 1 >= e)
            return fail(k, MP__JTOK_UNTERMINATED, start, start);
        size_t bs = p;
        char esc = t[p + 1];
        p += 2;
        unsigned cp;
        switch (esc) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            size_t bad;
            if (!hex4(k, p, &cp, &bad))
                return fail(k, MP__JTOK_BAD_HEX, bs, bad);
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (p + 6 > e || t[p] != '\\' || t[p + 1] != 'u' ||
                    !hex4(k, p + 2, &lo, &bad) || lo < 0xDC00 || lo >= 0xE000)
                    return fail(k, MP__JTOK_SURROGATE, bs, bs);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return fail(k, MP__JTOK_SURROGATE, bs, bs);
            }
            if (cp == 0)
                return fail(k, MP__JTOK_NUL, bs, bs);
            break;
        }
        default:
            fail(k, MP__JTOK_BAD_ESCAPE, bs, bs + 1);
            k->err.c = esc;
            return MP_ERR_PARSE;
        }
        if (o)
            o = put_utf8(o, cp);
    }
    size_t n = 0;
    if (o) {
        *o = 0;
        n = (size_t)(o - (*buf + at));
    }
    k->pos = p;
    if (out_len)
        *out_len = n;
    return MP_OK;
}

mp_status mp__jtok_number(mp__jtok *k, size_t *end, bool *is_int)
{
    const char *t = k->t;
    size_t s = k->pos, q = s, e = k->len;
    *is_int = true;
    if (q < e && t[q] == '-')
        q++;
    if (q >= e || t[q] < '0' || t[q] > '9')
        return fail(k, MP__JTOK_NUM_DIGIT, s, q);
    if (t[q] == '0') {
        q++;
        if (q < e && t[q] >= '0' && t[q] <= '9') {
            *end = q;
            return fail(k, MP__JTOK_LEADING_ZERO, s, q);
        }
    } else {
        while (q < e && t[q] >= '0' && t[q] <= '9')
            q++;
    }
    if (q < e && t[q] == '.') {
        *is_int = false;
        q++;
        if (q >= e || t[q] < '0' || t[q] > '9')
            return fail(k, MP__JTOK_NUM_FRAC, s, q);
        while (q < e && t[q] >= '0' && t[q] <= '9')
            q++;
    }
    if (q < e && (t[q] == 'e' || t[q] == 'E')) {
        *is_int = false;
        q++;
        if (q < e && (t[q] == '+' || t[q] == '-'))
            q++;
        if (q >= e || t[q] < '0' || t[q] > '9')
            return fail(k, MP__JTOK_NUM_EXP, s, q);
        while (q < e && t[q] >= '0' && t[q] <= '9')
            q++;
    }
    *end = q;
    return MP_OK;
}

bool mp__jtok_literal(mp__jtok *k, const char *word)
{
    size_t n = strlen(word);
    if (k->len - k->pos < n || memcmp(k->t + k->pos, word, n) != 0)
        return false;
    k->pos += n;
    return true;
}

/* True when the next byte is c. */
static bool at(const mp__jtok *k, char c)
{
    return k->pos < k->len && k->t[k->pos] == c;
}

/* The byte c (else an error of the kind given), then white space. */
static mp_status expect(mp__jtok *k, char c, mp__jtok_err kind)
{
    if (!at(k, c))
        return fail(k, kind, k->pos, k->pos);
    k->pos++;
    mp__jtok_ws(k);
    return MP_OK;
}

/* Members and elements alike: the closing bracket, or the ',' before
 * every one but the first. */
static mp_status next_item(mp__jtok *k, char close, int *state, bool *more)
{
    mp__jtok_ws(k);
    if (at(k, close)) {
        k->pos++;
        *more = false;
        return MP_OK;
    }
    if (*state) {
        mp_status st = expect(k, ',', MP__JTOK_WANT_COMMA);
        if (st)
            return st;
    }
    *state = 1;
    *more = true;
    return MP_OK;
}

mp_status mp__jtok_obj_next(mp__jtok *k, int *state, bool *more)
{
    mp_status st = next_item(k, '}', state, more);
    if (st || !*more)
        return st;
    if (!at(k, '"'))
        return fail(k, MP__JTOK_WANT_KEY, k->pos, k->pos);
    return MP_OK;
}

mp_status mp__jtok_colon(mp__jtok *k)
{
    mp__jtok_ws(k);
    return expect(k, ':', MP__JTOK_WANT_COLON);
}

mp_status mp__jtok_arr_next(mp__jtok *k, int *state, bool *more)
{
    return next_item(k, ']', state, more);
}

void mp__jtok_line_col(const char *t, size_t len, size_t off, int *line,
                      int *col)
{
    int ln = 1, cl = 1;
    if (off > len)
        off = len;
    /* a byte order mark is no column */
    size_t i0 = mp__json_bom(t, len);
    for (size_t i = off < i0 ? off : i0; i < off; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '\n') {
            ln++;
            cl = 1;
        } else if ((c & 0xC0) != 0x80) {
            cl++;
        }
    }
    *line = ln;
    *col = cl;
}
