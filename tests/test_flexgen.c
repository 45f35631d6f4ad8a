/* FlexGen-style policy search: config reading, the LP checked by hand on
 * a tiny model, a fixed policy evaluated by hand, the memory constraint,
 * and the shape of the OPT-30B policy on FlexGen's T4 profile. */
#include "base.h"
#include "mp_glpk.h"
#include "support.h"


#include <math.h>
#include <stdio.h>
#include <string.h>

static int near(double x, double y, double rel)
{
    return fabs(x - y) <= rel * fabs(y);
}

static void t_config(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    const char *llama =
        "{\"model_type\": \"llama\", \"num_hidden_layers\": 32, "
        "\"hidden_size\": 4096, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"intermediate_size\": 14336, "
        "\"vocab_size\": 128256, \"torch_dtype\": \"bfloat16\", "
        "\"rope_theta\": 500000.0}";
    CU_ASSERT_EQUAL(mp_llm_config_load_json_string(c, llama, "l.json", &m),
                    MP_OK);
    CU_ASSERT_EQUAL(m.layers, 32u);
    CU_ASSERT_EQUAL(m.kv_heads, 8u);
    CU_ASSERT_EQUAL(m.ffn, 14336u);
    CU_ASSERT_EQUAL(m.mlp_matrices, 3u);
    CU_ASSERT_EQUAL(m.dtype, MP_DTYPE_BFLOAT16);
    const char *gpt2 = "{\"n_layer\": 12, \"n_embd\": 768, \"n_head\": 12}";
    CU_ASSERT_EQUAL(mp_llm_config_load_json_string(c, gpt2, "g.json", &m),
                    MP_OK);
    CU_ASSERT_EQUAL(m.ffn, 3072u);
    CU_ASSERT_EQUAL(m.kv_heads, 12u);
    CU_ASSERT_EQUAL(m.mlp_matrices, 2u);
    CU_ASSERT_EQUAL(m.dtype, MP_DTYPE_FLOAT16);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"n_layer\": 12, \"n_embd\": 768", "b.json:1:"},
        {"{\"n_embd\": 768, \"n_head\": 12}", "number of layers"},
        {"{\"n_layer\": -2, \"n_embd\": 768, \"n_head\": 12}", "n_layer"},
        {"{\"n_layer\": 2, \"n_embd\": 770, \"n_head\": 12}", "multiple"},
        {"{\"n_layer\": 2, \"n_embd\": 768, \"n_head\": 12, "
         "\"num_key_value_heads\": 5}",
         "multiple"},
        {"{\"n_layer\": 2, \"n_embd\": 768, \"n_head\": 12, "
         "\"torch_dtype\": \"float42\"}",
         "torch_dtype"},
        {"[]", "JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(
            mp_llm_config_load_json_string(c, bad[i].text, "b.json", &m),
            MP_ERR_PARSE);
        if (!strstr(mp_ctx_message(c), bad[i].needle)) {
            printf("\n  case %zu: %s\n", i, mp_ctx_message(c));
            CU_FAIL("message does not name the problem");
        }
    }
    CU_ASSERT_EQUAL(mp_llm_config_load_json(c, "/nonexistent.json", &m),
                    MP_ERR_IO);
    mp_ctx_destroy(c);
}

/* 2 layers, hidden 64, 4 heads, FFN 256, fp16: 49152 parameters and
 * 98304 bytes of weights per layer. */
static void tiny(mp_llm_config *m, mp_flexgen_hw *hw, mp_flexgen_options *o)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "tiny");
    m->layers = 2;
    m->hidden = 64;
    m->heads = m->kv_heads = 4;
    m->ffn = 256;
    m->mlp_matrices = 2;
    m->dtype = MP_DTYPE_FLOAT16;
    memset(hw, 0, sizeof *hw);
    snprintf(hw->name, sizeof hw->name, "unit");
    hw->gpu_mem = hw->cpu_mem = hw->disk_mem = 1ull << 30;
    hw->ctog_bw = hw->gtoc_bw_cache = hw->gtoc_bw_hidden = hw->dtoc_bw = 1e9;
    hw->ctod_bw_cache_p = hw->ctod_bw_hidden_p = hw->ctod_bw_g = 1e9;
    hw->mm_flops_p = hw->mm_flops_g = 1e12;
    hw->bmm_flops_p = hw->bmm_flops_g = 1e11;
    hw->cpu_flops = 1e10;
    mp_flexgen_options_init(o);
    o->prompt_len = 8;
    o->gen_len = 4;
    o->gpu_batch = 1;
    o->num_batches = 1;
}

