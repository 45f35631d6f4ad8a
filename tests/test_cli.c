/* Tests of the memplan command: runs the built binary (MP_CLI_PATH) on small
 * hand-written inputs and checks exit codes, output and written files. */
#include "support.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memplan/memplan.h"
#include "cli.h" /* the option table the command is built from */

static char out[1 << 16];

/* Runs "MP_CLI_PATH <args>" (args formatted), stdout into `out`. */
static int cli(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int cli(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' %s", MP_CLI_PATH, args);
    out[0] = 0;
    return mp_test_run(cmd, out, sizeof out);
}

/* A temporary file holding text; the path is copied into dst. */
static int temp(char *dst, size_t cap, const char *suffix, const char *text)
{
    const char *p = mp_test_write_temp(suffix, text);
    if (!p)
        return -1;
    snprintf(dst, cap, "%s", p);
    return 0;
}

/* ---- a small trace: five buffers, sizes chosen so that the max-live lower
 * bound (450 at t=3) is computed below independently of the library ---- */
static const char trace_text[] = "id,lower,upper,size\n"
                                 "0,0,2,100\n"
                                 "1,1,3,200\n"
                                 "2,2,4,100\n"
                                 "3,0,4,50\n"
                                 "4,3,5,300\n";

typedef struct row {
    long long id, lo, hi, size, off;
} row;

/* Parses a 5-column trace written by the CLI; returns the row count, or -1
 * when the header or a row does not have exactly 5 fields. */
static int parse_trace5(const char *text, row *rows, int cap)
{
    const char *p = strchr(text, '\n');
    if (!p)
        return -1;
    /* header: 5 comma-separated names, the last one "offset" */
    int commas = 0;
    for (const char *q = text; q < p; q++)
        commas += *q == ',';
    if (commas != 4 || strncmp(p - 6, "offset", 6) != 0)
        return -1;
    int n = 0;
    p++;
    while (*p) {
        if (n >= cap)
            return -1;
        row *r = &rows[n];
        int used = 0;
        if (sscanf(p, "%lld,%lld,%lld,%lld,%lld%n", &r->id, &r->lo, &r->hi,
                   &r->size, &r->off, &used) != 5)
            return -1;
        p += used;
        while (*p == '\r')
            p++;
        if (*p != '\n' && *p != '\0')
            return -1;   /* a sixth field or junk */
        if (*p)
            p++;
        n++;
    }
    return n;
}

static long long trace_lower_bound(const row *r, int n)
{
    long long best = 0;
    for (long long t = 0; t < 8; t++) {
        long long live = 0;
        for (int i = 0; i < n; i++)
            if (r[i].lo <= t && t < r[i].hi)
                live += r[i].size;
        if (live > best)
            best = live;
    }
    return best;
}

static void test_help_version(void)
{
    CU_ASSERT_EQUAL(cli("--help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage: memplan"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "offsets"));
    CU_ASSERT_EQUAL(cli("-h"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Exit status"));
    CU_ASSERT_EQUAL(cli("--version"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, MP_VERSION_STRING));
    const char *cmds[] = {"plan", "offsets", "verify"};
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "Usage: memplan %s", cmds[i]);
        CU_ASSERT_EQUAL(cli("%s --help", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "Examples:"));
        CU_ASSERT_EQUAL(cli("%s -h", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        CU_ASSERT_EQUAL(cli("help %s", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    }
}

static void test_usage_errors(void)
{
    CU_ASSERT_EQUAL(cli("2>&1"), 2);
    CU_ASSERT_EQUAL(cli("frobnicate 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown command 'frobnicate'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "plan"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "verify"));
    CU_ASSERT_EQUAL(cli("convert 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("shapes 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("shapes a.json --dim 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("shapes a.json --dim N 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "NAME=VALUE"));
    CU_ASSERT_EQUAL(cli("plan a.json --dim N=x 2>&1"), 2);
    /* --shape INPUT=D0xD1x... */
    CU_ASSERT_EQUAL(cli("plan a.json --shape q 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "INPUT=D0xD1x"));
    CU_ASSERT_EQUAL(cli("plan a.json --shape q= 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("shapes a.json --shape q=2xx3 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad shape"));
    CU_ASSERT_EQUAL(cli("verify a.json p.json --shape q=2x-3 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("plan a.json --shape 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("plan 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("plan a.json b.json 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("plan a.json --bogus 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--bogus"));
    CU_ASSERT_EQUAL(cli("plan a.json --align 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("plan a.json --json=1 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("offsets t.csv --method no-such-method 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "no-such-method"));
    CU_ASSERT_EQUAL(cli("offsets t.csv --seed -3 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("offsets t.csv --time-limit soon 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("verify 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("verify a b c 2>&1"), 2);
    CU_ASSERT_EQUAL(cli("verify g.json p.json --capacity 1MiB 2>&1"), 2);
}

static void test_bad_sizes(void)
{
    char trace[256];
    CU_ASSERT_FATAL(temp(trace, sizeof trace, ".csv", trace_text) == 0);
    CU_ASSERT_EQUAL(cli("offsets %s --align 4XB 2>&1", trace), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4XB"));
    CU_ASSERT_EQUAL(cli("offsets %s --align KiB 2>&1", trace), 2);
    CU_ASSERT_EQUAL(cli("offsets %s --align 1.5KiB 2>&1", trace), 2);
    CU_ASSERT_EQUAL(cli("offsets %s --align -4 2>&1", trace), 2);
    CU_ASSERT_EQUAL(cli("offsets %s --align 18446744073709551616 2>&1", trace), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "64 bits"));
    CU_ASSERT_EQUAL(cli("offsets %s --align 17179869184GiB 2>&1", trace), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "64 bits"));
    CU_ASSERT_EQUAL(cli("verify %s --capacity 12PB 2>&1", trace), 2);
    CU_ASSERT_EQUAL(unlink(trace), 0);
}

static void test_offsets_roundtrip(void)
{
    char trace[256], placed[256];
    CU_ASSERT_FATAL(temp(trace, sizeof trace, ".csv", trace_text) == 0);
    CU_ASSERT_FATAL(temp(placed, sizeof placed, ".csv", "") == 0);

    CU_ASSERT_EQUAL(cli("offsets %s -o %s", trace, placed), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "arena"));
    char *text = mp_test_slurp(placed);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    row r[16];
    int n = parse_trace5(text, r, 16);
    free(text);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    /* the offsets really separate buffers live at the same time */
    long long arena = 0;
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(r[i].id, i);
        CU_ASSERT(r[i].off >= 0);
        if (r[i].off + r[i].size > arena)
            arena = r[i].off + r[i].size;
        for (int j = 0; j < i; j++) {
            int time = r[i].lo < r[j].hi && r[j].lo < r[i].hi;
            int space = r[i].off < r[j].off + r[j].size &&
                        r[j].off < r[i].off + r[i].size;
            CU_ASSERT(!(time && space));
        }
    }
    CU_ASSERT(arena >= trace_lower_bound(r, n));

    CU_ASSERT_EQUAL(cli("verify %s", placed), 0);
    CU_ASSERT(strncmp(out, "valid:", 6) == 0);
    /* a capacity below the arena fails verification */
    CU_ASSERT_EQUAL(cli("verify %s --capacity %lld 2>&1", placed, arena - 1), 5);
    CU_ASSERT_EQUAL(cli("verify %s --capacity %lldB", placed, arena), 0);

    /* JSON summary: figures agree with the independent computation */
    CU_ASSERT_EQUAL(cli("offsets %s --json", trace), 0);
    mp_test_json *j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(mp_test_jint(j, "buffers"), 5);
    int64_t lb = mp_test_jint(j, "lower_bound_bytes");
    int64_t ar = mp_test_jint(j, "arena_bytes");
    CU_ASSERT_EQUAL(lb, trace_lower_bound(r, n));
    CU_ASSERT(ar >= lb);
    CU_ASSERT_EQUAL(mp_test_jtype(j, "ratio"), 'r');
    CU_ASSERT_EQUAL(mp_test_jtype(j, "status"), 's');
    CU_ASSERT_EQUAL(mp_test_jtype(j, "solver"), 's');
    char t = mp_test_jtype(j, "solve_seconds");
    CU_ASSERT(t == 'i' || t == 'r');
    mp_test_json_free(j);

    /* --method reaches the solver: naive stacks the buffers end to end */
    CU_ASSERT_EQUAL(cli("offsets %s --json --method naive --seed 7 "
                        "--time-limit=0.5", trace), 0);
    j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    long long total = 0;
    for (int i = 0; i < n; i++)
        total += r[i].size;
    CU_ASSERT_EQUAL(mp_test_jint(j, "arena_bytes"), total);
    mp_test_json_free(j);

    /* the input has no offsets: verify says so (input error) */
    CU_ASSERT_EQUAL(cli("verify %s 2>&1", trace), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "offset"));
    unlink(trace);
    unlink(placed);
}

static void test_offsets_align(void)
{
    char trace[256], placed[256];
    CU_ASSERT_FATAL(temp(trace, sizeof trace, ".csv", trace_text) == 0);
    CU_ASSERT_FATAL(temp(placed, sizeof placed, ".csv", "") == 0);
    CU_ASSERT_EQUAL(cli("offsets %s --align 4kib -o %s", trace, placed), 0);
    char *text = mp_test_slurp(placed);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    row r[16];
    int n = parse_trace5(text, r, 16);
    free(text);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    for (int i = 0; i < n; i++)
        CU_ASSERT_EQUAL(r[i].off % 4096, 0);
    CU_ASSERT_EQUAL(cli("verify %s --align 4KiB", placed), 0);
    unlink(trace);
    unlink(placed);
}

static void test_verify_trace_overlap(void)
{
    char bad[256], ok[256];
    /* buffers 0 and 1 are both live at t=1 and share bytes [50,100) */
    CU_ASSERT_FATAL(temp(bad, sizeof bad, ".csv",
                         "id,lower,upper,size,offset\n"
                         "0,0,2,100,0\n"
                         "1,1,3,100,50\n") == 0);
    /* same offset, but the intervals are half-open and do not meet */
    CU_ASSERT_FATAL(temp(ok, sizeof ok, ".csv",
                         "id,lower,upper,size,offset\n"
                         "0,0,2,100,0\n"
                         "1,2,4,100,0\n") == 0);
    CU_ASSERT_EQUAL(cli("verify %s 2>&1", bad), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memplan: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "overlap"));
    CU_ASSERT_PTR_NULL(strstr(out, "valid:"));
    CU_ASSERT_EQUAL(cli("verify %s", ok), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "valid:"));
    CU_ASSERT_EQUAL(cli("verify %s --align 64 2>&1", ok), 0);
    unlink(bad);
    unlink(ok);
}

/* ---- plans ---------------------------------------------------------------- */
/* x (input) -> Relu -> y -> Add(y, w) -> z (output); w a 4096-byte weight.
 * Every tensor is 1024 float32 = 4096 bytes. */
static const char graph_text[] =
    "{\"format\": \"memplan-graph\", \"version\": 1,\n"
    "  \"name\": \"cli_tiny\",\n"
    "  \"tensors\": [\n"
    "    {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 256], \"kind\": \"input\"},\n"
    "    {\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [4, 256], \"kind\": \"weight\"},\n"
    "    {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [4, 256]},\n"
    "    {\"name\": \"z\", \"dtype\": \"float32\", \"shape\": [4, 256]}\n"
    "  ],\n"
    "  \"nodes\": [\n"
    "    {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]},\n"
    "    {\"name\": \"add\", \"op\": \"Add\", \"inputs\": [\"y\", \"w\"], \"outputs\": [\"z\"]}\n"
    "  ],\n"
    "  \"outputs\": [\"z\"]\n"
    "}\n";

static void test_plan_json(void)
{
    char graph[256];
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", graph_text) == 0);
    CU_ASSERT_EQUAL_FATAL(cli("plan %s --json", graph), 0);
    mp_test_json *j = mp_test_json_parse(out); /* exactly one JSON value */
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(mp_test_jtype(j, "%s", ""), 'o');
    const char *keys[] = {"tensors", "nodes", "lower_bound_bytes",
                          "arena_bytes", "peak_bytes", "persistent_bytes",
                          "no_reuse_bytes", "status", "solver",
                          "solve_seconds", "alignment", "peak_step",
                          "peak_tensors"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(mp_test_jget(j, "%s", keys[i]));
    int64_t lb = mp_test_jint(j, "lower_bound_bytes");
    int64_t arena = mp_test_jint(j, "arena_bytes");
    int64_t peak = mp_test_jint(j, "peak_bytes");
    int64_t pers = mp_test_jint(j, "persistent_bytes");
    int64_t noreuse = mp_test_jint(j, "no_reuse_bytes");
    CU_ASSERT_EQUAL(mp_test_jint(j, "tensors"), 4);
    CU_ASSERT_EQUAL(mp_test_jint(j, "nodes"), 2);
    CU_ASSERT_EQUAL(mp_test_jint(j, "alignment"), 256);
    CU_ASSERT_EQUAL(pers, 4096);             /* the weight */
    CU_ASSERT(lb >= 2 * 4096);               /* a node's input and output */
    CU_ASSERT(lb <= 3 * 4096);               /* x, y, z at most */
    CU_ASSERT(arena >= lb);
    CU_ASSERT(noreuse >= arena);
    CU_ASSERT_EQUAL(peak, arena + pers);
    CU_ASSERT_EQUAL(mp_test_jtype(j, "status"), 's');
    CU_ASSERT_EQUAL(mp_test_jtype(j, "solver"), 's');
    /* the peak's tensors: names from the graph, largest first, summing to
     * the live bytes at the peak step, which is the lower bound */
    CU_ASSERT_EQUAL_FATAL(mp_test_jtype(j, "peak_tensors"), 'a');
    size_t n_top = mp_test_jlen(j, "peak_tensors");
    CU_ASSERT(n_top >= 2);
    int64_t sum = 0, prev = -1;
    for (size_t i = 0; i < n_top; i++) {
        const char *name = mp_test_jstr(j, "peak_tensors[%zu].name", i);
        int64_t b = mp_test_jint(j, "peak_tensors[%zu].bytes", i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        CU_ASSERT(strcmp(name, "x") == 0 || strcmp(name, "y") == 0 ||
                  strcmp(name, "z") == 0);
        CU_ASSERT(b >= 4096);
        CU_ASSERT(prev < 0 || b <= prev);
        prev = b;
        sum += b;
    }
    CU_ASSERT_EQUAL(sum, lb);
    mp_test_json_free(j);

    /* --align with a unit reaches the plan */
    CU_ASSERT_EQUAL_FATAL(cli("plan %s --json --align 1KiB", graph), 0);
    j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(mp_test_jint(j, "alignment"), 1024);
    mp_test_json_free(j);

    /* the human summary names the graph and gives sizes with units */
    CU_ASSERT_EQUAL(cli("plan %s", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cli_tiny"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4.0 KiB (4096 bytes)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "peak at step"));
    unlink(graph);
}

/* Moves one block onto another block live at the same time (plan JSON,
 * docs/plan-format.md: "blocks" with offset, size, first, end). The block
 * with the lower offset moves up, so that the arena still holds every
 * block and overlap is the only violation. Returns the plan text with
 * that offset changed (malloc'ed), or NULL when it found no such pair of
 * equal-sized blocks. */
static char *overlap_two_blocks(const char *plan)
{
    mp_test_json *j = mp_test_json_parse(plan);
    size_t n = mp_test_jlen(j, "blocks");
    char *tampered = NULL;
    for (size_t i = 0; i < n && !tampered; i++)
        for (size_t k = i + 1; k < n && !tampered; k++) {
#define F(x, key) mp_test_jint(j, "blocks[%zu].%s", x, key)
            if (F(i, "size") != F(k, "size") || F(i, "offset") == F(k, "offset"))
                continue;
            if (!(F(i, "first") < F(k, "end") && F(k, "first") < F(i, "end")))
                continue;
            size_t lo = F(i, "offset") < F(k, "offset") ? i : k;
            size_t hi = lo == i ? k : i;
            const mp_test_jval *v = mp_test_jget(j, "blocks[%zu].offset", lo);
            size_t len = strlen(plan) + 32;
            if ((tampered = malloc(len)))
                snprintf(tampered, len, "%.*s%lld%s", (int)v->off, plan,
                         (long long)F(hi, "offset"), plan + v->end);
#undef F
        }
    mp_test_json_free(j);
    return tampered;
}

static void test_plan_verify(void)
{
    char graph[256], plan[256], tampered[256];
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", graph_text) == 0);
    CU_ASSERT_FATAL(temp(plan, sizeof plan, ".json", "") == 0);
    CU_ASSERT_FATAL(temp(tampered, sizeof tampered, ".json", "") == 0);

    CU_ASSERT_EQUAL_FATAL(cli("plan %s -o %s", graph, plan), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, plan));
    CU_ASSERT_EQUAL(cli("verify %s %s", graph, plan), 0);
    CU_ASSERT(strncmp(out, "valid:", 6) == 0);

    /* y moved onto x (or z onto y): two live tensors share bytes */
    char *text = mp_test_slurp(plan);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *moved = overlap_two_blocks(text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(moved);
    FILE *f = fopen(tampered, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT(fputs(moved, f) >= 0);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    free(moved);
    CU_ASSERT_EQUAL(cli("verify %s %s 2>&1", graph, tampered), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memplan: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "overlap"));
    CU_ASSERT_PTR_NULL(strstr(out, "valid:"));

    /* --json output and -o together: stdout is still one JSON object */
    CU_ASSERT_EQUAL(cli("plan %s --json -o %s", graph, plan), 0);
    mp_test_json *j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL(j);
    mp_test_json_free(j);
    unlink(graph);
    unlink(plan);
    unlink(tampered);
}

static void test_input_errors(void)
{
    const char *missing = "/nonexistent-dir/memplan-missing-input.json";
    CU_ASSERT_EQUAL(cli("plan %s 2>&1", missing), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, missing));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "memplan: "));
    CU_ASSERT_EQUAL(cli("offsets /nonexistent-dir/t.csv 2>&1"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent-dir/t.csv"));
    CU_ASSERT_EQUAL(cli("verify /nonexistent-dir/t.csv 2>&1"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent-dir/t.csv"));

    /* a syntax error on line 3: the message names file:line */
    char bad[256], want[300];
    CU_ASSERT_FATAL(temp(bad, sizeof bad, ".json",
                         "{\n  \"name\": \"x\",\n  oops\n}\n") == 0);
    CU_ASSERT_EQUAL(cli("plan %s 2>&1", bad), 3);
    snprintf(want, sizeof want, "%s:3:", bad);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    unlink(bad);

    /* an unwritable output: I/O error naming the output */
    char trace[256];
    CU_ASSERT_FATAL(temp(trace, sizeof trace, ".csv", trace_text) == 0);
    CU_ASSERT_EQUAL(cli("offsets %s -o /nonexistent-dir/o.csv 2>&1", trace), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent-dir/o.csv"));
    unlink(trace);
}

/* shapes, convert and --dim on a JSON graph (ONNX models with symbols
 * are covered by the onnx suite) */
static void test_shapes_convert(void)
{
    char graph[256], conv[300];
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", graph_text) == 0);
    CU_ASSERT_EQUAL_FATAL(cli("shapes %s", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "[4, 256]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "float32"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown_shapes: 0"));
    CU_ASSERT_EQUAL_FATAL(cli("shapes %s --json", graph), 0);
    mp_test_json *j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(mp_test_jint(j, "unknown_shapes"), 0);
    CU_ASSERT_EQUAL(mp_test_jlen(j, "tensors"), 4);
    mp_test_json_free(j);
    CU_ASSERT_EQUAL_FATAL(cli("plan %s --json", graph), 0);
    j = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(mp_test_jtype(j, "unknown_shapes"), 'i');
    CU_ASSERT_EQUAL(mp_test_jint(j, "unknown_shapes"), 0);
    mp_test_json_free(j);
    /* a JSON graph has no symbolic dims: a binding is refused */
    CU_ASSERT_NOT_EQUAL(cli("plan %s --dim N=4 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--dim"));
    snprintf(conv, sizeof conv, "%s.conv.json", graph);
    CU_ASSERT_EQUAL_FATAL(cli("convert %s -o %s", graph, conv), 0);
    CU_ASSERT_EQUAL_FATAL(cli("plan %s --json", conv), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"unknown_shapes\": 0"));
    remove(conv);
}


/* ---- the option table: help, usage lines, docs, suggestions, rules ---- */
/* Every option the table gives a command is in its help and in its usage
 * lines (the text before the first empty line). */
static void test_help_lists_options(void)
{
    for (int c = 0; c < CLI_CMD_COUNT_; c++) {
        CU_ASSERT_EQUAL(cli("%s --help", cli_commands[c].name), 0);
        const char *blank = strstr(out, "\n\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(blank);
        for (int id = 0; id < CLI_O_COUNT_; id++) {
            if (!((cli_options[id].cmds >> c) & 1u))
                continue;
            char opt[64];
            if (cli_options[id].short_name)
                snprintf(opt, sizeof opt, "-%c", cli_options[id].short_name);
            else
                snprintf(opt, sizeof opt, "--%s", cli_options[id].name);
            const char *at = strstr(out, opt);
            CU_ASSERT_PTR_NOT_NULL(at);
            CU_ASSERT(at && at < blank); /* in the usage lines */
            snprintf(opt, sizeof opt, "--%s", cli_options[id].name);
            at = strstr(blank, opt);
            CU_ASSERT_PTR_NOT_NULL(at); /* and described */
            if (!at)
                fprintf(stderr, "memplan %s --help: no %s\n",
                        cli_commands[c].name, opt);
        }
    }
    /* and the main help lists every command */
    CU_ASSERT_EQUAL(cli("--help"), 0);
    for (int c = 0; c < CLI_CMD_COUNT_; c++)
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cli_commands[c].name));
}

/* docs/cli.md's option lists are those the binary writes */
static void test_docs_current(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sh '%s/cli/gen-docs.sh' --check '%s' "
             "'%s/docs/cli.md' 2>&1", MP_SOURCE_DIR, MP_CLI_PATH,
             MP_SOURCE_DIR);
    int rc = mp_test_run(cmd, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(cli("help --markdown plan"), 0);
    CU_ASSERT(strncmp(out, "```\nmemplan plan INPUT", 21) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "| `--budget SIZE` |"));
    CU_ASSERT_EQUAL(cli("help --markdown nothing 2>&1"), 2);
}

static void test_did_you_mean(void)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"plan a.json --budgte 1GiB", "did you mean --budget?"},
        {"offsets t.csv --alignn 4", "did you mean --align?"},
        {"plan a.json --offlaod-solver greedy",
         "did you mean --offload-solver?"},
        /* an option of another command says which */
        {"offsets t.csv --budget 1GiB", "an option of plan, validate"},
        /* retired names say what replaced them */
        {"offload-policy m.json --gpu t4", "--device"},
        {"offload-policy --model m.json", "positional"},
        /* commands too */
        {"plna a.json", "did you mean 'plan'?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(cli("%s 2>&1", cases[i].args), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].want));
    }
    CU_ASSERT_EQUAL(cli("plan a.json --budgte 1GiB 2>&1"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown option '--budgte'"));
    /* nothing close: no suggestion */
    CU_ASSERT_EQUAL(cli("plan a.json --zzzzzzzz 2>&1"), 2);
    CU_ASSERT_PTR_NULL(strstr(out, "did you mean"));
}

/* Each option that does nothing where it is given: exit 2, saying why. */
static void test_no_effect(void)
{
    char graph[256], trace[256], placed[256];
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", graph_text) == 0);
    CU_ASSERT_FATAL(temp(trace, sizeof trace, ".csv", trace_text) == 0);
    CU_ASSERT_FATAL(temp(placed, sizeof placed, ".csv",
                         "id,lower,upper,size,offset\n0,0,2,100,0\n") == 0);
    static const struct {
        const char *cmd, *args, *want;
    } cases[] = {
        {"plan", "--solver chen", "--solver does nothing without --budget"},
        {"plan", "--max-extra 1", "--max-extra does nothing without --budget"},
        {"plan", "--maximize batch", "--maximize does nothing without --budget"},
        {"plan", "--offload", "--offload does nothing without --budget"},
        {"plan", "--budget 1GiB --offload-solver greedy",
         "--offload-solver does nothing without --offload"},
        {"plan", "--device h100", "--device does nothing without --offload"},
        {"plan", "--collapse 2", "--collapse does nothing without --dot"},
        {"plan", "--optimizer sgd", "--optimizer does nothing without --train"},
        {"plan", "--precision bf16-mixed",
         "--precision does nothing without --train"},
        {"plan", "--step-in-backward",
         "--step-in-backward does nothing without --train"},
        {"plan", "--split-weight-grad",
         "--split-weight-grad does nothing without --train"},
        {"plan", "--kv-context 64 --no-lints",
         "--kv-context does nothing with --no-lints"},
        {"plan", "--batch 4",
         "--batch does nothing on a JSON graph without --maximize"},
        {"validate", "--solver lp", "--solver does nothing without --budget"},
        {"validate", "--plan p.json --budget 1GiB",
         "--budget does nothing with --plan"},
        {"validate", "--plan p.json --align 64",
         "--align does nothing with --plan"},
        {"validate", "--lower-only --json",
         "--json does nothing with --lower-only"},
        {"validate", "--lower-only --dump d",
         "--dump does nothing with --lower-only"},
        {"convert", "--no-declared-shapes",
         "--no-declared-shapes does nothing on a JSON graph"},
        {"verify", "p.json --capacity 1MiB",
         "--capacity does nothing with a plan"},
        {"verify", "p.json --align 64", "--align does nothing with a plan"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(cli("%s %s %s 2>&1", cases[i].cmd, graph,
                            cases[i].args), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].want));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, ": ")); /* and why */
        if (!strstr(out, cases[i].want))
            fprintf(stderr, "%s %s: %s\n", cases[i].cmd, cases[i].args, out);
    }
    /* a model's options with a trace */
    CU_ASSERT_EQUAL(cli("verify %s --dim N=1 2>&1", placed), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--dim does nothing with a trace"));
    CU_ASSERT_EQUAL(cli("verify %s --batch 2 2>&1", placed), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--batch does nothing with a trace"));
    /* where they do something they are taken */
    CU_ASSERT_EQUAL(cli("plan %s --train --optimizer sgd --json", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"optimizer\": \"sgd\""));
    CU_ASSERT_NOT_EQUAL(cli("plan %s --dot /dev/null --collapse 1 --json "
                            "2>/dev/null", graph), 2);
    CU_ASSERT_EQUAL(cli("verify %s --align 4 --capacity 1MiB", placed), 0);
    unlink(graph);
    unlink(trace);
    unlink(placed);
}

static const char conv_text[] =
    "{\"format\": \"memplan-graph\", \"version\": 1,\n"
    "  \"tensors\": [\n"
    "    {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [2, 3, 8, 8], \"kind\": \"input\"},\n"
    "    {\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [4, 3, 3, 3], \"kind\": \"weight\"},\n"
    "    {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [2, 4, 8, 8], \"kind\": \"output\"}\n"
    "  ],\n"
    "  \"nodes\": [\n"
    "    {\"name\": \"conv\", \"op\": \"Conv\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"y\"],\n"
    "     \"attributes\": {\"pads\": [1, 1, 1, 1]}}\n"
    "  ],\n"
    "  \"outputs\": [\"y\"]}\n";


/* memplan itself loads no CUDA library: memplan validate executes
 * memplan-validate, found beside it */
static void test_no_cuda(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ldd '%s' | grep -c 'libcu'", MP_CLI_PATH);
    mp_test_run(cmd, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "0\n");
    char graph[256];
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", graph_text) == 0);
    CU_ASSERT_EQUAL(cli("validate %s --lower-only 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 nodes run: 2 real kernels"));
    /* without a GPU (or a build without CUDA), validate says what runs
     * without one */
    int rc = cli("validate %s 2>&1", graph);
    if (strstr(out, "no CUDA device") || strstr(out, "built without CUDA")) {
        CU_ASSERT_EQUAL(rc, 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "--lower-only"));
    }
    unlink(graph);
    /* a Conv's passes: the forward and the weight's gradient on cuDNN
     * (the input is the graph's: no input gradient) */
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", conv_text) == 0);
    CU_ASSERT_EQUAL(cli("validate %s --train --optimizer sgd --lower-only "
                        "2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "convolutions: forward 1 on cuDNN, "
                                       "0 im2col; input gradient 0 on "
                                       "cuDNN, 0 direct; weight gradient 1 "
                                       "on cuDNN, 0 direct"));
    /* --dp --rank: rank R's graph, its collectives lowered (ZeRO-3:
     * the gather and the reduce-scatter are real kernels, and the step
     * reads the one weight's gradient shard) */
    CU_ASSERT_EQUAL(cli("validate %s --train --optimizer sgd --dp 2 --zero 3 "
                        "--rank 1 --lower-only 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "8 nodes run: 8 real kernels, 0 "
                                       "synthetic"));
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --rank 2 --lower-only "
                        "2>&1", graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--rank 2: this job has 2 ranks"));
    CU_ASSERT_EQUAL(cli("validate %s --train --rank 1 --lower-only 2>&1",
                        graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "give one of them"));
    /* --ranks: every rank lowered for NCCL (--lower-only), the count and
     * the machine checked before anything runs */
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --zero 2 --ranks 2 "
                        "--lower-only 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 ranks (tp 1 x dp 2 x pp 1), one "
                                       "process per GPU"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "rank 1 (stage 0, data-parallel "
                                       "index 1, tensor-parallel index 0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "0 synthetic"));
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --ranks 3 --lower-only "
                        "2>&1", graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--ranks 3: this job has 2 ranks "
                                       "(tp 1 x dp 2 x pp 1): give --ranks "
                                       "2"));
    CU_ASSERT_EQUAL(cli("validate %s --train --ranks 2 2>&1", graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--ranks runs the ranks of --tp N, "
                                       "--dp N or --pp N"));
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --rank 1 --ranks 2 2>&1",
                        graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--rank R"));
    setenv("MEMPLAN_GPU_COUNT", "1", 1);
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --ranks 2 2>&1", graph),
                    3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--ranks 2 needs 2 GPUs, one per "
                                       "rank; this machine has 1 visible"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--rank R (0 to 1"));
    setenv("MEMPLAN_GPU_COUNT", "2", 1);
    setenv("MEMPLAN_NCCL", "/nonexistent/nccl", 1);
    CU_ASSERT_EQUAL(cli("validate %s --train --dp 2 --ranks 2 2>&1", graph),
                    3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "NCCL not found: "
                                       "MEMPLAN_NCCL=/nonexistent/nccl"));
    unsetenv("MEMPLAN_NCCL");
    unsetenv("MEMPLAN_GPU_COUNT");
    CU_ASSERT_EQUAL(cli("validate --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage: memplan validate MODEL"));
    unlink(graph);
    /* --tp under --ranks: the tensor-parallel ranks lowered for NCCL
     * (their collectives on the tp group), counted, and refused only
     * for want of GPUs */
    CU_ASSERT_FATAL(temp(graph, sizeof graph, ".json", mp_test_tiny_gpt_json) == 0);
    CU_ASSERT_EQUAL(cli("validate %s --train --tp 2 --ranks 2 --lower-only "
                        "2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 ranks (tp 2 x dp 1 x pp 1), one "
                                       "process per GPU"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "rank 1 (stage 0, data-parallel "
                                       "index 0, tensor-parallel index 1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4 all-reduce"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4 of them in the tensor-parallel "
                                       "group"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(0 synthetic)"));
    CU_ASSERT_EQUAL(cli("validate %s --train --tp 2 --sp --ranks 2 "
                        "--lower-only 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "14 of them in the tensor-parallel "
                                       "group"));
    CU_ASSERT_PTR_NULL(strstr(out, " 0 reduce-scatter"));
    CU_ASSERT_EQUAL(cli("validate %s --train --tp 2 --pp 2 --pp-cuts res "
                        "--ranks 4 --lower-only 2>&1", graph), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4 ranks (tp 2 x dp 1 x pp 2)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "the schedules deadlock-free"));
    CU_ASSERT_EQUAL(cli("validate %s --train --tp 2 --ranks 4 --lower-only "
                        "2>&1", graph), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(tp 2 x dp 1 x pp 1): give --ranks "
                                       "2"));
    setenv("MEMPLAN_GPU_COUNT", "0", 1);
    CU_ASSERT_EQUAL(cli("validate %s --train --tp 2 --ranks 2 2>&1", graph),
                    3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--ranks 2 needs 2 GPUs, one per "
                                       "rank; this machine has 0 visible"));
    unsetenv("MEMPLAN_GPU_COUNT");
    unlink(graph);
}

void mp_register_cli(void)
{
    static CU_TestInfo tests[] = {
        {"help_version", test_help_version},
        {"usage_errors", test_usage_errors},
        {"bad_sizes", test_bad_sizes},
        {"offsets_roundtrip", test_offsets_roundtrip},
        {"offsets_align", test_offsets_align},
        {"verify_trace_overlap", test_verify_trace_overlap},
        {"plan_json", test_plan_json},
        {"plan_verify", test_plan_verify},
        {"input_errors", test_input_errors},
        {"shapes_convert", test_shapes_convert},
        {"help_lists_options", test_help_lists_options},
        {"docs_current", test_docs_current},
        {"did_you_mean", test_did_you_mean},
        {"no_effect", test_no_effect},
        {"no_cuda", test_no_cuda},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("cli", tests);
}
