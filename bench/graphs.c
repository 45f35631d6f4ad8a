/* bench_graphs: times the whole pipeline on JSON graphs: load (and
 * finalize), plan (default schedule, lifetimes, offsets), verify, and the
 * plan JSON round trip (write, read back, verify the read plan). Prints the
 * figures of each plan.
 *
 *   bench_graphs [--json] [--align BYTES] [--method NAME] [--repeat K]
 *                GRAPH.json...
 *
 * With --repeat K every phase runs K times and the fastest is reported
 * (the first run also checks every status). Generate a large graph with
 *   python3 bench/gen_graph.py 100000 1 -o /tmp/g100k.json
 * The acceptance target is load + plan + verify under 1 s for 100k nodes.
 * Exit status: 0 when every graph planned and verified, 1 otherwise. */
#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct result {
    uint32_t nodes, tensors, steps, blocks;
    double t_load, t_plan, t_verify, t_save, t_reload, t_reverify;
    size_t plan_json_bytes;
    mp_figures fig;
    char solver[64];
} result;

static void keep_min(double *best, double t, int first)
{
    if (first || t < *best)
        *best = t;
}

static int fail(mp_ctx *ctx, const char *file, const char *what,
                mp_status st)
{
    fprintf(stderr, "bench_graphs: %s: %s failed: %s: %s\n", file, what,
            mp_status_name(st), mp_ctx_message(ctx));
    return 1;
}

