/* Serving plans for LLMs (memplan/serve.h, docs/serving.md): the decoder
 * graph of one forward pass built from a config and planned as any graph,
 * the weights by precision, the KV cache by dtype, layout and window, the
 * CUDA graph pool, and what is left of the GPU for the cache. */
#include "planner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

/* ---- names ---------------------------------------------------------------- */
static const char *const wf_names[] = {"16bit", "int8", "int4", "fp8"};

const char *mp_weight_format_name(mp_weight_format f)
{
    return (unsigned)f < 4 ? wf_names[f] : "unknown";
}

mp_status mp_weight_format_parse(const char *name, mp_weight_format *out)
{
    static const char *const alias16[] = {"bf16", "fp16", "float16",
                                          "bfloat16"};
    if (!name || !out)
        return MP_ERR_INVALID_ARG;
    for (unsigned i = 0; i < 4; i++)
        if (strcmp(name, wf_names[i]) == 0) {
            *out = (mp_weight_format)i;
            return MP_OK;
        }
    for (unsigned i = 0; i < 4; i++)
        if (strcmp(name, alias16[i]) == 0) {
            *out = MP_WEIGHTS_16BIT;
            return MP_OK;
        }
    return MP_ERR_NOT_FOUND;
}

const char *mp_serve_binding_name(mp_serve_binding b)
{
    static const char *const n[] = {"nothing fits", "KV cache memory",
                                    "max-seqs"};
    return (unsigned)b < 3 ? n[b] : "unknown";
}

void mp_serve_options_init(mp_serve_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->group_size = 128;
    o->kv_paged = 1;
    o->block_size = 16;
    o->max_batched_tokens = 8192;
    o->max_seqs = 256;
    o->graph_sizes_default = 1;
    o->tp = 1;
    o->gpu_util = 0.9;
    o->runtime_reserve = UINT64_MAX;
    o->alignment = 256;
}

/* ---- the model on one rank ----------------------------------------------- */
typedef struct rank_dims {
    uint64_t h, hd, heads, kv, ffn, vocab, layers, experts, topk;
    uint64_t b;        /* bytes of the 16-bit dtype */
    mp_dtype dt;
    int gated;
} rank_dims;

static mp_status check_model(mp_ctx *ctx, const mp_llm_config *m,
                             const mp_serve_options *o, rank_dims *r)
{
    unsigned bits = mp_dtype_bits(m->dtype);
    if (!m->layers || !m->hidden || !m->heads || !m->kv_heads || !m->ffn ||
        !m->vocab || bits < 8)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "model config '%s': layers, hidden size, heads, KV "
                       "heads, FFN size, vocabulary size (vocab_size) and a "
                       "dtype of 8 bits or more are needed", m->name);
    if (o->tp == 0 || m->heads % o->tp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "--tp %u: the %u attention heads of '%s' do not "
                       "split over %u ranks; give a divisor of %u",
                       o->tp, m->heads, m->name, o->tp, m->heads);
    if (m->kv_heads >= o->tp ? m->kv_heads % o->tp : o->tp % m->kv_heads)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "--tp %u: the %u KV heads of '%s' neither split over "
                       "nor replicate evenly across %u ranks; give a "
                       "divisor or a multiple of %u",
                       o->tp, m->kv_heads, m->name, o->tp, m->kv_heads);
    if (m->ffn % o->tp)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                       "--tp %u: the FFN size %u does not split over %u "
                       "ranks", o->tp, m->ffn, o->tp);
    r->h = m->hidden;
    r->hd = m->head_dim ? m->head_dim : m->hidden / m->heads;
    r->heads = m->heads / o->tp;
    /* fewer KV heads than ranks: each rank holds a copy of one (vLLM) */
    r->kv = m->kv_heads >= o->tp ? m->kv_heads / o->tp : 1;
    r->ffn = m->ffn / o->tp;
    r->vocab = (m->vocab + o->tp - 1) / o->tp;
    r->layers = m->layers;
    r->experts = m->experts > 1 ? m->experts : 0;
    r->topk = r->experts ? m->experts_per_tok : 0;
    r->b = bits / 8;
    r->dt = m->dtype;
    r->gated = m->mlp_matrices == 3;
    return MP_OK;
}

static mp_status overflow(mp_ctx *ctx, const char *what)
{
    return mp__err(ctx, MP_ERR_OVERFLOW, "serving plan: %s does not fit in "
                   "64 bits", what);
}

/* a x b x c, checked */
static bool mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *r)
{
    uint64_t t;
    return mp__mul_u64(a, b, &t) && mp__mul_u64(t, c, r);
}

/* Bytes of a K x N linear weight in format f (groups of g input channels;
 * 0: one group per output channel): int4 packs two weights a byte with an
 * fp16 scale and a 4-bit zero point per group and output channel
 * (GPTQ/AWQ), int8 one byte with an fp16 scale per group, fp8 one byte and
 * one fp32 scale per matrix. */
static bool linear_bytes(uint64_t k, uint64_t n, const mp_serve_options *o,
                         uint64_t b16, uint64_t *out)
{
    uint64_t kn, groups, sc;
    if (!mp__mul_u64(k, n, &kn))
        return false;
    groups = o->group_size ? (k + o->group_size - 1) / o->group_size : 1;
    switch (o->weights) {
    case MP_WEIGHTS_INT4:
        return mp__mul_u64(groups, n, &sc) && sc <= UINT64_MAX / 3 &&
               mp__add_u64(kn / 2 + kn % 2, 2 * sc + sc / 2 + sc % 2, out);
    case MP_WEIGHTS_INT8:
        return mp__mul_u64(groups, n, &sc) && sc <= UINT64_MAX / 2 &&
               mp__add_u64(kn, 2 * sc, out);
    case MP_WEIGHTS_FP8:
        return mp__add_u64(kn, 4, out);
    default:
        return mp__mul_u64(kn, b16, out);
    }
}

/* ---- the graph builder ---------------------------------------------------
 * With g NULL it only sums the weights' bytes (the weights of a rank
 * without building anything). */
typedef struct bld {
    mp_ctx *ctx;
    mp_graph *g;
    const mp_llm_config *m;
    const mp_serve_options *o;
    rank_dims r;
    uint64_t weights;
    uint64_t logits, sampler;
    uint32_t nodes, last_node;
    char nm[96];
    /* a generation's graph (mp_serve_generation_graph): the weights are
     * declared first (weights_only), then each forward pass looks them up
     * by name; its tensors and nodes are named "stepN/..." (pfx) */
    int gen, weights_only;
    char pfx[24];
    const uint32_t *kcache, *vcache; /* per layer: the caches */
    uint32_t table;     /* the block table (MP_NONE: contiguous) */
    uint32_t block_size, seqs, past, qlen; /* this pass */
    uint32_t ids;       /* the token ids read (MP_NONE: an input) */
    const int64_t *ids_value; /* the input's values (the prompt) */
    uint32_t sampled, logits_f32; /* out: this pass's */
} bld;

static void bld_init(bld *b, mp_ctx *ctx, const mp_llm_config *m)
{
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    b->m = m;
    b->table = b->ids = b->sampled = b->logits_f32 = MP_NONE;
}

/* A tensor named b->nm (a generation's per-pass tensors prefixed); none
 * but weights while the weights are declared */
