/* Serving plans (memplan/serve.h): exact byte sums on a tiny config worked
 * out by hand (KV bytes per token with GQA, weights in 16 bits and int4
 * with group scales, blocks at a given budget, fragmentation over a given
 * list of lengths, prefix sharing, sliding windows, tensor parallelism),
 * the decoder graph planned and verified, length distributions, and the
 * command. */
#include "base.h"
#include "ir.h"
#include "support.h"

#include <stdio.h>
#include <string.h>

/* 2 layers, hidden 64, 4 heads of 16, 2 KV heads, gated FFN 128, vocab
 * 100, bf16.
 * KV per token: 2 (K, V) x 2 layers x 2 KV heads x 16 x 2 B = 256 B.
 * Weights (16-bit): embedding 100 x 64 x 2 = 12800; a layer: norms
 * 2 x 64 x 2 = 256, q 64x64 8192, k 64x32 4096, v 4096, o 8192, gate, up,
 * down 3 x 16384: 73984; two layers 147968; final norm 128; LM head
 * 12800: 173696 B. */
static void tiny(mp_llm_config *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "tiny");
    m->layers = 2;
    m->hidden = 64;
    m->heads = 4;
    m->kv_heads = 2;
    m->head_dim = 16;
    m->ffn = 128;
    m->vocab = 100;
    m->mlp_matrices = 3;
    m->dtype = MP_DTYPE_BFLOAT16;
}

static void opts(mp_serve_options *o)
{
    mp_serve_options_init(o);
    o->max_model_len = 40;
    o->max_batched_tokens = 32;
    o->max_seqs = 4;
    o->graph_sizes_default = 0; /* eager */
    o->runtime_reserve = 0;
    o->gpu_util = 1.0;
    o->gpu_mem = 1ull << 30;
}

static void t_bytes(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_serve_options o;
    mp_serve_result r;
    tiny(&m);
    opts(&o);
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_bytes_per_token, 256u);
    CU_ASSERT_EQUAL(r.kv_block_bytes, 16u * 256u);
    CU_ASSERT_EQUAL(r.weight_bytes, 173696u);
    /* 40 tokens: 3 blocks of 16 */
    CU_ASSERT_EQUAL(r.kv_seq_bytes, 3u * 4096u);
    /* logits of 4 sequences: 4 x 100 x 4 B; probabilities the same and
     * the sort 4 x 100 x (4 + 8) */
    CU_ASSERT_EQUAL(r.decode.logits_bytes, 1600u);
    CU_ASSERT_EQUAL(r.decode.sampler_bytes, 1600u + 4800u);
    CU_ASSERT(r.decode.arena_bytes >= r.decode.lower_bound_bytes);
    CU_ASSERT(r.decode.lower_bound_bytes >= 1600u + 4800u);
    CU_ASSERT_EQUAL(r.cuda_graph_bytes, 0u);
    /* int4, groups of 32: K x N / 2 + ceil(K / 32) x N x (2 + 0.5):
     * q 2048 + 320, k and v 1024 + 160, o 2368, gate and up 4096 + 640,
     * down (K 128) 4096 + 640: 21312 a layer with its norms' 256 ->
     * 2 x 21568 + embedding, final norm, LM head (16-bit) 25728 */
    o.weights = MP_WEIGHTS_INT4;
    o.group_size = 32;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.weight_bytes, 2u * 21568u + 25728u);
    /* int8 per channel (group 0): K x N + N x 2 */
    o.weights = MP_WEIGHTS_INT8;
    o.group_size = 0;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    uint64_t i8 = (4096 + 128) * 2 + (2048 + 64) * 2 + (8192 + 256) * 2 +
                  (8192 + 128) + 256;
    CU_ASSERT_EQUAL(r.weight_bytes, 2 * i8 + 25728u);
    /* fp8 KV: one byte */
    o.weights = MP_WEIGHTS_16BIT;
    o.kv_dtype = MP_DTYPE_FLOAT8E4M3FN;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_bytes_per_token, 128u);
    /* tp 2: 2 heads and 1 KV head a rank, FFN 64, vocab 50 */
    o.kv_dtype = MP_DTYPE_UNDEFINED;
    o.tp = 2;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_bytes_per_token, 128u);
    uint64_t layer2 = 256 + 4096 + 2048 + 2048 + 4096 + 3 * 8192;
    CU_ASSERT_EQUAL(r.weight_bytes, 2 * layer2 + 6400 + 128 + 6400);
    /* tp 4: 2 KV heads replicated, one a rank */
    o.tp = 4;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_bytes_per_token, 128u);
    o.tp = 3;
    CU_ASSERT_EQUAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "--tp 3"));
    mp_ctx_destroy(c);
}

