/* Per-rank graphs of multi-GPU training (memplan/parallel.h,
 * docs/distributed.md). From a training graph, the graph one rank runs:
 * the training graph's nodes in their order, each parameter, gradient and
 * optimizer state sized as the rank holds it, and the collectives
 * (memplan::AllReduce, AllGather, ReduceScatter, Send, Recv) as nodes
 * whose outputs are the communication buffers, placed where the default
 * schedule runs them: a gradient bucket's reduction right after the node
 * that completes its last gradient, a ZeRO-3 unit's all-gather before the
 * first node that reads one of its parameters (and `prefetch` units
 * ahead). Pipeline stages (planner/parallel_pp.c) cut the training graph
 * into the stages' graphs first. */
#include "ranks.h"

#include <stdio.h>
#include <string.h>

static const char *const sched_names[] = {"gpipe", "1f1b",
                                          "interleaved-1f1b"};

const char *mp_pp_schedule_name(mp_pp_schedule s)
{
    return (unsigned)s < 3 ? sched_names[s] : "unknown";
}

mp_status mp_pp_schedule_parse(const char *name, mp_pp_schedule *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < 3; i++)
        if (!strcmp(name, sched_names[i])) {
            *out = (mp_pp_schedule)i;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}

void mp_parallel_options_init(mp_parallel_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->dp = 1;
    o->bucket_bytes = MP_DEFAULT_BUCKET_BYTES;
    o->prefetch = 1;
    o->pp = 1;
    o->microbatches = 1;
    o->schedule = MP_PP_1F1B;
    o->virtual_stages = 2;
    o->tp = 1;
}

/* ---- the rank graph's builder ------------------------------------------- */

uint64_t mp__ceil_div(uint64_t n, uint64_t d)
{
    return n / d + (n % d != 0);
}

/* Elements of tensor t (its dims, else its bytes over its element size). */
static uint64_t numel(const mp__tensor *t)
{
    if (t->rank >= 0) {
        uint64_t n = 1;
        for (int32_t i = 0; i < t->rank; i++)
            n *= t->dims[i] > 0 ? (uint64_t)t->dims[i] : 0;
        return n;
    }
    unsigned bits = mp_dtype_bits((mp_dtype)t->dtype);
    return bits >= 8 ? t->bytes / (bits / 8) : t->bytes;
}

mp_status mp__pb_add_tensor(mp__pb *B, const mp__tensor *like,
                            const char *name, int64_t shard, uint8_t role,
                            uint32_t *id)
{
    mp_status st;
    if (shard >= 0) {
        mp_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = name ? name : like->name;
        d.dtype = (mp_dtype)like->dtype;
        d.kind = (mp_tensor_kind)like->declared_kind;
        d.rank = 1;
        d.dims = &shard;
        st = mp_graph_add_tensor(B->g, &d, id);
    } else {
        st = mp__graph_copy_tensor(B->g, like, name, id);
    }
    if (st || (st = mp__grow(B->ctx, (void **)&B->role, 1, *id + 1,
                             &B->cap_role)))
        return st;
    B->role[*id] = role;
    return MP_OK;
}

mp_status mp__pb_add_buffer(mp__pb *B, const char *name, mp_dtype dt,
                            uint64_t elems, uint8_t role, uint32_t *id)
{
    if (elems > (uint64_t)INT64_MAX)
        return mp__err(B->ctx, MP_ERR_OVERFLOW, "%s: %llu elements", name,
                       (unsigned long long)elems);
    mp__tensor like;
    memset(&like, 0, sizeof like);
    like.name = (char *)name;
    like.dtype = (uint8_t)dt;
    like.declared_kind = MP_KIND_ACTIVATION;
    return mp__pb_add_tensor(B, &like, name, (int64_t)elems, role, id);
}

mp_status mp__pb_add_node(mp__pb *B, const mp__node *like, const char *name,
                          const char *op, const uint32_t *in, uint32_t nin,
                          const uint32_t *out, uint32_t nout, mp_phase ph)
{
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name ? name : like->name;
    d.op = op ? op : like->op;
    d.domain = op ? "memplan" : like->domain;
    d.inputs = in;
    d.n_inputs = nin;
    d.outputs = out;
    d.n_outputs = nout;
    d.phase = ph;
    uint32_t id;
    mp_status st = mp_graph_add_node(B->g, &d, &id);
    if (st || !like || op)
        return st;
    B->g->nodes[id].bwd_pointwise = like->bwd_pointwise;
    if ((st = mp__node_copy_attrs(B->g, like, id)))
        return st;
    if (like->flops >= 0 || like->bytes_moved >= 0 || like->seconds >= 0)
        st = mp_graph_set_node_cost(B->g, id, like->flops, like->bytes_moved,
                                    like->seconds);
    return st;
}

/* A collective: op, name, inputs and outputs (rank ids), attribute
 * group "dp". */
