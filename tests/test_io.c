/* Files in and out (library side): outputs written atomically (a failed
 * write leaves the old file and no temporary file), inputs that must be
 * regular files, a byte order mark before JSON, the messages of a rank
 * above the limit, of a graph without nodes, of duplicate keys inside
 * metadata and "x-" values and of duplicate trace ids; the JSON writer's
 * UTF-8 and integers; DOT escaping; one output per graph, byte for byte.
 * The command's side is in tests/test_cli.c (cli_io). */
#include "base.h"
#include "json.h"
#include "support.h"

#include <dirent.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* x -> r1 -> h -> r2 -> y */
static const char graph_text[] =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"io\",\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [64, 64], "
    "\"kind\": \"input\"},\n"
    "  {\"name\": \"h\", \"dtype\": \"float32\", \"shape\": [64, 64], "
    "\"kind\": \"activation\"},\n"
    "  {\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [64, 64], "
    "\"kind\": \"output\"}],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"r1\", \"op\": \"Relu\", \"inputs\": [\"x\"], "
    "\"outputs\": [\"h\"]},\n"
    "  {\"name\": \"r2\", \"op\": \"Relu\", \"inputs\": [\"h\"], "
    "\"outputs\": [\"y\"]}],\n"
    " \"outputs\": [\"y\"]}\n";

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/mp_io_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
}

/* Files in dir (the temporaries are hidden: counted too). */
static int count_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The graph and its default plan. */
static void load_plan(mp_ctx *ctx, const char *text, mp_graph **g,
                      mp_plan **p)
{
    CU_ASSERT_FATAL(mp_graph_load_json_string(ctx, text, "io", g) == MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    CU_ASSERT_FATAL(mp_plan_create(*g, &o, p) == MP_OK);
}

/* ---- atomic outputs -------------------------------------------------------- */
/* Every writer, with the file size limited below what it writes: the
 * write fails (MP_ERR_IO), the old file is untouched and no temporary
 * file is left; without the limit it replaces the file. */
static void test_atomic(void)
{
    make_dir();
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    load_plan(ctx, graph_text, &g, &p);
    mp_buffer bufs[64];
    int64_t ids[64];
    for (int i = 0; i < 64; i++) {
        bufs[i] = (mp_buffer){i, i + 2, 1000, (uint64_t)i * 1000};
        ids[i] = i;
    }
    static const char old[] = "the old file\n";
    struct rlimit saved, small;
    CU_ASSERT_FATAL(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    small = saved;
    small.rlim_cur = 64;   /* every output is larger */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    for (int w = 0; w < 6; w++) {
        char path[128];
        path_in(path, sizeof path, "out");
        write_text(path, old);
        for (int limited = 1; limited >= 0; limited--) {
            CU_ASSERT_FATAL(setrlimit(RLIMIT_FSIZE,
                                      limited ? &small : &saved) == 0);
            mp_status st = MP_OK;
            switch (w) {
            case 0: st = mp_plan_save_json(p, path); break;
            case 1: st = mp_plan_write_html(p, path, NULL); break;
            case 2: st = mp_plan_write_trace(p, path, NULL); break;
            case 3: st = mp_trace_save_csv(ctx, path, bufs, ids, 64); break;
            case 4: st = mp_graph_save_json(g, path); break;
            default:
                st = mp_dot_available() ? mp_plan_write_dot(p, path, NULL)
                     : limited          ? MP_ERR_IO
                                        : MP_OK;
                if (!mp_dot_available() && !limited)
                    write_text(path, "digraph");
            }
            setrlimit(RLIMIT_FSIZE, &saved);
            char *text = mp_test_slurp(path);
            CU_ASSERT_PTR_NOT_NULL_FATAL(text);
            if (limited) {
                CU_ASSERT_EQUAL(st, MP_ERR_IO);
                CU_ASSERT_STRING_EQUAL(text, old);
                if (mp_dot_available() || w != 5)
                    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), path));
            } else {
                CU_ASSERT_EQUAL(st, MP_OK);
                CU_ASSERT(strlen(text) > sizeof old);
            }
            CU_ASSERT_EQUAL(count_files(), 1);  /* no temporary left */
            free(text);
        }
    }
    signal(SIGXFSZ, prev);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    remove_dir();
}

/* A symlink is followed (the file it names replaced, the link kept), a
 * new file gets the usual permissions, an existing one keeps its own, and
 * a device is written in place. */
