/*
 * memplan/serve.h - serving plans for LLMs (docs/serving.md): how a GPU's
 * memory divides between the weights (by precision, split over
 * tensor-parallel ranks), the forward peak of a prefill chunk and of a
 * decode step (planned from a decoder graph memplan builds for the
 * config, logits and sampling included), CUDA graph pools, a runtime
 * reserve and the KV cache (paged or contiguous, GQA, sliding windows,
 * fp8): blocks, concurrent sequences, the binding constraint;
 * fragmentation over a distribution of request lengths and prefix
 * sharing.
 *
 *     mp_serve_options so;
 *     mp_serve_result r;
 *     mp_serve_options_init(&so);
 *     so.max_model_len = 8192;
 *     if (mp_serve_plan(ctx, &m, &dev, &so, &r) == MP_OK)
 *         printf("%llu KV blocks, %u sequences of 8k\n",
 *                (unsigned long long)r.kv_blocks, r.max_seqs_at_len);
 */
#ifndef MEMPLAN_SERVE_H
#define MEMPLAN_SERVE_H

#include "cost.h"
#include "offload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weight formats: the config's 16-bit dtype, int8 and int4 with a scale
 * (and for int4 a 4-bit zero point) per group of input channels
 * (GPTQ/AWQ-style), fp8 with one fp32 scale per matrix. Embeddings, norms
 * and the LM head stay 16-bit, as quantized checkpoints keep them. */
typedef enum mp_weight_format {
    MP_WEIGHTS_16BIT = 0, MP_WEIGHTS_INT8, MP_WEIGHTS_INT4, MP_WEIGHTS_FP8
} mp_weight_format;
/* "16bit", "int8", "int4", "fp8"; "unknown" outside the table. */
MP_API const char *mp_weight_format_name(mp_weight_format f);
/* Parses a weight format: the names above, and "bf16", "fp16",
 * "float16", "bfloat16" for 16BIT.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_weight_format_parse(const char *name,
                                        mp_weight_format *out);

#define MP_SERVE_MAX_GRAPH_SIZES 128

typedef struct mp_serve_options {
    mp_weight_format weights;   /* default 16BIT */
    uint32_t group_size;        /* int4/int8 groups (default 128); 0: one
                                   group per output channel */
    mp_dtype kv_dtype;          /* UNDEFINED (default): the config's; or
                                   BFLOAT16, FLOAT16, FLOAT8E4M3FN,
                                   FLOAT8E5M2 */
    int kv_paged;               /* 1 (default): blocks of block_size
                                   tokens; 0: contiguous per sequence,
                                   reserved at max_model_len */
    uint32_t block_size;        /* tokens per KV block (default 16) */
    uint32_t max_model_len;     /* context per sequence (prompt + output);
                                   0: the config's max_position, else 8192 */
    uint32_t max_batched_tokens; /* tokens of a prefill chunk (default
                                    8192) */
    uint32_t max_seqs;          /* sequences of a decode step (default 256) */
    /* CUDA graphs captured for these decode batch sizes; n_graph_sizes 0
     * with graph_sizes_default 1 (default): vLLM's list (1, 2, 4, then
     * multiples of 8 up to 256 and of 16 up to 512) up to
     * min(2 x max_seqs, 512); n_graph_sizes 0 and graph_sizes_default 0:
     * no CUDA graphs (eager) */
    uint32_t graph_sizes[MP_SERVE_MAX_GRAPH_SIZES];
    uint32_t n_graph_sizes;
    int graph_sizes_default;
    uint32_t tp;                /* tensor-parallel ranks (default 1) */
    double gpu_util;            /* share of device memory (default 0.9) */
    uint64_t gpu_mem;           /* 0: the device's */
    /* CUDA context, library workspaces, communication buffers; ~0
     * (UINT64_MAX, the default): 531 MiB, the CUDA context measured on
     * the H200 (docs/validation.md), plus 256 MiB per rank for NCCL
     * when tp > 1 */
    uint64_t runtime_reserve;
    /* request lengths (tokens) for the fragmentation figures; NULL: the
     * figures are for every sequence at max_model_len */
    const uint32_t *lengths;
    size_t n_lengths;
    uint32_t shared_prefix;     /* tokens every sequence shares (a system
                                   prompt), stored once (paged only) */
    uint32_t alignment;         /* arena alignment of the planned graphs
                                   (default 256) */
} mp_serve_options;
/* Fills serving options with their defaults (the comments above). NULL is
 * a no-op. */
