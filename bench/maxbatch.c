/* bench_maxbatch: the largest batch whose training step fits a memory
 * budget with at most one extra forward pass of recompute, on Checkmate
 * node-link graphs (Checkmate's max-batch experiment, docs/training.md).
 *
 *   bench_maxbatch [--param-bytes B] [--device-bytes D] [--batch B0]
 *                  [--solver NAME]... GRAPH.json...
 *
 * The graphs are at batch B0 (default 256: Checkmate's MLSys graphs);
 * every cost_ram is an activation of the batch, so the graph at batch b
 * scales each tensor's bytes by b / B0 (rounded up). As in Checkmate's
 * experiment_max_batchsize_*.py: the device has D bytes (default 16e9, a
 * V100), the parameters take B bytes (4 per parameter; VGG19 with its
 * classifier: 143,667,240 parameters, the default) and Checkmate both
 * counts them in the peak and subtracts them from the budget, so the
 * activation peak must stay within D - 2 B; the schedule may recompute at
 * most one extra forward pass (sum of forward node costs).
 * "checkmate-style" rows use mp_remat_options.keep_checkpoints: the
 * checkpoints stay to the end of the step, as in Checkmate's baselines
 * (gen_s_matrix_fixed_checkpoints keeps them in S up to the last stage);
 * "free-at-last-use" rows free each value after its last reader. The
 * "checkmate-S" rows are Checkmate's baselines as its code builds them
 * (solvers/remat/remat_chen.c: chen-linear from its released code, cm-* from
 * the code of its max-batch figure), each at two budgets: "ilp" (D - 2 B,
 * the budget of Checkmate's max-batch ILP, experiment_max_batchsize_ilp:
 * device less cost_ram_fixed, which is 2 B: parameters and gradients)
 * and "script" (D - 4 B: experiment_max_batchsize_baseline.py accepts a
 * baseline when its peak_ram, activations + 2 B, is within the device
 * less 2 B again). The other rows use the "ilp" budget. */
#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The graph at batch b: every tensor scaled by b / b0. keep_fwd 1: every
 * forward tensor is a graph output (kept to the end); 2: the outputs of
 * every k-th node (node v with (v + 1) % k == 0, k = floor(sqrt(nodes)))
 * are, forward and backward alike: the checkpoints of Checkmate's
 * "linearized" Chen sqrt(n) (solve_chen_sqrtn with use_actuation_points
 * False: candidates = all nodes in order). */
static mp_graph *scaled(mp_ctx *ctx, const mp_graph *g, uint64_t b,
                        uint64_t b0, int keep_fwd)
{
    mp_graph *s = NULL;
    if (mp_graph_create(ctx, &s) != MP_OK)
        return NULL;
    uint32_t nt = mp_graph_num_tensors(g), nn = mp_graph_num_nodes(g);
    uint32_t kk = 1;
    while ((kk + 1) * (kk + 1) <= nn)
        kk++;
    for (uint32_t t = 0; t < nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(g, t, &ti);
        mp_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = ti.name;
        d.rank = -1;
        d.kind = ti.kind;
        d.bytes = (ti.bytes * b + b0 - 1) / b0;
        if (!d.bytes)
            d.bytes = 1;
        uint32_t id;
        if (mp_graph_add_tensor(s, &d, &id) != MP_OK)
            goto fail;
    }
    for (uint32_t v = 0; v < nn; v++) {
        mp_node_info ni;
        mp_graph_node_info(g, v, &ni);
        mp_node_desc d;
        memset(&d, 0, sizeof d);
        d.name = ni.name;
        d.op = ni.op;
        d.inputs = ni.inputs;
        d.n_inputs = ni.n_inputs;
        d.outputs = ni.outputs;
        d.n_outputs = ni.n_outputs;
        d.phase = ni.phase;
        uint32_t id;
        if (mp_graph_add_node(s, &d, &id) != MP_OK ||
            mp_graph_set_node_cost(s, id, ni.flops, ni.bytes, ni.seconds) !=
                MP_OK)
            goto fail;
        if ((keep_fwd == 1 && ni.phase == MP_PHASE_FORWARD) ||
            (keep_fwd == 2 && (v + 1) % kk == 0))
            for (uint32_t o = 0; o < ni.n_outputs; o++)
                if (mp_graph_mark_output(s, ni.outputs[o]) != MP_OK)
                    goto fail;
    }
    for (uint32_t t = 0; t < nt; t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(g, t, &ti);
        if (ti.is_output && mp_graph_mark_output(s, t) != MP_OK)
            goto fail;
    }
    if (mp_graph_finalize(s) != MP_OK)
        goto fail;
    return s;
fail:
    mp_graph_destroy(s);
    return NULL;
}

/* 1 when batch b fits: plan verified within budget and cost cap. */
static int fits(mp_ctx *ctx, const mp_graph *g, uint64_t b, uint64_t b0,
                int keep_fwd, mp_remat_solver sv, uint64_t budget,
                double *extra_out, const char **who)
{
    mp_graph *s = scaled(ctx, g, b, b0, keep_fwd == 2 ? 2 : 0);
    if (!s)
        return -1;
    double fwd = 0;
    for (uint32_t v = 0; v < mp_graph_num_nodes(s); v++) {
        mp_node_info ni;
        mp_graph_node_info(s, v, &ni);
        if (ni.phase == MP_PHASE_FORWARD)
            fwd += mp_node_cost(s, v);
    }
    mp_remat_options ro;
    mp_remat_options_init(&ro);
    ro.solver = sv;
    ro.budget = budget;
    ro.max_extra_cost = fwd;
    ro.time_limit = 20;
    ro.keep_checkpoints = keep_fwd == 1;
    mp_remat_result r;
    mp_plan *p = NULL;
    mp_status st = mp_remat_plan(s, &ro, NULL, &p, &r);
    int ok = st == MP_OK && mp_verify_plan(s, p) == MP_OK &&
             r.peak_bytes <= budget && r.extra_cost <= fwd * (1 + 1e-12);
    if (st != MP_OK && st != MP_ERR_INFEASIBLE)
        ok = -1;
    if (ok == 1) {
        *extra_out = r.base_cost > 0 ? r.extra_cost / fwd : 0;
        *who = r.solver;
    }
    mp_plan_destroy(p);
    mp_graph_destroy(s);
    return ok;
}

