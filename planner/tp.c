/* Tensor parallelism of a training graph (memplan/parallel.h,
 * docs/distributed.md): Megatron-LM's split of transformer blocks over
 * tp ranks, recognized from the graph's structure. A block is a
 * MatMul/Gemm whose weight is a parameter (the row-parallel layer) whose
 * activation input is computed, through attention (a
 * ScaledDotProductAttention, or MatMul-Softmax-MatMul) or an MLP
 * activation and only pointwise, view and head-splitting ops, from
 * MatMul/Gemm layers with parameter weights that all read one tensor X
 * (the column-parallel layers). The rank's graph holds:
 *   - the column layers' weights (and their biases) split along their
 *     output features, the row layer's weight along its input features
 *     (1/tp each; their gradients and optimizer states follow);
 *   - every activation between them (and its gradient) 1/tp: heads or
 *     MLP features split (shapes re-inferred; a reshape's target scaled
 *     on its head axis);
 *   - an AllReduce of the row layer's output (before its bias), and in
 *     backward of X's gradient (the column layers' partial sums);
 *   - with sequence parallelism (sp, Megatron-LM's): the nodes between
 *     the blocks that work on each position alone (LayerNorms, residual
 *     Adds, Dropouts, casts, the row layers' biases) run on 1/tp of the
 *     sequence (the second-last dim of their tensors). A row layer's
 *     output is reduce-scattered into the split stream instead of
 *     all-reduced; a split tensor read by a node outside (a column
 *     layer, the output layer) is all-gathered before it, and again in
 *     backward for the gradient's product (Megatron saves the split
 *     tensor, not the gathered one); the gradients cross back the other
 *     way (reduce-scatter of a gathered tensor's gradient, all-gather of
 *     a scattered one's), and the gradients of the weights those nodes
 *     read (partial over the sequence) are all-reduced before their
 *     step. A tensor entering the split stream from outside that is no
 *     row layer's output (the embedding) is scattered (a ReduceScatter
 *     node: the slice each rank keeps); a graph input read there is
 *     given split.
 * The rest (embeddings, the output layer; without sp also the LayerNorms)
 * is replicated. The
 * result is a training graph again: pipeline stages and data parallelism
 * apply to it (planner/pipeline.c, planner/parallel.c). */
#include "ranks.h"
#include "shape.h"

#include <stdio.h>
#include <string.h>

enum { NR_NONE = 0, NR_COL, NR_ROW, NR_REGION };

/* sequence parallelism: per tensor (sp) */
enum {
    SP_REG = 1,    /* split along the sequence in the rank graph */
    SP_ENTRY = 2,  /* whole, read split (scattered) by sp nodes */
    SP_EXIT = 4,   /* split, read whole (gathered) by other nodes */
    SP_GFULL = 8,  /* a gradient part whole although its tensor is split */
    SP_EMIXED = 16, /* an entry also read whole by other nodes */
    SP_GSPLIT = 32 /* a gradient part split although its tensor is whole */
};
/* the collective after a final gradient (fop) */
enum { FOP_NONE = 0, FOP_AR, FOP_AG };

typedef struct tpb {
    const mp_graph *t;
    mp_ctx *ctx;
    uint32_t N;
    uint32_t *wsrc;   /* per tensor: the parameter it is (a cast of), or NONE */
    uint32_t *gof;    /* per tensor: the forward tensor it is the gradient of */
    int8_t *cut;      /* per tensor: the dim divided by N (-1: none) */
    uint8_t *split;   /* per tensor: 1 in a block's split region */
    uint8_t *fin;     /* per tensor: FOP_* after this final gradient */
    uint8_t *rows;    /* per tensor: saved statistics [k, rows] split */
    uint8_t *sp;      /* per tensor: SP_* (sequence parallelism) */
    uint8_t *spn;     /* per node: 1 an sp node */
    uint8_t *spw;     /* per tensor: a weight an sp node reads */
    uint32_t *src;    /* per node: the forward node it differentiates */
    uint32_t *scat;   /* per tensor: its scattered rank tensor (entries) */
    uint32_t *gath;   /* per tensor: its gathered one (exits), forward */
    uint32_t *bgath;  /* and backward */
    bool seq;         /* sp */
    uint32_t n_sp;    /* sp nodes */
    uint8_t *nrole;   /* per node: NR_* */
    uint32_t *stamp;  /* per tensor / node: the walk that saw it */
    uint32_t *nstamp;
    uint32_t *stack, *rt, *rn; /* walk stack, region tensors, region nodes */
    uint32_t *cols;   /* a block's column nodes */
    uint32_t *xin;    /* per block: the column input X */
    uint32_t *row;    /* per block: the row node */
    uint32_t n_blocks, n_attn, n_mlp, n_vocab;
    char why[700];    /* why the last candidate was not a block */
    char name[1200];
} tpb;

static bool op_is(const mp__node *n, const char *op)
{
    return !strcmp(n->op, op) && (!n->domain || !*n->domain ||
                                  !strcmp(n->domain, "memplan"));
}

static bool is_linear(const mp__node *n)
{
    return op_is(n, "MatMul") || op_is(n, "Gemm");
}

static bool persistent_tensor(const mp_graph *t, uint32_t x)
{
    return mp__kind_persistent(t->tensors[x].kind) ||
           mp__kind_persistent(t->tensors[t->tensors[x].root].kind);
}

/* A linear layer with a parameter weight: input 0 an activation, input 1
 * a parameter (or its cast copy). */
static bool param_linear(const tpb *T, const mp__node *n)
{
    return is_linear(n) && n->n_in >= 2 && n->inputs[0] != MP_NONE &&
           n->inputs[1] != MP_NONE && T->wsrc[n->inputs[1]] != MP_NONE &&
           T->wsrc[n->inputs[0]] == MP_NONE &&
           !persistent_tensor(T->t, n->inputs[0]);
}

/* Ops a split region passes through: pointwise, views, transposes,
 * splits, softmax, dropout, attention, products of two activations. */
static bool passes(const tpb *T, const mp__node *n)
{
    uint64_t f = n->def ? n->def->flags : 0;
    if (f & (MP__OPF_VIEW | MP__OPF_ELEMENTWISE | MP__OPF_SOFTMAX |
             MP__OPF_BCAST_IN | MP__OPF_VIEW_T | MP__OPF_VIEW_R |
             MP__OPF_CHEAP))
        return true;
    if (op_is(n, "Dropout") || op_is(n, "ScaledDotProductAttention"))
        return true;
    return is_linear(n) && !param_linear(T, n);
}

