/* In-place reuse and fused pointwise chains.
 *
 * Both are rewrites of a schedule (COMPUTE/RECOMPUTE/FREE steps) made when
 * a plan is built from it (mp__plan_from_schedule), so that every schedule
 * (the default order, a reordered one, a recompute schedule) gets them:
 *
 * - fuse: the value a pointwise node P writes at one step (an *instance*
 *   of its output y: a training schedule computes y in the forward pass
 *   and may recompute it for backward) is *fused* when the only step that
 *   reads that instance is the next node step, a pointwise node C with
 *   one output of y's byte size: P and C run as one kernel, that instance
 *   of y never exists in memory (no block). The inputs of P must then stay
 *   resident until C runs: their FREE steps move after C. Other instances
 *   of y (read by backward, say) keep their blocks.
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
    if (!mp__node_pointwise(n))
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

/* The state of one rewrite. Per step (n + 1 entries): next_ns, the next
 * node step; chain_end, the step where the fused chain through a node step
 * ends; prev_ns, the node step before; fstep, 1 where the node step's
 * output instance is fused; anchor, the node step a FREE step follows;
 * head, the first FREE anchored to a step (head[n]: before any node step).
 * Per tensor: sf (storage_flags), fused (1 when some instance is), lr (the
 * step of the last read of a root), seen and acc (chain_targets'
 * scratch). */
typedef struct sharing {
    const mp_graph *g;
    mp_ctx *ctx;
    mp_step *steps;
    uint32_t n, nt, n_fused;
    uint8_t *sf, *fused;
    uint8_t *fstep; /* per step: the output instance it writes is fused */
    uint32_t *next_ns, *prev_ns, *chain_end, *anchor, *lr, *head, *seen, *acc;
    uint32_t *over;
    /* take_over's scratch per tensor: the candidate of the current step
     * for that tensor (cand_of), valid where cand_stamp is the step's */
    uint32_t *cand_of, *cand_stamp;
    cand *cands;
} sharing;

/* False when the schedule is left as it is: other step kinds than
 * COMPUTE/RECOMPUTE/FREE (offload schedules), an invalid index (the block
 * walker says why), or nothing to do. */
static bool sharing_applies(const mp_graph *g, const mp_step *steps,
                            uint32_t n, int inplace, int fuse)
{
    for (uint32_t s = 0; s < n; s++) {
        mp_step_kind k = steps[s].kind;
        if (k != MP_STEP_COMPUTE && k != MP_STEP_RECOMPUTE &&
            k != MP_STEP_FREE)
            return false;
        if (steps[s].index >= (k == MP_STEP_FREE ? g->n_tensors : g->n_nodes))
            return false;
    }
    return inplace || fuse;
}

static mp_status sharing_alloc(sharing *sh, int fuse)
{
    mp_ctx *ctx = sh->ctx;
    size_t n = sh->n, nt = sh->nt;
    sh->sf = storage_flags(sh->g);
    sh->fused = fuse ? mp__calloc(ctx, nt + 1, 1) : NULL;
    sh->fstep = mp__calloc(ctx, n + 1, 1);
    sh->next_ns = mp__alloc(ctx, (n + 1) * sizeof *sh->next_ns);
    sh->prev_ns = mp__alloc(ctx, (n + 1) * sizeof *sh->prev_ns);
    sh->chain_end = mp__alloc(ctx, (n + 1) * sizeof *sh->chain_end);
    sh->anchor = mp__alloc(ctx, (n + 1) * sizeof *sh->anchor);
    sh->lr = mp__alloc(ctx, (nt + 1) * sizeof *sh->lr);
    sh->head = mp__alloc(ctx, (n + 2) * sizeof *sh->head);
    sh->seen = mp__calloc(ctx, nt + 1, sizeof *sh->seen);
    sh->acc = mp__alloc(ctx, (nt + 1) * sizeof *sh->acc);
    if (!sh->sf || (fuse && !sh->fused) || !sh->fstep || !sh->next_ns ||
        !sh->prev_ns || !sh->chain_end ||
        !sh->anchor || !sh->lr || !sh->head || !sh->seen || !sh->acc)
        return MP_ERR_NOMEM;
    return MP_OK;
}