static mp_status add_collective(mp__pb *B, const char *op, const char *name,
                                const uint32_t *in, uint32_t nin,
                                const uint32_t *out, uint32_t nout,
                                mp_phase ph)
{
    B->n_coll++;
    mp_status st = mp__pb_add_node(B, NULL, name, op, in, nin, out, nout, ph);
    /* the group it runs in: the data-parallel ranks of its stage (and
     * tensor-parallel index); Send and Recv have none (the pipeline's) */
    return st ? st
              : mp_graph_set_attr_string(B->g, (uint32_t)B->g->n_nodes - 1,
                                         "group", "dp");
}

/* ---- parameters, groups, units ------------------------------------------ */

typedef struct par_param {
    uint32_t w, grad, step;  /* training ids: weight, final gradient, step */
    uint32_t group, unit;
    uint32_t ready;          /* topological position completing grad */
    uint64_t elems;
    uint8_t need[2];         /* ZeRO-3: read in forward / backward */
} par_param;

typedef struct par_group {   /* a gradient bucket or a ZeRO-3 unit */
    uint32_t ready;          /* after this topological position */
    uint32_t n, left;        /* parameters; steps not yet run */
    uint32_t out;            /* the reduced buffer (rank id) */
    uint64_t elems;          /* of the buffer */
    uint8_t dtype;
    char *name;              /* units: their name (NULL: buckets) */
    uint8_t gathered[2];
} par_group;

typedef struct dpb {
    mp__pb *B;
    const mp_graph *t;
    const mp_parallel_options *o;
    par_param *P;
    uint32_t np;
    par_group *G;
    uint32_t ng;
    uint32_t *pidx;      /* training tensor -> parameter, or MP_NONE */
    uint32_t *step_of;   /* training node -> parameter it steps, or MP_NONE */
    uint32_t *tpos;      /* training node -> topological position */
    uint32_t *members;   /* parameters by group (G[g] from moff[g]) */
    uint32_t *moff;
    /* ZeRO-3 */
    uint8_t *derived;    /* training tensor computed from parameters only */
    uint32_t *dmap[2];   /* its forward / backward copy (rank id) */
    uint32_t *order[2];  /* units by first use in forward / backward */
    uint32_t n_order[2];
    uint32_t *vis[2];
    bool reduce;         /* dp > 1: gradients reduced across ranks */
    bool need_params;    /* no optimizer step is an error */
    char name[1200];
} dpb;

mp_status mp__parallel_not_training(const mp_graph *t)
{
    return mp__err(t->ctx, MP_ERR_GRAPH,
                   "parallel: '%s' is not a training graph (no optimizer "
                   "step updates a weight); make one with mp_train_graph "
                   "(memplan plan --train)",
                   t->name ? t->name : "graph");
}

/* Parameters: the weights the training graph's optimizer steps update
 * (a phase-optimizer node reading a weight as input 0 and a gradient as
 * input 1). */
static mp_status find_params(dpb *D)
{
    const mp_graph *t = D->t;
    mp_ctx *ctx = D->B->ctx;
    D->P = mp__calloc(ctx, t->n_nodes + 1, sizeof *D->P);
    D->pidx = mp__alloc(ctx, (t->n_tensors + 1) * sizeof *D->pidx);
    D->step_of = mp__alloc(ctx, (t->n_nodes + 1) * sizeof *D->step_of);
    D->tpos = mp__alloc(ctx, (t->n_nodes + 1) * sizeof *D->tpos);
    if (!D->P || !D->pidx || !D->step_of || !D->tpos)
        return MP_ERR_NOMEM;
    for (uint32_t x = 0; x < t->n_tensors; x++)
        D->pidx[x] = MP_NONE;
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        D->tpos[t->topo[k]] = k;
        D->step_of[k] = MP_NONE;
    }
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        uint32_t v = t->topo[k];
        const mp__node *n = &t->nodes[v];
        if (n->phase != MP_PHASE_OPTIMIZER || n->n_in < 2 ||
            n->inputs[0] == MP_NONE || n->inputs[1] == MP_NONE)
            continue;
        uint32_t w = n->inputs[0], gr = n->inputs[1];
        if (t->tensors[w].declared_kind != MP_KIND_WEIGHT ||
            t->tensors[gr].kind != MP_KIND_GRADIENT ||
            D->pidx[w] != MP_NONE || t->tensors[gr].producer == MP_NONE)
            continue;
        par_param *p = &D->P[D->np];
        p->w = w;
        p->grad = gr;
        p->step = v;
        p->elems = numel(&t->tensors[w]);
        p->ready = D->tpos[t->tensors[gr].producer];
        D->pidx[w] = D->np;
        D->step_of[v] = D->np++;
    }
    if (!D->np && D->need_params)
        return mp__parallel_not_training(t);
    return MP_OK;
}

/* The unit of parameter name `s`: "layer" (or NULL): up to its first
 * all-digit component; else `unit` as a prefix and the next component. */
