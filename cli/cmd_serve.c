/* cmd_serve.c - memplan serve: how a GPU's memory divides when serving an
 * LLM (memplan/serve.h; docs/serving.md). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0
#define N_DIST 1000

static double gib(uint64_t b) { return (double)b / GIB; }

/* --lengths FILE (one length a line; blank lines and # comments skipped)
 * or a distribution (mp_serve_lengths). *out is malloc'ed. 0 or an exit
 * code (printed). */
static int read_lengths(mp_ctx *ctx, const char *arg, uint32_t max_len,
                        uint32_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (strchr(arg, ':') && !strchr(arg, '/')) {
        uint32_t *v = malloc(N_DIST * sizeof *v);
        if (!v) {
            cli_error("out of memory");
            return CLI_EXIT_INTERNAL;
        }
        mp_status st = mp_serve_lengths(ctx, arg, max_len, v, N_DIST);
        if (st) {
            free(v);
            return cli_fail(ctx, st, "--lengths");
        }
        *out = v;
        *n = N_DIST;
        return 0;
    }
    FILE *f = fopen(arg, "r");
    if (!f) {
        cli_error("--lengths %s: %s (give a file of one length a line, or "
                  "a distribution such as lognormal:1000:1)",
                  arg, strerror(errno));
        return CLI_EXIT_INPUT;
    }
    char line[256];
    size_t cap = 0, lineno = 0;
    uint32_t *v = NULL;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line, *end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '#' || *p == '\r')
            continue;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (*p == '-' || end == p || *end || errno || x == 0 ||
            x > UINT32_MAX) {
            cli_error("--lengths %s:%zu: '%.40s' is not a length in tokens "
                      "(one whole number >= 1 a line)",
                      arg, lineno, p);
            rc = CLI_EXIT_INPUT;
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            uint32_t *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                cli_error("out of memory");
                rc = CLI_EXIT_INTERNAL;
                break;
            }
            v = nv;
        }
        v[(*n)++] = (uint32_t)x;
    }
    fclose(f);
    if (!rc && *n == 0) {
        cli_error("--lengths %s: no lengths in the file", arg);
        rc = CLI_EXIT_INPUT;
    }
    if (rc) {
        free(v);
        *n = 0;
        return rc;
    }
    *out = v;
    return 0;
}

static const char *kv_name(const mp_llm_config *m, const mp_serve_options *o)
{
    mp_dtype t = o->kv_dtype ? o->kv_dtype : m->dtype;
    return mp_dtype_name(t);
}

/* one row of the what-if table: the plan on builtin device i */
typedef struct whatif {
    const char *name;
    mp_serve_result r;
    int ok;
} whatif;

static void forward_json(mp__jw *w, const char *key,
                         const mp_serve_forward *f)
{
    cli_json_object(w, key);
    cli_json_u64(w, "tokens", f->tokens);
    cli_json_u64(w, "seqs_sampled", f->seqs);
    cli_json_u64(w, "arena_bytes", f->arena_bytes);
    cli_json_u64(w, "lower_bound_bytes", f->lower_bound_bytes);
    cli_json_u64(w, "logits_fp32_bytes", f->logits_bytes);
    cli_json_u64(w, "sampler_bytes", f->sampler_bytes);
    cli_json_u64(w, "nodes", f->nodes);
    mp__jw_end(w);
}

