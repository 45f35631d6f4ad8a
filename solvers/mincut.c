/* Maximum flow and a minimum s-t cut (solvers/mincut.h): Dinic's
 * algorithm (breadth-first levels, then blocking flows along level-
 * increasing arcs), with an explicit path stack so that the depth of the
 * graph never becomes the depth of the C stack. Infinite capacities
 * become one more than the sum of the finite ones: a flow above that sum
 * proves that every cut is infinite, and the search stops there, so no
 * sum can overflow. */
#include "mincut.h"

#include <string.h>

#define NONE32 UINT32_MAX

typedef struct net {
    uint32_t n, s, t;
    uint32_t *head;  /* n + 1: arcs of v are head[v] .. head[v + 1] - 1 */
    uint32_t *to, *rev;
    uint64_t *res;   /* residual capacity */
    uint32_t *level, *it, *queue, *path;
} net;

static void net_free(mp_ctx *ctx, net *g)
{
    mp__dealloc(ctx, g->head);
    mp__dealloc(ctx, g->to);
    mp__dealloc(ctx, g->rev);
    mp__dealloc(ctx, g->res);
    mp__dealloc(ctx, g->level);
    mp__dealloc(ctx, g->it);
    mp__dealloc(ctx, g->queue);
    mp__dealloc(ctx, g->path);
}

/* The residual network: arcs in CSR order, each edge an arc and its
 * reverse (capacity 0). */
static mp_status net_build(mp_ctx *ctx, const mp__flow_prob *p, uint64_t inf,
                           net *g)
{
    size_t n1 = (size_t)p->n + 1, a2 = 2 * (size_t)p->m + 1;
    g->n = p->n;
    g->s = p->source;
    g->t = p->sink;
    g->head = mp__calloc(ctx, n1 + 1, sizeof *g->head);
    g->to = mp__alloc(ctx, a2 * sizeof *g->to);
    g->rev = mp__alloc(ctx, a2 * sizeof *g->rev);
    g->res = mp__alloc(ctx, a2 * sizeof *g->res);
    g->level = mp__alloc(ctx, n1 * sizeof *g->level);
    g->it = mp__alloc(ctx, n1 * sizeof *g->it);
    g->queue = mp__alloc(ctx, n1 * sizeof *g->queue);
    g->path = mp__alloc(ctx, n1 * sizeof *g->path);
    if (!g->head || !g->to || !g->rev || !g->res || !g->level || !g->it ||
        !g->queue || !g->path)
        return MP_ERR_NOMEM;
    for (uint32_t i = 0; i < p->m; i++) {
        g->head[p->from[i] + 1]++;
        g->head[p->to[i] + 1]++;
    }
    for (uint32_t v = 0; v < p->n; v++)
        g->head[v + 1] += g->head[v];
    memcpy(g->it, g->head, (size_t)p->n * sizeof *g->it);
    for (uint32_t i = 0; i < p->m; i++) {
        uint32_t u = p->from[i], v = p->to[i];
        uint32_t a = g->it[u]++, b = g->it[v]++;
        g->to[a] = v;
        g->to[b] = u;
        g->res[a] = p->cap[i] == MP__FLOW_INF ? inf : p->cap[i];
        g->res[b] = 0;
        g->rev[a] = b;
        g->rev[b] = a;
    }
    return MP_OK;
}

/* Levels by breadth-first search from the source over arcs with residual
 * capacity; true when the sink is reached. */
static bool net_levels(net *g)
{
    for (uint32_t v = 0; v < g->n; v++)
        g->level[v] = NONE32;
    uint32_t qh = 0, qt = 0;
    g->level[g->s] = 0;
    g->queue[qt++] = g->s;
    while (qh < qt) {
        uint32_t v = g->queue[qh++];
        for (uint32_t a = g->head[v]; a < g->head[v + 1]; a++)
            if (g->res[a] && g->level[g->to[a]] == NONE32) {
                g->level[g->to[a]] = g->level[v] + 1;
                g->queue[qt++] = g->to[a];
            }
    }
    return g->level[g->t] != NONE32;
}

/* The vertex at depth d of the current path. */
static uint32_t path_vertex(const net *g, uint32_t d)
{
    return d == 0 ? g->s : g->to[g->path[d - 1]];
}

/* One blocking flow on the level graph, added to *flow; stops as soon as
 * *flow exceeds stop. */
