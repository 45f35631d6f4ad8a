/* The library's JSON reader and writer (frontends/json/json.h) on their
 * own: layouts, escaping and number forms of the writer (jansson's, which
 * the CLI's --json keeps), and the reader's values, key tables, numbers,
 * nesting limit and messages. */
#include "json.h"
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer ------------------------------------------------------------- */
static char *written(mp__jw *w)
{
    char *s = NULL;
    CU_ASSERT_EQUAL(mp__jw_done(w, &s, NULL), MP_OK);
    return s;
}

static void test_layouts(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jw w;
    mp__jw_init(&w, ctx, 0, 0);
    mp__jw_object(&w, true);
    mp__jw_key(&w, "a");
    mp__jw_i64(&w, -3);
    mp__jw_key(&w, "list");
    mp__jw_array(&w, true);
    mp__jw_object(&w, false);
    mp__jw_key(&w, "x");
    mp__jw_array(&w, false);
    mp__jw_u64(&w, 1);
    mp__jw_u64(&w, 2);
    mp__jw_end(&w);
    mp__jw_key(&w, "sub");
    mp__jw_object(&w, true); /* a block inside a one-line object */
    mp__jw_key(&w, "y");
    mp__jw_null(&w);
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_end(&w);
    mp__jw_key(&w, "empty");
    mp__jw_array(&w, true);
    mp__jw_end(&w);
    mp__jw_key(&w, "t");
    mp__jw_bool(&w, true);
    mp__jw_end(&w);
    char *s = written(&w);
    CU_ASSERT_STRING_EQUAL(s, "{\n  \"a\": -3,\n  \"list\": [\n    {\"x\": [1, "
                              "2], \"sub\": {\n        \"y\": null\n      }}"
                              "\n  ],\n  \"empty\": [],\n  \"t\": true\n}");
    mp_free(ctx, s);

    /* compact, a line break asked for, characters outside ASCII escaped */
    mp__jw_init(&w, ctx, MP__JW_COMPACT | MP__JW_ASCII, 0);
    mp__jw_object(&w, false);
    mp__jw_key(&w, "n");
    mp__jw_string(&w, "r\xc3\xa9\"\\\n");
    mp__jw_newline(&w);
    mp__jw_key(&w, "e");
    mp__jw_array(&w, true);
    mp__jw_fixed(&w, 1.5, 3);
    mp__jw_string_begin(&w);
    mp__jw_string_add(&w, "free ");
    mp__jw_string_add(&w, "x");
    mp__jw_string_end(&w);
    mp__jw_end(&w);
    mp__jw_end(&w);
    s = written(&w);
    /* a character outside ASCII as its code point (U+00E9), not its bytes */
    CU_ASSERT_STRING_EQUAL(s, "{\"n\":\"r\\u00e9\\\"\\\\\\u000a\",\n"
                              "\"e\":[\n1.500,\n\"free x\"\n]}");
    mp_free(ctx, s);

    /* unbalanced: an error, nothing returned */
    mp__jw_init(&w, ctx, 0, 0);
    mp__jw_array(&w, false);
    CU_ASSERT_EQUAL(mp__jw_done(&w, &s, NULL), MP_ERR_INTERNAL);
    CU_ASSERT_PTR_NULL(s);
    mp_ctx_destroy(ctx);
}

static void test_numbers_written(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    static const struct {
        double v;
        const char *roundtrip, *shortest;
    } cases[] = {{1.0, "1.0", "1"},
                 {100.0, "100.0", "1e+02"},
                 {0.1, "0.1", "0.1"},
                 {-0.0, "-0.0", "-0"},
                 {0.1 + 0.2, "0.30000000000000004", "0.30000000000000004"},
                 {1e300, "1e+300", "1e+300"},
                 {5e-324, "4.94065645841247e-324", "5e-324"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mp__jw w;
        for (int f = 0; f < 2; f++) {
            mp__jw_init(&w, ctx, 0, 0);
            mp__jw_double(&w, cases[i].v, f ? MP__JW_SHORTEST
                                            : MP__JW_ROUNDTRIP, "x");
            char *s = written(&w);
            CU_ASSERT_STRING_EQUAL(s, f ? cases[i].shortest
                                        : cases[i].roundtrip);
            mp_free(ctx, s);
        }
    }
    /* not finite: an error naming the value (graph JSON), 0 (plans) */
    mp__jw w;
    char *s;
    mp__jw_init(&w, ctx, 0, 0);
    mp__jw_double(&w, INFINITY, MP__JW_ROUNDTRIP, "node 'n': cost");
    CU_ASSERT_EQUAL(mp__jw_done(&w, &s, NULL), MP_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), "node 'n': cost"));
    mp__jw_init(&w, ctx, 0, 0);
    mp__jw_double(&w, NAN, MP__JW_SHORTEST, "x");
    s = written(&w);
    CU_ASSERT_STRING_EQUAL(s, "0");
    mp_free(ctx, s);
    mp_ctx_destroy(ctx);
}