static int have_glpk(mp_ctx *c, mp_status st)
{
    if (mp__glpk_available())
        return 1;
    CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "GLPK"));
    return 0;
}

static void t_tiny_all_gpu(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_flexgen_hw hw;
    mp_flexgen_options o;
    mp_flexgen_policy p;
    tiny(&m, &hw, &o);
    mp_status st = mp_flexgen_search(c, &m, &hw, &o, &p);
    if (have_glpk(c, st)) {
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        /* everything fits on the GPU and moving costs time: all on GPU */
        CU_ASSERT(near(p.w_gpu, 1, 1e-9) && near(p.c_gpu, 1, 1e-9) &&
                  near(p.h_gpu, 1, 1e-9));
        /* prefill per layer: 8 tokens x 2 x 49152 FLOPs / 1e12 plus
         * attention 4 x 8^2 x 64 / 1e11 = 9.50272e-7 s; decode per layer
         * and token: 98304 / 1e12 + 4 x (8 + 2) x 64 / 1e11
         * = 1.23904e-7 s. T = 2 x 9.50272e-7 + 2 x 3 x 1.23904e-7. */
        double T = 2 * 9.50272e-7 + 6 * 1.23904e-7;
        CU_ASSERT(near(p.prefill_seconds, 2 * 9.50272e-7, 1e-6));
        CU_ASSERT(near(p.decode_seconds, 6 * 1.23904e-7, 1e-6));
        CU_ASSERT(near(p.throughput, 4 / T, 1e-6));
        CU_ASSERT(near(p.weight_bytes, 2 * 98304.0, 1e-12));
        /* cache: 2 x 2 bytes x 64 per token and layer, 12 tokens */
        CU_ASSERT(near(p.cache_bytes, 256.0 * 12 * 2, 1e-12));
    }
    mp_ctx_destroy(c);
}

static void t_tiny_fixed_policy(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_flexgen_hw hw;
    mp_flexgen_options o;
    mp_flexgen_policy p;
    tiny(&m, &hw, &o);
    /* weights on CPU, cache and activations on GPU */
    double fix[6] = {0, 100, 100, 0, 100, 0};
    memcpy(o.percent, fix, sizeof fix);
    mp_status st = mp_flexgen_search(c, &m, &hw, &o, &p);
    if (have_glpk(c, st)) {
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT(near(p.w_cpu, 1, 1e-9));
        /* prefill: the weight load 98304 / 1e9 dominates compute; decode:
         * the same load plus the compute 1.23904e-7 */
        double tpre = 98304 / 1e9, tgen = 98304 / 1e9 + 1.23904e-7;
        CU_ASSERT(near(p.prefill_seconds, 2 * tpre, 1e-6));
        CU_ASSERT(near(p.decode_seconds, 6 * tgen, 1e-6));
        CU_ASSERT(near(p.throughput, 4 / (2 * tpre + 6 * tgen), 1e-6));
    }
    mp_ctx_destroy(c);
}

