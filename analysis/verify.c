/* The verifier: replays plans and checks offsets, independently of the
 * solvers that made them. Nothing here trusts a figure it can recompute. */
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ordered set of live buffers by offset (treap over indices) -------- */
typedef struct {
    uint32_t *left, *right, *prio;
    const uint64_t *key;   /* offset of buffer i */
    uint32_t root;
    uint32_t seed;
} treap;

static uint32_t rot_right(treap *t, uint32_t n)
{
    uint32_t l = t->left[n];
    t->left[n] = t->right[l];
    t->right[l] = n;
    return l;
}

static uint32_t rot_left(treap *t, uint32_t n)
{
    uint32_t r = t->right[n];
    t->right[n] = t->left[r];
    t->left[r] = n;
    return r;
}

static uint32_t treap_insert(treap *t, uint32_t n, uint32_t v)
{
    if (n == MP_NONE)
        return v;
    if (t->key[v] < t->key[n] || (t->key[v] == t->key[n] && v < n)) {
        t->left[n] = treap_insert(t, t->left[n], v);
        if (t->prio[t->left[n]] > t->prio[n])
            n = rot_right(t, n);
    } else {
        t->right[n] = treap_insert(t, t->right[n], v);
        if (t->prio[t->right[n]] > t->prio[n])
            n = rot_left(t, n);
    }
    return n;
}

static uint32_t treap_erase(treap *t, uint32_t n, uint32_t v)
{
    if (n == MP_NONE)
        return n;
    if (n == v) {
        if (t->left[n] == MP_NONE)
            return t->right[n];
        if (t->right[n] == MP_NONE)
            return t->left[n];
        if (t->prio[t->left[n]] > t->prio[t->right[n]]) {
            n = rot_right(t, n);
            t->right[n] = treap_erase(t, t->right[n], v);
        } else {
            n = rot_left(t, n);
            t->left[n] = treap_erase(t, t->left[n], v);
        }
        return n;
    }
    if (t->key[v] < t->key[n] || (t->key[v] == t->key[n] && v < n))
        t->left[n] = treap_erase(t, t->left[n], v);
    else
        t->right[n] = treap_erase(t, t->right[n], v);
    return n;
}

/* Neighbours of v (already inserted) in key order. */
static void treap_neighbours(const treap *t, uint32_t v, uint32_t *pred,
                             uint32_t *succ)
{
    *pred = *succ = MP_NONE;
    uint32_t n = t->root;
    while (n != MP_NONE) {
        if (n == v) {
            if (t->left[n] != MP_NONE) {
                uint32_t m = t->left[n];
                while (t->right[m] != MP_NONE)
                    m = t->right[m];
                *pred = m;
            }
            if (t->right[n] != MP_NONE) {
                uint32_t m = t->right[n];
                while (t->left[m] != MP_NONE)
                    m = t->left[m];
                *succ = m;
            }
            return;
        }
        if (t->key[v] < t->key[n] || (t->key[v] == t->key[n] && v < n)) {
            *succ = n;
            n = t->left[n];
        } else {
            *pred = n;
            n = t->right[n];
        }
    }
}

typedef struct {
    int64_t time;
    uint32_t buf;
    uint32_t is_start;
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->is_start != y->is_start)
        return x->is_start < y->is_start ? -1 : 1; /* ends first */
    return x->buf < y->buf ? -1 : (x->buf > y->buf);
}

/* Checks pairwise non-overlap of rectangles [start,end) x [off,off+size).
 * `label(i)` names buffer i in messages. */
typedef void (*label_fn)(const void *user, uint32_t i, char *buf, size_t cap);

static mp_status check_overlaps(mp_ctx *ctx, uint32_t n, const int64_t *start,
                                const int64_t *end, const uint64_t *off,
                                const uint64_t *size, label_fn label,
                                const void *user)
{
    event *ev = mp__alloc(ctx, ((size_t)n * 2 + 1) * sizeof *ev);
    uint32_t *mem = mp__alloc(ctx, ((size_t)n * 3 + 1) * sizeof *mem);
    if (!ev || !mem) {
        mp__dealloc(ctx, ev);
        mp__dealloc(ctx, mem);
        return MP_ERR_NOMEM;
    }
    size_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (size[i] == 0 || start[i] >= end[i])
            continue;
        ev[ne++] = (event){start[i], i, 1};
        ev[ne++] = (event){end[i], i, 0};
    }
    qsort(ev, ne, sizeof *ev, cmp_event);
    treap t = {mem, mem + n, mem + 2 * (size_t)n, off, MP_NONE, 2463534242u};
    mp_status st = MP_OK;
    for (size_t e = 0; e < ne && !st; e++) {
        uint32_t b = ev[e].buf;
        if (!ev[e].is_start) {
            t.root = treap_erase(&t, t.root, b);
            continue;
        }
        t.left[b] = t.right[b] = MP_NONE;
        t.seed ^= t.seed << 13;
        t.seed ^= t.seed >> 17;
        t.seed ^= t.seed << 5;
        t.prio[b] = t.seed;
        t.root = treap_insert(&t, t.root, b);
        uint32_t p, s;
        treap_neighbours(&t, b, &p, &s);
        uint32_t other = MP_NONE;
        if (p != MP_NONE && off[p] + size[p] > off[b])
            other = p;
        else if (s != MP_NONE && off[b] + size[b] > off[s])
            other = s;
        if (other != MP_NONE) {
            char la[160], lb[160];
            label(user, other, la, sizeof la);
            label(user, b, lb, sizeof lb);
            int64_t from = start[b] > start[other] ? start[b] : start[other];
            st = mp__err(ctx, MP_ERR_VERIFY,
                        "%s at [%llu, %llu) and %s at [%llu, %llu) overlap "
                        "in memory while both live at time %lld",
                        la, (unsigned long long)off[other],
                        (unsigned long long)(off[other] + size[other]), lb,
                        (unsigned long long)off[b],
                        (unsigned long long)(off[b] + size[b]),
                        (long long)from);
        }
    }
    mp__dealloc(ctx, ev);
    mp__dealloc(ctx, mem);
    return st;
}

