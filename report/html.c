/* html.c - a plan as one self-contained HTML report: inline CSS, SVG and
 * a small script (report/html_assets.c), no network. Sections: the
 * figures (and the budget the plan was made under), the memory timeline
 * (persistent memory as a band under the live arena bytes per step,
 * stacked by tensor kind, the budget as a line), the arena layout (offset
 * against step, one bordered rectangle per block with a <title> tooltip,
 * the persistent memory as a band under it), what was recomputed and
 * offloaded, the tensors live at the peak, the modules (html_groups.c)
 * and the lints. Steps that allocate nothing (constants, views, shape-only
 * values) are folded out of the drawings; the script shows them again,
 * zooms, pans and searches. */
#include "html.h"
#include "viz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 930.0      /* plot width (px) */
#define TH 280.0     /* timeline height */
#define AH 420.0     /* arena height */
#define PBH 34.0     /* the persistent band under the arena */
#define PBG 8.0      /* the gap above it */
#define ML 70.0      /* left margin for the axis labels */
#define MT 10.0
#define MB 30.0
#define PEAK_ROWS 25
#define CHANGE_ROWS 200
/* a budget far above the peak is named, not drawn (it would flatten the
 * drawing): drawn up to this many times the top of the data */
#define BUDGET_DRAWN 1.5

static const char *const cat_name[MP__HC_N] = {
    "input", "activation", "gradient", "output", "recomputed", "prefetched"};
static const char *const cat_color[MP__HC_N] = {
    "#8fbc8f", "#6495ed", "#f4a460", "#ba55d3", "#ffd700", "#20b2aa"};
/* persistent memory by kind, drawn under the arena */
enum { PK_WEIGHT, PK_CONST, PK_OPT, PK_N };
static const char *const pk_name[PK_N] = {"weights", "constants",
                                          "optimizer state"};
static const char *const pk_color[PK_N] = {"#b0b0b0", "#d8d8d8", "#a0896b"};

void mp_html_options_init(mp_html_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->max_rects = 5000;
    o->max_points = 4000;
}

static int category(const mp__tensor *t)
{
    if (t->flags & MP__TF_OUTPUT)
        return MP__HC_OUTPUT;
    if (t->kind == MP_KIND_INPUT)
        return MP__HC_INPUT;
    if (t->kind == MP_KIND_GRADIENT)
        return MP__HC_GRAD;
    return MP__HC_ACT;
}

static int persistent_kind(uint8_t kind)
{
    return kind == MP_KIND_WEIGHT ? PK_WEIGHT
           : kind == MP_KIND_CONSTANT ? PK_CONST
           : kind == MP_KIND_OPTIMIZER_STATE ? PK_OPT : -1;
}

/* Persistent bytes by kind (storage roots only, as the figures count). */
static void persistent_split(const mp_graph *g, uint64_t pk[PK_N])
{
    memset(pk, 0, PK_N * sizeof *pk);
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *x = &g->tensors[t];
        int k = persistent_kind(x->kind);
        if (k >= 0 && x->alias_of == MP_NONE)
            pk[k] += x->bytes;   /* their sum is checked by the figures */
    }
}

static void fig_row(FILE *f, const char *name, uint64_t v, const char *what)
{
    char b[32];
    fprintf(f, "<tr><th>%s</th><td class=\"num\">%s</td><td class=\"num\">"
               "%llu</td><td>%s</td></tr>\n",
            name, mp__viz_size(v, b, sizeof b), (unsigned long long)v, what);
}

/* ---- what is drawn ------------------------------------------------------ */
/* A step is folded out of the drawings when it is the COMPUTE of a node
 * none of whose outputs takes arena memory (a constant, a view, a value
 * folded from constants): nothing is allocated there. */
static mp_status prepare(mp__html *h)
{
    const mp_plan *p = h->p;
    const mp_graph *g = h->g;
    mp_ctx *ctx = p->ctx;
    h->ns = p->n_steps;
    h->fold = mp__calloc(ctx, (size_t)h->ns + 1, 1);
    h->vis = mp__alloc(ctx, ((size_t)h->ns + 1) * sizeof *h->vis);
    h->bcat = mp__alloc(ctx, (size_t)p->n_blocks + 1);
    if (!h->fold || !h->vis || !h->bcat)
        return MP_ERR_NOMEM;
    for (uint32_t s = 0; s < h->ns; s++) {
        const mp_step *st = &p->steps[s];
        if (st->kind == MP_STEP_COMPUTE && st->index < g->n_nodes) {
            const mp__node *n = &g->nodes[st->index];
            int any = 0;
            for (uint32_t k = 0; k < n->n_out && !any; k++)
                any = n->outputs[k] < g->n_tensors &&
                      mp__tensor_in_arena(&g->tensors[n->outputs[k]]);
            h->fold[s] = !any;
        }
    }
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        int c = b->tensor < g->n_tensors ? category(&g->tensors[b->tensor])
                                         : MP__HC_ACT;
        if (b->first < h->ns) {
            h->fold[b->first] = 0;   /* it allocates after all */
            if (p->steps[b->first].kind == MP_STEP_RECOMPUTE)
                c = MP__HC_RECOMP;
            else if (p->steps[b->first].kind == MP_STEP_PREFETCH)
                c = MP__HC_PREFETCH;
        }
        h->bcat[i] = (uint8_t)c;
    }
    /* all folded: draw them all */
    h->n_fold = 0;
    for (uint32_t s = 0; s < h->ns; s++)
        h->n_fold += h->fold[s];
    if (h->n_fold == h->ns) {
        memset(h->fold, 0, h->ns);
        h->n_fold = 0;
    }
    h->n_vis = 0;
    for (uint32_t s = 0; s < h->ns; s++)
        if (!h->fold[s])
            h->vis[h->n_vis++] = s;
    return MP_OK;
}

static void prepare_free(mp__html *h)
{
    mp_ctx *ctx = h->p->ctx;
    mp__dealloc(ctx, h->fold);
    mp__dealloc(ctx, h->vis);
    mp__dealloc(ctx, h->bcat);
}

