/* calibrate.c - the benchmarks of `memplan calibrate` and the profile
 * they make (calibrate.h; docs/cost-model.md). Each benchmark is a graph
 * of one node, planned and lowered as `memplan validate` lowers a model,
 * so that the calibration times the executor's own kernels (whatever
 * path a kernel takes there: cuBLAS, im2col, cuDNN). */
#include "calibrate.h"

#include "base.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define G MPV_CB_GEMM
#define C MPV_CB_CONV
#define SDPA "ScaledDotProductAttention"
/* the tail of a benchmark for the affine fits only: grad, train, use,
 * optim, timed */
#define FIT(grad, train, optim, timed) grad, train, MPV_CB_FIT, optim, timed
/* GEMMs: M, K, N; convs: x [N, C, H, W], w [M, C/group, kh, kw] */
const mpv_cal_bench mpv_cal_benches[] = {
    {"gemm_32x4096x4096", G, MP_GEMM_SKINNY, "MatMul", {32, 4096, 4096, 0},
     {0}, 1, 0, 0, 0, 0, NULL},
    {"gemm_4096x64x4096", G, MP_GEMM_SKINNY, "MatMul", {4096, 64, 4096, 0},
     {0}, 1, 0, 0, 0, 0, NULL},
    {"gemm_8192x4096x64", G, MP_GEMM_SKINNY, "MatMul", {8192, 4096, 64, 0},
     {0}, 1, 0, 0, 0, 0, NULL},
    {"gemm_256", G, MP_GEMM_SMALL, "MatMul", {256, 256, 256, 0}, {0}, 1, 0,
     0, 0, 0, NULL},
    {"gemm_448", G, MP_GEMM_SMALL, "MatMul", {448, 448, 448, 0}, {0}, 1, 0,
     0, 0, 0, NULL},
    {"gemm_1024", G, MP_GEMM_MEDIUM, "MatMul", {1024, 1024, 1024, 0}, {0},
     1, 0, 0, 0, 0, NULL},
    {"gemm_1536", G, MP_GEMM_MEDIUM, "MatMul", {1536, 1536, 1536, 0}, {0},
     1, 0, 0, 0, 0, NULL},
    {"gemm_3072", G, MP_GEMM_LARGE, "MatMul", {3072, 3072, 3072, 0}, {0},
     1, 0, 0, 0, 0, NULL},
    {"gemm_4096", G, MP_GEMM_LARGE, "MatMul", {4096, 4096, 4096, 0}, {0},
     1, 0, 0, 0, 0, NULL},
    {"conv1x1_32x256x56", C, MP_CONV_POINTWISE, "Conv", {32, 256, 56, 56},
     {256, 256, 1, 1}, 1, 0, 0, MPV_CB_FIGURE, 0, NULL},
    {"conv1x1_32x1024x14", C, MP_CONV_POINTWISE, "Conv", {32, 1024, 14, 14},
     {256, 1024, 1, 1}, 1, 0, 0, MPV_CB_FIGURE, 0, NULL},
    {"conv3x3_32x128x28", C, MP_CONV_SPATIAL, "Conv", {32, 128, 28, 28},
     {128, 128, 3, 3}, 1, 0, 0, MPV_CB_FIGURE, 0, NULL},
    {"conv3x3_32x64x56", C, MP_CONV_SPATIAL, "Conv", {32, 64, 56, 56},
     {64, 64, 3, 3}, 1, 0, 0, MPV_CB_FIGURE, 0, NULL},
    {"dwconv3x3_32x256x56", C, MP_CONV_DEPTHWISE, "Conv", {32, 256, 56, 56},
     {256, 1, 3, 3}, 256, 0, 0, MPV_CB_FIGURE, 0, NULL},
    {"dwconv7x7_32x384x14", C, MP_CONV_DEPTHWISE, "Conv", {32, 384, 14, 14},
     {384, 1, 7, 7}, 384, 0, 0, MPV_CB_FIGURE, 0, NULL},
    /* the same classes at the reference models' batch 8 (ResNet's,
     * MobileNet's and EfficientNet's shapes), where the batch-32 shapes
     * above reach throughputs that batch 8 does not */
    {"conv1x1_8x256x56", C, MP_CONV_POINTWISE, "Conv", {8, 256, 56, 56},
     {64, 256, 1, 1}, 1, 0, 0, 0, 0, NULL},
    {"conv1x1_8x960x7", C, MP_CONV_POINTWISE, "Conv", {8, 960, 7, 7},
     {160, 960, 1, 1}, 1, 0, 0, 0, 0, NULL},
    {"conv3x3_8x128x28", C, MP_CONV_SPATIAL, "Conv", {8, 128, 28, 28},
     {128, 128, 3, 3}, 1, 0, 0, 0, 0, NULL},
    {"conv3x3_8x64x56", C, MP_CONV_SPATIAL, "Conv", {8, 64, 56, 56},
     {64, 64, 3, 3}, 1, 0, 0, 0, 0, NULL},
    {"dwconv3x3_8x144x56", C, MP_CONV_DEPTHWISE, "Conv", {8, 144, 56, 56},
     {144, 1, 3, 3}, 144, 0, 0, 0, 0, NULL},
    {"dwconv5x5_8x240x28", C, MP_CONV_DEPTHWISE, "Conv", {8, 240, 28, 28},
     {240, 1, 5, 5}, 240, 0, 0, 0, 0, NULL},
    {"dwconv3x3_8x672x14", C, MP_CONV_DEPTHWISE, "Conv", {8, 672, 14, 14},
     {672, 1, 3, 3}, 672, 0, 0, 0, 0, NULL},
    {"add_4096x8192", MPV_CB_POINTWISE, 0, "Add", {4096, 8192, 0, 0}, {0},
     1, 0, 0, 0, 0, NULL},
    {"relu_4096x8192", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Relu",
     {4096, 8192, 0, 0}, {0}, 1, 0, 0, 0, 0, NULL},
    {"reducesum_8192x4096", MPV_CB_REDUCE, MP_FAM_REDUCTION, "ReduceSum",
     {8192, 4096, 0, 0}, {0}, 1, 0, 0, 0, 0, NULL},
    {"softmax_8192x4096", MPV_CB_REDUCE, MP_FAM_ROWNORM, "Softmax",
     {8192, 4096, 0, 0}, {0}, 1, 0, 0, 0, 0, NULL},
    {"layernorm_8192x4096", MPV_CB_REDUCE, MP_FAM_ROWNORM,
     "LayerNormalization", {8192, 4096, 0, 0}, {0}, 1, 0, 0, 0, 0, NULL},
    {"transpose_4096x8192", MPV_CB_MOVE, MP_FAM_COPY, "Transpose",
     {4096, 8192, 0, 0}, {0}, 1, 0, 0, 0, 0, NULL},
    /* fused attention, Q [B, H, T, D]: ViT-B/16, BERT, GPT-2 medium */
    {"attention_8x12x197x64", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     "ScaledDotProductAttention",
     {8, 12, 197, 64}, {0}, 1, 0, 0, 0, 0, NULL},
    {"attention_32x12x128x64", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     SDPA, {32, 12, 128, 64}, {0}, 1, 0, 0, 0, 0, NULL},
    {"attention_8x16x1024x64", MPV_CB_ATTENTION, MP_ATTN_LONG,
     SDPA, {8, 16, 1024, 64}, {0}, 1, 0, 0, 0, 0, NULL},
    /* the backward passes at the reference models' batch 8: a conv's
     * input and weight gradients, the attention's dQ, dK and dV */
    {"conv1x1_8x256x56_grad", C, MP_CONV_POINTWISE, "Conv", {8, 256, 56, 56},
     {64, 256, 1, 1}, 1, 1, 0, 0, 0, NULL},
    {"conv1x1_8x960x7_grad", C, MP_CONV_POINTWISE, "Conv", {8, 960, 7, 7},
     {160, 960, 1, 1}, 1, 1, 0, 0, 0, NULL},
    {"conv3x3_8x128x28_grad", C, MP_CONV_SPATIAL, "Conv", {8, 128, 28, 28},
     {128, 128, 3, 3}, 1, 1, 0, 0, 0, NULL},
    {"conv3x3_8x64x56_grad", C, MP_CONV_SPATIAL, "Conv", {8, 64, 56, 56},
     {64, 64, 3, 3}, 1, 1, 0, 0, 0, NULL},
    {"dwconv3x3_8x144x56_grad", C, MP_CONV_DEPTHWISE, "Conv",
     {8, 144, 56, 56}, {144, 1, 3, 3}, 144, 1, 0, 0, 0, NULL},
    {"dwconv5x5_8x240x28_grad", C, MP_CONV_DEPTHWISE, "Conv",
     {8, 240, 28, 28}, {240, 1, 5, 5}, 240, 1, 0, 0, 0, NULL},
    {"dwconv3x3_8x672x14_grad", C, MP_CONV_DEPTHWISE, "Conv",
     {8, 672, 14, 14}, {672, 1, 3, 3}, 672, 1, 0, 0, 0, NULL},
    {"attention_8x12x197x64_grad", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     SDPA, {8, 12, 197, 64}, {0}, 1, 1, 0, 0, 0, NULL},
    {"attention_8x12x128x64_grad", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     SDPA, {8, 12, 128, 64}, {0}, 1, 1, 0, 0, 0, NULL},
    {"attention_8x16x1024x64_grad", MPV_CB_ATTENTION, MP_ATTN_LONG,
     SDPA, {8, 16, 1024, 64}, {0}, 1, 1, 0, 0, 0, NULL},
    /* ---- for the affine fits only (MPV_CB_FIT, FIT): each class at a small
     * size beside the large ones above, and the kernel families that
     * have no class figure of their own ---- */
    {"gemm_128", G, MP_GEMM_SMALL, "MatMul", {128, 128, 128, 0}, {0}, 1, 0,
     0, 1, 0, NULL},
    {"gemm_32x1024x1024", G, MP_GEMM_SKINNY, "MatMul", {32, 1024, 1024, 0},
     {0}, 1, FIT(0, 0, 0, NULL)},
    {"gemm_640", G, MP_GEMM_MEDIUM, "MatMul", {640, 640, 640, 0}, {0}, 1, 0,
     0, 1, 0, NULL},
    /* the smallest of the reference CNNs: a squeeze-and-excitation 1x1
     * on 1x1 maps, a narrow 3x3, MobileNet's last depthwise stage */
    {"conv1x1_8x480x1", C, MP_CONV_POINTWISE, "Conv", {8, 480, 1, 1},
     {20, 480, 1, 1}, 1, FIT(0, 0, 0, NULL)},
    {"conv3x3_8x32x28", C, MP_CONV_SPATIAL, "Conv", {8, 32, 28, 28},
     {32, 32, 3, 3}, 1, FIT(0, 0, 0, NULL)},
    {"dwconv3x3_8x960x7", C, MP_CONV_DEPTHWISE, "Conv", {8, 960, 7, 7},
     {960, 1, 3, 3}, 960, FIT(0, 0, 0, NULL)},
    {"conv1x1_8x480x1_grad", C, MP_CONV_POINTWISE, "Conv", {8, 480, 1, 1},
     {20, 480, 1, 1}, 1, FIT(1, 0, 0, NULL)},
    {"conv3x3_8x32x28_grad", C, MP_CONV_SPATIAL, "Conv", {8, 32, 28, 28},
     {32, 32, 3, 3}, 1, FIT(1, 0, 0, NULL)},
    {"dwconv3x3_8x960x7_grad", C, MP_CONV_DEPTHWISE, "Conv", {8, 960, 7, 7},
     {960, 1, 3, 3}, 960, FIT(1, 0, 0, NULL)},
    /* attention: Swin's 7x7 windows (49 tokens, head dim 32) at two
     * batches, a short BERT batch, GPT-2 medium at batch 2 */
    {"attention_512x3x49x32", MPV_CB_ATTENTION, MP_ATTN_SHORT,
     SDPA, {512, 3, 49, 32}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"attention_64x3x49x32", MPV_CB_ATTENTION, MP_ATTN_SHORT,
     SDPA, {64, 3, 49, 32}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"attention_2x12x128x64", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     SDPA, {2, 12, 128, 64}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"attention_2x16x1024x64", MPV_CB_ATTENTION, MP_ATTN_LONG,
     SDPA, {2, 16, 1024, 64}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"attention_512x3x49x32_grad", MPV_CB_ATTENTION, MP_ATTN_SHORT,
     SDPA, {512, 3, 49, 32}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"attention_64x3x49x32_grad", MPV_CB_ATTENTION, MP_ATTN_SHORT,
     SDPA, {64, 3, 49, 32}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"attention_2x12x128x64_grad", MPV_CB_ATTENTION, MP_ATTN_MEDIUM,
     SDPA, {2, 12, 128, 64}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"attention_2x16x1024x64_grad", MPV_CB_ATTENTION, MP_ATTN_LONG,
     SDPA, {2, 16, 1024, 64}, {0}, 1, FIT(1, 0, 0, NULL)},
    /* pointwise: small; the backward: ReLU's, a bias's (a reduction of
     * the output gradient to [768]), a squeeze-and-excitation scale's
     * (x [N, C, H, W] times s [N, C, 1, 1]: both gradients) */
    {"add_256x1024", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Add",
     {256, 1024, 0, 0}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"relu_4096x8192_grad", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Relu",
     {4096, 8192, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"relu_256x1024_grad", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Relu",
     {256, 1024, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"add_1024x768_grad", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Add",
     {1024, 768, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"mul_8x240x28x28_grad", MPV_CB_POINTWISE, MP_FAM_POINTWISE, "Mul",
     {8, 240, 28, 28}, {8, 240, 1, 1}, 1, FIT(1, 0, 0, NULL)},
    {"transpose_256x1024", MPV_CB_MOVE, MP_FAM_COPY, "Transpose",
     {256, 1024, 0, 0}, {0}, 1, FIT(0, 0, 0, NULL)},
    /* BatchNormalization in a training step (with its statistics) and
     * its backward: ResNet's 56x56, MobileNet's 7x7, EfficientNet's
     * 112x112 of few channels */
    {"bn_8x256x56", MPV_CB_REDUCE, MP_FAM_BATCHNORM, "BatchNormalization",
     {8, 256, 56, 56}, {0}, 1, FIT(0, 1, 0, NULL)},
    {"bn_8x960x7", MPV_CB_REDUCE, MP_FAM_BATCHNORM, "BatchNormalization",
     {8, 960, 7, 7}, {0}, 1, FIT(0, 1, 0, NULL)},
    {"bn_8x32x112", MPV_CB_REDUCE, MP_FAM_BATCHNORM, "BatchNormalization",
     {8, 32, 112, 112}, {0}, 1, FIT(0, 1, 0, NULL)},
    {"bn_8x256x56_grad", MPV_CB_REDUCE, MP_FAM_BATCHNORM,
     "BatchNormalization", {8, 256, 56, 56}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"bn_8x960x7_grad", MPV_CB_REDUCE, MP_FAM_BATCHNORM, "BatchNormalization",
     {8, 960, 7, 7}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"bn_8x32x112_grad", MPV_CB_REDUCE, MP_FAM_BATCHNORM,
     "BatchNormalization", {8, 32, 112, 112}, {0}, 1, FIT(1, 0, 0, NULL)},
    /* reductions to a small output: global pools (a classifier's 7x7, a
     * squeeze-and-excitation's 112x112), a mean over the last axis */
    {"gap_8x1280x7", MPV_CB_REDUCE, MP_FAM_REDUCTION, "GlobalAveragePool",
     {8, 1280, 7, 7}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"gap_8x32x112", MPV_CB_REDUCE, MP_FAM_REDUCTION, "GlobalAveragePool",
     {8, 32, 112, 112}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"reducemean_1024x768", MPV_CB_REDUCE, MP_FAM_REDUCTION, "ReduceMean",
     {1024, 768, 0, 0}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"gap_8x1280x7_grad", MPV_CB_REDUCE, MP_FAM_REDUCTION,
     "GlobalAveragePool", {8, 1280, 7, 7}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"gap_8x32x112_grad", MPV_CB_REDUCE, MP_FAM_REDUCTION,
     "GlobalAveragePool", {8, 32, 112, 112}, {0}, 1, FIT(1, 0, 0, NULL)},
    /* windowed pools: ResNet's stem max pool (3x3, stride 2) */
    {"maxpool_8x64x112", MPV_CB_REDUCE, MP_FAM_REDUCE, "MaxPool",
     {8, 64, 112, 112}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"maxpool_8x64x28", MPV_CB_REDUCE, MP_FAM_REDUCE, "MaxPool",
     {8, 64, 28, 28}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"maxpool_8x64x112_grad", MPV_CB_REDUCE, MP_FAM_REDUCE, "MaxPool",
     {8, 64, 112, 112}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"maxpool_8x64x28_grad", MPV_CB_REDUCE, MP_FAM_REDUCE, "MaxPool",
     {8, 64, 28, 28}, {0}, 1, FIT(1, 0, 0, NULL)},
    /* softmax and layer norm over rows: BERT's tokens, attention-sized
     * rows */
    {"softmax_12288x128", MPV_CB_REDUCE, MP_FAM_ROWNORM, "Softmax",
     {12288, 128, 0, 0}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"layernorm_1024x768", MPV_CB_REDUCE, MP_FAM_ROWNORM,
     "LayerNormalization", {1024, 768, 0, 0}, {0}, 1, FIT(0, 0, 0, NULL)},
    {"layernorm_1024x768_grad", MPV_CB_REDUCE, MP_FAM_ROWNORM,
     "LayerNormalization", {1024, 768, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"layernorm_8192x1024_grad", MPV_CB_REDUCE, MP_FAM_ROWNORM,
     "LayerNormalization", {8192, 1024, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    {"softmax_8192x1024_grad", MPV_CB_REDUCE, MP_FAM_ROWNORM, "Softmax",
     {8192, 1024, 0, 0}, {0}, 1, FIT(1, 0, 0, NULL)},
    /* optimizer steps of one parameter (x * w, w trained): a bias-sized
     * and a 4096 x 4096 one */
    {"sgd_1024", MPV_CB_POINTWISE, MP_FAM_SGD, "Mul", {1024, 0, 0, 0}, {0},
     1, FIT(0, 1, MP_OPTIM_SGD + 1, "SGD")},
    {"sgd_4096x4096", MPV_CB_POINTWISE, MP_FAM_SGD, "Mul",
     {4096, 4096, 0, 0}, {0}, 1, FIT(0, 1, MP_OPTIM_SGD + 1, "SGD")},
    {"adamw_1024", MPV_CB_POINTWISE, MP_FAM_ADAM, "Mul", {1024, 0, 0, 0},
     {0}, 1, FIT(0, 1, MP_OPTIM_ADAMW + 1, "AdamW")},
    {"adamw_4096x4096", MPV_CB_POINTWISE, MP_FAM_ADAM, "Mul",
     {4096, 4096, 0, 0}, {0}, 1, FIT(0, 1, MP_OPTIM_ADAMW + 1, "AdamW")},
};
#undef G
#undef C
#undef FIT
#undef SDPA
const size_t mpv_cal_n_benches =
    sizeof mpv_cal_benches / sizeof mpv_cal_benches[0];

int mpv_cal_bench_memory(const mpv_cal_bench *b)
{
    return b->kind != MPV_CB_GEMM && b->kind != MPV_CB_CONV &&
           b->kind != MPV_CB_ATTENTION;
}

static mp_status tensor_dt(mp_graph *g, const char *name, mp_dtype dt,
                           mp_tensor_kind kind, int rank,
                           const int64_t *dims, uint32_t *id)
{
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = dt;
    d.rank = rank;
    d.dims = dims;
    d.kind = kind;
    return mp_graph_add_tensor(g, &d, id);
}

static mp_status tensor(mp_graph *g, const char *name, mp_tensor_kind kind,
                        int rank, const int64_t *dims, uint32_t *id)
{
    return tensor_dt(g, name, MP_DTYPE_FLOAT32, kind, rank, dims, id);
}

/* A forward node `op` of in (n_in) into out, named name; its id in *id
 * (may be NULL). */
static mp_status node(mp_graph *g, const char *name, const char *op,
                      const char *domain, uint32_t *in, uint32_t n_in,
                      uint32_t *out, uint32_t *id)
{
    mp_node_desc nd;
    memset(&nd, 0, sizeof nd);
    nd.name = name;
    nd.op = op;
    nd.domain = domain;
    nd.inputs = in;
    nd.n_inputs = n_in;
    nd.outputs = out;
    nd.n_outputs = 1;
    nd.phase = MP_PHASE_FORWARD;
    return mp_graph_add_node(g, &nd, id);
}

/* A backward benchmark's operand: the input plus a bias weight over its
 * last dim, so that the training graph wants the operand's gradient (a
 * graph input gets none; attention has no weight of its own). *id: the
 * sum. */
static mp_status graded(mp_graph *g, const char *name, mp_dtype dt,
                        int rank, const int64_t *dims, uint32_t *id)
{
    char in_name[64], b_name[64], node_name[64];
    uint32_t in[2];
    snprintf(in_name, sizeof in_name, "%s_in", name);
    snprintf(b_name, sizeof b_name, "%s_bias", name);
    snprintf(node_name, sizeof node_name, "%s_add", name);
    mp_status st = tensor_dt(g, in_name, dt, MP_KIND_INPUT, rank, dims,
                             &in[0]);
    if (!st)
        st = tensor_dt(g, b_name, dt, MP_KIND_WEIGHT, 1, dims + rank - 1,
                       &in[1]);
    if (!st)
        st = tensor_dt(g, name, dt, MP_KIND_ACTIVATION, rank, dims, id);
    return st ? st : node(g, node_name, "Add", NULL, in, 2, id, NULL);
}

/* an operand of b: an input, or for a backward benchmark an activation
 * requiring its gradient */
static mp_status operand(mp_graph *g, const mpv_cal_bench *b, mp_dtype dt,
                         const char *name, int rank, const int64_t *dims,
                         uint32_t *id)
{
    return b->grad ? graded(g, name, dt, rank, dims, id)
                   : tensor_dt(g, name, dt, MP_KIND_INPUT, rank, dims, id);
}

/* The rank of a shape of up to 4 dims, 0 after the last */
static int shape_rank(const int64_t *d)
{
    int r = 0;
    while (r < 4 && d[r] > 0)
        r++;
    return r;
}

/* The inputs of a memory-bound benchmark's node (float32), x of shape a:
 * Add: a second input of x's shape, or for a backward benchmark a bias
 * weight over the last dim (its gradient a reduction); Mul: a weight of
 * shape b (a's when b is empty); LayerNormalization: scale and bias over
 * the last dim; BatchNormalization: scale, bias, running mean and
 * variance over the channels. x requires its gradient in a backward
 * benchmark (but the bias's). */
static mp_status memory_operands(mp_graph *g, const mpv_cal_bench *b,
                                 uint32_t *in, uint32_t *nin)
{
    int rank = shape_rank(b->a), wr = shape_rank(b->b);
    int64_t last[1] = {b->a[rank - 1]}, chan[1] = {rank > 1 ? b->a[1] : 1};
    int bias = b->grad && strcmp(b->op, "Add") == 0;
    mp_status st = bias ? tensor(g, "x", MP_KIND_INPUT, rank, b->a, &in[0])
                        : operand(g, b, MP_DTYPE_FLOAT32, "x", rank, b->a,
                                  &in[0]);
    *nin = 1;
    if (st)
        return st;
    if (strcmp(b->op, "Add") == 0) {
        *nin = 2;
        return bias ? tensor(g, "bias", MP_KIND_WEIGHT, 1, last, &in[1])
                    : tensor(g, "x2", MP_KIND_INPUT, rank, b->a, &in[1]);
    }
    if (strcmp(b->op, "Mul") == 0) {
        *nin = 2;
        return tensor(g, "w", MP_KIND_WEIGHT, wr ? wr : rank,
                      wr ? b->b : b->a, &in[1]);
    }
    if (strcmp(b->op, "LayerNormalization") == 0) {
        *nin = 3;
        if ((st = tensor(g, "scale", MP_KIND_WEIGHT, 1, last, &in[1])))
            return st;
        return tensor(g, "bias", MP_KIND_WEIGHT, 1, last, &in[2]);
    }
    if (strcmp(b->op, "BatchNormalization") == 0) {
        static const char *const nm[4] = {"scale", "bias", "mean", "var"};
        *nin = 5;
        for (int k = 0; k < 4 && !st; k++)
            st = tensor(g, nm[k], MP_KIND_WEIGHT, 1, chan, &in[1 + k]);
    }
    return st;
}

/* The one-node graph of b (not finalized), its GEMM, convolution or
 * attention operands of dtype dt (the other benchmarks: float32). */
static mp_status bench_graph(mp_graph *g, const mpv_cal_bench *b,
                             mp_dtype dt)
{
    uint32_t in[5], y, nid;
    uint32_t nin = 1;
    mp_status st;
    int64_t x2[2] = {b->a[0], b->a[1]}, w2[2] = {b->a[1], b->a[2]};
    switch (b->kind) {
    case MPV_CB_GEMM:
        if ((st = tensor_dt(g, "x", dt, MP_KIND_INPUT, 2, x2, &in[0])) ||
            (st = tensor_dt(g, "w", dt, MP_KIND_WEIGHT, 2, w2, &in[1])))
            return st;
        nin = 2;
        break;
    case MPV_CB_CONV:
        if ((st = operand(g, b, dt, "x", 4, b->a, &in[0])) ||
            (st = tensor_dt(g, "w", dt, MP_KIND_WEIGHT, 4, b->b, &in[1])))
            return st;
        nin = 2;
        break;
    case MPV_CB_ATTENTION: {
        int64_t kt[4] = {b->a[0], b->a[1], b->a[3], b->a[2]};
        if ((st = operand(g, b, dt, "q", 4, b->a, &in[0])) ||
            (st = operand(g, b, dt, "kT", 4, kt, &in[1])) ||
            (st = operand(g, b, dt, "v", 4, b->a, &in[2])))
            return st;
        nin = 3;
        break;
    }
    default:
        if ((st = memory_operands(g, b, in, &nin)))
            return st;
        break;
    }
    if ((st = tensor_dt(g, "y",
                        b->kind == MPV_CB_GEMM || b->kind == MPV_CB_CONV ||
                                b->kind == MPV_CB_ATTENTION
                            ? dt
                            : MP_DTYPE_FLOAT32,
                        MP_KIND_ACTIVATION, -1, NULL, &y)))
        return st;
    if ((st = node(g, b->name, b->op,
                   b->kind == MPV_CB_ATTENTION ? "memplan" : NULL, in, nin,
                   &y, &nid)))
        return st;
    if (b->kind == MPV_CB_CONV) {
        int64_t ks[2] = {b->b[2], b->b[3]};
        int64_t pads[4] = {b->b[2] / 2, b->b[3] / 2, b->b[2] / 2,
                           b->b[3] / 2};
        if ((st = mp_graph_set_attr_ints(g, nid, "kernel_shape", ks, 2)) ||
            (st = mp_graph_set_attr_ints(g, nid, "pads", pads, 4)) ||
            (b->group > 1 &&
             (st = mp_graph_set_attr_int(g, nid, "group", b->group))))
            return st;
    } else if (strcmp(b->op, "ReduceSum") == 0 ||
               strcmp(b->op, "ReduceMean") == 0) {
        int64_t axes[1] = {1};
        if ((st = mp_graph_set_attr_ints(g, nid, "axes", axes, 1)))
            return st;
    } else if (strcmp(b->op, "MaxPool") == 0) {
        int64_t ks[2] = {3, 3}, strides[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
        if ((st = mp_graph_set_attr_ints(g, nid, "kernel_shape", ks, 2)) ||
            (st = mp_graph_set_attr_ints(g, nid, "strides", strides, 2)) ||
            (st = mp_graph_set_attr_ints(g, nid, "pads", pads, 4)))
            return st;
    } else if (strcmp(b->op, "Softmax") == 0 ||
               strcmp(b->op, "LayerNormalization") == 0) {
        if ((st = mp_graph_set_attr_int(g, nid, "axis", -1)))
            return st;
    } else if (strcmp(b->op, "Transpose") == 0) {
        int64_t perm[2] = {1, 0};
        if ((st = mp_graph_set_attr_ints(g, nid, "perm", perm, 2)))
            return st;
    }
    if ((st = mp_graph_mark_output(g, y)))
        return st;
    return mp_graph_finalize(g);
}

mp_status mpv_cal_case_make(mp_ctx *ctx, const mpv_cal_bench *b,
                            mpv_cal_case *c)
{
    return mpv_cal_case_make_dt(ctx, b, MP_DTYPE_FLOAT32, c);
}

mp_status mpv_cal_case_make_dt(mp_ctx *ctx, const mpv_cal_bench *b,
                               mp_dtype dt, mpv_cal_case *c)
{
    memset(c, 0, sizeof *c);
    if (b->timed)
        snprintf(c->timed, sizeof c->timed, "%s", b->timed);
    else
        snprintf(c->timed, sizeof c->timed, "%s%s", b->op,
                 b->grad ? "Grad" : "");
    mp_status st = mp_graph_create(ctx, &c->fwd);
    if (!st)
        st = bench_graph(c->fwd, b, dt);
    if (!st && (b->grad || b->train)) {
        /* one training step in fp32 (the benchmark's optimizer, else
         * the default), as validate --train runs it */
        mp_train_options to;
        mp_train_options_init(&to);
        if (b->optim)
            to.optimizer = (mp_optimizer)(b->optim - 1);
        st = mp_train_graph(c->fwd, &to, &c->g, NULL);
    } else if (!st) {
        c->g = c->fwd;
        c->fwd = NULL;
    }
    mp_plan_options po;
    mp_plan_options_init(&po);
    if (!st)
        st = mp_plan_create(c->g, &po, &c->plan);
    if (!st)
        st = mpv_program_from_plan(c->g, c->plan, &c->prog);
    /* flops and bytes of the nodes timed, as the cost model counts them */
    mp_device d;
    memset(&d, 0, sizeof d);
    d.flops_fp32 = 1;
    d.mem_bw = 1;
    uint32_t n_timed = 0;
    for (uint32_t i = 0; !st && i < mp_graph_num_nodes(c->g); i++) {
        mp_node_info ni;
        mp_op_cost k;
        if ((st = mp_graph_node_info(c->g, i, &ni)) ||
            strcmp(ni.op, c->timed) != 0)
            continue;
        if (!(st = mp_node_estimate(c->g, i, &d, &k))) {
            c->flops += k.flops;
            c->bytes += k.bytes;
            n_timed++;
        }
    }
    if (!st && !n_timed)
        st = mp__err(ctx, MP_ERR_INTERNAL, "calibrate: %s: no %s node",
                     b->name, c->timed);
    if (st)
        mpv_cal_case_free(c);
    return st;
}

/* x [2, 8] through `layers` Linear + ReLU layers (MatMul, Add of a bias,
 * Relu), the output their last */
static mp_status tiny_chain(mp_graph *g, int layers)
{
    int64_t xd[2] = {2, 8}, wd[2] = {8, 8}, bd[1] = {8};
    uint32_t x;
    mp_status st = tensor(g, "x", MP_KIND_INPUT, 2, xd, &x);
    for (int i = 0; i < layers && !st; i++) {
        char nm[6][32];
        static const char *const fmt[6] = {"w%d", "b%d", "h%d", "a%d",
                                           "r%d", "l%d"};
        for (int k = 0; k < 6; k++)
            snprintf(nm[k], sizeof nm[k], fmt[k], i);
        uint32_t w, b, h, a, r;
        if ((st = tensor(g, nm[0], MP_KIND_WEIGHT, 2, wd, &w)) ||
            (st = tensor(g, nm[1], MP_KIND_WEIGHT, 1, bd, &b)) ||
            (st = tensor(g, nm[2], MP_KIND_ACTIVATION, 2, xd, &h)) ||
            (st = tensor(g, nm[3], MP_KIND_ACTIVATION, 2, xd, &a)) ||
            (st = tensor(g, nm[4], MP_KIND_ACTIVATION, 2, xd, &r)))
            break;
        const char *ops[3] = {"MatMul", "Add", "Relu"};
        uint32_t ins[3][2] = {{x, w}, {h, b}, {a, 0}}, outs[3] = {h, a, r};
        for (int k = 0; k < 3 && !st; k++) {
            char nn[40];
            snprintf(nn, sizeof nn, "%s/%s", nm[5], ops[k]);
            st = node(g, nn, ops[k], NULL, ins[k], k == 2 ? 1 : 2, &outs[k],
                      NULL);
        }
        x = r;
    }
    if (!st)
        st = mp_graph_mark_output(g, x);
    return st ? st : mp_graph_finalize(g);
}

mp_status mpv_cal_launch_case(mp_ctx *ctx, mpv_cal_case *c)
{
    memset(c, 0, sizeof *c);
    mp_status st = mp_graph_create(ctx, &c->fwd);
    if (!st)
        st = tiny_chain(c->fwd, 16);
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    if (!st)
        st = mp_train_graph(c->fwd, &to, &c->g, NULL);
    mp_plan_options po;
    mp_plan_options_init(&po);
    if (!st)
        st = mp_plan_create(c->g, &po, &c->plan);
    if (!st)
        st = mpv_program_from_plan(c->g, c->plan, &c->prog);
    if (st)
        mpv_cal_case_free(c);
    return st;
}

const char *mpv_cal_case_synthetic(const mpv_cal_case *c)
{
    for (uint32_t i = 0; i < mp_graph_num_nodes(c->g); i++) {
        mp_node_info ni;
        if (mp_graph_node_info(c->g, i, &ni) == MP_OK &&
            strcmp(ni.op, c->timed) == 0 && c->prog->nodes[i].synthetic)
            return c->prog->nodes[i].why ? c->prog->nodes[i].why : "";
    }
    return NULL;
}

void mpv_cal_case_free(mpv_cal_case *c)
{
    mpv_program_destroy(c->prog);
    mp_plan_destroy(c->plan);
    mp_graph_destroy(c->g);
    mp_graph_destroy(c->fwd);
    memset(c, 0, sizeof *c);
}

/* ---- the profile ------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* work / the time less the launch overhead (at least a tenth of the
 * time): what the cost model, which adds the overhead, needs to give the
 * time back */
static double rate(double work, double s, double launch)
{
    double t = s - launch;
    if (t < 0.1 * s)
        t = 0.1 * s;
    return s > 0 ? work / t : 0;
}

/* The cost of one node beside its work: an empty kernel's launch, or
 * where larger the executor's time per node when the host is the bound */
static double overhead(const mpv_cal_meas *m)
{
    return m->node_s > m->launch_s ? m->node_s : m->launch_s;
}

/* The median rate of the benchmarks of kind and class (cls < 0: any),
 * forward or backward (grad), from times t (per benchmark, < 0
 * unmeasured); 0 when none was measured. */
static double class_rate(const mpv_cal_meas *m, const double *t, int kind,
                         int cls, int grad, const double *work)
{
    double r[64];
    size_t n = 0;
    for (size_t i = 0; i < mpv_cal_n_benches && n < 64; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        if (b->kind == kind && (cls < 0 || b->cls == cls) &&
            !b->grad == !grad && b->use != MPV_CB_FIT && t[i] > 0)
            r[n++] = rate(work[i], t[i], overhead(m));
    }
    if (!n)
        return 0;
    qsort(r, n, sizeof *r, cmp_d);
    return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

mp_cal_fit mpv_cal_fit(const double *work, const double *t, size_t n,
                       double overhead)
{
    mp_cal_fit f = {0, 0};
    double sw = 0, st = 0, wlo = 0, whi = 0, r[64];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] > 0 && work[i] > 0) {
            sw = work[i] > sw ? work[i] : sw;
            st = t[i] > st ? t[i] : st;
            wlo = !m || work[i] < wlo ? work[i] : wlo;
            whi = work[i] > whi ? work[i] : whi;
            if (m < 64)
                r[m] = rate(work[i], t[i], overhead);
            m++;
        }
    if (!m)
        return f;
    /* the least squares of (fixed + work / rate - t) / t, in units of the
     * largest work and time: with p = 1 / t and q = work / t, minimize
     * sum (a p + b q - 1)^2 */
    double spp = 0, spq = 0, sqq = 0, sp = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] > 0 && work[i] > 0) {
            double p = st / t[i], q = work[i] / sw * p;
            spp += p * p;
            spq += p * q;
            sqq += q * q;
            sp += p;
            sq += q;
        }
    double det = spp * sqq - spq * spq, a = -1, bs = -1;
    if (whi > wlo * (1 + 1e-9) && det > 1e-12 * spp * sqq) {
        a = (sp * sqq - sq * spq) / det;
        bs = (spp * sq - spq * sp) / det;
        if (a < 0) { /* through the origin */
            a = 0;
            bs = sq / sqq;
        }
    }
    if (bs > 0) {
        f.fixed = a * st;
        f.rate = sw / (bs * st);
        return f;
    }
    /* one work: the class figure's rule */
    size_t k = m < 64 ? m : 64;
    qsort(r, k, sizeof *r, cmp_d);
    f.rate = k % 2 ? r[k / 2] : (r[k / 2 - 1] + r[k / 2]) / 2;
    f.fixed = overhead;
    return f;
}

static double unit(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

static void num(mp__jw *w, const char *key, double v)
{
    mp__jw_key(w, key);
    mp__jw_double(w, isfinite(v) && v > 0 ? v : 0, MP__JW_ROUNDTRIP, key);
}

/* key: {"float32": {"pointwise": r[0][0], "spatial": r[0][1],
 * "depthwise": r[0][2]}, "bfloat16": {... r[1] ...}} (bfloat16 when
 * measured) */
static void conv_json(mp__jw *w, const char *key,
                      double (*r)[MP_CONV_CLASSES])
{
    static const char *const ccls[] = {"pointwise", "spatial", "depthwise"};
    mp__jw_key(w, key);
    mp__jw_object(w, true);
    for (int d = 0; d < 2; d++) {
        if (d && r[1][0] <= 0 && r[1][1] <= 0 && r[1][2] <= 0)
            break;
        mp__jw_key(w, d ? "bfloat16" : "float32");
        mp__jw_object(w, false);
        for (int k = 0; k < MP_CONV_CLASSES; k++)
            num(w, ccls[k], r[d][k]);
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

/* key: {"float32": v[0], "bfloat16": v[1]} (bfloat16 when measured) */
static void dt_json(mp__jw *w, const char *key, const double *v)
{
    mp__jw_key(w, key);
    mp__jw_object(w, false);
    num(w, "float32", v[0]);
    if (v[1] > 0)
        num(w, "bfloat16", v[1]);
    mp__jw_end(w);
}

/* The affine fit of the benchmarks of kind (a compute kind; < 0: the
 * memory-bound kinds), class cls and pass grad, from times t: work the
 * FLOPs of a compute kind, else the bytes. */
static mp_cal_fit group_fit(const mpv_cal_meas *m, const double *t,
                            int kind, int cls, int grad, const double *flops,
                            const double *bytes)
{
    double w[64], tt[64];
    size_t n = 0;
    for (size_t i = 0; i < mpv_cal_n_benches && n < 64; i++) {
        const mpv_cal_bench *b = &mpv_cal_benches[i];
        int memory = mpv_cal_bench_memory(b);
        if ((kind < 0 ? memory : b->kind == kind) && b->cls == cls &&
            !b->grad == !grad && b->use != MPV_CB_FIGURE && t[i] > 0) {
            w[n] = memory ? bytes[i] : flops[i];
            tt[n++] = t[i];
        }
    }
    return mpv_cal_fit(w, tt, n, overhead(m));
}

/* Every class's fit from the measurements, into c's *_fit tables. */
static void all_fits(const mpv_cal_meas *m, const double *flops,
                     const double *bytes, mp_device_calibration *c)
{
    for (int d = 0; d < 2; d++) {
        const double *t = d ? m->bench16_s : m->bench_s;
        for (int k = 0; k < MP_GEMM_CLASSES; k++)
            c->gemm_fit[d][k] = group_fit(m, t, MPV_CB_GEMM, k, 0, flops,
                                          bytes);
        for (int g = 0; g < 2; g++) {
            for (int k = 0; k < MP_CONV_CLASSES; k++)
                c->conv_fit[d][k][g] = group_fit(m, t, MPV_CB_CONV, k, g,
                                                 flops, bytes);
            for (int k = 0; k < MP_ATTN_CLASSES; k++)
                c->attention_fit[d][k][g] = group_fit(
                    m, t, MPV_CB_ATTENTION, k, g, flops, bytes);
        }
    }
    for (int f = 0; f < MP_FAM_CLASSES; f++)
        for (int g = 0; g < 2; g++)
            c->family_fit[f][g] = group_fit(m, m->bench_s, -1, f, g, flops,
                                            bytes);
}

/* key: {"rate": ..., "fixed": ...} when fitted */
static void fit_json(mp__jw *w, const char *key, const mp_cal_fit *f)
{
    if (f->rate <= 0)
        return;
    mp__jw_key(w, key);
    mp__jw_object(w, false);
    num(w, "rate", f->rate);
    mp__jw_key(w, "fixed");
    mp__jw_double(w, isfinite(f->fixed) && f->fixed > 0 ? f->fixed : 0,
                  MP__JW_ROUNDTRIP, "fixed");
    mp__jw_end(w);
}

/* key: {DTYPE: {CLASS: fit, ...}, ...}, the fit of dtype d and class k
 * at base[d * dt_stride + k * cls_stride]; the dtypes and classes fitted
 * only, nothing when none is */
static void fit_table_json(mp__jw *w, const char *key,
                           const char *const *names, int n,
                           const mp_cal_fit *base, size_t dt_stride,
                           size_t cls_stride)
{
    int any[2] = {0, 0};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < n; k++)
            any[d] |= base[d * dt_stride + k * cls_stride].rate > 0;
    if (!any[0] && !any[1])
        return;
    mp__jw_key(w, key);
    mp__jw_object(w, true);
    for (int d = 0; d < 2; d++) {
        if (!any[d])
            continue;
        mp__jw_key(w, d ? "bfloat16" : "float32");
        mp__jw_object(w, true);
        for (int k = 0; k < n; k++)
            fit_json(w, names[k], &base[d * dt_stride + k * cls_stride]);
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

/* "affine": every fit made (docs/cost-model.md) */
static void affine_json(mp__jw *w, const mp_device_calibration *c)
{
    static const char *const gcls[] = {"skinny", "small", "medium",
                                       "large"};
    static const char *const ccls[] = {"pointwise", "spatial", "depthwise"};
    static const char *const acls[] = {"short", "medium", "long"};
    static const char *const fam[] = {"pointwise", "reduce", "copy",
                                      "batchnorm", "reduction", "rownorm",
                                      "sgd", "adam"};
    char key[48];
    mp__jw_key(w, "affine");
    mp__jw_object(w, true);
    fit_table_json(w, "gemm", gcls, MP_GEMM_CLASSES, &c->gemm_fit[0][0],
                   MP_GEMM_CLASSES, 1);
    for (int g = 0; g < 2; g++) {
        fit_table_json(w, g ? "conv_grad" : "conv", ccls, MP_CONV_CLASSES,
                       &c->conv_fit[0][0][g], 2 * MP_CONV_CLASSES, 2);
        fit_table_json(w, g ? "attention_grad" : "attention", acls,
                       MP_ATTN_CLASSES, &c->attention_fit[0][0][g],
                       2 * MP_ATTN_CLASSES, 2);
    }
    for (int g = 0; g < 2; g++)
        for (int f = 0; f < MP_FAM_CLASSES; f++) {
            if (g && (f == MP_FAM_SGD || f == MP_FAM_ADAM))
                continue; /* no backward */
            snprintf(key, sizeof key, "%s%s", fam[f], g ? "_grad" : "");
            fit_json(w, key, &c->family_fit[f][g]);
        }
    mp__jw_end(w);
}

mp_status mpv_cal_profile_json(mp_ctx *ctx, const char *name,
                               const mpv_cal_meas *m, char **text)
{
    static const char *const gcls[] = {"skinny", "small", "medium",
                                       "large"};
    size_t nb = mpv_cal_n_benches;
    double *flops = calloc(nb, sizeof *flops), *bytes =
        calloc(nb, sizeof *bytes);
    double gemm[2][MP_GEMM_CLASSES], conv[2][MP_CONV_CLASSES],
        conv_grad[2][MP_CONV_CLASSES], att[2], att_grad[2], peak[2] = {0, 0};
    mp_status st = MP_OK;
    if (!flops || !bytes) {
        free(flops);
        free(bytes);
        return MP_ERR_NOMEM;
    }
    mpv_cal_case c;
    for (size_t i = 0; i < nb && !st; i++)
        if (!(st = mpv_cal_case_make(ctx, &mpv_cal_benches[i], &c))) {
            flops[i] = c.flops;
            bytes[i] = c.bytes;
            mpv_cal_case_free(&c);
        }
    /* the peak: the fastest product of those that take at least twice the
     * launch overhead (a small product less the overhead can seem faster
     * than the device: GPU run 41a's 7.4 us made an 8 us bf16 GEMM of
     * 1024 read 2.1 PFLOP/s); no class is faster than it */
    for (size_t i = 0; i < nb; i++)
        for (int d = 0; d < 2; d++) {
            double t = d ? m->bench16_s[i] : m->bench_s[i];
            double r = rate(flops[i], t, overhead(m));
            if (mpv_cal_benches[i].kind == MPV_CB_GEMM && t > 0 &&
                t >= 2 * overhead(m) && r > peak[d])
                peak[d] = r;
        }
    for (int k = 0; k < MP_GEMM_CLASSES; k++)
        for (int d = 0; d < 2; d++) {
            gemm[d][k] = class_rate(m, d ? m->bench16_s : m->bench_s,
                                    MPV_CB_GEMM, k, 0, flops);
            if (gemm[d][k] > peak[d])
                gemm[d][k] = peak[d];
        }
    for (int d = 0; d < 2; d++) {
        const double *t = d ? m->bench16_s : m->bench_s;
        for (int k = 0; k < MP_CONV_CLASSES; k++) {
            conv[d][k] = class_rate(m, t, MPV_CB_CONV, k, 0, flops);
            conv_grad[d][k] = class_rate(m, t, MPV_CB_CONV, k, 1, flops);
        }
        att[d] = class_rate(m, t, MPV_CB_ATTENTION, -1, 0, flops);
        att_grad[d] = class_rate(m, t, MPV_CB_ATTENTION, -1, 1, flops);
    }
    double ov = (unit(m->overlap_h2d) + unit(m->overlap_d2h)) / 2;

    mp__jw w;
    mp__jw_init(&w, ctx, 0, 0);
    mp__jw_object(&w, true);
    mp__jw_key(&w, "version");
    mp__jw_i64(&w, 1);
    mp__jw_key(&w, "name");
    mp__jw_string(&w, name);
    mp__jw_key(&w, "gpu");
    mp__jw_string(&w, m->gpu);
    mp__jw_key(&w, "flops");
    mp__jw_object(&w, false);
    num(&w, "float32", peak[0]);
    num(&w, "float16", peak[1]);
    num(&w, "bfloat16", peak[1]);
    mp__jw_end(&w);
    num(&w, "memory_bandwidth", m->d2d_bw);
    mp__jw_key(&w, "memory_bytes");
    mp__jw_u64(&w, m->mem_bytes);
    num(&w, "h2d_bandwidth", m->h2d_bw);
    num(&w, "d2h_bandwidth", m->d2h_bw);
    num(&w, "link_latency", m->link_latency);
    mp__jw_key(&w, "copy_engines");
    mp__jw_i64(&w, m->copy_engines >= 1 && m->copy_engines <= 64
                       ? m->copy_engines
                       : 1);
    num(&w, "kernel_overhead", overhead(m));
    mp__jw_key(&w, "calibration");
    mp__jw_object(&w, true);
    mp__jw_key(&w, "gemm");
    mp__jw_object(&w, true);
    for (int d = 0; d < 2; d++) {
        mp__jw_key(&w, d ? "bfloat16" : "float32");
        mp__jw_object(&w, false);
        for (int k = 0; k < MP_GEMM_CLASSES; k++)
            num(&w, gcls[k], gemm[d][k]);
        mp__jw_end(&w);
    }
    mp__jw_end(&w);
    conv_json(&w, "conv", conv);
    dt_json(&w, "attention", att);
    conv_json(&w, "conv_grad", conv_grad);
    dt_json(&w, "attention_grad", att_grad);
    num(&w, "pointwise_bandwidth",
        class_rate(m, m->bench_s, MPV_CB_POINTWISE, -1, 0, bytes));
    num(&w, "reduce_bandwidth",
        class_rate(m, m->bench_s, MPV_CB_REDUCE, -1, 0, bytes));
    num(&w, "copy_bandwidth",
        class_rate(m, m->bench_s, MPV_CB_MOVE, -1, 0, bytes));
    num(&w, "copy_compute_overlap", ov);
    mp_device_calibration fits;
    memset(&fits, 0, sizeof fits);
    all_fits(m, flops, bytes, &fits);
    affine_json(&w, &fits);
    /* what was measured, for a reader (the profile reader skips x-) */
    mp__jw_key(&w, "x-measured");
    mp__jw_object(&w, true);
    mp__jw_key(&w, "repetitions");
    mp__jw_i64(&w, m->reps);
    num(&w, "empty_kernel", m->launch_s);
    num(&w, "node", m->node_s);
    num(&w, "overlap_h2d", m->overlap_h2d);
    num(&w, "overlap_d2h", m->overlap_d2h);
    mp__jw_key(&w, "benchmarks");
    mp__jw_array(&w, true);
    for (size_t i = 0; i < nb; i++) {
        mp__jw_object(&w, false);
        mp__jw_key(&w, "name");
        mp__jw_string(&w, mpv_cal_benches[i].name);
        num(&w, "flops", flops[i]);
        num(&w, "bytes", bytes[i]);
        if (m->bench_s[i] > 0)
            num(&w, "seconds", m->bench_s[i]);
        else
            mp__jw_key(&w, "seconds"), mp__jw_null(&w);
        if (m->bench16_s[i] > 0)
            num(&w, "seconds_bf16", m->bench16_s[i]);
        mp__jw_end(&w);
    }
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_raw(&w, "\n");
    free(flops);
    free(bytes);
    if (st) {
        char *t = NULL;
        if (mp__jw_done(&w, &t, NULL) == MP_OK)
            mp__dealloc(ctx, t);
        return st;
    }
    return mp__jw_done(&w, text, NULL);
}

void mpv_cal_text_free(mp_ctx *ctx, char *text)
{
    mp__dealloc(ctx, text);
}
