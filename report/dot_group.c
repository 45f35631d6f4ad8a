/* dot_group.c - the boxes and clusters of a plan's DOT (dot_group.h).
 *
 * Module hierarchy from node names, as TensorBoard's graph view groups by
 * name scope: a name holding '/' is split on it (runs of '/' count as one,
 * a leading one is skipped); its last component is the op, the others its
 * modules: "/layer1/layer1.0/conv1/Conv" is in conv1 < layer1.0 < layer1.
 * A name without '/' is split on '.' (layer1.0.conv1) unless its last part
 * is a number (p2o.Conv.3); Conv_12 or n53 carry no hierarchy.
 *
 * Acyclic by construction: the drawn nodes are put in a topological order
 * that keeps each module's nodes together where the dependencies allow
 * (Kahn's algorithm, preferring a ready node of the module just drawn,
 * else the ready node first in the graph), and a box is a run of
 * consecutive nodes of that order. An edge between two boxes then always
 * goes forward, so the boxes cannot form a cycle; a module whose nodes
 * cannot be consecutive is drawn as parts ("layer1 (2/3)"). */
#include "dot_group.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 64
/* The most ranks the edges between boxes may cross in all (an estimate
 * from the boxes' order): dot lays a graph out in a few seconds below. */
#define MAX_SPAN 1000u

/* The separator of a node's name components: '/' when the name holds
 * one; else '.', unless the name ends in ".OP.N" with OP the node's op (an
 * exporter's counter: p2o.Conv.3, not layer1.0.downsample.0); else 0, no
 * hierarchy. */
char mp__dot_name_sep(const mp__node *nd)
{
    const char *name = nd->name;
    if (!name)
        return 0;
    if (strchr(name, '/'))
        return '/';
    const char *dot = strrchr(name, '.');
    if (!dot)
        return 0;
    size_t lo = strlen(nd->op ? nd->op : "");
    int number = dot[1] != 0;
    for (const char *q = dot + 1; *q; q++)
        number &= *q >= '0' && *q <= '9';
    if (number && lo && (size_t)(dot - name) >= lo &&
        strncmp(dot - lo, nd->op, lo) == 0 &&
        (dot - lo == name || dot[-(ptrdiff_t)lo - 1] == '.'))
        return 0;
    return '.';
}

/* Offset of the end of the first `level` components of a name (or of its
 * start, level 0; name_sep: runs of the separator count as one, a leading
 * one is skipped); *levels (optional) gets its module depth, the number
 * of components less the op's: 0 for a name without hierarchy. */
static uint32_t name_prefix(const mp__node *nd, uint32_t level,
                            uint32_t *start, uint32_t *levels)
{
    const char *name = nd->name;
    uint32_t i = 0, s0, n = 0, end = 0;
    char sep = mp__dot_name_sep(nd);
    if (!sep) {
        if (start)
            *start = 0;
        if (levels)
            *levels = 0;
        return 0;
    }
    while (name[i] == sep)
        i++;
    s0 = i;
    end = s0;
    while (name[i]) {
        while (name[i] && name[i] != sep)
            i++;
        n++;
        if (n == level)
            end = i;
        while (name[i] == sep)
            i++;
    }
    if (start)
        *start = s0;
    if (levels)
        *levels = n > 0 ? (n - 1 < MAX_LEVELS ? n - 1 : MAX_LEVELS) : 0;
    return level == 0 ? s0 : end;
}

/* Keys: "<phase digit><prefix>" strings, found through a name map. */
typedef struct keyset {
    char **s;
    size_t n, cap;
    mp__name_map map;
} keyset;

static const char *keyset_name(const void *owner, uint32_t idx)
{
    return ((const keyset *)owner)->s[idx];
}

/* Index of (phase, bytes) in ks, added when new; MP_NONE: out of memory. */
static uint32_t keyset_index(mp_ctx *ctx, keyset *ks, uint8_t phase,
                             const char *bytes, size_t len)
{
    char tmp[512];
    if (len > sizeof tmp - 2)
        len = sizeof tmp - 2;
    tmp[0] = (char)('0' + (phase % 10));
    memcpy(tmp + 1, bytes, len);
    tmp[len + 1] = 0;
    uint32_t k = mp__name_map_find(&ks->map, ks, keyset_name, tmp);
    if (k != MP_NONE)
        return k;
    if (ks->n >= UINT32_MAX - 1 ||
        mp__grow(ctx, (void **)&ks->s, sizeof *ks->s, ks->n + 1, &ks->cap) ||
        !(ks->s[ks->n] = mp__strdup(ctx, tmp)))
        return MP_NONE;
    if (mp__name_map_insert(ctx, &ks->map, ks, keyset_name, tmp,
                           (uint32_t)ks->n, NULL)) {
        mp__dealloc(ctx, ks->s[ks->n]);
        return MP_NONE;
    }
    return (uint32_t)ks->n++;
}

