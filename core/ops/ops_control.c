/* Shape functions of the control-flow ops If, Loop and Scan.
 *
 * The ONNX frontend builds each body as a graph owned by the node's graph
 * (g->subgraphs, found by the int attribute "ATTR.graph"); the names a body
 * takes from enclosing scopes are extra inputs of the node (after the
 * "body.inputs" explicit ones), so they stay alive until the node runs; the
 * node's last output, NODE:body, stands for the memory its body needs.
 *
 * Inference gives each body's formal inputs and outer names the shapes (and
 * folded values) of what the node passes in, finalizes the body (its own
 * shape inference, nested to any depth since bodies of bodies are inferred
 * the same way), sizes it (its peak as its default plan lays it out,
 * core/sched), and sets:
 * - If: each output from the two branches (equal dims kept; a dim that
 *   differs is unknown and the size is the larger branch's); NODE:body is
 *   the larger of the two branches' own peaks;
 * - Loop: carried values from the body's outputs; scan outputs stacked
 *   along a new first axis of the trip count (M, when folded); NODE:body is
 *   the body's peak for one iteration (carried state counted there);
 * - Scan: state values from the body; scan outputs with the sequence length
 *   inserted at their axis; NODE:body the peak of one iteration.
 * Body memory excludes the body's inputs (they are the node's inputs). */
#include "sched.h"
#include "shape.h"

#include <stdio.h>
#include <string.h>

/* Loops with a folded trip count up to this many iterations are inferred
 * per iteration when their body's shapes change between iterations. */
#define LOOP_UNROLL_MAX 256

static mp_graph *body_of(mp_graph *g, const mp__node *n, const char *attr)
{
    char key[64];
    snprintf(key, sizeof key, "%s.graph", attr);
    int64_t i = mp__attr_int(n, key, -1);
    if (i < 0 || (size_t)i >= g->n_subgraphs)
        return NULL;
    return g->subgraphs[i];
}

static uint32_t explicit_inputs(const mp__node *n)
{
    int64_t k = mp__attr_int(n, "body.inputs", n->n_in);
    return k >= 0 && k <= (int64_t)n->n_in ? (uint32_t)k : n->n_in;
}

/* explicit outputs (the last one is NODE:body when bodies exist) */
static uint32_t explicit_outputs(const mp__node *n)
{
    return mp__node_attr(n, "body.inputs") && n->n_out ? n->n_out - 1
                                                       : n->n_out;
}

/* Gives body tensor t the dtype, shape and value of outer tensor src (or
 * of dtype/shape when src is NULL). */
static mp_status bind(mp_graph *b, uint32_t t, const mp__tensor *src, int dt,
                      const mp__shape *s)
{
    mp__tensor *bt = &b->tensors[t];
    if (src && src->seq) /* a sequence or optional */
        return mp__tensor_take_seq(b->ctx, bt, mp__seq_copy(b->ctx, src->seq));
    if (src) {
        if (bt->dtype == MP_DTYPE_UNDEFINED)
            bt->dtype = src->dtype;
        if (src->rank >= 0) {
            mp_status st = mp__tensor_set_shape(b->ctx, bt, src->rank,
                                               src->dims);
            if (!st && src->value && !bt->value)
                st = mp__tensor_set_value(b->ctx, bt, src->value,
                                         src->n_value);
            if (st)
                return st;
        }
        if ((src->flags & MP__TF_SIZE_KNOWN) && src->rank < 0) {
            bt->bytes = src->bytes;
            bt->flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
        }
        return MP_OK;
    }
    if (bt->dtype == MP_DTYPE_UNDEFINED)
        bt->dtype = (uint8_t)dt;
    if (s && s->rank >= 0 && bt->rank < 0)
        return mp__tensor_set_shape(b->ctx, bt, s->rank, s->d);
    return MP_OK;
}

/* Binds the body's outer names, finalizes and sizes it; *peak gets the
 * most memory the body's own tensors take at one step. */
