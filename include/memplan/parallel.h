/*
 * memplan/parallel.h - per-rank plans of a multi-GPU training step
 * (docs/distributed.md): from a training graph (memplan/train.h) and a
 * parallel layout, the graph one rank executes, with every collective a
 * node of its own whose buffers are tensors, so that the plan of that
 * graph (memplan/plan.h) holds what one GPU holds: data parallelism
 * (DDP's gradient buckets), ZeRO stages 1-3 (ZeRO-3 = FSDP full
 * sharding, units all-gathered before use and freed after, with
 * prefetch), the optimizer offloaded to the host, tensor parallelism
 * (Megatron-LM's column- and row-parallel blocks, with sequence
 * parallelism), and pipeline stages with the micro-batches in flight
 * their schedule keeps (GPipe, 1F1B, interleaved 1F1B).
 *
 *     mp_parallel_options po;
 *     mp_parallel_options_init(&po);
 *     po.dp = 8;
 *     po.zero = 3;
 *     mp_parallel *par = NULL;
 *     mp_parallel_create(train, &po, &par);
 *     for (uint32_t i = 0; i < mp_parallel_num_distinct(par); i++) {
 *         mp_rank_info ri;
 *         mp_parallel_rank_info(par, i, &ri);
 *         mp_plan_create(ri.graph, NULL, &plan);
 *         mp_parallel_breakdown(par, i, plan, &bd);
 *     }
 */
#ifndef MEMPLAN_PARALLEL_H
#define MEMPLAN_PARALLEL_H

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DDP's default gradient bucket (torch DistributedDataParallel's
 * bucket_cap_mb = 25): 25 MiB */
#define MP_DEFAULT_BUCKET_BYTES ((uint64_t)25 << 20)

/* A pipeline schedule: GPIPE (every micro-batch's forward, then every
 * backward: each stage holds all M micro-batches' activations), ONE_F_ONE_B
 * (PipeDream-Flush: stage s of p holds p - s), INTERLEAVED (Megatron's
 * interleaved 1F1B over V virtual stages per rank). */
typedef enum mp_pp_schedule {
    MP_PP_GPIPE = 0, MP_PP_1F1B, MP_PP_INTERLEAVED
} mp_pp_schedule;
/* The name of a pipeline schedule: "gpipe", "1f1b", "interleaved-1f1b". */
MP_API const char *mp_pp_schedule_name(mp_pp_schedule s);
/* Parses a pipeline schedule name as mp_pp_schedule_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_pp_schedule_parse(const char *name, mp_pp_schedule *out);

typedef struct mp_parallel_options {
    /* data-parallel ranks (default 1) */
    uint32_t dp;
    /* ZeRO stage (default 0): 0 DDP (full parameters, gradients and
     * optimizer state on every rank; gradients all-reduced in buckets);
     * 1 optimizer state sharded (ceil(n / dp) elements of each state per
     * rank), parameters all-gathered after the step; 2 gradients
     * reduce-scattered too (each rank keeps its shard); 3 parameters
     * sharded as well (FSDP full sharding): a unit's parameters
     * all-gathered before their first use in forward and again in
     * backward, freed after their last use there */
    int zero;
    /* gradient bucket cap in bytes (stages 0-2; default
     * MP_DEFAULT_BUCKET_BYTES); a parameter larger than it has a bucket
     * of its own */
    uint64_t bucket_bytes;
    /* stage 3's units: NULL or "layer" (default): a parameter's unit is
     * its name up to its first all-digit component ("h.3.attn.w" ->
     * "h.3"); else a name prefix: the prefix and the next component
     * ("model.layers." -> "model.layers.3"). Parameters outside every
     * unit form the unit "root". */
    const char *fsdp_unit;
    /* stage 3: the units all-gathered ahead of the one needed (0, 1 or
     * 2; default 1, as FSDP's forward/backward prefetch) */
    int prefetch;
    /* 1: the optimizer state and the step on the host (ZeRO-Offload):
     * no state, no step temporary in device memory; the rank's host
     * bytes report the state */
    int offload_optimizer;
    /* pipeline stages (default 1), micro-batches per step (default 1;
     * at least pp), schedule (default 1F1B) and, for INTERLEAVED, the
     * virtual stages (model chunks) per rank (default 2) */
    uint32_t pp, microbatches;
    mp_pp_schedule schedule;
    uint32_t virtual_stages;
    /* NULL (default): stages balanced by balance_compute's measure;
     * else pp - 1 forward node names, comma separated, each the last
     * node of a stage; INTERLEAVED: pp * virtual_stages - 1 names (model
     * chunks) */
    const char *cuts;
    /* 0 (default): stages balanced by memory (the forward nodes' output
     * bytes and 4 x the bytes of the parameters they first read); 1: by
     * compute (the forward nodes' FLOPs, from the op registry) */
    int balance_compute;
    /* tensor-parallel ranks (default 1): Megatron-LM's split of the
     * transformer blocks recognized in the graph (a MatMul/Gemm pair
     * around attention or an MLP activation): the first layer(s)
     * column-parallel (weights and biases split along the output
     * features, attention heads split), the second row-parallel (weight
     * split along the input features) followed by an AllReduce of its
     * output; in backward an AllReduce of the first layers' input
     * gradient. The token embedding (a Gather of a weight table) and the
     * output layer (a linear layer only the loss reads) are split over
     * the vocabulary when it divides by tp (Megatron's vocabulary-
     * parallel layers); LayerNorms and positions replicate. A graph with
     * no such block is an error. */
    uint32_t tp;
    /* 1 (with tp > 1): sequence parallelism (Megatron-LM's): the nodes
     * between the blocks working on each position alone (LayerNorms,
     * residual Adds, dropouts, casts, the row layers' biases) run on
     * 1/tp of the sequence; a ReduceScatter after each row layer instead
     * of its AllReduce, an AllGather before the column layers (again in
     * backward), the gradients the other way, and an AllReduce of the
     * gradients of the weights those nodes read (default 0) */
    int sp;
} mp_parallel_options;
/* Fills parallel options with their defaults (the comments above). NULL
 * is a no-op. */
