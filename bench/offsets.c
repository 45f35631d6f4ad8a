/* bench_offsets: runs every offsets heuristic and AUTO on MiniMalloc-style
 * traces and prints a Markdown table (instance, buffers, LB, method,
 * arena, arena/LB, wall and CPU seconds). Every result is checked with
 * mp_offsets_verify; AUTO's seconds include the verification.
 *
 *   bench_offsets [--shared PATH] [--seed N] [--time-limit S] [--auto-only]
 *                 [DIR_OR_CSV...]
 *
 * Without arguments it reads PATH/minimalloc and PATH/idealloc, where PATH
 * is ../shared/bench relative to the current directory, or else the
 * shared/bench next to the source tree. Missing data: prints that it
 * skipped and exits 0. */
#include "memplan/memplan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of this process (the machine is shared: wall time is noisy) */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Best plain greedy (arena/LB) from shared/bench/README.md. */
static const struct {
    const char *name;
    double ratio;
} refs[] = {{"A", 1.2900},        {"B", 1.3467},       {"C", 1.3635},
            {"D", 1.3094},        {"E", 1.3691},       {"F", 1.3564},
            {"G", 1.3623},        {"H", 1.3408},       {"I", 1.4102},
            {"J", 1.3126},        {"K", 1.2773},       {"G_1", 1.0000},
            {"resnet50", 1.0045}, {"pangu_2.6B", 1.0334}, {"S_1", 1.0249},
            {"Y_1", 1.0035}};

static double ref_ratio(const char *name)
{
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (strcmp(refs[i].name, name) == 0)
            return refs[i].ratio;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct {
    int traces, better, equal, worse, failed;
    double auto_seconds, auto_cpu;
} tally;

static void run_trace(const char *path, const mp_offsets_options *base,
                      int auto_only)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *bufs = NULL;
    size_t n = 0;
    const char *slash = strrchr(path, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot)
        *dot = 0;
    if (!ctx || mp_trace_load_csv(ctx, path, &bufs, NULL, &n, NULL) != MP_OK) {
        printf("| %s | load failed: %s |\n", name,
               ctx ? mp_ctx_message(ctx) : "no memory");
        tally.failed++;
        mp_ctx_destroy(ctx);
        return;
    }
    uint64_t lb = 0;
    if (mp_offsets_lower_bound(ctx, bufs, n, base->alignment, &lb) != MP_OK) {
        printf("| %s | lower bound failed: %s |\n", name, mp_ctx_message(ctx));
        tally.failed++;
        mp_free(ctx, bufs);
        mp_ctx_destroy(ctx);
        return;
    }
    static const mp_offsets_method methods[] = {
        MP_OFFSETS_SIZE_BESTFIT, MP_OFFSETS_SIZE_FIRSTFIT, MP_OFFSETS_BREADTH,
        MP_OFFSETS_START_FIRSTFIT, MP_OFFSETS_NAIVE, MP_OFFSETS_AUTO};
    mp_buffer *work = malloc((n ? n : 1) * sizeof *work);
    if (!work) {
        printf("| %s | out of memory |\n", name);
        tally.failed++;
        mp_free(ctx, bufs);
        mp_ctx_destroy(ctx);
        return;
    }
    tally.traces++;
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        if (auto_only && methods[m] != MP_OFFSETS_AUTO)
            continue;
        memcpy(work, bufs, n * sizeof *work);
        mp_offsets_options o = *base;
        o.method = methods[m];
        mp_offsets_result r;
        double t0 = now(), c0 = cpu_now();
        mp_status st = mp_offsets_solve(ctx, work, n, &o, &r);
        double t1 = now(), c1 = cpu_now();
        if (st == MP_OK)
            st = mp_offsets_verify(ctx, work, n, o.alignment, r.arena_bytes);
        double t2 = now(), c2 = cpu_now();
        if (st != MP_OK) {
            printf("| %s | %zu | %llu | %s | FAILED: %s |\n", name, n,
                   (unsigned long long)lb, mp_offsets_method_name(methods[m]),
                   mp_ctx_message(ctx));
            tally.failed++;
            continue;
        }
        double ratio = lb ? (double)r.arena_bytes / (double)lb : 1.0;
        int is_auto = methods[m] == MP_OFFSETS_AUTO;
        char verdict[64] = "";
        if (is_auto) {
            double ref = ref_ratio(name);
            tally.auto_seconds += t2 - t0;
            tally.auto_cpu += c2 - c0;
            if (ref > 0) {
                /* the README rounds to 4 decimals */
                double rr = (double)(long long)(ratio * 10000 + 0.5) / 10000;
                const char *v = rr < ref ? "better" : rr == ref ? "equal"
                                                                : "WORSE";
                if (rr < ref)
                    tally.better++;
                else if (rr == ref)
                    tally.equal++;
                else
                    tally.worse++;
                snprintf(verdict, sizeof verdict, "%.4f (%s)", ref, v);
            }
        }
        printf("| %s | %zu | %llu | %s%s%s | %llu | %.4f | %.3f | %.3f | %s "
               "|\n",
               name, n, (unsigned long long)lb,
               mp_offsets_method_name(methods[m]), is_auto ? " → " : "",
               is_auto ? r.solver : "", (unsigned long long)r.arena_bytes,
               ratio, is_auto ? t2 - t0 : t1 - t0,
               is_auto ? c2 - c0 : c1 - c0, verdict);
        fflush(stdout);
    }
    free(work);
    mp_free(ctx, bufs);
    mp_ctx_destroy(ctx);
}

