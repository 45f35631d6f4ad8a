/*
 * memplan_runtime: a small CPU interpreter that runs a graph inside ONE
 * arena planned by memplan, the way a compiler's runtime would.
 *
 *   memplan_runtime GRAPH.json [--seed N] [--alignment BYTES] [--quiet]
 *                   [--tamper]
 *
 * 1. loads the graph (memplan JSON or node-link) through the public API,
 * 2. asks memplan for a plan (schedule + offsets) and verifies it,
 * 3. PLANNED run: allocates exactly one arena of the planned size and runs
 *    every COMPUTE step with each tensor at its planned offset (views at
 *    the memory of the tensor they view, weights and constants in their
 *    own persistent buffers),
 * 4. REFERENCE run: every arena tensor in its own allocation, freed at the
 *    plan's FREE step (so a lifetime the planner got wrong is a
 *    use-after-free that AddressSanitizer reports),
 * 5. compares the graph outputs of the two runs bit for bit.
 *
 * Exit status: 0 when the outputs are identical, 1 when they differ, 2 on
 * an error (unsupported op, planning failure, ...). --tamper moves one
 * tensor onto another that is still to be read (what a planner bug would
 * do), to show that the comparison catches it: it must then exit 1.
 *
 * Kernels (float32): MatMul (batched, broadcast), Add, Sub, Mul, Div
 * (numpy broadcasting), Relu, Gelu, Tanh, Sigmoid, Softmax,
 * LayerNormalization, Transpose, and the shape ops (Reshape, Flatten,
 * Squeeze, Unsqueeze, Identity: no work when memplan made them views,
 * else a copy). Anything else is an error naming the op.
 *
 * Only the public header <memplan/memplan.h> is used; this file builds
 * against an installed memplan (CMake find_package or pkg-config).
 */
#include <memplan/memplan.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANK MP_MAX_RANK

typedef struct runtime {
    mp_ctx *ctx;
    mp_graph *g;
    mp_plan *plan;
    uint32_t nt, nn;
    uint64_t seed;
    uint64_t alignment;
    /* per tensor */
    uint32_t *root;        /* the tensor whose memory it uses */
    uint64_t *voff;        /* its first byte there (a range view's offset) */
    uint8_t *persistent;   /* own buffer, same in both runs */
    uint64_t *offset;      /* arena offset (UINT64_MAX: no block) */
    unsigned char **mem;   /* data pointer in the current run */
    unsigned char **own;   /* reference run: own allocations */
} runtime;

static int fail(const char *what, const runtime *rt)
{
    fprintf(stderr, "memplan_runtime: %s%s%s\n", what,
            rt && rt->ctx ? ": " : "", rt && rt->ctx ? mp_ctx_message(rt->ctx) : "");
    return 2;
}

