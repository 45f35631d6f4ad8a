/* report.c - exit codes, error messages, human sizes and JSON output
 * (through the library's writer, frontends/json/json.h). */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The one table from library status to exit code (docs/exit-codes.md).
 * MP_ERR_INVALID_ARG: the command passes the library no NULL handles, so
 * an invalid argument is an option value the library rejected. */
static const struct {
    mp_status status;
    int code;
} exit_table[] = {
    {MP_OK, CLI_EXIT_OK},
    {MP_ERR_INVALID_ARG, CLI_EXIT_USAGE},
    {MP_ERR_NOMEM, CLI_EXIT_INTERNAL},
    {MP_ERR_IO, CLI_EXIT_INPUT},
    {MP_ERR_PARSE, CLI_EXIT_INPUT},
    {MP_ERR_GRAPH, CLI_EXIT_INPUT},
    {MP_ERR_SHAPE, CLI_EXIT_INPUT},
    {MP_ERR_OVERFLOW, CLI_EXIT_OVERFLOW},
    {MP_ERR_UNSUPPORTED, CLI_EXIT_INPUT},
    {MP_ERR_NOT_FOUND, CLI_EXIT_INPUT},
    {MP_ERR_INFEASIBLE, CLI_EXIT_INFEASIBLE},
    {MP_ERR_TIMEOUT, CLI_EXIT_INFEASIBLE},
    {MP_ERR_VERIFY, CLI_EXIT_VERIFY},
    {MP_ERR_INTERNAL, CLI_EXIT_INTERNAL},
    {MP_ERR_CORRUPT, CLI_EXIT_CORRUPT},
    {MP_ERR_CYCLE, CLI_EXIT_CYCLE},
    {MP_ERR_NO_PRODUCER, CLI_EXIT_NO_PRODUCER},
    {MP_ERR_DUPLICATE, CLI_EXIT_DUPLICATE},
    {MP_ERR_UNKNOWN_OP, CLI_EXIT_UNKNOWN_OP},
    {MP_ERR_BAD_DIM, CLI_EXIT_BAD_DIM},
};

int cli_exit_code(mp_status st)
{
    for (size_t i = 0; i < sizeof exit_table / sizeof exit_table[0]; i++)
        if (exit_table[i].status == st)
            return exit_table[i].code;
    return CLI_EXIT_INTERNAL;
}

void cli_print_exit_codes(FILE *f)
{
    fputs("Exit status:\n"
          "  0  success (verify: the plan or trace is valid)\n"
          "  1  internal error (out of memory, a bug in memplan)\n"
          "  2  usage error (bad command, option or value)\n"
          "  3  input error (I/O, parse, graph, shape, unsupported)\n"
          "  4  infeasible (no plan within the capacity or time limit)\n"
          "  5  verification failed\n"
          "  6  truncated or corrupt input (ONNX protobuf)\n"
          "  7  the graph has a cycle\n"
          "  8  a tensor is read but no node produces it\n"
          "  9  a name is defined twice (tensor, node, initializer)\n"
          " 10  unknown op whose output shapes are not declared\n"
          " 11  negative dim, or rank above 16\n"
          " 12  a size does not fit in 64 bits\n",
          f);
}

/* ---- text for a terminal ---------------------------------------------------
 * Names come from the user's files: a control character (an ANSI escape
 * starts with ESC), a C1 control or a byte that is not part of well-formed
 * UTF-8 would act on the terminal or garble it. Each such byte is written
 * as \xNN; everything else as it is. */

/* The text the character at s is written as (into e, 16 bytes) and its
 * length; *k the bytes of s it takes. */
static size_t safe_char(const char *s, char *e, size_t *k)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp = 0;
    size_t n = *p < 0x80 ? 1 : mp__utf8_next(s, &cp);
    if (*p < 0x80)
        cp = *p;
    if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
        /* every byte of a C1 control, else the one bad byte */
        size_t m = n ? n : 1, w = 0;
        for (size_t i = 0; i < m; i++)
            w += (size_t)snprintf(e + w, 16 - w, "\\x%02x", p[i]);
        *k = m;
        return w;
    }
    memcpy(e, s, n);
    *k = n;
    return n;
}

const char *cli_safe(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    if (!s)
        s = "";
    while (*s) {
        char e[16];
        size_t k, w = safe_char(s, e, &k);
        if (n + w + 4 > cap) {   /* room for "..." and the NUL */
            memcpy(buf + n, "...", 3);
            n += 3;
            break;
        }
        memcpy(buf + n, e, w);
        n += w;
        s += k;
    }
    buf[n] = 0;
    return buf;
}

void cli_fputs_safe(FILE *f, const char *s)
{
    while (s && *s) {
        char e[16];
        size_t k, w = safe_char(s, e, &k);
        fwrite(e, 1, w, f);
        s += k;
    }
}

