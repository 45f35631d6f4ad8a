#define _DEFAULT_SOURCE 1 /* mkstemps */
#include "support.h"

#include "ir.h"
#include "json.h"

#include <stdarg.h>
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
    return mp_test_node_dom(g, name, op, NULL, in, nin, out, nout);
}

uint32_t mp_test_node_dom(mp_graph *g, const char *name, const char *op,
                          const char *domain, const uint32_t *in,
                          uint32_t nin, const uint32_t *out, uint32_t nout)
{
    mp_node_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.op = op;
    d.domain = domain;
    d.inputs = in;
    d.n_inputs = nin;
    d.outputs = out;
    d.n_outputs = nout;
    d.phase = MP_PHASE_FORWARD;
    uint32_t id = MP_NONE;
    CU_ASSERT_EQUAL(mp_graph_add_node(g, &d, &id), MP_OK);
    return id;
}

/* ---- JSON read into a table of paths ------------------------------------ */
#define JPATH_MAX 1024

typedef struct jentry {
    char *path;
    mp_test_jval v;
} jentry;

struct mp_test_json {
    jentry *e;
    size_t n, cap;
};

/* An entry for v at path (its string copied); -1 when out of memory. */
static int jadd(mp_test_json *j, const char *path, const mp__jr *r,
                const mp__jval *v)
{
    static const char letter[] = {
        [MP__JT_NULL] = 'n', [MP__JT_FALSE] = 'b', [MP__JT_TRUE] = 'b',
        [MP__JT_NUMBER] = 'r', [MP__JT_STRING] = 's', [MP__JT_ARRAY] = 'a',
        [MP__JT_OBJECT] = 'o'};
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 64;
        jentry *e = realloc(j->e, cap * sizeof *e);
        if (!e)
            return -1;
        j->e = e;
        j->cap = cap;
    }
    jentry *x = &j->e[j->n];
    memset(x, 0, sizeof *x);
    x->v.type = letter[v->type];
    x->v.i = v->type == MP__JT_TRUE;
    x->v.d = v->d;
    if (v->type == MP__JT_NUMBER && v->is_int && v->fits) {
        x->v.type = 'i';
        x->v.i = v->i;
    }
    x->v.off = v->off;
    x->v.end = v->end;
    x->path = strdup(path);
    if (v->type == MP__JT_STRING)
        x->v.s = strdup(mp__jr_str(r, v->s));
    if (!x->path || (v->type == MP__JT_STRING && !x->v.s)) {
        free(x->path);
        return -1;
    }
    j->n++;
    return 0;
}

/* path[len..] = the step (".key", "key" at the top, "[i]"): the new
 * length, 0 when the path would be too long. */
static size_t jstep(char *path, size_t len, const char *key, size_t i)
{
    int n = key ? snprintf(path + len, JPATH_MAX - len, "%s%s",
                           len ? "." : "", key)
                : snprintf(path + len, JPATH_MAX - len, "[%zu]", i);
    return n < 0 || len + (size_t)n >= JPATH_MAX ? 0 : len + (size_t)n;
}

static mp_status jwalk_value(mp__jr *r, mp_test_json *j, const mp__jval *v,
                             char *path, size_t len);

/* The members of o under path; *n counts them. */
static mp_status jwalk_object(mp__jr *r, mp_test_json *j, mp__jobj *o,
                              char *path, size_t len, size_t *n)
{
    size_t mark = mp__jr_mark(r);
    mp__jval m;
    int k;
    mp_status st;
    while (!(st = mp__jr_next(r, o, &k, &m)) && k != MP__JK_END) {
        size_t l = jstep(path, len, mp__jr_key(r, o), 0);
        if (!l)
            return mp__jr_err(r, MP_ERR_PARSE, m.off, "path too long");
        if ((st = jwalk_value(r, j, &m, path, l)))
            return st;
        mp__jr_release(r, mark);
        ++*n;
    }
    path[len] = 0;
    return st;
}