int main(int argc, char **argv)
{
    uint64_t params = 143667240ull * 4, device = 16000000000ull, b0 = 256;
    mp_remat_solver solvers[16];
    int ns = 0, first = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--param-bytes") && i + 1 < argc)
            params = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--device-bytes") && i + 1 < argc)
            device = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            b0 = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--solver") && i + 1 < argc && ns < 16) {
            if (mp_remat_solver_parse(argv[++i], &solvers[ns]) != MP_OK) {
                fprintf(stderr, "bench_maxbatch: unknown solver %s\n", argv[i]);
                return 2;
            }
            ns++;
        } else {
            first = i;
            break;
        }
    }
    if (!ns) {
        mp_remat_solver all[] = {MP_REMAT_NONE, MP_REMAT_CHEN_SQRT,
                                 MP_REMAT_CHEN_GREEDY, MP_REMAT_DTR,
                                 MP_REMAT_SELECTIVE, MP_REMAT_AUTO,
                                 MP_REMAT_CHEN_LINEAR,
                                 MP_REMAT_CM_CHECKPOINT_ALL,
                                 MP_REMAT_CM_CHEN_SQRT,
                                 MP_REMAT_CM_CHEN_GREEDY};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            solvers[ns++] = all[k];
    }
    if (device <= 4 * params) {
        fprintf(stderr, "bench_maxbatch: parameters exceed the device\n");
        return 2;
    }
    uint64_t budget = device - 2 * params, script = device - 4 * params;
    printf("activation budget %llu bytes (ilp: device %llu - 2 x parameters "
           "%llu); Checkmate's baseline script: %llu (device - 4 x "
           "parameters)\n",
           (unsigned long long)budget, (unsigned long long)device,
           (unsigned long long)params, (unsigned long long)script);
    printf("%-28s %-16s %-17s %-6s %9s %10s %8s\n", "graph", "semantics",
           "solver", "budget", "max_batch", "extra/fwd", "wall_s");
    int bad = 0;
    for (int f = first; f < argc; f++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        if (!ctx || mp_graph_load(ctx, argv[f], &g) != MP_OK) {
            fprintf(stderr, "bench_maxbatch: %s: %s\n", argv[f],
                    ctx ? mp_ctx_message(ctx) : "no memory");
            mp_ctx_destroy(ctx);
            bad = 1;
            continue;
        }
        const char *name = strrchr(argv[f], '/');
        name = name ? name + 1 : argv[f];
        /* keep 2: Checkmate's published Chen sqrt(n) as its public code
         * builds it: gen_s_matrix_fixed_checkpoints keeps every value in
         * S from its producer to its last consumer (its "minimum input
         * requirements" loop covers the forward -> backward edges), so
         * nothing is recomputed: values are freed after their last use
         * and the sqrt(n) checkpoints stay to the end */
        for (int keep = 2; keep >= 0; keep--) {
            for (int s = 0; s < ns; s++) {
                if (keep == 2 && solvers[s] != MP_REMAT_NONE)
                    continue;
                /* Checkmate's baselines: their own semantics */
                int cm = solvers[s] >= MP_REMAT_CHEN_LINEAR;
                if (keep != 0 && cm)
                    continue;
                if (keep == 1 && solvers[s] != MP_REMAT_NONE &&
                    solvers[s] != MP_REMAT_CHEN_SQRT &&
                    solvers[s] != MP_REMAT_CHEN_GREEDY)
                    continue;
                for (int bud = 0; bud < 1 + cm; bud++) {
                uint64_t bgt = bud ? script : budget;
                double t0 = now();
                uint64_t lo = 0, hi = 4096; /* lo fits (0 trivially) */
                double ex = 0, best_ex = 0;
                const char *who = NULL, *best_who = "";
                while (lo + 1 < hi) {
                    uint64_t mid = lo + (hi - lo) / 2;
                    int ok = fits(ctx, g, mid, b0, keep, solvers[s], bgt,
                                  &ex, &who);
                    if (ok < 0) {
                        fprintf(stderr, "bench_maxbatch: %s: batch %llu: %s\n",
                                name, (unsigned long long)mid,
                                mp_ctx_message(ctx));
                        bad = 1;
                        break;
                    }
                    if (ok) {
                        lo = mid;
                        best_ex = ex;
                        best_who = who ? who : "";
                    } else {
                        hi = mid;
                    }
                }
                printf("%-28.28s %-16s %-17s %-6s %9llu %10.3f %8.2f %s\n",
                       name,
                       keep == 2   ? "checkmate-chen"
                       : keep == 1 ? "checkmate-style"
                       : cm        ? "checkmate-S"
                                   : "free-at-last-use",
                       keep == 2 ? "chen-sqrt-lin" : mp_remat_solver_name(solvers[s]),
                       bud ? "script" : "ilp", (unsigned long long)lo, best_ex,
                       now() - t0, best_who);
                fflush(stdout);
                }
            }
        }
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    return bad;
}
