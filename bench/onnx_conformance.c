/* bench_onnx_conformance: shape-inference conformance over the ONNX corpus.
 *
 *   bench_onnx_conformance [CORPUS_DIR] [-v]
 *                          [--models-only|--nodes-only|--backend-only]
 *                          [--inputs DIR] [--backend-inputs DIR] [--no-inputs]
 *   bench_onnx_conformance --time MODEL.onnx [REPS]
 *
 * CORPUS_DIR defaults to ../shared/corpus relative to the source tree
 * (/work/shared/corpus). For every onnx-node test (CORPUS_DIR/onnx-node)
 * the model is loaded with declared shapes ignored (everything inferred
 * from the inputs and weights) and each graph output's inferred dtype and
 * dims are compared with the declared ones (the ground truth); results are
 * printed per op. Every model of CORPUS_DIR/onnx-backend (simple,
 * pytorch-converted, pytorch-operator) gets the same check; failures are
 * printed with the op producing the first output. For every real model (every .onnx under CORPUS_DIR/models) the
 * model is loaded with its declared shapes and symbolic input dims bound
 * to 1, and planned. Skips with a message when the corpus is absent.
 * --inputs DIR: the values of each node test's graph inputs are read from
 * DIR/TEST/test_data_set_0/input_K.pb (the ONNX repository's
 * onnx/backend/test/data/node) and given to the loader (mp_input_value),
 * so shape operands given as graph inputs fold; both figures are printed:
 * static (corpus only) and with the inputs bound.
 * --backend-inputs DIR: the same for onnx-backend, from
 * DIR/SUITE/TEST/test_data_set_0 (SUITE: simple, pytorch-converted, ...).
 * Without either option, the test data of Debian's libonnx-testdata
 * (onnx 1.12: /usr/share/libonnx-testdata/data/{node,simple,...}) is used
 * when installed (MEMPLAN_ONNX_TESTDATA overrides the folder); the static
 * figures are printed beside. --no-inputs: static figures only.
 * --time: loads MODEL.onnx (file read, parse, shape inference) and plans
 * it with the default options REPS times (default 20) in this process,
 * and prints the CPU time (clock()) and wall time per load+plan. */
#include "ir.h"
#include "shape.h"

#include <dirent.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef MP_WITH_ONNX
int main(void)
{
    printf("bench_onnx_conformance: skipped: memplan was built without ONNX "
           "support (protoc-c, libprotobuf-c, libonnx-dev)\n");
    return 0;
}
#else
#include "onnx.pb-c.h"
#include "support/corpus_files.h"

typedef struct op_stat {
    char op[128];
    int pass, total;
} op_stat;

static op_stat stats[512];
static int n_stats;

static op_stat *stat_of(const char *op)
{
    for (int i = 0; i < n_stats; i++)
        if (strcmp(stats[i].op, op) == 0)
            return &stats[i];
    if (n_stats == 512)
        return &stats[511];
    snprintf(stats[n_stats].op, sizeof stats[n_stats].op, "%s", op);
    return &stats[n_stats++];
}

static int cmp_stat(const void *a, const void *b)
{
    return strcmp(((const op_stat *)a)->op, ((const op_stat *)b)->op);
}

/* --inputs DIR: the values of test TEST's graph inputs, read from
 * DIR/TEST/test_data_set_0/input_K.pb (K counts the graph inputs that are
 * not initializers, as the ONNX backend test runner does); buffers in
 * bufs[] (free them). Returns the number of values. */
static size_t read_input_values(const char *dir, const char *path,
                                const Onnx__GraphProto *gp,
                                mp_input_value *vals, unsigned char **bufs,
                                size_t max)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char test[512];
    snprintf(test, sizeof test, "%s", b);
    char *dot = strstr(test, ".onnx");
    if (dot)
        *dot = '\0';
    size_t n = 0, k = 0;
    for (size_t i = 0; i < gp->n_input && n < max; i++) {
        const char *name = gp->input[i]->name;
        bool init = false;
        for (size_t j = 0; j < gp->n_initializer && !init; j++)
            init = strcmp(gp->initializer[j]->name, name) == 0;
        if (init)
            continue;
        char f[4096];
        snprintf(f, sizeof f, "%s/%s/test_data_set_0/input_%zu.pb", dir, test,
                 k++);
        size_t len;
        unsigned char *data = mpb_read_all(f, &len);
        if (!data)
            continue;
        memset(&vals[n], 0, sizeof vals[n]);
        vals[n].name = name;
        vals[n].pb = data;
        vals[n].pb_len = len;
        bufs[n++] = data;
    }
    return n;
}

