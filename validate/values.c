/* values.c - a run's values from files, and the gradients a training step
 * computes (no GPU needed).
 *
 * `memplan validate --weights DIR --inputs DIR` reads the folder format
 * that --dump writes (mpv_dump_values, host.c): DIR/values.txt, one line
 * per tensor (kind, name, dtype, dims, byte offset, bytes; tab-separated),
 * and DIR/values.bin, the raw little-endian bytes at those offsets. The
 * weights buffer takes the lines of kind "weight", the graph inputs those
 * of kind "input", each by the tensor's name; dtype and bytes must be the
 * tensor's. A weights-buffer tensor that the folder does not hold keeps
 * the value the graph knows (a small constant), an optimizer state starts
 * at zero (torch.optim's first step); any other is an error naming it.
 *
 * The gradients: each optimizer step of a training graph reads its
 * parameter (input 0, in the weights buffer) and the parameter's gradient
 * (input 1, in the arena); mpv_grads_find lists those steps so that the
 * executor can copy each gradient out when its step runs. */
#include "validate.h"

#include "ops.h"
#include "sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* one line of values.txt */
typedef struct vline {
    char *kind, *name;
    mp_dtype dtype;
    uint64_t off, bytes;
} vline;

typedef struct vindex {
    mp_ctx *ctx;
    char *text;     /* values.txt, split in place */
    vline *lines;
    uint32_t n;
    char *txt, *bin; /* the two paths */
    uint64_t bin_bytes;
} vindex;

static void vindex_free(vindex *v)
{
    mp__dealloc(v->ctx, v->text);
    mp__dealloc(v->ctx, v->lines);
    mp__dealloc(v->ctx, v->txt);
    mp__dealloc(v->ctx, v->bin);
    memset(v, 0, sizeof *v);
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!*s)
        return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* Reads DIR/values.txt and the size of DIR/values.bin; every line's
 * range must lie in values.bin. what: the option ("--weights"). */
