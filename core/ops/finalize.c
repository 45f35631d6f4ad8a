/* Finalize: the registry entry of every node, consumers, topological
 * order (smallest index first), the sources check, then sizes: from
 * declared shapes, then each node's shape function in topological order,
 * views and constant folding. The graph is closed once it succeeds. */
#include "ops.h"
#include "shape.h"

#include <stdio.h>
#include <string.h>

static mp_status report_cycle(mp_graph *g, const uint32_t *indeg)
{
    /* walk producers backwards among unprocessed nodes until one repeats */
    uint32_t start = MP_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (indeg[i]) {
            start = i;
            break;
        }
    uint32_t cur = start;
    for (size_t steps = 0; steps <= g->n_nodes; steps++) {
        const mp__node *n = &g->nodes[cur];
        uint32_t next = MP_NONE;
        for (uint32_t k = 0; k < n->n_in && next == MP_NONE; k++) {
            uint32_t t = n->inputs[k];
            if (t == MP_NONE)
                continue;
            uint32_t p = g->tensors[t].producer;
            if (p != MP_NONE && indeg[p])
                next = p;
        }
        if (next == MP_NONE)
            break;
        cur = next;
    }
    /* cur is on a cycle (after n steps we are inside it) */
    char buf[512];
    size_t len = 0;
    uint32_t v = cur;
    for (int k = 0; k < 8; k++) {
        int w = snprintf(buf + len, sizeof buf - len, "%s'%s'",
                         k ? " <- " : "", g->nodes[v].name);
        if (w < 0 || (size_t)w >= sizeof buf - len)
            break;
        len += (size_t)w;
        const mp__node *n = &g->nodes[v];
        uint32_t next = MP_NONE;
        for (uint32_t i = 0; i < n->n_in && next == MP_NONE; i++) {
            uint32_t t = n->inputs[i];
            if (t != MP_NONE && g->tensors[t].producer != MP_NONE &&
                indeg[g->tensors[t].producer])
                next = g->tensors[t].producer;
        }
        if (next == MP_NONE || next == cur)
            break;
        v = next;
    }
    return mp__err(g->ctx, MP_ERR_CYCLE, "graph has a cycle through node %s",
                  buf);
}

static mp_status build_consumers_and_order(mp_graph *g)
{
    mp_ctx *ctx = g->ctx;
    uint32_t nt = (uint32_t)g->n_tensors, nn = (uint32_t)g->n_nodes;
    size_t total = 0;
    for (uint32_t i = 0; i < nn; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].inputs[k] != MP_NONE)
                total++;
    g->cons = mp__alloc(ctx, (total ? total : 1) * sizeof *g->cons);
    g->topo = mp__alloc(ctx, (nn ? nn : 1) * sizeof *g->topo);
    uint32_t *indeg = mp__calloc(ctx, nn ? nn : 1, sizeof *indeg);
    uint32_t *heap = mp__alloc(ctx, (nn ? nn : 1) * sizeof *heap);
    if (!g->cons || !g->topo || !indeg || !heap) {
        mp__dealloc(ctx, indeg);
        mp__dealloc(ctx, heap);
        return MP_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < nt; t++)
        g->tensors[t].n_cons = 0;
    for (uint32_t i = 0; i < nn; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_in; k++) {
            uint32_t t = g->nodes[i].inputs[k];
            if (t != MP_NONE)
                g->tensors[t].n_cons++;
        }
    uint32_t off = 0;
    for (uint32_t t = 0; t < nt; t++) {
        g->tensors[t].cons_begin = off;
        off += g->tensors[t].n_cons;
        g->tensors[t].n_cons = 0;
    }
    for (uint32_t i = 0; i < nn; i++) {
        const mp__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t t = n->inputs[k];
            if (t == MP_NONE)
                continue;
            mp__tensor *tt = &g->tensors[t];
            /* a node reading the same tensor twice counts once */
            if (tt->n_cons && g->cons[tt->cons_begin + tt->n_cons - 1] == i)
                continue;
            g->cons[tt->cons_begin + tt->n_cons++] = i;
            if (tt->producer != MP_NONE)
                indeg[i]++;
        }
    }
    uint32_t hn = 0, done = 0;
    for (uint32_t i = 0; i < nn; i++)
        if (!indeg[i])
            mp__heap_push(heap, &hn, i);
    while (hn) {
        uint32_t v = mp__heap_pop(heap, &hn);
        g->topo[done++] = v;
        const mp__node *n = &g->nodes[v];
        for (uint32_t k = 0; k < n->n_out; k++) {
            const mp__tensor *t = &g->tensors[n->outputs[k]];
            for (uint32_t c = 0; c < t->n_cons; c++) {
                uint32_t u = g->cons[t->cons_begin + c];
                if (--indeg[u] == 0)
                    mp__heap_push(heap, &hn, u);
            }
        }
    }
    mp_status st = MP_OK;
    if (done != nn)
        st = report_cycle(g, indeg);
    mp__dealloc(ctx, indeg);
    mp__dealloc(ctx, heap);
    return st;
}

