/* Re-batching of batch-carrying shape constants: a model exported at a
 * fixed batch B0 and loaded with mp_onnx_options.batch = N != B0 (CLI
 * --batch N). The loader sets the leading dim of every graph input to N
 * and g->rebatch_from/to; the shape functions of the ops whose operand is
 * a shape that may hold the batch (Reshape's target, Resize's sizes) pass
 * the operand through mp__rebatch_operand. The rules: docs/onnx.md,
 * "Re-batching". */
#ifndef MP__REBATCH_H
#define MP__REBATCH_H

#include "shape.h"

typedef enum mp__rebatch_kind {
    /* a Reshape target: 0 copies the input's dim, one -1 is inferred, the
     * element count must hold the input's */
    MP__REBATCH_RESHAPE = 0,
    /* an output shape aligned with input 0 (Resize sizes over every axis):
     * element 0 is the output's batch */
    MP__REBATCH_DIMS,
    /* an Expand shape: broadcast against input 0 (right-aligned); element
     * 0 is the output's batch when input 0 has no such axis, a 1 there,
     * or the batch itself */
    MP__REBATCH_EXPAND
} mp__rebatch_kind;

/* Operand `input` of `node` (MP_NONE: the node's attribute), *v with c
 * elements, against data input 0 of shape *data. When g is re-batched
 * (B0 -> N), the operand is a constant (a weight, Constant or value folded
 * from them; an attribute), input 0 is not, and input 0's leading dim is
 * N, a batch-carrying operand is re-batched into buf (MP_MAX_RANK
 * entries) and *v points there:
 * - MP__REBATCH_DIMS: a first element B0 becomes N;
 * - MP__REBATCH_EXPAND (any input 0, a weight included: a class token
 *   expanded to the batch): a first element B0 becomes N when input 0 has
 *   no axis there, a 1, or N (a buffer [1, T] expanded to [B0, T]); at
 *   B0 = 1, a 1 (or no axis) expanded to a 1 only when the output meets
 *   a tensor computed from a graph input (rebatch.c, meets_batch);
 * - MP__REBATCH_RESHAPE: a target that already holds the input's elements
 *   is kept; else a first element B0 becomes N (also with a -1 elsewhere:
 *   [B0, -1] -> [N, -1]); else, with no -1, a first element k*B0 (the
 *   batch folded into dim 0) becomes k*N; the result must hold the input's
 *   elements, or MP_ERR_SHAPE names the node, the constant and both
 *   counts. When input 0's leading dim is not N (the batch folded with
 *   the sequence, [N*T, C] into [B0, T, C]), a first element B0 becomes N
 *   only if that makes the target hold the input's elements and the
 *   target as written does not. Anything else is left as written.
 * Each rewrite is recorded on g (mp__graph_note_rebatch: kind, node, the
 * operand, its value as written and as used). */
mp_status mp__rebatch_operand(mp_graph *g, uint32_t node, uint32_t input,
                             mp__rebatch_kind kind, const mp__shape *data,
                             const int64_t **v, uint32_t c, int64_t *buf);

#endif /* MP__REBATCH_H */
