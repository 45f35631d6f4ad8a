/* planner/ranks.h - what the builders of per-rank graphs share
 * (planner/parallel.c: data parallelism and ZeRO; planner/pipeline.c:
 * pipeline stages and the mp_parallel object). Internal, not installed. */
#ifndef MP__RANKS_H
#define MP__RANKS_H

#include "ir.h"
#include "planner.h"

/* The role of a rank graph's tensor in the breakdown (mp_rank_breakdown) */
enum {
    MP__ROLE_ACT = 0, MP__ROLE_PARAM, MP__ROLE_GRAD, MP__ROLE_OPT,
    MP__ROLE_COMM
};

/* A rank graph being built: the graph, each tensor's role, the map from
 * the source graph's tensors, an operand buffer (inputs in the first
 * half, outputs in the second). */
typedef struct mp__pb {
    mp_ctx *ctx;
    mp_graph *g;
    uint8_t *role;
    size_t cap_role;
    uint32_t *tmap;
    uint32_t *buf;
    size_t cap_buf;
    uint32_t *cbuf;     /* a collective's operands (cap_buf too) */
    uint32_t n_coll;
    uint64_t host_bytes;
} mp__pb;

uint64_t mp__ceil_div(uint64_t n, uint64_t d);
/* MP_ERR_GRAPH: t has no optimizer step (the message says how to make a
 * training graph). */
mp_status mp__parallel_not_training(const mp_graph *t);
/* Starts a rank graph named after t with suffix; buffers sized for t. */
mp_status mp__pb_begin(mp__pb *B, mp_ctx *ctx, const mp_graph *t,
                       const char *suffix);
void mp__pb_free(mp__pb *B);
/* A copy of `like` (named `name` when not NULL), as a 1-D shard of
 * `shard` elements when shard >= 0, with its role. */
mp_status mp__pb_add_tensor(mp__pb *B, const mp__tensor *like,
                            const char *name, int64_t shard, uint8_t role,
                            uint32_t *id);
/* A 1-D buffer of elems elements of dt (kind activation). */
mp_status mp__pb_add_buffer(mp__pb *B, const char *name, mp_dtype dt,
                            uint64_t elems, uint8_t role, uint32_t *id);
/* A node: a copy of `like` (name, op, attributes, cost) where op is NULL,
 * else a memplan-domain node of op; name NULL: like's. */
mp_status mp__pb_add_node(mp__pb *B, const mp__node *like, const char *name,
                          const char *op, const uint32_t *in, uint32_t nin,
                          const uint32_t *out, uint32_t nout, mp_phase ph);
/* The rank graph of training graph t under data parallelism and ZeRO
 * (o->dp, zero, bucket_bytes, fsdp_unit, prefetch, offload_optimizer),
 * finalized, in B (free it with mp__pb_free); need_params: a graph with
 * no optimizer step is an error (not a training graph). */
mp_status mp__parallel_dp(const mp_graph *t, const mp_parallel_options *o,
                          const char *suffix, int need_params, mp__pb *B);

/* The stages' rank graphs of training graph t (o->pp > 1) in out[0 ..
 * pp-1] (each freed by the caller with mp__pb_free, also on failure;
 * zeroed first), with the micro-batches each holds in in_flight
 * (planner/pipeline.c). */
mp_status mp__parallel_pipeline(const mp_graph *t,
                                const mp_parallel_options *o, mp__pb *out,
                                uint32_t *in_flight);

/* The tensor-parallel rank graph of training graph t (o->tp > 1, o->sp),
 * a training graph again, finalized, in B (planner/tp.c), with the
 * attention and MLP blocks it split, the layers split over the
 * vocabulary (embedding, output layer) and the nodes split along the
 * sequence (sp). MP_ERR_GRAPH when no block is recognized (the message
 * names --tp and the last candidate's reason). */
mp_status mp__parallel_tp(const mp_graph *t, const mp_parallel_options *o,
                          mp__pb *B, uint32_t *n_attn, uint32_t *n_mlp,
                          uint32_t *n_vocab, uint32_t *n_sp);

#endif /* MP__RANKS_H */