static mp_status add_t(bld *b, mp_dtype dt, int rank, const int64_t *dims,
                       uint64_t bytes, mp_tensor_kind kind, uint32_t *id)
{
    if (b->weights_only && kind != MP_KIND_WEIGHT) {
        *id = MP_NONE;
        return MP_OK;
    }
    char nm[sizeof b->pfx + sizeof b->nm];
    snprintf(nm, sizeof nm, "%s%s", kind == MP_KIND_WEIGHT ? "" : b->pfx,
             b->nm);
    mp_tensor_desc d = {nm, dt, rank, dims, bytes, kind};
    return mp_graph_add_tensor(b->g, &d, id);
}

/* A generation's forward passes read the weights declared before */
static int reuse_weights(const bld *b)
{
    return b->g && b->gen && !b->weights_only;
}

/* A weight of `bytes` (shape [k, n] in the 16-bit dtype, for shape
 * inference; its bytes those of its format). */
static mp_status weight(bld *b, const char *name, uint64_t k, uint64_t n,
                        uint64_t bytes, uint32_t *id)
{
    if (reuse_weights(b))
        return mp_graph_find_tensor(b->g, name, id);
    if (!mp__add_u64(b->weights, bytes, &b->weights))
        return overflow(b->ctx, "the weights' bytes");
    if (!b->g)
        return MP_OK;
    snprintf(b->nm, sizeof b->nm, "%s", name);
    int64_t d[2] = {(int64_t)k, (int64_t)n};
    return add_t(b, b->r.dt, 2, d, bytes, MP_KIND_WEIGHT, id);
}

/* A linear layer's weight: [k, n] in the 16-bit dtype, or its packed
 * bytes (uint8) in a quantized format */
static mp_status linear_w(bld *b, const char *name, uint64_t k, uint64_t n,
                          uint32_t *id)
{
    uint64_t bytes;
    if (!linear_bytes(k, n, b->o, b->r.b, &bytes))
        return overflow(b->ctx, "a weight's bytes");
    if (b->o->weights == MP_WEIGHTS_16BIT)
        return weight(b, name, k, n, bytes, id);
    if (reuse_weights(b))
        return mp_graph_find_tensor(b->g, name, id);
    if (!mp__add_u64(b->weights, bytes, &b->weights))
        return overflow(b->ctx, "the weights' bytes");
    if (!b->g)
        return MP_OK;
    snprintf(b->nm, sizeof b->nm, "%s", name);
    int64_t d[1] = {(int64_t)bytes};
    return add_t(b, MP_DTYPE_UINT8, 1, d, 0, MP_KIND_WEIGHT, id);
}

/* A 16-bit weight of n elements (norms, biases) */
static mp_status vec_w(bld *b, const char *name, uint64_t n, uint32_t *id)
{
    uint64_t bytes;
    if (reuse_weights(b))
        return mp_graph_find_tensor(b->g, name, id);
    if (!mp__mul_u64(n, b->r.b, &bytes))
        return overflow(b->ctx, "a weight's bytes");
    if (!mp__add_u64(b->weights, bytes, &b->weights))
        return overflow(b->ctx, "the weights' bytes");
    if (!b->g)
        return MP_OK;
    snprintf(b->nm, sizeof b->nm, "%s", name);
    int64_t d[1] = {(int64_t)n};
    return add_t(b, b->r.dt, 1, d, 0, MP_KIND_WEIGHT, id);
}

/* An activation [1, t, n] of dtype dt; n 0: shape left to inference. */
static mp_status act(bld *b, const char *name, mp_dtype dt, uint64_t t,
                     uint64_t n, uint32_t *id)
{
    if (!b->g)
        return MP_OK;
    snprintf(b->nm, sizeof b->nm, "%s", name);
    int64_t d[3] = {1, (int64_t)t, (int64_t)n};
    return add_t(b, dt, n ? 3 : -1, d, 0, MP_KIND_ACTIVATION, id);
}

static mp_status node_dom(bld *b, const char *name, const char *op,
                          const char *domain, const uint32_t *in,
                          uint32_t nin, const uint32_t *out, uint32_t nout,
                          uint32_t *id)
{
    if (!b->g || b->weights_only)
        return MP_OK;
    char nm[sizeof b->pfx + 96];
    snprintf(nm, sizeof nm, "%s%s", b->pfx, name);
    mp_node_desc d = {nm, op, domain, in, nin, out, nout, MP_PHASE_FORWARD};
    uint32_t nid;
    mp_status st = mp_graph_add_node(b->g, &d, &nid);
    if (!st) {
        b->nodes++;
        b->last_node = nid;
    }
    if (id)
        *id = nid;
    return st;
}

static mp_status node(bld *b, const char *name, const char *op,
                      const uint32_t *in, uint32_t nin, const uint32_t *out,
                      uint32_t nout, uint32_t *id)
{
    return node_dom(b, name, op, NULL, in, nin, out, nout, id);
}

/* y = op(ins) with y [1, t, n] (n 0: inferred) */
static mp_status op1(bld *b, const char *name, const char *op,
                     const uint32_t *in, uint32_t nin, mp_dtype dt,
                     uint64_t t, uint64_t n, uint32_t *y)
{
    char tn[96];
    snprintf(tn, sizeof tn, "%s", name);
    mp_status st = act(b, tn, dt, t, n, y);
    return st ? st : node(b, tn, op, in, nin, y, 1, NULL);
}

/* norm of x (RMSNorm, or LayerNorm with bias): the layer's norm weights */
static mp_status norm(bld *b, const char *pfx, uint32_t x, uint64_t t,
                      uint32_t *y)
{
    char n[96];
    uint32_t w = 0, bias = 0;
    mp_status st;
    snprintf(n, sizeof n, "%s.weight", pfx);
    if ((st = vec_w(b, n, b->r.h, &w)))
        return st;
    if (b->m->layer_norm) {
        snprintf(n, sizeof n, "%s.bias", pfx);
        if ((st = vec_w(b, n, b->r.h, &bias)))
            return st;
    }
    uint32_t in[3] = {x, w, bias};
    return op1(b, pfx, b->m->layer_norm ? "LayerNormalization"
                                        : "RMSNormalization",
               in, b->m->layer_norm ? 3 : 2, b->r.dt, t, 0, y);
}

/* y = x W (+ bias): W [k, n] in the weights' format */
static mp_status linear(bld *b, const char *pfx, uint32_t x, uint64_t k,
                        uint64_t n, int bias, uint64_t t, uint32_t *y)
{
    char nm[96];
    uint32_t w = 0, bi = 0, mm = 0;
    mp_status st;
    snprintf(nm, sizeof nm, "%s.weight", pfx);
    if ((st = linear_w(b, nm, k, n, &w)))
        return st;
    if (bias) {
        snprintf(nm, sizeof nm, "%s.bias", pfx);
        if ((st = vec_w(b, nm, n, &bi)))
            return st;
    }
    /* a quantized GEMM (dequantizing in its kernel, as GPTQ/AWQ/Marlin and
     * fp8 kernels do): the output's shape given */
    int q = b->o->weights != MP_WEIGHTS_16BIT;
    const char *op = q ? "QuantMatMul" : "MatMul";
    uint64_t on = q ? n : 0;
    uint32_t in[2] = {x, w};
    if (!bias)
        return op1(b, pfx, op, in, 2, b->r.dt, t, on, y);
    snprintf(nm, sizeof nm, "%s.mm", pfx);
    if ((st = op1(b, nm, op, in, 2, b->r.dt, t, on, &mm)))
        return st;
    uint32_t in2[2] = {mm, bi};
    return op1(b, pfx, "Add", in2, 2, b->r.dt, t, 0, y);
}

