/* A check of a serialized ModelProto before protobuf-c unpacks it: see
 * onnx_scan.h. One pass over the wire format with an explicit stack of
 * the messages open at the current byte; the schema is a table of the
 * message-typed and name fields of each message of onnx.proto (fields of
 * newer onnx.proto versions included, so that a loader generated from one
 * is still covered). protobuf-c recurses only into message-typed fields
 * it knows, so the stack here is at least as deep as its recursion. */
#include "ir.h"

#ifdef MP_WITH_ONNX

#include "onnx_scan.h"
#include "onnx_wire.h"

#include <stdio.h>
#include <string.h>

enum msg {
    M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_VALUE_INFO, M_TYPE, M_TYPE_TENSOR,
    M_TYPE_SEQ, M_TYPE_MAP, M_TYPE_OPT, M_SHAPE, M_DIM, M_TENSOR, M_SEGMENT,
    M_SPARSE, M_TRAINING, M_FUNCTION, M_OPSET, M_STRSTR, M_ANNOT
};

#define NAME (-1) /* a string field checked as a name */

typedef struct fdesc {
    uint32_t number;
    int sub; /* enum msg, or NAME */
    const char *what;
} fdesc;

static const fdesc model_f[] = {
    {7, M_GRAPH, "graph"}, {8, M_OPSET, "opset_import"},
    {14, M_STRSTR, "metadata_props"}, {20, M_TRAINING, "training_info"},
    {25, M_FUNCTION, "function"}, {0, 0, NULL}};
static const fdesc graph_f[] = {
    {1, M_NODE, "node"}, {2, NAME, "name"}, {5, M_TENSOR, "initializer"},
    {15, M_SPARSE, "sparse_initializer"}, {11, M_VALUE_INFO, "input"},
    {12, M_VALUE_INFO, "output"}, {13, M_VALUE_INFO, "value_info"},
    {14, M_ANNOT, "quantization_annotation"},
    {16, M_STRSTR, "metadata_props"}, {0, 0, NULL}};
static const fdesc node_f[] = {
    {1, NAME, "input"}, {2, NAME, "output"}, {3, NAME, "name"},
    {4, NAME, "op_type"}, {7, NAME, "domain"}, {5, M_ATTR, "attribute"},
    {8, NAME, "overload"}, {9, M_STRSTR, "metadata_props"}, {0, 0, NULL}};
static const fdesc attr_f[] = {
    {1, NAME, "name"}, {21, NAME, "ref_attr_name"}, {5, M_TENSOR, "tensor"},
    {6, M_GRAPH, "graph"}, {22, M_SPARSE, "sparse_tensor"},
    {14, M_TYPE, "type"}, {10, M_TENSOR, "tensor"}, {11, M_GRAPH, "graph"},
    {23, M_SPARSE, "sparse_tensor"}, {15, M_TYPE, "type"}, {0, 0, NULL}};
static const fdesc value_info_f[] = {
    {1, NAME, "name"}, {2, M_TYPE, "type"}, {4, M_STRSTR, "metadata_props"},
    {0, 0, NULL}};
static const fdesc type_f[] = {
    {1, M_TYPE_TENSOR, "tensor_type"}, {4, M_TYPE_SEQ, "sequence_type"},
    {5, M_TYPE_MAP, "map_type"}, {9, M_TYPE_OPT, "optional_type"},
    {8, M_TYPE_TENSOR, "sparse_tensor_type"}, {0, 0, NULL}};
static const fdesc type_tensor_f[] = {{2, M_SHAPE, "shape"}, {0, 0, NULL}};
static const fdesc type_seq_f[] = {{1, M_TYPE, "elem_type"}, {0, 0, NULL}};
static const fdesc type_map_f[] = {{2, M_TYPE, "value_type"}, {0, 0, NULL}};
static const fdesc shape_f[] = {{1, M_DIM, "dim"}, {0, 0, NULL}};
static const fdesc dim_f[] = {{2, NAME, "dim_param"}, {0, 0, NULL}};
static const fdesc tensor_f[] = {
    {3, M_SEGMENT, "segment"}, {8, NAME, "name"},
    {13, M_STRSTR, "external_data"}, {16, M_STRSTR, "metadata_props"},
    {0, 0, NULL}};