static int print_json(mp_ctx *ctx, const mp_llm_config *m,
                      const mp_device *d, const mp_serve_options *o,
                      const mp_serve_result *r, const whatif *wi, size_t nw)
{
    mp__jw w;
    cli_json_begin(&w, ctx);
    cli_json_str(&w, "model", m->name);
    cli_json_str(&w, "device", d->name);
    cli_json_u64(&w, "tp", r->tp);
    cli_json_str(&w, "weights_format", mp_weight_format_name(o->weights));
    cli_json_u64(&w, "group_size", o->group_size);
    cli_json_str(&w, "kv_dtype", kv_name(m, o));
    cli_json_str(&w, "kv_layout", o->kv_paged ? "paged" : "contiguous");
    cli_json_u64(&w, "block_size", r->block_size);
    cli_json_u64(&w, "max_model_len", r->max_model_len);
    cli_json_u64(&w, "max_batched_tokens", o->max_batched_tokens);
    cli_json_u64(&w, "max_seqs", o->max_seqs);
    cli_json_real(&w, "gpu_util", o->gpu_util);
    cli_json_u64(&w, "sliding_window", m->sliding_window);
    const cli_json_size sizes[] = {
        {"device_bytes", r->device_bytes},
        {"budget_bytes", r->budget_bytes},
        {"kv_bytes_per_token", r->kv_bytes_per_token},
        {"kv_block_bytes", r->kv_block_bytes},
        {"kv_seq_bytes", r->kv_seq_bytes},
    };
    cli_json_sizes(&w, sizes, sizeof sizes / sizeof sizes[0]);
    cli_json_object(&w, "breakdown");
    const cli_json_size bd[] = {
        {"weights_bytes", r->weight_bytes},
        {"activations_bytes", r->activation_bytes},
        {"cuda_graphs_bytes", r->cuda_graph_bytes},
        {"runtime_bytes", r->runtime_bytes},
        {"kv_cache_bytes", r->kv_budget_bytes},
        {"kv_cache_used_bytes", r->kv_used_bytes},
    };
    cli_json_sizes(&w, bd, sizeof bd / sizeof bd[0]);
    mp__jw_end(&w);
    forward_json(&w, "prefill", &r->prefill);
    forward_json(&w, "decode", &r->decode);
    cli_json_object(&w, "cuda_graphs");
    cli_json_u64(&w, "count", r->cuda_graphs);
    cli_json_u64(&w, "largest_batch", r->cuda_graph_max);
    cli_json_u64(&w, "pool_bytes", r->cuda_graph_bytes);
    mp__jw_end(&w);
    cli_json_u64(&w, "kv_blocks", r->kv_blocks);
    cli_json_u64(&w, "kv_tokens", r->kv_tokens);
    cli_json_u64(&w, "max_seqs_at_max_model_len", r->max_seqs_at_len);
    cli_json_u64(&w, "max_len_at_max_seqs", r->max_len_at_seqs);
    cli_json_str(&w, "binding", mp_serve_binding_name(r->binding));
    cli_json_object(&w, "fragmentation");
    cli_json_u64(&w, "requests", r->frag_requests);
    cli_json_real(&w, "mean_length", r->mean_length);
    cli_json_u64(&w, "shared_prefix", o->shared_prefix);
    const cli_json_size fr[] = {
        {"token_bytes", r->frag_token_bytes},
        {"paged_bytes", r->frag_paged_bytes},
        {"contiguous_bytes", r->frag_contiguous_bytes},
        {"paged_shared_bytes", r->frag_shared_bytes},
        {"fit_paged", r->frag_fit_paged},
        {"fit_contiguous", r->frag_fit_contiguous},
        {"fit_paged_shared", r->frag_fit_shared},
    };
    cli_json_sizes(&w, fr, sizeof fr / sizeof fr[0]);
    mp__jw_end(&w);
    cli_json_key(&w, "what_if");
    mp__jw_array(&w, true);
    for (size_t i = 0; i < nw; i++) {
        cli_json_object(&w, NULL);
        cli_json_str(&w, "device", wi[i].name);
        cli_json_u64(&w, "device_bytes", wi[i].r.device_bytes);
        cli_json_u64(&w, "kv_cache_bytes", wi[i].r.kv_budget_bytes);
        cli_json_u64(&w, "kv_blocks", wi[i].r.kv_blocks);
        cli_json_u64(&w, "max_seqs_at_max_model_len",
                     wi[i].r.max_seqs_at_len);
        cli_json_u64(&w, "max_len_at_max_seqs", wi[i].r.max_len_at_seqs);
        cli_json_str(&w, "binding", mp_serve_binding_name(wi[i].r.binding));
        mp__jw_end(&w);
    }
    mp__jw_end(&w);
    return cli_json_print(&w);
}

static double pct_over(uint64_t a, uint64_t base)
{
    return base ? 100.0 * ((double)a - (double)base) / (double)base : 0;
}

