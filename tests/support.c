#define _DEFAULT_SOURCE 1 /* mkstemps */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void mp_test_add_suite(const char *name, CU_TestInfo *tests)
{
    CU_SuiteInfo suites[] = {{name, NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    CU_register_suites(suites);
}

const char *mp_test_write_temp(const char *suffix, const char *text)
{
    static char path[8][256];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 256, "/tmp/mp_test_XXXXXX%s", suffix ? suffix : "");
    int fd = mkstemps(p, suffix ? (int)strlen(suffix) : 0);
    if (fd < 0)
        return NULL;
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    close(fd);
    return w == (ssize_t)len ? p : NULL;
}

int mp_test_run(const char *cmd, char *out, size_t cap)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = 0;
    if (out && cap) {
        n = fread(out, 1, cap - 1, f);
        out[n] = 0;
    } else {
        char buf[4096];
        while (fread(buf, 1, sizeof buf, f) > 0) {
        }
    }
    int st = pclose(f);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

uint64_t mp_test_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

char *mp_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    if (!buf && !(buf = malloc(1)))
        return NULL;
    buf[len] = 0;
    return buf;
}

int mp_test_count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

mp_constraints *mp_test_two_pools(mp_ctx *ctx, const char *n0,
                                  const char *n1, uint32_t t0, uint32_t t1)
{
    mp_constraints *c = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_constraints_create(ctx, &c), MP_OK);
    mp_pool_desc d[2] = {{n0, UINT64_MAX, 1e12, 0}, {n1, UINT64_MAX, 1e11, 0}};
    uint32_t t[2] = {t0, t1};
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t id = MP_NONE;
        CU_ASSERT_EQUAL_FATAL(mp_constraints_add_pool(c, &d[k], &id), MP_OK);
        CU_ASSERT_EQUAL(id, k);
        if (t[k] != MP_NONE)
            CU_ASSERT_EQUAL(mp_constraints_pin(c, t[k], k, 0), MP_OK);
    }
    return c;
}

void mp_test_assert_shape(const mp_graph *g, const char *name, int rank,
                          const int64_t *dims)
{
    uint32_t id;
    mp_tensor_info t;
    CU_ASSERT_FATAL(mp_graph_find_tensor(g, name, &id) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_tensor_info(g, id, &t) == MP_OK);
    CU_ASSERT_EQUAL_FATAL(t.rank, rank);
    for (int i = 0; i < rank; i++)
        CU_ASSERT_EQUAL(t.dims[i], dims[i]);
}

void mp_test_plan_verify(mp_graph *g)
{
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, NULL, &p), MP_OK);
    CU_ASSERT_EQUAL(mp_verify_plan(g, p), MP_OK);
    mp_plan_destroy(p);
}

const char *mp_test_corpus_file(const char *rel, char *buf, size_t cap)
{
    const char *roots[] = {MP_SOURCE_DIR "/../shared/corpus",
                           "/work/shared/corpus"};
    for (int i = 0; i < 2; i++) {
        snprintf(buf, cap, "%s/%s", roots[i], rel);
        FILE *f = fopen(buf, "rb");
        if (f) {
            fclose(f);
            return buf;
        }
    }
    printf("\n  skipped: corpus file %s not present (../shared/corpus)\n",
           rel);
    return NULL;
}

uint32_t mp_test_tensor(mp_graph *g, const char *name, mp_tensor_kind kind,
                        int rank, const int64_t *dims)
{
    mp_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = MP_DTYPE_FLOAT32;
    d.rank = rank;
    d.dims = dims;
    d.kind = kind;
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_tensor(g, &d, &id), MP_OK);
    return id;
}

uint32_t mp_test_node(mp_graph *g, const char *name, const char *op,
                      const uint32_t *in, uint32_t nin, const uint32_t *out,
                      uint32_t nout)
{
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.op = op;
    d.inputs = in;
    d.n_inputs = nin;
    d.outputs = out;
    d.n_outputs = nout;
    d.phase = MP_PHASE_FORWARD;
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, &id), MP_OK);
    return id;
}