static mp_status check_sources(mp_graph *g)
{
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE) {
            if (tt->kind == MP_KIND_ACTIVATION || tt->kind == MP_KIND_GRADIENT ||
                tt->kind == MP_KIND_OUTPUT) {
                if (tt->n_cons == 0 && !(tt->flags & MP__TF_OUTPUT))
                    continue; /* declared but unused: ignored */
                return mp__err(g->ctx, MP_ERR_NO_PRODUCER,
                              "tensor '%s' (%s) has no producer%s%s%s: "
                              "declare it as an input, weight or constant",
                              tt->name, mp_kind_name((mp_tensor_kind)tt->kind),
                              tt->n_cons ? "; it is used by node '" : "",
                              tt->n_cons ? g->nodes[g->cons[tt->cons_begin]].name
                                         : "",
                              tt->n_cons ? "'" : "");
            }
        } else if (tt->kind == MP_KIND_INPUT) {
            return mp__err(g->ctx, MP_ERR_GRAPH,
                          "tensor '%s' is a graph input but node '%s' "
                          "produces it",
                          tt->name, g->nodes[tt->producer].name);
        }
    }
    return MP_OK;
}

/* Every reader of tensor y is a backward node, or a node whose registry
 * entry has `flag` that reads y only at inputs before `from`: the
 * readers a view by its readers needs. */
static bool readers_take(const mp_graph *g, uint32_t y, uint64_t flag,
                         uint32_t from)
{
    const mp__tensor *out = &g->tensors[y];
    for (uint32_t k = 0; k < out->n_cons; k++) {
        const mp__node *cn = &g->nodes[g->cons[out->cons_begin + k]];
        if (cn->phase == MP_PHASE_BACKWARD)
            continue;
        if (!cn->def || !(cn->def->flags & flag))
            return false;
        for (uint32_t i = from; i < cn->n_in; i++)
            if (cn->inputs[i] == y)
                return false;
    }
    return true;
}

/* A Transpose (MP__OPF_VIEW_T) that swaps the last two axes of a tensor
 * that is not itself a transposed view, is no graph output, and is read
 * only as operand 0 or 1 of matrix products (MP__OPF_T_OPERAND) or by
 * backward nodes (or not at all): a view, which its readers take with
 * op T. */
