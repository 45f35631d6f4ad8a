/* Cost model: device profiles (builtin, JSON good and malformed) and node
 * cost figures checked by hand. */
#include "base.h"
#include "cost.h"
#include "ir.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int close_rel(double x, double y) { return fabs(x - y) <= 1e-9 * fabs(y); }

static void t_builtin(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_device d;
    CU_ASSERT_EQUAL(mp_device_builtin_count(), 5u);
    for (size_t i = 0; i < mp_device_builtin_count(); i++) {
        CU_ASSERT_EQUAL(mp_device_builtin(c, mp_device_builtin_name(i), &d),
                        MP_OK);
        CU_ASSERT(d.mem_bw > 0 && d.mem_bytes > 0 && d.h2d_bw > 0);
        CU_ASSERT(mp_device_flops(&d, MP_DTYPE_FLOAT16) >=
                  mp_device_flops(&d, MP_DTYPE_FLOAT32));
    }
    CU_ASSERT_EQUAL(mp_device_builtin(c, "H200", &d), MP_OK);
    CU_ASSERT_STRING_EQUAL(d.name, "h200");
    /* (the h200's figures are its profile's, measured: the data sheet's
     * are the h100's) */
    CU_ASSERT_EQUAL(mp_device_builtin(c, "H100", &d), MP_OK);
    CU_ASSERT(close_rel(mp_device_flops(&d, MP_DTYPE_BFLOAT16), 989.5e12));
    CU_ASSERT_EQUAL(mp_device_builtin(c, "v100", &d), MP_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(c), "v100"));
    /* T4 has no bf16 or fp8 units: they fall back to fp16 */
    CU_ASSERT_EQUAL(mp_device_builtin(c, "t4", &d), MP_OK);
    CU_ASSERT(close_rel(mp_device_flops(&d, MP_DTYPE_BFLOAT16), 65e12));
    CU_ASSERT(close_rel(mp_device_flops(&d, MP_DTYPE_FLOAT8E4M3FN), 65e12));
    /* transfer: latency + bytes / bandwidth */
    d.h2d_bw = 1e9;
    d.link_latency = 1e-5;
    CU_ASSERT(close_rel(mp_device_transfer_seconds(&d, 2000000000u, 0),
                        2.0 + 1e-5));
    CU_ASSERT_EQUAL(mp_device_transfer_seconds(&d, 0, 0), 0.0);
    mp_ctx_destroy(c);
}

static void t_json(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_device d;
    const char *good =
        "{\"name\": \"mygpu\", \"flops\": {\"float32\": 1e13, \"float16\": "
        "8e13}, \"memory_bandwidth\": 1e12, \"memory_bytes\": 17179869184, "
        "\"h2d_bandwidth\": 2.5e10, \"link_latency\": 1e-5, "
        "\"copy_engines\": 1, \"x-note\": \"ignored\"}";
    CU_ASSERT_EQUAL(mp_device_load_json_string(c, good, "g.json", &d), MP_OK);
    CU_ASSERT_STRING_EQUAL(d.name, "mygpu");
    CU_ASSERT_EQUAL(d.mem_bytes, 17179869184ull);
    CU_ASSERT(close_rel(d.d2h_bw, 2.5e10)); /* one direction given: both */
    CU_ASSERT_EQUAL(d.copy_engines, 1);
    CU_ASSERT(close_rel(mp_device_flops(&d, MP_DTYPE_FLOAT16), 8e13));
    /* base + override */
    const char *based = "{\"base\": \"a100\", \"memory_bytes\": 42949672960}";
    CU_ASSERT_EQUAL(mp_device_load_json_string(c, based, "b.json", &d), MP_OK);
    CU_ASSERT_STRING_EQUAL(d.name, "a100");
    CU_ASSERT_EQUAL(d.mem_bytes, 42949672960ull);
    CU_ASSERT(close_rel(d.mem_bw, 2.039e12));
    /* file through mp_device_get */
    const char *path = mp_test_write_temp(".json", good);
    CU_ASSERT_FATAL(path != NULL);
    CU_ASSERT_EQUAL(mp_device_get(c, path, &d), MP_OK);
    CU_ASSERT_STRING_EQUAL(d.name, "mygpu");
    remove(path);
    CU_ASSERT_EQUAL(mp_device_get(c, "/nonexistent/dev.json", &d), MP_ERR_IO);

    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"name\": \"x\", \"flops\": {\"float32\": 1e12}", "g.json:1:"},
        {"[1, 2]", "JSON object"},
        {"{\"name\": \"x\", \"flops\": {\"float32\": 1e12}, "
         "\"memory_bandwidth\": 1e11, \"memroy_bytes\": 5}",
         "unknown key \"memroy_bytes\""},
        {"{\"name\": \"x\", \"flops\": {\"float32\": \"fast\"}, "
         "\"memory_bandwidth\": 1e11}",
         "flops.float32"},
        {"{\"name\": \"x\", \"flops\": {\"float32\": 1e12}, "
         "\"memory_bandwidth\": -1}",
         ">= 0"},
        {"{\"name\": \"x\", \"flops\": {\"float32\": 1e12}, "
         "\"memory_bandwidth\": 1e11, \"memory_bytes\": 1.5}",
         "whole number"},
        {"{\"name\": \"x\", \"memory_bandwidth\": 1e11}", "needs a float32"},
        {"{\"flops\": {\"float32\": 1e12}, \"memory_bandwidth\": 1e11}",
         "\"name\" or \"base\""},
        {"{\"base\": \"v100\"}", "unknown device"},
        {"{\"name\": \"x\", \"name\": \"y\"}", "duplicate"},
        {"{\"name\": \"x\", \"flops\": {\"float32\": 1e12}, "
         "\"memory_bandwidth\": 1e11, \"copy_engines\": 0}",
         "copy_engines"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp_status st = mp_device_load_json_string(c, bad[i].text, "g.json", &d);
        CU_ASSERT(st == MP_ERR_PARSE || st == MP_ERR_NOT_FOUND);
        if (!strstr(mp_ctx_message(c), bad[i].needle)) {
            printf("\n  case %zu: %s\n", i, mp_ctx_message(c));
            CU_FAIL("message does not name the problem");
        }
    }
    mp_ctx_destroy(c);
}

/* Node costs by hand: a Relu on 1000 float32 (default class), a node with
 * FLOPs given, a view. */