/* The column (steps drawn before it) of step s, in the default view. */
static uint32_t column(const mp__html *h, uint32_t s)
{
    uint32_t lo = 0, hi = h->n_vis;   /* first vis[i] >= s */
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (h->vis[m] < s)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The folded steps as ranges ("3-5,9"), for the script. */
static void fold_ranges(FILE *f, const mp__html *h)
{
    int first = 1;
    for (uint32_t s = 0; s < h->ns;) {
        if (!h->fold[s]) {
            s++;
            continue;
        }
        uint32_t e = s;
        while (e + 1 < h->ns && h->fold[e + 1])
            e++;
        fprintf(f, e > s ? "%s%u-%u" : "%s%u", first ? "" : ",", s, e);
        first = 0;
        s = e + 1;
    }
}

/* ---- axes and the zoomable frame ----------------------------------------
 * Each drawing is <svg class="zoom"> with its plot area in data-x0/y0/w/h
 * and the bytes at its top and bottom; the zoomed content is the <g
 * class="view"> inside a clip path. The script rewrites the tick labels
 * (class yt and xt) as it zooms. */
static void svg_open(FILE *f, const char *id, double height, double ht,
                     uint64_t top)
{
    fprintf(f, "<svg id=\"%s\" class=\"zoom\" xmlns=\"http://www.w3.org/2000/"
               "svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "data-x0=\"%.0f\" data-y0=\"%.0f\" data-w=\"%.0f\" "
               "data-h=\"%.0f\" data-top=\"%llu\" data-bot=\"0\">\n",
            id, W + ML + 90, height, W + ML + 90, height, ML, MT, W,
            ht,
            (unsigned long long)top);
}

static void axes(const mp__html *h, double ht, double x_labels,
                 uint64_t top)
{
    const double y0 = MT;
    FILE *f = h->f;
    char b[32];
    for (int i = 0; i <= 4; i++) {
        double y = y0 + ht - ht * i / 4.0;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                   "y2=\"%.1f\"/><text class=\"ax yt\" data-y=\"%.1f\" "
                   "x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML, y, ML + W, y, y, ML - 4, y + 4,
                mp__viz_size((uint64_t)((double)top * i / 4.0), b, sizeof b));
    }
    for (int i = 0; i <= 4; i++) {
        double x = ML + W * i / 4.0;
        uint32_t c = (uint32_t)((double)h->n_vis * i / 4.0);
        fprintf(f, "<text class=\"ax xt\" data-x=\"%.1f\" x=\"%.1f\" "
                   "y=\"%.1f\" text-anchor=\"middle\">step %u</text>\n",
                x, x, x_labels, c < h->n_vis ? h->vis[c] : h->ns);
    }
}

static void view_open(FILE *f, const char *id, double ht)
{
    fprintf(f, "<defs><clipPath id=\"clip-%s\"><rect x=\"%.0f\" y=\"%.0f\" "
               "width=\"%.0f\" height=\"%.0f\"/></clipPath></defs>\n"
               "<g clip-path=\"url(#clip-%s)\"><g class=\"view\">\n",
            id, ML, MT, W, ht, id);
}

/* A vertical line at step s (moved by the script with the columns). */
static void step_line(const mp__html *h, uint32_t s, double y0, double ht,
                      const char *title)
{
    double n = h->n_vis ? h->n_vis : 1;
    double x = ML + W * (column(h, s) + 0.5) / n;
    fprintf(h->f, "<line class=\"peak\" data-s=\"%u\" x1=\"%.2f\" y1=\"%.1f\" "
                  "x2=\"%.2f\" y2=\"%.1f\">", s, x, y0, x, y0 + ht);
    if (title)
        fprintf(h->f, "<title>%s</title>", title);
    fputs("</line>\n", h->f);
}

/* A horizontal line at `bytes` of a drawing whose top is `top`. */
static void level_line(FILE *f, const char *cls, uint64_t bytes, uint64_t top,
                       double ht, const char *what)
{
    char b[32];
    double y = MT + ht - ht * (double)bytes / (double)top;
    fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" "
               "y2=\"%.2f\"><title>%s %s</title></line>\n",
            cls, ML, y, ML + W, y, what, mp__viz_size(bytes, b, sizeof b));
}

/* ---- the memory timeline ------------------------------------------------ */
/* Live arena bytes per step and category: cat[s * MP__HC_N + c]. */
static uint64_t *live_by_category(const mp__html *h)
{
    const mp_plan *p = h->p;
    uint32_t ns = h->ns;
    uint64_t *cat = mp__calloc(p->ctx, (size_t)(ns + 1) * MP__HC_N,
                               sizeof *cat);
    if (!cat)
        return NULL;
    /* difference arrays, then prefix sums */
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->first >= ns || b->end <= b->first)
            continue;
        uint32_t e = b->end < ns ? b->end : ns;
        cat[(size_t)b->first * MP__HC_N + h->bcat[i]] += b->size;
        cat[(size_t)e * MP__HC_N + h->bcat[i]] -= b->size;
    }
    for (uint32_t s = 1; s <= ns; s++)
        for (int c = 0; c < MP__HC_N; c++)
            cat[(size_t)s * MP__HC_N + c] += cat[(size_t)(s - 1) * MP__HC_N + c];
    return cat;
}

/* The stacked areas over the steps `vis` (n of them), one sample per
 * bucket of steps when there are more than max_points (the step with the
 * most live bytes of the bucket), on top of `base` persistent bytes. In a
 * <g class="cls">, hidden unless shown. */
static mp_status areas(const mp__html *h, const uint64_t *cat,
                       const uint32_t *vis, uint32_t n, const char *cls,
                       int shown, uint64_t base, uint64_t top,
                       unsigned *used)
{
    const mp_plan *p = h->p;
    FILE *f = h->f;
    uint32_t np = n, maxp = h->o->max_points ? h->o->max_points : 4000;
    if (np > maxp)
        np = maxp;
    uint32_t *pick = mp__alloc(p->ctx, (np ? np : 1) * sizeof *pick);
    if (!pick)
        return MP_ERR_NOMEM;
    for (uint32_t k = 0; k < np; k++) {
        uint32_t a = (uint32_t)((uint64_t)k * n / np);
        uint32_t e = (uint32_t)((uint64_t)(k + 1) * n / np);
        uint32_t best = vis[a];
        for (uint32_t i = a; i < e; i++)
            if (p->live[vis[i]] > p->live[best])
                best = vis[i];
        pick[k] = best;
    }
    fprintf(f, "<g class=\"%s\"%s>\n", cls, shown ? "" : " style=\"display:none\"");
    double ht = TH, dx = n ? W / n : W;
#define Y(bytes) (MT + ht - ht * (double)(bytes) / (double)top)
#define XA(k) (ML + dx * ((double)(k) * n / np))
    for (int c = 0; c < MP__HC_N; c++) {
        uint64_t any = 0;
        for (uint32_t k = 0; k < np; k++)
            any |= cat[(size_t)pick[k] * MP__HC_N + c];
        if (!any)
            continue;
        *used |= 1u << c;
        fprintf(f, "<path class=\"area\" data-kind=\"%s\" fill=\"%s\" d=\"",
                cat_name[c], cat_color[c]);
        /* upper edge left to right, lower edge right to left; each sample
         * is a flat segment over its steps */
        for (uint32_t k = 0; k < np; k++) {
            uint64_t hi = base;
            for (int q = 0; q <= c; q++)
                hi += cat[(size_t)pick[k] * MP__HC_N + q];
            if (k)
                fprintf(f, "V%.1fH%.1f", Y(hi), XA(k + 1));
            else
                fprintf(f, "M%.1f %.1fH%.1f", XA(0), Y(hi), XA(1));
        }
        for (uint32_t k = np; k-- > 0;) {
            uint64_t lo = base;
            for (int q = 0; q < c; q++)
                lo += cat[(size_t)pick[k] * MP__HC_N + q];
            fprintf(f, "V%.1fH%.1f", Y(lo), XA(k));
        }
        fputs("Z\"/>\n", f);
    }
#undef XA
#undef Y
    fputs("</g>\n", f);
    mp__dealloc(p->ctx, pick);
    return MP_OK;
}

