/* Decoder-only transformer configs (Hugging Face config.json) for the
 * offload policy search (solvers/flexgen.c), read with the library's JSON
 * reader (frontends/json/json.h). Keys the search does not use are passed
 * over. */
#include "json.h"

#include <stdio.h>
#include <string.h>

/* The keys read, by slot; a figure takes the first of its spellings the
 * config has. */
enum { K_LAYERS, K_HIDDEN = 3, K_HEADS = 6, K_KV = 8, K_FFN, K_VOCAB = 12,
       K_DTYPE, K_ACT, K_TYPE, K_NAME_PATH, K_NAME, K_HEAD_DIM, K_WINDOW,
       K_USE_WINDOW, K_EXPERTS, K_TOPK, K_MAXPOS, K_TIE = K_MAXPOS + 2,
       K_ACT2, K_N };
static const char *const names[K_N] = {
    "num_hidden_layers", "n_layer", "num_layers",         /* K_LAYERS */
    "hidden_size", "n_embd", "d_model",                   /* K_HIDDEN */
    "num_attention_heads", "n_head",                      /* K_HEADS */
    "num_key_value_heads",                                /* K_KV */
    "ffn_dim", "intermediate_size", "n_inner",            /* K_FFN */
    "vocab_size", "torch_dtype", "hidden_act", "model_type",
    "_name_or_path", "name", "head_dim", "sliding_window",
    "use_sliding_window", "num_local_experts", "num_experts_per_tok",
    "max_position_embeddings", "n_positions",             /* K_MAXPOS */
    "tie_word_embeddings", "activation_function"};

typedef struct cfg {
    mp__jr r;
    mp__jobj o;
    mp__jval v[K_N];
} cfg;

/* The first spelling present among slots [from, from + n): a positive
 * integer (*out; 0 when none is present). */
static mp_status get_uint(cfg *c, int from, int n, uint32_t *out)
{
    int64_t x;
    for (int k = from; k < from + n; k++) {
        if (!(c->o.seen >> k & 1))
            continue;
        mp__jr_push_key(&c->r, names[k]);
        mp_status st = mp__jr_i64(&c->r, &c->v[k], 1, UINT32_MAX,
                                  "a positive integer", &x);
        mp__jr_pop(&c->r);
        *out = (uint32_t)x;
        return st;
    }
    *out = 0;
    return MP_OK;
}

/* get_uint of slot k where null stands for absent (sliding_window). */
static mp_status get_uint_or_null(cfg *c, int k, uint32_t *out)
{
    if ((c->o.seen >> k & 1) && c->v[k].type == MP__JT_NULL) {
        *out = 0;
        return MP_OK;
    }
    return get_uint(c, k, 1, out);
}

/* A boolean of slot k (def when absent or not a boolean). */
static int get_bool(const cfg *c, int k, int def)
{
    if (!(c->o.seen >> k & 1))
        return def;
    return c->v[k].type == MP__JT_TRUE    ? 1
           : c->v[k].type == MP__JT_FALSE ? 0
                                          : def;
}

/* The string of slot k, or NULL when absent or not a string. */
static const char *get_str(const cfg *c, int k)
{
    return (c->o.seen >> k & 1) && c->v[k].type == MP__JT_STRING
               ? mp__jr_str(&c->r, c->v[k].s)
               : NULL;
}

static mp_status config_dtype(cfg *c, mp_llm_config *m)
{
    m->dtype = MP_DTYPE_FLOAT16;
    const char *s = get_str(c, K_DTYPE), *t = s;
    if (!s)
        return MP_OK;
    if (strncmp(t, "torch.", 6) == 0)
        t += 6;
    if (mp_dtype_parse(t, &m->dtype) == MP_OK && mp_dtype_bits(m->dtype))
        return MP_OK;
    mp__jr_push_key(&c->r, "torch_dtype");
    return mp__jr_err(&c->r, MP_ERR_PARSE, c->v[K_DTYPE].off,
                      "unknown torch_dtype '%s'", s);
}

static int is_type(const char *mt, const char *a, const char *b)
{
    return mt && (strcmp(mt, a) == 0 || (b && strcmp(mt, b) == 0));
}

/* What serving needs beyond the policy search: head size, sliding
 * window, experts, context, tied embeddings and the family's layout. */