static void t_node_cost(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(c, &g) == MP_OK);
    int64_t dims[] = {10, 100}, dims2[] = {1000};
    mp_tensor_desc tx = {"x", MP_DTYPE_FLOAT32, 2, dims, 0, MP_KIND_INPUT};
    mp_tensor_desc ty = {"y", MP_DTYPE_FLOAT32, 2, dims, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc tz = {"z", MP_DTYPE_FLOAT32, 2, dims, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc tv = {"v", MP_DTYPE_FLOAT32, 1, dims2, 0,
                         MP_KIND_ACTIVATION};
    uint32_t x, y, z, v, sh;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tx, &x), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &ty, &y), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tz, &z), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tv, &v), MP_OK);
    int64_t shd[] = {1};
    mp_tensor_desc ts = {"shape", MP_DTYPE_INT64, 1, shd, 0,
                         MP_KIND_CONSTANT};
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &ts, &sh), MP_OK);
    uint32_t n0, n1, n2;
    mp_node_desc a = {"relu", "Relu", NULL, &x, 1, &y, 1, MP_PHASE_FORWARD};
    mp_node_desc b = {"custom", "MyOp", NULL, &y, 1, &z, 1, MP_PHASE_FORWARD};
    uint32_t rin[] = {z, sh};
    mp_node_desc r = {"flat", "Reshape", NULL, rin, 2, &v, 1,
                      MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &a, &n0), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &b, &n1), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &r, &n2), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_node_cost(g, n1, 4e9, -1, -1), MP_OK);
    mp_graph_mark_output(g, v);
    if (mp_graph_finalize(g) != MP_OK) {
        printf("\n  %s\n", mp_ctx_message(c));
        CU_FAIL_FATAL("finalize");
    }
    mp_device d;
    memset(&d, 0, sizeof d);
    d.flops_fp32 = 1e12;
    d.mem_bw = 1e9;
    d.kernel_overhead = 1e-6;
    mp_op_cost k;
    /* Relu: 1000 FLOPs, 8000 bytes: memory bound, 8e-6 s + 1e-6 */
    CU_ASSERT_EQUAL(mp_node_estimate(g, n0, &d, &k), MP_OK);
    CU_ASSERT(close_rel(k.flops, 1000));
    CU_ASSERT(close_rel(k.bytes, 8000));
    CU_ASSERT(close_rel(k.seconds, 9e-6));
    /* given 4e9 FLOPs: compute bound, 4 ms + 1 us */
    CU_ASSERT_EQUAL(mp_node_estimate(g, n1, &d, &k), MP_OK);
    CU_ASSERT(close_rel(k.flops, 4e9));
    CU_ASSERT(close_rel(k.seconds, 4e-3 + 1e-6));
    /* a view costs nothing */
    CU_ASSERT_EQUAL(mp_node_estimate(g, n2, &d, &k), MP_OK);
    CU_ASSERT_EQUAL(k.seconds, 0.0);
    CU_ASSERT_EQUAL(k.bytes, 0.0);
    /* a given time wins */
    CU_ASSERT_EQUAL(mp_graph_set_node_cost(g, n0, -1, -1, 0.5), MP_OK);
    CU_ASSERT_EQUAL(mp_node_estimate(g, n0, &d, &k), MP_OK);
    CU_ASSERT_EQUAL(k.seconds, 0.5);
    CU_ASSERT_EQUAL(mp_node_estimate(g, 99, &d, &k), MP_ERR_NOT_FOUND);
    mp_graph_destroy(g);
    mp_ctx_destroy(c);
}


/* FLOPs from the registry's cost classes, by hand: MatMul [2,3,4] x [4,5]
 * = 2 x 30 x 4; Conv of [1,3,8,8] by [16,3,3,3] -> [1,16,6,6]
 * = 2 x 576 x 27; Softmax 5 per element; Transpose moves only. */
static void t_op_classes(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(c, &g) == MP_OK);
    int64_t da[] = {2, 3, 4}, db[] = {4, 5}, dx[] = {1, 3, 8, 8},
            dw[] = {16, 3, 3, 3};
    mp_tensor_desc ta = {"a", MP_DTYPE_FLOAT32, 3, da, 0, MP_KIND_INPUT};
    mp_tensor_desc tb = {"b", MP_DTYPE_FLOAT32, 2, db, 0, MP_KIND_WEIGHT};
    mp_tensor_desc tx = {"x", MP_DTYPE_FLOAT32, 4, dx, 0, MP_KIND_INPUT};
    mp_tensor_desc tw = {"w", MP_DTYPE_FLOAT32, 4, dw, 0, MP_KIND_WEIGHT};
    mp_tensor_desc ty = {"y", MP_DTYPE_FLOAT32, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc tz = {"z", MP_DTYPE_FLOAT32, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc ts = {"s", MP_DTYPE_FLOAT32, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    mp_tensor_desc tt = {"t", MP_DTYPE_FLOAT32, -1, NULL, 0,
                         MP_KIND_ACTIVATION};
    uint32_t a, b, x, w, y, z, sm, tr;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &ta, &a), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tb, &b), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tx, &x), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tw, &w), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &ty, &y), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tz, &z), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &ts, &sm), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &tt, &tr), MP_OK);
    uint32_t im[] = {a, b}, ic[] = {x, w}, nm, nc, ns, nt;
    mp_node_desc dm = {"mm", "MatMul", NULL, im, 2, &y, 1, MP_PHASE_FORWARD};
    mp_node_desc dc = {"conv", "Conv", NULL, ic, 2, &z, 1, MP_PHASE_FORWARD};
    mp_node_desc ds = {"sm", "Softmax", NULL, &y, 1, &sm, 1,
                       MP_PHASE_FORWARD};
    mp_node_desc dt = {"tr", "Transpose", NULL, &sm, 1, &tr, 1,
                       MP_PHASE_FORWARD};
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &dm, &nm), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &dc, &nc), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &ds, &ns), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &dt, &nt), MP_OK);
    mp_graph_mark_output(g, z);
    mp_graph_mark_output(g, tr);
    if (mp_graph_finalize(g) != MP_OK) {
        printf("\n  %s\n", mp_ctx_message(c));
        CU_FAIL_FATAL("finalize");
    }
    mp_device d;
    CU_ASSERT_EQUAL(mp_device_builtin(c, "a100", &d), MP_OK);
    mp_op_cost k;
    CU_ASSERT_EQUAL(mp_node_estimate(g, nm, &d, &k), MP_OK);
    CU_ASSERT(close_rel(k.flops, 240));
    CU_ASSERT(close_rel(k.bytes, (24 + 20 + 30) * 4));
    CU_ASSERT_EQUAL(mp_node_estimate(g, nc, &d, &k), MP_OK);
    CU_ASSERT(close_rel(k.flops, 31104));
    CU_ASSERT(close_rel(k.bytes, (192 + 432 + 576) * 4));
    CU_ASSERT_EQUAL(mp_node_estimate(g, ns, &d, &k), MP_OK);
    CU_ASSERT(close_rel(k.flops, 150));
    CU_ASSERT_EQUAL(mp_node_estimate(g, nt, &d, &k), MP_OK);
    CU_ASSERT_EQUAL(k.flops, 0.0);
    CU_ASSERT(close_rel(k.bytes, 240));
    /* memory bound on an A100: 240 B / 2.039 TB/s + 5 us overhead */
    CU_ASSERT(close_rel(k.seconds, 240 / 2.039e12 + 5e-6));
    mp_graph_destroy(g);
    mp_ctx_destroy(c);
}