static mp_status infer_body(mp_graph *g, uint32_t node, mp_graph *b,
                            const char *what, uint64_t *peak)
{
    const mp__node *n = &g->nodes[node];
    mp_status st = MP_OK;
    for (uint32_t i = explicit_inputs(n); i < n->n_in && !st; i++) {
        const mp__tensor *src = mp__in(g, n, i);
        uint32_t t;
        if (src && mp_graph_find_tensor(b, src->name, &t) == MP_OK &&
            b->tensors[t].producer == MP_NONE)
            st = bind(b, t, src, 0, NULL);
    }
    /* finalize, as handed down by the finalize of g */
    if (!st && !b->finalized)
        st = g->finalize_body ? g->finalize_body(b)
                              : mp__err(g->ctx, MP_ERR_INVALID_ARG,
                                        "node '%s': its %s is inferred "
                                        "outside mp_graph_finalize",
                                        n->name, what);
    /* the body's peak without its inputs (the node's inputs), as
     * mp_plan_create lays it out by default (core/sched) */
    uint64_t m = 0;
    if (!st)
        st = mp__schedule_body_peak(b, &m);
    if (st == MP_ERR_NOMEM) /* not a shape error: If and Loop retry those */
        return st;
    if (st) {
        char msg[MP__MSG_MAX];
        snprintf(msg, sizeof msg, "%s", mp_ctx_message(g->ctx));
        return mp__node_err(g, node, "in its %s: %s", what, msg);
    }
    *peak = m;
    return MP_OK;
}

static mp_status set_scratch(mp_graph *g, uint32_t node, uint64_t bytes)
{
    const mp__node *n = &g->nodes[node];
    if (!mp__node_attr(n, "body.inputs") || !n->n_out)
        return MP_OK;
    if (bytes > (uint64_t)INT64_MAX)
        return mp__node_err(g, node, "body memory overflows");
    mp__shape s = {.rank = 1, .d = {(int64_t)bytes}};
    return mp__out_set(g, node, n->n_out - 1, MP_DTYPE_UINT8, &s);
}

static void shape_of(const mp__tensor *t, mp__shape *s)
{
    s->rank = t->rank;
    for (int32_t i = 0; i < t->rank; i++)
        s->d[i] = t->dims[i];
}

/* Output o of the node takes body tensor t's dtype/shape/size. */
static mp_status out_from(mp_graph *g, uint32_t node, uint32_t o,
                          const mp__tensor *t)
{
    if (t->seq)
        return mp__out_seq(g, node, o, mp__seq_copy(g->ctx, t->seq));
    mp__shape s;
    shape_of(t, &s);
    mp_status st = mp__out_set(g, node, o, t->dtype, &s);
    mp__tensor *out = &g->tensors[g->nodes[node].outputs[o]];
    if (!st && !(out->flags & MP__TF_SIZE_KNOWN) &&
        (t->flags & MP__TF_SIZE_KNOWN)) {
        out->bytes = t->bytes;
        out->flags |= MP__TF_SIZE_KNOWN;
    }
    if (!st && t->value && !out->value)
        st = mp__tensor_set_value(g->ctx, out, t->value, t->n_value);
    return st;
}

/* If with an unknown condition, output o from branch outputs a and b, one
 * of them a sequence or optional: elements kept where both agree; the
 * bytes the larger branch's. */
static mp_status out_seq_either(mp_graph *g, uint32_t node, uint32_t o,
                                const mp__tensor *a, const mp__tensor *b)
{
    /* an empty Optional() whose type attribute is not read takes the
     * other branch's kind (optional tensor or optional sequence) */
    bool empty_a = a->seq && a->seq->present == 0 &&
                   a->seq->type != MP__SEQ_SEQUENCE;
    bool empty_b = b->seq && b->seq->present == 0 &&
                   b->seq->type != MP__SEQ_SEQUENCE;
    if (!a->seq || !b->seq ||
        (a->seq->type != b->seq->type &&
         !((empty_a || empty_b) && a->seq->type != MP__SEQ_SEQUENCE &&
           b->seq->type != MP__SEQ_SEQUENCE)))
        return mp__node_err(g, node, "output %u is a sequence or optional in "
                           "one branch only", (unsigned)o);
    const mp__seq *x = empty_a ? b->seq : a->seq, *y = empty_a ? a->seq
                                                              : b->seq;
    mp__seq *s = mp__seq_new(g->ctx, x->type, x->dtype ? x->dtype : y->dtype,
                           x->n == y->n ? x->n : -1);
    if (!s)
        return g->ctx->status ? g->ctx->status : MP_ERR_NOMEM;
    s->present = x->present == y->present ? x->present : -1;
    if (empty_a || empty_b) { /* the elements are the other branch's */
        mp__dealloc(g->ctx, s);
        s = mp__seq_copy(g->ctx, x);
        if (!s)
            return g->ctx->status ? g->ctx->status : MP_ERR_NOMEM;
        s->present = x->present == 0 ? 0 : -1;
    }
    for (uint32_t i = 0; i < s->n_elems && !empty_a && !empty_b; i++) {
        const mp__shape *p = &x->elems[i < x->n_elems ? i : 0];
        const mp__shape *q = &y->elems[i < y->n_elems ? i : 0];
        s->elems[i].rank = p->rank == q->rank ? p->rank : -1;
        for (int32_t k = 0; k < s->elems[i].rank; k++)
            s->elems[i].d[k] = p->d[k] == q->d[k] ? p->d[k] : -1;
    }
    mp__tensor *out = &g->tensors[g->nodes[node].outputs[o]];
    if ((a->flags & MP__TF_SIZE_KNOWN) && (b->flags & MP__TF_SIZE_KNOWN)) {
        out->bytes = a->bytes > b->bytes ? a->bytes : b->bytes;
        out->flags |= MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN;
    }
    return mp__tensor_take_seq(g->ctx, out, s);
}