/* the attention block of layer l: x [1, t, h] -> out [1, t, h] */
static mp_status attention(bld *b, uint32_t l, uint32_t x, uint64_t t,
                           uint32_t *out)
{
    const rank_dims *r = &b->r;
    char p[96];
    uint32_t q = 0, k = 0, v = 0, y = 0;
    int qkv_bias = b->m->linear_bias != 0, o_bias = b->m->linear_bias == 1;
    mp_status st;
    snprintf(p, sizeof p, "l%u.q_proj", l);
    if ((st = linear(b, p, x, r->h, r->heads * r->hd, qkv_bias, t, &q)))
        return st;
    snprintf(p, sizeof p, "l%u.k_proj", l);
    if ((st = linear(b, p, x, r->h, r->kv * r->hd, qkv_bias, t, &k)))
        return st;
    snprintf(p, sizeof p, "l%u.v_proj", l);
    if ((st = linear(b, p, x, r->h, r->kv * r->hd, qkv_bias, t, &v)))
        return st;
    /* attention over the paged cache: K and V of these tokens are written
     * into it (its own pool, outside this graph), the output read from it
     * by a fused kernel (no t x context scores) */
    snprintf(p, sizeof p, "l%u.attn", l);
    uint32_t nid = 0;
    if (b->gen) {
        /* a generation: the cache explicit, written and read by the node
         * through the block table (paged) or per sequence (contiguous) */
        uint32_t in6[6] = {q, k, v, 0, 0, b->table};
        if (b->kcache) {
            in6[3] = b->kcache[l];
            in6[4] = b->vcache[l];
        }
        if ((st = act(b, p, r->dt, t, r->heads * r->hd, &y)) ||
            (st = node_dom(b, p, "PagedAttention", "memplan", in6,
                           b->table == MP_NONE ? 5 : 6, &y, 1, &nid)))
            return st;
        if (reuse_weights(b)) {
            const struct { const char *k; uint64_t v; } at[] = {
                {"q_num_heads", r->heads}, {"kv_num_heads", r->kv},
                {"block_size", b->table == MP_NONE ? 0 : b->block_size},
                {"seqs", b->seqs}, {"past", b->past}};
            for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
                if ((st = mp_graph_set_attr_int(b->g, nid, at[i].k,
                                                (int64_t)at[i].v)))
                    return st;
        }
        snprintf(p, sizeof p, "l%u.o_proj", l);
        return linear(b, p, y, r->heads * r->hd, r->h, o_bias, t, out);
    }
    uint32_t in[3] = {q, k, v};
    if ((st = act(b, p, r->dt, t, 0, &y)) ||
        (st = node(b, p, "Attention", in, 3, &y, 1, &nid)))
        return st;
    if (b->g && ((st = mp_graph_set_attr_int(b->g, nid, "q_num_heads",
                                             (int64_t)r->heads)) ||
                 (st = mp_graph_set_attr_int(b->g, nid, "kv_num_heads",
                                             (int64_t)r->kv))))
        return st;
    snprintf(p, sizeof p, "l%u.o_proj", l);
    return linear(b, p, y, r->heads * r->hd, r->h, o_bias, t, out);
}

/* the MLP of layer l (dense, or routed to experts) */
static mp_status mlp(bld *b, uint32_t l, uint32_t x, uint64_t t,
                     uint32_t *out)
{
    const rank_dims *r = &b->r;
    char p[96];
    uint32_t a = 0, c = 0, y = 0;
    int bias = b->m->linear_bias == 1;
    mp_status st;
    if (r->experts) {
        /* vLLM's fused MoE: router logits, top-k, then for the t x k
         * (token, expert) rows the gate/up GEMM (cache1 [tk, 2f]), the
         * activation (cache2 [tk, f]) and the down GEMM (cache3 [tk, h]),
         * summed over k with the routing weights */
        uint64_t tk = t * r->topk, e = r->experts;
        uint32_t rw = 0, w13 = 0, w2 = 0, logit = 0, route = 0, c1 = 0,
                 c2 = 0, c3 = 0;
        uint64_t bytes13, bytes2;
        snprintf(p, sizeof p, "l%u.router.weight", l);
        uint64_t rb;
        if (!mul3(r->h, e, r->b, &rb))
            return overflow(b->ctx, "a weight's bytes");
        if ((st = weight(b, p, r->h, e, rb, &rw)))
            return st;
        if (!linear_bytes(r->h, 2 * r->ffn, b->o, r->b, &bytes13) ||
            !linear_bytes(r->ffn, r->h, b->o, r->b, &bytes2) ||
            !mp__mul_u64(bytes13, e, &bytes13) ||
            !mp__mul_u64(bytes2, e, &bytes2))
            return overflow(b->ctx, "the experts' bytes");
        snprintf(p, sizeof p, "l%u.experts.w13", l);
        if ((st = weight(b, p, r->h, 2 * r->ffn * e, bytes13, &w13)))
            return st;
        snprintf(p, sizeof p, "l%u.experts.w2", l);
        if ((st = weight(b, p, r->ffn, r->h * e, bytes2, &w2)))
            return st;
        uint32_t in[2] = {x, rw};
        snprintf(p, sizeof p, "l%u.router", l);
        if ((st = op1(b, p, "MatMul", in, 2, r->dt, t, 0, &logit)))
            return st;
        snprintf(p, sizeof p, "l%u.topk", l);
        if ((st = op1(b, p, "MoERoute", &logit, 1, MP_DTYPE_FLOAT32, t,
                      2 * r->topk, &route)))
            return st;
        uint32_t i1[3] = {x, route, w13};
        snprintf(p, sizeof p, "l%u.moe.cache1", l);
        if ((st = op1(b, p, "FusedMoEGateUp", i1, 3, r->dt, tk, 2 * r->ffn,
                      &c1)))
            return st;
        snprintf(p, sizeof p, "l%u.moe.cache2", l);
        if ((st = op1(b, p, "SiluAndMul", &c1, 1, r->dt, tk, r->ffn, &c2)))
            return st;
        uint32_t i3[3] = {c2, route, w2};
        snprintf(p, sizeof p, "l%u.moe.cache3", l);
        if ((st = op1(b, p, "FusedMoEDown", i3, 3, r->dt, tk, r->h, &c3)))
            return st;
        uint32_t i4[2] = {c3, route};
        snprintf(p, sizeof p, "l%u.moe.out", l);
        return op1(b, p, "MoESum", i4, 2, r->dt, t, r->h, out);
    }
    if (r->gated) {
        snprintf(p, sizeof p, "l%u.gate_proj", l);
        if ((st = linear(b, p, x, r->h, r->ffn, 0, t, &a)))
            return st;
        snprintf(p, sizeof p, "l%u.up_proj", l);
        if ((st = linear(b, p, x, r->h, r->ffn, 0, t, &c)))
            return st;
        uint32_t in[2] = {a, c};
        snprintf(p, sizeof p, "l%u.act", l);
        if ((st = op1(b, p, "SwiGLU", in, 2, r->dt, t, 0, &y)))
            return st;
        snprintf(p, sizeof p, "l%u.down_proj", l);
        return linear(b, p, y, r->ffn, r->h, 0, t, out);
    }
    snprintf(p, sizeof p, "l%u.fc1", l);
    if ((st = linear(b, p, x, r->h, r->ffn, bias, t, &a)))
        return st;
    snprintf(p, sizeof p, "l%u.act", l);
    if ((st = op1(b, p, "Gelu", &a, 1, r->dt, t, 0, &y)))
        return st;
    snprintf(p, sizeof p, "l%u.fc2", l);
    return linear(b, p, y, r->ffn, r->h, bias, t, out);
}