static void t_memory_bound(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    mp_flexgen_hw hw;
    mp_flexgen_options o;
    mp_flexgen_policy p, all_cpu;
    tiny(&m, &hw, &o);
    /* 8 layers: 786432 bytes of weights, two layers' worth (196608) is
     * the working set; room for about half of the rest */
    m.layers = 8;
    hw.gpu_mem = 520000;
    o.alpha_g = 1;
    mp_status st = mp_flexgen_search(c, &m, &hw, &o, &p);
    if (have_glpk(c, st)) {
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT(p.w_gpu > 0.05 && p.w_gpu < 0.95);
        CU_ASSERT(p.gpu_peak <= 520000 * (1 + 1e-6));
        CU_ASSERT(p.gpu_peak >= 520000 * 0.99); /* the GPU is full */
        double fix[6] = {0, 100, -1, -1, -1, -1};
        memcpy(o.percent, fix, sizeof fix);
        CU_ASSERT_EQUAL(mp_flexgen_search(c, &m, &hw, &o, &all_cpu), MP_OK);
        CU_ASSERT(p.throughput > all_cpu.throughput);
            /* nothing fits in 1 KiB of GPU */
        hw.gpu_mem = 1024;
        o.percent[0] = o.percent[1] = -1;
        CU_ASSERT_EQUAL(mp_flexgen_search(c, &m, &hw, &o, &p),
                        MP_ERR_INFEASIBLE);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "no policy fits"));
    }
    /* bad options */
    o.weight_bits = 8;
    CU_ASSERT_EQUAL(mp_flexgen_search(c, &m, &hw, &o, &p),
                    mp__glpk_available() ? MP_ERR_INVALID_ARG
                                        : MP_ERR_UNSUPPORTED);
    mp_ctx_destroy(c);
}

/* OPT-30B on FlexGen's T4 (prompt 512, gen 32): FlexGen published weights
 * 20% GPU / 80% CPU, KV cache and activations on CPU. */
static void t_opt30b_shape(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    const char *cfg = "{\"num_hidden_layers\": 48, \"hidden_size\": 7168, "
                      "\"num_attention_heads\": 56, \"ffn_dim\": 28672, "
                      "\"torch_dtype\": \"float16\"}";
    mp_llm_config m;
    CU_ASSERT_EQUAL_FATAL(mp_llm_config_load_json_string(c, cfg, "opt", &m),
                          MP_OK);
    mp_flexgen_hw hw;
    mp_flexgen_hw_t4(&hw);
    mp_flexgen_options o;
    mp_flexgen_options_init(&o);
    mp_flexgen_policy p;
    mp_status st = mp_flexgen_search(c, &m, &hw, &o, &p);
    if (have_glpk(c, st)) {
        CU_ASSERT_EQUAL_FATAL(st, MP_OK);
        CU_ASSERT(p.w_gpu > 0.05 && p.w_gpu < 0.4);
        CU_ASSERT(p.w_cpu > 0.6 && p.w_disk < 0.01);
        CU_ASSERT(p.c_cpu > 0.9 && p.c_gpu < 0.01);
        CU_ASSERT(p.h_cpu > 0.99);
        CU_ASSERT(p.gpu_batch * p.num_batches >= 64);
        CU_ASSERT(p.gpu_peak <= 0.8 * 16.0 * 1073741824.0 * (1 + 1e-6));
        CU_ASSERT(p.throughput > 1);
    }
    mp_ctx_destroy(c);
}


/* Issue 21: on a large GPU the batch grows with the memory until a
 * constraint binds. A Llama-3-8B-class config on the h200 profile once
 * gave GPU batch 2 (14 of 140 GiB) and the same throughput for 12, 32 and
 * 256 generated tokens: the decode GEMMs ran at the T4 fit's
 * small-batch rate. With the device's roofline the batch passes the
 * point where the GEMMs turn compute-bound (F / B = 70 sequences here),
 * the throughput grows with the generation length, and the policy names
 * what binds; with less GPU memory, the memory binds. */
