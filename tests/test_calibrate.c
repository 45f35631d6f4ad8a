/* memplan calibrate's host half (validate/calibrate.c): the benchmark
 * graphs lower to the executor's real kernels, one node each, in the
 * class the cost model puts them in; and the profile made from what was
 * measured gives back, through the cost model, the times measured. Needs
 * no GPU. */
#include "support.h"
#include "calibrate.h"
#include "cost.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int close_rel(double x, double y)
{
    return fabs(x - y) <= 1e-9 * fabs(y);
}

/* the node of k timed (its count in *n) */
static uint32_t timed_node(const mpv_cal_case *k, uint32_t *n)
{
    uint32_t at = 0;
    *n = 0;
    for (uint32_t j = 0; j < mp_graph_num_nodes(k->g); j++) {
        mp_node_info ni;
        mp_graph_node_info(k->g, j, &ni);
        if (strcmp(ni.op, k->timed) == 0) {
            at = j;
            (*n)++;
        }
    }
    return at;
}

/* the cost model puts the node timed in the benchmark's class: kind,
 * class (GEMM, conv), sequence class (attention), family (the memory
 * kinds), pass */
static void check_class(const mpv_cal_bench *b, const mpv_cal_case *k)
{
    uint32_t n, at = timed_node(k, &n);
    mp__kernel_desc kd;
    CU_ASSERT_EQUAL_FATAL(n, 1u);
    CU_ASSERT_EQUAL_FATAL(mp__node_kernel_desc(k->g, at, &kd), MP_OK);
    int want = b->kind == MPV_CB_GEMM        ? MP__KK_GEMM
               : b->kind == MPV_CB_CONV      ? MP__KK_CONV
               : b->kind == MPV_CB_ATTENTION ? MP__KK_ATTENTION
                                             : MP__KK_MEMORY;
    int cls = b->kind == MPV_CB_ATTENTION ? kd.seq : kd.cls;
    if (kd.kind != want || cls != b->cls || kd.grad != b->grad) {
        printf("\n  %s: kind %d class %d grad %d\n", b->name, kd.kind, cls,
               kd.grad);
        CU_FAIL("the cost model does not put a benchmark in its class");
    }
}

/* every benchmark: one node, a real kernel (not the synthetic one); a
 * backward benchmark: one NAMEGrad node in its training graph, on a real
 * kernel, and the cost model's class of its forward; one timed in a
 * training step (BatchNormalization with statistics, an optimizer step):
 * one node of its op there, on a real kernel; each in its class */
static void t_benches_lower(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    CU_ASSERT(mpv_cal_n_benches >= 10);
    for (size_t i = 0; i < mpv_cal_n_benches; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        mpv_cal_case k;
        mp_status st = mpv_cal_case_make(c, b, &k);
        if (st) {
            printf("\n  %s: %s\n", b->name, mp_ctx_message(c));
            CU_FAIL("benchmark graph");
            continue;
        }
        check_class(b, &k);
        if (b->grad || b->train) {
            const char *why = mpv_cal_case_synthetic(&k);
            if (why) {
                printf("\n  %s: synthetic (%s)\n", b->name, why);
                CU_FAIL("the executor has no kernel for a benchmark");
            }
            CU_ASSERT(k.flops > 0 || b->kind != MPV_CB_CONV);
            CU_ASSERT(k.bytes > 0);
            mpv_cal_case_free(&k);
            continue;
        }
        CU_ASSERT_EQUAL(mp_graph_num_nodes(k.g), 1u);
        CU_ASSERT(k.prog->nodes[0].run);
        if (k.prog->n_synthetic || k.prog->n_real != 1) {
            printf("\n  %s: synthetic (%s)\n", b->name,
                   k.prog->nodes[0].why ? k.prog->nodes[0].why : "");
            CU_FAIL("the executor has no kernel for a benchmark");
        }
        CU_ASSERT(k.bytes > 0);
        if (b->kind == MPV_CB_GEMM) {
            CU_ASSERT(close_rel(k.flops, 2.0 * (double)b->a[0] *
                                             (double)b->a[1] *
                                             (double)b->a[2]));
            CU_ASSERT_EQUAL(mp__gemm_class((double)b->a[0], (double)b->a[2],
                                           (double)b->a[1], k.flops),
                            b->cls);
        }
        mpv_cal_case_free(&k);
    }
    mp_ctx_destroy(c);
}

