/* Re-batching of batch-carrying shape constants (core/ops/rebatch.h;
 * docs/onnx.md, "Re-batching"). */
#include "rebatch.h"

#include <stdio.h>
#include <string.h>

/* Element count of a Reshape target against the input's dims (0 copies
 * the input's dim unless allowzero); -1 when unknown, when the target has
 * a -1, or on overflow. */
static int64_t target_count(const int64_t *t, uint32_t c, const mp__shape *in,
                            bool allowzero)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < c; i++) {
        int64_t d = t[i];
        if (d == 0 && !allowzero)
            d = (int32_t)i < in->rank ? in->d[i] : -1;
        if (d < 0 || !mp__mul_u64(n, (uint64_t)d, &n) || n > INT64_MAX)
            return -1;
    }
    return (int64_t)n;
}

static void format_dims(char *s, size_t cap, const int64_t *v, uint32_t c)
{
    size_t w = 0;
    int k = snprintf(s, cap, "[");
    w = k > 0 ? (size_t)k : 0;
    for (uint32_t i = 0; i < c && w < cap; i++) {
        k = snprintf(s + w, cap - w, "%s%lld", i ? ", " : "", (long long)v[i]);
        if (k < 0)
            break;
        w += (size_t)k;
    }
    if (w < cap)
        snprintf(s + w, cap - w, "]");
}

/* ---- whether an Expand's output meets the batch -------------------------
 * At B0 = 1 an Expand of a 1 to a 1 under the leading element (a buffer
 * [1, T] expanded to [1, T]) is the batch only if the model used it so:
 * HF BERT expands its token_type_ids buffer twice, to position_ids'
 * leading dim (1 at any batch) and then to the batch. The output is taken
 * as batch-carrying when, through the ops that pass an operand's leading
 * axis to their output, it reaches an op that combines it with a tensor
 * computed from a graph input (an Add with the embeddings, a Concat with
 * the patch tokens). */

/* Does operand `pos` of node c pass its leading axis to c's outputs? Shape
 * operands (Reshape, Expand, Slice, Tile ...) do not; Gather's data does
 * not on axis 0, GatherElements' never (the indices' shape is the
 * output's); Shape, Size and ConstantOfShape make shapes, not data. */
