/* Pipeline stages of a training graph (memplan/parallel.h,
 * docs/distributed.md). The forward nodes are cut into pp stages along
 * their topological order (balanced by memory, or at the given cut
 * points); each backward, accumulation and optimizer node goes to the
 * stage of what it differentiates or updates (mp__train_source). Stage
 * s's graph runs the k micro-batches its schedule keeps in flight
 * (GPipe: M; 1F1B: min(pp - s, M)): their forwards, then their backwards
 * (so that k micro-batches' saved activations are live at once, as in
 * the schedule's steady state), each parameter gradient summed over the
 * micro-batches, then the optimizer steps once. A tensor crossing stages
 * is sent (memplan::Send, after its producer) and received
 * (memplan::Recv, before its first reader, into a buffer of its size).
 * Data parallelism and ZeRO then apply to each stage's graph
 * (planner/parallel.c). */
#include "ranks.h"
#include "cost.h"

#include <stdio.h>
#include <string.h>

typedef struct ppb {
    const mp_graph *t;
    const mp_parallel_options *o;
    mp_ctx *ctx;
    uint32_t *stage;     /* per training node; MP_NONE: every stage */
    uint8_t *shared;     /* per node: reads only persistent tensors */
    uint8_t *pgrad;      /* per tensor: a parameter's final gradient */
    uint32_t nst;        /* forward stages: pp, or pp x V model chunks */
    /* building rank s: its chunks are the stages s, s + pp, ... */
    uint32_t s, k;       /* the rank, most micro-batches of a chunk */
    uint32_t *kc;        /* micro-batches in flight per chunk */
    mp__pb *B;
    uint32_t *tm;        /* k x n_tensors: each micro-batch's copy */
    uint32_t *sm;        /* shared (persistent, once per stage) */
    uint32_t *acc;       /* per tensor: the gradient summed so far */
    char name[1200];
} ppb;

/* Does stage (model chunk) q run on the rank being built? */
static bool mine(const ppb *P, uint32_t q)
{
    return q != MP_NONE && q % P->o->pp == P->s;
}

static bool persistent_root(const mp_graph *t, uint32_t x)
{
    return mp__kind_persistent(t->tensors[t->tensors[x].root].kind) ||
           mp__kind_persistent(t->tensors[x].kind);
}

/* The forward nodes' stages: contiguous ranges of the topological order
 * (cut after each named node, or where the running weight passes s/pp of
 * the total: by memory the outputs' bytes and 4 x the bytes of the
 * parameters first read, by compute the node's FLOPs); a node reading only persistent tensors (a cast or
 * transposed weight) goes with its first reader. */