MP_API void mp_serve_options_init(mp_serve_options *o);

/* What binds the concurrency of a serving plan. */
typedef enum mp_serve_binding {
    MP_SERVE_FITS_NOTHING = 0, /* weights + peaks exceed the budget */
    MP_SERVE_KV_MEMORY,        /* KV blocks run out before max_seqs
                                  sequences of max_model_len */
    MP_SERVE_MAX_SEQS          /* max_seqs sequences of max_model_len fit:
                                  the scheduler's limit binds */
} mp_serve_binding;
/* "nothing fits", "KV cache memory", "max-seqs"; "unknown" outside. */
MP_API const char *mp_serve_binding_name(mp_serve_binding b);

/* The figures of one planned forward pass (a prefill chunk or a decode
 * step) on one rank. */
typedef struct mp_serve_forward {
    uint32_t tokens, seqs;      /* tokens run; sequences sampled */
    uint64_t arena_bytes;       /* the plan's arena: the peak of the pass */
    uint64_t lower_bound_bytes; /* max live bytes over its steps */
    uint64_t logits_bytes;      /* the fp32 logits (seqs x vocab) */
    uint64_t sampler_bytes;     /* probabilities and the sort of top-k/p */
    uint32_t nodes;             /* of the graph planned */
} mp_serve_forward;

typedef struct mp_serve_result {
    uint32_t tp, max_model_len, block_size;
    uint64_t device_bytes;      /* device memory of one GPU */
    uint64_t budget_bytes;      /* gpu_util x device_bytes */
    /* per rank */
    uint64_t weight_bytes;
    uint64_t kv_bytes_per_token;  /* every layer's K and V of one token */
    uint64_t kv_block_bytes;      /* block_size tokens (paged) */
    uint64_t kv_seq_bytes;        /* one sequence at max_model_len, as
                                     allocated (window and blocks applied) */
    mp_serve_forward prefill, decode;
    uint64_t activation_bytes;    /* the larger of the two arenas */
    uint64_t cuda_graph_bytes;    /* the graphs' shared pool */
    uint32_t cuda_graphs, cuda_graph_max; /* graphs captured, largest size */
    uint64_t runtime_bytes;       /* the reserve */
    uint64_t kv_budget_bytes;     /* what is left for the KV cache */
    uint64_t kv_blocks;           /* paged: blocks in kv_budget_bytes */
    uint64_t kv_tokens;           /* tokens the cache holds */
    uint64_t kv_used_bytes;       /* of the blocks or sequences allocated */
    uint32_t max_seqs_at_len;     /* sequences of max_model_len that fit
                                     (shared prefix counted once) */
    uint32_t max_len_at_seqs;     /* the longest context each of max_seqs
                                     sequences can have (0: none) */
    mp_serve_binding binding;
    /* fragmentation over the request lengths (or max_model_len):
     * the bytes the sequences' tokens need, and what paged blocks and a
     * contiguous reservation at max_model_len hold for them */
    uint64_t frag_requests;
    uint64_t frag_token_bytes, frag_paged_bytes, frag_contiguous_bytes;
    uint64_t frag_shared_bytes;   /* paged, shared prefix stored once */
    double mean_length;
    /* concurrent requests of that distribution the KV budget holds:
     * paged, contiguous at max_model_len, paged with the prefix shared */
    uint64_t frag_fit_paged, frag_fit_contiguous, frag_fit_shared;
} mp_serve_result;

/* The serving plan of config m on device d (NULL: the builtin h200): the
 * weights per rank, the forward peaks of a prefill chunk and a decode
 * step (mp_serve_decoder_graph planned with mp_plan_create), the CUDA
 * graph pool (the decode step's arena at the largest captured size: the
 * graphs share one pool and are captured largest first, as vLLM does),
 * the reserve, and the KV cache in what is left of gpu_util x memory.
 * A budget that holds no KV block is no error: binding says so.
 * Errors: MP_ERR_INVALID_ARG (NULL, a bad option: the message names it
 * and says the fix), MP_ERR_OVERFLOW, MP_ERR_NOMEM. */
MP_API mp_status mp_serve_plan(mp_ctx *ctx, const mp_llm_config *m,
                               const mp_device *d, const mp_serve_options *o,
                               mp_serve_result *out);