MP__SHAPE_FN(mp__shape_if)
{
    const mp__node *n = &g->nodes[node];
    mp_graph *br[2] = {body_of(g, n, "then_branch"),
                       body_of(g, n, "else_branch")};
    if (!br[0] || !br[1])
        return mp__node_err(g, node, "a branch (then_branch, else_branch) is "
                           "missing");
    /* a constant condition picks its branch: only that one is inferred */
    const int64_t *cv;
    uint32_t cc;
    int pick = -1;
    if (mp__in_value(g, n, 0, &cv, &cc) && cc == 1)
        pick = cv[0] ? 0 : 1;
    uint64_t peak[2] = {0, 0};
    mp_status bst[2] = {MP_OK, MP_OK};
    char msg0[MP__MSG_MAX] = "";
    for (int k = 0; k < 2; k++) {
        if (pick >= 0 && pick != k)
            continue;
        bst[k] = infer_body(g, node, br[k], k ? "else_branch" : "then_branch",
                            &peak[k]);
        if (k == 0 && bst[0])
            snprintf(msg0, sizeof msg0, "%s", mp_ctx_message(g->ctx));
    }
    /* an unknown condition, one branch inconsistent at these shapes (a
     * shape error inside it, no op without a shape function): that branch
     * cannot run at them, the If takes the other one */
    for (int k = 0; k < 2 && pick < 0; k++) {
        if (bst[k] != MP_ERR_SHAPE || bst[1 - k] != MP_OK)
            continue;
        bool generic = false;
        for (size_t j = 0; j < br[k]->n_nodes && !generic; j++)
            generic = mp__op_is_generic(br[k]->nodes[j].def);
        if (!generic) {
            pick = 1 - k;
            bst[k] = MP_OK;
            mp_ctx_clear(g->ctx);
        }
    }
    if (bst[0])
        return mp__err(g->ctx, bst[0], "%s", msg0);
    if (bst[1])
        return bst[1];
    mp_status st = MP_OK;
    uint32_t no = explicit_outputs(n);
    for (int k = 0; k < 2; k++)
        if ((pick < 0 || pick == k) && br[k]->n_sub_outputs != no)
            return mp__node_err(g, node, "%s has %u outputs, the node %u",
                               k ? "else_branch" : "then_branch",
                               (unsigned)br[k]->n_sub_outputs, (unsigned)no);
    for (uint32_t o = 0; o < no && !st; o++) {
        const mp__tensor *a =
            pick == 1 ? NULL : &br[0]->tensors[br[0]->sub_outputs[o]];
        const mp__tensor *b =
            pick == 0 ? NULL : &br[1]->tensors[br[1]->sub_outputs[o]];
        if (pick >= 0) {
            st = out_from(g, node, o, pick ? b : a);
            continue;
        }
        if (a->seq || b->seq) {
            st = out_seq_either(g, node, o, a, b);
            continue;
        }
        mp__shape s = {.rank = -1};
        if (a->rank >= 0 && a->rank == b->rank) {
            s.rank = a->rank;
            for (int32_t i = 0; i < a->rank; i++)
                s.d[i] = a->dims[i] == b->dims[i] ? a->dims[i] : -1;
        }
        int dt = a->dtype ? a->dtype : b->dtype;
        st = mp__out_set(g, node, o, dt, &s);
        mp__tensor *out = &g->tensors[n->outputs[o]];
        if (!st && !(out->flags & MP__TF_SIZE_KNOWN) &&
            (a->flags & MP__TF_SIZE_KNOWN) && (b->flags & MP__TF_SIZE_KNOWN)) {
            out->bytes = a->bytes > b->bytes ? a->bytes : b->bytes;
            out->flags |= MP__TF_SIZE_KNOWN;
        }
    }
    if (!st)
        st = set_scratch(g, node, peak[0] > peak[1] ? peak[0] : peak[1]);
    return st ? st : mp__shape_done(g, node);
}

