/* Shape inference helpers and the shape functions of the op registry.
 * The registry table itself is in core/ops/registry.c (the only table); the
 * shape functions live in core/ops/ops_*.c and are declared here. */
#ifndef MP_SHAPE_H
#define MP_SHAPE_H

#include "internal.h"

/* Largest integer constant whose value is carried for shape arithmetic. */
#define MP_VALUE_MAX 16384u

/* A shape being computed: rank -1 = unknown; dims -1 = unknown. */
typedef struct mp_shape {
    int32_t rank;
    int64_t d[MP_MAX_RANK];
} mp_shape;

/* ---- tensors ------------------------------------------------------------ */
/* Replaces t's shape (keeps its value). rank -1: unknown. */
mp_status mp_tensor_set_shape(mp_ctx *ctx, mp_tensor *t, int32_t rank,
                              const int64_t *dims);
/* Stores a copy of n int64 values on t (n <= MP_VALUE_MAX; larger is
 * silently not stored). */
mp_status mp_tensor_set_value(mp_ctx *ctx, mp_tensor *t, const int64_t *v,
                              uint32_t n);
/* Integer or bool dtypes (values carried as int64). */
bool mp_dtype_is_int(int dtype);
/* float32/64, float16, bfloat16: values carried as the bits of doubles. */
bool mp_dtype_is_float(int dtype);
/* Element i of t's value as a double (t->value set, int or float dtype). */
double mp_value_double(const mp_tensor *t, uint32_t i);
/* x stored as a value of dtype dt (float: double bits, rounded to float32
 * for float32; int: truncated; false when out of the int64 range). */
bool mp_value_from_double(int dtype, double x, int64_t *out);
/* True when every dim is known (rank >= 0). */
bool mp_tensor_shape_known(const mp_tensor *t);

/* ---- node access -------------------------------------------------------- */
/* Input i of the node, NULL when absent or omitted. */
const mp_tensor *mp_in(const mp_graph *g, const mp_node *n, uint32_t i);
/* Input i's shape into s (rank -1 when unknown or absent). */
void mp_in_shape(const mp_graph *g, const mp_node *n, uint32_t i,
                 mp_shape *s);
/* Input i's int64 value: true with *v, *cnt when known. */
bool mp_in_value(const mp_graph *g, const mp_node *n, uint32_t i,
                 const int64_t **v, uint32_t *cnt);
int64_t mp_attr_int(const mp_node *n, const char *name, int64_t dflt);
/* A dim computed in floating point: false when x is NaN, negative or
 * 2^62 or more (then *out is unchanged). */
bool mp_dim_from_double(double x, int64_t *out);
double mp_attr_float(const mp_node *n, const char *name, double dflt);
/* INTS attribute: pointer and count, or NULL (count 0). */
const int64_t *mp_attr_ints(const mp_node *n, const char *name,
                            uint32_t *cnt);
const char *mp_attr_str(const mp_node *n, const char *name, const char *dflt);

/* Sets output o: dtype (UNDEFINED keeps it) and shape s (NULL or rank -1
 * leaves it). Declared dims win; unknown ones are filled in. Bytes follow
 * once the shape is complete. */
mp_status mp_out_set(mp_graph *g, uint32_t node, uint32_t o, int dtype,
                     const mp_shape *s);
/* Stores the value of output o (an int64 constant). */
mp_status mp_out_value(mp_graph *g, uint32_t node, uint32_t o,
                       const int64_t *v, uint32_t n);
/* MP_ERR_SHAPE naming node, op and domain. */
mp_status mp_node_err(mp_graph *g, uint32_t node, const char *fmt, ...)
    MP_PRINTF(3, 4);
/* Final check of every shape function: all outputs have known sizes, else
 * one error naming the node, op, domain and the output. */
mp_status mp_shape_done(mp_graph *g, uint32_t node);

/* ---- shape arithmetic --------------------------------------------------- */
/* Multidirectional (numpy) broadcasting; false when incompatible. Unknown
 * dims (-1) broadcast to unknown unless the other side is > 1. */
bool mp_broadcast(const mp_shape *a, const mp_shape *b, mp_shape *out);
/* Normalises an axis in [-rank, rank) to [0, rank); false when outside. */
bool mp_axis(int64_t axis, int32_t rank, int32_t *out);
/* Element count (-1 when unknown or overflowing). */
int64_t mp_shape_numel(const mp_shape *s);

