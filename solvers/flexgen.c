/* FlexGen-style offload policy search for LLM inference (docs/offload.md).
 *
 * For a decoder-only transformer, a GPU batch size gbs and a number of GPU
 * batches nb (block size bls = gbs * nb), one linear program chooses the
 * fractions of the weights (w), KV cache (c) and activations (h) kept on
 * GPU, CPU and disk, minimising the time per generated token under the
 * peak memory of each tier, with the overlap model of FlexGen's paper
 * (Sheng et al., 2023): a layer's prefill takes the longest of (CPU->GPU +
 * disk->CPU reads), (GPU->CPU + CPU->disk writes) and compute; a decode
 * step takes the CPU->GPU read plus the longest of the other transfers and
 * compute (attention over a CPU-resident cache runs on the CPU). The
 * outer search enumerates gbs and nb. Solved through the project's GLPK
 * wrapper (solvers/glpk.c). */
#include "mp_glpk.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB 1073741824.0

enum { WG, WC, WN, CG, CC, CN, HG, HC, HN, TPRE, TGEN, NCOL };

typedef struct {
    double a[NCOL];
    double c;
} expr;

static void ex_zero(expr *e) { memset(e, 0, sizeof *e); }

void mp_flexgen_hw_t4(mp_flexgen_hw *o)
{
    if (!o)
        return;
    /* FlexGen's profile of a GCP T4 machine: 16 GB GPU, 208 GB DRAM,
     * 1.5 TB NVMe; bandwidths and FLOP/s fitted to measured runs in
     * FlexGen's experimental/cost_model.py (GB there is 2^30 bytes). */
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "t4 (FlexGen fit)");
    o->gpu_mem = 16ull << 30;
    o->cpu_mem = 208ull << 30;
    o->disk_mem = 1500ull << 30;
    o->ctog_bw = 12.89 * GIB;
    o->gtoc_bw_cache = 0.97 * GIB;
    o->gtoc_bw_hidden = 4.82 * GIB;
    o->dtoc_bw = 0.473 * GIB;
    o->ctod_bw_cache_p = 0.746 * GIB;
    o->ctod_bw_hidden_p = 2.015 * GIB;
    o->ctod_bw_g = 2.015 * GIB;
    o->mm_flops_p = 21.24e12;
    o->mm_flops_g = 4.3e12;
    o->bmm_flops_p = 9.97e12;
    o->bmm_flops_g = 0.079e12;
    o->cpu_flops = 0.0123e12;
    o->c1 = 0.0168;
    o->c2 = 0.0328;
    o->c3 = 0.0621;
}

void mp_flexgen_hw_from_device(const mp_device *d, mp_flexgen_hw *o)
{
    if (!d || !o)
        return;
    /* The T4 fit scaled to another device: link figures in proportion to
     * its host link, GPU FLOP/s in proportion to its fp16 peak, the
     * decode matmul rate to its memory bandwidth; host tiers from the
     * profile (200 GiB DRAM and 1.5 TiB disk at 2 GB/s when unknown). */
    mp_flexgen_hw t;
    mp_flexgen_hw_t4(&t);
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", d->name);
    double link = d->h2d_bw > 0 ? d->h2d_bw : t.ctog_bw;
    double back = d->d2h_bw > 0 ? d->d2h_bw : link;
    double fl = mp_device_flops(d, MP_DTYPE_FLOAT16);
    double sf = fl / 65e12, sm = d->mem_bw / 320e9;
    o->gpu_mem = d->mem_bytes;
    o->cpu_mem = d->host_mem_bytes ? d->host_mem_bytes : 200ull << 30;
    o->disk_mem = d->disk_bytes ? d->disk_bytes : 1536ull << 30;
    double disk_r = d->disk_read_bw > 0 ? d->disk_read_bw : 2e9;
    double disk_w = d->disk_write_bw > 0 ? d->disk_write_bw : disk_r;
    o->ctog_bw = link;
    o->gtoc_bw_cache = back * (t.gtoc_bw_cache / t.ctog_bw);
    o->gtoc_bw_hidden = back * (t.gtoc_bw_hidden / t.ctog_bw);
    o->dtoc_bw = disk_r * (t.dtoc_bw / (0.473 * GIB));
    o->ctod_bw_cache_p = disk_w * (t.ctod_bw_cache_p / (2.015 * GIB));
    o->ctod_bw_hidden_p = disk_w;
    o->ctod_bw_g = disk_w;
    o->mm_flops_p = t.mm_flops_p * sf;
    o->mm_flops_g = t.mm_flops_g * sm;
    o->bmm_flops_p = t.bmm_flops_p * sf;
    o->bmm_flops_g = t.bmm_flops_g * sm;
    o->cpu_flops = t.cpu_flops;
    o->c1 = t.c1;
    o->c2 = t.c2;
    o->c3 = t.c3;
    o->gpu_mem_bw = d->mem_bw;
}

