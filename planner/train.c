/* Training-graph synthesis: forward + loss + backward + optimizer
 * step from a forward graph, through the op registry's backward rules
 * (MP__OP_BWD). docs/training.md describes what is built and counted. */
#include "sched.h"
#include "ops.h"
#include "planner.h"
#include "cost.h"

#include <stdio.h>
#include <string.h>

static const char *const optim_names[] = {"sgd", "momentum", "adam", "adamw",
                                          "adam8bit"};
static const char *const optim_ops[] = {"SGD", "Momentum", "Adam", "AdamW",
                                        "Adam8bit"};
/* PyTorch Lightning's names; "fp32" and "fp16-mixed" (the names of
 * earlier versions) are read as "32-true" and "16-mixed" */
static const char *const prec_names[] = {"32-true", "bf16-mixed", "16-mixed",
                                         "bf16-true"};
static const char *const impl_names[] = {"foreach", "fused", "for-loop"};
/* the op of the node that holds a FOREACH group's temporary */
#define FOREACH_OP "ForeachTemp"

/* Index of name in names[0..n), through *out; the parsers below. */
static mp_status parse_name(const char *const *names, unsigned n,
                            const char *name, unsigned *out)
{
    if (!name)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}
#define N_OF(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

const char *mp_optimizer_name(mp_optimizer o)
{
    return (unsigned)o < N_OF(optim_names) ? optim_names[o] : "unknown";
}
mp_status mp_optimizer_parse(const char *name, mp_optimizer *out)
{
    unsigned i = 0;
    mp_status st = out ? parse_name(optim_names, N_OF(optim_names), name, &i)
                       : MP_ERR_INVALID_ARG;
    if (!st)
        *out = (mp_optimizer)i;
    return st;
}
const char *mp_optimizer_impl_name(mp_optimizer_impl i)
{
    return (unsigned)i < N_OF(impl_names) ? impl_names[i] : "unknown";
}
mp_status mp_optimizer_impl_parse(const char *name, mp_optimizer_impl *out)
{
    unsigned i = 0;
    mp_status st = out ? parse_name(impl_names, N_OF(impl_names), name, &i)
                       : MP_ERR_INVALID_ARG;
    if (!st)
        *out = (mp_optimizer_impl)i;
    return st;
}
const char *mp_precision_name(mp_precision p)
{
    return (unsigned)p < N_OF(prec_names) ? prec_names[p] : "unknown";
}
mp_status mp_precision_parse(const char *name, mp_precision *out)
{
    unsigned i = 0;
    if (name && strcmp(name, "fp32") == 0)
        name = "32-true";
    else if (name && strcmp(name, "fp16-mixed") == 0)
        name = "16-mixed";
    mp_status st = out ? parse_name(prec_names, N_OF(prec_names), name, &i)
                       : MP_ERR_INVALID_ARG;
    if (!st)
        *out = (mp_precision)i;
    return st;
}
void mp_train_options_init(mp_train_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->optimizer = MP_OPTIM_ADAM;
    o->precision = MP_PRECISION_FP32;
    o->attention = MP_ATTENTION_NAIVE; /* as mp_plan_options_init */
}

static bool is_float(uint8_t dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT16 ||
           dt == MP_DTYPE_BFLOAT16 || dt == MP_DTYPE_FLOAT64 ||
           dt == MP_DTYPE_UNDEFINED;
}

typedef struct syn {
    const mp_graph *f;
    mp_graph *g;
    mp_ctx *ctx;
    const mp_train_options *opt;
    mp_precision prec;
    mp_train_breakdown B;
    uint32_t *map;      /* forward tensor -> training tensor */
    uint32_t *grad;     /* forward tensor -> current gradient (training id) */
    uint32_t *n_part;   /* contributions so far */
    uint8_t *rg;        /* requires grad */
    uint8_t *trainable; /* forward tensor -> the optimizer updates it */
    uint32_t *buf_in, *buf_out; /* operands of the node being added */
    uint32_t *extra;    /* forward node -> extra saved output, or MP_NONE */
    uint32_t *nmap;     /* forward node -> its copy (inside extra's block) */
    /* step_in_backward: tensors by topological position of their first
     * forward reader (opt_head), linked through opt_next */
    uint32_t *opt_head, *opt_next;
    /* FOREACH: the group temporary every Adam step reads, or MP_NONE */
    uint32_t foreach_tmp;
    /* autocast (bf16-mixed, 16-mixed): the dtype of each forward tensor
     * (amp_dtypes); per forward node, from cin_off[v], the cast copy each
     * input is read through (MP_NONE: the tensor itself); per forward
     * tensor, the cached low-precision copy of a weight (wcast) */
    uint8_t *dt;
    uint32_t *cin, *cin_off, *wcast;
    int have_dev;
    mp_device dev;
    /* the nodes set_cost gave FLOPs, timed once the graph is finalized */
    uint32_t *costed;
    size_t n_costed, cap_costed;
    char name[512];
} syn;

/* autocast's precisions: fp32 weights, the ops of its lists in bf16 or
 * fp16 (bf16-mixed, 16-mixed) */
static bool amp(const syn *S)
{
    return S->prec == MP_PRECISION_BF16_MIXED ||
           S->prec == MP_PRECISION_FP16_MIXED;
}
static uint8_t amp_low(const syn *S)
{
    return S->prec == MP_PRECISION_FP16_MIXED ? MP_DTYPE_FLOAT16
                                              : MP_DTYPE_BFLOAT16;
}

/* dtype of a forward tensor in the training graph */
static uint8_t train_dtype(const syn *S, const mp__tensor *t)
{
    /* a view has the dtype of the storage it views (an Identity over a
     * weight, as torchvision exports write shared weights) */
    if (t->alias_of != MP_NONE && t->root != MP_NONE &&
        &S->f->tensors[t->root] != t)
        t = &S->f->tensors[t->root];
    if (S->dt)
        return S->dt[t - S->f->tensors];
    /* bf16-true: every float32 tensor but the constants in bf16 */
    if (S->prec == MP_PRECISION_BF16_TRUE && t->dtype == MP_DTYPE_FLOAT32 &&
        t->kind != MP_KIND_CONSTANT)
        return MP_DTYPE_BFLOAT16;
    return t->dtype;
}

static bool dims_known(const mp__tensor *t)
{
    if (t->rank < 0)
        return false;
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0)
            return false;
    return true;
}

/* Adds a tensor shaped like forward tensor `like` (dtype dt). */
static mp_status add_like(syn *S, const char *name, const mp__tensor *like,
                          uint8_t dt, mp_tensor_kind kind, uint32_t *id)
{
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    if (dims_known(like) && dt != MP_DTYPE_UNDEFINED) {
        d.dtype = (mp_dtype)dt;
        d.rank = like->rank;
        d.dims = like->dims;
    } else {
        d.rank = -1;
        d.dtype = (mp_dtype)dt;
        uint64_t b = like->bytes;
        if (dt != like->dtype && mp_dtype_bits((mp_dtype)like->dtype) &&
            mp_dtype_bits((mp_dtype)dt))
            b = b / mp_dtype_bits((mp_dtype)like->dtype) *
                mp_dtype_bits((mp_dtype)dt);
        d.bytes = b ? b : 1;
        if (like->rank < 0 || !mp_dtype_bits((mp_dtype)dt))
            d.dtype = MP_DTYPE_UNDEFINED;
    }
    return mp_graph_add_tensor(S->g, &d, id);
}

static mp_status add_shaped(syn *S, const char *name, mp_dtype dt, int rank,
                            const int64_t *dims, mp_tensor_kind kind,
                            uint32_t *id)
{
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    d.dtype = dt;
    d.rank = rank;
    d.dims = dims;
    return mp_graph_add_tensor(S->g, &d, id);
}

static uint64_t tbytes(const mp_graph *g, uint32_t t)
{
    return t == MP_NONE ? 0 : g->tensors[t].bytes;
}

/* The FLOPs of a node of the training graph; its bytes and time come
 * once the graph is finalized and its tensors are sized (time_costed). */
static mp_status set_cost(syn *S, uint32_t node, double flops)
{
    mp_status st = mp__grow(S->ctx, (void **)&S->costed, sizeof *S->costed,
                            S->n_costed + 1, &S->cap_costed);
    if (st)
        return st;
    S->costed[S->n_costed++] = node;
    return mp_graph_set_node_cost(S->g, node, flops, -1, -1);
}

/* The bytes each node of set_cost reads and writes, and its time on the
 * device by the one cost function (mp__node_estimate_ex, as every forward
 * node's): roofline of those FLOPs and bytes, views free. */
