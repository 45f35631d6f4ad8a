/* Progress reports of long runs: the callback of mp_ctx_set_progress,
 * rate-limited, and the nesting of runs (core/base.h). */
#include "base.h"

#include <stdio.h>
#include <string.h>

void mp_ctx_set_progress(mp_ctx *ctx, mp_progress_fn fn, void *user,
                         double interval)
{
    if (!ctx)
        return;
    ctx->progress.fn = fn;
    ctx->progress.user = user;
    ctx->progress.interval = interval < 0 ? MP_PROGRESS_INTERVAL : interval;
}

static void send(mp_ctx *ctx, double now, int final)
{
    struct mp__progress *pr = &ctx->progress;
    mp_progress r;
    r.phase = pr->phase;
    r.best_bytes = pr->best;
    r.bound_bytes = pr->bound;
    r.seconds = now - pr->t0;
    r.final = final;
    pr->last = now;
    pr->fn(pr->user, &r);
}

void mp__progress_tick(mp_ctx *ctx)
{
    struct mp__progress *pr = &ctx->progress;
    if (!pr->fn || !pr->depth)
        return;
    double now = mp__now_seconds();
    /* the first report after `interval` of work, then every half of it */
    double wait = pr->last > pr->t0 ? pr->interval / 2 : pr->interval;
    if (now - pr->t0 >= pr->interval && now - pr->last >= wait)
        send(ctx, now, 0);
}

static void set_phase(struct mp__progress *pr, const char *fmt, va_list ap)
{
    vsnprintf(pr->phase + pr->base, sizeof pr->phase - pr->base, fmt, ap);
}

void mp__progress_begin(mp_ctx *ctx, mp__progress_mark *saved,
                        const char *fmt, ...)
{
    struct mp__progress *pr = &ctx->progress;
    memcpy(saved->phase, pr->phase, sizeof saved->phase);
    saved->base = pr->base;
    saved->best = pr->best;
    saved->bound = pr->bound;
    if (pr->depth++ == 0) {
        pr->t0 = pr->last = mp__now_seconds();
        saved->best = saved->bound = 0;
        pr->base = 0;
    } else {
        size_t n = strlen(pr->phase);
        /* the outer phase, then " / ", then this run's (room kept) */
        if (n + 3 + 32 < sizeof pr->phase) {
            memcpy(pr->phase + n, " / ", 4);
            pr->base = n + 3;
        }
    }
    pr->best = pr->bound = 0;
    va_list ap;
    va_start(ap, fmt);
    set_phase(pr, fmt, ap);
    va_end(ap);
    if (pr->depth == 1)
        memcpy(pr->run, pr->phase, sizeof pr->run);
}

void mp__progress_end(mp_ctx *ctx, const mp__progress_mark *saved)
{
    struct mp__progress *pr = &ctx->progress;
    if (pr->depth == 0)
        return;
    if (--pr->depth == 0) {
        memcpy(pr->phase, pr->run, sizeof pr->phase);
        if (pr->fn)
            send(ctx, mp__now_seconds(), 1);
        return;
    }
    memcpy(pr->phase, saved->phase, sizeof pr->phase);
    pr->base = saved->base;
    pr->best = saved->best;
    pr->bound = saved->bound;
}

void mp__progress_phase(mp_ctx *ctx, const char *fmt, ...)
{
    struct mp__progress *pr = &ctx->progress;
    if (!pr->depth)
        return;
    va_list ap;
    va_start(ap, fmt);
    set_phase(pr, fmt, ap);
    va_end(ap);
    mp__progress_tick(ctx);
}

void mp__progress_set(mp_ctx *ctx, uint64_t best, uint64_t bound)
{
    struct mp__progress *pr = &ctx->progress;
    if (best)
        pr->best = best;
    if (bound)
        pr->bound = bound;
    mp__progress_tick(ctx);
}