static mp_status forward_stages(ppb *P)
{
    const mp_graph *t = P->t;
    uint32_t pp = P->nst, nn = (uint32_t)t->n_nodes;
    uint8_t *seen = mp__calloc(P->ctx, t->n_tensors + 1, 1);
    uint64_t *wt = mp__calloc(P->ctx, nn + 1, sizeof *wt);
    if (!seen || !wt) {
        mp__dealloc(P->ctx, seen);
        mp__dealloc(P->ctx, wt);
        return MP_ERR_NOMEM;
    }
    uint64_t total = 0;
    for (uint32_t k = 0; k < nn; k++) {
        uint32_t v = t->topo[k];
        const mp__node *n = &t->nodes[v];
        P->stage[v] = MP_NONE;
        if (n->phase != MP_PHASE_FORWARD)
            continue;
        bool sh = n->n_in > 0;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE)
                continue;
            bool pers = persistent_root(t, x);
            bool from_shared = t->tensors[x].producer != MP_NONE &&
                               P->shared[t->tensors[x].producer];
            sh &= pers || from_shared;
            if (pers && !seen[x] && t->tensors[x].producer == MP_NONE) {
                seen[x] = 1;
                wt[v] += 4 * t->tensors[x].bytes;
            }
        }
        P->shared[v] = sh;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE &&
                mp__tensor_in_arena(&t->tensors[n->outputs[o]]))
                wt[v] += t->tensors[n->outputs[o]].bytes;
        double flops = 0, bytes = 0;
        if (P->o->balance_compute)
            wt[v] = mp__node_flops_bytes(t, v, &flops, &bytes) == MP_OK &&
                            flops > 0
                        ? (uint64_t)flops
                        : 0;
        if (!sh)
            total += wt[v];
    }
    /* cut points by name */
    uint32_t *cut = mp__alloc(P->ctx, (nn + 1) * sizeof *cut);
    mp_status st = cut ? MP_OK : MP_ERR_NOMEM;
    for (uint32_t v = 0; v < nn && cut; v++)
        cut[v] = 0;
    uint32_t n_cuts = 0;
    const char *c = P->o->cuts;
    while (!st && c && *c) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        char nm[512];
        snprintf(nm, sizeof nm, "%.*s", (int)len, c);
        uint32_t v;
        if (mp_graph_find_node(t, nm, &v) != MP_OK ||
            t->nodes[v].phase != MP_PHASE_FORWARD)
            st = mp__err(P->ctx, MP_ERR_INVALID_ARG,
                         "parallel: cut point (--pp-cuts) '%s' is no "
                         "forward node",
                         nm);
        else
            cut[v] = 1, n_cuts++;
        c = e ? e + 1 : NULL;
    }
    if (!st && P->o->cuts && n_cuts != pp - 1)
        st = mp__err(P->ctx, MP_ERR_INVALID_ARG,
                     "parallel: %u cut points (--pp-cuts) for %u stages "
                     "(model chunks); give %u",
                     (unsigned)n_cuts, (unsigned)pp, (unsigned)(pp - 1));
    uint32_t s = 0;
    uint64_t run = 0;
    for (uint32_t k = 0; k < nn && !st; k++) {
        uint32_t v = t->topo[k];
        if (t->nodes[v].phase != MP_PHASE_FORWARD || P->shared[v])
            continue;
        P->stage[v] = s;
        run += wt[v];
        bool next = P->o->cuts
                        ? cut[v] != 0
                        : (double)run * pp >= (double)total * (s + 1);
        if (next && s + 1 < pp)
            s++;
    }
    if (!st && s + 1 < pp)
        st = mp__err(P->ctx, MP_ERR_GRAPH,
                     "parallel: %u pipeline stages (--pp) but the forward "
                     "pass fills only %u; give fewer stages",
                     (unsigned)pp, (unsigned)(s + 1));
    /* shared nodes: the stage of their first reader (reverse order) */
    for (uint32_t k = nn; k-- > 0 && !st;) {
        uint32_t v = t->topo[k];
        if (!P->shared[v])
            continue;
        uint32_t best = MP_NONE;
        const mp__node *n = &t->nodes[v];
        for (uint32_t o = 0; o < n->n_out; o++) {
            const mp__tensor *x = n->outputs[o] == MP_NONE
                                      ? NULL
                                      : &t->tensors[n->outputs[o]];
            for (uint32_t i = 0; x && i < x->n_cons; i++) {
                uint32_t q = P->stage[t->cons[x->cons_begin + i]];
                if (q < best)
                    best = q;
            }
        }
        P->stage[v] = best == MP_NONE ? 0 : best;
    }
    mp__dealloc(P->ctx, cut);
    mp__dealloc(P->ctx, seen);
    mp__dealloc(P->ctx, wt);
    return st;
}

/* The stage of forward tensor x's producer, or of a weight's first
 * reader. */
static uint32_t tensor_stage(const ppb *P, uint32_t x)
{
    const mp_graph *t = P->t;
    const mp__tensor *tt = &t->tensors[x];
    if (tt->producer != MP_NONE)
        return P->stage[tt->producer];
    uint32_t best = MP_NONE;
    for (uint32_t i = 0; i < tt->n_cons; i++) {
        uint32_t v = t->cons[tt->cons_begin + i];
        if (t->nodes[v].phase == MP_PHASE_FORWARD && P->stage[v] < best)
            best = P->stage[v];
    }
    return best;
}

/* Backward, accumulation and optimizer nodes: the stage of what they
 * differentiate or update; the rest (the foreach group's temporary)
 * every stage. Parameter gradients are marked. */
