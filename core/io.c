/* Whole-file reading and writing with the context allocator; every
 * frontend and writer goes through these. Outputs are written atomically
 * (mp__wfile): to a temporary file beside the target, flushed to disk and
 * renamed over it, so that a failed or killed run never leaves a cut
 * file where a good one was. */
/* realpath (XSI) */
#define _XOPEN_SOURCE 700

#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

mp_status mp__check_regular(mp_ctx *ctx, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
    if (S_ISREG(sb.st_mode))
        return MP_OK;
    return mp__err(ctx, MP_ERR_IO, "%s: %s, not a regular file (give the "
                  "path of a file)", path,
                  S_ISDIR(sb.st_mode)    ? "is a directory"
                  : S_ISFIFO(sb.st_mode) ? "is a pipe"
                  : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)
                      ? "is a device"
                      : "is a socket or special file");
}

mp_status mp__read_file(mp_ctx *ctx, const char *path, char **text,
                       size_t *len)
{
    *text = NULL;
    *len = 0;
    /* a regular file only, checked before it is opened (opening a pipe
     * would wait for a writer; a directory opens, but its "size" is no
     * size and reading it fails) */
    mp_status st = mp__check_regular(ctx, path);
    if (st)
        return st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
    /* and what was opened is one (the path may have changed since) */
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return mp__check_regular(ctx, path);
    }
    size_t cap = 0, n = 0;
    char *buf = NULL;
    if (sb.st_size > 0 && (uint64_t)sb.st_size < SIZE_MAX)
        cap = (size_t)sb.st_size + 1;
    for (;;) {
        if (buf && n + 1 >= cap) {
            /* full at the size fstat gave: grow only if there is more */
            int c = fgetc(f);
            if (c == EOF)
                break;
            if (ungetc(c, f) == EOF)
                break;
        }
        if (!buf || n + 1 >= cap) {
            size_t ncap = !buf && cap ? cap : (cap ? cap * 2 : 65536);
            if (buf && cap > SIZE_MAX / 2) {
                mp__dealloc(ctx, buf);
                fclose(f);
                return mp__err(ctx, MP_ERR_IO, "%s: file too large", path);
            }
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

/* ---- atomic outputs ------------------------------------------------------ */
static atomic_ulong tmp_counter;

/* The folder of path ("." for none) into a fresh string. */
static char *dir_of(mp_ctx *ctx, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return mp__strdup(ctx, ".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = mp__alloc(ctx, n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = 0;
    }
    return d;
}

static void wfile_free(mp__wfile *w)
{
    mp__dealloc(w->ctx, w->dest);
    mp__dealloc(w->ctx, w->tmp);
    w->dest = w->tmp = NULL;
    w->f = NULL;
}

mp_status mp__wfile_open(mp_ctx *ctx, const char *path, mp__wfile *w)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->path = path;
    if (!path || !*path)
        return mp__err(ctx, MP_ERR_IO, "cannot write to an empty path");
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return mp__err(ctx, MP_ERR_IO, "%s: cannot write: is a directory",
                      path);
    if (exists && !S_ISREG(sb.st_mode)) {
        /* a device or a pipe: nothing to replace, written as it is */
        w->f = fopen(path, "wb");
        if (!w->f)
            return mp__err(ctx, MP_ERR_IO, "%s: cannot open for writing: %s",
                          path, strerror(errno));
        return MP_OK;
    }
    /* a symlink: the file it names is the one replaced */
    struct stat lb;
    if (lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode) && exists) {
        char *real = realpath(path, NULL);
        if (real) {
            w->dest = mp__strdup(ctx, real);
            free(real);
            if (!w->dest)
                return MP_ERR_NOMEM;
        }
    }
    if (!w->dest && !(w->dest = mp__strdup(ctx, path)))
        return MP_ERR_NOMEM;
    char *dir = dir_of(ctx, w->dest);
    if (!dir) {
        wfile_free(w);
        return MP_ERR_NOMEM;
    }
    const char *base = strrchr(w->dest, '/');
    base = base ? base + 1 : w->dest;
    size_t cap = strlen(dir) + strlen(base) + 64;
    w->tmp = mp__alloc(ctx, cap);
    if (!w->tmp) {
        mp__dealloc(ctx, dir);
        wfile_free(w);
        return MP_ERR_NOMEM;
    }
    mode_t mode = exists ? (sb.st_mode & 07777) : 0666;
    int fd = -1, err = 0;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        unsigned long k = atomic_fetch_add(&tmp_counter, 1);
        snprintf(w->tmp, cap, "%s/.%s.tmp-%ld-%lu", dir, base,
                 (long)getpid(), k);
        fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        err = errno;
        if (fd < 0 && err != EEXIST)
            break;
    }
    if (fd < 0) {
        mp_status st = mp__err(ctx, MP_ERR_IO,
                               "%s: cannot write: %s (the file is written "
                               "to a temporary file in %s, then renamed)",
                               path, strerror(err), dir);
        mp__dealloc(ctx, dir);
        wfile_free(w);
        return st;
    }
    mp__dealloc(ctx, dir);
    /* the target's permissions (open applied the umask to new files) */
    if (exists)
        (void)fchmod(fd, mode);
    w->f = fdopen(fd, "wb");
    if (!w->f) {
        err = errno;
        close(fd);
        unlink(w->tmp);
        wfile_free(w);
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open for writing: %s",
                      path, strerror(err));
    }
    return MP_OK;
}

void mp__wfile_abort(mp__wfile *w)
{
    if (!w->ctx)
        return; /* never opened (zeroed) */
    if (w->f)
        fclose(w->f);
    if (w->tmp)
        unlink(w->tmp);
    wfile_free(w);
}

/* fsync of the folder holding path, so that the rename is on disk too
 * (best effort: some file systems refuse it; a path too long for the
 * buffer is left to the file system). */
static void sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return;
    if (n)
        memcpy(dir, path, n);
    else
        dir[n++] = '.';
    dir[n] = 0;
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

mp_status mp__wfile_commit(mp__wfile *w, bool failed)
{
    if (!w->f) {
        wfile_free(w);
        return mp__err(w->ctx, MP_ERR_IO, "%s: write failed",
                      w->path ? w->path : "output");
    }
    int err = failed ? errno : 0;
    if (!failed && (fflush(w->f) != 0 || ferror(w->f)))
        err = errno ? errno : EIO;
    if (!failed && !err && w->tmp && fsync(fileno(w->f)) != 0)
        err = errno;
    if (fclose(w->f) != 0 && !err)
        err = errno ? errno : EIO;
    w->f = NULL;
    if (!failed && !err && w->tmp && rename(w->tmp, w->dest) != 0)
        err = errno;
    if (failed || err) {
        if (w->tmp)
            unlink(w->tmp);
        wfile_free(w);
        return mp__err(w->ctx, MP_ERR_IO, "%s: write failed%s%s (nothing "
                      "written there)", w->path, err ? ": " : "",
                      err ? strerror(err) : "");
    }
    if (w->tmp)
        sync_dir(w->dest);
    wfile_free(w);
    return MP_OK;
}

mp_status mp__write_file(mp_ctx *ctx, const char *path, const char *data,
                        size_t len)
{
    mp__wfile w;
    mp_status st = mp__wfile_open(ctx, path, &w);
    if (st)
        return st;
    bool bad = fwrite(data, 1, len, w.f) != len;
    return mp__wfile_commit(&w, bad);
}
