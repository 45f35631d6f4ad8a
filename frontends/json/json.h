/* json.h - the library's one JSON reader and one JSON writer
 * (frontends/json/json_read.c, json_write.c; the lexer is json_tok.c).
 * Every JSON format of the library goes through them: the graph
 * (json_graph.c), plans (plan_json.c), node-link graphs (nodelink.c), LLM
 * configs (llm_config.c), device profiles (analysis/devices.c), format
 * detection (load.c) and the Chrome trace (report/trace_json.c).
 * Internal, not installed.
 *
 * Reader: a pull reader over a text held in memory. The caller asks for
 * the next value, the next member of an object or the next element of an
 * array; the reader keeps the path of what it reads ("tensors[3].shape")
 * and the byte offset of every value, so that every error names
 * src:line:column and the path:
 *
 *     t.json:4:17: tensors[3] ("x").shape[1]: expected an integer >= 0
 *         (or -1 or null for unknown), got "a"
 *
 * An object declares the keys it takes in a key table: an unknown key or a
 * key given twice is an error naming it and the object's path; "x-..."
 * extension keys are skipped when the table says so. Containers opened by
 * the caller count toward a nesting limit (MP__JSON_MAX_DEPTH); values
 * skipped whole are checked without recursion at any depth. Strings are
 * decoded (escapes, \u surrogate pairs) into the reader's string arena.
 *
 *     mp__jr r;  mp__jobj o;  mp__jval v;  int k;
 *     mp__jr_init(&r, ctx, "t.json", text, len, 0);
 *     st = mp__jr_doc(&r, &o, &keys);
 *     while (!st && !(st = mp__jr_next(&r, &o, &k, &v)) && k != MP__JK_END)
 *         st = ... a typed check of v (mp__jr_u64, mp__jr_string, ...);
 *     if (!st) st = mp__jr_doc_end(&r);
 *     mp__jr_free(&r);
 *
 * Writer: a growable buffer with nested objects and arrays; commas,
 * colons, line breaks and indentation come from the nesting, so that each
 * format's layout is declared by how it opens its containers (one member
 * per line, or all on one line). Strings are escaped (control characters
 * as escapes; a byte that is not part of well-formed UTF-8 as U+FFFD, so
 * that the output is always valid JSON whatever a name holds), integers
 * written exactly (all of uint64 and int64), numbers written in
 * the form each format has always used; the result is a string or a file.
 *
 *     mp__jw w;
 *     mp__jw_init(&w, ctx, 0, 0);
 *     mp__jw_object(&w, true);          (one member per line)
 *     mp__jw_key(&w, "name"); mp__jw_string(&w, "g");
 *     mp__jw_end(&w);
 *     st = mp__jw_done(&w, &text, &len);       {\n  "name": "g"\n}
 */
#ifndef MP__JSON_H
#define MP__JSON_H

#include "base.h"
#include "json_tok.h"

#include <stdbool.h>

/* containers open at once, reading or writing */
#define MP__JSON_MAX_DEPTH 512
/* path steps named in messages (deeper ones are left out) */
#define MP__JPATH_MAX 16

/* ======================================================================
 * Reader
 * ====================================================================== */
/* Reader flags. MP__JR_NUM64: numbers must fit in 64 bits wherever they
 * stand (as jansson reads them): an integer beyond int64 or a real beyond
 * double is MP_ERR_OVERFLOW when read, also in a skipped value. Without
 * it, range errors are the typed accessors' (MP_ERR_PARSE). */
enum { MP__JR_NUM64 = 1 };

typedef enum mp__jtype {
    MP__JT_NULL, MP__JT_FALSE, MP__JT_TRUE, MP__JT_NUMBER, MP__JT_STRING,
    MP__JT_ARRAY, MP__JT_OBJECT
} mp__jtype;

/* A value read by mp__jr_value: a scalar whole, a container its opening
 * bracket. */
