/* html_groups.c - the HTML report's module table: node names split into
 * their hierarchy as TensorBoard groups name scopes ("/layer1/0/conv1/Conv"
 * is in layer1 > 0 > conv1; node_group says how names are split), shown
 * as nested <details> that expand. Per
 * group: its nodes, the bytes their outputs hold at the peak step (and
 * the share of the live bytes there), the bytes they allocate in all
 * (every block), the persistent bytes they read first (weights). */
#include "html.h"
#include "viz.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 6     /* deeper components stay in the group above */
#define MAX_CHILDREN 40 /* shown per group; the rest summed in one row */
#define MAX_ROWS 1000   /* shown in all */

typedef struct grp {
    char *key;          /* the path: the name up to this component */
    size_t skip;        /* where its own component starts in key */
    uint32_t parent;    /* MP_NONE: top level */
    uint32_t n_nodes, n_recompute;
    uint64_t peak, alloc, weights;
} grp;

typedef struct groups {
    mp_ctx *ctx;
    grp *g;
    uint32_t n, cap;
    mp__name_map map;
    uint32_t rows;      /* written */
} groups;

static const char *grp_key(const void *owner, uint32_t i)
{
    return ((const groups *)owner)->g[i].key;
}

/* The group with path key[0..len), made (under parent) when new. */
static mp_status grp_get(groups *G, const char *key, size_t len, size_t skip,
                         uint32_t parent, uint32_t *out)
{
    char *k = mp__alloc(G->ctx, len + 1);
    if (!k)
        return MP_ERR_NOMEM;
    memcpy(k, key, len);
    k[len] = 0;
    uint32_t i = mp__name_map_find(&G->map, G, grp_key, k);
    if (i != MP_NONE) {
        mp__dealloc(G->ctx, k);
        *out = i;
        return MP_OK;
    }
    if (G->n == G->cap) {
        uint32_t cap = G->cap ? G->cap * 2 : 64;
        grp *ng = mp__realloc_array(G->ctx, G->g, cap, sizeof *ng);
        if (!ng) {
            mp__dealloc(G->ctx, k);
            return MP_ERR_NOMEM;
        }
        G->g = ng;
        G->cap = cap;
    }
    G->g[G->n] = (grp){k, skip, parent, 0, 0, 0, 0, 0};
    mp_status st = mp__name_map_insert(G->ctx, &G->map, G, grp_key, k, G->n,
                                       NULL);
    if (st) {
        mp__dealloc(G->ctx, k);
        return st;
    }
    *out = G->n++;
    return MP_OK;
}

/* The deepest group of a node name, or "(top level)" for a name of one
 * component. Components are split on '/' and '.'; a '/' component that
 * repeats the one before it ("/layer1/layer1.0/conv1/Conv", as PyTorch
 * exports scopes) counts from after the repeat: layer1 > 0 > conv1. A
 * group's key is the name up to its component, which the search finds
 * in the tooltips. */
static mp_status node_group(groups *G, const char *name, uint32_t *out)
{
    size_t len = strlen(name), i = name[0] == '/';
    size_t prev_s = 0, prev_e = 0;   /* the '/' component before */
    uint32_t parent = MP_NONE;
    int depth = 0;
    while (i < len && depth < MAX_DEPTH) {
        size_t cs = i, ce = cs;
        while (ce < len && name[ce] != '/')
            ce++;
        size_t ts = cs, pl = prev_e - prev_s;
        if (pl && ce - cs > pl + 1 && name[cs + pl] == '.' &&
            memcmp(name + cs, name + prev_s, pl) == 0)
            ts = cs + pl + 1;
        while (ts < ce && depth < MAX_DEPTH) {
            size_t te = ts;
            while (te < ce && name[te] != '.')
                te++;
            if (te >= len)
                break;   /* the node's own component */
            if (te > ts) {
                mp_status st = grp_get(G, name, te, ts, parent, &parent);
                if (st)
                    return st;
                depth++;
            }
            ts = te + 1;
        }
        prev_s = cs;
        prev_e = ce;
        i = ce + 1;
    }
    if (parent == MP_NONE)
        return grp_get(G, "(top level)", 11, 0, MP_NONE, out);
    *out = parent;
    return MP_OK;
}

typedef struct sorted {
    const grp *g;
    uint32_t idx;
} sorted;

