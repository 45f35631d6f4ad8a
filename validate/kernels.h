/* kernels.h - the executor's kernels (kernels.cu), one entry point. */
#ifndef MEMPLAN_VALIDATE_KERNELS_H
#define MEMPLAN_VALIDATE_KERNELS_H

#include "validate.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

/* Pointers of one node execution: inputs and outputs in node slot order
 * (NULL for omitted ones) with their byte sizes. */
typedef struct mpv_io {
    void *const *in;
    const uint64_t *in_bytes;
    uint32_t n_in;
    void *const *out;
    const uint64_t *out_bytes;
    const int *out_dtype;
    uint32_t n_out;
    void *ws;          /* workspace (prog->workspace_bytes) */
    uint32_t salt;     /* node id: makes synthetic outputs differ */
} mpv_io;

/* Enqueues one launch on stream s; returns a CUDA/cuBLAS error string or
 * NULL. */
const char *mpv_run_launch(const mpv_launch *l, const mpv_io *io,
                           cublasHandle_t h, cudaStream_t s);

#endif