static void reset_body(mp_graph *b);

/* A body tensor's dtype, shape, value, sequence and size copied into a
 * tensor outside any graph (free with snap_free), so that the next
 * iteration can be bound from it after the body is reset. */
static mp_status snap(mp_ctx *ctx, const mp__tensor *t, mp__tensor *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->rank = -1;
    mp_status st = mp__tensor_set_shape(ctx, out, t->rank, t->dims);
    if (!st && t->value)
        st = mp__tensor_set_value(ctx, out, t->value, t->n_value);
    if (!st && t->seq) {
        out->seq = mp__seq_copy(ctx, t->seq);
        if (!out->seq)
            st = ctx->status ? ctx->status : MP_ERR_NOMEM;
    }
    out->bytes = t->bytes;
    out->flags = t->flags & MP__TF_SIZE_KNOWN;
    return st;
}

static void snap_free(mp_ctx *ctx, mp__tensor *t)
{
    mp__dealloc(ctx, t->dims);
    mp__dealloc(ctx, t->seq);
    t->dims = t->value = NULL;
    t->seq = NULL;
}

/* Loop unrolled for inference: the body inferred for iteration 0 ..
 * *trips - 1 with the iteration number folded and the carried values of
 * the previous iteration (a condition output folded to false ends it:
 * *trips is then the iterations run); *peak the largest body peak;
 * varied[k] when scan output k's shape differs between iterations. The
 * body is left as inferred for the last iteration. */
static mp_status unroll_loop(mp_graph *g, uint32_t node, mp_graph *b,
                             int64_t *trips, uint64_t *peak, bool *varied,
                             uint32_t nscan)
{
    const mp__node *n = &g->nodes[node];
    uint32_t ncarried = explicit_inputs(n) - 2;
    mp_ctx *ctx = g->ctx;
    mp__tensor *prev = mp__calloc(ctx, ncarried + nscan + 1, sizeof *prev);
    if (!prev)
        return MP_ERR_NOMEM;
    mp__tensor *scan0 = prev + ncarried;
    mp_status st = MP_OK;
    mp__shape scalar = {.rank = 0};
    int64_t it = 0;
    *peak = 0;
    for (; it < *trips && !st; it++) {
        reset_body(b);
        st = bind(b, b->sub_inputs[0], NULL, MP_DTYPE_INT64, &scalar);
        if (!st)
            st = mp__tensor_set_value(ctx, &b->tensors[b->sub_inputs[0]], &it,
                                     1);
        if (!st)
            st = bind(b, b->sub_inputs[1], NULL, MP_DTYPE_BOOL, &scalar);
        for (uint32_t i = 0; i < ncarried && !st; i++) {
            const mp__tensor *src = it ? &prev[i] : mp__in(g, n, 2 + i);
            if (src)
                st = bind(b, b->sub_inputs[2 + i], src, 0, NULL);
        }
        uint64_t pk = 0;
        if (!st)
            st = infer_body(g, node, b, "body", &pk);
        if (st)
            break;
        if (pk > *peak)
            *peak = pk;
        for (uint32_t i = 0; i < ncarried && !st; i++) {
            snap_free(ctx, &prev[i]);
            if (1 + i < b->n_sub_outputs)
                st = snap(ctx, &b->tensors[b->sub_outputs[1 + i]], &prev[i]);
        }
        for (uint32_t k = 0; k < nscan && !st; k++) {
            uint32_t bo = 1 + ncarried + k;
            if (bo >= b->n_sub_outputs)
                break;
            const mp__tensor *t = &b->tensors[b->sub_outputs[bo]];
            if (it == 0) {
                st = snap(ctx, t, &scan0[k]);
                continue;
            }
            bool same = t->rank == scan0[k].rank;
            for (int32_t d = 0; same && d < t->rank; d++)
                same = t->dims[d] == scan0[k].dims[d];
            if (!same)
                varied[k] = true;
        }
        const mp__tensor *cond = &b->tensors[b->sub_outputs[0]];
        if (cond->value && cond->n_value == 1 && cond->value[0] == 0) {
            it++;
            break;
        }
    }
    if (!st)
        *trips = it;
    for (uint32_t i = 0; i < ncarried + nscan; i++)
        snap_free(ctx, &prev[i]);
    mp__dealloc(ctx, prev);
    return st;
}