static void unit_key(const char *s, const char *unit, char *buf, size_t cap)
{
    size_t len = strlen(s), end = 0;
    if (!unit || !strcmp(unit, "layer")) {
        size_t a = 0;
        while (a < len) {
            size_t b = a;
            while (b < len && s[b] != '.' && s[b] != '/')
                b++;
            bool digits = b > a;
            for (size_t i = a; i < b; i++)
                digits &= s[i] >= '0' && s[i] <= '9';
            if (digits) {
                end = b;
                break;
            }
            a = b + 1;
        }
    } else if (*unit && !strncmp(s, unit, strlen(unit))) {
        end = strlen(unit);
        if (end < len && (s[end] == '.' || s[end] == '/'))
            end++;
        while (end < len && s[end] != '.' && s[end] != '/')
            end++;
    }
    if (!end)
        snprintf(buf, cap, "root");
    else
        snprintf(buf, cap, "%.*s", (int)end, s);
}

static mp_status new_group(dpb *D, uint8_t dtype, const char *name)
{
    par_group *g = &D->G[D->ng++];
    memset(g, 0, sizeof *g);
    g->dtype = dtype;
    g->out = MP_NONE;
    if (name && !(g->name = mp__strdup(D->B->ctx, name)))
        return MP_ERR_NOMEM;
    return MP_OK;
}

/* Stages 0-2: buckets of gradients in the order they complete, each up
 * to bucket_bytes (one dtype a bucket); stage 3: one group per unit. */
static mp_status make_groups(dpb *D)
{
    mp_ctx *ctx = D->B->ctx;
    const mp_graph *t = D->t;
    D->G = mp__calloc(ctx, D->np, sizeof *D->G);
    uint32_t *ord = mp__alloc(ctx, D->np * sizeof *ord);
    D->members = mp__alloc(ctx, D->np * sizeof *D->members);
    D->moff = mp__alloc(ctx, (D->np + 1) * sizeof *D->moff);
    if (!D->G || !ord || !D->members || !D->moff) {
        mp__dealloc(ctx, ord);
        return MP_ERR_NOMEM;
    }
    /* by completion (stable insertion sort: few hundred parameters) */
    for (uint32_t i = 0; i < D->np; i++) {
        uint32_t j = i;
        while (j > 0 && D->P[ord[j - 1]].ready > D->P[i].ready) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    mp_status st = MP_OK;
    uint64_t fill = 0;
    for (uint32_t k = 0; k < D->np && !st; k++) {
        par_param *p = &D->P[ord[k]];
        const mp__tensor *gt = &t->tensors[p->grad];
        if (D->o->zero == 3) {
            char key[512];
            unit_key(t->tensors[p->w].name, D->o->fsdp_unit, key, sizeof key);
            uint32_t u = 0;
            while (u < D->ng && strcmp(D->G[u].name, key))
                u++;
            if (u == D->ng && (st = new_group(D, gt->dtype, key)))
                break;
            p->group = p->unit = u;
        } else {
            uint64_t b = gt->bytes;
            if (!D->ng || D->G[D->ng - 1].dtype != gt->dtype ||
                (fill && b > D->o->bucket_bytes - fill) ||
                fill >= D->o->bucket_bytes) {
                if ((st = new_group(D, gt->dtype, NULL)))
                    break;
                fill = 0;
            }
            fill += b;
            p->group = D->ng - 1;
        }
        par_group *g = &D->G[p->group];
        uint64_t e = D->o->zero >= 2 ? mp__ceil_div(p->elems, D->o->dp)
                                     : p->elems;
        if (!mp__add_u64(g->elems, e, &g->elems))
            st = mp__err(ctx, MP_ERR_OVERFLOW, "parallel: bucket size");
        if (p->ready > g->ready || !g->n)
            g->ready = p->ready;
        g->n++;
    }
    /* members by group, in completion order */
    for (uint32_t g = 0, at = 0; g <= D->ng && !st; g++) {
        D->moff[g] = at;
        for (uint32_t k = 0; g < D->ng && k < D->np; k++)
            if (D->P[ord[k]].group == g)
                D->members[at++] = ord[k];
    }
    for (uint32_t g = 0; g < D->ng; g++)
        D->G[g].left = D->G[g].n;
    mp__dealloc(ctx, ord);
    return st;
}

/* ---- ZeRO-3: parameters gathered before use -------------------------------
 * A tensor computed only from parameters and constants (a transposed or
 * cast weight) is derived: each pass reads its own copy, made from that
 * pass's gathered parameters right before its first reader there. */

static bool from_param(const dpb *D, uint32_t x)
{
    return x != MP_NONE && (D->pidx[x] != MP_NONE || D->derived[x]);
}

static mp_status find_derived(dpb *D)
{
    const mp_graph *t = D->t;
    mp_ctx *ctx = D->B->ctx;
    D->derived = mp__calloc(ctx, t->n_tensors + 1, 1);
    if (!D->derived)
        return MP_ERR_NOMEM;
    for (int ph = 0; ph < 2; ph++) {
        D->dmap[ph] = mp__alloc(ctx, (t->n_tensors + 1) * sizeof(uint32_t));
        D->vis[ph] = mp__calloc(ctx, t->n_tensors + 1, sizeof(uint32_t));
        D->order[ph] = mp__alloc(ctx, (D->ng + 1) * sizeof(uint32_t));
        if (!D->dmap[ph] || !D->vis[ph] || !D->order[ph])
            return MP_ERR_NOMEM;
        for (uint32_t x = 0; x < t->n_tensors; x++)
            D->dmap[ph][x] = MP_NONE;
    }
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        const mp__node *n = &t->nodes[t->topo[k]];
        if (n->phase == MP_PHASE_OPTIMIZER || !n->n_in)
            continue;
        bool any = false, all = true;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE)
                continue;
            if (from_param(D, x))
                any = true;
            else if (!mp__kind_persistent(t->tensors[t->tensors[x].root].kind))
                all = false;
        }
        for (uint32_t o = 0; any && all && o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE)
                D->derived[n->outputs[o]] = 1;
    }
    return MP_OK;
}

