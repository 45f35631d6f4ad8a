/* html.c - a plan as one self-contained HTML report: inline CSS and SVG,
 * no script and no network. Sections: figures, memory timeline (live arena
 * bytes per step, stacked by tensor kind), arena layout (offset against
 * step, one rectangle per block with a <title> tooltip), the tensors live
 * at the peak, the lints. */
#include "sched.h"
#include "viz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 960.0      /* plot width (px) */
#define TH 280.0     /* timeline height */
#define AH 420.0     /* arena height */
#define ML 70.0      /* left margin for the axis labels */
#define MT 10.0
#define MB 30.0
#define PEAK_ROWS 25

enum { CAT_INPUT, CAT_ACT, CAT_GRAD, CAT_OUTPUT, CAT_N };
static const char *const cat_name[CAT_N] = {"input", "activation",
                                            "gradient", "output"};
static const char *const cat_color[CAT_N] = {"#8fbc8f", "#6495ed",
                                             "#f4a460", "#ba55d3"};

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
        return CAT_OUTPUT;
    if (t->kind == MP_KIND_INPUT)
        return CAT_INPUT;
    if (t->kind == MP_KIND_GRADIENT)
        return CAT_GRAD;
    return CAT_ACT;
}

static void fig_row(FILE *f, const char *name, uint64_t v, const char *what)
{
    char b[32];
    fprintf(f, "<tr><th>%s</th><td class=\"num\">%s</td><td class=\"num\">"
               "%llu</td><td>%s</td></tr>\n",
            name, mp__viz_size(v, b, sizeof b), (unsigned long long)v, what);
}

/* A y-axis with 5 ticks from 0 to top bytes. */
static void y_axis(FILE *f, double x0, double y0, double h, uint64_t top)
{
    char b[32];
    for (int i = 0; i <= 4; i++) {
        double y = y0 + h - h * i / 4.0;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                   "y2=\"%.1f\"/><text class=\"ax\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%s</text>\n",
                x0, y, x0 + W, y, x0 - 4, y + 4,
                mp__viz_size((uint64_t)((double)top * i / 4.0), b, sizeof b));
    }
}

static void x_axis(FILE *f, double x0, double y, uint32_t n_steps)
{
    for (int i = 0; i <= 4; i++) {
        double x = x0 + W * i / 4.0;
        fprintf(f, "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">step %u</text>\n",
                x, y + 16, (uint32_t)((double)n_steps * i / 4.0));
    }
}

