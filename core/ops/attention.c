/* core/ops/attention.c - fused attention: finds the scaled-dot-product
 * attention chains of a finalized graph, as torch.onnx and Hugging Face
 * exports write them, and rewrites each as one ScaledDotProductAttention
 * node (mp_graph_fuse_attention, include/memplan/graph.h;
 * docs/attention.md). The fused node reads the tensors the chain read
 * (Q, K transposed, V, the mask, the scalar factors) and writes the second
 * MatMul's output, so every tensor it touches keeps its ONNX name; a chain
 * with two masks (Swin's shifted windows: one over the scores, one over a
 * view of them) reads their sum, the one tensor the rewrite adds. */
#include "ops.h"
#include "shape.h"

#include <stdio.h>
#include <string.h>

/* Mask kinds (attribute mask_kind of the fused node). */
enum { MASK_NONE = 0, MASK_ADD = 1, MASK_KEEP_TRUE = 2, MASK_KEEP_FALSE = 3 };

#define CHAIN_MAX 16
#define BACK_MAX 6

typedef struct attn_chain {
    uint32_t nodes[CHAIN_MAX]; /* removed (mm2 last: replaced) */
    uint32_t n_nodes;
    uint32_t mm2;
    uint32_t q, kt, v, mask, qs, ks, ss, fill; /* tensors or MP_NONE */
    /* a mask added while the scores are reshaped to view[] (Swin's
     * shifted windows: [B*nW, H, T, T] as [B, nW, H, T, T]); with a
     * mask of the scores' shape as well, the fused node reads their sum */
    uint32_t vmask;
    int32_t view_rank; /* 0: no view */
    int64_t view[MP_MAX_RANK];
    int mask_kind, scale_div, mask_first, nan_to_zero, dropout;
    uint64_t removed_bytes;
} attn_chain;

static bool op_is(const mp__node *n, const char *op)
{
    return n->def && !mp__op_is_generic(n->def) &&
           n->def->domain[0] == '\0' && strcmp(n->def->name, op) == 0;
}

static const mp__node *producer(const mp_graph *g, uint32_t t)
{
    uint32_t p = t == MP_NONE ? MP_NONE : g->tensors[t].producer;
    return p == MP_NONE ? NULL : &g->nodes[p];
}

/* An intermediate of the chain: read only by node `reader` (once or
 * more, n_readers distinct nodes), not a graph output. */
static bool only_read_by(const mp_graph *g, uint32_t t, uint32_t reader)
{
    const mp__tensor *x = &g->tensors[t];
    if (x->flags & MP__TF_OUTPUT || x->n_cons == 0)
        return false;
    for (uint32_t c = 0; c < x->n_cons; c++)
        if (g->cons[x->cons_begin + c] != reader)
            return false;
    return true;
}

static bool is_float_dt(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT16 ||
           dt == MP_DTYPE_BFLOAT16 || dt == MP_DTYPE_FLOAT64;
}

/* One element (a scalar factor or fill value). */
static bool is_scalar(const mp_graph *g, uint32_t t)
{
    if (t == MP_NONE)
        return false;
    const mp__tensor *x = &g->tensors[t];
    if (x->rank < 0)
        return false;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] != 1)
            return false;
    return true;
}

static bool same_shape(const mp__tensor *a, const mp__tensor *b)
{
    if (a->rank < 0 || a->rank != b->rank)
        return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] < 0 || a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* A view of the scores s that the fused kernel can index a mask by:
 * known dims, the last two (Tq, Tk) kept, the leading ones regrouped
 * (same product, row-major), rank at most MPV's 8 and above 2. */
static bool scores_view_ok(const mp__tensor *v, const mp__tensor *s)
{
    if (v->rank < 3 || v->rank > 8 || s->rank < 2)
        return false;
    uint64_t pv = 1, ps = 1;
    for (int32_t i = 0; i < v->rank; i++)
        if (v->dims[i] < 1)
            return false;
    if (v->dims[v->rank - 1] != s->dims[s->rank - 1] ||
        v->dims[v->rank - 2] != s->dims[s->rank - 2])
        return false;
    for (int32_t i = 0; i + 2 < v->rank; i++)
        if (!mp__mul_u64(pv, (uint64_t)v->dims[i], &pv))
            return false;
    for (int32_t i = 0; i + 2 < s->rank; i++)
        if (s->dims[i] < 1 || !mp__mul_u64(ps, (uint64_t)s->dims[i], &ps))
            return false;
    return pv == ps;
}

