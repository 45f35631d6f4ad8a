/* dot.c - a plan as a Graphviz DOT graph, built with cgraph. Every cgraph
 * call of memplan is in this file: cgraph takes `char *` for names and
 * values, so string literals are passed through cs() here and nowhere
 * else. Built only with MEMPLAN_WITH_GRAPHVIZ (MP_WITH_GRAPHVIZ). */
#include "dot_group.h"
#include "viz.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void mp_dot_options_init(mp_dot_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->clusters = 1;
    o->max_nodes = 120;
}

#ifndef MP_WITH_GRAPHVIZ

int mp_dot_available(void) { return 0; }

mp_status mp_plan_write_dot(const mp_plan *p, const char *path,
                            const mp_dot_options *opt)
{
    (void)path;
    (void)opt;
    if (!p)
        return MP_ERR_INVALID_ARG;
    return mp__err(p->ctx, MP_ERR_UNSUPPORTED,
                  "DOT output: this memplan was built without Graphviz "
                  "(cgraph); install libgraphviz-dev and configure with "
                  "-DMEMPLAN_WITH_GRAPHVIZ=ON");
}

#else

#include <graphviz/cgraph.h>
#include <pthread.h>

int mp_dot_available(void) { return 1; }

/* cgraph's API is not const-correct: its string parameters are only read. */
static char *cs(const char *s) { return (char *)s; }

/* cgraph keeps global state (agwrite's indentation, the default string
 * dictionary, its error state, the protograph): every cgraph call of the
 * library, from agopen to the last agclose, is made under this lock, so
 * that two contexts on two threads may write DOT at once. */
static pthread_mutex_t cgraph_lock = PTHREAD_MUTEX_INITIALIZER;

/* s as a DOT string may carry it, into buf (cap bytes, at least 8): a
 * backslash doubled (DOT reads "\\" as one; a lone one before the closing
 * quote would escape it and swallow what follows), a control character
 * as '?', a byte that is not part of well-formed UTF-8 as U+FFFD. Cut
 * between characters when buf is full. Quotes are cgraph's to escape. */
static const char *dot_esc(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        size_t k = *p < 0x80 ? 1 : mp__utf8_next((const char *)p, &cp);
        const char *put = (const char *)p;
        size_t len = k;
        if (k == 0) {
            put = "\xEF\xBF\xBD";
            len = 3;
            k = 1;
        } else if (*p == '\\') {
            put = "\\\\";
            len = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            put = "?";
            len = 1;
        }
        if (n + len >= cap)
            break;
        memcpy(buf + n, put, len);
        n += len;
        p += k;
    }
    buf[n] = 0;
    return buf;
}

/* Object IDs: cgraph's default ID discipline takes a named object's ID
 * from the address of its interned name, and writes subgraphs (the
 * clusters) in ID order, so their order in the file followed the heap
 * (another build, another order), and it numbers anonymous objects with
 * one counter shared by every graph. This discipline numbers names in
 * the order they are first seen (even IDs) and anonymous objects per
 * graph (odd IDs): the file follows the plan alone. The names are
 * cgraph's own strings (agstrdup: the writer reads their header), released
 * with the graph; the table of them uses the context allocator. */
typedef struct dot_ids {
    Agdisc_t disc;        /* first: the id discipline's open() gets it */
    mp_ctx *ctx;
    Agraph_t *root;
    char **names;         /* ID 2 * (k + 1) -> names[k] */
    size_t n, cap;
    mp__name_map map;
    IDTYPE anon;          /* next anonymous ID (odd) */
    int failed;           /* an allocation failed (MP_ERR_NOMEM) */
} dot_ids;

static const char *id_name_of(const void *owner, uint32_t k)
{
    return ((const dot_ids *)owner)->names[k];
}

static void *id_open(Agraph_t *g, Agdisc_t *disc)
{
    ((dot_ids *)disc)->root = g;
    return disc;
}

