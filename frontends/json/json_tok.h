/* json_tok.h - the JSON tokenizer shared by the two streaming readers
 * (frontends/json_graph.c: graph format; frontends/plan_json.c: plans).
 * Internal, not installed.
 *
 * It scans RFC 8259 tokens of a text of len bytes from k->pos:
 * whitespace, strings (decoded to UTF-8 into a growable buffer, or only
 * checked), numbers, literals, and the punctuation of objects and arrays.
 * It records no message: a malformed token returns MP_ERR_PARSE with its
 * kind and byte offsets in k->err, and each reader words the message
 * itself (their wordings and positions predate this module; tests and
 * users see them). Grammar above tokens (which value where, nesting
 * depth, duplicate keys) stays in the readers. */
#ifndef MP_JSON_TOK_H
#define MP_JSON_TOK_H

#include "internal.h"

#include <stdbool.h>

typedef enum mp_jtok_err {
    MP_JTOK_NONE = 0,
    MP_JTOK_UNTERMINATED,   /* string without its closing '"': start */
    MP_JTOK_CONTROL,        /* control character in a string: at */
    MP_JTOK_BAD_HEX,        /* \u without 4 hex digits: start = the '\\',
                               at = the first bad digit (may be len) */
    MP_JTOK_SURROGATE,      /* unpaired UTF-16 surrogate: start = '\\' */
    MP_JTOK_NUL,            /* \u0000: start = its '\\' */
    MP_JTOK_BAD_ESCAPE,     /* start = the '\\', c = the byte after it */
    MP_JTOK_NUM_DIGIT,      /* no digit at a number's start (or after its
                               '-'): start = the number, at = there */
    MP_JTOK_NUM_FRAC,       /* no digit after '.': start, at */
    MP_JTOK_NUM_EXP,        /* no digit in the exponent: start, at */
    MP_JTOK_LEADING_ZERO,   /* a digit after a leading 0 (at); the number
                               "0" ends before it (*end) */
    MP_JTOK_WANT_COMMA,     /* ',' or the closing bracket expected: at */
    MP_JTOK_WANT_KEY,       /* a string key (or '}') expected: at */
    MP_JTOK_WANT_COLON      /* ':' expected: at */
} mp_jtok_err;

typedef struct mp_jtok {
    const char *t;      /* the text; t[len] readable (NUL) */
    size_t len, pos;
    struct {
        mp_jtok_err kind;
        size_t start, at;
        char c;
    } err;              /* set when a call returns MP_ERR_PARSE */
} mp_jtok;

static inline void mp_jtok_init(mp_jtok *k, const char *t, size_t len,
                                size_t pos)
{
    k->t = t;
    k->len = len;
    k->pos = pos;
    k->err.kind = MP_JTOK_NONE;
}

/* Skips JSON whitespace. */
static inline void mp_jtok_ws(mp_jtok *k)
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
mp_status mp_jtok_string(mp_jtok *k, mp_ctx *ctx, char **buf, size_t *cap,
                         size_t at, size_t *out_len);

/* At a number's first byte: scans it (not past *end, which it sets);
 * *is_int when it has no fraction and no exponent. Leaves k->pos. */
mp_status mp_jtok_number(mp_jtok *k, size_t *end, bool *is_int);

/* Moves past `word` (true, false, null) when the text has it there. */
bool mp_jtok_literal(mp_jtok *k, const char *word);

/* Object members, after its '{' (*state 0 before the first): *more false
 * past the closing '}', else true with k->pos at the member's key '"'. */
mp_status mp_jtok_obj_next(mp_jtok *k, int *state, bool *more);
/* After a key: the ':' and the whitespace around it. */
mp_status mp_jtok_colon(mp_jtok *k);
/* Array elements, after its '[': *more false past the closing ']', else
 * true with k->pos at the element (whitespace skipped). */
mp_status mp_jtok_arr_next(mp_jtok *k, int *state, bool *more);

/* Decodes up to 4 hex digits at p (avail bytes there): how many are hex
 * digits; *out set when all 4 are. */
unsigned mp_jtok_hex4(const char *p, size_t avail, unsigned *out);

/* 1-based line and column of byte offset off (columns count UTF-8
 * characters, as jansson's do; off beyond len counts as len). */
void mp_jtok_line_col(const char *t, size_t len, size_t off, int *line,
                      int *col);

#endif /* MP_JSON_TOK_H */