/* ---- offsets ------------------------------------------------------------------ */
static void label_buffer(const void *user, uint32_t i, char *buf, size_t cap)
{
    (void)user;
    snprintf(buf, cap, "buffer %u", (unsigned)i);
}

mp_status mp_offsets_verify(mp_ctx *ctx, const mp_buffer *bufs, size_t n,
                            uint64_t alignment, uint64_t arena)
{
    if (!ctx || (n && !bufs))
        return MP_ERR_INVALID_ARG;
    if (alignment == 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    if (n >= UINT32_MAX / 3)
        return mp__err(ctx, MP_ERR_OVERFLOW, "too many buffers");
    for (size_t i = 0; i < n; i++) {
        uint64_t e;
        if (bufs[i].start >= bufs[i].end)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "buffer %zu: empty interval [%lld, %lld)", i,
                          (long long)bufs[i].start, (long long)bufs[i].end);
        if (bufs[i].offset % alignment)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "buffer %zu: offset %llu is not a multiple of %llu",
                          i, (unsigned long long)bufs[i].offset,
                          (unsigned long long)alignment);
        if (!mp__add_u64(bufs[i].offset, bufs[i].size, &e) || e > arena)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "buffer %zu: [%llu, +%llu) ends beyond the arena of "
                          "%llu bytes",
                          i, (unsigned long long)bufs[i].offset,
                          (unsigned long long)bufs[i].size,
                          (unsigned long long)arena);
    }
    int64_t *start = mp__alloc(ctx, (n + 1) * sizeof *start);
    int64_t *end = mp__alloc(ctx, (n + 1) * sizeof *end);
    uint64_t *off = mp__alloc(ctx, (n + 1) * sizeof *off);
    uint64_t *size = mp__alloc(ctx, (n + 1) * sizeof *size);
    mp_status st = MP_ERR_NOMEM;
    if (start && end && off && size) {
        for (size_t i = 0; i < n; i++) {
            start[i] = bufs[i].start;
            end[i] = bufs[i].end;
            off[i] = bufs[i].offset;
            size[i] = bufs[i].size;
        }
        st = check_overlaps(ctx, (uint32_t)n, start, end, off, size,
                            label_buffer, NULL);
    }
    mp__dealloc(ctx, start);
    mp__dealloc(ctx, end);
    mp__dealloc(ctx, off);
    mp__dealloc(ctx, size);
    return st;
}

/* ---- plans ----------------------------------------------------------------------- */
typedef struct {
    const mp_graph *g;
    const mp_plan *p;
} plan_labels;

static void label_block(const void *user, uint32_t i, char *buf, size_t cap)
{
    const plan_labels *l = user;
    const mp_block *b = &l->p->blocks[i];
    snprintf(buf, cap, "tensor '%s' (steps %u-%u)",
             l->g->tensors[b->tensor].name, (unsigned)b->first,
             (unsigned)b->end);
}

static const char *step_label(const mp_graph *g, const mp_step *s, char *buf,
                              size_t cap)
{
    bool is_node = s->kind == MP_STEP_COMPUTE || s->kind == MP_STEP_RECOMPUTE;
    snprintf(buf, cap, "%s %s '%s'", mp_step_kind_name(s->kind),
             is_node ? "node" : "tensor",
             is_node ? g->nodes[s->index].name : g->tensors[s->index].name);
    return buf;
}

/* Block of tensor t that starts at step s: blocks are sorted per tensor
 * by (tensor, first) in `order`; binary search. */
static uint32_t find_block(const mp_plan *p, const uint32_t *order,
                           uint32_t t, uint32_t s)
{
    uint32_t lo = 0, hi = p->n_blocks;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const mp_block *b = &p->blocks[order[mid]];
        if (b->tensor < t || (b->tensor == t && b->first < s))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n_blocks) {
        const mp_block *b = &p->blocks[order[lo]];
        if (b->tensor == t && b->first == s)
            return order[lo];
    }
    return MP_NONE;
}

typedef struct {
    uint32_t tensor, first, idx;
} block_key;

static int cmp_block_key(const void *a, const void *b)
{
    const block_key *x = a, *y = b;
    if (x->tensor != y->tensor)
        return x->tensor < y->tensor ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* ---- in-place reuse and fused chains (docs/memory-model.md) ---------------- */
/* The state of one replay of the schedule. A fused instance: the value a
 * node step writes of a tensor marked fused with no block starting at
 * that step; only the next node step reads it (they run as one kernel). */
typedef struct replayer {
    const mp_graph *g;
    const mp_plan *p;
    const uint32_t *order; /* blocks by (tensor, first) */
    uint32_t *open;        /* tensor -> its block now resident, MP_NONE */
    uint8_t *used;         /* block -> a step started it */
    uint8_t *computed;     /* node -> computed */
    uint8_t *on_host;      /* tensor -> offloaded to host */
    uint32_t *prev_of;     /* node step -> the node step before, MP_NONE */
    uint32_t *fused_at;    /* node step -> the tensor of the fused instance
                              it wrote, MP_NONE */
    uint32_t prev_step;    /* the latest node step, MP_NONE */
    char lb[300];          /* step labels of messages */
} replayer;

/* The tensor whose fused instance node step q reads (written by the node
 * step before it), or MP_NONE. */
static uint32_t fused_read(const replayer *R, uint32_t q)
{
    uint32_t b = R->prev_of[q];
    return b == MP_NONE ? MP_NONE : R->fused_at[b];
}

/* Every arena input of the fused chain ending at node step q (the inputs
 * of its node steps that are not fused instances) must be resident at
 * step s: a fused chain runs as one kernel at the step of its last node. */
static mp_status chain_resident(const replayer *R, uint32_t q, uint32_t s)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    const mp__node *n = &g->nodes[p->steps[q].index];
    uint32_t fin = fused_read(R, q);
    for (uint32_t i = 0; i < n->n_in; i++) {
        if (n->inputs[i] == MP_NONE)
            continue;
        uint32_t r = g->tensors[n->inputs[i]].root;
        if (mp__kind_persistent(g->tensors[r].kind) || g->tensors[r].bytes == 0)
            continue;
        if (r == fin) {
            /* the step before q is earlier: the recursion ends */
            mp_status st = chain_resident(R, R->prev_of[q], s);
            if (st)
                return st;
        } else if (R->open[r] == MP_NONE) {
            return mp__err(p->ctx, MP_ERR_VERIFY,
                          "step %u: input '%s' of node '%s' (inside a fused "
                          "chain) is not resident when the chain runs",
                          (unsigned)s, g->tensors[r].name, n->name);
        }
    }
    return MP_OK;
}