/* A mask m that broadcasts to the scores s also broadcasts, aligned right,
 * to the view v of s (with the same values): the dims of s it covers
 * beyond the trailing ones s and v share are 1. */
static bool mask_fits_view(const mp__tensor *m, const mp__tensor *s,
                           const mp__tensor *v)
{
    if (m->rank > v->rank)
        return false;
    int32_t common = 0;
    while (common < s->rank && common < v->rank &&
           s->dims[s->rank - 1 - common] == v->dims[v->rank - 1 - common])
        common++;
    for (int32_t i = common; i < m->rank; i++)
        if (m->dims[m->rank - 1 - i] != 1)
            return false;
    return true;
}

/* m broadcasts to s without changing s (numpy rules, aligned right). */
static bool broadcasts_to(const mp__tensor *m, const mp__tensor *s)
{
    if (m->rank < 0 || m->rank > s->rank)
        return false;
    for (int32_t i = 0; i < m->rank; i++) {
        int64_t dm = m->dims[m->rank - 1 - i], ds = s->dims[s->rank - 1 - i];
        if (dm < 0 || (dm != 1 && dm != ds))
            return false;
    }
    return true;
}

static void push(attn_chain *c, const mp_graph *g, uint32_t node)
{
    c->nodes[c->n_nodes++] = node;
    const mp__node *n = &g->nodes[node];
    for (uint32_t o = 0; o < n->n_out; o++)
        if (n->outputs[o] != MP_NONE && node != c->mm2 &&
            mp__tensor_in_arena(&g->tensors[n->outputs[o]]))
            c->removed_bytes += g->tensors[n->outputs[o]].bytes;
}

/* Input i of node n is t's only consumer position: the other input of a
 * binary node reading t, or MP_NONE. */
static uint32_t other_input(const mp__node *n, uint32_t t, uint32_t *pos)
{
    if (n->n_in != 2)
        return MP_NONE;
    if (n->inputs[0] == t && n->inputs[1] != t) {
        *pos = 0;
        return n->inputs[1];
    }
    if (n->inputs[1] == t && n->inputs[0] != t) {
        *pos = 1;
        return n->inputs[0];
    }
    return MP_NONE;
}

/* A Mul of operand t (read only by `reader`) by a scalar: the scalar, and
 * *src its other input; MP_NONE when t is not such a Mul's output. */
static uint32_t operand_scale(const mp_graph *g, uint32_t t, uint32_t reader,
                              uint32_t *src, uint32_t *node)
{
    const mp__node *p = producer(g, t);
    *src = t;
    if (!p || !op_is(p, "Mul") || p->n_in != 2 || !only_read_by(g, t, reader))
        return MP_NONE;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t s = p->inputs[i], x = p->inputs[1 - i];
        if (s != MP_NONE && x != MP_NONE && is_scalar(g, s) &&
            !is_scalar(g, x) && same_shape(&g->tensors[x], &g->tensors[t])) {
            *src = x;
            *node = g->tensors[t].producer;
            return s;
        }
    }
    return MP_NONE;
}

/* The chain around Softmax node s, when it is one (see graph.h). */
/* The chain after Softmax node s (its output y): [Where(IsNaN(y), 0, y)]
 * [Dropout or Identity] MatMul(., V); fwd[] gets the nodes between, c the
 * second MatMul and V. */
