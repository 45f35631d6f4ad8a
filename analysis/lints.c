/* analysis.c - static lints on a plan, each with a byte figure
 * (docs/report.md says how each is found and what its figure means). */
#include "sched.h"
#include "viz.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers (viz.h) ------------------------------------------------ */
const char *mp__viz_size(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                        "EiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = -1;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s",
             v, units[u]);
    return buf;
}

size_t mp__viz_layer(const char *name, uint32_t depth, size_t *start)
{
    size_t s = 0;
    if (!name)
        name = "";
    char sep = strchr(name + (name[0] == '/'), '/') ? '/' : '.';
    if (sep == '/' && name[0] == '/')
        s = 1;
    *start = s;
    size_t len = strlen(name + s);
    const char *p = name + s;
    uint32_t seen = 0;
    size_t last_sep = 0;
    int have_last = 0;
    for (size_t i = 0; i < len; i++)
        if (p[i] == sep) {
            if (++seen == depth)
                return i;
            last_sep = i;
            have_last = 1;
        }
    /* fewer than depth separators: drop the last component, if any */
    return have_last ? last_sep : len;
}

mp_status mp__viz_blocks_build(const mp_plan *p, mp__viz_blocks *vb)
{
    mp_ctx *ctx = p->ctx;
    size_t nt = p->graph->n_tensors;
    vb->head = mp__alloc(ctx, (nt ? nt : 1) * sizeof *vb->head);
    vb->next = mp__alloc(ctx, (p->n_blocks ? p->n_blocks : 1) *
                                 sizeof *vb->next);
    if (!vb->head || !vb->next) {
        mp__viz_blocks_free(ctx, vb);
        return MP_ERR_NOMEM;
    }
    for (size_t t = 0; t < nt; t++)
        vb->head[t] = MP_NONE;
    for (uint32_t i = p->n_blocks; i-- > 0;) {
        uint32_t t = p->blocks[i].tensor;
        vb->next[i] = MP_NONE;
        if (t < nt) {
            vb->next[i] = vb->head[t];
            vb->head[t] = i;
        }
    }
    return MP_OK;
}

void mp__viz_blocks_free(mp_ctx *ctx, mp__viz_blocks *vb)
{
    mp__dealloc(ctx, vb->head);
    mp__dealloc(ctx, vb->next);
    vb->head = vb->next = NULL;
}

uint32_t mp__viz_block_at(const mp_plan *p, const mp__viz_blocks *vb,
                         uint32_t t, uint32_t s)
{
    if (t >= p->graph->n_tensors)
        return MP_NONE;
    for (uint32_t b = vb->head[t]; b != MP_NONE; b = vb->next[b])
        if (p->blocks[b].first <= s && s < p->blocks[b].end)
            return b;
    return MP_NONE;
}

void mp__viz_xml_str(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c;
         c++) {
        switch (*c) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f) {
                fputc('?', f);
            } else if (*c >= 0x80) {
                /* the page is UTF-8: a character as it is, a byte that is
                 * not part of one as U+FFFD */
                uint32_t cp;
                size_t k = mp__utf8_next((const char *)c, &cp);
                if (k)
                    fwrite(c, 1, k, f);
                else
                    fputs("&#xFFFD;", f);
                c += k ? k - 1 : 0;
            } else {
                fputc(*c, f);
            }
        }
    }
}

/* ---- lints ------------------------------------------------------------------ */
struct mp_lints {
    mp_ctx *ctx;
    mp_lint *v;
    size_t n, cap;
};

static const char *const kind_names[MP_LINT_KIND_COUNT] = {
    "peak-layer", "peak-op", "dead-output", "pinned-output", "inplace",
    "attention", "kv-cache", "fragmentation"};

const char *mp_lint_kind_name(mp_lint_kind k)
{
    return (unsigned)k < MP_LINT_KIND_COUNT ? kind_names[k] : NULL;
}

