/*
 * memplan/common.h - what every memplan module uses: the version, the
 * export macro MP_API, status codes, the context and its allocator, data
 * types, tensor kinds and node phases, and mp_free.
 *
 * Conventions of the whole API: every function that can fail returns an
 * mp_status, and the message explaining the last failure is kept in the
 * context (mp_ctx_message). A NULL handle or a NULL required pointer is
 * MP_ERR_INVALID_ARG. The library never prints, exits or aborts. Sizes are
 * 64-bit and every size computation is checked for overflow
 * (MP_ERR_OVERFLOW). Handles are opaque and come in create/destroy pairs;
 * destroy functions accept NULL.
 */
#ifndef MEMPLAN_COMMON_H
#define MEMPLAN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MP_VERSION_MAJOR 0
#define MP_VERSION_MINOR 1
#define MP_VERSION_PATCH 0
#define MP_VERSION_STRING "0.1.0"

#if defined(MP_BUILDING_LIBRARY) && defined(__GNUC__)
#define MP_API __attribute__((visibility("default")))
#else
#define MP_API
#endif

/* An id that names nothing: an omitted input, no producer, no view. */
#define MP_NONE UINT32_MAX

/* ---- status codes (stable: never renumbered) ---------------------------- */
typedef enum mp_status {
    MP_OK = 0,
    MP_ERR_INVALID_ARG = 1,  /* a NULL handle, bad option value */
    MP_ERR_NOMEM = 2,        /* an allocation failed */
    MP_ERR_IO = 3,           /* a file could not be opened, read or written */
    MP_ERR_PARSE = 4,        /* malformed input text (JSON, CSV) */
    MP_ERR_GRAPH = 5,        /* invalid graph: cycle, duplicate name, ... */
    MP_ERR_SHAPE = 6,        /* a size or shape is unknown or inconsistent */
    MP_ERR_OVERFLOW = 7,     /* a size does not fit in 64 bits */
    MP_ERR_UNSUPPORTED = 8,  /* a feature or format not supported */
    MP_ERR_INFEASIBLE = 9,   /* no plan within the given capacity/budget */
    MP_ERR_VERIFY = 10,      /* a plan failed verification */
    MP_ERR_TIMEOUT = 11,     /* the time limit ran out with no solution */
    MP_ERR_INTERNAL = 12,    /* a bug in memplan */
    MP_ERR_NOT_FOUND = 13,   /* a name or index that does not exist */
    /* bad-input classes: each refines a general code (mp_status_base)
     * and has its own exit code of the memplan command
     * (docs/exit-codes.md) */
    MP_ERR_CORRUPT = 14,     /* binary input that cannot be decoded: a
                                truncated or corrupt ONNX protobuf */
    MP_ERR_CYCLE = 15,       /* the graph has a cycle */
    MP_ERR_NO_PRODUCER = 16, /* a tensor is read (or is a graph output) but
                                no node produces it and it is no input,
                                weight or constant */
    MP_ERR_DUPLICATE = 17,   /* a name defined twice: a tensor with two
                                producers, two tensors, nodes or
                                initializers of one name */
    MP_ERR_UNKNOWN_OP = 18,  /* an op memplan does not know, whose output
                                sizes are not declared */
    MP_ERR_BAD_DIM = 19      /* a negative dim, or a rank above
                                MP_MAX_RANK */
} mp_status;

/* Short stable name of a status code ("MP_ERR_PARSE"), never NULL:
 * "MP_ERR_UNKNOWN" for a value outside the table. Cannot fail.
 * Example: printf("%s: %s\n", mp_status_name(st), mp_ctx_message(ctx)); */
MP_API const char *mp_status_name(mp_status s);
/* Short human description of a status code ("out of memory"), never NULL.
 * Cannot fail. mp_ctx_message gives the specific message of a failure. */