static bool match_forward(const mp_graph *g, uint32_t s, attn_chain *c,
                          uint32_t *fwd, uint32_t *n_fwd)
{
    const mp__node *sm = &g->nodes[s];
    /* forward: [Where(IsNaN(y), 0, y)] [Dropout] MatMul(., V) */
    uint32_t y = sm->outputs[0];
    uint32_t nf = 0;
    const mp__tensor *yt = &g->tensors[y];
    if (yt->n_cons == 2 && !(yt->flags & MP__TF_OUTPUT)) {
        uint32_t a = g->cons[yt->cons_begin], b = g->cons[yt->cons_begin + 1];
        if (op_is(&g->nodes[b], "IsNaN")) {
            uint32_t tmp = a;
            a = b;
            b = tmp;
        }
        const mp__node *isn = &g->nodes[a], *wh = &g->nodes[b];
        if (!op_is(isn, "IsNaN") || !op_is(wh, "Where") || wh->n_in != 3 ||
            wh->n_out != 1 || isn->n_out != 1 ||
            wh->inputs[0] != isn->outputs[0] || wh->inputs[2] != y ||
            !is_scalar(g, wh->inputs[1]) ||
            !only_read_by(g, isn->outputs[0], b))
            return false;
        fwd[nf++] = a;
        fwd[nf++] = b;
        c->nan_to_zero = 1;
        y = wh->outputs[0];
    }
    uint32_t mm2 = MP_NONE;
    for (int hop = 0; hop < 2 && mm2 == MP_NONE; hop++) {
        const mp__tensor *x = &g->tensors[y];
        if (x->n_cons != 1 || (x->flags & MP__TF_OUTPUT))
            return false;
        uint32_t cn = g->cons[x->cons_begin];
        const mp__node *n = &g->nodes[cn];
        if (n->def && (n->def->flags & MP__OPF_MATMUL) && op_is(n, "MatMul") &&
            n->n_in == 2 && n->inputs[0] == y && n->inputs[1] != y)
            mm2 = cn;
        else if (hop == 0 && op_is(n, "Identity") && n->n_in == 1 &&
                 n->n_out == 1 && n->outputs[0] != MP_NONE) {
            fwd[nf++] = cn; /* a Dropout the exporter dropped */
            y = n->outputs[0];
        } else if (hop == 0 && op_is(n, "Dropout") && n->n_in >= 1 &&
                 n->inputs[0] == y && n->n_out >= 1 &&
                 n->outputs[0] != MP_NONE &&
                 (n->n_out < 2 || n->outputs[1] == MP_NONE ||
                  (g->tensors[n->outputs[1]].n_cons == 0 &&
                   !(g->tensors[n->outputs[1]].flags & MP__TF_OUTPUT)))) {
            fwd[nf++] = cn;
            c->dropout = 1;
            y = n->outputs[0];
        } else
            return false;
    }
    if (mm2 == MP_NONE)
        return false;
    c->mm2 = mm2;
    c->v = g->nodes[mm2].inputs[1];
    *n_fwd = nf;
    return true;
}

/* The chain before Softmax node s (scores like sc), walked back to
 * MatMul(Q, K^T): at most one scale and one mask in either order, and at
 * most one view of the scores holding an additive mask: Reshape(scores
 * to V), Add(., a mask broadcast to V), Reshape(back to the scores'
 * shape), as torchvision's shifted-window attention adds its mask over
 * [B, windows, heads, T, T]. Two masks are added next to each other (no
 * scale between them). back[] gets the nodes between (from the Softmax
 * back), *mm1 the first MatMul, c the scale, the masks and the view. */