/* Node step s reads the fused instance `fin` written by the node step
 * before: it must read it, and be a pointwise node with one output of
 * its size. */
static mp_status check_fused_reader(replayer *R, uint32_t s, uint32_t fin)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    const mp__node *cn = &g->nodes[p->steps[s].index];
    const mp__tensor *tt = &g->tensors[fin];
    bool reads = false;
    uint32_t z = MP_NONE, outs = 0;
    for (uint32_t i = 0; i < cn->n_in; i++)
        reads |= cn->inputs[i] != MP_NONE &&
                 g->tensors[cn->inputs[i]].root == fin;
    if (!reads)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): the fused value of '%s' written at step "
                      "%u is not read here; a fused value is read by the "
                      "node step right after the one that writes it",
                      (unsigned)s,
                      step_label(g, &p->steps[s], R->lb, sizeof R->lb),
                      tt->name, (unsigned)R->prev_of[s]);
    for (uint32_t o = 0; o < cn->n_out; o++)
        if (cn->outputs[o] != MP_NONE) {
            z = cn->outputs[o];
            outs++;
        }
    if (!mp__node_pointwise(cn) || outs != 1 ||
        g->tensors[z].bytes != tt->bytes)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "tensor '%s' is marked fused but its reader '%s' (%s) "
                      "is not a pointwise op with one output of its size",
                      tt->name, cn->name, cn->op);
    return MP_OK;
}

/* True when node step q reads storage root x at an input position its
 * registry entry lets output 0 overwrite, directly or inside the fused
 * chain that ends at q. */
static bool reads_overwritable(const replayer *R, uint32_t q, uint32_t x)
{
    const mp_graph *g = R->g;
    const mp__node *n = &g->nodes[R->p->steps[q].index];
    uint32_t fin = fused_read(R, q);
    for (uint32_t i = 0; i < n->n_in; i++) {
        if (n->inputs[i] == MP_NONE)
            continue;
        uint32_t r = g->tensors[n->inputs[i]].root;
        if (r == fin) {
            if (reads_overwritable(R, R->prev_of[q], x))
                return true;
        } else if (r == x && mp__op_may_overwrite(n->def, i)) {
            /* (and no other input reads a part of x) */
            return mp__node_reads_whole(g, n, x);
        }
    }
    return false;
}

/* Block b (output o of the node at step s) takes over the memory of the
 * tensor x it names: x must be resident, die at this step (its block ends
 * here and it is closed now, so any later read or FREE of it fails), be a
 * tensor the node may overwrite, not a graph input or output, and share
 * b's offset and size. */
static mp_status check_inplace(const replayer *R, uint32_t s, uint32_t o,
                               uint32_t b)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    uint32_t *open = R->open;
    uint32_t node = p->steps[s].index;
    mp_ctx *ctx = p->ctx;
    const mp__node *n = &g->nodes[node];
    uint32_t x = p->block_over[b];
    const mp__tensor *ty = &g->tensors[p->blocks[b].tensor];
    if (x >= g->n_tensors)
        return mp__err(ctx, MP_ERR_VERIFY, "tensor '%s': in place over no "
                      "tensor %u", ty->name, (unsigned)x);
    const mp__tensor *tx = &g->tensors[x];
    if (o != 0)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: '%s' is output %u of node '%s'; only output "
                      "0 may be written in place",
                      (unsigned)s, ty->name, (unsigned)o, n->name);
    if (!mp__tensor_in_arena(tx) || tx->producer == MP_NONE ||
        (tx->flags & MP__TF_OUTPUT))
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: '%s' is written in place over '%s', which is "
                      "%s",
                      (unsigned)s, ty->name, tx->name,
                      !mp__tensor_in_arena(tx) ? "not in the arena"
                      : tx->producer == MP_NONE ? "a graph input"
                                                : "a graph output");
    if (tx->bytes != ty->bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: '%s' (%llu bytes) is written in place over "
                      "'%s' (%llu bytes): sizes differ",
                      (unsigned)s, ty->name, (unsigned long long)ty->bytes,
                      tx->name, (unsigned long long)tx->bytes);
    if (!reads_overwritable(R, s, x))
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: node '%s' (%s) writes '%s' in place over "
                      "'%s', which is not an input it may overwrite",
                      (unsigned)s, n->name, n->op, ty->name, tx->name);
    uint32_t bx = open[x];
    if (bx == MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: '%s' is written in place over '%s', which is "
                      "not resident",
                      (unsigned)s, ty->name, tx->name);
    const mp_block *a = &p->blocks[bx];
    if (a->end != s)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u: '%s' is written in place over '%s', whose "
                      "block claims to end at step %u",
                      (unsigned)s, ty->name, tx->name, (unsigned)a->end);
    open[x] = MP_NONE; /* same memory: checked by check_inplace_memory */
    return MP_OK;
}

/* After the overlap sweep: a block written in place over x lies exactly
 * on x's block that ends where it starts (else x, still read at that
 * step, could be clobbered by a block starting there). */