typedef struct mp__jval {
    mp__jtype type;
    size_t off, end;  /* its text: [off, end) for scalars */
    /* numbers */
    bool is_int;      /* no fraction, no exponent */
    bool neg;         /* a '-' sign */
    bool big;         /* an integer beyond 64 bits (u is not it) */
    bool fits;        /* an integer that fits int64 (then i is it) */
    uint64_t u;       /* an integer's magnitude */
    int64_t i;
    double d;         /* the value (an integer converted) */
    /* strings: decoded text in the arena (mp__jr_str), length n */
    size_t s, n;
} mp__jval;

typedef struct mp__jpath {
    const char *key;  /* a key, or NULL: an array index */
    size_t index;
    char own[64];     /* copy of a key pushed with mp__jr_push_key */
} mp__jpath;

typedef struct mp__jr {
    mp_ctx *ctx;
    const char *src;  /* the name messages start with */
    mp__jtok k;       /* the text (k.t[k.len] readable) and the position */
    unsigned flags, depth;
    /* string arena: decoded strings and keys */
    char *sb;
    size_t sb_len, sb_cap;
    /* bit stack of mp__jr_skip: 256 levels here, deeper ones in stack */
    uint64_t stack0[4];
    uint64_t *stack;
    size_t stack_cap;
    /* the path of the value being read, for messages */
    mp__jpath path[MP__JPATH_MAX];
    size_t n_path;
    char label[160];     /* printed after path[1], e.g. "\"conv1\"" */
    const char *prefix;  /* printed before the path (NULL: none) */
    /* keys read that are not in their object's table (extensions, free
     * keys): a key twice in one object is an error (json_read.c) */
    struct mp__jxkeys *xkeys;
} mp__jr;

/* Key table of an object. names: n entries (NULL entries never match);
 * expected: the keys as an unknown-key message lists them (NULL: the
 * names, "a, b or c"). */
enum {
    MP__JK_EXT = 1,  /* "x-..." keys are skipped */
    MP__JK_ANY = 2   /* other keys are given to the caller as MP__JK_OTHER */
};
typedef struct mp__jkeys {
    const char *const *names;
    int n;            /* at most 64 */
    unsigned flags;
    const char *expected;
} mp__jkeys;

enum { MP__JK_END = -1, MP__JK_OTHER = -2 };

/* An object being read. */
typedef struct mp__jobj {
    const mp__jkeys *keys;
    size_t off;        /* its '{' */
    unsigned depth;    /* the reader's depth inside it */
    uint64_t seen;     /* keys of the table read so far */
    const char *name;  /* the last key when a table key, else NULL */
    size_t key;        /* else its text in the arena */
    size_t key_off;    /* where it stands in the text */
    int state;
    bool pushed;       /* that key is on the path */
} mp__jobj;

/* An array being read. */
typedef struct mp__jarr {
    size_t off;        /* its '[' */
    unsigned depth;    /* the reader's depth inside it */
    size_t n;          /* elements read so far */
    int state;
    bool pushed;
} mp__jarr;

void mp__jr_init(mp__jr *r, mp_ctx *ctx, const char *src, const char *text,
                size_t len, unsigned flags);
void mp__jr_free(mp__jr *r);

/* The top-level value, which must be an object (keys: its table). An
 * empty text is "empty file (expected a JSON object)" at 1:1. */
mp_status mp__jr_doc(mp__jr *r, mp__jobj *o, const mp__jkeys *keys);
/* After the top-level object: only white space may follow. */
mp_status mp__jr_doc_end(mp__jr *r);

/* The next value: a scalar whole, a container its opening bracket (then
 * read it with mp__jr_object_at / mp__jr_array_at, or mp__jr_skip). */
mp_status mp__jr_value(mp__jr *r, mp__jval *v);
/* The rest of a container whose start is v (nothing for a scalar). */
mp_status mp__jr_skip(mp__jr *r, const mp__jval *v);
/* The next value, skipped whole. */
mp_status mp__jr_skip_value(mp__jr *r);
/* mp__jr_skip / mp__jr_skip_value, checking that no object inside has a
 * key twice ("duplicate key" at its second place): for the values the
 * formats keep free (metadata, "x-" extensions), which are skipped but
 * must still be JSON as the formats define it. */
