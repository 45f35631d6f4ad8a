/* Shared helpers of the libFuzzer harnesses (fuzz/, MEMPLAN_FUZZ=ON).
 * An input that loads is planned and the plan verified: a plan that
 * mp_plan_create returns but the verifier rejects is a bug, reported as a
 * crash (abort) so that libFuzzer keeps the input. */
#ifndef MP_FUZZ_COMMON_H
#define MP_FUZZ_COMMON_H

#include "memplan/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void mp_fuzz_fail(const char *what, const mp_ctx *ctx)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, ctx ? mp_ctx_message(ctx) : "");
    abort();
}

/* Readers that take a path get each input through a per-process file in
 * $TMPDIR (default /dev/shm when it exists, else /tmp: a disk-backed /tmp
 * can cost milliseconds per input). */
static inline void mp_fuzz_tmp_path(char *buf, size_t cap, const char *what,
                                    const char *ext)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(buf, cap, "%s/mp-fuzz-%s-%ld.%s", dir, what, (long)getpid(),
             ext);
}

/* Writes the input to path; 0 when it cannot (not a bug of memplan). */
static inline int mp_fuzz_write_file(const char *path, const void *data,
                                     size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t w = fwrite(data, 1, size, f);
    return fclose(f) == 0 && w == size;
}

/* Plans g with the default options (bounded work: the graphs come from
 * inputs of at most -max_len bytes), verifies the plan and writes it to
 * JSON. Errors of the planner (unknown shapes, overflow) are fine; a plan
 * that fails the verifier or MP_ERR_INTERNAL is not. */
static inline void mp_fuzz_plan(mp_ctx *ctx, mp_graph *g)
{
    mp_plan_options o;
    mp_plan *p = NULL;
    mp_plan_options_init(&o);
    /* one greedy placement: AUTO's improvement passes run for a time
     * budget, which would make each input slow and the run
     * nondeterministic; the verifier checks the placement either way */
    o.method = MP_OFFSETS_SIZE_BESTFIT;
    mp_status st = mp_plan_create(g, &o, &p);
    if (st == MP_ERR_INTERNAL)
        mp_fuzz_fail("mp_plan_create: internal error", ctx);
    if (st != MP_OK)
        return;
    if (mp_verify_plan(g, p) != MP_OK)
        mp_fuzz_fail("a plan from mp_plan_create fails the verifier", ctx);
    char *s = NULL;
    if (mp_plan_to_json_string(p, &s) == MP_OK)
        mp_free(ctx, s);
    mp_plan_destroy(p);
}

#endif
