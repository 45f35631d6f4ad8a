/* conv_direct.h - the direct convolution passes of MPV_L_CONV_DNN, one
 * output element at a time (a fixed order of additions, no workspace):
 * the executor's kernels where cuDNN cannot run a pass (conv.cu), and the
 * host tests (tests/test_validate_host.c) call the same functions. */
#ifndef MEMPLAN_VALIDATE_CONV_DIRECT_H
#define MEMPLAN_VALIDATE_CONV_DIRECT_H

#include "validate.h"

#ifdef __CUDACC__
#define MPV_HD __host__ __device__
#else
#define MPV_HD
#endif

/* y[i], i = ((n * m + mo) * oh + r) * ow + q: the sum over the group's
 * input channels and the kernel taps inside the input of x w, plus
 * b[mo] (b may be NULL) */
static inline MPV_HD float mpv_conv_fwd_at(const mpv_launch *l,
                                           const float *x, const float *w,
                                           const float *b, int64_t i)
{
    const int64_t C = l->p.dnn.c, H = l->p.dnn.h, W = l->p.dnn.w,
                  M = l->p.dnn.m, OH = l->p.dnn.oh, OW = l->p.dnn.ow,
                  KH = l->p.dnn.kh, KW = l->p.dnn.kw;
    const int64_t cg = C / l->p.dnn.g, mg = M / l->p.dnn.g;
    int64_t ow = i % OW, t = i / OW;
    int64_t oh = t % OH;
    t /= OH;
    int64_t m = t % M, n = t / M, c0 = (m / mg) * cg;
    float acc = 0.f;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = oh * l->p.dnn.sh - l->p.dnn.pt + kh * l->p.dnn.dh;
            if (ih < 0 || ih >= H)
                continue;
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t iw = ow * l->p.dnn.sw - l->p.dnn.pl + kw * l->p.dnn.dw;
                if (iw < 0 || iw >= W)
                    continue;
                acc += x[((n * C + c0 + c) * H + ih) * W + iw] *
                       w[((m * cg + c) * KH + kh) * KW + kw];
            }
        }
    return b ? acc + b[m] : acc;
}

/* dx[i], i = ((n * c + ci) * h + ih) * w + iw: the sum over the group's
 * output channels and the taps whose window holds (ih, iw) of dy w */
static inline MPV_HD float mpv_conv_bwd_data_at(const mpv_launch *l,
                                                const float *dy,
                                                const float *w, int64_t i)
{
    const int64_t C = l->p.dnn.c, H = l->p.dnn.h, W = l->p.dnn.w,
                  M = l->p.dnn.m, OH = l->p.dnn.oh, OW = l->p.dnn.ow,
                  KH = l->p.dnn.kh, KW = l->p.dnn.kw, SH = l->p.dnn.sh,
                  SW = l->p.dnn.sw;
    const int64_t cg = C / l->p.dnn.g, mg = M / l->p.dnn.g;
    int64_t iw = i % W, t = i / W;
    int64_t ih = t % H;
    t /= H;
    int64_t c = t % C, n = t / C, m0 = (c / cg) * mg, cl = c % cg;
    float acc = 0.f;
    for (int64_t mm = 0; mm < mg; mm++)
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t th = ih + l->p.dnn.pt - kh * l->p.dnn.dh;
            if (th < 0 || th % SH || th / SH >= OH)
                continue;
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t tw = iw + l->p.dnn.pl - kw * l->p.dnn.dw;
                if (tw < 0 || tw % SW || tw / SW >= OW)
                    continue;
                int64_t m = m0 + mm;
                acc += dy[((n * M + m) * OH + th / SH) * OW + tw / SW] *
                       w[((m * cg + cl) * KH + kh) * KW + kw];
            }
        }
    return acc;
}

/* dw[i], i = ((mo * (c / g) + cl) * kh + r) * kw + q: the sum over the
 * batch and the output positions whose tap lies inside the input of
 * dy x */
static inline MPV_HD float mpv_conv_bwd_filter_at(const mpv_launch *l,
                                                  const float *dy,
                                                  const float *x, int64_t i)
{
    const int64_t C = l->p.dnn.c, H = l->p.dnn.h, W = l->p.dnn.w,
                  M = l->p.dnn.m, OH = l->p.dnn.oh, OW = l->p.dnn.ow,
                  KH = l->p.dnn.kh, KW = l->p.dnn.kw;
    const int64_t cg = C / l->p.dnn.g, mg = M / l->p.dnn.g;
    int64_t kw = i % KW, t = i / KW;
    int64_t kh = t % KH;
    t /= KH;
    int64_t cl = t % cg, m = t / cg, c = (m / mg) * cg + cl;
    float acc = 0.f;
    for (int64_t n = 0; n < l->p.dnn.n; n++)
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t ih = oh * l->p.dnn.sh - l->p.dnn.pt + kh * l->p.dnn.dh;
            if (ih < 0 || ih >= H)
                continue;
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t iw = ow * l->p.dnn.sw - l->p.dnn.pl + kw * l->p.dnn.dw;
                if (iw < 0 || iw >= W)
                    continue;
                acc += dy[((n * M + m) * OH + oh) * OW + ow] *
                       x[((n * C + c) * H + ih) * W + iw];
            }
        }
    return acc;
}

#endif
