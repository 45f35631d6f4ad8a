/* nccl.c - NCCL for validate --ranks, loaded at run time (dlopen) so that
 * memplan-validate has no link-time NCCL dependency and runs without it
 * on one GPU (docs/distributed.md "Multi-GPU validation").
 *
 * Where it looks: $MEMPLAN_NCCL (the library file, or a folder holding
 * libnccl.so.2; when set, only there), else the dynamic loader's path
 * (LD_LIBRARY_PATH, the system's). PyTorch's wheels ship NCCL in the nvidia-nccl package
 * (site-packages/nvidia/nccl/lib/libnccl.so.2); bench/find-nccl.sh
 * prints that folder.
 *
 * The few types and calls used are declared here (nccl.h 2.18 or later:
 * ncclCommSplit, ncclAvg, ncclBfloat16; ncclSum, ncclReduceScatter and
 * ncclAllGather for the tensor-parallel group), so the build needs no NCCL
 * header either. The calls take the CUDA stream as a pointer. */
#include "validate.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[MPV_NCCL_ID_BYTES]; } nccl_id;
typedef void *nccl_comm;
typedef int nccl_res;

/* nccl.h's ncclDataType_t and ncclRedOp_t values */
enum { NC_INT8 = 0, NC_UINT8 = 1, NC_INT32 = 2, NC_UINT32 = 3, NC_INT64 = 4,
       NC_UINT64 = 5, NC_FLOAT16 = 6, NC_FLOAT32 = 7, NC_FLOAT64 = 8,
       NC_BFLOAT16 = 9 };
enum { NC_SUM = 0, NC_AVG = 4 };

struct mpv_nccl {
    void *lib;
    char path[600];
    int version;
    nccl_comm world, dp, tp;
    nccl_res (*get_version)(int *);
    nccl_res (*get_unique_id)(nccl_id *);
    nccl_res (*comm_init_rank)(nccl_comm *, int, nccl_id, int);
    nccl_res (*comm_split)(nccl_comm, int, int, nccl_comm *, void *);
    nccl_res (*comm_destroy)(nccl_comm);
    const char *(*error_string)(nccl_res);
    nccl_res (*group_start)(void);
    nccl_res (*group_end)(void);
    nccl_res (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm,
                           void *);
    nccl_res (*reduce)(const void *, void *, size_t, int, int, int,
                       nccl_comm, void *);
    nccl_res (*broadcast)(const void *, void *, size_t, int, int, nccl_comm,
                          void *);
    nccl_res (*reduce_scatter)(const void *, void *, size_t, int, int,
                               nccl_comm, void *);
    nccl_res (*all_gather)(const void *, void *, size_t, int, nccl_comm,
                           void *);
    nccl_res (*send)(const void *, size_t, int, int, nccl_comm, void *);
    nccl_res (*recv)(void *, size_t, int, int, nccl_comm, void *);
};

int mpv_nccl_dtype(int dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return NC_FLOAT32;
    case MP_DTYPE_BFLOAT16: return NC_BFLOAT16;
    case MP_DTYPE_FLOAT16: return NC_FLOAT16;
    case MP_DTYPE_FLOAT64: return NC_FLOAT64;
    case MP_DTYPE_INT8: return NC_INT8;
    case MP_DTYPE_UINT8: return NC_UINT8;
    case MP_DTYPE_BOOL: return NC_UINT8;
    case MP_DTYPE_INT32: return NC_INT32;
    case MP_DTYPE_UINT32: return NC_UINT32;
    case MP_DTYPE_INT64: return NC_INT64;
    case MP_DTYPE_UINT64: return NC_UINT64;
    default: return -1;
    }
}

/* tries one file; 1 when loaded */
static int try_open(mpv_nccl *n, const char *path)
{
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (n->lib)
        snprintf(n->path, sizeof n->path, "%s", path);
    return n->lib != NULL;
}