static mp_status time_costed(syn *S)
{
    for (size_t k = 0; k < S->n_costed; k++) {
        uint32_t node = S->costed[k];
        const mp__node *n = &S->g->nodes[node];
        double bytes = 0;
        /* the FOREACH group temporary is read only to keep it alive: a
         * step touches its own parameter's part, which its own
         * temporary (an output) stands for */
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != S->foreach_tmp ||
                n->phase != MP_PHASE_OPTIMIZER)
                bytes += (double)tbytes(S->g, n->inputs[i]);
        for (uint32_t o = 0; o < n->n_out; o++)
            bytes += (double)tbytes(S->g, n->outputs[o]);
        mp_status st = mp_graph_set_node_cost(S->g, node, n->flops, bytes,
                                              -1);
        if (st || !S->have_dev)
            return st;
        mp_op_cost c;
        if ((st = mp__node_estimate_ex(S->g, node, &S->dev, 1, &c)) ||
            (st = mp_graph_set_node_cost(S->g, node, n->flops, bytes,
                                         c.seconds)))
            return st;
    }
    return MP_OK;
}

static mp_status add_node(syn *S, const char *name, const char *op,
                          const char *domain, const uint32_t *in, uint32_t nin,
                          const uint32_t *out, uint32_t nout, mp_phase ph,
                          uint32_t *id)
{
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.op = op;
    d.domain = domain;
    d.inputs = in;
    d.n_inputs = nin;
    d.outputs = out;
    d.n_outputs = nout;
    d.phase = ph;
    return mp_graph_add_node(S->g, &d, id);
}

/* Adds contribution `part` (training id) to the gradient of forward x. */
static mp_status accumulate(syn *S, uint32_t x, uint32_t part)
{
    if (S->grad[x] == MP_NONE) {
        S->grad[x] = part;
        S->n_part[x] = 1;
        return MP_OK;
    }
    const mp__tensor *fx = &S->f->tensors[x];
    uint32_t k = ++S->n_part[x], acc, id;
    snprintf(S->name, sizeof S->name, "d/%s#sum%u", fx->name, (unsigned)k);
    mp_status st = add_like(S, S->name, fx, train_dtype(S, fx),
                            MP_KIND_GRADIENT, &acc);
    if (st)
        return st;
    uint32_t in[2] = {S->grad[x], part};
    if ((st = add_node(S, S->name, "Sum", "", in, 2, &acc, 1,
                       MP_PHASE_BACKWARD, &id)) ||
        (st = set_cost(S, id, (double)(fx->bytes / 4 + 1))))
        return st;
    S->grad[x] = acc;
    return MP_OK;
}

/* The gradient tensor for input x of a backward node (a fresh partial). */
static mp_status new_partial(syn *S, uint32_t x, uint32_t *id)
{
    const mp__tensor *fx = &S->f->tensors[x];
    snprintf(S->name, sizeof S->name, "d/%s#%u", fx->name,
             (unsigned)(S->n_part[x] + 1));
    return add_like(S, S->name, fx, train_dtype(S, fx), MP_KIND_GRADIENT, id);
}

/* The input position whose gradient is node n's output gradient
 * unchanged (its registry entry passes the gradient through, and forward
 * tensor x is read once, with output 0's shape and training dtype: not
 * broadcast, not summed twice), or MP_NONE. */
static uint32_t grad_pass_pos(const syn *S, const mp__node *n, uint32_t x)
{
    uint64_t fl = n->def->flags;
    if (!(fl & (MP__OPF_GRAD_PASS0 | MP__OPF_GRAD_PASS_ALL)) || n->n_out != 1 ||
        mp__node_view(n))
        return MP_NONE;
    uint32_t pos = MP_NONE, seen = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->inputs[i] == x) {
            pos = i;
            seen++;
        }
    if (seen != 1 || (pos != 0 && !(fl & MP__OPF_GRAD_PASS_ALL)))
        return MP_NONE;
    const mp__tensor *tx = &S->f->tensors[x];
    const mp__tensor *ty = &S->f->tensors[n->outputs[0]];
    if (!dims_known(tx) || !dims_known(ty) || tx->rank != ty->rank ||
        tx->dtype != ty->dtype || tx->bytes != ty->bytes ||
        train_dtype(S, tx) != train_dtype(S, ty))
        return MP_NONE;
    for (int32_t d = 0; d < tx->rank; d++)
        if (tx->dims[d] != ty->dims[d])
            return MP_NONE;
    return pos;
}

/* The gradient of forward x, input pos of node n, as a view of n's output
 * gradient gy: an Identity node NAME/grad_passPOS (no memory, no cost). */
static mp_status add_grad_view(syn *S, const mp__node *n, uint32_t x,
                               uint32_t pos, uint32_t gy)
{
    uint32_t part, id;
    mp_status st = new_partial(S, x, &part);
    if (st)
        return st;
    snprintf(S->name, sizeof S->name, "%s/grad_pass%u", n->name,
             (unsigned)pos);
    if ((st = add_node(S, S->name, "Identity", "", &gy, 1, &part, 1,
                       MP_PHASE_BACKWARD, &id)) ||
        (st = mp_graph_set_node_cost(S->g, id, 0, 0, 0)))
        return st;
    return accumulate(S, x, part);
}

/* One optimizer state of a parameter: its name, dtype and element count */
typedef struct {
    const char *name;
    mp_dtype dtype;
    int64_t n;
} opt_state;

static void push_state(opt_state *sv, uint32_t *ns, const char *name,
                       mp_dtype dtype, int64_t n)
{
    sv[(*ns)++] = (opt_state){name, dtype, n};
}

/* The optimizer step of trainable forward tensor t (its gradient is
 * final): reads the weight, its gradient and its states (persistent,
 * created here) and writes the update's temporary. buf_in has room for
 * 6 ids. */
static mp_status add_opt_step(syn *S, const mp_train_options *opt, uint32_t t,
                              uint32_t *buf_in, mp_train_breakdown *B)
{
    const mp__tensor *w = &S->f->tensors[t];
    mp_status st;
    uint64_t bits = mp_dtype_bits((mp_dtype)w->dtype);
    uint64_t elems = bits ? w->bytes * 8 / bits : w->bytes / 4;
    int64_t ne = (int64_t)elems;
    B->n_params += elems;
    uint32_t nin = 0;
    buf_in[nin++] = S->map[t];
    buf_in[nin++] = S->grad[t];
    opt_state sv[4];
    uint32_t ns = 0;
    /* states in the parameter's dtype, as torch.optim makes them
     * (zeros_like): fp32 but with bf16-true (no precision here keeps a
     * master copy) */
    mp_dtype sdt = (mp_dtype)train_dtype(S, w);
    switch (opt->optimizer) {
    case MP_OPTIM_SGD:
        break;
    case MP_OPTIM_MOMENTUM:
        push_state(sv, &ns, "momentum", sdt, ne);
        break;
    case MP_OPTIM_ADAM:
    case MP_OPTIM_ADAMW:
        push_state(sv, &ns, "m", sdt, ne);
        push_state(sv, &ns, "v", sdt, ne);
        break;
    case MP_OPTIM_ADAM8BIT:
        push_state(sv, &ns, "m8", MP_DTYPE_UINT8, ne);
        push_state(sv, &ns, "v8", MP_DTYPE_UINT8, ne);
        /* one fp32 per 2048-block per state */
        push_state(sv, &ns, "absmax", MP_DTYPE_FLOAT32,
                   2 * ((ne + 2047) / 2048));
        break;
    }
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t id;
        snprintf(S->name, sizeof S->name, "opt/%s/%s", w->name, sv[s].name);
        if ((st = add_shaped(S, S->name, sv[s].dtype, 1, &sv[s].n,
                             MP_KIND_OPTIMIZER_STATE, &id)))
            return st;
        buf_in[nin++] = id;
    }
    /* temporaries of the update: SGD and momentum update in place; Adam
     * variants compute sqrt(v) in a parameter-sized fp32 buffer, one
     * parameter at a time (for-loop, or each step on its own in
     * backward), in the group's buffer (foreach: read here) or in
     * registers (fused) */
    int64_t tn = opt->optimizer >= MP_OPTIM_ADAM ? ne : 0;
    if (opt->optimizer_impl == MP_OPTIM_IMPL_FUSED ||
        S->foreach_tmp != MP_NONE)
        tn = 0;
    if (S->foreach_tmp != MP_NONE)
        buf_in[nin++] = S->foreach_tmp;
    uint32_t tmp, id;
    snprintf(S->name, sizeof S->name, "opt/%s/tmp", w->name);
    if ((st = add_shaped(S, S->name, sdt, 1, &tn,
                         MP_KIND_ACTIVATION, &tmp)))
        return st;
    snprintf(S->name, sizeof S->name, "opt/%s", w->name);
    if ((st = add_node(S, S->name, optim_ops[opt->optimizer], "memplan",
                       buf_in, nin, &tmp, 1, MP_PHASE_OPTIMIZER, &id)) ||
        (st = set_cost(S, id, 10.0 * (double)elems)))
        return st;
    B->n_optimizer++;
    return MP_OK;
}

/* The per-tensor arrays, the training graph (named after the forward
 * graph). */