/* Loop (M, cond, v_initial...) body (iter_num, cond, v...) ->
 * (cond, v..., scan...) */
MP__SHAPE_FN(mp__shape_loop)
{
    const mp__node *n = &g->nodes[node];
    mp_graph *b = body_of(g, n, "body");
    if (!b)
        return mp__node_err(g, node, "attribute 'body' is missing");
    uint32_t nin = explicit_inputs(n), nout = explicit_outputs(n);
    if (nin < 2 || b->n_sub_inputs != nin || b->n_sub_outputs < nin - 1)
        return mp__node_err(g, node, "body has %u inputs and %u outputs for "
                           "%u node inputs", (unsigned)b->n_sub_inputs,
                           (unsigned)b->n_sub_outputs, (unsigned)nin);
    uint32_t ncarried = nin - 2;
    mp__shape scalar = {.rank = 0};
    mp_status st = bind(b, b->sub_inputs[0], NULL, MP_DTYPE_INT64, &scalar);
    if (!st)
        st = bind(b, b->sub_inputs[1], NULL, MP_DTYPE_BOOL, &scalar);
    for (uint32_t i = 0; i < ncarried && !st; i++) {
        const mp__tensor *src = mp__in(g, n, 2 + i);
        if (src)
            st = bind(b, b->sub_inputs[2 + i], src, 0, NULL);
    }
    uint64_t peak = 0;
    if (!st)
        st = infer_body(g, node, b, "body", &peak);
    int64_t trips = -1;
    const int64_t *mv;
    uint32_t mc;
    if (mp__in_value(g, n, 0, &mv, &mc) && mc == 1 && mv[0] >= 0)
        trips = mv[0];
    bool carries_seq = false;
    for (uint32_t i = 0; i < ncarried; i++)
        carries_seq = carries_seq || (mp__in(g, n, 2 + i) &&
                                      mp__in(g, n, 2 + i)->seq);
    /* a body whose shapes change per iteration (a sequence that grows,
     * slice bounds from the iteration number): inferred once per
     * iteration when the trip count is folded and small */
    uint32_t nscan = nout > ncarried ? nout - ncarried : 0;
    bool varied[MP_MAX_RANK * 4] = {false};
    if ((st || carries_seq) && st != MP_ERR_NOMEM && trips > 0 &&
        trips <= LOOP_UNROLL_MAX && nscan <= sizeof varied / sizeof varied[0]) {
        st = unroll_loop(g, node, b, &trips, &peak, varied, nscan);
    }
    if (st)
        return st;
    for (uint32_t o = 0; o < nout && !st; o++) {
        uint32_t bo = 1 + o;
        if (bo >= b->n_sub_outputs)
            break;
        const mp__tensor *t = &b->tensors[b->sub_outputs[bo]];
        if (o < ncarried) {
            st = out_from(g, node, o, t);
            continue;
        }
        mp__shape s = {.rank = -1};
        if (t->rank >= 0 && t->rank < MP_MAX_RANK && !varied[o - ncarried]) {
            s.rank = t->rank + 1;
            s.d[0] = trips;
            for (int32_t i = 0; i < t->rank; i++)
                s.d[i + 1] = t->dims[i];
        }
        st = mp__out_set(g, node, o, t->dtype, &s);
    }
    if (!st)
        st = set_scratch(g, node, peak);
    return st ? st : mp__shape_done(g, node);
}

/* Scan opset 8: (sequence_lens?, state..., scan_in...) with a batch axis
 * first and the sequence axis second; the body sees one batch entry and
 * one step: (state..., slice...) -> (state..., scan_out_slice...). Outputs
 * get [batch] + state and [batch, sequence] + slice. */