/* Marks the parameters x (a parameter or derived tensor) is made of as
 * read in pass ph, and their units as used there (in order). */
static void mark_need(dpb *D, uint32_t x, int ph)
{
    if (D->vis[ph][x])
        return;
    D->vis[ph][x] = 1;
    if (D->pidx[x] != MP_NONE) {
        par_param *p = &D->P[D->pidx[x]];
        p->need[ph] = 1;
        par_group *u = &D->G[p->unit];
        if (!u->gathered[ph]) {
            u->gathered[ph] = 1; /* reset before emission */
            D->order[ph][D->n_order[ph]++] = p->unit;
        }
        return;
    }
    const mp__node *n = &D->t->nodes[D->t->tensors[x].producer];
    for (uint32_t i = 0; i < n->n_in; i++)
        if (from_param(D, n->inputs[i]))
            mark_need(D, n->inputs[i], ph);
}

static mp_status plan_gathers(dpb *D)
{
    const mp_graph *t = D->t;
    mp_status st = find_derived(D);
    if (st)
        return st;
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        const mp__node *n = &t->nodes[t->topo[k]];
        if (n->phase == MP_PHASE_OPTIMIZER)
            continue;
        int ph = n->phase == MP_PHASE_BACKWARD;
        bool derived_node = false;
        for (uint32_t o = 0; o < n->n_out; o++)
            derived_node |= n->outputs[o] != MP_NONE &&
                            D->derived[n->outputs[o]];
        if (derived_node)
            continue;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (from_param(D, n->inputs[i]))
                mark_need(D, n->inputs[i], ph);
    }
    for (uint32_t u = 0; u < D->ng; u++)
        D->G[u].gathered[0] = D->G[u].gathered[1] = 0;
    return MP_OK;
}

/* The all-gather of unit u for pass ph: every parameter of u read there,
 * full size, from the shards. */
static mp_status gather_one(dpb *D, uint32_t u, int ph)
{
    par_group *g = &D->G[u];
    mp__pb *B = D->B;
    g->gathered[ph] = 1;
    uint32_t nin = 0;
    mp_status st;
    for (uint32_t k = D->moff[u]; k < D->moff[u + 1]; k++) {
        par_param *p = &D->P[D->members[k]];
        if (!p->need[ph])
            continue;
        const mp__tensor *w = &D->t->tensors[p->w];
        snprintf(D->name, sizeof D->name, "fsdp/%s%s", w->name,
                 ph ? "/bwd" : "");
        mp__tensor full = *w;
        full.declared_kind = MP_KIND_ACTIVATION;
        full.value = NULL;
        if ((st = mp__pb_add_tensor(B, &full, D->name, -1, MP__ROLE_COMM,
                                    &D->dmap[ph][p->w])))
            return st;
        B->cbuf[nin] = B->tmap[p->w];
        B->cbuf[B->cap_buf / 2 + nin] = D->dmap[ph][p->w];
        nin++;
    }
    if (!nin)
        return MP_OK;
    snprintf(D->name, sizeof D->name, "fsdp/%s/all_gather%s", g->name,
             ph ? "_bwd" : "");
    return add_collective(D->B, "AllGather", D->name, B->cbuf, nin,
                          B->cbuf + B->cap_buf / 2, nin,
                          ph ? MP_PHASE_BACKWARD : MP_PHASE_FORWARD);
}

/* Unit u is needed now in pass ph: its all-gather and the next
 * `prefetch` units' of that pass, where not done. */
static mp_status gather_unit(dpb *D, uint32_t u, int ph)
{
    uint32_t k = 0;
    while (k < D->n_order[ph] && D->order[ph][k] != u)
        k++;
    for (uint32_t j = k; j < D->n_order[ph] && j <= k + (uint32_t)D->o->prefetch;
         j++) {
        mp_status st;
        if (!D->G[D->order[ph][j]].gathered[ph] &&
            (st = gather_one(D, D->order[ph][j], ph)))
            return st;
    }
    return MP_OK;
}