void mp_flexgen_options_init(mp_flexgen_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->prompt_len = 512;
    o->gen_len = 32;
    o->weight_bits = 16;
    o->cache_bits = 16;
    o->alpha_g = o->alpha_c = o->alpha_n = 0.8;
    for (int i = 0; i < 6; i++)
        o->percent[i] = -1;
    o->max_gpu_batch = 1024;
}

/* Model constants of one LP. */
typedef struct {
    double l, s, n, h, hkv, h2, nh, b;
    double wi;    /* weight bytes per layer */
    double hid;   /* activation bytes per token */
    double kvtok; /* KV cache bytes per token per layer */
    double p2;    /* matmul FLOPs per token per layer */
    double m1;    /* MLP intermediate buffers: matrices - 1 */
} model_k;

static mp_status model_consts(mp_ctx *ctx, const mp_llm_config *m,
                              const mp_flexgen_options *o, model_k *k)
{
    unsigned bits = mp_dtype_bits(m->dtype);
    if (!m->layers || !m->hidden || !m->heads || !m->kv_heads || !m->ffn ||
        bits < 8)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "model config: layers, hidden, heads, KV heads, ffn "
                      "and a dtype of 8 bits or more are needed");
    if ((o->weight_bits != 16 && o->weight_bits != 4) ||
        (o->cache_bits != 16 && o->cache_bits != 4))
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "compression: 16 (none) or 4 bits");
    if (!o->prompt_len || !o->gen_len)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "prompt and generation lengths must be >= 1");
    k->l = m->layers;
    k->s = o->prompt_len;
    k->n = o->gen_len;
    k->h = m->hidden;
    k->hkv = (double)m->hidden * m->kv_heads / m->heads;
    k->h2 = m->ffn;
    k->nh = m->heads;
    k->b = bits / 8.0;
    double params = 2 * k->h * k->h + 2 * k->h * k->hkv +
                    (m->mlp_matrices ? m->mlp_matrices : 2) * k->h * k->h2;
    /* 4-bit group-wise quantisation (groups of 64, fp16 scale and zero
     * point): 4.5 bits per element */
    double qw = o->weight_bits == 4 ? 4.5 / bits : 1.0;
    double qc = o->cache_bits == 4 ? 4.5 / bits : 1.0;
    k->wi = k->b * params * qw;
    k->hid = k->b * k->h;
    k->kvtok = 2 * k->b * k->hkv * qc;
    k->p2 = 2 * params;
    k->m1 = (m->mlp_matrices ? m->mlp_matrices : 2) - 1;
    return MP_OK;
}

/* Adds a row: e <= rhs (in the row's units: scale divides everything). */
static mp_status row_le(mp__lp *lp, const expr *e, double rhs, double scale)
{
    uint32_t cols[NCOL];
    double vals[NCOL];
    uint32_t nnz = 0;
    for (uint32_t j = 0; j < NCOL; j++)
        if (e->a[j] != 0) {
            cols[nnz] = j;
            vals[nnz++] = e->a[j] / scale;
        }
    return mp__lp_add_row(lp, -MP__LP_INF, (rhs - e->c) / scale, nnz, cols,
                         vals, NULL);
}