/* jansson's JSON_INDENT(2) output, reals and escapes included, is what
 * the writer gives with every container on lines (the CLI's --json, which
 * jansson wrote before). The expected text is what jansson 2.14's
 * json_dumps(JSON_INDENT(2) | JSON_PRESERVE_ORDER) gave for the same
 * values. */
static void test_as_jansson(void)
{
    static const double reals[] = {1.0, 0.1, 1e20, 1.5e-7, 123456789.125,
                                   -2.5e300, 3.0e-5, (double)UINT64_MAX};
    const char *text = "tab\there \x01 \x1f \"q\" \\ /";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jw w;
    mp__jw_init(&w, ctx, MP__JW_UPPER, 0);
    mp__jw_object(&w, true);
    mp__jw_key(&w, "s");
    mp__jw_string(&w, text);
    mp__jw_key(&w, "reals");
    mp__jw_array(&w, true);
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        mp__jw_double(&w, reals[i], MP__JW_G17, "x");
    mp__jw_end(&w);
    mp__jw_key(&w, "nested");
    mp__jw_object(&w, true);
    mp__jw_key(&w, "empty");
    mp__jw_object(&w, true);
    mp__jw_end(&w);
    mp__jw_key(&w, "n");
    mp__jw_i64(&w, INT64_MIN);
    mp__jw_end(&w);
    /* UTF-8 and DEL as they are */
    mp__jw_key(&w, "k\n\xc3\xa9");
    mp__jw_string(&w, "r\xc3\xa9 \x7f \xe2\x80\xa8");
    mp__jw_end(&w);
    char *mine = written(&w);
    const char *theirs =
        "{\n"
        "  \"s\": \"tab\\there \\u0001 \\u001F \\\"q\\\" \\\\ /\",\n"
        "  \"reals\": [\n"
        "    1.0,\n"
        "    0.10000000000000001,\n"
        "    1e20,\n"
        "    1.4999999999999999e-7,\n"
        "    123456789.125,\n"
        "    -2.5000000000000001e300,\n"
        "    3.0000000000000001e-5,\n"
        "    1.8446744073709552e19\n"
        "  ],\n"
        "  \"nested\": {\n"
        "    \"empty\": {},\n"
        "    \"n\": -9223372036854775808\n"
        "  },\n"
        "  \"k\\n\xc3\xa9\": \"r\xc3\xa9 \x7f \xe2\x80\xa8\"\n"
        "}";
    if (strcmp(mine, theirs) != 0)
        printf("\n  writer:\n%s\n  jansson:\n%s\n", mine, theirs);
    CU_ASSERT_STRING_EQUAL(mine, theirs);
    mp_free(ctx, mine);
    mp_ctx_destroy(ctx);
}

/* ---- reader ------------------------------------------------------------- */
static const char *const keys3[] = {"a", "b", "c"};
static const mp__jkeys abc = {keys3, 3, MP__JK_EXT, NULL};

/* Reads text as an object of keys a, b, c (values skipped): its status,
 * the message into msg. */
static mp_status read_abc(const char *text, unsigned flags, char *msg,
                          size_t cap)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jr r;
    mp__jobj o;
    int k;
    mp__jr_init(&r, ctx, "t.json", text, strlen(text), flags);
    mp_status st = mp__jr_doc(&r, &o, &abc);
    while (!st && !(st = mp__jr_member(&r, &o, &k)) && k != MP__JK_END)
        st = mp__jr_skip_value(&r);
    if (!st)
        st = mp__jr_doc_end(&r);
    snprintf(msg, cap, "%s", st ? mp_ctx_message(ctx) : "");
    mp__jr_free(&r);
    mp_ctx_destroy(ctx);
    return st;
}