static void other_stages(ppb *P)
{
    const mp_graph *t = P->t;
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        uint32_t v = t->topo[k], x;
        const mp__node *n = &t->nodes[v];
        if (n->phase == MP_PHASE_FORWARD)
            continue;
        uint32_t src = mp__train_source(t, v, &x);
        P->stage[v] = src != MP_NONE ? P->stage[src]
                      : x != MP_NONE ? tensor_stage(P, x)
                                     : MP_NONE;
        if (n->phase == MP_PHASE_OPTIMIZER && n->n_in >= 2 &&
            x != MP_NONE && n->inputs[1] != MP_NONE)
            P->pgrad[n->inputs[1]] = 1;
    }
}

/* ---- one stage's graph ---------------------------------------------------- */

static uint32_t *copy_map(ppb *P, uint32_t j)
{
    return P->tm + (size_t)j * P->t->n_tensors;
}

static mp_status ensure_shared(ppb *P, uint32_t v);

/* A tensor with the name of x (and "#mbJ" for micro-batch j when the
 * stage holds several), its role. */
static mp_status new_copy(ppb *P, uint32_t x, int j, const char *prefix,
                          uint8_t role, uint32_t *id)
{
    const mp__tensor *tt = &P->t->tensors[x];
    if (j >= 0 && P->k > 1)
        snprintf(P->name, sizeof P->name, "%s%s#mb%d", prefix, tt->name,
                 j + 1);
    else
        snprintf(P->name, sizeof P->name, "%s%s", prefix, tt->name);
    mp__tensor like = *tt;
    if (*prefix)
        like.declared_kind = MP_KIND_ACTIVATION;
    return mp__pb_add_tensor(P->B, &like, P->name, -1, role, id);
}

/* Training tensor x as micro-batch j of stage s reads it in pass ph:
 * shared (persistent, or made only of persistent tensors), the
 * micro-batch's own copy, or received from the stage producing it. */
static mp_status get(ppb *P, uint32_t x, uint32_t j, mp_phase ph,
                     uint32_t *out)
{
    const mp_graph *t = P->t;
    const mp__tensor *tt = &t->tensors[x];
    mp_status st;
    uint32_t pv = tt->producer;
    if (pv == MP_NONE ? tt->declared_kind != MP_KIND_INPUT &&
                            tt->declared_kind != MP_KIND_ACTIVATION
                      : P->shared[pv]) {
        if (P->sm[x] == MP_NONE) {
            if (pv != MP_NONE && mine(P, P->stage[pv])) {
                if ((st = ensure_shared(P, pv)))
                    return st;
            } else {
                /* a persistent tensor another stage computes: held here
                 * as what it is */
                mp__tensor like = *tt;
                like.declared_kind = mp__kind_persistent(tt->kind)
                                         ? tt->kind
                                         : MP_KIND_CONSTANT;
                like.flags |= MP__TF_BYTES_GIVEN;
                if ((st = mp__pb_add_tensor(P->B, &like, NULL, -1,
                                            MP__ROLE_PARAM, &P->sm[x])))
                    return st;
            }
        }
        *out = P->sm[x];
        return MP_OK;
    }
    /* an optimizer node's output (the foreach temporary): once */
    uint32_t *m = pv != MP_NONE && t->nodes[pv].phase == MP_PHASE_OPTIMIZER
                      ? P->sm
                      : copy_map(P, j);
    if (m[x] != MP_NONE) {
        *out = m[x];
        return MP_OK;
    }
    if (pv == MP_NONE || mine(P, P->stage[pv])) {
        /* a graph input: each micro-batch its own */
        st = new_copy(P, x, (int)j, "", MP__ROLE_ACT, &m[x]);
        *out = m[x];
        return st;
    }
    /* received from the stage that computes it */
    if ((st = new_copy(P, x, (int)j, "recv/", MP__ROLE_COMM, &m[x])))
        return st;
    P->B->n_coll++;
    *out = m[x];
    return mp__pb_add_node(P->B, NULL, P->name, "Recv", NULL, 0, &m[x], 1,
                           ph);
}

/* Node v as stage s runs it for micro-batch j (shared: j 0): inputs
 * through get, its outputs the micro-batch's copies; then a Send of
 * each output another stage reads, and a parameter gradient summed into
 * the micro-batches' total. */