static bool passes(const mp__node *c, uint32_t pos)
{
    static const char *const combine[] = {
        "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Where", "And", "Or",
        "Xor", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
        "Max", "Min", "Sum", "Mean", "Concat", "MatMul", "Gemm", "PRelu",
        "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    const char *op = c->op;
    if (c->domain && c->domain[0] && strcmp(c->domain, "ai.onnx") != 0)
        return pos == 0;
    if (!strcmp(op, "Shape") || !strcmp(op, "Size") ||
        !strcmp(op, "ConstantOfShape"))
        return false;
    if (!strcmp(op, "GatherElements") || !strcmp(op, "GatherND"))
        return pos == 1;
    if (!strcmp(op, "Gather"))
        return pos == 1 || (pos == 0 && mp__attr_int(c, "axis", 0) != 0);
    if (pos == 0)
        return true;
    for (size_t i = 0; i < sizeof combine / sizeof *combine; i++)
        if (!strcmp(op, combine[i]))
            return true;
    return false;
}

/* 1 when tensor t of g is computed from a graph input (not a weight or a
 * constant) through data operands; dep has g->n_tensors entries. */
static void input_dependence(const mp_graph *g, uint8_t *dep)
{
    for (size_t t = 0; t < g->n_tensors; t++)
        dep[t] = g->tensors[t].producer == MP_NONE &&
                 g->tensors[t].declared_kind == MP_KIND_INPUT;
    for (size_t k = 0; k < g->n_nodes; k++) {
        const mp__node *n = &g->nodes[g->topo[k]];
        bool d = false;
        for (uint32_t i = 0; i < n->n_in && !d; i++)
            d = n->inputs[i] != MP_NONE && dep[n->inputs[i]] &&
                passes(n, i);
        for (uint32_t o = 0; o < n->n_out; o++)
            if (n->outputs[o] != MP_NONE)
                dep[n->outputs[o]] = d;
    }
}

/* Does the output of node `node` meet a tensor computed from a graph
 * input (above)? -1 when out of memory. */
static int meets_batch(mp_graph *g, uint32_t node)
{
    size_t nt = g->n_tensors;
    uint8_t *dep = mp__calloc(g->ctx, nt ? 2 * nt : 1, 1);
    uint32_t *queue = mp__alloc(g->ctx, (nt ? nt : 1) * sizeof *queue);
    if (!dep || !queue) {
        mp__dealloc(g->ctx, dep);
        mp__dealloc(g->ctx, queue);
        return -1;
    }
    uint8_t *seen = dep + nt;
    input_dependence(g, dep);
    size_t head = 0, tail = 0;
    const mp__node *e = &g->nodes[node];
    for (uint32_t o = 0; o < e->n_out; o++)
        if (e->outputs[o] != MP_NONE && !seen[e->outputs[o]]) {
            seen[e->outputs[o]] = 1;
            queue[tail++] = e->outputs[o];
        }
    int met = 0;
    while (head < tail && !met) {
        const mp__tensor *x = &g->tensors[queue[head]];
        uint32_t xid = queue[head++];
        for (uint32_t k = 0; k < x->n_cons && !met; k++) {
            const mp__node *c = &g->nodes[g->cons[x->cons_begin + k]];
            bool through = false;
            for (uint32_t i = 0; i < c->n_in; i++)
                through |= c->inputs[i] == xid && passes(c, i);
            if (!through)
                continue;
            for (uint32_t i = 0; i < c->n_in && !met; i++)
                met = c->inputs[i] != MP_NONE && c->inputs[i] != xid &&
                      dep[c->inputs[i]] && passes(c, i);
            for (uint32_t o = 0; o < c->n_out && !met; o++)
                if (c->outputs[o] != MP_NONE && !seen[c->outputs[o]]) {
                    seen[c->outputs[o]] = 1;
                    queue[tail++] = c->outputs[o];
                }
        }
    }
    mp__dealloc(g->ctx, dep);
    mp__dealloc(g->ctx, queue);
    return met;
}

static mp_status rebatch(mp_graph *g, uint32_t node, uint32_t input,
                         mp__rebatch_kind kind, const mp__shape *data,
                         const int64_t **v, uint32_t c, int64_t *buf)
{
    int64_t from = g->rebatch_from, to = g->rebatch_to;
    if (from <= 0 || to <= 0 || from == to || !*v || c == 0 ||
        c > MP_MAX_RANK || data->rank < 0)
        return MP_OK;
    const mp__node *n = &g->nodes[node];
    const mp__tensor *x = mp__in(g, n, 0);
    const mp__tensor *op = input == MP_NONE ? NULL : mp__in(g, n, input);
    if (input != MP_NONE && (!op || !mp__kind_persistent(op->kind)))
        return MP_OK; /* computed from the graph (Shape ...): follows it */
    const int64_t *s = *v;
    memcpy(buf, s, c * sizeof *buf);
    if (kind == MP__REBATCH_EXPAND) {
        /* input 0's dim under element 0 (right-aligned), 1 when none */
        int32_t k = data->rank - (int32_t)c;
        int64_t d0 = k >= 0 ? data->d[k] : 1;
        if (s[0] == from && (d0 == 1 || d0 == to)) {
            /* at B0 = 1 a 1 to a 1 is the batch only if it meets it */
            int met = from == 1 && d0 == 1 ? meets_batch(g, node) : 1;
            if (met < 0)
                return MP_ERR_NOMEM;
            if (met) {
                buf[0] = to;
                *v = buf;
            }
        }
        return MP_OK;
    }
    if (!x || mp__kind_persistent(x->kind) || data->rank < 1)
        return MP_OK; /* a constant's leading dim is no batch */
    if (data->d[0] != to) {
        /* the batch folded with other axes into input 0's dim 0: only
         * what makes the target hold the input's elements */
        int64_t total = mp__shape_numel(data);
        bool az = mp__attr_int(n, "allowzero", 0) != 0, inf = false;
        for (uint32_t i = 0; i < c; i++)
            inf |= s[i] == -1;
        if (kind != MP__REBATCH_RESHAPE || total < 0 ||
            (!inf && target_count(s, c, data, az) == total))
            return MP_OK;
        if (s[0] == from) {
            buf[0] = to;
            if (inf || target_count(buf, c, data, az) == total)
                *v = buf;
            return MP_OK;
        }
        /* the batch folded into another axis with a constant factor
         * ([T, B0*H, D] for multi-head attention traced at B0): the
         * outermost k*B0 that, as k*N, makes the target hold the input */
        for (uint32_t i = 0; i < c && !inf; i++) {
            uint64_t kn;
            if (s[i] <= 0 || s[i] % from != 0 ||
                !mp__mul_u64((uint64_t)(s[i] / from), (uint64_t)to, &kn) ||
                kn > INT64_MAX)
                continue;
            buf[i] = (int64_t)kn;
            if (target_count(buf, c, data, az) == total) {
                *v = buf;
                return MP_OK;
            }
            buf[i] = s[i];
        }
        return MP_OK;
    }
    if (kind == MP__REBATCH_DIMS) {
        if (s[0] == from) {
            buf[0] = to;
            *v = buf;
        }
        return MP_OK;
    }
    bool allowzero = mp__attr_int(n, "allowzero", 0) != 0;
    bool infer = false;
    for (uint32_t i = 0; i < c; i++)
        if (s[i] == -1)
            infer = true;
    int64_t total = mp__shape_numel(data);
    if (!infer && total >= 0 && target_count(s, c, data, allowzero) == total)
        return MP_OK; /* holds as written: no batch in it */
    if (s[0] == from) {
        buf[0] = to;
    } else if (!infer && s[0] > 0 && s[0] % from == 0) {
        /* the batch folded into dim 0 ([24, 2, 1936] for [1, 48, 44, 44]) */
        uint64_t k;
        if (!mp__mul_u64((uint64_t)(s[0] / from), (uint64_t)to, &k) ||
            k > INT64_MAX)
            return mp__node_err(g, node, "re-batching the target shape: dim 0 "
                               "overflows");
        buf[0] = (int64_t)k;
    } else {
        return MP_OK; /* no batch to find in it: left as written */
    }
    if (infer || total < 0 || target_count(buf, c, data, allowzero) == total) {
        *v = buf;
        return MP_OK;
    }
    char a[160], b[160];
    format_dims(a, sizeof a, s, c);
    format_dims(b, sizeof b, buf, c);
    return mp__node_err(g, node, "cannot re-batch the target shape %s%s%s%s "
                       "from batch %lld to %lld: input '%s' has %lld "
                       "elements, and neither the target as written nor "
                       "%s holds them (give the target a leading 0 or -1, "
                       "as a dynamic-batch export writes it)",
                       op ? "'" : "", op ? op->name : "", op ? "' " : "", a,
                       (long long)from, (long long)to, x->name,
                       (long long)total, b);
}

mp_status mp__rebatch_operand(mp_graph *g, uint32_t node, uint32_t input,
                             mp__rebatch_kind kind, const mp__shape *data,
                             const int64_t **v, uint32_t c, int64_t *buf)
{
    const int64_t *s = *v;
    mp_status st = rebatch(g, node, input, kind, data, v, c, buf);
    if (st || *v == s)
        return st;
    /* reported (mp_graph_rebatch_info): what changed, and where */
    uint32_t a = 0;
    while (a + 1 < c && s[a] == buf[a])
        a++;
    int what = kind == MP__REBATCH_DIMS     ? MP_REBATCH_RESIZE
               : kind == MP__REBATCH_EXPAND ? MP_REBATCH_EXPAND
               : s[a] == g->rebatch_from    ? MP_REBATCH_RESHAPE
                                            : MP_REBATCH_FOLDED;
    const mp__node *n = &g->nodes[node];
    uint32_t t = input == MP_NONE || input >= n->n_in ? MP_NONE
                                                      : n->inputs[input];
    return mp__graph_note_rebatch(g, what, node, t, s, buf, (int)c);
}