/* A budget of the weights, the activations' peak and 10 blocks and 100
 * bytes: 10 blocks, 160 tokens; 3 sequences of 40 (3 blocks each); each of
 * 4 sequences 2 blocks, 32 tokens; the cache binds. */
static void t_blocks(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_serve_options o;
    mp_serve_result r;
    tiny(&m);
    opts(&o);
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    o.gpu_mem = r.weight_bytes + r.activation_bytes + 10 * 4096 + 100;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_budget_bytes, 10u * 4096u + 100u);
    CU_ASSERT_EQUAL(r.kv_blocks, 10u);
    CU_ASSERT_EQUAL(r.kv_tokens, 160u);
    CU_ASSERT_EQUAL(r.max_seqs_at_len, 3u);
    CU_ASSERT_EQUAL(r.max_len_at_seqs, 32u);
    CU_ASSERT_EQUAL(r.binding, MP_SERVE_KV_MEMORY);
    /* contiguous: 40 x 256 B a sequence, 4 of them in 41060 B */
    o.kv_paged = 0;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_seq_bytes, 40u * 256u);
    CU_ASSERT_EQUAL(r.max_seqs_at_len, 4u);
    CU_ASSERT_EQUAL(r.binding, MP_SERVE_MAX_SEQS);
    /* a budget below the weights: nothing fits */
    o.gpu_mem = r.weight_bytes;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_budget_bytes, 0u);
    CU_ASSERT_EQUAL(r.binding, MP_SERVE_FITS_NOTHING);
    /* the CUDA graph pool: the decode forward of the largest size */
    o.gpu_mem = 1ull << 30;
    o.n_graph_sizes = 2;
    o.graph_sizes[0] = 8;
    o.graph_sizes[1] = 4;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.cuda_graphs, 2u);
    CU_ASSERT_EQUAL(r.cuda_graph_max, 8u);
    CU_ASSERT(r.cuda_graph_bytes > 0);
    mp_ctx_destroy(c);
}

/* Lengths 1, 16, 17, 40 at 256 B a token, blocks of 16: the tokens need
 * 74 x 256 = 18944 B; blocks 1 + 1 + 2 + 3 = 7 x 4096 = 28672 B;
 * contiguous 4 x 40 x 256 = 40960 B. A shared prefix of 16 tokens (one
 * full block) held by the three requests of 16 or more: two blocks saved,
 * 20480 B. A window of 8 tokens: 8 tokens and 2 blocks a sequence. */
static void t_fragmentation(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_serve_options o;
    mp_serve_result r;
    tiny(&m);
    opts(&o);
    static const uint32_t len[4] = {1, 16, 17, 40};
    o.lengths = len;
    o.n_lengths = 4;
    o.shared_prefix = 16;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.frag_requests, 4u);
    CU_ASSERT_EQUAL(r.frag_token_bytes, 18944u);
    CU_ASSERT_EQUAL(r.frag_paged_bytes, 28672u);
    CU_ASSERT_EQUAL(r.frag_contiguous_bytes, 40960u);
    CU_ASSERT_EQUAL(r.frag_shared_bytes, 20480u);
    CU_ASSERT_DOUBLE_EQUAL(r.mean_length, 18.5, 1e-12);
    /* the budget over the mean: paged 7168 B a request, contiguous
     * 10240 */
    CU_ASSERT_EQUAL(r.frag_fit_paged, r.kv_budget_bytes / 7168u);
    CU_ASSERT_EQUAL(r.frag_fit_contiguous, r.kv_budget_bytes / 10240u);
    /* a request above the context is an error naming the fix */
    static const uint32_t longer[1] = {41};
    o.lengths = longer;
    o.n_lengths = 1;
    CU_ASSERT_EQUAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "--max-model-len"));
    /* a sliding window */
    o.lengths = NULL;
    o.n_lengths = 0;
    m.sliding_window = 8;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_seq_bytes, 2u * 4096u);
    CU_ASSERT_EQUAL(r.frag_token_bytes, 8u * 256u);
    o.kv_paged = 0;
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    CU_ASSERT_EQUAL(r.kv_seq_bytes, 8u * 256u);
    mp_ctx_destroy(c);
}