static mp_status emit_io(ppb *P, uint32_t v, uint32_t j, uint32_t *in,
                         uint32_t *out)
{
    const mp_graph *t = P->t;
    const mp__node *n = &t->nodes[v];
    mp__pb *B = P->B;
    mp_status st;
    bool every = P->stage[v] == MP_NONE;
    uint32_t nin = 0;
    uint64_t group_elems = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t x = n->inputs[i];
        if (x == MP_NONE) {
            in[nin++] = MP_NONE;
            continue;
        }
        if (every && !mine(P, tensor_stage(P, x)) &&
            t->tensors[x].producer != MP_NONE)
            continue; /* a group node: this stage's part */
        if (n->phase == MP_PHASE_OPTIMIZER && P->acc[x] != MP_NONE) {
            in[nin++] = P->acc[x];
        } else if ((st = get(P, x, j, (mp_phase)n->phase, &in[nin++]))) {
            return st;
        }
        if (every) {
            const mp__tensor *xt = &t->tensors[x];
            unsigned bits = mp_dtype_bits((mp_dtype)xt->dtype);
            group_elems += bits >= 8 ? xt->bytes / (bits / 8) : xt->bytes;
        }
    }
    uint32_t *m = P->shared[v] || n->phase == MP_PHASE_OPTIMIZER
                      ? P->sm
                      : copy_map(P, j);
    for (uint32_t o = 0; o < n->n_out; o++) {
        uint32_t y = n->outputs[o];
        out[o] = MP_NONE;
        if (y == MP_NONE)
            continue;
        int jj = m == P->sm ? -1 : (int)j;
        uint8_t role = n->phase == MP_PHASE_OPTIMIZER ? MP__ROLE_OPT
                                                      : MP__ROLE_ACT;
        if (every && n->n_out == 1) {
            /* the group's temporary over this stage's part */
            if ((st = mp__pb_add_buffer(B, t->tensors[y].name,
                                        (mp_dtype)t->tensors[y].dtype,
                                        group_elems, role, &m[y])))
                return st;
        } else if ((st = new_copy(P, y, jj, "", role, &m[y]))) {
            return st;
        }
        if (t->tensors[y].flags & MP__TF_OUTPUT)
            mp_graph_mark_output(B->g, m[y]);
        out[o] = m[y];
    }
    if (P->k > 1 && m != P->sm)
        snprintf(P->name, sizeof P->name, "%s#mb%u", n->name,
                 (unsigned)j + 1);
    else
        snprintf(P->name, sizeof P->name, "%s", n->name);
    if ((st = mp__pb_add_node(B, n, P->name, NULL, in, nin, out,
                              n->n_out, (mp_phase)n->phase)))
        return st;
    for (uint32_t o = 0; o < n->n_out; o++) {
        uint32_t y = n->outputs[o];
        if (y == MP_NONE)
            continue;
        const mp__tensor *yt = &t->tensors[y];
        bool away = false;
        for (uint32_t i = 0; i < yt->n_cons && !away; i++) {
            uint32_t q = P->stage[t->cons[yt->cons_begin + i]];
            away = q != MP_NONE && !mine(P, q);
        }
        if (away && !P->shared[v]) {
            uint32_t done;
            if (P->k > 1)
                snprintf(P->name, sizeof P->name, "send/%s#mb%u", yt->name,
                         (unsigned)j + 1);
            else
                snprintf(P->name, sizeof P->name, "send/%s", yt->name);
            if ((st = mp__pb_add_buffer(B, P->name, MP_DTYPE_UINT8, 0,
                                        MP__ROLE_COMM, &done)))
                return st;
            B->n_coll++;
            if ((st = mp__pb_add_node(B, NULL, P->name, "Send", &m[y], 1,
                                      &done, 1, (mp_phase)n->phase)))
                return st;
        }
        if (P->pgrad[y] && m != P->sm) {
            /* the micro-batches' gradients summed as they come */
            if (P->acc[y] == MP_NONE) {
                P->acc[y] = m[y];
                continue;
            }
            uint32_t sum, two[2] = {P->acc[y], m[y]};
            snprintf(P->name, sizeof P->name, "%s#acc%u", yt->name,
                     (unsigned)j + 1);
            mp__tensor like = *yt;
            mp_node_desc d;
            memset(&d, 0, sizeof d);
            d.name = P->name;
            d.op = "Sum";
            d.inputs = two;
            d.n_inputs = 2;
            d.outputs = &sum;
            d.n_outputs = 1;
            d.phase = MP_PHASE_BACKWARD;
            uint32_t id;
            if ((st = mp__pb_add_tensor(B, &like, P->name, -1, MP__ROLE_GRAD,
                                        &sum)) ||
                (st = mp_graph_add_node(B->g, &d, &id)))
                return st;
            P->acc[y] = sum;
        }
    }
    return MP_OK;
}