static double val(const expr *e, const double *x)
{
    double v = e->c;
    for (int j = 0; j < NCOL; j++)
        v += e->a[j] * x[j];
    return v;
}

typedef struct {
    expr gpu_p, gpu_g, cpu_p, cpu_g, disk;
} mem_exprs;

/* The columns (fractions, fixed by o->percent where given; the prefill
 * and decode times per layer, weighted by the layers and the tokens in
 * the objective), and the rows making each set of fractions sum to 1. */
static mp_status add_columns(mp__lp *lp, const model_k *k,
                             const mp_flexgen_options *o)
{
    mp_status st;
    for (int j = 0; j < NCOL; j++) {
        double lo = 0, hi = j < TPRE ? 1 : MP__LP_INF, obj = 0;
        if (j < TPRE && j != WN && j != CN && j != HN) {
            int pi = j == WG ? 0 : j == WC ? 1 : j == CG ? 2 : j == CC ? 3
                                                 : j == HG ? 4 : 5;
            if (o->percent[pi] >= 0)
                lo = hi = o->percent[pi] / 100.0;
        }
        if (j == HN)
            hi = 0; /* activations are not kept on disk (as in FlexGen) */
        if (j == TPRE)
            obj = k->l;
        if (j == TGEN)
            obj = k->l * (k->n - 1);
        if ((st = mp__lp_add_col(lp, lo, hi, MP__LP_CONTINUOUS, obj, NULL)))
            return st;
    }
    for (int grp = 0; grp < 3; grp++) {
        uint32_t cols[3] = {(uint32_t)(3 * grp), (uint32_t)(3 * grp + 1),
                            (uint32_t)(3 * grp + 2)};
        double ones[3] = {1, 1, 1};
        if ((st = mp__lp_add_row(lp, 1, 1, 3, cols, ones, NULL)))
            return st;
    }
    return MP_OK;
}

/* Prefill, per layer: reads (CPU->GPU + disk->CPU), writes (GPU->CPU +
 * CPU->disk) and compute each take at most Tpre. */
static mp_status add_prefill_rows(mp__lp *lp, const model_k *k,
                                  const mp_flexgen_hw *hw, double bls,
                                  double tu)
{
    double s = k->s;
    expr ctog, gtoc, dtoc, ctod, comp;
    mp_status st;
    ex_zero(&ctog);
    ctog.a[WC] = ctog.a[WN] = k->wi / hw->ctog_bw;
    ctog.a[HC] = ctog.a[HN] = k->hid * s * bls / hw->ctog_bw;
    ex_zero(&dtoc);
    dtoc.a[WN] = k->wi / hw->dtoc_bw;
    dtoc.a[HN] = k->hid * s * bls / hw->dtoc_bw;
    for (int j = 0; j < NCOL; j++)
        ctog.a[j] += dtoc.a[j];
    ctog.a[TPRE] = -tu; /* ctog + dtoc <= Tpre */
    if ((st = row_le(lp, &ctog, 0, tu)))
        return st;
    ex_zero(&gtoc);
    gtoc.a[CC] = gtoc.a[CN] = k->kvtok * (s + 1) * bls / hw->gtoc_bw_cache;
    gtoc.a[HC] = gtoc.a[HN] = k->hid * s * bls / hw->gtoc_bw_hidden;
    ex_zero(&ctod);
    ctod.a[CN] = k->kvtok * (s + 1) * bls / hw->ctod_bw_cache_p;
    ctod.a[HN] = k->hid * s * bls / hw->ctod_bw_hidden_p;
    for (int j = 0; j < NCOL; j++)
        gtoc.a[j] += ctod.a[j];
    gtoc.a[TPRE] = -tu;
    if ((st = row_le(lp, &gtoc, 0, tu)))
        return st;
    ex_zero(&comp);
    comp.c = bls * s * k->p2 / hw->mm_flops_p +
             4 * bls * s * s * k->h / hw->bmm_flops_p;
    comp.a[TPRE] = -tu;
    return row_le(lp, &comp, 0, tu);
}