static void sharing_free(sharing *sh)
{
    mp_ctx *ctx = sh->ctx;
    mp__dealloc(ctx, sh->sf);
    mp__dealloc(ctx, sh->fused);
    mp__dealloc(ctx, sh->fstep);
    mp__dealloc(ctx, sh->next_ns);
    mp__dealloc(ctx, sh->prev_ns);
    mp__dealloc(ctx, sh->chain_end);
    mp__dealloc(ctx, sh->anchor);
    mp__dealloc(ctx, sh->lr);
    mp__dealloc(ctx, sh->head);
    mp__dealloc(ctx, sh->seen);
    mp__dealloc(ctx, sh->acc);
    mp__dealloc(ctx, sh->over);
    mp__dealloc(ctx, sh->cands);
    mp__dealloc(ctx, sh->cand_of);
    mp__dealloc(ctx, sh->cand_stamp);
}

/* next_ns and prev_ns: the next and the previous node step of each step
 * (MP_NONE at the ends). */
static void node_successors(sharing *sh)
{
    uint32_t nxt = MP_NONE, prv = MP_NONE;
    for (uint32_t s = sh->n; s-- > 0;) {
        sh->next_ns[s] = nxt;
        if (sh->steps[s].kind != MP_STEP_FREE)
            nxt = s;
    }
    for (uint32_t s = 0; s < sh->n; s++) {
        sh->prev_ns[s] = prv;
        if (sh->steps[s].kind != MP_STEP_FREE)
            prv = s;
    }
}

/* The tensor whose fused instance node step s reads: the output of the
 * node step before s when that instance is fused and s reads it; else
 * MP_NONE. */
static uint32_t fused_input(const sharing *sh, uint32_t s)
{
    uint32_t q = sh->prev_ns[s];
    return q != MP_NONE && sh->fstep[q] ? pointwise_out(sh->g,
                                                        sh->steps[q].index)
                                        : MP_NONE;
}

/* Marks the node steps whose output instance is fused (fstep) and the
 * tensors with a fused instance (fused). One pass counts, per node step,
 * the distinct node steps that read its output instance (until the
 * tensor's next producing step) and the first of them. */
static mp_status mark_fused(sharing *sh)
{
    const mp_graph *g = sh->g;
    const mp_step *steps = sh->steps;
    uint32_t *cur = sh->lr;             /* tensor -> step of its instance */
    uint32_t *nrd = sh->chain_end;      /* step -> readers of its instance */
    uint32_t *first = sh->anchor;       /* step -> its first reader */
    uint32_t *last = sh->head;          /* step -> its latest reader */
    for (uint32_t t = 0; t < sh->nt; t++)
        cur[t] = MP_NONE;
    for (uint32_t s = 0; s < sh->n; s++) {
        nrd[s] = 0;
        first[s] = last[s] = MP_NONE;
        if (steps[s].kind == MP_STEP_FREE)
            continue;
        const mp__node *nd = &g->nodes[steps[s].index];
        for (uint32_t i = 0; i < nd->n_in; i++) {
            if (nd->inputs[i] == MP_NONE)
                continue;
            uint32_t q = cur[g->tensors[nd->inputs[i]].root];
            if (q == MP_NONE || last[q] == s)
                continue;
            if (nrd[q]++ == 0)
                first[q] = s;
            last[q] = s;
        }
        for (uint32_t o = 0; o < nd->n_out; o++)
            if (nd->outputs[o] != MP_NONE)
                cur[nd->outputs[o]] = s;
    }
    for (uint32_t s = 0; s < sh->n; s++) {
        if (steps[s].kind == MP_STEP_FREE)
            continue;
        uint32_t y = pointwise_out(g, steps[s].index);
        if (y == MP_NONE)
            continue;
        const mp__tensor *ty = &g->tensors[y];
        uint32_t ns = sh->next_ns[s];
        if (!mp__tensor_in_arena(ty) || ty->bytes == 0 || sh->sf[y] ||
            nrd[s] != 1 || ns == MP_NONE || first[s] != ns)
            continue;
        uint32_t z = pointwise_out(g, steps[ns].index);
        if (z == MP_NONE || g->tensors[z].bytes != ty->bytes)
            continue;
        sh->fstep[s] = 1;
        if (!sh->fused[y])
            sh->n_fused++;
        sh->fused[y] = 1;
    }
    return MP_OK;
}