/* One cost function: the time the training synthesis gives a node is the
 * roofline of its FLOPs and sized tensors in its dtype
 * (mp__kernel_seconds), and the same number is what mp_node_estimate
 * (validate, the offload solver) and mp_node_cost (the recompute solvers)
 * give, and what the offload planner's compute time and the recompute
 * planner's base cost add up. */
static void t_one_clock(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    /* x[64,1024] -> MatMul(w[1024,1024]) -> Relu -> y */
    mp_graph *f = mp_test_mm_relu(c, 64, 1024);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(c, "h200", &d), MP_OK);
    static const mp_precision precs[] = {MP_PRECISION_FP32,
                                         MP_PRECISION_BF16_MIXED};
    double mm_grad[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        mp_train_options to;
        mp_train_options_init(&to);
        to.precision = precs[k];
        mp_graph *t = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
        double sum = 0, sum_cost = 0;
        for (uint32_t v = 0; v < t->n_nodes; v++) {
            mp_op_cost e;
            CU_ASSERT_EQUAL_FATAL(mp_node_estimate(t, v, &d, &e), MP_OK);
            CU_ASSERT(e.seconds >= 0);
            CU_ASSERT_EQUAL(e.seconds, mp_node_cost(t, v));
            sum += e.seconds;
            sum_cost += mp_node_cost(t, v);
        }
        /* the backward MatMul: two products of the forward's 2 x 64 x
         * 1024 x 1024 FLOPs, its bytes those of its sized tensors, in
         * the dtype it reads (bf16 under bf16-mixed, as its forward) */
        uint32_t g_id;
        CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "mm/grad", &g_id), MP_OK);
        const mp__node *n = &t->nodes[g_id];
        CU_ASSERT(close_rel(n->flops, 2.0 * 2.0 * 64 * 1024 * 1024));
        double bytes = 0;
        for (uint32_t i = 0; i < n->n_in; i++)
            bytes += (double)t->tensors[n->inputs[i]].bytes;
        for (uint32_t o = 0; o < n->n_out; o++)
            bytes += (double)t->tensors[n->outputs[o]].bytes;
        CU_ASSERT(bytes > 0);
        CU_ASSERT(close_rel(n->bytes_moved, bytes));
        mp_dtype dt = (mp_dtype)t->tensors[n->inputs[0]].dtype;
        CU_ASSERT_EQUAL(dt, k ? MP_DTYPE_BFLOAT16 : MP_DTYPE_FLOAT32);
        mp__kernel_desc kd = {MP__KK_GEMM,
                              mp__gemm_class(0, 0, 0, n->flops), n->flops,
                              bytes, dt, 0, -1};
        CU_ASSERT_EQUAL(n->seconds, mp__kernel_seconds(&d, &kd));
        mm_grad[k] = n->seconds;
        /* the offload planner (no budget: every node once) */
        mp_offload_options oo;
        mp_offload_options_init(&oo);
        oo.device = &d;
        mp_offload_result orr;
        mp_plan *p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_offload_plan(t, &oo, NULL, &p, &orr), MP_OK);
        CU_ASSERT(close_rel(orr.compute_seconds, sum));
        mp_plan_destroy(p);
        /* the recompute planner (no budget) */
        mp_remat_options ro;
        mp_remat_options_init(&ro);
        mp_remat_result rr;
        p = NULL;
        CU_ASSERT_EQUAL_FATAL(mp_remat_plan(t, &ro, NULL, &p, &rr), MP_OK);
        CU_ASSERT(close_rel(rr.base_cost, sum_cost));
        mp_plan_destroy(p);
        mp_graph_destroy(t);
    }
    /* 268 MFLOPs: compute bound, at the FP32 peak in fp32 and at the
     * BF16 peak under bf16-mixed */
    CU_ASSERT(mm_grad[1] < mm_grad[0]);
    mp_graph_destroy(f);
    mp_ctx_destroy(c);
}

/* A calibrated profile (format version 1, as memplan calibrate writes
 * it): every figure read; a missing figure, a calibration without its
 * version and a version this memplan does not read are errors naming
 * them; a profile of before (no version) still reads. */
static const char *calibrated_json =
    "{\"version\": 1, \"name\": \"cal\", \"gpu\": \"NVIDIA H200\","
    " \"flops\": {\"float32\": 5e13, \"bfloat16\": 7e14},"
    " \"memory_bandwidth\": 4e12, \"kernel_overhead\": 3e-6,"
    " \"h2d_bandwidth\": 5e10,"
    " \"calibration\": {"
    "  \"gemm\": {\"float32\": {\"skinny\": 1e13, \"small\": 2e13,"
    "                          \"medium\": 4e13, \"large\": 5e13},"
    "           \"bfloat16\": {\"skinny\": 1e14, \"small\": 2e14,"
    "                          \"medium\": 5e14, \"large\": 7e14}},"
    "  \"conv\": {\"float32\": {\"pointwise\": 3e13, \"spatial\": 2.5e13,"
    "                          \"depthwise\": 1e12}},"
    "  \"attention\": {\"float32\": 6e12},"
    "  \"pointwise_bandwidth\": 3e12, \"reduce_bandwidth\": 2e12,"
    "  \"copy_bandwidth\": 2.5e12, \"copy_compute_overlap\": 0.9,"
    "  \"x-measured\": {\"benchmarks\": [1, 2]}}}";