/* The persistent memory: a band per kind, from 0 up, the whole width. */
static void persistent_bands(const mp__html *h, const uint64_t pk[PK_N],
                             uint64_t top, double ht)
{
    FILE *f = h->f;
    char b[32];
    uint64_t lo = 0;
    for (int k = 0; k < PK_N; k++) {
        if (!pk[k])
            continue;
        double y1 = MT + ht - ht * (double)lo / (double)top;
        double y0 = MT + ht - ht * (double)(lo + pk[k]) / (double)top;
        fprintf(f, "<rect class=\"pband\" data-kind=\"%s\" x=\"%.1f\" "
                   "y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\">"
                   "<title>persistent: %s %s</title></rect>\n",
                pk_name[k], ML, y0, W, y1 - y0, pk_color[k], pk_name[k],
                mp__viz_size(pk[k], b, sizeof b));
        lo += pk[k];
    }
}

/* Whether a budget is drawn on a drawing whose data reach `data_top`. */
static int budget_drawn(uint64_t budget, uint64_t data_top)
{
    return budget && (double)budget <= BUDGET_DRAWN * (double)data_top;
}

static void legend(const mp__html *h, unsigned used, const uint64_t pk[PK_N],
                   int budget)
{
    FILE *f = h->f;
    fputs("<p class=\"legend\">", f);
    for (int k = 0; k < PK_N; k++)
        if (pk[k])
            fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span> "
                       "%s (persistent) &nbsp; ", pk_color[k], pk_name[k]);
    for (int c = 0; c < MP__HC_N; c++)
        if (used & (1u << c))
            fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span> "
                       "%s &nbsp; ", cat_color[c], cat_name[c]);
    fputs("<span class=\"peakkey\">|</span> peak step &nbsp; "
          "<span class=\"arenakey\">- -</span> arena size", f);
    if (budget)
        fputs(" &nbsp; <span class=\"budgetkey\">&mdash; &mdash;</span> "
              "budget", f);
    fputs("</p>\n", f);
}

static mp_status timeline(const mp__html *h, unsigned *used)
{
    const mp_plan *p = h->p;
    FILE *f = h->f;
    uint64_t pk[PK_N];
    persistent_split(h->g, pk);
    uint64_t pers = pk[PK_WEIGHT] + pk[PK_CONST] + pk[PK_OPT];
    uint64_t data_top = p->fig.peak_bytes;
    if (pers + p->fig.lower_bound_bytes > data_top)
        data_top = pers + p->fig.lower_bound_bytes;
    uint64_t budget = h->o->budget, top = data_top;
    if (budget_drawn(budget, data_top) && budget > top)
        top = budget;
    if (top == 0)
        top = 1;
    uint64_t *cat = live_by_category(h);
    if (!cat)
        return MP_ERR_NOMEM;
    double ht = TH;
    svg_open(f, "timeline", ht + MT + MB, ht, top);
    axes(h, ht, MT + ht + 16, top);
    view_open(f, "timeline", ht);
    persistent_bands(h, pk, top, ht);
    mp_status st = areas(h, cat, h->vis, h->n_vis, "tl-fold", 1, pers, top,
                         used);
    uint32_t *all = NULL;
    if (!st && h->n_fold) {
        /* every step, shown by the toggle */
        all = mp__alloc(p->ctx, (size_t)h->ns * sizeof *all);
        if (!all)
            st = MP_ERR_NOMEM;
        for (uint32_t s = 0; all && s < h->ns; s++)
            all[s] = s;
        unsigned ignored = 0;
        if (!st)
            st = areas(h, cat, all, h->ns, "tl-all", 0, pers, top, &ignored);
    }
    mp__dealloc(p->ctx, all);
    mp__dealloc(p->ctx, cat);
    if (st)
        return st;
    level_line(f, "arena", pers + p->fig.arena_bytes, top, ht,
               "persistent + arena (the peak)");
    if (budget_drawn(budget, data_top))
        level_line(f, "budget", budget, top, ht, "budget");
    if (h->ns) {
        char b[32], t[96];
        snprintf(t, sizeof t, "peak at step %u: %s live in the arena",
                 p->fig.peak_step,
                 mp__viz_size(p->live[p->fig.peak_step], b, sizeof b));
        step_line(h, p->fig.peak_step, MT, ht, t);
    }
    fputs("</g></g>\n", f);
    if (pers) {
        /* the band's size, at its top, over the plot */
        char b[32];
        double y = MT + ht - ht * (double)pers / (double)top;
        double x = ML + W + 4;
        y = y + 12 > MT + ht - 12 ? MT + ht - 12 : y + 12;
        fprintf(f, "<text class=\"pname\" id=\"persistent-label\" x=\"%.1f\" "
                   "y=\"%.1f\">persistent<tspan x=\"%.1f\" dy=\"12\">%s"
                   "</tspan></text>\n",
                x, y, x, mp__viz_size(pers, b, sizeof b));
    }
    if (budget_drawn(budget, data_top)) {
        char b[32];
        double y = MT + ht - ht * (double)budget / (double)top;
        fprintf(f, "<text class=\"budgetname\" x=\"%.1f\" y=\"%.1f\">budget "
                   "%s</text>\n", ML + W + 4, y + 4,
                mp__viz_size(budget, b, sizeof b));
    }
    fputs("</svg>\n", f);
    legend(h, *used, pk, budget_drawn(budget, data_top));
    if (h->n_vis > (h->o->max_points ? h->o->max_points : 4000))
        fprintf(f, "<p class=\"note\">%u steps drawn as %u samples (the step "
                   "with the most live bytes of each).</p>\n", h->n_vis,
                h->o->max_points ? h->o->max_points : 4000);
    if (budget && !budget_drawn(budget, data_top)) {
        char b[32];
        fprintf(f, "<p class=\"note\" id=\"budget-off\">The budget, %s, is "
                   "more than %.1f times the peak: not drawn.</p>\n",
                mp__viz_size(budget, b, sizeof b), BUDGET_DRAWN);
    }
    return MP_OK;
}

/* ---- the arena layout --------------------------------------------------- */
/* Pools: blocks' offsets start at 0 in each pool; the arena
 * drawing stacks the pools, pool 0 at the bottom. */
static uint32_t block_pool(const mp_plan *p, uint32_t i)
{
    return p->block_pool && p->n_pools ? p->block_pool[i] : 0;
}

static uint64_t pool_base(const mp_plan *p, uint32_t pool)
{
    uint64_t b = 0;
    for (uint32_t k = 0; k < pool && k < p->n_pools; k++)
        b += p->pools[k].arena_bytes;
    return b;
}

