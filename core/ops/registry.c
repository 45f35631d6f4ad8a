/* The op registry: one entry per op type, the only table. Everything
 * op-specific (shape and size inference, memory behaviour; later cost,
 * backward rule and executor kernel) is found from the entry; nothing else
 * switches on op names. The shape functions live in core/ops/ops_*.c
 * (declared in core/ops/shape.h). Unknown ops get the generic entry, which
 * needs the outputs' shapes declared (ONNX value_info). */
#include "shape.h"

#include <stdlib.h>
#include <string.h>

#define VIEW MP_OPF_VIEW
#define EW (MP_OPF_ELEMENTWISE | MP_OPF_INPLACE)
/* binary/variadic pointwise: output 0 may overwrite any same-size input */
#define BIN (MP_OPF_INPLACE | MP_OPF_INPLACE_ANY)

/* executor kernel of an entry (MP_OPF_KERNEL in internal.h) */
#define KX(k, op) MP_OPF_KERNEL(MP_KERNEL_##k, MP_KOP_##op)
#define KN(k) MP_OPF_KERNEL(MP_KERNEL_##k, 0)

/* Sorted by (domain, name) in strcmp order for bsearch; checked by a test. */
static const mp_op_def registry[] = {
    {"Abs", "", EW | KX(UNARY, ABS) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_broadcast},
    {"Acos", "", EW, mp_shape_same},
    {"Acosh", "", EW, mp_shape_same},
    {"Add", "", BIN | KX(BINARY, ADD) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_GRAD_PASS_ALL, mp_shape_broadcast},
    {"AffineGrid", "", 0, mp_shape_affine_grid},
    {"And", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"ArgMax", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_argreduce},
    {"ArgMin", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_argreduce},
    {"Asin", "", EW, mp_shape_same},
    {"Asinh", "", EW, mp_shape_same},
    {"Atan", "", EW, mp_shape_same},
    {"Atanh", "", EW, mp_shape_same},
    {"Attention", "", 0, mp_shape_attention},
    {"AveragePool", "", KX(POOL, POOL_AVG) | MP_OPF_BWD(MP_BWD_INPUT0) | MP_OPF_COST(MP_COST_POOL), mp_shape_pool},
    {"BatchNormalization", "", KN(BATCHNORM) | MP_OPF_BWD(MP_BWD_NORM_CHANNELS) | MP_OPF_COST(MP_COST_NORM), mp_shape_norm},
    {"Bernoulli", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_like},
    {"BitCast", "", 0, mp_shape_bitcast},
    {"BitShift", "", BIN | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_broadcast},
    {"BitwiseAnd", "", BIN | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_broadcast},
    {"BitwiseNot", "", EW | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_same},
    {"BitwiseOr", "", BIN | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_broadcast},
    {"BitwiseXor", "", BIN | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_broadcast},
    {"BlackmanWindow", "", 0, mp_shape_window},
    {"Cast", "", KN(CAST) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_cast},
    {"CastLike", "", 0 | MP_OPF_BWD(MP_BWD_NONE), mp_shape_cast_like},
    {"CausalConvWithState", "", 0, mp_shape_causal_conv_state},
    {"Ceil", "", EW | KX(UNARY, CEIL) | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_same},
    {"Celu", "", EW | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"CenterCropPad", "", 0, mp_shape_center_crop_pad},
    {"Clip", "", EW | KX(UNARY, CLIP) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Col2Im", "", 0, mp_shape_col2im},
    {"Compress", "", 0, mp_shape_compress},
    {"Concat", "", KN(CONCAT) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_concat},
    {"ConcatFromSequence", "", 0, mp_shape_concat_from_seq},
    {"Constant", "", MP_OPF_CONSTANT | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_constant},
    {"ConstantOfShape", "", MP_OPF_CONSTANT | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_constant_of_shape},
    {"Conv", "", KN(CONV) | MP_OPF_COST(MP_COST_CONV), mp_shape_conv},
    {"ConvInteger", "", MP_OPF_COST(MP_COST_CONV), mp_shape_conv},
    {"ConvTranspose", "", MP_OPF_COST(MP_COST_CONV_TRANSPOSE), mp_shape_conv_transpose},
    {"Cos", "", EW | KX(UNARY, COS) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Cosh", "", EW, mp_shape_same},
    {"CumProd", "", 0, mp_shape_same},
    {"CumSum", "", 0, mp_shape_same},
    {"DFT", "", 0, mp_shape_dft},
    {"DeformConv", "", 0, mp_shape_conv},
    {"DepthToSpace", "", 0, mp_shape_depth_to_space},
    {"DequantizeLinear", "", 0, mp_shape_dequantize},
    {"Det", "", 0, mp_shape_det},
    {"Div", "", BIN | KX(BINARY, DIV), mp_shape_broadcast},
    {"Dropout", "", MP_OPF_INPLACE | KN(COPY) | MP_OPF_BWD(MP_BWD_MASK), mp_shape_dropout},
    {"DynamicQuantizeLinear", "", 0, mp_shape_dynamic_quantize},
    {"Einsum", "", 0, mp_shape_einsum},
    {"Elu", "", EW | KX(UNARY, ELU) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"Equal", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_compare},
    {"Erf", "", EW | KX(UNARY, ERF) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Exp", "", EW | KX(UNARY, EXP) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"Expand", "", KN(EXPAND) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_expand},
    {"EyeLike", "", 0, mp_shape_like},
    {"Flatten", "", VIEW | KN(VIEW) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_flatten},
    {"Floor", "", EW | KX(UNARY, FLOOR) | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_same},
    {"GRU", "", 0, mp_shape_rnn},
    {"Gather", "", KN(GATHER) | MP_OPF_COST(MP_COST_MOVE), mp_shape_gather},
    {"GatherElements", "", 0, mp_shape_gather_elements},
    {"GatherND", "", 0, mp_shape_gather_nd},
    {"Gelu", "", EW | KX(UNARY, GELU) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Gemm", "", KN(GEMM) | MP_OPF_COST(MP_COST_GEMM), mp_shape_gemm},
    {"GlobalAveragePool", "", KX(GLOBAL_POOL, POOL_AVG) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_POOL), mp_shape_global_pool},
    {"GlobalLpPool", "", MP_OPF_COST(MP_COST_POOL), mp_shape_global_pool},
    {"GlobalMaxPool", "", KX(GLOBAL_POOL, POOL_MAX) | MP_OPF_COST(MP_COST_POOL), mp_shape_global_pool},
    {"Greater", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_compare},
    {"GreaterOrEqual", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_compare},
    {"GridSample", "", 0, mp_shape_grid_sample},
    {"GroupNormalization", "", 0 | MP_OPF_BWD(MP_BWD_NORM_CHANNELS) | MP_OPF_COST(MP_COST_NORM), mp_shape_norm},
    {"HammingWindow", "", 0, mp_shape_window},
    {"HannWindow", "", 0, mp_shape_window},
    {"HardSigmoid", "", EW | KX(UNARY, HARDSIGMOID) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"HardSwish", "", EW | KX(UNARY, HARDSWISH) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Hardmax", "", 0, mp_shape_same},
    {"Identity", "", VIEW | KN(VIEW) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_view},
    {"If", "", 0, mp_shape_if},
    {"ImageDecoder", "", 0, mp_shape_image_decoder},
    {"InstanceNormalization", "", 0 | MP_OPF_BWD(MP_BWD_NORM_CHANNELS) | MP_OPF_COST(MP_COST_NORM), mp_shape_norm},
    {"IsInf", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"IsNaN", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"LRN", "", KN(LRN), mp_shape_same},
    {"LSTM", "", 0, mp_shape_rnn},
    {"LayerNormalization", "", KN(LAYERNORM) | MP_OPF_BWD(MP_BWD_NORM_ROWS) | MP_OPF_COST(MP_COST_NORM), mp_shape_norm},
    {"LeakyRelu", "", EW | KX(UNARY, LEAKYRELU) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Less", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_compare},
    {"LessOrEqual", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_compare},
    {"LinearAttention", "", 0, mp_shape_linear_attention},
    {"Log", "", EW | KX(UNARY, LOG) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"LogSoftmax", "", KX(SOFTMAX, LOGSOFTMAX) | MP_OPF_BWD(MP_BWD_OUTPUT) | MP_OPF_COST(MP_COST_SOFTMAX), mp_shape_same},
    {"Loop", "", 0, mp_shape_loop},
    {"LpNormalization", "", 0, mp_shape_same},
    {"LpPool", "", MP_OPF_COST(MP_COST_POOL), mp_shape_pool},
    {"MatMul", "", MP_OPF_MATMUL | KN(MATMUL) | MP_OPF_COST(MP_COST_MATMUL), mp_shape_matmul},
    {"MatMulInteger", "", MP_OPF_COST(MP_COST_MATMUL), mp_shape_matmul},
    {"Max", "", BIN | KX(VARIADIC, MAX), mp_shape_variadic},
    {"MaxPool", "", KX(POOL, POOL_MAX) | MP_OPF_BWD(MP_BWD_INDICES) | MP_OPF_COST(MP_COST_POOL), mp_shape_pool},
    {"MaxUnpool", "", 0, mp_shape_max_unpool},
    {"Mean", "", BIN | KX(VARIADIC, MEAN) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_variadic},
    {"MeanVarianceNormalization", "", 0, mp_shape_same},
    {"MelWeightMatrix", "", 0, mp_shape_mel_weight},
    {"Min", "", BIN | KX(VARIADIC, MIN), mp_shape_variadic},
    {"Mish", "", EW | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Mod", "", BIN, mp_shape_broadcast},
    {"Mul", "", BIN | KX(BINARY, MUL), mp_shape_broadcast},
    {"Neg", "", EW | KX(UNARY, NEG) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_broadcast},
    {"NegativeLogLikelihoodLoss", "", 0, mp_shape_loss},
    {"NonMaxSuppression", "", 0, mp_shape_nms},
    {"NonZero", "", 0, mp_shape_nonzero},
    {"Not", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"OneHot", "", 0, mp_shape_one_hot},
    {"Optional", "", 0, mp_shape_optional},
    {"OptionalGetElement", "", 0, mp_shape_optional_get},
    {"OptionalHasElement", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_optional_has},
    {"Or", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"PRelu", "", MP_OPF_INPLACE | KX(BINARY, PRELU), mp_shape_prelu},
    {"Pad", "", KN(PAD) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_pad},
    {"Pow", "", BIN | KX(BINARY, POW), mp_shape_broadcast},
    {"QLinearConv", "", MP_OPF_COST(MP_COST_CONV), mp_shape_conv},
    {"QLinearMatMul", "", MP_OPF_COST(MP_COST_MATMUL), mp_shape_matmul},
    {"QuantizeLinear", "", 0, mp_shape_quantize},
    {"RMSNormalization", "", 0 | MP_OPF_BWD(MP_BWD_NORM_ROWS) | MP_OPF_COST(MP_COST_NORM), mp_shape_same},
    {"RNN", "", 0, mp_shape_rnn},
    {"RandomNormalLike", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_like},
    {"RandomUniformLike", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_like},
    {"Range", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_range},
    {"Reciprocal", "", EW | KX(UNARY, RECIPROCAL) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"ReduceL1", "", KX(REDUCE, REDUCE_L1), mp_shape_reduce},
    {"ReduceL2", "", KX(REDUCE, REDUCE_L2), mp_shape_reduce},
    {"ReduceLogSum", "", 0, mp_shape_reduce},
    {"ReduceLogSumExp", "", 0, mp_shape_reduce},
    {"ReduceMax", "", KX(REDUCE, REDUCE_MAX), mp_shape_reduce},
    {"ReduceMean", "", KX(REDUCE, REDUCE_MEAN) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_reduce},
    {"ReduceMin", "", KX(REDUCE, REDUCE_MIN), mp_shape_reduce},
    {"ReduceProd", "", KX(REDUCE, REDUCE_PROD), mp_shape_reduce},
    {"ReduceSum", "", KX(REDUCE, REDUCE_SUM) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_reduce},
    {"ReduceSumSquare", "", KX(REDUCE, REDUCE_SUMSQ), mp_shape_reduce},
    {"RegexFullMatch", "", 0, mp_shape_regex_match},
    {"Relu", "", EW | KX(UNARY, RELU) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"Reshape", "", VIEW | KN(VIEW) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_reshape},
    {"Resize", "", KN(RESIZE), mp_shape_resize},
    {"ReverseSequence", "", 0, mp_shape_same},
    {"RoiAlign", "", 0, mp_shape_roi_align},
    {"RotaryEmbedding", "", 0, mp_shape_same},
    {"Round", "", EW | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_same},
    {"STFT", "", 0, mp_shape_stft},
    {"Scan", "", 0, mp_shape_scan},
    {"Scatter", "", 0, mp_shape_same},
    {"ScatterElements", "", 0, mp_shape_same},
    {"ScatterND", "", 0, mp_shape_same},
    {"Selu", "", EW | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"SequenceAt", "", 0, mp_shape_seq_at},
    {"SequenceConstruct", "", 0, mp_shape_seq_construct},
    {"SequenceEmpty", "", 0, mp_shape_seq_empty},
    {"SequenceErase", "", 0, mp_shape_seq_erase},
    {"SequenceInsert", "", 0, mp_shape_seq_insert},
    {"SequenceLength", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_seq_length},
    {"SequenceMap", "", 0, mp_shape_seq_map},
    {"Shape", "", KN(SHAPE) | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_shape},
    {"Shrink", "", EW, mp_shape_same},
    {"Sigmoid", "", EW | KX(UNARY, SIGMOID) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"Sign", "", EW | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_same},
    {"Sin", "", EW | KX(UNARY, SIN) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Sinh", "", EW, mp_shape_same},
    {"Size", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_size},
    {"Slice", "", KN(SLICE) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_slice},
    {"Softmax", "", MP_OPF_SOFTMAX | KX(SOFTMAX, SOFTMAX) | MP_OPF_BWD(MP_BWD_OUTPUT) | MP_OPF_COST(MP_COST_SOFTMAX), mp_shape_same},
    {"SoftmaxCrossEntropyLoss", "", 0, mp_shape_loss},
    {"Softplus", "", EW | KX(UNARY, SOFTPLUS) | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"Softsign", "", EW | MP_OPF_BWD(MP_BWD_INPUT0), mp_shape_same},
    {"SpaceToDepth", "", 0, mp_shape_space_to_depth},
    {"Split", "", KN(SPLIT) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_split},
    {"SplitToSequence", "", 0, mp_shape_split_to_seq},
    {"Sqrt", "", EW | KX(UNARY, SQRT) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"Squeeze", "", VIEW | KN(VIEW) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_squeeze},
    {"StringConcat", "", 0, mp_shape_broadcast},
    {"StringNormalizer", "", 0, mp_shape_string_normalizer},
    {"StringSplit", "", 0, mp_shape_string_split},
    {"Sub", "", BIN | KX(BINARY, SUB) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_GRAD_PASS0, mp_shape_broadcast},
    {"Sum", "", BIN | KX(VARIADIC, ADD) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_GRAD_PASS_ALL, mp_shape_variadic},
    {"SwiGLU", "", 0, mp_shape_broadcast},
    {"Swish", "", EW, mp_shape_same},
    {"Tan", "", EW, mp_shape_same},
    {"Tanh", "", EW | KX(UNARY, TANH) | MP_OPF_BWD(MP_BWD_OUTPUT), mp_shape_same},
    {"TensorScatter", "", 0, mp_shape_same},
    {"TfIdfVectorizer", "", 0, mp_shape_tfidf},
    {"ThresholdedRelu", "", EW, mp_shape_same},
    {"Tile", "", 0 | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_tile},
    {"TopK", "", 0, mp_shape_topk},
    {"Transpose", "", KN(TRANSPOSE) | MP_OPF_BWD(MP_BWD_NONE) | MP_OPF_COST(MP_COST_MOVE), mp_shape_transpose},
    {"Trilu", "", 0, mp_shape_same},
    {"Unique", "", 0, mp_shape_unique},
    {"Unsqueeze", "", VIEW | KN(VIEW) | MP_OPF_BWD(MP_BWD_NONE), mp_shape_unsqueeze},
    {"Upsample", "", KN(RESIZE), mp_shape_resize},
    {"Where", "", 0, mp_shape_where},
    {"Xor", "", 0 | MP_OPF_BWD(MP_BWD_NONDIFF), mp_shape_logical},
    {"ArrayFeatureExtractor", "ai.onnx.ml", 0, mp_shape_array_feature},
    {"Binarizer", "ai.onnx.ml", EW, mp_shape_same},
    {"LabelEncoder", "ai.onnx.ml", 0, mp_shape_label_encoder},
    {"TreeEnsemble", "ai.onnx.ml", 0, mp_shape_tree_ensemble},
    {"FlexAttention", "ai.onnx.preview", 0, mp_shape_flex_attention},
    {"Adagrad", "ai.onnx.preview.training", 0, mp_shape_optimizer},
    {"Adam", "ai.onnx.preview.training", 0, mp_shape_optimizer},
    {"Gradient", "ai.onnx.preview.training", 0, mp_shape_gradient},
    {"Momentum", "ai.onnx.preview.training", 0, mp_shape_optimizer},
};
#define N_OPS (sizeof registry / sizeof registry[0])

static const mp_op_def generic = {"", "", 0, mp_shape_generic};

const mp_op_def *mp_op_generic(void) { return &generic; }

bool mp_op_pointwise(const mp_op_def *d)
{
    return d && (d->flags & (MP_OPF_ELEMENTWISE | MP_OPF_INPLACE |
                             MP_OPF_INPLACE_ANY)) &&
           !(d->flags & MP_OPF_VIEW);
}

bool mp_op_may_overwrite(const mp_op_def *d, uint32_t i)
{
    if (!d)
        return false;
    if (d->flags & MP_OPF_INPLACE_ANY)
        return true;
    return i == 0 && (d->flags & MP_OPF_INPLACE);
}

static int cmp_def(const void *a, const void *b)
{
    const mp_op_def *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->name, y->name);
}

const mp_op_def *mp_op_lookup(const char *op, const char *domain)
{
    if (!op)
        return &generic;
    if (!domain || strcmp(domain, "ai.onnx") == 0)
        domain = "";
    mp_op_def key = {op, domain, 0, NULL};
    const mp_op_def *d = bsearch(&key, registry, N_OPS, sizeof registry[0],
                                 cmp_def);
    return d ? d : &generic;
}

/* For the registry's own test: 1 when the table is sorted and unique. */
int mp_op_registry_sorted(void);
int mp_op_registry_sorted(void)
{
    for (size_t i = 1; i < N_OPS; i++)
        if (cmp_def(&registry[i - 1], &registry[i]) >= 0)
            return 0;
    return 1;
}

/* Number of registry entries (tests, docs). */
size_t mp_op_registry_size(void);
size_t mp_op_registry_size(void) { return N_OPS; }
