/* Device profiles for the cost model: builtin figures for common GPUs and
 * user profiles read from JSON (docs/cost-model.md). */
#include "base.h"
#include "json.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define TF 1e12
#define GBS 1e9
#define MIB (1024ull * 1024ull)

/* Dense (no sparsity) peaks from the vendors' data sheets; host-link
 * figures are what a pinned cudaMemcpyAsync reaches on the PCIe
 * generation (about 85% of the raw rate), not the raw rate. Memory sizes
 * as the driver reports them. */
static const mp_device builtin[] = {
    /* h200: generated from analysis/profiles/h200.json (the profile
     * `memplan calibrate` writes; scripts/gen-builtin-profile.py) */
#include "builtin_h200.inc"
    {"h100", 67 * TF, 67 * TF, 494.7 * TF, 989.5 * TF, 989.5 * TF,
     1979 * TF, 1979 * TF, 3.35e12, 81559 * MIB, 55 * GBS, 55 * GBS, 10e-6,
     2, 4e-6, 0, 0, 0, 0, {0}},
    {"a100", 19.5 * TF, 19.5 * TF, 156 * TF, 312 * TF, 312 * TF, 0,
     624 * TF, 2.039e12, 81920 * MIB, 25 * GBS, 25 * GBS, 10e-6, 2, 5e-6, 0,
     0, 0, 0, {0}},
    {"l4", 0.49 * TF, 30.3 * TF, 60 * TF, 121 * TF, 121 * TF, 242.5 * TF,
     242.5 * TF, 300e9, 23034 * MIB, 25 * GBS, 25 * GBS, 10e-6, 2, 5e-6, 0,
     0, 0, 0, {0}},
    /* T4 host link: FlexGen's fitted CPU->GPU figure (12.89 GiB/s). */
    {"t4", 0.25 * TF, 8.1 * TF, 0, 65 * TF, 0, 0, 130 * TF, 320e9,
     15360 * MIB, 12.89 * 1073741824.0, 12.89 * 1073741824.0, 10e-6, 2,
     5e-6, 0, 0, 0, 0, {0}},
};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

size_t mp_device_builtin_count(void) { return N_BUILTIN; }

