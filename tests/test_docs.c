/* The docs against the binary: the sample outputs of README.md and
 * the pages of docs/ are what memplan prints now and their marked examples run
 * (scripts/gen-samples.py --check), the --json tables of
 * docs/json-schema.md match the outputs (scripts/check-json-schema.py),
 * and a failing --json run prints the error object. Each checker is also
 * run on a doctored copy, where it must fail. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[1 << 16];

/* Runs cmd with its stderr into out too; the exit status. */
static int run_both(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    return mp_test_run(full, out, sizeof out);
}

/* Runs scripts/SCRIPT --memplan MEMPLAN [DOC] (its --check with check),
 * output in out; the exit status. */
static int run_script(const char *script, int check, const char *doc)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 '%s/scripts/%s'%s --memplan '%s'%s%s%s",
             MP_SOURCE_DIR, script, check ? " --check" : "", MP_CLI_PATH,
             doc ? " '" : "", doc ? doc : "", doc ? "'" : "");
    return run_both(cmd);
}

/* The script passes on the repository's docs (its output shown when not). */
static void expect_pass(const char *script, int check)
{
    int rc = run_script(script, check, NULL);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
}

/* A copy of the doc at rel with the first `from` replaced by `to`, under
its own name in a fresh temporary folder (its path, static; undoctor()
removes both). */
static const char *doctored(const char *rel, const char *from, const char *to)
{
    static char tmp[512];
    char path[1024], dir[] = "/tmp/mp_docs_XXXXXX";
    snprintf(path, sizeof path, "%s/%s", MP_SOURCE_DIR, rel);
    char *text = mp_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *at = strstr(text, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const char *base = strrchr(rel, '/');
    snprintf(tmp, sizeof tmp, "%s/%s", dir, base ? base + 1 : rel);
    FILE *f = fopen(tmp, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fclose(f);
    free(text);
    return tmp;
}

static void undoctor(const char *tmp)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp);
    char *slash = strrchr(dir, '/');
    remove(tmp);
    if (slash) {
        *slash = 0;
        rmdir(dir);
    }
}

static void t_samples_current(void)
{
    expect_pass("gen-samples.py", 1);
}

/* A stale sample fails, naming the command that fixes it. */
static void t_samples_stale_fails(void)
{
    const char *tmp = doctored("docs/cli.md", "(284 schedule steps)",
                               "(349 schedule steps)");
    CU_ASSERT_EQUAL(run_script("gen-samples.py", 1, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "-nodes        175 (349 schedule steps)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "+nodes        175 (284 schedule steps)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "run: python3 scripts/gen-samples.py"));
    undoctor(tmp);
    /* an example that exits otherwise than it says fails */
    tmp = doctored("README.md", "--capacity 512KiB   # exit 5",
                   "--capacity 512KiB   # exit 0");
    CU_ASSERT_EQUAL(run_script("gen-samples.py", 1, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "exits 5, not 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fix the example or memplan"));
    undoctor(tmp);
    /* a README block that runs memplan must run or say why not */
    tmp = doctored("README.md", "<!-- examples: run -->\n```sh\n"
                                "./build/memplan offsets",
                   "```sh\n./build/memplan offsets");
    CU_ASSERT_EQUAL(run_script("gen-samples.py", 1, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "a ```sh block that runs memplan "
                                       "without <!-- examples: run -->"));
    undoctor(tmp);
}

static void t_json_schema_matches(void)
{
    expect_pass("check-json-schema.py", 0);
}

/* The checker finds a wrong type, a member left out of the table and a
 * member the table says is always there that is not. */
static void t_json_schema_differences_fail(void)
{
    static const struct {
        const char *from, *to, *says;
    } cases[] = {
        {"| `peak_step` | integer |", "| `peak_step` | string |",
         "member peak_step is integer, the table says string"},
        {"| `fused_tensors` | integer | on success |", "| `x` | integer | no |",
         "member fused_tensors (integer) is not in the table"},
        {"| `search_nodes` | integer | always |",
         "| `search_nodes` | integer | always |\n"
         "| `nodes_searched` | integer | always |",
         "member nodes_searched (present: always) is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *tmp = doctored("docs/json-schema.md", cases[i].from,
                                   cases[i].to);
        CU_ASSERT_EQUAL(run_script("check-json-schema.py", 0, tmp), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].says));
        undoctor(tmp);
    }
}