static void test_atomic_targets(void)
{
    make_dir();
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    load_plan(ctx, graph_text, &g, &p);
    char real[128], link[128], fresh[128];
    path_in(real, sizeof real, "real.json");
    path_in(link, sizeof link, "link.json");
    path_in(fresh, sizeof fresh, "fresh.json");
    write_text(real, "old");
    CU_ASSERT_EQUAL(chmod(real, 0640), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("real.json", link), 0);
    CU_ASSERT_EQUAL(mp_plan_save_json(p, link), MP_OK);
    struct stat sb;
    CU_ASSERT_EQUAL(lstat(link, &sb), 0);
    CU_ASSERT(S_ISLNK(sb.st_mode));
    CU_ASSERT_EQUAL(stat(real, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 0777, 0640);
    char *text = mp_test_slurp(real);
    CU_ASSERT_PTR_NOT_NULL(text && strstr(text, "\"format\""));
    free(text);
    mode_t um = umask(022);
    CU_ASSERT_EQUAL(mp_plan_save_json(p, fresh), MP_OK);
    umask(um);
    CU_ASSERT_EQUAL(stat(fresh, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 0777, 0644);
    CU_ASSERT_EQUAL(mp_plan_save_json(p, "/dev/null"), MP_OK);
    CU_ASSERT_EQUAL(stat("/dev/null", &sb), 0);
    CU_ASSERT(S_ISCHR(sb.st_mode));
    /* a folder as the output: an error naming it, nothing written */
    CU_ASSERT_EQUAL(mp_plan_save_json(p, dir), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "is a directory"));
    CU_ASSERT_EQUAL(count_files(), 3);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    remove_dir();
}

/* ---- inputs ------------------------------------------------------------------ */
/* A folder is no input: MP_ERR_IO "is a directory" from every reader
 * (it used to read as a file of 2^63 bytes). */
static void test_regular_input(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(mp_graph_load(ctx, "/tmp", &g), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "/tmp: is a directory"));
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, "/tmp", &b, NULL, &n, NULL),
                    MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "is a directory"));
    mp_graph *g2 = NULL;
    mp_plan *p = NULL;
    load_plan(ctx, graph_text, &g2, &p);
    mp_plan *q = NULL;
    CU_ASSERT_EQUAL(mp_plan_load_json(g2, "/", &q), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "is a directory"));
    CU_ASSERT_EQUAL(mp_graph_load(ctx, "/nonexistent/g.json", &g), MP_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "cannot open"));
    mp_plan_destroy(p);
    mp_graph_destroy(g2);
    mp_ctx_destroy(ctx);
}

/* A UTF-8 byte order mark before a JSON graph, plan or CSV trace is
 * skipped (the graph was "not a valid ONNX model"); positions after it
 * are counted without it. */
static void test_bom(void)
{
    make_dir();
    mp_ctx *ctx = mp_ctx_create(NULL);
    char path[128], text[4096];
    path_in(path, sizeof path, "g.json");
    snprintf(text, sizeof text, "\xEF\xBB\xBF%s", graph_text);
    write_text(path, text);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load(ctx, path, &g), MP_OK);
    CU_ASSERT_EQUAL(mp_graph_num_nodes(g), 2);
    mp_graph_destroy(g);
    g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, text, "s", &g), MP_OK);
    mp_plan *p = NULL;
    mp_plan_options o;
    mp_plan_options_init(&o);
    CU_ASSERT_EQUAL_FATAL(mp_plan_create(g, &o, &p), MP_OK);
    char *pj = NULL, ppath[128];
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &pj), MP_OK);
    path_in(ppath, sizeof ppath, "p.json");
    char *with_bom = malloc(strlen(pj) + 4);
    sprintf(with_bom, "\xEF\xBB\xBF%s", pj);
    write_text(ppath, with_bom);
    mp_plan *q = NULL;
    CU_ASSERT_EQUAL(mp_plan_load_json(g, ppath, &q), MP_OK);
    mp_plan_destroy(q);
    free(with_bom);
    mp_free(ctx, pj);
    /* an error on line 1 after the mark: the column as an editor shows it */
    mp_graph *bad = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, "\xEF\xBB\xBF{\"format\" 1}",
                                              "b", &bad), MP_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "b:1:11:"));
    char tpath[128];
    path_in(tpath, sizeof tpath, "t.csv");
    write_text(tpath, "\xEF\xBB\xBFid,lower,upper,size\n0,0,2,10\n");
    mp_buffer *b = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, tpath, &b, NULL, &n, NULL), MP_OK);
    CU_ASSERT_EQUAL(n, 1);
    mp_free(ctx, b);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    remove_dir();
}

/* ---- messages ---------------------------------------------------------------- */
/* A shape of rank 100000: the real rank and the limit (was "rank 17"). */
static void test_rank_message(void)
{
    size_t n = 100000, cap = 2 * n + 512, len;
    char *t = malloc(cap);
    len = (size_t)snprintf(t, cap,
                           "{\"format\": \"memplan-graph\", \"version\": 1, "
                           "\"tensors\": [{\"name\": \"x\", \"dtype\": "
                           "\"float32\", \"kind\": \"input\", \"shape\": [");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s1", i ? "," : "");
    snprintf(t + len, cap - len, "]}], \"nodes\": [], \"outputs\": [\"x\"]}");
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, t, "r", &g), MP_ERR_BAD_DIM);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "rank 100000 is more than the 16 supported"));
    free(t);
    mp_ctx_destroy(ctx);
}

