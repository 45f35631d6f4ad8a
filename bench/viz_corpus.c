/* bench_viz_corpus: the pictures of every corpus model.
 *
 *   bench_viz_corpus [CORPUS_DIR] [--keep DIR] [--no-chromium] [--fuse] [-v]
 *
 * For every .onnx under CORPUS_DIR/models (default $MEMPLAN_CORPUS or
 * /work/shared/corpus) that loads (declared shapes, every symbolic input
 * dim bound to 1, as bench_onnx_conformance does) and plans: runs the
 * lints, writes the DOT, the HTML report and the Chrome trace, and checks
 *   - dot: `dot -Tsvg` exits 0 and writes an <svg> (120 s limit);
 *   - html: headless Chromium's --dump-dom holds <svg id="timeline"> with
 *     at least one stacked area and <svg id="arena"> with one <rect
 *     class="blk"> per block (or the number the cap allows, with its note);
 *   - trace: valid JSON (the library's reader; an event's keys each
 *     once), one "X" event per step, "C" counter events, "M" metadata,
 *     nothing else.
 * --fuse plans with fused pointwise chains: the report must then also say
 * how many tensors are fused (its id="fused" note) when any are.
 * Prints one line per model and a summary; exits 0 (it is a measurement).
 * Skips with a message when the corpus or ONNX support is absent. */
#include "base.h"
#include "json.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MP_WITH_ONNX
int main(void)
{
    printf("bench_viz_corpus: skipped: memplan was built without ONNX "
           "support\n");
    return 0;
}
#else
#include "onnx.pb-c.h"
#include "support/corpus_files.h"

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One event of the trace: *what 'X' (a complete event with numbers ts
 * and dur), 'C', 'M', or 0 (anything else). Its keys are those the trace
 * writes, each once. */
static mp_status trace_event(mp__jr *r, const mp__jval *v, char *what)
{
    static const char *const names[] = {"ph", "ts", "dur", "name", "cat",
                                        "pid", "tid", "args"};
    static const mp__jkeys keys = {names, 8, MP__JK_ANY, NULL};
    mp__jobj o;
    mp__jval m;
    int k;
    mp_status st;
    char ph = 0;
    int numbers = 0;
    *what = 0;
    if (v->type != MP__JT_OBJECT)
        return mp__jr_skip(r, v);
    mp__jr_object_at(r, &o, v, &keys);
    while (!(st = mp__jr_next(r, &o, &k, &m)) && k != MP__JK_END) {
        if (k == 0 && m.type == MP__JT_STRING && m.n == 1)
            ph = mp__jr_str(r, m.s)[0];
        numbers += (k == 1 || k == 2) && m.type == MP__JT_NUMBER;
        if ((st = mp__jr_skip(r, &m)))
            return st;
    }
    if (ph == 'C' || ph == 'M' || (ph == 'X' && numbers == 2))
        *what = ph;
    return st;
}

/* The trace's events counted by kind (the library's JSON reader). */
static mp_status trace_count(mp__jr *r, uint32_t *nx, uint32_t *nc,
                             uint32_t *other)
{
    static const char *const names[] = {"traceEvents"};
    static const mp__jkeys keys = {names, 1, MP__JK_ANY, NULL};
    mp__jobj o;
    mp__jval v, e;
    int k;
    mp_status st = mp__jr_doc(r, &o, &keys);
    while (!st && !(st = mp__jr_next(r, &o, &k, &v)) && k != MP__JK_END) {
        if (k != 0 || v.type != MP__JT_ARRAY) {
            st = mp__jr_skip(r, &v);
            continue;
        }
        mp__jarr a;
        bool more;
        mp__jr_array_at(r, &a, &v);
        while (!(st = mp__jr_elem(r, &a, &more)) && more) {
            char what;
            if ((st = mp__jr_value(r, &e)) || (st = trace_event(r, &e, &what)))
                break;
            *nx += what == 'X';
            *nc += what == 'C';
            *other += !what;
        }
    }
    return st ? st : mp__jr_doc_end(r);
}