/* The decoder graphs (dense, GPT-style with biases and learned positions,
 * MoE, int4) plan, and the plans verify. */
static void t_graph(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_serve_options o;
    tiny(&m);
    opts(&o);
    for (int v = 0; v < 4; v++) {
        mp_llm_config mm = m;
        mp_serve_options oo = o;
        if (v == 1) {
            mm.mlp_matrices = 2;
            mm.layer_norm = mm.learned_pos = mm.linear_bias = 1;
            mm.tie_embeddings = 1;
            mm.max_position = 64;
        } else if (v == 2) {
            mm.experts = 4;
            mm.experts_per_tok = 2;
        } else if (v == 3) {
            oo.weights = MP_WEIGHTS_INT4;
            oo.tp = 2;
        }
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_serve_decoder_graph(c, &mm, &oo, 8, 3, &g),
                              MP_OK);
        CU_ASSERT_EQUAL(mp_graph_unknown_shapes(g), 0u);
        mp_test_plan_verify(g);
        mp_graph_destroy(g);
    }
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_serve_decoder_graph(c, &m, &o, 2, 3, &g),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NULL(g);
    mp_ctx_destroy(c);
}

static void t_lengths(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    uint32_t v[4];
    CU_ASSERT_EQUAL(mp_serve_lengths(c, "uniform:1:100", 0, v, 4), MP_OK);
    CU_ASSERT_EQUAL(v[0], 13u);
    CU_ASSERT_EQUAL(v[1], 38u);
    CU_ASSERT_EQUAL(v[2], 63u);
    CU_ASSERT_EQUAL(v[3], 88u);
    CU_ASSERT_EQUAL(mp_serve_lengths(c, "uniform:1:100", 50, v, 4), MP_OK);
    CU_ASSERT_EQUAL(v[3], 50u);
    CU_ASSERT_EQUAL(mp_serve_lengths(c, "fixed:7", 0, v, 4), MP_OK);
    CU_ASSERT_EQUAL(v[0], 7u);
    CU_ASSERT_EQUAL(v[3], 7u);
    /* the lognormal's median at the middle quantile */
    uint32_t w[3];
    CU_ASSERT_EQUAL(mp_serve_lengths(c, "lognormal:1000:1", 0, w, 3), MP_OK);
    CU_ASSERT_EQUAL(w[1], 1000u);
    CU_ASSERT(w[0] < 1000u && w[2] > 1000u);
    CU_ASSERT_EQUAL(mp_serve_lengths(c, "poisson:3", 0, v, 4),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "lognormal"));
    mp_weight_format f;
    CU_ASSERT_EQUAL(mp_weight_format_parse("bf16", &f), MP_OK);
    CU_ASSERT_EQUAL(f, MP_WEIGHTS_16BIT);
    CU_ASSERT_EQUAL(mp_weight_format_parse("int4", &f), MP_OK);
    CU_ASSERT_STRING_EQUAL(mp_weight_format_name(f), "int4");
    CU_ASSERT_EQUAL(mp_weight_format_parse("int3", &f), MP_ERR_NOT_FOUND);
    mp_ctx_destroy(c);
}


/* A generation's graph (mp_serve_generation_graph): 2 sequences of 5
 * prompt tokens, 6 decode steps, blocks of 4 tokens: 11 tokens, 3 blocks
 * a sequence. The prefill takes blocks 0, 1 (sequence 0) and 2, 3
 * (sequence 1); token 8 (decode step 3) starts block 2 of each: 4, 5. */