static mp_status syn_begin(syn *S)
{
    mp_ctx *ctx = S->ctx;
    size_t nt1 = (size_t)S->f->n_tensors + 1;
    S->map = mp__alloc(ctx, nt1 * sizeof *S->map);
    S->grad = mp__alloc(ctx, nt1 * sizeof *S->grad);
    S->n_part = mp__calloc(ctx, nt1, sizeof *S->n_part);
    S->rg = mp__calloc(ctx, nt1, 1);
    if (!S->map || !S->grad || !S->n_part || !S->rg)
        return MP_ERR_NOMEM;
    mp_status st = mp_graph_create(ctx, &S->g);
    if (st)
        return st;
    if (S->f->name) {
        snprintf(S->name, sizeof S->name, "%s (training)", S->f->name);
        if ((st = mp_graph_set_name(S->g, S->name)))
            return st;
    }
    return MP_OK;
}

static void syn_free(syn *S)
{
    mp_ctx *ctx = S->ctx;
    mp__dealloc(ctx, S->trainable);
    mp__dealloc(ctx, S->opt_head);
    mp__dealloc(ctx, S->opt_next);
    mp__dealloc(ctx, S->map);
    mp__dealloc(ctx, S->grad);
    mp__dealloc(ctx, S->n_part);
    mp__dealloc(ctx, S->rg);
    mp__dealloc(ctx, S->buf_in);
    mp__dealloc(ctx, S->buf_out);
    mp__dealloc(ctx, S->extra);
    mp__dealloc(ctx, S->dt);
    mp__dealloc(ctx, S->cin);
    mp__dealloc(ctx, S->cin_off);
    mp__dealloc(ctx, S->wcast);
    mp__dealloc(ctx, S->costed);
}

/* A weight that no framework trains (train_all_weights off): one of a
 * single element (the constants exporters write as initializers: GELU's
 * 0.5 and 0.044715, Pow's exponent, an attention scale; trained, Pow's
 * exponent's gradient is NaN on negative bases), or one that only
 * BatchNormalization reads as its running mean or variance (a buffer:
 * the training form updates it, not the optimizer). */
static bool not_a_parameter(const mp_graph *f, const mp__tensor *tt,
                            uint32_t t)
{
    if (tt->rank >= 0) {
        int64_t ne = 1;
        for (int32_t d = 0; d < tt->rank; d++)
            ne *= tt->dims[d];
        if (ne == 1)
            return true;
    }
    if (!tt->n_cons)
        return false;
    for (uint32_t c = 0; c < tt->n_cons; c++) {
        const mp__node *cn = &f->nodes[f->cons[tt->cons_begin + c]];
        if (MP__OP_KERNEL(cn->def) != MP__KERNEL_BATCHNORM)
            return false;
        for (uint32_t i = 0; i < cn->n_in && i < 3; i++)
            if (cn->inputs[i] == t)
                return false;
    }
    return true;
}

/* trainable: float weights (but those not_a_parameter names, unless
 * train_all_weights), and the float folded constants of rank >= 1 that a
 * computed node reads (a weight transposed or cast at load, or generated
 * by nodes as in the corpus's light models: the folded tensor is what
 * the computation reads, and it has the weight's size) */
static mp_status mark_trainable(syn *S)
{
    const mp_graph *f = S->f;
    uint32_t nt = (uint32_t)f->n_tensors;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &f->tensors[t];
        S->map[t] = S->grad[t] = MP_NONE;
        S->rg[t] = tt->kind == MP_KIND_WEIGHT && tt->producer == MP_NONE &&
                   is_float(tt->dtype) &&
                   (S->opt->train_all_weights || !not_a_parameter(f, tt, t));
    }
    /* folded tensors computed at load from a trainable weight through
     * differentiable ops (a weight transposed, cast or viewed, as
     * exporters write Linear layers and shared weights): not trained
     * apart, their gradient flows back to the weight */
    uint8_t *from_w = mp__alloc(S->ctx, (size_t)nt + 1);
    if (!from_w)
        return MP_ERR_NOMEM;
    memcpy(from_w, S->rg, nt);
    /* from_w bit 2: folded from the shapes of tensors (Shape, Size and
     * the arithmetic on their values: an attention scale, a window
     * mask), a constant of the graph, not a parameter */
    for (uint32_t k = 0; k < f->n_nodes; k++) {
        const mp__node *n = &f->nodes[f->topo[k]];
        bool any = false, shape = (n->def->flags & MP__OPF_SHAPE_READ) != 0;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE) {
                any |= (from_w[n->inputs[i]] & 1) != 0;
                shape |= (from_w[n->inputs[i]] & 2) != 0;
            }
        if (MP__OP_BWD(n->def) == MP__BWD_NONDIFF)
            any = false;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (f->tensors[n->outputs[o]].flags & MP__TF_FOLDED)
                from_w[n->outputs[o]] |= (uint8_t)((any ? 1 : 0) |
                                                   (shape ? 2 : 0));
    }
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &f->tensors[t];
        if (!(tt->flags & MP__TF_FOLDED) || tt->rank < 1 ||
            tt->dtype == MP_DTYPE_UNDEFINED || !is_float(tt->dtype) ||
            from_w[t])
            continue;
        for (uint32_t c = 0; c < tt->n_cons; c++) {
            const mp__node *cn = &f->nodes[f->cons[tt->cons_begin + c]];
            for (uint32_t o = 0; o < cn->n_out; o++)
                if (!mp__kind_persistent(f->tensors[cn->outputs[o]].kind))
                    S->rg[t] = 1;
        }
    }
    mp__dealloc(S->ctx, from_w);
    return MP_OK;
}

/* The trainable tensors kept apart; then requires grad spreads, in
 * topological order, to the float arena outputs of differentiable nodes
 * that read a tensor requiring it. */
static mp_status mark_requires_grad(syn *S)
{
    const mp_graph *f = S->f;
    size_t nt1 = (size_t)f->n_tensors + 1;
    mp_status st = mark_trainable(S);
    if (st)
        return st;
    S->trainable = mp__alloc(S->ctx, nt1);
    if (!S->trainable)
        return MP_ERR_NOMEM;
    memcpy(S->trainable, S->rg, nt1);
    for (uint32_t k = 0; k < f->n_nodes; k++) {
        const mp__node *n = &f->nodes[f->topo[k]];
        if (MP__OP_BWD(n->def) == MP__BWD_NONDIFF)
            continue;
        bool any = false;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE && S->rg[n->inputs[i]])
                any = true;
        for (uint32_t o = 0; o < n->n_out && any; o++) {
            const mp__tensor *to = &f->tensors[n->outputs[o]];
            /* a view of a tensor that requires grad requires it too, even
             * when it views persistent storage (Identity over a weight),
             * and so does a tensor folded at load from it (a weight
             * transposed or cast): the gradient flows back through them */
            bool view = to->alias_of != MP_NONE && mp__node_view(n);
            bool folded = (to->flags & MP__TF_FOLDED) != 0;
            S->rg[n->outputs[o]] |= is_float(to->dtype) &&
                                    (view || folded ||
                                     !mp__kind_persistent(to->kind));
        }
    }
    return MP_OK;
}

/* ---- autocast (bf16-mixed, 16-mixed) ----------------------------------- */

/* Width of a float dtype for type promotion (0: not a float). */
static int float_rank(uint8_t dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT64:
        return 3;
    case MP_DTYPE_FLOAT32:
        return 2;
    case MP_DTYPE_BFLOAT16:
    case MP_DTYPE_FLOAT16:
        return 1;
    default:
        return 0;
    }
}
static uint8_t wider(uint8_t a, uint8_t b)
{
    return float_rank(b) > float_rank(a) ? b : a;
}

/* A tensor that takes part in type promotion: not a scalar (rank 0, or a
 * constant of one element, as exporters write PyTorch's Python scalars) */
static bool promotes(const mp__tensor *t)
{
    if (t->rank == 0)
        return false;
    if (t->rank > 0 && dims_known(t) && mp__kind_persistent(t->kind) &&
        !(t->kind == MP_KIND_WEIGHT && t->producer == MP_NONE)) {
        for (int32_t d = 0; d < t->rank; d++)
            if (t->dims[d] != 1)
                return true;
        return false; /* one element */
    }
    return true;
}

/* S->dt: the dtype of each forward tensor under autocast, in topological
 * order by the op's autocast class (core/ir.h, MP__AMP_*). Only tensors
 * that are float32 in the model change; sources keep theirs (weights
 * stay fp32). A Linear exported as MatMul then Add of a 1-D weight (the
 * bias) is one addmm in PyTorch: its Add keeps the product's dtype. */