static void keyset_free(mp_ctx *ctx, keyset *ks)
{
    for (size_t i = 0; i < ks->n; i++)
        mp__dealloc(ctx, ks->s[i]);
    mp__dealloc(ctx, ks->s);
    mp__name_map_free(ctx, &ks->map);
    memset(ks, 0, sizeof *ks);
}

/* The working state of one build. */
typedef struct grouper {
    const mp_graph *g;
    mp_ctx *ctx;
    const uint8_t *drawn;
    const mp_dot_options *o;
    const uint8_t *fused;
    uint32_t nn;
    uint32_t *levels;     /* node -> module depth */
    uint32_t *key;        /* node -> key at the depth tried, MP_NONE: own */
    uint32_t *order;      /* all nodes, in the grouping order */
    uint32_t *indeg, *heap, *khead, *knext;
    uint8_t *done;
    keyset ks;
    uint32_t depth_used;  /* gr->depth, kept across rebuilds */
} grouper;

/* A node becomes ready: onto the heap, and onto its key's stack. */
static void make_ready(grouper *w, uint32_t *nh, uint32_t v)
{
    mp__heap_push(w->heap, nh, v);
    uint32_t k = w->key[v];
    if (k != MP_NONE) {
        w->knext[v] = w->khead[k];
        w->khead[k] = v;
    }
}

/* w->order: a topological order preferring the key of the node before.
 * 1 when every node was ordered (0: a cycle; the caller keeps g->topo). */
static int grouping_order(grouper *w)
{
    const mp_graph *g = w->g;
    uint32_t nh = 0, n_done = 0, cur = MP_NONE;
    memset(w->indeg, 0, w->nn * sizeof *w->indeg);
    memset(w->done, 0, w->nn);
    for (uint32_t i = 0; i < w->ks.n; i++)
        w->khead[i] = MP_NONE;
    for (uint32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer != MP_NONE)
            for (uint32_t c = 0; c < g->tensors[t].n_cons; c++)
                w->indeg[g->cons[g->tensors[t].cons_begin + c]]++;
    for (uint32_t v = 0; v < w->nn; v++)
        if (w->indeg[v] == 0)
            make_ready(w, &nh, v);
    while (n_done < w->nn) {
        uint32_t v = MP_NONE;
        while (cur != MP_NONE && w->khead[cur] != MP_NONE && v == MP_NONE) {
            uint32_t c = w->khead[cur];
            w->khead[cur] = w->knext[c];
            if (!w->done[c])
                v = c;
        }
        while (v == MP_NONE && nh > 0) {
            uint32_t c = mp__heap_pop(w->heap, &nh);
            if (!w->done[c])
                v = c;
        }
        if (v == MP_NONE)
            return 0;
        w->done[v] = 1;
        w->order[n_done++] = v;
        if (w->drawn[v])
            cur = w->key[v];
        const mp__node *nd = &g->nodes[v];
        for (uint32_t o = 0; o < nd->n_out; o++) {
            uint32_t t = nd->outputs[o];
            if (t == MP_NONE)
                continue;
            for (uint32_t c = 0; c < g->tensors[t].n_cons; c++) {
                uint32_t u = g->cons[g->tensors[t].cons_begin + c];
                if (--w->indeg[u] == 0)
                    make_ready(w, &nh, u);
            }
        }
    }
    return 1;
}

/* Keys of the nodes at module depth `depth` (0: every node its own box;
 * prefixes: o->collapse_prefix). MP_ERR_NOMEM. */