static long id_map(void *state, int objtype, char *str, IDTYPE *id,
                   int createflag)
{
    dot_ids *d = state;
    (void)objtype;
    if (!str) {
        *id = d->anon;
        d->anon += 2;
        return 1;
    }
    uint32_t k = mp__name_map_find(&d->map, d, id_name_of, str);
    if (k == MP_NONE) {
        if (!createflag)
            return 0;
        char *copy = agstrdup(d->root, str);
        if (!copy || d->n >= UINT32_MAX - 1 ||
            mp__grow(d->ctx, (void **)&d->names, sizeof *d->names, d->n + 1,
                     &d->cap)) {
            d->failed = 1;
            return 0;
        }
        k = (uint32_t)d->n;
        d->names[d->n++] = copy;
        if (mp__name_map_insert(d->ctx, &d->map, d, id_name_of, copy, k,
                                NULL)) {
            d->failed = 1;
            return 0;
        }
    }
    *id = 2 * ((IDTYPE)k + 1);
    return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE request)
{
    (void)state, (void)objtype, (void)request;
    return 0; /* no object asks for an ID of its own */
}

static void id_free(void *state, int objtype, IDTYPE id)
{
    (void)state, (void)objtype, (void)id; /* names live until id_close */
}

static char *id_print(void *state, int objtype, IDTYPE id)
{
    const dot_ids *d = state;
    (void)objtype;
    return id % 2 == 0 && id / 2 - 1 < d->n ? d->names[id / 2 - 1] : NULL;
}

static void id_close(void *state)
{
    dot_ids *d = state; /* the strings go with the graph's string dict */
    mp__dealloc(d->ctx, d->names);
    mp__name_map_free(d->ctx, &d->map);
    d->names = NULL;
    d->n = d->cap = 0;
}

static void id_register(void *state, int objtype, void *obj)
{
    (void)state, (void)objtype, (void)obj;
}

static Agiddisc_t id_disc = {id_open, id_map, id_alloc, id_free, id_print,
                             id_close, id_register};

/* cgraph allocates with its default discipline (malloc). A memory
 * discipline routing it through the context allocator was tried: with it,
 * agclose of this cgraph version (2.42) leaves graph objects and cdt
 * dictionaries behind (LeakSanitizer), so cgraph keeps its own memory,
 * all of it released by agclose before mp_plan_write_dot returns. */

static const char *phase_color(uint8_t ph)
{
    switch (ph) {
    case MP_PHASE_BACKWARD: return "#fdd0a2";
    case MP_PHASE_OPTIMIZER: return "#c7e9c0";
    default: return "#c6dbef";
    }
}

/* Sets attribute k. A value cut short by snprintf may end inside an
 * escape ("\\") or a UTF-8 character: that tail is dropped, so that the
 * closing quote stays a quote and the file stays UTF-8. */
static void set(void *obj, const char *k, const char *v)
{
    size_t n = strlen(v), end = n, bs = 0;
    while (end > 0 && ((unsigned char)v[end - 1] & 0xC0) == 0x80 &&
           n - end < 3)
        end--;
    if (end > 0 && (unsigned char)v[end - 1] >= 0xC0) {
        uint32_t cp;
        if (mp__utf8_next(v + end - 1, &cp) == 0)
            n = end - 1;  /* a character cut short */
    }
    for (end = n; end > 0 && v[end - 1] == '\\'; end--)
        bs++;
    if (bs % 2)
        n--;
    if (n == strlen(v)) {
        agsafeset(obj, cs(k), cs(v), cs(""));
        return;
    }
    char buf[1100];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    agsafeset(obj, cs(k), buf, cs(""));
}

typedef struct dot_run {
    const mp_plan *p;
    const mp_graph *g;
    const mp_dot_options *o;
    Agraph_t *G;
    dot_ids ids;          /* the ID discipline's state */
    Agnode_t **rep;       /* node id -> the DOT node drawing it */
    uint8_t *drawn;       /* node -> 1 when drawn (not folded away) */
    uint32_t *recomp;     /* node -> RECOMPUTE steps */
    uint8_t *moved;       /* tensor -> 1 offloaded, 2 prefetched */
    uint32_t *over;       /* tensor -> node that wrote its output over it
                             in place (the plan's block_over), MP_NONE */
    uint32_t peak_node;
    mp__dot_groups gr;    /* boxes and clusters */
    Agraph_t **clus;      /* cluster -> its subgraph (opened on first use) */
    uint32_t *clus_made;  /* clusters in the order opened (closed reversed) */
    uint32_t n_made;
    Agnode_t **gn;        /* item -> the DOT node drawing it (boxes) */
    uint8_t phases;       /* bit per phase drawn */
    mp__viz_blocks vb;
} dot_run;