static void print_text(const mp_llm_config *m, const mp_device *d,
                       const mp_serve_options *o, const mp_serve_result *r,
                       const whatif *wi, size_t nw)
{
    char safe[256], b1[64];
    printf("model        %s: %u layers, hidden %u, %u heads, %u KV heads x "
           "%u, FFN %u%s, vocab %u",
           cli_safe(m->name, safe, sizeof safe), m->layers, m->hidden,
           m->heads, m->kv_heads, m->head_dim, m->ffn,
           m->mlp_matrices == 3 ? " (gated)" : "", m->vocab);
    if (m->experts)
        printf(", %u experts (top %u)", m->experts, m->experts_per_tok);
    if (m->sliding_window)
        printf(", window %u", m->sliding_window);
    printf("\n");
    printf("serving      %s x %u, weights %s, KV %s %s", d->name, r->tp,
           mp_weight_format_name(o->weights), kv_name(m, o),
           o->kv_paged ? "paged" : "contiguous");
    if (o->kv_paged)
        printf(" (block %u)", r->block_size);
    printf(", context %u, chunk %u tokens, %u seqs\n", r->max_model_len,
           o->max_batched_tokens, o->max_seqs);
    printf("KV cache     %llu bytes per token per GPU", (unsigned long long)
           r->kv_bytes_per_token);
    if (o->kv_paged)
        printf(", %s per block", cli_size_short(r->kv_block_bytes, b1,
                                                sizeof b1));
    printf(", %s per sequence of %u\n",
           cli_size_short(r->kv_seq_bytes, b1, sizeof b1), r->max_model_len);
    printf("per GPU      %.2f GiB x %.2f = %.2f GiB\n", gib(r->device_bytes),
           o->gpu_util, gib(r->budget_bytes));
    printf("  weights          %9.2f GiB\n", gib(r->weight_bytes));
    printf("  activations      %9.2f GiB  (peak of: prefill chunk of %u "
           "tokens %.2f GiB, decode step of %u %.2f GiB; logits fp32 + "
           "sampler %.2f GiB)\n",
           gib(r->activation_bytes), r->prefill.tokens,
           gib(r->prefill.arena_bytes), r->decode.tokens,
           gib(r->decode.arena_bytes),
           gib(r->prefill.logits_bytes + r->prefill.sampler_bytes));
    if (r->cuda_graphs)
        printf("  CUDA graphs      %9.2f GiB  (%u graphs sharing one pool, "
               "largest batch %u)\n",
               gib(r->cuda_graph_bytes), r->cuda_graphs, r->cuda_graph_max);
    else
        printf("  CUDA graphs      %9.2f GiB  (eager)\n", 0.0);
    printf("  runtime reserve  %9.2f GiB\n", gib(r->runtime_bytes));
    printf("  KV cache         %9.2f GiB", gib(r->kv_budget_bytes));
    if (o->kv_paged)
        printf("  = %llu blocks = %llu tokens\n",
               (unsigned long long)r->kv_blocks,
               (unsigned long long)r->kv_tokens);
    else
        printf("  = %u sequences reserved at %u = %llu tokens\n",
               r->max_seqs_at_len, r->max_model_len,
               (unsigned long long)r->kv_tokens);
    printf("fits         %u sequences of %u tokens", r->max_seqs_at_len,
           r->max_model_len);
    if (o->shared_prefix && o->kv_paged)
        printf(" (prefix of %u shared)", o->shared_prefix);
    printf("; each of %u sequences up to %u tokens\n", o->max_seqs,
           r->max_len_at_seqs);
    printf("binding      %s", mp_serve_binding_name(r->binding));
    if (r->binding == MP_SERVE_KV_MEMORY)
        printf(": %u of --max-seqs %u sequences of %u fit\n",
               r->max_seqs_at_len, o->max_seqs, r->max_model_len);
    else if (r->binding == MP_SERVE_MAX_SEQS)
        printf(": the cache holds %u sequences of %u, the scheduler runs %u\n",
               r->max_seqs_at_len, r->max_model_len, o->max_seqs);
    else
        printf(": weights, activations, graphs and reserve leave no KV "
               "cache in %.2f GiB\n", gib(r->budget_bytes));
    printf("fragmentation %llu request%s, mean %.0f tokens: the tokens need "
           "%.2f GiB; paged blocks %.2f GiB (+%.1f%%), contiguous at %u "
           "%.2f GiB (+%.1f%%)",
           (unsigned long long)r->frag_requests,
           r->frag_requests == 1 ? "" : "s", r->mean_length,
           gib(r->frag_token_bytes), gib(r->frag_paged_bytes),
           pct_over(r->frag_paged_bytes, r->frag_token_bytes),
           r->max_model_len, gib(r->frag_contiguous_bytes),
           pct_over(r->frag_contiguous_bytes, r->frag_token_bytes));
    if (o->shared_prefix)
        printf(", paged with the prefix shared %.2f GiB",
               gib(r->frag_shared_bytes));
    printf("\n             concurrent requests of this mix: paged %llu, "
           "contiguous %llu",
           (unsigned long long)r->frag_fit_paged,
           (unsigned long long)r->frag_fit_contiguous);
    if (o->shared_prefix)
        printf(", paged with the prefix shared %llu",
               (unsigned long long)r->frag_fit_shared);
    printf("\nwhat-if      %-6s %9s %9s %10s %11s %s\n", "device", "memory",
           "KV GiB", "blocks", "seqs@len", "binding");
    for (size_t i = 0; i < nw; i++) {
        if (!wi[i].ok) {
            printf("             %-6s (no plan)\n", wi[i].name);
            continue;
        }
        printf("             %-6s %9.1f %9.2f %10llu %11u %s\n", wi[i].name,
               gib(wi[i].r.device_bytes), gib(wi[i].r.kv_budget_bytes),
               (unsigned long long)wi[i].r.kv_blocks,
               wi[i].r.max_seqs_at_len,
               mp_serve_binding_name(wi[i].r.binding));
    }
}