/* the rows sampled, the LM head, fp32 logits, softmax and the sort of
 * top-k/top-p (values fp32 and indices int64), as vLLM's sampler does on
 * its profile run; s rows */
static mp_status sampler(bld *b, uint32_t hfin, uint32_t lm, uint64_t s)
{
    const rank_dims *r = &b->r;
    uint64_t vocab = b->m->vocab, v4, v8;
    uint32_t idx = 0, rows = 0, lg = 0, full = 0, f32 = 0, pr = 0, sv = 0,
             si = 0, tok = 0;
    mp_status st;
    /* logits, probabilities and sorted values in fp32, indices int64 */
    if (!mul3(s, vocab, 4, &v4) || !mul3(s, vocab, 8, &v8) ||
        v4 > UINT64_MAX / 3 || !mp__add_u64(3 * v4, v8, &b->sampler))
        return overflow(b->ctx, "the logits' bytes");
    b->logits = v4;
    if (!b->g)
        return MP_OK;
    snprintf(b->nm, sizeof b->nm, "logits_indices");
    int64_t d1[1] = {(int64_t)s};
    /* a generation samples the last token of each sequence: a constant */
    if ((st = add_t(b, MP_DTYPE_INT64, 1, d1, 0,
                    b->gen ? MP_KIND_CONSTANT : MP_KIND_INPUT, &idx)))
        return st;
    if (b->gen) {
        int64_t *iv = mp__alloc(b->ctx, s * sizeof *iv);
        if (!iv)
            return MP_ERR_NOMEM;
        for (uint64_t i = 0; i < s; i++)
            iv[i] = (int64_t)(i * b->qlen + b->qlen - 1);
        st = mp__tensor_set_value(b->ctx, &b->g->tensors[idx], iv,
                                  (uint32_t)s);
        mp__dealloc(b->ctx, iv);
        if (st)
            return st;
    }
    uint32_t in[2] = {hfin, idx};
    uint32_t nid = 0;
    if ((st = act(b, "sample_rows", r->dt, s, 0, &rows)) ||
        (st = node(b, "sample_rows", "Gather", in, 2, &rows, 1, &nid)) ||
        (st = mp_graph_set_attr_int(b->g, nid, "axis", 1)))
        return st;
    uint32_t in2[2] = {rows, lm};
    if ((st = op1(b, "lm_head", "MatMul", in2, 2, r->dt, s, 0, &lg)))
        return st;
    if (b->o->tp > 1) {
        /* every rank gathers the vocabulary shards */
        if ((st = op1(b, "logits_gather", "LogitsAllGather", &lg, 1, r->dt,
                      s, vocab, &full)))
            return st;
        lg = full;
    }
    if ((st = op1(b, "logits_fp32", "Cast", &lg, 1, MP_DTYPE_FLOAT32, s, 0,
                  &f32)))
        return st;
    b->logits_f32 = f32;
    if ((st = mp_graph_set_attr_int(b->g, b->last_node, "to",
                                    MP_DTYPE_FLOAT32)))
        return st;
    if ((st = op1(b, "probs", "Softmax", &f32, 1, MP_DTYPE_FLOAT32, s, 0,
                  &pr)))
        return st;
    uint32_t outs[2];
    if ((st = act(b, "sort.values", MP_DTYPE_FLOAT32, s, vocab, &sv)) ||
        (st = act(b, "sort.indices", MP_DTYPE_INT64, s, vocab, &si)))
        return st;
    outs[0] = sv;
    outs[1] = si;
    if ((st = node(b, "topk_topp_sort", "Sort", &f32, 1, outs, 2, NULL)))
        return st;
    uint32_t in3[3] = {pr, sv, si};
    snprintf(b->nm, sizeof b->nm, "sampled");
    int64_t d3[2] = {1, (int64_t)s};
    if ((st = add_t(b, MP_DTYPE_INT64, 2, d3, 0, MP_KIND_OUTPUT, &tok)) ||
        (st = node(b, "sampled", "Sample", in3, 3, &tok, 1, NULL)))
        return st;
    b->sampled = tok;
    return mp_graph_mark_output(b->g, tok);
}

static mp_status build(bld *b, uint64_t t, uint64_t s)
{
    const rank_dims *r = &b->r;
    const mp_llm_config *m = b->m;
    uint32_t ids = 0, emb = 0, x = 0, pos = 0, pe = 0, lm = 0, h = 0;
    mp_status st;
    uint64_t eb;
    if (!mul3(r->vocab, r->h, r->b, &eb))
        return overflow(b->ctx, "the embedding's bytes");
    if ((st = weight(b, "embed_tokens.weight", r->vocab, r->h, eb, &emb)))
        return st;
    if (b->g && b->ids != MP_NONE) {
        ids = b->ids; /* a decode step: the tokens sampled before */
    } else if (b->g) {
        snprintf(b->nm, sizeof b->nm, "input_ids");
        int64_t d[2] = {1, (int64_t)t};
        if ((st = add_t(b, MP_DTYPE_INT64, 2, d, 0, MP_KIND_INPUT, &ids)))
            return st;
        if (b->ids_value && ids != MP_NONE &&
            (st = mp__tensor_set_value(b->ctx, &b->g->tensors[ids],
                                       b->ids_value, (uint32_t)t)))
            return st;
    }
    uint32_t in[2] = {emb, ids};
    if ((st = op1(b, "embed", "Gather", in, 2, r->dt, t, 0, &x)))
        return st;
    if (m->learned_pos) {
        uint64_t np = m->max_position ? m->max_position : 2048, pb;
        if (!mul3(np, r->h, r->b, &pb))
            return overflow(b->ctx, "the position embedding's bytes");
        if ((st = weight(b, "embed_positions.weight", np, r->h, pb, &pe)))
            return st;
        if (b->g) {
            snprintf(b->nm, sizeof b->nm, "positions");
            int64_t d[2] = {1, (int64_t)t};
            if ((st = add_t(b, MP_DTYPE_INT64, 2, d, 0, MP_KIND_INPUT, &pos)))
                return st;
        }
        uint32_t i2[2] = {pe, pos}, p = 0;
        if ((st = op1(b, "embed_pos", "Gather", i2, 2, r->dt, t, 0, &p)))
            return st;
        uint32_t i3[2] = {x, p};
        if ((st = op1(b, "embed_sum", "Add", i3, 2, r->dt, t, 0, &x)))
            return st;
    }
    for (uint32_t l = 0; l < r->layers; l++) {
        char p[96];
        uint32_t n1 = 0, a = 0, res = 0, n2 = 0, f = 0;
        snprintf(p, sizeof p, "l%u.input_norm", l);
        if ((st = norm(b, p, x, t, &n1)) ||
            (st = attention(b, l, n1, t, &a)))
            return st;
        uint32_t i1[2] = {x, a};
        snprintf(p, sizeof p, "l%u.residual1", l);
        if ((st = op1(b, p, "Add", i1, 2, r->dt, t, 0, &res)))
            return st;
        snprintf(p, sizeof p, "l%u.post_norm", l);
        if ((st = norm(b, p, res, t, &n2)) || (st = mlp(b, l, n2, t, &f)))
            return st;
        uint32_t i2[2] = {res, f};
        snprintf(p, sizeof p, "l%u.residual2", l);
        if ((st = op1(b, p, "Add", i2, 2, r->dt, t, 0, &x)))
            return st;
    }
    if ((st = norm(b, "final_norm", x, t, &h)))
        return st;
    if (!m->tie_embeddings) {
        if ((st = weight(b, "lm_head.weight", r->h, r->vocab, eb, &lm)))
            return st;
    } else if (b->g) {
        /* the embedding table read as [h, vocab]: a transposed view */
        uint32_t nid;
        if ((st = act(b, "lm_head.weight", r->dt, 0, 0, &lm)) ||
            (st = node(b, "lm_head.weight", "Transpose", &emb, 1, &lm, 1,
                       &nid)))
            return st;
    }
    if (s)
        return sampler(b, h, lm, s);
    if (b->g && !b->weights_only)
        return mp_graph_mark_output(b->g, h);
    return MP_OK;
}