/* A profile made bad: `from` in the text replaced by `to`; the message
 * must name `needle`. */
typedef struct bad_case {
    const char *from, *to, *needle;
} bad_case;

/* Each bad case of text (named src) is an MP_ERR_PARSE whose message
 * names the file and the problem. */
static void bad_profiles(mp_ctx *c, const char *text, const char *src,
                         const bad_case *bad, size_t n)
{
    mp_device d;
    char b[8192], where[64];
    snprintf(where, sizeof where, "%s:", src);
    for (size_t i = 0; i < n; i++) {
        const char *at = strstr(text, bad[i].from);
        CU_ASSERT_FATAL(at != NULL);
        snprintf(b, sizeof b, "%.*s%s%s", (int)(at - text), text, bad[i].to,
                 at + strlen(bad[i].from));
        CU_ASSERT_EQUAL(mp_device_load_json_string(c, b, src, &d),
                        MP_ERR_PARSE);
        if (!strstr(mp_ctx_message(c), bad[i].needle) ||
            !strstr(mp_ctx_message(c), where)) {
            printf("\n  case %zu: %s\n", i, mp_ctx_message(c));
            CU_FAIL("message does not name the problem");
        }
    }
}

static void t_calibrated_json(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(
        mp_device_load_json_string(c, calibrated_json, "cal.json", &d), MP_OK);
    CU_ASSERT_EQUAL(d.cal.version, 1);
    CU_ASSERT_STRING_EQUAL(d.name, "cal");
    CU_ASSERT(close_rel(d.cal.gemm[MP_CAL_FP32][MP_GEMM_SKINNY], 1e13));
    CU_ASSERT(close_rel(d.cal.gemm[MP_CAL_FP32][MP_GEMM_LARGE], 5e13));
    CU_ASSERT(close_rel(d.cal.gemm[MP_CAL_16BIT][MP_GEMM_MEDIUM], 5e14));
    CU_ASSERT(close_rel(d.cal.conv[MP_CAL_FP32][MP_CONV_DEPTHWISE], 1e12));
    CU_ASSERT_EQUAL(d.cal.conv[MP_CAL_16BIT][MP_CONV_SPATIAL], 0.0);
    CU_ASSERT(close_rel(d.cal.pointwise_bw, 3e12));
    CU_ASSERT(close_rel(d.cal.attention[MP_CAL_FP32], 6e12));
    CU_ASSERT_EQUAL(d.cal.attention[MP_CAL_16BIT], 0.0);
    CU_ASSERT(close_rel(d.cal.reduce_bw, 2e12));
    CU_ASSERT(close_rel(d.cal.copy_bw, 2.5e12));
    CU_ASSERT(close_rel(d.cal.overlap, 0.9));
    CU_ASSERT(close_rel(d.kernel_overhead, 3e-6));
    /* a profile of before: no version, no calibration */
    CU_ASSERT_EQUAL(mp_device_load_json_string(
                        c, "{\"base\": \"a100\", \"memory_bytes\": 5}",
                        "old.json", &d), MP_OK);
    CU_ASSERT_EQUAL(d.cal.version, 0);
    CU_ASSERT_EQUAL(d.cal.gemm[0][0], 0.0);
    /* a base with a calibration over it */
    CU_ASSERT_EQUAL(mp_device_load_json_string(
                        c, "{\"version\": 1, \"base\": \"h100\", "
                           "\"calibration\": {\"gemm\": {\"float32\": "
                           "{\"skinny\": 1, \"small\": 2, \"medium\": 3, "
                           "\"large\": 4}}, \"pointwise_bandwidth\": 5, "
                           "\"reduce_bandwidth\": 6}}",
                        "b.json", &d), MP_OK);
    CU_ASSERT_EQUAL(d.cal.version, 1);
    CU_ASSERT_EQUAL(d.cal.gemm[0][3], 4.0);
    CU_ASSERT(close_rel(d.mem_bw, 3.35e12));

    static const bad_case bad[] = {
        /* missing figures */
        {", \"large\": 5e13}", "}", "missing required key \"large\""},
        {"\"reduce_bandwidth\": 2e12,", "", "\"reduce_bandwidth\""},
        {"\"gemm\": {\"float32\": {\"skinny\": 1e13, \"small\": 2e13,"
         "                          \"medium\": 4e13, \"large\": 5e13},",
         "\"gemm\": {", "\"float32\""},
        /* the version */
        {"\"version\": 1, ", "", "needs the profile's \"version\""},
        {"\"version\": 1", "\"version\": 2", "profile version 2"},
        {"\"version\": 1", "\"version\": \"1\"", "version"},
        /* wrong figures */
        {"\"copy_compute_overlap\": 0.9", "\"copy_compute_overlap\": 1.5",
         "[0, 1]"},
        {"\"small\": 2e13", "\"small\": -1", "small"},
        {"\"copy_bandwidth\"", "\"copy_bandwith\"",
         "unknown key \"copy_bandwith\""},
        {"\"depthwise\": 1e12", "\"dw\": 1e12", "unknown key \"dw\""},
    };
    bad_profiles(c, calibrated_json, "cal.json", bad,
                 sizeof bad / sizeof bad[0]);
    mp_ctx_destroy(c);
}

/* The cost function on a calibrated profile, by hand: each kernel class
 * at its own throughput (GEMM by shape class, conv by kind, bandwidth by
 * pointwise, reduction or move), the launch overhead once a node; an
 * uncalibrated class falls back to the peak and the memory bandwidth. */
/* n activations y0, y1, ... of shapes to infer into y */
static void activations(mp_graph *g, uint32_t *y, int n)
{
    char name[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "y%d", i);
        y[i] = mp_test_tensor(g, name, MP_KIND_ACTIVATION, -1, NULL);
    }
}