static int cmp_grp(const void *pa, const void *pb)
{
    const grp *a = ((const sorted *)pa)->g, *b = ((const sorted *)pb)->g;
    if (a->peak != b->peak)
        return a->peak > b->peak ? -1 : 1;
    if (a->alloc != b->alloc)
        return a->alloc > b->alloc ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* child[a..e) sorted: the most bytes at the peak first. */
static mp_status sort_level(groups *G, uint32_t *child, uint32_t a,
                            uint32_t e)
{
    if (e - a < 2)
        return MP_OK;
    sorted *s = mp__alloc(G->ctx, (size_t)(e - a) * sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    for (uint32_t k = a; k < e; k++)
        s[k - a] = (sorted){&G->g[child[k]], child[k]};
    qsort(s, e - a, sizeof *s, cmp_grp);
    for (uint32_t k = a; k < e; k++)
        child[k] = s[k - a].idx;
    mp__dealloc(G->ctx, s);
    return MP_OK;
}

static void cells(FILE *f, const grp *x, uint64_t live)
{
    char b[32];
    fprintf(f, "<span class=\"n\">%u</span><span class=\"n\">%s</span>",
            x->n_nodes, mp__viz_size(x->peak, b, sizeof b));
    fprintf(f, "<span class=\"n\">%.1f%%</span>",
            live ? 100.0 * (double)x->peak / (double)live : 0.0);
    fprintf(f, "<span class=\"n\">%s</span>", mp__viz_size(x->alloc, b,
                                                           sizeof b));
    fprintf(f, "<span class=\"n\">%s</span>", mp__viz_size(x->weights, b,
                                                           sizeof b));
}

/* children[first[p] .. first[p + 1]) are p's (p = n: the top level). */
static mp_status write_level(groups *G, FILE *f, const uint32_t *first,
                              uint32_t *child, uint32_t parent, uint64_t live)
{
    uint32_t a = first[parent], e = first[parent + 1];
    mp_status st = sort_level(G, child, a, e);
    if (st)
        return st;
    grp rest = {0};
    uint32_t n_rest = 0;
    for (uint32_t k = a; k < e; k++) {
        const grp *x = &G->g[child[k]];
        if (k - a >= MAX_CHILDREN || G->rows >= MAX_ROWS) {
            rest.n_nodes += x->n_nodes;
            rest.peak += x->peak;
            rest.alloc += x->alloc;
            rest.weights += x->weights;
            n_rest++;
            continue;
        }
        G->rows++;
        int kids = first[child[k] + 1] > first[child[k]];
        fputs(kids ? "<details><summary>" : "<div class=\"leaf\">", f);
        fputs("<span>", f);
        mp__viz_xml_str(f, x->key + x->skip);
        fputs("</span>", f);
        cells(f, x, live);
        fputs("<span class=\"find\" data-q=\"", f);
        mp__viz_xml_str(f, strcmp(x->key, "(graph inputs)") == 0
                               ? "graph input" : x->key);
        fputs("\">find</span>", f);
        if (kids) {
            fputs("</summary>\n", f);
            if ((st = write_level(G, f, first, child, child[k], live)))
                return st;
            fputs("</details>\n", f);
        } else {
            fputs("</div>\n", f);
        }
    }
    if (n_rest) {
        fprintf(f, "<div class=\"leaf\"><span>&hellip; %u more group%s"
                   "</span>", n_rest, n_rest == 1 ? "" : "s");
        cells(f, &rest, live);
        fputs("<span></span></div>\n", f);
    }
    return MP_OK;
}

static void groups_free(groups *G)
{
    for (uint32_t i = 0; i < G->n; i++)
        mp__dealloc(G->ctx, G->g[i].key);
    mp__dealloc(G->ctx, G->g);
    mp__name_map_free(G->ctx, &G->map);
}

/* The nodes' statistics added to their group and its ancestors. */
static mp_status collect(groups *G, const mp__html *h, uint32_t *leaf)
{
    const mp_plan *p = h->p;
    const mp_graph *g = h->g;
    size_t nn = g->n_nodes;
    mp_status st = MP_OK;
    for (size_t v = 0; v < nn && !st; v++)
        st = node_group(G, g->nodes[v].name ? g->nodes[v].name : "",
                        &leaf[v]);
    uint32_t inputs = MP_NONE;
    if (!st)
        st = grp_get(G, "(graph inputs)", 14, 0, MP_NONE, &inputs);
    if (st)
        return st;
    leaf[nn] = inputs;
    uint8_t *seen = mp__calloc(G->ctx, g->n_tensors + 1, 1);
    if (!seen)
        return MP_ERR_NOMEM;
#define ADD(node, field, v)                                                   \
    for (uint32_t q = leaf[node]; q != MP_NONE; q = G->g[q].parent)          \
        G->g[q].field += (v)
    for (size_t v = 0; v < nn; v++) {
        ADD(v, n_nodes, 1);
        const mp__node *n = &g->nodes[v];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t r = mp__persistent_root(g, n->inputs[k]);
            if (r != MP_NONE && !seen[r]) {
                seen[r] = 1;
                ADD(v, weights, g->tensors[r].bytes);
            }
        }
    }
    uint32_t ps = p->fig.peak_step;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        uint32_t pr = b->tensor < g->n_tensors ? g->tensors[b->tensor].producer
                                               : MP_NONE;
        size_t v = pr == MP_NONE || pr >= nn ? nn : pr;
        ADD(v, alloc, b->size);
        if (b->first <= ps && ps < b->end)
            ADD(v, peak, b->size);
    }
    for (uint32_t s = 0; s < h->ns; s++)
        if (p->steps[s].kind == MP_STEP_RECOMPUTE && p->steps[s].index < nn)
            ADD(p->steps[s].index, n_recompute, 1);
#undef ADD
    mp__dealloc(G->ctx, seen);
    return MP_OK;
}

