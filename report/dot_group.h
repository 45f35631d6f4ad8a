/* dot_group.h - the boxes and clusters of a plan's DOT (report/dot.c):
 * which nodes are drawn as one box, in which nested cluster, so that a
 * large graph stays small enough for `dot` to lay out and its collapsed
 * graph stays acyclic. No cgraph here. Not installed. */
#ifndef MP__DOT_GROUP_H
#define MP__DOT_GROUP_H

#include "sched.h"

/* One box of the DOT: a node drawn as itself, a module (the nodes whose
 * names share the first `depth` '/'-separated components, of one phase),
 * or a run of consecutive nodes (a chunk) of a graph whose names carry no
 * hierarchy. Its nodes are consecutive in `order`: every edge between
 * boxes goes forward in that order, so the boxes form an acyclic graph
 * whenever the graph is acyclic. A module whose nodes are not consecutive
 * there is split into parts. */
typedef struct mp__dot_item {
    uint32_t first, last;  /* positions in order[] of its first, last node */
    uint32_t n_ops;        /* drawn nodes in it */
    uint32_t key;          /* module key (keys[]), MP_NONE: a node or chunk */
    uint32_t part, parts;  /* 1-based part of its module, of parts */
    uint32_t cluster;      /* cluster drawn in, MP_NONE: the root graph */
    uint64_t bytes;        /* bytes of the tensors its nodes write */
} mp__dot_item;

/* A cluster: the nodes whose names share a prefix of components, of one
 * phase. Its label is the last component of the prefix. */
typedef struct mp__dot_cluster {
    uint32_t parent;       /* MP_NONE: the root graph */
    uint32_t node;         /* a node whose name holds the prefix */
    uint32_t start, end;   /* the prefix in that name: [start, end) */
    uint32_t label;        /* offset of its last component */
    uint8_t phase;
} mp__dot_cluster;

typedef struct mp__dot_groups {
    uint32_t *order;       /* drawn nodes, in the order boxes follow */
    uint32_t n_order;
    uint32_t *item_of;     /* node -> item, MP_NONE: not drawn */
    mp__dot_item *items;
    uint32_t n_items;
    mp__dot_cluster *cl;
    uint32_t n_cl;
    uint32_t depth;        /* module depth boxes are cut at; 0: none */
    uint32_t n_boxes;      /* items of two nodes or more */
    char **keys;           /* module keys: phase digit, then the prefix */
    uint32_t n_keys;
} mp__dot_groups;

/* The separator of a node name's module path: '/' when the name holds
 * one, else '.' unless the name ends in ".OP.N" for its op (p2o.Conv.3),
 * else 0 (no hierarchy). */
char mp__dot_name_sep(const mp__node *nd);
/* The boxes of plan p's graph: drawn[n] says which nodes are drawn; o's
 * collapse options, else the automatic collapse above o->max_nodes. */
mp_status mp__dot_groups_build(const mp_plan *p, const uint8_t *drawn,
                              const mp_dot_options *o, mp__dot_groups *out);
void mp__dot_groups_free(mp_ctx *ctx, mp__dot_groups *gr);

#endif
