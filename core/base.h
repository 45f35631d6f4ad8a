/* core/base.h - the bottom of the library: the context (status and
 * message), allocation through its hooks, checked 64-bit arithmetic, a
 * min-heap, the clock, whole-file I/O and the string -> index map.
 * Internal (mp__ names), not installed. */
#ifndef MP__BASE_H
#define MP__BASE_H

#include "memplan/memplan.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define MP__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MP__PRINTF(a, b)
#endif

/* ---- context ------------------------------------------------------------ */
#define MP__MSG_MAX 1024
#define MP__PHASE_MAX 192

struct mp_ctx {
    mp_allocator alloc;
    mp_status status;
    char msg[MP__MSG_MAX];
    /* Wall-clock deadline (mp__now_seconds) of the running plan, 0: none.
     * Set by the planner's entry points from a time limit; each stage
     * clamps its own limit to what is left (mp__time_slice), so that one
     * limit bounds the whole run, whatever the number of stages. */
    double deadline;
    /* progress reports (mp_ctx_set_progress; core/progress.c) */
    struct mp__progress {
        mp_progress_fn fn;
        void *user;
        double interval;
        int depth;              /* runs begun and not ended */
        double t0, last;        /* the outermost run's start, last report */
        char phase[MP__PHASE_MAX];
        char run[MP__PHASE_MAX]; /* the outermost run's name (final) */
        size_t base;            /* the current run's name starts there */
        uint64_t best, bound;
    } progress;
};

/* Starts a deadline limit seconds from now when limit > 0 and none runs
 * (an inner entry point keeps the outer one); returns what to give
 * mp__deadline_end. */
double mp__deadline_begin(mp_ctx *ctx, double limit);
void mp__deadline_end(mp_ctx *ctx, double saved);
/* The time limit a stage may use: `limit` (<= 0: the stage's default),
 * clamped to what is left before ctx's deadline when one runs (at least
 * MP__TIME_SLICE_MIN: a stage past the deadline stops at its first
 * check, keeping what it has). Without a deadline, `limit` as it is. */
#define MP__TIME_SLICE_MIN 1e-3
double mp__time_slice(const mp_ctx *ctx, double limit);
/* True when ctx's deadline has passed. */
bool mp__deadline_passed(const mp_ctx *ctx);

/* ---- progress (core/progress.c) ---------------------------------------------
 * A run (a public entry point that may take over a second) reports
 * through these; mp__progress_begin/end nest as the deadline does: the
 * outermost run's clock counts, an inner run names its own phase and its
 * own figures until it ends (then the outer one's come back), and the
 * outermost end sends the final report, under that run's name. The reports are rate-limited
 * (mp_ctx_set_progress); each call costs a clock read when a callback is
 * set and nothing otherwise. */
typedef struct mp__progress_mark {
    char phase[MP__PHASE_MAX];
    size_t base;
    uint64_t best, bound;
} mp__progress_mark;
/* Begins a run named by the printf format; an inner run's name follows
 * the outer phase ("max batch: batch 96 / recompute: stage LP"). */
void mp__progress_begin(mp_ctx *ctx, mp__progress_mark *saved,
                        const char *fmt, ...) MP__PRINTF(3, 4);
/* Ends it: the outermost sends the final report. */
void mp__progress_end(mp_ctx *ctx, const mp__progress_mark *saved);
/* Renames the current run's phase (the outer runs' names stay before
 * it, the figures stay) and reports when due. */
void mp__progress_phase(mp_ctx *ctx, const char *fmt, ...) MP__PRINTF(2, 3);
/* Records the best peak and the bound (0 leaves one as it is) and reports
 * when due. */
void mp__progress_set(mp_ctx *ctx, uint64_t best, uint64_t bound);
/* Reports when due. */
void mp__progress_tick(mp_ctx *ctx);

/* Records status and message in ctx; returns status. */
mp_status mp__err(mp_ctx *ctx, mp_status st, const char *fmt, ...)
    MP__PRINTF(3, 4);
mp_status mp__verr(mp_ctx *ctx, mp_status st, const char *fmt, va_list ap);

/* Allocation through the context's hooks. On failure they record
 * MP_ERR_NOMEM in ctx and return NULL. Sizes are checked for overflow. */
void *mp__alloc(mp_ctx *ctx, size_t size);
void *mp__calloc(mp_ctx *ctx, size_t count, size_t size);
void *mp__realloc_array(mp_ctx *ctx, void *ptr, size_t count, size_t size);
void mp__dealloc(mp_ctx *ctx, void *ptr);
char *mp__strdup(mp_ctx *ctx, const char *s);