typedef struct edge_rec {
    Agrec_t h;
    uint64_t bytes;
    uint32_t tensors;
} edge_rec;

/* 1 when the node that wrote its output over tensor x in place is cn or
 * the end of the fused chain (--fuse) that cn starts. */
static int wrote_over(const dot_run *r, uint32_t x, uint32_t cn)
{
    const mp_graph *g = r->g;
    uint32_t w = r->over[x];
    for (size_t k = 0; w != MP_NONE && k <= g->n_nodes; k++) {
        if (cn == w)
            return 1;
        const mp__node *nd = &g->nodes[cn];
        uint32_t y = nd->n_out ? nd->outputs[0] : MP_NONE;
        if (!r->p->fused || y == MP_NONE || !r->p->fused[y] ||
            g->tensors[y].n_cons == 0)
            return 0;
        cn = g->cons[g->tensors[y].cons_begin];
    }
    return 0;
}

static int tensor_at_peak(const dot_run *r, uint32_t t)
{
    return r->p->n_steps &&
           mp__viz_block_at(r->p, &r->vb, r->g->tensors[t].root,
                           r->p->fig.peak_step) != MP_NONE;
}

static void mark_peak(void *obj)
{
    set(obj, "color", "red");
    set(obj, "penwidth", "3");
}

/* The subgraph of cluster c (opened with its parents on first use), or
 * the root graph for MP_NONE or without clusters. */
static Agraph_t *cluster_graph(dot_run *r, uint32_t c)
{
    if (c == MP_NONE || !r->o->clusters)
        return r->G;
    if (!r->clus[c]) {
        const mp__dot_cluster *cl = &r->gr.cl[c];
        Agraph_t *parent = cluster_graph(r, cl->parent);
        const char *name = r->g->nodes[cl->node].name;
        char buf[640], e[640];
        snprintf(buf, sizeof buf, "cluster_%u", c);
        r->clus[c] = agsubg(parent, buf, 1);
        r->clus_made[r->n_made++] = c;
        snprintf(buf, sizeof buf, "%.*s%s%s%s",
                 (int)(cl->end - cl->label < 300 ? cl->end - cl->label : 300),
                 name + cl->label, cl->phase ? " (" : "",
                 cl->phase ? mp_phase_name((mp_phase)cl->phase) : "",
                 cl->phase ? ")" : "");
        set(r->clus[c], "label", dot_esc(buf, e, sizeof e));
        snprintf(buf, sizeof buf, "%.*s", (int)(cl->end - cl->start),
                 name + cl->start);
        set(r->clus[c], "tooltip", dot_esc(buf, e, sizeof e));
        set(r->clus[c], "style", "rounded");
        set(r->clus[c], "color", "#999999");
    }
    return r->clus[c];
}

/* The label of box i: its module's last component (and part), or the
 * first and last node of a chunk; its op count and bytes. */
static void box_label(dot_run *r, uint32_t i, char *buf, size_t cap)
{
    const mp__dot_item *it = &r->gr.items[i];
    const mp_graph *g = r->g;
    char e[512], e2[512], sz[32], part[48] = "";
    const char *name;
    if (it->key != MP_NONE) {
        char sep = mp__dot_name_sep(&g->nodes[r->gr.order[it->first]]);
        const char *k = r->gr.keys[it->key] + 1;
        const char *last = sep && r->gr.depth ? strrchr(k, sep) : NULL;
        name = dot_esc(last ? last + 1 : k, e, sizeof e);
        if (it->parts > 1)
            snprintf(part, sizeof part, " (%u/%u)", it->part, it->parts);
    } else {
        snprintf(e2, sizeof e2, "%.200s ... %.200s",
                 g->nodes[r->gr.order[it->first]].name,
                 g->nodes[r->gr.order[it->last]].name);
        name = dot_esc(e2, e, sizeof e);
    }
    snprintf(buf, cap, "%s%s\\n%u ops, %s", name, part, it->n_ops,
             mp__viz_size(it->bytes, sz, sizeof sz));
}

