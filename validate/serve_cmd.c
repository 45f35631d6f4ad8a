/* serve_cmd.c - `memplan validate CONFIG --serve` (docs/serving.md, "The
 * executor run"): an LLM generation run on the GPU as memplan plans it.
 *
 * For the config, mp_serve_generation_graph builds the graph of the whole
 * generation (the prefill of --prompt tokens for --batch sequences, then
 * --gen decode steps feeding the greedy tokens back), twice: with the KV
 * cache paged (blocks of --block-size tokens laid out by
 * mp_serve_block_table, read and written through the block table) and
 * with a contiguous cache (one row of prompt + gen slots a sequence).
 * Each is planned (mp_plan_create), verified, lowered and run by the
 * executor as `memplan validate` runs any plan: the memory measured
 * against the prediction, the planned run against one allocation per
 * tensor. Then the two runs are compared: the tokens generated and the
 * last step's fp32 logits must be the same bytes, and so must the KV
 * cache after the run read in sequence order (through the block table
 * for the paged one), every layer's K and V of every token of every
 * sequence. */
#include "command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One layout's run and what is read from it */
typedef struct serve_run {
    mpv_cmd v;
    mpv_cmd_figures f;
    int paged;
    uint32_t num_blocks;
    uint64_t model_bytes;  /* the model's weights (kind weight, no cache) */
    uint64_t cache_bytes;  /* every layer's K and V caches */
    uint64_t table_bytes;  /* the block table */
    uint64_t cache_hash;   /* the cache's written slots in sequence order */
    int have_cache_hash;
} serve_run;

typedef struct serve_ctx {
    cli_args *a;
    mp_llm_config m;
    mp_serve_options so;
    mp_serve_result sr;    /* the serving plan's figures, for the report */
    uint32_t seqs, prompt, gen;
    serve_run run[2];      /* paged, contiguous */
} serve_ctx;

/* The generation's graph of one layout, planned, verified and lowered.
 * 0 or an exit code (printed). */
static int build_run(serve_ctx *sc, serve_run *r)
{
    cli_args *a = sc->a;
    mpv_cmd *v = &r->v;
    mp_serve_options so = sc->so;
    so.kv_paged = r->paged;
    mp_status st = mp_serve_generation_graph(v->ctx, &sc->m, &so, sc->seqs,
                                             sc->prompt, sc->gen, &v->g);
    if (st)
        return cli_fail(v->ctx, st, a->pos[0]);
    v->own_g = v->g;
    mp_plan_options po;
    cli_plan_options(a, &po);
    if ((st = mp_plan_create(v->g, &po, &v->plan)) ||
        (st = mp_verify_plan(v->g, v->plan)) ||
        (st = mpv_program_from_plan(v->g, v->plan, &v->prog)))
        return cli_fail(v->ctx, st, a->pos[0]);
    /* the persistent tensors by part */
    for (uint32_t t = 0; t < mp_graph_num_tensors(v->g); t++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(v->g, t, &ti);
        if (ti.kind == MP_KIND_WEIGHT && strstr(ti.name, "_cache"))
            r->cache_bytes += ti.bytes;
        else if (ti.kind == MP_KIND_WEIGHT)
            r->model_bytes += ti.bytes;
        else if (strcmp(ti.name, "kv_block_table") == 0)
            r->table_bytes = ti.bytes;
    }
    uint32_t l0;
    if (r->paged && mp_graph_find_tensor(v->g, "l0.k_cache", &l0) == MP_OK) {
        mp_tensor_info ti;
        mp_graph_tensor_info(v->g, l0, &ti);
        r->num_blocks = (uint32_t)ti.dims[0];
    }
    return 0;
}