/* A graph without nodes whose output is its input: a clear error (there
 * is nothing to plan), not an internal "empty interval". */
static void test_no_nodes(void)
{
    static const char t[] =
        "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"e\", "
        "\"tensors\": [{\"name\": \"x\", \"dtype\": \"float32\", "
        "\"shape\": [4], \"kind\": \"input\"}], \"nodes\": [], "
        "\"outputs\": [\"x\"]}";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_graph_load_json_string(ctx, t, "e", &g), MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    mp_plan *p = NULL;
    CU_ASSERT_EQUAL(mp_plan_create(g, &o, &p), MP_ERR_GRAPH);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "graph 'e' has no nodes"));
    CU_ASSERT_PTR_NULL(strstr(mp_ctx_message(ctx), "interval"));
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* Duplicate keys inside metadata and "x-" values, at any depth, of the
 * graph and the plan formats: MP_ERR_PARSE at the second key. */
static void test_dup_keys(void)
{
    static const char *const bad[] = {
        /* graph metadata */
        "{\"format\": \"memplan-graph\", \"version\": 1, \"metadata\": "
        "{\"a\": 1,\n \"a\": 2}, \"tensors\": [], \"nodes\": [], "
        "\"outputs\": []}",
        /* nested, inside an x- value of a tensor */
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": "
        "[{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [1], "
        "\"kind\": \"input\",\n \"x-k\": {\"b\": [{\"c\": 1, \"c\": 2}]}}], "
        "\"nodes\": [], \"outputs\": []}",
        /* a top-level x- value, keys written with an escape */
        "{\"x-top\": {\"ab\": 1,\n \"a\\u0062\": 2}, \"format\": "
        "\"memplan-graph\", \"version\": 1, \"tensors\": [], \"nodes\": [], "
        "\"outputs\": []}",
        /* the same, read in two passes (lists before format) */
        "{\"tensors\": [], \"x-top\": {\"q\": 1,\n \"q\": 2}, \"format\": "
        "\"memplan-graph\", \"version\": 1, \"nodes\": [], \"outputs\": []}",
        /* an "x-" key twice in one object: at the top, in a tensor */
        "{\"format\": \"memplan-graph\", \"version\": 1, \"x-a\": 1,\n "
        "\"x-a\": 2, \"tensors\": [], \"nodes\": [], \"outputs\": []}",
        "{\"format\": \"memplan-graph\", \"version\": 1, \"tensors\": "
        "[{\"name\": \"x\", \"x-b\": {}, \"dtype\": \"float32\",\n \"x-b\": "
        "[], \"shape\": [1], \"kind\": \"input\"}], \"nodes\": [], "
        "\"outputs\": []}",
    };
    static const char *const where[] = {"m:2:2:", "m:2:25:", "m:2:2:",
                                        "m:2:2:", "m:2:2:", "m:2:2:"};
    mp_ctx *ctx = mp_ctx_create(NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp_graph *g = NULL;
        CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, bad[i], "m", &g),
                        MP_ERR_PARSE);
        const char *msg = mp_ctx_message(ctx);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, where[i]));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "duplicate key"));
        if (!strstr(msg, where[i]))
            printf("\n  %s\n", msg);
        mp_graph_destroy(g);
    }
    /* the same keys in different objects are fine, and a document read
     * twice (its keys out of the writer's order) has no duplicate */
    mp_graph *g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(
                        ctx,
                        "{\"x-a\": 1, \"tensors\": [{\"name\": \"x\", "
                        "\"dtype\": \"float32\", \"shape\": [1], \"kind\": "
                        "\"input\", \"x-a\": 2}], \"format\": "
                        "\"memplan-graph\", \"x-b\": {\"x-a\": 3}, "
                        "\"version\": 1, \"nodes\": [], \"outputs\": []}",
                        "twice", &g),
                    MP_OK);
    mp_graph_destroy(g);
    g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(
                        ctx,
                        "{\"format\": \"memplan-graph\", \"version\": 1, "
                        "\"metadata\": {\"a\": {\"a\": 1}, \"b\": {\"a\": 2}, "
                        "\"c\": [{\"a\": 1}, {\"a\": 2}]}, \"tensors\": [], "
                        "\"nodes\": [], \"outputs\": []}",
                        "ok", &g),
                    MP_OK);
    mp_graph_destroy(g);
    /* empty objects where keys are checked (the first one before any key
     * was kept: the key list was still NULL) */
    g = NULL;
    CU_ASSERT_EQUAL(mp_graph_load_json_string(
                        ctx,
                        "{\"metadata\": {}, \"x-e\": {\"x-f\": {}}, "
                        "\"format\": \"memplan-graph\", \"version\": 1, "
                        "\"tensors\": [], \"nodes\": [], \"outputs\": []}",
                        "empty", &g),
                    MP_OK);
    mp_graph_destroy(g);
    /* many objects with the same free keys, then a duplicate: in the
     * last tensor, and at the top level around the tensors (the keys of
     * an object are dropped when it ends, the top level's kept) */
    for (int top = 0; top < 2; top++) {
        size_t cap = 1 << 20, len = 0;
        char *t = malloc(cap);
        len += (size_t)snprintf(t + len, cap - len,
                                "{\"format\": \"memplan-graph\", \"version\": "
                                "1, \"x-t\": 0, \"tensors\": [\n");
        for (int i = 0; i < 400; i++) {
            len += (size_t)snprintf(t + len, cap - len,
                                    "{\"name\": \"t%d\", \"dtype\": "
                                    "\"float32\", \"shape\": [1], "
                                    "\"kind\": \"input\"", i);
            for (int k = 0; k < 20; k++)
                len += (size_t)snprintf(t + len, cap - len, ", \"x-%d\": %d",
                                        (k * 7 + i) % 20, k);
            len += (size_t)snprintf(t + len, cap - len, "},\n");
        }
        len += (size_t)snprintf(t + len, cap - len,
                                "{\"name\": \"last\", \"dtype\": "
                                "\"float32\", \"shape\": [1], \"kind\": "
                                "\"input\", \"x-5\": 1%s}]%s, "
                                "\"nodes\": [], \"outputs\": []}",
                                top ? "" : ", \"x-5\": 2",
                                top ? ",\n \"x-t\": 1" : "");
        mp_graph *many = NULL;
        CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, t, "many", &many),
                        MP_ERR_PARSE);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                      top ? "duplicate key \"x-t\""
                                          : "duplicate key \"x-5\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                      top ? "many:403:2:" : "many:402:79:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "many:40"));
        if (!strstr(mp_ctx_message(ctx), "many:40"))
            printf("\n  %s\n", mp_ctx_message(ctx));
        mp_graph_destroy(many);
        /* without the duplicates it loads */
        char *dup = strstr(t, top ? ",\n \"x-t\": 1" : ", \"x-5\": 2}]");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dup);
        memset(dup, ' ', top ? 11 : 10);
        CU_ASSERT_EQUAL(mp_graph_load_json_string(ctx, t, "many", &many),
                        MP_OK);
        mp_graph_destroy(many);
        free(t);
    }
    /* plans: metadata once, its keys unique */
    mp_graph *pg = NULL;
    mp_plan *p = NULL;
    load_plan(ctx, graph_text, &pg, &p);
    char *pj = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &pj), MP_OK);
    const char *adds[] = {"{\"metadata\": {\"k\": 1, \"k\": 2},",
                          "{\"metadata\": {}, \"metadata\": {},",
                          "{\"x-ext\": {\"k\": {\"z\": 1, \"z\": 1}},",
                          "{\"x-e\": 1, \"x-e\": 1,"};
    make_dir();
    for (size_t i = 0; i < sizeof adds / sizeof adds[0]; i++) {
        char path[128];
        path_in(path, sizeof path, "p.json");
        char *t = malloc(strlen(pj) + 64);
        sprintf(t, "%s%s", adds[i], strchr(pj, '{') + 1);
        write_text(path, t);
        mp_plan *q = NULL;
        CU_ASSERT_EQUAL(mp_plan_load_json(pg, path, &q), MP_ERR_PARSE);
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "duplicate key"));
        CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "p.json:1:"));
        mp_plan_destroy(q);
        free(t);
    }
    remove_dir();
    mp_free(ctx, pj);
    mp_plan_destroy(p);
    mp_graph_destroy(pg);
    mp_ctx_destroy(ctx);
}