const char *mp_device_builtin_name(size_t i)
{
    return i < N_BUILTIN ? builtin[i].name : NULL;
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

mp_status mp_device_builtin(mp_ctx *ctx, const char *name, mp_device *out)
{
    if (!ctx || !name || !out)
        return MP_ERR_INVALID_ARG;
    for (size_t i = 0; i < N_BUILTIN; i++)
        if (ieq(name, builtin[i].name)) {
            *out = builtin[i];
            return MP_OK;
        }
    return mp__err(ctx, MP_ERR_NOT_FOUND,
                  "unknown device '%s' (builtin: h200, h100, a100, l4, t4; "
                  "or a JSON profile file)",
                  name);
}

/* ---- JSON profiles ------------------------------------------------------
 * Read with the library's JSON reader (frontends/json/json.h). The figures
 * given override those of "base" wherever "base" stands in the object. */
enum { P_NAME, P_BASE, P_FLOPS, P_VERSION, P_CALIB, P_GPU, P_FIELDS };
static const char *const profile_names[] = {
    "name", "base", "flops", "version", "calibration", "gpu",
    "memory_bytes", "memory_bandwidth",
    "h2d_bandwidth", "d2h_bandwidth", "link_latency", "kernel_overhead",
    "copy_engines", "host_memory_bytes", "disk_bytes", "disk_read_bandwidth",
    "disk_write_bandwidth", "float64", "float32", "tf32", "float16",
    "bfloat16", "float8", "int8"};
#define N_PROFILE 17 /* then the keys of "flops" */
/* per key from P_FIELDS: where it goes, and b (bytes), c (copy engines)
 * or d (a figure >= 0) */
static const size_t profile_off[] = {
    0, 0, 0, 0, 0, 0,
    offsetof(mp_device, mem_bytes), offsetof(mp_device, mem_bw),
    offsetof(mp_device, h2d_bw), offsetof(mp_device, d2h_bw),
    offsetof(mp_device, link_latency), offsetof(mp_device, kernel_overhead),
    offsetof(mp_device, copy_engines), offsetof(mp_device, host_mem_bytes),
    offsetof(mp_device, disk_bytes), offsetof(mp_device, disk_read_bw),
    offsetof(mp_device, disk_write_bw), offsetof(mp_device, flops_fp64),
    offsetof(mp_device, flops_fp32), offsetof(mp_device, flops_tf32),
    offsetof(mp_device, flops_fp16), offsetof(mp_device, flops_bf16),
    offsetof(mp_device, flops_fp8), offsetof(mp_device, flops_int8)};
static const char profile_kind[] = "......" "bdddddcbbdd" "ddddddd";

typedef struct profile {
    mp__jr r;
    mp_device given;
    uint32_t set;       /* bit k: key k was given */
    size_t base_s, base_off; /* "base": its name in the arena, offset */
    int64_t version;
    size_t version_off, calib_off;
} profile;

/* The value v of key k (>= P_FIELDS) into p->given. */
static mp_status profile_field(profile *p, int k, const mp__jval *v)
{
    char *at = (char *)&p->given + profile_off[k];
    uint64_t u;
    int64_t i;
    double d;
    mp_status st;
    switch (profile_kind[k]) {
    case 'b':
        if (!(st = mp__jr_u64(&p->r, v, UINT64_MAX,
                              "a whole number of bytes >= 0", &u)))
            memcpy(at, &u, sizeof u);
        return st;
    case 'c':
        if (!(st = mp__jr_i64(&p->r, v, 1, 64, "an integer in [1, 64]", &i)))
            p->given.copy_engines = (int)i;
        return st;
    default:
        if (!(st = mp__jr_num(&p->r, v, 0, "a finite number >= 0", &d)))
            memcpy(at, &d, sizeof d);
        return st;
    }
}

/* "flops": an object of dtype: FLOP/s. */
static mp_status profile_flops(profile *p, const mp__jval *v)
{
    static const mp__jkeys keys = {profile_names + N_PROFILE, 7, 0, NULL};
    mp__jobj o;
    mp__jval x;
    int k;
    mp_status st;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(&p->r, v, "an object of dtype: FLOP/s");
    mp__jr_object_at(&p->r, &o, v, &keys);
    while (!(st = mp__jr_member(&p->r, &o, &k)) && k != MP__JK_END) {
        if ((st = mp__jr_value(&p->r, &x)) ||
            (st = profile_field(p, N_PROFILE + k, &x)))
            return st;
        p->set |= 1u << (N_PROFILE + k);
    }
    return st;
}

/* ---- "calibration" (what memplan calibrate measured) ----------------------
 * Format version 1:
 *   "calibration": {
 *     "gemm": {"float32": CLASSES, "bfloat16": CLASSES},   achieved FLOP/s
 *     "conv": {"float32": CONV_CLASSES, "bfloat16": CONV_CLASSES},
 *     "attention": {"float32": FLOP/s, "bfloat16": FLOP/s},
 *     "conv_grad": as "conv", "attention_grad": as "attention" (the
 *       backward passes; optional),
 *     "pointwise_bandwidth", "reduce_bandwidth", "copy_bandwidth": bytes/s,
 *     "copy_compute_overlap": 0..1,
 *     "affine": {                    optional: affine fits, each optional
 *       "gemm": {"float32": {CLASS: FIT, ...}, "bfloat16": ...},
 *       "conv", "conv_grad": as "gemm" with CONV_CLASSES,
 *       "attention", "attention_grad": as "gemm" with ATTN_CLASSES,
 *       FAMILY: FIT, FAMILY_grad: FIT (float32 kernels)
 *     }
 *   }
 * FIT: {"rate": work/s, "fixed": seconds}; ATTN_CLASSES: {"short",
 * "medium", "long"}; FAMILY: MP_FAM_* ("pointwise", "reduce", "copy",
 * "batchnorm", "reduction", "rownorm", "sgd", "adam"; no "sgd_grad" or
 * "adam_grad").
 * CLASSES: {"skinny", "small", "medium", "large"}; CONV_CLASSES:
 * {"pointwise", "spatial", "depthwise"}. Required: gemm.float32 with every
 * class, pointwise_bandwidth and reduce_bandwidth; a dtype object given
 * has every class. "x-..." keys (the measured shapes, raw times) are
 * skipped. */
#define PROFILE_VERSION 1
static const char *const gemm_cls[] = {"skinny", "small", "medium", "large"};
static const char *const conv_cls[] = {"pointwise", "spatial", "depthwise"};
static const char *const cal_dt[] = {"float32", "bfloat16"};
enum { C_GEMM, C_CONV, C_PW, C_RED, C_COPY, C_OVERLAP, C_ATT, C_CONV_GRAD,
       C_ATT_GRAD, C_AFFINE, C_N_ };
static const char *const cal_names[] = {
    "gemm", "conv", "pointwise_bandwidth", "reduce_bandwidth",
    "copy_bandwidth", "copy_compute_overlap", "attention", "conv_grad",
    "attention_grad", "affine"};
static const char *const attn_cls[] = {"short", "medium", "long"};
/* "affine": the tables (a dtype object of classes each), then the
 * memory-bound families (MP_FAM_*), forward and backward (the optimizer
 * steps have no backward) */
enum { A_GEMM, A_CONV, A_CONV_GRAD, A_ATT, A_ATT_GRAD, A_FAM, A_N_ =
       A_FAM + 2 * MP_FAM_CLASSES - 2 };
static const char *const affine_names[] = {
    "gemm", "conv", "conv_grad", "attention", "attention_grad",
    "pointwise", "reduce", "copy", "batchnorm", "reduction", "rownorm",
    "sgd", "adam", "pointwise_grad", "reduce_grad", "copy_grad",
    "batchnorm_grad", "reduction_grad", "rownorm_grad"};
_Static_assert(sizeof affine_names / sizeof *affine_names == A_N_ &&
                   MP_FAM_ADAM == MP_FAM_CLASSES - 1 &&
                   MP_FAM_SGD == MP_FAM_CLASSES - 2,
               "affine_names: the families in MP_FAM_* order, the "
               "optimizer steps last");

/* An object of names (n) to numbers >= 0, into out[]; the names of the
 * mask `need` must be there; what: the error's "an object of ..." */
static mp_status cal_numbers(mp__jr *r, const mp__jval *v,
                             const char *const *names, int n, uint64_t need,
                             const char *what, double *out)
{
    const mp__jkeys keys = {names, n, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval x;
    int k;
    mp_status st;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(r, v, what);
    mp__jr_object_at(r, &o, v, &keys);
    while (!(st = mp__jr_member(r, &o, &k)) && k != MP__JK_END)
        if ((st = mp__jr_value(r, &x)) ||
            (st = mp__jr_num(r, &x, 0, "a finite number >= 0", &out[k])))
            return st;
    return st ? st : mp__jr_require(r, &o, need);
}

/* An object of every name of names (n) to a number >= 0, into out[]. */
static mp_status cal_classes(mp__jr *r, const mp__jval *v,
                             const char *const *names, int n, double *out)
{
    return cal_numbers(r, v, names, n, (1ull << n) - 1,
                       "an object of class: FLOP/s", out);
}

/* "gemm" or "conv": an object of dtype: classes. */
static mp_status cal_table(mp__jr *r, const mp__jval *v,
                           const char *const *names, int n, double *out,
                           int stride, int need_fp32)
{
    static const mp__jkeys keys = {cal_dt, 2, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval x;
    int k;
    mp_status st;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(r, v, "an object of dtype: classes");
    mp__jr_object_at(r, &o, v, &keys);
    while (!(st = mp__jr_member(r, &o, &k)) && k != MP__JK_END)
        if ((st = mp__jr_value(r, &x)) ||
            (st = cal_classes(r, &x, names, n, out + (size_t)k * stride)))
            return st;
    return st ? st : mp__jr_require(r, &o, need_fp32 ? 1u : 0u);
}

/* "attention": an object of dtype: FLOP/s, each optional. */
static mp_status cal_attention(mp__jr *r, const mp__jval *v, double *out)
{
    return cal_numbers(r, v, cal_dt, 2, 0, "an object of dtype: FLOP/s",
                       out);
}

/* One fit: {"rate": work/s, "fixed": seconds}, both given. */
static mp_status cal_fit(mp__jr *r, const mp__jval *v, mp_cal_fit *out)
{
    static const char *const names[] = {"rate", "fixed"};
    double f[2] = {0, 0};
    mp_status st = cal_numbers(r, v, names, 2, 3,
                               "an object of \"rate\" and \"fixed\"", f);
    out->rate = f[0];
    out->fixed = f[1];
    return st;
}

/* An affine table: an object of dtype (optional each) to an object of
 * class (optional each) to a fit; the fit of dtype d and class k at
 * out[d * dt_stride + k * cls_stride]. */
static mp_status cal_fit_table(mp__jr *r, const mp__jval *v,
                               const char *const *names, int n,
                               mp_cal_fit *out, size_t dt_stride,
                               size_t cls_stride)
{
    static const mp__jkeys dts = {cal_dt, 2, MP__JK_EXT, NULL};
    const mp__jkeys cls = {names, n, MP__JK_EXT, NULL};
    mp__jobj o, oc;
    mp__jval x, y;
    int d, k;
    mp_status st;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(r, v, "an object of dtype: classes");
    mp__jr_object_at(r, &o, v, &dts);
    while (!(st = mp__jr_member(r, &o, &d)) && d != MP__JK_END) {
        if ((st = mp__jr_value(r, &x)))
            return st;
        if (x.type != MP__JT_OBJECT)
            return mp__jr_type_err(r, &x, "an object of class: fit");
        mp__jr_object_at(r, &oc, &x, &cls);
        while (!(st = mp__jr_member(r, &oc, &k)) && k != MP__JK_END)
            if ((st = mp__jr_value(r, &y)) ||
                (st = cal_fit(r, &y, out + (size_t)d * dt_stride +
                                         (size_t)k * cls_stride)))
                return st;
        if (st)
            return st;
    }
    return st;
}

/* "affine": the classes' fits, each optional. */
static mp_status cal_affine(mp__jr *r, const mp__jval *v,
                            mp_device_calibration *c)
{
    static const mp__jkeys keys = {affine_names, A_N_, MP__JK_EXT, NULL};
    mp__jobj o;
    mp__jval x;
    int k;
    mp_status st;
    const size_t cs = MP_CONV_CLASSES * 2, as = MP_ATTN_CLASSES * 2;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(r, v, "an object of class: fit");
    mp__jr_object_at(r, &o, v, &keys);
    while (!(st = mp__jr_member(r, &o, &k)) && k != MP__JK_END) {
        if ((st = mp__jr_value(r, &x)))
            return st;
        switch (k) {
        case A_GEMM:
            st = cal_fit_table(r, &x, gemm_cls, MP_GEMM_CLASSES,
                               &c->gemm_fit[0][0], MP_GEMM_CLASSES, 1);
            break;
        case A_CONV: case A_CONV_GRAD:
            st = cal_fit_table(r, &x, conv_cls, MP_CONV_CLASSES,
                               &c->conv_fit[0][0][k == A_CONV_GRAD], cs, 2);
            break;
        case A_ATT: case A_ATT_GRAD:
            st = cal_fit_table(r, &x, attn_cls, MP_ATTN_CLASSES,
                               &c->attention_fit[0][0][k == A_ATT_GRAD], as,
                               2);
            break;
        default: {
            /* the forwards of every family, then the backwards of the
             * families before the optimizer steps (the last two) */
            int f = k - A_FAM, g = f >= MP_FAM_CLASSES;
            st = cal_fit(r, &x, &c->family_fit[g ? f - MP_FAM_CLASSES : f][g]);
            break;
        }
        }
        if (st)
            return st;
    }
    return st;
}

static mp_status profile_calibration(profile *p, const mp__jval *v)
{
    static const mp__jkeys keys = {cal_names, C_N_, MP__JK_EXT, NULL};
    mp_device_calibration *c = &p->given.cal;
    mp__jobj o;
    mp__jval x;
    int k;
    mp_status st;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_type_err(&p->r, v, "an object (memplan calibrate)");
    p->calib_off = v->off;
    mp__jr_object_at(&p->r, &o, v, &keys);
    while (!(st = mp__jr_member(&p->r, &o, &k)) && k != MP__JK_END) {
        if ((st = mp__jr_value(&p->r, &x)))
            return st;
        switch (k) {
        case C_GEMM:
            st = cal_table(&p->r, &x, gemm_cls, MP_GEMM_CLASSES, &c->gemm[0][0],
                           MP_GEMM_CLASSES, 1);
            break;
        case C_CONV:
            st = cal_table(&p->r, &x, conv_cls, MP_CONV_CLASSES, &c->conv[0][0],
                           MP_CONV_CLASSES, 0);
            break;
        case C_CONV_GRAD:
            st = cal_table(&p->r, &x, conv_cls, MP_CONV_CLASSES,
                           &c->conv_grad[0][0], MP_CONV_CLASSES, 0);
            break;
        case C_ATT:
            st = cal_attention(&p->r, &x, c->attention);
            break;
        case C_ATT_GRAD:
            st = cal_attention(&p->r, &x, c->attention_grad);
            break;
        case C_AFFINE:
            st = cal_affine(&p->r, &x, c);
            break;
        case C_OVERLAP:
            st = mp__jr_num(&p->r, &x, 0, "a number in [0, 1]", &c->overlap);
            if (!st && c->overlap > 1)
                st = mp__jr_type_err(&p->r, &x, "a number in [0, 1]");
            break;
        default:
            st = mp__jr_num(&p->r, &x, 0, "a finite number >= 0",
                            k == C_PW    ? &c->pointwise_bw
                            : k == C_RED ? &c->reduce_bw
                                         : &c->copy_bw);
            break;
        }
        if (st)
            return st;
    }
    return st ? st : mp__jr_require(&p->r, &o, 1u << C_GEMM | 1u << C_PW |
                                                    1u << C_RED);
}

/* Member k of the profile, its value v. */
static mp_status profile_member(mp__jr *r, void *prof, int k,
                                const mp__jval *v)
{
    profile *p = prof;
    const char *s;
    mp_status st;
    (void)r;
    p->set |= 1u << k;
    switch (k) {
    case P_NAME:
        if (v->type != MP__JT_STRING || !v->n ||
            v->n >= sizeof p->given.name) {
            char want[64];
            snprintf(want, sizeof want, "a string of 1 to %zu characters",
                     sizeof p->given.name - 1);
            return mp__jr_type_err(&p->r, v, want);
        }
        snprintf(p->given.name, sizeof p->given.name, "%s",
                 mp__jr_str(&p->r, v->s));
        return MP_OK;
    case P_BASE:
        if ((st = mp__jr_string(&p->r, v, false, "a builtin device name",
                                &s)))
            return st;
        p->base_s = v->s;
        p->base_off = v->off;
        return MP_OK;
    case P_FLOPS: return profile_flops(p, v);
    case P_VERSION:
        p->version_off = v->off;
        return mp__jr_i64(&p->r, v, 1, INT64_MAX, "an integer >= 1",
                          &p->version);
    case P_CALIB: return profile_calibration(p, v);
    case P_GPU:
        return mp__jr_string(&p->r, v, false, "a string (the GPU's name)",
                             &s);
    default: return profile_field(p, k, v);
    }
}

/* The profile: "base" (if any), the figures given over it, checks. */
static mp_status profile_make(profile *p, const mp__jobj *o, mp_device *out)
{
    mp_device d;
    memset(&d, 0, sizeof d);
    d.copy_engines = 1;
    if (p->set >> P_BASE & 1) {
        const char *base = mp__jr_str(&p->r, p->base_s);
        mp_status st = mp_device_builtin(p->r.ctx, base, &d);
        if (st) {
            mp__jr_push_key(&p->r, "base");
            return mp__jr_err(&p->r, st, p->base_off, "unknown device '%s'",
                              base);
        }
    }
    if (p->set >> P_NAME & 1)
        memcpy(d.name, p->given.name, sizeof d.name);
    for (int k = P_FIELDS; k < (int)(sizeof profile_off / sizeof *profile_off);
         k++)
        if (p->set >> k & 1)
            memcpy((char *)&d + profile_off[k],
                   (const char *)&p->given + profile_off[k],
                   profile_kind[k] == 'c' ? sizeof d.copy_engines : 8);
    if (!(p->set & 3))
        return mp__jr_err(&p->r, MP_ERR_PARSE, o->off,
                          "a profile needs \"name\" or \"base\"");
    if ((p->set >> P_VERSION & 1) && p->version != PROFILE_VERSION)
        return mp__jr_err(&p->r, MP_ERR_PARSE, p->version_off,
                          "profile version %lld is not one this memplan "
                          "reads (version %d; run memplan calibrate again)",
                          (long long)p->version, PROFILE_VERSION);
    if (p->set >> P_CALIB & 1) {
        if (!(p->set >> P_VERSION & 1))
            return mp__jr_err(&p->r, MP_ERR_PARSE, p->calib_off,
                              "a \"calibration\" needs the profile's "
                              "\"version\": %d", PROFILE_VERSION);
        d.cal = p->given.cal;
        d.cal.version = PROFILE_VERSION;
    }
    if (d.flops_fp32 <= 0 && d.flops_fp16 <= 0 && d.flops_bf16 <= 0)
        return mp__jr_err(&p->r, MP_ERR_PARSE, o->off,
                          "\"flops\" needs a float32, float16 or bfloat16 "
                          "peak above 0");
    if (d.mem_bw <= 0)
        return mp__jr_err(&p->r, MP_ERR_PARSE, o->off,
                          "\"memory_bandwidth\" must be above 0");
    if (d.h2d_bw <= 0 && d.d2h_bw > 0)
        d.h2d_bw = d.d2h_bw;
    if (d.d2h_bw <= 0 && d.h2d_bw > 0)
        d.d2h_bw = d.h2d_bw;
    *out = d;
    return MP_OK;
}

/* A profile from text (len bytes), src naming it in messages. */
static mp_status profile_load(mp_ctx *ctx, const char *text, size_t len,
                              const char *src, void *out)
{
    static const mp__jkeys keys = {profile_names, N_PROFILE, MP__JK_EXT, NULL};
    profile p;
    mp__jobj o;
    memset(&p, 0, sizeof p);
    mp__jr_init(&p.r, ctx, src, text, len, 0);
    mp_status st = mp__jr_read_doc(&p.r, &o, &keys, profile_member, &p);
    if (!st)
        st = profile_make(&p, &o, out);
    mp__jr_free(&p.r);
    return st;
}

mp_status mp_device_load_json_string(mp_ctx *ctx, const char *text,
                                     const char *source_name, mp_device *out)
{
    if (!ctx || !text || !out)
        return MP_ERR_INVALID_ARG;
    return profile_load(ctx, text, strlen(text),
                        source_name ? source_name : "<string>", out);
}

mp_status mp_device_load_json(mp_ctx *ctx, const char *path, mp_device *out)
{
    if (!ctx || !path || !out)
        return MP_ERR_INVALID_ARG;
    return mp__json_load_file(ctx, path, profile_load, out);
}

mp_status mp_device_get(mp_ctx *ctx, const char *name_or_path,
                        mp_device *out)
{
    if (!ctx || !name_or_path || !out)
        return MP_ERR_INVALID_ARG;
    for (size_t i = 0; i < N_BUILTIN; i++)
        if (ieq(name_or_path, builtin[i].name)) {
            *out = builtin[i];
            return MP_OK;
        }
    if (!strchr(name_or_path, '/') && !strchr(name_or_path, '.'))
        return mp_device_builtin(ctx, name_or_path, out);
    return mp_device_load_json(ctx, name_or_path, out);
}

double mp_device_flops(const mp_device *d, mp_dtype t)
{
    if (!d)
        return 0;
    double f32 = d->flops_fp32 > 0 ? d->flops_fp32
                 : d->flops_fp16 > 0 ? d->flops_fp16 / 8 : d->flops_bf16 / 8;
    double f16 = d->flops_fp16 > 0 ? d->flops_fp16 : f32;
    switch (t) {
    case MP_DTYPE_FLOAT64:
        return d->flops_fp64 > 0 ? d->flops_fp64 : f32;
    case MP_DTYPE_FLOAT16:
        return f16;
    case MP_DTYPE_BFLOAT16:
        return d->flops_bf16 > 0 ? d->flops_bf16 : f16;
    case MP_DTYPE_FLOAT8E4M3FN: case MP_DTYPE_FLOAT8E4M3FNUZ:
    case MP_DTYPE_FLOAT8E5M2: case MP_DTYPE_FLOAT8E5M2FNUZ:
        return d->flops_fp8 > 0 ? d->flops_fp8 : f16;
    case MP_DTYPE_INT8: case MP_DTYPE_UINT8:
        return d->flops_int8 > 0 ? d->flops_int8 : f16;
    default:
        return f32;
    }
}

double mp_device_transfer_seconds(const mp_device *d, uint64_t bytes,
                                  int to_host)
{
    if (!d)
        return 0;
    double bw = to_host ? d->d2h_bw : d->h2d_bw;
    if (bytes == 0)
        return 0;
    if (bw <= 0)
        return HUGE_VAL;
    return d->link_latency + (double)bytes / bw;
}
