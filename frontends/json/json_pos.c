/* Positions in JSON text for error messages, file reading and parsing
 * shared by the JSON frontends.
 *
 * jansson keeps no positions in its values, so for a semantic error (a
 * wrong type, an unknown name) the loader knows the path of the offending
 * value ("tensors", 3, "shape", 1) and this small scanner walks the
 * original text along that path to find its line and column. It only runs
 * when an error is reported, and only on text jansson has already
 * accepted, so it can be simple. */
#include "json_pos.h"
#include "json_tok.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- scanner ------------------------------------------------------------- */
typedef struct scan {
    const char *s;
    size_t len, pos;
} scan;

static void skip_ws(scan *sc)
{
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        sc->pos++;
    }
}

static int peek(const scan *sc)
{
    return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

/* At an opening quote: moves past the closing quote. */
static bool skip_string(scan *sc)
{
    if (peek(sc) != '"')
        return false;
    sc->pos++;
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos++];
        if (c == '\\')
            sc->pos++;
        else if (c == '"')
            return true;
    }
    return false;
}

/* Skips one value (no recursion: containers by depth counting). */
static bool skip_value(scan *sc)
{
    skip_ws(sc);
    int c = peek(sc);
    if (c == '"')
        return skip_string(sc);
    if (c == '{' || c == '[') {
        size_t depth = 0;
        while (sc->pos < sc->len) {
            char ch = sc->s[sc->pos];
            if (ch == '"') {
                if (!skip_string(sc))
                    return false;
                continue;
            }
            sc->pos++;
            if (ch == '{' || ch == '[')
                depth++;
            else if (ch == '}' || ch == ']') {
                if (--depth == 0)
                    return true;
            }
        }
        return false;
    }
    /* number or literal */
    size_t start = sc->pos;
    while (sc->pos < sc->len) {
        char ch = sc->s[sc->pos];
        if (ch == ',' || ch == '}' || ch == ']' || ch == ' ' || ch == '\t' ||
            ch == '\n' || ch == '\r')
            break;
        sc->pos++;
    }
    return sc->pos > start;
}

static bool read_hex4(const char *p, size_t avail, unsigned *out)
{
    return mp__jtok_hex4(p, avail, out) == 4;
}

/* At an opening quote: decodes the string and compares it with key.
 * Moves past the string in every case. */
static bool string_equals(scan *sc, const char *key)
{
    size_t start = sc->pos;
    if (!skip_string(sc))
        return false;
    size_t end = sc->pos - 1; /* closing quote */
    const unsigned char *k = (const unsigned char *)key;
    size_t i = start + 1;
    while (i < end) {
        unsigned char c = (unsigned char)sc->s[i];
        if (c != '\\') {
            if (*k++ != c)
                return false;
            i++;
            continue;
        }
        i++;
        char e = sc->s[i++];
        unsigned cp;
        switch (e) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'u':
            if (!read_hex4(sc->s + i, end - i, &cp))
                return false;
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= end &&
                sc->s[i] == '\\' && sc->s[i + 1] == 'u') {
                unsigned lo;
                if (read_hex4(sc->s + i + 2, end - i - 2, &lo) &&
                    lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            break;
        default: cp = (unsigned char)e; break; /* \" \\ \/ */
        }
        unsigned char u[4];
        int n;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            n = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 4;
        }
        for (int j = 0; j < n; j++)
            if (*k++ != u[j])
                return false;
    }
    return *k == 0;
}

/* At '{': finds member key; leaves sc at its value (or at the key with
 * at_key). */
static bool find_member(scan *sc, const char *key, bool at_key)
{
    if (peek(sc) != '{')
        return false;
    sc->pos++;
    for (;;) {
        skip_ws(sc);
        if (peek(sc) != '"')
            return false;
        size_t key_pos = sc->pos;
        bool eq = string_equals(sc, key);
        skip_ws(sc);
        if (peek(sc) != ':')
            return false;
        sc->pos++;
        skip_ws(sc);
        if (eq) {
            if (at_key)
                sc->pos = key_pos;
            return true;
        }
        if (!skip_value(sc))
            return false;
        skip_ws(sc);
        if (peek(sc) != ',')
            return false;
        sc->pos++;
    }
}

/* At '[': moves to element idx. */
static bool find_element(scan *sc, size_t idx)
{
    if (peek(sc) != '[')
        return false;
    sc->pos++;
    for (size_t i = 0;; i++) {
        skip_ws(sc);
        if (peek(sc) == ']')
            return false;
        if (i == idx)
            return true;
        if (!skip_value(sc))
            return false;
        skip_ws(sc);
        if (peek(sc) != ',')
            return false;
        sc->pos++;
    }
}

void mp__json_offset_pos(const char *text, size_t len, size_t off, int *line,
                        int *col)
{
    mp__jtok_line_col(text, len, off, line, col);
}