/* The CPU's attention efficiency at GPU batch g and hidden size h (the
 * fitted model of hw: small batches and small hidden sizes run slower),
 * at least 0.1. */
static double cpu_efficiency(const mp_flexgen_hw *hw, double g, double h)
{
    double lb = g < 64 ? log2(64.0 / g) : 0;
    double lh = h < 4096 ? log2(4096.0 / h) : 0;
    double cpu_eff = 1 + hw->c1 * lb * lh - hw->c2 * lb - hw->c3 * lh;
    return cpu_eff < 0.1 ? 0.1 : cpu_eff;
}

/* Decode, per layer and token: the CPU->GPU read plus each of the other
 * transfers and the compute takes at most Tgen (and plus the reads from
 * GPU memory, when its bandwidth is known). The terms go to t[] (each
 * with -tu Tgen), their names to what[]; returns how many. */
enum { DT_GTOC, DT_DTOC, DT_CTOD, DT_COMPUTE, DT_GPU_READ, DT_N };
static int decode_terms(const model_k *k, const mp_flexgen_hw *hw, double g,
                        double bls, double tu, expr *t, expr *cg_in)
{
    double h = k->h;
    ex_zero(cg_in);
    cg_in->a[WC] = cg_in->a[WN] = k->wi / hw->ctog_bw;
    cg_in->a[HC] = cg_in->a[HN] = k->hid * bls / hw->ctog_bw;
    cg_in->a[TGEN] = -tu;
    double ctx_len = k->s + k->n / 2;
    double cpu_eff = cpu_efficiency(hw, g, h);
    for (int i = 0; i < DT_N; i++)
        t[i] = *cg_in;
    /* GPU -> CPU: the new activations */
    t[DT_GTOC].a[HC] += k->hid * bls / hw->gtoc_bw_hidden;
    t[DT_GTOC].a[HN] += k->hid * bls / hw->gtoc_bw_hidden;
    /* disk -> CPU: cache and weights held on disk */
    t[DT_DTOC].a[CN] += k->kvtok * ctx_len * bls / hw->dtoc_bw;
    t[DT_DTOC].a[HN] += k->hid * bls / hw->dtoc_bw;
    t[DT_DTOC].a[WN] += k->wi / (0.95 * hw->dtoc_bw);
    /* CPU -> disk: the new token's cache and activations */
    t[DT_CTOD].a[CN] += k->kvtok * bls / hw->ctod_bw_g;
    t[DT_CTOD].a[HN] += k->hid * bls / hw->ctod_bw_g;
    /* compute: matmuls on GPU, attention where the cache is. FlexGen's
     * fit (gpu_mem_bw 0) folds the memory-bound decode GEMMs into one
     * fitted rate; where the device's memory bandwidth is known the GPU's
     * side is a roofline instead: the arithmetic at the GEMM rate here,
     * the reads of the weights (once per GPU batch) and of the cache in
     * the last term, so that a larger GPU batch is faster until the GPU's
     * FLOP/s or its memory bind (docs/offload.md) */
    int roofline = hw->gpu_mem_bw > 0;
    t[DT_COMPUTE].c +=
        bls * k->p2 / (roofline ? hw->mm_flops_p : hw->mm_flops_g);
    t[DT_COMPUTE].a[CG] += 4 * bls * ctx_len * h /
                           (roofline ? hw->bmm_flops_p : hw->bmm_flops_g);
    t[DT_COMPUTE].a[CC] += 4 * bls * ctx_len * h / (hw->cpu_flops * cpu_eff);
    t[DT_COMPUTE].a[CN] += 4 * bls * ctx_len * h / (hw->cpu_flops * cpu_eff);
    if (!roofline)
        return DT_GPU_READ;
    /* each GPU batch's GEMMs read the layer's weights from device memory,
     * and attention reads the GPU's cache share */
    t[DT_GPU_READ].c += (bls / g) * k->wi / hw->gpu_mem_bw;
    t[DT_GPU_READ].a[CG] += k->kvtok * ctx_len * bls / hw->gpu_mem_bw;
    return DT_N;
}