/* The bytes of output tensor `name` in the run's outputs (NULL: none) */
static const unsigned char *output_of(const serve_run *r, const char *name,
                                      uint64_t *bytes)
{
    const mpv_program *p = r->v.prog;
    uint64_t at = 0;
    if (!r->v.res.outputs)
        return NULL;
    for (uint32_t i = 0; i < p->n_outputs; i++) {
        mp_tensor_info ti;
        mp_graph_tensor_info(p->graph, p->outputs[i], &ti);
        if (strcmp(ti.name, name) == 0) {
            if (at + ti.bytes > r->v.res.output_bytes)
                return NULL;
            *bytes = ti.bytes;
            return r->v.res.outputs + at;
        }
        at += ti.bytes;
    }
    return NULL;
}

/* The KV cache after the run (the weights buffer kept by the executor)
 * hashed in sequence order: per layer K then V, per sequence, per token
 * 0 .. prompt + gen - 1, the token's row of every KV head, read from
 * the slot the layout puts it in (paged: through the block table the
 * graph holds). */
static int cache_hash(const serve_ctx *sc, serve_run *r)
{
    const mpv_program *p = r->v.prog;
    const mp_graph *g = r->v.g;
    const unsigned char *w = r->v.res.weights_after;
    if (!w)
        return -1;
    uint64_t len = (uint64_t)sc->prompt + sc->gen, h = MPV_FNV_BASIS;
    const int32_t *tab = NULL;
    uint64_t per = 0, bs = sc->so.block_size;
    uint32_t tb;
    if (r->paged) {
        if (mp_graph_find_tensor(g, "kv_block_table", &tb) != MP_OK ||
            p->woff[tb] == UINT64_MAX)
            return -1;
        tab = (const int32_t *)(w + p->woff[tb]);
        per = (len + bs - 1) / bs;
    }
    for (uint32_t l = 0; l < sc->m.layers; l++)
        for (int kv = 0; kv < 2; kv++) {
            char nm[64];
            uint32_t t;
            mp_tensor_info ti;
            snprintf(nm, sizeof nm, "l%u.%c_cache", l, kv ? 'v' : 'k');
            if (mp_graph_find_tensor(g, nm, &t) != MP_OK ||
                p->woff[t] == UINT64_MAX)
                return -1;
            mp_graph_tensor_info(g, t, &ti);
            uint64_t row = ti.bytes / ((uint64_t)ti.dims[0] * ti.dims[1]);
            const unsigned char *base = w + p->woff[t];
            for (uint64_t s = 0; s < sc->seqs; s++)
                for (uint64_t pos = 0; pos < len; pos++) {
                    uint64_t slot = tab ? (uint64_t)tab[s * per + pos / bs] *
                                                  bs +
                                              pos % bs
                                        : s * len + pos;
                    if ((slot + 1) * row > ti.bytes)
                        return -1;
                    h = mpv_fnv1a(h, base + slot * row, row);
                }
        }
    r->cache_hash = h;
    r->have_cache_hash = 1;
    return 0;
}

/* Runs one layout on the GPU and reads its figures. 0 or an exit code */
static int execute(serve_ctx *sc, serve_run *r)
{
#ifdef MP_WITH_CUDA
    cli_args *a = sc->a;
    mpv_cmd *v = &r->v;
    char why[200];
    if (!mpv_cuda_device_ok(why, sizeof why)) {
        cli_error("%s: validate --serve runs the generation on a GPU. "
                  "Without one, 'memplan validate %s --serve --lower-only' "
                  "shows how each node would run",
                  why, a->pos[0]);
        return CLI_EXIT_INPUT;
    }
    if (!a->quiet && (a->progress || isatty(fileno(stderr))))
        fprintf(stderr, "memplan: validate --serve: running the %s "
                "generation (%u steps) on the GPU\n",
                r->paged ? "paged" : "contiguous", v->prog->n_steps);
    mpv_options vo;
    mpv_cmd_run_options(a, &vo);
    vo.keep_outputs = 1;
    if (mpv_execute(v->prog, &vo, &v->res) != 0) {
        cli_error("executor (%s cache): %s", r->paged ? "paged" : "contiguous",
                  v->res.error);
        return CLI_EXIT_INTERNAL;
    }
    return mpv_cmd_figures_get(v, &r->f);
#else
    (void)sc;
    cli_error("built without CUDA (MEMPLAN_WITH_CUDA=OFF): lowered the %s "
              "generation (%u nodes, %u real kernels, %u synthetic), nothing "
              "run; --lower-only shows the lowering",
              r->paged ? "paged" : "contiguous",
              r->v.prog->n_real + r->v.prog->n_synthetic, r->v.prog->n_real,
              r->v.prog->n_synthetic);
    return CLI_EXIT_INPUT;
#endif
}

