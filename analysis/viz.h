/* viz.h - helpers shared by the lints, the DOT, HTML and trace writers
 * (analysis/lints.c, dot.c, html.c). Not installed. */
#ifndef MP__VIZ_H
#define MP__VIZ_H

#include "base.h"

#include <stdio.h>

/* "1.5 MiB", "512 B": 3 significant digits; buf of >= 32 bytes. */
const char *mp__viz_size(uint64_t bytes, char *buf, size_t cap);
/* Length of the first `depth` components of a node name: components are
 * separated by '/' when the name holds one, else by '.'; a leading '/' is
 * skipped (*start set past it). A name with no more than `depth`
 * components gives all but its last one, or the whole name when it has
 * one component. */
size_t mp__viz_layer(const char *name, uint32_t depth, size_t *start);

/* Per-tensor block lists of a plan: blocks of tensor t are
 * head[t], next[head[t]], ... (MP_NONE ends). */
typedef struct mp__viz_blocks {
    uint32_t *head, *next;
} mp__viz_blocks;
mp_status mp__viz_blocks_build(const mp_plan *p, mp__viz_blocks *vb);
void mp__viz_blocks_free(mp_ctx *ctx, mp__viz_blocks *vb);
/* The block of storage root `t` live at step s, or MP_NONE. */
uint32_t mp__viz_block_at(const mp_plan *p, const mp__viz_blocks *vb,
                         uint32_t t, uint32_t s);

/* Writes s escaped for HTML/XML text and attribute values. */
void mp__viz_xml_str(FILE *f, const char *s);

#endif