mp_status mp__html_groups(const mp__html *h)
{
    const mp_plan *p = h->p;
    FILE *f = h->f;
    groups G = {0};
    G.ctx = p->ctx;
    size_t nn = h->g->n_nodes;
    uint32_t *leaf = mp__alloc(G.ctx, (nn + 1) * sizeof *leaf);
    uint32_t *first = NULL, *child = NULL;
    mp_status st = leaf ? collect(&G, h, leaf) : MP_ERR_NOMEM;
    if (!st) {
        first = mp__calloc(G.ctx, (size_t)G.n + 2, sizeof *first);
        child = mp__alloc(G.ctx, ((size_t)G.n + 1) * sizeof *child);
        if (!first || !child)
            st = MP_ERR_NOMEM;
    }
    if (!st) {
        /* children grouped by parent (counting sort; top level: G.n) */
        for (uint32_t i = 0; i < G.n; i++) {
            uint32_t q = G.g[i].parent == MP_NONE ? G.n : G.g[i].parent;
            first[q + 1]++;
        }
        for (uint32_t q = 0; q <= G.n; q++)
            first[q + 1] += first[q];
        uint32_t *fill = mp__alloc(G.ctx, ((size_t)G.n + 1) * sizeof *fill);
        if (!fill) {
            st = MP_ERR_NOMEM;
        } else {
            memcpy(fill, first, ((size_t)G.n + 1) * sizeof *fill);
            for (uint32_t i = 0; i < G.n; i++) {
                uint32_t q = G.g[i].parent == MP_NONE ? G.n : G.g[i].parent;
                child[fill[q]++] = i;
            }
            mp__dealloc(G.ctx, fill);
        }
    }
    if (!st) {
        uint64_t live = p->n_steps ? p->live[p->fig.peak_step] : 0;
        fprintf(f, "<h2>By module</h2>\n<p>Nodes grouped by the hierarchy of "
                   "their names (click a group to open it; <i>find</i> "
                   "highlights its blocks). At the peak: bytes of the "
                   "group's outputs live at the peak step; allocated: every "
                   "block its nodes allocate; weights: the persistent "
                   "tensors it reads first.</p>\n<div class=\"groups\" "
                   "id=\"groups\" data-groups=\"%u\">\n<div class=\"ghead\">"
                   "<span>module</span><span class=\"n\">nodes</span><span "
                   "class=\"n\">at peak</span><span class=\"n\">share</span>"
                   "<span class=\"n\">allocated</span><span class=\"n\">"
                   "weights</span><span></span></div>\n", G.n);
        st = write_level(&G, f, first, child, G.n, live);
        fputs("</div>\n", f);
    }
    mp__dealloc(G.ctx, first);
    mp__dealloc(G.ctx, child);
    mp__dealloc(G.ctx, leaf);
    groups_free(&G);
    return st;
}