static bool match_backward(const mp_graph *g, uint32_t s,
                           const mp__tensor *sc, attn_chain *c,
                           uint32_t *back, uint32_t *n_back, uint32_t *mm1_out)
{
    const mp__node *sm = &g->nodes[s];
    uint32_t t = sm->inputs[0], reader = s, mm1 = MP_NONE;
    uint32_t nb = 0;
    const mp__tensor *cur = sc, *view = NULL; /* the shape walked at */
    bool have_scale = false, have_mask = false, in_view = false;
    char order[4]; /* 'S' scale, 'M' mask, 'V' view mask, as met */
    int n_order = 0;
    for (int hop = 0; hop < BACK_MAX && mm1 == MP_NONE; hop++) {
        const mp__node *p = producer(g, t);
        if (!p || !only_read_by(g, t, reader) ||
            !same_shape(&g->tensors[t], cur))
            return false;
        uint32_t pn = g->tensors[t].producer, pos = 0;
        if (!in_view && p->def && (p->def->flags & MP__OPF_MATMUL) &&
            op_is(p, "MatMul") && p->n_in == 2) {
            mm1 = pn;
            break;
        }
        if (op_is(p, "Reshape") && p->n_in >= 1 && p->n_out == 1 &&
            p->inputs[0] != MP_NONE && producer(g, p->inputs[0])) {
            const mp__tensor *x = &g->tensors[p->inputs[0]];
            if (!in_view && !view && scores_view_ok(x, sc) &&
                !same_shape(x, sc)) {
                view = cur = x; /* the scores seen as the view */
                in_view = true;
            } else if (in_view && c->vmask != MP_NONE && same_shape(x, sc)) {
                cur = sc; /* the scores before the view */
                in_view = false;
            } else
                return false;
            back[nb++] = pn;
            reader = pn;
            t = p->inputs[0];
            continue;
        }
        /* the scores input of the node: the one of the scores' shape */
        uint32_t in = MP_NONE;
        for (uint32_t i = 0; i < p->n_in && in == MP_NONE; i++)
            if (p->inputs[i] != MP_NONE &&
                same_shape(&g->tensors[p->inputs[i]], cur) &&
                producer(g, p->inputs[i]))
                in = p->inputs[i];
        if (in == MP_NONE)
            return false;
        if (in_view) {
            uint32_t o = c->vmask == MP_NONE && op_is(p, "Add")
                             ? other_input(p, in, &pos)
                             : MP_NONE;
            if (o == MP_NONE || g->tensors[o].dtype != sc->dtype ||
                !broadcasts_to(&g->tensors[o], view))
                return false;
            c->vmask = o;
            order[n_order++] = 'V';
        } else if (!have_scale && (op_is(p, "Mul") || op_is(p, "Div"))) {
            uint32_t o = other_input(p, in, &pos);
            if (o == MP_NONE || !is_scalar(g, o) ||
                (op_is(p, "Div") && pos != 0))
                return false;
            c->ss = o;
            c->scale_div = op_is(p, "Div");
            have_scale = true;
            order[n_order++] = 'S';
        } else if (!have_mask && op_is(p, "Add")) {
            uint32_t o = other_input(p, in, &pos);
            if (o == MP_NONE || !is_float_dt(g->tensors[o].dtype) ||
                !broadcasts_to(&g->tensors[o], sc))
                return false;
            c->mask = o;
            c->mask_kind = MASK_ADD;
            have_mask = true;
            order[n_order++] = 'M';
        } else if (!have_mask && op_is(p, "Where") && p->n_in == 3) {
            uint32_t cond = p->inputs[0];
            if (cond == MP_NONE || g->tensors[cond].dtype != MP_DTYPE_BOOL ||
                !broadcasts_to(&g->tensors[cond], sc))
                return false;
            if (p->inputs[1] == in && is_scalar(g, p->inputs[2])) {
                c->fill = p->inputs[2];
                c->mask_kind = MASK_KEEP_TRUE;
            } else if (p->inputs[2] == in && is_scalar(g, p->inputs[1])) {
                c->fill = p->inputs[1];
                c->mask_kind = MASK_KEEP_FALSE;
            } else
                return false;
            c->mask = cond;
            have_mask = true;
            order[n_order++] = 'M';
        } else
            return false;
        back[nb++] = pn;
        reader = pn;
        t = in;
    }
    if (mm1 == MP_NONE)
        return false;
    if (c->vmask != MP_NONE) {
        /* one additive mask read over the view: the view mask, or the
         * sum of both (the other must then broadcast to the view too) */
        if (have_mask &&
            (c->mask_kind != MASK_ADD ||
             g->tensors[c->mask].dtype != g->tensors[c->vmask].dtype ||
             !mask_fits_view(&g->tensors[c->mask], sc, view)))
            return false;
        for (int i = 0; i + 2 < n_order; i++)
            if (order[i + 1] == 'S' && order[i] != 'S' && order[i + 2] != 'S')
                return false; /* a scale between the two masks */
        if (!have_mask) {
            c->mask = c->vmask;
            c->vmask = MP_NONE;
            c->mask_kind = MASK_ADD;
            have_mask = true;
        }
        c->view_rank = view->rank;
        memcpy(c->view, view->dims, (size_t)view->rank * sizeof *c->view);
    }
    /* a scale met before the masks (nearer the Softmax) is applied after
     * them: the mask comes first */
    c->mask_first = 0;
    if (have_mask && have_scale)
        for (int i = 0; i < n_order; i++)
            if (order[i] == 'S') {
                c->mask_first = i == 0;
                break;
            }
    *n_back = nb;
    *mm1_out = mm1;
    return true;
}

