/* Shape inference helpers and the shape functions of the op registry.
 * The registry table itself is in core/ops/registry.c (the only table); the
 * shape functions live in core/ops/ops_*.c and are declared here. */
#ifndef MP__SHAPE_H
#define MP__SHAPE_H

#include "ir.h"

/* A shape being computed: rank -1 = unknown; dims -1 = unknown. */
typedef struct mp__shape {
    int32_t rank;
    int64_t d[MP_MAX_RANK];
} mp__shape;

/* ---- node access -------------------------------------------------------- */
/* Input i of the node, NULL when absent or omitted. */
const mp__tensor *mp__in(const mp_graph *g, const mp__node *n, uint32_t i);
/* Input i's shape into s (rank -1 when unknown or absent). */
void mp__in_shape(const mp_graph *g, const mp__node *n, uint32_t i,
                 mp__shape *s);
/* Input i's int64 value: true with *v, *cnt when known. */
bool mp__in_value(const mp_graph *g, const mp__node *n, uint32_t i,
                 const int64_t **v, uint32_t *cnt);
int64_t mp__attr_int(const mp__node *n, const char *name, int64_t dflt);
/* A dim computed in floating point: false when x is NaN, negative or
 * 2^62 or more (then *out is unchanged). */
bool mp__dim_from_double(double x, int64_t *out);
double mp__attr_float(const mp__node *n, const char *name, double dflt);
/* INTS attribute: pointer and count, or NULL (count 0). */
const int64_t *mp__attr_ints(const mp__node *n, const char *name,
                            uint32_t *cnt);
const char *mp__attr_str(const mp__node *n, const char *name, const char *dflt);

/* Sets output o: dtype (UNDEFINED keeps it) and shape s (NULL or rank -1
 * leaves it). Declared dims win; unknown ones are filled in. Bytes follow
 * once the shape is complete. */
mp_status mp__out_set(mp_graph *g, uint32_t node, uint32_t o, int dtype,
                     const mp__shape *s);
/* Stores the value of output o (an int64 constant). */
mp_status mp__out_value(mp_graph *g, uint32_t node, uint32_t o,
                       const int64_t *v, uint32_t n);
/* MP_ERR_SHAPE naming node, op and domain. */
mp_status mp__node_err(mp_graph *g, uint32_t node, const char *fmt, ...)
    MP__PRINTF(3, 4);
/* The same with another status (MP_ERR_OVERFLOW for a size that does not
 * fit in 64 bits). */
mp_status mp__node_fail(mp_graph *g, uint32_t node, mp_status st,
                       const char *fmt, ...) MP__PRINTF(4, 5);

/* ---- checks of attributes and input values (the ONNX operator spec) ------
 * Each returns MP_OK, or MP_ERR_SHAPE naming the node, its op, `what`
 * ("attribute 'pads'", "input 'axes'"), the entry and its value:
 *   node 'c' (op Conv): attribute 'pads'[2] = -1: must be >= 0 */
/* An axis in [-rank, rank): *out gets it in [0, rank). */
mp_status mp__check_axis(mp_graph *g, uint32_t node, const char *what,
                        int64_t axis, int32_t rank, int32_t *out);
/* A list of axes: each in [-rank, rank), none named twice; mask (NULL or
 * MP_MAX_RANK entries, cleared here) gets the axes named. */
mp_status mp__check_axes(mp_graph *g, uint32_t node, const char *what,
                        const int64_t *axes, uint32_t cnt, int32_t rank,
                        bool *mask);
/* Every entry >= min. */
mp_status mp__check_min(mp_graph *g, uint32_t node, const char *what,
                       const int64_t *v, uint32_t cnt, int64_t min);
/* A list of cnt entries where `want` are expected (`per` says why: "one
 * per spatial dim"). */
mp_status mp__check_count(mp_graph *g, uint32_t node, const char *what,
                         uint32_t cnt, uint32_t want, const char *per);
/* A permutation of 0..rank-1. */
mp_status mp__check_perm(mp_graph *g, uint32_t node, const char *what,
                        const int64_t *perm, uint32_t cnt, int32_t rank);
/* Int attribute `name`, when present, is a data type memplan knows
 * (`0`, undefined, too when zero_ok). */
mp_status mp__check_dtype(mp_graph *g, uint32_t node, const char *name,
                         bool zero_ok);
/* String attribute `name` (default dflt) is one of `allowed` (NULL-ended);
 * *out gets it. */
mp_status mp__check_enum(mp_graph *g, uint32_t node, const char *name,
                        const char *dflt, const char *const *allowed,
                        const char **out);

/* Final check of every shape function: all outputs have known sizes, else
 * one error naming the node, op, domain and the output. */
mp_status mp__shape_done(mp_graph *g, uint32_t node);

/* ---- shape arithmetic --------------------------------------------------- */
/* Multidirectional (numpy) broadcasting; false when incompatible. Unknown
 * dims (-1) broadcast to unknown unless the other side is > 1. */
