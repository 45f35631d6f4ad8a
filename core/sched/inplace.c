/* In-place reuse and fused pointwise chains (issue 4).
 *
 * Both are rewrites of a schedule (COMPUTE/RECOMPUTE/FREE steps) made when
 * a plan is built from it (mp__plan_from_schedule), so that every schedule
 * (the default order, a reordered one, a recompute schedule) gets them:
 *
 * - fuse: a tensor y produced by a pointwise node P whose only reader is
 *   a pointwise node C computed right after P (only FREE steps between),
 *   with C's output of y's byte size, is *fused*: P and C run as one
 *   kernel, y never exists in memory (no block). The inputs of P must then
 *   stay resident until C runs: their FREE steps move after C.
 * - in place: output 0 of a node whose registry entry allows it takes over
 *   the memory of an input that dies at that node (no later reader, also
 *   through views or, with fuse, through the fused chain ending there).
 *   The input's FREE step disappears: its block ends at the step that
 *   computes the output, whose block starts there at the same offset.
 *
 * The rules are documented in docs/memory-model.md. The verifier
 * (analysis/verify.c) checks the result without calling anything here. */
#include "sched.h"

#include <string.h>

typedef struct {
    uint32_t x;    /* tensor that dies at the step */
    uint32_t f;    /* index of its FREE step */
    uint32_t next; /* next candidate of the same step */
} cand;

/* Per tensor: 1 when the tensor or a view of it is a graph output (its
 * memory must survive to the end), 2 when another tensor views it. */
static uint8_t *storage_flags(const mp_graph *g)
{
    uint8_t *fl = mp__calloc(g->ctx, g->n_tensors + 1, 1);
    if (!fl)
        return NULL;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->flags & MP__TF_OUTPUT)
            fl[tt->root] |= 1;
        if (tt->root != t)
            fl[tt->root] |= 2;
    }
    return fl;
}

/* The single arena output of a pointwise node, or MP_NONE. */
static uint32_t pointwise_out(const mp_graph *g, uint32_t node)
{
    const mp__node *n = &g->nodes[node];
    if (!mp__op_pointwise(n->def))
        return MP_NONE;
    uint32_t y = MP_NONE;
    for (uint32_t o = 0; o < n->n_out; o++) {
        if (n->outputs[o] == MP_NONE)
            continue;
        if (y != MP_NONE)
            return MP_NONE;
        y = n->outputs[o];
    }
    return y;
}

/* Marks fused tensors given the node steps of the schedule (next_ns: the
 * next node step after each node step, MP_NONE at the end). */
static void mark_fused(const mp_graph *g, const mp_step *steps, uint32_t n,
                       const uint32_t *next_ns, const uint8_t *sf,
                       uint8_t *fused, uint32_t *count)
{
    for (uint32_t s = 0; s < n; s++) {
        if (steps[s].kind != MP_STEP_COMPUTE)
            continue;
        uint32_t y = pointwise_out(g, steps[s].index);
        if (y == MP_NONE)
            continue;
        const mp__tensor *ty = &g->tensors[y];
        if (!mp__tensor_in_arena(ty) || ty->bytes == 0 || sf[y] ||
            ty->n_cons == 0)
            continue;
        uint32_t c = g->cons[ty->cons_begin];
        bool one = true;
        for (uint32_t k = 1; k < ty->n_cons; k++)
            if (g->cons[ty->cons_begin + k] != c)
                one = false;
        uint32_t ns = next_ns[s];
        if (!one || ns == MP_NONE || steps[ns].kind != MP_STEP_COMPUTE ||
            steps[ns].index != c)
            continue;
        uint32_t z = pointwise_out(g, c);
        if (z == MP_NONE || g->tensors[z].bytes != ty->bytes)
            continue;
        fused[y] = 1;
        (*count)++;
    }
}

/* Appends to `acc` (marking seen[] with stamp) the storage roots that the
 * chain ending at node `node` may overwrite: inputs at positions the op
 * allows, and through fused inputs the allowed inputs of their producers.
 * Depth-first, input order: deterministic. */
static void chain_targets(const mp_graph *g, uint32_t node,
                          const uint8_t *fused, uint32_t *acc, uint32_t *nacc,
                          uint32_t cap, uint32_t *seen, uint32_t stamp)
{
    const mp__node *nd = &g->nodes[node];
    for (uint32_t i = 0; i < nd->n_in && *nacc < cap; i++) {
        uint32_t t = nd->inputs[i];
        if (t == MP_NONE)
            continue;
        uint32_t r = g->tensors[t].root;
        if (fused && fused[r]) {
            uint32_t p = g->tensors[r].producer;
            if (p != MP_NONE)
                chain_targets(g, p, fused, acc, nacc, cap, seen, stamp);
            continue;
        }
        if (!mp__op_may_overwrite(nd->def, i) || seen[r] == stamp)
            continue;
        seen[r] = stamp;
        acc[(*nacc)++] = r;
    }
}