static mp_status add_decode_rows(mp__lp *lp, const model_k *k,
                                 const mp_flexgen_hw *hw, double g,
                                 double bls, double tu)
{
    expr t[DT_N], cg_in;
    int n = decode_terms(k, hw, g, bls, tu, t, &cg_in);
    mp_status st;
    for (int i = 0; i < n; i++)
        if ((st = row_le(lp, &t[i], 0, tu)))
            return st;
    return MP_OK;
}

/* The decode term that sets Tgen at the solution x: "host link" when the
 * CPU->GPU read is the larger part of it. */
static const char *decode_bottleneck(const model_k *k, const mp_flexgen_hw *hw,
                                     double g, double bls, double tu,
                                     const double *x)
{
    static const char *const names[DT_N] = {
        "host link (GPU->CPU)", "disk reads", "disk writes", "compute",
        "GPU memory bandwidth"};
    expr t[DT_N], cg_in;
    int n = decode_terms(k, hw, g, bls, tu, t, &cg_in);
    int best = DT_COMPUTE;
    double bv = -1;
    for (int i = 0; i < n; i++) {
        double v = val(&t[i], x) + tu * x[TGEN];
        if (v > bv) {
            bv = v;
            best = i;
        }
    }
    double in = val(&cg_in, x) + tu * x[TGEN];
    if (in > bv - in)
        return "host link (CPU->GPU)";
    if (best == DT_COMPUTE) {
        const expr *c = &t[DT_COMPUTE];
        double cpu = c->a[CC] * x[CC] + c->a[CN] * x[CN];
        return cpu > c->c + c->a[CG] * x[CG] ? "CPU attention"
                                             : "GPU compute";
    }
    return names[best];
}

/* Peak memory of each tier (bytes) during prefill and decode, as linear
 * expressions of the fractions. */
static void memory_exprs(const model_k *k, double g, double bls,
                         mem_exprs *me)
{
    double s = k->s, n = k->n, l = k->l, h = k->h, hkv = k->hkv, b = k->b;
    memset(me, 0, sizeof *me);
    double wl = k->wi * l;
    expr *e = &me->gpu_p;
    e->a[WG] = wl - 2 * k->wi;
    e->a[HG] = k->hid * s * bls - k->hid * s * g;
    e->a[CG] = k->kvtok * (s + n) * bls * l;
    e->c = 2 * k->wi + k->hid * s * g +
           g * s * b * (9 * h + k->nh * s + k->m1 * k->h2);
    e = &me->gpu_g;
    e->a[WG] = wl - 2 * k->wi;
    e->a[HG] = k->hid * bls - k->hid * g;
    e->a[CG] = k->kvtok * (s + n) * bls * l + k->kvtok * (s + n) * g +
               g * b * (2 * h + 2 * (s + n) * hkv + k->nh * (s + n));
    e->c = 2 * k->wi + k->hid * g + g * b * (7 * h + k->m1 * k->h2);
    e = &me->cpu_p;
    e->a[WC] = wl;
    e->a[WG] = -k->wi;
    e->a[HC] = k->hid * s * bls;
    e->a[HG] = -k->hid * s * g;
    e->a[CC] = k->kvtok * s * bls * l;
    e->c = k->wi + k->hid * s * g;
    e = &me->cpu_g;
    e->a[WC] = wl;
    e->a[WN] = k->wi;
    e->a[HC] = k->hid * bls;
    e->a[HN] = 2 * k->hid * g;
    e->a[CC] = k->kvtok * (s + n) * bls * l;
    e->a[CN] = 2 * k->kvtok * (s + n) * g;
    e->c = b * k->nh * (s + n) * g + k->hid * g;
    e = &me->disk;
    e->a[WN] = wl;
    e->a[HN] = k->hid * s * bls;
    e->a[CN] = k->kvtok * (s + n) * bls * l;
}

/* Each tier's peaks within its usable share (rows scaled by it, GiB
 * when it is 0). */