/* ---- deterministic data -------------------------------------------------- */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_name(const char *s, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Inputs and weights in [-1, 1); float constants in [0.5, 1.5) (divisors,
 * scales); integer constants zero (shape tensors of views). */
static void fill(const runtime *rt, uint32_t t)
{
    mp_tensor_info ti;
    mp_graph_tensor_info(rt->g, t, &ti);
    unsigned char *m = rt->mem[t];
    if (!m || !ti.bytes)
        return;
    if (ti.dtype != MP_DTYPE_FLOAT32) {
        memset(m, 0, ti.bytes);
        return;
    }
    float *f = (float *)m;
    uint64_t h = hash_name(ti.name, rt->seed);
    for (uint64_t i = 0; i < ti.bytes / 4; i++) {
        double u = (double)(mix(h + i) >> 11) / 9007199254740992.0;
        f[i] = ti.kind == MP_KIND_CONSTANT ? (float)(0.5 + u)
                                           : (float)(2 * u - 1);
    }
}

/* ---- shapes -------------------------------------------------------------- */
typedef struct shape {
    int rank;
    int64_t d[MAX_RANK];
    uint64_t n;
} shape;

static int get_shape(const runtime *rt, uint32_t t, shape *s)
{
    mp_tensor_info ti;
    if (mp_graph_tensor_info(rt->g, t, &ti) != MP_OK || ti.rank < 0)
        return -1;
    s->rank = ti.rank;
    s->n = 1;
    for (int i = 0; i < ti.rank; i++) {
        if (ti.dims[i] < 0)
            return -1;
        s->d[i] = ti.dims[i];
        s->n *= (uint64_t)ti.dims[i];
    }
    return 0;
}

/* Strides of `in` broadcast to the output shape `o` (0 along broadcast
 * axes). */
static void bcast_strides(const shape *in, const shape *o, int64_t *st)
{
    int64_t s = 1;
    for (int i = o->rank - 1, j = in->rank - 1; i >= 0; i--, j--) {
        if (j < 0 || in->d[j] == 1)
            st[i] = 0;
        else
            st[i] = s;
        if (j >= 0)
            s *= in->d[j];
    }
}

/* ---- kernels ------------------------------------------------------------- */
static float *F(const runtime *rt, uint32_t t) { return (float *)rt->mem[t]; }

static int k_binary(const runtime *rt, const mp_node_info *ni, char op)
{
    shape a, b, o;
    if (ni->n_inputs != 2 || get_shape(rt, ni->inputs[0], &a) ||
        get_shape(rt, ni->inputs[1], &b) || get_shape(rt, ni->outputs[0], &o))
        return -1;
    int64_t sa[MAX_RANK], sb[MAX_RANK], idx[MAX_RANK] = {0};
    bcast_strides(&a, &o, sa);
    bcast_strides(&b, &o, sb);
    const float *x = F(rt, ni->inputs[0]), *y = F(rt, ni->inputs[1]);
    float *z = F(rt, ni->outputs[0]);
    int64_t ia = 0, ib = 0;
    for (uint64_t i = 0; i < o.n; i++) {
        float u = x[ia], v = y[ib];
        z[i] = op == '+' ? u + v : op == '-' ? u - v : op == '*' ? u * v
                                                                 : u / v;
        for (int k = o.rank - 1; k >= 0; k--) {
            ia += sa[k];
            ib += sb[k];
            if (++idx[k] < o.d[k])
                break;
            ia -= sa[k] * o.d[k];
            ib -= sb[k] * o.d[k];
            idx[k] = 0;
        }
    }
    return 0;
}

static int k_unary(const runtime *rt, const mp_node_info *ni, const char *op)
{
    shape o;
    if (ni->n_inputs < 1 || get_shape(rt, ni->outputs[0], &o))
        return -1;
    const float *x = F(rt, ni->inputs[0]);
    float *y = F(rt, ni->outputs[0]);
    for (uint64_t i = 0; i < o.n; i++) {
        float v = x[i];
        if (strcmp(op, "Relu") == 0)
            y[i] = v > 0 ? v : 0;
        else if (strcmp(op, "Gelu") == 0)
            y[i] = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
        else if (strcmp(op, "Tanh") == 0)
            y[i] = tanhf(v);
        else
            y[i] = (float)(1.0 / (1.0 + exp(-v)));
    }
    return 0;
}

/* Y[b] = A[b] x B[b], batch dims broadcast; rank >= 2 both. */
static int k_matmul(const runtime *rt, const mp_node_info *ni)
{
    shape a, b, o;
    if (ni->n_inputs != 2 || get_shape(rt, ni->inputs[0], &a) ||
        get_shape(rt, ni->inputs[1], &b) ||
        get_shape(rt, ni->outputs[0], &o) || a.rank < 2 || b.rank < 2 ||
        o.rank < 2)
        return -1;
    int64_t M = a.d[a.rank - 2], K = a.d[a.rank - 1], N = b.d[b.rank - 1];
    if (b.d[b.rank - 2] != K)
        return -1;
    /* batch shapes: all but the last two dims */
    shape ab = a, bb = b, ob = o;
    ab.rank -= 2;
    bb.rank -= 2;
    ob.rank -= 2;
    ob.n = o.n / (uint64_t)(M * N);
    int64_t sa[MAX_RANK], sb[MAX_RANK], idx[MAX_RANK] = {0};
    bcast_strides(&ab, &ob, sa);
    bcast_strides(&bb, &ob, sb);
    const float *A = F(rt, ni->inputs[0]), *B = F(rt, ni->inputs[1]);
    float *Y = F(rt, ni->outputs[0]);
    int64_t ia = 0, ib = 0;
    for (uint64_t q = 0; q < ob.n; q++) {
        const float *Ap = A + ia * M * K, *Bp = B + ib * K * N;
        float *Yp = Y + (int64_t)q * M * N;
        for (int64_t i = 0; i < M; i++) {
            float *yr = Yp + i * N;
            for (int64_t j = 0; j < N; j++)
                yr[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                float av = Ap[i * K + k];
                const float *br = Bp + k * N;
                for (int64_t j = 0; j < N; j++)
                    yr[j] += av * br[j];
            }
        }
        for (int k = ob.rank - 1; k >= 0; k--) {
            ia += sa[k];
            ib += sb[k];
            if (++idx[k] < ob.d[k])
                break;
            ia -= sa[k] * ob.d[k];
            ib -= sb[k] * ob.d[k];
            idx[k] = 0;
        }
    }
    return 0;
}

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

static int k_softmax(const runtime *rt, const mp_node_info *ni, uint32_t id)
{
    shape x;
    if (get_shape(rt, ni->inputs[0], &x) || x.rank < 1)
        return -1;
    int64_t axis = -1;
    mp_graph_get_attr_int(rt->g, id, "axis", &axis);
    axis = norm_axis(axis, x.rank);
    if (axis < 0 || axis >= x.rank)
        return -1;
    int64_t outer = 1, inner = 1, d = x.d[axis];
    for (int i = 0; i < axis; i++)
        outer *= x.d[i];
    for (int i = (int)axis + 1; i < x.rank; i++)
        inner *= x.d[i];
    const float *in = F(rt, ni->inputs[0]);
    float *out = F(rt, ni->outputs[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < inner; r++) {
            const float *p = in + o * d * inner + r;
            float *q = out + o * d * inner + r;
            float mx = -INFINITY;
            for (int64_t k = 0; k < d; k++)
                if (p[k * inner] > mx)
                    mx = p[k * inner];
            double sum = 0;
            for (int64_t k = 0; k < d; k++) {
                float e = expf(p[k * inner] - mx);
                q[k * inner] = e;
                sum += e;
            }
            for (int64_t k = 0; k < d; k++)
                q[k * inner] = (float)(q[k * inner] / sum);
        }
    return 0;
}

static int k_layernorm(const runtime *rt, const mp_node_info *ni, uint32_t id)
{
    shape x;
    if (ni->n_inputs < 2 || get_shape(rt, ni->inputs[0], &x) || x.rank < 1)
        return -1;
    int64_t axis = -1;
    double eps = 1e-5;
    mp_graph_get_attr_int(rt->g, id, "axis", &axis);
    mp_graph_get_attr_float(rt->g, id, "epsilon", &eps);
    axis = norm_axis(axis, x.rank);
    if (axis < 0 || axis >= x.rank)
        return -1;
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < x.rank; i++)
        *(i < axis ? &rows : &cols) *= x.d[i];
    const float *in = F(rt, ni->inputs[0]), *sc = F(rt, ni->inputs[1]);
    const float *bi = ni->n_inputs > 2 && ni->inputs[2] != MP_NONE
                          ? F(rt, ni->inputs[2])
                          : NULL;
    float *out = F(rt, ni->outputs[0]);
    for (int64_t r = 0; r < rows; r++) {
        const float *p = in + r * cols;
        float *q = out + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mean += p[c];
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++)
            var += (p[c] - mean) * (p[c] - mean);
        var /= (double)cols;
        double inv = 1.0 / sqrt(var + eps);
        for (int64_t c = 0; c < cols; c++)
            q[c] = (float)((p[c] - mean) * inv * sc[c] + (bi ? bi[c] : 0));
    }
    return 0;
}