static void t_large_gpu_batch_grows(void)
{
    if (!mp__glpk_available())
        return;
    mp_ctx *c = mp_ctx_create(NULL);
    mp_llm_config m;
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/llm/llama-3-8b.json",
             MP_SOURCE_DIR);
    CU_ASSERT_EQUAL_FATAL(mp_llm_config_load_json(c, path, &m), MP_OK);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(c, "h200", &d), MP_OK);
    mp_flexgen_hw hw;
    mp_flexgen_hw_from_device(&d, &hw);
    static const uint32_t gens[3] = {12, 32, 256};
    double prev = 0;
    for (int i = 0; i < 3; i++) {
        mp_flexgen_options o;
        mp_flexgen_options_init(&o);
        o.gen_len = gens[i];
        mp_flexgen_policy p;
        CU_ASSERT_EQUAL_FATAL(mp_flexgen_search(c, &m, &hw, &o, &p), MP_OK);
        CU_ASSERT(p.gpu_batch >= 70);
        CU_ASSERT(p.gpu_peak > 30.0 * (1 << 30));
        CU_ASSERT(p.throughput > 1.5 * prev);
        prev = p.throughput;
        CU_ASSERT_PTR_NOT_NULL(strstr(p.binding, "GPU compute"));
        CU_ASSERT_STRING_EQUAL(p.decode_bound, "GPU compute");
    }
    /* 24 GiB: the GPU's memory binds */
    hw.gpu_mem = 24ull << 30;
    mp_flexgen_options o;
    mp_flexgen_options_init(&o);
    o.gen_len = 256;
    mp_flexgen_policy p;
    CU_ASSERT_EQUAL_FATAL(mp_flexgen_search(c, &m, &hw, &o, &p), MP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.binding, "GPU memory"));
    CU_ASSERT(p.gpu_peak <= 0.8 * (double)(24ull << 30) * (1 + 1e-9));
    mp_ctx_destroy(c);
}

/* The command. */
static void t_cli(void)
{
    char cmd[2048], out[1 << 14];
    snprintf(cmd, sizeof cmd,
             "'%s' offload-policy '%s/examples/llm/opt-30b.json' "
             "--device t4 --json",
             MP_CLI_PATH, MP_SOURCE_DIR);
    int rc = mp_test_run(cmd, out, sizeof out);
    if (!mp__glpk_available()) {
        CU_ASSERT_EQUAL(rc, 3);
    } else {
        CU_ASSERT_EQUAL(rc, 0);
        mp_test_json *o = mp_test_json_parse(out);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        double tput = mp_test_jnum(o, "throughput_tokens_per_s");
        CU_ASSERT(tput > 1);
        /* shares as fractions 0-1 */
        CU_ASSERT(mp_test_jnum(o, "weights.cpu") > 0.6);
        CU_ASSERT(mp_test_jnum(o, "weights.cpu") <= 1);
        CU_ASSERT_EQUAL(mp_test_jint(o, "prompt_len"), 512);
        mp_test_json_free(o);
        /* a fixed policy: exactly the fractions given */
        snprintf(cmd, sizeof cmd,
                 "'%s' offload-policy "
                 "'%s/examples/llm/opt-30b.json' --gpu-batch 48 "
                 "--num-batches 3 --percent 20,80,0,100,0,100 --alpha 1.2 "
                 "--json",
                 MP_CLI_PATH, MP_SOURCE_DIR);
        CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
        o = mp_test_json_parse(out);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_DOUBLE_EQUAL(mp_test_jnum(o, "weights.gpu"), 0.2, 1e-8);
        CU_ASSERT_EQUAL(mp_test_jint(o, "effective_batch"), 144);
        mp_test_json_free(o);
    }
    static const char *bad[] = {
        "--device t4", /* no model */
        "x.json --compress-weights 3bit",
        "x.json --percent 20,80",
        "x.json --prompt 0",
        "x.json --alpha 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' offload-policy %s 2>/dev/null",
                 MP_CLI_PATH, bad[i]);
        CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 2);
    }
    snprintf(cmd, sizeof cmd,
             "'%s' offload-policy /nonexistent.json 2>/dev/null",
             MP_CLI_PATH);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 3);
}

static CU_TestInfo tests[] = {
    {"model configs: HF keys, defaults, malformed", t_config},
    {"tiny model: all on GPU, time by hand", t_tiny_all_gpu},
    {"tiny model: fixed policy evaluated by hand", t_tiny_fixed_policy},
    {"GPU memory bound splits the weights; infeasible", t_memory_bound},
    {"OPT-30B on FlexGen's T4: policy shape", t_opt30b_shape},
    {"large GPU: the batch grows until a constraint binds",
     t_large_gpu_batch_grows},
    {"memplan offload-policy", t_cli},
    CU_TEST_INFO_NULL,
};

void mp_register_flexgen(void);
void mp_register_flexgen(void) { mp_test_add_suite("flexgen", tests); }