static mp_status add_memory_rows(mp__lp *lp, const mem_exprs *me,
                                 const mp_flexgen_hw *hw,
                                 const mp_flexgen_options *o)
{
    double capg = o->alpha_g * (double)hw->gpu_mem;
    double capc = o->alpha_c * (double)hw->cpu_mem;
    double capn = o->alpha_n * (double)hw->disk_mem;
    mp_status st;
    if ((st = row_le(lp, &me->gpu_p, capg, capg > 0 ? capg : GIB)) ||
        (st = row_le(lp, &me->gpu_g, capg, capg > 0 ? capg : GIB)) ||
        (st = row_le(lp, &me->cpu_p, capc, capc > 0 ? capc : GIB)) ||
        (st = row_le(lp, &me->cpu_g, capc, capc > 0 ? capc : GIB)) ||
        (st = row_le(lp, &me->disk, capn, capn > 0 ? capn : GIB)))
        return st;
    return MP_OK;
}

/* The policy of the LP's solution xs for (gbs, nb). */
static void fill_policy(const model_k *k, const mem_exprs *me,
                        const double *xs, uint32_t gbs, uint32_t nb,
                        double tu, mp_flexgen_policy *pol)
{
    double bls = (double)gbs * nb, s = k->s, n = k->n, l = k->l;
    double x[NCOL];
    for (int j = 0; j < NCOL; j++) /* GLPK's tolerances: -1e-12 is 0 */
        x[j] = j < TPRE && xs[j] < 0 ? 0 : j < TPRE && xs[j] > 1 ? 1 : xs[j];
    double tpre = tu * x[TPRE], tgen = tu * x[TGEN];
    double T = l * tpre + l * (n - 1) * tgen;
    pol->gpu_batch = gbs;
    pol->num_batches = nb;
    pol->w_gpu = x[WG];
    pol->w_cpu = x[WC];
    pol->w_disk = x[WN];
    pol->c_gpu = x[CG];
    pol->c_cpu = x[CC];
    pol->c_disk = x[CN];
    pol->h_gpu = x[HG];
    pol->h_cpu = x[HC];
    pol->h_disk = x[HN];
    pol->throughput = T > 0 ? bls * n / T : 0;
    pol->prefill_seconds = l * tpre;
    pol->decode_seconds = l * (n - 1) * tgen;
    double gp = val(&me->gpu_p, x), gg = val(&me->gpu_g, x);
    double cp = val(&me->cpu_p, x), cgm = val(&me->cpu_g, x);
    pol->gpu_peak = gp > gg ? gp : gg;
    pol->cpu_peak = cp > cgm ? cp : cgm;
    pol->disk_peak = val(&me->disk, x);
    pol->weight_bytes = k->wi * l;
    pol->cache_bytes = k->kvtok * (s + n) * bls * l;
    pol->hidden_bytes = k->hid * s * bls;
}

/* One LP for (gbs, nb). *feasible = 0 when infeasible; else pol filled. */
static mp_status solve_one(mp_ctx *ctx, const model_k *k,
                           const mp_flexgen_hw *hw,
                           const mp_flexgen_options *o, uint32_t gbs,
                           uint32_t nb, int *feasible, mp_flexgen_policy *pol)
{
    double bls = (double)gbs * nb, g = gbs;
    mp__lp *lp = NULL;
    mp_status st = mp__lp_create(ctx, 0, &lp);
    if (st)
        return st;
    /* Time rows are divided by tu (the prefill compute of one layer) and
     * the time columns count units of tu, so that coefficients are near 1
     * whatever the model; memory rows are divided by their capacity. */
    double tu = bls * k->s * k->p2 / hw->mm_flops_p;
    if (!(tu > 0))
        tu = 1;
    mem_exprs me;
    memory_exprs(k, g, bls, &me);
    mp__lp_options lo;
    mp__lp_options_init(&lo);
    mp__lp_result res;
    if ((st = add_columns(lp, k, o)) ||
        (st = add_prefill_rows(lp, k, hw, bls, tu)) ||
        (st = add_decode_rows(lp, k, hw, g, bls, tu)) ||
        (st = add_memory_rows(lp, &me, hw, o)) ||
        (st = mp__lp_solve(lp, &lo, &res)))
        goto out;
    pol->lps_solved++;
    mp__progress_phase(ctx, "offload-policy: GPU batch %u x %u batches "
                       "(%u LPs)", (unsigned)gbs, (unsigned)nb,
                       (unsigned)pol->lps_solved);
    *feasible = res.status == MP_SOLVE_OPTIMAL && res.has_solution;
    if (*feasible) {
        fill_policy(k, &me, mp__lp_values(lp), gbs, nb, tu, pol);
        pol->decode_bound = decode_bottleneck(k, hw, g, bls, tu,
                                              mp__lp_values(lp));
    }
out:
    mp__lp_destroy(lp);
    return st;
}