static void t_generation(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_serve_options o;
    mp_serve_result r;
    tiny(&m);
    opts(&o);
    o.block_size = 4;
    uint32_t tab[6], nb = 0;
    CU_ASSERT_EQUAL_FATAL(mp_serve_block_table(c, 2, 5, 6, 4, tab, 6, &nb),
                          MP_OK);
    static const uint32_t want[6] = {0, 1, 4, 2, 3, 5};
    CU_ASSERT_EQUAL(nb, 6u);
    CU_ASSERT_EQUAL(memcmp(tab, want, sizeof want), 0);
    CU_ASSERT_EQUAL(mp_serve_block_table(c, 2, 5, 6, 4, tab, 5, &nb),
                    MP_ERR_INVALID_ARG);
    /* a prompt ending on a block boundary: decode starts a block at once */
    uint32_t t2[4];
    CU_ASSERT_EQUAL_FATAL(mp_serve_block_table(c, 2, 4, 1, 4, t2, 4, &nb),
                          MP_OK);
    CU_ASSERT_EQUAL(t2[0], 0u);
    CU_ASSERT_EQUAL(t2[1], 2u);
    CU_ASSERT_EQUAL(t2[2], 1u);
    CU_ASSERT_EQUAL(t2[3], 3u);
    CU_ASSERT_EQUAL_FATAL(mp_serve_plan(c, &m, NULL, &o, &r), MP_OK);
    mp_graph *g[2] = {NULL, NULL};
    for (int paged = 1; paged >= 0; paged--) {
        o.kv_paged = paged;
        CU_ASSERT_EQUAL_FATAL(mp_serve_generation_graph(c, &m, &o, 2, 5, 6,
                                                        &g[paged]),
                              MP_OK);
        mp_graph *gg = g[paged];
        /* the weights first, then the caches; their bytes are the
         * serving plan's */
        uint64_t wb = 0, cache = 0;
        uint32_t n_w = 0, first_cache = MP_NONE;
        for (uint32_t t = 0; t < mp_graph_num_tensors(gg); t++) {
            mp_tensor_info ti;
            mp_graph_tensor_info(gg, t, &ti);
            if (ti.kind != MP_KIND_WEIGHT)
                continue;
            if (strstr(ti.name, "_cache")) {
                cache += ti.bytes;
                if (first_cache == MP_NONE)
                    first_cache = t;
                CU_ASSERT_EQUAL(ti.rank, 4);
                CU_ASSERT_EQUAL(ti.dims[0], paged ? 6 : 2);
                CU_ASSERT_EQUAL(ti.dims[1], paged ? 4 : 11);
                CU_ASSERT_EQUAL(ti.dims[2], 2);
                CU_ASSERT_EQUAL(ti.dims[3], 16);
            } else {
                CU_ASSERT_EQUAL(t, n_w);
                wb += ti.bytes;
                n_w++;
            }
        }
        CU_ASSERT_EQUAL(first_cache, n_w);
        CU_ASSERT_EQUAL(wb, r.weight_bytes);
        /* paged: 6 blocks of r.kv_block_bytes (every layer's K and V);
         * contiguous: 2 x 11 tokens of r.kv_bytes_per_token */
        CU_ASSERT_EQUAL(cache, paged ? 6 * r.kv_block_bytes
                                     : 22 * r.kv_bytes_per_token);
        uint32_t tb;
        CU_ASSERT_EQUAL(mp_graph_find_tensor(gg, "kv_block_table", &tb),
                        paged ? MP_OK : MP_ERR_NOT_FOUND);
        if (paged) {
            const mp__tensor *tt = &gg->tensors[tb];
            CU_ASSERT_EQUAL(tt->dtype, MP_DTYPE_INT32);
            CU_ASSERT_EQUAL_FATAL(tt->n_value, 6u);
            for (int i = 0; i < 6; i++)
                CU_ASSERT_EQUAL(tt->value[i], (int64_t)want[i]);
        }
        /* 7 passes x 2 layers of PagedAttention; past 0, then 5 .. 10 */
        uint32_t n_attn = 0, n_sort = 0, n_sample = 0;
        for (uint32_t i = 0; i < mp_graph_num_nodes(gg); i++) {
            mp_node_info ni;
            mp_graph_node_info(gg, i, &ni);
            n_sort += strcmp(ni.op, "Sort") == 0;
            n_sample += strcmp(ni.op, "Sample") == 0;
            if (strcmp(ni.op, "PagedAttention"))
                continue;
            n_attn++;
            CU_ASSERT_EQUAL(ni.n_inputs, paged ? 6u : 5u);
            unsigned step = 0;
            CU_ASSERT_EQUAL(sscanf(ni.name, "step%u/", &step), 1);
            int64_t past = -1, seqs = 0, bs = -1;
            mp_graph_get_attr_int(gg, i, "past", &past);
            mp_graph_get_attr_int(gg, i, "seqs", &seqs);
            mp_graph_get_attr_int(gg, i, "block_size", &bs);
            CU_ASSERT_EQUAL(past, step ? 5 + step - 1 : 0);
            CU_ASSERT_EQUAL(seqs, 2);
            CU_ASSERT_EQUAL(bs, paged ? 4 : 0);
        }
        CU_ASSERT_EQUAL(n_attn, 14u);
        CU_ASSERT_EQUAL(n_sort, 7u);
        CU_ASSERT_EQUAL(n_sample, 7u);
        /* the outputs: each pass's tokens, the last pass's logits */
        uint32_t t;
        for (unsigned p = 0; p <= 6; p++) {
            char nm[64];
            snprintf(nm, sizeof nm, "step%u/sampled", p);
            CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(gg, nm, &t), MP_OK);
            mp_tensor_info ti;
            mp_graph_tensor_info(gg, t, &ti);
            CU_ASSERT(ti.is_output);
            CU_ASSERT_EQUAL(ti.bytes, 16u);
        }
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(gg, "step6/logits_fp32",
                                                   &t),
                              MP_OK);
        mp_tensor_info li;
        mp_graph_tensor_info(gg, t, &li);
        CU_ASSERT(li.is_output);
        CU_ASSERT_EQUAL(li.bytes, 2u * 100u * 4u);
        /* the prompt: an input whose values the graph holds */
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_tensor(gg, "step0/input_ids", &t),
                              MP_OK);
        CU_ASSERT_EQUAL(gg->tensors[t].n_value, 10u);
        CU_ASSERT_EQUAL(gg->tensors[t].kind, MP_KIND_INPUT);
        /* planned and verified */
        mp_plan *pl = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_plan_create(gg, NULL, &pl), MP_OK);
        CU_ASSERT_EQUAL(mp_verify_plan(gg, pl), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_figures(pl)->persistent_bytes,
                        wb + cache + (paged ? 6u * 4u : 0u) + 7u * 2u * 8u);
        mp_plan_destroy(pl);
    }
    /* the weights have the same ids, names and bytes in both layouts */
    for (uint32_t t = 0; t < mp_graph_num_tensors(g[1]); t++) {
        mp_tensor_info a, b;
        mp_graph_tensor_info(g[1], t, &a);
        if (a.kind != MP_KIND_WEIGHT || strstr(a.name, "_cache"))
            break;
        CU_ASSERT_EQUAL_FATAL(mp_graph_tensor_info(g[0], t, &b), MP_OK);
        CU_ASSERT_STRING_EQUAL(a.name, b.name);
        CU_ASSERT_EQUAL(a.bytes, b.bytes);
    }
    mp_graph_destroy(g[0]);
    mp_graph_destroy(g[1]);
    /* what the executor cannot run is refused, naming it */
    mp_graph *bad = NULL;
    o.kv_paged = 1;
    mp_llm_config moe = m;
    moe.experts = 4;
    moe.experts_per_tok = 2;
    CU_ASSERT_EQUAL(mp_serve_generation_graph(c, &moe, &o, 2, 5, 6, &bad),
                    MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "experts"));
    o.weights = MP_WEIGHTS_INT4;
    CU_ASSERT_EQUAL(mp_serve_generation_graph(c, &m, &o, 2, 5, 6, &bad),
                    MP_ERR_UNSUPPORTED);
    o.weights = MP_WEIGHTS_16BIT;
    CU_ASSERT_EQUAL(mp_serve_generation_graph(c, &m, &o, 64, 512, 6, &bad),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "16384"));
    CU_ASSERT_EQUAL(mp_serve_generation_graph(c, &m, &o, 0, 5, 6, &bad),
                    MP_ERR_INVALID_ARG);
    CU_ASSERT_PTR_NULL(bad);
    mp_ctx_destroy(c);
}