static mp_status timeline(FILE *f, const mp_plan *p, const mp_html_options *o)
{
    mp_ctx *ctx = p->ctx;
    const mp_graph *g = p->graph;
    uint32_t ns = p->n_steps;
    uint64_t *cat = mp__calloc(ctx, (size_t)(ns + 1) * CAT_N, sizeof *cat);
    if (!cat)
        return MP_ERR_NOMEM;
    /* difference arrays, then prefix sums: bytes per step per category */
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->first >= ns || b->end <= b->first)
            continue;
        int c = b->tensor < g->n_tensors ? category(&g->tensors[b->tensor])
                                         : CAT_ACT;
        uint32_t e = b->end < ns ? b->end : ns;
        cat[(size_t)b->first * CAT_N + c] += b->size;
        cat[(size_t)e * CAT_N + c] -= b->size;
    }
    for (uint32_t s = 1; s <= ns; s++)
        for (int c = 0; c < CAT_N; c++)
            cat[(size_t)s * CAT_N + c] += cat[(size_t)(s - 1) * CAT_N + c];
    uint64_t top = p->fig.arena_bytes > p->fig.lower_bound_bytes
                       ? p->fig.arena_bytes : p->fig.lower_bound_bytes;
    if (top == 0)
        top = 1;
    /* samples: one per step, or the step with the most live bytes of each
     * bucket when there are more steps than points */
    uint32_t np = ns;
    uint32_t maxp = o->max_points ? o->max_points : 4000;
    if (np > maxp)
        np = maxp;
    uint32_t *pick = mp__alloc(ctx, (np ? np : 1) * sizeof *pick);
    if (!pick) {
        mp__dealloc(ctx, cat);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < np; k++) {
        uint32_t a = (uint32_t)((uint64_t)k * ns / np);
        uint32_t e = (uint32_t)((uint64_t)(k + 1) * ns / np);
        uint32_t best = a;
        for (uint32_t s = a; s < e; s++)
            if (p->live[s] > p->live[best])
                best = s;
        pick[k] = best;
    }
    double h = TH, x0 = ML, y0 = MT;
    fprintf(f, "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
            W + ML + 40, h + MT + MB, W + ML + 40, h + MT + MB);
    y_axis(f, x0, y0, h, top);
    x_axis(f, x0, y0 + h, ns);
    double dx = ns ? W / ns : W;
    /* stacked areas: category c spans [sum below c, sum through c] */
    for (int c = 0; c < CAT_N; c++) {
        uint64_t any = 0;
        for (uint32_t k = 0; k < np; k++)
            any |= cat[(size_t)pick[k] * CAT_N + c];
        if (!any)
            continue;
        fprintf(f, "<path class=\"area\" data-kind=\"%s\" fill=\"%s\" d=\"",
                cat_name[c], cat_color[c]);
        /* upper edge left to right, lower edge right to left; each sample
         * is a flat segment over its steps */
        for (uint32_t k = 0; k < np; k++) {
            uint64_t hi = 0;
            for (int q = 0; q <= c; q++)
                hi += cat[(size_t)pick[k] * CAT_N + q];
            double xa = x0 + dx * ((double)k * ns / np);
            double xb = x0 + dx * ((double)(k + 1) * ns / np);
            double y = y0 + h - h * (double)hi / (double)top;
            fprintf(f, "%s%.2f %.2f L%.2f %.2f ", k ? "L" : "M", xa, y, xb, y);
        }
        for (uint32_t k = np; k-- > 0;) {
            uint64_t lo = 0;
            for (int q = 0; q < c; q++)
                lo += cat[(size_t)pick[k] * CAT_N + q];
            double xa = x0 + dx * ((double)k * ns / np);
            double xb = x0 + dx * ((double)(k + 1) * ns / np);
            double y = y0 + h - h * (double)lo / (double)top;
            fprintf(f, "L%.2f %.2f L%.2f %.2f ", xb, y, xa, y);
        }
        fputs("Z\"/>\n", f);
    }
    char b[32];
    double ya = y0 + h - h * (double)p->fig.arena_bytes / (double)top;
    fprintf(f, "<line class=\"arena\" x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" "
               "y2=\"%.2f\"><title>arena %s</title></line>\n",
            x0, ya, x0 + W, ya, mp__viz_size(p->fig.arena_bytes, b, sizeof b));
    if (ns) {
        double xp = x0 + dx * (p->fig.peak_step + 0.5);
        fprintf(f, "<line class=\"peak\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" "
                   "y2=\"%.1f\"><title>peak at step %u: %s</title></line>\n",
                xp, y0, xp, y0 + h, p->fig.peak_step,
                mp__viz_size(p->live[p->fig.peak_step], b, sizeof b));
    }
    fputs("</svg>\n<p class=\"legend\">", f);
    for (int c = 0; c < CAT_N; c++)
        fprintf(f, "<span style=\"background:%s\">&nbsp;&nbsp;&nbsp;</span> "
                   "%s &nbsp; ", cat_color[c], cat_name[c]);
    fputs("<span class=\"peakkey\">|</span> peak step &nbsp; "
          "<span class=\"arenakey\">- -</span> arena size</p>\n", f);
    if (np < ns)
        fprintf(f, "<p class=\"note\">%u steps drawn as %u samples (the step "
                   "with the most live bytes of each).</p>\n", ns, np);
    mp__dealloc(ctx, pick);
    mp__dealloc(ctx, cat);
    return MP_OK;
}

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