void mp_lint_options_init(mp_lint_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->layer_depth = 1;
    o->top = 5;
    o->kv_context = 4096;
    o->fragmentation = 1;
}

void mp_lints_destroy(mp_lints *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        mp__dealloc(l->ctx, (void *)l->v[i].subject);
        mp__dealloc(l->ctx, (void *)l->v[i].message);
    }
    mp__dealloc(l->ctx, l->v);
    mp__dealloc(l->ctx, l);
}

uint32_t mp_lints_count(const mp_lints *l)
{
    return l ? (uint32_t)l->n : 0;
}

const mp_lint *mp_lints_get(const mp_lints *l, uint32_t i)
{
    return l && i < l->n ? &l->v[i] : NULL;
}

static mp_status add_lint(mp_lints *l, mp_lint_kind kind, uint64_t bytes,
                          uint64_t aux, double share, uint32_t node,
                          uint32_t tensor, const char *subject,
                          const char *fmt, ...) MP__PRINTF(9, 10);

static mp_status add_lint(mp_lints *l, mp_lint_kind kind, uint64_t bytes,
                          uint64_t aux, double share, uint32_t node,
                          uint32_t tensor, const char *subject,
                          const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mp_status st = mp__grow(l->ctx, (void **)&l->v, sizeof *l->v, l->n + 1,
                           &l->cap);
    if (st)
        return st;
    mp_lint *x = &l->v[l->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->bytes = bytes;
    x->aux_bytes = aux;
    x->share = share;
    x->node = node;
    x->tensor = tensor;
    x->subject = mp__strdup(l->ctx, subject ? subject : "");
    x->message = mp__strdup(l->ctx, msg);
    if (!x->subject || !x->message) {
        mp__dealloc(l->ctx, (void *)x->subject);
        mp__dealloc(l->ctx, (void *)x->message);
        return MP_ERR_NOMEM;
    }
    l->n++;
    return MP_OK;
}

typedef struct lint_run {
    const mp_plan *p;
    const mp_graph *g;
    const mp_lint_options *o;
    mp_lints *l;
    mp__viz_blocks vb;
    uint32_t peak;          /* peak step; MP_NONE when no steps */
    uint64_t peak_live;
} lint_run;

/* ---- peak attribution ------------------------------------------------------ */
typedef struct group {
    const char *key;        /* points into a name; len bytes */
    size_t len;
    uint64_t bytes;
    uint32_t count;
} group;

static int cmp_group(const void *pa, const void *pb)
{
    const group *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    size_t m = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->key, b->key, m);
    if (c)
        return c;
    return (a->len > b->len) - (a->len < b->len);
}

static mp_status attribute(lint_run *r, int by_op)
{
    const mp_plan *p = r->p;
    const mp_graph *g = r->g;
    mp_ctx *ctx = p->ctx;
    group *gr = NULL;
    size_t ng = 0, cap = 0;
    mp_status st = MP_OK;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (!(b->first <= r->peak && r->peak < b->end) || b->size == 0)
            continue;
        uint32_t prod = b->tensor < g->n_tensors
                            ? g->tensors[b->tensor].producer : MP_NONE;
        const char *key;
        size_t len, start = 0;
        if (prod == MP_NONE) {
            key = "(graph inputs)";
            len = strlen(key);
        } else if (by_op) {
            key = g->nodes[prod].op;
            len = strlen(key);
        } else {
            len = mp__viz_layer(g->nodes[prod].name, r->o->layer_depth,
                               &start);
            key = g->nodes[prod].name + start;
        }
        size_t k = 0;
        while (k < ng && !(gr[k].len == len && !memcmp(gr[k].key, key, len)))
            k++;
        if (k == ng) {
            st = mp__grow(ctx, (void **)&gr, sizeof *gr, ng + 1, &cap);
            if (st)
                goto done;
            gr[ng++] = (group){key, len, 0, 0};
        }
        gr[k].bytes += b->size;
        gr[k].count++;
    }
    qsort(gr, ng, sizeof *gr, cmp_group);
    for (size_t k = 0; k < ng && k < r->o->top; k++) {
        char name[256], sz[32];
        snprintf(name, sizeof name, "%.*s", (int)(gr[k].len < 255 ? gr[k].len
                                                                 : 255),
                 gr[k].key);
        double share = r->peak_live ? (double)gr[k].bytes /
                                          (double)r->peak_live : 0.0;
        st = add_lint(r->l, by_op ? MP_LINT_PEAK_OP : MP_LINT_PEAK_LAYER,
                      gr[k].bytes, 0, share, MP_NONE, MP_NONE, name,
                      "%s '%s' holds %s at the peak (%.1f%%) in %u tensor%s",
                      by_op ? "op" : "layer", name,
                      mp__viz_size(gr[k].bytes, sz, sizeof sz), 100.0 * share,
                      gr[k].count, gr[k].count == 1 ? "" : "s");
        if (st)
            goto done;
    }
