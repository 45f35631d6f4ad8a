/* Helpers shared by the JSON frontends (memplan JSON graph, networkx
 * node-link): reading a file, parsing it with jansson with positioned
 * syntax errors, and finding the line:column of any value by its path in
 * the original text, so that semantic errors name file:line:column and the
 * key. Internal to the library. */
#ifndef MP__JSON_POS_H
#define MP__JSON_POS_H

#include "base.h"

#include <jansson.h>

/* One step of a path into a JSON document: an object key (key != NULL) or
 * an array index (key == NULL). */
typedef struct mp__jpath {
    const char *key;
    size_t index;
} mp__jpath;

#define MP__JPATH_MAX 16

/* Finds the value at `path` (depth steps) in text (len bytes, valid JSON)
 * and returns its 1-based line and column (columns count characters, as
 * jansson does). With at_key, the last step must be a key and the position
 * is that of the key itself. Returns false when the path is not found. */
bool mp__json_locate(const char *text, size_t len, const mp__jpath *path,
                    size_t depth, bool at_key, int *line, int *col);

/* Line and column (1-based) of byte offset off in text. */
void mp__json_offset_pos(const char *text, size_t len, size_t off, int *line,
                        int *col);

/* Error context of a loader: the source name, the text and the path of
 * the value being read. */
typedef struct mp__jloc {
    mp_ctx *ctx;
    const char *src;
    const char *text;
    size_t len;
    mp__jpath path[MP__JPATH_MAX];
    size_t depth;
    char label[160];   /* printed after path[1], e.g. "\"conv1\"" */
    /* printed before the path (NULL: none): where a nested document
     * starts, e.g. a subgraph's "nodes[3] (\"loop\").attributes.body.graph" */
    const char *prefix;
} mp__jloc;

void mp__jloc_init(mp__jloc *L, mp_ctx *ctx, const char *src, const char *text,
                  size_t len);
static inline void mp__jloc_key(mp__jloc *L, const char *key)
{
    if (L->depth < MP__JPATH_MAX) {
        L->path[L->depth].key = key;
        L->path[L->depth].index = 0;
    }
    L->depth++;
}
static inline void mp__jloc_index(mp__jloc *L, size_t i)
{
    if (L->depth < MP__JPATH_MAX) {
        L->path[L->depth].key = NULL;
        L->path[L->depth].index = i;
    }
    L->depth++;
}
static inline void mp__jloc_pop(mp__jloc *L) { L->depth--; }

/* Records "src:line:col: path (label): message" in the context and returns
 * st. at_key: point at the key of the last path step, not its value. */
mp_status mp__jloc_err(mp__jloc *L, mp_status st, bool at_key, const char *fmt,
                      ...) MP__PRINTF(4, 5);

/* Same, with the position given as a byte offset into the text (the
 * whole path is printed). */
mp_status mp__jloc_err_at(mp__jloc *L, mp_status st, size_t off,
                         const char *fmt, ...) MP__PRINTF(4, 5);

/* The path of L as errors print it (prefix, path, label) into buf. */
void mp__jloc_path(const mp__jloc *L, char *buf, size_t cap);

/* Format of a JSON graph found from its top-level keys by a fast scan
 * (no parsing): MP__JFMT_SYNTAX when the scan met malformed text. */
typedef enum mp__jfmt {
    MP__JFMT_NONE = 0, MP__JFMT_MEMPLAN, MP__JFMT_NODELINK, MP__JFMT_SYNTAX
} mp__jfmt;
mp__jfmt mp__json_detect(const char *text, size_t len);

/* Fast, lenient walk over the members of the top-level object: *pos
 * starts just after its '{'. Sets *key_off (the key's opening quote) and
 * *val_off, or *done at the closing brace (then *pos is past it). Returns
 * false on malformed text (the caller then parses strictly to word the
 * error). */
bool mp__json_next_member(const char *text, size_t len, size_t *pos,
                         size_t *key_off, size_t *val_off, bool *done);

/* Streaming reader of the memplan JSON graph format (json_graph.c). */
mp_status mp__json_graph_read(mp_ctx *ctx, const char *text, size_t len,
                             const char *src, mp_graph **out);

/* Describes a JSON value for messages ("a string \"a\"", "an array", ...). */
const char *mp__json_describe(const json_t *v, char *buf, size_t cap);

/* True when key is an extension key ("x-...") that readers ignore. */
static inline bool mp__json_is_ext_key(const char *key)
{
    return key[0] == 'x' && key[1] == '-';
}

/* Parses text with jansson (duplicate keys rejected). Syntax errors give
 * MP_ERR_PARSE (MP_ERR_OVERFLOW for numbers out of range) with
 * "src:line:col: ..."; the top level must be an object. */
mp_status mp__json_parse(mp_ctx *ctx, const char *text, size_t len,
                        const char *src, json_t **root);

/* Builder of a node-link graph from a parsed document; text/len are the
 * document's text (for error positions). Returns a finalized graph. */
mp_status mp__nodelink_build(mp_ctx *ctx, json_t *root, const char *text,
                            size_t len, const char *src, mp_graph **out);

/* Finalizes g; on failure prefixes the message with "src: ". */
mp_status mp__json_finalize(mp_ctx *ctx, mp_graph *g, const char *src);

#endif /* MP__JSON_POS_H */