static void t_calibrated_cost(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_device d;
    CU_ASSERT_EQUAL_FATAL(
        mp_device_load_json_string(c, calibrated_json, "cal.json", &d), MP_OK);
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(c, &g) == MP_OK);
    int64_t dx[] = {2048, 2048}, dsk[] = {32, 2048}, dc[] = {8, 64, 32, 32},
            dw1[] = {64, 64, 1, 1}, dw3[] = {64, 64, 3, 3},
            ddw[] = {64, 1, 3, 3};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, dx);
    uint32_t xs = mp_test_tensor(g, "xs", MP_KIND_INPUT, 2, dsk);
    uint32_t xc = mp_test_tensor(g, "xc", MP_KIND_INPUT, 4, dc);
    uint32_t w1 = mp_test_tensor(g, "w1", MP_KIND_WEIGHT, 4, dw1);
    uint32_t w3 = mp_test_tensor(g, "w3", MP_KIND_WEIGHT, 4, dw3);
    uint32_t wd = mp_test_tensor(g, "wd", MP_KIND_WEIGHT, 4, ddw);
    uint32_t y[8];
    activations(g, y, 8);
    uint32_t in_mm[] = {x, w}, in_sk[] = {xs, w}, in_c1[] = {xc, w1},
             in_c3[] = {xc, w3}, in_dw[] = {xc, wd}, in_add[] = {x, x};
    uint32_t mm = mp_test_node(g, "mm", "MatMul", in_mm, 2, &y[0], 1);
    uint32_t sk = mp_test_node(g, "sk", "MatMul", in_sk, 2, &y[1], 1);
    uint32_t c1 = mp_test_node(g, "c1", "Conv", in_c1, 2, &y[2], 1);
    uint32_t c3 = mp_test_node(g, "c3", "Conv", in_c3, 2, &y[3], 1);
    uint32_t cd = mp_test_node(g, "cd", "Conv", in_dw, 2, &y[4], 1);
    uint32_t ad = mp_test_node(g, "add", "Add", in_add, 2, &y[5], 1);
    uint32_t sm = mp_test_node(g, "sm", "Softmax", &x, 1, &y[6], 1);
    uint32_t tr = mp_test_node(g, "tr", "Transpose", &x, 1, &y[7], 1);
    int64_t p1[] = {1, 1, 1, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, c3, "pads", p1, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, cd, "pads", p1, 4), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_set_attr_int(g, cd, "group", 64), MP_OK);
    for (int i = 0; i < 8; i++)
        mp_graph_mark_output(g, y[i]);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    static const struct {
        const char *what;
        int flops;       /* 1: compute, 0: memory */
        double rate;
    } want[] = {
        {"mm: 2048^3, large", 1, 5e13},
        {"sk: 32 rows, skinny", 1, 1e13},
        {"c1: 1x1 conv", 1, 3e13},
        {"c3: 3x3 conv", 1, 2.5e13},
        {"cd: depthwise", 1, 1e12},
        {"add: pointwise", 0, 3e12},
        {"sm: reduction", 0, 2e12},
        {"tr: move", 0, 2.5e12},
    };
    uint32_t ids[] = {mm, sk, c1, c3, cd, ad, sm, tr};
    for (int i = 0; i < 8; i++) {
        mp_op_cost k;
        CU_ASSERT_EQUAL_FATAL(mp_node_estimate(g, ids[i], &d, &k), MP_OK);
        double t = (want[i].flops ? k.flops : k.bytes) / want[i].rate;
        double other = want[i].flops ? k.bytes / d.mem_bw : 0;
        if (!close_rel(k.seconds, (t > other ? t : other) + 3e-6)) {
            printf("\n  %s: %g s\n", want[i].what, k.seconds);
            CU_FAIL("not at its class's throughput");
        }
    }
    /* 2 x 2048^3 FLOPs is the bound of large; under it, medium */
    CU_ASSERT_EQUAL(mp__gemm_class(2048, 2048, 2048, 2.0 * 2048 * 2048 * 2048),
                    MP_GEMM_LARGE);
    CU_ASSERT_EQUAL(mp__gemm_class(2047, 2048, 2048, 2.0 * 2047 * 2048 * 2048),
                    MP_GEMM_MEDIUM);
    CU_ASSERT_EQUAL(mp__gemm_class(0, 0, 0, 1e6), MP_GEMM_SMALL);
    CU_ASSERT_EQUAL(mp__gemm_class(4096, 64, 4096, 2.0 * 4096 * 64 * 4096),
                    MP_GEMM_SKINNY);
    /* not calibrated: the roofline of the peaks, as before */
    mp_device h;
    CU_ASSERT_EQUAL(mp_device_builtin(c, "h100", &h), MP_OK);
    mp_op_cost k;
    CU_ASSERT_EQUAL(mp_node_estimate(g, mm, &h, &k), MP_OK);
    double tc = k.flops / 67e12, tm = k.bytes / 3.35e12;
    CU_ASSERT(close_rel(k.seconds, (tc > tm ? tc : tm) + 4e-6));
    CU_ASSERT_EQUAL(mp_node_estimate(g, ad, &h, &k), MP_OK);
    CU_ASSERT(close_rel(k.seconds, k.bytes / 3.35e12 + 4e-6));
    mp_graph_destroy(g);
    /* a training graph timed on the profile (mp_train_options.device):
     * its backward MatMul at the calibrated figure of its FLOPs' class,
     * not at the builtin h200's peak */
    mp_graph *f = mp_test_mm_relu(c, 64, 1024), *t = NULL;
    mp_train_options to;
    mp_train_options_init(&to);
    to.optimizer = MP_OPTIM_SGD;
    to.device = &d;
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    uint32_t gid;
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "mm/grad", &gid), MP_OK);
    const mp__node *n = &t->nodes[gid];
    int cls = mp__gemm_class(0, 0, 0, n->flops);
    CU_ASSERT_EQUAL(cls, MP_GEMM_MEDIUM); /* 2 x 2 x 64 x 1024^2 = 2 x 512^3 */
    double tg = n->flops / d.cal.gemm[MP_CAL_FP32][cls];
    if (n->bytes_moved / d.mem_bw > tg)
        tg = n->bytes_moved / d.mem_bw;
    CU_ASSERT(close_rel(n->seconds, tg + d.kernel_overhead));
    mp_graph_destroy(t);
    t = NULL;
    to.device = NULL; /* the builtin h200: another time */
    CU_ASSERT_EQUAL_FATAL(mp_train_graph(f, &to, &t, NULL), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_find_node(t, "mm/grad", &gid), MP_OK);
    CU_ASSERT(!close_rel(t->nodes[gid].seconds, tg + d.kernel_overhead));
    mp_graph_destroy(t);
    mp_graph_destroy(f);
    mp_ctx_destroy(c);
}

/* calibrated_json with the affine fits of "calibration.affine" (made
 * up: each class a fixed cost and rate of its own) */