/* The training graph's gradient names (planner/train.c): "d/X#K" and
 * "d/X#sumK" are gradients of forward tensor X. */
static uint32_t grad_of(const mp_graph *t, const char *name)
{
    const char *hash = strrchr(name, '#');
    if (strncmp(name, "d/", 2) || !hash)
        return MP_NONE;
    char x[512];
    snprintf(x, sizeof x, "%.*s", (int)(hash - name - 2), name + 2);
    uint32_t id;
    return mp_graph_find_tensor(t, x, &id) == MP_OK ? id : MP_NONE;
}

static mp_status tp_alloc(tpb *T)
{
    const mp_graph *t = T->t;
    size_t nt = t->n_tensors + 1, nn = t->n_nodes + 1;
    T->wsrc = mp__alloc(T->ctx, nt * sizeof *T->wsrc);
    T->gof = mp__alloc(T->ctx, nt * sizeof *T->gof);
    T->cut = mp__alloc(T->ctx, nt);
    T->split = mp__calloc(T->ctx, nt, 1);
    T->fin = mp__calloc(T->ctx, nt, 1);
    T->rows = mp__calloc(T->ctx, nt, 1);
    T->stamp = mp__calloc(T->ctx, nt, sizeof *T->stamp);
    T->stack = mp__alloc(T->ctx, nt * sizeof *T->stack);
    T->rt = mp__alloc(T->ctx, nt * sizeof *T->rt);
    T->nrole = mp__calloc(T->ctx, nn, 1);
    T->nstamp = mp__calloc(T->ctx, nn, sizeof *T->nstamp);
    T->rn = mp__alloc(T->ctx, nn * sizeof *T->rn);
    T->cols = mp__alloc(T->ctx, nn * sizeof *T->cols);
    T->xin = mp__alloc(T->ctx, nn * sizeof *T->xin);
    T->row = mp__alloc(T->ctx, nn * sizeof *T->row);
    if (!T->wsrc || !T->gof || !T->cut || !T->split || !T->fin || !T->rows ||
        !T->stamp ||
        !T->stack || !T->rt || !T->nrole || !T->nstamp || !T->rn ||
        !T->cols || !T->xin || !T->row)
        return MP_ERR_NOMEM;
    if (T->seq) {
        T->sp = mp__calloc(T->ctx, nt, 1);
        T->spw = mp__calloc(T->ctx, nt, 1);
        T->spn = mp__calloc(T->ctx, nn, 1);
        T->src = mp__alloc(T->ctx, nn * sizeof *T->src);
        T->scat = mp__alloc(T->ctx, nt * sizeof *T->scat);
        T->gath = mp__alloc(T->ctx, nt * sizeof *T->gath);
        T->bgath = mp__alloc(T->ctx, nt * sizeof *T->bgath);
        if (!T->sp || !T->spw || !T->spn || !T->src || !T->scat ||
            !T->gath || !T->bgath)
            return MP_ERR_NOMEM;
        for (uint32_t v = 0; v < t->n_nodes; v++) {
            uint32_t x;
            T->src[v] = t->nodes[v].phase == MP_PHASE_FORWARD
                            ? v : mp__train_source(t, v, &x);
        }
    }
    for (uint32_t x = 0; x < t->n_tensors; x++) {
        T->wsrc[x] = t->tensors[x].declared_kind == MP_KIND_WEIGHT ? x
                                                                   : MP_NONE;
        T->cut[x] = -1;
        T->gof[x] = grad_of(t, t->tensors[x].name);
    }
    /* casts of parameters (autocast's low-precision copies) */
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        const mp__node *n = &t->nodes[t->topo[k]];
        if (n->phase == MP_PHASE_FORWARD && n->n_in == 1 && n->n_out == 1 &&
            n->inputs[0] != MP_NONE && n->outputs[0] != MP_NONE &&
            op_is(n, "Cast") && T->wsrc[n->inputs[0]] != MP_NONE)
            T->wsrc[n->outputs[0]] = T->wsrc[n->inputs[0]];
    }
    return MP_OK;
}

static void tp_free(tpb *T)
{
    void *p[] = {T->wsrc, T->gof, T->cut, T->split, T->fin, T->rows, T->stamp,
                 T->stack,
                 T->rt, T->nrole, T->nstamp, T->rn, T->cols, T->xin, T->row,
                 T->sp, T->spw, T->spn, T->src, T->scat, T->gath, T->bgath};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        mp__dealloc(T->ctx, p[i]);
}

/* The dim of a linear layer's weight split by tp: the output features
 * of a column layer, the input features of a row layer. */
static int weight_dim(const mp_graph *t, const mp__node *n, uint32_t w,
                      bool column)
{
    int32_t r = t->tensors[w].rank;
    if (r < 2)
        return -1;
    bool tb = op_is(n, "Gemm") && mp__attr_int(n, "transB", 0);
    if (column)
        return tb ? r - 2 : r - 1;
    return tb ? r - 1 : r - 2;
}

/* The only forward reader of parameter w (through its casts) is node v:
 * a weight shared with another layer (tied embeddings) stays whole. */
static bool only_reader(const tpb *T, uint32_t w, uint32_t v)
{
    const mp_graph *t = T->t;
    for (uint32_t x = 0; x < t->n_tensors; x++) {
        if (T->wsrc[x] != w)
            continue;
        const mp__tensor *xt = &t->tensors[x];
        for (uint32_t i = 0; i < xt->n_cons; i++) {
            const mp__node *c = &t->nodes[t->cons[xt->cons_begin + i]];
            uint32_t cv = t->cons[xt->cons_begin + i];
            /* the Loss holds autocast's weight copies until forward
             * ends (planner/train.c): no use of their values */
            if (c->phase != MP_PHASE_FORWARD || cv == v || op_is(c, "Loss"))
                continue;
            if (!(op_is(c, "Cast") && c->n_out == 1 &&
                  T->wsrc[c->outputs[0]] == w))
                return false;
        }
    }
    return true;
}

static bool divides(const tpb *T, uint32_t x, int d)
{
    const mp__tensor *xt = &T->t->tensors[x];
    return d >= 0 && d < xt->rank && xt->dims[d] > 0 &&
           xt->dims[d] % (int64_t)T->N == 0;
}

static bool reject(tpb *T, const mp__node *row, const char *fmt,
                   const char *a, const char *b)
{
    char m[400];
    snprintf(m, sizeof m, fmt, a, b ? b : "");
    snprintf(T->why, sizeof T->why, "'%s': %s", row->name, m);
    return false;
}

