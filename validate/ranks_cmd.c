/* ranks_cmd.c - `memplan validate MODEL --train --tp N|--dp N|--pp N ...
 * --ranks N`: every rank's plan run at once, one process per GPU, the
 * collectives as NCCL calls (docs/distributed.md "Multi-GPU validation").
 *
 * The parent builds every rank's program on the host (the distinct rank
 * graphs planned once, each rank lowered with its tensor-parallel and
 * data-parallel index and stage: ranks are numbered as Megatron-LM's,
 * (stage x dp + dp index) x tp + tp index), links the Sends and Recvs and checks the schedules for a
 * deadlock (validate/ranks.c), loads NCCL (validate/nccl.c) and touches
 * no GPU. It forks one child per rank: child r sees only its GPU
 * (CUDA_VISIBLE_DEVICES: the r-th of the parent's list, else r), so that
 * the driver's figures are its device's alone; rank 0 makes NCCL's unique
 * id and hands it to the others through pipes; each runs its program as
 * `validate` runs one (validate/executor.cu) and writes one row back. The
 * parent prints one row per rank and the checks across ranks. */
#include "command.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* what one rank's child reports */
typedef struct rank_row {
    int32_t rc;              /* 0: ran (the checks in all_ok) */
    char error[400];
    uint32_t rank, stage, dp_index, tp_index, n_coll;
    uint64_t pred_total, measured, pred_arena, arena_measured, nccl_bytes,
        lazy_bytes, outputs_hash, weights_hash;
    double ratio, pred_ms, planned_ms, loss;
    int32_t all_ok, have_pred;
} rank_row;

typedef struct ranks_job {
    mpv_cmd v;               /* the model's graph, ctx, options */
    uint32_t n;              /* ranks */
    mp_plan **plans;         /* per distinct rank */
    mp_rank_info *info;      /* per distinct rank */
    mpv_program **progs;     /* per rank */
    uint32_t n_linked;
    mpv_nccl *nccl;
} ranks_job;

static void job_free(ranks_job *J)
{
    uint32_t nd = J->v.par ? mp_parallel_num_distinct(J->v.par) : 0;
    for (uint32_t r = 0; J->progs && r < J->n; r++)
        mpv_program_destroy(J->progs[r]);
    for (uint32_t d = 0; J->plans && d < nd; d++)
        mp_plan_destroy(J->plans[d]);
    free(J->progs);
    free(J->plans);
    free(J->info);
    mpv_nccl_destroy(J->nccl);
    mp_parallel_destroy(J->v.par);
    mp_graph_destroy(J->v.own_g);
    mp_ctx_destroy(J->v.ctx);
}

/* The ranks' programs: each distinct rank graph planned once, each rank
 * lowered for NCCL, then linked. 0 or an exit code (printed). */
