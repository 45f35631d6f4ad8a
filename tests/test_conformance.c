/* ONNX shape-inference conformance in CI (issue 3): runs the conformance
 * driver (bench_onnx_conformance, bench/onnx_conformance.c) over the
 * shared corpus (../shared/corpus) with the test inputs of Debian's
 * libonnx-testdata (onnx 1.12, scripts/install-deps.sh) bound, and checks
 * the figures: onnx-backend 140/140, onnx-node not below the measured
 * floor, static figures not below theirs. Skips with a message when the
 * corpus, the test data or the driver is absent (about 1 s). */
#include "support.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DRIVER MP_BINARY_DIR "/bench/bench_onnx_conformance"
#define TESTDATA "/usr/share/libonnx-testdata/data"

/* measured (docs/conformance.md): with the Debian inputs bound, and static */
#define NODE_FLOOR 1603
#define NODE_STATIC_FLOOR 1487
#define BACKEND_STATIC_FLOOR 130

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The first line of out that starts with prefix and holds `has`:
 * "PREFIX%d/%d" into *pass and *total; false when there is none */
static bool figure(const char *out, const char *prefix, const char *has,
                   int *pass, int *total)
{
    size_t pl = strlen(prefix);
    for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        if (len >= sizeof line || strncmp(l, prefix, pl) != 0)
            continue;
        memcpy(line, l, len);
        line[len] = '\0';
        if (strstr(line, has) &&
            sscanf(line + pl, "%d/%d", pass, total) == 2)
            return true;
    }
    return false;
}

static void test_debian_inputs(void)
{
    char buf[4096];
    const char *corpus = mp_test_corpus_file("onnx-node/test_abs.onnx", buf,
                                             sizeof buf);
    if (!corpus)
        return;
    char *slash = strstr(buf, "/onnx-node/");
    *slash = '\0';
    struct stat sb;
    if (stat(DRIVER, &sb) != 0) {
        printf("\n  skipped: %s not built (MEMPLAN_BUILD_BENCH)\n", DRIVER);
        return;
    }
    if (!is_dir(TESTDATA "/node") || !is_dir(TESTDATA "/simple")) {
        printf("\n  skipped: Debian's libonnx-testdata is not installed (%s; "
               "scripts/install-deps.sh installs it)\n", TESTDATA);
        return;
    }
    static char out[1 << 16];
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --nodes-only --inputs '%s/node' && "
             "'%s' '%s' --backend-only --backend-inputs '%s'", DRIVER, buf,
             TESTDATA, DRIVER, buf, TESTDATA);
    int rc = mp_test_run(cmd, out, sizeof out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* each figure: its line, the total, the floor (backend bound: all) */
    static const struct {
        const char *prefix, *has;
        int total, floor;
    } rows[] = {
        {"onnx-node: static (corpus only): ", "", 1802, NODE_STATIC_FLOOR},
        {"onnx-node: ", "with the test inputs bound", 1802, NODE_FLOOR},
        {"onnx-backend: static (corpus only): ", "", 140,
         BACKEND_STATIC_FLOOR},
        {"onnx-backend: ", "with the test inputs bound", 140, 140},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int pass = -1, total = -1;
        CU_ASSERT(figure(out, rows[i].prefix, rows[i].has, &pass, &total));
        CU_ASSERT_EQUAL(total, rows[i].total);
        CU_ASSERT(pass >= rows[i].floor);
        printf("\n  %s%d/%d %s(floor %d)", rows[i].prefix, pass, total,
               rows[i].has[0] ? "with the Debian inputs " : "",
               rows[i].floor);
    }
    printf("\n");
    CU_ASSERT_PTR_NULL(strstr(out, "\nFAIL "));
}

void mp_register_conformance(void)
{
    static CU_TestInfo tests[] = {
        {"onnx-node and onnx-backend with Debian's test inputs",
         test_debian_inputs},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("conformance", tests);
}
