/*
 * memplan/offload.h - moving memory to the host (docs/offload.md): plans
 * of graph tensors offloaded to host and prefetched back under a budget
 * (with recompute, jointly), and FlexGen's offloading policy search for
 * LLM inference over GPU, CPU and disk.
 *
 *     mp_offload_options oo;
 *     mp_offload_result res;
 *     mp_offload_options_init(&oo);
 *     oo.budget = 4ull << 30;
 *     if (mp_offload_plan(g, &oo, NULL, &plan, &res) == MP_OK)
 *         printf("%.3f s exposed\n", res.exposed_seconds);
 */
#ifndef MEMPLAN_OFFLOAD_H
#define MEMPLAN_OFFLOAD_H

#include "cost.h"
#include "plan.h"
#include "remat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- FlexGen-style offload policy search for LLM inference -------------- */
/* A decoder-only transformer, as its Hugging Face config.json gives it. */
typedef struct mp_llm_config {
    char name[64];
    uint32_t layers, hidden, heads, kv_heads, ffn, vocab;
    uint32_t mlp_matrices;   /* 2 (OPT, GPT) or 3 (gated: LLaMA, Mistral) */
    mp_dtype dtype;          /* of weights, activations and KV cache */
    /* for serving plans (memplan/serve.h): */
    uint32_t head_dim;       /* head_dim, else hidden / heads */
    uint32_t sliding_window; /* tokens attended; 0: full attention */
    uint32_t experts, experts_per_tok; /* mixture of experts; 0: dense */
    uint32_t max_position;   /* max_position_embeddings; 0: not given */
    uint32_t tie_embeddings; /* 1: the LM head is the embedding table */
    uint32_t layer_norm;     /* 1: LayerNorm with bias (GPT-2, OPT), 0: RMS */
    uint32_t learned_pos;    /* 1: learned position embeddings */
    uint32_t linear_bias;    /* 1: on every linear layer, 2: on q, k, v */
} mp_llm_config;
/* Reads a decoder-only transformer from its Hugging Face config.json:
 * num_hidden_layers/n_layer, hidden_size/n_embd/d_model,
 * num_attention_heads/n_head, num_key_value_heads (default: heads),
 * ffn_dim/intermediate_size/n_inner (default 4 x hidden), vocab_size,
 * torch_dtype (default float16) and model_type; for serving also
 * head_dim, sliding_window (null or use_sliding_window false: none),
 * num_local_experts and num_experts_per_tok, max_position_embeddings
 * (n_positions) and tie_word_embeddings; other keys are ignored.
 * Errors: MP_ERR_IO (unreadable), MP_ERR_PARSE (malformed JSON, a
 * required key missing), MP_ERR_INVALID_ARG (NULL, a bad value).
 * Example: mp_llm_config m;
 *          mp_llm_config_load_json(ctx, "config.json", &m); */
MP_API mp_status mp_llm_config_load_json(mp_ctx *ctx, const char *path,
                                         mp_llm_config *out);
/* mp_llm_config_load_json from a string; source_name names it in
 * messages. Errors: as mp_llm_config_load_json, without MP_ERR_IO. */
MP_API mp_status mp_llm_config_load_json_string(mp_ctx *ctx, const char *text,
                                                const char *source_name,
                                                mp_llm_config *out);

/* The machine of the policy search: three tiers and FlexGen's hardware
 * constants (bytes/s, FLOP/s). "t4" is the profile fitted in FlexGen's
 * cost model; others are derived from an mp_device (docs/offload.md). */