static mp_status check_inplace_memory(const mp_graph *g, const mp_plan *p,
                                      const uint32_t *order)
{
    if (!p->block_over)
        return MP_OK;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        uint32_t x = p->block_over[i];
        if (x == MP_NONE)
            continue;
        const mp_block *bb = &p->blocks[i];
        /* x's block with the latest first step before bb->first */
        uint32_t lo = 0, hi = p->n_blocks;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            const mp_block *m = &p->blocks[order[mid]];
            if (m->tensor < x || (m->tensor == x && m->first < bb->first))
                lo = mid + 1;
            else
                hi = mid;
        }
        const mp_block *a = lo ? &p->blocks[order[lo - 1]] : NULL;
        if (!a || a->tensor != x || a->end != bb->first)
            return mp__err(p->ctx, MP_ERR_VERIFY,
                          "tensor '%s' is written in place over '%s', which "
                          "has no block ending at step %u",
                          g->tensors[bb->tensor].name,
                          x < g->n_tensors ? g->tensors[x].name : "?",
                          (unsigned)bb->first);
        if (a->offset != bb->offset || a->size != bb->size)
            return mp__err(p->ctx, MP_ERR_VERIFY,
                          "step %u: '%s' at [%llu, +%llu) is written in "
                          "place over '%s' at [%llu, +%llu): not the same "
                          "memory",
                          (unsigned)bb->first, g->tensors[bb->tensor].name,
                          (unsigned long long)bb->offset,
                          (unsigned long long)bb->size, g->tensors[x].name,
                          (unsigned long long)a->offset,
                          (unsigned long long)a->size);
    }
    return MP_OK;
}

/* For a read of a tensor that is not resident: the block that overwrote
 * it in place before step s, if any (error path only). */
static uint32_t overwritten_by(const mp_plan *p, uint32_t x, uint32_t s)
{
    uint32_t best = MP_NONE;
    if (!p->block_over)
        return best;
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->block_over[i] == x && p->blocks[i].first <= s &&
            (best == MP_NONE || p->blocks[i].first > p->blocks[best].first))
            best = i;
    return best;
}

/* Replays the schedule. `open[t]` is the block of tensor t now resident. */
/* OFFLOAD ends the tensor's device block (it is then on host) and needs
 * it resident; PREFETCH starts a new block at this step and needs the
 * tensor on host and not resident. */
static mp_status replay_transfer(const mp_graph *g, const mp_plan *p,
                                 const uint32_t *order, uint32_t *open,
                                 uint8_t *used, uint8_t *on_host, uint32_t s)
{
    mp_ctx *ctx = p->ctx;
    char lb[300];
    const mp_step *sp = &p->steps[s];
    const mp__tensor *tt = &g->tensors[sp->index];
    if (!mp__tensor_in_arena(tt))
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): the tensor takes no arena memory",
                      (unsigned)s, step_label(g, sp, lb, sizeof lb));
    if (sp->kind == MP_STEP_OFFLOAD) {
        uint32_t b = open[sp->index];
        if (b == MP_NONE)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "step %u (%s): the tensor is not resident",
                          (unsigned)s, step_label(g, sp, lb, sizeof lb));
        if (p->blocks[b].end != s)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "step %u (%s): its block claims to end at step %u",
                          (unsigned)s, step_label(g, sp, lb, sizeof lb),
                          (unsigned)p->blocks[b].end);
        open[sp->index] = MP_NONE;
        on_host[sp->index] = 1;
        return MP_OK;
    }
    if (open[sp->index] != MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): the tensor is already resident",
                      (unsigned)s, step_label(g, sp, lb, sizeof lb));
    if (!on_host[sp->index])
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): the tensor was never offloaded to host",
                      (unsigned)s, step_label(g, sp, lb, sizeof lb));
    uint32_t b = find_block(p, order, sp->index, s);
    if (b == MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): no block starts at this step",
                      (unsigned)s, step_label(g, sp, lb, sizeof lb));
    if (p->blocks[b].size < tt->bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "tensor '%s': block of %llu bytes is smaller than the "
                      "tensor (%llu bytes)",
                      tt->name, (unsigned long long)p->blocks[b].size,
                      (unsigned long long)tt->bytes);
    if (p->block_over && p->block_over[b] != MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): a prefetched block claims to be written "
                      "in place over another tensor; only a node's output "
                      "can be",
                      (unsigned)s, step_label(g, sp, lb, sizeof lb));
    used[b] = 1;
    open[sp->index] = b;
    return MP_OK;
}


/* graph inputs are resident from the start */
static mp_status open_graph_inputs(replayer *R)
{
    const mp_graph *g = R->g;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer != MP_NONE || !mp__tensor_in_arena(tt) ||
            (tt->n_cons == 0 && !(tt->flags & MP__TF_OUTPUT)))
            continue;
        uint32_t b = find_block(R->p, R->order, t, 0);
        if (b == MP_NONE)
            return mp__err(R->p->ctx, MP_ERR_VERIFY,
                          "input tensor '%s' has no block starting at step 0",
                          tt->name);
        if (R->p->block_over && R->p->block_over[b] != MP_NONE)
            return mp__err(R->p->ctx, MP_ERR_VERIFY,
                          "input tensor '%s' claims to be written in place "
                          "over another tensor; only a node's output can be",
                          tt->name);
        R->open[t] = b;
        R->used[b] = 1;
    }
    return MP_OK;
}

/* FREE ends the block of a resident arena tensor, not a graph output,
 * at this step. */
static mp_status replay_free(replayer *R, uint32_t s)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    mp_ctx *ctx = p->ctx;
    const mp_step *sp = &p->steps[s];
    const mp__tensor *tt = &g->tensors[sp->index];
    if (!mp__tensor_in_arena(tt))
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): the tensor takes no arena memory",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb));
    uint32_t b = R->open[sp->index];
    if (b == MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): the tensor is not resident",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb));
    if (p->blocks[b].end != s)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): its block claims to end at step "
                      "%u",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb),
                      (unsigned)p->blocks[b].end);
    if (tt->flags & MP__TF_OUTPUT)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "step %u (%s): graph output freed", (unsigned)s,
                      step_label(g, sp, R->lb, sizeof R->lb));
    R->open[sp->index] = MP_NONE;
    return MP_OK;
}