static const fdesc sparse_f[] = {
    {1, M_TENSOR, "values"}, {2, M_TENSOR, "indices"}, {0, 0, NULL}};
static const fdesc training_f[] = {
    {1, M_GRAPH, "initialization"}, {2, M_GRAPH, "algorithm"},
    {3, M_STRSTR, "initialization_binding"},
    {4, M_STRSTR, "update_binding"}, {0, 0, NULL}};
static const fdesc function_f[] = {
    {1, NAME, "name"}, {4, NAME, "input"}, {5, NAME, "output"},
    {6, NAME, "attribute"}, {7, M_NODE, "node"},
    {9, M_OPSET, "opset_import"}, {10, NAME, "domain"},
    {11, M_ATTR, "attribute_proto"}, {12, M_VALUE_INFO, "value_info"},
    {13, NAME, "overload"}, {14, M_STRSTR, "metadata_props"},
    {0, 0, NULL}};
static const fdesc opset_f[] = {{1, NAME, "domain"}, {0, 0, NULL}};
static const fdesc annot_f[] = {
    {1, NAME, "tensor_name"}, {2, M_STRSTR, "quant_parameter_tensor_names"},
    {0, 0, NULL}};
static const fdesc none_f[] = {{0, 0, NULL}};

static const fdesc *const schema[] = {
    [M_MODEL] = model_f,         [M_GRAPH] = graph_f,
    [M_NODE] = node_f,           [M_ATTR] = attr_f,
    [M_VALUE_INFO] = value_info_f, [M_TYPE] = type_f,
    [M_TYPE_TENSOR] = type_tensor_f, [M_TYPE_SEQ] = type_seq_f,
    [M_TYPE_MAP] = type_map_f,   [M_TYPE_OPT] = type_seq_f,
    [M_SHAPE] = shape_f,         [M_DIM] = dim_f,
    [M_TENSOR] = tensor_f,       [M_SEGMENT] = none_f,
    [M_SPARSE] = sparse_f,       [M_TRAINING] = training_f,
    [M_FUNCTION] = function_f,   [M_OPSET] = opset_f,
    [M_STRSTR] = none_f,         [M_ANNOT] = annot_f};

/* Within the limits of onnx_scan.h no schema path is this deep (model,
 * function, 65 graphs of node and attribute, 64 types of two messages,
 * tensor type, shape, dim: under 340); the bound keeps the scan's own
 * memory fixed. */
#define MAX_FRAMES 400

#define STR_(x) #x
#define STR(x) STR_(x)

typedef struct frame {
    size_t start, end; /* the message's bytes */
    size_t key;        /* where its field starts in the parent */
    const fdesc *f;    /* the parent's field holding it (NULL: the model) */
    int type;          /* enum msg */
} frame;

static const fdesc *field_of(int type, uint32_t number)
{
    for (const fdesc *f = schema[type]; f->what; f++)
        if (f->number == number)
            return f;
    return NULL;
}

/* Length of the valid UTF-8 prefix of s (n: all of it). A field is
 * length-delimited, not NUL-terminated as core's mp__utf8_next reads. */
static size_t utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i <= k)
            return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += k + 1;
    }
    return n;
}

/* ---- naming the place ----------------------------------------------------
 * Only on an error: names are looked up in each open message's bytes. */
typedef struct sbuf {
    char s[MP__MSG_MAX];
    size_t n;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) MP__PRINTF(2, 3);
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->n >= sizeof b->s - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    if (w > 0)
        b->n += (size_t)w < sizeof b->s - b->n ? (size_t)w
                                               : sizeof b->s - 1 - b->n;
}

/* s quoted, printable ASCII as it is, anything else as \xNN, at most 48
 * bytes shown */