/* ---- shape functions (core/ops/ops_*.c) ---------------------------------- */
#define MP_SHAPE_FN(name) mp_status name(mp_graph *g, uint32_t node)
MP_SHAPE_FN(mp_shape_generic);
MP_SHAPE_FN(mp_shape_same);           /* unary pointwise: out = in0 */
MP_SHAPE_FN(mp_shape_view);           /* Identity-like view */
MP_SHAPE_FN(mp_shape_broadcast);      /* Add, Mul, ... (numeric result) */
MP_SHAPE_FN(mp_shape_prelu);          /* PRelu (legacy channel slope) */
MP_SHAPE_FN(mp_shape_gradient);       /* Gradient: out i = in i (xs) */
MP_SHAPE_FN(mp_shape_compare);        /* Equal, Less, ... (bool result) */
MP_SHAPE_FN(mp_shape_logical);        /* And, Or, Xor, Not (bool) */
MP_SHAPE_FN(mp_shape_where);
MP_SHAPE_FN(mp_shape_variadic);       /* Sum, Mean, Max, Min */
MP_SHAPE_FN(mp_shape_cast);
MP_SHAPE_FN(mp_shape_cast_like);
MP_SHAPE_FN(mp_shape_shape);
MP_SHAPE_FN(mp_shape_size);
MP_SHAPE_FN(mp_shape_constant);
MP_SHAPE_FN(mp_shape_constant_of_shape);
MP_SHAPE_FN(mp_shape_reshape);
MP_SHAPE_FN(mp_shape_flatten);
MP_SHAPE_FN(mp_shape_squeeze);
MP_SHAPE_FN(mp_shape_unsqueeze);
MP_SHAPE_FN(mp_shape_transpose);
MP_SHAPE_FN(mp_shape_concat);
MP_SHAPE_FN(mp_shape_split);
MP_SHAPE_FN(mp_shape_slice);
MP_SHAPE_FN(mp_shape_gather);
MP_SHAPE_FN(mp_shape_gather_elements);
MP_SHAPE_FN(mp_shape_expand);
MP_SHAPE_FN(mp_shape_tile);
MP_SHAPE_FN(mp_shape_range);
MP_SHAPE_FN(mp_shape_pad);
MP_SHAPE_FN(mp_shape_reduce);
MP_SHAPE_FN(mp_shape_argreduce);
MP_SHAPE_FN(mp_shape_matmul);
MP_SHAPE_FN(mp_shape_gemm);
MP_SHAPE_FN(mp_shape_conv);
MP_SHAPE_FN(mp_shape_conv_transpose);
MP_SHAPE_FN(mp_shape_pool);
MP_SHAPE_FN(mp_shape_global_pool);
MP_SHAPE_FN(mp_shape_norm);           /* BatchNorm, LayerNorm, ... */
MP_SHAPE_FN(mp_shape_softmax);
MP_SHAPE_FN(mp_shape_resize);
MP_SHAPE_FN(mp_shape_topk);
MP_SHAPE_FN(mp_shape_depth_to_space);
MP_SHAPE_FN(mp_shape_space_to_depth);
MP_SHAPE_FN(mp_shape_trilu);
MP_SHAPE_FN(mp_shape_quantize);       /* QuantizeLinear */
MP_SHAPE_FN(mp_shape_dequantize);     /* DequantizeLinear */
MP_SHAPE_FN(mp_shape_lrn);
MP_SHAPE_FN(mp_shape_rnn);            /* LSTM, GRU, RNN */
MP_SHAPE_FN(mp_shape_dropout);
MP_SHAPE_FN(mp_shape_loss);
MP_SHAPE_FN(mp_shape_attention);

