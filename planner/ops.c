/* The op registry: one entry per op type. Everything op-specific (shape
 * and size inference, memory behaviour; later cost, backward rule and
 * executor kernel) is found from the entry; nothing else switches on op
 * names. Unknown ops get the generic entry, which needs the outputs' sizes
 * declared. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static mp_status need_known_outputs(mp_graph *g, uint32_t node)
{
    const mp_node *n = &g->nodes[node];
    for (uint32_t o = 0; o < n->n_out; o++) {
        const mp_tensor *t = &g->tensors[n->outputs[o]];
        if (!(t->flags & MP_TF_SIZE_KNOWN))
            return mp_err(g->ctx, MP_ERR_SHAPE,
                          "node '%s' (op %s%s%s): size of output '%s' is "
                          "unknown: declare its dtype and shape, or bytes",
                          n->name, n->domain[0] ? n->domain : "",
                          n->domain[0] ? "." : "", n->op, t->name);
    }
    return MP_OK;
}

static mp_status copy_shape(mp_graph *g, mp_tensor *dst, const mp_tensor *src)
{
    if (dst->rank < 0 && src->rank >= 0) {
        if (src->rank > 0) {
            int64_t *d = mp_alloc(g->ctx, (size_t)src->rank * sizeof *d);
            if (!d)
                return MP_ERR_NOMEM;
            memcpy(d, src->dims, (size_t)src->rank * sizeof *d);
            dst->dims = d;
        }
        dst->rank = src->rank;
    }
    if (dst->dtype == MP_DTYPE_UNDEFINED)
        dst->dtype = src->dtype;
    return MP_OK;
}

/* Output 0 has input 0's size (views, unary pointwise ops). The shape is
 * copied too unless the op may change it (views other than Identity). */
static mp_status same_as_input(mp_graph *g, uint32_t node, bool with_shape)
{
    const mp_node *n = &g->nodes[node];
    if (n->n_out == 0 || n->n_in == 0 || n->inputs[0] == MP_NONE)
        return need_known_outputs(g, node);
    mp_tensor *out = &g->tensors[n->outputs[0]];
    const mp_tensor *in = &g->tensors[n->inputs[0]];
    if (!(out->flags & MP_TF_SIZE_KNOWN)) {
        if (with_shape) {
            mp_status st = copy_shape(g, out, in);
            if (st)
                return st;
        }
        out->bytes = in->bytes;
        out->flags |= MP_TF_SIZE_KNOWN;
    }
    return need_known_outputs(g, node);
}

static mp_status infer_view(mp_graph *g, uint32_t node)
{
    return same_as_input(g, node, false);
}

static mp_status infer_same(mp_graph *g, uint32_t node)
{
    return same_as_input(g, node, true);
}

#define VIEW MP_OPF_VIEW
#define EW (MP_OPF_ELEMENTWISE | MP_OPF_INPLACE)

/* Sorted by (domain, name) for bsearch; checked by a test. */
static const mp_op_def registry[] = {
    {"Abs", "", EW, infer_same},
    {"Add", "", MP_OPF_INPLACE, need_known_outputs},
    {"Ceil", "", EW, infer_same},
    {"Clip", "", EW, infer_same},
    {"Constant", "", MP_OPF_CONSTANT, need_known_outputs},
    {"Cos", "", EW, infer_same},
    {"Div", "", MP_OPF_INPLACE, need_known_outputs},
    {"Elu", "", EW, infer_same},
    {"Erf", "", EW, infer_same},
    {"Exp", "", EW, infer_same},
    {"Flatten", "", VIEW, infer_view},
    {"Floor", "", EW, infer_same},
    {"Gelu", "", EW, infer_same},
    {"HardSigmoid", "", EW, infer_same},
    {"HardSwish", "", EW, infer_same},
    {"Identity", "", VIEW, infer_same},
    {"LeakyRelu", "", EW, infer_same},
    {"Log", "", EW, infer_same},
    {"Mul", "", MP_OPF_INPLACE, need_known_outputs},
    {"Neg", "", EW, infer_same},
    {"Reciprocal", "", EW, infer_same},
    {"Relu", "", EW, infer_same},
    {"Reshape", "", VIEW, infer_view},
    {"Round", "", EW, infer_same},
    {"Selu", "", EW, infer_same},
    {"Sigmoid", "", EW, infer_same},
    {"Sign", "", EW, infer_same},
    {"Sin", "", EW, infer_same},
    {"Softplus", "", EW, infer_same},
    {"Softsign", "", EW, infer_same},
    {"Sqrt", "", EW, infer_same},
    {"Squeeze", "", VIEW, infer_view},
    {"Sub", "", MP_OPF_INPLACE, need_known_outputs},
    {"Tan", "", EW, infer_same},
    {"Tanh", "", EW, infer_same},
    {"Unsqueeze", "", VIEW, infer_view},
};
#define N_OPS (sizeof registry / sizeof registry[0])

static const mp_op_def generic = {"", "", 0, need_known_outputs};

const mp_op_def *mp_op_generic(void) { return &generic; }

static int cmp_def(const void *a, const void *b)
{
    const mp_op_def *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->name, y->name);
}

const mp_op_def *mp_op_lookup(const char *op, const char *domain)
{
    if (!op)
        return &generic;
    if (!domain || strcmp(domain, "ai.onnx") == 0)
        domain = "";
    mp_op_def key = {op, domain, 0, NULL};
    const mp_op_def *d = bsearch(&key, registry, N_OPS, sizeof registry[0],
                                 cmp_def);
    return d ? d : &generic;
}

/* For the registry's own test: 1 when the table is sorted and unique. */
int mp_op_registry_sorted(void);
int mp_op_registry_sorted(void)
{
    for (size_t i = 1; i < N_OPS; i++)
        if (cmp_def(&registry[i - 1], &registry[i]) >= 0)
            return 0;
    return 1;
}
