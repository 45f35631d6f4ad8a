/* ranks.c - the programs of every rank of a multi-GPU step run together
 * (validate --ranks, docs/distributed.md "Multi-GPU validation"): their
 * Sends and Recvs linked to each other, and the schedules checked for a
 * deadlock before anything runs (the collectives of the data-parallel
 * and the tensor-parallel groups, the sends and receives). */
#include "validate.h"

#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one Send or Recv node of a rank's program */
typedef struct p2p {
    uint32_t node;
    int send;
    char key[600];   /* "X#mbJ" */
} p2p;

/* The micro-batch key of a Send ("send/X#mbJ") or Recv ("recv/X#mbJ")
 * node: "X#mbJ", J 1 when the stage holds one micro-batch ("send/X"). */
static void p2p_key(const char *name, char *key, size_t cap)
{
    const char *x = strchr(name, '/') ? strchr(name, '/') + 1 : name;
    const char *mb = strstr(x, "#mb");
    if (mb)
        snprintf(key, cap, "%s", x);
    else
        snprintf(key, cap, "%s#mb1", x);
}

static uint32_t find_p2p(const mpv_program *p, p2p *out)
{
    const mp_graph *g = p->graph;
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const mp__node *nd = &g->nodes[i];
        unsigned kop = MP__OP_KOP(nd->def);
        if (!(nd->def->flags & MP__OPF_COLLECTIVE) ||
            (kop != MP__KOP_SEND && kop != MP__KOP_RECV))
            continue;
        if (out) {
            out[n].node = i;
            out[n].send = kop == MP__KOP_SEND;
            p2p_key(nd->name, out[n].key, sizeof out[n].key);
        }
        n++;
    }
    return n;
}

/* the first launch of node i of kind MPV_L_COLL, call op, not linked */
static mpv_launch *free_call(mpv_program *p, uint32_t i, int op)
{
    const mpv_node *pn = &p->nodes[i];
    for (uint32_t k = 0; k < pn->count; k++) {
        mpv_launch *l = &p->launches[pn->first + k];
        if (l->kind == MPV_L_COLL && l->p.coll.op == op && l->p.coll.peer < 0)
            return l;
    }
    return NULL;
}

/* one blocking communication of a rank's schedule: a node's collective
 * (every rank of its group, data-parallel or tensor-parallel, at the
 * same node), or one send or receive */
typedef struct event {
    uint32_t node;
    int kind;        /* 0 collective, 1 send, 2 receive */
    int32_t peer;
    int group;       /* a collective's: MPV_COLL_DP, MPV_COLL_TP */
    const char *key; /* the node's name (collective), the p2p key */
} event;

static const char *p2p_key_of(const p2p *pp, uint32_t n, uint32_t node)
{
    for (uint32_t k = 0; k < n; k++)
        if (pp[k].node == node)
            return pp[k].key;
    return "";
}

/* rank r's events in schedule order */
static uint32_t rank_events(const mpv_program *p, const p2p *pp, uint32_t np,
                            event *ev)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < p->n_steps; s++) {
        const mpv_step *st = &p->steps[s];
        if (st->kind != MP_STEP_COMPUTE && st->kind != MP_STEP_RECOMPUTE)
            continue;
        const mpv_node *pn = &p->nodes[st->index];
        int coll = 0, group = MPV_COLL_DP;
        for (uint32_t k = 0; pn->run && k < pn->count; k++) {
            const mpv_launch *l = &p->launches[pn->first + k];
            if (l->kind != MPV_L_COLL)
                continue;
            if (l->p.coll.op == MPV_COLL_SEND || l->p.coll.op == MPV_COLL_RECV) {
                if (l->p.coll.peer < 0)
                    continue;
                if (ev)
                    ev[n] = (event){st->index,
                                    l->p.coll.op == MPV_COLL_SEND ? 1 : 2,
                                    l->p.coll.peer, MPV_COLL_WORLD,
                                    p2p_key_of(pp, np, st->index)};
                n++;
            } else {
                coll = 1;
                group = l->p.coll.group;
            }
        }
        if (coll) {
            if (ev)
                ev[n] = (event){st->index, 0, -1, group,
                                p->graph->nodes[st->index].name};
            n++;
        }
    }
    return n;
}

/* Member k of rank r's group (ranks are (stage x dp + dp index) x tp +
 * tp index): the data-parallel group's, k < dp, or the tensor-parallel
 * group's, k < tp; *size: the group's */
static uint32_t member(const mpv_rank_lowering *rl, uint32_t r, int group,
                       uint32_t k, uint32_t *size)
{
    uint32_t tp = rl->tp ? rl->tp : 1, dp = rl->dp;
    if (group == MPV_COLL_TP) {
        *size = tp;
        return r / tp * tp + k;
    }
    *size = dp;
    return r / (tp * dp) * (tp * dp) + r % tp + k * tp;
}

/* Replays the ranks' events with blocking calls; 1 when every rank
 * reaches its end. */