typedef struct ranked {
    double key;      /* larger first */
    uint32_t idx;    /* block index; ties: lower first */
} ranked;

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static void block_title(const mp__html *h, uint32_t i)
{
    const mp_plan *p = h->p;
    const mp_block *bl = &p->blocks[i];
    const mp_graph *g = p->graph;
    FILE *f = h->f;
    char b[32];
    const mp__tensor *t = bl->tensor < g->n_tensors ? &g->tensors[bl->tensor]
                                                   : NULL;
    fputs("<title>", f);
    mp__viz_xml_str(f, t ? t->name : "?");
    fprintf(f, "\n%s (%llu bytes) at offset %llu\n", mp__viz_size(bl->size, b,
                                                                  sizeof b),
            (unsigned long long)bl->size, (unsigned long long)bl->offset);
    if (p->n_pools > 1) {
        fputs("in pool ", f);
        mp__viz_xml_str(f, p->pools[block_pool(p, i)].name);
        fputc('\n', f);
    }
    if (p->block_over && p->block_over[i] < g->n_tensors) {
        fputs("written in place over ", f);
        mp__viz_xml_str(f, g->tensors[p->block_over[i]].name);
        fputc('\n', f);
    }
    if (h->bcat[i] == MP__HC_RECOMP)
        fprintf(f, "recomputed at step %u\n", bl->first);
    else if (h->bcat[i] == MP__HC_PREFETCH)
        fprintf(f, "prefetched from host at step %u\n", bl->first);
    if (t && t->producer != MP_NONE) {
        fputs("produced by ", f);
        mp__viz_xml_str(f, g->nodes[t->producer].op);
        fputs(" '", f);
        mp__viz_xml_str(f, g->nodes[t->producer].name);
        fputs("'\n", f);
    } else {
        fputs("graph input\n", f);
    }
    fprintf(f, "live steps %u to %u</title>", bl->first,
            bl->end ? bl->end - 1 : 0);
}

/* The persistent memory under the arena: one band of fixed height (not
 * to the arena's scale), split by kind in proportion, labelled. */
static void persistent_band(const mp__html *h, const uint64_t pk[PK_N])
{
    FILE *f = h->f;
    uint64_t pers = pk[PK_WEIGHT] + pk[PK_CONST] + pk[PK_OPT];
    double y0 = MT + AH + PBG;
    char b[32];
    if (!pers)
        return;
    fprintf(f, "<g id=\"persistent\" data-bytes=\"%llu\">\n",
            (unsigned long long)pers);
    double y = y0 + PBH;
    for (int k = 0; k < PK_N; k++) {
        if (!pk[k])
            continue;
        double hh = PBH * (double)pk[k] / (double)pers;
        y -= hh;
        fprintf(f, "<rect class=\"pband\" x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" "
                   "height=\"%.2f\" fill=\"%s\"><title>%s: %s (%llu bytes), "
                   "live at every step</title></rect>\n",
                ML, y, W, hh, pk_color[k], pk_name[k],
                mp__viz_size(pk[k], b, sizeof b), (unsigned long long)pk[k]);
    }
    fprintf(f, "<text class=\"pname\" x=\"%.1f\" y=\"%.1f\">persistent "
               "%s:", ML + 6, y0 + PBH / 2 + 4, mp__viz_size(pers, b,
                                                             sizeof b));
    for (int k = 0, n = 0; k < PK_N; k++)
        if (pk[k])
            fprintf(f, "%s %s %s", n++ ? "," : "", pk_name[k],
                    mp__viz_size(pk[k], b, sizeof b));
    fprintf(f, " (outside the arena; %.0f%% of the peak; band not to "
               "scale)</text>\n</g>\n",
            h->p->fig.peak_bytes ? 100.0 * (double)pers /
                                       (double)h->p->fig.peak_bytes : 0.0);
}

static mp_status arena(const mp__html *h)
{
    const mp_plan *p = h->p;
    mp_ctx *ctx = p->ctx;
    FILE *f = h->f;
    uint32_t nb = p->n_blocks;
    ranked *idx = mp__alloc(ctx, (nb ? nb : 1) * sizeof *idx);
    if (!idx)
        return MP_ERR_NOMEM;
    uint32_t keep = nb;
    uint32_t cap = h->o->max_rects ? h->o->max_rects : 5000;
    for (uint32_t i = 0; i < nb; i++) {
        const mp_block *b = &p->blocks[i];
        idx[i] = (ranked){(double)b->size * (b->end - b->first), i};
    }
    uint64_t left_bytes = 0;
    if (nb > cap) {
        qsort(idx, nb, sizeof *idx, cmp_ranked);
        keep = cap;
        for (uint32_t i = keep; i < nb; i++)
            left_bytes += p->blocks[idx[i].idx].size;
    }
    uint64_t pk[PK_N];
    persistent_split(h->g, pk);
    uint64_t pers = pk[PK_WEIGHT] + pk[PK_CONST] + pk[PK_OPT];
    /* the budget's share for the arena: the budget less persistent */
    uint64_t ab = h->o->budget > pers ? h->o->budget - pers : 0;
    uint64_t top = p->fig.arena_bytes;
    int draw_budget = ab && budget_drawn(ab, top);
    if (draw_budget && ab > top)
        top = ab;
    if (!top)
        top = 1;
    double ht = AH, n = h->n_vis ? h->n_vis : 1;
    svg_open(f, "arena", ht + MT + MB + (pers ? PBH + PBG : 0), ht, top);
    axes(h, ht, MT + ht + (pers ? PBH + PBG : 0) + 16, top);
    view_open(f, "arena", ht);
    for (uint32_t k = 1; k < p->n_pools; k++) {
        /* the line between pool k-1 (below) and pool k */
        double yl = MT + ht - ht * (double)pool_base(p, k) / (double)top;
        fprintf(f, "<line class=\"pool\" x1=\"%.1f\" y1=\"%.2f\" "
                   "x2=\"%.1f\" y2=\"%.2f\"/>\n", ML, yl, ML + W, yl);
    }
    for (uint32_t k = 0; k < keep; k++) {
        uint32_t i = idx[k].idx;
        const mp_block *bl = &p->blocks[i];
        double x = ML + W * column(h, bl->first) / n;
        double w = ML + W * column(h, bl->end) / n - x;
        uint64_t base = pool_base(p, block_pool(p, i));
        double y = MT + ht - ht * (double)(base + bl->offset + bl->size) /
                                 (double)top;
        double hh = ht * (double)bl->size / (double)top;
        fprintf(f, "<rect class=\"blk\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                   "height=\"%.2f\" fill=\"%s\" data-s=\"%u\" data-e=\"%u\">",
                x, y, w > 0.3 ? w : 0.3, hh > 0.3 ? hh : 0.3,
                cat_color[h->bcat[i]], bl->first, bl->end);
        block_title(h, i);
        fputs("</rect>\n", f);
    }
    if (draw_budget)
        level_line(f, "budget", ab, top, ht,
                   "the budget less persistent memory: arena room");
    if (p->n_steps)
        step_line(h, p->fig.peak_step, MT, ht, NULL);
    fputs("</g></g>\n", f);
    fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\"/>\n", ML, MT, W, ht);
    for (uint32_t k = 0; k < p->n_pools && p->n_pools > 1; k++) {
        double yl = MT + ht - ht * (double)pool_base(p, k) / (double)top;
        fprintf(f, "<text class=\"poolname\" x=\"%.1f\" y=\"%.2f\">",
                ML + W + 4, yl - 2);
        mp__viz_xml_str(f, p->pools[k].name);
        fputs("</text>\n", f);
    }
    if (draw_budget) {
        char b[32];
        double y = MT + ht - ht * (double)ab / (double)top;
        fprintf(f, "<text class=\"budgetname\" x=\"%.1f\" y=\"%.1f\">budget "
                   "room</text>\n<text class=\"budgetname\" "
                   "x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                ML + W + 4, y - 2, ML + W + 4, y + 11,
                mp__viz_size(ab, b, sizeof b));
    }
    persistent_band(h, pk);
    fputs("</svg>\n", f);
    if (p->n_pools > 1) {
        fprintf(f, "<p class=\"note\" id=\"pools\">%u pools drawn one above "
                   "the other, the first at the bottom; offsets start at 0 in "
                   "each:", p->n_pools);
        for (uint32_t k = 0; k < p->n_pools; k++) {
            char b[32];
            fputs(k ? ", " : " ", f);
            mp__viz_xml_str(f, p->pools[k].name);
            fprintf(f, " %s", mp__viz_size(p->pools[k].arena_bytes, b,
                                          sizeof b));
        }
        fputs(".</p>\n", f);
    }
    const mp_graph *g = h->g;
    uint32_t n_fused = 0;
    for (size_t t = 0; p->fused && t < g->n_tensors; t++)
        n_fused += p->fused[t] != 0;
    if (n_fused)
        fprintf(f, "<p class=\"note\" id=\"fused\">%u tensor%s inside fused "
                   "pointwise chains take no arena memory and %s no "
                   "rectangle where fused (a training plan may keep the "
                   "value backward recomputes).</p>\n",
                n_fused, n_fused == 1 ? "" : "s",
                n_fused == 1 ? "has" : "have");
    if (keep < nb) {
        char b[32];
        fprintf(f, "<p class=\"note\" id=\"capped\">%u of %u blocks drawn (the "
                   "largest by bytes &times; steps); the %u others, %s in "
                   "all, are not drawn (nor found by the search).</p>\n",
                keep, nb, nb - keep, mp__viz_size(left_bytes, b, sizeof b));
    }
    mp__dealloc(ctx, idx);
    return MP_OK;
}