static mp_status jwalk_value(mp__jr *r, mp_test_json *j, const mp__jval *v,
                             char *path, size_t len)
{
    size_t me = j->n, n = 0;
    if (jadd(j, path, r, v))
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    if (v->type == MP__JT_OBJECT) {
        mp__jobj o;
        mp__jr_object_at(r, &o, v, NULL);
        st = jwalk_object(r, j, &o, path, len, &n);
    } else if (v->type == MP__JT_ARRAY) {
        mp__jarr a;
        mp__jval e;
        bool more;
        mp__jr_array_at(r, &a, v);
        while (!st && !(st = mp__jr_elem(r, &a, &more)) && more) {
            size_t l = jstep(path, len, NULL, n++);
            if (!l)
                return mp__jr_err(r, MP_ERR_PARSE, v->off, "path too long");
            if (!(st = mp__jr_value(r, &e)))
                st = jwalk_value(r, j, &e, path, l);
        }
        path[len] = 0;
    }
    j->e[me].v.n = n;
    return st;
}

static int jcmp(const void *a, const void *b)
{
    return strcmp(((const jentry *)a)->path, ((const jentry *)b)->path);
}

/* The whole text into j, the entries sorted by path; a duplicate path is
 * a duplicate key. */
static mp_status jread(mp_ctx *ctx, mp_test_json *j, const char *text)
{
    char path[JPATH_MAX] = "";
    const mp__jval top = {.type = MP__JT_OBJECT};
    mp__jr r;
    mp__jobj o;
    size_t n = 0;
    mp__jr_init(&r, ctx, "JSON", text, strlen(text), MP__JR_NUM64);
    mp_status st = mp__jr_doc(&r, &o, NULL);
    if (!st && jadd(j, "", &r, &top))
        st = MP_ERR_NOMEM;
    if (!st)
        st = jwalk_object(&r, j, &o, path, 0, &n);
    if (!st)
        st = mp__jr_doc_end(&r);
    mp__jr_free(&r);
    if (st)
        return st;
    j->e[0].v.n = n;
    qsort(j->e, j->n, sizeof *j->e, jcmp);
    for (size_t i = 1; i < j->n; i++)
        if (strcmp(j->e[i - 1].path, j->e[i].path) == 0)
            return mp__err(ctx, MP_ERR_PARSE, "duplicate key at %s",
                           j->e[i].path);
    return MP_OK;
}

mp_test_json *mp_test_json_parse(const char *text)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_test_json *j = calloc(1, sizeof *j);
    mp_status st = ctx && j ? jread(ctx, j, text) : MP_ERR_NOMEM;
    if (st) {
        printf("\n  JSON: %s\n", ctx ? mp_ctx_message(ctx) : "no memory");
        mp_test_json_free(j);
        j = NULL;
    }
    mp_ctx_destroy(ctx);
    return j;
}

mp_test_json *mp_test_json_load(const char *path)
{
    char *text = mp_test_slurp(path);
    mp_test_json *j = text ? mp_test_json_parse(text) : NULL;
    free(text);
    return j;
}

void mp_test_json_free(mp_test_json *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++) {
        free(j->e[i].path);
        free((char *)j->e[i].v.s);
    }
    free(j->e);
    free(j);
}

static const mp_test_jval *jvget(const mp_test_json *j, const char *fmt,
                                 va_list ap)
{
    char path[JPATH_MAX];
    vsnprintf(path, sizeof path, fmt, ap);
    const jentry key = {path, {0}};
    const jentry *e = j ? bsearch(&key, j->e, j->n, sizeof *j->e, jcmp)
                        : NULL;
    return e ? &e->v : NULL;
}

/* const mp_test_jval *v: the value at the path of the variadic caller */
#define JGET(v)                                                               \
    va_list ap;                                                               \
    va_start(ap, fmt);                                                        \
    const mp_test_jval *v = jvget(j, fmt, ap);                                \
    va_end(ap)

const mp_test_jval *mp_test_jget(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v;
}

char mp_test_jtype(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v ? v->type : 0;
}

int64_t mp_test_jint(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v && v->type == 'i' ? v->i : 0;
}

double mp_test_jnum(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v && (v->type == 'i' || v->type == 'r') ? v->d : 0;
}

const char *mp_test_jstr(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v && v->type == 's' ? v->s : NULL;
}

size_t mp_test_jlen(const mp_test_json *j, const char *fmt, ...)
{
    JGET(v);
    return v && v->type == 'a' ? v->n : 0;
}