static bool match(const mp_graph *g, uint32_t s, attn_chain *c)
{
    const mp__node *sm = &g->nodes[s];
    memset(c, 0, sizeof *c);
    c->q = c->kt = c->v = c->mask = c->qs = c->ks = c->ss = c->fill =
        c->vmask = MP_NONE;
    if (!op_is(sm, "Softmax") || sm->n_in != 1 || sm->n_out != 1 ||
        sm->inputs[0] == MP_NONE)
        return false;
    const mp__tensor *sc = &g->tensors[sm->outputs[0]];
    if (sc->rank < 2 || !is_float_dt(sc->dtype))
        return false;
    int64_t dflt = g->onnx_opset && g->onnx_opset < 13 ? 1 : -1;
    int64_t ax = mp__attr_int(sm, "axis", dflt);
    if (ax != -1 && ax != sc->rank - 1)
        return false;
    uint32_t fwd[4], nf = 0, back[BACK_MAX], nb = 0, mm1 = MP_NONE;
    if (!match_forward(g, s, c, fwd, &nf) ||
        !match_backward(g, s, sc, c, back, &nb, &mm1))
        return false;
    uint32_t mm2 = c->mm2;
    const mp__node *m1 = &g->nodes[mm1];
    uint32_t qn = MP_NONE, kn = MP_NONE;
    c->qs = operand_scale(g, m1->inputs[0], mm1, &c->q, &qn);
    c->ks = operand_scale(g, m1->inputs[1], mm1, &c->kt, &kn);
    if (c->q == MP_NONE || c->kt == MP_NONE || c->v == MP_NONE ||
        c->q == c->kt)
        return false;
    const mp__tensor *q = &g->tensors[c->q], *k = &g->tensors[c->kt],
                     *v = &g->tensors[c->v];
    int32_t r = sc->rank;
    if (q->rank != r || k->rank != r || v->rank != r ||
        !is_float_dt(q->dtype) || k->dtype != q->dtype ||
        v->dtype != q->dtype || sc->dtype != q->dtype)
        return false;
    for (int32_t i = 0; i < r; i++)
        if (q->dims[i] < 0 || k->dims[i] < 0 || v->dims[i] < 0 ||
            (i < r - 2 && (k->dims[i] != q->dims[i] ||
                           v->dims[i] != q->dims[i])))
            return false;
    if (q->dims[r - 1] != k->dims[r - 2] || k->dims[r - 1] != v->dims[r - 2])
        return false;
    /* every removed node, mm2 last (the fused node takes its place) */
    if (qn != MP_NONE)
        push(c, g, qn);
    if (kn != MP_NONE)
        push(c, g, kn);
    push(c, g, mm1);
    for (uint32_t i = nb; i-- > 0;)
        push(c, g, back[i]);
    push(c, g, s);
    for (uint32_t i = 0; i < nf; i++)
        push(c, g, fwd[i]);
    push(c, g, mm2);
    return true;
}

/* ---- the rewrite ---------------------------------------------------------- */
/* A name for a node (node != 0) or tensor of ng that neither g nor ng
 * has: base, else base_1, base_2, ... */
static void fresh_name(const mp_graph *g, const mp_graph *ng, int node,
                       const char *base, char *buf, size_t size)
{
    snprintf(buf, size, "%s", base);
    for (unsigned k = 1; k < 1000; k++) {
        uint32_t id;
        bool taken = node ? mp_graph_find_node(g, buf, &id) == MP_OK ||
                                mp_graph_find_node(ng, buf, &id) == MP_OK
                          : mp_graph_find_tensor(g, buf, &id) == MP_OK ||
                                mp_graph_find_tensor(ng, buf, &id) == MP_OK;
        if (!taken)
            return;
        snprintf(buf, size, "%s_%u", base, k);
    }
}

/* The fused node's mask when the chain adds two (one over the scores, one
 * over their view): a tensor NAME/mask = Add(mask, view mask), in the
 * view's shape where the view mask broadcasts, written by a node
 * NAME/mask before the fused node; *out its id in ng. */
static mp_status add_mask_sum(mp_graph *ng, const mp_graph *g,
                              const attn_chain *c, const char *name,
                              const uint32_t *tmap, mp_phase phase,
                              uint32_t *out)
{
    char base[528], nm[560];
    snprintf(base, sizeof base, "%s/mask", name);
    fresh_name(g, ng, 0, base, nm, sizeof nm);
    mp_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.name = nm;
    td.dtype = (mp_dtype)g->tensors[c->mask].dtype;
    td.kind = MP_KIND_ACTIVATION;
    td.rank = -1; /* the Add's broadcast shape, at finalize */
    mp_status st = mp_graph_add_tensor(ng, &td, out);
    if (st)
        return st;
    fresh_name(g, ng, 1, base, nm, sizeof nm);
    uint32_t in[2] = {tmap[c->mask], tmap[c->vmask]}, id;
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = nm;
    d.op = "Add";
    d.inputs = in;
    d.n_inputs = 2;
    d.outputs = out;
    d.n_outputs = 1;
    d.phase = phase;
    return mp_graph_add_node(ng, &d, &id);
}