/* Input t of the node at step s, when in the arena, is resident (the
 * fused instance the node step before wrote: the chain's inputs
 * resident). */
static mp_status replay_input(replayer *R, uint32_t s, uint32_t t)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    const mp_step *sp = &p->steps[s];
    if (t == MP_NONE)
        return MP_OK;
    const mp__tensor *tt = &g->tensors[t];
    uint32_t r = tt->root;
    if (mp__kind_persistent(g->tensors[r].kind) || g->tensors[r].bytes == 0)
        return MP_OK;
    if (r == fused_read(R, s)) /* runs fused with the step before */
        return chain_resident(R, s, s);
    uint32_t ob = R->open[r] == MP_NONE ? overwritten_by(p, r, s) : MP_NONE;
    if (ob != MP_NONE)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): input '%s' is read after '%s' "
                      "was written in place over it at step %u",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb),
                      g->tensors[r].name,
                      g->tensors[p->blocks[ob].tensor].name,
                      (unsigned)p->blocks[ob].first);
    if (R->open[r] == MP_NONE)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): input '%s'%s%s%s is not resident%s",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb),
                      tt->name, r != t ? " (a view of '" : "",
                      r != t ? g->tensors[r].name : "",
                      r != t ? "')" : "",
                      p->fused && p->fused[r]
                          ? " (a fused value is read only by the node step "
                            "right after the one that writes it)"
                          : "");
    return MP_OK;
}

/* Output o of the node at step s, when in the arena and not fused,
 * starts a block at this step, large enough, and is not resident before
 * (written in place: over an input that dies here). */
static mp_status replay_output(replayer *R, uint32_t s, uint32_t o)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    const mp_step *sp = &p->steps[s];
    uint32_t t = g->nodes[sp->index].outputs[o];
    const mp__tensor *tt = &g->tensors[t];
    if (!mp__tensor_in_arena(tt))
        return MP_OK;
    if (R->open[t] != MP_NONE)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): output '%s' is still resident",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb),
                      tt->name);
    uint32_t b = find_block(p, R->order, t, s);
    if (b == MP_NONE && p->fused && p->fused[t]) {
        /* a fused instance (check_claims checked the producer) */
        R->fused_at[s] = t;
        return MP_OK;
    }
    if (b == MP_NONE)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): output '%s' has no block "
                      "starting at this step",
                      (unsigned)s, step_label(g, sp, R->lb, sizeof R->lb),
                      tt->name);
    if (p->blocks[b].size < tt->bytes)
        return mp__err(p->ctx, MP_ERR_VERIFY,
                      "tensor '%s': block of %llu bytes is smaller "
                      "than the tensor (%llu bytes)",
                      tt->name, (unsigned long long)p->blocks[b].size,
                      (unsigned long long)tt->bytes);
    if (p->block_over && p->block_over[b] != MP_NONE) {
        mp_status st = check_inplace(R, s, o, b);
        if (st)
            return st;
    }
    R->used[b] = 1;
    R->open[t] = b;
    return MP_OK;
}

/* COMPUTE runs a node once, RECOMPUTE one already computed; then its
 * inputs and outputs. */
static mp_status replay_node(replayer *R, uint32_t s)
{
    const mp_step *sp = &R->p->steps[s];
    const mp__node *n = &R->g->nodes[sp->index];
    if (sp->kind == MP_STEP_COMPUTE && R->computed[sp->index])
        return mp__err(R->p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): node computed twice (use RECOMPUTE)",
                      (unsigned)s, step_label(R->g, sp, R->lb, sizeof R->lb));
    if (sp->kind == MP_STEP_RECOMPUTE && !R->computed[sp->index])
        return mp__err(R->p->ctx, MP_ERR_VERIFY,
                      "step %u (%s): recomputed before being computed",
                      (unsigned)s, step_label(R->g, sp, R->lb, sizeof R->lb));
    R->computed[sp->index] = 1;
    R->prev_of[s] = R->prev_step;
    R->fused_at[s] = MP_NONE;
    uint32_t fin = fused_read(R, s);
    mp_status st;
    if (fin != MP_NONE && (st = check_fused_reader(R, s, fin)))
        return st;
    for (uint32_t i = 0; i < n->n_in; i++)
        if ((st = replay_input(R, s, n->inputs[i])))
            return st;
    for (uint32_t o = 0; o < n->n_out; o++)
        if ((st = replay_output(R, s, o)))
            return st;
    R->prev_step = s;
    return MP_OK;
}

/* At the end: every node computed, the blocks of the tensors still
 * resident end there, the graph outputs resident, every block used. */
static mp_status check_replay_end(const replayer *R)
{
    const mp_graph *g = R->g;
    const mp_plan *p = R->p;
    mp_ctx *ctx = p->ctx;
    uint32_t nt = (uint32_t)g->n_tensors;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (!R->computed[v])
            return mp__err(ctx, MP_ERR_VERIFY,
                          "node '%s' is never computed", g->nodes[v].name);
    if (R->prev_step != MP_NONE && R->fused_at[R->prev_step] != MP_NONE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "the fused value of '%s' written at step %u is never "
                      "read",
                      g->tensors[R->fused_at[R->prev_step]].name,
                      (unsigned)R->prev_step);
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (R->open[t] != MP_NONE && p->blocks[R->open[t]].end != p->n_steps)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s': resident at the end but its block "
                          "ends at step %u",
                          tt->name, (unsigned)p->blocks[R->open[t]].end);
        if ((tt->flags & MP__TF_OUTPUT) &&
            !mp__kind_persistent(g->tensors[tt->root].kind) &&
            g->tensors[tt->root].bytes && R->open[tt->root] == MP_NONE)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "graph output '%s' is not resident at the end",
                          tt->name);
    }
    for (uint32_t b = 0; b < p->n_blocks; b++)
        if (!R->used[b])
            return mp__err(ctx, MP_ERR_VERIFY,
                          "block %u (tensor '%s' from step %u) matches no "
                          "step of the schedule",
                          (unsigned)b,
                          p->blocks[b].tensor < nt
                              ? g->tensors[p->blocks[b].tensor].name
                              : "?",
                          (unsigned)p->blocks[b].first);
    return MP_OK;
}

