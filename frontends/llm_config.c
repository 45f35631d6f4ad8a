/* Decoder-only transformer configs (Hugging Face config.json) for the
 * offload policy search (solvers/flexgen.c). */
#include "base.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int get_uint(json_t *root, const char *const *keys, uint32_t *out,
                    const char **bad)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(root, *keys);
        if (!v)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
            json_integer_value(v) > (json_int_t)UINT32_MAX) {
            *bad = *keys;
            return -1;
        }
        *out = (uint32_t)json_integer_value(v);
        return 1;
    }
    return 0;
}

static mp_status read_config(mp_ctx *ctx, json_t *root, const char *src,
                             mp_llm_config *out)
{
    if (!json_is_object(root))
        return mp__err(ctx, MP_ERR_PARSE, "%s: a model config is a JSON object",
                      src);
    static const char *const k_layers[] = {"num_hidden_layers", "n_layer",
                                           "num_layers", NULL};
    static const char *const k_hidden[] = {"hidden_size", "n_embd", "d_model",
                                           NULL};
    static const char *const k_heads[] = {"num_attention_heads", "n_head",
                                          NULL};
    static const char *const k_kv[] = {"num_key_value_heads", NULL};
    static const char *const k_ffn[] = {"ffn_dim", "intermediate_size",
                                        "n_inner", NULL};
    static const char *const k_vocab[] = {"vocab_size", NULL};
    mp_llm_config c;
    memset(&c, 0, sizeof c);
    const char *bad = NULL;
    int r;
    if ((r = get_uint(root, k_layers, &c.layers, &bad)) <= 0 ||
        (r = get_uint(root, k_hidden, &c.hidden, &bad)) <= 0 ||
        (r = get_uint(root, k_heads, &c.heads, &bad)) <= 0) {
        if (r < 0)
            return mp__err(ctx, MP_ERR_PARSE,
                          "%s: \"%s\" must be a positive integer", src, bad);
        return mp__err(ctx, MP_ERR_PARSE,
                      "%s: the config needs the number of layers "
                      "(num_hidden_layers), hidden size (hidden_size) and "
                      "heads (num_attention_heads)",
                      src);
    }
    if (get_uint(root, k_kv, &c.kv_heads, &bad) < 0 ||
        get_uint(root, k_ffn, &c.ffn, &bad) < 0 ||
        get_uint(root, k_vocab, &c.vocab, &bad) < 0)
        return mp__err(ctx, MP_ERR_PARSE,
                      "%s: \"%s\" must be a positive integer", src, bad);
    if (!c.kv_heads)
        c.kv_heads = c.heads;
    if (c.hidden % c.heads || c.heads % c.kv_heads)
        return mp__err(ctx, MP_ERR_PARSE,
                      "%s: hidden size %u is not a multiple of %u heads, or "
                      "heads not a multiple of %u KV heads",
                      src, c.hidden, c.heads, c.kv_heads);
    if (!c.ffn) {
        if (c.hidden > UINT32_MAX / 4)
            return mp__err(ctx, MP_ERR_PARSE, "%s: hidden size too large",
                          src);
        c.ffn = 4 * c.hidden;
    }
    c.dtype = MP_DTYPE_FLOAT16;
    json_t *dt = json_object_get(root, "torch_dtype");
    if (dt && json_is_string(dt)) {
        const char *s = json_string_value(dt);
        if (strncmp(s, "torch.", 6) == 0)
            s += 6;
        if (mp_dtype_parse(s, &c.dtype) != MP_OK ||
            mp_dtype_bits(c.dtype) == 0)
            return mp__err(ctx, MP_ERR_PARSE, "%s: unknown torch_dtype '%s'",
                          src, json_string_value(dt));
    }
    c.mlp_matrices = 2;
    json_t *act = json_object_get(root, "hidden_act");
    json_t *mt = json_object_get(root, "model_type");
    if ((act && json_is_string(act) &&
         strcmp(json_string_value(act), "silu") == 0) ||
        (mt && json_is_string(mt) &&
         (strcmp(json_string_value(mt), "llama") == 0 ||
          strcmp(json_string_value(mt), "mistral") == 0 ||
          strcmp(json_string_value(mt), "qwen2") == 0)))
        c.mlp_matrices = 3;
    json_t *nm = json_object_get(root, "_name_or_path");
    if (!nm)
        nm = json_object_get(root, "name");
    snprintf(c.name, sizeof c.name, "%s",
             nm && json_is_string(nm) ? json_string_value(nm)
             : mt && json_is_string(mt) ? json_string_value(mt)
                                        : "model");
    *out = c;
    return MP_OK;
}

mp_status mp_llm_config_load_json_string(mp_ctx *ctx, const char *text,
                                         const char *source_name,
                                         mp_llm_config *out)
{
    if (!ctx || !text || !out)
        return MP_ERR_INVALID_ARG;
    const char *src = source_name ? source_name : "<string>";
    json_error_t e;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!root)
        return mp__err(ctx, MP_ERR_PARSE, "%s:%d:%d: %s", src, e.line,
                      e.column, e.text);
    mp_status st = read_config(ctx, root, src, out);
    json_decref(root);
    return st;
}

mp_status mp_llm_config_load_json(mp_ctx *ctx, const char *path,
                                  mp_llm_config *out)
{
    if (!ctx || !path || !out)
        return MP_ERR_INVALID_ARG;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp__err(ctx, MP_ERR_IO, "%s: cannot open the model config",
                      path);
    json_error_t e;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &e);
    fclose(f);
    if (!root)
        return mp__err(ctx, MP_ERR_PARSE, "%s:%d:%d: %s", path, e.line,
                      e.column, e.text);
    mp_status st = read_config(ctx, root, path, out);
    json_decref(root);
    return st;
}