static mp_status scan8(mp_graph *g, uint32_t node, mp_graph *b)
{
    const mp__node *n = &g->nodes[node];
    uint32_t nin = explicit_inputs(n), nout = explicit_outputs(n);
    int64_t m = mp__attr_int(n, "num_scan_inputs", 0);
    if (nin < 1 || m <= 0 || (uint64_t)m > nin - 1 ||
        b->n_sub_inputs != nin - 1 || b->n_sub_outputs != nout)
        return mp__node_err(g, node, "num_scan_inputs %lld, %u inputs, %u "
                           "outputs, body %u/%u (opset 8)", (long long)m,
                           (unsigned)nin, (unsigned)nout,
                           (unsigned)b->n_sub_inputs,
                           (unsigned)b->n_sub_outputs);
    uint32_t nstate = nin - 1 - (uint32_t)m;
    int64_t batch = -1, seq = -1;
    mp_status st = MP_OK;
    for (uint32_t i = 1; i < nin && !st; i++) {
        const mp__tensor *src = mp__in(g, n, i);
        if (!src)
            continue;
        mp__shape s;
        shape_of(src, &s);
        int32_t drop = i - 1 < nstate ? 1 : 2; /* batch (and sequence) */
        if (s.rank < drop) {
            s.rank = -1;
        } else {
            if (batch < 0)
                batch = s.d[0];
            if (drop == 2 && seq < 0)
                seq = s.d[1];
            for (int32_t d = 0; d + drop < s.rank; d++)
                s.d[d] = s.d[d + drop];
            s.rank -= drop;
        }
        st = bind(b, b->sub_inputs[i - 1], NULL, src->dtype, &s);
    }
    uint64_t peak = 0;
    if (!st)
        st = infer_body(g, node, b, "body", &peak);
    for (uint32_t o = 0; o < nout && !st; o++) {
        const mp__tensor *t = &b->tensors[b->sub_outputs[o]];
        int32_t add = o < nstate ? 1 : 2;
        mp__shape s = {.rank = -1};
        if (t->rank >= 0 && t->rank + add <= MP_MAX_RANK) {
            s.rank = t->rank + add;
            s.d[0] = batch;
            s.d[1] = seq; /* overwritten for a state */
            for (int32_t i = 0; i < t->rank; i++)
                s.d[i + add] = t->dims[i];
        }
        st = mp__out_set(g, node, o, t->dtype, &s);
    }
    if (!st)
        st = set_scratch(g, node, peak);
    return st ? st : mp__shape_done(g, node);
}

/* Scan (opset >= 9): (state..., scan_in...) body (state..., slice...) ->
 * (state..., scan_out_slice...) */