/* ---- recomputed and offloaded ------------------------------------------- */
static void seconds_cell(FILE *f, double s)
{
    if (s < 0)
        fputs("<td class=\"num\">&ndash;</td>", f);
    else if (s < 1e-3)
        fprintf(f, "<td class=\"num\">%.1f &micro;s</td>", s * 1e6);
    else
        fprintf(f, "<td class=\"num\">%.3g ms</td>", s * 1e3);
}

/* One row per recomputed node (how often, the bytes its recomputes
 * allocate, their cost) in schedule order. */
static mp_status recompute_rows(const mp__html *h, uint32_t n_steps_rc)
{
    const mp_plan *p = h->p;
    const mp_graph *g = h->g;
    FILE *f = h->f;
    mp_ctx *ctx = p->ctx;
    size_t nn = g->n_nodes;
    uint32_t *count = mp__calloc(ctx, nn + 1, sizeof *count);
    uint64_t *bytes = mp__calloc(ctx, nn + 1, sizeof *bytes);
    uint64_t *at = mp__calloc(ctx, (size_t)h->ns + 1, sizeof *at);
    uint32_t *order = mp__alloc(ctx, (nn + 1) * sizeof *order);
    if (!count || !bytes || !at || !order) {
        mp__dealloc(ctx, count);
        mp__dealloc(ctx, bytes);
        mp__dealloc(ctx, at);
        mp__dealloc(ctx, order);
        return MP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].first < h->ns)
            at[p->blocks[i].first] += p->blocks[i].size;
    uint32_t n = 0;
    double cost = 0, secs = 0;
    for (uint32_t s = 0; s < h->ns; s++) {
        const mp_step *st = &p->steps[s];
        if (st->kind != MP_STEP_RECOMPUTE || st->index >= nn)
            continue;
        if (!count[st->index]++)
            order[n++] = st->index;
        bytes[st->index] += at[s];
    }
    char b[32];
    fprintf(f, "<h3>Recomputed</h3>\n<table id=\"recomputed\">\n<tr><th>node"
               "</th><th>op</th><th>times</th><th>bytes allocated</th><th>"
               "extra cost</th>%s</tr>\n",
            h->o->device ? "<th>extra time</th>" : "");
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        double c = mp_node_cost(g, v) * count[v];
        double t = -1;
        mp_op_cost oc;
        if (h->o->device &&
            mp_node_estimate(g, v, h->o->device, &oc) == MP_OK)
            t = oc.seconds * count[v];
        cost += c;
        if (t > 0)
            secs += t;
        if (k >= CHANGE_ROWS)
            continue;
        fputs("<tr class=\"rc\"><td>", f);
        mp__viz_xml_str(f, g->nodes[v].name);
        fputs("</td><td>", f);
        mp__viz_xml_str(f, g->nodes[v].op);
        fprintf(f, "</td><td class=\"num\">%u</td><td class=\"num\">%s</td>"
                   "<td class=\"num\">%.4g</td>",
                count[v], mp__viz_size(bytes[v], b, sizeof b), c);
        if (h->o->device)
            seconds_cell(f, t);
        fputs("</tr>\n", f);
    }
    fprintf(f, "</table>\n<p class=\"note\">%u recompute steps of %u nodes%s; "
               "extra cost %.4g in the recompute solvers' units (a node's "
               "seconds where the graph gives them, else its FLOPs / "
               "10<sup>12</sup>)",
            n_steps_rc, n, n > CHANGE_ROWS ? " (the first listed)" : "", cost);
    if (h->o->device) {
        fprintf(f, "; %.3g ms on ", secs * 1e3);
        mp__viz_xml_str(f,
                h->o->device->name[0] ? h->o->device->name : "the device");
    }
    fputs(".</p>\n", f);
    mp__dealloc(ctx, count);
    mp__dealloc(ctx, bytes);
    mp__dealloc(ctx, at);
    mp__dealloc(ctx, order);
    return MP_OK;
}

/* One row per offload: the tensor, its bytes, when it leaves and comes
 * back, its copy time both ways on the device. */
static mp_status offload_rows(const mp__html *h, uint32_t n_off)
{
    const mp_plan *p = h->p;
    const mp_graph *g = h->g;
    FILE *f = h->f;
    char b[32];
    uint64_t total = 0;
    double secs = 0;
    fprintf(f, "<h3>Offloaded</h3>\n<table id=\"offloaded\">\n<tr><th>tensor"
               "</th><th>bytes</th><th>to host at step</th><th>back at step"
               "</th>%s</tr>\n",
            h->o->device ? "<th>copy time (both ways)</th>" : "");
    uint32_t rows = 0;
    for (uint32_t s = 0; s < h->ns; s++) {
        const mp_step *st = &p->steps[s];
        if (st->kind != MP_STEP_OFFLOAD || st->index >= g->n_tensors)
            continue;
        uint32_t back = MP_NONE;
        for (uint32_t r = s + 1; r < h->ns && back == MP_NONE; r++)
            if (p->steps[r].kind == MP_STEP_PREFETCH &&
                p->steps[r].index == st->index)
                back = r;
        uint64_t by = g->tensors[st->index].bytes;
        double t = h->o->device
                       ? mp_device_transfer_seconds(h->o->device, by, 1) +
                             (back != MP_NONE ? mp_device_transfer_seconds(
                                                    h->o->device, by, 0)
                                              : 0)
                       : -1;
        total += by;
        if (t > 0)
            secs += t;
        if (rows++ >= CHANGE_ROWS)
            continue;
        fputs("<tr class=\"off\"><td>", f);
        mp__viz_xml_str(f, g->tensors[st->index].name);
        fprintf(f, "</td><td class=\"num\">%s</td><td class=\"num\">%u</td>",
                mp__viz_size(by, b, sizeof b), s);
        if (back != MP_NONE)
            fprintf(f, "<td class=\"num\">%u</td>", back);
        else
            fputs("<td>not needed again</td>", f);
        if (h->o->device)
            seconds_cell(f, t);
        fputs("</tr>\n", f);
    }
    fprintf(f, "</table>\n<p class=\"note\">%u offloads, %s to host%s",
            n_off, mp__viz_size(total, b, sizeof b),
            rows > CHANGE_ROWS ? " (the first listed)" : "");
    if (h->o->device) {
        fprintf(f, "; %.3g ms of copies on ", secs * 1e3);
        mp__viz_xml_str(f,
                h->o->device->name[0] ? h->o->device->name : "the device");
        fputs(", hidden behind compute where the plan overlaps them", f);
    }
    fputs(".</p>\n", f);
    return MP_OK;
}

