/* String values: one interned table per graph tree (see strval.h). */
#include "strval.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct mp__strtab {
    char *buf;              /* the strings' bytes, back to back */
    size_t used, cap;
    size_t *off;            /* per id: offset into buf */
    uint32_t *len;          /* per id: length */
    size_t n, cap_off, cap_len;
    uint32_t *slots;        /* open addressing: id + 1, 0 empty */
    size_t n_slots;         /* a power of two, > 2 n */
} mp__strtab;

static mp_graph *root_of(const mp_graph *g)
{
    /* a subgraph's table is its top graph's (one level: str_root is the
     * top graph itself) */
    return g->str_root ? g->str_root : (mp_graph *)g;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool same(const mp__strtab *t, size_t id, const char *s, size_t len)
{
    return t->len[id] == len && (len == 0 || memcmp(t->buf + t->off[id], s,
                                                    len) == 0);
}

static mp_status rehash(mp_ctx *ctx, mp__strtab *t, size_t n_slots)
{
    uint32_t *sl = mp__calloc(ctx, n_slots, sizeof *sl);
    if (!sl)
        return MP_ERR_NOMEM;
    for (size_t id = 0; id < t->n; id++) {
        size_t k = (size_t)hash_bytes(t->buf + t->off[id], t->len[id]) &
                   (n_slots - 1);
        while (sl[k])
            k = (k + 1) & (n_slots - 1);
        sl[k] = (uint32_t)id + 1;
    }
    mp__dealloc(ctx, t->slots);
    t->slots = sl;
    t->n_slots = n_slots;
    return MP_OK;
}

bool mp__str_find(const mp_graph *g, const char *s, size_t len, int64_t *id)
{
    const mp__strtab *t = root_of(g)->strtab;
    if (!t || !t->n_slots || (!s && len))
        return false;
    for (size_t k = (size_t)hash_bytes(s ? s : "", len) & (t->n_slots - 1);
         t->slots[k]; k = (k + 1) & (t->n_slots - 1))
        if (same(t, t->slots[k] - 1, s, len)) {
            *id = t->slots[k] - 1;
            return true;
        }
    return false;
}

mp_status mp__str_intern(mp_graph *g, const char *s, size_t len, int64_t *id)
{
    mp_graph *r = root_of(g);
    mp_ctx *ctx = r->ctx;
    *id = -1;
    if (!s && len)
        return MP_OK;
    if (!r->strtab) {
        r->strtab = mp__calloc(ctx, 1, sizeof *r->strtab);
        if (!r->strtab)
            return MP_ERR_NOMEM;
    }
    mp__strtab *t = r->strtab;
    uint64_t h = hash_bytes(s ? s : "", len);
    if (mp__str_find(g, s, len, id))
        return MP_OK;
    if (len > MP__STR_MAX_LEN || t->n >= MP__STR_MAX_COUNT ||
        t->used + len > MP__STR_MAX_BYTES)
        return MP_OK; /* not carried */
    mp_status st;
    /* s may lie in the table itself (a token of a stored string): keep
     * its offset across the buffer's growth */
    bool inside = s && t->buf && s >= t->buf && s < t->buf + t->used;
    size_t at = inside ? (size_t)(s - t->buf) : 0;
    if ((st = mp__grow(ctx, (void **)&t->buf, 1, t->used + len + 1, &t->cap)) ||
        (st = mp__grow(ctx, (void **)&t->off, sizeof *t->off, t->n + 1,
                      &t->cap_off)) ||
        (st = mp__grow(ctx, (void **)&t->len, sizeof *t->len, t->n + 1,
                      &t->cap_len)))
        return st;
    if ((t->n + 1) * 2 >= t->n_slots &&
        (st = rehash(ctx, t, t->n_slots ? t->n_slots * 2 : 64)))
        return st;
    if (inside)
        s = t->buf + at;
    if (len)
        memcpy(t->buf + t->used, s, len);
    t->off[t->n] = t->used;
    t->len[t->n] = (uint32_t)len;
    t->used += len;
    size_t k = (size_t)h & (t->n_slots - 1);
    while (t->slots[k])
        k = (k + 1) & (t->n_slots - 1);
    t->slots[k] = (uint32_t)t->n + 1;
    *id = (int64_t)t->n++;
    return MP_OK;
}

bool mp__str_get(const mp_graph *g, int64_t id, const char **s, size_t *len)
{
    const mp__strtab *t = root_of(g)->strtab;
    if (!t || id < 0 || (uint64_t)id >= t->n)
        return false;
    *s = t->buf + t->off[id];
    *len = t->len[id];
    return true;
}

mp_status mp__str_set_value(mp_graph *g, mp__tensor *t, const char *const *s,
                           const size_t *len, uint32_t n)
{
    if (n == 0 || n > MP__VALUE_MAX)
        return MP_OK;
    int64_t *ids = mp__alloc(g->ctx, (size_t)n * sizeof *ids);
    if (!ids)
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    bool ok = true;
    for (uint32_t i = 0; i < n && ok && !st; i++) {
        st = mp__str_intern(g, s[i], len[i], &ids[i]);
        ok = ids[i] >= 0;
    }
    if (!st && ok)
        st = mp__tensor_set_value(g->ctx, t, ids, n);
    mp__dealloc(g->ctx, ids);
    return st;
}

void mp__strtab_free(mp_graph *g)
{
    mp__strtab *t = g->strtab;
    if (!t)
        return;
    mp__dealloc(g->ctx, t->buf);
    mp__dealloc(g->ctx, t->off);
    mp__dealloc(g->ctx, t->len);
    mp__dealloc(g->ctx, t->slots);
    mp__dealloc(g->ctx, t);
    g->strtab = NULL;
}

/* ---- STRINGS attributes ---------------------------------------------------- */

mp_status mp__graph_set_attr_strings(mp_graph *g, uint32_t node,
                                    const char *name, const char *const *s,
                                    const size_t *len, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t total = 24, x;
    for (size_t i = 0; i < n; i++)
        if (!mp__mul_u64(len[i], 2, &x) || !mp__add_u64(total, x + 1, &total))
            return mp__err(g->ctx, MP_ERR_OVERFLOW, "attribute '%s': too "
                          "long", name);
    if (total > ((uint64_t)1 << 31))
        return mp__err(g->ctx, MP_ERR_UNSUPPORTED, "attribute '%s': %llu "
                      "bytes of strings", name, (unsigned long long)total);
    char *enc = mp__alloc(g->ctx, (size_t)total);
    char key[256];
    if (!enc)
        return MP_ERR_NOMEM;
    size_t w = (size_t)snprintf(enc, 24, "%zu:", n);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)s[i];
        for (size_t k = 0; k < len[i]; k++) {
            enc[w++] = hex[p[k] >> 4];
            enc[w++] = hex[p[k] & 15];
        }
        enc[w++] = ',';
    }
    enc[w] = '\0';
    snprintf(key, sizeof key, "%s.strings", name);
    mp_status st = mp_graph_set_attr_string(g, node, key, enc);
    mp__dealloc(g->ctx, enc);
    return st;
}

bool mp__attr_strings(const mp__node *nd, const char *name, size_t *n,
                     const char **cur)
{
    char key[256];
    snprintf(key, sizeof key, "%s.strings", name);
    const mp__attr *a = mp__node_attr(nd, key);
    if (!a || a->type != MP__ATTR_STRING || !a->v.s)
        return false;
    const char *p = a->v.s;
    size_t c = 0;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        if (c > (SIZE_MAX - 9) / 10)
            return false;
        c = c * 10 + (size_t)(*p++ - '0');
    }
    if (*p++ != ':')
        return false;
    *n = c;
    *cur = p;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

bool mp__attr_strings_next(const char **cur, char *buf, size_t cap,
                          size_t *len)
{
    const char *p = *cur;
    size_t k = 0;
    while (*p && *p != ',') {
        int hi = hexval(p[0]), lo = hi >= 0 ? hexval(p[1]) : -1;
        if (lo < 0 || k >= cap)
            return false;
        buf[k++] = (char)(hi << 4 | lo);
        p += 2;
    }
    if (*p != ',')
        return false;
    *cur = p + 1;
    *len = k;
    return true;
}