mp_status mp__jr_skip_unique(mp__jr *r, const mp__jval *v);
mp_status mp__jr_skip_value_unique(mp__jr *r);

/* The next value, which must be an object / array: otherwise "expected
 * <what>, got ..." (what NULL: "an object" / "an array"). */
mp_status mp__jr_object(mp__jr *r, mp__jobj *o, const mp__jkeys *keys,
                       const char *what);
mp_status mp__jr_array(mp__jr *r, mp__jarr *a, const char *what);
/* The same for a value v already read (which must be one). */
void mp__jr_object_at(mp__jr *r, mp__jobj *o, const mp__jval *v,
                     const mp__jkeys *keys);
void mp__jr_array_at(mp__jr *r, mp__jarr *a, const mp__jval *v);

/* The next member of o: *k its index in the table, MP__JK_OTHER for a key
 * the table lets through, MP__JK_END past the closing brace. A table key
 * is on the path until the next call; the key is mp__jr_key(r, o). */
mp_status mp__jr_member(mp__jr *r, mp__jobj *o, int *k);
/* mp__jr_member, then the member's value into *v (unless MP__JK_END). */
mp_status mp__jr_next(mp__jr *r, mp__jobj *o, int *k, mp__jval *v);
/* The next element of a: *more false past the closing bracket; else its
 * index is on the path until the next call. */
mp_status mp__jr_elem(mp__jr *r, mp__jarr *a, bool *more);

/* What a whole document's members are handed to (mp__jr_read_doc): the
 * member's key k and value v; the rest of a container value is fn's to
 * read or skip. */
typedef mp_status (*mp__jmember_fn)(mp__jr *r, void *arg, int k,
                                    const mp__jval *v);
/* A whole document: its top-level object (keys: its table), each member
 * given to fn, then the end of the text. */
mp_status mp__jr_read_doc(mp__jr *r, mp__jobj *o, const mp__jkeys *keys,
                         mp__jmember_fn fn, void *arg);
/* An mp__jmember_fn that keeps the value of table key k in
 * ((mp__jval *)slots)[k] (a container skipped: its type and offset kept)
 * and passes over other keys. */
mp_status mp__jr_keep(mp__jr *r, void *slots, int k, const mp__jval *v);

static inline const char *mp__jr_str(const mp__jr *r, size_t s)
{
    return r->sb + s;
}
static inline const char *mp__jr_key(const mp__jr *r, const mp__jobj *o)
{
    return o->name ? o->name : r->sb + o->key;
}
/* Strings read after mark are dropped (their arena space reused). */
static inline size_t mp__jr_mark(const mp__jr *r) { return r->sb_len; }
static inline void mp__jr_release(mp__jr *r, size_t mark) { r->sb_len = mark; }
/* The offset of the text the reader stands at. */
static inline size_t mp__jr_pos(const mp__jr *r) { return r->k.pos; }
/* Skips white space: the offset where the next value starts. */
static inline size_t mp__jr_ws(mp__jr *r)
{
    mp__jtok_ws(&r->k);
    return r->k.pos;
}
/* Moves to offset off of the text, at nesting depth depth (a value whose
 * offset was kept, e.g. a member read in a second pass). */
static inline void mp__jr_seek(mp__jr *r, size_t off, unsigned depth)
{
    r->k.pos = off;
    r->depth = depth;
}

/* Typed values (v read by mp__jr_value). expected words the type in the
 * message "expected <expected>, got <the value>". */
/* A string (nonempty: "" is an error), *s its decoded text. */
mp_status mp__jr_string(mp__jr *r, const mp__jval *v, bool nonempty,
                       const char *expected, const char **s);
/* An integer in [min, max]: below min (or no integer) "expected ...",
 * above max "integer N out of range (at most max)". */