/* Box i: one 3-D box for the nodes of a module or chunk. */
static void draw_box(dot_run *r, uint32_t i)
{
    const mp__dot_item *it = &r->gr.items[i];
    char buf[1200];
    snprintf(buf, sizeof buf, "g%u", i);
    Agnode_t *an = agnode(cluster_graph(r, it->cluster), buf, 1);
    r->gn[i] = an;
    box_label(r, i, buf, sizeof buf);
    set(an, "label", buf);
    set(an, "shape", "box3d");
    set(an, "fillcolor",
        phase_color(r->g->nodes[r->gr.order[it->first]].phase));
    if (it->key != MP_NONE) {
        char e[640];
        snprintf(buf, sizeof buf, "%.500s", r->gr.keys[it->key] + 1);
        set(an, "tooltip", dot_esc(buf, e, sizeof e));
    }
    for (uint32_t k = it->first; k <= it->last; k++) {
        uint32_t n = r->gr.order[k];
        r->rep[n] = an;
        if (n == r->peak_node)
            mark_peak(an);
    }
}

/* Node n drawn as itself (recomputed ones dashed, the one at the peak in
 * red), in its cluster. */
static void draw_node(dot_run *r, uint32_t n)
{
    const mp_graph *g = r->g;
    const mp__node *nd = &g->nodes[n];
    char buf[1024];
    Agraph_t *home = cluster_graph(r, r->gr.items[r->gr.item_of[n]].cluster);
    snprintf(buf, sizeof buf, "n%u", n);
    Agnode_t *an = agnode(home, buf, 1);
    r->rep[n] = an;
    char en[512], eo[256];
    dot_esc(nd->name, en, sizeof en);
    dot_esc(nd->op, eo, sizeof eo);
    if (r->recomp[n])
        snprintf(buf, sizeof buf, "%s\\n%s\\nrecomputed x%u", en, eo,
                 r->recomp[n]);
    else
        snprintf(buf, sizeof buf, "%s\\n%s", en, eo);
    set(an, "label", buf);
    set(an, "fillcolor", phase_color(nd->phase));
    if (r->recomp[n]) {
        set(an, "style", "filled,dashed");
        set(an, "peripheries", "2");
    }
    if (n == r->peak_node) {
        mark_peak(an);
        set(an, "tooltip", "runs at the peak step");
    }
}

/* Where tensor t's edges start: its producer's node, or for a graph
 * input (a weight when shown) a node of its own; NULL: not drawn. */
static Agnode_t *tensor_source(dot_run *r, uint32_t t)
{
    const mp__tensor *x = &r->g->tensors[t];
    int persistent = mp__kind_persistent(x->kind);
    if (x->producer != MP_NONE)
        return r->rep[x->producer];
    if (persistent && !r->o->show_weights)
        return NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "t%u", t);
    Agnode_t *src = agnode(r->G, buf, 1);
    char e[1024];
    set(src, "label", dot_esc(x->name, e, sizeof e));
    set(src, "shape", persistent ? "note" : "ellipse");
    set(src, "fillcolor", persistent ? "#eeeeee" : "#ffffcc");
    return src;
}

/* The edge src -> dst of tensor x read by node cn. With groups, one
 * edge per pair of DOT nodes, labelled with the bytes and tensors it
 * carries; else one per tensor, labelled with its size and what the plan
 * does to it (view, fused, offloaded, prefetched, written over in
 * place). */
static Agedge_t *tensor_edge(dot_run *r, const mp__tensor *x, Agnode_t *src,
                             Agnode_t *dst, uint32_t cn, uint64_t bytes,
                             int fused)
{
    char buf[1024], sz[32];
    Agedge_t *e = r->gr.n_boxes ? agedge(r->G, src, dst, NULL, 0) : NULL;
    edge_rec *er;
    if (e) {
        er = (edge_rec *)agbindrec(e, cs("mp"), sizeof *er, 0);
        er->bytes += bytes;
        er->tensors++;
        snprintf(buf, sizeof buf, "%s (%u tensors)",
                 mp__viz_size(er->bytes, sz, sizeof sz), er->tensors);
        set(e, "label", buf);
        return e;
    }
    e = agedge(r->G, src, dst, NULL, 1);
    er = (edge_rec *)agbindrec(e, cs("mp"), sizeof *er, 0);
    er->bytes = bytes;
    er->tensors = 1;
    if (x->alias_of != MP_NONE)
        snprintf(buf, sizeof buf, "view");
    else if (fused)
        snprintf(buf, sizeof buf, "fused");
    else
        snprintf(buf, sizeof buf, "%s%s", mp__viz_size(bytes, sz, sizeof sz),
                 r->moved[x->root] == 1       ? " offload"
                 : r->moved[x->root] == 2     ? " prefetch"
                 : wrote_over(r, x->root, cn) ? " in place"
                                              : "");
    set(e, "label", buf);
    set(e, "tooltip", dot_esc(x->name, buf, sizeof buf));
    return e;
}

