/* The op registry: one entry per op type, the only table. Everything
 * op-specific (shape and size inference, memory behaviour; later cost,
 * backward rule and executor kernel) is found from the entry; nothing else
 * switches on op names. The shape functions live in core/ops/ops_*.c
 * (declared in core/ops/shape.h). Unknown ops get the generic entry, which
 * needs the outputs' shapes declared (ONNX value_info). */
#include "shape.h"
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#define VIEW MP__OPF_VIEW
/* autocast classes (core/ir.h, MP__AMP_*) */
#define AMP_LOW MP__OPF_AMP(MP__AMP_LOW)
#define AMP_F32 MP__OPF_AMP(MP__AMP_F32)
#define AMP_F32_OPT MP__OPF_AMP(MP__AMP_F32_OPT)
#define AMP_INPUT0 MP__OPF_AMP(MP__AMP_INPUT0)
#define AMP_KEEP MP__OPF_AMP(MP__AMP_KEEP)
#define EW (MP__OPF_ELEMENTWISE | MP__OPF_INPLACE)
/* binary/variadic pointwise: output 0 may overwrite any same-size input */
#define BIN (MP__OPF_INPLACE | MP__OPF_INPLACE_ANY)
/* reads every input broadcast to output 0's shape (numpy rules): a
 * broadcast view (Expand) may feed it */
#define BC MP__OPF_BCAST_IN

/* executor kernel of an entry (MP__OPF_KERNEL in internal.h) */
#define KX(k, op) MP__OPF_KERNEL(MP__KERNEL_##k, MP__KOP_##op)
#define KN(k) MP__OPF_KERNEL(MP__KERNEL_##k, 0)
/* an optimizer step (planner/train.c), run by the SGD kernel's variants */
/* a collective (planner/parallel.c): data movement, not differentiated */
#define COLL (MP__OPF_COLLECTIVE | MP__OPF_COST(MP__COST_MOVE) | \
              MP__OPF_BWD(MP__BWD_NONDIFF))
#define KOPT(k) MP__OPF_KERNEL(MP__KERNEL_SGD, MP__KOP_OPT_##k)

