/* Whole-file reading and writing with the context's allocator; every
 * frontend and writer goes through these two. */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

mp_status mp__read_file(mp_ctx *ctx, const char *path, char **text,
                       size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
    size_t cap = 0, n = 0;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0)
            cap = (size_t)sz + 1;
        rewind(f);
    }
    for (;;) {
        if (!buf || n + 1 >= cap) {
            size_t ncap = !buf && cap ? cap : (cap ? cap * 2 : 65536);
            char *nb = mp__realloc_array(ctx, buf, ncap, 1);
            if (!nb) {
                mp__dealloc(ctx, buf);
                fclose(f);
                return MP_ERR_NOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (!buf) {
        buf = mp__alloc(ctx, 1);
        if (!buf) {
            fclose(f);
            return MP_ERR_NOMEM;
        }
    }
    if (ferror(f)) {
        int e = errno;
        mp__dealloc(ctx, buf);
        fclose(f);
        return mp__err(ctx, MP_ERR_IO, "%s: read error: %s", path,
                      strerror(e));
    }
    fclose(f);
    buf[n] = 0;
    *text = buf;
    *len = n;
    return MP_OK;
}

mp_status mp__write_file(mp_ctx *ctx, const char *path, const char *data,
                        size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open for writing: %s",
                      path, strerror(errno));
    size_t n = fwrite(data, 1, len, f);
    int e = errno;
    int closed = fclose(f);
    if (closed != 0 && n == len)
        e = errno;
    if (n != len || closed != 0)
        return mp__err(ctx, MP_ERR_IO, "%s: write failed: %s", path,
                      strerror(e));
    return MP_OK;
}
