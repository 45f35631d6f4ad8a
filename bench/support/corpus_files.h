/* Helpers the corpus benches share: listing model files, reading a file
 * whole, loading an ONNX model with its symbolic input dims bound. */
#ifndef MP_BENCH_CORPUS_FILES_H
#define MP_BENCH_CORPUS_FILES_H

#include "memplan/memplan.h"

#include <stddef.h>

/* qsort comparator for an array of C strings. */
int mpb_cmp_str(const void *a, const void *b);
/* Appends the *.onnx files under dir (into subfolders when recursive;
 * names starting with prefix only, when prefix is not NULL) to *out. */
void mpb_list_onnx(const char *dir, int recursive, const char *prefix,
                   char ***out, size_t *n, size_t *cap);
/* The corpus benches' command line, `[CORPUS_DIR] [-v]` (CORPUS_DIR
 * defaults to $MEMPLAN_CORPUS, else /work/shared/corpus): the model files
 * under CORPUS_DIR/models, sorted, into *files (*n of them; free each and
 * the array). Returns 1 after printing "BENCH: skipped: no corpus at ..."
 * when there is no such folder, else 0. */
int mpb_corpus_models(int argc, char **argv, const char *bench, int *verbose,
                      char ***files, size_t *n);
/* The whole file, NUL-terminated (malloc'ed), or NULL. */
unsigned char *mpb_read_all(const char *path, size_t *len);
/* Loads an ONNX model with the bindings the corpus table gives it
 * (mpb_model_dims) and every other symbolic input dim bound to 1
 * (MP_ERR_UNSUPPORTED when memplan was built without ONNX). */
mp_status mpb_load_onnx_dims1(mp_ctx *ctx, const char *path, mp_graph **g);

/* The bindings a corpus model needs (one table for every corpus bench and
 * docs/conformance.md), as CLI options "--dim NAME=V --shape IN=AxB...",
 * for a path ending in the model's path below models/; NULL: none. */
const char *mpb_model_dims(const char *path);
/* Parses such a string (NULL: none) into bindings: 0, or -1 when it is
 * malformed or too long. */
#define MPB_MAX_DIMS 64
typedef struct mpb_dims {
    mp_dim_binding b[MPB_MAX_DIMS];
    char names[MPB_MAX_DIMS][256];
    size_t n;
} mpb_dims;
int mpb_parse_dims(const char *s, mpb_dims *d);

#endif