static mp_status add_fused_node(mp_graph *ng, const mp_graph *g,
                                const attn_chain *c, const uint32_t *tmap,
                                uint32_t *buf)
{
    const mp__node *m2 = &g->nodes[c->mm2];
    uint32_t in[8] = {c->q, c->kt, c->v, c->mask, c->qs, c->ks, c->ss,
                      c->fill};
    uint32_t nin = 8;
    while (nin > 3 && in[nin - 1] == MP_NONE)
        nin--;
    for (uint32_t i = 0; i < nin; i++)
        buf[i] = in[i] == MP_NONE ? MP_NONE : tmap[in[i]];
    uint32_t out = tmap[m2->outputs[0]], id;
    /* named after the Softmax it replaces (unique: the name is removed) */
    const mp__node *sm = NULL;
    for (uint32_t i = 0; i < c->n_nodes; i++)
        if (op_is(&g->nodes[c->nodes[i]], "Softmax"))
            sm = &g->nodes[c->nodes[i]];
    char name[512];
    snprintf(name, sizeof name, "%s", sm ? sm->name : m2->name);
    mp_status st = MP_OK;
    if (c->vmask != MP_NONE &&
        (st = add_mask_sum(ng, g, c, name, tmap, (mp_phase)m2->phase,
                           &buf[3])))
        return st;
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.op = "ScaledDotProductAttention";
    d.domain = "memplan";
    d.inputs = buf;
    d.n_inputs = nin;
    d.outputs = &out;
    d.n_outputs = 1;
    d.phase = (mp_phase)m2->phase;
    st = mp_graph_add_node(ng, &d, &id);
    if (!st && c->mask_kind)
        st = mp_graph_set_attr_int(ng, id, "mask_kind", c->mask_kind);
    if (!st && c->view_rank) {
        /* the scores' shape the mask is added at; the outermost dim
         * inferred (-1), so the attribute holds at any batch */
        int64_t v[MP_MAX_RANK];
        memcpy(v, c->view, (size_t)c->view_rank * sizeof *v);
        v[0] = -1;
        st = mp_graph_set_attr_ints(ng, id, "mask_dims", v,
                                    (uint32_t)c->view_rank);
    }
    if (!st && c->scale_div)
        st = mp_graph_set_attr_int(ng, id, "scale_div", 1);
    if (!st && c->mask_first)
        st = mp_graph_set_attr_int(ng, id, "mask_first", 1);
    if (!st && c->nan_to_zero)
        st = mp_graph_set_attr_int(ng, id, "nan_to_zero", 1);
    if (!st && c->dropout)
        st = mp_graph_set_attr_int(ng, id, "dropout", 1);
    return st;
}

/* Nodes that only computed what removed nodes read (the shape operands
 * of a chain's Reshapes): removed too (role 1), unless a fused node
 * reads (need[t]) or the graph outputs what they write. A node with
 * outputs no node read before stays (it was not the chain's). */
static void drop_feeders(const mp_graph *g, uint32_t *role,
                         const uint32_t *need)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t v = g->n_nodes; v-- > 0;) {
            const mp__node *n = &g->nodes[v];
            if (role[v])
                continue;
            bool fed = false, dead = true;
            for (uint32_t o = 0; o < n->n_out && dead; o++) {
                uint32_t t = n->outputs[o];
                if (t == MP_NONE)
                    continue;
                const mp__tensor *x = &g->tensors[t];
                if ((x->flags & MP__TF_OUTPUT) || need[t])
                    dead = false;
                for (uint32_t k = 0; k < x->n_cons && dead; k++) {
                    fed = true;
                    dead = role[g->cons[x->cons_begin + k]] == 1;
                }
                if (!x->n_cons)
                    dead = false;
            }
            if (dead && fed) {
                role[v] = 1;
                changed = true;
            }
        }
    }
}