static mp_status vindex_open(mp_ctx *ctx, const char *dir, const char *what,
                             vindex *v)
{
    memset(v, 0, sizeof *v);
    v->ctx = ctx;
    size_t n = strlen(dir) + 16;
    v->txt = mp__alloc(ctx, n);
    v->bin = mp__alloc(ctx, n);
    if (!v->txt || !v->bin)
        return MP_ERR_NOMEM;
    snprintf(v->txt, n, "%s/values.txt", dir);
    snprintf(v->bin, n, "%s/values.bin", dir);
    size_t len = 0;
    mp_status st = mp__read_file(ctx, v->txt, &v->text, &len);
    if (st)
        return mp__err(ctx, st, "%s %s: %s", what, dir, mp_ctx_message(ctx));
    struct stat sb;
    if (stat(v->bin, &sb) != 0)
        return mp__err(ctx, MP_ERR_IO, "%s %s: %s: %s", what, dir, v->bin,
                       strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mp__err(ctx, MP_ERR_IO, "%s %s: %s: not a regular file",
                       what, dir, v->bin);
    v->bin_bytes = (uint64_t)sb.st_size;
    uint32_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += v->text[i] == '\n';
    v->lines = mp__alloc(ctx, (size_t)cap * sizeof *v->lines);
    if (!v->lines)
        return MP_ERR_NOMEM;
    char *p = v->text;
    for (uint32_t ln = 1; *p; ln++) {
        char *end = strchr(p, '\n');
        if (end)
            *end = 0;
        char *f[6];
        int nf = 0;
        for (char *q = p; nf < 6;) {
            f[nf++] = q;
            char *t = strchr(q, '\t');
            if (!t)
                break;
            *t = 0;
            q = t + 1;
        }
        if (*p) { /* (an empty line is skipped) */
            vline *l = &v->lines[v->n];
            uint64_t stop;
            if (nf != 6 || mp_dtype_parse(f[2], &l->dtype) != MP_OK ||
                parse_u64(f[4], &l->off) || parse_u64(f[5], &l->bytes) ||
                !mp__add_u64(l->off, l->bytes, &stop) || stop > v->bin_bytes)
                return mp__err(ctx, MP_ERR_PARSE,
                               "%s: %s: line %u: want kind, name, dtype, dims, "
                               "offset and bytes, tab-separated, the range "
                               "inside values.bin (%llu bytes)",
                               what, v->txt, ln,
                               (unsigned long long)v->bin_bytes);
            l->kind = f[0];
            l->name = f[1];
            v->n++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return MP_OK;
}

static const vline *vindex_find(const vindex *v, const char *kind,
                                const char *name)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (strcmp(v->lines[i].kind, kind) == 0 &&
            strcmp(v->lines[i].name, name) == 0)
            return &v->lines[i];
    return NULL;
}

/* The line of tensor t (kind `kind`), checked: NULL with *st set when
 * missing (st MP_OK: missing and allowed) or of another dtype or size. */
static const vline *vindex_get(const vindex *v, const char *what,
                               const char *kind, const mp__tensor *t,
                               int required, mp_status *st)
{
    *st = MP_OK;
    const char *name = t->name ? t->name : "";
    const vline *l = vindex_find(v, kind, name);
    if (!l) {
        if (required)
            *st = mp__err(v->ctx, MP_ERR_NOT_FOUND,
                          "%s: tensor '%s' (%s, %llu bytes) is not in %s "
                          "(no line of kind %s with that name)",
                          what, name, mp_dtype_name((mp_dtype)t->dtype),
                          (unsigned long long)t->bytes, v->txt, kind);
        return NULL;
    }
    if (l->dtype != (mp_dtype)t->dtype || l->bytes != t->bytes) {
        *st = mp__err(v->ctx, MP_ERR_SHAPE,
                      "%s: tensor '%s' in %s is %s of %llu bytes; the model "
                      "has %s of %llu bytes",
                      what, name, v->txt, mp_dtype_name(l->dtype),
                      (unsigned long long)l->bytes,
                      mp_dtype_name((mp_dtype)t->dtype),
                      (unsigned long long)t->bytes);
        return NULL;
    }
    return l;
}

static mp_status vindex_read(const vindex *v, FILE **f, const vline *l,
                             void *dst)
{
    if (!*f && !(*f = fopen(v->bin, "rb")))
        return mp__err(v->ctx, MP_ERR_IO, "%s: cannot open: %s", v->bin,
                       strerror(errno));
    if (fseeko(*f, (off_t)l->off, SEEK_SET) != 0 ||
        fread(dst, 1, l->bytes, *f) != l->bytes)
        return mp__err(v->ctx, MP_ERR_IO, "%s: cannot read %llu bytes at "
                       "%llu (tensor '%s')", v->bin,
                       (unsigned long long)l->bytes,
                       (unsigned long long)l->off, l->name);
    return MP_OK;
}

/* the graph knows the tensor's whole value (the random fill uses it) */
static int known_value(const mp__tensor *t)
{
    if (!t->value || t->rank < 0)
        return 0;
    uint64_t n = 1;
    for (int k = 0; k < t->rank; k++)
        n *= (uint64_t)(t->dims[k] > 0 ? t->dims[k] : 0);
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    return bits && t->n_value == n && n * bits / 8 == t->bytes;
}

static int opt_state(const mp__tensor *t)
{
    return t->kind == MP_KIND_OPTIMIZER_STATE ||
           t->declared_kind == MP_KIND_OPTIMIZER_STATE;
}

mp_status mpv_weights_read(const mpv_program *p, const char *dir, void *buf,
                           uint64_t seed)
{
    const mp_graph *g = p->graph;
    vindex v;
    mp_status st = vindex_open(p->ctx, dir, "--weights", &v);
    FILE *f = NULL;
    if (!st && buf)
        mpv_weights_init(p, buf, seed); /* known values */
    for (uint32_t t = 0; t < g->n_tensors && !st; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (p->woff[t] == UINT64_MAX || !tt->bytes)
            continue;
        /* a folded constant the setup computes need not be given */
        int fallback = known_value(tt) || opt_state(tt) ||
                       (tt->producer != MP_NONE &&
                        p->nodes[tt->producer].setup);
        const vline *l = vindex_get(&v, "--weights", "weight", tt, !fallback,
                                    &st);
        unsigned char *dst = buf ? (unsigned char *)buf + p->woff[t] : NULL;
        if (l && dst)
            st = vindex_read(&v, &f, l, dst);
        else if (!l && !st && dst && opt_state(tt))
            memset(dst, 0, tt->bytes);
    }
    if (f)
        fclose(f);
    vindex_free(&v);
    return st;
}

mp_status mpv_inputs_read(const mpv_program *p, const char *dir,
                          void *const *bufs)
{
    const mp_graph *g = p->graph;
    vindex v;
    mp_status st = vindex_open(p->ctx, dir, "--inputs", &v);
    FILE *f = NULL;
    for (uint32_t i = 0; i < p->n_inputs && !st; i++) {
        const vline *l = vindex_get(&v, "--inputs", "input",
                                    &g->tensors[p->inputs[i]], 1, &st);
        if (l && bufs)
            st = vindex_read(&v, &f, l, bufs[i]);
    }
    if (f)
        fclose(f);
    vindex_free(&v);
    return st;
}

/* ---- the gradients of a training step ------------------------------------ */

uint32_t mpv_grads_find(const mpv_program *p, mpv_grad *out)
{
    const mp_graph *g = p->graph;
    uint32_t n = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *ps = &p->steps[s];
        if (ps->kind != MP_STEP_COMPUTE || ps->index >= g->n_nodes)
            continue;
        const mp__node *nd = &g->nodes[ps->index];
        if (nd->phase != MP_PHASE_OPTIMIZER || nd->n_in < 2 ||
            ps->n_refs < 2 || nd->inputs[0] == MP_NONE ||
            nd->inputs[1] == MP_NONE)
            continue;
        uint32_t w = nd->inputs[0], gr = nd->inputs[1];
        const mpv_ref *rw = &p->refs[ps->refs], *rg = &p->refs[ps->refs + 1];
        /* the parameter in the weights buffer, its gradient a whole
         * tensor of the same elements in the arena (or a fused value) */
        if (rw->space != MPV_SPACE_WEIGHTS ||
            (rg->space != MPV_SPACE_ARENA && rg->space != MPV_SPACE_SCRATCH) ||
            rg->bytes != g->tensors[gr].bytes || !rg->bytes)
            continue;
        if (out)
            out[n] = (mpv_grad){s, w, gr, rg->bytes};
        n++;
    }
    return n;
}
