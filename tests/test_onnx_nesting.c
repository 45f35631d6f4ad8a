/* Nesting in ONNX models: types (sequence of sequence of ...) and If
 * bodies nested 64 deep load; 65, 3,000 and 100,000 deep are refused
 * with MP_ERR_UNSUPPORTED (exit 3) and a message naming the place, never
 * a crash (protobuf-c unpacks by recursion: the scan of
 * frontends/onnx/onnx_scan.c checks the depth first). The deepest model
 * within the limits loads on a thread with a 512 KiB stack (its stack use
 * measured) and `memplan plan` runs it under `ulimit -s 512`. The models
 * are written here in the protobuf wire format, inside out by their sizes
 * (protobuf-c's packing recurses too). */
#define _DEFAULT_SOURCE 1 /* mkstemps */
#include "support.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MP_WITH_ONNX

/* ---- the wire format ------------------------------------------------------ */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void put_raw(bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        CU_ASSERT_FATAL(b->p != NULL);
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static void put_varint(bytes *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    put_raw(b, t, n);
}

static void put_int(bytes *b, unsigned field, int64_t v)
{
    put_varint(b, field << 3);
    put_varint(b, (uint64_t)v);
}

static void put_ld(bytes *b, unsigned field, const void *p, size_t n)
{
    put_varint(b, field << 3 | 2);
    put_varint(b, n);
    put_raw(b, p, n);
}

static void put_str(bytes *b, unsigned field, const char *s)
{
    put_ld(b, field, s, strlen(s));
}

/* a message field holding m (which is freed) */
static void put_msg(bytes *b, unsigned field, bytes *m)
{
    put_ld(b, field, m->p, m->n);
    free(m->p);
    *m = (bytes){0};
}

/* One level of a deep chain: fields pre[0], then a message field tag[0]
 * holding pre[1], a message field tag[1] holding ..., holding the next
 * level; then, after the headers close, post. */
typedef struct level {
    bytes pre[3];
    unsigned tag[3];
    int n_hdr;
    bytes post;
} level;

/* n levels around core (the innermost message's bytes), written
 * outside in from their sizes: linear in the output. */
static bytes deep(const level *lv, size_t n, const bytes *core)
{
    size_t *size = malloc((n + 1) * sizeof *size);
    CU_ASSERT_FATAL(size != NULL);
    size[0] = core->n;
    for (size_t k = 1; k <= n; k++) {
        size_t inner = size[k - 1];
        for (int j = lv->n_hdr - 1; j >= 0; j--)
            inner = lv->pre[j].n + varint_len((uint64_t)lv->tag[j] << 3) +
                    varint_len(inner) + inner;
        size[k] = inner + lv->post.n;
    }
    bytes b = {0};
    for (size_t k = n; k >= 1; k--) {
        size_t len[3], inner = size[k - 1];
        for (int j = lv->n_hdr - 1; j >= 0; j--) {
            len[j] = inner;
            inner = lv->pre[j].n + varint_len((uint64_t)lv->tag[j] << 3) +
                    varint_len(inner) + inner;
        }
        for (int j = 0; j < lv->n_hdr; j++) {
            put_raw(&b, lv->pre[j].p, lv->pre[j].n);
            put_varint(&b, lv->tag[j] << 3 | 2);
            put_varint(&b, len[j]);
        }
    }
    put_raw(&b, core->p, core->n);
    for (size_t k = 0; k < n; k++)
        put_raw(&b, lv->post.p, lv->post.n);
    free(size);
    return b;
}

static void level_free(level *lv)
{
    for (int j = 0; j < 3; j++)
        free(lv->pre[j].p);
    free(lv->post.p);
}

/* TypeProto: tensor of elem with dims [2] (rank 1), [] (rank 0), [n]
 * (rank -2: a symbol), no shape (rank -1) */
static bytes tensor_type(int elem, int rank)
{
    bytes tt = {0}, tp = {0};
    put_int(&tt, 1, elem);
    if (rank > 0 || rank == -2) {
        bytes dim = {0}, shape = {0};
        if (rank > 0)
            put_int(&dim, 1, 2);
        else
            put_str(&dim, 2, "n");
        put_msg(&shape, 1, &dim);
        put_msg(&tt, 2, &shape);
    } else if (rank == 0) {
        put_ld(&tt, 2, "", 0);
    }
    put_msg(&tp, 1, &tt);
    return tp;
}

/* ValueInfoProto name: type (freed) */
static bytes value_info(const char *name, bytes *type)
{
    bytes v = {0};
    put_str(&v, 1, name);
    put_msg(&v, 2, type);
    return v;
}

/* A TypeProto nested levels deep: levels - 1 sequence types around a
 * tensor type. */
static bytes nested_type(size_t levels)
{
    bytes core = tensor_type(1, 1);
    level lv = {.tag = {4, 1}, .n_hdr = 2}; /* sequence_type, elem_type */
    bytes t = deep(&lv, levels - 1, &core);
    free(core.p);
    return t;
}

/* GraphProto: y = Identity(x), y a graph output ([2] float32) */
static bytes identity_graph(void)
{
    bytes g = {0}, node = {0}, t = tensor_type(1, 1), vi;
    put_str(&node, 1, "x");
    put_str(&node, 2, "y");
    put_str(&node, 4, "Identity");
    put_msg(&g, 1, &node);
    vi = value_info("y", &t);
    put_msg(&g, 12, &vi);
    return g;
}

/* ModelProto (IR 8, opset 17) around the top graph's fields (freed);
 * inputs x (float32 [2]) and c (bool scalar) appended */
static int x_symbolic; /* x is [n], n unbound: the load stops before
                          finalize */

static bytes model_of(bytes *graph)
{
    bytes t = tensor_type(1, x_symbolic ? -2 : 1), tc = tensor_type(9, 0);
    bytes vx = value_info("x", &t), vc = value_info("c", &tc);
    put_msg(graph, 11, &vx);
    put_msg(graph, 11, &vc);
    bytes m = {0}, op = {0};
    put_int(&m, 1, 8);
    put_str(&op, 1, "");
    put_int(&op, 2, 17);
    put_msg(&m, 8, &op);
    put_msg(&m, 7, graph);
    return m;
}

/* y = Identity(x), with value_info of y typed levels deep */
static bytes type_model(size_t levels)
{
    bytes g = identity_graph(), t = nested_type(levels);
    bytes vi = value_info("y", &t);
    put_msg(&g, 13, &vi);
    return model_of(&g);
}

/* If nodes nested levels deep: each graph holds y = If(c) with the next
 * graph as then_branch and y = Identity(x) as else_branch; the innermost
 * then_branch is y = Identity(x) too, with value_info of z typed
 * type_levels deep when type_levels > 0. */
static bytes if_model(size_t levels, size_t type_levels)
{
    level lv = {.tag = {1, 5, 6}, .n_hdr = 3}; /* node, attribute, g */
    bytes els = identity_graph(), attr = {0};
    put_str(&lv.pre[1], 1, "c");
    put_str(&lv.pre[1], 2, "y");
    put_str(&lv.pre[1], 4, "If");
    put_str(&attr, 1, "else_branch");
    put_int(&attr, 20, 5); /* GRAPH */
    put_msg(&attr, 6, &els);
    put_msg(&lv.pre[1], 5, &attr);
    put_str(&lv.pre[2], 1, "then_branch");
    put_int(&lv.pre[2], 20, 5);
    bytes t = tensor_type(1, 1), vi = value_info("y", &t);
    put_msg(&lv.post, 12, &vi);
    bytes core = identity_graph();
    if (type_levels) {
        bytes z = nested_type(type_levels), vz = value_info("z", &z);
        put_msg(&core, 13, &vz);
    }
    bytes g = deep(&lv, levels, &core);
    free(core.p);
    level_free(&lv);
    return model_of(&g);
}

/* ---- loading ---------------------------------------------------------------- */
static char msg[1024];

static mp_status load(const bytes *m)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_status st =
        mp_graph_load_onnx_buffer(ctx, m->p, m->n, "deep.onnx", NULL, &g);
    snprintf(msg, sizeof msg, "%s", mp_ctx_message(ctx));
    CU_ASSERT((st == MP_OK) == (g != NULL));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return st;
}