/* Pass ph's copy of a parameter or derived tensor x, made (with what it
 * is made of) when missing. */
static mp_status ensure(dpb *D, uint32_t x, int ph, uint32_t *out)
{
    mp_status st;
    if (D->dmap[ph][x] != MP_NONE) {
        *out = D->dmap[ph][x];
        return MP_OK;
    }
    const mp_graph *t = D->t;
    if (D->pidx[x] != MP_NONE) {
        if ((st = gather_unit(D, D->P[D->pidx[x]].unit, ph)))
            return st;
        *out = D->dmap[ph][x];
        return *out == MP_NONE
                   ? mp__err(D->B->ctx, MP_ERR_GRAPH,
                             "parallel: '%s' read but not gathered",
                             t->tensors[x].name)
                   : MP_OK;
    }
    const mp__node *n = &t->nodes[t->tensors[x].producer];
    uint32_t nin = n->n_in, nout = n->n_out;
    uint32_t *io = mp__alloc(D->B->ctx, (nin + nout + 1) * sizeof *io);
    if (!io)
        return MP_ERR_NOMEM;
    st = MP_OK;
    for (uint32_t i = 0; i < nin && !st; i++) {
        uint32_t y = n->inputs[i];
        if (y == MP_NONE)
            io[i] = MP_NONE;
        else if (from_param(D, y))
            st = ensure(D, y, ph, &io[i]);
        else
            io[i] = D->B->tmap[y];
    }
    for (uint32_t o = 0; o < nout && !st; o++) {
        uint32_t y = n->outputs[o];
        io[nin + o] = MP_NONE;
        if (y == MP_NONE)
            continue;
        snprintf(D->name, sizeof D->name, "%s%s", t->tensors[y].name,
                 ph ? "/bwd" : "");
        st = mp__pb_add_tensor(D->B, &t->tensors[y], D->name, -1,
                               MP__ROLE_COMM, &io[nin + o]);
        if (!st)
            D->dmap[ph][y] = io[nin + o];
    }
    if (!st) {
        snprintf(D->name, sizeof D->name, "%s%s", n->name, ph ? "/bwd" : "");
        st = mp__pb_add_node(D->B, n, D->name, NULL, io, nin, io + nin, nout,
                             ph ? MP_PHASE_BACKWARD : MP_PHASE_FORWARD);
    }
    mp__dealloc(D->B->ctx, io);
    if (!st)
        *out = D->dmap[ph][x];
    return st;
}

/* ---- the rank's tensors and nodes ----------------------------------------- */

/* Gradient x of a parameter is GRAD, and so are the gradients it sums
 * (a backward node reading only gradients of x's size: the
 * accumulation of a weight read twice, or of micro-batches). */
static void grad_role(dpb *D, uint32_t x)
{
    const mp_graph *t = D->t;
    for (int depth = 0; x != MP_NONE && depth < 1 << 20; depth++) {
        if (D->B->tmap[x] != MP_NONE)
            D->B->role[D->B->tmap[x]] = MP__ROLE_GRAD;
        uint32_t v = t->tensors[x].producer;
        if (v == MP_NONE || t->nodes[v].phase != MP_PHASE_BACKWARD ||
            t->nodes[v].n_in < 2)
            return;
        const mp__node *n = &t->nodes[v];
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t y = n->inputs[i];
            if (y == MP_NONE || t->tensors[y].kind != MP_KIND_GRADIENT ||
                t->tensors[y].bytes != t->tensors[x].bytes)
                return;
        }
        for (uint32_t i = 1; i < n->n_in; i++)
            if (D->B->tmap[n->inputs[i]] != MP_NONE)
                D->B->role[D->B->tmap[n->inputs[i]]] = MP__ROLE_GRAD;
        x = n->inputs[0];
    }
}

/* The training tensors as the rank holds them: parameters (ZeRO-3),
 * optimizer states and step temporaries (ZeRO >= 1) as 1-D shards;
 * states and the foreach temporary absent with the optimizer offloaded;
 * derived tensors (ZeRO-3) made where read. Then the groups' buffers. */
