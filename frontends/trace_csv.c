/* MiniMalloc traces: CSV with the header `id,lower,upper,size` and an
 * optional fifth column `offset`. A row is one buffer of `size` bytes live
 * on the half-open interval [lower, upper). Errors name file:line and the
 * column. Blank lines are skipped; fields may carry spaces around them;
 * CRLF line ends are accepted. */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const col_names[] = {"id", "lower", "upper", "size",
                                        "offset"};

static void trim(const char **b, const char **e)
{
    while (*b < *e && (**b == ' ' || **b == '\t'))
        (*b)++;
    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' ||
                       (*e)[-1] == '\r'))
        (*e)--;
}

/* Parses a decimal integer in [b, e). */
static int parse_int(const char *b, const char *e, int is_signed,
                     int64_t *sv, uint64_t *uv)
{
    int neg = 0;
    if (b < e && (*b == '-' || *b == '+')) {
        if (*b == '-') {
            if (!is_signed)
                return 0;
            neg = 1;
        }
        b++;
    }
    if (b == e)
        return 0;
    uint64_t v = 0;
    for (; b < e; b++) {
        if (*b < '0' || *b > '9')
            return 0;
        unsigned d = (unsigned)(*b - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (!is_signed) {
        *uv = v;
        return 1;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *sv = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return 0;
        *sv = (int64_t)v;
    }
    return 1;
}

/* Splits [b, e) at commas into at most max fields; returns the count (or
 * max + 1 when there are more). */
static int split(const char *b, const char *e, const char **fb,
                 const char **fe, int max)
{
    int k = 0;
    const char *s = b;
    for (const char *c = b;; c++) {
        if (c == e || *c == ',') {
            if (k == max)
                return max + 1;
            fb[k] = s;
            fe[k] = c;
            trim(&fb[k], &fe[k]);
            k++;
            if (c == e)
                break;
            s = c + 1;
        }
    }
    return k;
}

static int blank(const char *b, const char *e)
{
    for (; b < e; b++)
        if (*b != ' ' && *b != '\t' && *b != '\r')
            return 0;
    return 1;
}

/* The rows sorted by id (then line), for unique_ids. */
typedef struct id_row {
    int64_t id;
    unsigned long line;
} id_row;

static int id_row_cmp(const void *pa, const void *pb)
{
    const id_row *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* Every id once: a buffer's id names it in the output and in messages.
 * The first repeat in the file is reported with the line of the first
 * use. */
static mp_status unique_ids(mp_ctx *ctx, const char *path,
                            const int64_t *ids, const unsigned long *lines,
                            size_t n)
{
    if (n < 2)
        return MP_OK;
    id_row *v = mp__alloc(ctx, n * sizeof *v);
    if (!v)
        return MP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = (id_row){ids[i], lines[i]};
    qsort(v, n, sizeof *v, id_row_cmp);
    size_t bad = n;
    for (size_t i = 1; i < n; i++)
        if (v[i].id == v[i - 1].id && (bad == n || v[i].line < v[bad].line))
            bad = i;
    mp_status st = MP_OK;
    if (bad < n) {
        unsigned long first = v[bad].line;
        for (size_t i = bad; i > 0 && v[i - 1].id == v[bad].id; i--)
            first = v[i - 1].line;
        st = mp__err(ctx, MP_ERR_PARSE,
                     "%s:%lu: column 'id': id %lld is already used on line "
                     "%lu (every buffer needs an id of its own)",
                     path, v[bad].line, (long long)v[bad].id, first);
    }
    mp__dealloc(ctx, v);
    return st;
}

/* The header's k columns: id,lower,upper,size[,offset]. */
static mp_status check_header(mp_ctx *ctx, const char *path,
                              unsigned long line, const char *const *fb,
                              const char *const *fe, int k)
{
    if (k < 4 || k > 5)
        return mp__err(ctx, MP_ERR_PARSE,
                       "%s:%lu: header must be id,lower,upper,size[,"
                       "offset] (found %d columns)",
                       path, line, k > 5 ? 6 : k);
    for (int c = 0; c < k; c++) {
        size_t fl = (size_t)(fe[c] - fb[c]);
        if (fl != strlen(col_names[c]) ||
            memcmp(fb[c], col_names[c], fl) != 0)
            return mp__err(ctx, MP_ERR_PARSE,
                           "%s:%lu: column %d of the header must be "
                           "'%s' (found '%.*s')",
                           path, line, c + 1, col_names[c],
                           (int)(fl > 40 ? 40 : fl), fb[c]);
    }
    return MP_OK;
}

/* One row of ncol fields into *b and *id: integers, upper > lower,
 * size > 0. */
static mp_status parse_row(mp_ctx *ctx, const char *path, unsigned long line,
                           const char *const *fb, const char *const *fe,
                           int ncol, mp_buffer *b, int64_t *id)
{
    for (int c = 0; c < ncol; c++) {
        int ok;
        uint64_t u = 0;
        switch (c) {
        case 0: ok = parse_int(fb[c], fe[c], 1, id, NULL); break;
        case 1: ok = parse_int(fb[c], fe[c], 1, &b->start, NULL); break;
        case 2: ok = parse_int(fb[c], fe[c], 1, &b->end, NULL); break;
        case 3:
            ok = parse_int(fb[c], fe[c], 0, NULL, &u);
            b->size = u;
            break;
        default:
            ok = parse_int(fb[c], fe[c], 0, NULL, &u);
            b->offset = u;
            break;
        }
        if (!ok) {
            size_t fl = (size_t)(fe[c] - fb[c]);
            return mp__err(ctx, MP_ERR_PARSE,
                        "%s:%lu: column '%s': '%.*s' is not %s", path,
                        line, col_names[c], (int)(fl > 40 ? 40 : fl),
                        fb[c],
                        c == 0 || c == 1 || c == 2
                            ? "a 64-bit integer"
                            : "a non-negative 64-bit integer");
        }
    }
    if (b->end <= b->start) {
        return mp__err(ctx, MP_ERR_PARSE,
                    "%s:%lu: column 'upper': %lld is not greater than "
                    "lower %lld (intervals are [lower, upper))",
                    path, line, (long long)b->end, (long long)b->start);
    }
    if (b->size == 0) {
        return mp__err(ctx, MP_ERR_PARSE, "%s:%lu: column 'size': size is 0",
                    path, line);
    }
    return MP_OK;
}

mp_status mp_trace_load_csv(mp_ctx *ctx, const char *path,
                            mp_buffer **bufs_out, int64_t **ids_out,
                            size_t *n_out, int *has_offsets)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    if (!path || !bufs_out || !n_out)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "trace: path, bufs_out and n_out are required");
    *bufs_out = NULL;
    *n_out = 0;
    if (ids_out)
        *ids_out = NULL;
    if (has_offsets)
        *has_offsets = 0;
    char *text = NULL;
    size_t len = 0;
    mp_status st = mp__read_file(ctx, path, &text, &len);
    if (st != MP_OK)
        return st;
    mp_buffer *bufs = NULL;
    int64_t *ids = NULL;
    unsigned long *lines = NULL;
    size_t n = 0, cap = 0, idcap = 0, linecap = 0;
    int ncol = 0;
    unsigned long line = 0;
    const char *fb[6], *fe[6];
    const char *p = text, *end = text + len;
    /* a UTF-8 byte order mark before the header is skipped */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        if (memchr(p, '\0', (size_t)(le - p))) {
            st = mp__err(ctx, MP_ERR_PARSE, "%s:%lu: NUL byte in the line",
                        path, line);
            goto fail;
        }
        if (blank(p, le)) {
            p = le + 1;
            continue;
        }
        int k = split(p, le, fb, fe, 5);
        if (ncol == 0) { /* header */
            if ((st = check_header(ctx, path, line, fb, fe, k)))
                goto fail;
            ncol = k;
            p = le + 1;
            continue;
        }
        if (k != ncol) {
            st = mp__err(ctx, MP_ERR_PARSE,
                        "%s:%lu: expected %d columns, found %s%d", path, line,
                        ncol, k > 5 ? "more than " : "", k > 5 ? 5 : k);
            goto fail;
        }
        if (n == cap && mp__grow(ctx, (void **)&bufs, sizeof *bufs, n + 1,
                                &cap) != MP_OK) {
            st = MP_ERR_NOMEM;
            goto fail;
        }
        if (n == idcap &&
            (mp__grow(ctx, (void **)&ids, sizeof *ids, n + 1, &idcap) ||
             mp__grow(ctx, (void **)&lines, sizeof *lines, n + 1,
                      &linecap))) {
            st = MP_ERR_NOMEM;
            goto fail;
        }
        mp_buffer b = {0, 0, 0, 0};
        int64_t id = 0;
        if ((st = parse_row(ctx, path, line, fb, fe, ncol, &b, &id)))
            goto fail;
        bufs[n] = b;
        ids[n] = id;
        lines[n] = line;
        n++;
        p = le + 1;
    }
    if (ncol == 0) {
        st = mp__err(ctx, MP_ERR_PARSE,
                    "%s:%lu: missing header id,lower,upper,size", path,
                    line ? line : 1);
        goto fail;
    }
    if ((st = unique_ids(ctx, path, ids, lines, n)))
        goto fail;
    mp__dealloc(ctx, text);
    mp__dealloc(ctx, lines);
    *bufs_out = bufs;
    if (ids_out)
        *ids_out = ids;
    else
        mp__dealloc(ctx, ids);
    *n_out = n;
    if (has_offsets)
        *has_offsets = ncol == 5;
    return MP_OK;
fail:
    mp__dealloc(ctx, text);
    mp__dealloc(ctx, bufs);
    mp__dealloc(ctx, ids);
    mp__dealloc(ctx, lines);
    return st;
}

mp_status mp_trace_save_csv(mp_ctx *ctx, const char *path,
                            const mp_buffer *bufs, const int64_t *ids,
                            size_t n)
{
    if (!ctx)
        return MP_ERR_INVALID_ARG;
    if (!path || (n > 0 && !bufs))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "trace: path and buffers are required");
    mp__wfile w;
    mp_status st = mp__wfile_open(ctx, path, &w);
    if (st)
        return st;
    FILE *f = w.f;
    int bad = fputs("id,lower,upper,size,offset\n", f) < 0;
    for (size_t i = 0; i < n && !bad; i++)
        bad = fprintf(f, "%lld,%lld,%lld,%llu,%llu\n",
                      ids ? (long long)ids[i] : (long long)i,
                      (long long)bufs[i].start, (long long)bufs[i].end,
                      (unsigned long long)bufs[i].size,
                      (unsigned long long)bufs[i].offset) < 0;
    return mp__wfile_commit(&w, bad);
}