static int run_one(const char *file, const mp_plan_options *opt, int repeat,
                   result *r)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx)
        return 1;
    memset(r, 0, sizeof *r);
    char tmp[] = "/tmp/bench_graphs_plan_XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) {
        mp_ctx_destroy(ctx);
        return 1;
    }
    close(fd);
    int bad = 0;
    for (int k = 0; k < repeat && !bad; k++) {
        mp_graph *g = NULL;
        mp_plan *p = NULL, *q = NULL;
        char *text = NULL;
        mp_status st;
        double t0 = now();
        st = mp_graph_load(ctx, file, &g);
        double t1 = now();
        if (st) {
            bad = fail(ctx, file, "load", st);
            break;
        }
        st = mp_plan_create(g, opt, &p);
        double t2 = now();
        if (st) {
            bad = fail(ctx, file, "plan", st);
            mp_graph_destroy(g);
            break;
        }
        st = mp_verify_plan(g, p);
        double t3 = now();
        if (st)
            bad = fail(ctx, file, "verify", st);
        if (!bad && (st = mp_plan_save_json(p, tmp)))
            bad = fail(ctx, file, "plan save", st);
        double t4 = now();
        if (!bad && (st = mp_plan_load_json(g, tmp, &q)))
            bad = fail(ctx, file, "plan load", st);
        double t5 = now();
        if (!bad && (st = mp_verify_plan(g, q)))
            bad = fail(ctx, file, "verify of the loaded plan", st);
        double t6 = now();
        if (!bad && k == 0) {
            r->nodes = mp_graph_num_nodes(g);
            r->tensors = mp_graph_num_tensors(g);
            r->steps = mp_plan_num_steps(p);
            r->blocks = mp_plan_num_blocks(p);
            r->fig = *mp_plan_figures(p);
            snprintf(r->solver, sizeof r->solver, "%s",
                     r->fig.solver ? r->fig.solver : "");
            if (mp_plan_to_json_string(p, &text) == MP_OK)
                r->plan_json_bytes = strlen(text);
            mp_free(ctx, text);
        }
        keep_min(&r->t_load, t1 - t0, k == 0);
        keep_min(&r->t_plan, t2 - t1, k == 0);
        keep_min(&r->t_verify, t3 - t2, k == 0);
        keep_min(&r->t_save, t4 - t3, k == 0);
        keep_min(&r->t_reload, t5 - t4, k == 0);
        keep_min(&r->t_reverify, t6 - t5, k == 0);
        mp_plan_destroy(q);
        mp_plan_destroy(p);
        mp_graph_destroy(g);
    }
    unlink(tmp);
    mp_ctx_destroy(ctx);
    return bad;
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void print_json(const char *file, const result *r, int first)
{
    const mp_figures *f = &r->fig;
    printf("%s  {\"file\": ", first ? "" : ",\n");
    print_json_string(file);
    printf(", \"nodes\": %u, \"tensors\": %u, \"steps\": %u, \"blocks\": %u,\n",
           r->nodes, r->tensors, r->steps, r->blocks);
    printf("   \"seconds\": {\"load\": %.6f, \"plan\": %.6f, \"verify\": %.6f, "
           "\"total\": %.6f, \"plan_save\": %.6f, \"plan_load\": %.6f, "
           "\"plan_reverify\": %.6f},\n",
           r->t_load, r->t_plan, r->t_verify,
           r->t_load + r->t_plan + r->t_verify, r->t_save, r->t_reload,
           r->t_reverify);
    printf("   \"plan_json_bytes\": %zu,\n", r->plan_json_bytes);
    printf("   \"figures\": {\"lower_bound_bytes\": %llu, \"arena_bytes\": "
           "%llu, \"persistent_bytes\": %llu, \"peak_bytes\": %llu, "
           "\"no_reuse_bytes\": %llu, \"alignment\": %llu, \"peak_step\": "
           "%u, \"status\": \"%s\", \"solver\": ",
           (unsigned long long)f->lower_bound_bytes,
           (unsigned long long)f->arena_bytes,
           (unsigned long long)f->persistent_bytes,
           (unsigned long long)f->peak_bytes,
           (unsigned long long)f->no_reuse_bytes,
           (unsigned long long)f->alignment, f->peak_step,
           mp_solve_status_name(f->status));
    print_json_string(r->solver);
    printf("}}");
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void print_human(const char *file, const result *r)
{
    const mp_figures *f = &r->fig;
    printf("%s: %u nodes, %u tensors, %u steps, %u blocks\n", file, r->nodes,
           r->tensors, r->steps, r->blocks);
    printf("  load %.3f s  plan %.3f s  verify %.3f s  total %.3f s\n",
           r->t_load, r->t_plan, r->t_verify,
           r->t_load + r->t_plan + r->t_verify);
    printf("  plan JSON %.1f MiB: save %.3f s  load %.3f s  verify %.3f s\n",
           mib(r->plan_json_bytes), r->t_save, r->t_reload, r->t_reverify);
    printf("  lower bound %.2f MiB  arena %.2f MiB (%.4fx)  no reuse %.2f "
           "MiB\n",
           mib(f->lower_bound_bytes), mib(f->arena_bytes),
           f->lower_bound_bytes
               ? (double)f->arena_bytes / (double)f->lower_bound_bytes
               : 1.0,
           mib(f->no_reuse_bytes));
    printf("  persistent %.2f MiB  peak %.2f MiB  status %s  solver %s\n",
           mib(f->persistent_bytes), mib(f->peak_bytes),
           mp_solve_status_name(f->status), r->solver);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: bench_graphs [--json] [--align BYTES] [--method NAME] "
            "[--repeat K] GRAPH.json...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int json = 0, repeat = 1, nfiles = 0;
    mp_plan_options opt;
    mp_plan_options_init(&opt);
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--align") == 0 && i + 1 < argc) {
            char *end;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v == 0) {
                free(files);
                return usage();
            }
            opt.alignment = v;
        } else if (strcmp(a, "--method") == 0 && i + 1 < argc) {
            if (mp_offsets_method_parse(argv[++i], &opt.method) != MP_OK) {
                fprintf(stderr, "bench_graphs: unknown method %s\n", argv[i]);
                free(files);
                return 2;
            }
        } else if (strcmp(a, "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
            if (repeat < 1) {
                free(files);
                return usage();
            }
        } else if (a[0] == '-') {
            free(files);
            return usage();
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles == 0) {
        free(files);
        return usage();
    }
    int bad = 0, printed = 0;
    if (json)
        printf("[\n");
    for (int i = 0; i < nfiles; i++) {
        result r;
        if (run_one(files[i], &opt, repeat, &r)) {
            bad = 1;
            continue;
        }
        if (json)
            print_json(files[i], &r, printed++ == 0);
        else
            print_human(files[i], &r);
    }
    if (json)
        printf("%s]\n", printed ? "\n" : "");
    free(files);
    return bad;
}