static mp_status add_tensors(dpb *D)
{
    const mp_graph *t = D->t;
    mp__pb *B = D->B;
    const mp_parallel_options *o = D->o;
    mp_status st;
    uint64_t dp = o->dp;
    /* what each optimizer-phase output or state shards with */
    uint8_t *shard = mp__calloc(B->ctx, t->n_tensors + 1, 1);
    uint8_t *drop = mp__calloc(B->ctx, t->n_tensors + 1, 1);
    if (!shard || !drop) {
        mp__dealloc(B->ctx, shard);
        mp__dealloc(B->ctx, drop);
        return MP_ERR_NOMEM;
    }
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        const mp__node *n = &t->nodes[v];
        if (n->phase != MP_PHASE_OPTIMIZER)
            continue;
        uint32_t p = D->step_of[D->tpos[v]];
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE || p == MP_NONE)
                continue;
            if (t->tensors[x].declared_kind == MP_KIND_OPTIMIZER_STATE) {
                drop[x] = o->offload_optimizer != 0;
                shard[x] = 1;
            } else if (t->tensors[x].producer != MP_NONE &&
                       t->nodes[t->tensors[x].producer].phase ==
                           MP_PHASE_OPTIMIZER) {
                /* the foreach group temporary */
                drop[x] = o->offload_optimizer != 0;
                shard[x] = 2;
            }
        }
        for (uint32_t k = 0; k < n->n_out; k++)
            if (n->outputs[k] != MP_NONE && p != MP_NONE)
                shard[n->outputs[k]] = 1;
    }
    st = MP_OK;
    for (uint32_t x = 0; x < t->n_tensors && !st; x++) {
        const mp__tensor *tt = &t->tensors[x];
        B->tmap[x] = MP_NONE;
        if (drop[x] || (D->derived && D->derived[x]))
            continue;
        int64_t sh = -1;
        uint8_t role = tt->declared_kind == MP_KIND_WEIGHT ||
                               tt->declared_kind == MP_KIND_CONSTANT
                           ? MP__ROLE_PARAM
                       : tt->declared_kind == MP_KIND_OPTIMIZER_STATE
                           ? MP__ROLE_OPT
                           : MP__ROLE_ACT;
        if (tt->producer != MP_NONE &&
            t->nodes[tt->producer].phase == MP_PHASE_OPTIMIZER)
            role = MP__ROLE_OPT;
        if (tt->producer != MP_NONE &&
            (t->nodes[tt->producer].def->flags & MP__OPF_COLLECTIVE))
            role = MP__ROLE_COMM; /* a pipeline stage's Send, Recv */
        if (D->pidx[x] != MP_NONE && o->zero == 3)
            sh = (int64_t)mp__ceil_div(D->P[D->pidx[x]].elems, dp);
        else if (shard[x] == 1 && o->zero >= 1)
            sh = (int64_t)mp__ceil_div(numel(tt), dp);
        else if (shard[x] == 2 && o->zero >= 1) {
            /* the foreach temporary: its steps' shards */
            uint64_t n = 0;
            for (uint32_t p = 0; p < D->np; p++)
                for (uint32_t i = 0; i < t->nodes[D->P[p].step].n_in; i++)
                    if (t->nodes[D->P[p].step].inputs[i] == x)
                        n += mp__ceil_div(D->P[p].elems, dp);
            sh = (int64_t)n;
        }
        st = mp__pb_add_tensor(B, tt, NULL, sh, role, &B->tmap[x]);
        if (!st && (tt->flags & MP__TF_OUTPUT))
            st = mp_graph_mark_output(B->g, B->tmap[x]);
    }
    for (uint32_t p = 0; p < D->np && !st; p++)
        grad_role(D, D->P[p].grad);
    for (uint32_t g = 0; g < D->ng && !st && D->reduce; g++) {
        if (o->zero == 3)
            snprintf(D->name, sizeof D->name, "fsdp/%s/grad_shard",
                     D->G[g].name);
        else
            snprintf(D->name, sizeof D->name, "%s/bucket%u",
                     o->zero == 2 ? "zero" : "ddp", (unsigned)g);
        st = mp__pb_add_buffer(B, D->name, (mp_dtype)D->G[g].dtype,
                               D->G[g].elems, MP__ROLE_COMM, &D->G[g].out);
    }
    mp__dealloc(B->ctx, shard);
    mp__dealloc(B->ctx, drop);
    return st;
}

/* The reduction of group g's gradients: an all-reduce into its bucket
 * (stages 0, 1) or a reduce-scatter into its shard (2, 3). */
static mp_status reduce_group(dpb *D, uint32_t g)
{
    mp__pb *B = D->B;
    uint32_t nin = 0;
    for (uint32_t k = D->moff[g]; k < D->moff[g + 1]; k++)
        B->cbuf[nin++] = B->tmap[D->P[D->members[k]].grad];
    if (D->o->zero == 3)
        snprintf(D->name, sizeof D->name, "fsdp/%s/reduce_scatter",
                 D->G[g].name);
    else
        snprintf(D->name, sizeof D->name, "%s/bucket%u/%s",
                 D->o->zero == 2 ? "zero" : "ddp", (unsigned)g,
                 D->o->zero == 2 ? "reduce_scatter" : "all_reduce");
    return add_collective(B, D->o->zero >= 2 ? "ReduceScatter" : "AllReduce",
                          D->name, B->cbuf, nin, &D->G[g].out, 1,
                          MP_PHASE_BACKWARD);
}

/* Stages 1, 2: the updated shards all-gathered into the parameters
 * (in place: no buffer) once every step of group g ran. */