static void test_reader_messages(void)
{
    static const struct {
        const char *text;
        mp_status st;
        const char *msg;
    } cases[] = {
        {"{\"a\": 1, \"x-y\": {\"deep\": [1, {\"z\": null}]}, \"c\": \"s\"}",
         MP_OK, ""},
        {"{\"a\": 1, \"d\": 2}", MP_ERR_PARSE,
         "t.json:1:10: the top level: unknown key \"d\" (expected a, b or c, "
         "or an \"x-\" extension key)"},
        {"{\"a\": 1,\n \"a\": 2}", MP_ERR_PARSE,
         "t.json:2:2: the top level: duplicate key \"a\""},
        {"{\"\\u0061\": 1, \"a\": 2}", MP_ERR_PARSE,
         "t.json:1:15: the top level: duplicate key \"a\""},
        {"{\"a\": [1, 2,]}", MP_ERR_PARSE,
         "t.json:1:13: syntax error: unexpected token near ']', expected a "
         "JSON value"},
        {"{\"a\": \"\\ud800\"}", MP_ERR_PARSE,
         "t.json:1:8: syntax error: unpaired surrogate"},
        {"{\"a\": \"\xc3\xa9\x01\"}", MP_ERR_PARSE,
         "t.json:1:9: syntax error: control character in a string"},
        {"{\"a\": 01}", MP_ERR_PARSE,
         "t.json:1:8: syntax error: leading zero in a number"},
        {"{\"a\": 1} {}", MP_ERR_PARSE,
         "t.json:1:10: syntax error: unexpected text after the top-level "
         "object: end of file expected, found token near '{'"},
        {"[]", MP_ERR_PARSE,
         "t.json:1:1: the top level: expected a JSON object, got an array"},
        {" \n", MP_ERR_PARSE, "t.json:1:1: empty file"},
        {"{\"b\": 18446744073709551616}", MP_OK, ""},
    };
    char msg[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mp_status st = read_abc(cases[i].text, 0, msg, sizeof msg);
        if (st != cases[i].st || strncmp(msg, cases[i].msg,
                                         strlen(cases[i].msg)) != 0)
            printf("\n  case %zu: %s %s\n", i, mp_status_name(st), msg);
        CU_ASSERT_EQUAL(st, cases[i].st);
        CU_ASSERT_NSTRING_EQUAL(msg, cases[i].msg, strlen(cases[i].msg));
    }
    /* numbers beyond 64 bits are errors wherever they stand with NUM64 */
    CU_ASSERT_EQUAL(read_abc("{\"x-a\": [18446744073709551616]}",
                             MP__JR_NUM64, msg, sizeof msg),
                    MP_ERR_OVERFLOW);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "t.json:1:10: too big integer"));
    CU_ASSERT_EQUAL(read_abc("{\"b\": 1e999}", MP__JR_NUM64, msg, sizeof msg),
                    MP_ERR_OVERFLOW);
}

/* Containers the caller opens are limited; skipped ones are not (and
 * cost no recursion). */
static void test_nesting(void)
{
    size_t n = 100000;
    char *t = malloc(2 * n + 32);
    strcpy(t, "{\"x-deep\": ");
    size_t p = strlen(t);
    for (size_t i = 0; i < n; i++)
        t[p++] = '[';
    for (size_t i = 0; i < n; i++)
        t[p++] = ']';
    strcpy(t + p, "}");
    char msg[512];
    CU_ASSERT_EQUAL(read_abc(t, 0, msg, sizeof msg), MP_OK);
    t[n] = 0; /* unbalanced: a syntax error, found without recursion */
    CU_ASSERT_EQUAL(read_abc(t, 0, msg, sizeof msg), MP_ERR_PARSE);

    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jr r;
    mp__jval v;
    mp__jr_init(&r, ctx, "d.json", t + 11, n - 11, 0);
    mp_status st = MP_OK;
    int depth = 0;
    while (!st && !(st = mp__jr_value(&r, &v)))
        depth++;
    CU_ASSERT_EQUAL(depth, MP__JSON_MAX_DEPTH);
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                  "d.json:1:513: syntax error: nesting "
                                  "deeper than 512 levels"));
    mp__jr_free(&r);
    /* a value opened at the limit is skipped whole, however deep */
    strcpy(t, "[[[[]]]]");
    mp__jr_init(&r, ctx, "d.json", t, strlen(t), 0);
    r.depth = MP__JSON_MAX_DEPTH - 1;
    CU_ASSERT_EQUAL(mp__jr_value(&r, &v), MP_OK);
    CU_ASSERT_EQUAL(mp__jr_skip(&r, &v), MP_OK);
    CU_ASSERT_EQUAL(r.depth, MP__JSON_MAX_DEPTH - 1);
    CU_ASSERT_EQUAL(mp__jr_pos(&r), strlen(t));
    mp__jr_free(&r);
    mp_ctx_destroy(ctx);
    free(t);
}