static int build_programs(ranks_job *J)
{
    cli_args *a = J->v.a;
    mp_ctx *ctx = J->v.ctx;
    const char *model = a->pos[0];
    if (!cli_given(a, CLI_O_DP) && !cli_given(a, CLI_O_PP) &&
        !cli_given(a, CLI_O_TP)) {
        cli_error("--ranks runs the ranks of --tp N, --dp N or --pp N: give "
                  "one of them or several (with --train)");
        return CLI_EXIT_USAGE;
    }
    if (cli_given(a, CLI_O_RANK) || a->plan || a->dump || a->weights_dir ||
        a->inputs_dir) {
        cli_error("--ranks plans and runs every rank itself: --rank, --plan, "
                  "--dump, --weights and --inputs go with one rank's run "
                  "(--rank R)");
        return CLI_EXIT_USAGE;
    }
    int rc = cli_load_graph(ctx, a, &J->v.g);
    if (!rc)
        rc = cli_attention_prepare(ctx, a, &J->v.g, model);
    if (!rc)
        rc = cli_train_prepare(ctx, &a->train, &J->v.g, model);
    J->v.own_g = J->v.g;
    if (!rc)
        rc = cli_parallel_make(ctx, a, J->v.own_g, &J->v.par);
    if (rc)
        return rc;
    mp_parallel *par = J->v.par;
    uint32_t n = mp_parallel_num_ranks(par), nd = mp_parallel_num_distinct(par);
    if (a->par.ranks != n) {
        cli_error("--ranks %u: this job has %u ranks (tp %u x dp %u x pp "
                  "%u): give --ranks %u", (unsigned)a->par.ranks,
                  (unsigned)n, (unsigned)a->par.po.tp,
                  (unsigned)a->par.po.dp, (unsigned)a->par.po.pp,
                  (unsigned)n);
        return CLI_EXIT_USAGE;
    }
    J->n = n;
    J->plans = calloc(nd, sizeof *J->plans);
    J->info = calloc(nd, sizeof *J->info);
    J->progs = calloc(n, sizeof *J->progs);
    if (!J->plans || !J->info || !J->progs) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    mp_plan_options po;
    cli_plan_options(a, &po);
    mp_status st = MP_OK;
    for (uint32_t d = 0; d < nd && !st; d++) {
        st = mp_parallel_rank_info(par, d, &J->info[d]);
        if (!st)
            st = mp_plan_create(J->info[d].graph, &po, &J->plans[d]);
        if (!st)
            st = mp_verify_plan(J->info[d].graph, J->plans[d]);
    }
    uint32_t dp = a->par.po.dp, pp = a->par.po.pp;
    uint32_t tp = a->par.po.tp ? a->par.po.tp : 1;
    for (uint32_t r = 0; r < n && !st; r++) {
        uint32_t d = mp_parallel_distinct_of(par, r);
        mpv_rank_lowering rl = {1, r, n, dp, pp, r / (tp * dp),
                                r / tp % dp, tp, r % tp};
        if (J->info[d].stage != rl.stage) {
            cli_error("rank %u: stage %u, not %u (ranks are numbered (stage "
                      "x dp + data-parallel index) x tp + tensor-parallel "
                      "index)", (unsigned)r, (unsigned)J->info[d].stage,
                      (unsigned)rl.stage);
            return CLI_EXIT_INTERNAL;
        }
        st = mpv_program_from_plan_rank(J->info[d].graph, J->plans[d], &rl,
                                        &J->progs[r]);
    }
    if (!st)
        st = mpv_ranks_link(J->progs, n, &J->n_linked);
    return st ? cli_fail(ctx, st, model) : 0;
}

/* --lower-only: each rank's lowering and its NCCL calls */
static void print_ranks_lowering(const ranks_job *J)
{
    printf("%u ranks (tp %u x dp %u x pp %u), one process per GPU; %u "
           "sends linked to their receives, the schedules deadlock-free\n",
           (unsigned)J->n, (unsigned)J->progs[0]->rank.tp,
           (unsigned)J->v.a->par.po.dp, (unsigned)J->v.a->par.po.pp,
           (unsigned)J->n_linked);
    for (uint32_t r = 0; r < J->n; r++) {
        const mpv_program *p = J->progs[r];
        uint32_t calls[MPV_COLL_N_OPS] = {0}, unlinked = 0, tp_calls = 0;
        for (uint32_t i = 0; i < p->n_launches; i++) {
            const mpv_launch *l = &p->launches[i];
            if (l->kind != MPV_L_COLL || l->p.coll.op < 0 ||
                l->p.coll.op >= MPV_COLL_N_OPS)
                continue;
            calls[l->p.coll.op]++;
            tp_calls += l->p.coll.group == MPV_COLL_TP;
            unlinked += (l->p.coll.op == MPV_COLL_SEND ||
                         l->p.coll.op == MPV_COLL_RECV) && l->p.coll.peer < 0;
        }
        printf("rank %u (stage %u, data-parallel index %u, tensor-parallel "
               "index %u): %u nodes run (%u synthetic); arena %llu bytes; "
               "NCCL calls: %u all-reduce, %u reduce, %u broadcast, %u "
               "reduce-scatter, %u all-gather, %u send, %u receive (%u "
               "without a partner: local); %u of them in the "
               "tensor-parallel group\n",
               (unsigned)r, (unsigned)p->rank.stage,
               (unsigned)p->rank.dp_index, (unsigned)p->rank.tp_index,
               p->n_real + p->n_synthetic, p->n_synthetic,
               (unsigned long long)p->arena_bytes,
               calls[MPV_COLL_ALL_REDUCE], calls[MPV_COLL_REDUCE],
               calls[MPV_COLL_BCAST], calls[MPV_COLL_REDUCE_SCATTER],
               calls[MPV_COLL_ALL_GATHER], calls[MPV_COLL_SEND],
               calls[MPV_COLL_RECV], unlinked, tp_calls);
    }
}