static int replay(mpv_program *const *progs, uint32_t n, event **ev,
                  const uint32_t *ne, uint32_t *pos)
{
    const mpv_rank_lowering *rl = &progs[0]->rank;
    for (;;) {
        int progress = 0, done = 1;
        for (uint32_t r = 0; r < n; r++) {
            if (pos[r] >= ne[r])
                continue;
            done = 0;
            const event *e = &ev[r][pos[r]];
            if (e->kind == 0) {
                uint32_t size = 1, ok = 1;
                member(rl, r, e->group, 0, &size);
                for (uint32_t k = 0; k < size && ok; k++) {
                    uint32_t m = member(rl, r, e->group, k, &size);
                    ok = m < n && pos[m] < ne[m] && ev[m][pos[m]].kind == 0 &&
                         ev[m][pos[m]].group == e->group &&
                         !strcmp(ev[m][pos[m]].key, e->key);
                }
                if (ok) {
                    for (uint32_t k = 0; k < size; k++)
                        pos[member(rl, r, e->group, k, &size)]++;
                    progress = 1;
                }
            } else if (e->kind == 1) {
                uint32_t q = (uint32_t)e->peer;
                if (q < n && pos[q] < ne[q] && ev[q][pos[q]].kind == 2 &&
                    ev[q][pos[q]].peer == (int32_t)r &&
                    !strcmp(ev[q][pos[q]].key, e->key)) {
                    pos[r]++;
                    pos[q]++;
                    progress = 1;
                }
            }
        }
        if (done)
            return 1;
        if (!progress)
            return 0;
    }
}

mp_status mpv_ranks_link(mpv_program *const *progs, uint32_t n,
                         uint32_t *n_linked)
{
    if (!progs || !n || !progs[0])
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = progs[0]->ctx;
    for (uint32_t r = 0; r < n; r++)
        if (!progs[r] || !progs[r]->rank.nccl || progs[r]->rank.rank != r ||
            progs[r]->rank.n_ranks != n ||
            progs[r]->rank.dp != progs[0]->rank.dp ||
            progs[r]->rank.tp != progs[0]->rank.tp)
            return mp__err(ctx, MP_ERR_INVALID_ARG,
                           "validate --ranks: program %u is not rank %u of "
                           "%u lowered for NCCL", (unsigned)r, (unsigned)r,
                           (unsigned)n);
    p2p **pp = calloc(n, sizeof *pp);
    uint32_t *np = calloc(n, sizeof *np), *ne = calloc(n, sizeof *ne);
    uint32_t *pos = calloc(n, sizeof *pos);
    event **ev = calloc(n, sizeof *ev);
    mp_status st = pp && np && ne && pos && ev ? MP_OK : MP_ERR_NOMEM;
    for (uint32_t r = 0; r < n && !st; r++) {
        np[r] = find_p2p(progs[r], NULL);
        pp[r] = calloc(np[r] + 1, sizeof *pp[r]);
        if (!pp[r])
            st = MP_ERR_NOMEM;
        else
            find_p2p(progs[r], pp[r]);
    }
    uint32_t linked = 0;
    /* each Send with the Recvs of its name on the other stages' ranks of
     * the same data-parallel and tensor-parallel index */
    for (uint32_t r = 0; r < n && !st; r++) {
        const mpv_rank_lowering *a = &progs[r]->rank;
        for (uint32_t k = 0; k < np[r]; k++) {
            if (!pp[r][k].send)
                continue;
            for (uint32_t q = 0; q < n; q++) {
                const mpv_rank_lowering *b = &progs[q]->rank;
                if (b->stage == a->stage || b->dp_index != a->dp_index ||
                    b->tp_index != a->tp_index)
                    continue;
                for (uint32_t j = 0; j < np[q]; j++) {
                    if (pp[q][j].send || strcmp(pp[q][j].key, pp[r][k].key))
                        continue;
                    mpv_launch *ls = free_call(progs[r], pp[r][k].node,
                                               MPV_COLL_SEND);
                    mpv_launch *lr = free_call(progs[q], pp[q][j].node,
                                               MPV_COLL_RECV);
                    if (ls && lr) {
                        ls->p.coll.peer = (int32_t)q;
                        lr->p.coll.peer = (int32_t)r;
                        linked++;
                    }
                }
            }
        }
    }
    for (uint32_t r = 0; r < n && !st; r++) {
        ne[r] = rank_events(progs[r], pp[r], np[r], NULL);
        ev[r] = calloc(ne[r] + 1, sizeof *ev[r]);
        if (!ev[r])
            st = MP_ERR_NOMEM;
        else
            rank_events(progs[r], pp[r], np[r], ev[r]);
    }
    if (!st && !replay(progs, n, ev, ne, pos)) {
        char msg[1024];
        size_t at = 0;
        for (uint32_t r = 0; r < n && at < sizeof msg; r++) {
            if (pos[r] >= ne[r]) {
                at += (size_t)snprintf(msg + at, sizeof msg - at,
                                       "%srank %u: done", r ? "; " : "",
                                       (unsigned)r);
                continue;
            }
            const event *e = &ev[r][pos[r]];
            static const char *const what[] = {"the collective", "a send to",
                                               "a receive from"};
            at += (size_t)snprintf(
                msg + at, sizeof msg - at, "%srank %u waits at '%s' (%s%s",
                r ? "; " : "", (unsigned)r,
                progs[r]->graph->nodes[e->node].name, what[e->kind],
                e->kind ? ""
                : e->group == MPV_COLL_TP ? " of its tensor-parallel group"
                                          : " of its data-parallel group");
            if (at < sizeof msg && e->kind)
                at += (size_t)snprintf(msg + at, sizeof msg - at, " rank %d",
                                       (int)e->peer);
            if (at < sizeof msg)
                at += (size_t)snprintf(msg + at, sizeof msg - at, ")");
        }
        st = mp__err(ctx, MP_ERR_VERIFY,
                     "validate --ranks: the ranks' schedules would deadlock "
                     "(their sends and receives in another order): %s",
                     msg);
    }
    for (uint32_t r = 0; r < n; r++) {
        if (pp)
            free(pp[r]);
        if (ev)
            free(ev[r]);
    }
    free(pp);
    free(np);
    free(ne);
    free(pos);
    free(ev);
    if (n_linked)
        *n_linked = linked;
    return st;
}