/* A sequence or optional output: inferred as one, its size known, its
 * element type and every element's declared dims as declared. */
static int check_seq_output(const Onnx__ValueInfoProto *v, const mp__tensor *t,
                            char *why, size_t cap)
{
    const Onnx__TypeProto *et = NULL;
    bool optional = v->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
    if (optional && v->type->optional_type)
        et = v->type->optional_type->elem_type;
    else if (!optional && v->type->sequence_type)
        et = v->type->sequence_type->elem_type;
    bool of_seq = false;
    if (optional && et &&
        et->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
        et->sequence_type) {
        of_seq = true;
        et = et->sequence_type->elem_type;
    }
    int want = !optional ? MP__SEQ_SEQUENCE
                         : of_seq ? MP__SEQ_OPTIONAL_SEQUENCE : MP__SEQ_OPTIONAL;
    if (!t->seq || t->seq->type != want) {
        snprintf(why, cap, "output '%s': not inferred as a %s", v->name,
                 optional ? "optional" : "sequence");
        return 0;
    }
    if (!(t->flags & MP__TF_SIZE_KNOWN)) {
        snprintf(why, cap, "output '%s': size unknown", v->name);
        return 0;
    }
    const mp__seq *q = t->seq;
    const Onnx__TypeProto__Tensor *tt =
        et && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
            ? et->tensor_type
            : NULL;
    if (!tt || q->present == 0)
        return 1;
    if (tt->has_elem_type && tt->elem_type != q->dtype) {
        snprintf(why, cap, "output '%s': element dtype %d, expected %d",
                 v->name, q->dtype, tt->elem_type);
        return 0;
    }
    for (uint32_t e = 0; tt->shape && e < q->n_elems; e++) {
        const mp__shape *s = &q->elems[e];
        bool bad = (size_t)s->rank != tt->shape->n_dim;
        for (size_t k = 0; !bad && k < tt->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
            bad = d->value_case ==
                      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                  d->dim_value != s->d[k];
        }
        if (bad) {
            snprintf(why, cap, "output '%s': element %u has rank %d, not "
                     "the declared shape", v->name, (unsigned)e,
                     (int)s->rank);
            return 0;
        }
    }
    return 1;
}

/* 1 pass, 0 fail (reason in why); inputs: NULL, or the --inputs folder;
 * bind1: symbolic input dims without a value given are bound to 1 */
