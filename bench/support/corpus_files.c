#include "corpus_files.h"
#include "base.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef MP_WITH_ONNX
#include "onnx.pb-c.h"
#endif

int mpb_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void mpb_list_onnx(const char *dir, int recursive, const char *prefix,
                   char ***out, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb))
            continue;
        if (S_ISDIR(sb.st_mode)) {
            if (recursive)
                mpb_list_onnx(path, recursive, prefix, out, n, cap);
            continue;
        }
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".onnx") != 0)
            continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            char **grown = realloc(*out, nc * sizeof **out);
            if (!grown)
                break;
            *out = grown;
            *cap = nc;
        }
        (*out)[(*n)++] = strdup(path);
    }
    closedir(d);
}

unsigned char *mpb_read_all(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(sz > 0 ? (size_t)sz + 1 : 1);
    *len = buf ? fread(buf, 1, sz > 0 ? (size_t)sz : 0, f) : 0;
    fclose(f);
    if (buf)
        buf[*len] = 0;
    return buf;
}

/* The one table of per-model bindings of ../shared/corpus/models (path
 * below models/), in the CLI's syntax; docs/conformance.md lists the same
 * strings. A model not listed needs none beyond its symbols bound to 1. */
static const struct {
    const char *model;
    const char *dims;
} model_dims[] = {
    /* unnamed batch dim */
    {"tensorrt_polygraphy/residual_block.onnx", "--dim gpu_0/data_0:0=1"},
    /* unnamed sequence length: 3 steps (the model's name: T3) */
    {"tract/qlstm_3-2-3_T3_S1.onnx", "--dim input:0=3"},
    /* MatMul(q[s,b,100], Transpose(k)[100,b,s]) is valid for b = 100 only */
    {"tensorrt_polygraphy/attention_head.onnx",
     "--dim batch=100 --dim sequence_len=100"},
    /* the recogniser's 3 convolution stages need a width of 320 */
    {"paddleocr/en_number_mobile_v2.0_rec_infer.onnx",
     "--dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1=320"},
    /* the direction classifier's input: 48 x 192 (at 1 x 1 its pools
     * have kernels larger than their inputs) */
    {"paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     "--dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1=48 "
     "--dim p2o.DynamicDimension.2=192"},
    /* silero-vad: one 512-sample chunk (16 kHz), batch 1 (a chunk of 1
     * is shorter than the STFT convolution's kernel of 256) */
    {"silero-vad/silero_vad_op18_ifless.onnx",
     "--dim sequence=512 --dim batch=1"},
    /* silero-vad: one 512-sample chunk (16 kHz), batch 1 */
    {"silero-vad/silero_vad_16k_op15.onnx", "--dim sequence=512 --dim batch=1"},
    {"silero-vad/silero_vad_half.onnx", "--dim sequence=512 --dim batch=1"},
    {"silero-vad/silero_vad.onnx",
     "--dim input:0=1 --dim input:1=512 --dim state:1=1"},
    /* inputs declared with no shape: batch 1, 8 heads, 128 tokens, head
     * dim 64; k is given transposed ([.., 64, 128]: q @ k, no Transpose) */
    {"tensorrt_polygraphy/attention.onnx",
     "--shape q=1x8x128x64 --shape k=1x8x64x128 --shape v=1x8x128x64"},
    {"tensorrt_polygraphy/multi_attention.onnx",
     "--shape q=1x8x128x64 --shape k=1x8x64x128 --shape v=1x8x128x64 "
     "--shape q1=1x8x128x64 --shape k2=1x8x64x128 --shape v2=1x8x128x64"},
};

const char *mpb_model_dims(const char *path)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < sizeof model_dims / sizeof model_dims[0]; i++) {
        size_t m = strlen(model_dims[i].model);
        if (len >= m && strcmp(path + len - m, model_dims[i].model) == 0 &&
            (len == m || path[len - m - 1] == '/'))
            return model_dims[i].dims;
    }
    return NULL;
}