static const char *affine_block =
    "\"affine\": {"
    " \"gemm\": {\"float32\": {"
    "  \"large\": {\"rate\": 4e13, \"fixed\": 9e-6},"
    "  \"skinny\": {\"rate\": 8e12, \"fixed\": 6e-6}}},"
    " \"conv\": {\"float32\": {"
    "  \"pointwise\": {\"rate\": 2e13, \"fixed\": 1e-5},"
    "  \"depthwise\": {\"rate\": 5e11, \"fixed\": 2e-5}}},"
    " \"conv_grad\": {\"float32\": {\"depthwise\": {\"rate\": 3e11,"
    "                                             \"fixed\": 3e-5}}},"
    " \"attention\": {\"float32\": {"
    "  \"short\": {\"rate\": 1e12, \"fixed\": 1.5e-5}}},"
    " \"attention_grad\": {\"bfloat16\": {\"long\": {\"rate\": 2e12,"
    "                                                \"fixed\": 5e-5}}},"
    " \"pointwise\": {\"rate\": 2.5e12, \"fixed\": 5e-6},"
    " \"rownorm\": {\"rate\": 1e12, \"fixed\": 7e-6},"
    " \"copy\": {\"rate\": 8e11, \"fixed\": 4e-6},"
    " \"batchnorm\": {\"rate\": 6e11, \"fixed\": 1.1e-5},"
    " \"batchnorm_grad\": {\"rate\": 4e11, \"fixed\": 1.3e-5},"
    " \"reduction\": {\"rate\": 2e11, \"fixed\": 8e-6},"
    " \"sgd\": {\"rate\": 1.5e12, \"fixed\": 3.5e-6},"
    " \"adam\": {\"rate\": 1.2e12, \"fixed\": 4.5e-6}},";

/* calibrated_json with affine_block before its "x-measured" */
static void affine_json(char *text, size_t cap)
{
    const char *at = strstr(calibrated_json, "\"x-measured\"");
    snprintf(text, cap, "%.*s%s %s", (int)(at - calibrated_json),
             calibrated_json, affine_block, at);
}

/* A profile with affine fits: each read where it belongs, bad ones
 * named; the nodes of each class priced by their class's fit (fixed +
 * max(work / rate, the other term)), a class without one (the 3x3
 * convolution, ReLU's backward from ReLU's ... pointwise fit) as before
 * or by its forward's fit. */