/* The graph g with chains c[0..nc) fused, finalized, in *out. */
static mp_status fused_copy(const mp_graph *g, const attn_chain *c,
                            uint32_t nc, mp_graph **out)
{
    mp_ctx *ctx = g->ctx;
    size_t nn = g->n_nodes, nt = g->n_tensors;
    /* role: 0 kept, 1 removed, 2 + k the mm2 of chain k */
    uint32_t *role = mp__alloc(ctx, (nn + 2 * nt + 16) * sizeof *role);
    if (!role)
        return MP_ERR_NOMEM;
    uint32_t *tmap = role + nn, *used = tmap + nt, *buf = used + nt;
    memset(role, 0, nn * sizeof *role);
    for (uint32_t k = 0; k < nc; k++) {
        for (uint32_t i = 0; i + 1 < c[k].n_nodes; i++)
            role[c[k].nodes[i]] = 1;
        role[c[k].mm2] = 2 + k;
    }
    /* tensors the fused nodes read (kept whoever else read them) */
    memset(used, 0, nt * sizeof *used);
    for (uint32_t k = 0; k < nc; k++) {
        const attn_chain *ch = &c[k];
        uint32_t in[9] = {ch->q, ch->kt, ch->v, ch->mask, ch->qs, ch->ks,
                          ch->ss, ch->fill, ch->vmask};
        for (int i = 0; i < 9; i++)
            if (in[i] != MP_NONE)
                used[in[i]] = 1;
    }
    drop_feeders(g, role, used);
    /* tensors kept: those a kept node or a fused node reads or writes,
     * graph inputs and outputs, and those no node read before */
    memset(used, 0, nt * sizeof *used);
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *x = &g->tensors[t];
        if ((x->flags & MP__TF_OUTPUT) || x->declared_kind == MP_KIND_INPUT ||
            (x->n_cons == 0 && x->producer == MP_NONE))
            used[t] = 1;
    }
    for (uint32_t v = 0; v < nn; v++) {
        const mp__node *n = &g->nodes[v];
        if (role[v] == 1)
            continue;
        if (role[v] >= 2) {
            const attn_chain *ch = &c[role[v] - 2];
            uint32_t in[9] = {ch->q, ch->kt, ch->v, ch->mask, ch->qs, ch->ks,
                              ch->ss, ch->fill, ch->vmask};
            for (int i = 0; i < 9; i++)
                if (in[i] != MP_NONE)
                    used[in[i]] = 1;
            used[n->outputs[0]] = 1;
            continue;
        }
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE)
                used[n->inputs[i]] = 1;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE)
                used[n->outputs[o]] = 1;
    }
    mp_graph *ng = NULL;
    mp_status st = mp_graph_create(ctx, &ng);
    if (!st && g->name)
        st = mp_graph_set_name(ng, g->name);
    if (!st) {
        ng->onnx_opset = g->onnx_opset;
        ng->rebatch_from = g->rebatch_from;
        ng->rebatch_to = g->rebatch_to;
    }
    for (uint32_t t = 0; t < nt && !st; t++) {
        tmap[t] = MP_NONE;
        if (used[t])
            st = mp__graph_copy_tensor(ng, &g->tensors[t], NULL, &tmap[t]);
        if (!st && used[t] && (g->tensors[t].flags & MP__TF_OUTPUT))
            st = mp_graph_mark_output(ng, tmap[t]);
    }
    for (uint32_t v = 0; v < nn && !st; v++) {
        const mp__node *n = &g->nodes[v];
        if (role[v] == 1)
            continue;
        if (role[v] >= 2) {
            st = add_fused_node(ng, g, &c[role[v] - 2], tmap, buf);
            continue;
        }
        uint32_t nin = n->n_in, nout = n->n_out, id;
        uint32_t *ib = mp__alloc(ctx, (nin + nout + 1) * sizeof *ib);
        if (!ib) {
            st = MP_ERR_NOMEM;
            break;
        }
        for (uint32_t i = 0; i < nin; i++)
            ib[i] = n->inputs[i] == MP_NONE ? MP_NONE : tmap[n->inputs[i]];
        for (uint32_t o = 0; o < nout; o++)
            ib[nin + o] = n->outputs[o] == MP_NONE ? MP_NONE
                                                   : tmap[n->outputs[o]];
        mp_node_desc d;
        memset(&d, 0, sizeof d);
        d.name = n->name;
        d.op = n->op;
        d.domain = n->domain;
        d.inputs = ib;
        d.n_inputs = nin;
        d.outputs = ib + nin;
        d.n_outputs = nout;
        d.phase = (mp_phase)n->phase;
        st = mp_graph_add_node(ng, &d, &id);
        mp__dealloc(ctx, ib);
        if (!st)
            st = mp__node_copy_attrs(ng, n, id);
        if (!st && (n->flops >= 0 || n->bytes_moved >= 0 || n->seconds >= 0))
            st = mp_graph_set_node_cost(ng, id, n->flops, n->bytes_moved,
                                        n->seconds);
    }
    mp__dealloc(ctx, role);
    if (!st)
        st = mp_graph_finalize(ng);
    if (st) {
        mp_graph_destroy(ng);
        return st;
    }
    *out = ng;
    return MP_OK;
}