done:
    mp__dealloc(ctx, gr);
    return st;
}

/* ---- dead and pinned outputs ----------------------------------------------- */
static uint64_t tensor_block_bytes(const lint_run *r, uint32_t t)
{
    uint32_t b = r->vb.head[t];
    if (b != MP_NONE)
        return r->p->blocks[b].size;
    uint64_t a;
    if (!mp__align_up(r->g->tensors[t].bytes, r->p->fig.alignment ?
                     r->p->fig.alignment : 1, &a))
        return UINT64_MAX;
    return a;
}

static mp_status dead_outputs(lint_run *r)
{
    const mp_graph *g = r->g;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (x->producer == MP_NONE || x->n_cons || (x->flags & MP__TF_OUTPUT) ||
            !mp__tensor_in_arena(x))
            continue;
        /* the nodes memplan writes into a training graph (domain
         * "memplan") hold their workspaces and temporaries as outputs
         * nobody reads (opt/W/tmp, NODE/grad/workspace): by design */
        const char *dom = g->nodes[x->producer].domain;
        if (dom && strcmp(dom, "memplan") == 0)
            continue;
        uint64_t b = tensor_block_bytes(r, t);
        char sz[32];
        mp_status st = add_lint(
            r->l, MP_LINT_DEAD_OUTPUT, b, 0, 0.0, x->producer, t, x->name,
            "'%s' (%s, output of %s '%s') is computed and never read",
            x->name, mp__viz_size(b, sz, sizeof sz), g->nodes[x->producer].op,
            g->nodes[x->producer].name);
        if (st)
            return st;
    }
    return MP_OK;
}

static mp_status pinned_outputs(lint_run *r)
{
    const mp_graph *g = r->g;
    if (r->peak == MP_NONE)
        return MP_OK;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        if (!(x->flags & MP__TF_OUTPUT))
            continue;
        uint32_t root = x->root;
        uint32_t b = mp__viz_block_at(r->p, &r->vb, root, r->peak);
        if (b == MP_NONE || r->p->blocks[b].first >= r->peak)
            continue;
        const mp_block *bl = &r->p->blocks[b];
        char sz[32];
        mp_status st = add_lint(
            r->l, MP_LINT_PINNED_OUTPUT, bl->size, 0, 0.0,
            g->tensors[root].producer, t, x->name,
            "graph output '%s' holds %s at the peak (step %u): computed at "
            "step %u and kept to the end",
            x->name, mp__viz_size(bl->size, sz, sizeof sz), r->peak,
            bl->first);
        if (st)
            return st;
    }
    return MP_OK;
}

/* ---- in-place opportunities ------------------------------------------------ */
/* Per storage root: 1 when it or a view of it is a graph output (its memory
 * must survive: never written over). */