/* The head (or feature) axis of view node n's output y: the first dim
 * where y's declared shape leaves the input x's; -1 when none divides. */
static int view_cut(const tpb *T, uint32_t x, uint32_t y)
{
    const mp__tensor *xt = &T->t->tensors[x], *yt = &T->t->tensors[y];
    if (xt->rank < 0 || yt->rank < 0 || xt->rank == yt->rank)
        return -1;
    for (int32_t d = 0; d < yt->rank; d++)
        if (d >= xt->rank || xt->dims[d] != yt->dims[d])
            return divides(T, y, d) ? d : -2;
    return -1;
}

/* Is row-parallel candidate v (a parameter linear layer) the end of a
 * block? Walks back from its activation input; on success marks the
 * block. */
static bool try_block(tpb *T, uint32_t v, uint32_t walk)
{
    const mp_graph *t = T->t;
    const mp__node *r = &t->nodes[v];
    uint32_t a = r->inputs[0], X = MP_NONE;
    uint32_t ns = 0, nt = 0, nn = 0, nc = 0;
    bool attn = false, nonlin = false;
    T->stack[ns++] = a;
    T->stamp[a] = walk;
    T->rt[nt++] = a;
    while (ns) {
        uint32_t x = T->stack[--ns], p = t->tensors[x].producer;
        if (p == MP_NONE)
            return reject(T, r, "its input reaches '%s', a graph input, "
                          "before any column-parallel MatMul/Gemm",
                          t->tensors[x].name, NULL);
        const mp__node *n = &t->nodes[p];
        if (T->nstamp[p] == walk)
            continue;
        T->nstamp[p] = walk;
        if (param_linear(T, n)) {
            /* the input, through autocast's copies */
            uint32_t xi = n->inputs[0], q;
            while ((q = t->tensors[xi].producer) != MP_NONE &&
                   op_is(&t->nodes[q], "Cast") && t->nodes[q].n_in == 1 &&
                   t->nodes[q].inputs[0] != MP_NONE)
                xi = t->nodes[q].inputs[0];
            if (X == MP_NONE)
                X = xi;
            else if (X != xi)
                return reject(T, r, "its column-parallel layers read "
                              "different inputs ('%s', '%s')",
                              t->tensors[X].name, t->tensors[xi].name);
            T->cols[nc++] = p;
            continue;
        }
        if (!passes(T, n))
            return reject(T, r, "its input comes from '%s' (%s), not from "
                          "a column-parallel MatMul/Gemm through attention "
                          "or an activation",
                          n->name, n->op);
        T->rn[nn++] = p;
        attn |= (n->def && (n->def->flags & MP__OPF_SOFTMAX)) ||
                op_is(n, "ScaledDotProductAttention");
        nonlin |= n->def && (n->def->flags & MP__OPF_ELEMENTWISE) &&
                  n->n_in == 1;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t y = n->inputs[i];
            if (y == MP_NONE)
                continue;
            if (T->wsrc[y] != MP_NONE) {
                /* a column layer's bias */
                if (!op_is(n, "Add") || t->tensors[y].rank != 1 ||
                    !divides(T, y, 0) || !only_reader(T, T->wsrc[y], p))
                    return reject(T, r, "'%s' reads weight '%s', which is no "
                                  "column layer's bias", n->name,
                                  t->tensors[y].name);
                continue;
            }
            if (persistent_tensor(t, y) || T->stamp[y] == walk)
                continue;
            T->stamp[y] = walk;
            T->stack[ns++] = y;
            T->rt[nt++] = y;
        }
        for (uint32_t o = 0; o < n->n_out; o++) {
            uint32_t y = n->outputs[o];
            if (y != MP_NONE && T->stamp[y] != walk) {
                T->stamp[y] = walk;
                T->rt[nt++] = y;
            }
        }
    }
    if (!nc || (!attn && !nonlin))
        return reject(T, r, "no attention and no activation between it and "
                      "a column-parallel layer%s%s", "", NULL);
    /* region tensors are read in forward only inside the block */
    for (uint32_t i = 0; i < nt; i++) {
        const mp__tensor *xt = &t->tensors[T->rt[i]];
        for (uint32_t c = 0; c < xt->n_cons; c++) {
            uint32_t cv = t->cons[xt->cons_begin + c];
            if (t->nodes[cv].phase == MP_PHASE_FORWARD && cv != v &&
                T->nstamp[cv] != walk)
                return reject(T, r, "'%s' is also read by '%s' outside the "
                              "block", xt->name, t->nodes[cv].name);
        }
    }
    /* the splits divide; no node belongs to another block */
    uint32_t wr = T->wsrc[r->inputs[1]];
    int dr = weight_dim(t, r, wr, false);
    if (!divides(T, wr, dr) || !only_reader(T, wr, v) || T->nrole[v])
        return reject(T, r, "its weight '%s' is shared, taken or not "
                      "divisible by --tp%s", t->tensors[wr].name, NULL);
    for (uint32_t i = 0; i < nc; i++) {
        const mp__node *c = &t->nodes[T->cols[i]];
        uint32_t w = T->wsrc[c->inputs[1]];
        if (!divides(T, w, weight_dim(t, c, w, true)) ||
            !only_reader(T, w, T->cols[i]) || T->nrole[T->cols[i]])
            return reject(T, r, "column-parallel weight '%s' is shared, "
                          "taken or not divisible by --tp%s",
                          t->tensors[w].name, NULL);
    }
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &t->nodes[T->rn[i]];
        if (T->nrole[T->rn[i]])
            return reject(T, r, "'%s' belongs to another block%s", n->name,
                          NULL);
        if (mp__node_view(n) && n->n_out && n->outputs[0] != MP_NONE &&
            view_cut(T, n->inputs[0], n->outputs[0]) == -2)
            return reject(T, r, "'%s': its heads do not divide by --tp%s",
                          t->tensors[n->outputs[0]].name, NULL);
    }
    /* the block */
    T->nrole[v] = NR_ROW;
    T->cut[wr] = (int8_t)dr;
    for (uint32_t i = 0; i < nc; i++) {
        const mp__node *c = &t->nodes[T->cols[i]];
        uint32_t w = T->wsrc[c->inputs[1]];
        T->nrole[T->cols[i]] = NR_COL;
        T->cut[w] = (int8_t)weight_dim(t, c, w, true);
    }
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &t->nodes[T->rn[i]];
        T->nrole[T->rn[i]] = NR_REGION;
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->inputs[k] != MP_NONE && T->wsrc[n->inputs[k]] != MP_NONE)
                T->cut[T->wsrc[n->inputs[k]]] = 0;
    }
    for (uint32_t i = 0; i < nt; i++)
        T->split[T->rt[i]] = 1;
    T->xin[T->n_blocks] = X;
    T->row[T->n_blocks++] = v;
    if (attn)
        T->n_attn++;
    else
        T->n_mlp++;
    return true;
}