static void run_path(const char *path, const mp_offsets_options *o,
                     int auto_only)
{
    if (!is_dir(path)) {
        run_trace(path, o, auto_only);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        printf("skipped %s: cannot open\n", path);
        return;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".csv") != 0)
            continue;
        if (nn == cap) {
            cap = cap ? 2 * cap : 16;
            char **nb = realloc(names, cap * sizeof *names);
            if (!nb)
                break;
            names = nb;
        }
        size_t pl = strlen(path) + l + 2;
        names[nn] = malloc(pl);
        if (!names[nn])
            break;
        snprintf(names[nn], pl, "%s/%s", path, e->d_name);
        nn++;
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 0; i < nn; i++) {
        run_trace(names[i], o, auto_only);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    const char *shared = NULL;
    mp_offsets_options o;
    mp_offsets_options_init(&o);
    int auto_only = 0, npaths = 0;
    const char **paths = calloc((size_t)argc + 2, sizeof *paths);
    if (!paths)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shared") == 0 && i + 1 < argc)
            shared = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc)
            o.time_limit = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--alignment") == 0 && i + 1 < argc)
            o.alignment = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--auto-only") == 0)
            auto_only = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr,
                    "usage: %s [--shared PATH] [--seed N] [--time-limit S] "
                    "[--alignment A] [--auto-only] [DIR_OR_CSV...]\n",
                    argv[0]);
            free(paths);
            return 2;
        } else
            paths[npaths++] = argv[i];
    }
    char fallback[4096], d1[4200], d2[4200];
    if (npaths == 0) {
        if (!shared) {
            shared = "../shared/bench";
            if (!is_dir(shared)) {
                /* the shared/bench next to the source tree */
                snprintf(fallback, sizeof fallback, "%s", __FILE__);
                for (int up = 0; up < 2; up++) {
                    char *s = strrchr(fallback, '/');
                    if (s)
                        *s = 0;
                }
                strncat(fallback, "/../shared/bench",
                        sizeof fallback - strlen(fallback) - 1);
                shared = fallback;
            }
        }
        snprintf(d1, sizeof d1, "%s/minimalloc", shared);
        snprintf(d2, sizeof d2, "%s/idealloc", shared);
        if (is_dir(d1))
            paths[npaths++] = d1;
        if (is_dir(d2))
            paths[npaths++] = d2;
        if (npaths == 0) {
            printf("bench_offsets: no data under %s (minimalloc/, idealloc/):"
                   " skipped\n", shared);
            free(paths);
            return 0;
        }
    }
    printf("| instance | buffers | LB | method | arena | arena/LB | seconds "
           "| CPU s | best plain greedy |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < npaths; i++)
        run_path(paths[i], &o, auto_only);
    printf("\nAUTO vs best plain greedy: %d better, %d equal, %d worse; "
           "%d failures; AUTO total %.2f s, %.2f s CPU (solve + verify) "
           "over %d traces\n",
           tally.better, tally.equal, tally.worse, tally.failed,
           tally.auto_seconds, tally.auto_cpu, tally.traces);
    free(paths);
    return tally.failed || tally.worse ? 1 : 0;
}
