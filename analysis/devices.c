/* Device profiles for the cost model: builtin figures for common GPUs and
 * user profiles read from JSON (docs/cost-model.md). */
#include "base.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
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
    {"h200", 67 * TF, 67 * TF, 494.7 * TF, 989.5 * TF, 989.5 * TF,
     1979 * TF, 1979 * TF, 4.8e12, 143771 * MIB, 55 * GBS, 55 * GBS, 10e-6,
     2, 4e-6, 0, 0, 0, 0},
    {"h100", 67 * TF, 67 * TF, 494.7 * TF, 989.5 * TF, 989.5 * TF,
     1979 * TF, 1979 * TF, 3.35e12, 81559 * MIB, 55 * GBS, 55 * GBS, 10e-6,
     2, 4e-6, 0, 0, 0, 0},
    {"a100", 19.5 * TF, 19.5 * TF, 156 * TF, 312 * TF, 312 * TF, 0,
     624 * TF, 2.039e12, 81920 * MIB, 25 * GBS, 25 * GBS, 10e-6, 2, 5e-6, 0,
     0, 0, 0},
    {"l4", 0.49 * TF, 30.3 * TF, 60 * TF, 121 * TF, 121 * TF, 242.5 * TF,
     242.5 * TF, 300e9, 23034 * MIB, 25 * GBS, 25 * GBS, 10e-6, 2, 5e-6, 0,
     0, 0, 0},
    /* T4 host link: FlexGen's fitted CPU->GPU figure (12.89 GiB/s). */
    {"t4", 0.25 * TF, 8.1 * TF, 0, 65 * TF, 0, 0, 130 * TF, 320e9,
     15360 * MIB, 12.89 * 1073741824.0, 12.89 * 1073741824.0, 10e-6, 2,
     5e-6, 0, 0, 0, 0},
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

/* ---- JSON profiles ---------------------------------------------------------- */
typedef struct {
    mp_ctx *ctx;
    const char *src;
} jctx;

static mp_status num_field(jctx *j, const char *key, json_t *v, double *out)
{
    if (!json_is_number(v))
        return mp__err(j->ctx, MP_ERR_PARSE, "%s: \"%s\" must be a number",
                      j->src, key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0)
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: \"%s\" must be a finite number >= 0", j->src, key);
    *out = x;
    return MP_OK;
}

static mp_status bytes_field(jctx *j, const char *key, json_t *v,
                             uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: \"%s\" must be a whole number of bytes >= 0",
                      j->src, key);
    *out = (uint64_t)json_integer_value(v);
    return MP_OK;
}

static mp_status flops_obj(jctx *j, json_t *o, mp_device *d)
{
    if (!json_is_object(o))
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: \"flops\" must be an object of dtype: FLOP/s",
                      j->src);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        double *dst = NULL;
        if (strcmp(k, "float64") == 0)
            dst = &d->flops_fp64;
        else if (strcmp(k, "float32") == 0)
            dst = &d->flops_fp32;
        else if (strcmp(k, "tf32") == 0)
            dst = &d->flops_tf32;
        else if (strcmp(k, "float16") == 0)
            dst = &d->flops_fp16;
        else if (strcmp(k, "bfloat16") == 0)
            dst = &d->flops_bf16;
        else if (strcmp(k, "float8") == 0)
            dst = &d->flops_fp8;
        else if (strcmp(k, "int8") == 0)
            dst = &d->flops_int8;
        else
            return mp__err(j->ctx, MP_ERR_PARSE,
                          "%s: unknown key \"flops.%s\" (float64, float32, "
                          "tf32, float16, bfloat16, float8, int8)",
                          j->src, k);
        char key[64];
        snprintf(key, sizeof key, "flops.%s", k);
        mp_status st = num_field(j, key, v, dst);
        if (st)
            return st;
    }
    return MP_OK;
}