static int k_transpose(const runtime *rt, const mp_node_info *ni, uint32_t id)
{
    shape x, y;
    if (get_shape(rt, ni->inputs[0], &x) || get_shape(rt, ni->outputs[0], &y))
        return -1;
    int64_t perm[MAX_RANK];
    const int64_t *pv = NULL;
    uint32_t np = 0;
    if (mp_graph_get_attr_ints(rt->g, id, "perm", &pv, &np) == MP_OK) {
        if ((int)np != x.rank)
            return -1;
        memcpy(perm, pv, np * sizeof *perm);
    } else {
        for (int i = 0; i < x.rank; i++)
            perm[i] = x.rank - 1 - i;
    }
    int64_t xs[MAX_RANK], st[MAX_RANK], idx[MAX_RANK] = {0};
    int64_t s = 1;
    for (int i = x.rank - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x.d[i];
    }
    for (int i = 0; i < y.rank; i++)
        st[i] = xs[perm[i]];
    const float *in = F(rt, ni->inputs[0]);
    float *out = F(rt, ni->outputs[0]);
    int64_t ix = 0;
    for (uint64_t i = 0; i < y.n; i++) {
        out[i] = in[ix];
        for (int k = y.rank - 1; k >= 0; k--) {
            ix += st[k];
            if (++idx[k] < y.d[k])
                break;
            ix -= st[k] * y.d[k];
            idx[k] = 0;
        }
    }
    return 0;
}