/* How many GPUs the ranks can use: MEMPLAN_GPU_COUNT (the tests' stand-in
 * for a machine), else a child that asks CUDA (the parent itself never
 * initialises CUDA: the rank children could not use it after a fork).
 * -1: no CUDA in this build. */
static int gpu_count(void)
{
    const char *e = getenv("MEMPLAN_GPU_COUNT");
    if (e && *e)
        return atoi(e);
#ifdef MP_WITH_CUDA
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        int n = mpv_cuda_device_count();
        n = n < 0 ? 0 : n; /* CUDA fails: no GPU to use */
        ssize_t w = write(fd[1], &n, sizeof n);
        _exit(w == (ssize_t)sizeof n ? 0 : 1);
    }
    close(fd[1]);
    int n = 0;
    if (pid < 0 || read(fd[0], &n, sizeof n) != (ssize_t)sizeof n)
        n = 0;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return n;
#else
    return -1;
#endif
}

#ifdef MP_WITH_CUDA
/* CUDA_VISIBLE_DEVICES for rank r: the r-th of the parent's list, else r */
static void visible_device(uint32_t r, char *buf, size_t cap)
{
    const char *e = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(buf, cap, "%u", (unsigned)r);
    if (!e || !*e)
        return;
    uint32_t k = 0;
    for (const char *s = e; *s; k++) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (k == r) {
            snprintf(buf, cap, "%.*s", (int)len, s);
            return;
        }
        if (!c)
            break;
        s = c + 1;
    }
}