static mp_status check_options(mp_ctx *ctx, const mp_serve_options *o)
{
    if (o->weights > MP_WEIGHTS_FP8)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "weights (--weights): "
                       "16bit, int8, int4 or fp8");
    if (o->kv_dtype != MP_DTYPE_UNDEFINED && o->kv_dtype != MP_DTYPE_BFLOAT16 &&
        o->kv_dtype != MP_DTYPE_FLOAT16 &&
        o->kv_dtype != MP_DTYPE_FLOAT8E4M3FN &&
        o->kv_dtype != MP_DTYPE_FLOAT8E5M2)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "KV cache dtype (--kv-dtype) "
                       "'%s': give bf16, fp16 or fp8",
                       mp_dtype_name(o->kv_dtype));
    if (o->kv_paged && (o->block_size == 0 || o->block_size > 1u << 20))
        return mp__err(ctx, MP_ERR_INVALID_ARG, "block size (--block-size) "
                       "%u: give 1 to 1048576 tokens (vLLM: 16)",
                       o->block_size);
    if (!o->max_batched_tokens || !o->max_seqs)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "--max-batched-tokens and "
                       "--max-seqs must be at least 1");
    if (!(o->gpu_util > 0 && o->gpu_util <= 1))
        return mp__err(ctx, MP_ERR_INVALID_ARG, "--gpu-util %g: give a share "
                       "in (0, 1], e.g. 0.9", o->gpu_util);
    if (o->n_graph_sizes > MP_SERVE_MAX_GRAPH_SIZES)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "--cuda-graph-sizes: at most "
                       "%d sizes", MP_SERVE_MAX_GRAPH_SIZES);
    for (uint32_t i = 0; i < o->n_graph_sizes; i++)
        if (!o->graph_sizes[i])
            return mp__err(ctx, MP_ERR_INVALID_ARG, "--cuda-graph-sizes: a "
                           "batch size of 0");
    if (!o->alignment)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "alignment must be >= 1");
    return MP_OK;
}

/* *opt, or the defaults when opt is NULL */
static void options_or_defaults(const mp_serve_options *opt,
                                mp_serve_options *o)
{
    if (opt)
        *o = *opt;
    else
        mp_serve_options_init(o);
}

mp_status mp_serve_decoder_graph(mp_ctx *ctx, const mp_llm_config *m,
                                 const mp_serve_options *opt, uint32_t tokens,
                                 uint32_t seqs, mp_graph **out)
{
    if (!ctx || !m || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_serve_options o;
    options_or_defaults(opt, &o);
    if (!tokens || seqs > tokens)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "decoder graph: %u tokens "
                       "and %u sequences sampled: give tokens >= 1 and "
                       "sequences <= tokens", tokens, seqs);
    bld b;
    bld_init(&b, ctx, m);
    b.o = &o;
    mp_status st;
    if ((st = check_options(ctx, &o)) || (st = check_model(ctx, m, &o, &b.r)))
        return st;
    if ((st = mp_graph_create(ctx, &b.g)))
        return st;
    char name[128];
    snprintf(name, sizeof name, "%s serve t%u s%u tp%u", m->name, tokens,
             seqs, o.tp);
    if (!(st = mp_graph_set_name(b.g, name)) && !(st = build(&b, tokens, seqs)))
        st = mp_graph_finalize(b.g);
    if (st) {
        mp_graph_destroy(b.g);
        return st;
    }
    *out = b.g;
    return MP_OK;
}

/* ---- a generation: prefill and decode steps in one graph -------------- */
mp_status mp_serve_block_table(mp_ctx *ctx, uint32_t seqs, uint32_t prompt,
                               uint32_t gen, uint32_t block_size,
                               uint32_t *table, uint64_t cap,
                               uint32_t *num_blocks)
{
    if (!ctx || !table || !num_blocks)
        return MP_ERR_INVALID_ARG;
    uint64_t len = (uint64_t)prompt + gen;
    if (!seqs || !prompt || !block_size)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "block table: %u sequences "
                       "of %u prompt tokens in blocks of %u: give at least "
                       "1 of each", seqs, prompt, block_size);
    uint64_t per = (len + block_size - 1) / block_size, n;
    if (!mp__mul_u64(per, seqs, &n) || n > UINT32_MAX)
        return overflow(ctx, "the KV blocks");
    if (n > cap)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "block table: %llu entries "
                       "(%u sequences x %llu blocks) do not fit in %llu",
                       (unsigned long long)n, seqs, (unsigned long long)per,
                       (unsigned long long)cap);
    /* blocks from a free list in order, as vLLM's allocator hands them
     * out: the prefill takes each sequence's prompt blocks in turn, then
     * at each decode step every sequence whose new token starts a block
     * takes the next free one */
    uint32_t next = 0;
    uint64_t pb = ((uint64_t)prompt + block_size - 1) / block_size;
    for (uint64_t s = 0; s < seqs; s++)
        for (uint64_t j = 0; j < pb; j++)
            table[s * per + j] = next++;
    for (uint64_t pos = prompt; pos < len; pos++)
        if (pos % block_size == 0)
            for (uint64_t s = 0; s < seqs; s++)
                table[s * per + pos / block_size] = next++;
    *num_blocks = next;
    return MP_OK;
}

/* The prompt's token ids: deterministic, spread over the vocabulary */
static int64_t prompt_token(uint64_t i, uint64_t vocab)
{
    return (int64_t)((i * 2654435761ull + 12345ull) % vocab);
}

static mp_status gen_check(mp_ctx *ctx, const mp_llm_config *m,
                           const mp_serve_options *o, uint32_t seqs,
                           uint32_t prompt, uint32_t gen)
{
    const char *no = m->experts > 1 ? "experts (MoE)"
                     : m->learned_pos ? "learned position embeddings"
                     : o->weights != MP_WEIGHTS_16BIT ? "quantized weights"
                     : o->tp != 1 ? "tensor parallelism (--tp)"
                     : o->kv_dtype != MP_DTYPE_UNDEFINED &&
                               o->kv_dtype != m->dtype
                         ? "a KV cache dtype other than the model's"
                     : m->sliding_window &&
                               m->sliding_window < (uint64_t)prompt + gen
                         ? "a sliding window shorter than the sequence"
                         : NULL;
    if (no)
        return mp__err(ctx, MP_ERR_UNSUPPORTED, "generation graph of '%s': "
                       "%s is not supported (the executor runs 16-bit "
                       "dense decoders on one GPU)", m->name, no);
    if (!seqs || !prompt)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "generation graph: %u "
                       "sequences of %u prompt tokens: give at least 1 of "
                       "each", seqs, prompt);
    if ((uint64_t)seqs * prompt > MP__VALUE_MAX)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "generation graph: the "
                       "prompt's %llu tokens (%u sequences x %u) are above "
                       "the %u a graph holds as values",
                       (unsigned long long)seqs * prompt, seqs, prompt,
                       MP__VALUE_MAX);
    if (gen > UINT32_MAX - prompt)
        return overflow(ctx, "the sequence length");
    return MP_OK;
}

