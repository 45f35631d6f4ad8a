/* String values for shape inference: the value of a STRING
 * tensor is carried like an integer one (mp__tensor.value), each element an
 * id into an interned table of the graph tree (core/strval.c), so that
 * value-moving folds (Identity, Reshape, Gather, Concat, ...) carry strings
 * unchanged and equal ids are equal strings. Strings are byte strings
 * (length given; NUL allowed). StringNormalizer and StringSplit fold
 * through them (core/ops/ops_values.c). */
#ifndef MP__STRVAL_H
#define MP__STRVAL_H

#include "ir.h"

/* Limits of one graph tree's table: beyond them a string is not interned
 * (the tensor's value stays unknown; shapes are unaffected). */
#define MP__STR_MAX_BYTES (1u << 20)
#define MP__STR_MAX_COUNT 65536u
#define MP__STR_MAX_LEN 65536u

/* Interns s[0..len) in g's tree table: *id >= 0, or -1 when over the
 * limits (then the value is not carried). MP_ERR_NOMEM on failure. */
mp_status mp__str_intern(mp_graph *g, const char *s, size_t len, int64_t *id);
/* The id of s[0..len) when it is in g's tree table (nothing added). */
bool mp__str_find(const mp_graph *g, const char *s, size_t len, int64_t *id);
/* The string of id: false when id is not in g's tree table. */
bool mp__str_get(const mp_graph *g, int64_t id, const char **s, size_t *len);
/* Sets t's value to the n strings (s[i], len[i]); when one cannot be
 * interned the value is left unknown (MP_OK). */
mp_status mp__str_set_value(mp_graph *g, mp__tensor *t, const char *const *s,
                           const size_t *len, uint32_t n);
/* Frees g's own table (mp_graph_destroy). */
void mp__strtab_free(mp_graph *g);

/* A STRINGS attribute is kept as the STRING attribute "NAME.strings"
 * (ONNX StringNormalizer's stopwords, ...): "N:" then the N strings in
 * hex, each followed by ','. */
mp_status mp__graph_set_attr_strings(mp_graph *g, uint32_t node,
                                    const char *name, const char *const *s,
                                    const size_t *len, size_t n);
/* The strings of NAME.strings: false when absent or malformed; *n the
 * count; *cur walks them with mp__attr_strings_next. */
bool mp__attr_strings(const mp__node *nd, const char *name, size_t *n,
                     const char **cur);
/* Decodes the next string at *cur into buf (cap bytes): false when
 * malformed or longer than cap; *len its length. */
bool mp__attr_strings_next(const char **cur, char *buf, size_t cap,
                          size_t *len);

#endif