/* Is tensor y split (a region tensor or the gradient of one)? */
static bool is_split(const tpb *T, uint32_t y)
{
    return T->split[y] || (T->gof[y] != MP_NONE && T->split[T->gof[y]]);
}

/* The cuts the shape functions do not infer: optimizer states of split
 * weights, view outputs of split tensors (a reshape to or from heads). */
static void more_cuts(tpb *T)
{
    const mp_graph *t = T->t;
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        const mp__node *n = &t->nodes[v];
        /* a split node's saved statistics [k, rows] (planner/train.c:
         * the fused attention's log-sum-exp per head and query): its
         * rows are split with the heads */
        for (uint32_t o = 1; T->nrole[v] == NR_REGION && o < n->n_out; o++) {
            uint32_t z = n->outputs[o];
            const mp__tensor *y = &t->tensors[n->outputs[0]];
            if (z == MP_NONE || n->outputs[0] == MP_NONE || y->rank < 2 ||
                t->tensors[z].rank != 2 || !divides(T, z, 1))
                continue;
            int64_t r = 1;
            for (int32_t d = 0; d + 1 < y->rank; d++)
                r *= y->dims[d];
            if (t->tensors[z].dims[1] == r)
                T->cut[z] = 1, T->rows[z] = 1;
        }
        if (n->phase == MP_PHASE_OPTIMIZER && n->n_in >= 2 &&
            n->inputs[0] != MP_NONE && T->cut[n->inputs[0]] >= 0) {
            uint32_t w = n->inputs[0];
            for (uint32_t i = 2; i < n->n_in; i++) {
                uint32_t s = n->inputs[i];
                if (s == MP_NONE || t->tensors[s].declared_kind !=
                                        MP_KIND_OPTIMIZER_STATE)
                    continue;
                if (t->tensors[s].rank == 1)
                    T->cut[s] = 0;
                else if (t->tensors[s].rank == t->tensors[w].rank)
                    T->cut[s] = T->cut[w];
            }
        }
        /* autocast's copy of a split parameter is split as it is */
        if (n->n_in == 1 && n->n_out == 1 && n->inputs[0] != MP_NONE &&
            n->outputs[0] != MP_NONE && op_is(n, "Cast") &&
            T->wsrc[n->outputs[0]] != MP_NONE && T->cut[n->inputs[0]] >= 0)
            T->cut[n->outputs[0]] = T->cut[n->inputs[0]];
        if (!mp__node_view(n) || !n->n_in || !n->n_out ||
            n->inputs[0] == MP_NONE || n->outputs[0] == MP_NONE ||
            !is_split(T, n->inputs[0]))
            continue;
        int d = view_cut(T, n->inputs[0], n->outputs[0]);
        if (d >= 0)
            T->cut[n->outputs[0]] = (int8_t)d;
    }
}

/* Megatron's vocabulary-parallel embedding: a Gather (axis 0) of a
 * parameter table read by no other node, its rows split; each rank's
 * output holds the rows it owns (zeros elsewhere), all-reduced (or with
 * sp reduce-scattered) as a row layer's output is. */
static void vocab_embedding(tpb *T, uint32_t v)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    uint32_t w;
    if (!op_is(n, "Gather") || n->n_in < 2 || n->n_out != 1 ||
        n->inputs[0] == MP_NONE || n->outputs[0] == MP_NONE || T->nrole[v] ||
        (w = T->wsrc[n->inputs[0]]) == MP_NONE ||
        mp__attr_int(n, "axis", 0) != 0 || t->tensors[w].rank != 2 ||
        !divides(T, w, 0) || !only_reader(T, w, v) ||
        persistent_tensor(t, n->outputs[0]))
        return;
    T->nrole[v] = NR_ROW;
    T->cut[w] = 0;
    T->n_vocab++;
}

/* Megatron's vocabulary-parallel output layer: a parameter linear layer
 * outside the blocks whose output (the logits) only the loss reads: a
 * column layer (its output features, the vocabulary, split; the loss
 * reads each rank's logits), its input's gradient all-reduced as a
 * block's X's. */
static void vocab_output(tpb *T, uint32_t v)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    if (T->nrole[v] || !param_linear(T, n) || n->n_out != 1 ||
        n->outputs[0] == MP_NONE)
        return;
    const mp__tensor *y = &t->tensors[n->outputs[0]];
    for (uint32_t c = 0; c < y->n_cons; c++) {
        const mp__node *r = &t->nodes[t->cons[y->cons_begin + c]];
        if (r->phase == MP_PHASE_FORWARD && !op_is(r, "Loss"))
            return;
    }
    uint32_t w = T->wsrc[n->inputs[1]], x = n->inputs[0], q;
    int d = weight_dim(t, n, w, true);
    if (!y->n_cons || !divides(T, w, d) || !only_reader(T, w, v) ||
        !divides(T, n->outputs[0], y->rank - 1))
        return;
    while ((q = t->tensors[x].producer) != MP_NONE &&
           op_is(&t->nodes[q], "Cast") && t->nodes[q].n_in == 1 &&
           t->nodes[q].inputs[0] != MP_NONE)
        x = t->nodes[q].inputs[0];
    T->nrole[v] = NR_COL;
    T->cut[w] = (int8_t)d;
    T->split[n->outputs[0]] = 1;
    T->xin[T->n_blocks] = x;
    T->row[T->n_blocks++] = v;
    T->n_vocab++;
}

static mp_status find_blocks(tpb *T)
{
    const mp_graph *t = T->t;
    uint32_t walk = 0;
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        uint32_t v = t->topo[k];
        const mp__node *n = &t->nodes[v];
        if (n->phase == MP_PHASE_FORWARD && param_linear(T, n))
            try_block(T, v, ++walk);
    }
    for (uint32_t k = 0; T->n_blocks && k < t->n_nodes; k++) {
        uint32_t v = t->topo[k];
        if (t->nodes[v].phase == MP_PHASE_FORWARD) {
            vocab_embedding(T, v);
            vocab_output(T, v);
        }
    }
    if (!T->n_blocks)
        return mp__err(T->ctx, MP_ERR_GRAPH,
                       "parallel: --tp %u: no transformer block recognized in "
                       "'%s' (tensor parallelism splits a MatMul/Gemm pair "
                       "around attention or an MLP activation; %s%s); give "
                       "--tp 1",
                       (unsigned)T->N, t->name ? t->name : "graph",
                       T->why[0] ? "the last candidate, " : "no MatMul/Gemm "
                                                            "has a weight",
                       T->why);
    more_cuts(T);
    return MP_OK;
}