/* An optimizer step (phase optimizer) updates the persistent tensors it
 * reads (the weight, its states) in place: a node of the forward or
 * backward pass that reads one of them (or a view of it) at a later
 * step, a recompute above all, would read the updated values. uses
 * `upd` (a tensor's step of update, n_tensors entries). */
static mp_status check_weight_updates(const mp_graph *g, const mp_plan *p,
                                      uint32_t *upd)
{
    for (uint32_t t = 0; t < g->n_tensors; t++)
        upd[t] = MP_NONE;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mp_step *sp = &p->steps[s];
        if (sp->kind != MP_STEP_COMPUTE && sp->kind != MP_STEP_RECOMPUTE)
            continue;
        const mp__node *n = &g->nodes[sp->index];
        bool opt = n->phase == MP_PHASE_OPTIMIZER;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t t = mp__persistent_root(g, n->inputs[i]);
            if (t == MP_NONE)
                continue;
            if (opt) {
                if (upd[t] == MP_NONE)
                    upd[t] = s;
            } else if (upd[t] != MP_NONE) {
                char lb[300];
                return mp__err(p->ctx, MP_ERR_VERIFY,
                               "step %u (%s) reads '%s' after the optimizer "
                               "step at step %u ('%s') updated it in place; "
                               "every reader of a weight, recomputes "
                               "included, must come before its update",
                               (unsigned)s, step_label(g, sp, lb, sizeof lb),
                               g->tensors[t].name, (unsigned)upd[t],
                               g->nodes[p->steps[upd[t]].index].name);
            }
        }
    }
    return MP_OK;
}

static mp_status replay(const mp_graph *g, const mp_plan *p,
                        const uint32_t *order, uint32_t *open, uint8_t *used,
                        uint8_t *computed, uint8_t *on_host, uint32_t *per_step)
{
    replayer R = {g,        p,       order,
                  open,     used,    computed,
                  on_host,  per_step, per_step + p->n_steps + 1,
                  MP_NONE,  {0}};
    for (uint32_t t = 0; t < g->n_tensors; t++)
        open[t] = MP_NONE;
    mp_status st = open_graph_inputs(&R);
    for (uint32_t s = 0; s < p->n_steps && !st; s++) {
        const mp_step *sp = &p->steps[s];
        bool is_node =
            sp->kind == MP_STEP_COMPUTE || sp->kind == MP_STEP_RECOMPUTE;
        if ((unsigned)sp->kind > MP_STEP_PREFETCH ||
            sp->index >= (is_node ? g->n_nodes : g->n_tensors))
            return mp__err(p->ctx, MP_ERR_VERIFY, "step %u: invalid step",
                          (unsigned)s);
        if (sp->kind == MP_STEP_OFFLOAD || sp->kind == MP_STEP_PREFETCH)
            st = replay_transfer(g, p, order, open, used, on_host, s);
        else if (sp->kind == MP_STEP_FREE)
            st = replay_free(&R, s);
        else
            st = replay_node(&R, s);
    }
    return st ? st : check_replay_end(&R);
}

/* Memory pools: offsets are per pool; the checks below see one
 * address space where pool k starts at base[k], the sum of the arenas of
 * pools 0..k-1 (base[k] = 0 for a plan without pools). Each block must lie
 * within its pool's reported arena, each arena within the pool's
 * capacity, and the plan's arena is their sum. */
static mp_status pool_bases(const mp_graph *g, const mp_plan *p,
                            uint64_t base[MP__MAX_POOLS])
{
    mp_ctx *ctx = p->ctx;
    base[0] = 0;
    if (!p->block_pool)
        return MP_OK;
    if (!p->n_pools || !p->pools || p->n_pools > MP__MAX_POOLS)
        return mp__err(ctx, MP_ERR_VERIFY, "plan has blocks in pools but %u "
                      "pools", (unsigned)p->n_pools);
    uint64_t sum = 0;
    for (uint32_t k = 0; k < p->n_pools; k++) {
        base[k] = sum;
        if (p->pools[k].arena_bytes > p->pools[k].capacity ||
            !mp__add_u64(sum, p->pools[k].arena_bytes, &sum))
            return mp__err(ctx, MP_ERR_VERIFY,
                          "pool '%s': arena %llu bytes above its capacity "
                          "%llu",
                          p->pools[k].name,
                          (unsigned long long)p->pools[k].arena_bytes,
                          (unsigned long long)p->pools[k].capacity);
    }
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *bl = &p->blocks[i];
        uint32_t k = p->block_pool[i];
        if (k >= p->n_pools || bl->offset > p->pools[k].arena_bytes ||
            bl->size > p->pools[k].arena_bytes - bl->offset)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s' at [%llu, +%llu) lies outside pool "
                          "%u's arena",
                          g->tensors[bl->tensor].name,
                          (unsigned long long)bl->offset,
                          (unsigned long long)bl->size, (unsigned)k);
    }
    if (sum != p->fig.arena_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported arena %llu bytes is not the sum of the "
                      "pools' arenas (%llu)",
                      (unsigned long long)p->fig.arena_bytes,
                      (unsigned long long)sum);
    return MP_OK;
}