/* Tensor t as edges from its source to each reader's DOT node (once per
 * DOT node; red when live at the peak, dashed when moved to host, dotted
 * when fused). */
static void draw_tensor(dot_run *r, uint32_t t)
{
    const mp_graph *g = r->g;
    const mp__tensor *x = &g->tensors[t];
    if (x->n_cons == 0 && !(x->flags & MP__TF_OUTPUT))
        return;
    Agnode_t *src = tensor_source(r, t);
    if (!src)
        return;
    int hot = tensor_at_peak(r, t);
    /* a fused tensor (--fuse) never takes memory: no bytes */
    int fused = r->p->fused && r->p->fused[x->root];
    uint64_t bytes = x->alias_of == MP_NONE && !fused ? x->bytes : 0;
    for (uint32_t c = 0; c < x->n_cons; c++) {
        uint32_t cn = g->cons[x->cons_begin + c];
        Agnode_t *dst = r->rep[cn];
        if (!dst || dst == src)
            continue;
        int dup = 0;
        for (uint32_t c2 = 0; c2 < c; c2++)
            dup |= g->cons[x->cons_begin + c2] == cn ||
                   r->rep[g->cons[x->cons_begin + c2]] == dst;
        if (dup)
            continue;
        Agedge_t *e = tensor_edge(r, x, src, dst, cn, bytes, fused);
        if (hot) {
            set(e, "color", "red");
            set(e, "fontcolor", "red");
            set(e, "penwidth", "2");
        }
        if (r->moved[x->root])
            set(e, "style", "dashed");
        else if (fused)
            set(e, "style", "dotted");
    }
}

/* The boxes and nodes (in their clusters), then the tensors as edges. */
static mp_status build(dot_run *r)
{
    const mp_graph *g = r->g;
    mp_ctx *ctx = r->p->ctx;
    size_t ncl = r->gr.n_cl ? r->gr.n_cl : 1;
    r->clus = mp__calloc(ctx, ncl, sizeof *r->clus);
    r->clus_made = mp__alloc(ctx, ncl * sizeof *r->clus_made);
    r->gn = mp__calloc(ctx, r->gr.n_items ? r->gr.n_items : 1, sizeof *r->gn);
    if (!r->clus || !r->clus_made || !r->gn)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < r->gr.n_items; i++) {
        const mp__dot_item *it = &r->gr.items[i];
        if (it->n_ops > 1 || (it->key != MP_NONE && r->gr.depth == 0))
            draw_box(r, i);
        else
            draw_node(r, r->gr.order[it->first]);
    }
    for (uint32_t t = 0; t < g->n_tensors; t++)
        draw_tensor(r, t);
    return r->ids.failed ? MP_ERR_NOMEM : MP_OK;
}

/* The per-node and per-tensor arrays; what the schedule does to them
 * (recomputed nodes, moved tensors, outputs written over an input in
 * place), the node running at the peak step, the boxes. */