/* A buffer id given twice in a trace: an error at the line of the repeat
 * naming the first (the output had two rows of one id). */
static void test_trace_dup_id(void)
{
    make_dir();
    char path[128];
    path_in(path, sizeof path, "t.csv");
    write_text(path, "id,lower,upper,size\n7,0,2,10\n8,0,2,10\n\n9,1,3,1\n"
                     "8,1,3,10\n7,2,3,4\n");
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_buffer *b = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, path, &b, &ids, &n, NULL),
                    MP_ERR_PARSE);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_PTR_NULL(ids);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "t.csv:6: column 'id': id 8 is already "
                                  "used on line 3"));
    CU_ASSERT_EQUAL(mp_trace_load_csv(ctx, path, &b, NULL, &n, NULL),
                    MP_ERR_PARSE);
    mp_ctx_destroy(ctx);
    remove_dir();
}

/* ---- writers ------------------------------------------------------------------ */
static char *jw_string(unsigned flags, const char *s)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jw w;
    mp__jw_init(&w, ctx, flags, 0);
    mp__jw_array(&w, false);
    mp__jw_string(&w, s);
    mp__jw_u64(&w, UINT64_MAX);
    mp__jw_u64(&w, (uint64_t)1 << 63);
    mp__jw_i64(&w, INT64_MIN);
    mp__jw_end(&w);
    char *out = NULL, *copy = NULL;
    if (mp__jw_done(&w, &out, NULL) == MP_OK)
        copy = strdup(out);
    mp_free(ctx, out);
    mp_ctx_destroy(ctx);
    return copy;
}