MP_API const char *mp_status_str(mp_status s);
/* The general code a bad-input class refines (MP_ERR_CYCLE,
 * MP_ERR_NO_PRODUCER, MP_ERR_DUPLICATE: MP_ERR_GRAPH; MP_ERR_CORRUPT:
 * MP_ERR_PARSE; MP_ERR_UNKNOWN_OP, MP_ERR_BAD_DIM: MP_ERR_SHAPE); any
 * other code itself. Cannot fail.
 * Example: if (mp_status_base(st) == MP_ERR_GRAPH) ... */
MP_API mp_status mp_status_base(mp_status s);

/* The version of the library actually loaded, "MAJOR.MINOR.PATCH"; compare
 * with MP_VERSION_STRING (the header compiled against) to detect a
 * mismatched shared library. Cannot fail. */
MP_API const char *mp_version(void);

/* ---- context ------------------------------------------------------------ */
/* A context: the allocator every allocation goes through, and the status
 * and message of the last failure. Every graph, plan and constraints
 * object belongs to one context; a context must be used by one thread at
 * a time, and two contexts work on two threads at the same time. */
typedef struct mp_ctx mp_ctx;

/* Caller-supplied allocator; all three functions must be set. */
typedef struct mp_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void *(*realloc_fn)(void *user, void *ptr, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} mp_allocator;

/* Creates a context that allocates through alloc (NULL: the C library's
 * malloc/realloc/free; user is passed back to each hook). Returns NULL
 * when alloc lacks a function or the first allocation fails.
 * Example: mp_ctx *ctx = mp_ctx_create(NULL); */
MP_API mp_ctx *mp_ctx_create(const mp_allocator *alloc);
/* Frees a context; destroy what was made in it first. NULL is accepted. */
MP_API void mp_ctx_destroy(mp_ctx *ctx);
/* The message of the last failure in this context, naming the place
 * (file:line:column, node, tensor); "" if none, and for NULL. The string
 * lives in the context until the next failure. */
MP_API const char *mp_ctx_message(const mp_ctx *ctx);
/* The status of the last failure in this context (MP_OK if none since it
 * was made or cleared); MP_ERR_INVALID_ARG for NULL. */
MP_API mp_status mp_ctx_status(const mp_ctx *ctx);
/* Resets the status to MP_OK and the message to "", after an expected
 * failure has been handled. NULL is accepted. */
MP_API void mp_ctx_clear(mp_ctx *ctx);
/* Releases memory the library returned to the caller (JSON strings,
 * serialized ONNX, trace buffers) through the context's allocator. NULL is
 * accepted. Example: mp_free(ctx, text); */
MP_API void mp_free(mp_ctx *ctx, void *p);

/* ---- progress ------------------------------------------------------------ */
/* One report of a long run (mp_ctx_set_progress): what it is doing and
 * the best it has. */
typedef struct mp_progress {
    /* the run and its stage, e.g. "recompute: Checkmate MILP",
     * "offsets: exact search", "max batch: trying 96"; never NULL */
    const char *phase;
    /* the smallest peak (bytes) found so far: arena + persistent bytes
     * for a plan of a graph, the arena for a placement (mp_offsets_solve
     * and a plan's placement stage); 0: none yet */
    uint64_t best_bytes;
    /* a lower bound on that peak proven so far; 0: none */
    uint64_t bound_bytes;
    double seconds;       /* since the run began */
    int final;            /* 1: the run's last report (its end) */
} mp_progress;
/* Receives the reports; user is the pointer given to mp_ctx_set_progress.
 * It runs inside the library call: it must not use the context. */
typedef void (*mp_progress_fn)(void *user, const mp_progress *p);
/* Default seconds of work before the first report (mp_ctx_set_progress). */
#define MP_PROGRESS_INTERVAL 1.0
/* Asks the long runs made in ctx (mp_plan_create and the other planners,
 * mp_remat_plan, mp_remat_max_batch, mp_offload_plan, mp_offsets_solve,
 * mp_flexgen_search) to report their progress to fn: a first report once
 * a run has worked `interval` seconds, then at most one every half of
 * it, and always a last one (final = 1) when the run ends, short or not.
 * interval < 0: MP_PROGRESS_INTERVAL; 0: every report (tests). fn NULL:
 * no reports (the default). The library itself never prints. NULL ctx is
 * accepted (nothing happens).
 * Example: mp_ctx_set_progress(ctx, show, stderr, -1); */