static void put_quoted(sbuf *b, const uint8_t *s, size_t n)
{
    put(b, "'");
    for (size_t i = 0; i < n && i < 48; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' && s[i] != '\'')
            put(b, "%c", s[i]);
        else
            put(b, "\\x%02x", s[i]);
    }
    put(b, n > 48 ? "'..." : "'");
}

/* The last value of string field number in the message's bytes (NULL
 * when absent). */
static const uint8_t *string_field(const uint8_t *data, const frame *fr,
                                   uint32_t number, size_t *len)
{
    mp__wire w = {data, fr->end, fr->start};
    uint32_t f;
    unsigned wt;
    const uint8_t *d, *found = NULL;
    size_t dl;
    bool bad;
    while (mp__wire_next(&w, &f, &wt, &d, &dl, &bad))
        if (f == number && d) {
            found = d;
            *len = dl;
        }
    return found;
}

/* How many fields of this number come before byte pos in the message. */
static size_t index_before(const uint8_t *data, const frame *fr,
                           uint32_t number, size_t pos)
{
    mp__wire w = {data, fr->end, fr->start};
    uint32_t f;
    unsigned wt;
    const uint8_t *d;
    size_t dl, k = 0;
    bool bad;
    size_t at = w.pos;
    while (at < pos && mp__wire_next(&w, &f, &wt, &d, &dl, &bad)) {
        if (f == number)
            k++;
        at = w.pos;
    }
    return k;
}

static bool repeated(const fdesc *f, int parent)
{
    switch (parent) {
    case M_MODEL: return f->number != 7;
    case M_GRAPH: return f->number != 2;
    case M_NODE: return f->number <= 2 || f->number == 5 || f->number == 9;
    case M_ATTR: return f->number == 10 || f->number == 11 ||
                        f->number == 15 || f->number == 23;
    case M_FUNCTION: return f->number != 1 && f->number != 10 &&
                            f->number != 13;
    case M_SHAPE: case M_TRAINING: case M_ANNOT: return true;
    default: return false;
    }
}

/* One message of the path: "node 3 'conv1' (Conv)"; false for those not
 * shown (the parts of a type, shapes). */
static bool put_frame(sbuf *b, const uint8_t *data, const frame *st,
                      size_t i)
{
    const frame *fr = &st[i], *parent = i ? &st[i - 1] : NULL;
    if (!parent)
        return false;
    int t = fr->type;
    if (t == M_TYPE && parent->type != M_TYPE_SEQ &&
        parent->type != M_TYPE_MAP && parent->type != M_TYPE_OPT) {
        put(b, "type");
        return true;
    }
    if (t == M_TYPE || t == M_TYPE_TENSOR || t == M_TYPE_SEQ ||
        t == M_TYPE_MAP || t == M_TYPE_OPT || t == M_SHAPE)
        return false;
    put(b, "%s", fr->f->what);
    if (repeated(fr->f, parent->type))
        put(b, " %zu", index_before(data, parent, fr->f->number, fr->key));
    uint32_t name_field = t == M_NODE ? 3 : t == M_TENSOR ? 8 : t == M_GRAPH
                                                              ? 2
                                                              : 1;
    size_t nl = 0;
    const uint8_t *name =
        t == M_GRAPH || t == M_NODE || t == M_ATTR || t == M_VALUE_INFO ||
                t == M_TENSOR || t == M_FUNCTION
            ? string_field(data, fr, name_field, &nl)
            : NULL;
    if (name && nl) {
        put(b, " ");
        put_quoted(b, name, nl);
    }
    if (t == M_NODE && (name = string_field(data, fr, 4, &nl)) != NULL) {
        put(b, " (");
        put_quoted(b, name, nl);
        put(b, ")");
    }
    return true;
}

/* "graph 'main' > node 3 'x' (If) > ..." for the open messages; the
 * middle of a long path elided. */