mp_graph *mp_test_gelu_train(mp_ctx *ctx)
{
    mp_graph *g = NULL, *t = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {32, 256}, dw[] = {256, 256};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w1 = mp_test_tensor(g, "W1", MP_KIND_WEIGHT, 2, dw);
    uint32_t w2 = mp_test_tensor(g, "W2", MP_KIND_WEIGHT, 2, dw);
    uint32_t c = mp_test_tensor(g, "sqrt2", MP_KIND_CONSTANT, 0, NULL);
    uint32_t one = mp_test_tensor(g, "one", MP_KIND_CONSTANT, 0, NULL);
    uint32_t half = mp_test_tensor(g, "half", MP_KIND_CONSTANT, 0, NULL);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, 2, dx);
    uint32_t d = mp_test_tensor(g, "d", MP_KIND_ACTIVATION, 2, dx);
    uint32_t e = mp_test_tensor(g, "e", MP_KIND_ACTIVATION, 2, dx);
    uint32_t a = mp_test_tensor(g, "a", MP_KIND_ACTIVATION, 2, dx);
    uint32_t m = mp_test_tensor(g, "m", MP_KIND_ACTIVATION, 2, dx);
    uint32_t u = mp_test_tensor(g, "u", MP_KIND_ACTIVATION, 2, dx);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, 2, dx);
    uint32_t i1[] = {x, w1}, i2[] = {h, c}, i4[] = {e, one}, i5[] = {h, a},
             i6[] = {m, half}, i7[] = {u, w2};
    mp_test_node(g, "mm1", "MatMul", i1, 2, &h, 1);
    mp_test_node(g, "div", "Div", i2, 2, &d, 1);
    mp_test_node(g, "erf", "Erf", &d, 1, &e, 1);
    mp_test_node(g, "add", "Add", i4, 2, &a, 1);
    mp_test_node(g, "mul", "Mul", i5, 2, &m, 1);
    mp_test_node(g, "mulhalf", "Mul", i6, 2, &u, 1);
    mp_test_node(g, "mm2", "MatMul", i7, 2, &y, 1);
    CU_ASSERT_FATAL(mp_graph_mark_output(g, y) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED; /* no optimizer temporary */
    CU_ASSERT_FATAL(mp_train_graph(g, &o, &t, NULL) == MP_OK);
    mp_graph_destroy(g);
    return t;
}

/* an int64 [n] tensor holding v: a constant, or a Constant node's output */
static uint32_t sw_target(mp_graph *g, const char *name, const int64_t *v,
                          int64_t n, int node)
{
    uint32_t t = MP_NONE;
    mp_tensor_desc d = {name, MP_DTYPE_INT64, 1, &n, 0,
                        node ? MP_KIND_ACTIVATION : MP_KIND_CONSTANT};
    CU_ASSERT_FATAL(mp_graph_add_tensor(g, &d, &t) == MP_OK);
    CU_ASSERT_FATAL(mp__tensor_set_value(g->ctx, &g->tensors[t], v,
                                         (uint32_t)n) == MP_OK);
    if (node) {
        char nn[64];
        snprintf(nn, sizeof nn, "%s_node", name);
        mp_test_node(g, nn, "Constant", NULL, 0, &t, 1);
    }
    return t;
}