/* `memplan plan` on the model, with a stack limit in KiB (0: none): the
 * exit code; stderr in out */
static char out[4096];

static int plan_exit(const bytes *m, int stack_kib)
{
    char path[64], cmd[512];
    snprintf(path, sizeof path, "/tmp/mp_deep_XXXXXX.onnx");
    int fd = mkstemps(path, 5);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, m->p, m->n) == (ssize_t)m->n);
    close(fd);
    if (stack_kib)
        snprintf(cmd, sizeof cmd, "sh -c 'ulimit -s %d && exec \"%s\" plan "
                 "%s' 2>&1 >/dev/null", stack_kib, MP_CLI_PATH, path);
    else
        snprintf(cmd, sizeof cmd, "'%s' plan %s 2>&1 >/dev/null",
                 MP_CLI_PATH, path);
    int rc = mp_test_run(cmd, out, sizeof out);
    unlink(path);
    return rc;
}

static const size_t depths[] = {64, 65, 3000, 100000};

/* each depth: the load status and message, the command's exit */
static void check_depths(bytes (*make)(size_t), const char *says)
{
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        bytes m = make(depths[i]);
        mp_status st = load(&m);
        if (depths[i] <= 64) {
            if (st)
                printf("\n  depth %zu: %s\n", depths[i], msg);
            CU_ASSERT_EQUAL(st, MP_OK);
            CU_ASSERT_EQUAL(plan_exit(&m, 0), 0);
        } else {
            if (st != MP_ERR_UNSUPPORTED || !strstr(msg, says))
                printf("\n  depth %zu: %s: %s\n", depths[i],
                       mp_status_name(st), msg);
            CU_ASSERT_EQUAL(st, MP_ERR_UNSUPPORTED);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, says));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "deep.onnx: graph > "));
            /* the same under a small stack: refused, not a crash */
            int rc = plan_exit(&m, 512);
            CU_ASSERT_EQUAL(rc, 3);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, says));
        }
        free(m.p);
    }
}

