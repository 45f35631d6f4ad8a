/* conv.h - convolution passes on cuDNN (conv.cu): the forward, the
 * input's and the weight's gradient of MPV_L_CONV_DNN launches over the
 * whole batch, each with the fastest deterministic algorithm whose
 * workspace is at most the launch's planned one, and direct kernels where
 * cuDNN cannot run a pass. CUDA C++, included by executor.cu and
 * calibrate.cu. */
#ifndef MEMPLAN_VALIDATE_CONV_H
#define MEMPLAN_VALIDATE_CONV_H

#include "kernels.h"

typedef struct mpv_dnn mpv_dnn;

/* 1 when the program has a MPV_L_CONV_DNN launch (cuDNN is needed). */
int mpv_dnn_needed(const mpv_program *p);
/* Creates the cuDNN handle; NULL or an error string. fp32: FMA
 * arithmetic only; else TF32 tensor cores are allowed (PyTorch's default
 * for convolutions, torch.backends.cudnn.allow_tf32). */
const char *mpv_dnn_create(mpv_dnn **out, int fp32);
/* Chooses every MPV_L_CONV_DNN launch's algorithm on stream s: of cuDNN's
 * heuristics' candidates (cudnnGet*Algorithm_v7, under TF32 then FMA
 * arithmetic, or FMA alone) that are deterministic, need at most the
 * launch's workspace and run, the fastest (a warm-up and a timed trial
 * call each, on scratch buffers freed again); else the direct kernel.
 * Done once, before anything is measured: the planned and the reference
 * runs use the same algorithms. */
const char *mpv_dnn_prepare(mpv_dnn *d, const mpv_program *p, cudaStream_t s);
/* Runs launch number `index` of the program (l = &p->launches[index]). */
const char *mpv_dnn_run(mpv_dnn *d, uint32_t index, const mpv_launch *l,
                        const mpv_io *io, cudaStream_t s);
/* What prepare chose, into r (conv_* fields). */
void mpv_dnn_stats(const mpv_dnn *d, mpv_result *r);
void mpv_dnn_destroy(mpv_dnn *d);

#endif