/* all n bytes through fd (out: written, else read); 0 or -1 */
static int move_all(int fd, void *buf, size_t n, int out)
{
    char *p = buf;
    while (n) {
        ssize_t w = out ? write(fd, p, n) : read(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    return move_all(fd, (void *)buf, n, 1);
}

static int read_all(int fd, void *buf, size_t n)
{
    return move_all(fd, buf, n, 0);
}

/* Child r: its GPU, the unique id, the run, its row (to fd out). Never
 * returns. idp[q]: the pipe that carries the unique id from rank 0 to
 * rank q; res[q]: rank q's row to the parent. */
static void run_rank(ranks_job *J, uint32_t r, int (*idp)[2], int (*res)[2])
{
    rank_row row;
    memset(&row, 0, sizeof row);
    row.rank = r;
    mpv_program *p = J->progs[r];
    row.stage = p->rank.stage;
    row.dp_index = p->rank.dp_index;
    row.tp_index = p->rank.tp_index;
    row.n_coll = p->n_coll;
    row.rc = CLI_EXIT_INTERNAL;
    for (uint32_t q = 0; q < J->n; q++) {
        if (q != r)
            close(idp[q][0]);
        if (r != 0 || q == 0)
            close(idp[q][1]);
        close(res[q][0]);
        if (q != r)
            close(res[q][1]);
    }
    int out = res[r][1];
    char dev[64];
    visible_device(r, dev, sizeof dev);
    setenv("CUDA_VISIBLE_DEVICES", dev, 1);
    setenv("NCCL_NVLS_ENABLE", "0", 1);      /* NVLink multicast off */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);  /* connections at init: their
                                              * memory in nccl_bytes */
    unsigned char id[MPV_NCCL_ID_BYTES];
    char why[300] = "";
    int bad = 0;
    if (r == 0) {
        /* made here: ncclGetUniqueId starts the bootstrap root in the
         * process that calls it, which must live through the init */
        bad = mpv_nccl_unique_id(J->nccl, id, why, sizeof why) != 0;
        for (uint32_t q = 1; q < J->n; q++) {
            if (!bad && write_all(idp[q][1], id, sizeof id) != 0)
                bad = 1, snprintf(why, sizeof why, "the unique id to rank %u",
                                  (unsigned)q);
            close(idp[q][1]);
        }
    } else if (read_all(idp[r][0], id, sizeof id) != 0) {
        bad = 1;
        snprintf(why, sizeof why, "no NCCL unique id from rank 0 (it "
                 "failed first)");
    }
    mpv_result *rs = &J->v.res;
    if (bad) {
        snprintf(row.error, sizeof row.error, "NCCL: %s", why);
    } else {
        const cli_args *a = J->v.a;
        mpv_options vo;
        mpv_cmd_run_options(a, &vo);
        vo.nccl = J->nccl;
        vo.nccl_id = id;
        if (mpv_execute(p, &vo, rs) != 0) {
            snprintf(row.error, sizeof row.error, "executor: %s", rs->error);
        } else {
            uint32_t d = mp_parallel_distinct_of(J->v.par, r);
            mpv_cmd v = J->v;
            mpv_cmd_figures f;
            v.g = J->info[d].graph;
            v.plan = J->plans[d];
            v.prog = p;
            if (mpv_cmd_figures_get(&v, &f) == 0) {
                row.rc = 0;
                row.pred_total = f.pred_total;
                row.measured = rs->peak_measured;
                row.ratio = f.r_total;
                row.pred_arena = f.pred_arena;
                row.arena_measured = rs->arena_measured;
                row.all_ok = f.all_ok;
                row.have_pred = f.have_pred;
                row.pred_ms = f.pred_s * 1e3;
            }
            free(v.step_s);
            row.nccl_bytes = rs->nccl_bytes;
            row.lazy_bytes = rs->lazy_bytes;
            row.planned_ms = rs->planned_ms;
            row.outputs_hash = rs->outputs_hash;
            row.loss = rs->first_output;
            row.weights_hash = mpv_weights_hash(p, rs->weights_after);
        }
    }
    int w = write_all(out, &row, sizeof row);
    close(out);
    _exit(w ? 1 : 0);
}

/* Forks the ranks and collects their rows (a rank that did not finish
 * within MEMPLAN_RANKS_TIMEOUT seconds, default 540, is killed). 0 or an
 * exit code (printed). */
static int run_ranks(ranks_job *J, rank_row *rows)
{
    uint32_t n = J->n;
    int (*idp)[2] = calloc(n, sizeof *idp), (*res)[2] = calloc(n, sizeof *res);
    pid_t *pid = calloc(n, sizeof *pid);
    int rc = idp && res && pid ? 0 : CLI_EXIT_INTERNAL;
    for (uint32_t r = 0; r < n && !rc; r++)
        if (pipe(idp[r]) != 0 || pipe(res[r]) != 0)
            rc = CLI_EXIT_INTERNAL;
    if (rc) {
        cli_error("pipes for %u ranks: %s", (unsigned)n, strerror(errno));
        free(idp);
        free(res);
        free(pid);
        return rc;
    }
    fflush(NULL);
    for (uint32_t r = 0; r < n; r++) {
        pid[r] = fork();
        if (pid[r] == 0)
            run_rank(J, r, idp, res);
        if (pid[r] < 0)
            cli_error("fork for rank %u: %s", (unsigned)r, strerror(errno));
    }
    for (uint32_t r = 0; r < n; r++) {
        close(idp[r][0]);
        close(idp[r][1]);
        close(res[r][1]);
    }
    const char *te = getenv("MEMPLAN_RANKS_TIMEOUT");
    double limit = te && atof(te) > 0 ? atof(te) : 540.0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t left = 0;
    for (uint32_t r = 0; r < n; r++)
        left += pid[r] > 0;
    int timed_out = 0;
    while (left) {
        int stw;
        pid_t w = waitpid(-1, &stw, WNOHANG);
        if (w > 0) {
            for (uint32_t r = 0; r < n; r++)
                if (pid[r] == w)
                    pid[r] = 0, left--;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) +
                1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > limit) {
            timed_out = 1;
            for (uint32_t r = 0; r < n; r++)
                if (pid[r] > 0)
                    kill(pid[r], SIGKILL);
            continue;
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    for (uint32_t r = 0; r < n; r++) {
        memset(&rows[r], 0, sizeof rows[r]);
        if (read_all(res[r][0], &rows[r], sizeof rows[r]) != 0) {
            memset(&rows[r], 0, sizeof rows[r]);
            rows[r].rank = r;
            rows[r].stage = J->progs[r]->rank.stage;
            rows[r].dp_index = J->progs[r]->rank.dp_index;
            rows[r].tp_index = J->progs[r]->rank.tp_index;
            rows[r].rc = CLI_EXIT_INTERNAL;
            snprintf(rows[r].error, sizeof rows[r].error,
                     timed_out ? "did not finish in %.0f s (killed): a "
                                 "collective waiting for another rank?"
                               : "ended without a result",
                     limit);
        }
        close(res[r][0]);
    }
    free(idp);
    free(res);
    free(pid);
    return 0;
}
#endif

/* The checks across ranks: across the data-parallel replicas (the ranks
 * of one stage and one tensor-parallel index) the loss (the first
 * output) and the weights after the step (hash) agree. The ranks of a
 * tensor-parallel group hold different shards: their weights are not
 * compared; *tp_loss says whether their loss agrees (after the final
 * all-reduce it should; reported, not a check). 1 agree, 0 differ, -1
 * not compared (a rank failed; *tp_loss: also no tp). */
static void agree(const ranks_job *J, const rank_row *rows, int *loss_ok,
                  int *w_ok, int *tp_loss)
{
    uint32_t tp = J->progs[0]->rank.tp ? J->progs[0]->rank.tp : 1;
    uint32_t dp = J->v.a->par.po.dp;
    *loss_ok = *w_ok = 1;
    *tp_loss = tp > 1 ? 1 : -1;
    for (uint32_t r = 0; r < J->n; r++)
        if (rows[r].rc)
            *loss_ok = *w_ok = *tp_loss = -1; /* a rank failed */
    for (uint32_t r = 0; r < J->n && *loss_ok > 0; r++) {
        /* the replica of data-parallel index 0; the tp group's first */
        const rank_row *a = &rows[r], *b = &rows[r - r / tp % dp * tp],
                       *c = &rows[r - r % tp];
        *loss_ok &= a->loss == b->loss && a->outputs_hash == b->outputs_hash;
        *w_ok &= a->weights_hash == b->weights_hash;
        if (*tp_loss > 0)
            *tp_loss = a->loss == c->loss;
    }
}

static void print_rows(const ranks_job *J, const rank_row *rows, int loss_ok,
                       int w_ok, int tp_loss)
{
    const cli_args *a = J->v.a;
    int ver = 0;
    const char *path = mpv_nccl_path(J->nccl, &ver);
    printf("ranks        %u (tp %u%s, dp %u, ZeRO-%d, pp %u, %u "
           "micro-batches, %s), one process per GPU; NCCL %d from %s\n",
           (unsigned)J->n, (unsigned)J->progs[0]->rank.tp,
           a->par.po.sp ? " with sp" : "", (unsigned)a->par.po.dp,
           a->par.po.zero, (unsigned)a->par.po.pp,
           (unsigned)a->par.po.microbatches,
           mp_pp_schedule_name(a->par.po.schedule), ver, path);
    printf("%-5s %5s %3s %3s %14s %14s %8s %10s %10s %10s %14s %18s  %s\n",
           "rank", "stage", "dp", "tp", "predicted MiB", "measured MiB",
           "ratio", "NCCL MiB", "step ms", "pred. ms", "loss",
           "weights after", "checks");
    for (uint32_t r = 0; r < J->n; r++) {
        const rank_row *w = &rows[r];
        if (w->rc) {
            printf("%-5u %5u %3u %3u  failed: %s\n", (unsigned)w->rank,
                   (unsigned)w->stage, (unsigned)w->dp_index,
                   (unsigned)w->tp_index, w->error);
            continue;
        }
        printf("%-5u %5u %3u %3u %14.1f %14.1f %8.4f %10.1f %10.2f %10.2f "
               "%14.7g %18llx  %s\n",
               (unsigned)w->rank, (unsigned)w->stage, (unsigned)w->dp_index,
               (unsigned)w->tp_index,
               (double)w->pred_total / 1048576.0,
               (double)w->measured / 1048576.0, w->ratio,
               (double)w->nccl_bytes / 1048576.0, w->planned_ms,
               w->have_pred ? w->pred_ms : 0.0, w->loss,
               (unsigned long long)w->weights_hash,
               w->all_ok ? "all pass" : "FAIL");
    }
    const char *which = J->progs[0]->rank.tp > 1
                            ? " (the replicas: same stage and tensor-"
                              "parallel index; a tensor-parallel group's "
                              "ranks hold different shards)"
                            : "";
    if (a->par.po.dp > 1 && loss_ok < 0)
        printf("across data-parallel ranks: not compared (a rank failed)\n");
    else if (a->par.po.dp > 1)
        printf("across data-parallel ranks%s: outputs (loss) %s, weights "
               "after the step %s\n", which,
               loss_ok ? "identical" : "DIFFER",
               w_ok ? "identical" : "DIFFER");
    if (J->progs[0]->rank.tp > 1 && tp_loss >= 0)
        printf("across each tensor-parallel group: loss %s (reported, not "
               "a check; weights not compared: shards)\n",
               tp_loss ? "identical" : "differs");
}

static int print_json(const ranks_job *J, const rank_row *rows, int loss_ok,
                      int w_ok, int tp_loss, int all_ok)
{
    const cli_args *a = J->v.a;
    int ver = 0;
    const char *path = mpv_nccl_path(J->nccl, &ver);
    mp__jw w;
    cli_json_begin(&w, J->v.ctx);
    cli_json_object(&w, "parallel");
    cli_json_int(&w, "ranks", J->n);
    cli_json_int(&w, "tp", J->progs[0]->rank.tp);
    cli_json_bool(&w, "sp", a->par.po.sp != 0);
    cli_json_int(&w, "dp", a->par.po.dp);
    cli_json_int(&w, "zero", a->par.po.zero);
    cli_json_int(&w, "pp", a->par.po.pp);
    cli_json_int(&w, "microbatches", a->par.po.microbatches);
    cli_json_str(&w, "schedule", mp_pp_schedule_name(a->par.po.schedule));
    mp__jw_end(&w);
    cli_json_str(&w, "nccl", path);
    cli_json_int(&w, "nccl_version", ver);
    cli_json_int(&w, "linked_sends", J->n_linked);
    mp__jw_key(&w, "ranks");
    mp__jw_array(&w, true);
    for (uint32_t r = 0; r < J->n; r++) {
        const rank_row *x = &rows[r];
        char h[2][32];
        snprintf(h[0], sizeof h[0], "%016llx",
                 (unsigned long long)x->outputs_hash);
        snprintf(h[1], sizeof h[1], "%016llx",
                 (unsigned long long)x->weights_hash);
        cli_json_object(&w, NULL);
        cli_json_int(&w, "rank", x->rank);
        cli_json_int(&w, "stage", x->stage);
        cli_json_int(&w, "dp_index", x->dp_index);
        cli_json_int(&w, "tp_index", x->tp_index);
        cli_json_int(&w, "nccl_calls", x->n_coll);
        cli_json_bool(&w, "ran", x->rc == 0);
        if (x->rc)
            cli_json_str(&w, "error", x->error);
        const cli_json_size sizes[] = {
            {"total_device_bytes", x->pred_total},
            {"peak_bytes", x->measured},
            {"predicted_arena_bytes", x->pred_arena},
            {"arena_bytes", x->arena_measured},
            {"nccl_bytes", x->nccl_bytes},
            {"lazy_library_bytes", x->lazy_bytes},
        };
        cli_json_sizes(&w, sizes, sizeof sizes / sizeof sizes[0]);
        cli_json_real(&w, "ratio_total", x->ratio);
        cli_json_real(&w, "planned_ms", x->planned_ms);
        if (x->have_pred)
            cli_json_real(&w, "predicted_ms", x->pred_ms);
        cli_json_real(&w, "loss", x->loss);
        cli_json_str(&w, "outputs_hash", h[0]);
        cli_json_str(&w, "weights_after_hash", h[1]);
        cli_json_bool(&w, "all_ok", x->all_ok);
        mp__jw_end(&w);
    }
    mp__jw_end(&w);
    /* across the data-parallel replicas: the ranks of one stage and one
     * tensor-parallel index */
    cli_json_str(&w, "agree_across",
                 "data-parallel replicas (same stage and tensor-parallel "
                 "index)");
    cli_json_bool(&w, "losses_agree", loss_ok > 0);
    cli_json_bool(&w, "weights_agree", w_ok > 0);
    if (J->progs[0]->rank.tp > 1) {
        /* reported, not a check: a tp group's ranks hold different
         * shards (weights not compared); the loss after the final
         * all-reduce should agree */
        mp__jw_key(&w, "tp_losses_agree");
        if (tp_loss < 0)
            mp__jw_null(&w);
        else
            mp__jw_bool(&w, tp_loss > 0);
    }
    cli_json_bool(&w, "all_ok", all_ok);
    return cli_json_print(&w);
}

/* Enough GPUs, NCCL, CUDA; the run and the report. An exit code. */
static int run_and_report(ranks_job *J)
{
    int gpus = gpu_count();
    if (gpus >= 0 && (uint32_t)gpus < J->n) {
        cli_error("--ranks %u needs %u GPUs, one per rank; this machine has "
                  "%d visible%s%s%s: run it where %u GPUs are, or validate "
                  "one rank at a time on one GPU with --rank R (0 to %u; "
                  "local collectives)",
                  (unsigned)J->n, (unsigned)J->n, gpus,
                  getenv("CUDA_VISIBLE_DEVICES") ? " (CUDA_VISIBLE_DEVICES="
                                                 : "",
                  getenv("CUDA_VISIBLE_DEVICES")
                      ? getenv("CUDA_VISIBLE_DEVICES") : "",
                  getenv("CUDA_VISIBLE_DEVICES") ? ")" : "",
                  (unsigned)J->n, (unsigned)J->n - 1);
        return CLI_EXIT_INPUT;
    }
    char why[1600];
    if (!(J->nccl = mpv_nccl_load(why, sizeof why))) {
        cli_error("%s", why);
        return CLI_EXIT_INPUT;
    }
#ifdef MP_WITH_CUDA
    rank_row *rows = calloc(J->n, sizeof *rows);
    if (!rows) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    int rc = run_ranks(J, rows);
    int loss_ok = 0, w_ok = 0, tp_loss = -1, all_ok = !rc;
    if (!rc) {
        agree(J, rows, &loss_ok, &w_ok, &tp_loss);
        for (uint32_t r = 0; r < J->n; r++)
            all_ok &= rows[r].rc == 0 && rows[r].all_ok;
        all_ok &= loss_ok > 0 && w_ok > 0;
        if (J->v.a->json) {
            rc = print_json(J, rows, loss_ok, w_ok, tp_loss, all_ok);
        } else {
            print_rows(J, rows, loss_ok, w_ok, tp_loss);
        }
    }
    free(rows);
    return !rc && !all_ok ? CLI_EXIT_VERIFY : rc;
#else
    cli_error("built without CUDA (MEMPLAN_WITH_CUDA=OFF): lowered %u ranks, "
              "nothing run; --lower-only shows each rank's NCCL calls, and a "
              "build with CUDA runs them", (unsigned)J->n);
    (void)print_json;
    (void)print_rows;
    (void)agree;
    return CLI_EXIT_INPUT;
#endif
}

int mpv_validate_ranks(cli_args *a)
{
    ranks_job J;
    memset(&J, 0, sizeof J);
    J.v.a = a;
    J.v.ctx = cli_ctx_create();
    int rc = J.v.ctx ? build_programs(&J) : CLI_EXIT_INTERNAL;
    if (!rc && a->lower_only) {
        print_ranks_lowering(&J);
        job_free(&J);
        return 0;
    }
    if (!rc)
        rc = run_and_report(&J);
    job_free(&J);
    return rc;
}