/* Appends to `acc` (marking seen[] with stamp) the storage roots that the
 * chain ending at node step s may overwrite: inputs at positions the op
 * allows, and through the fused input the allowed inputs of the node step
 * before. Depth-first, input order: deterministic. */
static void chain_targets(const sharing *sh, uint32_t s, uint32_t stamp,
                          uint32_t *nacc)
{
    const mp_graph *g = sh->g;
    const mp__node *nd = &g->nodes[sh->steps[s].index];
    uint32_t fin = fused_input(sh, s);
    for (uint32_t i = 0; i < nd->n_in && *nacc < sh->nt; i++) {
        uint32_t t = nd->inputs[i];
        if (t == MP_NONE)
            continue;
        uint32_t r = g->tensors[t].root;
        if (r == fin) {
            if (sh->seen[r] != stamp) {
                sh->seen[r] = stamp;
                chain_targets(sh, sh->prev_ns[s], stamp, nacc);
            }
            continue;
        }
        if (!mp__op_may_overwrite(nd->def, i) || sh->seen[r] == stamp)
            continue;
        sh->seen[r] = stamp;
        if (!(sh->sf[r] & 2) || mp__node_reads_whole(g, nd, r))
            sh->acc[(*nacc)++] = r;
    }
}

/* chain_end of each step, from next_ns and the fused tensors. */
static void chain_ends(sharing *sh)
{
    for (uint32_t s = sh->n; s-- > 0;) {
        sh->chain_end[s] = s;
        if (sh->steps[s].kind != MP_STEP_FREE && sh->fstep[s])
            sh->chain_end[s] = sh->chain_end[sh->next_ns[s]];
    }
}

/* Node step s reads its inputs: lr of each input's root becomes the end
 * of the fused chain through s when that is later. */
static void note_reads(sharing *sh, uint32_t s)
{
    const mp_graph *g = sh->g;
    const mp__node *nd = &g->nodes[sh->steps[s].index];
    for (uint32_t i = 0; i < nd->n_in; i++) {
        if (nd->inputs[i] == MP_NONE)
            continue;
        uint32_t r = g->tensors[nd->inputs[i]].root;
        if (sh->lr[r] == MP_NONE || sh->chain_end[s] > sh->lr[r])
            sh->lr[r] = sh->chain_end[s];
    }
}

/* 1. Anchors every FREE step after the node step that really ends its
 * tensor's life (a read inside a fused chain counts at the chain's end);
 * FREE steps of fused instances are dropped (anchor MP_NONE - 1). inst
 * (per tensor): the step of its current instance. */
static void anchor_frees(sharing *sh, uint32_t *inst)
{
    const mp_step *steps = sh->steps;
    for (uint32_t t = 0; t < sh->nt; t++)
        sh->lr[t] = inst[t] = MP_NONE;
    uint32_t last_node = MP_NONE;
    for (uint32_t s = 0; s < sh->n; s++) {
        if (steps[s].kind != MP_STEP_FREE) {
            last_node = s;
            sh->anchor[s] = s;
            note_reads(sh, s);
            const mp__node *nd = &sh->g->nodes[steps[s].index];
            for (uint32_t o = 0; o < nd->n_out; o++)
                if (nd->outputs[o] != MP_NONE)
                    inst[nd->outputs[o]] = s;
            continue;
        }
        uint32_t x = steps[s].index;
        if (inst[x] != MP_NONE && sh->fstep[inst[x]]) {
            sh->anchor[s] = MP_NONE - 1;
            continue;
        }
        uint32_t a = last_node;
        if (sh->lr[x] != MP_NONE && (a == MP_NONE || sh->lr[x] > a))
            a = sh->lr[x];
        sh->anchor[s] = a;
        sh->lr[x] = MP_NONE;
    }
}

/* The schedule rebuilt from the anchors: each node step followed by the
 * FREE steps anchored to it, in their original order (a bucket list per
 * node step; chain_end is reused as the buckets' next links). Replaces
 * sh->steps (and *steps_io, *n_io). */