/* The JSON writer never writes invalid UTF-8: a bad byte is U+FFFD, a
 * control character an escape, a good character itself (\uXXXX, and a
 * surrogate pair above U+FFFF, in the ASCII form); 64-bit integers
 * exactly. */
static void test_json_writer(void)
{
    const char *in = "a\x01" "b\xff" "c\xc3\xa9" "d\xed\xa0\x80" "e\xf0\x9f\x98\x80"
                     "f\xc3";
    char *s = jw_string(0, in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "[\"a\\u0001b\xEF\xBF\xBD" "c\xc3\xa9"
                              "d\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                              "e\xf0\x9f\x98\x80" "f\xEF\xBF\xBD\", "
                              "18446744073709551615, 9223372036854775808, "
                              "-9223372036854775808]");
    free(s);
    s = jw_string(MP__JW_ASCII | MP__JW_COMPACT, in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "[\"a\\u0001b\\ufffdc\\u00e9"
                              "d\\ufffd\\ufffd\\ufffde\\ud83d\\ude00"
                              "f\\ufffd\",18446744073709551615,"
                              "9223372036854775808,-9223372036854775808]");
    free(s);
}

/* A graph whose names hold what DOT, JSON and a terminal cannot take as
 * they are: a trailing backslash, an escape sequence, invalid UTF-8. The
 * JSON reader refuses bytes that are not UTF-8, so it is built through
 * the API, which takes names as they come. */
static void load_nasty(mp_ctx *ctx, mp_graph **g, mp_plan **p)
{
    static const char *const names[3] = {"a\\", "b\x1b[31m", "c\xff"};
    static const mp_tensor_kind kinds[3] = {MP_KIND_INPUT, MP_KIND_ACTIVATION,
                                            MP_KIND_OUTPUT};
    int64_t dims[1] = {64};
    uint32_t t[3], n;
    CU_ASSERT_FATAL(mp_graph_create(ctx, g) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_set_name(*g, "g\\") == MP_OK);
    for (int i = 0; i < 3; i++) {
        mp_tensor_desc d = {names[i], MP_DTYPE_FLOAT32, 1, dims, 0, kinds[i]};
        CU_ASSERT_FATAL(mp_graph_add_tensor(*g, &d, &t[i]) == MP_OK);
    }
    mp_node_desc n0 = {"n\\", "Relu", NULL, &t[0], 1, &t[1], 1,
                       MP_PHASE_FORWARD};
    mp_node_desc n1 = {"m\xff", "Relu", NULL, &t[1], 1, &t[2], 1,
                       MP_PHASE_FORWARD};
    CU_ASSERT_FATAL(mp_graph_add_node(*g, &n0, &n) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_add_node(*g, &n1, &n) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_mark_output(*g, t[2]) == MP_OK);
    CU_ASSERT_FATAL(mp_graph_finalize(*g) == MP_OK);
    mp_plan_options o;
    mp_plan_options_init(&o);
    CU_ASSERT_FATAL(mp_plan_create(*g, &o, p) == MP_OK);
}

/* The same names in a JSON graph for the command, UTF-8 but for the
 * escapes the terminal must not get raw */
static const char nasty_text[] =
    "{\"format\": \"memplan-graph\", \"version\": 1, \"name\": \"g\\\\\",\n"
    " \"tensors\": [\n"
    "  {\"name\": \"a\\\\\", \"dtype\": \"float32\", \"shape\": [64], "
    "\"kind\": \"input\"},\n"
    "  {\"name\": \"b\\u001b[31m\", \"dtype\": \"float32\", \"shape\": [64], "
    "\"kind\": \"activation\"},\n"
    "  {\"name\": \"c\\u0085\", \"dtype\": \"float32\", \"shape\": [64], "
    "\"kind\": \"output\"}],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"n\\\\\", \"op\": \"Relu\", \"inputs\": [\"a\\\\\"], "
    "\"outputs\": [\"b\\u001b[31m\"]},\n"
    "  {\"name\": \"m\", \"op\": \"Relu\", \"inputs\": [\"b\\u001b[31m\"], "
    "\"outputs\": [\"c\\u0085\"]}],\n"
    " \"outputs\": [\"c\\u0085\"]}\n";