/* m for a test: a made-up GPU, every benchmark unmeasured (bench_s and
 * bench16_s of nb -1 each, to be freed), the launch overhead `launch` */
static void meas_init(mpv_cal_meas *m, size_t nb, double launch, int reps)
{
    memset(m, 0, sizeof *m);
    snprintf(m->gpu, sizeof m->gpu, "Test GPU");
    m->mem_bytes = 1ull << 34;
    m->copy_engines = 2;
    m->reps = reps;
    m->launch_s = launch;
    m->h2d_bw = m->d2h_bw = 5e10;
    m->link_latency = 8e-6;
    m->bench_s = calloc(nb, sizeof *m->bench_s);
    m->bench16_s = calloc(nb, sizeof *m->bench16_s);
    CU_ASSERT_FATAL(m->bench_s && m->bench16_s);
    for (size_t i = 0; i < nb; i++)
        m->bench_s[i] = m->bench16_s[i] = -1;
}

/* The profile JSON of m named name (*text, to free) and the device it
 * reads as; the reader's status (its message printed on failure). */
static mp_status profile_of(mp_ctx *c, const mpv_cal_meas *m,
                            const char *name, char **text, mp_device *d)
{
    mp_status st = mpv_cal_profile_json(c, name, m, text);
    if (!st && (st = mp_device_load_json_string(c, *text, "cal.json", d)))
        printf("\n  %s\n%s\n", mp_ctx_message(c), *text);
    return st;
}

/* made-up measurements, each class at a throughput of its own */
static double gemm_rate(int cls) { return 1e13 * (cls + 1); }
static double conv_rate(int cls) { return 2e12 * (cls + 1); }
static double bw_of(int kind)
{
    return kind == MPV_CB_POINTWISE ? 3e12 : kind == MPV_CB_REDUCE ? 2e12
                                                                   : 1.5e12;
}