static int is_shape_op(const char *op)
{
    return !strcmp(op, "Reshape") || !strcmp(op, "Flatten") ||
           !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") ||
           !strcmp(op, "Identity");
}

static int run_node(const runtime *rt, uint32_t id)
{
    mp_node_info ni;
    if (mp_graph_node_info(rt->g, id, &ni) != MP_OK)
        return -1;
    for (uint32_t i = 0; i < ni.n_outputs; i++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt->g, ni.outputs[i], &ti);
        if (ti.dtype != MP_DTYPE_FLOAT32) {
            fprintf(stderr, "memplan_runtime: node '%s': output '%s' is %s, "
                    "only float32 is supported\n", ni.name, ti.name,
                    mp_dtype_name(ti.dtype));
            return -1;
        }
    }
    const char *op = ni.op;
    int r;
    if (!strcmp(op, "MatMul"))
        r = k_matmul(rt, &ni);
    else if (!strcmp(op, "Add"))
        r = k_binary(rt, &ni, '+');
    else if (!strcmp(op, "Sub"))
        r = k_binary(rt, &ni, '-');
    else if (!strcmp(op, "Mul"))
        r = k_binary(rt, &ni, '*');
    else if (!strcmp(op, "Div"))
        r = k_binary(rt, &ni, '/');
    else if (!strcmp(op, "Relu") || !strcmp(op, "Gelu") ||
             !strcmp(op, "Tanh") || !strcmp(op, "Sigmoid"))
        r = k_unary(rt, &ni, op);
    else if (!strcmp(op, "Softmax"))
        r = k_softmax(rt, &ni, id);
    else if (!strcmp(op, "LayerNormalization"))
        r = k_layernorm(rt, &ni, id);
    else if (!strcmp(op, "Transpose"))
        r = k_transpose(rt, &ni, id);
    else if (is_shape_op(op)) {
        /* a view shares its input's memory: nothing to do; else copy */
        uint32_t x = ni.inputs[0], y = ni.outputs[0];
        mp_tensor_info ti;
        mp_graph_tensor_info(rt->g, y, &ti);
        if (rt->mem[y] != rt->mem[x])
            memmove(rt->mem[y], rt->mem[x], ti.bytes);
        r = 0;
    } else {
        fprintf(stderr, "memplan_runtime: node '%s': op %s has no kernel\n",
                ni.name, op);
        return -1;
    }
    if (r)
        fprintf(stderr, "memplan_runtime: node '%s' (%s): shapes not "
                "supported\n", ni.name, op);
    return r;
}

/* ---- the two runs ---------------------------------------------------------- */
/* Points every view at the memory of the tensor it views. */
static void resolve_views(runtime *rt)
{
    for (uint32_t t = 0; t < rt->nt; t++)
        if (rt->root[t] != t)
            rt->mem[t] = (unsigned char *)rt->mem[rt->root[t]] + rt->voff[t];
}

/* planned: arena != NULL. Returns 0 or -1. */
static int run(runtime *rt, unsigned char *arena, unsigned char **persist)
{
    const mp_step *steps = mp_plan_steps(rt->plan);
    uint32_t ns = mp_plan_num_steps(rt->plan);
    for (uint32_t t = 0; t < rt->nt; t++) {
        rt->mem[t] = NULL;
        rt->own[t] = NULL;
    }
    for (uint32_t t = 0; t < rt->nt; t++) {
        if (rt->root[t] != t)
            continue;
        if (rt->persistent[t]) {
            rt->mem[t] = persist[t];
            continue;
        }
        mp_tensor_info ti;
        mp_graph_tensor_info(rt->g, t, &ti);
        if (arena && rt->offset[t] != UINT64_MAX) {
            rt->mem[t] = arena + rt->offset[t];
        } else {
            rt->own[t] = malloc(ti.bytes ? ti.bytes : 1);
            if (!rt->own[t])
                return -1;
            rt->mem[t] = rt->own[t];
        }
    }
    resolve_views(rt);
    for (uint32_t t = 0; t < rt->nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt->g, t, &ti);
        if (ti.kind == MP_KIND_INPUT && rt->root[t] == t)
            fill(rt, t);
    }
    for (uint32_t s = 0; s < ns; s++) {
        if (steps[s].kind == MP_STEP_COMPUTE) {
            if (run_node(rt, steps[s].index))
                return -1;
        } else if (steps[s].kind == MP_STEP_FREE && !arena) {
            uint32_t t = steps[s].index;
            free(rt->own[t]);
            rt->own[t] = NULL;
        } else if (steps[s].kind != MP_STEP_FREE) {
            fprintf(stderr, "memplan_runtime: step kind %s not supported\n",
                    mp_step_kind_name(steps[s].kind));
            return -1;
        }
    }
    return 0;
}