static mp_status changes(const mp__html *h)
{
    uint32_t n_rc = 0, n_off = 0;
    for (uint32_t s = 0; s < h->ns; s++) {
        n_rc += h->p->steps[s].kind == MP_STEP_RECOMPUTE;
        n_off += h->p->steps[s].kind == MP_STEP_OFFLOAD;
    }
    if (!n_rc && !n_off)
        return MP_OK;
    fputs("<h2 id=\"changes\">Recomputed and offloaded</h2>\n<p>What the "
          "plan does to fit: values dropped and computed again before their "
          "next use (their blocks drawn in the recomputed colour), values "
          "copied to host memory and back (prefetched colour).</p>\n",
          h->f);
    mp_status st = n_rc ? recompute_rows(h, n_rc) : MP_OK;
    if (!st && n_off)
        st = offload_rows(h, n_off);
    return st;
}

/* ---- folded steps, tools ------------------------------------------------ */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "N steps that allocate nothing are folded (Constant 288, Reshape 40)". */
static mp_status folded_note(const mp__html *h)
{
    FILE *f = h->f;
    if (!h->n_fold)
        return MP_OK;
    mp_ctx *ctx = h->p->ctx;
    const char **ops = mp__alloc(ctx, h->n_fold * sizeof *ops);
    uint32_t *cnt = mp__alloc(ctx, h->n_fold * sizeof *cnt);
    if (!ops || !cnt) {
        mp__dealloc(ctx, ops);
        mp__dealloc(ctx, cnt);
        return MP_ERR_NOMEM;
    }
    uint32_t n = 0, runs = 0;
    for (uint32_t s = 0; s < h->ns; s++)
        if (h->fold[s])
            ops[n++] = h->g->nodes[h->p->steps[s].index].op;
    qsort(ops, n, sizeof *ops, cmp_str);
    for (uint32_t i = 0; i < n;) {   /* runs of one op: ops[k], cnt[k] */
        uint32_t j = i;
        while (j < n && strcmp(ops[j], ops[i]) == 0)
            j++;
        ops[runs] = ops[i];
        cnt[runs++] = j - i;
        i = j;
    }
    fprintf(f, "<p class=\"note\" id=\"folded\" data-count=\"%u\">%u of %u "
               "steps allocate nothing (constants, views, values computed "
               "from constants) and are folded out of the drawings:",
            h->n_fold, h->n_fold, h->ns);
    for (int shown = 0; shown < 5; shown++) {   /* the 5 most frequent */
        uint32_t best = 0;
        for (uint32_t k = 1; k < runs; k++)
            if (cnt[k] > cnt[best])
                best = k;
        if (!runs || !cnt[best])
            break;
        fputs(shown ? ", " : " ", f);
        mp__viz_xml_str(f, ops[best]);
        fprintf(f, " %u", cnt[best]);
        cnt[best] = 0;
    }
    fputs(". <label><input type=\"checkbox\" class=\"showfold\"> show "
          "them</label></p>\n", f);
    mp__dealloc(ctx, ops);
    mp__dealloc(ctx, cnt);
    return MP_OK;
}

static void tools(FILE *f)
{
    fputs("<div class=\"tools\"><button type=\"button\" class=\"zin\">zoom "
          "in</button><button type=\"button\" class=\"zout\">zoom out</button>"
          "<button type=\"button\" class=\"zreset\">reset</button> "
          "<span class=\"note\">or the wheel over a drawing (with Shift: the "
          "steps only), drag to pan</span>"
          "<input type=\"search\" class=\"q\" placeholder=\"find a tensor or "
          "node by name\" aria-label=\"find\"> <span class=\"qn\"></span>"
          "<ul class=\"hits\"></ul></div>\n", f);
}

static mp_status peak_table(FILE *f, const mp_plan *p)
{
    const mp_graph *g = p->graph;
    if (!p->n_steps)
        return MP_OK;
    uint32_t ps = p->fig.peak_step, n = 0;
    ranked *idx = mp__alloc(p->ctx, (p->n_blocks ? p->n_blocks : 1) *
                                       sizeof *idx);
    if (!idx)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].first <= ps && ps < p->blocks[i].end)
            idx[n++] = (ranked){(double)p->blocks[i].size, i};
    qsort(idx, n, sizeof *idx, cmp_ranked);
    char b[32];
    const mp_step *st = &p->steps[ps];
    fprintf(f, "<h2>At the peak</h2>\n<p>Step %u of %u (", ps, p->n_steps);
    fputs(mp_step_kind_name(st->kind), f);
    fputc(' ', f);
    if (st->kind == MP_STEP_COMPUTE || st->kind == MP_STEP_RECOMPUTE) {
        mp__viz_xml_str(f, g->nodes[st->index].name);
        fputs(", ", f);
        mp__viz_xml_str(f, g->nodes[st->index].op);
    } else if (st->index < g->n_tensors) {
        mp__viz_xml_str(f, g->tensors[st->index].name);
    }
    fprintf(f, "): %s live in %u tensors.</p>\n<table id=\"peak\">\n<tr><th>"
               "tensor</th><th>kind</th><th>bytes</th><th>share</th><th>"
               "offset</th>%s<th>producer</th><th>steps</th></tr>\n",
            mp__viz_size(p->live[ps], b, sizeof b), n,
            p->n_pools > 1 ? "<th>pool</th>" : "");
    for (uint32_t k = 0; k < n && k < PEAK_ROWS; k++) {
        const mp_block *bl = &p->blocks[idx[k].idx];
        const mp__tensor *t = &g->tensors[bl->tensor];
        fputs("<tr><td>", f);
        mp__viz_xml_str(f, t->name);
        fprintf(f, "</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">"
                   "%.1f%%</td><td class=\"num\">%llu</td><td>",
                cat_name[category(t)], mp__viz_size(bl->size, b, sizeof b),
                p->live[ps] ? 100.0 * (double)bl->size / (double)p->live[ps]
                            : 0.0,
                (unsigned long long)bl->offset);
        if (p->n_pools > 1) {
            mp__viz_xml_str(f, p->pools[block_pool(p, idx[k].idx)].name);
            fputs("</td><td>", f);
        }
        if (t->producer != MP_NONE) {
            mp__viz_xml_str(f, g->nodes[t->producer].name);
            fputs(" (", f);
            mp__viz_xml_str(f, g->nodes[t->producer].op);
            fputc(')', f);
        } else {
            fputs("graph input", f);
        }
        fprintf(f, "</td><td>%u&ndash;%u</td></tr>\n", bl->first,
                bl->end ? bl->end - 1 : 0);
    }
    fputs("</table>\n", f);
    if (n > PEAK_ROWS)
        fprintf(f, "<p class=\"note\">and %u smaller tensors.</p>\n",
                n - PEAK_ROWS);
    mp__dealloc(p->ctx, idx);
    return MP_OK;
}