bool mp__broadcast(const mp__shape *a, const mp__shape *b, mp__shape *out);
/* Normalises an axis in [-rank, rank) to [0, rank); false when outside. */
bool mp__axis(int64_t axis, int32_t rank, int32_t *out);
/* Element count (-1 when unknown or overflowing). */
int64_t mp__shape_numel(const mp__shape *s);
/* The first index a Slice node takes on each axis of its input, in
 * firsts (input rank entries): false when a value is not known or a step
 * is not 1 (finalize's range views, core/ops/finalize.c). */
bool mp__slice_firsts(const mp_graph *g, uint32_t node, int64_t *firsts);

/* The shape the fused ScaledDotProductAttention node n adds its mask at
 * (the scores', or its attribute mask_dims resolved): 1 with *out, 0 when
 * Q's or K^T's shape is unknown, -1 when mask_dims does not fit the
 * scores (*why says how). core/ops/ops_math.c. */
int mp__sdpa_mask_shape(const mp_graph *g, const mp__node *n, mp__shape *out,
                        const char **why);

/* ---- shape functions (core/ops/ops_*.c) ---------------------------------- */
#define MP__SHAPE_FN(name) mp_status name(mp_graph *g, uint32_t node)
MP__SHAPE_FN(mp__shape_generic);
MP__SHAPE_FN(mp__shape_same);           /* unary pointwise: out = in0 */
MP__SHAPE_FN(mp__shape_view);           /* Identity-like view */
MP__SHAPE_FN(mp__shape_broadcast);      /* Add, Mul, ... (numeric result) */
MP__SHAPE_FN(mp__shape_prelu);          /* PRelu (legacy channel slope) */
MP__SHAPE_FN(mp__shape_gradient);       /* Gradient: out i = in i (xs) */
MP__SHAPE_FN(mp__shape_compare);        /* Equal, Less, ... (bool result) */
MP__SHAPE_FN(mp__shape_logical);        /* And, Or, Xor, Not (bool) */
MP__SHAPE_FN(mp__shape_where);
MP__SHAPE_FN(mp__shape_variadic);       /* Sum, Mean, Max, Min */
MP__SHAPE_FN(mp__shape_cast);
MP__SHAPE_FN(mp__shape_cast_like);
MP__SHAPE_FN(mp__shape_shape);
MP__SHAPE_FN(mp__shape_size);
MP__SHAPE_FN(mp__shape_constant);
MP__SHAPE_FN(mp__shape_constant_of_shape);
MP__SHAPE_FN(mp__shape_reshape);
MP__SHAPE_FN(mp__shape_flatten);
MP__SHAPE_FN(mp__shape_squeeze);
MP__SHAPE_FN(mp__shape_unsqueeze);
MP__SHAPE_FN(mp__shape_transpose);
MP__SHAPE_FN(mp__shape_concat);
MP__SHAPE_FN(mp__shape_split);
MP__SHAPE_FN(mp__shape_slice);
MP__SHAPE_FN(mp__shape_gather);
MP__SHAPE_FN(mp__shape_gather_elements);
MP__SHAPE_FN(mp__shape_expand);
MP__SHAPE_FN(mp__shape_tile);
MP__SHAPE_FN(mp__shape_range);
MP__SHAPE_FN(mp__shape_pad);
MP__SHAPE_FN(mp__shape_reduce);
MP__SHAPE_FN(mp__shape_argreduce);
MP__SHAPE_FN(mp__shape_matmul);
MP__SHAPE_FN(mp__shape_gemm);
MP__SHAPE_FN(mp__shape_conv);
MP__SHAPE_FN(mp__shape_conv_transpose);
MP__SHAPE_FN(mp__shape_pool);
MP__SHAPE_FN(mp__shape_global_pool);
MP__SHAPE_FN(mp__shape_norm);           /* BatchNorm, LayerNorm, ... */
MP__SHAPE_FN(mp__shape_softmax);        /* + Hardmax, LpNormalization */
MP__SHAPE_FN(mp__shape_cumsum);         /* CumSum, CumProd */
MP__SHAPE_FN(mp__shape_reverse_sequence);
MP__SHAPE_FN(mp__shape_mvn);            /* MeanVarianceNormalization */
MP__SHAPE_FN(mp__shape_scatter);        /* Scatter, ScatterElements, ScatterND */
MP__SHAPE_FN(mp__shape_resize);
MP__SHAPE_FN(mp__shape_topk);
MP__SHAPE_FN(mp__shape_depth_to_space);
MP__SHAPE_FN(mp__shape_space_to_depth);
MP__SHAPE_FN(mp__shape_trilu);
MP__SHAPE_FN(mp__shape_quantize);       /* QuantizeLinear */
MP__SHAPE_FN(mp__shape_dequantize);     /* DequantizeLinear */
MP__SHAPE_FN(mp__shape_lrn);
MP__SHAPE_FN(mp__shape_rnn);            /* LSTM, GRU, RNN */
MP__SHAPE_FN(mp__shape_dropout);
MP__SHAPE_FN(mp__shape_loss);
MP__SHAPE_FN(mp__shape_attention);
MP__SHAPE_FN(mp__shape_sdpa);