/* Every --json output has its schema; a failure has the same shape with
 * the error object (stdout only: the message also goes to stderr). */
static void t_json_error_object(void)
{
    static const struct {
        const char *args, *code;
        int rc;
    } cases[] = {
        {"plan examples/tiny.json --budgte 1MiB --json", "MP_ERR_INVALID_ARG",
         2},
        {"plan /nonexistent/g.json --json", "MP_ERR_IO", 3},
        {"plan examples/resnet50.json --budget 1KiB --json",
         "MP_ERR_INFEASIBLE", 4},
        {"offsets examples/trace.csv --capacity 512KiB --json",
         "MP_ERR_INFEASIBLE", 4},
        {"shapes examples/tiny.json --json", NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>/dev/null",
                 MP_SOURCE_DIR, MP_CLI_PATH, cases[i].args);
        int rc = mp_test_run(cmd, out, sizeof out);
        mp_test_json *o = mp_test_json_parse(out);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_EQUAL(mp_test_jint(o, "schema"), 1);
        CU_ASSERT_PTR_NOT_NULL(mp_test_jstr(o, "command"));
        if (cases[i].code) {
            CU_ASSERT_EQUAL(rc, cases[i].rc);
            CU_ASSERT_STRING_EQUAL(mp_test_jstr(o, "error.code"),
                                   cases[i].code);
            CU_ASSERT_EQUAL(mp_test_jint(o, "error.exit_code"), rc);
            const char *msg = mp_test_jstr(o, "error.message");
            CU_ASSERT(msg && *msg);
        } else {
            CU_ASSERT_EQUAL(mp_test_jtype(o, "error"), 0);
        }
        mp_test_json_free(o);
    }
    /* an infeasible budget keeps what is known beside the error */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' plan examples/resnet50.json --budget 1KiB "
             "--json 2>/dev/null",
             MP_SOURCE_DIR, MP_CLI_PATH);
    mp_test_run(cmd, out, sizeof out);
    mp_test_json *o = mp_test_json_parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(mp_test_jstr(o, "graph"), "resnet50");
    CU_ASSERT_STRING_EQUAL(mp_test_jstr(o, "recompute.status"), "infeasible");
    CU_ASSERT_PTR_NOT_NULL(strstr(mp_test_jstr(o, "error.message"),
                                  "budget of 1024 bytes"));
    mp_test_json_free(o);
}

/* examples/mlp.onnx is what memplan's ONNX writer makes of mlp.json */
static void t_example_onnx_current(void)
{
    char cmd[2048];
    const char *tmp = mp_test_write_temp(".onnx", "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
    snprintf(cmd, sizeof cmd,
             "'%s' convert '%s/examples/mlp.json' -o '%s' && cmp '%s' "
             "'%s/examples/mlp.onnx'",
             MP_CLI_PATH, MP_SOURCE_DIR, tmp, tmp, MP_SOURCE_DIR);
    int rc = run_both(cmd);
    if (rc != 0)
        fprintf(stderr, "\n%s\nexamples/mlp.onnx is out of date: run "
                "memplan convert examples/mlp.json -o examples/mlp.onnx\n",
                out);
    CU_ASSERT_EQUAL(rc, 0);
    remove(tmp);
}

void mp_register_docs(void)
{
    static CU_TestInfo tests[] = {
        {"samples are what memplan prints", t_samples_current},
        {"a stale sample or example fails", t_samples_stale_fails},
        {"docs/json-schema.md matches the outputs", t_json_schema_matches},
        {"the schema check finds differences", t_json_schema_differences_fail},
        {"--json failures print the error object", t_json_error_object},
        {"examples/mlp.onnx is what convert writes", t_example_onnx_current},
        CU_TEST_INFO_NULL,
    };
    mp_test_add_suite("docs", tests);
}