#define LINTS_PER_KIND 20

static void lint_table(FILE *f, const mp_lints *l)
{
    fputs("<h2>Lints</h2>\n", f);
    if (!l) {
        fputs("<p class=\"note\">Not computed.</p>\n", f);
        return;
    }
    if (!mp_lints_count(l)) {
        fputs("<p>No findings.</p>\n", f);
        return;
    }
    fputs("<table id=\"lints\">\n<tr><th>lint</th><th>bytes</th><th>finding"
          "</th></tr>\n", f);
    uint32_t n = mp_lints_count(l);
    for (uint32_t i = 0; i < n;) {
        /* findings come grouped by kind: the first LINTS_PER_KIND of each,
         * the rest summed in one row */
        mp_lint_kind kind = mp_lints_get(l, i)->kind;
        uint32_t shown = 0, rest = 0;
        uint64_t rest_bytes = 0;
        char b[32];
        for (; i < n && mp_lints_get(l, i)->kind == kind; i++) {
            const mp_lint *x = mp_lints_get(l, i);
            if (shown >= LINTS_PER_KIND) {
                rest++;
                rest_bytes += x->bytes;
                continue;
            }
            shown++;
            fprintf(f, "<tr><td>%s</td><td class=\"num\">%s</td><td>",
                    mp_lint_kind_name(x->kind),
                    mp__viz_size(x->bytes, b, sizeof b));
            mp__viz_xml_str(f, x->message);
            fputs("</td></tr>\n", f);
        }
        if (rest)
            fprintf(f, "<tr class=\"more\"><td>%s</td><td class=\"num\">%s"
                       "</td><td>and %u more of this kind (the memplan "
                       "command's --json lists every one)</td></tr>\n",
                    mp_lint_kind_name(kind),
                    mp__viz_size(rest_bytes, b, sizeof b), rest);
    }
    fputs("</table>\n", f);
}

/* The budget the plan was made under, against its peak. */
static void budget_summary(const mp__html *h)
{
    const mp_figures *fg = &h->p->fig;
    uint64_t budget = h->o->budget;
    char b[32], c[32], d[32];
    if (!budget)
        return;
    int fits = fg->peak_bytes <= budget;
    fprintf(h->f, "<p id=\"budget\">Planned under a budget of <b>%s</b>: the "
                  "peak (arena + persistent) is <b>%s</b>, %.1f%% of it: "
                  "<span class=\"%s\">%s %s</span>.</p>\n",
            mp__viz_size(budget, b, sizeof b),
            mp__viz_size(fg->peak_bytes, c, sizeof c),
            100.0 * (double)fg->peak_bytes / (double)budget,
            fits ? "fits" : "over", fits ? "fits, with" : "over by",
            mp__viz_size(fits ? budget - fg->peak_bytes
                              : fg->peak_bytes - budget, d, sizeof d));
}

static void figures(const mp__html *h)
{
    const mp_plan *p = h->p;
    const mp_figures *fg = &p->fig;
    FILE *f = h->f;
    fputs("<h2>Figures</h2>\n<table id=\"figures\">\n", f);
    if (h->o->budget)
        fig_row(f, "budget", h->o->budget,
                "bytes for arena + persistent the plan was made under");
    fig_row(f, "persistent", fg->persistent_bytes,
            "weights, constants, optimizer state (outside the arena)");
    fig_row(f, "lower bound", fg->lower_bound_bytes, "max live arena bytes");
    fig_row(f, "arena", fg->arena_bytes, p->n_pools > 1
                                             ? "size the offsets need: the sum "
                                               "of the pools below"
                                             : "size the offsets need");
    for (uint32_t k = 0; k < p->n_pools && p->n_pools > 1; k++) {
        char b[32];
        fputs("<tr><th>pool ", f);
        mp__viz_xml_str(f, p->pools[k].name);
        fprintf(f, "</th><td class=\"num\">%s</td><td class=\"num\">%llu"
                   "</td><td>its arena (offsets from 0)</td></tr>\n",
                mp__viz_size(p->pools[k].arena_bytes, b, sizeof b),
                (unsigned long long)p->pools[k].arena_bytes);
    }
    fig_row(f, "peak", fg->peak_bytes, "arena + persistent");
    fig_row(f, "no reuse", fg->no_reuse_bytes,
            "every arena tensor in its own memory");
    fputs("</table>\n", f);
}

/* One plan's section: everything but the page's head and tail, so that
 * a page may hold several plans (one per rank) one after the other. */
static mp_status plan_section(mp__html *h)
{
    const mp_plan *p = h->p;
    const mp_graph *g = h->g;
    const mp_figures *fg = &p->fig;
    FILE *f = h->f;
    mp_status st = prepare(h);
    if (st) {
        prepare_free(h);
        return st;
    }
    fprintf(f, "<section class=\"plan\" data-ns=\"%u\" data-fold=\"", h->ns);
    fold_ranges(f, h);
    fprintf(f, "\">\n<p>%zu tensors, %zu nodes, %u schedule steps, %u arena "
               "blocks; solver %s, alignment %llu, %s.</p>\n",
            g->n_tensors, g->n_nodes, p->n_steps, p->n_blocks,
            fg->solver ? fg->solver : "?", (unsigned long long)fg->alignment,
            mp_solve_status_name(fg->status));
    budget_summary(h);
    figures(h);
    fputs("<h2>Memory timeline</h2>\n<p>Bytes at each step: the persistent "
          "memory (weights, constants, optimizer state; live throughout) at "
          "the bottom, the live arena bytes stacked by tensor kind above "
          "it.</p>\n", f);
    tools(f);
    st = folded_note(h);
    unsigned used = 0;
    if (!st)
        st = timeline(h, &used);
    if (!st) {
        fputs("<h2>Arena layout</h2>\n<p>Offset in the arena against the "
              "step: one rectangle per tensor (hover for its name, size, "
              "producer and lifetime); the persistent memory under it.</p>\n",
              f);
        st = arena(h);
    }
    if (!st)
        st = changes(h);
    if (!st)
        st = peak_table(f, p);
    if (!st)
        st = mp__html_groups(h);
    if (!st)
        lint_table(f, h->o->lints);
    fputs("</section>\n", f);
    prepare_free(h);
    return st;
}

/* ---- several plans: the overview ----------------------------------------- */

#define OV_W 300.0   /* one small timeline: width, height (px) */
#define OV_H 130.0
#define OV_PTS 300u  /* samples along it at most */

/* Plan i's small timeline: its persistent and live arena bytes at each
 * step (the largest of each bucket of steps), on the common scale top,
 * its peak as a dashed line. */
