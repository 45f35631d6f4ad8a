/*
 * memplan/train.h - training graphs (docs/training.md): forward + loss +
 * backward + optimizer step, built from a forward graph through the op
 * registry's backward rules, with a breakdown of what a training step
 * holds. The result is an ordinary finalized graph: plan it with
 * memplan/plan.h, under a budget with memplan/remat.h.
 *
 *     mp_train_options to;
 *     mp_train_options_init(&to);
 *     to.optimizer = MP_OPTIM_ADAMW;
 *     mp_train_graph(fwd, &to, &train, NULL);
 */
#ifndef MEMPLAN_TRAIN_H
#define MEMPLAN_TRAIN_H

#include "cost.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- training graphs ---------------------------------------------------- */
typedef enum mp_optimizer {
    MP_OPTIM_SGD = 0, MP_OPTIM_MOMENTUM, MP_OPTIM_ADAM, MP_OPTIM_ADAMW,
    MP_OPTIM_ADAM8BIT
} mp_optimizer;
/* How the optimizer step runs, as PyTorch's optimizers name it (Adam and
 * AdamW; SGD and momentum update in place under all three):
 * FOREACH (PyTorch's default on CUDA) runs each operation over the whole
 * parameter group, and Adam's sqrt(v) step holds one fp32 temporary of
 * the group's size while the step runs; FUSED runs one kernel per group
 * with no temporary; FOR_LOOP updates one parameter at a time with a
 * temporary of that parameter's size. */
typedef enum mp_optimizer_impl {
    MP_OPTIM_IMPL_FOREACH = 0, MP_OPTIM_IMPL_FUSED, MP_OPTIM_IMPL_FOR_LOOP
} mp_optimizer_impl;
/* Training precision, as PyTorch Lightning names and runs it
 * (docs/training.md, "Precision"): FP32 "32-true" (everything fp32);
 * BF16_MIXED "bf16-mixed" and FP16_MIXED "16-mixed" (torch.autocast: fp32
 * weights, gradients and optimizer states; the ops on autocast's
 * lower-precision list read bf16/fp16 copies of their float32 inputs and
 * write bf16/fp16, the weights' copies cached through forward; the fp32
 * list in fp32; 16-mixed adds loss scaling, scalars only); BF16_TRUE
 * "bf16-true" (weights, activations, gradients and optimizer states in
 * bf16). No precision keeps an fp32 master copy of the weights. */
typedef enum mp_precision {
    MP_PRECISION_FP32 = 0,
    MP_PRECISION_BF16_MIXED,
    MP_PRECISION_FP16_MIXED,
    MP_PRECISION_BF16_TRUE
} mp_precision;
/* The name of an optimizer: "sgd", "momentum", "adam", "adamw",
 * "adam8bit". */
MP_API const char *mp_optimizer_name(mp_optimizer o);
/* Parses an optimizer name as mp_optimizer_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_optimizer_parse("adamw", &to.optimizer); */
MP_API mp_status mp_optimizer_parse(const char *name, mp_optimizer *out);
/* The name of an optimizer implementation: "foreach", "fused",
 * "for-loop". */
MP_API const char *mp_optimizer_impl_name(mp_optimizer_impl i);
/* Parses an optimizer implementation name as mp_optimizer_impl_name
 * writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_optimizer_impl_parse("fused", &to.optimizer_impl); */
MP_API mp_status mp_optimizer_impl_parse(const char *name,
                                         mp_optimizer_impl *out);
/* The name of a training precision: "32-true", "bf16-mixed", "16-mixed",
 * "bf16-true". */