static mp_status regather_group(dpb *D, uint32_t g)
{
    mp__pb *B = D->B;
    uint32_t nin = 0, out;
    for (uint32_t k = D->moff[g]; k < D->moff[g + 1]; k++)
        B->cbuf[nin++] = B->tmap[D->P[D->members[k]].w];
    snprintf(D->name, sizeof D->name, "zero/bucket%u/all_gather/done",
             (unsigned)g);
    mp_status st = mp__pb_add_buffer(B, D->name, MP_DTYPE_UINT8, 0,
                                     MP__ROLE_COMM, &out);
    snprintf(D->name, sizeof D->name, "zero/bucket%u/all_gather", (unsigned)g);
    return st ? st : add_collective(B, "AllGather", D->name, B->cbuf, nin,
                                    &out, 1, MP_PHASE_OPTIMIZER);
}

/* Optimizer step `node` of parameter p reads its gradient from its
 * group's reduced buffer and, under ZeRO, updates a shard: the offsets a
 * run with real gradients needs (validate --rank, --ranks), as
 * attributes: dp_grad_offset, the element offset of p's gradient (full,
 * or its shard under ZeRO-2/3) in the buffer; dp_elems, p's elements n;
 * dp_shard, the elements S = ceil(n / dp) of each rank's shard when the
 * step updates one (ZeRO >= 1; 0: the whole weight); dp_size, dp. The
 * rank of data-parallel index i updates elements [i S, min((i + 1) S,
 * n)) of the weight (of its shard under ZeRO-3, from 0). */
static mp_status mark_slice(dpb *D, uint32_t p, uint32_t node)
{
    const par_param *q = &D->P[p];
    uint64_t dp = D->o->dp, at = 0;
    for (uint32_t k = D->moff[q->group]; k < D->moff[q->group + 1]; k++) {
        const par_param *m = &D->P[D->members[k]];
        if (m == q)
            break;
        at += D->o->zero >= 2 ? mp__ceil_div(m->elems, dp) : m->elems;
    }
    mp_graph *g = D->B->g;
    mp_status st = mp_graph_set_attr_int(g, node, "dp_grad_offset",
                                         (int64_t)at);
    if (!st)
        st = mp_graph_set_attr_int(g, node, "dp_elems", (int64_t)q->elems);
    if (!st)
        st = mp_graph_set_attr_int(
            g, node, "dp_shard",
            D->o->zero >= 1 ? (int64_t)mp__ceil_div(q->elems, dp) : 0);
    if (!st)
        st = mp_graph_set_attr_int(g, node, "dp_size", (int64_t)dp);
    return st;
}

/* One node of the training graph on the rank: its inputs as the rank
 * reads them (gathered parameters, reduced gradients), optimizer steps
 * on shards, or on the host. */
static mp_status add_rank_node(dpb *D, uint32_t v)
{
    const mp_graph *t = D->t;
    mp__pb *B = D->B;
    const mp__node *n = &t->nodes[v];
    const mp_parallel_options *o = D->o;
    uint32_t p = D->step_of[D->tpos[v]];
    uint32_t nin = 0, nout = 0;
    mp_status st;
    int ph = n->phase == MP_PHASE_BACKWARD;
    if (n->phase == MP_PHASE_OPTIMIZER) {
        bool foreach_node = p == MP_NONE;
        if (foreach_node && o->offload_optimizer)
            return MP_OK;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i], y;
            if (x == MP_NONE) {
                B->buf[nin++] = MP_NONE;
                continue;
            }
            if (o->offload_optimizer && i >= 2)
                break;
            uint32_t q = MP_NONE;
            for (uint32_t j = 0; j < D->np && q == MP_NONE; j++)
                if (D->P[j].grad == x)
                    q = j;
            y = q != MP_NONE && D->reduce ? D->G[D->P[q].group].out
                                          : B->tmap[x];
            bool dup = false;
            for (uint32_t j = 0; j < nin; j++)
                dup |= B->buf[j] == y;
            if (!dup || !foreach_node)
                B->buf[nin++] = y;
        }
    } else {
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x != MP_NONE && D->derived && from_param(D, x)) {
                if ((st = ensure(D, x, ph, &B->buf[nin++])))
                    return st;
            } else {
                B->buf[nin++] = x == MP_NONE ? MP_NONE : B->tmap[x];
            }
        }
    }
    for (uint32_t k = 0; k < n->n_out; k++)
        B->buf[B->cap_buf / 2 + nout++] =
            n->outputs[k] == MP_NONE ? MP_NONE : B->tmap[n->outputs[k]];
    bool host = o->offload_optimizer && p != MP_NONE;
    if ((st = mp__pb_add_node(B, n, NULL, host ? "HostStep" : NULL, B->buf,
                              nin, B->buf + B->cap_buf / 2, nout,
                              (mp_phase)n->phase)))
        return st;
    if (p != MP_NONE && !host && D->reduce &&
        (st = mark_slice(D, p, (uint32_t)B->g->n_nodes - 1)))
        return st;
    if (p != MP_NONE && (o->zero == 1 || o->zero == 2) &&
        --D->G[D->P[p].group].left == 0)
        return regather_group(D, D->P[p].group);
    return MP_OK;
}