mp_status mp__jr_i64(mp__jr *r, const mp__jval *v, int64_t min, int64_t max,
                    const char *expected, int64_t *out);
/* A non-negative integer <= max (up to UINT64_MAX). */
mp_status mp__jr_u64(mp__jr *r, const mp__jval *v, uint64_t max,
                    const char *expected, uint64_t *out);
/* A number >= min; "number X out of range" when not finite. */
mp_status mp__jr_num(mp__jr *r, const mp__jval *v, double min,
                    const char *expected, double *out);

/* ---- path and messages ---- */
void mp__jr_push_key(mp__jr *r, const char *key);   /* copied */
void mp__jr_push_index(mp__jr *r, size_t i);
void mp__jr_pop(mp__jr *r);
/* Keeps the first n steps of the path. */
void mp__jr_path_cut(mp__jr *r, size_t n);
/* The label printed after path[1] ("\"conv1\""): name quoted, or text
 * as is (NULL: no label). */
void mp__jr_label_name(mp__jr *r, const char *name);
void mp__jr_label(mp__jr *r, const char *fmt, ...) MP__PRINTF(2, 3);

/* Records "src:line:col: <path>: <message>" (off: a byte offset of the
 * text) in the context and returns st. */
mp_status mp__jr_err(mp__jr *r, mp_status st, size_t off, const char *fmt,
                    ...) MP__PRINTF(4, 5);
/* "expected <expected>, got <v described>" at v. */
mp_status mp__jr_type_err(mp__jr *r, const mp__jval *v, const char *expected);
/* "missing required key \"key\"<detail>" at the object's '{'. */
mp_status mp__jr_missing(mp__jr *r, const mp__jobj *o, const char *key,
                        const char *detail);
/* The first key of the table in `need` that o lacks, as above. */
mp_status mp__jr_require(mp__jr *r, const mp__jobj *o, uint64_t need);
/* "unknown key \"key\" (expected <the keys of the table>)" at key_off,
 * for a key reported after its object was read. */
mp_status mp__jr_unknown_key(mp__jr *r, const mp__jkeys *keys, size_t key_off,
                            const char *key);
/* "duplicate key \"<the last key>\"" at that key. */
mp_status mp__jr_dup_key(mp__jr *r, const mp__jobj *o);

/* A reader for a nested document of the same text (a subgraph) starting
 * where parent stands: same source, flags and depth; messages print
 * parent's path (rendered into prefix, cap bytes) before its own.
 * mp__jr_resume moves parent past what child read. */
void mp__jr_child(mp__jr *child, const mp__jr *parent, char *prefix,
                 size_t cap);
static inline void mp__jr_resume(mp__jr *parent, const mp__jr *child)
{
    parent->k.pos = child->k.pos;
    parent->depth = child->depth;
}

/* True for an extension key ("x-..."). */
static inline bool mp__json_is_ext_key(const char *key)
{
    return key[0] == 'x' && key[1] == '-';
}

/* ======================================================================
 * Writer
 * ====================================================================== */
enum {
    MP__JW_COMPACT = 1, /* "," and ":" without spaces, no indentation */
    MP__JW_ASCII = 2,   /* every character outside printable ASCII as
                           \uXXXX (a surrogate pair above U+FFFF; the
                           trace's form), no short escapes */
    MP__JW_UPPER = 4    /* \u00XX in capitals (jansson's form) */
};

/* How a double is written. */
typedef enum mp__jw_real {
    MP__JW_ROUNDTRIP, /* the shortest of %.15g..%.17g that reads back,
                         always with '.' or an exponent (graph JSON);
                         not finite: an error */
    MP__JW_SHORTEST,  /* the shortest %.Ng (N 1..17) that reads back (plan
                         JSON); not finite: 0 */
    MP__JW_G17        /* %.17g with ".0" when integral, the exponent
                         without '+' and leading zeros (jansson's form) */
} mp__jw_real;