static uint8_t *output_roots(const mp_graph *g)
{
    uint8_t *fl = mp__calloc(g->ctx, g->n_tensors ? g->n_tensors : 1, 1);
    if (!fl)
        return NULL;
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].flags & MP__TF_OUTPUT)
            fl[g->tensors[t].root] = 1;
    return fl;
}

/* The block of input i of node n that output block Bo could take over at
 * step s, or MP_NONE: the op allows it at that position, the input's
 * storage is in the arena, computed by the graph (not the caller's
 * buffer), not kept as a graph output, at least as large as the output,
 * and dies at s (only FREE steps until its block ends). */
static uint32_t inplace_target(const lint_run *r, const uint8_t *outr,
                               const mp__node *nd, uint32_t i, uint32_t s,
                               const mp_block *Bo)
{
    const mp_plan *p = r->p;
    const mp_graph *g = r->g;
    if (nd->inputs[i] == MP_NONE || !mp__op_may_overwrite(nd->def, i))
        return MP_NONE;
    uint32_t in = g->tensors[nd->inputs[i]].root;
    const mp__tensor *ti = &g->tensors[in];
    if (!mp__tensor_in_arena(ti) || ti->producer == MP_NONE || outr[in])
        return MP_NONE;
    uint32_t bi = mp__viz_block_at(p, &r->vb, in, s);
    if (bi == MP_NONE || p->blocks[bi].size < Bo->size ||
        p->blocks[bi].end >= p->n_steps)
        return MP_NONE;
    for (uint32_t k = s + 1; k < p->blocks[bi].end; k++)
        if (p->steps[k].kind != MP_STEP_FREE)
            return MP_NONE;
    return bi;
}

/* Opportunities the plan did not take: an output that did not take over
 * any memory (no block_over) while an input it may overwrite dies at its
 * step. Taken reuse is the plan's already (block_over) and not reported;
 * fused tensors have no block and are skipped. The figure is the output's
 * block: live bytes from its step until the input's FREE would drop by it
 * (aux: by how much at the peak step). */
static mp_status inplace(lint_run *r)
{
    const mp_plan *p = r->p;
    const mp_graph *g = r->g;
    uint8_t *outr = output_roots(g);
    if (!outr)
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    for (uint32_t s = 0; s < p->n_steps && st == MP_OK; s++) {
        if (p->steps[s].kind != MP_STEP_COMPUTE &&
            p->steps[s].kind != MP_STEP_RECOMPUTE)
            continue;
        uint32_t n = p->steps[s].index;
        const mp__node *nd = &g->nodes[n];
        if (!nd->def || !(nd->def->flags & MP__OPF_INPLACE) ||
            nd->n_out == 0 || nd->outputs[0] == MP_NONE)
            continue;
        uint32_t out = nd->outputs[0];
        const mp__tensor *to = &g->tensors[out];
        if (!mp__tensor_in_arena(to) || to->root != out)
            continue;
        uint32_t bo = mp__viz_block_at(p, &r->vb, out, s);
        if (bo == MP_NONE || p->blocks[bo].first != s ||
            (p->block_over && p->block_over[bo] != MP_NONE))
            continue;   /* not written here, or already in place */
        const mp_block *Bo = &p->blocks[bo];
        uint32_t bi = MP_NONE;
        for (uint32_t i = 0; i < nd->n_in && bi == MP_NONE; i++)
            bi = inplace_target(r, outr, nd, i, s, Bo);
        if (bi == MP_NONE)
            continue;
        const mp_block *Bi = &p->blocks[bi];
        const mp__tensor *ti = &g->tensors[Bi->tensor];
        uint64_t at_peak = r->peak != MP_NONE && s <= r->peak &&
                                   r->peak < Bi->end && r->peak < Bo->end
                               ? Bo->size : 0;
        char sz[32], sz2[32];
        st = add_lint(
            r->l, MP_LINT_INPLACE, Bo->size, at_peak, 0.0, n, out, nd->name,
            "%s '%s' may write '%s' over its input '%s', which dies there: "
            "saves %s while it runs (%s at the peak)",
            nd->op, nd->name, to->name, ti->name,
            mp__viz_size(Bo->size, sz, sizeof sz),
            mp__viz_size(at_peak, sz2, sizeof sz2));
    }
    mp__dealloc(g->ctx, outr);
    return st;
}