mp_status mp__sharing_apply(const mp_graph *g, mp_step **steps_io,
                           uint32_t *n_io, int inplace, int fuse,
                           uint32_t **step_over_out, uint8_t **fused_out)
{
    mp_ctx *ctx = g->ctx;
    mp_step *steps = *steps_io;
    uint32_t n = *n_io, nt = (uint32_t)g->n_tensors;
    *step_over_out = NULL;
    *fused_out = NULL;
    bool recompute = false;
    for (uint32_t s = 0; s < n; s++) {
        mp_step_kind k = steps[s].kind;
        if (k == MP_STEP_RECOMPUTE)
            recompute = true;
        else if (k != MP_STEP_COMPUTE && k != MP_STEP_FREE)
            return MP_OK; /* offload schedules: left as they are */
        if (steps[s].index >= (k == MP_STEP_FREE ? nt : g->n_nodes))
            return MP_OK; /* invalid: mp__schedule_blocks says why */
    }
    if (recompute)
        fuse = 0;
    if (!inplace && !fuse)
        return MP_OK;

    mp_status st = MP_ERR_NOMEM;
    uint8_t *sf = storage_flags(g);
    uint8_t *fused = fuse ? mp__calloc(ctx, nt + 1, 1) : NULL;
    uint32_t *next_ns = mp__alloc(ctx, ((size_t)n + 1) * sizeof *next_ns);
    uint32_t *chain_end = mp__alloc(ctx, ((size_t)n + 1) * sizeof *chain_end);
    uint32_t *anchor = mp__alloc(ctx, ((size_t)n + 1) * sizeof *anchor);
    uint32_t *lr = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *lr);
    uint32_t *head = mp__alloc(ctx, ((size_t)n + 2) * sizeof *head);
    uint32_t *seen = mp__calloc(ctx, (size_t)nt + 1, sizeof *seen);
    uint32_t *acc = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *acc);
    uint32_t *over = NULL;
    mp_step *out = NULL;
    cand *cands = NULL;
    uint32_t n_fused = 0;
    if (!sf || (fuse && !fused) || !next_ns || !chain_end || !anchor ||
        !lr || !head || !seen || !acc)
        goto done;

    /* node step successor chains */
    uint32_t nxt = MP_NONE;
    for (uint32_t s = n; s-- > 0;) {
        next_ns[s] = nxt;
        if (steps[s].kind != MP_STEP_FREE)
            nxt = s;
    }
    if (fuse)
        mark_fused(g, steps, n, next_ns, sf, fused, &n_fused);
    /* the step where the fused chain through each node step ends */
    for (uint32_t s = n; s-- > 0;) {
        chain_end[s] = s;
        if (steps[s].kind == MP_STEP_FREE || !n_fused)
            continue;
        uint32_t y = pointwise_out(g, steps[s].index);
        if (y != MP_NONE && fused[y])
            chain_end[s] = chain_end[next_ns[s]];
    }

    /* 1. anchor every FREE step after the node step that really ends its
     * tensor's life (a read inside a fused chain counts at the chain's
     * end); FREE steps of fused tensors are dropped (anchor MP_NONE - 1) */
    for (uint32_t t = 0; t < nt; t++)
        lr[t] = MP_NONE;
    uint32_t last_node = MP_NONE;
    for (uint32_t s = 0; s < n; s++) {
        if (steps[s].kind != MP_STEP_FREE) {
            last_node = s;
            anchor[s] = s;
            const mp__node *nd = &g->nodes[steps[s].index];
            for (uint32_t i = 0; i < nd->n_in; i++) {
                if (nd->inputs[i] == MP_NONE)
                    continue;
                uint32_t r = g->tensors[nd->inputs[i]].root;
                if (lr[r] == MP_NONE || chain_end[s] > lr[r])
                    lr[r] = chain_end[s];
            }
            continue;
        }
        uint32_t x = steps[s].index;
        if (fused && fused[x]) {
            anchor[s] = MP_NONE - 1;
            continue;
        }
        uint32_t a = last_node;
        if (lr[x] != MP_NONE && (a == MP_NONE || lr[x] > a))
            a = lr[x];
        anchor[s] = a;
        lr[x] = MP_NONE;
    }
    /* rebuild: each node step followed by the FREE steps anchored to it,
     * in their original order (a bucket list per node step) */
    out = mp__alloc(ctx, ((size_t)n + 1) * sizeof *out);
    if (!out)
        goto done;
    uint32_t *bucket_next = chain_end; /* reused: next FREE in a bucket */
    for (uint32_t s = 0; s <= n; s++)
        head[s] = MP_NONE;
    /* head[n] holds FREE steps anchored before any node step */
    for (uint32_t s = 0; s < n; s++) {
        if (steps[s].kind != MP_STEP_FREE || anchor[s] == MP_NONE - 1)
            continue;
        uint32_t b = anchor[s] == MP_NONE ? n : anchor[s];
        /* append keeping original order: walk to the end (buckets are
         * short: the frees after one node) */
        if (head[b] == MP_NONE) {
            head[b] = s;
        } else {
            uint32_t q = head[b];
            while (bucket_next[q] != MP_NONE)
                q = bucket_next[q];
            bucket_next[q] = s;
        }
        bucket_next[s] = MP_NONE;
    }
    uint32_t m = 0;
    for (uint32_t q = head[n]; q != MP_NONE; q = bucket_next[q])
        out[m++] = steps[q];
    for (uint32_t s = 0; s < n; s++) {
        if (steps[s].kind == MP_STEP_FREE)
            continue;
        out[m++] = steps[s];
        for (uint32_t q = head[s]; q != MP_NONE; q = bucket_next[q])
            out[m++] = steps[q];
    }
    mp__dealloc(ctx, steps);
    steps = out;
    out = NULL;
    n = m;
    *steps_io = steps;
    *n_io = n;

    if (inplace) {
        /* chain ends again, on the rebuilt schedule */
        nxt = MP_NONE;
        for (uint32_t s = n; s-- > 0;) {
            next_ns[s] = nxt;
            if (steps[s].kind != MP_STEP_FREE)
                nxt = s;
        }
        for (uint32_t s = n; s-- > 0;) {
            chain_end[s] = s;
            if (steps[s].kind == MP_STEP_FREE || !n_fused)
                continue;
            uint32_t y = pointwise_out(g, steps[s].index);
            if (y != MP_NONE && fused[y])
                chain_end[s] = chain_end[next_ns[s]];
        }
        /* 2. candidates: each FREE(x) names the node step of x's last
         * read (of that instance) */
        cands = mp__alloc(ctx, ((size_t)n + 1) * sizeof *cands);
        over = mp__alloc(ctx, ((size_t)n + 1) * sizeof *over);
        uint8_t *drop = (uint8_t *)anchor; /* reused, n bytes */
        if (!cands || !over)
            goto done;
        for (uint32_t t = 0; t < nt; t++) {
            lr[t] = MP_NONE;
            seen[t] = 0;
        }
        for (uint32_t s = 0; s <= n; s++)
            head[s] = MP_NONE;
        uint32_t nc = 0;
        for (uint32_t s = 0; s < n; s++) {
            over[s] = MP_NONE;
            drop[s] = 0;
            if (steps[s].kind != MP_STEP_FREE) {
                const mp__node *nd = &g->nodes[steps[s].index];
                for (uint32_t i = 0; i < nd->n_in; i++) {
                    if (nd->inputs[i] == MP_NONE)
                        continue;
                    uint32_t r = g->tensors[nd->inputs[i]].root;
                    if (lr[r] == MP_NONE || chain_end[s] > lr[r])
                        lr[r] = chain_end[s];
                }
                /* an output instance starts: earlier reads are of the
                 * previous instance */
                for (uint32_t o = 0; o < nd->n_out; o++)
                    if (nd->outputs[o] != MP_NONE)
                        lr[nd->outputs[o]] = MP_NONE;
                continue;
            }
            uint32_t x = steps[s].index;
            if (lr[x] != MP_NONE) {
                cands[nc] = (cand){x, s, head[lr[x]]};
                head[lr[x]] = nc++;
            }
            lr[x] = MP_NONE;
        }
        /* 3. at each node step, output 0 takes over the first allowed
         * input (in input order, through fused chains) that dies here */
        uint32_t stamp = 0;
        for (uint32_t s = 0; s < n; s++) {
            if (steps[s].kind == MP_STEP_FREE || head[s] == MP_NONE)
                continue;
            const mp__node *nd = &g->nodes[steps[s].index];
            if (nd->n_out == 0 || nd->outputs[0] == MP_NONE)
                continue;
            uint32_t y = nd->outputs[0];
            const mp__tensor *ty = &g->tensors[y];
            if (!mp__tensor_in_arena(ty) || ty->bytes == 0 ||
                (fused && fused[y]))
                continue;
            uint32_t na = 0;
            stamp++;
            chain_targets(g, steps[s].index, fused, acc, &na, nt, seen,
                          stamp);
            for (uint32_t a = 0; a < na; a++) {
                uint32_t x = acc[a];
                const mp__tensor *tx = &g->tensors[x];
                if (x == y || !mp__tensor_in_arena(tx) ||
                    tx->producer == MP_NONE || tx->bytes != ty->bytes ||
                    (sf[x] & 1))
                    continue;
                uint32_t c = head[s];
                while (c != MP_NONE && cands[c].x != x)
                    c = cands[c].next;
                if (c == MP_NONE || drop[cands[c].f])
                    continue;
                drop[cands[c].f] = 1;
                over[s] = x;
                break;
            }
        }
        /* 4. drop the FREE steps of the overwritten inputs */
        m = 0;
        for (uint32_t s = 0; s < n; s++) {
            if (drop[s])
                continue;
            over[m] = over[s];
            steps[m++] = steps[s];
        }
        bool any = false;
        for (uint32_t s = 0; s < m; s++)
            if (over[s] != MP_NONE)
                any = true;
        *n_io = m;
        if (any) {
            *step_over_out = over;
            over = NULL;
        }
    }
    if (n_fused) {
        *fused_out = fused;
        fused = NULL;
    }
    st = MP_OK;