/* What the two runs give, compared */
typedef struct serve_cmp {
    int tokens_identical, logits_identical, cache_identical;
    int total_ok;          /* the paged run's total within 1% */
    int all_ok;
    uint64_t n_tokens;
} serve_cmp;

static int bytes_equal(const serve_run *x, const serve_run *y,
                       const char *name, uint64_t *n)
{
    uint64_t bx = 0, by = 0;
    const unsigned char *a = output_of(x, name, &bx),
                        *b = output_of(y, name, &by);
    if (n)
        *n = bx;
    return a && b && bx == by && memcmp(a, b, bx) == 0;
}

static void compare(const serve_ctx *sc, serve_cmp *c)
{
    const serve_run *pg = &sc->run[0], *ct = &sc->run[1];
    char nm[64];
    memset(c, 0, sizeof *c);
    c->tokens_identical = 1;
    for (uint32_t s = 0; s <= sc->gen; s++) {
        uint64_t n = 0;
        snprintf(nm, sizeof nm, "step%u/sampled", s);
        c->tokens_identical &= bytes_equal(pg, ct, nm, &n);
        c->n_tokens += n / 8;
    }
    snprintf(nm, sizeof nm, "step%u/logits_fp32", sc->gen);
    c->logits_identical = bytes_equal(pg, ct, nm, NULL);
    c->cache_identical = pg->have_cache_hash && ct->have_cache_hash &&
                         pg->cache_hash == ct->cache_hash;
    c->total_ok = pg->f.r_total >= 0.99 && pg->f.r_total <= 1.01;
    c->all_ok = c->tokens_identical && c->logits_identical &&
                c->cache_identical && c->total_ok && pg->f.all_ok &&
                ct->f.all_ok;
}

/* the tokens of sequence s, one a step */
static void tokens_json(mp__jw *w, const serve_ctx *sc, const serve_run *r)
{
    cli_json_key(w, "tokens");
    mp__jw_array(w, true);
    for (uint32_t s = 0; s < sc->seqs; s++) {
        mp__jw_array(w, false);
        for (uint32_t p = 0; p <= sc->gen; p++) {
            char nm[64];
            uint64_t n = 0;
            int64_t t = -1;
            snprintf(nm, sizeof nm, "step%u/sampled", p);
            const unsigned char *b = output_of(r, nm, &n);
            if (b && n >= 8 * (uint64_t)(s + 1))
                memcpy(&t, b + 8 * (uint64_t)s, 8);
            mp__jw_i64(w, t);
        }
        mp__jw_end(w);
    }
    mp__jw_end(w);
}

/* the memory of one run by part, predicted and measured */
static void memory_json(mp__jw *w, const char *key, const serve_run *r)
{
    const mpv_cmd_figures *f = &r->f;
    const cli_json_size rows[] = {
        {"model_weights_bytes", r->model_bytes},
        {"kv_cache_bytes", r->cache_bytes},
        {"block_table_bytes", r->table_bytes},
        {"weights_buffer_bytes", r->v.prog->weights_bytes},
        {"arena_bytes", mp_plan_figures(r->v.plan)->arena_bytes},
        {"workspace_bytes", r->v.prog->workspace_bytes + f->cublas_ws},
        {"predicted_device_bytes", f->pred_total},
        {"measured_device_bytes", r->v.res.peak_measured},
        {"kv_blocks", r->num_blocks},
    };
    cli_json_object(w, key);
    cli_json_sizes(w, rows, sizeof rows / sizeof rows[0]);
    cli_json_real(w, "ratio_measured_predicted", f->r_total);
    mp__jw_end(w);
}