static bool transposed_view(const mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    unsigned ik = n->n_in < 1 || n->inputs[0] == MP_NONE
                      ? MP__NVIEW_NONE
                      : mp__tensor_view_kind(g, n->inputs[0]);
    if (n->n_in < 1 || n->n_out != 1 || n->inputs[0] == MP_NONE ||
        ik == MP__NVIEW_T || ik == MP__NVIEW_B || ik == MP__NVIEW_P)
        return false;
    uint32_t y = n->outputs[0];
    const mp__tensor *in = &g->tensors[n->inputs[0]], *out = &g->tensors[y];
    int32_t r = in->rank;
    /* (no reader at all: a training graph's Transpose of a weight whose
     * product reads autocast's copy instead) */
    if (r < 2 || out->rank != r || (out->flags & MP__TF_OUTPUT) ||
        out->bytes != in->bytes)
        return false;
    uint32_t c;
    const int64_t *perm = mp__attr_ints(n, "perm", &c);
    if (perm) {
        if (c != (uint32_t)r || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
            return false;
        for (int32_t i = 0; i < r - 2; i++)
            if (perm[i] != i)
                return false;
    } else if (r != 2) {
        return false;
    }
    return readers_take(g, y, MP__OPF_T_OPERAND, 2);
}

/* Tensor t's memory holds its elements in row-major order of its own
 * shape: no transposed or broadcast view. */
static bool contiguous(const mp_graph *g, uint32_t t)
{
    unsigned k = mp__tensor_view_kind(g, t);
    return k != MP__NVIEW_T && k != MP__NVIEW_B && k != MP__NVIEW_P;
}

/* A Transpose (any perm) of a contiguous, transposed or permuted tensor,
 * no graph output, read only as operand 0-2 of nodes that read those
 * with any strides (MP__OPF_STRIDED_IN) or by backward nodes, or (of a
 * contiguous tensor whose last axis stays one of the last two, so that
 * each matrix has unit stride along its rows or columns) as operand A or
 * B of a matrix product, which reads it with batch strides and op N or
 * T: a view its readers take with the permuted strides. */
static bool permuted_view(const mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    if (n->n_in < 1 || n->n_out != 1 || n->inputs[0] == MP_NONE ||
        n->outputs[0] == MP_NONE ||
        mp__tensor_view_kind(g, n->inputs[0]) == MP__NVIEW_B)
        return false;
    uint32_t y = n->outputs[0];
    const mp__tensor *in = &g->tensors[n->inputs[0]], *out = &g->tensors[y];
    if ((out->flags & MP__TF_OUTPUT) || in->rank < 2 ||
        out->rank != in->rank || out->bytes != in->bytes || !out->n_cons)
        return false;
    if (readers_take(g, y, MP__OPF_STRIDED_IN, 3))
        return true;
    int32_t r = in->rank;
    uint32_t c;
    const int64_t *perm = mp__attr_ints(n, "perm", &c);
    if (!perm || c != (uint32_t)r ||
        (perm[r - 1] != r - 1 && perm[r - 2] != r - 1) ||
        mp__tensor_view_kind(g, n->inputs[0]) != MP__NVIEW_NONE)
        return false;
    for (uint32_t k = 0; k < out->n_cons; k++) {
        const mp__node *cn = &g->nodes[g->cons[out->cons_begin + k]];
        if (cn->phase == MP_PHASE_BACKWARD)
            continue;
        bool attn = cn->def && (cn->def->flags & MP__OPF_STRIDED_IN);
        if (!attn && (!cn->def || MP__OP_KERNEL(cn->def) != MP__KERNEL_MATMUL))
            return false;
        for (uint32_t i = attn ? 3 : 2; i < cn->n_in; i++)
            if (cn->inputs[i] == y)
                return false;
    }
    return true;
}

/* An Expand (MP__OPF_VIEW_B) of a contiguous tensor, no graph output,
 * read only by nodes that broadcast every input to their output's shape
 * (MP__OPF_BCAST_IN) or by backward nodes (or not at all): a view, which
 * its readers take by broadcasting its input. */
static bool broadcast_view(const mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    if (n->n_in < 1 || n->n_out != 1 || n->inputs[0] == MP_NONE ||
        n->outputs[0] == MP_NONE || !contiguous(g, n->inputs[0]))
        return false;
    const mp__tensor *in = &g->tensors[n->inputs[0]];
    const mp__tensor *out = &g->tensors[n->outputs[0]];
    if ((out->flags & MP__TF_OUTPUT) || out->dtype != in->dtype ||
        in->rank < 0 || out->rank < in->rank)
        return false;
    return readers_take(g, n->outputs[0], MP__OPF_BCAST_IN, UINT32_MAX);
}

/* Byte offset of the part of x (rank r, dims xd, esize bytes an
 * element) that starts at index firsts and has dims od, in *off: false
 * when the part is not one contiguous range (an axis before the partial
 * one has more than one element taken, or one after it is not whole). */
static bool range_of(const int64_t *xd, const int64_t *od, int32_t r,
                     const int64_t *firsts, uint64_t esize, uint64_t *off)
{
    int32_t a = -1;
    for (int32_t i = 0; i < r; i++)
        if (od[i] != xd[i])
            a = i;
    for (int32_t i = 0; i < a; i++)
        if (od[i] != 1)
            return false;
    uint64_t o = 0, stride = esize;
    for (int32_t i = r - 1; i >= 0; i--) {
        o += (uint64_t)firsts[i] * stride;
        stride *= (uint64_t)xd[i];
    }
    *off = o;
    return true;
}

/* A Slice with unit steps or a Split (MP__OPF_VIEW_R) of a contiguous
 * tensor whose every output is one contiguous range of it and no graph
 * output: a view of each range. Sets each output's view_off. */
static bool range_view(mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    if (n->n_in < 1 || n->inputs[0] == MP_NONE || n->n_out < 1 ||
        !contiguous(g, n->inputs[0]))
        return false;
    const mp__tensor *in = &g->tensors[n->inputs[0]];
    int32_t r = in->rank;
    unsigned bits = mp_dtype_bits((mp_dtype)in->dtype);
    if (r < 1 || r > MP_MAX_RANK || !bits || bits % 8 ||
        !(in->flags & MP__TF_SIZE_KNOWN))
        return false;
    for (int32_t i = 0; i < r; i++)
        if (in->dims[i] < 0)
            return false;
    bool split = MP__OP_KERNEL(n->def) == MP__KERNEL_SPLIT;
    int32_t ax = 0;
    if (split && !mp__axis(mp__attr_int(n, "axis", 0), r, &ax))
        return false;
    int64_t firsts[MP_MAX_RANK], at = 0;
    if (!split && (n->n_out != 1 || !mp__slice_firsts(g, v, firsts)))
        return false;
    bool ok = true;
    for (uint32_t o = 0; o < n->n_out && ok; o++) {
        mp__tensor *out = n->outputs[o] == MP_NONE
                              ? NULL
                              : &g->tensors[n->outputs[o]];
        ok = out && !(out->flags & MP__TF_OUTPUT) &&
             out->dtype == in->dtype && out->rank == r;
        for (int32_t i = 0; ok && i < r; i++)
            ok = out->dims[i] >= 0;
        if (ok && split) {
            for (int32_t i = 0; i < r; i++)
                firsts[i] = i == ax ? at : 0;
            at += out->dims[ax];
        }
        uint64_t off = 0;
        ok = ok && range_of(in->dims, out->dims, r, firsts, bits / 8, &off);
        if (ok)
            out->view_off = in->view_off + (out->bytes ? off : 0);
    }
    if (!ok) /* (offsets are only a view's) */
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE)
                g->tensors[n->outputs[o]].view_off = 0;
    return ok;
}