static mp_status amp_dtypes(syn *S)
{
    const mp_graph *f = S->f;
    uint32_t nt = (uint32_t)f->n_tensors;
    S->dt = mp__alloc(S->ctx, (size_t)nt + 1);
    if (!S->dt)
        return MP_ERR_NOMEM;
    for (uint32_t t = 0; t < nt; t++)
        S->dt[t] = f->tensors[t].dtype;
    uint8_t low = amp_low(S);
    for (uint32_t k = 0; k < f->n_nodes; k++) {
        const mp__node *n = &f->nodes[f->topo[k]];
        unsigned cls = MP__OP_AMP(n->def);
        if (cls == MP__AMP_KEEP)
            continue; /* an explicit conversion: the model's dtype */
        uint8_t want = MP_DTYPE_UNDEFINED, all = MP_DTYPE_UNDEFINED;
        uint32_t x0 = n->n_in ? n->inputs[0] : MP_NONE;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE || !float_rank(S->dt[x]))
                continue;
            all = wider(all, S->dt[x]);
            if (promotes(&f->tensors[x]))
                want = wider(want, S->dt[x]);
        }
        if (mp__node_view(n))
            want = x0 != MP_NONE ? S->dt[x0] : MP_DTYPE_UNDEFINED;
        else if (cls == MP__AMP_LOW)
            want = all ? low : MP_DTYPE_UNDEFINED;
        else if (cls == MP__AMP_F32 || cls == MP__AMP_F32_OPT)
            want = all ? MP_DTYPE_FLOAT32 : MP_DTYPE_UNDEFINED;
        else if (cls == MP__AMP_INPUT0)
            want = x0 != MP_NONE && float_rank(S->dt[x0])
                       ? S->dt[x0] : MP_DTYPE_UNDEFINED;
        else if (!want)
            want = all;
        /* the bias of a Linear: an Add (gradient passed to every input)
         * of a lower-precision product and a 1-D weight */
        if (cls == MP__AMP_PROMOTE && n->n_in == 2 &&
            (n->def->flags & MP__OPF_GRAD_PASS_ALL) &&
            want == MP_DTYPE_FLOAT32)
            for (int a = 0; a < 2; a++) {
                uint32_t p = n->inputs[a], b = n->inputs[1 - a];
                if (p == MP_NONE || b == MP_NONE || S->dt[p] != low)
                    continue;
                const mp__tensor *tp = &f->tensors[p], *tb = &f->tensors[b];
                if (tp->producer != MP_NONE &&
                    MP__OP_AMP(f->nodes[tp->producer].def) == MP__AMP_LOW &&
                    tb->rank == 1 && mp__kind_persistent(tb->kind))
                    want = low;
            }
        if (!want)
            continue;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (f->tensors[n->outputs[o]].dtype == MP_DTYPE_FLOAT32)
                S->dt[n->outputs[o]] = want;
    }
    uint32_t nin = 0;
    for (uint32_t v = 0; v < f->n_nodes; v++)
        nin += f->nodes[v].n_in;
    S->cin_off = mp__alloc(S->ctx, ((size_t)f->n_nodes + 1) * sizeof *S->cin_off);
    S->cin = mp__alloc(S->ctx, ((size_t)nin + 1) * sizeof *S->cin);
    S->wcast = mp__alloc(S->ctx, ((size_t)nt + 1) * sizeof *S->wcast);
    if (!S->cin_off || !S->cin || !S->wcast)
        return MP_ERR_NOMEM;
    nin = 0;
    for (uint32_t v = 0; v < f->n_nodes; v++) {
        S->cin_off[v] = nin;
        nin += f->nodes[v].n_in;
    }
    for (uint32_t i = 0; i < nin; i++)
        S->cin[i] = MP_NONE;
    for (uint32_t t = 0; t < nt; t++)
        S->wcast[t] = MP_NONE;
    return MP_OK;
}

/* The training tensor input i of forward node v is read through: its
 * autocast copy, or the tensor itself. */
static uint32_t fwd_in(const syn *S, uint32_t v, uint32_t i)
{
    uint32_t x = S->f->nodes[v].inputs[i];
    if (x == MP_NONE)
        return MP_NONE;
    if (S->cin && S->cin[S->cin_off[v] + i] != MP_NONE)
        return S->cin[S->cin_off[v] + i];
    return S->map[x];
}

/* A Cast node (forward) writing a copy of training tensor `from` in
 * dtype to, named `name`; its id in *copy. */
static mp_status add_cast(syn *S, const char *name, const mp__tensor *like,
                          uint32_t from, uint8_t to, uint32_t *copy)
{
    uint32_t id;
    mp_status st = add_like(S, name, like, to, MP_KIND_ACTIVATION, copy);
    if (!st) /* a weight's copy is made every step, not at load */
        S->g->tensors[*copy].flags |= MP__TF_NO_FOLD;
    if (!st)
        st = add_node(S, name, "Cast", "", &from, 1, copy, 1,
                      MP_PHASE_FORWARD, &id);
    if (!st)
        st = mp_graph_set_attr_int(S->g, id, "to", to);
    if (!st)
        st = set_cost(S, id, 0);
    return st;
}

/* The cached low-precision copy of forward tensor x, a weight that
 * requires grad (made at its first use): a Cast of the weight; for a
 * transposed view of a weight (a Linear's Transpose before MatMul), the
 * same view of the weight's copy, as F.linear casts the weight and reads
 * it transposed. */
static mp_status weight_cast(syn *S, uint32_t x, uint8_t to, uint32_t *copy)
{
    const mp_graph *f = S->f;
    const mp__tensor *tx = &f->tensors[x];
    mp_status st = MP_OK;
    if (S->wcast[x] == MP_NONE && mp__tensor_tview(f, x)) {
        const mp__node *tr = &f->nodes[tx->producer];
        uint32_t w = tr->inputs[0], wc, id;
        if ((st = weight_cast(S, w, to, &wc)))
            return st;
        snprintf(S->name, sizeof S->name, "%s/autocast", tx->name);
        if ((st = add_like(S, S->name, tx, to, MP_KIND_ACTIVATION,
                           &S->wcast[x])) ||
            (st = add_node(S, S->name, tr->op, tr->domain, &wc, 1,
                           &S->wcast[x], 1, MP_PHASE_FORWARD, &id)) ||
            (st = mp__node_copy_attrs(S->g, tr, id)) || (st = set_cost(S, id, 0)))
            return st;
    } else if (S->wcast[x] == MP_NONE) {
        snprintf(S->name, sizeof S->name, "%s/autocast", tx->name);
        if ((st = add_cast(S, S->name, tx, S->map[x], to, &S->wcast[x])))
            return st;
        uint64_t bits = mp_dtype_bits((mp_dtype)tx->dtype);
        if (bits)
            S->B.cast_weight_bytes +=
                tx->bytes / bits * mp_dtype_bits((mp_dtype)to);
    }
    *copy = S->wcast[x];
    return st;
}

/* The copies autocast makes before forward node v: float32 inputs of an
 * op on the lower-precision list cast to bf16/fp16 (a weight that
 * requires grad once, cached: torch.autocast's cache of leaf casts, held
 * until forward ends), lower-precision inputs of an op on the fp32 list
 * cast to fp32; each read by v and, where its backward saves the input,
 * by the backward too (autograd saves the copy). */
static mp_status amp_casts(syn *S, uint32_t v)
{
    if (!S->cin)
        return MP_OK;
    const mp_graph *f = S->f;
    const mp__node *n = &f->nodes[v];
    unsigned cls = MP__OP_AMP(n->def);
    if (cls != MP__AMP_LOW && cls != MP__AMP_F32)
        return MP_OK;
    uint8_t low = amp_low(S);
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t x = n->inputs[i];
        if (x == MP_NONE)
            continue;
        const mp__tensor *tx = &f->tensors[x];
        uint8_t d = S->dt[x], to;
        if (cls == MP__AMP_LOW && d == MP_DTYPE_FLOAT32)
            to = low;
        else if (cls == MP__AMP_F32 && float_rank(d) == 1)
            to = MP_DTYPE_FLOAT32;
        else
            continue;
        const mp__tensor *root = &f->tensors[tx->root];
        bool leaf = cls == MP__AMP_LOW && S->rg[x] &&
                    mp__kind_persistent(root->kind);
        uint32_t *cp = &S->cin[S->cin_off[v] + i];
        mp_status st;
        if (leaf) {
            st = weight_cast(S, x, to, cp);
        } else {
            snprintf(S->name, sizeof S->name, "%s/autocast%u", n->name,
                     (unsigned)i);
            st = add_cast(S, S->name, tx, S->map[x], to, cp);
        }
        if (st)
            return st;
    }
    return MP_OK;
}

/* Every forward tensor, in the training dtype; outputs become
 * activations (the loss is the training graph's output). */
static mp_status add_forward_tensors(syn *S)
{
    for (uint32_t t = 0; t < S->f->n_tensors; t++) {
        const mp__tensor *tt = &S->f->tensors[t];
        mp_tensor_kind k = (mp_tensor_kind)tt->declared_kind;
        if (k == MP_KIND_OUTPUT)
            k = MP_KIND_ACTIVATION;
        mp_status st = add_like(S, tt->name, tt, train_dtype(S, tt), k,
                                &S->map[t]);
        if (st)
            return st;
        /* the known values of small constants (a Slice's starts, a
         * Pad's pads, axes, a Clip's bounds) stay known; not in a
         * re-batched graph, whose shape functions re-batch the
         * batch-carrying ones (core/ops/rebatch.c) */
        mp__tensor *nt = &S->g->tensors[S->map[t]];
        if (!S->f->rebatch_from && !S->f->rebatch_to && tt->value &&
            tt->n_value &&
            (mp__dtype_is_int(tt->dtype) || mp__dtype_is_float(tt->dtype)) &&
            nt->dtype == tt->dtype &&
            (st = mp__tensor_set_value(S->ctx, nt, tt->value, tt->n_value)))
            return st;
    }
    return MP_OK;
}