MP__SHAPE_FN(mp__shape_scan)
{
    const mp__node *n = &g->nodes[node];
    if (g->onnx_opset > 0 && g->onnx_opset < 9 && body_of(g, n, "body"))
        return scan8(g, node, body_of(g, n, "body"));
    mp_graph *b = body_of(g, n, "body");
    if (!b)
        return mp__node_err(g, node, "attribute 'body' is missing");
    uint32_t nin = explicit_inputs(n), nout = explicit_outputs(n);
    int64_t m = mp__attr_int(n, "num_scan_inputs", 0);
    if (m <= 0 || (uint64_t)m > nin || b->n_sub_inputs != nin ||
        b->n_sub_outputs != nout)
        return mp__node_err(g, node, "num_scan_inputs %lld, %u inputs, %u "
                           "outputs, body %u/%u", (long long)m,
                           (unsigned)nin, (unsigned)nout,
                           (unsigned)b->n_sub_inputs,
                           (unsigned)b->n_sub_outputs);
    uint32_t nstate = nin - (uint32_t)m;
    uint32_t na, noa;
    const int64_t *axes = mp__attr_ints(n, "scan_input_axes", &na);
    const int64_t *oaxes = mp__attr_ints(n, "scan_output_axes", &noa);
    mp_status st = MP_OK;
    int64_t seq = -1;
    for (uint32_t i = 0; i < nin && !st; i++) {
        const mp__tensor *src = mp__in(g, n, i);
        if (!src)
            continue;
        if (i < nstate) {
            st = bind(b, b->sub_inputs[i], src, 0, NULL);
            continue;
        }
        mp__shape s;
        shape_of(src, &s);
        int32_t ax = 0;
        if (s.rank >= 1) {
            uint32_t k = i - nstate;
            char what[64];
            snprintf(what, sizeof what, "attribute 'scan_input_axes'[%u]",
                     (unsigned)k);
            mp_status cs = axes && k < na ? mp__check_axis(g, node, what,
                                                           axes[k], s.rank,
                                                           &ax)
                                          : MP_OK;
            if (cs)
                return cs;
            if (seq >= 0 && s.d[ax] >= 0 && s.d[ax] != seq)
                return mp__node_err(g, node, "scan input '%s' has %lld "
                                   "steps along axis %d, an earlier one "
                                   "%lld: they must be equal", src->name,
                                   (long long)s.d[ax], (int)ax,
                                   (long long)seq);
            if (seq < 0)
                seq = s.d[ax];
            for (int32_t d = ax; d + 1 < s.rank; d++)
                s.d[d] = s.d[d + 1];
            s.rank--;
        } else {
            s.rank = -1;
        }
        st = bind(b, b->sub_inputs[i], NULL, src->dtype, &s);
    }
    uint64_t peak = 0;
    if (!st)
        st = infer_body(g, node, b, "body", &peak);
    if (st)
        return st;
    for (uint32_t o = 0; o < nout && !st; o++) {
        const mp__tensor *t = &b->tensors[b->sub_outputs[o]];
        if (o < nstate) {
            st = out_from(g, node, o, t);
            continue;
        }
        mp__shape s = {.rank = -1};
        if (t->rank >= 0 && t->rank < MP_MAX_RANK) {
            int32_t ax = 0;
            uint32_t k = o - nstate;
            char what[64];
            snprintf(what, sizeof what, "attribute 'scan_output_axes'[%u]",
                     (unsigned)k);
            mp_status cs = oaxes && k < noa
                               ? mp__check_axis(g, node, what, oaxes[k],
                                               t->rank + 1, &ax)
                               : MP_OK;
            if (cs)
                return cs;
            s.rank = t->rank + 1;
            for (int32_t i = 0, j = 0; i < s.rank; i++)
                s.d[i] = i == ax ? seq : t->dims[j++];
        }
        st = mp__out_set(g, node, o, t->dtype, &s);
    }
    if (!st)
        st = set_scratch(g, node, peak);
    return st ? st : mp__shape_done(g, node);
}

/* Forgets what inference found in body b (and its bodies), so that it can
 * be inferred again with other input shapes: every tensor but weights,
 * initializers and Constant outputs loses its dtype, shape, value and
 * size. */
static void reset_body(mp_graph *b)
{
    mp_ctx *ctx = b->ctx;
    for (size_t i = 0; i < b->n_subgraphs; i++)
        reset_body(b->subgraphs[i]);
    for (uint32_t t = 0; t < b->n_tensors; t++) {
        mp__tensor *tt = &b->tensors[t];
        tt->kind = tt->declared_kind;
        tt->flags &= (uint8_t)~MP__TF_FOLDED;
        tt->alias_of = MP_NONE;
        tt->root = t;
        tt->view_off = 0;
        if (mp__kind_persistent(tt->declared_kind) ||
            (tt->producer != MP_NONE &&
             (b->nodes[tt->producer].def->flags & MP__OPF_CONSTANT)))
            continue;
        mp__dealloc(ctx, tt->dims);
        mp__dealloc(ctx, tt->seq);
        tt->dims = tt->value = NULL;
        tt->seq = NULL;
        tt->n_value = 0;
        tt->rank = -1;
        tt->dtype = MP_DTYPE_UNDEFINED;
        tt->bytes = 0;
        tt->flags &= (uint8_t)~(MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN);
    }
    for (uint32_t k = 0; k < b->n_nodes; k++)
        b->nodes[k].view = 0; /* decided again on the new shapes */
    mp__dealloc(ctx, b->cons);
    mp__dealloc(ctx, b->topo);
    b->cons = b->topo = NULL;
    b->finalized = false;
}

/* Body input t gets dtype dt and shape s (replacing a declared one). */
static mp_status bind_shape(mp_graph *b, uint32_t t, int dt, const mp__shape *s)
{
    mp__tensor *bt = &b->tensors[t];
    if (dt != MP_DTYPE_UNDEFINED)
        bt->dtype = (uint8_t)dt;
    bt->flags &= (uint8_t)~(MP__TF_SIZE_KNOWN | MP__TF_BYTES_GIVEN);
    return mp__tensor_set_shape(b->ctx, bt, s->rank, s->d);
}