/* The view kind (MP__NVIEW_*) node v is by its readers. A kind set
 * before finalize (by a copy of a graph finalized with shapes, which may
 * carry sizes only) stays, its offsets with it. */
static uint8_t view_kind(mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    uint64_t f = n->def->flags;
    if (f & MP__OPF_VIEW_T)
        return n->view == MP__NVIEW_T || (!n->view && transposed_view(g, v))
                   ? MP__NVIEW_T
               : n->view == MP__NVIEW_P || permuted_view(g, v) ? MP__NVIEW_P
                                                               : 0;
    if (f & MP__OPF_VIEW_B)
        return n->view == MP__NVIEW_B || broadcast_view(g, v) ? MP__NVIEW_B
                                                               : 0;
    if (f & MP__OPF_VIEW_R)
        return range_view(g, v) || n->view == MP__NVIEW_R ? MP__NVIEW_R : 0;
    return 0;
}

/* The view node v's outputs share input 0's memory: a range view's every
 * output inside it, another view's output 0 with its bytes (a broadcast
 * view: fewer). */
static mp_status alias_outputs(mp_graph *g, uint32_t v)
{
    const mp__node *n = &g->nodes[v];
    mp__tensor *in = &g->tensors[n->inputs[0]];
    uint32_t k = n->view == MP__NVIEW_R ? n->n_out : 1;
    for (uint32_t o = 0; o < k; o++) {
        mp__tensor *out = &g->tensors[n->outputs[o]];
        bool fits;
        if (n->view == MP__NVIEW_R)
            fits = out->view_off >= in->view_off &&
                   out->view_off - in->view_off <= in->bytes &&
                   out->bytes <= in->bytes - (out->view_off - in->view_off);
        else
            fits = n->view == MP__NVIEW_B || out->bytes == in->bytes;
        if (!fits)
            return mp__err(g->ctx, MP_ERR_SHAPE,
                          "node '%s' (%s): view output '%s' has %llu bytes "
                          "%s but its input '%s' has %llu",
                          n->name, n->op, out->name,
                          (unsigned long long)out->bytes,
                          n->view == MP__NVIEW_R ? "at its offset" : "",
                          in->name, (unsigned long long)in->bytes);
        if (n->view != MP__NVIEW_R)
            out->view_off = in->view_off;
        out->alias_of = n->inputs[0];
        out->root = in->root;
    }
    return MP_OK;
}

/* Sizes from shapes, then the op registry for outputs still unknown (in
 * topological order), views and constant folding. */