static int check_node_test(const char *path, const char *inputs, int bind1,
                           char *why, size_t cap, char *op, size_t opcap)
{
    size_t len;
    unsigned char *buf = mpb_read_all(path, &len);
    snprintf(op, opcap, "?");
    if (!buf) {
        snprintf(why, cap, "cannot read");
        return 0;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m || !m->graph) {
        snprintf(why, cap, "protobuf-c cannot parse it");
        free(buf);
        return 0;
    }
    const Onnx__GraphProto *gp = m->graph;
    /* the op under test: the producer of the first output, else node 0 */
    for (size_t k = 0; k < gp->n_node; k++)
        for (size_t o = 0; o < gp->node[k]->n_output; o++)
            if (gp->n_output &&
                strcmp(gp->node[k]->output[o], gp->output[0]->name) == 0)
                snprintf(op, opcap, "%s%s%s",
                         gp->node[k]->domain && gp->node[k]->domain[0]
                             ? gp->node[k]->domain
                             : "",
                         gp->node[k]->domain && gp->node[k]->domain[0] ? "."
                                                                        : "",
                         gp->node[k]->op_type);
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.declared_shapes = 0;
    mp_input_value vals[64];
    unsigned char *vbufs[64];
    size_t n_vals = inputs ? read_input_values(inputs, path, gp, vals, vbufs,
                                               64)
                           : 0;
    opt.values = vals;
    opt.n_values = n_vals;
    mp_dim_binding ones[64];
    size_t n_ones = 0;
    for (size_t i = 0; bind1 && i < gp->n_input; i++) {
        const Onnx__TypeProto *tp = gp->input[i]->type;
        bool given = false;
        for (size_t k = 0; k < n_vals && !given; k++)
            given = strcmp(vals[k].name, gp->input[i]->name) == 0;
        if (given || !tp ||
            tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !tp->tensor_type->shape)
            continue;
        for (size_t k = 0; k < tp->tensor_type->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d =
                tp->tensor_type->shape->dim[k];
            if (d->value_case ==
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                d->dim_param && n_ones < 64) {
                bool dup = false;
                for (size_t j = 0; j < n_ones && !dup; j++)
                    dup = strcmp(ones[j].name, d->dim_param) == 0;
                if (!dup) {
                    ones[n_ones].name = d->dim_param;
                    ones[n_ones++].value = 1;
                }
            }
        }
    }
    opt.dims = ones;
    opt.n_dims = n_ones;
    mp_graph *g = NULL;
    int ok = 1;
    mp_status st = mp_graph_load_onnx_buffer(ctx, buf, len, path, &opt, &g);
    if (st) {
        const char *msg = mp_ctx_message(ctx);
        const char *p = strstr(msg, ".onnx: ");
        snprintf(why, cap, "%s", p ? p + 7 : msg);
        ok = 0;
    }
    for (size_t i = 0; ok && i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *v = gp->output[i];
        uint32_t id;
        if (mp_graph_find_tensor(g, v->name, &id)) {
            snprintf(why, cap, "output '%s' missing", v->name);
            ok = 0;
            break;
        }
        const mp__tensor *t = &g->tensors[id];
        if (v->type &&
            (v->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
             v->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)) {
            if (!check_seq_output(v, t, why, cap)) {
                ok = 0;
                break;
            }
            continue;
        }
        if (!v->type ||
            v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            continue; /* maps, sparse tensors: not compared */
        const Onnx__TypeProto__Tensor *tt = v->type->tensor_type;
        if (tt->has_elem_type && tt->elem_type != t->dtype) {
            snprintf(why, cap, "output '%s': dtype %d, expected %d", v->name,
                     t->dtype, tt->elem_type);
            ok = 0;
            break;
        }
        if (!tt->shape)
            continue;
        if ((size_t)t->rank != tt->shape->n_dim || t->rank < 0) {
            snprintf(why, cap, "output '%s': rank %d, expected %zu", v->name,
                     t->rank, tt->shape->n_dim);
            ok = 0;
            break;
        }
        for (size_t k = 0; k < tt->shape->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
            if (d->value_case !=
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                continue;
            if (d->dim_value != t->dims[k]) {
                char got[256] = "", want[256] = "";
                for (size_t q = 0; q < tt->shape->n_dim; q++) {
                    size_t a = strlen(got), b = strlen(want);
                    snprintf(got + a, sizeof got - a, "%s%lld", q ? "," : "",
                             (long long)t->dims[q]);
                    snprintf(want + b, sizeof want - b, "%s%lld", q ? "," : "",
                             (long long)tt->shape->dim[q]->dim_value);
                }
                snprintf(why, cap, "output '%s': shape [%s], expected [%s]",
                         v->name, got, want);
                ok = 0;
                break;
            }
        }
    }
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    for (size_t i = 0; i < n_vals; i++)
        free(vbufs[i]);
    onnx__model_proto__free_unpacked(m, NULL);
    free(buf);
    return ok;
}

/* Real model: declared shapes on, the bindings of the corpus table
 * (mpb_model_dims) and every other symbolic input dim bound to 1; it
 * passes when every shape is known and the plan verifies. */
static int check_model(const char *path, char *why, size_t cap)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    mp_graph *g = NULL;
    mp_plan *p = NULL;
    mp_plan_options po;
    mp_plan_options_init(&po);
    int ok = 0;
    mp_status st = ctx ? mpb_load_onnx_dims1(ctx, path, &g) : MP_ERR_NOMEM;
    if (!st && mp_graph_unknown_shapes(g))
        st = mp__err(ctx, MP_ERR_SHAPE, "%s: %zu unknown shapes", path,
                    mp_graph_unknown_shapes(g));
    if (!st)
        st = mp_plan_create(g, &po, &p);
    if (!st)
        st = mp_verify_plan(g, p);
    if (st) {
        const char *msg = mp_ctx_message(ctx);
        const char *q = strstr(msg, ".onnx: ");
        snprintf(why, cap, "%s", q ? q + 7 : msg);
    } else {
        snprintf(why, cap, "%u nodes, arena %llu bytes, weights+constants "
                 "%llu bytes",
                 mp_graph_num_nodes(g),
                 (unsigned long long)mp_plan_figures(p)->arena_bytes,
                 (unsigned long long)mp_plan_figures(p)->persistent_bytes);
        ok = 1;
    }
    mp_plan_destroy(p);
    mp_graph_destroy(g);
    mp_ctx_destroy(ctx);
    return ok;
}

/* CPU and wall time of load + plan of one model, averaged over reps */
static int time_model(const char *path, int reps)
{
    mp_ctx *ctx = mp_ctx_create(NULL);
    /* the corpus table's bindings (parsed once, outside the timing) */
    static mpb_dims dims;
    if (mpb_parse_dims(mpb_model_dims(path), &dims)) {
        mp_ctx_destroy(ctx);
        return 1;
    }
    mp_onnx_options opt;
    mp_onnx_options_init(&opt);
    opt.dims = dims.b;
    opt.n_dims = dims.n;
    double best_cpu = 1e30, sum_cpu = 0, sum_wall = 0;
    for (int r = 0; r < reps; r++) {
        clock_t c0 = clock();
        double w0 = mp__now_seconds();
        mp_graph *g = NULL;
        mp_plan *p = NULL;
        mp_plan_options o;
        mp_plan_options_init(&o);
        if (mp_graph_load_onnx(ctx, path, &opt, &g) != MP_OK ||
            mp_plan_create(g, &o, &p) != MP_OK) {
            printf("bench_onnx_conformance: %s: %s\n", path,
                   mp_ctx_message(ctx));
            mp_graph_destroy(g);
            mp_ctx_destroy(ctx);
            return 1;
        }
        double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
        sum_wall += mp__now_seconds() - w0;
        sum_cpu += cpu;
        if (cpu < best_cpu)
            best_cpu = cpu;
        if (r == reps - 1)
            printf("%s: %u nodes, %u tensors\n", path, mp_graph_num_nodes(g),
                   mp_graph_num_tensors(g));
        mp_plan_destroy(p);
        mp_graph_destroy(g);
    }
    printf("load+plan: %.1f ms CPU mean (best %.1f ms), %.1f ms wall mean, "
           "%d reps\n", 1e3 * sum_cpu / reps, 1e3 * best_cpu,
           1e3 * sum_wall / reps, reps);
    mp_ctx_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *inputs = NULL, *binputs = NULL;
    int verbose = 0, nodes = 1, models = 1, backend = 1, no_inputs = 0;
    if (argc >= 3 && strcmp(argv[1], "--time") == 0)
        return time_model(argv[2], argc >= 4 && atoi(argv[3]) > 0
                                        ? atoi(argv[3])
                                        : 20);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--models-only") == 0)
            nodes = backend = 0;
        else if (strcmp(argv[i], "--nodes-only") == 0)
            models = backend = 0;
        else if (strcmp(argv[i], "--backend-only") == 0)
            nodes = models = 0;
        else if (strcmp(argv[i], "--inputs") == 0 && i + 1 < argc)
            inputs = argv[++i];
        else if (strcmp(argv[i], "--backend-inputs") == 0 && i + 1 < argc)
            binputs = argv[++i];
        else if (strcmp(argv[i], "--no-inputs") == 0)
            no_inputs = 1;
        else
            dir = argv[i];
    }
    if (!dir) {
        const char *env = getenv("MEMPLAN_CORPUS");
        dir = env ? env : "/work/shared/corpus";
    }
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
        printf("bench_onnx_conformance: skipped: corpus folder %s is absent "
               "(pass its path or set MEMPLAN_CORPUS)\n", dir);
        return 0;
    }
    /* Debian's libonnx-testdata (onnx 1.12) when neither folder is given */
    static char deb_node[4096];
    const char *deb = getenv("MEMPLAN_ONNX_TESTDATA");
    if (!deb)
        deb = "/usr/share/libonnx-testdata/data";
    snprintf(deb_node, sizeof deb_node, "%s/node", deb);
    if (!no_inputs && !inputs && !binputs && stat(deb_node, &sb) == 0 &&
        S_ISDIR(sb.st_mode)) {
        inputs = deb_node;
        binputs = deb;
        printf("inputs: test data of %s (Debian libonnx-testdata, onnx "
               "1.12)\n", deb);
    }
    if (no_inputs)
        inputs = binputs = NULL;
    char **files = NULL;
    size_t n = 0, cap = 0;
    char why[1024], op[128];
    if (nodes) {
        char ndir[4096];
        snprintf(ndir, sizeof ndir, "%s/onnx-node", dir);
        mpb_list_onnx(ndir, 0, "test_", &files, &n, &cap);
        qsort(files, n, sizeof *files, mpb_cmp_str);
        int pass = 0, pass_static = 0;
        for (size_t i = 0; i < n; i++) {
            if (inputs) /* the static figure beside the bound one */
                pass_static += check_node_test(files[i], NULL, 0, why,
                                               sizeof why, op, sizeof op);
            int ok = check_node_test(files[i], inputs, 0, why, sizeof why,
                                     op, sizeof op);
            op_stat *s = stat_of(op);
            s->total++;
            s->pass += ok;
            pass += ok;
            if (verbose && !ok) {
                const char *b = strrchr(files[i], '/');
                printf("FAIL %-50s %s\n", b ? b + 1 : files[i], why);
            }
            free(files[i]);
        }
        qsort(stats, (size_t)n_stats, sizeof stats[0], cmp_stat);
        int full = 0;
        printf("onnx-node: per op (pass/total)\n");
        for (int i = 0; i < n_stats; i++) {
            printf("  %-32s %3d/%-3d%s\n", stats[i].op, stats[i].pass,
                   stats[i].total,
                   stats[i].pass == stats[i].total ? "" : "  *");
            full += stats[i].pass == stats[i].total;
        }
        if (inputs)
            printf("onnx-node: static (corpus only): %d/%zu tests pass "
                   "(%.1f%%)\n", pass_static, n,
                   n ? 100.0 * pass_static / (double)n : 0.0);
        printf("onnx-node: %d/%zu tests pass (%.1f%%)%s; %d/%d op types pass "
               "all their tests\n",
               pass, n, n ? 100.0 * pass / (double)n : 0.0,
               inputs ? " with the test inputs bound (--inputs)" : "", full,
               n_stats);
        n = 0;
    }
    if (backend) {
        /* onnx-backend (simple, pytorch-converted, pytorch-operator): the
         * same check as a node test, declared output shapes the truth;
         * failures counted by the op producing the first output */
        char bdir[4096];
        snprintf(bdir, sizeof bdir, "%s/onnx-backend", dir);
        mpb_list_onnx(bdir, 1, NULL, &files, &n, &cap);
        qsort(files, n, sizeof *files, mpb_cmp_str);
        int pass = 0, pass_static = 0;
        n_stats = 0;
        for (size_t i = 0; i < n; i++) {
            /* --backend-inputs DIR: DIR/SUITE/TEST/test_data_set_0 */
            char idir[4096];
            const char *rel = strstr(files[i], "/onnx-backend/");
            const char *slash = rel ? strchr(rel + 14, '/') : NULL;
            if (binputs && slash)
                snprintf(idir, sizeof idir, "%s/%.*s", binputs,
                         (int)(slash - (rel + 14)), rel + 14);
            if (binputs)
                pass_static += check_node_test(files[i], NULL, 1, why,
                                               sizeof why, op, sizeof op);
            int ok = check_node_test(files[i], binputs && slash ? idir : NULL,
                                     1, why, sizeof why, op, sizeof op);
            pass += ok;
            if (!ok) {
                stat_of(op)->total++;
                const char *b = strstr(files[i], "/onnx-backend/");
                printf("FAIL %-60s %s: %s\n", b ? b + 14 : files[i], op, why);
            }
            free(files[i]);
        }
        qsort(stats, (size_t)n_stats, sizeof stats[0], cmp_stat);
        for (int i = 0; i < n_stats; i++)
            printf("  failing op %-28s %d\n", stats[i].op, stats[i].total);
        if (binputs)
            printf("onnx-backend: static (corpus only): %d/%zu\n",
                   pass_static, n);
        printf("onnx-backend: %d/%zu models: inferred output shapes equal the "
               "declared ones%s (symbolic input dims bound to 1)\n",
               pass, n, binputs ? " with the test inputs bound" : "");
        n = 0;
    }
    if (models) {
        char mdir[4096];
        snprintf(mdir, sizeof mdir, "%s/models", dir);
        mpb_list_onnx(mdir, 1, NULL, &files, &n, &cap);
        qsort(files, n, sizeof *files, mpb_cmp_str);
        int pass = 0;
        for (size_t i = 0; i < n; i++) {
            int ok = check_model(files[i], why, sizeof why);
            pass += ok;
            const char *b = strstr(files[i], "/models/");
            const char *dims = mpb_model_dims(files[i]);
            printf("%s %-60s %s%s%s\n", ok ? "ok  " : "FAIL",
                   b ? b + 8 : files[i], why, dims ? "; with " : "",
                   dims ? dims : "");
            free(files[i]);
        }
        printf("models: %d/%zu load with unknown_shapes 0, plan and verify "
               "(bindings of the corpus table, other symbolic input dims "
               "bound to 1)\n",
               pass, n);
    }
    free(files);
    return 0;
}
#endif