static void net_block(net *g, uint64_t *flow, uint64_t stop)
{
    memcpy(g->it, g->head, (size_t)g->n * sizeof *g->it);
    uint32_t d = 0, v = g->s;
    for (;;) {
        if (v == g->t) {
            uint64_t f = UINT64_MAX;
            for (uint32_t i = 0; i < d; i++)
                if (g->res[g->path[i]] < f)
                    f = g->res[g->path[i]];
            uint32_t k = d;
            for (uint32_t i = 0; i < d; i++) {
                uint32_t a = g->path[i];
                g->res[a] -= f;
                g->res[g->rev[a]] += f;
                if (!g->res[a] && k == d)
                    k = i;
            }
            *flow += f;
            if (*flow > stop)
                return;
            d = k; /* back to the tail of the first saturated arc */
            v = path_vertex(g, d);
            continue;
        }
        uint32_t end = g->head[v + 1];
        while (g->it[v] < end) {
            uint32_t a = g->it[v], w = g->to[a];
            if (g->res[a] && g->level[w] != NONE32 &&
                g->level[w] == g->level[v] + 1)
                break;
            g->it[v]++;
        }
        if (g->it[v] < end) {
            g->path[d++] = g->it[v];
            v = g->to[g->it[v]];
            continue;
        }
        /* a dead end: never visit v again in this phase */
        if (v == g->s)
            return;
        g->level[v] = NONE32;
        v = path_vertex(g, --d);
        g->it[v]++;
    }
}

/* side[v] = 1 for the source side of the cut the residual network gives. */
static void net_sides(net *g, int near_sink, uint8_t *side)
{
    uint8_t mark_val = 1;
    uint32_t start = near_sink ? g->t : g->s;
    memset(side, 0, g->n);
    uint32_t qh = 0, qt = 0;
    side[start] = mark_val;
    g->queue[qt++] = start;
    while (qh < qt) {
        uint32_t v = g->queue[qh++];
        for (uint32_t b = g->head[v]; b < g->head[v + 1]; b++) {
            uint32_t w = g->to[b];
            /* forward: the arc v -> w has room; backward: the arc w -> v
             * (the reverse of b) has room */
            uint64_t r = near_sink ? g->res[g->rev[b]] : g->res[b];
            if (r && !side[w]) {
                side[w] = 1;
                g->queue[qt++] = w;
            }
        }
    }
    if (near_sink) /* marked: reaches the sink */
        for (uint32_t v = 0; v < g->n; v++)
            side[v] = !side[v];
}

mp_status mp__mincut(mp_ctx *ctx, const mp__flow_prob *p, mp__flow_sol *s)
{
    if (!s)
        return MP_ERR_INVALID_ARG;
    memset(s, 0, sizeof *s);
    if (!p || (p->m && (!p->from || !p->to || !p->cap)))
        return MP_ERR_INVALID_ARG;
    if (p->source >= p->n || p->sink >= p->n || p->source == p->sink)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "min cut: source %u and sink %u must be distinct "
                       "vertices below %u",
                       (unsigned)p->source, (unsigned)p->sink,
                       (unsigned)p->n);
    if (p->n == UINT32_MAX || p->m > (UINT32_MAX - 1) / 2)
        return mp__err(ctx, MP_ERR_OVERFLOW,
                       "min cut: %u vertices and %u edges are too many "
                       "(at most 2^31 edges)",
                       (unsigned)p->n, (unsigned)p->m);
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->m; i++) {
        if (p->from[i] >= p->n || p->to[i] >= p->n)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                           "min cut: edge %u joins %u -> %u, past the %u "
                           "vertices",
                           (unsigned)i, (unsigned)p->from[i],
                           (unsigned)p->to[i], (unsigned)p->n);
        if (p->cap[i] != MP__FLOW_INF &&
            (!mp__add_u64(total, p->cap[i], &total) ||
             total >= (UINT64_C(1) << 62)))
            return mp__err(ctx, MP_ERR_OVERFLOW,
                           "min cut: the finite capacities sum past 2^62 "
                           "(edge %u); scale them down",
                           (unsigned)i);
    }
    net g;
    memset(&g, 0, sizeof g);
    mp_status st = net_build(ctx, p, total + 1, &g);
    if (!st && !(s->source_side = mp__alloc(ctx, (size_t)p->n + 1)))
        st = MP_ERR_NOMEM;
    if (st) {
        net_free(ctx, &g);
        mp__dealloc(ctx, s->source_side);
        s->source_side = NULL;
        return st;
    }
    uint64_t flow = 0;
    while (flow <= total && net_levels(&g))
        net_block(&g, &flow, total);
    s->value = flow > total ? MP__FLOW_INF : flow;
    net_sides(&g, p->near_sink, s->source_side);
    net_free(ctx, &g);
    return MP_OK;
}

uint64_t mp__cut_capacity(const mp__flow_prob *p, const uint8_t *side)
{
    uint64_t c = 0;
    for (uint32_t i = 0; i < p->m; i++)
        if (side[p->from[i]] && !side[p->to[i]] &&
            (p->cap[i] == MP__FLOW_INF || !mp__add_u64(c, p->cap[i], &c)))
            return MP__FLOW_INF;
    return c;
}