static mp_status infer_sizes(mp_graph *g)
{
    mp_ctx *ctx = g->ctx;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        mp__tensor *tt = &g->tensors[t];
        bool shape_known = tt->rank >= 0 && mp_dtype_bits((mp_dtype)tt->dtype);
        for (int32_t d = 0; shape_known && d < tt->rank; d++)
            if (tt->dims[d] < 0)
                shape_known = false;
        if (!shape_known)
            continue;
        uint64_t b;
        mp_status st = mp__tensor_bytes_from_shape(ctx, tt, &b);
        if (st)
            return st;
        if ((tt->flags & MP__TF_BYTES_GIVEN) && b != tt->bytes)
            return mp__err(ctx, MP_ERR_SHAPE,
                          "tensor '%s': bytes %llu disagree with its dtype and "
                          "shape (%llu bytes)",
                          tt->name, (unsigned long long)tt->bytes,
                          (unsigned long long)b);
        tt->bytes = b;
        tt->flags |= MP__TF_SIZE_KNOWN;
    }
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const mp__tensor *tt = &g->tensors[t];
        if (tt->producer == MP_NONE && !(tt->flags & MP__TF_SIZE_KNOWN) &&
            (tt->n_cons || (tt->flags & MP__TF_OUTPUT)))
            return mp__err(ctx, MP_ERR_SHAPE,
                          "tensor '%s' (%s): size unknown: give its dtype and "
                          "shape, or bytes",
                          tt->name, mp_kind_name((mp_tensor_kind)tt->kind));
    }
    for (uint32_t k = 0; k < g->n_nodes; k++) {
        uint32_t v = g->topo[k];
        mp__node *n = &g->nodes[v];
        mp_status st = n->def->infer(g, v);
        if (st == MP_ERR_SHAPE && mp__op_is_generic(n->def))
            ctx->status = st = MP_ERR_UNKNOWN_OP; /* the message names op,
                                                     domain and node */
        if (st)
            return st;
        n->view = view_kind(g, v);
        /* views: output 0 (a range view: every output) shares input 0's
         * memory */
        if (mp__node_view(n) && n->n_in && n->n_out &&
            n->inputs[0] != MP_NONE && (st = alias_outputs(g, v)))
            return st;
        /* folding: every input persistent (or a constant source), or
         * only the inputs' shapes read and the value known */
        bool any = false, all_const = true;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t t = n->inputs[i];
            if (t == MP_NONE)
                continue;
            any = true;
            if (!mp__kind_persistent(g->tensors[t].kind))
                all_const = false;
        }
        if ((n->def->flags & MP__OPF_SHAPE_READ) && n->n_out == 1 &&
            g->tensors[n->outputs[0]].value)
            all_const = true;
        /* a collective communicates every step, whatever it reads */
        if (n->def->flags & MP__OPF_COLLECTIVE)
            all_const = false;
        if (any ? all_const : (n->def->flags & MP__OPF_CONSTANT) != 0) {
            for (uint32_t o = 0; o < n->n_out; o++) {
                mp__tensor *out = &g->tensors[n->outputs[o]];
                if (!mp__kind_persistent(out->kind) &&
                    !(out->flags & MP__TF_NO_FOLD)) {
                    out->kind = MP_KIND_CONSTANT;
                    out->flags |= MP__TF_FOLDED;
                }
            }
        }
    }
    return MP_OK;
}

/* Each node's registry entry, in g and in its bodies (control-flow shape
 * functions read and reset bodies they have not finalized yet); a node's
 * op type never changes. */
static void set_defs(mp_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        mp__node *n = &g->nodes[i];
        if (!n->def)
            n->def = mp__op_lookup(n->op, n->domain);
    }
    for (size_t i = 0; i < g->n_subgraphs; i++)
        set_defs(g->subgraphs[i]);
}

mp_status mp_graph_finalize(mp_graph *g)
{
    MP__CHECK_OPEN(g);
    set_defs(g);
    mp_status st = build_consumers_and_order(g);
    if (!st)
        st = check_sources(g);
    g->finalize_body = mp_graph_finalize;
    if (!st)
        st = infer_sizes(g);
    if (st) {
        mp__dealloc(g->ctx, g->cons);
        mp__dealloc(g->ctx, g->topo);
        g->cons = g->topo = NULL;
        for (uint32_t t = 0; t < g->n_tensors; t++) {
            mp__tensor *tt = &g->tensors[t];
            tt->kind = tt->declared_kind;
            tt->flags &= (uint8_t)~MP__TF_FOLDED;
            tt->alias_of = MP_NONE;
            tt->root = t;
            tt->view_off = 0;
        }
        for (uint32_t k = 0; k < g->n_nodes; k++)
            g->nodes[k].view = 0;
        return st;
    }
    g->finalized = true;
    return MP_OK;
}