typedef struct mp_flexgen_hw {
    char name[48];
    uint64_t gpu_mem, cpu_mem, disk_mem;
    double ctog_bw, gtoc_bw_cache, gtoc_bw_hidden, dtoc_bw;
    double ctod_bw_cache_p, ctod_bw_hidden_p, ctod_bw_g;
    double mm_flops_p, mm_flops_g, bmm_flops_p, bmm_flops_g, cpu_flops;
    double c1, c2, c3;       /* CPU attention efficiency fit */
    /* device memory bandwidth: a decode step reads every layer's weights
     * and the GPU's share of the KV cache from it; 0: no such term (as in
     * FlexGen's model and its T4 fit) */
    double gpu_mem_bw;
} mp_flexgen_hw;
/* Fills *out with FlexGen's fitted T4 machine (16 GB GPU, 208 GB DRAM,
 * 1.5 TB disk). NULL is a no-op. */
MP_API void mp_flexgen_hw_t4(mp_flexgen_hw *out);
/* A FlexGen machine derived from a device profile: the T4 fit scaled by
 * the device's host link, fp16 peak and memory bandwidth, host tiers from
 * the profile. NULL arguments are a no-op. */
MP_API void mp_flexgen_hw_from_device(const mp_device *d, mp_flexgen_hw *out);

typedef struct mp_flexgen_options {
    uint32_t prompt_len, gen_len;    /* default 512, 32 */
    uint32_t gpu_batch;              /* 0: searched */
    uint32_t num_batches;            /* 0: searched */
    unsigned weight_bits, cache_bits; /* 16 (default) or 4: compressed */
    double alpha_g, alpha_c, alpha_n; /* usable share of each tier (0.8) */
    /* fixed percentages of wg, wc, cg, cc, hg, hc; < 0: free (default) */
    double percent[6];
    uint32_t max_gpu_batch;          /* search limit (default 1024) */
} mp_flexgen_options;
/* Fills the policy search options with their defaults (the comments
 * above). NULL is a no-op. */
MP_API void mp_flexgen_options_init(mp_flexgen_options *o);

typedef struct mp_flexgen_policy {
    uint32_t gpu_batch, num_batches;
    double w_gpu, w_cpu, w_disk;     /* fractions of the weights */
    double c_gpu, c_cpu, c_disk;     /* of the KV cache */
    double h_gpu, h_cpu, h_disk;     /* of the activations */
    double throughput;               /* generated tokens/s */
    double prefill_seconds, decode_seconds;
    double gpu_peak, cpu_peak, disk_peak;  /* bytes, max over phases */
    double weight_bytes, cache_bytes, hidden_bytes; /* totals */
    uint32_t lps_solved;
    /* the decode term that sets the time per token: "GPU compute", "GPU
     * memory bandwidth", "host link (CPU->GPU)", "host link (GPU->CPU)",
     * "disk reads", "disk writes" or "CPU attention" */
    const char *decode_bound;
    /* what keeps the batch from growing: a tier's memory (one more GPU
     * batch does not fit), a decode term that is saturated (a larger
     * batch fits but is no faster), the search's limit, or fixed */
    char binding[160];
} mp_flexgen_policy;
/* Searches GPU batch size and number of batches and solves FlexGen's LP
 * for each (GLPK); the policy of highest throughput goes to *out.
 * Errors: MP_ERR_INFEASIBLE (nothing fits the tiers), MP_ERR_UNSUPPORTED
 * (a build without GLPK), MP_ERR_INVALID_ARG (NULL, a bad option),
 * MP_ERR_NOMEM.
 * Example: mp_flexgen_hw_t4(&hw); mp_flexgen_options_init(&o);
 *          mp_flexgen_search(ctx, &m, &hw, &o, &pol); */
MP_API mp_status mp_flexgen_search(mp_ctx *ctx, const mp_llm_config *m,
                                   const mp_flexgen_hw *hw,
                                   const mp_flexgen_options *o,
                                   mp_flexgen_policy *out);

/* ---- offload of graph tensors to host under a budget -------------------- */
/* Chooses tensors to OFFLOAD after a use and PREFETCH before the next one
 * (largest and longest-idle first) so that live arena bytes + persistent
 * bytes fit the budget, placing each copy where the timeline says it is
 * hidden behind compute when it can; a two-stream simulation (compute and
 * copy engines) gives the exposed transfer time (docs/offload.md). */