static mp_status rebuild(sharing *sh, mp_step **steps_io, uint32_t *n_io)
{
    const mp_step *steps = sh->steps;
    uint32_t n = sh->n, *head = sh->head, *bucket_next = sh->chain_end;
    mp_step *out = mp__alloc(sh->ctx, ((size_t)n + 1) * sizeof *out);
    uint8_t *fs = mp__calloc(sh->ctx, (size_t)n + 1, 1);
    if (!out || !fs) {
        mp__dealloc(sh->ctx, out);
        mp__dealloc(sh->ctx, fs);
        return MP_ERR_NOMEM;
    }
    for (uint32_t s = 0; s <= n; s++)
        head[s] = MP_NONE;
    /* prepended in reverse step order: each bucket lists its FREE steps in
     * their original order (linear however many frees one node has) */
    for (uint32_t s = n; s-- > 0;) {
        if (steps[s].kind != MP_STEP_FREE || sh->anchor[s] == MP_NONE - 1)
            continue;
        uint32_t b = sh->anchor[s] == MP_NONE ? n : sh->anchor[s];
        bucket_next[s] = head[b];
        head[b] = s;
    }
    uint32_t m = 0;
    for (uint32_t q = head[n]; q != MP_NONE; q = bucket_next[q])
        out[m++] = steps[q];
    for (uint32_t s = 0; s < n; s++) {
        if (steps[s].kind == MP_STEP_FREE)
            continue;
        fs[m] = sh->fstep[s];
        out[m++] = steps[s];
        for (uint32_t q = head[s]; q != MP_NONE; q = bucket_next[q])
            out[m++] = steps[q];
    }
    mp__dealloc(sh->ctx, sh->fstep);
    sh->fstep = fs;
    mp__dealloc(sh->ctx, sh->steps);
    sh->steps = *steps_io = out;
    sh->n = *n_io = m;
    return MP_OK;
}

/* 2. Candidates: each FREE(x) names the node step of x's last read (of
 * that instance); head[s] lists those of node step s. drop and over are
 * cleared. */
static void inplace_candidates(sharing *sh, uint8_t *drop)
{
    const mp_graph *g = sh->g;
    const mp_step *steps = sh->steps;
    for (uint32_t t = 0; t < sh->nt; t++) {
        sh->lr[t] = MP_NONE;
        sh->seen[t] = 0;
    }
    for (uint32_t s = 0; s <= sh->n; s++)
        sh->head[s] = MP_NONE;
    uint32_t nc = 0;
    for (uint32_t s = 0; s < sh->n; s++) {
        sh->over[s] = MP_NONE;
        drop[s] = 0;
        if (steps[s].kind != MP_STEP_FREE) {
            note_reads(sh, s);
            /* an output instance starts: earlier reads are of the
             * previous instance */
            const mp__node *nd = &g->nodes[steps[s].index];
            for (uint32_t o = 0; o < nd->n_out; o++)
                if (nd->outputs[o] != MP_NONE)
                    sh->lr[nd->outputs[o]] = MP_NONE;
            continue;
        }
        uint32_t x = steps[s].index;
        if (sh->lr[x] != MP_NONE) {
            sh->cands[nc] = (cand){x, s, sh->head[sh->lr[x]]};
            sh->head[sh->lr[x]] = nc++;
        }
        sh->lr[x] = MP_NONE;
    }
}

/* 3. At node step s, output 0 takes over the first allowed input (in
 * input order, through fused chains) that dies there: over[s] is that
 * input and its FREE step is marked in drop. */
