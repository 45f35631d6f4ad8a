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
    memset(&m, 0, sizeof m);
    snprintf(m.gpu, sizeof m.gpu, "Test GPU");
    m.mem_bytes = 1ull << 34;
    m.copy_engines = 2;
    m.reps = 7;
    m.launch_s = 1e-7; /* every kernel well above it: see rate() */
    m.h2d_bw = 5e10;
    m.d2h_bw = 4e10;
    m.link_latency = 8e-6;
    m.d2d_bw = 1e15; /* memory never the bound of a GEMM or conv here */
    m.overlap_h2d = 0.8;
    m.overlap_d2h = 1.2; /* clamped to 1: the mean 0.9 */
    m.bench_s = calloc(nb, sizeof *m.bench_s);
    m.bench16_s = calloc(nb, sizeof *m.bench16_s);
    mpv_cal_case *k = calloc(nb, sizeof *k);
    CU_ASSERT_FATAL(m.bench_s && m.bench16_s && k);
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
    CU_ASSERT_EQUAL_FATAL(mpv_cal_profile_json(c, "testgpu", &m, &text),
                          MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"version\": 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Test GPU"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gemm_4096"));
    mp_device d;
    mp_status st = mp_device_load_json_string(c, text, "cal.json", &d);
    if (st)
        printf("\n  %s\n%s\n", mp_ctx_message(c), text);
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
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
    memset(&m, 0, sizeof m);
    snprintf(m.gpu, sizeof m.gpu, "Test GPU");
    m.mem_bytes = 1ull << 34;
    m.copy_engines = 2;
    m.h2d_bw = m.d2h_bw = 5e10;
    m.link_latency = 8e-6;
    m.d2d_bw = 1e12;
    m.launch_s = 3e-6;
    m.node_s = 9e-6;
    m.reps = 1;
    m.bench_s = calloc(nb, sizeof *m.bench_s);
    m.bench16_s = calloc(nb, sizeof *m.bench16_s);
    CU_ASSERT_FATAL(m.bench_s && m.bench16_s);
    for (size_t i = 0; i < nb; i++) {
        m.bench_s[i] = 1e-3;
        m.bench16_s[i] = -1;
    }
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

static CU_TestInfo tests[] = {
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