/* ---- attention patterns ------------------------------------------------------ */
#define ATT_HOPS 4
#define ATT_PASS (MP__OPF_ELEMENTWISE | MP__OPF_INPLACE | MP__OPF_VIEW)

static int node_has(const mp__node *n, unsigned flag)
{
    return n->def && (n->def->flags & flag);
}

static mp_status attention(lint_run *r)
{
    const mp_graph *g = r->g;
    for (uint32_t n = 0; n < g->n_nodes; n++) {
        const mp__node *sm = &g->nodes[n];
        if (!node_has(sm, MP__OPF_SOFTMAX) || sm->n_in < 1 || sm->n_out < 1 ||
            sm->inputs[0] == MP_NONE || sm->outputs[0] == MP_NONE)
            continue;
        uint32_t chain[2 * ATT_HOPS + 2];
        uint32_t nc = 0;
        chain[nc++] = sm->outputs[0];
        /* back through pointwise ops to a MatMul */
        uint32_t t = sm->inputs[0];
        int found = 0;
        for (int h = 0; h <= ATT_HOPS && t != MP_NONE; h++) {
            uint32_t pr = g->tensors[t].producer;
            if (pr == MP_NONE)
                break;
            chain[nc++] = t;
            const mp__node *pn = &g->nodes[pr];
            if (node_has(pn, MP__OPF_MATMUL)) {
                found = 1;
                break;
            }
            if (!node_has(pn, ATT_PASS) || pn->n_in < 1)
                break;
            t = pn->inputs[0];
        }
        if (!found)
            continue;
        /* forward through pointwise ops to a MatMul reading the scores */
        found = 0;
        t = sm->outputs[0];
        for (int h = 0; h <= ATT_HOPS && !found; h++) {
            const mp__tensor *x = &g->tensors[t];
            uint32_t next = MP_NONE;
            for (uint32_t c = 0; c < x->n_cons; c++) {
                const mp__node *cn = &g->nodes[g->cons[x->cons_begin + c]];
                if (node_has(cn, MP__OPF_MATMUL)) {
                    found = 1;
                    break;
                }
                if (next == MP_NONE && node_has(cn, ATT_PASS) &&
                    cn->n_out > 0 && cn->outputs[0] != MP_NONE &&
                    cn->n_in > 0 && cn->inputs[0] == t)
                    next = cn->outputs[0];
            }
            if (found || next == MP_NONE)
                break;
            chain[nc++] = next;
            t = next;
        }
        const mp__tensor *sc = &g->tensors[sm->outputs[0]];
        if (!found || sc->rank < 2)
            continue;
        /* bytes of the chain's storage live at the peak (each root once) */
        uint64_t at_peak = 0;
        for (uint32_t i = 0; i < nc && r->peak != MP_NONE; i++) {
            uint32_t root = g->tensors[chain[i]].root;
            int dup = 0;
            for (uint32_t j = 0; j < i; j++)
                dup |= g->tensors[chain[j]].root == root;
            uint32_t b = dup ? MP_NONE
                             : mp__viz_block_at(r->p, &r->vb, root, r->peak);
            if (b != MP_NONE)
                at_peak += r->p->blocks[b].size;
        }
        uint64_t one = tensor_block_bytes(r, sc->root);
        char dims[160] = "", sz[32], sz2[32];
        size_t off = 0;
        for (int d = 0; d < sc->rank && off < sizeof dims - 24; d++)
            off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%lld",
                                    d ? "x" : "", (long long)sc->dims[d]);
        mp_status st = add_lint(
            r->l, MP_LINT_ATTENTION, at_peak, one, 0.0, n, sm->outputs[0],
            sm->name,
            "attention at %s '%s': scores %s (%s each, %u tensors in the "
            "chain); a fused attention kernel would hold none of them: %s "
            "less at the peak step",
            sm->op, sm->name, dims, mp__viz_size(one, sz, sizeof sz), nc,
            mp__viz_size(at_peak, sz2, sizeof sz2));
        if (st)
            return st;
    }
    return MP_OK;
}