static mp_status read_profile(jctx *j, json_t *root, mp_device *out)
{
    if (!json_is_object(root))
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: a device profile is a JSON object", j->src);
    mp_device d;
    memset(&d, 0, sizeof d);
    d.copy_engines = 1;
    json_t *base = json_object_get(root, "base");
    if (base) {
        if (!json_is_string(base))
            return mp__err(j->ctx, MP_ERR_PARSE,
                          "%s: \"base\" must be a builtin device name",
                          j->src);
        mp_status st = mp_device_builtin(j->ctx, json_string_value(base), &d);
        if (st)
            return mp__err(j->ctx, st, "%s: \"base\": unknown device '%s'",
                          j->src, json_string_value(base));
    }
    const char *k;
    json_t *v;
    mp_status st = MP_OK;
    int named = 0;
    json_object_foreach(root, k, v) {
        if (strcmp(k, "base") == 0)
            continue;
        if (strncmp(k, "x-", 2) == 0)
            continue; /* extension keys, as in the graph format */
        if (strcmp(k, "name") == 0) {
            if (!json_is_string(v) || !json_string_value(v)[0] ||
                strlen(json_string_value(v)) >= sizeof d.name)
                return mp__err(j->ctx, MP_ERR_PARSE,
                              "%s: \"name\" must be a string of 1 to %zu "
                              "characters",
                              j->src, sizeof d.name - 1);
            snprintf(d.name, sizeof d.name, "%s", json_string_value(v));
            named = 1;
        } else if (strcmp(k, "flops") == 0) {
            st = flops_obj(j, v, &d);
        } else if (strcmp(k, "memory_bytes") == 0) {
            st = bytes_field(j, k, v, &d.mem_bytes);
        } else if (strcmp(k, "memory_bandwidth") == 0) {
            st = num_field(j, k, v, &d.mem_bw);
        } else if (strcmp(k, "h2d_bandwidth") == 0) {
            st = num_field(j, k, v, &d.h2d_bw);
        } else if (strcmp(k, "d2h_bandwidth") == 0) {
            st = num_field(j, k, v, &d.d2h_bw);
        } else if (strcmp(k, "link_latency") == 0) {
            st = num_field(j, k, v, &d.link_latency);
        } else if (strcmp(k, "kernel_overhead") == 0) {
            st = num_field(j, k, v, &d.kernel_overhead);
        } else if (strcmp(k, "copy_engines") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > 64)
                return mp__err(j->ctx, MP_ERR_PARSE,
                              "%s: \"copy_engines\" must be an integer in "
                              "[1, 64]",
                              j->src);
            d.copy_engines = (int)json_integer_value(v);
        } else if (strcmp(k, "host_memory_bytes") == 0) {
            st = bytes_field(j, k, v, &d.host_mem_bytes);
        } else if (strcmp(k, "disk_bytes") == 0) {
            st = bytes_field(j, k, v, &d.disk_bytes);
        } else if (strcmp(k, "disk_read_bandwidth") == 0) {
            st = num_field(j, k, v, &d.disk_read_bw);
        } else if (strcmp(k, "disk_write_bandwidth") == 0) {
            st = num_field(j, k, v, &d.disk_write_bw);
        } else {
            return mp__err(j->ctx, MP_ERR_PARSE,
                          "%s: unknown key \"%s\" (docs/cost-model.md lists "
                          "the keys; x-... keys are ignored)",
                          j->src, k);
        }
        if (st)
            return st;
    }
    if (!named && !base)
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: a profile needs \"name\" or \"base\"", j->src);
    if (d.flops_fp32 <= 0 && d.flops_fp16 <= 0 && d.flops_bf16 <= 0)
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: \"flops\" needs a float32, float16 or bfloat16 "
                      "peak above 0",
                      j->src);
    if (d.mem_bw <= 0)
        return mp__err(j->ctx, MP_ERR_PARSE,
                      "%s: \"memory_bandwidth\" must be above 0", j->src);
    if (d.h2d_bw <= 0 && d.d2h_bw > 0)
        d.h2d_bw = d.d2h_bw;
    if (d.d2h_bw <= 0 && d.h2d_bw > 0)
        d.d2h_bw = d.h2d_bw;
    *out = d;
    return MP_OK;
}

mp_status mp_device_load_json_string(mp_ctx *ctx, const char *text,
                                     const char *source_name, mp_device *out)
{
    if (!ctx || !text || !out)
        return MP_ERR_INVALID_ARG;
    const char *src = source_name ? source_name : "<string>";
    json_error_t e;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!root)
        return mp__err(ctx, MP_ERR_PARSE, "%s:%d:%d: %s", src, e.line,
                      e.column, e.text);
    jctx j = {ctx, src};
    mp_status st = read_profile(&j, root, out);
    json_decref(root);
    return st;
}

mp_status mp_device_load_json(mp_ctx *ctx, const char *path, mp_device *out)
{
    if (!ctx || !path || !out)
        return MP_ERR_INVALID_ARG;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open the device profile",
                      path);
    json_error_t e;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &e);
    fclose(f);
    if (!root)
        return mp__err(ctx, MP_ERR_PARSE, "%s:%d:%d: %s", path, e.line,
                      e.column, e.text);
    jctx j = {ctx, path};
    mp_status st = read_profile(&j, root, out);
    json_decref(root);
    return st;
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