/* The operand buffers, large enough for any node of the training graph,
 * and the per-forward-node arrays extra and nmap (one block). */
static mp_status alloc_node_buffers(syn *S)
{
    const mp_graph *f = S->f;
    size_t nn = f->n_nodes, cap = 16;
    for (uint32_t v = 0; v < nn; v++)
        if ((size_t)f->nodes[v].n_in + 2 * (size_t)f->nodes[v].n_out + 8 > cap)
            cap = (size_t)f->nodes[v].n_in + 2 * (size_t)f->nodes[v].n_out + 8;
    cap += f->n_tensors; /* the loss reads every output */
    S->buf_in = mp__alloc(S->ctx, cap * sizeof *S->buf_in);
    S->buf_out = mp__alloc(S->ctx, cap * sizeof *S->buf_out);
    /* extra saved outputs (stats, masks, indices) per forward node */
    S->extra = mp__alloc(S->ctx, 2 * (nn + 1) * sizeof *S->extra);
    S->nmap = S->extra ? S->extra + nn + 1 : NULL;
    if (!S->buf_in || !S->buf_out || !S->extra)
        return MP_ERR_NOMEM;
    return MP_OK;
}

/* What the backward of forward node n saves (MP__BWDN_* bits): the union
 * of what the gradients of its inputs that require a gradient need, as
 * autograd saves a tensor only for the input gradients that use it. */
static unsigned saved_needs(const syn *S, const mp__node *n, unsigned rule)
{
    unsigned need = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->inputs[i] != MP_NONE && S->rg[n->inputs[i]])
            need |= mp__bwd_needs(rule, i);
    return need;
}

/* Rows of the statistics a normalization saves (x0 of rank >= 2): the
 * product of the dims before its axis (MP__BWDX_ROWS), the channels
 * (MP__BWDX_CHANNELS), or samples x groups (MP__BWDX_GROUPS: num_groups,
 * else a group per channel); 0 when unknown. */
static int64_t norm_rows(const mp__node *n, const mp__tensor *x0,
                         unsigned extra)
{
    if (extra == MP__BWDX_CHANNELS)
        return x0->dims[1];
    if (extra == MP__BWDX_GROUPS) {
        const mp__attr *ng = mp__node_attr(n, "num_groups");
        int64_t groups = ng && ng->type == MP__ATTR_INT && ng->v.i > 0
                             ? ng->v.i
                             : x0->dims[1];
        return x0->dims[0] > INT64_MAX / groups ? 0 : x0->dims[0] * groups;
    }
    int64_t rows = 1;
    const mp__attr *ax = mp__node_attr(n, "axis");
    int64_t a = ax && ax->type == MP__ATTR_INT ? ax->v.i : -1;
    if (a < 0)
        a += x0->rank;
    for (int64_t d = 0; d < a && d < x0->rank; d++)
        rows *= x0->dims[d];
    return rows;
}

/* extra[v]: what the backward rule of forward node v saves besides its
 * operands (a normalization's statistics; the mask or indices of a
 * masking op, its second output when it has one), when an output of v
 * requires grad and the gradient of an input that requires one needs it;
 * else MP_NONE. */
static mp_status add_saved_extra(syn *S, uint32_t v, unsigned rule)
{
    const mp_graph *f = S->f;
    const mp__node *n = &f->nodes[v];
    S->extra[v] = MP_NONE;
    bool trains = false;
    for (uint32_t o = 0; o < n->n_out; o++)
        trains |= S->rg[n->outputs[o]] != 0;
    unsigned n_stats, extra = mp__bwd_extra(rule, &n_stats);
    if (!trains || !(saved_needs(S, n, rule) & MP__BWDN_EXTRA))
        return MP_OK;
    const mp__tensor *x0 =
        n->n_in && n->inputs[0] != MP_NONE ? &f->tensors[n->inputs[0]] : NULL;
    const mp__tensor *y0 = n->n_out ? &f->tensors[n->outputs[0]] : NULL;
    if ((extra == MP__BWDX_ROWS || extra == MP__BWDX_CHANNELS ||
         extra == MP__BWDX_GROUPS) &&
        x0 && dims_known(x0) && x0->rank >= 2) {
        int64_t dims[2] = {(int64_t)n_stats, norm_rows(n, x0, extra)};
        if (dims[1] <= 0)
            return MP_OK;
        snprintf(S->name, sizeof S->name, "%s/stats", n->name);
        return add_shaped(S, S->name, MP_DTYPE_FLOAT32, 2, dims,
                          MP_KIND_ACTIVATION, &S->extra[v]);
    }
    if ((extra == MP__BWDX_MASK || extra == MP__BWDX_INDICES) && y0 &&
        dims_known(y0)) {
        if (n->n_out >= 2) {
            S->extra[v] = S->map[n->outputs[1]];
            return MP_OK;
        }
        snprintf(S->name, sizeof S->name, "%s/%s", n->name,
                 extra == MP__BWDX_MASK ? "mask" : "indices");
        return add_shaped(S, S->name,
                          extra == MP__BWDX_MASK ? MP_DTYPE_BOOL
                                                 : MP_DTYPE_INT64,
                          y0->rank, y0->dims, MP_KIND_ACTIVATION,
                          &S->extra[v]);
    }
    return MP_OK;
}

/* The cost of node id, the copy of forward node v: the forward graph's,
 * else the device's estimate. */
static mp_status copy_forward_cost(syn *S, uint32_t v, uint32_t id)
{
    const mp__node *n = &S->f->nodes[v];
    double fl = n->flops, by = n->bytes_moved, sec = n->seconds;
    if (sec < 0 && fl < 0 && S->have_dev) {
        mp_op_cost c;
        if (mp_node_estimate(S->f, v, &S->dev, &c) == MP_OK) {
            fl = c.flops;
            by = c.bytes;
            sec = c.seconds;
        }
        mp_ctx_clear(S->ctx);
    }
    return mp_graph_set_node_cost(S->g, id, fl, by, sec);
}

/* The copy of forward node v, writing its extra saved tensor too. */
static mp_status add_forward_node(syn *S, uint32_t v)
{
    const mp__node *n = &S->f->nodes[v];
    unsigned rule = MP__OP_BWD(n->def);
    uint32_t nin = 0, nout = 0, id;
    mp_status st = amp_casts(S, v);
    if (st)
        return st;
    for (uint32_t i = 0; i < n->n_in; i++)
        S->buf_in[nin++] = fwd_in(S, v, i);
    for (uint32_t o = 0; o < n->n_out; o++)
        S->buf_out[nout++] = S->map[n->outputs[o]];
    st = add_saved_extra(S, v, rule);
    if (st)
        return st;
    /* statistics are always an output of their own; a mask or indices
     * only when the node does not write them as output 1 */
    unsigned extra = mp__bwd_extra(rule, NULL);
    if (S->extra[v] != MP_NONE &&
        (n->n_out < 2 || (extra != MP__BWDX_MASK && extra != MP__BWDX_INDICES)))
        S->buf_out[nout++] = S->extra[v];
    if ((st = add_node(S, n->name, n->op, n->domain, S->buf_in, nin,
                       S->buf_out, nout, MP_PHASE_FORWARD, &id)))
        return st;
    S->nmap[v] = id;
    if ((st = mp__node_copy_attrs(S->g, n, id)) || (st = copy_forward_cost(S, v, id)))
        return st;
    S->B.n_forward++;
    return MP_OK;
}

/* The loss over the differentiable outputs, and its gradient node, where
 * the gradient of each of them starts. */
static mp_status add_loss(syn *S)
{
    const mp_graph *f = S->f;
    uint32_t nt = (uint32_t)f->n_tensors, n_lo = 0;
    for (uint32_t t = 0; t < nt; t++)
        if ((f->tensors[t].flags & MP__TF_OUTPUT) && S->rg[t])
            S->buf_in[n_lo++] = S->map[t];
    if (!n_lo)
        return mp__err(S->ctx, MP_ERR_GRAPH,
                       "training: no graph output depends on a trainable "
                       "weight through differentiable ops");
    /* autocast's cache of weight casts is emptied when forward ends (the
     * autocast region closes): the loss reads them, so that they live
     * until then (longer where backward keeps them) */
    uint32_t n_out = n_lo;
    for (uint32_t t = 0; S->wcast && t < nt; t++)
        if (S->wcast[t] != MP_NONE && !mp__tensor_tview(f, t))
            S->buf_in[n_lo++] = S->wcast[t]; /* (a view's root is one) */
    uint32_t loss, id;
    int64_t none = 0;
    mp_status st;
    if ((st = add_shaped(S, "loss", MP_DTYPE_FLOAT32, 0, &none,
                         MP_KIND_OUTPUT, &loss)) ||
        (st = add_node(S, "loss", "Loss", "memplan", S->buf_in, n_lo, &loss,
                       1, MP_PHASE_FORWARD, &id)) ||
        /* the inputs summed: the outputs; the weight casts after them
         * are only read (held) */
        (st = mp_graph_set_attr_int(S->g, id, "terms", (int64_t)n_out)) ||
        (st = mp_graph_mark_output(S->g, loss)) ||
        (st = set_cost(S, id, 0)))
        return st;
    uint32_t k = 0;
    for (uint32_t t = 0; t < nt; t++)
        if ((f->tensors[t].flags & MP__TF_OUTPUT) && S->rg[t]) {
            if ((st = new_partial(S, t, &S->buf_out[k])) ||
                (st = accumulate(S, t, S->buf_out[k])))
                return st;
            k++;
        }
    if ((st = add_node(S, "loss/grad", "LossGrad", "memplan", S->buf_in,
                       n_out, S->buf_out, k, MP_PHASE_BACKWARD, &id)) ||
        (st = set_cost(S, id, 0)))
        return st;
    S->B.n_backward++;
    return MP_OK;
}