/* DOT: a backslash doubled (a lone one escaped the closing quote and
 * swallowed the next statement), control characters as '?', invalid
 * UTF-8 as U+FFFD. */
static void test_dot_escaping(void)
{
    if (!mp_dot_available()) {
        printf("skipped: built without Graphviz ");
        return;
    }
    make_dir();
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    load_nasty(ctx, &g, &p);
    char path[128];
    path_in(path, sizeof path, "g.dot");
    mp_dot_options o;
    mp_dot_options_init(&o);
    o.show_weights = 1;
    CU_ASSERT_EQUAL_FATAL(mp_plan_write_dot(p, path, &o), MP_OK);
    char *t = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "digraph \"g\\\\\" {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "label=\"a\\\\\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "label=\"n\\\\\\nRelu\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "tooltip=\"b?[31m\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "label=\"m\xEF\xBF\xBD\\nRelu\""));
    CU_ASSERT_PTR_NULL(strchr(t, '\x1b'));
    CU_ASSERT_PTR_NULL(strchr(t, '\xff'));
    CU_ASSERT(mp__utf8_valid(t));
    /* every quote in the file closes what it opened: outside strings,
     * the statements are balanced */
    int depth = 0, in_str = 0;
    for (const char *c = t; *c; c++) {
        if (in_str) {
            if (*c == '\\' && c[1])
                c++;
            else if (*c == '"')
                in_str = 0;
        } else if (*c == '"') {
            in_str = 1;
        } else if (*c == '{' || *c == '[') {
            depth++;
        } else if (*c == '}' || *c == ']') {
            depth--;
        }
    }
    CU_ASSERT_EQUAL(in_str, 0);
    CU_ASSERT_EQUAL(depth, 0);
    free(t);
    /* rendered by Graphviz's dot when installed: no syntax error */
    char cmd[256], out[4096];
    snprintf(cmd, sizeof cmd, "command -v dot >/dev/null || exit 77; "
             "dot -Tplain '%s' 2>&1 | grep -c '^node'", path);
    int rc = mp_test_run(cmd, out, sizeof out);
    if (rc != 77)
        CU_ASSERT_EQUAL(atoi(out), 3);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    remove_dir();
}

/* The plan JSON and the trace of names that are not UTF-8: valid JSON
 * (U+FFFD) that reads back. */
static void test_json_names(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    load_nasty(ctx, &g, &p);
    char *pj = NULL, *gj = NULL;
    CU_ASSERT_EQUAL_FATAL(mp_plan_to_json_string(p, &pj), MP_OK);
    CU_ASSERT_EQUAL_FATAL(mp_graph_to_json_string(g, &gj), MP_OK);
    CU_ASSERT(mp__utf8_valid(pj));
    CU_ASSERT(mp__utf8_valid(gj));
    CU_ASSERT_PTR_NOT_NULL(strstr(gj, "\"c\xEF\xBF\xBD\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(gj, "\"b\\u001b[31m\""));
    mp_test_json *j = mp_test_json_parse(pj);
    CU_ASSERT_PTR_NOT_NULL(j);
    mp_test_json_free(j);
    make_dir();
    char path[128];
    path_in(path, sizeof path, "t.json");
    CU_ASSERT_EQUAL(mp_plan_write_trace(p, path, NULL), MP_OK);
    char *t = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT(mp__utf8_valid(t));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "\"m\\ufffd\""));
    free(t);
    remove_dir();
    mp_free(ctx, pj);
    mp_free(ctx, gj);
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
}

/* One graph, one output: DOT, HTML, trace and graph JSON byte for byte
 * the same when written twice in one process (two plans of one graph);
 * the plan JSON too but for its measured solve_seconds. */