static int check_trace(const char *path, uint32_t steps, char *why,
                       size_t cap)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    char *text = NULL;
    size_t len = 0;
    uint32_t nx = 0, nc = 0, other = 0;
    mp_status st = ctx ? mp__read_file(ctx, path, &text, &len) : MP_ERR_NOMEM;
    if (!st) {
        mp__jr r;
        mp__jr_init(&r, ctx, path, text, len, MP__JR_NUM64);
        st = trace_count(&r, &nx, &nc, &other);
        mp__jr_free(&r);
    }
    if (st)
        snprintf(why, cap, "trace: %.200s",
                 ctx ? mp_ctx_message(ctx) : "out of memory");
    else if (nx != steps || nc < 1 || other)
        snprintf(why, cap, "trace: %u X events for %u steps, %u C, %u bad",
                 nx, steps, nc, other);
    if (ctx)
        mp_free(ctx, text);
    mp_ctx_destroy(ctx);
    return !st && nx == steps && nc >= 1 && !other;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *keep = NULL;
    int chromium = 1, verbose = 0, fuse = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep") && i + 1 < argc)
            keep = argv[++i];
        else if (!strcmp(argv[i], "--no-chromium"))
            chromium = 0;
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--fuse"))
            fuse = 1;
        else
            dir = argv[i];
    }
    if (!dir) {
        const char *env = getenv("MEMPLAN_CORPUS");
        dir = env ? env : "/work/shared/corpus";
    }
    char mdir[4096];
    snprintf(mdir, sizeof mdir, "%s/models", dir);
    struct stat sb;
    if (stat(mdir, &sb) || !S_ISDIR(sb.st_mode)) {
        printf("bench_viz_corpus: skipped: %s is absent (pass the corpus "
               "folder or set MEMPLAN_CORPUS)\n", mdir);
        return 0;
    }
    const char *chrome = getenv("MEMPLAN_CHROMIUM");
    if (!chrome)
        chrome = "/usr/bin/chromium";
    if (chromium && access(chrome, X_OK) != 0) {
        printf("bench_viz_corpus: %s not found: HTML reports not opened\n",
               chrome);
        chromium = 0;
    }
    int have_dot = access("/usr/bin/dot", X_OK) == 0;
    char tmp[] = "/tmp/mp_viz_XXXXXX";
    const char *out = keep;
    if (!out) {
        if (!mkdtemp(tmp)) {
            perror("mkdtemp");
            return 1;
        }
        out = tmp;
    }
    char **files = NULL;
    size_t n = 0, cap = 0;
    mpb_list_onnx(mdir, 1, NULL, &files, &n, &cap);
    qsort(files, n, sizeof *files, mpb_cmp_str);
    int loaded = 0, dot_ok = 0, html_ok = 0, trace_ok = 0;
    double dot_s = 0, chrome_s = 0, write_s = 0, max_dot = 0;
    char max_dot_model[256] = "";
    size_t html_bytes = 0, max_html = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rel = strstr(files[i], "/models/");
        rel = rel ? rel + 8 : files[i];
        char stem[256];
        snprintf(stem, sizeof stem, "%s", rel);
        for (char *c = stem; *c; c++)
            if (*c == '/' || *c == ' ')
                *c = '_';
        mp_ctx *ctx = mp_ctx_create(NULL);
        mp_graph *g = NULL;
        mp_plan *p = NULL;
        mp_lints *l = NULL;
        mp_plan_options po;
        mp_plan_options_init(&po);
        po.fuse = fuse;
        mp_status st = mpb_load_onnx_dims1(ctx, files[i], &g);
        if (!st)
            st = mp_plan_create(g, &po, &p);
        if (st) {
            if (verbose)
                printf("skip %-55s does not load: %.100s\n", rel,
                       mp_ctx_message(ctx));
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            continue;
        }
        loaded++;
        char dotf[4400], svgf[4400], htmlf[4400], trf[4400], cmd[24000];
        snprintf(dotf, sizeof dotf, "%s/%s.dot", out, stem);
        snprintf(svgf, sizeof svgf, "%s/%s.svg", out, stem);
        snprintf(htmlf, sizeof htmlf, "%s/%s.html", out, stem);
        snprintf(trf, sizeof trf, "%s/%s.trace.json", out, stem);
        char why[512] = "";
        int ok_d = 0, ok_h = 0, ok_t = 0;
        double t0 = wall_now();
        mp_html_options ho;
        mp_html_options_init(&ho);
        st = mp_plan_lint(p, NULL, &l);
        ho.lints = l;
        if (!st)
            st = mp_plan_write_dot(p, dotf, NULL);
        if (!st)
            st = mp_plan_write_html(p, htmlf, &ho);
        if (!st)
            st = mp_plan_write_trace(p, trf, NULL);
        write_s += wall_now() - t0;
        if (st)
            snprintf(why, sizeof why, "write: %s", mp_ctx_message(ctx));
        if (!st && have_dot) {
            t0 = wall_now();
            snprintf(cmd, sizeof cmd, "timeout 120 dot -Tsvg '%s' -o '%s' "
                     "2>/dev/null", dotf, svgf);
            int rc = sh(cmd);
            double dt = wall_now() - t0;
            dot_s += dt;
            if (dt > max_dot) {
                max_dot = dt;
                snprintf(max_dot_model, sizeof max_dot_model, "%s", rel);
            }
            size_t len = 0;
            char *svg = rc == 0 ? (char *)mpb_read_all(svgf, &len) : NULL;
            ok_d = svg && strstr(svg, "<svg") != NULL;
            free(svg);
            if (!ok_d)
                snprintf(why, sizeof why, "dot -Tsvg failed (exit %d)", rc);
        }
        if (!st) {
            size_t len = 0;
            char *h = (char *)mpb_read_all(htmlf, &len);
            html_bytes += len;
            if (len > max_html)
                max_html = len;
            free(h);
        }
        if (!st && chromium) {
            char dom[4400], prof[] = "/tmp/mp_chrome_XXXXXX";
            snprintf(dom, sizeof dom, "%s/%s.dom.html", out, stem);
            if (mkdtemp(prof)) {
                t0 = wall_now();
                snprintf(cmd, sizeof cmd,
                         "timeout 120 '%s' --headless --no-sandbox "
                         "--disable-gpu --disable-background-networking "
                         "--disable-component-update --disable-sync "
                         "--no-first-run --user-data-dir=%s --dump-dom "
                         "'file://%s' > '%s' 2>/dev/null; rm -rf '%s'",
                         chrome, prof, htmlf, dom, prof);
                sh(cmd);
                chrome_s += wall_now() - t0;
            }
            size_t len = 0;
            char *d = (char *)mpb_read_all(dom, &len);
            uint32_t want = mp_plan_num_blocks(p);
            if (want > ho.max_rects)
                want = ho.max_rects;
            int rects = d ? count_of(d, "<rect class=\"blk\"") : -1;
            uint32_t n_fused = 0;
            for (uint32_t t = 0; t < mp_graph_num_tensors(g); t++)
                n_fused += (uint32_t)mp_plan_tensor_fused(p, t);
            char note[64];
            snprintf(note, sizeof note, "id=\"fused\">%u tensor", n_fused);
            ok_h = d && count_of(d, "<svg id=\"timeline\"") == 1 &&
                   count_of(d, "<svg id=\"arena\"") == 1 &&
                   (count_of(d, "<path class=\"area\"") >= 1 || !want) &&
                   rects == (int)want &&
                   (mp_plan_num_blocks(p) <= ho.max_rects ||
                    count_of(d, "id=\"capped\"") == 1) &&
                   count_of(d, "id=\"fused\"") == (n_fused > 0) &&
                   (!n_fused || count_of(d, note) == 1);
            if (!ok_h && !why[0])
                snprintf(why, sizeof why, "chromium DOM: %d rects of %u",
                         rects, want);
            free(d);
            if (!keep)
                remove(dom);
        }
        if (!st) {
            char twhy[300] = "";
            ok_t = check_trace(trf, mp_plan_num_steps(p), twhy, sizeof twhy);
            if (!ok_t && !why[0])
                snprintf(why, sizeof why, "%s", twhy);
        }
        dot_ok += ok_d;
        html_ok += ok_h;
        trace_ok += ok_t;
        printf("%s %-55s %5u nodes %6u blocks  dot:%s html:%s trace:%s %s\n",
               (ok_d || !have_dot) && (ok_h || !chromium) && ok_t ? "ok  "
                                                                  : "FAIL",
               rel, mp_graph_num_nodes(g), mp_plan_num_blocks(p),
               have_dot ? (ok_d ? "ok" : "FAIL") : "-",
               chromium ? (ok_h ? "ok" : "FAIL") : "-", ok_t ? "ok" : "FAIL",
               why);
        fflush(stdout);
        if (!keep) {
            remove(dotf);
            remove(svgf);
            remove(htmlf);
            remove(trf);
        }
        mp_lints_destroy(l);
        mp_plan_destroy(p);
        mp_graph_destroy(g);
        mp_ctx_destroy(ctx);
        free(files[i]);
    }
    free(files);
    if (!keep)
        rmdir(tmp);
    printf("viz: %d of %zu models load and plan%s; dot -Tsvg renders %d, "
           "Chromium draws the report of %d, trace valid for %d\n",
           loaded, n, fuse ? " (--fuse)" : "", dot_ok, html_ok, trace_ok);
    printf("viz: wall seconds: lints+writers %.2f, dot %.2f (slowest %.2f: "
           "%s), chromium %.2f; HTML %.1f KiB on average, %.1f KiB at most\n",
           write_s, dot_s, max_dot, max_dot_model, chrome_s,
           loaded ? html_bytes / 1024.0 / loaded : 0.0, max_html / 1024.0);
    return 0;
}
#endif