/* step_in_backward: the optimizer step of a trainable tensor comes
 * right after the backward node of its first forward reader (the last
 * contribution to its gradient): opt_head[k] lists the tensors whose
 * first reader is at topological position k, ascending */
static mp_status order_opt_steps(syn *S)
{
    const mp_graph *f = S->f;
    mp_ctx *ctx = S->ctx;
    uint32_t nt = (uint32_t)f->n_tensors, nn = (uint32_t)f->n_nodes;
    S->opt_head = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *S->opt_head);
    S->opt_next = mp__alloc(ctx, ((size_t)nt + 1) * sizeof *S->opt_next);
    uint32_t *tpos = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *tpos);
    if (!S->opt_head || !S->opt_next || !tpos) {
        mp__dealloc(ctx, tpos);
        return MP_ERR_NOMEM;
    }
    for (uint32_t k = 0; k <= nn; k++)
        S->opt_head[k] = MP_NONE;
    for (uint32_t k = 0; k < nn; k++)
        tpos[f->topo[k]] = k;
    for (uint32_t t = nt; t-- > 0;) {
        const mp__tensor *tt = &f->tensors[t];
        if (!S->trainable[t] || !tt->n_cons)
            continue;
        uint32_t first = nn;
        for (uint32_t c = 0; c < tt->n_cons; c++) {
            uint32_t q = tpos[f->cons[tt->cons_begin + c]];
            if (q < first)
                first = q;
        }
        S->opt_next[t] = S->opt_head[first];
        S->opt_head[first] = t;
    }
    mp__dealloc(ctx, tpos);
    return MP_OK;
}

/* The optimizer steps of the tensors of list k of opt_head (none without
 * step_in_backward) that have a gradient. */
static mp_status add_listed_opt_steps(syn *S, uint32_t k)
{
    for (uint32_t t = S->opt_head ? S->opt_head[k] : MP_NONE; t != MP_NONE;
         t = S->opt_next[t]) {
        mp_status st;
        if (S->grad[t] != MP_NONE &&
            (st = add_opt_step(S, S->opt, t, S->buf_in, &S->B)))
            return st;
    }
    return MP_OK;
}

/* The inputs of node n that take a gradient, each once (at most 64). */
static uint32_t grad_wanted(const syn *S, const mp__node *n, uint32_t *want)
{
    uint32_t nw = 0;
    for (uint32_t i = 0; i < n->n_in && nw < 64; i++) {
        uint32_t x = n->inputs[i];
        if (x == MP_NONE || !S->rg[x])
            continue;
        bool dup = false;
        for (uint32_t j = 0; j < nw; j++)
            dup |= want[j] == x;
        if (!dup)
            want[nw++] = x;
    }
    return nw;
}

/* gradients passed through unchanged (Add's, Sum's and Sub's first
 * input of output 0's shape) are views of the output gradient gy;
 * the others (broadcast inputs) stay in want for the op's backward node */
static mp_status add_grad_views(syn *S, const mp__node *n, uint32_t gy,
                                uint32_t *want, uint32_t *nw)
{
    uint32_t keep = 0;
    for (uint32_t j = 0; j < *nw; j++) {
        uint32_t pos = grad_pass_pos(S, n, want[j]);
        mp_status st;
        if (pos == MP_NONE)
            want[keep++] = want[j];
        else if ((st = add_grad_view(S, n, want[j], pos, gy)))
            return st;
        else
            S->B.n_backward++;
    }
    *nw = keep;
    return MP_OK;
}

/* Appends id to buf_in (nin entries so far) unless the saved entries
 * from position first on hold it; returns the new count. */
static uint32_t push_saved(uint32_t *in, uint32_t first, uint32_t nin,
                           uint32_t id, int64_t *codes, int64_t code)
{
    for (uint32_t k = first; k < nin; k++)
        if (in[k] == id)
            return nin;
    in[nin] = id;
    if (codes)
        codes[nin - first] = code;
    return nin + 1;
}

/* Appends to buf_in (nin entries so far) the forward tensors the backward
 * rule of node v saves for the gradients of its inputs that require one
 * (saved_needs): inputs in position order, then output 0, then the extra
 * saved output; each once. codes[k] gets what saved entry k is (the
 * grad_saved attribute): forward input i as i, output o of the forward
 * copy as -1 - o (the extra saved tensor is output 1 of a masking op
 * that writes it, else the copy's last output, n_out). Returns the new
 * count. */
static uint32_t add_saved_inputs(syn *S, uint32_t v, unsigned rule,
                                 uint32_t nin, int64_t *codes)
{
    const mp__node *n = &S->f->nodes[v];
    uint32_t *in = S->buf_in, first = nin;
    unsigned need = saved_needs(S, n, rule);
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->inputs[i] != MP_NONE &&
            ((need & MP__BWDN_ALL_IN) || (i < 3 && (need & (1u << i)))))
            nin = push_saved(in, first, nin, fwd_in(S, v, i), codes, i);
    if ((need & MP__BWDN_OUT0) && n->n_out && n->outputs[0] != MP_NONE)
        nin = push_saved(in, first, nin, S->map[n->outputs[0]], codes, -1);
    if ((need & MP__BWDN_EXTRA) && S->extra[v] != MP_NONE) {
        int64_t o = n->n_out;
        if (n->n_out >= 2 && S->extra[v] == S->map[n->outputs[1]])
            o = 1;
        nin = push_saved(in, first, nin, S->extra[v], codes, -1 - o);
    }
    return nin;
}

/* What a backward node's inputs and outputs are, as its attributes say
 * (docs/training.md, "Backward"): grad_dy[k], the forward output whose
 * gradient input k is; grad_saved[k], what saved input n_dy + k is
 * (add_saved_inputs); grad_dx[j], the forward input position (the first
 * where the tensor is read) whose gradient output j is. */
typedef struct grad_map {
    int64_t *dy, *saved, *dx, *reads;
    uint32_t n_dy, n_saved;
} grad_map;

/* the first input position of node n reading x; *reads: how many
 * positions read it */
static int64_t input_pos(const mp__node *n, uint32_t x, int64_t *reads)
{
    int64_t pos = -1;
    *reads = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->inputs[i] == x) {
            if (pos < 0)
                pos = i;
            (*reads)++;
        }
    return pos;
}

/* split_weight_grad: the trainable tensors' gradients come from a
 * node of their own (NAME/grad_w), after the input gradients'
 * (NAME/grad), as frameworks run the data and the weight gradient
 * as two kernels; want is reordered, inputs first. Returns the number
 * of weight gradients, 0 when one node computes them all. */
static uint32_t split_weight_grads(const syn *S, uint32_t *want, uint32_t nw)
{
    uint32_t tmp[64], nt2 = 0, nwt = 0;
    for (uint32_t j = 0; j < nw; j++)
        if (!S->trainable[want[j]])
            tmp[nt2++] = want[j];
    for (uint32_t j = 0; j < nw; j++)
        if (S->trainable[want[j]])
            tmp[nt2++] = want[j];
    for (uint32_t j = 0; j < nw; j++)
        nwt += S->trainable[want[j]] != 0;
    if (nwt == nw)
        return 0; /* only weight gradients: one node */
    memcpy(want, tmp, nw * sizeof *want);
    return nwt;
}

/* The backward node(s) of forward node v, op `op` reading buf_in (nin),
 * writing a fresh partial gradient of each of want (nw; the last nwt by
 * a second node when nwt > 0), then each partial summed into the
 * gradient. */