static void t_profile_round_trip(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    size_t nb = mpv_cal_n_benches;
    mpv_cal_meas m;
    /* every kernel well above the launch overhead: see rate() */
    meas_init(&m, nb, 1e-7, 7);
    m.d2h_bw = 4e10;
    m.d2d_bw = 1e15; /* memory never the bound of a GEMM or conv here */
    m.overlap_h2d = 0.8;
    m.overlap_d2h = 1.2; /* clamped to 1: the mean 0.9 */
    mpv_cal_case *k = calloc(nb, sizeof *k);
    CU_ASSERT_FATAL(k != NULL);
    for (size_t i = 0; i < nb; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        CU_ASSERT_EQUAL_FATAL(mpv_cal_case_make(c, b, &k[i]), MP_OK);
        m.bench16_s[i] = -1;
        if (b->kind == MPV_CB_GEMM) {
            m.bench_s[i] = m.launch_s + k[i].flops / gemm_rate(b->cls);
            m.bench16_s[i] =
                m.launch_s + k[i].flops / (10 * gemm_rate(b->cls));
        } else if (b->kind == MPV_CB_CONV) {
            m.bench_s[i] = m.launch_s + k[i].flops / (b->grad ? conv_rate(
                                                          b->cls) / 3
                                                    : conv_rate(b->cls));
            /* bfloat16: twice as fast */
            m.bench16_s[i] = m.launch_s + (m.bench_s[i] - m.launch_s) / 2;
        } else if (b->kind == MPV_CB_ATTENTION) {
            m.bench_s[i] = m.launch_s + k[i].flops / (b->grad ? 3e12 : 7e12);
            m.bench16_s[i] = m.launch_s + k[i].flops / (b->grad ? 4e12 : 9e12);
        } else {
            m.bench_s[i] = m.launch_s + k[i].bytes / bw_of(b->kind);
        }
    }
    char *text = NULL;
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(profile_of(c, &m, "testgpu", &text, &d), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"version\": 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Test GPU"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gemm_4096"));
    CU_ASSERT_STRING_EQUAL(d.name, "testgpu");
    CU_ASSERT_EQUAL(d.cal.version, 1);
    CU_ASSERT_EQUAL(d.mem_bytes, 1ull << 34);
    CU_ASSERT_EQUAL(d.copy_engines, 2);
    CU_ASSERT(close_rel(d.kernel_overhead, 1e-7));
    CU_ASSERT(close_rel(d.h2d_bw, 5e10));
    CU_ASSERT(close_rel(d.d2h_bw, 4e10));
    CU_ASSERT(close_rel(d.link_latency, 8e-6));
    CU_ASSERT(close_rel(d.mem_bw, 1e15));
    CU_ASSERT(close_rel(d.cal.overlap, 0.9));
    CU_ASSERT(close_rel(d.flops_fp32, gemm_rate(MP_GEMM_LARGE)));
    CU_ASSERT(close_rel(d.flops_bf16, 10 * gemm_rate(MP_GEMM_LARGE)));
    for (int cls = 0; cls < MP_GEMM_CLASSES; cls++)
        CU_ASSERT(close_rel(d.cal.gemm[MP_CAL_FP32][cls], gemm_rate(cls)));
    for (int cls = 0; cls < MP_CONV_CLASSES; cls++)
        CU_ASSERT(close_rel(d.cal.conv[MP_CAL_FP32][cls], conv_rate(cls)));
    CU_ASSERT(close_rel(d.cal.attention[MP_CAL_FP32], 7e12));
    /* bfloat16's own rates, forward and backward */
    CU_ASSERT(close_rel(d.cal.attention[MP_CAL_16BIT], 9e12));
    CU_ASSERT(close_rel(d.cal.attention_grad[MP_CAL_16BIT], 4e12));
    for (int cls = 0; cls < MP_CONV_CLASSES; cls++) {
        CU_ASSERT(close_rel(d.cal.conv[MP_CAL_16BIT][cls],
                            2 * conv_rate(cls)));
        CU_ASSERT(close_rel(d.cal.conv_grad[MP_CAL_16BIT][cls],
                            2 * conv_rate(cls) / 3));
    }
    /* the backward passes apart */
    for (int cls = 0; cls < MP_CONV_CLASSES; cls++)
        CU_ASSERT(close_rel(d.cal.conv_grad[MP_CAL_FP32][cls],
                            conv_rate(cls) / 3));
    CU_ASSERT(close_rel(d.cal.attention_grad[MP_CAL_FP32], 3e12));
    CU_ASSERT(close_rel(d.cal.pointwise_bw, 3e12));
    CU_ASSERT(close_rel(d.cal.reduce_bw, 2e12));
    CU_ASSERT(close_rel(d.cal.copy_bw, 1.5e12));
    /* the cost model on the profile gives back every time measured */
    for (size_t i = 0; i < nb; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        /* the nodes timed: node 0, or a backward benchmark's NAMEGrad
         * (one node, with the launch overhead once) */
        mp_op_cost e;
        uint32_t n_timed, at = timed_node(&k[i], &n_timed);
        CU_ASSERT_EQUAL(n_timed, 1u);
        CU_ASSERT_EQUAL(strcmp(k[i].timed, b->op) == 0,
                        !b->grad && !b->timed);
        /* the training graph's nodes were timed on the builtin h200:
         * timed again on this profile (its class from the node) */
        if (b->grad || b->train)
            CU_ASSERT_EQUAL(mp_graph_set_node_cost(k[i].g, at, k[i].flops,
                                                   k[i].bytes, -1),
                            MP_OK);
        CU_ASSERT_EQUAL_FATAL(mp_node_estimate(k[i].g, at, &d, &e), MP_OK);
        if (!close_rel(e.seconds, m.bench_s[i])) {
            printf("\n  %s: predicted %g s, measured %g s\n", b->name,
                   e.seconds, m.bench_s[i]);
            CU_FAIL("the profile does not give the time back");
        }
        if (b->kind == MPV_CB_GEMM) {
            mp__kernel_desc kd = {MP__KK_GEMM, b->cls, k[i].flops, 0,
                                  MP_DTYPE_BFLOAT16, 0, -1};
            CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), m.bench16_s[i]));
        }
        mpv_cal_case_free(&k[i]);
    }
    /* a class not measured (here: every depthwise conv) is 0 in the
     * profile: the cost model falls back to the float32 peak */
    for (size_t i = 0; i < nb; i++)
        if (mpv_cal_benches[i].kind == MPV_CB_CONV &&
            mpv_cal_benches[i].cls == MP_CONV_DEPTHWISE &&
            !mpv_cal_benches[i].grad)
            m.bench_s[i] = -1;
    mpv_cal_text_free(c, text);
    text = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_cal_profile_json(c, "testgpu", &m, &text),
                          MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_device_load_json_string(c, text, "c.json", &d),
                          MP_OK);
    CU_ASSERT_EQUAL(d.cal.conv[MP_CAL_FP32][MP_CONV_DEPTHWISE], 0.0);
    mp__kernel_desc kd = {MP__KK_CONV, MP_CONV_DEPTHWISE, 1e12, 0,
                          MP_DTYPE_FLOAT32, 0, -1};
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd),
                        1e12 / gemm_rate(MP_GEMM_LARGE) + 1e-7));
    /* its backward pass, measured, keeps its own rate */
    kd.grad = 1;
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd),
                        1e12 / (conv_rate(MP_CONV_DEPTHWISE) / 3) + 1e-7));
    mpv_cal_text_free(c, text);
    free(k);
    free(m.bench_s);
    free(m.bench16_s);
    mp_ctx_destroy(c);
}