/* Is training node v derived (ZeRO-3: made where read)? */
static bool derived_node(const dpb *D, uint32_t v)
{
    const mp__node *n = &D->t->nodes[v];
    for (uint32_t o = 0; D->derived && o < n->n_out; o++)
        if (n->outputs[o] != MP_NONE && D->derived[n->outputs[o]])
            return true;
    return false;
}

static void dpb_free(dpb *D)
{
    mp_ctx *ctx = D->B->ctx;
    for (uint32_t g = 0; g < D->ng; g++)
        mp__dealloc(ctx, D->G[g].name);
    mp__dealloc(ctx, D->G);
    mp__dealloc(ctx, D->P);
    mp__dealloc(ctx, D->pidx);
    mp__dealloc(ctx, D->step_of);
    mp__dealloc(ctx, D->tpos);
    mp__dealloc(ctx, D->members);
    mp__dealloc(ctx, D->moff);
    mp__dealloc(ctx, D->derived);
    for (int ph = 0; ph < 2; ph++) {
        mp__dealloc(ctx, D->dmap[ph]);
        mp__dealloc(ctx, D->order[ph]);
        mp__dealloc(ctx, D->vis[ph]);
    }
}

mp_status mp__pb_begin(mp__pb *B, mp_ctx *ctx, const mp_graph *t,
                       const char *suffix)
{
    memset(B, 0, sizeof *B);
    B->ctx = ctx;
    uint32_t most = 8;
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        if (t->nodes[v].n_in > most)
            most = t->nodes[v].n_in;
        if (t->nodes[v].n_out > most)
            most = t->nodes[v].n_out;
    }
    /* inputs in the first half, outputs in the second; a collective
     * reads every parameter or gradient */
    B->cap_buf = 2 * ((size_t)most + t->n_tensors + 1);
    B->buf = mp__alloc(ctx, B->cap_buf * sizeof *B->buf);
    B->cbuf = mp__alloc(ctx, B->cap_buf * sizeof *B->cbuf);
    B->tmap = mp__alloc(ctx, ((size_t)t->n_tensors + 1) * sizeof *B->tmap);
    if (!B->buf || !B->cbuf || !B->tmap)
        return MP_ERR_NOMEM;
    mp_status st = mp_graph_create(ctx, &B->g);
    char nm[600];
    snprintf(nm, sizeof nm, "%s%s", t->name ? t->name : "graph", suffix);
    if (!st)
        st = mp_graph_set_name(B->g, nm);
    return st;
}

void mp__pb_free(mp__pb *B)
{
    if (!B->ctx)
        return;
    mp__dealloc(B->ctx, B->buf);
    mp__dealloc(B->ctx, B->cbuf);
    mp__dealloc(B->ctx, B->tmap);
    mp__dealloc(B->ctx, B->role);
    mp_graph_destroy(B->g);
    memset(B, 0, sizeof *B);
}

mp_status mp__parallel_dp(const mp_graph *t, const mp_parallel_options *o,
                          const char *suffix, int need_params, mp__pb *B)
{
    mp_status st = mp__pb_begin(B, t->ctx, t, suffix);
    dpb D;
    memset(&D, 0, sizeof D);
    /* one data-parallel rank: nothing to reduce or shard */
    mp_parallel_options one = *o;
    if (o->dp == 1) {
        one.zero = 0;
        o = &one;
    }
    D.B = B;
    D.t = t;
    D.o = o;
    D.reduce = o->dp > 1;
    D.need_params = need_params != 0;
    if (!st)
        st = find_params(&D);
    if (!st)
        st = make_groups(&D);
    if (!st && o->zero == 3)
        st = plan_gathers(&D);
    if (!st)
        st = add_tensors(&D);
    /* the groups' reductions after the topological position that
     * completes them: groups by ready position */
    for (uint32_t k = 0; k < t->n_nodes && !st; k++) {
        uint32_t v = t->topo[k];
        if (!derived_node(&D, v))
            st = add_rank_node(&D, v);
        for (uint32_t g = 0; g < D.ng && !st; g++)
            if (D.reduce && D.G[g].ready == k)
                st = reduce_group(&D, g);
    }
    if (!st && !(st = mp_graph_finalize(B->g)))
        mp__mark_pointwise_backward(B->g);
    for (uint32_t p = 0; p < D.np && !st && o->offload_optimizer; p++) {
        const mp__node *n = &t->nodes[D.P[p].step];
        for (uint32_t i = 2; i < n->n_in; i++) {
            const mp__tensor *x = n->inputs[i] == MP_NONE
                                      ? NULL
                                      : &t->tensors[n->inputs[i]];
            if (!x || x->declared_kind != MP_KIND_OPTIMIZER_STATE)
                continue;
            uint64_t e = numel(x), b = e ? x->bytes / e : 0;
            B->host_bytes += b * mp__ceil_div(e, o->zero >= 1 ? o->dp : 1);
        }
    }
    dpb_free(&D);
    return st;
}