static void put_path(sbuf *b, const uint8_t *data, const frame *st,
                     size_t n)
{
    size_t shown = 0, total = 0;
    sbuf tmp;
    for (size_t i = 0; i < n; i++) {
        tmp.n = 0;
        total += put_frame(&tmp, data, st, i);
    }
    bool elided = false;
    for (size_t i = 0; i < n; i++) {
        tmp.n = 0;
        tmp.s[0] = '\0';
        if (!put_frame(&tmp, data, st, i))
            continue;
        shown++;
        if (total > 10 && shown > 4 && shown <= total - 5) {
            if (!elided)
                put(b, " > ...");
            elided = true;
            continue;
        }
        put(b, "%s%s", shown > 1 ? " > " : "", tmp.s);
    }
}

static mp_status name_error(mp_ctx *ctx, const char *src, const uint8_t *data,
                            const frame *st, size_t n, const fdesc *f,
                            size_t key, const uint8_t *s, size_t len,
                            size_t bad_at)
{
    sbuf *b = mp__alloc(ctx, sizeof *b);
    if (!b)
        return MP_ERR_NOMEM;
    b->n = 0;
    put(b, "%s: ", src);
    put_path(b, data, st, n);
    put(b, "%s%s", n > 1 ? " > " : "", f->what);
    if (repeated(f, st[n - 1].type))
        put(b, " %zu", index_before(data, &st[n - 1], f->number, key));
    put(b, ": ");
    put_quoted(b, s, len);
    size_t off = (size_t)(s - data) + bad_at;
    if (bad_at < len && s[bad_at] == 0)
        put(b, " holds a NUL byte (at byte %zu of the file); a name in "
            "ONNX is UTF-8 text without NUL", off);
    else
        put(b, " is not valid UTF-8 (byte 0x%02x at byte %zu of the file); "
            "strings in ONNX are UTF-8", s[bad_at], off);
    mp_status st_ = mp__err(ctx, MP_ERR_CORRUPT, "%s", b->s);
    mp__dealloc(ctx, b);
    return st_;
}

static mp_status depth_error(mp_ctx *ctx, const char *src,
                             const uint8_t *data, const frame *st, size_t n,
                             const char *what)
{
    sbuf *b = mp__alloc(ctx, sizeof *b);
    if (!b)
        return MP_ERR_NOMEM;
    b->n = 0;
    put(b, "%s: ", src);
    put_path(b, data, st, n);
    put(b, ": %s (byte %zu of the file)", what, st[n - 1].start);
    mp_status st_ = mp__err(ctx, MP_ERR_UNSUPPORTED, "%s", b->s);
    mp__dealloc(ctx, b);
    return st_;
}

/* What a file that is not ONNX is, by its first bytes, and how to get
 * an ONNX model from it; NULL when nothing is recognized. A user handed
 * a checkpoint gets that answer, not "the protobuf is truncated". */
static const char *foreign_format(const uint8_t *d, size_t len,
                                  const char **howto)
{
    static const char export_torch[] =
        "load the model in PyTorch and export it: "
        "torch.onnx.export(model, example_inputs, \"model.onnx\")";
    static const char export_hf[] =
        "export the original model instead: torch.onnx.export(model, "
        "example_inputs, \"model.onnx\"), or for a Hugging Face model "
        "optimum-cli export onnx --model NAME out/";
    static const char export_tf[] =
        "convert it with tf2onnx: python -m tf2onnx.convert "
        "--saved-model DIR (or --keras, --tflite FILE) --output model.onnx";
    *howto = NULL;
    if (len >= 4 && memcmp(d, "PK\x03\x04", 4) == 0) {
        *howto = export_torch;
        return "a zip archive: a PyTorch checkpoint (torch.save) or a "
               "TorchScript module, which hold weights and code, not an "
               "ONNX graph";
    }
    if (len >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5) {
        *howto = export_torch;
        return "a Python pickle: a PyTorch checkpoint in the legacy "
               "torch.save format (weights, no graph)";
    }
    if (len >= 4 && memcmp(d, "GGUF", 4) == 0) {
        *howto = export_hf;
        return "a GGUF file (llama.cpp: weights and metadata, no graph)";
    }
    if (len >= 9) {
        uint64_t h = 0;
        for (int i = 7; i >= 0; i--)
            h = h << 8 | d[i];
        if (h > 1 && h <= len - 8 && d[8] == '{') {
            *howto = export_hf;
            return "a safetensors file (weights only, no graph)";
        }
    }
    if (len >= 8 && memcmp(d, "\x89HDF\r\n\x1a\n", 8) == 0) {
        *howto = export_tf;
        return "an HDF5 file (a Keras model or weights)";
    }
    if (len >= 8 && memcmp(d + 4, "TFL3", 4) == 0) {
        *howto = export_tf;
        return "a TensorFlow Lite model";
    }
    return NULL;
}