/* ---- sequence parallelism ----------------------------------------------- */

/* The sequence dim of tensor x (its second-last; a [tokens, hidden]
 * tensor's first), or -1 when it does not divide by tp. */
static int seq_dim(const tpb *T, uint32_t x)
{
    const mp__tensor *xt = &T->t->tensors[x];
    int d = xt->rank - 2;
    return d >= 0 && divides(T, x, d) ? d : -1;
}

/* The dim of sp node output z split with the sequence: its sequence dim,
 * or for a [k, rows] tensor of statistics (planner/train.c: a norm's
 * saved mean and deviation per row of output 0) its rows; -1: neither. */
static int out_cut(const tpb *T, const mp__node *n, uint32_t z)
{
    const mp__tensor *zt = &T->t->tensors[z], *y;
    y = &T->t->tensors[n->outputs[0]];
    if (seq_dim(T, z) >= 0 && y->rank >= 2 &&
        zt->dims[zt->rank - 2] == y->dims[y->rank - 2])
        return zt->rank - 2;
    int64_t rows = 1;
    for (int32_t d = 0; d + 1 < y->rank; d++)
        rows *= y->dims[d];
    return zt->rank == 2 && zt->dims[1] == rows && divides(T, z, 1) ? 1
                                                                     : -1;
}

static bool is_norm(const mp__node *n)
{
    return op_is(n, "LayerNormalization") || op_is(n, "RMSNormalization") ||
           op_is(n, "SimplifiedLayerNormalization");
}

/* Does forward node v work on each position alone, on tensors whose
 * sequence dims all divide (an sp node)? Pointwise and broadcasting ops,
 * casts, dropouts and norms over the last axis, outside the blocks; a
 * persistent input must not vary along the sequence (a bias, a norm's
 * scale), an activation input must have the output's sequence. */
static bool sp_node(const tpb *T, uint32_t v)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    uint64_t f = n->def ? n->def->flags : 0;
    if (n->phase != MP_PHASE_FORWARD || T->nrole[v] || is_linear(n) ||
        !n->n_out || n->outputs[0] == MP_NONE || mp__node_view(n) ||
        (f & MP__OPF_COLLECTIVE))
        return false;
    bool norm = is_norm(n);
    if (!(f & (MP__OPF_ELEMENTWISE | MP__OPF_BCAST_IN)) && !norm &&
        !op_is(n, "Cast") && !op_is(n, "Dropout"))
        return false;
    const mp__tensor *y = &t->tensors[n->outputs[0]];
    if (norm) {
        int64_t ax = mp__attr_int(n, "axis", -1);
        if (ax != -1 && ax != y->rank - 1)
            return false;
    }
    if (seq_dim(T, n->outputs[0]) < 0 || persistent_tensor(t, n->outputs[0]))
        return false;
    int64_t S = y->dims[y->rank - 2];
    for (uint32_t o = 0; o < n->n_out; o++) {
        uint32_t z = n->outputs[o];
        if (z != MP_NONE && (persistent_tensor(t, z) || out_cut(T, n, z) < 0))
            return false;
    }
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t u = n->inputs[i];
        if (u == MP_NONE)
            continue;
        const mp__tensor *ut = &t->tensors[u];
        if (persistent_tensor(t, u) || T->wsrc[u] != MP_NONE) {
            if (ut->rank >= 2 && ut->dims[ut->rank - 2] != 1)
                return false;
            continue;
        }
        if (T->split[u] || ut->rank < 2 || ut->dims[ut->rank - 2] != S ||
            seq_dim(T, u) < 0)
            return false;
    }
    return true;
}

/* The sp nodes: the connected pieces of sp nodes that hold a block's
 * input X or read a row layer's output; the tensors they split (SP_REG),
 * read whole from outside (SP_ENTRY) and give to nodes outside
 * (SP_EXIT). */