static mp_status add_grad_nodes(syn *S, uint32_t v, const char *op,
                                unsigned rule, uint32_t nin,
                                const uint32_t *want, uint32_t nw,
                                uint32_t nwt, grad_map *gm)
{
    const mp__node *n = &S->f->nodes[v];
    uint32_t nout = 0;
    mp_status st;
    for (uint32_t j = 0; j < nw; j++)
        if ((st = new_partial(S, want[j], &S->buf_out[nout++])))
            return st;
    const mp__node *fn = &S->g->nodes[S->nmap[v]]; /* its forward copy */
    double ffl = fn->flops > 0 ? fn->flops : 0;
    /* a flash backward's temporaries: per query row, the fp32 dot product
     * of the output and its gradient (delta) and the fp32 accumulator of
     * Q's gradient (D values): one workspace, written and freed there */
    uint32_t n_ws = 0;
    if (rule == MP__BWD_SDPA && !nwt && n->n_in > 0 &&
        n->inputs[0] != MP_NONE && dims_known(&S->f->tensors[n->inputs[0]])) {
        const mp__tensor *q = &S->f->tensors[n->inputs[0]];
        uint64_t rows = 1, d = (uint64_t)q->dims[q->rank - 1], e;
        for (int32_t i = 0; i + 1 < q->rank; i++)
            if (!mp__mul_u64(rows, (uint64_t)q->dims[i], &rows))
                return mp__err(S->ctx, MP_ERR_OVERFLOW, "training: the "
                               "rows of '%s' overflow", n->name);
        if (!mp__mul_u64(rows, d + 1, &e) || e > INT64_MAX)
            return mp__err(S->ctx, MP_ERR_OVERFLOW, "training: the "
                           "workspace of '%s' overflows", n->name);
        int64_t dims = (int64_t)e;
        snprintf(S->name, sizeof S->name, "%s/grad/workspace", n->name);
        if ((st = add_shaped(S, S->name, MP_DTYPE_FLOAT32, 1, &dims,
                             MP_KIND_ACTIVATION, &S->buf_out[nout])))
            return st;
        n_ws = 1;
    }
    for (int part = 0; part < (nwt ? 2 : 1); part++) {
        snprintf(S->name, sizeof S->name, part ? "%s/grad_w" : "%s/grad",
                 n->name);
        uint32_t id, o0 = part ? nw - nwt : 0;
        uint32_t no = nwt ? (part ? nwt : nw - nwt) : nout + n_ws;
        if ((st = add_node(S, S->name, op,
                           strcmp(op, "Identity") ? "memplan" : "",
                           S->buf_in, nin, S->buf_out + o0, no,
                           MP_PHASE_BACKWARD, &id)))
            return st;
        if (gm) {
            /* the forward node's attributes (axis, transA, ...) and
             * domain, then what its inputs and outputs are */
            if ((st = mp__node_copy_attrs(S->g, n, id)) ||
                (n->domain && n->domain[0] &&
                 (st = mp_graph_set_attr_string(S->g, id, "grad_domain",
                                                n->domain))))
                return st;
            uint32_t ndx = nwt ? no : nw;
            for (uint32_t j = 0; j < ndx; j++)
                gm->dx[j] = input_pos(n, want[o0 + j], &gm->reads[j]);
            if ((st = mp_graph_set_attr_ints(S->g, id, "grad_dy", gm->dy,
                                             gm->n_dy)) ||
                (st = mp_graph_set_attr_ints(S->g, id, "grad_saved",
                                             gm->saved, gm->n_saved)) ||
                (st = mp_graph_set_attr_ints(S->g, id, "grad_dx", gm->dx,
                                             ndx)) ||
                (st = mp_graph_set_attr_ints(S->g, id, "grad_dx_reads",
                                             gm->reads, ndx)))
                return st;
        }
        /* the gradient of a pointwise op, one gradient: pointwise too
         * (a fused chain may hold it) when its sizes match, which
         * mark_pointwise_backward checks once sizes are known */
        S->g->nodes[id].bwd_pointwise = !nwt && nout == 1 &&
                                        mp__op_pointwise(n->def) &&
                                        strcmp(op, "Identity") != 0;
        /* two products (matrix products, convolutions): one per node
         * when split; other rules' weight gradients are reductions
         * (bytes only) */
        double fl = mp__bwd_two_products(rule) ? (nwt ? ffl : 2 * ffl)
                    : part ? 0 : ffl;
        if (rule == MP__BWD_SDPA) /* flash backward: 2.5 forwards */
            fl = part ? 0 : 2.5 * ffl;
        if ((st = set_cost(S, id, fl)))
            return st;
        S->B.n_backward++;
    }
    for (uint32_t j = 0; j < nw; j++)
        if ((st = accumulate(S, want[j], S->buf_out[j])))
            return st;
    return MP_OK;
}

static mp_status add_backward_grads(syn *S, uint32_t v, unsigned rule,
                                    uint32_t nin, grad_map *gm);

/* The backward of forward node v, whose output gradients are complete:
 * views for the gradients passed through, a backward node (two with
 * split_weight_grad) for the others. */
static mp_status add_backward_node(syn *S, uint32_t v)
{
    const mp__node *n = &S->f->nodes[v];
    unsigned rule = MP__OP_BWD(n->def);
    if (rule == MP__BWD_NONDIFF)
        return MP_OK;
    uint32_t nin = 0;
    for (uint32_t o = 0; o < n->n_out; o++)
        if (S->grad[n->outputs[o]] != MP_NONE)
            nin++;
    if (!nin)
        return MP_OK;
    /* grad_dy (n_out), grad_saved (n_in + 2), grad_dx and grad_dx_reads
     * (64 each) */
    int64_t *codes = mp__alloc(S->ctx, ((size_t)n->n_out + n->n_in + 130) *
                                           sizeof *codes);
    if (!codes)
        return MP_ERR_NOMEM;
    int64_t *dx = codes + n->n_out + n->n_in + 2;
    grad_map gm = {codes, codes + n->n_out, dx, dx + 64, 0, 0};
    nin = 0;
    for (uint32_t o = 0; o < n->n_out; o++)
        if (S->grad[n->outputs[o]] != MP_NONE) {
            gm.dy[nin] = o;
            S->buf_in[nin++] = S->grad[n->outputs[o]];
        }
    gm.n_dy = nin;
    mp_status st = add_backward_grads(S, v, rule, nin, &gm);
    mp__dealloc(S->ctx, codes);
    return st;
}

/* add_backward_node once the output gradients (nin) are in buf_in */
static mp_status add_backward_grads(syn *S, uint32_t v, unsigned rule,
                                    uint32_t nin, grad_map *gm)
{
    const mp__node *n = &S->f->nodes[v];
    uint32_t want[64], nw = grad_wanted(S, n, want);
    if (!nw)
        return MP_OK;
    mp_status st;
    if (nin == 1) {
        if ((st = add_grad_views(S, n, S->buf_in[0], want, &nw)))
            return st;
        if (!nw)
            return MP_OK;
    }
    const char *op;
    char opname[128];
    if ((n->def->flags & MP__OPF_VIEW) && nw == 1 && nin == 1) {
        op = "Identity"; /* the gradient of a view is a view */
    } else {
        snprintf(opname, sizeof opname, "%sGrad", n->op);
        op = opname;
        uint32_t n_dy = nin;
        nin = add_saved_inputs(S, v, rule, nin, gm->saved);
        gm->n_saved = nin - n_dy;
    }
    uint32_t nwt = S->opt->split_weight_grad && op == opname
                       ? split_weight_grads(S, want, nw)
                       : 0;
    return add_grad_nodes(S, v, op, rule, nin, want, nw, nwt,
                          op == opname ? gm : NULL);
}

/* FOREACH Adam/AdamW after the backward pass: PyTorch's multi-tensor
 * step computes sqrt(v) for the whole parameter group into one list of
 * temporaries (torch._foreach_sqrt in _multi_tensor_adam), held until the
 * parameters are updated. One node (FOREACH_OP) reads every parameter
 * gradient and writes that fp32 temporary; each step reads it, and it is
 * freed after the last. */
static mp_status add_foreach_group(syn *S)
{
    const mp_graph *f = S->f;
    S->foreach_tmp = MP_NONE;
    if (S->opt->optimizer_impl != MP_OPTIM_IMPL_FOREACH ||
        (S->opt->optimizer != MP_OPTIM_ADAM &&
         S->opt->optimizer != MP_OPTIM_ADAMW))
        return MP_OK;
    uint32_t nin = 0;
    uint64_t elems = 0;
    for (uint32_t t = 0; t < f->n_tensors; t++) {
        if (!S->trainable[t] || S->grad[t] == MP_NONE)
            continue;
        const mp__tensor *w = &f->tensors[t];
        uint64_t bits = mp_dtype_bits((mp_dtype)w->dtype);
        uint64_t e = bits ? w->bytes * 8 / bits : w->bytes / 4;
        if (!mp__add_u64(elems, e, &elems) || elems > INT64_MAX)
            return mp__err(S->ctx, MP_ERR_OVERFLOW, "training: the "
                           "parameters' element count overflows");
        S->buf_in[nin++] = S->grad[t];
    }
    if (!nin)
        return MP_OK;
    int64_t n = (int64_t)elems;
    uint32_t tmp, id;
    /* in the parameters' dtype (bf16 with bf16-true) */
    mp_dtype gdt = S->prec == MP_PRECISION_BF16_TRUE ? MP_DTYPE_BFLOAT16
                                                     : MP_DTYPE_FLOAT32;
    mp_status st = add_shaped(S, "opt/foreach/tmp", gdt, 1, &n,
                              MP_KIND_ACTIVATION, &tmp);
    if (!st)
        st = add_node(S, "opt/foreach", FOREACH_OP, "memplan", S->buf_in,
                      nin, &tmp, 1, MP_PHASE_OPTIMIZER, &id);
    if (!st)
        st = set_cost(S, id, 2.0 * (double)elems);
    if (!st)
        S->foreach_tmp = tmp;
    return st;
}