static char out[1 << 16];

static int cli(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' serve %s", MP_SOURCE_DIR,
             MP_CLI_PATH, args);
    out[0] = 0;
    return mp_test_run(cmd, out, sizeof out);
}

static void t_cli(void)
{
    CU_ASSERT_EQUAL(cli("examples/llm/llama-3-8b.json --json"), 0);
    mp_test_json *j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    /* 2 x 32 layers x 8 KV heads x 128 x 2 B */
    CU_ASSERT_EQUAL(mp_test_jint(j, "kv_bytes_per_token"), 131072);
    CU_ASSERT_EQUAL(mp_test_jint(j, "kv_block_bytes"), 16 * 131072);
    CU_ASSERT_EQUAL(mp_test_jint(j, "max_model_len"), 8192);
    CU_ASSERT(mp_test_jint(j, "kv_blocks") > 50000);
    mp_test_json_free(j);
    CU_ASSERT_EQUAL(cli("examples/llm/llama-3-8b.json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "binding      KV cache memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "what-if"));
    CU_ASSERT_EQUAL(cli("examples/llm/llama-3-70b.json --weights int4 --tp 2 "
                        "--lengths uniform:100:8000 --shared-prefix 512"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "prefix shared"));
    static const struct {
        const char *args, *needle;
        int rc;
    } bad[] = {
        {"examples/llm/llama-3-8b.json --kv-layout ring 2>&1",
         "paged or contiguous", 2},
        {"examples/llm/llama-3-8b.json --kv-dtype int2 2>&1", "fp8", 2},
        {"examples/llm/llama-3-8b.json --weights int3 2>&1", "int4", 2},
        {"examples/llm/llama-3-8b.json --group-size 64 2>&1", "--weights",
         2},
        {"examples/llm/llama-3-8b.json --gpu-util 1.5 2>&1", "(0, 1]", 2},
        {"examples/llm/llama-3-8b.json --cuda-graph-sizes 8,x 2>&1",
         "comma", 2},
        {"examples/llm/llama-3-8b.json --tp 3 2>&1", "--tp 3", 2},
        {"examples/llm/llama-3-8b.json --lengths /nonexistent 2>&1",
         "--lengths", 3},
        {"examples/llm/llama-3-8b.json --lengths beta:1 2>&1", "lognormal",
         2},
    };
    /* validate --serve --lower-only: both layouts lowered, no GPU */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' validate "
             "examples/serve/small-llama.json --serve --batch 2 --prompt 16 "
             "--gen 4 --block-size 4 --lower-only", MP_SOURCE_DIR,
             MP_CLI_PATH);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    /* 2 x 20 tokens in blocks of 4: 10 blocks; 8 layers x K and V x 10
     * blocks x 4 tokens x 4 KV heads x 64 x 2 B */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "== paged KV cache =="));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(327680 bytes) in blocks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "; 10 blocks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "== contiguous KV cache =="));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(311461888 bytes)"));
    /* 5 passes of 112 nodes, all on real kernels */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "560 nodes run: 560 real kernels, "
                                       "0 synthetic"));
    CU_ASSERT_PTR_NULL(strstr(out, "synthetic  "));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' validate "
             "examples/serve/small-llama.json --serve --kv-dtype fp8 "
             "--lower-only 2>&1", MP_SOURCE_DIR, MP_CLI_PATH);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "KV cache dtype"));
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' validate examples/tiny.json "
             "--gen 4 2>&1", MP_SOURCE_DIR, MP_CLI_PATH);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--serve"));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cli(bad[i].args);
        if (rc != bad[i].rc || !strstr(out, bad[i].needle)) {
            printf("\n  %s: exit %d: %s", bad[i].args, rc, out);
            CU_FAIL("a bad option is refused naming it");
        }
    }
}

static CU_TestInfo tests[] = {
    {"bytes: KV per token (GQA, fp8, tp), weights (16-bit, int4, int8)",
     t_bytes},
    {"blocks and sequences at a given budget; contiguous; nothing fits",
     t_blocks},
    {"fragmentation, prefix sharing, sliding windows", t_fragmentation},
    {"decoder graphs plan and verify", t_graph},
    {"length distributions, weight formats", t_lengths},
    {"a generation's graph: paged and contiguous caches, block table, "
     "weights first, planned and verified", t_generation},
    {"memplan serve; memplan validate --serve --lower-only", t_cli},
    CU_TEST_INFO_NULL,
};

void mp_register_serve(void);
void mp_register_serve(void) { mp_test_add_suite("serve", tests); }