static mp_status find_sp(tpb *T)
{
    const mp_graph *t = T->t;
    uint32_t ns = 0;
    for (uint32_t b = 0; b < T->n_blocks; b++) {
        uint32_t p = t->tensors[T->xin[b]].producer;
        if (p != MP_NONE && !T->spn[p] && sp_node(T, p))
            T->spn[p] = 1, T->stack[ns++] = p;
    }
    for (uint32_t r = 0; r < t->n_nodes; r++) {
        if (T->nrole[r] != NR_ROW)
            continue;
        const mp__tensor *y = &t->tensors[t->nodes[r].outputs[0]];
        for (uint32_t c = 0; c < y->n_cons; c++) {
            uint32_t v = t->cons[y->cons_begin + c];
            if (!T->spn[v] && sp_node(T, v))
                T->spn[v] = 1, T->stack[ns++] = v;
        }
    }
    while (ns) {
        const mp__node *n = &t->nodes[T->stack[--ns]];
        T->n_sp++;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t u = n->inputs[i], p;
            if (u != MP_NONE && (p = t->tensors[u].producer) != MP_NONE &&
                !T->spn[p] && !persistent_tensor(t, u) && sp_node(T, p))
                T->spn[p] = 1, T->stack[ns++] = p;
        }
        for (uint32_t o = 0; o < n->n_out; o++) {
            uint32_t z = n->outputs[o];
            const mp__tensor *zt = z == MP_NONE ? NULL : &t->tensors[z];
            for (uint32_t c = 0; zt && c < zt->n_cons; c++) {
                uint32_t v = t->cons[zt->cons_begin + c];
                if (!T->spn[v] && sp_node(T, v))
                    T->spn[v] = 1, T->stack[ns++] = v;
            }
        }
    }
    if (!T->n_sp)
        return mp__err(T->ctx, MP_ERR_GRAPH,
                       "parallel: --sp: no LayerNorm, residual Add or other "
                       "node working on each position alone reads a block's "
                       "output or computes its input in '%s' (sequence "
                       "parallelism splits those along the sequence); plan "
                       "--tp %u without --sp",
                       t->name ? t->name : "graph", (unsigned)T->N);
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        const mp__node *n = &t->nodes[v];
        if (!T->spn[v])
            continue;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE) {
                uint32_t z = n->outputs[o];
                int c = out_cut(T, n, z);
                T->sp[z] |= SP_REG;
                if (c != t->tensors[z].rank - 2)
                    T->rows[z] = 1;
                T->cut[z] = (int8_t)c;
            }
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t u = n->inputs[i];
            if (u == MP_NONE)
                continue;
            if (T->wsrc[u] != MP_NONE)
                T->spw[T->wsrc[u]] = 1;
            else if (persistent_tensor(t, u))
                continue;
            else if (t->tensors[u].producer == MP_NONE) {
                T->sp[u] |= SP_REG; /* a graph input, given split */
                T->cut[u] = (int8_t)(t->tensors[u].rank - 2);
            }
            else if (!T->spn[t->tensors[u].producer])
                T->sp[u] |= SP_ENTRY;
        }
    }
    for (uint32_t x = 0; x < t->n_tensors; x++) {
        if (!T->sp[x])
            continue;
        const mp__tensor *xt = &t->tensors[x];
        bool out = false;
        for (uint32_t c = 0; c < xt->n_cons && !out; c++) {
            uint32_t v = t->cons[xt->cons_begin + c];
            out = t->nodes[v].phase == MP_PHASE_FORWARD && !T->spn[v];
        }
        if ((T->sp[x] & SP_REG) && out)
            T->sp[x] |= SP_EXIT;
        if ((T->sp[x] & SP_ENTRY) && out)
            T->sp[x] |= SP_EMIXED;
    }
    /* the gradients: an entry's are split (one also read outside: the
     * parts the split nodes compute, each gathered); a split tensor's
     * are split but for the parts computed outside (by a gathered copy's
     * reader, or for autocast's copy read outside: planner/train.c gives
     * the copy's gradient to the tensor), whole until each is scattered */
    for (uint32_t y = 0; y < t->n_tensors; y++) {
        uint32_t f = T->gof[y], p = t->tensors[y].producer;
        if (f == MP_NONE || !T->sp[f])
            continue;
        bool inside = p != MP_NONE && T->src[p] != MP_NONE &&
                      T->spn[T->src[p]];
        bool outside = p != MP_NONE && T->src[p] != MP_NONE && !inside;
        if ((T->sp[f] & SP_ENTRY) && (!(T->sp[f] & SP_EMIXED) || inside)) {
            T->cut[y] = (int8_t)(t->tensors[y].rank - 2);
            if (T->sp[f] & SP_EMIXED)
                T->sp[y] |= SP_GSPLIT;
        } else if ((T->sp[f] & SP_REG) && outside)
            T->sp[y] |= SP_GFULL;
    }
    return MP_OK;
}

/* The final gradient of each block's X, each entry and each exit (the
 * one no accumulation of its gradients reads): where the column layers'
 * partial sums are all-reduced, or with sp, scattered or gathered. */
static void final_grads(tpb *T)
{
    const mp_graph *t = T->t;
    for (uint32_t y = 0; y < t->n_tensors; y++) {
        uint32_t x = T->gof[y];
        if (x == MP_NONE || t->tensors[y].producer == MP_NONE)
            continue;
        uint8_t op = FOP_NONE;
        for (uint32_t b = 0; b < T->n_blocks && !op; b++)
            if (T->xin[b] == x)
                op = FOP_AR;
        if (T->sp && (T->sp[x] & SP_EMIXED))
            op = FOP_NONE; /* its parts from inside gathered */
        else if (T->sp && (T->sp[x] & SP_ENTRY))
            op = FOP_AG;
        else if (T->sp && (T->sp[x] & SP_REG))
            op = FOP_NONE; /* its parts from outside scattered */
        if (!op)
            continue;
        bool last = true;
        const mp__tensor *yt = &t->tensors[y];
        for (uint32_t c = 0; c < yt->n_cons && last; c++) {
            const mp__node *n = &t->nodes[t->cons[yt->cons_begin + c]];
            for (uint32_t o = 0; o < n->n_out; o++)
                if (n->outputs[o] != MP_NONE && T->gof[n->outputs[o]] == x)
                    last = false;
        }
        T->fin[y] = last ? op : FOP_NONE;
    }
}

/* Training tensor x in the rank graph, its cut applied; with the
 * forward graph A (finalized), a gradient of a split tensor or weight
 * takes that tensor's shape there (backward ops do not all infer their
 * outputs' shapes). */
static mp_status tp_tensor(tpb *T, mp__pb *B, const mp__pb *A, uint32_t x)
{
    const mp__tensor *tt = &T->t->tensors[x];
    mp__tensor like = *tt;
    int64_t dims[MP_MAX_RANK];
    int c = T->cut[x];
    uint32_t f = T->gof[x];
    bool hint = c >= 0 || is_split(T, x);
    bool whole = T->sp && (T->sp[x] & SP_GFULL), exact = false;
    if (A && f != MP_NONE && !whole && (T->split[f] || T->cut[f] >= 0) &&
        A->g->tensors[A->tmap[f]].rank == tt->rank) {
        like.dims = A->g->tensors[A->tmap[f]].dims;
        hint = exact = true;
    } else if (c >= 0 && c < tt->rank && tt->rank <= MP_MAX_RANK) {
        memcpy(dims, tt->dims, (size_t)tt->rank * sizeof dims[0]);
        dims[c] /= (int64_t)T->N;
        like.dims = dims;
    }
    if (hint)
        like.flags &= (uint8_t)~MP__TF_BYTES_GIVEN;
    /* statistics [k, rows]: their shape is planner/train.c's, not the
     * shape function's (a norm's: ONNX's Mean) */
    if (T->rows[x])
        hint = false;
    /* a gradient of a split tensor has its shape: not inferred (the
     * gradient of a view, an Identity, would take its input's) */
    if (exact)
        hint = false;
    mp_status st = mp__pb_add_tensor(B, &like, NULL, -1, MP__ROLE_ACT,
                                     &B->tmap[x]);
    /* a split tensor's declared shape is a hint: its shape function
     * infers the split one (a reshape to an unknown target keeps it) */
    if (!st && hint && tt->producer != MP_NONE)
        B->g->tensors[B->tmap[x]].flags |= MP__TF_SHAPE_HINT;
    if (!st && (tt->flags & MP__TF_OUTPUT))
        st = mp_graph_mark_output(B->g, B->tmap[x]);
    return st;
}

/* A reshape's target with a known value, scaled on the output's cut
 * (a constant of its own). */