static mp_status dot_run_init(dot_run *r)
{
    const mp_plan *p = r->p;
    const mp_graph *g = r->g;
    mp_ctx *ctx = p->ctx;
    size_t nn = g->n_nodes ? g->n_nodes : 1, nt = g->n_tensors ? g->n_tensors
                                                                 : 1;
    r->peak_node = MP_NONE;
    r->rep = mp__calloc(ctx, nn, sizeof *r->rep);
    r->drawn = mp__calloc(ctx, nn, sizeof *r->drawn);
    r->recomp = mp__calloc(ctx, nn, sizeof *r->recomp);
    r->moved = mp__calloc(ctx, nt, sizeof *r->moved);
    r->over = mp__alloc(ctx, nt * sizeof *r->over);
    if (!r->rep || !r->drawn || !r->recomp || !r->moved || !r->over)
        return MP_ERR_NOMEM;
    for (size_t t = 0; t < nt; t++)
        r->over[t] = MP_NONE;
    for (uint32_t i = 0; p->block_over && i < p->n_blocks; i++) {
        uint32_t x = p->block_over[i], y = p->blocks[i].tensor;
        if (x < g->n_tensors && y < g->n_tensors)
            r->over[x] = g->tensors[y].producer;
    }
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mp_step *sp = &p->steps[s];
        if (sp->kind == MP_STEP_RECOMPUTE && sp->index < g->n_nodes)
            r->recomp[sp->index]++;
        else if (sp->kind == MP_STEP_OFFLOAD && sp->index < g->n_tensors)
            r->moved[sp->index] = 1;
        else if (sp->kind == MP_STEP_PREFETCH && sp->index < g->n_tensors &&
                 !r->moved[sp->index])
            r->moved[sp->index] = 2;
    }
    if (p->n_steps) {
        const mp_step *sp = &p->steps[p->fig.peak_step];
        if (sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE)
            r->peak_node = sp->index;
    }
    /* a node constant folding computed is not executed: hidden with the
     * weights */
    for (uint32_t n = 0; n < g->n_nodes; n++) {
        const mp__node *nd = &g->nodes[n];
        int folded = nd->n_out > 0;
        for (uint32_t o = 0; o < nd->n_out; o++)
            if (nd->outputs[o] != MP_NONE &&
                !(g->tensors[nd->outputs[o]].flags & MP__TF_FOLDED))
                folded = 0;
        r->drawn[n] = !folded || r->o->show_weights;
        if (r->drawn[n])
            r->phases |= (uint8_t)(1u << (nd->phase & 7));
    }
    mp_status st = mp__viz_blocks_build(p, &r->vb);
    if (!st)
        st = mp__dot_groups_build(p, r->drawn, r->o, &r->gr);
    return st;
}

/* Closes the cgraph graphs (under cgraph_lock). */
static void dot_run_close(dot_run *r)
{
    if (r->G) {
        /* subgraphs first, inner before outer: agclose of the root leaves
         * their dictionaries behind in this cgraph version */
        for (uint32_t i = r->n_made; i-- > 0;)
            agclose(r->clus[r->clus_made[i]]);
        agclose(r->G);
        r->G = NULL;
    }
}

static void dot_run_free(dot_run *r)
{
    mp_ctx *ctx = r->p->ctx;
    mp__dealloc(ctx, r->clus);
    mp__dealloc(ctx, r->clus_made);
    mp__dealloc(ctx, r->gn);
    mp__dealloc(ctx, r->rep);
    mp__dealloc(ctx, r->drawn);
    mp__dealloc(ctx, r->recomp);
    mp__dealloc(ctx, r->moved);
    mp__dealloc(ctx, r->over);
    mp__dot_groups_free(ctx, &r->gr);
    mp__viz_blocks_free(ctx, &r->vb);
}

/* The legend: the phase colours drawn, what boxes are when there are. */
static size_t legend(const dot_run *r, char *lab, size_t len, size_t cap)
{
    static const struct { uint8_t phase; const char *text; } ph[] = {
        {MP_PHASE_FORWARD, "blue forward"},
        {MP_PHASE_BACKWARD, "orange backward"},
        {MP_PHASE_OPTIMIZER, "green optimizer"}};
    const char *sep = "\\n";
    for (size_t i = 0; i < sizeof ph / sizeof ph[0] && len < cap; i++)
        if (r->phases & (1u << ph[i].phase)) {
            int w = snprintf(lab + len, cap - len, "%s%s", sep, ph[i].text);
            len += w > 0 ? (size_t)w : 0;
            sep = ", ";
        }
    if (r->gr.n_boxes && len < cap) {
        char d[48] = "runs of consecutive ops";
        if (r->gr.depth)
            snprintf(d, sizeof d, "modules at name depth %u", r->gr.depth);
        int w = snprintf(lab + len, cap - len,
                         "\\n3-D boxes: %u groups of ops (%s)",
                         r->gr.n_boxes, d);
        len += w > 0 ? (size_t)w : 0;
    }
    return len < cap ? len : cap - 1;
}

/* The graph's label: the plan's figures, the legend, the pools the
 * arena sums and the fused tensors. */