/* the launch case: a training step of tiny nodes, every one on a real
 * kernel; a per-node time above the empty kernel's is the profile's
 * kernel_overhead */
static void t_launch_case(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mpv_cal_case k;
    CU_ASSERT_EQUAL_FATAL(mpv_cal_launch_case(c, &k), MP_OK);
    /* 16 x (MatMul, Add, Relu) forward, their backward, 32 SGD steps */
    CU_ASSERT(k.prog->n_real >= 16 * 3 + 32);
    CU_ASSERT_EQUAL(k.prog->n_synthetic, 0u);
    CU_ASSERT_EQUAL(k.prog->n_opt_real, 32u);
    mpv_cal_case_free(&k);
    size_t nb = mpv_cal_n_benches;
    mpv_cal_meas m;
    meas_init(&m, nb, 3e-6, 1);
    m.d2d_bw = 1e12;
    m.node_s = 9e-6;
    for (size_t i = 0; i < nb; i++)
        m.bench_s[i] = 1e-3;
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(mpv_cal_profile_json(c, "t", &m, &text), MP_OK);
    mp_device d;
    mp_status st = mp_device_load_json_string(c, text, "t.json", &d);
    if (st)
        printf("\n  %s\n", mp_ctx_message(c));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT(close_rel(d.kernel_overhead, 9e-6));
    mpv_cal_text_free(c, text);
    free(m.bench_s);
    free(m.bench16_s);
    mp_ctx_destroy(c);
}

/* the convolution and attention benchmarks in bfloat16: the nodes timed
 * run the executor's kernels on bfloat16 operands (not the synthetic
 * kernel), with the float32 case's FLOPs */