static mp_status assign_keys(grouper *w, uint32_t depth, int prefixes)
{
    const mp_graph *g = w->g;
    keyset_free(w->ctx, &w->ks);
    for (uint32_t n = 0; n < w->nn; n++) {
        const mp__node *nd = &g->nodes[n];
        const char *name = nd->name ? nd->name : "";
        w->key[n] = MP_NONE;
        const char *kb = NULL;
        size_t len = 0;
        if (prefixes) {
            const char *q = w->o->collapse_prefix;
            while (*q) {
                const char *e = strchr(q, ',');
                size_t l = e ? (size_t)(e - q) : strlen(q);
                if (l && strncmp(name, q, l) == 0) {
                    kb = q;
                    len = l;
                    break;
                }
                q += l + (e != NULL);
            }
        } else if (depth > 0 && w->levels[n] >= depth) {
            uint32_t s0, end = name_prefix(nd, depth, &s0, NULL);
            kb = name + s0;
            len = end - s0;
        }
        if (!kb || !w->drawn[n])
            continue;
        if ((w->key[n] = keyset_index(w->ctx, &w->ks, nd->phase, kb, len)) ==
            MP_NONE)
            return MP_ERR_NOMEM;
    }
    if (w->ks.n) {
        mp__dealloc(w->ctx, w->khead);
        if (!(w->khead = mp__alloc(w->ctx, w->ks.n * sizeof *w->khead)))
            return MP_ERR_NOMEM;
    }
    return MP_OK;
}

/* Runs of one key among the drawn nodes of the order: their number. */
static uint32_t count_runs(const grouper *w)
{
    uint32_t runs = 0, prev = MP_NONE;
    int any = 0;
    for (uint32_t i = 0; i < w->nn; i++) {
        uint32_t v = w->order[i];
        if (!w->drawn[v])
            continue;
        if (!any || w->key[v] == MP_NONE || w->key[v] != prev)
            runs++;
        prev = w->key[v];
        any = 1;
    }
    return runs;
}

/* Keys and order at `depth`; *runs gets the number of boxes. */
static mp_status try_depth(grouper *w, uint32_t depth, int prefixes,
                           uint32_t *runs)
{
    mp_status st = assign_keys(w, depth, prefixes);
    if (st)
        return st;
    if (!grouping_order(w))
        for (uint32_t i = 0; i < w->nn; i++)
            w->order[i] = w->g->topo[i];
    *runs = count_runs(w);
    return MP_OK;
}

static uint64_t node_bytes(const grouper *w, uint32_t v)
{
    const mp__node *nd = &w->g->nodes[v];
    uint64_t b = 0;
    for (uint32_t o = 0; o < nd->n_out; o++) {
        uint32_t t = nd->outputs[o];
        if (t == MP_NONE)
            continue;
        const mp__tensor *x = &w->g->tensors[t];
        if (x->alias_of == MP_NONE && !(w->fused && w->fused[x->root]) &&
            !mp__kind_persistent(x->kind))
            b = b > UINT64_MAX - x->bytes ? UINT64_MAX : b + x->bytes;
    }
    return b;
}

/* Cluster of (phase, prefix of `level` components of node v's name),
 * created with its parents when new; MP_NONE for level 0. */
static mp_status cluster_of(grouper *w, mp__dot_groups *gr, keyset *cks,
                            size_t *cap, uint32_t v, uint32_t level,
                            uint32_t *out)
{
    const mp__node *nd = &w->g->nodes[v];
    uint32_t parent = MP_NONE;
    *out = MP_NONE;
    for (uint32_t l = 1; l <= level; l++) {
        uint32_t s0, end = name_prefix(nd, l, &s0, NULL);
        uint32_t before = (uint32_t)cks->n;
        uint32_t k = keyset_index(w->ctx, cks, nd->phase, nd->name + s0,
                                  end - s0);
        if (k == MP_NONE)
            return MP_ERR_NOMEM;
        if (k == before) {   /* new */
            if (mp__grow(w->ctx, (void **)&gr->cl, sizeof *gr->cl, k + 1, cap))
                return MP_ERR_NOMEM;
            uint32_t lab = l > 1 ? name_prefix(nd, l - 1, NULL, NULL)
                                 : s0;
            while (nd->name[lab] && nd->name[lab] == mp__dot_name_sep(nd))
                lab++;
            gr->cl[k] = (mp__dot_cluster){parent, v, s0, end, lab,
                                          nd->phase};
            gr->n_cl = k + 1;
        }
        parent = k;
    }
    *out = parent;
    return MP_OK;
}

/* Depth of cluster c (0: the root). */
static uint32_t cl_depth(const mp__dot_groups *gr, uint32_t c)
{
    uint32_t d = 0;
    for (; c != MP_NONE; c = gr->cl[c].parent)
        d++;
    return d;
}