done:
    mp__dealloc(ctx, sf);
    mp__dealloc(ctx, fused);
    mp__dealloc(ctx, next_ns);
    mp__dealloc(ctx, chain_end);
    mp__dealloc(ctx, anchor);
    mp__dealloc(ctx, lr);
    mp__dealloc(ctx, head);
    mp__dealloc(ctx, seen);
    mp__dealloc(ctx, acc);
    mp__dealloc(ctx, over);
    mp__dealloc(ctx, out);
    mp__dealloc(ctx, cands);
    return st;
}

mp_status mp__sharing_buffers(const mp_plan *p, mp_buffer **bufs_out,
                             uint32_t *n_out, uint32_t **group_out)
{
    mp_ctx *ctx = p->ctx;
    uint32_t nb = p->n_blocks;
    *group_out = NULL;
    uint32_t *grp = NULL;
    uint32_t ng = nb;
    if (p->block_over) {
        /* the block each in-place block continues: the block of the
         * overwritten tensor that ends where it starts */
        grp = mp__alloc(ctx, ((size_t)nb + 1) * sizeof *grp);
        uint32_t *last = mp__alloc(ctx, (p->graph->n_tensors + 1) *
                                           sizeof *last);
        uint32_t *ord = mp__alloc(ctx, ((size_t)nb + 1) * sizeof *ord);
        if (!grp || !last || !ord) {
            mp__dealloc(ctx, grp);
            mp__dealloc(ctx, last);
            mp__dealloc(ctx, ord);
            return MP_ERR_NOMEM;
        }
        /* blocks are made in step order by mp__schedule_blocks, but
         * do not rely on it: counting sort by first step */
        for (size_t t = 0; t < p->graph->n_tensors; t++)
            last[t] = MP_NONE;
        uint32_t *cnt = mp__calloc(ctx, (size_t)p->n_steps + 2, sizeof *cnt);
        if (!cnt) {
            mp__dealloc(ctx, grp);
            mp__dealloc(ctx, last);
            mp__dealloc(ctx, ord);
            return MP_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < nb; i++)
            cnt[(p->blocks[i].first < p->n_steps ? p->blocks[i].first
                                                 : p->n_steps) + 1]++;
        for (uint32_t s = 0; s <= p->n_steps; s++)
            cnt[s + 1] += cnt[s];
        for (uint32_t i = 0; i < nb; i++)
            ord[cnt[p->blocks[i].first < p->n_steps ? p->blocks[i].first
                                                    : p->n_steps]++] = i;
        mp__dealloc(ctx, cnt);
        ng = 0;
        for (uint32_t k = 0; k < nb; k++) {
            uint32_t i = ord[k];
            uint32_t x = p->block_over[i];
            uint32_t prev = x != MP_NONE && x < p->graph->n_tensors
                                ? last[x]
                                : MP_NONE;
            if (prev != MP_NONE && p->blocks[prev].end == p->blocks[i].first)
                grp[i] = grp[prev];
            else
                grp[i] = ng++;
            last[p->blocks[i].tensor] = i;
        }
        mp__dealloc(ctx, last);
        mp__dealloc(ctx, ord);
    }
    mp_buffer *bufs = mp__alloc(ctx, ((size_t)ng + 1) * sizeof *bufs);
    if (!bufs) {
        mp__dealloc(ctx, grp);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < ng; k++) {
        bufs[k].start = INT64_MAX;
        bufs[k].end = 0;
        bufs[k].size = 0;
        bufs[k].offset = 0;
    }
    for (uint32_t i = 0; i < nb; i++) {
        mp_buffer *b = &bufs[grp ? grp[i] : i];
        if ((int64_t)p->blocks[i].first < b->start)
            b->start = p->blocks[i].first;
        if ((int64_t)p->blocks[i].end > b->end)
            b->end = p->blocks[i].end;
        if (p->blocks[i].size > b->size)
            b->size = p->blocks[i].size;
    }
    *bufs_out = bufs;
    *n_out = ng;
    *group_out = grp;
    return MP_OK;
}