MP_API void mp_ctx_set_progress(mp_ctx *ctx, mp_progress_fn fn, void *user,
                                double interval);

/* ---- data types, kinds, phases ------------------------------------------ */
/* Numbered as ONNX's TensorProto.DataType. */
typedef enum mp_dtype {
    MP_DTYPE_UNDEFINED = 0,
    MP_DTYPE_FLOAT32 = 1, MP_DTYPE_UINT8 = 2, MP_DTYPE_INT8 = 3,
    MP_DTYPE_UINT16 = 4, MP_DTYPE_INT16 = 5, MP_DTYPE_INT32 = 6,
    MP_DTYPE_INT64 = 7, MP_DTYPE_STRING = 8, MP_DTYPE_BOOL = 9,
    MP_DTYPE_FLOAT16 = 10, MP_DTYPE_FLOAT64 = 11, MP_DTYPE_UINT32 = 12,
    MP_DTYPE_UINT64 = 13, MP_DTYPE_COMPLEX64 = 14, MP_DTYPE_COMPLEX128 = 15,
    MP_DTYPE_BFLOAT16 = 16, MP_DTYPE_FLOAT8E4M3FN = 17,
    MP_DTYPE_FLOAT8E4M3FNUZ = 18, MP_DTYPE_FLOAT8E5M2 = 19,
    MP_DTYPE_FLOAT8E5M2FNUZ = 20, MP_DTYPE_UINT4 = 21, MP_DTYPE_INT4 = 22,
    MP_DTYPE_FLOAT4E2M1 = 23, MP_DTYPE_FLOAT8E8M0 = 24, MP_DTYPE_UINT2 = 25,
    MP_DTYPE_INT2 = 26
} mp_dtype;

/* The name of a data type: "float32", "int64", ...; NULL for an unknown
 * code. */
MP_API const char *mp_dtype_name(mp_dtype t);
/* Parses a dtype name (also ONNX spellings: "float", "double", "half").
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL).
 * Example: mp_dtype_parse("half", &t) sets t = MP_DTYPE_FLOAT16. */
MP_API mp_status mp_dtype_parse(const char *name, mp_dtype *out);
/* Bits per element; 0 for UNDEFINED or an unknown code. STRING counts 64
 * bits: one handle (pointer) per element; the characters live outside the
 * planned arena. */
MP_API unsigned mp_dtype_bits(mp_dtype t);

typedef enum mp_tensor_kind {
    MP_KIND_ACTIVATION = 0,  /* produced by a node, lives in the arena */
    MP_KIND_INPUT = 1,       /* graph input, in the arena from the start */
    MP_KIND_WEIGHT = 2,      /* parameter: persistent, outside the arena */
    MP_KIND_CONSTANT = 3,    /* constant (also folded): persistent */
    MP_KIND_GRADIENT = 4,    /* produced in backward, lives in the arena */
    MP_KIND_OPTIMIZER_STATE = 5, /* persistent */
    MP_KIND_OUTPUT = 6       /* graph output, in the arena to the end */
} mp_tensor_kind;
/* The name of a tensor kind: "activation", "input", "weight", "constant",
 * "gradient", "optimizer_state", "output"; "unknown" outside the table. */
MP_API const char *mp_kind_name(mp_tensor_kind k);
/* Parses a tensor kind name as mp_kind_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_kind_parse(const char *name, mp_tensor_kind *out);

typedef enum mp_phase {
    MP_PHASE_FORWARD = 0, MP_PHASE_BACKWARD = 1, MP_PHASE_OPTIMIZER = 2
} mp_phase;
/* The name of a node phase: "forward", "backward", "optimizer"; "unknown"
 * outside the table. */
MP_API const char *mp_phase_name(mp_phase p);
/* Parses a phase name as mp_phase_name writes it.
 * Errors: MP_ERR_NOT_FOUND (an unknown name), MP_ERR_INVALID_ARG (NULL). */
MP_API mp_status mp_phase_parse(const char *name, mp_phase *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_COMMON_H */
