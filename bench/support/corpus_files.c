#include "corpus_files.h"
#include "internal.h"

#include <dirent.h>
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

mp_status mpb_load_onnx_dims1(mp_ctx *ctx, const char *path, mp_graph **g)
{
#ifdef MP_WITH_ONNX
    size_t len;
    unsigned char *buf = mpb_read_all(path, &len);
    if (!buf)
        return mp_err(ctx, MP_ERR_IO, "%s: cannot read", path);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    mp_dim_binding binds[64];
    size_t nb = 0;
    for (size_t i = 0; m && m->graph && i < m->graph->n_input; i++) {
        const Onnx__TypeProto *tp = m->graph->input[i]->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !tp->tensor_type->shape)
            continue;
        for (size_t k = 0; k < tp->tensor_type->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d =
                tp->tensor_type->shape->dim[k];
            if (d->value_case ==
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                nb < 64) {
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