typedef struct mp_offload_options {
    uint64_t budget;          /* bytes for live arena + persistent; 0: none */
    const mp_device *device;  /* cost model; NULL: the builtin h200 */
    /* 1 (default): a node's seconds given by the graph are used (when
     * they are seconds: mp_graph_cost_unit "s"); 0: the device's
     * roofline estimate from FLOPs and bytes for every node */
    int use_given_seconds;
    /* 0 (default): greedy; 1: ILP through GLPK over the same candidates
     * (hidden or whole-gap offload per tensor, budget at every position,
     * least estimated stall), warm-started from the greedy choice */
    int ilp;
    double time_limit;        /* ILP seconds; <= 0: 10 */
    /* joint recompute + offload (POET-style, docs/offload.md): 1 lets each
     * idle tensor also be dropped and recomputed before its next use; the
     * result is the fastest (one cost model: the device) of offload only,
     * recompute only (mp_remat_plan), the joint candidates (greedy, and
     * the ILP when ilp is set or there are at most ilp_max_candidates) and
     * recompute at looser budgets followed by offload; 0 (default): offload
     * only */
    int recompute;
    /* the recompute-only solver in joint mode (budget and node times are
     * set by the offload planner); NULL: AUTO with a 10 s limit */
    const struct mp_remat_options *remat;
    uint32_t ilp_max_candidates; /* joint: ILP up to this many (0: 400) */
} mp_offload_options;
/* Fills offload options with their defaults (the comments above). NULL is
 * a no-op. */
MP_API void mp_offload_options_init(mp_offload_options *o);

typedef struct mp_offload_result {
    mp_solve_status status;      /* FEASIBLE when the budget is met */
    uint64_t peak_bytes;         /* live arena peak + persistent bytes */
    uint64_t base_peak_bytes;    /* the same without offload */
    uint64_t bytes_to_host, bytes_to_device;
    uint32_t n_offloaded;        /* OFFLOAD steps */
    double compute_seconds;      /* every node once, no stalls */
    double exposed_seconds;      /* stalls waiting for copies */
    double total_seconds;        /* compute + exposed */
    double seconds;              /* solver time */
    const char *solver;          /* "greedy", "ilp" or "ilp(greedy)" when
                                    the ILP kept the warm start */
    mp_solve_status ilp_status;  /* of the ILP; NONE when not run */
    /* joint mode (recompute = 1) */
    uint32_t n_recomputed;       /* RECOMPUTE steps */
    double recompute_seconds;    /* their time (in total_seconds) */
    /* total seconds of the offload-only and recompute-only plans on the
     * same cost model (< 0: no plan within the budget) */
    double offload_only_seconds, recompute_only_seconds;
    const char *remat_solver;    /* recompute solver used, or NULL */
    /* where the node times come from: "given" (the graph's, in seconds)
     * or "device" (the device's cost model: use_given_seconds is 0, or
     * the graph gives its times in a unit of its own, mp_graph_cost_unit,
     * which is not added to transfer seconds) */
    const char *node_times;
} mp_offload_result;

/* Plans g under oo->budget with OFFLOAD/PREFETCH steps (offsets by po;
 * NULL: defaults). MP_ERR_INFEASIBLE when the budget cannot be met (a
 * step needs more than the budget even with every idle tensor on host);
 * res->peak_bytes then says the smallest peak reached and *out is NULL.
 * Errors: MP_ERR_INFEASIBLE (above), MP_ERR_UNSUPPORTED (oo->ilp without
 * GLPK), MP_ERR_INVALID_ARG (NULL, a bad option), MP_ERR_NOMEM. */
MP_API mp_status mp_offload_plan(mp_graph *g, const mp_offload_options *oo,
                                 const mp_plan_options *po, mp_plan **out,
                                 mp_offload_result *res);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_OFFLOAD_H */