/* the caches [blocks, block, kv heads, head dim] (paged) or [seqs,
 * length, kv heads, head dim] (contiguous) of every layer, then the
 * block table; after the weights */
static mp_status gen_cache(bld *b, uint32_t seqs, uint32_t prompt,
                           uint32_t gen, uint32_t *kc, uint32_t *vc)
{
    const rank_dims *r = &b->r;
    mp_status st;
    uint32_t nb = 0;
    uint32_t *tab = NULL;
    uint64_t len = (uint64_t)prompt + gen, per = 0;
    if (b->o->kv_paged) {
        per = (len + b->o->block_size - 1) / b->o->block_size;
        if (per * seqs > MP__VALUE_MAX)
            return mp__err(b->ctx, MP_ERR_INVALID_ARG, "generation graph: "
                           "the block table's %llu entries are above the "
                           "%u a graph holds as values",
                           (unsigned long long)(per * seqs), MP__VALUE_MAX);
        tab = mp__alloc(b->ctx, per * seqs * sizeof *tab);
        if (!tab)
            return MP_ERR_NOMEM;
        if ((st = mp_serve_block_table(b->ctx, seqs, prompt, gen,
                                       b->o->block_size, tab, per * seqs,
                                       &nb))) {
            mp__dealloc(b->ctx, tab);
            return st;
        }
    }
    int64_t d[4] = {b->o->kv_paged ? (int64_t)nb : (int64_t)seqs,
                    b->o->kv_paged ? (int64_t)b->o->block_size
                                   : (int64_t)len,
                    (int64_t)r->kv, (int64_t)r->hd};
    st = MP_OK;
    for (uint32_t l = 0; l < r->layers && !st; l++) {
        snprintf(b->nm, sizeof b->nm, "l%u.k_cache", l);
        if (!(st = add_t(b, r->dt, 4, d, 0, MP_KIND_WEIGHT, &kc[l]))) {
            snprintf(b->nm, sizeof b->nm, "l%u.v_cache", l);
            st = add_t(b, r->dt, 4, d, 0, MP_KIND_WEIGHT, &vc[l]);
        }
    }
    if (!st && tab) {
        int64_t td[2] = {(int64_t)seqs, (int64_t)per};
        int64_t *tv = mp__alloc(b->ctx, per * seqs * sizeof *tv);
        if (!tv)
            st = MP_ERR_NOMEM;
        for (uint64_t i = 0; tv && i < per * seqs; i++)
            tv[i] = tab[i];
        snprintf(b->nm, sizeof b->nm, "kv_block_table");
        if (!st && !(st = add_t(b, MP_DTYPE_INT32, 2, td, 0,
                                MP_KIND_CONSTANT, &b->table)))
            st = mp__tensor_set_value(b->ctx, &b->g->tensors[b->table], tv,
                                      (uint32_t)(per * seqs));
        mp__dealloc(b->ctx, tv);
    }
    mp__dealloc(b->ctx, tab);
    return st;
}

static mp_status gen_build(bld *b, uint32_t seqs, uint32_t prompt,
                           uint32_t gen)
{
    mp_status st;
    uint32_t L = b->r.layers;
    uint32_t *kc = mp__calloc(b->ctx, 2 * (size_t)L, sizeof *kc);
    int64_t *ids = mp__alloc(b->ctx, (size_t)seqs * prompt * sizeof *ids);
    if (!kc || !ids) {
        mp__dealloc(b->ctx, kc);
        mp__dealloc(b->ctx, ids);
        return MP_ERR_NOMEM;
    }
    /* the weights first: their ids do not depend on the cache's layout */
    b->gen = 1;
    b->weights_only = 1;
    st = build(b, 1, 0);
    b->weights_only = 0;
    if (!st)
        st = gen_cache(b, seqs, prompt, gen, kc, kc + L);
    b->kcache = kc;
    b->vcache = kc + L;
    b->block_size = b->o->block_size;
    b->seqs = seqs;
    for (uint64_t i = 0; i < (uint64_t)seqs * prompt; i++)
        ids[i] = prompt_token(i, b->m->vocab);
    /* pass 0 the prefill of every prompt, pass p the decode step that
     * feeds the tokens pass p - 1 sampled, at position prompt + p - 1 */
    for (uint32_t p = 0; p <= gen && !st; p++) {
        snprintf(b->pfx, sizeof b->pfx, "step%u/", p);
        b->qlen = p ? 1 : prompt;
        b->past = p ? prompt + p - 1 : 0;
        b->ids = p ? b->sampled : MP_NONE;
        b->ids_value = p ? NULL : ids;
        st = build(b, (uint64_t)seqs * b->qlen, seqs);
    }
    /* the last pass's fp32 logits are an output too */
    if (!st)
        st = mp_graph_mark_output(b->g, b->logits_f32);
    b->kcache = b->vcache = NULL;
    b->ids_value = NULL;
    mp__dealloc(b->ctx, kc);
    mp__dealloc(b->ctx, ids);
    return st;
}

mp_status mp_serve_generation_graph(mp_ctx *ctx, const mp_llm_config *m,
                                    const mp_serve_options *opt,
                                    uint32_t seqs, uint32_t prompt,
                                    uint32_t gen, mp_graph **out)
{
    if (!ctx || !m || !out)
        return MP_ERR_INVALID_ARG;
    *out = NULL;
    mp_serve_options o;
    options_or_defaults(opt, &o);
    bld b;
    bld_init(&b, ctx, m);
    b.o = &o;
    mp_status st;
    if ((st = check_options(ctx, &o)) || (st = check_model(ctx, m, &o, &b.r)) ||
        (st = gen_check(ctx, m, &o, seqs, prompt, gen)))
        return st;
    if ((st = mp_graph_create(ctx, &b.g)))
        return st;
    char name[160];
    snprintf(name, sizeof name, "%s generate %u x (%u + %u) %s", m->name,
             seqs, prompt, gen, o.kv_paged ? "paged" : "contiguous");
    if (!(st = mp_graph_set_name(b.g, name)) &&
        !(st = gen_build(&b, seqs, prompt, gen)))
        st = mp_graph_finalize(b.g);
    if (st) {
        mp_graph_destroy(b.g);
        return st;
    }
    *out = b.g;
    return MP_OK;
}

/* ---- the plan --------------------------------------------------------------- */
/* The forward pass of t tokens sampling s on one rank: its plan's arena. */
static mp_status plan_forward(mp_ctx *ctx, const mp_llm_config *m,
                              const mp_serve_options *o, uint32_t t,
                              uint32_t s, mp_serve_forward *f)
{
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    mp_status st = mp_serve_decoder_graph(ctx, m, o, t, s, &g);
    if (st)
        return st;
    mp_plan_options po;
    mp_plan_options_init(&po);
    po.alignment = o->alignment;
    po.method = MP_OFFSETS_SIZE_BESTFIT;
    if ((st = mp_plan_create(g, &po, &p))) {
        mp_graph_destroy(g);
        return st;
    }
    const mp_figures *fg = mp_plan_figures(p);
    f->tokens = t;
    f->seqs = s;
    f->arena_bytes = fg->arena_bytes;
    f->lower_bound_bytes = fg->lower_bound_bytes;
    f->nodes = mp_graph_num_nodes(g);
    bld b;
    bld_init(&b, ctx, m);
    b.o = o;
    if (s && !(st = check_model(ctx, m, o, &b.r)))
        st = sampler(&b, 0, 0, s);
    f->logits_bytes = b.logits;
    f->sampler_bytes = b.sampler > b.logits ? b.sampler - b.logits : 0;
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    return st;
}