typedef struct mp__jw_level {
    unsigned char lines, any, key;
    char close;
    unsigned indent, line;
} mp__jw_level;

typedef struct mp__jw {
    mp_ctx *ctx;
    char *buf;
    size_t len, cap;
    mp_status st;       /* the first error; then every call does nothing */
    unsigned flags, depth;
    bool newline;       /* the next item starts a line (mp__jw_newline) */
    mp__jw_level lv[MP__JSON_MAX_DEPTH + 1];
} mp__jw;

/* reserve: bytes to allocate up front (0: as needed). */
void mp__jw_init(mp__jw *w, mp_ctx *ctx, unsigned flags, size_t reserve);
/* Opens an object / array as the next value. lines: each item on a line
 * of its own, indented by 2 more than the line it opens on (by nothing
 * with MP__JW_COMPACT), the closing bracket on a line of its own; an
 * empty one is "{}" / "[]". Otherwise all on one line. */
void mp__jw_object(mp__jw *w, bool lines);
void mp__jw_array(mp__jw *w, bool lines);
void mp__jw_end(mp__jw *w);
/* The next member's key (in an object). */
void mp__jw_key(mp__jw *w, const char *key);
/* Values. mp__jw_string(NULL) writes null. */
void mp__jw_string(mp__jw *w, const char *s);
void mp__jw_null(mp__jw *w);
void mp__jw_bool(mp__jw *w, bool b);
void mp__jw_u64(mp__jw *w, uint64_t v);
void mp__jw_i64(mp__jw *w, int64_t v);
/* what names the value in the error of a value that cannot be written. */
void mp__jw_double(mp__jw *w, double v, mp__jw_real form, const char *what);
/* "%.<decimals>f" */
void mp__jw_fixed(mp__jw *w, double v, int decimals);
/* A string value written in pieces: begin, add (escaped), end. */
void mp__jw_string_begin(mp__jw *w);
void mp__jw_string_add(mp__jw *w, const char *s);
void mp__jw_string_end(mp__jw *w);
/* The next item of the current container starts a new line. */
void mp__jw_newline(mp__jw *w);
/* Text as is (after the top-level value: "\n"). */
void mp__jw_raw(mp__jw *w, const char *s);
/* Records an error (the first one wins; the output is dropped). */
void mp__jw_fail(mp__jw *w, mp_status st, const char *fmt, ...)
    MP__PRINTF(3, 4);

/* The text (NUL-terminated, *len its length; len may be NULL), or the
 * first error (the buffer freed). */
mp_status mp__jw_done(mp__jw *w, char **out, size_t *len);
/* Writes the text to path (mp__write_file) and frees it. */
mp_status mp__jw_save(mp__jw *w, const char *path);

/* ======================================================================
 * Formats
 * ====================================================================== */
/* A reader of a format: a JSON text (len bytes, text[len] readable), src
 * naming it in messages, the result in *out (of the format's type). */
typedef mp_status (*mp__json_text_fn)(mp_ctx *ctx, const char *text,
                                      size_t len, const char *src,
                                      void *out);
/* Reads the file at path and hands its text to fn. */
mp_status mp__json_load_file(mp_ctx *ctx, const char *path,
                            mp__json_text_fn fn, void *out);

/* A memplan JSON graph (json_graph.c) / a networkx node-link graph
 * (nodelink.c), for format detection (frontends/load.c): out is an
 * mp_graph **, the graph finalized. */
mp_status mp__json_graph_read(mp_ctx *ctx, const char *text, size_t len,
                             const char *src, void *out);
mp_status mp__nodelink_read(mp_ctx *ctx, const char *text, size_t len,
                           const char *src, void *out);
/* The end of a graph reader that read g with status st: g finalized (a
 * failure's message prefixed with "src: ") into *out, or destroyed. */
mp_status mp__json_graph_done(mp_ctx *ctx, mp_status st, mp_graph *g,
                             const char *src, mp_graph **out);

#endif /* MP__JSON_H */