/* What keeps the batch of *best from growing (best->binding): one more
 * GPU batch does not fit (the fullest tier's memory), or fits without a
 * higher throughput (the decode term that is saturated), or the search's
 * limit. */
static mp_status name_binding(mp_ctx *ctx, const model_k *k,
                              const mp_flexgen_hw *hw,
                              const mp_flexgen_options *o,
                              mp_flexgen_policy *best)
{
    char *b = best->binding;
    size_t cap = sizeof best->binding;
    if (o->gpu_batch && o->num_batches) {
        snprintf(b, cap, "the batch is fixed (--gpu-batch, --num-batches); "
                 "decode is bound by %s", best->decode_bound);
        return MP_OK;
    }
    mp_flexgen_policy next;
    memset(&next, 0, sizeof next);
    int feas = 0;
    uint32_t nb = best->num_batches + 1;
    mp_status st = solve_one(ctx, k, hw, o, best->gpu_batch, nb, &feas,
                             &next);
    if (st)
        return st;
    best->lps_solved += next.lps_solved;
    double cg = o->alpha_g * (double)hw->gpu_mem;
    double cc = o->alpha_c * (double)hw->cpu_mem;
    double cn = o->alpha_n * (double)hw->disk_mem;
    if (!feas) {
        double rg = cg > 0 ? best->gpu_peak / cg : 1;
        double rc = cc > 0 ? best->cpu_peak / cc : 0;
        double rn = cn > 0 ? best->disk_peak / cn : 0;
        int t = rg >= rc && rg >= rn ? 0 : rc >= rn ? 1 : 2;
        static const char *const tier[3] = {"GPU", "CPU", "disk"};
        const double alpha[3] = {o->alpha_g, o->alpha_c, o->alpha_n};
        snprintf(b, cap, "%s memory: one more GPU batch of %u does not fit "
                 "in %.0f%% of it", tier[t], (unsigned)best->gpu_batch,
                 100 * alpha[t]);
    } else if (next.throughput <= best->throughput * (1 + 1e-6) &&
               next.gpu_peak >= 0.995 * cg) {
        snprintf(b, cap, "GPU memory: one more GPU batch of %u fills %.0f%% "
                 "of it and moves data off the GPU, which is slower",
                 (unsigned)best->gpu_batch, 100 * o->alpha_g);
    } else if (next.throughput <= best->throughput * (1 + 1e-6)) {
        snprintf(b, cap, "%s: a larger batch fits but is no faster",
                 best->decode_bound);
    } else {
        snprintf(b, cap, "the search's limit (GPU batch up to %u)",
                 (unsigned)o->max_gpu_batch);
    }
    return MP_OK;
}