/* vLLM's capture sizes: 1, 2, 4, multiples of 8 to 256, of 16 beyond,
 * up to max_size; the count and the largest */
static void default_graph_sizes(uint32_t max_size, uint32_t *n,
                                uint32_t *largest)
{
    *n = 0;
    *largest = 0;
    for (uint32_t s = 1; s <= max_size;
         s = s < 4 ? s * 2 : s < 8 ? 8 : s < 256 ? s + 8 : s + 16) {
        (*n)++;
        *largest = s;
    }
}

/* KV tokens one sequence of len tokens holds: its window at most */
static uint64_t seq_tokens(const mp_llm_config *m, uint64_t len)
{
    return m->sliding_window && m->sliding_window < len ? m->sliding_window
                                                        : len;
}

/* Paged blocks of one sequence of len tokens; a window keeps one block
 * more, the one it straddles */
static uint64_t seq_blocks(const mp_llm_config *m, uint64_t len, uint64_t bs)
{
    uint64_t t = seq_tokens(m, len);
    return (t + bs - 1) / bs + (t < len ? 1 : 0);
}

/* KV bytes one sequence of len tokens takes as allocated: paged blocks,
 * or contiguous at max_len (a ring of the window when there is one) */
static bool seq_bytes(const mp_llm_config *m, const mp_serve_options *o,
                      const mp_serve_result *r, uint64_t len, uint64_t *out)
{
    if (o->kv_paged)
        return mp__mul_u64(seq_blocks(m, len, o->block_size),
                           r->kv_block_bytes, out);
    return mp__mul_u64(seq_tokens(m, r->max_model_len),
                       r->kv_bytes_per_token, out);
}

/* Shared prefix blocks (full blocks only, as prefix caching shares them),
 * none where a window drops them */
static uint64_t shared_blocks(const mp_llm_config *m,
                              const mp_serve_options *o, uint64_t len)
{
    if (!o->kv_paged || !o->shared_prefix || o->shared_prefix > len ||
        (m->sliding_window && m->sliding_window < len))
        return 0;
    return o->shared_prefix / o->block_size;
}

static mp_status fragmentation(mp_ctx *ctx, const mp_llm_config *m,
                               const mp_serve_options *o, mp_serve_result *r)
{
    uint32_t one = r->max_model_len;
    const uint32_t *len = o->lengths ? o->lengths : &one;
    size_t n = o->lengths ? o->n_lengths : 1;
    uint64_t tok = 0, paged = 0, cont = 0, saved = 0, nshare = 0;
    double sum = 0;
    uint64_t bs = o->kv_paged ? o->block_size : 16;
    for (size_t i = 0; i < n; i++) {
        if (!len[i] || len[i] > r->max_model_len)
            return mp__err(ctx, MP_ERR_INVALID_ARG, "request length %u "
                           "(lengths[%zu]) is not within 1 and the maximum "
                           "context %u: raise --max-model-len or drop it",
                           len[i], i, r->max_model_len);
        uint64_t a, pb, cb, sb = shared_blocks(m, o, len[i]);
        if (!mp__mul_u64(seq_tokens(m, len[i]), r->kv_bytes_per_token, &a) ||
            !mp__mul_u64(seq_blocks(m, len[i], bs),
                         r->kv_bytes_per_token * bs, &pb) ||
            !mp__mul_u64(seq_tokens(m, r->max_model_len),
                         r->kv_bytes_per_token, &cb) ||
            !mp__add_u64(tok, a, &tok) || !mp__add_u64(paged, pb, &paged) ||
            !mp__add_u64(cont, cb, &cont))
            return overflow(ctx, "the fragmentation figures");
        if (sb) {
            if (nshare++)
                saved += sb * r->kv_bytes_per_token * bs;
        }
        sum += len[i];
    }
    r->frag_requests = n;
    r->frag_token_bytes = tok;
    r->frag_paged_bytes = paged;
    r->frag_contiguous_bytes = cont;
    r->frag_shared_bytes = paged - saved;
    r->mean_length = sum / (double)n;
    /* requests of this mix that fit: the budget over the mean per request
     * (shared: the prefix once, then the mean of the rest) */
    double kvb = (double)r->kv_budget_bytes, dn = (double)n;
    r->frag_fit_paged = paged ? (uint64_t)(kvb / ((double)paged / dn)) : 0;
    r->frag_fit_contiguous = cont ? (uint64_t)(kvb / ((double)cont / dn))
                                  : 0;
    uint64_t pre = nshare ? shared_blocks(m, o, o->shared_prefix) *
                                r->kv_bytes_per_token * bs
                          : 0;
    double rest = ((double)paged - (double)nshare * (double)pre) / dn;
    r->frag_fit_shared = rest > 0 && kvb > (double)pre
                             ? (uint64_t)((kvb - (double)pre) / rest)
                             : 0;
    return MP_OK;
}

/* The KV cache in r->kv_budget_bytes: blocks, tokens, sequences. */
static mp_status kv_fit(mp_ctx *ctx, const mp_llm_config *m,
                        const mp_serve_options *o, mp_serve_result *r)
{
    uint64_t L = r->max_model_len, per;
    if (!seq_bytes(m, o, r, L, &per))
        return overflow(ctx, "one sequence's KV bytes");
    r->kv_seq_bytes = per;
    uint64_t n;
    if (o->kv_paged) {
        r->kv_blocks = r->kv_block_bytes ? r->kv_budget_bytes /
                                               r->kv_block_bytes
                                         : 0;
        r->kv_tokens = r->kv_blocks * o->block_size;
        r->kv_used_bytes = r->kv_blocks * r->kv_block_bytes;
        uint64_t sb = shared_blocks(m, o, L), pb = seq_blocks(m, L,
                                                              o->block_size);
        n = r->kv_blocks > sb && pb > sb ? (r->kv_blocks - sb) / (pb - sb)
                                         : 0;
        /* each of max_seqs: the blocks left to it, plus the shared ones */
        uint64_t own = r->kv_blocks > sb ? (r->kv_blocks - sb) / o->max_seqs
                                         : 0;
        uint64_t len = (own + sb) * o->block_size;
        if (m->sliding_window && own + sb >= seq_blocks(m, L, o->block_size))
            len = L;
        r->max_len_at_seqs = (uint32_t)(len < L ? len : L);
    } else {
        n = per ? r->kv_budget_bytes / per : 0;
        r->kv_tokens = n * seq_tokens(m, L);
        r->kv_used_bytes = n * per;
        /* contiguous: a reservation of the same length for every one */
        uint64_t len = r->kv_bytes_per_token
                           ? r->kv_budget_bytes / o->max_seqs /
                                 r->kv_bytes_per_token
                           : 0;
        if (m->sliding_window && len >= m->sliding_window)
            len = L;
        r->max_len_at_seqs = (uint32_t)(len < L ? len : L);
    }
    r->max_seqs_at_len = (uint32_t)(n < UINT32_MAX ? n : UINT32_MAX);
    r->binding = r->kv_budget_bytes == 0 || n == 0 ? (r->kv_budget_bytes
                                                          ? MP_SERVE_KV_MEMORY
                                                          : MP_SERVE_FITS_NOTHING)
                 : n >= o->max_seqs ? MP_SERVE_MAX_SEQS
                                    : MP_SERVE_KV_MEMORY;
    return MP_OK;
}