static int report_json(serve_ctx *sc, const serve_cmp *c)
{
    serve_run *pg = &sc->run[0], *ct = &sc->run[1];
    mp__jw w;
    cli_json_begin(&w, pg->v.ctx);
    cli_json_str(&w, "model", sc->a->pos[0]);
    cli_json_str(&w, "device", pg->v.res.device);
    cli_json_object(&w, "serve");
    cli_json_int(&w, "batch", sc->seqs);
    cli_json_int(&w, "prompt", sc->prompt);
    cli_json_int(&w, "gen", sc->gen);
    cli_json_int(&w, "block_size", sc->so.block_size);
    cli_json_str(&w, "kv_dtype", mp_dtype_name(sc->m.dtype));
    cli_json_u64(&w, "kv_bytes_per_token", sc->sr.kv_bytes_per_token);
    cli_json_u64(&w, "serve_weight_bytes", sc->sr.weight_bytes);
    cli_json_u64(&w, "tokens_generated", c->n_tokens);
    memory_json(&w, "paged", pg);
    memory_json(&w, "contiguous", ct);
    tokens_json(&w, sc, pg);
    cli_json_object(&w, "checks");
    cli_json_bool(&w, "tokens_identical", c->tokens_identical);
    cli_json_bool(&w, "final_logits_identical", c->logits_identical);
    cli_json_bool(&w, "kv_cache_identical_in_sequence_order",
                  c->cache_identical);
    cli_json_bool(&w, "paged_total_within_1pct", c->total_ok);
    cli_json_bool(&w, "paged_checks", pg->f.all_ok);
    cli_json_bool(&w, "contiguous_checks", ct->f.all_ok);
    cli_json_bool(&w, "all", c->all_ok);
    mp__jw_end(&w);
    mp__jw_end(&w);
    cli_json_object(&w, "paged");
    mpv_cmd_json_members(&w, &pg->v, &pg->f);
    mp__jw_end(&w);
    cli_json_object(&w, "contiguous");
    mpv_cmd_json_members(&w, &ct->v, &ct->f);
    mp__jw_end(&w);
    return cli_json_print(&w);
}

static void memory_line(const char *what, const serve_run *r)
{
    char b[7][64];
    printf("%-12s predicted %s (weights %s + KV cache %s + block table %s, "
           "arena %s, workspace %s; in device granules), measured %s, "
           "ratio %.4f\n",
           what, cli_size(r->f.pred_total, b[0], sizeof b[0]),
           cli_size(r->model_bytes, b[1], sizeof b[1]),
           cli_size(r->cache_bytes, b[2], sizeof b[2]),
           cli_size(r->table_bytes, b[3], sizeof b[3]),
           cli_size(mp_plan_figures(r->v.plan)->arena_bytes, b[4],
                    sizeof b[4]),
           cli_size(r->v.prog->workspace_bytes + r->f.cublas_ws, b[5],
                    sizeof b[5]),
           cli_size(r->v.res.peak_measured, b[6], sizeof b[6]),
           r->f.r_total);
}

static void report_text(serve_ctx *sc, const serve_cmp *c)
{
    serve_run *pg = &sc->run[0], *ct = &sc->run[1];
    printf("== paged KV cache: %u blocks of %u tokens ==\n", pg->num_blocks,
           sc->so.block_size);
    mpv_cmd_report_text(&pg->v, &pg->f);
    printf("== contiguous KV cache: %u sequences x %u tokens ==\n", sc->seqs,
           sc->prompt + sc->gen);
    mpv_cmd_report_text(&ct->v, &ct->f);
    printf("== generation ==\n");
    printf("serve        %s: %u sequences, prompt %u, %u decode steps "
           "(greedy), KV %s, %llu bytes a token\n",
           sc->m.name, sc->seqs, sc->prompt, sc->gen,
           mp_dtype_name(sc->m.dtype),
           (unsigned long long)sc->sr.kv_bytes_per_token);
    memory_line("paged", pg);
    memory_line("contiguous", ct);
    printf("tokens       %llu generated, %s; final logits %s; KV cache in "
           "sequence order %s\n",
           (unsigned long long)c->n_tokens,
           c->tokens_identical ? "identical" : "DIFFER",
           c->logits_identical ? "identical" : "DIFFER",
           c->cache_identical ? "identical" : "DIFFERS");
    printf("checks       %s\n", c->all_ok ? "all passed" : "FAILED");
}

