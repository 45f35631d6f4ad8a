/* Training-graph synthesis (issue 5): forward + loss + backward + optimizer
 * step from a forward graph, through the op registry's backward rules
 * (MP__OP_BWD). docs/training.md describes what is built and counted. */
#include "sched.h"

#include <stdio.h>
#include <string.h>

static const char *const optim_names[] = {"sgd", "momentum", "adam", "adamw",
                                          "adam8bit"};
static const char *const optim_ops[] = {"SGD", "Momentum", "Adam", "AdamW",
                                        "Adam8bit"};
static const char *const prec_names[] = {"fp32", "bf16-mixed", "fp16-mixed"};

const char *mp_optimizer_name(mp_optimizer o)
{
    return (unsigned)o < 5 ? optim_names[o] : "unknown";
}
mp_status mp_optimizer_parse(const char *name, mp_optimizer *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < 5; i++)
        if (strcmp(name, optim_names[i]) == 0) {
            *out = (mp_optimizer)i;
            return MP_OK;
        }
    return MP_ERR_INVALID_ARG;
}
const char *mp_precision_name(mp_precision p)
{
    return (unsigned)p < 3 ? prec_names[p] : "unknown";
}
mp_status mp_precision_parse(const char *name, mp_precision *out)
{
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < 3; i++)
        if (strcmp(name, prec_names[i]) == 0) {
            *out = (mp_precision)i;
            return MP_OK;
        }
    return MP_ERR_INVALID_ARG;
}
void mp_train_options_init(mp_train_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->optimizer = MP_OPTIM_ADAM;
    o->precision = MP_PRECISION_FP32;
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
    mp_precision prec;
    uint32_t *map;      /* forward tensor -> training tensor */
    uint32_t *grad;     /* forward tensor -> current gradient (training id) */
    uint32_t *n_part;   /* contributions so far */
    uint8_t *rg;        /* requires grad */
    uint8_t *saved;     /* training tensor read by a backward node */
    int have_dev;
    mp_device dev;
    char name[512];
} syn;