/* core/ops/ops_more.c */
MP_SHAPE_FN(mp_shape_like);
MP_SHAPE_FN(mp_shape_bitcast);
MP_SHAPE_FN(mp_shape_det);
MP_SHAPE_FN(mp_shape_dynamic_quantize);
MP_SHAPE_FN(mp_shape_optimizer);
MP_SHAPE_FN(mp_shape_flex_attention);
MP_SHAPE_FN(mp_shape_linear_attention);
MP_SHAPE_FN(mp_shape_causal_conv_state);
MP_SHAPE_FN(mp_shape_tfidf);
MP_SHAPE_FN(mp_shape_grid_sample);
MP_SHAPE_FN(mp_shape_roi_align);
MP_SHAPE_FN(mp_shape_gather_nd);
MP_SHAPE_FN(mp_shape_one_hot);
MP_SHAPE_FN(mp_shape_einsum);
MP_SHAPE_FN(mp_shape_dft);
MP_SHAPE_FN(mp_shape_stft);
MP_SHAPE_FN(mp_shape_window);
MP_SHAPE_FN(mp_shape_mel_weight);
MP_SHAPE_FN(mp_shape_max_unpool);
MP_SHAPE_FN(mp_shape_compress);
MP_SHAPE_FN(mp_shape_nonzero);
MP_SHAPE_FN(mp_shape_center_crop_pad);
MP_SHAPE_FN(mp_shape_col2im);
MP_SHAPE_FN(mp_shape_affine_grid);
MP_SHAPE_FN(mp_shape_data_dependent);
MP_SHAPE_FN(mp_shape_unique);
MP_SHAPE_FN(mp_shape_regex_match);

/* core/ops/ops_values.c: sizes from input values (issue 3, helper values) */
MP_SHAPE_FN(mp_shape_string_normalizer);
MP_SHAPE_FN(mp_shape_string_split);
MP_SHAPE_FN(mp_shape_nms);            /* NonMaxSuppression */
MP_SHAPE_FN(mp_shape_image_decoder);
MP_SHAPE_FN(mp_shape_label_encoder);
MP_SHAPE_FN(mp_shape_tree_ensemble);
MP_SHAPE_FN(mp_shape_array_feature);
/* ---- sequences and optionals (core/ops/ops_seq.c) ------------------------ */
/* An ONNX sequence<tensor> or optional<tensor | sequence<tensor>> value,
 * as far as it is known. A sequence of n >= 0 elements lists each
 * element's shape; n = -1 (length unknown) keeps one entry, the shape
 * every element has as far as known. An optional keeps its tensor's shape
 * (OPTIONAL: n = 1) or its sequence's elements (OPTIONAL_SEQUENCE), and
 * whether it holds a value. For planning a sequence's bytes are the sum of
 * its elements' (an optional with no value: 0; one that may or may not
 * hold a value: its value's). */
enum { MP_SEQ_SEQUENCE = 1, MP_SEQ_OPTIONAL, MP_SEQ_OPTIONAL_SEQUENCE };
typedef struct mp_seq {
    uint8_t type;      /* MP_SEQ_* */
    uint8_t dtype;     /* element type (MP_DTYPE_UNDEFINED unknown) */
    int8_t present;    /* optionals: 1 holds a value, 0 none, -1 unknown */
    int32_t n;         /* element count, -1 unknown */
    uint32_t n_elems;  /* entries of elems: n, or 1 when n is -1 */
    mp_shape elems[];
} mp_seq;
/* A new value with n elements of unknown shape (n -1: one prototype). */
mp_seq *mp_seq_new(mp_ctx *ctx, int type, int dtype, int32_t n);
mp_seq *mp_seq_copy(mp_ctx *ctx, const mp_seq *s);
/* Gives t the value s (ownership passes, also on failure): its dtype,
 * no tensor shape, and its bytes once every element's size is known. */
mp_status mp_tensor_take_seq(mp_ctx *ctx, mp_tensor *t, mp_seq *s);
/* Output o of the node takes s (ownership passes). */
mp_status mp_out_seq(mp_graph *g, uint32_t node, uint32_t o, mp_seq *s);
MP_SHAPE_FN(mp_shape_seq_empty);
MP_SHAPE_FN(mp_shape_seq_construct);
MP_SHAPE_FN(mp_shape_seq_insert);
MP_SHAPE_FN(mp_shape_seq_at);
MP_SHAPE_FN(mp_shape_seq_erase);
MP_SHAPE_FN(mp_shape_seq_length);
MP_SHAPE_FN(mp_shape_split_to_seq);
MP_SHAPE_FN(mp_shape_concat_from_seq);
MP_SHAPE_FN(mp_shape_optional);
MP_SHAPE_FN(mp_shape_optional_has);
MP_SHAPE_FN(mp_shape_optional_get);
MP_SHAPE_FN(mp_shape_seq_map);

/* core/ops/ops_control.c */
MP_SHAPE_FN(mp_shape_if);
MP_SHAPE_FN(mp_shape_loop);
MP_SHAPE_FN(mp_shape_scan);

#endif /* MP_SHAPE_H */