/* The innermost cluster holding both a and b. */
static uint32_t cl_common(const mp__dot_groups *gr, uint32_t a, uint32_t b)
{
    uint32_t da = cl_depth(gr, a), db = cl_depth(gr, b);
    for (; da > db; da--)
        a = gr->cl[a].parent;
    for (; db > da; db--)
        b = gr->cl[b].parent;
    while (a != b) {
        a = gr->cl[a].parent;
        b = gr->cl[b].parent;
    }
    return a;
}

/* Items: the runs of the order; chunk > 0 merges consecutive runs into
 * boxes of about `chunk` nodes, cut where the fewest tensors cross. */
static mp_status make_items(grouper *w, mp__dot_groups *gr, uint32_t chunk)
{
    mp_ctx *ctx = w->ctx;
    const mp_graph *g = w->g;
    uint32_t m = 0;
    gr->order = mp__alloc(ctx, (w->nn ? w->nn : 1) * sizeof *gr->order);
    uint32_t *pos = mp__alloc(ctx, (w->nn ? w->nn : 1) * sizeof *pos);
    uint32_t *runs = mp__alloc(ctx, (w->nn + 1) * sizeof *runs);
    int32_t *cross = mp__calloc(ctx, w->nn + 2, sizeof *cross);
    keyset cks;
    memset(&cks, 0, sizeof cks);
    size_t ccap = 0;
    mp_status st = MP_OK;
    if (!gr->order || !pos || !runs || !cross) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    /* drawn nodes in order; runs[r] = position where run r starts */
    uint32_t nr = 0;
    for (uint32_t i = 0; i < w->nn; i++) {
        uint32_t v = w->order[i];
        pos[v] = MP_NONE;
        if (!w->drawn[v])
            continue;
        if (m == 0 || w->key[v] == MP_NONE ||
            w->key[v] != w->key[gr->order[m - 1]])
            runs[nr++] = m;
        pos[v] = m;
        gr->order[m++] = v;
    }
    runs[nr] = m;
    gr->n_order = m;
    /* cross[i]: tensors written before position i and read at or after */
    for (uint32_t t = 0; chunk && t < g->n_tensors; t++) {
        uint32_t p = g->tensors[t].producer, q = 0;
        if (p == MP_NONE || pos[p] == MP_NONE)
            continue;
        for (uint32_t c = 0; c < g->tensors[t].n_cons; c++) {
            uint32_t u = g->cons[g->tensors[t].cons_begin + c];
            if (pos[u] != MP_NONE && pos[u] > q)
                q = pos[u];
        }
        if (q > pos[p]) {
            cross[pos[p] + 1]++;
            cross[q + 1]--;
        }
    }
    for (uint32_t i = 1; chunk && i <= m; i++)
        cross[i] += cross[i - 1];
    /* items */
    gr->items = mp__calloc(ctx, nr ? nr : 1, sizeof *gr->items);
    gr->item_of = mp__alloc(ctx, (w->nn ? w->nn : 1) * sizeof *gr->item_of);
    if (!gr->items || !gr->item_of) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (uint32_t v = 0; v < w->nn; v++)
        gr->item_of[v] = MP_NONE;
    for (uint32_t r = 0; r < nr;) {
        uint32_t r2 = r + 1;   /* this item: runs [r, r2) */
        if (chunk) {
            /* the cut between chunk/2 and 3*chunk/2 nodes that the fewest
             * tensors cross; the rest when it fits */
            uint32_t lo = chunk / 2 ? chunk / 2 : 1, hi = chunk + chunk / 2;
            uint32_t best = MP_NONE;
            int32_t best_cross = 0;
            for (uint32_t j = r + 1; j <= nr; j++) {
                uint32_t ops = runs[j] - runs[r];
                if (j == nr && ops <= hi) {
                    best = nr;
                    break;
                }
                if (ops > hi) {
                    if (best == MP_NONE)
                        best = j - 1 > r ? j - 1 : j;
                    break;
                }
                if (j < nr && ops >= lo &&
                    (best == MP_NONE || cross[runs[j]] < best_cross)) {
                    best = j;
                    best_cross = cross[runs[j]];
                }
            }
            r2 = best == MP_NONE ? nr : best;
        }
        mp__dot_item *it = &gr->items[gr->n_items];
        it->first = runs[r];
        it->last = runs[r2] - 1;
        it->n_ops = runs[r2] - runs[r];
        uint32_t v0 = gr->order[it->first];
        it->key = r2 == r + 1 ? w->key[v0] : MP_NONE;
        it->part = it->parts = 1;
        /* the innermost cluster holding its nodes: a node of a module in
         * the module's parents, any other in its own modules */
        for (uint32_t i = it->first; i <= it->last; i++) {
            uint32_t v = gr->order[i], c, level = w->levels[v];
            if (w->key[v] != MP_NONE && gr->depth && level >= gr->depth)
                level = gr->depth - 1;
            gr->item_of[v] = gr->n_items;
            it->bytes += node_bytes(w, v);
            if ((st = cluster_of(w, gr, &cks, &ccap, v, level, &c)))
                goto out;
            it->cluster = i > it->first ? cl_common(gr, it->cluster, c) : c;
        }
        gr->n_boxes += it->n_ops > 1;
        gr->n_items++;
        r = r2;
    }
    /* parts of a module split by the order */
    uint32_t *seen = mp__calloc(ctx, w->ks.n ? w->ks.n : 1, sizeof *seen);
    if (!seen) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < gr->n_items; i++)
        if (gr->items[i].key != MP_NONE)
            gr->items[i].part = ++seen[gr->items[i].key];
    for (uint32_t i = 0; i < gr->n_items; i++)
        if (gr->items[i].key != MP_NONE)
            gr->items[i].parts = seen[gr->items[i].key];
    mp__dealloc(ctx, seen);