int cli_cmd_serve(cli_args *a)
{
    const char *model = a->pos[0];
    int rc = CLI_EXIT_OK;
    uint32_t *lengths = NULL;
    whatif wi[16];
    size_t nw = 0;
    mp_ctx *ctx = cli_ctx_create();
    if (!ctx)
        return CLI_EXIT_INTERNAL;
    cli_progress_install(ctx, a);
    mp_llm_config m;
    mp_device d;
    mp_serve_options o = a->so;
    mp_serve_result r;
    mp_status st = mp_llm_config_load_json(ctx, model, &m);
    if (st) {
        rc = cli_fail(ctx, st, model);
        goto out;
    }
    if ((st = mp_device_get(ctx, a->offload.device, &d))) {
        rc = cli_fail(ctx, st, a->offload.device);
        goto out;
    }
    if (mp_weight_format_parse(a->weights_dir, &o.weights) != MP_OK) {
        cli_error("bad value '%s' for --weights: 16bit (bf16, fp16), int8, "
                  "int4 or fp8", a->weights_dir);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (cli_given(a, CLI_O_RUNTIME_RESERVE))
        o.runtime_reserve = a->runtime_reserve;
    o.gpu_mem = a->gpu_mem;
    if (a->lengths) {
        uint32_t maxl = o.max_model_len ? o.max_model_len
                        : m.max_position ? m.max_position
                                         : 8192;
        if ((rc = read_lengths(ctx, a->lengths, maxl, &lengths,
                               &o.n_lengths)))
            goto out;
        o.lengths = lengths;
    }
    if ((st = mp_serve_plan(ctx, &m, &d, &o, &r))) {
        rc = cli_fail(ctx, st, model);
        goto out;
    }
    /* the same plan on every builtin device (only the memory differs) */
    mp_serve_options ow = o;
    ow.gpu_mem = 0;
    for (size_t i = 0; i < mp_device_builtin_count() && nw < 16; i++) {
        mp_device bd;
        wi[nw].name = mp_device_builtin_name(i);
        wi[nw].ok = mp_device_builtin(ctx, wi[nw].name, &bd) == MP_OK &&
                    mp_serve_plan(ctx, &m, &bd, &ow, &wi[nw].r) == MP_OK;
        nw++;
    }
    mp_ctx_clear(ctx);
    if (a->json)
        rc = print_json(ctx, &m, &d, &o, &r, wi, nw);
    else
        print_text(&m, &d, &o, &r, wi, nw);
out:
    free(lengths);
    mp_ctx_destroy(ctx);
    return rc;
}