static bool seq_uniform(const mp__seq *s)
{
    for (uint32_t i = 1; i < s->n_elems; i++) {
        if (s->elems[i].rank != s->elems[0].rank)
            return false;
        for (int32_t k = 0; k < s->elems[0].rank; k++)
            if (s->elems[i].d[k] != s->elems[0].d[k])
                return false;
    }
    return true;
}

/* SequenceMap(seq, more...) body(elem, more elems...) -> sequences: the
 * body runs once per element of the first sequence (the others give
 * their element i; tensors are passed whole). It is inferred once when
 * every sequence's elements share one shape, else once per element. */
MP__SHAPE_FN(mp__shape_seq_map)
{
    const mp__node *n = &g->nodes[node];
    mp_graph *b = body_of(g, n, "body");
    if (!b)
        return mp__node_err(g, node, "attribute 'body' is missing");
    uint32_t nin = explicit_inputs(n), nout = explicit_outputs(n);
    if (nin < 1 || b->n_sub_inputs != nin || b->n_sub_outputs != nout)
        return mp__node_err(g, node, "body has %u inputs and %u outputs for "
                           "%u inputs and %u outputs",
                           (unsigned)b->n_sub_inputs,
                           (unsigned)b->n_sub_outputs, (unsigned)nin,
                           (unsigned)nout);
    const mp__tensor *first = mp__in(g, n, 0);
    if (!first || !first->seq || first->seq->type != MP__SEQ_SEQUENCE)
        return mp__node_err(g, node, "input 0 is not a sequence");
    int32_t cnt = first->seq->n;
    bool uniform = true;
    for (uint32_t k = 0; k < nin; k++) {
        const mp__tensor *src = mp__in(g, n, k);
        if (src && src->seq) {
            if (src->seq->n != cnt)
                return mp__node_err(g, node, "input %u has %d elements, "
                                   "input 0 %d", (unsigned)k,
                                   (int)src->seq->n, (int)cnt);
            uniform = uniform && seq_uniform(src->seq);
        }
    }
    mp__seq **outs = mp__calloc(g->ctx, nout ? nout : 1, sizeof *outs);
    if (!outs)
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    for (uint32_t o = 0; o < nout && !st; o++)
        if (!(outs[o] = mp__seq_new(g->ctx, MP__SEQ_SEQUENCE,
                                   MP_DTYPE_UNDEFINED, cnt)))
            st = g->ctx->status ? g->ctx->status : MP_ERR_NOMEM;
    uint64_t peak = 0;
    int32_t runs = cnt < 0 || uniform ? (cnt == 0 ? 0 : 1) : cnt;
    for (int32_t i = 0; i < runs && !st; i++) {
        if (b->finalized)
            reset_body(b);
        for (uint32_t k = 0; k < nin && !st; k++) {
            const mp__tensor *src = mp__in(g, n, k);
            if (!src)
                continue;
            if (src->seq)
                st = bind_shape(b, b->sub_inputs[k], src->seq->dtype,
                                &src->seq->elems[src->seq->n < 0 ? 0 : i]);
            else
                st = bind(b, b->sub_inputs[k], src, 0, NULL);
        }
        uint64_t pk = 0;
        if (!st)
            st = infer_body(g, node, b, "body", &pk);
        if (pk > peak)
            peak = pk;
        for (uint32_t o = 0; o < nout && !st; o++) {
            const mp__tensor *t = &b->tensors[b->sub_outputs[o]];
            mp__shape s;
            shape_of(t, &s);
            outs[o]->dtype = t->dtype;
            for (uint32_t e = 0; e < outs[o]->n_elems; e++)
                if (runs == 1 || e == (uint32_t)i)
                    outs[o]->elems[e] = s;
        }
    }
    for (uint32_t o = 0; o < nout; o++) {
        if (!st)
            st = mp__out_seq(g, node, o, outs[o]);
        else
            mp__dealloc(g->ctx, outs[o]);
    }
    mp__dealloc(g->ctx, outs);
    if (!st)
        st = set_scratch(g, node, peak);
    return st ? st : mp__shape_done(g, node);
}
