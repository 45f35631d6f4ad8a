/* calibrate_cmd.c - `memplan calibrate --device NAME -o profile.json`
 * (memplan-validate calibrate): times the executor's kernels by class on
 * the GPU and writes a calibrated device profile (calibrate.h;
 * docs/cost-model.md). Progress lines go to stderr. */
#include "calibrate.h"
#include "command.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MP_WITH_CUDA
/* Times benchmark b with operands of dtype dt into *t (left as it is
 * when the executor has no kernel for it), its FLOPs into *flops (may be
 * NULL); 0 or an exit code (printed). */
static int time_bench(mp_ctx *ctx, mpv_cal_gpu *g, int reps,
                      const mpv_cal_bench *b, mp_dtype dt, double *t,
                      double *flops)
{
    const char *tag = dt == MP_DTYPE_FLOAT32 ? "" : " (bf16)";
    char why[256];
    mpv_cal_case c;
    mp_status st = mpv_cal_case_make_dt(ctx, b, dt, &c);
    if (st)
        return cli_fail(ctx, st, b->name);
    if (flops)
        *flops = c.flops;
    const char *synth = mpv_cal_case_synthetic(&c);
    int rc = 0;
    if (synth) {
        fprintf(stderr, "calibrate: %-22s%s the executor has no kernel for "
                "it (%s); not measured\n", b->name, tag, synth);
    } else if (mpv_cal_time_program(g, c.prog, c.timed, reps, t, why,
                                    sizeof why)) {
        cli_error("calibrate: %s%s: %s", b->name, tag, why);
        rc = CLI_EXIT_INTERNAL;
    } else if (b->kind == MPV_CB_GEMM || b->kind == MPV_CB_CONV ||
               b->kind == MPV_CB_ATTENTION) {
        fprintf(stderr, "calibrate: %-22s %9.3f ms  %7.2f TFLOP/s%s\n",
                b->name, *t * 1e3, c.flops / *t / 1e12, tag);
    } else {
        fprintf(stderr, "calibrate: %-22s %9.3f ms  %7.1f GB/s%s\n",
                b->name, *t * 1e3, c.bytes / *t / 1e9, tag);
    }
    mpv_cal_case_free(&c);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    return timespec_get(&ts, TIME_UTC) ? (double)ts.tv_sec + ts.tv_nsec * 1e-9
                                       : 0;
}

/* Times every benchmark into m; 0 or an exit code (printed). */
static int measure(mp_ctx *ctx, mpv_cal_gpu *g, mpv_cal_meas *m)
{
    char why[256];
    double t0 = now_s();
    if (mpv_cal_time_system(g, m->reps, m, why, sizeof why)) {
        cli_error("calibrate: %s", why);
        return CLI_EXIT_INTERNAL;
    }
    /* the executor's cost per node when the host is the bound */
    mpv_cal_case lc;
    mp_status lst = mpv_cal_launch_case(ctx, &lc);
    if (lst)
        return cli_fail(ctx, lst, "calibrate: launch case");
    uint32_t nodes = lc.prog->n_real + lc.prog->n_synthetic;
    double ts = 0;
    if (mpv_cal_time_program(g, lc.prog, NULL, m->reps, &ts, why,
                             sizeof why)) {
        mpv_cal_case_free(&lc);
        cli_error("calibrate: launch case: %s", why);
        return CLI_EXIT_INTERNAL;
    }
    m->node_s = nodes ? ts / nodes : 0;
    fprintf(stderr, "calibrate: per node, host-bound (%u nodes of a tiny "
            "training step) %.2f us\n", nodes, m->node_s * 1e6);
    mpv_cal_case_free(&lc);
    for (size_t i = 0; i < mpv_cal_n_benches; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        double flops = 0;
        int rc = time_bench(ctx, g, m->reps, b, MP_DTYPE_FLOAT32,
                            &m->bench_s[i], &flops);
        /* bfloat16: convolutions and attention on the executor's
         * kernels, GEMMs on cublasGemmEx */
        if (!rc && (b->kind == MPV_CB_CONV || b->kind == MPV_CB_ATTENTION))
            rc = time_bench(ctx, g, m->reps, b, MP_DTYPE_BFLOAT16,
                            &m->bench16_s[i], NULL);
        if (rc)
            return rc;
        if (b->kind == MPV_CB_GEMM) {
            if (mpv_cal_time_gemm16(g, b->a[0], b->a[1], b->a[2], m->reps,
                                    &m->bench16_s[i], why, sizeof why)) {
                cli_error("calibrate: %s (bf16): %s", b->name, why);
                return CLI_EXIT_INTERNAL;
            }
            fprintf(stderr, "calibrate: %-22s %9.3f ms  %7.2f TFLOP/s "
                    "(bf16, cublasGemmEx)\n", b->name,
                    m->bench16_s[i] * 1e3, flops / m->bench16_s[i] / 1e12);
        }
    }
    fprintf(stderr, "calibrate: %zu benchmarks timed in %.0f s\n",
            mpv_cal_n_benches, now_s() - t0);
    return 0;
}
#endif

int mpv_calibrate(cli_args *a)
{
#ifndef MP_WITH_CUDA
    (void)a;
    cli_error("calibrate: built without CUDA (MEMPLAN_WITH_CUDA=OFF): "
              "nothing measured");
    return CLI_EXIT_INPUT;
#else
    const char *name = a->offload.device;
    mp_ctx *ctx = cli_ctx_create();
    mpv_cal_meas m;
    memset(&m, 0, sizeof m);
    m.reps = 7;
    m.bench_s = malloc(mpv_cal_n_benches * sizeof *m.bench_s);
    m.bench16_s = malloc(mpv_cal_n_benches * sizeof *m.bench16_s);
    int rc = ctx && m.bench_s && m.bench16_s ? 0 : CLI_EXIT_INTERNAL;
    if (rc)
        cli_error("out of memory");
    for (size_t i = 0; !rc && i < mpv_cal_n_benches; i++)
        m.bench_s[i] = m.bench16_s[i] = -1;
    char why[256];
    mpv_cal_gpu *g = rc ? NULL : mpv_cal_open(&m, why, sizeof why);
    if (!rc && !g) {
        cli_error("calibrate: %s", why);
        rc = CLI_EXIT_INPUT;
    }
    if (!rc) {
        fprintf(stderr, "calibrate: %s, %.1f GiB, %d copy engines; profile "
                "'%s', medians of %d\n", m.gpu,
                (double)m.mem_bytes / (1u << 30), m.copy_engines, name,
                m.reps);
        rc = measure(ctx, g, &m);
    }
    mpv_cal_close(g);
    char *text = NULL;
    if (!rc) {
        mp_status st = mpv_cal_profile_json(ctx, name, &m, &text);
        if (st)
            rc = cli_fail(ctx, st, "calibrate");
    }
    if (!rc) {
        FILE *f = a->output ? fopen(a->output, "w") : stdout;
        if (!f || fputs(text, f) == EOF || (a->output && fclose(f) != 0)) {
            cli_error("calibrate: cannot write %s",
                      a->output ? a->output : "the standard output");
            rc = CLI_EXIT_INPUT;
        } else if (a->output) {
            fprintf(stderr, "calibrate: wrote %s\n", a->output);
        }
    }
    if (text)
        mpv_cal_text_free(ctx, text);
    free(m.bench_s);
    free(m.bench16_s);
    mp_ctx_destroy(ctx);
    return rc;
#endif
}