static void t_benches_bf16(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    size_t n16 = 0;
    for (size_t i = 0; i < mpv_cal_n_benches; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        if (b->kind != MPV_CB_CONV && b->kind != MPV_CB_ATTENTION)
            continue;
        mpv_cal_case k32, k16;
        CU_ASSERT_EQUAL_FATAL(mpv_cal_case_make(c, b, &k32), MP_OK);
        CU_ASSERT_EQUAL_FATAL(
            mpv_cal_case_make_dt(c, b, MP_DTYPE_BFLOAT16, &k16), MP_OK);
        const char *why = mpv_cal_case_synthetic(&k16);
        if (why) {
            printf("\n  %s (bf16): synthetic (%s)\n", b->name, why);
            CU_FAIL("the executor has no bfloat16 kernel for a benchmark");
        }
        CU_ASSERT(close_rel(k16.flops, k32.flops));
        /* the timed node's launches read bfloat16 operands */
        int bf = 0;
        for (uint32_t j = 0; j < mp_graph_num_nodes(k16.g); j++) {
            mp_node_info ni;
            mp_graph_node_info(k16.g, j, &ni);
            if (strcmp(ni.op, k16.timed) != 0)
                continue;
            const mpv_node *pn = &k16.prog->nodes[j];
            for (uint32_t q = 0; q < pn->count; q++)
                bf |= k16.prog->launches[pn->first + q].bf16 != 0;
        }
        CU_ASSERT(bf);
        n16++;
        mpv_cal_case_free(&k32);
        mpv_cal_case_free(&k16);
    }
    CU_ASSERT(n16 >= 10);
    mp_ctx_destroy(c);
}

/* the affine fit from made-up measurements */
static void t_fit(void)
{
    /* exact: 7 us + work at 2e12/s, two sizes and four */
    double w[4] = {1e6, 1e9, 3e7, 5e8}, t[4];
    for (int i = 0; i < 4; i++)
        t[i] = 7e-6 + w[i] / 2e12;
    mp_cal_fit f = mpv_cal_fit(w, t, 2, 4e-6);
    CU_ASSERT(close_rel(f.rate, 2e12) && fabs(f.fixed - 7e-6) < 1e-15);
    f = mpv_cal_fit(w, t, 4, 4e-6);
    CU_ASSERT(fabs(f.rate / 2e12 - 1) < 1e-9 && fabs(f.fixed - 7e-6) < 1e-14);
    /* noisy (+-10%): the fixed cost and rate near, every point within
     * the noise */
    double tn[4] = {t[0] * 1.1, t[1] * 0.9, t[2] * 1.05, t[3] * 0.95};
    f = mpv_cal_fit(w, tn, 4, 4e-6);
    CU_ASSERT(f.rate > 1.8e12 && f.rate < 2.4e12);
    CU_ASSERT(f.fixed > 5e-6 && f.fixed < 9e-6);
    for (int i = 0; i < 4; i++) {
        double p = f.fixed + w[i] / f.rate;
        CU_ASSERT(fabs(p / tn[i] - 1) < 0.12);
    }
    /* a time that grows less than in proportion from nothing: fixed 0,
     * not below (the least squares through the origin) */
    double w2[2] = {1e6, 1e9}, t2[2] = {1e6 / 1e12 * 0.5, 1e9 / 1e12};
    f = mpv_cal_fit(w2, t2, 2, 4e-6);
    CU_ASSERT_EQUAL(f.fixed, 0.0);
    CU_ASSERT(f.rate > 9e11 && f.rate < 2.1e12);
    /* one work (twice), a time falling with the work, or one point: the
     * class figures' rule, fixed = the overhead */
    double w3[2] = {1e9, 1e9}, t3[2] = {1.004e-3, 1.004e-3};
    f = mpv_cal_fit(w3, t3, 2, 4e-6);
    CU_ASSERT(close_rel(f.rate, 1e12) && f.fixed == 4e-6);
    double t4[2] = {2e-3, 1e-3};
    f = mpv_cal_fit(w2, t4, 2, 4e-6);
    CU_ASSERT(f.fixed == 4e-6 && f.rate > 0);
    f = mpv_cal_fit(w3, t3, 1, 4e-6);
    CU_ASSERT(close_rel(f.rate, 1e12) && f.fixed == 4e-6);
    /* nothing measured (t <= 0): not fitted */
    double t5[2] = {-1, 0};
    f = mpv_cal_fit(w2, t5, 2, 4e-6);
    CU_ASSERT(f.rate == 0 && f.fixed == 0);
}