static void t_affine_json(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    char text[8192];
    affine_json(text, sizeof text);
    mp_device d;
    mp_status st = mp_device_load_json_string(c, text, "aff.json", &d);
    if (st)
        printf("\n  %s\n", mp_ctx_message(c));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    const mp_device_calibration *k = &d.cal;
    CU_ASSERT(k->gemm_fit[0][MP_GEMM_LARGE].rate == 4e13 &&
              k->gemm_fit[0][MP_GEMM_LARGE].fixed == 9e-6);
    CU_ASSERT(k->gemm_fit[0][MP_GEMM_SMALL].rate == 0);
    CU_ASSERT(k->conv_fit[0][MP_CONV_DEPTHWISE][1].rate == 3e11 &&
              k->conv_fit[0][MP_CONV_DEPTHWISE][1].fixed == 3e-5);
    CU_ASSERT(k->conv_fit[0][MP_CONV_DEPTHWISE][0].rate == 5e11);
    CU_ASSERT(k->attention_fit[0][MP_ATTN_SHORT][0].fixed == 1.5e-5);
    CU_ASSERT(k->attention_fit[1][MP_ATTN_LONG][1].rate == 2e12);
    CU_ASSERT(k->attention_fit[0][MP_ATTN_LONG][1].rate == 0);
    CU_ASSERT(k->family_fit[MP_FAM_BATCHNORM][1].fixed == 1.3e-5);
    CU_ASSERT(k->family_fit[MP_FAM_SGD][0].rate == 1.5e12);
    CU_ASSERT(k->family_fit[MP_FAM_ADAM][0].fixed == 4.5e-6);
    CU_ASSERT(k->family_fit[MP_FAM_REDUCE][0].rate == 0);
    /* the class figures are still read */
    CU_ASSERT(close_rel(k->gemm[MP_CAL_FP32][MP_GEMM_LARGE], 5e13));

    /* by hand: fixed + max(work / rate, other) */
    mp__kernel_desc kd = {MP__KK_MEMORY, MP_FAM_BATCHNORM, 1e6, 6e8,
                          MP_DTYPE_FLOAT32, 0, -1};
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), 1.1e-5 + 1e-3));
    kd.grad = 1;
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), 1.3e-5 + 1.5e-3));
    kd.cls = MP_FAM_ROWNORM; /* no backward fit: the forward's */
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), 7e-6 + 6e-4));
    kd.cls = MP_FAM_REDUCE;  /* not fitted: reduce_bandwidth + overhead */
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), 6e8 / 2e12 + 3e-6));
    kd.kind = MP__KK_OTHER;  /* the synthetic kernel: the pointwise fit */
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &kd), 5e-6 + 6e8 / 2.5e12));
    mp__kernel_desc ka = {MP__KK_ATTENTION, MP_GEMM_MEDIUM, 4e9, 1e6,
                          MP_DTYPE_FLOAT32, 0, MP_ATTN_SHORT};
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &ka), 1.5e-5 + 4e-3));
    ka.seq = MP_ATTN_MEDIUM; /* not fitted: attention's figure */
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &ka), 4e9 / 6e12 + 3e-6));
    ka.seq = MP_ATTN_LONG;
    ka.grad = 1;
    ka.dt = MP_DTYPE_BFLOAT16;
    CU_ASSERT(close_rel(mp__kernel_seconds(&d, &ka), 5e-5 + 2e-3));
    CU_ASSERT_EQUAL(mp__attn_class(49), MP_ATTN_SHORT);
    CU_ASSERT_EQUAL(mp__attn_class(64), MP_ATTN_SHORT);
    CU_ASSERT_EQUAL(mp__attn_class(197), MP_ATTN_MEDIUM);
    CU_ASSERT_EQUAL(mp__attn_class(1024), MP_ATTN_LONG);
    CU_ASSERT_EQUAL(mp__attn_class(0), -1);

    /* nodes of a graph: each by its registry entry's class */
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(c, &g) == MP_OK);
    int64_t dx[] = {4096, 4096}, dc[] = {8, 64, 28, 28}, dw1[] = {32, 64, 1, 1},
            dw3[] = {64, 64, 3, 3}, dch[] = {64}, dq[] = {64, 3, 49, 32},
            dkt[] = {64, 3, 32, 49};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, dx);
    uint32_t xc = mp_test_tensor(g, "xc", MP_KIND_INPUT, 4, dc);
    uint32_t w1 = mp_test_tensor(g, "w1", MP_KIND_WEIGHT, 4, dw1);
    uint32_t w3 = mp_test_tensor(g, "w3", MP_KIND_WEIGHT, 4, dw3);
    uint32_t q = mp_test_tensor(g, "q", MP_KIND_INPUT, 4, dq);
    uint32_t kt = mp_test_tensor(g, "kt", MP_KIND_INPUT, 4, dkt);
    uint32_t bn[5] = {xc, 0, 0, 0, 0};
    const char *bnn[4] = {"s", "b", "m", "v"};
    for (int i = 0; i < 4; i++)
        bn[1 + i] = mp_test_tensor(g, bnn[i], MP_KIND_WEIGHT, 1, dch);
    uint32_t y[8];
    activations(g, y, 8);
    uint32_t in_mm[] = {x, w}, in_c1[] = {xc, w1}, in_c3[] = {xc, w3},
             in_at[] = {q, kt, q};
    uint32_t ids[8];
    ids[0] = mp_test_node(g, "mm", "MatMul", in_mm, 2, &y[0], 1);
    ids[1] = mp_test_node(g, "c1", "Conv", in_c1, 2, &y[1], 1);
    ids[2] = mp_test_node(g, "c3", "Conv", in_c3, 2, &y[2], 1);
    ids[3] = mp_test_node(g, "bn", "BatchNormalization", bn, 5, &y[3], 1);
    ids[4] = mp_test_node(g, "gap", "GlobalAveragePool", &xc, 1, &y[4], 1);
    ids[5] = mp_test_node(g, "sm", "Softmax", &x, 1, &y[5], 1);
    ids[6] = mp_test_node(g, "tr", "Transpose", &x, 1, &y[6], 1);
    ids[7] = mp_test_node_dom(g, "att", "ScaledDotProductAttention",
                              "memplan", in_at, 3, &y[7], 1);
    int64_t p1[] = {1, 1, 1, 1};
    CU_ASSERT_EQUAL(mp_graph_set_attr_ints(g, ids[2], "pads", p1, 4), MP_OK);
    for (int i = 0; i < 8; i++)
        mp_graph_mark_output(g, y[i]);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    static const struct {
        const char *what;
        int flops;            /* 1: compute, 0: memory */
        double rate, fixed;   /* fixed 0: no fit, the class figure */
    } want[] = {
        {"mm: gemm large fit", 1, 4e13, 9e-6},
        {"c1: pointwise conv fit", 1, 2e13, 1e-5},
        {"c3: spatial conv, not fitted", 1, 2.5e13, 0},
        {"bn: batchnorm fit", 0, 6e11, 1.1e-5},
        {"gap: reduction fit", 0, 2e11, 8e-6},
        {"sm: row norm fit", 0, 1e12, 7e-6},
        {"tr: copy fit", 0, 8e11, 4e-6},
        {"att: short attention fit", 1, 1e12, 1.5e-5},
    };
    for (int i = 0; i < 8; i++) {
        mp_op_cost e;
        CU_ASSERT_EQUAL_FATAL(mp_node_estimate(g, ids[i], &d, &e), MP_OK);
        double t = (want[i].flops ? e.flops : e.bytes) / want[i].rate;
        double other = want[i].flops ? e.bytes / d.mem_bw
                                     : e.flops / d.flops_fp32;
        double fx = want[i].fixed > 0 ? want[i].fixed : d.kernel_overhead;
        if (!close_rel(e.seconds, (t > other ? t : other) + fx)) {
            printf("\n  %s: %g s\n", want[i].what, e.seconds);
            CU_FAIL("not priced by its class's fit");
        }
    }
    /* the same graph on the profile without "affine": as before */
    mp_device old;
    CU_ASSERT_EQUAL_FATAL(
        mp_device_load_json_string(c, calibrated_json, "cal.json", &old),
        MP_OK);
    mp_op_cost e;
    CU_ASSERT_EQUAL(mp_node_estimate(g, ids[3], &old, &e), MP_OK);
    CU_ASSERT(close_rel(e.seconds, e.bytes / 2e12 + 3e-6));
    CU_ASSERT_EQUAL(mp_node_estimate(g, ids[7], &old, &e), MP_OK);
    CU_ASSERT(close_rel(e.seconds, e.flops / 6e12 + 3e-6));
    mp_graph_destroy(g);

    static const bad_case bad[] = {
        {", \"fixed\": 9e-6}", "}", "missing required key \"fixed\""},
        {"\"short\": {", "\"tiny\": {", "unknown key \"tiny\""},
        {"\"adam\": {", "\"adam_grad\": {", "unknown key \"adam_grad\""},
        {"\"rate\": 1e12, \"fixed\": 7e-6", "\"rate\": -1, \"fixed\": 7e-6",
         "rate"},
        {"\"copy\": {\"rate\": 8e11, \"fixed\": 4e-6}", "\"copy\": 8e11",
         "\"rate\" and \"fixed\""},
    };
    bad_profiles(c, text, "aff.json", bad, sizeof bad / sizeof bad[0]);
    mp_ctx_destroy(c);
}

/* The builtin h200 is the checked-in profile analysis/profiles/h200.json
 * (scripts/gen-builtin-profile.py made analysis/builtin_h200.inc). */