int mpb_parse_dims(const char *s, mpb_dims *d)
{
    d->n = 0;
    while (s && *s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        int shape = strncmp(s, "--shape ", 8) == 0;
        if (!shape && strncmp(s, "--dim ", 6) != 0)
            return -1;
        s += shape ? 8 : 6;
        size_t w = strcspn(s, " ");
        const char *eq = memchr(s, '=', w);
        if (!eq || eq == s)
            return -1;
        size_t nlen = (size_t)(eq - s);
        const char *v = eq + 1;
        for (size_t axis = 0; v < s + w; axis++) {
            if (d->n == MPB_MAX_DIMS || nlen + 8 > sizeof d->names[0])
                return -1;
            char *end;
            long long x = strtoll(v, &end, 10);
            if (end == v || x < 0)
                return -1;
            if (shape)
                snprintf(d->names[d->n], sizeof d->names[0], "%.*s:%zu",
                         (int)nlen, s, axis);
            else
                snprintf(d->names[d->n], sizeof d->names[0], "%.*s",
                         (int)nlen, s);
            d->b[d->n].name = d->names[d->n];
            d->b[d->n++].value = x;
            v = end;
            if (!shape || *v != 'x')
                break;
            v++;
        }
        if (v != s + w)
            return -1;
        s += w;
    }
    return 0;
}

mp_status mpb_load_onnx_dims1(mp_ctx *ctx, const char *path, mp_graph **g)
{
#ifdef MP_WITH_ONNX
    size_t len;
    unsigned char *buf = mpb_read_all(path, &len);
    if (!buf)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot read", path);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    mpb_dims table;
    if (mpb_parse_dims(mpb_model_dims(path), &table)) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        free(buf);
        return mp__err(ctx, MP_ERR_INVALID_ARG, "%s: bad entry in the corpus "
                      "bindings table", path);
    }
    mp_dim_binding binds[MPB_MAX_DIMS + 64];
    size_t nb = table.n;
    memcpy(binds, table.b, table.n * sizeof *binds);
    for (size_t i = 0; m && m->graph && i < m->graph->n_input; i++) {
        const Onnx__TypeProto *tp = m->graph->input[i]->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !tp->tensor_type->shape)
            continue;
        for (size_t k = 0; k < tp->tensor_type->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d =
                tp->tensor_type->shape->dim[k];
            if (d->value_case !=
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                !d->dim_param)
                continue;
            bool named = false; /* bound by the table, or already here */
            for (size_t j = 0; j < nb && !named; j++)
                named = strcmp(binds[j].name, d->dim_param) == 0;
            if (!named && nb < MPB_MAX_DIMS + 64) {
                binds[nb].name = d->dim_param;
                binds[nb++].value = 1;
            }
        }
    }
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = binds;
    opt.n_dims = nb;
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, path, &opt, g);
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    free(buf);
    return st;
#else
    (void)ctx;
    (void)path;
    *g = NULL;
    return MP_ERR_UNSUPPORTED;
#endif
}

int mpb_corpus_models(int argc, char **argv, const char *bench, int *verbose,
                      char ***files, size_t *n)
{
    const char *dir = getenv("MEMPLAN_CORPUS");
    if (!dir)
        dir = "/work/shared/corpus";
    *verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            *verbose = 1;
        else
            dir = argv[i];
    }
    char mdir[4096];
    snprintf(mdir, sizeof mdir, "%s/models", dir);
    struct stat sb;
    if (stat(mdir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        printf("%s: skipped: no corpus at %s\n", bench, mdir);
        return 1;
    }
    size_t cap = 0;
    *files = NULL;
    *n = 0;
    mpb_list_onnx(mdir, 1, NULL, files, n, &cap);
    if (*n)
        qsort(*files, *n, sizeof **files, mpb_cmp_str);
    return 0;
}