static void test_typed(void)
{
    const char *text = "{\"s\": \"a\\u00e9\\ud83d\\ude00\\n\", \"u\": "
                       "18446744073709551615, \"i\": -9223372036854775808, "
                       "\"d\": 2.5e-3, \"big\": 18446744073709551616, "
                       "\"neg\": -1}";
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp__jr r;
    mp__jobj o;
    mp__jval v;
    int k;
    const char *s;
    uint64_t u;
    int64_t i;
    double d;
    mp__jr_init(&r, ctx, "t", text, strlen(text), 0);
    CU_ASSERT_EQUAL_FATAL(mp__jr_doc(&r, &o, NULL), MP_OK);
    for (int m = 0; m < 6; m++) {
        CU_ASSERT_EQUAL_FATAL(mp__jr_member(&r, &o, &k), MP_OK);
        CU_ASSERT_EQUAL(k, MP__JK_OTHER);
        char key[8];
        snprintf(key, sizeof key, "%s", mp__jr_key(&r, &o));
        CU_ASSERT_EQUAL_FATAL(mp__jr_value(&r, &v), MP_OK);
        if (m == 0) {
            CU_ASSERT_EQUAL(mp__jr_string(&r, &v, true, NULL, &s), MP_OK);
            CU_ASSERT_STRING_EQUAL(s, "a\xc3\xa9\xf0\x9f\x98\x80\n");
        } else if (m == 1) {
            CU_ASSERT_EQUAL(mp__jr_u64(&r, &v, UINT64_MAX, "u", &u), MP_OK);
            CU_ASSERT_EQUAL(u, UINT64_MAX);
            CU_ASSERT_EQUAL(mp__jr_i64(&r, &v, 0, INT64_MAX, "an integer",
                                       &i), MP_ERR_PARSE);
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                          "out of range (at most "
                                          "9223372036854775807)"));
        } else if (m == 2) {
            CU_ASSERT_EQUAL(mp__jr_i64(&r, &v, INT64_MIN, 0, "i", &i), MP_OK);
            CU_ASSERT_EQUAL(i, INT64_MIN);
        } else if (m == 3) {
            CU_ASSERT_EQUAL(mp__jr_num(&r, &v, 0, "d", &d), MP_OK);
            CU_ASSERT(d == 2.5e-3);
            CU_ASSERT_EQUAL(mp__jr_u64(&r, &v, 9, "an integer", &u),
                            MP_ERR_PARSE);
            char want[96];
            snprintf(want, sizeof want, "t:1:%d: the top level: expected an "
                     "integer, got 2.5e-3",
                     (int)(strstr(text, "2.5e-3") - text) + 1);
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx), want));
        } else if (m == 4) {
            CU_ASSERT_EQUAL(mp__jr_u64(&r, &v, UINT64_MAX, "u", &u),
                            MP_ERR_PARSE);
        } else {
            CU_ASSERT_EQUAL(mp__jr_u64(&r, &v, 9, "a count >= 0", &u),
                            MP_ERR_PARSE);
            CU_ASSERT_PTR_NOT_NULL(strstr(mp_ctx_message(ctx),
                                          "expected a count >= 0, got -1"));
        }
    }
    CU_ASSERT_EQUAL(mp__jr_member(&r, &o, &k), MP_OK);
    CU_ASSERT_EQUAL(k, MP__JK_END);
    CU_ASSERT_EQUAL(mp__jr_doc_end(&r), MP_OK);
    mp__jr_free(&r);
    mp_ctx_destroy(ctx);
}

void mp_register_json_rw(void)
{
    static CU_TestInfo tests[] = {
        {"writer layouts and escaping", test_layouts},
        {"writer number forms", test_numbers_written},
        {"writer as jansson's JSON_INDENT(2)", test_as_jansson},
        {"reader messages", test_reader_messages},
        {"nesting limit and deep skips", test_nesting},
        {"typed values", test_typed},
        CU_TEST_INFO_NULL};
    mp_test_add_suite("json_rw", tests);
}
