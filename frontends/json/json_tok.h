/* json_tok.h - the lexer of the JSON reader (json.h, json_read.c).
 * Internal, not installed.
 *
 * It scans RFC 8259 tokens of a text of len bytes from k->pos:
 * whitespace, strings (decoded to UTF-8 into a growable buffer, or only
 * checked), numbers, literals, and the punctuation of objects and arrays.
 * It records no message: a malformed token returns MP_ERR_PARSE with its
 * kind and byte offsets in k->err, and the reader words the message.
 * Grammar above tokens (which value where, nesting depth, duplicate keys)
 * is the reader's. */
#ifndef MP__JSON_TOK_H
#define MP__JSON_TOK_H

#include "base.h"

#include <stdbool.h>

typedef enum mp__jtok_err {
    MP__JTOK_NONE = 0,
    MP__JTOK_UNTERMINATED,   /* string without its closing '"': start */
    MP__JTOK_CONTROL,        /* control character in a string: at */
    MP__JTOK_BAD_HEX,        /* \u without 4 hex digits: start = the '\\',
                               at = the first bad digit (may be len) */
    MP__JTOK_SURROGATE,      /* unpaired UTF-16 surrogate: start = '\\' */
    MP__JTOK_NUL,            /* \u0000: start = its '\\' */
    MP__JTOK_UTF8,           /* bytes that are not UTF-8 in a string: at */
    MP__JTOK_BAD_ESCAPE,     /* start = the '\\', c = the byte after it */
    MP__JTOK_NUM_DIGIT,      /* no digit at a number's start (or after its
                               '-'): start = the number, at = there */
    MP__JTOK_NUM_FRAC,       /* no digit after '.': start, at */
    MP__JTOK_NUM_EXP,        /* no digit in the exponent: start, at */
    MP__JTOK_LEADING_ZERO,   /* a digit after a leading 0 (at); the number
                               "0" ends before it (*end) */
    MP__JTOK_WANT_COMMA,     /* ',' or the closing bracket expected: at */
    MP__JTOK_WANT_KEY,       /* a string key (or '}') expected: at */
    MP__JTOK_WANT_COLON      /* ':' expected: at */
} mp__jtok_err;

typedef struct mp__jtok {
    const char *t;      /* the text; t[len] readable (NUL) */
    size_t len, pos;
    struct {
        mp__jtok_err kind;
        size_t start, at;
        char c;
    } err;              /* set when a call returns MP_ERR_PARSE */
} mp__jtok;

/* 3 when the text starts with a UTF-8 byte order mark (EF BB BF, which
 * some editors write before JSON; it is skipped), else 0. */
static inline size_t mp__json_bom(const char *t, size_t len)
{
    return len >= 3 && (unsigned char)t[0] == 0xEF &&
                   (unsigned char)t[1] == 0xBB && (unsigned char)t[2] == 0xBF
               ? 3
               : 0;
}

static inline void mp__jtok_init(mp__jtok *k, const char *t, size_t len,
                                size_t pos)
{
    k->t = t;
    k->len = len;
    k->pos = pos;
    k->err.kind = MP__JTOK_NONE;
}

/* Skips JSON whitespace. */
static inline void mp__jtok_ws(mp__jtok *k)
{
    const char *t = k->t;
    size_t p = k->pos, n = k->len;
    while (p < n && (t[p] == ' ' || t[p] == '\n' || t[p] == '\t' ||
                     t[p] == '\r'))
        p++;
    k->pos = p;
}

/* At a '"': decodes the string to (*buf)[at...] NUL-terminated, growing
 * *buf (capacity *cap) with the context allocator, and moves past it;
 * *out_len (may be NULL) gets its length. buf NULL: only checks it.
 * MP_ERR_NOMEM without a message. */
mp_status mp__jtok_string(mp__jtok *k, mp_ctx *ctx, char **buf, size_t *cap,
                         size_t at, size_t *out_len);

/* At a number's first byte: scans it (not past *end, which it sets);
 * *is_int when it has no fraction and no exponent. Leaves k->pos. */
mp_status mp__jtok_number(mp__jtok *k, size_t *end, bool *is_int);

/* Moves past `word` (true, false, null) when the text has it there. */
bool mp__jtok_literal(mp__jtok *k, const char *word);

/* Object members, after its '{' (*state 0 before the first): *more false
 * past the closing '}', else true with k->pos at the member's key '"'. */
mp_status mp__jtok_obj_next(mp__jtok *k, int *state, bool *more);
/* After a key: the ':' and the whitespace around it. */
mp_status mp__jtok_colon(mp__jtok *k);
/* Array elements, after its '[': *more false past the closing ']', else
 * true with k->pos at the element (whitespace skipped). */
mp_status mp__jtok_arr_next(mp__jtok *k, int *state, bool *more);

/* 1-based line and column of byte offset off (columns count UTF-8
 * characters, as jansson's do; off beyond len counts as len). */
void mp__jtok_line_col(const char *t, size_t len, size_t off, int *line,
                      int *col);

#endif /* MP__JSON_TOK_H */
