/* core/ops/ops.h - the op registry: one entry per op type (core/ir.h
 * gives the entry's format), found by name and domain. Every op-specific
 * behaviour is read from the entry. Internal, not installed. */
#ifndef MP__OPS_H
#define MP__OPS_H

#include "ir.h"

/* The registry entry of an op type; the generic entry when unknown. */
const mp__op_def *mp__op_lookup(const char *op, const char *domain);
const mp__op_def *mp__op_generic(void);
/* 1 when the table is sorted by (domain, name), as lookup needs (tests). */
int mp__op_registry_sorted(void);

/* Backward rules (MP__BWD_*, core/ir.h): what the gradient of input
 * position pos needs saved, as MP__BWDN_* bits; 0 for an unknown rule. */
unsigned mp__bwd_needs(unsigned rule, uint32_t pos);
/* True when the rule's backward node costs two forward passes (the two
 * products of a matrix product or convolution; rules that began as the
 * default "every input"), one otherwise. */
bool mp__bwd_two_products(unsigned rule);
/* The rule's extra saved output (MP__BWDX_*) and, for statistics, how
 * many fp32 vectors (mean and inverse std: 2; inverse rms: 1). */
unsigned mp__bwd_extra(unsigned rule, unsigned *n_stats);
/* The rule's name as docs/training.md spells it ("INPUTS", "OTHER", ...). */
const char *mp__bwd_name(unsigned rule);

/* Fused attention (core/ops/attention.c): a finalized copy of g with its
 * attention chains fused (mp_graph_fuse_attention), or *out NULL when g
 * has none; g is not changed. */
mp_status mp__attention_fused_copy(const mp_graph *g, mp_graph **out,
                                   uint32_t *n_fused, uint64_t *scores_bytes);

#endif /* MP__OPS_H */