static mp_status scaled_target(tpb *T, mp__pb *B, const mp__node *n,
                               uint32_t *id)
{
    const mp__tensor *s = &T->t->tensors[n->inputs[1]];
    int c = T->cut[n->outputs[0]];
    if (!s->value || c < 0 || (uint32_t)c >= s->n_value ||
        s->value[c] <= 0)
        return MP_OK;
    snprintf(T->name, sizeof T->name, "%s/tp", s->name);
    mp__tensor like = *s;
    like.value = NULL;
    mp_status st = mp__pb_add_tensor(B, &like, T->name, -1, MP__ROLE_PARAM,
                                     id);
    int64_t v[MP_MAX_RANK];
    if (st || s->n_value > MP_MAX_RANK)
        return st;
    memcpy(v, s->value, s->n_value * sizeof v[0]);
    v[c] /= (int64_t)T->N;
    return mp__tensor_set_value(T->ctx, &B->g->tensors[*id], v, s->n_value);
}

/* A collective `op` (node `node`, phase ph) reading rank tensor `in`
 * into a new tensor named prefix + training tensor x's name, like x
 * (its sequence dim divided by tp when split), of declared kind k. */
static mp_status coll(tpb *T, mp__pb *B, uint32_t in, uint32_t x,
                      const char *prefix, bool split, uint8_t k,
                      const char *node, const char *op, mp_phase ph,
                      uint32_t *out)
{
    const mp__tensor *xt = &T->t->tensors[x];
    mp__tensor like = *xt;
    int64_t dims[MP_MAX_RANK];
    if (split) {
        if (xt->rank < 2 || xt->rank > MP_MAX_RANK)
            return mp__err(T->ctx, MP_ERR_GRAPH,
                           "parallel: --sp: '%s' has no sequence dim",
                           xt->name);
        memcpy(dims, xt->dims, (size_t)xt->rank * sizeof dims[0]);
        dims[xt->rank - 2] /= (int64_t)T->N;
        like.dims = dims;
    }
    like.declared_kind = k;
    like.flags &= (uint8_t)~(MP__TF_BYTES_GIVEN | MP__TF_OUTPUT);
    char nm[1200];
    snprintf(nm, sizeof nm, "%s%s", prefix, xt->name);
    mp_status st = mp__pb_add_tensor(B, &like, nm, -1, MP__ROLE_COMM, out);
    if (st)
        return st;
    B->n_coll++;
    st = mp__pb_add_node(B, NULL, node, op, &in, 1, out, 1, ph);
    /* the group it runs in: the tensor-parallel ranks (validate --ranks'
     * communicator; the pipeline and data-parallel passes copy it) */
    return st ? st
              : mp_graph_set_attr_string(B->g, (uint32_t)B->g->n_nodes - 1,
                                         "group", "tp");
}

/* The name of a backward collective of node v (training): after the
 * backward of the forward node v differentiates (its pipeline stage),
 * what, and the tensor x it moves. */
static const char *bwd_name(tpb *T, uint32_t v, const char *what, uint32_t x)
{
    const mp_graph *t = T->t;
    uint32_t s = T->src[v];
    snprintf(T->name, sizeof T->name, "%s/grad_%s/%s",
             t->nodes[s != MP_NONE ? s : v].name, what, t->tensors[x].name);
    return T->name;
}

/* Input u of node v as the rank graph reads it: an entry scattered for
 * an sp node, an exit gathered for another (again in backward). */
static mp_status sp_input(tpb *T, mp__pb *B, const uint32_t *red,
                          uint32_t v, uint32_t u, uint32_t *id)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    bool inside = T->src[v] != MP_NONE && T->spn[T->src[v]];
    bool fwd = n->phase == MP_PHASE_FORWARD;
    *id = red[u];
    if ((T->sp[u] & SP_ENTRY) && inside) {
        if (T->scat[u] == MP_NONE) {
            snprintf(T->name, sizeof T->name, "%s/sp_scatter/%s", n->name,
                     t->tensors[u].name);
            char nm[1200];
            snprintf(nm, sizeof nm, "%s", T->name);
            mp_status st = coll(T, B, red[u], u, "sp/", true,
                                MP_KIND_ACTIVATION, nm, "ReduceScatter",
                                MP_PHASE_FORWARD, &T->scat[u]);
            if (st)
                return st;
        }
        *id = T->scat[u];
    } else if ((T->sp[u] & SP_EXIT) && !inside) {
        uint32_t *g = fwd ? &T->gath[u] : &T->bgath[u];
        if (*g == MP_NONE) {
            char nm[1200];
            if (fwd)
                snprintf(nm, sizeof nm, "%s/sp_all_gather/%s", n->name,
                         t->tensors[u].name);
            else
                snprintf(nm, sizeof nm, "%s",
                         bwd_name(T, v, "sp_all_gather", u));
            mp_status st = coll(T, B, red[u], u,
                                fwd ? "sp_full/" : "sp_full_bwd/", false,
                                MP_KIND_ACTIVATION, nm, "AllGather",
                                fwd ? MP_PHASE_FORWARD : MP_PHASE_BACKWARD,
                                g);
            if (st)
                return st;
        }
        *id = *g;
    }
    return MP_OK;
}

/* After node v: the row layer's partial sums reduced (all-reduced, or
 * reduce-scattered into the split stream), final gradients reduced,
 * scattered or gathered, a mixed exit's gradient parts scattered. */