out:
    keyset_free(ctx, &cks);
    mp__dealloc(ctx, pos);
    mp__dealloc(ctx, runs);
    mp__dealloc(ctx, cross);
    return st;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ranks the distinct edges between items cross when each item is
 * ranked by its longest path from the top (graph inputs at rank 0): dot's
 * ranking makes them no longer, so this bounds its virtual nodes. */
static mp_status edge_span(const grouper *w, const mp__dot_groups *gr,
                           uint64_t *span)
{
    const mp_graph *g = w->g;
    size_t n = 0, cap = 0;
    uint64_t *pairs = NULL;
    uint32_t ni = gr->n_items;
    uint32_t *rank = mp__calloc(w->ctx, ni ? ni : 1, sizeof *rank);
    *span = 0;
    if (!rank)
        return MP_ERR_NOMEM;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        uint32_t a = x->producer == MP_NONE ? MP_NONE
                                            : gr->item_of[x->producer];
        if (x->producer != MP_NONE && a == MP_NONE)
            continue;   /* not drawn */
        if (a == MP_NONE && mp__kind_persistent(x->kind))
            continue;   /* weights: hidden */
        for (uint32_t c = 0; c < x->n_cons; c++) {
            uint32_t b = gr->item_of[g->cons[x->cons_begin + c]];
            if (b == MP_NONE || a == b)
                continue;
            if (mp__grow(w->ctx, (void **)&pairs, sizeof *pairs, n + 1,
                         &cap)) {
                mp__dealloc(w->ctx, pairs);
                mp__dealloc(w->ctx, rank);
                return MP_ERR_NOMEM;
            }
            /* by reader, then source (an input: ni + its tensor) */
            pairs[n++] = (uint64_t)b << 32 |
                         (a == MP_NONE ? (uint64_t)ni + t : a);
        }
    }
    if (n)
        qsort(pairs, n, sizeof *pairs, cmp_u64);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            uint32_t b = (uint32_t)(pairs[i] >> 32);
            uint64_t a = pairs[i] & 0xffffffffu;
            uint32_t from = a < ni ? rank[a] : 0;
            if (pass == 0 && rank[b] < from + 1)
                rank[b] = from + 1;
            else if (pass == 1 && (i == 0 || pairs[i] != pairs[i - 1]))
                *span += rank[b] - from;
        }
    mp__dealloc(w->ctx, pairs);
    mp__dealloc(w->ctx, rank);
    return MP_OK;
}