/* ---- KV cache ----------------------------------------------------------------- */
static int name_has(const char *name, const char *word)
{
    size_t w = strlen(word);
    for (const char *p = name; *p; p++) {
        size_t i = 0;
        while (i < w && p[i] && tolower((unsigned char)p[i]) == word[i])
            i++;
        if (i == w)
            return 1;
    }
    return 0;
}

/* Bytes per token of a cache tensor [..., seq, head_dim]: every dim but
 * the second last; 0 when unknown. */
static uint64_t per_token(const mp__tensor *x)
{
    unsigned bits = mp_dtype_bits((mp_dtype)x->dtype);
    if (x->rank < 3 || !bits || !x->dims)
        return 0;
    uint64_t elems = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d == x->rank - 2)
            continue;
        if (x->dims[d] < 0 || !mp__mul_u64(elems, (uint64_t)x->dims[d], &elems))
            return 0;
    }
    uint64_t b;
    if (!mp__mul_u64(elems, bits, &b))
        return 0;
    return (b + 7) / 8;
}

static mp_status kv_cache(lint_run *r)
{
    const mp_graph *g = r->g;
    uint64_t tok = 0;
    uint32_t count = 0, first = MP_NONE;
    /* past key/value inputs; else present key/value outputs */
    for (int pass = 0; pass < 2 && count == 0; pass++)
        for (uint32_t t = 0; t < g->n_tensors; t++) {
            const mp__tensor *x = &g->tensors[t];
            int cand = pass == 0
                           ? x->producer == MP_NONE &&
                                 x->declared_kind == MP_KIND_INPUT &&
                                 (name_has(x->name, "past") ||
                                  name_has(x->name, "cache"))
                           : (x->flags & MP__TF_OUTPUT) &&
                                 name_has(x->name, "present");
            if (!cand)
                continue;
            uint64_t b = per_token(x);
            if (!b)
                continue;
            if (!mp__add_u64(tok, b, &tok))
                return mp__err(r->p->ctx, MP_ERR_OVERFLOW, "KV cache size "
                              "overflows");
            if (first == MP_NONE)
                first = t;
            count++;
        }
    if (count == 0)
        return MP_OK;
    uint64_t ctxb;
    if (!mp__mul_u64(tok, r->o->kv_context, &ctxb))
        ctxb = UINT64_MAX;
    char sz[32], sz2[32], subj[64];
    snprintf(subj, sizeof subj, "%u cache tensors", count);
    return add_lint(r->l, MP_LINT_KV_CACHE, tok, ctxb, 0.0, MP_NONE, first,
                    subj,
                    "KV cache: %u tensors (first '%s') hold %s per token: "
                    "%s at a context of %llu tokens",
                    count, g->tensors[first].name,
                    mp__viz_size(tok, sz, sizeof sz),
                    mp__viz_size(ctxb, sz2, sizeof sz2),
                    (unsigned long long)r->o->kv_context);
}