static void test_same_bytes(void)
{
    static const char rel[] = "/examples/transformer_block.json";
    char gpath[512];
    snprintf(gpath, sizeof gpath, "%s%s", MP_SOURCE_DIR, rel);
    make_dir();
    char *out[2][5] = {{NULL}};
    for (int run = 0; run < 2; run++) {
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_plan *p = NULL;
        CU_ASSERT_FATAL(mp_graph_load(ctx, gpath, &g) == MP_OK);
        mp_plan_options o;
        mp_plan_options_init(&o);
        CU_ASSERT_FATAL(mp_plan_create(g, &o, &p) == MP_OK);
        char path[5][128];
        const char *names[5] = {"g.dot", "g.html", "g.trace", "g.json",
                                "p.json"};
        for (int k = 0; k < 5; k++)
            path_in(path[k], sizeof path[k], names[k]);
        if (mp_dot_available())
            CU_ASSERT_EQUAL(mp_plan_write_dot(p, path[0], NULL), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_write_html(p, path[1], NULL), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_write_trace(p, path[2], NULL), MP_OK);
        CU_ASSERT_EQUAL(mp_graph_save_json(g, path[3]), MP_OK);
        CU_ASSERT_EQUAL(mp_plan_save_json(p, path[4]), MP_OK);
        for (int k = 0; k < 5; k++)
            out[run][k] = mp_test_slurp(path[k]);
        /* the measured time is the one figure that varies: cut out */
        char *sec = out[run][4] ? strstr(out[run][4], "\"solve_seconds\": ")
                                : NULL;
        CU_ASSERT_PTR_NOT_NULL(sec);
        if (sec) {
            size_t end = strcspn(sec, ",}");
            memmove(sec, sec + end, strlen(sec + end) + 1);
        }
        mp_plan_destroy(p);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
    }
    for (int k = 0; k < 5; k++) {
        if (k == 0 && !mp_dot_available())
            continue;
        CU_ASSERT_PTR_NOT_NULL(out[0][k]);
        CU_ASSERT(out[0][k] && out[1][k] &&
                  strcmp(out[0][k], out[1][k]) == 0);
        free(out[0][k]);
        free(out[1][k]);
    }
    remove_dir();
}

/* ---- the command ------------------------------------------------------------- */
static char cli_out[1 << 16];

/* Runs "cd dir && MP_CLI_PATH <args>" (stdout and stderr into cli_out). */
static int cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int cli(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, MP_CLI_PATH,
             args);
    cli_out[0] = 0;
    return mp_test_run(cmd, cli_out, sizeof cli_out);
}

static size_t file_size(const char *name)
{
    char path[256];
    struct stat sb;
    path_in(path, sizeof path, name);
    return stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
}

/* An output that is an input, or another output, however written: exit
 * 2 and nothing written; devices may be given twice. */
static void test_cli_same_file(void)
{
    make_dir();
    char path[256];
    path_in(path, sizeof path, "g.json");
    write_text(path, graph_text);
    path_in(path, sizeof path, "t.csv");
    write_text(path, "id,lower,upper,size\n0,0,2,10\n1,1,3,20\n");
    path_in(path, sizeof path, "sub");
    CU_ASSERT_EQUAL(mkdir(path, 0755), 0);
    size_t gsize = file_size("g.json");
    static const char *const refused[] = {
        "plan g.json -o g.json",
        "plan g.json -o ./sub/../g.json",
        "plan ./g.json --html g.json",
        "plan g.json --dot link.json",
        "plan g.json --trace %s/g.json",
        "plan g.json -o p.json --html ./p.json",
        "plan g.json -o p.json --trace sub/../p.json",
        "offsets t.csv -o t.csv",
        "convert g.json -o link.json",
        "verify g.json g.json",   /* no output: accepted as far as paths go */
    };
    path_in(path, sizeof path, "link.json");
    CU_ASSERT_EQUAL_FATAL(symlink("g.json", path), 0);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, refused[i], dir);
        int rc = cli("%s", args);
        if (i == sizeof refused / sizeof refused[0] - 1) {
            CU_ASSERT_NOT_EQUAL(rc, 2);
            continue;
        }
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT(strstr(cli_out, "would destroy the input") ||
                  strstr(cli_out, "are the same file"));
        if (rc != 2)
            printf("\n  %s: %d %s", args, rc, cli_out);
    }
    CU_ASSERT_EQUAL(file_size("g.json"), gsize);
    CU_ASSERT_EQUAL(file_size("p.json"), 0);
    /* devices are not files to protect */
    CU_ASSERT_EQUAL(cli("plan g.json -o /dev/null --html /dev/null --trace "
                        "/dev/null"), 0);
    /* convert of an ONNX model onto itself (an MNIST model lost its
     * weights): refused, the model untouched */
    if (mp_onnx_available()) {
        CU_ASSERT_EQUAL(cli("convert g.json -o m.onnx"), 0);
        size_t msize = file_size("m.onnx");
        CU_ASSERT(msize > 0);
        CU_ASSERT_EQUAL(cli("convert m.onnx -o m.onnx"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "would destroy the input"));
        CU_ASSERT_EQUAL(file_size("m.onnx"), msize);
    }
    remove_dir();
}

/* A directory as input: exit 3 "is a directory" (was exit 1, "out of
 * memory (allocating 9223372036854775808 bytes)"). */
static void test_cli_directory(void)
{
    make_dir();
    static const char *const cmds[] = {"plan .", "shapes /tmp",
                                       "offsets .", "verify ."};
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(cli("%s", cmds[i]), 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "is a directory"));
        CU_ASSERT_PTR_NULL(strstr(cli_out, "out of memory"));
    }
    remove_dir();
}

/* A write that fails part way (the file size limited): exit 3, the old
 * file as it was, no temporary file left. */