/* Sorted by (domain, name) in strcmp order for bsearch; checked by a test. */
static const mp__op_def registry[] = {
    {"Abs", "", EW | KX(UNARY, ABS) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_broadcast},
    {"Acos", "", AMP_F32 | EW, mp__shape_same},
    {"Acosh", "", EW, mp__shape_same},
    {"Add", "", BC | BIN | KX(BINARY, ADD) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_GRAD_PASS_ALL, mp__shape_broadcast},
    {"AffineGrid", "", 0, mp__shape_affine_grid},
    {"And", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"ArgMax", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_argreduce},
    {"ArgMin", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_argreduce},
    {"Asin", "", AMP_F32 | EW, mp__shape_same},
    {"Asinh", "", EW, mp__shape_same},
    {"Atan", "", EW, mp__shape_same},
    {"Atanh", "", EW, mp__shape_same},
    {"Attention", "", AMP_LOW, mp__shape_attention},
    {"AveragePool", "", KX(POOL, POOL_AVG) | MP__OPF_BWD(MP__BWD_INPUT0) | MP__OPF_COST(MP__COST_POOL), mp__shape_pool},
    {"BatchNormalization", "", AMP_INPUT0 | KN(BATCHNORM) | MP__OPF_BWD(MP__BWD_NORM_CHANNELS) | MP__OPF_COST(MP__COST_NORM), mp__shape_norm},
    {"Bernoulli", "", 0 | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_like},
    {"BitCast", "", 0, mp__shape_bitcast},
    {"BitShift", "", BC | BIN | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_broadcast},
    {"BitwiseAnd", "", BC | BIN | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_broadcast},
    {"BitwiseNot", "", EW | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_same},
    {"BitwiseOr", "", BC | BIN | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_broadcast},
    {"BitwiseXor", "", BC | BIN | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_broadcast},
    {"BlackmanWindow", "", 0, mp__shape_window},
    {"Cast", "", AMP_KEEP | MP__OPF_CHEAP | KN(CAST) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_cast},
    {"CastLike", "", AMP_KEEP | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONE), mp__shape_cast_like},
    {"CausalConvWithState", "", 0, mp__shape_causal_conv_state},
    {"Ceil", "", EW | KX(UNARY, CEIL) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_same},
    {"Celu", "", EW | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"CenterCropPad", "", 0, mp__shape_center_crop_pad},
    {"Clip", "", EW | KX(UNARY, CLIP) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Col2Im", "", 0, mp__shape_col2im},
    {"Compress", "", 0, mp__shape_compress},
    {"Concat", "", KN(CONCAT) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_concat},
    {"ConcatFromSequence", "", 0, mp__shape_concat_from_seq},
    {"Constant", "", MP__OPF_CONSTANT | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_constant},
    {"ConstantOfShape", "", MP__OPF_CONSTANT | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_constant_of_shape},
    {"Conv", "", AMP_LOW | KN(CONV) | MP__OPF_BWD(MP__BWD_CONV) | MP__OPF_COST(MP__COST_CONV), mp__shape_conv},
    {"ConvInteger", "", MP__OPF_COST(MP__COST_CONV), mp__shape_conv},
    {"ConvTranspose", "", AMP_LOW | MP__OPF_BWD(MP__BWD_CONV) | MP__OPF_COST(MP__COST_CONV_TRANSPOSE), mp__shape_conv_transpose},
    {"Cos", "", EW | KX(UNARY, COS) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Cosh", "", AMP_F32 | EW, mp__shape_same},
    {"CumProd", "", 0, mp__shape_cumsum},
    {"CumSum", "", AMP_F32_OPT, mp__shape_cumsum},
    {"DFT", "", 0, mp__shape_dft},
    {"DeformConv", "", 0, mp__shape_conv},
    {"DepthToSpace", "", 0, mp__shape_depth_to_space},
    {"DequantizeLinear", "", 0, mp__shape_dequantize},
    {"Det", "", 0, mp__shape_det},
    {"Div", "", BC | BIN | KX(BINARY, DIV) | MP__OPF_BWD(MP__BWD_DIV), mp__shape_broadcast},
    {"Dropout", "", MP__OPF_INPLACE | KN(COPY) | MP__OPF_BWD(MP__BWD_MASK), mp__shape_dropout},
    {"DynamicQuantizeLinear", "", 0, mp__shape_dynamic_quantize},
    {"Einsum", "", AMP_LOW, mp__shape_einsum},
    {"Elu", "", EW | KX(UNARY, ELU) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Equal", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_compare},
    {"Erf", "", EW | KX(UNARY, ERF) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Exp", "", AMP_F32 | EW | KX(UNARY, EXP) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"Expand", "", KN(EXPAND) | MP__OPF_VIEW_B | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_expand},
    {"EyeLike", "", 0, mp__shape_like},
    {"Flatten", "", VIEW | KN(VIEW) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_flatten},
    {"Floor", "", EW | KX(UNARY, FLOOR) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_same},
    {"GRU", "", 0, mp__shape_rnn},
    {"Gather", "", KN(GATHER) | MP__OPF_BWD(MP__BWD_GATHER) | MP__OPF_COST(MP__COST_MOVE), mp__shape_gather},
    {"GatherElements", "", 0, mp__shape_gather_elements},
    {"GatherND", "", 0, mp__shape_gather_nd},
    {"Gelu", "", EW | KX(UNARY, GELU) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Gemm", "", AMP_LOW | KN(GEMM) | MP__OPF_T_OPERAND | MP__OPF_BWD(MP__BWD_MATMUL) | MP__OPF_COST(MP__COST_GEMM), mp__shape_gemm},
    {"GlobalAveragePool", "", KX(GLOBAL_POOL, POOL_AVG) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_POOL), mp__shape_global_pool},
    {"GlobalLpPool", "", MP__OPF_COST(MP__COST_POOL), mp__shape_global_pool},
    {"GlobalMaxPool", "", KX(GLOBAL_POOL, POOL_MAX) | MP__OPF_COST(MP__COST_POOL), mp__shape_global_pool},
    {"Greater", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_compare},
    {"GreaterOrEqual", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_compare},
    {"GridSample", "", 0, mp__shape_grid_sample},
    {"GroupNormalization", "", AMP_F32 | MP__OPF_BWD(MP__BWD_NORM_GROUPS) | MP__OPF_COST(MP__COST_NORM), mp__shape_norm},
    {"HammingWindow", "", 0, mp__shape_window},
    {"HannWindow", "", 0, mp__shape_window},
    {"HardSigmoid", "", EW | KX(UNARY, HARDSIGMOID) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"HardSwish", "", EW | KX(UNARY, HARDSWISH) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Hardmax", "", 0, mp__shape_softmax},
    {"Identity", "", VIEW | KN(VIEW) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_view},
    {"If", "", 0, mp__shape_if},
    {"ImageDecoder", "", 0, mp__shape_image_decoder},
    {"InstanceNormalization", "", AMP_INPUT0 | MP__OPF_BWD(MP__BWD_NORM_GROUPS) | MP__OPF_COST(MP__COST_NORM), mp__shape_norm},
    {"IsInf", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"IsNaN", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"LRN", "", KN(LRN), mp__shape_lrn},
    {"LSTM", "", 0, mp__shape_rnn},
    {"LayerNormalization", "", AMP_F32 | KN(LAYERNORM) | MP__OPF_BWD(MP__BWD_NORM_ROWS) | MP__OPF_COST(MP__COST_NORM), mp__shape_norm},
    {"LeakyRelu", "", EW | KX(UNARY, LEAKYRELU) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Less", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_compare},
    {"LessOrEqual", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_compare},
    {"LinearAttention", "", 0, mp__shape_linear_attention},
    {"Log", "", AMP_F32 | EW | KX(UNARY, LOG) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"LogSoftmax", "", AMP_F32_OPT | KX(SOFTMAX, LOGSOFTMAX) | MP__OPF_BWD(MP__BWD_OUTPUT) | MP__OPF_COST(MP__COST_SOFTMAX), mp__shape_softmax},
    {"Loop", "", 0, mp__shape_loop},
    {"LpNormalization", "", 0, mp__shape_softmax},
    {"LpPool", "", MP__OPF_COST(MP__COST_POOL), mp__shape_pool},
    {"MatMul", "", AMP_LOW | MP__OPF_MATMUL | MP__OPF_T_OPERAND | KN(MATMUL) | MP__OPF_BWD(MP__BWD_MATMUL) | MP__OPF_COST(MP__COST_MATMUL), mp__shape_matmul},
    {"MatMulInteger", "", MP__OPF_COST(MP__COST_MATMUL), mp__shape_matmul},
    {"Max", "", BC | BIN | KX(VARIADIC, MAX), mp__shape_variadic},
    {"MaxPool", "", KX(POOL, POOL_MAX) | MP__OPF_BWD(MP__BWD_INDICES) | MP__OPF_COST(MP__COST_POOL), mp__shape_pool},
    {"MaxUnpool", "", 0, mp__shape_max_unpool},
    {"Mean", "", BC | BIN | KX(VARIADIC, MEAN) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_variadic},
    {"MeanVarianceNormalization", "", 0, mp__shape_mvn},
    {"MelWeightMatrix", "", 0, mp__shape_mel_weight},
    {"Min", "", BC | BIN | KX(VARIADIC, MIN), mp__shape_variadic},
    {"Mish", "", EW | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Mod", "", BC | BIN, mp__shape_broadcast},
    {"Mul", "", BC | BIN | KX(BINARY, MUL) | MP__OPF_BWD(MP__BWD_OTHER), mp__shape_broadcast},
    {"Neg", "", EW | KX(UNARY, NEG) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_broadcast},
    {"NegativeLogLikelihoodLoss", "", 0, mp__shape_loss},
    {"NonMaxSuppression", "", 0, mp__shape_nms},
    {"NonZero", "", 0, mp__shape_nonzero},
    {"Not", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"OneHot", "", 0, mp__shape_one_hot},
    {"Optional", "", 0, mp__shape_optional},
    {"OptionalGetElement", "", 0, mp__shape_optional_get},
    {"OptionalHasElement", "", 0 | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_optional_has},
    {"Or", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"PRelu", "", AMP_LOW | MP__OPF_CHEAP | MP__OPF_INPLACE | KX(BINARY, PRELU), mp__shape_prelu},
    {"Pad", "", KN(PAD) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_pad},
    {"Pow", "", BC | AMP_F32 | BIN | KX(BINARY, POW) | MP__OPF_BWD(MP__BWD_POW), mp__shape_broadcast},
    {"QLinearConv", "", MP__OPF_COST(MP__COST_CONV), mp__shape_conv},
    {"QLinearMatMul", "", MP__OPF_COST(MP__COST_MATMUL), mp__shape_matmul},
    {"QuantizeLinear", "", 0, mp__shape_quantize},
    {"RMSNormalization", "", KX(LAYERNORM, RMS_NORM) | MP__OPF_BWD(MP__BWD_NORM_RMS) | MP__OPF_COST(MP__COST_NORM), mp__shape_norm},
    {"RNN", "", 0, mp__shape_rnn},
    {"RandomNormalLike", "", 0 | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_like},
    {"RandomUniformLike", "", 0 | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_like},
    {"Range", "", MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_range},
    {"Reciprocal", "", AMP_F32 | EW | KX(UNARY, RECIPROCAL) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"ReduceL1", "", MP__OPF_CHEAP | KX(REDUCE, REDUCE_L1), mp__shape_reduce},
    {"ReduceL2", "", AMP_F32 | MP__OPF_CHEAP | KX(REDUCE, REDUCE_L2), mp__shape_reduce},
    {"ReduceLogSum", "", MP__OPF_CHEAP, mp__shape_reduce},
    {"ReduceLogSumExp", "", AMP_F32 | MP__OPF_CHEAP, mp__shape_reduce},
    {"ReduceMax", "", MP__OPF_CHEAP | KX(REDUCE, REDUCE_MAX), mp__shape_reduce},
    {"ReduceMean", "", MP__OPF_CHEAP | KX(REDUCE, REDUCE_MEAN) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_reduce},
    {"ReduceMin", "", MP__OPF_CHEAP | KX(REDUCE, REDUCE_MIN), mp__shape_reduce},
    {"ReduceProd", "", AMP_F32_OPT | MP__OPF_CHEAP | KX(REDUCE, REDUCE_PROD), mp__shape_reduce},
    {"ReduceSum", "", AMP_F32_OPT | MP__OPF_CHEAP | KX(REDUCE, REDUCE_SUM) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_reduce},
    {"ReduceSumSquare", "", MP__OPF_CHEAP | KX(REDUCE, REDUCE_SUMSQ), mp__shape_reduce},
    {"RegexFullMatch", "", 0, mp__shape_regex_match},
    {"Relu", "", EW | KX(UNARY, RELU) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"Reshape", "", VIEW | KN(VIEW) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_reshape},
    {"Resize", "", AMP_F32 | KN(RESIZE), mp__shape_resize},
    {"ReverseSequence", "", 0, mp__shape_reverse_sequence},
    {"RoiAlign", "", 0, mp__shape_roi_align},
    {"RotaryEmbedding", "", 0, mp__shape_same},
    {"Round", "", EW | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_same},
    {"STFT", "", 0, mp__shape_stft},
    /* the serving sampler (planner/serve.c): greedy, the first largest of
     * input 0 per row (int64 token ids) */
    {"Sample", "", KN(SAMPLE) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_generic},
    {"Scan", "", 0, mp__shape_scan},
    {"Scatter", "", 0, mp__shape_scatter},
    {"ScatterElements", "", 0, mp__shape_scatter},
    {"ScatterND", "", 0, mp__shape_scatter},
    {"Selu", "", EW | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"SequenceAt", "", 0, mp__shape_seq_at},
    {"SequenceConstruct", "", 0, mp__shape_seq_construct},
    {"SequenceEmpty", "", 0, mp__shape_seq_empty},
    {"SequenceErase", "", 0, mp__shape_seq_erase},
    {"SequenceInsert", "", 0, mp__shape_seq_insert},
    {"SequenceLength", "", 0 | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_seq_length},
    {"SequenceMap", "", 0, mp__shape_seq_map},
    {"Shape", "", KN(SHAPE) | MP__OPF_SHAPE_READ | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_shape},
    {"Shrink", "", EW, mp__shape_same},
    {"Sigmoid", "", EW | KX(UNARY, SIGMOID) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"Sign", "", EW | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_same},
    {"Sin", "", EW | KX(UNARY, SIN) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Sinh", "", AMP_F32 | EW, mp__shape_same},
    {"Size", "", MP__OPF_SHAPE_READ | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_size},
    {"Slice", "", KN(SLICE) | MP__OPF_VIEW_R | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_slice},
    {"Softmax", "", AMP_F32_OPT | MP__OPF_SOFTMAX | KX(SOFTMAX, SOFTMAX) | MP__OPF_BWD(MP__BWD_OUTPUT) | MP__OPF_COST(MP__COST_SOFTMAX), mp__shape_softmax},
    {"SoftmaxCrossEntropyLoss", "", 0, mp__shape_loss},
    {"Softplus", "", AMP_F32 | EW | KX(UNARY, SOFTPLUS) | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    {"Softsign", "", EW | MP__OPF_BWD(MP__BWD_INPUT0), mp__shape_same},
    /* the top-k/top-p sort of the serving sampler: each row descending
     * (float32 values, int64 indices; ties by index) */
    {"Sort", "", KN(SORT) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_generic},
    {"SpaceToDepth", "", 0, mp__shape_space_to_depth},
    {"Split", "", KN(SPLIT) | MP__OPF_VIEW_R | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_split},
    {"SplitToSequence", "", 0, mp__shape_split_to_seq},
    {"Sqrt", "", EW | KX(UNARY, SQRT) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"Squeeze", "", VIEW | KN(VIEW) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_squeeze},
    {"StringConcat", "", 0, mp__shape_broadcast},
    {"StringNormalizer", "", 0, mp__shape_string_normalizer},
    {"StringSplit", "", 0, mp__shape_string_split},
    {"Sub", "", BC | BIN | KX(BINARY, SUB) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_GRAD_PASS0, mp__shape_broadcast},
    {"Sum", "", BC | BIN | KX(VARIADIC, ADD) | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_GRAD_PASS_ALL, mp__shape_variadic},
    {"SwiGLU", "", BC | BIN | KX(BINARY, SWIGLU), mp__shape_broadcast},
    {"Swish", "", EW, mp__shape_same},
    {"Tan", "", AMP_F32 | EW, mp__shape_same},
    {"Tanh", "", EW | KX(UNARY, TANH) | MP__OPF_BWD(MP__BWD_OUTPUT), mp__shape_same},
    {"TensorScatter", "", 0, mp__shape_same},
    {"TfIdfVectorizer", "", 0, mp__shape_tfidf},
    {"ThresholdedRelu", "", EW, mp__shape_same},
    {"Tile", "", 0 | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_tile},
    {"TopK", "", 0, mp__shape_topk},
    {"Transpose", "", KN(TRANSPOSE) | MP__OPF_VIEW_T | MP__OPF_BWD(MP__BWD_NONE) | MP__OPF_COST(MP__COST_MOVE), mp__shape_transpose},
    {"Trilu", "", MP__OPF_CHEAP, mp__shape_trilu},
    {"Unique", "", 0, mp__shape_unique},
    {"Unsqueeze", "", VIEW | KN(VIEW) | MP__OPF_BWD(MP__BWD_NONE), mp__shape_unsqueeze},
    {"Upsample", "", AMP_F32 | KN(RESIZE), mp__shape_resize},
    {"Where", "", BC | MP__OPF_CHEAP | KN(WHERE) | MP__OPF_BWD(MP__BWD_WHERE), mp__shape_where},
    {"Xor", "", BC | MP__OPF_CHEAP | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_logical},
    {"ArrayFeatureExtractor", "ai.onnx.ml", 0, mp__shape_array_feature},
    {"Binarizer", "ai.onnx.ml", EW, mp__shape_same},
    {"LabelEncoder", "ai.onnx.ml", 0, mp__shape_label_encoder},
    {"TreeEnsemble", "ai.onnx.ml", 0, mp__shape_tree_ensemble},
    {"FlexAttention", "ai.onnx.preview", 0, mp__shape_flex_attention},
    {"Adagrad", "ai.onnx.preview.training", 0, mp__shape_optimizer},
    {"Adam", "ai.onnx.preview.training", 0, mp__shape_optimizer},
    {"Gradient", "ai.onnx.preview.training", 0, mp__shape_gradient},
    {"Momentum", "ai.onnx.preview.training", 0, mp__shape_optimizer},
    {"Adam", "memplan", KOPT(ADAM), mp__shape_generic},
    {"AdamW", "memplan", KOPT(ADAMW), mp__shape_generic},
    {"AllGather", "memplan", COLL | KX(COLLECTIVE, ALL_GATHER), mp__shape_generic},
    {"AllReduce", "memplan", COLL | KX(COLLECTIVE, ALL_REDUCE), mp__shape_generic},
    {"ForeachTemp", "memplan", KOPT(FOREACH), mp__shape_generic},
    {"HostStep", "memplan", MP__OPF_COST(MP__COST_MOVE) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_generic},
    {"Loss", "memplan", KN(LOSS), mp__shape_generic},
    {"LossGrad", "memplan", KN(LOSS_GRAD), mp__shape_generic},
    {"Momentum", "memplan", KOPT(MOMENTUM), mp__shape_generic},
    /* attention of new tokens over a KV cache (planner/serve.c): writes
     * their K and V into the cache (a persistent tensor), through a block
     * table when paged, then attends causally */
    {"PagedAttention", "memplan", KN(PAGED_ATTENTION) | MP__OPF_BWD(MP__BWD_NONDIFF), mp__shape_generic},
    {"Recv", "memplan", COLL | KX(COLLECTIVE, RECV), mp__shape_generic},
    {"ReduceScatter", "memplan", COLL | KX(COLLECTIVE, REDUCE_SCATTER), mp__shape_generic},
    {"SGD", "memplan", KN(SGD), mp__shape_generic},
    {"ScaledDotProductAttention", "memplan", AMP_LOW | KN(ATTENTION) | MP__OPF_T_OPERAND | MP__OPF_STRIDED_IN | MP__OPF_BWD(MP__BWD_SDPA) | MP__OPF_COST(MP__COST_ATTENTION), mp__shape_sdpa},
    {"Send", "memplan", COLL | KX(COLLECTIVE, SEND), mp__shape_generic},
};
#define N_OPS (sizeof registry / sizeof registry[0])

static const mp__op_def generic = {"", "", 0, mp__shape_generic};

const mp__op_def *mp__op_generic(void) { return &generic; }

static int cmp_def(const void *a, const void *b)
{
    const mp__op_def *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->name, y->name);
}

const mp__op_def *mp__op_lookup(const char *op, const char *domain)
{
    if (!op)
        return &generic;
    if (!domain || strcmp(domain, "ai.onnx") == 0)
        domain = "";
    mp__op_def key = {op, domain, 0, NULL};
    const mp__op_def *d = bsearch(&key, registry, N_OPS, sizeof registry[0],
                                 cmp_def);
    return d ? d : &generic;
}

/* Backward rules: per rule, what the gradient of input 0, 1, 2 and of
 * any later input needs (MP__BWDN_*), from PyTorch's derivatives.yaml
 * (docs/training.md names the entry of each). */
#define I0 MP__BWDN_IN0
#define I1 MP__BWDN_IN1
#define I2 MP__BWDN_IN2
#define IA MP__BWDN_ALL_IN
#define O0 MP__BWDN_OUT0
#define EX MP__BWDN_EXTRA
static const struct {
    const char *name;
    uint8_t need[4]; /* inputs 0, 1, 2, 3 and later */
    bool two_products;
    uint8_t extra, n_stats; /* MP__BWDX_*, statistics vectors */
} bwd_rules[MP__BWD_COUNT_] = {
    [MP__BWD_INPUTS] = {"INPUTS", {IA, IA, IA, IA}, true},
    [MP__BWD_NONE] = {"NONE", {0, 0, 0, 0}, false},
    [MP__BWD_OUTPUT] = {"OUTPUT", {O0, O0, O0, O0}, false},
    [MP__BWD_INPUT0] = {"INPUT0", {I0, I0, I0, I0}, false},
    [MP__BWD_NORM_ROWS] = {"NORM_ROWS", {IA | EX, IA | EX, IA | EX, IA | EX}, false, MP__BWDX_ROWS, 2},
    [MP__BWD_NORM_CHANNELS] = {"NORM_CHANNELS", {IA | EX, IA | EX, IA | EX, IA | EX}, false, MP__BWDX_CHANNELS, 2},
    [MP__BWD_MASK] = {"MASK", {EX, EX, EX, EX}, false, MP__BWDX_MASK, 0},
    [MP__BWD_INDICES] = {"INDICES", {I0 | EX, I0 | EX, I0 | EX, I0 | EX}, false, MP__BWDX_INDICES, 0},
    [MP__BWD_NONDIFF] = {"NONDIFF", {0, 0, 0, 0}, false},
    [MP__BWD_OTHER] = {"OTHER", {I1, I0, 0, 0}, true},
    [MP__BWD_MATMUL] = {"MATMUL", {I1, I0, 0, 0}, true},
    [MP__BWD_DIV] = {"DIV", {I1, I0 | I1, 0, 0}, true},
    [MP__BWD_POW] = {"POW", {I0 | I1, I0 | I1 | O0, 0, 0}, true},
    [MP__BWD_WHERE] = {"WHERE", {I0, I0, I0, 0}, true},
    [MP__BWD_GATHER] = {"GATHER", {I1, 0, 0, 0}, true},
    [MP__BWD_CONV] = {"CONV", {I0 | I1, I0 | I1, I0 | I1, 0}, true},
    [MP__BWD_NORM_GROUPS] = {"NORM_GROUPS", {IA | EX, IA | EX, IA | EX, IA | EX}, false, MP__BWDX_GROUPS, 2},
    [MP__BWD_NORM_RMS] = {"NORM_RMS", {IA | EX, IA | EX, IA | EX, IA | EX}, false, MP__BWDX_ROWS, 1},
    [MP__BWD_SDPA] = {"SDPA", {IA | O0 | EX, IA | O0 | EX, IA | O0 | EX, IA | O0 | EX}, false, MP__BWDX_ROWS, 1},
};
#undef I0
#undef I1
#undef I2
#undef IA
#undef O0
#undef EX

unsigned mp__bwd_needs(unsigned rule, uint32_t pos)
{
    if (rule >= MP__BWD_COUNT_)
        return 0;
    return bwd_rules[rule].need[pos < 3 ? pos : 3];
}
bool mp__bwd_two_products(unsigned rule)
{
    return rule < MP__BWD_COUNT_ && bwd_rules[rule].two_products;
}
unsigned mp__bwd_extra(unsigned rule, unsigned *n_stats)
{
    if (n_stats)
        *n_stats = rule < MP__BWD_COUNT_ ? bwd_rules[rule].n_stats : 0;
    return rule < MP__BWD_COUNT_ ? bwd_rules[rule].extra : MP__BWDX_NONE;
}
const char *mp__bwd_name(unsigned rule)
{
    return rule < MP__BWD_COUNT_ ? bwd_rules[rule].name : "unknown";
}

/* For the registry's own test: 1 when the table is sorted and unique. */
int mp__op_registry_sorted(void);
int mp__op_registry_sorted(void)
{
    for (size_t i = 1; i < N_OPS; i++)
        if (cmp_def(&registry[i - 1], &registry[i]) >= 0)
            return 0;
    return 1;
}

/* Number of registry entries (tests, docs). */
size_t mp__op_registry_size(void);
size_t mp__op_registry_size(void) { return N_OPS; }