/* ---- fragmentation ------------------------------------------------------------ */
static mp_status fragmentation(lint_run *r)
{
    const mp_plan *p = r->p;
    mp_ctx *ctx = p->ctx;
    mp_buffer *bufs = mp__calloc(ctx, p->n_blocks ? p->n_blocks : 1,
                                sizeof *bufs);
    if (!bufs)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        bufs[i].start = b->first;
        bufs[i].end = b->end;
        bufs[i].size = b->tensor < r->g->n_tensors
                           ? r->g->tensors[b->tensor].bytes : b->size;
    }
    mp_cache_sim_result cs;
    mp_status st = mp_cache_sim(ctx, bufs, p->n_blocks, &cs);
    mp__dealloc(ctx, bufs);
    if (st)
        return st;
    uint64_t arena = p->fig.arena_bytes;
    uint64_t over = cs.reserved_bytes > arena ? cs.reserved_bytes - arena : 0;
    char a[32], b[32], c[32], d[32];
    return add_lint(
        r->l, MP_LINT_FRAGMENTATION, over, cs.reserved_bytes,
        cs.reserved_bytes ? (double)over / (double)cs.reserved_bytes : 0.0,
        MP_NONE,
        MP_NONE, "caching allocator",
        "a PyTorch-style caching allocator would reserve %s (%u segments, "
        "%s allocated at most) against the planned arena of %s: %s more",
        mp__viz_size(cs.reserved_bytes, a, sizeof a), cs.segments,
        mp__viz_size(cs.peak_allocated_bytes, b, sizeof b),
        mp__viz_size(arena, c, sizeof c), mp__viz_size(over, d, sizeof d));
}

/* Sorts the findings of one kind, [from, l->n), largest figure first. */
static int cmp_lint(const void *pa, const void *pb)
{
    const mp_lint *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->tensor > b->tensor) - (a->tensor < b->tensor);
}

mp_status mp_plan_lint(const mp_plan *p, const mp_lint_options *opt,
                       mp_lints **out)
{
    if (!p || !out)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG, "mp_plan_lint: NULL "
                          "argument") : MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_ctx *ctx = p->ctx;
    mp_lint_options defaults;
    mp_lint_options_init(&defaults);
    if (!opt)
        opt = &defaults;
    lint_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.g = p->graph;
    r.o = opt;
    r.peak = p->n_steps ? p->fig.peak_step : MP_NONE;
    r.peak_live = p->n_steps ? p->live[p->fig.peak_step] : 0;
    r.l = mp__calloc(ctx, 1, sizeof *r.l);
    if (!r.l)
        return MP_ERR_NOMEM;
    r.l->ctx = ctx;
    mp_status st = mp__viz_blocks_build(p, &r.vb);
    size_t from = 0;
    for (int k = 0; k < MP_LINT_KIND_COUNT && st == MP_OK; k++) {
        switch ((mp_lint_kind)k) {
        case MP_LINT_PEAK_LAYER:
            st = r.peak == MP_NONE ? MP_OK : attribute(&r, 0);
            break;
        case MP_LINT_PEAK_OP:
            st = r.peak == MP_NONE ? MP_OK : attribute(&r, 1);
            break;
        case MP_LINT_DEAD_OUTPUT: st = dead_outputs(&r); break;
        case MP_LINT_PINNED_OUTPUT: st = pinned_outputs(&r); break;
        case MP_LINT_INPLACE: st = inplace(&r); break;
        case MP_LINT_ATTENTION: st = attention(&r); break;
        case MP_LINT_KV_CACHE: st = kv_cache(&r); break;
        case MP_LINT_FRAGMENTATION:
            st = opt->fragmentation ? fragmentation(&r) : MP_OK;
            break;
        }
        if (st == MP_OK && k >= MP_LINT_DEAD_OUTPUT && r.l->n > from)
            qsort(r.l->v + from, r.l->n - from, sizeof *r.l->v, cmp_lint);
        from = r.l->n;
    }
    mp__viz_blocks_free(ctx, &r.vb);
    if (st) {
        mp_lints_destroy(r.l);
        return st == MP_ERR_NOMEM ? mp__err(ctx, st, "lints: out of memory")
                                  : st;
    }
    *out = r.l;
    return MP_OK;
}