static void take_over(sharing *sh, uint32_t s, uint32_t stamp, uint8_t *drop)
{
    const mp_graph *g = sh->g;
    const mp__node *nd = &g->nodes[sh->steps[s].index];
    if (nd->n_out == 0 || nd->outputs[0] == MP_NONE)
        return;
    uint32_t y = nd->outputs[0];
    const mp__tensor *ty = &g->tensors[y];
    if (!mp__tensor_in_arena(ty) || ty->bytes == 0 || sh->fstep[s])
        return;
    uint32_t na = 0;
    chain_targets(sh, s, stamp, &na);
    /* the candidates of step s by tensor (at most one per tensor: a FREE
     * ends the instance that step s read last) */
    for (uint32_t c = sh->head[s]; c != MP_NONE; c = sh->cands[c].next) {
        sh->cand_of[sh->cands[c].x] = c;
        sh->cand_stamp[sh->cands[c].x] = stamp;
    }
    for (uint32_t a = 0; a < na; a++) {
        uint32_t x = sh->acc[a];
        const mp__tensor *tx = &g->tensors[x];
        if (x == y || !mp__tensor_in_arena(tx) || tx->producer == MP_NONE ||
            tx->bytes != ty->bytes || (sh->sf[x] & 1))
            continue;
        uint32_t c = sh->cand_stamp[x] == stamp ? sh->cand_of[x] : MP_NONE;
        if (c == MP_NONE || drop[sh->cands[c].f])
            continue;
        drop[sh->cands[c].f] = 1;
        sh->over[s] = x;
        return;
    }
}

/* In place on the rebuilt schedule: candidates, take-overs, then the FREE
 * steps of the overwritten inputs dropped (*n_io shrinks); *step_over_out
 * when any step took over an input. */
static mp_status apply_inplace(sharing *sh, uint32_t *n_io,
                               uint32_t **step_over_out)
{
    node_successors(sh);
    chain_ends(sh);
    sh->cands = mp__alloc(sh->ctx, ((size_t)sh->n + 1) * sizeof *sh->cands);
    sh->over = mp__alloc(sh->ctx, ((size_t)sh->n + 1) * sizeof *sh->over);
    sh->cand_of = mp__alloc(sh->ctx, ((size_t)sh->nt + 1) * sizeof *sh->cand_of);
    sh->cand_stamp = mp__calloc(sh->ctx, (size_t)sh->nt + 1,
                                sizeof *sh->cand_stamp);
    uint8_t *drop = (uint8_t *)sh->anchor; /* reused, n bytes */
    if (!sh->cands || !sh->over || !sh->cand_of || !sh->cand_stamp)
        return MP_ERR_NOMEM;
    inplace_candidates(sh, drop);
    uint32_t stamp = 0;
    for (uint32_t s = 0; s < sh->n; s++)
        if (sh->steps[s].kind != MP_STEP_FREE && sh->head[s] != MP_NONE)
            take_over(sh, s, ++stamp, drop);
    uint32_t m = 0;
    bool any = false;
    for (uint32_t s = 0; s < sh->n; s++) {
        if (drop[s])
            continue;
        sh->over[m] = sh->over[s];
        sh->fstep[m] = sh->fstep[s];
        sh->steps[m++] = sh->steps[s];
        any |= sh->over[s] != MP_NONE;
    }
    *n_io = m;
    if (any) {
        *step_over_out = sh->over;
        sh->over = NULL;
    }
    return MP_OK;
}

mp_status mp__sharing_apply(const mp_graph *g, mp_step **steps_io,
                           uint32_t *n_io, int inplace, int fuse,
                           uint32_t **step_over_out, uint8_t **fused_out,
                           uint8_t **step_fused_out)
{
    *step_over_out = NULL;
    *fused_out = NULL;
    *step_fused_out = NULL;
    if (!sharing_applies(g, *steps_io, *n_io, inplace, fuse))
        return MP_OK;
    sharing sh = {.g = g, .ctx = g->ctx, .steps = *steps_io, .n = *n_io,
                  .nt = (uint32_t)g->n_tensors};
    mp_status st = sharing_alloc(&sh, fuse);
    if (!st) {
        node_successors(&sh);
        if (fuse)
            st = mark_fused(&sh);
    }
    if (!st) {
        chain_ends(&sh);
        anchor_frees(&sh, sh.acc);
        st = rebuild(&sh, steps_io, n_io);
    }
    if (!st && inplace)
        st = apply_inplace(&sh, n_io, step_over_out);
    if (!st && sh.n_fused) {
        *fused_out = sh.fused;
        *step_fused_out = sh.fstep;
        sh.fused = NULL;
        sh.fstep = NULL;
    }
    sharing_free(&sh);
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