bool mp__json_locate(const char *text, size_t len, const mp__jpath *path,
                    size_t depth, bool at_key, int *line, int *col)
{
    if (!text)
        return false;
    scan sc = {text, len, 0};
    skip_ws(&sc);
    for (size_t d = 0; d < depth; d++) {
        bool last = d + 1 == depth;
        skip_ws(&sc);
        bool ok = path[d].key
                      ? find_member(&sc, path[d].key, last && at_key)
                      : find_element(&sc, path[d].index);
        if (!ok)
            return false;
    }
    skip_ws(&sc);
    mp__json_offset_pos(text, len, sc.pos, line, col);
    return true;
}

/* ---- error context ---------------------------------------------------------- */
void mp__jloc_init(mp__jloc *L, mp_ctx *ctx, const char *src, const char *text,
                  size_t len)
{
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->src = src;
    L->text = text;
    L->len = len;
}

/* The prefix and the first `shown` steps of L's path, the label after
 * step 1, into buf (truncated to cap). */
static void render_path(const mp__jloc *L, size_t shown, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    if (L->prefix && L->prefix[0]) {
        int w = snprintf(buf, cap, "%s", L->prefix);
        n = w < 0 ? 0 : (size_t)w;
    }
    for (size_t d = 0; d < shown && n < cap; d++) {
        int w;
        if (L->path[d].key)
            w = snprintf(buf + n, cap - n, "%s%s", n ? "." : "",
                         L->path[d].key);
        else
            w = snprintf(buf + n, cap - n, "[%zu]", L->path[d].index);
        if (w < 0)
            break;
        n += (size_t)w;
        if (d == 1 && L->label[0] && n < cap) {
            w = snprintf(buf + n, cap - n, " (%s)", L->label);
            if (w < 0)
                break;
            n += (size_t)w;
        }
    }
}

void mp__jloc_path(const mp__jloc *L, char *buf, size_t cap)
{
    size_t depth = L->depth < MP__JPATH_MAX ? L->depth : MP__JPATH_MAX;
    render_path(L, depth, buf, cap);
}