static void free_own(runtime *rt)
{
    for (uint32_t t = 0; t < rt->nt; t++) {
        free(rt->own[t]);
        rt->own[t] = NULL;
    }
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int quiet = 0, tamper = 0;
    runtime rt;
    memset(&rt, 0, sizeof rt);
    rt.alignment = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rt.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--alignment") && i + 1 < argc)
            rt.alignment = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--tamper"))
            tamper = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: memplan_runtime GRAPH.json [--seed N] "
                    "[--alignment BYTES] [--quiet] [--tamper]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: memplan_runtime GRAPH.json [--seed N] "
                "[--alignment BYTES] [--quiet]\n");
        return 2;
    }
    if (rt.alignment < sizeof(float) || (rt.alignment & (rt.alignment - 1))) {
        fprintf(stderr, "memplan_runtime: alignment must be a power of two "
                ">= 4\n");
        return 2;
    }
    int rc = 2;
    unsigned char *arena = NULL, **persist = NULL;
    unsigned char *out_planned = NULL;
    rt.ctx = mp_ctx_create(NULL);
    if (!rt.ctx)
        return fail("out of memory", NULL);
    if (mp_graph_load(rt.ctx, path, &rt.g) != MP_OK) {
        rc = fail("loading the graph", &rt);
        goto out;
    }
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    opt.alignment = rt.alignment;
    if (mp_plan_create(rt.g, &opt, &rt.plan) != MP_OK) {
        rc = fail("planning", &rt);
        goto out;
    }
    if (mp_verify_plan(rt.g, rt.plan) != MP_OK) {
        rc = fail("the plan does not verify", &rt);
        goto out;
    }
    rt.nt = mp_graph_num_tensors(rt.g);
    rt.nn = mp_graph_num_nodes(rt.g);
    size_t nt1 = (size_t)rt.nt + 1;
    rt.root = calloc(nt1, sizeof *rt.root);
    rt.voff = calloc(nt1, sizeof *rt.voff);
    rt.persistent = calloc(nt1, 1);
    rt.offset = calloc(nt1, sizeof *rt.offset);
    rt.mem = calloc(nt1, sizeof *rt.mem);
    rt.own = calloc(nt1, sizeof *rt.own);
    persist = calloc(nt1, sizeof *persist);
    if (!rt.root || !rt.voff || !rt.persistent || !rt.offset || !rt.mem || !rt.own ||
        !persist) {
        rc = fail("out of memory", NULL);
        goto out;
    }
    /* storage roots, persistent tensors and planned offsets */
    uint64_t persistent_bytes = 0;
    for (uint32_t t = 0; t < rt.nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt.g, t, &ti);
        uint32_t r = t;
        uint64_t voff = 0;
        for (int hops = 0; hops < 64; hops++) {
            mp_tensor_info ri;
            mp_graph_tensor_info(rt.g, r, &ri);
            if (ri.alias_of == MP_NONE)
                break;
            voff += ri.view_offset; /* MP_VIEW_RANGE: bytes into alias_of */
            r = ri.alias_of;
        }
        rt.root[t] = r;
        rt.voff[t] = voff;
        rt.offset[t] = UINT64_MAX;
        rt.persistent[t] = ti.kind == MP_KIND_WEIGHT ||
                           ti.kind == MP_KIND_CONSTANT ||
                           ti.kind == MP_KIND_OPTIMIZER_STATE || ti.folded;
    }
    const mp_block *blocks = mp_plan_blocks(rt.plan);
    for (uint32_t i = 0; i < mp_plan_num_blocks(rt.plan); i++) {
        uint32_t t = blocks[i].tensor;
        if (rt.offset[t] != UINT64_MAX && rt.offset[t] != blocks[i].offset) {
            rc = fail("a tensor with two blocks (recompute) is not supported",
                      NULL);
            goto out;
        }
        rt.offset[t] = blocks[i].offset;
    }
    for (uint32_t t = 0; t < rt.nt; t++) {
        if (!rt.persistent[t] || rt.root[t] != t)
            continue;
        mp_tensor_info ti;
        mp_graph_tensor_info(rt.g, t, &ti);
        persist[t] = calloc(ti.bytes ? ti.bytes : 1, 1);
        if (!persist[t]) {
            rc = fail("out of memory", NULL);
            goto out;
        }
        persistent_bytes += ti.bytes;
        rt.mem[t] = persist[t];
        if (!ti.folded)
            fill(&rt, t);
    }
    const mp_figures *f = mp_plan_figures(rt.plan);
    if (tamper) {
        /* b written while a is live and read again later: b over a */
        uint32_t nb = mp_plan_num_blocks(rt.plan), done = 0;
        for (uint32_t i = 0; i < nb && !done; i++)
            for (uint32_t j = 0; j < nb && !done; j++) {
                const mp_block *a = &blocks[i], *b = &blocks[j];
                if (a->first < b->first && b->first + 1 < a->end &&
                    a->offset + b->size <= f->arena_bytes) {
                    rt.offset[b->tensor] = a->offset;
                    done = 1;
                }
            }
        if (!done) {
            rc = fail("--tamper: no pair of blocks to overlap", NULL);
            goto out;
        }
    }
    /* PLANNED: one arena */
    uint64_t arena_bytes = f->arena_bytes ? f->arena_bytes : 1;
    arena_bytes = (arena_bytes + rt.alignment - 1) / rt.alignment * rt.alignment;
    arena = aligned_alloc(rt.alignment, arena_bytes);
    if (!arena) {
        rc = fail("cannot allocate the arena", NULL);
        goto out;
    }
    /* poison: a tensor read before it is written shows up as a mismatch */
    memset(arena, 0xA5, arena_bytes);
    if (run(&rt, arena, persist)) {
        rc = fail("planned run failed", NULL);
        goto out;
    }
    uint64_t out_total = 0;
    for (uint32_t t = 0; t < rt.nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt.g, t, &ti);
        if (ti.is_output)
            out_total += ti.bytes;
    }
    out_planned = malloc(out_total ? out_total : 1);
    if (!out_planned) {
        rc = fail("out of memory", NULL);
        goto out;
    }
    uint64_t pos = 0;
    for (uint32_t t = 0; t < rt.nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt.g, t, &ti);
        if (ti.is_output) {
            memcpy(out_planned + pos, rt.mem[t], ti.bytes);
            pos += ti.bytes;
        }
    }
    free_own(&rt);
    /* REFERENCE: one allocation per tensor */
    if (run(&rt, NULL, persist)) {
        rc = fail("reference run failed", NULL);
        goto out;
    }
    rc = 0;
    pos = 0;
    for (uint32_t t = 0; t < rt.nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(rt.g, t, &ti);
        if (!ti.is_output)
            continue;
        int same = memcmp(out_planned + pos, rt.mem[t], ti.bytes) == 0;
        double sum = 0;
        if (ti.dtype == MP_DTYPE_FLOAT32)
            for (uint64_t i = 0; i < ti.bytes / 4; i++)
                sum += ((const float *)rt.mem[t])[i];
        if (!quiet || !same)
            printf("output %-28s %10llu bytes  sum %.6g  %s\n", ti.name,
                   (unsigned long long)ti.bytes, sum,
                   same ? "identical" : "DIFFERENT");
        if (!same)
            rc = 1;
        pos += ti.bytes;
    }
    free_own(&rt);
    printf("%s: %u nodes, arena %llu bytes (lower bound %llu, no reuse "
           "%llu), persistent %llu bytes: outputs %s\n",
           mp_graph_name(rt.g) ? mp_graph_name(rt.g) : path, rt.nn,
           (unsigned long long)f->arena_bytes,
           (unsigned long long)f->lower_bound_bytes,
           (unsigned long long)f->no_reuse_bytes,
           (unsigned long long)persistent_bytes,
           rc == 0 ? "identical to the reference run" : "DIFFER");
out:
    if (rt.own)
        free_own(&rt);
    if (persist)
        for (uint32_t t = 0; t < rt.nt; t++)
            free(persist[t]);
    free(persist);
    free(arena);
    free(out_planned);
    free(rt.root);
    free(rt.voff);
    free(rt.persistent);
    free(rt.offset);
    free(rt.mem);
    free(rt.own);
    mp_plan_destroy(rt.plan);
    mp_graph_destroy(rt.g);
    mp_ctx_destroy(rt.ctx);
    return rc;
}