/* A class's made-up fit: fixed and rate of its own (kind, class, pass,
 * dtype), far from the launch overhead. */
static mp_cal_fit made_up_fit(const mpv_cal_bench *b, int d)
{
    int memory = mpv_cal_bench_memory(b);
    mp_cal_fit f;
    f.fixed = 1e-6 * (3 + b->kind + 2 * b->cls + 5 * b->grad + 7 * d);
    f.rate = (memory ? 1e11 : 1e12) * (1 + b->kind + b->cls + 3 * b->grad +
                                       9 * d);
    return f;
}

/* The fit of class of b in c. */
static const mp_cal_fit *fit_of(const mp_device_calibration *c,
                                const mpv_cal_bench *b, int d)
{
    switch (b->kind) {
    case MPV_CB_GEMM: return &c->gemm_fit[d][b->cls];
    case MPV_CB_CONV: return &c->conv_fit[d][b->cls][b->grad];
    case MPV_CB_ATTENTION: return &c->attention_fit[d][b->cls][b->grad];
    default: return &c->family_fit[b->cls][b->grad];
    }
}

/* Measurements of an affine time per class (fixed costs from 3 to 40 us,
 * none the launch overhead): the profile holds each class's fit
 * ("calibration.affine"), and the cost model gives back every time
 * measured, each node by its own class's fit; every class is measured at
 * two sizes or more. A profile without "affine" predicts as the class
 * figures did. */
