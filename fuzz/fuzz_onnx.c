/* libFuzzer harness: the ONNX loader (protobuf-c parse, graph building,
 * subgraphs, shape inference and folding) on arbitrary bytes; a model that
 * loads is planned and the plan verified (fuzz/common.h). Built with
 * -DMEMPLAN_FUZZ=ON (clang); docs/fuzzing.md. */
#include "common.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx)
        return 0;
    mp_onnx_options o;
    mp_onnx_options_init(&o);
    /* bind every symbol the fuzzer is likely to write: N, batch, ... are
     * just names; unbound ones give an error, which is fine */
    static const mp_dim_binding dims[] = {{"N", 2}, {"batch", 3},
                                          {"seq", 5}, {"input:0", 1}};
    o.dims = dims;
    o.n_dims = sizeof dims / sizeof dims[0];
    mp_graph *g = NULL;
    mp_status st = mp_graph_load_onnx_buffer(ctx, data, size, "fuzz.onnx",
                                             &o, &g);
    if (st == MP_ERR_INVALID_ARG) {
        /* a binding that names nothing in this model is an error: load
         * again without them, so every input still reaches inference */
        mp_ctx_clear(ctx);
        o.dims = NULL;
        o.n_dims = 0;
        st = mp_graph_load_onnx_buffer(ctx, data, size, "fuzz.onnx", &o, &g);
    }
    if (st == MP_ERR_INTERNAL)
        mp_fuzz_fail("mp_graph_load_onnx_buffer: internal error", ctx);
    if (st == MP_OK) {
        (void)mp_graph_unknown_shapes(g);
        mp_fuzz_plan(ctx, g);
        mp_graph_destroy(g);
    }
    mp_ctx_destroy(ctx);
    return 0;
}