static mp_status flexgen_search(mp_ctx *ctx, const mp_llm_config *m,
                                const mp_flexgen_hw *hw,
                                const mp_flexgen_options *opt,
                                mp_flexgen_policy *out)
{
    mp_flexgen_options o;
    if (opt)
        o = *opt;
    else
        mp_flexgen_options_init(&o);
    if (!mp__glpk_available())
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "the policy search needs GLPK (build with "
                      "MEMPLAN_WITH_GLPK=ON)");
    if (hw->ctog_bw <= 0 || hw->gtoc_bw_cache <= 0 ||
        hw->gtoc_bw_hidden <= 0 || hw->dtoc_bw <= 0 ||
        hw->ctod_bw_cache_p <= 0 || hw->ctod_bw_hidden_p <= 0 ||
        hw->ctod_bw_g <= 0 || hw->mm_flops_p <= 0 || hw->mm_flops_g <= 0 ||
        hw->bmm_flops_p <= 0 || hw->bmm_flops_g <= 0 || hw->cpu_flops <= 0)
        return mp__err(ctx, MP_ERR_INVALID_ARG,
                      "hardware profile '%s': every bandwidth and FLOP/s "
                      "figure must be above 0",
                      hw->name);
    model_k k;
    mp_status st = model_consts(ctx, m, &o, &k);
    if (st)
        return st;
    mp_flexgen_policy best, cur;
    memset(&best, 0, sizeof best);
    memset(&cur, 0, sizeof cur);
    uint32_t lps = 0;
    int found = 0;
    uint32_t gbs = o.gpu_batch ? o.gpu_batch : 1;
    for (;;) {
        int feas = 0;
        if (o.num_batches) {
            if ((st = solve_one(ctx, &k, hw, &o, gbs, o.num_batches, &feas,
                                &cur)))
                return st;
            if (feas && (!found || cur.throughput > best.throughput)) {
                best = cur;
                found = 1;
            }
        } else {
            /* largest feasible nb (memory grows with the block size):
             * doubling, then bisection */
            uint32_t lo = 0, hi = 1;
            for (;;) {
                if ((st = solve_one(ctx, &k, hw, &o, gbs, hi, &feas, &cur)))
                    return st;
                if (!feas)
                    break;
                lo = hi;
                if (hi >= (1u << 20))
                    break;
                hi *= 2;
            }
            while (feas == 0 && hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;
                int f2 = 0;
                if ((st = solve_one(ctx, &k, hw, &o, gbs, mid, &f2, &cur)))
                    return st;
                if (f2)
                    lo = mid;
                else
                    hi = mid;
            }
            if (lo == 0 && !o.gpu_batch)
                break; /* a larger GPU batch fits even less */
            /* every nb up to the bound, stopping once throughput falls */
            double prev = 0;
            for (uint32_t nb = 1; nb <= lo; nb++) {
                if ((st = solve_one(ctx, &k, hw, &o, gbs, nb, &feas, &cur)))
                    return st;
                if (!feas)
                    break;
                if (cur.throughput < prev)
                    break;
                prev = cur.throughput;
                if (!found || cur.throughput > best.throughput) {
                    best = cur;
                    found = 1;
                }
            }
        }
        lps += cur.lps_solved;
        cur.lps_solved = 0;
        if (o.gpu_batch)
            break;
        gbs = gbs < 4 ? gbs + 1 : gbs * 2;
        if (gbs > o.max_gpu_batch)
            break;
    }
    if (!found)
        return mp__err(ctx, MP_ERR_INFEASIBLE,
                      "no policy fits: %s does not hold model '%s' with "
                      "prompt %u and generation %u in %.0f GiB GPU, %.0f GiB "
                      "CPU and %.0f GiB disk",
                      hw->name, m->name, o.prompt_len, o.gen_len,
                      hw->gpu_mem / GIB, hw->cpu_mem / GIB,
                      hw->disk_mem / GIB);
    best.lps_solved = lps;
    if ((st = name_binding(ctx, &k, hw, &o, &best)))
        return st;
    *out = best;
    return MP_OK;
}

mp_status mp_flexgen_search(mp_ctx *ctx, const mp_llm_config *m,
                            const mp_flexgen_hw *hw,
                            const mp_flexgen_options *opt,
                            mp_flexgen_policy *out)
{
    if (!ctx || !m || !hw || !out)
        return MP_ERR_INVALID_ARG;
    mp__progress_mark pm;
    mp__progress_begin(ctx, &pm, "offload-policy");
    mp_status st = flexgen_search(ctx, m, hw, opt, out);
    mp__progress_end(ctx, &pm);
    return st;
}