/* core/ops/ops_more.c */
MP__SHAPE_FN(mp__shape_like);
MP__SHAPE_FN(mp__shape_bitcast);
MP__SHAPE_FN(mp__shape_det);
MP__SHAPE_FN(mp__shape_dynamic_quantize);
MP__SHAPE_FN(mp__shape_optimizer);
MP__SHAPE_FN(mp__shape_flex_attention);
MP__SHAPE_FN(mp__shape_linear_attention);
MP__SHAPE_FN(mp__shape_causal_conv_state);
MP__SHAPE_FN(mp__shape_tfidf);
MP__SHAPE_FN(mp__shape_grid_sample);
MP__SHAPE_FN(mp__shape_roi_align);
MP__SHAPE_FN(mp__shape_gather_nd);
MP__SHAPE_FN(mp__shape_one_hot);
MP__SHAPE_FN(mp__shape_einsum);
MP__SHAPE_FN(mp__shape_dft);
MP__SHAPE_FN(mp__shape_stft);
MP__SHAPE_FN(mp__shape_window);
MP__SHAPE_FN(mp__shape_mel_weight);
MP__SHAPE_FN(mp__shape_max_unpool);
MP__SHAPE_FN(mp__shape_compress);
MP__SHAPE_FN(mp__shape_nonzero);
MP__SHAPE_FN(mp__shape_center_crop_pad);
MP__SHAPE_FN(mp__shape_col2im);
MP__SHAPE_FN(mp__shape_affine_grid);
MP__SHAPE_FN(mp__shape_data_dependent);
MP__SHAPE_FN(mp__shape_unique);
MP__SHAPE_FN(mp__shape_regex_match);

/* core/ops/ops_values.c: sizes from input values */
MP__SHAPE_FN(mp__shape_string_normalizer);
MP__SHAPE_FN(mp__shape_string_split);
MP__SHAPE_FN(mp__shape_nms);            /* NonMaxSuppression */
MP__SHAPE_FN(mp__shape_image_decoder);
MP__SHAPE_FN(mp__shape_label_encoder);
MP__SHAPE_FN(mp__shape_tree_ensemble);
MP__SHAPE_FN(mp__shape_array_feature);
/* ---- sequences and optionals (core/ops/ops_seq.c) ------------------------ */
/* An ONNX sequence<tensor> or optional<tensor | sequence<tensor>> value,
 * as far as it is known. A sequence of n >= 0 elements lists each
 * element's shape; n = -1 (length unknown) keeps one entry, the shape
 * every element has as far as known. An optional keeps its tensor's shape
 * (OPTIONAL: n = 1) or its sequence's elements (OPTIONAL_SEQUENCE), and
 * whether it holds a value. For planning a sequence's bytes are the sum of
 * its elements' (an optional with no value: 0; one that may or may not
 * hold a value: its value's). */
enum { MP__SEQ_SEQUENCE = 1, MP__SEQ_OPTIONAL, MP__SEQ_OPTIONAL_SEQUENCE };
typedef struct mp__seq {
    uint8_t type;      /* MP__SEQ_* */
    uint8_t dtype;     /* element type (MP_DTYPE_UNDEFINED unknown) */
    int8_t present;    /* optionals: 1 holds a value, 0 none, -1 unknown */
    int32_t n;         /* element count, -1 unknown */
    uint32_t n_elems;  /* entries of elems: n, or 1 when n is -1 */
    mp__shape elems[];
} mp__seq;
/* A new value with n elements of unknown shape (n -1: one prototype). */
mp__seq *mp__seq_new(mp_ctx *ctx, int type, int dtype, int32_t n);
mp__seq *mp__seq_copy(mp_ctx *ctx, const mp__seq *s);
/* Gives t the value s (ownership passes, also on failure): its dtype,
 * no tensor shape, and its bytes once every element's size is known. */
mp_status mp__tensor_take_seq(mp_ctx *ctx, mp__tensor *t, mp__seq *s);
/* Output o of the node takes s (ownership passes). */
mp_status mp__out_seq(mp_graph *g, uint32_t node, uint32_t o, mp__seq *s);
MP__SHAPE_FN(mp__shape_seq_empty);
MP__SHAPE_FN(mp__shape_seq_construct);
MP__SHAPE_FN(mp__shape_seq_insert);
MP__SHAPE_FN(mp__shape_seq_at);
MP__SHAPE_FN(mp__shape_seq_erase);
MP__SHAPE_FN(mp__shape_seq_length);
MP__SHAPE_FN(mp__shape_split_to_seq);
MP__SHAPE_FN(mp__shape_concat_from_seq);
MP__SHAPE_FN(mp__shape_optional);
MP__SHAPE_FN(mp__shape_optional_has);
MP__SHAPE_FN(mp__shape_optional_get);
MP__SHAPE_FN(mp__shape_seq_map);

/* core/ops/ops_control.c */
MP__SHAPE_FN(mp__shape_if);
MP__SHAPE_FN(mp__shape_loop);
MP__SHAPE_FN(mp__shape_scan);

#endif /* MP__SHAPE_H */