mp_graph *mp_test_shifted_window(mp_ctx *ctx, unsigned f)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t bw = SW_B * SW_W;
    int64_t dq[] = {bw, SW_H, SW_N, SW_D}, dk[] = {bw, SW_H, SW_D, SW_N},
            dw[] = {SW_D, SW_D}, db[] = {1, SW_H, SW_N, SW_N},
            dwide[] = {bw, SW_H, SW_N, SW_N},
            dm[] = {1, SW_W, 1, SW_N, SW_N};
    uint32_t q, kt, v;
    if (f & SW_TRAIN) {
        uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 4, dq);
        uint32_t wq = mp_test_tensor(g, "Wq", MP_KIND_WEIGHT, 2, dw);
        uint32_t wk = mp_test_tensor(g, "Wk", MP_KIND_WEIGHT, 2, dw);
        uint32_t wv = mp_test_tensor(g, "Wv", MP_KIND_WEIGHT, 2, dw);
        q = mp_test_tensor(g, "q", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t k = mp_test_tensor(g, "k", MP_KIND_ACTIVATION, -1, NULL);
        kt = mp_test_tensor(g, "kT", MP_KIND_ACTIVATION, -1, NULL);
        v = mp_test_tensor(g, "v", MP_KIND_ACTIVATION, -1, NULL);
        uint32_t a1[] = {x, wq}, a2[] = {x, wk}, a3[] = {x, wv};
        mp_test_node(g, "q_proj", "MatMul", a1, 2, &q, 1);
        mp_test_node(g, "k_proj", "MatMul", a2, 2, &k, 1);
        mp_test_node(g, "v_proj", "MatMul", a3, 2, &v, 1);
        uint32_t tn = mp_test_node(g, "k_t", "Transpose", &k, 1, &kt, 1);
        int64_t perm[] = {0, 1, 3, 2};
        CU_ASSERT(mp_graph_set_attr_ints(g, tn, "perm", perm, 4) == MP_OK);
    } else {
        q = mp_test_tensor(g, "q", MP_KIND_INPUT, 4, dq);
        kt = mp_test_tensor(g, "kT", MP_KIND_INPUT, 4, dk);
        v = mp_test_tensor(g, "v", MP_KIND_INPUT, 4, dq);
    }
    /* q * head_dim^-0.5, as torchvision scales q */
    uint32_t qscale = mp_test_tensor(g, "qscale", MP_KIND_CONSTANT, 0, NULL);
    uint32_t qs = mp_test_tensor(g, "q_scaled", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t s = mp_test_tensor(g, "scores", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t i0[] = {q, qscale}, i1[] = {qs, kt};
    mp_test_node(g, "q_mul", "Mul", i0, 2, &qs, 1);
    mp_test_node(g, "qk", "MatMul", i1, 2, &s, 1);
    if (f & (SW_BIAS | SW_WIDE_BIAS)) {
        uint32_t b = mp_test_tensor(g, "bias",
                                    f & SW_TRAIN ? MP_KIND_WEIGHT
                                                 : MP_KIND_INPUT,
                                    4, f & SW_WIDE_BIAS ? dwide : db);
        uint32_t s2 = mp_test_tensor(g, "biased", MP_KIND_ACTIVATION, -1,
                                     NULL);
        uint32_t ib[] = {s, b};
        mp_test_node(g, "add_bias", "Add", ib, 2, &s2, 1);
        s = s2;
    }
    if (f & SW_SCALE_BETWEEN) {
        uint32_t c = mp_test_tensor(g, "c", MP_KIND_CONSTANT, 0, NULL);
        uint32_t s2 = mp_test_tensor(g, "scaled", MP_KIND_ACTIVATION, -1,
                                     NULL);
        uint32_t ic[] = {s, c};
        mp_test_node(g, "scale", "Mul", ic, 2, &s2, 1);
        s = s2;
    }
    int64_t v5[] = {SW_B, SW_W, SW_H, SW_N, SW_N}, v4[] = {-1, SW_H, SW_N,
                                                           SW_N};
    int cn = (f & SW_CONST_NODES) != 0;
    uint32_t t5 = sw_target(g, "view_shape", v5, 5, cn);
    uint32_t t4 = sw_target(g, "scores_shape", v4, 4, cn);
    uint32_t sm = mp_test_tensor(g, "smask", MP_KIND_CONSTANT, 5, dm);
    uint32_t r1 = mp_test_tensor(g, "viewed", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t a = mp_test_tensor(g, "shift_masked", MP_KIND_ACTIVATION, -1,
                                NULL);
    uint32_t r2 = mp_test_tensor(g, "unviewed", MP_KIND_ACTIVATION, -1,
                                 NULL);
    uint32_t p = mp_test_tensor(g, "probs", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t o = mp_test_tensor(g, "out", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t ir1[] = {s, t5}, ia[] = {r1, sm}, ir2[] = {a, t4}, io[] = {p, v};
    mp_test_node(g, "view", "Reshape", ir1, 2, &r1, 1);
    mp_test_node(g, "add_shift_mask", "Add", ia, 2, &a, 1);
    mp_test_node(g, "unview", "Reshape", ir2, 2, &r2, 1);
    uint32_t smn = mp_test_node(g, "softmax", "Softmax", &r2, 1, &p, 1);
    CU_ASSERT(mp_graph_set_attr_int(g, smn, "axis", -1) == MP_OK);
    mp_test_node(g, "pv", "MatMul", io, 2, &o, 1);
    CU_ASSERT_FATAL(mp_graph_mark_output(g, o) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

mp_graph *mp_test_mm_relu(mp_ctx *ctx, int64_t rows, int64_t k)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    int64_t dx[] = {rows, k}, dw[] = {k, k};
    uint32_t x = mp_test_tensor(g, "x", MP_KIND_INPUT, 2, dx);
    uint32_t w = mp_test_tensor(g, "w", MP_KIND_WEIGHT, 2, dw);
    uint32_t h = mp_test_tensor(g, "h", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t y = mp_test_tensor(g, "y", MP_KIND_ACTIVATION, -1, NULL);
    uint32_t in[] = {x, w};
    mp_test_node(g, "mm", "MatMul", in, 2, &h, 1);
    mp_test_node(g, "relu", "Relu", &h, 1, &y, 1);
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, y), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_finalize(g), MP_OK);
    return g;
}

/* A forward chain f0..f(n-1) of 1000-byte tensors and its backward chain
 * b(n-1)..b0 where b_i reads f_i and b_(i+1) (Checkmate's shape). Costs:
 * node i costs i+1 seconds. */
mp_graph *mp_test_fwd_bwd(mp_ctx *ctx, int n)
{
    mp_graph *g = NULL;
    CU_ASSERT_FATAL(mp_graph_create(ctx, &g) == MP_OK);
    uint32_t f[64], b[64];
    char nm[32];
    for (int i = 0; i < n; i++) {
        snprintf(nm, sizeof nm, "f%d", i);
        mp_tensor_desc d = {nm, MP_DTYPE_UNDEFINED, -1, NULL, 1000,
                            MP_KIND_ACTIVATION};
        CU_ASSERT_FATAL(mp_graph_add_tensor(g, &d, &f[i]) == MP_OK);
        mp_node_desc nd = {nm, "F", NULL, i ? &f[i - 1] : NULL,
                           i ? 1u : 0u, &f[i], 1, MP_PHASE_FORWARD};
        uint32_t id;
        CU_ASSERT_FATAL(mp_graph_add_node(g, &nd, &id) == MP_OK);
        mp_graph_set_node_cost(g, id, -1, -1, (double)(i + 1));
    }
    for (int i = n - 1; i >= 0; i--) {
        snprintf(nm, sizeof nm, "b%d", i);
        mp_tensor_desc d = {nm, MP_DTYPE_UNDEFINED, -1, NULL, 1000,
                            MP_KIND_GRADIENT};
        CU_ASSERT_FATAL(mp_graph_add_tensor(g, &d, &b[i]) == MP_OK);
        uint32_t in[2] = {f[i], i == n - 1 ? f[i] : b[i + 1]};
        mp_node_desc nd = {nm, "B", NULL, in, i == n - 1 ? 1u : 2u, &b[i], 1,
                           MP_PHASE_BACKWARD};
        uint32_t id;
        CU_ASSERT_FATAL(mp_graph_add_node(g, &nd, &id) == MP_OK);
        mp_graph_set_node_cost(g, id, -1, -1, 1.0);
    }
    CU_ASSERT_EQUAL(mp_graph_mark_output(g, b[0]), MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(g) == MP_OK);
    return g;
}

/* mp_test_tiny_gpt_json: a one-layer GPT of 4 tokens, hidden 8, vocabulary 6: token
 * embedding (Gather of wte[6,8]), LayerNorm, an MLP block (fc [8,16],
 * Relu, proj [16,8]), the residual Add, a final LayerNorm, the output
 * layer lm_head [8,6] (logits, the output). Float32, Adam fused. */
const char *const mp_test_tiny_gpt_json =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"tiny\","
    " \"tensors\": ["
    "{\"name\": \"ids\", \"dtype\": \"int64\", \"shape\": [1, 4], \"kind\": \"input\"},"
    "{\"name\": \"wte\", \"dtype\": \"float32\", \"shape\": [6, 8], \"kind\": \"weight\"},"
    "{\"name\": \"e\", \"dtype\": \"float32\", \"shape\": [1, 4, 8]},"
    "{\"name\": \"ln1.w\", \"dtype\": \"float32\", \"shape\": [8], \"kind\": \"weight\"},"
    "{\"name\": \"ln1.b\", \"dtype\": \"float32\", \"shape\": [8], \"kind\": \"weight\"},"
    "{\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [1, 4, 8]},"
    "{\"name\": \"fc.w\", \"dtype\": \"float32\", \"shape\": [8, 16], \"kind\": \"weight\"},"
    "{\"name\": \"f\", \"dtype\": \"float32\", \"shape\": [1, 4, 16]},"
    "{\"name\": \"r\", \"dtype\": \"float32\", \"shape\": [1, 4, 16]},"
    "{\"name\": \"proj.w\", \"dtype\": \"float32\", \"shape\": [16, 8], \"kind\": \"weight\"},"
    "{\"name\": \"o\", \"dtype\": \"float32\", \"shape\": [1, 4, 8]},"
    "{\"name\": \"h\", \"dtype\": \"float32\", \"shape\": [1, 4, 8]},"
    "{\"name\": \"lnf.w\", \"dtype\": \"float32\", \"shape\": [8], \"kind\": \"weight\"},"
    "{\"name\": \"lnf.b\", \"dtype\": \"float32\", \"shape\": [8], \"kind\": \"weight\"},"
    "{\"name\": \"z\", \"dtype\": \"float32\", \"shape\": [1, 4, 8]},"
    "{\"name\": \"head.w\", \"dtype\": \"float32\", \"shape\": [8, 6], \"kind\": \"weight\"},"
    "{\"name\": \"logits\", \"dtype\": \"float32\", \"shape\": [1, 4, 6], \"kind\": \"output\"}],"
    " \"nodes\": ["
    "{\"name\": \"wte/Gather\", \"op\": \"Gather\", \"inputs\": [\"wte\", \"ids\"], \"outputs\": [\"e\"], \"attributes\": {\"axis\": 0}},"
    "{\"name\": \"ln1\", \"op\": \"LayerNormalization\", \"inputs\": [\"e\", \"ln1.w\", \"ln1.b\"], \"outputs\": [\"a\"], \"attributes\": {\"axis\": -1}},"
    "{\"name\": \"fc\", \"op\": \"MatMul\", \"inputs\": [\"a\", \"fc.w\"], \"outputs\": [\"f\"]},"
    "{\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"f\"], \"outputs\": [\"r\"]},"
    "{\"name\": \"proj\", \"op\": \"MatMul\", \"inputs\": [\"r\", \"proj.w\"], \"outputs\": [\"o\"]},"
    "{\"name\": \"res\", \"op\": \"Add\", \"inputs\": [\"e\", \"o\"], \"outputs\": [\"h\"]},"
    "{\"name\": \"lnf\", \"op\": \"LayerNormalization\", \"inputs\": [\"h\", \"lnf.w\", \"lnf.b\"], \"outputs\": [\"z\"], \"attributes\": {\"axis\": -1}},"
    "{\"name\": \"head\", \"op\": \"MatMul\", \"inputs\": [\"z\", \"head.w\"], \"outputs\": [\"logits\"]}],"
    " \"outputs\": [\"logits\"]}";

mp_graph *mp_test_train_fused(mp_graph *f)
{
    mp_graph *t = NULL;
    mp_train_options o;
    mp_train_options_init(&o);
    o.optimizer_impl = MP_OPTIM_IMPL_FUSED;
    CU_ASSERT_FATAL(mp_train_graph(f, &o, &t, NULL) == MP_OK);
    mp_graph_destroy(f);
    return t;
}

mp_graph *mp_test_tiny_gpt_train(mp_ctx *ctx)
{
    mp_graph *f = NULL;
    CU_ASSERT_FATAL(mp_graph_load_json_string(ctx, mp_test_tiny_gpt_json,
                                              "tiny", &f) == MP_OK);
    return mp_test_train_fused(f);
}