void cli_error(const char *fmt, ...)
{
    /* the message may quote names from the input: made safe */
    char small[1024], *msg = small;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)))
        vsnprintf(msg, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    if (!msg)
        msg = small;   /* out of memory: the message cut */
    cli_json_note_error(n < 0 ? fmt : msg);
    fputs("memplan: ", stderr);
    cli_fputs_safe(stderr, n < 0 ? fmt : msg);
    fputc('\n', stderr);
    if (msg != small)
        free(msg);
}

mp_ctx *cli_ctx_create(void)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    if (!ctx)
        cli_error("out of memory");
    return ctx;
}

int cli_fail(mp_ctx *ctx, mp_status st, const char *path)
{
    const char *msg = ctx ? mp_ctx_message(ctx) : "";
    if (!msg || !*msg)
        msg = mp_status_str(st);
    /* An option value the library rejected, or memory: not about the file. */
    int about_file = st != MP_ERR_INVALID_ARG && st != MP_ERR_NOMEM;
    if (path && about_file && !strstr(msg, path))
        cli_error("%s: %s", path, msg);
    else
        cli_error("%s", msg);
    cli_json_note_status(st, cli_exit_code(st));
    return cli_exit_code(st);
}

int cli_fail_plan(mp_ctx *ctx, mp_status st, const char *path,
                  int *infeasible)
{
    if (st == MP_OK)
        return 0;
    if (st != MP_ERR_INFEASIBLE)
        return cli_fail(ctx, st, path);
    *infeasible = 1;
    cli_fail(ctx, st, path);
    return CLI_EXIT_INFEASIBLE;
}

const char *cli_size_short(uint64_t b, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                       "PiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, cap, "%.1f %s", v, unit[u]);
    return buf;
}

const char *cli_size(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                       "EiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.1f %s (%llu bytes)", v, unit[u],
             (unsigned long long)bytes);
    return buf;
}

void cli_print_ratio(uint64_t arena, uint64_t lower_bound, const char *empty)
{
    if (lower_bound)
        printf("arena/LB     %.4f\n", (double)arena / (double)lower_bound);
    else
        printf("arena/LB     n/a (%s)\n", empty);
}

/* ---- JSON output ---------------------------------------------------------- */
void cli_json_begin(mp__jw *w, mp_ctx *ctx)
{
    mp__jw_init(w, ctx, MP__JW_UPPER, 0);
    mp__jw_object(w, true);
    cli_json_int(w, "schema", CLI_JSON_SCHEMA);
    cli_json_str(w, "command", cli_json_command());
}

int cli_json_print(mp__jw *w)
{
    char *s = NULL;
    size_t len = 0;
    cli_json_error_member(w);
    mp__jw_end(w);
    mp_status st = mp__jw_done(w, &s, &len);
    if (st)
        return cli_fail(w->ctx, st, NULL);
    int bad = fwrite(s, 1, len, stdout) != len || fputc('\n', stdout) == EOF;
    mp_free(w->ctx, s);
    cli_json_note_printed();
    if (bad || fflush(stdout) != 0) {
        cli_error("cannot write to standard output");
        return CLI_EXIT_INTERNAL;
    }
    return CLI_EXIT_OK;
}

void cli_json_key(mp__jw *w, const char *key)
{
    if (key)
        mp__jw_key(w, key);
}

void cli_json_object(mp__jw *w, const char *key)
{
    cli_json_key(w, key);
    mp__jw_object(w, true);
}

void cli_json_str(mp__jw *w, const char *key, const char *s)
{
    /* the writer replaces what is not UTF-8 (U+FFFD) */
    cli_json_key(w, key);
    mp__jw_string(w, s ? s : "");
}

void cli_json_u64(mp__jw *w, const char *key, uint64_t v)
{
    cli_json_key(w, key);
    mp__jw_u64(w, v);
}

void cli_json_int(mp__jw *w, const char *key, int64_t v)
{
    cli_json_key(w, key);
    mp__jw_i64(w, v);
}

void cli_json_real(mp__jw *w, const char *key, double v)
{
    if (!isfinite(v)) {
        mp__jw_fail(w, MP_ERR_INTERNAL, "--json: %s: %g cannot be written "
                    "in JSON", key ? key : "a value", v);
        return;
    }
    cli_json_key(w, key);
    mp__jw_double(w, v, MP__JW_G17, key);
}

void cli_json_bool(mp__jw *w, const char *key, int b)
{
    cli_json_key(w, key);
    mp__jw_bool(w, b != 0);
}

void cli_json_null(mp__jw *w, const char *key)
{
    cli_json_key(w, key);
    mp__jw_null(w);
}

void cli_json_ratio(mp__jw *w, const char *key, uint64_t arena,
                    uint64_t lower_bound)
{
    if (lower_bound == 0)
        cli_json_null(w, key);
    else
        cli_json_real(w, key, (double)arena / (double)lower_bound);
}

void cli_json_sizes(mp__jw *w, const cli_json_size *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cli_json_u64(w, rows[i].key, rows[i].bytes);
}