static void block_title(FILE *f, const mp_plan *p, uint32_t i)
{
    const mp_block *bl = &p->blocks[i];
    const mp_graph *g = p->graph;
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

static mp_status arena(FILE *f, const mp_plan *p, const mp_html_options *o)
{
    mp_ctx *ctx = p->ctx;
    const mp_graph *g = p->graph;
    uint32_t nb = p->n_blocks, ns = p->n_steps ? p->n_steps : 1;
    ranked *idx = mp__alloc(ctx, (nb ? nb : 1) * sizeof *idx);
    if (!idx)
        return MP_ERR_NOMEM;
    uint32_t keep = nb;
    uint32_t cap = o->max_rects ? o->max_rects : 5000;
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
    uint64_t top = p->fig.arena_bytes ? p->fig.arena_bytes : 1;
    double h = AH, x0 = ML, y0 = MT, dx = W / ns;
    fprintf(f, "<svg id=\"arena\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
            W + ML + 40, h + MT + MB, W + ML + 40, h + MT + MB);
    y_axis(f, x0, y0, h, top);
    x_axis(f, x0, y0 + h, p->n_steps);
    fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\"/>\n", x0, y0, W, h);
    for (uint32_t k = 1; k < p->n_pools; k++) {
        /* the line between pool k-1 (below) and pool k */
        double yl = y0 + h - h * (double)pool_base(p, k) / (double)top;
        fprintf(f, "<line class=\"pool\" x1=\"%.1f\" y1=\"%.2f\" "
                   "x2=\"%.1f\" y2=\"%.2f\"/>\n", x0, yl, x0 + W, yl);
    }
    for (uint32_t k = 0; k < p->n_pools && p->n_pools > 1; k++) {
        double yl = y0 + h - h * (double)pool_base(p, k) / (double)top;
        fprintf(f, "<text class=\"poolname\" x=\"%.1f\" y=\"%.2f\">",
                x0 + W + 4, yl - 2);
        mp__viz_xml_str(f, p->pools[k].name);
        fputs("</text>\n", f);
    }
    for (uint32_t k = 0; k < keep; k++) {
        const mp_block *bl = &p->blocks[idx[k].idx];
        int c = bl->tensor < g->n_tensors ? category(&g->tensors[bl->tensor])
                                          : CAT_ACT;
        double x = x0 + dx * bl->first;
        double w = dx * (bl->end - bl->first);
        uint64_t base = pool_base(p, block_pool(p, idx[k].idx));
        double y = y0 + h - h * (double)(base + bl->offset + bl->size) /
                                (double)top;
        double hh = h * (double)bl->size / (double)top;
        fprintf(f, "<rect class=\"blk\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                   "height=\"%.2f\" fill=\"%s\">",
                x, y, w > 0.3 ? w : 0.3, hh > 0.3 ? hh : 0.3, cat_color[c]);
        block_title(f, p, idx[k].idx);
        fputs("</rect>\n", f);
    }
    if (p->n_steps) {
        double xp = x0 + dx * (p->fig.peak_step + 0.5);
        fprintf(f, "<line class=\"peak\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" "
                   "y2=\"%.1f\"/>\n", xp, y0, xp, y0 + h);
    }
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
                   "all, are not drawn.</p>\n",
                keep, nb, nb - keep, mp__viz_size(left_bytes, b, sizeof b));
    }
    mp__dealloc(ctx, idx);
    return MP_OK;
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
    for (uint32_t i = 0; i < mp_lints_count(l); i++) {
        const mp_lint *x = mp_lints_get(l, i);
        char b[32];
        fprintf(f, "<tr><td>%s</td><td class=\"num\">%s</td><td>",
                mp_lint_kind_name(x->kind), mp__viz_size(x->bytes, b, sizeof b));
        mp__viz_xml_str(f, x->message);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static const char css[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse;font-size:.9em}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;"
    "vertical-align:top}td.num{text-align:right;font-family:monospace;white-space:nowrap}"
    ".ax{font-size:11px;fill:#444}.grid{stroke:#ddd}"
    ".frame{fill:none;stroke:#999}.blk{stroke:#fff;stroke-width:.2}"
    ".blk:hover{stroke:#000;stroke-width:1}"
    ".peak{stroke:#d00;stroke-width:1.5}"
    ".arena{stroke:#000;stroke-dasharray:5 3}"
    ".pool{stroke:#000;stroke-width:1.5}.poolname{font-size:11px}"
    ".peakkey{color:#d00;font-weight:bold}.note{color:#666;font-size:.9em}"
    ".legend{font-size:.9em}svg{display:block}";

mp_status mp_plan_write_html(const mp_plan *p, const char *path,
                             const mp_html_options *opt)
{
    if (!p || !path)
        return p ? mp__err(p->ctx, MP_ERR_INVALID_ARG,
                          "mp_plan_write_html: NULL argument")
                 : MP_ERR_INVALID_ARG;
    mp_html_options defaults;
    mp_html_options_init(&defaults);
    const mp_html_options *o = opt ? opt : &defaults;
    const mp_graph *g = p->graph;
    const mp_figures *fg = &p->fig;
    const char *title = o->title ? o->title
                        : g->name && *g->name ? g->name : "graph";
    mp__wfile w;
    mp_status st = mp__wfile_open(p->ctx, path, &w);
    if (st)
        return st;
    FILE *f = w.f;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>memplan: ", f);
    mp__viz_xml_str(f, title);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>memplan report: ",
            css);
    mp__viz_xml_str(f, title);
    fprintf(f, "</h1>\n<p>%zu tensors, %zu nodes, %u schedule steps, %u arena "
               "blocks; solver %s, alignment %llu, %s.</p>\n",
            g->n_tensors, g->n_nodes, p->n_steps, p->n_blocks,
            fg->solver ? fg->solver : "?", (unsigned long long)fg->alignment,
            mp_solve_status_name(fg->status));
    fputs("<h2>Figures</h2>\n<table id=\"figures\">\n", f);
    fig_row(f, "persistent", fg->persistent_bytes,
            "weights, constants, optimizer state");
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
    fputs("</table>\n<h2>Memory timeline</h2>\n<p>Live arena bytes at each "
          "step, stacked by tensor kind.</p>\n", f);
    st = timeline(f, p, o);
    if (!st) {
        fputs("<h2>Arena layout</h2>\n<p>Offset in the arena against the "
              "step: one rectangle per tensor (hover for its name, size, "
              "producer and lifetime).</p>\n", f);
        st = arena(f, p, o);
    }
    if (!st)
        st = peak_table(f, p);
    if (!st)
        lint_table(f, o->lints);
    fputs("<p class=\"note\">Written by memplan " MP_VERSION_STRING
          ".</p>\n</body></html>\n", f);
    if (st) {
        mp__wfile_abort(&w);
        return st == MP_ERR_NOMEM ? mp__err(p->ctx, st, "html: out of memory")
                                  : st;
    }
    return mp__wfile_commit(&w, false);
}