static mp_status serve_plan(mp_ctx *ctx, const mp_llm_config *m,
                            const mp_device *d, const mp_serve_options *o,
                            mp_serve_result *r)
{
    mp_status st;
    rank_dims rd;
    if ((st = check_options(ctx, o)) || (st = check_model(ctx, m, o, &rd)))
        return st;
    memset(r, 0, sizeof *r);
    r->tp = o->tp;
    r->block_size = o->kv_paged ? o->block_size : 0;
    r->max_model_len = o->max_model_len ? o->max_model_len
                       : m->max_position ? m->max_position
                                         : 8192;
    r->device_bytes = o->gpu_mem ? o->gpu_mem : d->mem_bytes;
    r->budget_bytes = (uint64_t)((double)r->device_bytes * o->gpu_util);
    /* the weights of a rank: the builder without a graph */
    bld b;
    bld_init(&b, ctx, m);
    b.o = o;
    b.r = rd;
    if ((st = build(&b, 1, 0)))
        return st;
    r->weight_bytes = b.weights;
    /* K and V of every layer: kv heads of the rank x head size x dtype */
    mp_dtype kvt = o->kv_dtype ? o->kv_dtype : m->dtype;
    uint64_t kvb = mp_dtype_bits(kvt) / 8;
    if (!mp__mul_u64(2 * rd.layers, rd.kv * rd.hd, &r->kv_bytes_per_token) ||
        !mp__mul_u64(r->kv_bytes_per_token, kvb, &r->kv_bytes_per_token) ||
        !mp__mul_u64(r->kv_bytes_per_token, o->kv_paged ? o->block_size : 0,
                     &r->kv_block_bytes))
        return overflow(ctx, "the KV bytes per token");
    /* the forward passes: a prefill chunk sampling up to max_seqs
     * sequences, and a decode step of max_seqs */
    uint32_t chunk = o->max_batched_tokens;
    uint32_t ps = o->max_seqs < chunk ? o->max_seqs : chunk;
    if ((st = plan_forward(ctx, m, o, chunk, ps, &r->prefill)) ||
        (st = plan_forward(ctx, m, o, o->max_seqs, o->max_seqs, &r->decode)))
        return st;
    r->activation_bytes = r->prefill.arena_bytes > r->decode.arena_bytes
                              ? r->prefill.arena_bytes
                              : r->decode.arena_bytes;
    /* CUDA graphs: one pool shared by every captured size, captured
     * largest first, so the pool is the largest's forward (no sampler) */
    uint32_t ng = 0, gmax = 0;
    if (o->n_graph_sizes) {
        ng = o->n_graph_sizes;
        for (uint32_t i = 0; i < ng; i++)
            if (o->graph_sizes[i] > gmax)
                gmax = o->graph_sizes[i];
    } else if (o->graph_sizes_default) {
        uint32_t cap = o->max_seqs > 256 ? 512 : 2 * o->max_seqs;
        default_graph_sizes(cap, &ng, &gmax);
    }
    if (gmax > chunk)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "--cuda-graph-sizes: a "
                       "captured batch of %u is above --max-batched-tokens "
                       "%u", gmax, chunk);
    r->cuda_graphs = ng;
    r->cuda_graph_max = gmax;
    if (gmax) {
        mp_serve_forward gf;
        if ((st = plan_forward(ctx, m, o, gmax, 0, &gf)))
            return st;
        r->cuda_graph_bytes = gf.arena_bytes;
    }
    r->runtime_bytes = o->runtime_reserve != UINT64_MAX
                           ? o->runtime_reserve
                           : 556597248ull + (o->tp > 1 ? 256 * MIB : 0);
    uint64_t used = 0;
    if (!mp__add_u64(r->weight_bytes, r->activation_bytes, &used) ||
        !mp__add_u64(used, r->cuda_graph_bytes, &used) ||
        !mp__add_u64(used, r->runtime_bytes, &used))
        return overflow(ctx, "the memory used");
    r->kv_budget_bytes = r->budget_bytes > used ? r->budget_bytes - used : 0;
    if ((st = kv_fit(ctx, m, o, r)))
        return st;
    return fragmentation(ctx, m, o, r);
}

mp_status mp_serve_plan(mp_ctx *ctx, const mp_llm_config *m,
                        const mp_device *d, const mp_serve_options *opt,
                        mp_serve_result *out)
{
    if (!ctx || !m || !out)
        return MP_ERR_INVALID_ARG;
    mp_serve_options o;
    options_or_defaults(opt, &o);
    mp_device h200;
    if (!d) {
        mp_status st = mp_device_builtin(ctx, "h200", &h200);
        if (st)
            return st;
        d = &h200;
    }
    mp__progress_mark pm;
    mp__progress_begin(ctx, &pm, "serve");
    mp_status st = serve_plan(ctx, m, d, &o, out);
    mp__progress_end(ctx, &pm);
    return st;
}

/* ---- request lengths -------------------------------------------------------- */
mp_status mp_serve_lengths(mp_ctx *ctx, const char *spec, uint32_t max_len,
                           uint32_t *out, size_t n)
{
    if (!ctx || !spec || !out || !n)
        return MP_ERR_INVALID_ARG;
    double a = 0, b = 0;
    int kind = -1, np = 0;
    char extra;
    if ((np = sscanf(spec, "fixed:%lf%c", &a, &extra)) == 1)
        kind = 0;
    else if (sscanf(spec, "uniform:%lf:%lf%c", &a, &b, &extra) == 2 && b >= a)
        kind = 1;
    else if (sscanf(spec, "exponential:%lf%c", &a, &extra) == 1)
        kind = 2;
    else if (sscanf(spec, "lognormal:%lf:%lf%c", &a, &b, &extra) == 2 &&
             b >= 0)
        kind = 3;
    if (kind < 0 || !(a >= 1) || a > 4e9 || b > 4e9)
        return mp__err(ctx, MP_ERR_INVALID_ARG, "request lengths '%s': give "
                       "fixed:L, uniform:MIN:MAX, exponential:MEAN or "
                       "lognormal:MEDIAN:SIGMA (lengths >= 1)", spec);
    for (size_t i = 0; i < n; i++) {
        double q = ((double)i + 0.5) / (double)n, v;
        switch (kind) {
        case 0: v = a; break;
        case 1: v = a + q * (b - a); break;
        case 2: v = -a * log(1 - q); break;
        default: {
            /* the normal quantile by bisection on erfc */
            double lo = -10, hi = 10;
            for (int it = 0; it < 100; it++) {
                double mid = (lo + hi) / 2;
                if (0.5 * erfc(-mid / sqrt(2.0)) < q)
                    lo = mid;
                else
                    hi = mid;
            }
            v = a * exp(b * (lo + hi) / 2);
        }
        }
        v = floor(v + 0.5);
        if (v < 1)
            v = 1;
        if (max_len && v > max_len)
            v = max_len;
        if (v > UINT32_MAX)
            v = UINT32_MAX;
        out[i] = (uint32_t)v;
    }
    (void)np;
    return MP_OK;
}