static void test_cli_failed_write(void)
{
    make_dir();
    char path[256];
    path_in(path, sizeof path, "p.json");
    write_text(path, "old plan\n");
    char args[1024];
    snprintf(args, sizeof args, "cd '%s' && (ulimit -f 1; trap '' XFSZ; "
             "exec '%s' plan '%s/examples/transformer_block.json' -o p.json "
             "--json) >/dev/null 2>&1",
             dir, MP_CLI_PATH, MP_SOURCE_DIR);
    CU_ASSERT_EQUAL(mp_test_run(args, cli_out, sizeof cli_out), 3);
    char *t = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL(t && strcmp(t, "old plan\n") == 0 ? t : NULL);
    free(t);
    CU_ASSERT_EQUAL(count_files(), 1);
    /* and without the limit it is replaced */
    CU_ASSERT_EQUAL(cli("plan '%s/examples/transformer_block.json' -o "
                        "p.json", MP_SOURCE_DIR), 0);
    CU_ASSERT(file_size("p.json") > 1000);
    CU_ASSERT_EQUAL(count_files(), 1);
    remove_dir();
}

/* offsets --json: sizes of 2^63 and more as exact integers (they were
 * rounded doubles); a BOM before the CSV header; names with escapes in
 * the terminal summary and in messages written as \xNN. */
static void test_cli_text(void)
{
    make_dir();
    char path[256];
    path_in(path, sizeof path, "big.csv");
    write_text(path, "\xEF\xBB\xBFid,lower,upper,size\n0,0,2,9223372036854775809\n");
    CU_ASSERT_EQUAL(cli("offsets big.csv --align 1 --json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out,
                                  "\"arena_bytes\": 9223372036854775809,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out,
                                  "\"lower_bound_bytes\": 9223372036854775809,"));
    /* not a real (9.2233720368547758e+18, which is 2^63) */
    CU_ASSERT_PTR_NULL(strstr(cli_out, "e+18"));
    path_in(path, sizeof path, "n.json");
    write_text(path, nasty_text);
    CU_ASSERT_EQUAL(cli("plan n.json"), 0);
    CU_ASSERT_PTR_NULL(strchr(cli_out, '\x1b'));
    CU_ASSERT_PTR_NULL(strchr(cli_out, '\xff'));
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "b\\x1b[31m"));
    CU_ASSERT_EQUAL(cli("shapes n.json"), 0);
    /* U+0085, a C1 control, as its bytes */
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "c\\xc2\\x85 "));
    CU_ASSERT_PTR_NULL(strchr(cli_out, '\x1b'));
    CU_ASSERT_EQUAL(cli("plan n.json --json"), 0);
    CU_ASSERT(mp__utf8_valid(cli_out));
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "b\\u001B[31m"));
    /* an error naming a tensor with an escape */
    path_in(path, sizeof path, "e.json");
    write_text(path, "{\"format\": \"memplan-graph\", \"version\": 1, "
                     "\"tensors\": [], \"nodes\": [{\"name\": \"n\", \"op\": "
                     "\"Relu\", \"inputs\": [\"q\\u001b[2J\"], \"outputs\": "
                     "[\"y\"]}], \"outputs\": [\"y\"]}");
    CU_ASSERT_NOT_EQUAL(cli("plan e.json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "q\\x1b[2J"));
    CU_ASSERT_PTR_NULL(strchr(cli_out, '\x1b'));
    /* bytes that are not UTF-8 in a JSON string: refused where they are */
    write_text(path, "{\"format\": \"memplan-graph\", \"version\": 1, "
                     "\"tensors\": [{\"name\": \"x\xff\", \"dtype\": "
                     "\"float32\", \"shape\": [4], \"kind\": \"input\"}], "
                     "\"nodes\": [], \"outputs\": []}");
    CU_ASSERT_EQUAL(cli("plan e.json"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "e.json:1:66: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "bytes that are not UTF-8"));
    CU_ASSERT_PTR_NULL(strchr(cli_out, '\xff'));
    remove_dir();
}

void mp_register_io(void)
{
    static CU_TestInfo tests[] = {
        {"atomic", test_atomic},
        {"atomic_targets", test_atomic_targets},
        {"regular_input", test_regular_input},
        {"bom", test_bom},
        {"rank_message", test_rank_message},
        {"no_nodes", test_no_nodes},
        {"dup_keys", test_dup_keys},
        {"trace_dup_id", test_trace_dup_id},
        {"json_writer", test_json_writer},
        {"dot_escaping", test_dot_escaping},
        {"json_names", test_json_names},
        {"same_bytes", test_same_bytes},
        {"cli_same_file", test_cli_same_file},
        {"cli_directory", test_cli_directory},
        {"cli_failed_write", test_cli_failed_write},
        {"cli_text", test_cli_text},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("io", tests);
}