mp_status mp__onnx_scan_model(mp_ctx *ctx, const void *bytes, size_t len,
                              const char *src)
{
    const char *howto, *what = foreign_format(bytes, len, &howto);
    if (what)
        return mp__err(ctx, MP_ERR_CORRUPT,
                       "%s: not an ONNX model but %s; memplan reads ONNX "
                       "and its JSON graphs: %s", src, what, howto);
    const uint8_t *data = bytes;
    frame *st = mp__alloc(ctx, MAX_FRAMES * sizeof *st);
    if (!st)
        return MP_ERR_NOMEM;
    size_t n = 1, pos = 0;
    unsigned graphs = 0, types = 0; /* subgraphs and TypeProtos open */
    st[0] = (frame){0, len, 0, NULL, M_MODEL};
    mp_status rc = MP_OK;
    while (n && !rc) {
        frame *fr = &st[n - 1];
        if (pos == fr->end) {
            if (fr->type == M_GRAPH && fr->f && fr->f->sub == M_GRAPH &&
                n >= 2 && st[n - 2].type == M_ATTR)
                graphs--;
            else if (fr->type == M_TYPE)
                types--;
            n--;
            continue;
        }
        mp__wire w = {data, fr->end, pos};
        uint32_t num;
        unsigned wt;
        const uint8_t *d;
        size_t dl;
        bool bad;
        if (!mp__wire_next(&w, &num, &wt, &d, &dl, &bad)) {
            rc = mp__err(ctx, MP_ERR_CORRUPT,
                        "%s: not a valid ONNX model: the protobuf is "
                        "truncated or corrupt (%zu bytes)", src, len);
            break;
        }
        size_t key = pos;
        pos = w.pos;
        const fdesc *f = wt == 2 ? field_of(fr->type, num) : NULL;
        if (!f)
            continue;
        if (f->sub == NAME) {
            size_t ok = utf8_valid(d, dl);
            const uint8_t *nul = memchr(d, 0, ok);
            if (nul || ok < dl)
                rc = name_error(ctx, src, data, st, n, f, key, d, dl,
                                nul ? (size_t)(nul - d) : ok);
            continue;
        }
        if (n == MAX_FRAMES) {
            rc = depth_error(ctx, src, data, st, n,
                             "protobuf messages nested deeper than the "
                             "ONNX schema allows within memplan's limits");
            break;
        }
        st[n] = (frame){(size_t)(d - data), (size_t)(d - data) + dl, key, f,
                        f->sub};
        n++;
        pos = st[n - 1].start;
        if (f->sub == M_GRAPH && fr->type == M_ATTR &&
            ++graphs > MP__ONNX_MAX_NESTING)
            rc = depth_error(ctx, src, data, st, n,
                             "subgraphs nested deeper than "
                             STR(MP__ONNX_MAX_NESTING));
        else if (f->sub == M_TYPE && ++types > MP__ONNX_MAX_NESTING)
            rc = depth_error(ctx, src, data, st, n,
                             "types nested deeper than "
                             STR(MP__ONNX_MAX_NESTING) " levels (sequence, "
                             "map and optional element types)");
    }
    mp__dealloc(ctx, st);
    return rc;
}

#endif /* MP_WITH_ONNX */