/* emit_io with operand arrays of its own: a shared node another node
 * reads is emitted while that node's operands are being gathered */
static mp_status emit(ppb *P, uint32_t v, uint32_t j)
{
    const mp__node *n = &P->t->nodes[v];
    uint32_t *io = mp__alloc(P->ctx, ((size_t)n->n_in + n->n_out + 1) *
                                         sizeof *io);
    if (!io)
        return MP_ERR_NOMEM;
    mp_status st = emit_io(P, v, j, io, io + n->n_in);
    mp__dealloc(P->ctx, io);
    return st;
}

static mp_status ensure_shared(ppb *P, uint32_t v)
{
    const mp__node *n = &P->t->nodes[v];
    for (uint32_t o = 0; o < n->n_out; o++)
        if (n->outputs[o] != MP_NONE && P->sm[n->outputs[o]] != MP_NONE)
            return MP_OK;
    return emit(P, v, 0);
}

/* The micro-batches whose activations rank r's model chunks hold at
 * once (kc[c] for chunk c). GPipe: M; 1F1B (PipeDream-Flush): min(pp -
 * r, M). Interleaved 1F1B (Megatron-LM's
 * forward_backward_pipelining_with_interleaving): rank r runs W = (pp -
 * r - 1) * 2 + (V - 1) * pp warm-up forwards (all M x V when M = pp),
 * forward k going to chunk (k mod (pp V)) / pp, and one more before its
 * first backward; each chunk holds the forwards it ran by then. Rank 0
 * holds pp + (pp - 1) / V chunk-forwards of pp x V: Megatron's
 * interleaved_schedule_memory_penalty 1 + (pp - 1) / (pp V) times pp
 * micro-batches of its layers. */
static void in_flight(const mp_parallel_options *o, uint32_t r, uint32_t *kc)
{
    uint32_t pp = o->pp, M = o->microbatches;
    if (o->schedule != MP_PP_INTERLEAVED) {
        kc[0] = o->schedule == MP_PP_GPIPE ? M : pp - r < M ? pp - r : M;
        return;
    }
    uint32_t V = o->virtual_stages;
    uint64_t total = (uint64_t)M * V, w = total;
    if (M != pp) {
        w = (uint64_t)(pp - r - 1) * 2 + (uint64_t)(V - 1) * pp + 1;
        w = w < total ? w : total;
    }
    for (uint32_t c = 0; c < V; c++)
        kc[c] = 0;
    for (uint64_t k = 0; k < w; k++)
        kc[(k % ((uint64_t)pp * V)) / pp]++;
}

