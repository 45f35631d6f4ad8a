/* bench_offsets_exact: the exact tier (and optionally the ILP tier) on the
 * MiniMalloc instances A-K at their capacity and on idealloc's resnet50
 * and G_1 (minimised). Prints a Markdown table: instance, buffers, LB,
 * capacity, arena, status, CPU seconds, search nodes; every packing is
 * checked with mp_offsets_verify (within the capacity where one is given).
 *
 *   bench_offsets_exact [--shared PATH] [--capacity N] [--ilp SECONDS]
 *
 * PATH defaults to ../shared/bench (relative to the current directory),
 * else the shared/bench next to the source tree. --ilp S also runs the ILP
 * tier (GLPK) on A-K with S seconds each, warm-started from the greedy
 * packing. Missing data: says so and exits 0. */
#include "base.h"
#include "offsets_exact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_one(const char *dir, const char *name, uint64_t cap,
                   double ilp_s, double *cpu_sum)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *b = NULL;
    size_t n = 0;
    if (mp_trace_load_csv(ctx, path, &b, NULL, &n, NULL) != MP_OK) {
        printf("| %s | (cannot read: %s) |\n", name, mp_ctx_message(ctx));
        mp_ctx_destroy(ctx);
        return 1;
    }
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    o.method = MP_OFFSETS_EXACT;
    o.capacity = cap;
    o.time_limit = 60;
    mp_offsets_result r;
    double c0 = cpu_now(), w0 = wall_now();
    mp_status st = mp_offsets_solve(ctx, b, n, &o, &r);
    double cs = cpu_now() - c0, ws = wall_now() - w0;
    *cpu_sum += cs;
    int ok = st == MP_OK;
    mp_status v = mp_offsets_verify(ctx, b, n, 1, cap ? cap : r.arena_bytes);
    char capbuf[32];
    snprintf(capbuf, sizeof capbuf, "%llu", (unsigned long long)cap);
    printf("| %s | %zu | %llu | %s | %llu | %.4f | %s | %s | %.3f | %.3f | "
           "%llu | %s |\n",
           name, n, (unsigned long long)r.lower_bound_bytes,
           cap ? capbuf : "minimise", (unsigned long long)r.arena_bytes,
           (double)r.arena_bytes / (double)r.lower_bound_bytes,
           mp_solve_status_name(r.status),
           (unsigned long long)r.proven_lb_bytes == r.arena_bytes ? "yes"
                                                                  : "no",
           cs, ws, (unsigned long long)r.nodes,
           v == MP_OK ? "ok" : "FAILED");
    int bad = v != MP_OK || (!ok && st != MP_ERR_INFEASIBLE);
    if (ilp_s > 0) {
        mp__ofs_prob p;
        if (mp__ofs_prob_init(ctx, &p, b, n, 1) == MP_OK) {
            /* warm start: the best greedy packing */
            mp_offsets_options_init(&o);
            o.method = MP_OFFSETS_SIZE_BESTFIT;
            mp_offsets_result g;
            uint64_t *seed = malloc(n * sizeof *seed),
                     *off = malloc(n * sizeof *off);
            if (seed && off &&
                mp_offsets_solve(ctx, b, n, &o, &g) == MP_OK) {
                for (size_t i = 0; i < n; i++)
                    seed[i] = b[i].offset;
                mp__ofs_ilp_res ir;
                double i0 = cpu_now();
                mp_status is = mp__ofs_ilp(&p, seed, g.arena_bytes, cap,
                                          ilp_s, off, &ir);
                double ic = cpu_now() - i0;
                if (is == MP_OK) {
                    for (size_t i = 0; i < n; i++)
                        b[i].offset = off[i];
                    mp_status iv = ir.arena == UINT64_MAX
                                       ? MP_OK
                                       : mp_offsets_verify(ctx, b, n, 1,
                                                           ir.arena);
                    printf("|   | ILP (%.0f s): status %s, arena %llu (greedy "
                           "start %llu), proven LB %llu, %.2f s CPU, %s |\n",
                           ilp_s, mp_solve_status_name(ir.status),
                           (unsigned long long)(ir.arena == UINT64_MAX
                                                    ? 0
                                                    : ir.arena),
                           (unsigned long long)g.arena_bytes,
                           (unsigned long long)ir.proven_lb, ic,
                           iv == MP_OK ? "verified" : "VERIFY FAILED");
                    bad |= iv != MP_OK;
                } else {
                    printf("|   | ILP: %s |\n", mp_ctx_message(ctx));
                }
            }
            free(seed);
            free(off);
            mp__ofs_prob_free(&p);
        }
    }
    mp_free(ctx, b);
    mp_ctx_destroy(ctx);
    return bad;
}

int main(int argc, char **argv)
{
    const char *shared = NULL;
    uint64_t cap = 1048576;
    double ilp_s = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shared") == 0 && i + 1 < argc)
            shared = argv[++i];
        else if (strcmp(argv[i], "--capacity") == 0 && i + 1 < argc)
            cap = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ilp") == 0 && i + 1 < argc)
            ilp_s = atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: bench_offsets_exact [--shared PATH] "
                    "[--capacity N] [--ilp SECONDS]\n");
            return 2;
        }
    }
    char mm[4096], ia[4096];
    const char *cands[] = {shared, "../shared/bench", "../../shared/bench",
                           "../../../shared/bench"};
    FILE *f = NULL;
    for (size_t k = 0; k < 4 && !f; k++) {
        if (!cands[k])
            continue;
        snprintf(mm, sizeof mm, "%s/minimalloc", cands[k]);
        snprintf(ia, sizeof ia, "%s/idealloc", cands[k]);
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/A.csv", mm);
        f = fopen(probe, "r");
    }
    if (!f) {
        printf("bench_offsets_exact: no shared/bench data found: skipped\n");
        return 0;
    }
    fclose(f);
    int bad = 0;
    printf("| instance | buffers | LB | capacity | arena | arena/LB | "
           "status | proven optimal | CPU s | wall s | nodes | verify |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const char *const names[] = {"A", "B", "C", "D", "E", "F",
                                        "G", "H", "I", "J", "K"};
    double cpu_ak = 0, cpu_id = 0;
    for (size_t i = 0; i < 11; i++)
        bad |= run_one(mm, names[i], cap, ilp_s, &cpu_ak);
    bad |= run_one(ia, "resnet50", 0, 0, &cpu_id);
    bad |= run_one(ia, "G_1", 0, 0, &cpu_id);
    printf("\nA-K at capacity %llu: %.3f s CPU in all; resnet50 + G_1 "
           "minimised: %.3f s CPU\n",
           (unsigned long long)cap, cpu_ak, cpu_id);
    return bad;
}