static mp_status check_geometry(const mp_graph *g, const mp_plan *p)
{
    mp_ctx *ctx = p->ctx;
    const mp_figures *f = &p->fig;
    uint64_t align = f->alignment; /* >= 1: check_claims */
    uint64_t arena = 0, no_reuse = 0;
    uint32_t n = p->n_blocks;
    uint64_t base[MP__MAX_POOLS];
    mp_status pst = pool_bases(g, p, base);
    if (pst)
        return pst;
    for (uint32_t i = 0; i < n; i++) {
        const mp_block *b = &p->blocks[i];
        uint64_t e, vo = b->offset + base[p->block_pool ? p->block_pool[i] : 0];
        if (b->offset % align || b->size % align)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s': offset %llu / size %llu not aligned to "
                          "%llu",
                          g->tensors[b->tensor].name,
                          (unsigned long long)b->offset,
                          (unsigned long long)b->size,
                          (unsigned long long)align);
        if (!mp__add_u64(vo, b->size, &e) ||
            !mp__add_u64(no_reuse, b->size, &no_reuse))
            return mp__err(ctx, MP_ERR_VERIFY, "tensor '%s': offset overflows",
                          g->tensors[b->tensor].name);
        if (e > f->arena_bytes)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s' at [%llu, %llu) lies outside the arena "
                          "of %llu bytes",
                          g->tensors[b->tensor].name,
                          (unsigned long long)b->offset,
                          (unsigned long long)e,
                          (unsigned long long)f->arena_bytes);
        if (e > arena)
            arena = e;
    }
    if (arena != f->arena_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported arena %llu bytes, but the blocks end at %llu",
                      (unsigned long long)f->arena_bytes,
                      (unsigned long long)arena);
    int64_t *start = mp__alloc(ctx, ((size_t)n + 1) * sizeof *start);
    int64_t *end = mp__alloc(ctx, ((size_t)n + 1) * sizeof *end);
    uint64_t *off = mp__alloc(ctx, ((size_t)n + 1) * sizeof *off);
    uint64_t *size = mp__alloc(ctx, ((size_t)n + 1) * sizeof *size);
    mp_status st = MP_ERR_NOMEM;
    if (start && end && off && size) {
        for (uint32_t i = 0; i < n; i++) {
            start[i] = p->blocks[i].first;
            end[i] = p->blocks[i].end;
            off[i] = p->blocks[i].offset +
                     base[p->block_pool ? p->block_pool[i] : 0];
            size[i] = p->blocks[i].size;
        }
        plan_labels l = {g, p};
        st = check_overlaps(ctx, n, start, end, off, size, label_block, &l);
    }
    mp__dealloc(ctx, start);
    mp__dealloc(ctx, end);
    mp__dealloc(ctx, off);
    mp__dealloc(ctx, size);
    if (st)
        return st;
    if (no_reuse != f->no_reuse_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported no-reuse bytes %llu, replayed %llu",
                      (unsigned long long)f->no_reuse_bytes,
                      (unsigned long long)no_reuse);
    return MP_OK;
}

static mp_status check_figures(const mp_graph *g, const mp_plan *p)
{
    mp_ctx *ctx = p->ctx;
    const mp_figures *f = &p->fig;
    /* live bytes recomputed from the blocks, not read from the plan; the
     * sum of all sizes fits in 64 bits (check_geometry), so the running
     * sum, in unsigned arithmetic, does too */
    uint64_t *delta = mp__calloc(ctx, 2 * ((size_t)p->n_steps + 1),
                                 sizeof *delta);
    if (!delta)
        return MP_ERR_NOMEM;
    uint64_t *minus = delta + p->n_steps + 1;
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        if (b->first >= b->end || b->end > p->n_steps) {
            mp__dealloc(ctx, delta);
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s': block interval [%u, %u) is invalid",
                          g->tensors[b->tensor].name, (unsigned)b->first,
                          (unsigned)b->end);
        }
        delta[b->first] += b->size;
        minus[b->end] += b->size;
    }
    uint64_t cur = 0, lb = 0;
    uint32_t first_peak = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        cur = cur + delta[s] - minus[s];
        if (cur > lb) {
            lb = cur;
            first_peak = s;
        }
    }
    mp__dealloc(ctx, delta);
    if (lb != f->lower_bound_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported lower bound %llu bytes, replayed %llu",
                      (unsigned long long)f->lower_bound_bytes,
                      (unsigned long long)lb);
    if (f->peak_step != first_peak)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported peak step %u, but the live bytes first reach "
                      "their maximum %llu at step %u",
                      (unsigned)f->peak_step, (unsigned long long)lb,
                      (unsigned)first_peak);
    uint64_t pers = mp__plan_persistent_bytes(g), peak;
    if (pers != f->persistent_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported persistent bytes %llu, replayed %llu",
                      (unsigned long long)f->persistent_bytes,
                      (unsigned long long)pers);
    if (!mp__add_u64(f->arena_bytes, pers, &peak) || peak != f->peak_bytes)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported peak %llu bytes is not arena + persistent "
                      "(%llu)",
                      (unsigned long long)f->peak_bytes,
                      (unsigned long long)peak);
    if (f->status == MP_SOLVE_OPTIMAL && f->arena_bytes != lb)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "plan claims to be optimal but its arena (%llu) is "
                      "above the lower bound (%llu)",
                      (unsigned long long)f->arena_bytes,
                      (unsigned long long)lb);
    if (f->status != MP_SOLVE_OPTIMAL && f->arena_bytes == lb)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "plan claims to be %s but its arena equals the lower "
                      "bound (%llu bytes): it is optimal",
                      mp_solve_status_name(f->status),
                      (unsigned long long)lb);
    return MP_OK;
}

/* What a plan claims about itself before any replay: an alignment of at
 * least 1, a solve time that is a non-negative number, a status a plan
 * can have, a peak step inside the schedule, every block exactly its
 * tensor's size rounded up to the alignment (a larger block would hide
 * a wrong size from the overlap sweep, a smaller one lets the tensor's
 * real bytes overlap its neighbours), and every fused tensor an arena
 * tensor some node produces. */
