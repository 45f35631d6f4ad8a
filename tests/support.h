/* Helpers shared by the test suites. */
#ifndef MP_TEST_SUPPORT_H
#define MP_TEST_SUPPORT_H
#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

/* Adds a suite with the given tests (NULL-terminated name/function pairs
 * in a CU_TestInfo array). */
void mp_test_add_suite(const char *name, CU_TestInfo *tests);
/* Writes text to a fresh temporary file; returns its path (static buffer
 * per call, caller copies) or NULL. */
const char *mp_test_write_temp(const char *suffix, const char *text);
/* Runs a shell command, captures stdout (up to cap bytes) and returns the
 * exit status (-1 on failure to run). */
int mp_test_run(const char *cmd, char *out, size_t cap);
/* The whole file, NUL-terminated (malloc'ed; free it), or NULL. */
char *mp_test_slurp(const char *path);
/* How many times `what` occurs in s (non-overlapping). */
int mp_test_count(const char *s, const char *what);
/* The path of a file of the shared corpus (rel under ../shared/corpus of
 * the source tree, or /work/shared/corpus), written into buf; NULL after
 * printing a "skipped" line when it is absent. */
const char *mp_test_corpus_file(const char *rel, char *buf, size_t cap);
/* ---- JSON the tests read (CLI output, files the library writes) ----
 * A JSON object read with the library's pull reader (frontends/json/
 * json.h) into a table of its values by path: "" is the object itself,
 * "offload.bytes_to_host" a member of a member, "peak_tensors[2].name" a
 * member of an array's element. A duplicate key (anywhere) or text after
 * the object is an error. */
typedef struct mp_test_json mp_test_json;
typedef struct mp_test_jval {
    /* 'o' object, 'a' array, 's' string, 'i' integer (no fraction or
     * exponent), 'r' real, 'b' true or false, 'n' null */
    char type;
    int64_t i;        /* an integer's value; true: 1 */
    double d;         /* a number's value */
    const char *s;    /* a string's text */
    size_t n;         /* an array's elements, an object's members */
    size_t off, end;  /* a scalar's text: bytes [off, end) */
} mp_test_jval;
/* Reads a NUL-terminated text; NULL (the reader's message printed) when
 * it is not one JSON object. */