/* The chains of g (at most cap; *n found), each node in one chain. */
static mp_status find_chains(const mp_graph *g, attn_chain **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    uint32_t cnt = 0, cap = 0;
    attn_chain *c = NULL, one;
    uint8_t *taken = mp__calloc(g->ctx, g->n_nodes + 1, 1);
    if (!taken)
        return MP_ERR_NOMEM;
    for (uint32_t s = 0; s < g->n_nodes; s++) {
        if (!match(g, s, &one))
            continue;
        bool clash = false;
        for (uint32_t i = 0; i < one.n_nodes; i++)
            clash |= taken[one.nodes[i]] != 0;
        if (clash)
            continue;
        if (cnt == cap) {
            uint32_t nc2 = cap ? 2 * cap : 16;
            attn_chain *c2 = mp__realloc_array(g->ctx, c, nc2, sizeof *c2);
            if (!c2) {
                mp__dealloc(g->ctx, c);
                mp__dealloc(g->ctx, taken);
                return MP_ERR_NOMEM;
            }
            c = c2;
            cap = nc2;
        }
        for (uint32_t i = 0; i < one.n_nodes; i++)
            taken[one.nodes[i]] = 1;
        c[cnt++] = one;
    }
    mp__dealloc(g->ctx, taken);
    *out = c;
    *n = cnt;
    return MP_OK;
}

mp_status mp__attention_fused_copy(const mp_graph *g, mp_graph **out,
                                   uint32_t *n_fused, uint64_t *scores_bytes)
{
    *out = NULL;
    if (n_fused)
        *n_fused = 0;
    if (scores_bytes)
        *scores_bytes = 0;
    if (!g->finalized)
        return mp__err(g->ctx, MP_ERR_INVALID_ARG,
                       "fused attention: the graph is not finalized "
                       "(call mp_graph_finalize first)");
    if (g->n_subgraphs || g->strtab || g->str_root)
        return MP_OK;
    attn_chain *c = NULL;
    uint32_t nc = 0;
    mp_status st = find_chains(g, &c, &nc);
    if (st || !nc) {
        mp__dealloc(g->ctx, c);
        return st;
    }
    st = fused_copy(g, c, nc, out);
    uint64_t removed = 0;
    for (uint32_t k = 0; k < nc; k++)
        removed += c[k].removed_bytes;
    mp__dealloc(g->ctx, c);
    if (st)
        return st;
    if (n_fused)
        *n_fused = nc;
    if (scores_bytes)
        *scores_bytes = removed;
    return MP_OK;
}

mp_status mp_graph_fuse_attention(mp_graph *g, uint32_t *n_fused,
                                  uint64_t *scores_bytes)
{
    if (n_fused)
        *n_fused = 0;
    if (scores_bytes)
        *scores_bytes = 0;
    if (!g)
        return MP_ERR_INVALID_ARG;
    mp_graph *ng = NULL;
    mp_status st = mp__attention_fused_copy(g, &ng, n_fused, scores_bytes);
    if (st || !ng)
        return st;
    /* swap the contents: g becomes the fused graph, ng takes the old */
    struct mp_graph tmp = *g;
    *g = *ng;
    *ng = tmp;
    mp_graph_destroy(ng);
    return MP_OK;
}

const char *mp_attention_name(mp_attention_mode m)
{
    return m == MP_ATTENTION_NAIVE ? "naive" : "fused";
}

mp_status mp_attention_parse(const char *name, mp_attention_mode *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    if (strcmp(name, "fused") == 0)
        *out = MP_ATTENTION_FUSED;
    else if (strcmp(name, "naive") == 0)
        *out = MP_ATTENTION_NAIVE;
    else
        return MP_ERR_NOT_FOUND;
    return MP_OK;
}