/* --lower-only: each layout's lowering and the cache */
static void print_lowering(const serve_ctx *sc)
{
    for (int i = 0; i < 2; i++) {
        const serve_run *r = &sc->run[i];
        char b[3][64];
        printf("== %s KV cache ==\n", r->paged ? "paged" : "contiguous");
        printf("cache        %s in %s (weights %s, block table %s); %u "
               "blocks\n",
               cli_size(r->cache_bytes, b[0], sizeof b[0]),
               r->paged ? "blocks" : "one row a sequence",
               cli_size(r->model_bytes, b[1], sizeof b[1]),
               cli_size(r->table_bytes, b[2], sizeof b[2]), r->num_blocks);
        mpv_cmd_print_lowering(&r->v);
    }
}

int mpv_validate_serve(cli_args *a)
{
    serve_ctx *sc = calloc(1, sizeof *sc);
    if (!sc) {
        cli_error("out of memory");
        return CLI_EXIT_INTERNAL;
    }
    sc->a = a;
    sc->so = a->so;
    sc->seqs = a->train.batch ? (uint32_t)a->train.batch : 1;
    sc->prompt = a->fo.prompt_len;
    sc->gen = a->fo.gen_len;
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        sc->run[i].paged = i == 0;
        sc->run[i].v.a = a;
        if (!(sc->run[i].v.ctx = cli_ctx_create()))
            rc = CLI_EXIT_INTERNAL;
    }
    mp_status st = MP_OK;
    if (!rc && a->train.batch > UINT32_MAX) {
        cli_error("--batch %llu: at most 4294967295 sequences",
                  (unsigned long long)a->train.batch);
        rc = CLI_EXIT_USAGE;
    }
    if (!rc && (st = mp_llm_config_load_json(sc->run[0].v.ctx, a->pos[0],
                                             &sc->m)))
        rc = cli_fail(sc->run[0].v.ctx, st, a->pos[0]);
    if (!rc) {
        /* the serving plan's figures of the same sizes, for the report */
        mp_serve_options so = sc->so;
        so.max_model_len = sc->prompt + sc->gen;
        so.max_seqs = sc->seqs;
        so.max_batched_tokens = sc->seqs * sc->prompt;
        so.graph_sizes_default = 0;
        if ((st = mp_serve_plan(sc->run[0].v.ctx, &sc->m, NULL, &so,
                                &sc->sr)))
            rc = cli_fail(sc->run[0].v.ctx, st, a->pos[0]);
    }
    for (int i = 0; i < 2 && !rc; i++)
        rc = build_run(sc, &sc->run[i]);
    if (!rc && a->lower_only) {
        print_lowering(sc);
    } else if (!rc) {
        for (int i = 0; i < 2 && !rc; i++)
            if (!(rc = execute(sc, &sc->run[i])))
                cache_hash(sc, &sc->run[i]);
        if (!rc) {
            serve_cmp c;
            compare(sc, &c);
            if (a->json)
                rc = report_json(sc, &c);
            else
                report_text(sc, &c);
            if (!rc && !c.all_ok)
                rc = CLI_EXIT_VERIFY;
        }
    }
    for (int i = 0; i < 2; i++) {
        mpv_cmd *v = &sc->run[i].v;
        mpv_result_free(&v->res);
        mpv_program_destroy(v->prog);
        mp_plan_destroy(v->plan);
        mp_graph_destroy(v->own_g);
        mp_ctx_destroy(v->ctx);
        free(v->step_s);
    }
    free(sc);
    return rc;
}