static mp_status overview_one(FILE *f, const mp_plan *p, const char *label,
                              uint32_t i, uint64_t top)
{
    mp__html h = {0};
    h.p = p;
    h.g = p->graph;
    mp_status st = prepare(&h);
    uint64_t *cat = st ? NULL : live_by_category(&h);
    if (!st && !cat)
        st = MP_ERR_NOMEM;
    if (st) {
        prepare_free(&h);
        return st;
    }
    uint32_t ns = h.ns ? h.ns : 1, nb = ns < OV_PTS ? ns : OV_PTS;
    uint64_t base = p->fig.persistent_bytes;
    char b[2][32];
    fprintf(f, "<div class=\"rank-card\"><a href=\"#plan-%u\">", i + 1);
    mp__viz_xml_str(f, label);
    fprintf(f, "</a><br>peak %s (persistent %s)\n",
            mp__viz_size(p->fig.peak_bytes, b[0], sizeof b[0]),
            mp__viz_size(base, b[1], sizeof b[1]));
    fprintf(f, "<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "role=\"img\"><title>", OV_W, OV_H, OV_W, OV_H);
    mp__viz_xml_str(f, label);
    fputs(": bytes (persistent + live arena) against the step</title>\n", f);
    double sy = top ? (OV_H - 4) / (double)top : 0;
    fprintf(f, "<rect class=\"ov-base\" x=\"0\" y=\"%.1f\" width=\"%.0f\" "
               "height=\"%.1f\"/>\n", OV_H - sy * (double)base, OV_W,
            sy * (double)base);
    fputs("<polyline class=\"ov-line\" points=\"", f);
    for (uint32_t k = 0; k < nb; k++) {
        uint32_t s0 = (uint32_t)((uint64_t)k * ns / nb),
                 s1 = (uint32_t)((uint64_t)(k + 1) * ns / nb);
        uint64_t mx = 0;
        for (uint32_t s = s0; s < s1 && s < h.ns; s++) {
            uint64_t v = 0;
            for (int c = 0; c < MP__HC_N; c++)
                v += cat[(size_t)s * MP__HC_N + c];
            mx = v > mx ? v : mx;
        }
        fprintf(f, "%.1f,%.1f ", OV_W * (k + 0.5) / nb,
                OV_H - sy * (double)(base + mx));
    }
    fputs("\"/>\n", f);
    fprintf(f, "<line class=\"ov-peak\" x1=\"0\" x2=\"%.0f\" y1=\"%.1f\" "
               "y2=\"%.1f\"/>\n</svg></div>\n", OV_W,
            OV_H - sy * (double)p->fig.peak_bytes,
            OV_H - sy * (double)p->fig.peak_bytes);
    mp__dealloc(p->ctx, cat);
    prepare_free(&h);
    return MP_OK;
}

/* Plan i's name on the page: labels[i], or "plan i+1" (in buf) where
 * there is none. */
static const char *label_of(const char *const *labels, uint32_t i,
                            char *buf, size_t cap)
{
    if (labels && labels[i])
        return labels[i];
    snprintf(buf, cap, "plan %u", (unsigned)i + 1);
    return buf;
}

/* Every plan's timeline side by side on one scale (the highest peak). */
static mp_status overview(FILE *f, const mp_plan *const *plans,
                          const char *const *labels, uint32_t n)
{
    uint64_t top = 1;
    uint32_t hi = 0;
    for (uint32_t i = 0; i < n; i++)
        if (plans[i]->fig.peak_bytes > top) {
            top = plans[i]->fig.peak_bytes;
            hi = i;
        }
    char b[32];
    fprintf(f, "<h2>Side by side</h2>\n<p>%u plans on one scale (0 to %s, "
               "the highest peak: ", n, mp__viz_size(top, b, sizeof b));
    char nb[32];
    mp__viz_xml_str(f, label_of(labels, hi, nb, sizeof nb));
    fputs("). Each: the persistent memory (band) and the live arena bytes "
          "above it against its own steps, its peak dashed. Their sections "
          "follow.</p>\n<div class=\"rank-cards\">\n", f);
    mp_status st = MP_OK;
    for (uint32_t i = 0; i < n && !st; i++)
        st = overview_one(f, plans[i], label_of(labels, i, nb, sizeof nb), i,
                          top);
    fputs("</div>\n", f);
    return st;
}

/* The page around a list of plans (several: the overview first). */
static mp_status write_page(FILE *f, const mp_plan *const *plans,
                            const char *const *labels, uint32_t n,
                            const mp_html_options *o, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>memplan: ", f);
    mp__viz_xml_str(f, title);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>memplan report: ",
            mp__html_css);
    mp__viz_xml_str(f, title);
    fputs("</h1>\n", f);
    mp_status st = n > 1 ? overview(f, plans, labels, n) : MP_OK;
    for (uint32_t i = 0; i < n && !st; i++) {
        mp__html h = {0};
        h.f = f;
        h.p = plans[i];
        h.g = plans[i]->graph;
        h.o = o;
        if (n > 1) {
            char nb[32];
            fprintf(f, "<h2 class=\"rank\" id=\"plan-%u\">", i + 1);
            mp__viz_xml_str(f, label_of(labels, i, nb, sizeof nb));
            fputs("</h2>\n", f);
        }
        st = plan_section(&h);
    }
    fprintf(f, "<p class=\"note\">Written by memplan " MP_VERSION_STRING
               ".</p>\n<script>%s</script>\n</body></html>\n", mp__html_js);
    return st;
}

/* Writes the page of n plans to path (labels: as mp_plans_write_html's). */
static mp_status write_html(const mp_plan *const *plans,
                            const char *const *labels, uint32_t n,
                            const char *path, const mp_html_options *opt)
{
    const mp_plan *p = plans[0];
    mp_html_options defaults;
    mp_html_options_init(&defaults);
    const mp_html_options *o = opt ? opt : &defaults;
    const mp_graph *g = p->graph;
    const char *title = o->title ? o->title
                        : g->name && *g->name ? g->name : "graph";
    mp__wfile w;
    mp_status st = mp__wfile_open(p->ctx, path, &w);
    if (st)
        return st;
    st = write_page(w.f, plans, labels, n, o, title);
    if (st) {
        mp__wfile_abort(&w);
        return st == MP_ERR_NOMEM ? mp__err(p->ctx, st, "html: out of memory")
                                  : st;
    }
    return mp__wfile_commit(&w, false);
}

mp_status mp_plans_write_html(const mp_plan *const *plans,
                              const char *const *labels, uint32_t n,
                              const char *path, const mp_html_options *opt)
{
    if (!plans || !n || !plans[0] || !path)
        return plans && n && plans[0]
                   ? mp__err(plans[0]->ctx, MP_ERR_INVALID_ARG,
                             "mp_plans_write_html: NULL path")
                   : MP_ERR_INVALID_ARG;
    for (uint32_t i = 1; i < n; i++)
        if (!plans[i])
            return mp__err(plans[0]->ctx, MP_ERR_INVALID_ARG,
                           "mp_plans_write_html: plan %u is NULL",
                           (unsigned)i + 1);
    return write_html(plans, labels, n, path, opt);
}

mp_status mp_plan_write_html(const mp_plan *p, const char *path,
                             const mp_html_options *opt)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_html: NULL argument")
                 : MP_ERR_INVALID_ARG;
    return write_html(&p, NULL, 1, path, opt);
}
