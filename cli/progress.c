/* progress.c - the library's progress reports (mp_ctx_set_progress) on
 * stderr: a line rewritten in place on a terminal, plain lines with
 * --progress, nothing with --quiet. */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct printer {
    int tty;        /* stderr is a terminal: rewrite one line */
    int every;      /* --progress: every run's final line too */
    int open;       /* a rewritten line is on the terminal, unfinished */
} printer;

static printer the_printer;

/* "[  3.2 s] recompute: stage LP  best peak 12.3 GiB  bound 10.1 GiB" */
static void format_line(const mp_progress *r, char *line, size_t cap)
{
    char b1[32], b2[32], safe[256];
    int n = snprintf(line, cap, "memplan: [%5.1f s] %s%s", r->seconds,
                     r->final ? "done: " : "",
                     cli_safe(r->phase, safe, sizeof safe));
    if (n > 0 && (size_t)n < cap && r->best_bytes)
        n += snprintf(line + n, cap - (size_t)n, "  %s %s",
                      r->final ? "peak" : "best so far",
                      cli_size_short(r->best_bytes, b1, sizeof b1));
    if (n > 0 && (size_t)n < cap && r->bound_bytes)
        snprintf(line + n, cap - (size_t)n, "  lower bound %s",
                 cli_size_short(r->bound_bytes, b2, sizeof b2));
}

static void show(void *user, const mp_progress *r)
{
    printer *pr = user;
    /* on a terminal without --progress, a quick run shows nothing */
    if (r->final && !pr->open && !pr->every)
        return;
    char line[512];
    format_line(r, line, sizeof line);
    if (pr->tty) {
        /* back to the start of the line, the text, erase what is left */
        fprintf(stderr, "\r%s\033[K%s", line, r->final ? "\n" : "");
        pr->open = !r->final;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

void cli_progress_install(mp_ctx *ctx, const cli_args *a)
{
    if (!ctx || a->quiet)
        return;
    printer *pr = &the_printer;
    memset(pr, 0, sizeof *pr);
    pr->tty = isatty(fileno(stderr));
    pr->every = a->progress;
    if (pr->tty || pr->every)
        mp_ctx_set_progress(ctx, show, pr, -1);
}