static mp_status check_claims(const mp_graph *g, const mp_plan *p)
{
    mp_ctx *ctx = g->ctx;
    const mp_figures *f = &p->fig;
    if (f->alignment == 0)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "plan alignment is 0; it must be at least 1");
    if (!isfinite(f->solve_seconds) || f->solve_seconds < 0)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "plan solve time %g seconds is not a finite "
                      "non-negative number",
                      f->solve_seconds);
    if (f->status != MP_SOLVE_OPTIMAL && f->status != MP_SOLVE_FEASIBLE)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "plan status '%s': a plan is 'optimal' (its arena "
                      "equals the lower bound) or 'feasible'",
                      mp_solve_status_name(f->status));
    if (p->n_steps ? f->peak_step >= p->n_steps : f->peak_step != 0)
        return mp__err(ctx, MP_ERR_VERIFY,
                      "reported peak step %u is not a step of the schedule "
                      "(%u steps)",
                      (unsigned)f->peak_step, (unsigned)p->n_steps);
    for (uint32_t i = 0; i < p->n_blocks; i++) {
        const mp_block *b = &p->blocks[i];
        const mp__tensor *tt = &g->tensors[b->tensor];
        uint64_t want;
        if (!mp__align_up(tt->bytes, f->alignment, &want))
            return mp__err(ctx, MP_ERR_VERIFY,
                          "block %u (tensor '%s'): the tensor's %llu bytes "
                          "rounded up to the alignment %llu overflow 64 bits",
                          (unsigned)i, tt->name,
                          (unsigned long long)tt->bytes,
                          (unsigned long long)f->alignment);
        if (b->size != want)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "block %u (tensor '%s' from step %u): size %llu "
                          "bytes is %s than the tensor: expected %llu (its "
                          "%llu bytes rounded up to the alignment %llu)",
                          (unsigned)i, tt->name, (unsigned)b->first,
                          (unsigned long long)b->size,
                          b->size < want ? "smaller" : "larger",
                          (unsigned long long)want,
                          (unsigned long long)tt->bytes,
                          (unsigned long long)f->alignment);
    }
    for (uint32_t t = 0; p->fused && t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (!p->fused[t])
            continue;
        const char *why = mp__kind_persistent(tt->kind)
                              ? "a weight or constant (not in the arena)"
                          : tt->alias_of != MP_NONE ? "a view of another tensor"
                          : tt->bytes == 0          ? "empty"
                          : tt->producer == MP_NONE ? "a graph input"
                                                    : NULL;
        if (why)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s' is marked fused but is %s; only an "
                          "arena tensor produced by a node can be fused",
                          tt->name, why);
        const mp__node *pn = &g->nodes[tt->producer];
        uint32_t outs = 0;
        for (uint32_t o = 0; o < pn->n_out; o++)
            outs += pn->outputs[o] != MP_NONE;
        if (!mp__node_pointwise(pn) || outs != 1)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s' is marked fused but node '%s' (%s) is "
                          "not a pointwise op with one output",
                          tt->name, pn->name, pn->op);
        if (tt->flags & MP__TF_OUTPUT)
            return mp__err(ctx, MP_ERR_VERIFY,
                          "tensor '%s' is marked fused but is a graph output",
                          tt->name);
    }
    return MP_OK;
}

mp_status mp_verify_plan(const mp_graph *g, const mp_plan *p)
{
    if (!g || !p)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = g->ctx;
    if (!g->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    for (uint32_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].tensor >= g->n_tensors)
            return mp__err(ctx, MP_ERR_VERIFY, "block %u: no tensor %u",
                          (unsigned)i, (unsigned)p->blocks[i].tensor);
        else if (!mp__tensor_in_arena(&g->tensors[p->blocks[i].tensor]))
            return mp__err(ctx, MP_ERR_VERIFY,
                          "block %u: tensor '%s' takes no arena memory",
                          (unsigned)i, g->tensors[p->blocks[i].tensor].name);
    mp_status cst = check_claims(g, p);
    if (cst)
        return cst;
    uint32_t nb = p->n_blocks, nt = (uint32_t)g->n_tensors;
    uint32_t *order = mp__alloc(ctx, ((size_t)nb + 1) * sizeof *order);
    block_key *keys = mp__alloc(ctx, ((size_t)nb + 1) * sizeof *keys);
    uint32_t *open = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *open);
    uint8_t *used = mp__calloc(ctx, (size_t)nb + 1, 1);
    uint8_t *computed = mp__calloc(ctx, g->n_nodes + 1, 1);
    uint8_t *on_host = mp__calloc(ctx, (size_t)nt + 1, 1);
    uint32_t *per_step = mp__alloc(ctx, 2 * ((size_t)p->n_steps + 1) *
                                            sizeof *per_step);
    mp_status st = MP_ERR_NOMEM;
    if (order && keys && open && used && computed && on_host && per_step) {
        for (uint32_t i = 0; i < nb; i++)
            keys[i] = (block_key){p->blocks[i].tensor, p->blocks[i].first, i};
        qsort(keys, nb, sizeof *keys, cmp_block_key);
        for (uint32_t i = 0; i < nb; i++)
            order[i] = keys[i].idx;
        st = MP_OK;
        for (uint32_t i = 1; i < nb && !st; i++) {
            const mp_block *a = &p->blocks[order[i - 1]];
            const mp_block *b = &p->blocks[order[i]];
            if (a->tensor == b->tensor && a->first == b->first)
                st = mp__err(ctx, MP_ERR_VERIFY,
                            "tensor '%s' has two blocks starting at step %u",
                            g->tensors[a->tensor].name, (unsigned)a->first);
        }
        if (!st)
            st = replay(g, p, order, open, used, computed, on_host, per_step);
        if (!st)
            st = check_weight_updates(g, p, open);
        if (!st)
            st = check_geometry(g, p);
        if (!st)
            st = check_inplace_memory(g, p, order);
        if (!st)
            st = check_figures(g, p);
    }
    mp__dealloc(ctx, order);
    mp__dealloc(ctx, keys);
    mp__dealloc(ctx, open);
    mp__dealloc(ctx, used);
    mp__dealloc(ctx, computed);
    mp__dealloc(ctx, on_host);
    mp__dealloc(ctx, per_step);
    return st;
}