/* Grows *arr (element size elt) so that it holds at least need elements;
 * *cap is updated. Returns MP_OK or MP_ERR_NOMEM. */
mp_status mp__grow(mp_ctx *ctx, void **arr, size_t elt, size_t need,
                  size_t *cap);

/* Checked 64-bit arithmetic: return false on overflow. */
static inline bool mp__add_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline bool mp__mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
/* Rounds v up to a multiple of align (>= 1); false on overflow. */
static inline bool mp__align_up(uint64_t v, uint64_t align, uint64_t *r)
{
    uint64_t rem = v % align;
    if (rem == 0) {
        *r = v;
        return true;
    }
    return mp__add_u64(v, align - rem, r);
}

double mp__now_seconds(void);

/* Binary min-heap of uint32 (h holds *n values): the smallest-index-first
 * topological orders use it, keeping a given order that is already
 * topological. */
static inline void mp__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p] <= v)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static inline uint32_t mp__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0], v = h[--(*n)], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* Reads a whole file with the context allocator; the text is
 * NUL-terminated. MP_ERR_IO names the file; so does a path that is not a
 * regular file (a directory, a device). (core/io.c) */
mp_status mp__read_file(mp_ctx *ctx, const char *path, char **text,
                       size_t *len);
/* MP_OK when path names a regular file (through symlinks); else MP_ERR_IO
 * naming it: "cannot open: <why>" or "is a directory ..." (core/io.c). */
mp_status mp__check_regular(mp_ctx *ctx, const char *path);
/* Writes len bytes to path atomically (mp__wfile); MP_ERR_IO names it. */
mp_status mp__write_file(mp_ctx *ctx, const char *path, const char *data,
                        size_t len);

/* ---- UTF-8 (core/utf8.c) ---------------------------------------------------
 * The length (1 to 4) of the well-formed UTF-8 character at s, its code
 * point in *cp; 0 at the end (NUL) or where the bytes are not one (a stray
 * continuation byte, an overlong form, a surrogate, beyond U+10FFFF, a
 * character cut short). */
size_t mp__utf8_next(const char *s, uint32_t *cp);
/* true when the NUL-terminated s is well-formed UTF-8 throughout. */
bool mp__utf8_valid(const char *s);

/* An output file written atomically: the data goes to a fresh temporary
 * file beside the target (".NAME.tmp-PID-N" in its folder, with the
 * target's permissions when it exists), which commit flushes, fsyncs and
 * renames over the target (then fsyncs the folder). A failure at any
 * point, or abort, removes the temporary file and leaves the target as it
 * was. A symlink is followed: the file it names is replaced. A target
 * that exists and is not a regular file (/dev/null, a FIFO) is written in
 * place. */
typedef struct mp__wfile {
    mp_ctx *ctx;
    FILE *f;           /* write here */
    const char *path;  /* the target as given (messages) */
    char *dest;        /* what is renamed over (NULL: written in place) */
    char *tmp;         /* the temporary file (NULL: in place) */
} mp__wfile;
/* Opens the temporary file (or the target in place); MP_ERR_IO names the
 * target. */
mp_status mp__wfile_open(mp_ctx *ctx, const char *path, mp__wfile *w);
/* Closes and renames; `failed` (a write error the caller saw) aborts
 * instead. MP_OK, or MP_ERR_IO naming the target (the temporary file
 * removed). */
mp_status mp__wfile_commit(mp__wfile *w, bool failed);
/* Closes and removes the temporary file (nothing when not open). */
void mp__wfile_abort(mp__wfile *w);

/* ---- string -> index hash map (open addressing) ------------------------ */
typedef struct mp__name_map {
    uint32_t *slots;   /* index + 1; 0 = empty */
    uint32_t *hashes;  /* full hash of each slot's key */
    uint32_t cap;      /* power of two */
    uint32_t count;
} mp__name_map;

/* names(i) gives the key of index i: the map stores indices only. */
typedef const char *(*mp__name_of_fn)(const void *owner, uint32_t idx);
mp_status mp__name_map_insert(mp_ctx *ctx, mp__name_map *m, const void *owner,
                             mp__name_of_fn name_of, const char *key,
                             uint32_t idx, uint32_t *existing);
uint32_t mp__name_map_find(const mp__name_map *m, const void *owner,
                          mp__name_of_fn name_of, const char *key);
void mp__name_map_free(mp_ctx *ctx, mp__name_map *m);

#endif /* MP__BASE_H */