MP_API void mp_parallel_options_init(mp_parallel_options *o);

/* The graphs of the ranks of one training step; ranks whose graphs are
 * identical share one (data-parallel ranks do). */
typedef struct mp_parallel mp_parallel;

/* What one distinct rank graph is. */
typedef struct mp_rank_info {
    mp_graph *graph;       /* finalized; lives in the mp_parallel */
    uint32_t n_ranks;      /* ranks that execute it */
    uint32_t first_rank;   /* the lowest of them (ranks are numbered as
                              Megatron-LM's: tensor-parallel index
                              fastest, then data-parallel, then stage:
                              (stage * dp + dp index) * tp + tp index) */
    uint32_t stage;        /* its pipeline stage (0 without pp) */
    uint32_t in_flight;    /* micro-batches whose activations it holds */
    uint64_t host_bytes;   /* optimizer state kept on the host */
    uint32_t n_collectives; /* collective nodes (AllReduce, AllGather,
                               ReduceScatter, Send, Recv) */
    uint32_t tp_attention;  /* transformer blocks split by tp: attention */
    uint32_t tp_mlp;        /* and MLP blocks (0 without tp) */
    uint32_t tp_vocab;      /* layers split over the vocabulary: the
                               embedding, the output layer (0-2) */
    uint32_t sp_nodes;      /* nodes split along the sequence (sp) */
} mp_rank_info;

/* Builds the graph each rank executes from a finalized training graph
 * (mp_train_graph's result): its optimizer steps (memplan::SGD, Adam, ...
 * reading the weight, its gradient and its states) say which tensors are
 * parameters, gradients and optimizer state. Shard sizes are rounded up:
 * ceil(n / dp) elements per tensor. The graphs come back finalized, with
 * the new nodes memplan::AllReduce, AllGather, ReduceScatter, Send, Recv
 * and HostStep (the optimizer step offloaded) placed in the order the
 * default schedule runs them.
 * Errors: MP_ERR_INVALID_ARG (NULL, dp, tp or pp 0, zero above 3,
 * prefetch above 2, micro-batches fewer than pp, a cut that is no
 * forward node or out of order, sp without tp; the message names the
 * option), MP_ERR_GRAPH (not a training graph: no optimizer step; a
 * stage with no node; tp with no transformer block recognized; sp with
 * no node between the blocks to split),
 * MP_ERR_OVERFLOW, MP_ERR_NOMEM. */
MP_API mp_status mp_parallel_create(const mp_graph *train,
                                    const mp_parallel_options *opt,
                                    mp_parallel **out);
/* Frees the rank graphs; destroy their plans first. NULL is accepted. */
MP_API void mp_parallel_destroy(mp_parallel *p);
/* Ranks in all (tp * dp * pp); 0 for NULL. */
MP_API uint32_t mp_parallel_num_ranks(const mp_parallel *p);
/* Distinct rank graphs (one per pipeline stage); 0 for NULL. */
MP_API uint32_t mp_parallel_num_distinct(const mp_parallel *p);
/* The distinct graph rank `rank` executes; MP_NONE out of range. */
MP_API uint32_t mp_parallel_distinct_of(const mp_parallel *p, uint32_t rank);
/* Distinct rank graph i (i < mp_parallel_num_distinct).
 * Errors: MP_ERR_NOT_FOUND (out of range), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_parallel_rank_info(const mp_parallel *p, uint32_t i,
                                       mp_rank_info *out);

/* Where the peak of a rank's plan comes from: the persistent bytes and
 * the arena blocks live at the peak step, by role. The fields add up to
 * the plan's peak_bytes. */
typedef struct mp_rank_breakdown {
    uint64_t peak_bytes;       /* the plan's arena + persistent bytes */
    uint32_t peak_step;        /* the plan's peak step */
    uint64_t param_bytes;      /* weights and constants (shards under
                                  ZeRO-3) */
    uint64_t grad_bytes;       /* parameter gradients before reduction */
    uint64_t optimizer_bytes;  /* optimizer states, step temporaries */
    uint64_t activation_bytes; /* everything else live in the arena:
                                  inputs, activations, activation
                                  gradients, the loss */
    uint64_t comm_bytes;       /* the outputs of collectives: buckets,
                                  gradient shards, gathered parameters,
                                  received activations and gradients */
    uint64_t free_bytes;       /* arena bytes no live block holds at the
                                  peak step (arena - lower bound) */
} mp_rank_breakdown;
/* The breakdown of a plan of distinct rank graph i (made with
 * mp_plan_create or another planner from mp_rank_info.graph).
 * Errors: MP_ERR_NOT_FOUND (i out of range), MP_ERR_INVALID_ARG (NULL,
 * a plan of another graph). */
MP_API mp_status mp_parallel_breakdown(const mp_parallel *p, uint32_t i,
                                       const mp_plan *plan,
                                       mp_rank_breakdown *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_PARALLEL_H */