#define SYM(field, name)                                                     \
    do {                                                                     \
        *(void **)&n->field = dlsym(n->lib, name);                           \
        if (!n->field)                                                       \
            missing = name;                                                  \
    } while (0)

mpv_nccl *mpv_nccl_load(char *why, size_t cap)
{
    mpv_nccl *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    const char *env = getenv("MEMPLAN_NCCL");
    char tried[1400] = "";
    if (env && *env) {
        char f[560];
        snprintf(f, sizeof f, "%s/libnccl.so.2", env);
        /* given, it is the one: no other NCCL behind the user's back */
        if (!try_open(n, env) && !try_open(n, f)) {
            snprintf(why, cap, "NCCL not found: MEMPLAN_NCCL=%.500s, but "
                     "neither that file nor %.560s loads (%.200s). Set "
                     "MEMPLAN_NCCL to libnccl.so.2 or its folder; PyTorch's "
                     "is in site-packages/nvidia/nccl/lib (bench/find-nccl.sh "
                     "prints it)", env, f, dlerror());
            free(n);
            return NULL;
        }
    } else {
        snprintf(tried, sizeof tried, "MEMPLAN_NCCL (not set), ");
    }
    if (!n->lib && !try_open(n, "libnccl.so.2") && !try_open(n, "libnccl.so")) {
        snprintf(why, cap, "NCCL (libnccl.so.2) not found: looked in %sthen "
                 "the loader's path (LD_LIBRARY_PATH, ldconfig). Set "
                 "MEMPLAN_NCCL to libnccl.so.2 or its folder; PyTorch's "
                 "is in site-packages/nvidia/nccl/lib (bench/find-nccl.sh "
                 "prints it)", tried);
        free(n);
        return NULL;
    }
    const char *missing = NULL;
    SYM(get_version, "ncclGetVersion");
    SYM(get_unique_id, "ncclGetUniqueId");
    SYM(comm_init_rank, "ncclCommInitRank");
    SYM(comm_split, "ncclCommSplit");
    SYM(comm_destroy, "ncclCommDestroy");
    SYM(error_string, "ncclGetErrorString");
    SYM(group_start, "ncclGroupStart");
    SYM(group_end, "ncclGroupEnd");
    SYM(all_reduce, "ncclAllReduce");
    SYM(reduce, "ncclReduce");
    SYM(broadcast, "ncclBroadcast");
    SYM(reduce_scatter, "ncclReduceScatter");
    SYM(all_gather, "ncclAllGather");
    SYM(send, "ncclSend");
    SYM(recv, "ncclRecv");
    if (missing) {
        snprintf(why, cap, "%s: no %s (NCCL 2.18 or later needed)", n->path,
                 missing);
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    n->get_version(&n->version);
    return n;
}

const char *mpv_nccl_path(const mpv_nccl *n, int *version)
{
    if (version)
        *version = n ? n->version : 0;
    return n ? n->path : "";
}

static int check(const mpv_nccl *n, nccl_res r, const char *what, char *why,
                 size_t cap)
{
    if (r == 0)
        return 0;
    snprintf(why, cap, "%s: %s", what, n->error_string(r));
    return -1;
}

int mpv_nccl_unique_id(mpv_nccl *n, void *id, char *why, size_t cap)
{
    nccl_id u;
    if (check(n, n->get_unique_id(&u), "ncclGetUniqueId", why, cap))
        return -1;
    memcpy(id, &u, sizeof u);
    return 0;
}

int mpv_nccl_init(mpv_nccl *n, const void *id, const mpv_rank_lowering *rl,
                  char *why, size_t cap)
{
    nccl_id u;
    memcpy(&u, id, sizeof u);
    if (check(n, n->comm_init_rank(&n->world, (int)rl->n_ranks, u,
                                   (int)rl->rank),
              "ncclCommInitRank", why, cap))
        return -1;
    /* ranks are (stage x dp + dp_index) x tp + tp_index. The
     * data-parallel group: the ranks of this stage and tensor-parallel
     * index (none with dp 1: nothing is reduced); the tensor-parallel
     * group: those of this stage and data-parallel index (none with tp
     * 1). Every rank splits alike: ncclCommSplit is collective. */
    uint32_t tp = rl->tp ? rl->tp : 1;
    n->dp = n->tp = NULL;
    if (rl->pp == 1 && tp == 1)
        n->dp = n->world;
    else if (rl->dp > 1 &&
             check(n, n->comm_split(n->world,
                                    (int)(rl->stage * tp + rl->tp_index),
                                    (int)rl->dp_index, &n->dp, NULL),
                   "ncclCommSplit (data-parallel)", why, cap))
        return -1;
    if (tp > 1 && rl->pp == 1 && rl->dp == 1)
        n->tp = n->world;
    else if (tp > 1 &&
             check(n, n->comm_split(n->world,
                                    (int)(rl->stage * rl->dp + rl->dp_index),
                                    (int)rl->tp_index, &n->tp, NULL),
                   "ncclCommSplit (tensor-parallel)", why, cap))
        return -1;
    return 0;
}

const char *mpv_nccl_group(mpv_nccl *n, int start)
{
    nccl_res r = start ? n->group_start() : n->group_end();
    return r ? n->error_string(r) : NULL;
}

const char *mpv_nccl_call(mpv_nccl *n, const mpv_launch *l, const void *send,
                          void *recv, void *stream)
{
    int op = l->p.coll.op, peer = l->p.coll.peer;
    if (peer < 0 && (op == MPV_COLL_SEND || op == MPV_COLL_RECV))
        return NULL; /* not linked: the local operation */
    int grp = l->p.coll.group;
    nccl_comm comm = grp == MPV_COLL_DP   ? n->dp
                     : grp == MPV_COLL_TP ? n->tp
                                          : n->world;
    /* the data-parallel reductions average (DDP's gradients), the
     * tensor-parallel ones sum (a row layer's partial sums) */
    int red = grp == MPV_COLL_TP ? NC_SUM : NC_AVG;
    int dt = mpv_nccl_dtype(l->p.coll.dtype);
    if (!comm)
        return "no communicator for this call's group";
    if (dt < 0)
        return "a dtype NCCL does not reduce";
    size_t cnt = (size_t)l->p.coll.count;
    nccl_res r;
    switch (op) {
    case MPV_COLL_ALL_REDUCE:
        r = n->all_reduce(recv, recv, cnt, dt, red, comm, stream);
        break;
    case MPV_COLL_REDUCE:
        r = n->reduce(send, recv, cnt, dt, red, peer, comm, stream);
        break;
    case MPV_COLL_REDUCE_SCATTER: /* cnt: each rank's part */
        r = n->reduce_scatter(send, recv, cnt, dt, red, comm, stream);
        break;
    case MPV_COLL_ALL_GATHER:     /* cnt: each rank's part */
        r = n->all_gather(send, recv, cnt, dt, comm, stream);
        break;
    case MPV_COLL_BCAST:
        r = n->broadcast(send, recv, cnt, dt, peer, comm, stream);
        break;
    case MPV_COLL_SEND:
        r = n->send(send, cnt, dt, peer, comm, stream);
        break;
    case MPV_COLL_RECV:
        r = n->recv(recv, cnt, dt, peer, comm, stream);
        break;
    default:
        return "unknown collective call";
    }
    return r ? n->error_string(r) : NULL;
}

void mpv_nccl_destroy(mpv_nccl *n)
{
    if (!n)
        return;
    if (n->dp && n->dp != n->world)
        n->comm_destroy(n->dp);
    if (n->tp && n->tp != n->world)
        n->comm_destroy(n->tp);
    if (n->world)
        n->comm_destroy(n->world);
    /* the library stays loaded: its threads may outlive the communicator */
    free(n);
}