/* The decoder graph of one forward pass of m on one of o->tp ranks:
 * `tokens` tokens in one flat batch (vLLM's layout: a prefill chunk or
 * one token per sequence of a decode step), logits for `seqs` of them
 * (0: none, as a captured CUDA graph holds the model only). Per layer:
 * norm, q/k/v projections (heads split over ranks), attention over the
 * KV cache (outside the graph: it is its own pool), output projection,
 * residual, norm, MLP (gated or not; experts routed to topk with vLLM's
 * fused-MoE buffers); then the final norm, the rows sampled, the LM
 * head, logits cast to fp32, softmax and the top-k/top-p sort. Weights
 * are tensors of kind weight with their bytes in o->weights' format.
 * Errors: MP_ERR_INVALID_ARG (NULL, tokens 0, a bad option),
 * MP_ERR_OVERFLOW, MP_ERR_NOMEM. */
MP_API mp_status mp_serve_decoder_graph(mp_ctx *ctx, const mp_llm_config *m,
                                        const mp_serve_options *o,
                                        uint32_t tokens, uint32_t seqs,
                                        mp_graph **out);

/* The graph of a whole generation of m (docs/serving.md, "The executor
 * run"): the prefill of `prompt` tokens for each of `seqs` sequences (one
 * flat batch), then `gen` decode steps, each feeding the token its
 * predecessor sampled (greedy), every pass the decoder of
 * mp_serve_decoder_graph with its sampler. The KV cache is explicit: per
 * layer a K and a V tensor of kind weight (persistent, outside the
 * arena), [blocks, block_size, kv heads, head dim] when o->kv_paged (the
 * blocks of mp_serve_block_table, in the constant int32 tensor
 * "kv_block_table" [seqs, blocks per sequence]) or [seqs, prompt + gen,
 * kv heads, head dim] when contiguous. Each layer's attention is a
 * PagedAttention node (domain memplan): it writes the new tokens' K and V
 * into the cache, then attends causally over it. The prompt's token ids
 * are the input "step0/input_ids" (values in the graph); each pass's
 * tensors and nodes are named "stepN/..." (N 0: the prefill); outputs:
 * each pass's sampled tokens ("stepN/sampled", int64 [1, seqs]) and the
 * last pass's fp32 logits ("stepG/logits_fp32"). The weights are the
 * graph's first tensors, in the same order whichever layout, so an
 * executor filling them by index fills both layouts alike.
 * Errors: MP_ERR_INVALID_ARG (NULL, seqs or prompt 0, seqs x prompt or
 * the block table above 16384 values, a bad option), MP_ERR_UNSUPPORTED
 * (experts, learned positions, quantized weights, --tp, a KV dtype not
 * the model's, a sliding window shorter than prompt + gen),
 * MP_ERR_OVERFLOW, MP_ERR_NOMEM. */
MP_API mp_status mp_serve_generation_graph(mp_ctx *ctx,
                                           const mp_llm_config *m,
                                           const mp_serve_options *o,
                                           uint32_t seqs, uint32_t prompt,
                                           uint32_t gen, mp_graph **out);

/* The paged KV cache's block table of a generation of seqs sequences of
 * prompt + gen tokens in blocks of block_size tokens, as a serving
 * engine's allocator hands the blocks out (vLLM's free list, in order):
 * the prefill takes each sequence's prompt blocks in turn, then at each
 * decode step every sequence whose new token starts a block takes the
 * next free one. table[s x per + j] (per = ceil((prompt + gen) /
 * block_size)) is the block holding tokens [j x block_size, (j + 1) x
 * block_size) of sequence s; *num_blocks the blocks used (seqs x per).
 * Errors: MP_ERR_INVALID_ARG (NULL, seqs, prompt or block_size 0, more
 * than cap entries), MP_ERR_OVERFLOW. */
MP_API mp_status mp_serve_block_table(mp_ctx *ctx, uint32_t seqs,
                                      uint32_t prompt, uint32_t gen,
                                      uint32_t block_size, uint32_t *table,
                                      uint64_t cap, uint32_t *num_blocks);

/* n request lengths (tokens) at the quantiles (i + 0.5) / n of a named
 * distribution, in increasing order (deterministic, no sampling):
 * "fixed:L", "uniform:MIN:MAX", "exponential:MEAN",
 * "lognormal:MEDIAN:SIGMA"; lengths are at least 1 and at most max_len
 * (0: no limit).
 * Errors: MP_ERR_INVALID_ARG (NULL, n 0, an unknown name or bad
 * parameters: the message gives the forms). */
MP_API mp_status mp_serve_lengths(mp_ctx *ctx, const char *spec,
                                  uint32_t max_len, uint32_t *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_SERVE_H */