mp_test_json *mp_test_json_parse(const char *text);
/* The same for a file's text. */
mp_test_json *mp_test_json_load(const char *path);
void mp_test_json_free(mp_test_json *j);
/* The value at a path (printf format), or NULL (also for j NULL). */
const mp_test_jval *mp_test_jget(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The type letter of the value at a path, 0 when there is none. */
char mp_test_jtype(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An integer's value (0 when absent or not an integer), a number's (0
 * when absent or not a number), a string's (NULL when absent or not a
 * string), an array's length (0 when absent or not an array). */
int64_t mp_test_jint(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
double mp_test_jnum(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *mp_test_jstr(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
size_t mp_test_jlen(const mp_test_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* xorshift64* PRNG for reproducible random tests. */
uint64_t mp_test_rand(uint64_t *state);

#include "memplan/memplan.h"
/* Constraints with two unbounded pools, n0 (1e12 B/s, pool 0) and n1
 * (1e11 B/s, pool 1); tensor t0 pinned at offset 0 of pool 0 and t1 at
 * offset 0 of pool 1 (MP_NONE: not pinned). Fails the test when it
 * cannot. Destroy with mp_constraints_destroy. */
mp_constraints *mp_test_two_pools(mp_ctx *ctx, const char *n0,
                                  const char *n1, uint32_t t0, uint32_t t1);
/* Graph building (issue 5 tests): a float32 tensor of the given shape
 * and kind, and a forward node; both assert success and return the id
 * (MP_NONE on failure). */
uint32_t mp_test_tensor(mp_graph *g, const char *name, mp_tensor_kind kind,
                        int rank, const int64_t *dims);
uint32_t mp_test_node(mp_graph *g, const char *name, const char *op,
                      const uint32_t *in, uint32_t nin, const uint32_t *out,
                      uint32_t nout);
/* mp_test_node of an op of `domain` (e.g. "memplan") */
uint32_t mp_test_node_dom(mp_graph *g, const char *name, const char *op,
                          const char *domain, const uint32_t *in,
                          uint32_t nin, const uint32_t *out, uint32_t nout);
/* x[rows, k] -> MatMul(w[k, k]) -> h -> Relu -> y (the output), finalized:
 * the smallest net with a product and a pointwise node. */
mp_graph *mp_test_mm_relu(mp_ctx *ctx, int64_t rows, int64_t k);
/* Asserts that g's tensor `name` has this rank and these dims. */
void mp_test_assert_shape(const mp_graph *g, const char *name, int rank,
                          const int64_t *dims);
/* The training graph (fused Adam) of a two-layer MLP whose activation is
 * a GELU decomposed as torch.onnx exports it: h = MatMul(x, W1), d =
 * Div(h, sqrt2), e = Erf(d), a = Add(e, one), m = Mul(h, a), u = Mul(m,
 * half), y = MatMul(u, W2); activations [32, 256] (32 KiB). Backward
 * reads h, d (Erf's derivative), a (the Mul's other operand) and u. */
mp_graph *mp_test_gelu_train(mp_ctx *ctx);
/* A one-layer GPT of 4 tokens, hidden 8, vocabulary 6 (embedding,
 * LayerNorm, an MLP block, residual, final LayerNorm, output layer) as
 * memplan JSON, and its training graph (Adam fused). */
/* Forward graph f's training graph (Adam fused); f destroyed. */
mp_graph *mp_test_train_fused(mp_graph *f);
extern const char *const mp_test_tiny_gpt_json;
mp_graph *mp_test_tiny_gpt_train(mp_ctx *ctx);
/* A forward chain f0..f(n-1) (n <= 64) of 1000-byte tensors and its
 * backward chain b(n-1)..b0 where b_i reads f_i and b_(i+1) (Checkmate's
 * shape), b0 the output; node f_i costs i+1 seconds, a backward node 1. */
mp_graph *mp_test_fwd_bwd(mp_ctx *ctx, int n);
/* Plans g with the default options and asserts that mp_verify_plan
 * accepts the plan. */
void mp_test_plan_verify(mp_graph *g);
/* Shifted-window attention as torchvision's swin_transformer exports it
 * (float32, SW_B images of SW_W windows, SW_H heads, SW_N tokens a
 * window, head dim SW_D): scores = MatMul(Mul(q, qscale), kT)
 * [B*W, H, N, N]; Add(scores, bias [1, H, N, N]) (SW_BIAS); Reshape to
 * [B, W, H, N, N] (target "view_shape"), Add(., smask [1, W, 1, N, N]),
 * Reshape to [-1, H, N, N] ("scores_shape"); Softmax; MatMul(., v);
 * output "out". Inputs q, kT, v [B*W, H, N, D] / [.., D, N] (SW_TRAIN:
 * MatMuls of input x by weights Wq, Wk, Wv and a Transpose for kT, the
 * bias a weight); SW_SCALE_BETWEEN: a Mul by a scalar between the bias
 * and the view; SW_WIDE_BIAS: the bias [B*W, H, N, N] (it varies with
 * the window's image); SW_CONST_NODES: the Reshape targets written by
 * Constant nodes. Finalized. */
enum { SW_B = 2, SW_W = 4, SW_H = 2, SW_N = 16, SW_D = 4 };
enum {
    SW_BIAS = 1, SW_TRAIN = 2, SW_SCALE_BETWEEN = 4, SW_WIDE_BIAS = 8,
    SW_CONST_NODES = 16
};
mp_graph *mp_test_shifted_window(mp_ctx *ctx, unsigned flags);
#endif