static mp_status after_node(tpb *T, mp__pb *B, uint32_t *red, uint32_t v)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    mp_status st = MP_OK;
    char nm[1200];
    if (T->nrole[v] == NR_ROW) {
        uint32_t y = n->outputs[0];
        if (T->sp && (T->sp[y] & SP_ENTRY)) {
            snprintf(nm, sizeof nm, "%s/tp_reduce_scatter", n->name);
            return coll(T, B, red[y], y, "sp/", true, MP_KIND_ACTIVATION, nm,
                        "ReduceScatter", MP_PHASE_FORWARD, &T->scat[y]);
        }
        snprintf(nm, sizeof nm, "%s/tp_all_reduce", n->name);
        return coll(T, B, red[y], y, "tp/", false, MP_KIND_ACTIVATION, nm,
                    "AllReduce", MP_PHASE_FORWARD, &red[y]);
    }
    for (uint32_t o = 0; o < n->n_out && !st; o++) {
        uint32_t y = n->outputs[o], f;
        if (y == MP_NONE || (f = T->gof[y]) == MP_NONE)
            continue;
        if (T->fin[y] == FOP_AR) {
            /* the column layers' partial input gradients; named as the
             * backward of X's producer (its pipeline stage) */
            uint32_t xp = t->tensors[f].producer;
            snprintf(nm, sizeof nm, "%s/grad_tp_all_reduce",
                     xp != MP_NONE ? t->nodes[xp].name : n->name);
            st = coll(T, B, red[y], y, "tp/", false, MP_KIND_ACTIVATION, nm,
                      "AllReduce", MP_PHASE_BACKWARD, &red[y]);
        } else if (T->fin[y] == FOP_AG ||
                   (T->sp && (T->sp[y] & SP_GSPLIT))) {
            /* a scattered tensor's gradient, whole for its producer's
             * backward (or a split node's part of a mixed entry's) */
            uint32_t p = t->tensors[f].producer;
            if (T->fin[y] == FOP_AG)
                snprintf(nm, sizeof nm, "%s/grad_sp_all_gather/%s",
                         t->nodes[p != MP_NONE ? p : v].name,
                         t->tensors[y].name);
            else
                snprintf(nm, sizeof nm, "%s",
                         bwd_name(T, v, "sp_all_gather", y));
            st = coll(T, B, red[y], y, "sp_full/", false,
                      t->tensors[y].declared_kind, nm, "AllGather",
                      MP_PHASE_BACKWARD, &red[y]);
        } else if (T->sp && (T->sp[y] & SP_GFULL)) {
            /* a gradient part computed outside the split nodes */
            snprintf(nm, sizeof nm, "%s",
                     bwd_name(T, v, "sp_reduce_scatter", y));
            st = coll(T, B, red[y], y, "sp/", true,
                      t->tensors[y].declared_kind, nm, "ReduceScatter",
                      MP_PHASE_BACKWARD, &red[y]);
        }
    }
    return st;
}

/* Before the optimizer step v of a weight an sp node reads: its
 * gradient, partial over this rank's positions, all-reduced. */
static mp_status before_step(tpb *T, mp__pb *B, uint32_t *red, uint32_t v)
{
    const mp_graph *t = T->t;
    const mp__node *n = &t->nodes[v];
    if (!T->sp || n->phase != MP_PHASE_OPTIMIZER || n->n_in < 2 ||
        n->inputs[0] == MP_NONE || n->inputs[1] == MP_NONE ||
        !T->spw[n->inputs[0]])
        return MP_OK;
    uint32_t g = n->inputs[1], p = t->tensors[g].producer;
    char nm[1200];
    snprintf(nm, sizeof nm, "%s",
             p != MP_NONE ? bwd_name(T, p, "sp_all_reduce", g)
                          : t->tensors[g].name);
    return coll(T, B, red[g], g, "tp/", false, MP_KIND_GRADIENT, nm,
                "AllReduce", MP_PHASE_BACKWARD, &red[g]);
}

static mp_status tp_nodes(tpb *T, mp__pb *B, uint32_t *red, bool fwd_only)
{
    const mp_graph *t = T->t;
    mp_status st = MP_OK;
    for (uint32_t k = 0; k < t->n_nodes && !st; k++) {
        uint32_t v = t->topo[k];
        const mp__node *n = &t->nodes[v];
        if (fwd_only && n->phase != MP_PHASE_FORWARD)
            continue;
        if ((st = before_step(T, B, red, v)))
            break;
        uint32_t *in = B->buf, *out = B->buf + B->cap_buf / 2;
        for (uint32_t i = 0; i < n->n_in && !st; i++) {
            uint32_t u = n->inputs[i];
            in[i] = u == MP_NONE ? MP_NONE : red[u];
            if (u != MP_NONE && T->sp && T->sp[u])
                st = sp_input(T, B, red, v, u, &in[i]);
        }
        for (uint32_t o = 0; o < n->n_out; o++)
            out[o] = n->outputs[o] == MP_NONE ? MP_NONE
                                              : B->tmap[n->outputs[o]];
        if (!st && mp__node_view(n) && n->n_in >= 2 && n->n_out &&
            n->inputs[1] != MP_NONE && n->outputs[0] != MP_NONE &&
            (st = scaled_target(T, B, n, &in[1])))
            break;
        if (st || (st = mp__pb_add_node(B, n, NULL, NULL, in, n->n_in, out,
                                        n->n_out, (mp_phase)n->phase)))
            break;
        st = after_node(T, B, red, v);
    }
    return st;
}

/* The rank graph in B: the forward part only (A NULL), or everything
 * with the shapes of forward graph A. */
static mp_status tp_build(tpb *T, mp__pb *B, const mp__pb *A, uint32_t *red)
{
    const mp_graph *t = T->t;
    mp_status st = mp__pb_begin(B, T->ctx, t, "");
    for (uint32_t x = 0; x < t->n_tensors && !st; x++)
        st = tp_tensor(T, B, A, x);
    for (uint32_t x = 0; x < t->n_tensors && !st; x++) {
        red[x] = B->tmap[x];
        if (T->sp)
            T->scat[x] = T->gath[x] = T->bgath[x] = MP_NONE;
    }
    if (!st)
        st = tp_nodes(T, B, red, A == NULL);
    if (!st)
        st = mp_graph_finalize(B->g);
    return st;
}

mp_status mp__parallel_tp(const mp_graph *t, const mp_parallel_options *o,
                          mp__pb *B, uint32_t *n_attn, uint32_t *n_mlp,
                          uint32_t *n_vocab, uint32_t *n_sp)
{
    tpb T;
    memset(&T, 0, sizeof T);
    T.t = t;
    T.ctx = t->ctx;
    T.N = o->tp;
    T.seq = o->sp != 0;
    mp__pb A;
    memset(&A, 0, sizeof A);
    uint32_t *red = mp__alloc(T.ctx, (t->n_tensors + 1) * sizeof *red);
    mp_status st = red ? tp_alloc(&T) : MP_ERR_NOMEM;
    if (!st)
        st = find_blocks(&T);
    if (!st && T.seq)
        st = find_sp(&T);
    if (!st) {
        final_grads(&T);
        st = tp_build(&T, &A, NULL, red);
    }
    if (!st && !(st = tp_build(&T, B, &A, red)))
        mp__mark_pointwise_backward(B->g);
    *n_attn = T.n_attn;
    *n_mlp = T.n_mlp;
    *n_vocab = T.n_vocab;
    *n_sp = T.n_sp;
    mp__pb_free(&A);
    mp__dealloc(T.ctx, red);
    tp_free(&T);
    return st;
}