static bytes type_model_n(size_t n) { return type_model(n); }
static bytes if_model_n(size_t n) { return if_model(n, 0); }

static void test_type_depth(void)
{
    check_depths(type_model_n, "value_info 0 'y' > type: types nested "
                               "deeper than 64 levels");
}

static void test_if_depth(void)
{
    check_depths(if_model_n, "subgraphs nested deeper than 64");
    /* the place: the path through the nodes, elided in the middle */
    bytes m = if_model(65, 0);
    CU_ASSERT_EQUAL(load(&m), MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "graph > node 0 ('If') > attribute 1 "
                                       "'then_branch' > graph > ... > "));
    free(m.p);
}

/* ---- stack use -------------------------------------------------------------- */
#define STACK_KIB 512
#define PAINT 0xa5

typedef struct stack_run {
    const bytes *m;
    mp_status st;
    volatile uint8_t *low; /* the lowest byte of the painted region */
} stack_run;

static void *load_thread(void *arg)
{
    stack_run *r = arg;
    r->st = load(r->m);
    return NULL;
}

/* Loads the model on a thread with a 512 KiB stack painted beforehand;
 * returns the bytes of it the load touched. */
static size_t stack_used(const bytes *m, mp_status *st)
{
    size_t size = (size_t)STACK_KIB << 10;
    uint8_t *stack = NULL;
    CU_ASSERT_FATAL(posix_memalign((void **)&stack, 4096, size) == 0);
    memset(stack, PAINT, size);
    pthread_attr_t attr;
    pthread_t th;
    stack_run r = {m, MP_OK, stack};
    pthread_attr_init(&attr);
    CU_ASSERT_FATAL(pthread_attr_setstack(&attr, stack, size) == 0);
    CU_ASSERT_FATAL(pthread_create(&th, &attr, load_thread, &r) == 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    size_t untouched = 0;
    while (untouched < size && stack[untouched] == PAINT)
        untouched++;
    free(stack);
    *st = r.st;
    return size - untouched;
}

static void test_small_stack(void)
{
    /* the deepest model within the limits: If bodies 64 deep, the
     * innermost declaring a type 64 deep */
    bytes worst = if_model(64, 64), flat = if_model(1, 0);
    mp_status st;
    size_t used = stack_used(&worst, &st);
    if (st)
        printf("\n  %s\n", msg);
    CU_ASSERT_EQUAL(st, MP_OK);
    size_t used1 = stack_used(&flat, &st);
    CU_ASSERT_EQUAL(st, MP_OK);
    printf("\n  stack used loading If x64 + type x64: %zu KiB of %d "
           "(If x1: %zu KiB) ", used >> 10, STACK_KIB, used1 >> 10);
    /* protobuf-c's unpacking, about 1 KiB per nested message, is most of
     * it: 64 x 3 messages for the bodies, 64 x 2 for the type */
    CU_ASSERT(used < (size_t)(STACK_KIB - 64) << 10);
    /* the whole command under ulimit -s 512 */
    int rc = plan_exit(&worst, STACK_KIB);
    if (rc)
        printf("\n  %s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    free(worst.p);
    free(flat.p);
}

/* ---- allocation failures ---------------------------------------------------
 * Every allocation of a load failed in turn: MP_ERR_NOMEM (or, for a
 * model the scan refuses, that refusal when the failed allocation came
 * after it), nothing left allocated. */
typedef struct counting {
    long calls, fail_at, live;
} counting;

static void *c_malloc(void *u, size_t n)
{
    counting *c = u;
    if (++c->calls == c->fail_at)
        return NULL;
    void *p = malloc(n ? n : 1);
    c->live += p != NULL;
    return p;
}

static void *c_realloc(void *u, void *p, size_t n)
{
    counting *c = u;
    if (++c->calls == c->fail_at)
        return NULL;
    void *q = realloc(p, n ? n : 1);
    c->live += q && !p;
    return q;
}

static void c_free(void *u, void *p)
{
    counting *c = u;
    c->live -= p != NULL;
    free(p);
}

static mp_status load_failing(const bytes *m, long fail_at, long *calls,
                              long *live)
{
    counting c = {0, 0, 0};
    mp_allocator a = {c_malloc, c_realloc, c_free, &c};
    mp_ctx *ctx = mp_ctx_create(&a);
    CU_ASSERT_FATAL(ctx != NULL);
    c.calls = 0; /* the load's allocations from here */
    c.fail_at = fail_at;
    mp_graph *g = NULL;
    mp_status st =
        mp_graph_load_onnx_buffer(ctx, m->p, m->n, "deep.onnx", NULL, &g);
    snprintf(msg, sizeof msg, "%s", mp_ctx_message(ctx));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    *calls = c.calls;
    *live = c.live;
    return st;
}

static void torture(const bytes *m, mp_status want)
{
    long calls, live, n;
    char want_msg[sizeof msg];
    CU_ASSERT_EQUAL(load_failing(m, 0, &n, &live), want);
    snprintf(want_msg, sizeof want_msg, "%s", msg);
    CU_ASSERT_EQUAL(live, 0);
    CU_ASSERT(n >= 2);
    for (long k = 1; k <= n; k++) {
        mp_status st = load_failing(m, k, &calls, &live);
        bool ok = st == MP_ERR_NOMEM ||
                  (want && st == want && strcmp(msg, want_msg) == 0);
        if (!ok)
            printf("\n  allocation %ld of %ld failed: %s: %s\n", k, n,
                   mp_status_name(st), msg);
        CU_ASSERT(ok);
        CU_ASSERT_EQUAL(live, 0);
    }
}

static void test_alloc_fail(void)
{
    /* the scan and the graphs built, to the error for n before
     * finalize (whose If shape function is not under test here) */
    x_symbolic = 1;
    bytes ok = if_model(3, 3);
    x_symbolic = 0;
    bytes deep_if = if_model(65, 0), deep_type = type_model(65),
          flat = type_model(64);
    CU_ASSERT_EQUAL(load(&ok), MP_ERR_SHAPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "symbolic dim not bound: 'n'"));
    torture(&ok, MP_ERR_SHAPE);
    torture(&flat, MP_OK);
    free(flat.p);
    torture(&deep_if, MP_ERR_UNSUPPORTED);
    torture(&deep_type, MP_ERR_UNSUPPORTED);
    free(ok.p);
    free(deep_if.p);
    free(deep_type.p);
}

void mp_register_onnx_nesting(void)
{
    static CU_TestInfo tests[] = {
        {"types 64 deep load; 65, 3000, 100000 are refused", test_type_depth},
        {"If bodies 64 deep load; 65, 3000, 100000 are refused",
         test_if_depth},
        {"the deepest model loads under a 512 KiB stack", test_small_stack},
        {"every allocation failed in turn: MP_ERR_NOMEM, no leak",
         test_alloc_fail},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("onnx_nesting", tests);
}

#else

void mp_register_onnx_nesting(void) {}

#endif