static void t_affine_round_trip(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    size_t nb = mpv_cal_n_benches;
    mpv_cal_meas m;
    meas_init(&m, nb, 2e-6, 3);
    m.d2d_bw = 1e16; /* memory never the bound of a compute kernel */
    mpv_cal_case *k = calloc(nb, sizeof *k);
    CU_ASSERT_FATAL(k != NULL);
    for (size_t i = 0; i < nb; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        CU_ASSERT_EQUAL_FATAL(mpv_cal_case_make(c, b, &k[i]), MP_OK);
        int memory = mpv_cal_bench_memory(b);
        double work = memory ? k[i].bytes : k[i].flops;
        for (int d = 0; d < 2; d++) {
            mp_cal_fit f = made_up_fit(b, d);
            (d ? m.bench16_s : m.bench_s)[i] =
                d && memory ? -1 : f.fixed + work / f.rate;
        }
    }
    /* two distinct works at least in every benchmark's class */
    for (size_t i = 0; i < nb; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        int memory = mpv_cal_bench_memory(b), others = 0;
        double wi = memory ? k[i].bytes : k[i].flops;
        for (size_t j = 0; j < nb; j++) {
            const mpv_cal_bench *o = &mpv_cal_benches[j];
            int om = mpv_cal_bench_memory(o);
            double wj = om ? k[j].bytes : k[j].flops;
            others += o->use != MPV_CB_FIGURE &&
                      (om ? memory : o->kind == b->kind) &&
                      o->cls == b->cls && o->grad == b->grad &&
                      fabs(wj - wi) > 1e-6 * wi;
        }
        if (!others) {
            printf("\n  %s: its class measured at one size\n", b->name);
            CU_FAIL("a class measured at one size");
        }
    }
    char *text = NULL;
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(profile_of(c, &m, "affine", &text, &d), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"affine\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"batchnorm_grad\""));
    CU_ASSERT_PTR_NULL(strstr(text, "\"sgd_grad\""));
    for (size_t i = 0; i < nb; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        int memory = mpv_cal_bench_memory(b);
        /* the fit read back: the class's own */
        for (int dt = 0; dt < (memory ? 1 : 2); dt++) {
            mp_cal_fit want = made_up_fit(b, dt);
            const mp_cal_fit *got = fit_of(&d.cal, b, dt);
            if (fabs(got->rate / want.rate - 1) > 1e-9 ||
                fabs(got->fixed - want.fixed) > 1e-9 * want.fixed) {
                printf("\n  %s (%s): fit %g + work / %g, made %g + work / "
                       "%g\n", b->name, dt ? "bf16" : "fp32", got->fixed,
                       got->rate, want.fixed, want.rate);
                CU_FAIL("the fit is not the class's");
            }
        }
        /* the time measured, through mp_node_estimate */
        uint32_t n_timed, at = timed_node(&k[i], &n_timed);
        CU_ASSERT_EQUAL(n_timed, 1u);
        if (b->grad || b->train)
            CU_ASSERT_EQUAL(mp_graph_set_node_cost(k[i].g, at, k[i].flops,
                                                   k[i].bytes, -1),
                            MP_OK);
        mp_op_cost e;
        CU_ASSERT_EQUAL_FATAL(mp_node_estimate(k[i].g, at, &d, &e), MP_OK);
        if (fabs(e.seconds / m.bench_s[i] - 1) > 1e-9) {
            printf("\n  %s: predicted %g s, measured %g s\n", b->name,
                   e.seconds, m.bench_s[i]);
            CU_FAIL("the profile does not give the time back");
        }
        /* without the fits: the class figures and the overhead */
        mp_device old = d;
        memset(old.cal.gemm_fit, 0, sizeof old.cal.gemm_fit);
        memset(old.cal.conv_fit, 0, sizeof old.cal.conv_fit);
        memset(old.cal.attention_fit, 0, sizeof old.cal.attention_fit);
        memset(old.cal.family_fit, 0, sizeof old.cal.family_fit);
        CU_ASSERT_EQUAL_FATAL(mp_node_estimate(k[i].g, at, &old, &e), MP_OK);
        mp__kernel_desc kd;
        CU_ASSERT_EQUAL_FATAL(mp__node_kernel_desc(k[i].g, at, &kd), MP_OK);
        double rate = 0, work = memory ? k[i].bytes : k[i].flops;
        if (b->kind == MPV_CB_GEMM)
            rate = d.cal.gemm[0][b->cls];
        else if (b->kind == MPV_CB_CONV)
            rate = b->grad ? d.cal.conv_grad[0][b->cls]
                           : d.cal.conv[0][b->cls];
        else if (b->kind == MPV_CB_ATTENTION)
            rate = b->grad ? d.cal.attention_grad[0] : d.cal.attention[0];
        else
            rate = b->cls == MP_FAM_COPY ? d.cal.copy_bw
                   : b->cls == MP_FAM_POINTWISE || b->cls == MP_FAM_SGD ||
                           b->cls == MP_FAM_ADAM
                       ? d.cal.pointwise_bw
                       : d.cal.reduce_bw;
        double other = memory ? k[i].flops / d.flops_fp32
                              : k[i].bytes / d.mem_bw;
        double tw = work / rate;
        CU_ASSERT(rate > 0);
        CU_ASSERT(close_rel(e.seconds,
                            (tw > other ? tw : other) + d.kernel_overhead));
        mpv_cal_case_free(&k[i]);
    }
    mpv_cal_text_free(c, text);
    free(k);
    free(m.bench_s);
    free(m.bench16_s);
    mp_ctx_destroy(c);
}

static CU_TestInfo tests[] = {
    {"the affine fit of made-up measurements", t_fit},
    {"the affine fits give every class's times back", t_affine_round_trip},
    {"the convolution and attention benchmarks run in bfloat16",
     t_benches_bf16},
    {"every benchmark lowers to one real kernel of its class",
     t_benches_lower},
    {"the executor's cost per node, host-bound", t_launch_case},
    {"the profile gives the measured times back", t_profile_round_trip},
    CU_TEST_INFO_NULL,
};

void mp_register_calibrate(void);
void mp_register_calibrate(void) { mp_test_add_suite("calibrate", tests); }