static mp_status read_serving_keys(cfg *c, mp_llm_config *m, const char *mt)
{
    mp_status st;
    uint32_t experts = 0, topk = 0;
    if ((st = get_uint(c, K_HEAD_DIM, 1, &m->head_dim)) ||
        (st = get_uint_or_null(c, K_WINDOW, &m->sliding_window)) ||
        (st = get_uint(c, K_EXPERTS, 1, &experts)) ||
        (st = get_uint(c, K_TOPK, 1, &topk)) ||
        (st = get_uint(c, K_MAXPOS, 2, &m->max_position)))
        return st;
    if (!m->head_dim)
        m->head_dim = m->hidden / m->heads;
    /* Qwen2 writes a window it does not use unless use_sliding_window */
    if (!get_bool(c, K_USE_WINDOW, 1))
        m->sliding_window = 0;
    if (experts > 1) {
        if (!topk || topk > experts)
            return mp__jr_err(&c->r, MP_ERR_PARSE, c->o.off,
                              "%u experts (num_local_experts) need "
                              "num_experts_per_tok from 1 to %u",
                              experts, experts);
        m->experts = experts;
        m->experts_per_tok = topk;
    }
    /* GPT-2 and OPT: LayerNorm with bias, learned positions, a bias on
     * every linear layer; GPT-2 ties its embeddings by default */
    int classic = is_type(mt, "gpt2", "opt");
    m->layer_norm = (uint32_t)classic;
    m->learned_pos = (uint32_t)classic;
    m->linear_bias = classic ? 1u : is_type(mt, "qwen2", NULL) ? 2u : 0u;
    m->tie_embeddings = (uint32_t)get_bool(c, K_TIE, classic);
    return MP_OK;
}

static mp_status read_config(cfg *c, mp_llm_config *out)
{
    mp_llm_config m;
    memset(&m, 0, sizeof m);
    uint32_t *need[3] = {&m.layers, &m.hidden, &m.heads};
    static const int from[3] = {K_LAYERS, K_HIDDEN, K_HEADS};
    mp_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = get_uint(c, from[i], i < 2 ? 3 : 2, need[i])))
            return st;
        if (!*need[i])
            return mp__jr_err(&c->r, MP_ERR_PARSE, c->o.off,
                              "the config needs the number of layers "
                              "(num_hidden_layers), hidden size "
                              "(hidden_size) and heads "
                              "(num_attention_heads)");
    }
    if ((st = get_uint(c, K_KV, 1, &m.kv_heads)) ||
        (st = get_uint(c, K_FFN, 3, &m.ffn)) ||
        (st = get_uint(c, K_VOCAB, 1, &m.vocab)))
        return st;
    if (!m.kv_heads)
        m.kv_heads = m.heads;
    if (m.hidden % m.heads || m.heads % m.kv_heads)
        return mp__jr_err(&c->r, MP_ERR_PARSE, c->o.off,
                          "hidden size %u is not a multiple of %u heads, or "
                          "heads not a multiple of %u KV heads",
                          m.hidden, m.heads, m.kv_heads);
    if (!m.ffn) {
        if (m.hidden > UINT32_MAX / 4)
            return mp__jr_err(&c->r, MP_ERR_PARSE, c->o.off,
                              "hidden size too large");
        m.ffn = 4 * m.hidden;
    }
    if ((st = config_dtype(c, &m)))
        return st;
    const char *act = get_str(c, K_ACT), *mt = get_str(c, K_TYPE);
    if (!act)
        act = get_str(c, K_ACT2);
    m.mlp_matrices = (act && strcmp(act, "silu") == 0) ||
                             (mt && (strcmp(mt, "llama") == 0 ||
                                     strcmp(mt, "mistral") == 0 ||
                                     strcmp(mt, "qwen2") == 0 ||
                                     strcmp(mt, "mixtral") == 0))
                         ? 3
                         : 2;
    if ((st = read_serving_keys(c, &m, mt)))
        return st;
    const char *nm = c->o.seen >> K_NAME_PATH & 1 ? get_str(c, K_NAME_PATH)
                                                  : get_str(c, K_NAME);
    snprintf(m.name, sizeof m.name, "%s", nm ? nm : mt ? mt : "model");
    *out = m;
    return MP_OK;
}

/* text (len bytes), src naming it in messages. */
static mp_status load_config(mp_ctx *ctx, const char *text, size_t len,
                             const char *src, void *out)
{
    static const mp__jkeys keys = {names, K_N, MP__JK_ANY, NULL};
    cfg c;
    mp__jr_init(&c.r, ctx, src, text, len, 0);
    mp_status st = mp__jr_read_doc(&c.r, &c.o, &keys, mp__jr_keep, c.v);
    if (!st)
        st = read_config(&c, out);
    mp__jr_free(&c.r);
    return st;
}

mp_status mp_llm_config_load_json_string(mp_ctx *ctx, const char *text,
                                         const char *source_name,
                                         mp_llm_config *out)
{
    if (!ctx || !text || !out)
        return MP_ERR_INVALID_ARG;
    return load_config(ctx, text, strlen(text),
                       source_name ? source_name : "<string>", out);
}

mp_status mp_llm_config_load_json(mp_ctx *ctx, const char *path,
                                  mp_llm_config *out)
{
    if (!ctx || !path || !out)
        return MP_ERR_INVALID_ARG;
    return mp__json_load_file(ctx, path, load_config, out);
}