static void t_builtin_is_file(void)
{
    mp_ctx *c = mp_ctx_create(NULL);
    mp_device a, b;
    CU_ASSERT_EQUAL_FATAL(mp_device_builtin(c, "h200", &a), MP_OK);
    mp_status st = mp_device_load_json(
        c, MP_SOURCE_DIR "/analysis/profiles/h200.json", &b);
    if (st)
        printf("\n  %s\n", mp_ctx_message(c));
    CU_ASSERT_EQUAL_FATAL(st, MP_OK);
    CU_ASSERT_STRING_EQUAL(a.name, b.name);
#define SAME(f) CU_ASSERT_EQUAL(a.f, b.f)
    SAME(flops_fp64); SAME(flops_fp32); SAME(flops_tf32); SAME(flops_fp16);
    SAME(flops_bf16); SAME(flops_fp8); SAME(flops_int8); SAME(mem_bw);
    SAME(mem_bytes); SAME(h2d_bw); SAME(d2h_bw); SAME(link_latency);
    SAME(copy_engines); SAME(kernel_overhead); SAME(host_mem_bytes);
    SAME(disk_bytes); SAME(disk_read_bw); SAME(disk_write_bw);
    SAME(cal.version); SAME(cal.pointwise_bw); SAME(cal.reduce_bw);
    SAME(cal.copy_bw); SAME(cal.overlap); SAME(cal.attention[0]);
    SAME(cal.attention[1]); SAME(cal.attention_grad[0]);
    SAME(cal.attention_grad[1]);
    for (int i = 0; i < MP_CAL_DTYPES; i++) {
        for (int k = 0; k < MP_GEMM_CLASSES; k++)
            SAME(cal.gemm[i][k]);
        for (int k = 0; k < MP_CONV_CLASSES; k++) {
            SAME(cal.conv[i][k]);
            SAME(cal.conv_grad[i][k]);
        }
    }
#undef SAME
    CU_ASSERT(memcmp(a.cal.gemm_fit, b.cal.gemm_fit, sizeof a.cal.gemm_fit) ==
              0);
    CU_ASSERT(memcmp(a.cal.conv_fit, b.cal.conv_fit, sizeof a.cal.conv_fit) ==
              0);
    CU_ASSERT(memcmp(a.cal.attention_fit, b.cal.attention_fit,
                     sizeof a.cal.attention_fit) == 0);
    CU_ASSERT(memcmp(a.cal.family_fit, b.cal.family_fit,
                     sizeof a.cal.family_fit) == 0);
    mp_ctx_destroy(c);
    if (system("command -v python3 >/dev/null 2>&1")) {
        printf("\n  skipped the generator: no python3\n");
        return;
    }
    /* analysis/builtin_h200.inc is what the generator makes of the file */
    char out[4096];
    int rc = mp_test_run("python3 " MP_SOURCE_DIR
                         "/scripts/gen-builtin-profile.py --check "
                         MP_SOURCE_DIR "/analysis/profiles/h200.json "
                         MP_SOURCE_DIR "/analysis/builtin_h200.inc 2>&1",
                         out, sizeof out);
    if (rc)
        printf("\n%s", out);
    CU_ASSERT_EQUAL(rc, 0);
    /* and of a calibrated profile: every calibrated figure in place */
    const char *in = mp_test_write_temp(".json", calibrated_json);
    CU_ASSERT_FATAL(in != NULL);
    char inc[512], cmd[2048];
    snprintf(inc, sizeof inc, "%s.inc", in);
    snprintf(cmd, sizeof cmd,
             "python3 " MP_SOURCE_DIR "/scripts/gen-builtin-profile.py %s "
             "%s 2>&1", in, inc);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    char *text = mp_test_slurp(inc);
    CU_ASSERT_FATAL(text != NULL);
    static const char *const want[] = {
        ".name = \"cal\"", ".kernel_overhead = 3e-06",
        "{10000000000000.0, 20000000000000.0, 40000000000000.0, "
        "50000000000000.0}",
        "{100000000000000.0, 200000000000000.0, 500000000000000.0, "
        "700000000000000.0}",
        "{30000000000000.0, 25000000000000.0, 1000000000000.0}",
        "{0.0, 0.0, 0.0}", ".pointwise_bw = 3000000000000.0",
        ".reduce_bw = 2000000000000.0", ".copy_bw = 2500000000000.0",
        ".overlap = 0.9", ".version = 1",
        ".attention = {6000000000000.0, 0.0}"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i])) {
            printf("\n  no %s in\n%s", want[i], text);
            CU_FAIL("the generated builtin");
        }
    CU_ASSERT_PTR_NULL(strstr(text, "_fit"));
    free(text);
    remove(inc);
    remove(in);
    /* with "affine": every fit in its place of the initializer */
    char aff[8192];
    affine_json(aff, sizeof aff);
    in = mp_test_write_temp(".json", aff);
    CU_ASSERT_FATAL(in != NULL);
    snprintf(inc, sizeof inc, "%s.inc", in);
    snprintf(cmd, sizeof cmd,
             "python3 " MP_SOURCE_DIR "/scripts/gen-builtin-profile.py %s "
             "%s 2>&1", in, inc);
    CU_ASSERT_EQUAL(mp_test_run(cmd, out, sizeof out), 0);
    text = mp_test_slurp(inc);
    CU_ASSERT_FATAL(text != NULL);
    static const char *const want_fit[] = {
        /* gemm float32: skinny, small, medium, large */
        "{{8000000000000.0, 6e-06}, {0.0, 0.0}, {0.0, 0.0}, "
        "{40000000000000.0, 9e-06}}",
        /* conv float32 depthwise: forward, backward */
        "{{500000000000.0, 2e-05}, {300000000000.0, 3e-05}}",
        /* attention bfloat16 long: backward only */
        "{{0.0, 0.0}, {2000000000000.0, 5e-05}}}}",
        /* families: batchnorm forward and backward, ..., sgd, adam */
        "{{600000000000.0, 1.1e-05}, {400000000000.0, 1.3e-05}}",
        "{{1500000000000.0, 3.5e-06}, {0.0, 0.0}},\n",
        "{{1200000000000.0, 4.5e-06}, {0.0, 0.0}}},\n"};
    for (size_t i = 0; i < sizeof want_fit / sizeof want_fit[0]; i++)
        if (!strstr(text, want_fit[i])) {
            printf("\n  no %s in\n%s", want_fit[i], text);
            CU_FAIL("the generated builtin's fits");
        }
    free(text);
    remove(inc);
    remove(in);
}

static CU_TestInfo tests[] = {
    {"calibrated profiles: good, missing figure, bad version",
     t_calibrated_json},
    {"the cost function on a calibrated profile", t_calibrated_cost},
    {"affine fits: read, bad ones named, each class priced by its own",
     t_affine_json},
    {"the builtin h200 equals analysis/profiles/h200.json",
     t_builtin_is_file},
    {"builtin device profiles", t_builtin},
    {"JSON device profiles: good and malformed", t_json},
    {"node cost by hand (roofline, given figures, views)", t_node_cost},
    {"FLOPs of MatMul, Conv, Softmax, Transpose by hand", t_op_classes},
    {"one clock: training synthesis, estimate, remat, offload", t_one_clock},
    CU_TEST_INFO_NULL,
};

void mp_register_cost(void);
void mp_register_cost(void) { mp_test_add_suite("cost", tests); }