/* The backward pass in reverse topological order (with step_in_backward,
 * each tensor's optimizer step as soon as its gradient is complete),
 * then the remaining optimizer steps. */
static mp_status add_backward(syn *S)
{
    const mp_graph *f = S->f;
    mp_status st;
    for (uint32_t k = (uint32_t)f->n_nodes; k-- > 0;) {
        /* the steps whose gradients the previous iteration completed */
        if ((st = add_listed_opt_steps(S, k + 1)) ||
            (st = add_backward_node(S, f->topo[k])))
            return st;
    }
    if ((st = add_listed_opt_steps(S, 0)))
        return st;
    mp__dealloc(S->ctx, S->opt_head);
    mp__dealloc(S->ctx, S->opt_next);
    S->opt_head = S->opt_next = NULL;
    /* optimizer step per trainable weight, after the backward pass (or,
     * with step_in_backward, already done in it) */
    if (!S->opt->step_in_backward && (st = add_foreach_group(S)))
        return st;
    for (uint32_t t = 0; t < f->n_tensors && !S->opt->step_in_backward; t++)
        if (S->trainable[t] && S->grad[t] != MP_NONE &&
            (st = add_opt_step(S, S->opt, t, S->buf_in, &S->B)))
            return st;
    return MP_OK;
}

/* saved: forward storage roots in the arena that backward nodes read */
static mp_status count_saved_bytes(syn *S)
{
    const mp_graph *g = S->g;
    uint8_t *seen = mp__calloc(S->ctx, g->n_tensors + 1, 1);
    if (!seen)
        return MP_ERR_NOMEM;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        const mp__node *n = &g->nodes[v];
        if (n->phase != MP_PHASE_BACKWARD)
            continue;
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE)
                continue;
            uint32_t r = g->tensors[x].root;
            const mp__tensor *tr = &g->tensors[r];
            if (seen[r] || !mp__tensor_in_arena(tr))
                continue;
            if (tr->producer != MP_NONE &&
                g->nodes[tr->producer].phase != MP_PHASE_FORWARD)
                continue;
            seen[r] = 1;
            S->B.saved_bytes += tr->bytes;
        }
    }
    mp__dealloc(S->ctx, seen);
    return MP_OK;
}

/* optimizer nodes: weight, gradient, [master,] states -> tmp; the
 * persistent bytes beyond them are frozen */
static void count_optimizer_bytes(syn *S)
{
    const mp_graph *g = S->g;
    mp_train_breakdown *B = &S->B;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        const mp__node *n = &g->nodes[v];
        if (n->phase != MP_PHASE_OPTIMIZER || n->n_in < 2)
            continue;
        if (n->n_out && g->tensors[n->outputs[0]].bytes > B->temporary_bytes)
            B->temporary_bytes = g->tensors[n->outputs[0]].bytes;
        if (strcmp(n->op, FOREACH_OP) == 0)
            continue; /* the group's temporary only */
        B->weight_bytes += g->tensors[n->inputs[0]].bytes;
        B->gradient_bytes += g->tensors[n->inputs[1]].bytes;
        for (uint32_t i = 2; i < n->n_in; i++) {
            if (g->tensors[n->inputs[i]].declared_kind !=
                MP_KIND_OPTIMIZER_STATE)
                continue; /* the foreach group's temporary */
            B->optimizer_bytes += g->tensors[n->inputs[i]].bytes;
        }
    }
    uint64_t pers = mp__plan_persistent_bytes(g);
    uint64_t train = B->weight_bytes + B->master_weight_bytes +
                     B->optimizer_bytes;
    B->frozen_bytes = pers > train ? pers - train : 0;
}

/* A backward node marked pointwise stays so only when every arena
 * input has its output's bytes (no broadcast operand, no reduction). */
void mp__mark_pointwise_backward(mp_graph *g)
{
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        mp__node *n = &g->nodes[v];
        if (!n->bwd_pointwise)
            continue;
        uint64_t b = n->n_out == 1 && n->outputs[0] != MP_NONE
                         ? g->tensors[n->outputs[0]].bytes
                         : 0;
        bool ok = b != 0;
        for (uint32_t i = 0; i < n->n_in && ok; i++) {
            if (n->inputs[i] == MP_NONE)
                continue;
            const mp__tensor *r = &g->tensors[g->tensors[n->inputs[i]].root];
            ok = mp__kind_persistent(r->kind) ||
                 g->tensors[n->inputs[i]].bytes == b;
        }
        n->bwd_pointwise = ok;
    }
}

/* The training graph of S->f in S->g, its breakdown in S->B. */
static mp_status synthesize(syn *S)
{
    mp_status st;
    if ((st = syn_begin(S)) || (st = mark_requires_grad(S)) ||
        (amp(S) && (st = amp_dtypes(S))) ||
        (st = add_forward_tensors(S)) || (st = alloc_node_buffers(S)))
        return st;
    for (uint32_t k = 0; k < S->f->n_nodes; k++)
        if ((st = add_forward_node(S, S->f->topo[k])))
            return st;
    if ((st = add_loss(S)) ||
        (S->opt->step_in_backward && (st = order_opt_steps(S))) ||
        (st = add_backward(S)))
        return st;
    mp__dealloc(S->ctx, S->trainable);
    S->trainable = NULL;
    if ((st = mp_graph_finalize(S->g)) || (st = time_costed(S)) ||
        (st = count_saved_bytes(S)))
        return st;
    mp__mark_pointwise_backward(S->g);
    count_optimizer_bytes(S);
    return MP_OK;
}

mp_status mp_train_graph(const mp_graph *f, const mp_train_options *opt,
                         mp_graph **out, mp_train_breakdown *bd)
{
    if (!f || !out)
        return MP_ERR_INVALID_ARG;
    mp_ctx *ctx = f->ctx;
    *out = NULL;
    if (!f->finalized)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "graph is not finalized");
    mp_train_options defs;
    if (!opt) {
        mp_train_options_init(&defs);
        opt = &defs;
    }
    if ((unsigned)opt->optimizer > MP_OPTIM_ADAM8BIT ||
        (unsigned)opt->precision > MP_PRECISION_BF16_TRUE ||
        (unsigned)opt->attention > MP_ATTENTION_NAIVE ||
        (unsigned)opt->optimizer_impl > MP_OPTIM_IMPL_FOR_LOOP)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "unknown optimizer, precision or optimizer "
                       "implementation");
    syn S;
    memset(&S, 0, sizeof S);
    S.foreach_tmp = MP_NONE;
    S.f = f;
    S.ctx = ctx;
    S.opt = opt;
    S.prec = opt->precision;
    if (opt->device) {
        S.dev = *opt->device;
        S.have_dev = 1;
    } else {
        S.have_dev = mp_device_builtin(ctx, "h200", &S.dev) == MP_OK;
    }
    mp_ctx_clear(ctx);
    /* fused attention: the training graph of a copy with the chains
     * fused (f itself is not changed) */
    mp_graph *fused = NULL;
    uint32_t n_att = 0;
    uint64_t att_bytes = 0;
    mp_status st = opt->attention == MP_ATTENTION_FUSED
                       ? mp__attention_fused_copy(f, &fused, &n_att,
                                                  &att_bytes)
                       : MP_OK;
    if (fused)
        S.f = fused;
    if (!st)
        st = synthesize(&S);
    syn_free(&S);
    mp_graph_destroy(fused);
    if (st) {
        mp_graph_destroy(S.g);
        return st;
    }
    S.B.n_attention_fused = n_att;
    S.B.attention_bytes = att_bytes;
    if (bd)
        *bd = S.B;
    *out = S.g;
    return MP_OK;
}

uint32_t mp__train_source(const mp_graph *t, uint32_t v, uint32_t *tensor)
{
    const char *n = t->nodes[v].name;
    uint32_t id;
    *tensor = MP_NONE;
    /* "d/X#sumK": the accumulation of forward tensor X's gradient */
    const char *hash = strrchr(n, '#');
    if (!strncmp(n, "d/", 2) && hash && !strncmp(hash, "#sum", 4)) {
        char x[512];
        snprintf(x, sizeof x, "%.*s", (int)(hash - n - 2), n + 2);
        if (mp_graph_find_tensor(t, x, &id) == MP_OK)
            *tensor = id;
        return MP_NONE;
    }
    /* "opt/W": the optimizer step of weight W */
    if (!strncmp(n, "opt/", 4) &&
        mp_graph_find_tensor(t, n + 4, &id) == MP_OK) {
        *tensor = id;
        return MP_NONE;
    }
    /* "X/grad", "X/grad_w", "X/grad_passK": the backward of node X */
    const char *g = NULL;
    for (const char *p = strstr(n, "/grad"); p; p = strstr(p + 1, "/grad"))
        g = p;
    if (!g)
        return MP_NONE;
    char x[512];
    snprintf(x, sizeof x, "%.*s", (int)(g - n), n);
    return mp_graph_find_node(t, x, &id) == MP_OK ? id : MP_NONE;
}
