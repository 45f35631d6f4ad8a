/* html.h - the parts of the HTML report (report/html.c) shared with the
 * module table (html_groups.c) and the page's CSS and script
 * (html_assets.c). Not installed. */
#ifndef MP__HTML_H
#define MP__HTML_H

#include "sched.h"

#include <stdio.h>

/* What one plan's section of the page is drawn from. */
typedef struct mp__html {
    FILE *f;
    const mp_plan *p;
    const mp_graph *g;
    const mp_html_options *o;
    uint32_t ns;          /* schedule steps */
    uint32_t n_fold;      /* steps folded out of the drawings */
    uint8_t *fold;        /* per step: 1 when folded (allocates nothing:
                             a constant, a view, a shape-only value) */
    uint32_t *vis;        /* the steps drawn by default, in order */
    uint32_t n_vis;
    uint8_t *bcat;        /* per block: its colour (MP__HC_*) */
} mp__html;

/* The colours of arena blocks: the tensor's kind, or how the block
 * came back (recomputed, prefetched from host). */
enum { MP__HC_INPUT, MP__HC_ACT, MP__HC_GRAD, MP__HC_OUTPUT, MP__HC_RECOMP,
       MP__HC_PREFETCH, MP__HC_N };

/* The module table: node names split into their hierarchy, per group the
 * bytes its nodes' tensors hold at the peak and in all. */
mp_status mp__html_groups(const mp__html *h);

/* The page's stylesheet and script (no network, no third-party code). */
extern const char mp__html_css[];
extern const char mp__html_js[];

#endif