mp_status mp__dot_groups_build(const mp_plan *p, const uint8_t *drawn,
                              const mp_dot_options *o, mp__dot_groups *gr)
{
    const mp_graph *g = p->graph;
    mp_ctx *ctx = p->ctx;
    grouper w;
    memset(&w, 0, sizeof w);
    memset(gr, 0, sizeof *gr);
    w.g = g;
    w.ctx = ctx;
    w.drawn = drawn;
    w.o = o;
    w.fused = p->fused;
    w.nn = g->n_nodes;
    size_t nn = w.nn ? w.nn : 1;
    w.levels = mp__alloc(ctx, nn * sizeof *w.levels);
    w.key = mp__alloc(ctx, nn * sizeof *w.key);
    w.order = mp__alloc(ctx, nn * sizeof *w.order);
    w.indeg = mp__alloc(ctx, nn * sizeof *w.indeg);
    w.heap = mp__alloc(ctx, nn * sizeof *w.heap);
    w.knext = mp__alloc(ctx, nn * sizeof *w.knext);
    w.done = mp__alloc(ctx, nn);
    mp_status st = MP_OK;
    if (!w.levels || !w.key || !w.order || !w.indeg || !w.heap || !w.knext ||
        !w.done) {
        st = MP_ERR_NOMEM;
        goto out;
    }
    uint32_t n_drawn = 0, max_level = 0, runs = 0, chunk = 0;
    for (uint32_t v = 0; v < w.nn; v++) {
        name_prefix(&g->nodes[v], 0, NULL, &w.levels[v]);
        n_drawn += drawn[v] != 0;
        if (drawn[v] && w.levels[v] > max_level)
            max_level = w.levels[v];
    }
    uint32_t limit = o->max_nodes;
    if (o->collapse_prefix && *o->collapse_prefix) {
        st = try_depth(&w, 0, 1, &runs);
    } else if (o->collapse_depth > 0) {
        gr->depth = w.depth_used = o->collapse_depth;
        st = try_depth(&w, gr->depth, 0, &runs);
    } else if (limit == 0 || n_drawn <= limit) {
        st = try_depth(&w, 0, 0, &runs);   /* every node drawn */
    } else {
        /* the deepest module level whose boxes fit; when that gives a
         * handful of boxes (or none fits), one level deeper, its runs
         * merged into chunks */
        uint32_t best = 0, best_runs = 0;
        for (uint32_t d = 1; d <= max_level && !st; d++) {
            st = try_depth(&w, d, 0, &runs);
            if (st || runs > limit)
                break;
            best = d;
            best_runs = runs;
        }
        if (!st && best < max_level &&
            (best == 0 || (best_runs < 8 && best_runs * 4 < limit)))
            best++;
        if (!st) {
            gr->depth = w.depth_used = best;
            st = try_depth(&w, best, 0, &runs);
            if (!st && runs > limit)
                chunk = (2 * n_drawn + limit - 1) / limit;
        }
    }
    if (!st)
        st = make_items(&w, gr, chunk);
    /* long edges are what dot is slow on (a virtual node per rank they
     * cross): while the boxes' edges span too much, larger chunks */
    while (!st && gr->n_items > 2) {
        uint64_t span;
        st = edge_span(&w, gr, &span);
        if (st || span <= MAX_SPAN)
            break;
        uint32_t next = chunk ? chunk + (chunk + 1) / 2
                              : (3 * n_drawn + 2 * gr->n_items - 1) /
                                    (2 * gr->n_items);
        chunk = next > chunk ? next : chunk + 1;
        mp__dot_groups_free(ctx, gr);
        gr->depth = w.depth_used;
        st = make_items(&w, gr, chunk);
    }
    if (!st) {
        gr->keys = w.ks.s;
        gr->n_keys = (uint32_t)w.ks.n;
        mp__name_map_free(ctx, &w.ks.map);
        memset(&w.ks, 0, sizeof w.ks);
    }
out:
    keyset_free(ctx, &w.ks);
    mp__dealloc(ctx, w.levels);
    mp__dealloc(ctx, w.key);
    mp__dealloc(ctx, w.order);
    mp__dealloc(ctx, w.indeg);
    mp__dealloc(ctx, w.heap);
    mp__dealloc(ctx, w.knext);
    mp__dealloc(ctx, w.khead);
    mp__dealloc(ctx, w.done);
    if (st)
        mp__dot_groups_free(ctx, gr);
    return st;
}

void mp__dot_groups_free(mp_ctx *ctx, mp__dot_groups *gr)
{
    mp__dealloc(ctx, gr->order);
    mp__dealloc(ctx, gr->item_of);
    mp__dealloc(ctx, gr->items);
    mp__dealloc(ctx, gr->cl);
    for (uint32_t i = 0; i < gr->n_keys; i++)
        mp__dealloc(ctx, gr->keys[i]);
    mp__dealloc(ctx, gr->keys);
    memset(gr, 0, sizeof *gr);
}