/* Stage s's graph, finalized, in B. */
static mp_status build_stage(ppb *P, uint32_t s, mp__pb *B)
{
    const mp_graph *t = P->t;
    const mp_parallel_options *o = P->o;
    P->s = s;
    in_flight(o, s, P->kc);
    P->k = 0;
    for (uint32_t c = 0; c < P->nst / o->pp; c++)
        P->k = P->kc[c] > P->k ? P->kc[c] : P->k;
    char suffix[64];
    snprintf(suffix, sizeof suffix, " (stage %u)", (unsigned)s);
    mp_status st = mp__pb_begin(B, P->ctx, t, suffix);
    size_t nt = t->n_tensors;
    P->B = B;
    P->tm = mp__alloc(P->ctx, ((size_t)P->k * nt + 1) * sizeof *P->tm);
    P->sm = mp__alloc(P->ctx, (nt + 1) * sizeof *P->sm);
    P->acc = mp__alloc(P->ctx, (nt + 1) * sizeof *P->acc);
    if (!st && (!P->tm || !P->sm || !P->acc))
        st = MP_ERR_NOMEM;
    for (size_t i = 0; !st && i < (size_t)P->k * nt; i++)
        P->tm[i] = MP_NONE;
    for (size_t i = 0; !st && i < nt; i++)
        P->sm[i] = P->acc[i] = MP_NONE;
    /* the micro-batches' forwards, their backwards, the steps */
    static const mp_phase phases[] = {MP_PHASE_FORWARD, MP_PHASE_BACKWARD};
    for (int ph = 0; ph < 2 && !st; ph++)
        for (uint32_t j = 0; j < P->k && !st; j++)
            for (uint32_t q = 0; q < t->n_nodes && !st; q++) {
                uint32_t v = t->topo[q];
                if (t->nodes[v].phase == phases[ph] &&
                    mine(P, P->stage[v]) && !P->shared[v] &&
                    j < P->kc[P->stage[v] / o->pp])
                    st = emit(P, v, j);
            }
    for (uint32_t q = 0; q < t->n_nodes && !st; q++) {
        uint32_t v = t->topo[q];
        if (t->nodes[v].phase == MP_PHASE_OPTIMIZER &&
            (mine(P, P->stage[v]) || P->stage[v] == MP_NONE))
            st = emit(P, v, 0);
    }
    if (!st && !B->g->n_nodes)
        st = mp__err(P->ctx, MP_ERR_GRAPH, "parallel: stage %u has no node",
                     (unsigned)s);
    if (!st)
        st = mp_graph_finalize(B->g);
    mp__dealloc(P->ctx, P->tm);
    mp__dealloc(P->ctx, P->sm);
    mp__dealloc(P->ctx, P->acc);
    P->tm = P->sm = P->acc = NULL;
    return st;
}

mp_status mp__parallel_pipeline(const mp_graph *t,
                                const mp_parallel_options *o, mp__pb *out,
                                uint32_t *in_flight)
{
    ppb P;
    memset(&P, 0, sizeof P);
    P.t = t;
    P.o = o;
    P.ctx = t->ctx;
    uint32_t V = o->schedule == MP_PP_INTERLEAVED ? o->virtual_stages : 1;
    uint64_t nst = (uint64_t)o->pp * V;
    if (nst > UINT32_MAX / 2)
        return mp__err(P.ctx, MP_ERR_OVERFLOW, "parallel: pp x virtual "
                       "stages");
    P.nst = (uint32_t)nst;
    P.kc = mp__calloc(P.ctx, V, sizeof *P.kc);
    P.stage = mp__alloc(P.ctx, (t->n_nodes + 1) * sizeof *P.stage);
    P.shared = mp__calloc(P.ctx, t->n_nodes + 1, 1);
    P.pgrad = mp__calloc(P.ctx, t->n_tensors + 1, 1);
    mp_status st = P.stage && P.shared && P.pgrad && P.kc ? MP_OK
                                                          : MP_ERR_NOMEM;
    if (!st)
        st = forward_stages(&P);
    if (!st) {
        other_stages(&P);
        bool any = false;
        for (uint32_t x = 0; x < t->n_tensors; x++)
            any |= P.pgrad[x] != 0;
        if (!any)
            st = mp__parallel_not_training(t);
    }
    for (uint32_t s = 0; s < o->pp && !st; s++) {
        mp__pb S;
        st = build_stage(&P, s, &S);
        if (!st)
            st = mp__parallel_dp(S.g, o, "", 0, &out[s]);
        out[s].n_coll += S.n_coll; /* the stage's Send and Recv */
        in_flight[s] = 0;
        for (uint32_t c = 0; c < V; c++)
            in_flight[s] += P.kc[c];
        mp__pb_free(&S);
    }
    mp__dealloc(P.ctx, P.stage);
    mp__dealloc(P.ctx, P.shared);
    mp__dealloc(P.ctx, P.pgrad);
    mp__dealloc(P.ctx, P.kc);
    return st;
}
