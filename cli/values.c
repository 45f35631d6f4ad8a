/* values.c - the parsers of option values: numbers, sizes with units,
 * seconds, dim bindings and shapes; the offsets methods' names. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ------------------------------------------------------------------ */
static const struct {
    const char *suffix;
    uint64_t mult;
} units[] = {
    {"", 1},
    {"b", 1},
    {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30},
    {"tib", 1ull << 40},
    {"kb", 1000ull}, {"mb", 1000000ull}, {"gb", 1000000000ull},
    {"tb", 1000000000000ull},
};

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* Parses the leading decimal digits of s; *end after them. 0 or -1 on
 * overflow; -2 when there are no digits. */
static int parse_digits(const char *s, const char **end, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    int overflow = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
    }
    *end = p;
    if (p == s)
        return -2;
    *out = v;
    return overflow ? -1 : 0;
}

int cli_parse_size(const char *what, const char *s, uint64_t *out)
{
    const char *p;
    uint64_t v;
    int rc = parse_digits(s, &p, &v);
    if (rc == -2) {
        cli_error("bad size '%s' for %s: expected a whole number of bytes "
                  "with an optional unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, "
                  "TB), e.g. 4KiB",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    if (*p == '.') {
        cli_error("bad size '%s' for %s: expected a whole number of bytes "
                  "(no fractions; write 1536KiB, not 1.5MiB)",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!ieq(p, units[i].suffix))
            continue;
        if (rc == -1 || v > UINT64_MAX / units[i].mult) {
            cli_error("size '%s' for %s does not fit in 64 bits", s, what);
            return CLI_EXIT_USAGE;
        }
        *out = v * units[i].mult;
        return 0;
    }
    cli_error("bad size '%s' for %s: unknown unit '%s' (use B, KiB, MiB, "
              "GiB, TiB, KB, MB, GB or TB)",
              s, what, p);
    return CLI_EXIT_USAGE;
}

int cli_parse_u64(const char *what, const char *s, uint64_t *out)
{
    const char *p;
    uint64_t v;
    int rc = parse_digits(s, &p, &v);
    if (rc == -2 || *p != '\0') {
        cli_error("bad value '%s' for %s: expected a non-negative integer", s,
                  what);
        return CLI_EXIT_USAGE;
    }
    if (rc == -1) {
        cli_error("value '%s' for %s does not fit in 64 bits", s, what);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int cli_parse_seconds(const char *what, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0) {
        cli_error("bad value '%s' for %s: expected a number of seconds >= 0",
                  s, what);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

double cli_time_left(const struct timespec *t0, double limit)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double left = limit - ((double)(t1.tv_sec - t0->tv_sec) +
                           (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9);
    return left > limit / 10 ? left : limit / 10;
}

void cli_print_methods(FILE *f)
{
    for (int m = MP_OFFSETS_AUTO; m <= MP_OFFSETS_EXACT; m++)
        fprintf(f, "%s%s", m == MP_OFFSETS_AUTO ? "" : ", ",
                mp_offsets_method_name((mp_offsets_method)m));
}

/* ---- dims and shapes ------------------------------------------------------ */
/* NAME=VALUE for option opt ("--dim", "--shape") */
static int parse_binding(cli_dims *d, const char *opt, const char *value)
{
    const char *eq = strrchr(value, '=');
    if (!eq || eq == value) {
        cli_error("%s expects NAME=VALUE (or INPUT:AXIS=VALUE), got '%s'",
                  opt, value);
        return CLI_EXIT_USAGE;
    }
    size_t len = (size_t)(eq - value);
    if (d->n == CLI_MAX_DIMS || len >= sizeof d->names[0]) {
        cli_error("%s: at most %d bindings of names up to %zu characters",
                  opt, CLI_MAX_DIMS, sizeof d->names[0] - 1);
        return CLI_EXIT_USAGE;
    }
    uint64_t v;
    int rc = cli_parse_u64(opt, eq + 1, &v);
    if (rc)
        return rc;
    if (v > (uint64_t)INT64_MAX) {
        cli_error("%s: value %s too large", opt, eq + 1);
        return CLI_EXIT_USAGE;
    }
    memcpy(d->names[d->n], value, len);
    d->names[d->n][len] = '\0';
    d->b[d->n].name = d->names[d->n];
    d->b[d->n].value = (int64_t)v;
    d->n++;
    return 0;
}

int cli_parse_dim(cli_dims *d, const char *value)
{
    return parse_binding(d, "--dim", value);
}

int cli_parse_shape(cli_dims *d, const char *value)
{
    /* INPUT=D0xD1x... : one binding INPUT:i=Di per axis */
    const char *eq = strrchr(value, '=');
    if (!eq || eq == value || !eq[1]) {
        cli_error("--shape expects INPUT=D0xD1x... (e.g. q=1x8x128x64), "
                  "got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    const char *p = eq + 1;
    for (size_t axis = 0;; axis++) {
        const char *x = strchr(p, 'x');
        size_t len = x ? (size_t)(x - p) : strlen(p);
        char buf[300];
        int w = snprintf(buf, sizeof buf, "%.*s:%zu=%.*s", (int)(eq - value),
                         value, axis, (int)len, p);
        if (w < 0 || (size_t)w >= sizeof buf || len == 0) {
            cli_error("--shape: bad shape in '%s'", value);
            return CLI_EXIT_USAGE;
        }
        int rc = parse_binding(d, "--shape", buf);
        if (rc)
            return rc;
        if (!x)
            return 0;
        p = x + 1;
    }
}