/* dtype of a forward tensor in the training graph */
static uint8_t train_dtype(const syn *S, const mp__tensor *t)
{
    if (S->prec != MP_PRECISION_FP32 && t->dtype == MP_DTYPE_FLOAT32 &&
        t->kind != MP_KIND_CONSTANT)
        return S->prec == MP_PRECISION_BF16_MIXED ? MP_DTYPE_BFLOAT16
                                                  : MP_DTYPE_FLOAT16;
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

static mp_status copy_attrs(syn *S, const mp__node *n, uint32_t id)
{
    mp_status st = MP_OK;
    for (uint32_t a = 0; a < n->n_attrs && !st; a++) {
        const mp__attr *at = &n->attrs[a];
        switch (at->type) {
        case MP__ATTR_INT:
            st = mp_graph_set_attr_int(S->g, id, at->name, at->v.i);
            break;
        case MP__ATTR_FLOAT:
            st = mp_graph_set_attr_float(S->g, id, at->name, at->v.f);
            break;
        case MP__ATTR_STRING:
            st = mp_graph_set_attr_string(S->g, id, at->name, at->v.s);
            break;
        case MP__ATTR_INTS:
            st = mp_graph_set_attr_ints(S->g, id, at->name, at->v.ints, at->n);
            break;
        case MP__ATTR_FLOATS:
            st = mp_graph_set_attr_floats(S->g, id, at->name, at->v.floats,
                                          at->n);
            break;
        }
    }
    return st;
}

static uint64_t tbytes(const mp_graph *g, uint32_t t)
{
    return t == MP_NONE ? 0 : g->tensors[t].bytes;
}

/* Cost of a node of the training graph from FLOPs and the bytes it moves. */
static mp_status set_cost(syn *S, uint32_t node, double flops)
{
    const mp__node *n = &S->g->nodes[node];
    double bytes = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        bytes += (double)tbytes(S->g, n->inputs[i]);
    for (uint32_t o = 0; o < n->n_out; o++)
        bytes += (double)tbytes(S->g, n->outputs[o]);
    double sec = -1;
    if (S->have_dev) {
        double pf = mp_device_flops(&S->dev, MP_DTYPE_FLOAT32);
        double a = pf > 0 && flops > 0 ? flops / pf : 0;
        double b = S->dev.mem_bw > 0 ? bytes / S->dev.mem_bw : 0;
        sec = (a > b ? a : b) + S->dev.kernel_overhead;
    }
    return mp_graph_set_node_cost(S->g, node, flops, bytes, sec);
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
        (fl & MP__OPF_VIEW))
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
    if (S->prec != MP_PRECISION_FP32)
        push_state(sv, &ns, "master", MP_DTYPE_FLOAT32, ne);
    switch (opt->optimizer) {
    case MP_OPTIM_SGD:
        break;
    case MP_OPTIM_MOMENTUM:
        push_state(sv, &ns, "momentum", MP_DTYPE_FLOAT32, ne);
        break;
    case MP_OPTIM_ADAM:
    case MP_OPTIM_ADAMW:
        push_state(sv, &ns, "m", MP_DTYPE_FLOAT32, ne);
        push_state(sv, &ns, "v", MP_DTYPE_FLOAT32, ne);
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
    /* temporaries of the update: Adam variants compute the step in a
     * parameter-sized fp32 buffer; SGD and momentum update in place */
    int64_t tn = opt->optimizer >= MP_OPTIM_ADAM ? ne : 0;
    uint32_t tmp, id;
    snprintf(S->name, sizeof S->name, "opt/%s/tmp", w->name);
    if ((st = add_shaped(S, S->name, MP_DTYPE_FLOAT32, 1, &tn,
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
        (unsigned)opt->precision > MP_PRECISION_FP16_MIXED)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "unknown optimizer or precision");
    mp_train_breakdown B;
    memset(&B, 0, sizeof B);
    syn S;
    memset(&S, 0, sizeof S);
    S.f = f;
    S.ctx = ctx;
    S.prec = opt->precision;
    S.have_dev = mp_device_builtin(ctx, "h200", &S.dev) == MP_OK;
    mp_ctx_clear(ctx);
    uint32_t nt = (uint32_t)f->n_tensors, nn = (uint32_t)f->n_nodes;
    size_t nt1 = (size_t)nt + 1;
    S.map = mp__alloc(ctx, nt1 * sizeof *S.map);
    S.grad = mp__alloc(ctx, nt1 * sizeof *S.grad);
    S.n_part = mp__calloc(ctx, nt1, sizeof *S.n_part);
    S.rg = mp__calloc(ctx, nt1, 1);
    uint32_t *buf_in = NULL, *buf_out = NULL, *outs = NULL;
    uint32_t *opt_head = NULL, *opt_next = NULL;
    uint8_t *trainable = NULL;
    mp_status st = MP_OK;
    if (!S.map || !S.grad || !S.n_part || !S.rg) {
        st = MP_ERR_NOMEM;
        goto fail;
    }
    if ((st = mp_graph_create(ctx, &S.g)))
        goto fail;
    if (f->name) {
        snprintf(S.name, sizeof S.name, "%s (training)", f->name);
        if ((st = mp_graph_set_name(S.g, S.name)))
            goto fail;
    }
    /* trainable: float weights, and the float folded constants of rank
     * >= 1 that a computed node reads (a weight transposed or cast at
     * load, or generated by nodes as in the corpus's light models: the
     * folded tensor is what the computation reads, and it has the
     * weight's size) */
    bool any_weight = false;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &f->tensors[t];
        S.map[t] = S.grad[t] = MP_NONE;
        S.rg[t] = tt->kind == MP_KIND_WEIGHT && tt->producer == MP_NONE &&
                  is_float(tt->dtype);
        any_weight |= S.rg[t] != 0;
    }
    (void)any_weight;
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &f->tensors[t];
        if (!(tt->flags & MP__TF_FOLDED) || tt->rank < 1 ||
            tt->dtype == MP_DTYPE_UNDEFINED || !is_float(tt->dtype))
            continue;
        for (uint32_t c = 0; c < tt->n_cons; c++) {
            const mp__node *cn = &f->nodes[f->cons[tt->cons_begin + c]];
            for (uint32_t o = 0; o < cn->n_out; o++)
                if (!mp__kind_persistent(f->tensors[cn->outputs[o]].kind))
                    S.rg[t] = 1;
        }
    }
    trainable = mp__alloc(ctx, nt1);
    if (!trainable) {
        st = MP_ERR_NOMEM;
        goto fail;
    }
    memcpy(trainable, S.rg, nt1);
    for (uint32_t k = 0; k < nn; k++) {
        const mp__node *n = &f->nodes[f->topo[k]];
        if (MP__OP_BWD(n->def) == MP__BWD_NONDIFF)
            continue;
        bool any = false;
        for (uint32_t i = 0; i < n->n_in; i++)
            if (n->inputs[i] != MP_NONE && S.rg[n->inputs[i]])
                any = true;
        for (uint32_t o = 0; o < n->n_out && any; o++) {
            const mp__tensor *to = &f->tensors[n->outputs[o]];
            S.rg[n->outputs[o]] = is_float(to->dtype) &&
                                  !mp__kind_persistent(to->kind);
        }
    }
    /* forward tensors */
    for (uint32_t t = 0; t < nt; t++) {
        const mp__tensor *tt = &f->tensors[t];
        mp_tensor_kind k = (mp_tensor_kind)tt->declared_kind;
        if (k == MP_KIND_OUTPUT)
            k = MP_KIND_ACTIVATION;
        if ((st = add_like(&S, tt->name, tt, train_dtype(&S, tt), k,
                           &S.map[t])))
            goto fail;
    }
    size_t cap = 16;
    for (uint32_t v = 0; v < nn; v++)
        if ((size_t)f->nodes[v].n_in + 2 * (size_t)f->nodes[v].n_out + 8 > cap)
            cap = (size_t)f->nodes[v].n_in + 2 * (size_t)f->nodes[v].n_out + 8;
    cap += nt; /* the loss reads every output */
    buf_in = mp__alloc(ctx, cap * sizeof *buf_in);
    buf_out = mp__alloc(ctx, cap * sizeof *buf_out);
    /* extra saved outputs (stats, masks, indices) per forward node */
    uint32_t *extra = mp__alloc(ctx, 2 * ((size_t)nn + 1) * sizeof *extra);
    outs = extra;
    uint32_t *nmap = extra ? extra + nn + 1 : NULL;
    if (!buf_in || !buf_out || !extra) {
        st = MP_ERR_NOMEM;
        goto fail;
    }
    /* forward nodes */
    for (uint32_t k = 0; k < nn; k++) {
        uint32_t v = f->topo[k];
        const mp__node *n = &f->nodes[v];
        unsigned rule = MP__OP_BWD(n->def);
        uint32_t nin = 0, nout = 0;
        for (uint32_t i = 0; i < n->n_in; i++)
            buf_in[nin++] = n->inputs[i] == MP_NONE ? MP_NONE
                                                    : S.map[n->inputs[i]];
        for (uint32_t o = 0; o < n->n_out; o++)
            buf_out[nout++] = S.map[n->outputs[o]];
        extra[v] = MP_NONE;
        bool trains = false;
        for (uint32_t o = 0; o < n->n_out; o++)
            trains |= S.rg[n->outputs[o]] != 0;
        const mp__tensor *x0 =
            n->n_in && n->inputs[0] != MP_NONE ? &f->tensors[n->inputs[0]]
                                               : NULL;
        const mp__tensor *y0 = n->n_out ? &f->tensors[n->outputs[0]] : NULL;
        if (trains && (rule == MP__BWD_NORM_ROWS ||
                       rule == MP__BWD_NORM_CHANNELS) &&
            x0 && dims_known(x0) && x0->rank >= 2) {
            int64_t rows = 1;
            if (rule == MP__BWD_NORM_ROWS) {
                const mp__attr *ax = mp__node_attr(n, "axis");
                int64_t a = ax && ax->type == MP__ATTR_INT ? ax->v.i : -1;
                if (a < 0)
                    a += x0->rank;
                for (int64_t d = 0; d < a && d < x0->rank; d++)
                    rows *= x0->dims[d];
            } else {
                rows = x0->dims[1];
            }
            int64_t dims[2] = {2, rows};
            snprintf(S.name, sizeof S.name, "%s/stats", n->name);
            if ((st = add_shaped(&S, S.name, MP_DTYPE_FLOAT32, 2, dims,
                                 MP_KIND_ACTIVATION, &extra[v])))
                goto fail;
        } else if (trains && (rule == MP__BWD_MASK || rule == MP__BWD_INDICES) &&
                   y0 && dims_known(y0)) {
            if (n->n_out >= 2) {
                extra[v] = S.map[n->outputs[1]];
            } else {
                snprintf(S.name, sizeof S.name, "%s/%s", n->name,
                         rule == MP__BWD_MASK ? "mask" : "indices");
                if ((st = add_shaped(&S, S.name,
                                     rule == MP__BWD_MASK ? MP_DTYPE_BOOL
                                                         : MP_DTYPE_INT64,
                                     y0->rank, y0->dims, MP_KIND_ACTIVATION,
                                     &extra[v])))
                    goto fail;
            }
        }
        if (extra[v] != MP_NONE && (n->n_out < 2 || rule == MP__BWD_NORM_ROWS ||
                                    rule == MP__BWD_NORM_CHANNELS))
            buf_out[nout++] = extra[v];
        uint32_t id;
        if ((st = add_node(&S, n->name, n->op, n->domain, buf_in, nin, buf_out,
                           nout, MP_PHASE_FORWARD, &id)))
            goto fail;
        nmap[v] = id;
        if ((st = copy_attrs(&S, n, id)))
            goto fail;
        double fl = n->flops, by = n->bytes_moved, sec = n->seconds;
        if (sec < 0 && fl < 0 && S.have_dev) {
            mp_op_cost c;
            if (mp_node_estimate(f, v, &S.dev, &c) == MP_OK) {
                fl = c.flops;
                by = c.bytes;
                sec = c.seconds;
            }
            mp_ctx_clear(ctx);
        }
        if ((st = mp_graph_set_node_cost(S.g, id, fl, by, sec)))
            goto fail;
        B.n_forward++;
    }
    /* loss over the differentiable outputs */
    uint32_t n_lo = 0;
    for (uint32_t t = 0; t < nt; t++)
        if ((f->tensors[t].flags & MP__TF_OUTPUT) && S.rg[t])
            buf_in[n_lo++] = S.map[t];
    if (!n_lo) {
        st = mp__err(ctx, MP_ERR_GRAPH,
                    "training: no graph output depends on a trainable weight "
                    "through differentiable ops");
        goto fail;
    }
    {
        uint32_t loss, id;
        int64_t none = 0;
        if ((st = add_shaped(&S, "loss", MP_DTYPE_FLOAT32, 0, &none,
                             MP_KIND_OUTPUT, &loss)) ||
            (st = add_node(&S, "loss", "Loss", "memplan", buf_in, n_lo, &loss,
                           1, MP_PHASE_FORWARD, &id)) ||
            (st = mp_graph_mark_output(S.g, loss)) ||
            (st = set_cost(&S, id, 0)))
            goto fail;
        uint32_t k = 0;
        for (uint32_t t = 0; t < nt; t++)
            if ((f->tensors[t].flags & MP__TF_OUTPUT) && S.rg[t]) {
                if ((st = new_partial(&S, t, &buf_out[k])))
                    goto fail;
                if ((st = accumulate(&S, t, buf_out[k])))
                    goto fail;
                k++;
            }
        if ((st = add_node(&S, "loss/grad", "LossGrad", "memplan", buf_in,
                           n_lo, buf_out, k, MP_PHASE_BACKWARD, &id)) ||
            (st = set_cost(&S, id, 0)))
            goto fail;
        B.n_backward++;
    }
    /* step_in_backward: the optimizer step of a trainable tensor comes
     * right after the backward node of its first forward reader (the last
     * contribution to its gradient): opt_head[k] lists the tensors whose
     * first reader is at topological position k, ascending */
    if (opt->step_in_backward) {
        opt_head = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *opt_head);
        opt_next = mp__alloc(ctx, nt1 * sizeof *opt_next);
        uint32_t *tpos = mp__alloc(ctx, ((size_t)nn + 1) * sizeof *tpos);
        if (!opt_head || !opt_next || !tpos) {
            mp__dealloc(ctx, tpos);
            st = MP_ERR_NOMEM;
            goto fail;
        }
        for (uint32_t k = 0; k <= nn; k++)
            opt_head[k] = MP_NONE;
        for (uint32_t k = 0; k < nn; k++)
            tpos[f->topo[k]] = k;
        for (uint32_t t = nt; t-- > 0;) {
            const mp__tensor *tt = &f->tensors[t];
            if (!trainable[t] || !tt->n_cons)
                continue;
            uint32_t first = nn;
            for (uint32_t c = 0; c < tt->n_cons; c++) {
                uint32_t q = tpos[f->cons[tt->cons_begin + c]];
                if (q < first)
                    first = q;
            }
            opt_next[t] = opt_head[first];
            opt_head[first] = t;
        }
        mp__dealloc(ctx, tpos);
    }
    /* backward, in reverse topological order */
    for (uint32_t k = nn; k-- > 0;) {
        uint32_t v = f->topo[k];
        const mp__node *n = &f->nodes[v];
        unsigned rule = MP__OP_BWD(n->def);
        /* the steps whose gradients the previous iteration completed */
        for (uint32_t t = opt_head ? opt_head[k + 1] : MP_NONE; t != MP_NONE;
             t = opt_next[t])
            if (S.grad[t] != MP_NONE &&
                (st = add_opt_step(&S, opt, t, buf_in, &B)))
                goto fail;
        if (rule == MP__BWD_NONDIFF)
            continue;
        uint32_t nin = 0, nout = 0;
        for (uint32_t o = 0; o < n->n_out; o++)
            if (S.grad[n->outputs[o]] != MP_NONE)
                buf_in[nin++] = S.grad[n->outputs[o]];
        if (!nin)
            continue;
        /* inputs that take a gradient, each once */
        uint32_t want[64], nw = 0;
        for (uint32_t i = 0; i < n->n_in && nw < 64; i++) {
            uint32_t x = n->inputs[i];
            if (x == MP_NONE || !S.rg[x])
                continue;
            bool dup = false;
            for (uint32_t j = 0; j < nw; j++)
                dup |= want[j] == x;
            if (!dup)
                want[nw++] = x;
        }
        if (!nw)
            continue;
        /* gradients passed through unchanged (Add's, Sum's and Sub's first
         * input of output 0's shape) are views of the output gradient;
         * the others (broadcast inputs) keep the op's backward node */
        if (nin == 1) {
            uint32_t keep = 0;
            for (uint32_t j = 0; j < nw; j++) {
                uint32_t pos = grad_pass_pos(&S, n, want[j]);
                if (pos == MP_NONE)
                    want[keep++] = want[j];
                else if ((st = add_grad_view(&S, n, want[j], pos, buf_in[0])))
                    goto fail;
                else
                    B.n_backward++;
            }
            if (!(nw = keep))
                continue;
        }
        const char *op;
        char opname[128];
        if ((n->def->flags & MP__OPF_VIEW) && nw == 1 && nin == 1) {
            op = "Identity"; /* the gradient of a view is a view */
        } else {
            snprintf(opname, sizeof opname, "%sGrad", n->op);
            op = opname;
            /* saved tensors by the backward rule */
            switch (rule) {
            case MP__BWD_INPUTS:
                for (uint32_t i = 0; i < n->n_in; i++)
                    if (n->inputs[i] != MP_NONE)
                        buf_in[nin++] = S.map[n->inputs[i]];
                break;
            case MP__BWD_OUTPUT:
                buf_in[nin++] = S.map[n->outputs[0]];
                break;
            case MP__BWD_INPUT0:
            case MP__BWD_NORM_ROWS:
            case MP__BWD_NORM_CHANNELS:
            case MP__BWD_INDICES:
                if (n->n_in && n->inputs[0] != MP_NONE)
                    buf_in[nin++] = S.map[n->inputs[0]];
                if (rule != MP__BWD_INPUT0)
                    for (uint32_t i = 1; i < n->n_in; i++)
                        if (n->inputs[i] != MP_NONE &&
                            mp__kind_persistent(f->tensors[n->inputs[i]].kind))
                            buf_in[nin++] = S.map[n->inputs[i]];
                if (extra[v] != MP_NONE)
                    buf_in[nin++] = extra[v];
                break;
            case MP__BWD_MASK:
                if (extra[v] != MP_NONE)
                    buf_in[nin++] = extra[v];
                break;
            default:
                break;
            }
        }
        /* split_weight_grad: the trainable tensors' gradients come from a
         * node of their own (NAME/grad_w), after the input gradients'
         * (NAME/grad), as frameworks run the data and the weight gradient
         * as two kernels; want is reordered, inputs first */
        uint32_t nwt = 0;
        if (opt->split_weight_grad && op == opname) {
            uint32_t tmp[64], nt2 = 0;
            for (uint32_t j = 0; j < nw; j++)
                if (!trainable[want[j]])
                    tmp[nt2++] = want[j];
            for (uint32_t j = 0; j < nw; j++)
                if (trainable[want[j]])
                    tmp[nt2++] = want[j];
            for (uint32_t j = 0; j < nw; j++)
                nwt += trainable[want[j]] != 0;
            if (nwt == nw)
                nwt = 0; /* only weight gradients: one node */
            else
                memcpy(want, tmp, nw * sizeof *want);
        }
        for (uint32_t j = 0; j < nw; j++)
            if ((st = new_partial(&S, want[j], &buf_out[nout++])))
                goto fail;
        const mp__node *fn = &S.g->nodes[nmap[v]]; /* its forward copy */
        double ffl = fn->flops > 0 ? fn->flops : 0;
        for (int part = 0; part < (nwt ? 2 : 1); part++) {
            snprintf(S.name, sizeof S.name, part ? "%s/grad_w" : "%s/grad",
                     n->name);
            uint32_t id, o0 = part ? nw - nwt : 0;
            uint32_t no = nwt ? (part ? nwt : nw - nwt) : nout;
            if ((st = add_node(&S, S.name, op,
                               strcmp(op, "Identity") ? "memplan" : "",
                               buf_in, nin, buf_out + o0, no,
                               MP_PHASE_BACKWARD, &id)))
                goto fail;
            /* the INPUTS rule's two products: one per node when split;
             * other rules' weight gradients are reductions (bytes only) */
            double fl = rule == MP__BWD_INPUTS ? (nwt ? ffl : 2 * ffl)
                        : part ? 0 : ffl;
            if ((st = set_cost(&S, id, fl)))
                goto fail;
            B.n_backward++;
        }
        for (uint32_t j = 0; j < nw; j++)
            if ((st = accumulate(&S, want[j], buf_out[j])))
                goto fail;
    }
    for (uint32_t t = opt_head ? opt_head[0] : MP_NONE; t != MP_NONE;
         t = opt_next[t])
        if (S.grad[t] != MP_NONE &&
            (st = add_opt_step(&S, opt, t, buf_in, &B)))
            goto fail;
    mp__dealloc(ctx, opt_head);
    mp__dealloc(ctx, opt_next);
    opt_head = opt_next = NULL;
    /* optimizer step per trainable weight, after the backward pass (or,
     * with step_in_backward, already done in it) */
    for (uint32_t t = 0; t < nt && !opt->step_in_backward; t++)
        if (trainable[t] && S.grad[t] != MP_NONE &&
            (st = add_opt_step(&S, opt, t, buf_in, &B)))
            goto fail;
    mp__dealloc(ctx, trainable);
    trainable = NULL;
    if ((st = mp_graph_finalize(S.g)))
        goto fail;
    /* saved: forward storage roots in the arena that backward nodes read */
    {
        mp_graph *g = S.g;
        uint8_t *seen = mp__calloc(ctx, g->n_tensors + 1, 1);
        if (!seen) {
            st = MP_ERR_NOMEM;
            goto fail;
        }
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
                B.saved_bytes += tr->bytes;
            }
        }
        mp__dealloc(ctx, seen);
        /* optimizer nodes: weight, gradient, [master,] states -> tmp */
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            const mp__node *n = &g->nodes[v];
            if (n->phase != MP_PHASE_OPTIMIZER || n->n_in < 2)
                continue;
            B.weight_bytes += g->tensors[n->inputs[0]].bytes;
            B.gradient_bytes += g->tensors[n->inputs[1]].bytes;
            for (uint32_t i = 2; i < n->n_in; i++) {
                if (i == 2 && S.prec != MP_PRECISION_FP32)
                    B.master_weight_bytes += g->tensors[n->inputs[i]].bytes;
                else
                    B.optimizer_bytes += g->tensors[n->inputs[i]].bytes;
            }
            if (n->n_out && g->tensors[n->outputs[0]].bytes > B.temporary_bytes)
                B.temporary_bytes = g->tensors[n->outputs[0]].bytes;
        }
        uint64_t pers = mp__plan_persistent_bytes(g);
        uint64_t train = B.weight_bytes + B.master_weight_bytes +
                         B.optimizer_bytes;
        B.frozen_bytes = pers > train ? pers - train : 0;
    }
    mp__dealloc(ctx, S.map);
    mp__dealloc(ctx, S.grad);
    mp__dealloc(ctx, S.n_part);
    mp__dealloc(ctx, S.rg);
    mp__dealloc(ctx, buf_in);
    mp__dealloc(ctx, buf_out);
    mp__dealloc(ctx, outs);
    if (bd)
        *bd = B;
    *out = S.g;
    return MP_OK;
fail:
    mp__dealloc(ctx, trainable);
    mp__dealloc(ctx, opt_head);
    mp__dealloc(ctx, opt_next);
    mp_graph_destroy(S.g);
    mp__dealloc(ctx, S.map);
    mp__dealloc(ctx, S.grad);
    mp__dealloc(ctx, S.n_part);
    mp__dealloc(ctx, S.rg);
    mp__dealloc(ctx, buf_in);
    mp__dealloc(ctx, buf_out);
    mp__dealloc(ctx, outs);
    return st;
}