static void graph_label(dot_run *r)
{
    const mp_plan *p = r->p;
    const mp_graph *g = r->g;
    char lab[1024], a[32], b[32], c[32], name[256];
    snprintf(lab, sizeof lab,
             "%s: arena %s, lower bound %s, persistent %s\\npeak at "
             "step %u (red: the node running and the tensors live there)",
             g->name && *g->name ? dot_esc(g->name, name, sizeof name)
                                 : "graph",
             mp__viz_size(p->fig.arena_bytes, a, sizeof a),
             mp__viz_size(p->fig.lower_bound_bytes, b, sizeof b),
             mp__viz_size(p->fig.persistent_bytes, c, sizeof c),
             p->fig.peak_step);
    size_t len = legend(r, lab, strlen(lab), sizeof lab);
    /* pools: the arena is their sum; fused tensors take no memory */
    for (uint32_t k = 0; k < p->n_pools && p->n_pools > 1 &&
                         len < sizeof lab; k++) {
        int w = snprintf(lab + len, sizeof lab - len, "%s%.40s %s",
                         k ? ", " : "\\narena = the sum of its pools: ",
                         dot_esc(p->pools[k].name, name, 41),
                         mp__viz_size(p->pools[k].arena_bytes, a, sizeof a));
        len += w > 0 ? (size_t)w : 0;
    }
    uint32_t n_fused = 0;
    for (size_t t = 0; p->fused && t < g->n_tensors; t++)
        n_fused += p->fused[t] != 0;
    if (n_fused && len < sizeof lab)
        snprintf(lab + len, sizeof lab - len, "\\n%u fused tensor%s "
                 "(dotted edges) take no memory", n_fused,
                 n_fused == 1 ? "" : "s");
    set(r->G, "label", lab);
}

/* The root graph with its default attributes and label. */
static mp_status open_graph(dot_run *r)
{
    const mp_graph *g = r->g;
    r->ids.disc = (Agdisc_t){&AgMemDisc, &id_disc, &AgIoDisc};
    r->ids.ctx = r->p->ctx;
    r->ids.anon = 1;
    char name[512];
    r->G = agopen(g->name && *g->name ? (char *)dot_esc(g->name, name,
                                                        sizeof name)
                                      : cs("memplan"),
                  Agdirected, &r->ids.disc);
    if (!r->G)
        return mp__err(r->p->ctx, MP_ERR_NOMEM,
                      "DOT: cgraph could not open a graph");
    agattr(r->G, AGRAPH, cs("rankdir"), cs("TB"));
    /* dot's default ranking fails ("trouble in init_rank") on clustered
     * training graphs, where backward edges cross clusters */
    agattr(r->G, AGRAPH, cs("newrank"), cs("true"));
    agattr(r->G, AGRAPH, cs("fontname"), cs("Helvetica"));
    agattr(r->G, AGRAPH, cs("labelloc"), cs("t"));
    agattr(r->G, AGNODE, cs("shape"), cs("box"));
    agattr(r->G, AGNODE, cs("style"), cs("filled"));
    agattr(r->G, AGNODE, cs("fontname"), cs("Helvetica"));
    agattr(r->G, AGNODE, cs("fontsize"), cs("10"));
    agattr(r->G, AGEDGE, cs("fontname"), cs("Helvetica"));
    agattr(r->G, AGEDGE, cs("fontsize"), cs("9"));
    graph_label(r);
    return MP_OK;
}

mp_status mp_plan_write_dot(const mp_plan *p, const char *path,
                            const mp_dot_options *opt)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_dot: NULL argument")
                 : MP_ERR_INVALID_ARG;
    mp_dot_options defaults;
    mp_dot_options_init(&defaults);
    mp_ctx *ctx = p->ctx;
    dot_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.g = p->graph;
    r.o = opt ? opt : &defaults;
    mp__wfile w;
    memset(&w, 0, sizeof w);
    mp_status st = dot_run_init(&r);
    if (!st)
        st = mp__wfile_open(ctx, path, &w);
    if (!st) {
        pthread_mutex_lock(&cgraph_lock);
        if (!(st = open_graph(&r)) && !(st = build(&r)) &&
            agwrite(r.G, w.f) != 0)
            st = mp__err(ctx, MP_ERR_IO, "%s: write failed", path);
        dot_run_close(&r);
        pthread_mutex_unlock(&cgraph_lock);
        if (st)
            mp__wfile_abort(&w);
        else
            st = mp__wfile_commit(&w, false);
    }
    dot_run_free(&r);
    if (st == MP_ERR_NOMEM)
        return mp__err(ctx, st, "DOT: out of memory");
    return st;
}

#endif /* MP_WITH_GRAPHVIZ */