MP_API const char *mp_precision_name(mp_precision p);
/* Parses a precision name as mp_precision_name writes it; "fp32" and
 * "fp16-mixed" (earlier names) are read as "32-true" and "16-mixed".
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_precision_parse(const char *name, mp_precision *out);

typedef struct mp_train_options {
    mp_optimizer optimizer;   /* default ADAM */
    mp_precision precision;   /* default FP32 */
    /* 1 runs each parameter's optimizer step right after its gradient is
     * complete (the backward node of its first forward reader), so the
     * gradient is freed there, as PyTorch's optimizer step in backward
     * does; 0 (default): every step after the backward pass, as
     * optimizer.step(). */
    int step_in_backward;
    /* 1 computes the trainable tensors' gradients of a backward node by a
     * node of their own (NAME/grad_w, after NAME/grad which writes the
     * input gradients), as frameworks run the data and the weight
     * gradient as two kernels: an input gradient then need not live as
     * long as the weight gradient written beside it. 0 (default): one
     * node writes both. */
    int split_weight_grad;
    /* 1 trains every float weight; 0 (default): weights no framework
     * trains stay frozen: those of one element (the constants exporters
     * write as initializers: GELU's 0.5, a Pow exponent, an attention
     * scale) and those only BatchNormalization reads as its running
     * mean or variance (buffers its training form updates) */
    int train_all_weights;
    /* default FOREACH, PyTorch's default; with step_in_backward each step
     * is on its own, so FOREACH holds a temporary of one parameter's size,
     * as FOR_LOOP does */
    mp_optimizer_impl optimizer_impl;
    /* default MP_ATTENTION_NAIVE (the ops as exported; the memplan
     * command's default is fused). FUSED: the forward graph's attention chains
     * are fused first (mp_graph_fuse_attention, on a copy), and each fused
     * node's backward saves Q, K, V, the mask, its output and the fp32
     * log-sum-exp per query row, as PyTorch's scaled_dot_product_attention
     * (docs/attention.md); NAIVE differentiates the ops as exported */
    mp_attention_mode attention;
    /* the device whose cost model times the training graph's nodes
     * (mp_node_estimate; their seconds, which the recompute solvers and
     * validate read); NULL (default): the builtin h200. Read during the
     * call only. */
    const mp_device *device;
} mp_train_options;
/* Fills training options with their defaults (the comments above). NULL
 * is a no-op. */
MP_API void mp_train_options_init(mp_train_options *o);

/* What a training step holds, from the synthesized graph. */
typedef struct mp_train_breakdown {
    uint64_t n_params;            /* trainable parameters (elements) */
    uint64_t weight_bytes;        /* trainable weights as stored */
    uint64_t master_weight_bytes; /* fp32 master copies: 0 (no precision
                                     keeps one; kept for compatibility) */
    uint64_t gradient_bytes;      /* parameter gradients */
    uint64_t optimizer_bytes;     /* optimizer states (master excluded) */
    uint64_t saved_bytes;         /* forward tensors (inputs included) that
                                     backward nodes read */
    uint64_t temporary_bytes;     /* the largest optimizer temporary */
    uint64_t frozen_bytes;        /* other persistent tensors (constants) */
    uint32_t n_forward, n_backward, n_optimizer;  /* nodes */
    uint64_t cast_weight_bytes;   /* autocast's bf16/fp16 copies of the
                                     weights (bf16-mixed, 16-mixed), held
                                     in the arena through forward */
    uint32_t n_attention_fused;   /* attention chains fused */
    uint64_t attention_bytes;     /* forward bytes the fused chains
                                     removed (scores and the like) */
} mp_train_breakdown;

/* Builds the training graph of a finalized forward graph: a loss over the
 * forward outputs, one backward node per differentiable forward node (its
 * saved tensors from the registry's backward rule), Sum nodes where a
 * tensor's gradient has several contributions, and one optimizer node per
 * trainable weight (states persistent). The result comes back finalized.
 * bd may be NULL.
 * Errors: MP_ERR_GRAPH (a forward graph that cannot be differentiated),
 * MP_ERR_INVALID_ARG (NULL, a bad option), MP_ERR_NOMEM. */
MP_API mp_status mp_train_graph(const mp_graph *fwd,
                                const mp_train_options *opt, mp_graph **out,
                                mp_train_breakdown *bd);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_TRAIN_H */