mp_status mp__jloc_err(mp__jloc *L, mp_status st, bool at_key, const char *fmt,
                      ...)
{
    char msg[MP__MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    size_t depth = L->depth < MP__JPATH_MAX ? L->depth : MP__JPATH_MAX;
    /* pointing at a key: the key is named in the message, not the path */
    size_t shown = at_key && depth ? depth - 1 : depth;
    char path[512];
    render_path(L, shown, path, sizeof path);
    int line, col;
    bool found = mp__json_locate(L->text, L->len, L->path, depth, at_key,
                                &line, &col);
    if (found && shown)
        return mp__err(L->ctx, st, "%s:%d:%d: %s: %s", L->src, line, col, path,
                      msg);
    if (found)
        return mp__err(L->ctx, st, "%s:%d:%d: %s", L->src, line, col, msg);
    if (shown)
        return mp__err(L->ctx, st, "%s: %s: %s", L->src, path, msg);
    return mp__err(L->ctx, st, "%s: %s", L->src, msg);
}

mp_status mp__jloc_err_at(mp__jloc *L, mp_status st, size_t off,
                         const char *fmt, ...)
{
    char msg[MP__MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char path[512];
    mp__jloc_path(L, path, sizeof path);
    int line, col;
    mp__json_offset_pos(L->text, L->len, off, &line, &col);
    if (L->depth || (L->prefix && L->prefix[0]))
        return mp__err(L->ctx, st, "%s:%d:%d: %s: %s", L->src, line, col, path,
                      msg);
    return mp__err(L->ctx, st, "%s:%d:%d: %s", L->src, line, col, msg);
}

bool mp__json_next_member(const char *text, size_t len, size_t *pos,
                         size_t *key_off, size_t *val_off, bool *done)
{
    scan sc = {text, len, *pos};
    *done = false;
    skip_ws(&sc);
    if (peek(&sc) == '}') {
        *pos = sc.pos + 1;
        *done = true;
        return true;
    }
    if (peek(&sc) == ',') {
        sc.pos++;
        skip_ws(&sc);
    }
    if (peek(&sc) != '"')
        return false;
    *key_off = sc.pos;
    if (!skip_string(&sc))
        return false;
    skip_ws(&sc);
    if (peek(&sc) != ':')
        return false;
    sc.pos++;
    skip_ws(&sc);
    *val_off = sc.pos;
    if (!skip_value(&sc))
        return false;
    skip_ws(&sc);
    if (peek(&sc) != ',' && peek(&sc) != '}')
        return false;
    *pos = sc.pos;
    return true;
}

mp__jfmt mp__json_detect(const char *text, size_t len)
{
    scan sc = {text, len, 0};
    skip_ws(&sc);
    if (peek(&sc) != '{')
        return MP__JFMT_SYNTAX;
    sc.pos++;
    bool links = false, edges = false, directed = false, mp__keys = false,
         fmt_key = false;
    skip_ws(&sc);
    if (peek(&sc) == '}')
        return MP__JFMT_NONE;
    for (;;) {
        skip_ws(&sc);
        if (peek(&sc) != '"')
            return MP__JFMT_SYNTAX;
        scan k = sc;
        bool is_fmt = string_equals(&k, "format");
        k = sc;
        if (string_equals(&k, "links"))
            links = true;
        k = sc;
        if (string_equals(&k, "edges"))
            edges = true;
        k = sc;
        if (string_equals(&k, "directed"))
            directed = true;
        k = sc;
        if (string_equals(&k, "tensors"))
            return MP__JFMT_MEMPLAN; /* decisive: no need to scan further */
        k = sc;
        if (string_equals(&k, "nodes"))
            mp__keys = true;
        if (!skip_string(&sc))
            return MP__JFMT_SYNTAX;
        skip_ws(&sc);
        if (peek(&sc) != ':')
            return MP__JFMT_SYNTAX;
        sc.pos++;
        skip_ws(&sc);
        if (is_fmt) {
            fmt_key = true;
            k = sc;
            if (peek(&k) == '"' && string_equals(&k, "memplan-graph"))
                return MP__JFMT_MEMPLAN;
        }
        if (!skip_value(&sc))
            return MP__JFMT_SYNTAX;
        skip_ws(&sc);
        if (peek(&sc) == '}')
            break;
        if (peek(&sc) != ',')
            return MP__JFMT_SYNTAX;
        sc.pos++;
    }
    if (links || (edges && directed))
        return MP__JFMT_NODELINK;
    if (mp__keys || fmt_key)
        return MP__JFMT_MEMPLAN;
    return MP__JFMT_NONE;
}

const char *mp__json_describe(const json_t *v, char *buf, size_t cap)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t l = strlen(s);
        if (l > 40)
            snprintf(buf, cap, "a string \"%.40s...\"", s);
        else
            snprintf(buf, cap, "\"%s\"", s);
        return buf;
    }
    case JSON_INTEGER:
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        return buf;
    case JSON_REAL:
        snprintf(buf, cap, "%.17g", json_real_value(v));
        return buf;
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* ---- files and parsing ---------------------------------------------------------- */

/* jansson reports the position just after the offending token; when its
 * message quotes the token ("near '\"a\"'"), moves the position back to
 * the token's first character. */
static void token_start(const char *text, size_t len, const json_error_t *e,
                        int *line, int *col)
{
    *line = e->line;
    *col = e->column;
    const char *near = strstr(e->text, "near '");
    if (!near || e->position < 0)
        return;
    const char *tok = near + 6;
    size_t tl = strlen(tok);
    if (tl < 2 || tok[tl - 1] != '\'')
        return;
    tl--;
    size_t end = (size_t)e->position;
    if (end > len || tl > end || memcmp(text + end - tl, tok, tl) != 0)
        return;
    mp__json_offset_pos(text, len, end - tl, line, col);
}

mp_status mp__json_parse(mp_ctx *ctx, const char *text, size_t len,
                        const char *src, json_t **root)
{
    *root = NULL;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                       text[i] == '\r'))
        i++;
    if (i == len)
        return mp__err(ctx, MP_ERR_PARSE, "%s:1:1: empty file (expected a "
                      "JSON object)", src);
    json_error_t e;
    json_t *r = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!r) {
        enum json_error_code code = json_error_code(&e);
        mp_status st = code == json_error_numeric_overflow ? MP_ERR_OVERFLOW
                       : code == json_error_out_of_memory ? MP_ERR_NOMEM
                                                          : MP_ERR_PARSE;
        int line, col;
        token_start(text, len, &e, &line, &col);
        if (col < 1)
            col = 1;
        const char *what = code == json_error_numeric_overflow
                               ? " (numbers must fit in 64 bits)"
                               : "";
        return mp__err(ctx, st, "%s:%d:%d: %s%s", src, line, col, e.text,
                      what);
    }
    if (!json_is_object(r)) {
        int line, col;
        mp__json_offset_pos(text, len, i, &line, &col);
        json_decref(r);
        return mp__err(ctx, MP_ERR_PARSE,
                      "%s:%d:%d: expected a JSON object at the top level, "
                      "got an array", src, line, col);
    }
    *root = r;
    return MP_OK;
}

mp_status mp__json_finalize(mp_ctx *ctx, mp_graph *g, const char *src)
{
    mp_status st = mp_graph_finalize(g);
    if (st) {
        char msg[MP__MSG_MAX];
        snprintf(msg, sizeof msg, "%s", ctx->msg);
        mp__err(ctx, st, "%s: %s", src, msg);
    }
    return st;
}
